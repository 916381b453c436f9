// Package worker runs one job's life: inputs → codec → matte → render →
// codec → outputs. Pipeline.Run is the whole local render (`vfx render`);
// the queue daemon wraps the same Pipeline.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/media"
	"github.com/vfxrender/vfx/render"
)

// RenderRequest limits and defaults (docs/api.md, Limits).
const (
	DefaultPreset = "medium"
	DefaultCRF    = 18
	// DefaultX264Params shortens x264's rate-control lookahead from the
	// medium preset's 40 frames to 20: it halves the encoder's frame queue
	// (about 200 MiB at 1080p) for a bitrate change within about 1% at the
	// same CRF. Override with RenderRequest.X264Params.
	DefaultX264Params = "rc-lookahead=20"
	// alphaCRF keeps the matte output near-lossless (mattes are flat and
	// compress well even so).
	alphaCRF = 6
)

// RenderRequest is one job: the generation request as the API stores it
// (job.JobRequest, not copied field by field: generation type, alpha mode
// and keyframe, prompt, seed, max resolution, foreground, output format),
// its inputs opened, and the encoder settings of the worker or command
// line. The request's URIs name the inputs; a caller that gives the inputs
// directly (`vfx render`, tests) may leave them empty.
type RenderRequest struct {
	job.JobRequest
	Source    *codec.Input
	Alpha     *codec.Input
	Reference *codec.Input
	Preset    string // x264 preset; "" means medium
	CRF       int    // x264 CRF 0..51; -1 means 18
	// X264Params are extra libx264 options for the render ("key=value:...",
	// "" = none). Operator/CLI use only: libx264 accepts options that write
	// files, so never forward an API caller's text here.
	X264Params string
	// RenderShortSide, when > 0, caps the output's shorter side below
	// MaxResolution (any size of at least 2): the fast mode of product vfx
	// renders smaller and upscales. Set by the daemon, never by a caller's
	// field.
	RenderShortSide int
	// (JobRequest.Foreground also writes the relit subject with its matte,
	// premultiplied: foreground.png (RGBA) for an image, foreground.mov
	// (ProRes 4444 with alpha) for a video; JobRequest.OutputFormat
	// OutputEXR also the linear half-float EXR pass sequences (EXRPasses)
	// in <out>/<pass>/<pass>.<frame>.exr.)

	// StartFrame is the number of the first EXR frame (<= 0 means
	// DefaultStartFrame, 1001).
	StartFrame int
	// EXRColorSpace is EXRRec709 ("" too) or EXRACEScg: the primaries
	// of the EXR colour passes, written as their chromaticities.
	EXRColorSpace string
}

// passes reports whether the job renders render.Passes: for the EXR
// sequences and for the clean foreground.
func (r *RenderRequest) passes() bool { return r.OutputFormat == OutputEXR || r.Foreground }

// Result describes the files a job wrote.
type Result struct {
	Render, Source, Alpha string // paths of the output files
	Foreground            string // path of the foreground, when asked for
	// EXR is the folder holding the pass folders of an exr job ("" for
	// other jobs), and EXRFrames the frame numbers written.
	EXR                         string
	EXRFirstFrame, EXRLastFrame int
	Frames                      int
	Width, Height               int
	SourceCopied                bool // the source was passed through unchanged (stream copy)
	AlphaCopied                 bool // the custom matte video was passed through unchanged
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
	// MatteProgress, when set, is called during the matte pass of select
	// (video) and auto jobs, which comes before the first render frame:
	// done steps of total, twice the source's frames (each frame decoded
	// at the flow size, with the network on the frames its schedule
	// picks; then each frame's matte). It ends with done == total.
	MatteProgress func(done, total int)
	// OnPlan, when set, is called once the inputs are probed and before
	// any frame is decoded, with the job's shape and memory estimate (a
	// process that runs one job at a time can set its GC limit from it).
	OnPlan func(Plan)
	// OnRenderSetup, when set, is called once, after the matte pass and
	// before the codecs open and the renderer is set up, with the same
	// plan. From there until the first few render frames are encoded the
	// heap is above the plan's steady estimate: the renderer's setup
	// measurements, the first frame's one-off images and the device pool
	// that keeps them for a collection or two (the heap each collection
	// marked reached 165-189 MB against a plan of 106 MB in `vfx bench
	// ffmpeg`'s 1080p job). A process that sets its GC limit from the plan
	// raises it to Plan.SetupMemoryLimit here and sets Plan.MemoryLimit
	// again after the first frame (Progress(1, n)).
	OnRenderSetup func(Plan)
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
	// full-resolution float images (background and its blur; source and
	// matte only where the matte is made on the device), the background's
	// 8-bit codes, the pooled host frames, and the fixed tables.
	HeapBytes int64
}

