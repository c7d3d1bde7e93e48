/* Dense linear algebra (pf_linalg_*): small LAPACK-style kernels of our own.
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
#include "core.h"

/* what a per-matrix kernel reports; `detail` says where */
enum { LA_OK, LA_NOMEM, LA_NONFINITE, LA_SINGULAR, LA_NOTPD, LA_TRI_ZERO, LA_NOCONV, LA_OVERFLOW };

/* Jacobi sweeps before giving up: quadratic convergence needs about 10 for any n we see */
#define LA_MAX_SWEEPS 100

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
static void load_mat(const pf_tensor *t, int64_t b, double *dst) {
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1], sz = (int64_t)pf_dtype_size[t->dtype];
    const char *base = batch_base(t, nd - 2, b);
    int64_t rs = t->strides[nd - 2] * sz, cs = t->strides[nd - 1] * sz;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = pf_load_f64(base + i * rs + j * cs, t->dtype);
}

static void store_mat(pf_tensor *t, int64_t b, const double *src) {
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1], sz = (int64_t)pf_dtype_size[t->dtype];
    char *base = batch_base(t, nd - 2, b);
    int64_t rs = t->strides[nd - 2] * sz, cs = t->strides[nd - 1] * sz;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) pf_store_f64(base + i * rs + j * cs, t->dtype, src[i * cols + j]);
}

/* A vector (last dim) of batch element b. */
static void store_vec(pf_tensor *t, int64_t b, const double *src) {
    int nd = t->ndim;
    int64_t n = t->shape[nd - 1], s = t->strides[nd - 1] * (int64_t)pf_dtype_size[t->dtype];
    char *base = batch_base(t, nd - 1, b);
    for (int64_t i = 0; i < n; i++) pf_store_f64(base + i * s, t->dtype, src[i]);
}

static void store_scalar(pf_tensor *t, int64_t b, double v) { pf_store_f64(batch_base(t, t->ndim, b), t->dtype, v); }

