package kernels

import (
	"errors"
	"math"
	"testing"
)

// refSample samples plane p at (px, py), clamped, straight from the
// formula of MatteOps.Warp.
func refSample(p []float32, w, h int, px, py float64) float64 {
	px = math.Max(0, math.Min(px, float64(w-1)))
	py = math.Max(0, math.Min(py, float64(h-1)))
	x0, y0 := int(math.Floor(px)), int(math.Floor(py))
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	fx, fy := px-float64(x0), py-float64(y0)
	v := func(x, y int) float64 { return float64(p[y*w+x]) }
	return (1-fy)*((1-fx)*v(x0, y0)+fx*v(x1, y0)) + fy*((1-fx)*v(x0, y1)+fx*v(x1, y1))
}

func TestGradient(t *testing.T) {
	d := NewCPU(3)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		rng := newRNG(uint64(w*100 + h))
		s := randVals(rng, w*h, 0, 1)
		dst := img(t, d, w, h, 2, nil)
		if err := d.Gradient(dst, img(t, d, w, h, 1, s)); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 2*w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				want[y*w+x] = (at(s, w, h, clampi(x+1, 0, w-1), y, 0) - at(s, w, h, clampi(x-1, 0, w-1), y, 0)) / 2
				want[w*h+y*w+x] = (at(s, w, h, x, clampi(y+1, 0, h-1), 0) - at(s, w, h, x, clampi(y-1, 0, h-1), 0)) / 2
			}
		}
		closeAll(t, "Gradient "+sizeName(sz), pixels(t, d, dst), want, 1e-7, 0)
	}
	if err := d.Gradient(img(t, d, 4, 4, 1, nil), img(t, d, 4, 4, 1, nil)); !errors.Is(err, ErrShape) {
		t.Errorf("1-channel dst: err = %v, want ErrShape", err)
	}
}

func TestWarpAndConfidence(t *testing.T) {
	d := NewCPU(3)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		rng := newRNG(uint64(w*7 + h))
		s := randVals(rng, 2*w*h, 0, 1)
		fl := randVals(rng, 2*w*h, -3, 3)
		bw := randVals(rng, 2*w*h, -3, 3)
		dst := img(t, d, w, h, 2, nil)
		const scale = 0.5
		if err := d.Warp(dst, img(t, d, w, h, 2, s), img(t, d, w, h, 2, fl), scale); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 2*w*h)
		conf := make([]float64, w*h)
		for c := 0; c < 2; c++ {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					i := y*w + x
					want[c*w*h+i] = refSample(s[c*w*h:], w, h, float64(x)+scale*float64(fl[i]), float64(y)+scale*float64(fl[w*h+i]))
				}
			}
		}
		closeAll(t, "Warp "+sizeName(sz), pixels(t, d, dst), want, 1e-5, 0)
		const sigma = 1.5
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				px, py := float64(x)+float64(fl[i]), float64(y)+float64(fl[w*h+i])
				if px < -0.5 || py < -0.5 || px > float64(w)-0.5 || py > float64(h)-0.5 {
					continue
				}
				eu := float64(fl[i]) + refSample(bw, w, h, px, py)
				ev := float64(fl[w*h+i]) + refSample(bw[w*h:], w, h, px, py)
				conf[i] = math.Exp(-(eu*eu + ev*ev) / (sigma * sigma))
			}
		}
		cd := img(t, d, w, h, 1, nil)
		if err := d.FlowConfidence(cd, img(t, d, w, h, 2, fl), img(t, d, w, h, 2, bw), sigma); err != nil {
			t.Fatal(err)
		}
		closeAll(t, "FlowConfidence "+sizeName(sz), pixels(t, d, cd), conf, 1e-5, 0)
	}
	// A constant flow of +1 pixel shifts an image left by one pixel.
	w, h := 6, 3
	s := make([]float32, w*h)
	for i := range s {
		s[i] = float32(i % w)
	}
	fl := make([]float32, 2*w*h)
	for i := 0; i < w*h; i++ {
		fl[i] = 1
	}
	dst := img(t, d, w, h, 1, nil)
	if err := d.Warp(dst, img(t, d, w, h, 1, s), img(t, d, w, h, 2, fl), 1); err != nil {
		t.Fatal(err)
	}
	if got := pixels(t, d, dst); got[0] != 1 || got[w-1] != float32(w-1) {
		t.Errorf("shift: row %v", got[:w])
	}
}

