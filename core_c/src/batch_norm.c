/* Batch normalization with batch statistics, forward and backward, one channel at a time;
 * and with the running statistics (eval), in one pass.
 *
 * x is viewed as [N, C, L] (L = the spatial size). A channel's N*L values are read three
 * times in forward (mean, centred variance, normalize) and twice in backward (the two
 * sums, then the input gradient), back to back, so after the first pass they come from
 * cache; the composition of separate ops read and wrote whole tensors eleven times.
 * Sums accumulate in double, and the variance is the centred two-pass one, so a channel
 * whose mean is large beside its spread loses nothing to cancellation. Work is split over
 * channels: no two threads share an output element. */
#include <stdio.h>
#include "core.h"

typedef struct {
    int64_t N, C, L;
    int64_t xs0, xs1, xs2; /* x's element strides */
} bgeom;

static int check_vec(const char *fn, const char *what, const pf_tensor *t, int dtype, int64_t C) {
    char a[128];
    char name[96];
    snprintf(name, sizeof name, "%s: %s", fn, what);
    int rc = pf_check(t, name);
    if (rc) return rc;
    if (t->ndim != 1 || t->shape[0] != C)
        return pf_error(PF_ERR_VALUE, "%s: %s must have shape [%lld], got %s", fn, what, (long long)C,
                        pf_shape_str(t, a));
    if (t->dtype != dtype)
        return pf_error(PF_ERR_TYPE, "%s: %s must be %s, got %s", fn, what, pf_dtype_name[dtype],
                        pf_dtype_name[t->dtype]);
    return PF_OK;
}

static int check_x(const char *fn, const char *what, const pf_tensor *t, const pf_tensor *x, int contig) {
    char a[128], b[128];
    char name[96];
    snprintf(name, sizeof name, "%s: %s", fn, what);
    int rc = pf_check(t, name);
    if (rc) return rc;
    if (t->ndim != 3 || t->shape[0] != x->shape[0] || t->shape[1] != x->shape[1] || t->shape[2] != x->shape[2])
        return pf_error(PF_ERR_VALUE, "%s: %s has shape %s but the input has %s", fn, what, pf_shape_str(t, a),
                        pf_shape_str(x, b));
    if (t->dtype != x->dtype)
        return pf_error(PF_ERR_TYPE, "%s: %s is %s but the input is %s", fn, what, pf_dtype_name[t->dtype],
                        pf_dtype_name[x->dtype]);
    if (contig && t->shape[0] * t->shape[1] * t->shape[2] > 0 &&
        (t->strides[2] != 1 || t->strides[1] != t->shape[2] || t->strides[0] != t->shape[1] * t->shape[2]))
        return pf_error(PF_ERR_VALUE, "%s: %s must be contiguous", fn, what);
    return PF_OK;
}

static int setup(const char *fn, const pf_tensor *x, bgeom *g) {
    char a[128];
    int rc = pf_check(x, "batch_norm: input");
    if (rc) return rc;
    if (x->ndim != 3) return pf_error(PF_ERR_VALUE, "%s: input must be 3-d [N, C, L], got %s", fn, pf_shape_str(x, a));
    if (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: only float32 and float64 are supported, got %s", fn,
                        pf_dtype_name[x->dtype]);
    *g = (bgeom){.N = x->shape[0], .C = x->shape[1], .L = x->shape[2], .xs0 = x->strides[0], .xs1 = x->strides[1],
                 .xs2 = x->strides[2]};
    if (g->N * g->L < 2)
        return pf_error(PF_ERR_VALUE, "%s: expected more than 1 value per channel, got input %s", fn,
                        pf_shape_str(x, a));
    return PF_OK;
}

