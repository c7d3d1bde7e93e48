/* softmax.c: softmax and log_softmax against a naive reference over contiguous, transposed and
 * spaced-out layouts and the float dtypes; NaN and -inf rows; thread-count independence; the
 * descriptor-free row entry; errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static unsigned seed = 3;

static void fill(void *buf, int dt, int64_t n) {
    for (int64_t i = 0; i < n; i++) pf_store_f64((char *)buf + i * (int64_t)pf_dtype_size[dt], dt, 2 * frand(&seed));
}

static void check_softmax(const pf_tensor *x, int spaced, int take_log, const char *what) {
    int dt = x->dtype, nd = x->ndim;
    int64_t total = numel_of(x->shape, nd), n = nd ? x->shape[nd - 1] : 1, rows = n ? total / n : 0;
    int64_t step = spaced ? 3 : 1;
    char *ybuf = calloc((size_t)(total * step + 1), 8);
    pf_tensor y = {.data = ybuf, .dtype = dt, .ndim = nd};
    int64_t s = step;
    for (int i = nd - 1; i >= 0; i--) y.shape[i] = x->shape[i], y.strides[i] = s, s *= x->shape[i];
    CHECK_OK(pf_softmax(x, &y, take_log));
    double tol = dt == PF_FLOAT16 ? 2e-3 : dt == PF_FLOAT32 ? 2e-6 : 1e-13;
    tally t = {0};
    for (int64_t r = 0; r < rows; r++) {
        double m = -INFINITY, sum = 0, got_sum = 0;
        int nan = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = pf_load_f64(elem_at(x, r * n + i), dt);
            nan |= v != v;
            m = v > m ? v : m;
        }
        for (int64_t i = 0; i < n; i++) sum += exp(pf_load_f64(elem_at(x, r * n + i), dt) - m);
        for (int64_t i = 0; i < n; i++) {
            double v = pf_load_f64(elem_at(x, r * n + i), dt), g = pf_load_f64(elem_at(&y, r * n + i), dt);
            double want = nan ? NAN : take_log ? v - m - log(sum) : exp(v - m) / sum;
            int ok = same_float(g, want, tol * (take_log ? fabs(want) + 1 : 1));
            got_sum += take_log ? exp(g) : g;
            TALLY(&t, ok, "row %lld col %lld: %.9g want %.9g", (long long)r, (long long)i, g, want);
        }
        if (!nan && m > -INFINITY)
            TALLY(&t, fabs(got_sum - 1) < tol * n + 1e-6, "row %lld sums to %.9g", (long long)r, got_sum);
    }
    CHECK(t.bad == 0, "%s %s dtype %s: %lld wrong, first %s", what, take_log ? "log_softmax" : "softmax",
          pf_dtype_name[dt], (long long)t.bad, t.first);
    free(ybuf);
}

static void same_bits_on_1_and_2_threads(const pf_tensor *x, pf_tensor *o1, pf_tensor *o2, int take_log,
                                         const char *what) {
    pf_set_num_threads(1);
    CHECK_OK(pf_softmax(x, o1, take_log));
    pf_set_num_threads(2);
    CHECK_OK(pf_softmax(x, o2, take_log));
    pf_set_num_threads(0);
    CHECK(!memcmp(o1->data, o2->data, (size_t)pf_numel(x) * pf_dtype_size[x->dtype]), "%s: 1 and 2 threads differ",
          what);
}

static void test_softmax(void) {
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT16; dt++) {
        void *buf = malloc(7 * 33 * 8);
        for (int64_t i = 0; i < 7 * 33; i++)
            pf_store_f64((char *)buf + i * pf_dtype_size[dt], dt, 10 * frand(&seed));
        int64_t sh[2] = {7, 33};
        int tp[2] = {1, 0};
        pf_tensor c = pf_make(buf, dt, 2, sh), t = permuted(buf, dt, 2, sh, tp);
        for (int lg = 0; lg <= 1; lg++) {
            check_softmax(&c, 0, lg, "contiguous");
            check_softmax(&t, 1, lg, "transposed, spaced out");
        }
        /* a NaN row, an all -inf row and a row with some -inf */
        pf_store_f64((char *)buf + 40 * pf_dtype_size[dt], dt, NAN);
        for (int i = 66; i < 99; i++) pf_store_f64((char *)buf + i * pf_dtype_size[dt], dt, -INFINITY);
        pf_store_f64((char *)buf + 100 * pf_dtype_size[dt], dt, -INFINITY);
        for (int lg = 0; lg <= 1; lg++) check_softmax(&c, 0, lg, "nan and -inf rows");
        char *y = calloc(7 * 33, 8);
        pf_tensor yo = pf_make(y, dt, 2, sh);
        CHECK_OK(pf_softmax(&c, &yo, 0));
        CHECK(isnan(pf_load_f64(y + 35 * pf_dtype_size[dt], dt)), "a NaN row is all NaN");
        CHECK(isnan(pf_load_f64(y + 70 * pf_dtype_size[dt], dt)), "an all -inf row is NaN, as torch");
        CHECK(pf_load_f64(y + 100 * pf_dtype_size[dt], dt) == 0, "-inf gets probability 0");
        /* in place */
        fill(buf, dt, 7 * 33);
        char *y2 = calloc(7 * 33, 8);
        pf_tensor y2o = pf_make(y2, dt, 2, sh);
        for (int lg = 0; lg <= 1; lg++) {
            memcpy(y, buf, 7 * 33 * pf_dtype_size[dt]);
            CHECK_OK(pf_softmax(&yo, &yo, lg));
            CHECK_OK(pf_softmax(&c, &y2o, lg));
            CHECK(!memcmp(y, y2, 7 * 33 * pf_dtype_size[dt]), "in place equals out of place (log %d)", lg);
        }
        free(y), free(y2), free(buf);
    }
    /* large: threads agree */
    int64_t sh[2] = {300, 1000}, n = 300000;
    float *a = malloc((size_t)n * 4), *y1 = malloc((size_t)n * 4), *y2 = malloc((size_t)n * 4);
    fill(a, PF_FLOAT32, n);
    pf_tensor x = pf_make(a, PF_FLOAT32, 2, sh), o1 = pf_make(y1, PF_FLOAT32, 2, sh), o2 = pf_make(y2, PF_FLOAT32, 2, sh);
    check_softmax(&x, 0, 0, "large");
    same_bits_on_1_and_2_threads(&x, &o1, &o2, 0, "softmax");
    int64_t tsh[2] = {1000, 300};
    int tp[2] = {1, 0}; /* transposed rows go through each thread's scratch row */
    pf_tensor xt = permuted(a, PF_FLOAT32, 2, tsh, tp), t1 = pf_make(y1, PF_FLOAT32, 2, tsh);
    pf_tensor t2 = pf_make(y2, PF_FLOAT32, 2, tsh);
    check_softmax(&xt, 0, 1, "large transposed");
    same_bits_on_1_and_2_threads(&xt, &t1, &t2, 1, "log_softmax transposed");
    /* short rows go in groups (at most 2048 elements, 256 rows): rows 64 apart in a wider
     * buffer, over several groups and a partial last one; 1-element rows over several */
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt++) {
        int64_t wsh[2] = {45, 64}, rows1[2] = {600, 1};
        pf_tensor wide = pf_make(a, dt, 2, wsh), one = pf_make(a, dt, 2, rows1);
        wide.shape[1] = 50;
        fill(a, dt, 45 * 64);
        for (int lg = 0; lg <= 1; lg++) {
            check_softmax(&wide, 0, lg, "rows of a wider buffer");
            check_softmax(&wide, 1, lg, "rows of a wider buffer, spaced out");
            check_softmax(&one, 0, lg, "600 one-element rows");
        }
    }
    /* edges: empty last dim is a no-op, 0-d gives 1, errors */
    int64_t e[2] = {3, 0};
    pf_tensor xe = pf_make(a, PF_FLOAT32, 2, e), ye = pf_make(y1, PF_FLOAT32, 2, e);
    CHECK_OK(pf_softmax(&xe, &ye, 0));
    double s0 = 3, r0 = 0;
    pf_tensor xs = {.data = &s0, .dtype = PF_FLOAT64}, ys = {.data = &r0, .dtype = PF_FLOAT64};
    CHECK_OK(pf_softmax(&xs, &ys, 0));
    CHECK(r0 == 1, "0-d softmax: %g", r0);
    CHECK_OK(pf_softmax(&xs, &ys, 1));
    CHECK(r0 == 0, "0-d log_softmax: %g", r0);
    int64_t ia[6] = {0};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    pf_tensor xi = pf_make(ia, PF_INT64, 2, s23), yi = pf_make(ia, PF_INT64, 2, s23);
    CHECK(pf_softmax(&xi, &yi, 0) == PF_ERR_TYPE, "int softmax");
    pf_tensor xf = pf_make(a, PF_FLOAT32, 2, s23), yd = pf_make(y1, PF_FLOAT64, 2, s23), yt = pf_make(y1, PF_FLOAT32, 2, s32);
    CHECK(pf_softmax(&xf, &yd, 0) == PF_ERR_TYPE, "out dtype differs");
    CHECK(pf_softmax(&xf, &yt, 0) == PF_ERR_VALUE, "out shape differs");
    CHECK(strstr(pf_last_error(), "[3, 2]") && strstr(pf_last_error(), "[2, 3]"), "%s", pf_last_error());
    free(a), free(y1), free(y2);
}

