/* pool.c: max and average pooling against naive references over [N, C, D, H, W], on strided
 * (channels-last) inputs, with ceil_mode, with a large team (as many planes as threads would split),
 * the adaptive pools, and bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

typedef struct { int64_t k[3], s[3], p[3], d[3], ceil; } pool_cfg;

static int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int64_t ceil_mode) {
    int64_t o = (n + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (o - 1) * s >= n + p) o--;
    return o;
}

/* x [N, C, D, H, W] double with channels-last memory; values rounded to 1/8 so ties happen */
static void test_pools(const pool_cfg *g, int64_t N, int64_t C, int64_t D, int64_t H, int64_t W) {
    unsigned seed = 7;
    int64_t in[3] = {D, H, W}, o[3];
    for (int t = 0; t < 3; t++) o[t] = out_size(in[t], g->k[t], g->s[t], g->p[t], g->d[t], g->ceil);
    int64_t P = D * H * W, OP = o[0] * o[1] * o[2], geom[13];
    for (int t = 0; t < 3; t++) geom[t] = g->k[t], geom[3 + t] = g->s[t], geom[6 + t] = g->p[t], geom[9 + t] = g->d[t];
    geom[12] = g->ceil;
    double *xd = malloc(sizeof(double) * N * C * P), *y = malloc(sizeof(double) * N * C * OP);
    double *gx = malloc(sizeof(double) * N * C * P), *ref_gx = calloc(N * C * P, sizeof(double));
    int64_t *ix = malloc(sizeof(int64_t) * N * C * OP);
    for (int64_t i = 0; i < N * C * P; i++) xd[i] = round(frand(&seed) * 8) / 8;
    pf_tensor x = {xd, PF_FLOAT64, 5, {N, C, D, H, W}, {P * C, 1, H * W * C, W * C, C}};
    int64_t os[5] = {N, C, o[0], o[1], o[2]}, xs[5] = {N, C, D, H, W};
    pf_tensor yt = pf_make(y, PF_FLOAT64, 5, os), it = pf_make(ix, PF_INT64, 5, os);
    CHECK_OK(pf_max_pool(&x, &yt, &it, geom));
    int bad = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < OP; q++) {
                int64_t od = q / (o[1] * o[2]), oh = q / o[2] % o[1], ow = q % o[2];
                double best = -INFINITY;
                int64_t arg = -1;
                for (int64_t a = 0; a < g->k[0]; a++)
                    for (int64_t i = 0; i < g->k[1]; i++)
                        for (int64_t j = 0; j < g->k[2]; j++) {
                            int64_t dd = od * g->s[0] - g->p[0] + a * g->d[0];
                            int64_t h = oh * g->s[1] - g->p[1] + i * g->d[1], w = ow * g->s[2] - g->p[2] + j * g->d[2];
                            if (dd < 0 || dd >= D || h < 0 || h >= H || w < 0 || w >= W) continue;
                            double v = xd[n * P * C + c + ((dd * H + h) * W + w) * C];
                            if (arg < 0 || v > best) best = v, arg = (dd * H + h) * W + w;
                        }
                int64_t k = (n * C + c) * OP + q;
                bad += y[k] != best || ix[k] != arg;
                ref_gx[(n * C + c) * P + arg] += k % 5;
                y[k] = k % 5; /* becomes the gradient below */
            }
    CHECK(bad == 0, "%d max windows differ (kernel %lldx%lld, ceil %lld)", bad, (long long)g->k[1], (long long)g->k[2],
          (long long)g->ceil);
    pf_tensor gxt = pf_make(gx, PF_FLOAT64, 5, xs);
    CHECK_OK(pf_max_pool_backward(&yt, &it, &gxt));
    CHECK(memcmp(gx, ref_gx, sizeof(double) * N * C * P) == 0, "max backward differs");
    if (g->d[0] == 1 && g->d[1] == 1 && g->d[2] == 1) { /* average, without padding in the count */
        CHECK_OK(pf_avg_pool(&x, &yt, geom, 0, 0));
        bad = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t q = 0; q < OP; q++) {
                    int64_t od = q / (o[1] * o[2]), oh = q / o[2] % o[1], ow = q % o[2], cnt = 0;
                    double sum = 0;
                    for (int64_t a = 0; a < g->k[0]; a++)
                        for (int64_t i = 0; i < g->k[1]; i++)
                            for (int64_t j = 0; j < g->k[2]; j++) {
                                int64_t dd = od * g->s[0] - g->p[0] + a, h = oh * g->s[1] - g->p[1] + i;
                                int64_t w = ow * g->s[2] - g->p[2] + j;
                                if (dd < 0 || dd >= D || h < 0 || h >= H || w < 0 || w >= W) continue;
                                sum += xd[n * P * C + c + ((dd * H + h) * W + w) * C], cnt++;
                            }
                    bad += fabs(y[(n * C + c) * OP + q] - sum / cnt) > 1e-12;
                }
        CHECK(bad == 0, "%d average windows differ", bad);
    }
    free(xd), free(y), free(gx), free(ref_gx), free(ix);
}

int main(void) {
    pf_set_num_threads(4);
    const pool_cfg cfgs[] = {
        {{1, 2, 2}, {1, 2, 2}, {0, 0, 0}, {1, 1, 1}, 0}, {{1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 0},
        {{1, 3, 2}, {1, 2, 1}, {0, 1, 0}, {1, 1, 2}, 0}, {{1, 2, 3}, {1, 1, 2}, {0, 0, 1}, {1, 2, 1}, 0},
        {{1, 3, 3}, {1, 2, 2}, {0, 1, 0}, {1, 1, 1}, 1}, {{2, 3, 2}, {2, 2, 2}, {1, 0, 1}, {1, 1, 1}, 1},
        {{3, 2, 2}, {1, 2, 1}, {1, 0, 0}, {2, 1, 1}, 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) test_pools(&cfgs[i], 3, 5, i >= 5 ? 5 : 1, 9, 8);
    test_pools(&cfgs[0], 8, 16, 1, 28, 28); /* large enough to run on a team */
    /* an index outside the plane is refused; so are padding over half the kernel and a wrong output size */
    double g1[1] = {1}, x4[4];
    int64_t i1[1] = {4}, s1[5] = {1, 1, 1, 1, 1}, s4[5] = {1, 1, 1, 2, 2};
    int64_t geom[13] = {1, 2, 2, 1, 2, 2, 0, 2, 0, 1, 1, 1, 0};
    pf_tensor gt = pf_make(g1, PF_FLOAT64, 5, s1), it = pf_make(i1, PF_INT64, 5, s1), xt = pf_make(x4, PF_FLOAT64, 5, s4);
    CHECK(pf_max_pool_backward(&gt, &it, &xt) == PF_ERR_INDEX, "bad index");
    CHECK(pf_max_pool(&xt, &gt, &it, geom) == PF_ERR_VALUE, "padding over half the kernel");
    geom[7] = 0, geom[1] = 1, geom[4] = 1; /* kernel 1, stride 1 over H: 2 rows out */
    CHECK(pf_max_pool(&xt, &gt, &it, geom) == PF_ERR_VALUE, "output size 1 where 2 is due");
    /* adaptive average of a 2x2 plane to 1x1 */
    double one[4] = {1, 2, 3, 4}, avg[1];
    pf_tensor at = pf_make(avg, PF_FLOAT64, 5, s1), xt2 = pf_make(one, PF_FLOAT64, 5, s4);
    CHECK_OK(pf_adaptive_pool(&xt2, &at, NULL));
    CHECK(avg[0] == 2.5, "adaptive average %g", avg[0]);
    return pf_test_summary("test_pool");
}
