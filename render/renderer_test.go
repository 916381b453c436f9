package render

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
)

func newDev(t testing.TB) *kernels.CPU {
	t.Helper()
	d := kernels.NewCPU(2)
	t.Cleanup(func() { d.Close() })
	return d
}

// scene is a synthetic test input: a textured, evenly lit disc (the
// subject) on a plain background, and its matte.
type scene struct {
	w, h  int
	src   []float32 // planar linear RGB
	alpha []float32
}

func makeScene(w, h int, subject [3]float32) scene {
	s := scene{w: w, h: h, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
	n := w * h
	cx, cy, rad := float64(w)/2, float64(h)/2, 0.38*float64(min(w, h))
	bgc := [3]float32{0.10, 0.12, 0.10}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			d := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)
			a := float32(math.Min(1, math.Max(0, rad-d+0.5)))
			tex := float32(1 + 0.08*math.Sin(float64(x)*0.7)*math.Sin(float64(y)*0.9))
			i := y*w + x
			for c := 0; c < 3; c++ {
				s.src[c*n+i] = a*subject[c]*tex + (1-a)*bgc[c]
			}
			s.alpha[i] = a
		}
	}
	return s
}

func upload(t testing.TB, d kernels.Device, w, h, c int, data []float32) kernels.Image {
	t.Helper()
	img, err := d.NewImage(w, h, c)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		if err := d.WritePixels(img, data); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

func read(t testing.TB, d kernels.Device, img kernels.Image) []float32 {
	t.Helper()
	p, err := d.ReadPixels(img)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func flatRef(w, h int, c [3]uint8) *frame.HostFrame {
	f, _ := frame.New(frame.RGB24, w, h)
	for i := 0; i < w*h; i++ {
		copy(f.Planes[0][3*i:], c[:])
	}
	return f
}

// render runs one frame and returns the output pixels and the renderer.
func render(t testing.TB, d kernels.Device, p Params, s scene, tweak func(*Renderer)) ([]float32, *Renderer) {
	t.Helper()
	ctx := context.Background()
	r, err := New(ctx, d, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if tweak != nil {
		tweak(r)
	}
	src := upload(t, d, s.w, s.h, 3, s.src)
	var alpha kernels.Image
	if !p.Fill {
		alpha = upload(t, d, s.w, s.h, 1, s.alpha)
	}
	dst := upload(t, d, s.w, s.h, 3, nil)
	if err := r.Frame(ctx, dst, src, alpha); err != nil {
		t.Fatal(err)
	}
	out := read(t, d, dst)
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
			t.Fatalf("output[%d] = %v", i, v)
		}
	}
	return out, r
}

// regionMean is the mean Rec.709 luminance (or channel c >= 0) of the
// pixels where keep(x, y) and alpha >= 0.99.
func regionMean(s scene, px []float32, c int, keep func(x, y int) bool) float64 {
	n := s.w * s.h
	var sum float64
	var cnt int
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			i := y*s.w + x
			if s.alpha[i] < 0.99 || !keep(x, y) {
				continue
			}
			var v float64
			if c >= 0 {
				v = float64(px[c*n+i])
			} else {
				v = 0.2126*float64(px[i]) + 0.7152*float64(px[n+i]) + 0.0722*float64(px[2*n+i])
			}
			sum += v
			cnt++
		}
	}
	return sum / float64(max(cnt, 1))
}

func TestDeterministic(t *testing.T) {
	d := newDev(t)
	s := makeScene(160, 96, [3]float32{0.35, 0.3, 0.28})
	p := Params{Prompt: "sunset beach, warm key light from the left", Seed: 7, Width: s.w, Height: s.h}
	a, ra := render(t, d, p, s, nil)
	b, rb := render(t, d, p, s, nil)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("pixel %d differs: %v vs %v", i, a[i], b[i])
		}
	}
	// A different seed gives a different backdrop.
	p.Seed = 8
	_, rc := render(t, d, p, s, nil)
	bgA, bgB, bgC := read(t, d, ra.comp.bg), read(t, d, rb.comp.bg), read(t, d, rc.comp.bg)
	same, diff := 0, 0
	for i := range bgA {
		if bgA[i] != bgB[i] {
			t.Fatalf("same seed: backdrop pixel %d differs", i)
		}
		if math.Abs(float64(bgA[i]-bgC[i])) > 0.01 {
			diff++
		} else {
			same++
		}
	}
	if diff < len(bgA)/10 {
		t.Fatalf("seeds 7 and 8: only %d of %d backdrop values differ", diff, len(bgA))
	}
}

