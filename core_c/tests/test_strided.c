/* strided.c: broadcasting and the strided walker. */
#include <string.h>
#include "core.h"
#include "check.h"

static void test_broadcast(void) {
    pf_tensor in = {.ndim = 2, .shape = {3, 1}, .strides = {1, 1}};
    int64_t out_shape[3] = {2, 3, 4}, st[3];
    CHECK_OK(pf_broadcast_strides(&in, 3, out_shape, st, "x"));
    CHECK(st[0] == 0 && st[1] == 1 && st[2] == 0, "strides %lld %lld %lld", (long long)st[0], (long long)st[1],
          (long long)st[2]);
    int64_t bad[2] = {3, 5};
    pf_tensor in2 = {.ndim = 2, .shape = {3, 4}, .strides = {4, 1}};
    CHECK(pf_broadcast_strides(&in2, 2, bad, st, "x") == PF_ERR_VALUE && strstr(pf_last_error(), "[3, 4]"), "%s",
          pf_last_error());
}

static void test_walk(void) {
    /* a transposed [3, 4] view walked in row-major order visits the right offsets */
    int64_t shape[2] = {4, 3}, s0[2] = {1, 4};
    const int64_t *st[1] = {s0};
    size_t sz[1] = {1};
    pf_walk w;
    pf_walk_init(&w, 2, shape, 1, st, sz);
    int64_t seen[12], n = 0;
    for (int64_t pos = 0; pos < w.numel;) {
        int64_t len = pf_walk_run(&w, w.numel - pos);
        for (int64_t i = 0; i < len; i++) seen[n++] = w.off[0] + i * w.inner[0];
        pos += len;
        pf_walk_advance(&w, len);
    }
    int bad = 0;
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 3; j++) bad += seen[i * 3 + j] != i + 4 * j;
    CHECK(n == 12 && bad == 0, "walk visited %lld elements, %d wrong", (long long)n, bad);
    /* contiguous dims coalesce into one run */
    int64_t c[2] = {3, 1};
    const int64_t *cs[1] = {c};
    pf_walk_init(&w, 2, shape, 1, cs, sz);
    CHECK(w.ndim == 1 && pf_walk_run(&w, 100) == 12, "coalesced to %d dims", w.ndim);
}

int main(void) {
    test_broadcast();
    test_walk();
    return pf_test_summary("test_strided");
}
