//go:build goexperiment.simd && amd64

package rows

import (
	"simd/archsimd"
	"unsafe"
)

// vbmiOn reports whether the AVX-512 loops of AreaYUV4Row, YUVRow and
// YUVOutRows run (the CPU has AVX-512 with VBMI's byte permutes, which the
// first two use; YUVOutRows needs only AVX-512F but shares the one switch;
// all also need simdOn, the AVX2 loops' switch). Set once at package
// initialisation; tests turn them off with the other vector loops.
var vbmiOn = archsimd.X86.AVX512() && archsimd.X86.AVX512VBMI()

// byteTab is a 256-entry byte table as four 64-byte vectors.
type byteTab [4]archsimd.Uint8x64

func loadByteTab(e *[256]byte) byteTab {
	return byteTab{
		archsimd.LoadUint8x64((*[64]uint8)(e[0:64])), archsimd.LoadUint8x64((*[64]uint8)(e[64:128])),
		archsimd.LoadUint8x64((*[64]uint8)(e[128:192])), archsimd.LoadUint8x64((*[64]uint8)(e[192:256])),
	}
}

// look maps 64 codes through the table: entries 0-127 and 128-255 each by
// one two-register byte permute (VPERMI2B) on the code's low seven bits,
// the top bit choosing between them.
func (t *byteTab) look(c, h archsimd.Uint8x64) archsimd.Uint8x64 {
	lo, hi := t[0].ConcatPermute(t[1], c), t[2].ConcatPermute(t[3], c)
	return lo.Merge(hi, c.Less(h))
}

// eotf512 holds the constants of the EOTF's piecewise cubic (eotfPoly.at)
// as vectors.
type eotf512 struct {
	P                 [4][2]archsimd.Float32x16 // c0..c3, segments 0-15 and 16-31
	TK, TLO, THI, S31 archsimd.Int32x16
}

func newEOTF512(p *eotfPoly) (k eotf512) {
	for c := range k.P {
		k.P[c][0] = archsimd.LoadFloat32x16((*[16]float32)(p[c][0:16]))
		k.P[c][1] = archsimd.LoadFloat32x16((*[16]float32)(p[c][16:32]))
	}
	// The table index j = (s>>yuvFrac) - eotfExtOff clamped to [0,
	// eotfFixN], as t = j + eotfSegBias.
	k.TK = archsimd.BroadcastInt32x16(eotfSegBias - eotfExtOff)
	k.TLO, k.THI = archsimd.BroadcastInt32x16(eotfSegBias), archsimd.BroadcastInt32x16(eotfFixN+eotfSegBias)
	k.S31 = archsimd.BroadcastInt32x16(eotfSegs - 1)
	return
}

// at is EOTFExt[extIdx(s)] for 16 fixed-point sums: eotfPoly.at's
// operations in its order. Its clamp is the table's wrap for every sum the
// YUV tables make (their indices stay inside the table:
// TestConversionTableInvariants).
func (k *eotf512) at(s archsimd.Int32x16) archsimd.Float32x16 {
	t := s.ShiftAllRight(yuvFrac).Add(k.TK).Max(k.TLO).Min(k.THI)
	seg := t.ShiftAllRight(eotfSegShift).Min(k.S31)
	u := t.Sub(seg.ShiftAllLeft(eotfSegShift)).ConvertToFloat32()
	i := seg.AsUint32x16()
	c3 := k.P[3][0].ConcatPermute(k.P[3][1], i)
	c2 := k.P[2][0].ConcatPermute(k.P[2][1], i)
	c1 := k.P[1][0].ConcatPermute(k.P[1][1], i)
	c0 := k.P[0][0].ConcatPermute(k.P[0][1], i)
	return c3.Mul(u).Add(c2).Mul(u).Add(c1).Mul(u).Add(c0)
}

// column is one column phase's sum over the block's four rows (y0..y3
// the rows' luma terms; ca the upper chroma row's term, cb the lower's),
// in the scalar loop's order.
func (k *eotf512) column(y0, y1, y2, y3, ca, cb archsimd.Int32x16) archsimd.Float32x16 {
	a, b := k.at(y0.Add(ca)), k.at(y1.Add(ca))
	c, d := k.at(y2.Add(cb)), k.at(y3.Add(cb))
	return a.Add(b).Add(c).Add(d)
}

