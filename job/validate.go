package job

import (
	"fmt"
	"unicode/utf8"
)

// Request limits and defaults.
const (
	// MaxPromptChars bounds the prompt, in characters (not bytes).
	MaxPromptChars = 2000
	// DefaultMaxResolution is the max_resolution of a request without one.
	DefaultMaxResolution = 1080
	// ReferenceMaxPixels caps a reference image (it is only cover-fitted,
	// so a large photo is fine; this bounds decode memory).
	ReferenceMaxPixels = 40_000_000
)

// Validate checks the field rules of a generation (not its media) and
// returns an *InputError naming the first problem. An empty URI is an
// input not given. It is the one place the rules live: the worker runs it
// before it fetches anything, and the API after it has normalised a
// request.
func Validate(r JobRequest) error {
	switch r.GenerationType {
	case "image", "video":
	default:
		return Errorf(CodeInvalidGenerationType, "generation_type %q: want image or video", r.GenerationType)
	}
	if r.SourceURI == "" {
		return Errorf(CodeMissingSource, "source is required")
	}
	mode, err := ParseAlphaMode(r.AlphaMode)
	if err == nil {
		err = mode.Supported()
	}
	if err != nil {
		return AsInputError("alpha_mode", err)
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
	return nil
}
