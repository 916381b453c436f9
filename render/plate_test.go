package render

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// grainyRef is a w x h RGB24 reference with strong grain (±24 codes,
// uniform) over a dark-to-light ramp: plate matching adds grain to a
// clean subject over it.
func grainyRef(w, h int, seed uint64) *frame.HostFrame {
	f, _ := frame.New(frame.RGB24, w, h)
	rng := rand.New(rand.NewPCG(seed, 1))
	for y := range h {
		for x := range w {
			base := 20 + 200*float64(x)/float64(w)
			for c := range 3 {
				v := base + float64(c*10) + 48*(rng.Float64()-0.5)
				f.Planes[0][y*f.Strides[0]+3*x+c] = byte(math.Max(0, math.Min(255, math.Round(v))))
			}
		}
	}
	return f
}

// TestPlateGrainDeterministic: over a grainy plate the renderer adds
// grain to the subject; the same seed and inputs give the same bytes,
// frame after frame; the grain changes from frame to frame on the
// subject only (the background stays the plate); and another seed gives
// other grain.
func TestPlateGrainDeterministic(t *testing.T) {
	ctx := context.Background()
	d := newDev(t)
	const w, h = 128, 96
	p := Params{Prompt: "soft light from the left", Reference: grainyRef(w, h, 9), Seed: 4, Width: w, Height: h}
	src, alpha := hostScene(t, frame.YUV420P, w, h, w/2, h/2)
	run := func(p Params, n int) [][]byte {
		r, err := New(ctx, d, p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var outs [][]byte
		for range n {
			o, _ := frame.New(frame.YUV420P, w, h)
			o.ColorSpace = frame.BT709
			if err := r.FrameFromHost(ctx, o, src, alpha); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, o.Planes[0])
		}
		if _, _, g, _ := r.PlateMatch(); p.NoPlateMatch != (g == 0) {
			t.Fatalf("grain %v added with NoPlateMatch %v", g, p.NoPlateMatch)
		}
		return outs
	}
	a, b := run(p, 3), run(p, 3)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("frame %d differs between two runs with the same seed", i)
		}
	}
	// Frames 1 and 2 have the same input and the same temporal state
	// up to smoothing: with plate matching off they are (nearly) equal,
	// with it their subjects differ by the grain.
	off := run(Params{Prompt: p.Prompt, Reference: p.Reference, Seed: p.Seed, Width: w, Height: h, NoPlateMatch: true}, 3)
	var subj, subjDiff, bgDiff, offDiff int
	for y := range h {
		for x := range w {
			i := y*w + x
			av := alpha.Planes[0][y*alpha.Strides[0]+x]
			if off[1][i] != off[2][i] {
				offDiff++
			}
			switch {
			case av == 255:
				subj++
				if a[1][i] != a[2][i] {
					subjDiff++
				}
			case av == 0 && a[1][i] != a[2][i]:
				bgDiff++
			}
		}
	}
	if subjDiff < subj/4 || offDiff > subj/20 {
		t.Fatalf("frames 1 and 2: %d of %d subject pixels differ (%d with plate matching off)", subjDiff, subj, offDiff)
	}
	if bgDiff > 0 {
		t.Fatalf("%d background pixels differ between frames 1 and 2", bgDiff)
	}
	p2 := p
	p2.Seed = 5
	if c := run(p2, 1); bytes.Equal(c[0], a[0]) {
		t.Fatal("seeds 4 and 5 give the same frame")
	}
}

