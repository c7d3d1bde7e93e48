/* softmax and log_softmax over the last dim (pf_softmax, and pf_softmax_rows for contiguous
 * rows without descriptors).
 *
 * The core builds without trapping math (build_core.py): with it gcc kept pf_expf's selects, and so every
 * exp of a row, scalar in the AVX2 clones; log_softmax over 700 x 2000 float32 took 5x torch's time each way
 * on a Zen 3. No contraction is asked for, so the vector exp gives the scalar one's bits. */
#include <math.h>
#include "core.h"

/* lanes of a row's max: 16 floats or doubles are one or two AVX-512 registers */
#define LANES 16

/* One contiguous row, y may be x. The max is subtracted first so exp cannot overflow;
 * a NaN anywhere makes the row NaN (the max is NaN then), and an all -inf row gives
 * -inf - -inf = NaN, both as torch. Sums are in double lanes, for accuracy. Each pass is
 * its own branch-free loop, so gcc vectorizes it (a store under `if` inside the exp loop,
 * and a NaN-aware compare in the max, had kept the whole row scalar): the max tracks NaN
 * in a flag beside a plain compare, the exps go to y (log_softmax: to a block on the
 * stack) and are summed in a second pass over L1-resident data, 8 double lanes folded in
 * registers; softmax then scales by the sum's reciprocal rounded to the row's dtype, as
 * torch (an exp and a double accumulator in one loop defeat gcc's vectorizer). */
