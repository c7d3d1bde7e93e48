/* sample.c: grid_sample at the input's own pixel centres returns the input (every mode), its input
 * gradient then sums the output gradient back, and bad input is refused. */
#include <stdlib.h>
#include "core.h"
#include "check.h"

int main(void) {
    enum { N = 2, C = 3, H = 4, W = 5 };
    unsigned seed = 3;
    double x[N * C * H * W], grid[N * H * W * 2], y[N * C * H * W], gx[N * C * H * W], gg[N * H * W * 2];
    for (int i = 0; i < N * C * H * W; i++) x[i] = frand(&seed);
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) { /* pixel centres with align_corners=False */
                grid[((n * H + h) * W + w) * 2] = (2.0 * w + 1) / W - 1;
                grid[((n * H + h) * W + w) * 2 + 1] = (2.0 * h + 1) / H - 1;
            }
    int64_t xs[4] = {N, C, H, W}, gs[4] = {N, H, W, 2};
    pf_tensor xt = pf_make(x, PF_FLOAT64, 4, xs), gt = pf_make(grid, PF_FLOAT64, 4, gs);
    pf_tensor yt = pf_make(y, PF_FLOAT64, 4, xs), gxt = pf_make(gx, PF_FLOAT64, 4, xs), ggt = pf_make(gg, PF_FLOAT64, 4, gs);
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++) {
            CHECK_OK(pf_grid_sample(&xt, &gt, &yt, mode, pad, 0));
            double err = 0;
            for (int i = 0; i < N * C * H * W; i++) err = fmax(err, fabs(y[i] - x[i]));
            CHECK(err < 1e-12, "mode %d padding %d: identity sampling off by %g", mode, pad, err);
            for (int i = 0; i < N * C * H * W; i++) y[i] = 1.0; /* grad_out */
            CHECK_OK(pf_grid_sample_backward(&yt, &xt, &gt, &gxt, &ggt, mode, pad, 0));
            err = 0;
            for (int i = 0; i < N * C * H * W; i++) err = fmax(err, fabs(gx[i] - 1.0));
            CHECK(err < 1e-12, "mode %d padding %d: identity gradient off by %g", mode, pad, err);
        }
    int64_t bad[4] = {N, H, W, 3};
    pf_tensor bt = pf_make(grid, PF_FLOAT64, 4, bad);
    CHECK(pf_grid_sample(&xt, &bt, &yt, 0, 0, 0) == PF_ERR_VALUE, "grid with 3 coordinates for 4-d input");
    CHECK(pf_grid_sample(&xt, &gt, &yt, 3, 0, 0) == PF_ERR_VALUE, "unknown mode");
    pf_tensor ft = pf_make(x, PF_FLOAT32, 4, xs);
    CHECK(pf_grid_sample(&ft, &gt, &yt, 0, 0, 0) == PF_ERR_TYPE, "mixed dtypes");
    return pf_test_summary("test_sample");
}
