/* Adaptive optimizer steps: Adadelta, Adagrad, RMSprop, Adamax, NAdam, RAdam.
 *
 * Like optim.c, each kernel reproduces torch.optim's single-tensor update (foreach=False)
 * operation by operation, in the parameter's type: every scalar torch passes to a tensor op
 * is cast to that type here, in the same place, and products and quotients keep torch's
 * left-to-right order (addcmul: s + (v * a) * b, addcdiv: s + (v * a) / b). Step-dependent
 * scalars (bias corrections, NAdam's momentum products, RAdam's rectification) are computed
 * by the caller in double, as torch computes them in Python, and passed in `hp`. */
#include <math.h>
#include "core.h"

/* Entries of hp per kind (flags are 0 or 1):
 * ADADELTA: lr, rho, eps, weight_decay, maximize                       s0 square_avg, s1 acc_delta
 * ADAGRAD:  clr, eps, weight_decay, maximize                           s0 sum
 * RMSPROP:  lr, alpha, eps, weight_decay, momentum, centered, maximize s0 square_avg, s1 grad_avg, s2 momentum_buffer
 * ADAMAX:   clr, beta1, beta2, eps, weight_decay, maximize             s0 exp_avg, s1 exp_inf
 * NADAM:    beta1, beta2, eps, weight_decay, decoupled, decay, bias_correction2, c_grad, c_avg, maximize
 *                                                                      s0 exp_avg, s1 exp_avg_sq
 * RADAM:    beta1, beta2, eps, weight_decay, decoupled, decay, bias_correction1, lr, rectified,
 *           sqrt_bias_correction2, rect, maximize                      s0 exp_avg, s1 exp_avg_sq */
static const int hp_count[PF_NUM_OPTIM] = {5, 4, 7, 6, 10, 12};
static const char *const kind_name[PF_NUM_OPTIM] = {"adadelta", "adagrad", "rmsprop", "adamax", "nadam", "radam"};

typedef struct {
    int kind, dtype;
    const double *hp;
    char *p, *s0, *s1, *s2;
    const char *g;
} step_args;

/* torch's lerp: w < 0.5 ? a + w (b - a) : b - (b - a)(1 - w) */
#define LERP(T, a, b, w) ((w) < (T)0.5 ? (a) + (w) * ((b) - (a)) : (b) - ((b) - (a)) * ((T)1 - (w)))

