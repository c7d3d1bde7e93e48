/* pf_optim_step: Adagrad and RMSprop against a naive double reference, threads, bad input. */
#include <stdlib.h>
#include "core.h"
#include "check.h"

#define N 100000

static void test_adagrad_reference(void) {
    static double p[N], g[N], s[N], rp[N], rs[N];
    for (int i = 0; i < N; i++) {
        p[i] = rp[i] = sin(i * 0.1);
        g[i] = cos(i * 0.3);
        s[i] = rs[i] = 0.1;
    }
    double hp[4] = {0.05, 1e-10, 0.01, 0};
    pf_set_num_threads(2);
    CHECK_OK(pf_optim_step(PF_OPTIM_ADAGRAD, PF_FLOAT64, N, p, g, s, NULL, NULL, hp, 4));
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double gi = g[i] + 0.01 * rp[i];
        rs[i] += gi * gi;
        rp[i] += -0.05 * gi / (sqrt(rs[i]) + 1e-10);
        worst = fmax(worst, fabs(rp[i] - p[i]) + fabs(rs[i] - s[i]));
    }
    CHECK(worst < 1e-15, "adagrad differs from the reference by %g", worst);
    pf_set_num_threads(0);
}

static void test_rmsprop_momentum_reference(void) {
    float p[8], g[8], sq[8], buf[8];
    double rp[8], rsq[8], rbuf[8];
    for (int i = 0; i < 8; i++) {
        p[i] = (float)(rp[i] = i * 0.25 - 1);
        g[i] = (float)(0.5 - i * 0.1);
        sq[i] = buf[i] = 0;
        rsq[i] = rbuf[i] = 0;
    }
    double hp[7] = {0.01, 0.99, 1e-8, 0, 0.9, 0, 0};
    CHECK_OK(pf_optim_step(PF_OPTIM_RMSPROP, PF_FLOAT32, 8, p, g, sq, NULL, buf, hp, 7));
    double worst = 0;
    for (int i = 0; i < 8; i++) {
        rsq[i] = 0.01 * g[i] * g[i];
        rbuf[i] = g[i] / (sqrt(rsq[i]) + 1e-8);
        rp[i] -= 0.01 * rbuf[i];
        worst = fmax(worst, fabs(rp[i] - p[i]));
    }
    CHECK(worst < 1e-6, "rmsprop (float32) differs from the reference by %g", worst);
}

static void test_bad_input(void) {
    double p[2] = {0}, g[2] = {0}, s[2] = {0}, hp[12] = {0};
    CHECK(pf_optim_step(PF_NUM_OPTIM, PF_FLOAT64, 2, p, g, s, s, s, hp, 5) == PF_ERR_VALUE, "unknown kind");
    CHECK(pf_optim_step(PF_OPTIM_ADADELTA, PF_FLOAT64, 2, p, g, s, s, NULL, hp, 4) == PF_ERR_VALUE, "hp count");
    CHECK(pf_optim_step(PF_OPTIM_ADADELTA, PF_FLOAT64, 2, p, g, s, NULL, NULL, hp, 5) == PF_ERR_VALUE, "NULL s1");
    CHECK(pf_optim_step(PF_OPTIM_RADAM, PF_INT64, 2, p, g, s, s, NULL, hp, 12) == PF_ERR_TYPE, "int64 param");
    CHECK(pf_optim_step(PF_OPTIM_RADAM, PF_FLOAT64, -1, p, g, s, s, NULL, hp, 12) == PF_ERR_VALUE, "negative n");
    hp[4] = 0.9; /* RMSprop momentum needs s2 */
    CHECK(pf_optim_step(PF_OPTIM_RMSPROP, PF_FLOAT64, 2, p, g, s, NULL, NULL, hp, 7) == PF_ERR_VALUE, "NULL s2");
    CHECK_OK(pf_optim_step(PF_OPTIM_RADAM, PF_FLOAT64, 0, NULL, NULL, NULL, NULL, NULL, hp, 12));
}

int main(void) {
    test_adagrad_reference();
    test_rmsprop_momentum_reference();
    test_bad_input();
    return pf_test_summary("test_optim_adaptive");
}
