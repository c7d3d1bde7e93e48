/* Dense linear algebra (pf_linalg_*): small LAPACK-style kernels of our own. This file holds
 * the batch machinery and the direct methods (LU, Cholesky, Householder QR, the matrix
 * exponential); linalg_jacobi.c the iterative ones (eigh, SVD).
 *
 * Every entry point works on a batch of matrices (the last two dims; the leading dims
 * are the batch, equal for every operand). Each matrix is loaded into a row-major double
 * work buffer whatever its dtype and strides, factorized there and stored back: float32
 * gets double-precision factorizations for free, and one code path serves every layout.
 * These are O(n^3) kernels for the small matrices of deep-learning code (parametrizations,
 * whitening, covariance); the batch is split over threads, a matrix is never.
 *
 * Failures (a singular matrix, a non positive-definite one, NaN or Inf in the input,
 * an iteration that did not converge) are PF_ERR_LINALG naming the first batch element
 * that failed, so Python can raise torch's LinAlgError. Iterations are bounded. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "linalg.h"

/* ---- batched access ------------------------------------------------------------ */

/* Byte address of batch element b of t, whose first nbd dims are the batch. */
static char *batch_base(const pf_tensor *t, int nbd, int64_t b) {
    int64_t off = 0;
    for (int d = nbd - 1; d >= 0; d--) {
        off += b % t->shape[d] * t->strides[d];
        b /= t->shape[d];
    }
    return (char *)t->data + off * (int64_t)pf_dtype_size[t->dtype];
}

/* The matrix (last two dims) of batch element b into a row-major rows x cols buffer. */
void pf_la_load(const pf_tensor *t, int64_t b, double *dst) {
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1], sz = (int64_t)pf_dtype_size[t->dtype];
    const char *base = batch_base(t, nd - 2, b);
    int64_t rs = t->strides[nd - 2] * sz, cs = t->strides[nd - 1] * sz;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = pf_load_f64(base + i * rs + j * cs, t->dtype);
}

void pf_la_store(pf_tensor *t, int64_t b, const double *src) {
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1], sz = (int64_t)pf_dtype_size[t->dtype];
    char *base = batch_base(t, nd - 2, b);
    int64_t rs = t->strides[nd - 2] * sz, cs = t->strides[nd - 1] * sz;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) pf_store_f64(base + i * rs + j * cs, t->dtype, src[i * cols + j]);
}

/* A vector (last dim) of batch element b. */
void pf_la_store_vec(pf_tensor *t, int64_t b, const double *src) {
    int nd = t->ndim;
    int64_t n = t->shape[nd - 1], s = t->strides[nd - 1] * (int64_t)pf_dtype_size[t->dtype];
    char *base = batch_base(t, nd - 1, b);
    for (int64_t i = 0; i < n; i++) pf_store_f64(base + i * s, t->dtype, src[i]);
}

static void store_scalar(pf_tensor *t, int64_t b, double v) { pf_store_f64(batch_base(t, t->ndim, b), t->dtype, v); }
void pf_la_store_scalar(pf_tensor *t, int64_t b, double v) { store_scalar(t, b, v); }

/* A vector (last dim) of batch element b into dst. */
void pf_la_load_vec(const pf_tensor *t, int64_t b, double *dst) {
    int nd = t->ndim;
    int64_t n = t->shape[nd - 1], s = t->strides[nd - 1] * (int64_t)pf_dtype_size[t->dtype];
    const char *base = batch_base(t, nd - 1, b);
    for (int64_t i = 0; i < n; i++) dst[i] = pf_load_f64(base + i * s, t->dtype);
}

