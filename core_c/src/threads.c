/* Threads: the count parallel regions ask for, and the busy-machine detector that drops it to
 * one while other processes hold the cores (core.h explains the rules; pf_run_team and
 * pf_parallel_range there are the regions themselves). */
#define _DEFAULT_SOURCE /* clock_gettime */
#include <time.h>
#include "core.h"

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
