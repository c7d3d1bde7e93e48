/* GEMM family: batched matmul over strided tensors.
 *
 * float32 and float64 use the BLIS/Goto scheme: jc (NC) -> pc (KC) -> pack B -> ic (MC)
 * -> pack A -> jr (NR) -> ir (MR) -> micro-kernel on an MR x NR tile of C. Packing reads
 * through element strides, so transposed and broadcast views cost nothing extra. Kernels
 * always compute whole MR x NR tiles and store only the valid part, so packing zero-pads
 * edge panels (zeros, not leftover bytes that could be slow denormals). Small or short
 * products read B in place instead of packing it, and a single row or column (M or N = 1)
 * takes matrix-vector loops. The kernel set (AVX-512, AVX2 or portable C) is picked at
 * run time: the build has no -march. Integer dtypes take a plain correct loop.
 *
 * Measured on 2 Zen 5 cores (AVX-512 peak 472 GFLOP/s): float32 400-470 GFLOP/s for
 * n = 256..2048, about 2x NumPy/OpenBLAS there; see core_c/tests/bench_gemm.c. */
#include <stdio.h>
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PF_X86 1
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define T256 __attribute__((target("avx2,fma")))
#endif

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- path selection ------------------------------------------------------------- */

enum { PATH_PORTABLE, PATH_AVX2, PATH_AVX512, NUM_PATHS };
static const char *const path_name[] = {[PATH_PORTABLE] = "portable", [PATH_AVX2] = "avx2", [PATH_AVX512] = "avx512"};
_Static_assert(sizeof path_name / sizeof path_name[0] == NUM_PATHS, "a GEMM path without its name");
static int g_path = -1; /* -1 until the first use; read and written atomically */

