/* Tests for the dense linear algebra kernels: each factorization is checked by what defines
 * it (residuals, orthogonality, triangularity, ordering) on random, batched, transposed and
 * float32 inputs, plus known closed forms and every error path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static void randfill(double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++) a[i] = urand();
}

/* max |a b - c| over an (m x k)(k x n) product */
static double product_err(const double *a, const double *b, const double *c, int64_t m, int64_t k, int64_t n) {
    double worst = 0.0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
            worst = fmax(worst, fabs(s - c[i * n + j]));
        }
    return worst;
}

/* max |Q^T Q - I| for the columns of the m x k q */
static double orth_err(const double *q, int64_t m, int64_t k) {
    double worst = 0.0;
    for (int64_t a = 0; a < k; a++)
        for (int64_t b = 0; b < k; b++) {
            double s = 0.0;
            for (int64_t i = 0; i < m; i++) s += q[i * k + a] * q[i * k + b];
            worst = fmax(worst, fabs(s - (a == b)));
        }
    return worst;
}

static void test_solve(void) {
    enum { B = 3, N = 6, K = 2 };
    double a[B * N * N], b[B * N * K], x[B * N * K];
    randfill(a, B * N * N);
    randfill(b, B * N * K);
    int64_t sa[3] = {B, N, N}, sb[3] = {B, N, K};
    pf_tensor ta = pf_make(a, PF_FLOAT64, 3, sa), tb = pf_make(b, PF_FLOAT64, 3, sb), tx = pf_make(x, PF_FLOAT64, 3, sb);
    CHECK_OK(pf_linalg_solve(&ta, &tb, &tx));
    for (int i = 0; i < B; i++)
        CHECK(product_err(a + i * N * N, x + i * N * K, b + i * N * K, N, N, K) < 1e-12, "batch %d", i);

    /* A^T through strides: solve A^T x = b and check against the explicit transpose */
    pf_tensor tt = ta;
    tt.strides[1] = 1, tt.strides[2] = N;
    CHECK_OK(pf_linalg_solve(&tt, &tb, &tx));
    double at[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) at[i * N + j] = a[j * N + i];
    CHECK(product_err(at, x, b, N, N, K) < 1e-12, "transposed");

    /* float32 in and out, computed in double */
    float af[N * N], bf[N * K], xf[N * K];
    for (int i = 0; i < N * N; i++) af[i] = (float)a[i];
    for (int i = 0; i < N * K; i++) bf[i] = (float)b[i];
    pf_tensor fa = pf_make(af, PF_FLOAT32, 2, sa + 1), fb = pf_make(bf, PF_FLOAT32, 2, sb + 1),
              fx = pf_make(xf, PF_FLOAT32, 2, sb + 1);
    CHECK_OK(pf_linalg_solve(&fa, &fb, &fx));
    double ad[N * N], xd[N * K], bd[N * K];
    for (int i = 0; i < N * N; i++) ad[i] = af[i];
    for (int i = 0; i < N * K; i++) xd[i] = xf[i], bd[i] = bf[i];
    CHECK(product_err(ad, xd, bd, N, N, K) < 1e-4, "float32");

    /* a singular second batch element is named */
    for (int j = 0; j < N; j++) a[N * N + 2 * N + j] = a[N * N + 1 * N + j]; /* two equal rows */
    CHECK(pf_linalg_solve(&ta, &tb, &tx) == PF_ERR_LINALG, "singular");
    CHECK(strstr(pf_last_error(), "Batch element 1") && strstr(pf_last_error(), "singular"), "%s", pf_last_error());
    a[5] = NAN;
    CHECK(pf_linalg_solve(&ta, &tb, &tx) == PF_ERR_LINALG && strstr(pf_last_error(), "NaN"), "%s", pf_last_error());
    /* shape and dtype errors */
    int64_t wide[3] = {B, N, N + 1};
    pf_tensor tw = pf_make(a, PF_FLOAT64, 3, wide);
    CHECK(pf_linalg_solve(&tw, &tb, &tx) == PF_ERR_VALUE, "non-square");
    int64_t ia[2] = {2, 2}, ib[2] = {2, 1};
    int64_t ints[4] = {1, 0, 0, 1}, intb[2] = {1, 1}, intx[2];
    pf_tensor ti = pf_make(ints, PF_INT64, 2, ia), tib = pf_make(intb, PF_INT64, 2, ib), tix = pf_make(intx, PF_INT64, 2, ib);
    CHECK(pf_linalg_solve(&ti, &tib, &tix) == PF_ERR_TYPE, "int64");
    CHECK(pf_linalg_solve(&fa, &tb, &tx) == PF_ERR_TYPE, "mixed dtypes");
}

