/* Sorting and selection along one dim: sort (a stable LSD radix sort on order-preserving keys;
 * merge sort for short rows), topk (a bounded heap when k is small, else a full sort), both
 * NaN-aware as torch: NaN is larger than every number.
 *
 * x is contiguous, viewed as [outer, n, inner] around the dim; values/indices are contiguous
 * [outer, k, inner]. A row (o, i) is gathered into (key, index) pairs, ordered, and scattered
 * back, so one kernel serves every dim without a transposing copy. Keys are double for every
 * dtype but int64, whose keys stay int64 (doubles would merge values above 2^53). */
#include <stdlib.h>
#include "core.h"

typedef struct {
    double k;
    int64_t i;
} pair_d;
typedef struct {
    int64_t k;
    int64_t i;
} pair_i;

/* "a comes before b": ascending puts NaN last, descending puts it first */
#define ASC_D(a, b) ((a).k < (b).k || ((b).k != (b).k && (a).k == (a).k))
#define DESC_D(a, b) ((a).k > (b).k || ((a).k != (a).k && (b).k == (b).k))
#define ASC_I(a, b) ((a).k < (b).k)
#define DESC_I(a, b) ((a).k > (b).k)
/* the same with ties broken by the lower index: a total order, for the heap path's final sort */
#define ASC_DT(a, b) (ASC_D(a, b) || (!ASC_D(b, a) && (a).i < (b).i))
#define DESC_DT(a, b) (DESC_D(a, b) || (!DESC_D(b, a) && (a).i < (b).i))
#define ASC_IT(a, b) ((a).k < (b).k || ((a).k == (b).k && (a).i < (b).i))
#define DESC_IT(a, b) ((a).k > (b).k || ((a).k == (b).k && (a).i < (b).i))

/* Stable bottom-up merge sort: insertion-sorted runs of 16, then merges that take the left
 * element unless the right one strictly comes before it. */
#define DEFINE_MSORT(NAME, T, BEFORE)                                                    \
    static void NAME(T *a, T *tmp, int64_t n) {                                          \
        for (int64_t s = 0; s < n; s += 16) {                                            \
            int64_t e = s + 16 < n ? s + 16 : n;                                         \
            for (int64_t i = s + 1; i < e; i++) {                                        \
                T v = a[i];                                                              \
                int64_t j = i;                                                           \
                while (j > s && BEFORE(v, a[j - 1])) {                                   \
                    a[j] = a[j - 1];                                                     \
                    j--;                                                                 \
                }                                                                        \
                a[j] = v;                                                                \
            }                                                                            \
        }                                                                                \
        T *src = a, *dst = tmp;                                                          \
        for (int64_t w = 16; w < n; w *= 2) {                                            \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                  \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
                int64_t i = lo, j = mid, k = lo;                                         \
                while (i < mid && j < hi) dst[k++] = BEFORE(src[j], src[i]) ? src[j++] : src[i++]; \
                while (i < mid) dst[k++] = src[i++];                                     \
                while (j < hi) dst[k++] = src[j++];                                      \
            }                                                                            \
            T *t = src;                                                                  \
            src = dst;                                                                   \
            dst = t;                                                                     \
        }                                                                                \
        if (src != a) memcpy(a, src, (size_t)n * sizeof(T));                             \
    }

DEFINE_MSORT(msort_asc_d, pair_d, ASC_D)
DEFINE_MSORT(msort_desc_d, pair_d, DESC_D)
DEFINE_MSORT(msort_asc_i, pair_i, ASC_I)
DEFINE_MSORT(msort_desc_i, pair_i, DESC_I)
DEFINE_MSORT(msort_asc_dt, pair_d, ASC_DT)
DEFINE_MSORT(msort_desc_dt, pair_d, DESC_DT)
DEFINE_MSORT(msort_asc_it, pair_i, ASC_IT)
DEFINE_MSORT(msort_desc_it, pair_i, DESC_IT)

/* Keeps the k best of a stream in h[0..k): h[0] is the worst kept (a heap on "comes after").
 * BETTER(a, b): a should be kept over b. Ties keep the earlier element. */
