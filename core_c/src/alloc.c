/* Tensor memory: a cache of freed blocks by size class, in front of aligned_alloc. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdlib.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core.h"

/* Tensor memory is cached by size class: a training step frees and allocates the same
 * sizes every iteration, and fresh memory from the OS costs a page fault per 4 KiB on first
 * touch (an add over a 3 MB tensor took 6x longer in fresh memory than in reused memory).
 * A freed block goes on its class's list while the cache holds under PF_CACHE_MAX bytes.
 * Each block has a 64-byte header in front (the user pointer stays 64-byte aligned);
 * blocks of 2 MiB and more are 2 MiB aligned and advised as transparent huge pages.
 * Under AddressSanitizer blocks go straight back to free(), so use-after-free is caught. */
#define PF_HUGE ((size_t)2 << 20)
#define PF_CACHE_MAX ((size_t)1 << 30)
#define PF_CACHE_SHARE 16 /* keep at most 1/16 of physical memory */
#define PF_HEADER 64
#define PF_CLASSES 272

typedef struct block {
    struct block *next;
    size_t size; /* usable bytes: the class size */
    int cls;
} block;
_Static_assert(sizeof(block) <= PF_HEADER, "block header must fit in front of the data");

static block *free_lists[PF_CLASSES];
static size_t cached_bytes;
/* bytes of blocks handed out and not yet freed (their class sizes), and the most there were
 * since the last pf_reset_peak: what the tensors need, apart from the cache */
static size_t live_bytes, peak_live;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Size class of n bytes, its rounded size and the smallest request of the class: 64-byte
 * steps up to 4 KiB, then four classes per power of two (at most 25% slack). */
static int size_class(size_t n, size_t *rounded, size_t *least) {
    if (n <= 4096) {
        size_t c = n ? (n + 63) / 64 : 1;
        *rounded = c * 64;
        *least = *rounded - 63;
        return (int)c - 1;
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k <= n - 1 < 2^(k+1) */
    size_t q = (n - 1) >> (k - 2);                             /* 4..7 */
    *rounded = (q + 1) << (k - 2);
    *least = (q << (k - 2)) + 1;
    return 64 + (k - 12) * 4 + (int)(q - 4);
}

/* Every block of the cache back to the system. */
static void release_cached(void) {
    for (int c = 0; c < PF_CLASSES; c++) {
        while (free_lists[c]) {
            block *b = free_lists[c];
            free_lists[c] = b->next;
            free(b);
        }
    }
    cached_bytes = 0;
}

void *pf_alloc(size_t nbytes) {
    if (nbytes > ((size_t)1 << 60)) return NULL;
    size_t size, least;
    int cls = size_class(nbytes, &size, &least);
    block *b = NULL;
#ifndef __SANITIZE_ADDRESS__
    pthread_mutex_lock(&cache_lock);
    b = free_lists[cls];
    if (b) {
        free_lists[cls] = b->next;
        cached_bytes -= b->size;
    }
    live_bytes += size;
    if (live_bytes > peak_live) peak_live = live_bytes;
    pthread_mutex_unlock(&cache_lock);
    if (b) return (char *)b + PF_HEADER;
#endif
    size_t total = size + PF_HEADER, align = total >= PF_HUGE ? PF_HUGE : 64;
    total = (total + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple of the alignment */
    b = aligned_alloc(align, total);
#ifndef __SANITIZE_ADDRESS__
    if (!b) { /* under memory pressure the cache goes back first, then one more try */
        pthread_mutex_lock(&cache_lock);
        release_cached();
        pthread_mutex_unlock(&cache_lock);
        b = aligned_alloc(align, total);
    }
    if (!b) {
        pthread_mutex_lock(&cache_lock);
        live_bytes -= size;
        pthread_mutex_unlock(&cache_lock);
    }
#endif
    if (!b) return NULL;
#ifdef MADV_HUGEPAGE
    /* Huge pages only over the whole 2 MiB pages that every request of this class writes:
     * a huge page is resident in full once touched, so advising the block's tail as well
     * made a 6.3 MB tensor (class 7 MiB, block 8 MiB) cost 8 MiB of memory. */
    size_t huge = (least + PF_HEADER) / PF_HUGE * PF_HUGE;
    if (align == PF_HUGE && huge) madvise(b, huge, MADV_HUGEPAGE);
#endif
    b->size = size;
    b->cls = cls;
    return (char *)b + PF_HEADER;
}

/* The cache bound: 1 GiB, or 1/16 of the machine's memory when that is less, so that freed
 * blocks never hold a large share of a small machine. Computed once, under the lock. */
static size_t cache_limit;

static size_t compute_cache_limit(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return PF_CACHE_MAX;
    size_t share = (size_t)pages / PF_CACHE_SHARE * (size_t)page;
    return share < PF_CACHE_MAX ? share : PF_CACHE_MAX;
}

size_t pf_cache_limit(void) {
    pthread_mutex_lock(&cache_lock);
    if (!cache_limit) cache_limit = compute_cache_limit();
    size_t n = cache_limit;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

size_t pf_cached_bytes(void) {
    pthread_mutex_lock(&cache_lock);
    size_t n = cached_bytes;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

void pf_free(void *ptr) {
    if (!ptr) return;
    block *b = (block *)((char *)ptr - PF_HEADER);
#ifndef __SANITIZE_ADDRESS__
    pthread_mutex_lock(&cache_lock);
    if (!cache_limit) cache_limit = compute_cache_limit();
    live_bytes -= b->size;
    int keep = cached_bytes + b->size <= cache_limit;
    if (keep) {
        b->next = free_lists[b->cls];
        free_lists[b->cls] = b;
        cached_bytes += b->size;
    }
    pthread_mutex_unlock(&cache_lock);
    if (keep) return;
#endif
    free(b);
}

void pf_empty_cache(void) {
    pthread_mutex_lock(&cache_lock);
    release_cached();
    pthread_mutex_unlock(&cache_lock);
}

void pf_memory_stats(int64_t out[3]) {
    pthread_mutex_lock(&cache_lock);
    out[0] = (int64_t)live_bytes;
    out[1] = (int64_t)peak_live;
    out[2] = (int64_t)cached_bytes;
    pthread_mutex_unlock(&cache_lock);
}

void pf_reset_peak(void) {
    pthread_mutex_lock(&cache_lock);
    peak_live = live_bytes;
    pthread_mutex_unlock(&cache_lock);
}