static int all_finite(const double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

/* ---- argument checks ---------------------------------------------------------------- */

/* t must be float32/float64 (dt when dt >= 0), have nbd batch dims equal to bshape, then
 * `ntrail` trailing dims equal to trail[] (a negative entry accepts any size). */
static int expect(const pf_tensor *t, const char *fn, const char *what, int dt, int nbd, const int64_t *bshape,
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
static int expect_input(const pf_tensor *a, const char *fn, int square) {
    int rc = pf_check(a, "A");
    if (rc) return rc;
    char buf[128];
    if (a->ndim < 2)
        return pf_error(PF_ERR_VALUE, "%s: A must have at least 2 dims, got shape %s", fn, pf_shape_str(a, buf));
    if (square && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return pf_error(PF_ERR_VALUE, "%s: A must be batches of square matrices, got shape %s", fn,
                        pf_shape_str(a, buf));
    return expect(a, fn, "A", -1, a->ndim - 2, a->shape, 2, -1, -1);
}

static int64_t batch_count(const pf_tensor *a) {
    int64_t n = 1;
    for (int d = 0; d < a->ndim - 2; d++) n *= a->shape[d];
    return n;
}

/* ---- the batch driver ------------------------------------------------------------------ */

typedef int (*la_kernel)(const void *ctx, int64_t b, int64_t *detail);

/* Runs fn over every batch element (threads when the work is large) and turns the
 * first failure, by batch index, into an error message. */
static int la_run(la_kernel fn, const void *ctx, int64_t nbatch, int64_t cost, int batched) {
    int status = LA_OK;
    int64_t first = -1, detail = 0;
    int nt = nbatch > 1 ? pf_threads_for(nbatch * cost) : 1;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
#endif
    for (int64_t b = 0; b < nbatch; b++) {
        int64_t d = 0;
        int st = fn(ctx, b, &d);
        if (st != LA_OK) {
#ifdef _OPENMP
#pragma omp critical(pf_linalg_error)
#endif
            if (first < 0 || b < first) {
                first = b;
                status = st;
                detail = d;
            }
        }
    }
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
static void transpose(const double *src, int64_t rows, int64_t cols, double *dst) {
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

/* ---- solve ---------------------------------------------------------------------------- */

typedef struct {
    const pf_tensor *a, *b;
    pf_tensor *x;
} solve_ctx;

static int solve_one(const void *vctx, int64_t bi, int64_t *detail) {
    const solve_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t n = c->a->shape[nd - 1], m = c->b->shape[nd - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + n * m + 1));
    int64_t *piv = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int st = LA_OK, sign;
    if (!a || !piv) {
        st = LA_NOMEM;
        goto done;
    }
    double *b = a + n * n;
    load_mat(c->a, bi, a);
    load_mat(c->b, bi, b);
    if (!all_finite(a, n * n) || !all_finite(b, n * m)) {
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
    store_mat(c->x, bi, b);
done:
    free(a);
    free(piv);
    return st;
}

int pf_linalg_solve(const pf_tensor *a, const pf_tensor *b, pf_tensor *x) {
    const char *fn = "linalg.solve";
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = expect(b, fn, "B", a->dtype, nbd, a->shape, 2, n, -1))) return rc;
    if ((rc = expect(x, fn, "out", a->dtype, nbd, a->shape, 2, n, b->shape[nbd + 1]))) return rc;
    solve_ctx c = {a, b, x};
    return la_run(solve_one, &c, batch_count(a), n * n * (n + b->shape[nbd + 1]), nbd > 0);
}

/* ---- triangular solve ------------------------------------------------------------------- */

typedef struct {
    const pf_tensor *a, *b;
    pf_tensor *x;
    int upper, unit;
} tri_ctx;

static int tri_one(const void *vctx, int64_t bi, int64_t *detail) {
    const tri_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t n = c->a->shape[nd - 1], m = c->b->shape[nd - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + n * m + 1));
    if (!a) return LA_NOMEM;
    double *b = a + n * n;
    int st = LA_OK;
    load_mat(c->a, bi, a);
    load_mat(c->b, bi, b);
    /* only the referenced triangle must be finite: the other is never read */
    for (int64_t i = 0; i < n && st == LA_OK; i++)
        for (int64_t j = c->upper ? i : 0; j < (c->upper ? n : i + 1); j++)
            if (!isfinite(a[i * n + j]) && !(c->unit && i == j)) st = LA_NONFINITE;
    if (st == LA_OK && !all_finite(b, n * m)) st = LA_NONFINITE;
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
        store_mat(c->x, bi, b);
    }
    free(a);
    return st;
}

int pf_linalg_solve_triangular(const pf_tensor *a, const pf_tensor *b, pf_tensor *x, int upper, int unit) {
    const char *fn = "linalg.solve_triangular";
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = expect(b, fn, "B", a->dtype, nbd, a->shape, 2, n, -1))) return rc;
    if ((rc = expect(x, fn, "out", a->dtype, nbd, a->shape, 2, n, b->shape[nbd + 1]))) return rc;
    tri_ctx c = {a, b, x, upper != 0, unit != 0};
    return la_run(tri_one, &c, batch_count(a), n * n * b->shape[nbd + 1], nbd > 0);
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
    load_mat(c->a, bi, a);
    if (!all_finite(a, n * n)) {
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
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    pf_tensor *outs[3] = {det, sign, logabsdet};
    const char *names[3] = {"det", "sign", "logabsdet"};
    for (int k = 0; k < 3; k++)
        if (outs[k] && (rc = expect(outs[k], fn, names[k], a->dtype, nbd, a->shape, 0, -1, -1))) return rc;
    det_ctx c = {a, det, sign, logabsdet};
    int64_t n = a->shape[nbd];
    return la_run(det_one, &c, batch_count(a), n * n * n, nbd > 0);
}

/* ---- Cholesky ------------------------------------------------------------------------------ */

typedef struct {
    const pf_tensor *a;
    pf_tensor *l;
} chol_ctx;