#define DEFINE_HEAP(NAME, T, BETTER)                                               \
    static void NAME(T *h, int64_t k, int64_t pos) {                               \
        T v = h[pos];                                                              \
        for (;;) {                                                                 \
            int64_t c = 2 * pos + 1;                                               \
            if (c >= k) break;                                                     \
            if (c + 1 < k && BETTER(h[c], h[c + 1])) c++;                          \
            if (!BETTER(v, h[c])) break;                                           \
            h[pos] = h[c];                                                         \
            pos = c;                                                               \
        }                                                                          \
        h[pos] = v;                                                                \
    }
/* sift down in a heap whose root is the worst: a child that is worse than v moves up */
DEFINE_HEAP(sift_desc_d, pair_d, DESC_DT)
DEFINE_HEAP(sift_asc_d, pair_d, ASC_DT)
DEFINE_HEAP(sift_desc_i, pair_i, DESC_IT)
DEFINE_HEAP(sift_asc_i, pair_i, ASC_IT)

/* ---- radix sort ---- */

/* Unsigned keys whose order is the values' order: a float's bits with the sign bit set for
 * positives and every bit flipped for negatives. -0 keys as +0 (they compare equal, so a stable
 * sort keeps them in index order) and every NaN as the largest key. Descending sorts flip the
 * keys, which keeps equal keys in index order: the same stable order as the merge sort's. */
static inline uint32_t key_f32(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if (v != v) return 0xFFFFFFFFu;
    if (v == 0) return 0x80000000u;
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}
static inline uint64_t key_f64(double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    if (v != v) return ~(uint64_t)0;
    if (v == 0) return (uint64_t)1 << 63;
    return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

/* Rows at least this long sort by radix: below it the merge sort's insertion-sorted runs are as
 * fast as four passes over a 256-bucket histogram. */
#define RADIX_MIN 256

/* Stable LSD radix sort of keys k[0..n) with 8-bit digits, carrying 32-bit indices: one pass reads
 * every digit's histogram, then a counting scatter per digit that is not the same in every key.
 * The indices start as 0..n-1 at the first scatter. kb and ib are scratch of n entries each.
 * Returns the index array that holds the order (ia or ib). */
#define DEFINE_RADIX(NAME, KT)                                                           \
    static uint32_t *NAME(KT *ka, uint32_t *ia, KT *kb, uint32_t *ib, int64_t n) {      \
        enum { D = sizeof(KT) };                                                         \
        uint32_t hist[D][256];                                                           \
        memset(hist, 0, sizeof hist);                                                    \
        for (int64_t i = 0; i < n; i++)                                                  \
            for (int d = 0; d < D; d++) hist[d][(ka[i] >> (8 * d)) & 255]++;             \
        int have_idx = 0;                                                                \
        for (int d = 0; d < D; d++) {                                                    \
            uint32_t *h = hist[d];                                                       \
            if (h[(ka[0] >> (8 * d)) & 255] == (uint64_t)n) continue; /* one digit for all */ \
            uint32_t sum = 0;                                                            \
            for (int b = 0; b < 256; b++) {                                              \
                uint32_t c = h[b];                                                       \
                h[b] = sum;                                                              \
                sum += c;                                                                \
            }                                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                uint32_t at = h[(ka[i] >> (8 * d)) & 255]++;                             \
                kb[at] = ka[i];                                                          \
                ib[at] = have_idx ? ia[i] : (uint32_t)i;                                 \
            }                                                                            \
            have_idx = 1;                                                                \
            KT *kt = ka;                                                                 \
            ka = kb;                                                                     \
            kb = kt;                                                                     \
            uint32_t *it = ia;                                                           \
            ia = ib;                                                                     \
            ib = it;                                                                     \
        }                                                                                \
        if (!have_idx)                                                                   \
            for (int64_t i = 0; i < n; i++) ia[i] = (uint32_t)i;                         \
        return ia;                                                                       \
    }
