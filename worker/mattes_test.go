package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
)

// meanJ is the mean IoU (both thresholded at 128) of two Gray8 sequences.
func meanJ(t *testing.T, got, want []*frame.HostFrame) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d alpha frames, want %d", len(got), len(want))
	}
	var sum float64
	for i := range got {
		var in, un int
		g, w := got[i], want[i]
		for y := 0; y < w.Height; y++ {
			for x := 0; x < w.Width; x++ {
				a := g.Planes[0][y*g.Strides[0]+x] >= 128
				b := w.Planes[0][y*w.Strides[0]+x] >= 128
				if a && b {
					in++
				}
				if a || b {
					un++
				}
			}
		}
		if un > 0 {
			sum += float64(in) / float64(un)
		} else {
			sum++
		}
	}
	return sum / float64(len(got))
}

func TestRunVideoSelect(t *testing.T) {
	c := bench.MatteSuite(192, 108, 16)[0]
	dir := t.TempDir()
	fx, err := bench.WriteMatteCase(context.Background(), dir, c, 7)
	if err != nil {
		t.Fatal(err)
	}
	p := netPipeline(t)
	// The progress moves through the matte pass (2 x 16 steps), before
	// the first render frame, and JobFraction with it.
	var steps []string
	var md, mt, rd, rt int
	var fracs []float64
	p.MatteProgress = func(done, total int) {
		md, mt = done, total
		steps = append(steps, fmt.Sprintf("m%d/%d", done, total))
		fracs = append(fracs, JobFraction(md, mt, rd, rt))
	}
	p.Progress = func(done, total int) {
		rd, rt = done, total
		steps = append(steps, fmt.Sprintf("r%d/%d", done, total))
		fracs = append(fracs, JobFraction(md, mt, rd, rt))
	}
	res, err := runReq(p, context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "select", AlphaKeyframeIndex: 7, Prompt: "cool studio light", Seed: 1},
		Source:     in(fx.Source),
		Alpha:      in(fx.Keyframes[7]),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Frames != 16 || res.Matte != "select" {
		t.Fatalf("result %+v", res)
	}
	var wantSteps []string
	for i := 1; i <= 32; i++ {
		wantSteps = append(wantSteps, fmt.Sprintf("m%d/32", i))
	}
	for i := 1; i <= 16; i++ {
		wantSteps = append(wantSteps, fmt.Sprintf("r%d/16", i))
	}
	if strings.Join(steps, " ") != strings.Join(wantSteps, " ") {
		t.Errorf("progress steps\n%s\nwant\n%s", strings.Join(steps, " "), strings.Join(wantSteps, " "))
	}
	for i := 1; i < len(fracs); i++ {
		if fracs[i] < fracs[i-1] {
			t.Errorf("JobFraction falls from %.3f to %.3f at step %d", fracs[i-1], fracs[i], i)
		}
	}
	if f := fracs[31]; math.Abs(f-(MatteDecodeShare+MatteMakeShare)) > 1e-9 || fracs[len(fracs)-1] != 1 {
		t.Errorf("JobFraction %.3f at the matte pass's end, %.3f at the job's; want %.2f and 1", f, fracs[len(fracs)-1], MatteDecodeShare+MatteMakeShare)
	}
	_, want := decodeAll(t, fx.Matte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	// Propagated forward and backward from frame 7.
	if j := meanJ(t, got, want); j < 0.9 {
		t.Errorf("select alpha: mean J %.3f against the exact matte, want >= 0.9", j)
	}
	// The keyframe itself is the given matte.
	if d := maxDiff(got[7].Planes[0], want[7].Planes[0]); d > 16 {
		t.Errorf("keyframe alpha differs from the given matte by %d codes", d)
	}
}

func TestRunImageSelectResampled(t *testing.T) {
	big := fixture(t, 128, 96, 1)
	small := fixture(t, 64, 48, 1) // the same scene at half size: same aspect ratio
	res, err := runReq(netPipeline(t), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select", Prompt: "sunset", Seed: 1},
		Source:     in(big.Still),
		Alpha:      in(small.StillMatte),
		CRF:        -1,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, want := decodeAll(t, big.StillMatte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	if j := meanJ(t, got, want); j < 0.9 {
		t.Errorf("resampled keyframe: J %.3f, want >= 0.9", j)
	}
	// At the same size the keyframe is used as given.
	res, err = runReq(netPipeline(t), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "select", AlphaKeyframeIndex: 3, Prompt: "sunset", Seed: 1},
		Source:     in(big.Still),
		Alpha:      in(big.StillMatte),
		CRF:        -1,
		// the index is ignored for images,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, got = decodeAll(t, res.Alpha, frame.Gray8)
	if d := maxDiff(got[0].Planes[0], want[0].Planes[0]); d != 0 {
		t.Errorf("image keyframe not used as given: differs by %d codes", d)
	}
}

// davisClip is a short real clip of ../shared/datasets with its masks,
// or a skip that says why it is missing.
func davisClip(t *testing.T, name string) (source string, masks []*frame.HostFrame) {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets", "davis2016-train", name)
	if _, err := os.Stat(filepath.Join(dir, "source.mp4")); err != nil {
		t.Skipf("real footage not found (%v): the dataset lives in ../shared/datasets beside the repository", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "masks", "*.png"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no masks (%v)", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		_, fs := decodeAll(t, p, frame.Gray8)
		masks = append(masks, fs[0])
	}
	return filepath.Join(dir, "source.mp4"), masks
}

func TestRunAuto(t *testing.T) {
	dir := t.TempDir()
	// A chroma screen is keyed (no network involved).
	fx, err := bench.WriteMatteCase(context.Background(), dir, bench.AutoSuite(192, 108, 16)[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runReq(netPipeline(t), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "auto", Prompt: "neon night"},
		Source:     in(fx.Source),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Matte != "auto/chroma" {
		t.Fatalf("auto chose %q, want auto/chroma", res.Matte)
	}
	_, want := decodeAll(t, fx.Matte, frame.Gray8)
	_, got := decodeAll(t, res.Alpha, frame.Gray8)
	if j := meanJ(t, got, want); j < 0.9 {
		t.Errorf("chroma: mean J %.3f, want >= 0.90", j)
	}

	// Real footage, the network: a whole clip as a video job.
	src, masks := davisClip(t, "dog-agility")
	res, err = runReq(netPipeline(t), context.Background(), RenderRequest{
		JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "auto", Prompt: "neon night"},
		Source:     in(src),
		CRF:        -1,
		Preset:     "ultrafast",
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Matte != "auto/net" {
		t.Fatalf("auto chose %q, want auto/net", res.Matte)
	}
	_, got = decodeAll(t, res.Alpha, frame.Gray8)
	if j := meanJ(t, got, masks); j < 0.45 {
		t.Errorf("dog-agility auto: mean J %.3f, want >= 0.45 (bench: 0.508)", j)
	}
}

func TestRunWithoutModel(t *testing.T) {
	src, _ := davisClip(t, "dog-agility")
	for _, mode := range []string{"auto", "select"} {
		req := RenderRequest{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: mode, Prompt: "x"}, Source: in(src), CRF: -1, Preset: "ultrafast"}
		if mode == "select" {
			req.Alpha = in(filepath.Join(filepath.Dir(src), "masks", "00000.png"))
		}
		_, err := runReq(newPipeline(), context.Background(), req, t.TempDir())
		var ie *job.InputError
		if !errors.As(err, &ie) || ie.Code != "MODEL_UNAVAILABLE" {
			t.Errorf("%s without a model: err = %v, want MODEL_UNAVAILABLE", mode, err)
		}
	}
}
