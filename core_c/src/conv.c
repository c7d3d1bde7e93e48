/* im2col / col2im: the unfold and fold behind Conv2d and the pooling layers, and conv2d's
 * table-driven unfold of small planes (at the end).
 *
 * x [N, C, H, W] <-> col [N, C*KH*KW, OH*OW]. Work is split over the N*C planes: each
 * plane writes its own KH*KW rows of col (im2col) or its own plane of x (col2im), so the
 * parallel loops never share an output element and col2im needs no atomics. */
#include <stdio.h>
#include "conv.h"

/* One plane; xp is x[n, c, 0, 0], cp is col[n, c*kh*kw, 0]. The contiguous stride-1 case
 * becomes a memcpy per output row, which is most of Conv2d's 3x3/pad 1 traffic. */
#define DEFINE_PLANES(T)                                                                                       \
    static void im2col_plane_##T(const T *xp, T *cp, const conv_geom *g, T pad) {                              \
        for (int64_t ki = 0; ki < g->kh; ki++)                                                                 \
            for (int64_t kj = 0; kj < g->kw; kj++) {                                                           \
                T *row = cp + (ki * g->kw + kj) * g->csr;                                                      \
                int64_t lo, hi, base = kj * g->dw - g->pw;                                                     \
                pf_valid_range(base, g->sw, g->W, g->OW, &lo, &hi);                                            \
                for (int64_t oh = 0; oh < g->OH; oh++) {                                                       \
                    T *o = row + oh * g->OW * g->csp;                                                          \
                    int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                              \
                    if (ih < 0 || ih >= g->H) {                                                                \
                        for (int64_t ow = 0; ow < g->OW; ow++) o[ow * g->csp] = pad;                           \
                        continue;                                                                              \
                    }                                                                                          \
                    /* first in-range input of the row; read only when lo < hi */                              \
                    const T *in = xp + ih * g->xsh + (lo * g->sw + base) * g->xsw;                             \
                    int64_t step = g->sw * g->xsw, n = hi - lo;                                                \
                    if (g->csp == 1) {                                                                         \
                        for (int64_t ow = 0; ow < lo; ow++) o[ow] = pad;                                       \
                        if (step == 1 && n > 0) memcpy(o + lo, in, (size_t)n * sizeof(T));                     \
                        else                                                                                   \
                            for (int64_t k = 0; k < n; k++) o[lo + k] = in[k * step];                          \
                        for (int64_t ow = hi; ow < g->OW; ow++) o[ow] = pad;                                   \
                    } else {                                                                                   \
                        for (int64_t ow = 0; ow < lo; ow++) o[ow * g->csp] = pad;                              \
                        for (int64_t k = 0; k < n; k++) o[(lo + k) * g->csp] = in[k * step];                   \
                        for (int64_t ow = hi; ow < g->OW; ow++) o[ow * g->csp] = pad;                          \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
    }                                                                                                          \
    /* Stride 1 with rows as long as the output's ('same' width) over a contiguous plane:                      \
     * a kernel tap's whole block of output rows is one run of the input shifted by the                        \
     * tap, so it is one memcpy and the padding columns are written over afterwards,                           \
     * instead of a 14-float memcpy per row (a third of a small conv's time) */                                \
    static void im2col_same_##T(const T *xp, T *cp, const conv_geom *g, T pad) {                               \
        int64_t H = g->H, Wd = g->W, HW = H * Wd;                                                              \
        for (int64_t ki = 0; ki < g->kh; ki++)                                                                 \
            for (int64_t kj = 0; kj < g->kw; kj++) {                                                           \
                T *row = cp + (ki * g->kw + kj) * g->csr;                                                      \
                int64_t lo, hi, base = kj * g->dw - g->pw, hlo, hhi;                                           \
                pf_valid_range(base, 1, Wd, g->OW, &lo, &hi);                                                  \
                pf_valid_range(ki * g->dh - g->ph, 1, H, g->OH, &hlo, &hhi);                                   \
                for (int64_t k = 0; k < hlo * g->OW; k++) row[k] = pad;                                        \
                for (int64_t k = hhi * g->OW; k < g->OH * g->OW; k++) row[k] = pad;                            \
                if (hlo >= hhi) continue;                                                                      \
                /* flat input [start, end) lands on output [hlo*OW, hhi*OW); the clipped ends                  \
                 * are padding columns, rewritten below */                                                     \
                int64_t start = (hlo + ki * g->dh - g->ph) * Wd + base, end = start + (hhi - hlo) * Wd;        \
                int64_t s0 = start < 0 ? 0 : start, s1 = end > HW ? HW : end;                                  \
                if (s1 > s0) memcpy(row + hlo * g->OW + (s0 - start), xp + s0, (size_t)(s1 - s0) * sizeof(T)); \
                for (int64_t oh = hlo; oh < hhi; oh++) {                                                       \
                    T *o = row + oh * g->OW;                                                                   \
                    for (int64_t ow = 0; ow < lo; ow++) o[ow] = pad;                                           \
                    for (int64_t ow = hi; ow < g->OW; ow++) o[ow] = pad;                                       \
                }                                                                                              \
            }                                                                                                  \
    }                                                                                                          \
    static void col2im_plane_##T(const T *cp, T *xp, const conv_geom *g) {                                     \
        for (int64_t ki = 0; ki < g->kh; ki++)                                                                 \
            for (int64_t kj = 0; kj < g->kw; kj++) {                                                           \
                const T *row = cp + (ki * g->kw + kj) * g->csr;                                                \
                int64_t lo, hi, base = kj * g->dw - g->pw;                                                     \
                pf_valid_range(base, g->sw, g->W, g->OW, &lo, &hi);                                            \
                for (int64_t oh = 0; oh < g->OH; oh++) {                                                       \
                    int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                              \
                    if (ih < 0 || ih >= g->H || lo == hi) continue;                                            \
                    const T *c = row + (oh * g->OW + lo) * g->csp;                                             \
                    T *out = xp + ih * g->xsh + (lo * g->sw + base) * g->xsw;                                  \
                    int64_t step = g->sw * g->xsw, n = hi - lo;                                                \
                    /* unit strides (Conv2d's stride-1 backward) get a loop gcc vectorizes */                  \
                    if (step == 1 && g->csp == 1)                                                              \
                        for (int64_t k = 0; k < n; k++) out[k] += c[k];                                        \
                    else                                                                                       \
                        for (int64_t k = 0; k < n; k++) out[k * step] += c[k * g->csp];                        \
                }                                                                                              \
            }                                                                                                  \
    }
