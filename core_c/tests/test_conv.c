/* conv.c and conv2d.c: im2col / col2im against a naive reference, adjointness, strided layouts;
 * conv2d forward and backward through every GEMM path; bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"
#include "conv_ref.h"

/* naive im2col into a dense double [N, C*kh*kw, OH*OW] buffer */
static void ref_im2col(const pf_tensor *x, const conv_cfg *g, double pad, double *ref) {
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    int64_t rows = C * g->kh * g->kw, P = OH * OW;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int ki = 0; ki < g->kh; ki++)
                for (int kj = 0; kj < g->kw; kj++)
                    for (int64_t oh = 0; oh < OH; oh++)
                        for (int64_t ow = 0; ow < OW; ow++) {
                            int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                            int64_t r = (c * g->kh + ki) * g->kw + kj;
                            ref[(n * rows + r) * P + oh * OW + ow] =
                                ih < 0 || ih >= H || iw < 0 || iw >= W ? pad : xat(x, n, c, ih, iw);
                        }
}

/* im2col vs the reference for one config, layout and col layout (transposed col when
 * col_t: memory [N, P, rows]). Returns the max abs difference. */
static double im2col_case(int dt, int layout, int col_t, int64_t N, int64_t C, int64_t H, int64_t W,
                          const conv_cfg *g, double pad) {
    unsigned seed = 7;
    pf_tensor x = make_x(dt, layout, N, C, H, W, &seed);
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    int64_t rows = C * g->kh * g->kw, P = OH * OW;
    size_t es = pf_dtype_size[dt];
    pf_tensor col = {.data = malloc((size_t)(N * rows * P) * es), .dtype = dt, .ndim = 3, .shape = {N, rows, P}};
    if (col_t) { col.strides[0] = rows * P; col.strides[1] = 1; col.strides[2] = rows; }
    else { col.strides[0] = rows * P; col.strides[1] = P; col.strides[2] = 1; }
    double *ref = malloc((size_t)(N * rows * P) * sizeof *ref), worst = 0;
    ref_im2col(&x, g, pad, ref);
    int rc = pf_im2col(&x, &col, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, pad);
    CHECK(rc == PF_OK, "im2col rc %d: %s", rc, pf_last_error());
    for (int64_t n = 0; n < N && rc == PF_OK; n++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < P; p++) {
                double got = pf_load_f64((char *)col.data + (n * col.strides[0] + r * col.strides[1] + p * col.strides[2]) * (int64_t)es, dt);
                double want = ref[(n * rows + r) * P + p];
                double diff = got == want ? 0 : fabs(got - want);
                if (diff > worst) worst = diff;
            }
    free(ref);
    free(col.data);
    free(x.data);
    return worst;
}

/* <im2col(x), c> == <x, col2im(c)>, with col2im accumulating onto a nonzero x0 */
static void adjoint_case(int layout, int64_t N, int64_t C, int64_t H, int64_t W, const conv_cfg *g) {
    unsigned seed = 11;
    pf_tensor x = make_x(PF_FLOAT64, layout, N, C, H, W, &seed);
    pf_tensor x0 = make_x(PF_FLOAT64, layout, N, C, H, W, &seed); /* accumulation target */
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    int64_t rows = C * g->kh * g->kw, P = OH * OW, nc = N * rows * P;
    double *a = malloc((size_t)nc * 8), *c = malloc((size_t)nc * 8);
    for (int64_t i = 0; i < nc; i++) c[i] = frand(&seed);
    pf_tensor ta = pf_make(a, PF_FLOAT64, 3, (int64_t[]){N, rows, P}), tc = pf_make(c, PF_FLOAT64, 3, (int64_t[]){N, rows, P});
    CHECK_OK(pf_im2col(&x, &ta, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, 0.0));
    double *before = malloc((size_t)(N * C * H * W) * sizeof *before);
    int64_t cnt = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) before[cnt++] = xat(&x0, n, ch, h, w);
    CHECK_OK(pf_col2im(&tc, &x0, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw));
    double lhs = 0, rhs = 0, scale = 0;
    for (int64_t i = 0; i < nc; i++) { lhs += a[i] * c[i]; scale += fabs(a[i] * c[i]); }
    cnt = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) rhs += xat(&x, n, ch, h, w) * (xat(&x0, n, ch, h, w) - before[cnt++]);
    CHECK(fabs(lhs - rhs) <= 1e-9 * (scale + 1), "adjoint k%dx%d s%d,%d p%d,%d d%d,%d layout %d: %g vs %g", g->kh,
          g->kw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, layout, lhs, rhs);
    free(a); free(c); free(before); free(x.data); free(x0.data);
}