// MemoryLimit is the Go memory limit (debug.SetMemoryLimit) for a process
// that runs this one job: HeapBytes plus a twentieth and 8 MiB for the
// garbage the frames leave between collections (about 4 MB a 1080p frame:
// the demuxers' read buffers, low-resolution read-backs, the camera fit's
// pyramids). The heap's peak between collections is part of the job's
// peak RSS: the wider slack of earlier versions (a tenth and 16 MiB) held
// about 13 MB more at 1080p for a few more collections' CPU. A job whose
// live heap passed it would collect without pause (TestRunHeapWithinPlan).
func (p Plan) MemoryLimit() int64 { return p.HeapBytes + p.HeapBytes/20 + 8<<20 }

// SetupMemoryLimit is the Go memory limit while the renderer is set up
// and the first frame is made (Pipeline.OnRenderSetup): twice
// MemoryLimit. Under MemoryLimit itself that phase's heap (up to 1.8x
// HeapBytes marked by a collection) left the GC almost nothing to free:
// some 45 back-to-back collections in the 0.4 s before the first frame, and
// about 150 MiB returned to the system (eager scavenging) that the job
// then faulted back in (`GODEBUG=gctrace=1,scavtrace=1`). With it, 12
// collections in the whole 240-frame job.
func (p Plan) SetupMemoryLimit() int64 { return 2 * p.MemoryLimit() }

// heapPerPixel, heapDevicePerPixel and heapFixed are the terms of
// Plan.HeapBytes: per output pixel 24 bytes of float32 background images
// and 1.5 of its YUV codes (0.75 more: its odd-parity chroma for a plate
// moved by an odd whole offset, kernels.PlateCodes), plus the pooled
// 8-bit frames (pooledPerPixel: 11 to 17.5); 16 more of float source and matte for select (video) and
// auto, whose matte is made on the device; plus lookup tables and
// low-resolution images.
const (
	// Pass images (render.Passes): all of them (EXR) or the clean
	// foreground's (composite, foreground, alpha, scratch), plus the
	// foreground's unpremultiplied colour; float32 per channel.
	heapPassesPerPixel   = 4*31 + 12
	heapFGPassesPerPixel = 4*11 + 12
	heapEXRPerPixel      = 4 * 28
	heapPerPixel         = 26.25
	heapDevicePerPixel   = 16
	heapFixed            = 24 << 20
	// heapPlacePerPixel is a placement's images (render.placeStage: the
	// uploaded and the placed source and matte, float32) and the
	// foreground's placed 8-bit matte.
	heapPlacePerPixel = 4*8 + 1
)

// Job is a render request that validation produced: Validate (a request
// described by its inputs, as `vfx render` and tests give it) or Prepare
// (a request the daemon built from a job.Valid). Pipeline.Run takes only a
// Job, so an unvalidated request cannot reach it.
type Job struct {
	req RenderRequest
	// checked is media.Check's result for these inputs when the caller
	// already ran it (Checked).
	checked *checkedMedia
}

type checkedMedia struct {
	md  media.Media
	lim codec.Limits
}

// Checked records md, media.Check's result for j's inputs under lim, so
// that Run does not open and probe the same files a second time (`vfx
// render` checks every input before it loads the model, to fail fast).
// Run uses it only when its own limits are lim; else it checks again.
func (j *Job) Checked(md media.Media, lim codec.Limits) { j.checked = &checkedMedia{md: md, lim: lim} }

// Request returns the request (a copy).
func (j Job) Request() RenderRequest { return j.req }

// Preview renders at most shortSide on the output's shorter side (> 0),
// with the x264 preset given ("" keeps the request's): `vfx render
// --preview`, once the source is probed. Neither setting is one that
// validation checks.
func (j *Job) Preview(shortSide int, preset string) {
	j.req.RenderShortSide = shortSide
	if preset != "" {
		j.req.Preset = preset
	}
}