static inline double vec_get(const pf_tensor *t, int64_t c) {
    return t->dtype == PF_FLOAT32 ? ((const float *)t->data)[c * t->strides[0]]
                                  : ((const double *)t->data)[c * t->strides[0]];
}
/* t's data is written through a const descriptor: the descriptor itself is not */
static inline void vec_set(const pf_tensor *t, int64_t c, double v) {
    if (t->dtype == PF_FLOAT32) ((float *)t->data)[c * t->strides[0]] = (float)v;
    else ((double *)t->data)[c * t->strides[0]] = v;
}

/* Sums over a row in eight independent lanes of T, flushed to double every BLOCK values:
 * without -ffast-math gcc keeps a single accumulator serial (one add per 4 cycles), while
 * eight lanes vectorize; the flush bounds the float error to that of a BLOCK-long sum.
 * LANE_BLOCKS runs the contiguous part: per block, DECL the lanes, STEP for lane k at l + k,
 * FLUSH lane k; l ends where the scalar tail starts. */
#define LANES 8
#define BLOCK 512
#define LANE_BLOCKS(DECL, STEP, FLUSH)                                                           \
    int64_t l = 0;                                                                               \
    if (s == 1)                                                                                  \
        while (l + LANES <= n) {                                                                 \
            DECL;                                                                                \
            int64_t end = l + BLOCK < n ? l + BLOCK : n;                                         \
            for (; l + LANES <= end; l += LANES)                                                 \
                for (int k = 0; k < LANES; k++) {                                                \
                    STEP;                                                                        \
                }                                                                                \
            for (int k = 0; k < LANES; k++) {                                                    \
                FLUSH;                                                                           \
            }                                                                                    \
        }
/* the backward's sums: AVX2's written-out loops for float32 when the kernel set is avx2 (below) */
#if defined(__x86_64__) && defined(__GNUC__)
static void row_dot_avx2(const float *q, const float *p, int64_t n, int64_t s, float mt, double *sq, double *sqp);
static void rows_dot_avx2(const float *q, int64_t qs, const float *p, int64_t ps, int64_t N, int64_t n, float mt,
                          double *sq, double *sqp);
