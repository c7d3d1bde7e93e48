/* optim.c against scalar references written straight from torch.optim's update rules: SGD and
 * Adam/AdamW over a few steps for every flag combination, float32 and float64, serial and threaded
 * lengths; a group's Adam step in one call, step counts included; Adagrad and RMSprop against a
 * naive double reference; argument errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

/* SGD's and Adam's scalars in hp order */
static int sgd_step(int dt, void *p, const void *g, void *buf, int64_t n, double lr, double mom, double damp,
                    double wd, int nesterov, int maximize, int first) {
    double hp[7] = {lr, mom, damp, wd, nesterov, maximize, first};
    return pf_optim_step(PF_OPTIM_SGD, dt, n, p, g, buf, NULL, NULL, hp, 7);
}

static int adam_step(int dt, void *p, const void *g, void *m, void *v, void *vmax, int64_t n, int64_t step,
                     double lr, double b1, double b2, double eps, double wd, int amsgrad, int decoupled, int maximize) {
    double hp[9] = {lr, b1, b2, eps, wd, amsgrad, decoupled, maximize, (double)step};
    return pf_optim_step(PF_OPTIM_ADAM, dt, n, p, g, m, v, vmax, hp, 9);
}

/* the gradient of element i at step s: varied signs and magnitudes, some exact zeros */
static double grad_at(int64_t i, int s) { return (i % 7 == 3) ? 0.0 : sin(0.37 * (double)i + 1.3 * s) * (1 + i % 5); }
static double param_at(int64_t i) { return cos(0.11 * (double)i) * 2.0 - 0.5; }

#define REFS(T, SFX)                                                                                   \
    static void sgd_ref_##SFX(T *p, const T *g, T *buf, int64_t n, double lr, double mom, double damp,  \
                              double wd, int nesterov, int maximize, int first) {                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            T d = maximize ? -g[i] : g[i];                                                             \
            if (wd != 0) d = d + (T)wd * p[i];                                                         \
            if (mom != 0) {                                                                            \
                if (first) buf[i] = d;                                                                 \
                else {                                                                                 \
                    buf[i] = buf[i] * (T)mom;                                                          \
                    buf[i] = buf[i] + (T)(1 - damp) * d;                                               \
                }                                                                                      \
                d = nesterov ? d + (T)mom * buf[i] : buf[i];                                           \
            }                                                                                          \
            p[i] = p[i] + (T)(-lr) * d;                                                                \
        }                                                                                              \
    }                                                                                                  \
    static void adam_ref_##SFX(T *p, const T *g, T *m, T *v, T *vmax, int64_t n, int64_t step,         \
                               double lr, double b1, double b2, double eps, double wd, int amsgrad,    \
                               int decoupled, int maximize) {                                          \
        double bc1 = 1 - pow(b1, (double)step), bc2 = 1 - pow(b2, (double)step);                        \
        double step_size = lr / bc1, bc2_sqrt = pow(bc2, 0.5);                                         \
        T w = (T)(1 - b1);                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                              \
            T d = maximize ? -g[i] : g[i];                                                             \
            if (wd != 0) {                                                                             \
                if (decoupled) p[i] = p[i] * (T)(1 - lr * wd);                                         \
                else d = d + (T)wd * p[i];                                                             \
            }                                                                                          \
            m[i] = fabs((double)w) < 0.5 ? m[i] + w * (d - m[i]) : d - (d - m[i]) * ((T)1 - w);        \
            v[i] = v[i] * (T)b2;                                                                       \
            v[i] = v[i] + (T)(1 - b2) * d * d;                                                         \
            T s = v[i];                                                                                \
            if (amsgrad) {                                                                             \
                if (isnan(vmax[i]) || isnan(v[i])) vmax[i] = NAN;                                      \
                else if (v[i] > vmax[i]) vmax[i] = v[i];                                               \
                s = vmax[i];                                                                           \
            }                                                                                          \
            T denom = (T)sqrt((double)s) / (T)bc2_sqrt + (T)eps;                                       \
            p[i] = p[i] + (T)(-step_size) * m[i] / denom;                                              \
        }                                                                                              \
    }                                                                                                  \
    static double maxrel_##SFX(const T *a, const T *b, int64_t n) {                                    \
        double worst = 0;                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                              \
            if (isnan((double)a[i]) || isnan((double)b[i])) {                                          \
                if (!(isnan((double)a[i]) && isnan((double)b[i]))) return INFINITY;                    \
                continue;                                                                              \
            }                                                                                          \
            double e = fabs((double)a[i] - (double)b[i]) / (1 + fabs((double)b[i]));                   \
            if (e > worst) worst = e;                                                                  \
        }                                                                                              \
        return worst;                                                                                  \
    }
