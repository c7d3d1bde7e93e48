/* Counting into bins: bincount, histc (equal-width bins by torch's linear formula) and histogramdd
 * (bins given by their edges, found by binary search).
 *
 * Each kernel walks its input once on the calling thread, in element order: the bins are shared by every
 * element, and a split over threads would change the order in which float weights are summed (and so the
 * last bits of a result) with the thread count. The work is one pass of loads and adds, so a split would
 * buy little below memory bandwidth anyway. */
#include "core.h"

static int check_weights(const char *fn, const pf_tensor *x, int64_t n, const pf_tensor *w) {
    int rc;
    if (!w) return PF_OK;
    if ((rc = pf_check(w, "weights"))) return rc;
    if (pf_numel(w) != n || !pf_is_contiguous(w))
        return pf_error(PF_ERR_VALUE, "%s: weights must be contiguous with one value per element of input (%lld), "
                        "got %lld", fn, (long long)n, (long long)pf_numel(w));
    (void)x;
    return PF_OK;
}

static void add_to_bin(pf_tensor *out, int64_t bin, const pf_tensor *w, int64_t k) {
    char *p = (char *)out->data + (size_t)bin * pf_dtype_size[out->dtype];
    if (!pf_is_float(out->dtype)) {
        pf_store_i64(p, out->dtype, pf_load_i64(p, out->dtype) + (w ? pf_load_i64((const char *)w->data +
                     (size_t)k * pf_dtype_size[w->dtype], w->dtype) : 1));
        return;
    }
    double v = w ? pf_load_f64((const char *)w->data + (size_t)k * pf_dtype_size[w->dtype], w->dtype) : 1.0;
    pf_store_f64(p, out->dtype, pf_load_f64(p, out->dtype) + v);
}

int pf_bincount(const pf_tensor *x, const pf_tensor *weights, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "input")) || (rc = pf_check(out, "out"))) return rc;
    int64_t n = pf_numel(x), bins = pf_numel(out);
    if ((rc = check_weights("bincount", x, n, weights))) return rc;
    if (x->dtype != PF_INT64 && x->dtype != PF_INT32)
        return pf_error(PF_ERR_TYPE, "bincount: input must be int64 or int32, got %s", pf_dtype_name[x->dtype]);
    if (!pf_is_contiguous(x) || !pf_is_contiguous(out) || out->ndim != 1)
        return pf_error(PF_ERR_VALUE, "bincount: input and a 1-d out must be contiguous");
    for (int64_t k = 0; k < n; k++) { /* validate everything before the first write */
        int64_t v = pf_load_i64((const char *)x->data + (size_t)k * pf_dtype_size[x->dtype], x->dtype);
        if (v < 0 || v >= bins)
            return pf_error(PF_ERR_VALUE, "bincount: value %lld is outside the %lld bins (input must be "
                            "non-negative)", (long long)v, (long long)bins);
    }
    for (int64_t k = 0; k < n; k++)
        add_to_bin(out, pf_load_i64((const char *)x->data + (size_t)k * pf_dtype_size[x->dtype], x->dtype), weights, k);
    return PF_OK;
}

/* torch's histc: bin = (int)((v - lo) * bins / (hi - lo)) computed in the input's precision, the last
 * edge counted in the last bin, values outside [lo, hi] (and NaN) left out */
#define HISTC_LOOP(T)                                                                                      \
    do {                                                                                                   \
        T l = (T)lo, h = (T)hi, nb = (T)bins;                                                              \
        for (int64_t k = 0; k < n; k++) {                                                                  \
            T v = (T)pf_load_f64((const char *)x->data + (size_t)k * es, x->dtype);                        \
            if (!(v >= l && v <= h)) continue;                                                             \
            int64_t bin = (int64_t)((v - l) * nb / (h - l));                                               \
            if (bin == bins) bin--;                                                                        \
            add_to_bin(out, bin, weights, k);                                                              \
        }                                                                                                  \
    } while (0)

