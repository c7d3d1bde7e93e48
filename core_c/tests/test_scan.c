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

int main(void) {
    test_scan();
    return pf_test_summary("test_scan");
}
