/* Scans along one dim: cumsum, cumprod, logcumsumexp (pf_scan) and cummax / cummin with the
 * index of each running extreme (pf_scan_extreme).
 *
 * x and out contiguous, viewed as [outer, n, inner]; each outer block runs down n
 * with `inner` running accumulators side by side, so the inner loop is unit-stride and
 * vectorises. */
#include "core.h"

typedef struct {
    const pf_tensor *x, *out;
    int64_t n, inner, chunks;
    int op;
} scan_job;

/* A scan down a dim with `inner` > 1 runs in units of one outer block and up to SCAN_COLS columns, so that a
 * tensor with outer = 1 (cumsum over dim 0) still splits across threads and the accumulators stay in L1. */
#define SCAN_COLS 512

/* log(exp(a) + exp(b)) without overflow; -inf is the empty sum, equal infinities stay themselves */
static inline double log_add_exp(double a, double b) {
    if (a != a || b != b) return a + b;
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    if (a == b) return a + 0.69314718055994530942; /* log 2 */
    double m = a > b ? a : b, d = a > b ? b - a : a - b;
    return m + log1p(exp(d));
}

/* a row of float32 or float64 into double accumulators, in a loop that vectorises */
#define SCAN_TYPED(T)                                                                  \
    do {                                                                               \
        const T *s = (const T *)sp;                                                    \
        T *d = (T *)dp;                                                                \
        if (prod)                                                                      \
            for (int64_t i = 0; i < w; i++) d[i] = (T)(fa[i] *= s[i]);                 \
        else                                                                           \
            for (int64_t i = 0; i < w; i++) d[i] = (T)(fa[i] += s[i]);                 \
    } while (0)

/* one row of w columns into the accumulators: float32 and float64 in their own loops, which vectorise */
static void scan_row(const char *sp, char *dp, int64_t w, int op, int xdt, int odt, double *fa, int64_t *ia) {
    size_t xs = pf_dtype_size[xdt], os = pf_dtype_size[odt];
    int prod = op == PF_SCAN_PROD;
    if (xdt == PF_FLOAT32 && odt == PF_FLOAT32 && op != PF_SCAN_LOGSUMEXP) {
        SCAN_TYPED(float);
    } else if (xdt == PF_FLOAT64 && odt == PF_FLOAT64 && op != PF_SCAN_LOGSUMEXP) {
        SCAN_TYPED(double);
    } else if (pf_is_float(odt)) {
        for (int64_t i = 0; i < w; i++) {
            double v = pf_load_f64(sp + (size_t)i * xs, xdt);
            fa[i] = op == PF_SCAN_LOGSUMEXP ? log_add_exp(fa[i], v) : prod ? fa[i] * v : fa[i] + v;
            pf_store_f64(dp + (size_t)i * os, odt, fa[i]);
        }
    } else {
        for (int64_t i = 0; i < w; i++) {
            /* wrap on overflow as torch's int64 does, without C's undefined behaviour */
            uint64_t v = (uint64_t)pf_load_i64(sp + (size_t)i * xs, xdt), a = (uint64_t)ia[i];
            ia[i] = (int64_t)(prod ? a * v : a + v);
            pf_store_i64(dp + (size_t)i * os, odt, ia[i]);
        }
    }
}

/* units [u0, u1): unit u is outer block u / chunks, columns from (u % chunks) * SCAN_COLS */
static void scan_units(void *arg, int64_t u0, int64_t u1) {
    scan_job *j = arg;
    const pf_tensor *x = j->x, *out = j->out;
    int64_t n = j->n, inner = j->inner;
    int op = j->op, prod = op == PF_SCAN_PROD, xdt = x->dtype, odt = out->dtype;
    size_t xs = pf_dtype_size[xdt], os = pf_dtype_size[odt];
    if (xdt == PF_FLOAT32 && odt == PF_FLOAT32 && inner == 1 && op != PF_SCAN_LOGSUMEXP) {
        /* the common case, a scan down contiguous float32 rows */
        for (int64_t o = u0; o < u1; o++) {
            const float *src = (const float *)x->data + o * n;
            float *dst = (float *)out->data + o * n;
            double acc = prod;
            if (prod)
                for (int64_t i = 0; i < n; i++) dst[i] = (float)(acc *= src[i]);
            else
                for (int64_t i = 0; i < n; i++) dst[i] = (float)(acc += src[i]);
        }
        return;
    }
    /* accumulators are double for floating outputs (as torch's CPU kernels) and int64 for integer ones */
    union {
        double f[SCAN_COLS];
        int64_t i[SCAN_COLS];
    } acc;
    for (int64_t u = u0; u < u1; u++) {
        int64_t o = u / j->chunks, c0 = u % j->chunks * SCAN_COLS;
        int64_t w = inner - c0 < SCAN_COLS ? inner - c0 : SCAN_COLS;
        for (int64_t i = 0; i < w; i++) {
            if (pf_is_float(odt)) acc.f[i] = op == PF_SCAN_LOGSUMEXP ? -INFINITY : prod;
            else acc.i[i] = prod;
        }
        for (int64_t r = 0; r < n; r++) {
            size_t at = (size_t)((o * n + r) * inner + c0);
            scan_row((const char *)x->data + at * xs, (char *)out->data + at * os, w, op, xdt, odt, acc.f, acc.i);
        }
    }
}
int pf_scan(int op, const pf_tensor *x, int dim, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "x")) || (rc = pf_check(out, "out"))) return rc;
    if (op != PF_SCAN_SUM && op != PF_SCAN_PROD && op != PF_SCAN_LOGSUMEXP)
        return pf_error(PF_ERR_VALUE, "scan: unknown op %d", op);
    if (op == PF_SCAN_LOGSUMEXP && !pf_is_float(out->dtype))
        return pf_error(PF_ERR_TYPE, "logcumsumexp: expected a floating output, got %s", pf_dtype_name[out->dtype]);
    if (dim < 0 || dim >= (x->ndim ? x->ndim : 1))
        return pf_error(PF_ERR_INDEX, "scan: dim %d out of range for a %d-d tensor", dim, x->ndim);
    if (out->ndim != x->ndim) return pf_error(PF_ERR_VALUE, "scan: out has %d dims, x has %d", out->ndim, x->ndim);
    for (int d = 0; d < x->ndim; d++)
        if (out->shape[d] != x->shape[d]) {
            char a[128], b[128];
            return pf_error(PF_ERR_VALUE, "scan: out shape %s differs from x's %s", pf_shape_str(out, a),
                            pf_shape_str(x, b));
        }
    if (!pf_is_contiguous(x) || !pf_is_contiguous(out))
        return pf_error(PF_ERR_VALUE, "scan: x and out must be contiguous");
    int64_t outer = 1, inner = 1, n = x->ndim ? x->shape[dim] : 1;
    for (int d = 0; d < dim; d++) outer *= x->shape[d];
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
    if (outer * n * inner == 0) return PF_OK;
    int64_t chunks = (inner + SCAN_COLS - 1) / SCAN_COLS;
    scan_job job = {x, out, n, inner, chunks, op};
    pf_parallel_range(pf_threads_for(outer * n * inner), outer * chunks, scan_units, &job);
    return PF_OK;
}

