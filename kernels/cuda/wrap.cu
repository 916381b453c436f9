// The masked light wrap: WrapLight (kernels/wrap.go). The CPU's
// arithmetic, bit for bit: a NaN 1 - wide gives eps.
#include "common.cuh"

extern "C" __global__ void vfx_wrap_light(float *dst, const float *held, const float *wide, const float *band,
                                          int64_t n, float eps) {
    GRID_STRIDE(i, n) {
        float d = 1 - wide[i];
        if (!(d > eps)) d = eps;
        float s = (1 - band[i]) / d;
        float h0 = held[i], h1 = held[n + i], h2 = held[2 * n + i];
        dst[i] = h0 * s, dst[n + i] = h1 * s, dst[2 * n + i] = h2 * s;
    }
}
