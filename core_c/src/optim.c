/* Optimizer steps: one fused pass over a parameter, its gradient and its state.
 *
 * One convention for every optimizer: a PF_OPTIM_* kind, up to three state buffers s0..s2 of
 * the parameter's dtype, and the scalars in `hp` (listed per kind below). Each kernel
 * reproduces torch.optim's single-tensor update (foreach=False) operation by operation, in the
 * parameter's type: every scalar torch passes to a tensor op is cast to that type here, in the
 * same place, and products and quotients keep torch's left-to-right order (addcmul:
 * s + (v * a) * b, addcdiv: s + (v * a) / b). Step-dependent scalars are computed in double, as
 * torch computes them in Python: by the caller, except Adam's bias corrections, which come from
 * the step count ending its hp, so that a group's step (pf_optim_steps) is one call.
 *
 * SGD and Adam are the optimizers of most training loops: their loop body is one always-inline
 * function taking the option flags as arguments, and a switch calls it with constant flags, so
 * gcc emits one branch-free, vectorized loop per combination (once per ISA through
 * target_clones). maximize is a multiplication by -1, which is exact, so it needs no variant. */
#include <math.h>
#include <stdio.h>
#include "core.h"

/* Entries of hp per kind (flags are 0 or 1), and the state each uses:
 * SGD:      lr, momentum, dampening, weight_decay, nesterov, maximize, first_step
 *                                                                      s0 momentum_buffer (momentum != 0)
 * ADAM:     lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled, maximize, step
 *                                                                      s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq
 * ADADELTA: lr, rho, eps, weight_decay, maximize                       s0 square_avg, s1 acc_delta
 * ADAGRAD:  clr, eps, weight_decay, maximize                           s0 sum
 * RMSPROP:  lr, alpha, eps, weight_decay, momentum, centered, maximize s0 square_avg, s1 grad_avg, s2 momentum_buffer
 * ADAMAX:   clr, beta1, beta2, eps, weight_decay, maximize             s0 exp_avg, s1 exp_inf
 * NADAM:    beta1, beta2, eps, weight_decay, decoupled, decay, bias_correction2, c_grad, c_avg, maximize
 *                                                                      s0 exp_avg, s1 exp_avg_sq
 * RADAM:    beta1, beta2, eps, weight_decay, decoupled, decay, bias_correction1, lr, rectified,
 *           sqrt_bias_correction2, rect, maximize                      s0 exp_avg, s1 exp_avg_sq
 * ASGD:     decay, neg_eta, weight_decay, maximize, mu, mu_is_one     s0 ax
 * RPROP:    etaminus, etaplus, step_size_min, step_size_max, maximize  s0 prev, s1 step_size */
typedef struct {
    const char *name;
    int nhp;
    const char *state[3]; /* NULL: unused */
} kind_info;

static const kind_info kinds[] = {
    [PF_OPTIM_SGD] = {"sgd", 7, {"momentum_buffer"}},
    [PF_OPTIM_ADAM] = {"adam", 9, {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}},
    [PF_OPTIM_ADADELTA] = {"adadelta", 5, {"square_avg", "acc_delta"}},
    [PF_OPTIM_ADAGRAD] = {"adagrad", 4, {"sum"}},
    [PF_OPTIM_RMSPROP] = {"rmsprop", 7, {"square_avg", "grad_avg", "momentum_buffer"}},
    [PF_OPTIM_ADAMAX] = {"adamax", 6, {"exp_avg", "exp_inf"}},
    [PF_OPTIM_NADAM] = {"nadam", 10, {"exp_avg", "exp_avg_sq"}},
    [PF_OPTIM_RADAM] = {"radam", 12, {"exp_avg", "exp_avg_sq"}},
    [PF_OPTIM_ASGD] = {"asgd", 6, {"ax"}},
    [PF_OPTIM_RPROP] = {"rprop", 5, {"prev", "step_size"}},
};
_Static_assert(sizeof kinds / sizeof kinds[0] == PF_NUM_OPTIM, "an optimizer kind without its row");
#define MAX_HP 12

