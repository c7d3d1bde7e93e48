/* Max pooling in one pass: each window's maximum and its flat index in the input plane,
 * and a backward that scatters the gradient to those indices.
 *
 * The im2col route wrote kh*kw copies of the input (with -inf padding) and reduced them;
 * reading each window in place touches the input once and keeps the argmax for backward,
 * which then needs no col2im. Work is split over the N*C planes, so backward's scatter
 * (windows may overlap when stride < kernel) never shares an output element between
 * threads. The rules follow torch's CPU kernel: a NaN wins (the last one seen), ties keep
 * the first position, and a window with nothing above -inf reports its first in-range
 * position. */
#include <stdio.h>
#include "conv.h"

#define DEFINE_POOL(T)                                                                           \
    /* One kernel tap over a run of outputs: y and ix (the output row) hold the running          \
     * maximum; a loop of selects gcc vectorizes when the input run has unit stride */           \
    PF_VEC_CLONES static void maxpool_tap_##T(const T *in, int64_t step, T *y, int64_t *ix, int64_t n, \
                                        int64_t idx0, int64_t istep) {                           \
        for (int64_t k = 0; k < n; k++) {                                                        \
            T v = in[k * step], b = y[k];                                                        \
            int t = (v > b) | (v != v);                                                          \
            y[k] = t ? v : b;                                                                    \
            ix[k] = t ? idx0 + k * istep : ix[k];                                                \
        }                                                                                        \
    }                                                                                            \
    /* Any window: the taps in the window's own order (row, then column), each applied to a      \
     * whole output row at once, so every window sees the same sequence of comparisons as        \
     * a window-by-window loop; windows that never beat -inf then get their first in-range       \
     * position, as torch reports */                                                             \
    static void maxpool_plane_##T(const T *x, T *y, int64_t *ix, const conv_geom *g) {               \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                                 \
            T *yr = y + oh * g->OW;                                                              \
            int64_t *ir = ix + oh * g->OW, hb = oh * g->sh - g->ph, ilo, ihi;                    \
            for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = -INFINITY, ir[ow] = -1;              \
            pf_valid_range(hb, g->dh, g->H, g->kh, &ilo, &ihi);                                  \
            for (int64_t i = ilo; i < ihi; i++) {                                                \
                int64_t h = hb + i * g->dh;                                                      \
                for (int64_t j = 0; j < g->kw; j++) {                                            \
                    int64_t base = j * g->dw - g->pw, lo, hi;                                    \
                    pf_valid_range(base, g->sw, g->W, g->OW, &lo, &hi);                          \
                    if (lo < hi)                                                                 \
                        maxpool_tap_##T(x + h * g->xsh + (lo * g->sw + base) * g->xsw, g->sw * g->xsw, yr + lo, \
                                        ir + lo, hi - lo, h * g->W + lo * g->sw + base, g->sw);  \
                }                                                                                \
            }                                                                                    \
            for (int64_t ow = 0; ow < g->OW; ow++)                                               \
                if (ir[ow] < 0) {                                                                \
                    int64_t wb = ow * g->sw - g->pw, jlo, jhi;                                   \
                    pf_valid_range(wb, g->dw, g->W, g->kw, &jlo, &jhi);                          \
                    ir[ow] = (hb + ilo * g->dh) * g->W + wb + jlo * g->dw;                       \
                }                                                                                \
        }                                                                                        \
    }                                                                                            \
    /* 2x2 windows at stride 2 over unit-stride rows without padding or dilation: the usual      \
     * MaxPool2d(2). One output row at a time in a loop of selects gcc vectorizes (once per      \
     * ISA); the winner's offset in the window (0, 1, W, W + 1) is kept as an int64 */           \
    PF_VEC_CLONES static void maxpool2_row_##T(const T *r0, const T *r1, T *y, int64_t *ix, int64_t ow_n, \
                                         int64_t base, int64_t W) {                              \
        for (int64_t ow = 0; ow < ow_n; ow++) {                                                  \
            T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];            \
            T best = a;                                                                          \
            int64_t arg = 0;                                                                     \
            int t = (b > best) | (b != b);                                                       \
            best = t ? b : best;                                                                 \
            arg = t ? 1 : arg;                                                                   \
            t = (c > best) | (c != c);                                                           \
            best = t ? c : best;                                                                 \
            arg = t ? W : arg;                                                                   \
            t = (d > best) | (d != d);                                                           \
            best = t ? d : best;                                                                 \
            arg = t ? W + 1 : arg;                                                               \
            y[ow] = best;                                                                        \
            ix[ow] = base + 2 * ow + arg;                                                        \
        }                                                                                        \
    }                                                                                            \
    static void maxpool2_plane_##T(const T *x, T *y, int64_t *ix, const conv_geom *g) {              \
        for (int64_t oh = 0; oh < g->OH; oh++)                                                   \
            maxpool2_row_##T(x + 2 * oh * g->xsh, x + (2 * oh + 1) * g->xsh, y + oh * g->OW, ix + oh * g->OW, \
                             g->OW, 2 * oh * g->W, g->W);                                        \
    }                                                                                            \
    /* gx plane (contiguous) = 0, then gx[ix[k]] += gy[k]; returns the first bad index or -1 */  \
    static int64_t maxpool_back_plane_##T(const T *gy, int64_t gsh, int64_t gsw, const int64_t *ix, \
                                          T *gx, const conv_geom *g) {                               \
        int64_t hw = g->H * g->W;                                                                \
        memset(gx, 0, (size_t)hw * sizeof(T));                                                   \
        for (int64_t oh = 0; oh < g->OH; oh++)                                                   \
            for (int64_t ow = 0; ow < g->OW; ow++) {                                             \
                int64_t k = ix[oh * g->OW + ow];                                                 \
                if (k < 0 || k >= hw) return oh * g->OW + ow;                                    \
                gx[k] += gy[oh * gsh + ow * gsw];                                                \
            }                                                                                    \
        return -1;                                                                               \
    }