DEFINE_RADIX(radix_u32, uint32_t)
DEFINE_RADIX(radix_u64, uint64_t)

/* Sorts row (o, i) by radix into the first k places of values and indices. buf and tmp hold
 * 16 bytes per element each: a key array and an index array apiece. */
static void radix_row(const char *src, char *vout, int64_t *iout, int64_t n, int64_t inner, int64_t k, int dt,
                      int descending, void *buf, void *tmp) {
    size_t isz = pf_dtype_size[dt];
    uint32_t *order;
    if (dt == PF_FLOAT64 || dt == PF_INT64) {
        uint64_t *ka = buf, *kb = tmp, flip = descending ? ~(uint64_t)0 : 0;
        uint32_t *ia = (uint32_t *)(ka + n), *ib = (uint32_t *)(kb + n);
        if (dt == PF_INT64)
            for (int64_t j = 0; j < n; j++) {
                int64_t v;
                memcpy(&v, src + (size_t)(j * inner) * 8, 8);
                ka[j] = ((uint64_t)v ^ (uint64_t)1 << 63) ^ flip;
            }
        else
            for (int64_t j = 0; j < n; j++) {
                double v;
                memcpy(&v, src + (size_t)(j * inner) * 8, 8);
                ka[j] = key_f64(v) ^ flip;
            }
        order = radix_u64(ka, ia, kb, ib, n);
    } else {
        uint32_t *ka = buf, *kb = tmp, flip = descending ? 0xFFFFFFFFu : 0;
        uint32_t *ia = ka + n, *ib = kb + n;
        if (dt == PF_FLOAT32 && inner == 1) {
            const float *xs = (const float *)src;
            for (int64_t j = 0; j < n; j++) ka[j] = key_f32(xs[j]) ^ flip;
        } else if (pf_is_float(dt)) { /* float32 strided, float16 and bfloat16 (exact as float32) */
            for (int64_t j = 0; j < n; j++) ka[j] = key_f32((float)pf_load_f64(src + (size_t)(j * inner) * isz, dt)) ^ flip;
        } else { /* int32 and narrower, bool */
            for (int64_t j = 0; j < n; j++)
                ka[j] = ((uint32_t)pf_load_i64(src + (size_t)(j * inner) * isz, dt) ^ 0x80000000u) ^ flip;
        }
        order = radix_u32(ka, ia, kb, ib, n);
    }
    if (dt == PF_FLOAT32 && inner == 1) {
        const float *xs = (const float *)src;
        float *vs = (float *)vout;
        for (int64_t j = 0; j < k; j++) {
            vs[j] = xs[order[j]];
            iout[j] = order[j];
        }
        return;
    }
    for (int64_t j = 0; j < k; j++) {
        memcpy(vout + (size_t)(j * inner) * isz, src + (size_t)((int64_t)order[j] * inner) * isz, isz);
        iout[j * inner] = order[j];
    }
}

