package cpuref

import (
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
)

// The ops on host frames: the full-resolution work of a frame straight
// from and to 8-bit planes, one row band at a time, with no full-size
// float image in between. Both are bit-identical to the chains of
// existing ops they replace (Upload then ResizeArea; Upload of the source
// and the matte then GainCompositeLookDownload), so the CPU reference and
// the CUDA kernels those ops are checked against stay the same.

// ResizeAreaFrame is Upload of src into an image of the frame's size
// followed by ResizeArea into dst (see Ops.ResizeAreaFrame), without the
// full-size image: each output row converts only the input rows it
// covers. Errors: an invalid frame, a foreign image, a format the
// channels do not fit, or dst larger than the frame (ErrShape).
func (d *CPU) ResizeAreaFrame(dst Image, src *frame.HostFrame) error {
	const op = "ResizeAreaFrame"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	convRows, err := d.frameRows(op, src, o.c)
	if err != nil {
		return err
	}
	sw, sh := src.Width, src.Height
	if o.w > sw || o.h > sh {
		return shapeErr(op, "frame %dx%d into image %s", sw, sh, dims(o))
	}
	if o.w == sw && o.h == sh {
		return d.Upload(dst, src)
	}
	tx, ty := d.areaTable(o.w, sw), d.areaTable(o.h, sh)
	if src.Format == frame.YUV420P && sw == 4*o.w && sh == 4*o.h && rows.Exact4(tx, o.w) && rows.Exact4(ty, o.h) {
		csi, fri := rows.FullRangeIdx(src)
		t, lut := &d.lut.YUVIn[csi][fri], &d.lut.EOTFExt
		n := o.w * o.h
		R, G, B := o.pix[:n], o.pix[n:2*n], o.pix[2*n:3*n]
		d.parallel(o.h, BandRows(o.w), func(_, y0, y1 int) {
			for y := y0; y < y1; y++ {
				rows.AreaYUV4Row(R[y*o.w:][:o.w], G[y*o.w:][:o.w], B[y*o.w:][:o.w], src, y, t, lut)
			}
		})
		return nil
	}
	if src.Format == frame.Gray8 && sw == 4*o.w && sh == 4*o.h && rows.Exact4(tx, o.w) && rows.Exact4(ty, o.h) {
		lut := &d.lut.Gray8
		d.parallel(o.h, BandRows(o.w), func(_, y0, y1 int) {
			for y := y0; y < y1; y++ {
				rows.AreaGray4Row(o.pix[y*o.w:][:o.w], src, y, lut)
			}
		})
		return nil
	}
	maxK := 0
	for y := range o.h {
		maxK = max(maxK, int(ty.Off[y+1]-ty.Off[y]))
	}
	type scratch struct {
		in [3][]float32 // maxK converted input rows per channel
		t  []float32
	}
	scr := make([]*scratch, d.workers)
	defer func() {
		for _, sc := range scr {
			if sc != nil {
				d.release(sc.t)
				for _, b := range sc.in {
					d.release(b)
				}
			}
		}
	}()
	dw := o.w
	d.parallel(o.h, BandRows(dw), func(wk, y0, y1 int) {
		sc := scr[wk]
		if sc == nil {
			sc = &scratch{t: d.scratch(sw)}
			for c := range o.c {
				sc.in[c] = d.scratch(maxK * sw)
			}
			scr[wk] = sc
		}
		for y := y0; y < y1; y++ {
			st := int(ty.Start[y])
			ws := ty.W[ty.Off[y]:ty.Off[y+1]]
			if src.Format == frame.Gray8 && len(ws) <= 4 {
				// The conversion (a table) inside vtaps' sums.
				rows.GrayVtaps(sc.t, src, st, ws, &d.lut.Gray8)
				rows.Htaps(o.plane(0)[y*dw:][:dw], sc.t, tx)
				continue
			}
			for k := range ws {
				var q [3][]float32
				for c := range o.c {
					q[c] = sc.in[c][k*sw:][:sw]
				}
				convRows(q, st+k, 0, sw)
			}
			for c := range o.c {
				rows.Vtaps(sc.t, sc.in[c], sw, 0, ws)
				rows.Htaps(o.plane(c)[y*dw:][:dw], sc.t, tx)
			}
		}
	})
	return nil
}

