package kernels

import (
	"fmt"
	"math"
	"testing"
)

func refGauss(src []float32, w, h, ch int, sigma float64) []float64 {
	r := int(math.Ceil(3 * sigma))
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := -r; i <= r; i++ {
		k[i+r] = math.Exp(-float64(i*i) / (2 * sigma * sigma))
		sum += k[i+r]
	}
	out := make([]float64, ch*w*h)
	for c := range ch {
		for y := range h {
			for x := range w {
				s := 0.0
				for j := -r; j <= r; j++ {
					for i := -r; i <= r; i++ {
						s += k[i+r] * k[j+r] * at(src, w, h, clampi(x+i, 0, w-1), clampi(y+j, 0, h-1), c)
					}
				}
				out[c*w*h+y*w+x] = s / (sum * sum)
			}
		}
	}
	return out
}

func TestGaussianBlur(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(30)
	for _, sz := range testSizes {
		for _, sigma := range []float64{0.6, 1.5, 4} {
			t.Run(fmt.Sprintf("%s/sigma%g", sizeName(sz), sigma), func(t *testing.T) {
				w, h := sz[0], sz[1]
				src := randVals(rng, 2*w*h, 0, 1)
				out := img(t, d, w, h, 2, nil)
				if err := d.GaussianBlur(out, img(t, d, w, h, 2, src), float32(sigma)); err != nil {
					t.Fatal(err)
				}
				closeAll(t, "gauss", pixels(t, d, out), refGauss(src, w, h, 2, sigma), 1e-6, 1e-5)
			})
		}
	}
	t.Run("delta sums to 1 and is symmetric", func(t *testing.T) {
		const w, h = 31, 31
		src := make([]float32, w*h)
		src[15*w+15] = 1
		out := img(t, d, w, h, 1, nil)
		if err := d.GaussianBlur(out, img(t, d, w, h, 1, src), 2.5); err != nil {
			t.Fatal(err)
		}
		sum, err := d.Sum(out)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sum[0]-1) > 1e-6 {
			t.Errorf("sum = %v, want 1", sum[0])
		}
		p := pixels(t, d, out)
		for y := range h {
			for x := range w {
				v := p[y*w+x]
				for _, m := range [][2]int{{w - 1 - x, y}, {x, h - 1 - y}, {y, x}} {
					if p[m[1]*w+m[0]] != v {
						t.Fatalf("not symmetric: (%d,%d)=%v vs (%d,%d)=%v", x, y, v, m[0], m[1], p[m[1]*w+m[0]])
					}
				}
			}
		}
	})
	t.Run("sigma 0 copies", func(t *testing.T) {
		src := randVals(rng, 12, 0, 1)
		out := img(t, d, 4, 3, 1, nil)
		if err := d.GaussianBlur(out, img(t, d, 4, 3, 1, src), 0); err != nil {
			t.Fatal(err)
		}
		for i, v := range pixels(t, d, out) {
			if v != src[i] {
				t.Fatal("not a copy")
			}
		}
	})
}

func refBox(src []float64, w, h, r int) []float64 {
	out := make([]float64, w*h)
	for y := range h {
		for x := range w {
			s, n := 0.0, 0
			for j := max(y-r, 0); j <= min(y+r, h-1); j++ {
				for i := max(x-r, 0); i <= min(x+r, w-1); i++ {
					s += src[j*w+i]
					n++
				}
			}
			out[y*w+x] = s / float64(n)
		}
	}
	return out
}

func to64(p []float32) []float64 {
	o := make([]float64, len(p))
	for i, v := range p {
		o[i] = float64(v)
	}
	return o
}

func TestBoxFilter(t *testing.T) {
	rng := newRNG(31)
	sizes := append([][2]int{{300, 200}}, testSizes...)
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range sizes {
			for _, r := range []int{1, 2, 5, 40} {
				t.Run(fmt.Sprintf("w%d/%s/r%d", workers, sizeName(sz), r), func(t *testing.T) {
					w, h := sz[0], sz[1]
					src := randVals(rng, 2*w*h, -1, 1)
					out := img(t, d, w, h, 2, nil)
					if err := d.BoxFilter(out, img(t, d, w, h, 2, src), r); err != nil {
						t.Fatal(err)
					}
					want := append(refBox(to64(src[:w*h]), w, h, r), refBox(to64(src[w*h:]), w, h, r)...)
					closeAll(t, "box", pixels(t, d, out), want, 1e-6, 1e-6)
				})
			}
		}
	}
}

