// Package codec is the only place that talks to FFmpeg (through go-astiav):
// it probes, demuxes, decodes, scales and converts, encodes, muxes and copies
// audio. Its API speaks frame.HostFrame and plain Go types only.
//
// Formats are recognised by content, never by file name: PNG, JPEG and WebP
// still images, and MP4/MOV files whose video is H.264 or HEVC. Animated PNG
// (APNG) and animated WebP are rejected with ErrUnsupportedFormat rather
// than silently reduced to their first frame.
//
// Limits (pixels, aspect ratio, frame count) are enforced by Probe and
// NewDecoder before any frame is decoded into a caller's buffer: for images
// from the file header read by this package, for video from the container's
// sample tables.
//
// Every blocking call takes a context first; it is checked between packets
// and frames, and inside the read callback of the input. The package never
// logs; FFmpeg's own log goes to stderr at FFmpeg's level unless Quiet is
// called.
package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// Sentinel errors that callers branch on. Errors returned by this package
// wrap one of them where it applies (test with errors.Is).
var (
	// ErrUnsupportedFormat: the input is not a PNG, JPEG or WebP still
	// image, nor an MP4/MOV with H.264 or HEVC video (or it is animated
	// PNG/WebP, or an audio codec cannot be stored in MP4).
	ErrUnsupportedFormat = errors.New("codec: unsupported format")
	// ErrTooManyPixels: width*height is above Limits.MaxPixels.
	ErrTooManyPixels = errors.New("codec: too many pixels")
	// ErrTooManyFrames: the video has more than Limits.MaxFrames frames.
	ErrTooManyFrames = errors.New("codec: too many frames")
	// ErrExtremeAspect: the aspect ratio is outside 1:MaxAspect..MaxAspect:1.
	ErrExtremeAspect = errors.New("codec: extreme aspect ratio")
	// ErrCorrupt: the input is recognised but cannot be demuxed or decoded
	// (truncated, damaged, zero-sized).
	ErrCorrupt = errors.New("codec: corrupt input")
)

// LimitError says which limit a source broke, with the numbers. It wraps
// ErrTooManyPixels, ErrTooManyFrames or ErrExtremeAspect (errors.Is works).
type LimitError struct {
	// Err is the sentinel: ErrTooManyPixels, ErrTooManyFrames or ErrExtremeAspect.
	Err error
	// Width and Height are the source's size (display size for aspect).
	Width, Height int
	// Got is the measured value (pixels, frames, or long side / short side).
	Got float64
	// Max is the limit that was exceeded.
	Max float64
	// AtLeast is set when counting stopped early: the source has at least
	// Got frames.
	AtLeast bool
}

// Error describes the violation with its numbers.
func (e *LimitError) Error() string {
	switch e.Err {
	case ErrTooManyPixels:
		return fmt.Sprintf("codec: source is %dx%d = %d pixels, limit %d: too many pixels",
			e.Width, e.Height, int64(e.Got), int64(e.Max))
	case ErrTooManyFrames:
		if e.AtLeast {
			return fmt.Sprintf("codec: source has more than %d frames, limit %d: too many frames",
				int64(e.Got)-1, int64(e.Max))
		}
		return fmt.Sprintf("codec: source has %d frames, limit %d: too many frames", int64(e.Got), int64(e.Max))
	case ErrExtremeAspect:
		return fmt.Sprintf("codec: source is %dx%d, aspect %.3g:1, limit %g:1: extreme aspect ratio",
			e.Width, e.Height, e.Got, e.Max)
	}
	return fmt.Sprintf("codec: limit exceeded: %v", e.Err)
}

// Unwrap returns the sentinel.
func (e *LimitError) Unwrap() error { return e.Err }

// Limits bound what a source may be. A zero field means its default.
type Limits struct {
	// MaxPixels bounds coded width*height.
	MaxPixels int
	// MaxFrames bounds the number of video frames.
	MaxFrames int
	// MaxAspect bounds long side / short side of the display size.
	MaxAspect float64
}

// DefaultLimits returns the service limits: 2,770,000 pixels, 240 frames,
// aspect within 1:4..4:1.
func DefaultLimits() Limits {
	return Limits{MaxPixels: 2_770_000, MaxFrames: 240, MaxAspect: 4}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxPixels <= 0 {
		l.MaxPixels = d.MaxPixels
	}
	if l.MaxFrames <= 0 {
		l.MaxFrames = d.MaxFrames
	}
	if l.MaxAspect <= 0 {
		l.MaxAspect = d.MaxAspect
	}
	return l
}

// checkSize enforces the pixel and aspect limits, in that order.
func (l Limits) checkSize(w, h, dw, dh int) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("codec: source has zero size %dx%d: %w", w, h, ErrCorrupt)
	}
	if px := int64(w) * int64(h); px > int64(l.MaxPixels) {
		return &LimitError{Err: ErrTooManyPixels, Width: w, Height: h, Got: float64(px), Max: float64(l.MaxPixels)}
	}
	long, short := max(dw, dh), min(dw, dh)
	if a := float64(long) / float64(short); a > l.MaxAspect {
		return &LimitError{Err: ErrExtremeAspect, Width: dw, Height: dh, Got: a, Max: l.MaxAspect}
	}
	return nil
}

func (l Limits) checkFrames(n int, atLeast bool) error {
	if n > l.MaxFrames {
		return &LimitError{Err: ErrTooManyFrames, Got: float64(n), Max: float64(l.MaxFrames), AtLeast: atLeast}
	}
	return nil
}