static void test_triangular_det_cholesky(void) {
    enum { N = 5 };
    double a[N * N], l[N * N], b[N * 2], x[N * 2], spd[N * N];
    randfill(a, N * N);
    randfill(b, N * 2);
    for (int i = 0; i < N; i++) a[i * N + i] += 3.0;
    int64_t sa[2] = {N, N}, sb[2] = {N, 2}, s0[1] = {0};
    pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), tb = pf_make(b, PF_FLOAT64, 2, sb), tx = pf_make(x, PF_FLOAT64, 2, sb);
    for (int upper = 0; upper < 2; upper++) {
        CHECK_OK(pf_linalg_solve_triangular(&ta, &tb, &tx, upper, 0));
        double t[N * N];
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) t[i * N + j] = (upper ? j >= i : j <= i) ? a[i * N + j] : 0.0;
        CHECK(product_err(t, x, b, N, N, 2) < 1e-12, "upper=%d", upper);
    }
    /* det of a triangular matrix is its diagonal's product; with a row swap the sign flips */
    double tri[9] = {2, 1, 5, 0, -3, 4, 0, 0, 0.5}, d, sg, la;
    int64_t s3[2] = {3, 3};
    pf_tensor tt = pf_make(tri, PF_FLOAT64, 2, s3), td = pf_make(&d, PF_FLOAT64, 0, s0),
              ts = pf_make(&sg, PF_FLOAT64, 0, s0), tl = pf_make(&la, PF_FLOAT64, 0, s0);
    CHECK_OK(pf_linalg_det(&tt, &td, &ts, &tl));
    CHECK(fabs(d + 3.0) < 1e-14 && sg == -1.0 && fabs(la - log(3.0)) < 1e-14, "det %g sign %g log %g", d, sg, la);
    tt.strides[0] = 1, tt.strides[1] = 3; /* the transpose has the same det */
    CHECK_OK(pf_linalg_det(&tt, &td, NULL, NULL));
    CHECK(fabs(d + 3.0) < 1e-14, "det of transpose %g", d);
    double sing[4] = {1, 2, 2, 4};
    int64_t s2[2] = {2, 2};
    pf_tensor tsg = pf_make(sing, PF_FLOAT64, 2, s2);
    CHECK_OK(pf_linalg_det(&tsg, &td, &ts, &tl));
    CHECK(d == 0.0 && sg == 0.0 && isinf(la) && la < 0, "singular det %g %g %g", d, sg, la);

    /* Cholesky of A A^T + I, reading only the lower triangle */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = i == j;
            for (int k = 0; k < N; k++) s += a[i * N + k] * a[j * N + k];
            spd[i * N + j] = j <= i ? s : 1e300; /* junk above: never read */
        }
    pf_tensor tspd = pf_make(spd, PF_FLOAT64, 2, sa), tL = pf_make(l, PF_FLOAT64, 2, sa);
    CHECK_OK(pf_linalg_cholesky(&tspd, &tL));
    double lt[N * N], full[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            lt[i * N + j] = l[j * N + i];
            full[i * N + j] = j <= i ? spd[i * N + j] : spd[j * N + i];
            if (j > i) CHECK(l[i * N + j] == 0.0, "upper part of L");
        }
    CHECK(product_err(l, lt, full, N, N, N) < 1e-11, "L L^T");
    spd[2 * N + 2] = -50.0;
    CHECK(pf_linalg_cholesky(&tspd, &tL) == PF_ERR_LINALG && strstr(pf_last_error(), "order 3"), "%s",
          pf_last_error());
}

