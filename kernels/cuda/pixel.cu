// Per-pixel ops (kernels/cpu_pixel.go, cpu_stats.go SHEval, cpu_lab.go
// LabTransfer, the guided filter's per-pixel steps).
#include "common.cuh"

extern "C" __global__ void vfx_luma(float *dst, const float *src, int64_t n) {
    GRID_STRIDE(i, n) { dst[i] = 0.2126f * src[i] + 0.7152f * src[n + i] + 0.0722f * src[2 * n + i]; }
}

// dst = a*fg + (1-a)*bg over c channels.
extern "C" __global__ void vfx_composite(float *dst, const float *fg, const float *bg, const float *alpha, int64_t n, int c) {
    GRID_STRIDE(i, n) {
        float a = alpha[i];
        for (int k = 0; k < c; k++) dst[k * n + i] = a * fg[k * n + i] + (1 - a) * bg[k * n + i];
    }
}

// dst = comp + strength*a*(1-aBlur)*bgBlur.
extern "C" __global__ void vfx_lightwrap(float *dst, const float *comp, const float *bgBlur, const float *alpha,
                                         const float *alphaBlur, int64_t n, int c, float strength) {
    GRID_STRIDE(i, n) {
        float a = alpha[i], ab = alphaBlur[i];
        for (int k = 0; k < c; k++) dst[k * n + i] = comp[k * n + i] + strength * a * (1 - ab) * bgBlur[k * n + i];
    }
}

// dst = src*(1 + a*(g-1)), g = clamp(eNew/max(eOld, eps), 0, maxGain),
// NaN ratio -> 0. eNew has cn channels (1 or c), eOld co (1 or cn);
// alpha may be null (a = 1).
extern "C" __global__ void vfx_ratio_relight(float *dst, const float *src, const float *eNew, const float *eOld,
                                             const float *alpha, int64_t n, int c, int cn, int co, float eps, float maxG) {
    GRID_STRIDE(i, n) {
        float a = alpha ? alpha[i] : 1.0f;
        for (int k = 0; k < c; k++) {
            float en = eNew[min(k, cn - 1) * n + i];
            float eo = eOld[min(k, co - 1) * n + i];
            float g = en / gomax(eo, eps);
            if (!(g > 0)) g = 0;
            else if (g > maxG) g = maxG;
            dst[k * n + i] = src[k * n + i] * (1 + a * (g - 1));
        }
    }
}

// Nine SH coefficients for each of up to four channels.
struct SHCoeffs {
    float k[4][9];
};

extern "C" __global__ void vfx_sh_eval(float *dst, const float *normals, int64_t n, int c, SHCoeffs cf) {
    GRID_STRIDE(i, n) {
        float x = normals[i], y = normals[n + i], z = normals[2 * n + i];
        float b[9] = {0.282095f,          0.488603f * y,         0.488603f * z,
                      0.488603f * x,      1.092548f * x * y,     1.092548f * y * z,
                      0.315392f * (3 * z * z - 1), 1.092548f * x * z, 0.546274f * (x * x - y * y)};
        for (int ch = 0; ch < c; ch++) {
            const float *k = cf.k[ch];
            dst[ch * n + i] = k[0] * b[0] + k[1] * b[1] + k[2] * b[2] + k[3] * b[3] + k[4] * b[4] + k[5] * b[5] +
                              k[6] * b[6] + k[7] * b[7] + k[8] * b[8];
        }
    }
}

// Reinhard transfer in log-LMS (see CPU LabTransfer): P, q and the
// inverse LMS matrix are composed on the host. log/exp are CUDA's
// double-precision functions (the CPU uses table approximations with
// errors below 1e-11), so results agree to float32 rounding.
struct LabXfer {
    double P[9], q[3], Mi[9], M[9];
    double str;
};

