package job

import (
	"errors"
	"fmt"
	"strings"
)

// Code is a machine-readable error code of the API (for example
// SOURCE_TOO_LARGE). A job that fails on its input carries one; the API
// answers a rejected request with one.
type Code string

// The codes of a rejected job input. They are the codes of the
// generation API's 400s and of a failed job's error.
const (
	CodeInvalidInput          Code = "INVALID_INPUT"
	CodeInvalidGenerationType Code = "INVALID_GENERATION_TYPE"
	CodeInvalidAlphaMode      Code = "INVALID_ALPHA_MODE"
	CodeInvalidMaxResolution  Code = "INVALID_MAX_RESOLUTION"
	CodeInvalidKeyframeIndex  Code = "INVALID_KEYFRAME_INDEX"
	CodeMissingSource         Code = "MISSING_SOURCE"
	CodeMissingAlpha          Code = "MISSING_ALPHA"
	CodeMissingStyleInput     Code = "MISSING_STYLE_INPUT"
	CodePromptTooLong         Code = "PROMPT_TOO_LONG"
	CodeInvalidURI            Code = "INVALID_URI"
	CodeSourceUnreachable     Code = "SOURCE_UNREACHABLE"
	CodeInvalidFileFormat     Code = "INVALID_FILE_FORMAT"
	CodeAlphaTypeMismatch     Code = "ALPHA_TYPE_MISMATCH"
	CodeAlphaMustBeImage      Code = "ALPHA_MUST_BE_IMAGE"
	CodeSourceTooLarge        Code = "SOURCE_TOO_LARGE"
	CodeVideoTooManyFrames    Code = "VIDEO_TOO_MANY_FRAMES"
	CodeExtremeAspectRatio    Code = "EXTREME_ASPECT_RATIO"
	CodeInvalidOutputFormat   Code = "INVALID_OUTPUT_FORMAT"
	CodeInvalidFrameRange     Code = "INVALID_FRAME_RANGE"
	// CodeInvalidPlacement is a placement (an extension) out of its
	// limits, or one asked of alpha_mode fill.
	CodeInvalidPlacement Code = "INVALID_PLACEMENT"
	// CodeInvalidArchive is a frame archive (a ZIP or TAR video source)
	// refused from its index: a zip bomb, an unsafe name, a link.
	CodeInvalidArchive Code = "INVALID_ARCHIVE"
	// CodeModelUnavailable is an auto or select job on a worker without
	// the segmentation network.
	CodeModelUnavailable Code = "MODEL_UNAVAILABLE"
)

// InputError is a job failure caused by the request or its media: it can
// never succeed on retry. The message names the problem with its numbers.
type InputError struct {
	Code Code
	Err  error
}

// Error returns "CODE: message", the form a failed job's error string takes.
func (e *InputError) Error() string { return string(e.Code) + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Failure splits a job's failure into what its record stores: the code
// of the *InputError in err's tree ("" for an internal failure), and err's
// text without the "CODE: " that the InputError's Error puts before its
// message. FailureText puts the code back in front.
func Failure(err error) (code Code, message string) {
	if err == nil {
		return "", ""
	}
	text := err.Error()
	var ie *InputError
	if !errors.As(err, &ie) {
		return "", text
	}
	inner := ie.Err.Error()
	return ie.Code, strings.Replace(text, string(ie.Code)+": "+inner, inner, 1)
}

// FailureText is a failed job's error as the job APIs show it: "CODE:
// message" (the code at the start, SPEC-NOTES), or the message alone for
// an internal failure (code "").
func FailureText(code Code, message string) string {
	if code == "" {
		return message
	}
	return string(code) + ": " + message
}

// Errorf returns an *InputError with code and a formatted message (%w
// wraps as in fmt.Errorf).
func Errorf(code Code, format string, args ...any) error {
	return &InputError{Code: code, Err: fmt.Errorf(format, args...)}
}

// CodeOf returns the code of err when it is (or wraps) an *InputError, ""
// otherwise (an internal failure).
func CodeOf(err error) Code {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Code
	}
	return ""
}
