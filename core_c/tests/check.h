/* A tiny test harness for the C core's own tests: CHECK records a failure with its line,
 * and pf_test_summary() prints the closing "N passed, N failed" line and the exit code. */
#ifndef PF_CHECK_H
#define PF_CHECK_H
#include <math.h>
#include <stdio.h>

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
#endif
