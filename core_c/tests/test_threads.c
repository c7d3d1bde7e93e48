/* threads.c and core.h's team helpers: pf_parallel_range covers its range once, whatever the
 * team, and stays out of OpenMP when serial; the busy-machine fallback: a lone late worker
 * and a lone lossy window change nothing, two windows slower than serial make pf_threads()
 * answer 1 for the backoff, and the set count stays what the user set. */
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

/* Regions on a clock of their own, starting now: each begins where the last one ended, took
 * `wall` ns, and its threads spent `work` ns of CPU time on their parts. */
static int64_t clock_ns;
static void region(int64_t wall, int64_t work) {
    pf_team tm;
    tm.t0 = clock_ns;
    tm.end = clock_ns += wall;
    tm.work = work;
    pf_team_finish(&tm);
}

/* A serial spell lasts 50 ms past the last region's end, on that clock. On a loaded
 * machine this process may be descheduled longer than that between two lines, and then the
 * spell has rightly ended: a check of it only counts when it ran before the spell's end. */
#define SPELL_NS 50000000
static int serial_or_expired(void) { return pf_threads() == 1 || now() >= clock_ns + SPELL_NS; }

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
    clock_ns = now();
    region(30000, 20000); /* a 20 us wake-up: two threads of 10 us took 30 */
    CHECK(pf_threads() == 4, "a wake-up changed the count to %d", pf_threads());
    region(10000000, 20000000); /* two threads did 20 ms of work in 10 */
    region(8000000, 20000);      /* a worker lost 8 ms: the window ends, still 2 ms ahead */
    CHECK(pf_threads() == 4, "a lone late worker changed the count to %d", pf_threads());
    for (int i = 0; i < 4; i++) region(4000000, 200000); /* workers wait a slice in every region */
    CHECK(pf_threads() == 4, "one window slower than serial changed the count to %d", pf_threads());
    for (int i = 0; i < 4; i++) region(4000000, 200000); /* and in the next window too */
    CHECK(serial_or_expired(), "two windows slower than serial left %d threads", pf_threads());
    CHECK(pf_get_num_threads() == 4, "the set count changed to %d", pf_get_num_threads());
    /* a real region still runs (serial now) and records nothing wrong */
    pf_team tm;
    pf_team_start(&tm);
#pragma omp parallel num_threads(2)
    pf_team_done(&tm, pf_team_enter());
    pf_team_finish(&tm);
    CHECK(serial_or_expired(), "the serial spell ended early: %d", pf_threads());
    /* last: teams of more threads than cores may trip the busy-machine fallback checked above */
    check_range(1, 1000);
    check_range(4, 0);
    check_range(4, 1);
    check_range(4, 3);
    check_range(4, 1000);
    check_range(3, 1000);
    return pf_test_summary("test_threads");
}