static int path_supported(int p) {
#ifdef PF_X86
    __builtin_cpu_init();
    if (p == PATH_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("fma");
    if (p == PATH_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return p == PATH_PORTABLE;
}

static int best_path(void) {
    int p = NUM_PATHS - 1;
    while (!path_supported(p)) p--;
    return p;
}

static int current_path(void) {
    int p = __atomic_load_n(&g_path, __ATOMIC_RELAXED);
    if (p < 0) { /* racing first users all store the same value */
        p = best_path();
        __atomic_store_n(&g_path, p, __ATOMIC_RELAXED);
    }
    return p;
}

static int path_index(const char *path) {
    for (int p = 0; p < NUM_PATHS; p++)
        if (path && !strcmp(path, path_name[p])) return p;
    return -1;
}

int pf_cpu_supports(const char *path) {
    if (path && !strcmp(path, "auto")) return 1;
    int p = path_index(path);
    return p >= 0 && path_supported(p);
}

int pf_gemm_select(const char *path) {
    if (path && !strcmp(path, "auto")) {
        __atomic_store_n(&g_path, best_path(), __ATOMIC_RELAXED);
        return PF_OK;
    }
    int p = path_index(path);
    if (p < 0)
        return pf_error(PF_ERR_VALUE, "gemm path '%s' is unknown; choose avx512, avx2, portable or auto",
                        path ? path : "(null)");
    if (!path_supported(p))
        return pf_error(PF_ERR_VALUE, "gemm path '%s' needs CPU features this CPU lacks; it supports: %s", path,
                        path_supported(PATH_AVX2) ? "avx2, portable" : "portable");
    __atomic_store_n(&g_path, p, __ATOMIC_RELAXED);
    return PF_OK;
}

const char *pf_gemm_path(void) { return path_name[current_path()]; }

/* ---- micro-kernels ---------------------------------------------------------------
 * C[m x n] (=|+=) A~ B~ over kc steps, m <= MR and n <= NR. A~ is a packed panel: step k
 * holds MR row values at a + k * astep. B~ rows of NR values lie at b + k * brs: a packed
 * panel (brs = NR) or, on the direct path, B itself. Rows of C are rsc apart and
 * contiguous; acc = 0 overwrites, so C need not be initialised. */
typedef void (*kern_fn)(int64_t kc, const void *a, int64_t astep, const void *b, int64_t brs, void *c, int64_t rsc,
                        int m, int n, int acc);

#ifdef PF_X86
#define MAX_MR 12 /* fixed array bounds: VLAs would keep the accumulators on the stack */

/* C rows of a large product are far apart and long evicted when a tile comes round again. They
 * are fetched into L2 when the tile starts and into L1 a few k steps before its end: fetched into
 * L1 at the start, the panels streaming through L1 meanwhile evicted them again, and the
 * accumulating load of C stalled on every row. */
static inline __attribute__((always_inline)) void prefetch_row(const void *p, size_t bytes, int hint) {
    if (hint == 1) {
        _mm_prefetch((const char *)p, _MM_HINT_T1);
        _mm_prefetch((const char *)p + bytes - 1, _MM_HINT_T1);
    } else {
        _mm_prefetch((const char *)p, _MM_HINT_T0);
        _mm_prefetch((const char *)p + bytes - 1, _MM_HINT_T0);
    }
}
#define C_AHEAD 24 /* k steps before a tile's end at which C's rows are fetched into L1 */

/* The k loop of a micro-kernel: rows of C as two vectors of W lanes each, c0[i] and c1[i], for
 * i < MR; C's rows are prefetched meanwhile. */
#define KSTEPS(T, V, W, LOAD, SET1, FMA, STEPS)                                                    \
    for (int64_t k = 0; k < (STEPS); k++, a += astep, b += brs) {                                  \
        V b0 = LOAD(b), b1 = LOAD(b + W);                                                          \
        _Pragma("GCC unroll 16")                                                                   \
        for (int i = 0; i < MR; i++) {                                                             \
            V ai = SET1(a[i]);                                                                     \
            c0[i] = FMA(ai, b0, c0[i]);                                                            \
            c1[i] = FMA(ai, b1, c1[i]);                                                            \
        }                                                                                          \
    }
#define ACCUMULATE(T, V, W, SET0, LOAD, SET1, FMA)                                                 \
    V c0[MAX_MR], c1[MAX_MR];                                                                      \
    _Pragma("GCC unroll 16")                                                                       \
    for (int i = 0; i < MR; i++) {                                                                 \
        c0[i] = c1[i] = SET0();                                                                    \
        if (i < m) prefetch_row(c + i * rsc, 2 * W * sizeof(T), 1);                                \
    }                                                                                              \
    const int64_t k_early = kc > C_AHEAD ? kc - C_AHEAD : 0;                                       \
    KSTEPS(T, V, W, LOAD, SET1, FMA, k_early)                                                      \
    _Pragma("GCC unroll 16")                                                                       \
    for (int i = 0; i < MR; i++)                                                                   \
        if (i < m) prefetch_row(c + i * rsc, 2 * W * sizeof(T), 0);                                \
    KSTEPS(T, V, W, LOAD, SET1, FMA, kc - k_early)

/* MR x 2W values (W lanes of T per zmm) in 2*MR zmm accumulators; always_inline so each MR below
 * is a separate, fully unrolled kernel whose accumulators stay in registers. Partial tiles load
 * and store through masks M. */
#define AVX512_BODY(T, V, W, M, SET0, LOAD, SET1, FMA, ADD, MASKZ_LOAD, MASK_STORE)                \
    ACCUMULATE(T, V, W, SET0, LOAD, SET1, FMA)                                                     \
    M k0 = n >= W ? (M)-1 : (M)((1u << n) - 1);                                                    \
    M k1 = n >= 2 * W ? (M)-1 : n > W ? (M)((1u << (n - W)) - 1) : 0;                              \
    _Pragma("GCC unroll 16")                                                                       \
    for (int i = 0; i < MR; i++) {                                                                 \
        if (i >= m) break;                                                                         \
        if (acc) {                                                                                 \
            c0[i] = ADD(c0[i], MASKZ_LOAD(k0, c + i * rsc));                                       \
            c1[i] = ADD(c1[i], MASKZ_LOAD(k1, c + i * rsc + W));                                   \
        }                                                                                          \
        MASK_STORE(c + i * rsc, k0, c0[i]);                                                        \
        MASK_STORE(c + i * rsc + W, k1, c1[i]);                                                    \
    }

static inline __attribute__((always_inline)) T512 void f32_512_body(const int MR, int64_t kc, const float *a,
                                                                     int64_t astep, const float *b, int64_t brs,
                                                                     float *c, int64_t rsc, int m, int n, int acc) {
    AVX512_BODY(float, __m512, 16, __mmask16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps,
                _mm512_add_ps, _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps)
}

static inline __attribute__((always_inline)) T512 void f64_512_body(const int MR, int64_t kc, const double *a,
                                                                     int64_t astep, const double *b, int64_t brs,
                                                                     double *c, int64_t rsc, int m, int n, int acc) {
    AVX512_BODY(double, __m512d, 8, __mmask8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_set1_pd, _mm512_fmadd_pd,
                _mm512_add_pd, _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd)
}

/* AVX2 masked stores (vmaskmov) are slow on several CPUs, so partial tiles go through a
 * local tile. */
#define AVX2_BODY(T, V, W, SET0, LOAD, STORE, SET1, FMA, ADD)                             \
    ACCUMULATE(T, V, W, SET0, LOAD, SET1, FMA)                                            \
    int full = m == MR && n == 2 * W;                                                     \
    _Alignas(32) T tile[MAX_MR * 2 * W];                                                  \
    _Pragma("GCC unroll 16")                                                              \
    for (int i = 0; i < MR; i++) {                                                        \
        T *dst = full ? c + i * rsc : tile + i * 2 * W;                                   \
        if (full && acc) {                                                                \
            c0[i] = ADD(c0[i], LOAD(dst));                                                \
            c1[i] = ADD(c1[i], LOAD(dst + W));                                            \
        }                                                                                 \
        STORE(dst, c0[i]);                                                                \
        STORE(dst + W, c1[i]);                                                            \
    }                                                                                     \
    if (!full)                                                                            \
        for (int i = 0; i < m; i++)                                                       \
            for (int j = 0; j < n; j++) c[i * rsc + j] = (acc ? c[i * rsc + j] : 0) + tile[i * 2 * W + j];

static inline __attribute__((always_inline)) T256 void f32_256_body(const int MR, int64_t kc, const float *a,
                                                                     int64_t astep, const float *b, int64_t brs,
                                                                     float *c, int64_t rsc, int m, int n, int acc) {
    AVX2_BODY(float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
              _mm256_fmadd_ps, _mm256_add_ps)
}

static inline __attribute__((always_inline)) T256 void f64_256_body(const int MR, int64_t kc, const double *a,
                                                                     int64_t astep, const double *b, int64_t brs,
                                                                     double *c, int64_t rsc, int m, int n, int acc) {
    AVX2_BODY(double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
              _mm256_fmadd_pd, _mm256_add_pd)
}

#define KERNEL(NAME, ATTR, BODY, T, MR)                                                                   \
    static ATTR void NAME(int64_t kc, const void *a, int64_t astep, const void *b, int64_t brs, void *c,  \
                          int64_t rsc, int m, int n, int acc) {                                           \
        BODY(MR, kc, (const T *)a, astep, (const T *)b, brs, (T *)c, rsc, m, n, acc);                     \
    }
KERNEL(f32_512_12, T512, f32_512_body, float, 12)
KERNEL(f32_512_4, T512, f32_512_body, float, 4)
KERNEL(f64_512_12, T512, f64_512_body, double, 12)
KERNEL(f64_512_4, T512, f64_512_body, double, 4)
KERNEL(f32_256_6, T256, f32_256_body, float, 6)
KERNEL(f32_256_2, T256, f32_256_body, float, 2)
KERNEL(f64_256_6, T256, f64_256_body, double, 6)
KERNEL(f64_256_2, T256, f64_256_body, double, 2)
#endif

/* Plain C for CPUs (or compilers) without the intrinsics above; gcc vectorizes the
 * fixed-size inner loops with baseline SSE2. */
#define PORTABLE_KERNEL(NAME, T, MR, NR)                                                                  \
    static void NAME(int64_t kc, const void *a_, int64_t astep, const void *b_, int64_t brs, void *c_,    \
                     int64_t rsc, int m, int n, int acc) {                                                \
        const T *a = a_, *b = b_;                                                                         \
        T *c = c_, t[MR][NR] = {{0}};                                                                     \
        for (int64_t k = 0; k < kc; k++, a += astep, b += brs)                                            \
            for (int i = 0; i < MR; i++)                                                                  \
                for (int j = 0; j < NR; j++) t[i][j] += a[i] * b[j];                                      \
        for (int i = 0; i < m; i++)                                                                       \
            for (int j = 0; j < n; j++) c[i * rsc + j] = (acc ? c[i * rsc + j] : 0) + t[i][j];            \
    }
PORTABLE_KERNEL(f32_c, float, 4, 8)
PORTABLE_KERNEL(f64_c, double, 4, 4)

/* ---- packing --------------------------------------------------------------------- */

/* dst[k * w + i] = src[i * si + k * sk] for i < cnt, k < kc; columns cnt..w are zero.
 * One routine serves both operands: an A panel is (si, sk) = (rsa, csa), a B panel
 * (csb, rsb). The loop order follows whichever source stride is 1. */
typedef void (*pack_fn)(int64_t kc, int64_t cnt, const void *src, int64_t si, int64_t sk, int w, void *dst);

#define PACK(NAME, T)                                                                                  \
    static void NAME(int64_t kc, int64_t cnt, const void *src_, int64_t si, int64_t sk, int w, void *dst_) { \
        const T *src = src_;                                                                           \
        T *dst = dst_;                                                                                 \
        if (si == 1) {                                                                                 \
            for (int64_t k = 0; k < kc; k++) memcpy(dst + k * w, src + k * sk, cnt * sizeof(T));       \
        } else if (sk == 1) {                                                                          \
            for (int64_t i = 0; i < cnt; i++)                                                          \
                for (int64_t k = 0; k < kc; k++) dst[k * w + i] = src[i * si + k];                     \
        } else {                                                                                       \
            for (int64_t k = 0; k < kc; k++)                                                           \
                for (int64_t i = 0; i < cnt; i++) dst[k * w + i] = src[i * si + k * sk];               \
        }                                                                                              \
        if (cnt < w)                                                                                   \
            for (int64_t k = 0; k < kc; k++) memset(dst + k * w + cnt, 0, (w - cnt) * sizeof(T));      \
    }
PACK(pack_f32, float)
PACK(pack_f64, double)

#ifdef PF_X86
/* The first two stages of a transpose of NR rows of floats in registers v[] (t[] the scratch):
 * pairs of rows, then pairs of pairs; the 128-bit lane stages differ by width. */
#define UNPACK_STAGES(NR, VD, LO_PS, HI_PS, TO_PD, LO_PD, HI_PD, TO_PS)                             \
    _Pragma("GCC unroll 8")                                                                        \
    for (int q = 0; q < NR; q += 2) {                                                              \
        t[q] = LO_PS(v[q], v[q + 1]);                                                              \
        t[q + 1] = HI_PS(v[q], v[q + 1]);                                                          \
    }                                                                                              \
    _Pragma("GCC unroll 4")                                                                        \
    for (int q = 0; q < NR; q += 4)                                                                \
        for (int h = 0; h < 2; h++) {                                                              \
            VD x = TO_PD(t[q + h]), y = TO_PD(t[q + h + 2]);                                       \
            v[q + 2 * h] = TO_PS(LO_PD(x, y));                                                     \
            v[q + 2 * h + 1] = TO_PS(HI_PD(x, y));                                                 \
        }

/* dst[k * ds + i] = rows[i][k] for k < n and i < nr, lanes nr..keep-1 zero: whole 16 x 16
 * blocks through registers in 4 shuffle stages (pairs of rows, pairs of pairs, then 128-bit
 * lanes twice), the k tail by masked loads. Rows i >= nr are not read. */
#define TR_AHEAD 64 /* floats ahead of the block being transposed that each row is fetched */
T512 void pf_transpose_rows_f32(const float *const *rows, int nr, int keep, int64_t n, float *dst, int64_t ds) {
    __mmask16 kmask = (__mmask16)((1u << keep) - 1);
    for (int64_t k0 = 0; k0 < n; k0 += 16) {
        int64_t nk = n - k0 < 16 ? n - k0 : 16;
        __mmask16 lm = (__mmask16)((1u << nk) - 1);
        __m512 v[16], t[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) v[r] = r < nr ? _mm512_maskz_loadu_ps(lm, rows[r] + k0) : _mm512_setzero_ps();
        if (TR_AHEAD && k0 + TR_AHEAD < n) /* sixteen rows far apart: fetch each a few lines ahead */
            for (int r = 0; r < nr; r++) _mm_prefetch((const char *)(rows[r] + k0 + TR_AHEAD), _MM_HINT_T0);
        UNPACK_STAGES(16, __m512d, _mm512_unpacklo_ps, _mm512_unpackhi_ps, _mm512_castps_pd, _mm512_unpacklo_pd,
                      _mm512_unpackhi_pd, _mm512_castpd_ps)
#pragma GCC unroll 2
        for (int h = 0; h < 16; h += 8)
            for (int c = 0; c < 4; c++) {
                t[h + c] = _mm512_shuffle_f32x4(v[h + c], v[h + 4 + c], 0x88);
                t[h + 4 + c] = _mm512_shuffle_f32x4(v[h + c], v[h + 4 + c], 0xdd);
            }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            v[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
            v[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
        }
        for (int k = 0; k < nk; k++) _mm512_mask_storeu_ps(dst + (k0 + k) * ds, kmask, v[k]);
    }
}

/* Panels of w columns one after another (kc * w floats each, zeros past cnt) from a source whose
 * columns are contiguous (si = 1): row k of every panel is one run of cnt floats, read in memory
 * order. Packing one panel at a time reads a short piece of every row instead, each row on a page
 * of its own for a wide source, which the hardware prefetcher does not follow: the weight
 * gradient's A = g^T spent a fifth of its product packing that way. */
#define PACK_AHEAD 4
static T512 void pack_runs_f32_512(int64_t kc, int64_t cnt, const void *src_, int64_t sk, int w, void *dst_) {
    const float *src = src_;
    float *dst = dst_;
    int64_t np = cdiv(cnt, w);
    for (int64_t k = 0; k < kc; k++) {
        const float *s = src + k * sk;
        float *d = dst + k * w;
        if (k + PACK_AHEAD < kc) /* rows far apart: the hardware prefetcher does not cross to the next */
            for (int64_t b = 0; b < cnt; b += 16) _mm_prefetch((const char *)(s + PACK_AHEAD * sk + b), _MM_HINT_T0);
        for (int64_t p = 0; p < np; p++, s += w, d += kc * w) {
            int c = (int)min64(w, cnt - p * w);
            for (int h = 0; h < w; h += 16) {
                int cv = c - h < 0 ? 0 : c - h > 16 ? 16 : c - h, wv = w - h > 16 ? 16 : w - h;
                __m512 v = p * w + h + 16 <= cnt ? _mm512_loadu_ps(s + h)
                                                 : _mm512_maskz_loadu_ps((__mmask16)((1u << cv) - 1), s + h);
                _mm512_mask_storeu_ps(d + h, (__mmask16)((1u << wv) - 1), v);
            }
        }
    }
}

/* Sources contiguous along k (row-major A, transposed B) need a transpose, one scalar
 * per element above; through registers it made packing 3-4x cheaper. */
static T512 void pack_f32_512(int64_t kc, int64_t cnt, const void *src_, int64_t si, int64_t sk, int w,
                              void *dst_) {
    if (si == 1) {
        pack_runs_f32_512(kc, cnt, src_, sk, w, dst_);
        return;
    }
    if (sk != 1 || si == 1 || kc < 16) {
        pack_f32(kc, cnt, src_, si, sk, w, dst_);
        return;
    }
    const float *src = src_, *rows[16];
    for (int i0 = 0; i0 < w; i0 += 16) {
        int nr = cnt - i0 < 0 ? 0 : cnt - i0 > 16 ? 16 : (int)(cnt - i0);
        for (int r = 0; r < nr; r++) rows[r] = src + (i0 + r) * si;
        pf_transpose_rows_f32(rows, nr, w - i0 < 16 ? w - i0 : 16, kc, (float *)dst_ + i0, w);
    }
}

/* pack_runs_f32_512 for AVX2 kernels (A panels of 6 columns, B panels of 16): a panel at a time, row k of a
 * panel was a memcpy call of 24 or 64 bytes (pack_f32), and those calls were 5-6% of a nanoGPT training step
 * (every weight gradient's A = g^T and every row-major B). Each run moves as whole vectors; 6 floats as 4 + 2. */
static T256 void pack_runs_f32_256(int64_t kc, int64_t cnt, const void *src_, int64_t sk, int w, void *dst_) {
    const float *src = src_;
    float *dst = dst_;
    int64_t np = cdiv(cnt, w), full = cnt / w;
    for (int64_t k = 0; k < kc; k++) {
        const float *s = src + k * sk;
        float *d = dst + k * w;
        if (k + PACK_AHEAD < kc) /* rows far apart: the hardware prefetcher does not cross to the next */
            for (int64_t b = 0; b < cnt; b += 16) _mm_prefetch((const char *)(s + PACK_AHEAD * sk + b), _MM_HINT_T0);
        int64_t p = 0;
        if (w == 16)
            for (; p < full; p++, s += 16, d += kc * 16) {
                _mm256_storeu_ps(d, _mm256_loadu_ps(s));
                _mm256_storeu_ps(d + 8, _mm256_loadu_ps(s + 8));
            }
        else if (w == 6)
            for (; p < full; p++, s += 6, d += kc * 6) {
                _mm_storeu_ps(d, _mm_loadu_ps(s));
                _mm_storel_epi64((__m128i *)(d + 4), _mm_loadl_epi64((const __m128i *)(s + 4)));
            }
        for (; p < np; p++, s += w, d += kc * w) {
            int64_t c = min64(w, cnt - p * w);
            for (int64_t i = 0; i < w; i++) d[i] = i < c ? s[i] : 0.0f;
        }
    }
}

static T256 void pack_f32_256(int64_t kc, int64_t cnt, const void *src_, int64_t si, int64_t sk, int w,
                              void *dst_) {
    int64_t kv = kc & ~(int64_t)7;
    if (sk != 1 || si == 1 || kv == 0) {
        pack_f32(kc, cnt, src_, si, sk, w, dst_);
        return;
    }
    const float *src = src_;
    float *dst = dst_;
    for (int i0 = 0; i0 < w; i0 += 8) {
        int64_t rows = cnt - i0 < 0 ? 0 : cnt - i0 > 8 ? 8 : cnt - i0;
        int lanes = w - i0 < 8 ? w - i0 : 8;
        for (int64_t k0 = 0; k0 < kv; k0 += 8) {
            __m256 v[8], t[8];
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++)
                v[r] = r < rows ? _mm256_loadu_ps(src + (i0 + r) * si + k0) : _mm256_setzero_ps();
            UNPACK_STAGES(8, __m256d, _mm256_unpacklo_ps, _mm256_unpackhi_ps, _mm256_castps_pd, _mm256_unpacklo_pd,
                          _mm256_unpackhi_pd, _mm256_castpd_ps)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                t[c] = _mm256_permute2f128_ps(v[c], v[4 + c], 0x20);
                t[4 + c] = _mm256_permute2f128_ps(v[c], v[4 + c], 0x31);
            }
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                if (lanes == 8) {
                    _mm256_storeu_ps(dst + (k0 + k) * w + i0, t[k]);
                } else if (lanes == 6) { /* A's panels (MR = 6): 4 + 2 floats, not a memcpy call each */
                    _mm_storeu_ps(dst + (k0 + k) * w + i0, _mm256_castps256_ps128(t[k]));
                    _mm_storel_pi((__m64 *)(dst + (k0 + k) * w + i0 + 4), _mm256_extractf128_ps(t[k], 1));
                } else { /* see AVX2_BODY on masked stores */
                    _Alignas(32) float part[8];
                    _mm256_store_ps(part, t[k]);
                    memcpy(dst + (k0 + k) * w + i0, part, (size_t)lanes * sizeof(float));
                }
            }
        }
    }
    for (int64_t k = kv; k < kc; k++)
        for (int i = 0; i < w; i++) dst[k * w + i] = i < cnt ? src[i * si + k] : 0;
}
#endif

