package cpuref

import (
	"math"

	"github.com/vfxrender/vfx/kernels/rows"
)

// PlaceArgs checks a placement: scale finite and > 0, x and y finite.
func PlaceArgs(scale, x, y float64) bool {
	return scale > 0 && !math.IsInf(scale, 0) && !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0)
}

// PlaceShift is the shift (in output pixels) of one axis of a placement
// of n pixels with offset off (a fraction of n): the input's centre lands
// at the output's centre moved by off*n, the input scaled by scale.
func PlaceShift(n int, scale, off float64) float64 {
	return float64(n)*(0.5+off) - scale*float64(n)*0.5
}

// PlaceTaps returns the column and row tables of a placement of a w x h
// image (see kernels.PlaceOps).
func PlaceTaps(w, h int, scale, x, y float64, zero bool) (tx, ty rows.Taps) {
	return rows.PlaceTaps(w, w, scale, PlaceShift(w, scale, x), zero),
		rows.PlaceTaps(h, h, scale, PlaceShift(h, scale, y), zero)
}

// Place resamples src into dst (same size and channels) scaled by scale
// about the centre and moved by (x*w, y*h); see kernels.PlaceOps.
func (d *CPU) Place(dst, src Image, scale, x, y float64, zero bool) error {
	const op = "Place"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c || o == s {
		return shapeErr(op, "src %s, dst %s: want the same channels, distinct images", dims(s), dims(o))
	}
	if !PlaceArgs(scale, x, y) {
		return shapeErr(op, "placement %g, %g, %g: want a finite scale > 0 and finite offsets", scale, x, y)
	}
	tx, ty := PlaceTaps(o.w, o.h, scale, x, y, zero)
	d.separable(o, s, &tx, &ty)
	return nil
}
