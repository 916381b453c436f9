//go:build cuda

package kernels

var _ WrapOps = (*CUDA)(nil)

// WrapLight: bit-identical to the CPU (see WrapOps.WrapLight).
func (d *CUDA) WrapLight(dst, held, wide, band Image, eps float32) error {
	const op = "WrapLight"
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	hb, err := d.img(op, "held", held)
	if err != nil {
		return err
	}
	aw, err := d.img(op, "wide", wide)
	if err != nil {
		return err
	}
	ab, err := d.img(op, "band", band)
	if err != nil {
		return err
	}
	for _, x := range []struct {
		n string
		m *cudaImage
		c int
	}{{"dst", o, 3}, {"held", hb, 3}, {"wide", aw, 1}, {"band", ab, 1}} {
		if err := d.chans(op, x.n, x.m, x.c); err != nil {
			return err
		}
	}
	if err := d.same(op, o, []string{"held", "wide", "band"}, hb, aw, ab); err != nil {
		return err
	}
	if !wrapLightArgs(eps) {
		return d.shapeErr(op, "eps %g: want finite > 0", eps)
	}
	n := o.n()
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_wrap_light", n, new(kargs).p(o.ptr).p(hb.ptr).p(aw.ptr).p(ab.ptr).l(n).f(eps))
	}))
}
