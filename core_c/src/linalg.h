/* Shared by the dense linear algebra files: linalg.c (the batch machinery, the direct methods)
 * and linalg_jacobi.c (eigh, SVD). Each kernel works on one batch element's matrices, loaded
 * into row-major double buffers. */
#ifndef PF_LINALG_H
#define PF_LINALG_H
#include "core.h"

/* what a per-matrix kernel reports; `detail` says where */
enum { LA_OK, LA_NOMEM, LA_NONFINITE, LA_SINGULAR, LA_NOTPD, LA_TRI_ZERO, LA_NOCONV, LA_OVERFLOW, LA_BADPIVOT };

/* Jacobi sweeps before giving up: quadratic convergence needs about 10 for any n we see */
#define LA_MAX_SWEEPS 100

/* The matrix (last two dims) of batch element b into a row-major rows x cols buffer, and back;
 * a vector (last dim) back. */
void pf_la_load(const pf_tensor *t, int64_t b, double *dst);
void pf_la_store(pf_tensor *t, int64_t b, const double *src);
void pf_la_store_vec(pf_tensor *t, int64_t b, const double *src);
void pf_la_load_vec(const pf_tensor *t, int64_t b, double *dst);
void pf_la_store_scalar(pf_tensor *t, int64_t b, double v); /* a 0-d value per batch element */
int pf_la_finite(const double *a, int64_t n);
/* dst (cols x rows) = src (rows x cols)^T */
void pf_la_transpose(const double *src, int64_t rows, int64_t cols, double *dst);

/* t must be float32/float64 (dt when dt >= 0), have nbd batch dims equal to bshape, then
 * `ntrail` trailing dims of sizes t0, t1 (a negative one accepts any size). */
int pf_la_expect(const pf_tensor *t, const char *fn, const char *what, int dt, int nbd, const int64_t *bshape,
                 int ntrail, int64_t t0, int64_t t1);
/* The input matrix: at least 2 dims, float, square when asked. */
int pf_la_expect_input(const pf_tensor *a, const char *fn, int square);
int64_t pf_la_batch_count(const pf_tensor *a);

/* A per-matrix kernel: LA_OK or a failure, `detail` saying where. */
typedef int (*la_kernel)(const void *ctx, int64_t b, int64_t *detail);
/* Runs fn over every batch element (threads when the work is large) and turns the first failure,
 * by batch index, into an error message. */
int pf_la_run(la_kernel fn, const void *ctx, int64_t nbatch, int64_t cost, int batched);
#endif
