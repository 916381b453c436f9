package kernels

import (
	"fmt"
	"math"
)

// maxGaussRadius bounds ceil(3 sigma); a larger sigma is an error.
const maxGaussRadius = 1 << 22

// gaussKernel returns the half kernel k[0..r] (r = ceil(3 sigma)) of a
// normalised Gaussian: k[0] + 2*sum(k[1:]) = 1. Taps at or beyond span
// (the longest image side) all read the clamped edge pixels for every
// output, so their weights are folded into k[span] and the kernel is
// truncated there: the result is the same, the cost bounded.
func gaussKernel(sigma float32, span int) []float32 {
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

// GaussianBlur applies a separable, normalised Gaussian of standard
// deviation sigma with radius ceil(3 sigma), edges clamped (see
// Ops.GaussianBlur). sigma <= 0 copies. dst may equal src.
func (d *CPU) GaussianBlur(dst, src Image, sigma float32) error {
	const op = "GaussianBlur"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if !(sigma > 0) {
		if o != s {
			d.copyPix(o.pix, s.pix)
		}
		return nil
	}
	if 3*float64(sigma) > maxGaussRadius {
		return fmt.Errorf("kernels: cpu: %s: sigma %g is too large", op, sigma)
	}
	k := gaussKernel(sigma, max(o.w, o.h))
	w, h := o.w, o.h
	tmp := d.scratch(len(s.pix))
	defer d.release(tmp)
	// Horizontal pass: s -> tmp.
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for c := range s.c {
			sp := s.plane(c)
			tp := tmp[c*w*h:][:w*h]
			for y := y0; y < y1; y++ {
				gaussRow(tp[y*w:][:w], sp[y*w:][:w], k)
			}
		}
	})
	// Vertical pass: tmp -> o.
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for c := range o.c {
			tp := tmp[c*w*h:][:w*h]
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				gaussCol(dp[y*w:][:w], tp, w, h, y, k)
			}
		}
	})
	return nil
}

