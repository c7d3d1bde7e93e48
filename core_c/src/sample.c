/* grid_sample: each output position reads the input at the point its grid entry names, in
 * coordinates normalized to [-1, 1], by bilinear (trilinear for 5-d input), nearest or bicubic
 * (4-d input only) interpolation, with zeros, border or reflection padding; and its backward
 * to the input and the grid. The formulas are torch's CPU kernels' (GridSampler.h), in the
 * input's precision, including the gradient multipliers of the clipping and reflection.
 *
 * A 4-d input is a 5-d one with depth 1 and no z coordinate. Forward splits over output
 * positions (each writes all channels of its own position); backward splits over samples,
 * since positions of one sample may scatter into the same input element. */
#include <stdio.h>
#include "core.h"

enum { MODE_BILINEAR, MODE_NEAREST, MODE_BICUBIC };
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION };

typedef struct {
    int nd, mode, pad, align, failed;
    int64_t N, C, in[3], out[3], npos; /* in, out: (D, H, W) sizes; npos = OD*OH*OW */
    const pf_tensor *x, *grid, *gy;
    pf_tensor *y, *gx, *ggrid;
} sample_job;

#define DEFINE_SAMPLE(T, FLOOR, NEARBYINT, FABS, FMOD)                                                             \
    static inline T unnorm_##T(T c, int64_t size, int align, T *g) {                                               \
        if (align) {                                                                                               \
            *g = (T)(size - 1) / 2;                                                                                \
            return ((c + 1) / 2) * (T)(size - 1);                                                                  \
        }                                                                                                          \
        *g = (T)size / 2;                                                                                          \
        return ((c + 1) * (T)size - 1) / 2;                                                                        \
    }                                                                                                              \
    static inline T clip_##T(T in, int64_t limit, T *g) {                                                          \
        if (in <= 0) {                                                                                             \
            *g = 0;                                                                                                \
            return 0;                                                                                              \
        }                                                                                                          \
        T top = (T)(limit - 1);                                                                                    \
        if (in >= top) {                                                                                           \
            *g = 0;                                                                                                \
            return top;                                                                                            \
        }                                                                                                          \
        *g = 1;                                                                                                    \
        return in;                                                                                                 \
    }                                                                                                              \
    static inline T reflect_##T(T in, int64_t twice_low, int64_t twice_high, T *g) {                               \
        if (twice_low == twice_high) {                                                                             \
            *g = 0;                                                                                                \
            return 0;                                                                                              \
        }                                                                                                          \
        T sign = 1, lo = (T)twice_low / 2, span = (T)(twice_high - twice_low) / 2;                                 \
        if (in < lo) sign = -1, in = lo - in;                                                                      \
        else in = in - lo;                                                                                         \
        T extra = FMOD(in, span);                                                                                  \
        int64_t flips = (int64_t)FLOOR(in / span);                                                                 \
        if (flips % 2 == 0) {                                                                                      \
            *g = sign;                                                                                             \
            return extra + lo;                                                                                     \
        }                                                                                                          \
        *g = -sign;                                                                                                \
        return span - extra + lo;                                                                                  \
    }                                                                                                              \
    /* torch's compute_coordinates: the padding mode applied to an unnormalized coordinate */                     \
    static inline T pad_coord_##T(T c, int64_t size, int pad, int align, T *g) {                                   \
        T g1 = 1, g2 = 1;                                                                                          \
        if (pad == PAD_BORDER) c = clip_##T(c, size, &g1);                                                         \
        else if (pad == PAD_REFLECTION) {                                                                          \
            c = align ? reflect_##T(c, 0, 2 * (size - 1), &g1) : reflect_##T(c, -1, 2 * size - 1, &g1);           \
            c = clip_##T(c, size, &g2);                                                                            \
        }                                                                                                          \
        *g = g1 * g2;                                                                                              \
        /* a coordinate that is not finite or too large to index reads as outside (torch's -100) */               \
        return c == c && FABS(c) < (T)4.0e18 ? c : (T)-100;                                                       \
    }                                                                                                              \
    static inline void cubic_coeffs_##T(T *w, T t) {                                                               \
        const T A = (T)-0.75;                                                                                      \
        T x = t + 1;                                                                                               \
        w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;                                                          \
        w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;                                                                \
        x = 1 - t;                                                                                                 \
        w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;                                                                \
        x = 2 - t;                                                                                                 \
        w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;                                                          \
    }                                                                                                              \
    static inline void cubic_coeffs_grad_##T(T *w, T t) {                                                          \
        const T A = (T)-0.75;                                                                                      \
        T x = -1 - t;                                                                                              \
        w[0] = (-3 * A * x - 10 * A) * x - 8 * A;                                                                  \
        x = -t;                                                                                                    \
        w[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;                                                               \
        x = 1 - t;                                                                                                 \
        w[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;                                                                \
        x = 2 - t;                                                                                                 \
        w[3] = (3 * A * x - 10 * A) * x + 8 * A;                                                                   \
    }                                                                                                              \
    /* One output position: its sample n, source point src[t] (t: 0 = D, 1 = H, 2 = W) and the                 \
     * gradient multipliers of each coordinate (only D is absent for 4-d input) */                                 \
    static void locate_##T(const sample_job *j, int64_t p, int64_t *n, T *src, T *mult) {                          \
        const pf_tensor *gr = j->grid;                                                                             \
        int64_t q = p % j->npos, pos[3] = {q / (j->out[1] * j->out[2]), q / j->out[2] % j->out[1], q % j->out[2]};  \
        *n = p / j->npos;                                                                                          \
        const T *e = (const T *)gr->data + *n * gr->strides[0];                                                    \
        if (j->nd == 3) e += pos[0] * gr->strides[1] + pos[1] * gr->strides[2] + pos[2] * gr->strides[3];          \
        else e += pos[1] * gr->strides[1] + pos[2] * gr->strides[2];                                               \
        int64_t cs = gr->strides[gr->ndim - 1];                                                                    \
        src[0] = 0, mult[0] = 0;                                                                                   \
        for (int t = 3 - j->nd; t < 3; t++) {                                                                      \
            T g1, g2, c = unnorm_##T(e[(2 - t) * cs], j->in[t], j->align, &g1);                                    \
            if (j->mode != MODE_BICUBIC) c = pad_coord_##T(c, j->in[t], j->pad, j->align, &g2);                    \
            else g2 = 1;                                                                                           \
            src[t] = c, mult[t] = g1 * g2;                                                                         \
        }                                                                                                          \
    }                                                                                                              \
    /* The input points (flat offsets in a channel plane, -1 outside) and weights a position reads;              \
     * dw[t][k]: d weight k / d src[t]. Returns how many (8 linear, 1 nearest, 16 cubic). */                      \
    static int taps_##T(const sample_job *j, const T *src, int64_t *off, T *w, T dw[3][16]) {                      \
        const int64_t *is = j->x->strides + 2 + (j->nd == 2 ? -1 : 0);                                             \
        int t0 = 3 - j->nd;                                                                                        \
        if (j->mode == MODE_NEAREST) {                                                                             \
            int64_t o = 0;                                                                                         \
            for (int t = t0; t < 3; t++) {                                                                         \
                int64_t i = (int64_t)NEARBYINT(src[t]);                                                            \
                if (i < 0 || i >= j->in[t]) o = -1;                                                                \
                if (o >= 0) o += i * is[t];                                                                        \
            }                                                                                                      \
            off[0] = o, w[0] = 1;                                                                                  \
            return 1;                                                                                              \
        }                                                                                                          \
        if (j->mode == MODE_BILINEAR) {                                                                            \
            int64_t i0[3] = {0, 0, 0};                                                                             \
            T f[3] = {0, 0, 0};                                                                                    \
            for (int t = t0; t < 3; t++) {                                                                         \
                T fl = FLOOR(src[t]);                                                                              \
                i0[t] = (int64_t)fl, f[t] = src[t] - fl;                                                           \
            }                                                                                                      \
            int n = 0;                                                                                             \
            for (int c = 0; c < (j->nd == 3 ? 8 : 4); c++, n++) {                                                  \
                int b[3] = {j->nd == 3 ? (c >> 2) & 1 : 0, (c >> 1) & 1, c & 1};                                   \
                int64_t o = 0;                                                                                     \
                T wt[3];                                                                                           \
                for (int t = 0; t < 3; t++) {                                                                      \
                    int64_t i = i0[t] + b[t];                                                                      \
                    wt[t] = t < t0 ? 1 : b[t] ? f[t] : 1 - f[t];                                                   \
                    if (t >= t0 && (i < 0 || i >= j->in[t])) o = -1;                                               \
                    if (o >= 0 && t >= t0) o += i * is[t];                                                         \
                }                                                                                                  \
                off[n] = o, w[n] = wt[2] * wt[1] * wt[0];                                                          \
                for (int t = t0; t < 3; t++) {                                                                     \
                    T rest = 1;                                                                                    \
                    for (int u = 2; u >= t0; u--)                                                                  \
                        if (u != t) rest *= wt[u];                                                                 \
                    dw[t][n] = (b[t] ? 1 : -1) * rest;                                                             \
                }                                                                                                  \
            }                                                                                                      \
            return n;                                                                                              \
        }                                                                                                          \
        /* bicubic, 4-d: a 4x4 neighbourhood, each point moved by the padding mode */                              \
        T fx = FLOOR(src[2]), fy = FLOOR(src[1]), cx[4], cy[4], gx4[4], gy4[4];                                    \
        cubic_coeffs_##T(cx, src[2] - fx), cubic_coeffs_##T(cy, src[1] - fy);                                      \
        cubic_coeffs_grad_##T(gx4, src[2] - fx), cubic_coeffs_grad_##T(gy4, src[1] - fy);                          \
        int n = 0;                                                                                                 \
        for (int a = 0; a < 4; a++)                                                                                \
            for (int b = 0; b < 4; b++, n++) {                                                                     \
                T unused;                                                                                          \
                T py = pad_coord_##T(fy - 1 + a, j->in[1], j->pad, j->align, &unused);                             \
                T px = pad_coord_##T(fx - 1 + b, j->in[2], j->pad, j->align, &unused);                             \
                int64_t iy = (int64_t)py, ix = (int64_t)px;                                                        \
                off[n] = iy >= 0 && iy < j->in[1] && ix >= 0 && ix < j->in[2] ? iy * is[1] + ix * is[2] : -1;      \
                w[n] = cx[b] * cy[a];                                                                              \
                dw[2][n] = -gx4[b] * cy[a], dw[1][n] = -gy4[a] * cx[b];                                            \
            }                                                                                                      \
        return n;                                                                                                  \
    }                                                                                                              \
    static void forward_##T(void *arg, int64_t p0, int64_t p1) {                                                   \
        const sample_job *j = arg;                                                                                 \
        int64_t off[16];                                                                                           \
        T w[16], dw[3][16], src[3], mult[3];                                                                       \
        for (int64_t p = p0; p < p1; p++) {                                                                        \
            int64_t n;                                                                                             \
            locate_##T(j, p, &n, src, mult);                                                                       \
            int k = taps_##T(j, src, off, w, dw);                                                                  \
            const T *xp = (const T *)j->x->data + n * j->x->strides[0];                                            \
            T *yp = (T *)j->y->data + n * j->C * j->npos + p % j->npos;                                            \
            for (int64_t c = 0; c < j->C; c++, xp += j->x->strides[1]) {                                           \
                T acc = 0;                                                                                         \
                if (j->mode == MODE_BICUBIC) { /* rows first, then the column, as torch */                         \
                    T row[4], cy[4], cx[4];                                                                        \
                    cubic_coeffs_##T(cx, src[2] - FLOOR(src[2])), cubic_coeffs_##T(cy, src[1] - FLOOR(src[1]));    \
                    for (int a = 0; a < 4; a++) {                                                                  \
                        row[a] = 0;                                                                                \
                        for (int b = 0; b < 4; b++)                                                                \
                            row[a] += (off[4 * a + b] >= 0 ? xp[off[4 * a + b]] : 0) * cx[b];                      \
                    }                                                                                              \
                    for (int a = 0; a < 4; a++) acc += row[a] * cy[a];                                             \
                } else                                                                                             \
                    for (int t = 0; t < k; t++)                                                                    \
                        if (off[t] >= 0) acc += xp[off[t]] * w[t];                                                 \
                yp[c * j->npos] = acc;                                                                             \
            }                                                                                                      \
        }                                                                                                          \
    }                                                                                                              \
    /* backward over samples n0..n1: grad_input of those samples (contiguous, zeroed here) and their             \
     * grid gradients */                                                                                           \
    static void backward_##T(void *arg, int64_t n0, int64_t n1) {                                                  \
        const sample_job *j = arg;                                                                                 \
        int64_t off[16], plane = j->in[0] * j->in[1] * j->in[2];                                                   \
        T w[16], dw[3][16], src[3], mult[3];                                                                       \
        const int64_t *gs = j->gy->strides;                                                                        \
        if (j->gx) memset((T *)j->gx->data + n0 * j->C * plane, 0, (size_t)((n1 - n0) * j->C * plane) * sizeof(T)); \
        for (int64_t p = n0 * j->npos; p < n1 * j->npos; p++) {                                                    \
            int64_t n, q = p % j->npos;                                                                            \
            locate_##T(j, p, &n, src, mult);                                                                       \
            int k = taps_##T(j, src, off, w, dw);                                                                  \
            /* grad_out's element for (n, c, position q) */                                                        \
            int64_t gq = j->nd == 3 ? q / (j->out[1] * j->out[2]) * gs[2] + q / j->out[2] % j->out[1] * gs[3] +    \
                                          q % j->out[2] * gs[4]                                                    \
                                    : q / j->out[2] * gs[2] + q % j->out[2] * gs[3];                                \
            const T *gp = (const T *)j->gy->data + n * gs[0] + gq;                                                 \
            const T *xp = (const T *)j->x->data + n * j->x->strides[0];                                            \
            T *gxp = j->gx ? (T *)j->gx->data + n * j->C * plane : NULL; /* x is contiguous: same offsets */      \
            T acc[3] = {0, 0, 0};                                                                                  \
            for (int64_t c = 0; c < j->C; c++, xp += plane, gxp = gxp ? gxp + plane : NULL) {                      \
                T g = gp[c * gs[1]];                                                                               \
                for (int t = 0; t < k; t++) {                                                                      \
                    if (off[t] < 0) continue;                                                                      \
                    if (gxp) gxp[off[t]] += w[t] * g;                                                              \
                    T v = xp[off[t]];                                                                              \
                    for (int u = 3 - j->nd; u < 3; u++) acc[u] += v * dw[u][t] * g;                                \
                }                                                                                                  \
            }                                                                                                      \
            if (j->ggrid) {                                                                                        \
                T *gg = (T *)j->ggrid->data + p * j->nd;                                                           \
                for (int u = 3 - j->nd; u < 3; u++) gg[2 - u] = j->mode == MODE_NEAREST ? 0 : mult[u] * acc[u];    \
            }                                                                                                      \
        }                                                                                                          \
    }
