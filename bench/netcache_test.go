package bench

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/infer"
)

// gradClip is a 40x30 clip whose red rises with x, green with y and blue
// with the frame index.
type gradClip struct{}

func (gradClip) Name() string     { return "grad" }
func (gradClip) Size() (int, int) { return 40, 30 }
func (gradClip) Len() int         { return 3 }
func (gradClip) Load(i int, rgb, alpha []float32) error {
	n := 40 * 30
	for p := 0; p < n; p++ {
		rgb[p], rgb[n+p], rgb[2*n+p] = float32(p%40)/39, float32(p/40)/29, float32(i)/2
	}
	return nil
}

// redSeg returns the red of each pixel as P(object) and records the sizes
// it was given.
type redSeg struct{ sizes [][2]int }

func (s *redSeg) Segment(_ context.Context, rgb []float32, w, h int, dst []float32) error {
	s.sizes = append(s.sizes, [2]int{w, h})
	copy(dst, rgb[:w*h])
	return nil
}

func TestNetCacheCropMap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	seg := &redSeg{}
	nc := &NetCache{Net: seg, Dir: dir, Key: "m"}
	m, err := nc.CropMap(ctx, gradClip{}, 1, 10, 5, 30, 25)
	if err != nil {
		t.Fatal(err)
	}
	// The network saw the crop alone: its red runs from x=10 to x=29.
	if len(seg.sizes) != 1 || seg.sizes[0] != [2]int{20, 20} || len(m) != 400 || m[0] != float32(10)/39 || m[19] != float32(29)/39 {
		t.Fatalf("sizes %v, map of %d values starting %v … %v", seg.sizes, len(m), m[0], m[19])
	}
	// Asked again: from memory; another frame or another box: a run.
	for _, c := range []struct{ i, x0, y0, x1, y1, runs int }{
		{1, 10, 5, 30, 25, 1}, {2, 10, 5, 30, 25, 2}, {1, 10, 5, 30, 24, 3}, {1, 0, 0, 40, 30, 4},
	} {
		if _, err := nc.CropMap(ctx, gradClip{}, c.i, c.x0, c.y0, c.x1, c.y1); err != nil {
			t.Fatal(err)
		}
		if nc.CropRuns != c.runs {
			t.Errorf("after frame %d box %v: %d crop runs, want %d", c.i, c, nc.CropRuns, c.runs)
		}
	}
	// A new cache on the same folder reads every crop from disk.
	seg2 := &redSeg{}
	nc2 := &NetCache{Net: seg2, Dir: dir, Key: "m"}
	m2, err := nc2.CropMap(ctx, gradClip{}, 1, 10, 5, 30, 25)
	if err != nil {
		t.Fatal(err)
	}
	if nc2.CropRuns != 0 || len(seg2.sizes) != 0 || nc2.Crops != 1 {
		t.Errorf("from disk: %d runs, network given %v, %d asked for", nc2.CropRuns, seg2.sizes, nc2.Crops)
	}
	for k := range m {
		if d := m2[k] - m[k]; d > 1.0/255 || d < -1.0/255 {
			t.Fatalf("value %d from disk %v, was %v", k, m2[k], m[k])
		}
	}
	// A box outside the frame is refused.
	for _, b := range [][4]int{{-1, 0, 10, 10}, {0, 0, 41, 10}, {5, 5, 5, 10}} {
		if _, err := nc.CropMap(ctx, gradClip{}, 0, b[0], b[1], b[2], b[3]); err == nil {
			t.Errorf("box %v of a 40x30 frame taken", b)
		}
	}
	// A whole frame's map is counted apart from the crops, and once.
	crops := nc.CropRuns
	for range 2 {
		if m, err := nc.Map(ctx, gradClip{}, 1); err != nil || len(m) != 40*30 {
			t.Fatalf("Map: %d values, %v", len(m), err)
		}
	}
	if nc.Runs != 1 || nc.CropRuns != crops {
		t.Errorf("Map twice: %d runs, %d crop runs (want 1, %d)", nc.Runs, nc.CropRuns, crops)
	}
}

// featSeg is redSeg that also gives a one-plane feature map (the green
// at 4x3), counting its runs of each kind.
type featSeg struct{ plain, feat int }

func (s *featSeg) Segment(_ context.Context, rgb []float32, w, h int, dst []float32) error {
	s.plain++
	copy(dst, rgb[:w*h])
	return nil
}

func (s *featSeg) SegmentFeatures(_ context.Context, rgb []float32, w, h int, dst []float32) (infer.Features, error) {
	s.feat++
	copy(dst, rgb[:w*h])
	f := infer.Features{W: 4, H: 3, C: 1, Data: make([]float32, 12)}
	for k := range f.Data {
		f.Data[k] = rgb[w*h+(k/4)*(h/3)*w+(k%4)*(w/4)]
	}
	return f, nil
}

// TestNetCacheWithFeatures: with WithFeatures, Map's run keeps its
// features, so a frame costs one run for both, and a new cache reads both
// from disk; without it, Features runs the network again.
func TestNetCacheWithFeatures(t *testing.T) {
	ctx := context.Background()
	for _, with := range []bool{true, false} {
		dir := t.TempDir()
		seg := &featSeg{}
		nc := &NetCache{Net: seg, Dir: dir, Key: "m", WithFeatures: with}
		m, err := nc.Map(ctx, gradClip{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		f, err := nc.Features(ctx, gradClip{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		runs := seg.plain + seg.feat
		if want := map[bool]int{true: 1, false: 2}[with]; runs != want || nc.Runs != 1 {
			t.Errorf("WithFeatures %v: %d network runs (%d plain, %d with features), Runs %d: want %d and 1", with, runs, seg.plain, seg.feat, nc.Runs, want)
		}
		if m[39] != 1 || f.W != 4 || f.H != 3 || f.C != 1 || f.Data[11] != float32(20)/29 {
			t.Errorf("WithFeatures %v: map %v, features %+v", with, m[39], f)
		}
		seg2 := &featSeg{}
		nc2 := &NetCache{Net: seg2, Dir: dir, Key: "m", WithFeatures: with}
		f2, err := nc2.Features(ctx, gradClip{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc2.Map(ctx, gradClip{}, 1); err != nil {
			t.Fatal(err)
		}
		if seg2.plain+seg2.feat != 0 || f2.Data[11] != f.Data[11] {
			t.Errorf("WithFeatures %v, from disk: %d runs, features %v (was %v)", with, seg2.plain+seg2.feat, f2.Data[11], f.Data[11])
		}
	}
}