int pf_histc(const pf_tensor *x, const pf_tensor *weights, double lo, double hi, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "input")) || (rc = pf_check(out, "out"))) return rc;
    int64_t n = pf_numel(x), bins = pf_numel(out);
    if ((rc = check_weights("histc", x, n, weights))) return rc;
    if (!pf_is_float(x->dtype) || !pf_is_float(out->dtype))
        return pf_error(PF_ERR_TYPE, "histc: input and out must be floating, got %s and %s", pf_dtype_name[x->dtype],
                        pf_dtype_name[out->dtype]);
    if (!pf_is_contiguous(x) || !pf_is_contiguous(out) || out->ndim != 1 || bins < 1)
        return pf_error(PF_ERR_VALUE, "histc: input and a 1-d out of at least one bin must be contiguous");
    if (!(lo < hi) || !isfinite(lo) || !isfinite(hi))
        return pf_error(PF_ERR_VALUE, "histc: the range must be finite with min < max, got [%g, %g]", lo, hi);
    size_t es = pf_dtype_size[x->dtype];
    if (x->dtype == PF_FLOAT64) HISTC_LOOP(double);
    else HISTC_LOOP(float);
    return PF_OK;
}

/* x [N, D] contiguous, edges: the D dims' edge lists one after another (nedges[d] each, ascending, at least
 * 2; edges out of order give torch's answer, std::upper_bound's probes on them), hist contiguous of shape [nedges[0] - 1, ...]. A value belongs to the bin whose edges enclose it,
 * [e_i, e_{i+1}), the last bin closed on the right; values outside (and NaN) are left out. */
int pf_histogramdd(const pf_tensor *x, const pf_tensor *weights, const pf_tensor *edges, const int64_t *nedges,
                   pf_tensor *hist) {
    int rc;
    if ((rc = pf_check(x, "input")) || (rc = pf_check(edges, "bins")) || (rc = pf_check(hist, "hist"))) return rc;
    if (x->ndim != 2 || !pf_is_contiguous(x) || !pf_is_contiguous(edges) || !pf_is_contiguous(hist))
        return pf_error(PF_ERR_VALUE, "histogramdd: expected a contiguous input [N, D] with contiguous bins and hist");
    int64_t N = x->shape[0], D = x->shape[1], total = 0;
    if ((rc = check_weights("histogramdd", x, N, weights))) return rc;
    if (!pf_is_float(x->dtype) || edges->dtype != x->dtype || !pf_is_float(hist->dtype))
        return pf_error(PF_ERR_TYPE, "histogramdd: input, bins and hist must be floating of one dtype, got %s, %s "
                        "and %s", pf_dtype_name[x->dtype], pf_dtype_name[edges->dtype], pf_dtype_name[hist->dtype]);
    if (D != hist->ndim || D < 1 || !nedges)
        return pf_error(PF_ERR_VALUE, "histogramdd: hist has %d dims for %lld input dims", hist->ndim, (long long)D);
    for (int64_t d = 0; d < D; d++) {
        if (nedges[d] < 2 || hist->shape[d] != nedges[d] - 1)
            return pf_error(PF_ERR_VALUE, "histogramdd: dim %lld has %lld edges for %lld bins", (long long)d,
                            (long long)nedges[d], (long long)hist->shape[d]);
        total += nedges[d];
    }
    if (pf_numel(edges) != total)
        return pf_error(PF_ERR_VALUE, "histogramdd: bins hold %lld edges, expected %lld", (long long)pf_numel(edges),
                        (long long)total);
    size_t es = pf_dtype_size[x->dtype];
    const char *ed = edges->data;
    for (int64_t k = 0; k < N; k++) {
        int64_t bin = 0, first = 0, d;
        for (d = 0; d < D; d++) {
            double v = pf_load_f64((const char *)x->data + (size_t)(k * D + d) * es, x->dtype);
            int64_t m = nedges[d];
            const char *e = ed + (size_t)first * es;
            first += m;
            if (!(v >= pf_load_f64(e, x->dtype) && v <= pf_load_f64(e + (size_t)(m - 1) * es, x->dtype))) break;
            int64_t lo = 0, hi = m; /* the count of edges <= v */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (pf_load_f64(e + (size_t)mid * es, x->dtype) <= v) lo = mid + 1;
                else hi = mid;
            }
            int64_t pos = lo - 1 < m - 2 ? lo - 1 : m - 2;
            if (pos < 0) break; /* only edges out of order (torch does not check them) lead here */
            bin = bin * (m - 1) + pos;
        }
        if (d == D) add_to_bin(hist, bin, weights, k);
    }
    return PF_OK;
}
