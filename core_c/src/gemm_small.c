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
 * AVX-512 only (gemm.c takes this path when its kernel set is avx512). */
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

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

/* B's rows contiguous and apart by at least N elements are read in place; any other B is
 * copied row-major first (the transpose of x W^T through `pack`, gemm.c's packing routine). */
int pf_gemm_small(int f64, const pf_gemm_prob *p, pf_pack_fn pack) {
    const int64_t M = p->M, N = p->N, K = p->K;
    if (M > PF_SMALL_DIM || N > PF_SMALL_DIM || K > PF_SMALL_DIM || p->csc != 1) return 0;
    _Alignas(64) char copy[PF_SMALL_DIM * PF_SMALL_DIM * sizeof(double)];
    const void *B = p->B;
    int64_t ldb = p->rsb;
    if (p->csb != 1) {
        pack(K, N, B, p->csb, p->rsb, (int)N, copy);
        B = copy, ldb = N;
    }
    const void *A = p->A;
    void *C = p->C;
    if (f64) small_f64(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
    else small_f32(M, N, K, A, p->rsa, p->csa, B, ldb, C, p->rsc, p->acc);
    return 1;
}
#else
int pf_gemm_small(int f64, const pf_gemm_prob *p, pf_pack_fn pack) {
    (void)f64, (void)p, (void)pack;
    return 0;
}
#endif