// TestPlateLateSubject: a job whose first frames have no subject (an empty
// matte) measures it on the first frame that shows it: grain is added
// from then on, and FrameFromHost still equals FrameHost.
func TestPlateLateSubject(t *testing.T) {
	ctx := context.Background()
	d := newDev(t)
	const w, h = 128, 96
	p := Params{Prompt: "soft light from the left", Reference: grainyRef(w, h, 9), Seed: 4, Width: w, Height: h}
	src, alpha := hostScene(t, frame.YUV420P, w, h, w/2, h/2)
	empty, _ := frame.New(frame.Gray8, w, h)
	a, err := New(ctx, d, p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(ctx, d, p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srcImg, aImg := upload(t, d, w, h, 3, nil), upload(t, d, w, h, 1, nil)
	for i, m := range []*frame.HostFrame{empty, empty, alpha, alpha} {
		want, _ := frame.New(frame.YUV420P, w, h)
		got, _ := frame.New(frame.YUV420P, w, h)
		want.ColorSpace, got.ColorSpace = frame.BT709, frame.BT709
		if err := d.Upload(srcImg, src); err != nil {
			t.Fatal(err)
		}
		if err := d.Upload(aImg, m); err != nil {
			t.Fatal(err)
		}
		if err := a.FrameHost(ctx, want, srcImg, aImg); err != nil {
			t.Fatal(err)
		}
		if err := b.FrameFromHost(ctx, got, src, m); err != nil {
			t.Fatal(err)
		}
		for k := range want.Planes {
			if !bytes.Equal(got.Planes[k], want.Planes[k]) {
				t.Fatalf("frame %d: plane %d differs between FrameFromHost and FrameHost", i, k)
			}
		}
		_, sub, g, _ := b.PlateMatch()
		if (i < 2) != (g == 0) || (i >= 2) != (sub.Pixels > 0) {
			t.Fatalf("frame %d: grain %v, subject pixels %d", i, g, sub.Pixels)
		}
	}
}

// trimCounter is the CPU device, counting TrimPool calls.
type trimCounter struct {
	*kernels.CPU
	n int
}

func (d *trimCounter) TrimPool() { d.n++; d.CPU.TrimPool() }

// TestPlateMeasureTrimsPool: the subject's measure composites full-size
// images once; the device's pool is trimmed right after, once per job,
// so that they do not stay live for the rest of the job.
func TestPlateMeasureTrimsPool(t *testing.T) {
	ctx := context.Background()
	d := &trimCounter{CPU: newDev(t)}
	const w, h = 128, 96
	src, alpha := hostScene(t, frame.YUV420P, w, h, w/2, h/2)
	for _, off := range []bool{false, true} {
		d.n = 0
		r, err := New(ctx, d, Params{Prompt: "soft light", Reference: grainyRef(w, h, 9), Seed: 4, Width: w, Height: h, NoPlateMatch: off})
		if err != nil {
			t.Fatal(err)
		}
		o, _ := frame.New(frame.YUV420P, w, h)
		for range 3 {
			if err := r.FrameFromHost(ctx, o, src, alpha); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		if want := map[bool]int{false: 1, true: 0}[off]; d.n != want {
			t.Errorf("NoPlateMatch %v: TrimPool called %d times, want %d", off, d.n, want)
		}
	}
}

// readFailDev is a CPU device whose ReadPixels and ReadPixelsTo of one
// image fail.
type readFailDev struct {
	*kernels.CPU
	fail kernels.Image
}

var errReadBack = errors.New("injected read-back failure")

func (d *readFailDev) ReadPixels(m kernels.Image) ([]float32, error) {
	if d.fail != nil && m == d.fail {
		return nil, errReadBack
	}
	return d.CPU.ReadPixels(m)
}

func (d *readFailDev) ReadPixelsTo(dst []float32, m kernels.Image) ([]float32, error) {
	if d.fail != nil && m == d.fail {
		return nil, errReadBack
	}
	return d.CPU.ReadPixelsTo(dst, m)
}

// TestPlateReadBackErrorFails: a device that fails to read back the
// first frame's images makes the frame fail with that error, named by
// the step (the highlight cap's read-back once dropped it and rendered
// the frame without the cap).
func TestPlateReadBackErrorFails(t *testing.T) {
	ctx := context.Background()
	d := &readFailDev{CPU: kernels.NewCPU(1)}
	defer d.Close()
	const w, h = 128, 96
	r, err := New(ctx, d, Params{Prompt: "soft light from the left", Reference: grainyRef(w, h, 9), Seed: 4, Width: w, Height: h})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, alpha := hostScene(t, frame.YUV420P, w, h, w/2, h/2)
	o, _ := frame.New(frame.YUV420P, w, h)
	o.ColorSpace = frame.BT709
	d.fail = r.low.luma // the luminance that the highlight cap reads back
	err = r.FrameFromHost(ctx, o, src, alpha)
	if !errors.Is(err, errReadBack) || !strings.Contains(err.Error(), "highlight cap") {
		t.Fatalf("got %v, want the injected error from the highlight cap's read-back", err)
	}
	d.fail = nil
	if err := r.FrameFromHost(ctx, o, src, alpha); err != nil {
		t.Fatalf("the next frame, with the device working again: %v", err)
	}
}
