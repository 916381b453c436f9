package cpuref

import "github.com/vfxrender/vfx/kernels/rows"

// separable resamples s into o (channels equal) with the tables tx
// (columns) and ty (rows): rows first into a per-worker line, then columns.
func (d *CPU) separable(o, s *cpuImage, tx, ty *rows.Taps) {
	sw, dw := s.w, o.w
	tmps := make([][]float32, d.workers)
	d.parallel(o.h, BandRows(dw), func(wk, y0, y1 int) {
		if tmps[wk] == nil {
			tmps[wk] = make([]float32, sw)
		}
		t := tmps[wk]
		for c := range o.c {
			sp := s.plane(c)
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				st := int(ty.Start[y])
				rows.Vtaps(t, sp, sw, st, ty.W[ty.Off[y]:ty.Off[y+1]])
				rows.Htaps(dp[y*dw:][:dw], t, tx)
			}
		}
	})
}

// ResizeArea downsamples src to dst's size by exact area averaging (see
// Ops.ResizeArea). ErrShape if dst is larger than src in either axis or
// the channel counts differ.
func (d *CPU) ResizeArea(dst, src Image) error {
	const op = "ResizeArea"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if s.c != o.c || o.w > s.w || o.h > s.h {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if o == s {
		return nil
	}
	if o.w == s.w && o.h == s.h {
		d.copyPix(o.pix, s.pix)
		return nil
	}
	d.separable(o, s, d.areaTable(o.w, s.w), d.areaTable(o.h, s.h))
	return nil
}

// ResizeLanczos3 resamples src to dst's size with a separable Lanczos-3
// filter, widened by the scale when downsampling, edges clamped (see
// Ops.ResizeLanczos3). The same size is an exact copy.
func (d *CPU) ResizeLanczos3(dst, src Image) error {
	const op = "ResizeLanczos3"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if o == s {
		return nil
	}
	if o.w == s.w && o.h == s.h {
		d.copyPix(o.pix, s.pix)
		return nil
	}
	tx := rows.LanczosTaps(o.w, s.w, float64(s.w)/float64(o.w), 0)
	ty := rows.LanczosTaps(o.h, s.h, float64(s.h)/float64(o.h), 0)
	d.separable(o, s, &tx, &ty)
	return nil
}

// CoverFit scales src uniformly with Lanczos-3 so that it covers dst and
// crops the overflow equally on both sides (see Ops.CoverFit). The scaled
// size is not rounded: the crop may be a fraction of a pixel, so the
// centre of src always lands on the centre of dst.
func (d *CPU) CoverFit(dst, src Image) error {
	const op = "CoverFit"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if o == s {
		return nil
	}
	if o.w == s.w && o.h == s.h {
		d.copyPix(o.pix, s.pix)
		return nil
	}
	var tx, ty rows.Taps
	if o.w*s.h >= o.h*s.w {
		// dst is relatively wider: width fits exactly, height overflows.
		inv := float64(s.w) / float64(o.w)
		offY := (float64(s.h)/inv - float64(o.h)) / 2
		tx = rows.LanczosTaps(o.w, s.w, inv, 0)
		ty = rows.LanczosTaps(o.h, s.h, inv, offY)
	} else {
		inv := float64(s.h) / float64(o.h)
		offX := (float64(s.w)/inv - float64(o.w)) / 2
		tx = rows.LanczosTaps(o.w, s.w, inv, offX)
		ty = rows.LanczosTaps(o.h, s.h, inv, 0)
	}
	d.separable(o, s, &tx, &ty)
	return nil
}
