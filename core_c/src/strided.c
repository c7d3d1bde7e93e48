/* What every kernel family shares about descriptors: dtype sizes and names, validation,
 * broadcasting, and the strided walker that runs the general (non-contiguous) paths. */
#include "core.h"

/* Sized by their initializers, so a dtype code without its row makes a table short and its
 * count check fail. */
#define X_SIZE(code, type, sfx, isf) [code] = sizeof(type),
const size_t pf_dtype_size[] = {PF_DTYPE_LIST(X_SIZE)};
_Static_assert(sizeof pf_dtype_size / sizeof pf_dtype_size[0] == PF_NUM_DTYPES, "dtype list and PF_NUM_DTYPES differ");
const char *const pf_dtype_name[] = {[PF_FLOAT32] = "float32", [PF_FLOAT64] = "float64", [PF_FLOAT16] = "float16",
                                     [PF_INT64] = "int64",     [PF_INT32] = "int32",     [PF_BOOL] = "bool",
                                     [PF_UINT8] = "uint8",     [PF_INT8] = "int8",       [PF_INT16] = "int16",
                                     [PF_BFLOAT16] = "bfloat16"};
_Static_assert(sizeof pf_dtype_name / sizeof pf_dtype_name[0] == PF_NUM_DTYPES, "a dtype without its name");

/* ---- validation ---- */

int64_t pf_numel(const pf_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

int pf_check(const pf_tensor *t, const char *what) {
    if (!t) return pf_error(PF_ERR_VALUE, "%s: missing tensor (NULL descriptor)", what);
    if (t->ndim < 0 || t->ndim > PF_MAX_DIMS)
        return pf_error(PF_ERR_VALUE, "%s: %d dims; at most %d are supported", what, t->ndim, PF_MAX_DIMS);
    if (t->dtype < 0 || t->dtype >= PF_NUM_DTYPES)
        return pf_error(PF_ERR_TYPE, "%s: unknown dtype code %d", what, t->dtype);
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) {
            char b[128];
            return pf_error(PF_ERR_VALUE, "%s: negative size in shape %s", what, pf_shape_str(t, b));
        }
        if (t->shape[i] && n > INT64_MAX / t->shape[i])
            return pf_error(PF_ERR_VALUE, "%s: shape overflows 64-bit element count", what);
        n *= t->shape[i];
    }
    if (n > 0 && !t->data) return pf_error(PF_ERR_VALUE, "%s: NULL data with %lld elements", what, (long long)n);
    return PF_OK;
}

int pf_broadcast_strides(const pf_tensor *in, int out_ndim, const int64_t *out_shape, int64_t *strides,
                         const char *what) {
    if (in->ndim > out_ndim) goto bad;
    for (int i = 0; i < out_ndim; i++) {
        int j = i - (out_ndim - in->ndim);
        if (j < 0) { strides[i] = 0; continue; }
        if (in->shape[j] == out_shape[i]) strides[i] = out_shape[i] == 1 ? 0 : in->strides[j];
        else if (in->shape[j] == 1) strides[i] = 0;
        else goto bad;
    }
    return PF_OK;
bad:;
    char a[128], b[128];
    pf_tensor o = {.ndim = out_ndim};
    for (int i = 0; i < out_ndim; i++) o.shape[i] = out_shape[i];
    return pf_error(PF_ERR_VALUE, "%s of shape %s cannot be broadcast to shape %s", what, pf_shape_str(in, a),
                    pf_shape_str(&o, b));
}

int pf_rows_desc(const char *name, int dtype, const void *x, int64_t rows, int64_t n, pf_tensor *xd) {
    if (dtype < 0 || dtype >= PF_NUM_DTYPES) return pf_error(PF_ERR_TYPE, "%s: unknown dtype code %d", name, dtype);
    if (rows < 0 || n < 0 || (n && rows > INT64_MAX / n))
        return pf_error(PF_ERR_VALUE, "%s: bad row layout (%lld rows of %lld)", name, (long long)rows, (long long)n);
    *xd = (pf_tensor){.data = (void *)x, .dtype = dtype, .ndim = 2, .shape = {rows, n}, .strides = {n, 1}};
    return PF_OK;
}

/* ---- strided walker ---- */

void pf_walk_init(pf_walk *w, int ndim, const int64_t *shape, int nops, const int64_t *const *strides,
                  const size_t *sizes) {
    w->nops = nops;
    w->numel = 1;
    for (int i = 0; i < ndim; i++) w->numel *= shape[i];
    w->ndim = 0;
    for (int k = 0; k < nops; k++) w->off[k] = w->inner[k] = 0;
    if (w->numel == 0) return;
    int nd = 0;
    /* drop size-1 dims, then merge a dim into the previous one when every operand's
     * strides line up (stride[prev] == stride[cur] * shape[cur]) */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1) continue;
        int merge = nd > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = w->bstrides[k][nd - 1] == strides[k][i] * (int64_t)sizes[k] * shape[i];
        if (merge) {
            w->shape[nd - 1] *= shape[i];
            for (int k = 0; k < nops; k++) w->bstrides[k][nd - 1] = strides[k][i] * (int64_t)sizes[k];
        } else {
            w->shape[nd] = shape[i];
            for (int k = 0; k < nops; k++) w->bstrides[k][nd] = strides[k][i] * (int64_t)sizes[k];
            nd++;
        }
    }
    if (nd == 0) { /* a single element: one run of length 1 */
        w->shape[0] = 1;
        for (int k = 0; k < nops; k++) w->bstrides[k][0] = 0;
        nd = 1;
    }
    w->ndim = nd;
    for (int k = 0; k < nops; k++) w->inner[k] = nd ? w->bstrides[k][nd - 1] : 0;
    pf_walk_seek(w, 0);
}

void pf_walk_seek(pf_walk *w, int64_t pos) {
    for (int k = 0; k < w->nops; k++) w->off[k] = 0;
    for (int i = w->ndim - 1; i >= 0; i--) {
        w->idx[i] = pos % w->shape[i];
        pos /= w->shape[i];
        for (int k = 0; k < w->nops; k++) w->off[k] += w->idx[i] * w->bstrides[k][i];
    }
}

void pf_walk_tensor(pf_walk *w, const pf_tensor *t, int64_t pos) {
    const int64_t *st[1] = {t->strides};
    size_t sizes[1] = {pf_dtype_size[t->dtype]};
    pf_walk_init(w, t->ndim, t->shape, 1, st, sizes);
    pf_walk_seek(w, pos);
}

void pf_walk_advance(pf_walk *w, int64_t n) {
    int d = w->ndim - 1;
    if (d < 0) return;
    w->idx[d] += n;
    for (int k = 0; k < w->nops; k++) w->off[k] += n * w->bstrides[k][d];
    while (d > 0 && w->idx[d] >= w->shape[d]) {
        for (int k = 0; k < w->nops; k++) w->off[k] -= w->shape[d] * w->bstrides[k][d];
        w->idx[d] = 0;
        d--;
        w->idx[d]++;
        for (int k = 0; k < w->nops; k++) w->off[k] += w->bstrides[k][d];
    }
}
