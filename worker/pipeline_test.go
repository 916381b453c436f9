package worker

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/modeltest"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/media"
)

// fixture writes a small scene once per test binary run folder.
func fixture(t *testing.T, w, h, frames int) bench.FixturePaths {
	t.Helper()
	p, err := bench.WriteFixture(context.Background(), t.TempDir(), bench.FixtureOptions{Width: w, Height: h, Frames: frames, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func in(path string) *codec.Input {
	i := codec.FileInput(path)
	return &i
}

func newPipeline() *Pipeline {
	return &Pipeline{Device: kernels.NewCPU(2)}
}

// netPipeline is newPipeline with the real segmentation network, for the
// auto and select (video) jobs that need it.
func netPipeline(t testing.TB) *Pipeline {
	p := newPipeline()
	p.Net = modeltest.Load(t)
	return p
}

func decodeAll(t *testing.T, path string, f frame.PixelFormat) (codec.Info, []*frame.HostFrame) {
	t.Helper()
	ctx := context.Background()
	d, err := codec.NewDecoder(ctx, codec.FileInput(path), codec.DefaultLimits(), codec.DecodeOptions{Format: f})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer d.Close()
	var out []*frame.HostFrame
	for {
		fr := &frame.HostFrame{}
		err := d.Next(ctx, fr)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, fr)
	}
	return d.Info(), out
}

func TestRunVideoCustom(t *testing.T) {
	fx := fixture(t, 96, 64, 12)
	out := t.TempDir()
	var calls, last int
	p := newPipeline()
	p.Progress = func(done, total int) { calls++; last = done }
	res, err := runReq(p, context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "warm light from the left", Seed: 5},
		Source:     in(fx.Source),
		Alpha:      in(fx.Matte),
		Reference:  in(fx.Reference),
		CRF:        -1,
		Preset:     "ultrafast",
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Frames != 12 || res.Width != 96 || res.Height != 64 || calls != 12 || last != 12 {
		t.Fatalf("result %+v, progress calls %d last %d", res, calls, last)
	}
	if !res.SourceCopied || !res.AlphaCopied {
		t.Errorf("an H.264 source and matte at output size should be passed through: %+v", res)
	}
	for _, f := range []string{res.Render, res.Source, res.Alpha} {
		info, err := codec.Probe(context.Background(), codec.FileInput(f), codec.DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if info.Kind != codec.KindVideo || info.Codec != "h264" || info.Frames != 12 || info.Width != 96 || info.Height != 64 {
			t.Fatalf("%s: %+v", f, info)
		}
	}
	// The alpha output is the matte that was used.
	_, want := decodeAll(t, fx.Matte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	if len(got) != len(want) {
		t.Fatalf("alpha frames %d, want %d", len(got), len(want))
	}
	for i := range got {
		if d := maxDiff(got[i].Planes[0], want[i].Planes[0]); d > 12 {
			t.Fatalf("alpha frame %d differs from the matte by %d codes", i, d)
		}
	}
	// Where the matte is 0 the render shows the reference; where it is 1 it
	// shows the (relit) subject, not the reference.
	_, ren := decodeAll(t, res.Render, frame.RGB24)
	refD, err := codec.NewDecoder(context.Background(), codec.FileInput(fx.Reference), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.RGB24})
	if err != nil {
		t.Fatal(err)
	}
	ref := &frame.HostFrame{}
	if err := refD.Next(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	refD.Close()
	// The background is compared block by block (8x8 means): matched
	// focus may defocus the reference to the subject's sharpness, which
	// changes its detail but not its local means.
	const blk = 8
	var bgErr, bgN, fgRefDiff, fgN float64
	m := want[0].Planes[0]
	for by := 0; by < 64; by += blk {
		for bx := 0; bx < 96; bx += blk {
			var sr, sb [3]float64
			all := true
			for y := by; y < by+blk; y++ {
				for x := bx; x < bx+blk; x++ {
					a := m[y*want[0].Strides[0]+x]
					all = all && a < 5
					for c := 0; c < 3; c++ {
						r := float64(ren[0].Planes[0][y*ren[0].Strides[0]+3*x+c])
						b := float64(ref.Planes[0][y*ref.Strides[0]+3*x+c])
						sr[c] += r
						sb[c] += b
						if a > 250 {
							fgRefDiff += math.Abs(r - b)
							fgN++
						}
					}
				}
			}
			if !all {
				continue
			}
			for c := range 3 {
				bgErr += math.Abs(sr[c]-sb[c]) / (blk * blk)
				bgN++
			}
		}
	}
	if bgN == 0 || fgN == 0 {
		t.Fatal("fixture has no background block or no subject")
	}
	t.Logf("background block error %.2f codes", bgErr/bgN)
	if e := bgErr / bgN; e > 6 {
		t.Errorf("background differs from the reference by %.1f codes on average (8x8 block means)", e)
	}
	if d := fgRefDiff / fgN; d < 15 {
		t.Errorf("subject looks like the reference (mean difference %.1f codes)", d)
	}
	// Nothing but the three outputs is left.
	entries, _ := os.ReadDir(out)
	if len(entries) != 3 {
		t.Errorf("output folder has %d entries, want 3", len(entries))
	}
}

func maxDiff(a, b []byte) int {
	m := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		m = max(m, d)
	}
	return m
}

func TestRunImageFillAndCustom(t *testing.T) {
	fx := fixture(t, 80, 60, 2)
	for _, c := range []struct {
		mode  string
		alpha *codec.Input
	}{{"fill", nil}, {"custom", in(fx.StillMatte)}} {
		t.Run(c.mode, func(t *testing.T) {
			out := t.TempDir()
			res, err := runReq(newPipeline(), context.Background(), RenderRequest{
				JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: c.mode, Prompt: "night city, neon magenta rim light", Seed: 1},
				Source:     in(fx.Still),
				Alpha:      c.alpha,
				CRF:        -1,
			}, out)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Ext(res.Render) != ".png" || res.Frames != 1 || res.SourceCopied {
				t.Fatalf("%+v", res)
			}
			info, alpha := decodeAll(t, res.Alpha, frame.Gray8)
			if info.Kind != codec.KindImage || len(alpha) != 1 || alpha[0].Width != 80 || alpha[0].Height != 60 {
				t.Fatalf("alpha %+v", info)
			}
			if c.mode == "fill" {
				for _, v := range alpha[0].Planes[0] {
					if v != 255 {
						t.Fatal("fill alpha is not all 255")
					}
				}
			}
			_, src := decodeAll(t, res.Source, frame.RGB24)
			_, still := decodeAll(t, fx.Still, frame.RGB24)
			if d := maxDiff(src[0].Planes[0], still[0].Planes[0]); d != 0 {
				t.Errorf("normalised source of a same-size PNG differs by %d codes", d)
			}
		})
	}
}

func TestRunDeterministic(t *testing.T) {
	fx := fixture(t, 64, 48, 2)
	run := func(seed uint32) []byte {
		res, err := runReq(newPipeline(), context.Background(), RenderRequest{
			JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom", Prompt: "studio, soft key light from the right", Seed: seed},
			Source:     in(fx.Still),
			Alpha:      in(fx.StillMatte),
			CRF:        -1,
		}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, f := decodeAll(t, res.Render, frame.RGB24)
		return f[0].Planes[0]
	}
	a, b, c := run(9), run(9), run(10)
	if maxDiff(a, b) != 0 {
		t.Error("same seed and inputs gave different renders")
	}
	if maxDiff(a, c) == 0 {
		t.Error("another seed gave the very same render (the backdrop should vary)")
	}
}

// detChildEnv carries, to a child of TestRunVideoDeterministic, the
// output folder and the fixture's source, matte and reference (joined by
// os.PathListSeparator).
const detChildEnv = "VFX_TEST_DET_CHILD"

// detVideoJob runs TestRunVideoDeterministic's job into out and returns
// its render's path.
func detVideoJob(t *testing.T, out, source, matte, ref string) string {
	t.Helper()
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "sunset, warm key light from the right", Seed: 7},
		Source:     in(source),
		Alpha:      in(matte),
		Reference:  in(ref),
		CRF:        -1, // and the default preset and x264 params: medium, with its mb-tree
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	return res.Render
}

// TestRunVideoDeterministic runs one seeded video job in this process and
// in two child processes whose heaps glibc fills differently
// (MALLOC_PERTURB_): every decoded frame of the three render.mp4 must be
// the same. The picture is 13 macroblocks wide, where libx264's AVX-512
// mb-tree code reads memory it never wrote (codec.x264Params): without the
// codec's guard this fails on a CPU with AVX-512 (and passes either way
// without AVX-512 or with a C library that ignores MALLOC_PERTURB_).
func TestRunVideoDeterministic(t *testing.T) {
	if v := os.Getenv(detChildEnv); v != "" {
		a := filepath.SplitList(v)
		if len(a) != 4 {
			t.Fatalf("%s=%q", detChildEnv, v)
		}
		detVideoJob(t, a[0], a[1], a[2], a[3])
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary twice")
	}
	fx := fixture(t, 200, 112, 24)
	ref := detVideoJob(t, t.TempDir(), fx.Source, fx.Matte, fx.Reference)
	_, want := decodeAll(t, ref, frame.YUV420P)
	if len(want) != 24 {
		t.Fatalf("%d render frames, want 24", len(want))
	}
	for _, perturb := range []string{"165", "77"} {
		out := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunVideoDeterministic$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MALLOC_PERTURB_="+perturb,
			detChildEnv+"="+strings.Join([]string{out, fx.Source, fx.Matte, fx.Reference}, string(os.PathListSeparator)))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child (MALLOC_PERTURB_=%s): %v\n%s", perturb, err, b)
		}
		_, got := decodeAll(t, filepath.Join(out, filepath.Base(ref)), frame.YUV420P)
		if len(got) != len(want) {
			t.Fatalf("MALLOC_PERTURB_=%s: %d render frames, want %d", perturb, len(got), len(want))
		}
		for i := range got {
			for p := 0; p < 3; p++ {
				if d := maxDiff(got[i].Planes[p], want[i].Planes[p]); d != 0 {
					t.Fatalf("MALLOC_PERTURB_=%s: render frame %d plane %d differs from this process's (max %d codes)", perturb, i, p, d)
				}
			}
		}
	}
}

