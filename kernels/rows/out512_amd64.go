//go:build goexperiment.simd && amd64

package rows

import (
	"simd/archsimd"
	"unsafe"
)

// oetf512 holds the OETF buckets' definition (oetfPoly.at) as vectors.
type oetf512 struct {
	P0a, P0b, P1a, P1b archsimd.Float32x16 // c0, c1: places 0-15 (a) and 16-31 (b)
	P2a, P2b, P3a, P3b archsimd.Float32x16 // c2, c3
	Toe                archsimd.Float32x16
	Z, BHi, KToe       archsimd.Int32x16
	UMask, Md          archsimd.Int32x16
}

func newOETF512(p *oetfPoly) (k oetf512) {
	ld := func(c, o int) archsimd.Float32x16 { return archsimd.LoadFloat32x16((*[16]float32)(p.c[c][o : o+16])) }
	k.P0a, k.P0b, k.P1a, k.P1b = ld(0, 0), ld(0, 16), ld(1, 0), ld(1, 16)
	k.P2a, k.P2b, k.P3a, k.P3b = ld(2, 0), ld(2, 16), ld(3, 0), ld(3, 16)
	b := archsimd.BroadcastInt32x16
	k.Toe = archsimd.BroadcastFloat32x16(oetfToeSlope)
	k.Z, k.BHi, k.KToe = b(0), b(obHi), b(p.toe)
	k.UMask, k.Md = b(1<<oetfSegShift-1), b(1<<(obShift-1))
	return
}

// at is OETFU[obu(v)] for 16 values: the bits clamped to [0, obHi] (every
// negative pattern to bucket 0, every pattern above 1.0, +Inf and NaN
// included, to 1.0's: the table's wrap), then oetfPoly.at's operations in
// its order. The permutes read the place k>>oetfSegShift modulo 32 from
// the index's low five bits.
func (k *oetf512) at(v archsimd.Float32x16) archsimd.Float32x16 {
	bits := v.AsInt32x16().Max(k.Z).Min(k.BHi)
	kk := bits.ShiftAllRight(obShift)
	i := kk.ShiftAllRight(oetfSegShift).AsUint32x16()
	u := kk.And(k.UMask).ConvertToFloat32()
	c3 := k.P3a.ConcatPermute(k.P3b, i)
	c2 := k.P2a.ConcatPermute(k.P2b, i)
	c1 := k.P1a.ConcatPermute(k.P1b, i)
	c0 := k.P0a.ConcatPermute(k.P0b, i)
	y := c3.Mul(u).Add(c2).Mul(u).Add(c1).Mul(u).Add(c0)
	// The toe from the bucket's midpoint, kk<<obShift | Md. (Written as
	// bits &^ (1<<obShift-1) | Md it compiles to a VPTERNLOGD with a
	// memory operand that Go 1.26's assembler refuses.) x.Merge(y, m) is x
	// where m holds, else y.
	mid := kk.ShiftAllLeft(obShift).Or(k.Md).AsFloat32x16()
	return k.Toe.Mul(mid).Merge(y, kk.Less(k.KToe))
}

// yuvOut512 holds a YUVOut's coefficients as vectors and the lane orders
// that split 32 pixels into their even and odd columns.
type yuvOut512 struct {
	Y0, YR, YG, YB, C0, UR, UG, UB, VR, VG, VB, Q archsimd.Float32x16
	Even, Odd                                     archsimd.Uint32x16
	Max                                           archsimd.Int32x16
}

func newYUVOut512(k *YUVOut) (o yuvOut512) {
	f := archsimd.BroadcastFloat32x16
	o.Y0, o.YR, o.YG, o.YB = f(k.Y0), f(k.YR), f(k.YG), f(k.YB)
	o.C0, o.UR, o.UG, o.UB, o.VR, o.VG, o.VB = f(k.C0), f(k.UR), f(k.UG), f(k.UB), f(k.VR), f(k.VG), f(k.VB)
	o.Q = f(0.25)
	var e, d [16]uint32
	for i := range 16 {
		e[i], d[i] = uint32(2*i), uint32(2*i+1)
	}
	o.Even, o.Odd = archsimd.LoadUint32x16(&e), archsimd.LoadUint32x16(&d)
	o.Max = archsimd.BroadcastInt32x16(255)
	return
}

// quad is one channel's R' of a 2x2 block row pair, 32 columns: rows a
// and b, columns 0-15 (lo) and 16-31 (hi).
type quad struct{ alo, ahi, blo, bhi archsimd.Float32x16 }

