/* activation.c: GELU forward and backward, erf and tanh forms, float32 and float64, with and
 * without the saved gate, serial and threaded lengths, against double references; bad input. */
#include <math.h>
#include <stdlib.h>
#include "core.h"
#include "check.h"

#define PI 3.14159265358979323846

/* GELU and its derivative in double, torch's formulas */
static double gelu_ref(double x, int approx, double *grad) {
    if (approx) {
        double k = sqrt(2 / PI), u = k * (x + 0.044715 * x * x * x), t = tanh(u);
        *grad = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
        return 0.5 * x * (1 + t);
    }
    double cdf = 0.5 * (1 + erf(x / sqrt(2)));
    *grad = cdf + x * exp(-0.5 * x * x) / sqrt(2 * PI);
    return x * cdf;
}

/* worst error relative to max(1, |reference|) of y, the gate (when kept) and gx = g * gelu'(x) */
static double gelu_case(int dt, int64_t n, int approx, int keep_gate) {
    size_t es = pf_dtype_size[dt];
    char *x = malloc(n * es), *y = malloc(n * es), *cdf = malloc(n * es), *g = malloc(n * es), *gx = malloc(n * es);
    unsigned seed = 5;
    for (int64_t i = 0; i < n; i++) {
        pf_store_f64(x + i * es, dt, 6 * frand(&seed)); /* both tails and the middle */
        if (i % 97 == 3) pf_store_f64(x + i * es, dt, i % 2 ? 0.0 : 1e-30 * frand(&seed)); /* zero and tiny */
        pf_store_f64(g + i * es, dt, frand(&seed));
    }
    double worst = 0;
    /* keep_gate 2: backward reads the output (approximate 2), the gate being y / x */
    CHECK_OK(pf_gelu(dt, x, y, keep_gate == 1 ? cdf : NULL, n, approx));
    CHECK_OK(pf_gelu_backward(dt, g, x, keep_gate == 2 ? y : keep_gate ? cdf : NULL, gx, n, keep_gate == 2 ? 2 : approx));
    for (int64_t i = 0; i < n; i++) {
        double xi = pf_load_f64(x + i * es, dt), d, want = gelu_ref(xi, approx, &d);
        double gwant = pf_load_f64(g + i * es, dt) * d;
        worst = fmax(worst, fabs(pf_load_f64(y + i * es, dt) - want) / fmax(1, fabs(want)));
        worst = fmax(worst, fabs(pf_load_f64(gx + i * es, dt) - gwant) / fmax(1, fabs(gwant)));
        if (keep_gate == 1 && !approx) /* the erf gate, kept for backward */
            worst = fmax(worst, fabs(pf_load_f64(cdf + i * es, dt) - 0.5 * (1 + erf(xi / sqrt(2)))));
    }
    free(x), free(y), free(cdf), free(g), free(gx);
    return worst;
}

static void test_values(void) {
    const int64_t ns[] = {1, 17, 100000}; /* the last above PF_GRAIN: threaded */
    pf_set_num_threads(2);
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
            for (int approx = 0; approx < 2; approx++)
                for (int keep = 0; keep < (approx ? 2 : 3); keep++) {
                    double err = gelu_case(dt, ns[k], approx, keep);
                    CHECK(err < (dt == PF_FLOAT32 ? 2e-6 : 1e-14), "gelu %s n=%lld approximate=%d gate=%d: err %g",
                          pf_dtype_name[dt], (long long)ns[k], approx, keep, err);
                }
    pf_set_num_threads(0);
    /* the edges: gelu(0) = 0, far tails 0 and x, NaN stays NaN */
    float x[4] = {0, -30, 30, NAN}, y[4];
    CHECK_OK(pf_gelu(PF_FLOAT32, x, y, NULL, 4, 0));
    CHECK(y[0] == 0 && fabsf(y[1]) < 1e-30f && y[2] == 30 && isnan(y[3]), "gelu edges: %g %g %g %g", y[0], y[1], y[2],
          y[3]);
}

static void test_bad_input(void) {
    float x[2] = {0}, y[2];
    CHECK(pf_gelu(PF_INT64, x, y, NULL, 2, 0) == PF_ERR_TYPE, "int64 gelu");
    CHECK(pf_gelu(PF_FLOAT32, x, y, NULL, -1, 0) == PF_ERR_VALUE, "negative length");
    CHECK(pf_gelu(PF_FLOAT32, x, y, NULL, 2, 2) == PF_ERR_VALUE, "approximate 2");
    CHECK(pf_gelu(PF_FLOAT32, NULL, y, NULL, 2, 0) == PF_ERR_VALUE, "NULL input");
    CHECK(pf_gelu_backward(PF_FLOAT32, x, x, NULL, NULL, 2, 0) == PF_ERR_VALUE, "NULL gradient out");
    CHECK(pf_gelu_backward(PF_FLOAT32, x, x, NULL, y, 2, 2) == PF_ERR_VALUE, "approximate 2 without the output");
    CHECK(pf_gelu_backward(PF_FLOAT32, x, x, y, y, 2, 3) == PF_ERR_VALUE, "approximate 3");
    CHECK_OK(pf_gelu(PF_FLOAT64, NULL, NULL, NULL, 0, 1));
}

int main(void) {
    test_values();
    test_bad_input();
    return pf_test_summary("test_activation");
}