int pf_la_finite(const double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

/* ---- argument checks ---------------------------------------------------------------- */

/* t must be float32/float64 (dt when dt >= 0), have nbd batch dims equal to bshape, then
 * `ntrail` trailing dims equal to trail[] (a negative entry accepts any size). */
int pf_la_expect(const pf_tensor *t, const char *fn, const char *what, int dt, int nbd, const int64_t *bshape,
                 int ntrail, int64_t t0, int64_t t1) {
    int rc = pf_check(t, what);
    if (rc) return rc;
    char buf[128];
    if (t->dtype != PF_FLOAT32 && t->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: %s must be float32 or float64, got %s", fn, what, pf_dtype_name[t->dtype]);
    if (dt >= 0 && t->dtype != dt)
        return pf_error(PF_ERR_TYPE, "%s: %s has dtype %s, expected %s like the input", fn, what,
                        pf_dtype_name[t->dtype], pf_dtype_name[dt]);
    if (t->ndim != nbd + ntrail)
        return pf_error(PF_ERR_VALUE, "%s: %s must have %d dims, got shape %s", fn, what, nbd + ntrail,
                        pf_shape_str(t, buf));
    for (int d = 0; d < nbd; d++)
        if (t->shape[d] != bshape[d])
            return pf_error(PF_ERR_VALUE, "%s: %s has batch dims that differ from the input's (shape %s)", fn, what,
                            pf_shape_str(t, buf));
    int64_t want[2] = {t0, t1};
    for (int k = 0; k < ntrail; k++)
        if (want[k] >= 0 && t->shape[nbd + k] != want[k])
            return pf_error(PF_ERR_VALUE, "%s: %s has shape %s, its dim %d should be %lld", fn, what,
                            pf_shape_str(t, buf), nbd + k, (long long)want[k]);
    return PF_OK;
}

/* The input matrix: at least 2 dims, float, square when asked. */
int pf_la_expect_input(const pf_tensor *a, const char *fn, int square) {
    int rc = pf_check(a, "A");
    if (rc) return rc;
    char buf[128];
    if (a->ndim < 2)
        return pf_error(PF_ERR_VALUE, "%s: A must have at least 2 dims, got shape %s", fn, pf_shape_str(a, buf));
    if (square && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return pf_error(PF_ERR_VALUE, "%s: A must be batches of square matrices, got shape %s", fn,
                        pf_shape_str(a, buf));
    return pf_la_expect(a, fn, "A", -1, a->ndim - 2, a->shape, 2, -1, -1);
}

int64_t pf_la_batch_count(const pf_tensor *a) {
    int64_t n = 1;
    for (int d = 0; d < a->ndim - 2; d++) n *= a->shape[d];
    return n;
}

/* ---- the batch driver ------------------------------------------------------------------ */

typedef struct {
    la_kernel fn;
    const void *ctx;
    int64_t nbatch, next, first, detail;
    int status;
} la_job;

/* Batch elements go one at a time to whichever thread is free, as their costs differ (the
 * iterative methods' sweep counts); the first failure by batch index is kept. */
static void la_part(void *arg, int t, int T) {
    la_job *j = arg;
    (void)t, (void)T;
    for (int64_t b; (b = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->nbatch;) {
        int64_t d = 0;
        int st = j->fn(j->ctx, b, &d);
        if (st == LA_OK) continue;
#pragma omp critical(pf_linalg_error)
        if (j->first < 0 || b < j->first) {
            j->first = b;
            j->status = st;
            j->detail = d;
        }
    }
}

/* Runs fn over every batch element (threads when the work is large) and turns the
 * first failure, by batch index, into an error message. */
int pf_la_run(la_kernel fn, const void *ctx, int64_t nbatch, int64_t cost, int batched) {
    la_job j = {.fn = fn, .ctx = ctx, .nbatch = nbatch, .first = -1, .status = LA_OK};
    int nt = nbatch > 1 ? pf_threads_for(nbatch * cost) : 1;
    pf_run_team(nt > nbatch ? (int)nbatch : nt, la_part, &j);
    int status = j.status;
    int64_t first = j.first, detail = j.detail;
    if (status == LA_OK) return PF_OK;
    char where[64] = "";
    if (batched) snprintf(where, sizeof where, "(Batch element %lld): ", (long long)first);
    switch (status) {
    case LA_NOMEM: return pf_error(PF_ERR_NOMEM, "%sout of memory for the work matrices", where);
    case LA_NONFINITE:
        return pf_error(PF_ERR_LINALG, "%sthe input contains NaN or infinity; only finite matrices are allowed",
                        where);
    case LA_SINGULAR:
        return pf_error(PF_ERR_LINALG,
                        "%sthe input matrix is singular: U[%lld, %lld] of its LU factorization is exactly zero",
                        where, (long long)detail, (long long)detail);
    case LA_NOTPD:
        return pf_error(PF_ERR_LINALG,
                        "%sthe input is not positive-definite (the leading minor of order %lld is not "
                        "positive-definite)",
                        where, (long long)detail);
    case LA_TRI_ZERO:
        return pf_error(PF_ERR_LINALG, "%sthe triangular matrix is singular: its diagonal element %lld is zero",
                        where, (long long)detail);
    case LA_NOCONV:
        return pf_error(PF_ERR_LINALG,
                        "%sthe algorithm did not converge in %d sweeps (the input is ill-conditioned or has too "
                        "many repeated values)",
                        where, LA_MAX_SWEEPS);
    case LA_BADPIVOT:
        return pf_error(PF_ERR_VALUE,
                        "%sthe pivots are not an LDL factorization's (entry %lld): each must be an integer between "
                        "1 and n, at least its own 1-based index, and negative ones come in equal pairs",
                        where, (long long)detail);
    default: return pf_error(PF_ERR_LINALG, "%sthe result overflows to infinity", where);
    }
}

/* ---- dense kernels on row-major doubles ------------------------------------------------- */

/* c = a b, all n x n */
static void matmul_sq(const double *a, const double *b, double *c, int64_t n) {
    for (int64_t i = 0; i < n * n; i++) c[i] = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (int64_t j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
        }
}

/* dst (cols x rows) = src (rows x cols)^T */
void pf_la_transpose(const double *src, int64_t rows, int64_t cols, double *dst) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[j * rows + i] = src[i * cols + j];
}

/* In-place LU with partial pivoting (L unit lower, U upper, P a = L U); piv[k] is the row
 * swapped with k. Returns the first column with an exactly zero pivot, or -1; like LAPACK's
 * getrf it finishes the factorization anyway, so det is 0 rather than garbage. */
static int64_t lu_factor(double *a, int64_t n, int64_t *piv, int *sign) {
    int64_t zero = -1;
    *sign = 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        double best = fabs(a[k * n + k]);
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > best) best = fabs(a[i * n + k]), p = i;
        piv[k] = p;
        if (p != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            *sign = -*sign;
        }
        double pivot = a[k * n + k];
        if (pivot == 0.0) {
            if (zero < 0) zero = k;
            continue;
        }
        for (int64_t i = k + 1; i < n; i++) {
            double l = a[i * n + k] /= pivot;
            if (l != 0.0)
                for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
        }
    }
    return zero;
}

/* b (n x m) = A^-1 b from lu_factor's output */
static void lu_solve(const double *lu, const int64_t *piv, double *b, int64_t n, int64_t m) {
    for (int64_t k = 0; k < n; k++)
        if (piv[k] != k)
            for (int64_t j = 0; j < m; j++) {
                double t = b[k * m + j];
                b[k * m + j] = b[piv[k] * m + j];
                b[piv[k] * m + j] = t;
            }
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < i; k++) {
            double l = lu[i * n + k];
            if (l != 0.0)
                for (int64_t j = 0; j < m; j++) b[i * m + j] -= l * b[k * m + j];
        }
    for (int64_t i = n - 1; i >= 0; i--) {
        for (int64_t k = i + 1; k < n; k++) {
            double u = lu[i * n + k];
            if (u != 0.0)
                for (int64_t j = 0; j < m; j++) b[i * m + j] -= u * b[k * m + j];
        }
        double d = lu[i * n + i];
        for (int64_t j = 0; j < m; j++) b[i * m + j] /= d;
    }
}

