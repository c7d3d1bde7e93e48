/* A tiny test harness for the C core's own tests: CHECK records a failure with its line,
 * and pf_test_summary() prints the closing "N passed, N failed" line and the exit code; below
 * them the helpers several tests share (inputs, views, tolerant comparisons). Include it after
 * core.h. */
#ifndef PF_CHECK_H
#define PF_CHECK_H
#include <math.h>
#include <stdio.h>
#include <string.h>

static int pf_passed, pf_failed;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (cond) pf_passed++;                                                \
        else {                                                                \
            pf_failed++;                                                      \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

#define CHECK_OK(call) CHECK((call) == PF_OK, "%s -> %s", #call, pf_last_error())

static inline int pf_test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, pf_passed, pf_failed);
    return pf_failed != 0;
}

/* a reproducible uniform in [-1, 1) from the caller's state: an LCG, enough to fill test inputs */
static inline double frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (1 << 24) * 2.0 - 1.0;
}

/* a contiguous descriptor over `data` */
static inline pf_tensor pf_make(void *data, int dtype, int ndim, const int64_t *shape) {
    pf_tensor t = {.data = data, .dtype = dtype, .ndim = ndim};
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) { t.shape[i] = shape[i]; t.strides[i] = s; s *= shape[i]; }
    return t;
}

static inline int64_t numel_of(const int64_t *shape, int nd) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

/* address of the element at row-major flat index `flat` of view t */
static inline const char *elem_at(const pf_tensor *t, int64_t flat) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += flat % t->shape[d] * t->strides[d];
        flat /= t->shape[d];
    }
    return (const char *)t->data + off * (int64_t)pf_dtype_size[t->dtype];
}

/* View of shape[nd] over a contiguous buffer whose dims are ordered by perm (buffer dim
 * i is view dim perm[i]): transposes without copying, as the Python side does. */
static inline pf_tensor permuted(void *buf, int dt, int nd, const int64_t *shape, const int *perm) {
    pf_tensor t = {.data = buf, .dtype = dt, .ndim = nd};
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        t.shape[perm[i]] = shape[perm[i]];
        t.strides[perm[i]] = s;
        s *= shape[perm[i]];
    }
    return t;
}

static inline int same_float(double got, double want, double tol) {
    if (want != want) return got != got;
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol;
}

/* Element comparisons are tallied, not CHECKed one by one: a wrong kernel shows as one
 * failure per call, with its first mismatch. */
typedef struct {
    int64_t bad;
    char first[256];
} tally;
#define TALLY(t, ok, ...)                                                                    \
    do {                                                                                     \
        if (!(ok) && (t)->bad++ == 0) snprintf((t)->first, sizeof (t)->first, __VA_ARGS__); \
    } while (0)

#endif