/* Whether state buffer k is read: some depend on the options. */
static int uses_state(int kind, const double *h, int k) {
    switch (kind) {
    case PF_OPTIM_SGD: return k == 0 && h[1] != 0;
    case PF_OPTIM_ADAM: return k < 2 || h[5] != 0;
    case PF_OPTIM_RMSPROP: return k == 0 || (k == 1 && h[5] != 0) || (k == 2 && h[4] > 0);
    default: return kinds[kind].state[k] != NULL;
    }
}

/* torch's lerp: w < 0.5 ? a + w (b - a) : b - (b - a)(1 - w) */
#define LERP(T, a, b, w) ((w) < (T)0.5 ? (a) + (w) * ((b) - (a)) : (b) - ((b) - (a)) * ((T)1 - (w)))

/* ---- SGD --------------------------------------------------------------------------------
 * torch.optim.SGD:
 *   g = maximize ? -grad : grad
 *   if weight_decay: g = g + weight_decay * p
 *   if momentum:     buf = first ? g : buf * momentum + (1 - dampening) * g
 *                    g = nesterov ? g + momentum * buf : buf
 *   p = p + (-lr) * g
 * Momentum modes: 0 none, 1 first step, 2 first step nesterov, 3 later, 4 later nesterov. */
#define SGD_GEN(T, SFX)                                                                            \
    PF_ALWAYS_INLINE void sgd_body_##SFX(T *restrict p, const T *restrict g, T *restrict buf, int64_t n, \
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
    PF_VEC_CLONES static void sgd_##SFX(const double *h, void *pv, const void *gv, void *s0, void *s1, \
                                        void *s2, int64_t n) {                                     \
        T *p = pv, *buf = s0;                                                                      \
        const T *g = gv;                                                                           \
        (void)s1, (void)s2;                                                                        \
        const T neg_lr = (T)(-h[0]), mom = (T)h[1], damp1 = (T)(1.0 - h[2]);                       \
        const T wd = (T)h[3], sign = h[5] != 0 ? (T)-1 : (T)1;                                     \
        int has_wd = h[3] != 0, mode = 0;                                                          \
        if (h[1] != 0) mode = (h[6] != 0 ? 1 : 3) + (h[4] != 0);                                   \
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

/* ---- Adam / AdamW ------------------------------------------------------------------------
 * torch.optim.Adam (capturable=False), step t counted from 1:
 *   g = maximize ? -grad : grad
 *   decoupled (AdamW): p = p * (1 - lr * weight_decay)    else g = g + weight_decay * p
 *   m = lerp(m, g, 1 - beta1)
 *   v = v * beta2 + (1 - beta2) * g * g
 *   vmax = maximum(vmax, v)           (amsgrad; NaN-propagating as torch.maximum)
 *   denom = sqrt(amsgrad ? vmax : v) / sqrt(1 - beta2^t) + eps
 *   p = p + (-lr / (1 - beta1^t)) * m / denom
 * Weight-decay modes: 0 none, 1 L2 (added to the gradient), 2 decoupled. Both lerp branches are
 * base + coef * (g - m): g - (g - m) * (1 - w) equals g + (g - m) * -(1 - w) exactly, since
 * negation is exact. */
#define ADAM_GEN(T, SFX, SQRT)                                                                      \
    static inline T max_##SFX(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }     \
    PF_ALWAYS_INLINE void adam_body_##SFX(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, \
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
    PF_VEC_CLONES static void adam_##SFX(const double *h, void *pv, const void *gv, void *s0, void *s1, \
                                         void *s2, int64_t n) {                                     \
        T *p = pv, *m = s0, *v = s1, *vmax = s2;                                                    \
        const T *g = gv;                                                                            \
        double w = 1.0 - h[1], t = h[8];                                                            \
        const T tw = (T)w;                                                                          \
        const int small = (tw < 0 ? -tw : tw) < (T)0.5;                                             \
        const T coef = small ? tw : -((T)1 - tw);                                                   \
        const T sign = h[7] != 0 ? (T)-1 : (T)1, wd = (T)h[4];                                      \
        const T decay = (T)(1.0 - h[0] * h[4]);                                                     \
        const T beta2 = (T)h[2], omb2 = (T)(1.0 - h[2]), eps = (T)h[3];                             \
        const T bc2_sqrt = (T)pow(1.0 - pow(h[2], t), 0.5);                                         \
        const T neg_step = (T)(-(h[0] / (1.0 - pow(h[1], t))));                                     \
        int wd_mode = h[4] != 0 ? (h[6] != 0 ? 2 : 1) : 0;                                          \
        switch (wd_mode * 2 + (h[5] != 0)) {                                                        \
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

/* ---- the adaptive optimizers --------------------------------------------------------------
 * Each kernel opens with KERNEL: the parameter, gradient and states as T, h the hyperparameters. */
#define KERNEL(name, SFX, T)                                                                              \
    static void name##_##SFX(const double *h, void *pv, const void *gv, void *s0v, void *s1v, void *s2v,  \
                             int64_t n) {                                                                 \
        T *p = pv, *s0 = s0v, *s1 = s1v, *s2 = s2v;                                                       \
        const T *g = gv;                                                                                  \
        (void)s1, (void)s2;
/* The gradient as torch's adaptive optimizers take it: negated to maximize, plus the weight decay
 * h[k] times the parameter (L2) */
#define L2_GRAD(T, k)                                                                              \
    T gi = g[i] * sign;                                                                            \
    if (h[k] != 0) gi = gi + wd * p[i];
/* NAdam's and RAdam's common part: weight decay (decoupled or L2), then both moments; hp 0..5
 * are beta1, beta2, eps, weight_decay, decoupled, decay in both */
#define MOMENTS_SETUP(T)                                                                           \
    const T w = (T)(1.0 - h[0]), beta2 = (T)h[1], omb2 = (T)(1.0 - h[1]), eps = (T)h[2];           \
    const T wd = (T)h[3], decay = (T)h[5];                                                         \
    const int l2 = h[3] != 0 && h[4] == 0, decoupled = h[3] != 0 && h[4] != 0;
#define MOMENTS(T)                                                                                 \
    T gi = g[i] * sign, pi = p[i];                                                                 \
    if (decoupled) pi = pi * decay;                                                                \
    if (l2) gi = gi + wd * pi;                                                                     \
    T m = LERP(T, s0[i], gi, w);                                                                   \
    s0[i] = m;                                                                                     \
    T v = s1[i] * beta2;                                                                           \
    v = v + omb2 * gi * gi;                                                                        \
    s1[i] = v;

#define ADAPTIVE_GEN(T, SFX, SQRT)                                                                        \
    KERNEL(adadelta, SFX, T)                                                                              \
        const T neg_lr = (T)(-h[0]), rho = (T)h[1], omr = (T)(1.0 - h[1]), eps = (T)h[2];                 \
        const T wd = (T)h[3], sign = h[4] != 0 ? (T)-1 : (T)1;                                            \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            L2_GRAD(T, 3)                                                                                 \
            T sq = s0[i] * rho;                                                                           \
            sq = sq + omr * gi * gi;                                                                      \
            s0[i] = sq;                                                                                   \
            T std = SQRT(sq + eps), delta = SQRT(s1[i] + eps);                                            \
            delta = delta / std;                                                                          \
            delta = delta * gi;                                                                           \
            T acc = s1[i] * rho;                                                                          \
            s1[i] = acc + omr * delta * delta;                                                            \
            p[i] = p[i] + neg_lr * delta;                                                                 \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(adagrad, SFX, T)                                                                               \
        const T neg_clr = (T)(-h[0]), eps = (T)h[1], wd = (T)h[2], sign = h[3] != 0 ? (T)-1 : (T)1;       \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            L2_GRAD(T, 2)                                                                                 \
            T s = s0[i] + gi * gi;                                                                        \
            s0[i] = s;                                                                                    \
            T std = SQRT(s) + eps;                                                                        \
            p[i] = p[i] + neg_clr * gi / std;                                                             \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(rmsprop, SFX, T)                                                                               \
        const T neg_lr = (T)(-h[0]), alpha = (T)h[1], oma = (T)(1.0 - h[1]), eps = (T)h[2];               \
        const T wd = (T)h[3], mom = (T)h[4], sign = h[6] != 0 ? (T)-1 : (T)1;                             \
        const int centered = h[5] != 0, momentum = h[4] > 0;                                              \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            L2_GRAD(T, 3)                                                                                 \
            T sq = s0[i] * alpha;                                                                         \
            sq = sq + oma * gi * gi;                                                                      \
            s0[i] = sq;                                                                                   \
            T avg;                                                                                        \
            if (centered) {                                                                               \
                T ga = LERP(T, s1[i], gi, oma);                                                           \
                s1[i] = ga;                                                                               \
                avg = SQRT(sq + (T)-1 * ga * ga);                                                         \
            } else {                                                                                      \
                avg = SQRT(sq);                                                                           \
            }                                                                                             \
            avg = avg + eps;                                                                              \
            if (momentum) {                                                                               \
                T b = s2[i] * mom;                                                                        \
                b = b + gi / avg;                                                                         \
                s2[i] = b;                                                                                \
                p[i] = p[i] + neg_lr * b;                                                                 \
            } else {                                                                                      \
                p[i] = p[i] + neg_lr * gi / avg;                                                          \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(adamax, SFX, T)                                                                                \
        const T neg_clr = (T)(-h[0]), w = (T)(1.0 - h[1]), beta2 = (T)h[2], eps = (T)h[3];                \
        const T wd = (T)h[4], sign = h[5] != 0 ? (T)-1 : (T)1;                                            \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            L2_GRAD(T, 4)                                                                                 \
            T m = LERP(T, s0[i], gi, w);                                                                  \
            s0[i] = m;                                                                                    \
            T ag = (gi < 0 ? -gi : gi) + eps;                                                             \
            T u = max_##SFX(s1[i] * beta2, ag);                                                           \
            s1[i] = u;                                                                                    \
            p[i] = p[i] + neg_clr * m / u;                                                                \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(nadam, SFX, T)                                                                                 \
        MOMENTS_SETUP(T)                                                                                  \
        const T bc2 = (T)h[6], cg = (T)h[7], cm = (T)h[8], sign = h[9] != 0 ? (T)-1 : (T)1;               \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            MOMENTS(T)                                                                                    \
            T denom = SQRT(v / bc2) + eps;                                                                \
            pi = pi + cg * gi / denom;                                                                    \
            p[i] = pi + cm * m / denom;                                                                   \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(radam, SFX, T)                                                                                 \
        MOMENTS_SETUP(T)                                                                                  \
        const T bc1 = (T)h[6], lr = (T)h[7], sqrt_bc2 = (T)h[9], rect = (T)h[10];                         \
        const T sign = h[11] != 0 ? (T)-1 : (T)1;                                                         \
        const int rectified = h[8] != 0;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            MOMENTS(T)                                                                                    \
            T upd = m / bc1 * lr;                                                                         \
            if (rectified) {                                                                              \
                upd = upd * (sqrt_bc2 / (SQRT(v) + eps));                                                 \
                upd = upd * rect;                                                                         \
            }                                                                                             \
            p[i] = pi + (T)-1 * upd;                                                                      \
        }                                                                                                 \
    }
ADAPTIVE_GEN(float, f32, sqrtf)
ADAPTIVE_GEN(double, f64, sqrt)

/* ---- ASGD, Rprop ------------------------------------------------------------------------------
 * torch.optim.ASGD (capturable=False); eta and mu are the float32 values of their state, read by
 * the caller, which also computes decay = 1 - lambd * eta in double:
 *   g = maximize ? -grad : grad;  if weight_decay: g = g + weight_decay * p
 *   p = p * decay;  p = p + (-eta) * g
 *   ax = mu == 1 ? p : ax + (p - ax) * mu
 * torch.optim.Rprop (capturable=False):
 *   g = maximize ? -grad : grad;  f = sign(g * prev) > 0 ? etaplus : < 0 ? etaminus : 1 (torch's sign(NaN) is 0)
 *   step_size = clamp(step_size * f, min, max);  g = f == etaminus ? 0 : g
 *   p = p + (-1 * sign(g)) * step_size;  prev = g */
#define SIGN_GEN(T, SFX)                                                                                  \
    KERNEL(asgd, SFX, T)                                                                                  \
        const T decay = (T)h[0], neg_eta = (T)h[1], wd = (T)h[2], sign = h[3] != 0 ? (T)-1 : (T)1;        \
        const T mu = (T)h[4];                                                                             \
        const int mu_one = h[5] != 0;                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            L2_GRAD(T, 2)                                                                                 \
            T pi = p[i] * decay;                                                                          \
            pi = pi + neg_eta * gi;                                                                       \
            p[i] = pi;                                                                                    \
            s0[i] = mu_one ? pi : s0[i] + (pi - s0[i]) * mu;                                              \
        }                                                                                                 \
    }                                                                                                     \
    KERNEL(rprop, SFX, T)                                                                                 \
        const T em = (T)h[0], ep = (T)h[1], lo = (T)h[2], hi = (T)h[3], sign = h[4] != 0 ? (T)-1 : (T)1;  \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            T gi = g[i] * sign, x = gi * s0[i];                                                           \
            T f = x > 0 ? ep : x < 0 ? em : (T)1;                                                         \
            T ss = s1[i] * f;                                                                             \
            ss = ss < lo ? lo : ss;                                                                       \
            ss = ss > hi ? hi : ss;                                                                       \
            s1[i] = ss;                                                                                   \
            if (f == em) gi = 0;                                                                          \
            T sg = gi > 0 ? (T)1 : gi < 0 ? (T)-1 : (T)0;                                                 \
            p[i] = p[i] + ((T)-1 * sg) * ss;                                                              \
            s0[i] = gi;                                                                                   \
        }                                                                                                 \
    }