/* ---- matrix-vector kernels ---------------------------------------------------------- */

/* y[j] = sum_k x[k] B[k, j] for j < n: one row of A, the shape of a one-sample Linear
 * layer. The blocked path would pad x to MR rows and walk a large B in column strips, a
 * new page per row; these read B once in memory order. Rows of B contiguous: axpy over
 * them into a chunk of accumulators. Columns contiguous (x W^T): four dot products at a
 * time, each kept in lane-wise partial sums so gcc vectorizes without -ffast-math; x must
 * then be contiguous. One body, instantiated per ISA below. */
typedef void (*gemv_fn)(int by_rows, int64_t K, int64_t n, const void *x, int64_t sx, const void *B, int64_t rsb,
                        int64_t csb, void *y, int64_t sy);
#define GEMV_CHUNK 1024

#define GEMV_BODY(T)                                                                                   \
    static inline __attribute__((always_inline)) void gemv_body_##T(                                   \
        int by_rows, int64_t K, int64_t n, const T *x, int64_t sx, const T *B, int64_t rsb, int64_t csb, \
        T *y, int64_t sy) {                                                                            \
        enum { L = 64 / sizeof(T) };                                                                   \
        if (by_rows) { /* four rows of B per pass over the accumulators */                             \
            for (int64_t j0 = 0; j0 < n; j0 += GEMV_CHUNK) {                                           \
                int64_t jn = min64(GEMV_CHUNK, n - j0), k = 0;                                         \
                T acc[GEMV_CHUNK] = {0};                                                               \
                for (; k + 4 <= K; k += 4) {                                                           \
                    const T x0 = x[k * sx], x1 = x[(k + 1) * sx], x2 = x[(k + 2) * sx], x3 = x[(k + 3) * sx]; \
                    const T *b0 = B + k * rsb + j0, *b1 = b0 + rsb, *b2 = b1 + rsb, *b3 = b2 + rsb;    \
                    for (int64_t j = 0; j < jn; j++) acc[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j]; \
                }                                                                                      \
                for (; k < K; k++) {                                                                   \
                    const T xk = x[k * sx], *b = B + k * rsb + j0;                                     \
                    for (int64_t j = 0; j < jn; j++) acc[j] += xk * b[j];                              \
                }                                                                                      \
                for (int64_t j = 0; j < jn; j++) y[(j0 + j) * sy] = acc[j];                            \
            }                                                                                          \
            return;                                                                                    \
        }                                                                                              \
        for (int64_t j = 0; j < n; j += 4) { /* four columns share each load of x */                   \
            int q = (int)min64(4, n - j);                                                              \
            const T *b0 = B + j * csb, *b1 = q > 1 ? b0 + csb : b0, *b2 = q > 2 ? b0 + 2 * csb : b0;   \
            const T *b3 = q > 3 ? b0 + 3 * csb : b0;                                                   \
            T a0[L] = {0}, a1[L] = {0}, a2[L] = {0}, a3[L] = {0}, s[4] = {0, 0, 0, 0};                 \
            int64_t k = 0;                                                                             \
            for (; k + L <= K; k += L)                                                                 \
                for (int l = 0; l < L; l++) {                                                          \
                    const T xv = x[k + l];                                                             \
                    a0[l] += xv * b0[k + l], a1[l] += xv * b1[k + l];                                  \
                    a2[l] += xv * b2[k + l], a3[l] += xv * b3[k + l];                                  \
                }                                                                                      \
            for (int l = 0; l < L; l++) s[0] += a0[l], s[1] += a1[l], s[2] += a2[l], s[3] += a3[l];    \
            for (; k < K; k++)                                                                         \
                s[0] += x[k] * b0[k], s[1] += x[k] * b1[k], s[2] += x[k] * b2[k], s[3] += x[k] * b3[k]; \
            for (int c = 0; c < q; c++) y[(j + c) * sy] = s[c];                                        \
        }                                                                                              \
    }