static int chol_one(const void *vctx, int64_t bi, int64_t *detail) {
    const chol_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + 1));
    if (!a) return LA_NOMEM;
    int st = LA_OK;
    load_mat(c->a, bi, a);
    for (int64_t i = 0; i < n && st == LA_OK; i++)
        for (int64_t j = 0; j <= i; j++)
            if (!isfinite(a[i * n + j])) st = LA_NONFINITE;
    /* column by column, reading only the lower triangle (the upper one is zeroed) */
    for (int64_t j = 0; j < n && st == LA_OK; j++) {
        double s = a[j * n + j];
        for (int64_t k = 0; k < j; k++) s -= a[j * n + k] * a[j * n + k];
        if (!(s > 0.0)) {
            *detail = j + 1;
            st = LA_NOTPD;
            break;
        }
        double d = sqrt(s);
        a[j * n + j] = d;
        for (int64_t i = j + 1; i < n; i++) {
            double v = a[i * n + j];
            for (int64_t k = 0; k < j; k++) v -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = v / d;
            a[j * n + i] = 0.0;
        }
    }
    if (st == LA_OK) store_mat(c->l, bi, a);
    free(a);
    return st;
}

int pf_linalg_cholesky(const pf_tensor *a, pf_tensor *l) {
    const char *fn = "linalg.cholesky";
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = expect(l, fn, "out", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    chol_ctx c = {a, l};
    return la_run(chol_one, &c, batch_count(a), n * n * n, nbd > 0);
}

/* ---- Householder QR ------------------------------------------------------------------------ */

typedef struct {
    const pf_tensor *a;
    pf_tensor *q, *r;
    int complete;
} qr_ctx;

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
        /* apply H_j to the trailing columns as w = tau v^T A, A -= v w: row by row, contiguous */
        int64_t c0 = j + 1, nc = n - c0;
        if (nc <= 0) continue;
        memcpy(w, a + j * n + c0, sizeof(double) * (size_t)nc);
        for (int64_t i = j + 1; i < m; i++) {
            double vi = a[i * n + j];
            const double *row = a + i * n + c0;
            for (int64_t c = 0; c < nc; c++) w[c] += vi * row[c];
        }
        for (int64_t c = 0; c < nc; c++) w[c] *= tau[j];
        for (int64_t c = 0; c < nc; c++) a[j * n + c0 + c] -= w[c];
        for (int64_t i = j + 1; i < m; i++) {
            double vi = a[i * n + j];
            double *row = a + i * n + c0;
            for (int64_t c = 0; c < nc; c++) row[c] -= vi * w[c];
        }
    }
}

/* q (m x kq) = H_0 ... H_{k-1} applied to the first kq columns of the identity; w holds kq doubles */
static void householder_q(const double *a, int64_t m, int64_t n, const double *tau, double *q, int64_t kq,
                          double *w) {
    int64_t k = m < n ? m : n;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < kq; c++) q[i * kq + c] = i == c;
    for (int64_t j = k - 1; j >= 0; j--) {
        if (tau[j] == 0.0) continue;
        memcpy(w, q + j * kq, sizeof(double) * (size_t)kq);
        for (int64_t i = j + 1; i < m; i++) {
            double vi = a[i * n + j];
            const double *row = q + i * kq;
            for (int64_t c = 0; c < kq; c++) w[c] += vi * row[c];
        }
        for (int64_t c = 0; c < kq; c++) w[c] *= tau[j];
        for (int64_t c = 0; c < kq; c++) q[j * kq + c] -= w[c];
        for (int64_t i = j + 1; i < m; i++) {
            double vi = a[i * n + j];
            double *row = q + i * kq;
            for (int64_t c = 0; c < kq; c++) row[c] -= vi * w[c];
        }
    }
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
    load_mat(c->a, bi, a);
    if (!all_finite(a, m * n)) st = LA_NONFINITE;
    if (st == LA_OK) {
        householder(a, m, n, tau, w);
        for (int64_t i = 0; i < kr; i++)
            for (int64_t j = 0; j < n; j++) r[i * n + j] = i <= j && i < m ? a[i * n + j] : 0.0;
        store_mat(c->r, bi, r);
        if (c->q) {
            householder_q(a, m, n, tau, q, kq, w);
            store_mat(c->q, bi, q);
        }
    }
    free(a);
    return st;
}

