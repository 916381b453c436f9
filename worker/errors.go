package worker

import (
	"errors"
	"fmt"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/store"
)

// InputError is a job failure caused by the request or its media: it can
// never succeed on retry. Code is the machine-readable error code of
// SPEC-NOTES.md (for example SOURCE_TOO_LARGE); the message names the
// problem with its numbers.
type InputError struct {
	Code string
	Err  error
}

// Error returns "CODE: message", the form a failed job's error string takes.
func (e *InputError) Error() string { return e.Code + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(code string, format string, args ...any) error {
	return &InputError{Code: code, Err: fmt.Errorf(format, args...)}
}

// codeTable maps the sentinel errors of codec, matte and store (input
// resolution) to API codes. It is the one place where that mapping lives:
// the worker fails jobs with it and the API answers 400s with it.
var codeTable = []struct {
	err  error
	code string
}{
	{codec.ErrTooManyPixels, "SOURCE_TOO_LARGE"},
	{codec.ErrTooManyFrames, "VIDEO_TOO_MANY_FRAMES"},
	{codec.ErrExtremeAspect, "EXTREME_ASPECT_RATIO"},
	{codec.ErrUnsupportedFormat, "INVALID_FILE_FORMAT"},
	{codec.ErrCorrupt, "INVALID_FILE_FORMAT"},
	{matte.ErrInvalidMode, "INVALID_ALPHA_MODE"},
	{matte.ErrModeNotSupported, "INVALID_ALPHA_MODE"},
	{matte.ErrMissingMatte, "MISSING_ALPHA"},
	{matte.ErrKindMismatch, "ALPHA_TYPE_MISMATCH"},
	{matte.ErrMustBeImage, "ALPHA_MUST_BE_IMAGE"},
	{matte.ErrSizeMismatch, "ALPHA_TYPE_MISMATCH"},
	{matte.ErrFrameCountMismatch, "ALPHA_TYPE_MISMATCH"},
	{matte.ErrKeyframeIndex, "INVALID_KEYFRAME_INDEX"},
	{matte.ErrKeyframeFormat, "ALPHA_TYPE_MISMATCH"},
	{store.ErrMIMEMismatch, "INVALID_FILE_FORMAT"},
	{store.ErrTooLarge, "SOURCE_TOO_LARGE"},
	{store.ErrNotFound, "SOURCE_UNREACHABLE"},
	{store.ErrInvalidURI, "INVALID_URI"},
	{store.ErrInvalidKey, "INVALID_URI"},
	{store.ErrForbiddenAddress, "INVALID_URI"},
}

// AsInputError wraps err as an *InputError when it stems from the input (a
// codec, matte or store sentinel of codeTable), prefixing what the input was
// ("source", "alpha", "reference"). Other errors are returned unchanged:
// they are internal or transient.
func AsInputError(what string, err error) error { return classify(what, err) }

func classify(what string, err error) error {
	if err == nil {
		return nil
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return err
	}
	for _, c := range codeTable {
		if errors.Is(err, c.err) {
			return &InputError{Code: c.code, Err: fmt.Errorf("%s: %w", what, err)}
		}
	}
	return err
}

// Code returns the API error code of err, or "" when err is not an input
// error (an internal failure).
func Code(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Code
	}
	return ""
}