// Kind says whether a source is a still image or a video.
type Kind int

const (
	// KindImage is a single still picture (PNG, JPEG, WebP).
	KindImage Kind = iota + 1
	// KindVideo is an MP4/MOV video stream.
	KindVideo
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindImage:
		return "image"
	case KindVideo:
		return "video"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Rational is a fraction, used for frame rates and time bases.
type Rational struct{ Num, Den int }

// Float64 returns Num/Den, or 0 when Den is 0.
func (r Rational) Float64() float64 {
	if r.Den == 0 {
		return 0
	}
	return float64(r.Num) / float64(r.Den)
}

// String formats the fraction as "num/den".
func (r Rational) String() string { return fmt.Sprintf("%d/%d", r.Num, r.Den) }

func fromAV(r astiav.Rational) Rational { return Rational{Num: r.Num(), Den: r.Den()} }
func (r Rational) av() astiav.Rational  { return astiav.NewRational(r.Num, r.Den) }
func (r Rational) valid() bool          { return r.Num > 0 && r.Den > 0 }

// Info describes a probed source.
type Info struct {
	// Kind is KindImage or KindVideo.
	Kind Kind
	// Container is "png", "jpeg", "webp", "mp4" or "mov" (from content).
	Container string
	// Codec is "png", "mjpeg", "webp", "h264" or "hevc".
	Codec string
	// Width and Height are the coded size.
	Width, Height int
	// Rotation is the clockwise display rotation (0, 90, 180, 270): for
	// video from the stream's display matrix, for JPEG from the EXIF
	// orientation (mirrored orientations count as 0). Decoder.Next applies
	// it.
	Rotation int
	// DisplayWidth and DisplayHeight are the size after rotation.
	DisplayWidth, DisplayHeight int
	// FrameRate is the video's average (else real base) frame rate; 0/1
	// for images.
	FrameRate Rational
	// TimeBase is the video stream's time base, the unit of decoded PTS;
	// 0/1 for images.
	TimeBase Rational
	// Frames is the number of frames: 1 for images; for video the
	// container's count, or a count of demuxed packets when it has none.
	Frames int
	// PixelFormat is FFmpeg's name of the decoded format ("yuv420p",
	// "yuv420p10le", "rgba", "yuvj420p", ...).
	PixelFormat string
	// ColorSpace is the YUV matrix the decoder uses: BT.709 when tagged
	// bt709 (or bt2020, the nearest available); BT.601 when tagged
	// bt601/bt470bg/smpte170m/fcc/smpte240m, and always for JPEG and WebP.
	// Untagged sources (and RGB images) get BT.709 when the height is at
	// least 720, else BT.601, which is what players assume.
	ColorSpace frame.ColorSpace
	// FullRange is true for full-range (JPEG/"pc") YUV, and for RGB and
	// grey images, whose values span 0..255 (decoded to YUV420P they
	// become limited range; the frame's FullRange says so).
	FullRange bool
	// HasAlpha is true when the decoded format carries an alpha channel.
	HasAlpha bool
	// HasAudio is true when the container has an audio stream;
	// AudioCodec names the first one's codec ("aac", ...).
	HasAudio   bool
	AudioCodec string
}

// Input is where media comes from. Exactly one of Path or Open is set.
type Input struct {
	// Path is a local file path.
	Path string
	// Open returns a fresh reader positioned at offset 0 on each call
	// (inputs are opened more than once: probing, decoding, audio copy).
	Open func() (io.ReadSeekCloser, error)
}

// FileInput returns an Input reading the local file at path.
func FileInput(path string) Input { return Input{Path: path} }

func (in Input) open() (io.ReadSeekCloser, error) {
	switch {
	case in.Open != nil && in.Path != "":
		return nil, errors.New("codec: input sets both Path and Open")
	case in.Open != nil:
		r, err := in.Open()
		if err != nil {
			return nil, fmt.Errorf("codec: open input: %w", err)
		}
		if r == nil {
			return nil, errors.New("codec: open input: nil reader")
		}
		return r, nil
	case in.Path != "":
		f, err := os.Open(in.Path)
		if err != nil {
			return nil, fmt.Errorf("codec: open input: %w", err)
		}
		return f, nil
	}
	return nil, errors.New("codec: input sets neither Path nor Open")
}

// Quiet sets FFmpeg's log level to quiet for the whole process (FFmpeg's
// logger is process-wide state). Commands and tests call it once at start;
// the package itself never changes the level.
func Quiet() { astiav.SetLogLevel(astiav.LogLevelQuiet) }

// LogWarnings routes FFmpeg's own log lines of level warning and above
// to fn (level "warning", "error" or "fatal", the message without its
// line end) instead of stderr, for the whole process (FFmpeg's logger is
// process-wide state); info lines such as x264's statistics are dropped.
// fn may be called from FFmpeg's threads at once: it must be safe for
// concurrent use and must not block.
func LogWarnings(fn func(level, msg string)) {
	astiav.SetLogLevel(astiav.LogLevelWarning)
	astiav.SetLogCallback(func(_ astiav.Classer, l astiav.LogLevel, _, msg string) {
		level := "warning"
		switch {
		case l <= astiav.LogLevelFatal:
			level = "fatal"
		case l <= astiav.LogLevelError:
			level = "error"
		case l > astiav.LogLevelWarning:
			return
		}
		if msg = strings.TrimRight(msg, "\n"); msg != "" {
			fn(level, msg)
		}
	})
}

func ctxErr(ctx context.Context, step string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("codec: %s: %w", step, err)
	}
	return nil
}
