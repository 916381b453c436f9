// Package worker runs one job's life: inputs → codec → matte → render →
// codec → outputs. Pipeline.Run is the whole local render (`vfx render`);
// the queue daemon wraps the same Pipeline.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/media"
	"github.com/vfxrender/vfx/render"
)

// Request limits and defaults (docs/api.md, Limits).
const (
	DefaultPreset = "medium"
	DefaultCRF    = 18
	// DefaultX264Params shortens x264's rate-control lookahead from the
	// medium preset's 40 frames to 20: it halves the encoder's frame queue
	// (about 200 MiB at 1080p) for a bitrate change within about 1% at the
	// same CRF. Override with Request.X264Params.
	DefaultX264Params = "rc-lookahead=20"
	// alphaCRF keeps the matte output near-lossless (mattes are flat and
	// compress well even so).
	alphaCRF = 6
)

// Request is one job's inputs, already normalised by the caller.
type Request struct {
	GenerationType     string // "image" or "video"
	Source             *codec.Input
	AlphaMode          string // auto, fill, custom, select
	Alpha              *codec.Input
	AlphaKeyframeIndex int
	Reference          *codec.Input
	Prompt             string
	Seed               uint32
	MaxResolution      int    // 720 or 1080; 0 means 1080
	Preset             string // x264 preset; "" means medium
	CRF                int    // x264 CRF 0..51; -1 means 18
	// X264Params are extra libx264 options for the render ("key=value:...",
	// "" = none). Operator/CLI use only: libx264 accepts options that write
	// files, so never forward an API caller's text here.
	X264Params string
	// RenderShortSide, when > 0, caps the output's shorter side below
	// MaxResolution (any size of at least 2): the fast mode of product vfx
	// renders smaller and upscales. Set by the daemon, never by a caller's
	// field.
	RenderShortSide int
	// Foreground also writes the relit subject with its matte,
	// premultiplied: foreground.png (RGBA) for an image, foreground.mov
	// (ProRes 4444 with alpha) for a video (`vfx render --foreground`,
	// product vfx outputs.foreground).
	Foreground bool
}

// Result describes the files a job wrote.
type Result struct {
	Render, Source, Alpha string // paths of the output files
	Foreground            string // path of the foreground, when asked for
	Frames                int
	Width, Height         int
	SourceCopied          bool // the source was passed through unchanged (stream copy)
	AlphaCopied           bool // the custom matte video was passed through unchanged
	// Matte is how select and auto made the matte: "select", "auto/chroma",
	// "auto/static" or "auto/centre" ("" for the other modes and for select
	// on an image, whose keyframe is used as given).
	Matte   string
	Elapsed time.Duration
}

// Pipeline runs jobs on one compute device. It holds no per-job state.
type Pipeline struct {
	Device kernels.Device
	// Limits are enforced on the source and the matte before any frame is
	// decoded. Zero value: codec.DefaultLimits().
	Limits codec.Limits
	// Progress, when set, is called after each encoded render frame.
	Progress func(done, total int)
	// OnPlan, when set, is called once the inputs are probed and before
	// any frame is decoded, with the job's shape and memory estimate (a
	// process that runs one job at a time can set its GC limit from it).
	OnPlan func(Plan)
	// Net is the segmentation network that auto and select (video) need;
	// without it those jobs fail with MODEL_UNAVAILABLE.
	Net Segmenter
	// NetSchedule picks the frames the network runs on (zero value:
	// matte.DefaultCPUSchedule).
	NetSchedule matte.Schedule
}

// ModelHint says how to give a worker its segmentation network.
const ModelHint = "install ONNX Runtime and the model with `make models` (or scripts/models.sh) and point --model-dir / VFX_MODEL_DIR at them"

// Plan is a job's shape, known after probing.
type Plan struct {
	Video         bool
	Width, Height int // output size
	Frames        int
	// HeapBytes estimates the Go heap the job keeps live: the
	// full-resolution float images (source, matte, background and its
	// blur), the pooled host frames, and the fixed tables.
	HeapBytes int64
}