static void bad_inputs(void) {
    float xb[2 * 3 * 4 * 4] = {0}, cb[2 * 27 * 4];
    pf_tensor x = pf_make(xb, PF_FLOAT32, 4, (int64_t[]){2, 3, 4, 4});
    pf_tensor col = pf_make(cb, PF_FLOAT32, 3, (int64_t[]){2, 27, 4}); /* 3x3, no padding -> 2x2 */
    CHECK_OK(pf_im2col(&x, &col, 3, 3, 1, 1, 0, 0, 1, 1, 0.0));
    CHECK_OK(pf_col2im(&col, &x, 3, 3, 1, 1, 0, 0, 1, 1));
    CHECK(pf_im2col(&x, &col, 0, 3, 1, 1, 0, 0, 1, 1, 0.0) == PF_ERR_VALUE, "kernel 0");
    CHECK(pf_im2col(&x, &col, 3, 3, 0, 1, 0, 0, 1, 1, 0.0) == PF_ERR_VALUE, "stride 0");
    CHECK(pf_im2col(&x, &col, 3, 3, 1, 1, 0, 0, 1, 0, 0.0) == PF_ERR_VALUE, "dilation 0");
    CHECK(pf_im2col(&x, &col, 3, 3, 1, 1, -1, 0, 1, 1, 0.0) == PF_ERR_VALUE, "negative padding");
    /* 4x4 input, 5x5 kernel: too small, named in the message */
    CHECK(pf_im2col(&x, &col, 5, 5, 1, 1, 0, 0, 1, 1, 0.0) == PF_ERR_VALUE, "too small");
    CHECK(strstr(pf_last_error(), "4x4") && strstr(pf_last_error(), "(5, 5)"), "message: %s", pf_last_error());
    /* dilation 2 makes a 3x3 kernel span 5: too small as well */
    CHECK(pf_col2im(&col, &x, 3, 3, 1, 1, 0, 0, 2, 2) == PF_ERR_VALUE, "dilated too small");
    /* 3x3 with padding 1 needs col [2, 27, 16] */
    CHECK(pf_im2col(&x, &col, 3, 3, 1, 1, 1, 1, 1, 1, 0.0) == PF_ERR_VALUE, "col shape");
    CHECK(strstr(pf_last_error(), "[2, 27, 16]") != NULL, "message: %s", pf_last_error());
    double db[2 * 27 * 4];
    pf_tensor dcol = pf_make(db, PF_FLOAT64, 3, (int64_t[]){2, 27, 4});
    CHECK(pf_im2col(&x, &dcol, 3, 3, 1, 1, 0, 0, 1, 1, 0.0) == PF_ERR_TYPE, "dtype mismatch");
    int32_t ib[2 * 3 * 4 * 4], icb[2 * 27 * 4];
    pf_tensor ix = pf_make(ib, PF_INT32, 4, (int64_t[]){2, 3, 4, 4}), icol = pf_make(icb, PF_INT32, 3, (int64_t[]){2, 27, 4});
    CHECK(pf_im2col(&ix, &icol, 3, 3, 1, 1, 0, 0, 1, 1, 0.0) == PF_ERR_TYPE, "int dtype");
    pf_tensor x3 = pf_make(xb, PF_FLOAT32, 3, (int64_t[]){6, 4, 4});
    CHECK(pf_im2col(&x3, &col, 3, 3, 1, 1, 0, 0, 1, 1, 0.0) == PF_ERR_VALUE, "3-d x");
    CHECK(pf_im2col(NULL, &col, 3, 3, 1, 1, 0, 0, 1, 1, 0.0) != PF_OK, "NULL x");
    pf_tensor xnull = x;
    xnull.data = NULL;
    CHECK(pf_im2col(&xnull, &col, 3, 3, 1, 1, 0, 0, 1, 1, 0.0) != PF_OK, "NULL data");
    /* empty batch is fine */
    pf_tensor x0 = pf_make(xb, PF_FLOAT32, 4, (int64_t[]){0, 3, 4, 4}), c0 = pf_make(cb, PF_FLOAT32, 3, (int64_t[]){0, 27, 4});
    CHECK_OK(pf_im2col(&x0, &c0, 3, 3, 1, 1, 0, 0, 1, 1, 0.0));
}