DEFINE_PLANES(float)
DEFINE_PLANES(double)

int pf_window_geometry(const char *fn, int64_t H, int64_t W, int kh, int kw, int sh, int sw, int ph, int pw, int dh,
                       int dw, int half_pad, conv_geom *g) {
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1)
        return pf_error(PF_ERR_VALUE, "%s: kernel (%d, %d), stride (%d, %d) and dilation (%d, %d) must all be >= 1",
                        fn, kh, kw, sh, sw, dh, dw);
    if (ph < 0 || pw < 0) return pf_error(PF_ERR_VALUE, "%s: padding (%d, %d) must be >= 0", fn, ph, pw);
    if (half_pad && (2 * (int64_t)ph > (int64_t)dh * (kh - 1) + 1 || 2 * (int64_t)pw > (int64_t)dw * (kw - 1) + 1))
        return pf_error(PF_ERR_VALUE, "%s: padding (%d, %d) must be at most half the dilated kernel", fn, ph, pw);
    /* checked before dividing: C division truncates toward zero, so a small negative
     * numerator would otherwise pass as one output row */
    int64_t nh = H + 2 * (int64_t)ph - (int64_t)dh * (kh - 1) - 1;
    int64_t nw = W + 2 * (int64_t)pw - (int64_t)dw * (kw - 1) - 1;
    if (nh < 0 || nw < 0)
        return pf_error(PF_ERR_VALUE,
                        "%s: input of size %lldx%lld with padding (%d, %d) is too small for kernel (%d, %d) "
                        "with dilation (%d, %d) and stride (%d, %d)",
                        fn, (long long)H, (long long)W, ph, pw, kh, kw, dh, dw, sh, sw);
    *g = (conv_geom){.H = H, .W = W, .OH = nh / sh + 1, .OW = nw / sw + 1, .kh = kh, .kw = kw, .sh = sh, .sw = sw,
                     .ph = ph, .pw = pw, .dh = dh, .dw = dw};
    return PF_OK;
}

