/* conv_taps.c: the AVX2 float32 paths conv2d takes on small planes, against naive loops (the forward
 * and both gradients, conv_ref.h): the per-tap products (stride 1, outputs of at most 8x8 and 128+
 * positions in the batch: position classes, chains, one class, channels-last and strided inputs,
 * dilation, uneven padding, 25 taps), and the weight read in place at a few positions (batch 1 and 2:
 * 4x4, 7x7 and 8x8 outputs, stride 2, a 1x1 kernel, K over several blocks, 6- and 12-row tiles and
 * their remainders); then the same bits at one and two threads. Skipped on CPUs without AVX2. */
#include <stdio.h>
#include "core.h"
#include "check.h"
#include "conv_ref.h"

static void check_case(int layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, const conv_cfg *g,
                       int bias) {
    double err = conv2d_case(PF_FLOAT32, layout, N, C, H, W, O, 1, g, bias);
    CHECK(err < 1e-5, "N=%lld C=%lld %lldx%lld O=%lld kernel %dx%d stride %d,%d pad %d,%d dil %d,%d layout %d "
          "bias %d: rel err %g", (long long)N, (long long)C, (long long)H, (long long)W, (long long)O, g->kh, g->kw,
          g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, layout, bias, err);
}

/* the forward and both gradients at 1 and 2 threads: the same bytes */
static void check_bits(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, const conv_cfg *g) {
    unsigned seed = 5;
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    int64_t nx = N * C * H * W, nw = O * C * g->kh * g->kw, ny = N * O * OH * OW;
    float *buf = malloc((size_t)(nx + nw + ny + 2 * (ny + nx + nw)) * 4);
    float *xb = buf, *wb = xb + nx, *gyb = wb + nw, *res[2];
    res[0] = gyb + ny, res[1] = res[0] + ny + nx + nw;
    for (int64_t i = 0; i < nx + nw + ny; i++) buf[i] = (float)frand(&seed);
    pf_tensor x = pf_make(xb, PF_FLOAT32, 4, (int64_t[]){N, C, H, W});
    pf_tensor w = pf_make(wb, PF_FLOAT32, 4, (int64_t[]){O, C, g->kh, g->kw});
    pf_tensor gy = pf_make(gyb, PF_FLOAT32, 4, (int64_t[]){N, O, OH, OW});
    for (int k = 0; k < 2; k++) {
        pf_set_num_threads(k + 1);
        pf_tensor y = pf_make(res[k], PF_FLOAT32, 4, gy.shape), gx = pf_make(res[k] + ny, PF_FLOAT32, 4, x.shape);
        pf_tensor gw = pf_make(res[k] + ny + nx, PF_FLOAT32, 4, w.shape);
        CHECK_OK(pf_conv2d(&x, &w, NULL, &y, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, 1));
        CHECK_OK(pf_conv2d_backward(&gy, &x, &w, &gx, &gw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, 1));
    }
    pf_set_num_threads(0);
    CHECK(!memcmp(res[0], res[1], (size_t)(ny + nx + nw) * 4), "N=%lld C=%lld %lldx%lld O=%lld: bits differ at 1 and "
          "2 threads", (long long)N, (long long)C, (long long)H, (long long)W, (long long)O);
    free(buf);
}

int main(void) {
    if (!pf_cpu_supports("avx2")) {
        printf("test_conv_taps: no AVX2 on this CPU, skipped\n");
        return 0;
    }
    CHECK_OK(pf_gemm_select("avx2"));
    const conv_cfg k3 = {3, 3, 1, 1, 1, 1, 1, 1}, k3s2 = {3, 3, 2, 2, 1, 1, 1, 1}, k1s2 = {1, 1, 2, 2, 0, 0, 1, 1};
    const conv_cfg k5 = {5, 5, 1, 1, 2, 2, 1, 1}, dil = {3, 3, 1, 1, 2, 2, 2, 2}, uneven = {3, 2, 1, 1, 0, 1, 1, 1};
    const conv_cfg k2 = {2, 2, 1, 1, 1, 1, 1, 1}, wide_pad = {3, 3, 1, 1, 3, 3, 1, 1};
    for (int nt = 1; nt <= 2; nt++) {
        pf_set_num_threads(nt);
        /* per-tap products: 128+ positions, 32+ channels both ways (the input gradient takes them too) */
        check_case(0, 8, 32, 4, 4, 32, &k3, 1);  /* classes padded to panels */
        check_case(0, 3, 32, 7, 7, 40, &k3, 0);  /* 147 positions: chained classes */
        check_case(2, 8, 33, 4, 4, 36, &k3, 1);  /* channels-last x, channels off the panels */
        check_case(1, 4, 32, 6, 6, 32, &dil, 0); /* strided x, dilation */
        check_case(0, 7, 32, 5, 6, 32, &uneven, 1); /* 147 positions */
        check_case(0, 6, 32, 5, 5, 32, &k5, 0); /* 25 taps */
        check_case(0, 4, 32, 6, 6, 32, &k2, 1); /* an even kernel */
        check_case(0, 8, 32, 3, 3, 32, &wide_pad, 0);
        /* the weight in place: at most 64 positions */
        check_case(0, 1, 32, 4, 4, 20, &k3, 1);    /* 16 positions, 6-row tiles and 2 left */
        check_case(0, 1, 48, 8, 8, 50, &k3, 0);    /* 64 positions, K 432: two K blocks */
        check_case(2, 1, 16, 7, 7, 30, &k3, 1);    /* 49 positions: a 12-row x 8 tile for the last 8 */
        check_case(1, 2, 16, 4, 4, 16, &k3, 1);    /* batch 2 */
        check_case(0, 1, 32, 8, 8, 24, &k3s2, 1);  /* stride 2 */
        check_case(0, 1, 64, 8, 8, 24, &k1s2, 0);  /* a 1x1 stride-2 shortcut */
        check_case(0, 1, 16, 5, 5, 17, &k3s2, 1);  /* 9 positions */
    }
    check_bits(8, 32, 4, 4, 64, &k3);
    check_bits(8, 64, 7, 7, 48, &k3);
    check_bits(1, 96, 4, 4, 64, &k3);
    check_bits(1, 48, 8, 8, 100, &k3);
    pf_set_num_threads(0);
    CHECK_OK(pf_gemm_select("auto"));
    return pf_test_summary("test_conv_taps");
}