GEMV_BODY(float)
GEMV_BODY(double)

#define GEMV(NAME, T, ATTR)                                                                                \
    static ATTR void NAME(int by_rows, int64_t K, int64_t n, const void *x, int64_t sx, const void *B,     \
                          int64_t rsb, int64_t csb, void *y, int64_t sy) {                                 \
        gemv_body_##T(by_rows, K, n, (const T *)x, sx, (const T *)B, rsb, csb, (T *)y, sy);                \
    }
GEMV(gemv_f32_c, float, )
GEMV(gemv_f64_c, double, )
#ifdef PF_X86
GEMV(gemv_f32_512, float, T512)
GEMV(gemv_f64_512, double, T512)
GEMV(gemv_f32_256, float, T256)
GEMV(gemv_f64_256, double, T256)
#endif

/* ---- blocked driver ---------------------------------------------------------------- */

typedef struct {
    int mr, nr, kc, mc, nc; /* micro-tile and cache blocks (KC x NR of B in L1, MC x KC of A in L2) */
    int mr_small;           /* tiles of at most this many rows take kern_small */
    size_t esz;
    kern_fn kern, kern_small;
    pack_fn pack;
    gemv_fn gemv;
} gemm_desc;

static const gemm_desc descs[NUM_PATHS][2] = {
    [PATH_PORTABLE] = {{4, 8, 256, 128, 4096, 4, 4, f32_c, f32_c, pack_f32, gemv_f32_c},
                       {4, 4, 256, 128, 4096, 4, 8, f64_c, f64_c, pack_f64, gemv_f64_c}},
#ifdef PF_X86
    [PATH_AVX2] = {{6, 16, 384, 192, 4096, 2, 4, f32_256_6, f32_256_2, pack_f32_256, gemv_f32_256},
                   {6, 8, 256, 192, 4096, 2, 8, f64_256_6, f64_256_2, pack_f64, gemv_f64_256}},
    [PATH_AVX512] = {{12, 32, 320, 192, 4096, 4, 4, f32_512_12, f32_512_4, pack_f32_512, gemv_f32_512},
                     {12, 16, 256, 240, 4096, 4, 8, f64_512_12, f64_512_4, pack_f64, gemv_f64_512}},
#endif
};
/* packed B of one K block stays under this (1 MB of a 2 MB L2, beside the A block and C's rows) */
#define NCB_BYTES (1 << 20)
#define MAX_TILE 384 /* MR * NR elements of the largest kernel */

/* the most memory an A packed once for every column block may take (a 700 x 650 float32 A: 1.8 MB) */
#define PREPACK_MAX ((size_t)16 << 20)
/* Problems below this many multiply-adds stay on one thread. Batches of products below
 * BATCH_WORK run whole products per thread rather than splitting each one, when the
 * batch divides evenly enough among the threads. */
#define PAR_WORK (1 << 17)
#define BATCH_WORK (1 << 23)
/* B is read in place (no packing) for short A or small problems when its rows are
 * contiguous: packing B costs K*N copies, which only pays off when reused over many rows. */
#define DIRECT_M 64
#define DIRECT_WORK (64 * 64 * 64)

typedef pf_gemm_prob gemm_prob;

/* One tile; strided C goes through a local tile since kernels want contiguous rows. */
static void run_tile(const gemm_desc *d, int64_t kc, const char *a, const char *b, int64_t brs, char *c,
                     int64_t rsc, int64_t csc, int m, int n, int acc) {
    kern_fn k = m <= d->mr_small ? d->kern_small : d->kern;
    if (csc == 1) {
        k(kc, a, d->mr, b, brs, c, rsc, m, n, acc);
        return;
    }
    union {
        float f[MAX_TILE];
        double d[MAX_TILE];
    } tile;
    k(kc, a, d->mr, b, brs, &tile, d->nr, m, n, 0);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int64_t o = (i * rsc + j * csc) * (int64_t)d->esz;
            if (d->esz == 4) {
                float v = tile.f[i * d->nr + j];
                *(float *)(c + o) = acc ? *(float *)(c + o) + v : v;
            } else {
                double v = tile.d[i * d->nr + j];
                *(double *)(c + o) = acc ? *(double *)(c + o) + v : v;
            }
        }
}

