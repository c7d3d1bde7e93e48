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

int main(void) {
    test_coalesce();
    test_spmm();
    return pf_test_summary("test_sparse");
}
