package rows

import (
	"math"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/srgb"
)

// Conversion tables of a CPU device.
//
// Upload YUV420P: R'G'B' is computed in fixed point from per-code tables
// (one table per term of the matrix, with 6 fractional bits below a step
// of 2^-14), and mapped through an EOTF table whose index range covers
// every sum the tables can produce (entries outside [0,1] hold the clamped
// value), so the inner loop has no clamps and no branches. The error
// against the exact float formula is below 1e-4 in linear light. Chroma is
// upsampled by replication (nearest: pixel (x, y) takes sample
// (x/2, y/2)), which is what the CUDA backend must do too.
//
// Download: a linear value is mapped to R' by a table indexed by its
// float32 bit pattern (clamped to [0, 1]) shifted right by 13, i.e.
// buckets of relative width 2^-10; the bucket value is the OETF of the
// bucket midpoint, in the piecewise form of oetfPoly (within 1.5e-5 of it;
// a denormal for bucket 0, so black's codes stay): error below 2.5e-4 in
// R' (0.06 code). Only the buckets of values above about 2^-16 are ever
// hot (16K entries); the rest of the table is there so that the index
// needs no lower clamp. RGB24 codes are exact (round to nearest of the
// exact OETF): the table gives the code at the bottom of the bucket and one
// comparison against the next code's decision threshold finishes it (a
// bucket never holds two thresholds). YUV420P chroma is the matrix applied
// to the average R'G'B' of each 2x2 block (of the pixels that exist at odd
// edges). NaN downloads as 0 in RGB24 and Gray8; in YUV420P it is
// unspecified (but deterministic).
const (
	eotfFixBits = 14
	eotfFixN    = 1 << eotfFixBits // EOTF table steps over R' in [0,1]
	yuvFrac     = 6                // extra fixed-point bits in the YUV tables
	// eotfExtOff is the table index of R' = 0; the table spans R' in
	// [-1.25, 2.75), wider than any Y'CbCr sum.
	eotfExtOff  = eotfFixN * 5 / 4
	eotfExtSize = 1 << 16

	obShift = 13                // keep 10 mantissa bits
	obHi    = 0x3F800000        // float32 bits of 1.0
	obN     = obHi>>obShift + 1 // buckets for every float in [0, 1]
	obSize  = 1 << 17           // table size (power of two >= obN)
	// obuSize covers every float32 bit pattern shifted right by obShift:
	// the YUV420P download indexes oetfU with no clamp at all.
	obuSize = 1 << (32 - obShift)
)

type yuvTab struct {
	Y, RV, GU, GV, BU [256]int32
	// vec is the same five tables in the vector loop's form (yuvVec).
	vec yuvVec
}

// yuvVec writes each of a yuvTab's five tables T (Y, RV, GU, GV, BU, in
// that order) as T[i] = i*slope + base + e[i], with e a byte: exact by
// construction for every code (ok is false if some e does not fit in a
// byte, and the vector loop then stays off). AVX-512 VBMI's byte permutes
// look e up 64 codes at a time, where an int32 table needs a gather.
type yuvVec struct {
	ok          bool
	slope, base [5]int32
	e           [5][256]byte
	poly        *eotfPoly
}

// split fills v from t's tables.
func (v *yuvVec) split(t *yuvTab, p *eotfPoly) {
	v.ok, v.poly = true, p
	for k, tab := range [5]*[256]int32{&t.Y, &t.RV, &t.GU, &t.GV, &t.BU} {
		s := int32(math.Round(float64(tab[255]-tab[0]) / 255))
		lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
		for i, c := range tab {
			d := c - int32(i)*s
			lo, hi = min(lo, d), max(hi, d)
		}
		if hi-lo > 255 {
			v.ok = false
			continue
		}
		v.slope[k], v.base[k] = s, lo
		for i, c := range tab {
			v.e[k][i] = byte(c - int32(i)*s - lo)
		}
	}
}

