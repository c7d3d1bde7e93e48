/* GELU forward and backward, one pass each; the gradients of the other parametrised activations.
 *
 * The composition x * 0.5 * (1 + erf(x / sqrt 2)) is five elementwise ops forward and
 * about ten back, each a pass and an allocation. Here forward writes y and, when a
 * gradient will be wanted, the gate cdf = 0.5 (1 + erf(x / sqrt 2)) (or the tanh form),
 * so backward needs no second erf: gx = g (cdf + x pdf). The formulas are torch's, so
 * float32 results match its to rounding.
 *
 * The core builds as ISO C11, where gcc does not contract a * b + c into one FMA; the erf
 * polynomials and exp here are chains of a * b + c, so this file asks for contraction (each step
 * rounds once instead of twice). With that, no trapping math (the whole core's build) and
 * pf_erff's own exp (core.h), a warm [64, 1536] float32 GELU went from 153 to 66 us (torch 62-68). */
#pragma GCC optimize("fp-contract=fast")
#include "core.h"

#define K_SQRT1_2 0.70710678118654752440
#define K_INV_SQRT_2PI 0.39894228040143267794
#define K_SQRT_2_PI 0.79788456080286535588 /* sqrt(2 / pi) */
#define K_TANH_C 0.044715

typedef struct {
    int dtype, approx;
    const void *x, *g, *cdf_in;
    void *y, *cdf, *gx;
    int64_t n;
} gelu_args;

/* A loop this long per vector keeps few loads in flight, so an input larger than L2 (a GEMM's
 * output, as in every transformer MLP) came at memory latency: 3.7 ms for 1.5M floats against
 * 0.76 ms warm. The loops go in chunks, and each chunk first asks for the next one's lines. */
#define CHUNK 2048
PF_ALWAYS_INLINE void fetch_ahead(const void *p, int64_t from, int64_t to, size_t esz) {
    for (int64_t o = from * (int64_t)esz; o < to * (int64_t)esz; o += 64) __builtin_prefetch((const char *)p + o, 0, 3);
}

/* gcc's "avx2" clone has no FMA (a separate ISA flag to gcc), so on an AVX2 machine every contracted
 * a * b + c above was a multiply and an add again: a [64, 1536] GELU took 2x torch's time on a Zen 3.
 * gcc 12 can clone for x86-64-v3 (AVX2 with FMA), which such machines take; AVX-512 ones are unchanged. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    __GNUC__ >= 12
#define GELU_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "avx2", "default")))
#else
#define GELU_CLONES PF_VEC_CLONES
#endif

/* Branch-free loops, one per case, so gcc vectorizes them (float32's erf and tanh are core.h's pf_erff
 * and pf_tanhf, not libm calls: libm's tanhf kept the tanh form scalar, 6x torch's time on a
 * [1000, 1400] float32 on AVX2); one pass over memory each (the gate is computed where it is used,
 * not stored and reread). */