static void test_qr(void) {
    int64_t shapes[4][2] = {{6, 4}, {4, 6}, {5, 5}, {1, 3}};
    for (int s = 0; s < 4; s++)
        for (int complete = 0; complete < 2; complete++) {
            int64_t m = shapes[s][0], n = shapes[s][1], k = complete ? m : (m < n ? m : n);
            double a[36], q[36], r[36];
            randfill(a, m * n);
            int64_t sa[2] = {m, n}, sq[2] = {m, k}, sr[2] = {k, n};
            pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), tq = pf_make(q, PF_FLOAT64, 2, sq),
                      tr = pf_make(r, PF_FLOAT64, 2, sr);
            CHECK_OK(pf_linalg_qr(&ta, &tq, &tr, complete));
            CHECK(product_err(q, r, a, m, k, n) < 1e-13, "QR = A (%lld x %lld)", (long long)m, (long long)n);
            CHECK(orth_err(q, m, k) < 1e-13, "Q orthonormal");
            for (int64_t i = 0; i < k; i++)
                for (int64_t j = 0; j < i && j < n; j++) CHECK(r[i * n + j] == 0.0, "R upper");
            CHECK_OK(pf_linalg_qr(&ta, NULL, &tr, complete));
        }
    /* geqrf: R as qr's, and the reflectors rebuild Q */
    {
        double a[12], h[12], tau[3], q[12], r[9], qq[12];
        randfill(a, 12);
        int64_t sa[2] = {4, 3}, st[1] = {3}, sr[2] = {3, 3};
        pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), th = pf_make(h, PF_FLOAT64, 2, sa), tt = pf_make(tau, PF_FLOAT64, 1, st),
                  tq = pf_make(q, PF_FLOAT64, 2, sa), tr = pf_make(r, PF_FLOAT64, 2, sr);
        CHECK_OK(pf_linalg_geqrf(&ta, &th, &tt));
        CHECK_OK(pf_linalg_qr(&ta, &tq, &tr, 0));
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++) CHECK(h[i * 3 + j] == r[i * 3 + j], "geqrf R[%d, %d]", i, j);
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 3; c++) qq[i * 3 + c] = i == c;
        for (int j = 2; j >= 0; j--) { /* qq = H_j qq, v = e_j + the reflector below the diagonal */
            double v[4];
            for (int i = 0; i < 4; i++) v[i] = i < j ? 0.0 : (i == j ? 1.0 : h[i * 3 + j]);
            for (int c = 0; c < 3; c++) {
                double w = 0.0;
                for (int i = 0; i < 4; i++) w += v[i] * qq[i * 3 + c];
                for (int i = 0; i < 4; i++) qq[i * 3 + c] -= tau[j] * w * v[i];
            }
        }
        for (int i = 0; i < 12; i++) CHECK(fabs(qq[i] - q[i]) < 1e-15, "geqrf Q[%d]", i);
    }
    /* LAPACK's signs: a column already zero below the diagonal is left alone */
    double d[4] = {-2, 1, 0, 3}, q[4], r[4];
    int64_t s2[2] = {2, 2};
    pf_tensor ta = pf_make(d, PF_FLOAT64, 2, s2), tq = pf_make(q, PF_FLOAT64, 2, s2), tr = pf_make(r, PF_FLOAT64, 2, s2);
    CHECK_OK(pf_linalg_qr(&ta, &tq, &tr, 0));
    CHECK(r[0] == -2.0 && r[3] == 3.0 && q[0] == 1.0, "R diag %g %g", r[0], r[3]);
}

static void test_eigh(void) {
    enum { N = 7 };
    double a[N * N], w[N], v[N * N];
    randfill(a, N * N);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++) a[j * N + i] = 1e300; /* upper triangle unused */
    int64_t sa[2] = {N, N}, sw[1] = {N};
    pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), tw = pf_make(w, PF_FLOAT64, 1, sw), tv = pf_make(v, PF_FLOAT64, 2, sa);
    CHECK_OK(pf_linalg_eigh(&ta, &tw, &tv, 0));
    double sym[N * N], vw[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            sym[i * N + j] = j <= i ? a[i * N + j] : a[j * N + i];
            vw[i * N + j] = v[i * N + j] * w[j];
        }
    CHECK(product_err(sym, v, vw, N, N, N) < 1e-12, "A V = V diag(w)");
    CHECK(orth_err(v, N, N) < 1e-13, "V orthogonal");
    for (int i = 1; i < N; i++) CHECK(w[i - 1] <= w[i], "ascending");
    /* repeated eigenvalues: the identity times 2 */
    double id[9] = {2, 0, 0, 0, 2, 0, 0, 0, 2}, w3[3], v3[9];
    int64_t s3[2] = {3, 3}, s3w[1] = {3};
    pf_tensor ti = pf_make(id, PF_FLOAT64, 2, s3), tw3 = pf_make(w3, PF_FLOAT64, 1, s3w), tv3 = pf_make(v3, PF_FLOAT64, 2, s3);
    CHECK_OK(pf_linalg_eigh(&ti, &tw3, &tv3, 1));
    CHECK(w3[0] == 2.0 && w3[2] == 2.0, "identity eigenvalues");
    id[4] = INFINITY;
    CHECK(pf_linalg_eigh(&ti, &tw3, NULL, 0) == PF_ERR_LINALG, "inf input");
}

