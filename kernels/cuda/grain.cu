// Plate matching: the subject's grain (kernels/grain.go, cpu_grain.go
// AddGrain). Integer hash and float steps as the CPU's, bit for bit
// (nvcc --fmad=false; sqrtf is correctly rounded).
#include "common.cuh"

__device__ __forceinline__ unsigned grain_lowbias32(unsigned h) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

// dst = max(sqrt(max(src,0)) + a*amount*n, 0)^2 where a > 0; n from the
// hash of (x, y, seed), shared by the channels.
extern "C" __global__ void vfx_add_grain(float *dst, const float *src, const float *alpha, int64_t n, int w, int c,
                                         unsigned seed, float amount) {
    const float norm = __int_as_float(0x3bddb446);
    unsigned sk = grain_lowbias32(seed ^ 0x67726169u);
    GRID_STRIDE(i, n) {
        float a = alpha ? alpha[i] : 1.0f;
        if (!(a > 0)) continue;
        int y = (int)(i / w), x = (int)(i - (int64_t)y * w);
        unsigned key = grain_lowbias32((unsigned)y ^ sk);
        unsigned h = grain_lowbias32((unsigned)x ^ key);
        int s = (int)(h & 0xff) + (int)((h >> 8) & 0xff) + (int)((h >> 16) & 0xff) + (int)(h >> 24);
        float g = (float)(s - 510) * norm;
        float t = (a * amount) * g;
        for (int k = 0; k < c; k++) {
            float sv = src[k * n + i];
            float sq = sv > 0 ? sqrtf(sv) : 0.0f;
            float v = sq + t;
            if (!(v > 0)) v = 0;
            dst[k * n + i] = v * v;
        }
    }
}
