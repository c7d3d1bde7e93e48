/* Shared by the GEMM files: gemm.c (path selection, the blocked driver, the entry points) and
 * gemm_small.c (products with every dim at most PF_SMALL_DIM, unpacked, on one thread). */
#ifndef PF_GEMM_H
#define PF_GEMM_H
#include "core.h"

#define PF_SMALL_DIM 128

/* gemm.c's packing routine: dst[k * w + i] = src[i * si + k * sk] for i < cnt, k < kc */
typedef void (*pf_pack_fn)(int64_t kc, int64_t cnt, const void *src, int64_t si, int64_t sk, int w, void *dst);

/* The small product (float64 if f64, else float32; AVX-512 kernels if wide, else AVX2) when every
 * dim of p is at most PF_SMALL_DIM and C's rows are contiguous, split over up to nt threads from
 * 64^3 multiply-adds: returns 1 once done, 0 (nothing written) when p does not qualify or the build
 * has no x86 kernels. The CPU must have the kernel set asked for. K > 0. */
int pf_gemm_small(int wide, int f64, const pf_gemm_prob *p, pf_pack_fn pack, int nt);

/* Few rows of A and N or K above PF_SMALL_DIM (a Linear layer at small batch, an LSTM step): B is
 * read in place, never packed. float32 x W^T (B's columns contiguous, C's rows too) with
 * PF_WT_MIN_M .. PF_WT_M rows is computed as C^T = W x^T, W read by the small kernels; else, with
 * at most PF_SKINNY_M rows, the small kernels over K blocks when B's rows are contiguous, or dot
 * products when B's columns and A's rows are. Columns split over nt threads. Returns 1 once done,
 * 0 (nothing written) when p does not qualify or there are no AVX-512 kernels. K > 0.
 * Measured at 1 thread on GPT generation's weights (24 cycled, 42 MB): the transposing pack of W
 * that the blocked path made per call cost as much as its product at 33..64 rows, and the dot
 * products ran at 70-100 GFLOP/s against 110-150 for W x^T from 16 rows; below 16 rows the dot
 * products win (W x^T's vectors of rows are mostly empty). */
#define PF_SKINNY_M 32
#define PF_WT_MIN_M 16
#define PF_WT_M 64
int pf_gemm_skinny(int f64, const pf_gemm_prob *p, int nt);
/* float32 x W^T (as pf_gemm_skinny's C^T = W x^T) on the AVX2 + FMA kernels, 2 .. 64 rows: returns 1 once done,
 * 0 (nothing written) when p does not qualify or the build has no x86 kernels. K > 0. */
int pf_gemm_wt2(const pf_gemm_prob *p, int nt);

/* The AVX2 + FMA tile of W x^T read in place (pf_gemm_wt2, and conv_taps.c's batch-1 rows):
 * ct[r, 0 .. 8 NV) (=|+=) sum over kc of w[r, k] xt[k, ..] for rows r < MR (past nr: reread, not stored), each
 * output's sum in k order. A file instantiates the tiles it calls (PF_WT_TILE(6, 2) defines pf_wt_tile_6_2)
 * after including <immintrin.h>: always_inline kernels are not called across files. */
#define PF_WT_TILE(MR, NV)                                                                                          \
    static inline __attribute__((always_inline)) __attribute__((target("avx2,fma"))) void pf_wt_tile_##MR##_##NV(                                  \
        int nr, int64_t kc, const float *w, int64_t ldw, const float *xt, int64_t ldx, float *ct, int first) {  \
        const float *wr[MR];                                                                                      \
        for (int r = 0; r < MR; r++) wr[r] = w + (r < nr ? r : 0) * ldw;                                          \
        __m256 c[MR][NV];                                                                                         \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++)                                                     \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                                  \
            c[r][v] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(ct + r * ldx + 8 * v);                       \
        for (int64_t k = 0; k < kc; k++) {                                                                        \
            __m256 b[NV];                                                                                         \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) b[v] = _mm256_loadu_ps(xt + k * ldx + 8 * v);    \
            _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                                               \
                __m256 a = _mm256_broadcast_ss(wr[r] + k);                                                        \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) c[r][v] = _mm256_fmadd_ps(a, b[v], c[r][v]); \
            }                                                                                                     \
        }                                                                                                         \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                                                   \
            if (r >= nr) break;                                                                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) _mm256_storeu_ps(ct + r * ldx + 8 * v, c[r][v]); \
        }                                                                                                         \
    }

#endif
