//go:build goexperiment.simd && amd64

package rows

import (
	mbits "math/bits"
	"simd/archsimd"
	"unsafe"
)

// The CPU backend's hottest row loops in AVX2 (Go's simd/archsimd, built
// with GOEXPERIMENT=simd: the Makefile and the Dockerfiles set it). Each
// vector loop does the scalar loop's operations in the same order, with no
// fused multiply-add, so its results are bit for bit the scalar ones
// (TestSIMDMatchesScalar); the tails and machines without AVX2 take the
// scalar loops. (One exception, by design: exp4 fuses exactly where
// math.Exp's own amd64 code fuses, so as to give math.Exp's bits.)

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
	if al != nil {
		al = al[:len(q)]
	}
	E, M, Z, O := bcast(eps), bcast(maxG), bcast(0), bcast(1)
	pq, ps, pen, peo, pal := base(q), base(s), base(en), base(eo), base(al)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		d := at(peo, i)
		g := at(pen, i).Div(d.Max(E))
		// !(g > 0) -> 0 (NaN included; a NaN eOld makes g NaN in the
		// scalar max), else at most maxG.
		g = g.Min(M).Masked(g.Greater(Z).And(d.Equal(d)))
		a := O
		if al != nil {
			a = at(pal, i)
		}
		put(at(ps, i).Mul(O.Add(a.Mul(g.Sub(O)))), pq, i)
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
	po, pc := base(o), base(c)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(K.Mul(at(pc, i)), po, i)
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}

