package rows

import (
	"encoding/binary"

	"github.com/vfxrender/vfx/frame"
)

// GrayVtaps is vtaps over up to four rows of a Gray8 frame (from row st)
// converted by lut, with vtaps' sums in its order: the same values
// without the converted rows.
func GrayVtaps(t []float32, f *frame.HostFrame, st int, ws []float32, lut *[256]float32) {
	n := len(t)
	row := func(k int) []byte { return f.Planes[0][(st+k)*f.Strides[0]:][:n] }
	switch len(ws) {
	case 4:
		r0, r1, r2, r3 := row(0), row(1), row(2), row(3)
		w0, w1, w2, w3 := ws[0], ws[1], ws[2], ws[3]
		for x := range t {
			t[x] = w0*lut[r0[x]] + w1*lut[r1[x]] + w2*lut[r2[x]] + w3*lut[r3[x]]
		}
	case 3:
		r0, r1, r2 := row(0), row(1), row(2)
		w0, w1, w2 := ws[0], ws[1], ws[2]
		for x := range t {
			t[x] = w0*lut[r0[x]] + w1*lut[r1[x]] + w2*lut[r2[x]]
		}
	case 2:
		r0, r1 := row(0), row(1)
		w0, w1 := ws[0], ws[1]
		for x := range t {
			t[x] = w0*lut[r0[x]] + w1*lut[r1[x]]
		}
	default:
		r0, w0 := row(0), ws[0]
		for x := range t {
			t[x] = w0 * lut[r0[x]]
		}
	}
}

// NonzeroSpanBytes returns [l, r): from the first to one past the last
// nonzero byte of b (l == r when there is none), eight bytes at a time.
func NonzeroSpanBytes(b []byte) (l, r int) {
	r = len(b)
	for l+8 <= r && binary.LittleEndian.Uint64(b[l:]) == 0 {
		l += 8
	}
	for l < r && b[l] == 0 {
		l++
	}
	for r-8 >= l && binary.LittleEndian.Uint64(b[r-8:]) == 0 {
		r -= 8
	}
	for r > l && b[r-1] == 0 {
		r--
	}
	return l, r
}

// Exact4 reports whether t is an exact 4x box downsampling to n outputs:
// output i reads inputs 4i..4i+3, each with weight 1/4.
func Exact4(t *Taps, n int) bool {
	if t.fixed != 4 || len(t.Start) < n || len(t.W) < 4*n {
		return false
	}
	for i := range n {
		if t.Start[i] != int32(4*i) {
			return false
		}
	}
	for _, w := range t.W[:4*n] {
		if w != 0.25 {
			return false
		}
	}
	return true
}

