/* Scans (cumsum, cumprod) along one dim.
 *
 * x and out contiguous, viewed as [outer, n, inner]; each outer block runs down n
 * with `inner` running accumulators side by side, so the inner loop is unit-stride and
 * vectorises. Accumulators are double for floating dtypes (as torch's CPU kernels) and int64
 * for integer ones. */
#include <stdlib.h>
#include "core.h"

typedef struct {
    const pf_tensor *x, *out;
    int64_t outer, n, inner;
    int prod, failed;
} scan_job;

/* outer blocks [o0, o1) */
static void scan_blocks(void *arg, int64_t o0, int64_t o1) {
    scan_job *j = arg;
    const pf_tensor *x = j->x, *out = j->out;
    int64_t n = j->n, inner = j->inner;
    int prod = j->prod, xdt = x->dtype, odt = out->dtype, floating = pf_is_float(odt);
    size_t xs = pf_dtype_size[xdt], os = pf_dtype_size[odt];
    if (xdt == PF_FLOAT32 && odt == PF_FLOAT32 && inner == 1) {
        /* the common case, a scan down contiguous float32 rows */
        for (int64_t o = o0; o < o1; o++) {
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
    void *acc = malloc((size_t)inner * 8);
    if (!acc) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    double *fa = acc;
    int64_t *ia = acc;
    for (int64_t o = o0; o < o1; o++) {
        const char *src = (const char *)x->data + (size_t)(o * n * inner) * xs;
        char *dst = (char *)out->data + (size_t)(o * n * inner) * os;
        for (int64_t i = 0; i < inner; i++) {
            if (floating) fa[i] = prod;
            else ia[i] = prod;
        }
        for (int64_t r = 0; r < n; r++) {
            const char *sp = src + (size_t)(r * inner) * xs;
            char *dp = dst + (size_t)(r * inner) * os;
            if (floating) {
                for (int64_t i = 0; i < inner; i++) {
                    double v = pf_load_f64(sp + (size_t)i * xs, xdt);
                    fa[i] = prod ? fa[i] * v : fa[i] + v;
                    pf_store_f64(dp + (size_t)i * os, odt, fa[i]);
                }
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    /* wrap on overflow as torch's int64 does, without C's undefined behaviour */
                    uint64_t v = (uint64_t)pf_load_i64(sp + (size_t)i * xs, xdt), a = (uint64_t)ia[i];
                    ia[i] = (int64_t)(prod ? a * v : a + v);
                    pf_store_i64(dp + (size_t)i * os, odt, ia[i]);
                }
            }
        }
    }
    free(acc);
}

int pf_scan(int op, const pf_tensor *x, int dim, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "x")) || (rc = pf_check(out, "out"))) return rc;
    if (op != PF_SCAN_SUM && op != PF_SCAN_PROD) return pf_error(PF_ERR_VALUE, "scan: unknown op %d", op);
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
    scan_job job = {x, out, outer, n, inner, op == PF_SCAN_PROD, 0};
    pf_parallel_range(pf_threads_for(outer * n * inner), outer, scan_blocks, &job);
    if (job.failed)
        return pf_error(PF_ERR_NOMEM, "scan: cannot allocate %lld bytes of scratch", (long long)(8 * inner));
    return PF_OK;
}