// The extended EOTF table's values (issue 33, session 31) are those of a
// piecewise cubic in float32, so that a vector loop can compute them
// where the table would need a gather (AVX-512 has one, but on this
// project's CPUs it is slower than scalar loads). The table's index j
// (R' = j/eotfFixN, clamped to [0, 1]) plus eotfSegBias, shifted right by
// eotfSegShift, picks one of 32 segments (the last one, capped, runs to
// R' = 1 inclusive); segment 2 starts at eotfKnee, the first index above
// sRGB's linear toe (R' > 0.04045), so that segments 0 and 1 are the
// linear toe and segments 2-31 the power curve, each least-squares fitted
// on its own indices. Within 6e-8 of the exact EOTF (TestEOTFPoly: about
// one float32 step near 1, and 1e-5 relative at the toe, where one step
// of the index, 2^-14 in R', is 1.5e-3), monotonic, exactly 0 at R' = 0
// and exactly 1 at R' = 1. Until session 31 the table held the exact
// EOTF rounded to float32: the change moves linear values by at most
// 6e-8, and 8-bit outputs by a code here and there (the look benchmark's
// figures are the same).
const (
	eotfSegShift = 9
	eotfSegs     = 32
	eotfKnee     = 663 // first j with j/eotfFixN > 0.04045
	eotfSegBias  = 2<<eotfSegShift - eotfKnee
)

// eotfPoly holds each segment's coefficients c0..c3 of
// p(u) = ((c3*u + c2)*u + c1)*u + c0, u the index's offset in the segment.
type eotfPoly [4][eotfSegs]float32

// eotfSeg returns the segment of index j (0..eotfFixN) and j's offset in it.
func eotfSeg(j int32) (seg, u int32) {
	t := j + eotfSegBias
	seg = min(t>>eotfSegShift, eotfSegs-1)
	return seg, t - seg<<eotfSegShift
}

// at is the EOTF of R' = j/eotfFixN (j in 0..eotfFixN): the vector loop's
// operations in its order, each rounded to float32 (no fused
// multiply-add).
func (p *eotfPoly) at(j int32) float32 {
	s, ui := eotfSeg(j)
	u := float32(ui)
	v := float32(p[3][s] * u)
	v = float32(v + p[2][s])
	v = float32(v * u)
	v = float32(v + p[1][s])
	v = float32(v * u)
	return float32(v + p[0][s])
}

// newEOTFPoly fits the segments.
func newEOTFPoly() *eotfPoly {
	p := new(eotfPoly)
	// The toe: R' / 12.92, as a line in the offset t = j + bias (segment 0
	// starts at t = bias, segment 1 at t = 1<<eotfSegShift), with j = 0
	// giving exactly 0.
	slope := float32(1 / (12.92 * eotfFixN))
	p[1][0], p[1][1] = slope, slope
	p[0][0] = -float32(float32(eotfSegBias) * slope)
	p[0][1] = float32(float32(1<<eotfSegShift-eotfSegBias) * slope)
	for s := 2; s < eotfSegs; s++ {
		j0 := int32(s<<eotfSegShift - eotfSegBias)
		w := int32(1<<eotfSegShift - 1)
		if s == eotfSegs-1 {
			w = eotfFixN - j0
		}
		c := cubicFit(0, w, w, func(u int32) float64 { return srgb.ToLinear(float64(j0+u) / eotfFixN) })
		for k := range 4 {
			p[k][s] = c[k]
		}
	}
	// R' = 1 gives exactly 1: nudge the last segment's constant.
	for range 64 {
		v := p.at(eotfFixN)
		if v == 1 {
			break
		}
		p[0][eotfSegs-1] = math.Nextafter32(p[0][eotfSegs-1], float32(math.Copysign(1, float64(1-v))))
	}
	return p
}

// cubicFit returns the least-squares cubic in v = u/w of f over the
// offsets u in [u0, u1] (normal equations in float64), as the float32
// coefficients c0..c3 of u itself.
func cubicFit(u0, u1, w int32, f func(u int32) float64) (c [4]float32) {
	var ata [4][4]float64
	var atb [4]float64
	for u := u0; u <= u1; u++ {
		v := float64(u) / float64(w)
		fu := f(u)
		pw := [4]float64{1, v, v * v, v * v * v}
		for a := range 4 {
			atb[a] += pw[a] * fu
			for b := range 4 {
				ata[a][b] += pw[a] * pw[b]
			}
		}
	}
	x := solve4(ata, atb)
	sc := 1.0
	for k := range 4 {
		c[k] = float32(x[k] / sc)
		sc *= float64(w)
	}
	return c
}

