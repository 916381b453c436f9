package kernels

import (
	"fmt"
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
// bucket midpoint (0 for bucket 0, so black stays 0): error below 2.5e-4
// in R' (0.06 code). Only the buckets of values above about 2^-16 are ever
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
	y, rv, gu, gv, bu [256]int32
}

// yuvOut holds the float RGB->YUV coefficients of one matrix and range,
// with the rounding offset (+0.5) folded into the constants.
type yuvOut struct {
	y0, yr, yg, yb float32
	c0             float32
	ur, ug, ub     float32
	vr, vg, vb     float32
}

type luts struct {
	eotf8   [256]float32
	gray8   [256]float32
	eotfExt [eotfExtSize]float32
	oetfB   [obSize]float32
	oetfU   [obuSize]float32 // oetfB[obIdx(v)] at index bits(v)>>obShift
	codeB   [obSize]uint8
	codeThr [256]float32
	yuvIn   [2][2]yuvTab // [bt709][fullRange]
	yuvOut  [2][2]yuvOut
}

// matrixK returns Kr and Kb of a colour space.
func matrixK(cs frame.ColorSpace) (kr, kb float64) {
	if cs == frame.BT709 {
		return 0.2126, 0.0722
	}
	return 0.299, 0.114
}

func newLUTs() *luts {
	t := new(luts)
	for i := range 256 {
		t.eotf8[i] = float32(srgb.ToLinear(float64(i) / 255))
		t.gray8[i] = float32(float64(i) / 255)
	}
	for i := range t.eotfExt {
		r := float64(i-eotfExtOff) / eotfFixN
		t.eotfExt[i] = float32(srgb.ToLinear(max(0, min(r, 1))))
	}
	// The code threshold is stored as the smallest float32 >= the exact
	// value, so that v >= codeThr[k] decides exactly for every float32 v.
	for k := range 255 {
		th := srgb.ToLinear((float64(k) + 0.5) / 255)
		t32 := float32(th)
		if float64(t32) < th {
			t32 = math.Nextafter32(t32, 2)
		}
		t.codeThr[k] = t32
	}
	t.codeThr[255] = float32(math.Inf(1))
	code := uint8(0)
	for k := range obN {
		lo := math.Float32frombits(uint32(k << obShift))
		mid := math.Float32frombits(uint32(k<<obShift + 1<<(obShift-1)))
		switch {
		case k == 0:
			t.oetfB[k] = 0
		case k == obN-1:
			t.oetfB[k] = 1
		default:
			t.oetfB[k] = float32(srgb.FromLinear(float64(mid)))
		}
		for code < 255 && lo >= t.codeThr[code] {
			code++
		}
		t.codeB[k] = code
	}
	// oetfU: patterns of positive floats above 1 (+Inf and positive NaN
	// included) take the value of 1.0's bucket, every negative pattern
	// that of 0: exactly what obIdx's clamp does.
	for k := range obuSize {
		switch {
		case k < obN:
			t.oetfU[k] = t.oetfB[k]
		case k < obuSize/2:
			t.oetfU[k] = t.oetfB[obN-1]
		default:
			t.oetfU[k] = t.oetfB[0]
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
			in := &t.yuvIn[cs][full]
			scale := float64(eotfFixN << yuvFrac)
			for i := range 256 {
				yn := (float64(i) - yoff) / ys
				c := (float64(i) - 128) / cs0
				in.y[i] = int32(math.Round(yn*scale)) + eotfExtOff<<yuvFrac + 1<<(yuvFrac-1)
				in.rv[i] = int32(math.Round(2 * (1 - kr) * c * scale))
				in.gu[i] = int32(math.Round(-2 * kb * (1 - kb) / kg * c * scale))
				in.gv[i] = int32(math.Round(-2 * kr * (1 - kr) / kg * c * scale))
				in.bu[i] = int32(math.Round(2 * (1 - kb) * c * scale))
			}
			out := &t.yuvOut[cs][full]
			out.y0 = float32(yoff + 0.5)
			out.yr, out.yg, out.yb = float32(ys*kr), float32(ys*kg), float32(ys*kb)
			out.c0 = 128.5
			du, dv := 2*(1-kb), 2*(1-kr)
			out.ur, out.ug, out.ub = float32(-cs0*kr/du), float32(-cs0*kg/du), float32(cs0*(1-kb)/du)
			out.vr, out.vg, out.vb = float32(cs0*(1-kr)/dv), float32(-cs0*kg/dv), float32(-cs0*kb/dv)
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
func (t *luts) code8(v float32) uint8 {
	if v != v {
		return 0
	}
	c := t.codeB[obIdx(v)]
	// +1 when v >= threshold: the sign bit of v - thr is 0.
	return c + uint8(1-math.Float32bits(v-t.codeThr[c])>>31)
}

// extIdx maps a fixed-point Y'CbCr sum to its eotfExt index.
func extIdx(s int32) int32 { return (s >> yuvFrac) & (eotfExtSize - 1) }

func fullRangeIdx(f *frame.HostFrame) (int, int) {
	cs, fr := 0, 0
	if f.ColorSpace == frame.BT709 {
		cs = 1
	}
	if f.FullRange {
		fr = 1
	}
	return cs, fr
}

// Upload converts src into dst (see Device.Upload). Errors: an invalid
// frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Upload(dst Image, src *frame.HostFrame) error {
	const op = "Upload"
	m, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	if m.w != src.Width || m.h != src.Height {
		return shapeErr(op, "frame %dx%d into image %s", src.Width, src.Height, dims(m))
	}
	switch src.Format {
	case frame.YUV420P:
		if m.c != 3 {
			return shapeErr(op, "yuv420p into %d channels", m.c)
		}
		d.uploadYUV(m, src)
	case frame.RGB24:
		if m.c != 3 {
			return shapeErr(op, "rgb24 into %d channels", m.c)
		}
		d.uploadRGB(m, src)
	case frame.Gray8:
		if m.c != 1 {
			return shapeErr(op, "gray8 into %d channels", m.c)
		}
		d.uploadGray(m, src)
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, src.Format)
	}
	return nil
}

func (d *CPU) uploadYUV(m *cpuImage, f *frame.HostFrame) {
	csi, fri := fullRangeIdx(f)
	t := &d.lut.yuvIn[csi][fri]
	lut := &d.lut.eotfExt
	w, h := m.w, m.h
	cw := (w + 1) / 2
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	band := bandRows(w)
	band += band & 1
	d.parallel(h, band, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			cy := y >> 1
			yuvRow(R[y*w:][:w], G[y*w:][:w], B[y*w:][:w],
				f.Planes[0][y*f.Strides[0]:][:w],
				f.Planes[1][cy*f.Strides[1]:][:cw],
				f.Planes[2][cy*f.Strides[2]:][:cw], t, lut)
		}
	})
}

