// The fused finishing pass GainComposite and GainCompositeDownload
// (kernels/cpu_pixel.go): bilinear gain, clamp, composite over bg and
// light wrap per pixel; where alpha == 0 the result is bg exactly, where
// alpha == 1 bg is not read.
#include "common.cuh"

struct GC {
    const float *src, *alpha, *gl, *bg, *bb, *abl;
    const void *gx, *gy, *ax, *ay; // packed bilinear tables (w, h, w, h outputs)
    int w, h, glw, glh, ablw, ablh;
    float wrap, maxV;
    // GainCompositeLook (0 = none; gain-sized): foreground and old
    // background estimates (3 channels) and the shadow's darkness on bg
    // (1 channel: bg * (1 - d)).
    const float *fm, *bm, *sh;
    // CompositeLook's grain (0 = none): a grw x grh tile of noise read at
    // ((x + grx) mod grw, (y + gry) mod grh), grx < grw, gry < grh.
    const float *gr;
    int grw, grh, grx, gry;
    float grain;
    // CompositeLook.PlateX, PlateY (not both 0: bg and bb are read moved,
    // as Shift would move them; ignored without alpha).
    float pdx, pdy;
    // CompositeLook.WrapLow (0 = none; any size, with its bilinear tables
    // wx, wy): the masked wrap's light, wrap*a*a*w in place of
    // wrap*a*(1 - ab)*bb; not moved by pdx, pdy; ignored without alpha.
    const float *wl;
    const void *wx, *wy;
    int wlw, wlh;
    // 1/CompositeLook.EdgeFade (0 = none): where 0 < a < 1 the subject's
    // term f becomes f - (1 - min(1, a*fadeInv))*max(0, f - I).
    float fadeInv;
};

// The three channels v of the w x h plate p sampled at (px, py) as
// vfx_shift samples it (one copy of the code: the composite kernels call
// it from several places).
__device__ __noinline__ void gc_plate_moved(const float *p, int w, int h, float px, float py, float *v) {
    int64_t n = (int64_t)w * h;
    for (int c = 0; c < 3; c++) v[c] = matte_bilinear(p + c * n, w, h, px, py);
}

// The three channels v of the plate p (bg or bb) at pixel (x, y), index
// i: moved by (pdx, pdy) as vfx_shift samples it, or as they are.
__device__ __forceinline__ void gc_plate(const GC &j, const float *p, int x, int y, int64_t i, float *v) {
    if (j.pdx == 0 && j.pdy == 0) {
        int64_t n = (int64_t)j.w * j.h;
        for (int c = 0; c < 3; c++) v[c] = p[c * n + i];
        return;
    }
    gc_plate_moved(p, j.w, j.h, (float)x + 1.0f * j.pdx, (float)y + 1.0f * j.pdy, v);
}

// CompositeLook's grain on the composited pixel q (alpha a > 0), as the
// CPU's grainRow.
__device__ __forceinline__ void gc_grain(const GC &j, int x, int y, float a, float *q) {
    int gx = x % j.grw + j.grx, gy = y % j.grh + j.gry;
    if (gx >= j.grw) gx -= j.grw;
    if (gy >= j.grh) gy -= j.grh;
    float t = (a * j.grain) * j.gr[(int64_t)gy * j.grw + gx];
    float l = (0.2126f * q[0] + 0.7152f * q[1]) + 0.0722f * q[2];
    if (!(l > 1e-8f)) l = 1e-8f;
    // 1/sqrt(l) within 0.2%: the CPU's grainInvSqrt.
    float r = __int_as_float(0x5f3759df - (int)((unsigned)__float_as_int(l) >> 1));
    r = r * (1.5f - ((0.5f * l) * r) * r);
    float v = 1 + t * r;
    if (!(v > 0)) v = 0;
    float f = v * v;
    q[0] *= f, q[1] *= f, q[2] *= f;
    for (int c = 0; c < 3; c++) if (q[c] > j.maxV) q[c] = j.maxV;
}

