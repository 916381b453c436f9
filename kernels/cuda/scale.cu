// The ScaleOps (kernels/cpu_scale.go): the edge-aware Lanczos-3 upscale
// and the 3x3 unsharp mask, the latter also fused with the 8-bit
// conversion of Download.
#include "common.cuh"

// Edge tables of n outputs packed as [a (n) | b (n) | start (n) |
// off (n+1) | w]: a, b are the clamped nearest inputs floor(c) and
// floor(c)+1 (nearPairs), the rest the Lanczos-3 taps (lanczosTaps).
struct EdgeTab {
    const int32_t *a, *b, *start, *off;
    const float *w;
};
__device__ __forceinline__ EdgeTab edge_tab(const int32_t *t, int n) {
    EdgeTab e;
    e.a = t;
    e.b = t + n;
    e.start = t + 2 * n;
    e.off = t + 3 * n;
    e.w = (const float *)(t + 4 * n + 1);
    return e;
}

// clampRange of cpu_scale.go: l moved toward [min(a,b), max(a,b)] by edge.
// Go's min/max order -0 below +0 and gomin/gomax do not, but the result
// does not depend on the sign of a zero bound (l + edge*(m - l) is +0
// whenever m and l are both zeros).
__device__ __forceinline__ float clamp_range(float l, float a, float b, float edge) {
    float lo = gomin(a, b), hi = gomax(a, b);
    return l + edge * (gomin(gomax(l, lo), hi) - l);
}

// UpscaleEdge pass 1: rows of src (sw x sh per channel) into tmp (dw x sh
// per channel). Two interleaved sums over the taps, exactly htaps, then
// the clamp when edge > 0.
extern "C" __global__ void vfx_upscale_rows(float *tmp, const float *src, int sw, int sh, int dw, int c,
                                            const int32_t *tx, float edge) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= dw || y >= sh) return;
    EdgeTab e = edge_tab(tx, dw);
    int st = e.start[i], o0 = e.off[i], nt = e.off[i + 1] - o0;
    int ia = e.a[i], ib = e.b[i];
    for (int k = 0; k < c; k++) {
        const float *row = src + ((int64_t)k * sh + y) * sw;
        const float *t = row + st;
        float a0 = 0, a1 = 0;
        int j = 0;
        for (; j + 1 < nt; j += 2) {
            a0 += e.w[o0 + j] * t[j];
            a1 += e.w[o0 + j + 1] * t[j + 1];
        }
        if (j < nt) a0 += e.w[o0 + j] * t[j];
        float l = a0 + a1;
        if (edge > 0) l = clamp_range(l, row[ia], row[ib], edge);
        tmp[((int64_t)k * sh + y) * dw + i] = l;
    }
}

// UpscaleEdge pass 2: columns of tmp (dw x sh per channel) into dst (dw x
// dh). One sum in tap order starting from the first product, exactly
// vtaps, then the clamp against tmp rows a[y] and b[y].
extern "C" __global__ void vfx_upscale_cols(float *dst, const float *tmp, int dw, int sh, int dh, int c,
                                            const int32_t *ty, float edge) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh) return;
    EdgeTab e = edge_tab(ty, dh);
    int st = e.start[y], o0 = e.off[y], o1 = e.off[y + 1];
    int ya = e.a[y], yb = e.b[y];
    for (int k = 0; k < c; k++) {
        const float *p = tmp + (int64_t)k * sh * dw + x;
        float acc = e.w[o0] * p[(int64_t)st * dw];
        for (int j = o0 + 1; j < o1; j++) acc = acc + e.w[j] * p[(int64_t)(st + j - o0) * dw];
        if (edge > 0) acc = clamp_range(acc, p[(int64_t)ya * dw], p[(int64_t)yb * dw], edge);
        dst[((int64_t)k * dh + y) * dw + x] = acc;
    }
}

// The [1 2 1]/4 row blur of plane row r at x with clamped borders (hblur).
__device__ __forceinline__ float sharpen_h(const float *r, int x, int w) {
    return (0.25f * r[max(x - 1, 0)] + 0.5f * r[x]) + 0.25f * r[min(x + 1, w - 1)];
}

// Sharpened value of plane p (w x h) at (x, y): sharpenRow of cpu_scale.go.
__device__ __forceinline__ float sharpen_px(const float *p, int w, int h, int x, int y, float amount) {
    const float *mid = p + (int64_t)y * w;
    float up = sharpen_h(p + (int64_t)max(y - 1, 0) * w, x, w);
    float md = sharpen_h(mid, x, w);
    float dn = sharpen_h(p + (int64_t)min(y + 1, h - 1) * w, x, w);
    float b = (0.25f * up + 0.5f * md) + 0.25f * dn;
    float s = mid[x];
    return s + amount * (s - b);
}

// Sharpen of c planes of w x h.
extern "C" __global__ void vfx_sharpen(float *dst, const float *src, int w, int h, int c, float amount) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h;
    for (int k = 0; k < c; k++) dst[k * n + (int64_t)y * w + x] = sharpen_px(src + k * n, w, h, x, y, amount);
}

// Sharpen of 3 planes straight into RGB24 codes.
extern "C" __global__ void vfx_sharpen_rgb(uint8_t *o, const float *src, int w, int h, float amount, const float *lut) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    for (int k = 0; k < 3; k++) o[3 * i + k] = code8(lut, sharpen_px(src + k * n, w, h, x, y, amount));
}

// Sharpen of 3 planes straight into YUV420P, one thread per 2x2 block.
extern "C" __global__ void vfx_sharpen_yuv(uint8_t *Y, uint8_t *U, uint8_t *V, const float *src, int w, int h,
                                           float amount, const float *lut, YuvOut k) {
    int cx = blockIdx.x * blockDim.x + threadIdx.x;
    int cy = blockIdx.y * blockDim.y + threadIdx.y;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    if (cx >= cw || cy >= ch) return;
    int64_t n = (int64_t)w * h;
    int x = 2 * cx, y = 2 * cy, y2 = min(y + 1, h - 1);
    int x1 = min(x + 1, w - 1);
    float p[2][2][3];
    for (int c = 0; c < 3; c++) {
        const float *P = src + c * n;
        p[0][0][c] = oetf(lut, sharpen_px(P, w, h, x, y, amount));
        p[0][1][c] = oetf(lut, sharpen_px(P, w, h, x1, y, amount));
        p[1][0][c] = oetf(lut, sharpen_px(P, w, h, x, y2, amount));
        p[1][1][c] = oetf(lut, sharpen_px(P, w, h, x1, y2, amount));
    }
    yuv_block(Y, U, V, w, h, cx, cy, k, p);
}