static int check_layout(const pf_tensor *x, int dim, const pf_tensor *values, const pf_tensor *indices,
                        int64_t k, const char *op) {
    int rc;
    if ((rc = pf_check(x, "x")) || (rc = pf_check(values, "values")) || (rc = pf_check(indices, "indices")))
        return rc;
    if (dim < 0 || dim >= (x->ndim ? x->ndim : 1))
        return pf_error(PF_ERR_INDEX, "%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
    if (indices->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "%s: indices must be int64, got %s", op, pf_dtype_name[indices->dtype]);
    if (values->dtype != x->dtype)
        return pf_error(PF_ERR_TYPE, "%s: values dtype %s differs from x's %s", op, pf_dtype_name[values->dtype],
                        pf_dtype_name[x->dtype]);
    int64_t n = x->ndim ? x->shape[dim] : 1;
    if (k < 0 || k > n)
        return pf_error(PF_ERR_VALUE, "%s: k = %lld is out of range for a dim of size %lld (0 <= k <= %lld)", op,
                        (long long)k, (long long)n, (long long)n);
    /* every operand contiguous, values and indices of x's shape with k at dim */
    const pf_tensor *ops[3] = {x, values, indices};
    for (int t = 0; t < 3; t++) {
        if (ops[t]->ndim != x->ndim)
            return pf_error(PF_ERR_VALUE, "%s: operand %d has %d dims, x has %d", op, t, ops[t]->ndim, x->ndim);
        int64_t expect = 1;
        for (int d = x->ndim - 1; d >= 0; d--) {
            int64_t size = d == dim && t ? k : x->shape[d];
            if (ops[t]->shape[d] != size) {
                char a[128], b[128];
                return pf_error(PF_ERR_VALUE, "%s: output shape %s does not fit x's %s with k = %lld at dim %d", op,
                                pf_shape_str(ops[t], a), pf_shape_str(x, b), (long long)k, dim);
            }
            if (size > 1 && ops[t]->strides[d] != expect)
                return pf_error(PF_ERR_VALUE, "%s: operand %d must be contiguous", op, t);
            expect *= size > 1 ? size : 1;
        }
    }
    return PF_OK;
}

static void geometry(const pf_tensor *x, int dim, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    *n = x->ndim ? x->shape[dim] : 1;
    for (int d = 0; d < dim; d++) *outer *= x->shape[d];
    for (int d = dim + 1; d < x->ndim; d++) *inner *= x->shape[d];
}

/* v offered to the heap p of the k best kept: it replaces the worst kept when it comes before it */
static inline void offer_d(pair_d *p, int64_t k, pair_d v, int largest) {
    if (largest ? DESC_DT(v, p[0]) : ASC_DT(v, p[0])) {
        p[0] = v;
        (largest ? sift_desc_d : sift_asc_d)(p, k, 0);
    }
}

/* The heap pass of topk over a contiguous float32 row, elements k..n-1 into the heap p of k. Once
 * the heap holds good elements almost none of the rest enters it, so each block of 64 is first
 * tested against the heap's worst value in one branch-free loop that vectorises, and only a block
 * with a candidate goes through the exact comparisons. A NaN lane is always a candidate when
 * keeping the largest (NaN is the largest value), and every lane is one while the worst kept is NaN
 * when keeping the smallest. */
static void heap_scan_f32(const float *xs, int64_t k, int64_t n, int largest, pair_d *p) {
    for (int64_t b = k; b < n; b += 64) {
        int64_t e = b + 64 < n ? b + 64 : n;
        float worst = (float)p[0].k;
        int any = 0;
        if (largest)
            for (int64_t j = b; j < e; j++) any |= (xs[j] > worst) | (xs[j] != xs[j]);
        else
            for (int64_t j = b; j < e; j++) any |= (xs[j] < worst) | (worst != worst);
        if (!any) continue;
        for (int64_t j = b; j < e; j++) offer_d(p, k, (pair_d){xs[j], j}, largest);
    }
}

/* Gathers row (o, i) into pairs, orders the best k first, and writes them out. */
static void do_row(const pf_tensor *x, pf_tensor *values, pf_tensor *indices, int64_t o, int64_t i, int64_t n,
                   int64_t inner, int64_t k, int largest, void *buf, void *tmp) {
    size_t isz = pf_dtype_size[x->dtype];
    const char *src = (const char *)x->data + (size_t)(o * n * inner + i) * isz;
    char *vout = (char *)values->data + (size_t)(o * k * inner + i) * isz;
    int64_t *iout = (int64_t *)indices->data + o * k * inner + i;
    int use_heap = k < n && k * 8 <= n; /* a bounded heap beats a full sort when k is small */
    int64_t m = use_heap ? k : n;
    if (!use_heap && n >= RADIX_MIN && n <= (int64_t)UINT32_MAX) {
        radix_row(src, vout, iout, n, inner, k, x->dtype, largest, buf, tmp);
        return;
    }
    if (x->dtype == PF_INT64) {
        pair_i *p = buf;
        const int64_t *xs = (const int64_t *)src;
        if (use_heap) {
            for (int64_t j = 0; j < k; j++) p[j] = (pair_i){xs[j * inner], j};
            for (int64_t j = k / 2 - 1; j >= 0; j--) (largest ? sift_desc_i : sift_asc_i)(p, k, j);
            for (int64_t j = k; j < n; j++) {
                pair_i v = {xs[j * inner], j};
                if (largest ? DESC_IT(v, p[0]) : ASC_IT(v, p[0])) {
                    p[0] = v;
                    (largest ? sift_desc_i : sift_asc_i)(p, k, 0);
                }
            }
            (largest ? msort_desc_it : msort_asc_it)(p, tmp, k);
        } else {
            for (int64_t j = 0; j < n; j++) p[j] = (pair_i){xs[j * inner], j};
            (largest ? msort_desc_i : msort_asc_i)(p, tmp, n);
        }
        for (int64_t j = 0; j < k && j < m; j++) {
            memcpy(vout + (size_t)(j * inner) * isz, src + (size_t)(p[j].i * inner) * isz, isz);
            iout[j * inner] = p[j].i;
        }
        return;
    }
    pair_d *p = buf;
    int dt = x->dtype;
#define LOAD(j) pf_load_f64(src + (size_t)((j) * inner) * isz, dt)
    if (use_heap) {
        for (int64_t j = 0; j < k; j++) p[j] = (pair_d){LOAD(j), j};
        for (int64_t j = k / 2 - 1; j >= 0; j--) (largest ? sift_desc_d : sift_asc_d)(p, k, j);
        if (dt == PF_FLOAT32 && inner == 1)
            heap_scan_f32((const float *)src, k, n, largest, p);
        else
            for (int64_t j = k; j < n; j++) offer_d(p, k, (pair_d){LOAD(j), j}, largest);
        (largest ? msort_desc_dt : msort_asc_dt)(p, tmp, k);
    } else {
        if (dt == PF_FLOAT32 && inner == 1) {
            const float *xs = (const float *)src;
            for (int64_t j = 0; j < n; j++) p[j] = (pair_d){xs[j], j};
        } else if (dt == PF_FLOAT64 && inner == 1) {
            const double *xs = (const double *)src;
            for (int64_t j = 0; j < n; j++) p[j] = (pair_d){xs[j], j};
        } else {
            for (int64_t j = 0; j < n; j++) p[j] = (pair_d){LOAD(j), j};
        }
        (largest ? msort_desc_d : msort_asc_d)(p, tmp, n);
    }
#undef LOAD
    for (int64_t j = 0; j < k; j++) {
        memcpy(vout + (size_t)(j * inner) * isz, src + (size_t)(p[j].i * inner) * isz, isz);
        iout[j * inner] = p[j].i;
    }
}

typedef struct {
    const pf_tensor *x;
    pf_tensor *values, *indices;
    int64_t n, inner, k;
    int largest, failed;
} topk_job;

/* rows [r0, r1) of [outer, inner], with scratch of their own */
static void topk_rows(void *arg, int64_t r0, int64_t r1) {
    topk_job *j = arg;
    int64_t n = j->n, inner = j->inner;
    /* pair_i and pair_d are both 16 bytes: one buffer serves either */
    void *buf = malloc((size_t)n * sizeof(pair_d)), *tmp = malloc((size_t)n * sizeof(pair_d));
    if (!buf || !tmp) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    else
        for (int64_t r = r0; r < r1; r++)
            do_row(j->x, j->values, j->indices, r / inner, r % inner, n, inner, j->k, j->largest, buf, tmp);
    free(buf);
    free(tmp);
}

int pf_topk(const pf_tensor *x, int dim, int64_t k, int largest, pf_tensor *values, pf_tensor *indices) {
    int rc = check_layout(x, dim, values, indices, k, "topk");
    if (rc) return rc;
    int64_t outer, n, inner;
    geometry(x, dim, &outer, &n, &inner);
    int64_t rows = outer * inner;
    if (rows == 0 || k == 0) return PF_OK;
    topk_job job = {x, values, indices, n, inner, k, largest, 0};
    pf_parallel_range(pf_threads_for(rows * n), rows, topk_rows, &job);
    if (job.failed)
        return pf_error(PF_ERR_NOMEM, "topk/sort: cannot allocate %lld bytes of scratch", (long long)(32 * n));
    return PF_OK;
}

int pf_sort(const pf_tensor *x, int dim, int descending, pf_tensor *values, pf_tensor *indices) {
    int64_t n = x && x->ndim && dim >= 0 && dim < x->ndim ? x->shape[dim] : 1;
    return pf_topk(x, dim, n, descending, values, indices);
}

/* ---- mode ---- */

typedef struct {
    const pf_tensor *x;
    pf_tensor *values, *indices;
    int64_t n;
    int failed;
} mode_job;

/* the most frequent value of each row; among equally frequent ones the smallest, and of its occurrences the
 * last index (torch's). NaNs count as one value, larger than every number. */
static void mode_rows(void *arg, int64_t r0, int64_t r1) {
    mode_job *j = arg;
    int64_t n = j->n;
    int dt = j->x->dtype;
    size_t es = pf_dtype_size[dt];
    void *buf = malloc((size_t)n * sizeof(pair_d)), *tmp = malloc((size_t)n * sizeof(pair_d));
    if (!buf || !tmp) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        r1 = r0;
    }
    for (int64_t r = r0; r < r1; r++) {
        const char *src = (const char *)j->x->data + (size_t)(r * n) * es;
        int64_t best = 0, best_count = 0, s = 0;
        if (dt == PF_INT64 || dt == PF_INT32 || dt == PF_BOOL) {
            pair_i *p = buf;
            for (int64_t k = 0; k < n; k++) p[k] = (pair_i){pf_load_i64(src + (size_t)k * es, dt), k};
            msort_asc_i(p, tmp, n);
            for (int64_t e = 1; e <= n; e++) {
                if (e < n && p[e].k == p[s].k) continue;
                int64_t last = p[s].i;
                for (int64_t q = s + 1; q < e; q++) last = p[q].i > last ? p[q].i : last;
                if (e - s > best_count) best_count = e - s, best = last;
                s = e;
            }
        } else {
            pair_d *p = buf;
            for (int64_t k = 0; k < n; k++) p[k] = (pair_d){pf_load_f64(src + (size_t)k * es, dt), k};
            msort_asc_d(p, tmp, n);
            for (int64_t e = 1; e <= n; e++) {
                if (e < n && (p[e].k == p[s].k || (p[e].k != p[e].k && p[s].k != p[s].k))) continue;
                int64_t last = p[s].i;
                for (int64_t q = s + 1; q < e; q++) last = p[q].i > last ? p[q].i : last;
                if (e - s > best_count) best_count = e - s, best = last;
                s = e;
            }
        }
        memcpy((char *)j->values->data + (size_t)r * es, src + (size_t)best * es, es);
        ((int64_t *)j->indices->data)[r] = best;
    }
    free(buf);
    free(tmp);
}