int pf_linalg_qr(const pf_tensor *a, pf_tensor *q, pf_tensor *r, int complete) {
    const char *fn = "linalg.qr";
    int rc = expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1], k = complete ? m : (m < n ? m : n);
    if (q && (rc = expect(q, fn, "Q", a->dtype, nbd, a->shape, 2, m, k))) return rc;
    if ((rc = expect(r, fn, "R", a->dtype, nbd, a->shape, 2, k, n))) return rc;
    qr_ctx c = {a, q, r, complete != 0};
    return la_run(qr_one, &c, batch_count(a), m * n * (m < n ? n : m), nbd > 0);
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
    load_mat(c->a, bi, a);
    if (!all_finite(a, m * n)) st = LA_NONFINITE;
    if (st == LA_OK) {
        householder(a, m, n, a + m * n, a + m * n + k);
        store_mat(c->h, bi, a);
        store_vec(c->tau, bi, a + m * n);
    }
    free(a);
    return st;
}

int pf_linalg_geqrf(const pf_tensor *a, pf_tensor *h, pf_tensor *tau) {
    const char *fn = "geqrf";
    int rc = expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1];
    if ((rc = expect(h, fn, "out", a->dtype, nbd, a->shape, 2, m, n))) return rc;
    if ((rc = expect(tau, fn, "tau", a->dtype, nbd, a->shape, 1, m < n ? m : n, -1))) return rc;
    geqrf_ctx c = {a, h, tau};
    return la_run(geqrf_one, &c, batch_count(a), m * n * (m < n ? n : m), nbd > 0);
}

/* ---- symmetric eigendecomposition: cyclic Jacobi -------------------------------------------- */

typedef struct {
    const pf_tensor *a;
    pf_tensor *w, *v;
    int upper;
} eigh_ctx;

/* Sorts the n values ascending and the columns of the rows x n matrix vecs (may be NULL) the same
 * way; insertion sort, n is small. */
static void sort_pairs(double *val, int64_t n, double *vecs, int64_t rows) {
    for (int64_t i = 1; i < n; i++)
        for (int64_t j = i; j > 0 && val[j] < val[j - 1]; j--) {
            double t = val[j];
            val[j] = val[j - 1];
            val[j - 1] = t;
            for (int64_t r = 0; vecs && r < rows; r++) {
                t = vecs[r * n + j];
                vecs[r * n + j] = vecs[r * n + j - 1];
                vecs[r * n + j - 1] = t;
            }
        }
}

/* Eigen-decomposes the symmetric n x n a in place (its diagonal ends as the eigenvalues), the
 * rotations accumulated in the rows of vt (row j is eigenvector j). A rotation is skipped when the
 * off-diagonal element is negligible against its diagonal pair (Demmel and Veselic's relative test, so
 * small eigenvalues come out to high relative accuracy); done when a sweep rotates nothing. Rows p and
 * q are rotated in place (contiguous) and mirrored into columns p and q, since a stays symmetric; the
 * 2 x 2 block takes its closed form. */
