package job

import (
	"bytes"
	"encoding/json"
)

// Products and models of the product API.
const (
	ProductVFX    = "vfx"
	ProductFinish = "vfx_finish"
	ModelVFX2     = "vfx-2.0"
)

// Product modes of product vfx (inputs.mode). Not to be confused with the
// alpha modes (AlphaMode).
const (
	// ModeStandard renders at the requested resolution.
	ModeStandard = "standard"
	// ModeFast renders at a smaller size (the worker's FastShortSide) and
	// upscales the render with the finish upscaler.
	ModeFast = "fast"
)

// Finish resolutions (shorter side of the output).
const (
	FinishRes1080 = 1080
	FinishRes2160 = 2160
)

// ProductRequest is a product job as the API stores it in a job record
// (queue.Record.Request, Kind queue.KindProduct), normalised.
type ProductRequest struct {
	Product string `json:"product"`
	ModelID string `json:"model_id"`
	// Mode is ModeStandard or ModeFast (product vfx).
	Mode string `json:"mode,omitempty"`
	// Generation is the render of product vfx. Its GenerationType is empty
	// when the source was not at hand at submission; the worker then takes
	// it from the source's content.
	Generation *JobRequest `json:"generation,omitempty"`
	// Finish is the upscale of product vfx_finish.
	Finish *FinishRequest `json:"finish,omitempty"`
}

// FinishRequest is a vfx_finish job: upscale a parent's render.
type FinishRequest struct {
	ParentJobID string `json:"parent_job_id"`
	// ParentRender is the object key of the parent's render.
	ParentRender string `json:"parent_render"`
	// ParentVideo is true when the render is an MP4 (else a PNG).
	ParentVideo bool `json:"parent_video"`
	// TargetResolution is FinishRes1080 or FinishRes2160: the output's
	// shorter side.
	TargetResolution int `json:"target_resolution"`
}

// DecodeProductRequest parses a product record's request; problems are
// *InputError INVALID_INPUT.
func DecodeProductRequest(raw []byte) (ProductRequest, error) {
	var r ProductRequest
	if len(bytes.TrimSpace(raw)) == 0 {
		return r, Errorf(CodeInvalidInput, "request: the job record has no request")
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, Errorf(CodeInvalidInput, "product request: %v", err)
	}
	switch {
	case r.Product == ProductVFX && r.Generation != nil:
	case r.Product == ProductFinish && r.Finish != nil:
		if r.Finish.TargetResolution != FinishRes1080 && r.Finish.TargetResolution != FinishRes2160 {
			return r, Errorf(CodeInvalidInput, "target_resolution %d: want 1080 or 2160", r.Finish.TargetResolution)
		}
	default:
		return r, Errorf(CodeInvalidInput, "product request: product %q without its inputs", r.Product)
	}
	return r, nil
}

// Output names: the keys of queue.Record.Outputs.
const (
	OutputRender = "render"
	OutputSource = "source"
	OutputAlpha  = "alpha"
	// OutputForeground is the premultiplied subject with its alpha
	// (product vfx with inputs.outputs.foreground).
	OutputForeground = "foreground"
)