// frameRows returns the converter of a frame's rows into linear float
// rows, as Upload converts them: rows(q, y, x0, x1) writes columns
// [x0, x1) of row y into q[c][x0:x1] (x0 even). channels is the image's
// channel count the frame must fit.
func (d *CPU) frameRows(op string, f *frame.HostFrame, channels int) (func(q [3][]float32, y, x0, x1 int), error) {
	w := f.Width
	switch f.Format {
	case frame.YUV420P:
		if channels != 3 {
			return nil, shapeErr(op, "yuv420p into %d channels", channels)
		}
		csi, fri := rows.FullRangeIdx(f)
		t := &d.lut.YUVIn[csi][fri]
		lut := &d.lut.EOTFExt
		cw := (w + 1) / 2
		return func(q [3][]float32, y, x0, x1 int) {
			cy := y >> 1
			rows.YUVRow(q[0][x0:x1], q[1][x0:x1], q[2][x0:x1],
				f.Planes[0][y*f.Strides[0]:][x0:x1],
				f.Planes[1][cy*f.Strides[1]:][x0/2:cw],
				f.Planes[2][cy*f.Strides[2]:][x0/2:cw], t, lut)
		}, nil
	case frame.RGB24:
		if channels != 3 {
			return nil, shapeErr(op, "rgb24 into %d channels", channels)
		}
		lut := &d.lut.EOTF8
		return func(q [3][]float32, y, x0, x1 int) {
			rows.RGBRow(q[0][x0:x1], q[1][x0:x1], q[2][x0:x1], f.Planes[0][y*f.Strides[0]:][3*x0:3*x1], lut)
		}, nil
	case frame.Gray8:
		if channels != 1 {
			return nil, shapeErr(op, "gray8 into %d channels", channels)
		}
		return func(q [3][]float32, y, x0, x1 int) {
			// GrayRow through d.lut.Gray8, bit for bit.
			rows.Gray8Row(q[0][x0:x1], f.Planes[0][y*f.Strides[0]:][x0:x1])
		}, nil
	}
	return nil, fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, f.Format)
}

