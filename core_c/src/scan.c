/* Scans (cumsum, cumprod) along one dim, and multinomial sampling by inverse CDF.
 *
 * Scans: x and out contiguous, viewed as [outer, n, inner]; each outer block runs down n
 * with `inner` running accumulators side by side, so the inner loop is unit-stride and
 * vectorises. Accumulators are double for floating dtypes (as torch's CPU kernels) and int64
 * for integer ones. */
#include <stdlib.h>
#include "core.h"

static int contiguous(const pf_tensor *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] > 1 && t->strides[d] != expect) return 0;
        expect *= t->shape[d] > 1 ? t->shape[d] : 1;
    }
    return 1;
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
    if (!contiguous(x) || !contiguous(out)) return pf_error(PF_ERR_VALUE, "scan: x and out must be contiguous");
    int64_t outer = 1, inner = 1, n = x->ndim ? x->shape[dim] : 1;
    for (int d = 0; d < dim; d++) outer *= x->shape[d];
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
    if (outer * n * inner == 0) return PF_OK;
    int prod = op == PF_SCAN_PROD, xdt = x->dtype, odt = out->dtype;
    size_t xs = pf_dtype_size[xdt], os = pf_dtype_size[odt];
    int floating = pf_is_float(odt);
    int nt = pf_threads_for(outer * n * inner);
    if (outer < nt) nt = (int)outer;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(| : failed)
#endif
    {
        int t = 0, team = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        team = omp_get_num_threads();
#endif
        int64_t begin, end;
        pf_split(outer, t, team, &begin, &end);
        if (xdt == PF_FLOAT32 && odt == PF_FLOAT32 && inner == 1) {
            /* the common case, a scan down contiguous float32 rows */
            for (int64_t o = begin; o < end; o++) {
                const float *src = (const float *)x->data + o * n;
                float *dst = (float *)out->data + o * n;
                double acc = prod;
                if (prod)
                    for (int64_t j = 0; j < n; j++) dst[j] = (float)(acc *= src[j]);
                else
                    for (int64_t j = 0; j < n; j++) dst[j] = (float)(acc += src[j]);
            }
        } else if (begin < end) {
            void *acc = malloc((size_t)inner * 8);
            if (!acc) {
                failed = 1;
            } else {
                double *fa = acc;
                int64_t *ia = acc;
                for (int64_t o = begin; o < end; o++) {
                    const char *src = (const char *)x->data + (size_t)(o * n * inner) * xs;
                    char *dst = (char *)out->data + (size_t)(o * n * inner) * os;
                    for (int64_t i = 0; i < inner; i++) {
                        if (floating) fa[i] = prod;
                        else ia[i] = prod;
                    }
                    for (int64_t j = 0; j < n; j++) {
                        const char *s = src + (size_t)(j * inner) * xs;
                        char *d = dst + (size_t)(j * inner) * os;
                        if (floating) {
                            for (int64_t i = 0; i < inner; i++) {
                                double v = pf_load_f64(s + (size_t)i * xs, xdt);
                                fa[i] = prod ? fa[i] * v : fa[i] + v;
                                pf_store_f64(d + (size_t)i * os, odt, fa[i]);
                            }
                        } else {
                            for (int64_t i = 0; i < inner; i++) {
                                /* wrap on overflow as torch's int64 does, without C's undefined behaviour */
                                uint64_t v = (uint64_t)pf_load_i64(s + (size_t)i * xs, xdt), a = (uint64_t)ia[i];
                                ia[i] = (int64_t)(prod ? a * v : a + v);
                                pf_store_i64(d + (size_t)i * os, odt, ia[i]);
                            }
                        }
                    }
                }
                free(acc);
            }
        }
    }
    if (failed) return pf_error(PF_ERR_NOMEM, "scan: cannot allocate %lld bytes of scratch", (long long)(8 * inner));
    return PF_OK;
}

/* ---- multinomial ------------------------------------------------------------------ */