// gaussCol writes output row y of the vertical pass over the plane tp (w x
// h): k0*t[y] + sum_i k[i]*(t[y-i] + t[y+i]), rows clamped, accumulated in
// that order.
func gaussCol(q, tp []float32, w, h, y int, k []float32) {
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

// gaussRow convolves one row s into o with the half kernel k, clamping
// at the ends. Every output sums k0*s[x] + sum_i k[i]*(s[x-i]+s[x+i]) in
// that order; the interior is computed tap by tap across the row (no
// dependency chain between taps of one pixel).
func gaussRow(o, s, k []float32) {
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

// BoxFilter writes the mean over the (2r+1)^2 window clipped to the image
// (see Ops.BoxFilter), in O(1) per pixel with float64 running sums.
// r <= 0 copies. dst may equal src.
func (d *CPU) BoxFilter(dst, src Image, r int) error {
	const op = "BoxFilter"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if r <= 0 {
		if o != s {
			d.copyPix(o.pix, s.pix)
		}
		return nil
	}
	// A window wider than the image is the whole image, clipped.
	r = min(r, max(o.w, o.h))
	tmp := d.scratch(o.w * o.h)
	defer d.release(tmp)
	for c := range o.c {
		d.boxPlane(o.plane(c), s.plane(c), tmp, o.w, o.h, r)
	}
	return nil
}

// boxPlane writes the clipped box mean of src into dst (one plane of w x
// h; dst may equal src); tmp holds w*h values of scratch. The vertical
// running sums restart at fixed band boundaries (a function of w, h and r
// only), so the result does not depend on the worker count.
func (d *CPU) boxPlane(dst, src, tmp []float32, w, h, r int) {
	prefix := make([][]float64, d.workers)
	d.parallel(h, bandRows(w), func(wk, y0, y1 int) {
		if prefix[wk] == nil {
			prefix[wk] = make([]float64, 4*(w+1))
		}
		p := prefix[wk]
		p0, p1, p2, p3 := p[:w+1], p[w+1:][:w+1], p[2*(w+1):][:w+1], p[3*(w+1):][:w+1]
		y := y0
		// Four rows at a time: four independent float64 add chains.
		for ; y+4 <= y1; y += 4 {
			prefix4(p0, p1, p2, p3, src[y*w:][:w], src[(y+1)*w:][:w], src[(y+2)*w:][:w], src[(y+3)*w:][:w])
			boxDiff(tmp[y*w:][:w], p0, r)
			boxDiff(tmp[(y+1)*w:][:w], p1, r)
			boxDiff(tmp[(y+2)*w:][:w], p2, r)
			boxDiff(tmp[(y+3)*w:][:w], p3, r)
		}
		for ; y < y1; y++ {
			s := src[y*w:][:w]
			acc := 0.0
			for x, v := range s {
				p0[x] = acc
				acc += float64(v)
			}
			p0[w] = acc
			boxDiff(tmp[y*w:][:w], p0, r)
		}
	})
	icx := make([]float64, w)
	for x := range icx {
		icx[x] = 1 / float64(min(x+r, w-1)-max(x-r, 0)+1)
	}
	accs := make([][]float64, d.workers)
	// Each band restarts its running sums (2r+1 rows), so bands are kept
	// well above the window height.
	band := max(bandRows(w), 4*(2*r+1))
	d.parallel(h, band, func(wk, y0, y1 int) {
		if accs[wk] == nil {
			accs[wk] = make([]float64, w)
		}
		acc := accs[wk]
		clear(acc)
		for yy := max(y0-r, 0); yy <= min(y0+r, h-1); yy++ {
			boxVStep(nil, acc, nil, 0, tmp[yy*w:][:w], nil)
		}
		for y := y0; y < y1; y++ {
			icy := 1 / float64(min(y+r, h-1)-max(y-r, 0)+1)
			var add, sub []float32
			if y+1 < y1 {
				if y+r+1 < h {
					add = tmp[(y+r+1)*w:][:w]
				}
				if y-r >= 0 {
					sub = tmp[(y-r)*w:][:w]
				}
			}
			boxVStep(dst[y*w:][:w], acc, icx, icy, add, sub)
		}
	})
}

// boxVStep writes q = acc*icx*icy (when q is not nil), then slides the
// column sums: acc += add - sub (either may be nil).
func boxVStep(q []float32, acc, icx []float64, icy float64, add, sub []float32) {
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

// prefix4 writes the exclusive prefix sums (len(s)+1 values) of four rows.
func prefix4(p0, p1, p2, p3 []float64, s0, s1, s2, s3 []float32) {
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

// boxDiff writes the clipped window sums t[x] = p[min(x+r+1,w)] - p[max(x-r,0)].
func boxDiff(t []float32, p []float64, r int) {
	w := len(t)
	p = p[:w+1]
	for x := range t {
		t[x] = float32(p[min(x+r+1, w)] - p[max(x-r, 0)])
	}
}

// GuidedFilter is He et al.'s guided filter with a 1-channel guide I (see
// Ops.GuidedFilter): per channel p of src, with box means of radius r,
// a = cov(I,p)/(var(I)+eps), b = mean(p) - a*mean(I), and
// dst = mean(a)*I + mean(b). The a/b step is computed in float64, with
// var(I) floored at 0 and a = 0 where var(I)+eps is not positive (eps <= 0
// on a flat guide). dst may equal src or guide.
func (d *CPU) GuidedFilter(dst, guide, src Image, r int, eps float32) error {
	const op = "GuidedFilter"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	g, err := cpuImg(op, "guide", guide)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if err := wantChannels(op, "guide", g, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"guide"}, g); err != nil {
		return err
	}
	w, h := o.w, o.h
	n := w * h
	buf := d.scratch(6 * n)
	defer d.release(buf)
	mI, mII, t1, t2, t3, tmp := buf[:n], buf[n:2*n], buf[2*n:3*n], buf[3*n:4*n], buf[4*n:5*n], buf[5*n:6*n]
	I := g.plane(0)
	band := bandRows(w)
	// Per-pixel helper over the plane in parallel.
	each := func(fn func(lo, hi int)) {
		d.parallel(h, band, func(_, y0, y1 int) { fn(y0*w, y1*w) })
	}
	r = min(max(r, 0), max(w, h))
	box := func(dst, src []float32) {
		if r == 0 {
			copy(dst, src)
			return
		}
		d.boxPlane(dst, src, tmp, w, h, r)
	}
	// Guide statistics.
	box(mI, I)
	each(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t1[i] = I[i] * I[i]
		}
	})
	box(mII, t1)
	// Keep a private copy of the guide in case dst aliases it.
	gI := I
	if g == o {
		gI = t1
		copy(gI, I)
	}
	e := float64(eps)
	for c := range o.c {
		p := s.plane(c)
		each(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				t3[i] = gI[i] * p[i]
			}
		})
		box(t2, p)
		box(t3, t3)
		// a -> t3, b -> t2.
		each(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				mi := float64(mI[i])
				mp := float64(t2[i])
				den := max(float64(mII[i])-mi*mi, 0) + e
				a := 0.0
				if den > 0 {
					a = (float64(t3[i]) - mi*mp) / den
				}
				t3[i] = float32(a)
				t2[i] = float32(mp - a*mi)
			}
		})
		box(t3, t3)
		box(t2, t2)
		q := o.plane(c)
		each(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				q[i] = t3[i]*gI[i] + t2[i]
			}
		})
	}
	return nil
}
