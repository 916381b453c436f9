package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

func TestMatteSuiteSelect(t *testing.T) {
	dev := kernels.NewCPU(0)
	defer dev.Close()
	var sj, sf float64
	cases := MatteSuite(320, 180, 24)
	for _, c := range cases {
		r, err := RunSelect(context.Background(), dev, c, 0, matte.DefaultSelectOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		sj += r.Scores.J
		sf += r.Scores.F
	}
	sj /= float64(len(cases))
	sf /= float64(len(cases))
	t.Logf("mean J %.3f F %.3f", sj, sf)
	if sj < 0.90 || sf < 0.85 {
		t.Errorf("select: mean J %.3f (want >= 0.90), F %.3f (want >= 0.85)", sj, sf)
	}
}

func TestMatteSuiteSelectBackward(t *testing.T) {
	// The keyframe in the middle: half the clip is propagated backward.
	dev := kernels.NewCPU(0)
	defer dev.Close()
	for _, c := range MatteSuite(320, 180, 24)[:2] {
		r, err := RunSelect(context.Background(), dev, c, 12, matte.DefaultSelectOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if r.Scores.J < 0.9 || r.Scores.PerJ[1] < 0.9 {
			t.Errorf("%s from frame 12: J %.3f, frame 1 %.3f", c.Name, r.Scores.J, r.Scores.PerJ[1])
		}
	}
}

func TestMatteSuiteAuto(t *testing.T) {
	dev := kernels.NewCPU(0)
	defer dev.Close()
	// Without a network only the chroma screen can be keyed; the other
	// cases need the network and say so (no silent fallback).
	for _, c := range AutoSuite(320, 180, 30) {
		r, err := RunAuto(context.Background(), dev, c, matte.DefaultAutoOptions())
		if c.Name != "chroma" {
			if !errors.Is(err, matte.ErrNoNetwork) {
				t.Errorf("%s without a network: err = %v, want ErrNoNetwork", c.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if r.Method != "chroma" {
			t.Errorf("%s: auto chose %s, want chroma", c.Name, r.Method)
		}
		if r.Scores.J < 0.9 {
			t.Errorf("%s: J %.3f, want >= 0.90", c.Name, r.Scores.J)
		}
	}
}

func TestScores(t *testing.T) {
	w, h := 100, 100
	disk := func(cx, cy, r float64) []float32 {
		m := make([]float32, w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if (float64(x)-cx)*(float64(x)-cx)+(float64(y)-cy)*(float64(y)-cy) <= r*r {
					m[y*w+x] = 1
				}
			}
		}
		return m
	}
	g := disk(50, 50, 20)
	p, gb := binary(g), binary(g)
	if JaccardIndex(p, gb) != 1 || BoundaryF(p, gb, w, h) != 1 {
		t.Fatal("identical masks do not score 1")
	}
	// Shifted by 1 pixel: within the tolerance ceil(0.008*141) = 2 px.
	s := binary(disk(51, 50, 20))
	if f := BoundaryF(s, gb, w, h); f != 1 {
		t.Errorf("1-pixel shift: F %.3f, want 1", f)
	}
	if j := JaccardIndex(s, gb); j > 0.97 || j < 0.9 {
		t.Errorf("1-pixel shift: J %.3f", j)
	}
	// Shifted by 10 pixels: most boundary pixels are out of tolerance.
	far := binary(disk(60, 50, 20))
	if f := BoundaryF(far, gb, w, h); f > 0.5 {
		t.Errorf("10-pixel shift: F %.3f, want < 0.5", f)
	}
	empty := make([]bool, w*h)
	if JaccardIndex(empty, empty) != 1 || BoundaryF(empty, gb, w, h) != 0 {
		t.Error("empty-mask conventions")
	}
	// The protocol leaves out the first and last frames; flicker sees popping.
	sc := &Scorer{W: w, H: h}
	for i := 0; i < 6; i++ {
		pred := g
		if i%2 == 1 {
			pred = disk(50, 50, 22)
		}
		if i == 0 || i == 5 {
			pred = make([]float32, w*h) // left out of the means
		}
		sc.Add(pred, g)
	}
	r := sc.Scores()
	if r.J < 0.8 || r.Flicker < 10 {
		t.Errorf("scores %v: want J >= 0.8 (ends left out) and flicker >= 10%%", r)
	}
	// An object that leaves the view, matched by the prediction, does not
	// flicker (the old |P|/|G| measure divided by an empty truth).
	sc = &Scorer{W: w, H: h}
	for i := 0; i < 6; i++ {
		m := g
		if i >= 3 {
			m = make([]float32, w*h)
		}
		sc.Add(m, m)
	}
	if r := sc.Scores(); r.Flicker != 0 {
		t.Errorf("object leaving the view, followed exactly: flicker %.2f%%, want 0", r.Flicker)
	}
}

// benchSuite runs the cases at w x h with n frames, one sub-benchmark
// each, and reports the DAVIS scores and the matte throughput.
func benchSuite(b *testing.B, cases []*MatteCase, run func(*MatteCase) (MatteRun, error)) {
	for _, c := range cases {
		b.Run(c.Name, func(b *testing.B) {
			var r MatteRun
			var el float64
			frames := 0
			for i := 0; i < b.N; i++ {
				var err error
				if r, err = run(c); err != nil {
					b.Fatal(err)
				}
				el += r.Elapsed.Seconds()
				frames += r.Frames
			}
			b.ReportMetric(r.Scores.J, "J")
			b.ReportMetric(r.Scores.F, "F")
			b.ReportMetric(r.Scores.JDecay, "J-decay")
			b.ReportMetric(r.Scores.Flicker, "flicker-%")
			b.ReportMetric(float64(frames)/el, "matte-frames/s")
		})
	}
}

// BenchmarkMatteSelect is the select suite at 854x480, 48 frames a case,
// keyframe 0, on the CPU backend with all cores. matte-frames/s counts
// the matte work only (flow, propagation, refinement at 854x480).
func BenchmarkMatteSelect(b *testing.B) {
	dev := kernels.NewCPU(0)
	defer dev.Close()
	benchSuite(b, MatteSuite(854, 480, 48), func(c *MatteCase) (MatteRun, error) {
		return RunSelect(context.Background(), dev, c, 0, matte.DefaultSelectOptions())
	})
}