// GainCompositeLookFrame is GainCompositeLookDownload with the source and
// the matte given as host frames (see Ops.GainCompositeLookFrame): each
// row band converts only the matte and the source pixels under a nonzero
// matte. With pc (PlateCodes: the Download of bg into a frame of dst's
// format, colour space and range), 2x2 blocks that are background only
// (zero matte, no shadow) are copied from it instead of being converted
// again, also when the plate is moved by whole pixels. The output is
// bit-identical to Upload of src and alpha followed by
// GainCompositeLookDownload.
func (d *CPU) GainCompositeLookFrame(dst, src, alpha *frame.HostFrame, pc *PlateCodes, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	const op = "GainCompositeLookFrame"
	if err := colourDst(op, dst); err != nil {
		return err
	}
	w, h := dst.Width, dst.Height
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: src: %w", op, err)
	}
	if src.Width != w || src.Height != h {
		return shapeErr(op, "src %dx%d, dst %dx%d", src.Width, src.Height, w, h)
	}
	srcRows, err := d.frameRows(op, src, 3)
	if err != nil {
		return err
	}
	var alphaRows func(q [3][]float32, y, x0, x1 int)
	if alpha != nil {
		if err := alpha.Validate(); err != nil {
			return fmt.Errorf("kernels: cpu: %s: alpha: %w", op, err)
		}
		if alpha.Width != w || alpha.Height != h {
			return shapeErr(op, "alpha %dx%d, dst %dx%d", alpha.Width, alpha.Height, w, h)
		}
		if alphaRows, err = d.frameRows(op, alpha, 1); err != nil {
			return err
		}
	}
	j, err := newCompositeJobLow(op, w, h, alpha != nil, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue, d.bilinTab)
	if err != nil {
		return err
	}
	if err := j.setLook(d, op, look); err != nil {
		return err
	}
	yuv := dst.Format == frame.YUV420P
	var bgCodes *frame.HostFrame
	if pc != nil {
		bgCodes = pc.Frame
	}
	if bgCodes != nil && (!yuv || alpha == nil || bgCodes.Format != dst.Format || bgCodes.Width != w || bgCodes.Height != h ||
		bgCodes.ColorSpace != dst.ColorSpace || bgCodes.FullRange != dst.FullRange || bgCodes.Validate() != nil) {
		bgCodes = nil // not usable: convert everything
	}
	// A plate moved by whole pixels (ox, oy) is copied from the codes at
	// the moved position where that position is inside the frame (see
	// PlateCodes); a fractional offset converts every pixel.
	ox, oy := 0, 0
	if bgCodes != nil && j.plate != nil {
		ox, oy = j.plate.DX, j.plate.DY
		// A matte zero nowhere at a row's ends (a compressed matte's
		// floor) leaves no background to copy: the odd chroma is not made
		// for it.
		if !j.plate.Whole || (ox|oy)&1 != 0 && !edgeZero(alpha) {
			bgCodes = nil
		}
	}
	var cu, cv []byte // the moved plate's chroma planes (parity of ox, oy)
	cs := 0
	if bgCodes != nil {
		cu, cv, cs = d.oddChroma(pc, j.b, ox&1, oy&1)
	}
	// The columns whose codes can be copied: [cx0, cx1), even bounds,
	// x+ox inside the frame.
	cx0, cx1 := max(0, -ox), min(w, w-ox)
	cx0 += cx0 & 1
	cx1 -= cx1 & 1
	band := BandRows(w)
	band += band & 1
	strips := make([]*frameStrip, d.workers)
	defer func() {
		for _, st := range strips {
			if st != nil {
				d.strips.Put(st)
			}
		}
	}()
	csi, fri := rows.FullRangeIdx(dst)
	k := &d.lut.YUVOut[csi][fri]
	ob := &d.lut.OETFU
	cw := (w + 1) / 2
	d.parallel(h, band, func(wk, y0, y1 int) {
		st := strips[wk]
		if st == nil {
			st = d.strip(w, band)
			strips[wk] = st
		}
		alphaRow := func(y int) []float32 { return nil }
		if alpha != nil {
			alphaRow = func(y int) []float32 { return st.al[(y-y0)*w:][:w] }
		}
		// The matte's nonzero span of each row, from its codes (a code
		// is 0 exactly where its value is); only the span is converted.
		j.begin(st.sc, y0, y1, func(y int) (int, int) {
			l, r := rows.NonzeroSpanBytes(alpha.Planes[0][y*alpha.Strides[0]:][:w])
			if l < r {
				alphaRows([3][]float32{alphaRow(y)}, y, l, r)
			}
			return l, r
		})
		rowOf := func(buf []float32, r int) [3][]float32 {
			return [3][]float32{buf[(0+r)*w:][:w], buf[(2+r)*w:][:w], buf[(4+r)*w:][:w]}
		}
		// span is the columns of row y that are not plain background:
		// its nonzero matte and shadow, widened to even bounds.
		span := func(y int) (int, int) {
			if alpha == nil {
				return 0, w
			}
			l, r := st.sc.span[y-y0][0], st.sc.span[y-y0][1]
			if sl, sr := j.shadowCols(y); sl < sr {
				if l < r {
					l, r = min(l, sl), max(r, sr)
				} else {
					l, r = sl, sr
				}
			}
			if l >= r {
				return 0, 0
			}
			return l &^ 1, min(r+r&1, w)
		}
		// convert converts the source of row y where the matte is nonzero
		// (all of it without a matte), into the strip's row r.
		convert := func(y, r int) [3][]float32 {
			s := rowOf(st.src, r)
			xl, xr := 0, w
			if alpha != nil {
				xl, xr = st.sc.span[y-y0][0], st.sc.span[y-y0][1]
				if xl >= xr {
					return s
				}
				xl, xr = xl&^1, min(xr+xr&1, w)
			}
			srcRows(s, y, xl, xr)
			return s
		}
		if !yuv {
			for y := y0; y < y1; y++ {
				q, s := rowOf(st.pix, 0), convert(y, 0)
				j.row(st.sc, y, y0, s, alphaRow(y), 0, w, q)
				d.lut.RGBOutRow(dst.Planes[0][y*dst.Strides[0]:][:3*w], q[0], q[1], q[2])
			}
			return
		}
		for y := y0; y < y1; y += 2 {
			cy := y >> 1
			y2 := min(y+1, h-1) // odd height: the last row pairs with itself
			l, r := span(y)
			if y2 != y {
				if l2, r2 := span(y2); l2 < r2 {
					if l < r {
						l, r = min(l, l2), max(r, r2)
					} else {
						l, r = l2, r2
					}
				}
			}
			// The moved plate's rows y+oy and y2+oy must both be inside
			// the frame (and a pair) for its codes to be copied; the
			// columns outside [cx0, cx1) are converted with the span.
			copyRow := bgCodes != nil && y2 == y+1 && y+oy >= 0 && y2+oy < h && cx0 < cx1
			if copyRow && cx0 > 0 { // [0, cx0) cannot be copied
				if l < r {
					l = 0
				} else {
					l, r = 0, cx0
				}
			}
			if copyRow && cx1 < w { // nor [cx1, w)
				if l < r {
					r = w
				} else {
					l, r = cx1, w
				}
			}
			if !copyRow && alpha != nil {
				l, r = 0, w // every column is converted (as the download does)
			}
			ya, yb := dst.Planes[0][y*dst.Strides[0]:][:w], dst.Planes[0][y2*dst.Strides[0]:][:w]
			uo, vo := dst.Planes[1][cy*dst.Strides[1]:][:cw], dst.Planes[2][cy*dst.Strides[2]:][:cw]
			if copyRow {
				// Background outside [l, r): copy its codes, from the
				// moved position (x+ox, y+oy), inside [cx0, cx1).
				sy := y + oy
				by := bgCodes.Planes[0][sy*bgCodes.Strides[0]:]
				by2 := bgCodes.Planes[0][(sy+1)*bgCodes.Strides[0]:]
				bu, bv := cu[(sy>>1)*cs:], cv[(sy>>1)*cs:]
				cp := func(a, b int) { // even a; b even or w
					if a >= b {
						return
					}
					copy(ya[a:b], by[a+ox:b+ox])
					copy(yb[a:b], by2[a+ox:b+ox])
					ca, cb := a/2+ox>>1, (b+1)/2+ox>>1
					copy(uo[a/2:(b+1)/2], bu[ca:cb])
					copy(vo[a/2:(b+1)/2], bv[ca:cb])
				}
				if l >= r {
					cp(0, w) // copy it all
					continue
				}
				cp(0, l)
				cp(r, w)
			}
			qa, qb := rowOf(st.pix, 0), rowOf(st.pix, 1)
			j.row(st.sc, y, y0, convert(y, 0), alphaRow(y), l, r, qa)
			if y2 != y {
				j.row(st.sc, y2, y0, convert(y2, 1), alphaRow(y2), l, r, qb)
			} else {
				qb = qa
			}
			rows.YUVOutRows(k, ob, ya[l:r], yb[l:r], uo[l/2:(r+1)/2], vo[l/2:(r+1)/2],
				qa[0][l:r], qa[1][l:r], qa[2][l:r], qb[0][l:r], qb[1][l:r], qb[2][l:r])
		}
	})
	return nil
}