/* the weight's pack made in pieces (conv2d's threads share one weight's packing) is the whole pack */
static void pack_pieces(void) {
    enum { M = 100, K = 37 };
    float a[M * K];
    unsigned seed = 3;
    for (int i = 0; i < M * K; i++) a[i] = frand(&seed);
    size_t bytes = pf_gemm_pack_bytes(PF_FLOAT32, M, K);
    char *whole = calloc(1, bytes), *parts = calloc(1, bytes);
    CHECK_OK(pf_gemm_pack_a(PF_FLOAT32, M, K, a, K, 1, whole, bytes));
    for (int i = 2; i >= 0; i--) CHECK_OK(pf_gemm_pack_a_piece(PF_FLOAT32, M, K, a, K, 1, parts, bytes, i, 3));
    float b[K * 20], c1[M * 20], c2[M * 20];
    for (int i = 0; i < K * 20; i++) b[i] = frand(&seed);
    pf_gemm_prob p1 = {M, 20, K, NULL, (char *)b, (char *)c1, K, 1, 20, 1, 20, 1, 0}, p2 = p1;
    p2.C = (char *)c2;
    CHECK_OK(pf_gemm_serial_packed(PF_FLOAT32, &p1, whole, NULL));
    CHECK_OK(pf_gemm_serial_packed(PF_FLOAT32, &p2, parts, NULL));
    CHECK(memcmp(c1, c2, sizeof c1) == 0, "a pack made in 3 pieces gives another product than the whole");
    CHECK(pf_gemm_pack_a_piece(PF_FLOAT32, M, K, a, K, 1, parts, bytes, 3, 3) == PF_ERR_VALUE, "piece past the end");
    CHECK(strstr(pf_last_error(), "piece 3 of 3") != NULL, "message: %s", pf_last_error());
    free(whole), free(parts);
}