extern "C" __global__ void vfx_lab_transfer(float *dst, const float *src, const float *mask, int64_t n, LabXfer t) {
    GRID_STRIDE(i, n) {
        double k = t.str;
        if (mask) k *= (double)mask[i];
        float R = src[i], G = src[n + i], B = src[2 * n + i];
        if (k == 0) {
            dst[i] = R, dst[n + i] = G, dst[2 * n + i] = B;
            continue;
        }
        double r = R, g = G, b = B;
        double m0 = fmax(t.M[0] * r + t.M[1] * g + t.M[2] * b, 1e-4);
        double m1 = fmax(t.M[3] * r + t.M[4] * g + t.M[5] * b, 1e-4);
        double m2 = fmax(t.M[6] * r + t.M[7] * g + t.M[8] * b, 1e-4);
        double l0 = log(m0), l1 = log(m1), l2 = log(m2);
        double e0 = exp(fmin(fmax(l0 + k * (t.P[0] * l0 + t.P[1] * l1 + t.P[2] * l2 + t.q[0]), -700.0), 700.0)) - m0;
        double e1 = exp(fmin(fmax(l1 + k * (t.P[3] * l0 + t.P[4] * l1 + t.P[5] * l2 + t.q[1]), -700.0), 700.0)) - m1;
        double e2 = exp(fmin(fmax(l2 + k * (t.P[6] * l0 + t.P[7] * l1 + t.P[8] * l2 + t.q[2]), -700.0), 700.0)) - m2;
        dst[i] = (float)(r + t.Mi[0] * e0 + t.Mi[1] * e1 + t.Mi[2] * e2);
        dst[n + i] = (float)(g + t.Mi[3] * e0 + t.Mi[4] * e1 + t.Mi[5] * e2);
        dst[2 * n + i] = (float)(b + t.Mi[6] * e0 + t.Mi[7] * e1 + t.Mi[8] * e2);
    }
}

// HueBound (see kernels/cpu_hue.go: hueArgs.delta is the same
// arithmetic): out = ref * gain, its (a, b) in the linearised CIELAB plane
// turned back within the allowed angle of ref's, its length and Y kept;
// dst = out' / ref per channel, clamped; where mask (may be null) is 0 the
// gain is copied. Float64 throughout, as the CPU.
struct HueArg {
    double X[9], Xi[9];
    double maxHue, cosMax, sinMax, c0, c1, maxGain;
};

__device__ static void hue_ab(const double *X, double r, double g, double b, double *a, double *bb, double *y) {
    double x = X[0] * r + X[1] * g + X[2] * b;
    *y = X[3] * r + X[4] * g + X[5] * b;
    double z = X[6] * r + X[7] * g + X[8] * b;
    *a = 500 * (x - *y);
    *bb = 200 * (*y - z);
}

extern "C" __global__ void vfx_hue_bound(float *dst, const float *gain, const float *ref, const float *mask, int64_t n, HueArg h) {
    GRID_STRIDE(i, n) {
        float G[3] = {gain[i], gain[n + i], gain[2 * n + i]};
        if (mask && mask[i] == 0) {
            dst[i] = G[0], dst[n + i] = G[1], dst[2 * n + i] = G[2];
            continue;
        }
        double R[3] = {ref[i], ref[n + i], ref[2 * n + i]};
        double O[3] = {R[0] * (double)G[0], R[1] * (double)G[1], R[2] * (double)G[2]};
        double ra, rb, ry, va, vb, vy;
        hue_ab(h.X, R[0], R[1], R[2], &ra, &rb, &ry);
        hue_ab(h.X, O[0], O[1], O[2], &va, &vb, &vy);
        // As hueArgs.delta: the common case first, without a root.
        double r2 = ra * ra + rb * rb, v2 = va * va + vb * vb;
        bool keep = !(ry > 0) || !(r2 > h.c0 * h.c0 * ry * ry) || v2 == 0;
        double dot = ra * va + rb * vb;
        if (!keep && h.cosMax >= 0 && dot > 0 && dot * dot >= h.cosMax * h.cosMax * r2 * v2) keep = true;
        double cosM = h.cosMax, sinM = h.sinMax, ua = 0, ub = 0, vc = 0;
        if (!keep) {
            double rc = sqrt(r2);
            vc = sqrt(v2);
            double rel = rc / ry;
            if (rel < h.c1) {
                double t = (rel - h.c0) / (h.c1 - h.c0);
                t = t * t * (3 - 2 * t);
                double ang = 3.14159265358979323846 - t * (3.14159265358979323846 - h.maxHue);
                cosM = cos(ang), sinM = sin(ang);
            }
            ua = ra / rc, ub = rb / rc;
            keep = (ua * va + ub * vb) / vc >= cosM;
        }
        if (keep) {
            dst[i] = G[0], dst[n + i] = G[1], dst[2 * n + i] = G[2];
            continue;
        }
        double s = sinM;
        if (ua * vb - ub * va < 0) s = -s;
        double da = vc * (cosM * ua - s * ub) - va, db = vc * (cosM * ub + s * ua) - vb;
        double dx = da / 500, dz = -db / 200;
        for (int c = 0; c < 3; c++) {
            if (R[c] <= 1e-4) {
                dst[c * n + i] = G[c];
                continue;
            }
            double out = O[c] + h.Xi[3 * c] * dx + h.Xi[3 * c + 2] * dz;
            dst[c * n + i] = (float)fmin(fmax(out / R[c], 0.0), h.maxGain);
        }
    }
}