SIGN_GEN(float, f32)
SIGN_GEN(double, f64)

/* ---- entry points ---------------------------------------------------------------------------- */

typedef void (*step_fn)(const double *h, void *p, const void *g, void *s0, void *s1, void *s2, int64_t n);
static const step_fn kernels[][2] = {
    [PF_OPTIM_SGD] = {sgd_f32, sgd_f64},
    [PF_OPTIM_ADAM] = {adam_f32, adam_f64},
    [PF_OPTIM_ADADELTA] = {adadelta_f32, adadelta_f64},
    [PF_OPTIM_ADAGRAD] = {adagrad_f32, adagrad_f64},
    [PF_OPTIM_RMSPROP] = {rmsprop_f32, rmsprop_f64},
    [PF_OPTIM_ADAMAX] = {adamax_f32, adamax_f64},
    [PF_OPTIM_NADAM] = {nadam_f32, nadam_f64},
    [PF_OPTIM_RADAM] = {radam_f32, radam_f64},
    [PF_OPTIM_ASGD] = {asgd_f32, asgd_f64},
    [PF_OPTIM_RPROP] = {rprop_f32, rprop_f64},
};
_Static_assert(sizeof kernels / sizeof kernels[0] == PF_NUM_OPTIM, "an optimizer kind without its kernels");

