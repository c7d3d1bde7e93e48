/* activation.c: GELU forward and backward, erf and tanh forms, float32 and float64, with and
 * without the saved gate, serial and threaded lengths, against double references; the other
 * activations' gradients against central differences of their unary forwards; bad input. */
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

/* pf_activation_backward against (f(x + h) - f(x - h)) / 2h of the unary forward, in float64 at a threaded
 * length, away from the kinks (0, +-3, softplus' threshold); then float32 against float64 */
static void test_activation_gradients(void) {
    enum { N = 70000 };
    const double h = 1e-6;
    struct { int op; double p0, p1; } acts[] = {
        {PF_LEAKY_RELU, 0.2, 0}, {PF_ELU, 0.7, 1}, {PF_ELU, 1.5, 1 / 1.5}, {PF_SELU, 0, 0}, {PF_SOFTPLUS, 1, 20},
        {PF_SOFTPLUS, 2, 5}, {PF_MISH, 0, 0}, {PF_SILU, 0, 0}, {PF_HARDSIGMOID, 0, 0}, {PF_HARDSWISH, 0, 0}};
    double *x = malloc(N * 8), *xp = malloc(N * 8), *xm = malloc(N * 8), *yp = malloc(N * 8), *ym = malloc(N * 8);
    double *g = malloc(N * 8), *gx = malloc(N * 8);
    float *xf = malloc(N * 4), *gf = malloc(N * 4), *gxf = malloc(N * 4);
    unsigned seed = 9;
    for (int i = 0; i < N; i++) {
        x[i] = 12 * frand(&seed), g[i] = frand(&seed);
        xp[i] = x[i] + h, xm[i] = x[i] - h, xf[i] = (float)x[i], gf[i] = (float)g[i];
    }
    int64_t shape[1] = {N};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        pf_tensor tp = pf_make(xp, PF_FLOAT64, 1, shape), tm = pf_make(xm, PF_FLOAT64, 1, shape);
        pf_tensor typ = pf_make(yp, PF_FLOAT64, 1, shape), tym = pf_make(ym, PF_FLOAT64, 1, shape);
        CHECK_OK(pf_unary(acts[a].op, &tp, &typ, acts[a].p0, acts[a].p1));
        CHECK_OK(pf_unary(acts[a].op, &tm, &tym, acts[a].p0, acts[a].p1));
        CHECK_OK(pf_activation_backward(acts[a].op, PF_FLOAT64, g, x, gx, N, acts[a].p0, acts[a].p1));
        CHECK_OK(pf_activation_backward(acts[a].op, PF_FLOAT32, gf, xf, gxf, N, acts[a].p0, acts[a].p1));
        double worst = 0, worst32 = 0;
        for (int i = 0; i < N; i++) {
            double ax = fabs(x[i]), bx = x[i] * acts[a].p0;
            if (ax < 1e-3 || fabs(ax - 3) < 1e-3 || (acts[a].op == PF_SOFTPLUS && fabs(bx - acts[a].p1) < 1e-3))
                continue;
            double fd = g[i] * (yp[i] - ym[i]) / (2 * h), err = fabs(gx[i] - fd) / fmax(1, fabs(fd));
            double err32 = fabs(gxf[i] - gx[i]) / fmax(1, fabs(gx[i]));
            worst = err > worst ? err : worst;
            worst32 = err32 > worst32 ? err32 : worst32;
        }
        CHECK(worst < 1e-6, "activation %d (p0 %g): gradient off its central difference by %g", acts[a].op,
              acts[a].p0, worst);
        CHECK(worst32 < 1e-5, "activation %d (p0 %g): float32 gradient off float64's by %g", acts[a].op, acts[a].p0,
              worst32);
    }
    float one = 1, out;
    CHECK(pf_activation_backward(PF_EXP, PF_FLOAT32, &one, &one, &out, 1, 0, 0) == PF_ERR_VALUE, "not an activation");
    CHECK(pf_activation_backward(PF_SILU, PF_INT64, &one, &one, &out, 1, 0, 0) == PF_ERR_TYPE, "int64 silu");
    CHECK(pf_activation_backward(PF_SILU, PF_FLOAT32, &one, NULL, &out, 1, 0, 0) == PF_ERR_VALUE, "NULL input");
    CHECK(pf_activation_backward(PF_SILU, PF_FLOAT32, &one, &one, &out, -1, 0, 0) == PF_ERR_VALUE, "negative length");
    free(x), free(xp), free(xm), free(yp), free(ym), free(g), free(gx), free(xf), free(gf), free(gxf);
}

int main(void) {
    test_values();
    test_activation_gradients();
    test_bad_input();
    return pf_test_summary("test_activation");
}
