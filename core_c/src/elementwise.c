/* Elementwise family: unary, binary, where, copy/cast, fill, arange/linspace.
 *
 * Each (op, dtype) pair is one "run" function that processes n elements with byte
 * strides; a table indexed by [op][dtype] holds them (NULL = unsupported combination).
 * The contiguous case is a separate loop in every run so gcc vectorizes it, once per
 * ISA through target_clones. Ops compute in float for float32/float16 and double for
 * float64; float16 is widened on load and rounded on store. */
#include <math.h>
#include <stdbool.h>
#include "core.h"
#include "special.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define PF_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PF_SIMD
#endif

typedef void (*unary_run)(const char *x, int64_t sx, char *y, int64_t sy, int64_t n, double p0, double p1, int *err);
typedef void (*binary_run)(const char *a, int64_t sa, const char *b, int64_t sb, char *o, int64_t so, int64_t n,
                           int *err);

/* ---- scalar math ---- */

static inline float pf_relu_f(float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); }
static inline double pf_relu_d(double x) { return x > 0.0 ? x : (x != x ? x : 0.0); }
/* sign(NaN) is 0, as torch's (so abs' derivative sign(x) is 0 at NaN too) */
static inline float pf_signf(float x) { return x > 0 ? 1.0f : (x < 0 ? -1.0f : 0.0f); }
static inline double pf_sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
/* NaN-propagating max/min, as torch.maximum and clamp */
static inline float pf_maxf(float a, float b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
static inline float pf_minf(float a, float b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
static inline double pf_maxd(double a, double b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
static inline double pf_mind(double a, double b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
/* Python-style modulo: the result takes the divisor's sign */
/* clamp(x + 3, 0, 6) / 6, NaN kept: hardsigmoid, and hardswish's gate */
static inline float pf_hardsigmoidf(float x) { return pf_minf(pf_maxf(x + 3, 0), 6) / 6; }
static inline double pf_hardsigmoid(double x) { return pf_mind(pf_maxd(x + 3, 0), 6) / 6; }

static inline float pf_remf(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline double pf_rem(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* floor(a / b) from the exact remainder, as Python and torch: floor of the rounded
 * quotient is wrong when rounding crosses an integer (1 // 0.1 is 9, not 10) */
#define PF_FLOORDIV(name, T, FMOD, FLOOR)                                   \
    static inline T name(T a, T b) {                                        \
        if (b == 0) return a / b;                                           \
        T mod = FMOD(a, b), div = (a - mod) / b;                            \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                   \
        if (div == 0) return (T)copysign(0.0, (double)(a / b));             \
        T fl = FLOOR(div);                                                  \
        return div - fl > (T)0.5 ? fl + 1 : fl;                             \
    }
PF_FLOORDIV(pf_floordivf, float, fmodf, floorf)
PF_FLOORDIV(pf_floordiv, double, fmod, floor)

/* torch.logit: log(x / (1 - x)), x first clamped to [eps, 1 - eps] when `clamp` (in torch's order: below eps
 * gives eps, else above 1 - eps gives 1 - eps; NaN stays NaN) */
#define PF_LOGIT_FN(name, T, LOG)                                            \
    static inline T name(T x, T eps, T clamp) {                              \
        if (clamp != 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);     \
        return LOG(x / (1 - x));                                             \
    }
PF_LOGIT_FN(pf_logitf, float, pf_logf)
PF_LOGIT_FN(pf_logit, double, log)

/* frexp's mantissa and exponent, one row each (0, inf and NaN: C's frexp, exponent 0) */
static inline float pf_frexp_mf(float x) { int e; return frexpf(x, &e); }
static inline double pf_frexp_m(double x) { int e; return frexp(x, &e); }
static inline float pf_frexp_ef(float x) { int e; frexpf(x, &e); return (float)e; }
static inline double pf_frexp_e(double x) { int e; frexp(x, &e); return (double)e; }

/* Integer ops that can fail set *err instead of trapping. */
static inline int64_t pf_ipow(int64_t a, int64_t b, int *err) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        *err = 1;
        return 0;
    }
    uint64_t r = 1, base = (uint64_t)a;
    for (uint64_t e = (uint64_t)b; e; e >>= 1, base *= base)
        if (e & 1) r *= base;
    return (int64_t)r; /* wraps on overflow, as torch */
}
/* A float to an exponent given as a double: a whole exponent float32 cannot hold (|p| past 2**24) is raised in
 * double, as float32 would round it to a neighbour of the other parity (-1 ** -(2**31 + 1) would be 1) */
static inline float pf_powf_scalar(float x, float p, double pd) {
    return (double)p != pd && pd == nearbyint(pd) ? (float)pow((double)x, pd) : powf(x, p);
}
static inline int64_t pf_ifloordiv(int64_t a, int64_t b, int *err) {
    if (b == 0) { *err = 2; return 0; }
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pf_irem(int64_t a, int64_t b, int *err) {
    if (b == 0) { *err = 2; return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t pf_iclamp(int64_t x, double lo, double hi) {
    if (!isnan(lo) && (double)x < lo) x = lo >= 9.2e18 ? INT64_MAX : (int64_t)ceil(lo);
    if (!isnan(hi) && (double)x > hi) x = hi <= -9.2e18 ? INT64_MIN : (int64_t)floor(hi);
    return x;
}

/* float -> integer without C's undefined behaviour for NaN and out-of-range values
 * (x86 gives INT_MIN there too) */
static inline int64_t pf_f2i64(double v) {
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}
static inline int32_t pf_f2i32(double v) { return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN; }

/* ---- run generators ---- */

#define LD_ID(v) (v)
#define LD_H(v) pf_h2f(v)
#define ST_ID(v) (v)
#define ST_H(v) pf_f2h(v)
#define LD_BF(v) pf_bf2f(v)
#define ST_BF(v) pf_f2bf(v)

/* UNARY(name, storage in, storage out, compute type, parameter type, load, store, expression of x, p0, p1);
 * integer runs take p0 and p1 as doubles (a cast of +-inf to an integer would be undefined) */
#define UNARY(name, TI, TO, CT, PT, LD, ST, EXPR)                                                        \
    PF_SIMD static void name(const char *xp, int64_t sx, char *yp, int64_t sy, int64_t n, double p0d,    \
                             double p1d, int *err) {                                                   \
        const PT p0 = (PT)p0d, p1 = (PT)p1d;                                                           \
        (void)p0; (void)p1; (void)err;                                                                 \
        if (sx == sizeof(TI) && sy == sizeof(TO)) {                                                    \
            const TI *restrict X = (const TI *)xp;                                                     \
            TO *restrict Y = (TO *)yp;                                                                 \
            for (int64_t i = 0; i < n; i++) { CT x = LD(X[i]); Y[i] = ST(EXPR); }                       \
        } else {                                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                          \
                CT x = LD(*(const TI *)(xp + i * sx));                                                 \
                *(TO *)(yp + i * sy) = ST(EXPR);                                                       \
            }                                                                                          \
        }                                                                                              \
    }

/* BINARY(name, TI, TO, CT, load, store, expr of a and b); fast loops for contiguous
 * operands and for a broadcast scalar on either side (x * 2, 1 - x). */
#define BINARY(name, TI, TO, CT, LD, ST, EXPR)                                                           \
    PF_SIMD static void name(const char *ap, int64_t sa, const char *bp, int64_t sb, char *op_,          \
                             int64_t so, int64_t n, int *err) {                                        \
        (void)err;                                                                                     \
        const TI *restrict A = (const TI *)ap, *restrict B = (const TI *)bp;                           \
        TO *restrict O = (TO *)op_;                                                                    \
        if (so == sizeof(TO) && sa == sizeof(TI) && sb == sizeof(TI)) {                                \
            for (int64_t i = 0; i < n; i++) { CT a = LD(A[i]), b = LD(B[i]); O[i] = ST(EXPR); }         \
        } else if (so == sizeof(TO) && sa == sizeof(TI) && sb == 0) {                                  \
            const CT b = LD(B[0]);                                                                     \
            for (int64_t i = 0; i < n; i++) { CT a = LD(A[i]); O[i] = ST(EXPR); }                       \
        } else if (so == sizeof(TO) && sa == 0 && sb == sizeof(TI)) {                                  \
            const CT a = LD(A[0]);                                                                     \
            for (int64_t i = 0; i < n; i++) { CT b = LD(B[i]); O[i] = ST(EXPR); }                       \
        } else {                                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                          \
                CT a = LD(*(const TI *)(ap + i * sa)), b = LD(*(const TI *)(bp + i * sb));             \
                *(TO *)(op_ + i * so) = ST(EXPR);                                                      \
            }                                                                                          \
        }                                                                                              \
    }

/* ---- the op tables: one row per op ----
 *
 * X(op code, name, dtypes, float expression, double expression, integer expression[, bool expression]).
 * The float expression serves float32 and float16 (widened to float), the integer one int64 and int32
 * (computed in int64, wrapping: unsigned math avoids C's undefined overflow), the bool one bool. dtypes:
 *   F    floating inputs only
 *   FI   floating and integer
 *   FIB  floating, integer and bool (binary only)
 *   P    every dtype, with a bool result: the float and double expressions for floating inputs, the
 *        integer one for integers and bool
 * `_` fills a column the dtypes do not read. An op is its code in pyframe_api.h plus its row here: the
 * row makes its kernels, its table entries and its name (designated initialisers, so order cannot
 * drift), and the count assertions below fail the build when a code has no row. */

/* unary: x, p0 and p1 in scope */
#define UNARY_OPS(X)                                                                                        \
    X(PF_NEG, neg, FI, -x, -x, (int64_t)(0 - (uint64_t)x))                                                 \
    X(PF_ABS, abs, FI, fabsf(x), fabs(x), x < 0 ? (int64_t)(0 - (uint64_t)x) : x)                         \
    X(PF_EXP, exp, F, pf_expf(x), exp(x), _)                                                               \
    X(PF_LOG, log, F, pf_logf(x), log(x), _)                                                               \
    X(PF_SQRT, sqrt, F, sqrtf(x), sqrt(x), _)                                                              \
    X(PF_TANH, tanh, F, pf_tanhf(x), tanh(x), _)                                                           \
    X(PF_SIGMOID, sigmoid, F, pf_sigmoidf(x), pf_sigmoid(x), _)                                            \
    X(PF_RELU, relu, FI, pf_relu_f(x), pf_relu_d(x), x > 0 ? x : 0)                                        \
    X(PF_SIN, sin, F, sinf(x), sin(x), _)                                                                  \
    X(PF_COS, cos, F, cosf(x), cos(x), _)                                                                  \
    X(PF_SIGN, sign, FI, pf_signf(x), pf_sign(x), (x > 0) - (x < 0))                                       \
    X(PF_RECIPROCAL, reciprocal, F, 1.0f / x, 1.0 / x, _)                                                  \
    X(PF_SQUARE, square, FI, x * x, x * x, (int64_t)((uint64_t)x * (uint64_t)x))                           \
    X(PF_ERF, erf, F, pf_erff(x), erf(x), _)                                                               \
    X(PF_CLAMP, clamp, FI, pf_minf(pf_maxf(x, p0), p1), pf_mind(pf_maxd(x, p0), p1), pf_iclamp(x, p0, p1)) \
    X(PF_POW_SCALAR, pow_scalar, FI, pf_powf_scalar(x, p0, p0d), pow(x, p0), pf_ipow(x, (int64_t)p0, err))                \
    X(PF_RPOW_SCALAR, rpow_scalar, F, powf(p0, x), pow(p0, x), _)                                          \
    X(PF_ISNAN, isnan, P, x != x, x != x, x != x)                                                          \
    X(PF_ISINF, isinf, P, isinf(x) != 0, isinf(x) != 0, x != x)                                            \
    X(PF_ISFINITE, isfinite, P, isfinite(x) != 0, isfinite(x) != 0, x == x)                                \
    X(PF_LOGICAL_NOT, logical_not, P, x == 0, x == 0, x == 0)                                              \
    X(PF_LOG1P, log1p, F, pf_log1pf(x), log1p(x), _)                                                       \
    X(PF_EXPM1, expm1, F, pf_expm1f(x), expm1(x), _)                                                          \
    X(PF_FLOOR, floor, F, floorf(x), floor(x), _)                                                          \
    X(PF_CEIL, ceil, F, ceilf(x), ceil(x), _)                                                              \
    X(PF_ROUND, round, F, nearbyintf(x), nearbyint(x), _)                                                  \
    X(PF_RSQRT, rsqrt, F, 1.0f / sqrtf(x), 1.0 / sqrt(x), _)                                               \
    X(PF_TAN, tan, F, tanf(x), tan(x), _)                                                                  \
    X(PF_SINH, sinh, F, sinhf(x), sinh(x), _)                                                              \
    X(PF_COSH, cosh, F, coshf(x), cosh(x), _)                                                              \
    X(PF_ASIN, asin, F, asinf(x), asin(x), _)                                                              \
    X(PF_ACOS, acos, F, acosf(x), acos(x), _)                                                              \
    X(PF_ATAN, atan, F, atanf(x), atan(x), _)                                                              \
    X(PF_ASINH, asinh, F, asinhf(x), asinh(x), _)                                                          \
    X(PF_ACOSH, acosh, F, acoshf(x), acosh(x), _)                                                          \
    X(PF_ATANH, atanh, F, atanhf(x), atanh(x), _)                                                          \
    X(PF_LOG2, log2, F, log2f(x), log2(x), _)                                                              \
    X(PF_LOG10, log10, F, log10f(x), log10(x), _)                                                          \
    X(PF_EXP2, exp2, F, exp2f(x), exp2(x), _)                                                              \
    X(PF_ERFC, erfc, F, erfcf(x), erfc(x), _)                                                              \
    X(PF_TRUNC, trunc, F, truncf(x), trunc(x), _)                                                          \
    X(PF_LOGIT, logit, F, pf_logitf(x, p0, p1), pf_logit(x, p0, p1), _)                                   \
    X(PF_LGAMMA, lgamma, F, lgammaf(x), lgamma(x), _)                                                      \
    X(PF_DIGAMMA, digamma, F, pf_digammaf(x), pf_digamma(x), _)                                            \
    X(PF_TRIGAMMA, trigamma, F, pf_trigammaf(x), pf_trigamma(x), _)                                        \
    X(PF_ERFINV, erfinv, F, pf_erfinvf(x), pf_erfinv(x), _)                                                \
    X(PF_I0, i0, F, pf_i0f(x), pf_i0(x), _)                                                                \
    X(PF_I0E, i0e, F, pf_i0ef(x), pf_i0e(x), _)                                                            \
    X(PF_I1, i1, F, pf_i1f(x), pf_i1(x), _)                                                                \
    X(PF_I1E, i1e, F, pf_i1ef(x), pf_i1e(x), _)                                                            \
    X(PF_BESSEL_J0, bessel_j0, F, pf_bessel_j0f(x), pf_bessel_j0(x), _) \
    X(PF_BESSEL_J1, bessel_j1, F, pf_bessel_j1f(x), pf_bessel_j1(x), _) \
    X(PF_BESSEL_Y0, bessel_y0, F, pf_bessel_y0f(x), pf_bessel_y0(x), _) \
    X(PF_BESSEL_Y1, bessel_y1, F, pf_bessel_y1f(x), pf_bessel_y1(x), _) \
    X(PF_POLYGAMMA, polygamma, F, pf_polygammaf(x, p0), pf_polygamma(x, p0), _) \
    X(PF_NDTRI, ndtri, F, pf_ndtrif(x), pf_ndtri(x), _) \
    X(PF_ERFCX, erfcx, F, pf_erfcxf(x), pf_erfcx(x), _) \
    X(PF_AIRY_AI, airy_ai, F, pf_airy_aif(x), pf_airy_ai(x), _) \
    X(PF_BESSEL_K0, modified_bessel_k0, F, pf_modified_bessel_k0f(x), pf_modified_bessel_k0(x), _) \
    X(PF_BESSEL_K1, modified_bessel_k1, F, pf_modified_bessel_k1f(x), pf_modified_bessel_k1(x), _) \
    X(PF_BESSEL_K0E, scaled_modified_bessel_k0, F, pf_scaled_modified_bessel_k0f(x), pf_scaled_modified_bessel_k0(x), _) \
    X(PF_BESSEL_K1E, scaled_modified_bessel_k1, F, pf_scaled_modified_bessel_k1f(x), pf_scaled_modified_bessel_k1(x), _) \
    X(PF_FREXP_MANTISSA, frexp_mantissa, F, pf_frexp_mf(x), pf_frexp_m(x), _) \
    X(PF_FREXP_EXPONENT, frexp_exponent, F, pf_frexp_ef(x), pf_frexp_e(x), _) \
    X(PF_LEAKY_RELU, leaky_relu, F, x > 0 ? x : x * p0, x > 0 ? x : x * p0, _) \
    X(PF_ELU, elu, F, x <= 0 ? pf_expm1f(x * p1) * p0 : x, x <= 0 ? expm1(x * p1) * p0 : x, _) \
    X(PF_SELU, selu, F, x <= 0 ? pf_expm1f(x) * (float)(PF_SELU_ALPHA * PF_SELU_SCALE) : x * (float)PF_SELU_SCALE, \
      x <= 0 ? expm1(x) * (PF_SELU_ALPHA * PF_SELU_SCALE) : x * PF_SELU_SCALE, _) \
    X(PF_SOFTPLUS, softplus, F, x * p0 > p1 ? x : pf_log1pf(pf_expf(x * p0)) / p0, \
      x * p0 > p1 ? x : log1p(exp(x * p0)) / p0, _) \
    X(PF_MISH, mish, F, pf_mishf(x), pf_mish(x), _) \
    X(PF_SILU, silu, F, x * pf_sigmoidf(x), x * pf_sigmoid(x), _) \
    X(PF_HARDSIGMOID, hardsigmoid, F, pf_hardsigmoidf(x), pf_hardsigmoid(x), _) \
    X(PF_HARDSWISH, hardswish, F, x * pf_hardsigmoidf(x), x * pf_hardsigmoid(x), _)

/* binary: a and b in scope */
#define BINARY_OPS(X)                                                                                       \
    X(PF_ADD, add, FIB, a + b, a + b, (int64_t)((uint64_t)a + (uint64_t)b), a | b)                        \
    X(PF_SUB, sub, FI, a - b, a - b, (int64_t)((uint64_t)a - (uint64_t)b), _)                             \
    X(PF_MUL, mul, FIB, a * b, a * b, (int64_t)((uint64_t)a * (uint64_t)b), a & b)                        \
    X(PF_DIV, div, F, a / b, a / b, _, _)                                                                  \
    X(PF_POW, pow, FI, powf(a, b), pow(a, b), pf_ipow(a, b, err), _)                                       \
    X(PF_MAXIMUM, maximum, FIB, pf_maxf(a, b), pf_maxd(a, b), a > b ? a : b, a | b)                        \
    X(PF_MINIMUM, minimum, FIB, pf_minf(a, b), pf_mind(a, b), a < b ? a : b, a & b)                        \
    X(PF_EQ, eq, P, a == b, a == b, a == b, _)                                                             \
    X(PF_NE, ne, P, a != b, a != b, a != b, _)                                                             \
    X(PF_LT, lt, P, a < b, a < b, a < b, _)                                                                \
    X(PF_LE, le, P, a <= b, a <= b, a <= b, _)                                                             \
    X(PF_GT, gt, P, a > b, a > b, a > b, _)                                                                \
    X(PF_GE, ge, P, a >= b, a >= b, a >= b, _)                                                             \
    X(PF_LOGICAL_AND, logical_and, P, (a != 0) & (b != 0), (a != 0) & (b != 0), (a != 0) & (b != 0), _)  \
    X(PF_LOGICAL_OR, logical_or, P, (a != 0) | (b != 0), (a != 0) | (b != 0), (a != 0) | (b != 0), _)     \
    X(PF_LOGICAL_XOR, logical_xor, P, (a != 0) ^ (b != 0), (a != 0) ^ (b != 0), (a != 0) ^ (b != 0), _)  \
    X(PF_ATAN2, atan2, F, atan2f(a, b), atan2(a, b), _, _)                                                 \
    X(PF_REMAINDER, remainder, FI, pf_remf(a, b), pf_rem(a, b), pf_irem(a, b, err), _)                     \
    X(PF_FLOOR_DIVIDE, floor_divide, FI, pf_floordivf(a, b), pf_floordiv(a, b), pf_ifloordiv(a, b, err), _) \
    X(PF_RELU_BACKWARD, relu_backward, F, b <= 0 ? 0 : a, b <= 0 ? 0 : a, _, _)                            \
    X(PF_TANH_BACKWARD, tanh_backward, F, a * (1 - b * b), a * (1 - b * b), _, _)                          \
    X(PF_SIGMOID_BACKWARD, sigmoid_backward, F, a * (b * (1 - b)), a * (b * (1 - b)), _, _) \
    X(PF_ZETA, zeta, F, pf_zetaf(a, b), pf_zeta(a, b), _, _) \
    X(PF_NEXTAFTER, nextafter, F, nextafterf(a, b), nextafter(a, b), _, _) \
    X(PF_CHEBYSHEV_T, chebyshev_polynomial_t, F, pf_chebyshev_polynomial_tf(a, b), pf_chebyshev_polynomial_t(a, b), _, _) \
    X(PF_CHEBYSHEV_U, chebyshev_polynomial_u, F, pf_chebyshev_polynomial_uf(a, b), pf_chebyshev_polynomial_u(a, b), _, _) \
    X(PF_CHEBYSHEV_V, chebyshev_polynomial_v, F, pf_chebyshev_polynomial_vf(a, b), pf_chebyshev_polynomial_v(a, b), _, _) \
    X(PF_CHEBYSHEV_W, chebyshev_polynomial_w, F, pf_chebyshev_polynomial_wf(a, b), pf_chebyshev_polynomial_w(a, b), _, _) \
    X(PF_SHIFTED_CHEBYSHEV_T, shifted_chebyshev_polynomial_t, F, pf_shifted_chebyshev_polynomial_tf(a, b), pf_shifted_chebyshev_polynomial_t(a, b), _, _) \
    X(PF_SHIFTED_CHEBYSHEV_U, shifted_chebyshev_polynomial_u, F, pf_shifted_chebyshev_polynomial_uf(a, b), pf_shifted_chebyshev_polynomial_u(a, b), _, _) \
    X(PF_SHIFTED_CHEBYSHEV_V, shifted_chebyshev_polynomial_v, F, pf_shifted_chebyshev_polynomial_vf(a, b), pf_shifted_chebyshev_polynomial_v(a, b), _, _) \
    X(PF_SHIFTED_CHEBYSHEV_W, shifted_chebyshev_polynomial_w, F, pf_shifted_chebyshev_polynomial_wf(a, b), pf_shifted_chebyshev_polynomial_w(a, b), _, _) \
    X(PF_HERMITE_H, hermite_polynomial_h, F, pf_hermite_polynomial_hf(a, b), pf_hermite_polynomial_h(a, b), _, _) \
    X(PF_HERMITE_HE, hermite_polynomial_he, F, pf_hermite_polynomial_hef(a, b), pf_hermite_polynomial_he(a, b), _, _) \
    X(PF_LAGUERRE_L, laguerre_polynomial_l, F, pf_laguerre_polynomial_lf(a, b), pf_laguerre_polynomial_l(a, b), _, _) \
    X(PF_LEGENDRE_P, legendre_polynomial_p, F, pf_legendre_polynomial_pf(a, b), pf_legendre_polynomial_p(a, b), _, _) \
    X(PF_IGAMMA, igamma, F, pf_igammaf(a, b), pf_igamma(a, b), _, _) \
    X(PF_IGAMMAC, igammac, F, pf_igammacf(a, b), pf_igammac(a, b), _, _) \
    X(PF_BCE_WITH_LOGITS, bce_with_logits, F, (1 - b) * a + (pf_log1pf(pf_expf(-fabsf(a))) + pf_maxf(-a, 0)), \
      (1 - b) * a + (log1p(exp(-fabs(a))) + pf_maxd(-a, 0)), _, _) \
    X(PF_BCE_WITH_LOGITS_BACKWARD, bce_with_logits_backward, F, pf_sigmoidf(a) - b, pf_sigmoid(a) - b, _, _)

/* kernels: one run per (op, dtype) the row's dtypes allow */
#define UN_F(nm, fe, de, ie)                                                  \
    UNARY(un_##nm##_f32, float, float, float, float, LD_ID, ST_ID, fe)        \
    UNARY(un_##nm##_f16, uint16_t, uint16_t, float, float, LD_H, ST_H, fe)    \
    UNARY(un_##nm##_bf16, uint16_t, uint16_t, float, float, LD_BF, ST_BF, fe) \
    UNARY(un_##nm##_f64, double, double, double, double, LD_ID, ST_ID, de)
#define UN_FI(nm, fe, de, ie)                                                 \
    UN_F(nm, fe, de, ie)                                                      \
    UNARY(un_##nm##_i64, int64_t, int64_t, int64_t, double, LD_ID, ST_ID, ie) \
    UNARY(un_##nm##_i32, int32_t, int32_t, int64_t, double, LD_ID, (int32_t), ie) \
    UNARY(un_##nm##_i16, int16_t, int16_t, int64_t, double, LD_ID, (int16_t), ie) \
    UNARY(un_##nm##_i8, int8_t, int8_t, int64_t, double, LD_ID, (int8_t), ie)     \
    UNARY(un_##nm##_u8, uint8_t, uint8_t, int64_t, double, LD_ID, (uint8_t), ie)
#define UN_P(nm, fe, de, ie)                                                  \
    UNARY(un_##nm##_f32, float, uint8_t, float, float, LD_ID, ST_ID, fe)      \
    UNARY(un_##nm##_f16, uint16_t, uint8_t, float, float, LD_H, ST_ID, fe)    \
    UNARY(un_##nm##_bf16, uint16_t, uint8_t, float, float, LD_BF, ST_ID, fe)  \
    UNARY(un_##nm##_f64, double, uint8_t, double, double, LD_ID, ST_ID, de)   \
    UNARY(un_##nm##_i64, int64_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie) \
    UNARY(un_##nm##_i32, int32_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie) \
    UNARY(un_##nm##_i16, int16_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie) \
    UNARY(un_##nm##_i8, int8_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie)   \
    UNARY(un_##nm##_u8, uint8_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie)  \
    UNARY(un_##nm##_b8, uint8_t, uint8_t, int64_t, double, LD_ID, ST_ID, ie)
#define UN_KERNELS(op, nm, dtypes, fe, de, ie) UN_##dtypes(nm, fe, de, ie)
UNARY_OPS(UN_KERNELS)

#define BIN_F(nm, fe, de, ie, be)                                             \
    BINARY(bin_##nm##_f32, float, float, float, LD_ID, ST_ID, fe)             \
    BINARY(bin_##nm##_f16, uint16_t, uint16_t, float, LD_H, ST_H, fe)         \
    BINARY(bin_##nm##_bf16, uint16_t, uint16_t, float, LD_BF, ST_BF, fe)      \
    BINARY(bin_##nm##_f64, double, double, double, LD_ID, ST_ID, de)
#define BIN_FI(nm, fe, de, ie, be)                                            \
    BIN_F(nm, fe, de, ie, be)                                                 \
    BINARY(bin_##nm##_i64, int64_t, int64_t, int64_t, LD_ID, ST_ID, ie)       \
    BINARY(bin_##nm##_i32, int32_t, int32_t, int64_t, LD_ID, (int32_t), ie)   \
    BINARY(bin_##nm##_i16, int16_t, int16_t, int64_t, LD_ID, (int16_t), ie)   \
    BINARY(bin_##nm##_i8, int8_t, int8_t, int64_t, LD_ID, (int8_t), ie)       \
    BINARY(bin_##nm##_u8, uint8_t, uint8_t, int64_t, LD_ID, (uint8_t), ie)
#define BIN_FIB(nm, fe, de, ie, be)                                           \
    BIN_FI(nm, fe, de, ie, be)                                                \
    BINARY(bin_##nm##_b8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, be)
#define BIN_P(nm, fe, de, ie, be)                                             \
    BINARY(bin_##nm##_f32, float, uint8_t, float, LD_ID, ST_ID, fe)           \
    BINARY(bin_##nm##_f16, uint16_t, uint8_t, float, LD_H, ST_ID, fe)         \
    BINARY(bin_##nm##_bf16, uint16_t, uint8_t, float, LD_BF, ST_ID, fe)      \
    BINARY(bin_##nm##_f64, double, uint8_t, double, LD_ID, ST_ID, de)         \
    BINARY(bin_##nm##_i64, int64_t, uint8_t, int64_t, LD_ID, ST_ID, ie)       \
    BINARY(bin_##nm##_i32, int32_t, uint8_t, int64_t, LD_ID, ST_ID, ie)       \
    BINARY(bin_##nm##_i16, int16_t, uint8_t, int64_t, LD_ID, ST_ID, ie)       \
    BINARY(bin_##nm##_i8, int8_t, uint8_t, int64_t, LD_ID, ST_ID, ie)         \
    BINARY(bin_##nm##_u8, uint8_t, uint8_t, int64_t, LD_ID, ST_ID, ie)        \
    BINARY(bin_##nm##_b8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, ie)
#define BIN_KERNELS(op, nm, dtypes, fe, de, ie, be) BIN_##dtypes(nm, fe, de, ie, be)
BINARY_OPS(BIN_KERNELS)

/* tables: [op][dtype] -> run (NULL: unsupported), names, whether the result is bool */
#define FLOAT_RUNS(p, nm) \
    [PF_FLOAT32] = p##nm##_f32, [PF_FLOAT64] = p##nm##_f64, [PF_FLOAT16] = p##nm##_f16, [PF_BFLOAT16] = p##nm##_bf16
#define INT_RUNS(p, nm) \
    [PF_INT64] = p##nm##_i64, [PF_INT32] = p##nm##_i32, [PF_INT16] = p##nm##_i16, [PF_INT8] = p##nm##_i8, \
    [PF_UINT8] = p##nm##_u8
#define RUNS_F(p, nm) {FLOAT_RUNS(p, nm)}
#define RUNS_FI(p, nm) {FLOAT_RUNS(p, nm), INT_RUNS(p, nm)}
#define RUNS_FIB(p, nm) {FLOAT_RUNS(p, nm), INT_RUNS(p, nm), [PF_BOOL] = p##nm##_b8}
#define RUNS_P RUNS_FIB
#define BOOL_RESULT_F 0
#define BOOL_RESULT_FI 0
#define BOOL_RESULT_FIB 0
#define BOOL_RESULT_P 1
#define COUNT_ROW(...) +1

#define UN_RUNS(op, nm, dtypes, ...) [op] = RUNS_##dtypes(un_, nm),
#define UN_NAME(op, nm, ...) [op] = #nm,
#define UN_BOOL(op, nm, dtypes, ...) [op] = BOOL_RESULT_##dtypes,
static const unary_run unary_table[PF_NUM_UNARY][PF_NUM_DTYPES] = {UNARY_OPS(UN_RUNS)};
static const char *const unary_name[PF_NUM_UNARY] = {UNARY_OPS(UN_NAME)};
static const bool unary_bool[PF_NUM_UNARY] = {UNARY_OPS(UN_BOOL)};
_Static_assert(0 UNARY_OPS(COUNT_ROW) == PF_NUM_UNARY, "a unary op code in pyframe_api.h has no row in UNARY_OPS");

#define BIN_RUNS(op, nm, dtypes, ...) [op] = RUNS_##dtypes(bin_, nm),
#define BIN_BOOL(op, nm, dtypes, ...) [op] = BOOL_RESULT_##dtypes,
static const binary_run binary_table[PF_NUM_BINARY][PF_NUM_DTYPES] = {BINARY_OPS(BIN_RUNS)};
static const char *const binary_name[PF_NUM_BINARY] = {BINARY_OPS(UN_NAME)};
static const bool binary_bool[PF_NUM_BINARY] = {BINARY_OPS(BIN_BOOL)};
_Static_assert(0 BINARY_OPS(COUNT_ROW) == PF_NUM_BINARY, "a binary op code in pyframe_api.h has no row in BINARY_OPS");

static int unary_out_dtype(int op, int dt) { return unary_bool[op] ? PF_BOOL : dt; }
static int binary_out_dtype(int op, int dt) { return binary_bool[op] ? PF_BOOL : dt; }

static int int_error(int err, const char *op) {
    if (err == 1) return pf_error(PF_ERR_RUNTIME, "%s: integers to negative integer powers are not allowed", op);
    return pf_error(PF_ERR_RUNTIME, "%s: integer division by zero", op);
}

/* ---- drivers ---- */

/* A kernel's operands: bases, and for the contiguous entries each operand's stride in bytes (0: a broadcast
 * scalar). `un` or `bin` is set; a failing integer op stores its error code in err. */
typedef struct {
    unary_run un;
    binary_run bin;
    const char *a, *b;
    char *o;
    int64_t sa, sb, so;
    double p0, p1;
    int err;
} kernel_job;

static void kernel_failed(kernel_job *j, int err) {
    if (err) __atomic_store_n(&j->err, err, __ATOMIC_RELAXED);
}

/* elements [s, e) of contiguous operands */
static void contig_range(void *arg, int64_t s, int64_t e) {
    kernel_job *j = arg;
    int err = 0;
    if (j->un) j->un(j->a + s * j->sa, j->sa, j->o + s * j->so, j->so, e - s, j->p0, j->p1, &err);
    else j->bin(j->a + s * j->sa, j->sa, j->b + s * j->sb, j->sb, j->o + s * j->so, j->so, e - s, &err);
    kernel_failed(j, err);
}

static int run_contig(kernel_job *j, int64_t n, const char *name) {
    pf_parallel_range(pf_threads_for(n), n, contig_range, j);
    return j->err ? int_error(j->err, name) : PF_OK;
}

/* One run of a strided walk: operand k at off[k], stepping inner[k] bytes, for len elements. */
typedef void (*walk_fn)(void *arg, const int64_t *off, const int64_t *inner, int64_t len);
typedef struct {
    pf_walk w;
    walk_fn fn;
    void *arg;
} walk_job;

static void walk_range(void *arg, int64_t begin, int64_t end) {
    const walk_job *j = arg;
    pf_walk w = j->w;
    pf_walk_seek(&w, begin);
    for (int64_t pos = begin; pos < end;) {
        int64_t len = pf_walk_run(&w, end - pos);
        j->fn(j->arg, w.off, w.inner, len);
        pos += len;
        pf_walk_advance(&w, len);
    }
}

/* fn over every run of the walk, in parallel: each thread owns a contiguous slice of output
 * positions, so no two threads write one element. */
static void parallel_walk(const pf_walk *w, walk_fn fn, void *arg) {
    walk_job j = {*w, fn, arg};
    pf_parallel_range(pf_threads_for(w->numel), w->numel, walk_range, &j);
}

static void kernel_walk(void *arg, const int64_t *off, const int64_t *inner, int64_t len) {
    kernel_job *j = arg;
    int err = 0;
    if (j->un) j->un(j->a + off[0], inner[0], j->o + off[1], inner[1], len, j->p0, j->p1, &err);
    else j->bin(j->a + off[0], inner[0], j->b + off[1], inner[1], j->o + off[2], inner[2], len, &err);
    kernel_failed(j, err);
}

/* The walk over out's elements with x broadcast to them (unary ops, copy): operand 0 is x, 1 is out. */
static int walk_into(pf_walk *w, const pf_tensor *x, const pf_tensor *out, const char *what) {
    int64_t bs[PF_MAX_DIMS];
    int rc = pf_broadcast_strides(x, out->ndim, out->shape, bs, what);
    if (rc) return rc;
    const int64_t *st[2] = {bs, out->strides};
    size_t sz[2] = {pf_dtype_size[x->dtype], pf_dtype_size[out->dtype]};
    pf_walk_init(w, out->ndim, out->shape, 2, st, sz);
    return PF_OK;
}

int pf_unary(int op, const pf_tensor *x, pf_tensor *out, double p0, double p1) {
    int rc;
    if ((rc = pf_check(x, "unary input")) || (rc = pf_check(out, "unary output"))) return rc;
    if (op < 0 || op >= PF_NUM_UNARY) return pf_error(PF_ERR_VALUE, "unknown unary op code %d", op);
    unary_run run = unary_table[op][x->dtype];
    if (!run) return pf_error(PF_ERR_TYPE, "%s: unsupported dtype %s", unary_name[op], pf_dtype_name[x->dtype]);
    if (out->dtype != unary_out_dtype(op, x->dtype))
        return pf_error(PF_ERR_TYPE, "%s: output dtype must be %s, got %s", unary_name[op],
                        pf_dtype_name[unary_out_dtype(op, x->dtype)], pf_dtype_name[out->dtype]);
    pf_walk w;
    if ((rc = walk_into(&w, x, out, "input"))) return rc;
    kernel_job j = {.un = run, .a = x->data, .o = out->data, .p0 = p0, .p1 = p1};
    parallel_walk(&w, kernel_walk, &j);
    return j.err ? int_error(j.err, unary_name[op]) : PF_OK;
}

int pf_unary_contig(int op, int dtype, const void *x, void *out, int64_t n) {
    if (op < 0 || op >= PF_NUM_UNARY) return pf_error(PF_ERR_VALUE, "unknown unary op code %d", op);
    if (dtype < 0 || dtype >= PF_NUM_DTYPES) return pf_error(PF_ERR_TYPE, "unknown dtype code %d", dtype);
    if (n < 0 || (n > 0 && (!x || !out))) return pf_error(PF_ERR_VALUE, "unary: bad buffer (n=%lld)", (long long)n);
    unary_run run = unary_table[op][dtype];
    if (!run) return pf_error(PF_ERR_TYPE, "%s: unsupported dtype %s", unary_name[op], pf_dtype_name[dtype]);
    kernel_job j = {.un = run, .a = x, .o = out, .sa = pf_dtype_size[dtype],
                    .so = pf_dtype_size[unary_out_dtype(op, dtype)]};
    return run_contig(&j, n, unary_name[op]);
}

static int binary_check(int op, int da, int db, int dout) {
    if (op < 0 || op >= PF_NUM_BINARY) return pf_error(PF_ERR_VALUE, "unknown binary op code %d", op);
    if (da != db)
        return pf_error(PF_ERR_TYPE, "%s: operands must have one dtype, got %s and %s", binary_name[op],
                        pf_dtype_name[da], pf_dtype_name[db]);
    if (!binary_table[op][da])
        return pf_error(PF_ERR_TYPE, "%s: unsupported dtype %s", binary_name[op], pf_dtype_name[da]);
    if (dout != binary_out_dtype(op, da))
        return pf_error(PF_ERR_TYPE, "%s: output dtype must be %s, got %s", binary_name[op],
                        pf_dtype_name[binary_out_dtype(op, da)], pf_dtype_name[dout]);
    return PF_OK;
}

int pf_binary(int op, const pf_tensor *a, const pf_tensor *b, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(a, "first operand")) || (rc = pf_check(b, "second operand")) ||
        (rc = pf_check(out, "output")))
        return rc;
    if ((rc = binary_check(op, a->dtype, b->dtype, out->dtype))) return rc;
    int64_t sa[PF_MAX_DIMS], sb[PF_MAX_DIMS];
    if ((rc = pf_broadcast_strides(a, out->ndim, out->shape, sa, "first operand")) ||
        (rc = pf_broadcast_strides(b, out->ndim, out->shape, sb, "second operand")))
        return rc;
    const int64_t *st[3] = {sa, sb, out->strides};
    size_t sz[3] = {pf_dtype_size[a->dtype], pf_dtype_size[a->dtype], pf_dtype_size[out->dtype]};
    pf_walk w;
    pf_walk_init(&w, out->ndim, out->shape, 3, st, sz);
    kernel_job j = {.bin = binary_table[op][a->dtype], .a = a->data, .b = b->data, .o = out->data};
    parallel_walk(&w, kernel_walk, &j);
    return j.err ? int_error(j.err, binary_name[op]) : PF_OK;
}

int pf_binary_contig(int op, int dtype, const void *a, const void *b, void *out, int64_t n) {
    if (dtype < 0 || dtype >= PF_NUM_DTYPES) return pf_error(PF_ERR_TYPE, "unknown dtype code %d", dtype);
    int rc = binary_check(op, dtype, dtype, op >= 0 && op < PF_NUM_BINARY ? binary_out_dtype(op, dtype) : dtype);
    if (rc) return rc;
    if (n < 0 || (n > 0 && (!a || !b || !out))) return pf_error(PF_ERR_VALUE, "binary: bad buffer (n=%lld)", (long long)n);
    int64_t si = pf_dtype_size[dtype];
    kernel_job j = {.bin = binary_table[op][dtype], .a = a, .b = b, .o = out, .sa = si, .sb = si,
                    .so = pf_dtype_size[binary_out_dtype(op, dtype)]};
    return run_contig(&j, n, binary_name[op]);
}

/* The scalar operand is read through a stride of 0: the kernels' broadcast loops. */
int pf_binary_scalar(int op, int dtype, const void *a, double s, void *out, int64_t n, int scalar_first) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "binary with a scalar: float32 or float64 only, got dtype code %d", dtype);
    if (op < 0 || op >= PF_NUM_BINARY) return pf_error(PF_ERR_VALUE, "unknown binary op code %d", op);
    int rc = binary_check(op, dtype, dtype, binary_out_dtype(op, dtype));
    if (rc) return rc;
    if (n < 0 || (n > 0 && (!a || !out))) return pf_error(PF_ERR_VALUE, "binary: bad buffer (n=%lld)", (long long)n);
    union {
        float f;
        double d;
    } v;
    if (dtype == PF_FLOAT32) v.f = (float)s;
    else v.d = s;
    const char *b = (const char *)&v;
    int64_t si = pf_dtype_size[dtype], sb = 0;
    if (op == PF_POW && !scalar_first && s == 2.0) op = PF_MUL, b = a, sb = si; /* x ** 2 is x * x */
    else if (op == PF_POW && !scalar_first) { /* the exponent stays a double (pf_powf_scalar) */
        kernel_job j = {.un = unary_table[PF_POW_SCALAR][dtype], .a = a, .o = out, .sa = si, .so = si, .p0 = s};
        return run_contig(&j, n, binary_name[op]);
    }
    kernel_job j = {.bin = binary_table[op][dtype], .a = a, .b = b, .o = out, .sa = si, .sb = sb,
                    .so = pf_dtype_size[binary_out_dtype(op, dtype)]};
    if (scalar_first) j.a = b, j.sa = sb, j.b = a, j.sb = si;
    return run_contig(&j, n, binary_name[op]);
}

/* ---- where, copy, fill ---- */

/* Moves one element of `size` bytes; where and same-dtype copy need no arithmetic. */
static inline void move_elem(char *d, const char *s, size_t size) {
    switch (size) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    default: *(uint64_t *)d = *(const uint64_t *)s; break;
    }
}

/* One run of where per element size (strides in bytes): the contiguous case and the one
 * with a broadcast second value (relu-like masks, `where(c, x, 0.0)`) vectorize as blends. */
#define WHERE_RUN(sz, T)                                                                         \
    PF_SIMD static void where_run_##sz(const uint8_t *c, int64_t sc, const char *ap, int64_t sa,  \
                                       const char *bp, int64_t sb, char *op_, int64_t so, int64_t n) { \
        const T *a = (const T *)ap, *b = (const T *)bp;                                          \
        T *o = (T *)op_;                                                                         \
        if (sc == 1 && sa == sz && so == sz && sb == sz) {                                       \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : b[i];                           \
        } else if (sc == 1 && sa == sz && so == sz && sb == 0) {                                 \
            const T v = b[0];                                                                    \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : v;                              \
        } else if (sc == 1 && sa == 0 && so == sz && sb == sz) {                                 \
            const T v = a[0];                                                                    \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? v : b[i];                              \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++)                                                      \
                *(T *)(op_ + i * so) = c[i * sc] ? *(const T *)(ap + i * sa) : *(const T *)(bp + i * sb); \
        }                                                                                        \
    }
WHERE_RUN(1, uint8_t)
WHERE_RUN(2, uint16_t)
WHERE_RUN(4, uint32_t)
WHERE_RUN(8, uint64_t)

typedef struct {
    const uint8_t *c;
    const char *a, *b;
    char *o;
    size_t es;
} where_job;

static void where_walk(void *arg, const int64_t *off, const int64_t *in, int64_t len) {
    const where_job *j = arg;
    const uint8_t *c = j->c + off[0];
    const char *a = j->a + off[1], *b = j->b + off[2];
    char *o = j->o + off[3];
    switch (j->es) {
    case 1: where_run_1(c, in[0], a, in[1], b, in[2], o, in[3], len); break;
    case 2: where_run_2(c, in[0], a, in[1], b, in[2], o, in[3], len); break;
    case 4: where_run_4(c, in[0], a, in[1], b, in[2], o, in[3], len); break;
    default: where_run_8(c, in[0], a, in[1], b, in[2], o, in[3], len); break;
    }
}

int pf_where(const pf_tensor *cond, const pf_tensor *a, const pf_tensor *b, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(cond, "condition")) || (rc = pf_check(a, "first value")) || (rc = pf_check(b, "second value")) ||
        (rc = pf_check(out, "output")))
        return rc;
    if (cond->dtype != PF_BOOL)
        return pf_error(PF_ERR_TYPE, "where: condition must be bool, got %s", pf_dtype_name[cond->dtype]);
    if (a->dtype != out->dtype || b->dtype != out->dtype)
        return pf_error(PF_ERR_TYPE, "where: values must have the output's dtype %s, got %s and %s",
                        pf_dtype_name[out->dtype], pf_dtype_name[a->dtype], pf_dtype_name[b->dtype]);
    int64_t sc[PF_MAX_DIMS], sa[PF_MAX_DIMS], sb[PF_MAX_DIMS];
    if ((rc = pf_broadcast_strides(cond, out->ndim, out->shape, sc, "condition")) ||
        (rc = pf_broadcast_strides(a, out->ndim, out->shape, sa, "first value")) ||
        (rc = pf_broadcast_strides(b, out->ndim, out->shape, sb, "second value")))
        return rc;
    size_t es = pf_dtype_size[out->dtype];
    const int64_t *st[4] = {sc, sa, sb, out->strides};
    size_t sz[4] = {1, es, es, es};
    pf_walk w;
    pf_walk_init(&w, out->ndim, out->shape, 4, st, sz);
    where_job j = {cond->data, a->data, b->data, out->data, es};
    parallel_walk(&w, where_walk, &j);
    return PF_OK;
}

/* One conversion run: element i of src (dtype ds) to dst (dtype dd). Same-dtype and
 * float32 paths stay tight; other pairs go through double or int64. */
PF_SIMD static void convert_run(const char *s, int64_t ss, int ds, char *d, int64_t sd, int dd, int64_t n) {
    size_t es = pf_dtype_size[ds];
    if (ds == dd) {
        if (ss == (int64_t)es && sd == (int64_t)es) memcpy(d, s, n * es);
        else for (int64_t i = 0; i < n; i++) move_elem(d + i * sd, s + i * ss, es);
    } else if (ds == PF_FLOAT32 && dd == PF_FLOAT64) {
        for (int64_t i = 0; i < n; i++) *(double *)(d + i * sd) = *(const float *)(s + i * ss);
    } else if (ds == PF_FLOAT64 && dd == PF_FLOAT32) {
        for (int64_t i = 0; i < n; i++) *(float *)(d + i * sd) = (float)*(const double *)(s + i * ss);
    } else if (ds == PF_FLOAT32 && dd == PF_BFLOAT16) {
        if (ss == 4 && sd == 2) { /* dense: pf_f2bf with a select for NaN, so the loop vectorizes (6.4M floats 14 -> 2.2 ms) */
            const uint32_t *x = (const uint32_t *)s;
            uint16_t *y = (uint16_t *)d;
            for (int64_t i = 0; i < n; i++) {
                uint32_t r = (x[i] + 0x7fffu + ((x[i] >> 16) & 1u)) >> 16;
                y[i] = (uint16_t)((x[i] & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : r);
            }
        } else {
            for (int64_t i = 0; i < n; i++) *(uint16_t *)(d + i * sd) = pf_f2bf(*(const float *)(s + i * ss));
        }
    } else if (ds == PF_BFLOAT16 && dd == PF_FLOAT32) {
        for (int64_t i = 0; i < n; i++) *(float *)(d + i * sd) = pf_bf2f(*(const uint16_t *)(s + i * ss));
    } else if (dd != PF_BOOL && !pf_is_float(dd)) {
        /* floats convert as torch's casts: through int64 for int64 and uint8 (so -1.0 is 255), through
         * int32 for the narrower signed types; integers keep their low bits */
        for (int64_t i = 0; i < n; i++) {
            const char *p = s + i * ss;
            int64_t v = !pf_is_float(ds)                       ? pf_load_i64(p, ds)
                        : dd == PF_INT64 || dd == PF_UINT8 ? pf_f2i64(pf_load_f64(p, ds))
                                                           : pf_f2i32(pf_load_f64(p, ds));
            pf_store_i64(d + i * sd, dd, v);
        }
    } else if (pf_is_float(ds) || dd != PF_BOOL) {
        for (int64_t i = 0; i < n; i++) {
            const char *p = s + i * ss;
            /* int64 -> float goes through int64 to keep every bit double can hold */
            double v = ds == PF_INT64 ? (double)*(const int64_t *)p : pf_load_f64(p, ds);
            pf_store_f64(d + i * sd, dd, v);
        }
    } else {
        for (int64_t i = 0; i < n; i++) *(uint8_t *)(d + i * sd) = pf_load_i64(s + i * ss, ds) != 0;
    }
}

typedef struct {
    const char *s;
    char *d;
    int ds, dd;
} copy_job;

static void copy_walk(void *arg, const int64_t *off, const int64_t *inner, int64_t len) {
    const copy_job *j = arg;
    convert_run(j->s + off[0], inner[0], j->ds, j->d + off[1], inner[1], j->dd, len);
}

int pf_copy(const pf_tensor *src, pf_tensor *dst) {
    int rc;
    if ((rc = pf_check(src, "copy source")) || (rc = pf_check(dst, "copy destination"))) return rc;
    pf_walk w;
    if ((rc = walk_into(&w, src, dst, "source"))) return rc;
    copy_job j = {src->data, dst->data, src->dtype, dst->dtype};
    parallel_walk(&w, copy_walk, &j);
    return PF_OK;
}

typedef struct {
    char *d;
    const char *elem;
    size_t es;
} fill_job;

/* A contiguous run is one typed loop over a local copy of the element: through move_elem gcc had to read the
 * element again after every store (a store through d might change it, as far as it knows), so a zeros() of
 * 700 x 2000 float32 took 2.3 ms, a fifth of memset's speed, in the LSTM model's loss and embedding backward. */
#define FILL_RUN(T)                                                                                   \
    {                                                                                                 \
        T v, *p = (T *)d;                                                                             \
        memcpy(&v, j->elem, sizeof v);                                                                \
        for (int64_t i = 0; i < len; i++) p[i] = v;                                                   \
        return;                                                                                       \
    }
static void fill_walk(void *arg, const int64_t *off, const int64_t *inner, int64_t len) {
    const fill_job *j = arg;
    char *d = j->d + off[0];
    if (inner[0] == (int64_t)j->es) switch (j->es) {
        case 1: memset(d, *(const unsigned char *)j->elem, (size_t)len); return;
        case 2: FILL_RUN(uint16_t)
        case 4: FILL_RUN(uint32_t)
        case 8: FILL_RUN(uint64_t)
        default: break;
        }
    for (int64_t i = 0; i < len; i++) move_elem(d + i * inner[0], j->elem, j->es);
}
#undef FILL_RUN

int pf_fill(pf_tensor *dst, double value, int64_t ivalue) {
    int rc;
    if ((rc = pf_check(dst, "fill destination"))) return rc;
    /* build the element once, then copy its bytes everywhere */
    char elem[8];
    if (pf_is_float(dst->dtype)) pf_store_f64(elem, dst->dtype, value);
    else pf_store_i64(elem, dst->dtype, ivalue);
    const int64_t *st[1] = {dst->strides};
    size_t es = pf_dtype_size[dst->dtype], sz[1] = {es};
    pf_walk w;
    pf_walk_init(&w, dst->ndim, dst->shape, 1, st, sz);
    fill_job j = {dst->data, elem, es};
    parallel_walk(&w, fill_walk, &j);
    return PF_OK;
}

static int check_1d(const pf_tensor *dst, const char *what) {
    int rc = pf_check(dst, what);
    if (rc) return rc;
    if (dst->ndim != 1) return pf_error(PF_ERR_VALUE, "%s: expected a 1-d output, got %d dims", what, dst->ndim);
    return PF_OK;
}

int pf_arange(pf_tensor *dst, double start, double step) {
    int rc = check_1d(dst, "arange");
    if (rc) return rc;
    if (!isfinite(start) || !isfinite(step))
        return pf_error(PF_ERR_VALUE, "arange: start and step must be finite, got %g and %g", start, step);
    int dt = dst->dtype;
    size_t es = pf_dtype_size[dt];
    char *d = dst->data;
    int exact_int = !pf_is_float(dt) && start == (double)(int64_t)start && step == (double)(int64_t)step;
    for (int64_t i = 0; i < dst->shape[0]; i++) {
        char *p = d + i * dst->strides[0] * (int64_t)es;
        if (exact_int) pf_store_i64(p, dt, (int64_t)start + i * (int64_t)step);
        else pf_store_f64(p, dt, start + (double)i * step);
    }
    return PF_OK;
}

int pf_linspace(pf_tensor *dst, double start, double end) {
    int rc = check_1d(dst, "linspace");
    if (rc) return rc;
    int64_t n = dst->shape[0];
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0.0;
    size_t es = pf_dtype_size[dst->dtype];
    if (dst->dtype == PF_FLOAT32) { /* torch computes in the output's precision: the same bits as its linspace */
        float s = (float)start, e = (float)end, st = n > 1 ? (e - s) / (float)(n - 1) : 0.0f;
        for (int64_t i = 0; i < n; i++) {
            float v = n == 1 ? s : i < n / 2 ? s + st * (float)i : e - st * (float)(n - 1 - i);
            *(float *)((char *)dst->data + i * dst->strides[0] * (int64_t)es) = v;
        }
        return PF_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        /* symmetric, as torch: the second half counts back from `end`, so it lands exactly */
        double v = n == 1 ? start : i < n / 2 ? start + step * (double)i : end - step * (double)(n - 1 - i);
        pf_store_f64((char *)dst->data + i * dst->strides[0] * (int64_t)es, dst->dtype, v);
    }
    return PF_OK;
}

/* ---- add with alpha: out = a + alpha * b ----
 *
 * torch's add kernel is one fused multiply-add, fmadd(b, alpha, a), for every floating dtype (16-bit floats in
 * float32, alpha first cast to the dtype), so these are too: one rounding, where a multiply then an add would be two
 * passes and two roundings. Integer dtypes wrap, computed in unsigned arithmetic. The fma needs the FMA unit to
 * vectorize, which the avx512f/avx2 clones of PF_SIMD do not switch on: these use the x86-64-v4/v3 levels. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define PF_FMA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PF_FMA_CLONES
#endif

typedef void (*axpy_run)(const char *a, int64_t sa, const char *b, int64_t sb, char *o, int64_t so, int64_t n,
                         double alpha, int64_t ialpha);

static inline float axpy_alpha_h(double a) { return pf_h2f(pf_f2h((float)a)); }
static inline float axpy_alpha_bf(double a) { return pf_bf2f(pf_f2bf((float)a)); }
#define AXPY_ALPHA_F(a) ((float)(a))
#define AXPY_ALPHA_D(a) (a)
#define AXPY_FMA_F(al, x, y) fmaf(al, x, y)
#define AXPY_FMA_D(al, x, y) fma(al, x, y)
/* wrapping integer a + alpha * b in the unsigned type UT (the low bits of the exact result) */
#define AXPY_INT(al, x, y) ((y) + (al) * (x))

/* AXPY(name, storage type, compute type, load, store, alpha from (double alpha, int64 ialpha), op(al, b, a)):
 * the contiguous case and the broadcast-scalar cases are loops of their own, so gcc vectorizes them */
#define AXPY(name, T, CT, LD, ST, ALPHA, OP)                                                                 \
    PF_FMA_CLONES static void name(const char *ap, int64_t sa, const char *bp, int64_t sb, char *op_, int64_t so, \
                                   int64_t n, double alpha, int64_t ialpha) {                                \
        (void)alpha;                                                                                         \
        (void)ialpha;                                                                                        \
        const CT al = ALPHA;                                                                                 \
        const T *a = (const T *)ap, *b = (const T *)bp;                                                      \
        T *o = (T *)op_;                                                                                     \
        if (sa == sizeof(T) && sb == sizeof(T) && so == sizeof(T)) {                                         \
            for (int64_t i = 0; i < n; i++) o[i] = ST(OP(al, (CT)LD(b[i]), (CT)LD(a[i])));                   \
        } else if (sa == sizeof(T) && sb == 0 && so == sizeof(T)) {                                          \
            const CT bv = (CT)LD(b[0]);                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = ST(OP(al, bv, (CT)LD(a[i])));                             \
        } else if (sa == 0 && sb == sizeof(T) && so == sizeof(T)) {                                          \
            const CT av = (CT)LD(a[0]);                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = ST(OP(al, (CT)LD(b[i]), av));                             \
        } else {                                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                                \
                CT x = (CT)LD(*(const T *)(bp + i * sb)), y = (CT)LD(*(const T *)(ap + i * sa));             \
                *(T *)(op_ + i * so) = ST(OP(al, x, y));                                                     \
            }                                                                                                \
        }                                                                                                    \
    }
AXPY(axpy_f32, float, float, LD_ID, ST_ID, AXPY_ALPHA_F(alpha), AXPY_FMA_F)
AXPY(axpy_f64, double, double, LD_ID, ST_ID, AXPY_ALPHA_D(alpha), AXPY_FMA_D)
AXPY(axpy_f16, uint16_t, float, pf_h2f_vec, ST_H, axpy_alpha_h(alpha), AXPY_FMA_F)
AXPY(axpy_bf16, uint16_t, float, LD_BF, ST_BF, axpy_alpha_bf(alpha), AXPY_FMA_F)
AXPY(axpy_i64, int64_t, uint64_t, LD_ID, ST_ID, (uint64_t)ialpha, AXPY_INT)
AXPY(axpy_i32, int32_t, uint32_t, LD_ID, ST_ID, (uint32_t)(uint64_t)ialpha, AXPY_INT)
AXPY(axpy_i16, int16_t, uint32_t, LD_ID, ST_ID, (uint32_t)(uint64_t)ialpha, AXPY_INT)
AXPY(axpy_i8, int8_t, uint32_t, LD_ID, ST_ID, (uint32_t)(uint64_t)ialpha, AXPY_INT)
AXPY(axpy_u8, uint8_t, uint32_t, LD_ID, ST_ID, (uint32_t)(uint64_t)ialpha, AXPY_INT)

static const axpy_run axpy_table[PF_NUM_DTYPES] = {
    [PF_FLOAT32] = axpy_f32, [PF_FLOAT64] = axpy_f64, [PF_FLOAT16] = axpy_f16, [PF_BFLOAT16] = axpy_bf16,
    [PF_INT64] = axpy_i64,   [PF_INT32] = axpy_i32,   [PF_INT16] = axpy_i16,   [PF_INT8] = axpy_i8,
    [PF_UINT8] = axpy_u8,
};

typedef struct {
    axpy_run run;
    const char *a, *b;
    char *o;
    double alpha;
    int64_t ialpha;
} axpy_job;

static void axpy_walk(void *arg, const int64_t *off, const int64_t *in, int64_t len) {
    const axpy_job *j = arg;
    j->run(j->a + off[0], in[0], j->b + off[1], in[1], j->o + off[2], in[2], len, j->alpha, j->ialpha);
}

int pf_axpy(const pf_tensor *a, const pf_tensor *b, double alpha, int64_t ialpha, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(a, "first operand")) || (rc = pf_check(b, "second operand")) ||
        (rc = pf_check(out, "output")))
        return rc;
    if (a->dtype != out->dtype || b->dtype != out->dtype)
        return pf_error(PF_ERR_TYPE, "add with alpha: operands and output must have one dtype, got %s, %s and %s",
                        pf_dtype_name[a->dtype], pf_dtype_name[b->dtype], pf_dtype_name[out->dtype]);
    axpy_run run = axpy_table[out->dtype];
    if (!run)
        return pf_error(PF_ERR_TYPE, "add with alpha: unsupported dtype %s (floating and integer dtypes only)",
                        pf_dtype_name[out->dtype]);
    int64_t sa[PF_MAX_DIMS], sb[PF_MAX_DIMS];
    if ((rc = pf_broadcast_strides(a, out->ndim, out->shape, sa, "first operand")) ||
        (rc = pf_broadcast_strides(b, out->ndim, out->shape, sb, "second operand")))
        return rc;
    const int64_t *st[3] = {sa, sb, out->strides};
    size_t es = pf_dtype_size[out->dtype], sz[3] = {es, es, es};
    pf_walk w;
    pf_walk_init(&w, out->ndim, out->shape, 3, st, sz);
    axpy_job j = {run, a->data, b->data, out->data, alpha, ialpha};
    parallel_walk(&w, axpy_walk, &j);
    return PF_OK;
}
