package worker

import (
	"context"
	"fmt"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/matte"
)

// Media is what probing a request's inputs found. A Have flag is false
// when that input was not given (or not at hand for the caller).
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

// referenceLimits bound a reference image: it is only cover-fitted, so a
// large photo or a wide panorama is fine.
func referenceLimits(lim codec.Limits) codec.Limits {
	return codec.Limits{MaxPixels: ReferenceMaxPixels, MaxFrames: lim.MaxFrames, MaxAspect: 16}
}

// CheckMedia runs every content rule on the inputs of req that are set
// (nil inputs are skipped, so the API can check what is at hand at
// submission and the worker everything before it decodes a frame):
// limits and formats of the source, its kind against generation_type, the
// matte of custom (kind, size, frame count) and select (an image; the
// keyframe index within the frame count), and the reference (an image).
// Nothing is decoded. The first problem is an *InputError with its API
// code; other errors (a reader failing) are returned as they are.
func CheckMedia(ctx context.Context, req *Request, lim codec.Limits) (Media, error) {
	var m Media
	video := req.GenerationType == "video"
	mode, err := matte.ParseMode(req.AlphaMode)
	if err != nil {
		return m, classify("alpha_mode", err)
	}
	if req.Source != nil {
		if m.Source, err = codec.Probe(ctx, *req.Source, lim); err != nil {
			return m, classify("source", err)
		}
		if (m.Source.Kind == codec.KindVideo) != video {
			return m, inputErr("INVALID_FILE_FORMAT", "source: generation_type %s needs %s, got %s %s",
				req.GenerationType, kindWant(video), m.Source.Container, kindOf(m.Source))
		}
		m.HaveSource = true
	}
	if mode.NeedsMatte() && req.Alpha != nil {
		if m.Alpha, err = codec.Probe(ctx, *req.Alpha, lim); err != nil {
			return m, classify("alpha", err)
		}
		m.HaveAlpha = true
		switch mode {
		case matte.Custom:
			if (m.Alpha.Kind == codec.KindVideo) != video {
				return m, classify("alpha", fmt.Errorf("%w: a %s job needs a%s %s matte, got %s",
					matte.ErrKindMismatch, req.GenerationType, article(video), req.GenerationType, kindOf(m.Alpha)))
			}
			if m.HaveSource {
				if err := matte.CheckCustom(geometry(m.Source), geometry(m.Alpha)); err != nil {
					return m, classify("alpha", err)
				}
			}
		case matte.Select:
			if m.Alpha.Kind != codec.KindImage {
				return m, classify("alpha", fmt.Errorf("%w: got %s video", matte.ErrMustBeImage, m.Alpha.Container))
			}
			if err := matte.CheckKeyframeFormat(m.Alpha.Container, m.Alpha.PixelFormat); err != nil {
				return m, classify("alpha", err)
			}
			if m.HaveSource {
				if err := matte.CheckKeyframe(geometry(m.Source), geometry(m.Alpha), req.AlphaKeyframeIndex); err != nil {
					return m, classify("alpha", err)
				}
			}
		}
	} else if mode == matte.Select && m.HaveSource {
		// The keyframe index is checked against the real frame count even
		// when the keyframe image itself is not at hand.
		if err := matte.CheckKeyframe(geometry(m.Source), matte.Geometry{}, req.AlphaKeyframeIndex); err != nil {
			return m, classify("alpha_keyframe_index", err)
		}
	}
	if req.Reference != nil {
		if m.Reference, err = codec.Probe(ctx, *req.Reference, referenceLimits(lim)); err != nil {
			return m, classify("reference", err)
		}
		if m.Reference.Kind != codec.KindImage {
			return m, inputErr("INVALID_FILE_FORMAT", "reference: want a PNG, JPEG or WebP image, got %s video", m.Reference.Container)
		}
		m.HaveReference = true
	}
	return m, nil
}

func article(video bool) string {
	if video {
		return ""
	}
	return "n"
}
