/* GEMM family, small products: C (=|+=) A B with every dim at most PF_SMALL_DIM, on the
 * calling thread, with no packing buffer and no planning.
 *
 * Measured on 2 Zen 5 cores, a 40x50 @ 50x40 float32 product: the blocked path of gemm.c
 * spent as long packing A (a register transpose per 12-row panel), padding 40 rows and
 * columns to its 12 x 32 tiles and planning as multiplying. Here A is read in place (one
 * broadcast per row and k, any strides), rows of B are loaded straight from memory, and
 * tiles are 8 rows by 1-2 vectors or 6 rows by 3-4, the last vector masked: at most 7 rows
 * and 15 columns of wasted work. B whose rows are not contiguous (x W^T, the Linear layer) is first copied
 * row-major into a stack buffer, K * N elements, less than one panel packing of gemm.c.
 * AVX-512 and AVX2 kernel sets (gemm.c takes this path when its kernel set is one of them); the
 * AVX2 tiles, for its 16 registers, are 8 rows by 1 vector or 6 rows by 2. The skinny products
 * below are AVX-512 only. */
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define T256 __attribute__((target("avx2,fma")))

/* Rows i0 .. i0 + MR - 1 of C over columns j0 .. j0 + NV*W (the last vector masked by `last`):
 * the k loop keeps MR x NV accumulators (16 to 24 of the 32 registers: enough independent
 * chains to cover the FMA latency on both ports); rows past M reread row i0 and are not
 * stored. */
#define SMALL_BODY(T, V, W, M_T, SET0, LOAD, MASKZ_LOAD, SET1, FMA, ADD, MASK_STORE)                   \
    for (int64_t i0 = 0; i0 < M; i0 += MR) {                                                     \
        const int m = M - i0 < MR ? (int)(M - i0) : MR;                                    \
        const T *ar[8];                                                                         \
        for (int r = 0; r < MR; r++) ar[r] = A + (i0 + (r < m ? r : 0)) * rsa;                   \
        V c[8][4];                                                                              \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                    \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[r][v] = SET0();                     \
        const T *b = B + j0;                                                                           \
        for (int64_t k = 0; k < K; k++, b += ldb) {                                                    \
            V bv[4];                                                                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                               \
                v == NV - 1 ? MASKZ_LOAD(last, b + v * W) : LOAD(b + v * W);                           \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                              \
                V a = SET1(ar[r][k * csa]);                                                            \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[r][v] = FMA(a, bv[v], c[r][v]); \
            }                                                                                          \
        }                                                                                              \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                  \
            if (r >= m) break;                                                                         \
            T *cr = C + (i0 + r) * rsc + j0;                                                           \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                     \
                M_T mk = v == NV - 1 ? last : (M_T)-1;                                                 \
                if (acc) c[r][v] = ADD(c[r][v], MASKZ_LOAD(mk, cr + v * W));                           \
                MASK_STORE(cr + v * W, mk, c[r][v]);                                                   \
            }                                                                                          \
        }                                                                                              \
    }

#define SMALL_BLOCK(NAME, T, V, W, M_T, SET0, LOAD, MASKZ_LOAD, SET1, FMA, ADD, MASK_STORE)              \
    static inline __attribute__((always_inline)) T512 void NAME(                                          \
        const int MR, const int NV, int64_t M, int64_t K, const T *A, int64_t rsa, int64_t csa, const T *B, int64_t ldb, \
        T *C, int64_t rsc, int64_t j0, M_T last, int acc) {                                               \
        SMALL_BODY(T, V, W, M_T, SET0, LOAD, MASKZ_LOAD, SET1, FMA, ADD, MASK_STORE)                      \
    }
SMALL_BLOCK(block_f32, float, __m512, 16, __mmask16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
            _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_mask_storeu_ps)
SMALL_BLOCK(block_f64, double, __m512d, 8, __mmask8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_maskz_loadu_pd,
            _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, _mm512_mask_storeu_pd)

