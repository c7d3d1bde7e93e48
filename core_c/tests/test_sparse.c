/* sparse.c: coalescing and the COO sparse-dense product against a dense reference, with bad input refused. */
#include <stdint.h>
#include <stdlib.h>
#include "core.h"
#include "check.h"

static void test_coalesce(void) {
    int64_t keys[] = {7, 2, 7, 0, 2, 9}, slot[6], unique[6], n = -1;
    CHECK_OK(pf_coo_coalesce(6, keys, 10, slot, unique, &n));
    CHECK(n == 4, "4 distinct keys, got %lld", (long long)n);
    int64_t want_u[] = {0, 2, 7, 9}, want_s[] = {2, 1, 2, 0, 1, 3};
    for (int i = 0; i < 4; i++) CHECK(unique[i] == want_u[i], "unique[%d] = %lld", i, (long long)unique[i]);
    for (int i = 0; i < 6; i++) CHECK(slot[i] == want_s[i], "slot[%d] = %lld", i, (long long)slot[i]);
    CHECK_OK(pf_coo_coalesce(0, NULL, 10, NULL, NULL, &n));
    CHECK(n == 0, "no entries");
    CHECK(pf_coo_coalesce(6, keys, 8, slot, unique, &n) == PF_ERR_INDEX, "a key past the limit is refused");
}

/* out = S @ D by a dense reference, for both dtypes, and the values' gradient */
static void test_spmm(void) {
    enum { M = 5, K = 7, N = 40, NNZ = 23 };
    int64_t rows[NNZ], cols[NNZ];
    double vals[NNZ], d[K * N], g[M * N], out[M * N], ref[M * N], gv[NNZ];
    unsigned s = 3;
    for (int k = 0; k < NNZ; k++) {
        rows[k] = (int64_t)((frand(&s) + 1) * 0.5 * M) % M;
        cols[k] = (int64_t)((frand(&s) + 1) * 0.5 * K) % K;
        vals[k] = frand(&s);
    }
    rows[1] = rows[0], cols[1] = cols[0]; /* a duplicate entry adds up */
    for (int i = 0; i < K * N; i++) d[i] = frand(&s);
    for (int i = 0; i < M * N; i++) g[i] = frand(&s), ref[i] = 0;
    for (int k = 0; k < NNZ; k++)
        for (int n = 0; n < N; n++) ref[rows[k] * N + n] += vals[k] * d[cols[k] * N + n];
    CHECK_OK(pf_spmm_coo(PF_FLOAT64, NNZ, rows, cols, vals, M, K, N, d, out));
    for (int i = 0; i < M * N; i++) CHECK(fabs(out[i] - ref[i]) < 1e-12, "out[%d] = %g, want %g", i, out[i], ref[i]);
    CHECK_OK(pf_spmm_coo_values_grad(PF_FLOAT64, NNZ, rows, cols, M, K, N, g, d, gv));
    for (int k = 0; k < NNZ; k++) {
        double want = 0;
        for (int n = 0; n < N; n++) want += g[rows[k] * N + n] * d[cols[k] * N + n];
        CHECK(fabs(gv[k] - want) < 1e-12, "gvals[%d] = %g, want %g", k, gv[k], want);
    }
    float vf[NNZ], df[K * N], of[M * N];
    for (int k = 0; k < NNZ; k++) vf[k] = (float)vals[k];
    for (int i = 0; i < K * N; i++) df[i] = (float)d[i];
    CHECK_OK(pf_spmm_coo(PF_FLOAT32, NNZ, rows, cols, vf, M, K, N, df, of));
    for (int i = 0; i < M * N; i++) CHECK(fabs(of[i] - ref[i]) < 1e-5, "float32 out[%d] = %g", i, (double)of[i]);
    rows[3] = M; /* out of range */
    CHECK(pf_spmm_coo(PF_FLOAT64, NNZ, rows, cols, vals, M, K, N, d, out) == PF_ERR_INDEX, "a bad row is refused");
    CHECK(pf_spmm_coo(PF_INT64, 0, rows, cols, vals, M, K, N, d, out) == PF_ERR_TYPE, "integers are refused");
}


