package job

import (
	"errors"
	"fmt"
	"math"
)

// AlphaMode is the alpha_mode of a generation: how the matte is made.
// (The product vfx "mode", ModeStandard or ModeFast, is another thing.)
type AlphaMode string

// The alpha modes.
const (
	// AlphaAuto: no matte is given; the worker makes one.
	AlphaAuto AlphaMode = "auto"
	// AlphaFill: the whole frame is kept and relit.
	AlphaFill AlphaMode = "fill"
	// AlphaCustom: a matte file of the source's kind, size and length.
	AlphaCustom AlphaMode = "custom"
	// AlphaSelect: one keyframe matte carried through a video.
	AlphaSelect AlphaMode = "select"
)

// Errors of the matte rules, each wrapped with the numbers involved. Their
// texts are those the API and failed jobs have always shown.
var (
	// ErrInvalidAlphaMode is an alpha_mode outside auto, fill, custom, select.
	ErrInvalidAlphaMode = errors.New("matte: invalid alpha mode")
	// ErrMissingMatte is custom or select without a matte file.
	ErrMissingMatte = errors.New("matte: alpha matte required")
	// ErrKindMismatch is a custom matte whose kind (image/video) differs
	// from the source's.
	ErrKindMismatch = errors.New("matte: matte kind does not match the source")
	// ErrMustBeImage is a select keyframe matte that is not an image.
	ErrMustBeImage = errors.New("matte: keyframe matte must be an image")
	// ErrSizeMismatch is a matte whose dimensions differ from the source's.
	ErrSizeMismatch = errors.New("matte: matte size does not match the source")
	// ErrFrameCountMismatch is a video matte with another frame count.
	ErrFrameCountMismatch = errors.New("matte: matte frame count does not match the source")
	// ErrKeyframeIndex is an alpha_keyframe_index outside 0..frames-1.
	ErrKeyframeIndex = errors.New("matte: keyframe index out of range")
	// ErrKeyframeFormat is a select keyframe that is not a PNG or JPEG.
	ErrKeyframeFormat = errors.New("matte: keyframe matte must be a PNG or JPEG image")
	// ErrKeyframeEmpty is a select keyframe that selects nothing: its
	// alpha and its colour are both empty.
	ErrKeyframeEmpty = errors.New("matte: keyframe matte selects nothing")
)

