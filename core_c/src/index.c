/* Indexing along one dim: index_select / index_add / index_copy, gather / scatter_add /
 * scatter_reduce, nonzero.
 *
 * The kernels see a tensor as (position along dim) x (the "rest": every other dim) and
 * walk the rest with the strided walker. Kernels that write through an index (index_add,
 * index_copy, scatter_add) split only the rest across threads, so two threads never
 * write the same element and each element sees its writes in ascending index order:
 * results do not depend on the thread count. Indices are validated before anything is
 * written, so a failing call leaves its output untouched. */
#include <stdio.h>
#include <stdlib.h>
#include "core.h"

#define MIN64(a, b) ((a) < (b) ? (a) : (b))

/* Size and stride along dim; a 0-d tensor acts as one element along dim 0 as in torch. */
static int64_t dsize(const pf_tensor *t, int d) { return t->ndim ? t->shape[d] : 1; }
static int64_t dstride(const pf_tensor *t, int d) { return t->ndim ? t->strides[d] : 0; }

static int norm_dim(const char *fn, int dim, int ndim, int *d) {
    int n = ndim ? ndim : 1;
    if (dim < -n || dim >= n)
        return pf_error(PF_ERR_INDEX, "%s: dimension out of range (expected to be in range of [%d, %d], but got %d)",
                        fn, -n, n - 1, dim);
    *d = dim < 0 ? dim + n : dim;
    return PF_OK;
}

/* pf_check with the entry point's name in front of the argument's */
static int check_arg(const char *fn, const pf_tensor *t, const char *what) {
    if (pf_check(t, what) == PF_OK) return PF_OK; /* the full name is built for the message only */
    char name[64];
    snprintf(name, sizeof name, "%s: %s", fn, what);
    return pf_check(t, name);
}

static int check_index_dtype(const char *fn, const pf_tensor *idx) {
    if (idx->dtype != PF_INT64 && idx->dtype != PF_INT32)
        return pf_error(PF_ERR_TYPE, "%s: index must be int64 (or int32), got %s", fn, pf_dtype_name[idx->dtype]);
    return PF_OK;
}

static inline int64_t load_index(const char *p, int dt) {
    return dt == PF_INT64 ? *(const int64_t *)p : *(const int32_t *)p;
}

static int check_same_dtype(const char *fn, const pf_tensor *a, const char *an, const pf_tensor *b, const char *bn) {
    if (a->dtype != b->dtype)
        return pf_error(PF_ERR_TYPE, "%s: %s is %s but %s is %s", fn, an, pf_dtype_name[a->dtype], bn,
                        pf_dtype_name[b->dtype]);
    return PF_OK;
}

static int check_addable(const char *fn, int dt) {
    if (dt == PF_BOOL) return pf_error(PF_ERR_TYPE, "%s: bool tensors cannot be accumulated into", fn);
    return PF_OK;
}

/* Copy n elements of es bytes between byte-strided runs. memcpy with a constant size
 * compiles to a plain move and stays clear of strict-aliasing trouble. */
static void copy_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t es) {
    if (ds == (int64_t)es && ss == (int64_t)es) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
#define COPY_N(SZ) for (int64_t k = 0; k < n; k++) memcpy(d + k * ds, s + k * ss, SZ)
    switch (es) {
    case 1: COPY_N(1); break;
    case 2: COPY_N(2); break;
    case 4: COPY_N(4); break;
    default: COPY_N(8); break;
    }
#undef COPY_N
}

/* The element at D += the one at S, for k < n, D and S byte addresses in k, in dtype dt (float16
 * widened to float and rounded back; bool is refused before): the switch outside the loop. */
#define ADD_ELEMENTS(dt, n, D, S)                                                                    \
    switch (dt) {                                                                                    \
    case PF_FLOAT32: ADD_AS(float, n, D, S); break;                                                  \
    case PF_FLOAT64: ADD_AS(double, n, D, S); break;                                                 \
    case PF_INT64: ADD_AS(int64_t, n, D, S); break;                                                  \
    case PF_INT32: ADD_AS(int32_t, n, D, S); break;                                                  \
    case PF_INT16: ADD_AS(int16_t, n, D, S); break;                                                  \
    case PF_INT8: ADD_AS(int8_t, n, D, S); break;                                                    \
    case PF_UINT8: ADD_AS(uint8_t, n, D, S); break;                                                  \
    default: /* float16, bfloat16 */                                                                 \
        for (int64_t k = 0; k < (n); k++) {                                                          \
            uint16_t *h_ = (uint16_t *)(D);                                                          \
            *h_ = pf_half_store(dt, pf_half_load(dt, *h_) + pf_half_load(dt, *(const uint16_t *)(S))); \
        }                                                                                            \
    }
