package kernels

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/frame"
)

// nearPairs returns, for each of out outputs resampled from in inputs, the
// clamped indices floor(c) and floor(c)+1 of its position
// c = (i+0.5)*in/out - 0.5.
func nearPairs(out, in int) (a, b []int32) {
	a, b = make([]int32, out), make([]int32, out)
	inv := float64(in) / float64(out)
	for i := range out {
		f := int(math.Floor((float64(i)+0.5)*inv - 0.5))
		a[i] = int32(min(max(f, 0), in-1))
		b[i] = int32(min(max(f+1, 0), in-1))
	}
	return a, b
}

// clampRange moves l toward [min(a,b), max(a,b)] by edge.
func clampRange(l, a, b, edge float32) float32 {
	lo, hi := min(a, b), max(a, b)
	return l + edge*(min(max(l, lo), hi)-l)
}

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
	tx := lanczosTaps(o.w, s.w, float64(s.w)/float64(o.w), 0)
	ty := lanczosTaps(o.h, s.h, float64(s.h)/float64(o.h), 0)
	ax, bx := nearPairs(o.w, s.w)
	ay, by := nearPairs(o.h, s.h)
	sw, dw := s.w, o.w
	tmp := d.scratch(dw * s.h * s.c)
	defer d.release(tmp)
	// Pass 1: rows of src into tmp (dw x sh per channel).
	d.parallel(s.h*s.c, bandRows(dw), func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			c, y := r/s.h, r%s.h
			srow := s.plane(c)[y*sw:][:sw]
			trow := tmp[(c*s.h+y)*dw:][:dw]
			htaps(trow, srow, &tx)
			if edge > 0 {
				for i := range trow {
					trow[i] = clampRange(trow[i], srow[ax[i]], srow[bx[i]], edge)
				}
			}
		}
	})
	// Pass 2: columns of tmp into dst.
	d.parallel(o.h, bandRows(dw), func(_, y0, y1 int) {
		for c := range o.c {
			tp := tmp[c*s.h*dw:][:s.h*dw]
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				row := dp[y*dw:][:dw]
				vtaps(row, tp, dw, int(ty.start[y]), ty.w[ty.off[y]:ty.off[y+1]])
				if edge > 0 {
					ra, rb := tp[int(ay[y])*dw:][:dw], tp[int(by[y])*dw:][:dw]
					for x := range row {
						row[x] = clampRange(row[x], ra[x], rb[x], edge)
					}
				}
			}
		}
	})
	return nil
}

// sharpenRow writes row y of channel plane sp (w x h) sharpened into o,
// using the three rows of h3 (3*w) as scratch.
func sharpenRow(o, sp []float32, w, h, y int, amount float32, h3 []float32) {
	for k := range 3 {
		yy := min(max(y+k-1, 0), h-1)
		hblur(h3[k*w:][:w], sp[yy*w:][:w])
	}
	up, mid, dn := h3[:w], h3[w:2*w], h3[2*w:3*w]
	s := sp[y*w:][:w]
	o = o[:w]
	for x := range o {
		b := (0.25*up[x] + 0.5*mid[x]) + 0.25*dn[x]
		o[x] = s[x] + amount*(s[x]-b)
	}
}

// hblur is the [1 2 1]/4 row blur with clamped borders.
func hblur(o, s []float32) {
	w := len(s)
	o = o[:w]
	if w == 1 {
		o[0] = (0.25*s[0] + 0.5*s[0]) + 0.25*s[0]
		return
	}
	o[0] = (0.25*s[0] + 0.5*s[0]) + 0.25*s[1]
	for x := 1; x < w-1; x++ {
		o[x] = (0.25*s[x-1] + 0.5*s[x]) + 0.25*s[x+1]
	}
	o[w-1] = (0.25*s[w-2] + 0.5*s[w-1]) + 0.25*s[w-1]
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
	d.parallel(h, bandRows(w), func(wk, y0, y1 int) {
		if scr[wk] == nil {
			scr[wk] = make([]float32, 3*w)
		}
		for c := range o.c {
			sp, dp := s.plane(c), o.plane(c)
			for y := y0; y < y1; y++ {
				sharpenRow(dp[y*w:][:w], sp, w, h, y, amount, scr[wk])
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
	band := bandRows(w)
	band += band & 1
	yuv := dst.Format == frame.YUV420P
	csi, fri := fullRangeIdx(dst)
	k := &d.lut.yuvOut[csi][fri]
	ob := &d.lut.oetfU
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
				sharpenRow(q[c], s.plane(c), w, h, y, amount, st.h3)
			}
			return q
		}
		if !yuv {
			for y := y0; y < y1; y++ {
				q := row(y, 0)
				d.lut.rgbOutRow(dst.Planes[0][y*dst.Strides[0]:][:3*w], q[0], q[1], q[2])
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
			yuvOutRows(k, ob,
				dst.Planes[0][y*dst.Strides[0]:][:w], dst.Planes[0][y2*dst.Strides[0]:][:w],
				dst.Planes[1][cy*dst.Strides[1]:][:cw], dst.Planes[2][cy*dst.Strides[2]:][:cw],
				qa[0], qa[1], qa[2], qb[0], qb[1], qb[2])
		}
	})
	return nil
}