func refGuided(I, p []float64, w, h, r int, eps float64) []float64 {
	n := w * h
	II, Ip := make([]float64, n), make([]float64, n)
	for i := range n {
		II[i], Ip[i] = I[i]*I[i], I[i]*p[i]
	}
	mI, mp, mII, mIp := refBox(I, w, h, r), refBox(p, w, h, r), refBox(II, w, h, r), refBox(Ip, w, h, r)
	a, b := make([]float64, n), make([]float64, n)
	for i := range n {
		a[i] = (mIp[i] - mI[i]*mp[i]) / (mII[i] - mI[i]*mI[i] + eps)
		b[i] = mp[i] - a[i]*mI[i]
	}
	ma, mb := refBox(a, w, h, r), refBox(b, w, h, r)
	q := make([]float64, n)
	for i := range n {
		q[i] = ma[i]*I[i] + mb[i]
	}
	return q
}

func TestGuidedFilter(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(32)
	for _, sz := range append(testSizes, [2]int{64, 48}) {
		for _, r := range []int{1, 4} {
			for _, eps := range []float64{1e-3, 0.05} {
				t.Run(fmt.Sprintf("%s/r%d/eps%g", sizeName(sz), r, eps), func(t *testing.T) {
					w, h := sz[0], sz[1]
					n := w * h
					guide := randVals(rng, n, 0, 1)
					src := randVals(rng, 3*n, 0, 1)
					out := img(t, d, w, h, 3, nil)
					if err := d.GuidedFilter(out, img(t, d, w, h, 1, guide), img(t, d, w, h, 3, src), r, float32(eps)); err != nil {
						t.Fatal(err)
					}
					var want []float64
					for c := range 3 {
						want = append(want, refGuided(to64(guide), to64(src[c*n:(c+1)*n]), w, h, r, eps)...)
					}
					closeAll(t, "guided", pixels(t, d, out), want, 2e-4, 0)
				})
			}
		}
	}
	t.Run("dst aliases guide", func(t *testing.T) {
		w, h := 9, 7
		g := randVals(rng, w*h, 0, 1)
		G := img(t, d, w, h, 1, g)
		if err := d.GuidedFilter(G, G, G, 2, 0.01); err != nil {
			t.Fatal(err)
		}
		closeAll(t, "guided in place", pixels(t, d, G), refGuided(to64(g), to64(g), w, h, 2, 0.01), 2e-4, 0)
	})
}

// refGuidedColour is He et al.'s colour guided filter in float64 with a
// general 3x3 solve (Gaussian elimination), independent of the kernel's
// adjugate.
func refGuidedColour(I [3][]float64, p []float64, w, h, r int, eps float64) []float64 {
	ma, mb := refGuidedColourAB(I, p, w, h, r, eps)
	q := make([]float64, w*h)
	for i := range q {
		q[i] = ma[0][i]*I[0][i] + ma[1][i]*I[1][i] + ma[2][i]*I[2][i] + mb[i]
	}
	return q
}

// refGuidedColourAB returns the box means of the colour guided filter's
// coefficients a (3 planes) and b.
func refGuidedColourAB(I [3][]float64, p []float64, w, h, r int, eps float64) ([3][]float64, []float64) {
	n := w * h
	var mI [3][]float64
	var mII [3][3][]float64
	var mIp [3][]float64
	for c := range 3 {
		mI[c] = refBox(I[c], w, h, r)
		t := make([]float64, n)
		for i := range n {
			t[i] = I[c][i] * p[i]
		}
		mIp[c] = refBox(t, w, h, r)
		for k := c; k < 3; k++ {
			t := make([]float64, n)
			for i := range n {
				t[i] = I[c][i] * I[k][i]
			}
			mII[c][k] = refBox(t, w, h, r)
			mII[k][c] = mII[c][k]
		}
	}
	mp := refBox(p, w, h, r)
	var a [3][]float64
	for c := range a {
		a[c] = make([]float64, n)
	}
	b := make([]float64, n)
	for i := range n {
		var m [3][4]float64
		for c := range 3 {
			for k := range 3 {
				m[c][k] = mII[c][k][i] - mI[c][i]*mI[k][i]
			}
			m[c][c] += eps
			m[c][3] = mIp[c][i] - mI[c][i]*mp[i]
		}
		for c := range 3 { // eliminate (Σ + eps·U is positive definite)
			for k := c + 1; k < 3; k++ {
				f := m[k][c] / m[c][c]
				for j := c; j < 4; j++ {
					m[k][j] -= f * m[c][j]
				}
			}
		}
		var x [3]float64
		for c := 2; c >= 0; c-- {
			v := m[c][3]
			for k := c + 1; k < 3; k++ {
				v -= m[c][k] * x[k]
			}
			x[c] = v / m[c][c]
		}
		b[i] = mp[i]
		for c := range 3 {
			a[c][i] = x[c]
			b[i] -= x[c] * mI[c][i]
		}
	}
	var ma [3][]float64
	for c := range 3 {
		ma[c] = refBox(a[c], w, h, r)
	}
	return ma, refBox(b, w, h, r)
}

