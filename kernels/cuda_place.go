//go:build cuda

package kernels

import (
	"fmt"

	"github.com/vfxrender/vfx/kernels/cpuref"
	"github.com/vfxrender/vfx/kernels/rows"
)

var _ PlaceOps = (*CUDA)(nil)

// Place: the CPU's tap tables (cpuref.PlaceTaps) run by the separable
// passes of ResizeArea (vfx_taps_v, vfx_taps_h), so bit-identical to the
// CPU (see PlaceOps.Place).
func (d *CUDA) Place(dst, src Image, p Placement, zeroOutside bool) error {
	const op = "Place"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c || o == s {
		return d.shapeErr(op, "src %s, dst %s: want the same channels, distinct images", cdims(s), cdims(o))
	}
	if !cpuref.PlaceArgs(p.Scale, p.X, p.Y) {
		return d.shapeErr(op, "placement %g, %g, %g: want a finite scale > 0 and finite offsets", p.Scale, p.X, p.Y)
	}
	key := fmt.Sprintf("place:%d:%d:%x:%x:%x:%t", o.w, o.h, p.Scale, p.X, p.Y, zeroOutside)
	var tx, ty rows.Taps
	build := func() { tx, ty = cpuref.PlaceTaps(o.w, o.h, p.Scale, p.X, p.Y, zeroOutside) }
	return d.wrap(op, d.do(func() error {
		return d.separable(o, s, key, func() rows.Taps { build(); return tx }, func() rows.Taps {
			if ty.Off == nil {
				build()
			}
			return ty
		})
	}))
}