// solve4 solves a x = b (4x4, symmetric positive definite) by Gaussian
// elimination with partial pivoting.
func solve4(a [4][4]float64, b [4]float64) [4]float64 {
	for c := range 4 {
		piv := c
		for r := c + 1; r < 4; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		a[c], a[piv] = a[piv], a[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < 4; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < 4; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var x [4]float64
	for r := 3; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 4; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x
}

// The OETF's bucket values (OETFB) are defined by a piecewise function of
// the bucket k that a vector loop computes (oetfPoly.at), as the EOTF's
// are by eotfPoly: the toe, k below toe (every bucket whose midpoint is at
// most 0.0031308, bucket 0 included), is 12.92 times the bucket's midpoint
// in float32 (7e-41 for bucket 0: no code moves); from there to 1 each half
// octave (512 buckets, oetfSegShift) is a cubic in k's offset in it, least
// squares on the exact OETF of the midpoints, stored at k>>oetfSegShift
// modulo oetfSegs (the half octaves from 2^-9 to 1 are 18 distinct
// places); 1.0's bucket, the first of its half octave, is that segment's
// constant 1.
const (
	oetfSegShift = 9
	oetfSegs     = 32 // the permute's table
	oetfSegMask  = oetfSegs - 1
	oetfToeSlope = float32(12.92)
)

// oetfPoly holds the cubics' coefficients c0..c3 by place, and the first
// bucket on the power curve.
type oetfPoly struct {
	c   [4][oetfSegs]float32
	toe int32
}

// oetfMid is bucket k's midpoint (its float32 bits k<<obShift plus half a
// bucket).
func oetfMid(k int32) float32 {
	return math.Float32frombits(uint32(k)<<obShift | 1<<(obShift-1))
}

// at is OETFB[k] for k in [0, obN): the vector loop's operations in its
// order, each rounded to float32 (no fused multiply-add).
func (p *oetfPoly) at(k int32) float32 {
	if k < p.toe {
		return float32(oetfToeSlope * oetfMid(k))
	}
	s := k >> oetfSegShift & oetfSegMask
	u := float32(k & (1<<oetfSegShift - 1))
	v := float32(p.c[3][s] * u)
	v = float32(v + p.c[2][s])
	v = float32(v * u)
	v = float32(v + p.c[1][s])
	v = float32(v * u)
	return float32(v + p.c[0][s])
}

// newOETFPoly fits the segments.
func newOETFPoly() *oetfPoly {
	p := new(oetfPoly)
	for float64(oetfMid(p.toe)) <= 0.0031308 {
		p.toe++
	}
	const w = 1<<oetfSegShift - 1
	for k0 := p.toe &^ w; k0 < obN-1; k0 += w + 1 {
		// The segment's buckets on the power curve.
		c := cubicFit(max(k0, p.toe)-k0, min(k0+w, obN-2)-k0, w, func(u int32) float64 {
			return srgb.FromLinear(float64(oetfMid(k0 + u)))
		})
		s := k0 >> oetfSegShift & oetfSegMask
		for k := range 4 {
			p.c[k][s] = c[k]
		}
	}
	// 1.0's bucket starts its half octave: the constant 1.
	s := (obN - 1) >> oetfSegShift & oetfSegMask
	p.c[0][s], p.c[1][s], p.c[2][s], p.c[3][s] = 1, 0, 0, 0
	return p
}

// YUVOut holds the float RGB->YUV coefficients of one matrix and range,
// with the rounding offset (+0.5) folded into the constants.
type YUVOut struct {
	Y0, YR, YG, YB float32
	C0             float32
	UR, UG, UB     float32
	VR, VG, VB     float32
	// poly defines the OETF table's values (oetfPoly), for the vector
	// loop of YUVOutRows.
	poly *oetfPoly
}

// LUTs are the conversion tables of Upload and Download (sRGB curves,
// YUV matrices per colour space and range), built once per device; the
// CUDA backend uploads the same tables.
type LUTs struct {
	EOTF8   [256]float32
	Gray8   [256]float32
	EOTFExt [eotfExtSize]float32
	OETFB   [obSize]float32
	OETFU   [obuSize]float32 // OETFB[obIdx(v)] at index bits(v)>>obShift
	CodeB   [obSize]uint8
	CodeThr [256]float32
	YUVIn   [2][2]yuvTab // [bt709][fullRange]
	YUVOut  [2][2]YUVOut
	// eotfPoly defines EOTFExt's values (see eotfSeg).
	eotfPoly *eotfPoly
}

// matrixK returns Kr and Kb of a colour space.
func matrixK(cs frame.ColorSpace) (kr, kb float64) {
	if cs == frame.BT709 {
		return 0.2126, 0.0722
	}
	return 0.299, 0.114
}

// NewLUTs builds the conversion tables.
func NewLUTs() *LUTs {
	t := new(LUTs)
	for i := range 256 {
		t.EOTF8[i] = float32(srgb.ToLinear(float64(i) / 255))
		t.Gray8[i] = float32(float64(i) / 255)
	}
	t.eotfPoly = newEOTFPoly()
	for i := range t.EOTFExt {
		t.EOTFExt[i] = t.eotfPoly.at(int32(max(0, min(i-eotfExtOff, eotfFixN))))
	}
	// The code threshold is stored as the smallest float32 >= the exact
	// value, so that v >= codeThr[k] decides exactly for every float32 v.
	for k := range 255 {
		th := srgb.ToLinear((float64(k) + 0.5) / 255)
		t32 := float32(th)
		if float64(t32) < th {
			t32 = math.Nextafter32(t32, 2)
		}
		t.CodeThr[k] = t32
	}
	t.CodeThr[255] = float32(math.Inf(1))
	code := uint8(0)
	op := newOETFPoly()
	for k := range obN {
		lo := math.Float32frombits(uint32(k << obShift))
		t.OETFB[k] = op.at(int32(k))
		for code < 255 && lo >= t.CodeThr[code] {
			code++
		}
		t.CodeB[k] = code
	}
	// oetfU: patterns of positive floats above 1 (+Inf and positive NaN
	// included) take the value of 1.0's bucket, every negative pattern
	// that of 0: exactly what obIdx's clamp does.
	for k := range obuSize {
		switch {
		case k < obN:
			t.OETFU[k] = t.OETFB[k]
		case k < obuSize/2:
			t.OETFU[k] = t.OETFB[obN-1]
		default:
			t.OETFU[k] = t.OETFB[0]
		}
	}
	for cs := range 2 {
		kr, kb := matrixK(frame.ColorSpace(cs))
		kg := 1 - kr - kb
		for full := range 2 {
			ys, cs0, yoff := 219.0, 224.0, 16.0
			if full == 1 {
				ys, cs0, yoff = 255, 255, 0
			}
			in := &t.YUVIn[cs][full]
			scale := float64(eotfFixN << yuvFrac)
			for i := range 256 {
				yn := (float64(i) - yoff) / ys
				c := (float64(i) - 128) / cs0
				in.Y[i] = int32(math.Round(yn*scale)) + eotfExtOff<<yuvFrac + 1<<(yuvFrac-1)
				in.RV[i] = int32(math.Round(2 * (1 - kr) * c * scale))
				in.GU[i] = int32(math.Round(-2 * kb * (1 - kb) / kg * c * scale))
				in.GV[i] = int32(math.Round(-2 * kr * (1 - kr) / kg * c * scale))
				in.BU[i] = int32(math.Round(2 * (1 - kb) * c * scale))
			}
			in.vec.split(in, t.eotfPoly)
			out := &t.YUVOut[cs][full]
			out.poly = op
			out.Y0 = float32(yoff + 0.5)
			out.YR, out.YG, out.YB = float32(ys*kr), float32(ys*kg), float32(ys*kb)
			out.C0 = 128.5
			du, dv := 2*(1-kb), 2*(1-kr)
			out.UR, out.UG, out.UB = float32(-cs0*kr/du), float32(-cs0*kg/du), float32(cs0*(1-kb)/du)
			out.VR, out.VG, out.VB = float32(cs0*(1-kr)/dv), float32(-cs0*kg/dv), float32(-cs0*kb/dv)
		}
	}
	return t
}

// obu is obIdx without the clamp, for the oetfU table.
func obu(v float32) uint32 { return math.Float32bits(v) >> obShift }

// obIdx is the OETF bucket of linear v: its float32 bits clamped to
// [0, obHi] (negative values to 0), without branches.
func obIdx(v float32) int32 {
	b := int32(math.Float32bits(v))
	b &^= b >> 31 // negative -> 0
	t := obHi - b
	b += (t >> 31) & t // min(b, obHi)
	return (b >> obShift) & (obSize - 1)
}

// code8 maps linear v to the exactly rounded sRGB code (clamped; NaN
// gives 0).
func (t *LUTs) code8(v float32) uint8 {
	if v != v {
		return 0
	}
	c := t.CodeB[obIdx(v)]
	// +1 when v >= threshold: the sign bit of v - thr is 0.
	return c + uint8(1-math.Float32bits(v-t.CodeThr[c])>>31)
}

// extIdx maps a fixed-point Y'CbCr sum to its eotfExt index.
func extIdx(s int32) int32 { return (s >> yuvFrac) & (eotfExtSize - 1) }

// FullRangeIdx returns the indices of f's matrix (1 for BT.709) and range
// (1 for full) into LUTs.YUVIn and LUTs.YUVOut.
func FullRangeIdx(f *frame.HostFrame) (int, int) {
	cs, fr := 0, 0
	if f.ColorSpace == frame.BT709 {
		cs = 1
	}
	if f.FullRange {
		fr = 1
	}
	return cs, fr
}

// YUVRow converts one row of Y'CbCr codes (chroma at half width) to linear
// RGB.
func YUVRow(ro, gr, br []float32, yr, ur, vr []byte, t *yuvTab, lut *[eotfExtSize]float32) {
	w := len(ro)
	gr, br, yr = gr[:w], br[:w], yr[:w]
	cw := len(ur)
	vr = vr[:cw]
	for cx := yuvRowSIMD(ro, gr, br, yr, ur, vr, t) / 2; cx < w>>1 && cx < cw; cx++ {
		u, v := ur[cx], vr[cx]
		cr := t.RV[v]
		cg := t.GU[u] + t.GV[v]
		cb := t.BU[u]
		x := 2 * cx
		yy := t.Y[yr[x]]
		ro[x] = lut[extIdx(yy+cr)]
		gr[x] = lut[extIdx(yy+cg)]
		br[x] = lut[extIdx(yy+cb)]
		yy = t.Y[yr[x+1]]
		ro[x+1] = lut[extIdx(yy+cr)]
		gr[x+1] = lut[extIdx(yy+cg)]
		br[x+1] = lut[extIdx(yy+cb)]
	}
	if w&1 == 1 && cw > 0 {
		x := w - 1
		u, v := ur[cw-1], vr[cw-1]
		yy := t.Y[yr[x]]
		ro[x] = lut[extIdx(yy+t.RV[v])]
		gr[x] = lut[extIdx(yy+t.GU[u]+t.GV[v])]
		br[x] = lut[extIdx(yy+t.BU[u])]
	}
}

// RGBRow converts a row of packed 8-bit RGB s into the three planes' rows
// through lut (Upload of RGB24).
func RGBRow(ro, gr, br []float32, s []byte, lut *[256]float32) {
	w := len(ro)
	gr, br, s = gr[:w], br[:w], s[:3*w]
	for x := range ro {
		p := s[3*x:][:3]
		ro[x] = lut[p[0]]
		gr[x] = lut[p[1]]
		br[x] = lut[p[2]]
	}
}

// GrayRow converts a row of 8-bit grey s through lut (Upload of Gray8).
func GrayRow(o []float32, s []byte, lut *[256]float32) {
	s = s[:len(o)]
	for x, v := range s {
		o[x] = lut[v]
	}
}

// Gray8Row is GrayRow through the Gray8 table (code/255), bit for bit:
// float32(c)/255, a correctly rounded float32 division, equals the table's
// float32(float64(c)/255) for every code (TestGray8RowMatchesTable), so
// the vector loop converts eight codes at a time without a table.
func Gray8Row(o []float32, s []byte) {
	s = s[:len(o)]
	n := gray8RowSIMD(o, s)
	for x, v := range s[n:] {
		o[n+x] = float32(v) / 255
	}
}

// RGBOutRow writes the three planes' rows as packed 8-bit RGB codes
// (Download to RGB24).
func (t *LUTs) RGBOutRow(o []byte, rr, gr, br []float32) {
	w := len(rr)
	gr, br, o = gr[:w], br[:w], o[:3*w]
	for x := range rr {
		p := o[3*x:][:3]
		p[0] = t.code8(rr[x])
		p[1] = t.code8(gr[x])
		p[2] = t.code8(br[x])
	}
}

// GrayOutRow writes round(clamp(v, 0, 1) * 255); NaN gives 0. The clamp
// works on the float bits, without branches (mattes are full of exact 0s
// and 1s next to fractional edges).
func GrayOutRow(o []byte, s []float32) {
	o = o[:len(s)]
	for x, v := range s {
		b := int32(math.Float32bits(v))
		b &^= b >> 31 // negative -> +0
		t := obHi - b
		b += (t >> 31) & t // min(b, 1.0)
		c := uint8(math.Float32frombits(uint32(b))*255 + 0.5)
		if v != v {
			c = 0
		}
		o[x] = c
	}
}

// yCode is the rounded luma code of R'G'B' in [0,1] (at most 255.5 before
// truncation, so no clamp is needed).
func (k *YUVOut) yCode(r, g, b float32) uint8 {
	return uint8(k.Y0 + k.YR*r + k.YG*g + k.YB*b)
}

// cCodes are the rounded, clamped chroma codes of an R'G'B' average.
func (k *YUVOut) cCodes(r, g, b float32) (uint8, uint8) {
	u := min(int32(k.C0+k.UR*r+k.UG*g+k.UB*b), 255)
	v := min(int32(k.C0+k.VR*r+k.VG*g+k.VB*b), 255)
	return uint8(u), uint8(v)
}

// YUVOutRows converts two rows (a, b; equal when the height is odd) to
// luma codes and their shared chroma row. When a and b are the same row,
// writing it twice is harmless and the chroma average is over the 2x1
// block (each pixel counted twice).
func YUVOutRows(k *YUVOut, ob *[obuSize]float32, ya, yb, uo, vo []byte, ra, ga, ba, rb, gb, bb []float32) {
	w := len(ra)
	ya, yb = ya[:w], yb[:w]
	ga, ba, rb, gb, bb = ga[:w], ba[:w], rb[:w], gb[:w], bb[:w]
	cw := len(uo)
	vo = vo[:cw]
	for cx := yuvOutRowsSIMD(k, ya, yb, uo, vo, ra, ga, ba, rb, gb, bb) / 2; cx < w>>1 && cx < cw; cx++ {
		x := 2 * cx
		r0, g0, b0 := ob[obu(ra[x])], ob[obu(ga[x])], ob[obu(ba[x])]
		r1, g1, b1 := ob[obu(ra[x+1])], ob[obu(ga[x+1])], ob[obu(ba[x+1])]
		r2, g2, b2 := ob[obu(rb[x])], ob[obu(gb[x])], ob[obu(bb[x])]
		r3, g3, b3 := ob[obu(rb[x+1])], ob[obu(gb[x+1])], ob[obu(bb[x+1])]
		ya[x] = k.yCode(r0, g0, b0)
		ya[x+1] = k.yCode(r1, g1, b1)
		yb[x] = k.yCode(r2, g2, b2)
		yb[x+1] = k.yCode(r3, g3, b3)
		uo[cx], vo[cx] = k.cCodes((r0+r1+r2+r3)*0.25, (g0+g1+g2+g3)*0.25, (b0+b1+b2+b3)*0.25)
	}
	if w&1 == 1 && cw > 0 {
		x := w - 1
		r0, g0, b0 := ob[obu(ra[x])], ob[obu(ga[x])], ob[obu(ba[x])]
		r2, g2, b2 := ob[obu(rb[x])], ob[obu(gb[x])], ob[obu(bb[x])]
		ya[x] = k.yCode(r0, g0, b0)
		yb[x] = k.yCode(r2, g2, b2)
		uo[cw-1], vo[cw-1] = k.cCodes((r0+r2)*0.5, (g0+g2)*0.5, (b0+b2)*0.5)
	}
}
