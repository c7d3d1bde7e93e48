/* embedding_bag: each bag's rows of the embedding table reduced by sum (optionally weighted per
 * index), mean or max, without building the [n, D] gather; and the gradient to the table.
 *
 * Forward splits over bags (each writes its own output row). Backward adds each index's
 * gradient row into the table's gradient: two indices may name the same row, so it splits
 * over column blocks instead (each thread owns its columns of every row); the order of the
 * additions into a row is the indices' order, whatever the thread count. */
#include <stdio.h>
#include "core.h"

enum { BAG_SUM, BAG_MEAN, BAG_MAX };

typedef struct {
    const pf_tensor *w, *idx, *off, *psw, *gy;
    pf_tensor *out, *maxi, *gw;
    int mode;
    int64_t pad, B, D, n;
} bag_job;

static inline int64_t bag_start(const bag_job *j, int64_t b) { return ((const int64_t *)j->off->data)[b]; }
static inline int64_t bag_end(const bag_job *j, int64_t b) {
    return b + 1 < j->off->shape[0] ? ((const int64_t *)j->off->data)[b + 1] : j->n;
}

#define DEFINE_BAG(T)                                                                                             \
    static void bag_forward_##T(void *arg, int64_t b0, int64_t b1) {                                              \
        const bag_job *j = arg;                                                                                   \
        const int64_t *idx = j->idx->data, ws0 = j->w->strides[0], ws1 = j->w->strides[1];                        \
        const T *psw = j->psw ? j->psw->data : NULL;                                                              \
        for (int64_t b = b0; b < b1; b++) {                                                                       \
            T *y = (T *)j->out->data + b * j->D;                                                                  \
            int64_t *mi = j->maxi ? (int64_t *)j->maxi->data + b * j->D : NULL, count = 0;                        \
            for (int64_t d = 0; d < j->D; d++) y[d] = 0;                                                          \
            if (mi)                                                                                               \
                for (int64_t d = 0; d < j->D; d++) mi[d] = -1;                                                    \
            for (int64_t i = bag_start(j, b); i < bag_end(j, b); i++) {                                           \
                if (idx[i] == j->pad) continue;                                                                   \
                const T *row = (const T *)j->w->data + idx[i] * ws0;                                              \
                if (j->mode == BAG_MAX) {                                                                         \
                    for (int64_t d = 0; d < j->D; d++) {                                                          \
                        T v = row[d * ws1];                                                                       \
                        if (count == 0 || v > y[d]) y[d] = v, mi[d] = idx[i];                                     \
                    }                                                                                             \
                } else {                                                                                          \
                    T s = psw ? psw[i * j->psw->strides[0]] : (T)1;                                               \
                    if (psw)                                                                                      \
                        for (int64_t d = 0; d < j->D; d++) y[d] += row[d * ws1] * s;                              \
                    else                                                                                          \
                        for (int64_t d = 0; d < j->D; d++) y[d] += row[d * ws1];                                  \
                }                                                                                                 \
                count++;                                                                                          \
            }                                                                                                     \
            if (j->mode == BAG_MEAN && count > 0)                                                                 \
                for (int64_t d = 0; d < j->D; d++) y[d] /= (T)count;                                              \
        }                                                                                                         \
    }                                                                                                             \
    /* columns c0..c1 of the table's gradient (contiguous, zeroed here) */                                        \
    static void bag_backward_##T(void *arg, int64_t c0, int64_t c1) {                                             \
        const bag_job *j = arg;                                                                                   \
        const int64_t *idx = j->idx->data, gs0 = j->gy->strides[0], gs1 = j->gy->strides[1];                      \
        const T *psw = j->psw ? j->psw->data : NULL;                                                              \
        T *gw = j->gw->data;                                                                                      \
        for (int64_t r = 0; r < j->gw->shape[0]; r++)                                                             \
            for (int64_t d = c0; d < c1; d++) gw[r * j->D + d] = 0;                                               \
        for (int64_t b = 0; b < j->B; b++) {                                                                      \
            const T *g = (const T *)j->gy->data + b * gs0;                                                        \
            if (j->mode == BAG_MAX) {                                                                             \
                const int64_t *mi = (const int64_t *)j->maxi->data + b * j->D;                                    \
                for (int64_t d = c0; d < c1; d++)                                                                 \
                    if (mi[d] >= 0) gw[mi[d] * j->D + d] += g[d * gs1];                                           \
                continue;                                                                                         \
            }                                                                                                     \
            int64_t count = 0;                                                                                    \
            if (j->mode == BAG_MEAN)                                                                              \
                for (int64_t i = bag_start(j, b); i < bag_end(j, b); i++) count += idx[i] != j->pad;              \
            for (int64_t i = bag_start(j, b); i < bag_end(j, b); i++) {                                           \
                if (idx[i] == j->pad) continue;                                                                   \
                T *row = gw + idx[i] * j->D;                                                                      \
                if (j->mode == BAG_MEAN)                                                                          \
                    for (int64_t d = c0; d < c1; d++) row[d] += g[d * gs1] / (T)count;                            \
                else if (psw) {                                                                                   \
                    T s = psw[i * j->psw->strides[0]];                                                            \
                    for (int64_t d = c0; d < c1; d++) row[d] += g[d * gs1] * s;                                   \
                } else                                                                                            \
                    for (int64_t d = c0; d < c1; d++) row[d] += g[d * gs1];                                       \
            }                                                                                                     \
        }                                                                                                         \
    }