/* ---- solve and triangular solve ------------------------------------------------------------- */

typedef struct {
    const pf_tensor *a, *b;
    pf_tensor *x;
    int upper, unit; /* triangular solve only */
} solve_ctx;

/* batch element bi's A (n x n) and B (n x m) in one buffer, B at A + n * n; NULL without memory */
static double *load_ab(const solve_ctx *c, int64_t bi, int64_t *np, int64_t *mp) {
    int nd = c->a->ndim;
    int64_t n = *np = c->a->shape[nd - 1], m = *mp = c->b->shape[nd - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + n * m + 1));
    if (!a) return NULL;
    pf_la_load(c->a, bi, a);
    pf_la_load(c->b, bi, a + n * n);
    return a;
}

static int solve_one(const void *vctx, int64_t bi, int64_t *detail) {
    const solve_ctx *c = vctx;
    int64_t n, m;
    double *a = load_ab(c, bi, &n, &m), *b = a ? a + n * n : NULL;
    int64_t *piv = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int st = LA_OK, sign;
    if (!a || !piv) {
        st = LA_NOMEM;
        goto done;
    }
    if (!pf_la_finite(a, n * n) || !pf_la_finite(b, n * m)) {
        st = LA_NONFINITE;
        goto done;
    }
    int64_t zero = lu_factor(a, n, piv, &sign);
    if (zero >= 0) {
        *detail = zero;
        st = LA_SINGULAR;
        goto done;
    }
    lu_solve(a, piv, b, n, m);
    pf_la_store(c->x, bi, b);
done:
    free(a);
    free(piv);
    return st;
}

