/* data.c: pf_randperm, pf_weighted_sample, pf_gather_rows; results and bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static pf_tensor vec(void *data, int dt, int64_t n) { return pf_make(data, dt, 1, &n); }

static void test_randperm(void) {
    enum { N = 1000 };
    int64_t p[N], q[N];
    int seen[N];
    pf_tensor tp = vec(p, PF_INT64, N), tq = vec(q, PF_INT64, N);
    CHECK_OK(pf_randperm(&tp, 7, 0));
    memset(seen, 0, sizeof seen);
    int ok = 1, fixed = 0;
    for (int i = 0; i < N; i++) {
        if (p[i] < 0 || p[i] >= N || seen[p[i]]++) ok = 0;
        fixed += p[i] == i;
    }
    CHECK(ok, "randperm is not a permutation of 0..%d", N - 1);
    CHECK(fixed < 10, "randperm left %d of %d elements in place", fixed, N);
    CHECK_OK(pf_randperm(&tq, 7, 0));
    CHECK(memcmp(p, q, sizeof p) == 0, "randperm is not a function of (seed, offset)");
    CHECK_OK(pf_randperm(&tq, 8, 0));
    CHECK(memcmp(p, q, sizeof p) != 0, "randperm ignores the seed");
    pf_tensor empty = vec(p, PF_INT64, 0);
    CHECK_OK(pf_randperm(&empty, 7, 0));
    double d[4];
    pf_tensor bad = vec(d, PF_FLOAT64, 4);
    CHECK(pf_randperm(&bad, 7, 0) == PF_ERR_VALUE, "a float output must be refused");
}

static void test_weighted(void) {
    enum { K = 40000 };
    static int64_t out[K];
    double w[4] = {1, 0, 3, 0};
    int64_t counts[4] = {0};
    pf_tensor tw = vec(w, PF_FLOAT64, 4), to = vec(out, PF_INT64, K);
    CHECK_OK(pf_weighted_sample(&tw, &to, 1, 3, 0));
    for (int i = 0; i < K; i++) counts[out[i]]++;
    CHECK(counts[1] == 0 && counts[3] == 0, "zero weights drawn: %lld %lld", (long long)counts[1],
          (long long)counts[3]);
    CHECK(fabs(counts[2] / (double)K - 0.75) < 0.02, "weight 3 of 4 drawn %lld of %d", (long long)counts[2], K);
    pf_tensor two = vec(out, PF_INT64, 2), three = vec(out, PF_INT64, 3);
    CHECK_OK(pf_weighted_sample(&tw, &two, 0, 3, 0));
    CHECK((out[0] == 0 && out[1] == 2) || (out[0] == 2 && out[1] == 0), "without replacement drew %lld %lld",
          (long long)out[0], (long long)out[1]);
    CHECK(pf_weighted_sample(&tw, &three, 0, 3, 0) == PF_ERR_VALUE, "3 draws from 2 positive weights");
    w[1] = -1;
    CHECK(pf_weighted_sample(&tw, &two, 1, 3, 0) == PF_ERR_VALUE, "negative weight accepted");
    w[1] = NAN;
    CHECK(pf_weighted_sample(&tw, &two, 1, 3, 0) == PF_ERR_VALUE, "NaN weight accepted");
    double z[2] = {0, 0};
    pf_tensor tz = vec(z, PF_FLOAT64, 2);
    CHECK(pf_weighted_sample(&tz, &two, 1, 3, 0) == PF_ERR_VALUE, "all-zero weights accepted");
}

static void test_gather_rows(void) {
    float x[5][3], out[4][3];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) x[i][j] = (float)(10 * i + j);
    int64_t idx[4] = {4, 0, -1, 2}, xs[2] = {5, 3}, os[2] = {4, 3}, four = 4;
    pf_tensor tx = pf_make(x, PF_FLOAT32, 2, xs), to = pf_make(out, PF_FLOAT32, 2, os);
    pf_tensor ti = vec(idx, PF_INT64, four);
    CHECK_OK(pf_gather_rows(&tx, &ti, &to));
    int ok = 1;
    for (int j = 0; j < 4; j++)
        for (int c = 0; c < 3; c++) ok &= out[j][c] == x[(idx[j] + 5) % 5][c];
    CHECK(ok, "gather_rows picked the wrong rows");
    idx[1] = 5;
    CHECK(pf_gather_rows(&tx, &ti, &to) == PF_ERR_INDEX, "index 5 of 5 rows accepted");
    idx[1] = 0;
    tx.strides[1] = 2; /* not contiguous within a row */
    CHECK(pf_gather_rows(&tx, &ti, &to) == PF_ERR_VALUE, "strided rows accepted");
    tx.strides[1] = 1;
    to.dtype = PF_FLOAT64;
    CHECK(pf_gather_rows(&tx, &ti, &to) == PF_ERR_VALUE, "dtype mismatch accepted");
}

int main(void) {
    test_randperm();
    test_weighted();
    test_gather_rows();
    return pf_test_summary("test_data");
}