/* torch's sparse add walk: equal keys met together merge, others keep their order */
static void test_merge(void) {
    int64_t tk[] = {1, 2, 1, 4}, sk[] = {2, 4}, ts[4], ss[2], keys[6], n = -1;
    CHECK_OK(pf_coo_merge(4, tk, 2, sk, ts, ss, keys, &n));
    int64_t want_k[] = {1, 2, 1, 4}, want_ts[] = {0, 1, 2, 3}, want_ss[] = {1, 3};
    CHECK(n == 4, "4 entries, got %lld", (long long)n);
    for (int i = 0; i < 4; i++) CHECK(keys[i] == want_k[i] && ts[i] == want_ts[i], "entry %d", i);
    for (int i = 0; i < 2; i++) CHECK(ss[i] == want_ss[i], "s entry %d", i);
    int64_t a[] = {3, 1}, b[] = {5, 0};
    CHECK_OK(pf_coo_merge(2, a, 2, b, ts, ss, keys, &n));
    CHECK(n == 4 && keys[0] == 3 && keys[1] == 1 && keys[2] == 5 && keys[3] == 0, "no equal keys: t, then s");
    CHECK(pf_coo_merge(-1, a, 2, b, ts, ss, keys, &n) == PF_ERR_VALUE, "a negative count is refused");
}

/* SparseAdam on rows 0 and 2 of a 3 x 2 parameter against the formula; row 1 untouched */
static void test_sparse_adam(void) {
    double p[6] = {1, 2, 3, 4, 5, 6}, m[6] = {0.1, 0, 0, 0, -0.2, 0}, v[6] = {0.01, 0, 0, 0, 0.04, 0};
    double g[4] = {0.5, -1, 2, 0.25}, p0[6], m0[6], v0[6];
    int64_t keys[] = {0, 2};
    for (int i = 0; i < 6; i++) p0[i] = p[i], m0[i] = m[i], v0[i] = v[i];
    CHECK_OK(pf_sparse_adam(PF_FLOAT64, 2, keys, 3, 2, g, p, m, v, 0.01, 0.9, 0.999, 1e-8, 0));
    for (int k = 0; k < 2; k++)
        for (int q = 0; q < 2; q++) {
            int i = (int)keys[k] * 2 + q;
            double gk = g[k * 2 + q], mw = 0.9 * m0[i] + 0.1 * gk, vw = 0.999 * v0[i] + 0.001 * gk * gk;
            double pw = p0[i] - 0.01 * mw / (sqrt(vw) + 1e-8);
            CHECK(fabs(m[i] - mw) < 1e-13 && fabs(v[i] - vw) < 1e-13 && fabs(p[i] - pw) < 1e-13, "element %d", i);
        }
    CHECK(p[2] == 3 && p[3] == 4 && m[2] == 0 && v[3] == 0, "a row without gradient is untouched");
    int64_t bad[] = {2, 0};
    CHECK(pf_sparse_adam(PF_FLOAT64, 2, bad, 3, 2, g, p, m, v, 0.01, 0.9, 0.999, 1e-8, 0) == PF_ERR_INDEX,
          "uncoalesced keys are refused");
    CHECK(pf_sparse_adam(PF_INT32, 0, keys, 3, 2, g, p, m, v, 0.01, 0.9, 0.999, 1e-8, 0) == PF_ERR_TYPE,
          "integers are refused");
}