#define ROW_DOT_float(...) (avx2 ? row_dot_avx2(__VA_ARGS__) : row_dot_float(__VA_ARGS__))
#define ROWS_DOT_float(...) (avx2 ? rows_dot_avx2(__VA_ARGS__) : rows_dot_float(__VA_ARGS__))
#else
#define ROW_DOT_float row_dot_float
#define ROWS_DOT_float rows_dot_float
#endif
#define ROW_DOT_double row_dot_double
#define ROWS_DOT_double rows_dot_double
#define DEFINE_BN(T)                                                                             \
    /* sum(p - o) for a shift o near the values: T lanes then lose precision against the         \
     * spread, not against a large mean */                                                       \
    PF_VEC_CLONES static double row_sum_##T(const T *p, int64_t n, int64_t s, T o) {                           \
        double t = 0;                                                                            \
        LANE_BLOCKS(T acc[LANES] = {0}, acc[k] += p[l + k] - o, t += acc[k])                     \
        for (; l < n; l++) t += (double)p[l * s] - o;                                            \
        return t;                                                                                \
    }                                                                                            \
    PF_VEC_CLONES static double row_sq_##T(const T *p, int64_t n, int64_t s, T mt) {                           \
        double t = 0;                                                                            \
        LANE_BLOCKS(T acc[LANES] = {0}, T d = p[l + k] - mt; acc[k] += d * d, t += acc[k])       \
        for (; l < n; l++) {                                                                     \
            double d = p[l * s] - mt;                                                            \
            t += d * d;                                                                          \
        }                                                                                        \
        return t;                                                                                \
    }                                                                                            \
    /* sum(q) and sum(q * (p - m)) over a row; q is contiguous */                                \
    PF_VEC_CLONES static void row_dot_##T(const T *q, const T *p, int64_t n, int64_t s, T mt,    \
                                          double *sq, double *sqp) {                             \
        double ta = 0, tb = 0;                                                                   \
        LANE_BLOCKS(T a[LANES] = {0}; T b[LANES] = {0}, a[k] += q[l + k];                        \
                    b[k] += q[l + k] * (p[l + k] - mt), ta += a[k]; tb += b[k])                  \
        for (; l < n; l++) ta += q[l], tb += (double)q[l] * (p[l * s] - mt);                     \
        *sq += ta;                                                                               \
        *sqp += tb;                                                                              \
    }                                                                                            \
    /* row_dot over a channel's N short contiguous rows (q's rows qs apart, p's ps apart), the    \
     * lanes kept across rows and flushed every BLOCK values: flushing per row cost a 4x4        \
     * plane's 16 values 16 double adds */                                                       \
    PF_VEC_CLONES static void rows_dot_##T(const T *q, int64_t qs, const T *p, int64_t ps, int64_t N, \
                                           int64_t n, T mt, double *sq, double *sqp) {           \
        double ta = 0, tb = 0;                                                                   \
        int64_t rb = BLOCK / n > 1 ? BLOCK / n : 1; /* rows per flush */                         \
        for (int64_t r0 = 0; r0 < N; r0 += rb) {                                                 \
            T a[LANES] = {0}, b[LANES] = {0};                                                    \
            int64_t r1 = N - r0 < rb ? N : r0 + rb;                                              \
            for (int64_t r = r0; r < r1; r++) {                                                  \
                const T *qr = q + r * qs, *pr = p + r * ps;                                      \
                int64_t l = 0;                                                                   \
                for (; l + LANES <= n; l += LANES)                                               \
                    for (int k = 0; k < LANES; k++)                                              \
                        a[k] += qr[l + k], b[k] += qr[l + k] * (pr[l + k] - mt);                 \
                for (; l < n; l++) ta += qr[l], tb += (double)qr[l] * (pr[l] - mt);              \
            }                                                                                    \
            for (int k = 0; k < LANES; k++) ta += a[k], tb += b[k];                              \
        }                                                                                        \
        *sq += ta;                                                                               \
        *sqp += tb;                                                                              \
    }                                                                                            \
    /* mean and biased variance of channel c */                                                  \
    static void bn_stats_##T(const T *x, const bgeom *g, int64_t c, double *mean, double *var) { \
        double s = 0, q = 0;                                                                     \
        T o = x[c * g->xs1];                                                                     \
        for (int64_t n = 0; n < g->N; n++) s += row_sum_##T(x + n * g->xs0 + c * g->xs1, g->L, g->xs2, o); \
        double m = o + s / (double)(g->N * g->L);                                                \
        /* centred on the mean rounded to T (so the lanes stay in T), then corrected: with       \
         * sum(x - m) = 0, sum((x - mt)^2) = sum((x - m)^2) + count * (m - mt)^2 */              \
        T mt = (T)m;                                                                             \
        for (int64_t n = 0; n < g->N; n++) q += row_sq_##T(x + n * g->xs0 + c * g->xs1, g->L, g->xs2, mt); \
        *mean = m;                                                                               \
        double v = q / (double)(g->N * g->L) - (m - mt) * (m - mt);                              \
        *var = v > 0 ? v : 0;                                                                    \
    }                                                                                            \
    /* y = (x - mean) * scale + bias over channel c (y contiguous); centring first keeps a       \
     * large mean from cancelling the way a folded x * scale + shift would in float32 */         \
    PF_VEC_CLONES static void bn_apply_##T(const T *x, T *y, const bgeom *g, int64_t c, T mean, T scale, \
                                           T bias) {                                             \
        for (int64_t n = 0; n < g->N; n++) {                                                     \
            const T *p = x + n * g->xs0 + c * g->xs1;                                            \
            T *o = y + (n * g->C + c) * g->L;                                                    \
            if (g->xs2 == 1)                                                                     \
                for (int64_t l = 0; l < g->L; l++) o[l] = (p[l] - mean) * scale + bias;          \
            else                                                                                 \
                for (int64_t l = 0; l < g->L; l++) o[l] = (p[l * g->xs2] - mean) * scale + bias; \
        }                                                                                        \
    }                                                                                            \
    /* sum(gy) and sum(gy * (x - mean)) over channel c (gy contiguous) */                        \
    static void bn_grad_sums_##T(const T *gy, const T *x, const bgeom *g, int64_t c, double mean, \
                                 double *sg, double *sgx, int avx2) {                            \
        T mt = (T)mean;                                                                          \
        (void)avx2;                                                                              \
        *sg = *sgx = 0;                                                                          \
        if (g->xs2 == 1 && g->L < BLOCK)                                                         \
            ROWS_DOT_##T(gy + c * g->L, g->C * g->L, x + c * g->xs1, g->xs0, g->N, g->L, mt, sg, sgx); \
        else                                                                                     \
            for (int64_t n = 0; n < g->N; n++)                                                   \
                ROW_DOT_##T(gy + (n * g->C + c) * g->L, x + n * g->xs0 + c * g->xs1, g->L, g->xs2, mt, sg, sgx); \
        *sgx -= (mean - (double)mt) * *sg; /* x - mean = (x - mt) - (mean - mt) */               \
    }                                                                                            \
    /* gx = gy * k1 - (x - mean) * k2 - k3 over channel c (gx, gy contiguous) */                 \
    PF_VEC_CLONES static void bn_grad_x_##T(const T *gy, const T *x, T *gx, const bgeom *g, int64_t c, \
                                            T mean, T k1, T k2, T k3) {                          \
        for (int64_t n = 0; n < g->N; n++) {                                                     \
            const T *p = x + n * g->xs0 + c * g->xs1, *q = gy + (n * g->C + c) * g->L;           \
            T *o = gx + (n * g->C + c) * g->L;                                                   \
            if (g->xs2 == 1)                                                                     \
                for (int64_t l = 0; l < g->L; l++) o[l] = q[l] * k1 - (p[l] - mean) * k2 - k3;   \
            else                                                                                 \
                for (int64_t l = 0; l < g->L; l++) o[l] = q[l] * k1 - (p[l * g->xs2] - mean) * k2 - k3; \
        }                                                                                        \
    }
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The backward's two sums for float32 on AVX2, written out: gcc's avx2 clone of row_dot / rows_dot kept the lanes
 * a[] and b[] interleaved through permutes and scalar adds (59% of a 128-channel 16x16 backward). The same
 * operations in the same order (sub, mul, add per lane; the lanes flushed to double in lane order), so the same
 * bits as the generic loops. */