// heapPerPixel and heapFixed are the terms of Plan.HeapBytes: 40 bytes of
// float32 images and about 17.5 bytes of pooled 8-bit frames per output
// pixel, plus lookup tables and low-resolution images.
const (
	heapPerPixel = 57.5
	heapFixed    = 24 << 20
)

// Validate checks the request's fields (not its media) and returns a
// *job.InputError naming the first problem: job.Validate's rules, plus
// the encoder settings.
func Validate(req *Request) error {
	jr := job.JobRequest{
		GenerationType:     req.GenerationType,
		AlphaMode:          req.AlphaMode,
		AlphaKeyframeIndex: req.AlphaKeyframeIndex,
		Prompt:             req.Prompt,
		MaxResolution:      req.MaxResolution,
	}
	// job.Validate only asks whether an input is given.
	if req.Source != nil {
		jr.SourceURI = "-"
	}
	if req.Alpha != nil {
		jr.AlphaURI = "-"
	}
	if req.Reference != nil {
		jr.ReferenceImageURI = "-"
	}
	if err := job.Validate(jr); err != nil {
		return err
	}
	if req.CRF < -1 || req.CRF > 51 {
		return inputErr(job.CodeInvalidInput, "crf %d: want 0..51", req.CRF)
	}
	return nil
}

func (p *Pipeline) limits() codec.Limits {
	if p.Limits == (codec.Limits{}) {
		return codec.DefaultLimits()
	}
	return p.Limits
}

