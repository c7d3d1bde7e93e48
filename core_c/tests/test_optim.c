/* optim.c against scalar references written straight from torch.optim's update rules:
 * SGD and Adam/AdamW over a few steps for every flag combination, float32 and float64,
 * serial and threaded lengths, and argument errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

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
            int rc = pf_sgd_step(DT, p, g, mom != 0 ? buf : NULL, n, 0.1, mom, damp, wd, nest, maxim, s == 0); \
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
            int rc = pf_adam_step(DT, p, g, m, v, ams ? vm : NULL, n, s, 0.01, b1, 0.999, 1e-8, wd, ams,  \
                                  dec, maxim);                                                           \
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
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int c = 0; c < 2; c++)
                    for (int nest = 0; nest < 2; nest++)
                        for (int maxim = 0; maxim < 2; maxim++) {
                            int64_t n = sizes[k];
                            CHECK(!sgd_case_f32(n, moms[a], damps[b], wds[c], nest, maxim),
                                  "sgd f32 n=%lld momentum=%g dampening=%g wd=%g nesterov=%d maximize=%d",
                                  (long long)n, moms[a], damps[b], wds[c], nest, maxim);
                            CHECK(!sgd_case_f64(n, moms[a], damps[b], wds[c], nest, maxim),
                                  "sgd f64 n=%lld momentum=%g dampening=%g wd=%g nesterov=%d maximize=%d",
                                  (long long)n, moms[a], damps[b], wds[c], nest, maxim);
                        }
}

static void test_adam(void) {
    /* beta1 = 0.3 takes lerp's large-weight branch */
    const double b1s[] = {0.9, 0.3}, wds[] = {0, 0.1};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int ams = 0; ams < 2; ams++)
                    for (int dec = 0; dec < 2; dec++)
                        for (int maxim = 0; maxim < 2; maxim++) {
                            int64_t n = sizes[k];
                            CHECK(!adam_case_f32(n, b1s[a], wds[b], ams, dec, maxim),
                                  "adam f32 n=%lld beta1=%g wd=%g amsgrad=%d decoupled=%d maximize=%d",
                                  (long long)n, b1s[a], wds[b], ams, dec, maxim);
                            CHECK(!adam_case_f64(n, b1s[a], wds[b], ams, dec, maxim),
                                  "adam f64 n=%lld beta1=%g wd=%g amsgrad=%d decoupled=%d maximize=%d",
                                  (long long)n, b1s[a], wds[b], ams, dec, maxim);
                        }
}

static void test_known_values(void) {
    /* one Adam step moves every element by lr against the gradient's sign (eps aside) */
    double p[3] = {1, 2, 3}, g[3] = {0.5, -2, 1e-3}, m[3] = {0}, v[3] = {0};
    CHECK_OK(pf_adam_step(PF_FLOAT64, p, g, m, v, NULL, 3, 1, 0.1, 0.9, 0.999, 0, 0, 0, 0, 0));
    CHECK(fabs(p[0] - 0.9) < 1e-12 && fabs(p[1] - 2.1) < 1e-12 && fabs(p[2] - 2.9) < 1e-12, "adam step 1: %g %g %g",
          p[0], p[1], p[2]);
    /* plain SGD: p - lr g */
    float q[2] = {1, -1}, h[2] = {2, 4};
    CHECK_OK(pf_sgd_step(PF_FLOAT32, q, h, NULL, 2, 0.5, 0, 0, 0, 0, 0, 0));
    CHECK(q[0] == 0.0f && q[1] == -3.0f, "sgd: %g %g", q[0], q[1]);
    /* amsgrad keeps the running maximum and propagates NaN as torch.maximum */
    double p2[2] = {0, 0}, g2[2] = {1, NAN}, m2[2] = {0}, v2[2] = {0}, vm2[2] = {5, 0};
    CHECK_OK(pf_adam_step(PF_FLOAT64, p2, g2, m2, v2, vm2, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0));
    CHECK(vm2[0] == 5 && isnan(vm2[1]) && isnan(p2[1]), "amsgrad max: %g %g", vm2[0], vm2[1]);
}

static void test_errors(void) {
    double p[2] = {0}, g[2] = {0}, m[2] = {0}, v[2] = {0};
    int64_t ip[2] = {0};
    CHECK(pf_sgd_step(PF_INT64, ip, ip, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "int64 sgd");
    CHECK(strstr(pf_last_error(), "int64") != NULL, "%s", pf_last_error());
    CHECK(pf_sgd_step(PF_FLOAT16, p, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "float16 sgd");
    CHECK(pf_sgd_step(99, p, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_TYPE, "unknown dtype");
    CHECK(pf_sgd_step(PF_FLOAT64, p, g, NULL, -1, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "negative n");
    CHECK(pf_sgd_step(PF_FLOAT64, NULL, g, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "NULL param");
    CHECK(pf_sgd_step(PF_FLOAT64, p, NULL, NULL, 2, 0.1, 0, 0, 0, 0, 0, 0) == PF_ERR_VALUE, "NULL grad");
    CHECK(pf_sgd_step(PF_FLOAT64, p, g, NULL, 2, 0.1, 0.9, 0, 0, 0, 0, 1) == PF_ERR_VALUE, "momentum without buffer");
    CHECK_OK(pf_sgd_step(PF_FLOAT64, NULL, NULL, NULL, 0, 0.1, 0.9, 0, 0, 0, 0, 1));
    CHECK(pf_adam_step(PF_INT32, p, g, m, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_TYPE, "int32");
    CHECK(pf_adam_step(PF_FLOAT64, p, g, m, v, NULL, -3, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE, "n<0");
    CHECK(pf_adam_step(PF_FLOAT64, p, g, m, v, NULL, 2, 0, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE,
          "step 0");
    CHECK(pf_adam_step(PF_FLOAT64, p, g, NULL, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0, 0) == PF_ERR_VALUE,
          "NULL exp_avg");
    CHECK(pf_adam_step(PF_FLOAT64, p, g, m, v, NULL, 2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0) == PF_ERR_VALUE,
          "amsgrad without buffer");
    CHECK(strstr(pf_last_error(), "max_exp_avg_sq") != NULL, "%s", pf_last_error());
    CHECK_OK(pf_adam_step(PF_FLOAT32, NULL, NULL, NULL, NULL, NULL, 0, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1, 0, 0));
}

int main(void) {
    test_sgd();
    test_adam();
    test_known_values();
    test_errors();
    return pf_test_summary("test_optim");
}
