package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JobRequest is a generation request as the API stores it in a job
// record (queue.Record.Request), normalised: defaults filled in, the seed
// chosen. The JSON names are those of the generation request.
type JobRequest struct {
	// GenerationType is "image" or "video".
	GenerationType string `json:"generation_type"`
	// SourceURI is a vfx://uploads/…, https:// or data: URI.
	SourceURI string `json:"source_uri"`
	// AlphaMode is auto, fill, custom or select.
	AlphaMode string `json:"alpha_mode"`
	// AlphaURI is the matte for custom and select; ignored otherwise.
	AlphaURI string `json:"alpha_uri,omitempty"`
	// AlphaKeyframeIndex is the 0-based keyframe of a select matte.
	AlphaKeyframeIndex int `json:"alpha_keyframe_index"`
	// ReferenceImageURI is an optional reference image URI.
	ReferenceImageURI string `json:"reference_image_uri,omitempty"`
	// Prompt is the text description of the look (may be empty when a
	// reference image is given).
	Prompt string `json:"prompt,omitempty"`
	// Seed drives every random choice of the render.
	Seed uint32 `json:"seed"`
	// MaxResolution is 720 or 1080 (0 means 1080).
	MaxResolution int `json:"max_resolution,omitempty"`
	// Foreground asks for the premultiplied foreground output too (product
	// vfx inputs.outputs.foreground; the generation API never sets it).
	Foreground bool `json:"foreground,omitempty"`
	// OutputFormat is "" or OutputFormatMP4 (render, source and alpha
	// only) or OutputFormatEXR: also the EXR pass sequences, one ZIP each
	// (outputs exr_<pass>). An extension beyond SPEC.md.
	OutputFormat string `json:"output_format,omitempty"`
	// Frames, when set, renders only source frames "A-B" (0-based,
	// inclusive; ParseFrames) of a video, as `vfx render --frames` does. An
	// extension beyond SPEC.md. AlphaKeyframeIndex still counts from the
	// source's first frame.
	Frames string `json:"frames,omitempty"`
	// Placement, when set, scales and moves the subject over the plate
	// (Placement), as `vfx render --placement` does. An extension beyond
	// SPEC.md; nil renders the subject where the source has it.
	Placement *Placement `json:"placement,omitempty"`
}

// Placement is where the subject (the source and its matte) goes over
// the cover-fitted plate: scaled by Scale about the frame's centre, then
// moved by X times the output's width (positive: right) and Y times its
// height (positive: down). The area the moved subject leaves is plate.
// Limits: MinPlacementScale..MaxPlacementScale, |X|, |Y| <=
// MaxPlacementOffset; alpha_mode fill (no plate) refuses one.
type Placement struct {
	Scale float64 `json:"scale"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
}

// Identity reports whether p leaves the subject where it is.
func (p Placement) Identity() bool { return p.Scale == 1 && p.X == 0 && p.Y == 0 }

// String is p as `vfx render --placement` takes it: "scale,x,y".
func (p Placement) String() string {
	return strconv.FormatFloat(p.Scale, 'g', -1, 64) + "," + strconv.FormatFloat(p.X, 'g', -1, 64) + "," +
		strconv.FormatFloat(p.Y, 'g', -1, 64)
}

// DecodeJobRequest parses a record's request JSON. Unknown fields are
// ignored (an API newer than this worker may add some). A missing, empty
// or malformed request is an *InputError with code INVALID_INPUT; field
// rules are checked later, by Validate, when the request is run.
func DecodeJobRequest(raw []byte) (JobRequest, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return JobRequest{}, Errorf(CodeInvalidInput, "request: the job record has no request")
	}
	var r JobRequest
	if err := json.Unmarshal(raw, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return JobRequest{}, Errorf(CodeInvalidInput, "request: field %s: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return JobRequest{}, Errorf(CodeInvalidInput, "request: %v", err)
	}
	return r, nil
}

// String is a short description for logs (no URIs: data: URIs are huge and
// https:// URLs can carry secrets in their query).
func (r JobRequest) String() string {
	return fmt.Sprintf("%s/%s seed %d max %d", r.GenerationType, r.AlphaMode, r.Seed, r.MaxResolution)
}
