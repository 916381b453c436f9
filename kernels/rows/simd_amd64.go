//go:build goexperiment.simd && amd64

package rows

import (
	mbits "math/bits"
	"simd/archsimd"
)

// The CPU backend's hottest row loops in AVX2 (Go's simd/archsimd, built
// with GOEXPERIMENT=simd: the Makefile and the Dockerfiles set it). Each
// vector loop does the scalar loop's operations in the same order, with no
// fused multiply-add, so its results are bit for bit the scalar ones
// (TestSIMDMatchesScalar); the tails and machines without AVX2 take the
// scalar loops.

// simdOn reports whether the vector loops run (the CPU has AVX2). It is
// set once at package initialisation and only read after.
var simdOn = archsimd.X86.AVX2()

const lanes = 8

func load(s []float32) archsimd.Float32x8 { return archsimd.LoadFloat32x8Slice(s) }
func bcast(v float32) archsimd.Float32x8  { return archsimd.BroadcastFloat32x8(v) }

// ratioRowSIMD is ratioRow's vector loop over the first multiple of 8
// values; it returns how many it did (0 without AVX2).
func ratioRowSIMD(q, s, en, eo, al []float32, eps, maxG float32) int {
	if !simdOn {
		return 0
	}
	n := len(q) &^ (lanes - 1)
	s, en, eo = s[:len(q)], en[:len(q)], eo[:len(q)]
	E, M, Z, O := bcast(eps), bcast(maxG), bcast(0), bcast(1)
	for i := 0; i < n; i += lanes {
		d := load(eo[i:])
		g := load(en[i:]).Div(d.Max(E))
		// !(g > 0) -> 0 (NaN included; a NaN eOld makes g NaN in the
		// scalar max), else at most maxG.
		g = g.Min(M).Masked(g.Greater(Z).And(d.Equal(d)))
		a := O
		if al != nil {
			a = load(al[i:])
		}
		load(s[i:]).Mul(O.Add(a.Mul(g.Sub(O)))).StoreSlice(q[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// shEvalSIMD is shEvalRows' vector loop (see ratioRowSIMD).
func shEvalSIMD(outs [][]float32, nx, ny, nz []float32, cf [][9]float32) int {
	if !simdOn {
		return 0
	}
	n := len(nx) &^ (lanes - 1)
	ny, nz = ny[:len(nx)], nz[:len(nx)]
	C0, C1, C2, C3, C4 := bcast(shK0), bcast(shK1), bcast(shK2), bcast(shK3), bcast(shK4)
	three, one := bcast(3), bcast(1)
	var k [3][9]archsimd.Float32x8
	for c := range cf {
		for j := range 9 {
			k[c][j] = bcast(cf[c][j])
		}
	}
	var o [3][]float32
	for c := range cf {
		o[c] = outs[c][:len(nx)]
	}
	for i := 0; i < n; i += lanes {
		x, y, z := load(nx[i:]), load(ny[i:]), load(nz[i:])
		b1, b2, b3 := C1.Mul(y), C1.Mul(z), C1.Mul(x)
		b4, b5 := C2.Mul(x).Mul(y), C2.Mul(y).Mul(z)
		b6 := C3.Mul(three.Mul(z).Mul(z).Sub(one))
		b7, b8 := C2.Mul(x).Mul(z), C4.Mul(x.Mul(x).Sub(y.Mul(y)))
		for c := range cf {
			kc := &k[c]
			kc[0].Mul(C0).Add(kc[1].Mul(b1)).Add(kc[2].Mul(b2)).Add(kc[3].Mul(b3)).Add(kc[4].Mul(b4)).
				Add(kc[5].Mul(b5)).Add(kc[6].Mul(b6)).Add(kc[7].Mul(b7)).Add(kc[8].Mul(b8)).StoreSlice(o[c][i:])
		}
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// scaleRowSIMD: o[x] = k*c[x].
func scaleRowSIMD(o, c []float32, k float32) int {
	if !simdOn {
		return 0
	}
	n := len(o) &^ (lanes - 1)
	c = c[:len(o)]
	K := bcast(k)
	for i := 0; i < n; i += lanes {
		K.Mul(load(c[i:])).StoreSlice(o[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// pairRowSIMD: o[x] = o[x] + ki*(a[x]+b[x]).
func pairRowSIMD(o, a, b []float32, ki float32) int {
	if !simdOn {
		return 0
	}
	n := len(o) &^ (lanes - 1)
	a, b = a[:len(o)], b[:len(o)]
	K := bcast(ki)
	for i := 0; i < n; i += lanes {
		load(o[i:]).Add(K.Mul(load(a[i:]).Add(load(b[i:])))).StoreSlice(o[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// pair2RowSIMD: o[x] = o[x] + ki*(a[x]+b[x]) + kj*(c[x]+e[x]).
func pair2RowSIMD(o, a, b, c, e []float32, ki, kj float32) int {
	if !simdOn {
		return 0
	}
	n := len(o) &^ (lanes - 1)
	a, b, c, e = a[:len(o)], b[:len(o)], c[:len(o)], e[:len(o)]
	KI, KJ := bcast(ki), bcast(kj)
	for i := 0; i < n; i += lanes {
		load(o[i:]).Add(KI.Mul(load(a[i:]).Add(load(b[i:])))).Add(KJ.Mul(load(c[i:]).Add(load(e[i:])))).StoreSlice(o[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// lerpRowSIMD: o[x] = w0*a[x] + w1*b[x].
func lerpRowSIMD(o, a, b []float32, w0, w1 float32) int {
	if !simdOn {
		return 0
	}
	n := len(o) &^ (lanes - 1)
	a, b = a[:len(o)], b[:len(o)]
	W0, W1 := bcast(w0), bcast(w1)
	for i := 0; i < n; i += lanes {
		W0.Mul(load(a[i:])).Add(W1.Mul(load(b[i:]))).StoreSlice(o[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// taps4RowSIMD: t[x] = w0*r0[x] + w1*r1[x] + w2*r2[x] + w3*r3[x].
func taps4RowSIMD(t, r0, r1, r2, r3 []float32, w0, w1, w2, w3 float32) int {
	if !simdOn {
		return 0
	}
	n := len(t) &^ (lanes - 1)
	r0, r1, r2, r3 = r0[:len(t)], r1[:len(t)], r2[:len(t)], r3[:len(t)]
	W0, W1, W2, W3 := bcast(w0), bcast(w1), bcast(w2), bcast(w3)
	for i := 0; i < n; i += lanes {
		W0.Mul(load(r0[i:])).Add(W1.Mul(load(r1[i:]))).Add(W2.Mul(load(r2[i:]))).Add(W3.Mul(load(r3[i:]))).StoreSlice(t[i:])
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// clampV is the scalar clamp "if f < 0 {0} else if f > maxV {maxV}":
// NaN and -0 pass unchanged.
func clampV(f, Z, M archsimd.Float32x8) archsimd.Float32x8 {
	f = Z.Merge(f, f.Less(Z))
	return M.Merge(f, f.Greater(M))
}

// gainRowsSIMD is the composite's row kernels' vector loop (kind: see
// gkPlain): f = clamp(s*(w0*g0 + w1*g1), 0, maxV), then their blends.

func gainRowsSIMD(kind int, q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, wf, bb []float32) int {
	if !simdOn {
		return 0
	}
	m := len(q)
	n := m &^ (lanes - 1)
	s, g0, g1 = s[:m], g0[:m], g1[:m]
	switch kind {
	case gkComp, gkCompWrap:
		al, b = al[:m], b[:m]
	}
	switch kind {
	case gkCompWrap, gkWrap, gkOneWrap:
		wf, bb = wf[:m], bb[:m]
	}
	W0, W1, Z, M, O := bcast(w0), bcast(w1), bcast(0), bcast(maxV), bcast(1)
	for i := 0; i < n; i += lanes {
		f := clampV(load(s[i:]).Mul(W0.Mul(load(g0[i:])).Add(W1.Mul(load(g1[i:])))), Z, M)
		switch kind {
		case gkComp, gkCompWrap:
			a := load(al[i:])
			f = a.Mul(f).Add(O.Sub(a).Mul(load(b[i:])))
		case gkOne, gkOneWrap:
			f = f.Add(Z)
		}
		switch kind {
		case gkCompWrap, gkWrap, gkOneWrap:
			f = f.Add(load(wf[i:]).Mul(load(bb[i:])))
		}
		f.StoreSlice(q[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// lookRowSIMD is gainLookRow's vector loop (see ratioRowSIMD): fm0 nil =
// no foreground estimate, sh nil = no shadow, wf nil = no wrap, k 0 =
// no edge fade (fadeEdge); the slices are at least len(q) long.
func lookRowSIMD(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, fm0, fm1, bm0, bm1, sh, wf, bb []float32, k float32) int {
	if !simdOn {
		return 0
	}
	m := len(q)
	n := m &^ (lanes - 1)
	s, g0, g1, al, b = s[:m], g0[:m], g1[:m], al[:m], b[:m]
	est, shade, wrap := fm0 != nil, sh != nil, wf != nil
	if est {
		fm0, fm1, bm0, bm1 = fm0[:m], fm1[:m], bm0[:m], bm1[:m]
	}
	if shade {
		sh = sh[:m]
	}
	if wrap {
		wf, bb = wf[:m], bb[:m]
	}
	W0, W1, Z, M, O, K := bcast(w0), bcast(w1), bcast(0), bcast(maxV), bcast(1), bcast(k)
	fade := k != 0
	for i := 0; i < n; i += lanes {
		iv, a := load(s[i:]), load(al[i:])
		i0 := iv
		oa := O.Sub(a)
		if est {
			fm := W0.Mul(load(fm0[i:])).Add(W1.Mul(load(fm1[i:])))
			bm := W0.Mul(load(bm0[i:])).Add(W1.Mul(load(bm1[i:])))
			den := a.Mul(a).Add(oa.Mul(oa))
			iv = clampV(fm.Add(a.Mul(iv.Sub(a.Mul(fm)).Sub(oa.Mul(bm))).Div(den)), Z, M)
		}
		f := clampV(iv.Mul(W0.Mul(load(g0[i:])).Add(W1.Mul(load(g1[i:])))), Z, M)
		if fade {
			t := a.Mul(K)
			t = O.Merge(t, t.Greater(O)) // t > 1 -> 1
			d := f.Sub(i0)
			d = Z.Merge(d, d.Less(Z)) // d < 0 -> 0
			f = f.Sub(O.Sub(t).Mul(d))
		}
		bv := load(b[i:])
		if shade {
			bv = bv.Mul(O.Sub(load(sh[i:])))
		}
		o := a.Mul(f).Add(oa.Mul(bv))
		if wrap {
			o = o.Add(load(wf[i:]).Mul(load(bb[i:])))
		}
		o.StoreSlice(q[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// grainRowSIMD is grainRow's vector loop over one segment (see
// ratioRowSIMD): q0, q1 and q2 (the composited channels) scaled by
// (1 + a*amt*n/sqrt(lum))^2 and clamped to maxV, with grainInvSqrt's
// bit trick and Newton step done on the vectors' bits.
func grainRowSIMD(q0, q1, q2, al, nv []float32, amt, maxV float32) int {
	if !simdOn {
		return 0
	}
	m := len(q0)
	n := m &^ (lanes - 1)
	q1, q2, al, nv = q1[:m], q2[:m], al[:m], nv[:m]
	AMT, M, Z, O := bcast(amt), bcast(maxV), bcast(0), bcast(1)
	KR, KG, KB, EPS := bcast(0.2126), bcast(0.7152), bcast(0.0722), bcast(1e-8)
	MAGIC, H, T15 := archsimd.BroadcastUint32x8(0x5f3759df), bcast(0.5), bcast(1.5)
	for i := 0; i < n; i += lanes {
		t := load(al[i:]).Mul(AMT).Mul(load(nv[i:]))
		a, b, c := load(q0[i:]), load(q1[i:]), load(q2[i:])
		lum := KR.Mul(a).Add(KG.Mul(b)).Add(KB.Mul(c))
		lum = lum.Merge(EPS, lum.Greater(EPS)) // !(lum > 1e-8) -> 1e-8, NaN included
		y := MAGIC.Sub(lum.AsUint32x8().ShiftAllRight(1)).AsFloat32x8()
		inv := y.Mul(T15.Sub(H.Mul(lum).Mul(y).Mul(y)))
		v := O.Add(t.Mul(inv))
		v = v.Merge(Z, v.Greater(Z)) // !(v > 0) -> 0
		f := v.Mul(v)
		a, b, c = a.Mul(f), b.Mul(f), c.Mul(f)
		M.Merge(a, a.Greater(M)).StoreSlice(q0[i:])
		M.Merge(b, b.Greater(M)).StoreSlice(q1[i:])
		M.Merge(c, c.Greater(M)).StoreSlice(q2[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// hlerpSIMD is hlerp's vector loop (see ratioRowSIMD) for upsampling:
// each block of 8 outputs whose source columns lie within 8 of its first
// (i1[x+7] - i0[x] < 8, as in any upsampling by 8/7 or more) loads those
// 8 source values once and picks each output's two with a permute
// (VPERMPS) instead of a gather; the other blocks (downsampling) are
// left to the scalar loop, which resumes at the first of them.
func hlerpSIMD(o, r []float32, i0, i1 []int32, w0, w1 []float32) int {
	if !simdOn {
		return 0
	}
	m := len(o)
	i0, i1, w0, w1 = i0[:m], i1[:m], w0[:m], w1[:m]
	x := 0
	for ; x+lanes <= m; x += lanes {
		base := i0[x]
		if i1[x+lanes-1]-base >= lanes {
			break
		}
		v := archsimd.LoadFloat32x8SlicePart(r[base:]) // past r's end: zeros, never picked
		B := archsimd.BroadcastInt32x8(base)
		k0 := archsimd.LoadInt32x8Slice(i0[x:]).Sub(B).AsUint32x8()
		k1 := archsimd.LoadInt32x8Slice(i1[x:]).Sub(B).AsUint32x8()
		load(w0[x:]).Mul(v.Permute(k0)).Add(load(w1[x:]).Mul(v.Permute(k1))).StoreSlice(o[x:])
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// EqPrefixSIMD returns how many values at the start of s have (s[i] ==
// v) == want, eight at a time: the index of the first that does not, or
// the end of the last whole block of eight (0 without AVX2); the caller's
// scalar loop goes on from there. == is the scalar comparison (NaN equals
// nothing, -0 equals 0).
func EqPrefixSIMD(s []float32, v float32, want bool) int {
	if !simdOn {
		return 0
	}
	n := len(s) &^ (lanes - 1)
	V := bcast(v)
	i := 0
	for ; i < n; i += lanes {
		b := load(s[i:]).Equal(V).ToBits()
		if want {
			b = ^b
		}
		if b != 0 {
			i += mbits.TrailingZeros8(b)
			break
		}
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// shadeRowSIMD: q = b*(1-d).
func shadeRowSIMD(q, b, d []float32) int {
	if !simdOn {
		return 0
	}
	n := len(q) &^ (lanes - 1)
	b, d = b[:len(q)], d[:len(q)]
	O := bcast(1)
	for i := 0; i < n; i += lanes {
		load(b[i:]).Mul(O.Sub(load(d[i:]))).StoreSlice(q[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// wrapFactorSIMD: wf = wrap*al*(1-ab) (al nil: wrap*1*(1-ab)).
func wrapFactorSIMD(wf, al, ab []float32, wrap float32) int {
	if !simdOn {
		return 0
	}
	n := len(wf) &^ (lanes - 1)
	ab = ab[:len(wf)]
	W, O := bcast(wrap), bcast(1)
	if al != nil {
		al = al[:len(wf)]
	}
	for i := 0; i < n; i += lanes {
		a := O
		if al != nil {
			a = load(al[i:])
		}
		W.Mul(a).Mul(O.Sub(load(ab[i:]))).StoreSlice(wf[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// HeightRowSIMD is NormalsFromMatte's first loop: H = radius*sqrt(max(1 -
// u*u, 0)), u = 1 - min(D/radius, 1) (0 when radius <= 0), plus
// detailStrength*DT when DT is given. A float32 square root equals the
// float64 one rounded to float32 (binary64 has more than 2*24+2 bits).
func HeightRowSIMD(H, D, DT []float32, radius, detailStrength float32) int {
	if !simdOn {
		return 0
	}
	n := len(H) &^ (lanes - 1)
	D = D[:len(H)]
	if DT != nil {
		DT = DT[:len(H)]
	}
	R, O, Z, S := bcast(radius), bcast(1), bcast(0), bcast(detailStrength)
	for i := 0; i < n; i += lanes {
		hv := Z
		if radius > 0 {
			t := load(D[i:]).Div(R)
			t = O.Merge(t, t.Greater(O)) // min(t, 1), NaN kept
			u := O.Sub(t)
			v := O.Sub(u.Mul(u))
			v = Z.Merge(v, v.LessEqual(Z)) // max(v, 0), NaN kept
			hv = R.Mul(v.Sqrt())
		}
		if DT != nil {
			hv = hv.Add(S.Mul(load(DT[i:])))
		}
		hv.StoreSlice(H[i:])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// NormalRowSIMD is NormalsFromMatte's second loop for columns 1 ..
// len(hr)-2 in blocks of 8 (the clamped edge columns stay scalar); it
// returns one past the last column done (1 when none).
func NormalRowSIMD(nx, ny, nz, hr, up, dn, dr []float32) int {
	w := len(hr)
	if !simdOn || w < 2+lanes {
		return 1
	}
	up, dn, dr = up[:w], dn[:w], dr[:w]
	nx, ny, nz = nx[:w], ny[:w], nz[:w]
	H, O, Z := bcast(0.5), bcast(1), bcast(0)
	sign := archsimd.BroadcastInt32x8(-1 << 31)
	x := 1
	for ; x+lanes <= w-1; x += lanes {
		gx := load(hr[x+1:]).Sub(load(hr[x-1:])).Mul(H)
		gy := load(dn[x:]).Sub(load(up[x:])).Mul(H)
		inv := O.Div(gx.Mul(gx).Add(gy.Mul(gy)).Add(O).Sqrt())
		in := load(dr[x:]).Greater(Z)
		gx.Mul(inv).AsInt32x8().Xor(sign).AsFloat32x8().Masked(in).StoreSlice(nx[x:])
		gy.Mul(inv).Masked(in).StoreSlice(ny[x:])
		inv.Merge(O, in).StoreSlice(nz[x:])
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// SHNormalSIMD is shNormalRows with each pixel's 54 products and sums
// done four accumulators at a time (Float64x4 across the entries of ata
// and atb, not across pixels): every accumulator still adds its pixels'
// products one by one in pixel order, so the sums are the scalar ones bit
// for bit. acc must be zero; it reports false (nothing done) without AVX2.
func SHNormalSIMD(acc *[54]float64, s, nx, ny, nz, m []float32) bool {
	if !simdOn {
		return false
	}
	n := len(s)
	nx, ny, nz = nx[:n], ny[:n], nz[:n]
	if m != nil {
		m = m[:n]
	}
	// bp holds the basis with three zeros after it, so that the vectors
	// starting at any of its 9 values can be loaded; the lanes past the
	// 9th only ever hold products of zero and are dropped.
	var bp [12]float64
	b := (*[9]float64)(bp[:9])
	ld := archsimd.LoadFloat64x4Slice
	bc := archsimd.BroadcastFloat64x4
	var a00, a01, a02, a10, a11, a20, a21, a30, a31, a40, a41, a5, a6, a7, a8, t0, t1, t2 archsimd.Float64x4
	for i := range s {
		wt := 1.0
		if m != nil {
			wt = float64(m[i])
			if wt == 0 {
				continue
			}
		}
		SHBasis(b, float64(nx[i]), float64(ny[i]), float64(nz[i]))
		ws := wt * float64(s[i])
		b0, b1, b2, b3, b4 := ld(bp[0:]), ld(bp[1:]), ld(bp[2:]), ld(bp[3:]), ld(bp[4:])
		b5, b6, b7, b8 := ld(bp[5:]), ld(bp[6:]), ld(bp[7:]), ld(bp[8:])
		w := bc(wt * bp[0])
		a00, a01, a02 = a00.Add(w.Mul(b0)), a01.Add(w.Mul(b4)), a02.Add(w.Mul(b8))
		w = bc(wt * bp[1])
		a10, a11 = a10.Add(w.Mul(b1)), a11.Add(w.Mul(b5))
		w = bc(wt * bp[2])
		a20, a21 = a20.Add(w.Mul(b2)), a21.Add(w.Mul(b6))
		w = bc(wt * bp[3])
		a30, a31 = a30.Add(w.Mul(b3)), a31.Add(w.Mul(b7))
		w = bc(wt * bp[4])
		a40, a41 = a40.Add(w.Mul(b4)), a41.Add(w.Mul(b8))
		a5 = a5.Add(bc(wt * bp[5]).Mul(b5))
		a6 = a6.Add(bc(wt * bp[6]).Mul(b6))
		a7 = a7.Add(bc(wt * bp[7]).Mul(b7))
		a8 = a8.Add(bc(wt * bp[8]).Mul(b8))
		w = bc(ws)
		t0, t1, t2 = t0.Add(w.Mul(b0)), t1.Add(w.Mul(b4)), t2.Add(w.Mul(b8))
	}
	// Back to shNormalRows' layout: row r's entries c = r..8, then atb.
	var v [4 * 18]float64
	for k, x := range []archsimd.Float64x4{a00, a01, a02, a10, a11, a20, a21, a30, a31, a40, a41, a5, a6, a7, a8, t0, t1, t2} {
		x.StoreSlice(v[4*k:])
	}
	archsimd.ClearAVXUpperBits()
	k, o := 0, 0
	for r := range 9 {
		nr := 9 - r
		copy(acc[k:k+nr], v[o:o+nr])
		k += nr
		o += (nr + 3) &^ 3
	}
	copy(acc[45:54], v[o:o+9])
	return true
}

// ShiftRowSIMD is Shift's row loop (see ratioRowSIMD) over the whole
// blocks of 8 of row: a block whose taps are 8 consecutive source columns
// (blocks[k] >= 0, see ShiftBlocks) loads them and their right
// neighbours from r0 and r1; a block of one column (ShiftBlockOne, past a
// border) broadcasts its four values and weight; the mixed ones take
// ShiftPix after the vector loop (scalar float code runs slowly here while
// the upper halves of the vector registers are dirty). It returns the
// columns done; the scalar loop does the rest.
func ShiftRowSIMD(row, r0, r1, fx []float32, blocks []int32, x0, x1 []int, ty float32) int {
	if !simdOn {
		return 0
	}
	m := len(blocks) * lanes
	row, fx, x0, x1 = row[:m], fx[:m], x0[:m], x1[:m]
	TY, OTY, O := bcast(ty), bcast(1-ty), bcast(1)
	mixed := false
	for k, base := range blocks {
		x := k * lanes
		if base >= 0 {
			tx := load(fx[x:])
			otx := O.Sub(tx)
			top := otx.Mul(load(r0[base:])).Add(tx.Mul(load(r0[base+1:])))
			bot := otx.Mul(load(r1[base:])).Add(tx.Mul(load(r1[base+1:])))
			OTY.Mul(top).Add(TY.Mul(bot)).StoreSlice(row[x:])
			continue
		}
		if base != ShiftBlockOne {
			mixed = true
			continue
		}
		i0, i1 := x0[x], x1[x]
		tx := bcast(fx[x])
		otx := O.Sub(tx)
		top := otx.Mul(bcast(r0[i0])).Add(tx.Mul(bcast(r0[i1])))
		bot := otx.Mul(bcast(r1[i0])).Add(tx.Mul(bcast(r1[i1])))
		OTY.Mul(top).Add(TY.Mul(bot)).StoreSlice(row[x:])
	}
	archsimd.ClearAVXUpperBits()
	if mixed {
		for k, base := range blocks {
			if base == ShiftBlockMixed {
				for j := k * lanes; j < (k+1)*lanes; j++ {
					row[j] = ShiftPix(r0, r1, x0[j], x1[j], fx[j], ty)
				}
			}
		}
	}
	return m
}

// dotsSIMD is Dots with a vector of 8 partial sums per row, four rows at
// a time (independent sums, so that the additions overlap); it reports
// false (nothing done) without AVX2 or when len(q) is not a multiple of 8.
func dotsSIMD(out, q, keys []float32) bool {
	c := len(q)
	if !simdOn || c%lanes != 0 || c == 0 {
		return false
	}
	var s [lanes8]float32
	e := 0
	for ; e+4 <= len(out); e += 4 {
		k0, k1, k2, k3 := keys[e*c:(e+1)*c], keys[(e+1)*c:(e+2)*c], keys[(e+2)*c:(e+3)*c], keys[(e+3)*c:(e+4)*c]
		a0, a1, a2, a3 := bcast(0), bcast(0), bcast(0), bcast(0)
		for i := 0; i < c; i += lanes {
			v := load(q[i:])
			a0 = a0.Add(v.Mul(load(k0[i:])))
			a1 = a1.Add(v.Mul(load(k1[i:])))
			a2 = a2.Add(v.Mul(load(k2[i:])))
			a3 = a3.Add(v.Mul(load(k3[i:])))
		}
		for j, a := range [4]archsimd.Float32x8{a0, a1, a2, a3} {
			a.StoreSlice(s[:])
			out[e+j] = sum8(&s)
		}
	}
	for ; e < len(out); e++ {
		k := keys[e*c : (e+1)*c]
		acc := bcast(0)
		for i := 0; i < c; i += lanes {
			acc = acc.Add(load(q[i:]).Mul(load(k[i:])))
		}
		acc.StoreSlice(s[:])
		out[e] = sum8(&s)
	}
	return true
}