static int jacobi_eigh(double *a, double *vt, int64_t n) {
    for (int64_t i = 0; i < n * n; i++) vt[i] = 0.0;
    for (int64_t i = 0; i < n; i++) vt[i * n + i] = 1.0;
    for (int sweep = 0; sweep < LA_MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (int64_t p = 0; p < n - 1; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double apq = a[p * n + q], app = a[p * n + p], aqq = a[q * n + q];
                if (fabs(apq) <= DBL_EPSILON * sqrt(fabs(app) * fabs(aqq)) || fabs(apq) < DBL_MIN) {
                    a[p * n + q] = a[q * n + p] = 0.0;
                    continue;
                }
                rotated = 1;
                double tau = (aqq - app) / (2.0 * apq);
                double t = copysign(1.0, tau) / (fabs(tau) + hypot(1.0, tau));
                double cs = 1.0 / hypot(1.0, t), sn = t * cs;
                double *rp = a + p * n, *rq = a + q * n;
                for (int64_t k = 0; k < n; k++) {
                    if (k == p || k == q) continue;
                    double x = rp[k], y = rq[k];
                    rp[k] = cs * x - sn * y;
                    rq[k] = sn * x + cs * y;
                    a[k * n + p] = rp[k];
                    a[k * n + q] = rq[k];
                }
                rp[p] = app - t * apq;
                rq[q] = aqq + t * apq;
                rp[q] = rq[p] = 0.0;
                double *vp = vt + p * n, *vq = vt + q * n;
                for (int64_t k = 0; k < n; k++) {
                    double x = vp[k], y = vq[k];
                    vp[k] = cs * x - sn * y;
                    vq[k] = sn * x + cs * y;
                }
            }
        if (!rotated) return LA_OK;
    }
    return LA_NOCONV;
}

static int eigh_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const eigh_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(2 * n * n + n + 1));
    if (!a) return LA_NOMEM;
    double *v = a + n * n, *w = v + n * n;
    int st = LA_OK;
    load_mat(c->a, bi, a);
    /* symmetric from the referenced triangle only, as LAPACK's syevd */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) {
            if (c->upper) a[i * n + j] = a[j * n + i];
            else a[j * n + i] = a[i * n + j];
        }
    if (!all_finite(a, n * n)) st = LA_NONFINITE;
    if (st == LA_OK) st = jacobi_eigh(a, v, n);
    if (st == LA_OK) {
        for (int64_t i = 0; i < n; i++) w[i] = a[i * n + i];
        transpose(v, n, n, a); /* eigenvectors as columns; a is free now */
        memcpy(v, a, sizeof(double) * (size_t)(n * n));
        sort_pairs(w, n, c->v ? v : NULL, n);
        store_vec(c->w, bi, w);
        if (c->v) store_mat(c->v, bi, v);
    }
    free(a);
    return st;
}