func TestRunVideoScaledReencodes(t *testing.T) {
	fx := fixture(t, 1296, 736, 3)
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "overcast daylight", MaxResolution: 720},
		Source:     in(fx.Source),
		Alpha:      in(fx.Matte),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.SourceCopied || res.AlphaCopied || res.Height != 720 || res.Width%2 != 0 {
		t.Fatalf("%+v", res)
	}
	for _, f := range []string{res.Source, res.Alpha} {
		info, frames := decodeAll(t, f, frame.Gray8)
		if info.Frames != 3 || len(frames) != 3 || info.Width != res.Width || info.Height != 720 {
			t.Fatalf("%s: %+v", f, info)
		}
	}
	_, alpha := decodeAll(t, res.Alpha, frame.Gray8)
	var lo, hi int
	for _, v := range alpha[1].Planes[0] {
		if v < 8 {
			lo++
		} else if v > 247 {
			hi++
		}
	}
	if lo == 0 || hi == 0 {
		t.Fatalf("scaled matte lost its subject or background (%d low, %d high)", lo, hi)
	}
}

func TestRunScalesToMaxResolution(t *testing.T) {
	fx := fixture(t, 1600, 900, 1)
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "custom", Prompt: "daylight", MaxResolution: 720},
		Source:     in(fx.Still),
		Alpha:      in(fx.StillMatte),
		CRF:        -1,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 1280 || res.Height != 720 {
		t.Fatalf("output %dx%d, want 1280x720", res.Width, res.Height)
	}
}