// Run renders one job into outDir ("" = current folder), writing render,
// source and alpha files (.mp4 for video, .png for images). Outputs appear
// only when the whole job succeeded: they are written to a temporary
// folder inside outDir and renamed at the end. Input problems are returned
// as *job.InputError with an API code; other errors are internal. Run stops at
// the next frame when ctx is cancelled.
func (p *Pipeline) Run(ctx context.Context, req Request, outDir string) (Result, error) {
	start := time.Now()
	if err := Validate(&req); err != nil {
		return Result{}, err
	}
	if p.Device == nil {
		return Result{}, errors.New("worker: no compute device")
	}
	mode, _ := job.ParseAlphaMode(req.AlphaMode)
	if err := mode.Supported(); err != nil {
		return Result{}, classify("alpha_mode", err)
	}
	video := req.GenerationType == "video"
	lim := p.limits()

	md, err := media.Check(ctx, media.Inputs{GenerationType: req.GenerationType, AlphaMode: req.AlphaMode,
		AlphaKeyframeIndex: req.AlphaKeyframeIndex, Source: req.Source, Alpha: req.Alpha, Reference: req.Reference}, lim)
	if err != nil {
		return Result{}, err
	}
	srcInfo, mInfo := md.Source, md.Alpha

	maxRes := req.MaxResolution
	if maxRes == 0 {
		maxRes = job.DefaultMaxResolution
	}
	if req.RenderShortSide > 0 {
		maxRes = min(maxRes, max(req.RenderShortSide, 2))
	}
	outW, outH := render.OutputSize(srcInfo.DisplayWidth, srcInfo.DisplayHeight, maxRes, video)

	var ref *frame.HostFrame
	if req.Reference != nil {
		ref, err = decodeReference(ctx, *req.Reference, md.Reference, media.ReferenceLimits(lim), outW, outH)
		if err != nil {
			return Result{}, err
		}
	}

	if p.OnPlan != nil {
		heap := int64(heapPerPixel*float64(outW*outH)) + heapFixed
		if mode == job.AlphaAuto || mode == job.AlphaSelect && video {
			heap += lowBytes(md.Frames(), outW, outH)
		}
		p.OnPlan(Plan{Video: video, Width: outW, Height: outH, Frames: md.Frames(), HeapBytes: heap})
	}
	if outDir == "" {
		outDir = "."
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("worker: output folder: %w", err)
	}
	tmp, err := os.MkdirTemp(outDir, ".vfx-partial-")
	if err != nil {
		return Result{}, fmt.Errorf("worker: output folder: %w", err)
	}
	defer os.RemoveAll(tmp)

	ext := "png"
	if video {
		ext = "mp4"
	}
	names := [3]string{"render." + ext, "source." + ext, "alpha." + ext}
	res := Result{Width: outW, Height: outH}

	// Select (video) and auto: the first pass, at the flow size.
	ms, err := p.prepareMattes(ctx, &req, mode, video, outW, outH)
	if err != nil {
		return Result{}, err
	}
	defer ms.close()
	if ms != nil {
		res.Matte = ms.Method
	}

	rend, err := render.New(ctx, p.Device, render.Params{
		Prompt:    req.Prompt,
		Reference: ref,
		Seed:      req.Seed,
		Width:     outW,
		Height:    outH,
		Fill:      mode == job.AlphaFill,
	})
	if err != nil {
		return Result{}, fmt.Errorf("worker: render setup: %w", err)
	}
	defer rend.Close()

	// A video already in the normalised form is passed through untouched.
	copySource := video && passThrough(srcInfo, outW, outH, "yuv420p")
	res.SourceCopied = copySource
	// Likewise a custom matte video already at the output size: its luma is
	// the matte used, bit for bit, and no re-encode can lose precision.
	copyAlpha := mode == job.AlphaCustom && video && passThrough(mInfo, outW, outH, "yuv420p", "yuvj420p")
	res.AlphaCopied = copyAlpha

	fgName := ""
	if req.Foreground {
		fgName = foregroundName(video)
	}
	n, err := p.frames(ctx, &req, mode, ms, srcInfo, outW, outH, rend, filepath.Join(tmp, names[0]),
		filepath.Join(tmp, names[1]), filepath.Join(tmp, names[2]), filepath.Join(tmp, fgName), copySource, copyAlpha)
	if err != nil {
		return Result{}, err
	}
	res.Frames = n
	final := []*string{&res.Render, &res.Source, &res.Alpha}
	outs := names[:]
	if fgName != "" {
		final, outs = append(final, &res.Foreground), append(outs, fgName)
	}
	for i, name := range outs {
		dst := filepath.Join(outDir, name)
		if err := os.Rename(filepath.Join(tmp, name), dst); err != nil {
			return Result{}, fmt.Errorf("worker: output %s: %w", name, err)
		}
		*final[i] = dst
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// foregroundName is the file name of the foreground output.
func foregroundName(video bool) string {
	if video {
		return "foreground.mov"
	}
	return "foreground.png"
}

// passThrough reports whether a video can be stream-copied as a
// normalised output: H.264 in one of the pixel formats, unrotated, already
// at the output size.
func passThrough(i codec.Info, w, h int, pixFmts ...string) bool {
	if i.Kind != codec.KindVideo || i.Codec != "h264" || i.Rotation != 0 || i.DisplayWidth != w || i.DisplayHeight != h {
		return false
	}
	for _, p := range pixFmts {
		if i.PixelFormat == p {
			return true
		}
	}
	return false
}

// decodeReference decodes the reference image (already probed: info) as
// RGB24, scaled down (never up) to the smallest size that still covers
// outW x outH.
func decodeReference(ctx context.Context, in codec.Input, info codec.Info, lim codec.Limits, outW, outH int) (*frame.HostFrame, error) {
	w, h := info.DisplayWidth, info.DisplayHeight
	if s := math.Max(float64(outW)/float64(w), float64(outH)/float64(h)); s < 1 {
		w = max(1, int(math.Ceil(float64(w)*s)))
		h = max(1, int(math.Ceil(float64(h)*s)))
	}
	dec, err := codec.NewDecoder(ctx, in, lim, codec.DecodeOptions{Format: frame.RGB24, Width: w, Height: h})
	if err != nil {
		return nil, classify("reference", err)
	}
	defer dec.Close()
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return nil, classify("reference", fmt.Errorf("%w: %w", codec.ErrCorrupt, err))
	}
	return f, nil
}

// work is one decoded frame on its way through the pipeline.
type work struct {
	src, alpha *frame.HostFrame
}

// frames runs the streaming part: decode → compute → three encoders, each
// stage in its own goroutine joined by small bounded channels, with frame
// buffers recycled through pools so that memory does not grow with length.
func (p *Pipeline) frames(ctx context.Context, req *Request, mode job.AlphaMode, ms *matteSource, info codec.Info,
	w, h int, rend *render.Renderer, renderPath, sourcePath, alphaPath, fgPath string, copySource, copyAlpha bool) (int, error) {
	video := info.Kind == codec.KindVideo
	lim := p.limits()
	srcFmt := frame.RGB24
	container := "png"
	if video {
		srcFmt = frame.YUV420P
		container = "mp4"
	}
	preset, crf := req.Preset, req.CRF
	if preset == "" {
		preset = DefaultPreset
	}
	if crf < 0 {
		crf = DefaultCRF
	}

	srcDec, err := codec.NewDecoder(ctx, *req.Source, lim, codec.DecodeOptions{Format: srcFmt, Width: w, Height: h})
	if err != nil {
		return 0, classify("source", err)
	}
	defer srcDec.Close()
	var mDec *codec.Decoder
	// A custom matte, or the keyframe of select on an image (used as given,
	// resampled when its aspect ratio matches).
	if mode == job.AlphaCustom || mode == job.AlphaSelect && !video {
		mDec, err = codec.NewDecoder(ctx, *req.Alpha, lim, codec.DecodeOptions{Format: frame.Gray8, Width: w, Height: h})
		if err != nil {
			return 0, classify("alpha", err)
		}
		defer mDec.Close()
	}

	base := codec.EncoderOptions{
		Container: container, Width: w, Height: h,
		FrameRate: info.FrameRate, TimeBase: info.TimeBase,
		ColorSpace: frame.BT709, Preset: preset, CRF: crf,
	}
	ro := base
	ro.Input = srcFmt
	ro.X264Params = req.X264Params
	if ro.X264Params == "" {
		ro.X264Params = DefaultX264Params
	}
	if video && info.HasAudio {
		ro.AudioFrom = req.Source
	}
	renderEnc, err := codec.NewEncoder(ctx, renderPath, ro)
	if err != nil {
		return 0, classify("source", err)
	}
	defer renderEnc.Close()
	ao := base
	ao.Input, ao.Gray = frame.Gray8, true
	ao.Preset, ao.CRF = "veryfast", alphaCRF // a grey matte compresses well; keep its encode off the critical path
	ao.Threads = 1
	var alphaEnc *codec.Encoder
	if !copyAlpha {
		alphaEnc, err = codec.NewEncoder(ctx, alphaPath, ao)
		if err != nil {
			return 0, fmt.Errorf("worker: alpha encoder: %w", err)
		}
		defer alphaEnc.Close()
	}
	var sourceEnc *codec.Encoder
	if !copySource {
		so := base
		so.Input, so.ColorSpace, so.FullRange = srcFmt, info.ColorSpace, info.FullRange
		sourceEnc, err = codec.NewEncoder(ctx, sourcePath, so)
		if err != nil {
			return 0, fmt.Errorf("worker: source encoder: %w", err)
		}
		defer sourceEnc.Close()
	}

	var fgEnc *codec.ForegroundEncoder
	if req.Foreground {
		fgEnc, err = codec.NewForegroundEncoder(ctx, fgPath, codec.ForegroundOptions{Video: video, Width: w, Height: h,
			FrameRate: info.FrameRate, TimeBase: info.TimeBase})
		if err != nil {
			return 0, fmt.Errorf("worker: foreground encoder: %w", err)
		}
		defer fgEnc.Close()
	}

	dev := p.Device
	srcImg, err := dev.NewImage(w, h, 3)
	if err != nil {
		return 0, err
	}
	defer dev.Free(srcImg)
	var aImg kernels.Image
	if mode != job.AlphaFill {
		if aImg, err = dev.NewImage(w, h, 1); err != nil {
			return 0, err
		}
		defer dev.Free(aImg)
	}

	const depth = 3
	srcPool := newPool(depth + 2)
	alphaPool := newPool(depth + 2)
	outPool := newPool(depth)
	toCompute := make(chan work, depth)
	toRender := make(chan *frame.HostFrame, depth)
	toAlpha := make(chan *frame.HostFrame, depth)
	toSource := make(chan *frame.HostFrame, depth)
	// The foreground gets copies of the render and matte frames: they are
	// recycled by their own encoders.
	fgColPool, fgAlphaPool := newPool(depth), newPool(depth)
	toFG := make(chan [2]*frame.HostFrame, depth)
	total := info.Frames
	if !video {
		total = 1
	}

	g, gctx := errgroup.WithContext(ctx)
	if copySource {
		g.Go(func() error {
			if err := codec.CopyVideo(gctx, *req.Source, sourcePath); err != nil {
				return fmt.Errorf("worker: copy source: %w", err)
			}
			return nil
		})
	}
	if copyAlpha {
		g.Go(func() error {
			if err := codec.CopyVideo(gctx, *req.Alpha, alphaPath); err != nil {
				return fmt.Errorf("worker: copy alpha: %w", err)
			}
			return nil
		})
	}
	// Decode.
	g.Go(func() error {
		defer close(toCompute)
		for i := 0; ; i++ {
			f, err := srcPool.get(gctx)
			if err != nil {
				return err
			}
			if err := srcDec.Next(gctx, f); err != nil {
				if errors.Is(err, io.EOF) {
					if i == 0 {
						return inputErr("INVALID_FILE_FORMAT", "source: no decodable frame")
					}
					if mDec != nil {
						if err := mDec.Next(gctx, &frame.HostFrame{}); err == nil {
							return classify("alpha", fmt.Errorf("%w: the matte has more frames than the source's %d", job.ErrFrameCountMismatch, i))
						}
					}
					return nil
				}
				return classify("source", err)
			}
			a, err := alphaPool.get(gctx)
			if err != nil {
				return err
			}
			if mDec != nil {
				if err := mDec.Next(gctx, a); err != nil {
					if errors.Is(err, io.EOF) {
						return classify("alpha", fmt.Errorf("%w: the matte ends after %d frames", job.ErrFrameCountMismatch, i))
					}
					return classify("alpha", err)
				}
			} else {
				a.Format, a.Width, a.Height = frame.Gray8, w, h
				if err := a.Alloc(); err != nil {
					return err
				}
				if ms == nil { // fill; else the compute stage makes it
					for k := range a.Planes[0] {
						a.Planes[0][k] = 255
					}
				}
			}
			a.PTS = f.PTS
			if err := send(gctx, toCompute, work{src: f, alpha: a}); err != nil {
				return err
			}
		}
	})
	// Compute.
	g.Go(func() error {
		defer close(toRender)
		defer close(toAlpha)
		defer close(toSource)
		defer close(toFG)
		for i := 0; ; i++ {
			wk, ok := <-toCompute
			if !ok {
				break
			}
			if err := dev.Upload(srcImg, wk.src); err != nil {
				return fmt.Errorf("worker: upload source: %w", err)
			}
			var alpha kernels.Image
			if ms != nil {
				if err := ms.alpha(i, srcImg, aImg); err != nil {
					return fmt.Errorf("worker: matte of frame %d: %w", i, err)
				}
				// The render uses exactly the 8-bit matte written to the
				// alpha file (and so one clamped to [0,1]).
				if err := dev.Download(wk.alpha, aImg); err != nil {
					return fmt.Errorf("worker: download matte: %w", err)
				}
				if err := dev.Upload(aImg, wk.alpha); err != nil {
					return fmt.Errorf("worker: upload matte: %w", err)
				}
				alpha = aImg
			} else if aImg != nil {
				if err := dev.Upload(aImg, wk.alpha); err != nil {
					return fmt.Errorf("worker: upload matte: %w", err)
				}
				alpha = aImg
			}
			out, err := outPool.get(gctx)
			if err != nil {
				return err
			}
			out.Format, out.Width, out.Height = srcFmt, w, h
			out.ColorSpace, out.FullRange = frame.BT709, false
			if err := out.Alloc(); err != nil {
				return err
			}
			if err := rend.FrameHost(gctx, out, srcImg, alpha); err != nil {
				return fmt.Errorf("worker: render: %w", err)
			}
			out.PTS = wk.src.PTS
			if fgEnc != nil {
				pair, err := copyPair(gctx, fgColPool, fgAlphaPool, out, wk.alpha)
				if err != nil {
					return err
				}
				if err := send(gctx, toFG, pair); err != nil {
					return err
				}
			}
			if err := send(gctx, toRender, out); err != nil {
				return err
			}
			if alphaEnc != nil {
				if err := send(gctx, toAlpha, wk.alpha); err != nil {
					return err
				}
			} else {
				alphaPool.put(wk.alpha)
			}
			if sourceEnc != nil {
				if err := send(gctx, toSource, wk.src); err != nil {
					return err
				}
			} else {
				srcPool.put(wk.src)
			}
		}
		return nil
	})
	// Encode.
	var done int
	g.Go(func() error {
		return encodeAll(gctx, toRender, renderEnc, outPool, "render", func() {
			done++
			if p.Progress != nil {
				p.Progress(done, total)
			}
		})
	})
	g.Go(func() error { return encodeAll(gctx, toAlpha, alphaEnc, alphaPool, "alpha", nil) })
	g.Go(func() error { return encodeAll(gctx, toSource, sourceEnc, srcPool, "source", nil) })
	g.Go(func() error {
		for pair := range toFG {
			if err := fgEnc.Write(gctx, pair[0], pair[1]); err != nil {
				return fmt.Errorf("worker: encode foreground: %w", err)
			}
			fgColPool.put(pair[0])
			fgAlphaPool.put(pair[1])
		}
		if fgEnc == nil {
			return nil
		}
		if err := fgEnc.Close(); err != nil {
			return fmt.Errorf("worker: finish foreground: %w", err)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return done, nil
}

// copyPair copies a render frame and its matte into frames of the two
// pools (for the foreground encoder).
func copyPair(ctx context.Context, colPool, alphaPool pool, col, alpha *frame.HostFrame) ([2]*frame.HostFrame, error) {
	var pair [2]*frame.HostFrame
	for i, src := range []*frame.HostFrame{col, alpha} {
		p := colPool
		if i == 1 {
			p = alphaPool
		}
		dst, err := p.get(ctx)
		if err != nil {
			return pair, err
		}
		dst.Format, dst.Width, dst.Height = src.Format, src.Width, src.Height
		dst.ColorSpace, dst.FullRange, dst.PTS = src.ColorSpace, src.FullRange, src.PTS
		if err := dst.Alloc(); err != nil {
			return pair, err
		}
		for k := range src.Planes {
			copy(dst.Planes[k], src.Planes[k])
		}
		pair[i] = dst
	}
	return pair, nil
}

// pool recycles host frames; its capacity bounds the frames in flight.
type pool chan *frame.HostFrame

// encodeAll writes every frame of in to enc, returning each to pool and
// calling each (when set) after every write, then closes enc. A nil enc is
// allowed when nothing is sent on in.
func encodeAll(ctx context.Context, in <-chan *frame.HostFrame, enc *codec.Encoder, pool pool, what string, each func()) error {
	for f := range in {
		if err := enc.Write(ctx, f); err != nil {
			return fmt.Errorf("worker: encode %s: %w", what, err)
		}
		pool.put(f)
		if each != nil {
			each()
		}
	}
	if enc == nil {
		return nil
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("worker: finish %s: %w", what, err)
	}
	return nil
}

func newPool(n int) pool {
	p := make(pool, n)
	for i := 0; i < n; i++ {
		p <- &frame.HostFrame{}
	}
	return p
}

func (p pool) get(ctx context.Context) (*frame.HostFrame, error) {
	select {
	case f := <-p:
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put never blocks: every frame came from this pool, so there is room.
func (p pool) put(f *frame.HostFrame) {
	select {
	case p <- f:
	default:
	}
}

func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