// The three output channels of pixel (x, y).
__device__ __forceinline__ void gc_pixel(const GC &j, int x, int y, float *q) {
    int64_t n = (int64_t)j.w * j.h, i = (int64_t)y * j.w + x;
    const bool masked = j.alpha != 0 && j.wl != 0;
    bool doWrap = masked || (j.bb != 0 && j.abl != 0);
    float a = 1;
    Bilin gx = bilin(j.gx, j.w), gy = bilin(j.gy, j.h);
    const float *shp = j.alpha ? j.sh : 0;
    const bool est = j.alpha != 0 && j.fm != 0;
    float sh = 0;
    if (j.alpha) {
        a = j.alpha[i];
        if (shp) sh = bilin_sample(shp, j.glw, gx, gy, x, y);
        if (a == 0) {
            gc_plate(j, j.bg, x, y, i, q);
            if (shp) q[0] = q[0] * (1 - sh), q[1] = q[1] * (1 - sh), q[2] = q[2] * (1 - sh);
            return;
        }
    }
    // The plate and its blur where they are read (moved or not).
    float bgv[3] = {0, 0, 0}, bbv[3] = {0, 0, 0};
    if (j.alpha && a != 1) gc_plate(j, j.bg, x, y, i, bgv);
    float wf = 0;
    if (masked) {
        // The masked wrap's light, sampled as the CPU's Hrows then Vlerp.
        Bilin wx = bilin(j.wx, j.w), wy = bilin(j.wy, j.h);
        int64_t wn = (int64_t)j.wlw * j.wlh;
        for (int c = 0; c < 3; c++) bbv[c] = bilin_sample(j.wl + c * wn, j.wlw, wx, wy, x, y);
        wf = j.wrap * a * a;
    } else if (doWrap) {
        if (j.alpha) gc_plate(j, j.bb, x, y, i, bbv);
        Bilin ax = bilin(j.ax, j.w), ay = bilin(j.ay, j.h);
        float ab = bilin_sample(j.abl, j.ablw, ax, ay, x, y);
        wf = j.alpha ? j.wrap * a * (1 - ab) : j.wrap * 1 * (1 - ab);
    }
    int64_t gn = (int64_t)j.glw * j.glh;
    for (int c = 0; c < 3; c++) {
        float iv = j.src[c * n + i], i0 = iv;
        if (est && a != 1) {
            // Foreground estimation: the least-change split of the source
            // around the smooth estimates fm, bm.
            float fm = bilin_sample(j.fm + c * gn, j.glw, gx, gy, x, y);
            float bm = bilin_sample(j.bm + c * gn, j.glw, gx, gy, x, y);
            float den = a * a + (1 - a) * (1 - a);
            float fv = fm + a * (iv - a * fm - (1 - a) * bm) / den;
            if (fv < 0) fv = 0;
            else if (fv > j.maxV) fv = j.maxV;
            iv = fv;
        }
        float g = bilin_sample(j.gl + c * gn, j.glw, gx, gy, x, y);
        float f = iv * g;
        if (f < 0) f = 0;
        else if (f > j.maxV) f = j.maxV;
        float o;
        if (!j.alpha) o = doWrap ? f + wf * j.bb[c * n + i] : f;
        else if (a == 1) o = doWrap ? (f + 0.0f) + wf * bbv[c] : f + 0.0f;
        else {
            if (j.fadeInv != 0) {
                // CompositeLook.EdgeFade (rows.fadeEdge).
                float t = a * j.fadeInv;
                if (t > 1) t = 1;
                float d = f - i0;
                if (d < 0) d = 0;
                f = f - (1 - t) * d;
            }
            float bv = bgv[c];
            if (shp) bv = bv * (1 - sh);
            if (doWrap) o = a * f + (1 - a) * bv + wf * bbv[c];
            else o = a * f + (1 - a) * bv;
        }
        q[c] = o;
    }
    if (j.gr && j.alpha) gc_grain(j, x, y, a, q);
}

extern "C" __global__ void vfx_gain_composite(float *dst, GC j) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= j.w || y >= j.h) return;
    int64_t n = (int64_t)j.w * j.h, i = (int64_t)y * j.w + x;
    float q[3];
    gc_pixel(j, x, y, q);
    dst[i] = q[0], dst[n + i] = q[1], dst[2 * n + i] = q[2];
}

// GainComposite straight into RGB24 codes.
extern "C" __global__ void vfx_gain_composite_rgb(uint8_t *o, GC j, const float *lut) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= j.w || y >= j.h) return;
    int64_t i = (int64_t)y * j.w + x;
    float q[3];
    gc_pixel(j, x, y, q);
    o[3 * i] = code8(lut, q[0]);
    o[3 * i + 1] = code8(lut, q[1]);
    o[3 * i + 2] = code8(lut, q[2]);
}

// GainComposite straight into YUV420P, one thread per 2x2 block.
extern "C" __global__ void vfx_gain_composite_yuv(uint8_t *Y, uint8_t *U, uint8_t *V, GC j, const float *lut, YuvOut k) {
    int cx = blockIdx.x * blockDim.x + threadIdx.x;
    int cy = blockIdx.y * blockDim.y + threadIdx.y;
    int w = j.w, h = j.h;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    if (cx >= cw || cy >= ch) return;
    int x = 2 * cx, y = 2 * cy, y2 = min(y + 1, h - 1);
    int x1 = min(x + 1, w - 1);
    float q[3], p[2][2][3];
    gc_pixel(j, x, y, q);
    for (int c = 0; c < 3; c++) p[0][0][c] = oetf(lut, q[c]);
    gc_pixel(j, x1, y, q);
    for (int c = 0; c < 3; c++) p[0][1][c] = oetf(lut, q[c]);
    gc_pixel(j, x, y2, q);
    for (int c = 0; c < 3; c++) p[1][0][c] = oetf(lut, q[c]);
    gc_pixel(j, x1, y2, q);
    for (int c = 0; c < 3; c++) p[1][1][c] = oetf(lut, q[c]);
    yuv_block(Y, U, V, w, h, cx, cy, k, p);
}
