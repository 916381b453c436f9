package infer

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// scene is a picture with one salient object (a warm disc on a graded
// background) and some texture, w x h planar RGB in [0,1].
func scene(w, h int) []float32 {
	rgb := make([]float32, 3*w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			col := [3]float32{0.2 + 0.1*float32(y)/float32(h), 0.25 + 0.05*float32(math.Sin(float64(x)/7)), 0.3}
			if (x-w/3)*(x-w/3)+(y-h/2)*(y-h/2) < (h/3)*(h/3) {
				col = [3]float32{0.9, 0.6 + 0.1*float32(math.Cos(float64(x*y)/50)), 0.3}
			}
			for c := range col {
				rgb[c*w*h+y*w+x] = col[c]
			}
		}
	}
	return rgb
}

// segmentBoth returns the maps of models a and b of the same picture.
func segmentBoth(ctx context.Context, t *testing.T, a, b *Model, rgb []float32, w, h int) ([]float32, []float32) {
	t.Helper()
	ma, mb := make([]float32, w*h), make([]float32, w*h)
	if err := a.Segment(ctx, rgb, w, h, ma); err != nil {
		t.Fatal(err)
	}
	if err := b.Segment(ctx, rgb, w, h, mb); err != nil {
		t.Fatal(err)
	}
	return ma, mb
}

// agreement is the IoU of two maps' 0.5 masks, the mean absolute
// difference of their values and the first map's object pixels.
func agreement(a, b []float32) (iou, mean float64, fg int) {
	var in, un int
	for i := range a {
		p, q := a[i] >= 0.5, b[i] >= 0.5
		if p {
			fg++
		}
		if p && q {
			in++
		}
		if p || q {
			un++
		}
		mean += math.Abs(float64(a[i] - b[i]))
	}
	return float64(in) / float64(max(un, 1)), mean / float64(len(a)), fg
}

// TestQuantizedModel runs the built-in card in 8 bits (its embedded
// calibration) and in fp32 on the same picture: the 8-bit map must find
// the same object.
func TestQuantizedModel(t *testing.T) {
	dir := installed(t)
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	c := ISNetIMGLY()
	if c.Int8 == nil || len(c.Int8.Ranges) == 0 {
		t.Fatal("the built-in card has no 8-bit calibration")
	}
	q, err := rt.Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c.Int8 = nil
	f, err := rt.Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !q.Int8() || f.Int8() {
		t.Fatalf("Int8(): %v with the calibration, %v without; want true, false", q.Int8(), f.Int8())
	}
	w, h := 320, 180
	rgb := scene(w, h)
	iou, mean, fg := agreement(segmentBoth(ctx, t, f, q, rgb, w, h))
	t.Logf("fp32 %d object pixels; 8-bit agrees at IoU %.4f, mean difference %.4f", fg, iou, mean)
	if fg < w*h/20 {
		t.Fatalf("fp32 found %d object pixels of %d: no salient object for this test", fg, w*h)
	}
	if iou < 0.95 || mean > 0.02 {
		t.Errorf("8-bit map against fp32: IoU %.4f (want >= 0.95), mean difference %.4f (want <= 0.02)", iou, mean)
	}
}

