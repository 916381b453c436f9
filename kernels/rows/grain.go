package rows

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

// GrainRowKey is the per-row part of GrainNoise's hash.
func GrainRowKey(y int, seed uint32) uint32 {
	return lowbias32(uint32(y) ^ lowbias32(seed^0x67726169)) // "grai"
}

// GrainNoise is the zero-mean, unit-variance noise of AddGrain at pixel
// (x, y) for seed (see kernels.GrainNoise).
func GrainNoise(x, y int, seed uint32) float32 {
	return GrainFromKey(x, GrainRowKey(y, seed))
}

// GrainFromKey is GrainNoise at column x of the row whose key is
// GrainRowKey(y, seed).
func GrainFromKey(x int, key uint32) float32 {
	h := lowbias32(uint32(x) ^ key)
	s := int32(h&0xff) + int32(h>>8&0xff) + int32(h>>16&0xff) + int32(h>>24)
	return float32(s-510) * grainNorm
}