static int tri_one(const void *vctx, int64_t bi, int64_t *detail) {
    const solve_ctx *c = vctx;
    int64_t n, m;
    double *a = load_ab(c, bi, &n, &m), *b = a ? a + n * n : NULL;
    if (!a) return LA_NOMEM;
    int st = LA_OK;
    /* only the referenced triangle must be finite: the other is never read */
    for (int64_t i = 0; i < n && st == LA_OK; i++)
        for (int64_t j = c->upper ? i : 0; j < (c->upper ? n : i + 1); j++)
            if (!isfinite(a[i * n + j]) && !(c->unit && i == j)) st = LA_NONFINITE;
    if (st == LA_OK && !pf_la_finite(b, n * m)) st = LA_NONFINITE;
    for (int64_t i = 0; i < n && st == LA_OK && !c->unit; i++)
        if (a[i * n + i] == 0.0) *detail = i, st = LA_TRI_ZERO;
    if (st == LA_OK) {
        for (int64_t s = 0; s < n; s++) {
            int64_t i = c->upper ? n - 1 - s : s;
            int64_t k0 = c->upper ? i + 1 : 0, k1 = c->upper ? n : i;
            for (int64_t k = k0; k < k1; k++) {
                double v = a[i * n + k];
                if (v != 0.0)
                    for (int64_t j = 0; j < m; j++) b[i * m + j] -= v * b[k * m + j];
            }
            if (!c->unit)
                for (int64_t j = 0; j < m; j++) b[i * m + j] /= a[i * n + i];
        }
        pf_la_store(c->x, bi, b);
    }
    free(a);
    return st;
}

/* x = A^-1 B over the batch: the shared checks, then `one` per batch element (lu: one factorizes A) */
static int solve_op(const char *fn, const solve_ctx *c, la_kernel one, int lu) {
    const pf_tensor *a = c->a, *b = c->b;
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = pf_la_expect(b, fn, "B", a->dtype, nbd, a->shape, 2, n, -1))) return rc;
    int64_t m = b->shape[nbd + 1];
    if ((rc = pf_la_expect(c->x, fn, "out", a->dtype, nbd, a->shape, 2, n, m))) return rc;
    return pf_la_run(one, c, pf_la_batch_count(a), n * n * (lu ? n + m : m), nbd > 0);
}

int pf_linalg_solve(const pf_tensor *a, const pf_tensor *b, pf_tensor *x) {
    solve_ctx c = {a, b, x, 0, 0};
    return solve_op("linalg.solve", &c, solve_one, 1);
}

int pf_linalg_solve_triangular(const pf_tensor *a, const pf_tensor *b, pf_tensor *x, int upper, int unit) {
    solve_ctx c = {a, b, x, upper != 0, unit != 0};
    return solve_op("linalg.solve_triangular", &c, tri_one, 0);
}

/* ---- determinants ----------------------------------------------------------------------- */

typedef struct {
    const pf_tensor *a;
    pf_tensor *det, *sign, *logabs;
} det_ctx;

static int det_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const det_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + 1));
    int64_t *piv = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int st = LA_OK, sign;
    if (!a || !piv) {
        st = LA_NOMEM;
        goto done;
    }
    pf_la_load(c->a, bi, a);
    if (!pf_la_finite(a, n * n)) {
        st = LA_NONFINITE;
        goto done;
    }
    /* a singular matrix is no error here: det 0, sign 0, log|det| -inf, as torch */
    lu_factor(a, n, piv, &sign);
    double det = sign, sgn = sign, logabs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double u = a[i * n + i];
        det *= u;
        sgn *= (u > 0) - (u < 0);
        logabs += log(fabs(u));
    }
    if (sgn == 0.0) logabs = -INFINITY;
    if (c->det) store_scalar(c->det, bi, det);
    if (c->sign) store_scalar(c->sign, bi, sgn);
    if (c->logabs) store_scalar(c->logabs, bi, logabs);
