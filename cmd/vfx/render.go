package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/localfile"
	"github.com/vfxrender/vfx/media"
	"github.com/vfxrender/vfx/render"
	"github.com/vfxrender/vfx/worker"
)

// parseFrames reads --frames A-B (0-based, inclusive): job.ParseFrames,
// the rule of the API's frames field.
func parseFrames(s string) (int, int, error) {
	first, last, err := job.ParseFrames(s)
	if err != nil {
		return 0, 0, fmt.Errorf("--frames %q: want A-B, 0 <= A <= B (0-based source frames, e.g. 10-19)", s)
	}
	return first, last, nil
}

// parsePlacement reads --placement SCALE[,X,Y] (X and Y default to 0):
// the API's placement field {scale, x, y}. "" is no placement. Its limits
// are job.CheckPlacement's, checked with the rest of the request.
func parsePlacement(s string) (*job.Placement, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	bad := usageError{fmt.Sprintf("--placement %q: want SCALE or SCALE,X,Y (numbers, e.g. 2 or 1.5,0.1,-0.2)", s)}
	if len(parts) != 1 && len(parts) != 3 {
		return nil, bad
	}
	var v [3]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, bad
		}
		v[i] = f
	}
	return &job.Placement{Scale: v[0], X: v[1], Y: v[2]}, nil
}

