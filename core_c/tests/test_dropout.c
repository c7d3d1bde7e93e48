/* dropout.c: the fused dropout's mask is pf_random's Bernoulli draw into bool at the same seed and
 * offset (lengths across its chunks, offsets not a multiple of 4, the 2^64 counter wrap), its values and
 * gradient the composition's exactly, float32 and float64, serial and threaded lengths; bad input. */
#include <stdlib.h>
#include "core.h"
#include "check.h"

/* mismatches of keep, y and gx against bernoulli's mask and keep ? v * (T)(1 / (1 - p)) : 0 */
static int64_t drop_case(int dt, int64_t n, double p, uint64_t seed, uint64_t offset, int threads) {
    size_t es = pf_dtype_size[dt];
    char *x = malloc(n * es + 1), *y = malloc(n * es + 1), *g = malloc(n * es + 1), *gx = malloc(n * es + 1);
    unsigned char *keep = malloc(n + 1), *ref = malloc(n + 1);
    unsigned s = 9;
    for (int64_t i = 0; i < n; i++) pf_store_f64(x + i * es, dt, frand(&s)), pf_store_f64(g + i * es, dt, frand(&s));
    pf_set_num_threads(threads);
    CHECK_OK(pf_dropout(dt, x, y, keep, n, p, seed, offset));
    CHECK_OK(pf_dropout_backward(dt, g, keep, gx, n, p));
    pf_set_num_threads(1);
    pf_tensor mask = {.data = ref, .dtype = PF_BOOL, .ndim = 1, .shape = {n}, .strides = {1}};
    CHECK_OK(pf_random(PF_RAND_BERNOULLI, &mask, seed, offset, 1.0 - p, 0));
    int64_t bad = 0;
    double scale = 1.0 / (1.0 - p);
    for (int64_t i = 0; i < n; i++) {
        bad += keep[i] != ref[i];
        if (dt == PF_FLOAT32) {
            float s32 = (float)scale, *xf = (float *)x, *yf = (float *)y, *gf = (float *)g, *gxf = (float *)gx;
            bad += yf[i] != (ref[i] ? xf[i] * s32 : 0.0f);
            bad += gxf[i] != (ref[i] ? gf[i] * s32 : 0.0f);
        } else {
            double *xd = (double *)x, *yd = (double *)y, *gd = (double *)g, *gxd = (double *)gx;
            bad += yd[i] != (ref[i] ? xd[i] * scale : 0.0);
            bad += gxd[i] != (ref[i] ? gd[i] * scale : 0.0);
        }
    }
    free(x), free(y), free(g), free(gx), free(keep), free(ref);
    return bad;
}

int main(void) {
    const int64_t lens[] = {1, 3, 64, 4095, 4096, 4097, 70001};
    const uint64_t offsets[] = {0, 5, 1000003, (uint64_t)0 - 37};
    const double ps[] = {0.0, 1e-9, 0.1, 0.5, 0.999};
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt += PF_FLOAT64 - PF_FLOAT32)
        for (int li = 0; li < 7; li++)
            for (int oi = 0; oi < 4; oi++)
                for (int pi = 0; pi < 5; pi++) {
                    int64_t bad = drop_case(dt, lens[li], ps[pi], 77 + oi, offsets[oi], 1 + (li == 6));
                    CHECK(bad == 0, "%s n=%lld offset=%llu p=%g: %lld mismatches", pf_dtype_name[dt],
                          (long long)lens[li], (unsigned long long)offsets[oi], ps[pi], (long long)bad);
                }
    float x[4] = {1, 2, 3, 4}, y[4];
    unsigned char keep[4];
    CHECK(pf_dropout(PF_FLOAT32, x, y, keep, 4, 1.0, 0, 0) == PF_ERR_VALUE, "p = 1");
    CHECK(pf_dropout(PF_FLOAT32, x, y, keep, 4, -0.5, 0, 0) == PF_ERR_VALUE, "negative p");
    CHECK(pf_dropout(PF_FLOAT32, x, y, keep, 4, NAN, 0, 0) == PF_ERR_VALUE, "NaN p");
    CHECK(pf_dropout(PF_INT32, x, y, keep, 4, 0.5, 0, 0) == PF_ERR_TYPE, "int32");
    CHECK(pf_dropout(PF_FLOAT32, x, y, keep, -1, 0.5, 0, 0) == PF_ERR_VALUE, "negative n");
    CHECK(pf_dropout(PF_FLOAT32, x, NULL, keep, 4, 0.5, 0, 0) == PF_ERR_VALUE, "NULL output");
    CHECK(pf_dropout_backward(PF_FLOAT32, x, NULL, y, 4, 0.5) == PF_ERR_VALUE, "NULL mask");
    CHECK_OK(pf_dropout(PF_FLOAT64, NULL, NULL, NULL, 0, 0.5, 0, 0));
    /* the mask is applied without branches: a dropped NaN, inf or -x is +0 (sign bit clear), a kept one x * 2 */
    float gs[6] = {NAN, INFINITY, -3, -INFINITY, NAN, -0.5f}, gx[6];
    unsigned char k6[6] = {0, 0, 0, 1, 1, 1};
    CHECK_OK(pf_dropout_backward(PF_FLOAT32, gs, k6, gx, 6, 0.5));
    CHECK(gx[0] == 0 && !signbit(gx[0]) && gx[1] == 0 && gx[2] == 0 && !signbit(gx[2]) && gx[3] == -INFINITY &&
              isnan(gx[4]) && gx[5] == -1.0f,
          "masked values %g %g %g %g %g %g", gx[0], gx[1], gx[2], gx[3], gx[4], gx[5]);
    return pf_test_summary("test_dropout");
}
