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

/* ---- sparse + sparse ----------------------------------------------------------------------- */

/* torch's add of two sparse tensors with contiguous values: one walk over both entry lists as if
 * each were sorted, the smaller key first and equal keys into one result entry (on uncoalesced
 * inputs the walk is still a sum, only less compact). tslot[i] / sslot[j] is the result entry of
 * t's i-th / s's j-th entry; keys_out (room for nt + ns) the result's keys. */
int pf_coo_merge(int64_t nt, const int64_t *tkeys, int64_t ns, const int64_t *skeys, int64_t *tslot, int64_t *sslot,
                 int64_t *keys_out, int64_t *n_out) {
    if (nt < 0 || ns < 0)
        return pf_error(PF_ERR_VALUE, "sparse add: entry counts must be >= 0, got %lld and %lld", (long long)nt,
                        (long long)ns);
    if (!n_out || ((nt || ns) && !keys_out) || (nt && (!tkeys || !tslot)) || (ns && (!skeys || !sslot)))
        return pf_error(PF_ERR_VALUE, "sparse add: a buffer is NULL");
    int64_t r = 0, i = 0, j = 0;
    while (i < nt || j < ns) {
        int cmp = i >= nt ? -1 : j >= ns ? 1 : tkeys[i] < skeys[j] ? 1 : tkeys[i] > skeys[j] ? -1 : 0;
        if (cmp >= 0) keys_out[r] = tkeys[i], tslot[i++] = r;
        if (cmp <= 0) keys_out[r] = skeys[j], sslot[j++] = r;
        r++;
    }
    *n_out = r;
    return PF_OK;
}

/* ---- SparseAdam ---------------------------------------------------------------------------- */

typedef struct {
    int64_t n, block;
    const int64_t *keys;
    const char *g;
    char *p, *m, *v;
    double step_size, beta1, beta2, eps;
    int maximize;
} sadam_job;

/* torch's sparse_adam on the rows present, in its order of operations: the moments' updates
 * (g - m) * (1 - beta1) and (g^2 - v) * (1 - beta2) are added to the old values, and the step is
 * -step_size * (m / (sqrt(v) + eps)) */
#define SADAM_PART(T, SQRT, NAME)                                                        \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const sadam_job *j = arg;                                                        \
        const T *g = (const T *)j->g;                                                    \
        T *p = (T *)j->p, *m = (T *)j->m, *v = (T *)j->v;                                \
        const T c1 = (T)(1 - j->beta1), c2 = (T)(1 - j->beta2), eps = (T)j->eps;         \
        const T step = (T)(-j->step_size);                                               \
        for (int64_t k = b; k < e; k++)                                                  \
            for (int64_t q = 0; q < j->block; q++) {                                     \
                const int64_t i = j->keys[k] * j->block + q;                             \
                const T gk = j->maximize ? -g[k * j->block + q] : g[k * j->block + q];   \
                const T mo = m[i], vo = v[i];                                            \
                const T mu = (gk - mo) * c1, vu = (gk * gk - vo) * c2;                   \
                m[i] = mo + mu;                                                          \
                v[i] = vo + vu;                                                          \
                p[i] = p[i] + step * ((mu + mo) / (SQRT(vu + vo) + eps));                \
            }                                                                            \
    }
SADAM_PART(float, sqrtf, sadam_part_f32)
SADAM_PART(double, sqrt, sadam_part_f64)

int pf_sparse_adam(int dtype, int64_t n, const int64_t *keys, int64_t limit, int64_t block, const void *gvals,
                   void *param, void *exp_avg, void *exp_avg_sq, double step_size, double beta1, double beta2,
                   double eps, int maximize) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "SparseAdam: parameters must be float32 or float64, got %s",
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (n < 0 || limit < 0 || block < 0)
        return pf_error(PF_ERR_VALUE, "SparseAdam: sizes must be >= 0 (entries %lld, rows %lld, row size %lld)",
                        (long long)n, (long long)limit, (long long)block);
    if (n && (!keys || !gvals || !param || !exp_avg || !exp_avg_sq))
        return pf_error(PF_ERR_VALUE, "SparseAdam: a buffer is NULL");
    /* coalesced keys (strictly increasing) touch each row once, so entries may run in parallel */
    for (int64_t k = 0; k < n; k++)
        if (keys[k] < 0 || keys[k] >= limit || (k && keys[k] <= keys[k - 1]))
            return pf_error(PF_ERR_INDEX, "SparseAdam: entry %lld has index %lld: indices must be increasing and in "
                            "[0, %lld) (a coalesced gradient)", (long long)k, (long long)keys[k], (long long)limit);
    sadam_job j = {n, block, keys, gvals, param, exp_avg, exp_avg_sq, step_size, beta1, beta2, eps, maximize};
    pf_parallel_range(pf_threads_for(n * block), n, dtype == PF_FLOAT32 ? sadam_part_f32 : sadam_part_f64, &j);
    return PF_OK;
}