static double padded(const gemm_desc *d, int64_t M, int64_t N) {
    return (double)(cdiv(M, d->mr) * d->mr) * (double)(cdiv(N, d->nr) * d->nr);
}

/* the same product as C^T = B^T A^T */
static gemm_prob transposed(const gemm_prob *p) {
    return (gemm_prob){p->N, p->M, p->K, p->B, p->A, p->C, p->csb, p->rsb, p->csa, p->rsa, p->csc, p->rsc, p->acc};
}

/* M = 1 with B contiguous along one axis; threads split the columns, 16 at a time. */
typedef struct {
    const gemm_desc *d;
    const gemm_prob *p;
    int rows;
    const char *x;
    int64_t sx;
} gemv_job;

static void gemv_cols(void *arg, int64_t c0, int64_t c1) {
    const gemv_job *j = arg;
    const gemm_prob *p = j->p;
    int64_t es = (int64_t)j->d->esz, j0 = c0 * 16, j1 = min64(c1 * 16, p->N);
    j->d->gemv(j->rows, p->K, j1 - j0, j->x, j->sx, p->B + j0 * p->csb * es, p->rsb, p->csb, p->C + j0 * p->csc * es,
               p->csc);
}

static int gemv(const gemm_desc *d, const gemm_prob *p, int nt) {
    const int64_t es = (int64_t)d->esz, N = p->N;
    int rows = p->csb == 1 && (N >= 16 || p->rsb != 1); /* a dot product per column wins for few columns */
    const char *x = p->A;
    int64_t sx = p->csa;
    char *tmp = NULL;
    if (!rows && sx != 1) { /* the dot products want x contiguous */
        if (!(tmp = pf_alloc((size_t)(p->K * es)))) return PF_ERR_NOMEM;
        for (int64_t k = 0; k < p->K; k++) memcpy(tmp + k * es, x + k * sx * es, (size_t)es);
        x = tmp, sx = 1;
    }
    gemv_job j = {d, p, rows, x, sx};
    pf_parallel_range(nt, cdiv(N, 16), gemv_cols, &j);
    pf_free(tmp);
    return PF_OK;
}

static size_t pack_a_elems(const gemm_desc *d, int64_t M, int64_t K);
static void pack_a_rows(const gemm_desc *d, int64_t M, int64_t K, const char *A, int64_t rsa, int64_t csa, char *dst,
                        int64_t q0, int64_t q1);

/* What gemm_blocked's threads share. */
typedef struct {
    const gemm_desc *d;
    gemm_prob p;
    int64_t M, N, K, es, mr, nr, mt, ntl, kc, mc, nc;
    int direct;
    int shared; /* run by a team of its own: worksharing and barriers apply */
    const char *apk; /* A packed beforehand (pf_gemm_pack_a's layout), or NULL: each thread packs its rows */
    char *apre;      /* with several column blocks, A packed here once (apk's layout) by the threads, or NULL */
    char *buf;
    size_t bbytes, abytes;
} blocked_job;

/* thread grid gr x gc over row and column tiles for a team of nt, the most even split;
 * rows win ties because row threads share one packed B */
static void thread_grid(int nt, int64_t mt, int64_t ntl, int *gr, int *gc) {
    int64_t best = INT64_MAX;
    *gr = 1;
    for (int r = nt; r >= 1; r--)
        if (nt % r == 0 && cdiv(mt, r) * cdiv(ntl, nt / r) < best) best = cdiv(mt, r) * cdiv(ntl, nt / r), *gr = r;
    *gc = nt / *gr;
}

/* cdiv(cnt, w) panels of kc x w one after another at dst, from the source's columns src + i si
 * (i < cnt): one pass over the source's rows when its columns are contiguous (pack_runs_f32_512),
 * else a panel at a time. */
static void pack_panels(const gemm_desc *d, int64_t kc, int64_t cnt, const char *src, int64_t si, int64_t sk, int w,
                        char *dst) {
#ifdef PF_X86
    if (si == 1 && d->pack == pack_f32_512) {
        pack_runs_f32_512(kc, cnt, src, sk, w, dst);
        return;
    }
    if (si == 1 && d->pack == pack_f32_256) {
        pack_runs_f32_256(kc, cnt, src, sk, w, dst);
        return;
    }
#endif
    const int64_t es = (int64_t)d->esz;
    for (int64_t q = 0; q < cnt; q += w) d->pack(kc, min64(w, cnt - q), src + q * si * es, si, sk, w, dst + q * kc * es);
}

/* Thread t's part of a blocked product. With one thread it runs outside any OpenMP region
 * of its own, possibly inside a caller's (the batch loop), so it must not use worksharing
 * or barriers then: those would bind to the caller's team. */
static void blocked_thread(void *arg, int t, int team) {
    const blocked_job *job = arg;
    const gemm_desc *d = job->d;
    const gemm_prob p = job->p;
    const int64_t M = job->M, N = job->N, K = job->K, es = job->es, mr = job->mr, nr = job->nr, mt = job->mt,
                  ntl = job->ntl, kc = job->kc, mc = job->mc, nc = job->nc;
    const int direct = job->direct;
    int gr, gc;
    thread_grid(team, mt, ntl, &gr, &gc);
    char *buf = job->buf;
    const size_t bbytes = job->bbytes, abytes = job->abytes;
    int64_t r0, r1;
    pf_split(mt, t / gc, gr, &r0, &r1);
    int64_t i0 = r0 * mr, i1 = min64(r1 * mr, M);
    int64_t mine = i1 > i0 ? i1 - i0 : 0;
    int64_t mct = mine ? cdiv(cdiv(mine, cdiv(mine, d->mc)), mr) * mr : 1;
    char *abuf = buf + bbytes + (size_t)t * abytes, *ebuf = abuf + mc * kc * es;
    const char *apk = job->apk;
    if (job->apre) { /* the row group's panels, split among its gc threads, for every K block */
        int64_t s0, s1;
        pf_split(r1 - r0, t % gc, gc, &s0, &s1);
        pack_a_rows(d, M, K, p.A, p.rsa, p.csa, job->apre, (r0 + s0) * mr, (r0 + s1) * mr);
        if (job->shared && gc > 1) {
#pragma omp barrier
        }
        apk = job->apre;
    }
    for (int64_t jc = 0; jc < N; jc += nc) {
        /* the thread's share of this column block's panels: a share of all N would leave one
         * thread idle in each block when N spans several (a few rows, a wide layer: gc > 1) */
        int64_t ncur = min64(nc, N - jc), s0, s1;
        pf_split(cdiv(ncur, nr), t % gc, gc, &s0, &s1);
        int64_t ja = jc + s0 * nr, jb = min64(jc + s1 * nr, jc + ncur);
        for (int64_t pc = 0; pc < K; pc += kc) {
            int64_t kcur = min64(kc, K - pc);
            int64_t npan = cdiv(ncur, nr);
            if (!direct) { /* in a team each thread packs its share of the panels, then all wait */
                int64_t q0 = 0, q1 = npan;
                if (job->shared) pf_split(npan, t, team, &q0, &q1);
                pack_panels(d, kcur, min64(ncur, q1 * nr) - q0 * nr, p.B + (pc * p.rsb + (jc + q0 * nr) * p.csb) * es,
                            p.csb, p.rsb, (int)nr, buf + q0 * nr * kcur * es);
                if (job->shared) {
#pragma omp barrier
                }
            }
            for (int64_t ic = i0; ic < i1 && ja < jb; ic += mct) {
                int64_t mcur = min64(mct, i1 - ic);
                const char *ap = abuf;
                if (apk) /* K block pc holds cdiv(M, mr) panels of kcur x mr */
                    ap = apk + (pc * cdiv(M, mr) * mr + ic * kcur) * es;
                else
                    pack_panels(d, kcur, mcur, p.A + (ic * p.rsa + pc * p.csa) * es, p.rsa, p.csa, (int)mr, abuf);
                for (int64_t jr = ja; jr < jb; jr += nr) {
                    int n = (int)min64(nr, jb - jr);
                    const char *bp = buf + (jr - jc) * kcur * es;
                    int64_t brs = nr;
                    if (direct && n == nr) {
                        bp = p.B + (pc * p.rsb + jr) * es;
                        brs = p.rsb;
                    } else if (direct) {
                        d->pack(kcur, n, p.B + (pc * p.rsb + jr) * es, 1, p.rsb, nr, ebuf);
                        bp = ebuf;
                    }
                    for (int64_t ir = 0; ir < mcur; ir += mr)
                        run_tile(d, kcur, ap + ir * kcur * es, bp, brs,
                                 p.C + ((ic + ir) * p.rsc + jr * p.csc) * es, p.rsc, p.csc,
                                 (int)min64(mr, mcur - ir), n, pc > 0 || p.acc);
                }
            }
            if (!direct && job->shared) {
#pragma omp barrier
            }
        }
    }
}