/* Column strips of up to 4 vectors, each a kernel with its vector count fixed. */
#define SMALL_DRIVER(NAME, T, W, M_T, BLOCK)                                                                  \
    static T512 void NAME(int64_t M, int64_t N, int64_t K, const T *A, int64_t rsa, int64_t csa, const T *B, \
                          int64_t ldb, T *C, int64_t rsc, int acc) {                                          \
        for (int64_t j0 = 0; j0 < N; j0 += 4 * W) {                                                           \
            int64_t n = N - j0 < 4 * W ? N - j0 : 4 * W;                                                      \
            int nv = (int)((n + W - 1) / W), tail = (int)(n - (nv - 1) * W);                                  \
            M_T last = tail == W ? (M_T)-1 : (M_T)((1u << tail) - 1);                                         \
            switch (nv) {                                                                                     \
            case 1: BLOCK(8, 1, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, acc); break;                        \
            case 2: BLOCK(8, 2, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, acc); break;                        \
            case 3: BLOCK(6, 3, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, acc); break;                        \
            default: BLOCK(6, 4, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, acc); break;                       \
            }                                                                                                 \
        }                                                                                                     \
    }
SMALL_DRIVER(small_f32, float, 16, __mmask16, block_f32)
SMALL_DRIVER(small_f64, double, 8, __mmask8, block_f64)

/* AVX2: the same scheme in 16 registers. Rows i0 .. i0 + MR - 1 of C over NV (1 or 2) vectors from
 * column j0; with TAIL the last vector holds `tail` < W columns: B's row is read there through the
 * lane mask `last` and C's columns are written one by one (a masked store is slow on AMD cores).
 * MR x NV accumulators (8 or 12), NV vectors of B and one broadcast of A. */
#define SMALL2_BODY(T, V, W, SET0, LOAD, MASKLOAD, SET1, FMA, ADD, STORE)                                   \
    for (int64_t i0 = 0; i0 < M; i0 += MR) {                                                               \
        const int m = M - i0 < MR ? (int)(M - i0) : MR;                                                     \
        const T *ar[8];                                                                                     \
        for (int r = 0; r < MR; r++) ar[r] = A + (i0 + (r < m ? r : 0)) * rsa;                              \
        V c[8][2];                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                                \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) c[r][v] = SET0();                          \
        const T *b = B + j0;                                                                                \
        for (int64_t k = 0; k < K; k++, b += ldb) {                                                         \
            V bv[2];                                                                                        \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) bv[v] =                                    \
                TAIL && v == NV - 1 ? MASKLOAD(b + v * W, last) : LOAD(b + v * W);                          \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                          \
                V a = SET1(ar[r][k * csa]);                                                                 \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) c[r][v] = FMA(a, bv[v], c[r][v]);      \
            }                                                                                               \
        }                                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                              \
            if (r >= m) break;                                                                              \
            T *cr = C + (i0 + r) * rsc + j0;                                                                \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) {                                          \
                if (TAIL && v == NV - 1) {                                                                  \
                    T t[W];                                                                                 \
                    STORE(t, c[r][v]);                                                                      \
                    for (int e = 0; e < tail; e++) cr[v * W + e] = acc ? cr[v * W + e] + t[e] : t[e];       \
                } else {                                                                                    \
                    if (acc) c[r][v] = ADD(c[r][v], LOAD(cr + v * W));                                      \
                    STORE(cr + v * W, c[r][v]);                                                             \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
    }

#define SMALL2_BLOCK(NAME, T, V, W, SET0, LOAD, MASKLOAD, SET1, FMA, ADD, STORE)                             \
    static inline __attribute__((always_inline)) T256 void NAME(                                             \
        const int MR, const int NV, const int TAIL, int64_t M, int64_t K, const T *A, int64_t rsa, int64_t csa, \
        const T *B, int64_t ldb, T *C, int64_t rsc, int64_t j0, __m256i last, int tail, int acc) {          \
        SMALL2_BODY(T, V, W, SET0, LOAD, MASKLOAD, SET1, FMA, ADD, STORE)                                   \
    }
SMALL2_BLOCK(block2_f32, float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_maskload_ps,
             _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps)
SMALL2_BLOCK(block2_f64, double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_maskload_pd,
             _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_storeu_pd)

/* Column strips of up to 2 vectors; lanes of `last` are all ones (as int32 pairs for float64) below
 * the tail's width. Two-vector strips take 6-row tiles and, when M % 6 is 1 to 4, one 4-row tile
 * for the last rows (still 8 accumulator chains: 32^3 and 128^3 computed 4 rows of nothing per
 * strip in a last 6-row tile). The tiles change no element's sum. */
#define SMALL2_ROWS6(BLOCK, TAIL)                                                                             \
    {                                                                                                         \
        int64_t r4 = M % 6 && M % 6 <= 4 ? M % 6 : 0, m6 = M - r4;                                          \
        if (m6) BLOCK(6, 2, TAIL, m6, K, A, rsa, csa, B, ldb, C, rsc, j0, last, tail, acc);                  \
        if (r4) BLOCK(4, 2, TAIL, r4, K, A + m6 * rsa, rsa, csa, B, ldb, C + m6 * rsc, rsc, j0, last, tail, acc); \
    }
#define SMALL2_DRIVER(NAME, T, W, BLOCK)                                                                      \
    static T256 void NAME(int64_t M, int64_t N, int64_t K, const T *A, int64_t rsa, int64_t csa, const T *B, \
                          int64_t ldb, T *C, int64_t rsc, int acc) {                                          \
        for (int64_t j0 = 0; j0 < N; j0 += 2 * W) {                                                           \
            int64_t n = N - j0 < 2 * W ? N - j0 : 2 * W;                                                      \
            int nv = (int)((n + W - 1) / W), tail = (int)(n - (nv - 1) * W);                                  \
            __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail * (8 / W)),                              \
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));                     \
            if (tail == W) {                                                                                  \
                if (nv == 1) BLOCK(8, 1, 0, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, tail, acc);          \
                else SMALL2_ROWS6(BLOCK, 0)                                                                   \
            } else {                                                                                          \
                if (nv == 1) BLOCK(8, 1, 1, M, K, A, rsa, csa, B, ldb, C, rsc, j0, last, tail, acc);          \
                else SMALL2_ROWS6(BLOCK, 1)                                                                   \
            }                                                                                                 \
        }                                                                                                     \
    }
