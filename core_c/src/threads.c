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

/* Parallel pays while a region's wall time stays under its threads' CPU time (the same
 * work done serially). Regions are judged together, a window of WINDOW_NS of their wall
 * time at a time (the serial code between them does not count): a team whose workers get
 * no cores waits a scheduler slice (milliseconds) in every region, and window after window
 * takes longer than its CPU time. A lone hiccup (an interrupt, a nice-19 compiler's slice,
 * a sleeping worker's wake-up) costs less than the other regions gained; with nice-19
 * builds on both cores 2-8% of windows still come out lossy, and a sleeping team's first
 * window after a serial spell pays its wake-ups, so it takes two lossy windows in a row. */
#define WINDOW_NS 16000000
/* After two lossy windows everything runs serial for the backoff, which doubles with each
 * lossy probe up to BACKOFF_MAX and halves after CLEAN_RUN regions that paid: a busy
 * spell costs two windows per backoff, a false alarm BACKOFF_MIN. */
#define BACKOFF_MIN_NS 50000000
#define BACKOFF_MAX_NS 2000000000
#define CLEAN_RUN 64

static int64_t g_serial_until; /* ns; 0 = not busy */
static int64_t g_backoff;      /* 0 = BACKOFF_MIN_NS */
static int g_clean;             /* regions that paid since the last lossy window */
static int64_t g_win_wall;      /* the window's regions' wall time so far, ns */
static int64_t g_win_net;       /* their wall time minus their CPU time, ns */
static int g_lossy;             /* the last window took longer than its CPU time */

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
    tm->t0 = now_ns();
    tm->end = tm->work = 0;
}

int64_t pf_team_enter(void) { return thread_cpu_ns(); }

void pf_team_done(pf_team *tm, int64_t entered) {
    int64_t t = now_ns();
    __atomic_add_fetch(&tm->work, thread_cpu_ns() - entered, __ATOMIC_RELAXED);
    int64_t seen = __atomic_load_n(&tm->end, __ATOMIC_RELAXED);
    while (t > seen && !__atomic_compare_exchange_n(&tm->end, &seen, t, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void pf_team_finish(pf_team *tm) {
    if (!tm->end) return; /* serial build, or a region that never ran */
    /* relaxed atomics: concurrent callers (Python threads) may race on a decision, and
     * either outcome is valid */
    int64_t wall = tm->end - tm->t0;
    int64_t win = __atomic_load_n(&g_win_wall, __ATOMIC_RELAXED) + wall;
    int64_t net = __atomic_load_n(&g_win_net, __ATOMIC_RELAXED) + wall - tm->work;
    int64_t backoff = __atomic_load_n(&g_backoff, __ATOMIC_RELAXED);
    if (win < WINDOW_NS) {
        __atomic_store_n(&g_win_wall, win, __ATOMIC_RELAXED);
        __atomic_store_n(&g_win_net, net, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&g_win_wall, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_win_net, 0, __ATOMIC_RELAXED);
        int lossy = net > 0, was = __atomic_exchange_n(&g_lossy, lossy, __ATOMIC_RELAXED);
        if (lossy && was) {
            backoff = !backoff ? BACKOFF_MIN_NS : backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
            __atomic_store_n(&g_backoff, backoff, __ATOMIC_RELAXED);
            __atomic_store_n(&g_clean, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&g_serial_until, tm->end + backoff, __ATOMIC_RELAXED);
            __atomic_store_n(&g_lossy, 0, __ATOMIC_RELAXED); /* the probe after the spell needs two too */
            return;
        }
    }
    if (backoff && wall <= tm->work && __atomic_add_fetch(&g_clean, 1, __ATOMIC_RELAXED) >= CLEAN_RUN) {
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
