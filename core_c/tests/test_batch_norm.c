/* batch_norm.c: forward and backward against a naive reference on a strided input, and bad input. */
#include <stdlib.h>
#include "core.h"
#include "check.h"

static void test_batch_norm(int dt) {
    enum { N = 3, C = 5, L = 70 };
    unsigned seed = 11;
    size_t es = pf_dtype_size[dt];
    /* x laid out [C, N, L] in memory: a strided [N, C, L] view */
    char *xd = malloc(es * N * C * L), *y = malloc(es * N * C * L), *gy = malloc(es * N * C * L);
    char *gx = malloc(es * N * C * L), *w = malloc(es * C), *gw = malloc(es * C), *gb = malloc(es * C);
    double mean[C], var[C];
    for (int i = 0; i < N * C * L; i++) {
        pf_store_f64(xd + i * es, dt, 3 + frand(&seed));
        pf_store_f64(gy + i * es, dt, frand(&seed));
    }
    for (int c = 0; c < C; c++) pf_store_f64(w + c * es, dt, 0.5 + c);
    pf_tensor x = {xd, dt, 3, {N, C, L}, {L, N * L, 1}};
    int64_t s3[3] = {N, C, L}, s1[1] = {C};
    pf_tensor yt = pf_make(y, dt, 3, s3), gyt = pf_make(gy, dt, 3, s3), gxt = pf_make(gx, dt, 3, s3);
    pf_tensor wt = pf_make(w, dt, 1, s1), gwt = pf_make(gw, dt, 1, s1), gbt = pf_make(gb, dt, 1, s1);
    pf_tensor mt = pf_make(mean, PF_FLOAT64, 1, s1), vt = pf_make(var, PF_FLOAT64, 1, s1);
    CHECK_OK(pf_batch_norm_forward(&x, &wt, NULL, 1e-5, 0.1, NULL, NULL, &yt, &mt, &vt));
    CHECK_OK(pf_batch_norm_backward(&gyt, &x, &mt, &vt, &wt, 1e-5, &gxt, &gwt, &gbt));
    double tol = dt == PF_FLOAT32 ? 1e-4 : 1e-11, worst = 0;
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0, sg = 0, sgx = 0;
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) m += pf_load_f64(xd + (c * N * L + n * L + l) * es, dt);
        m /= N * L;
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) {
                double d = pf_load_f64(xd + (c * N * L + n * L + l) * es, dt) - m;
                double q = pf_load_f64(gy + ((n * C + c) * L + l) * es, dt);
                v += d * d, sg += q, sgx += q * d;
            }
        v /= N * L;
        double is = 1 / sqrt(v + 1e-5), wc = 0.5 + c;
        worst = fmax(worst, fabs(mean[c] - m) + fabs(var[c] - v));
        worst = fmax(worst, fabs(pf_load_f64(gw + c * es, dt) - sgx * is) + fabs(pf_load_f64(gb + c * es, dt) - sg));
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) {
                int64_t k = (n * C + c) * L + l;
                double d = pf_load_f64(xd + (c * N * L + n * L + l) * es, dt) - m, q = pf_load_f64(gy + k * es, dt);
                double ry = d * is * wc, rgx = wc * is * (q - sg / (N * L) - d * is * is * sgx / (N * L));
                worst = fmax(worst, fabs(pf_load_f64(y + k * es, dt) - ry) + fabs(pf_load_f64(gx + k * es, dt) - rgx));
            }
    }
    CHECK(worst < tol, "%s batch norm off by %g", pf_dtype_name[dt], worst);
    /* bad input: mean not float64, output not contiguous */
    float fm[C];
    pf_tensor bad_mean = pf_make(fm, PF_FLOAT32, 1, s1);
    CHECK(pf_batch_norm_forward(&x, NULL, NULL, 1e-5, 0.1, NULL, NULL, &yt, &bad_mean, &vt) == PF_ERR_TYPE, "mean");
    CHECK(pf_batch_norm_forward(&x, NULL, NULL, 1e-5, 0.1, NULL, NULL, &x, &mt, &vt) == PF_ERR_VALUE, "strided y");
    free(xd), free(y), free(gy), free(gx), free(w), free(gw), free(gb);
}

/* eval: y = (x - running_mean) / sqrt(running_var + eps) * w + b on the strided input, bias NULL too */
static void test_batch_norm_eval(int dt) {
    enum { N = 2, C = 4, L = 33 };
    unsigned seed = 5;
    size_t es = pf_dtype_size[dt];
    char *xd = malloc(es * N * C * L), *y = malloc(es * N * C * L), *v = malloc(es * C * 4);
    for (int i = 0; i < N * C * L; i++) pf_store_f64(xd + i * es, dt, 2 + frand(&seed));
    for (int i = 0; i < 4 * C; i++) pf_store_f64(v + i * es, dt, i < C || i >= 2 * C ? frand(&seed) : 0.5 + frand(&seed) * frand(&seed));
    pf_tensor x = {xd, dt, 3, {N, C, L}, {L, N * L, 1}}; /* [C, N, L] in memory */
    int64_t s3[3] = {N, C, L}, s1[1] = {C};
    pf_tensor yt = pf_make(y, dt, 3, s3), rm = pf_make(v, dt, 1, s1), rv = pf_make(v + C * es, dt, 1, s1);
    pf_tensor wt = pf_make(v + 2 * C * es, dt, 1, s1), bt = pf_make(v + 3 * C * es, dt, 1, s1);
    double tol = dt == PF_FLOAT32 ? 1e-5 : 1e-12;
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        CHECK_OK(pf_batch_norm_eval(&x, &wt, with_bias ? &bt : NULL, &rm, &rv, 1e-3, &yt));
        double worst = 0;
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                for (int l = 0; l < L; l++) {
                    double xv = pf_load_f64(xd + (c * N * L + n * L + l) * es, dt);
                    double r = (xv - pf_load_f64(v + c * es, dt)) / sqrt(pf_load_f64(v + (C + c) * es, dt) + 1e-3) *
                                   pf_load_f64(v + (2 * C + c) * es, dt) +
                               (with_bias ? pf_load_f64(v + (3 * C + c) * es, dt) : 0);
                    worst = fmax(worst, fabs(pf_load_f64(y + ((n * C + c) * L + l) * es, dt) - r));
                }
        CHECK(worst < tol, "%s batch norm eval (bias %d) off by %g", pf_dtype_name[dt], with_bias, worst);
    }
    CHECK(pf_batch_norm_eval(&x, NULL, NULL, NULL, &rv, 1e-3, &yt) == PF_ERR_VALUE, "no running mean");
    CHECK(pf_batch_norm_eval(&x, NULL, NULL, &rm, &rv, -1, &yt) == PF_ERR_VALUE, "eps < 0");
    CHECK(pf_batch_norm_eval(&x, NULL, NULL, &rm, &rv, 1e-3, &x) == PF_ERR_VALUE, "strided y");
    pf_tensor short_w = pf_make(v, dt, 1, (int64_t[]){C - 1});
    CHECK(pf_batch_norm_eval(&x, &short_w, NULL, &rm, &rv, 1e-3, &yt) == PF_ERR_VALUE, "short weight");
    free(xd), free(y), free(v);
}

int main(void) {
    pf_set_num_threads(4);
    test_batch_norm(PF_FLOAT32);
    test_batch_norm(PF_FLOAT64);
    test_batch_norm_eval(PF_FLOAT32);
    test_batch_norm_eval(PF_FLOAT64);
    return pf_test_summary("test_batch_norm");
}