REFS(float, f32)
REFS(double, f64)

enum { STEPS = 5 };
static const int64_t sizes[] = {1, 37, 70001}; /* the last is above PF_GRAIN: threaded */

#define SGD_CASE(T, SFX, DT, TOL)                                                                        \
    static int sgd_case_##SFX(int64_t n, double mom, double damp, double wd, int nest, int maxim) {      \
        T *p = malloc(n * sizeof(T)), *rp = malloc(n * sizeof(T)), *g = malloc(n * sizeof(T));           \
        T *buf = malloc(n * sizeof(T)), *rbuf = malloc(n * sizeof(T));                                   \
        for (int64_t i = 0; i < n; i++) p[i] = rp[i] = (T)param_at(i);                                   \
        int bad = 0;                                                                                     \
        for (int s = 0; s < STEPS; s++) {                                                                \
            for (int64_t i = 0; i < n; i++) g[i] = (T)grad_at(i, s);                                     \
            int rc = sgd_step(DT, p, g, mom != 0 ? buf : NULL, n, 0.1, mom, damp, wd, nest, maxim, s == 0);     \
            if (rc != PF_OK) { bad = 1; break; }                                                         \
            sgd_ref_##SFX(rp, g, rbuf, n, 0.1, mom, damp, wd, nest, maxim, s == 0);                      \
            if (maxrel_##SFX(p, rp, n) > TOL || (mom != 0 && maxrel_##SFX(buf, rbuf, n) > TOL)) bad = 1;  \
        }                                                                                                \
        free(p); free(rp); free(g); free(buf); free(rbuf);                                               \
        return bad;                                                                                      \
    }
SGD_CASE(float, f32, PF_FLOAT32, 1e-6)
SGD_CASE(double, f64, PF_FLOAT64, 1e-14)

