package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
)

// Finish upscaler settings.
const (
	// FinishEdge is UpscaleEdge's ringing limit: 1 keeps every sample
	// within the range of its two nearest inputs.
	FinishEdge = 1
	// FinishSharpen is the unsharp-mask amount after the upscale.
	FinishSharpen = 0.5
)

// UpscaleOptions configure Upscale.
type UpscaleOptions struct {
	// ShortSide is the output's shorter side; the longer side keeps the
	// aspect ratio (rounded to even for video). An input already at least
	// that large keeps its size (it is only sharpened).
	ShortSide int
	// Width and Height, when both set, give the output size directly
	// (each at least the input's).
	Width, Height int
	Preset        string // x264 preset; "" means DefaultPreset
	CRF           int    // 0 means DefaultCRF
	X264Params    string // "" means DefaultX264Params
	// Limits bound the input; zero means codec.DefaultLimits().
	Limits codec.Limits
	// Progress, when set, is called after each encoded frame.
	Progress func(done, total int)
}

// UpscaleResult describes Upscale's output.
type UpscaleResult struct {
	Frames        int
	Width, Height int
}

// upscaleSize is the output size for an input w x h and a shorter side.
func upscaleSize(w, h, short int, even bool) (int, int) {
	s, l := w, h
	if h < w {
		s, l = h, w
	}
	if short <= s {
		return w, h
	}
	nl := float64(l) * float64(short) / float64(s)
	ol := int(math.Round(nl))
	if even {
		ol = 2 * int(math.Round(nl/2))
		short += short & 1
	}
	ol = max(ol, l)
	if h < w {
		return ol, short
	}
	return short, ol
}

// Upscale decodes in (an MP4 or a PNG render), upscales every frame on dev
// (kernels UpscaleEdge with FinishEdge, then SharpenDownload with
// FinishSharpen, both in linear light) and encodes outPath: an H.264 MP4
// with the input's frame count, timestamps and audio (copied, not
// re-encoded), or a PNG for an image. Input problems are *job.InputError.
func Upscale(ctx context.Context, dev kernels.Device, in codec.Input, outPath string, o UpscaleOptions) (UpscaleResult, error) {
	lim := o.Limits
	if lim == (codec.Limits{}) {
		lim = codec.DefaultLimits()
	}
	info, err := codec.Probe(ctx, in, lim)
	if err != nil {
		return UpscaleResult{}, classify("parent render", err)
	}
	video := info.Kind == codec.KindVideo
	sw, sh := info.DisplayWidth, info.DisplayHeight
	fmtIn, container := frame.RGB24, "png"
	if video {
		fmtIn, container = frame.YUV420P, "mp4"
	}
	dw, dh := upscaleSize(sw, sh, o.ShortSide, video)
	if o.Width > 0 && o.Height > 0 {
		dw, dh = max(o.Width, sw), max(o.Height, sh)
	}
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: fmtIn, Width: sw, Height: sh})
	if err != nil {
		return UpscaleResult{}, classify("parent render", err)
	}
	defer dec.Close()
	eo := codec.EncoderOptions{Container: container, Width: dw, Height: dh, Input: fmtIn,
		FrameRate: info.FrameRate, TimeBase: info.TimeBase, ColorSpace: frame.BT709,
		Preset: o.Preset, CRF: o.CRF, X264Params: o.X264Params}
	if eo.Preset == "" {
		eo.Preset = DefaultPreset
	}
	if eo.CRF <= 0 {
		eo.CRF = DefaultCRF
	}
	if eo.X264Params == "" && video {
		eo.X264Params = DefaultX264Params
	}
	if video && info.HasAudio {
		eo.AudioFrom = &in
	}
	enc, err := codec.NewEncoder(ctx, outPath, eo)
	if err != nil {
		return UpscaleResult{}, fmt.Errorf("worker: upscale encoder: %w", err)
	}
	defer enc.Close()

	small, err := dev.NewImage(sw, sh, 3)
	if err != nil {
		return UpscaleResult{}, err
	}
	defer dev.Free(small)
	big, err := dev.NewImage(dw, dh, 3)
	if err != nil {
		return UpscaleResult{}, err
	}
	defer dev.Free(big)

	const depth = 2
	inPool, outPool := newPool(depth+1), newPool(depth+1)
	toCompute := make(chan *frame.HostFrame, depth)
	toEncode := make(chan *frame.HostFrame, depth)
	total := max(info.Frames, 1)
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(toCompute)
		for i := 0; ; i++ {
			f, err := inPool.get(gctx)
			if err != nil {
				return err
			}
			if err := dec.Next(gctx, f); err != nil {
				if errors.Is(err, io.EOF) {
					if i == 0 {
						return inputErr(job.CodeInvalidFileFormat, "parent render: no decodable frame")
					}
					return nil
				}
				return classify("parent render", err)
			}
			if err := send(gctx, toCompute, f); err != nil {
				return err
			}
		}
	})
	g.Go(func() error {
		defer close(toEncode)
		for f := range toCompute {
			if err := dev.Upload(small, f); err != nil {
				return fmt.Errorf("worker: upload: %w", err)
			}
			pts := f.PTS
			inPool.put(f)
			if err := dev.Ops().UpscaleEdge(big, small, FinishEdge); err != nil {
				return fmt.Errorf("worker: upscale: %w", err)
			}
			out, err := outPool.get(gctx)
			if err != nil {
				return err
			}
			out.Format, out.Width, out.Height = fmtIn, dw, dh
			out.ColorSpace, out.FullRange = frame.BT709, false
			if err := out.Alloc(); err != nil {
				return err
			}
			if err := dev.Ops().SharpenDownload(out, big, FinishSharpen); err != nil {
				return fmt.Errorf("worker: sharpen: %w", err)
			}
			out.PTS = pts
			if err := send(gctx, toEncode, out); err != nil {
				return err
			}
		}
		return nil
	})
	g.Go(func() error {
		return encodeAll(gctx, toEncode, enc, outPool, "upscaled render", func() {
			done++
			if o.Progress != nil {
				o.Progress(done, total)
			}
		})
	})
	if err := g.Wait(); err != nil {
		_ = os.Remove(outPath)
		if ctx.Err() != nil {
			return UpscaleResult{}, ctx.Err()
		}
		return UpscaleResult{}, err
	}
	return UpscaleResult{Frames: done, Width: dw, Height: dh}, nil
}
