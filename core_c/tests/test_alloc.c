/* alloc.c: the caching allocator. */
#include <stdint.h>
#include <string.h>
#include "core.h"
#include "check.h"

static void test_alloc(void) {
    size_t sizes[] = {0, 1, 63, 64, 65, 4096, 4097, 100000, (size_t)3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char *p = pf_alloc(sizes[i]);
        CHECK(p && ((uintptr_t)p % 64) == 0, "pf_alloc(%zu) = %p is not 64-byte aligned", sizes[i], (void *)p);
        if (p && sizes[i]) memset(p, 0xab, sizes[i]); /* the whole block is usable */
        pf_free(p);
    }
#ifndef __SANITIZE_ADDRESS__
    /* a freed block is handed out again for a request of the same size class */
    void *a = pf_alloc(100000);
    pf_free(a);
    void *b = pf_alloc(99000);
    CHECK(a == b, "the cached block was not reused (%p, %p)", a, b);
    pf_free(b);
#endif
    pf_empty_cache();
    pf_free(NULL);
#ifndef __SANITIZE_ADDRESS__
    /* the live counter: class sizes of the blocks handed out, the peak since pf_reset_peak */
    int64_t st[3], st2[3];
    pf_memory_stats(st);
    CHECK(st[2] == 0, "the cache holds %lld bytes after pf_empty_cache", (long long)st[2]);
    pf_reset_peak();
    void *x = pf_alloc(100000), *y = pf_alloc(5000);
    pf_memory_stats(st2);
    CHECK(st2[0] - st[0] == 114688 + 5120, "live grew by %lld, expected the classes' 114688 + 5120",
          (long long)(st2[0] - st[0]));
    pf_free(x);
    pf_memory_stats(st2);
    CHECK(st2[0] - st[0] == 5120 && st2[1] - st[0] == 114688 + 5120 && st2[2] == 114688,
          "after a free: live %lld, peak %lld, cached %lld", (long long)(st2[0] - st[0]), (long long)(st2[1] - st[0]),
          (long long)st2[2]);
    pf_reset_peak();
    pf_memory_stats(st2);
    CHECK(st2[1] == st2[0], "pf_reset_peak: peak %lld, live %lld", (long long)st2[1], (long long)st2[0]);
    pf_free(y);
    pf_empty_cache();
    pf_memory_stats(st2);
    CHECK(st2[0] == st[0] && st2[2] == 0, "all freed: live %lld (was %lld), cached %lld", (long long)st2[0],
          (long long)st[0], (long long)st2[2]);
#endif
    CHECK(pf_alloc((size_t)1 << 62) == NULL, "absurd sizes fail cleanly");
}

int main(void) {
    test_alloc();
    return pf_test_summary("test_alloc");
}
