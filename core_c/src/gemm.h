/* Shared by the GEMM files: gemm.c (path selection, the blocked driver, the entry points) and
 * gemm_small.c (products with every dim at most PF_SMALL_DIM, unpacked, on one thread). */
#ifndef PF_GEMM_H
#define PF_GEMM_H
#include "core.h"

#define PF_SMALL_DIM 128

/* gemm.c's packing routine: dst[k * w + i] = src[i * si + k * sk] for i < cnt, k < kc */
typedef void (*pf_pack_fn)(int64_t kc, int64_t cnt, const void *src, int64_t si, int64_t sk, int w, void *dst);

/* The AVX-512 small product (float64 if f64, else float32) when every dim of p is at most
 * PF_SMALL_DIM and C's rows are contiguous, split over up to nt threads from 64^3 multiply-adds:
 * returns 1 once done, 0 (nothing written) when p does not qualify or the build has no AVX-512
 * kernels. K > 0. */
int pf_gemm_small(int f64, const pf_gemm_prob *p, pf_pack_fn pack, int nt);

/* At most PF_SKINNY_M rows of A and N or K above PF_SMALL_DIM (a Linear layer at small batch, an
 * LSTM step): B is read in place, never packed, when its rows are contiguous (the small kernels
 * over K blocks) or its columns and A's rows are (dot products: x W^T); columns split over nt
 * threads. Returns 1 once done, 0 (nothing written) when p does not qualify or there are no
 * AVX-512 kernels. K > 0. */
#define PF_SKINNY_M 32
int pf_gemm_skinny(int f64, const pf_gemm_prob *p, int nt);

#endif