#define ADD_AS(T, n, D, S) for (int64_t k = 0; k < (n); k++) *(T *)(D) += *(const T *)(S)

/* d[k] += s[k] for n elements of dtype dt */
static void add_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, int dt) {
    ADD_ELEMENTS(dt, n, d + k * ds, s + k * ss)
}

/* The rest of a tensor: its shape with dim d collapsed to 1 (the walker drops it). */
static void rest_shape(const pf_tensor *shape_of, int d, int64_t *shape) {
    for (int i = 0; i < shape_of->ndim; i++) shape[i] = i == d ? 1 : shape_of->shape[i];
}

/* Validated, wrapped copy of a 1-d index (negatives wrap once); NULL on error. */
static int64_t *read_1d_index(const char *fn, const pf_tensor *idx, int d, int64_t size, int *rc) {
    int64_t L = pf_numel(idx), st = idx->ndim ? idx->strides[0] : 0;
    size_t es = pf_dtype_size[idx->dtype];
    int64_t *pos = malloc((size_t)(L ? L : 1) * sizeof *pos);
    if (!pos) {
        *rc = pf_error(PF_ERR_NOMEM, "%s: cannot allocate %lld indices", fn, (long long)L);
        return NULL;
    }
    for (int64_t j = 0; j < L; j++) {
        int64_t v = load_index((const char *)idx->data + j * st * (int64_t)es, idx->dtype);
        if (v < -size || v >= size) {
            *rc = pf_error(PF_ERR_INDEX, "%s: index %lld is out of bounds for dimension %d with size %lld", fn,
                           (long long)v, d, (long long)size);
            free(pos);
            return NULL;
        }
        pos[j] = v < 0 ? v + size : v;
    }
    *rc = PF_OK;
    return pos;
}

/* Checks shared by index_select, index_add and index_copy: `big` has the dim's full size,
 * `small` has idx's length along dim and `big`'s shape elsewhere. */
static int check_along(const char *fn, const pf_tensor *big, const char *bn, const pf_tensor *small, const char *sn,
                       const pf_tensor *idx, int dim, int *d) {
    int rc;
    if ((rc = check_arg(fn, big, bn)) || (rc = check_arg(fn, small, sn)) || (rc = check_arg(fn, idx, "index")))
        return rc;
    if ((rc = check_same_dtype(fn, big, bn, small, sn)) || (rc = check_index_dtype(fn, idx))) return rc;
    if ((rc = norm_dim(fn, dim, big->ndim, d))) return rc;
    char a[128], b[128];
    if (idx->ndim > 1)
        return pf_error(PF_ERR_INDEX, "%s: index must be 1-d, got shape %s", fn, pf_shape_str(idx, a));
    int64_t L = pf_numel(idx);
    int ok = small->ndim == big->ndim;
    for (int i = 0; ok && i < big->ndim; i++) ok = small->shape[i] == (i == *d ? L : big->shape[i]);
    if (big->ndim == 0 && L != 1)
        return pf_error(PF_ERR_INDEX, "%s: index into a 0-d tensor must have 1 value, got %lld", fn, (long long)L);
    if (!ok)
        return pf_error(PF_ERR_VALUE, "%s: %s has shape %s but %s of shape %s indexed by %lld indices along dim %d "
                        "needs the same shape with %lld at dim %d", fn, sn, pf_shape_str(small, a), bn,
                        pf_shape_str(big, b), (long long)L, *d, (long long)L, *d);
    return PF_OK;
}

/* One index_select, index_add or index_copy: `big` has the dim's full size, `small` the index's
 * length there and big's shape elsewhere. Walked as (j, rest): rest is small's shape with the dim
 * collapsed, operand 0 small at position j along the dim, operand 1 big at pos[j]. */
typedef struct {
    const pf_tensor *big, *small;
    int64_t shape[PF_MAX_DIMS];
    const int64_t *st[2];
    size_t sizes[2], es;
    int64_t *pos, L, R, ssd, bsd; /* byte strides along the dim */
    int accumulate;
} along_job;

static int along_setup(const char *fn, const pf_tensor *big, const char *bn, const pf_tensor *small, const char *sn,
                       const pf_tensor *idx, int dim, int accumulate, along_job *j) {
    int d, rc;
    if ((rc = check_along(fn, big, bn, small, sn, idx, dim, &d))) return rc;
    if (accumulate && (rc = check_addable(fn, big->dtype))) return rc;
    j->accumulate = accumulate;
    if (!(j->pos = read_1d_index(fn, idx, d, dsize(big, d), &rc))) return rc;
    rest_shape(small, d, j->shape);
    j->big = big, j->small = small;
    j->st[0] = small->strides, j->st[1] = big->strides;
    j->es = j->sizes[0] = j->sizes[1] = pf_dtype_size[big->dtype];
    j->L = pf_numel(idx), j->R = 1;
    for (int i = 0; i < small->ndim; i++) j->R *= j->shape[i];
    j->ssd = dstride(small, d) * (int64_t)j->es, j->bsd = dstride(big, d) * (int64_t)j->es;
    return PF_OK;
}