// yuv512 holds the YUV tables' byte-correction form (yuvVec) as vectors.
type yuv512 struct {
	tY, tRV, tGU, tGV, tBU byteTab
	H                      archsimd.Uint8x64
	B8                     archsimd.Uint32x16
	SY, SRV, SGU, SGV, SBU archsimd.Int32x16
	BR, BG, BB             archsimd.Int32x16
}

func newYUV512(v *yuvVec) yuv512 {
	b := func(x int32) archsimd.Int32x16 { return archsimd.BroadcastInt32x16(x) }
	return yuv512{
		tY: loadByteTab(&v.e[0]), tRV: loadByteTab(&v.e[1]), tGU: loadByteTab(&v.e[2]),
		tGV: loadByteTab(&v.e[3]), tBU: loadByteTab(&v.e[4]),
		H: archsimd.BroadcastUint8x64(128), B8: archsimd.BroadcastUint32x16(0xFF),
		SY: b(v.slope[0]), SRV: b(v.slope[1]), SGU: b(v.slope[2]), SGV: b(v.slope[3]), SBU: b(v.slope[4]),
		// Every base goes on the chroma terms: Y's, and each channel's own.
		BR: b(v.base[0] + v.base[1]), BG: b(v.base[0] + v.base[2] + v.base[3]), BB: b(v.base[0] + v.base[4]),
	}
}

// byteAt is byte j (0 = lowest) of each 32-bit lane, as int32.
func (k *yuv512) byteAt(w archsimd.Uint32x16, j uint64) archsimd.Int32x16 {
	return w.ShiftAllRight(8 * j).And(k.B8).AsInt32x16()
}

// luma returns the luma terms of a row's 64 codes at p (16 outputs' 4
// columns each) by column phase: Y[c] = c*slope + e[c], the base left to
// the chroma terms.
func (k *yuv512) luma(p unsafe.Pointer) (y0, y1, y2, y3 archsimd.Int32x16) {
	L := archsimd.LoadUint8x64((*[64]uint8)(p))
	E := k.tY.look(L, k.H).AsUint32x16()
	W := L.AsUint32x16()
	y0 = k.byteAt(W, 0).Mul(k.SY).Add(k.byteAt(E, 0))
	y1 = k.byteAt(W, 1).Mul(k.SY).Add(k.byteAt(E, 1))
	y2 = k.byteAt(W, 2).Mul(k.SY).Add(k.byteAt(E, 2))
	y3 = k.byteAt(W, 3).Mul(k.SY).Add(k.byteAt(E, 3))
	return
}

// words widens 32 bytes' pairs to 32-bit lanes (byte 2k in byte 0 of lane
// k, byte 2k+1 in byte 1).
func words(v archsimd.Uint8x32) archsimd.Uint32x16 { return v.AsUint16x16().ExtendToUint32() }

// chroma returns the R, G and B chroma terms of one chroma row's 32 U and
// V codes at pu and pv, for the outputs' left (even) and right (odd)
// chroma columns.
func (k *yuv512) chroma(pu, pv unsafe.Pointer) (r0, g0, b0, r1, g1, b1 archsimd.Int32x16) {
	u8 := archsimd.LoadUint8x32((*[32]uint8)(pu))
	v8 := archsimd.LoadUint8x32((*[32]uint8)(pv))
	// Both codes in one 64-byte vector for the byte tables: U low, V high.
	var uv archsimd.Uint8x64
	uv = uv.SetLo(u8).SetHi(v8)
	eRV, eGV := k.tRV.look(uv, k.H).GetHi(), k.tGV.look(uv, k.H).GetHi()
	eGU, eBU := k.tGU.look(uv, k.H).GetLo(), k.tBU.look(uv, k.H).GetLo()
	U, V := words(u8), words(v8)
	wRV, wGV, wGU, wBU := words(eRV), words(eGV), words(eGU), words(eBU)
	for q := range uint64(2) {
		uc, vc := k.byteAt(U, q), k.byteAt(V, q)
		r := vc.Mul(k.SRV).Add(k.byteAt(wRV, q)).Add(k.BR)
		g := uc.Mul(k.SGU).Add(vc.Mul(k.SGV)).Add(k.byteAt(wGU, q)).Add(k.byteAt(wGV, q)).Add(k.BG)
		b := uc.Mul(k.SBU).Add(k.byteAt(wBU, q)).Add(k.BB)
		if q == 0 {
			r0, g0, b0 = r, g, b
		} else {
			r1, g1, b1 = r, g, b
		}
	}
	return
}