DEFINE_BAG(float)
DEFINE_BAG(double)

/* Checks the table, indices, offsets and per-sample weights; fills j (B, D, n). */
static int bag_setup(const char *fn, const pf_tensor *w, const pf_tensor *idx, const pf_tensor *off,
                     const pf_tensor *psw, int mode, int64_t pad, bag_job *j) {
    char a[128];
    int rc;
    if ((rc = pf_check(w, fn)) || (rc = pf_check(idx, fn)) || (rc = pf_check(off, fn)) || (psw && (rc = pf_check(psw, fn))))
        return rc;
    if (w->ndim != 2 || (w->dtype != PF_FLOAT32 && w->dtype != PF_FLOAT64))
        return pf_error(PF_ERR_VALUE, "%s: weight must be a 2-d float32 or float64 table, got %s of shape %s", fn,
                        pf_dtype_name[w->dtype], pf_shape_str(w, a));
    if (idx->ndim != 1 || off->ndim != 1 || idx->dtype != PF_INT64 || off->dtype != PF_INT64 ||
        !pf_is_contiguous(idx) || !pf_is_contiguous(off))
        return pf_error(PF_ERR_VALUE, "%s: indices and offsets must be contiguous 1-d int64", fn);
    if (mode < BAG_SUM || mode > BAG_MAX) return pf_error(PF_ERR_VALUE, "%s: unknown mode %d", fn, mode);
    if (psw && (mode != BAG_SUM || psw->ndim != 1 || psw->shape[0] != idx->shape[0] || psw->dtype != w->dtype))
        return pf_error(PF_ERR_VALUE, "%s: per_sample_weights must be 1-d of the indices' length and the weight's "
                        "dtype, and only with mode 'sum'", fn);
    *j = (bag_job){.w = w, .idx = idx, .off = off, .psw = psw, .mode = mode, .pad = pad, .B = off->shape[0],
                   .D = w->shape[1], .n = idx->shape[0]};
    const int64_t *o = off->data, *ix = idx->data;
    for (int64_t b = 0; b < j->B; b++)
        if (o[b] < 0 || o[b] > j->n || (b > 0 && o[b] < o[b - 1]) || (b == 0 && o[0] != 0))
            return pf_error(PF_ERR_VALUE, "%s: offsets must start at 0 and not decrease up to the number of indices "
                            "%lld; offset %lld is %lld", fn, (long long)j->n, (long long)b, (long long)o[b]);
    for (int64_t i = 0; i < j->n; i++)
        if (ix[i] < 0 || ix[i] >= w->shape[0])
            return pf_error(PF_ERR_INDEX, "%s: index %lld is out of range for a table of %lld rows", fn,
                            (long long)ix[i], (long long)w->shape[0]);
    return PF_OK;
}

