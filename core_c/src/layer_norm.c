/* Layer normalization over the last dim, forward and backward, one call each.
 *
 * The composition (mean, var, rsqrt, sub, mul, add; and six ops back) walks every row
 * a dozen times and allocates as many tensors; here each row is read twice forward and
 * three times backward. Row sums run in 16 float partials combined in double. Only the
 * row mean and 1/std are saved: backward recomputes xhat from x, as torch's kernel does. */
#include "core.h"


static int check_args(int dtype, int64_t rows, int64_t d, const char *fn) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s(): dtype must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (rows < 0 || d <= 0)
        return pf_error(PF_ERR_VALUE, "%s(): expected rows >= 0 and a normalized size > 0, got %lld rows of %lld",
                        fn, (long long)rows, (long long)d);
    return PF_OK;
}

/* independent partial sums per row: gcc vectorizes them (a single accumulator is a serial
 * chain it may not reorder) */
#define LANES 16

/* one definition per storage type T */
#define LN_KERNELS(T, SUF)                                                                              \
    PF_VEC_CLONES static void ln_fwd_##SUF(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd, int64_t r0,    \
                             int64_t r1, int64_t d, double eps) {                                       \
        for (int64_t r = r0; r < r1; r++) {                                                              \
            const T *xr = x + r * d;                                                                     \
            T *yr = y + r * d;                                                                           \
            /* sums in LANES independent partials (vectorized), combined in double */          \
            T l1[LANES] = {0}, l2[LANES] = {0};                                                          \
            int64_t j0 = 0;                                                                              \
            for (; j0 + LANES <= d; j0 += LANES)                                                         \
                for (int l = 0; l < LANES; l++) l1[l] += xr[j0 + l];                                     \
            double s = 0.0, q = 0.0;                                                                     \
            for (int64_t j = j0; j < d; j++) s += xr[j];                                                 \
            for (int l = 0; l < LANES; l++) s += l1[l];                                                  \
            double m = s / (double)d;                                                                    \
            T mf = (T)m;                                                                                 \
            for (j0 = 0; j0 + LANES <= d; j0 += LANES)                                                   \
                for (int l = 0; l < LANES; l++) l2[l] += (xr[j0 + l] - mf) * (xr[j0 + l] - mf);          \
            for (int64_t j = j0; j < d; j++) q += ((double)xr[j] - m) * ((double)xr[j] - m);            \
            for (int l = 0; l < LANES; l++) q += l2[l];                                                  \
            double rs = 1.0 / sqrt(q / (double)d + eps);                                                 \
            T mt = (T)m, rt = (T)rs;                                                                     \
            mean[r] = mt;                                                                                \
            rstd[r] = rt;                                                                                \
            if (w && b)                                                                                  \
                for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] - mt) * rt * w[j] + b[j];                \
            else if (w)                                                                                  \
                for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] - mt) * rt * w[j];                       \
            else if (b)                                                                                  \
                for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] - mt) * rt + b[j];                       \
            else                                                                                         \
                for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] - mt) * rt;                              \
        }                                                                                                \
    }                                                                                                    \
    /* gx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)), gh = g * w */                               \
    PF_VEC_CLONES static void ln_bwd_gx_##SUF(const T *g, const T *x, const T *mean, const T *rstd, const T *w, T *gx, \
                                int64_t r0, int64_t r1, int64_t d) {                                    \
        for (int64_t r = r0; r < r1; r++) {                                                              \
            const T *gr = g + r * d, *xr = x + r * d;                                                    \
            T *out = gx + r * d;                                                                         \
            T mt = mean[r], rt = rstd[r];                                                                \
            T la[LANES] = {0}, lc[LANES] = {0};                                                          \
            int64_t j0 = 0;                                                                              \
            for (; j0 + LANES <= d; j0 += LANES)                                                         \
                for (int l = 0; l < LANES; l++) {                                                        \
                    T gh = w ? gr[j0 + l] * w[j0 + l] : gr[j0 + l];                                      \
                    la[l] += gh;                                                                         \
                    lc[l] += gh * ((xr[j0 + l] - mt) * rt);                                              \
                }                                                                                        \
            double a = 0.0, c = 0.0;                                                                     \
            for (int64_t j = j0; j < d; j++) {                                                           \
                T gh = w ? gr[j] * w[j] : gr[j];                                                         \
                a += gh;                                                                                 \
                c += (double)gh * (double)((xr[j] - mt) * rt);                                          \
            }                                                                                            \
            for (int l = 0; l < LANES; l++) a += la[l], c += lc[l];                                      \
            T at = (T)(a / (double)d), ct = (T)(c / (double)d);                                          \
            if (w)                                                                                       \
                for (int64_t j = 0; j < d; j++) out[j] = rt * (gr[j] * w[j] - at - (xr[j] - mt) * rt * ct); \
            else                                                                                         \
                for (int64_t j = 0; j < d; j++) out[j] = rt * (gr[j] - at - (xr[j] - mt) * rt * ct);     \
        }                                                                                                \
    }                                                                                                    \
    /* gw[j] = sum_r g * xhat, gb[j] = sum_r g over columns [c0, c1): a thread owns whole columns,  \
     * so the sums do not depend on the thread count */                                              \
    PF_VEC_CLONES static void ln_bwd_gwb_##SUF(const T *g, const T *x, const T *mean, const T *rstd, T *gw, T *gb,    \
                                 int64_t rows, int64_t d, int64_t c0, int64_t c1, double *acc) {        \
        int64_t n = c1 - c0;                                                                             \
        for (int64_t j = 0; j < 2 * n; j++) acc[j] = 0.0;                                                \
        for (int64_t r = 0; r < rows; r++) {                                                             \
            const T *gr = g + r * d + c0, *xr = x + r * d + c0;                                          \
            T mt = mean[r], rt = rstd[r];                                                                \
            for (int64_t j = 0; j < n; j++) {                                                            \
                acc[j] += (double)(gr[j] * ((xr[j] - mt) * rt));                                        \
                acc[n + j] += (double)gr[j];                                                             \
            }                                                                                            \
        }                                                                                                \
        for (int64_t j = 0; j < n; j++) {                                                                \
            if (gw) gw[c0 + j] = (T)acc[j];                                                              \
            if (gb) gb[c0 + j] = (T)acc[n + j];                                                          \
        }                                                                                                \
    }