#define T256 __attribute__((target("avx2")))
static inline __attribute__((always_inline)) T256 void dot_lanes(const float *q, const float *p, int64_t n, __m256 m,
                                                                 __m256 *a, __m256 *b) {
    for (int64_t l = 0; l + LANES <= n; l += LANES) {
        __m256 vq = _mm256_loadu_ps(q + l);
        *a = _mm256_add_ps(*a, vq);
        *b = _mm256_add_ps(*b, _mm256_mul_ps(vq, _mm256_sub_ps(_mm256_loadu_ps(p + l), m)));
    }
}
static inline __attribute__((always_inline)) T256 void flush_lanes(__m256 a, __m256 b, double *ta, double *tb) {
    float la[LANES], lb[LANES];
    _mm256_storeu_ps(la, a);
    _mm256_storeu_ps(lb, b);
    for (int k = 0; k < LANES; k++) *ta += la[k], *tb += lb[k];
}
static T256 void row_dot_avx2(const float *q, const float *p, int64_t n, int64_t s, float mt, double *sq,
                              double *sqp) {
    double ta = 0, tb = 0;
    int64_t l = 0;
    const __m256 m = _mm256_set1_ps(mt);
    if (s == 1)
        while (l + LANES <= n) {
            __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
            int64_t end = l + BLOCK < n ? l + BLOCK : n, cnt = (end - l) / LANES * LANES;
            dot_lanes(q + l, p + l, cnt, m, &a, &b);
            l += cnt;
            flush_lanes(a, b, &ta, &tb);
        }
    for (; l < n; l++) ta += q[l], tb += (double)q[l] * (p[l * s] - mt);
    *sq += ta;
    *sqp += tb;
}
static T256 void rows_dot_avx2(const float *q, int64_t qs, const float *p, int64_t ps, int64_t N, int64_t n, float mt,
                               double *sq, double *sqp) {
    double ta = 0, tb = 0;
    int64_t rb = BLOCK / n > 1 ? BLOCK / n : 1, n8 = n / LANES * LANES;
    const __m256 m = _mm256_set1_ps(mt);
    for (int64_t r0 = 0; r0 < N; r0 += rb) {
        __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
        int64_t r1 = N - r0 < rb ? N : r0 + rb;
        for (int64_t r = r0; r < r1; r++) {
            const float *qr = q + r * qs, *pr = p + r * ps;
            dot_lanes(qr, pr, n8, m, &a, &b);
            for (int64_t l = n8; l < n; l++) ta += qr[l], tb += (double)qr[l] * (pr[l] - mt);
        }
        flush_lanes(a, b, &ta, &tb);
    }
    *sq += ta;
    *sqp += tb;
}
#endif