// load reads 32 columns of rows a and b at byte offset x and maps them
// through the OETF.
func (k *oetf512) load(pa, pb unsafe.Pointer, x uintptr) quad {
	return quad{
		k.at(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(pa, x)))),
		k.at(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(pa, x+64)))),
		k.at(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(pb, x)))),
		k.at(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(pb, x+64)))),
	}
}

// mean is the 2x2 blocks' average of one channel, in cCodes' order:
// ((r0 + r1) + r2) + r3, times 0.25 (r0, r1 row a's even and odd
// columns, r2, r3 row b's).
func (o *yuvOut512) mean(q *quad) archsimd.Float32x16 {
	a0, a1 := q.alo.ConcatPermute(q.ahi, o.Even), q.alo.ConcatPermute(q.ahi, o.Odd)
	b0, b1 := q.blo.ConcatPermute(q.bhi, o.Even), q.blo.ConcatPermute(q.bhi, o.Odd)
	return a0.Add(a1).Add(b0).Add(b1).Mul(o.Q)
}

// storeCodes stores 16 truncated codes (min(int32(v), max); v >= 0) at p.
func storeCodes(v archsimd.Float32x16, max archsimd.Int32x16, p unsafe.Pointer) {
	v.ConvertToInt32().Min(max).TruncateToInt8().Store((*[16]int8)(p))
}

// yuvOutRowsSIMD is YUVOutRows' vector loop, 32 columns (16 chroma
// samples) at a time: the OETF from its definition (oetfPoly, the table's
// values bit for bit), luma as yCode's sum in its order, chroma as
// cCodes' (TestYUVOutRowsSIMD). It returns how many columns it did (a
// multiple of 32; 0 without AVX-512).
func yuvOutRowsSIMD(k *YUVOut, ya, yb, uo, vo []byte, ra, ga, ba, rb, gb, bb []float32) int {
	if !simdOn || !vbmiOn || k.poly == nil {
		return 0
	}
	w := len(ra)
	n := min(w, 2*min(len(uo), len(vo))) &^ 31
	if n == 0 {
		return 0
	}
	_, _, _, _, _, _, _ = ya[:n], yb[:n], ga[:n], ba[:n], rb[:n], gb[:n], bb[:n]
	_, _ = uo[:n/2], vo[:n/2]
	e, o := newOETF512(k.poly), newYUVOut512(k)
	pya, pyb := unsafe.Pointer(unsafe.SliceData(ya)), unsafe.Pointer(unsafe.SliceData(yb))
	pu, pv := unsafe.Pointer(unsafe.SliceData(uo)), unsafe.Pointer(unsafe.SliceData(vo))
	pra, pga, pba := base(ra), base(ga), base(ba)
	prb, pgb, pbb := base(rb), base(gb), base(bb)
	for x := uintptr(0); x < uintptr(n); x += 32 {
		// One channel at a time: each sum is yCode's and cCodes' in
		// their order (Y0 + YR*r, then + YG*g, then + YB*b).
		r := e.load(pra, prb, 4*x)
		la, lah := o.Y0.Add(o.YR.Mul(r.alo)), o.Y0.Add(o.YR.Mul(r.ahi))
		lb, lbh := o.Y0.Add(o.YR.Mul(r.blo)), o.Y0.Add(o.YR.Mul(r.bhi))
		m := o.mean(&r)
		u, v := o.C0.Add(o.UR.Mul(m)), o.C0.Add(o.VR.Mul(m))
		g := e.load(pga, pgb, 4*x)
		la, lah = la.Add(o.YG.Mul(g.alo)), lah.Add(o.YG.Mul(g.ahi))
		lb, lbh = lb.Add(o.YG.Mul(g.blo)), lbh.Add(o.YG.Mul(g.bhi))
		m = o.mean(&g)
		u, v = u.Add(o.UG.Mul(m)), v.Add(o.VG.Mul(m))
		b := e.load(pba, pbb, 4*x)
		la, lah = la.Add(o.YB.Mul(b.alo)), lah.Add(o.YB.Mul(b.ahi))
		lb, lbh = lb.Add(o.YB.Mul(b.blo)), lbh.Add(o.YB.Mul(b.bhi))
		m = o.mean(&b)
		u, v = u.Add(o.UB.Mul(m)), v.Add(o.VB.Mul(m))
		storeCodes(la, o.Max, unsafe.Add(pya, x))
		storeCodes(lah, o.Max, unsafe.Add(pya, x+16))
		storeCodes(lb, o.Max, unsafe.Add(pyb, x))
		storeCodes(lbh, o.Max, unsafe.Add(pyb, x+16))
		storeCodes(u, o.Max, unsafe.Add(pu, x/2))
		storeCodes(v, o.Max, unsafe.Add(pv, x/2))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