func TestAlphaZeroIsBackground(t *testing.T) {
	d := newDev(t)
	s := makeScene(128, 80, [3]float32{0.4, 0.3, 0.2})
	clear(s.alpha)
	for _, prompt := range []string{"", "neon city at night, magenta rim light from behind"} {
		out, r := render(t, d, Params{Prompt: prompt, Seed: 3, Width: s.w, Height: s.h}, s, nil)
		bg := read(t, d, r.comp.bg)
		for i := range out {
			if math.Abs(float64(out[i]-bg[i])) > 1e-5 {
				t.Fatalf("%q: pixel %d = %v, background %v", prompt, i, out[i], bg[i])
			}
		}
	}
}

func TestNeutralKeepsSource(t *testing.T) {
	// The whole frame is subject (alpha 1), the prompt is empty and the
	// reference is a flat grey as bright as the subject: the relight gain
	// and the harmonisation are near 1.
	d := newDev(t)
	s := makeScene(160, 96, [3]float32{0.21, 0.21, 0.21})
	n := s.w * s.h
	for i := range s.alpha {
		s.alpha[i] = 1
		tex := float32(1 + 0.08*math.Sin(float64(i%s.w)*0.7)*math.Sin(float64(i/s.w)*0.9))
		for c := 0; c < 3; c++ {
			s.src[c*n+i] = 0.21 * tex
		}
	}
	// Mean luminance of the source, as an sRGB code value.
	var mean float64
	for _, v := range s.src {
		mean += float64(v)
	}
	mean /= float64(len(s.src))
	code := uint8(math.Round(float64(colour.LinearToSRGB(float32(mean))) * 255))
	ref := flatRef(64, 48, [3]uint8{code, code, code})
	out, _ := render(t, d, Params{Reference: ref, Seed: 1, Width: s.w, Height: s.h}, s, nil)
	// Tolerance: mean absolute difference below 0.002 and every pixel
	// within 2% (relative) of the source, in linear light.
	var sum, worst float64
	for i := range out {
		diff := math.Abs(float64(out[i] - s.src[i]))
		sum += diff
		worst = math.Max(worst, diff/math.Max(float64(s.src[i]), 0.02))
	}
	if m := sum / float64(len(out)); m > 0.002 || worst > 0.02 {
		t.Fatalf("mean abs diff %.5f (max 0.002), worst relative %.4f (max 0.02)", m, worst)
	}
}

func TestLightFromLeft(t *testing.T) {
	d := newDev(t)
	s := makeScene(192, 128, [3]float32{0.3, 0.3, 0.3})
	out, _ := render(t, d, Params{Prompt: "light from the left", Seed: 5, Width: s.w, Height: s.h}, s, nil)
	left := func(x, y int) bool { return x < s.w/2 }
	right := func(x, y int) bool { return x >= s.w/2 }
	srcRatio := regionMean(s, s.src, -1, left) / regionMean(s, s.src, -1, right)
	outRatio := regionMean(s, out, -1, left) / regionMean(s, out, -1, right)
	if !(outRatio > srcRatio*1.2) {
		t.Fatalf("left/right luminance ratio %.3f, source %.3f: want at least 20%% more", outRatio, srcRatio)
	}
	// The exposure follows the scene: the subject keeps its relation to
	// its surroundings (subject over background luminance within 25% of
	// the source's).
	all := func(x, y int) bool { return true }
	bgMean := func(px []float32) float64 {
		n := s.w * s.h
		var sum, cnt float64
		for i := 0; i < n; i++ {
			if s.alpha[i] == 0 {
				sum += 0.2126*float64(px[i]) + 0.7152*float64(px[n+i]) + 0.0722*float64(px[2*n+i])
				cnt++
			}
		}
		return sum / cnt
	}
	r0 := regionMean(s, s.src, -1, all) / bgMean(s.src)
	if r1 := regionMean(s, out, -1, all) / bgMean(out); math.Abs(r1/r0-1) > 0.25 {
		t.Fatalf("subject/background luminance %.3f, source %.3f", r1, r0)
	}
	// And the other way round.
	out, _ = render(t, d, Params{Prompt: "hard light from the right", Seed: 5, Width: s.w, Height: s.h}, s, nil)
	if r := regionMean(s, out, -1, left) / regionMean(s, out, -1, right); !(r < srcRatio/1.2) {
		t.Fatalf("light from the right: left/right ratio %.3f, source %.3f", r, srcRatio)
	}
}

