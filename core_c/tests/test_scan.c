/* scan.c: cumsum and cumprod along each dim against naive loops, plus the error paths. */
#include "core.h"
#include "check.h"

static unsigned seed = 777;

static void test_scan(void) {
    int64_t shape[3] = {3, 4, 5};
    float x[60], out[60];
    int64_t ix[60], iout[60];
    for (int i = 0; i < 60; i++) {
        x[i] = (float)(int)((frand(&seed) + 1) * 2.5) - 2;
        ix[i] = (int64_t)x[i];
    }
    for (int dim = 0; dim < 3; dim++) {
        pf_tensor tx = pf_make(x, PF_FLOAT32, 3, shape), to = pf_make(out, PF_FLOAT32, 3, shape);
        pf_tensor ti = pf_make(ix, PF_INT64, 3, shape), tio = pf_make(iout, PF_INT64, 3, shape);
        CHECK_OK(pf_scan(PF_SCAN_SUM, &tx, dim, &to));
        CHECK_OK(pf_scan(PF_SCAN_PROD, &ti, dim, &tio));
        int64_t stride = dim == 0 ? 20 : dim == 1 ? 5 : 1;
        int bad = 0;
        for (int i = 0; i < 60; i++) {
            int64_t j = (i / stride) % shape[dim];
            double s = 0;
            int64_t p = 1;
            for (int64_t q = 0; q <= j; q++) {
                s += x[i - (j - q) * stride];
                p *= ix[i - (j - q) * stride];
            }
            bad += out[i] != (float)s || iout[i] != p;
        }
        CHECK(bad == 0, "scan along dim %d: %d mismatches", dim, bad);
    }
    pf_tensor tx = pf_make(x, PF_FLOAT32, 3, shape), to = pf_make(out, PF_FLOAT32, 3, shape);
    CHECK(pf_scan(7, &tx, 0, &to) == PF_ERR_VALUE, "unknown op must fail");
    CHECK(pf_scan(PF_SCAN_SUM, &tx, 3, &to) == PF_ERR_INDEX, "bad dim must fail");
}

/* cummax / cummin against a naive running extreme (ties take over, as torch), logcumsumexp against log(cumsum(exp)) */
static void test_extreme_and_logsumexp(void) {
    int64_t shape[2] = {4, 33};
    double x[132], v[132], lse[132];
    int64_t ix[132];
    for (int i = 0; i < 132; i++) x[i] = (double)(int)(frand(&seed) * 3);
    for (int largest = 0; largest < 2; largest++) {
        pf_tensor tx = pf_make(x, PF_FLOAT64, 2, shape), tv = pf_make(v, PF_FLOAT64, 2, shape);
        pf_tensor ti = pf_make(ix, PF_INT64, 2, shape);
        CHECK_OK(pf_scan_extreme(&tx, 1, largest, &tv, &ti));
        int bad = 0;
        for (int r = 0; r < 4; r++) {
            int64_t best = 0;
            for (int k = 0; k < 33; k++) {
                double e = x[r * 33 + k], b = x[r * 33 + best];
                if (largest ? e >= b : e <= b) best = k;
                bad += v[r * 33 + k] != x[r * 33 + best] || ix[r * 33 + k] != best;
            }
        }
        CHECK(bad == 0, "cum%s: %d mismatches", largest ? "max" : "min", bad);
    }
    pf_tensor tx = pf_make(x, PF_FLOAT64, 2, shape), tl = pf_make(lse, PF_FLOAT64, 2, shape);
    CHECK_OK(pf_scan(PF_SCAN_LOGSUMEXP, &tx, 1, &tl));
    double worst = 0;
    for (int r = 0; r < 4; r++) {
        double s = 0;
        for (int k = 0; k < 33; k++) {
            s += exp(x[r * 33 + k]);
            double d = fabs(lse[r * 33 + k] - log(s));
            worst = d > worst ? d : worst;
        }
    }
    CHECK(worst < 1e-12, "logcumsumexp off by %g", worst);
    int64_t ishape[1] = {3}, iv[3], iix[3], ii[3] = {1, 2, 3};
    pf_tensor a = pf_make(ii, PF_INT64, 1, ishape), o = pf_make(iv, PF_INT64, 1, ishape);
    CHECK(pf_scan(PF_SCAN_LOGSUMEXP, &a, 0, &o) == PF_ERR_TYPE, "logcumsumexp into int64 must fail");
    pf_tensor oi = pf_make(iix, PF_INT32, 1, ishape);
    CHECK(pf_scan_extreme(&a, 0, 1, &o, &oi) == PF_ERR_TYPE, "int32 indices must fail");
}

int main(void) {
    test_scan();
    test_extreme_and_logsumexp();
    return pf_test_summary("test_scan");
}
