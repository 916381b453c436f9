package kernels

import "github.com/vfxrender/vfx/kernels/rows"

// GrainOps is the plate-matching grain op (issue 15). It is a separate
// interface from Ops so that adding it touches no existing op; both
// backends implement it.
type GrainOps interface {
	// AddGrain adds luminance grain to the subject: per pixel and
	// channel, where a > 0 (alpha 1 channel, nil = 1),
	//   dst = max(sqrt(max(src, 0)) + a*amount*n, 0)^2
	// with n = GrainNoise(x, y, seed), the same for every channel: grain of
	// standard deviation amount in the square root of linear light (about
	// constant in code values, as a camera's or film's grain is). Where
	// a <= 0 dst is not written (the composite does not read the subject
	// there). dst may be src. The result is bit-identical on every
	// backend.
	AddGrain(dst, src, alpha Image, seed uint32, amount float32) error
}

var _ GrainOps = (*CPU)(nil)

// GrainNoise is the zero-mean, unit-variance noise of AddGrain at pixel
// (x, y) for seed: the sum of the four bytes of an integer hash of
// (x, y, seed), centred and scaled (close to Gaussian; within ±3.45).
func GrainNoise(x, y int, seed uint32) float32 { return rows.GrainNoise(x, y, seed) }