// sumTapsSIMD is SumTaps' vector loop: per lane, from 0, + k[j]*src[j][x]
// in tap order.
func sumTapsSIMD(o []float32, src [][]float32, k []float32) int {
	if !simdOn || len(k) == 0 || len(k) > 64 {
		return 0
	}
	n := len(o) &^ (lanes - 1)
	var ps [64]unsafe.Pointer
	var ks [64]archsimd.Float32x8
	for j := range k {
		ps[j], ks[j] = base(src[j][:len(o)]), bcast(k[j])
	}
	po := base(o)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		var acc archsimd.Float32x8
		for j := range k {
			acc = acc.Add(ks[j].Mul(at(ps[j], i)))
		}
		put(acc, po, i)
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
	po, pa, pb := base(o), base(a), base(b)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(at(po, i).Add(K.Mul(at(pa, i).Add(at(pb, i)))), po, i)
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
	po, pa, pb, pc, pe := base(o), base(a), base(b), base(c), base(e)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(at(po, i).Add(KI.Mul(at(pa, i).Add(at(pb, i)))).Add(KJ.Mul(at(pc, i).Add(at(pe, i)))), po, i)
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
	po, pa, pb := base(o), base(a), base(b)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(W0.Mul(at(pa, i)).Add(W1.Mul(at(pb, i))), po, i)
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
	pt, p0, p1, p2, p3 := base(t), base(r0), base(r1), base(r2), base(r3)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(W0.Mul(at(p0, i)).Add(W1.Mul(at(p1, i))).Add(W2.Mul(at(p2, i))).Add(W3.Mul(at(p3, i))), pt, i)
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
	pq, ps, pg0, pg1, pal, pb, pwf, pbb := base(q), base(s), base(g0), base(g1), base(al), base(b), base(wf), base(bb)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		f := clampV(at(ps, i).Mul(W0.Mul(at(pg0, i)).Add(W1.Mul(at(pg1, i)))), Z, M)
		switch kind {
		case gkComp, gkCompWrap:
			a := at(pal, i)
			f = a.Mul(f).Add(O.Sub(a).Mul(at(pb, i)))
		case gkOne, gkOneWrap:
			f = f.Add(Z)
		}
		switch kind {
		case gkCompWrap, gkWrap, gkOneWrap:
			f = f.Add(at(pwf, i).Mul(at(pbb, i)))
		}
		put(f, pq, i)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// lookRowSIMD is gainLookRow's vector loop (see ratioRowSIMD): fm0 nil =
// no foreground estimate, sh nil = no shadow, wf nil = no wrap, k 0 =
// no edge fade (fadeEdge); the slices are at least len(q) long. Its
// twelve rows are read through their base addresses at one byte offset
// (see at): with slice expressions per load the loop spent most of its
// instructions on bounds checks and reloading the slices from the stack.
func lookRowSIMD(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, fm0, fm1, bm0, bm1, sh, wf, bb []float32, k float32) int {
	if !simdOn {
		return 0
	}
	m := len(q)
	n := m &^ (lanes - 1)
	if n == 0 {
		return 0
	}
	// The bounds, checked once: every row holds at least m values.
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
	pq, ps, pg0, pg1, pal, pb := base(q), base(s), base(g0), base(g1), base(al), base(b)
	pfm0, pfm1, pbm0, pbm1, psh, pwf, pbb := base(fm0), base(fm1), base(bm0), base(bm1), base(sh), base(wf), base(bb)
	W0, W1, Z, M, O, K := bcast(w0), bcast(w1), bcast(0), bcast(maxV), bcast(1), bcast(k)
	fade := k != 0
	for o := uintptr(0); o < uintptr(n)*4; o += lanes * 4 {
		iv, a := at(ps, o), at(pal, o)
		i0 := iv
		oa := O.Sub(a)
		if est {
			fm := W0.Mul(at(pfm0, o)).Add(W1.Mul(at(pfm1, o)))
			bm := W0.Mul(at(pbm0, o)).Add(W1.Mul(at(pbm1, o)))
			den := a.Mul(a).Add(oa.Mul(oa))
			iv = clampV(fm.Add(a.Mul(iv.Sub(a.Mul(fm)).Sub(oa.Mul(bm))).Div(den)), Z, M)
		}
		f := clampV(iv.Mul(W0.Mul(at(pg0, o)).Add(W1.Mul(at(pg1, o)))), Z, M)
		if fade {
			t := a.Mul(K)
			t = O.Merge(t, t.Greater(O)) // t > 1 -> 1
			d := f.Sub(i0)
			d = Z.Merge(d, d.Less(Z)) // d < 0 -> 0
			f = f.Sub(O.Sub(t).Mul(d))
		}
		bv := at(pb, o)
		if shade {
			bv = bv.Mul(O.Sub(at(psh, o)))
		}
		r := a.Mul(f).Add(oa.Mul(bv))
		if wrap {
			r = r.Add(at(pwf, o).Mul(at(pbb, o)))
		}
		put(r, pq, o)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// gray8RowSIMD is Gray8Row's vector loop: eight codes zero-extended to
// int32, converted to float32 (exact) and divided by 255 (VDIVPS rounds
// like the scalar division). It loads 16 bytes for 8 codes, so it stops
// where fewer than 16 remain and returns how many it did.
func gray8RowSIMD(o []float32, s []byte) int {
	if !simdOn || len(s) < 16 {
		return 0
	}
	s = s[:len(o)]
	n := (len(s) - 8) &^ (lanes - 1) // the last load reads s[n-8 : n+8]
	K := bcast(255)
	po, ps := base(o), unsafe.Pointer(unsafe.SliceData(s))
	for i := uintptr(0); i < uintptr(n); i += lanes {
		c := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(ps, i)))
		v := c.ExtendLo8ToUint32().AsInt32x8().ConvertToFloat32().Div(K)
		put(v, po, 4*i)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// areaGray4RowSIMD is AreaGray4Row's vector loop: for eight outputs,
// each of the four rows' 32 codes loaded as eight little-endian words,
// byte j of each word (phase j of the output's four columns) shifted
// down, converted and divided by 255 (gray8RowSIMD's exact conversion),
// then summed in the scalar order: per phase over the rows, then
// 0.0625*((s0+s2)+(s1+s3)). It returns how many outputs it did.
func areaGray4RowSIMD(o []float32, r0, r1, r2, r3 []byte) int {
	if !simdOn {
		return 0
	}
	m := len(o)
	n := m &^ (lanes - 1)
	r0, r1, r2, r3 = r0[:4*m], r1[:4*m], r2[:4*m], r3[:4*m]
	K, Q := bcast(255), bcast(0.0625)
	B := archsimd.BroadcastUint32x8(0xFF)
	po := base(o)
	p := [4]unsafe.Pointer{
		unsafe.Pointer(unsafe.SliceData(r0)), unsafe.Pointer(unsafe.SliceData(r1)),
		unsafe.Pointer(unsafe.SliceData(r2)), unsafe.Pointer(unsafe.SliceData(r3)),
	}
	conv := func(w archsimd.Uint32x8, j uint64) archsimd.Float32x8 {
		return w.ShiftAllRight(8 * j).And(B).AsInt32x8().ConvertToFloat32().Div(K)
	}
	for x := uintptr(0); x < uintptr(n); x += lanes {
		w0 := archsimd.LoadUint32x8((*[lanes]uint32)(unsafe.Add(p[0], 4*x)))
		w1 := archsimd.LoadUint32x8((*[lanes]uint32)(unsafe.Add(p[1], 4*x)))
		w2 := archsimd.LoadUint32x8((*[lanes]uint32)(unsafe.Add(p[2], 4*x)))
		w3 := archsimd.LoadUint32x8((*[lanes]uint32)(unsafe.Add(p[3], 4*x)))
		var s [4]archsimd.Float32x8
		for j := range uint64(4) {
			s[j] = conv(w0, j).Add(conv(w1, j)).Add(conv(w2, j)).Add(conv(w3, j))
		}
		put(Q.Mul(s[0].Add(s[2]).Add(s[1].Add(s[3]))), po, 4*x)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// base is the address of s's first value (nil for an empty or nil s):
// the vector loops that read many rows index them with at and put, after
// checking once that each row is long enough.
func base(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// at loads the 8 values at byte offset o from p (the caller has checked
// the bounds).
func at(p unsafe.Pointer, o uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[lanes]float32)(unsafe.Add(p, o)))
}

// put stores v's 8 values at byte offset o from p (bounds checked by the
// caller).
func put(v archsimd.Float32x8, p unsafe.Pointer, o uintptr) {
	v.Store((*[lanes]float32)(unsafe.Add(p, o)))
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
	p0, p1, p2, pal, pnv := base(q0), base(q1), base(q2), base(al), base(nv)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		t := at(pal, i).Mul(AMT).Mul(at(pnv, i))
		a, b, c := at(p0, i), at(p1, i), at(p2, i)
		lum := KR.Mul(a).Add(KG.Mul(b)).Add(KB.Mul(c))
		lum = lum.Merge(EPS, lum.Greater(EPS)) // !(lum > 1e-8) -> 1e-8, NaN included
		y := MAGIC.Sub(lum.AsUint32x8().ShiftAllRight(1)).AsFloat32x8()
		inv := y.Mul(T15.Sub(H.Mul(lum).Mul(y).Mul(y)))
		v := O.Add(t.Mul(inv))
		v = v.Merge(Z, v.Greater(Z)) // !(v > 0) -> 0
		f := v.Mul(v)
		a, b, c = a.Mul(f), b.Mul(f), c.Mul(f)
		put(M.Merge(a, a.Greater(M)), p0, i)
		put(M.Merge(b, b.Greater(M)), p1, i)
		put(M.Merge(c, c.Greater(M)), p2, i)
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
	po, pi0, pi1, pw0, pw1 := base(o), unsafe.Pointer(unsafe.SliceData(i0)), unsafe.Pointer(unsafe.SliceData(i1)), base(w0), base(w1)
	x := 0
	for ; x+lanes <= m; x += lanes {
		b := i0[x]
		if i1[x+lanes-1]-b >= lanes {
			break
		}
		var v archsimd.Float32x8
		if int(b)+lanes <= len(r) {
			v = at(base(r), uintptr(b)*4)
		} else {
			// Past r's end: zeros, never picked. Copied to the stack
			// rather than LoadFloat32x8SlicePart, whose pointer
			// conversion the race detector's checkptr rejects.
			var t [lanes]float32
			copy(t[:], r[b:])
			v = archsimd.LoadFloat32x8(&t)
		}
		B := archsimd.BroadcastInt32x8(b)
		xo := uintptr(x) * 4
		k0 := archsimd.LoadInt32x8((*[lanes]int32)(unsafe.Add(pi0, xo))).Sub(B).AsUint32x8()
		k1 := archsimd.LoadInt32x8((*[lanes]int32)(unsafe.Add(pi1, xo))).Sub(B).AsUint32x8()
		put(at(pw0, xo).Mul(v.Permute(k0)).Add(at(pw1, xo).Mul(v.Permute(k1))), po, xo)
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
	ps := base(s)
	i := 0
	for ; i < n; i += lanes {
		b := at(ps, uintptr(i)*4).Equal(V).ToBits()
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
	pq, pb, pd := base(q), base(b), base(d)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		put(at(pb, i).Mul(O.Sub(at(pd, i))), pq, i)
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
	pwf, pal, pab := base(wf), base(al), base(ab)
	for i := uintptr(0); i < uintptr(n)*4; i += lanes * 4 {
		a := O
		if al != nil {
			a = at(pal, i)
		}
		put(W.Mul(a).Mul(O.Sub(at(pab, i))), pwf, i)
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
	// A whole block reads r0 and r1 at columns [b, b+9): checked once for
	// the largest b, then read through the rows' addresses.
	mb := int32(-1)
	for _, b := range blocks {
		mb = max(mb, b)
	}
	if mb >= 0 {
		_, _ = r0[mb+lanes], r1[mb+lanes]
	}
	prow, pfx, pr0, pr1 := base(row), base(fx), base(r0), base(r1)
	for k, b := range blocks {
		x := uintptr(k) * lanes * 4
		if b >= 0 {
			o := uintptr(b) * 4
			tx := at(pfx, x)
			otx := O.Sub(tx)
			top := otx.Mul(at(pr0, o)).Add(tx.Mul(at(pr0, o+4)))
			bot := otx.Mul(at(pr1, o)).Add(tx.Mul(at(pr1, o+4)))
			put(OTY.Mul(top).Add(TY.Mul(bot)), prow, x)
			continue
		}
		if b != ShiftBlockOne {
			mixed = true
			continue
		}
		xi := k * lanes
		i0, i1 := x0[xi], x1[xi]
		tx := bcast(fx[xi])
		otx := O.Sub(tx)
		top := otx.Mul(bcast(r0[i0])).Add(tx.Mul(bcast(r0[i1])))
		bot := otx.Mul(bcast(r1[i0])).Add(tx.Mul(bcast(r1[i1])))
		OTY.Mul(top).Add(TY.Mul(bot)).StoreSlice(row[xi:])
	}
	archsimd.ClearAVXUpperBits()
	if mixed {
		for k, b := range blocks {
			if b == ShiftBlockMixed {
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
	keys = keys[:len(out)*c] // the bounds, checked once (see at)
	var s [lanes8]float32
	pq, pk := base(q), base(keys)
	row := uintptr(c) * 4 // one key's bytes
	end := row
	e := 0
	for ; e+4 <= len(out); e += 4 {
		k0 := uintptr(e) * row
		k1, k2, k3 := k0+row, k0+2*row, k0+3*row
		a0, a1, a2, a3 := bcast(0), bcast(0), bcast(0), bcast(0)
		for i := uintptr(0); i < end; i += lanes * 4 {
			v := at(pq, i)
			a0 = a0.Add(v.Mul(at(pk, k0+i)))
			a1 = a1.Add(v.Mul(at(pk, k1+i)))
			a2 = a2.Add(v.Mul(at(pk, k2+i)))
			a3 = a3.Add(v.Mul(at(pk, k3+i)))
		}
		for j, a := range [4]archsimd.Float32x8{a0, a1, a2, a3} {
			a.StoreSlice(s[:])
			out[e+j] = sum8(&s)
		}
	}
	for ; e < len(out); e++ {
		k := uintptr(e) * row
		acc := bcast(0)
		for i := uintptr(0); i < end; i += lanes * 4 {
			acc = acc.Add(at(pq, i).Mul(at(pk, k+i)))
		}
		acc.StoreSlice(s[:])
		out[e] = sum8(&s)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// sum8x4 is sum8 of each of a, b, c and d, in that order: horizontal
// adds of adjacent pairs twice, then the two halves, which is sum8's
// pairwise order ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)).
func sum8x4(a, b, c, d archsimd.Float32x8) archsimd.Float32x4 {
	h := a.AddPairsGrouped(b).AddPairsGrouped(c.AddPairsGrouped(d))
	return h.GetLo().Add(h.GetHi())
}

// dotsBlockSIMD is DotsBlock's vector loop over one tile of keys:
// out[i*stride+e] is the dot product of query row i of qs with row e of
// keys (rows of c values). Three queries and two keys at a time
// (dots3x2); a key left over takes the three queries in one loop, the
// queries left over (under 3) four keys at a time, as dotsSIMD.
// The last c%8 values of each row are added after the 8 partial sums, as
// Dots' scalar loop does. It reports false without AVX2 or under 8 values
// a row.
func dotsBlockSIMD(out []float32, stride int, qs, keys []float32, c int) bool {
	if !simdOn || c < lanes {
		return false
	}
	nq, nk := len(qs)/c, len(keys)/c
	if nq == 0 || nk == 0 {
		return true
	}
	_ = out[(nq-1)*stride+nk-1] // the bounds, checked once (see at)
	qs, keys = qs[:nq*c], keys[:nk*c]
	c8 := c &^ (lanes - 1)
	row, end := uintptr(c)*4, uintptr(c8)*4
	pq, pk := base(qs), base(keys)
	var r [4]float32
	// tail adds the last c%8 products of query i and key e to t.
	tail := func(t float32, i, e int) float32 {
		q, k := qs[i*c:(i+1)*c], keys[e*c:(e+1)*c]
		for j := c8; j < c; j++ {
			t += q[j] * k[j]
		}
		return t
	}
	i := 0
	for ; i+3 <= nq; i += 3 {
		q0 := unsafe.Add(pq, uintptr(i)*row)
		q1, q2 := unsafe.Add(q0, row), unsafe.Add(q0, 2*row)
		e := 0
		for ; e+2 <= nk; e += 2 {
			k0 := unsafe.Add(pk, uintptr(e)*row)
			k1 := unsafe.Add(k0, row)
			var r6 [8]float32
			dots3x2(&r6, q0, q1, q2, k0, k1, end)
			out[i*stride+e], out[i*stride+e+1], out[(i+1)*stride+e], out[(i+1)*stride+e+1] = r6[0], r6[1], r6[2], r6[3]
			out[(i+2)*stride+e], out[(i+2)*stride+e+1] = r6[4], r6[5]
		}
		if e < nk {
			k0 := unsafe.Add(pk, uintptr(e)*row)
			a0, a1, a2 := bcast(0), bcast(0), bcast(0)
			for o := uintptr(0); o < end; o += lanes * 4 {
				x := at(k0, o)
				a0 = a0.Add(at(q0, o).Mul(x))
				a1 = a1.Add(at(q1, o).Mul(x))
				a2 = a2.Add(at(q2, o).Mul(x))
			}
			sum8x4(a0, a1, a2, bcast(0)).Store(&r)
			for j := range 3 {
				out[(i+j)*stride+e] = r[j]
			}
		}
		if c8 < c {
			for j := i; j < i+3; j++ {
				for e := range nk {
					out[j*stride+e] = tail(out[j*stride+e], j, e)
				}
			}
		}
	}
	for ; i < nq; i++ {
		q0 := uintptr(i) * row
		e := 0
		for ; e+4 <= nk; e += 4 {
			k0 := uintptr(e) * row
			k1, k2, k3 := k0+row, k0+2*row, k0+3*row
			a0, a1, a2, a3 := bcast(0), bcast(0), bcast(0), bcast(0)
			for o := uintptr(0); o < end; o += lanes * 4 {
				v := at(pq, q0+o)
				a0 = a0.Add(v.Mul(at(pk, k0+o)))
				a1 = a1.Add(v.Mul(at(pk, k1+o)))
				a2 = a2.Add(v.Mul(at(pk, k2+o)))
				a3 = a3.Add(v.Mul(at(pk, k3+o)))
			}
			sum8x4(a0, a1, a2, a3).Store(&r)
			copy(out[i*stride+e:i*stride+e+4], r[:])
		}
		for ; e < nk; e++ {
			k0 := uintptr(e) * row
			a := bcast(0)
			for o := uintptr(0); o < end; o += lanes * 4 {
				a = a.Add(at(pq, q0+o).Mul(at(pk, k0+o)))
			}
			z := bcast(0)
			sum8x4(a, z, z, z).Store(&r)
			out[i*stride+e] = r[0]
		}
		if c8 < c {
			for e := range nk {
				out[i*stride+e] = tail(out[i*stride+e], i, e)
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// dots3x2 is dotsBlockSIMD's inner block: the dot products of the rows at
// q0, q1 and q2 with the rows at k0 and k1 (end bytes each, whole vectors)
// into r as q0·k0, q0·k1, q1·k0, q1·k1, q2·k0, q2·k1, each as sum8 of its
// 8 partial sums. Six sums in flight hide the additions' latency; each key
// vector loaded serves three queries. (A function of its own, so that the
// loop has its few pointers in registers.)
func dots3x2(r *[8]float32, q0, q1, q2, k0, k1 unsafe.Pointer, end uintptr) {
	a00, a01, a10, a11, a20, a21 := bcast(0), bcast(0), bcast(0), bcast(0), bcast(0), bcast(0)
	for o := uintptr(0); o < end; o += lanes * 4 {
		x0, x1 := at(k0, o), at(k1, o)
		v := at(q0, o)
		a00 = a00.Add(v.Mul(x0))
		a01 = a01.Add(v.Mul(x1))
		v = at(q1, o)
		a10 = a10.Add(v.Mul(x0))
		a11 = a11.Add(v.Mul(x1))
		v = at(q2, o)
		a20 = a20.Add(v.Mul(x0))
		a21 = a21.Add(v.Mul(x1))
	}
	z := bcast(0)
	sum8x4(a00, a01, a10, a11).Store((*[4]float32)(r[:4]))
	sum8x4(a20, a21, z, z).Store((*[4]float32)(r[4:]))
}

// expOn reports whether expScaledSIMD runs: AVX2 and FMA, where math.Exp
// takes its FMA path (math's useFMA: AVX and FMA), which exp4 follows.
var expOn = archsimd.X86.FMA()

// The constants of math.Exp's amd64 code (src/math/exp_amd64.s).
const (
	expLog2e = 1.4426950408889634073599246810018920
	expLn2U  = 0.69314718055966295651160180568695068359375
	expLn2L  = 0.28235290563031577122588448175013436025525412068e-12
	expC24   = 1.6666666666666666667e-1
	expC32   = 4.1666666666666666667e-2
	expC40   = 8.3333333333333333333e-3
	expC48   = 1.3888888888888888889e-3
	expC56   = 1.9841269841269841270e-4
	expC64   = 2.4801587301587301587e-5
)

func bcast64(v float64) archsimd.Float64x4 { return archsimd.BroadcastFloat64x4(v) }

// expConsts are exp4's constants in vectors, made once per loop.
type expConsts struct {
	log2e, ln2U, ln2L, sixteenth, c64, c56, c48, c40, c32, c24, half, one, two, bias archsimd.Float64x4
}

func newExpConsts() expConsts {
	return expConsts{
		log2e: bcast64(expLog2e), ln2U: bcast64(-expLn2U), ln2L: bcast64(-expLn2L), sixteenth: bcast64(0.0625),
		c64: bcast64(expC64), c56: bcast64(expC56), c48: bcast64(expC48), c40: bcast64(expC40),
		c32: bcast64(expC32), c24: bcast64(expC24), half: bcast64(0.5), one: bcast64(1), two: bcast64(2),
		bias: bcast64(0x1p52 + 1023),
	}
}

// exp4 is math.Exp of 4 values in [-700, 700], bit for bit: the steps of
// archExp's FMA path (exp_amd64.s) in the same order, each fused where it
// fuses. k = round(x·log2e) (CVTSD2SL rounds to nearest even), the
// reduction x - k·ln2 in two fused steps, /16, a Taylor series by fused
// steps, squared back 4 times as (r+2)·r, the last fused with +1, then
// times 2^k (k within the normal exponents for these x).
func exp4(x archsimd.Float64x4, k *expConsts) archsimd.Float64x4 {
	kf := x.Mul(k.log2e).RoundToEven()
	r := kf.MulAdd(k.ln2U, x)
	r = kf.MulAdd(k.ln2L, r)
	r = r.Mul(k.sixteenth)
	p := k.c64.MulAdd(r, k.c56)
	p = p.MulAdd(r, k.c48)
	p = p.MulAdd(r, k.c40)
	p = p.MulAdd(r, k.c32)
	p = p.MulAdd(r, k.c24)
	p = p.MulAdd(r, k.half)
	p = p.MulAdd(r, k.one)
	r = r.Mul(p)
	r = r.Mul(r.Add(k.two))
	r = r.Mul(r.Add(k.two))
	r = r.Mul(r.Add(k.two))
	r = r.Add(k.two).MulAdd(r, k.one)
	// 2^k: k+1023 in the low bits of 2^52+1023+k, shifted to the exponent.
	scale := kf.Add(k.bias).AsInt64x4().ShiftAllLeft(52).AsFloat64x4()
	return r.Mul(scale)
}

// expScaledSIMD is ExpScaled's vector loop over whole blocks of 8 values;
// it returns how many it did (0 without AVX2 and FMA).
func expScaledSIMD(out []float64, s []float32, m, tau, cut float32) int {
	if !simdOn || !expOn {
		return 0
	}
	n := len(out) &^ (lanes - 1)
	s = s[:len(out)]
	M, T, C := bcast(m), bcast(tau), bcast(cut)
	lo, hi := bcast(-700), bcast(700)
	z := bcast64(0)
	k := newExpConsts()
	for e := 0; e < n; e += lanes {
		v := load(s[e:])
		below := v.Less(C).ToBits() // false for NaN, as s < cut
		if below == 0xff {
			z.StoreSlice(out[e:])
			z.StoreSlice(out[e+4:])
			continue
		}
		d := v.Sub(M).Div(T)
		if d.GreaterEqual(lo).And(d.LessEqual(hi)).ToBits() != 0xff { // NaN fails both
			for j := e; j < e+lanes; j++ {
				out[j] = expAbove(s[j], m, tau, cut)
			}
			continue
		}
		exp4(d.GetLo().ConvertToFloat64(), &k).StoreSlice(out[e:])
		exp4(d.GetHi().ConvertToFloat64(), &k).StoreSlice(out[e+4:])
		for ; below != 0; below &= below - 1 {
			out[e+mbits.TrailingZeros8(below)] = 0
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