done:
    free(a);
    free(piv);
    return st;
}

int pf_linalg_det(const pf_tensor *a, pf_tensor *det, pf_tensor *sign, pf_tensor *logabsdet) {
    const char *fn = "linalg.det";
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    pf_tensor *outs[3] = {det, sign, logabsdet};
    const char *names[3] = {"det", "sign", "logabsdet"};
    for (int k = 0; k < 3; k++)
        if (outs[k] && (rc = pf_la_expect(outs[k], fn, names[k], a->dtype, nbd, a->shape, 0, -1, -1))) return rc;
    det_ctx c = {a, det, sign, logabsdet};
    int64_t n = a->shape[nbd];
    return pf_la_run(det_one, &c, pf_la_batch_count(a), n * n * n, nbd > 0);
}

/* ---- Cholesky ------------------------------------------------------------------------------ */

/* an op from a batch of square matrices to one of the same shape (cholesky, matrix_exp) */
typedef struct {
    const pf_tensor *a;
    pf_tensor *out;
} square_ctx;

static int square_op(const char *fn, const pf_tensor *a, pf_tensor *out, la_kernel one, int64_t cost_per_n3) {
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = pf_la_expect(out, fn, "out", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    square_ctx c = {a, out};
    return pf_la_run(one, &c, pf_la_batch_count(a), cost_per_n3 * n * n * n, nbd > 0);
}

/* a (n x n, row-major) = L L^T in place, column by column from the lower triangle, the upper one zeroed; 0, or the
 * order j + 1 of the first leading minor that is not positive-definite (NaN included), as LAPACK's info: then
 * a[j][j] holds the failing pivot, the columns before j are L's and the later ones still the input's */
static int64_t chol_factor(double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = i + 1; k < n; k++) a[i * n + k] = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int64_t k = 0; k < j; k++) s -= a[j * n + k] * a[j * n + k];
        if (!(s > 0.0)) {
            a[j * n + j] = s;
            return j + 1;
        }
        double d = sqrt(s);
        a[j * n + j] = d;
        for (int64_t i = j + 1; i < n; i++) {
            double v = a[i * n + j];
            for (int64_t k = 0; k < j; k++) v -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = v / d;
        }
    }
    return 0;
}

static int chol_one(const void *vctx, int64_t bi, int64_t *detail) {
    const square_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + 1));
    if (!a) return LA_NOMEM;
    int st = LA_OK;
    pf_la_load(c->a, bi, a);
    for (int64_t i = 0; i < n && st == LA_OK; i++)
        for (int64_t j = 0; j <= i; j++)
            if (!isfinite(a[i * n + j])) st = LA_NONFINITE;
    if (st == LA_OK && (*detail = chol_factor(a, n)) != 0) st = LA_NOTPD;
    if (st == LA_OK) pf_la_store(c->out, bi, a);
    free(a);
    return st;
}

typedef struct {
    const pf_tensor *a;
    pf_tensor *out;
    int32_t *info;
} chol_ex_ctx;

/* cholesky_ex: never fails on the matrix; its info says where the factorization stopped */
static int chol_ex_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const chol_ex_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + 1));
    if (!a) return LA_NOMEM;
    pf_la_load(c->a, bi, a);
    int64_t info = chol_factor(a, n);
    c->info[bi] = (int32_t)info;
    pf_la_store(c->out, bi, a);
    free(a);
    return LA_OK;
}