DEFINE_BN(float)
DEFINE_BN(double)

/* One call's operands; threads split the channels, so no two share an output element. */
typedef struct {
    const bgeom *g;
    const pf_tensor *x, *weight, *bias, *grad_out;
    const pf_tensor *running_mean, *running_var, *y, *mean, *var, *grad_in, *grad_weight, *grad_bias; /* written */
    double eps, momentum;
} bn_job;

static void bn_forward_channels(void *arg, int64_t c0, int64_t c1) {
    const bn_job *j = arg;
    const bgeom *g = j->g;
    int dt = j->x->dtype;
    int64_t m = g->N * g->L;
    for (int64_t c = c0; c < c1; c++) {
        double mu, v;
        if (dt == PF_FLOAT32) bn_stats_float(j->x->data, g, c, &mu, &v);
        else bn_stats_double(j->x->data, g, c, &mu, &v);
        double invstd = 1.0 / sqrt(v + j->eps);
        double scale = j->weight ? invstd * vec_get(j->weight, c) : invstd;
        double shift = j->bias ? vec_get(j->bias, c) : 0.0;
        /* x - mu = (x - mt) + (mt - mu) with mt = mu rounded to float */
        if (dt == PF_FLOAT32)
            bn_apply_float(j->x->data, j->y->data, g, c, (float)mu, (float)scale,
                           (float)(shift + ((double)(float)mu - mu) * scale));
        else bn_apply_double(j->x->data, j->y->data, g, c, mu, scale, shift);
        vec_set(j->mean, c, mu);
        vec_set(j->var, c, v);
        /* the running variance is the unbiased one, as torch keeps it */
        double mom = j->momentum;
        if (j->running_mean) vec_set(j->running_mean, c, (1 - mom) * vec_get(j->running_mean, c) + mom * mu);
        if (j->running_var)
            vec_set(j->running_var, c, (1 - mom) * vec_get(j->running_var, c) + mom * v * (double)m / (double)(m - 1));
    }
}

