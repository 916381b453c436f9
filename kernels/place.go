package kernels

// Placement is where a subject goes over the plate (issue 31, item 5):
// the source is scaled by Scale about the frame's centre, then moved by
// X times the frame's width (positive: right) and Y times its height
// (positive: down). The zero value is not a placement; the identity is
// {1, 0, 0}.
type Placement struct {
	Scale, X, Y float64
}

// Identity reports whether p leaves every pixel where it is.
func (p Placement) Identity() bool { return p.Scale == 1 && p.X == 0 && p.Y == 0 }

// PlaceOps is the placement op. It is a separate interface from Ops so
// that adding it touches no existing op; both backends implement it.
type PlaceOps interface {
	// Place writes into dst (the size and channels of src, a distinct
	// image) src scaled by p.Scale about the centre and moved by
	// (p.X*w, p.Y*h). Output pixel (u, v) reads src at the continuous
	// position ((u + 0.5 - sx)/Scale, (v + 0.5 - sy)/Scale) with
	// sx = w(0.5 + X) - Scale*w/2 (and sy alike): an area (box coverage)
	// filter when Scale < 1, bilinear when Scale >= 1, separable, the
	// same weights for every channel. Outside src, zeroOutside reads 0
	// (a matte: the uncovered area is background) and otherwise the
	// nearest edge pixel (colour). Scale must be finite and > 0, X and Y
	// finite (else ErrShape). The identity is an exact copy. The result
	// is bit-identical on every backend (the same tap tables and the
	// separable passes of ResizeArea).
	Place(dst, src Image, p Placement, zeroOutside bool) error
}

var _ PlaceOps = (*CPU)(nil)

// Place: see PlaceOps.Place.
func (d *CPU) Place(dst, src Image, p Placement, zeroOutside bool) error {
	return d.ref.Place(dst, src, p.Scale, p.X, p.Y, zeroOutside)
}
