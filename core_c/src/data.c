/* Kernels for pyframe.utils.data: the samplers' random permutations and weighted draws, and
 * the gather that turns a batch of indices into a batch of rows.
 *
 * Both take their randomness from pf_random's counter-based Philox stream, so a result is a
 * function of (seed, offset) alone, like every random fill: the Python generator advances
 * its offset by the number of counters a call consumed (n for a permutation, the number of
 * samples or of weights for a weighted draw, as documented at each entry point). */
#include <stdlib.h>
#include "core.h"

static int check_index_out(const pf_tensor *out, const char *who) {
    if (!out) return pf_error(PF_ERR_VALUE, "%s: NULL output", who);
    if (out->dtype != PF_INT64 || out->ndim != 1 || (out->shape[0] > 1 && out->strides[0] != 1))
        return pf_error(PF_ERR_VALUE, "%s: output must be a contiguous 1-d int64 tensor", who);
    if (out->shape[0] > 0 && !out->data) return pf_error(PF_ERR_VALUE, "%s: NULL output data", who);
    return PF_OK;
}

/* n uniforms in [0, 1) as doubles, from counters offset .. offset + n - 1 (caller frees) */
static double *uniforms(int64_t n, uint64_t seed, uint64_t offset, int *rc) {
    double *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    if (!u) {
        *rc = pf_error(PF_ERR_NOMEM, "sampling: cannot allocate %lld doubles", (long long)n);
        return NULL;
    }
    pf_tensor t = {.data = u, .dtype = PF_FLOAT64, .ndim = 1, .shape = {n}, .strides = {1}};
    *rc = pf_random(PF_RAND_UNIFORM, &t, seed, offset, 0.0, 1.0);
    if (*rc) {
        free(u);
        return NULL;
    }
    return u;
}

int pf_randperm(pf_tensor *out, uint64_t seed, uint64_t offset) {
    int rc = check_index_out(out, "randperm");
    if (rc) return rc;
    int64_t n = out->shape[0], *p = out->data;
    if (n == 0) return PF_OK;
    double *u = uniforms(n, seed, offset, &rc);
    if (!u) return rc;
    for (int64_t i = 0; i < n; i++) p[i] = i;
    /* Fisher-Yates from the top: position i swaps with a uniform j in [0, i] */
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(u[i] * (double)(i + 1));
        if (j > i) j = i; /* u < 1, but guard the rounding of u * (i + 1) */
        int64_t tmp = p[i];
        p[i] = p[j];
        p[j] = tmp;
    }
    free(u);
    return PF_OK;
}

typedef struct {
    double key;
    int64_t index;
} keyed;

static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index); /* stable: equal keys keep index order */
}

/* Loads weight i as a double; 0 on success, else an error for a negative, NaN or inf weight. */
static int load_weights(const pf_tensor *w, double *out, double *total, int64_t *positive) {
    int64_t n = w->shape[0];
    size_t sz = pf_dtype_size[w->dtype];
    *total = 0;
    *positive = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = pf_load_f64((const char *)w->data + (size_t)(i * w->strides[0]) * sz, w->dtype);
        if (!(v >= 0) || isinf(v))
            return pf_error(PF_ERR_VALUE, "weighted sampling: weight %lld is %g; weights must be finite and >= 0",
                            (long long)i, v);
        out[i] = v;
        *total += v;
        *positive += v > 0;
    }
    if (!(*total > 0) || isinf(*total))
        return pf_error(PF_ERR_VALUE, "weighted sampling: the weights must have a positive, finite sum (got %g)",
                        *total);
    return PF_OK;
}