SMALL2_DRIVER(small2_f32, float, 8, block2_f32)
SMALL2_DRIVER(small2_f64, double, 4, block2_f64)

/* B's rows contiguous, 64-byte aligned and apart by at least N elements are read in place; any
 * other B is copied row-major first into rows of whole cache lines (the transpose of x W^T
 * through `pack`, gemm.c's packing routine). A misaligned B (NumPy's memory is 16-byte aligned)
 * split every vector load across two lines, on each of the M / 8 passes over it: 15% of a
 * 128^3 product; the copy costs one pass. AVX2's 32-byte loads split only every other time: on
 * Zen 3 the copy cost more than it saved up to 96 rows (32^3 0.96 against 0.87 us, 96x112x80 18.1
 * against 17.4) and gained 3% at 128. */
static void small_serial(int wide, int f64, const pf_gemm_prob *p, pf_pack_fn pack) {
    const int64_t M = p->M, N = p->N, K = p->K, es = f64 ? 8 : 4, line = 64 / es;
    _Alignas(64) char copy[PF_SMALL_DIM * PF_SMALL_DIM * sizeof(double)];
    const void *B = p->B;
    int64_t ldb = p->rsb;
    int misaligned = (((uintptr_t)B | (uintptr_t)(ldb * es)) & 63) != 0;
    if (p->csb != 1 || (misaligned && M >= (wide ? 24 : 128) && N >= line)) {
        ldb = (N + line - 1) / line * line;
        pack(K, N, B, p->csb, p->rsb, (int)ldb, copy);
        B = copy;
    }
    const void *A = p->A;
    void *C = p->C;
    if (!wide && f64) small2_f64(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
    else if (!wide) small2_f32(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
    else if (f64) small_f64(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
    else small_f32(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
}

/* A team's share of a small product: column strips of the drivers' width (each thread copies
 * only its own columns of a B that needs copying), or blocks of 24 rows (a multiple of both row
 * tiles) when N is a single strip. Every element of C is summed over k in the same order
 * however the product is split, so the bits never depend on the thread count. */
typedef struct {
    const pf_gemm_prob *p;
    pf_pack_fn pack;
    int wide, f64, by_cols;
    int64_t unit;
} small_job;

static void small_part(void *arg, int64_t u0, int64_t u1) {
    const small_job *s = arg;
    pf_gemm_prob q = *s->p;
    const int64_t es = s->f64 ? 8 : 4, lim = s->by_cols ? q.N : q.M;
    const int64_t x0 = u0 * s->unit, x1 = u1 * s->unit < lim ? u1 * s->unit : lim;
    if (s->by_cols) {
        q.N = x1 - x0;
        q.B += x0 * q.csb * es;
        q.C += x0 * q.csc * es;
    } else {
        q.M = x1 - x0;
        q.A += x0 * q.rsa * es;
        q.C += x0 * q.rsc * es;
    }
    small_serial(s->wide, s->f64, &q, s->pack);
}

#define SMALL_SPLIT_WORK (64 * 64 * 64) /* a split costs about a microsecond: worth it from here */

int pf_gemm_small(int wide, int f64, const pf_gemm_prob *p, pf_pack_fn pack, int nt) {
    const int64_t M = p->M, N = p->N, K = p->K;
    if (M > PF_SMALL_DIM || N > PF_SMALL_DIM || K > PF_SMALL_DIM || p->csc != 1) return 0;
    if (nt > 1 && (double)M * N * K >= SMALL_SPLIT_WORK) {
        small_job s = {p, pack, wide, f64, 0, 0};
        /* the drivers' strip width: 4 vectors of AVX-512, 2 of AVX2 (AVX2 took AVX-512's 64 floats, so 64^3
         * split its rows 48 / 16 and ran slower on 2 threads than on 1) */
        int64_t strip = (f64 ? 16 : 32) << wide;
        if (N > strip) s.by_cols = 1, s.unit = strip;
        else s.unit = 24;
        pf_parallel_range(nt, ((s.by_cols ? N : M) + s.unit - 1) / s.unit, small_part, &s);
        return 1;
    }
    small_serial(wide, f64, p, pack);
    return 1;
}

/* ---- skinny products: M <= PF_SKINNY_M rows, N and K any size ---- */

/* C[i, j] (=|+=) sum_k A[i, k] B^T[j, k] with A's rows and B^T's rows (B's columns) contiguous, as
 * x W^T reads a Linear weight: MR x 4 dot products over vectors of k, each summed once at the end,
 * C stored element by element (any strides). Rows past m and columns past nj reread the first
 * and are not stored. */
#define DOT_BLOCK(NAME, T, V, W, M_T, SET0, LOAD, MASKZ_LOAD, FMA, REDUCE)                                   \
    static inline __attribute__((always_inline)) T512 void NAME(                                              \
        const int MR, int m, int nj, int64_t K, const T *A, int64_t lda, const T *B, int64_t ldb, T *C,       \
        int64_t rsc, int64_t csc, int acc) {                                                                  \
        const T *ar[4], *br[4];                                                                               \
        for (int r = 0; r < 4; r++) ar[r] = A + (r < m ? r : 0) * lda;                                        \
        for (int s = 0; s < 4; s++) br[s] = B + (s < nj ? s : 0) * ldb;                                       \
        V c[4][4];                                                                                            \
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)                                                  \
            _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) c[r][s] = SET0();                            \
        int64_t k = 0;                                                                                        \
        for (; k + W <= K; k += W) {                                                                          \
            V a[4], b[4];                                                                                     \
            _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) a[r] = LOAD(ar[r] + k);                      \
            _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) b[s] = LOAD(br[s] + k);                       \
            _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)                                              \
                _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) c[r][s] = FMA(a[r], b[s], c[r][s]);      \
        }                                                                                                     \
        if (k < K) {                                                                                          \
            M_T mk = (M_T)((1u << (K - k)) - 1);                                                              \
            V a[4], b[4];                                                                                     \
            _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) a[r] = MASKZ_LOAD(mk, ar[r] + k);            \
            _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) b[s] = MASKZ_LOAD(mk, br[s] + k);             \
            _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)                                              \
                _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) c[r][s] = FMA(a[r], b[s], c[r][s]);      \
        }                                                                                                     \
        for (int r = 0; r < m; r++)                                                                           \
            for (int s = 0; s < nj; s++) {                                                                    \
                T v = REDUCE(c[r][s]), *cp = C + r * rsc + s * csc;                                           \
                *cp = acc ? *cp + v : v;                                                                      \
            }                                                                                                 \
    }