int pf_conv_geometry(const char *fn, const pf_tensor *x, const pf_tensor *col, int kh, int kw, int sh, int sw,
                 int ph, int pw, int dh, int dw, conv_geom *g) {
    char a[128], b[128];
    int rc;
    snprintf(a, sizeof a, "%s: x", fn);
    if ((rc = pf_check(x, a)) != PF_OK) return rc;
    snprintf(a, sizeof a, "%s: col", fn);
    if ((rc = pf_check(col, a)) != PF_OK) return rc;
    if (x->ndim != 4)
        return pf_error(PF_ERR_VALUE, "%s: x must be 4-d [N, C, H, W], got shape %s", fn, pf_shape_str(x, a));
    if (col->ndim != 3)
        return pf_error(PF_ERR_VALUE, "%s: col must be 3-d [N, C*KH*KW, OH*OW], got shape %s", fn,
                        pf_shape_str(col, a));
    if (x->dtype != col->dtype)
        return pf_error(PF_ERR_TYPE, "%s: x is %s but col is %s", fn, pf_dtype_name[x->dtype],
                        pf_dtype_name[col->dtype]);
    if (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: only float32 and float64 are supported, got %s", fn,
                        pf_dtype_name[x->dtype]);
    if ((rc = pf_window_geometry(fn, x->shape[2], x->shape[3], kh, kw, sh, sw, ph, pw, dh, dw, 0, g))) return rc;
    g->xsh = x->strides[2], g->xsw = x->strides[3], g->csr = col->strides[1], g->csp = col->strides[2];
    int64_t kk = (int64_t)kh * kw;
    if (g->OH > INT64_MAX / g->OW || x->shape[1] > INT64_MAX / kk)
        return pf_error(PF_ERR_VALUE, "%s: col for x of shape %s with kernel (%d, %d) would overflow", fn,
                        pf_shape_str(x, a), kh, kw);
    int64_t rows = x->shape[1] * kk;
    if (col->shape[0] != x->shape[0] || col->shape[1] != rows || col->shape[2] != g->OH * g->OW)
        return pf_error(PF_ERR_VALUE,
                        "%s: col has shape %s but x of shape %s with kernel (%d, %d), stride (%d, %d), "
                        "padding (%d, %d), dilation (%d, %d) needs [%lld, %lld, %lld]",
                        fn, pf_shape_str(col, a), pf_shape_str(x, b), kh, kw, sh, sw, ph, pw, dh, dw,
                        (long long)x->shape[0], (long long)rows, (long long)(g->OH * g->OW));
    return PF_OK;
}

/* One call's planes (sample, channel): each unfolds into (or folds from) its own rows of col. */
typedef struct {
    int fold, same;
    const pf_tensor *x, *col;
    const conv_geom *g;
    double pad_value;
} planes_job;