// dst = a*b (guided filter I*I and I*p).
extern "C" __global__ void vfx_mul(float *dst, const float *a, const float *b, int64_t n) {
    GRID_STRIDE(i, n) { dst[i] = a[i] * b[i]; }
}

// Guided filter a/b step in float64: mp = mean(p) in t2, mIp in t3;
// writes a into t3 and b into t2.
extern "C" __global__ void vfx_guided_ab(float *t3, float *t2, const float *mI, const float *mII, int64_t n, double eps) {
    GRID_STRIDE(i, n) {
        double mi = mI[i], mp = t2[i];
        double den = fmax((double)mII[i] - mi * mi, 0.0) + eps;
        double a = 0.0;
        if (den > 0) a = ((double)t3[i] - mi * mp) / den;
        t3[i] = (float)a;
        t2[i] = (float)(mp - a * mi);
    }
}

// Colour guided filter a/b step in float64 (cpuref's guidedColourAB, the
// same operations in the same order). planes holds 13 planes of n: mI
// (r, g, b), mII (rr rg rb gg gb bb), mp, mIp (r, g, b); writes a into
// the mIp planes and b into mp.
extern "C" __global__ void vfx_guided3_ab(float *planes, int64_t n, double eps) {
    GRID_STRIDE(i, n) {
        const float *mI0 = planes, *mI1 = planes + n, *mI2 = planes + 2 * n;
        const float *mII = planes + 3 * n;
        float *mp = planes + 9 * n, *mIp0 = planes + 10 * n, *mIp1 = planes + 11 * n, *mIp2 = planes + 12 * n;
        double m0 = mI0[i], m1 = mI1[i], m2 = mI2[i];
        double p = mp[i];
        double s00 = fmax((double)mII[i] - m0 * m0, 0.0) + eps;
        double s01 = (double)mII[n + i] - m0 * m1;
        double s02 = (double)mII[2 * n + i] - m0 * m2;
        double s11 = fmax((double)mII[3 * n + i] - m1 * m1, 0.0) + eps;
        double s12 = (double)mII[4 * n + i] - m1 * m2;
        double s22 = fmax((double)mII[5 * n + i] - m2 * m2, 0.0) + eps;
        double c0 = (double)mIp0[i] - m0 * p;
        double c1 = (double)mIp1[i] - m1 * p;
        double c2 = (double)mIp2[i] - m2 * p;
        double i00 = s11 * s22 - s12 * s12;
        double i01 = s02 * s12 - s01 * s22;
        double i02 = s01 * s12 - s02 * s11;
        double i11 = s00 * s22 - s02 * s02;
        double i12 = s01 * s02 - s00 * s12;
        double i22 = s00 * s11 - s01 * s01;
        double det = s00 * i00 + s01 * i01 + s02 * i02;
        double a0 = 0.0, a1 = 0.0, a2 = 0.0;
        if (s00 > 0 && i22 > 0 && det > 0) {
            a0 = (i00 * c0 + i01 * c1 + i02 * c2) / det;
            a1 = (i01 * c0 + i11 * c1 + i12 * c2) / det;
            a2 = (i02 * c0 + i12 * c1 + i22 * c2) / det;
        }
        mIp0[i] = (float)a0;
        mIp1[i] = (float)a1;
        mIp2[i] = (float)a2;
        mp[i] = (float)(p - a0 * m0 - a1 * m1 - a2 * m2);
    }
}

// Colour guided filter output: q = meanA·I + meanB, from the planes of
// vfx_guided3_ab after their box means.
extern "C" __global__ void vfx_guided3_out(float *q, const float *planes, const float *I0, const float *I1, const float *I2, int64_t n) {
    GRID_STRIDE(i, n) {
        const float *mb = planes + 9 * n, *a0 = planes + 10 * n, *a1 = planes + 11 * n, *a2 = planes + 12 * n;
        q[i] = a0[i] * I0[i] + a1[i] * I1[i] + a2[i] * I2[i] + mb[i];
    }
}

// Fast colour guided filter output: q = a·I + b with the coefficients
// upsampled to the guide's size, ab holding the planes a (r, g, b) and b.
extern "C" __global__ void vfx_guided3_apply(float *q, const float *ab, const float *I0, const float *I1, const float *I2, int64_t n) {
    GRID_STRIDE(i, n) {
        q[i] = ab[i] * I0[i] + ab[n + i] * I1[i] + ab[2 * n + i] * I2[i] + ab[3 * n + i];
    }
}

// q = meanA*I + meanB.
extern "C" __global__ void vfx_guided_out(float *q, const float *ma, const float *I, const float *mb, int64_t n) {
    GRID_STRIDE(i, n) { q[i] = ma[i] * I[i] + mb[i]; }
}