/* index_select: small[j] = big[pos[j]] over a share of the flattened (j, rest) space, so a few
 * long rows and many short ones (embedding lookups) both spread over the threads */
static void select_part(void *arg, int64_t b, int64_t e) {
    const along_job *p = arg;
    int64_t R = p->R;
    pf_walk w;
    pf_walk_init(&w, p->small->ndim, p->shape, 2, p->st, p->sizes);
    int64_t j = b / R, r = b % R;
    pf_walk_seek(&w, r);
    while (b < e) {
        int64_t n = pf_walk_run(&w, MIN64(e - b, R - r));
        copy_run((char *)p->small->data + j * p->ssd + w.off[0], w.inner[0],
                 (const char *)p->big->data + p->pos[j] * p->bsd + w.off[1], w.inner[1], n, p->es);
        b += n;
        r += n;
        pf_walk_advance(&w, n);
        if (r == R) {
            r = 0;
            j++;
            pf_walk_seek(&w, 0);
        }
    }
}

int pf_index_select(const pf_tensor *x, int dim, const pf_tensor *idx, pf_tensor *out) {
    along_job j;
    int rc = along_setup("index_select", x, "x", out, "out", idx, dim, 0, &j);
    if (rc) return rc;
    pf_parallel_range(pf_threads_for(j.L * j.R), j.L * j.R, select_part, &j);
    free(j.pos);
    return PF_OK;
}

int pf_index_select_rows(int dtype, const void *x, int64_t rows, int64_t width, const void *idx, int64_t L,
                         void *out) {
    if (dtype < 0 || dtype >= PF_NUM_DTYPES) return pf_error(PF_ERR_TYPE, "index_select: unknown dtype code %d", dtype);
    if (rows < 0 || width < 0 || L < 0 || (width && (rows > INT64_MAX / width || L > INT64_MAX / width)))
        return pf_error(PF_ERR_VALUE, "index_select: bad layout (%lld rows of %lld, %lld indices)", (long long)rows,
                        (long long)width, (long long)L);
    pf_tensor xd = {.data = (void *)x, .dtype = dtype, .ndim = 2, .shape = {rows, width}, .strides = {width, 1}};
    pf_tensor od = {.data = out, .dtype = dtype, .ndim = 2, .shape = {L, width}, .strides = {width, 1}};
    pf_tensor id = {.data = (void *)idx, .dtype = PF_INT64, .ndim = 1, .shape = {L}, .strides = {1}};
    return pf_index_select(&xd, 0, &id, &od);
}

/* index_add (accumulate) and index_copy: big[pos[j]] (+)= small[j]. Each thread owns a share of
 * the rest and walks j in ascending order, so repeated indices add up race-free and, for a copy,
 * the last j wins, whatever the thread count. */
static void put_part(void *arg, int64_t rb, int64_t re) {
    const along_job *p = arg;
    pf_walk w;
    pf_walk_init(&w, p->small->ndim, p->shape, 2, p->st, p->sizes);
    for (int64_t j = 0; j < p->L; j++) {
        pf_walk_seek(&w, rb);
        for (int64_t r = rb; r < re;) {
            int64_t n = pf_walk_run(&w, re - r);
            char *o = (char *)p->big->data + p->pos[j] * p->bsd + w.off[1];
            const char *sp = (const char *)p->small->data + j * p->ssd + w.off[0];
            if (p->accumulate) add_run(o, w.inner[1], sp, w.inner[0], n, p->big->dtype);
            else copy_run(o, w.inner[1], sp, w.inner[0], n, p->es);
            r += n;
            pf_walk_advance(&w, n);
        }
    }
}

static int index_put(const char *fn, pf_tensor *out, int dim, const pf_tensor *idx, const pf_tensor *src,
                     int accumulate) {
    along_job j;
    int rc = along_setup(fn, out, "out", src, "src", idx, dim, accumulate, &j);
    if (rc) return rc;
    pf_parallel_range(pf_threads_for(j.L * j.R), j.R, put_part, &j);
    free(j.pos);
    return PF_OK;
}

int pf_index_add(pf_tensor *out, int dim, const pf_tensor *idx, const pf_tensor *src) {
    return index_put("index_add", out, dim, idx, src, 1);
}

int pf_index_copy(pf_tensor *out, int dim, const pf_tensor *idx, const pf_tensor *src) {
    return index_put("index_copy", out, dim, idx, src, 0);
}

