/* conv_direct.c: the AVX-512 float32 kernels conv2d takes on that path (the forward from the
 * phase planes, and a stride-1 input gradient as the forward of grad_out with the flipped,
 * transposed weight) against naive loops: output rows around the 32-lane tiles, output channels
 * in 12-, 8- and 4-row blocks and a remainder, strides 1 to 3, padding, dilation, groups, bias,
 * every input layout, one and two threads. Skipped on CPUs without AVX-512. */
#include <stdio.h>
#include "core.h"
#include "check.h"
#include "conv_ref.h"

static void check_case(int layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int groups,
                       const conv_cfg *g, int bias) {
    double err = conv2d_case(PF_FLOAT32, layout, N, C, H, W, O, groups, g, bias);
    CHECK(err < 1e-5, "N=%lld C=%lld %lldx%lld O=%lld groups=%d kernel %dx%d stride %d,%d pad %d,%d dil %d,%d "
          "layout %d bias %d: rel err %g", (long long)N, (long long)C, (long long)H, (long long)W, (long long)O,
          groups, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, layout, bias, err);
}

int main(void) {
    if (!pf_cpu_supports("avx512")) {
        printf("test_conv_direct: no AVX-512 on this CPU, skipped\n");
        return 0;
    }
    CHECK_OK(pf_gemm_select("avx512"));
    const conv_cfg cfgs[] = {
        {3, 3, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0, 1, 1}, {3, 3, 2, 2, 1, 1, 1, 1}, {5, 5, 1, 1, 2, 2, 1, 1},
        {3, 3, 1, 1, 2, 2, 2, 2}, {3, 2, 3, 1, 0, 1, 1, 2}, {2, 2, 2, 2, 0, 0, 1, 1},
    };
    /* output widths below, at and past one and two 32-lane tiles; channel blocks of 12, 8, 4 and
     * one row; 8 or more input channels per group, so the input gradient runs direct too */
    const int64_t widths[] = {1, 5, 31, 32, 33, 70};
    const int64_t outs[] = {1, 4, 12, 13, 24, 29};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
            const conv_cfg *g = &cfgs[c];
            int64_t W = widths[w] * g->sw + (g->kw - 1) * g->dw; /* enough input for widths[w] outputs */
            check_case((int)(w % 3), 2, 8, 6, W, outs[w], 1, g, w % 2 == 0);
        }
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) check_case(0, 3, 16, 9, 11, 2 * outs[o], 2, &cfgs[0], 1);
    for (int nt = 1; nt <= 2; nt++) { /* enough samples and tiles for a team */
        pf_set_num_threads(nt);
        check_case(0, 6, 16, 20, 40, 24, 1, &cfgs[0], 1);
        check_case(2, 5, 12, 17, 23, 13, 1, &cfgs[2], 0);
    }
    pf_set_num_threads(0);
    CHECK_OK(pf_gemm_select("auto"));
    return pf_test_summary("test_conv_direct");
}
