/* A naive conv2d for the C tests of the convolution files (test_conv.c, test_conv_direct.c):
 * the geometry, inputs in three memory layouts, and the forward and both gradients checked
 * against double loops. Include after check.h. */
#ifndef PF_CONV_REF_H
#define PF_CONV_REF_H
#include <stdlib.h>

typedef struct { int kh, kw, sh, sw, ph, pw, dh, dw; } conv_cfg;

static inline int64_t out_size(int64_t n, int k, int s, int p, int d) { return (n + 2 * p - d * (k - 1) - 1) / s + 1; }

/* x element (n, c, h, w) through the descriptor's strides, as double */
static inline double xat(const pf_tensor *x, int64_t n, int64_t c, int64_t h, int64_t w) {
    int64_t o = n * x->strides[0] + c * x->strides[1] + h * x->strides[2] + w * x->strides[3];
    return x->dtype == PF_FLOAT32 ? ((float *)x->data)[o] : ((double *)x->data)[o];
}

/* layout: 0 contiguous, 1 every other element along W, 2 channels-last (NHWC memory) */
static inline pf_tensor make_x(int dt, int layout, int64_t N, int64_t C, int64_t H, int64_t W, unsigned *seed) {
    size_t es = pf_dtype_size[dt];
    int64_t cap = N * C * H * W * (layout == 1 ? 2 : 1);
    pf_tensor x = {.data = malloc((size_t)cap * es), .dtype = dt, .ndim = 4, .shape = {N, C, H, W}};
    for (int64_t i = 0; i < cap; i++) pf_store_f64((char *)x.data + i * es, dt, frand(seed));
    if (layout == 0) x = (pf_tensor){x.data, dt, 4, {N, C, H, W}, {C * H * W, H * W, W, 1}};
    if (layout == 1) x = (pf_tensor){x.data, dt, 4, {N, C, H, W}, {C * H * W * 2, H * W * 2, W * 2, 2}};
    if (layout == 2) x = (pf_tensor){x.data, dt, 4, {N, C, H, W}, {H * W * C, 1, W * C, C}};
    return x;
}

/* conv2d forward and both gradients against naive double loops, through every kernel
 * path (the direct AVX-512 kernels and the unfold + GEMM tiles). Returns the max error
 * relative to the largest reference value. */
static inline double conv2d_case(int dt, int layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int groups,
                          const conv_cfg *g, int bias) {
    unsigned seed = 11;
    pf_tensor x = make_x(dt, layout, N, C, H, W, &seed);
    int64_t OH = out_size(H, g->kh, g->sh, g->ph, g->dh), OW = out_size(W, g->kw, g->sw, g->pw, g->dw);
    int64_t cg = C / groups, og = O / groups, nw = O * cg * g->kh * g->kw, ny = N * O * OH * OW;
    size_t es = pf_dtype_size[dt];
    char *wb = malloc((size_t)nw * es), *bb = malloc((size_t)O * es), *yb = malloc((size_t)ny * es);
    char *gyb = malloc((size_t)ny * es), *gxb = malloc((size_t)(N * C * H * W) * es), *gwb = malloc((size_t)nw * es);
    double *ry = calloc((size_t)ny, 8), *rgx = calloc((size_t)(N * C * H * W), 8), *rgw = calloc((size_t)nw, 8);
    for (int64_t i = 0; i < nw; i++) pf_store_f64(wb + i * es, dt, frand(&seed));
    for (int64_t i = 0; i < O; i++) pf_store_f64(bb + i * es, dt, frand(&seed));
    for (int64_t i = 0; i < ny; i++) pf_store_f64(gyb + i * es, dt, frand(&seed));
    pf_tensor w = pf_make(wb, dt, 4, (int64_t[]){O, cg, g->kh, g->kw}), b = pf_make(bb, dt, 1, (int64_t[]){O});
    pf_tensor y = pf_make(yb, dt, 4, (int64_t[]){N, O, OH, OW}), gy = pf_make(gyb, dt, 4, (int64_t[]){N, O, OH, OW});
    pf_tensor gx = pf_make(gxb, dt, 4, (int64_t[]){N, C, H, W}), gw = pf_make(gwb, dt, 4, w.shape);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t yi = ((n * O + o) * OH + oh) * OW + ow;
                    double acc = bias ? pf_load_f64(bb + o * es, dt) : 0, gyv = pf_load_f64(gyb + yi * es, dt);
                    for (int64_t c = 0; c < cg; c++)
                        for (int ki = 0; ki < g->kh; ki++)
                            for (int kj = 0; kj < g->kw; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                int64_t ci = o / og * cg + c, wi = ((o * cg + c) * g->kh + ki) * g->kw + kj;
                                double wv = pf_load_f64(wb + wi * es, dt), xv = xat(&x, n, ci, ih, iw);
                                acc += wv * xv;
                                rgw[wi] += gyv * xv;
                                rgx[((n * C + ci) * H + ih) * W + iw] += gyv * wv;
                            }
                    ry[yi] = acc;
                }
    double err = 0, scale = 1e-30;
    CHECK_OK(pf_conv2d(&x, &w, bias ? &b : NULL, &y, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, groups));
    CHECK_OK(pf_conv2d_backward(&gy, &x, &w, &gx, &gw, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, groups));
    struct { const char *got; const double *ref; int64_t n; } outs[3] = {{yb, ry, ny}, {gxb, rgx, N * C * H * W}, {gwb, rgw, nw}};
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < outs[k].n; i++) {
            double d = fabs(pf_load_f64(outs[k].got + i * es, dt) - outs[k].ref[i]);
            err = d > err ? d : err, scale = fabs(outs[k].ref[i]) > scale ? fabs(outs[k].ref[i]) : scale;
        }
    free(x.data), free(wb), free(bb), free(yb), free(gyb), free(gxb), free(gwb), free(ry), free(rgx), free(rgw);
    return err / scale;
}

#endif
