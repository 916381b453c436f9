package cpuref

import (
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
)

// UpscaleEdge resamples src to dst's size (see ScaleOps.UpscaleEdge).
func (d *CPU) UpscaleEdge(dst, src Image, edge float32) error {
	const op = "UpscaleEdge"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if s.c != o.c || o.w < s.w || o.h < s.h || o == s {
		return shapeErr(op, "src %s, dst %s (dst must not be smaller, channels equal)", dims(s), dims(o))
	}
	if o.w == s.w && o.h == s.h {
		d.copyPix(o.pix, s.pix)
		return nil
	}
	if edge != edge {
		edge = 0
	}
	edge = min(max(edge, 0), 1)
	tx := rows.LanczosTaps(o.w, s.w, float64(s.w)/float64(o.w), 0)
	ty := rows.LanczosTaps(o.h, s.h, float64(s.h)/float64(o.h), 0)
	ax, bx := rows.NearPairs(o.w, s.w)
	ay, by := rows.NearPairs(o.h, s.h)
	sw, dw := s.w, o.w
	tmp := d.scratch(dw * s.h * s.c)
	defer d.release(tmp)
	// Pass 1: rows of src into tmp (dw x sh per channel).
	d.parallel(s.h*s.c, BandRows(dw), func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			c, y := r/s.h, r%s.h
			srow := s.plane(c)[y*sw:][:sw]
			trow := tmp[(c*s.h+y)*dw:][:dw]
			rows.Htaps(trow, srow, &tx)
			if edge > 0 {
				for i := range trow {
					trow[i] = rows.ClampRange(trow[i], srow[ax[i]], srow[bx[i]], edge)
				}
			}
		}
	})
	// Pass 2: columns of tmp into dst.
	d.parallel(o.h, BandRows(dw), func(_, y0, y1 int) {
		for c := range o.c {
			tp := tmp[c*s.h*dw:][:s.h*dw]
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				row := dp[y*dw:][:dw]
				rows.Vtaps(row, tp, dw, int(ty.Start[y]), ty.W[ty.Off[y]:ty.Off[y+1]])
				if edge > 0 {
					ra, rb := tp[int(ay[y])*dw:][:dw], tp[int(by[y])*dw:][:dw]
					for x := range row {
						row[x] = rows.ClampRange(row[x], ra[x], rb[x], edge)
					}
				}
			}
		}
	})
	return nil
}

// Sharpen is the unsharp mask of ScaleOps.Sharpen.
func (d *CPU) Sharpen(dst, src Image, amount float32) error {
	const op = "Sharpen"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if o == s {
		return shapeErr(op, "dst aliases src")
	}
	if err := sameSize(op, o, []string{"src"}, s); err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	w, h := o.w, o.h
	scr := make([][]float32, d.workers)
	d.parallel(h, BandRows(w), func(wk, y0, y1 int) {
		if scr[wk] == nil {
			scr[wk] = make([]float32, 3*w)
		}
		for c := range o.c {
			sp, dp := s.plane(c), o.plane(c)
			for y := y0; y < y1; y++ {
				rows.SharpenRow(dp[y*w:][:w], sp, w, h, y, amount, scr[wk])
			}
		}
	})
	return nil
}

// SharpenDownload is ScaleOps.SharpenDownload: rows are sharpened two at a
// time into a per-worker strip and converted at once.
func (d *CPU) SharpenDownload(dst *frame.HostFrame, src Image, amount float32) error {
	const op = "SharpenDownload"
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	if s.w != dst.Width || s.h != dst.Height || s.c != 3 {
		return shapeErr(op, "image %s into frame %dx%d", dims(s), dst.Width, dst.Height)
	}
	switch dst.Format {
	case frame.YUV420P, frame.RGB24:
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, dst.Format)
	}
	w, h := s.w, s.h
	type strip struct{ pix, h3 []float32 } // pix: 3 channels x 2 rows
	strips := make([]*strip, d.workers)
	band := BandRows(w)
	band += band & 1
	yuv := dst.Format == frame.YUV420P
	csi, fri := rows.FullRangeIdx(dst)
	k := &d.lut.YUVOut[csi][fri]
	ob := &d.lut.OETFU
	cw := (w + 1) / 2
	d.parallel(h, band, func(wk, y0, y1 int) {
		st := strips[wk]
		if st == nil {
			st = &strip{pix: make([]float32, 6*w), h3: make([]float32, 3*w)}
			strips[wk] = st
		}
		row := func(y, r int) [3][]float32 {
			var q [3][]float32
			for c := range 3 {
				q[c] = st.pix[(2*c+r)*w:][:w]
				rows.SharpenRow(q[c], s.plane(c), w, h, y, amount, st.h3)
			}
			return q
		}
		if !yuv {
			for y := y0; y < y1; y++ {
				q := row(y, 0)
				d.lut.RGBOutRow(dst.Planes[0][y*dst.Strides[0]:][:3*w], q[0], q[1], q[2])
			}
			return
		}
		for y := y0; y < y1; y += 2 {
			cy := y >> 1
			y2 := min(y+1, h-1)
			qa := row(y, 0)
			qb := qa
			if y2 != y {
				qb = row(y2, 1)
			}
			rows.YUVOutRows(k, ob,
				dst.Planes[0][y*dst.Strides[0]:][:w], dst.Planes[0][y2*dst.Strides[0]:][:w],
				dst.Planes[1][cy*dst.Strides[1]:][:cw], dst.Planes[2][cy*dst.Strides[2]:][:cw],
				qa[0], qa[1], qa[2], qb[0], qb[1], qb[2])
		}
	})
	return nil
}