#define SM_BLOCK 256
/* short rows go in groups of at most SM_GROUP elements and SM_ROWS rows */
#define SM_GROUP 2048
#define SM_ROWS 256
#define SOFTMAX_ROW(name, V, EXP)                                                        \
    PF_ALWAYS_INLINE V row_max_##name(const V *x, int64_t n) {                           \
        V b[LANES];                                                                      \
        int nan[LANES];                                                                  \
        for (int j = 0; j < LANES; j++) b[j] = x[0], nan[j] = 0;                         \
        int64_t i = 0;                                                                   \
        for (; i + LANES <= n; i += LANES) {                                             \
            _Pragma("omp simd") for (int j = 0; j < LANES; j++) {                        \
                V v = x[i + j];                                                          \
                b[j] = v > b[j] ? v : b[j];                                              \
                nan[j] |= v != v;                                                        \
            }                                                                            \
        }                                                                                \
        V m = b[0];                                                                      \
        int any = nan[0];                                                                \
        for (int j = 1; j < LANES; j++) m = b[j] > m ? b[j] : m, any |= nan[j];          \
        for (; i < n; i++) m = x[i] > m ? x[i] : m, any |= x[i] != x[i];                 \
        return any ? (V)NAN : m;                                                         \
    }                                                                                    \
    PF_ALWAYS_INLINE double row_sum_##name(const V *y, int64_t n) {                      \
        double a[8] = {0};                                                               \
        int64_t i = 0;                                                                   \
        for (; i + 8 <= n; i += 8) {                                                     \
            _Pragma("omp simd") for (int j = 0; j < 8; j++) a[j] += y[i + j];            \
        }                                                                                \
        double s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));    \
        for (; i < n; i++) s += y[i];                                                    \
        return s;                                                                        \
    }                                                                                    \
    PF_ALWAYS_INLINE void row_exp_##name(const V *x, V *y, int64_t n, V m) {             \
        for (int64_t i = 0; i < n; i++) y[i] = EXP(x[i] - m);                            \
    }                                                                                    \
    PF_ALWAYS_INLINE void name##_row(const V *x, V *y, int64_t n, int take_log) {        \
        V m = row_max_##name(x, n);                                                      \
        if (take_log) {                                                                  \
            V t[SM_BLOCK];                                                               \
            double s = 0;                                                                \
            for (int64_t i = 0; i < n; i += SM_BLOCK) {                                  \
                int64_t k = n - i < SM_BLOCK ? n - i : SM_BLOCK;                         \
                row_exp_##name(x + i, t, k, m);                                          \
                s += row_sum_##name(t, k);                                               \
            }                                                                            \
            V ls = (V)log(s);                                                            \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] - m - ls;                        \
        } else {                                                                         \
            row_exp_##name(x, y, n, m);                                                  \
            V r = (V)(1.0 / row_sum_##name(y, n));                                       \
            for (int64_t i = 0; i < n; i++) y[i] *= r;                                   \
        }                                                                                \
    }                                                                                    \
    /* Rows of n, xr and yr elements apart. Short rows go SM_GROUP elements at a time,   \
     * phase by phase: the maxes, x - max into a block on the stack, one exp loop over   \
     * the whole block, the sums, the results. Row by row, a short row is one chain of   \
     * dependent steps (max, exp, sum, divide, scale) that the core cannot overlap with  \
     * the next row's, plus its own vector loop tails; the values are the same. */       \
    PF_VEC_CLONES static void name(const V *x, int64_t xr, V *y, int64_t yr, int64_t rows, int64_t n, \
                             int take_log) {                                             \
        if (n > SM_GROUP / 4) {                                                          \
            for (int64_t r = 0; r < rows; r++) name##_row(x + r * xr, y + r * yr, n, take_log); \
            return;                                                                      \
        }                                                                                \
        V t[SM_GROUP], m[SM_ROWS];                                                       \
        double s[SM_ROWS];                                                               \
        int64_t g = SM_GROUP / n < SM_ROWS ? SM_GROUP / n : SM_ROWS;                     \
        for (int64_t r0 = 0; r0 < rows; r0 += g) {                                       \
            int64_t gr = rows - r0 < g ? rows - r0 : g, k = gr * n;                      \
            const V *xg = x + r0 * xr;                                                   \
            V *yg = y + r0 * yr;                                                         \
            for (int64_t r = 0; r < gr; r++) m[r] = row_max_##name(xg + r * xr, n);      \
            for (int64_t r = 0; r < gr; r++)                                             \
                for (int64_t i = 0; i < n; i++) t[r * n + i] = xg[r * xr + i] - m[r];    \
            for (int64_t i = 0; i < k; i++) t[i] = EXP(t[i]);                            \
            for (int64_t r = 0; r < gr; r++) s[r] = row_sum_##name(t + r * n, n);        \
            if (take_log)                                                                \
                for (int64_t r = 0; r < gr; r++) {                                       \
                    V ls = (V)log(s[r]);                                                 \
                    for (int64_t i = 0; i < n; i++) yg[r * yr + i] = xg[r * xr + i] - m[r] - ls; \
                }                                                                        \
            else                                                                         \
                for (int64_t r = 0; r < gr; r++) {                                       \
                    V rs = (V)(1.0 / s[r]);                                              \
                    for (int64_t i = 0; i < n; i++) yg[r * yr + i] = t[r * n + i] * rs;  \
                }                                                                        \
        }                                                                                \
    }

SOFTMAX_ROW(softmax_f32, float, pf_expf)
SOFTMAX_ROW(softmax_f64, double, exp)

/* A strided or float16 row (float16 computes in float) through the thread's scratch
 * row; contiguous float32 and float64 rows go to the kernels a run of rows at a time. */
static void softmax_row(int dt, const char *x, int64_t sx, char *y, int64_t sy, int64_t n, int take_log,
                        void *scratch) {
    if (dt == PF_FLOAT64) {
        double *t = scratch;
        for (int64_t i = 0; i < n; i++) t[i] = ((const double *)x)[i * sx];
        softmax_f64(t, 0, t, 0, 1, n, take_log);
        for (int64_t i = 0; i < n; i++) ((double *)y)[i * sy] = t[i];
        return;
    }
    float *t = scratch;
    if (dt == PF_FLOAT32)
        for (int64_t i = 0; i < n; i++) t[i] = ((const float *)x)[i * sx];
    else
        for (int64_t i = 0; i < n; i++) t[i] = pf_half_load(dt, ((const uint16_t *)x)[i * sx]);
    softmax_f32(t, 0, t, 0, 1, n, take_log);
    if (dt == PF_FLOAT32)
        for (int64_t i = 0; i < n; i++) ((float *)y)[i * sy] = t[i];
    else
        for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i * sy] = pf_half_store(dt, t[i]);
}