/* ---- cat ---- */

typedef struct {
    int n;
    const void *const *xs;
    const int64_t *widths;
    int64_t total, outer; /* out's row width (elements) and row count */
    char *out;
    size_t es;
} cat_job;

/* This thread's share of out's elements, in pieces that each lie in one input's row: the
 * output is split evenly by elements, so a single long row (cat along dim 0) spreads over
 * the team as well as many short ones do. */
static void cat_part(void *arg, int64_t b, int64_t e) {
    const cat_job *j = arg;
    int64_t W = j->total;
    int64_t r = b / W, c = b % W, off = 0;
    int i = 0;
    while (off + j->widths[i] <= c) off += j->widths[i++]; /* the input holding column c */
    while (b < e) {
        int64_t w = j->widths[i], k = w - (c - off) < e - b ? w - (c - off) : e - b;
        if (k > 0)
            memcpy(j->out + (size_t)(r * W + c) * j->es, (const char *)j->xs[i] + (size_t)(r * w + c - off) * j->es,
                   (size_t)k * j->es);
        b += k, c += k;
        if (c - off == w) { /* the next input, or the next row's first */
            off += w;
            i++;
            if (c == W) c = off = 0, i = 0, r++;
        }
    }
}

int pf_cat_rows(int dtype, int n, const void *const *xs, const int64_t *widths, int64_t outer, void *out) {
    if (dtype < 0 || dtype >= PF_NUM_DTYPES) return pf_error(PF_ERR_TYPE, "cat: unknown dtype code %d", dtype);
    if (n < 1 || !xs || !widths) return pf_error(PF_ERR_VALUE, "cat: expected at least one input, got %d", n);
    if (outer < 0) return pf_error(PF_ERR_VALUE, "cat: negative row count %lld", (long long)outer);
    size_t es = pf_dtype_size[dtype];
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (widths[i] < 0 || widths[i] > INT64_MAX / (int64_t)es - total)
            return pf_error(PF_ERR_VALUE, "cat: bad width %lld for input %d", (long long)widths[i], i);
        if (widths[i] && outer && !xs[i]) return pf_error(PF_ERR_VALUE, "cat: input %d has no data", i);
        total += widths[i];
    }
    if (total && outer > INT64_MAX / (int64_t)es / total)
        return pf_error(PF_ERR_VALUE, "cat: %lld rows of %lld elements overflow", (long long)outer, (long long)total);
    if (!total || !outer) return PF_OK;
    if (!out) return pf_error(PF_ERR_VALUE, "cat: output has no data");
    cat_job j = {n, xs, widths, total, outer, out, es};
    pf_parallel_range(pf_threads_for(outer * total), outer * total, cat_part, &j);
    return PF_OK;
}

int pf_cat2(int dtype, const void *a, int64_t na, const void *b, int64_t nb, void *out) {
    const void *xs[2] = {a, b};
    int64_t widths[2] = {na, nb};
    return pf_cat_rows(dtype, 2, xs, widths, 1, out);
}

/* ---- gather / scatter_add ---- */

/* Every value of `index` must lie in [0, size): gather and scatter_add do not wrap
 * negatives (as torch). Reports the first bad value in row-major order. */
typedef struct {
    const pf_tensor *index;
    int64_t size, bad_pos, bad_val;
} range_job;

static void range_part(void *arg, int64_t b, int64_t e) {
    range_job *j = arg;
    const pf_tensor *index = j->index;
    pf_walk wi;
    pf_walk_tensor(&wi, index, b);
    for (int64_t p = b; p < e;) {
        int64_t n = pf_walk_run(&wi, e - p);
        const char *ip = (const char *)index->data + wi.off[0];
        for (int64_t k = 0; k < n; k++) {
            int64_t v = load_index(ip + k * wi.inner[0], index->dtype);
            if (v >= 0 && v < j->size) continue;
#pragma omp critical(pf_index_range)
            if (p + k < j->bad_pos) {
                j->bad_pos = p + k;
                j->bad_val = v;
            }
            return; /* the first bad one of this share */
        }
        p += n;
        pf_walk_advance(&wi, n);
    }
}

static int check_index_range(const char *fn, const pf_tensor *index, int d, int64_t size) {
    int64_t total = pf_numel(index);
    range_job j = {index, size, INT64_MAX, 0};
    pf_parallel_range(pf_threads_for(total), total, range_part, &j);
    if (j.bad_pos != INT64_MAX)
        return pf_error(PF_ERR_INDEX, "%s: index %lld is out of bounds for dimension %d with size %lld", fn,
                        (long long)j.bad_val, d, (long long)size);
    return PF_OK;
}

