package api

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/worker"
)

// mediaError turns an input error into a 400 with its code; other errors
// (object storage down) are returned as they are.
func mediaError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ie *worker.InputError
	if errors.As(worker.AsInputError(what, err), &ie) {
		return badRequest(ie.Code, "%v", ie.Err)
	}
	return fmt.Errorf("api: check %s: %w", what, err)
}

// atHand reports whether uri's content can be checked at submission
// without a network fetch: an upload or an inline data: URI.
func (s *Server) atHand(uri string) bool {
	u, err := s.resolver.Parse(uri)
	return err == nil && (u.Kind == store.KindUpload || u.Kind == store.KindData)
}

// probe probes an input under lim.
func (s *Server) probe(ctx context.Context, uri string, lim codec.Limits) (codec.Info, error) {
	in := codec.Input{Open: func() (io.ReadSeekCloser, error) {
		rc, _, err := s.resolver.Open(ctx, uri)
		return rc, err
	}}
	// A missing upload or a bad data: payload is reported as such, not as
	// a probe failure.
	rc, _, err := s.resolver.Open(ctx, uri)
	if err != nil {
		return codec.Info{}, err
	}
	_ = rc.Close()
	return codec.Probe(ctx, in, lim)
}

func geometryOf(i codec.Info) matte.Geometry {
	return matte.Geometry{Video: i.Kind == codec.KindVideo, Width: i.DisplayWidth, Height: i.DisplayHeight, Frames: i.Frames}
}

// checkMedia runs the content checks of the inputs that are at hand and
// returns the source's frame count (0 when the source is not at hand).
func (s *Server) checkMedia(ctx context.Context, jr worker.JobRequest) (int, error) {
	lim := codec.DefaultLimits()
	video := jr.GenerationType == "video"
	mode, _ := matte.ParseMode(jr.AlphaMode)
	var src codec.Info
	haveSrc := s.atHand(jr.SourceURI)
	if haveSrc {
		var err error
		src, err = s.probe(ctx, jr.SourceURI, lim)
		if err != nil {
			return 0, mediaError("source", err)
		}
		if (src.Kind == codec.KindVideo) != video {
			want := "a PNG, JPEG or WebP image"
			if video {
				want = "an MP4 or MOV video"
			}
			return 0, badRequest(CodeInvalidFileFormat, "source: generation_type %s needs %s, got %s", jr.GenerationType, want, src.Container)
		}
	}
	if mode.NeedsMatte() && s.atHand(jr.AlphaURI) {
		m, err := s.probe(ctx, jr.AlphaURI, lim)
		if err != nil {
			return 0, mediaError("alpha", err)
		}
		switch mode {
		case matte.Custom:
			if (m.Kind == codec.KindVideo) != video {
				return 0, badRequest(CodeAlphaTypeMismatch, "alpha: alpha_mode custom needs a %s matte for a %s job, got %s",
					jr.GenerationType, jr.GenerationType, m.Kind)
			}
			if haveSrc {
				if err := matte.CheckCustom(geometryOf(src), geometryOf(m)); err != nil {
					return 0, mediaError("alpha", err)
				}
			}
		case matte.Select:
			if m.Kind != codec.KindImage {
				return 0, badRequest(CodeAlphaMustBeImage, "alpha: alpha_mode select needs a PNG or JPEG keyframe image, got %s video", m.Container)
			}
			if haveSrc {
				if err := matte.CheckKeyframe(geometryOf(src), geometryOf(m), jr.AlphaKeyframeIndex); err != nil {
					return 0, mediaError("alpha", err)
				}
			}
		}
	} else if mode == matte.Select && haveSrc && video && jr.AlphaKeyframeIndex > src.Frames-1 {
		return 0, badRequest(CodeInvalidKeyframeIndex, "alpha_keyframe_index %d: the source has %d frames", jr.AlphaKeyframeIndex, src.Frames)
	}
	if jr.ReferenceImageURI != "" && s.atHand(jr.ReferenceImageURI) {
		rlim := codec.Limits{MaxPixels: worker.ReferenceMaxPixels, MaxFrames: lim.MaxFrames, MaxAspect: 16}
		ri, err := s.probe(ctx, jr.ReferenceImageURI, rlim)
		if err != nil {
			return 0, mediaError("reference_image", err)
		}
		if ri.Kind != codec.KindImage {
			return 0, badRequest(CodeInvalidFileFormat, "reference_image: want a PNG, JPEG or WebP image, got %s video", ri.Container)
		}
	}
	if !haveSrc {
		return 0, nil
	}
	if !video {
		return 1, nil
	}
	return src.Frames, nil
}
