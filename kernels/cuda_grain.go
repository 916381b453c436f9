//go:build cuda

package kernels

var _ GrainOps = (*CUDA)(nil)

// AddGrain: bit-identical to the CPU (see GrainOps.AddGrain).
func (d *CUDA) AddGrain(dst, src, alpha Image, seed uint32, amount float32) error {
	const op = "AddGrain"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	a, err := d.opt(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"alpha"}, a); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_add_grain", o.n(), new(kargs).p(o.ptr).p(s.ptr).p(ptrOf(a)).
			l(o.n()).i(o.w).i(o.c).u32(seed).f(amount))
	}))
}
