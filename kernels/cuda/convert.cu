// Upload and Download conversions (kernels/cpu_convert.go). 8-bit planes
// arrive packed (stride = width) and are converted here with the same
// tables as the CPU backend, so results are bit-identical.
#include "common.cuh"

// YUV420P codes -> linear RGB. Chroma is nearest-upsampled: pixel (x, y)
// takes sample (x/2, y/2). tab selects [cs][full] (cs*2+full).
extern "C" __global__ void vfx_upload_yuv(float *dst, const uint8_t *Y, const uint8_t *U, const uint8_t *V,
                                          int w, int h, const float *lut, int tab) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int cw = (w + 1) / 2;
    const int32_t *t = (const int32_t *)(lut + LUT_YUVIN) + tab * 5 * 256;
    const float *ext = lut + LUT_EOTFEXT;
    int u = U[(int64_t)(y >> 1) * cw + (x >> 1)];
    int v = V[(int64_t)(y >> 1) * cw + (x >> 1)];
    int yy = t[Y[(int64_t)y * w + x]];
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    dst[i] = ext[((yy + t[256 + v]) >> 6) & 0xFFFF];
    dst[n + i] = ext[((yy + (t[512 + u] + t[768 + v])) >> 6) & 0xFFFF];
    dst[2 * n + i] = ext[((yy + t[1024 + u]) >> 6) & 0xFFFF];
}

// RGB24 (packed, 3 bytes per pixel) -> linear RGB.
extern "C" __global__ void vfx_upload_rgb(float *dst, const uint8_t *s, int64_t n, const float *lut) {
    const float *e = lut + LUT_EOTF8;
    GRID_STRIDE(i, n) {
        dst[i] = e[s[3 * i]];
        dst[n + i] = e[s[3 * i + 1]];
        dst[2 * n + i] = e[s[3 * i + 2]];
    }
}

// Gray8 -> [0,1], no curve.
extern "C" __global__ void vfx_upload_gray(float *dst, const uint8_t *s, int64_t n, const float *lut) {
    const float *g = lut + LUT_GRAY8;
    GRID_STRIDE(i, n) { dst[i] = g[s[i]]; }
}

// Linear RGB -> RGB24 codes (exact rounding of the sRGB OETF).
extern "C" __global__ void vfx_download_rgb(uint8_t *o, const float *src, int64_t n, const float *lut) {
    GRID_STRIDE(i, n) {
        o[3 * i] = code8(lut, src[i]);
        o[3 * i + 1] = code8(lut, src[n + i]);
        o[3 * i + 2] = code8(lut, src[2 * n + i]);
    }
}

// 1 channel -> Gray8.
extern "C" __global__ void vfx_download_gray(uint8_t *o, const float *src, int64_t n) {
    GRID_STRIDE(i, n) { o[i] = gray8(src[i]); }
}

// Linear RGB -> YUV420P, one thread per 2x2 block.
extern "C" __global__ void vfx_download_yuv(uint8_t *Y, uint8_t *U, uint8_t *V, const float *src, int w, int h,
                                            const float *lut, YuvOut k) {
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
        p[0][0][c] = oetf(lut, P[(int64_t)y * w + x]);
        p[0][1][c] = oetf(lut, P[(int64_t)y * w + x1]);
        p[1][0][c] = oetf(lut, P[(int64_t)y2 * w + x]);
        p[1][1][c] = oetf(lut, P[(int64_t)y2 * w + x1]);
    }
    yuv_block(Y, U, V, w, h, cx, cy, k, p);
}
