/* Optimizer steps: one fused pass over a parameter, its gradient and its state.
 *
 * Each kernel reproduces torch.optim's single-tensor update operation by operation, so
 * trajectories match PyTorch's to rounding: scalars are cast to the tensor's type where
 * torch casts them (float32 math for float32 tensors), step-dependent scalars (bias
 * corrections) are computed in double as torch does in Python.
 *
 * The loop body is one always-inline function taking the option flags as arguments; a
 * switch calls it with constant flags, so gcc emits one branch-free, vectorized loop per
 * combination (once per ISA through target_clones). maximize is a multiplication by -1,
 * which is exact, so it needs no variant of its own. */
#include <math.h>
#include "core.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define PF_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PF_SIMD
#endif

#define PF_INLINE static inline __attribute__((always_inline))

/* ---- SGD ------------------------------------------------------------------------------
 * torch.optim.SGD (foreach=False):
 *   g = maximize ? -grad : grad
 *   if weight_decay: g = g + weight_decay * p
 *   if momentum:     buf = first ? g : buf * momentum + (1 - dampening) * g
 *                    g = nesterov ? g + momentum * buf : buf
 *   p = p + (-lr) * g
 * Momentum modes: 0 none, 1 first step, 2 first step nesterov, 3 later, 4 later nesterov. */

typedef struct {
    double lr, momentum, dampening, weight_decay;
    int nesterov, maximize, first_step;
} sgd_args;

#define SGD_GEN(T, SFX)                                                                            \
    PF_INLINE void sgd_body_##SFX(T *restrict p, const T *restrict g, T *restrict buf, int64_t n,  \
                                  T neg_lr, T mom, T damp1, T wd, T sign, int has_wd, int mode) {  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T d = g[i] * sign;                                                                     \
            if (has_wd) d = d + wd * p[i];                                                         \
            if (mode) {                                                                            \
                T b = mode <= 2 ? d : buf[i] * mom + damp1 * d;                                    \
                buf[i] = b;                                                                        \
                d = (mode == 2 || mode == 4) ? d + mom * b : b;                                    \
            }                                                                                      \
            p[i] = p[i] + neg_lr * d;                                                              \
        }                                                                                          \
    }                                                                                              \
    PF_SIMD static void sgd_run_##SFX(T *p, const T *g, T *buf, int64_t n, const sgd_args *a) {   \
        const T neg_lr = (T)(-a->lr), mom = (T)a->momentum, damp1 = (T)(1.0 - a->dampening);       \
        const T wd = (T)a->weight_decay, sign = a->maximize ? (T)-1 : (T)1;                        \
        int has_wd = a->weight_decay != 0, mode = 0;                                               \
        if (a->momentum != 0) mode = (a->first_step ? 1 : 3) + (a->nesterov != 0);                 \
        switch (has_wd * 5 + mode) {                                                               \
        case 0: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 0, 0); break;           \
        case 1: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 0, 1); break;           \
        case 2: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 0, 2); break;           \
        case 3: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 0, 3); break;           \
        case 4: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 0, 4); break;           \
        case 5: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 1, 0); break;           \
        case 6: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 1, 1); break;           \
        case 7: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 1, 2); break;           \
        case 8: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 1, 3); break;           \
        default: sgd_body_##SFX(p, g, buf, n, neg_lr, mom, damp1, wd, sign, 1, 4); break;          \
        }                                                                                          \
    }
SGD_GEN(float, f32)
SGD_GEN(double, f64)

typedef struct {
    int dtype;
    char *p, *buf;
    const char *g;
    const sgd_args *a;
} sgd_job;

static void sgd_chunk(void *arg, int64_t b, int64_t e) {
    const sgd_job *j = arg;
    int dtype = j->dtype;
    char *p = j->p, *buf = j->buf;
    const char *g = j->g;
    const sgd_args *a = j->a;
    size_t s = pf_dtype_size[dtype];
    if (dtype == PF_FLOAT32)
        sgd_run_f32((float *)(p + b * s), (const float *)(g + b * s), buf ? (float *)(buf + b * s) : NULL, e - b, a);
    else
        sgd_run_f64((double *)(p + b * s), (const double *)(g + b * s), buf ? (double *)(buf + b * s) : NULL, e - b,
                    a);
}

int pf_sgd_step(int dtype, void *param, const void *grad, void *momentum_buf, int64_t n, double lr, double momentum,
                double dampening, double weight_decay, int nesterov, int maximize, int first_step) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "sgd_step: parameters must be float32 or float64, got %s",
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0) return pf_error(PF_ERR_VALUE, "sgd_step: negative element count %lld", (long long)n);
    if (n > 0 && (!param || !grad)) return pf_error(PF_ERR_VALUE, "sgd_step: NULL param or grad buffer");
    if (n > 0 && momentum != 0 && !momentum_buf)
        return pf_error(PF_ERR_VALUE, "sgd_step: momentum %g needs a momentum buffer (got NULL)", momentum);
    const sgd_args a = {lr, momentum, dampening, weight_decay, nesterov, maximize, first_step};
    sgd_job j = {dtype, param, momentum != 0 ? momentum_buf : NULL, grad, &a};
    pf_parallel_range(pf_threads_for(n), n, sgd_chunk, &j);
    return PF_OK;
}

