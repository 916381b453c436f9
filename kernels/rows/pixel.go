package rows

import "math"

// RatioRow writes q = s*(1 + a*(g-1)), g = clamp(en/max(eo, eps), 0, maxG)
// (a = 1 when al is nil; a NaN ratio counts as 0).
func RatioRow(q, s, en, eo, al []float32, eps, maxG float32) {
	if v := ratioRowSIMD(q, s, en, eo, al, eps, maxG); v > 0 {
		q, s, en, eo = q[v:], s[v:], en[v:], eo[v:]
		if al != nil {
			al = al[v:]
		}
	}
	n := len(q)
	s, en, eo = s[:n], en[:n], eo[:n]
	if al == nil {
		for i := range q {
			g := en[i] / max(eo[i], eps)
			if !(g > 0) {
				g = 0
			} else if g > maxG {
				g = maxG
			}
			q[i] = s[i] * (1 + 1*(g-1))
		}
		return
	}
	al = al[:n]
	for i := range q {
		g := en[i] / max(eo[i], eps)
		if !(g > 0) {
			g = 0
		} else if g > maxG {
			g = maxG
		}
		q[i] = s[i] * (1 + al[i]*(g-1))
	}
}

// Bilin holds, per output index, the two source indices and weights of a
// pixel-centre-aligned linear interpolation (clamped at the edges).
type Bilin struct {
	I0, I1 []int32
	W0, W1 []float32
}

// BilinTable is the Bilin table of a resampling from in to out samples.
func BilinTable(out, in int) Bilin {
	t := Bilin{make([]int32, out), make([]int32, out), make([]float32, out), make([]float32, out)}
	scale := float64(in) / float64(out)
	for i := range out {
		s := (float64(i)+0.5)*scale - 0.5
		s = max(s, 0)
		i0 := int(s)
		f := s - float64(i0)
		i1 := i0 + 1
		if i0 >= in-1 {
			i0, i1, f = in-1, in-1, 0
		}
		t.I0[i], t.I1[i] = int32(i0), int32(i1)
		t.W0[i], t.W1[i] = float32(1-f), float32(f)
	}
	return t
}

// hlerp writes o[x] = w0[x]*r[i0[x]] + w1[x]*r[i1[x]]: one source row
// resampled horizontally.
func hlerp(o, r []float32, xt *Bilin) {
	n := len(o)
	i0, i1 := xt.I0[:n], xt.I1[:n]
	w0, w1 := xt.W0[:n], xt.W1[:n]
	for x := hlerpSIMD(o, r, i0, i1, w0, w1); x < n; x++ {
		o[x] = w0[x]*r[i0[x]] + w1[x]*r[i1[x]]
	}
}

// Vlerp writes o = w0*a + w1*b.
func Vlerp(o, a, b []float32, w0, w1 float32) {
	if v := lerpRowSIMD(o, a, b, w0, w1); v > 0 {
		o, a, b = o[v:], a[v:], b[v:]
	}
	n := len(o)
	a, b = a[:n], b[:n]
	for x := range o {
		o[x] = w0*a[x] + w1*b[x]
	}
}

// Hrows caches horizontally resampled source rows of one plane. Bilinear
// sampling is horizontal first, then vertical: consecutive output rows
// share source rows, so each source row is resampled once per band.
// Every user of bilinear sampling (ResizeBilinear, GainComposite) goes
// through it, so they agree bit for bit. Only the output columns
// [xl, xr) set by reset are computed (the rest of a row is stale).
type Hrows struct {
	tag    [2]int
	buf    [2][]float32
	xl, xr int
}

// NewHrows returns a cache of two horizontally resampled rows of width w.
func NewHrows(w int) *Hrows {
	return &Hrows{tag: [2]int{-1, -1}, buf: [2][]float32{make([]float32, w), make([]float32, w)}, xr: w}
}

// Reset drops the cached rows and computes the full width from now on.
func (c *Hrows) Reset() { c.ResetRange(0, len(c.buf[0])) }

// ResetRange drops the cached rows and computes only columns [xl, xr).
func (c *Hrows) ResetRange(xl, xr int) {
	c.tag = [2]int{-1, -1}
	c.xl, c.xr = xl, xr
}

