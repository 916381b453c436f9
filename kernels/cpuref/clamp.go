package cpuref

// ClampArgs checks Clamp's bounds: finite, lo <= hi.
func ClampArgs(lo, hi float32) bool {
	return lo <= hi && lo-lo == 0 && hi-hi == 0
}

// clamp1 is Clamp's value (the CUDA kernel's arithmetic).
func clamp1(v, lo, hi float32) float32 {
	if !(v >= lo) {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Clamp writes dst = min(max(src, lo), hi) per pixel and channel (NaN
// gives lo); see kernels.ClampOps.
func (d *CPU) Clamp(dst, src Image, lo, hi float32) error {
	const op = "Clamp"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if !ClampArgs(lo, hi) {
		return shapeErr(op, "bounds %g, %g: want finite lo <= hi", lo, hi)
	}
	w := o.w
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for c := range o.c {
			sp, dp := s.plane(c)[y0*w:y1*w], o.plane(c)[y0*w:y1*w]
			for i, v := range sp {
				dp[i] = clamp1(v, lo, hi)
			}
		}
	})
	return nil
}