// TestPruneGraph: the graph with only its first output gives that output
// bit for bit; a name that is not an output is refused.
func TestPruneGraph(t *testing.T) {
	dir := installed(t)
	c := ISNetIMGLY()
	data, err := c.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PruneGraph(data, "no-such-output"); err == nil || !strings.Contains(err.Error(), "no-such-output") {
		t.Errorf("PruneGraph with an unknown output: err = %v", err)
	}
	pruned, err := PruneGraph(data, c.Output)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) >= len(data) {
		t.Errorf("pruned graph %d bytes, the whole %d: nothing removed", len(pruned), len(data))
	}
	// The pruned graph has one output and still runs (Load prunes the fp32
	// graph it makes; TestFloat32Model compares that with the file).
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c.Int8 = nil
	m, err := rt.Load(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// TestCalibrate calibrates IS-Net at 256 on one picture, then runs it in 8
// bits with those ranges: every tensor QuantizeGraph needs has a range,
// and the map agrees with fp32's. A range left out is refused.
func TestCalibrate(t *testing.T) {
	dir := installed(t)
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	c, err := ISNetIMGLY().At(256)
	if err != nil {
		t.Fatal(err)
	}
	c.Int8 = nil
	w, h := 160, 96
	rgb := scene(w, h)
	pic := func(int) ([]float32, int, int, error) { return rgb, w, h, nil }
	for _, bad := range []struct {
		pct float64
		n   int
	}{{0.5, 1}, {1.0001, 1}, {0.999, 0}} {
		if _, err := rt.Calibrate(ctx, c, bad.pct, bad.n, pic); err == nil {
			t.Errorf("Calibrate(percentile %g, %d pictures): no error", bad.pct, bad.n)
		}
	}
	if _, err := rt.Calibrate(ctx, c, 1, 1, func(int) ([]float32, int, int, error) { return rgb[:10], w, h, nil }); !errors.Is(err, ErrShape) {
		t.Errorf("Calibrate on a short picture: err = %v, want ErrShape", err)
	}
	rg, err := rt.Calibrate(ctx, c, 0.9999, 1, pic)
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if data, err = Float32Graph(data); err != nil {
		t.Fatal(err)
	}
	names, err := CalibrationTensors(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 100 || len(rg) != len(names) {
		t.Fatalf("%d ranges for %d tensors (want over 100, one each)", len(rg), len(names))
	}
	for _, n := range names {
		if r := rg[n]; !(r[1] > r[0]) {
			t.Errorf("range of %s: %v", n, r)
		}
	}
	// The built-in calibration names the same tensors.
	if got := len(ISNetIMGLY().Int8.Ranges); got != len(names) {
		t.Errorf("isnet-int8.json has %d ranges, the graph needs %d", got, len(names))
	}
	if !strings.HasPrefix(ISNetIMGLY().Int8.FittedBy, "vfx bench calibrate ") {
		t.Errorf("isnet-int8.json fitted_by %q: want the command", ISNetIMGLY().Int8.FittedBy)
	}
	miss := Ranges{}
	for k, v := range rg {
		miss[k] = v
	}
	delete(miss, names[0])
	if _, err := QuantizeGraph(data, miss); !errors.Is(err, ErrQuant) || !strings.Contains(err.Error(), names[0]) {
		t.Errorf("QuantizeGraph without the range of %s: err = %v, want ErrQuant naming it", names[0], err)
	}
	f, err := rt.Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c.Int8 = &Int8{Percentile: 0.9999, Ranges: rg}
	q, err := rt.Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	iou, mean, fg := agreement(segmentBoth(ctx, t, f, q, rgb, w, h))
	t.Logf("at 256, calibrated on the picture itself: fp32 %d object pixels, IoU %.4f, mean difference %.4f", fg, iou, mean)
	if fg == 0 || iou < 0.9 {
		t.Errorf("8-bit at 256 against fp32: IoU %.4f with %d object pixels", iou, fg)
	}
	// A card whose calibration does not fit its graph is refused at load.
	c.Int8 = &Int8{Ranges: Ranges{"x": {0, 1}}}
	if _, err := rt.Load(ctx, c); !errors.Is(err, ErrQuant) {
		t.Errorf("Load with a calibration of another graph: err = %v, want ErrQuant", err)
	}
}

// TestClippedRange: a share 1−pct of the values is left out at each end,
// to the histogram's resolution.
func TestClippedRange(t *testing.T) {
	v := make([]float32, 100000)
	for i := range v {
		v[i] = float32(i) / 1000 // 0 .. 99.999
	}
	lo, hi := clippedRange(v, 0.999)
	if math.Abs(float64(hi)-99.9) > 0.02 || math.Abs(float64(lo)-0.1) > 0.02 {
		t.Errorf("clippedRange at 0.999 = [%g, %g], want about [0.1, 99.9]", lo, hi)
	}
	lo, hi = clippedRange(v, 1)
	if lo != 0 || hi != 99.999 {
		t.Errorf("clippedRange at 1 = [%g, %g], want the whole range [0, 99.999]", lo, hi)
	}
	if lo, hi := clippedRange([]float32{3, 3, 3}, 0.9); lo != 3 || hi != 3 {
		t.Errorf("clippedRange of a constant = [%g, %g]", lo, hi)
	}
}