static void bn_backward_channels(void *arg, int64_t c0, int64_t c1) {
    const bn_job *j = arg;
    const bgeom *g = j->g;
    int dt = j->x->dtype;
    double m = (double)(g->N * g->L);
    const int avx2 = !strcmp(pf_gemm_path(), "avx2");
    for (int64_t c = c0; c < c1; c++) {
        double mu = vec_get(j->mean, c), invstd = 1.0 / sqrt(vec_get(j->var, c) + j->eps), sg, sgx;
        if (dt == PF_FLOAT32) bn_grad_sums_float(j->grad_out->data, j->x->data, g, c, mu, &sg, &sgx, avx2);
        else bn_grad_sums_double(j->grad_out->data, j->x->data, g, c, mu, &sg, &sgx, 0);
        if (j->grad_weight) vec_set(j->grad_weight, c, sgx * invstd);
        if (j->grad_bias) vec_set(j->grad_bias, c, sg);
        if (!j->grad_in) continue;
        /* gx = w*invstd * (gy - sum(gy)/m - (x - mean) * invstd^2 * sum(gy*(x - mean))/m) */
        double a = (j->weight ? vec_get(j->weight, c) : 1.0) * invstd;
        double k2 = a * invstd * invstd * sgx / m, k3 = a * sg / m;
        k3 += ((double)(float)mu - mu) * k2 * (dt == PF_FLOAT32); /* float32 centres on mu rounded */
        if (dt == PF_FLOAT32)
            bn_grad_x_float(j->grad_out->data, j->x->data, j->grad_in->data, g, c, (float)mu, (float)a, (float)k2,
                            (float)k3);
        else bn_grad_x_double(j->grad_out->data, j->x->data, j->grad_in->data, g, c, mu, a, k2, k3);
    }
}

int pf_batch_norm_forward(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias, double eps,
                          double momentum, pf_tensor *running_mean, pf_tensor *running_var, pf_tensor *y,
                          pf_tensor *mean, pf_tensor *var) {
    const char *fn = "batch_norm";
    bgeom g;
    int rc = setup(fn, x, &g);
    if (rc) return rc;
    int dt = x->dtype;
    if ((weight && (rc = check_vec(fn, "weight", weight, dt, g.C))) ||
        (bias && (rc = check_vec(fn, "bias", bias, dt, g.C))) ||
        (running_mean && (rc = check_vec(fn, "running_mean", running_mean, dt, g.C))) ||
        (running_var && (rc = check_vec(fn, "running_var", running_var, dt, g.C))) ||
        (rc = check_vec(fn, "mean", mean, PF_FLOAT64, g.C)) ||
        (rc = check_vec(fn, "var", var, PF_FLOAT64, g.C)) || (rc = check_x(fn, "output", y, x, 1)))
        return rc;
    if (!(eps >= 0) || !(momentum == momentum))
        return pf_error(PF_ERR_VALUE, "%s: eps must be >= 0 and momentum a number, got %g and %g", fn, eps, momentum);
    bn_job j = {.g = &g, .x = x, .weight = weight, .bias = bias, .running_mean = running_mean,
                .running_var = running_var, .y = y, .mean = mean, .var = var, .eps = eps, .momentum = momentum};
    pf_parallel_range(pf_threads_for(g.C * g.N * g.L * 3), g.C, bn_forward_channels, &j);
    return PF_OK;
}

int pf_batch_norm_backward(const pf_tensor *grad_out, const pf_tensor *x, const pf_tensor *mean,
                           const pf_tensor *var, const pf_tensor *weight, double eps, pf_tensor *grad_in,
                           pf_tensor *grad_weight, pf_tensor *grad_bias) {
    const char *fn = "batch_norm_backward";
    bgeom g;
    int rc = setup(fn, x, &g);
    if (rc) return rc;
    int dt = x->dtype;
    if ((rc = check_x(fn, "grad_output", grad_out, x, 1)) || (rc = check_vec(fn, "mean", mean, PF_FLOAT64, g.C)) ||
        (rc = check_vec(fn, "var", var, PF_FLOAT64, g.C)) || (weight && (rc = check_vec(fn, "weight", weight, dt, g.C))) ||
        (grad_in && (rc = check_x(fn, "grad_input", grad_in, x, 1))) ||
        (grad_weight && (rc = check_vec(fn, "grad_weight", grad_weight, dt, g.C))) ||
        (grad_bias && (rc = check_vec(fn, "grad_bias", grad_bias, dt, g.C))))
        return rc;
    if (!(eps >= 0)) return pf_error(PF_ERR_VALUE, "%s: eps must be >= 0, got %g", fn, eps);
    bn_job j = {.g = &g, .x = x, .weight = weight, .mean = mean, .var = var, .grad_out = grad_out,
                .grad_in = grad_in, .grad_weight = grad_weight, .grad_bias = grad_bias, .eps = eps};
    pf_parallel_range(pf_threads_for(g.C * g.N * g.L * 2), g.C, bn_backward_channels, &j);
    return PF_OK;
}

