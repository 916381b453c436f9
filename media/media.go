// Package media checks a job's input media against the job's rules
// (package job) by probing them with codec, without decoding a frame. It
// is where the sentinel errors of codec and store become API error codes:
// the API answers 400s with them and the worker fails jobs with them.
//
// It needs FFmpeg (through codec) but no compute device: the API can use
// it without pulling in the pipeline.
package media

import (
	"context"
	"errors"
	"fmt"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

// Inputs are what Check looks at. A nil input is skipped (not given, or
// not at hand for the caller).
type Inputs struct {
	// JobRequest is the request whose media are checked (its generation
	// type, alpha mode and keyframe; its URIs are not read).
	job.JobRequest
	Source    *codec.Input
	Alpha     *codec.Input
	Reference *codec.Input
}

// Media is what probing the inputs found. A Have flag is false when that
// input was not given (or not at hand for the caller).
type Media struct {
	Source, Alpha, Reference             codec.Info
	HaveSource, HaveAlpha, HaveReference bool
}

// Frames is the source's frame count (1 for an image, 0 when the source
// was not probed).
func (m Media) Frames() int {
	switch {
	case !m.HaveSource:
		return 0
	case m.Source.Kind == codec.KindVideo:
		return m.Source.Frames
	}
	return 1
}

// ReferenceLimits bound a reference image: it is only cover-fitted, so a
// large photo or a wide panorama is fine.
func ReferenceLimits(lim codec.Limits) codec.Limits {
	return codec.Limits{MaxPixels: job.ReferenceMaxPixels, MaxFrames: lim.MaxFrames, MaxAspect: 16}
}

// Check runs every content rule on the inputs that are set (nil inputs
// are skipped, so the API can check what is at hand at submission and the
// worker everything before it decodes a frame): limits and formats of the
// source, its kind against the generation type, the matte of custom
// (kind, size, frame count) and select (a PNG or JPEG image that selects
// something; the keyframe index within the frame count), and the
// reference (an image). Only a select keyframe is decoded (one image, see
// CheckKeyframeContent); nothing else is. The first problem is a *job.InputError with its code; other
// errors (a reader failing) are returned as they are.
func Check(ctx context.Context, in Inputs, lim codec.Limits) (Media, error) {
	var m Media
	video := in.GenerationType == "video"
	mode, err := job.ParseAlphaMode(in.AlphaMode)
	if err != nil {
		return m, AsInputError("alpha_mode", err)
	}
	// The matte's and the reference's probes (a reference image is
	// decoded whole) run beside the source's; the rules below still take
	// them in order, so the first problem reported is the same.
	var alphaP, refP *probe
	if mode.NeedsMatte() && in.Alpha != nil {
		alphaP = startProbe(ctx, *in.Alpha, lim)
		defer alphaP.wait()
	}
	if in.Reference != nil {
		refP = startProbe(ctx, *in.Reference, ReferenceLimits(lim))
		defer refP.wait()
	}
	if in.Source != nil {
		format, err := SniffArchive(*in.Source)
		if err != nil {
			return m, AsInputError("source", err)
		}
		if format != "" {
			// A frame archive: judged from its index (InspectArchive).
			a, err := InspectArchive(ctx, *in.Source, lim)
			if err != nil {
				return m, AsInputError("source", err)
			}
			m.Source = a.Info()
		} else if m.Source, err = codec.Probe(ctx, *in.Source, lim); err != nil {
			return m, AsInputError("source", err)
		}
		if (m.Source.Kind == codec.KindVideo) != video {
			return m, job.Errorf(job.CodeInvalidFileFormat, "source: generation_type %s needs %s, got %s %s",
				in.GenerationType, KindWant(video), m.Source.Container, KindOf(m.Source))
		}
		m.HaveSource = true
	}
	if mode.NeedsMatte() && in.Alpha != nil {
		if m.Alpha, err = alphaP.wait(); err != nil {
			return m, AsInputError("alpha", err)
		}
		m.HaveAlpha = true
		switch mode {
		case job.AlphaCustom:
			if (m.Alpha.Kind == codec.KindVideo) != video {
				return m, AsInputError("alpha", fmt.Errorf("%w: a %s job needs %s %s matte, got %s",
					job.ErrKindMismatch, in.GenerationType, job.KindArticle(video), in.GenerationType, KindOf(m.Alpha)))
			}
			if m.HaveSource {
				if err := job.CheckCustom(Geometry(m.Source), Geometry(m.Alpha)); err != nil {
					return m, AsInputError("alpha", err)
				}
			}
		case job.AlphaSelect:
			if m.Alpha.Kind != codec.KindImage {
				return m, AsInputError("alpha", fmt.Errorf("%w: got %s video", job.ErrMustBeImage, m.Alpha.Container))
			}
			if err := job.CheckKeyframeFormat(m.Alpha.Container); err != nil {
				return m, AsInputError("alpha", err)
			}
			if m.HaveSource {
				if err := job.CheckKeyframe(Geometry(m.Source), Geometry(m.Alpha), in.AlphaKeyframeIndex); err != nil {
					return m, AsInputError("alpha", err)
				}
			}
			if err := CheckKeyframeContent(ctx, *in.Alpha, m.Alpha, lim); err != nil {
				return m, AsInputError("alpha", err)
			}
		}
	} else if mode == job.AlphaSelect && m.HaveSource {
		// The keyframe index is checked against the real frame count even
		// when the keyframe image itself is not at hand.
		if err := job.CheckKeyframe(Geometry(m.Source), job.Geometry{}, in.AlphaKeyframeIndex); err != nil {
			return m, AsInputError("alpha_keyframe_index", err)
		}
	}
	if in.Reference != nil {
		if m.Reference, err = refP.wait(); err != nil {
			return m, AsInputError("reference", err)
		}
		if m.Reference.Kind != codec.KindImage {
			return m, job.Errorf(job.CodeInvalidFileFormat, "reference: want a PNG, JPEG or WebP image, got %s video", m.Reference.Container)
		}
		m.HaveReference = true
	}
	return m, nil
}

// probe is a codec.Probe running in its own goroutine.
type probe struct {
	done chan struct{}
	info codec.Info
	err  error
}

func startProbe(ctx context.Context, in codec.Input, lim codec.Limits) *probe {
	p := &probe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.info, p.err = codec.Probe(ctx, in, lim)
	}()
	return p
}

