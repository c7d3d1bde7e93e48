/* pool.c: max pooling against a naive reference, on strided inputs, with a large team (as many
 * planes as threads would split), and bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

typedef struct { int kh, kw, sh, sw, ph, pw, dh, dw; } pool_cfg;

static int64_t out_size(int64_t n, int k, int s, int p, int d) { return (n + 2 * p - d * (k - 1) - 1) / s + 1; }

/* x [N, C, H, W] double with channels-last memory; values rounded to 1/8 so ties happen */
static void test_max_pool(const pool_cfg *g, int64_t N, int64_t C, int64_t H, int64_t W) {
    unsigned seed = 7;
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    double *xd = malloc(sizeof(double) * N * C * H * W), *y = malloc(sizeof(double) * N * C * OH * OW);
    double *gx = malloc(sizeof(double) * N * C * H * W), *ref_gx = calloc(N * C * H * W, sizeof(double));
    int64_t *ix = malloc(sizeof(int64_t) * N * C * OH * OW);
    for (int64_t i = 0; i < N * C * H * W; i++) xd[i] = round(frand(&seed) * 8) / 8;
    pf_tensor x = {xd, PF_FLOAT64, 4, {N, C, H, W}, {H * W * C, 1, W * C, C}};
    int64_t os[4] = {N, C, OH, OW};
    pf_tensor yt = pf_make(y, PF_FLOAT64, 4, os), it = pf_make(ix, PF_INT64, 4, os);
    CHECK_OK(pf_max_pool2d(&x, &yt, &it, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw));
    int bad = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double best = -INFINITY;
                    int64_t arg = -1;
                    for (int i = 0; i < g->kh; i++)
                        for (int j = 0; j < g->kw; j++) {
                            int64_t h = oh * g->sh - g->ph + i * g->dh, w = ow * g->sw - g->pw + j * g->dw;
                            if (h < 0 || h >= H || w < 0 || w >= W) continue;
                            double v = xd[n * H * W * C + c + h * W * C + w * C];
                            if (arg < 0 || v > best) best = v, arg = h * W + w;
                        }
                    int64_t k = ((n * C + c) * OH + oh) * OW + ow;
                    bad += y[k] != best || ix[k] != arg;
                    ref_gx[(n * C + c) * H * W + arg] += k % 5;
                    y[k] = k % 5; /* becomes the gradient below */
                }
    CHECK(bad == 0, "%d windows differ (kernel %dx%d stride %d pad %d dilation %d)", bad, g->kh, g->kw, g->sh, g->ph,
          g->dh);
    int64_t xs[4] = {N, C, H, W};
    pf_tensor gxt = pf_make(gx, PF_FLOAT64, 4, xs);
    CHECK_OK(pf_max_pool2d_backward(&yt, &it, &gxt, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw));
    CHECK(memcmp(gx, ref_gx, sizeof(double) * N * C * H * W) == 0, "backward differs (kernel %dx%d)", g->kh, g->kw);
    free(xd), free(y), free(gx), free(ref_gx), free(ix);
}

int main(void) {
    pf_set_num_threads(4);
    const pool_cfg cfgs[] = {{2, 2, 2, 2, 0, 0, 1, 1}, {3, 3, 1, 1, 1, 1, 1, 1}, {3, 2, 2, 1, 1, 0, 1, 2},
                             {2, 3, 1, 2, 0, 1, 2, 1}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) test_max_pool(&cfgs[i], 3, 5, 9, 8);
    test_max_pool(&cfgs[0], 8, 16, 28, 28); /* large enough to run on a team */
    /* an index outside the plane is refused */
    double g1[1] = {1}, x4[4];
    int64_t i1[1] = {4}, s1[4] = {1, 1, 1, 1}, s4[4] = {1, 1, 2, 2};
    pf_tensor gt = pf_make(g1, PF_FLOAT64, 4, s1), it = pf_make(i1, PF_INT64, 4, s1), xt = pf_make(x4, PF_FLOAT64, 4, s4);
    CHECK(pf_max_pool2d_backward(&gt, &it, &xt, 2, 2, 2, 2, 0, 0, 1, 1) == PF_ERR_INDEX, "bad index");
    CHECK(pf_max_pool2d(&xt, &gt, &it, 2, 2, 2, 2, 2, 0, 1, 1) == PF_ERR_VALUE, "padding over half the kernel");
    return pf_test_summary("test_pool");
}