DOT_BLOCK(dot_f32, float, __m512, 16, __mmask16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
          _mm512_fmadd_ps, _mm512_reduce_add_ps)
DOT_BLOCK(dot_f64, double, __m512d, 8, __mmask8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_maskz_loadu_pd,
          _mm512_fmadd_pd, _mm512_reduce_add_pd)

/* columns [j0, j1) of C: four rows of B^T at a time (they stay in L1) against every row of A */
#define DOT_DRIVER(NAME, T, BLOCK)                                                                            \
    static T512 void NAME(const pf_gemm_prob *p, int64_t j0, int64_t j1) {                                   \
        const T *A = (const T *)p->A, *B = (const T *)p->B;                                                   \
        T *C = (T *)p->C;                                                                                     \
        for (int64_t j = j0; j < j1; j += 4) {                                                                \
            int nj = j1 - j < 4 ? (int)(j1 - j) : 4;                                                          \
            for (int64_t i = 0; i < p->M; i += 4) {                                                           \
                int m = p->M - i < 4 ? (int)(p->M - i) : 4;                                                   \
                const T *a = A + i * p->rsa, *b = B + j * p->csb;                                             \
                T *c = C + i * p->rsc + j * p->csc;                                                           \
                switch (m) {                                                                                  \
                case 1: BLOCK(1, m, nj, p->K, a, p->rsa, b, p->csb, c, p->rsc, p->csc, p->acc); break;        \
                case 2: BLOCK(2, m, nj, p->K, a, p->rsa, b, p->csb, c, p->rsc, p->csc, p->acc); break;        \
                case 3: BLOCK(3, m, nj, p->K, a, p->rsa, b, p->csb, c, p->rsc, p->csc, p->acc); break;        \
                default: BLOCK(4, m, nj, p->K, a, p->rsa, b, p->csb, c, p->rsc, p->csc, p->acc); break;       \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }
DOT_DRIVER(dots_f32, float, dot_f32)
DOT_DRIVER(dots_f64, double, dot_f64)

/* rows of B in place (B's rows contiguous, C's too): the small kernels over columns [j0, j1), K in
 * blocks whose 64-column strip of B stays in L1 while every row of A passes over it */
#define SKINNY_KC 128
static void rows_part(int f64, const pf_gemm_prob *p, int64_t j0, int64_t j1) {
    size_t es = f64 ? 8 : 4;
    for (int64_t k0 = 0; k0 < p->K; k0 += SKINNY_KC) {
        int64_t kc = p->K - k0 < SKINNY_KC ? p->K - k0 : SKINNY_KC;
        const char *a = p->A + (size_t)(k0 * p->csa) * es, *b = p->B + (size_t)(k0 * p->rsb + j0) * es;
        char *c = p->C + (size_t)j0 * es;
        int acc = p->acc || k0 > 0;
        if (f64) small_f64(p->M, j1 - j0, kc, (const double *)a, p->rsa, p->csa, (const double *)b, p->rsb,
                           (double *)c, p->rsc, acc);
        else small_f32(p->M, j1 - j0, kc, (const float *)a, p->rsa, p->csa, (const float *)b, p->rsb, (float *)c,
                       p->rsc, acc);
    }
}

/* x W^T as C^T = W x^T (float32): x is copied once, transposed, into xt (K x ldx); each tile of
 * WT_NB rows of W (columns of C) is multiplied by the small kernels with W read in place, one
 * broadcast per element (W streams from memory once, never packed), into a C^T tile on the
 * stack that 16 x 16 register transposes write out (and read in first when accumulating). */
#define WT_NB 48  /* rows of W per tile */
#define WT_KC 384 /* K per pass over the tile (128 measured 10-25% slower) */
typedef struct {
    const pf_gemm_prob *p;
    const float *xt;
    int64_t ldx;
} wt_job;

static T512 void wt_range(void *arg, int64_t u0, int64_t u1) {
    const wt_job *s = arg;
    const pf_gemm_prob *p = s->p;
    const int64_t M = p->M, K = p->K, ldx = s->ldx, jend = u1 * WT_NB < p->N ? u1 * WT_NB : p->N;
    const float *W = (const float *)p->B;
    float *C = (float *)p->C;
    _Alignas(64) float ct[WT_NB * PF_WT_M];
    const float *rows[16];
    for (int64_t j0 = u0 * WT_NB; j0 < jend; j0 += WT_NB) {
        const int64_t nb = jend - j0 < WT_NB ? jend - j0 : WT_NB;
        if (p->acc)
            for (int64_t i0 = 0; i0 < M; i0 += 16) {
                int nr = M - i0 < 16 ? (int)(M - i0) : 16;
                for (int r = 0; r < nr; r++) rows[r] = C + (i0 + r) * p->rsc + j0;
                pf_transpose_rows_f32(rows, nr, nr, nb, ct + i0, ldx);
            }
        for (int64_t k0 = 0; k0 < K; k0 += WT_KC) {
            int64_t kc = K - k0 < WT_KC ? K - k0 : WT_KC;
            small_f32(nb, M, kc, W + j0 * p->csb + k0, p->csb, 1, s->xt + k0 * ldx, ldx, ct, ldx, p->acc || k0 > 0);
        }
        for (int64_t r0 = 0; r0 < nb; r0 += 16) {
            int nr = nb - r0 < 16 ? (int)(nb - r0) : 16;
            for (int r = 0; r < nr; r++) rows[r] = ct + (r0 + r) * ldx;
            pf_transpose_rows_f32(rows, nr, nr, M, C + j0 + r0, p->rsc);
        }
    }
}

/* Returns 1 once done, 0 (nothing written) when p is not x W^T on float32 with PF_WT_MIN_M ..
 * PF_WT_M rows and contiguous C rows, or the copy of x cannot be allocated. */
static int wt_product(const pf_gemm_prob *p, int nt) {
    const int64_t M = p->M, K = p->K, ldx = (M + 15) / 16 * 16;
    if (M < PF_WT_MIN_M || M > PF_WT_M || p->rsb != 1 || p->csb == 1 || p->csc != 1) return 0;
    float *xt = pf_alloc((size_t)(K * ldx) * sizeof(float));
    if (!xt) return 0;
    const float *A = (const float *)p->A;
    if (p->csa == 1)
        for (int64_t i0 = 0; i0 < M; i0 += 16) {
            const float *rows[16];
            int nr = M - i0 < 16 ? (int)(M - i0) : 16;
            for (int r = 0; r < nr; r++) rows[r] = A + (i0 + r) * p->rsa;
            pf_transpose_rows_f32(rows, nr, 16, K, xt + i0, ldx);
        }
    else
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < ldx; i++) xt[k * ldx + i] = i < M ? A[i * p->rsa + k * p->csa] : 0.0f;
    wt_job s = {p, xt, ldx};
    pf_parallel_range(nt, (p->N + WT_NB - 1) / WT_NB, wt_range, &s);
    pf_free(xt);
    return 1;
}

typedef struct {
    const pf_gemm_prob *p;
    int f64, dot;
    int64_t unit; /* columns per work item: 4 dot blocks or one 64-column strip */
} skinny_job;

static void skinny_range(void *arg, int64_t u0, int64_t u1) {
    const skinny_job *s = arg;
    int64_t j0 = u0 * s->unit, j1 = u1 * s->unit < s->p->N ? u1 * s->unit : s->p->N;
    if (!s->dot) rows_part(s->f64, s->p, j0, j1);
    else if (s->f64) dots_f64(s->p, j0, j1);
    else dots_f32(s->p, j0, j1);
}

int pf_gemm_skinny(int f64, const pf_gemm_prob *p, int nt) {
    if (p->N <= PF_SMALL_DIM && p->K <= PF_SMALL_DIM) return 0;
    if (!f64 && wt_product(p, nt)) return 1;
    if (p->M > PF_SKINNY_M) return 0;
    skinny_job s = {p, f64, 0, 0};
    if (p->csb == 1 && p->csc == 1) s.unit = f64 ? 32 : 64;
    else if (p->csa == 1 && p->rsb == 1) s.dot = 1, s.unit = 4;
    else return 0;
    int64_t units = (p->N + s.unit - 1) / s.unit;
    pf_parallel_range(nt, units, skinny_range, &s);
    return 1;
}

/* ---- x W^T on AVX2 (gen) ------------------------------------------------------------------------------
 * The AVX-512 wt path above as AVX2 + FMA, from 2 rows: x transposed once into xt (K x ldx, ldx = M rounded up
 * to 8, zero-padded); each tile of WT_NB rows of W (read in place, broadcast per element) times xt into a C^T tile
 * on the stack, 6 W rows by 2 vectors (or 12 rows by 1) of x's rows in registers; then the tile is written into
 * C's columns. W is never packed: at generation's sizes (24 weights, 42 MB, 1-64 rows) the blocked path's
 * per-call W^T pack cost as much as its product. Each C element is one tile's, K in order: the same bits at any
 * thread count. */
#define WT2_MAXM 64
typedef struct {
    const pf_gemm_prob *p;
    const float *xt;
    int64_t ldx;
} wt2_job;

PF_WT_TILE(6, 2)
PF_WT_TILE(12, 1)

static T256 void wt2_range(void *arg, int64_t u0, int64_t u1) {
    const wt2_job *s = arg;
    const pf_gemm_prob *p = s->p;
    const int64_t M = p->M, K = p->K, ldx = s->ldx, jend = u1 * WT_NB < p->N ? u1 * WT_NB : p->N;
    const float *W = (const float *)p->B;
    float *C = (float *)p->C;
    _Alignas(32) float ct[WT_NB * WT2_MAXM];
    for (int64_t j0 = u0 * WT_NB; j0 < jend; j0 += WT_NB) {
        const int64_t nb = jend - j0 < WT_NB ? jend - j0 : WT_NB;
        for (int64_t k0 = 0; k0 < K; k0 += WT_KC) {
            int64_t kc = K - k0 < WT_KC ? K - k0 : WT_KC;
            const float *xk = s->xt + k0 * ldx;
            const int64_t c1 = ldx / 16 * 16; /* pairs of vectors of x's rows up to c1, then one vector */
            for (int64_t r0 = 0; c1 && r0 < nb; r0 += 6) {
                int nr = nb - r0 < 6 ? (int)(nb - r0) : 6;
                const float *w = W + (j0 + r0) * p->csb + k0;
                for (int64_t c0 = 0; c0 < c1; c0 += 16)
                    pf_wt_tile_6_2(nr, kc, w, p->csb, xk + c0, ldx, ct + r0 * ldx + c0, k0 == 0);
            }
            for (int64_t r0 = 0; c1 < ldx && r0 < nb; r0 += 12) {
                int nr = nb - r0 < 12 ? (int)(nb - r0) : 12;
                pf_wt_tile_12_1(nr, kc, W + (j0 + r0) * p->csb + k0, p->csb, xk + c1, ldx, ct + r0 * ldx + c1, k0 == 0);
            }
        }
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * p->rsc + j0;
            if (p->acc)
                for (int64_t r = 0; r < nb; r++) c[r] += ct[r * ldx + i];
            else
                for (int64_t r = 0; r < nb; r++) c[r] = ct[r * ldx + i];
        }
    }
}

int pf_gemm_wt2(const pf_gemm_prob *p, int nt) {
    const int64_t M = p->M, K = p->K, ldx = (M + 7) / 8 * 8;
    if (M < 2 || M > WT2_MAXM || p->rsb != 1 || p->csb == 1 || p->csc != 1) return 0;
    if (p->N <= PF_SMALL_DIM && K <= PF_SMALL_DIM) return 0;
    float *xt = pf_alloc((size_t)(K * ldx) * sizeof(float));
    if (!xt) return 0;
    const float *A = (const float *)p->A;
    for (int64_t k = 0; k < K; k++)
        for (int64_t i = 0; i < ldx; i++) xt[k * ldx + i] = i < M ? A[i * p->rsa + k * p->csa] : 0.0f;
    wt2_job s = {p, xt, ldx};
    pf_parallel_range(nt, (p->N + WT_NB - 1) / WT_NB, wt2_range, &s);
    pf_free(xt);
    return 1;
}
#else
int pf_gemm_wt2(const pf_gemm_prob *p, int nt) {
    (void)p, (void)nt;
    return 0;
}
int pf_gemm_small(int wide, int f64, const pf_gemm_prob *p, pf_pack_fn pack, int nt) {
    (void)wide, (void)f64, (void)p, (void)pack, (void)nt;
    return 0;
}
int pf_gemm_skinny(int f64, const pf_gemm_prob *p, int nt) {
    (void)f64, (void)p, (void)nt;
    return 0;
}
#endif