int pf_mode(const pf_tensor *x, pf_tensor *values, pf_tensor *indices) {
    int rc;
    if ((rc = pf_check(x, "x")) || (rc = pf_check(values, "values")) || (rc = pf_check(indices, "indices")))
        return rc;
    if (x->ndim != 2 || values->ndim != 1 || indices->ndim != 1 || values->shape[0] != x->shape[0] ||
        indices->shape[0] != x->shape[0]) {
        char a[128], b[128];
        return pf_error(PF_ERR_VALUE, "mode: expected x [rows, n] with values and indices [rows], got x %s and "
                        "values %s", pf_shape_str(x, a), pf_shape_str(values, b));
    }
    if (values->dtype != x->dtype || indices->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "mode: values must be %s and indices int64, got %s and %s",
                        pf_dtype_name[x->dtype], pf_dtype_name[values->dtype], pf_dtype_name[indices->dtype]);
    if (!pf_is_contiguous(x) || !pf_is_contiguous(values) || !pf_is_contiguous(indices))
        return pf_error(PF_ERR_VALUE, "mode: x, values and indices must be contiguous");
    int64_t rows = x->shape[0], n = x->shape[1];
    if (n == 0 && rows) return pf_error(PF_ERR_INDEX, "mode: cannot compute the mode of an empty row");
    if (rows == 0) return PF_OK;
    mode_job job = {x, values, indices, n, 0};
    pf_parallel_range(pf_threads_for(rows * n), rows, mode_rows, &job);
    if (job.failed) return pf_error(PF_ERR_NOMEM, "mode: cannot allocate %lld bytes of scratch", (long long)(32 * n));
    return PF_OK;
}

