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

int main(void) {
    pf_set_num_threads(4);
    test_batch_norm(PF_FLOAT32);
    test_batch_norm(PF_FLOAT64);
    return pf_test_summary("test_batch_norm");
}
