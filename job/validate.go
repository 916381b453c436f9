package job

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
)

// Request limits and defaults.
const (
	// MaxPromptChars bounds the prompt, in characters (not bytes).
	MaxPromptChars = 2000
	// DefaultMaxResolution is the max_resolution of a request without one.
	DefaultMaxResolution = 1080
	// MinPlacementScale and MaxPlacementScale bound Placement.Scale: a
	// quarter to four times the source's size.
	MinPlacementScale, MaxPlacementScale float64 = 0.25, 4
	// MaxPlacementOffset bounds |Placement.X| and |Placement.Y|: at 1 the
	// subject's centre is a whole frame away from the frame's centre.
	MaxPlacementOffset float64 = 1
	// ReferenceMaxPixels caps a reference image (it is only cover-fitted,
	// so a large photo is fine; this bounds decode memory).
	ReferenceMaxPixels = 40_000_000
)

// Valid is a request that Validate accepted. Validate is the only way to
// make one, so a function that takes a Valid cannot be handed a request
// whose field rules were not checked (the worker's pipeline takes only
// values built from one).
type Valid struct{ r JobRequest }

// Request returns the validated request (a copy).
func (v Valid) Request() JobRequest { return v.r }

// Validator is Validate's signature. The API server and the worker daemon
// each hold one (Validate unless a test wraps it to count the calls: once
// per submission, once per worker pickup).
type Validator func(JobRequest) (Valid, error)

// Validate checks the field rules of a generation (not its media) and
// returns the request as a Valid, or an *InputError naming the first
// problem. An empty URI is an input not given. The rules run in the order
// in which the generation API names a body's first problem (generation
// type, alpha mode, source, matte, style, prompt, resolution, keyframe,
// output format, frames, placement), so that the API can word Validate's answer
// without checking a field itself. It is the one place the
// rules live: the worker runs it once per job before it fetches anything,
// and the API once per submission after it has normalised a request.
func Validate(r JobRequest) (Valid, error) {
	if err := validate(r); err != nil {
		return Valid{}, err
	}
	return Valid{r: r}, nil
}

func validate(r JobRequest) error {
	switch r.GenerationType {
	case "image", "video":
	default:
		return Errorf(CodeInvalidGenerationType, "generation_type %q: want image or video", r.GenerationType)
	}
	mode, err := ParseAlphaMode(r.AlphaMode)
	if err == nil {
		err = mode.Supported()
	}
	if err != nil {
		return AsInputError("alpha_mode", err)
	}
	if r.SourceURI == "" {
		return Errorf(CodeMissingSource, "source is required")
	}
	if mode.NeedsMatte() && r.AlphaURI == "" {
		return AsInputError("alpha", fmt.Errorf("%w: alpha_mode %s needs an alpha matte", ErrMissingMatte, mode))
	}
	if r.Prompt == "" && r.ReferenceImageURI == "" {
		return Errorf(CodeMissingStyleInput, "at least one of prompt or reference image is required")
	}
	if n := utf8.RuneCountInString(r.Prompt); n > MaxPromptChars {
		return Errorf(CodePromptTooLong, "prompt has %d characters, limit %d", n, MaxPromptChars)
	}
	switch r.MaxResolution {
	case 0, 720, 1080:
	default:
		return Errorf(CodeInvalidMaxResolution, "max_resolution %d: want 720 or 1080", r.MaxResolution)
	}
	if r.AlphaKeyframeIndex < 0 {
		return Errorf(CodeInvalidKeyframeIndex, "alpha_keyframe_index %d: minimum 0", r.AlphaKeyframeIndex)
	}
	switch r.OutputFormat {
	case "", OutputFormatMP4, OutputFormatEXR:
	default:
		return Errorf(CodeInvalidOutputFormat, "output_format %q: want mp4 or exr", trunc.String(r.OutputFormat, 40))
	}
	if r.Frames != "" {
		first, last, err := ParseFrames(r.Frames)
		if err != nil {
			return err
		}
		if r.GenerationType != "video" {
			return Errorf(CodeInvalidFrameRange, "frames %s: a frame range needs generation_type video", r.Frames)
		}
		if mode == AlphaSelect && (r.AlphaKeyframeIndex < first || r.AlphaKeyframeIndex > last) {
			return Errorf(CodeInvalidKeyframeIndex, "alpha_keyframe_index %d is outside frames %d-%d: the keyframe must be one of the frames rendered", r.AlphaKeyframeIndex, first, last)
		}
	}
	if r.Placement != nil {
		return CheckPlacement(*r.Placement, mode)
	}
	return nil
}

// CheckPlacement checks a placement's limits (an *InputError
// INVALID_PLACEMENT naming the field) and that mode has a plate to place
// the subject over (fill has none).
func CheckPlacement(p Placement, mode AlphaMode) error {
	if !(p.Scale >= MinPlacementScale && p.Scale <= MaxPlacementScale) {
		return Errorf(CodeInvalidPlacement, "placement.scale %g: want %g to %g (times the source's size)", p.Scale, MinPlacementScale, MaxPlacementScale)
	}
	for _, o := range []struct {
		name, of string
		v        float64
	}{{"x", "width", p.X}, {"y", "height", p.Y}} {
		if !(o.v >= -MaxPlacementOffset && o.v <= MaxPlacementOffset) {
			return Errorf(CodeInvalidPlacement, "placement.%s %g: want -%g to %g (a fraction of the frame's %s)", o.name, o.v, MaxPlacementOffset, MaxPlacementOffset, o.of)
		}
	}
	if mode == AlphaFill {
		return Errorf(CodeInvalidPlacement, "placement: alpha_mode fill keeps the whole frame as the subject, with no plate to place it over")
	}
	return nil
}

// Output formats of JobRequest.OutputFormat.
const (
	OutputFormatMP4 = "mp4"
	OutputFormatEXR = "exr"
)

// EXRPasses are the EXR sequences of an exr job, in order: the composite
// and its terms (see render.Passes).
var EXRPasses = []string{"composite", "foreground", "alpha", "gain", "shadow", "wrap", "backdrop", "normals", "grain"}

// OutputEXR is the output name of pass's EXR sequence (one ZIP of its
// frames): "exr_composite", ...
func OutputEXR(pass string) string { return "exr_" + pass }

// ParseFrames reads a frame range "A-B": source frames A to B, 0-based and
// inclusive, 0 <= A <= B (spaces around the numbers are allowed). A bad
// range is an *InputError INVALID_FRAME_RANGE.
func ParseFrames(s string) (first, last int, err error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, Errorf(CodeInvalidFrameRange, "frames %q: want A-B with 0 <= A <= B (0-based source frames, inclusive, e.g. 10-19)", trunc.String(s, 40))
	}
	return first, last, nil
}

// CheckFrames checks the frame range s (ParseFrames) against a source of
// n frames: its last frame must be one of them.
func CheckFrames(s string, n int) (first, last int, err error) {
	if first, last, err = ParseFrames(s); err != nil {
		return 0, 0, err
	}
	if last >= n {
		return 0, 0, Errorf(CodeInvalidFrameRange, "frames %d-%d: the source has %d frames (0..%d)", first, last, n, n-1)
	}
	return first, last, nil
}