int pf_multinomial(const pf_tensor *probs, const pf_tensor *u, int replacement, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(probs, "probs")) || (rc = pf_check(u, "u")) || (rc = pf_check(out, "out"))) return rc;
    if (probs->ndim != 2 || u->ndim != 2 || out->ndim != 2)
        return pf_error(PF_ERR_VALUE, "multinomial: probs, u and out must be 2-d [rows, n] / [rows, samples]");
    if (probs->dtype != PF_FLOAT64 || u->dtype != PF_FLOAT64 || out->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "multinomial: probs and u must be float64 and out int64");
    if (!contiguous(probs) || !contiguous(u) || !contiguous(out))
        return pf_error(PF_ERR_VALUE, "multinomial: operands must be contiguous");
    int64_t rows = probs->shape[0], n = probs->shape[1], k = out->shape[1];
    if (u->shape[0] != rows || out->shape[0] != rows || u->shape[1] != k)
        return pf_error(PF_ERR_VALUE, "multinomial: u and out must be [%lld, %lld]", (long long)rows, (long long)k);
    if (!replacement && k > n)
        return pf_error(PF_ERR_VALUE,
                        "multinomial: cannot sample %lld > %lld categories without replacement", (long long)k,
                        (long long)n);
    if (n == 0 && rows && k) return pf_error(PF_ERR_VALUE, "multinomial: probs has no categories");
    const double *P = probs->data, *U = u->data;
    int64_t *O = out->data;
    /* validate every row first, so a bad row leaves out untouched */
    for (int64_t r = 0; r < rows; r++) {
        double total = 0;
        int64_t nonzero = 0;
        for (int64_t j = 0; j < n; j++) {
            double p = P[r * n + j];
            if (!(p >= 0) || p == INFINITY)
                return pf_error(PF_ERR_VALUE,
                                "multinomial: probability %g at row %lld, category %lld; probabilities must be "
                                "finite and non-negative", p, (long long)r, (long long)j);
            total += p;
            nonzero += p > 0;
        }
        if (!(total > 0) || total == INFINITY)
            return pf_error(PF_ERR_VALUE, "multinomial: row %lld sums to %g; each row needs a positive finite sum",
                            (long long)r, total);
        if (!replacement && nonzero < k)
            return pf_error(PF_ERR_VALUE,
                            "multinomial: row %lld has %lld non-zero categories, fewer than the %lld samples asked "
                            "for without replacement", (long long)r, (long long)nonzero, (long long)k);
    }
    int failed = 0;
    int nt = pf_threads_for(rows * n * (replacement ? 1 : k));
    if (rows < nt) nt = (int)(rows ? rows : 1);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(| : failed)
#endif
    {
        double *w = malloc((size_t)(n ? n : 1) * sizeof(double));
        if (!w) {
            failed = 1;
        } else {
            int t = 0, team = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            team = omp_get_num_threads();
#endif
            int64_t begin, end;
            pf_split(rows, t, team, &begin, &end);
            for (int64_t r = begin; r < end; r++) {
                const double *p = P + r * n;
                if (replacement) {
                    /* cumulative weights, then a binary search per draw for the first c[j] > u * total */
                    double acc = 0;
                    for (int64_t j = 0; j < n; j++) w[j] = acc += p[j];
                    for (int64_t s = 0; s < k; s++) {
                        double target = U[r * k + s] * acc;
                        int64_t lo = 0, hi = n - 1;
                        while (lo < hi) {
                            int64_t mid = (lo + hi) / 2;
                            if (w[mid] > target) hi = mid;
                            else lo = mid + 1;
                        }
                        while (lo > 0 && p[lo] == 0) lo--; /* rounding never picks an empty category */
                        while (p[lo] == 0 && lo < n - 1) lo++;
                        O[r * k + s] = lo;
                    }
                } else {
                    /* sequential draws, each removing the category it picked */
                    memcpy(w, p, (size_t)n * sizeof(double));
                    for (int64_t s = 0; s < k; s++) {
                        double total = 0;
                        for (int64_t j = 0; j < n; j++) total += w[j];
                        double target = U[r * k + s] * total, acc = 0;
                        int64_t pick = -1, last = -1;
                        for (int64_t j = 0; j < n; j++) {
                            if (w[j] <= 0) continue;
                            last = j;
                            acc += w[j];
                            if (acc > target) {
                                pick = j;
                                break;
                            }
                        }
                        if (pick < 0) pick = last; /* u * total rounded up to the sum */
                        O[r * k + s] = pick;
                        w[pick] = 0;
                    }
                }
            }
        }
        free(w);
    }
    if (failed) return pf_error(PF_ERR_NOMEM, "multinomial: cannot allocate scratch for %lld categories", (long long)n);
    return PF_OK;
}