static void run_planes(void *arg, int64_t p0, int64_t p1) {
    const planes_job *j = arg;
    const conv_geom *g = j->g;
    int64_t C = j->x->shape[1], es = (int64_t)pf_dtype_size[j->x->dtype];
    const int64_t *xs = j->x->strides, *cs = j->col->strides;
    for (int64_t p = p0; p < p1; p++) {
        int64_t n = p / C, c = p % C;
        char *xp = (char *)j->x->data + (n * xs[0] + c * xs[1]) * es;
        char *cp = (char *)j->col->data + (n * cs[0] + c * g->kh * g->kw * cs[1]) * es;
        if (j->x->dtype == PF_FLOAT32) {
            if (j->fold) col2im_plane_float((const float *)cp, (float *)xp, g);
            else if (j->same) im2col_same_float((const float *)xp, (float *)cp, g, (float)j->pad_value);
            else im2col_plane_float((const float *)xp, (float *)cp, g, (float)j->pad_value);
        } else {
            if (j->fold) col2im_plane_double((const double *)cp, (double *)xp, g);
            else if (j->same) im2col_same_double((const double *)xp, (double *)cp, g, j->pad_value);
            else im2col_plane_double((const double *)xp, (double *)cp, g, j->pad_value);
        }
    }
}

static int run(int fold, const pf_tensor *xt, const pf_tensor *colt, const conv_geom *g, double pad_value) {
    int64_t planes = xt->shape[0] * xt->shape[1];
    if (planes == 0 || g->OH * g->OW == 0) return PF_OK;
    int same = g->sh == 1 && g->sw == 1 && g->xsw == 1 && g->xsh == g->W && g->OW == g->W && g->csp == 1;
    planes_job j = {fold, same, xt, colt, g, pad_value};
    pf_parallel_range(pf_threads_for(planes * g->kh * g->kw * g->OH * g->OW), planes, run_planes, &j);
    return PF_OK;
}

int pf_im2col(const pf_tensor *x, pf_tensor *col, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
              double pad_value) {
    conv_geom g;
    int rc = pf_conv_geometry("im2col", x, col, kh, kw, sh, sw, ph, pw, dh, dw, &g);
    return rc != PF_OK ? rc : run(0, x, col, &g, pad_value);
}

int pf_col2im(const pf_tensor *col, pf_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw) {
    conv_geom g;
    int rc = pf_conv_geometry("col2im", x, col, kh, kw, sh, sw, ph, pw, dh, dw, &g);
    return rc != PF_OK ? rc : run(1, x, col, &g, 0.0);
}

/* vol2col / col2vol: the 3-d unfold and fold behind conv3d and conv_transpose3d,
 * x [N, C, D, H, W] <-> col [N, C*KD*KH*KW, OD*OH*OW], split over the N*C planes as above. */
typedef struct {
    int64_t in[3], out[3], k[3], s[3], p[3], d[3], xs[3];
} vol_geom;

