// The MatteOps (kernels/cpu_matte.go): gradients, flow warping and the
// Lucas-Kanade steps, forward-backward confidence, the colour histogram,
// the evidence fusion of mattes and the chroma keyer.
#include "common.cuh"

// Go's min and max on float64 exactly (go_maxf, go_minf of common.cuh on
// float32).
__device__ __forceinline__ double go_max(double a, double b) {
    if (a != a || b != b) return a + b;
    if (a == 0 && b == 0) return __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b));
    return a > b ? a : b;
}
__device__ __forceinline__ double go_min(double a, double b) {
    if (a != a || b != b) return a + b;
    if (a == 0 && b == 0) return __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b));
    return a < b ? a : b;
}

// Gradient: central differences of the 1-channel src (w x h) into the
// 2-channel dst, neighbours clamped.
extern "C" __global__ void vfx_gradient(float *dst, const float *src, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    const float *row = src + (int64_t)y * w;
    float l = row[max(x - 1, 0)], r = row[min(x + 1, w - 1)];
    dst[i] = (r - l) * 0.5f;
    dst[n + i] = (src[(int64_t)min(y + 1, h - 1) * w + x] - src[(int64_t)max(y - 1, 0) * w + x]) * 0.5f;
}

// Warp: c planes of src sampled at (x + scale*u, y + scale*v).
extern "C" __global__ void vfx_warp(float *dst, const float *src, const float *flow, int w, int h, int c, float scale) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    float px = (float)x + scale * flow[i], py = (float)y + scale * flow[n + i];
    for (int k = 0; k < c; k++) dst[k * n + i] = matte_bilinear(src + k * n, w, h, px, py);
}

// Shift: c planes of src sampled at (x + dx, y + dy) (Warp with a constant flow).
extern "C" __global__ void vfx_shift(float *dst, const float *src, int w, int h, int c, float dx, float dy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    float px = (float)x + 1.0f * dx, py = (float)y + 1.0f * dy;
    for (int k = 0; k < c; k++) dst[k * n + i] = matte_bilinear(src + k * n, w, h, px, py);
}

// FlowTensor: (gx*gx, gx*gy, gy*gy).
extern "C" __global__ void vfx_flow_tensor(float *dst, const float *grad, int64_t n) {
    GRID_STRIDE(i, n) {
        float gx = grad[i], gy = grad[n + i];
        dst[i] = gx * gx;
        dst[n + i] = gx * gy;
        dst[2 * n + i] = gy * gy;
    }
}

// FlowMismatch: (gx*e, gy*e), e = warped - ref. dst may be grad.
extern "C" __global__ void vfx_flow_mismatch(float *dst, const float *grad, const float *ref, const float *warped, int64_t n) {
    GRID_STRIDE(i, n) {
        float gx = grad[i], gy = grad[n + i];
        float e = warped[i] - ref[i];
        dst[i] = gx * e;
        dst[n + i] = gy * e;
    }
}

// FlowSolve: one regularised 2x2 step per pixel in float64, flow in place.
extern "C" __global__ void vfx_flow_solve(float *flow, const float *tensor, const float *mis, int64_t n, float lambda,
                                          float maxStep, float scale) {
    double lam = lambda, ms = maxStep, sc = scale;
    GRID_STRIDE(i, n) {
        double a = (double)tensor[i] + lam, b = tensor[n + i], c = (double)tensor[2 * n + i] + lam;
        double det = a * c - b * b;
        if (det <= 1e-12) continue;
        double p = mis[i], q = mis[n + i];
        double inv = 1 / det;
        double du = -(c * p - b * q) * inv;
        double dv = -(a * q - b * p) * inv;
        double n2 = du * du + dv * dv;
        if (n2 > ms * ms) {
            double nn = sqrt(n2);
            du = du * ms / nn;
            dv = dv * ms / nn;
        }
        flow[i] = (float)((double)flow[i] + du / sc);
        flow[n + i] = (float)((double)flow[n + i] + dv / sc);
    }
}

// FlowConfidence: exp(-|f + b(x+f)|^2 / sigma^2), 0 more than half a pixel
// outside the image.
// s2 = float64(sigma)^2, computed on the host.
extern "C" __global__ void vfx_flow_confidence(float *dst, const float *fwd, const float *bwd, int w, int h, double s2) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    float fu = fwd[i], fv = fwd[n + i];
    float px = (float)x + fu, py = (float)y + fv;
    if (!(px >= -0.5f && px <= (float)w - 0.5f && py >= -0.5f && py <= (float)h - 0.5f)) {
        dst[i] = 0;
        return;
    }
    double eu = (double)(fu + matte_bilinear(bwd, w, h, px, py));
    double ev = (double)(fv + matte_bilinear(bwd + n, w, h, px, py));
    dst[i] = (float)exp(-(eu * eu + ev * ev) / s2);
}

