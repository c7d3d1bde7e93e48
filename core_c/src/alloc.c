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
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Size class of n bytes and its rounded size: 64-byte steps up to 4 KiB, then four
 * classes per power of two (at most 25% slack). */
static int size_class(size_t n, size_t *rounded) {
    if (n <= 4096) {
        size_t c = n ? (n + 63) / 64 : 1;
        *rounded = c * 64;
        return (int)c - 1;
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k <= n - 1 < 2^(k+1) */
    size_t q = (n - 1) >> (k - 2);                             /* 4..7 */
    *rounded = (q + 1) << (k - 2);
    return 64 + (k - 12) * 4 + (int)(q - 4);
}

void *pf_alloc(size_t nbytes) {
    if (nbytes > ((size_t)1 << 60)) return NULL;
    size_t size;
    int cls = size_class(nbytes, &size);
    block *b = NULL;
#ifndef __SANITIZE_ADDRESS__
    pthread_mutex_lock(&cache_lock);
    b = free_lists[cls];
    if (b) {
        free_lists[cls] = b->next;
        cached_bytes -= b->size;
    }
    pthread_mutex_unlock(&cache_lock);
    if (b) return (char *)b + PF_HEADER;
#endif
    size_t total = size + PF_HEADER, align = total >= PF_HUGE ? PF_HUGE : 64;
    total = (total + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple of the alignment */
    b = aligned_alloc(align, total);
    if (!b) return NULL;
#ifdef MADV_HUGEPAGE
    if (align == PF_HUGE) madvise(b, total, MADV_HUGEPAGE);
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
    for (int c = 0; c < PF_CLASSES; c++) {
        while (free_lists[c]) {
            block *b = free_lists[c];
            free_lists[c] = b->next;
            free(b);
        }
    }
    cached_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
}
