package render

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// discRef is a w x h reference that is white where inside(distance from
// the centre) holds and black elsewhere.
func discRef(w, h int, inside func(d float64) bool) *frame.HostFrame {
	f, _ := frame.New(frame.RGB24, w, h)
	cx, cy := float64(w)/2, float64(h)/2
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if inside(math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)) {
				copy(f.Planes[0][3*(y*w+x):], []uint8{255, 255, 255})
			}
		}
	}
	return f
}

// wrapPass renders one frame's passes of s over ref and returns the wrap
// pass's largest luminance over the pixels where at(distance) holds.
func wrapPass(t *testing.T, s scene, ref *frame.HostFrame, at func(d float64) bool) float64 {
	t.Helper()
	d := newDev(t)
	r := newRenderer(t, d, Params{Reference: ref, Seed: 4, Width: s.w, Height: s.h})
	ps := framePasses(t, d, r, s, s.alpha)
	wp := read(t, d, ps.Wrap)
	n := s.w * s.h
	cx, cy := float64(s.w)/2, float64(s.h)/2
	var most float64
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			i := y*s.w + x
			if !at(math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)) {
				continue
			}
			l := 0.2126*float64(wp[i]) + 0.7152*float64(wp[n+i]) + 0.0722*float64(wp[2*n+i])
			most = math.Max(most, l)
		}
	}
	return most
}

// TestMaskedWrapHidesThePlateBehind: the light wrap comes from the plate
// outside the matte only (issue 31 item 3). A plate bright only behind
// the subject (a white disc 8 px inside its edge) gives no wrap light
// anywhere (main's whole-plate blur gave 0.0087: its
// Gaussian reaches 8 px); a plate bright only outside the subject gives
// it a lit inner edge.
func TestMaskedWrapHidesThePlateBehind(t *testing.T) {
	s := makeScene(192, 128, [3]float32{0.05, 0.05, 0.05})
	rad := 0.38 * float64(min(s.w, s.h))
	all := func(float64) bool { return true }
	hidden := discRef(s.w, s.h, func(d float64) bool { return d < rad-8 })
	if l := wrapPass(t, s, hidden, all); l > 1e-4 {
		t.Fatalf("plate bright behind the subject only: wrap light %.5f, want about 0", l)
	}
	outside := discRef(s.w, s.h, func(d float64) bool { return d > rad })
	edge := func(d float64) bool { return d < rad-1 && d > rad-5 }
	if l := wrapPass(t, s, outside, edge); !(l > 0.02) {
		t.Fatalf("plate bright outside the subject: wrap light at the inner edge %.5f, want > 0.02", l)
	}
}

// TestMaskedWrapFollowsThePlate: the wrap's light is made from the plate
// as the composite reads it, moved by the camera lock's offset (output
// pixels; CompositeLook.PlateX): a plate bright left of x = 10 lights
// nothing at the disc's left edge (the disc spans x 29.6 to 90.4 of the
// 120 px output; the wrap's light is made at half of it); read 40
// output px to the left (the plate's content moved right), it does.
func TestMaskedWrapFollowsThePlate(t *testing.T) {
	d := newDev(t)
	s := makeScene(120, 80, [3]float32{0.4, 0.4, 0.4})
	f := lowScene(t, d, s, false)
	if err := d.Ops().ResizeArea(f.alphaQ, f.alphaLow); err != nil {
		t.Fatal(err)
	}
	qw, qh := f.alphaQ.Width(), f.alphaQ.Height()
	plate := make([]float32, 3*qw*qh)
	for c := range 3 {
		for y := range qh {
			for x := range 5 { // output x < 10
				plate[c*qw*qh+y*qw+x] = 1
			}
		}
	}
	plan := testPlan("hard light from the left", false, false)
	c := newCompositeStage(d, d.Ops(), s.w, s.h, false)
	defer c.free()
	if err := c.setWrap(upload(t, d, qw, qh, 3, plate), s.w, s.h, plan); err != nil {
		t.Fatal(err)
	}
	if err := d.Ops().GaussianBlur(c.alphaBlur, f.alphaQ, c.wrapSigma); err != nil {
		t.Fatal(err)
	}
	// The disc's left edge, inside: its centre row, q-pixels 15 to 17
	// (output x 30 to 36).
	leftEdge := func(dx float32) float64 {
		if err := c.maskedWrap(f, dx, 0); err != nil {
			t.Fatal(err)
		}
		l := read(t, d, c.light)
		var m float64
		for x := 15; x <= 17; x++ {
			m = math.Max(m, float64(l[(qh/2)*qw+x]))
		}
		return m
	}
	still, moved := leftEdge(0), leftEdge(-40)
	if !(still < 0.01) || !(moved > 0.1) {
		t.Fatalf("light at the disc's left edge: still plate %.4f (want < 0.01), plate moved right 40 px %.4f (want > 0.1)", still, moved)
	}
	if again := leftEdge(0); again != still {
		t.Fatalf("still plate after a moved one: %v, want %v", again, still)
	}
}
