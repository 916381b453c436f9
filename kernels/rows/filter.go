package rows

import "math"

// MaxGaussRadius bounds ceil(3 sigma); a larger sigma is an error.
const MaxGaussRadius = 1 << 22

// GaussKernel returns the half kernel k[0..r] (r = ceil(3 sigma)) of a
// normalised Gaussian: k[0] + 2*sum(k[1:]) = 1. Taps at or beyond span
// (the longest image side) all read the clamped edge pixels for every
// output, so their weights are folded into k[span] and the kernel is
// truncated there: the result is the same, the cost bounded.
func GaussKernel(sigma float32, span int) []float32 {
	s := float64(sigma)
	r := int(math.Ceil(3 * s))
	k64 := make([]float64, min(r, span)+1)
	sum := 0.0
	for i := 0; i <= r; i++ {
		v := math.Exp(-float64(i) * float64(i) / (2 * s * s))
		k64[min(i, span)] += v
		if i == 0 {
			sum += v
		} else {
			sum += 2 * v
		}
	}
	k := make([]float32, len(k64))
	for i := range k {
		k[i] = float32(k64[i] / sum)
	}
	return k
}

// GaussCol writes output row y of the vertical pass over the plane tp (w x
// h): k0*t[y] + sum_i k[i]*(t[y-i] + t[y+i]), rows clamped, accumulated in
// that order.
func GaussCol(q, tp []float32, w, h, y int, k []float32) {
	n := len(q)
	t0 := tp[y*w:][:n]
	k0 := k[0]
	for x := scaleRowSIMD(q, t0, k0); x < n; x++ {
		q[x] = k0 * t0[x]
	}
	i := 1
	// Two taps per pass (fewer loads and stores of q); q + A + B adds in
	// the same order as two single-tap passes.
	for ; i+1 < len(k); i += 2 {
		a := tp[max(y-i, 0)*w:][:n]
		b := tp[min(y+i, h-1)*w:][:n]
		c := tp[max(y-i-1, 0)*w:][:n]
		e := tp[min(y+i+1, h-1)*w:][:n]
		ki, kj := k[i], k[i+1]
		for x := pair2RowSIMD(q, a, b, c, e, ki, kj); x < n; x++ {
			q[x] = q[x] + ki*(a[x]+b[x]) + kj*(c[x]+e[x])
		}
	}
	for ; i < len(k); i++ {
		a := tp[max(y-i, 0)*w:][:n]
		b := tp[min(y+i, h-1)*w:][:n]
		ki := k[i]
		for x := pairRowSIMD(q, a, b, ki); x < n; x++ {
			q[x] += ki * (a[x] + b[x])
		}
	}
}

// GaussRow convolves one row s into o with the half kernel k, clamping
// at the ends. Every output sums k0*s[x] + sum_i k[i]*(s[x-i]+s[x+i]) in
// that order; the interior is computed tap by tap across the row (no
// dependency chain between taps of one pixel).
func GaussRow(o, s, k []float32) {
	w := len(s)
	o = o[:w]
	r := len(k) - 1
	k0 := k[0]
	edge := func(x int) {
		acc := k0 * s[x]
		for i := 1; i <= r; i++ {
			acc += k[i] * (s[max(x-i, 0)] + s[min(x+i, w-1)])
		}
		o[x] = acc
	}
	if w <= 2*r {
		for x := range w {
			edge(x)
		}
		return
	}
	oi := o[r : w-r]
	n := len(oi)
	c := s[r:][:n]
	for x := scaleRowSIMD(oi, c, k0); x < n; x++ {
		oi[x] = k0 * c[x]
	}
	i := 1
	for ; i+1 <= r; i += 2 {
		a, b := s[r-i:][:n], s[r+i:][:n]
		a2, b2 := s[r-i-1:][:n], s[r+i+1:][:n]
		ki, kj := k[i], k[i+1]
		for x := pair2RowSIMD(oi, a, b, a2, b2, ki, kj); x < n; x++ {
			oi[x] = oi[x] + ki*(a[x]+b[x]) + kj*(a2[x]+b2[x])
		}
	}
	for ; i <= r; i++ {
		a, b := s[r-i:][:n], s[r+i:][:n]
		ki := k[i]
		for x := pairRowSIMD(oi, a, b, ki); x < n; x++ {
			oi[x] += ki * (a[x] + b[x])
		}
	}
	for x := range r {
		edge(x)
		edge(w - 1 - x)
	}
}

// BoxVStep writes q = acc*icx*icy (when q is not nil), then slides the
// column sums: acc += add - sub (either may be nil).
func BoxVStep(q []float32, acc, icx []float64, icy float64, add, sub []float32) {
	w := len(acc)
	if q != nil {
		q, icx = q[:w], icx[:w]
		for x := range q {
			q[x] = float32(acc[x] * icx[x] * icy)
		}
	}
	switch {
	case add != nil && sub != nil:
		add, sub = add[:w], sub[:w]
		for x := range acc {
			acc[x] += float64(add[x]) - float64(sub[x])
		}
	case add != nil:
		add = add[:w]
		for x := range acc {
			acc[x] += float64(add[x])
		}
	case sub != nil:
		sub = sub[:w]
		for x := range acc {
			acc[x] -= float64(sub[x])
		}
	}
}

// Prefix4 writes the exclusive prefix sums (len(s)+1 values) of four rows.
func Prefix4(p0, p1, p2, p3 []float64, s0, s1, s2, s3 []float32) {
	w := len(s0)
	p0, p1, p2, p3 = p0[:w+1], p1[:w+1], p2[:w+1], p3[:w+1]
	s1, s2, s3 = s1[:w], s2[:w], s3[:w]
	var a0, a1, a2, a3 float64
	for x := range s0 {
		p0[x], p1[x], p2[x], p3[x] = a0, a1, a2, a3
		a0 += float64(s0[x])
		a1 += float64(s1[x])
		a2 += float64(s2[x])
		a3 += float64(s3[x])
	}
	p0[w], p1[w], p2[w], p3[w] = a0, a1, a2, a3
}

// BoxDiff writes the clipped window sums t[x] = p[min(x+r+1,w)] - p[max(x-r,0)].
func BoxDiff(t []float32, p []float64, r int) {
	w := len(t)
	p = p[:w+1]
	for x := range t {
		t[x] = float32(p[min(x+r+1, w)] - p[max(x-r, 0)])
	}
}