// Validate checks the request's fields (not its media) and returns the
// Job Pipeline.Run takes, or a *job.InputError naming the first problem:
// job.Validate's rules, plus the encoder settings. The daemon, which
// validates the job's own request before it fetches the inputs, uses
// Prepare instead.
func Validate(req RenderRequest) (Job, error) {
	// An input given directly counts as given (job.Validate asks only
	// that): its URI is its path, or "-".
	jr := req.JobRequest
	for _, in := range []struct {
		uri *string
		in  *codec.Input
	}{{&jr.SourceURI, req.Source}, {&jr.AlphaURI, req.Alpha}, {&jr.ReferenceImageURI, req.Reference}} {
		if *in.uri == "" && in.in != nil {
			*in.uri = cmp.Or(in.in.Path, "-")
		}
	}
	if _, err := job.Validate(jr); err != nil {
		return Job{}, err
	}
	if err := checkSettings(&req); err != nil {
		return Job{}, err
	}
	return Job{req: req}, nil
}

// Prepare returns the Job of req, which the daemon built from the
// validated request v (its inputs fetched, a frame range cut): the
// contract's field rules are not run again, only the encoder settings
// that job.Validate does not know. A req whose contract fields differ
// from v's is a bug of the caller, refused as an internal error.
func Prepare(v job.Valid, req RenderRequest) (Job, error) {
	// A frame range moves the keyframe (TrimFrames); nothing else of the
	// request may change after validation.
	want, got := v.Request(), req.JobRequest
	want.AlphaKeyframeIndex, got.AlphaKeyframeIndex = 0, 0
	if got != want || (req.Source == nil) != (want.SourceURI == "") {
		return Job{}, errors.New("worker: the render request is not the validated job request")
	}
	if err := checkSettings(&req); err != nil {
		return Job{}, err
	}
	return Job{req: req}, nil
}