/* Orientation, blocking and buffer size of one blocked product. */
typedef struct {
    gemm_prob p;
    int direct;
    int64_t kc, mc, nc;
    size_t bbytes, abytes;
} gemm_plan;

static gemm_plan plan_blocked(const gemm_desc *d, gemm_prob p, int packed_a) {
    /* C^T = B^T A^T wastes less of the MR x NR tiles when N is the short side (A packed
     * beforehand stays A) */
    if (!packed_a && 4 * padded(d, p.N, p.M) < 3 * padded(d, p.M, p.N)) p = transposed(&p);
    const int64_t M = p.M, N = p.N, K = p.K, es = (int64_t)d->esz, mr = d->mr, nr = d->nr;
    gemm_plan pl = {.p = p, .direct = p.csb == 1 && (M <= DIRECT_M || (double)M * N * K <= DIRECT_WORK)};
    pl.kc = cdiv(K, cdiv(K, d->kc)); /* equal K blocks, none tiny */
    /* bounds every thread's A block for any team size (the grid is chosen per team) */
    pl.mc = min64(cdiv(M, mr), cdiv(d->mc, mr)) * mr;
    /* column blocks of equal width whose packed B (kc x nc) stays in L2 beside the A block */
    int64_t ncmax = NCB_BYTES / (pl.kc * es) / nr * nr;
    if (ncmax < 4 * nr) ncmax = 4 * nr;
    if (ncmax > d->nc) ncmax = d->nc;
    pl.nc = cdiv(cdiv(N, cdiv(N, ncmax)), nr) * nr;
    int64_t ncp = pl.nc;
    pl.bbytes = pl.direct ? 0 : (size_t)(pl.kc * ncp * es + 63) & ~(size_t)63;
    pl.abytes = (size_t)((pl.mc + nr) * pl.kc * es + 63) & ~(size_t)63; /* A block + an edge B panel */
    return pl;
}

/* M = 1 or N = 1 overwriting C: a matrix-vector product (no buffer) */
static int takes_gemv(gemm_prob *p) {
    if (p->acc) return 0;
    if (p->N == 1 && p->M > 1) *p = transposed(p);
    return p->M == 1 && (p->csb == 1 || p->rsb == 1);
}

/* Every dim at most PF_SMALL_DIM, on the avx512 or avx2 kernels: gemm_small.c, which splits it over
 * the team when it is large enough to pay. Runs it. */
static int takes_small(const gemm_desc *d, const gemm_prob *p, int nt) {
    if (d == &descs[PATH_AVX512][0] || d == &descs[PATH_AVX512][1])
        return pf_gemm_small(1, d == &descs[PATH_AVX512][1], p, d->pack, nt);
    if (d == &descs[PATH_AVX2][0] || d == &descs[PATH_AVX2][1])
        return pf_gemm_small(0, d == &descs[PATH_AVX2][1], p, d->pack, nt);
    return 0;
}

/* At most PF_SKINNY_M rows with B read in place (gemm_small.c), on the avx512 kernels. Runs it. */
static int takes_skinny(const gemm_desc *d, const gemm_prob *p, int nt) {
#ifdef PF_X86
    if (d == &descs[PATH_AVX2][0]) return pf_gemm_wt2(p, nt); /* x W^T on AVX2: gemm_small.c (gen) */
#endif
    if (d != &descs[PATH_AVX512][0] && d != &descs[PATH_AVX512][1]) return 0;
    return pf_gemm_skinny(d == &descs[PATH_AVX512][1], p, nt);
}

/* C = A B (or C += A B with p.acc) for one matrix on nt threads; K > 0. ws, if given, holds
 * ws_bytes(d, p) for one thread. apk: A already packed by pf_gemm_pack_a (then p.A is not read and
 * the product always takes the blocked path), or NULL. Returns PF_ERR_NOMEM without a message
 * (it may run on a worker thread, whose error text the caller would not see). */
static int gemm_blocked(const gemm_desc *d, gemm_prob p, int nt, void *ws, const char *apk) {
    if (!apk) {
        if (takes_gemv(&p)) return gemv(d, &p, nt);
        if (takes_small(d, &p, nt)) return PF_OK;
        if (takes_skinny(d, &p, nt)) return PF_OK;
    }
    gemm_plan pl = plan_blocked(d, p, apk != NULL);
    p = pl.p;
    const int64_t M = p.M, N = p.N, K = p.K, es = (int64_t)d->esz, mr = d->mr, nr = d->nr;
    char *buf = ws ? ws : pf_alloc(pl.bbytes + (size_t)nt * pl.abytes);
    if (!buf) return PF_ERR_NOMEM;
    /* With several column blocks each would pack A again (x W^T with 2600 outputs: four times, transposing):
     * packed once up front, every block reads it. Not past PREPACK_MAX bytes (a copy of all of A, where the
     * blocks' packing holds an L2-sized block per thread), nor for a serial product in a caller's workspace. */
    char *apre = NULL;
    size_t apre_bytes = pack_a_elems(d, M, K) * (size_t)es;
    if (!apk && !ws && !pl.direct && N > pl.nc && apre_bytes <= PREPACK_MAX && !(apre = pf_alloc(apre_bytes))) {
        pf_free(buf);
        return PF_ERR_NOMEM;
    }

    /* Thread t owns C[i0:i1, j0:j1]. All threads pack the shared B block together; each
     * packs A for its own rows, in blocks sized so its rows split evenly. A single thread runs
     * outside any region of its own (pf_run_team calls it directly), so `shared` is 0 then. */
    blocked_job job = {d,         p,      M,  N,   K,   es,        mr,       nr, cdiv(M, mr), cdiv(N, nr), pl.kc,
                       pl.mc,     pl.nc, pl.direct, nt > 1, apk, apre, buf, pl.bbytes, pl.abytes};
    pf_run_team(nt, blocked_thread, &job);
    if (!ws) pf_free(buf);
    pf_free(apre);
    return PF_OK;
}

static size_t ws_bytes(const gemm_desc *d, gemm_prob p) {
    if (takes_gemv(&p)) return 0;
    gemm_plan pl = plan_blocked(d, p, 0);
    return pl.bbytes + pl.abytes;
}

/* ---- A packed once, read by many products --------------------------------------------- */

/* Every K block (the plan's kc) holds cdiv(M, mr) panels of kcur x mr, the layout
 * blocked_thread packs per row block: a weight packed once serves every tile of a conv. */
static size_t pack_a_elems(const gemm_desc *d, int64_t M, int64_t K) { return (size_t)(cdiv(M, d->mr) * d->mr * K); }

/* rows [q0, q1) of A (q0 a multiple of mr) into their panels of the pack's body dst */
static void pack_a_rows(const gemm_desc *d, int64_t M, int64_t K, const char *A, int64_t rsa, int64_t csa, char *dst,
                        int64_t q0, int64_t q1) {
    const int64_t es = (int64_t)d->esz, mr = d->mr, kc = cdiv(K, cdiv(K, d->kc)), mp = cdiv(M, mr) * mr;
    if (q1 > M) q1 = M;
    for (int64_t pc = 0; q1 > q0 && pc < K; pc += kc) {
        int64_t kcur = min64(kc, K - pc);
        pack_panels(d, kcur, q1 - q0, A + (q0 * rsa + pc * csa) * es, rsa, csa, (int)mr,
                    dst + (pc * mp + q0 * kcur) * es);
    }
}

