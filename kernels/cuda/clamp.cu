// Matched focus: Clamp (kernels/clamp.go). The CPU's comparisons, bit for
// bit: NaN gives lo.
#include "common.cuh"

extern "C" __global__ void vfx_clamp(float *dst, const float *src, int64_t n, float lo, float hi) {
    GRID_STRIDE(i, n) {
        float v = src[i];
        if (!(v >= lo)) v = lo;
        else if (v > hi) v = hi;
        dst[i] = v;
    }
}
