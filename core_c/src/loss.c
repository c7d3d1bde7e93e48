/* Cross-entropy over class indices, forward and backward, one call each.
 *
 * The composition (log_softmax, then nll_loss's ne, where, amin/amax range check, gather,
 * mul, sum, div; and their backwards) is a dozen ops with two reads back to Python. Here
 * a row's log-sum-exp, its picked logit and its weight are one pass; only the row's lse
 * is kept, and backward writes w_t * scale * (softmax - onehot) straight from the logits.
 * Row losses are stored first and summed after in row order, so the result does not
 * depend on the thread count. */
#include "core.h"

typedef struct {
    int dtype, reduction;
    const void *x, *w, *lse_in, *gscale;
    const int64_t *t;
    void *loss, *lse, *gx;
    int64_t n, c, ignore;
    double g0;
} ce_args;

#define CE_KERNELS(T, SUF, EXP, LOG)                                                                     \
    PF_VEC_CLONES static void ce_fwd_##SUF(void *arg, int64_t b, int64_t e) {                            \
        const ce_args *a = arg;                                                                          \
        const T *x = a->x, *w = a->w;                                                                    \
        T *loss = a->loss, *lse = a->lse;                                                                \
        int64_t c = a->c;                                                                                \
        for (int64_t i = b; i < e; i++) {                                                                \
            const T *xi = x + i * c;                                                                     \
            T m = xi[0];                                                                                 \
            for (int64_t j = 1; j < c; j++) m = xi[j] > m ? xi[j] : m;                                   \
            T mm = isinf(m) ? (T)0 : m; /* all -inf (or an inf): no shift, as log_softmax */             \
            T s = 0;                                                                                     \
            for (int64_t j = 0; j < c; j++) s += EXP(xi[j] - mm);                                        \
            T l = LOG(s) + mm;                                                                           \
            lse[i] = l;                                                                                  \
            int64_t t = a->t[i];                                                                         \
            loss[i] = t == a->ignore ? (T)0 : (w ? w[t] : (T)1) * (l - xi[t]);                           \
        }                                                                                                \
    }                                                                                                    \
    PF_VEC_CLONES static void ce_bwd_##SUF(void *arg, int64_t b, int64_t e) {                            \
        const ce_args *a = arg;                                                                          \
        const T *x = a->x, *w = a->w, *lse = a->lse_in, *gs = a->gscale;                                 \
        T *gx = a->gx;                                                                                   \
        int64_t c = a->c;                                                                                \
        for (int64_t i = b; i < e; i++) {                                                                \
            const T *xi = x + i * c;                                                                     \
            T *gi = gx + i * c;                                                                          \
            int64_t t = a->t[i];                                                                         \
            if (t == a->ignore) {                                                                        \
                for (int64_t j = 0; j < c; j++) gi[j] = 0;                                               \
                continue;                                                                                \
            }                                                                                            \
            T k = (gs ? gs[i] : (T)a->g0) * (w ? w[t] : (T)1), l = lse[i];                               \
            for (int64_t j = 0; j < c; j++) gi[j] = k * EXP(xi[j] - l);                                  \
            gi[t] -= k;                                                                                  \
        }                                                                                                \
    }

CE_KERNELS(float, f32, pf_expf, logf)
CE_KERNELS(double, f64, exp, log)

static int check_common(int dtype, const int64_t *target, int64_t n, int64_t c, int64_t ignore, const char *fn) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s(): dtype must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0 || c < 1)
        return pf_error(PF_ERR_VALUE, "%s(): expected n >= 0 rows of c >= 1 classes, got %lld rows of %lld", fn,
                        (long long)n, (long long)c);
    if (n > 0 && !target) return pf_error(PF_ERR_VALUE, "%s(): NULL target", fn);
    for (int64_t i = 0; i < n; i++)
        if (target[i] != ignore && (target[i] < 0 || target[i] >= c))
            return pf_error(PF_ERR_INDEX, "%s(): target %lld is out of bounds for %lld classes", fn,
                            (long long)target[i], (long long)c);
    return PF_OK;
}

int pf_cross_entropy(int dtype, const void *x, const int64_t *target, const void *weight, int64_t n, int64_t c,
                     int64_t ignore_index, void *loss, void *lse, double *sums) {
    int rc = check_common(dtype, target, n, c, ignore_index, "cross_entropy");
    if (rc) return rc;
    if (!sums) return pf_error(PF_ERR_VALUE, "cross_entropy(): NULL sums");
    sums[0] = sums[1] = 0.0;
    if (n == 0) return PF_OK;
    if (!x || !loss || !lse) return pf_error(PF_ERR_VALUE, "cross_entropy(): a NULL input or output buffer");
    ce_args a = {.dtype = dtype, .x = x, .w = weight, .t = target, .loss = loss, .lse = lse, .n = n, .c = c,
                 .ignore = ignore_index};
    pf_parallel_range(pf_threads_for(n * c), n, dtype == PF_FLOAT32 ? ce_fwd_f32 : ce_fwd_f64, &a);
    double s = 0.0, ws = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (target[i] == ignore_index) continue;
        s += pf_load_f64((const char *)loss + i * (int64_t)pf_dtype_size[dtype], dtype);
        ws += weight ? pf_load_f64((const char *)weight + target[i] * (int64_t)pf_dtype_size[dtype], dtype) : 1.0;
    }
    sums[0] = s;
    sums[1] = ws;
    return PF_OK;
}

int pf_cross_entropy_backward(int dtype, const void *x, const int64_t *target, const void *weight, const void *lse,
                              const void *gscale, double g0, int64_t n, int64_t c, int64_t ignore_index, void *gx) {
    int rc = check_common(dtype, target, n, c, ignore_index, "cross_entropy_backward");
    if (rc) return rc;
    if (n == 0) return PF_OK;
    if (!x || !lse || !gx) return pf_error(PF_ERR_VALUE, "cross_entropy_backward(): a NULL input or output buffer");
    ce_args a = {.dtype = dtype, .x = x, .w = weight, .t = target, .lse_in = lse, .gscale = gscale, .g0 = g0,
                 .gx = gx, .n = n, .c = c, .ignore = ignore_index};
    pf_parallel_range(pf_threads_for(n * c), n, dtype == PF_FLOAT32 ? ce_bwd_f32 : ce_bwd_f64, &a);
    return PF_OK;
}