func TestGuidedFilterColour(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(33)
	for _, sz := range append(testSizes, [2]int{64, 48}) {
		for _, r := range []int{0, 1, 4} {
			for _, eps := range []float64{2e-4, 0.05} {
				t.Run(fmt.Sprintf("%s/r%d/eps%g", sizeName(sz), r, eps), func(t *testing.T) {
					w, h := sz[0], sz[1]
					n := w * h
					guide := randVals(rng, 3*n, 0, 1)
					src := randVals(rng, 2*n, 0, 1)
					out := img(t, d, w, h, 2, nil)
					if err := d.GuidedFilterColour(out, img(t, d, w, h, 3, guide), img(t, d, w, h, 2, src), r, float32(eps)); err != nil {
						t.Fatal(err)
					}
					g := to64(guide)
					I := [3][]float64{g[:n], g[n : 2*n], g[2*n:]}
					var want []float64
					for c := range 2 {
						want = append(want, refGuidedColour(I, to64(src[c*n:(c+1)*n]), w, h, r, eps)...)
					}
					closeAll(t, "guided colour", pixels(t, d, out), want, 5e-4, 0)
				})
			}
		}
	}
	// An edge of hue at constant luma: the luma guide cannot see it, the
	// colour guide keeps the matte's step on it.
	t.Run("hue edge", func(t *testing.T) {
		w, h := 32, 8
		n := w * h
		guide := make([]float32, 3*n)
		src := make([]float32, n)
		for y := range h {
			for x := range w {
				i := y*w + x
				if x < w/2 {
					guide[i], guide[n+i], guide[2*n+i] = 0.6, 0.3, 0.3
					src[i] = 1
				} else {
					guide[i], guide[n+i], guide[2*n+i] = 0.3, 0.45, 0.3
				}
			}
		}
		out := img(t, d, w, h, 1, nil)
		if err := d.GuidedFilterColour(out, img(t, d, w, h, 3, guide), img(t, d, w, h, 1, src), 4, 1e-4); err != nil {
			t.Fatal(err)
		}
		q := pixels(t, d, out)
		if v := q[4*w+w/2-1]; v < 0.95 {
			t.Errorf("inside the edge %.3f, want >= 0.95", v)
		}
		if v := q[4*w+w/2]; v > 0.05 {
			t.Errorf("outside the edge %.3f, want <= 0.05", v)
		}
	})
	t.Run("dst aliases src", func(t *testing.T) {
		w, h := 9, 7
		n := w * h
		guide := randVals(rng, 3*n, 0, 1)
		p := randVals(rng, n, 0, 1)
		P := img(t, d, w, h, 1, p)
		if err := d.GuidedFilterColour(P, img(t, d, w, h, 3, guide), P, 2, 0.01); err != nil {
			t.Fatal(err)
		}
		g := to64(guide)
		closeAll(t, "guided colour in place", pixels(t, d, P), refGuidedColour([3][]float64{g[:n], g[n : 2*n], g[2*n:]}, to64(p), w, h, 2, 0.01), 5e-4, 0)
	})
}

// TestGuidedFilterColourFast checks the fast path (src smaller than the
// guide) against its definition: the coefficients of refGuidedColour's
// steps at src's size on the area-downsampled guide, upsampled
// bilinearly (by the device's own tested ResizeBilinear), applied to
// the full-size guide.
func TestGuidedFilterColourFast(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(34)
	const w, h, lw, lh, r, eps = 64, 48, 16, 12, 2, 2e-4
	n, ln := w*h, lw*lh
	guide := randVals(rng, 3*n, 0, 1)
	p := randVals(rng, ln, 0, 1)
	G := img(t, d, w, h, 3, guide)
	out := img(t, d, w, h, 1, nil)
	if err := d.GuidedFilterColour(out, G, img(t, d, lw, lh, 1, p), r, eps); err != nil {
		t.Fatal(err)
	}
	low := img(t, d, lw, lh, 3, nil)
	if err := d.ResizeArea(low, G); err != nil {
		t.Fatal(err)
	}
	lg := to64(pixels(t, d, low))
	// The coefficients at the low size, from the float64 reference.
	a, b := refGuidedColourAB([3][]float64{lg[:ln], lg[ln : 2*ln], lg[2*ln:]}, to64(p), lw, lh, r, eps)
	coef := make([]float32, 4*ln)
	for c := range 3 {
		for i := range ln {
			coef[c*ln+i] = float32(a[c][i])
		}
	}
	for i := range ln {
		coef[3*ln+i] = float32(b[i])
	}
	up := img(t, d, w, h, 4, nil)
	if err := d.ResizeBilinear(up, img(t, d, lw, lh, 4, coef)); err != nil {
		t.Fatal(err)
	}
	u := to64(pixels(t, d, up))
	want := make([]float64, n)
	for i := range n {
		want[i] = u[i]*float64(guide[i]) + u[n+i]*float64(guide[n+i]) + u[2*n+i]*float64(guide[2*n+i]) + u[3*n+i]
	}
	closeAll(t, "guided colour fast", pixels(t, d, out), want, 5e-4, 0)
}