#define ADAM_CASE(T, SFX, DT, TOL)                                                                       \
    static int adam_case_##SFX(int64_t n, double b1, double wd, int ams, int dec, int maxim) {           \
        size_t sz = n * sizeof(T);                                                                       \
        T *p = malloc(sz), *rp = malloc(sz), *g = malloc(sz), *m = calloc(n, sizeof(T));                 \
        T *v = calloc(n, sizeof(T)), *vm = calloc(n, sizeof(T)), *rm = calloc(n, sizeof(T));             \
        T *rv = calloc(n, sizeof(T)), *rvm = calloc(n, sizeof(T));                                       \
        for (int64_t i = 0; i < n; i++) p[i] = rp[i] = (T)param_at(i);                                   \
        int bad = 0;                                                                                     \
        for (int s = 1; s <= STEPS; s++) {                                                               \
            for (int64_t i = 0; i < n; i++) g[i] = (T)grad_at(i, s);                                     \
            int rc = adam_step(DT, p, g, m, v, ams ? vm : NULL, n, s, 0.01, b1, 0.999, 1e-8, wd, ams,   \
                               dec, maxim);                                                              \
            if (rc != PF_OK) { bad = 1; break; }                                                         \
            adam_ref_##SFX(rp, g, rm, rv, rvm, n, s, 0.01, b1, 0.999, 1e-8, wd, ams, dec, maxim);        \
            if (maxrel_##SFX(p, rp, n) > TOL || maxrel_##SFX(m, rm, n) > TOL || maxrel_##SFX(v, rv, n) > TOL \
                || (ams && maxrel_##SFX(vm, rvm, n) > TOL))                                              \
                bad = 1;                                                                                 \
        }                                                                                                \
        free(p); free(rp); free(g); free(m); free(v); free(vm); free(rm); free(rv); free(rvm);           \
        return bad;                                                                                      \
    }
ADAM_CASE(float, f32, PF_FLOAT32, 1e-6)
ADAM_CASE(double, f64, PF_FLOAT64, 1e-14)

static void test_sgd(void) {
    const double moms[] = {0, 0.9}, damps[] = {0, 0.3}, wds[] = {0, 0.05};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int f = 0; f < 32; f++) { /* every combination: bit i of f is option i */
            int a = f & 1, b = f >> 1 & 1, c = f >> 2 & 1, nest = f >> 3 & 1, maxim = f >> 4 & 1;
            int64_t n = sizes[k];
            CHECK(!sgd_case_f32(n, moms[a], damps[b], wds[c], nest, maxim) &&
                      !sgd_case_f64(n, moms[a], damps[b], wds[c], nest, maxim),
                  "sgd n=%lld momentum=%g dampening=%g wd=%g nesterov=%d maximize=%d", (long long)n, moms[a], damps[b],
                  wds[c], nest, maxim);
        }
}

static void test_adam(void) {
    /* beta1 = 0.3 takes lerp's large-weight branch */
    const double b1s[] = {0.9, 0.3}, wds[] = {0, 0.1};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int f = 0; f < 32; f++) { /* every combination: bit i of f is option i */
            int a = f & 1, b = f >> 1 & 1, ams = f >> 2 & 1, dec = f >> 3 & 1, maxim = f >> 4 & 1;
            int64_t n = sizes[k];
            CHECK(!adam_case_f32(n, b1s[a], wds[b], ams, dec, maxim) && !adam_case_f64(n, b1s[a], wds[b], ams, dec, maxim),
                  "adam n=%lld beta1=%g wd=%g amsgrad=%d decoupled=%d maximize=%d", (long long)n, b1s[a], wds[b], ams,
                  dec, maxim);
        }
}

static void test_known_values(void) {
    /* one Adam step moves every element by lr against the gradient's sign (eps aside) */
    double p[3] = {1, 2, 3}, g[3] = {0.5, -2, 1e-3}, m[3] = {0}, v[3] = {0};
    CHECK_OK(adam_step(PF_FLOAT64, p, g, m, v, NULL, 3, 1, 0.1, 0.9, 0.999, 0, 0, 0, 0, 0));
    CHECK(fabs(p[0] - 0.9) < 1e-12 && fabs(p[1] - 2.1) < 1e-12 && fabs(p[2] - 2.9) < 1e-12, "adam step 1: %g %g %g",
          p[0], p[1], p[2]);
    /* plain SGD: p - lr g */
    float q[2] = {1, -1}, h[2] = {2, 4};
    CHECK_OK(sgd_step(PF_FLOAT32, q, h, NULL, 2, 0.5, 0, 0, 0, 0, 0, 0));
    CHECK(q[0] == 0.0f && q[1] == -3.0f, "sgd: %g %g", q[0], q[1]);
    /* amsgrad keeps the running maximum and propagates NaN as torch.maximum */
    double p2[2] = {0, 0}, g2[2] = {1, NAN}, m2[2] = {0}, v2[2] = {0}, vm2[2] = {5, 0};
    CHECK_OK(adam_step(PF_FLOAT64, p2, g2, m2, v2, vm2, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0));
    CHECK(vm2[0] == 5 && isnan(vm2[1]) && isnan(p2[1]), "amsgrad max: %g %g", vm2[0], vm2[1]);
}