/* ---- cummax / cummin ---- */

typedef struct {
    const pf_tensor *x, *values, *indices;
    int64_t outer, n, inner;
    int largest;
} extreme_job;

/* torch's rule: a NaN always takes over (so the index is the latest NaN's), otherwise an element equal to
 * the running extreme takes over too (the index is the latest of equal ones) */
#define TAKES_OVER_F(v, best, largest) ((v) != (v) || ((best) == (best) && ((largest) ? (v) >= (best) : (v) <= (best))))
#define TAKES_OVER_I(v, best, largest) ((largest) ? (v) >= (best) : (v) <= (best))

static void extreme_blocks(void *arg, int64_t o0, int64_t o1) {
    const extreme_job *j = arg;
    int dt = j->x->dtype, floating = pf_is_float(dt), largest = j->largest;
    size_t es = pf_dtype_size[dt];
    int64_t n = j->n, inner = j->inner;
    for (int64_t o = o0; o < o1; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i, best_at = base;
            const char *src = (const char *)j->x->data;
            char *vals = (char *)j->values->data;
            int64_t *idx = (int64_t *)j->indices->data, bi = 0;
            for (int64_t r = 0; r < n; r++) {
                int64_t at = base + r * inner;
                const char *p = src + (size_t)at * es;
                if (r > 0) {
                    const char *b = src + (size_t)best_at * es;
                    int take = floating ? TAKES_OVER_F(pf_load_f64(p, dt), pf_load_f64(b, dt), largest)
                                        : TAKES_OVER_I(pf_load_i64(p, dt), pf_load_i64(b, dt), largest);
                    if (take) best_at = at, bi = r;
                }
                memcpy(vals + (size_t)at * es, src + (size_t)best_at * es, es);
                idx[at] = bi;
            }
        }
}

int pf_scan_extreme(const pf_tensor *x, int dim, int largest, pf_tensor *values, pf_tensor *indices) {
    const char *fn = largest ? "cummax" : "cummin";
    int rc;
    if ((rc = pf_check(x, "x")) || (rc = pf_check(values, "values")) || (rc = pf_check(indices, "indices")))
        return rc;
    if (dim < 0 || dim >= (x->ndim ? x->ndim : 1))
        return pf_error(PF_ERR_INDEX, "%s: dim %d out of range for a %d-d tensor", fn, dim, x->ndim);
    if (values->dtype != x->dtype || indices->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "%s: values must be %s and indices int64, got %s and %s", fn,
                        pf_dtype_name[x->dtype], pf_dtype_name[values->dtype], pf_dtype_name[indices->dtype]);
    if (values->ndim != x->ndim || indices->ndim != x->ndim)
        return pf_error(PF_ERR_VALUE, "%s: values and indices must have x's %d dims", fn, x->ndim);
    for (int d = 0; d < x->ndim; d++)
        if (values->shape[d] != x->shape[d] || indices->shape[d] != x->shape[d]) {
            char a[128], b[128];
            return pf_error(PF_ERR_VALUE, "%s: values %s or indices differ from x's shape %s", fn,
                            pf_shape_str(values, a), pf_shape_str(x, b));
        }
    if (!pf_is_contiguous(x) || !pf_is_contiguous(values) || !pf_is_contiguous(indices))
        return pf_error(PF_ERR_VALUE, "%s: x, values and indices must be contiguous", fn);
    int64_t outer = 1, inner = 1, n = x->ndim ? x->shape[dim] : 1;
    for (int d = 0; d < dim; d++) outer *= x->shape[d];
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
    if (outer * n * inner == 0) return PF_OK;
    extreme_job job = {x, values, indices, outer, n, inner, largest != 0};
    pf_parallel_range(pf_threads_for(outer * n * inner), outer, extreme_blocks, &job);
    return PF_OK;
}
