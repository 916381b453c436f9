package codec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vfxrender/vfx/frame"
)

// TrimVideo writes frames first..last (0-based, inclusive, in decode
// order) of the video in to out as a lossless H.264 MP4 (qp 0) at the
// source's display size and frame rate, its timestamps restarting at 0;
// gray keeps the luma only (a matte). The source's limits are checked
// (Probe) before any frame is decoded, and decoding stops after last. It
// returns an error wrapping ErrCorrupt when the video has no frame last,
// and ctx.Err() when ctx is done (checked between frames). Audio is not
// kept.
func TrimVideo(ctx context.Context, in Input, out string, first, last int, lim Limits, gray bool) error {
	if first < 0 || last < first {
		return fmt.Errorf("codec: trim: frames %d-%d: want 0 <= first <= last", first, last)
	}
	format := frame.YUV420P
	if gray {
		format = frame.Gray8
	}
	dec, err := NewDecoder(ctx, in, lim, DecodeOptions{Format: format, Threads: 1})
	if err != nil {
		return err
	}
	defer dec.Close()
	info := dec.Info()
	if info.Kind != KindVideo {
		return fmt.Errorf("codec: trim: the input is a %s, not a video: %w", info.Kind, ErrUnsupportedFormat)
	}
	if last >= info.Frames {
		return fmt.Errorf("codec: trim: frames %d-%d: the video has %d (0..%d): %w", first, last, info.Frames, info.Frames-1, ErrCorrupt)
	}
	rate := info.FrameRate
	if !rate.valid() {
		rate = Rational{24, 1}
	}
	var enc *Encoder
	defer func() {
		if enc != nil {
			enc.Close()
		}
	}()
	f := &frame.HostFrame{}
	for i := 0; i <= last; i++ {
		if err := dec.Next(ctx, f); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("codec: trim: the video ends after %d frames, before frame %d: %w", i, last, ErrCorrupt)
			}
			return err
		}
		if i < first {
			continue
		}
		if enc == nil {
			cs, full := f.ColorSpace, f.FullRange
			if gray {
				cs, full = frame.BT709, true
			}
			if enc, err = NewEncoder(ctx, out, EncoderOptions{Container: "mp4", Width: f.Width, Height: f.Height, Input: format, Gray: gray,
				FrameRate: rate, TimeBase: Rational{rate.Den, rate.Num}, ColorSpace: cs, FullRange: full,
				Preset: "ultrafast", CRF: 1, X264Params: "qp=0"}); err != nil {
				return fmt.Errorf("codec: trim: %w", err)
			}
		}
		f.PTS = int64(i - first)
		if err := enc.Write(ctx, f); err != nil {
			return fmt.Errorf("codec: trim: %w", err)
		}
	}
	err = enc.Close()
	enc = nil
	if err != nil {
		return fmt.Errorf("codec: trim: %w", err)
	}
	return nil
}