func TestRedReferenceShiftsColour(t *testing.T) {
	d := newDev(t)
	s := makeScene(160, 96, [3]float32{0.3, 0.3, 0.3})
	ref := flatRef(80, 60, [3]uint8{200, 40, 35})
	out, _ := render(t, d, Params{Reference: ref, Seed: 2, Width: s.w, Height: s.h}, s, nil)
	all := func(x, y int) bool { return true }
	rg0 := regionMean(s, s.src, 0, all) / regionMean(s, s.src, 1, all)
	rg := regionMean(s, out, 0, all) / regionMean(s, out, 1, all)
	if !(rg > rg0*1.15) {
		t.Fatalf("subject R/G %.3f, source %.3f: want a shift toward red", rg, rg0)
	}
	// Toward red, not into it: the green channel keeps most of its level.
	if g, g0 := regionMean(s, out, 1, all), regionMean(s, s.src, 1, all); g < 0.4*g0 {
		t.Fatalf("green fell from %.4f to %.4f", g0, g)
	}
}

func TestLightWrap(t *testing.T) {
	d := newDev(t)
	s := makeScene(192, 128, [3]float32{0.05, 0.05, 0.05})
	ref := flatRef(64, 64, [3]uint8{250, 250, 250})
	p := Params{Reference: ref, Seed: 4, Width: s.w, Height: s.h}
	with, r := render(t, d, p, s, nil)
	if r.comp.wrap <= 0 {
		t.Fatalf("default wrap %v", r.comp.wrap)
	}
	without, _ := render(t, d, p, s, func(r *Renderer) { r.comp.wrap = 0 })
	// The inner edge: fully inside the matte, within 4 px of its boundary.
	cx, cy, rad := float64(s.w)/2, float64(s.h)/2, 0.38*float64(min(s.w, s.h))
	edge := func(x, y int) bool {
		dd := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)
		return dd < rad-1 && dd > rad-5
	}
	centre := func(x, y int) bool {
		return math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy) < rad*0.3
	}
	e1, e0 := regionMean(s, with, -1, edge), regionMean(s, without, -1, edge)
	if !(e1 > e0*1.1+0.005) {
		t.Fatalf("inner edge luminance with wrap %.4f, without %.4f", e1, e0)
	}
	if c1, c0 := regionMean(s, with, -1, centre), regionMean(s, without, -1, centre); math.Abs(c1-c0) > 1e-3 {
		t.Fatalf("wrap changed the centre: %.4f vs %.4f", c1, c0)
	}
}

func TestFillMode(t *testing.T) {
	d := newDev(t)
	s := makeScene(160, 96, [3]float32{0.3, 0.3, 0.3})
	p := Params{Prompt: "warm light from the left", Seed: 9, Width: s.w, Height: s.h, Fill: true}
	out, r := render(t, d, p, s, nil)
	if r.comp.bg != nil || r.comp.plateQ != nil {
		t.Fatal("fill mode allocated a background or the light wrap's plate")
	}
	n := s.w * s.h
	var lsum, rsum, l0, r0 float64
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			i := y*s.w + x
			if x < s.w/4 {
				lsum += float64(out[n+i])
				l0 += float64(s.src[n+i])
			} else if x >= 3*s.w/4 {
				rsum += float64(out[n+i])
				r0 += float64(s.src[n+i])
			}
		}
	}
	if !(lsum/rsum > 1.05*l0/r0) {
		t.Fatalf("fill: left/right %.3f, source %.3f", lsum/rsum, l0/r0)
	}
	// Warm: red rises relative to blue.
	all := func(x, y int) bool { return true }
	s1 := s
	s1.alpha = make([]float32, n)
	for i := range s1.alpha {
		s1.alpha[i] = 1
	}
	if rb, rb0 := regionMean(s1, out, 0, all)/regionMean(s1, out, 2, all), regionMean(s1, s.src, 0, all)/regionMean(s1, s.src, 2, all); !(rb > rb0*1.03) {
		t.Fatalf("fill warm: R/B %.3f, source %.3f", rb, rb0)
	}
}