// wait returns the probe's result once it has finished; it may be called
// more than once.
func (p *probe) wait() (codec.Info, error) {
	<-p.done
	return p.info, p.err
}

// CheckKeyframeContent decodes a select keyframe (info is its probe) at
// its own size and 16 bits, by the matte rule of codec.Decoder.Next, and
// refuses one whose every value is 0 (job.ErrKeyframeEmpty): its alpha
// and its colour are both empty, so nothing is selected.
func CheckKeyframeContent(ctx context.Context, in codec.Input, info codec.Info, lim codec.Limits) error {
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: frame.Gray16, Threads: 1})
	if err != nil {
		return err
	}
	defer dec.Close()
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return fmt.Errorf("media: keyframe: %w", err)
	}
	w, h := f.PlaneDims(0)
	for y := 0; y < h; y++ {
		for _, b := range f.Planes[0][y*f.Strides[0] : y*f.Strides[0]+w] {
			if b != 0 {
				return nil
			}
		}
	}
	return job.KeyframeEmpty(info.HasAlpha)
}

// Geometry is what the matte rules need of a probed input.
func Geometry(i codec.Info) job.Geometry {
	return job.Geometry{Video: i.Kind == codec.KindVideo, Width: i.DisplayWidth, Height: i.DisplayHeight, Frames: i.Frames}
}

// KindWant names what a generation type needs, for messages.
func KindWant(video bool) string {
	if video {
		return "an MP4 or MOV video (H.264 or HEVC)"
	}
	return "a PNG, JPEG or WebP image"
}

// KindOf is "video" or "image".
func KindOf(i codec.Info) string { return job.KindName(i.Kind == codec.KindVideo) }

// codeTable maps the sentinel errors of codec and store (input
// resolution) to codes. It is the one place where that mapping lives;
// job.AsInputError maps the job rules' own errors.
var codeTable = []struct {
	err  error
	code job.Code
}{
	{codec.ErrTooManyPixels, job.CodeSourceTooLarge},
	{codec.ErrTooManyFrames, job.CodeVideoTooManyFrames},
	{codec.ErrExtremeAspect, job.CodeExtremeAspectRatio},
	{codec.ErrUnsupportedFormat, job.CodeInvalidFileFormat},
	{codec.ErrCorrupt, job.CodeInvalidFileFormat},
	{store.ErrMIMEMismatch, job.CodeInvalidFileFormat},
	{store.ErrTooLarge, job.CodeSourceTooLarge},
	{store.ErrNotFound, job.CodeSourceUnreachable},
	{store.ErrInvalidURI, job.CodeInvalidURI},
	{store.ErrInvalidKey, job.CodeInvalidURI},
	{store.ErrForbiddenAddress, job.CodeInvalidURI},
}

// AsInputError wraps err as a *job.InputError when it stems from the input
// (a codec or store sentinel of codeTable, or a job rule error), prefixing
// what the input was ("source", "alpha", "reference"). Other errors are
// returned unchanged: they are internal or transient.
func AsInputError(what string, err error) error {
	err = job.AsInputError(what, err)
	var ie *job.InputError
	if err == nil || errors.As(err, &ie) {
		return err
	}
	for _, c := range codeTable {
		if errors.Is(err, c.err) {
			return &job.InputError{Code: c.code, Err: fmt.Errorf("%s: %w", what, err)}
		}
	}
	return err
}