int pf_linalg_cholesky_ex(const pf_tensor *a, pf_tensor *l, pf_tensor *info) {
    const char *fn = "linalg.cholesky_ex";
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = pf_la_expect(l, fn, "L", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    if ((rc = pf_check(info, "info"))) return rc;
    int64_t stride = 1;
    int ok = info->dtype == PF_INT32 && info->ndim == nbd;
    for (int d = nbd - 1; ok && d >= 0; d--) {
        ok = info->shape[d] == a->shape[d] && (info->shape[d] == 1 || info->strides[d] == stride);
        stride *= info->shape[d];
    }
    if (!ok) return pf_error(PF_ERR_VALUE, "%s: info must be a contiguous int32 tensor of A's batch shape", fn);
    chol_ex_ctx c = {a, l, (int32_t *)info->data};
    return pf_la_run(chol_ex_one, &c, pf_la_batch_count(a), n * n * n, nbd > 0);
}

int pf_linalg_cholesky(const pf_tensor *a, pf_tensor *l) {
    return square_op("linalg.cholesky", a, l, chol_one, 1);
}

/* ---- Householder QR ------------------------------------------------------------------------ */

typedef struct {
    const pf_tensor *a;
    pf_tensor *q, *r;
    int complete;
} qr_ctx;

/* x[j:m, 0:nc] (rows ldx apart) = H x for H = I - tau v v^T, v stored below the diagonal of a's
 * column j (v[j] = 1 implied): w = tau v^T x, then x -= v w, row by row so every pass is
 * contiguous. w holds nc doubles. */
static void reflect(const double *a, int64_t n, int64_t m, int64_t j, double tau, double *x, int64_t ldx, int64_t nc,
                    double *w) {
    memcpy(w, x + j * ldx, sizeof(double) * (size_t)nc);
    for (int64_t i = j + 1; i < m; i++) {
        double vi = a[i * n + j];
        const double *row = x + i * ldx;
        for (int64_t c = 0; c < nc; c++) w[c] += vi * row[c];
    }
    for (int64_t c = 0; c < nc; c++) w[c] *= tau;
    for (int64_t c = 0; c < nc; c++) x[j * ldx + c] -= w[c];
    for (int64_t i = j + 1; i < m; i++) {
        double vi = a[i * n + j];
        double *row = x + i * ldx;
        for (int64_t c = 0; c < nc; c++) row[c] -= vi * w[c];
    }
}

/* In-place Householder QR of the m x n row-major a: R is left in its upper triangle, the
 * reflector j (v with v[j] = 1 implied, H_j = I - tau_j v v^T) below the diagonal of column j.
 * LAPACK's dlarfg signs: R[j, j] = -sign(a_jj) ||x||, and no reflection (tau = 0) when
 * the column is already zero below the diagonal, so R matches what torch returns. */
static void householder(double *a, int64_t m, int64_t n, double *tau, double *w) {
    int64_t k = m < n ? m : n;
    for (int64_t j = 0; j < k; j++) {
        double alpha = a[j * n + j], xnorm = 0.0;
        for (int64_t i = j + 1; i < m; i++) xnorm = hypot(xnorm, a[i * n + j]);
        if (xnorm == 0.0) {
            tau[j] = 0.0;
            continue;
        }
        double beta = -copysign(hypot(alpha, xnorm), alpha);
        tau[j] = (beta - alpha) / beta;
        double scale = 1.0 / (alpha - beta);
        for (int64_t i = j + 1; i < m; i++) a[i * n + j] *= scale;
        a[j * n + j] = beta;
        /* apply H_j to the trailing columns */
        if (n > j + 1) reflect(a, n, m, j, tau[j], a + j + 1, n, n - j - 1, w);
    }
}

/* q (m x kq) = H_0 ... H_{k-1} applied to the first kq columns of the identity; w holds kq doubles */
static void householder_q(const double *a, int64_t m, int64_t n, const double *tau, double *q, int64_t kq,
                          double *w) {
    int64_t k = m < n ? m : n;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < kq; c++) q[i * kq + c] = i == c;
    for (int64_t j = k - 1; j >= 0; j--)
        if (tau[j] != 0.0) reflect(a, n, m, j, tau[j], q, kq, kq, w);
}

static int qr_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const qr_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t m = c->a->shape[nd - 2], n = c->a->shape[nd - 1], k = m < n ? m : n;
    int64_t kr = c->r->shape[nd - 2]; /* rows of R: k, or m when complete */
    int64_t kq = c->q ? c->q->shape[nd - 1] : 0;
    double *a = malloc(sizeof(double) * (size_t)(m * n + k + kr * n + m * kq + n + kq + 1));
    if (!a) return LA_NOMEM;
    double *tau = a + m * n, *r = tau + k, *q = r + kr * n, *w = q + m * kq;
    int st = LA_OK;
    pf_la_load(c->a, bi, a);
    if (!pf_la_finite(a, m * n)) st = LA_NONFINITE;
    if (st == LA_OK) {
        householder(a, m, n, tau, w);
        for (int64_t i = 0; i < kr; i++)
            for (int64_t j = 0; j < n; j++) r[i * n + j] = i <= j && i < m ? a[i * n + j] : 0.0;
        pf_la_store(c->r, bi, r);
        if (c->q) {
            householder_q(a, m, n, tau, q, kq, w);
            pf_la_store(c->q, bi, q);
        }
    }
    free(a);
    return st;
}

