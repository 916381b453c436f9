// Shared helpers of the vfx CUDA kernels. Every kernel mirrors one op of
// the CPU reference backend (kernels/cpu_*.go) with the same arithmetic in
// the same order; the fatbin is compiled with --fmad=false so that float
// expressions round like the Go code (Go on amd64 never fuses a*b+c).
//
// Images are planar float32, channel-major: channel c of a w x h image
// starts at c*w*h.
#pragma once
#include <stdint.h>

#define VFX_BLOCK 256

// Go's min/max on floats: NaN if either argument is NaN.
__device__ __forceinline__ float gomin(float a, float b) {
    if (a != a || b != b) return a + b;
    return a < b ? a : b;
}
__device__ __forceinline__ float gomax(float a, float b) {
    if (a != a || b != b) return a + b;
    return a > b ? a : b;
}
__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// A bilinear table of n outputs packed as [i0 | i1 | w0 | w1] (kernels.bilinTable).
struct Bilin {
    const int32_t *i0, *i1;
    const float *w0, *w1;
};
__device__ __forceinline__ Bilin bilin(const void *t, int n) {
    Bilin b;
    b.i0 = (const int32_t *)t;
    b.i1 = b.i0 + n;
    b.w0 = (const float *)(b.i1 + n);
    b.w1 = b.w0 + n;
    return b;
}

// Horizontal-then-vertical bilinear sample of plane p (width pw) at output
// (x, y): exactly hlerp then vlerp of kernels/cpu_pixel.go.
__device__ __forceinline__ float bilin_sample(const float *p, int pw, const Bilin &bx, const Bilin &by, int x, int y) {
    const float *r0 = p + (int64_t)by.i0[y] * pw;
    const float *r1 = p + (int64_t)by.i1[y] * pw;
    int i0 = bx.i0[x], i1 = bx.i1[x];
    float wx0 = bx.w0[x], wx1 = bx.w1[x];
    float h0 = wx0 * r0[i0] + wx1 * r0[i1];
    float h1 = wx0 * r1[i0] + wx1 * r1[i1];
    return by.w0[y] * h0 + by.w1[y] * h1;
}

// ---- sRGB conversion tables (kernels.newLUTs), uploaded once per device ----
// Offsets, in 4-byte words, inside the device LUT buffer.
#define LUT_EOTFEXT 0                         // 65536 float: EOTF over fixed-point R'
#define LUT_YUVIN (LUT_EOTFEXT + 65536)       // [cs][full][term y,rv,gu,gv,bu][256] int32
#define LUT_EOTF8 (LUT_YUVIN + 2 * 2 * 5 * 256) // 256 float
#define LUT_GRAY8 (LUT_EOTF8 + 256)           // 256 float
#define LUT_OETFB (LUT_GRAY8 + 256)           // 131072 float: OETF per float-bit bucket
#define LUT_CODETHR (LUT_OETFB + 131072)      // 256 float
#define LUT_CODEB (LUT_CODETHR + 256)         // 131072 uint8 (32768 words)
#define LUT_WORDS (LUT_CODEB + 32768)

#define OB_SHIFT 13
#define OB_HI 0x3F800000

// obIdx of kernels/cpu_convert.go: the float bits clamped to [0, 1.0].
__device__ __forceinline__ int ob_idx(float v) {
    int b = __float_as_int(v);
    if (b < 0) b = 0;
    if (b > OB_HI) b = OB_HI;
    return b >> OB_SHIFT;
}
__device__ __forceinline__ float oetf(const float *lut, float v) {
    return lut[LUT_OETFB + ob_idx(v)];
}
// code8: exactly rounded sRGB code of linear v (NaN gives 0).
__device__ __forceinline__ uint8_t code8(const float *lut, float v) {
    if (v != v) return 0;
    const uint8_t *cb = (const uint8_t *)(lut + LUT_CODEB);
    int c = cb[ob_idx(v)];
    if (v >= lut[LUT_CODETHR + c] && c < 255) c++;
    return (uint8_t)c;
}
// gray8: round(clamp(v, 0, 1) * 255), NaN gives 0.
__device__ __forceinline__ uint8_t gray8(float v) {
    if (v != v) return 0;
    int b = __float_as_int(v);
    if (b < 0) b = 0;
    if (b > OB_HI) b = OB_HI;
    float u = __int_as_float(b) * 255.0f + 0.5f;
    return (uint8_t)(int)u;
}

