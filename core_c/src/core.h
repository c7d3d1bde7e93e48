/* Internal helpers shared by the kernel families: errors (errors.c), dtypes and float16,
 * validation and the strided walker (strided.c), threads (threads.c), GEMM for other kernels
 * (gemm.c). Not part of the public API (that is include/pyframe_api.h). */
#ifndef PF_CORE_H
#define PF_CORE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "pyframe_api.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- errors (errors.c) ------------------------------------------------------------ */

/* Record a printf-style message for pf_last_error() and return `code`. */
int pf_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "[2, 3]"-style text of a shape into buf (at least 128 bytes). */
const char *pf_shape_str(const pf_tensor *t, char *buf);

/* ---- dtypes (their size and name tables: strided.c) ------------------------------ */

/* X(code, C storage type, suffix, is_float) in code order */
#define PF_DTYPE_LIST(X)               \
    X(PF_FLOAT32, float, f32, 1)       \
    X(PF_FLOAT64, double, f64, 1)      \
    X(PF_FLOAT16, uint16_t, f16, 1)    \
    X(PF_INT64, int64_t, i64, 0)       \
    X(PF_INT32, int32_t, i32, 0)       \
    X(PF_BOOL, uint8_t, b8, 0)         \
    X(PF_UINT8, uint8_t, u8, 0)        \
    X(PF_INT8, int8_t, i8, 0)          \
    X(PF_INT16, int16_t, i16, 0)       \
    X(PF_BFLOAT16, uint16_t, bf16, 1)

/* indexed by dtype code; sized where they are defined (strided.c), which checks the count */
extern const size_t pf_dtype_size[];
extern const char *const pf_dtype_name[];
static inline int pf_is_float(int dt) {
    return dt == PF_FLOAT32 || dt == PF_FLOAT64 || dt == PF_FLOAT16 || dt == PF_BFLOAT16;
}
/* the two 16-bit floating storage types, which compute in float */
static inline int pf_is_half(int dt) { return dt == PF_FLOAT16 || dt == PF_BFLOAT16; }