/* ---- CSR ------------------------------------------------------------------------------------ */

/* rows[e] of each entry of an M-row CSR matrix, after checking torch's invariants: crow[0] == 0,
 * crow nondecreasing, crow[M] == nnz, and (with K >= 0) every column in [0, K) */
int pf_csr_rows(int64_t M, int64_t K, const int64_t *crow, int64_t nnz, const int64_t *col, int64_t *rows) {
    if (M < 0 || nnz < 0) return pf_error(PF_ERR_VALUE, "CSR: sizes must be >= 0 (rows %lld, nnz %lld)",
                                          (long long)M, (long long)nnz);
    if (!crow || (nnz && (!col || !rows))) return pf_error(PF_ERR_VALUE, "CSR: a buffer is NULL");
    if (crow[0] != 0) return pf_error(PF_ERR_VALUE, "`crow_indices[..., 0] == 0` is not satisfied (got %lld)",
                                      (long long)crow[0]);
    for (int64_t i = 0; i < M; i++)
        if (crow[i + 1] < crow[i])
            return pf_error(PF_ERR_VALUE, "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not "
                            "satisfied: crow_indices[%lld] = %lld > crow_indices[%lld] = %lld", (long long)i,
                            (long long)crow[i], (long long)(i + 1), (long long)crow[i + 1]);
    if (crow[M] != nnz)
        return pf_error(PF_ERR_VALUE, "`crow_indices[..., -1] == nnz` is not satisfied: %lld != %lld",
                        (long long)crow[M], (long long)nnz);
    for (int64_t i = 0; i < M; i++)
        for (int64_t e = crow[i]; e < crow[i + 1]; e++) {
            if (K >= 0 && (col[e] < 0 || col[e] >= K))
                return pf_error(PF_ERR_INDEX, "`0 <= col_indices < ncols` is not satisfied: entry %lld has column "
                                "%lld, ncols is %lld", (long long)e, (long long)col[e], (long long)K);
            rows[e] = i;
        }
    return PF_OK;
}

/* crow[M + 1] of entries whose rows[nnz] are sorted and in [0, M) (a coalesced COO matrix's) */
int pf_csr_crow(int64_t nnz, const int64_t *rows, int64_t M, int64_t *crow) {
    if (M < 0 || nnz < 0) return pf_error(PF_ERR_VALUE, "to_sparse_csr: sizes must be >= 0");
    if (!crow || (nnz && !rows)) return pf_error(PF_ERR_VALUE, "to_sparse_csr: a buffer is NULL");
    for (int64_t e = 0; e < nnz; e++)
        if (rows[e] < 0 || rows[e] >= M || (e && rows[e] < rows[e - 1]))
            return pf_error(PF_ERR_INDEX, "to_sparse_csr: entry %lld has row %lld: rows must be sorted and in "
                            "[0, %lld)", (long long)e, (long long)rows[e], (long long)M);
    for (int64_t i = 0; i <= M; i++) crow[i] = 0;
    for (int64_t e = 0; e < nnz; e++) crow[rows[e] + 1]++;
    for (int64_t i = 0; i < M; i++) crow[i + 1] += crow[i];
    return PF_OK;
}

typedef struct {
    int reduce;
    int64_t M, K, N;
    const int64_t *crow, *col;
    const char *vals, *dense, *g;
    char *out, *gvals;
    int64_t *arg;
} csr_job;

/* out[i, :] = reduce over row i's entries e of vals[e] * dense[col[e], :]: a sum, a mean, or
 * torch's amax / amin (the first extreme wins, a NaN always; arg[i, n] its entry, -1 for none),
 * 0 for an empty row. Rows split over the team. */