#define DEFINE_VOL(T)                                                                                              \
    static void vol2col_plane_##T(const T *xp, T *cp, const vol_geom *g, int64_t csr) {                            \
        int64_t OHW = g->out[1] * g->out[2], OW = g->out[2];                                                       \
        for (int64_t a = 0; a < g->k[0]; a++)                                                                      \
            for (int64_t b = 0; b < g->k[1]; b++)                                                                  \
                for (int64_t c = 0; c < g->k[2]; c++) {                                                            \
                    T *row = cp + ((a * g->k[1] + b) * g->k[2] + c) * csr;                                         \
                    int64_t lo, hi, base = c * g->d[2] - g->p[2];                                                  \
                    pf_valid_range(base, g->s[2], g->in[2], OW, &lo, &hi);                                         \
                    for (int64_t od = 0; od < g->out[0]; od++)                                                     \
                        for (int64_t oh = 0; oh < g->out[1]; oh++) {                                               \
                            T *o = row + od * OHW + oh * OW;                                                       \
                            int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];                                     \
                            int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];                                     \
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] || lo >= hi) {                \
                                memset(o, 0, (size_t)OW * sizeof(T));                                              \
                                continue;                                                                          \
                            }                                                                                      \
                            const T *in = xp + id * g->xs[0] + ih * g->xs[1] + (lo * g->s[2] + base) * g->xs[2];   \
                            int64_t step = g->s[2] * g->xs[2];                                                     \
                            for (int64_t ow = 0; ow < lo; ow++) o[ow] = 0;                                         \
                            if (step == 1) memcpy(o + lo, in, (size_t)(hi - lo) * sizeof(T));                      \
                            else                                                                                   \
                                for (int64_t k = 0; k < hi - lo; k++) o[lo + k] = in[k * step];                    \
                            for (int64_t ow = hi; ow < OW; ow++) o[ow] = 0;                                        \
                        }                                                                                          \
                }                                                                                                  \
    }                                                                                                              \
    static void col2vol_plane_##T(const T *cp, T *xp, const vol_geom *g, int64_t csr) {                            \
        int64_t OHW = g->out[1] * g->out[2], OW = g->out[2];                                                       \
        for (int64_t a = 0; a < g->k[0]; a++)                                                                      \
            for (int64_t b = 0; b < g->k[1]; b++)                                                                  \
                for (int64_t c = 0; c < g->k[2]; c++) {                                                            \
                    const T *row = cp + ((a * g->k[1] + b) * g->k[2] + c) * csr;                                   \
                    int64_t lo, hi, base = c * g->d[2] - g->p[2];                                                  \
                    pf_valid_range(base, g->s[2], g->in[2], OW, &lo, &hi);                                         \
                    for (int64_t od = 0; od < g->out[0]; od++)                                                     \
                        for (int64_t oh = 0; oh < g->out[1]; oh++) {                                               \
                            int64_t id = od * g->s[0] - g->p[0] + a * g->d[0];                                     \
                            int64_t ih = oh * g->s[1] - g->p[1] + b * g->d[1];                                     \
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] || lo >= hi) continue;        \
                            const T *o = row + od * OHW + oh * OW + lo;                                            \
                            T *out = xp + id * g->xs[0] + ih * g->xs[1] + (lo * g->s[2] + base) * g->xs[2];        \
                            int64_t step = g->s[2] * g->xs[2];                                                     \
                            for (int64_t k = 0; k < hi - lo; k++) out[k * step] += o[k];                           \
                        }                                                                                          \
                }                                                                                                  \
    }
DEFINE_VOL(float)
DEFINE_VOL(double)

typedef struct {
    int fold;
    const pf_tensor *x, *col;
    const vol_geom *g;
} vol_job;

static void run_vol_planes(void *arg, int64_t p0, int64_t p1) {
    const vol_job *j = arg;
    int64_t C = j->x->shape[1], es = (int64_t)pf_dtype_size[j->x->dtype], kk = j->g->k[0] * j->g->k[1] * j->g->k[2];
    const int64_t *xs = j->x->strides, *cs = j->col->strides;
    for (int64_t p = p0; p < p1; p++) {
        char *xp = (char *)j->x->data + ((p / C) * xs[0] + (p % C) * xs[1]) * es;
        char *cp = (char *)j->col->data + ((p / C) * cs[0] + (p % C) * kk * cs[1]) * es;
        if (j->x->dtype == PF_FLOAT32) {
            if (j->fold) col2vol_plane_float((const float *)cp, (float *)xp, j->g, cs[1]);
            else vol2col_plane_float((const float *)xp, (float *)cp, j->g, cs[1]);
        } else {
            if (j->fold) col2vol_plane_double((const double *)cp, (double *)xp, j->g, cs[1]);
            else vol2col_plane_double((const double *)xp, (double *)cp, j->g, cs[1]);
        }
    }
}