// areaYUV4RowSIMD is AreaYUV4Row's vector loop, 16 outputs at a time:
// each 32-bit lane of a row's 64 luma codes is one output's four columns,
// so that column phase j's vectors (byte j of each lane) hold the scalar
// loop's per-column terms and its sums are lane sums, with no horizontal
// step. The YUV tables come from their byte-correction form (yuvVec:
// exact for every code) and the EOTF from the piecewise cubic that
// defines the table (eotfPoly.at, the same operations in the same order),
// so every output is the scalar loop's bit for bit (TestAreaYUV4RowSIMD).
// It returns how many outputs it did (0 without AVX-512 VBMI).
func areaYUV4RowSIMD(ro, gr, br []float32, yr *[4][]byte, ur0, vr0, ur1, vr1 []byte, t *yuvTab) int {
	v := &t.vec
	if !simdOn || !vbmiOn || !v.ok {
		return 0
	}
	m := len(ro)
	n := m &^ 15
	if n == 0 {
		return 0
	}
	gr, br = gr[:m], br[:m]
	_, _, _, _ = ur0[:2*m], vr0[:2*m], ur1[:2*m], vr1[:2*m]
	for k := range yr {
		_ = yr[k][:4*m]
	}
	e, k := newEOTF512(v.poly), newYUV512(v)
	Q := archsimd.BroadcastFloat32x16(0.0625)
	py0, py1 := unsafe.Pointer(unsafe.SliceData(yr[0])), unsafe.Pointer(unsafe.SliceData(yr[1]))
	py2, py3 := unsafe.Pointer(unsafe.SliceData(yr[2])), unsafe.Pointer(unsafe.SliceData(yr[3]))
	pu0, pv0 := unsafe.Pointer(unsafe.SliceData(ur0)), unsafe.Pointer(unsafe.SliceData(vr0))
	pu1, pv1 := unsafe.Pointer(unsafe.SliceData(ur1)), unsafe.Pointer(unsafe.SliceData(vr1))
	pr, pg, pb := base(ro), base(gr), base(br)
	for x := uintptr(0); x < uintptr(n); x += 16 {
		// Chroma rows a (upper, luma rows 0-1) and b (lower, rows 2-3),
		// columns 0 (luma phases 0-1) and 1 (phases 2-3).
		ra0, ga0, ba0, ra1, ga1, ba1 := k.chroma(unsafe.Add(pu0, 2*x), unsafe.Add(pv0, 2*x))
		rb0, gb0, bb0, rb1, gb1, bb1 := k.chroma(unsafe.Add(pu1, 2*x), unsafe.Add(pv1, 2*x))
		y00, y01, y02, y03 := k.luma(unsafe.Add(py0, 4*x))
		y10, y11, y12, y13 := k.luma(unsafe.Add(py1, 4*x))
		y20, y21, y22, y23 := k.luma(unsafe.Add(py2, 4*x))
		y30, y31, y32, y33 := k.luma(unsafe.Add(py3, 4*x))
		r0 := e.column(y00, y10, y20, y30, ra0, rb0)
		r1 := e.column(y01, y11, y21, y31, ra0, rb0)
		r2 := e.column(y02, y12, y22, y32, ra1, rb1)
		r3 := e.column(y03, y13, y23, y33, ra1, rb1)
		Q.Mul(r0.Add(r2).Add(r1.Add(r3))).Store((*[16]float32)(unsafe.Add(pr, 4*x)))
		g0 := e.column(y00, y10, y20, y30, ga0, gb0)
		g1 := e.column(y01, y11, y21, y31, ga0, gb0)
		g2 := e.column(y02, y12, y22, y32, ga1, gb1)
		g3 := e.column(y03, y13, y23, y33, ga1, gb1)
		Q.Mul(g0.Add(g2).Add(g1.Add(g3))).Store((*[16]float32)(unsafe.Add(pg, 4*x)))
		b0 := e.column(y00, y10, y20, y30, ba0, bb0)
		b1 := e.column(y01, y11, y21, y31, ba0, bb0)
		b2 := e.column(y02, y12, y22, y32, ba1, bb1)
		b3 := e.column(y03, y13, y23, y33, ba1, bb1)
		Q.Mul(b0.Add(b2).Add(b1.Add(b3))).Store((*[16]float32)(unsafe.Add(pb, 4*x)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// store64 writes at p the EOTF of 64 pixels' sums in column phases (y0..y3
// the luma terms; c0 the chroma term of phases 0-1, c1 of phases 2-3), in
// pixel order.
func (k *eotf512) store64(p unsafe.Pointer, o *[4]archsimd.Uint32x16, y0, y1, y2, y3, c0, c1 archsimd.Int32x16) {
	interleave4(p, o, k.at(y0.Add(c0)), k.at(y1.Add(c0)), k.at(y2.Add(c1)), k.at(y3.Add(c1)))
}

// interleave4 writes four column phases' vectors (lane k of phase j is
// pixel 4k+j) as 64 pixels in order at p.
func interleave4(p unsafe.Pointer, o *[4]archsimd.Uint32x16, p0, p1, p2, p3 archsimd.Float32x16) {
	i0, i1, pairs0, pairs1 := o[0], o[1], o[2], o[3]
	// Pairs: lanes k of phases 0 and 1 (and 2 and 3) side by side, k in
	// 0-7 (lo) and 8-15 (hi); then the pairs' pairs.
	a0, a1 := p0.ConcatPermute(p1, i0), p0.ConcatPermute(p1, i1)
	b0, b1 := p2.ConcatPermute(p3, i0), p2.ConcatPermute(p3, i1)
	a0.ConcatPermute(b0, pairs0).Store((*[16]float32)(p))
	a0.ConcatPermute(b0, pairs1).Store((*[16]float32)(unsafe.Add(p, 64)))
	a1.ConcatPermute(b1, pairs0).Store((*[16]float32)(unsafe.Add(p, 128)))
	a1.ConcatPermute(b1, pairs1).Store((*[16]float32)(unsafe.Add(p, 192)))
}

// interleaveOrders returns the lane orders of interleave4: the first two
// put x's and y's lanes k side by side (k in 0-7, 8-15), the last two x's
// and y's pairs k (pairs 0-3, 4-7). (Made per call, not at package
// initialisation: a CPU without AVX-512 must not run these loads.)
func interleaveOrders() [4]archsimd.Uint32x16 {
	var i0, i1, q0, q1 [16]uint32
	for k := range 8 {
		i0[2*k], i0[2*k+1] = uint32(k), uint32(16+k)
		i1[2*k], i1[2*k+1] = uint32(8+k), uint32(24+k)
	}
	for k := range 4 {
		for e := range 2 {
			q0[4*k+e], q0[4*k+2+e] = uint32(2*k+e), uint32(16+2*k+e)
			q1[4*k+e], q1[4*k+2+e] = uint32(8+2*k+e), uint32(24+2*k+e)
		}
	}
	return [4]archsimd.Uint32x16{archsimd.LoadUint32x16(&i0), archsimd.LoadUint32x16(&i1), archsimd.LoadUint32x16(&q0), archsimd.LoadUint32x16(&q1)}
}

// yuvRowSIMD is YUVRow's vector loop, 64 pixels at a time (luma as
// AreaYUV4Row's four column phases, one chroma row), the same values bit
// for bit (TestYUVRowSIMD). It returns how many pixels it did (a multiple
// of 64; 0 without AVX-512 VBMI).
func yuvRowSIMD(ro, gr, br []float32, yr, ur, vr []byte, t *yuvTab) int {
	v := &t.vec
	if !simdOn || !vbmiOn || !v.ok {
		return 0
	}
	w := len(ro)
	n := min(w, 2*min(len(ur), len(vr))) &^ 63
	if n == 0 {
		return 0
	}
	gr, br, yr, ur, vr = gr[:n], br[:n], yr[:n], ur[:n/2], vr[:n/2]
	e, k := newEOTF512(v.poly), newYUV512(v)
	o := interleaveOrders()
	py, pu, pv := unsafe.Pointer(unsafe.SliceData(yr)), unsafe.Pointer(unsafe.SliceData(ur)), unsafe.Pointer(unsafe.SliceData(vr))
	pr, pg, pb := base(ro), base(gr), base(br)
	for x := uintptr(0); x < uintptr(n); x += 64 {
		r0, g0, b0, r1, g1, b1 := k.chroma(unsafe.Add(pu, x/2), unsafe.Add(pv, x/2))
		y0, y1, y2, y3 := k.luma(unsafe.Add(py, x))
		e.store64(unsafe.Add(pr, 4*x), &o, y0, y1, y2, y3, r0, r1)
		e.store64(unsafe.Add(pg, 4*x), &o, y0, y1, y2, y3, g0, g1)
		e.store64(unsafe.Add(pb, 4*x), &o, y0, y1, y2, y3, b0, b1)
	}
	archsimd.ClearAVXUpperBits()
	return n
}