static void test_errors(void) {
    double p[2] = {0}, g[2] = {0}, m[2] = {0}, v[2] = {0};
    int64_t ip[2] = {0};
    CHECK(sgd_step(PF_INT64, ip, ip, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "int64 sgd");
    CHECK(strstr(pf_last_error(), "int64") != NULL, "%s", pf_last_error());
    CHECK(sgd_step(PF_FLOAT16, p, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "float16 sgd");
    CHECK(sgd_step(99, p, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "unknown dtype");
    CHECK(sgd_step(PF_FLOAT64, p, g, NULL, -1, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "negative n");
    CHECK(sgd_step(PF_FLOAT64, NULL, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "NULL param");
    CHECK(sgd_step(PF_FLOAT64, p, NULL, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "NULL grad");
    CHECK(sgd_step(PF_FLOAT64, p, g, NULL, 2, 0.1, 0.9, 0, 0, 0, 0, 1) == PF_ERR_VALUE, "momentum without buffer");
    CHECK_OK(sgd_step(PF_FLOAT64, NULL, NULL, NULL, 0, 0.1, 0.9, 0, 0, 0, 0, 1));
    CHECK(adam_step(PF_INT32, p, g, m, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_TYPE, "int32");
    CHECK(adam_step(PF_FLOAT64, p, g, m, v, NULL, -3, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE, "n<0");
    CHECK(adam_step(PF_FLOAT64, p, g, m, v, NULL, 2, 0, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE,
          "step 0");
    CHECK(adam_step(PF_FLOAT64, p, g, NULL, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE,
          "NULL exp_avg");
    CHECK(adam_step(PF_FLOAT64, p, g, m, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0) == PF_ERR_VALUE,
          "amsgrad without buffer");
    CHECK(strstr(pf_last_error(), "max_exp_avg_sq") != NULL, "%s", pf_last_error());
    CHECK_OK(adam_step(PF_FLOAT32, NULL, NULL, NULL, NULL, NULL, 0, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0));
}

/* pf_optim_steps: Adam over two parameters in one call equals two pf_optim_step calls at the
 * incremented steps; a bad parameter anywhere leaves everything as it was */
static void test_group(void) {
    double p[2][3] = {{1, 2, 3}, {-1, 0.5, 4}}, q[2][3], g[2][3] = {{0.5, -2, 1e-3}, {3, -1, 0.25}};
    double m[2][3] = {{0}}, v[2][3] = {{0}}, mq[2][3] = {{0}}, vq[2][3] = {{0}};
    float t0 = 4, t1 = 0;
    memcpy(q, p, sizeof p);
    void *ps[2] = {p[0], p[1]}, *ms[2] = {m[0], m[1]}, *vs[2] = {v[0], v[1]};
    const void *gs[2] = {g[0], g[1]};
    int64_t ns[2] = {3, 3};
    float *steps[2] = {&t0, &t1};
    double hp[9] = {0.1, 0.9, 0.999, 1e-8, 0.01, 0, 1, 0, -1}; /* AdamW; the step is filled in per parameter */
    CHECK_OK(pf_optim_steps(PF_OPTIM_ADAM, PF_FLOAT64, 2, ps, gs, ms, vs, NULL, ns, steps, hp, 9));
    CHECK(t0 == 5 && t1 == 1, "steps %g %g", (double)t0, (double)t1);
    CHECK_OK(adam_step(PF_FLOAT64, q[0], g[0], mq[0], vq[0], NULL, 3, 5, 0.1, 0.9, 0.999, 1e-8, 0.01, 0, 1, 0));
    CHECK_OK(adam_step(PF_FLOAT64, q[1], g[1], mq[1], vq[1], NULL, 3, 1, 0.1, 0.9, 0.999, 1e-8, 0.01, 0, 1, 0));
    CHECK(!memcmp(p, q, sizeof p) && !memcmp(m, mq, sizeof m) && !memcmp(v, vq, sizeof v), "group != one by one");
    ns[1] = -1;
    CHECK(pf_optim_steps(PF_OPTIM_ADAM, PF_FLOAT64, 2, ps, gs, ms, vs, NULL, ns, steps, hp, 9) == PF_ERR_VALUE,
          "negative size");
    CHECK(t0 == 5 && !memcmp(p, q, sizeof p), "a failed call changed something");
    ns[1] = 3;
    CHECK(pf_optim_steps(PF_OPTIM_SGD, PF_FLOAT64, 2, ps, gs, ms, NULL, NULL, ns, steps, hp, 7) == PF_ERR_VALUE,
          "steps for sgd");
    CHECK(pf_optim_steps(PF_OPTIM_ADAM, PF_FLOAT64, 2, ps, gs, ms, vs, NULL, ns, steps, hp, 8) == PF_ERR_VALUE,
          "hp count");
}

#define NA 100000

static void test_adagrad_reference(void) {
    static double p[NA], g[NA], s[NA], rp[NA], rs[NA];
    for (int i = 0; i < NA; i++) {
        p[i] = rp[i] = sin(i * 0.1);
        g[i] = cos(i * 0.3);
        s[i] = rs[i] = 0.1;
    }
    double hp[4] = {0.05, 1e-10, 0.01, 0};
    pf_set_num_threads(2);
    CHECK_OK(pf_optim_step(PF_OPTIM_ADAGRAD, PF_FLOAT64, NA, p, g, s, NULL, NULL, hp, 4));
    double worst = 0;
    for (int i = 0; i < NA; i++) {
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

/* ASGD and Rprop against their update written out for two elements */
static void test_asgd_rprop_reference(void) {
    /* ASGD: decay 0.9, eta 0.1, weight_decay 0.5, mu 0.25: g' = g + 0.5 p, p' = 0.9 p - 0.1 g',
     * ax' = ax + (p' - ax) * 0.25 */
    double p[2] = {1.0, -2.0}, g[2] = {0.5, 1.0}, ax[2] = {0.0, 4.0};
    double hp[6] = {0.9, -0.1, 0.5, 0, 0.25, 0};
    CHECK_OK(pf_optim_step(PF_OPTIM_ASGD, PF_FLOAT64, 2, p, g, ax, NULL, NULL, hp, 6));
    CHECK(p[0] == 0.9 - 0.1 && p[1] == -1.8 - 0.1 * (1.0 - 1.0), "asgd p %g %g", p[0], p[1]);
    CHECK(ax[0] == (0.9 - 0.1) * 0.25 && ax[1] == 4.0 + (p[1] - 4.0) * 0.25, "asgd ax %g %g", ax[0], ax[1]);
    /* Rprop: etas (0.5, 1.2), sizes in [0.01, 1]: a sign kept grows the step, a flip shrinks it and
     * skips the update (prev becomes 0) */
    double q[2] = {1.0, 1.0}, h[2] = {2.0, -3.0}, prev[2] = {1.0, 1.0}, size[2] = {0.5, 0.5};
    double hr[5] = {0.5, 1.2, 0.01, 1.0, 0};
    CHECK_OK(pf_optim_step(PF_OPTIM_RPROP, PF_FLOAT64, 2, q, h, prev, size, NULL, hr, 5));
    CHECK(size[0] == 0.5 * 1.2 && size[1] == 0.25, "rprop sizes %g %g", size[0], size[1]);
    CHECK(q[0] == 1.0 - 0.6 && q[1] == 1.0, "rprop p %g %g", q[0], q[1]);
    CHECK(prev[0] == 2.0 && prev[1] == 0.0, "rprop prev %g %g", prev[0], prev[1]);
}

int main(void) {
    test_sgd();
    test_adam();
    test_known_values();
    test_errors();
    test_group();
    test_adagrad_reference();
    test_rmsprop_momentum_reference();
    test_bad_input();
    test_asgd_rprop_reference();
    return pf_test_summary("test_optim");
}