DEFINE_SAMPLE(float, floorf, nearbyintf, fabsf, fmodf)
DEFINE_SAMPLE(double, floor, nearbyint, fabs, fmod)

static int setup(const char *fn, const pf_tensor *x, const pf_tensor *grid, const pf_tensor *o, int mode, int pad,
                 int align, sample_job *j) {
    char a[128], b[128];
    int rc;
    if ((rc = pf_check(x, fn)) || (rc = pf_check(grid, fn)) || (rc = pf_check(o, fn))) return rc;
    int nd = x->ndim - 2;
    if ((nd != 2 && nd != 3) || grid->ndim != x->ndim || o->ndim != x->ndim || grid->shape[x->ndim - 1] != nd)
        return pf_error(PF_ERR_VALUE, "%s: expected input [N, C, H, W] with grid [N, OH, OW, 2] or input "
                        "[N, C, D, H, W] with grid [N, OD, OH, OW, 3], got %s and %s", fn, pf_shape_str(x, a),
                        pf_shape_str(grid, b));
    if (x->dtype != grid->dtype || x->dtype != o->dtype || (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64))
        return pf_error(PF_ERR_TYPE, "%s: input, grid and output must all be float32 or all float64, got %s, %s, %s",
                        fn, pf_dtype_name[x->dtype], pf_dtype_name[grid->dtype], pf_dtype_name[o->dtype]);
    if (mode < MODE_BILINEAR || mode > MODE_BICUBIC || pad < PAD_ZEROS || pad > PAD_REFLECTION)
        return pf_error(PF_ERR_VALUE, "%s: mode %d or padding mode %d is unknown", fn, mode, pad);
    if (mode == MODE_BICUBIC && nd != 2) return pf_error(PF_ERR_VALUE, "%s: bicubic needs a 4-d input", fn);
    *j = (sample_job){.nd = nd, .mode = mode, .pad = pad, .align = align != 0, .N = x->shape[0], .C = x->shape[1],
                      .x = x, .grid = grid, .in = {1, 1, 1}, .out = {1, 1, 1}};
    for (int t = 0; t < nd; t++) {
        j->in[3 - nd + t] = x->shape[2 + t], j->out[3 - nd + t] = grid->shape[1 + t];
        if (o->shape[2 + t] != grid->shape[1 + t])
            return pf_error(PF_ERR_VALUE, "%s: output %s does not match grid %s", fn, pf_shape_str(o, a),
                            pf_shape_str(grid, b));
    }
    if (grid->shape[0] != j->N || o->shape[0] != j->N || o->shape[1] != j->C)
        return pf_error(PF_ERR_VALUE, "%s: input %s, grid %s and output %s disagree in batch or channels", fn,
                        pf_shape_str(x, a), pf_shape_str(grid, b), pf_shape_str(o, a));
    for (int t = 0; t < nd; t++)
        if (j->in[3 - nd + t] < 1)
            return pf_error(PF_ERR_VALUE, "%s: input spatial sizes must be >= 1, got %s", fn, pf_shape_str(x, a));
    j->npos = j->out[0] * j->out[1] * j->out[2];
    return PF_OK;
}

