/* LDL^T of real symmetric matrices with Bunch-Kaufman pivoting (torch.linalg.ldl_factor, ldl_solve), in
 * LAPACK's output format so that results, pivots included, are torch's: sytrf's lower-triangle factorization
 * (its unblocked form, sytf2, which sytrf runs for the n <= 64 of the matrices here and which the blocked form
 * reproduces up to rounding) and sytrs's solve. Our own code from LAPACK's documented algorithm (Bunch and
 * Kaufman, Math. Comp. 31 (1977); alpha = (1 + sqrt(17)) / 8 bounds element growth). Indices below are 0-based;
 * the pivots stored are LAPACK's 1-based ipiv. */
#include <math.h>
#include <stdlib.h>
#include "linalg.h"

#define A_(i, j) a[(i) * n + (j)]

static void swap(double *x, double *y) {
    double t = *x;
    *x = *y;
    *y = t;
}

/* sytf2, lower: a (n x n, row-major; the lower triangle read and written) becomes L and D; ipiv as LAPACK's
 * (1-based, negative for 2 x 2 blocks); returns info (1-based first zero block, 0: none) */
static int64_t ldl_lower(double *a, int64_t n, double *ipiv) {
    const double alpha = (1 + sqrt(17.0)) / 8;
    int64_t info = 0;
    for (int64_t k = 0; k < n;) {
        int64_t kstep = 1, kp, imax = k;
        double absakk = fabs(A_(k, k)), colmax = 0;
        for (int64_t i = k + 1; i < n; i++) /* the first largest below the diagonal */
            if (fabs(A_(i, k)) > colmax) colmax = fabs(A_(i, k)), imax = i;
        if ((absakk > colmax ? absakk : colmax) == 0 || isnan(absakk)) {
            if (info == 0) info = k + 1; /* a zero column: D(k, k) = 0, nothing to eliminate */
            kp = k;
        } else {
            if (absakk >= alpha * colmax) {
                kp = k;
            } else {
                /* the largest off-diagonal element in row (and column) imax of the trailing matrix */
                double rowmax = 0;
                for (int64_t j = k; j < imax; j++) rowmax = fabs(A_(imax, j)) > rowmax ? fabs(A_(imax, j)) : rowmax;
                for (int64_t j = imax + 1; j < n; j++)
                    rowmax = fabs(A_(j, imax)) > rowmax ? fabs(A_(j, imax)) : rowmax;
                if (absakk >= alpha * colmax * (colmax / rowmax)) kp = k;
                else if (fabs(A_(imax, imax)) >= alpha * rowmax) kp = imax;
                else kp = imax, kstep = 2;
            }
            int64_t kk = k + kstep - 1;
            if (kp != kk) { /* swap rows and columns kk and kp of the trailing matrix's lower triangle */
                for (int64_t i = kp + 1; i < n; i++) swap(&A_(i, kk), &A_(i, kp));
                for (int64_t j = kk + 1; j < kp; j++) swap(&A_(j, kk), &A_(kp, j));
                swap(&A_(kk, kk), &A_(kp, kp));
                if (kstep == 2) swap(&A_(k + 1, k), &A_(kp, k));
            }
            if (kstep == 1) { /* A22 -= l d l^T with l = a21 / d */
                double r = 1 / A_(k, k);
                for (int64_t j = k + 1; j < n; j++) {
                    double w = r * A_(j, k);
                    for (int64_t i = j; i < n; i++) A_(i, j) -= A_(i, k) * w;
                }
                for (int64_t i = k + 1; i < n; i++) A_(i, k) *= r;
            } else if (k < n - 2) { /* A22 -= [l1 l2] D [l1 l2]^T, D the 2 x 2 block */
                double d21 = A_(k + 1, k), d11 = A_(k + 1, k + 1) / d21, d22 = A_(k, k) / d21;
                double t = 1 / (d11 * d22 - 1);
                d21 = t / d21;
                for (int64_t j = k + 2; j < n; j++) {
                    double wk = d21 * (d11 * A_(j, k) - A_(j, k + 1));
                    double wkp1 = d21 * (d22 * A_(j, k + 1) - A_(j, k));
                    for (int64_t i = j; i < n; i++) A_(i, j) -= A_(i, k) * wk + A_(i, k + 1) * wkp1;
                    A_(j, k) = wk;
                    A_(j, k + 1) = wkp1;
                }
            }
        }
        if (kstep == 1) {
            ipiv[k] = (double)(kp + 1);
        } else {
            ipiv[k] = ipiv[k + 1] = -(double)(kp + 1);
        }
        k += kstep;
    }
    return info;
}

typedef struct {
    const pf_tensor *a;
    pf_tensor *ld, *piv, *info;
} factor_ctx;

static int factor_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const factor_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + n + 1)), *ipiv = a ? a + n * n : NULL;
    if (!a) return LA_NOMEM;
    pf_la_load(c->a, bi, a);
    int64_t info = ldl_lower(a, n, ipiv);
    for (int64_t i = 0; i < n; i++) /* only the lower triangle is the result; torch's is zero above */
        for (int64_t j = i + 1; j < n; j++) A_(i, j) = 0;
    pf_la_store(c->ld, bi, a);
    pf_la_store_vec(c->piv, bi, ipiv);
    pf_la_store_scalar(c->info, bi, (double)info);
    free(a);
    return LA_OK;
}