// frameStrip is one worker's scratch of GainCompositeLookFrame for a
// width and band height, kept in the device between calls.
type frameStrip struct {
	w, band int
	sc      *compositeScratch
	pix     []float32 // output: two rows of 3 channels, [c*2*w + r*w : ...]
	src     []float32 // source: the same layout
	al      []float32 // the band's matte rows
}

// strip returns a pooled frameStrip of width w and band height band, or a
// new one.
func (d *CPU) strip(w, band int) *frameStrip {
	if st, ok := d.strips.Get().(*frameStrip); ok && st.w == w && st.band == band {
		return st
	}
	return &frameStrip{w: w, band: band, sc: newFullScratch(w, band),
		pix: make([]float32, 6*w), src: make([]float32, 6*w), al: make([]float32, band*w)}
}

// tabKey names a cached resampling table.
type tabKey struct {
	kind    byte // 'a' area taps, 'b' bilinear
	out, in int
}

// areaTable is areaTaps(out, in), made once per device.
func (d *CPU) areaTable(out, in int) *rows.Taps {
	k := tabKey{'a', out, in}
	if t, ok := d.tabs.Load(k); ok {
		return t.(*rows.Taps)
	}
	t := rows.AreaTaps(out, in)
	v, _ := d.tabs.LoadOrStore(k, &t)
	return v.(*rows.Taps)
}

// shiftKey is a plate move's plan's key (shiftFor).
type shiftKey struct {
	w, h   int
	dx, dy float32
}

// shiftFor is rows.NewShift(w, h, dx, dy), kept for the next call while
// the key does not change: a camera-locked plate stays at one offset for
// frames on end (whole pixels), so a job makes a plan per step, not per
// frame.
func (d *CPU) shiftFor(w, h int, dx, dy float32) *rows.Shift {
	k := shiftKey{w, h, dx, dy}
	d.shiftMu.Lock()
	defer d.shiftMu.Unlock()
	if d.shift != nil && d.shiftK == k {
		return d.shift
	}
	d.shift, d.shiftK = rows.NewShift(w, h, dx, dy), k
	return d.shift
}

// bilinTab is BilinTable(out, in), made once per device.
func (d *CPU) bilinTab(out, in int) rows.Bilin {
	k := tabKey{'b', out, in}
	if t, ok := d.tabs.Load(k); ok {
		return *t.(*rows.Bilin)
	}
	t := rows.BilinTable(out, in)
	v, _ := d.tabs.LoadOrStore(k, &t)
	return *v.(*rows.Bilin)
}
