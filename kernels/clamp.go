package kernels

import "github.com/vfxrender/vfx/kernels/cpuref"

// ClampOps is the clamp op of matched focus (issue 31: the defocused and
// regrained plate is kept in range). It is a separate interface from Ops
// so that adding it touches no existing op; both backends implement it.
type ClampOps interface {
	// Clamp writes dst = min(max(src, lo), hi) per pixel and channel
	// (NaN gives lo); dst may be src. lo <= hi, both finite. The result
	// is bit-identical on every backend.
	Clamp(dst, src Image, lo, hi float32) error
}

var _ ClampOps = (*CPU)(nil)

// clampArgs checks Clamp's bounds.
func clampArgs(lo, hi float32) bool { return cpuref.ClampArgs(lo, hi) }

// Clamp: see ClampOps.Clamp.
func (d *CPU) Clamp(dst, src Image, lo, hi float32) error { return d.ref.Clamp(dst, src, lo, hi) }
