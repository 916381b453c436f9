// Exact Euclidean distance transform and normals (kernels/cpu_distance.go).
#include "common.cuh"

// Pass 1, one thread per column: squared distance to the nearest
// background pixel (mask < thr) in the column, +Inf when none; sets
// *anyBg when the column has background. dst may equal mask.
extern "C" __global__ void vfx_edt_cols(float *D, const float *M, int w, int h, float thr, int *anyBg) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    const float inf = __int_as_float(0x7f800000);
    bool bg = false;
    float prev = inf;
    for (int y = 0; y < h; y++) {
        int64_t i = (int64_t)y * w + x;
        float v = M[i], d;
        if (v >= thr) d = (y == 0) ? inf : prev + 1;
        else {
            d = 0;
            bg = true;
        }
        D[i] = d;
        prev = d;
    }
    float next = D[(int64_t)(h - 1) * w + x];
    D[(int64_t)(h - 1) * w + x] = next * next;
    for (int y = h - 2; y >= 0; y--) {
        int64_t i = (int64_t)y * w + x;
        float d = fminf(D[i], next + 1);
        next = d;
        D[i] = d * d;
    }
    if (bg) atomicOr(anyBg, 1);
}

// Pass 2, one thread per row: Felzenszwalb-Huttenlocher lower envelope of
// parabolas in float64 (edtRow). Scratch f, z (w+1) and v per row, stored
// column-major (index*h + y). Without any background every pixel gets
// w + h.
extern "C" __global__ void vfx_edt_rows(float *D, int w, int h, double *f, double *z, int *v, const int *anyBg) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= h) return;
    float *row = D + (int64_t)y * w;
    if (*anyBg == 0) {
        for (int x = 0; x < w; x++) row[x] = (float)(w + h);
        return;
    }
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
#define F(i) f[(int64_t)(i) * h + y]
#define Z(i) z[(int64_t)(i) * h + y]
#define V(i) v[(int64_t)(i) * h + y]
    for (int i = 0; i < w; i++) F(i) = (double)row[i];
    int k = -1;
    for (int q = 0; q < w; q++) {
        double fq = F(q);
        if (fq == inf) continue;
        if (k < 0) {
            k = 0;
            V(0) = q;
            Z(0) = -inf;
            Z(1) = inf;
            continue;
        }
        double qq = q, sx;
        for (;;) {
            int vk = V(k);
            double p = vk;
            sx = ((fq + qq * qq) - (F(vk) + p * p)) / (2 * qq - 2 * p);
            if (sx > Z(k)) break;
            k--;
        }
        k++;
        V(k) = q;
        Z(k) = sx;
        Z(k + 1) = inf;
    }
    if (k < 0) return;
    k = 0;
    for (int q = 0; q < w; q++) {
        double qq = q;
        while (Z(k + 1) < qq) k++;
        int vk = V(k);
        double p = vk;
        row[q] = (float)sqrt((qq - p) * (qq - p) + F(vk));
    }
#undef F
#undef Z
#undef V
}

// Height of the inflated surface plus detail (NormalsFromMatte step 1).
extern "C" __global__ void vfx_normals_height(float *H, const float *dist, const float *detail, int64_t n, float radius,
                                              float detailStrength) {
    GRID_STRIDE(i, n) {
        float hv = 0;
        if (radius > 0) {
            float t = gomin(dist[i] / radius, 1);
            float u = 1 - t;
            hv = radius * (float)sqrt((double)gomax(1 - u * u, 0));
        }
        if (detail) hv += detailStrength * detail[i];
        H[i] = hv;
    }
}

// Normals by clamped central differences (NormalsFromMatte step 2).
extern "C" __global__ void vfx_normals(float *N, const float *H, const float *dist, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int64_t n = (int64_t)w * h, i = (int64_t)y * w + x;
    if (!(dist[i] > 0)) {
        N[i] = 0, N[n + i] = 0, N[2 * n + i] = 1;
        return;
    }
    const float *hr = H + (int64_t)y * w;
    float gx = (hr[min(x + 1, w - 1)] - hr[max(x - 1, 0)]) * 0.5f;
    float gy = (H[(int64_t)min(y + 1, h - 1) * w + x] - H[(int64_t)max(y - 1, 0) * w + x]) * 0.5f;
    float inv = 1 / (float)sqrt((double)(gx * gx + gy * gy + 1));
    N[i] = -gx * inv, N[n + i] = gy * inv, N[2 * n + i] = inv;
}