static void test_svd(void) {
    int64_t shapes[5][2] = {{6, 4}, {4, 6}, {5, 5}, {1, 4}, {4, 1}};
    for (int s = 0; s < 5; s++)
        for (int full = 0; full < 2; full++)
            for (int rankdef = 0; rankdef < 2; rankdef++) {
                int64_t m = shapes[s][0], n = shapes[s][1], k = m < n ? m : n;
                int64_t ku = full ? m : k, kv = full ? n : k;
                double a[36], u[36], sv[6], vh[36];
                randfill(a, m * n);
                if (rankdef && m > 1)
                    for (int64_t j = 0; j < n; j++) a[1 * n + j] = 2 * a[j], a[j] = 0.0; /* rank drops */
                int64_t sa[2] = {m, n}, su[2] = {m, ku}, ss[1] = {k}, svh[2] = {kv, n};
                pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), tu = pf_make(u, PF_FLOAT64, 2, su),
                          ts = pf_make(sv, PF_FLOAT64, 1, ss), tvh = pf_make(vh, PF_FLOAT64, 2, svh);
                CHECK_OK(pf_linalg_svd(&ta, &tu, &ts, &tvh, full));
                double us[36];
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < kv; j++) us[i * kv + j] = j < k && j < ku ? u[i * ku + j] * sv[j] : 0.0;
                CHECK(product_err(us, vh, a, m, kv, n) < 1e-13, "U S Vh = A (%lldx%lld full %d rankdef %d)",
                      (long long)m, (long long)n, full, rankdef);
                CHECK(orth_err(u, m, ku) < 1e-13, "U orthonormal (%lldx%lld full %d rankdef %d)", (long long)m,
                      (long long)n, full, rankdef);
                double v[36];
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < kv; j++) v[i * kv + j] = vh[j * n + i];
                CHECK(orth_err(v, n, kv) < 1e-13, "V orthonormal");
                for (int64_t i = 1; i < k; i++) CHECK(sv[i - 1] >= sv[i] && sv[i] >= 0, "descending");
                CHECK_OK(pf_linalg_svd(&ta, NULL, &ts, NULL, 0));
            }
    double z[6] = {0}, u[4], sv[2], vh[6];
    int64_t sa[2] = {2, 3}, su[2] = {2, 2}, ss[1] = {2}, svh[2] = {2, 3};
    pf_tensor ta = pf_make(z, PF_FLOAT64, 2, sa), tu = pf_make(u, PF_FLOAT64, 2, su), ts = pf_make(sv, PF_FLOAT64, 1, ss),
              tvh = pf_make(vh, PF_FLOAT64, 2, svh);
    CHECK_OK(pf_linalg_svd(&ta, &tu, &ts, &tvh, 0));
    CHECK(sv[0] == 0.0 && orth_err(u, 2, 2) < 1e-15, "zero matrix");
    CHECK(pf_linalg_svd(&ta, &tu, &ts, NULL, 0) == PF_ERR_VALUE, "U without Vh");
}

