/* loss.c: cross-entropy forward (row losses, log-sum-exp, the two sums) and backward against a
 * double reference, with and without class weights, ignored rows, serial and threaded sizes;
 * bad input. */
#include <math.h>
#include <stdlib.h>
#include "core.h"
#include "check.h"

enum { IGNORE = -100 };

/* worst relative error of every output over one case; targets cycle, every 5th row ignored */
static double ce_case(int dt, int64_t n, int64_t c, int weighted, int per_row_scale) {
    size_t es = pf_dtype_size[dt];
    char *x = malloc(n * c * es), *w = malloc(c * es), *loss = malloc(n * es), *lse = malloc(n * es);
    char *gx = malloc(n * c * es), *gs = malloc(n * es);
    int64_t *t = malloc(n * sizeof *t);
    unsigned seed = 9;
    for (int64_t i = 0; i < n * c; i++) pf_store_f64(x + i * es, dt, 4 * frand(&seed));
    for (int64_t j = 0; j < c; j++) pf_store_f64(w + j * es, dt, 1.5 + frand(&seed));
    for (int64_t i = 0; i < n; i++) {
        t[i] = i % 5 == 4 ? IGNORE : (i * 7) % c;
        pf_store_f64(gs + i * es, dt, frand(&seed));
    }
    double sums[2], worst = 0, s = 0, ws = 0;
    const void *wp = weighted ? w : NULL;
    CHECK_OK(pf_cross_entropy(dt, x, t, wp, n, c, IGNORE, loss, lse, sums));
    CHECK_OK(pf_cross_entropy_backward(dt, x, t, wp, lse, per_row_scale ? gs : NULL, 0.25, n, c, IGNORE, gx));
    for (int64_t i = 0; i < n; i++) {
        double m = -INFINITY, z = 0;
        for (int64_t j = 0; j < c; j++) m = fmax(m, pf_load_f64(x + (i * c + j) * es, dt));
        for (int64_t j = 0; j < c; j++) z += exp(pf_load_f64(x + (i * c + j) * es, dt) - m);
        double l = m + log(z), wt = t[i] == IGNORE ? 0 : weighted ? pf_load_f64(w + t[i] * es, dt) : 1;
        double li = t[i] == IGNORE ? 0 : wt * (l - pf_load_f64(x + (i * c + t[i]) * es, dt));
        double k = (per_row_scale ? pf_load_f64(gs + i * es, dt) : 0.25) * wt;
        s += li, ws += wt;
        worst = fmax(worst, fabs(pf_load_f64(loss + i * es, dt) - li) / fmax(1, fabs(li)));
        worst = fmax(worst, fabs(pf_load_f64(lse + i * es, dt) - l) / fmax(1, fabs(l)));
        for (int64_t j = 0; j < c; j++) {
            double p = exp(pf_load_f64(x + (i * c + j) * es, dt) - l), want = k * (p - (j == t[i]));
            worst = fmax(worst, fabs(pf_load_f64(gx + (i * c + j) * es, dt) - want));
        }
    }
    worst = fmax(worst, fabs(sums[0] - s) / fmax(1, fabs(s)) + fabs(sums[1] - ws) / fmax(1, ws));
    free(x), free(w), free(loss), free(lse), free(gx), free(gs), free(t);
    return worst;
}

static void test_values(void) {
    const int64_t shapes[][2] = {{1, 1}, {7, 3}, {40, 17}, {2000, 50}}; /* the last threaded */
    pf_set_num_threads(2);
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt++)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            for (int f = 0; f < 4; f++) {
                double err = ce_case(dt, shapes[k][0], shapes[k][1], f & 1, f >> 1);
                CHECK(err < (dt == PF_FLOAT32 ? 1e-5 : 1e-13), "cross_entropy %s [%lld, %lld] weighted=%d scale=%d: %g",
                      pf_dtype_name[dt], (long long)shapes[k][0], (long long)shapes[k][1], f & 1, f >> 1, err);
            }
    pf_set_num_threads(0);
    /* a row of -inf but its target, and a large logit: no overflow, exact zeros */
    double x[3] = {-INFINITY, 1000, -INFINITY}, loss, lse, sums[2], gx[3];
    int64_t t = 1;
    CHECK_OK(pf_cross_entropy(PF_FLOAT64, x, &t, NULL, 1, 3, IGNORE, &loss, &lse, sums));
    CHECK_OK(pf_cross_entropy_backward(PF_FLOAT64, x, &t, NULL, &lse, NULL, 1, 1, 3, IGNORE, gx));
    CHECK(loss == 0 && lse == 1000 && gx[0] == 0 && gx[1] == 0 && gx[2] == 0, "loss %g lse %g grad %g %g %g", loss,
          lse, gx[0], gx[1], gx[2]);
}

static void test_bad_input(void) {
    float x[6] = {0}, loss[2], lse[2];
    double sums[2];
    int64_t t[2] = {0, 3};
    CHECK(pf_cross_entropy(PF_FLOAT32, x, t, NULL, 2, 3, IGNORE, loss, lse, sums) == PF_ERR_INDEX, "target 3 of 3");
    t[1] = -1;
    CHECK(pf_cross_entropy(PF_FLOAT32, x, t, NULL, 2, 3, IGNORE, loss, lse, sums) == PF_ERR_INDEX, "target -1");
    t[1] = IGNORE;
    CHECK_OK(pf_cross_entropy(PF_FLOAT32, x, t, NULL, 2, 3, IGNORE, loss, lse, sums));
    CHECK(sums[1] == 1 && loss[1] == 0, "an ignored row counts nothing: %g %g", sums[1], loss[1]);
    CHECK(pf_cross_entropy(PF_INT32, x, t, NULL, 2, 3, IGNORE, loss, lse, sums) == PF_ERR_TYPE, "int32 logits");
    CHECK(pf_cross_entropy(PF_FLOAT32, x, t, NULL, 2, 0, IGNORE, loss, lse, sums) == PF_ERR_VALUE, "no classes");
    CHECK(pf_cross_entropy(PF_FLOAT32, x, t, NULL, 2, 3, IGNORE, loss, lse, NULL) == PF_ERR_VALUE, "NULL sums");
    CHECK(pf_cross_entropy_backward(PF_FLOAT32, x, t, NULL, NULL, NULL, 1, 2, 3, IGNORE, x) == PF_ERR_VALUE, "NULL lse");
}

int main(void) {
    test_values();
    test_bad_input();
    return pf_test_summary("test_loss");
}
