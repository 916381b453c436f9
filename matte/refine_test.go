package matte

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

func TestSoftBand(t *testing.T) {
	// 6x3: background, a soft pixel, then the object's interior.
	m := []float32{
		0, 0, 0, 0, 1, 1,
		0, 0, 0.5, 1, 1, 1,
		0, 0, 0, 1, 1, 1,
	}
	got := softBand(nil, m, 6, 3)
	want := []float32{
		0, 1, 1, 1, 1, 0,
		0, 1, 1, 1, 1, 0,
		0, 1, 1, 1, 0, 0,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("softBand pixel (%d,%d) = %v, want %v; all %v", i%6, i/6, got[i], want[i], got)
		}
	}
	// A constant matte has no band at all.
	for _, c := range []float32{0, 1} {
		flat := []float32{c, c, c, c}
		for i, v := range softBand(nil, flat, 2, 2) {
			if v != 0 {
				t.Fatalf("constant %v: band at %d", c, i)
			}
		}
	}
}

// TestRefineKeepsInteriorOpaque refines a hard-edged disk matte over a
// frame with strong texture inside and outside the disk: the guided
// filter must shape the edge but leave the interior exactly opaque and
// the far background exactly clear (before the band, a textured interior
// near the edge came out half-transparent).
func TestRefineKeepsInteriorOpaque(t *testing.T) {
	dev := kernels.NewCPU(2)
	const lw, lh, scale = 32, 24, 4
	w, h := lw*scale, lh*scale
	low := make([]float32, lw*lh)
	for y := range lh {
		for x := range lw {
			if math.Hypot(float64(x)-16, float64(y)-12) < 8 {
				low[y*lw+x] = 1
			}
		}
	}
	src := make([]float32, 3*w*h)
	for y := range h {
		for x := range w {
			v := float32(0.2)
			if (x/3+y/2)%2 == 0 { // fine checker texture everywhere
				v = 0.8
			}
			for c := range 3 {
				src[c*w*h+y*w+x] = v
			}
		}
	}
	out, _, _ := refineOnce(t, dev, w, h, lw, lh, low, src)
	var soft int
	for y := range h {
		for x := range w {
			d := math.Hypot((float64(x)+0.5)/scale-16.5, (float64(y)+0.5)/scale-12.5)
			v := out[y*w+x]
			switch {
			case d < 5: // two flow pixels and more inside the contour
				if v < 0.9999 {
					t.Fatalf("interior pixel (%d,%d) at %.1f flow px from the centre: alpha %v", x, y, d, v)
				}
			case d > 11:
				if v > 1e-4 {
					t.Fatalf("background pixel (%d,%d): alpha %v", x, y, v)
				}
			case v > 0.05 && v < 0.95:
				soft++
			}
		}
	}
	if soft == 0 {
		t.Fatal("no soft pixel at the edge: the filter did not act on the band")
	}
}

// TestRefineFollowsHueEdge refines a matte whose flow-size edge is a
// blurred ramp over a frame split by an edge of hue at equal luminance
// (red against green): the colour guide snaps the matte to that edge,
// which a luma guide cannot see (checked with the luma-guided filter on
// the same inputs).
// The hue edge's case: a lw x lh flow-size matte ramping from 1 to 0
// around output column hueEdge, and a w x h frame red left of that column
// and green right of it, of the same Rec.709 luminance (0.364).
const (
	hueLW, hueLH, hueScale = 16, 8, 4
	hueEdge                = 30 // output column where the subject (red) ends
)

const hueW, hueH = hueLW * hueScale, hueLH * hueScale

// refineHueEdge refines the hue edge's case with a new refiner (see
// refineOnce).
func refineHueEdge(t *testing.T, dev kernels.Device) (out []float32, srcIm, lowIm kernels.Image) {
	t.Helper()
	low, src := hueEdgeCase()
	return refineOnce(t, dev, hueW, hueH, hueLW, hueLH, low, src)
}

func hueEdgeCase() (low, src []float32) {
	w, h := hueW, hueH
	low = make([]float32, hueLW*hueLH)
	for y := range hueLH {
		for x := range hueLW {
			// A soft ramp 1 -> 0 over three flow pixels around the edge.
			low[y*hueLW+x] = float32(min(max((float64(hueEdge)/hueScale+1.5-float64(x)-0.5)/3, 0), 1))
		}
	}
	src = make([]float32, 3*w*h)
	n := w * h
	for i := range n {
		if i%w < hueEdge {
			src[i], src[n+i], src[2*n+i] = 0.6, 0.3, 0.3
		} else {
			src[i], src[n+i], src[2*n+i] = 0.3, 0.389, 0.3
		}
	}
	return low, src
}

