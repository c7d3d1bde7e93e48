/* Reduction family (pf_reduce, its lean row form pf_reduce_rows) and dot (pf_dot).
 *
 * x's first k = ndim - nred dims index the outputs; its last nred dims are the "block"
 * each output reduces: R elements with any strides. Three drivers share the kernels:
 *  - rows: threads split the outputs and reduce whole blocks (many outputs);
 *  - items: few outputs with long blocks; threads split (output, chunk) pairs, so one
 *    long reduction still uses every core;
 *  - columns: the outputs' last dim is contiguous in x but the block is not (sum over
 *    dim 0 of [N, C]); block rows are added into a tile of per-output accumulators, so
 *    memory is read in order instead of with a stride of C.
 * A block's value is its fixed-size CHUNKs' partials merged in chunk order, whichever
 * thread computed them, so rows and items agree bit for bit for any thread count (the
 * columns driver accumulates each output in block order, also independent of threads).
 * Inner loops keep LANES independent accumulators, which gcc vectorizes without
 * -ffast-math: no reassociation is needed, and NaN still propagates. */
#include <math.h>
#include "core.h"

/* accumulators per run kernel: 16 doubles are two AVX-512 registers */
#define LANES 16
/* Float sums take blocks of WIDE elements into WIDE lanes, folded into LANES before the
 * rest of the run: the float-to-double conversions, not the adds, bound these loops,
 * and the wide blocks leave the core free to run PF_AHEAD bytes ahead of itself with
 * software prefetches (the hardware's stream prefetcher alone left a 1e7 float32 sum
 * about 25% short of what memory delivers). Runs shorter than WIDE_MIN keep LANES lanes. */
#define WIDE 32
#define WIDE_MIN 256
#define PF_AHEAD 16384
#if defined(__GNUC__)
/* an address past the run is fine: a prefetch never faults */
#define PREFETCH(addr) __builtin_prefetch((const void *)(addr))
#else
#define PREFETCH(addr) ((void)(addr))
#endif
/* Partials are per CHUNK positions of a block: big enough that merging them is noise,
 * small enough that a 1e7-element reduction splits over many threads. */
#define CHUNK 32768
/* columns driver: accumulators per tile (8 KiB of doubles, stays in L1), and the
 * narrowest contiguous output dim worth it */
#define COL_TILE 1024
#define COL_MIN 16

static const char *const op_name[] = {[PF_SUM] = "sum",   [PF_MEAN] = "mean",     [PF_MAX] = "max",
                                      [PF_MIN] = "min",   [PF_ARGMAX] = "argmax", [PF_ARGMIN] = "argmin",
                                      [PF_VAR] = "var",   [PF_PROD] = "prod",     [PF_ANY] = "any",
                                      [PF_ALL] = "all"};
_Static_assert(sizeof op_name / sizeof op_name[0] == PF_NUM_REDUCE, "a reduction without its name");

/* What a pass accumulates; VAR runs FSUM (for the mean), then FSS. */
enum { K_FSUM, K_FSS, K_FPROD, K_ISUM, K_IPROD, K_NZ, K_MAX, K_MIN };

/* ---- run kernels: n elements from p with element stride s ---- */

#define LD_f32(e) (e)
#define LD_f64(e) (e)
#define LD_f16(e) pf_h2f_vec(e)
#define LD_i64(e) (e)
#define LD_i32(e) (e)
#define LD_b8(e) (e)
#define LD_bf16(e) pf_bf2f(e)
#define LD_u8(e) (e)
#define LD_i8(e) (e)
#define LD_i16(e) (e)
/* nonzero; a float16 is zero when every bit but the sign is, and NaN is nonzero */
#define NZ_f32(e) ((e) != 0)
#define NZ_f64(e) ((e) != 0)
#define NZ_f16(e) (((e) & 0x7fff) != 0)
#define NZ_i64(e) ((e) != 0)
#define NZ_i32(e) ((e) != 0)
#define NZ_b8(e) ((e) != 0)
#define NZ_bf16(e) (((e) & 0x7fff) != 0)
#define NZ_u8(e) ((e) != 0)
#define NZ_i8(e) ((e) != 0)
#define NZ_i16(e) ((e) != 0)

/* Runs STEP over a run's full blocks of L elements from index i (declared by the
 * caller): element e, index i + j in the run, lane j. Element k goes to lane k % L
 * whatever the stride, so strided and contiguous runs give identical results; the
 * contiguous case has its own loop so that gcc vectorizes it. TAIL_LOOP then visits the
 * n % L elements left, from index i. */
#define BLOCK_LOOP_FROM(L, T, STEP)                                                      \
    if (s == 1)                                                                          \
        for (; i + L <= n; i += L)                                                       \
            for (int j = 0; j < L; j++) { T e = p[i + j]; STEP; }                        \
    for (; i + L <= n; i += L)                                                           \
        for (int j = 0; j < L; j++) { T e = p[(i + j) * s]; STEP; }
#define BLOCK_LOOP(L, T, STEP)                                                           \
    int64_t i = 0;                                                                       \
    BLOCK_LOOP_FROM(L, T, STEP)
#define TAIL_LOOP(T, STEP) for (; i < n; i++) { T e = p[i * s]; STEP; }

/* Lanes combine pairwise in a fixed order and the tail is added to that in order: a
 * short run (the last dim of a [1e6, 10] tensor) then costs a few scalar adds, where
 * tail elements spread over the lanes cost a store-forwarding stall. */
static inline double lanes_sum(double *a) {
    for (int w = LANES / 2; w; w /= 2)
        for (int j = 0; j < w; j++) a[j] += a[j + w];
    return a[0];
}
/* WIDE lanes folded into the first LANES, in a fixed order */
static inline void fold_wide(double *a) {
    for (int w = WIDE / 2; w >= LANES; w /= 2)
        for (int j = 0; j < w; j++) a[j] += a[j + w];
}
static inline double lanes_prod(double *a) {
    for (int w = LANES / 2; w; w /= 2)
        for (int j = 0; j < w; j++) a[j] *= a[j + w];
    return a[0];
}
/* integer sums and products wrap (unsigned, so without undefined behaviour), as torch */
static inline uint64_t lanes_usum(uint64_t *a) {
    uint64_t r = 0;
    for (int j = 0; j < LANES; j++) r += a[j];
    return r;
}
static inline uint64_t lanes_uprod(uint64_t *a) {
    uint64_t r = 1;
    for (int j = 0; j < LANES; j++) r *= a[j];
    return r;
}