LN_KERNELS(float, f32)
LN_KERNELS(double, f64)

typedef struct {
    int dtype;
    const void *g, *x, *w, *b, *mean, *rstd;
    void *y, *gx, *gw, *gb, *m_out, *r_out;
    int64_t rows, d;
    double eps, *acc;
} ln_args;

static void ln_fwd_rows(void *arg, int64_t r0, int64_t r1) {
    const ln_args *a = arg;
    if (a->dtype == PF_FLOAT32)
        ln_fwd_f32(a->x, a->w, a->b, a->y, a->m_out, a->r_out, r0, r1, a->d, a->eps);
    else
        ln_fwd_f64(a->x, a->w, a->b, a->y, a->m_out, a->r_out, r0, r1, a->d, a->eps);
}

int pf_layer_norm(int dtype, const void *x, const void *w, const void *b, void *y, void *mean, void *rstd,
                  int64_t rows, int64_t d, double eps) {
    int rc = check_args(dtype, rows, d, "layer_norm");
    if (rc) return rc;
    if (!(eps >= 0.0)) return pf_error(PF_ERR_VALUE, "layer_norm(): eps must be >= 0, got %g", eps);
    if (rows == 0) return PF_OK;
    if (!x || !y || !mean || !rstd) return pf_error(PF_ERR_VALUE, "layer_norm(): a NULL input or output buffer");
    ln_args a = {.dtype = dtype, .x = x, .w = w, .b = b, .y = y, .m_out = mean, .r_out = rstd, .rows = rows,
                 .d = d, .eps = eps};
    pf_parallel_range(pf_threads_for(rows * d), rows, ln_fwd_rows, &a);
    return PF_OK;
}

static void ln_bwd_team(void *arg, int t, int n) {
    const ln_args *a = arg;
    int64_t b0, b1, d = a->d;
    if (a->gx) {
        pf_split(a->rows, t, n, &b0, &b1);
        if (a->dtype == PF_FLOAT32)
            ln_bwd_gx_f32(a->g, a->x, a->mean, a->rstd, a->w, a->gx, b0, b1, d);
        else
            ln_bwd_gx_f64(a->g, a->x, a->mean, a->rstd, a->w, a->gx, b0, b1, d);
    }
    if (a->acc) {
        pf_split(d, t, n, &b0, &b1);
        /* each thread's slice of acc, padded apart so threads do not share cache lines */
        double *mine = a->acc + 2 * b0 + 16 * t;
        if (b1 > b0) {
            if (a->dtype == PF_FLOAT32)
                ln_bwd_gwb_f32(a->g, a->x, a->mean, a->rstd, a->gw, a->gb, a->rows, d, b0, b1, mine);
            else
                ln_bwd_gwb_f64(a->g, a->x, a->mean, a->rstd, a->gw, a->gb, a->rows, d, b0, b1, mine);
        }
    }
}

int pf_layer_norm_backward(int dtype, const void *g, const void *x, const void *mean, const void *rstd,
                           const void *w, void *gx, void *gw, void *gb, int64_t rows, int64_t d) {
    int rc = check_args(dtype, rows, d, "layer_norm_backward");
    if (rc) return rc;
    size_t sz = pf_dtype_size[dtype];
    if (rows == 0) { /* sums over no rows */
        if (gw) memset(gw, 0, (size_t)d * sz);
        if (gb) memset(gb, 0, (size_t)d * sz);
        return PF_OK;
    }
    if (!g || !x || !mean || !rstd)
        return pf_error(PF_ERR_VALUE, "layer_norm_backward(): a NULL input buffer");
    int nt = pf_threads_for(rows * d);
    ln_args a = {.dtype = dtype, .g = g, .x = x, .w = w, .mean = mean, .rstd = rstd, .gx = gx, .gw = gw,
                 .gb = gb, .rows = rows, .d = d};
    if (gw || gb) {
        a.acc = pf_alloc((size_t)(2 * d + 16 * nt) * sizeof(double));
        if (!a.acc) return pf_error(PF_ERR_NOMEM, "layer_norm_backward(): out of memory for %lld sums", (long long)d);
    }
    pf_run_team(nt, ln_bwd_team, &a);
    pf_free(a.acc);
    return PF_OK;
}