int pf_linalg_eigh(const pf_tensor *a, pf_tensor *w, pf_tensor *v, int upper) {
    const char *fn = "linalg.eigh";
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = expect(w, fn, "eigenvalues", a->dtype, nbd, a->shape, 1, n, -1))) return rc;
    if (v && (rc = expect(v, fn, "eigenvectors", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    eigh_ctx c = {a, w, v, upper != 0};
    return la_run(eigh_one, &c, batch_count(a), 8 * n * n * n, nbd > 0);
}

/* ---- SVD: one-sided Jacobi ---------------------------------------------------------------- */

typedef struct {
    const pf_tensor *a;
    pf_tensor *u, *s, *vh;
    int full;
} svd_ctx;

/* The SVD kernels keep vectors as rows (ut[j * m + i] is component i of vector j), so every rotation
 * and dot product runs over contiguous memory. */

/* Completes the orthonormal rows of the rows x m matrix ut where good[r] is 0 (a zero singular value
 * left no direction), for r < kk, and the rows kk..rows-1, from the unit vectors: each candidate loses
 * its components along the accepted rows twice and is kept when at least half of it remains (some e_i
 * always does while rows are missing). */
static void complete_basis(double *ut, int64_t m, int64_t rows, unsigned char *good, int64_t kk, double *tmp) {
    int64_t next_e = 0;
    for (int64_t c = 0; c < rows; c++) {
        if (c < kk && good[c]) continue;
        for (; next_e < m; next_e++) {
            for (int64_t i = 0; i < m; i++) tmp[i] = i == next_e;
            for (int pass = 0; pass < 2; pass++)
                for (int64_t o = 0; o < rows; o++) {
                    if (o < kk ? !good[o] : o >= c) continue; /* not (yet) a vector of the basis */
                    const double *uo = ut + o * m;
                    double d = 0.0;
                    for (int64_t i = 0; i < m; i++) d += uo[i] * tmp[i];
                    for (int64_t i = 0; i < m; i++) tmp[i] -= d * uo[i];
                }
            double nrm = 0.0;
            for (int64_t i = 0; i < m; i++) nrm = hypot(nrm, tmp[i]);
            if (nrm > 0.5) {
                for (int64_t i = 0; i < m; i++) ut[c * m + i] = tmp[i] / nrm;
                if (c < kk) good[c] = 1;
                next_e++;
                break;
            }
        }
    }
}

/* Hestenes' one-sided Jacobi on the n vectors of length m (m >= n) in the rows of ut: rotates pairs
 * until all are orthogonal to working precision, accumulating V's columns in the rows of vt (n x n).
 * Afterwards the rows of ut are the columns of U S. */
static int jacobi_svd(double *ut, int64_t m, int64_t n, double *vt) {
    for (int64_t i = 0; i < n * n; i++) vt[i] = 0.0;
    for (int64_t i = 0; i < n; i++) vt[i * n + i] = 1.0;
    for (int sweep = 0; sweep < LA_MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (int64_t p = 0; p < n - 1; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double *up = ut + p * m, *uq = ut + q * m;
                double alpha = 0.0, beta = 0.0, gamma = 0.0;
                for (int64_t i = 0; i < m; i++) {
                    alpha += up[i] * up[i];
                    beta += uq[i] * uq[i];
                    gamma += up[i] * uq[i];
                }
                if (fabs(gamma) <= DBL_EPSILON * sqrt(alpha) * sqrt(beta) || fabs(gamma) < DBL_MIN) continue;
                rotated = 1;
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = copysign(1.0, zeta) / (fabs(zeta) + hypot(1.0, zeta));
                double cs = 1.0 / hypot(1.0, t), sn = cs * t;
                for (int64_t i = 0; i < m; i++) {
                    double x = up[i], y = uq[i];
                    up[i] = cs * x - sn * y;
                    uq[i] = sn * x + cs * y;
                }
                double *vp = vt + p * n, *vq = vt + q * n;
                for (int64_t i = 0; i < n; i++) {
                    double x = vp[i], y = vq[i];
                    vp[i] = cs * x - sn * y;
                    vq[i] = sn * x + cs * y;
                }
            }
        if (!rotated) return LA_OK;
    }
    return LA_NOCONV;
}

static int svd_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const svd_ctx *c = vctx;
    int nd = c->a->ndim;
    int64_t m0 = c->a->shape[nd - 2], n0 = c->a->shape[nd - 1];
    int wide = m0 < n0; /* factor A^T = V S U^T instead, so the Jacobi vectors are the long ones */
    int64_t m = wide ? n0 : m0, n = wide ? m0 : n0;
    int64_t rows = c->full ? m : n; /* vectors of the long side's basis kept in ut */
    size_t need = (size_t)(m0 * n0 + rows * m + 2 * n * n + n + m + rows * m + 1);
    double *a = malloc(sizeof(double) * need);
    unsigned char *good = malloc((size_t)n + 1);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int st = LA_OK;
    if (!a || !good || !order) {
        st = LA_NOMEM;
        goto done;
    }
    double *ut = a + m0 * n0, *vt = ut + rows * m, *vs = vt + n * n, *s = vs + n * n, *tmp = s + n,
           *out = tmp + m;
    load_mat(c->a, bi, a);
    if (!all_finite(a, m0 * n0)) {
        st = LA_NONFINITE;
        goto done;
    }
    /* the rows of ut are the columns of the tall matrix: A's columns, or A's rows when wide */
    if (wide) memcpy(ut, a, sizeof(double) * (size_t)(m0 * n0));
    else transpose(a, m0, n0, ut);
    if ((st = jacobi_svd(ut, m, n, vt)) != LA_OK) goto done;
    for (int64_t j = 0; j < n; j++) {
        double nrm = 0.0;
        for (int64_t i = 0; i < m; i++) nrm = hypot(nrm, ut[j * m + i]);
        s[j] = nrm;
        order[j] = j;
    }
    for (int64_t i = 1; i < n; i++) /* descending; insertion sort, n is small */
        for (int64_t j = i; j > 0 && s[order[j]] > s[order[j - 1]]; j--) {
            int64_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    /* permute the vectors: out holds ut's first n rows in order, vs the rows of vt */
    for (int64_t j = 0; j < n; j++) {
        memcpy(out + j * m, ut + order[j] * m, sizeof(double) * (size_t)m);
        memcpy(vs + j * n, vt + order[j] * n, sizeof(double) * (size_t)n);
        tmp[j] = s[order[j]];
    }
    memcpy(s, tmp, sizeof(double) * (size_t)n);
    memcpy(ut, out, sizeof(double) * (size_t)(n * m));
    /* a vector worn down to rounding noise carries no direction: U gets a completed one */
    double tiny = n ? s[0] * DBL_EPSILON * (double)m : 0.0;
    for (int64_t j = 0; j < n; j++) {
        good[j] = s[j] > tiny;
        for (int64_t i = 0; i < m; i++) ut[j * m + i] = good[j] ? ut[j * m + i] / s[j] : 0.0;
    }
    if (c->s) store_vec(c->s, bi, s);
    if (c->u || c->vh) {
        complete_basis(ut, m, rows, good, n, tmp);
        /* tall: A = U S V^T, U = ut^T, Vh = vs; wide: A^T = U' S V'^T, so U = V' = vs^T, Vh = U'^T = ut */
        if (!wide) {
            transpose(ut, rows, m, out);
            store_mat(c->u, bi, out);
            store_mat(c->vh, bi, vs);
        } else {
            transpose(vs, n, n, out);
            store_mat(c->u, bi, out);
            store_mat(c->vh, bi, ut);
        }
    }
done:
    free(a);
    free(good);
    free(order);
    return st;
}

int pf_linalg_svd(const pf_tensor *a, pf_tensor *u, pf_tensor *s, pf_tensor *vh, int full) {
    const char *fn = "linalg.svd";
    int rc = expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1], k = m < n ? m : n;
    if ((u == NULL) != (vh == NULL)) return pf_error(PF_ERR_VALUE, "%s: U and Vh must be given together", fn);
    if ((rc = expect(s, fn, "S", a->dtype, nbd, a->shape, 1, k, -1))) return rc;
    if (u && (rc = expect(u, fn, "U", a->dtype, nbd, a->shape, 2, m, full ? m : k))) return rc;
    if (vh && (rc = expect(vh, fn, "Vh", a->dtype, nbd, a->shape, 2, full ? n : k, n))) return rc;
    svd_ctx c = {a, u, s, vh, full != 0};
    return la_run(svd_one, &c, batch_count(a), 8 * m * n * (m < n ? n : m), nbd > 0);
}

/* ---- matrix exponential: Pade 13 with scaling and squaring (Higham 2005) ------------------- */

typedef struct {
    const pf_tensor *a;
    pf_tensor *out;
} expm_ctx;

static int expm_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    static const double b[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                 1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                 670442572800.0,      33522128640.0,       1323241920.0,
                                 40840800.0,          960960.0,            16380.0,
                                 182.0,               1.0};
    const double theta13 = 5.371920351148152;
    const expm_ctx *c = vctx;
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
    load_mat(c->a, bi, a);
    if (!all_finite(a, nn)) {
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
    if (!all_finite(v, nn)) st = LA_OVERFLOW;
    else store_mat(c->out, bi, v);
done:
    free(w);
    free(piv);
    return st;
}

int pf_linalg_matrix_exp(const pf_tensor *a, pf_tensor *out) {
    const char *fn = "linalg.matrix_exp";
    int rc = expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = expect(out, fn, "out", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    expm_ctx c = {a, out};
    return la_run(expm_one, &c, batch_count(a), 10 * n * n * n, nbd > 0);
}