/* ---- Adam / AdamW ---------------------------------------------------------------------
 * torch.optim.Adam (foreach=False, capturable=False), step t counted from 1:
 *   g = maximize ? -grad : grad
 *   decoupled (AdamW): p = p * (1 - lr * weight_decay)    else g = g + weight_decay * p
 *   m = lerp(m, g, 1 - beta1)         torch's lerp: w < 0.5 ? m + w (g - m) : g - (g - m)(1 - w)
 *   v = v * beta2 + (1 - beta2) * g * g
 *   vmax = maximum(vmax, v)           (amsgrad; NaN-propagating as torch.maximum)
 *   denom = sqrt(amsgrad ? vmax : v) / sqrt(1 - beta2^t) + eps
 *   p = p + (-lr / (1 - beta1^t)) * m / denom
 * Weight-decay modes: 0 none, 1 L2 (added to the gradient), 2 decoupled. */

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    int64_t step;
    int amsgrad, decoupled, maximize;
} adam_args;

/* Both lerp branches are base + coef * (g - m): g - (g - m) * (1 - w) equals
 * g + (g - m) * -(1 - w) exactly, since negation is exact. */
#define ADAM_GEN(T, SFX, SQRT)                                                                      \
    PF_INLINE T max_##SFX(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }         \
    PF_INLINE void adam_body_##SFX(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, \
                                   T *restrict vmax, int64_t n, T sign, T wd, T decay, int small,   \
                                   T coef, T beta2, T omb2, T bc2_sqrt, T eps, T neg_step,          \
                                   int wd_mode, int amsgrad) {                                      \
        for (int64_t i = 0; i < n; i++) {                                                           \
            T pi = p[i], gi = g[i] * sign;                                                          \
            if (wd_mode == 1) gi = gi + wd * pi;                                                    \
            if (wd_mode == 2) pi = pi * decay;                                                      \
            T mi = m[i];                                                                            \
            mi = (small ? mi : gi) + coef * (gi - mi);                                              \
            m[i] = mi;                                                                              \
            T vi = v[i] * beta2;                                                                    \
            vi = vi + omb2 * gi * gi;                                                               \
            v[i] = vi;                                                                              \
            if (amsgrad) vmax[i] = vi = max_##SFX(vmax[i], vi);                                     \
            T denom = SQRT(vi) / bc2_sqrt + eps;                                                    \
            p[i] = pi + neg_step * mi / denom;                                                      \
        }                                                                                           \
    }                                                                                               \
    PF_SIMD static void adam_run_##SFX(T *p, const T *g, T *m, T *v, T *vmax, int64_t n,           \
                                       const adam_args *a) {                                        \
        double w = 1.0 - a->beta1, t = (double)a->step;                                             \
        const T tw = (T)w;                                                                          \
        const int small = (tw < 0 ? -tw : tw) < (T)0.5;                                             \
        const T coef = small ? tw : -((T)1 - tw);                                                   \
        const T sign = a->maximize ? (T)-1 : (T)1, wd = (T)a->weight_decay;                         \
        const T decay = (T)(1.0 - a->lr * a->weight_decay);                                         \
        const T beta2 = (T)a->beta2, omb2 = (T)(1.0 - a->beta2), eps = (T)a->eps;                   \
        const T bc2_sqrt = (T)pow(1.0 - pow(a->beta2, t), 0.5);                                     \
        const T neg_step = (T)(-(a->lr / (1.0 - pow(a->beta1, t))));                                \
        int wd_mode = a->weight_decay != 0 ? (a->decoupled ? 2 : 1) : 0;                            \
        switch (wd_mode * 2 + (a->amsgrad != 0)) {                                                  \
        case 0: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,     \
                                bc2_sqrt, eps, neg_step, 0, 0); break;                              \
        case 1: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,     \
                                bc2_sqrt, eps, neg_step, 0, 1); break;                              \
        case 2: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,     \
                                bc2_sqrt, eps, neg_step, 1, 0); break;                              \
        case 3: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,     \
                                bc2_sqrt, eps, neg_step, 1, 1); break;                              \
        case 4: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,     \
                                bc2_sqrt, eps, neg_step, 2, 0); break;                              \
        default: adam_body_##SFX(p, g, m, v, vmax, n, sign, wd, decay, small, coef, beta2, omb2,    \
                                 bc2_sqrt, eps, neg_step, 2, 1); break;                             \
        }                                                                                           \
    }
ADAM_GEN(float, f32, sqrtf)
ADAM_GEN(double, f64, sqrt)