/* The pack's header: what it was packed for, checked by every product that reads it (a kernel
 * set switched in between, or another shape, must not read panels of the wrong width). */
typedef struct {
    uint32_t magic, path;
    int64_t M, K;
    int dtype;
} pack_head;
#define PACK_MAGIC 0x70664150u
#define PACK_HEAD 64 /* bytes before the panels, which stay 64-byte aligned */
_Static_assert(sizeof(pack_head) <= PACK_HEAD, "the pack header outgrew its room");

size_t pf_gemm_pack_bytes(int dtype, int64_t M, int64_t K) {
    if ((dtype != PF_FLOAT32 && dtype != PF_FLOAT64) || M < 1 || K < 1) return 0;
    const gemm_desc *d = &descs[current_path()][dtype == PF_FLOAT64];
    return PACK_HEAD + pack_a_elems(d, M, K) * d->esz;
}

int pf_gemm_pack_a(int dtype, int64_t M, int64_t K, const void *A, int64_t rsa, int64_t csa, void *dst,
                   size_t bytes) {
    return pf_gemm_pack_a_piece(dtype, M, K, A, rsa, csa, dst, bytes, 0, 1);
}

int pf_gemm_pack_a_piece(int dtype, int64_t M, int64_t K, const void *A, int64_t rsa, int64_t csa, void *dst,
                         size_t bytes, int64_t piece, int64_t pieces) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "gemm_pack_a: expected float32 or float64, got dtype code %d", dtype);
    if (M < 1 || K < 1 || !A || !dst)
        return pf_error(PF_ERR_VALUE, "gemm_pack_a: need M, K >= 1 and both buffers, got M=%lld, K=%lld",
                        (long long)M, (long long)K);
    int path = current_path();
    const gemm_desc *d = &descs[path][dtype == PF_FLOAT64];
    size_t need = PACK_HEAD + pack_a_elems(d, M, K) * d->esz;
    if (bytes < need)
        return pf_error(PF_ERR_VALUE, "gemm_pack_a: a %lld x %lld pack needs %zu bytes, the buffer has %zu",
                        (long long)M, (long long)K, need, bytes);
    if (pieces < 1 || piece < 0 || piece >= pieces)
        return pf_error(PF_ERR_VALUE, "gemm_pack_a: piece %lld of %lld", (long long)piece, (long long)pieces);
    pack_head h = {PACK_MAGIC, (uint32_t)path, M, K, dtype};
    if (piece == 0) memcpy(dst, &h, sizeof h);
    int64_t panels = cdiv(M, d->mr);
    pack_a_rows(d, M, K, A, rsa, csa, (char *)dst + PACK_HEAD, panels * piece / pieces * d->mr,
                panels * (piece + 1) / pieces * d->mr);
    return PF_OK;
}

int pf_gemm_serial_packed(int dtype, const pf_gemm_prob *p, const void *apk, void *ws) {
    pack_head h;
    memcpy(&h, apk, sizeof h);
    if (h.magic != PACK_MAGIC || h.dtype != dtype || h.M != p->M || h.K != p->K || h.path >= NUM_PATHS)
        return PF_ERR_VALUE;
    return gemm_blocked(&descs[h.path][dtype == PF_FLOAT64], *p, 1, ws, (const char *)apk + PACK_HEAD);
}

static const gemm_desc *float_desc(int dtype) { return &descs[current_path()][dtype == PF_FLOAT64]; }

size_t pf_gemm_ws_bytes(int dtype, const pf_gemm_prob *p) { return ws_bytes(float_desc(dtype), *p); }

int pf_gemm_packs_a(int dtype, const pf_gemm_prob *p) {
    const gemm_desc *d = float_desc(dtype);
    if (p->M <= PF_SKINNY_M || p->N <= 1 || p->K < 1) return 0; /* skinny, gemv: A read in place */
    if (p->M <= PF_SMALL_DIM && p->N <= PF_SMALL_DIM && p->K <= PF_SMALL_DIM) return 0; /* small: likewise */
    return !(4 * padded(d, p->N, p->M) < 3 * padded(d, p->M, p->N)); /* transposed: A would be B */
}

int pf_gemm_pack_kc(const void *pack, int64_t *kc, int *nr) {
    pack_head h;
    memcpy(&h, pack, sizeof h);
    if (h.magic != PACK_MAGIC || h.path >= NUM_PATHS) return PF_ERR_VALUE;
    const gemm_desc *d = &descs[h.path][h.dtype == PF_FLOAT64];
    *kc = cdiv(h.K, cdiv(h.K, d->kc)), *nr = d->nr;
    return PF_OK;
}

int pf_gemm_packed_block(int dtype, const void *pack, int64_t pc, int64_t kcur, const void *bp, int64_t N, void *c,
                         int64_t rsc, int acc) {
    pack_head h;
    memcpy(&h, pack, sizeof h);
    if (h.magic != PACK_MAGIC || h.dtype != dtype || h.path >= NUM_PATHS) return PF_ERR_VALUE;
    const gemm_desc *d = &descs[h.path][dtype == PF_FLOAT64];
    const int64_t es = (int64_t)d->esz, mr = d->mr, nr = d->nr, M = h.M, kc = cdiv(h.K, cdiv(h.K, d->kc));
    if (pc < 0 || pc % kc || kcur != min64(kc, h.K - pc) || N < 1) return PF_ERR_VALUE;
    /* the K block's A (M x kcur, in L2 for the layers this serves) against one B panel (in L1) at a time */
    const char *a = (const char *)pack + PACK_HEAD + pc * cdiv(M, mr) * mr * es;
    for (int64_t jr = 0; jr < N; jr += nr)
        for (int64_t ir = 0; ir < M; ir += mr)
            run_tile(d, kcur, a + ir * kcur * es, (const char *)bp + jr * kcur * es, nr,
                     (char *)c + (ir * rsc + jr) * es, rsc, 1, (int)min64(mr, M - ir), (int)min64(nr, N - jr), acc);
    return PF_OK;
}

size_t pf_gemm_packed_ws_bytes(int dtype, const pf_gemm_prob *p) {
    gemm_plan pl = plan_blocked(float_desc(dtype), *p, 1);
    return pl.bbytes + pl.abytes;
}

int pf_gemm_serial(int dtype, const pf_gemm_prob *p, void *ws) {
    return gemm_blocked(float_desc(dtype), *p, 1, ws, NULL);
}

/* ---- integers ------------------------------------------------------------------------ */

/* Unsigned arithmetic wraps like NumPy's integer matmul instead of overflowing (UB); threads
 * split the rows of C. */
#define INT_GEMM(NAME, S, U)                                                                           \
    static void NAME(void *arg, int64_t i0, int64_t i1) {                                              \
        const gemm_prob *p = arg;                                                                      \
        for (int64_t i = i0; i < i1; i++) {                                                            \
            S *c = (S *)p->C + i * p->rsc;                                                             \
            for (int64_t j = 0; j < p->N; j++) c[j * p->csc] = 0;                                      \
            for (int64_t k = 0; k < p->K; k++) {                                                       \
                U a = (U)((const S *)p->A)[i * p->rsa + k * p->csa];                                   \
                const S *b = (const S *)p->B + k * p->rsb;                                             \
                for (int64_t j = 0; j < p->N; j++) c[j * p->csc] = (S)((U)c[j * p->csc] + a * (U)b[j * p->csb]); \
            }                                                                                          \
        }                                                                                              \
    }
INT_GEMM(gemm_i64, int64_t, uint64_t)
INT_GEMM(gemm_i32, int32_t, uint32_t)

/* ---- entry point ------------------------------------------------------------------------ */

static int shape_error(int code, const pf_tensor *a, const pf_tensor *b, const pf_tensor *out, const char *why) {
    char sa[128], sb[128], so[128];
    return pf_error(code, "matmul: a %s @ b %s -> out %s: %s", pf_shape_str(a, sa), pf_shape_str(b, sb),
                    pf_shape_str(out, so), why);
}

/* element offset of batch entry `bi` (row-major over the leading ndim-2 dims) */
static int64_t batch_offset(const pf_tensor *t, int64_t bi) {
    int64_t off = 0;
    for (int d = t->ndim - 3; d >= 0; d--) {
        off += (bi % t->shape[d]) * t->strides[d];
        bi /= t->shape[d];
    }
    return off;
}

