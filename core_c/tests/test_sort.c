/* sort / topk / scans / multinomial against naive loops, plus the error paths. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static unsigned rng = 777;
static double urand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / 16777216.0;
}

/* sort rows of [outer, n, inner] along n and check order, stability and that values match indices */
static void check_sort(int dt, int64_t outer, int64_t n, int64_t inner, int descending) {
    int64_t shape[3] = {outer, n, inner};
    size_t isz = pf_dtype_size[dt];
    int64_t total = outer * n * inner;
    char *x = malloc((size_t)total * isz + 1), *v = malloc((size_t)total * isz + 1);
    int64_t *ix = malloc((size_t)total * 8 + 8);
    for (int64_t i = 0; i < total; i++) pf_store_f64(x + i * isz, dt, (double)(int)(urand() * 7) - 3);
    pf_tensor tx = pf_make(x, dt, 3, shape), tv = pf_make(v, dt, 3, shape), ti = pf_make(ix, PF_INT64, 3, shape);
    CHECK_OK(pf_sort(&tx, 1, descending, &tv, &ti));
    int bad = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t at = (o * n + j) * inner + i;
                double val = pf_load_f64(v + at * isz, dt);
                double src = pf_load_f64(x + ((o * n + ix[at]) * inner + i) * isz, dt);
                if (val != src) bad++;
                if (j) {
                    int64_t prev = at - inner;
                    double pv = pf_load_f64(v + prev * isz, dt);
                    if (descending ? pv < val : pv > val) bad++;
                    if (pv == val && ix[prev] > ix[at]) bad++; /* stable */
                }
            }
    CHECK(bad == 0, "dtype %d [%lld,%lld,%lld] descending=%d: %d mismatches", dt, (long long)outer, (long long)n,
          (long long)inner, descending, bad);
    free(x);
    free(v);
    free(ix);
}

static void test_topk(void) {
    enum { N = 200, K = 5 };
    double x[N], v[K];
    int64_t ix[K];
    for (int i = 0; i < N; i++) x[i] = urand();
    x[17] = NAN; /* NaN is the largest */
    int64_t sx[1] = {N}, sk[1] = {K};
    pf_tensor tx = pf_make(x, PF_FLOAT64, 1, sx), tv = pf_make(v, PF_FLOAT64, 1, sk), ti = pf_make(ix, PF_INT64, 1, sk);
    CHECK_OK(pf_topk(&tx, 0, K, 1, &tv, &ti));
    CHECK(ix[0] == 17 && isnan(v[0]), "NaN first, got index %lld", (long long)ix[0]);
    for (int j = 1; j < K; j++) {
        int larger = 0;
        for (int i = 0; i < N; i++) larger += i != 17 && x[i] > v[j];
        CHECK(larger == j - 1 && x[ix[j]] == v[j], "rank %d: %d larger", j, larger);
    }
    CHECK(pf_topk(&tx, 0, N + 1, 1, &tv, &ti) == PF_ERR_VALUE, "k > n must fail");
    CHECK(pf_topk(&tx, 1, 1, 1, &tv, &ti) == PF_ERR_INDEX, "bad dim must fail");
    pf_tensor wrong = pf_make(ix, PF_INT32, 1, sk);
    CHECK(pf_topk(&tx, 0, K, 1, &tv, &wrong) == PF_ERR_TYPE, "int32 indices must fail");
}

