// Package rows holds the inner loops of the CPU backend: pure functions
// over float32 rows (and byte rows of host frames), each with its AVX2
// version (simd/archsimd under GOEXPERIMENT=simd; the same output bit for
// bit as the scalar loop, which runs on other builds and on CPUs without
// AVX2), and the tables they compute from: the conversion LUTs, the
// resampling taps, the Gaussian kernel, the lαβ and hue matrices. The CUDA
// backend (package kernels) uploads the same tables, so that both
// backends compute from identical constants.
//
// The vector loops that read several rows check each row's length once
// and then read it through its base address at one byte offset (base, at
// and put in simd_amd64.go), not through a slice expression per load:
// per-load bounds checks and slice reloads were most of their
// instructions.
//
// Package kernels/cpuref runs these loops over images in row bands; a loop
// here knows no images, devices or shapes.
package rows