#define GELU_KERNELS(T, SUF, ERF, TANH, EXP, TINY)                                                   \
    PF_ALWAYS_INLINE T gelu_gate_##SUF(T xi, int approx) {                                           \
        return approx ? (T)0.5 * ((T)1 + TANH((T)K_SQRT_2_PI * (xi + (T)K_TANH_C * xi * xi * xi)))  \
                      : (T)0.5 * ((T)1 + ERF(xi * (T)K_SQRT1_2));                                   \
    }                                                                                                \
    PF_ALWAYS_INLINE void gelu_fwd_span_##SUF(const gelu_args *a, int64_t b, int64_t e) {             \
        const T *x = a->x;                                                                           \
        T *y = a->y, *gate = a->cdf;                                                                 \
        if (a->approx && gate)                                                                       \
            for (int64_t i = b; i < e; i++) gate[i] = gelu_gate_##SUF(x[i], 1), y[i] = x[i] * gate[i]; \
        else if (a->approx)                                                                          \
            for (int64_t i = b; i < e; i++) y[i] = x[i] * gelu_gate_##SUF(x[i], 1);                  \
        else if (gate)                                                                               \
            for (int64_t i = b; i < e; i++) gate[i] = gelu_gate_##SUF(x[i], 0), y[i] = x[i] * gate[i]; \
        else                                                                                         \
            for (int64_t i = b; i < e; i++) y[i] = x[i] * gelu_gate_##SUF(x[i], 0);                  \
    }                                                                                                \
    PF_ALWAYS_INLINE void gelu_bwd_span_##SUF(const gelu_args *a, int64_t b, int64_t e) {             \
        const T *g = a->g, *x = a->x, *c = a->cdf_in;                                                \
        T *gx = a->gx;                                                                               \
        if (a->approx == 2) { /* c is the output x cdf: cdf = y / x where x is normal and not tiny */ \
            for (int64_t i = b; i < e; i++) {                                                        \
                T xi = x[i], gate = (xi < (T)TINY && xi > -(T)TINY) ? (T)0.5 : c[i] / xi;            \
                gx[i] = g[i] * (gate + xi * (T)K_INV_SQRT_2PI * EXP((T)-0.5 * xi * xi));             \
            }                                                                                        \
            return;                                                                                  \
        }                                                                                            \
        if (a->approx) { /* tanh again, not 2 cdf - 1: 1 - t^2 would cancel in the tails */          \
            for (int64_t i = b; i < e; i++) {                                                        \
                T xi = x[i], t = TANH((T)K_SQRT_2_PI * (xi + (T)K_TANH_C * xi * xi * xi));           \
                T du = (T)K_SQRT_2_PI * ((T)1 + (T)(3 * K_TANH_C) * xi * xi);                        \
                gx[i] = g[i] * ((T)0.5 * ((T)1 + t) + (T)0.5 * xi * ((T)1 - t * t) * du);            \
            }                                                                                        \
            return;                                                                                  \
        }                                                                                            \
        if (c)                                                                                       \
            for (int64_t i = b; i < e; i++)                                                          \
                gx[i] = g[i] * (c[i] + x[i] * (T)K_INV_SQRT_2PI * EXP((T)-0.5 * x[i] * x[i]));       \
        else                                                                                         \
            for (int64_t i = b; i < e; i++)                                                          \
                gx[i] = g[i] * (gelu_gate_##SUF(x[i], 0) +                                           \
                                x[i] * (T)K_INV_SQRT_2PI * EXP((T)-0.5 * x[i] * x[i]));              \
    }                                                                                                \
    GELU_CLONES static void gelu_fwd_##SUF(void *arg, int64_t b, int64_t e) {                      \
        const gelu_args *a = arg;                                                                    \
        for (int64_t c = b; c < e; c += CHUNK) {                                                     \
            int64_t d = c + CHUNK < e ? c + CHUNK : e;                                               \
            fetch_ahead(a->x, d, d + CHUNK < e ? d + CHUNK : e, sizeof(T));                          \
            gelu_fwd_span_##SUF(a, c, d);                                                            \
        }                                                                                            \
    }                                                                                                \
    GELU_CLONES static void gelu_bwd_##SUF(void *arg, int64_t b, int64_t e) {                      \
        const gelu_args *a = arg;                                                                    \
        for (int64_t c = b; c < e; c += CHUNK) {                                                     \
            int64_t d = c + CHUNK < e ? c + CHUNK : e, f = d + CHUNK < e ? d + CHUNK : e;            \
            fetch_ahead(a->x, d, f, sizeof(T));                                                      \
            fetch_ahead(a->g, d, f, sizeof(T));                                                      \
            gelu_bwd_span_##SUF(a, c, d);                                                            \
        }                                                                                            \
    }

GELU_KERNELS(float, f32, pf_erff, pf_tanhf, pf_expf, 0x1p-24f)
GELU_KERNELS(double, f64, erf, tanh, exp, 0x1p-53)

static int check_args(int dtype, int64_t n, int approximate, int modes, const char *fn) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s(): dtype must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0) return pf_error(PF_ERR_VALUE, "%s(): negative element count %lld", fn, (long long)n);
    if (approximate < 0 || approximate >= modes)
        return pf_error(PF_ERR_VALUE, "%s(): approximate must be 0 (erf)%s 1 (tanh)%s, got %d", fn,
                        modes > 2 ? "," : " or", modes > 2 ? " or 2 (erf, cdf holding the output)" : "", approximate);
    return PF_OK;
}

int pf_gelu(int dtype, const void *x, void *y, void *cdf, int64_t n, int approximate) {
    int rc = check_args(dtype, n, approximate, 2, "gelu");
    if (rc) return rc;
    if (n == 0) return PF_OK;
    if (!x || !y) return pf_error(PF_ERR_VALUE, "gelu(): a NULL input or output buffer");
    gelu_args a = {.dtype = dtype, .approx = approximate, .x = x, .y = y, .cdf = cdf, .n = n};
    pf_parallel_range(pf_threads_for(n), n, dtype == PF_FLOAT32 ? gelu_fwd_f32 : gelu_fwd_f64, &a);
    return PF_OK;
}

int pf_gelu_backward(int dtype, const void *g, const void *x, const void *cdf, void *gx, int64_t n,
                     int approximate) {
    int rc = check_args(dtype, n, approximate, 3, "gelu_backward");
    if (rc) return rc;
    if (n == 0) return PF_OK;
    if (!g || !x || !gx || (approximate == 2 && !cdf))
        return pf_error(PF_ERR_VALUE, "gelu_backward(): a NULL input or output buffer");
    gelu_args a = {.dtype = dtype, .approx = approximate, .g = g, .x = x, .cdf_in = cdf, .gx = gx, .n = n};
    pf_parallel_range(pf_threads_for(n), n, dtype == PF_FLOAT32 ? gelu_bwd_f32 : gelu_bwd_f64, &a);
    return PF_OK;
}