int pf_linalg_qr(const pf_tensor *a, pf_tensor *q, pf_tensor *r, int complete) {
    const char *fn = "linalg.qr";
    int rc = pf_la_expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1], k = complete ? m : (m < n ? m : n);
    if (q && (rc = pf_la_expect(q, fn, "Q", a->dtype, nbd, a->shape, 2, m, k))) return rc;
    if ((rc = pf_la_expect(r, fn, "R", a->dtype, nbd, a->shape, 2, k, n))) return rc;
    qr_ctx c = {a, q, r, complete != 0};
    return pf_la_run(qr_one, &c, pf_la_batch_count(a), m * n * (m < n ? n : m), nbd > 0);
}

typedef struct {
    const pf_tensor *a;
    pf_tensor *h, *tau;
} geqrf_ctx;

static int geqrf_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const geqrf_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t m = c->a->shape[nd - 2], n = c->a->shape[nd - 1], k = m < n ? m : n;
    double *a = malloc(sizeof(double) * (size_t)(m * n + k + n + 1));
    if (!a) return LA_NOMEM;
    int st = LA_OK;
    pf_la_load(c->a, bi, a);
    if (!pf_la_finite(a, m * n)) st = LA_NONFINITE;
    if (st == LA_OK) {
        householder(a, m, n, a + m * n, a + m * n + k);
        pf_la_store(c->h, bi, a);
        pf_la_store_vec(c->tau, bi, a + m * n);
    }
    free(a);
    return st;
}

int pf_linalg_geqrf(const pf_tensor *a, pf_tensor *h, pf_tensor *tau) {
    const char *fn = "geqrf";
    int rc = pf_la_expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1];
    if ((rc = pf_la_expect(h, fn, "out", a->dtype, nbd, a->shape, 2, m, n))) return rc;
    if ((rc = pf_la_expect(tau, fn, "tau", a->dtype, nbd, a->shape, 1, m < n ? m : n, -1))) return rc;
    geqrf_ctx c = {a, h, tau};
    return pf_la_run(geqrf_one, &c, pf_la_batch_count(a), m * n * (m < n ? n : m), nbd > 0);
}

/* ---- LU of an m x n matrix (LAPACK's getf2): the pivot is the first largest |a| in its column -------------- */

typedef struct {
    const pf_tensor *a;
    pf_tensor *lu, *piv, *info;
} lu_ctx;

static int lu_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const lu_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t m = c->a->shape[nd - 2], n = c->a->shape[nd - 1], k = m < n ? m : n, info = 0;
    double *a = malloc(sizeof(double) * (size_t)(m * n + k + 1)), *piv = a ? a + m * n : NULL;
    if (!a) return LA_NOMEM;
    pf_la_load(c->a, bi, a);
    for (int64_t j = 0; j < k; j++) {
        int64_t p = j;
        double best = fabs(a[j * n + j]);
        for (int64_t i = j + 1; i < m; i++)
            if (fabs(a[i * n + j]) > best) best = fabs(a[i * n + j]), p = i;
        piv[j] = (double)(p + 1);
        if (p != j)
            for (int64_t col = 0; col < n; col++) {
                double t = a[j * n + col];
                a[j * n + col] = a[p * n + col];
                a[p * n + col] = t;
            }
        double pivot = a[j * n + j];
        if (pivot != 0.0) {
            for (int64_t i = j + 1; i < m; i++) a[i * n + j] /= pivot;
        } else if (info == 0) {
            info = j + 1; /* the column below is all zero then: the update below changes nothing */
        }
        for (int64_t i = j + 1; i < m; i++) {
            double l = a[i * n + j];
            if (l != 0.0)
                for (int64_t col = j + 1; col < n; col++) a[i * n + col] -= l * a[j * n + col];
        }
    }
    pf_la_store(c->lu, bi, a);
    pf_la_store_vec(c->piv, bi, piv);
    store_scalar(c->info, bi, (double)info);
    free(a);
    return LA_OK;
}