DEFINE_POOL(float)
DEFINE_POOL(double)

static int need_contig(const char *fn, const char *what, const pf_tensor *t) {
    return pf_is_contiguous(t) ? PF_OK : pf_error(PF_ERR_VALUE, "%s: %s must be contiguous", fn, what);
}

/* Validates x [N, C, H, W] against an [N, C, OH, OW] tensor `o` (the output or its
 * gradient) and the int64 indices of that shape; fills g. */
static int setup(const char *fn, const pf_tensor *x, const pf_tensor *o, const pf_tensor *ix, int kh, int kw,
                 int sh, int sw, int ph, int pw, int dh, int dw, conv_geom *g) {
    char a[128], b[128];
    int rc;
    if ((rc = pf_check(x, "max_pool2d: input")) || (rc = pf_check(o, "max_pool2d: output")) ||
        (rc = pf_check(ix, "max_pool2d: indices")))
        return rc;
    if (x->ndim != 4 || o->ndim != 4 || ix->ndim != 4)
        return pf_error(PF_ERR_VALUE, "%s: input, output and indices must be 4-d [N, C, H, W], got %d, %d and %d dims",
                        fn, x->ndim, o->ndim, ix->ndim);
    if (x->dtype != o->dtype)
        return pf_error(PF_ERR_TYPE, "%s: input is %s but output is %s", fn, pf_dtype_name[x->dtype],
                        pf_dtype_name[o->dtype]);
    if (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: only float32 and float64 are supported, got %s", fn,
                        pf_dtype_name[x->dtype]);
    if (ix->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "%s: indices must be int64, got %s", fn, pf_dtype_name[ix->dtype]);
    if ((rc = pf_window_geometry(fn, x->shape[2], x->shape[3], kh, kw, sh, sw, ph, pw, dh, dw, 1, g))) return rc;
    g->xsh = x->strides[2], g->xsw = x->strides[3];
    for (int d = 0; d < 4; d++) {
        int64_t want = d == 0 ? x->shape[0] : d == 1 ? x->shape[1] : d == 2 ? g->OH : g->OW;
        if (o->shape[d] != want || ix->shape[d] != want)
            return pf_error(PF_ERR_VALUE, "%s: output %s and indices %s must be [%lld, %lld, %lld, %lld] for input %s",
                            fn, pf_shape_str(o, a), pf_shape_str(ix, b), (long long)x->shape[0],
                            (long long)x->shape[1], (long long)g->OH, (long long)g->OW, pf_shape_str(x, a));
    }
    return need_contig(fn, "indices", ix);
}

/* One call's planes (sample, channel); backward's scatter stays within a plane, so no two
 * threads share an element. bad_plane and bad_pos: backward's first index outside its plane. */
typedef struct {
    const pf_tensor *x, *grad_out, *indices;
    pf_tensor *out, *grad_in;
    const conv_geom *g;
    int fast;
    int64_t bad_plane, bad_pos;
} pool_job;