/* ---- searchsorted ---- */

typedef struct {
    const pf_tensor *seq, *values;
    pf_tensor *out;
    int64_t n, m, shared;
    int right;
} search_job;


static void search_part(void *arg, int64_t b, int64_t e) {
    const search_job *j = arg;
    int dt = j->seq->dtype, floating = pf_is_float(dt);
    size_t es = pf_dtype_size[dt];
    int64_t n = j->n;
    for (int64_t p = b; p < e; p++) {
        const char *row = (const char *)j->seq->data + (size_t)((j->shared ? 0 : p / j->m) * n) * es;
        const char *vp = (const char *)j->values->data + (size_t)p * es;
        int64_t lo = 0, hi = n; /* the count of row elements before v (< v, or <= v when right) */
        if (floating) {
            double v = pf_load_f64(vp, dt);
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                double s = pf_load_f64(row + (size_t)mid * es, dt);
                int before = j->right ? !(s > v) : !(s >= v); /* torch's IEEE tests: a NaN value goes last */
                if (before) lo = mid + 1;
                else hi = mid;
            }
        } else {
            int64_t v = pf_load_i64(vp, dt);
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2, s = pf_load_i64(row + (size_t)mid * es, dt);
                if (j->right ? s <= v : s < v) lo = mid + 1;
                else hi = mid;
            }
        }
        if (j->out->dtype == PF_INT64) ((int64_t *)j->out->data)[p] = lo;
        else ((int32_t *)j->out->data)[p] = (int32_t)lo;
    }
}