/* geom: kernel[3], stride[3], padding[3], dilation[3]; col must be contiguous in its last dim */
static int vol_run(const char *fn, int fold, const pf_tensor *x, const pf_tensor *col, const int64_t *geom) {
    char a[128], b[128];
    int rc;
    vol_geom g;
    if ((rc = pf_check(x, fn)) || (rc = pf_check(col, fn))) return rc;
    if (x->ndim != 5 || col->ndim != 3)
        return pf_error(PF_ERR_VALUE, "%s: x must be 5-d [N, C, D, H, W] and col 3-d, got shapes %s and %s", fn,
                        pf_shape_str(x, a), pf_shape_str(col, b));
    if (x->dtype != col->dtype || (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64))
        return pf_error(PF_ERR_TYPE, "%s: x and col must both be float32 or float64, got %s and %s", fn,
                        pf_dtype_name[x->dtype], pf_dtype_name[col->dtype]);
    int64_t kk = 1, L = 1;
    for (int t = 0; t < 3; t++) {
        int64_t k = geom[t], s = geom[3 + t], p = geom[6 + t], d = geom[9 + t];
        if (k < 1 || s < 1 || d < 1 || p < 0 || k > INT32_MAX || s > INT32_MAX || d > INT32_MAX || p > INT32_MAX)
            return pf_error(PF_ERR_VALUE, "%s: kernel, stride and dilation must be >= 1 and padding >= 0", fn);
        int64_t span = x->shape[2 + t] + 2 * p - d * (k - 1) - 1;
        if (span < 0)
            return pf_error(PF_ERR_VALUE, "%s: input %s is too small for kernel %lld (dilation %lld, padding %lld)",
                            fn, pf_shape_str(x, a), (long long)k, (long long)d, (long long)p);
        g.in[t] = x->shape[2 + t], g.out[t] = span / s + 1, g.k[t] = k, g.s[t] = s, g.p[t] = p, g.d[t] = d;
        g.xs[t] = x->strides[2 + t];
        kk *= k, L *= g.out[t];
    }
    if (col->shape[0] != x->shape[0] || col->shape[1] != x->shape[1] * kk || col->shape[2] != L)
        return pf_error(PF_ERR_VALUE, "%s: col has shape %s but x of shape %s needs [%lld, %lld, %lld]", fn,
                        pf_shape_str(col, a), pf_shape_str(x, b), (long long)x->shape[0],
                        (long long)(x->shape[1] * kk), (long long)L);
    if (col->strides[2] != 1 && L > 1) return pf_error(PF_ERR_VALUE, "%s: col must be contiguous in its last dim", fn);
    if (fold && !pf_is_contiguous(x)) return pf_error(PF_ERR_VALUE, "%s: x must be contiguous", fn);
    int64_t planes = x->shape[0] * x->shape[1];
    if (planes == 0 || L == 0) return PF_OK;
    vol_job j = {fold, x, col, &g};
    pf_parallel_range(pf_threads_for(planes * kk * L), planes, run_vol_planes, &j);
    return PF_OK;
}

int pf_vol2col(const pf_tensor *x, pf_tensor *col, const int64_t *geom) { return vol_run("vol2col", 0, x, col, geom); }

int pf_col2vol(const pf_tensor *col, pf_tensor *x, const int64_t *geom) { return vol_run("col2vol", 1, x, col, geom); }

/* conv2d's tiles over small planes (every late ResNet layer) unfold through a table made once
 * per call: for tap t and output position p, tab[t * L + p] is where in a channel's plane the
 * value is read (-1: padding, a zero). conv2d.c's run-by-run unfold spent more on bookkeeping
 * per output row than on copying when rows are 4-8 values long; this is one indexed load per
 * value, 16 at a time as AVX-512 gathers for float32 (CIFAR ResNet 4x4 and 8x8 layers: the
 * unfold went from 17-21% of a forward to 5-12%). Within a tap no two positions read the same
 * input, so the fold's scatter-add never collides. */