#define CSR_MM_PART(T, NAME)                                                                        \
    static void NAME(void *arg, int64_t b, int64_t e) {                                             \
        const csr_job *j = arg;                                                                     \
        const T *v = (const T *)j->vals, *d = (const T *)j->dense;                                  \
        const int red = j->reduce;                                                                  \
        const T init = red == PF_CSR_AMAX ? -(T)INFINITY : red == PF_CSR_AMIN ? (T)INFINITY : 0;    \
        for (int64_t i = b; i < e; i++) {                                                           \
            T *o = (T *)j->out + i * j->N;                                                          \
            int64_t *a = j->arg ? j->arg + i * j->N : NULL;                                         \
            for (int64_t n = 0; n < j->N; n++) o[n] = init;                                         \
            if (a)                                                                                  \
                for (int64_t n = 0; n < j->N; n++) a[n] = -1;                                       \
            const int64_t lo = j->crow[i], hi = j->crow[i + 1];                                     \
            for (int64_t k = lo; k < hi; k++) {                                                     \
                const T *src = d + j->col[k] * j->N;                                                \
                for (int64_t n = 0; n < j->N; n++) {                                                \
                    const T x = v[k] * src[n];                                                      \
                    if (red == PF_CSR_SUM || red == PF_CSR_MEAN)                                    \
                        o[n] += x;                                                                  \
                    else if ((red == PF_CSR_AMAX ? x > o[n] : x < o[n]) || x != x) {                \
                        o[n] = x;                                                                   \
                        if (a) a[n] = k;                                                            \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
            if (hi == lo)                                                                           \
                for (int64_t n = 0; n < j->N; n++) o[n] = 0;                                        \
            else if (red == PF_CSR_MEAN)                                                            \
                for (int64_t n = 0; n < j->N; n++) o[n] /= (T)(hi - lo);                            \
        }                                                                                           \
    }
CSR_MM_PART(float, csr_mm_part_f32)
CSR_MM_PART(double, csr_mm_part_f64)

/* the gradient to the values: gvals[k] = sum over n of g[i, n] * dense[col[k], n] (sum; divided by
 * the row's count for mean; only where k is arg[i, n] for amax / amin), rows split over the team */
#define CSR_GV_PART(T, NAME)                                                                        \
    static void NAME(void *arg, int64_t b, int64_t e) {                                             \
        const csr_job *j = arg;                                                                     \
        const T *g = (const T *)j->g, *d = (const T *)j->dense;                                     \
        T *gv = (T *)j->gvals;                                                                      \
        for (int64_t i = b; i < e; i++) {                                                           \
            const int64_t lo = j->crow[i], hi = j->crow[i + 1];                                     \
            const T *gr = g + i * j->N;                                                             \
            const int64_t *a = j->arg ? j->arg + i * j->N : NULL;                                   \
            for (int64_t k = lo; k < hi; k++) {                                                     \
                const T *dr = d + j->col[k] * j->N;                                                 \
                T s = 0;                                                                            \
                for (int64_t n = 0; n < j->N; n++)                                                  \
                    if (!a || a[n] == k) s += gr[n] * dr[n];                                        \
                gv[k] = j->reduce == PF_CSR_MEAN ? s / (T)(hi - lo) : s;                            \
            }                                                                                       \
        }                                                                                           \
    }
CSR_GV_PART(float, csr_gv_part_f32)
CSR_GV_PART(double, csr_gv_part_f64)

/* the gradient to the dense operand, gd [K, N]: each entry's row of g, times its value (over the
 * row's count for mean; only where it is the arg for amax / amin), added at its column; each
 * thread owns a band of columns n, so entries add in order for any team */
#define CSR_GD_PART(T, NAME)                                                                        \
    static void NAME(void *arg, int64_t b, int64_t e) {                                             \
        const csr_job *j = arg;                                                                     \
        const T *g = (const T *)j->g, *v = (const T *)j->vals;                                      \
        T *gd = (T *)j->out;                                                                        \
        for (int64_t r = 0; r < j->K; r++)                                                          \
            for (int64_t n = b; n < e; n++) gd[r * j->N + n] = 0;                                   \
        for (int64_t i = 0; i < j->M; i++) {                                                        \
            const int64_t lo = j->crow[i], hi = j->crow[i + 1];                                     \
            const T *gr = g + i * j->N;                                                             \
            const int64_t *a = j->arg ? j->arg + i * j->N : NULL;                                   \
            for (int64_t k = lo; k < hi; k++) {                                                     \
                const T w = j->reduce == PF_CSR_MEAN ? v[k] / (T)(hi - lo) : v[k];                  \
                T *dst = gd + j->col[k] * j->N;                                                     \
                for (int64_t n = b; n < e; n++)                                                     \
                    if (!a || a[n] == k) dst[n] += w * gr[n];                                       \
            }                                                                                       \
        }                                                                                           \
    }
CSR_GD_PART(float, csr_gd_part_f32)
CSR_GD_PART(double, csr_gd_part_f64)

static int csr_check(const char *fn, int dtype, int reduce, int64_t M, int64_t K, int64_t N, const int64_t *crow,
                     const int64_t *col) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: values must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (reduce < PF_CSR_SUM || reduce > PF_CSR_AMIN)
        return pf_error(PF_ERR_VALUE, "%s: reduce must be sum, mean, amax or amin (code %d)", fn, reduce);
    if (M < 0 || K < 0 || N < 0)
        return pf_error(PF_ERR_VALUE, "%s: sizes must be >= 0 (M %lld, K %lld, N %lld)", fn, (long long)M,
                        (long long)K, (long long)N);
    if (!crow || (M && crow[M] && !col)) return pf_error(PF_ERR_VALUE, "%s: crow_indices or col_indices is NULL", fn);
    if (crow[0] != 0) return pf_error(PF_ERR_VALUE, "%s: crow_indices[0] must be 0, got %lld", fn, (long long)crow[0]);
    for (int64_t i = 0; i < M; i++) {
        if (crow[i + 1] < crow[i])
            return pf_error(PF_ERR_VALUE, "%s: crow_indices must be nondecreasing (at row %lld)", fn, (long long)i);
        for (int64_t k = crow[i]; k < crow[i + 1]; k++)
            if (col[k] < 0 || col[k] >= K)
                return pf_error(PF_ERR_INDEX, "%s: entry %lld has column %lld outside [0, %lld)", fn, (long long)k,
                                (long long)col[k], (long long)K);
    }
    return PF_OK;
}

int pf_csr_mm(int dtype, int reduce, int64_t M, int64_t K, int64_t N, const int64_t *crow, const int64_t *col,
              const void *vals, const void *dense, void *out, int64_t *arg) {
    int rc = csr_check("sparse.mm", dtype, reduce, M, K, N, crow, col);
    if (rc) return rc;
    csr_job j = {reduce, M, K, N, crow, col, vals, dense, NULL, out, NULL, arg};
    pf_parallel_range(pf_threads_for((crow[M] + M) * N), M, dtype == PF_FLOAT32 ? csr_mm_part_f32 : csr_mm_part_f64,
                      &j);
    return PF_OK;
}

int pf_csr_mm_backward(int dtype, int reduce, int64_t M, int64_t K, int64_t N, const int64_t *crow,
                       const int64_t *col, const void *vals, const void *dense, const int64_t *arg, const void *g,
                       void *gvals, void *gdense) {
    int rc = csr_check("sparse.mm backward", dtype, reduce, M, K, N, crow, col);
    if (rc) return rc;
    if ((reduce == PF_CSR_AMAX || reduce == PF_CSR_AMIN) && !arg)
        return pf_error(PF_ERR_VALUE, "sparse.mm backward: amax and amin need the forward's arg");
    csr_job j = {reduce, M, K, N, crow, col, vals, dense, g, gdense, gvals, (int64_t *)arg};
    int nt = pf_threads_for((crow[M] + M) * N);
    if (gvals) pf_parallel_range(nt, M, dtype == PF_FLOAT32 ? csr_gv_part_f32 : csr_gv_part_f64, &j);
    if (gdense) {
        if (N == 0 || K == 0) return PF_OK;
        pf_parallel_range(nt, N, dtype == PF_FLOAT32 ? csr_gd_part_f32 : csr_gd_part_f64, &j);
    }
    return PF_OK;
}

/* sampled_addmm: out[k] = alpha * <A[rows[k], :], B[:, col[k]]> + beta * c[k] over C's entries */
typedef struct {
    int64_t M, N, K;
    const int64_t *rows, *col;
    const char *c, *A, *B;
    char *out;
    double alpha, beta;
} sampled_job;

#define SAMPLED_PART(T, NAME)                                                                       \
    static void NAME(void *arg, int64_t b, int64_t e) {                                             \
        const sampled_job *j = arg;                                                                 \
        const T *A = (const T *)j->A, *B = (const T *)j->B, *c = (const T *)j->c;                   \
        T *o = (T *)j->out;                                                                         \
        const T alpha = (T)j->alpha, beta = (T)j->beta;                                             \
        for (int64_t k = b; k < e; k++) {                                                           \
            const T *ar = A + j->rows[k] * j->K;                                                    \
            T s = 0;                                                                                \
            for (int64_t q = 0; q < j->K; q++) s += ar[q] * B[q * j->N + j->col[k]];                \
            o[k] = alpha * s + beta * c[k];                                                         \
        }                                                                                           \
    }
SAMPLED_PART(float, sampled_part_f32)
SAMPLED_PART(double, sampled_part_f64)

int pf_csr_sampled_addmm(int dtype, int64_t nnz, const int64_t *rows, const int64_t *col, const void *c, int64_t M,
                         int64_t N, int64_t K, const void *A, const void *B, double alpha, double beta, void *out) {
    int rc = spmm_check("sparse.sampled_addmm", dtype, nnz, rows, col, M, N, K);
    if (rc) return rc;
    sampled_job j = {M, N, K, rows, col, c, A, B, out, alpha, beta};
    pf_parallel_range(pf_threads_for(nnz * (K ? K : 1)), nnz,
                      dtype == PF_FLOAT32 ? sampled_part_f32 : sampled_part_f64, &j);
    return PF_OK;
}
