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
    CHECK(pf_alloc((size_t)1 << 62) == NULL, "absurd sizes fail cleanly");
}

int main(void) {
    test_alloc();
    return pf_test_summary("test_alloc");
}
