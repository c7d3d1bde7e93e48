/* Errors, memory, threads, validation and the strided walker. */
#define _DEFAULT_SOURCE /* madvise, clock_gettime */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "core.h"

#define X_SIZE(code, type, sfx, isf) sizeof(type),
#define X_NAME(code, type, sfx, isf) #sfx,
const size_t pf_dtype_size[PF_NUM_DTYPES] = {PF_DTYPE_LIST(X_SIZE)};
static const char *const dtype_short[PF_NUM_DTYPES] = {PF_DTYPE_LIST(X_NAME)};
const char *const pf_dtype_name[PF_NUM_DTYPES] = {"float32", "float64", "float16", "int64", "int32", "bool"};
_Static_assert(sizeof(dtype_short) / sizeof(dtype_short[0]) == PF_NUM_DTYPES, "dtype list and PF_NUM_DTYPES differ");

/* ---- errors ---- */

static _Thread_local char last_error[512];

int pf_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *pf_last_error(void) { return last_error; }

const char *pf_shape_str(const pf_tensor *t, char *buf) {
    int n = 0;
    n += snprintf(buf + n, 128 - n, "[");
    for (int i = 0; i < t->ndim && i < PF_MAX_DIMS && n < 100; i++)
        n += snprintf(buf + n, 128 - n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    snprintf(buf + n, 128 - n, "]");
    return buf;
}

/* ---- memory ---- */

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

/* ---- threads ---- */

/* 0 = OpenMP's default. A global, not omp_set_num_threads: that ICV is per thread, and
 * Python threads other than the main one would not see it. */
static int g_threads;

void pf_set_num_threads(int n) { g_threads = n > 0 ? n : 0; }

static int set_threads(void) {
#ifdef _OPENMP
    return g_threads > 0 ? g_threads : omp_get_max_threads();
#else
    return 1;
#endif
}

/* A worker that finishes WORKER_LATE_NS later than thread 0 (beyond thread 0's own time)
 * did not get a core: a worker without one waits for a scheduler slice (milliseconds),
 * while on an idle machine a sleeping worker can take over 0.1 ms to wake, which at
 * 0.1 ms made the CNN step serial (2x slower) with nothing else running. Thread 0's own
 * preemption (wall time over twice its CPU time) keeps the tighter LATE_NS. */
#define LATE_NS 100000
#define WORKER_LATE_NS 1000000
/* After a late worker everything runs serial for the backoff, which doubles with each
 * late region up to BACKOFF_MAX and halves after CLEAN_RUN punctual ones: a busy spell
 * costs one late region per backoff, a false alarm on an idle machine BACKOFF_MIN. */
#define BACKOFF_MIN_NS 50000000
#define BACKOFF_MAX_NS 2000000000
#define CLEAN_RUN 64

static int64_t g_serial_until; /* ns; 0 = not busy */
static int64_t g_backoff;      /* 0 = BACKOFF_MIN_NS */
static int g_clean;             /* punctual regions since the last late one */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int pf_threads(void) {
    int64_t until = __atomic_load_n(&g_serial_until, __ATOMIC_RELAXED);
    if (until && now_ns() < until) return 1;
    return set_threads();
}

int pf_get_num_threads(void) { return set_threads(); }

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void pf_team_start(pf_team *tm) {
    tm->cpu0 = thread_cpu_ns();
    tm->t0 = now_ns();
    tm->main_end = tm->last_end = tm->main_cpu = 0;
}

void pf_team_done(pf_team *tm) {
    int64_t t = now_ns();
#ifdef _OPENMP
    if (omp_get_thread_num() == 0) {
        tm->main_end = t;
        tm->main_cpu = thread_cpu_ns() - tm->cpu0;
        return;
    }
#endif
    int64_t seen = __atomic_load_n(&tm->last_end, __ATOMIC_RELAXED);
    while (t > seen && !__atomic_compare_exchange_n(&tm->last_end, &seen, t, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void pf_team_finish(pf_team *tm) {
    if (!tm->main_end) return; /* serial build, or a region that never ran */
    /* relaxed atomics: concurrent callers (Python threads) may race on a decision, and
     * either outcome is valid */
    int64_t lag = tm->last_end - tm->main_end, own = tm->main_end - tm->t0;
    int64_t backoff = __atomic_load_n(&g_backoff, __ATOMIC_RELAXED);
    /* late worker, or thread 0 preempted during its own part (wall time well over CPU time) */
    if (lag > WORKER_LATE_NS + own || own > 2 * tm->main_cpu + LATE_NS) {
        backoff = !backoff ? BACKOFF_MIN_NS : backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
        __atomic_store_n(&g_backoff, backoff, __ATOMIC_RELAXED);
        __atomic_store_n(&g_clean, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_serial_until, tm->last_end + backoff, __ATOMIC_RELAXED);
    } else if (backoff && __atomic_add_fetch(&g_clean, 1, __ATOMIC_RELAXED) >= CLEAN_RUN) {
        __atomic_store_n(&g_clean, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_backoff, backoff / 2 < BACKOFF_MIN_NS ? 0 : backoff / 2, __ATOMIC_RELAXED);
    }
}

int pf_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

const char *pf_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

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