int pf_grid_sample(const pf_tensor *input, const pf_tensor *grid, pf_tensor *out, int mode, int padding_mode,
                   int align_corners) {
    sample_job j;
    int rc = setup("grid_sample", input, grid, out, mode, padding_mode, align_corners, &j);
    if (rc) return rc;
    if (!pf_is_contiguous(out)) return pf_error(PF_ERR_VALUE, "grid_sample: out must be contiguous");
    j.y = out;
    int64_t positions = j.N * j.npos;
    if (positions == 0 || j.C == 0) return PF_OK;
    pf_parallel_range(pf_threads_for(positions * j.C * (mode == MODE_BICUBIC ? 16 : 4 * (j.nd - 1))), positions,
                      input->dtype == PF_FLOAT32 ? forward_float : forward_double, &j);
    return PF_OK;
}

int pf_grid_sample_backward(const pf_tensor *grad_out, const pf_tensor *input, const pf_tensor *grid,
                            pf_tensor *grad_input, pf_tensor *grad_grid, int mode, int padding_mode,
                            int align_corners) {
    sample_job j;
    char a[128], b[128];
    int rc = setup("grid_sample_backward", input, grid, grad_out, mode, padding_mode, align_corners, &j);
    if (rc) return rc;
    if (!pf_is_contiguous(input)) return pf_error(PF_ERR_VALUE, "grid_sample_backward: input must be contiguous");
    if (grad_input) {
        if ((rc = pf_check(grad_input, "grid_sample_backward: grad_input"))) return rc;
        int ok = grad_input->ndim == input->ndim && grad_input->dtype == input->dtype && pf_is_contiguous(grad_input);
        for (int d = 0; ok && d < input->ndim; d++) ok = grad_input->shape[d] == input->shape[d];
        if (!ok)
            return pf_error(PF_ERR_VALUE, "grid_sample_backward: grad_input %s must be contiguous, shaped and typed "
                            "as input %s", pf_shape_str(grad_input, a), pf_shape_str(input, b));
    }
    if (grad_grid) {
        if ((rc = pf_check(grad_grid, "grid_sample_backward: grad_grid"))) return rc;
        int ok = grad_grid->ndim == grid->ndim && grad_grid->dtype == grid->dtype && pf_is_contiguous(grad_grid);
        for (int d = 0; ok && d < grid->ndim; d++) ok = grad_grid->shape[d] == grid->shape[d];
        if (!ok)
            return pf_error(PF_ERR_VALUE, "grid_sample_backward: grad_grid %s must be contiguous, shaped and typed "
                            "as grid %s", pf_shape_str(grad_grid, a), pf_shape_str(grid, b));
    }
    j.gy = grad_out, j.gx = grad_input, j.ggrid = grad_grid;
    if (j.N == 0) return PF_OK;
    pf_parallel_range(pf_threads_for(j.N * j.npos * (j.C + 1) * (mode == MODE_BICUBIC ? 16 : 4 * (j.nd - 1))), j.N,
                      input->dtype == PF_FLOAT32 ? backward_float : backward_double, &j);
    return PF_OK;
}