func TestFlowTensorMismatchSolve(t *testing.T) {
	d := NewCPU(2)
	w, h := 9, 7
	rng := newRNG(5)
	g := randVals(rng, 2*w*h, -1, 1)
	ref := randVals(rng, w*h, 0, 1)
	wp := randVals(rng, w*h, 0, 1)
	ten := img(t, d, w, h, 3, nil)
	mis := img(t, d, w, h, 2, nil)
	if err := d.FlowTensor(ten, img(t, d, w, h, 2, g)); err != nil {
		t.Fatal(err)
	}
	if err := d.FlowMismatch(mis, img(t, d, w, h, 2, g), img(t, d, w, h, 1, ref), img(t, d, w, h, 1, wp)); err != nil {
		t.Fatal(err)
	}
	wt := make([]float64, 3*w*h)
	wm := make([]float64, 2*w*h)
	n := w * h
	for i := 0; i < n; i++ {
		gx, gy := float64(g[i]), float64(g[n+i])
		e := float64(wp[i]) - float64(ref[i])
		wt[i], wt[n+i], wt[2*n+i] = gx*gx, gx*gy, gy*gy
		wm[i], wm[n+i] = gx*e, gy*e
	}
	closeAll(t, "FlowTensor", pixels(t, d, ten), wt, 1e-6, 0)
	closeAll(t, "FlowMismatch", pixels(t, d, mis), wm, 1e-6, 0)

	flow0 := randVals(rng, 2*n, -2, 2)
	fl := img(t, d, w, h, 2, flow0)
	const lambda, maxStep, scale = 0.01, 0.75, 0.5
	if err := d.FlowSolve(fl, ten, mis, lambda, maxStep, scale); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 2*n)
	for i := 0; i < n; i++ {
		a, b, c := wt[i]+lambda, wt[n+i], wt[2*n+i]+lambda
		p, q := wm[i], wm[n+i]
		det := a*c - b*b
		du, dv := 0.0, 0.0
		if det > 1e-12 {
			du, dv = -(c*p-b*q)/det, -(a*q-b*p)/det
		}
		if l := math.Hypot(du, dv); l > maxStep {
			du, dv = du*maxStep/l, dv*maxStep/l
		}
		want[i] = float64(flow0[i]) + du/scale
		want[n+i] = float64(flow0[n+i]) + dv/scale
	}
	closeAll(t, "FlowSolve", pixels(t, d, fl), want, 1e-5, 1e-5)

	// On a smooth pattern shifted by a known amount, a few steps find the
	// shift (far from the borders, whose clamped samples are wrong).
	w, h = 64, 64
	n = w * h
	refv := make([]float32, n)
	tgt := make([]float32, n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			f := func(x, y float64) float32 { return float32(math.Sin(x/3) + math.Cos(y/4)) }
			refv[y*w+x] = f(float64(x), float64(y))
			tgt[y*w+x] = f(float64(x)+0.7, float64(y)-0.4) // tgt(x+u) = ref(x) for u = (-0.7, 0.4)
		}
	}
	R, T := img(t, d, w, h, 1, refv), img(t, d, w, h, 1, tgt)
	G := img(t, d, w, h, 2, nil)
	if err := d.Gradient(G, R); err != nil {
		t.Fatal(err)
	}
	ten = img(t, d, w, h, 3, nil)
	mis = img(t, d, w, h, 2, nil)
	fl = img(t, d, w, h, 2, nil)
	warped := img(t, d, w, h, 1, nil)
	_ = d.FlowTensor(ten, G)
	_ = d.BoxFilter(ten, ten, 3)
	for it := 0; it < 6; it++ {
		_ = d.Warp(warped, T, fl, 1)
		_ = d.FlowMismatch(mis, G, R, warped)
		_ = d.BoxFilter(mis, mis, 3)
		if err := d.FlowSolve(fl, ten, mis, 1e-4, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	got := pixels(t, d, fl)
	c := (h/2)*w + w/2
	if !near(float64(got[c]), -0.7, 0.1) || !near(float64(got[n+c]), 0.4, 0.1) {
		t.Errorf("flow at centre = (%v, %v), want (-0.7, 0.4)", got[c], got[n+c])
	}
}

func TestColourHistogramAndFuse(t *testing.T) {
	w, h := 23, 37
	n := w * h
	rng := newRNG(9)
	src := randVals(rng, 3*n, -0.1, 1.1)
	wt := randVals(rng, n, 0, 1)
	const bins = 5
	cell := func(i int) int {
		q := func(v float32) int {
			f := math.Max(0, math.Min(1, float64(v)))
			return min(bins-1, int(math.Floor(f*bins)))
		}
		return (q(src[i])*bins+q(src[n+i]))*bins + q(src[2*n+i])
	}
	want := make([]float64, bins*bins*bins)
	for i := 0; i < n; i++ {
		want[cell(i)] += float64(wt[i])
	}
	var first []float64
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		got, err := d.ColourHistogram(img(t, d, w, h, 3, src), img(t, d, w, h, 1, wt), bins)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !near(got[i], want[i], 1e-9) {
				t.Fatalf("cell %d = %v, want %v", i, got[i], want[i])
			}
			if first != nil && math.Float64bits(first[i]) != math.Float64bits(got[i]) {
				t.Fatalf("cell %d differs across worker counts", i)
			}
		}
		first = got
	}

	d := NewCPU(2)
	prior := randVals(rng, n, 0, 1)
	conf := randVals(rng, n, 0, 1)
	lm := randVals(rng, n, 0, 1)
	lf := randVals(rng, 3*n, 0, 1)
	lb := randVals(rng, 3*n, 0, 1)
	plate := randVals(rng, 3*n, 0, 1)
	table := randVals(rng, bins*bins*bins, 0, 1)
	p := FuseParams{Prior: 1.5, Global: 0.7, Local: 0.9, Plate: 1.1, LocalSigma: 0.2, PlateThreshold: 0.1, PlateSoftness: 0.05, Bins: bins}
	lgt := func(v float64) float64 { v = math.Max(1e-3, math.Min(v, 1-1e-3)); return math.Log(v / (1 - v)) }
	cl := func(v float64) float64 { return math.Max(-8, math.Min(v, 8)) }
	fw := make([]float64, n)
	for i := 0; i < n; i++ {
		L := 1.5*float64(conf[i])*lgt(float64(prior[i])) + 0.7*lgt(float64(table[cell(i)]))
		if m := float64(lm[i]); m > 0.02 && m < 0.98 {
			var df, db float64
			for c := 0; c < 3; c++ {
				v := float64(src[c*n+i])
				df += math.Pow(v-float64(lf[c*n+i])/m, 2)
				db += math.Pow(v-float64(lb[c*n+i])/(1-m), 2)
			}
			L += 0.9 * cl((db-df)/(2*0.2*0.2))
		}
		var e float64
		for c := 0; c < 3; c++ {
			e += math.Pow(float64(src[c*n+i])-float64(plate[c*n+i]), 2)
		}
		L += 1.1 * cl((math.Sqrt(e)-0.1)/0.05)
		fw[i] = 1 / (1 + math.Exp(-L))
	}
	dst := img(t, d, w, h, 1, nil)
	if err := d.MatteFuse(dst, img(t, d, w, h, 3, src), img(t, d, w, h, 1, prior), img(t, d, w, h, 1, conf),
		img(t, d, w, h, 3, lf), img(t, d, w, h, 3, lb), img(t, d, w, h, 1, lm), img(t, d, w, h, 3, plate), table, p); err != nil {
		t.Fatal(err)
	}
	closeAll(t, "MatteFuse", pixels(t, d, dst), fw, 1e-5, 1e-5)
	// With no evidence at all the matte is 0.5.
	if err := d.MatteFuse(dst, img(t, d, w, h, 3, src), nil, nil, nil, nil, nil, nil, nil, FuseParams{}); err != nil {
		t.Fatal(err)
	}
	if got := pixels(t, d, dst); got[0] != 0.5 {
		t.Errorf("no evidence: %v, want 0.5", got[0])
	}
	if err := d.MatteFuse(dst, img(t, d, w, h, 3, src), nil, nil, img(t, d, w, h, 3, lf), nil, nil, nil, nil, FuseParams{Local: 1, LocalSigma: 1}); !errors.Is(err, ErrShape) {
		t.Errorf("partial local inputs: err = %v, want ErrShape", err)
	}
}

