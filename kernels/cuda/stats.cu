// Reductions (kernels/cpu_stats.go, LabStats of cpu_lab.go). Each block
// sums a grid-stride share of the pixels in float64 and stores its NV
// partial sums; the host adds the partials in block order. The grid size
// depends only on the pixel count, so results are deterministic; they
// differ from the CPU's band order by float64 rounding only.
#include "common.cuh"

// Sum of each of c (<= 4) channels.
extern "C" __global__ void vfx_sum(double *out, const float *src, int64_t n, int c) {
    double acc[4] = {0, 0, 0, 0};
    GRID_STRIDE(i, n) {
        for (int k = 0; k < c; k++) acc[k] += (double)src[k * n + i];
    }
    block_sum_store<4>(acc, out);
}

// MaskedStats: [weight, sum_0, sq_0, sum_1, sq_1, ...]; pixels of weight 0
// are skipped (except in the weight sum, as on the CPU). mask may be null.
extern "C" __global__ void vfx_masked_stats(double *out, const float *src, const float *mask, int64_t n, int c) {
    double acc[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    GRID_STRIDE(i, n) {
        if (!mask) {
            acc[0] += 1;
            for (int k = 0; k < c; k++) {
                double f = src[k * n + i];
                acc[1 + 2 * k] += f;
                acc[2 + 2 * k] += f * f;
            }
            continue;
        }
        float wv = mask[i];
        acc[0] += (double)wv;
        if (wv == 0) continue;
        for (int k = 0; k < c; k++) {
            double f = src[k * n + i];
            double g = (double)wv * f;
            acc[1 + 2 * k] += g;
            acc[2 + 2 * k] += g * f;
        }
    }
    block_sum_store<9>(acc, out);
}

__device__ __forceinline__ void sh_basis(double *b, double x, double y, double z) {
    b[0] = 0.282095;
    b[1] = 0.488603 * y;
    b[2] = 0.488603 * z;
    b[3] = 0.488603 * x;
    b[4] = 1.092548 * x * y;
    b[5] = 1.092548 * y * z;
    b[6] = 0.315392 * (3 * z * z - 1);
    b[7] = 1.092548 * x * z;
    b[8] = 0.546274 * (x * x - y * y);
}

// SHProjectEnv: 27 sums (channel-major) of L * Y_k(d) * dOmega over the
// back hemisphere; the front mirror is applied on the host.
extern "C" __global__ void vfx_sh_project(double *out, const float *src, int w, int h) {
    double acc[27];
    for (int k = 0; k < 27; k++) acc[k] = 0;
    const double pi = 3.14159265358979323846;
    int64_t n = (int64_t)w * h;
    double pix = (pi / (double)w) * (pi / (double)h);
    GRID_STRIDE(i, n) {
        int y = (int)(i / w), x = (int)(i - (int64_t)y * w);
        double t = (((double)x + 0.5) / (double)w - 0.5) * pi;
        double phi = (0.5 - ((double)y + 0.5) / (double)h) * pi;
        double sp = sin(phi), cp = cos(phi), st = sin(t), ct = cos(t);
        double dw = cp * pix;
        double b[9];
        sh_basis(b, st * cp, sp, -ct * cp);
        double lr = (double)src[i] * dw, lg = (double)src[n + i] * dw, lb = (double)src[2 * n + i] * dw;
        for (int k = 0; k < 9; k++) {
            acc[k] += lr * b[k];
            acc[9 + k] += lg * b[k];
            acc[18 + k] += lb * b[k];
        }
    }
    block_sum_store<27>(acc, out);
}

// SHNormalEquations: the 45 upper-triangle sums of w*Y Y^T (row-major
// order r <= c) and the 9 sums of w*Y*s. mask may be null.
extern "C" __global__ void vfx_sh_normal_eq(double *out, const float *signal, const float *normals, const float *mask,
                                            int64_t n) {
    double acc[54];
    for (int k = 0; k < 54; k++) acc[k] = 0;
    GRID_STRIDE(i, n) {
        double wt = 1;
        if (mask) {
            wt = mask[i];
            if (wt == 0) continue;
        }
        double b[9];
        sh_basis(b, normals[i], normals[n + i], normals[2 * n + i]);
        double ws = wt * (double)signal[i];
        int k = 0;
        for (int r = 0; r < 9; r++) {
            double wr = wt * b[r];
            for (int c = r; c < 9; c++) acc[k++] += wr * b[c];
            acc[45 + r] += ws * b[r];
        }
    }
    block_sum_store<54>(acc, out);
}

// LabStats: [weight, mean sums x3, square sums x3] of lαβ. M is the
// RGB->LMS matrix, A the log-LMS->lαβ matrix (row-major).
struct LabMats {
    double M[9], A[9];
};
extern "C" __global__ void vfx_lab_stats(double *out, const float *src, const float *mask, int64_t n, LabMats m) {
    double acc[7] = {0, 0, 0, 0, 0, 0, 0};
    GRID_STRIDE(i, n) {
        double wt = 1;
        if (mask) {
            wt = mask[i];
            if (wt == 0) continue;
        }
        double r = src[i], g = src[n + i], b = src[2 * n + i];
        double l0 = log(fmax(m.M[0] * r + m.M[1] * g + m.M[2] * b, 1e-4));
        double l1 = log(fmax(m.M[3] * r + m.M[4] * g + m.M[5] * b, 1e-4));
        double l2 = log(fmax(m.M[6] * r + m.M[7] * g + m.M[8] * b, 1e-4));
        double a0 = m.A[0] * l0 + m.A[1] * l1 + m.A[2] * l2;
        double a1 = m.A[3] * l0 + m.A[4] * l1 + m.A[5] * l2;
        double a2 = m.A[6] * l0 + m.A[7] * l1 + m.A[8] * l2;
        acc[0] += wt;
        acc[1] += wt * a0;
        acc[2] += wt * a1;
        acc[3] += wt * a2;
        acc[4] += wt * a0 * a0;
        acc[5] += wt * a1 * a1;
        acc[6] += wt * a2 * a2;
    }
    block_sum_store<7>(acc, out);
}
