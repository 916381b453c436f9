// Package matte decides which alpha matte a job uses and checks that a
// supplied matte fits its source. A matte is 1 = keep the subject,
// 0 = replace it with the background.
//
// Implemented modes: fill (the whole frame is kept and relit) and custom
// (a matte file of the same kind, size and length as the source). The
// select (keyframe propagation) and auto (no matte) modes are refused with
// ErrModeNotSupported until their propagation and segmentation land.
package matte

import (
	"errors"
	"fmt"
)

// Mode is an alpha_mode of the generation API.
type Mode string

// The alpha modes of SPEC.md.
const (
	Auto   Mode = "auto"
	Fill   Mode = "fill"
	Custom Mode = "custom"
	Select Mode = "select"
)

// Errors callers branch on. Each is wrapped with the numbers involved.
var (
	// ErrInvalidMode is an alpha_mode outside auto, fill, custom, select.
	ErrInvalidMode = errors.New("matte: invalid alpha mode")
	// ErrModeNotSupported is a valid mode this build cannot run yet.
	ErrModeNotSupported = errors.New("matte: alpha mode not supported yet")
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
)

// ParseMode validates an alpha_mode string.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Fill, Custom, Select:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want auto, fill, custom or select", ErrInvalidMode, s)
}

// NeedsMatte reports whether the mode reads a matte file.
func (m Mode) NeedsMatte() bool { return m == Custom || m == Select }

// Supported reports nil when this build can run the mode, else an error
// wrapping ErrModeNotSupported that says so plainly.
func (m Mode) Supported() error {
	switch m {
	case Fill, Custom:
		return nil
	case Auto, Select:
		return fmt.Errorf("%w: %q is not supported yet; use \"custom\" with a matte file or \"fill\"", ErrModeNotSupported, string(m))
	}
	return fmt.Errorf("%w %q", ErrInvalidMode, string(m))
}

// Geometry is what the checks need to know of a source or matte: whether
// it is a video, its display size and its frame count (1 for images).
type Geometry struct {
	Video         bool
	Width, Height int
	Frames        int
}

func kindName(video bool) string {
	if video {
		return "video"
	}
	return "image"
}

// CheckCustom checks a custom matte against its source: same kind, same
// display size and, for video, the same frame count.
func CheckCustom(src, m Geometry) error {
	if src.Video != m.Video {
		return fmt.Errorf("%w: the source is a%s %s but the custom matte is a%s %s",
			ErrKindMismatch, article(src.Video), kindName(src.Video), article(m.Video), kindName(m.Video))
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
// source: the matte is an image and, for a video source, the index lies in
// 0..frames-1 (SPEC.md: the index is ignored for images).
func CheckKeyframe(src, m Geometry, index int) error {
	if m.Video {
		return fmt.Errorf("%w: got a video", ErrMustBeImage)
	}
	if src.Video && (index < 0 || index >= src.Frames) {
		return fmt.Errorf("%w: alpha_keyframe_index %d, source has %d frames (valid 0..%d)", ErrKeyframeIndex, index, src.Frames, src.Frames-1)
	}
	return nil
}

func article(video bool) string {
	if video {
		return ""
	}
	return "n"
}