/* ---- the gradients of the activations in elementwise.c's unary table ----
 *
 * Their forwards are unary rows (every float dtype, any strides). Composed of ops, leaky_relu's gradient
 * was four passes and three temporaries through where, mul and gt, and Mish's about a dozen; here each is
 * one pass over (g, x) with torch's formula (ELU and SELU: elu_backward on the input; softplus and SiLU:
 * their CPU kernels' expressions; Mish: torch's, rewritten on one exp), so float32 gradients match torch's to
 * rounding. At NaN, ELU, SELU, CELU and hardswish follow torch's elementwise rule (the linear side: the
 * gradient passes), which tests/autograd/test_edge_gradients.py holds; torch's vectorised loops give NaN. */
typedef struct {
    int op;
    const void *g, *x;
    void *gx;
    double p0, p1;
} act_args;

#define ACT_GRAD_KERNELS(T, SUF, EXP)                                                                        \
    GELU_CLONES static void act_grad_##SUF(void *arg, int64_t b, int64_t e) {                              \
        const act_args *a = arg;                                                                             \
        const T *restrict g = a->g, *restrict x = a->x;                                                      \
        T *restrict gx = a->gx;                                                                              \
        const T p0 = (T)a->p0, p1 = (T)a->p1;                                                                \
        switch (a->op) {                                                                                     \
        case PF_LEAKY_RELU:                                                                                  \
            for (int64_t i = b; i < e; i++) gx[i] = x[i] > 0 ? g[i] : g[i] * p0;                             \
            break;                                                                                           \
        case PF_ELU: /* torch's elementwise rule: the exponential side has 0 (alpha there), NaN the linear one */ \
            for (int64_t i = b; i < e; i++) gx[i] = x[i] <= 0 ? g[i] * p1 * p0 * EXP(x[i] * p1) : g[i];      \
            break;                                                                                           \
        case PF_SELU:                                                                                        \
            for (int64_t i = b; i < e; i++)                                                                  \
                gx[i] = x[i] <= 0 ? g[i] * (T)(PF_SELU_ALPHA * PF_SELU_SCALE) * EXP(x[i])                   \
                                  : g[i] * (T)PF_SELU_SCALE;                                                 \
            break;                                                                                           \
        case PF_SOFTPLUS:                                                                                    \
            for (int64_t i = b; i < e; i++) {                                                                \
                T z = EXP(x[i] * p0);                                                                        \
                gx[i] = x[i] * p0 > p1 ? g[i] : g[i] * z / (z + 1);                                          \
            }                                                                                                \
            break;                                                                                           \
        case PF_MISH: /* tanh(softplus) = n / (n + 2), its 1 - t^2 = 4 (n + 1) / (n + 2)^2: one exp (see pf_mishf) */ \
            for (int64_t i = b; i < e; i++) {                                                                \
                T ex = EXP(x[i] < 20 ? x[i] : (T)20), n = ex * (ex + 2), d = n + 2;                          \
                T s = ex / (1 + ex), t = n / d;                                                              \
                /* past 20 torch's t + x s (1 - t^2) is 1 + x 0: 1, and NaN at +inf as torch's */           \
                gx[i] = x[i] > 20 ? g[i] * (1 + x[i] * 0) : g[i] * (t + x[i] * s * (4 * (n + 1) / (d * d)));  \
            }                                                                                                \
            break;                                                                                           \
        case PF_SILU:                                                                                        \
            for (int64_t i = b; i < e; i++) {                                                                \
                T s = 1 / (1 + EXP(-x[i]));                                                                  \
                gx[i] = g[i] * s * (1 + x[i] * (1 - s));                                                     \
            }                                                                                                \
            break;                                                                                           \
        case PF_HARDSIGMOID: /* 1/6 strictly inside (-3, 3), 0 at the ends, outside and at NaN */           \
            for (int64_t i = b; i < e; i++) gx[i] = x[i] > -3 && x[i] < 3 ? g[i] / 6 : 0;                    \
            break;                                                                                           \
        case PF_HARDSWISH: /* 0 up to -3, x / 3 + 1/2 below 3, 1 from 3 on and at NaN */                    \
            for (int64_t i = b; i < e; i++) gx[i] = x[i] <= -3 ? 0 : x[i] < 3 ? g[i] * (x[i] / 3 + (T)0.5) : g[i]; \
            break;                                                                                           \
        }                                                                                                    \
    }

ACT_GRAD_KERNELS(float, f32, pf_expf)
ACT_GRAD_KERNELS(double, f64, exp)

int pf_activation_backward(int op, int dtype, const void *g, const void *x, void *gx, int64_t n, double p0,
                           double p1) {
    if (op < PF_LEAKY_RELU || op > PF_HARDSWISH)
        return pf_error(PF_ERR_VALUE, "activation_backward(): op %d is not an activation (%d to %d)", op,
                        PF_LEAKY_RELU, PF_HARDSWISH);
    int rc = check_args(dtype, n, 0, 1, "activation_backward");
    if (rc) return rc;
    if (n == 0) return PF_OK;
    if (!g || !x || !gx) return pf_error(PF_ERR_VALUE, "activation_backward(): a NULL input or output buffer");
    act_args a = {op, g, x, gx, p0, p1};
    pf_parallel_range(pf_threads_for(n), n, dtype == PF_FLOAT32 ? act_grad_f32 : act_grad_f64, &a);
    return PF_OK;
}