func (c *Hrows) get(p []float32, sw int, j, keep int, xt *Bilin) []float32 {
	for k := range 2 {
		if c.tag[k] == j {
			return c.buf[k]
		}
	}
	k := 0
	if c.tag[0] == keep {
		k = 1
	}
	hlerpRange(c.buf[k], p[j*sw:][:sw], xt, c.xl, c.xr)
	c.tag[k] = j
	return c.buf[k]
}

// hlerpRange is hlerp on output columns [xl, xr) only.
func hlerpRange(o, r []float32, xt *Bilin, xl, xr int) {
	if xl >= xr {
		return
	}
	if xl == 0 && xr == len(o) {
		hlerp(o, r, xt)
		return
	}
	sub := Bilin{xt.I0[xl:xr], xt.I1[xl:xr], xt.W0[xl:xr], xt.W1[xl:xr]}
	hlerp(o[xl:xr], r, &sub)
}

// grainInvSqrt is 1/sqrt(v) for v > 0 within 0.2% (relative): the
// exponent-halving first guess 0x5f3759df - bits/2 and one Newton step,
// as CompositeLook.Grain states (no square root or division per pixel).
func grainInvSqrt(v float32) float32 {
	y := math.Float32frombits(0x5f3759df - math.Float32bits(v)>>1)
	return y * (1.5 - float32(float32(0.5*v)*y)*y)
}

// NonzeroSpan returns [l, r): from the first to one past the last nonzero
// value of al (l == r when there is none).
func NonzeroSpan(al []float32) (l, r int) {
	r = len(al)
	// Eight values at a time: their bits ORed, less the sign bits, are 0
	// only when all eight are ±0.
	for l+8 <= r {
		p := al[l : l+8 : l+8]
		if (bits(p[0])|bits(p[1])|bits(p[2])|bits(p[3])|bits(p[4])|bits(p[5])|bits(p[6])|bits(p[7]))<<1 != 0 {
			break
		}
		l += 8
	}
	for l < r && al[l] == 0 {
		l++
	}
	for r-8 >= l {
		p := al[r-8 : r : r]
		if (bits(p[0])|bits(p[1])|bits(p[2])|bits(p[3])|bits(p[4])|bits(p[5])|bits(p[6])|bits(p[7]))<<1 != 0 {
			break
		}
		r -= 8
	}
	for r > l && al[r-1] == 0 {
		r--
	}
	return l, r
}

func bits(v float32) uint32 { return math.Float32bits(v) }

// SumTaps writes o[x] = k[0]*src[0][x] + k[1]*src[1][x] + ..., summed
// from 0 in tap order, as a scalar loop `var s float32; for j := range k
// { s += k[j] * src[j][x] }` does (bit for bit: the vector loop adds in
// the same order, with no fused multiply-add). Every src[j] must hold at
// least len(o) values; len(src) must be at least len(k). src is not
// changed.
func SumTaps(o []float32, src [][]float32, k []float32) {
	src = src[:len(k)]
	for x := sumTapsSIMD(o, src, k); x < len(o); x++ {
		var s float32
		for j, kv := range k {
			s += kv * src[j][x]
		}
		o[x] = s
	}
}

// ScaleRow writes o = k*c (the masked wrap's factor wrap*a).
func ScaleRow(o, c []float32, k float32) {
	c = c[:len(o)]
	for x := scaleRowSIMD(o, c, k); x < len(o); x++ {
		o[x] = k * c[x]
	}
}

// WrapFactor writes wf = wrap * a * (1 - ab) (a = 1 when al is nil).
func WrapFactor(wf, al, ab []float32, wrap float32) {
	ab = ab[:len(wf)]
	v := wrapFactorSIMD(wf, al, ab, wrap)
	if al == nil {
		for x := v; x < len(wf); x++ {
			wf[x] = wrap * 1 * (1 - ab[x])
		}
		return
	}
	al = al[:len(wf)]
	for x := v; x < len(wf); x++ {
		wf[x] = wrap * al[x] * (1 - ab[x])
	}
}