/* float16 is a storage type: loads widen to float, stores round to nearest even. */
static inline float pf_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
    else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (man == 0) bits = sign;
    else { /* subnormal half -> normal float */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t pf_f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, absx = x & 0x7fffffff;
    if (absx >= 0x7f800000u) /* inf or nan (keep nan quiet) */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 | ((absx >> 13) & 0x3ff) : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to inf */
    if (absx < 0x38800000u) { /* result is subnormal or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absx >> 23, m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((absx - 0x38000000u) >> 13), rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

/* bfloat16 is the top half of a float32: loads shift, stores round to nearest even and give
 * every NaN as the quiet 0x7fc0, as c10::BFloat16 does (torch's vectorized loops give 0xffff
 * instead, so torch's NaN bits depend on the loop; only NaN-ness is defined). */
static inline float pf_bf2f(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
static inline uint16_t pf_f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
/* either 16-bit float of dtype dt (PF_FLOAT16 or PF_BFLOAT16) */
static inline float pf_half_load(int dt, uint16_t h) { return dt == PF_BFLOAT16 ? pf_bf2f(h) : pf_h2f(h); }
static inline uint16_t pf_half_store(int dt, float f) { return dt == PF_BFLOAT16 ? pf_f2bf(f) : pf_f2h(f); }

/* pf_h2f with no branches, so loops over float16 vectorize; equal to it for all 65536
 * inputs: the exponent is rebiased by a multiply, which also normalizes subnormals
 * (so these read as 0 if a library turned on denormals-are-zero). */
static inline float pf_h2f_vec(uint16_t h) {
    uint32_t em = h & 0x7fffu, bits = em << 13;
    float f;
    memcpy(&f, &bits, 4);
    f *= 0x1p112f;
    memcpy(&bits, &f, 4);
    bits = em >= 0x7c00u ? 0x7f800000u | bits : bits; /* inf and NaN */
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, 4);
    return f;
}

/* double -> int64 as x86 converts (NaN and out-of-range values give INT64_MIN) without C's undefined
 * behaviour; the narrow integer dtypes then keep the low bits, as torch's casts do */
static inline int64_t pf_d2i64(double v) {
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

/* Generic element access through double / int64 for the slow, dtype-agnostic paths. */
static inline double pf_load_f64(const char *p, int dt) {
    switch (dt) {
    case PF_FLOAT32: return *(const float *)p;
    case PF_FLOAT64: return *(const double *)p;
    case PF_FLOAT16: return pf_h2f(*(const uint16_t *)p);
    case PF_BFLOAT16: return pf_bf2f(*(const uint16_t *)p);
    case PF_INT64: return (double)*(const int64_t *)p;
    case PF_INT32: return *(const int32_t *)p;
    case PF_UINT8: return *(const uint8_t *)p;
    case PF_INT8: return *(const int8_t *)p;
    case PF_INT16: return *(const int16_t *)p;
    default: return *(const uint8_t *)p != 0;
    }
}
static inline int64_t pf_load_i64(const char *p, int dt) {
    switch (dt) {
    case PF_FLOAT32: return (int64_t)*(const float *)p;
    case PF_FLOAT64: return (int64_t)*(const double *)p;
    case PF_FLOAT16: return (int64_t)pf_h2f(*(const uint16_t *)p);
    case PF_BFLOAT16: return (int64_t)pf_bf2f(*(const uint16_t *)p);
    case PF_INT64: return *(const int64_t *)p;
    case PF_INT32: return *(const int32_t *)p;
    case PF_UINT8: return *(const uint8_t *)p;
    case PF_INT8: return *(const int8_t *)p;
    case PF_INT16: return *(const int16_t *)p;
    default: return *(const uint8_t *)p != 0;
    }
}
static inline void pf_store_f64(char *p, int dt, double v) {
    switch (dt) {
    case PF_FLOAT32: *(float *)p = (float)v; break;
    case PF_FLOAT64: *(double *)p = v; break;
    case PF_FLOAT16: *(uint16_t *)p = pf_f2h((float)v); break;
    case PF_BFLOAT16: *(uint16_t *)p = pf_f2bf((float)v); break;
    case PF_INT64: *(int64_t *)p = (int64_t)v; break;
    case PF_INT32: *(int32_t *)p = (int32_t)v; break;
    case PF_UINT8: *(uint8_t *)p = (uint8_t)pf_d2i64(v); break;
    case PF_INT8: *(int8_t *)p = (int8_t)pf_d2i64(v); break;
    case PF_INT16: *(int16_t *)p = (int16_t)pf_d2i64(v); break;
    default: *(uint8_t *)p = v != 0; break;
    }
}
static inline void pf_store_i64(char *p, int dt, int64_t v) {
    switch (dt) {
    case PF_FLOAT32: *(float *)p = (float)v; break;
    case PF_FLOAT64: *(double *)p = (double)v; break;
    case PF_FLOAT16: *(uint16_t *)p = pf_f2h((float)v); break;
    case PF_BFLOAT16: *(uint16_t *)p = pf_f2bf((float)v); break;
    case PF_INT64: *(int64_t *)p = v; break;
    case PF_INT32: *(int32_t *)p = (int32_t)v; break;
    case PF_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case PF_INT8: *(int8_t *)p = (int8_t)v; break;
    case PF_INT16: *(int16_t *)p = (int16_t)v; break;
    default: *(uint8_t *)p = v != 0; break;
    }
}

/* A kernel compiled once per ISA, picked at load by the CPU (gcc's target_clones): loops
 * gcc vectorizes get AVX-512 or AVX2 without -march=native. Selects (pf_expf's range checks)
 * vectorize in every clone because the core builds without trapping math (build_core.py). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define PF_VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PF_VEC_CLONES
#endif
/* Helpers of a PF_VEC_CLONES kernel must be inlined into each of its clones: one compiled on
 * its own gets the default ISA, and a loop of calls can make gcc decline a plain inline. */
#if defined(__GNUC__)
#define PF_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define PF_ALWAYS_INLINE static inline
#endif

/* 2^n for n in the normal exponent range [-126, 127], built in the exponent field */
PF_ALWAYS_INLINE float pf_pow2f(int32_t n) {
    int32_t bits = (n + 127) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* e^x = 2^n e^r with n the integer nearest x / ln 2 and r = x - n ln 2 (ln 2 in two parts): returns the cephes
 * minimax polynomial's e^r - 1 (as p r^2 + r: r stays exact, so no cancellation near 0) and sets *n.
 * pf_expf, pf_expm1f and pf_erff build their 2^n each as their ranges need. */
PF_ALWAYS_INLINE float pf_expm1_reduced(float x, float *n_out) {
    float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f; /* round to nearest */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    *n_out = n;
    return p * r * r + r;
}
/* the same reduction's e^r */
PF_ALWAYS_INLINE float pf_exp_reduced(float x, float *n_out) { return pf_expm1_reduced(x, n_out) + 1.0f; }

/* exp that gcc can vectorize (libm's expf is a call it cannot): Cody-Waite reduction
 * x = n ln2 + r and the cephes minimax polynomial; within 1 ulp of libm. */
PF_ALWAYS_INLINE float pf_expf(float x) {
    /* clamp first, NaN included (it lands on the upper bound), so the int conversion
     * below is always defined; the selects at the end restore inf, 0 and NaN */
    float xc = x > -103.97208f ? (x < 88.72283935546875f ? x : 88.72283935546875f) : -103.97208f;
    float n, p = pf_exp_reduced(xc, &n);
    /* 2^n in two halves, so n down to -150 (subnormal results) stays exact */
    int32_t e = (int32_t)n, e1 = e / 2;
    float y = p * pf_pow2f(e1) * pf_pow2f(e - e1);
    y = x > 88.72283935546875f ? INFINITY : y;
    y = x < -103.97208f ? 0.0f : y;
    return x != x ? x : y;
}

/* expm1 that gcc can vectorize (libm's expm1f is a call: ELU took 4x torch's time). With x = n ln 2 + r,
 * expm1(x) = 2^n (e^r - 1) + (2^n - 1), both parts from pf_expm1_reduced. Past 20 the -1 is below exp's
 * rounding, so pf_expf(x) - 1 (inf from 88.72 on); below -18 the result rounds to -1. Within 1.64 ulp of
 * expm1 over every float32 (the worst just past ln 2 / 2, where n = 1 and 2 (e^r - 1) + 1 cancels). */
PF_ALWAYS_INLINE float pf_expm1f(float x) {
    float xc = x > -18.0f ? (x < 20.0f ? x : 20.0f) : -18.0f; /* NaN lands on -18; the select below restores it */
    float n, em = pf_expm1_reduced(xc, &n);
    float s = pf_pow2f((int32_t)n); /* n in [-26, 29] */
    float y = s * em + (s - 1.0f);
    y = x > 20.0f ? pf_expf(x) - 1.0f : y;
    y = x < -18.0f ? -1.0f : y;
    return x != x || x == 0.0f ? x : y; /* expm1(-0) = -0: the reduction's sum would give +0 */
}

/* log(1 + f) + fe ln 2 for f in [sqrt(1/2) - 1, sqrt(2) - 1]: the cephes minimax polynomial, ln 2 in two parts */
PF_ALWAYS_INLINE float pf_log_poly(float f, float fe) {
    float z = f * f, y = 7.0376836292E-2f;
    y = y * f - 1.1514610310E-1f;
    y = y * f + 1.1676998740E-1f;
    y = y * f - 1.2420140846E-1f;
    y = y * f + 1.4249322787E-1f;
    y = y * f - 1.6668057665E-1f;
    y = y * f + 2.0000714765E-1f;
    y = y * f - 2.4999993993E-1f;
    y = y * f + 3.3333331174E-1f;
    y = y * f * z;
    y += -2.12194440e-4f * fe;
    y += -0.5f * z;
    return (f + y) + 0.693359375f * fe;
}

/* log that gcc can vectorize (libm's logf is a call; log over [1000, 1400] float32 took 2x torch's time): x =
 * m 2^e with m in [sqrt(1/2), sqrt(2)), then pf_log_poly(m - 1, e). Subnormals are scaled into the normals
 * first; 0, negatives, inf and NaN are selects. Within 0.995 ulp of log over every float32. */
PF_ALWAYS_INLINE float pf_logf(float x) {
    /* subnormal, zero or negative: scaled by 2^23 (the selects below settle the last two). Float selects, not int
     * flags: with an int flag gcc could not vectorize log composed with exp (softplus), mixing mask widths */
    float xs = x < 1.17549435e-38f ? x * 8388608.0f : x, scaled = x < 1.17549435e-38f ? 23.0f : 0.0f;
    int32_t bits;
    memcpy(&bits, &xs, 4);
    int32_t e = ((bits >> 23) & 0xff) - 126, mb = (bits & 0x007fffff) | 0x3f000000; /* m in [0.5, 1) */
    float m;
    memcpy(&m, &mb, 4);
    float fe = (float)e - scaled;
    float f = m < 0.707106781186547524f ? m + m - 1.0f : m - 1.0f;
    float r = pf_log_poly(f, m < 0.707106781186547524f ? fe - 1.0f : fe);
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? NAN : r;
    r = x == INFINITY ? INFINITY : r;
    return x != x ? x : r;
}

/* log1p: where 1 + x lies in [sqrt(1/2), sqrt(2)) the polynomial of x itself (no rounding of 1 + x), else
 * log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second term is what u's rounding lost. */
PF_ALWAYS_INLINE float pf_log1pf(float x) {
    float u = 1.0f + x, c = (x - (u - 1.0f)) / u;
    float r = pf_logf(u) + (u == 0.0f ? 0.0f : c); /* x = -1: -inf, not -inf + 0 / 0 */
    r = x > -0.29289321881f && x < 0.41421356237f ? pf_log_poly(x, 0.0f) : r;
    return x == INFINITY || x == 0.0f ? x : r; /* log1p(-0) = -0: the polynomial's sum would give +0 */
}

/* sigmoid and tanh that gcc can vectorize (elementwise.c's tables, rnn.c's LSTM cell) */
PF_ALWAYS_INLINE float pf_sigmoidf(float x) { return 1.0f / (1.0f + pf_expf(-x)); }
/* tanh that gcc can vectorize (libm's tanhf is a call, and it made tanh 25x slower than
 * sigmoid, which dominated LSTM steps). Cephes' split: below 0.625 an odd polynomial, since
 * 1 - 2/(e^2x + 1) cancels there; above it the fast exp. |x| is clamped at 10 (tanh rounds
 * to 1.0f from 9.01 on), so exp cannot overflow; copysign keeps -0 and the sign of +-inf. */
PF_ALWAYS_INLINE float pf_tanhf(float x) {
    float ax = fabsf(x), z = ax * ax;
    float p = -5.70498872745E-3f;
    p = p * z + 2.06390887954E-2f;
    p = p * z - 5.37397155531E-2f;
    p = p * z + 1.33314422036E-1f;
    p = p * z - 3.33332819422E-1f;
    float small = p * z * ax + ax;
    float e = pf_expf(2.0f * (ax < 10.0f ? ax : 10.0f));
    float big = 1.0f - 2.0f / (e + 1.0f);
    float y = copysignf(ax < 0.625f ? small : big, x);
    return x != x ? x : y;
}
static inline double pf_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* Mish, x tanh(log1p(e^x)), from one exp: with n = e^x (e^x + 2), tanh(log1p(e^x)) = n / (n + 2). Composing
 * exp, log1p and tanh took three transcendentals a lane (slower fused than as three vectorised passes); past 20
 * the ratio is 1 in float and double, and n stays finite up to there */
PF_ALWAYS_INLINE float pf_mishf(float x) {
    float e = pf_expf(x < 20.0f ? x : 20.0f), n = e * (e + 2.0f);
    return x > 20.0f ? x : x * (n / (n + 2.0f));
}
PF_ALWAYS_INLINE double pf_mish(double x) {
    double e = exp(x < 20.0 ? x : 20.0), n = e * (e + 2.0);
    return x > 20.0 ? x : x * (n / (n + 2.0));
}
/* torch's SELU constants: elementwise.c's forward and activation.c's gradient */
#define PF_SELU_ALPHA 1.6732632423543772848170429916717
#define PF_SELU_SCALE 1.0507009873554804934193349852946

/* erf that gcc can vectorize (libm's erff is a call, ~20x slower than this loop with AVX-512;
 * 8x torch's time on AVX2): for |a| <= 0.9277 an odd minimax polynomial, above it 1 - exp(poly(|a|)) (N. Juffa's
 * erff split and coefficients); both are computed and one selected so the loop stays
 * branch-free. Within 1.19 ulp of double erf over all 2^32 float32 inputs as plain C (no
 * contraction; activation.c's contracted copy: 1.01 ulp from 1e-30 up); GELU's float32
 * result within 1.3e-7 of the exact one relative to max(1, |y|) over [-12, 12] (torch's: 1.1e-6). */
PF_ALWAYS_INLINE float pf_erff(float a) {
    float t = fabsf(a), s = a * a;
    float r = -1.72853470e-5f * t + 3.83197126e-4f;
    float u = -3.88396438e-3f * t + 2.42546219e-2f;
    r = r * s + u;
    r = r * t + -1.06777877e-1f;
    r = r * t + -6.34846687e-1f;
    r = r * t + -1.28717512e-1f;
    r = r * t - t;
    /* exp(r) for r <= 0: below -20 it only ever meets 1 - exp(r) = 1.0f (exp(-17.4) < 2^-25), so the
     * argument is clamped there and 2^n is one exponent field (pf_expf's inf/NaN/subnormal care is moot) */
    r = r > -20.0f ? r : -20.0f;
    float n, p = pf_exp_reduced(r, &n);
    float big = 1.0f - p * pf_pow2f((int32_t)n);
    big = a < 0.0f ? -big : big;
    float q = -5.96761703e-4f;
    q = q * s + 4.99119423e-3f;
    q = q * s + -2.67681349e-2f;
    q = q * s + 1.12819925e-1f;
    q = q * s + -3.76125336e-1f;
    q = q * s + 1.28379166e-1f;
    q = q * a + a;
    return t > 0.927734375f ? big : q;
}

/* ---- validation (strided.c) -------------------------------------------------------- */

/* Checks ndim, dtype, non-negative shape and a non-NULL data pointer when numel > 0.
 * `what` names the argument in the message ("x", "out", ...). */
int pf_check(const pf_tensor *t, const char *what);
int64_t pf_numel(const pf_tensor *t);
/* `rows` contiguous rows of n elements at x as a 2-d descriptor, for the lean entry points that
 * take bare pointers; refuses what a descriptor could not hold (`name` leads the message). */
int pf_rows_desc(const char *name, int dtype, const void *x, int64_t rows, int64_t n, pf_tensor *xd);
/* Strides of `in` broadcast to out_shape[out_ndim] (0 for broadcast dims), right-aligned
 * as in NumPy; PF_ERR_VALUE naming both shapes when incompatible. */
int pf_broadcast_strides(const pf_tensor *in, int out_ndim, const int64_t *out_shape,
                         int64_t *strides, const char *what);

/* Row-major with no gaps (size-1 dims may have any stride). A size-0 dim counts as 1 in the
 * strides outside it, as pyframe.tensor's contiguous_strides makes them. */
static inline int pf_is_contiguous(const pf_tensor *t) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != s) return 0;
        s *= t->shape[d] > 1 ? t->shape[d] : 1;
    }
    return 1;
}

/* ---- threads (threads.c) ----------------------------------------------------------- */

/* Below this many elements a kernel stays serial: a fork/join costs about 0.6 us. */
#define PF_GRAIN 32768
/* Threads for the next parallel region: the set count, or 1 while the machine is found
 * oversubscribed (see pf_team below). */
int pf_threads(void);
/* Threads worth using for `work` elements: 1 below the grain, else pf_threads(). */
static inline int pf_threads_for(int64_t work) { return work < PF_GRAIN ? 1 : pf_threads(); }

/* Busy-machine detection. A fork/join waits for its slowest thread; when other processes
 * hold the cores, a worker may not run for a whole scheduler slice (milliseconds), and a
 * training step with dozens of regions collapses 100x. Each instrumented region records
 * its wall time and the CPU time its threads spent on their parts (what the work would
 * take serially). When the regions of a 16 ms window (of their own wall time) took longer
 * than serial work would have, pf_threads() answers 1 for a while (doubling while it
 * persists), then probes again. A lone hiccup (an interrupt, a nice-19 build taking its
 * slice) costs less than the other regions gained, and changes nothing. Serial work never
 * waits for anyone, and results never depend on the thread count, so the fallback only
 * changes speed. pf_run_team below instruments its region: start before it, each thread
 * enters and is done around its part, finish after it. */
typedef struct {
    int64_t t0, end; /* CLOCK_MONOTONIC ns: the region's start, its last thread's end (0: none ended) */
    int64_t work;    /* CPU ns its threads spent on their parts */
} pf_team;
void pf_team_start(pf_team *tm);
int64_t pf_team_enter(void); /* the calling thread's CPU clock, for pf_team_done */
void pf_team_done(pf_team *tm, int64_t entered);
void pf_team_finish(pf_team *tm);

/* Split [0, total) evenly: the [begin, end) share of thread `t` of `nt`. */
static inline void pf_split(int64_t total, int t, int nt, int64_t *begin, int64_t *end) {
    int64_t q = total / nt, r = total % nt;
    *begin = t * q + (t < r ? t : r);
    *end = *begin + q + (t < r);
}

/* fn(arg, t, T) as thread t of a team of T, with the busy-machine timing above. A serial
 * call (nt <= 1) runs fn directly: an OpenMP region, even `if (0)`, plus the team's clock
 * syscalls cost about 3 us, more than a small kernel itself. */
typedef void (*pf_team_fn)(void *arg, int t, int T);
static inline void pf_run_team(int nt, pf_team_fn fn, void *arg) {
#ifdef _OPENMP
    if (nt > 1) {
        pf_team tm;
        pf_team_start(&tm);
#pragma omp parallel num_threads(nt)
        {
            int64_t entered = pf_team_enter();
            fn(arg, omp_get_thread_num(), omp_get_num_threads());
            pf_team_done(&tm, entered);
        }
        pf_team_finish(&tm);
        return;
    }
#endif
    (void)nt;
    fn(arg, 0, 1);
}

/* fn(arg, begin, end) over [0, n) split evenly by the team granted (at most nt threads, never
 * more than n): each thread calls it once with its share, or the calling thread once with the
 * whole range when nt <= 1 (no OpenMP region then). Most kernels' parallel work has this shape;
 * work that needs the thread itself (per-thread scratch, a grid, barriers) uses pf_run_team. */
typedef void (*pf_range_fn)(void *arg, int64_t begin, int64_t end);
typedef struct {
    pf_range_fn fn;
    void *arg;
    int64_t n;
} pf_range_job;
static inline void pf_range_part(void *arg, int t, int T) {
    const pf_range_job *j = arg;
    int64_t b, e;
    pf_split(j->n, t, T, &b, &e);
    if (b < e) j->fn(j->arg, b, e);
}
static inline void pf_parallel_range(int nt, int64_t n, pf_range_fn fn, void *arg) {
    if (n <= 0) return;
    if (nt > n) nt = (int)n;
    if (nt <= 1) {
        fn(arg, 0, n);
        return;
    }
    pf_range_job j = {fn, arg, n};
    pf_run_team(nt, pf_range_part, &j);
}

/* ---- random draws for other kernels (random.c) ------------------------------------------ */

/* out[i] = 1 when the Bernoulli(prob) draw at counter e0 + i of seed is 1, else 0, for i < n: the
 * bytes pf_random(PF_RAND_BERNOULLI, ...) writes into a bool tensor at those counters */
void pf_bernoulli_bytes(uint64_t seed, uint64_t e0, int64_t n, double prob, unsigned char *out);

/* ---- GEMM for other kernels (gemm.c) ------------------------------------------------ */

/* One float32/float64 product C = A B, or C += A B with acc, in element strides; K > 0. */
typedef struct {
    int64_t M, N, K;
    const char *A, *B;
    char *C;
    int64_t rsa, csa, rsb, csb, rsc, csc;
    int acc;
} pf_gemm_prob;
/* The product on the calling thread, for kernels that run GEMMs inside their own parallel
 * loops (conv): no team, and ws (pf_gemm_ws_bytes(dtype, p) bytes, or NULL to allocate
 * here) is the caller's, so a thread reuses one buffer over its tiles. Returns
 * PF_ERR_NOMEM without a message (it may run on a worker thread). */
size_t pf_gemm_ws_bytes(int dtype, const pf_gemm_prob *p);
int pf_gemm_serial(int dtype, const pf_gemm_prob *p, void *ws);
/* A packed once into the kernels' panels and read by many products on any threads (a conv's
 * weight over all its tiles): pf_gemm_pack_bytes(dtype, M, K) bytes (0 for a bad dtype or size)
 * filled by pf_gemm_pack_a from A [M, K] at element strides (rsa, csa), then products
 * pf_gemm_serial_packed(dtype, p, pack, ws) with p->M, p->K the pack's (p->A is not read; ws
 * holds pf_gemm_packed_ws_bytes(dtype, p) or is NULL). The pack records its shape, dtype and
 * kernel set: a product that does not match them returns PF_ERR_VALUE, without a message. */
size_t pf_gemm_pack_bytes(int dtype, int64_t M, int64_t K);
/* 1 when pf_gemm_serial would pack p's A itself (not a small, skinny or vector product, and not
 * computed transposed), so a pack made once saves that work on every product after the first. */
int pf_gemm_packs_a(int dtype, const pf_gemm_prob *p);
int pf_gemm_pack_a(int dtype, int64_t M, int64_t K, const void *A, int64_t rsa, int64_t csa, void *dst,
                   size_t bytes);
/* piece `piece` of `pieces` of that pack (its share of the row panels; piece 0 writes the
 * header): one weight packed by several threads, all pieces before any product reads it */
int pf_gemm_pack_a_piece(int dtype, int64_t M, int64_t K, const void *A, int64_t rsa, int64_t csa, void *dst,
                         size_t bytes, int64_t piece, int64_t pieces);
size_t pf_gemm_packed_ws_bytes(int dtype, const pf_gemm_prob *p);
int pf_gemm_serial_packed(int dtype, const pf_gemm_prob *p, const void *pack, void *ws);
/* B built by the caller straight into panels (an implicit conv: no unfold buffer, no second copy):
 * pf_gemm_pack_kc gives the pack's K block and the panel width nr; then per K block pc (a
 * multiple of kc, kcur = min(kc, K - pc)), C [M, N] (rows rsc apart, contiguous) = (or += with
 * acc) the block's A times bp: cdiv(N, nr) panels of kcur x nr values, panel q at q * kcur * nr,
 * lanes past N finite (zeros). On the calling thread; PF_ERR_VALUE, no message, when the pack or
 * the block does not match. */
int pf_gemm_pack_kc(const void *pack, int64_t *kc, int *nr);
int pf_gemm_packed_block(int dtype, const void *pack, int64_t pc, int64_t kcur, const void *bp, int64_t N, void *c,
                         int64_t rsc, int acc);
/* AVX-512 only (x86 builds; call when pf_gemm_path() is "avx512"): dst[k * ds + i] =
 * rows[i][k] for k < n and i < nr, lanes [nr, keep) of each dst row zeroed, keep <= 16. */
void pf_transpose_rows_f32(const float *const *rows, int nr, int keep, int64_t n, float *dst, int64_t ds);

/* ---- strided walker (strided.c) ------------------------------------------------------ */

/* Walks the row-major index space of `shape` in runs along the last dim, keeping one
 * byte offset per operand in step. Dims are coalesced first, so a contiguous tensor is
 * a single run. Used by every family's general strided path:
 *
 *     pf_walk w; pf_walk_init(&w, ndim, shape, nops, strides, itemsizes);
 *     pf_walk_seek(&w, begin);
 *     for (int64_t pos = begin; pos < end; ) {
 *         int64_t n = pf_walk_run(&w, end - pos);  // run length, inner byte strides in w.inner
 *         kernel(base + w.off[k] ..., w.inner[k] ..., n);
 *         pos += n; pf_walk_advance(&w, n);
 *     }
 */
#define PF_WALK_MAX_OPS 4
typedef struct {
    int ndim, nops;
    int64_t shape[PF_MAX_DIMS];
    int64_t bstrides[PF_WALK_MAX_OPS][PF_MAX_DIMS]; /* byte strides */
    int64_t idx[PF_MAX_DIMS];
    int64_t off[PF_WALK_MAX_OPS];
    int64_t inner[PF_WALK_MAX_OPS];
    int64_t numel;
} pf_walk;

/* strides[k] are element strides of operand k over `shape`; sizes[k] its item size. */
void pf_walk_init(pf_walk *w, int ndim, const int64_t *shape, int nops,
                  const int64_t *const *strides, const size_t *sizes);
void pf_walk_seek(pf_walk *w, int64_t pos);
/* a walker over one tensor, its own shape and strides, at flat position pos */
void pf_walk_tensor(pf_walk *w, const pf_tensor *t, int64_t pos);
static inline int64_t pf_walk_run(const pf_walk *w, int64_t left) {
    if (w->ndim == 0) return left < 1 ? left : 1;
    int64_t n = w->shape[w->ndim - 1] - w->idx[w->ndim - 1];
    return n < left ? n : left;
}
void pf_walk_advance(pf_walk *w, int64_t n);



/* The positions i in [lo, hi), within [0, n), with 0 <= base + i*stride < size: conv and pool
 * solve a window's bounds once per kernel tap or output run, keeping their inner loops free
 * of branches. */
static inline void pf_valid_range(int64_t base, int64_t stride, int64_t size, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t l = base >= 0 ? 0 : (-base + stride - 1) / stride;
    int64_t h = size - 1 - base >= 0 ? (size - 1 - base) / stride + 1 : 0;
    if (h > n) h = n;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}
#endif