func TestChromaKey(t *testing.T) {
	d := NewCPU(2)
	w, h := 17, 5
	n := w * h
	rng := newRNG(3)
	src := randVals(rng, 3*n, 0, 1)
	for _, ch := range []int{1, 2} {
		p := ChromaParams{Screen: [3]float32{0.1, 0.8, 0.2}, Channel: ch, Low: 0.2, High: 0.6}
		if ch == 2 {
			p.Screen = [3]float32{0.1, 0.2, 0.9}
		}
		o1, o2 := 0, 3-ch
		ks := float64(p.Screen[ch]) - math.Max(float64(p.Screen[o1]), float64(p.Screen[o2]))
		wa := make([]float64, n)
		wd := make([]float64, 3*n)
		for i := 0; i < n; i++ {
			m := math.Max(float64(src[o1*n+i]), float64(src[o2*n+i]))
			tt := (float64(src[ch*n+i]) - m) / ks
			wa[i] = math.Max(0, math.Min(1, (0.6-tt)/0.4))
			for c := 0; c < 3; c++ {
				wd[c*n+i] = float64(src[c*n+i])
			}
			wd[ch*n+i] = math.Min(float64(src[ch*n+i]), m)
		}
		a := img(t, d, w, h, 1, nil)
		s := img(t, d, w, h, 3, src)
		if err := d.ChromaKey(a, s, s, p); err != nil { // in place
			t.Fatal(err)
		}
		closeAll(t, "ChromaKey alpha", pixels(t, d, a), wa, 1e-5, 0)
		closeAll(t, "ChromaKey despill", pixels(t, d, s), wd, 0, 0)
	}
	bad := ChromaParams{Screen: [3]float32{0.5, 0.5, 0.5}, Channel: 1, Low: 0.2, High: 0.6}
	if err := d.ChromaKey(img(t, d, w, h, 1, nil), img(t, d, w, h, 3, nil), img(t, d, w, h, 3, src), bad); err == nil {
		t.Error("grey screen accepted")
	}
}