// The kinds of row kernel of gainRowsSIMD: gainRow, gainCompRow,
// gainCompWrapRow, gainWrapRow, gainOneRow and gainOneWrapRow.
const (
	gkPlain = iota
	gkComp
	gkCompWrap
	gkWrap
	gkOne
	gkOneWrap
)

// The row kernels below compute f = clamp(s * (w0*g0 + w1*g1), 0, maxV)
// (the gain sample as ResizeBilinear computes it) and then the
// Composite / LightWrap arithmetic, in the same order as those ops.

// GainOneRow and GainOneWrapRow are GainCompRow and GainCompWrapRow where
// every a is 1: a*f + (1-a)*b is f + 0 for finite b (the + 0 keeps the
// sign of a zero f exactly as the general formula does), so bg is not
// read.

// GainRow writes q = f (no matte, no wrap).
func GainRow(q, s, g0, g1 []float32, w0, w1, maxV float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	v := gainRowsSIMD(gkPlain, q, s, g0, g1, w0, w1, maxV, nil, nil, nil, nil)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = f
	}
}

// GainCompWrapRow writes q = a*f + (1-a)*b + wf*bb (al the matte row, b
// the background, wf the wrap factor, bb the blurred background).
func GainCompWrapRow(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, wf, bb []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	al, b, wf, bb = al[:n], b[:n], wf[:n], bb[:n]
	v := gainRowsSIMD(gkCompWrap, q, s, g0, g1, w0, w1, maxV, al, b, wf, bb)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		a := al[x]
		q[x] = a*f + (1-a)*b[x] + wf[x]*bb[x]
	}
}

// GainCompRow writes q = a*f + (1-a)*b (al the matte row, b the
// background).
func GainCompRow(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	al, b = al[:n], b[:n]
	v := gainRowsSIMD(gkComp, q, s, g0, g1, w0, w1, maxV, al, b, nil, nil)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		a := al[x]
		q[x] = a*f + (1-a)*b[x]
	}
}

// GainWrapRow writes q = f + wf*bb (no matte).
func GainWrapRow(q, s, g0, g1 []float32, w0, w1, maxV float32, wf, bb []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	wf, bb = wf[:n], bb[:n]
	v := gainRowsSIMD(gkWrap, q, s, g0, g1, w0, w1, maxV, nil, nil, wf, bb)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = f + wf[x]*bb[x]
	}
}

// GainOneRow writes q = f + 0 (a matte of 1).
func GainOneRow(q, s, g0, g1 []float32, w0, w1, maxV float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	v := gainRowsSIMD(gkOne, q, s, g0, g1, w0, w1, maxV, nil, nil, nil, nil)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = f + 0
	}
}

// GainOneWrapRow writes q = (f + 0) + wf*bb (a matte of 1).
func GainOneWrapRow(q, s, g0, g1 []float32, w0, w1, maxV float32, wf, bb []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	wf, bb = wf[:n], bb[:n]
	v := gainRowsSIMD(gkOneWrap, q, s, g0, g1, w0, w1, maxV, nil, nil, wf, bb)
	for x := v; x < n; x++ {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = (f + 0) + wf[x]*bb[x]
	}
}

// ShadeRow writes q = b * (1 - d).
func ShadeRow(q, b, d []float32) {
	n := len(q)
	b, d = b[:n], d[:n]
	for x := shadeRowSIMD(q, b, d); x < n; x++ {
		q[x] = b[x] * (1 - d[x])
	}
}

// LookRun is a run of fractional alpha of GainCompositeLook: the matte,
// bg, the optional wrap factor and bgBlur, shadow row and the
// horizontally resampled source rows of the foreground and
// old-background estimates (FgLow and BgOldLow, blended with the gain's
// vertical weights; nil = none), all from the run's first column.
type LookRun struct {
	Al, B, Wf, Bb, Sh  []float32
	Fm0, Fm1, Bm0, Bm1 []float32
	// FadeInv is 1/CompositeLook.EdgeFade (0 = no fade): f becomes
	// f - (1 - min(1, a*FadeInv))*max(0, f - s).
	FadeInv float32
}