// yuvRow converts one row of Y'CbCr codes (chroma at half width) to linear
// RGB.
func yuvRow(ro, gr, br []float32, yr, ur, vr []byte, t *yuvTab, lut *[eotfExtSize]float32) {
	w := len(ro)
	gr, br, yr = gr[:w], br[:w], yr[:w]
	cw := len(ur)
	vr = vr[:cw]
	for cx := 0; cx < w>>1 && cx < cw; cx++ {
		u, v := ur[cx], vr[cx]
		cr := t.rv[v]
		cg := t.gu[u] + t.gv[v]
		cb := t.bu[u]
		x := 2 * cx
		yy := t.y[yr[x]]
		ro[x] = lut[extIdx(yy+cr)]
		gr[x] = lut[extIdx(yy+cg)]
		br[x] = lut[extIdx(yy+cb)]
		yy = t.y[yr[x+1]]
		ro[x+1] = lut[extIdx(yy+cr)]
		gr[x+1] = lut[extIdx(yy+cg)]
		br[x+1] = lut[extIdx(yy+cb)]
	}
	if w&1 == 1 && cw > 0 {
		x := w - 1
		u, v := ur[cw-1], vr[cw-1]
		yy := t.y[yr[x]]
		ro[x] = lut[extIdx(yy+t.rv[v])]
		gr[x] = lut[extIdx(yy+t.gu[u]+t.gv[v])]
		br[x] = lut[extIdx(yy+t.bu[u])]
	}
}

func (d *CPU) uploadRGB(m *cpuImage, f *frame.HostFrame) {
	lut := &d.lut.eotf8
	w, h := m.w, m.h
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			rgbRow(R[y*w:][:w], G[y*w:][:w], B[y*w:][:w], f.Planes[0][y*f.Strides[0]:][:3*w], lut)
		}
	})
}

func rgbRow(ro, gr, br []float32, s []byte, lut *[256]float32) {
	w := len(ro)
	gr, br, s = gr[:w], br[:w], s[:3*w]
	for x := range ro {
		p := s[3*x:][:3]
		ro[x] = lut[p[0]]
		gr[x] = lut[p[1]]
		br[x] = lut[p[2]]
	}
}

func (d *CPU) uploadGray(m *cpuImage, f *frame.HostFrame) {
	lut := &d.lut.gray8
	w, h := m.w, m.h
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			grayRow(m.pix[y*w:][:w], f.Planes[0][y*f.Strides[0]:][:w], lut)
		}
	})
}