typedef double (*f_run)(const void *, int64_t, int64_t, double);
typedef uint64_t (*u_run)(const void *, int64_t, int64_t);
typedef int64_t (*best_run)(const void *, int64_t, int64_t);

/* m: the mean, for the squared deviations. Runs of WIDE_MIN or more sum in fsum_wide:
 * kept apart, its wide loop and lanes would cost a short run (a row of 50) a few ns. */
#define FLOAT_RUNS(sfx, T)                                                               \
    __attribute__((noinline)) PF_VEC_CLONES static double fsum_wide_##sfx(const T *p, int64_t s, int64_t n) { \
        double a[WIDE] = {0};                                                            \
        int64_t i = 0;                                                                   \
        if (s == 1)                                                                      \
            for (; i + WIDE <= n; i += WIDE) {                                           \
                for (int l = 0; l < WIDE * (int)sizeof(T); l += 64)                      \
                    PREFETCH((uintptr_t)(p + i) + PF_AHEAD + l);                         \
                for (int j = 0; j < WIDE; j++) a[j] += LD_##sfx(p[i + j]);               \
            }                                                                            \
        for (; i + WIDE <= n; i += WIDE)                                                 \
            for (int j = 0; j < WIDE; j++) a[j] += LD_##sfx(p[(i + j) * s]);             \
        fold_wide(a);                                                                    \
        BLOCK_LOOP_FROM(LANES, T, a[j] += LD_##sfx(e))                                   \
        double r = lanes_sum(a);                                                         \
        TAIL_LOOP(T, r += LD_##sfx(e))                                                   \
        return r;                                                                        \
    }                                                                                    \
    PF_VEC_CLONES static double fsum_##sfx(const void *pv, int64_t s, int64_t n, double m) { \
        const T *p = pv;                                                                 \
        (void)m;                                                                         \
        if (n >= WIDE_MIN) return fsum_wide_##sfx(p, s, n);                              \
        double a[LANES] = {0};                                                           \
        BLOCK_LOOP(LANES, T, a[j] += LD_##sfx(e))                                        \
        double r = lanes_sum(a);                                                         \
        TAIL_LOOP(T, r += LD_##sfx(e))                                                   \
        return r;                                                                        \
    }                                                                                    \
    PF_VEC_CLONES static double fss_##sfx(const void *pv, int64_t s, int64_t n, double m) { \
        const T *p = pv;                                                                 \
        double a[LANES] = {0};                                                           \
        BLOCK_LOOP(LANES, T, double d = LD_##sfx(e) - m; a[j] += d * d)                  \
        double r = lanes_sum(a);                                                         \
        TAIL_LOOP(T, double d = LD_##sfx(e) - m; r += d * d)                             \
        return r;                                                                        \
    }                                                                                    \
    PF_VEC_CLONES static double fprod_##sfx(const void *pv, int64_t s, int64_t n, double m) { \
        const T *p = pv;                                                                 \
        double a[LANES];                                                                 \
        (void)m;                                                                         \
        for (int j = 0; j < LANES; j++) a[j] = 1;                                        \
        BLOCK_LOOP(LANES, T, a[j] *= LD_##sfx(e))                                        \
        double r = lanes_prod(a);                                                        \
        TAIL_LOOP(T, r *= LD_##sfx(e))                                                   \
        return r;                                                                        \
    }

#define INT_RUNS(sfx, T)                                                                 \
    PF_VEC_CLONES static uint64_t isum_##sfx(const void *pv, int64_t s, int64_t n) {     \
        const T *p = pv;                                                                 \
        uint64_t a[LANES] = {0};                                                         \
        BLOCK_LOOP(LANES, T, a[j] += (uint64_t)(int64_t)e)                               \
        uint64_t r = lanes_usum(a);                                                      \
        TAIL_LOOP(T, r += (uint64_t)(int64_t)e)                                          \
        return r;                                                                        \
    }                                                                                    \
    PF_VEC_CLONES static uint64_t iprod_##sfx(const void *pv, int64_t s, int64_t n) {    \
        const T *p = pv;                                                                 \
        uint64_t a[LANES];                                                               \
        for (int j = 0; j < LANES; j++) a[j] = 1;                                        \
        BLOCK_LOOP(LANES, T, a[j] *= (uint64_t)(int64_t)e)                               \
        uint64_t r = lanes_uprod(a);                                                     \
        TAIL_LOOP(T, r *= (uint64_t)(int64_t)e)                                          \
        return r;                                                                        \
    }

/* Position of the first max (NOT_WORSE <=) or min (>=) of a run, 1 <= n <= CHUNK; a NaN
 * beats any number, and the first NaN wins. Every lane keeps its best and where it was
 * (IT: as wide as the values, so compare and blend vectorize together; int32 is enough
 * within a chunk); the tail's elements go to lanes 0, 1, ... too (all in lane 0, one
 * dependent chain, they were a third of a 1,400-long row's time). BLANES lanes, more than
 * sums take, give enough independent compare-and-blend chains to keep up with memory. Ties
 * between lanes go to the smaller position. */
#define BLANES 64
/* x beats y: for max (NOT_WORSE <=) x > y, or x NaN and y not; for min (>=) x < y, or
 * x NaN and y not. Written so, gcc vectorizes it both in lanes and in columns. */
#define BEATS(x, y, NOT_WORSE) (!((x) NOT_WORSE (y)) && (y) == (y))
#define BEST_STEP(j, idx, IT, NOT_WORSE)                                                 \
    int c = BEATS(x, b[j], NOT_WORSE);                                                   \
    b[j] = c ? x : b[j];                                                                 \
    bi[j] = c ? (IT)(idx) : bi[j]
#define BEST_RUN(name, sfx, T, V, IT, NOT_WORSE)                                         \
    PF_VEC_CLONES static int64_t name(const void *pv, int64_t s, int64_t n) {            \
        const T *p = pv;                                                                 \
        V b[BLANES];                                                                     \
        IT bi[BLANES];                                                                   \
        for (int j = 0; j < BLANES; j++) b[j] = LD_##sfx(p[0]), bi[j] = 0;               \
        BLOCK_LOOP(BLANES, T, V x = LD_##sfx(e); BEST_STEP(j, i + j, IT, NOT_WORSE))     \
        for (int j = 0; j < n - i; j++) {                                                \
            V x = LD_##sfx(p[(i + j) * s]);                                               \
            BEST_STEP(j, i + j, IT, NOT_WORSE);                                           \
        }                                                                                \
        V m = b[0];                                                                      \
        IT k = bi[0];                                                                    \
        for (int j = 1; j < BLANES; j++) {                                               \
            int tie = b[j] == m || (b[j] != b[j] && m != m);                             \
            if (BEATS(b[j], m, NOT_WORSE) || (tie && bi[j] < k)) m = b[j], k = bi[j];    \
        }                                                                                \
        return k;                                                                        \
    }

#define ALL_RUNS(sfx, T, V, IT)                                                          \
    PF_VEC_CLONES static uint64_t nz_##sfx(const void *pv, int64_t s, int64_t n) {       \
        const T *p = pv;                                                                 \
        uint64_t a[LANES] = {0};                                                         \
        BLOCK_LOOP(LANES, T, a[j] += NZ_##sfx(e))                                        \
        uint64_t r = lanes_usum(a);                                                      \
        TAIL_LOOP(T, r += NZ_##sfx(e))                                                   \
        return r;                                                                        \
    }                                                                                    \
    BEST_RUN(max_##sfx, sfx, T, V, IT, <=)                                               \
    BEST_RUN(min_##sfx, sfx, T, V, IT, >=)

/* ---- column kernels: acc[v] op= row[v] for v < w, over nr rows rs elements apart ---- */

typedef void (*fcol_run)(const void *, int64_t, int64_t, int64_t, double *restrict, const double *restrict);
typedef void (*ucol_run)(const void *, int64_t, int64_t, int64_t, uint64_t *restrict);
typedef void (*bcol_run)(const void *, int64_t, int64_t, int64_t, void *restrict, int64_t *restrict, int64_t);

/* Rows in order, COL_ROWS of them per sweep over the tile, so each column's state is
 * loaded and stored once per COL_ROWS rows (the order, and so every rounding, is that
 * of one row at a time): LOAD brings column v's state into locals, STEP takes element e
 * of row r + k, SAVE writes the state back. */
#define COL_ROWS 8
#define COL_SWEEP(T, LOAD, STEP, SAVE)                                                   \
    int64_t r = 0;                                                                       \
    for (; r + COL_ROWS <= nr; r += COL_ROWS) {                                          \
        const T *restrict q = p + r * rs;                                                \
        for (int64_t v = 0; v < w; v++) {                                                \
            LOAD;                                                                        \
            for (int k = 0; k < COL_ROWS; k++) { T e = q[k * rs + v]; STEP; }            \
            SAVE;                                                                        \
        }                                                                                \
    }                                                                                    \
    for (; r < nr; r++) {                                                                \
        const T *restrict q = p + r * rs;                                                \
        for (int64_t v = 0; v < w; v++) {                                                \
            LOAD;                                                                        \
            for (int k = 0; k < 1; k++) { T e = q[v]; STEP; }                            \
            SAVE;                                                                        \
        }                                                                                \
    }
/* a[v] = a[v] OP X, X an expression of element e (and column v) */
#define COL_FOLD(T, A, OP, X) COL_SWEEP(T, A t = a[v], t = t OP (X), a[v] = t)

#define FLOAT_COLS(sfx, T)                                                               \
    PF_VEC_CLONES static void cfsum_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                    double *restrict a, const double *restrict m) {      \
        const T *p = pv;                                                                 \
        (void)m;                                                                         \
        COL_FOLD(T, double, +, LD_##sfx(e))                                              \
    }                                                                                    \
    PF_VEC_CLONES static void cfss_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                   double *restrict a, const double *restrict m) {       \
        const T *p = pv;                                                                 \
        COL_FOLD(T, double, +, (LD_##sfx(e) - m[v]) * (LD_##sfx(e) - m[v]))              \
    }                                                                                    \
    PF_VEC_CLONES static void cfprod_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                     double *restrict a, const double *restrict m) {     \
        const T *p = pv;                                                                 \
        (void)m;                                                                         \
        COL_FOLD(T, double, *, LD_##sfx(e))                                              \
    }

#define INT_COLS(sfx, T)                                                                 \
    PF_VEC_CLONES static void cisum_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                    uint64_t *restrict a) {                              \
        const T *p = pv;                                                                 \
        COL_FOLD(T, uint64_t, +, (uint64_t)(int64_t)e)                                   \
    }                                                                                    \
    PF_VEC_CLONES static void ciprod_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                     uint64_t *restrict a) {                             \
        const T *p = pv;                                                                 \
        COL_FOLD(T, uint64_t, *, (uint64_t)(int64_t)e)                                   \
    }

/* gcc 12 keeps BEST_COL's AVX2 clone scalar when trapping math is off (as the build has it): the max over dim 0 of
 * a 1000 x 1400 float32 took 0.65 ms against 0.47 with it on. Its compares read no flags either way. */
#if defined(__GNUC__) && !defined(__clang__)
#define BEST_COL_OPT __attribute__((optimize("trapping-math")))
#else
#define BEST_COL_OPT
#endif
/* per column: best value so far in bv (compute type V) and its block position in bi;
 * strict comparison keeps the first occurrence */
#define BEST_COL(name, sfx, T, V, NOT_WORSE)                                             \
    PF_VEC_CLONES BEST_COL_OPT static void name(const void *pv, int64_t rs, int64_t nr,   \
                                                int64_t w, void *restrict bv,            \
                                                int64_t *restrict bi, int64_t pos) {     \
        const T *p = pv;                                                                 \
        V *restrict b = bv;                                                              \
        COL_SWEEP(T, V t = b[v]; int64_t ti = bi[v],                                     \
                  V x = LD_##sfx(e); int c = BEATS(x, t, NOT_WORSE);                     \
                  t = c ? x : t; ti = c ? pos + r + k : ti,                              \
                  b[v] = t; bi[v] = ti)                                                  \
    }

#define ALL_COLS(sfx, T, V)                                                              \
    PF_VEC_CLONES static void cnz_##sfx(const void *pv, int64_t rs, int64_t nr, int64_t w, \
                                  uint64_t *restrict a) {                                \
        const T *p = pv;                                                                 \
        COL_FOLD(T, uint64_t, +, (uint64_t)NZ_##sfx(e))                                  \
    }                                                                                    \
    BEST_COL(cmax_##sfx, sfx, T, V, <=)                                                  \
    BEST_COL(cmin_##sfx, sfx, T, V, >=)

/* Every dtype's kernels and table rows come from one list per kind:
 * X(arg, dtype code, suffix, storage type T, compute type V, max/min lane index type IT).
 * A float dtype gets the float sums and products, an integer (or bool) one the exact 64-bit ones; all get the
 * nonzero counts and max/min with their positions. */
#define FLOAT_DTYPES(X, arg)                              \
    X(arg, PF_FLOAT32, f32, float, float, int32_t)        \
    X(arg, PF_FLOAT64, f64, double, double, int64_t)      \
    X(arg, PF_FLOAT16, f16, uint16_t, float, int32_t)     \
    X(arg, PF_BFLOAT16, bf16, uint16_t, float, int32_t)
#define INT_DTYPES(X, arg)                                \
    X(arg, PF_INT64, i64, int64_t, int64_t, int64_t)      \
    X(arg, PF_INT32, i32, int32_t, int32_t, int32_t)      \
    X(arg, PF_BOOL, b8, uint8_t, uint8_t, int32_t)        \
    X(arg, PF_UINT8, u8, uint8_t, uint8_t, int32_t)       \
    X(arg, PF_INT8, i8, int8_t, int8_t, int32_t)          \
    X(arg, PF_INT16, i16, int16_t, int16_t, int32_t)
#define FLOAT_KERNELS(_, code, sfx, T, V, IT) \
    FLOAT_RUNS(sfx, T) FLOAT_COLS(sfx, T) ALL_RUNS(sfx, T, V, IT) ALL_COLS(sfx, T, V)
#define INT_KERNELS(_, code, sfx, T, V, IT) \
    INT_RUNS(sfx, T) INT_COLS(sfx, T) ALL_RUNS(sfx, T, V, IT) ALL_COLS(sfx, T, V)
FLOAT_DTYPES(FLOAT_KERNELS, _)
INT_DTYPES(INT_KERNELS, _)

/* Kernel tables indexed by dtype: the float kinds fill the float dtypes' rows, the integer kinds
 * the integer and bool rows, the rest every row. */
#define ENTRY(name, code, sfx, T, V, IT) [code] = name##_##sfx,
#define FLOAT_ENTRIES(name) FLOAT_DTYPES(ENTRY, name)
#define INT_ENTRIES(name) INT_DTYPES(ENTRY, name)
#define FLOAT_TABLE(name) {FLOAT_ENTRIES(name)}
#define INT_TABLE(name) {INT_ENTRIES(name)}
#define ALL_TABLE(name) {FLOAT_ENTRIES(name) INT_ENTRIES(name)}
_Static_assert(PF_BFLOAT16 == PF_NUM_DTYPES - 1 && PF_NUM_DTYPES == 10, "a dtype without reduction kernels");
static const f_run fsum_t[PF_NUM_DTYPES] = FLOAT_TABLE(fsum), fss_t[PF_NUM_DTYPES] = FLOAT_TABLE(fss),
                   fprod_t[PF_NUM_DTYPES] = FLOAT_TABLE(fprod);
static const u_run isum_t[PF_NUM_DTYPES] = INT_TABLE(isum), iprod_t[PF_NUM_DTYPES] = INT_TABLE(iprod),
                   nz_t[PF_NUM_DTYPES] = ALL_TABLE(nz);
static const best_run max_t[PF_NUM_DTYPES] = ALL_TABLE(max), min_t[PF_NUM_DTYPES] = ALL_TABLE(min);
static const fcol_run cfsum_t[PF_NUM_DTYPES] = FLOAT_TABLE(cfsum), cfss_t[PF_NUM_DTYPES] = FLOAT_TABLE(cfss),
                      cfprod_t[PF_NUM_DTYPES] = FLOAT_TABLE(cfprod);
static const ucol_run cisum_t[PF_NUM_DTYPES] = INT_TABLE(cisum), ciprod_t[PF_NUM_DTYPES] = INT_TABLE(ciprod),
                      cnz_t[PF_NUM_DTYPES] = ALL_TABLE(cnz);
static const bcol_run cmax_t[PF_NUM_DTYPES] = ALL_TABLE(cmax), cmin_t[PF_NUM_DTYPES] = ALL_TABLE(cmin);

/* ---- partials ---- */

typedef struct {
    double f;       /* float sums and products */
    uint64_t u;     /* integer sums and products, nonzero counts */
    int64_t pos;    /* max/min: block position of the best so far, -1 before any */
    const char *at; /* ... and its address */
} part;

typedef struct {
    int op, dt, odt, kind; /* kind of the first (for VAR: the mean) pass */
    int64_t isz, R, nch;
    double correction;
    pf_walk red;    /* the block's dims, positions relative to its first element */
    int single;     /* the block is one run of R elements, rs apart */
    int64_t rs;
} rctx;

static part part_init(int kind) {
    part a = {.f = kind == K_FPROD, .u = kind == K_IPROD, .pos = -1, .at = NULL};
    return a;
}

/* Whether element a strictly beats b: strict, so scanning in order keeps the first
 * occurrence; a NaN beats any number, not an earlier NaN. */
static int beats(int dt, const char *a, const char *b, int min) {
    if (pf_is_float(dt)) {
        double x = pf_load_f64(a, dt), y = pf_load_f64(b, dt);
        if (y != y) return 0;
        if (x != x) return 1;
        return min ? x < y : x > y;
    }
    int64_t x = pf_load_i64(a, dt), y = pf_load_i64(b, dt);
    return min ? x < y : x > y;
}

/* a := a combined with q, q coming later in the block */
static void merge(int dt, int kind, part *a, const part *q) {
    switch (kind) {
    case K_FSUM:
    case K_FSS: a->f += q->f; break;
    case K_FPROD: a->f *= q->f; break;
    case K_ISUM:
    case K_NZ: a->u += q->u; break;
    case K_IPROD: a->u *= q->u; break;
    default:
        if (q->pos >= 0 && (a->pos < 0 || beats(dt, q->at, a->at, kind == K_MIN))) {
            a->pos = q->pos;
            a->at = q->at;
        }
    }
}

/* adds the run of n elements at p (stride s), starting at block position pos */
static void add_run(const rctx *c, int kind, part *a, const char *p, int64_t s, int64_t n, int64_t pos, double m) {
    part q = part_init(kind);
    int dt = c->dt;
    switch (kind) {
    case K_FSUM: q.f = fsum_t[dt](p, s, n, m); break;
    case K_FSS: q.f = fss_t[dt](p, s, n, m); break;
    case K_FPROD: q.f = fprod_t[dt](p, s, n, m); break;
    case K_ISUM: q.u = isum_t[dt](p, s, n); break;
    case K_IPROD: q.u = iprod_t[dt](p, s, n); break;
    case K_NZ: q.u = nz_t[dt](p, s, n); break;
    default: {
        int64_t j = (kind == K_MAX ? max_t : min_t)[dt](p, s, n);
        q.pos = pos + j;
        q.at = p + j * s * c->isz;
    }
    }
    merge(dt, kind, a, &q);
}

/* Chunk ci of the block at base; w is the calling thread's copy of c->red. */
static part chunk(const rctx *c, int kind, pf_walk *w, const char *base, int64_t ci, double m) {
    int64_t b = ci * CHUNK, e = c->R - b < CHUNK ? c->R : b + CHUNK;
    part a = part_init(kind);
    if (c->R == 1) { /* nred = 0 is a copy: the kernels' setup would dominate */
        part q = {.pos = 0, .at = base};
        switch (kind) {
        case K_FSUM:
        case K_FPROD: q.f = pf_load_f64(base, c->dt); break;
        case K_FSS: q.f = (pf_load_f64(base, c->dt) - m) * (pf_load_f64(base, c->dt) - m); break;
        case K_ISUM:
        case K_IPROD: q.u = (uint64_t)pf_load_i64(base, c->dt); break;
        case K_NZ: q.u = pf_load_f64(base, c->dt) != 0; break;
        }
        merge(c->dt, kind, &a, &q);
        return a;
    }
    if (c->single) {
        add_run(c, kind, &a, base + b * c->rs * c->isz, c->rs, e - b, b, m);
        return a;
    }
    pf_walk_seek(w, b);
    for (int64_t pos = b; pos < e;) {
        int64_t n = pf_walk_run(w, e - pos);
        add_run(c, kind, &a, base + w->off[0], w->inner[0] / c->isz, n, pos, m);
        pos += n;
        pf_walk_advance(w, n);
    }
    return a;
}

static part block(const rctx *c, int kind, pf_walk *w, const char *base, double m) {
    part t = part_init(kind);
    for (int64_t ci = 0; ci < c->nch; ci++) {
        part q = chunk(c, kind, w, base, ci, m);
        merge(c->dt, kind, &t, &q);
    }
    return t;
}

/* Writes a block's result; t is the last pass's total (for VAR the squared deviations). */
static void store(const rctx *c, const part *t, char *o, char *ix) {
    switch (c->op) {
    case PF_SUM:
    case PF_PROD:
        if (pf_is_float(c->dt)) pf_store_f64(o, c->odt, t->f);
        else pf_store_i64(o, c->odt, (int64_t)t->u);
        break;
    case PF_MEAN: pf_store_f64(o, c->odt, t->f / (double)c->R); break;
    case PF_VAR: {
        double dof = (double)c->R - c->correction;
        pf_store_f64(o, c->odt, t->f / (dof > 0 ? dof : 0));
        break;
    }
    case PF_ANY: *(uint8_t *)o = t->u != 0; break;
    case PF_ALL: *(uint8_t *)o = t->u == (uint64_t)c->R; break;
    default: /* max, min, argmax, argmin */
        if (o) memcpy(o, t->at, (size_t)c->isz);
        if (ix) *(int64_t *)ix = t->pos;
    }
}

static void reduce_one(const rctx *c, pf_walk *w, const char *base, char *o, char *ix) {
    part t = block(c, c->kind, w, base, 0);
    if (c->op == PF_VAR) t = block(c, K_FSS, w, base, t.f / (double)c->R);
    store(c, &t, o, ix);
}

/* ---- drivers; ow walks the output space with operands x, out, idx ---- */

/* what the rows and columns drivers' threads share; V, vw, nvb: the columns driver's tiles */
typedef struct {
    const rctx *c;
    const pf_walk *ow;
    const char *xb;
    char *ob, *ib;
    int64_t V, vw, nvb;
} drive_job;

static void rows_part(void *arg, int64_t b, int64_t e) {
    const drive_job *j = arg;
    const rctx *c = j->c;
    pf_walk w = *j->ow, rw = c->red;
    pf_walk_seek(&w, b);
    for (int64_t pos = b; pos < e;) {
        int64_t n = pf_walk_run(&w, e - pos);
        for (int64_t k = 0; k < n; k++)
            reduce_one(c, &rw, j->xb + w.off[0] + k * w.inner[0], j->ob ? j->ob + w.off[1] + k * w.inner[1] : NULL,
                       j->ib ? j->ib + w.off[2] + k * w.inner[2] : NULL);
        pos += n;
        pf_walk_advance(&w, n);
    }
}

static void drive_rows(const rctx *c, const pf_walk *ow, const char *xb, char *ob, char *ib, int nt) {
    drive_job j = {c, ow, xb, ob, ib, 0, 0, 0};
    pf_parallel_range(nt, ow->numel, rows_part, &j);
}

/* One pass over every (output, chunk) item in parallel, then each output's partials are
 * merged in chunk order into tot[o]; m (per output) feeds the FSS pass. */
typedef struct {
    const rctx *c;
    int kind;
    const char *const *xo;
    const double *m;
    part *parts;
    int64_t nitems;
} items_job;

static void items_part(void *arg, int64_t b, int64_t e) {
    const items_job *j = arg;
    const rctx *c = j->c;
    pf_walk rw = c->red;
    for (int64_t it = b; it < e; it++) {
        int64_t o = it / c->nch;
        j->parts[it] = chunk(c, j->kind, &rw, j->xo[o], it % c->nch, j->m ? j->m[o] : 0);
    }
}

static void items_pass(const rctx *c, int kind, int64_t O, const char *const *xo, const double *m, part *parts,
                       part *tot, int nt) {
    items_job j = {c, kind, xo, m, parts, O * c->nch};
    pf_parallel_range(nt, j.nitems, items_part, &j);
    for (int64_t o = 0; o < O; o++) {
        tot[o] = part_init(kind);
        for (int64_t ci = 0; ci < c->nch; ci++) merge(c->dt, kind, &tot[o], &parts[o * c->nch + ci]);
    }
}

static int drive_items(const rctx *c, const pf_walk *ow, const char *xb, char *ob, char *ib, int nt) {
    int64_t O = ow->numel;
    part *parts = pf_alloc((size_t)(O * c->nch) * sizeof(part));
    part *tot = pf_alloc((size_t)O * sizeof(part));
    double *m = pf_alloc((size_t)O * sizeof(double));
    const char **xo = pf_alloc((size_t)O * sizeof(char *));
    if (!parts || !tot || !m || !xo) {
        pf_free(parts), pf_free(tot), pf_free(m), pf_free((void *)xo);
        return pf_error(PF_ERR_NOMEM, "%s(): out of memory for %lld partials", op_name[c->op],
                        (long long)(O * c->nch));
    }
    pf_walk w = *ow;
    for (int64_t o = 0; o < O; o++, pf_walk_advance(&w, 1)) xo[o] = xb + w.off[0];
    items_pass(c, c->kind, O, xo, NULL, parts, tot, nt);
    if (c->op == PF_VAR) {
        for (int64_t o = 0; o < O; o++) m[o] = tot[o].f / (double)c->R;
        items_pass(c, K_FSS, O, xo, m, parts, tot, nt);
    }
    pf_walk_seek(&w, 0);
    for (int64_t o = 0; o < O; o++, pf_walk_advance(&w, 1))
        store(c, &tot[o], ob ? ob + w.off[1] : NULL, ib ? ib + w.off[2] : NULL);
    pf_free(parts), pf_free(tot), pf_free(m), pf_free((void *)xo);
    return PF_OK;
}

/* all block positions, run by run, into a column tile of width w starting at xt */
#define COL_PASS(CALL)                                                                   \
    do {                                                                                 \
        pf_walk_seek(rw, 0);                                                             \
        for (int64_t pos = 0; pos < c->R;) {                                             \
            int64_t n = pf_walk_run(rw, c->R - pos);                                     \
            const char *p = xt + rw->off[0];                                             \
            int64_t rs = rw->inner[0] / c->isz;                                          \
            CALL;                                                                        \
            pos += n;                                                                    \
            pf_walk_advance(rw, n);                                                      \
        }                                                                                \
    } while (0)

/* One tile: w outputs whose block starts are consecutive in x (at xt); o and ix step
 * by os and is bytes. */
static void col_tile(const rctx *c, pf_walk *rw, const char *xt, int64_t w, char *o, int64_t os, char *ix,
                     int64_t is) {
    union {
        double f[COL_TILE];
        uint64_t u[COL_TILE];
        float f32[COL_TILE];
        int64_t i64[COL_TILE];
        int32_t i32[COL_TILE];
        int16_t i16[COL_TILE];
        int8_t i8[COL_TILE];
        uint8_t b8[COL_TILE];
    } acc;
    double m[COL_TILE];
    int64_t bi[COL_TILE];
    int dt = c->dt;
    switch (c->kind) {
    case K_FSUM:
    case K_FPROD:
        for (int64_t v = 0; v < w; v++) acc.f[v] = c->kind == K_FPROD;
        COL_PASS((c->kind == K_FSUM ? cfsum_t : cfprod_t)[dt](p, rs, n, w, acc.f, NULL));
        if (c->op == PF_VAR) {
            for (int64_t v = 0; v < w; v++) m[v] = acc.f[v] / (double)c->R, acc.f[v] = 0;
            COL_PASS(cfss_t[dt](p, rs, n, w, acc.f, m));
        }
        break;
    case K_ISUM:
    case K_IPROD:
    case K_NZ:
        for (int64_t v = 0; v < w; v++) acc.u[v] = c->kind == K_IPROD;
        COL_PASS((c->kind == K_ISUM ? cisum_t : c->kind == K_IPROD ? ciprod_t : cnz_t)[dt](p, rs, n, w, acc.u));
        break;
    default: /* K_MAX, K_MIN: start from block position 0 */
        for (int64_t v = 0; v < w; v++) {
            const char *e = xt + v * c->isz;
            bi[v] = 0;
            switch (dt) {
            case PF_FLOAT32: acc.f32[v] = *(const float *)e; break;
            case PF_FLOAT64: acc.f[v] = *(const double *)e; break;
            case PF_FLOAT16: acc.f32[v] = pf_h2f(*(const uint16_t *)e); break;
            case PF_BFLOAT16: acc.f32[v] = pf_bf2f(*(const uint16_t *)e); break;
            case PF_INT64: acc.i64[v] = *(const int64_t *)e; break;
            case PF_INT32: acc.i32[v] = *(const int32_t *)e; break;
            case PF_INT16: acc.i16[v] = *(const int16_t *)e; break;
            case PF_INT8: acc.i8[v] = *(const int8_t *)e; break;
            default: acc.b8[v] = *(const uint8_t *)e; break;
            }
        }
        COL_PASS((c->kind == K_MAX ? cmax_t : cmin_t)[dt](p, rs, n, w, &acc, bi, pos));
    }
    for (int64_t v = 0; v < w; v++) {
        char *ov = o ? o + v * os : NULL, *iv = ix ? ix + v * is : NULL;
        if (c->kind == K_MAX || c->kind == K_MIN) {
            if (iv) *(int64_t *)iv = bi[v];
            if (!ov) continue;
            switch (dt) {
            case PF_FLOAT32: *(float *)ov = acc.f32[v]; break;
            case PF_FLOAT64: *(double *)ov = acc.f[v]; break;
            case PF_FLOAT16: *(uint16_t *)ov = pf_f2h(acc.f32[v]); break;
            case PF_BFLOAT16: *(uint16_t *)ov = pf_f2bf(acc.f32[v]); break;
            case PF_INT64: *(int64_t *)ov = acc.i64[v]; break;
            case PF_INT32: *(int32_t *)ov = acc.i32[v]; break;
            case PF_INT16: *(int16_t *)ov = acc.i16[v]; break;
            case PF_INT8: *(int8_t *)ov = acc.i8[v]; break;
            default: *(uint8_t *)ov = acc.b8[v]; break;
            }
        } else {
            part t = part_init(c->kind);
            if (c->kind == K_FSUM || c->kind == K_FPROD) t.f = acc.f[v];
            else t.u = acc.u[v];
            store(c, &t, ov, iv);
        }
    }
}

static void cols_part(void *arg, int64_t b, int64_t e) {
    const drive_job *j = arg;
    pf_walk w = *j->ow, rw = j->c->red;
    for (int64_t tile = b; tile < e; tile++) {
        int64_t v0 = tile % j->nvb * j->vw, width = j->V - v0 < j->vw ? j->V - v0 : j->vw;
        pf_walk_seek(&w, tile / j->nvb * j->V + v0);
        col_tile(j->c, &rw, j->xb + w.off[0], width, j->ob ? j->ob + w.off[1] : NULL, w.inner[1],
                 j->ib ? j->ib + w.off[2] : NULL, w.inner[2]);
    }
}

static void drive_cols(const rctx *c, const pf_walk *ow, const char *xb, char *ob, char *ib, int nt) {
    int64_t V = ow->shape[ow->ndim - 1], P = ow->numel / V, vw = COL_TILE;
    if (P * ((V + vw - 1) / vw) < nt) { /* narrower tiles, so that every thread gets one */
        int64_t per = (nt + P - 1) / P;
        vw = ((V + per - 1) / per + 7) / 8 * 8;
    }
    drive_job j = {c, ow, xb, ob, ib, V, vw, (V + vw - 1) / vw};
    pf_parallel_range(nt, P * j.nvb, cols_part, &j);
}

/* ---- pf_reduce ---- */

/* out or idx: shape must be x's leading k dims */
static int check_result(const pf_tensor *t, const pf_tensor *x, int k, const char *name, const char *what) {
    int rc = pf_check(t, what);
    if (rc) return rc;
    int ok = t->ndim == k;
    for (int i = 0; ok && i < k; i++) ok = t->shape[i] == x->shape[i];
    if (ok) return PF_OK;
    pf_tensor lead = {.ndim = k};
    for (int i = 0; i < k; i++) lead.shape[i] = x->shape[i];
    char a[128], b[128], d[128];
    return pf_error(PF_ERR_VALUE, "%s(): %s shape %s does not match %s, the leading dims of input shape %s", name,
                    what, pf_shape_str(t, a), pf_shape_str(&lead, b), pf_shape_str(x, d));
}

static int check_dtypes(int op, int dt, int odt) {
    const char *name = op_name[op];
    switch (op) {
    case PF_SUM:
    case PF_PROD:
        /* a float input would need each element truncated first, as torch casts: Python's job */
        if (odt == PF_BOOL || (pf_is_float(dt) && !pf_is_float(odt)))
            return pf_error(PF_ERR_TYPE, "%s(): cannot write the %s of %s input as %s", name, name,
                            pf_dtype_name[dt], pf_dtype_name[odt]);
        break;
    case PF_MEAN:
    case PF_VAR:
        if (!pf_is_float(dt))
            return pf_error(PF_ERR_TYPE, "%s(): input dtype should be a floating point type, got %s", name,
                            pf_dtype_name[dt]);
        if (!pf_is_float(odt))
            return pf_error(PF_ERR_TYPE, "%s(): output dtype should be a floating point type, got %s", name,
                            pf_dtype_name[odt]);
        break;
    case PF_MAX:
    case PF_MIN:
        if (odt != dt)
            return pf_error(PF_ERR_TYPE, "%s(): output dtype %s differs from input dtype %s", name, pf_dtype_name[odt],
                            pf_dtype_name[dt]);
        break;
    case PF_ANY:
    case PF_ALL:
        if (odt != PF_BOOL)
            return pf_error(PF_ERR_TYPE, "%s(): output dtype should be bool, got %s", name, pf_dtype_name[odt]);
        break;
    }
    return PF_OK;
}

int pf_reduce(int op, const pf_tensor *x, int nred, pf_tensor *out, pf_tensor *idx, double correction) {
    int rc;
    if ((rc = pf_check(x, "reduce input"))) return rc;
    if (op < 0 || op >= PF_NUM_REDUCE) return pf_error(PF_ERR_VALUE, "unknown reduce op code %d", op);
    const char *name = op_name[op];
    if (nred < 0 || nred > x->ndim)
        return pf_error(PF_ERR_VALUE, "%s(): cannot reduce the last %d dims of a %d-d input", name, nred, x->ndim);
    int k = x->ndim - nred, arg = op == PF_ARGMAX || op == PF_ARGMIN;
    int best = arg || op == PF_MAX || op == PF_MIN;
    if (!best) idx = NULL;
    if (arg) out = NULL;
    else if ((rc = check_result(out, x, k, name, "output")) || (rc = check_dtypes(op, x->dtype, out->dtype)))
        return rc;
    if (arg && !idx) return pf_error(PF_ERR_VALUE, "%s(): missing index output", name);
    if (idx) {
        if ((rc = check_result(idx, x, k, name, "indices"))) return rc;
        if (idx->dtype != PF_INT64)
            return pf_error(PF_ERR_TYPE, "%s(): indices dtype should be int64, got %s", name, pf_dtype_name[idx->dtype]);
    }
    int64_t R = 1, O = 1;
    for (int i = 0; i < x->ndim; i++) *(i < k ? &O : &R) *= x->shape[i];
    if (best && R == 0) return pf_error(PF_ERR_RUNTIME, "%s(): cannot reduce over a zero-size dimension", name);
    if (O == 0) return PF_OK;

    int dt = x->dtype, fl = pf_is_float(dt);
    rctx c = {.op = op, .dt = dt, .odt = out ? out->dtype : PF_INT64, .isz = (int64_t)pf_dtype_size[dt], .R = R,
              .nch = (R + CHUNK - 1) / CHUNK, .correction = correction};
    switch (op) {
    case PF_SUM: c.kind = fl ? K_FSUM : K_ISUM; break;
    case PF_MEAN:
    case PF_VAR: c.kind = K_FSUM; break;
    case PF_PROD: c.kind = fl ? K_FPROD : K_IPROD; break;
    case PF_ANY:
    case PF_ALL: c.kind = K_NZ; break;
    case PF_MAX:
    case PF_ARGMAX: c.kind = K_MAX; break;
    default: c.kind = K_MIN; break;
    }

    /* The block's dims, outermost in memory first when the order cannot show (no
     * indices): a transposed full sum then walks memory in order. */
    int64_t rshape[PF_MAX_DIMS], rstr[PF_MAX_DIMS];
    for (int i = 0; i < nred; i++) {
        int64_t sh = x->shape[k + i], st = x->strides[k + i], ast = st < 0 ? -st : st;
        int j = i;
        for (; !idx && j > 0 && (rstr[j - 1] < 0 ? -rstr[j - 1] : rstr[j - 1]) < ast; j--)
            rshape[j] = rshape[j - 1], rstr[j] = rstr[j - 1];
        rshape[j] = sh, rstr[j] = st;
    }
    const int64_t *rs_ptr = rstr;
    size_t isz = (size_t)c.isz;
    pf_walk_init(&c.red, nred, rshape, 1, &rs_ptr, &isz);
    c.single = c.red.ndim == 1;
    c.rs = c.single ? c.red.inner[0] / c.isz : 0;

    int64_t oshape[PF_MAX_DIMS], ostr[3][PF_MAX_DIMS];
    for (int i = 0; i < k; i++) {
        oshape[i] = x->shape[i];
        ostr[0][i] = x->strides[i];
        ostr[1][i] = out ? out->strides[i] : 0;
        ostr[2][i] = idx ? idx->strides[i] : 0;
    }
    const int64_t *ost[3] = {ostr[0], ostr[1], ostr[2]};
    size_t osz[3] = {isz, out ? pf_dtype_size[out->dtype] : 1, sizeof(int64_t)};
    pf_walk ow;
    pf_walk_init(&ow, k, oshape, 3, ost, osz);

    const char *xb = x->data;
    char *ob = out ? out->data : NULL, *ib = idx ? idx->data : NULL;
    int nt = pf_threads_for(O * R);
    int64_t V = ow.shape[ow.ndim - 1];
    if (R > 1 && ow.inner[0] == c.isz && V >= COL_MIN && c.red.inner[0] != c.isz)
        drive_cols(&c, &ow, xb, ob, ib, nt);
    else if (nt > 1 && c.nch > 1 && O < 4 * nt)
        return drive_items(&c, &ow, xb, ob, ib, nt);
    else
        drive_rows(&c, &ow, xb, ob, ib, nt);
    return PF_OK;
}

/* ---- contiguous rows, for the lean paths ---- */

static pf_tensor row_result(void *data, int dtype, int64_t rows) {
    return (pf_tensor){.data = data, .dtype = dtype, .ndim = 1, .shape = {rows}, .strides = {1}};
}

int pf_reduce_rows(int op, int dtype, const void *x, int64_t rows, int64_t n, void *out, int out_dtype, void *idx,
                   double correction) {
    pf_tensor xd, od, id;
    int rc = pf_rows_desc("reduce", dtype, x, rows, n, &xd);
    if (rc) return rc;
    if (out_dtype < 0 || out_dtype >= PF_NUM_DTYPES)
        return pf_error(PF_ERR_TYPE, "reduce: unknown output dtype code %d", out_dtype);
    od = row_result(out, out_dtype, rows);
    id = row_result(idx, PF_INT64, rows);
    return pf_reduce(op, &xd, 1, out ? &od : NULL, idx ? &id : NULL, correction);
}

/* ---- dot ---- */

/* Products of two floats are exact in double, so float32 dot is as accurate as a double
 * sum; element k goes to lane k % LANES whatever the strides, as in the run kernels. With
 * both operands contiguous on an AVX2 CPU the 16 lanes are four registers of doubles: gcc
 * vectorized the plain loop over an accumulator array kept in memory, a store-to-load round
 * trip per block (0.70 us for 2,000 floats; generic vector types got 0.47, the conversions
 * split in halves; this 0.19). Same lanes, same multiply then add, so the same bits. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DOT_AVX2 __attribute__((target("avx2,fma")))
#define DOT_DENSE(sfx, T, LOAD4)                                                          \
    static DOT_AVX2 int64_t dot_dense_##sfx(const T *a, const T *b, int64_t n, double *acc) { \
        __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;                      \
        int64_t i = 0;                                                                    \
        for (; i + LANES <= n; i += LANES) {                                              \
            s0 = _mm256_add_pd(s0, _mm256_mul_pd(LOAD4(a + i), LOAD4(b + i)));            \
            s1 = _mm256_add_pd(s1, _mm256_mul_pd(LOAD4(a + i + 4), LOAD4(b + i + 4)));    \
            s2 = _mm256_add_pd(s2, _mm256_mul_pd(LOAD4(a + i + 8), LOAD4(b + i + 8)));    \
            s3 = _mm256_add_pd(s3, _mm256_mul_pd(LOAD4(a + i + 12), LOAD4(b + i + 12)));  \
        }                                                                                 \
        _mm256_storeu_pd(acc, s0), _mm256_storeu_pd(acc + 4, s1);                         \
        _mm256_storeu_pd(acc + 8, s2), _mm256_storeu_pd(acc + 12, s3);                    \
        return i;                                                                         \
    }
#define DOT_LOAD4_F32(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
DOT_DENSE(f32, float, DOT_LOAD4_F32)
DOT_DENSE(f64, double, _mm256_loadu_pd)
_Static_assert(LANES == 16, "dot_dense holds 16 lanes in four registers");
#define DOT_FAST(sfx)                                                                     \
    if (sa == 1 && sb == 1 && n >= LANES && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) \
        i = dot_dense_##sfx(a, b, n, acc);
#else
#define DOT_FAST(sfx)
#endif
#define DOT_RUN(sfx, T)                                                                  \
    PF_VEC_CLONES static double dot_##sfx(const T *a, int64_t sa, const T *b, int64_t sb, int64_t n) { \
        double acc[LANES] = {0};                                                         \
        int64_t i = 0;                                                                   \
        DOT_FAST(sfx)                                                                    \
        if (sa == 1 && sb == 1)                                                          \
            for (; i + LANES <= n; i += LANES) {                                         \
                _Pragma("omp simd") for (int j = 0; j < LANES; j++)                      \
                    acc[j] += (double)a[i + j] * (double)b[i + j];                       \
            }                                                                            \
        for (; i + LANES <= n; i += LANES)                                               \
            for (int j = 0; j < LANES; j++) acc[j] += (double)a[(i + j) * sa] * (double)b[(i + j) * sb]; \
        double r = lanes_sum(acc);                                                       \
        for (; i < n; i++) r += (double)a[i * sa] * (double)b[i * sb];                   \
        return r;                                                                        \
    }
DOT_RUN(f32, float)
DOT_RUN(f64, double)

int pf_dot(int dtype, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n, void *out) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "dot: expected float32 or float64, got dtype code %d", dtype);
    if (n < 0) return pf_error(PF_ERR_VALUE, "dot: negative length %lld", (long long)n);
    if (!out || (n && (!a || !b))) return pf_error(PF_ERR_VALUE, "dot: missing data");
    if (dtype == PF_FLOAT32) *(float *)out = (float)dot_f32(a, sa, b, sb, n);
    else *(double *)out = dot_f64(a, sa, b, sb, n);
    return PF_OK;
}