typedef struct {
    const pf_walk *ow;
    const char *xb;
    char *ob, *scratch;
    int64_t sx, sy, n;
    int dt, take_log;
} softmax_job;

static void softmax_part(void *arg, int t, int T) {
    const softmax_job *j = arg;
    int64_t b, e;
    pf_split(j->ow->numel, t, T, &b, &e);
    pf_walk w = *j->ow;
    pf_walk_seek(&w, b);
    void *mine = j->scratch ? j->scratch + (size_t)(t * j->n) * sizeof(double) : NULL;
    for (int64_t pos = b; pos < e;) {
        int64_t len = pf_walk_run(&w, e - pos);
        const char *x = j->xb + w.off[0];
        char *y = j->ob + w.off[1];
        int rows = j->sx == 1 && j->sy == 1 && !pf_is_half(j->dt);
        if (rows && j->dt == PF_FLOAT32)
            softmax_f32((const float *)x, w.inner[0] / 4, (float *)y, w.inner[1] / 4, len, j->n, j->take_log);
        else if (rows)
            softmax_f64((const double *)x, w.inner[0] / 8, (double *)y, w.inner[1] / 8, len, j->n, j->take_log);
        else
            for (int64_t r = 0; r < len; r++)
                softmax_row(j->dt, x + r * w.inner[0], j->sx, y + r * w.inner[1], j->sy, j->n, j->take_log, mine);
        pos += len;
        pf_walk_advance(&w, len);
    }
}

int pf_softmax(const pf_tensor *x, pf_tensor *out, int take_log) {
    int rc;
    const char *name = take_log ? "log_softmax" : "softmax";
    if ((rc = pf_check(x, "softmax input")) || (rc = pf_check(out, "softmax output"))) return rc;
    if (!pf_is_float(x->dtype))
        return pf_error(PF_ERR_TYPE, "%s(): input dtype should be a floating point type, got %s", name,
                        pf_dtype_name[x->dtype]);
    if (out->dtype != x->dtype)
        return pf_error(PF_ERR_TYPE, "%s(): output dtype %s differs from input dtype %s", name,
                        pf_dtype_name[out->dtype], pf_dtype_name[x->dtype]);
    int same = out->ndim == x->ndim;
    for (int i = 0; same && i < x->ndim; i++) same = out->shape[i] == x->shape[i];
    if (!same) {
        char a[128], b[128];
        return pf_error(PF_ERR_VALUE, "%s(): output shape %s differs from input shape %s", name,
                        pf_shape_str(out, a), pf_shape_str(x, b));
    }
    int nd = x->ndim, k = nd ? nd - 1 : 0;
    int64_t n = nd ? x->shape[nd - 1] : 1, total = pf_numel(x);
    if (n == 0 || total == 0) return PF_OK;
    int64_t sx = nd ? x->strides[nd - 1] : 0, sy = nd ? out->strides[nd - 1] : 0;
    int64_t shape[PF_MAX_DIMS], st[2][PF_MAX_DIMS];
    for (int i = 0; i < k; i++) shape[i] = x->shape[i], st[0][i] = x->strides[i], st[1][i] = out->strides[i];
    const int64_t *stp[2] = {st[0], st[1]};
    size_t sz[2] = {pf_dtype_size[x->dtype], pf_dtype_size[x->dtype]};
    pf_walk ow;
    pf_walk_init(&ow, k, shape, 2, stp, sz);
    int dt = x->dtype, nt = pf_threads_for(total);
    char *scratch = NULL;
    if (pf_is_half(dt) || sx != 1 || sy != 1) {
        scratch = pf_alloc((size_t)(nt * n) * sizeof(double));
        if (!scratch) return pf_error(PF_ERR_NOMEM, "%s(): out of memory for a row of %lld", name, (long long)n);
    }
    softmax_job j = {&ow, x->data, out->data, scratch, sx, sy, n, dt, take_log};
    pf_run_team(nt, softmax_part, &j);
    pf_free(scratch);
    return PF_OK;
}