func TestRefineFollowsHueEdge(t *testing.T) {
	dev := kernels.NewCPU(2)
	const w, h, lw, edge = hueW, hueH, hueLW, hueEdge
	out, srcIm, lowIm := refineHueEdge(t, dev)
	row := h / 2 * w
	in, outside := out[row+edge-2], out[row+edge+1]
	// The ramp falls by 0.25 over these 3 px; the edge's step is
	// sharpened to at least half of the whole range.
	if in-outside < 0.5 {
		t.Errorf("alpha 2 px inside the hue edge %.3f, 1 px outside %.3f: a step of %.3f, want >= 0.5", in, outside, in-outside)
	}
	// The luma guide (the refiner before session 21: the filter at the
	// output size, a window of two flow pixels) sees a flat frame: the
	// ramp stays soft there.
	luma, _ := dev.NewImage(w, h, 1)
	up, _ := dev.NewImage(w, h, 1)
	ops := dev.Ops()
	if err := ops.Luma(luma, srcIm); err != nil {
		t.Fatal(err)
	}
	if err := ops.ResizeBilinear(up, lowIm); err != nil {
		t.Fatal(err)
	}
	if err := ops.GuidedFilter(up, luma, up, max(2, 2*w/lw), refineEps); err != nil {
		t.Fatal(err)
	}
	lg, _ := dev.ReadPixels(up)
	if lg[row+edge-2]-lg[row+edge+1] >= 0.3 {
		t.Errorf("the luma-guided filter also gave a step (%.3f, %.3f): the test does not tell the guides apart", lg[row+edge-2], lg[row+edge+1])
	}
	t.Logf("2 px inside / 1 px outside: colour guide %.3f / %.3f, luma guide %.3f / %.3f", in, outside, lg[row+edge-2], lg[row+edge+1])
}

// TestGapDecide: where the shape carried forwards and the one carried back
// disagree, the keyframe's colours decide; where they agree, the blend
// stands.
func TestGapDecide(t *testing.T) {
	const bins = 16
	cells := bins * bins * bins
	fg, bg := make([]float64, cells), make([]float64, cells)
	red := kernels.ColourCell(0.9, 0.1, 0.1, bins)
	green := kernels.ColourCell(0.1, 0.8, 0.1, bins)
	fg[red], bg[green] = 1000, 1000
	o := DefaultSelectOptions()
	g := &gapFill{p: &propagator{o: o, table: colourTable(fg, bg)}}
	// Four pixels: red held forwards only, green held back only, green
	// held by both at 0.7, red held by neither.
	px := []float32{
		0.9, 0.1, 0.1, 0.9, // r
		0.1, 0.8, 0.8, 0.1, // g
		0.1, 0.1, 0.1, 0.1, // b
	}
	fwd := []float32{1, 0, 0.7, 0}
	bwd := []float32{0, 1, 0.7, 0}
	m := []float32{0.5, 0.5, 0.7, 0}
	g.decide(m, fwd, bwd, px)
	if m[0] < 0.9 {
		t.Errorf("red pixel held forwards only: %v, want the object (> 0.9)", m[0])
	}
	if m[1] > 0.1 {
		t.Errorf("green pixel held back only: %v, want the background (< 0.1)", m[1])
	}
	if m[2] != 0.7 {
		t.Errorf("pixel both shapes hold: %v, want the blend 0.7 untouched", m[2])
	}
	if m[3] != 0 {
		t.Errorf("pixel neither holds: %v, want 0", m[3])
	}
}

// refineOnce uploads the flow-size matte low (lw x lh) and the linear RGB
// frame src (w x h), refines them with a new Refiner and returns the
// refined matte with the uploaded images.
func refineOnce(t *testing.T, dev kernels.Device, w, h, lw, lh int, low, src []float32) (out []float32, srcIm, lowIm kernels.Image) {
	t.Helper()
	lowIm, _ = dev.NewImage(lw, lh, 1)
	srcIm, _ = dev.NewImage(w, h, 3)
	dst, _ := dev.NewImage(w, h, 1)
	if err := dev.WritePixels(lowIm, low); err != nil {
		t.Fatal(err)
	}
	if err := dev.WritePixels(srcIm, src); err != nil {
		t.Fatal(err)
	}
	r, err := NewRefiner(dev, w, h, lw, lh)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Refine(dst, srcIm, lowIm); err != nil {
		t.Fatal(err)
	}
	out, err = dev.ReadPixels(dst)
	if err != nil {
		t.Fatal(err)
	}
	return out, srcIm, lowIm
}

// TestRefinerSetFilter: SetFilter(0, 0) keeps the defaults (the same
// matte bit for bit); a large regulariser keeps the ramp soft where the
// default sharpens it at the hue edge of TestRefineFollowsHueEdge.
func TestRefinerSetFilter(t *testing.T) {
	dev := kernels.NewCPU(2)
	const w, h, lw, lh, edge = hueW, hueH, hueLW, hueLH, hueEdge
	base, srcIm, lowIm := refineHueEdge(t, dev)
	run := func(radius int, eps float32) []float32 {
		r, err := NewRefiner(dev, w, h, lw, lh)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.SetFilter(radius, eps)
		dst, _ := dev.NewImage(w, h, 1)
		defer dev.Free(dst)
		if err := r.Refine(dst, srcIm, lowIm); err != nil {
			t.Fatal(err)
		}
		out, err := dev.ReadPixels(dst)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	same := run(0, 0)
	for i := range base {
		if math.Float32bits(same[i]) != math.Float32bits(base[i]) {
			t.Fatalf("SetFilter(0, 0) changed pixel %d: %v, want %v", i, same[i], base[i])
		}
	}
	soft := run(0, 10)
	row := h / 2 * w
	if step := soft[row+edge-2] - soft[row+edge+1]; step >= 0.5 {
		t.Errorf("eps 10: a step of %.3f at the hue edge, want the ramp left soft (< 0.5)", step)
	}
}
