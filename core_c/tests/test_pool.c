/* max pooling and batch norm kernels against naive references, on strided inputs, with a
 * large team (as many planes and channels as threads would split), and bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static double frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (1 << 24) * 2.0 - 1.0;
}

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

static void test_batch_norm(int dt) {
    enum { N = 3, C = 5, L = 70 };
    unsigned seed = 11;
    size_t es = pf_dtype_size[dt];
    /* x laid out [C, N, L] in memory: a strided [N, C, L] view */
    char *xd = malloc(es * N * C * L), *y = malloc(es * N * C * L), *gy = malloc(es * N * C * L);
    char *gx = malloc(es * N * C * L), *w = malloc(es * C), *gw = malloc(es * C), *gb = malloc(es * C);
    double mean[C], var[C];
    for (int i = 0; i < N * C * L; i++) {
        pf_store_f64(xd + i * es, dt, 3 + frand(&seed));
        pf_store_f64(gy + i * es, dt, frand(&seed));
    }
    for (int c = 0; c < C; c++) pf_store_f64(w + c * es, dt, 0.5 + c);
    pf_tensor x = {xd, dt, 3, {N, C, L}, {L, N * L, 1}};
    int64_t s3[3] = {N, C, L}, s1[1] = {C};
    pf_tensor yt = pf_make(y, dt, 3, s3), gyt = pf_make(gy, dt, 3, s3), gxt = pf_make(gx, dt, 3, s3);
    pf_tensor wt = pf_make(w, dt, 1, s1), gwt = pf_make(gw, dt, 1, s1), gbt = pf_make(gb, dt, 1, s1);
    pf_tensor mt = pf_make(mean, PF_FLOAT64, 1, s1), vt = pf_make(var, PF_FLOAT64, 1, s1);
    CHECK_OK(pf_batch_norm_forward(&x, &wt, NULL, 1e-5, 0.1, NULL, NULL, &yt, &mt, &vt));
    CHECK_OK(pf_batch_norm_backward(&gyt, &x, &mt, &vt, &wt, 1e-5, &gxt, &gwt, &gbt));
    double tol = dt == PF_FLOAT32 ? 1e-4 : 1e-11, worst = 0;
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0, sg = 0, sgx = 0;
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) m += pf_load_f64(xd + (c * N * L + n * L + l) * es, dt);
        m /= N * L;
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) {
                double d = pf_load_f64(xd + (c * N * L + n * L + l) * es, dt) - m;
                double q = pf_load_f64(gy + ((n * C + c) * L + l) * es, dt);
                v += d * d, sg += q, sgx += q * d;
            }
        v /= N * L;
        double is = 1 / sqrt(v + 1e-5), wc = 0.5 + c;
        worst = fmax(worst, fabs(mean[c] - m) + fabs(var[c] - v));
        worst = fmax(worst, fabs(pf_load_f64(gw + c * es, dt) - sgx * is) + fabs(pf_load_f64(gb + c * es, dt) - sg));
        for (int n = 0; n < N; n++)
            for (int l = 0; l < L; l++) {
                int64_t k = (n * C + c) * L + l;
                double d = pf_load_f64(xd + (c * N * L + n * L + l) * es, dt) - m, q = pf_load_f64(gy + k * es, dt);
                double ry = d * is * wc, rgx = wc * is * (q - sg / (N * L) - d * is * is * sgx / (N * L));
                worst = fmax(worst, fabs(pf_load_f64(y + k * es, dt) - ry) + fabs(pf_load_f64(gx + k * es, dt) - rgx));
            }
    }
    CHECK(worst < tol, "%s batch norm off by %g", pf_dtype_name[dt], worst);
    /* bad input: mean not float64, output not contiguous */
    float fm[C];
    pf_tensor bad_mean = pf_make(fm, PF_FLOAT32, 1, s1);
    CHECK(pf_batch_norm_forward(&x, NULL, NULL, 1e-5, 0.1, NULL, NULL, &yt, &bad_mean, &vt) == PF_ERR_TYPE, "mean");
    CHECK(pf_batch_norm_forward(&x, NULL, NULL, 1e-5, 0.1, NULL, NULL, &x, &mt, &vt) == PF_ERR_VALUE, "strided y");
    free(xd), free(y), free(gy), free(gx), free(w), free(gw), free(gb);
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
    test_batch_norm(PF_FLOAT32);
    test_batch_norm(PF_FLOAT64);
    return pf_test_summary("test_pool");
}