// AreaYUV4Row writes output row y of an exact 4x area downsampling of a
// YUV420P frame (width and height 4 times the output's) into ro, gr and
// br: input rows 4y..4y+3, whose chroma rows are 2y and 2y+1. It equals
// Upload then ResizeArea bit for bit: every weight is 1/4, and scaling
// by a power of two is exact, so vtaps' ((r0/4+r1/4)+r2/4)+r3/4 is
// (((r0+r1)+r2)+r3)/4, and htaps' (s0/4+s2/4)+(s1/4+s3/4) is
// ((s0+s2)+(s1+s3))/4. The row sums stay in registers: no converted
// row is stored. On a CPU with AVX-512 VBMI, 16 outputs at a time are
// computed without the EOTF table (areaYUV4RowSIMD: the same bits).
func AreaYUV4Row(ro, gr, br []float32, f *frame.HostFrame, y int, t *yuvTab, lut *[eotfExtSize]float32) {
	n := len(ro)
	gr, br = gr[:n], br[:n]
	var yr [4][]byte
	for k := range yr {
		yr[k] = f.Planes[0][(4*y+k)*f.Strides[0]:][:4*n]
	}
	ur0 := f.Planes[1][(2*y)*f.Strides[1]:][:2*n]
	vr0 := f.Planes[2][(2*y)*f.Strides[2]:][:2*n]
	ur1 := f.Planes[1][(2*y+1)*f.Strides[1]:][:2*n]
	vr1 := f.Planes[2][(2*y+1)*f.Strides[2]:][:2*n]
	y0, y1, y2, y3 := yr[0], yr[1], yr[2], yr[3]
	for x := areaYUV4RowSIMD(ro, gr, br, &yr, ur0, vr0, ur1, vr1, t); x < n; x++ {
		// Chroma of the left and right pixel pairs, upper and lower
		// chroma rows.
		cx := 2 * x
		rA, gA, bA := t.RV[vr0[cx]], t.GU[ur0[cx]]+t.GV[vr0[cx]], t.BU[ur0[cx]]
		rB, gB, bB := t.RV[vr0[cx+1]], t.GU[ur0[cx+1]]+t.GV[vr0[cx+1]], t.BU[ur0[cx+1]]
		rC, gC, bC := t.RV[vr1[cx]], t.GU[ur1[cx]]+t.GV[vr1[cx]], t.BU[ur1[cx]]
		rD, gD, bD := t.RV[vr1[cx+1]], t.GU[ur1[cx+1]]+t.GV[vr1[cx+1]], t.BU[ur1[cx+1]]
		lx := 4 * x
		var sr, sg, sb [4]float32
		for j := range 4 {
			cr, cg, cb := rA, gA, bA
			cr2, cg2, cb2 := rC, gC, bC
			if j >= 2 {
				cr, cg, cb = rB, gB, bB
				cr2, cg2, cb2 = rD, gD, bD
			}
			a, b := t.Y[y0[lx+j]], t.Y[y1[lx+j]]
			c, d := t.Y[y2[lx+j]], t.Y[y3[lx+j]]
			sr[j] = ((lut[extIdx(a+cr)] + lut[extIdx(b+cr)]) + lut[extIdx(c+cr2)]) + lut[extIdx(d+cr2)]
			sg[j] = ((lut[extIdx(a+cg)] + lut[extIdx(b+cg)]) + lut[extIdx(c+cg2)]) + lut[extIdx(d+cg2)]
			sb[j] = ((lut[extIdx(a+cb)] + lut[extIdx(b+cb)]) + lut[extIdx(c+cb2)]) + lut[extIdx(d+cb2)]
		}
		ro[x] = 0.0625 * ((sr[0] + sr[2]) + (sr[1] + sr[3]))
		gr[x] = 0.0625 * ((sg[0] + sg[2]) + (sg[1] + sg[3]))
		br[x] = 0.0625 * ((sb[0] + sb[2]) + (sb[1] + sb[3]))
	}
}

// AreaGray4Row is AreaYUV4Row for a Gray8 frame through the Gray8 table
// (lut must be LUTs.Gray8, code/255): output row y of an exact 4x area
// downsampling, bit for bit GrayVtaps then htaps. float32(c)/255 is that
// table's value for every code (TestGray8RowMatchesTable), so the vector
// loop converts the codes without the table: eight outputs (32 codes of
// each of the four rows) at a time, the sums in the scalar loop's order.
// The scalar loop (the tail, or no AVX2) reads the table and takes blocks
// of code 0 and of code 255 from constants.
func AreaGray4Row(o []float32, f *frame.HostFrame, y int, lut *[256]float32) {
	n := len(o)
	r0 := f.Planes[0][(4*y)*f.Strides[0]:][:4*n]
	r1 := f.Planes[0][(4*y+1)*f.Strides[0]:][:4*n]
	r2 := f.Planes[0][(4*y+2)*f.Strides[0]:][:4*n]
	r3 := f.Planes[0][(4*y+3)*f.Strides[0]:][:4*n]
	l0, l1 := lut[0], lut[255]
	z, s := ((l0+l0)+l0)+l0, ((l1+l1)+l1)+l1
	zero := 0.0625 * ((z + z) + (z + z)) // a block of code 0 (background)
	full := 0.0625 * ((s + s) + (s + s)) // a block of code 255 (subject)
	for x := areaGray4RowSIMD(o, r0, r1, r2, r3); x < n; x++ {
		a, b, c, d := r0[4*x:][:4], r1[4*x:][:4], r2[4*x:][:4], r3[4*x:][:4]
		wa, wb := binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(b)
		wc, wd := binary.LittleEndian.Uint32(c), binary.LittleEndian.Uint32(d)
		if wa|wb|wc|wd == 0 {
			o[x] = zero
			continue
		}
		if wa&wb&wc&wd == 0xFFFFFFFF {
			o[x] = full
			continue
		}
		s0 := ((lut[a[0]] + lut[b[0]]) + lut[c[0]]) + lut[d[0]]
		s1 := ((lut[a[1]] + lut[b[1]]) + lut[c[1]]) + lut[d[1]]
		s2 := ((lut[a[2]] + lut[b[2]]) + lut[c[2]]) + lut[d[2]]
		s3 := ((lut[a[3]] + lut[b[3]]) + lut[c[3]]) + lut[d[3]]
		o[x] = 0.0625 * ((s0 + s2) + (s1 + s3))
	}
}
