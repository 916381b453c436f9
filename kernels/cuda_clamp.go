//go:build cuda

package kernels

var _ ClampOps = (*CUDA)(nil)

// Clamp: bit-identical to the CPU (see ClampOps.Clamp).
func (d *CUDA) Clamp(dst, src Image, lo, hi float32) error {
	const op = "Clamp"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if !clampArgs(lo, hi) {
		return d.shapeErr(op, "bounds %g, %g: want finite lo <= hi", lo, hi)
	}
	n := o.n() * o.c
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_clamp", n, new(kargs).p(o.ptr).p(s.ptr).l(n).f(lo).f(hi))
	}))
}