typedef struct {
    step_fn fn;
    const double *h;
    size_t es;
    char *p, *s[3];
    const char *g;
} step_job;

static void step_part(void *arg, int64_t b, int64_t e) {
    const step_job *j = arg;
    size_t o = (size_t)b * j->es;
#define AT(ptr) ((ptr) ? (ptr) + o : NULL)
    j->fn(j->h, j->p + o, j->g + o, AT(j->s[0]), AT(j->s[1]), AT(j->s[2]), e - b);
#undef AT
}

/* Everything pf_optim_step checks, before anything is written; `which` names the parameter. */
static int check_step(int kind, int dtype, int64_t n, const void *param, const void *grad, void *const *s,
                      const double *hp, int nhp, const char *which) {
    if (kind < 0 || kind >= PF_NUM_OPTIM) return pf_error(PF_ERR_VALUE, "optim_step: unknown optimizer %d", kind);
    const char *name = kinds[kind].name;
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s step: parameters must be float32 or float64, got %s", name,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (!hp || nhp != kinds[kind].nhp)
        return pf_error(PF_ERR_VALUE, "%s step: expected %d hyperparameters, got %d", name, kinds[kind].nhp, nhp);
    if (kind == PF_OPTIM_ADAM && !(hp[8] >= 1))
        return pf_error(PF_ERR_VALUE, "%s step: the step counts from 1, got %g", name, hp[8]);
    if (n < 0) return pf_error(PF_ERR_VALUE, "%s step: %s has a negative element count %lld", name, which, (long long)n);
    if (n == 0) return PF_OK;
    if (!param || !grad) return pf_error(PF_ERR_VALUE, "%s step: NULL parameter or gradient for %s", name, which);
    for (int k = 0; k < 3; k++)
        if (uses_state(kind, hp, k) && !s[k])
            return pf_error(PF_ERR_VALUE, "%s step: %s needs its %s buffer (got NULL)", name, which,
                            kinds[kind].state[k]);
    return PF_OK;
}