// ParseAlphaMode validates an alpha_mode string.
func ParseAlphaMode(s string) (AlphaMode, error) {
	switch m := AlphaMode(s); m {
	case AlphaAuto, AlphaFill, AlphaCustom, AlphaSelect:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want auto, fill, custom or select", ErrInvalidAlphaMode, s)
}

// NeedsMatte reports whether the mode reads a matte file.
func (m AlphaMode) NeedsMatte() bool { return m == AlphaCustom || m == AlphaSelect }

// Supported reports nil when the mode can be run, else an error wrapping
// ErrInvalidAlphaMode.
func (m AlphaMode) Supported() error {
	switch m {
	case AlphaFill, AlphaCustom, AlphaAuto, AlphaSelect:
		return nil
	}
	return fmt.Errorf("%w %q", ErrInvalidAlphaMode, string(m))
}

// Geometry is what the matte rules need to know of a source or matte:
// whether it is a video, its display size and its frame count (1 for
// images).
type Geometry struct {
	Video         bool
	Width, Height int
	Frames        int
}

// KindName is "video" or "image".
func KindName(video bool) string {
	if video {
		return "video"
	}
	return "image"
}

// KindArticle is the indefinite article of KindName(video): "a video",
// "an image". Messages use it to name what was given and what is wanted.
func KindArticle(video bool) string {
	if video {
		return "a"
	}
	return "an"
}

// CheckCustom checks a custom matte against its source: same kind, same
// display size and, for video, the same frame count.
func CheckCustom(src, m Geometry) error {
	if src.Video != m.Video {
		return fmt.Errorf("%w: the source is %s %s but the custom matte is %s %s",
			ErrKindMismatch, KindArticle(src.Video), KindName(src.Video), KindArticle(m.Video), KindName(m.Video))
	}
	if src.Width != m.Width || src.Height != m.Height {
		return fmt.Errorf("%w: source is %dx%d, matte is %dx%d", ErrSizeMismatch, src.Width, src.Height, m.Width, m.Height)
	}
	if src.Video && src.Frames != m.Frames {
		return fmt.Errorf("%w: source has %d frames, matte has %d", ErrFrameCountMismatch, src.Frames, m.Frames)
	}
	return nil
}

// CheckKeyframe checks a select keyframe matte and its index against the
// source: the matte is an image of the source's size or of its aspect
// ratio (it is then resampled; a zero matte size skips this check) and,
// for a video source, the index lies in 0..frames-1 (the index is ignored
// for images).
func CheckKeyframe(src, m Geometry, index int) error {
	if m.Video {
		return fmt.Errorf("%w: got a video", ErrMustBeImage)
	}
	if m.Width > 0 && m.Height > 0 && src.Width > 0 && src.Height > 0 && !SameAspect(src.Width, src.Height, m.Width, m.Height) {
		return fmt.Errorf("%w: source is %dx%d, keyframe matte is %dx%d: want the same size or the same aspect ratio",
			ErrSizeMismatch, src.Width, src.Height, m.Width, m.Height)
	}
	if src.Video && (index < 0 || index >= src.Frames) {
		return fmt.Errorf("%w: alpha_keyframe_index %d, source has %d frames (valid 0..%d)", ErrKeyframeIndex, index, src.Frames, src.Frames-1)
	}
	return nil
}

// SameAspect reports whether a w1 x h1 and a w2 x h2 picture have the same
// aspect ratio, allowing the rounding of one pixel in the smaller one.
func SameAspect(w1, h1, w2, h2 int) bool {
	if w1 == w2 && h1 == h2 {
		return true
	}
	if w2*h2 > w1*h1 {
		w1, h1, w2, h2 = w2, h2, w1, h1
	}
	// Scale the larger to the smaller's width and compare heights.
	hs := float64(h1) * float64(w2) / float64(w1)
	return math.Abs(hs-float64(h2)) <= 1
}

// CheckKeyframeFormat checks that a keyframe matte is a PNG or JPEG, from
// its container name. Any pixel format is taken, as roto tools export
// them: grey, grey with alpha, RGB, RGBA, 8 or 16 bits (the matte is the
// alpha where it holds one, else the luminance; see codec.Decoder.Next).
func CheckKeyframeFormat(container string) error {
	if container != "png" && container != "jpeg" {
		return fmt.Errorf("%w: got %s", ErrKeyframeFormat, container)
	}
	return nil
}

// KeyframeEmpty is the error of a keyframe matte whose every matte value
// is 0; hasAlpha tells whether the file has an alpha channel, for the
// message.
func KeyframeEmpty(hasAlpha bool) error {
	if hasAlpha {
		return fmt.Errorf("%w: its alpha channel is fully transparent (or fully opaque) and its colour is black everywhere; "+
			"make the subject opaque on a transparent background, or white on black", ErrKeyframeEmpty)
	}
	return fmt.Errorf("%w: it is black everywhere; make the subject white on black (or opaque on a transparent background)", ErrKeyframeEmpty)
}

// sentinels maps the errors of this package to their codes.
var sentinels = []struct {
	err  error
	code Code
}{
	{ErrInvalidAlphaMode, CodeInvalidAlphaMode},
	{ErrMissingMatte, CodeMissingAlpha},
	{ErrKindMismatch, CodeAlphaTypeMismatch},
	{ErrMustBeImage, CodeAlphaMustBeImage},
	{ErrSizeMismatch, CodeAlphaTypeMismatch},
	{ErrFrameCountMismatch, CodeAlphaTypeMismatch},
	{ErrKeyframeIndex, CodeInvalidKeyframeIndex},
	{ErrKeyframeFormat, CodeAlphaTypeMismatch},
	{ErrKeyframeEmpty, CodeAlphaTypeMismatch},
}

// AsInputError wraps err as an *InputError when it is one of this
// package's rule errors, prefixing what the input was ("alpha",
// "alpha_mode"). An *InputError is returned as it is; other errors are
// returned unchanged. Package media extends this to the sentinels of
// codec and store.
func AsInputError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return err
	}
	for _, c := range sentinels {
		if errors.Is(err, c.err) {
			return &InputError{Code: c.code, Err: fmt.Errorf("%s: %w", what, err)}
		}
	}
	return err
}