static void conv2d_cases(void) {
    const conv_cfg cfgs[] = {
        {3, 3, 1, 1, 1, 1, 1, 1}, {3, 3, 1, 1, 0, 0, 1, 1}, {3, 3, 2, 2, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0, 1, 1},
        {3, 2, 1, 2, 2, 0, 1, 1}, {2, 3, 3, 1, 1, 2, 2, 1}, {3, 3, 1, 1, 2, 2, 2, 2}, {5, 3, 1, 1, 4, 2, 1, 2},
        {4, 4, 1, 1, 5, 5, 1, 1},
    };
    const char *paths[] = {"avx512", "avx2", "portable"};
    for (int p = 0; p < 3; p++) {
        if (!pf_cpu_supports(paths[p])) continue;
        CHECK_OK(pf_gemm_select(paths[p]));
        for (int i = 0; i < (int)(sizeof cfgs / sizeof cfgs[0]); i++)
            for (int layout = 0; layout < 3; layout++)
                for (int dt = 0; dt < 2; dt++) {
                    double err = conv2d_case(dt, layout, 2, 4, 7, 9, 6, 1 + (i % 2), &cfgs[i], i % 3 != 1);
                    CHECK(err < (dt == PF_FLOAT32 ? 1e-5 : 1e-12), "conv2d %s cfg %d layout %d %s: rel err %g",
                          paths[p], i, layout, pf_dtype_name[dt], err);
                }
        /* output channels in 12-, 8- and 4-row blocks; tiles of the unfold; one sample split by channel */
        for (int nt = 1; nt <= 2; nt++) {
            pf_set_num_threads(nt);
            double e1 = conv2d_case(PF_FLOAT32, 0, 3, 16, 12, 11, 29, 1, &cfgs[0], 1);
            double e2 = conv2d_case(PF_FLOAT32, 2, 1, 40, 20, 20, 16, 2, &cfgs[2], 1);
            /* small images, many output channels: dense tiles across samples (and a block of
             * one sample fewer), float32 and float64, strided layout */
            double e3 = conv2d_case(PF_FLOAT32, 1, 11, 6, 4, 5, 40, 1, &cfgs[0], 1);
            double e4 = conv2d_case(PF_FLOAT64, 2, 9, 8, 7, 7, 64, 2, &cfgs[2], 1);
            CHECK(e1 < 1e-5 && e2 < 1e-5 && e3 < 1e-5 && e4 < 1e-12, "conv2d %s at %d threads: %g %g %g %g",
                  paths[p], nt, e1, e2, e3, e4);
            /* the weight gradient as an implicit GEMM (avx512 float32, >= 96 output channels per
             * group): channels-last x with stride 2; every other element, dilation and groups (17
             * input channels per group: a part-empty panel); sample blocks of unequal size */
            double e5 = conv2d_case(PF_FLOAT32, 2, 5, 40, 6, 7, 96, 1, &cfgs[2], 1);
            double e6 = conv2d_case(PF_FLOAT32, 1, 9, 34, 5, 5, 192, 2, &cfgs[6], 0);
            double e7 = conv2d_case(PF_FLOAT32, 0, 3, 16, 4, 4, 128, 1, &cfgs[3], 0);
            CHECK(e5 < 1e-5 && e6 < 1e-5 && e7 < 1e-5, "conv2d implicit grad_w %s at %d threads: %g %g %g", paths[p],
                  nt, e5, e6, e7);
            /* one dense tile: its output channels in two blocks of 32-row panels (200 rows: 128 and
             * 72), bias with them; or, with more positions than channels, the tile split in two */
            double e8 = conv2d_case(PF_FLOAT32, 0, 1, 48, 4, 4, 200, 1, &cfgs[0], 1);
            double e9 = conv2d_case(PF_FLOAT64, 1, 1, 48, 4, 4, 200, 1, &cfgs[0], 1);
            double e10 = conv2d_case(PF_FLOAT32, 2, 16, 32, 4, 4, 48, 1, &cfgs[0], 1);
            CHECK(e8 < 1e-5 && e9 < 1e-12 && e10 < 1e-5, "conv2d single-item splits %s at %d threads: %g %g %g", paths[p], nt,
                  e8, e9, e10);
        }
        pf_set_num_threads(0);
    }
    CHECK_OK(pf_gemm_select("auto"));
    /* bad input: message, no crash */
    float buf[4096] = {0};
    pf_tensor x = pf_make(buf, PF_FLOAT32, 4, (int64_t[]){1, 4, 5, 5}), w = pf_make(buf, PF_FLOAT32, 4, (int64_t[]){6, 2, 3, 3});
    pf_tensor y = pf_make(buf, PF_FLOAT32, 4, (int64_t[]){1, 6, 3, 3});
    CHECK(pf_conv2d(&x, &w, NULL, &y, 1, 1, 0, 0, 1, 1, 1) == PF_ERR_VALUE, "channels vs groups");
    CHECK(strstr(pf_last_error(), "groups=1") != NULL, "message: %s", pf_last_error());
    CHECK_OK(pf_conv2d(&x, &w, NULL, &y, 1, 1, 0, 0, 1, 1, 2));
    CHECK(pf_conv2d(&x, &w, NULL, &y, 1, 1, 1, 1, 1, 1, 2) == PF_ERR_VALUE, "out shape");
    CHECK(pf_conv2d(&x, &w, NULL, &y, 0, 1, 0, 0, 1, 1, 2) == PF_ERR_VALUE, "stride 0");
    CHECK(pf_conv2d(&x, &w, NULL, &y, 1, 1, 0, 0, 1, 1, 0) == PF_ERR_VALUE, "groups 0");
    pf_tensor wt = w;
    wt.strides[0] = 1, wt.strides[3] = 18;
    CHECK(pf_conv2d(&x, &wt, NULL, &y, 1, 1, 0, 0, 1, 1, 2) == PF_ERR_VALUE, "strided weight");
    pf_tensor w5 = pf_make(buf, PF_FLOAT32, 4, (int64_t[]){6, 2, 7, 7});
    CHECK(pf_conv2d(&x, &w5, NULL, &y, 1, 1, 0, 0, 1, 1, 2) == PF_ERR_VALUE, "kernel larger than input");
    pf_tensor yd = y;
    yd.dtype = PF_FLOAT64;
    CHECK(pf_conv2d(&x, &w, NULL, &yd, 1, 1, 0, 0, 1, 1, 2) == PF_ERR_TYPE, "out dtype");
    pf_tensor gxw = pf_make(buf, PF_FLOAT32, 4, (int64_t[]){1, 4, 5, 4});
    CHECK(pf_conv2d_backward(&y, &x, &w, &gxw, NULL, 1, 1, 0, 0, 1, 1, 2) == PF_ERR_VALUE, "grad_x shape");
    CHECK(pf_conv2d_backward(&y, &x, &w, NULL, &gxw, 1, 1, 0, 0, 1, 1, 2) == PF_ERR_VALUE, "grad_w shape");
}