// RGB -> Y'CbCr coefficients (kernels.yuvOut), rounding offsets folded in.
struct YuvOut {
    float y0, yr, yg, yb, c0, ur, ug, ub, vr, vg, vb;
};
__device__ __forceinline__ uint8_t ycode(const YuvOut &k, float r, float g, float b) {
    return (uint8_t)(int)(k.y0 + k.yr * r + k.yg * g + k.yb * b);
}
__device__ __forceinline__ void ccodes(const YuvOut &k, float r, float g, float b, uint8_t *u, uint8_t *v) {
    int uu = (int)(k.c0 + k.ur * r + k.ug * g + k.ub * b);
    int vv = (int)(k.c0 + k.vr * r + k.vg * g + k.vb * b);
    *u = (uint8_t)(uu < 255 ? uu : 255);
    *v = (uint8_t)(vv < 255 ? vv : 255);
}

// Block-wide sum of NV doubles per thread into out[blockIdx.x*NV + k]:
// warp shuffles, then one warp over the per-warp partials. The grid size
// is fixed by the caller, so the order (and result) is deterministic.
template <int NV>
__device__ __forceinline__ void block_sum_store(double *acc, double *out) {
    __shared__ double sh[VFX_BLOCK / 32][NV];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        double v = acc[k];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) sh[warp][k] = v;
    }
    __syncthreads();
    if (warp == 0) {
        for (int k = 0; k < NV; k++) {
            double v = lane < VFX_BLOCK / 32 ? sh[lane][k] : 0.0;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
            if (lane == 0) out[(int64_t)blockIdx.x * NV + k] = v;
        }
    }
}

#define GRID_STRIDE(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// Writes the Y'CbCr codes of the 2x2 block (cx, cy) from the R'G'B'
// values of its pixels: p[row][col][channel], rows a and b (b == a at an
// odd bottom edge), col 1 absent at an odd right edge.
__device__ __forceinline__ void yuv_block(uint8_t *Y, uint8_t *U, uint8_t *V, int w, int h, int cx, int cy,
                                          const YuvOut &k, float p[2][2][3]) {
    int cw = (w + 1) / 2;
    int x = 2 * cx, y = 2 * cy, y2 = min(y + 1, h - 1);
    bool two = x + 1 < w;
    Y[(int64_t)y * w + x] = ycode(k, p[0][0][0], p[0][0][1], p[0][0][2]);
    Y[(int64_t)y2 * w + x] = ycode(k, p[1][0][0], p[1][0][1], p[1][0][2]);
    float r, g, b;
    if (two) {
        Y[(int64_t)y * w + x + 1] = ycode(k, p[0][1][0], p[0][1][1], p[0][1][2]);
        Y[(int64_t)y2 * w + x + 1] = ycode(k, p[1][1][0], p[1][1][1], p[1][1][2]);
        r = (p[0][0][0] + p[0][1][0] + p[1][0][0] + p[1][1][0]) * 0.25f;
        g = (p[0][0][1] + p[0][1][1] + p[1][0][1] + p[1][1][1]) * 0.25f;
        b = (p[0][0][2] + p[0][1][2] + p[1][0][2] + p[1][1][2]) * 0.25f;
    } else {
        r = (p[0][0][0] + p[1][0][0]) * 0.5f;
        g = (p[0][0][1] + p[1][0][1]) * 0.5f;
        b = (p[0][0][2] + p[1][0][2]) * 0.5f;
    }
    ccodes(k, r, g, b, &U[(int64_t)cy * cw + cx], &V[(int64_t)cy * cw + cx]);
}

// Go's min and max on float32 exactly: NaN if either
// argument is NaN, and -0 orders below +0 (max(-0, +0) = +0,
// min(-0, +0) = -0), which gomin/gomax above do not do.
__device__ __forceinline__ float go_maxf(float a, float b) {
    if (a != a || b != b) return a + b;
    if (a == 0 && b == 0) return __int_as_float(__float_as_int(a) & __float_as_int(b));
    return a > b ? a : b;
}
__device__ __forceinline__ float go_minf(float a, float b) {
    if (a != a || b != b) return a + b;
    if (a == 0 && b == 0) return __int_as_float(__float_as_int(a) | __float_as_int(b));
    return a < b ? a : b;
}

// bilinear of rows.Bilinear (Warp, Shift): plane p (w x h) sampled at (px, py), the
// position clamped to the image, float32 weights.
__device__ __forceinline__ float matte_bilinear(const float *p, int w, int h, float px, float py) {
    px = go_minf(go_maxf(px, 0), (float)(w - 1));
    py = go_minf(go_maxf(py, 0), (float)(h - 1));
    int x0 = (int)px, y0 = (int)py;
    float fx = px - (float)x0, fy = py - (float)y0;
    int x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1);
    float a = p[(int64_t)y0 * w + x0], b = p[(int64_t)y0 * w + x1];
    float c = p[(int64_t)y1 * w + x0], e = p[(int64_t)y1 * w + x1];
    return (1 - fy) * ((1 - fx) * a + fx * b) + fy * ((1 - fx) * c + fx * e);
}