/* torch's shape rules: one ndim for all three; index no larger than `full` in every dim
 * and no larger than `data` (gather's x, scatter's out) except along d. */
static int check_gs(const char *fn, const pf_tensor *data, const char *dn, const pf_tensor *index,
                    const pf_tensor *full, const char *fulln, int dim, int *d) {
    int rc;
    if ((rc = check_arg(fn, data, dn)) || (rc = check_arg(fn, index, "index")) || (rc = check_arg(fn, full, fulln)))
        return rc;
    if ((rc = check_same_dtype(fn, data, dn, full, fulln)) || (rc = check_index_dtype(fn, index))) return rc;
    if ((rc = norm_dim(fn, dim, data->ndim, d))) return rc;
    char a[128], b[128], c[128];
    if (index->ndim != data->ndim || full->ndim != data->ndim)
        return pf_error(PF_ERR_VALUE, "%s: index %s, %s %s and %s %s must have the same number of dims", fn,
                        pf_shape_str(index, a), dn, pf_shape_str(data, b), fulln, pf_shape_str(full, c));
    for (int i = 0; i < data->ndim; i++) {
        if (i != *d && index->shape[i] > data->shape[i])
            return pf_error(PF_ERR_VALUE, "%s: size does not match at dimension %d: index %s must be no larger "
                            "than %s %s apart from dimension %d", fn, i, pf_shape_str(index, a), dn,
                            pf_shape_str(data, b), *d);
        if (index->shape[i] > full->shape[i])
            return pf_error(PF_ERR_VALUE, "%s: size does not match at dimension %d: index %s must be no larger "
                            "than %s %s", fn, i, pf_shape_str(index, a), fulln, pf_shape_str(full, b));
    }
    return PF_OK;
}

/* gather's and scatter_add's operands: out, index and x (gather) or src (scatter), walked over
 * `shape` (gather: index's; scatter: the rest, index's with the dim collapsed); sd is the byte
 * stride along the dim of x (gather) or out (scatter) */
typedef struct {
    const pf_tensor *index, *out, *data;
    const int64_t *shape;
    const int64_t *const *st;
    const size_t *sizes;
    int64_t sd;
    size_t es;
    int64_t L, isd, ssd; /* scatter: the dim's length, index's and src's byte strides along it */
} gs_job;

static void gather_part(void *arg, int64_t b, int64_t e) {
    const gs_job *j = arg;
    int idt = j->index->dtype;
    int64_t xsd = j->sd;
    pf_walk w;
    pf_walk_init(&w, j->index->ndim, j->shape, 3, j->st, j->sizes);
    pf_walk_seek(&w, b);
    while (b < e) {
        int64_t n = pf_walk_run(&w, e - b);
        char *op = (char *)j->out->data + w.off[0];
        const char *ip = (const char *)j->index->data + w.off[1], *xp = (const char *)j->data->data + w.off[2];
#define GATHER_N(SZ)                                                                                    \
    for (int64_t k = 0; k < n; k++)                                                                     \
        memcpy(op + k * w.inner[0], xp + k * w.inner[2] + load_index(ip + k * w.inner[1], idt) * xsd, SZ)
        switch (j->es) {
        case 1: GATHER_N(1); break;
        case 2: GATHER_N(2); break;
        case 4: GATHER_N(4); break;
        default: GATHER_N(8); break;
        }
#undef GATHER_N
        b += n;
        pf_walk_advance(&w, n);
    }
}

int pf_gather(const pf_tensor *x, int dim, const pf_tensor *index, pf_tensor *out) {
    const char *fn = "gather";
    int d, rc;
    if ((rc = check_gs(fn, x, "x", index, out, "out", dim, &d))) return rc;
    char s1[128], s2[128];
    for (int i = 0; i < out->ndim; i++)
        if (out->shape[i] != index->shape[i])
            return pf_error(PF_ERR_VALUE, "%s: out has shape %s but index has shape %s", fn, pf_shape_str(out, s1),
                            pf_shape_str(index, s2));
    if ((rc = check_index_range(fn, index, d, dsize(x, d)))) return rc;
    int64_t xs[PF_MAX_DIMS];
    memcpy(xs, x->strides, sizeof xs);
    if (x->ndim) xs[d] = 0; /* the index supplies the position along d */
    const int64_t *st[3] = {out->strides, index->strides, xs};
    size_t es = pf_dtype_size[x->dtype], sizes[3] = {es, pf_dtype_size[index->dtype], es};
    int64_t total = pf_numel(index);
    gs_job j = {.index = index, .out = out, .data = x, .shape = index->shape, .st = st, .sizes = sizes,
                .sd = dstride(x, d) * (int64_t)es, .es = es};
    pf_parallel_range(pf_threads_for(total), total, gather_part, &j);
    return PF_OK;
}

