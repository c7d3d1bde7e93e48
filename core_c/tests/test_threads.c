/* threads.c and core.h's team helpers: pf_parallel_range covers its range once, whatever the
 * team, and stays out of OpenMP when serial; the busy-machine fallback: a late worker makes
 * pf_threads() answer 1 for the backoff, the set count stays what the user set, and punctual
 * regions clear it. */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "core.h"
#include "check.h"

static int64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* a finished region whose last worker ended `lag_ns` after thread 0, which worked 10 us */
static void region(int64_t lag_ns) {
    pf_team tm;
    tm.t0 = now() - 10000 - (lag_ns > 0 ? lag_ns : 0);
    tm.main_end = tm.t0 + 10000;
    tm.main_cpu = 10000;
    tm.last_end = tm.main_end + lag_ns;
    pf_team_finish(&tm);
}

/* The serial spell lasts 50 ms from the late region's end. On a loaded machine this process
 * may be descheduled longer than that between two lines, and then the spell has rightly
 * ended: a check of it only counts when it ran within the spell. */
#define SPELL_NS 50000000
static int serial_or_expired(int64_t spell_start) {
    return pf_threads() == 1 || now() - spell_start >= SPELL_NS;
}

/* each index's visits, the calls, and whether any call ran inside a parallel region */
typedef struct {
    int visits[1000];
    int calls, in_region;
} range_seen;

static void visit(void *arg, int64_t b, int64_t e) {
    range_seen *r = arg;
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    for (int64_t i = b; i < e; i++) __atomic_add_fetch(&r->visits[i], 1, __ATOMIC_RELAXED);
#ifdef _OPENMP
    if (omp_in_parallel()) __atomic_store_n(&r->in_region, 1, __ATOMIC_RELAXED);
#endif
}

static void check_range(int nt, int64_t n) {
    static range_seen r;
    memset(&r, 0, sizeof r);
    pf_parallel_range(nt, n, visit, &r);
    int once = 1;
    for (int64_t i = 0; i < 1000; i++) once &= r.visits[i] == (i < n);
    CHECK(once, "nt %d, n %lld: an index visited other than once", nt, (long long)n);
    CHECK(r.calls <= (n < nt ? n : nt), "nt %d, n %lld: %d calls", nt, (long long)n, r.calls);
    if (nt <= 1 || n <= 1)
        CHECK(!r.in_region && r.calls == (n > 0), "nt %d, n %lld: serial work entered a region", nt, (long long)n);
}

int main(void) {

    pf_set_num_threads(4);
    CHECK(pf_threads() == 4, "threads %d before any region", pf_threads());
    region(20000); /* 20 us late: a wake-up, not a busy machine */
    CHECK(pf_threads() == 4, "a punctual worker changed the count to %d", pf_threads());
    int64_t spell = now(); /* the spell starts no earlier than this */
    region(5000000);       /* 5 ms late: the worker had no core */
    CHECK(serial_or_expired(spell), "a late worker left %d threads", pf_threads());
    CHECK(pf_get_num_threads() == 4, "the set count changed to %d", pf_get_num_threads());
    /* a real region still runs (serial now) and records nothing wrong */
    pf_team tm;
    pf_team_start(&tm);
#pragma omp parallel num_threads(2)
    pf_team_done(&tm);
    pf_team_finish(&tm);
    CHECK(serial_or_expired(spell), "the serial spell ended early: %d", pf_threads());
    /* last: teams of more threads than cores may trip the busy-machine fallback checked above */
    check_range(1, 1000);
    check_range(4, 0);
    check_range(4, 1);
    check_range(4, 3);
    check_range(4, 1000);
    check_range(3, 1000);
    return pf_test_summary("test_threads");
}