func TestTemporalStable(t *testing.T) {
	// The same frame over and over gives the same output (the smoothed
	// state does not drift).
	d := newDev(t)
	s := makeScene(128, 96, [3]float32{0.3, 0.25, 0.2})
	ctx := context.Background()
	r, err := New(ctx, d, Params{Prompt: "cool rim light from behind, dramatic", Seed: 11, Width: s.w, Height: s.h})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, alpha, dst := upload(t, d, s.w, s.h, 3, s.src), upload(t, d, s.w, s.h, 1, s.alpha), upload(t, d, s.w, s.h, 3, nil)
	var first []float32
	for f := 0; f < 4; f++ {
		if err := r.Frame(ctx, dst, src, alpha); err != nil {
			t.Fatal(err)
		}
		out := read(t, d, dst)
		if first == nil {
			first = out
			continue
		}
		for i := range out {
			if math.Abs(float64(out[i]-first[i])) > 1e-4 {
				t.Fatalf("frame %d pixel %d: %v, first frame %v", f, i, out[i], first[i])
			}
		}
	}
}

func TestExtremeInputs(t *testing.T) {
	d := newDev(t)
	cases := []struct {
		name string
		w, h int
		subj [3]float32
	}{
		{"black", 64, 48, [3]float32{0, 0, 0}},
		{"white", 64, 48, [3]float32{1, 1, 1}},
		{"saturated", 64, 48, [3]float32{1, 0, 0}},
		{"tiny", 3, 2, [3]float32{0.5, 0.5, 0.5}},
		{"one pixel", 1, 1, [3]float32{0.5, 0.5, 0.5}},
		{"tall", 20, 200, [3]float32{0.2, 0.3, 0.4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := makeScene(tc.w, tc.h, tc.subj)
			for _, fill := range []bool{false, true} {
				for _, prompt := range []string{"", "hard red spotlight from below, dark", "bright sunny beach at noon"} {
					out, _ := render(t, d, Params{Prompt: prompt, Seed: 1, Width: tc.w, Height: tc.h, Fill: fill}, s, nil)
					for _, v := range out {
						if v > 1.5 {
							t.Fatalf("fill=%v %q: value %v", fill, prompt, v)
						}
					}
				}
			}
		})
	}
}

func TestScenesAndTimes(t *testing.T) {
	// Every scene and time of day paints a finite backdrop in range that
	// depends on the seed.
	d := newDev(t)
	s := makeScene(96, 64, [3]float32{0.3, 0.3, 0.3})
	prompts := []string{
		"studio", "exterior", "beach", "forest", "city", "desert", "snow", "office", "neon",
		"sunrise", "noon", "golden hour", "sunset", "dusk", "night", "overcast",
		"city at night", "forest at sunset", "teal and orange studio", "dark low-key studio", "bright high-key studio",
	}
	for _, prompt := range prompts {
		_, r := render(t, d, Params{Prompt: prompt, Seed: 1, Width: s.w, Height: s.h}, s, nil)
		bg := read(t, d, r.comp.bg)
		var sum float64
		for _, v := range bg {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("%q: backdrop value %v", prompt, v)
			}
			sum += float64(v)
		}
		if sum == 0 {
			t.Fatalf("%q: black backdrop", prompt)
		}
	}
}

