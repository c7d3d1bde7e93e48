/* sort.c: sort and topk against naive loops, plus the error paths. */
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
    int lo = dt == PF_UINT8 || dt == PF_BOOL ? 0 : 3; /* values lo..6-lo: many ties, so stability shows */
    int64_t shape[3] = {outer, n, inner};
    size_t isz = pf_dtype_size[dt];
    int64_t total = outer * n * inner;
    char *x = malloc((size_t)total * isz + 1), *v = malloc((size_t)total * isz + 1);
    int64_t *ix = malloc((size_t)total * 8 + 8);
    for (int64_t i = 0; i < total; i++) pf_store_f64(x + i * isz, dt, (double)(int)(urand() * 7) - lo);
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

/* mode: the most frequent value, smallest of ties, last occurrence; searchsorted against a linear count */
static void test_mode_search(void) {
    int64_t shape[2] = {2, 7}, rshape[1] = {2};
    int64_t x[14] = {3, 1, 3, 1, 2, 2, 0, 5, 5, 4, 4, 4, 5, 9}, v[2], ix[2];
    pf_tensor tx = pf_make(x, PF_INT64, 2, shape), tv = pf_make(v, PF_INT64, 1, rshape);
    pf_tensor ti = pf_make(ix, PF_INT64, 1, rshape);
    CHECK_OK(pf_mode(&tx, &tv, &ti));
    CHECK(v[0] == 1 && ix[0] == 3 && v[1] == 4 && ix[1] == 4, "mode: got %lld@%lld and %lld@%lld", (long long)v[0],
          (long long)ix[0], (long long)v[1], (long long)ix[1]);
    double seq[6] = {1, 3, 3, 5, 8, 8}, vals[5] = {0, 3, 4, 8, 9};
    int64_t sshape[2] = {1, 6}, vshape[2] = {1, 5}, out[5];
    pf_tensor ts = pf_make(seq, PF_FLOAT64, 2, sshape), tq = pf_make(vals, PF_FLOAT64, 2, vshape);
    pf_tensor to = pf_make(out, PF_INT64, 2, vshape);
    for (int right = 0; right < 2; right++) {
        CHECK_OK(pf_searchsorted(&ts, &tq, right, &to));
        int bad = 0;
        for (int j = 0; j < 5; j++) {
            int64_t c = 0;
            for (int k = 0; k < 6; k++) c += right ? seq[k] <= vals[j] : seq[k] < vals[j];
            bad += out[j] != c;
        }
        CHECK(bad == 0, "searchsorted(right=%d): %d mismatches", right, bad);
    }
    pf_tensor tbad = pf_make(x, PF_INT64, 2, sshape);
    CHECK(pf_searchsorted(&tbad, &tq, 0, &to) == PF_ERR_TYPE, "mixed dtypes must fail");
}

int main(void) {
    test_mode_search();
    int dts[5] = {PF_FLOAT32, PF_FLOAT64, PF_FLOAT16, PF_INT64, PF_INT32};
    for (int d = 0; d < 5; d++)
        for (int desc = 0; desc < 2; desc++) {
            check_sort(dts[d], 3, 37, 1, desc);
            check_sort(dts[d], 2, 50, 3, desc);
        }
    check_sort(PF_FLOAT32, 40, 2000, 1, 0); /* big enough to go parallel */
    /* rows of 256 and more sort by radix: every dtype's keys, contiguous and strided rows */
    for (int d = 0; d < PF_NUM_DTYPES; d++)
        for (int desc = 0; desc < 2; desc++) {
            check_sort(d, 2, 300, 1, desc);
            check_sort(d, 1, 256, 3, desc);
        }
    test_topk();
    return pf_test_summary("test_sort");
}
