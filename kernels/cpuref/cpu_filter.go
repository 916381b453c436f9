package cpuref

import (
	"fmt"

	"github.com/vfxrender/vfx/kernels/rows"
)

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
	if 3*float64(sigma) > rows.MaxGaussRadius {
		return fmt.Errorf("kernels: cpu: %s: sigma %g is too large", op, sigma)
	}
	k := rows.GaussKernel(sigma, max(o.w, o.h))
	w, h := o.w, o.h
	tmp := d.scratch(len(s.pix))
	defer d.release(tmp)
	// Horizontal pass: s -> tmp.
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for c := range s.c {
			sp := s.plane(c)
			tp := tmp[c*w*h:][:w*h]
			for y := y0; y < y1; y++ {
				rows.GaussRow(tp[y*w:][:w], sp[y*w:][:w], k)
			}
		}
	})
	// Vertical pass: tmp -> o.
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for c := range o.c {
			tp := tmp[c*w*h:][:w*h]
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				rows.GaussCol(dp[y*w:][:w], tp, w, h, y, k)
			}
		}
	})
	return nil
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
	d.parallel(h, BandRows(w), func(wk, y0, y1 int) {
		if prefix[wk] == nil {
			prefix[wk] = make([]float64, 4*(w+1))
		}
		p := prefix[wk]
		p0, p1, p2, p3 := p[:w+1], p[w+1:][:w+1], p[2*(w+1):][:w+1], p[3*(w+1):][:w+1]
		y := y0
		// Four rows at a time: four independent float64 add chains.
		for ; y+4 <= y1; y += 4 {
			rows.Prefix4(p0, p1, p2, p3, src[y*w:][:w], src[(y+1)*w:][:w], src[(y+2)*w:][:w], src[(y+3)*w:][:w])
			rows.BoxDiff(tmp[y*w:][:w], p0, r)
			rows.BoxDiff(tmp[(y+1)*w:][:w], p1, r)
			rows.BoxDiff(tmp[(y+2)*w:][:w], p2, r)
			rows.BoxDiff(tmp[(y+3)*w:][:w], p3, r)
		}
		for ; y < y1; y++ {
			s := src[y*w:][:w]
			acc := 0.0
			for x, v := range s {
				p0[x] = acc
				acc += float64(v)
			}
			p0[w] = acc
			rows.BoxDiff(tmp[y*w:][:w], p0, r)
		}
	})
	icx := make([]float64, w)
	for x := range icx {
		icx[x] = 1 / float64(min(x+r, w-1)-max(x-r, 0)+1)
	}
	accs := make([][]float64, d.workers)
	// Each band restarts its running sums (2r+1 rows), so bands are kept
	// well above the window height.
	band := max(BandRows(w), 4*(2*r+1))
	d.parallel(h, band, func(wk, y0, y1 int) {
		if accs[wk] == nil {
			accs[wk] = make([]float64, w)
		}
		acc := accs[wk]
		clear(acc)
		for yy := max(y0-r, 0); yy <= min(y0+r, h-1); yy++ {
			rows.BoxVStep(nil, acc, nil, 0, tmp[yy*w:][:w], nil)
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
			rows.BoxVStep(dst[y*w:][:w], acc, icx, icy, add, sub)
		}
	})
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
	band := BandRows(w)
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