// GainLookRow is gainCompRow / gainCompWrapRow with, where given, the
// source replaced by the estimated foreground and bg multiplied by the
// shadow, in the order of the CUDA kernel. Its estimates' samples are
// vlerp of hlerp'd rows: bit for bit the bilinear sample of the CUDA
// kernels' bilin_sample (hlerp then vlerp).
func GainLookRow(q, s, g0, g1 []float32, w0, w1, maxV float32, r *LookRun) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	al, b := r.Al[:n], r.B[:n]
	fm0, fm1, bm0, bm1, sh, wf, bb := r.Fm0, r.Fm1, r.Bm0, r.Bm1, r.Sh, r.Wf, r.Bb
	if fm0 != nil {
		fm0, fm1, bm0, bm1 = fm0[:n], fm1[:n], bm0[:n], bm1[:n]
	}
	if sh != nil {
		sh = sh[:n]
	}
	if wf != nil {
		wf, bb = wf[:n], bb[:n]
	}
	k := r.FadeInv
	for x := lookRowSIMD(q, s, g0, g1, w0, w1, maxV, al, b, fm0, fm1, bm0, bm1, sh, wf, bb, k); x < n; x++ {
		iv := s[x]
		a := al[x]
		if fm0 != nil {
			fm := w0*fm0[x] + w1*fm1[x]
			bm := w0*bm0[x] + w1*bm1[x]
			den := a*a + (1-a)*(1-a)
			fv := fm + a*(iv-a*fm-(1-a)*bm)/den
			if fv < 0 {
				fv = 0
			} else if fv > maxV {
				fv = maxV
			}
			iv = fv
		}
		f := iv * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		if k != 0 {
			f = fadeEdge(f, s[x], a, k)
		}
		bv := b[x]
		if sh != nil {
			bv *= 1 - sh[x]
		}
		if wf != nil {
			q[x] = a*f + (1-a)*bv + wf[x]*bb[x]
		} else {
			q[x] = a*f + (1-a)*bv
		}
	}
}

// Pair returns the resampled source rows j0 and j1 of plane p (width sw).
func (c *Hrows) Pair(p []float32, sw int, j0, j1 int, xt *Bilin) (r0, r1 []float32) {
	return c.get(p, sw, j0, j1, xt), c.get(p, sw, j1, j0, xt)
}

// GrainRow adds grain to columns [x0, x1) of the three channel rows qs
// (see kernels.CompositeLook.Grain): nrow is the grain tile's row for
// this output row, starting at its column gx (it repeats), al the matte
// row, amt the amount and maxV the cap.
func GrainRow(qs [3][]float32, al, nrow []float32, gx int, amt, maxV float32, x0, x1 int) {
	gw := len(nrow)
	for x := x0; x < x1; {
		// A segment that does not wrap round the tile.
		n := min(x1-x, gw-gx)
		ns := nrow[gx:][:n]
		as := al[x:][:n]
		q0, q1, q2 := qs[0][x:][:n], qs[1][x:][:n], qs[2][x:][:n]
		for i := grainRowSIMD(q0, q1, q2, as, ns, amt, maxV); i < n; i++ {
			nv := ns[i]
			t := float32(as[i]*amt) * nv
			a, b, c := q0[i], q1[i], q2[i]
			lum := float32(float32(float32(0.2126*a)+float32(0.7152*b)) + float32(0.0722*c))
			if !(lum > 1e-8) {
				lum = 1e-8
			}
			v := 1 + float32(t*grainInvSqrt(lum))
			if !(v > 0) {
				v = 0
			}
			f := v * v
			a, b, c = a*f, b*f, c*f
			if a > maxV {
				a = maxV
			}
			if b > maxV {
				b = maxV
			}
			if c > maxV {
				c = maxV
			}
			q0[i], q1[i], q2[i] = a, b, c
		}
		x += n
		gx = 0
	}
}

// fadeEdge is f - (1 - min(1, a*k))*max(0, f - i) (LookRun.FadeInv), in
// the order of the CUDA kernel and lookRowSIMD.
func fadeEdge(f, i, a, k float32) float32 {
	t := a * k
	if t > 1 {
		t = 1
	}
	d := f - i
	if d < 0 {
		d = 0
	}
	return f - float32((1-t)*d)
}