int pf_weighted_sample(const pf_tensor *weights, pf_tensor *out, int replacement, uint64_t seed,
                       uint64_t offset) {
    int rc = check_index_out(out, "weighted_sample");
    if (rc) return rc;
    if (!weights || weights->ndim != 1 || !pf_is_float(weights->dtype))
        return pf_error(PF_ERR_VALUE, "weighted_sample: weights must be a 1-d floating tensor");
    int64_t n = weights->shape[0], k = out->shape[0], *dst = out->data;
    if (n == 0) return pf_error(PF_ERR_VALUE, "weighted_sample: weights must not be empty");
    if (k == 0) return PF_OK;
    double *w = malloc((size_t)n * sizeof *w), total = 0;
    if (!w) return pf_error(PF_ERR_NOMEM, "weighted_sample: cannot allocate %lld doubles", (long long)n);
    int64_t positive = 0;
    rc = load_weights(weights, w, &total, &positive);
    if (!rc && !replacement && k > positive)
        rc = pf_error(PF_ERR_VALUE,
                      "weighted_sample: cannot draw %lld samples without replacement from %lld positive weights",
                      (long long)k, (long long)positive);
    double *u = rc ? NULL : uniforms(replacement ? k : n, seed, offset, &rc);
    if (!u) {
        free(w);
        return rc;
    }
    if (replacement) {
        /* inverse CDF: the first index whose running sum exceeds u * total */
        for (int64_t i = 1; i < n; i++) w[i] += w[i - 1];
        for (int64_t s = 0; s < k; s++) {
            double target = u[s] * w[n - 1];
            int64_t lo = 0, hi = n - 1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (w[mid] > target) hi = mid;
                else lo = mid + 1;
            }
            while (lo > 0 && w[lo] == w[lo - 1]) lo--; /* u * total rounding up to total */
            dst[s] = lo;
        }
    } else {
        /* Efraimidis-Spirakis: the k smallest of E_i / w_i, E_i exponential, are a weighted
         * draw without replacement; zero weights get +inf and are never among them */
        keyed *kv = malloc((size_t)n * sizeof *kv);
        if (!kv) {
            free(w);
            free(u);
            return pf_error(PF_ERR_NOMEM, "weighted_sample: cannot allocate %lld keys", (long long)n);
        }
        for (int64_t i = 0; i < n; i++) {
            kv[i].key = w[i] > 0 ? -log1p(-u[i]) / w[i] : INFINITY;
            kv[i].index = i;
        }
        qsort(kv, (size_t)n, sizeof *kv, by_key);
        for (int64_t s = 0; s < k; s++) dst[s] = kv[s].index;
        free(kv);
    }
    free(w);
    free(u);
    return PF_OK;
}

/* Rows of a few KB copied serially: a batch is typically well under a megabyte, where a
 * parallel region costs more than it saves (and far more on a loaded machine). */
#define GATHER_PARALLEL_BYTES ((int64_t)8 << 20)

int pf_gather_rows(const pf_tensor *x, const pf_tensor *idx, pf_tensor *out) {
    if (!x || !idx || !out) return pf_error(PF_ERR_VALUE, "gather_rows: NULL tensor");
    int rc = check_index_out(idx, "gather_rows");
    if (rc) return pf_error(PF_ERR_VALUE, "gather_rows: the index must be a contiguous 1-d int64 tensor");
    if (x->ndim < 1 || out->ndim != x->ndim || out->dtype != x->dtype)
        return pf_error(PF_ERR_VALUE, "gather_rows: out must have x's dtype and number of dims (x has %d >= 1)",
                        x->ndim);
    int64_t n = x->shape[0], k = idx->shape[0], row = 1, expect = 1;
    if (out->shape[0] != k)
        return pf_error(PF_ERR_VALUE, "gather_rows: out has %lld rows for %lld indices", (long long)out->shape[0],
                        (long long)k);
    for (int d = x->ndim - 1; d >= 1; d--) {
        if (out->shape[d] != x->shape[d])
            return pf_error(PF_ERR_VALUE, "gather_rows: out's dim %d is %lld, x's is %lld", d,
                            (long long)out->shape[d], (long long)x->shape[d]);
        if ((x->shape[d] > 1 && x->strides[d] != expect) || (out->shape[d] > 1 && out->strides[d] != expect))
            return pf_error(PF_ERR_VALUE, "gather_rows: x and out must be contiguous within a row");
        expect *= x->shape[d];
    }
    row = expect;
    const int64_t *p = idx->data;
    for (int64_t j = 0; j < k; j++)
        if (p[j] < -n || p[j] >= n)
            return pf_error(PF_ERR_INDEX, "gather_rows: index %lld is out of range for %lld rows", (long long)p[j],
                            (long long)n);
    size_t es = pf_dtype_size[x->dtype], rb = (size_t)row * es;
    int64_t xs = x->strides[0] * (int64_t)es, os = out->strides[0] * (int64_t)es;
    int nt = (int64_t)rb * k >= GATHER_PARALLEL_BYTES ? pf_threads_for(row * k) : 1;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t j = 0; j < k; j++) {
        int64_t i = p[j] < 0 ? p[j] + n : p[j];
        memcpy((char *)out->data + j * os, (const char *)x->data + i * xs, rb);
    }
    return PF_OK;
}