int pf_searchsorted(const pf_tensor *seq, const pf_tensor *values, int right, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(seq, "sorted_sequence")) || (rc = pf_check(values, "values")) || (rc = pf_check(out, "out")))
        return rc;
    char a[128], b[128];
    if (seq->ndim != 2 || values->ndim != 2 || out->ndim != 2 || out->shape[0] != values->shape[0] ||
        out->shape[1] != values->shape[1] || (seq->shape[0] != 1 && seq->shape[0] != values->shape[0]))
        return pf_error(PF_ERR_VALUE, "searchsorted: expected sorted_sequence [B, N] (or [1, N]) and values and out "
                        "[B, M], got %s and %s", pf_shape_str(seq, a), pf_shape_str(values, b));
    if (seq->dtype != values->dtype)
        return pf_error(PF_ERR_TYPE, "searchsorted: sorted_sequence is %s but values is %s", pf_dtype_name[seq->dtype],
                        pf_dtype_name[values->dtype]);
    if (out->dtype != PF_INT64 && out->dtype != PF_INT32)
        return pf_error(PF_ERR_TYPE, "searchsorted: out must be int64 or int32, got %s", pf_dtype_name[out->dtype]);
    if (!pf_is_contiguous(seq) || !pf_is_contiguous(values) || !pf_is_contiguous(out))
        return pf_error(PF_ERR_VALUE, "searchsorted: every operand must be contiguous");
    int64_t total = values->shape[0] * values->shape[1], n = seq->shape[1];
    if (total == 0) return PF_OK;
    search_job job = {seq, values, out, n, values->shape[1], seq->shape[0] == 1 && values->shape[0] != 1, right != 0};
    int64_t log2n = 1;
    while ((1LL << log2n) < n) log2n++;
    pf_parallel_range(pf_threads_for(total * log2n), total, search_part, &job);
    return PF_OK;
}
