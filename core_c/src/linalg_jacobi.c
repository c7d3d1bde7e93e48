/* The Jacobi decompositions of dense linear algebra: symmetric eigendecomposition (cyclic
 * Jacobi, pf_linalg_eigh) and SVD (one-sided Jacobi, pf_linalg_svd), which share the sweep
 * driver and the rotation. linalg.c has the batch machinery they run on. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include "linalg.h"

/* ---- symmetric eigendecomposition --------------------------------------------------------- */

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

/* Cyclic Jacobi, for both eigh and SVD: sweeps over the pairs p < q until a sweep rotates
 * nothing. rot(ctx, p, q, &cs, &sn) applies the pair's rotation to the matrix, or returns 0 when
 * the pair is converged; the same rotation accumulates in rows p and q of vt (n x n, from the
 * identity). */
typedef int (*jacobi_pair)(void *ctx, int64_t p, int64_t q, double *cs, double *sn);
/* what a pair step rotates: rows of n doubles at a */
typedef struct {
    double *a;
    int64_t n;
} jacobi_rows;

/* rows x and y of n elements := (cs x - sn y, sn x + cs y) */
static void rotate(double *x, double *y, int64_t n, double cs, double sn) {
    for (int64_t k = 0; k < n; k++) {
        double a = x[k], b = y[k];
        x[k] = cs * a - sn * b;
        y[k] = sn * a + cs * b;
    }
}

/* The rotation that zeroes the off-diagonal `off` of the symmetric 2 x 2 block [dp off; off dq]
 * (the smaller of the two angles): returns its tangent, sets its cosine and sine. */
static double jacobi_angle(double dp, double dq, double off, double *cs, double *sn) {
    double tau = (dq - dp) / (2.0 * off);
    double t = copysign(1.0, tau) / (fabs(tau) + hypot(1.0, tau));
    *cs = 1.0 / hypot(1.0, t);
    *sn = t * *cs;
    return t;
}

static int jacobi(int64_t n, double *vt, jacobi_pair rot, void *ctx) {
    for (int64_t i = 0; i < n * n; i++) vt[i] = 0.0;
    for (int64_t i = 0; i < n; i++) vt[i * n + i] = 1.0;
    for (int sweep = 0; sweep < LA_MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (int64_t p = 0; p < n - 1; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double cs, sn;
                if (!rot(ctx, p, q, &cs, &sn)) continue;
                rotated = 1;
                rotate(vt + p * n, vt + q * n, n, cs, sn);
            }
        if (!rotated) return LA_OK;
    }
    return LA_NOCONV;
}

/* eigh's pair: the symmetric n x n a, whose diagonal ends as the eigenvalues (row j of vt is
 * eigenvector j). A rotation is skipped when the off-diagonal element is negligible against
 * its diagonal pair (Demmel and Veselic's relative test, so small eigenvalues come out to high
 * relative accuracy). Rows p and q are rotated in place (contiguous) and mirrored into columns
 * p and q, since a stays symmetric; the 2 x 2 block takes its closed form. */
static int eigh_pair(void *ctx, int64_t p, int64_t q, double *cs, double *sn) {
    const jacobi_rows *w = ctx;
    double *a = w->a;
    int64_t n = w->n;
    double apq = a[p * n + q], app = a[p * n + p], aqq = a[q * n + q];
    if (fabs(apq) <= DBL_EPSILON * sqrt(fabs(app) * fabs(aqq)) || fabs(apq) < DBL_MIN) {
        a[p * n + q] = a[q * n + p] = 0.0;
        return 0;
    }
    double t = jacobi_angle(app, aqq, apq, cs, sn);
    double *rp = a + p * n, *rq = a + q * n;
    rotate(rp, rq, n, *cs, *sn);
    rp[p] = app - t * apq;
    rq[q] = aqq + t * apq;
    rp[q] = rq[p] = 0.0;
    for (int64_t k = 0; k < n; k++) {
        a[k * n + p] = rp[k];
        a[k * n + q] = rq[k];
    }
    return 1;
}