static void test_matrix_exp(void) {
    /* exp of a rotation generator is a rotation; of a nilpotent matrix, a finite series */
    double t = 7.5, g[4] = {0, -t, t, 0}, e[4];
    int64_t s2[2] = {2, 2};
    pf_tensor tg = pf_make(g, PF_FLOAT64, 2, s2), te = pf_make(e, PF_FLOAT64, 2, s2);
    CHECK_OK(pf_linalg_matrix_exp(&tg, &te));
    CHECK(fabs(e[0] - cos(t)) < 1e-13 && fabs(e[2] - sin(t)) < 1e-13 && fabs(e[1] + sin(t)) < 1e-13, "rotation %g %g",
          e[0], e[2]);
    double nil[9] = {0, 1, 2, 0, 0, 3, 0, 0, 0}, en[9];
    int64_t s3[2] = {3, 3};
    pf_tensor tn = pf_make(nil, PF_FLOAT64, 2, s3), ten = pf_make(en, PF_FLOAT64, 2, s3);
    CHECK_OK(pf_linalg_matrix_exp(&tn, &ten));
    double want[9] = {1, 1, 3.5, 0, 1, 3, 0, 0, 1}; /* I + N + N^2/2 */
    for (int i = 0; i < 9; i++) CHECK(fabs(en[i] - want[i]) < 1e-14, "nilpotent [%d] %g", i, en[i]);
    double big[4] = {800, 0, 0, 800};
    pf_tensor tb = pf_make(big, PF_FLOAT64, 2, s2);
    CHECK(pf_linalg_matrix_exp(&tb, &te) == PF_ERR_LINALG && strstr(pf_last_error(), "overflow"), "%s",
          pf_last_error());
}

static void test_ldl(void) {
    /* [[0 1] [1 0]] needs LAPACK's 2 x 2 block: pivots (-2, -2), D in place, L empty */
    double a[4] = {0, 1, 1, 0}, ld[4], piv[2], info;
    int64_t s2[2] = {2, 2}, s1[1] = {2};
    pf_tensor ta = pf_make(a, PF_FLOAT64, 2, s2), tld = pf_make(ld, PF_FLOAT64, 2, s2),
              tp = pf_make(piv, PF_FLOAT64, 1, s1), ti = pf_make(&info, PF_FLOAT64, 0, s1);
    CHECK_OK(pf_linalg_ldl_factor(&ta, &tld, &tp, &ti));
    CHECK(piv[0] == -2 && piv[1] == -2 && info == 0, "pivots %g %g info %g", piv[0], piv[1], info);
    CHECK(ld[0] == 0 && ld[1] == 0 && ld[2] == 1 && ld[3] == 0, "LD %g %g %g %g", ld[0], ld[1], ld[2], ld[3]);
    /* a random symmetric matrix: the solve's residual */
    enum { N = 7, K = 3 };
    double s[N * N], f[N * N], p[N], b[N * K], x[N * K];
    randfill(s, N * N);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++) s[j * N + i] = s[i * N + j];
    randfill(b, N * K);
    int64_t sn[2] = {N, N}, sv[1] = {N}, sb[2] = {N, K};
    pf_tensor ts = pf_make(s, PF_FLOAT64, 2, sn), tf = pf_make(f, PF_FLOAT64, 2, sn), tpv = pf_make(p, PF_FLOAT64, 1, sv),
              tb = pf_make(b, PF_FLOAT64, 2, sb), tx = pf_make(x, PF_FLOAT64, 2, sb);
    CHECK_OK(pf_linalg_ldl_factor(&ts, &tf, &tpv, &ti));
    CHECK_OK(pf_linalg_ldl_solve(&tf, &tpv, &tb, &tx));
    CHECK(product_err(s, x, b, N, N, K) < 1e-12, "residual %g", product_err(s, x, b, N, N, K));
    /* pivots no factorization makes are refused, never followed out of bounds */
    p[0] = N + 1;
    CHECK(pf_linalg_ldl_solve(&tf, &tpv, &tb, &tx) == PF_ERR_VALUE && strstr(pf_last_error(), "pivots"), "%s",
          pf_last_error());
    double z[4] = {0};
    pf_tensor tz = pf_make(z, PF_FLOAT64, 2, s2);
    CHECK_OK(pf_linalg_ldl_factor(&tz, &tld, &tp, &ti));
    CHECK(info == 1, "a zero matrix: info %g", info);
}

int main(void) {
    test_solve();
    test_triangular_det_cholesky();
    test_qr();
    test_eigh();
    test_svd();
    test_matrix_exp();
    test_ldl();
    return pf_test_summary("test_linalg");
}