// TestShift: Shift is Warp with a constant flow, bit for bit, for offsets
// inside, across and beyond the borders, and rejects aliasing and a
// channel mismatch.
func TestShift(t *testing.T) {
	d := NewCPU(3)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		rng := newRNG(uint64(w*11 + h))
		s := randVals(rng, 3*w*h, 0, 1)
		src := img(t, d, w, h, 3, s)
		for _, off := range [][2]float32{{0, 0}, {2.37, -1.61}, {-0.5, 0.75}, {float32(w) + 2.5, -float32(h) - 1}, {-7.125, 3},
			{3, -2}, {-1, 0}, {-float32(w) - 1, 4}, {float32(w) - 1, 1}} {
			fl := make([]float32, 2*w*h)
			for i := 0; i < w*h; i++ {
				fl[i], fl[w*h+i] = off[0], off[1]
			}
			want, got := img(t, d, w, h, 3, nil), img(t, d, w, h, 3, nil)
			if err := d.Warp(want, src, img(t, d, w, h, 2, fl), 1); err != nil {
				t.Fatal(err)
			}
			if err := d.Shift(got, src, off[0], off[1]); err != nil {
				t.Fatal(err)
			}
			wp, gp := pixels(t, d, want), pixels(t, d, got)
			for i := range wp {
				if wp[i] != gp[i] {
					t.Fatalf("%s offset %v: value %d = %v, Warp gives %v", sizeName(sz), off, i, gp[i], wp[i])
				}
			}
		}
		if err := d.Shift(src, src, 1, 1); !errors.Is(err, ErrShape) {
			t.Errorf("aliased: err = %v, want ErrShape", err)
		}
		if err := d.Shift(img(t, d, w, h, 1, nil), src, 1, 1); !errors.Is(err, ErrShape) {
			t.Errorf("1-channel dst: err = %v, want ErrShape", err)
		}
	}
}
