package cpuref

// WrapLightArgs checks WrapLight's eps: finite and > 0.
func WrapLightArgs(eps float32) bool { return eps > 0 && eps-eps == 0 }

// wrapScale is WrapLight's per-pixel factor (1 - ab) / max(1 - aw, eps)
// (a NaN denominator gives eps), in the CUDA kernel's order.
func wrapScale(aw, ab, eps float32) float32 {
	d := 1 - aw
	if !(d > eps) {
		d = eps
	}
	return (1 - ab) / d
}

// WrapLight writes the masked light wrap's light
// dst = held * (1 - band) / max(1 - wide, eps) (see kernels.WrapOps).
func (d *CPU) WrapLight(dst, held, wide, band Image, eps float32) error {
	const op = "WrapLight"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	hb, err := cpuImg(op, "held", held)
	if err != nil {
		return err
	}
	aw, err := cpuImg(op, "wide", wide)
	if err != nil {
		return err
	}
	ab, err := cpuImg(op, "band", band)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "held", hb, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "wide", aw, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "band", ab, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"held", "wide", "band"}, hb, aw, ab); err != nil {
		return err
	}
	if !WrapLightArgs(eps) {
		return shapeErr(op, "eps %g: want finite > 0", eps)
	}
	w := o.w
	W, B := aw.plane(0), ab.plane(0)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		lo, hi := y0*w, y1*w
		wl, bl := W[lo:hi], B[lo:hi][:hi-lo]
		h0, h1, h2 := hb.plane(0)[lo:hi][:len(wl)], hb.plane(1)[lo:hi][:len(wl)], hb.plane(2)[lo:hi][:len(wl)]
		o0, o1, o2 := o.plane(0)[lo:hi][:len(wl)], o.plane(1)[lo:hi][:len(wl)], o.plane(2)[lo:hi][:len(wl)]
		for i, v := range wl {
			s := wrapScale(v, bl[i], eps)
			o0[i], o1[i], o2[i] = h0[i]*s, h1[i]*s, h2[i]*s
		}
	})
	return nil
}
