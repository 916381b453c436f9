package render

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// standingScene is a subject that stands: a textured block (x0..x1-1,
// y0..y1-1) over a plain source background, its matte hard-edged.
func standingScene(w, h, x0, x1, y0, y1 int) scene {
	s := scene{w: w, h: h, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
	n := w * h
	for y := range h {
		for x := range w {
			i := y*w + x
			var a float32
			if x >= x0 && x < x1 && y >= y0 && y < y1 {
				a = 1
			}
			tex := float32(1 + 0.1*math.Sin(float64(x)*0.6)*math.Cos(float64(y)*0.4))
			for c, v := range [3]float32{0.55, 0.45, 0.40} {
				s.src[c*n+i] = a*v*tex + (1-a)*0.2
			}
			s.alpha[i] = a
		}
	}
	return s
}

// placed returns s with its source and matte placed by p on the CPU.
func placed(t *testing.T, d *kernels.CPU, s scene, p kernels.Placement) scene {
	t.Helper()
	out := scene{w: s.w, h: s.h}
	for _, c := range []struct {
		in   []float32
		ch   int
		zero bool
		out  *[]float32
	}{{s.src, 3, false, &out.src}, {s.alpha, 1, true, &out.alpha}} {
		src, dst := upload(t, d, s.w, s.h, c.ch, c.in), upload(t, d, s.w, s.h, c.ch, nil)
		if err := d.Place(dst, src, p, c.zero); err != nil {
			t.Fatal(err)
		}
		*c.out = read(t, d, dst)
	}
	return out
}

// TestPlacementIsPlaceThenRender: a render with a placement is exactly
// the render, without one, of the source and matte placed first (Frame,
// FrameHost and FrameFromHost alike); the identity and the zero value are
// no placement at all.
func TestPlacementIsPlaceThenRender(t *testing.T) {
	d := newDev(t)
	ctx := context.Background()
	const w, h = 96, 64
	s := makeScene(w, h, [3]float32{0.6, 0.5, 0.4})
	pl := kernels.Placement{Scale: 1.7, X: 0.15, Y: -0.1}
	base := Params{Prompt: "warm key light from the left", Reference: flatRef(w, h, [3]uint8{90, 120, 80}), Seed: 3, Width: w, Height: h}
	withP := base
	withP.Placement = pl
	got, _ := render(t, d, withP, s, nil)
	want, _ := render(t, d, base, placed(t, d, s, pl), nil)
	if !equalPix(got, want) {
		t.Fatal("Frame with a placement differs from Frame of the placed inputs")
	}
	unplaced, _ := render(t, d, base, s, nil)
	if equalPix(got, unplaced) {
		t.Fatal("the placement changed nothing")
	}
	for _, p := range []kernels.Placement{{}, {Scale: 1}} {
		q := base
		q.Placement = p
		if o, r := render(t, d, q, s, nil); !equalPix(o, unplaced) || r.place != nil {
			t.Errorf("placement %+v: not the render without one", p)
		}
	}
	// The host path: FrameFromHost with the placement against FrameHost
	// of the placed uploads without one.
	hsrc, halpha := hostScene(t, frame.YUV420P, w, h, 40, 30)
	hostOut := func(p Params, placeFirst bool) []byte {
		r, err := New(ctx, d, p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		dst, _ := frame.New(frame.YUV420P, w, h)
		dst.ColorSpace = frame.BT709
		if !placeFirst {
			if err := r.FrameFromHost(ctx, dst, hsrc, halpha); err != nil {
				t.Fatal(err)
			}
			return dst.Planes[0]
		}
		si, ai := upload(t, d, w, h, 3, nil), upload(t, d, w, h, 1, nil)
		if err := d.Upload(si, hsrc); err != nil {
			t.Fatal(err)
		}
		if err := d.Upload(ai, halpha); err != nil {
			t.Fatal(err)
		}
		ps, pa := upload(t, d, w, h, 3, nil), upload(t, d, w, h, 1, nil)
		if d.Place(ps, si, pl, false) != nil || d.Place(pa, ai, pl, true) != nil {
			t.Fatal("place")
		}
		if err := r.FrameHost(ctx, dst, ps, pa); err != nil {
			t.Fatal(err)
		}
		return dst.Planes[0]
	}
	if a, b := hostOut(withP, false), hostOut(base, true); string(a) != string(b) {
		t.Error("FrameFromHost with a placement differs from FrameHost of the placed uploads")
	}
}

func equalPix(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestPlacementLimits: scale and offsets at their bounds are accepted,
// just beyond refused; fill mode refuses a placement.
func TestPlacementLimits(t *testing.T) {
	d := newDev(t)
	const w, h = 32, 24
	for _, c := range []struct {
		p  kernels.Placement
		ok bool
	}{
		{kernels.Placement{Scale: MinPlaceScale}, true},
		{kernels.Placement{Scale: math.Nextafter(MinPlaceScale, 0)}, false},
		{kernels.Placement{Scale: MaxPlaceScale}, true},
		{kernels.Placement{Scale: math.Nextafter(MaxPlaceScale, 5)}, false},
		{kernels.Placement{Scale: 1, X: -MaxPlaceOffset, Y: MaxPlaceOffset}, true},
		{kernels.Placement{Scale: 1, X: math.Nextafter(MaxPlaceOffset, 2)}, false},
		{kernels.Placement{Scale: 1, Y: math.Nextafter(-MaxPlaceOffset, -2)}, false},
		{kernels.Placement{Scale: 1, X: math.NaN()}, false},
		{kernels.Placement{Scale: 0, X: 0.5}, false},
	} {
		r, err := New(context.Background(), d, Params{Prompt: "soft light", Width: w, Height: h, Placement: c.p})
		if (err == nil) != c.ok {
			t.Errorf("placement %+v: error %v, want ok %v", c.p, err, c.ok)
		}
		r.Close()
	}
	_, err := New(context.Background(), d, Params{Prompt: "soft light", Width: w, Height: h, Fill: true,
		Placement: kernels.Placement{Scale: 2}})
	if err == nil || errors.Is(err, kernels.ErrShape) {
		t.Errorf("fill with a placement: %v, want a refusal", err)
	}
}

// shadowBox measures a render over a flat plate (lum plate): the weighted
// centroid of the darkening outside the matte (alpha < 0.01), and the
// mean darkening ratio in the 12 rows under the subject's lowest row
// within its columns.
func shadowBox(s scene, out []float32, plate float64) (cx, cy, contact float64) {
	n := s.w * s.h
	lum := func(i int) float64 {
		return 0.2126*float64(out[i]) + 0.7152*float64(out[n+i]) + 0.0722*float64(out[2*n+i])
	}
	var sw, sx, sy float64
	x0, x1, bottom := s.w, -1, -1
	for y := range s.h {
		for x := range s.w {
			i := y*s.w + x
			if s.alpha[i] >= 0.5 {
				x0, x1, bottom = min(x0, x), max(x1, x), max(bottom, y)
				continue
			}
			if s.alpha[i] > 0.01 {
				continue
			}
			if dk := plate - lum(i); dk > 0.02*plate {
				sw, sx, sy = sw+dk, sx+dk*float64(x), sy+dk*float64(y)
			}
		}
	}
	var sum float64
	var cnt int
	for y := bottom + 1; y <= min(bottom+12, s.h-1); y++ {
		for x := x0; x <= x1; x++ {
			sum += lum(y*s.w+x) / plate
			cnt++
		}
	}
	return sx / sw, sy / sw, sum / float64(max(cnt, 1))
}

// TestPlacementShadowFollows: the cast and contact shadows are made from
// the placed matte, so they move with the subject: moved by (16, 16) px,
// the shadow's centroid moves by (16, 16) within 1 px; scaled by 1.5 the
// ground under the new lowest row is as dark as under the unplaced one
// (the contact shadow is there) within 0.05.
func TestPlacementShadowFollows(t *testing.T) {
	d := newDev(t)
	const w, h = 256, 128
	s := standingScene(w, h, 150, 166, 30, 70)
	ref := flatRef(w, h, [3]uint8{150, 150, 150})
	base := Params{Prompt: "sunset, warm key light from the right", Reference: ref, Seed: 1, Width: w, Height: h, NoPlateMatch: true, NoFocusMatch: true}
	out0, _ := render(t, d, base, s, nil)
	plate := 0.0
	{
		n := w * h
		plate = 0.2126*float64(out0[n-1]) + 0.7152*float64(out0[2*n-1]) + 0.0722*float64(out0[3*n-1])
	}
	cx0, cy0, c0 := shadowBox(s, out0, plate)
	if c0 > 0.9 {
		t.Fatalf("no contact shadow to follow: ground under the subject %.3f of the plate", c0)
	}
	for _, p := range []kernels.Placement{{Scale: 1, X: 0.0625, Y: 0.125}, {Scale: 1.5, X: -0.1, Y: 0.05}} {
		q := base
		q.Placement = p
		out, _ := render(t, d, q, s, nil)
		ps := placed(t, d, s, p)
		cx, cy, c := shadowBox(ps, out, plate)
		t.Logf("placement %+v: shadow centroid (%.2f, %.2f) from (%.2f, %.2f); ground under the subject %.3f (unplaced %.3f)", p, cx, cy, cx0, cy0, c, c0)
		if p.Scale == 1 && (math.Abs(cx-cx0-16) > 1 || math.Abs(cy-cy0-16) > 1) {
			t.Errorf("moved by (16, 16): shadow centroid moved by (%.2f, %.2f)", cx-cx0, cy-cy0)
		}
		if math.Abs(c-c0) > 0.05 {
			t.Errorf("placement %+v: ground under the subject %.3f of the plate, unplaced %.3f", p, c, c0)
		}
	}
}
