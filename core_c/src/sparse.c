/* Sparse COO tensors (pyframe/sparse): coalescing (sort the entries' linear keys, number the distinct
 * ones) and the sparse-dense product with its gradient to the values. A COO matrix is rows[nnz],
 * cols[nnz] (int64) and vals[nnz]; the dense operands are contiguous row-major. */
#include <stdlib.h>

#include "core.h"

/* ---- coalesce ---------------------------------------------------------------------- */

typedef struct {
    int64_t key, pos;
} key_pos;

/* by key, then by position: a total order, so the result does not depend on qsort's algorithm */
static int key_pos_cmp(const void *a, const void *b) {
    const key_pos *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int pf_coo_coalesce(int64_t nnz, const int64_t *keys, int64_t limit, int64_t *slot, int64_t *unique,
                    int64_t *n_unique) {
    if (nnz < 0) return pf_error(PF_ERR_VALUE, "coalesce: nnz must be >= 0, got %lld", (long long)nnz);
    if (nnz > 0 && (!keys || !slot || !unique || !n_unique))
        return pf_error(PF_ERR_VALUE, "coalesce: a buffer is NULL");
    for (int64_t k = 0; k < nnz; k++)
        if (keys[k] < 0 || keys[k] >= limit)
            return pf_error(PF_ERR_INDEX, "coalesce: entry %lld has linear index %lld outside [0, %lld)", (long long)k,
                            (long long)keys[k], (long long)limit);
    if (nnz == 0) {
        if (n_unique) *n_unique = 0;
        return PF_OK;
    }
    key_pos *kp = malloc((size_t)nnz * sizeof *kp);
    if (!kp) return pf_error(PF_ERR_NOMEM, "coalesce: out of memory for %lld entries", (long long)nnz);
    for (int64_t k = 0; k < nnz; k++) kp[k] = (key_pos){keys[k], k};
    qsort(kp, (size_t)nnz, sizeof *kp, key_pos_cmp);
    int64_t u = -1;
    for (int64_t k = 0; k < nnz; k++) {
        if (u < 0 || kp[k].key != unique[u]) unique[++u] = kp[k].key;
        slot[kp[k].pos] = u;
    }
    *n_unique = u + 1;
    free(kp);
    return PF_OK;
}

/* ---- sparse @ dense ---------------------------------------------------------------------- */

typedef struct {
    int64_t nnz, M, K, N;
    const int64_t *rows, *cols;
    const char *vals, *dense;
    char *out;
} spmm_job;

/* out[:, b:e] = S @ dense[:, b:e]: each thread owns a band of output columns, so no two threads
 * write one element and each element sums its entries in entry order (the same bits for any team) */
#define SPMM_PART(T, NAME)                                                               \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const spmm_job *j = arg;                                                         \
        const T *v = (const T *)j->vals, *d = (const T *)j->dense;                       \
        T *o = (T *)j->out;                                                              \
        for (int64_t i = 0; i < j->M; i++)                                               \
            for (int64_t n = b; n < e; n++) o[i * j->N + n] = 0;                         \
        for (int64_t k = 0; k < j->nnz; k++) {                                           \
            const T a = v[k];                                                            \
            const T *src = d + j->cols[k] * j->N;                                        \
            T *dst = o + j->rows[k] * j->N;                                              \
            for (int64_t n = b; n < e; n++) dst[n] += a * src[n];                        \
        }                                                                                \
    }
SPMM_PART(float, spmm_part_f32)
SPMM_PART(double, spmm_part_f64)

/* gvals[k] = <g[rows[k], :], dense[cols[k], :]>: entries split over the team */
#define SPMM_GRAD_PART(T, NAME)                                                          \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const spmm_job *j = arg;                                                         \
        const T *g = (const T *)j->out, *d = (const T *)j->dense;                        \
        T *gv = (T *)j->vals;                                                            \
        for (int64_t k = b; k < e; k++) {                                                \
            const T *gr = g + j->rows[k] * j->N, *dr = d + j->cols[k] * j->N;            \
            T s = 0;                                                                     \
            for (int64_t n = 0; n < j->N; n++) s += gr[n] * dr[n];                       \
            gv[k] = s;                                                                   \
        }                                                                                \
    }
SPMM_GRAD_PART(float, spmm_grad_part_f32)
SPMM_GRAD_PART(double, spmm_grad_part_f64)

static int spmm_check(const char *fn, int dtype, int64_t nnz, const int64_t *rows, const int64_t *cols, int64_t M,
                      int64_t K, int64_t N) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: values must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (nnz < 0 || M < 0 || K < 0 || N < 0)
        return pf_error(PF_ERR_VALUE, "%s: sizes must be >= 0 (nnz %lld, M %lld, K %lld, N %lld)", fn, (long long)nnz,
                        (long long)M, (long long)K, (long long)N);
    for (int64_t k = 0; k < nnz; k++)
        if (rows[k] < 0 || rows[k] >= M || cols[k] < 0 || cols[k] >= K)
            return pf_error(PF_ERR_INDEX, "%s: entry %lld at (%lld, %lld) is outside the sparse matrix's [%lld, %lld]",
                            fn, (long long)k, (long long)rows[k], (long long)cols[k], (long long)M, (long long)K);
    return PF_OK;
}

int pf_spmm_coo(int dtype, int64_t nnz, const int64_t *rows, const int64_t *cols, const void *vals, int64_t M,
                int64_t K, int64_t N, const void *dense, void *out) {
    int rc = spmm_check("sparse.mm", dtype, nnz, rows, cols, M, K, N);
    if (rc) return rc;
    spmm_job j = {nnz, M, K, N, rows, cols, vals, dense, out};
    /* work per output column: one pass over the entries and the column */
    int nt = pf_threads_for((nnz + M) * N);
    if (N == 0) return PF_OK;
    pf_parallel_range(nt, N, dtype == PF_FLOAT32 ? spmm_part_f32 : spmm_part_f64, &j);
    return PF_OK;
}

int pf_spmm_coo_values_grad(int dtype, int64_t nnz, const int64_t *rows, const int64_t *cols, int64_t M, int64_t K,
                            int64_t N, const void *g, const void *dense, void *gvals) {
    int rc = spmm_check("sparse.mm backward", dtype, nnz, rows, cols, M, K, N);
    if (rc) return rc;
    spmm_job j = {nnz, M, K, N, rows, cols, gvals, dense, (char *)g};
    pf_parallel_range(pf_threads_for(nnz * (N ? N : 1)), nnz,
                      dtype == PF_FLOAT32 ? spmm_grad_part_f32 : spmm_grad_part_f64, &j);
    return PF_OK;
}