static void scatter_part(void *arg, int64_t rb, int64_t re) {
    const gs_job *g = arg;
    int idt = g->index->dtype, dt = g->out->dtype;
    int64_t osd = g->sd;
    pf_walk w;
    pf_walk_init(&w, g->index->ndim, g->shape, 3, g->st, g->sizes);
    for (int64_t j = 0; j < g->L; j++) {
        pf_walk_seek(&w, rb);
        for (int64_t r = rb; r < re;) {
            int64_t n = pf_walk_run(&w, re - r);
            char *op = (char *)g->out->data + w.off[0];
            const char *ip = (const char *)g->index->data + w.off[1] + j * g->isd;
            const char *sp = (const char *)g->data->data + w.off[2] + j * g->ssd;
            ADD_ELEMENTS(dt, n, op + k * w.inner[0] + load_index(ip + k * w.inner[1], idt) * osd,
                         sp + k * w.inner[2])
            r += n;
            pf_walk_advance(&w, n);
        }
    }
}

int pf_scatter_add(pf_tensor *out, int dim, const pf_tensor *index, const pf_tensor *src) {
    const char *fn = "scatter_add";
    int d, rc;
    if ((rc = check_gs(fn, out, "out", index, src, "src", dim, &d)) || (rc = check_addable(fn, out->dtype)))
        return rc;
    if ((rc = check_index_range(fn, index, d, dsize(out, d)))) return rc;
    int64_t shape[PF_MAX_DIMS];
    rest_shape(index, d, shape);
    const int64_t *st[3] = {out->strides, index->strides, src->strides};
    size_t es = pf_dtype_size[out->dtype], sizes[3] = {es, pf_dtype_size[index->dtype], es};
    int64_t R = 1, L = dsize(index, d);
    for (int i = 0; i < index->ndim; i++) R *= shape[i];
    gs_job j = {.index = index, .out = out, .data = src, .shape = shape, .st = st, .sizes = sizes,
                .sd = dstride(out, d) * (int64_t)es, .es = es, .L = L, .isd = dstride(index, d) * (int64_t)sizes[1],
                .ssd = dstride(src, d) * (int64_t)es};
    /* rest positions (coordinates off dim d) own disjoint lines of out: split those */
    pf_parallel_range(pf_threads_for(L * R), R, scatter_part, &j);
    return PF_OK;
}

/* ---- scatter_reduce ---- */

/* out[index] op= src along dim for op sum, prod, mean, amax, amin (PF_SUM, PF_PROD, PF_MEAN, PF_MAX, PF_MIN).
 * Without include_self every element written to starts from the op's identity, so it reduces src alone;
 * mean divides by the number of values reduced (flooring for integers, as torch). Floating elements
 * accumulate in double, integer ones in int64 (wrapping); a NaN wins amax and amin. */
typedef struct {
    gs_job g;
    int op, include_self;
    int64_t R, D; /* index's rest count, out's size along the dim */
    int64_t *count; /* mean: [D, R] values reduced per element written */
} sr_job;

static void sr_update(char *o, const char *s, int dt, int op) {
    if (pf_is_float(dt)) {
        double a = pf_load_f64(o, dt), b = pf_load_f64(s, dt), r;
        switch (op) {
        case PF_PROD: r = a * b; break;
        case PF_MAX: r = a != a ? a : (b != b || b > a) ? b : a; break;
        case PF_MIN: r = a != a ? a : (b != b || b < a) ? b : a; break;
        default: r = a + b; break;
        }
        pf_store_f64(o, dt, r);
        return;
    }
    int64_t a = pf_load_i64(o, dt), b = pf_load_i64(s, dt), r;
    switch (op) {
    case PF_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case PF_MAX: r = b > a ? b : a; break;
    case PF_MIN: r = b < a ? b : a; break;
    default: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    }
    pf_store_i64(o, dt, r);
}

/* the smallest and largest value of an integer dtype: amax's and amin's identities */
static int64_t int_lowest(int dt) {
    switch (dt) {
    case PF_INT32: return INT32_MIN;
    case PF_INT16: return INT16_MIN;
    case PF_INT8: return INT8_MIN;
    case PF_UINT8:
    case PF_BOOL: return 0;
    default: return INT64_MIN;
    }
}
static int64_t int_highest(int dt) {
    switch (dt) {
    case PF_INT32: return INT32_MAX;
    case PF_INT16: return INT16_MAX;
    case PF_INT8: return INT8_MAX;
    case PF_UINT8: return UINT8_MAX;
    case PF_BOOL: return 1;
    default: return INT64_MAX;
    }
}