int pf_embedding_bag(const pf_tensor *weight, const pf_tensor *indices, const pf_tensor *offsets,
                     const pf_tensor *per_sample_weights, int mode, int64_t padding_idx, pf_tensor *out,
                     pf_tensor *max_indices) {
    bag_job j;
    char a[128];
    int rc = bag_setup("embedding_bag", weight, indices, offsets, per_sample_weights, mode, padding_idx, &j);
    if (rc || (rc = pf_check(out, "embedding_bag: out"))) return rc;
    if (out->ndim != 2 || out->shape[0] != j.B || out->shape[1] != j.D || out->dtype != weight->dtype ||
        !pf_is_contiguous(out))
        return pf_error(PF_ERR_VALUE, "embedding_bag: out %s must be contiguous [%lld, %lld] of the weight's dtype",
                        pf_shape_str(out, a), (long long)j.B, (long long)j.D);
    if (mode == BAG_MAX) {
        if (!max_indices || max_indices->ndim != 2 || max_indices->dtype != PF_INT64 || !pf_is_contiguous(max_indices) ||
            max_indices->shape[0] != j.B || max_indices->shape[1] != j.D)
            return pf_error(PF_ERR_VALUE, "embedding_bag: mode 'max' needs contiguous int64 max_indices [%lld, %lld]",
                            (long long)j.B, (long long)j.D);
        j.maxi = max_indices;
    }
    j.out = out;
    pf_parallel_range(pf_threads_for((j.n + j.B) * j.D), j.B, weight->dtype == PF_FLOAT32 ? bag_forward_float
                                                                                           : bag_forward_double, &j);
    return PF_OK;
}

int pf_embedding_bag_backward(const pf_tensor *grad_out, const pf_tensor *indices, const pf_tensor *offsets,
                              const pf_tensor *per_sample_weights, const pf_tensor *max_indices, int mode,
                              int64_t padding_idx, pf_tensor *grad_weight) {
    bag_job j;
    char a[128];
    int rc = bag_setup("embedding_bag_backward", grad_weight, indices, offsets, per_sample_weights, mode, padding_idx,
                       &j);
    if (rc || (rc = pf_check(grad_out, "embedding_bag_backward: grad_out"))) return rc;
    if (!pf_is_contiguous(grad_weight))
        return pf_error(PF_ERR_VALUE, "embedding_bag_backward: grad_weight must be contiguous");
    if (grad_out->ndim != 2 || grad_out->shape[0] != j.B || grad_out->shape[1] != j.D ||
        grad_out->dtype != grad_weight->dtype)
        return pf_error(PF_ERR_VALUE, "embedding_bag_backward: grad_out %s must be [%lld, %lld] of grad_weight's dtype",
                        pf_shape_str(grad_out, a), (long long)j.B, (long long)j.D);
    if (mode == BAG_MAX) {
        if (!max_indices || max_indices->ndim != 2 || max_indices->dtype != PF_INT64 || !pf_is_contiguous(max_indices) ||
            max_indices->shape[0] != j.B || max_indices->shape[1] != j.D)
            return pf_error(PF_ERR_VALUE, "embedding_bag_backward: mode 'max' needs the forward's max_indices");
        const int64_t *mi = max_indices->data;
        for (int64_t k = 0; k < j.B * j.D; k++)
            if (mi[k] < -1 || mi[k] >= grad_weight->shape[0])
                return pf_error(PF_ERR_INDEX, "embedding_bag_backward: max index %lld is out of range", (long long)mi[k]);
        j.maxi = (pf_tensor *)max_indices;
    }
    j.gy = grad_out, j.gw = grad_weight;
    pf_parallel_range(pf_threads_for((j.n + grad_weight->shape[0]) * j.D), j.D,
                      grad_weight->dtype == PF_FLOAT32 ? bag_backward_float : bag_backward_double, &j);
    return PF_OK;
}

/* One pass over the indices for the range, then index_select's row copy: embedding's three reductions (min, max, and
 * index_select's own check for negatives) and their tensors cost 7x torch's lookup at generation's sizes. */
int pf_embedding_rows(int dtype, const void *weight, int64_t rows, int64_t width, const void *idx, int64_t L,
                      void *out) {
    const int64_t *ix = idx;
    if (L < 0 || (L && !ix)) return pf_error(PF_ERR_VALUE, "embedding: bad index array (%lld indices)", (long long)L);
    for (int64_t j = 0; j < L; j++)
        if (ix[j] < 0 || ix[j] >= rows)
            return pf_error(PF_ERR_INDEX, "embedding: index %lld is out of range for a table of %lld rows",
                            (long long)ix[j], (long long)rows);
    return pf_index_select_rows(dtype, weight, rows, width, idx, L, out);
}