static void pool_planes(void *arg, int64_t p0, int64_t p1) {
    const pool_job *j = arg;
    const conv_geom *g = j->g;
    const pf_tensor *x = j->x;
    int64_t C = x->shape[1], opl = g->OH * g->OW, es = (int64_t)pf_dtype_size[x->dtype];
    for (int64_t p = p0; p < p1; p++) {
        const char *xp = (const char *)x->data + ((p / C) * x->strides[0] + (p % C) * x->strides[1]) * es;
        char *yp = (char *)j->out->data + p * opl * es;
        int64_t *ip = (int64_t *)j->indices->data + p * opl;
        if (x->dtype == PF_FLOAT32)
            (j->fast ? maxpool2_plane_float : maxpool_plane_float)((const float *)xp, (float *)yp, ip, g);
        else
            (j->fast ? maxpool2_plane_double : maxpool_plane_double)((const double *)xp, (double *)yp, ip, g);
    }
}

static void pool_back_planes(void *arg, int64_t p0, int64_t p1) {
    pool_job *j = arg;
    const conv_geom *g = j->g;
    const int64_t *gs = j->grad_out->strides;
    int64_t C = j->grad_in->shape[1], opl = g->OH * g->OW, hw = g->H * g->W;
    int64_t es = (int64_t)pf_dtype_size[j->grad_in->dtype];
    for (int64_t p = p0; p < p1; p++) {
        const char *gp = (const char *)j->grad_out->data + ((p / C) * gs[0] + (p % C) * gs[1]) * es;
        const int64_t *ip = (const int64_t *)j->indices->data + p * opl;
        char *xp = (char *)j->grad_in->data + p * hw * es;
        int64_t bad = j->grad_in->dtype == PF_FLOAT32
                          ? maxpool_back_plane_float((const float *)gp, gs[2], gs[3], ip, (float *)xp, g)
                          : maxpool_back_plane_double((const double *)gp, gs[2], gs[3], ip, (double *)xp, g);
        if (bad < 0) continue;
#pragma omp critical(pf_pool_bad)
        if (j->bad_plane < 0 || p < j->bad_plane) j->bad_plane = p, j->bad_pos = bad;
    }
}

int pf_max_pool2d(const pf_tensor *x, pf_tensor *out, pf_tensor *indices, int kh, int kw, int sh, int sw, int ph,
                  int pw, int dh, int dw) {
    conv_geom g;
    int rc = setup("max_pool2d", x, out, indices, kh, kw, sh, sw, ph, pw, dh, dw, &g);
    if (rc || (rc = need_contig("max_pool2d", "output", out))) return rc;
    int64_t planes = x->shape[0] * x->shape[1], opl = g.OH * g.OW;
    if (planes == 0 || opl == 0) return PF_OK;
    int fast = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1 && g.xsw == 1;
    pool_job j = {.x = x, .indices = indices, .out = out, .g = &g, .fast = fast};
    pf_parallel_range(pf_threads_for(planes * opl * kh * kw), planes, pool_planes, &j);
    return PF_OK;
}

int pf_max_pool2d_backward(const pf_tensor *grad_out, const pf_tensor *indices, pf_tensor *grad_in, int kh, int kw,
                           int sh, int sw, int ph, int pw, int dh, int dw) {
    conv_geom g;
    int rc = setup("max_pool2d_backward", grad_in, grad_out, indices, kh, kw, sh, sw, ph, pw, dh, dw, &g);
    if (rc || (rc = need_contig("max_pool2d_backward", "grad_input", grad_in))) return rc;
    int64_t planes = grad_in->shape[0] * grad_in->shape[1], opl = g.OH * g.OW;
    if (planes == 0) return PF_OK;
    pool_job j = {.grad_out = grad_out, .indices = indices, .grad_in = grad_in, .g = &g, .bad_plane = -1};
    pf_parallel_range(pf_threads_for(planes * (g.H * g.W + opl)), planes, pool_back_planes, &j);
    if (j.bad_plane >= 0)
        return pf_error(PF_ERR_INDEX, "max_pool2d_backward: index %lld at position %lld of plane %lld is outside "
                        "the %lldx%lld input plane",
                        (long long)((const int64_t *)indices->data)[j.bad_plane * opl + j.bad_pos],
                        (long long)j.bad_pos, (long long)j.bad_plane, (long long)g.H, (long long)g.W);
    return PF_OK;
}
