package worker

import (
	"context"
	"fmt"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
)

// codecs are the decoders and encoders of one job's frames. Encoders that
// a job does not need (a stream-copied output, no foreground) are nil.
type codecs struct {
	srcDec, mDec                   *codec.Decoder
	renderEnc, alphaEnc, sourceEnc *codec.Encoder
	fgEnc                          *codec.ForegroundEncoder
}

// close closes every decoder and encoder (encoders already closed at the
// end of their stream are closed again harmlessly).
func (c *codecs) close() {
	for _, d := range []*codec.Decoder{c.srcDec, c.mDec} {
		if d != nil {
			d.Close()
		}
	}
	for _, e := range []*codec.Encoder{c.renderEnc, c.alphaEnc, c.sourceEnc} {
		if e != nil {
			e.Close()
		}
	}
	if c.fgEnc != nil {
		c.fgEnc.Close()
	}
}

// openCodecs opens the source decoder (and the matte's for custom, and
// for select on an image), the render encoder and the encoders of the
// outputs that are not stream copies. On error what was opened is closed.
func (p *Pipeline) openCodecs(ctx context.Context, s *stream) (_ *codecs, err error) {
	req, info, w, h := s.req, s.info, s.w, s.h
	lim := p.limits()
	c := &codecs{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	// One decoder thread each: decoding is a small share of a frame's work
	// (about 4 ms of CPU for both 1080p streams) and runs in its own stage
	// beside the render and the encoders; FFmpeg's frame threads cost no
	// less CPU and hold about 40 MiB more frames.
	if c.srcDec, err = codec.NewDecoder(ctx, *req.Source, lim, codec.DecodeOptions{Format: s.srcFmt(), Width: w, Height: h, Threads: 1}); err != nil {
		return nil, classify("source", err)
	}
	// A custom matte, or the keyframe of select on an image (used as given,
	// resampled when its aspect ratio matches).
	if s.mode == job.AlphaCustom || s.mode == job.AlphaSelect && !s.video() {
		if c.mDec, err = codec.NewDecoder(ctx, *req.Alpha, lim, codec.DecodeOptions{Format: frame.Gray8, Width: w, Height: h, Threads: 1}); err != nil {
			return nil, classify("alpha", err)
		}
	}

	preset, crf := req.Preset, req.CRF
	if preset == "" {
		preset = DefaultPreset
	}
	if crf < 0 {
		crf = DefaultCRF
	}
	container := "png"
	if s.video() {
		container = "mp4"
	}
	base := codec.EncoderOptions{
		Container: container, Width: w, Height: h,
		FrameRate: info.FrameRate, TimeBase: info.TimeBase,
		ColorSpace: frame.BT709, Preset: preset, CRF: crf,
	}
	ro := base
	ro.Input = s.srcFmt()
	ro.X264Params = req.X264Params
	if ro.X264Params == "" {
		ro.X264Params = DefaultX264Params
	}
	if s.video() && info.HasAudio {
		ro.AudioFrom = req.Source
	}
	if c.renderEnc, err = codec.NewEncoder(ctx, s.renderPath, ro); err != nil {
		return nil, classify("source", err)
	}
	if !s.copyAlpha {
		ao := base
		ao.Input, ao.Gray = frame.Gray8, true
		ao.Preset, ao.CRF = "veryfast", alphaCRF // a grey matte compresses well; keep its encode off the critical path
		ao.Threads = 1
		if c.alphaEnc, err = codec.NewEncoder(ctx, s.alphaPath, ao); err != nil {
			return nil, fmt.Errorf("worker: alpha encoder: %w", err)
		}
	}
	if !s.copySource {
		so := base
		so.Input, so.ColorSpace, so.FullRange = s.srcFmt(), info.ColorSpace, info.FullRange
		if c.sourceEnc, err = codec.NewEncoder(ctx, s.sourcePath, so); err != nil {
			return nil, fmt.Errorf("worker: source encoder: %w", err)
		}
	}
	if req.Foreground {
		if c.fgEnc, err = codec.NewForegroundEncoder(ctx, s.fgPath, codec.ForegroundOptions{Video: s.video(), Width: w, Height: h,
			FrameRate: info.FrameRate, TimeBase: info.TimeBase}); err != nil {
			return nil, fmt.Errorf("worker: foreground encoder: %w", err)
		}
	}
	return c, nil
}
