package worker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/matte"
)

// Segmenter is a segmentation network (an *infer.Model): P(object) of a
// picture given as planar sRGB values in [0,1], at the picture's size.
type Segmenter = matte.Segmenter

// codecClip is the job's source as matte.Prepare reads it: probed and
// decoded by codec, its errors classified as the source's.
type codecClip struct {
	in  codec.Input
	lim codec.Limits
}

func (s codecClip) Size(ctx context.Context) (int, int, error) {
	info, err := codec.Probe(ctx, s.in, s.lim)
	if err != nil {
		return 0, 0, classify("source", err)
	}
	return info.Width, info.Height, nil
}

func (s codecClip) Open(ctx context.Context, w, h int) (matte.FrameReader, error) {
	dec, err := codec.NewDecoder(ctx, s.in, s.lim, codec.DecodeOptions{Format: frame.RGB24, Width: w, Height: h})
	if err != nil {
		return nil, classify("source", err)
	}
	return sourceFrames{dec}, nil
}

// sourceFrames is a decoder whose errors but io.EOF are the source's.
type sourceFrames struct{ *codec.Decoder }

func (d sourceFrames) Next(ctx context.Context, f *frame.HostFrame) error {
	err := d.Decoder.Next(ctx, f)
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return classify("source", err)
}

// decodeKeyframe decodes the first frame of in as a matte at w x h, at 16
// bits (a 16-bit keyframe keeps its precision, and so does the
// resampling), into values in [0, 1].
func decodeKeyframe(ctx context.Context, in codec.Input, lim codec.Limits, w, h int) ([]float32, error) {
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: frame.Gray16, Width: w, Height: h})
	if err != nil {
		return nil, classify("alpha", err)
	}
	defer dec.Close()
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return nil, classify("alpha", fmt.Errorf("%w: %w", codec.ErrCorrupt, err))
	}
	out := make([]float32, 0, f.Width*f.Height)
	for y := 0; y < f.Height; y++ {
		for x := 0; x < f.Width; x++ {
			out = append(out, float32(f.Gray16At(x, y))/65535)
		}
	}
	return out, nil
}

// prepareMattes makes the mattes of select (video) and auto jobs
// (matte.Prepare), before the first render frame: the source is read once
// at the flow size and every frame's matte computed there; the render pass
// then upsamples and refines each at the output size (matte.Prepared.Alpha),
// so only low-resolution data is held across the job. It returns nil for
// the other modes and for select on an image (whose keyframe matte is used
// as given). frames is the source's probed frame count: the matte pass
// reports 2*frames steps to p.MatteProgress (each frame decoded, then each
// frame's matte made).
func (p *Pipeline) prepareMattes(ctx context.Context, req *RenderRequest, mode job.AlphaMode, video bool, w, h, frames int) (*matte.Prepared, error) {
	if mode != job.AlphaAuto && (mode != job.AlphaSelect || !video) {
		return nil, nil
	}
	if p.Net == nil {
		return nil, inputErr(job.CodeModelUnavailable, "alpha_mode %s needs the segmentation network, and this worker has none: %s", mode, ModelHint)
	}
	lim := p.limits()
	o := matte.PrepareOptions{Width: w, Height: h, Net: p.Net, Schedule: p.NetSchedule, Frames: frames, Progress: p.MatteProgress}
	if mode == job.AlphaSelect {
		o.Keyframe = &matte.Keyframe{Index: req.AlphaKeyframeIndex, Read: func(ctx context.Context, w, h int) ([]float32, error) {
			return decodeKeyframe(ctx, *req.Alpha, lim, w, h)
		}}
	}
	ms, err := matte.Prepare(ctx, p.Device, codecClip{in: *req.Source, lim: lim}, o)
	var kr *matte.KeyframeRangeError
	switch {
	case errors.As(err, &kr):
		return nil, classify("alpha_keyframe_index", fmt.Errorf("%w: alpha_keyframe_index %d, the source decodes to %d frames (valid 0..%d)",
			job.ErrKeyframeIndex, kr.Index, kr.Frames, kr.Frames-1))
	case errors.Is(err, matte.ErrNoFrames):
		return nil, inputErr(job.CodeInvalidFileFormat, "source: no decodable frame")
	}
	return ms, err
}
