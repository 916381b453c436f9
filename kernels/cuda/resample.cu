// Resampling (kernels/cpu_resample.go, ResizeBilinear of cpu_pixel.go).
#include "common.cuh"

// Bilinear resize of c planes: tx (dw outputs) and ty (dh outputs) are
// packed bilinear tables.
extern "C" __global__ void vfx_resize_bilinear(float *dst, const float *src, int sw, int sh, int dw, int dh, int c,
                                               const void *tx, const void *ty) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh) return;
    Bilin bx = bilin(tx, dw), by = bilin(ty, dh);
    for (int k = 0; k < c; k++)
        dst[(int64_t)k * dw * dh + (int64_t)y * dw + x] = bilin_sample(src + (int64_t)k * sw * sh, sw, bx, by, x, y);
}

// Tap tables of n outputs packed as [start (n) | off (n+1) | w].
// Vertical pass: tmp (sw x dh per channel) row y = sum_k w[k] * src row
// start[y]+k, summed in k order (vtaps).
extern "C" __global__ void vfx_taps_v(float *tmp, const float *src, int sw, int sh, int dh, int c, const int32_t *ty) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= sw || y >= dh) return;
    const int32_t *start = ty, *off = ty + dh;
    const float *w = (const float *)(ty + 2 * dh + 1);
    int st = start[y], o0 = off[y], o1 = off[y + 1];
    for (int k = 0; k < c; k++) {
        const float *p = src + (int64_t)k * sw * sh + x;
        float acc = w[o0] * p[(int64_t)st * sw];
        for (int j = o0 + 1; j < o1; j++) acc = acc + w[j] * p[(int64_t)(st + j - o0) * sw];
        tmp[(int64_t)k * sw * dh + (int64_t)y * sw + x] = acc;
    }
}

// Horizontal pass: dst[y][x] = two interleaved sums over x's taps of tmp
// row y (htaps).
extern "C" __global__ void vfx_taps_h(float *dst, const float *tmp, int sw, int dw, int dh, int c, const int32_t *tx) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh) return;
    const int32_t *start = tx, *off = tx + dw;
    const float *w = (const float *)(tx + 2 * dw + 1);
    int st = start[x], o0 = off[x], nt = off[x + 1] - o0;
    for (int k = 0; k < c; k++) {
        const float *t = tmp + (int64_t)k * sw * dh + (int64_t)y * sw + st;
        float a0 = 0, a1 = 0;
        int j = 0;
        for (; j + 1 < nt; j += 2) {
            a0 += w[o0 + j] * t[j];
            a1 += w[o0 + j + 1] * t[j + 1];
        }
        if (j < nt) a0 += w[o0 + j] * t[j];
        dst[(int64_t)k * dw * dh + (int64_t)y * dw + x] = a0 + a1;
    }
}