static void run_step(int kind, int dtype, int64_t n, void *param, const void *grad, void *const *s, const double *hp) {
    step_job j = {kernels[kind][dtype == PF_FLOAT64], hp, pf_dtype_size[dtype], param, {s[0], s[1], s[2]}, grad};
    pf_parallel_range(pf_threads_for(n), n, step_part, &j);
}

int pf_optim_step(int kind, int dtype, int64_t n, void *param, const void *grad, void *s0, void *s1, void *s2,
                  const double *hp, int nhp) {
    void *s[3] = {s0, s1, s2};
    int rc = check_step(kind, dtype, n, param, grad, s, hp, nhp, "the parameter");
    if (rc == PF_OK) run_step(kind, dtype, n, param, grad, s, hp);
    return rc;
}

int pf_optim_steps(int kind, int dtype, int64_t count, void *const *params, const void *const *grads,
                   void *const *s0, void *const *s1, void *const *s2, const int64_t *numels, float *const *steps,
                   const double *hp, int nhp) {
    if (count < 0) return pf_error(PF_ERR_VALUE, "optim_steps: negative parameter count %lld", (long long)count);
    if (count > 0 && (!params || !grads || !s0 || !numels))
        return pf_error(PF_ERR_VALUE, "optim_steps: NULL pointer array");
    void *none[3] = {NULL, NULL, NULL};
    if (kind < 0 || kind >= PF_NUM_OPTIM || !hp || nhp != kinds[kind].nhp) /* never OK: the message */
        return check_step(kind, dtype, 0, NULL, NULL, none, hp, nhp, "");
    if (steps && kind != PF_OPTIM_ADAM)
        return pf_error(PF_ERR_VALUE, "optim_steps: %s does not take step counts", kinds[kind].name);
    double h[MAX_HP];
    memcpy(h, hp, (size_t)nhp * sizeof(double));
    /* everything checked before anything is written: an error leaves every parameter as it was */
    for (int64_t i = 0; i < count; i++) {
        char which[32];
        snprintf(which, sizeof which, "parameter %lld", (long long)i);
        if (steps && !steps[i]) return pf_error(PF_ERR_VALUE, "optim_steps: NULL step of %s", which);
        float t = steps ? *steps[i] + 1.0f : 0.0f;
        if (steps && !(t >= 1.0f && t < 9.2e18f))
            return pf_error(PF_ERR_VALUE, "optim_steps: %s's step %g is not a count", which, (double)*steps[i]);
        if (steps) h[nhp - 1] = t;
        void *s[3] = {s0[i], s1 ? s1[i] : NULL, s2 ? s2[i] : NULL};
        int rc = check_step(kind, dtype, numels[i], params[i], grads[i], s, h, nhp, which);
        if (rc) return rc;
    }
    for (int64_t i = 0; i < count; i++) {
        if (steps) h[nhp - 1] = *steps[i] += 1.0f;
        void *s[3] = {s0[i], s1 ? s1[i] : NULL, s2 ? s2[i] : NULL};
        run_step(kind, dtype, numels[i], params[i], grads[i], s, h);
    }
    return PF_OK;
}