// colourCell of cpu_matte.go.
__device__ __forceinline__ int colour_cell(float r, float g, float b, int bins) {
    float fb = (float)bins;
    int qr = min(bins - 1, (int)(go_minf(go_maxf(r, 0), 1) * fb));
    int qg = min(bins - 1, (int)(go_minf(go_maxf(g, 0), 1) * fb));
    int qb = min(bins - 1, (int)(go_minf(go_maxf(b, 0), 1) * fb));
    return (qr * bins + qg) * bins + qb;
}

// ColourHistogram into hist (bins^3 doubles, zeroed by the caller),
// weight may be null (1). Float64 atomics: the order of the additions
// is not fixed, so weighted sums may differ from the CPU's in the last
// bits (unit weights are integers and exact).
extern "C" __global__ void vfx_colour_hist(double *hist, const float *src, const float *weight, int64_t n, int bins) {
    GRID_STRIDE(i, n) {
        double v = weight ? (double)weight[i] : 1.0;
        atomicAdd(&hist[colour_cell(src[i], src[n + i], src[2 * n + i], bins)], v);
    }
}

// The same with a per-block histogram in shared memory (bins <= 16),
// merged into hist at the end.
#define HIST_SHARED_CELLS 4096
extern "C" __global__ void vfx_colour_hist_shared(double *hist, const float *src, const float *weight, int64_t n, int bins) {
    __shared__ double sh[HIST_SHARED_CELLS];
    int cells = bins * bins * bins;
    for (int k = threadIdx.x; k < cells; k += blockDim.x) sh[k] = 0;
    __syncthreads();
    GRID_STRIDE(i, n) {
        double v = weight ? (double)weight[i] : 1.0;
        atomicAdd(&sh[colour_cell(src[i], src[n + i], src[2 * n + i], bins)], v);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < cells; k += blockDim.x)
        if (sh[k] != 0) atomicAdd(&hist[k], sh[k]);
}

// logit of cpu_matte.go: log(p/(1-p)) with p clamped to [1e-3, 0.999].
__device__ __forceinline__ double matte_logit(double p) {
    p = go_min(go_max(p, 1e-3), 0.999);
    return log(p / (1 - p));
}

// The arguments of MatteFuse (Go: kernels.fuseArg). A null image or a
// zero use flag skips its term, as on the CPU.
struct FuseArg {
    float *dst;
    const float *src, *prior, *conf, *lf, *lb, *lm, *plate, *table;
    int64_t n;
    double wPrior, wGlobal, wLocal, wPlate, inv2s2, pt, ps;
    int32_t usePrior, useTable, useLocal, usePlate, bins, pad;
};

extern "C" __global__ void vfx_matte_fuse(FuseArg a) {
    int64_t n = a.n;
    GRID_STRIDE(i, n) {
        double L = 0.0;
        float sr = a.src[i], sg = a.src[n + i], sb = a.src[2 * n + i];
        if (a.usePrior) {
            double c = 1.0;
            if (a.conf) c = a.conf[i];
            L += a.wPrior * c * matte_logit(a.prior[i]);
        }
        if (a.useTable) L += a.wGlobal * matte_logit(a.table[colour_cell(sr, sg, sb, a.bins)]);
        if (a.useLocal) {
            double m = a.lm[i];
            if (m > 0.02 && m < 0.98) {
                double df = 0, db = 0;
                for (int c = 0; c < 3; c++) {
                    double v = a.src[c * n + i];
                    double f = (double)a.lf[c * n + i] / m;
                    double b = (double)a.lb[c * n + i] / (1 - m);
                    df += (v - f) * (v - f);
                    db += (v - b) * (v - b);
                }
                L += a.wLocal * go_min(go_max((db - df) * a.inv2s2, -8), 8);
            }
        }
        if (a.usePlate) {
            double e = 0;
            for (int c = 0; c < 3; c++) {
                double dv = (double)a.src[c * n + i] - (double)a.plate[c * n + i];
                e += dv * dv;
            }
            L += a.wPlate * go_min(go_max((sqrt(e) - a.pt) / a.ps, -8), 8);
        }
        a.dst[i] = (float)(1 / (1 + exp(-L)));
    }
}

// ChromaKey: alpha from the key signal, spill removed into dst (which may
// be src). ch is the screen channel (1 or 2), o2 = 3 - ch the second other
// channel (the first is 0); ks, high and span come from the host.
extern "C" __global__ void vfx_chroma_key(float *alpha, float *dst, const float *src, int64_t n, int ch, float ks,
                                          float high, float span) {
    int o2 = 3 - ch;
    GRID_STRIDE(i, n) {
        float sc = src[ch * n + i], s1 = src[i], s2 = src[o2 * n + i];
        float m = go_maxf(s1, s2);
        float t = (sc - m) / ks;
        alpha[i] = go_minf(go_maxf((high - t) / span, 0), 1);
        dst[i] = s1;
        dst[o2 * n + i] = s2;
        dst[ch * n + i] = go_minf(sc, m);
    }
}
