/* Pooling over 1-3 spatial dims, seen as [N, C, D, H, W] (1-d and 2-d pools pass size-1 dims):
 * max pooling with each window's flat index in the input plane, average pooling, the adaptive
 * pools, and their backwards.
 *
 * The im2col route wrote kd*kh*kw copies of the input and reduced them; reading each window in
 * place touches the input once and keeps the argmax for backward, which then needs no col2im.
 * A kernel tap (one position of the window) is applied to a whole output row at once, a loop gcc
 * vectorizes when the input run has unit stride, and every window still sees its positions in
 * the window's own order (depth, row, column). Work is split over the N*C planes, so backward's
 * scatter (windows may overlap when stride < kernel) never shares an output element between
 * threads. The rules follow torch's CPU kernels: a NaN wins (the last one seen), ties keep the
 * first position, a window with nothing above -inf reports its first in-range position, and
 * ceil_mode adds a last window per dim when it starts inside the input or its left padding. */
#include <stdio.h>
#include <stdlib.h>
#include "core.h"

typedef struct {
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
    int64_t xs[3]; /* input element strides over (D, H, W) */
} pool_geom;

/* Output size of one dim, torch's pooling_output_shape; -1 when no window fits */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode) {
    int64_t span = in + 2 * p - d * (k - 1) - 1;
    if (span < 0) return -1;
    int64_t o = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

/* An average window's divisor along one dim (torch's avg_pool rules): the window clipped to the
 * padded input (count_include_pad) or to the input itself */
static inline int64_t avg_extent(int64_t o, const pool_geom *g, int t, int include_pad) {
    int64_t a = o * g->s[t] - g->p[t], b = a + g->k[t];
    if (b > g->in[t] + g->p[t]) b = g->in[t] + g->p[t];
    if (include_pad) return b - a;
    if (a < 0) a = 0;
    if (b > g->in[t]) b = g->in[t];
    return b - a;
}

#define DEFINE_POOL(T)                                                                                            \
    /* One kernel tap over a run of outputs: y and ix (the output row) hold the running maximum */              \
    PF_VEC_CLONES static void maxpool_tap_##T(const T *in, int64_t step, T *y, int64_t *ix, int64_t n,            \
                                              int64_t idx0, int64_t istep) {                                      \
        for (int64_t k = 0; k < n; k++) {                                                                         \
            T v = in[k * step], b = y[k];                                                                         \
            int t = (v > b) | (v != v);                                                                           \
            y[k] = t ? v : b;                                                                                     \
            ix[k] = t ? idx0 + k * istep : ix[k];                                                                 \
        }                                                                                                         \
    }                                                                                                             \
    PF_VEC_CLONES static void avgpool_tap_##T(const T *in, int64_t step, T *y, int64_t n) {                       \
        for (int64_t k = 0; k < n; k++) y[k] += in[k * step];                                                     \
    }                                                                                                             \
    PF_VEC_CLONES static void avgpool_back_tap_##T(const T *g, T *out, int64_t step, int64_t n) {                 \
        for (int64_t k = 0; k < n; k++) out[k * step] += g[k];                                                    \
    }                                                                                                             \
    /* max: y, ix are the plane's outputs; windows that never beat -inf get their first in-range position */     \
    static void maxpool_plane_##T(const T *x, T *y, int64_t *ix, const pool_geom *g) {                            \
        int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                                       \
        for (int64_t od = 0; od < g->out[0]; od++) {                                                              \
            int64_t db = od * g->s[0] - g->p[0], dlo, dhi;                                                        \
            pf_valid_range(db, g->d[0], g->in[0], g->k[0], &dlo, &dhi);                                           \
            for (int64_t oh = 0; oh < OH; oh++) {                                                                 \
                T *yr = y + (od * OH + oh) * OW;                                                                  \
                int64_t *ir = ix + (od * OH + oh) * OW, hb = oh * g->s[1] - g->p[1], hlo, hhi;                     \
                for (int64_t ow = 0; ow < OW; ow++) yr[ow] = -INFINITY, ir[ow] = -1;                              \
                pf_valid_range(hb, g->d[1], H, g->k[1], &hlo, &hhi);                                              \
                for (int64_t a = dlo; a < dhi; a++)                                                               \
                    for (int64_t i = hlo; i < hhi; i++) {                                                         \
                        int64_t dd = db + a * g->d[0], h = hb + i * g->d[1];                                      \
                        for (int64_t j = 0; j < g->k[2]; j++) {                                                   \
                            int64_t base = j * g->d[2] - g->p[2], lo, hi;                                         \
                            pf_valid_range(base, g->s[2], W, OW, &lo, &hi);                                       \
                            if (lo < hi)                                                                          \
                                maxpool_tap_##T(x + dd * g->xs[0] + h * g->xs[1] + (lo * g->s[2] + base) * g->xs[2], \
                                                g->s[2] * g->xs[2], yr + lo, ir + lo, hi - lo,                    \
                                                (dd * H + h) * W + lo * g->s[2] + base, g->s[2]);                 \
                        }                                                                                         \
                    }                                                                                             \
                for (int64_t ow = 0; ow < OW; ow++)                                                               \
                    if (ir[ow] < 0) {                                                                             \
                        int64_t wb = ow * g->s[2] - g->p[2], jlo, jhi;                                            \
                        pf_valid_range(wb, g->d[2], W, g->k[2], &jlo, &jhi);                                      \
                        ir[ow] = ((db + dlo * g->d[0]) * H + hb + hlo * g->d[1]) * W + wb + jlo * g->d[2];         \
                    }                                                                                             \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* 2x2 windows at stride 2 over unit-stride rows without padding or dilation: the usual                      \
     * MaxPool2d(2). The winner's offset in the window (0, 1, W, W + 1) is kept as an int64 */                    \
    PF_VEC_CLONES static void maxpool2_row_##T(const T *r0, const T *r1, T *y, int64_t *ix, int64_t ow_n,         \
                                               int64_t base, int64_t W) {                                         \
        for (int64_t ow = 0; ow < ow_n; ow++) {                                                                   \
            T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];                             \
            T best = a;                                                                                           \
            int64_t arg = 0;                                                                                      \
            int t = (b > best) | (b != b);                                                                        \
            best = t ? b : best;                                                                                  \
            arg = t ? 1 : arg;                                                                                    \
            t = (c > best) | (c != c);                                                                            \
            best = t ? c : best;                                                                                  \
            arg = t ? W : arg;                                                                                    \
            t = (d > best) | (d != d);                                                                            \
            best = t ? d : best;                                                                                  \
            arg = t ? W + 1 : arg;                                                                                \
            y[ow] = best;                                                                                         \
            ix[ow] = base + 2 * ow + arg;                                                                         \
        }                                                                                                         \
    }                                                                                                             \
    static void maxpool2_plane_##T(const T *x, T *y, int64_t *ix, const pool_geom *g) {                           \
        for (int64_t oh = 0; oh < g->out[1]; oh++)                                                                \
            maxpool2_row_##T(x + 2 * oh * g->xs[1], x + (2 * oh + 1) * g->xs[1], y + oh * g->out[2],              \
                             ix + oh * g->out[2], g->out[2], 2 * oh * g->in[2], g->in[2]);                        \
    }                                                                                                             \
    /* average: sums by taps, then each output divided by its window's divisor */                \
    static void avgpool_plane_##T(const T *x, T *y, const pool_geom *g, int include_pad, int64_t divisor) {       \
        int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                                       \
        for (int64_t od = 0; od < g->out[0]; od++) {                                                              \
            int64_t db = od * g->s[0] - g->p[0], dlo, dhi, ed = avg_extent(od, g, 0, include_pad);                \
            pf_valid_range(db, 1, g->in[0], g->k[0], &dlo, &dhi);                                                 \
            for (int64_t oh = 0; oh < OH; oh++) {                                                                 \
                T *yr = y + (od * OH + oh) * OW;                                                                  \
                int64_t hb = oh * g->s[1] - g->p[1], hlo, hhi, edh = ed * avg_extent(oh, g, 1, include_pad);      \
                for (int64_t ow = 0; ow < OW; ow++) yr[ow] = 0;                                                   \
                pf_valid_range(hb, 1, H, g->k[1], &hlo, &hhi);                                                    \
                for (int64_t a = dlo; a < dhi; a++)                                                               \
                    for (int64_t i = hlo; i < hhi; i++)                                                           \
                        for (int64_t j = 0; j < g->k[2]; j++) {                                                   \
                            int64_t base = j - g->p[2], lo, hi;                                                   \
                            pf_valid_range(base, g->s[2], W, OW, &lo, &hi);                                       \
                            if (lo < hi)                                                                          \
                                avgpool_tap_##T(x + (db + a) * g->xs[0] + (hb + i) * g->xs[1] +                   \
                                                    (lo * g->s[2] + base) * g->xs[2],                             \
                                                g->s[2] * g->xs[2], yr + lo, hi - lo);                            \
                        }                                                                                         \
                for (int64_t ow = 0; ow < OW; ow++)                                                               \
                    yr[ow] /= (T)(divisor ? divisor : edh * avg_extent(ow, g, 2, include_pad));                   \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* its backward into a contiguous gx plane: each output's gradient over its divisor (a row in scratch)        \
     * added to every input of its window */                                                                      \
    static void avgpool_back_plane_##T(const T *gy, const int64_t *gs, T *gx, const pool_geom *g,                 \
                                       int include_pad, int64_t divisor, T *row) {                                \
        int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                                       \
        memset(gx, 0, (size_t)(g->in[0] * H * W) * sizeof(T));                                                   \
        for (int64_t od = 0; od < g->out[0]; od++) {                                                              \
            int64_t db = od * g->s[0] - g->p[0], dlo, dhi, ed = avg_extent(od, g, 0, include_pad);                \
            pf_valid_range(db, 1, g->in[0], g->k[0], &dlo, &dhi);                                                 \
            for (int64_t oh = 0; oh < OH; oh++) {                                                                 \
                int64_t hb = oh * g->s[1] - g->p[1], hlo, hhi, edh = ed * avg_extent(oh, g, 1, include_pad);      \
                pf_valid_range(hb, 1, H, g->k[1], &hlo, &hhi);                                                    \
                for (int64_t ow = 0; ow < OW; ow++)                                                               \
                    row[ow] = gy[od * gs[0] + oh * gs[1] + ow * gs[2]] /                                          \
                              (T)(divisor ? divisor : edh * avg_extent(ow, g, 2, include_pad));                   \
                for (int64_t a = dlo; a < dhi; a++)                                                               \
                    for (int64_t i = hlo; i < hhi; i++)                                                           \
                        for (int64_t j = 0; j < g->k[2]; j++) {                                                   \
                            int64_t base = j - g->p[2], lo, hi;                                                   \
                            pf_valid_range(base, g->s[2], W, OW, &lo, &hi);                                       \
                            if (lo < hi)                                                                          \
                                avgpool_back_tap_##T(row + lo, gx + ((db + a) * H + hb + i) * W + lo * g->s[2] + base, \
                                                     g->s[2], hi - lo);                                           \
                        }                                                                                         \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* windows given by bounds: output o of dim t spans lo[off_t + o] to hi[off_t + o] (the adaptive and the \
     * fractional pools); the maximum and its index when ix is given, the average otherwise */              \
    static void windows_plane_##T(const T *x, T *y, int64_t *ix, const pool_geom *g, const int64_t *lo,            \
                                  const int64_t *hi) {                                                            \
        int64_t H = g->in[1], W = g->in[2], oh0 = g->out[0], ow0 = g->out[0] + g->out[1];                         \
        for (int64_t od = 0; od < g->out[0]; od++) {                                                              \
            int64_t d0 = lo[od], d1 = hi[od];                                                                     \
            for (int64_t oh = 0; oh < g->out[1]; oh++) {                                                          \
                int64_t h0 = lo[oh0 + oh], h1 = hi[oh0 + oh];                                                     \
                for (int64_t ow = 0; ow < g->out[2]; ow++) {                                                      \
                    int64_t w0 = lo[ow0 + ow], w1 = hi[ow0 + ow];                                                 \
                    int64_t o = (od * g->out[1] + oh) * g->out[2] + ow, arg = (d0 * H + h0) * W + w0;             \
                    T acc = ix ? -INFINITY : 0;                                                                   \
                    for (int64_t a = d0; a < d1; a++)                                                             \
                        for (int64_t h = h0; h < h1; h++) {                                                       \
                            const T *r = x + a * g->xs[0] + h * g->xs[1];                                         \
                            if (!ix)                                                                              \
                                for (int64_t w = w0; w < w1; w++) acc += r[w * g->xs[2]];                         \
                            else                                                                                  \
                                for (int64_t w = w0; w < w1; w++) {                                               \
                                    T v = r[w * g->xs[2]];                                                        \
                                    if (v > acc || v != v) acc = v, arg = (a * H + h) * W + w;                    \
                                }                                                                                 \
                        }                                                                                         \
                    if (ix) y[o] = acc, ix[o] = arg;                                                              \
                    else y[o] = acc / (T)(d1 - d0) / (T)(h1 - h0) / (T)(w1 - w0);                                 \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* torch's fractional intervals of one plane: starts from its samples u (one per pooled dim, in the         \
     * input's precision), each window k[t] long, the last one ending at the input's end */                     \
    static void fractional_bounds_##T(const T *u, int64_t us, const pool_geom *g, int dims, int64_t *lo,         \
                                      int64_t *hi) {                                                              \
        for (int64_t t = 0, off = 0; t < 3; off += g->out[t], t++) {                                             \
            if (t < 3 - dims) {                                                                                   \
                lo[off] = 0, hi[off] = 1;                                                                         \
                continue;                                                                                         \
            }                                                                                                     \
            T v = u[(t - (3 - dims)) * us];                                                                       \
            int64_t n = g->out[t], k = g->k[t];                                                                   \
            if (n > 1) {                                                                                          \
                T alpha = (T)(g->in[t] - k) / (T)(n - 1);                                                         \
                for (int64_t i = 0; i < n - 1; i++)                                                               \
                    lo[off + i] = (int64_t)(((T)i + v) * alpha) - (int64_t)(v * alpha);                           \
            }                                                                                                     \
            lo[off + n - 1] = g->in[t] - k;                                                                       \
            for (int64_t i = 0; i < n; i++) hi[off + i] = lo[off + i] + k;                                        \
        }                                                                                                         \
    }                                                                                                             \
    static void adaptive_avg_back_plane_##T(const T *gy, const int64_t *gs, T *gx, const pool_geom *g) {          \
        int64_t H = g->in[1], W = g->in[2];                                                                       \
        memset(gx, 0, (size_t)(g->in[0] * H * W) * sizeof(T));                                                    \
        for (int64_t od = 0; od < g->out[0]; od++) {                                                              \
            int64_t d0 = od * g->in[0] / g->out[0], d1 = ((od + 1) * g->in[0] + g->out[0] - 1) / g->out[0];      \
            for (int64_t oh = 0; oh < g->out[1]; oh++) {                                                          \
                int64_t h0 = oh * H / g->out[1], h1 = ((oh + 1) * H + g->out[1] - 1) / g->out[1];                  \
                for (int64_t ow = 0; ow < g->out[2]; ow++) {                                                      \
                    int64_t w0 = ow * W / g->out[2], w1 = ((ow + 1) * W + g->out[2] - 1) / g->out[2];              \
                    T v = gy[od * gs[0] + oh * gs[1] + ow * gs[2]] / (T)(d1 - d0) / (T)(h1 - h0) / (T)(w1 - w0);  \
                    for (int64_t a = d0; a < d1; a++)                                                             \
                        for (int64_t h = h0; h < h1; h++)                                                         \
                            for (int64_t w = w0; w < w1; w++) gx[(a * H + h) * W + w] += v;                       \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* gx plane (contiguous, n elements) = 0, then gx[ix[k]] += gy[k]; returns the first bad index or -1 */      \
    static int64_t scatter_back_plane_##T(const T *gy, const int64_t *gs, const int64_t *ix, T *gx,               \
                                          const int64_t *oshape, int64_t n) {                                     \
        memset(gx, 0, (size_t)n * sizeof(T));                                                                     \
        int64_t k = 0;                                                                                            \
        for (int64_t a = 0; a < oshape[0]; a++)                                                                   \
            for (int64_t b = 0; b < oshape[1]; b++)                                                               \
                for (int64_t c = 0; c < oshape[2]; c++, k++) {                                                    \
                    int64_t t = ix[k];                                                                            \
                    if (t < 0 || t >= n) return k;                                                                \
                    gx[t] += gy[a * gs[0] + b * gs[1] + c * gs[2]];                                               \
                }                                                                                                 \
        return -1;                                                                                                \
    }
DEFINE_POOL(float)
DEFINE_POOL(double)

enum { OP_MAX, OP_AVG, OP_ADAPTIVE, OP_FRACTIONAL, OP_ADAPTIVE_AVG_BACK, OP_SCATTER_BACK, OP_AVG_BACK };

/* One call's planes (sample, channel); backward's writes stay within a plane, so no two threads
 * share an element. bad_plane and bad_pos: the scatter's first index outside its plane. */
typedef struct {
    int op, fast, include_pad, failed;
    int64_t divisor;
    const pf_tensor *x; /* forward: the input; backward: grad_out */
    const pf_tensor *indices;
    pf_tensor *out; /* forward: the output; backward: grad_in */
    const pool_geom *g;
    const int64_t *lo, *hi;     /* OP_ADAPTIVE: the windows' bounds, shared by every plane */
    const pf_tensor *samples;   /* OP_FRACTIONAL: [N, C, dims], each plane's bounds made from its own */
    int64_t bad_plane, bad_pos;
} pool_job;

static void pool_planes(void *arg, int64_t p0, int64_t p1) {
    pool_job *j = arg;
    const pool_geom *g = j->g;
    const pf_tensor *x = j->x;
    int dbl = x->dtype == PF_FLOAT64, back = j->op >= OP_ADAPTIVE_AVG_BACK;
    int64_t C = x->shape[1], es = (int64_t)pf_dtype_size[x->dtype];
    int64_t opl = g->out[0] * g->out[1] * g->out[2], ipl = g->in[0] * g->in[1] * g->in[2];
    int64_t ypl = back ? ipl : opl;
    void *row = NULL;
    int64_t nb = g->out[0] + g->out[1] + g->out[2], *bounds = NULL;
    if ((j->op == OP_AVG_BACK && !(row = malloc((size_t)(g->out[2] * es)))) ||
        (j->op == OP_FRACTIONAL && !(bounds = malloc((size_t)(2 * nb) * sizeof(int64_t))))) {
        free(row);
#pragma omp atomic write
        j->failed = 1;
        return;
    }
    for (int64_t p = p0; p < p1; p++) {
        const char *xp = (const char *)x->data + ((p / C) * x->strides[0] + (p % C) * x->strides[1]) * es;
        char *yp = (char *)j->out->data + p * ypl * es;
        int64_t *ip = j->indices ? (int64_t *)j->indices->data + p * opl : NULL;
        const int64_t *gs = x->strides + 2;
        int64_t bad = -1;
        switch (j->op) {
        case OP_MAX:
            if (dbl) (j->fast ? maxpool2_plane_double : maxpool_plane_double)((const double *)xp, (double *)yp, ip, g);
            else (j->fast ? maxpool2_plane_float : maxpool_plane_float)((const float *)xp, (float *)yp, ip, g);
            break;
        case OP_AVG:
            if (dbl) avgpool_plane_double((const double *)xp, (double *)yp, g, j->include_pad, j->divisor);
            else avgpool_plane_float((const float *)xp, (float *)yp, g, j->include_pad, j->divisor);
            break;
        case OP_ADAPTIVE:
            if (dbl) windows_plane_double((const double *)xp, (double *)yp, ip, g, j->lo, j->hi);
            else windows_plane_float((const float *)xp, (float *)yp, ip, g, j->lo, j->hi);
            break;
        case OP_FRACTIONAL: {
            const pf_tensor *sm = j->samples;
            const char *u = (const char *)sm->data + ((p / C) * sm->strides[0] + (p % C) * sm->strides[1]) * es;
            int dims = (int)sm->shape[2];
            if (dbl) {
                fractional_bounds_double((const double *)u, sm->strides[2], g, dims, bounds, bounds + nb);
                windows_plane_double((const double *)xp, (double *)yp, ip, g, bounds, bounds + nb);
            } else {
                fractional_bounds_float((const float *)u, sm->strides[2], g, dims, bounds, bounds + nb);
                windows_plane_float((const float *)xp, (float *)yp, ip, g, bounds, bounds + nb);
            }
            break;
        }
        case OP_AVG_BACK:
            if (dbl) avgpool_back_plane_double((const double *)xp, gs, (double *)yp, g, j->include_pad, j->divisor, row);
            else avgpool_back_plane_float((const float *)xp, gs, (float *)yp, g, j->include_pad, j->divisor, row);
            break;
        case OP_ADAPTIVE_AVG_BACK:
            if (dbl) adaptive_avg_back_plane_double((const double *)xp, gs, (double *)yp, g);
            else adaptive_avg_back_plane_float((const float *)xp, gs, (float *)yp, g);
            break;
        default: /* OP_SCATTER_BACK */
            bad = dbl ? scatter_back_plane_double((const double *)xp, gs, ip, (double *)yp, g->out, ipl)
                      : scatter_back_plane_float((const float *)xp, gs, ip, (float *)yp, g->out, ipl);
        }
        if (bad < 0) continue;
#pragma omp critical(pf_pool_bad)
        if (j->bad_plane < 0 || p < j->bad_plane) j->bad_plane = p, j->bad_pos = bad;
    }
    free(row);
    free(bounds);
}

/* Checks x (the input, or grad_in for a backward) [N, C, D, H, W], float32/float64, and `o` (the
 * output or grad_out) [N, C, OD, OH, OW] of its dtype, and the indices of o's shape when given
 * (int64, contiguous); `out` (what is written) must be contiguous. */
static int check_tensors(const char *fn, const pf_tensor *x, const pf_tensor *o, const pf_tensor *ix,
                         const pf_tensor *out) {
    char a[128], b[128];
    int rc;
    if ((rc = pf_check(x, fn)) || (rc = pf_check(o, fn)) || (ix && (rc = pf_check(ix, fn)))) return rc;
    if (x->ndim != 5 || o->ndim != 5 || (ix && ix->ndim != 5))
        return pf_error(PF_ERR_VALUE, "%s: tensors must be 5-d [N, C, D, H, W], got shapes %s and %s", fn,
                        pf_shape_str(x, a), pf_shape_str(o, b));
    if (x->dtype != o->dtype)
        return pf_error(PF_ERR_TYPE, "%s: input is %s but output is %s", fn, pf_dtype_name[x->dtype],
                        pf_dtype_name[o->dtype]);
    if (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: only float32 and float64 are supported, got %s", fn,
                        pf_dtype_name[x->dtype]);
    if (x->shape[0] != o->shape[0] || x->shape[1] != o->shape[1])
        return pf_error(PF_ERR_VALUE, "%s: input %s and output %s differ in batch or channels", fn,
                        pf_shape_str(x, a), pf_shape_str(o, b));
    if (ix) {
        if (ix->dtype != PF_INT64)
            return pf_error(PF_ERR_TYPE, "%s: indices must be int64, got %s", fn, pf_dtype_name[ix->dtype]);
        for (int d = 0; d < 5; d++)
            if (ix->shape[d] != o->shape[d])
                return pf_error(PF_ERR_VALUE, "%s: indices %s must have the output's shape %s", fn,
                                pf_shape_str(ix, a), pf_shape_str(o, b));
        if (!pf_is_contiguous(ix)) return pf_error(PF_ERR_VALUE, "%s: indices must be contiguous", fn);
    }
    if (!pf_is_contiguous(out)) return pf_error(PF_ERR_VALUE, "%s: the tensor written must be contiguous", fn);
    return PF_OK;
}

/* geom: kernel[3], stride[3], padding[3], dilation[3], ceil_mode; half_pad: torch's pooling rule that padding
 * is at most half the (dilated) kernel, so every window holds an input. Fills g from x's shape and checks o's. */
static int window_geom(const char *fn, const pf_tensor *x, const pf_tensor *o, const int64_t *geom, pool_geom *g) {
    for (int t = 0; t < 3; t++) {
        int64_t k = geom[t], s = geom[3 + t], p = geom[6 + t], d = geom[9 + t];
        if (k < 1 || s < 1 || d < 1 || p < 0 || k > INT32_MAX || s > INT32_MAX || p > INT32_MAX || d > INT32_MAX)
            return pf_error(PF_ERR_VALUE, "%s: kernel %lld, stride %lld and dilation %lld must be >= 1 and padding "
                            "%lld >= 0", fn, (long long)k, (long long)s, (long long)d, (long long)p);
        if (2 * p > d * (k - 1) + 1)
            return pf_error(PF_ERR_VALUE, "%s: padding %lld must be at most half the dilated kernel %lld", fn,
                            (long long)p, (long long)(d * (k - 1) + 1));
        int64_t out = pool_out(x->shape[2 + t], k, s, p, d, geom[12] != 0);
        if (out < 1)
            return pf_error(PF_ERR_VALUE, "%s: input size %lld with padding %lld is too small for kernel %lld with "
                            "dilation %lld", fn, (long long)x->shape[2 + t], (long long)p, (long long)k,
                            (long long)d);
        if (o->shape[2 + t] != out)
            return pf_error(PF_ERR_VALUE, "%s: output size %lld of spatial dim %d should be %lld", fn,
                            (long long)o->shape[2 + t], t, (long long)out);
        g->in[t] = x->shape[2 + t], g->out[t] = out, g->k[t] = k, g->s[t] = s, g->p[t] = p, g->d[t] = d;
        g->xs[t] = x->strides[2 + t];
    }
    return PF_OK;
}

static int run(pool_job *j, int64_t work) {
    int64_t planes = j->x->shape[0] * j->x->shape[1];
    j->bad_plane = -1;
    if (planes == 0) return PF_OK;
    pf_parallel_range(pf_threads_for(work), planes, pool_planes, j);
    if (j->failed) return pf_error(PF_ERR_NOMEM, "pooling: out of memory for a row of %lld", (long long)j->g->out[2]);
    return PF_OK;
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

int pf_max_pool(const pf_tensor *x, pf_tensor *out, pf_tensor *indices, const int64_t *geom) {
    pool_geom g;
    int rc = check_tensors("max_pool", x, out, indices, out);
    if (rc || (rc = window_geom("max_pool", x, out, geom, &g))) return rc;
    if (!indices) return pf_error(PF_ERR_VALUE, "max_pool: indices are required");
    int fast = g.in[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.k[1] == 2 && g.k[2] == 2 && g.s[1] == 2 &&
               g.s[2] == 2 && g.p[1] == 0 && g.p[2] == 0 && g.d[1] == 1 && g.d[2] == 1 && g.xs[2] == 1 &&
               2 * g.out[1] <= g.in[1] && 2 * g.out[2] <= g.in[2];
    pool_job j = {.op = OP_MAX, .fast = fast, .x = x, .indices = indices, .out = out, .g = &g};
    return run(&j, x->shape[0] * x->shape[1] * prod3(g.out) * prod3(g.k));
}

int pf_avg_pool(const pf_tensor *x, pf_tensor *out, const int64_t *geom, int count_include_pad, int64_t divisor) {
    pool_geom g;
    int rc = check_tensors("avg_pool", x, out, NULL, out);
    if (rc || (rc = window_geom("avg_pool", x, out, geom, &g))) return rc;
    if (g.d[0] != 1 || g.d[1] != 1 || g.d[2] != 1 || divisor < 0)
        return pf_error(PF_ERR_VALUE, "avg_pool: dilation must be 1 and the divisor >= 0 (0: none), got %lld",
                        (long long)divisor);
    pool_job j = {.op = OP_AVG, .include_pad = count_include_pad, .divisor = divisor, .x = x, .out = out, .g = &g};
    return run(&j, x->shape[0] * x->shape[1] * prod3(g.out) * prod3(g.k));
}

int pf_avg_pool_backward(const pf_tensor *grad_out, pf_tensor *grad_in, const int64_t *geom, int count_include_pad,
                         int64_t divisor) {
    pool_geom g;
    int rc = check_tensors("avg_pool_backward", grad_in, grad_out, NULL, grad_in);
    if (rc || (rc = window_geom("avg_pool_backward", grad_in, grad_out, geom, &g))) return rc;
    if (g.d[0] != 1 || g.d[1] != 1 || g.d[2] != 1 || divisor < 0)
        return pf_error(PF_ERR_VALUE, "avg_pool_backward: dilation must be 1 and the divisor >= 0, got %lld",
                        (long long)divisor);
    pool_job j = {.op = OP_AVG_BACK, .include_pad = count_include_pad, .divisor = divisor, .x = grad_out,
                  .out = grad_in, .g = &g};
    return run(&j, grad_in->shape[0] * grad_in->shape[1] * (prod3(g.in) + prod3(g.out) * prod3(g.k)));
}

/* adaptive geometry: the output's spatial sizes, each >= 1 (the input's may be 0 only for size-0 batches) */
static int adaptive_geom(const char *fn, const pf_tensor *x, const pf_tensor *o, pool_geom *g) {
    for (int t = 0; t < 3; t++) {
        if (o->shape[2 + t] < 1 || x->shape[2 + t] < 1)
            return pf_error(PF_ERR_VALUE, "%s: input and output spatial sizes must be >= 1, got %lld and %lld", fn,
                            (long long)x->shape[2 + t], (long long)o->shape[2 + t]);
        g->in[t] = x->shape[2 + t], g->out[t] = o->shape[2 + t], g->xs[t] = x->strides[2 + t];
    }
    return PF_OK;
}

/* the adaptive windows' bounds over g (2 * (out[0] + out[1] + out[2]) entries, malloc'd) */
static int64_t *adaptive_bounds(const pool_geom *g) {
    int64_t nb = g->out[0] + g->out[1] + g->out[2], *b = malloc((size_t)(2 * nb) * sizeof(int64_t));
    if (!b) return NULL;
    for (int64_t t = 0, off = 0; t < 3; off += g->out[t], t++)
        for (int64_t o = 0; o < g->out[t]; o++)
            b[off + o] = o * g->in[t] / g->out[t], b[nb + off + o] = ((o + 1) * g->in[t] + g->out[t] - 1) / g->out[t];
    return b;
}

int pf_adaptive_pool(const pf_tensor *x, pf_tensor *out, pf_tensor *indices) {
    pool_geom g;
    const char *fn = indices ? "adaptive_max_pool" : "adaptive_avg_pool";
    int rc = check_tensors(fn, x, out, indices, out);
    if (rc || (rc = adaptive_geom(fn, x, out, &g))) return rc;
    int64_t *b = adaptive_bounds(&g);
    if (!b) return pf_error(PF_ERR_NOMEM, "%s: out of memory", fn);
    pool_job j = {.op = OP_ADAPTIVE, .x = x, .indices = indices, .out = out, .g = &g, .lo = b,
                  .hi = b + g.out[0] + g.out[1] + g.out[2]};
    /* each window covers about in/out of every dim, plus up to one more */
    rc = run(&j, x->shape[0] * x->shape[1] * (prod3(g.in) + prod3(g.out)));
    free(b);
    return rc;
}

int pf_fractional_max_pool(const pf_tensor *x, const pf_tensor *samples, pf_tensor *out, pf_tensor *indices,
                           const int64_t *kernel) {
    pool_geom g;
    char a[128];
    const char *fn = "fractional_max_pool";
    int rc = check_tensors(fn, x, out, indices, out);
    if (rc || (rc = adaptive_geom(fn, x, out, &g)) || (rc = pf_check(samples, fn))) return rc;
    if (!indices) return pf_error(PF_ERR_VALUE, "%s: indices are required", fn);
    int64_t dims = samples->ndim == 3 ? samples->shape[2] : 0;
    if (samples->ndim != 3 || samples->shape[0] != x->shape[0] || samples->shape[1] != x->shape[1] || dims < 1 ||
        dims > 3 || samples->dtype != x->dtype)
        return pf_error(PF_ERR_VALUE, "%s: samples %s must be [N, C, dims] of the input's dtype for input %s", fn,
                        pf_shape_str(samples, a), pf_shape_str(x, a));
    for (int t = 0; t < 3; t++) {
        g.k[t] = kernel[t];
        if (kernel[t] < 1 || (t < 3 - dims && (kernel[t] != 1 || g.out[t] != 1 || g.in[t] != 1)))
            return pf_error(PF_ERR_VALUE, "%s: kernel %lld of dim %d must be >= 1 (1 for a dim not pooled)", fn,
                            (long long)kernel[t], t);
        if (g.out[t] + kernel[t] - 1 > g.in[t])
            return pf_error(PF_ERR_VALUE, "%s: pool size %lld too large relative to input size %lld and output size "
                            "%lld of dim %d", fn, (long long)kernel[t], (long long)g.in[t], (long long)g.out[t], t);
    }
    pool_job j = {.op = OP_FRACTIONAL, .x = x, .indices = indices, .out = out, .g = &g, .samples = samples};
    return run(&j, x->shape[0] * x->shape[1] * prod3(g.out) * prod3(g.k));
}

int pf_adaptive_avg_pool_backward(const pf_tensor *grad_out, pf_tensor *grad_in) {
    pool_geom g;
    int rc = check_tensors("adaptive_avg_pool_backward", grad_in, grad_out, NULL, grad_in);
    if (rc || (rc = adaptive_geom("adaptive_avg_pool_backward", grad_in, grad_out, &g))) return rc;
    pool_job j = {.op = OP_ADAPTIVE_AVG_BACK, .x = grad_out, .out = grad_in, .g = &g};
    return run(&j, grad_in->shape[0] * grad_in->shape[1] * (prod3(g.in) + prod3(g.out)));
}

int pf_max_pool_backward(const pf_tensor *grad_out, const pf_tensor *indices, pf_tensor *grad_in) {
    pool_geom g = {0};
    int rc = check_tensors("max_pool_backward", grad_in, grad_out, indices, grad_in);
    if (rc) return rc;
    if (!indices) return pf_error(PF_ERR_VALUE, "max_pool_backward: indices are required");
    for (int t = 0; t < 3; t++) g.in[t] = grad_in->shape[2 + t], g.out[t] = grad_out->shape[2 + t];
    pool_job j = {.op = OP_SCATTER_BACK, .x = grad_out, .indices = indices, .out = grad_in, .g = &g};
    if ((rc = run(&j, grad_in->shape[0] * grad_in->shape[1] * (prod3(g.in) + prod3(g.out))))) return rc;
    if (j.bad_plane >= 0) {
        int64_t opl = prod3(g.out);
        return pf_error(PF_ERR_INDEX, "max_pool_backward: index %lld at position %lld of plane %lld is outside the "
                        "input plane of %lld elements",
                        (long long)((const int64_t *)indices->data)[j.bad_plane * opl + j.bad_pos],
                        (long long)j.bad_pos, (long long)j.bad_plane, (long long)prod3(g.in));
    }
    return PF_OK;
}
