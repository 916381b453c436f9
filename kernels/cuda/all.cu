// The one translation unit that `make kernels` compiles into
// kernels/cuda/vfx.fatbin: every kernel file of this folder.
#include "convert.cu"
#include "pixel.cu"
#include "resample.cu"
#include "filter.cu"
#include "stats.cu"
#include "distance.cu"
#include "composite.cu"
#include "scale.cu"
#include "matte.cu"
#include "grain.cu"
#include "clamp.cu"
#include "wrap.cu"