func TestErrors(t *testing.T) {
	d := newDev(t)
	ctx := context.Background()
	if _, err := New(ctx, nil, Params{Width: 8, Height: 8}); err == nil {
		t.Error("nil device: no error")
	}
	if _, err := New(ctx, d, Params{Width: 0, Height: 8}); err == nil {
		t.Error("zero width: no error")
	}
	gray, _ := frame.New(frame.Gray8, 8, 8)
	if _, err := New(ctx, d, Params{Width: 8, Height: 8, Reference: gray}); err == nil {
		t.Error("gray reference: no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := New(cancelled, d, Params{Width: 8, Height: 8}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled New: %v", err)
	}

	r, err := New(ctx, d, Params{Width: 16, Height: 8})
	if err != nil {
		t.Fatal(err)
	}
	src, dst, alpha := upload(t, d, 16, 8, 3, nil), upload(t, d, 16, 8, 3, nil), upload(t, d, 16, 8, 1, nil)
	small := upload(t, d, 8, 8, 3, nil)
	if err := r.Frame(ctx, small, src, alpha); !errors.Is(err, kernels.ErrShape) {
		t.Errorf("wrong dst size: %v", err)
	}
	if err := r.Frame(ctx, dst, src, nil); !errors.Is(err, kernels.ErrShape) {
		t.Errorf("nil alpha: %v", err)
	}
	if err := r.Frame(ctx, dst, src, src); !errors.Is(err, kernels.ErrShape) {
		t.Errorf("3-channel alpha: %v", err)
	}
	if err := r.Frame(cancelled, dst, src, alpha); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Frame: %v", err)
	}
	if err := r.Frame(ctx, dst, src, alpha); err != nil {
		t.Errorf("Frame: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := r.Frame(ctx, dst, src, alpha); err == nil {
		t.Error("Frame after Close: no error")
	}
}

func TestTemporalMovingSubject(t *testing.T) {
	// A subject moving 2 px per frame: its mean output luminance moves
	// smoothly (under 3% from frame to frame).
	d := newDev(t)
	const w, h = 160, 96
	ctx := context.Background()
	r, err := New(ctx, d, Params{Prompt: "warm key light from the top left, forest", Seed: 12, Width: w, Height: h})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	base := makeScene(w+40, h, [3]float32{0.3, 0.28, 0.25})
	src, alpha, dst := upload(t, d, w, h, 3, nil), upload(t, d, w, h, 1, nil), upload(t, d, w, h, 3, nil)
	prev := -1.0
	for f := 0; f < 10; f++ {
		// Crop a window that slides over the wider scene.
		s := scene{w: w, h: h, src: make([]float32, 3*w*h), alpha: make([]float32, w*h)}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				j := y*base.w + x + 2*f
				s.alpha[y*w+x] = base.alpha[j]
				for c := 0; c < 3; c++ {
					s.src[c*w*h+y*w+x] = base.src[c*base.w*h+j]
				}
			}
		}
		if err := d.WritePixels(src, s.src); err != nil {
			t.Fatal(err)
		}
		if err := d.WritePixels(alpha, s.alpha); err != nil {
			t.Fatal(err)
		}
		if err := r.Frame(ctx, dst, src, alpha); err != nil {
			t.Fatal(err)
		}
		m := regionMean(s, read(t, d, dst), -1, func(x, y int) bool { return true })
		if prev > 0 && math.Abs(m/prev-1) > 0.03 {
			t.Fatalf("frame %d: subject luminance %.4f after %.4f", f, m, prev)
		}
		prev = m
	}
}

func TestLargeReference(t *testing.T) {
	// A reference much larger than the output is decimated on the host
	// first; its colour survives.
	d := newDev(t)
	s := makeScene(64, 48, [3]float32{0.3, 0.3, 0.3})
	ref := flatRef(640, 480, [3]uint8{40, 90, 200})
	_, r := render(t, d, Params{Reference: ref, Seed: 1, Width: s.w, Height: s.h}, s, nil)
	bg := read(t, d, r.comp.bg)
	want := colour.SRGB8ToLinear([3]uint8{40, 90, 200})
	n := s.w * s.h
	for c := 0; c < 3; c++ {
		if v := bg[c*n+n/2]; math.Abs(float64(v-want[c])) > 0.01 {
			t.Fatalf("channel %d: background %v, want %v", c, v, want[c])
		}
	}
	small := decimateRGB24(ref, 4)
	if small.Width != 160 || small.Height != 120 || small.Planes[0][0] != 40 || small.Planes[0][2] != 200 {
		t.Fatalf("decimate: %dx%d %v", small.Width, small.Height, small.Planes[0][:3])
	}
}