int main(void) {
    const conv_cfg cfgs[] = {
        {3, 3, 1, 1, 1, 1, 1, 1}, {3, 3, 1, 1, 0, 0, 1, 1}, {3, 3, 2, 2, 1, 1, 1, 1}, {2, 2, 2, 2, 0, 0, 1, 1},
        {1, 1, 1, 1, 0, 0, 1, 1}, {3, 2, 1, 2, 2, 0, 1, 1}, {2, 3, 3, 1, 1, 2, 2, 1}, {3, 3, 1, 1, 2, 2, 2, 2},
        {5, 1, 2, 1, 2, 0, 1, 3}, {3, 3, 4, 3, 3, 3, 1, 1}, {4, 4, 1, 1, 5, 5, 1, 1},
        /* stride 1 at the input width (the one-copy-per-tap path), taller or shorter than the input */
        {3, 3, 1, 1, 0, 1, 1, 1}, {3, 5, 1, 1, 2, 2, 1, 1}, {1, 3, 1, 1, 0, 1, 1, 1}, {5, 3, 1, 1, 4, 2, 1, 2},
    };
    int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]);
    for (int i = 0; i < ncfg; i++)
        for (int layout = 0; layout < 3; layout++)
            for (int dt = 0; dt < 2; dt++) {
                double pad = i % 2 ? -INFINITY : 0.0;
                double err = im2col_case(dt, layout, i % 3 == 2, 2, 3, 7, 9, &cfgs[i], pad);
                CHECK(err == 0, "im2col cfg %d layout %d dtype %s: max diff %g", i, layout, pf_dtype_name[dt], err);
            }
    for (int i = 0; i < ncfg; i++)
        for (int layout = 0; layout < 3; layout++) adjoint_case(layout, 2, 3, 7, 9, &cfgs[i]);

    /* Conv2d-sized batch, parallel and serial: exercises the threaded path and memcpy rows */
    for (int nt = 1; nt <= 2; nt++) {
        pf_set_num_threads(nt);
        double err = im2col_case(PF_FLOAT32, 0, 0, 16, 16, 28, 28, &cfgs[0], 0.0);
        CHECK(err == 0, "large im2col with %d threads: %g", nt, err);
        adjoint_case(0, 4, 8, 12, 12, &cfgs[2]);
    }
    pf_set_num_threads(0);
    bad_inputs();
    conv2d_cases();
    pack_pieces();
    return pf_test_summary("test_conv");
}