int pf_linalg_ldl_factor(const pf_tensor *a, pf_tensor *ld, pf_tensor *piv, pf_tensor *info) {
    const char *fn = "linalg.ldl_factor";
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd + 1];
    if ((rc = pf_la_expect(ld, fn, "LD", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    if ((rc = pf_la_expect(piv, fn, "pivots", a->dtype, nbd, a->shape, 1, n, -1))) return rc;
    if ((rc = pf_la_expect(info, fn, "info", a->dtype, nbd, a->shape, 0, -1, -1))) return rc;
    factor_ctx c = {a, ld, piv, info};
    return pf_la_run(factor_one, &c, pf_la_batch_count(a), n * n * n / 3 + 1, nbd > 0);
}

/* ---- sytrs, lower: A x = b with A = P L D L^T P^T ------------------------------------------------------------ */

typedef struct {
    const pf_tensor *ld, *piv, *b;
    pf_tensor *x;
} solve_ctx;

static void swap_rows(double *b, int64_t m, int64_t i, int64_t j) {
    if (i != j)
        for (int64_t c = 0; c < m; c++) swap(&b[i * m + c], &b[j * m + c]);
}

static int solve_one(const void *vctx, int64_t bi, int64_t *detail) {
    const solve_ctx *c = vctx;
    int nd = c->b->ndim;
    int64_t n = c->b->shape[nd - 2], m = c->b->shape[nd - 1];
    double *a = malloc(sizeof(double) * (size_t)(n * n + n + n * m + 1)), *ipiv = a ? a + n * n : NULL;
    if (!a) return LA_NOMEM;
    double *b = ipiv + n;
    pf_la_load(c->ld, bi, a);
    pf_la_load_vec(c->piv, bi, ipiv);
    pf_la_load(c->b, bi, b);
    /* the pivots must be an ipiv sytrf can make: 1 <= |p| <= n, a negative one twice in a row and never
     * pointing before its block */
    for (int64_t k = 0; k < n; k++) {
        double p = ipiv[k];
        int bad = !(fabs(p) >= 1 && fabs(p) <= (double)n) || p != floor(p);
        if (!bad && p < 0) bad = k + 1 >= n || ipiv[k + 1] != p || -p < (double)(k + 2);
        if (!bad && p > 0) bad = p < (double)(k + 1);
        if (bad) {
            *detail = k;
            free(a);
            return LA_BADPIVOT;
        }
        if (p < 0) k++;
    }
    /* L D y = P^T b, forward */
    for (int64_t k = 0; k < n;) {
        if (ipiv[k] > 0) {
            swap_rows(b, m, k, (int64_t)ipiv[k] - 1);
            for (int64_t i = k + 1; i < n; i++)
                for (int64_t j = 0; j < m; j++) b[i * m + j] -= A_(i, k) * b[k * m + j];
            for (int64_t j = 0; j < m; j++) b[k * m + j] /= A_(k, k);
            k += 1;
        } else {
            swap_rows(b, m, k + 1, (int64_t)-ipiv[k] - 1);
            for (int64_t i = k + 2; i < n; i++)
                for (int64_t j = 0; j < m; j++)
                    b[i * m + j] -= A_(i, k) * b[k * m + j] + A_(i, k + 1) * b[(k + 1) * m + j];
            double akm1k = A_(k + 1, k), akm1 = A_(k, k) / akm1k, ak = A_(k + 1, k + 1) / akm1k;
            double denom = akm1 * ak - 1;
            for (int64_t j = 0; j < m; j++) {
                double bkm1 = b[k * m + j] / akm1k, bk = b[(k + 1) * m + j] / akm1k;
                b[k * m + j] = (ak * bkm1 - bk) / denom;
                b[(k + 1) * m + j] = (akm1 * bk - bkm1) / denom;
            }
            k += 2;
        }
    }
    /* L^T P^T x = y, backward */
    for (int64_t k = n - 1; k >= 0;) {
        int two = ipiv[k] < 0;
        for (int64_t r = k - two; r <= k; r++)
            for (int64_t i = k + 1; i < n; i++)
                for (int64_t j = 0; j < m; j++) b[r * m + j] -= A_(i, r) * b[i * m + j];
        swap_rows(b, m, k, (int64_t)fabs(ipiv[k]) - 1);
        k -= 1 + two;
    }
    pf_la_store(c->x, bi, b);
    free(a);
    return LA_OK;
}

int pf_linalg_ldl_solve(const pf_tensor *ld, const pf_tensor *piv, const pf_tensor *b, pf_tensor *x) {
    const char *fn = "linalg.ldl_solve";
    int rc = pf_la_expect_input(ld, fn, 1);
    if (rc) return rc;
    int nbd = ld->ndim - 2;
    int64_t n = ld->shape[nbd + 1];
    if ((rc = pf_la_expect(piv, fn, "pivots", ld->dtype, nbd, ld->shape, 1, n, -1))) return rc;
    if ((rc = pf_la_expect(b, fn, "B", ld->dtype, nbd, ld->shape, 2, n, -1))) return rc;
    if ((rc = pf_la_expect(x, fn, "out", ld->dtype, nbd, ld->shape, 2, n, b->shape[nbd + 1]))) return rc;
    solve_ctx c = {ld, piv, b, x};
    return pf_la_run(solve_one, &c, pf_la_batch_count(ld), n * n * (b->shape[nbd + 1] + 1), nbd > 0);
}