/* eval: y = x * scale + shift per channel, scale = weight / sqrt(running_var + eps) and
 * shift = bias - running_mean * scale made in double and rounded once, as torch folds them */
#define DEFINE_BN_EVAL(T)                                                                                 \
    static void bn_eval_rows_##T(const bn_job *j, int64_t r0, int64_t r1) {                               \
        const bgeom *g = j->g;                                                                            \
        const T *x = j->x->data;                                                                          \
        T *y = j->y->data;                                                                                \
        for (int64_t r = r0; r < r1; r++) {                                                               \
            int64_t n = r / g->C, c = r % g->C;                                                           \
            double sc = 1.0 / sqrt(vec_get(j->running_var, c) + j->eps);                                  \
            if (j->weight) sc *= vec_get(j->weight, c);                                                   \
            double sh = (j->bias ? vec_get(j->bias, c) : 0.0) - vec_get(j->running_mean, c) * sc;         \
            T a = (T)sc, b = (T)sh;                                                                       \
            const T *p = x + n * g->xs0 + c * g->xs1;                                                     \
            T *o = y + r * g->L;                                                                          \
            if (g->xs2 == 1)                                                                              \
                for (int64_t l = 0; l < g->L; l++) o[l] = p[l] * a + b;                                   \
            else                                                                                          \
                for (int64_t l = 0; l < g->L; l++) o[l] = p[l * g->xs2] * a + b;                          \
        }                                                                                                 \
    }
DEFINE_BN_EVAL(float)
DEFINE_BN_EVAL(double)

static void bn_eval_rows(void *arg, int64_t r0, int64_t r1) {
    const bn_job *j = arg;
    if (j->x->dtype == PF_FLOAT32) bn_eval_rows_float(j, r0, r1);
    else bn_eval_rows_double(j, r0, r1);
}

int pf_batch_norm_eval(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias,
                       const pf_tensor *running_mean, const pf_tensor *running_var, double eps, pf_tensor *y) {
    const char *fn = "batch_norm (eval)";
    char a[128];
    int rc = pf_check(x, "batch_norm (eval): input");
    if (rc) return rc;
    if (x->ndim != 3) return pf_error(PF_ERR_VALUE, "%s: input must be 3-d [N, C, L], got %s", fn, pf_shape_str(x, a));
    if (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: only float32 and float64 are supported, got %s", fn,
                        pf_dtype_name[x->dtype]);
    bgeom g = {.N = x->shape[0], .C = x->shape[1], .L = x->shape[2], .xs0 = x->strides[0], .xs1 = x->strides[1],
               .xs2 = x->strides[2]};
    int dt = x->dtype;
    if (!running_mean || !running_var)
        return pf_error(PF_ERR_VALUE, "%s: running_mean and running_var must be given", fn);
    if ((weight && (rc = check_vec(fn, "weight", weight, dt, g.C))) ||
        (bias && (rc = check_vec(fn, "bias", bias, dt, g.C))) ||
        (rc = check_vec(fn, "running_mean", running_mean, dt, g.C)) ||
        (rc = check_vec(fn, "running_var", running_var, dt, g.C)) || (rc = check_x(fn, "output", y, x, 1)))
        return rc;
    if (!(eps >= 0)) return pf_error(PF_ERR_VALUE, "%s: eps must be >= 0, got %g", fn, eps);
    bn_job j = {.g = &g, .x = x, .weight = weight, .bias = bias, .running_mean = running_mean,
                .running_var = running_var, .y = y, .eps = eps};
    pf_parallel_range(pf_threads_for(g.N * g.C * g.L), g.N * g.C, bn_eval_rows, &j);
    return PF_OK;
}