// writePNG writes a w x h gray PNG with the project's encoder.
func writePNG(t *testing.T, path string, w, h int) string {
	t.Helper()
	f, _ := frame.New(frame.RGB24, w, h)
	enc, err := codec.NewEncoder(context.Background(), path, codec.EncoderOptions{Container: "png", Width: w, Height: h, Input: frame.RGB24})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Write(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunErrors(t *testing.T) {
	fx := fixture(t, 64, 48, 6)
	other := fixture(t, 96, 64, 6)
	short := fixture(t, 64, 48, 4)
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.png")
	os.WriteFile(text, []byte("this is not an image, whatever its name says\n"), 0o644)
	wide := writePNG(t, filepath.Join(dir, "wide.png"), 410, 100)
	huge := writePNG(t, filepath.Join(dir, "huge.png"), 2000, 1400)
	black := writePNG(t, filepath.Join(dir, "black.png"), 64, 48)
	long := strings.Repeat("é", job.MaxPromptChars+1)

	base := func() RenderRequest {
		return RenderRequest{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "sunset"}, Source: in(fx.Source), Alpha: in(fx.Matte), CRF: -1}
	}
	cases := []struct {
		name   string
		mod    func(*RenderRequest)
		limits codec.Limits
		code   string
		msg    string
	}{
		{"generation type", func(r *RenderRequest) { r.GenerationType = "gif" }, codec.Limits{}, "INVALID_GENERATION_TYPE", "gif"},
		{"missing source", func(r *RenderRequest) { r.Source = nil }, codec.Limits{}, "MISSING_SOURCE", "source"},
		{"alpha mode", func(r *RenderRequest) { r.AlphaMode = "magic" }, codec.Limits{}, "INVALID_ALPHA_MODE", "magic"},
		{"select video keyframe", func(r *RenderRequest) { r.AlphaMode = "select" }, codec.Limits{}, "ALPHA_MUST_BE_IMAGE", "video"},
		{"select empty keyframe", func(r *RenderRequest) { r.AlphaMode = "select"; r.Alpha = in(black) }, codec.Limits{}, "ALPHA_TYPE_MISMATCH", "selects nothing"},
		{"select keyframe aspect", func(r *RenderRequest) { r.AlphaMode = "select"; r.Alpha = in(other.StillMatte) }, codec.Limits{}, "ALPHA_TYPE_MISMATCH", "aspect ratio"},
		{"select keyframe index", func(r *RenderRequest) { r.AlphaMode = "select"; r.Alpha = in(fx.StillMatte); r.AlphaKeyframeIndex = 6 }, codec.Limits{}, "INVALID_KEYFRAME_INDEX", "valid 0..5"},
		{"missing alpha", func(r *RenderRequest) { r.Alpha = nil }, codec.Limits{}, "MISSING_ALPHA", "custom"},
		{"missing style", func(r *RenderRequest) { r.Prompt = "" }, codec.Limits{}, "MISSING_STYLE_INPUT", "prompt"},
		{"prompt too long", func(r *RenderRequest) { r.Prompt = long }, codec.Limits{}, "PROMPT_TOO_LONG", "2001 characters"},
		{"max resolution", func(r *RenderRequest) { r.MaxResolution = 480 }, codec.Limits{}, "INVALID_MAX_RESOLUTION", "480"},
		{"keyframe", func(r *RenderRequest) { r.AlphaKeyframeIndex = -1 }, codec.Limits{}, "INVALID_KEYFRAME_INDEX", "-1"},
		{"not media", func(r *RenderRequest) { r.Source = in(text) }, codec.Limits{}, "INVALID_FILE_FORMAT", "source"},
		{"image for video", func(r *RenderRequest) { r.Source = in(fx.Still) }, codec.Limits{}, "INVALID_FILE_FORMAT", "needs an MP4 or MOV"},
		{"video for image", func(r *RenderRequest) { r.GenerationType = "image" }, codec.Limits{}, "INVALID_FILE_FORMAT", "needs a PNG, JPEG or WebP"},
		{"too many frames", nil, codec.Limits{MaxPixels: 2_770_000, MaxFrames: 5, MaxAspect: 4}, "VIDEO_TOO_MANY_FRAMES", "6"},
		{"too many pixels", func(r *RenderRequest) { r.GenerationType = "image"; r.Source = in(huge); r.AlphaMode = "fill" }, codec.Limits{}, "SOURCE_TOO_LARGE", "2800000"},
		{"extreme aspect", func(r *RenderRequest) { r.GenerationType = "image"; r.Source = in(wide); r.AlphaMode = "fill" }, codec.Limits{}, "EXTREME_ASPECT_RATIO", "410"},
		{"image matte for video", func(r *RenderRequest) { r.Alpha = in(fx.StillMatte) }, codec.Limits{}, "ALPHA_TYPE_MISMATCH", "image"},
		{"matte size", func(r *RenderRequest) { r.Alpha = in(other.Matte) }, codec.Limits{}, "ALPHA_TYPE_MISMATCH", "96x64"},
		{"matte length", func(r *RenderRequest) { r.Alpha = in(short.Matte) }, codec.Limits{}, "ALPHA_TYPE_MISMATCH", "4"},
		{"matte not media", func(r *RenderRequest) { r.Alpha = in(text) }, codec.Limits{}, "INVALID_FILE_FORMAT", "alpha"},
		{"reference video", func(r *RenderRequest) { r.Reference = in(fx.Source) }, codec.Limits{}, "INVALID_FILE_FORMAT", "reference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := base()
			if c.mod != nil {
				c.mod(&req)
			}
			p := newPipeline()
			p.Limits = c.limits
			out := filepath.Join(t.TempDir(), "out")
			_, err := runReq(p, context.Background(), req, out)
			if err == nil {
				t.Fatal("no error")
			}
			if string(job.CodeOf(err)) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v (code %q), want code %s mentioning %q", err, string(job.CodeOf(err)), c.code, c.msg)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Fatalf("a failed job left %d entries in the output folder", len(entries))
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	fx := fixture(t, 64, 48, 8)
	ctx, cancel := context.WithCancel(context.Background())
	p := newPipeline()
	p.Progress = func(done, total int) { cancel() }
	out := t.TempDir()
	_, err := runReq(p, ctx, RenderRequest{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "fill", Prompt: "x"}, Source: in(fx.Source), CRF: -1}, out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("a cancelled job left %d entries", len(entries))
	}
}

func TestRunAudioPassthrough(t *testing.T) {
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg command line not installed (make deps installs it): needed to make a source with audio")
	}
	fx := fixture(t, 64, 48, 25)
	src := filepath.Join(t.TempDir(), "with_audio.mp4")
	cmd := exec.Command(ff, "-hide_banner", "-loglevel", "error", "-i", fx.Source, "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
		"-c:v", "copy", "-c:a", "aac", "-shortest", src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	res, err := runReq(newPipeline(), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "dusk"},
		Source:     in(src),
		Alpha:      in(fx.Matte),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := codec.Probe(context.Background(), codec.FileInput(res.Render), codec.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !info.HasAudio || info.AudioCodec != "aac" {
		t.Fatalf("render lost the audio: %+v", info)
	}
}

// runReq validates req (Validate) and runs it on p, as `vfx render` does:
// a request Validate refuses is Run's error too.
func runReq(p *Pipeline, ctx context.Context, req RenderRequest, outDir string) (Result, error) {
	j, err := Validate(req)
	if err != nil {
		return Result{}, err
	}
	return p.Run(ctx, j, outDir)
}

// TestRunChecked: a job whose inputs the caller checked (Job.Checked, as
// `vfx render` does) renders the same as one Run checks itself; under
// other limits than the recorded check's, Run checks again and refuses
// what those limits refuse.
func TestRunChecked(t *testing.T) {
	fx := fixture(t, 64, 48, 6)
	ctx := context.Background()
	req := RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "custom", Prompt: "studio, soft key light from the right", Seed: 4},
		Source:     in(fx.Source),
		Alpha:      in(fx.Matte),
		Reference:  in(fx.Reference),
		CRF:        -1,
	}
	j, err := Validate(req)
	if err != nil {
		t.Fatal(err)
	}
	md, err := media.Check(ctx, media.Inputs{JobRequest: req.JobRequest, Source: req.Source, Alpha: req.Alpha, Reference: req.Reference}, codec.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := newPipeline().Run(ctx, j, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checked := j
	checked.Checked(md, codec.DefaultLimits())
	res, err := newPipeline().Run(ctx, checked, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, want := decodeAll(t, plain.Render, frame.RGB24)
	_, got := decodeAll(t, res.Render, frame.RGB24)
	if len(got) != 6 || len(want) != 6 {
		t.Fatalf("%d and %d render frames, want 6", len(got), len(want))
	}
	for i := range got {
		if d := maxDiff(got[i].Planes[0], want[i].Planes[0]); d != 0 {
			t.Fatalf("frame %d differs by %d from the unchecked job's", i, d)
		}
	}

	// The check recorded under the default limits does not stand for a
	// pipeline that allows 5 frames.
	p := newPipeline()
	p.Limits = codec.Limits{MaxPixels: 2_770_000, MaxFrames: 5, MaxAspect: 4}
	_, err = p.Run(ctx, checked, t.TempDir())
	var ie *job.InputError
	if !errors.As(err, &ie) || ie.Code != "VIDEO_TOO_MANY_FRAMES" {
		t.Fatalf("6 frames under a 5-frame limit with a check made under the default limits: %v, want VIDEO_TOO_MANY_FRAMES", err)
	}
}