func cmdRender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	typ := fs.String("type", "", "generation type: image or video (required)")
	source := fs.String("source", "", "source image (PNG, JPEG, WebP) or video (MP4/MOV, H.264/HEVC) (required)")
	alphaMode := fs.String("alpha-mode", "fill", "alpha mode: fill, custom, select (propagate a keyframe matte) or auto (no matte)")
	alpha := fs.String("alpha", "", "alpha matte (white or opaque = keep): custom: an image for image jobs, a video of the same length for video jobs; select: a PNG or JPEG keyframe matte (grey, RGB or RGBA, 8 or 16 bits: the alpha where it is not all opaque, else the luminance)")
	keyframe := fs.Int("alpha-keyframe-index", 0, "reference frame of a select matte (0-based)")
	reference := fs.String("reference", "", "reference image whose light and colour the render takes (PNG, JPEG, WebP)")
	prompt := fs.String("prompt", "", "text description of the light and scene (at most 2000 characters)")
	seed := fs.Int64("seed", -1, "seed 0..4294967295 (default: random)")
	maxRes := fs.Int("max-resolution", 1080, "shorter side of the output: 720 or 1080 (never upscaled)")
	preset := fs.String("preset", worker.DefaultPreset, "x264 preset of the render and source videos (ultrafast..veryslow)")
	crf := fs.Int("crf", worker.DefaultCRF, "x264 constant rate factor 1..51 (lower is better; 18 is visually lossless; --x264-params qp=0 is lossless)")
	x264Params := fs.String("x264-params", worker.DefaultX264Params, "libx264 options for the render video (key=value:...); rc-lookahead=40 restores the medium preset's lookahead")
	out := fs.String("out", "out", "output folder for render, source and alpha")
	workers := fs.Int("workers", 0, "CPU compute threads (0 = all cores)")
	backend := fs.String("backend", "auto", backendHelp)
	gpu := fs.Int("gpu", -1, gpuHelp)
	fit := fs.Bool("fit", false, "downscale a source (and a custom matte) over 2.77 MP to the largest size within the limit, keeping the aspect ratio")
	foreground := fs.Bool("foreground", false, "also write the clean relit subject (no new background, wrap or shadow) with its alpha, premultiplied: foreground.png (RGBA) for an image, foreground.mov (ProRes 4444) for a video")
	outputFormat := fs.String("output-format", worker.OutputMP4, "mp4, or exr: also linear half-float EXR pass sequences <out>/<pass>/<pass>.####.exr (composite, foreground, alpha, gain, shadow, wrap, backdrop, normals, grain)")
	startFrame := fs.Int("start-frame", worker.DefaultStartFrame, "number of the first EXR frame (at least 1)")
	frames := fs.String("frames", "", "render only source frames A-B (0-based, inclusive, e.g. 10-19) of a video")
	placement := fs.String("placement", "", "place the subject (source and matte) over the plate: SCALE[,X,Y]: scaled 0.25..4 about the frame's centre, then moved X (right) and Y (down) in fractions of the frame's width and height, -1..1 (e.g. 2,0,0.25); not with --alpha-mode fill")
	preview := fs.Bool("preview", false, "quick look: half the output size and x264 preset veryfast (unless --preset is given)")
	fps := fs.String("fps", "24", "frame rate of an image-sequence source: 24, 25, 23.976, 30000/1001, ...")
	exrSpace := fs.String("exr-colorspace", worker.EXRRec709, "primaries of the EXR colour passes: rec709 (linear Rec.709) or acescg")
	quiet := fs.Bool("quiet", false, "no progress bar")
	progressLog := fs.String("progress-log", "", "write the job's progress timeline to this file: one line per step, \"<seconds> <matte|render> <done> <total>\", and \"<seconds> done 1 1\" at the end")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the job to this file")
	menv := &env{get: os.Getenv}
	mo := modelFlags(fs, menv)
	mo.everyFlag(fs, menv)
	memProfile := fs.String("memprofile", "", "write a Go heap profile (allocations) at the end of the job to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkBackend(*backend, *gpu); err != nil {
		return err
	}
	if len(menv.errs) > 0 {
		return usageError{errors.Join(menv.errs...).Error()}
	}
	if err := mo.check(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := requireFlags(fs); err != nil {
		return err
	}
	if *seed < -1 || *seed > 4294967295 {
		return fmt.Errorf("INVALID_SEED: seed %d: want 0..4294967295", *seed)
	}
	s := uint32(*seed)
	if *seed == -1 {
		s = randomSeed()
	}
	if err := checkPreset(*preset); err != nil {
		return err
	}
	place, err := parsePlacement(*placement)
	if err != nil {
		return err
	}
	req := worker.RenderRequest{
		JobRequest: job.JobRequest{GenerationType: *typ, AlphaMode: *alphaMode, AlphaKeyframeIndex: *keyframe,
			Prompt: *prompt, Seed: s, MaxResolution: *maxRes, Foreground: *foreground, OutputFormat: *outputFormat,
			Placement: place},
		Preset:        *preset,
		CRF:           *crf,
		X264Params:    *x264Params,
		StartFrame:    *startFrame,
		EXRColorSpace: *exrSpace,
	}
	if *crf < 1 || *crf > 51 {
		// x264's own --crf 0 is lossless; the encoder took 0 as its
		// default, so --crf 0 gave CRF 18 without a word.
		return usageError{fmt.Sprintf("--crf %d: want 1..51 (for a lossless render: --x264-params qp=0)", *crf)}
	}
	if *startFrame < 1 {
		return usageError{fmt.Sprintf("--start-frame %d: want at least 1", *startFrame)}
	}
	if *outputFormat != worker.OutputMP4 && *outputFormat != worker.OutputEXR {
		return usageError{fmt.Sprintf("--output-format %q: want mp4 or exr", *outputFormat)}
	}
	if *exrSpace != worker.EXRRec709 && *exrSpace != worker.EXRACEScg {
		return usageError{fmt.Sprintf("--exr-colorspace %q: want rec709 or acescg", *exrSpace)}
	}
	codec.Quiet()
	_, srcSeq, _ := localfile.SequenceFiles(*source)
	_, alphaSeq, _ := localfile.SequenceFiles(*alpha)
	if srcSeq || alphaSeq && *alpha != "" && *alphaMode == "custom" {
		rate, err := localfile.ParseFPS(*fps)
		if err != nil {
			return usageError{err.Error()}
		}
		tmp, err := os.MkdirTemp("", "vfx-sequence-")
		if err != nil {
			return fmt.Errorf("sequence: %w", err)
		}
		defer os.RemoveAll(tmp)
		files := map[string]string{"source": *source}
		if *alpha != "" && *alphaMode == "custom" {
			files["alpha"] = *alpha
		}
		if files, err = localfile.Sequences(ctx, files, rate, tmp, stdout); err != nil {
			return err
		}
		*source = files["source"]
		if a, ok := files["alpha"]; ok {
			*alpha = a
		}
	}
	if *typ == "video" && localfile.Check("source", *source) == nil {
		// A ZIP or TAR of frames: checked from its index, then extracted
		// and read as an image sequence.
		if format, err := media.SniffArchive(codec.FileInput(*source)); err == nil && format != "" {
			rate, err := localfile.ParseFPS(*fps)
			if err != nil {
				return usageError{err.Error()}
			}
			tmp, err := os.MkdirTemp("", "vfx-archive-")
			if err != nil {
				return fmt.Errorf("archive: %w", err)
			}
			defer os.RemoveAll(tmp)
			src, _, err := worker.ArchiveSource(ctx, codec.FileInput(*source), tmp, codec.DefaultLimits(), rate)
			if err != nil {
				return err
			}
			*source = src.Path
		}
	}
	if *frames != "" {
		first, last, err := parseFrames(*frames)
		if err != nil {
			return usageError{err.Error()}
		}
		if *typ != "video" {
			return usageError{"--frames needs --type video"}
		}
		if *alphaMode == "select" && (*keyframe < first || *keyframe > last) {
			return usageError{fmt.Sprintf("--alpha-keyframe-index %d is outside --frames %s", *keyframe, *frames)}
		}
		tmp, err := os.MkdirTemp("", "vfx-frames-")
		if err != nil {
			return fmt.Errorf("--frames: %w", err)
		}
		defer os.RemoveAll(tmp)
		if err := localfile.Check("source", *source); err != nil {
			return err
		}
		r := worker.RenderRequest{JobRequest: job.JobRequest{GenerationType: *typ, AlphaMode: *alphaMode, AlphaKeyframeIndex: *keyframe}}
		if r.Source, err = fileInput("source", *source); err != nil {
			return err
		}
		if *alpha != "" && *alphaMode == "custom" {
			if r.Alpha, err = fileInput("alpha", *alpha); err != nil {
				return err
			}
		}
		if err := worker.TrimFrames(ctx, &r, first, last, tmp, codec.DefaultLimits()); err != nil {
			return fmt.Errorf("--frames %s: %w", *frames, err)
		}
		*source = r.Source.Path
		if r.Alpha != nil {
			*alpha = r.Alpha.Path
		}
		req.AlphaKeyframeIndex = r.AlphaKeyframeIndex
	}
	if *fit {
		tmp, err := os.MkdirTemp("", "vfx-fit-")
		if err != nil {
			return fmt.Errorf("--fit: %w", err)
		}
		defer os.RemoveAll(tmp)
		files := map[string]string{"source": *source}
		if *alpha != "" {
			files["alpha"] = *alpha
		}
		if files, err = localfile.Fit(ctx, files, tmp, stdout); err != nil {
			return err
		}
		*source, *alpha = files["source"], files["alpha"]
	}
	if req.Source, err = fileInput("source", *source); err != nil {
		return err
	}
	if *alpha != "" {
		if req.Alpha, err = fileInput("alpha", *alpha); err != nil {
			return err
		}
	}
	if *reference != "" {
		if req.Reference, err = fileInput("reference", *reference); err != nil {
			return err
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(*memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	// Every input is checked before the model loads: a bad input fails
	// in well under a second in every mode.
	vj, err := worker.Validate(req)
	if err != nil {
		return err
	}
	md, err := media.Check(ctx, media.Inputs{JobRequest: req.JobRequest, Source: req.Source, Alpha: req.Alpha, Reference: req.Reference}, codec.DefaultLimits())
	if err != nil {
		return err
	}
	vj.Checked(md, codec.DefaultLimits()) // Run does not probe the inputs again
	if *preview {
		maxR := req.MaxResolution
		if maxR == 0 {
			maxR = 1080
		}
		ow, oh := render.OutputSize(md.Source.DisplayWidth, md.Source.DisplayHeight, maxR, req.GenerationType == "video")
		preset := ""
		if !setFlags(fs)["preset"] {
			preset = "veryfast"
		}
		vj.Preview(max(2, min(ow, oh)/2), preset)
	}
	dev, err := openBackend(*backend, *gpu, *workers)
	if err != nil {
		return err
	}
	defer dev.Close()
	p := &worker.Pipeline{Device: dev}
	if *alphaMode == "auto" || (*alphaMode == "select" && *typ == "video") {
		net, _, closeNet, err := mo.load(ctx)
		if err != nil {
			return fmt.Errorf("MODEL_UNAVAILABLE: alpha mode %s needs the segmentation network: %w", *alphaMode, err)
		}
		defer closeNet()
		p.Net, p.NetSchedule = net, mo.schedule()
	}
	var bar *progressBar
	if !*quiet && isTerminal(stderr) {
		bar = &progressBar{w: stderr, start: time.Now()}
		p.Progress = bar.update
		p.MatteProgress = bar.matte
	}
	var logDone func()
	if *progressLog != "" {
		f, err := os.Create(*progressLog)
		if err != nil {
			return fmt.Errorf("--progress-log: %w", err)
		}
		defer f.Close()
		start := time.Now()
		logStep := func(phase string, next func(int, int)) func(int, int) {
			return func(done, total int) {
				fmt.Fprintf(f, "%.3f %s %d %d\n", time.Since(start).Seconds(), phase, done, total)
				if next != nil {
					next(done, total)
				}
			}
		}
		p.Progress, p.MatteProgress = logStep("render", p.Progress), logStep("matte", p.MatteProgress)
		logDone = func() { logStep("done", nil)(1, 1) }
	}
	// One job per process: C frame buffers that FFmpeg and x264 free go
	// back to the system (codec.MapLargeAllocations; where the C library
	// is not glibc the job runs as before, with its default).
	_ = codec.MapLargeAllocations()
	if os.Getenv("GOMEMLIMIT") == "" {
		// One job per process: keep the Go heap near the job's live set
		// instead of letting it grow to twice that before collecting;
		// twice that while the renderer is set up and the first frame
		// made, whose live heap is above the steady estimate
		// (worker.Plan.SetupMemoryLimit).
		var steady int64
		p.OnPlan = func(pl worker.Plan) { steady = pl.MemoryLimit(); debug.SetMemoryLimit(steady) }
		p.OnRenderSetup = func(pl worker.Plan) { debug.SetMemoryLimit(pl.SetupMemoryLimit()) }
		next := p.Progress
		p.Progress = func(done, total int) {
			if done == 1 {
				debug.SetMemoryLimit(steady)
			}
			if next != nil {
				next(done, total)
			}
		}
	}
	res, err := p.Run(ctx, vj, *out)
	if logDone != nil {
		logDone()
	}
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return err
	}
	secs := res.Elapsed.Seconds()
	if res.Matte != "" {
		fmt.Fprintf(stdout, "matte: %s\n", res.Matte)
	}
	files := strings.TrimSpace(strings.Join([]string{res.Render, res.Source, res.Alpha, res.Foreground}, " "))
	if res.EXR != "" {
		files += fmt.Sprintf(" %s/<pass>/<pass>.%04d-%04d.exr (%s)", res.EXR, res.EXRFirstFrame, res.EXRLastFrame, strings.Join(worker.EXRPasses, ", "))
	}
	fmt.Fprintf(stdout, "rendered %d frame(s) %dx%d in %.2f s (%.1f frames/s), seed %d: %s\n",
		res.Frames, res.Width, res.Height, secs, float64(res.Frames)/secs, s, files)
	return nil
}

func fileInput(what, path string) (*codec.Input, error) {
	if err := localfile.Check(what, path); err != nil {
		return nil, err
	}
	in := codec.FileInput(path)
	return &in, nil
}

var presets = []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"}

func checkPreset(p string) error {
	for _, q := range presets {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("INVALID_INPUT: preset %q: want one of %s", p, strings.Join(presets, ", "))
}

func randomSeed() uint32 {
	var b [4]byte
	f, err := os.Open("/dev/urandom")
	if err == nil {
		_, err = io.ReadFull(f, b[:])
		f.Close()
	}
	if err != nil {
		return uint32(time.Now().UnixNano())
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws a one-line bar on a terminal: the matte pass of
// select and auto jobs, then the render frames, with the time left.
type progressBar struct {
	w     io.Writer
	start time.Time
	last  time.Time
	drawn bool
	// The phases' counts (worker.JobFraction) and the time left's estimator.
	mDone, mTotal int
	eta           etaEstimator
}

// matte shows the matte pass (Pipeline.MatteProgress).
func (b *progressBar) matte(done, total int) {
	b.mDone, b.mTotal = done, total
	b.draw(fmt.Sprintf("matte %d/%d", done, total), worker.JobFraction(done, total, 0, 1), false)
}

// update shows the render frames (Pipeline.Progress).
func (b *progressBar) update(done, total int) {
	fps := float64(done) / time.Since(b.start).Seconds()
	b.draw(fmt.Sprintf("%d/%d frames %.1f frames/s", done, total, fps), worker.JobFraction(b.mDone, b.mTotal, done, total), done >= total)
}

func (b *progressBar) draw(what string, frac float64, done bool) {
	now := time.Now()
	elapsed := now.Sub(b.start)
	b.eta.observe(elapsed, frac)
	if !done && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	const width = 30
	fill := int(frac * width)
	pct := int(frac * 100)
	left := ""
	if !done {
		left = b.eta.String()
	}
	fmt.Fprintf(b.w, "\r\x1b[K[%s%s] %3d%% %s  %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		pct, what, left)
	b.drawn = true
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