static void sr_identity(char *o, int dt, int op) {
    if (pf_is_float(dt))
        pf_store_f64(o, dt, op == PF_PROD ? 1.0 : op == PF_MAX ? -INFINITY : op == PF_MIN ? INFINITY : 0.0);
    else
        pf_store_i64(o, dt, op == PF_PROD ? 1 : op == PF_MAX ? int_lowest(dt) : op == PF_MIN ? int_highest(dt) : 0);
}

/* pass 0: identities (without include_self); pass 1: the reduction; pass 2: mean's division */
static void sr_part(void *arg, int64_t rb, int64_t re) {
    const sr_job *sj = arg;
    const gs_job *g = &sj->g;
    int idt = g->index->dtype, dt = g->out->dtype;
    pf_walk w;
    pf_walk_init(&w, g->index->ndim, g->shape, 3, g->st, g->sizes);
    for (int pass = sj->include_self; pass < 3; pass++) {
        if (pass == 2 && sj->op != PF_MEAN) break;
        for (int64_t j = 0; j < (pass == 2 ? sj->D : g->L); j++) {
            pf_walk_seek(&w, rb);
            for (int64_t r = rb; r < re;) {
                int64_t n = pf_walk_run(&w, re - r);
                char *op = (char *)g->out->data + w.off[0];
                const char *ip = (const char *)g->index->data + w.off[1] + (pass == 2 ? 0 : j * g->isd);
                const char *sp = (const char *)g->data->data + w.off[2] + (pass == 2 ? 0 : j * g->ssd);
                for (int64_t k = 0; k < n; k++) {
                    if (pass == 2) {
                        int64_t c = sj->count[j * sj->R + r + k] + sj->include_self;
                        char *o = op + k * w.inner[0] + j * g->sd;
                        if (sj->count[j * sj->R + r + k] == 0) continue;
                        if (pf_is_float(dt)) pf_store_f64(o, dt, pf_load_f64(o, dt) / (double)c);
                        else {
                            int64_t v = pf_load_i64(o, dt), q = v / c;
                            pf_store_i64(o, dt, q - (v % c != 0 && (v < 0) != (c < 0)));
                        }
                        continue;
                    }
                    int64_t pos = load_index(ip + k * w.inner[1], idt);
                    char *o = op + k * w.inner[0] + pos * g->sd;
                    if (pass == 0) sr_identity(o, dt, sj->op);
                    else {
                        sr_update(o, sp + k * w.inner[2], dt, sj->op);
                        if (sj->count) sj->count[pos * sj->R + r + k]++;
                    }
                }
                r += n;
                pf_walk_advance(&w, n);
            }
        }
    }
}

int pf_scatter_reduce(pf_tensor *out, int dim, const pf_tensor *index, const pf_tensor *src, int op,
                      int include_self) {
    const char *fn = "scatter_reduce";
    int d, rc;
    if (op != PF_SUM && op != PF_PROD && op != PF_MEAN && op != PF_MAX && op != PF_MIN)
        return pf_error(PF_ERR_VALUE, "%s: unknown reduction code %d", fn, op);
    if ((rc = check_gs(fn, out, "out", index, src, "src", dim, &d)) || (rc = check_addable(fn, out->dtype)))
        return rc;
    if ((rc = check_index_range(fn, index, d, dsize(out, d)))) return rc;
    int64_t shape[PF_MAX_DIMS];
    rest_shape(index, d, shape);
    const int64_t *st[3] = {out->strides, index->strides, src->strides};
    size_t es = pf_dtype_size[out->dtype], sizes[3] = {es, pf_dtype_size[index->dtype], es};
    int64_t R = 1, L = dsize(index, d), D = dsize(out, d);
    for (int i = 0; i < index->ndim; i++) R *= shape[i];
    if (R * L == 0) return PF_OK;
    sr_job j = {.g = {.index = index, .out = out, .data = src, .shape = shape, .st = st, .sizes = sizes,
                      .sd = dstride(out, d) * (int64_t)es, .es = es, .L = L,
                      .isd = dstride(index, d) * (int64_t)sizes[1], .ssd = dstride(src, d) * (int64_t)es},
                .op = op, .include_self = include_self != 0, .R = R, .D = D};
    if (op == PF_MEAN && !(j.count = calloc((size_t)(D * R), sizeof *j.count)))
        return pf_error(PF_ERR_NOMEM, "%s: cannot allocate %lld counts", fn, (long long)(D * R));
    /* rest positions own disjoint lines of out: split those, each walked in ascending j */
    pf_parallel_range(pf_threads_for(L * R), R, sr_part, &j);
    free(j.count);
    return PF_OK;
}

/* ---- nonzero ---- */