typedef struct {
    int dtype;
    char *p, *m, *v, *vmax;
    const char *g;
    const adam_args *a;
} adam_job;

static void adam_chunk(void *arg, int64_t b, int64_t e) {
    const adam_job *j = arg;
    int dtype = j->dtype;
    char *p = j->p, *m = j->m, *v = j->v, *vmax = j->vmax;
    const char *g = j->g;
    const adam_args *a = j->a;
    size_t s = pf_dtype_size[dtype];
    int64_t o = b * (int64_t)s;
    char *vm = vmax ? vmax + o : NULL;
    if (dtype == PF_FLOAT32)
        adam_run_f32((float *)(p + o), (const float *)(g + o), (float *)(m + o), (float *)(v + o), (float *)vm, e - b,
                     a);
    else
        adam_run_f64((double *)(p + o), (const double *)(g + o), (double *)(m + o), (double *)(v + o), (double *)vm,
                     e - b, a);
}

int pf_adam_step(int dtype, void *param, const void *grad, void *exp_avg, void *exp_avg_sq, void *max_exp_avg_sq,
                 int64_t n, int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
                 int amsgrad, int decoupled, int maximize) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "adam_step: parameters must be float32 or float64, got %s",
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0) return pf_error(PF_ERR_VALUE, "adam_step: negative element count %lld", (long long)n);
    if (step < 1) return pf_error(PF_ERR_VALUE, "adam_step: step counts from 1, got %lld", (long long)step);
    if (n > 0 && (!param || !grad || !exp_avg || !exp_avg_sq))
        return pf_error(PF_ERR_VALUE, "adam_step: NULL param, grad, exp_avg or exp_avg_sq buffer");
    if (n > 0 && amsgrad && !max_exp_avg_sq)
        return pf_error(PF_ERR_VALUE, "adam_step: amsgrad needs a max_exp_avg_sq buffer (got NULL)");
    const adam_args a = {lr, beta1, beta2, eps, weight_decay, step, amsgrad, decoupled, maximize};
    adam_job j = {dtype, param, exp_avg, exp_avg_sq, amsgrad ? max_exp_avg_sq : NULL, grad, &a};
    pf_parallel_range(pf_threads_for(n), n, adam_chunk, &j);
    return PF_OK;
}

/* One call over a group's parameters (torch's foreach idea): the per-parameter Python work
 * left is gathering pointers. steps[i] is the parameter's float32 step tensor, incremented
 * here in float32 as torch's `step += 1`; the update then uses its value. Each parameter's
 * update is pf_adam_step's (serial or parallel by its own size). */
int pf_adam_multi(int dtype, int64_t count, void *const *params, const void *const *grads, void *const *exp_avgs,
                  void *const *exp_avg_sqs, void *const *max_exp_avg_sqs, const int64_t *numels, float *const *steps,
                  double lr, double beta1, double beta2, double eps, double weight_decay, int amsgrad, int decoupled,
                  int maximize) {
    if (count < 0) return pf_error(PF_ERR_VALUE, "adam_step: negative parameter count %lld", (long long)count);
    if (count > 0 && (!params || !grads || !exp_avgs || !exp_avg_sqs || !numels || !steps))
        return pf_error(PF_ERR_VALUE, "adam_step: NULL pointer array");
    if (count > 0 && amsgrad && !max_exp_avg_sqs)
        return pf_error(PF_ERR_VALUE, "adam_step: amsgrad needs max_exp_avg_sq buffers (got NULL)");
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "adam_step: parameters must be float32 or float64, got %s",
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    /* everything checked before anything is written: an error leaves every parameter as it was */
    for (int64_t i = 0; i < count; i++) {
        if (!steps[i]) return pf_error(PF_ERR_VALUE, "adam_step: NULL step of parameter %lld", (long long)i);
        float s = *steps[i] + 1.0f;
        if (!(s >= 1.0f && s < 9.2e18f))
            return pf_error(PF_ERR_VALUE, "adam_step: parameter %lld's step %g is not a count", (long long)i,
                            (double)*steps[i]);
        if (numels[i] < 0)
            return pf_error(PF_ERR_VALUE, "adam_step: parameter %lld has a negative size", (long long)i);
        if (numels[i] > 0 && (!params[i] || !grads[i] || !exp_avgs[i] || !exp_avg_sqs[i] ||
                              (amsgrad && !max_exp_avg_sqs[i])))
            return pf_error(PF_ERR_VALUE, "adam_step: a NULL buffer for parameter %lld", (long long)i);
    }
    for (int64_t i = 0; i < count; i++) {
        float s = *steps[i] + 1.0f;
        *steps[i] = s;
        pf_adam_step(dtype, params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], amsgrad ? max_exp_avg_sqs[i] : NULL,
                     numels[i], (int64_t)s, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled, maximize);
    }
    return PF_OK;
}