int pf_softmax_rows(int dtype, const void *x, void *out, int64_t rows, int64_t n, int take_log) {
    pf_tensor xd, od;
    int rc = pf_rows_desc("softmax", dtype, x, rows, n, &xd);
    if (rc) return rc;
    od = xd;
    od.data = out;
    return pf_softmax(&xd, &od, take_log);
}

/* ---- backward over contiguous rows ----
 * log_softmax: gx = g - exp(y) sum(g); softmax: gx = y (g - sum(g y)); sums in double lanes. One pass for the
 * sum and one for gx, where the composition took an exp, a product, a sum and a difference through three
 * temporaries of the whole tensor. gx may be g. */
#define SOFTMAX_BACK(name, V, EXP)                                                                      \
    PF_VEC_CLONES static void name(const V *g, const V *y, V *gx, int64_t rows, int64_t n, int take_log) { \
        for (int64_t r = 0; r < rows; r++, g += n, y += n, gx += n) {                                   \
            double a[8] = {0};                                                                          \
            int64_t i = 0;                                                                              \
            if (take_log) {                                                                             \
                for (; i + 8 <= n; i += 8) {                                                            \
                    _Pragma("omp simd") for (int j = 0; j < 8; j++) a[j] += g[i + j];                   \
                }                                                                                       \
            } else {                                                                                    \
                for (; i + 8 <= n; i += 8) {                                                            \
                    _Pragma("omp simd") for (int j = 0; j < 8; j++) a[j] += (double)(g[i + j] * y[i + j]); \
                }                                                                                       \
            }                                                                                           \
            double s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));               \
            for (; i < n; i++) s += take_log ? (double)g[i] : (double)(g[i] * y[i]);                   \
            const V sv = (V)s;                                                                          \
            if (take_log)                                                                               \
                for (i = 0; i < n; i++) gx[i] = g[i] - EXP(y[i]) * sv;                                  \
            else                                                                                        \
                for (i = 0; i < n; i++) gx[i] = y[i] * (g[i] - sv);                                     \
        }                                                                                               \
    }
SOFTMAX_BACK(softmax_back_f32, float, pf_expf)
SOFTMAX_BACK(softmax_back_f64, double, exp)

typedef struct {
    const char *g, *y;
    char *gx;
    int64_t n;
    size_t es;
    int dtype, take_log;
} softmax_back_job;

static void softmax_back_range(void *arg, int64_t r0, int64_t r1) {
    const softmax_back_job *j = arg;
    size_t off = (size_t)r0 * (size_t)j->n * j->es;
    if (j->dtype == PF_FLOAT32)
        softmax_back_f32((const float *)(j->g + off), (const float *)(j->y + off), (float *)(j->gx + off), r1 - r0,
                         j->n, j->take_log);
    else
        softmax_back_f64((const double *)(j->g + off), (const double *)(j->y + off), (double *)(j->gx + off),
                         r1 - r0, j->n, j->take_log);
}

int pf_softmax_backward_rows(int dtype, const void *g, const void *y, void *gx, int64_t rows, int64_t n,
                             int take_log) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "softmax backward rows: float32 or float64 only, got dtype code %d", dtype);
    if (rows < 0 || n < 0 || (rows > 0 && n > 0 && (!g || !y || !gx)))
        return pf_error(PF_ERR_VALUE, "softmax backward rows: bad buffers (rows=%lld, n=%lld)", (long long)rows,
                        (long long)n);
    if (rows == 0 || n == 0) return PF_OK;
    softmax_back_job j = {g, y, gx, n, pf_dtype_size[dtype], dtype, take_log != 0};
    pf_parallel_range(pf_threads_for(rows * n), rows, softmax_back_range, &j);
    return PF_OK;
}