#define OPT_GEN(T, SFX, SQRT)                                                                            \
    static T max_##SFX(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }                 \
    static void run_##SFX(const step_args *a, T *p, const T *g, T *s0, T *s1, T *s2, int64_t n) {         \
        const double *h = a->hp;                                                                          \
        switch (a->kind) {                                                                                \
        case PF_OPTIM_ADADELTA: {                                                                         \
            const T neg_lr = (T)(-h[0]), rho = (T)h[1], omr = (T)(1.0 - h[1]), eps = (T)h[2];            \
            const T wd = (T)h[3], sign = h[4] != 0 ? (T)-1 : (T)1;                                        \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign;                                                                       \
                if (h[3] != 0) gi = gi + wd * p[i];                                                       \
                T sq = s0[i] * rho;                                                                       \
                sq = sq + omr * gi * gi;                                                                  \
                s0[i] = sq;                                                                               \
                T std = SQRT(sq + eps), delta = SQRT(s1[i] + eps);                                        \
                delta = delta / std;                                                                      \
                delta = delta * gi;                                                                       \
                T acc = s1[i] * rho;                                                                      \
                s1[i] = acc + omr * delta * delta;                                                        \
                p[i] = p[i] + neg_lr * delta;                                                             \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        case PF_OPTIM_ADAGRAD: {                                                                          \
            const T neg_clr = (T)(-h[0]), eps = (T)h[1], wd = (T)h[2], sign = h[3] != 0 ? (T)-1 : (T)1;   \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign;                                                                       \
                if (h[2] != 0) gi = gi + wd * p[i];                                                       \
                T s = s0[i] + gi * gi;                                                                    \
                s0[i] = s;                                                                                \
                T std = SQRT(s) + eps;                                                                    \
                p[i] = p[i] + neg_clr * gi / std;                                                         \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        case PF_OPTIM_RMSPROP: {                                                                          \
            const T neg_lr = (T)(-h[0]), alpha = (T)h[1], oma = (T)(1.0 - h[1]), eps = (T)h[2];          \
            const T wd = (T)h[3], mom = (T)h[4], sign = h[6] != 0 ? (T)-1 : (T)1;                         \
            const int centered = h[5] != 0, momentum = h[4] > 0;                                          \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign;                                                                       \
                if (h[3] != 0) gi = gi + wd * p[i];                                                       \
                T sq = s0[i] * alpha;                                                                     \
                sq = sq + oma * gi * gi;                                                                  \
                s0[i] = sq;                                                                               \
                T avg;                                                                                    \
                if (centered) {                                                                           \
                    T ga = LERP(T, s1[i], gi, oma);                                                       \
                    s1[i] = ga;                                                                           \
                    avg = SQRT(sq + (T)-1 * ga * ga);                                                     \
                } else {                                                                                  \
                    avg = SQRT(sq);                                                                       \
                }                                                                                         \
                avg = avg + eps;                                                                          \
                if (momentum) {                                                                           \
                    T b = s2[i] * mom;                                                                    \
                    b = b + gi / avg;                                                                     \
                    s2[i] = b;                                                                            \
                    p[i] = p[i] + neg_lr * b;                                                             \
                } else {                                                                                  \
                    p[i] = p[i] + neg_lr * gi / avg;                                                      \
                }                                                                                         \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        case PF_OPTIM_ADAMAX: {                                                                           \
            const T neg_clr = (T)(-h[0]), w = (T)(1.0 - h[1]), beta2 = (T)h[2], eps = (T)h[3];            \
            const T wd = (T)h[4], sign = h[5] != 0 ? (T)-1 : (T)1;                                        \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign;                                                                       \
                if (h[4] != 0) gi = gi + wd * p[i];                                                       \
                T m = LERP(T, s0[i], gi, w);                                                              \
                s0[i] = m;                                                                                \
                T ag = (gi < 0 ? -gi : gi) + eps;                                                         \
                T u = max_##SFX(s1[i] * beta2, ag);                                                       \
                s1[i] = u;                                                                                \
                p[i] = p[i] + neg_clr * m / u;                                                            \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        case PF_OPTIM_NADAM: {                                                                            \
            const T w = (T)(1.0 - h[0]), beta2 = (T)h[1], omb2 = (T)(1.0 - h[1]), eps = (T)h[2];          \
            const T wd = (T)h[3], decay = (T)h[5], bc2 = (T)h[6], cg = (T)h[7], cm = (T)h[8];             \
            const T sign = h[9] != 0 ? (T)-1 : (T)1;                                                      \
            const int l2 = h[3] != 0 && h[4] == 0, decoupled = h[3] != 0 && h[4] != 0;                    \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign, pi = p[i];                                                            \
                if (decoupled) pi = pi * decay;                                                           \
                if (l2) gi = gi + wd * pi;                                                                \
                T m = LERP(T, s0[i], gi, w);                                                              \
                s0[i] = m;                                                                                \
                T v = s1[i] * beta2;                                                                      \
                v = v + omb2 * gi * gi;                                                                   \
                s1[i] = v;                                                                                \
                T denom = SQRT(v / bc2) + eps;                                                            \
                pi = pi + cg * gi / denom;                                                                \
                p[i] = pi + cm * m / denom;                                                               \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        default: { /* PF_OPTIM_RADAM */                                                                   \
            const T w = (T)(1.0 - h[0]), beta2 = (T)h[1], omb2 = (T)(1.0 - h[1]), eps = (T)h[2];          \
            const T wd = (T)h[3], decay = (T)h[5], bc1 = (T)h[6], lr = (T)h[7];                           \
            const T sqrt_bc2 = (T)h[9], rect = (T)h[10], sign = h[11] != 0 ? (T)-1 : (T)1;                \
            const int l2 = h[3] != 0 && h[4] == 0, decoupled = h[3] != 0 && h[4] != 0;                    \
            const int rectified = h[8] != 0;                                                              \
            for (int64_t i = 0; i < n; i++) {                                                             \
                T gi = g[i] * sign, pi = p[i];                                                            \
                if (decoupled) pi = pi * decay;                                                           \
                if (l2) gi = gi + wd * pi;                                                                \
                T m = LERP(T, s0[i], gi, w);                                                              \
                s0[i] = m;                                                                                \
                T v = s1[i] * beta2;                                                                      \
                v = v + omb2 * gi * gi;                                                                   \
                s1[i] = v;                                                                                \
                T upd = m / bc1 * lr;                                                                     \
                if (rectified) {                                                                          \
                    upd = upd * (sqrt_bc2 / (SQRT(v) + eps));                                             \
                    upd = upd * rect;                                                                     \
                }                                                                                         \
                p[i] = pi + (T)-1 * upd;                                                                  \
            }                                                                                             \
            break;                                                                                        \
        }                                                                                                 \
        }                                                                                                 \
    }
OPT_GEN(float, f32, sqrtf)
OPT_GEN(double, f64, sqrt)

static void chunk(void *arg, int64_t b, int64_t e) {
    const step_args *a = arg;
    int dtype = a->dtype;
    char *p = a->p, *s0 = a->s0, *s1 = a->s1, *s2 = a->s2;
    const char *g = a->g;
    size_t o = (size_t)b * pf_dtype_size[dtype];
#define AT(ptr) ((ptr) ? (ptr) + o : NULL)
    if (dtype == PF_FLOAT32)
        run_f32(a, (float *)(p + o), (const float *)(g + o), (float *)AT(s0), (float *)AT(s1), (float *)AT(s2), e - b);
    else
        run_f64(a, (double *)(p + o), (const double *)(g + o), (double *)AT(s0), (double *)AT(s1), (double *)AT(s2),
                e - b);
#undef AT
}

int pf_optim_step(int kind, int dtype, int64_t n, void *param, const void *grad, void *s0, void *s1, void *s2,
                  const double *hp, int nhp) {
    if (kind < 0 || kind >= PF_NUM_OPTIM) return pf_error(PF_ERR_VALUE, "optim_step: unknown optimizer %d", kind);
    const char *name = kind_name[kind];
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s step: parameters must be float32 or float64, got %s", name,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0) return pf_error(PF_ERR_VALUE, "%s step: negative element count %lld", name, (long long)n);
    if (!hp || nhp != hp_count[kind])
        return pf_error(PF_ERR_VALUE, "%s step: expected %d hyperparameters, got %d", name, hp_count[kind], nhp);
    if (n == 0) return PF_OK;
    int need1 = kind != PF_OPTIM_ADAGRAD && (kind != PF_OPTIM_RMSPROP || hp[5] != 0);
    int need2 = kind == PF_OPTIM_RMSPROP && hp[4] > 0;
    if (!param || !grad || !s0 || (need1 && !s1) || (need2 && !s2))
        return pf_error(PF_ERR_VALUE, "%s step: NULL parameter, gradient or state buffer", name);
    step_args a = {kind, dtype, hp, param, s0, s1, s2, grad};
    pf_parallel_range(pf_threads_for(n), n, chunk, &a);
    return PF_OK;
}