/* the product of batch entry `bi` */
static gemm_prob at_batch(const gemm_prob *p, const pf_tensor *a, const pf_tensor *b, const pf_tensor *out,
                          int64_t bi) {
    gemm_prob q = *p;
    int64_t es = (int64_t)pf_dtype_size[a->dtype];
    q.A += batch_offset(a, bi) * es;
    q.B += batch_offset(b, bi) * es;
    q.C += batch_offset(out, bi) * es;
    return q;
}

static int run_one(int dt, const gemm_desc *d, gemm_prob p, int nt) {
    if (dt == PF_INT64 || dt == PF_INT32) pf_parallel_range(nt, p.M, dt == PF_INT64 ? gemm_i64 : gemm_i32, &p);
    else return gemm_blocked(d, p, nt, NULL, NULL);
    return PF_OK;
}

/* A batch of small products, whole products per thread. */
typedef struct {
    int dt, err;
    const gemm_desc *d;
    const gemm_prob *p;
    const pf_tensor *a, *b, *out;
} batch_job;

static void run_batch(void *arg, int64_t b0, int64_t b1) {
    batch_job *j = arg;
    for (int64_t bi = b0; bi < b1; bi++)
        if (run_one(j->dt, j->d, at_batch(j->p, j->a, j->b, j->out, bi), 1))
            __atomic_store_n(&j->err, PF_ERR_NOMEM, __ATOMIC_RELAXED);
}

int pf_matmul(const pf_tensor *a, const pf_tensor *b, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(a, "a")) || (rc = pf_check(b, "b")) || (rc = pf_check(out, "out"))) {
        char why[512];
        snprintf(why, sizeof why, "%s", pf_last_error()); /* pf_error below overwrites it */
        return a && b && out ? shape_error(rc, a, b, out, why) : pf_error(rc, "matmul: %s", why);
    }
    int nd = a->ndim;
    if (nd < 2 || b->ndim != nd || out->ndim != nd)
        return shape_error(PF_ERR_VALUE, a, b, out, "all three need the same number of dims, at least 2");
    if (b->dtype != a->dtype || out->dtype != a->dtype)
        return pf_error(PF_ERR_TYPE, "matmul: dtypes differ: a %s, b %s, out %s", pf_dtype_name[a->dtype],
                        pf_dtype_name[b->dtype], pf_dtype_name[out->dtype]);
    int dt = a->dtype;
    if (dt != PF_FLOAT32 && dt != PF_FLOAT64 && dt != PF_INT64 && dt != PF_INT32)
        return pf_error(PF_ERR_TYPE,
                        "matmul: the kernels take float32, float64, int64 and int32, got %s; convert with .float() "
                        "first (pyframe.matmul widens 16-bit floats and narrow integers itself)",
                        pf_dtype_name[dt]);
    for (int i = 0; i < nd - 2; i++)
        if (b->shape[i] != a->shape[i] || out->shape[i] != a->shape[i])
            return shape_error(PF_ERR_VALUE, a, b, out, "batch dims differ (broadcast them first)");
    int64_t M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1];
    if (b->shape[nd - 2] != K) return shape_error(PF_ERR_VALUE, a, b, out, "inner dims differ");
    if (out->shape[nd - 2] != M || out->shape[nd - 1] != N)
        return shape_error(PF_ERR_VALUE, a, b, out, "out has the wrong shape");

    int64_t nb = 1;
    for (int i = 0; i < nd - 2; i++) nb *= a->shape[i];
    if (nb == 0 || M == 0 || N == 0) return PF_OK;
    size_t es = pf_dtype_size[dt];
    if (K == 0) {
        for (int64_t bi = 0; bi < nb; bi++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    memset((char *)out->data + (batch_offset(out, bi) + i * out->strides[nd - 2] +
                                                 j * out->strides[nd - 1]) * (int64_t)es,
                           0, es);
        return PF_OK;
    }
    const gemm_desc *d = &descs[current_path()][dt == PF_FLOAT64];
    gemm_prob p = {M, N, K, a->data, b->data, out->data, a->strides[nd - 2], a->strides[nd - 1],
                   b->strides[nd - 2], b->strides[nd - 1], out->strides[nd - 2], out->strides[nd - 1], 0};
    double work = (double)M * N * K; /* double: broadcast (stride 0) operands can be huge */
    int nt = work * nb >= PAR_WORK ? pf_threads() : 1, err = PF_OK;
    if (nt > 1 && work < BATCH_WORK && (nb % nt == 0 || nb >= 4 * nt)) {
        batch_job j = {dt, PF_OK, d, &p, a, b, out};
        pf_parallel_range(nt, nb, run_batch, &j);
        err = j.err;
    } else {
        nt = work >= PAR_WORK ? nt : 1;
        for (int64_t bi = 0; bi < nb && !err; bi++) err = run_one(dt, d, at_batch(&p, a, b, out, bi), nt);
    }
    if (err) return pf_error(PF_ERR_NOMEM, "matmul: out of memory for packing buffers (M=%lld, N=%lld, K=%lld)",
                             (long long)M, (long long)N, (long long)K);
    return PF_OK;
}

int pf_mm(int dtype, int64_t M, int64_t N, int64_t K, const void *a, int64_t rsa, int64_t csa, const void *b,
          int64_t rsb, int64_t csb, void *c) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "mm: expected float32 or float64, got dtype code %d", dtype);
    if (M < 0 || N < 0 || K < 0)
        return pf_error(PF_ERR_VALUE, "mm: negative size M=%lld, N=%lld, K=%lld", (long long)M, (long long)N,
                        (long long)K);
    if (!M || !N) return PF_OK;
    if (!c || (K && (!a || !b))) return pf_error(PF_ERR_VALUE, "mm: missing data");
    size_t es = pf_dtype_size[dtype];
    if (!K) {
        memset(c, 0, (size_t)(M * N) * es);
        return PF_OK;
    }
    gemm_prob p = {M, N, K, a, b, c, rsa, csa, rsb, csb, N, 1, 0};
    int nt = (double)M * N * K >= PAR_WORK ? pf_threads() : 1;
    if (gemm_blocked(float_desc(dtype), p, nt, NULL, NULL))
        return pf_error(PF_ERR_NOMEM, "mm: out of memory for packing buffers (M=%lld, N=%lld, K=%lld)",
                        (long long)M, (long long)N, (long long)K);
    return PF_OK;
}

int pf_mm_bias(int dtype, int64_t M, int64_t N, int64_t K, const void *a, int64_t rsa, int64_t csa, const void *b,
               int64_t rsb, int64_t csb, const void *bias, int64_t bs, void *c) {
    if (!bias || M < 2 || K < 1 || N < 1 || (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)) {
        /* one row (a matrix-vector product, which overwrites) or nothing to multiply: add after */
        int rc = pf_mm(dtype, M, N, K, a, rsa, csa, b, rsb, csb, c);
        if (rc || !bias) return rc;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                if (dtype == PF_FLOAT32) ((float *)c)[i * N + j] += ((const float *)bias)[j * bs];
                else ((double *)c)[i * N + j] += ((const double *)bias)[j * bs];
        return PF_OK;
    }
    if (!c || !a || !b) return pf_error(PF_ERR_VALUE, "mm: missing data");
    for (int64_t i = 0; i < M; i++) /* C starts as the bias, the product accumulates onto it */
        for (int64_t j = 0; j < N; j++)
            if (dtype == PF_FLOAT32) ((float *)c)[i * N + j] = ((const float *)bias)[j * bs];
            else ((double *)c)[i * N + j] = ((const double *)bias)[j * bs];
    gemm_prob p = {M, N, K, a, b, c, rsa, csa, rsb, csb, N, 1, 1};
    int nt = (double)M * N * K >= PAR_WORK ? pf_threads() : 1;
    if (gemm_blocked(float_desc(dtype), p, nt, NULL, NULL))
        return pf_error(PF_ERR_NOMEM, "mm: out of memory for packing buffers (M=%lld, N=%lld, K=%lld)",
                        (long long)M, (long long)N, (long long)K);
    return PF_OK;
}