static int eigh_one(const void *vctx, int64_t bi, int64_t *detail) {
    (void)detail;
    const eigh_ctx *c = vctx;
    int64_t n = c->a->shape[c->a->ndim - 1];
    double *a = malloc(sizeof(double) * (size_t)(2 * n * n + n + 1));
    if (!a) return LA_NOMEM;
    double *v = a + n * n, *w = v + n * n;
    int st = LA_OK;
    pf_la_load(c->a, bi, a);
    /* symmetric from the referenced triangle only, as LAPACK's syevd */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) {
            if (c->upper) a[i * n + j] = a[j * n + i];
            else a[j * n + i] = a[i * n + j];
        }
    if (!pf_la_finite(a, n * n)) st = LA_NONFINITE;
    jacobi_rows work = {a, n};
    if (st == LA_OK) st = jacobi(n, v, eigh_pair, &work);
    if (st == LA_OK) {
        for (int64_t i = 0; i < n; i++) w[i] = a[i * n + i];
        pf_la_transpose(v, n, n, a); /* eigenvectors as columns; a is free now */
        memcpy(v, a, sizeof(double) * (size_t)(n * n));
        sort_pairs(w, n, c->v ? v : NULL, n);
        pf_la_store_vec(c->w, bi, w);
        if (c->v) pf_la_store(c->v, bi, v);
    }
    free(a);
    return st;
}

int pf_linalg_eigh(const pf_tensor *a, pf_tensor *w, pf_tensor *v, int upper) {
    const char *fn = "linalg.eigh";
    int rc = pf_la_expect_input(a, fn, 1);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t n = a->shape[nbd];
    if ((rc = pf_la_expect(w, fn, "eigenvalues", a->dtype, nbd, a->shape, 1, n, -1))) return rc;
    if (v && (rc = pf_la_expect(v, fn, "eigenvectors", a->dtype, nbd, a->shape, 2, n, n))) return rc;
    eigh_ctx c = {a, w, v, upper != 0};
    return pf_la_run(eigh_one, &c, pf_la_batch_count(a), 8 * n * n * n, nbd > 0);
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

/* SVD's pair: Hestenes' one-sided Jacobi on the n vectors of length m (m >= n) in the rows of ut
 * rotates pairs until all are orthogonal to working precision (V's columns accumulate in the rows
 * of vt). Afterwards the rows of ut are the columns of U S. */
static int svd_pair(void *ctx, int64_t p, int64_t q, double *cs, double *sn) {
    const jacobi_rows *w = ctx;
    int64_t m = w->n;
    double *up = w->a + p * m, *uq = w->a + q * m;
    double alpha = 0.0, beta = 0.0, gamma = 0.0;
    for (int64_t i = 0; i < m; i++) {
        alpha += up[i] * up[i];
        beta += uq[i] * uq[i];
        gamma += up[i] * uq[i];
    }
    if (fabs(gamma) <= DBL_EPSILON * sqrt(alpha) * sqrt(beta) || fabs(gamma) < DBL_MIN) return 0;
    jacobi_angle(alpha, beta, gamma, cs, sn);
    rotate(up, uq, m, *cs, *sn);
    return 1;
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
    pf_la_load(c->a, bi, a);
    if (!pf_la_finite(a, m0 * n0)) {
        st = LA_NONFINITE;
        goto done;
    }
    /* the rows of ut are the columns of the tall matrix: A's columns, or A's rows when wide */
    if (wide) memcpy(ut, a, sizeof(double) * (size_t)(m0 * n0));
    else pf_la_transpose(a, m0, n0, ut);
    jacobi_rows work = {ut, m};
    if ((st = jacobi(n, vt, svd_pair, &work)) != LA_OK) goto done;
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
    if (c->s) pf_la_store_vec(c->s, bi, s);
    if (c->u || c->vh) {
        complete_basis(ut, m, rows, good, n, tmp);
        /* tall: A = U S V^T, U = ut^T, Vh = vs; wide: A^T = U' S V'^T, so U = V' = vs^T, Vh = U'^T = ut */
        if (!wide) {
            pf_la_transpose(ut, rows, m, out);
            pf_la_store(c->u, bi, out);
            pf_la_store(c->vh, bi, vs);
        } else {
            pf_la_transpose(vs, n, n, out);
            pf_la_store(c->u, bi, out);
            pf_la_store(c->vh, bi, ut);
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
    int rc = pf_la_expect_input(a, fn, 0);
    if (rc) return rc;
    int nbd = a->ndim - 2;
    int64_t m = a->shape[nbd], n = a->shape[nbd + 1], k = m < n ? m : n;
    if ((u == NULL) != (vh == NULL)) return pf_error(PF_ERR_VALUE, "%s: U and Vh must be given together", fn);
    if ((rc = pf_la_expect(s, fn, "S", a->dtype, nbd, a->shape, 1, k, -1))) return rc;
    if (u && (rc = pf_la_expect(u, fn, "U", a->dtype, nbd, a->shape, 2, m, full ? m : k))) return rc;
    if (vh && (rc = pf_la_expect(vh, fn, "Vh", a->dtype, nbd, a->shape, 2, full ? n : k, n))) return rc;
    svd_ctx c = {a, u, s, vh, full != 0};
    return pf_la_run(svd_one, &c, pf_la_batch_count(a), 8 * m * n * (m < n ? n : m), nbd > 0);
}