func grayRow(o []float32, s []byte, lut *[256]float32) {
	s = s[:len(o)]
	for x, v := range s {
		o[x] = lut[v]
	}
}

// Download converts src into dst (see Device.Download). Errors: an
// invalid frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Download(dst *frame.HostFrame, src Image) error {
	const op = "Download"
	m, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	if m.w != dst.Width || m.h != dst.Height {
		return shapeErr(op, "image %s into frame %dx%d", dims(m), dst.Width, dst.Height)
	}
	switch dst.Format {
	case frame.YUV420P:
		if m.c != 3 {
			return shapeErr(op, "%d channels into yuv420p", m.c)
		}
		d.downloadYUV(dst, m)
	case frame.RGB24:
		if m.c != 3 {
			return shapeErr(op, "%d channels into rgb24", m.c)
		}
		d.downloadRGB(dst, m)
	case frame.Gray8:
		if m.c != 1 {
			return shapeErr(op, "%d channels into gray8", m.c)
		}
		d.downloadGray(dst, m)
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, dst.Format)
	}
	return nil
}

func (d *CPU) downloadRGB(f *frame.HostFrame, m *cpuImage) {
	t := d.lut
	w, h := m.w, m.h
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			t.rgbOutRow(f.Planes[0][y*f.Strides[0]:][:3*w], R[y*w:][:w], G[y*w:][:w], B[y*w:][:w])
		}
	})
}

func (t *luts) rgbOutRow(o []byte, rr, gr, br []float32) {
	w := len(rr)
	gr, br, o = gr[:w], br[:w], o[:3*w]
	for x := range rr {
		p := o[3*x:][:3]
		p[0] = t.code8(rr[x])
		p[1] = t.code8(gr[x])
		p[2] = t.code8(br[x])
	}
}

func (d *CPU) downloadGray(f *frame.HostFrame, m *cpuImage) {
	w, h := m.w, m.h
	d.parallel(h, bandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			grayOutRow(f.Planes[0][y*f.Strides[0]:][:w], m.pix[y*w:][:w])
		}
	})
}

// grayOutRow writes round(clamp(v, 0, 1) * 255); NaN gives 0. The clamp
// works on the float bits, without branches (mattes are full of exact 0s
// and 1s next to fractional edges).
func grayOutRow(o []byte, s []float32) {
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

func (d *CPU) downloadYUV(f *frame.HostFrame, m *cpuImage) {
	csi, fri := fullRangeIdx(f)
	k := &d.lut.yuvOut[csi][fri]
	ob := &d.lut.oetfU
	w, h := m.w, m.h
	cw := (w + 1) / 2
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	band := bandRows(w)
	band += band & 1
	d.parallel(h, band, func(_, y0, y1 int) {
		for y := y0; y < y1; y += 2 {
			cy := y >> 1
			y2 := min(y+1, h-1) // odd height: the last row pairs with itself
			yuvOutRows(k, ob,
				f.Planes[0][y*f.Strides[0]:][:w], f.Planes[0][y2*f.Strides[0]:][:w],
				f.Planes[1][cy*f.Strides[1]:][:cw], f.Planes[2][cy*f.Strides[2]:][:cw],
				R[y*w:][:w], G[y*w:][:w], B[y*w:][:w],
				R[y2*w:][:w], G[y2*w:][:w], B[y2*w:][:w])
		}
	})
}

// yCode is the rounded luma code of R'G'B' in [0,1] (at most 255.5 before
// truncation, so no clamp is needed).
func (k *yuvOut) yCode(r, g, b float32) uint8 {
	return uint8(k.y0 + k.yr*r + k.yg*g + k.yb*b)
}

// cCodes are the rounded, clamped chroma codes of an R'G'B' average.
func (k *yuvOut) cCodes(r, g, b float32) (uint8, uint8) {
	u := min(int32(k.c0+k.ur*r+k.ug*g+k.ub*b), 255)
	v := min(int32(k.c0+k.vr*r+k.vg*g+k.vb*b), 255)
	return uint8(u), uint8(v)
}

// yuvOutRows converts two rows (a, b; equal when the height is odd) to
// luma codes and their shared chroma row. When a and b are the same row,
// writing it twice is harmless and the chroma average is over the 2x1
// block (each pixel counted twice).
func yuvOutRows(k *yuvOut, ob *[obuSize]float32, ya, yb, uo, vo []byte, ra, ga, ba, rb, gb, bb []float32) {
	w := len(ra)
	ya, yb = ya[:w], yb[:w]
	ga, ba, rb, gb, bb = ga[:w], ba[:w], rb[:w], gb[:w], bb[:w]
	cw := len(uo)
	vo = vo[:cw]
	for cx := 0; cx < w>>1 && cx < cw; cx++ {
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