int pf_linalg_lu_factor(const pf_tensor *a, pf_tensor *lu, pf_tensor *piv, pf_tensor *info) {
    const char *fn = "linalg.lu_factor";
    int rc = pf_la_expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1], k = m < n ? m : n;
    if ((rc = pf_la_expect(lu, fn, "LU", a->dtype, nbd, a->shape, 2, m, n))) return rc;
    if ((rc = pf_la_expect(piv, fn, "pivots", a->dtype, nbd, a->shape, 1, k, -1))) return rc;
    if ((rc = pf_la_expect(info, fn, "info", a->dtype, nbd, a->shape, 0, -1, -1))) return rc;
    lu_ctx c = {a, lu, piv, info};
    return pf_la_run(lu_one, &c, pf_la_batch_count(a), m * n * k, nbd > 0);
}

/* ---- matrix exponential: Pade 13 with scaling and squaring (Higham 2005) ------------------- */

static int expm_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    static const double b[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                 1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                 670442572800.0,      33522128640.0,       1323241920.0,
                                 40840800.0,          960960.0,            16380.0,
                                 182.0,               1.0};
    const double theta13 = 5.371920351148152;
    const square_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1], nn = n * n;
    double *w = malloc(sizeof(double) * (size_t)(8 * nn + 1));
    int64_t *piv = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int st = LA_OK, sign;
    if (!w || !piv) {
        st = LA_NOMEM;
        goto done;
    }
    double *a = w, *a2 = a + nn, *a4 = a2 + nn, *a6 = a4 + nn, *u = a6 + nn, *v = u + nn, *t1 = v + nn,
           *t2 = t1 + nn;
    pf_la_load(c->a, bi, a);
    if (!pf_la_finite(a, nn)) {
        st = LA_NONFINITE;
        goto done;
    }
    double norm1 = 0.0; /* the 1-norm: largest absolute column sum */
    for (int64_t j = 0; j < n; j++) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s += fabs(a[i * n + j]);
        norm1 = s > norm1 ? s : norm1;
    }
    int squarings = norm1 > theta13 ? (int)ceil(log2(norm1 / theta13)) : 0;
    if (squarings > 0)
        for (int64_t i = 0; i < nn; i++) a[i] = ldexp(a[i], -squarings);
    matmul_sq(a, a, a2, n);
    matmul_sq(a2, a2, a4, n);
    matmul_sq(a2, a4, a6, n);
    for (int64_t i = 0; i < nn; i++) { /* t1 = inner U, t2 = inner V */
        t1[i] = b[13] * a6[i] + b[11] * a4[i] + b[9] * a2[i];
        t2[i] = b[12] * a6[i] + b[10] * a4[i] + b[8] * a2[i];
    }
    matmul_sq(a6, t1, u, n);
    matmul_sq(a6, t2, v, n);
    for (int64_t i = 0; i < nn; i++) {
        u[i] += b[7] * a6[i] + b[5] * a4[i] + b[3] * a2[i];
        v[i] += b[6] * a6[i] + b[4] * a4[i] + b[2] * a2[i];
    }
    for (int64_t i = 0; i < n; i++) u[i * n + i] += b[1], v[i * n + i] += b[0];
    matmul_sq(a, u, t1, n); /* t1 = U */
    for (int64_t i = 0; i < nn; i++) {
        t2[i] = v[i] - t1[i]; /* V - U: nonsingular for ||A|| <= theta13 */
        v[i] = v[i] + t1[i];  /* V + U */
    }
    lu_factor(t2, n, piv, &sign);
    lu_solve(t2, piv, v, n, n);
    for (int s = 0; s < squarings; s++) {
        matmul_sq(v, v, t1, n);
        memcpy(v, t1, sizeof(double) * (size_t)nn);
    }
    if (!pf_la_finite(v, nn)) st = LA_OVERFLOW;
    else pf_la_store(c->out, bi, v);
done:
    free(w);
    free(piv);
    return st;
}

int pf_linalg_matrix_exp(const pf_tensor *a, pf_tensor *out) {
    return square_op("linalg.matrix_exp", a, out, expm_one, 10);
}