/* the CSR product of a 3 x 4 matrix (one empty row) by each reduction against a loop over the dense matrix */
static void test_csr(void) {
    enum { M = 3, K = 4, N = 5 };
    int64_t crow[] = {0, 3, 3, 5}, col[] = {0, 2, 3, 1, 2}, rows[5], crow2[4];
    double vals[] = {1, -2, 0.5, 3, 4}, d[K * N], out[M * N], g[M * N], gv[5], gd[K * N];
    int64_t arg[M * N];
    unsigned s = 5;
    for (int i = 0; i < K * N; i++) d[i] = frand(&s);
    for (int i = 0; i < M * N; i++) g[i] = frand(&s);
    CHECK_OK(pf_csr_rows(M, K, crow, 5, col, rows));
    CHECK(rows[0] == 0 && rows[2] == 0 && rows[3] == 2 && rows[4] == 2, "rows of the entries");
    CHECK_OK(pf_csr_crow(5, rows, M, crow2));
    for (int i = 0; i <= M; i++) CHECK(crow2[i] == crow[i], "crow[%d] rebuilt", i);
    for (int red = PF_CSR_SUM; red <= PF_CSR_AMIN; red++) {
        CHECK_OK(pf_csr_mm(PF_FLOAT64, red, M, K, N, crow, col, vals, d, out, red >= PF_CSR_AMAX ? arg : NULL));
        for (int i = 0; i < M; i++)
            for (int n = 0; n < N; n++) {
                double want = red == PF_CSR_AMAX ? -INFINITY : red == PF_CSR_AMIN ? INFINITY : 0;
                int64_t cnt = crow[i + 1] - crow[i];
                for (int64_t k = crow[i]; k < crow[i + 1]; k++) {
                    double x = vals[k] * d[col[k] * N + n];
                    want = red <= PF_CSR_MEAN ? want + x : red == PF_CSR_AMAX ? fmax(want, x) : fmin(want, x);
                }
                want = cnt == 0 ? 0 : red == PF_CSR_MEAN ? want / (double)cnt : want;
                CHECK(fabs(out[i * N + n] - want) < 1e-12, "reduce %d out[%d, %d] = %g, want %g", red, i, n,
                      out[i * N + n], want);
            }
        CHECK_OK(pf_csr_mm_backward(PF_FLOAT64, red, M, K, N, crow, col, vals, d, red >= PF_CSR_AMAX ? arg : NULL, g,
                                    gv, gd));
        double sum_gd = 0, want_gd = 0; /* sum(gd) = sum over chosen (entry, n) of value * g */
        for (int i = 0; i < K * N; i++) sum_gd += gd[i];
        for (int i = 0; i < M; i++)
            for (int64_t k = crow[i]; k < crow[i + 1]; k++)
                for (int n = 0; n < N; n++)
                    if (red <= PF_CSR_MEAN || arg[i * N + n] == k)
                        want_gd += vals[k] * g[i * N + n] / (red == PF_CSR_MEAN ? (double)(crow[i + 1] - crow[i]) : 1);
        CHECK(fabs(sum_gd - want_gd) < 1e-12, "reduce %d: sum of the dense gradient %g, want %g", red, sum_gd,
              want_gd);
    }
    int64_t bad_crow[] = {0, 3, 2, 5}, bad_col[] = {0, 2, 9, 1, 2};
    CHECK(pf_csr_rows(M, K, bad_crow, 5, col, rows) == PF_ERR_VALUE, "a decreasing crow is refused");
    CHECK(pf_csr_rows(M, K, crow, 5, bad_col, rows) == PF_ERR_INDEX, "a column out of range is refused");
    CHECK(pf_csr_mm(PF_FLOAT64, 7, M, K, N, crow, col, vals, d, out, NULL) == PF_ERR_VALUE, "a bad reduce is refused");
    CHECK(pf_csr_mm_backward(PF_FLOAT64, PF_CSR_AMAX, M, K, N, crow, col, vals, d, NULL, g, gv, gd) == PF_ERR_VALUE,
          "amax backward needs arg");
    /* sampled_addmm: out[k] = alpha <A[row], B[:, col]> + beta c[k] */
    double A[M * 2], B[2 * K], c[5], so[5];
    for (int i = 0; i < M * 2; i++) A[i] = frand(&s);
    for (int i = 0; i < 2 * K; i++) B[i] = frand(&s);
    for (int i = 0; i < 5; i++) c[i] = frand(&s);
    CHECK_OK(pf_csr_sampled_addmm(PF_FLOAT64, 5, rows, col, c, M, K, 2, A, B, 0.6, 0.2, so));
    for (int k = 0; k < 5; k++) {
        double want = 0.6 * (A[rows[k] * 2] * B[col[k]] + A[rows[k] * 2 + 1] * B[K + col[k]]) + 0.2 * c[k];
        CHECK(fabs(so[k] - want) < 1e-12, "sampled_addmm entry %d", k);
    }
}

int main(void) {
    test_coalesce();
    test_spmm();
    test_merge();
    test_sparse_adam();
    test_csr();
    return pf_test_summary("test_sparse");
}
