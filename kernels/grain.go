package kernels

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

// grainNorm is 1/sqrt(4*(256*256-1)/12): the standard deviation of a sum
// of four uniform bytes is 1/grainNorm.
const grainNorm = float32(0.006765875) // bits 0x3bddb446

// lowbias32 is Chris Wellons' 32-bit integer hash.
func lowbias32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	h *= 0x846ca68b
	h ^= h >> 16
	return h
}

// grainRowKey is the per-row part of GrainNoise's hash.
func grainRowKey(y int, seed uint32) uint32 {
	return lowbias32(uint32(y) ^ lowbias32(seed^0x67726169)) // "grai"
}

// GrainNoise is the zero-mean, unit-variance noise of AddGrain at pixel
// (x, y) for seed: the sum of the four bytes of an integer hash of
// (x, y, seed), centred and scaled (close to Gaussian; within ±3.45).
func GrainNoise(x, y int, seed uint32) float32 {
	return grainFromKey(x, grainRowKey(y, seed))
}

func grainFromKey(x int, key uint32) float32 {
	h := lowbias32(uint32(x) ^ key)
	s := int32(h&0xff) + int32(h>>8&0xff) + int32(h>>16&0xff) + int32(h>>24)
	return float32(s-510) * grainNorm
}