/* Nonzero elements in a run. -0.0 counts as zero and NaN as nonzero, as in torch. */
static int64_t count_run(const char *p, int64_t s, int64_t n, int dt) {
    int64_t c = 0;
#define COUNT_N(T, EXPR)                                     \
    for (int64_t k = 0; k < n; k++) {                        \
        T v = *(const T *)(p + k * s);                       \
        c += (EXPR);                                         \
    }
    switch (dt) {
    case PF_FLOAT32: COUNT_N(float, v != 0.0f); break;
    case PF_FLOAT64: COUNT_N(double, v != 0.0); break;
    case PF_FLOAT16:
    case PF_BFLOAT16: COUNT_N(uint16_t, (v & 0x7fff) != 0); break;
    case PF_INT64: COUNT_N(int64_t, v != 0); break;
    case PF_INT32: COUNT_N(int32_t, v != 0); break;
    case PF_INT16: COUNT_N(int16_t, v != 0); break;
    default: COUNT_N(uint8_t, v != 0); break;
    }
#undef COUNT_N
    return c;
}

/* Nonzeros among flat positions [b, e); with `out`, also writes their coordinates from
 * row `row` on. */
static int64_t nonzero_range(const pf_tensor *x, int64_t b, int64_t e, const pf_tensor *out, int64_t row) {
    int64_t c = 0;
    pf_walk w;
    pf_walk_tensor(&w, x, b);
    for (int64_t p = b; p < e;) {
        int64_t n = pf_walk_run(&w, e - p);
        const char *xp = (const char *)x->data + w.off[0];
        if (!out) c += count_run(xp, w.inner[0], n, x->dtype);
        else
            for (int64_t k = 0; k < n; k++) {
                if (!count_run(xp + k * w.inner[0], 0, 1, x->dtype)) continue;
                /* the walker coalesces dims, so coordinates come from the flat position */
                int64_t *o = (int64_t *)out->data + (row + c) * out->strides[0], q = p + k;
                for (int i = x->ndim - 1; i >= 0; i--) {
                    o[i * out->strides[1]] = q % x->shape[i];
                    q /= x->shape[i];
                }
                c++;
            }
        p += n;
        pf_walk_advance(&w, n);
    }
    return c;
}

typedef struct {
    const pf_tensor *x, *out;
    int64_t total, count, *counts; /* counts: one per thread and one more, for pf_nonzero */
} nz_job;

static void count_part(void *arg, int64_t b, int64_t e) {
    nz_job *j = arg;
    __atomic_add_fetch(&j->count, nonzero_range(j->x, b, e, NULL, 0), __ATOMIC_RELAXED);
}

int64_t pf_count_nonzero(const pf_tensor *x) {
    if (pf_check(x, "count_nonzero: x") != PF_OK) return -1;
    nz_job j = {.x = x, .total = pf_numel(x)};
    pf_parallel_range(pf_threads_for(j.total), j.total, count_part, &j);
    return j.count;
}

/* Count per thread's chunk, then each thread writes its chunk's rows after the earlier
 * chunks' rows: row-major order whatever the thread count. */
static void nonzero_team(void *arg, int t, int T) {
    nz_job *j = arg;
    int64_t cb, ce, *counts = j->counts;
    pf_split(j->total, t, T, &cb, &ce);
    counts[t + 1] = nonzero_range(j->x, cb, ce, NULL, 0);
#pragma omp barrier
#pragma omp single
    for (int i = 0; i < T; i++) counts[i + 1] += counts[i];
    /* single ends in a barrier: counts is now a prefix sum */
    if (counts[T] == j->out->shape[0]) nonzero_range(j->x, cb, ce, j->out, counts[t]);
#pragma omp single nowait
    j->count = counts[T];
}

int pf_nonzero(const pf_tensor *x, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "nonzero: x")) || (rc = pf_check(out, "nonzero: out"))) return rc;
    char a[128], b[128];
    if (out->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "nonzero: out must be int64, got %s", pf_dtype_name[out->dtype]);
    if (out->ndim != 2 || out->shape[1] != x->ndim)
        return pf_error(PF_ERR_VALUE, "nonzero: out must have shape [count, %d] for x of shape %s, got %s", x->ndim,
                        pf_shape_str(x, a), pf_shape_str(out, b));
    nz_job j = {.x = x, .out = out, .total = pf_numel(x)};
    int nt = pf_threads_for(j.total);
    if (!(j.counts = calloc((size_t)nt + 1, sizeof *j.counts))) return pf_error(PF_ERR_NOMEM, "nonzero: out of memory");
    pf_run_team(nt, nonzero_team, &j);
    free(j.counts);
    if (j.count != out->shape[0])
        return pf_error(PF_ERR_VALUE, "nonzero: x of shape %s has %lld nonzero elements but out has shape %s",
                        pf_shape_str(x, a), (long long)j.count, pf_shape_str(out, b));
    return PF_OK;
}