static void test_scan(void) {
    int64_t shape[3] = {3, 4, 5};
    float x[60], out[60];
    int64_t ix[60], iout[60];
    for (int i = 0; i < 60; i++) {
        x[i] = (float)(int)(urand() * 5) - 2;
        ix[i] = (int64_t)x[i];
    }
    for (int dim = 0; dim < 3; dim++) {
        pf_tensor tx = pf_make(x, PF_FLOAT32, 3, shape), to = pf_make(out, PF_FLOAT32, 3, shape);
        pf_tensor ti = pf_make(ix, PF_INT64, 3, shape), tio = pf_make(iout, PF_INT64, 3, shape);
        CHECK_OK(pf_scan(PF_SCAN_SUM, &tx, dim, &to));
        CHECK_OK(pf_scan(PF_SCAN_PROD, &ti, dim, &tio));
        int64_t stride = dim == 0 ? 20 : dim == 1 ? 5 : 1;
        int bad = 0;
        for (int i = 0; i < 60; i++) {
            int64_t j = (i / stride) % shape[dim];
            double s = 0;
            int64_t p = 1;
            for (int64_t q = 0; q <= j; q++) {
                s += x[i - (j - q) * stride];
                p *= ix[i - (j - q) * stride];
            }
            bad += out[i] != (float)s || iout[i] != p;
        }
        CHECK(bad == 0, "scan along dim %d: %d mismatches", dim, bad);
    }
    pf_tensor tx = pf_make(x, PF_FLOAT32, 3, shape), to = pf_make(out, PF_FLOAT32, 3, shape);
    CHECK(pf_scan(7, &tx, 0, &to) == PF_ERR_VALUE, "unknown op must fail");
    CHECK(pf_scan(PF_SCAN_SUM, &tx, 3, &to) == PF_ERR_INDEX, "bad dim must fail");
}

static void test_multinomial(void) {
    enum { R = 2, N = 4, K = 2000 };
    double p[R * N] = {0, 1, 3, 0, 1, 1, 1, 1}, *u = malloc(sizeof(double) * R * K);
    int64_t *out = malloc(sizeof(int64_t) * R * K);
    for (int i = 0; i < R * K; i++) u[i] = urand();
    int64_t sp[2] = {R, N}, su[2] = {R, K};
    pf_tensor tp = pf_make(p, PF_FLOAT64, 2, sp), tu = pf_make(u, PF_FLOAT64, 2, su), to = pf_make(out, PF_INT64, 2, su);
    CHECK_OK(pf_multinomial(&tp, &tu, 1, &to));
    int counts[N] = {0};
    for (int i = 0; i < K; i++) counts[out[i]]++;
    CHECK(counts[0] == 0 && counts[3] == 0 && counts[2] > 2 * counts[1], "counts %d %d %d %d", counts[0], counts[1],
          counts[2], counts[3]);
    /* without replacement every row's samples are distinct */
    int64_t sk[2] = {R, 2};
    pf_tensor tu2 = pf_make(u, PF_FLOAT64, 2, sk), to2 = pf_make(out, PF_INT64, 2, sk);
    CHECK_OK(pf_multinomial(&tp, &tu2, 0, &to2));
    CHECK(out[0] != out[1] && out[2] != out[3] && out[0] > 0 && out[0] < 3, "distinct draws");
    int64_t s3[2] = {R, 3};
    pf_tensor tu3 = pf_make(u, PF_FLOAT64, 2, s3), to3 = pf_make(out, PF_INT64, 2, s3);
    CHECK(pf_multinomial(&tp, &tu3, 0, &to3) == PF_ERR_VALUE, "3 draws from 2 non-zero categories must fail");
    p[1] = -1;
    CHECK(pf_multinomial(&tp, &tu, 1, &to) == PF_ERR_VALUE, "negative weight must fail");
    p[1] = 0;
    p[2] = 0;
    CHECK(pf_multinomial(&tp, &tu, 1, &to) == PF_ERR_VALUE, "all-zero row must fail");
    free(u);
    free(out);
}

int main(void) {
    int dts[5] = {PF_FLOAT32, PF_FLOAT64, PF_FLOAT16, PF_INT64, PF_INT32};
    for (int d = 0; d < 5; d++)
        for (int desc = 0; desc < 2; desc++) {
            check_sort(dts[d], 3, 37, 1, desc);
            check_sort(dts[d], 2, 50, 3, desc);
        }
    check_sort(PF_FLOAT32, 40, 2000, 1, 0); /* big enough to go parallel */
    test_topk();
    test_scan();
    test_multinomial();
    return pf_test_summary("test_sort");
}