#define TAB_MAX (1 << 16) /* table entries: kernel taps x output positions */
#define DEFINE_TAB(T)                                                                                                \
    PF_VEC_CLONES static void tab_unfold_##T(const T *xn, int64_t xsc, int64_t nc, int64_t kk, const int32_t *tab,   \
                                             int64_t L, T *col, int64_t ld, int64_t p0, int64_t lt) {                \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t t = 0; t < kk; t++) {                                                                       \
                const int32_t *ix = tab + t * L + p0;                                                                \
                const T *xp = xn + c * xsc;                                                                          \
                T *row = col + (c * kk + t) * ld;                                                                    \
                for (int64_t p = 0; p < lt; p++) {                                                                   \
                    int32_t o = ix[p];                                                                               \
                    T v = xp[o >= 0 ? o : 0];                                                                        \
                    row[p] = o >= 0 ? v : 0;                                                                         \
                }                                                                                                    \
            }                                                                                                        \
    }                                                                                                                \
    static void tab_fold_##T(const T *col, int64_t ld, T *gxn, int64_t psz, int64_t nc, int64_t kk,                 \
                             const int32_t *tab, int64_t L, int64_t p0, int64_t lt) {                                \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t t = 0; t < kk; t++) {                                                                       \
                const int32_t *ix = tab + t * L + p0;                                                                \
                const T *row = col + (c * kk + t) * ld;                                                              \
                T *gp = gxn + c * psz;                                                                               \
                for (int64_t p = 0; p < lt; p++)                                                                     \
                    if (ix[p] >= 0) gp[ix[p]] += row[p];                                                             \
            }                                                                                                        \
    }
DEFINE_TAB(float)
DEFINE_TAB(double)

#ifdef HAVE_DIRECT
#include <immintrin.h>
/* gcc keeps tab_unfold scalar (a load and a branch per value); 16 at a time as masked gathers */
__attribute__((target("avx512f"))) static void tab_unfold_512(const float *xn, int64_t xsc, int64_t nc, int64_t kk,
                                                              const int32_t *tab, int64_t L, float *col, int64_t ld,
                                                              int64_t p0, int64_t lt) {
    for (int64_t c = 0; c < nc; c++)
        for (int64_t t = 0; t < kk; t++) {
            const int32_t *ix = tab + t * L + p0;
            const float *xp = xn + c * xsc;
            float *row = col + (c * kk + t) * ld;
            for (int64_t p = 0; p < lt; p += 16) {
                __mmask16 m = lt - p >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (lt - p)) - 1);
                __m512i o = _mm512_maskz_loadu_epi32(m, ix + p);
                __mmask16 ok = _mm512_mask_cmpge_epi32_mask(m, o, _mm512_setzero_si512());
                _mm512_mask_storeu_ps(row + p, m, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, o, xp, 4));
            }
        }
}
/* the fold as gather, add, scatter: within a tap no two positions write one input, so a
 * vector's lanes never collide (gcc keeps the scalar loop's scatter-add scalar) */
__attribute__((target("avx512f"))) static void tab_fold_512(const float *col, int64_t ld, float *gxn, int64_t psz,
                                                            int64_t nc, int64_t kk, const int32_t *tab, int64_t L,
                                                            int64_t p0, int64_t lt) {
    for (int64_t c = 0; c < nc; c++)
        for (int64_t t = 0; t < kk; t++) {
            const int32_t *ix = tab + t * L + p0;
            const float *row = col + (c * kk + t) * ld;
            float *gp = gxn + c * psz;
            for (int64_t p = 0; p < lt; p += 16) {
                __mmask16 m = lt - p >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (lt - p)) - 1);
                __m512i o = _mm512_maskz_loadu_epi32(m, ix + p);
                __mmask16 ok = _mm512_mask_cmpge_epi32_mask(m, o, _mm512_setzero_si512());
                __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, o, gp, 4);
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(ok, row + p));
                _mm512_mask_i32scatter_ps(gp, ok, o, v, 4);
            }
        }
}
#endif

