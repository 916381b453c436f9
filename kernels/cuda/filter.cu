// Filters (kernels/cpu_filter.go).
#include "common.cuh"

// Separable Gaussian, one pass over c planes of w x h: horizontal
// (vert == 0) or vertical. k is the half kernel k[0..r]; every output is
// k0*s[x] + sum_i k[i]*(s[x-i] + s[x+i]) in that order, clamped.
extern "C" __global__ void vfx_gauss(float *dst, const float *src, int w, int h, int c, const float *k, int r, int vert) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    for (int ch = 0; ch < c; ch++) {
        const float *p = src + (int64_t)ch * w * h;
        float acc;
        if (!vert) {
            const float *row = p + (int64_t)y * w;
            acc = k[0] * row[x];
            for (int i = 1; i <= r; i++) acc += k[i] * (row[max(x - i, 0)] + row[min(x + i, w - 1)]);
        } else {
            const float *col = p + x;
            acc = k[0] * col[(int64_t)y * w];
            for (int i = 1; i <= r; i++) acc += k[i] * (col[(int64_t)max(y - i, 0) * w] + col[(int64_t)min(y + i, h - 1) * w]);
        }
        dst[(int64_t)ch * w * h + (int64_t)y * w + x] = acc;
    }
}

// Box filter, step 1: exclusive float64 prefix sums of each row of one
// plane, stored column-major (pre[x*h + y], x in 0..w) so that the
// threads of a warp (consecutive rows) write consecutive addresses.
extern "C" __global__ void vfx_box_prefix(double *pre, const float *src, int w, int h) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= h) return;
    const float *s = src + (int64_t)y * w;
    double acc = 0;
    for (int x = 0; x < w; x++) {
        pre[(int64_t)x * h + y] = acc;
        acc += (double)s[x];
    }
    pre[(int64_t)w * h + y] = acc;
}

// Box filter, step 2: clipped horizontal window sums.
extern "C" __global__ void vfx_box_diff(float *tmp, const double *pre, int w, int h, int r) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    tmp[(int64_t)y * w + x] = (float)(pre[(int64_t)min(x + r + 1, w) * h + y] - pre[(int64_t)max(x - r, 0) * h + y]);
}

// Box filter, step 3: vertical running float64 sums per column, restarted
// at every band of `band` rows exactly like the CPU (so bit-identical),
// times the clipped window's reciprocal counts.
extern "C" __global__ void vfx_box_vert(float *dst, const float *tmp, int w, int h, int r, int band) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    int y0 = b * band;
    if (x >= w || y0 >= h) return;
    int y1 = min(y0 + band, h);
    double icx = 1 / (double)(min(x + r, w - 1) - max(x - r, 0) + 1);
    double acc = 0;
    for (int yy = max(y0 - r, 0); yy <= min(y0 + r, h - 1); yy++) acc += (double)tmp[(int64_t)yy * w + x];
    for (int y = y0; y < y1; y++) {
        double icy = 1 / (double)(min(y + r, h - 1) - max(y - r, 0) + 1);
        dst[(int64_t)y * w + x] = (float)(acc * icx * icy);
        if (y + 1 < y1) {
            bool add = y + r + 1 < h, sub = y - r >= 0;
            if (add && sub)
                acc += (double)tmp[(int64_t)(y + r + 1) * w + x] - (double)tmp[(int64_t)(y - r) * w + x];
            else if (add)
                acc += (double)tmp[(int64_t)(y + r + 1) * w + x];
            else if (sub)
                acc -= (double)tmp[(int64_t)(y - r) * w + x];
        }
    }
}