static void test_softmax_rows(void) {
    float x[3 * 4] = {1, 2, 3, 4, -1, -2, -3, -4, 0.5f, 0.25f, 0, 1};
    float y[3 * 4];
    CHECK_OK(pf_softmax_rows(PF_FLOAT32, x, y, 3, 4, 0));
    CHECK(fabsf(y[0] + y[1] + y[2] + y[3] - 1) < 1e-6f && y[3] > y[2], "softmax row %g %g", y[2], y[3]);
    CHECK(pf_softmax_rows(PF_INT64, x, y, 3, 4, 0) == PF_ERR_TYPE, "softmax of int64");
}

/* the rows' gradient against double references: log_softmax g - exp(y) sum(g), softmax y (g - sum(g y)); in place
 * (gx = g) too; the refusals */
static void test_softmax_backward_rows(void) {
    enum { R = 5, N = 301 };
    static double x[R * N], y[R * N], g[R * N], gx[R * N];
    static float xf[R * N], yf[R * N], gf[R * N], gxf[R * N];
    unsigned s = 5;
    for (int i = 0; i < R * N; i++) x[i] = 4 * frand(&s), g[i] = frand(&s), xf[i] = (float)x[i], gf[i] = (float)g[i];
    for (int take_log = 0; take_log < 2; take_log++) {
        CHECK_OK(pf_softmax_rows(PF_FLOAT64, x, y, R, N, take_log));
        CHECK_OK(pf_softmax_rows(PF_FLOAT32, xf, yf, R, N, take_log));
        CHECK_OK(pf_softmax_backward_rows(PF_FLOAT64, g, y, gx, R, N, take_log));
        memcpy(gxf, gf, sizeof gf);
        CHECK_OK(pf_softmax_backward_rows(PF_FLOAT32, gxf, yf, gxf, R, N, take_log)); /* in place */
        int bad = 0, badf = 0;
        for (int r = 0; r < R; r++) {
            double sum = 0;
            for (int i = 0; i < N; i++) sum += take_log ? g[r * N + i] : g[r * N + i] * y[r * N + i];
            for (int i = 0; i < N; i++) {
                int k = r * N + i;
                double p = take_log ? exp(y[k]) : y[k];
                double want = take_log ? g[k] - p * sum : y[k] * (g[k] - sum);
                bad += !same_float(gx[k], want, 1e-12);
                badf += !same_float(gxf[k], want, 1e-5);
            }
        }
        CHECK(bad == 0 && badf == 0, "softmax backward (log %d): %d float64, %d float32 wrong", take_log, bad, badf);
    }
    CHECK(pf_softmax_backward_rows(PF_FLOAT16, g, y, gx, R, N, 1) == PF_ERR_TYPE, "float16 refused");
    CHECK(pf_softmax_backward_rows(PF_FLOAT32, NULL, y, gx, R, N, 1) == PF_ERR_VALUE, "NULL refused");
    CHECK_OK(pf_softmax_backward_rows(PF_FLOAT32, NULL, NULL, NULL, 0, N, 1));
}

int main(void) {
    test_softmax();
    test_softmax_rows();
    test_softmax_backward_rows();
    return pf_test_summary("test_softmax");
}