/* tab [kk, L] over planes with strides (sh_, sw_) */
static void fill_taps(const conv_geom *g, int64_t sh_, int64_t sw_, int32_t *tab) {
    int64_t L = g->OH * g->OW;
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            int32_t *t = tab + (ki * g->kw + kj) * L;
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    int64_t ih = oh * g->sh + ki * g->dh - g->ph, iw = ow * g->sw + kj * g->dw - g->pw;
                    int ok = ih >= 0 && ih < g->H && iw >= 0 && iw < g->W;
                    t[oh * g->OW + ow] = ok ? (int32_t)(ih * sh_ + iw * sw_) : -1;
                }
        }
}

int32_t *pf_conv_taps(conv_job *j, int grad) {
    const conv_geom *g = &j->g;
    int64_t n = j->kk * j->L, span = (g->H - 1) * (g->xsh < 0 ? -g->xsh : g->xsh) + (g->W - 1) * (g->xsw < 0 ? -g->xsw : g->xsw);
    if (n > TAB_MAX || span >= INT32_MAX || g->xsh < 0 || g->xsw < 0) return NULL;
    int same = g->xsh == g->W && g->xsw == 1;
    int32_t *tab = pf_alloc((size_t)(grad && !same ? 2 * n : n) * sizeof(int32_t));
    if (!tab) return NULL; /* the run-by-run unfold needs no memory */
    fill_taps(g, g->xsh, g->xsw, tab);
    j->tab = j->tabg = tab;
    j->gather = !strcmp(pf_gemm_path(), "avx512");
    if (grad && !same) fill_taps(g, g->W, 1, tab + n), j->tabg = tab + n;
    return tab;
}

#ifdef HAVE_DIRECT
__attribute__((target("avx512f"))) void pf_conv_pack_b(const float *xg, int64_t xsc, int64_t kk, const int32_t *offs,
                                                       int64_t ltp, int64_t pc, int64_t kcur, int64_t nr, float *bp) {
    for (int64_t k = pc; k < pc + kcur; k++) {
        const float *xc = xg + k / kk * xsc;
        const int32_t *ix = offs + k % kk * ltp;
        float *dst = bp + (k - pc) * nr;
        for (int64_t i = 0; i < ltp; i += 16) {
            __m512i o = _mm512_loadu_si512(ix + i);
            __mmask16 ok = _mm512_cmpge_epi32_mask(o, _mm512_setzero_si512());
            _mm512_storeu_ps(dst + i / nr * kcur * nr + i % nr, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, o, xc, 4));
        }
    }
}
#endif

void pf_conv_tab_unfold(const conv_job *j, const char *xn, int64_t nc, char *col, int64_t ld, int64_t p0, int64_t lt) {
#ifdef HAVE_DIRECT
    if (j->dt == PF_FLOAT32 && j->gather) {
        tab_unfold_512((const float *)xn, j->xsc, nc, j->kk, j->tab, j->L, (float *)col, ld, p0, lt);
        return;
    }
#endif
    if (j->dt == PF_FLOAT32)
        tab_unfold_float((const float *)xn, j->xsc, nc, j->kk, j->tab, j->L, (float *)col, ld, p0, lt);
    else
        tab_unfold_double((const double *)xn, j->xsc, nc, j->kk, j->tab, j->L, (double *)col, ld, p0, lt);
}

void pf_conv_tab_fold(const conv_job *j, const char *col, int64_t ld, char *gxn, int64_t nc, int64_t p0, int64_t lt) {
    int64_t psz = j->g.H * j->g.W;
#ifdef HAVE_DIRECT
    if (j->dt == PF_FLOAT32 && j->gather) {
        tab_fold_512((const float *)col, ld, (float *)gxn, psz, nc, j->kk, j->tabg, j->L, p0, lt);
        return;
    }
#endif
    if (j->dt == PF_FLOAT32)
        tab_fold_float((const float *)col, ld, (float *)gxn, psz, nc, j->kk, j->tabg, j->L, p0, lt);
    else
        tab_fold_double((const double *)col, ld, (double *)gxn, psz, nc, j->kk, j->tabg, j->L, p0, lt);
}