// checkSettings checks what job.Validate does not know: the encoder
// settings and the EXR colour space.
func checkSettings(req *RenderRequest) error {
	if req.CRF < -1 || req.CRF > 51 {
		return inputErr(job.CodeInvalidInput, "crf %d: want 0..51", req.CRF)
	}
	switch req.EXRColorSpace {
	case "", EXRRec709, EXRACEScg:
	default:
		return inputErr(job.CodeInvalidInput, "exr colour space %q: want rec709 or acescg", req.EXRColorSpace)
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
// the next frame when ctx is cancelled. j comes from Validate or Prepare:
// the field rules were checked there, once, and are not checked again.
func (p *Pipeline) Run(ctx context.Context, j Job, outDir string) (Result, error) {
	start := time.Now()
	req := j.req
	if p.Device == nil {
		return Result{}, errors.New("worker: no compute device")
	}
	mode, _ := job.ParseAlphaMode(req.AlphaMode)
	if err := mode.Supported(); err != nil {
		return Result{}, classify("alpha_mode", err)
	}
	video := req.GenerationType == "video"
	lim := p.limits()

	var (
		md  media.Media
		err error
	)
	if c := j.checked; c != nil && c.lim == lim {
		md = c.md
	} else if md, err = media.Check(ctx, media.Inputs{JobRequest: req.JobRequest, Source: req.Source, Alpha: req.Alpha, Reference: req.Reference}, lim); err != nil {
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

	// The reference decodes beside what follows until the renderer's
	// setup needs it (before the matte pass of select and auto, so that
	// a bad reference does not wait for it).
	refC := make(chan struct{})
	var (
		ref    *frame.HostFrame
		refErr error
	)
	refIn := req.Reference
	go func() {
		defer close(refC)
		if refIn != nil {
			ref, refErr = decodeReference(ctx, *refIn, md.Reference, media.ReferenceLimits(lim), outW, outH)
		}
	}()
	defer func() { <-refC }()
	reference := func() (*frame.HostFrame, error) {
		<-refC
		return ref, refErr
	}

	// A video already in the normalised form is passed through untouched.
	copySource := video && passThrough(srcInfo, outW, outH, "yuv420p")
	// Likewise a custom matte video already at the output size: its luma is
	// the matte used, bit for bit, and no re-encode can lose precision.
	copyAlpha := mode == job.AlphaCustom && video && passThrough(mInfo, outW, outH, "yuv420p", "yuvj420p")

	var plan Plan
	if p.OnPlan != nil || p.OnRenderSetup != nil {
		depth := stageDepth(copySource, copyAlpha, req.Foreground || req.OutputFormat == OutputEXR)
		heap := int64((heapPerPixel+pooledPerPixel(depth, !copySource, !copyAlpha))*float64(outW*outH)) + heapFixed
		if mode == job.AlphaAuto || mode == job.AlphaSelect && video {
			heap += matte.PrepareBytes(md.Frames(), outW, outH) + int64(heapDevicePerPixel*outW*outH)
		}
		if mode == job.AlphaSelect && video {
			heap += matte.MemoryBytes(md.Frames(), p.NetSchedule)
		}
		switch {
		case req.OutputFormat == OutputEXR:
			// 31 channels of pass images, the source and matte images,
			// and up to three frames of passes read back for the EXR
			// writer (28 channels each).
			heap += int64((heapPassesPerPixel + heapDevicePerPixel + 3*heapEXRPerPixel) * outW * outH)
		case req.Foreground:
			heap += int64((heapFGPassesPerPixel + heapDevicePerPixel) * outW * outH)
		}
		if req.Placement != nil {
			heap += int64(heapPlacePerPixel * outW * outH)
		}
		plan = Plan{Video: video, Width: outW, Height: outH, Frames: md.Frames(), HeapBytes: heap}
		if p.OnPlan != nil {
			p.OnPlan(plan)
		}
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
	res := Result{Width: outW, Height: outH, SourceCopied: copySource, AlphaCopied: copyAlpha}

	if mode == job.AlphaAuto || mode == job.AlphaSelect && video {
		if _, err := reference(); err != nil {
			return Result{}, err
		}
	}
	// Select (video) and auto: the first pass, at the flow size.
	ms, err := p.prepareMattes(ctx, &req, mode, video, outW, outH, md.Frames())
	if err != nil {
		return Result{}, err
	}
	defer ms.Close()
	if ms != nil {
		res.Matte = ms.Method
	}

	if p.OnRenderSetup != nil {
		p.OnRenderSetup(plan)
	}

	fgName := ""
	if req.Foreground {
		fgName = foregroundName(video)
	}
	exrDir := ""
	if req.OutputFormat == OutputEXR {
		exrDir = tmp
		if err := makeEXRDirs(tmp); err != nil {
			return Result{}, err
		}
	}
	start1 := req.StartFrame
	if start1 <= 0 {
		start1 = DefaultStartFrame
	}
	s := &stream{req: &req, mode: mode, ms: ms, info: srcInfo, w: outW, h: outH,
		renderPath: filepath.Join(tmp, names[0]), sourcePath: filepath.Join(tmp, names[1]),
		alphaPath: filepath.Join(tmp, names[2]), fgPath: filepath.Join(tmp, fgName),
		exrDir: exrDir, startFrame: start1,
		copySource: copySource, copyAlpha: copyAlpha}
	defer func() { s.rend.Close() }() // nil-safe
	// The renderer's setup (the plate's measurements) runs while the
	// codecs open and the first frames decode (see frames).
	n, err := p.frames(ctx, s, func() error {
		ref, err := reference()
		if err != nil {
			return err
		}
		rend, err := render.New(ctx, p.Device, render.Params{
			Prompt:    req.Prompt,
			Reference: ref,
			Seed:      req.Seed,
			Width:     outW,
			Height:    outH,
			Fill:      mode == job.AlphaFill,
			Placement: placement(req.Placement),
		})
		if err != nil {
			return fmt.Errorf("worker: render setup: %w", err)
		}
		s.rend = rend
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res.Frames = n
	final := []*string{&res.Render, &res.Source, &res.Alpha}
	outs := names[:]
	if fgName != "" {
		final, outs = append(final, &res.Foreground), append(outs, fgName)
	}
	if exrDir != "" {
		for _, pass := range EXRPasses {
			var dummy string
			final, outs = append(final, &dummy), append(outs, pass)
			_ = os.RemoveAll(filepath.Join(outDir, pass)) // a previous job's frames
		}
		res.EXR, res.EXRFirstFrame, res.EXRLastFrame = outDir, start1, start1+n-1
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

// placement is the render's placement of a request's (nil: none).
func placement(p *job.Placement) kernels.Placement {
	if p == nil {
		return kernels.Placement{}
	}
	return kernels.Placement{Scale: p.Scale, X: p.X, Y: p.Y}
}