// GuidedFilterColour is He et al.'s guided filter with a 3-channel guide
// I (see Ops.GuidedFilterColour): per channel p of src, with box means of
// radius r, a = (Σ + eps·U)⁻¹ cov(I,p) (Σ the guide's 3x3 covariance in
// the window), b = mean(p) - a·mean(I), and dst = mean(a)·I + mean(b).
// The a/b step is computed in float64 (guidedColourAB), with the
// diagonal of Σ floored at 0 and a = 0 where Σ + eps·U is not positive
// definite. A src smaller than guide and dst takes the fast guided
// filter's path (He and Sun, 2015): mean(a) and mean(b) are computed at
// src's size on the guide area-downsampled to it (r in src's pixels),
// then bilinearly upsampled, and dst = mean(a)·I + mean(b) with the
// full-size guide. dst may equal src (same size), not guide.
func (d *CPU) GuidedFilterColour(dst, guide, src Image, r int, eps float32) error {
	const op = "GuidedFilterColour"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
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
	if err := wantChannels(op, "guide", g, 3); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"guide"}, g); err != nil {
		return err
	}
	if s.w > o.w || s.h > o.h {
		return shapeErr(op, "src %s larger than dst %s", dims(s), dims(o))
	}
	if g == o {
		return shapeErr(op, "dst is the guide")
	}
	G := [3][]float32{g.plane(0), g.plane(1), g.plane(2)}
	I := G // the guide at src's size
	w, h := s.w, s.h
	n := w * h
	fast := w != o.w || h != o.h
	var low, ab, up *cpuImage
	if fast {
		li, err := d.NewImage(w, h, 3)
		if err != nil {
			return err
		}
		defer d.Free(li)
		low = li.(*cpuImage)
		if err := d.ResizeArea(low, g); err != nil {
			return err
		}
		abi, err := d.NewImage(w, h, 4)
		if err != nil {
			return err
		}
		defer d.Free(abi)
		ab = abi.(*cpuImage)
		upi, err := d.NewImage(o.w, o.h, 4)
		if err != nil {
			return err
		}
		defer d.Free(upi)
		up = upi.(*cpuImage)
		I = [3][]float32{low.plane(0), low.plane(1), low.plane(2)}
	}
	// mI (3), mII (6: rr rg rb gg gb bb), mp, mIp (3), tmp.
	buf := d.scratch(14 * n)
	defer d.release(buf)
	plane := func(k int) []float32 { return buf[k*n:][:n] }
	var mI [3][]float32
	var mII [6][]float32
	for c := range mI {
		mI[c] = plane(c)
	}
	for k := range mII {
		mII[k] = plane(3 + k)
	}
	mp := plane(9)
	mIp := [3][]float32{plane(10), plane(11), plane(12)}
	tmp := plane(13)
	each := func(h, w int, fn func(lo, hi int)) {
		d.parallel(h, BandRows(w), func(_, y0, y1 int) { fn(y0*w, y1*w) })
	}
	r = min(max(r, 0), max(w, h))
	box := func(dst, src []float32) {
		if r == 0 {
			copy(dst, src)
			return
		}
		d.boxPlane(dst, src, tmp, w, h, r)
	}
	for c := range 3 {
		box(mI[c], I[c])
	}
	for k, pr := range guidedColourPairs {
		x, y, m := I[pr[0]], I[pr[1]], mII[k]
		each(h, w, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				m[i] = x[i] * y[i]
			}
		})
		box(m, m)
	}
	e := float64(eps)
	for ch := range o.c {
		p := s.plane(ch)
		for c := range 3 {
			m, x := mIp[c], I[c]
			each(h, w, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					m[i] = x[i] * p[i]
				}
			})
			box(m, m)
		}
		box(mp, p)
		// a -> mIp, b -> mp.
		each(h, w, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				guidedColourAB(i, &mI, &mII, mp, &mIp, e)
			}
		})
		for c := range 3 {
			box(mIp[c], mIp[c])
		}
		box(mp, mp)
		a0, a1, a2, b := mIp[0], mIp[1], mIp[2], mp
		if fast {
			copy(ab.plane(0), a0)
			copy(ab.plane(1), a1)
			copy(ab.plane(2), a2)
			copy(ab.plane(3), b)
			if err := d.ResizeBilinear(up, ab); err != nil {
				return err
			}
			a0, a1, a2, b = up.plane(0), up.plane(1), up.plane(2), up.plane(3)
		}
		q := o.plane(ch)
		each(o.h, o.w, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				q[i] = a0[i]*G[0][i] + a1[i]*G[1][i] + a2[i]*G[2][i] + b[i]
			}
		})
	}
	return nil
}

// guidedColourPairs are the guide's channel pairs of the covariance
// planes, in order.
var guidedColourPairs = [6][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}}

// guidedColourAB is the colour guided filter's a/b step at pixel i, in
// float64: from the means of I, of I·Iᵀ, of p and of I·p it writes a
// into mIp and b into mp. Σ + eps·U is inverted by its adjugate; a is 0
// where its determinant or leading minors are not positive. The CUDA
// kernel vfx_guided3_ab does the same operations in the same order.
func guidedColourAB(i int, mI *[3][]float32, mII *[6][]float32, mp []float32, mIp *[3][]float32, eps float64) {
	m0, m1, m2 := float64(mI[0][i]), float64(mI[1][i]), float64(mI[2][i])
	p := float64(mp[i])
	s00 := max(float64(mII[0][i])-m0*m0, 0) + eps
	s01 := float64(mII[1][i]) - m0*m1
	s02 := float64(mII[2][i]) - m0*m2
	s11 := max(float64(mII[3][i])-m1*m1, 0) + eps
	s12 := float64(mII[4][i]) - m1*m2
	s22 := max(float64(mII[5][i])-m2*m2, 0) + eps
	c0 := float64(mIp[0][i]) - m0*p
	c1 := float64(mIp[1][i]) - m1*p
	c2 := float64(mIp[2][i]) - m2*p
	i00 := s11*s22 - s12*s12
	i01 := s02*s12 - s01*s22
	i02 := s01*s12 - s02*s11
	i11 := s00*s22 - s02*s02
	i12 := s01*s02 - s00*s12
	i22 := s00*s11 - s01*s01
	det := s00*i00 + s01*i01 + s02*i02
	var a0, a1, a2 float64
	if s00 > 0 && i22 > 0 && det > 0 {
		a0 = (i00*c0 + i01*c1 + i02*c2) / det
		a1 = (i01*c0 + i11*c1 + i12*c2) / det
		a2 = (i02*c0 + i12*c1 + i22*c2) / det
	}
	mIp[0][i], mIp[1][i], mIp[2][i] = float32(a0), float32(a1), float32(a2)
	mp[i] = float32(p - a0*m0 - a1*m1 - a2*m2)
}
