/* An LSTM layer over a whole sequence, forward and backward, one call each way.
 *
 * The op-by-op step (a GEMM, an add, four activations, a cell update, each a Python call and a
 * new tensor, and twice as many back) costs more than its arithmetic at language-model sizes;
 * here the time loop runs in C. Forward keeps the activated gates and every c for backward;
 * backward walks the steps in reverse, writing each step's gate gradient and carrying dh and dc.
 * The weight gradient dG^T [h0; h_1..h_{L-1}] is one GEMM over all steps, left to the caller.
 * Gates are (i, f, g, o) as torch lays them out.
 *
 * float32 on the AVX-512 kernels (the language-model case): W_hh is packed once per call into
 * panels of 16 hidden units, read by every step, and each step is one parallel region in which a
 * thread owns a range of units: it multiplies h_{t-1} by its panels (6-row by 64-column register
 * tiles, the four gates of 16 units) and runs the cell on those units at once, so the gates never
 * leave the thread's cache and a step needs no barrier but its end. Backward does the same with
 * dG_{t+1} W_hh over panels of W_hh's columns. At batch 20 the general GEMM would not pack W_hh
 * (too few rows to repay it per product) and pads 20 columns to its 32-wide tiles; here the pack
 * is made once for 35 steps and no lane is wasted but the last block's. The pack lives for one
 * call: a weight changed between calls is always read afresh. On AVX2 the same scheme runs with
 * panels of 8 units and 3-row register tiles (16 vector registers, not 32).
 * Other dtypes and kernel sets: per step one product (pf_mm) and one pass of the cell.
 *
 * Under trapping math (the core builds without it) gcc kept pf_expf's selects scalar in the AVX2 clones, so the
 * backward cell (and the forward one off the packed path) ran one unit at a time on AVX2 machines. No contraction
 * is asked for: the vector cells give the scalar ones' bits. */
#include <string.h>
#include "core.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define RNN_X86 1
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define T256 __attribute__((target("avx2,fma")))
#endif

/* Cells over units [0, w) of N rows; pointers start at the first unit, rows of xw, act and dg are
 * 4H apart, of cp, c, h, dh and dc H apart; hw's rows are hrs apart and its gates hqs apart.
 * Every pointer is restrict (none alias), which lets gcc vectorize over the units. */
#define LSTM_KERNELS(T, SUF, SIG, TANH)                                                                 \
    /* one step: gates = xw + hw + b; c = f c_prev + i g; h = o tanh(c) */                            \
    PF_VEC_CLONES static void cell_fwd_##SUF(int64_t N, int64_t H, int64_t w, const T *restrict xw,     \
                                             const T *restrict hw, int64_t hrs, int64_t hqs,           \
                                             const T *restrict b, const T *restrict cp, T *restrict c,  \
                                             T *restrict h, T *restrict act) {                          \
        for (int64_t n = 0; n < N; n++) {                                                             \
            const T *x = xw + n * 4 * H, *y = hw + n * hrs, *pc = cp + n * H;                         \
            T *a = act + n * 4 * H, *cn = c + n * H, *hn = h + n * H;                                 \
            for (int64_t j = 0; j < w; j++) {                                                         \
                T i = SIG(x[j] + y[j] + b[j]), f = SIG(x[H + j] + y[hqs + j] + b[H + j]);              \
                T g = TANH(x[2 * H + j] + y[2 * hqs + j] + b[2 * H + j]);                             \
                T o = SIG(x[3 * H + j] + y[3 * hqs + j] + b[3 * H + j]);                              \
                T cv = f * pc[j] + i * g;                                                             \
                cn[j] = cv;                                                                           \
                hn[j] = o * TANH(cv);                                                                 \
                a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;                           \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    /* one step back: dh (this step's h gradient, all of it) and dc (carried) in; the gate           \
     * gradient dg out and dc replaced by the gradient of c_prev */                                 \
    PF_VEC_CLONES static void cell_bwd_##SUF(int64_t N, int64_t H, int64_t w, const T *restrict act,    \
                                             const T *restrict c, const T *restrict cp,                \
                                             const T *restrict dh, T *restrict dc, T *restrict dg) {   \
        for (int64_t n = 0; n < N; n++) {                                                             \
            const T *a = act + n * 4 * H, *cr = c + n * H, *pc = cp + n * H, *gh = dh + n * H;        \
            T *d = dg + n * 4 * H, *dcr = dc + n * H;                                                 \
            for (int64_t j = 0; j < w; j++) {                                                         \
                T i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];                         \
                T tc = TANH(cr[j]);                                                                   \
                T gc = dcr[j] + gh[j] * o * (1 - tc * tc);                                            \
                d[j] = gc * g * i * (1 - i);                                                          \
                d[H + j] = gc * pc[j] * f * (1 - f);                                                  \
                d[2 * H + j] = gc * i * (1 - g * g);                                                  \
                d[3 * H + j] = gh[j] * tc * o * (1 - o);                                              \
                dcr[j] = gc * f;                                                                      \
            }                                                                                         \
        }                                                                                             \
    }

LSTM_KERNELS(float, f32, pf_sigmoidf, pf_tanhf)
LSTM_KERNELS(double, f64, pf_sigmoid, tanh)

static int check_sizes(int dtype, int64_t L, int64_t N, int64_t H, const char *fn) {
    if (dtype != PF_FLOAT32 && dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s(): dtype must be float32 or float64, got %s", fn,
                        dtype >= 0 && dtype < PF_NUM_DTYPES ? pf_dtype_name[dtype] : "an unknown dtype");
    if (L < 0 || N < 0 || H < 0)
        return pf_error(PF_ERR_VALUE, "%s(): sizes must be >= 0, got L=%lld, N=%lld, H=%lld", fn, (long long)L,
                        (long long)N, (long long)H);
    return PF_OK;
}

/* zeros for a missing b_hh, and a step's gates when forward keeps none (threads write disjoint
 * units of it); both freed by the caller */
static int scratch(size_t es, int64_t N, int64_t H, const void **b, void **acts, void **zb, void **ab) {
    *zb = *ab = NULL;
    if (!*b) {
        if (!(*zb = pf_alloc((size_t)(4 * H) * es))) return PF_ERR_NOMEM;
        memset(*zb, 0, (size_t)(4 * H) * es);
        *b = *zb;
    }
    if (!*acts && !(*ab = pf_alloc((size_t)(4 * N * H) * es))) return PF_ERR_NOMEM;
    return PF_OK;
}

/* ---- float32 on AVX-512: W_hh packed once, threads own units ---------------------------- */

#define UB 16 /* hidden units per panel: one vector */
/* Rows of B ahead that a tile asks for when it is the first over a K block (pre): the forward's
 * panel rows (256 contiguous bytes each, from L3) arrived late for the FMAs and its tiles took
 * ~16% fewer CPU samples with this (perf, 1 thread, 3 alternating runs). The backward's four
 * panels a row are separate streams that the hardware prefetcher already follows: no gain there.
 * A prefetch past the pack's end is harmless (it never faults). */
#define PRE_K 32
#define MAX_ROWS 6 /* rows of a register tile: 6 x 4 accumulators + 4 panel vectors + 1 broadcast */

#ifdef RNN_X86
/* C[r][16v + l] (=, or += with acc; the last vector's lanes masked by `last`) = sum_k A[r lda + k]
 * B[k ldb + v vs + l] for r < MR, v < NV: rows of A broadcast against NV vectors of B per k */
static inline __attribute__((always_inline)) T512 void tile(const int MR, const int NV, int64_t K, const float *A,
                                                            int64_t lda, const float *B, int64_t ldb, int64_t vs,
                                                            float *C, int64_t ldc, __mmask16 last, int add,
                                                            int pre) {
    __m512 acc[MAX_ROWS][4];
    const float *ar[MAX_ROWS];
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {
        ar[r] = A + r * lda;
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =
            add ? _mm512_maskz_loadu_ps(v == NV - 1 ? last : (__mmask16)0xffff, C + r * ldc + v * UB)
                : _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; k++, B += ldb) {
        __m512 b[4];
        if (pre)
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)
                _mm_prefetch((const char *)(B + PRE_K * ldb + v * vs), _MM_HINT_T0);
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) b[v] = _mm512_loadu_ps(B + v * vs);
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {
            __m512 a = _mm512_set1_ps(ar[r][k]);
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(C + r * ldc + v * UB, v == NV - 1 ? last : (__mmask16)0xffff, acc[r][v]);
}

#define TILE_CASE(M, V)                                                                                \
    case (V) * 8 + (M): tile(M, V, K, A, lda, B, ldb, vs, C, ldc, last, add, pre); break;
#define TILE_ROWS(V) TILE_CASE(1, V) TILE_CASE(2, V) TILE_CASE(3, V) TILE_CASE(4, V) TILE_CASE(5, V) TILE_CASE(6, V)

/* m <= MAX_ROWS rows, nv <= 4 vectors */
static T512 void tile_any(int m, int nv, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                          int64_t vs, float *C, int64_t ldc, __mmask16 last, int add, int pre) {
    switch (nv * 8 + m) {
        TILE_ROWS(1)
        TILE_ROWS(2)
        TILE_ROWS(3)
        TILE_ROWS(4)
    default: break;
    }
}

/* all N rows of A in tiles of nearly equal height, over K in blocks whose rows of B (KC x 64
 * values, 32 KB) stay in L1 while every tile reads them: only the first streams them from L3 */
#define KC 128
static void tiles(int64_t N, int nv, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, int64_t vs,
                  float *C, int64_t ldc, __mmask16 last, int pre) {
    int64_t nt = (N + MAX_ROWS - 1) / MAX_ROWS, r0, r1;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        int64_t kc = K - k0 < KC ? K - k0 : KC;
        for (int64_t i = 0; i < nt; i++) {
            pf_split(N, (int)i, (int)nt, &r0, &r1);
            tile_any((int)(r1 - r0), nv, kc, A + r0 * lda + k0, lda, B + k0 * ldb, ldb, vs, C + r0 * ldc, ldc, last,
                     k0 > 0, pre && i == 0);
        }
    }
}

/* pf_expf, pf_sigmoidf and pf_tanhf (core.h) on 16 lanes: the same reduction and polynomials, with
 * 2^n by scalef. gcc vectorizes those over a row's 16 units too, but one vector per row left each
 * row's long dependency chains exposed (6 ms of a 35-step layer at 20 x 650, 4x the tiles' time
 * per element); written out here, consecutive rows overlap. */
static inline __attribute__((always_inline)) T512 __m512 exp16(__m512 x) {
    __m512 xc = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.72283935546875f)), _mm512_set1_ps(-103.97208f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500E-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    __m512 y = _mm512_scalef_ps(p, n); /* inf above the clamp, 0 below it */
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

static inline __attribute__((always_inline)) T512 __m512 sigmoid16(__m512 x) {
    __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

static inline __attribute__((always_inline)) T512 __m512 tanh16(__m512 x) {
    __m512 sign = _mm512_set1_ps(-0.0f), ax = _mm512_andnot_ps(sign, x), z = _mm512_mul_ps(ax, ax);
    __m512 p = _mm512_set1_ps(-5.70498872745E-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954E-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531E-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036E-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422E-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), ax, ax);
    __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(2.0f), _mm512_min_ps(ax, _mm512_set1_ps(10.0f))));
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 big = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    __m512 y = _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ), small);
    y = _mm512_or_ps(y, _mm512_and_ps(sign, x)); /* copysign */
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* cell_fwd_f32 on one block of w <= 16 units: hw's gates are 16 apart, its rows 64 */
static T512 void cell_block(int64_t N, int64_t H, int64_t w, const float *xw, const float *hw, const float *b,
                            const float *cp, float *c, float *h, float *act) {
    __mmask16 m = (__mmask16)((1u << w) - 1);
    __m512 bi = _mm512_maskz_loadu_ps(m, b), bf = _mm512_maskz_loadu_ps(m, b + H);
    __m512 bg = _mm512_maskz_loadu_ps(m, b + 2 * H), bo = _mm512_maskz_loadu_ps(m, b + 3 * H);
    for (int64_t n = 0; n < N; n++) {
        const float *x = xw + n * 4 * H, *y = hw + n * 4 * UB;
        float *a = act + n * 4 * H;
        __m512 i = sigmoid16(_mm512_add_ps(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x), _mm512_loadu_ps(y)), bi));
        __m512 f = sigmoid16(
            _mm512_add_ps(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x + H), _mm512_loadu_ps(y + UB)), bf));
        __m512 g = tanh16(
            _mm512_add_ps(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x + 2 * H), _mm512_loadu_ps(y + 2 * UB)), bg));
        __m512 o = sigmoid16(
            _mm512_add_ps(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x + 3 * H), _mm512_loadu_ps(y + 3 * UB)), bo));
        __m512 cv = _mm512_fmadd_ps(f, _mm512_maskz_loadu_ps(m, cp + n * H), _mm512_mul_ps(i, g));
        _mm512_mask_storeu_ps(c + n * H, m, cv);
        _mm512_mask_storeu_ps(h + n * H, m, _mm512_mul_ps(o, tanh16(cv)));
        _mm512_mask_storeu_ps(a, m, i);
        _mm512_mask_storeu_ps(a + H, m, f);
        _mm512_mask_storeu_ps(a + 2 * H, m, g);
        _mm512_mask_storeu_ps(a + 3 * H, m, o);
    }
}

/* Forward pack, block b of 16 units: H rows k of 64 values, the four gates' 16 columns of W_hh^T
 * (W_hh's rows q H + 16 b + l read along k), zeros past H. */
typedef struct {
    const float *w;
    float *pack;
    int64_t H;
} pack_job;

static void pack_fwd(void *arg, int64_t b0, int64_t b1) {
    const pack_job *j = arg;
    const int64_t H = j->H;
    for (int64_t b = b0; b < b1; b++) {
        int64_t u0 = b * UB, w = H - u0 < UB ? H - u0 : UB;
        for (int q = 0; q < 4; q++) {
            const float *rows[UB];
            for (int64_t l = 0; l < w; l++) rows[l] = j->w + (q * H + u0 + l) * H;
            pf_transpose_rows_f32(rows, (int)w, UB, H, j->pack + b * H * 4 * UB + q * UB, 4 * UB);
        }
    }
}

/* Backward pack, block b: 4H rows k of 16 values, W_hh's columns 16 b + l, zeros past H. */
static T512 void pack_bwd(void *arg, int64_t b0, int64_t b1) {
    const pack_job *j = arg;
    const int64_t H = j->H;
    for (int64_t b = b0; b < b1; b++) {
        int64_t u0 = b * UB, w = H - u0 < UB ? H - u0 : UB;
        __mmask16 m = (__mmask16)((1u << w) - 1);
        const float *src = j->w + u0;
        float *dst = j->pack + b * 4 * H * UB;
        for (int64_t k = 0; k < 4 * H; k++) _mm512_storeu_ps(dst + k * UB, _mm512_maskz_loadu_ps(m, src + k * H));
    }
}

/* threads for a step's product of N x 4H x H multiply-adds over nb blocks */
static int step_threads(int64_t N, int64_t H, int64_t nb) {
    int nt = (double)N * 4 * H * H >= (1 << 17) ? pf_threads() : 1;
    return nt > nb ? (int)nb : nt;
}

typedef struct {
    int64_t N, H, nb;
    const float *pack, *xw, *b, *hp, *cp;
    float *c, *h, *act, *z; /* z: N x 64 gate sums per thread */
    int64_t *claim;         /* with several threads: how many blocks past the evenly shared ones are taken */
} fwd_job;

static void fwd_part(void *arg, int t, int T) {
    const fwd_job *j = arg;
    const int64_t N = j->N, H = j->H;
    int64_t b0, b1;
    pf_split(j->nb, t, T, &b0, &b1);
    float *z = j->z + (size_t)t * N * 4 * UB;
    for (int64_t b = b0; b < b1; b++) {
        int64_t u0 = b * UB, w = H - u0 < UB ? H - u0 : UB;
        tiles(N, 4, H, j->hp, H, j->pack + b * H * 4 * UB, 4 * UB, UB, z, 4 * UB, (__mmask16)0xffff, 1);
        cell_block(N, H, w, j->xw + u0, z, j->b + u0, j->cp + u0, j->c + u0, j->h + u0, j->act + u0);
    }
}

/* one kernel set of the packed path: units per panel, the two packs and a step's thread body each way */
typedef struct {
    int64_t ub;
    pf_range_fn pack_fwd, pack_bwd;
    pf_team_fn fwd_part, bwd_part;
} packed_set;

static int forward_packed(const packed_set *ks, int64_t L, int64_t N, int64_t H, const float *xw, const float *w_hh,
                          const float *b, const float *h0, const float *c0, float *out, float *cs, float *acts,
                          int acts_per_step) {
    const int64_t ub = ks->ub, nb = (H + ub - 1) / ub;
    int nmax = pf_threads();
    float *pack = pf_alloc((size_t)(nb * H * 4 * ub) * sizeof(float));
    float *z = pf_alloc((size_t)nmax * (size_t)(N * 4 * ub) * sizeof(float));
    if (!pack || !z) {
        pf_free(pack), pf_free(z);
        return PF_ERR_NOMEM;
    }
    pack_job pj = {w_hh, pack, H};
    pf_parallel_range(step_threads(N, H, nb), nb, ks->pack_fwd, &pj);
    const int64_t nh = N * H, ng = 4 * N * H;
    for (int64_t t = 0; t < L; t++) {
        int nt = step_threads(N, H, nb);
        int64_t claim = 0;
        fwd_job j = {N,  H,  nb, pack, xw + t * ng, b, t ? out + (t - 1) * nh : h0, t ? cs + (t - 1) * nh : c0,
                     cs + t * nh, out + t * nh, acts + (acts_per_step ? 0 : t * ng), z, &claim};
        pf_run_team(nt < nmax ? nt : nmax, ks->fwd_part, &j);
    }
    pf_free(pack), pf_free(z);
    return PF_OK;
}

typedef struct {
    int64_t N, H, nb;
    const float *pack, *dgn; /* dgn: the gate gradient of the step after, or NULL (dh given) */
    const float *act, *c, *cp, *dout;
    float *dh, *dc, *dg; /* dg NULL: the product alone (dh0 at the end) */
} bwd_job;

static void bwd_part(void *arg, int t, int T) {
    const bwd_job *j = arg;
    const int64_t N = j->N, H = j->H;
    int64_t b0, b1;
    pf_split(j->nb, t, T, &b0, &b1);
    if (j->dgn) /* dh[:, own units] = dG_{t+1} W_hh[:, own units], up to 4 panels at a time */
        for (int64_t b = b0; b < b1; b += 4) {
            int nv = (int)(b1 - b < 4 ? b1 - b : 4);
            int64_t u0 = b * UB, width = H - u0 < nv * UB ? H - u0 : nv * UB, tail = width - (nv - 1) * UB;
            tiles(N, nv, 4 * H, j->dgn, 4 * H, j->pack + b * 4 * H * UB, UB, 4 * H * UB, j->dh + u0, H,
                  (__mmask16)((1u << tail) - 1), 0);
        }
    if (!j->dg) return;
    int64_t u0 = b0 * UB, u1 = b1 * UB < H ? b1 * UB : H;
    if (j->dout)
        for (int64_t n = 0; n < N; n++)
            for (int64_t u = u0; u < u1; u++) j->dh[n * H + u] += j->dout[n * H + u];
    cell_bwd_f32(N, H, u1 - u0, j->act + u0, j->c + u0, j->cp + u0, j->dh + u0, j->dc + u0, j->dg + u0);
}

static int backward_packed(const packed_set *ks, int64_t L, int64_t N, int64_t H, const float *w_hh, const float *c0,
                           const float *cs, const float *acts, const float *dout, float *dg, float *dh, float *dc) {
    const int64_t nb = (H + ks->ub - 1) / ks->ub;
    float *pack = pf_alloc((size_t)(nb * 4 * H * ks->ub) * sizeof(float));
    if (!pack) return PF_ERR_NOMEM;
    pack_job pj = {w_hh, pack, H};
    pf_parallel_range(step_threads(N, H, nb), nb, ks->pack_bwd, &pj);
    const int64_t nh = N * H, ng = 4 * N * H;
    for (int64_t t = L - 1; t >= 0; t--) {
        bwd_job j = {N,           H,     nb,   pack, t + 1 < L ? dg + (t + 1) * ng : NULL, acts + t * ng, cs + t * nh,
                     t ? cs + (t - 1) * nh : c0, dout ? dout + t * nh : NULL, dh, dc, dg + t * ng};
        pf_run_team(step_threads(N, H, nb), ks->bwd_part, &j);
    }
    bwd_job last = {N, H, nb, pack, dg, NULL, NULL, NULL, NULL, dh, dc, NULL};
    pf_run_team(step_threads(N, H, nb), ks->bwd_part, &last);
    pf_free(pack);
    return PF_OK;
}

static const packed_set set512 = {UB, pack_fwd, pack_bwd, fwd_part, bwd_part};

/* ---- float32 on AVX2: the same scheme with panels of 8 units ----------------------------- */

#define UB2 8
#define MAX_ROWS2 3 /* 3 x 4 accumulators + 1 broadcast of 16 registers; B is read from L1 by the FMAs. The
                     * backward also has 4 x 2 and 4 x 3 tiles (bwd_tiles2) */

/* lanes [0, w) of an AVX2 mask */
static inline __attribute__((always_inline)) T256 __m256i lanes8(int64_t w) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* tile() on 8 lanes: C[r][8v + l] (=, or += with add) for l < 8, and l < tail in the last vector. Masked
 * loads and stores only where a vector is partial: on Zen a masked store costs about ten cycles. */
static inline __attribute__((always_inline)) T256 void tile2(const int MR, const int NV, int64_t K, const float *A,
                                                             int64_t lda, const float *B, int64_t ldb, int64_t vs,
                                                             float *C, int64_t ldc, int64_t tail, int add, int pre,
                                                             const int Q, const char *ah, int64_t an, int64_t as) {
    __m256 acc[12]; /* MR x NV <= 12 of them, r * NV + v */
    const __m256i last = lanes8(tail);
    const int partial = tail < UB2;
    const float *ar[4];
    _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) {
        ar[r] = A + r * lda;
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
            float *c = C + r * ldc + v * UB2;
            acc[r * NV + v] = !add ? _mm256_setzero_ps()
                        : v == NV - 1 && partial ? _mm256_maskload_ps(c, last)
                                                 : _mm256_loadu_ps(c);
        }
    }
    for (int64_t k = 0; k < K; k++, B += ldb) {
        if (pre)
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)
                _mm_prefetch((const char *)(B + PRE_K * ldb + v * vs), _MM_HINT_T0);
        if (Q && k < an) _mm_prefetch(ah + k * as, _MM_HINT_T1);
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) {
            __m256 a = _mm256_broadcast_ss(ar[r] + k);
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r * NV + v] =
                _mm256_fmadd_ps(a, _mm256_loadu_ps(B + v * vs), acc[r * NV + v]);
        }
    }
    _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
            float *c = C + r * ldc + v * UB2;
            if (v == NV - 1 && partial) _mm256_maskstore_ps(c, last, acc[r * NV + v]);
            else _mm256_storeu_ps(c, acc[r * NV + v]);
        }
}

#define TILE2_CASE(M, V, Q)                                                                            \
    case (Q) * 64 + (V) * 8 + (M): tile2(M, V, K, A, lda, B, ldb, vs, C, ldc, last, add, pre, Q, ah, an, as); break;
#define TILE2_ROWS(V, Q) TILE2_CASE(1, V, Q) TILE2_CASE(2, V, Q) TILE2_CASE(3, V, Q)

/* q: the tile asks for an lines, as bytes apart from ah, one per k step (the forward's tiles; the backward's keep
 * a loop without the test) */
static T256 void tile2_any(int m, int nv, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                           int64_t vs, float *C, int64_t ldc, int64_t last, int add, int pre, int q, const char *ah,
                           int64_t an, int64_t as) {
    switch (q * 64 + nv * 8 + m) {
        TILE2_ROWS(1, 0)
        TILE2_ROWS(2, 0)
        TILE2_ROWS(3, 0)
        TILE2_ROWS(4, 0)
        TILE2_ROWS(4, 1)
        TILE2_CASE(4, 2, 0)
        TILE2_CASE(4, 3, 0)
    default: break;
    }
}

/* Lines a forward step wants in cache before it reads them: runs of n lines s bytes apart, handed out to the
 * tiles in turn, a share to each, so that they are asked for one per k step while the FMAs run (a burst of them
 * before each tile made a layer's forward 10% slower) */
#define AHEAD_RUNS 5
typedef struct {
    const char *p[AHEAD_RUNS];
    int64_t n[AHEAD_RUNS], s[AHEAD_RUNS], total, next;
    int runs, r;
} ahead;

static void ahead_add(ahead *q, const void *p, int64_t n, int64_t s) {
    if (q->runs < AHEAD_RUNS && n > 0) {
        q->p[q->runs] = p, q->n[q->runs] = n, q->s[q->runs] = s, q->runs++;
        q->total += n;
    }
}

/* up to `want` lines of the current run: their count, the first in *p and their spacing in *s */
static int64_t ahead_take(ahead *q, int64_t want, const char **p, int64_t *s) {
    while (q->r < q->runs && q->next >= q->n[q->r]) q->r++, q->next = 0;
    if (q->r >= q->runs || want <= 0) return 0;
    int64_t n = q->n[q->r] - q->next < want ? q->n[q->r] - q->next : want;
    *s = q->s[q->r], *p = q->p[q->r] + q->next * *s;
    q->next += n;
    return n;
}

/* tiles() on 8 lanes for the forward: K blocks of KC rows of B (KC x 32 values, 16 KB, in the 32 KB L1), the
 * lines of q spread over every tile */
static T256 void fwd_tiles2(int64_t N, int64_t K, const float *A, int64_t lda, const float *B, float *C, ahead *q) {
    int64_t nt = (N + MAX_ROWS2 - 1) / MAX_ROWS2, r0, r1, calls = nt * ((K + KC - 1) / KC);
    int64_t per = (q->total + calls - 1) / calls;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        int64_t kc = K - k0 < KC ? K - k0 : KC;
        for (int64_t i = 0; i < nt; i++) {
            const char *ap = NULL;
            int64_t as = 0, an = ahead_take(q, per < kc ? per : kc, &ap, &as);
            pf_split(N, (int)i, (int)nt, &r0, &r1);
            tile2_any((int)(r1 - r0), 4, kc, A + r0 * lda + k0, lda, B + k0 * 4 * UB2, 4 * UB2, UB2, C + r0 * 4 * UB2,
                      4 * UB2, UB2, k0 > 0, i == 0, 1, ap, an, as);
        }
    }
}

/* The backward's: the same K blocks, rows in 3-row tiles but for those in 4-row blocks, each block as tiles of w
 * vectors (4 x w, 12 accumulators at most): with 4 vectors a remainder of 1 or 2 rows joins 3 others in blocks of
 * two 4 x 2 tiles, with 3 all rows go in 4 x 3 tiles. At 20 rows a 2 x 4 tile's 8 accumulators ran at 75% of the FMA
 * peak, a 4 x 2's at 97% (the backward's tiles 1.5-3.5% faster); a 2 x 3's at 70%. In the forward the same split was
 * 4% slower. */
static T256 void bwd_tiles2(int64_t N, int nv, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                            int64_t vs, float *C, int64_t ldc, int64_t tail) {
    int64_t n4 = nv == 4 ? (N % 3 == 1 && N >= 4 ? 1 : N % 3 == 2 && N >= 8 ? 2 : 0) : nv == 3 ? N / 4 : 0;
    int64_t n3 = N - 4 * n4, nt = (n3 + MAX_ROWS2 - 1) / MAX_ROWS2, r0, r1;
    const int w = nv == 3 ? 3 : 2;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        int64_t kc = K - k0 < KC ? K - k0 : KC;
        for (int64_t i = 0; i < nt; i++) {
            pf_split(n3, (int)i, (int)nt, &r0, &r1);
            tile2_any((int)(r1 - r0), nv, kc, A + r0 * lda + k0, lda, B + k0 * ldb, ldb, vs, C + r0 * ldc, ldc, tail,
                      k0 > 0, 0, 0, NULL, 0, 0);
        }
        for (int64_t r = n3; r < N; r += 4)
            for (int v = 0; v < nv; v += w)
                tile2_any(4, w, kc, A + r * lda + k0, lda, B + k0 * ldb + v * vs, ldb, vs, C + r * ldc + v * UB2, ldc,
                          v + w == nv ? tail : UB2, k0 > 0, 0, 0, NULL, 0, 0);
    }
}

/* pf_expf, pf_sigmoidf and pf_tanhf on 8 lanes, as exp16 and its kin are on 16 (AVX2 has no scalef: 2^n is
 * built in two halves of the exponent, as pf_expf does, so results down to the subnormals stay exact) */
static inline __attribute__((always_inline)) T256 __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.72283935546875f), lo = _mm256_set1_ps(-103.97208f);
    __m256 xc = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
    __m256i e = _mm256_cvtps_epi32(n), e1 = _mm256_srai_epi32(e, 1), e2 = _mm256_sub_epi32(e, e1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, bias), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __attribute__((always_inline)) T256 __m256 sigmoid8(__m256 x) {
    __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

static inline __attribute__((always_inline)) T256 __m256 tanh8(__m256 x) {
    __m256 sign = _mm256_set1_ps(-0.0f), ax = _mm256_andnot_ps(sign, x), z = _mm256_mul_ps(ax, ax);
    __m256 p = _mm256_set1_ps(-5.70498872745E-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954E-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531E-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036E-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422E-1f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), ax, ax);
    __m256 e = exp8(_mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_min_ps(ax, _mm256_set1_ps(10.0f))));
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
    y = _mm256_or_ps(y, _mm256_and_ps(sign, x)); /* copysign */
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* cell_block on one block of w <= 8 units (hw's gates 8 apart, its rows 32); the loads and stores of a
 * partial block masked, a full one plain */
static inline __attribute__((always_inline)) T256 void cell_block2_w(const int full, int64_t N, int64_t H, int64_t w,
                                                                     const float *xw, float *hw, const float *b,
                                                                     const float *cp, float *c, float *h,
                                                                     float *act) {
    const __m256i m = lanes8(w);
#define LD8(p) (full ? _mm256_loadu_ps(p) : _mm256_maskload_ps((p), m))
#define ST8(p, v) (full ? _mm256_storeu_ps((p), (v)) : _mm256_maskstore_ps((p), m, (v)))
    __m256 bi = LD8(b), bf = LD8(b + H), bg = LD8(b + 2 * H), bo = LD8(b + 3 * H);
    /* Three passes: every row's gate sums (hw += xw + b, in place), their activations, then c and h. xw comes
     * from L3 or memory: in a pass of nothing but loads and adds every row's misses are in flight at once,
     * where behind each row's activations (long dependency chains, two rows to the reorder window) they were
     * waited for a row at a time. Each row's c -> tanh(c) -> h chain waits on its own gates, so all gates
     * come before any c. */
    for (int64_t n = 0; n < N; n++) {
        const float *x = xw + n * 4 * H;
        float *y = hw + n * 4 * UB2;
        _mm256_storeu_ps(y, _mm256_add_ps(_mm256_add_ps(LD8(x), _mm256_loadu_ps(y)), bi));
        _mm256_storeu_ps(y + UB2, _mm256_add_ps(_mm256_add_ps(LD8(x + H), _mm256_loadu_ps(y + UB2)), bf));
        _mm256_storeu_ps(y + 2 * UB2, _mm256_add_ps(_mm256_add_ps(LD8(x + 2 * H), _mm256_loadu_ps(y + 2 * UB2)), bg));
        _mm256_storeu_ps(y + 3 * UB2, _mm256_add_ps(_mm256_add_ps(LD8(x + 3 * H), _mm256_loadu_ps(y + 3 * UB2)), bo));
    }
    for (int64_t n = 0; n < N; n++) {
        const float *y = hw + n * 4 * UB2;
        float *a = act + n * 4 * H;
        ST8(a, sigmoid8(_mm256_loadu_ps(y)));
        ST8(a + H, sigmoid8(_mm256_loadu_ps(y + UB2)));
        ST8(a + 2 * H, tanh8(_mm256_loadu_ps(y + 2 * UB2)));
        ST8(a + 3 * H, sigmoid8(_mm256_loadu_ps(y + 3 * UB2)));
    }
    for (int64_t n = 0; n < N; n++) {
        const float *a = act + n * 4 * H;
        __m256 i = LD8(a), f = LD8(a + H), g = LD8(a + 2 * H), o = LD8(a + 3 * H);
        __m256 cv = _mm256_fmadd_ps(f, LD8(cp + n * H), _mm256_mul_ps(i, g));
        ST8(c + n * H, cv);
        ST8(h + n * H, _mm256_mul_ps(o, tanh8(cv)));
    }
#undef LD8
#undef ST8
}

static T256 void cell_block2(int64_t N, int64_t H, int64_t w, const float *xw, float *hw, const float *b,
                             const float *cp, float *c, float *h, float *act) {
    if (w == UB2) cell_block2_w(1, N, H, w, xw, hw, b, cp, c, h, act);
    else cell_block2_w(0, N, H, w, xw, hw, b, cp, c, h, act);
}

/* v[k] = column k of the 8 x 8 block whose row r is v[r] */
static inline __attribute__((always_inline)) T256 void transpose8(__m256 v[8]) {
    __m256 t[8], s[8];
    for (int r = 0; r < 8; r += 2) t[r] = _mm256_unpacklo_ps(v[r], v[r + 1]), t[r + 1] = _mm256_unpackhi_ps(v[r], v[r + 1]);
    for (int r = 0; r < 8; r += 4)
        for (int h = 0; h < 2; h++) {
            s[r + 2 * h] = _mm256_shuffle_ps(t[r + h], t[r + h + 2], 0x44);
            s[r + 2 * h + 1] = _mm256_shuffle_ps(t[r + h], t[r + h + 2], 0xee);
        }
    for (int c = 0; c < 4; c++) {
        v[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
        v[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
}

/* Forward pack, block b of 8 units: H rows k of 32 values, W_hh's rows q H + 8 b + l read along k, 8 x 8
 * blocks transposed in registers (one float at a time, 128 bytes apart, it took 1.8 ms of a 35-step layer) */
static T256 void pack_fwd2(void *arg, int64_t b0, int64_t b1) {
    const pack_job *j = arg;
    const int64_t H = j->H, kv = H & ~(int64_t)7;
    for (int64_t b = b0; b < b1; b++) {
        int64_t u0 = b * UB2, w = H - u0 < UB2 ? H - u0 : UB2;
        float *dst = j->pack + b * H * 4 * UB2;
        for (int q = 0; q < 4; q++) {
            const float *rows = j->w + (q * H + u0) * H;
            for (int64_t k0 = 0; k0 < kv; k0 += 8) {
                __m256 v[8];
#pragma GCC unroll 8
                for (int l = 0; l < 8; l++) v[l] = l < w ? _mm256_loadu_ps(rows + l * H + k0) : _mm256_setzero_ps();
                transpose8(v);
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (k0 + k) * 4 * UB2 + q * UB2, v[k]);
            }
            for (int64_t k = kv; k < H; k++)
                for (int64_t l = 0; l < UB2; l++) dst[k * 4 * UB2 + q * UB2 + l] = l < w ? rows[l * H + k] : 0.0f;
        }
    }
}

/* Backward pack, blocks [b0, b1): 4H rows k of 8 values, W_hh's columns 8 b + l, zeros past H; W_hh read row by
 * row (a block at a time, its 2600 rows 2.6 KB apart took 1.4 ms of a 35-step layer) */
static T256 void pack_bwd2(void *arg, int64_t b0, int64_t b1) {
    const pack_job *j = arg;
    const int64_t H = j->H, full = b1 * UB2 <= H ? b1 : H / UB2; /* blocks [b0, full) have 8 units */
    const __m256i m = lanes8(H - full * UB2);
    for (int64_t k = 0; k < 4 * H; k++) {
        const float *src = j->w + k * H;
        float *dst = j->pack + k * UB2;
        for (int64_t b = b0; b < full; b++) _mm256_storeu_ps(dst + b * 4 * H * UB2, _mm256_loadu_ps(src + b * UB2));
        if (full < b1) _mm256_storeu_ps(dst + full * 4 * H * UB2, _mm256_maskload_ps(src + full * UB2, m));
    }
}

/* block b of the forward step with thread t's z; `next` (>= 0) is the block this thread runs after it */
static void fwd_block2(const fwd_job *j, int t, int64_t b, int64_t next) {
    const int64_t N = j->N, H = j->H, u0 = b * UB2, w = H - u0 < UB2 ? H - u0 : UB2;
    float *z = j->z + (size_t)t * N * 4 * UB2;
    /* Asked for while the tiles run: the cell's rows of xw (written by the input projection, long out of
     * cache) and of c_prev (a step old, evicted by the panels since), both ends of each; then the next
     * block's panel, which the first tile over each K block would otherwise wait for from L3 */
    ahead q = {0};
    for (int e = 0; e < 2; e++) {
        ahead_add(&q, j->xw + u0 + (e ? w - 1 : 0), 4 * N, H * (int64_t)sizeof(float));
        ahead_add(&q, j->cp + u0 + (e ? w - 1 : 0), N, H * (int64_t)sizeof(float));
    }
    if (next >= 0) ahead_add(&q, j->pack + next * H * 4 * UB2, H * 4 * UB2 * (int64_t)sizeof(float) / 64, 64);
    fwd_tiles2(N, H, j->hp, H, j->pack + b * H * 4 * UB2, z, &q);
    cell_block2(N, H, w, j->xw + u0, z, j->b + u0, j->cp + u0, j->c + u0, j->h + u0, j->act + u0);
}

/* A step's blocks: each thread's even share of the first 3/4 of them, then the rest one at a time to whichever
 * thread is free (*j->claim counts those taken). An even split of all of them left one thread
 * 7-16% longer in each step (its core slowed by the machine's other work, or its blocks' data further away),
 * and the other waited at the step's end: a layer's forward and backward (35 x 20 x 650, 2 threads, mean of 60
 * alternating calls) 1-7.5% faster. Blocks write disjoint units, so which thread runs one changes no bits. */
static void fwd_part2(void *arg, int t, int T) {
    const fwd_job *j = arg;
    const int64_t fixed = T > 1 ? j->nb * 3 / 4 : j->nb;
    int64_t b0, b1;
    pf_split(fixed, t, T, &b0, &b1);
    for (int64_t b = b0; b < b1; b++) fwd_block2(j, t, b, b + 1 < b1 ? b + 1 : -1);
    for (int64_t b; (b = fixed + __atomic_fetch_add(j->claim, 1, __ATOMIC_RELAXED)) < j->nb;) fwd_block2(j, t, b, -1);
}

static void bwd_part2(void *arg, int t, int T) {
    const bwd_job *j = arg;
    const int64_t N = j->N, H = j->H;
    int64_t b0, b1;
    pf_split(j->nb, t, T, &b0, &b1);
    /* groups of 4 blocks, and for a remainder the last groups of 3 (3 x 1 and 3 x 2 tiles ran at 37% and 73% of the
     * peak) */
    const int64_t n = b1 - b0, r = n % 4, threes = r == 3 ? 1 : r == 2 && n >= 6 ? 2 : r == 1 && n >= 9 ? 3 : 0;
    if (j->dgn)
        for (int64_t b = b0, nv; b < b1; b += nv) {
            nv = b1 - b <= 3 * threes ? 3 : b1 - b < 4 ? b1 - b : 4;
            int64_t u0 = b * UB2, width = H - u0 < nv * UB2 ? H - u0 : nv * UB2, tail = width - (nv - 1) * UB2;
            bwd_tiles2(N, (int)nv, 4 * H, j->dgn, 4 * H, j->pack + b * 4 * H * UB2, UB2, 4 * H * UB2, j->dh + u0, H, tail);
        }
    if (!j->dg) return;
    int64_t u0 = b0 * UB2, u1 = b1 * UB2 < H ? b1 * UB2 : H;
    if (j->dout)
        for (int64_t n = 0; n < N; n++)
            for (int64_t u = u0; u < u1; u++) j->dh[n * H + u] += j->dout[n * H + u];
    cell_bwd_f32(N, H, u1 - u0, j->act + u0, j->c + u0, j->cp + u0, j->dh + u0, j->dc + u0, j->dg + u0);
}

static const packed_set set256 = {UB2, pack_fwd2, pack_bwd2, fwd_part2, bwd_part2};

/* the packed path's kernel set for float32 on the AVX-512 or AVX2 GEMM path, else NULL */
static const packed_set *packed_path(int dtype) {
    if (dtype != PF_FLOAT32) return NULL;
    const char *path = pf_gemm_path();
    return !strcmp(path, "avx512") ? &set512 : !strcmp(path, "avx2") ? &set256 : NULL;
}
#else
static const void *packed_path(int dtype) {
    (void)dtype;
    return NULL;
}
#endif


int pf_lstm_forward(int dtype, int64_t L, int64_t N, int64_t H, const void *xw, const void *w_hh, const void *b_hh,
                    const void *h0, const void *c0, void *out, void *cs, void *acts, void *hw) {
    int rc = check_sizes(dtype, L, N, H, "lstm_forward");
    if (rc) return rc;
    if (!L || !N || !H) return PF_OK;
    if (!xw || !w_hh || !h0 || !c0 || !out || !cs || !hw)
        return pf_error(PF_ERR_VALUE, "lstm_forward(): a NULL input or output buffer");
    size_t es = pf_dtype_size[dtype];
    void *zb, *ab;
    if ((rc = scratch(es, N, H, &b_hh, &acts, &zb, &ab))) goto done;
    int64_t nh = N * H, ng = 4 * N * H;
#ifdef RNN_X86
    const packed_set *ks = packed_path(dtype);
    if (ks) {
        rc = forward_packed(ks, L, N, H, xw, w_hh, b_hh, h0, c0, out, cs, acts ? acts : ab, !acts);
        goto done;
    }
#endif
    for (int64_t t = 0; t < L; t++) {
        const char *hp = t ? (const char *)out + (size_t)((t - 1) * nh) * es : h0;
        const char *cp = t ? (const char *)cs + (size_t)((t - 1) * nh) * es : c0;
        /* hw [N, 4H] = h_prev [N, H] @ W_hh^T (W_hh [4H, H] read transposed in place) */
        if ((rc = pf_mm(dtype, N, 4 * H, H, hp, H, 1, w_hh, 1, H, hw))) goto done;
        const char *x = (const char *)xw + (size_t)(t * ng) * es;
        char *c = (char *)cs + (size_t)(t * nh) * es, *h = (char *)out + (size_t)(t * nh) * es;
        char *a = acts ? (char *)acts + (size_t)(t * ng) * es : ab;
        if (dtype == PF_FLOAT32)
            cell_fwd_f32(N, H, H, (const float *)x, hw, 4 * H, H, b_hh, (const float *)cp, (float *)c, (float *)h,
                         (float *)a);
        else
            cell_fwd_f64(N, H, H, (const double *)x, hw, 4 * H, H, b_hh, (const double *)cp, (double *)c,
                         (double *)h, (double *)a);
    }
done:
    pf_free(zb), pf_free(ab);
    if (rc == PF_ERR_NOMEM)
        return pf_error(PF_ERR_NOMEM, "lstm_forward(): out of memory for scratch (L=%lld, N=%lld, H=%lld)",
                        (long long)L, (long long)N, (long long)H);
    return rc;
}

int pf_lstm_backward(int dtype, int64_t L, int64_t N, int64_t H, const void *w_hh, const void *c0, const void *cs,
                     const void *acts, const void *dout, const void *dhn, const void *dcn, void *dgates, void *dh0,
                     void *dc0) {
    int rc = check_sizes(dtype, L, N, H, "lstm_backward");
    if (rc) return rc;
    if (!N || !H) return PF_OK;
    if (!w_hh || !c0 || !dh0 || !dc0 || (L && (!cs || !acts || !dgates)))
        return pf_error(PF_ERR_VALUE, "lstm_backward(): a NULL input or output buffer");
    size_t es = pf_dtype_size[dtype];
    int64_t nh = N * H, ng = 4 * N * H;
    /* dh0 carries dh (then is dh's gradient after step 0), dc0 carries dc */
    if (dhn) memcpy(dh0, dhn, (size_t)nh * es);
    else memset(dh0, 0, (size_t)nh * es);
    if (dcn) memcpy(dc0, dcn, (size_t)nh * es);
    else memset(dc0, 0, (size_t)nh * es);
#ifdef RNN_X86
    const packed_set *ks = packed_path(dtype);
    if (ks && L) {
        if (backward_packed(ks, L, N, H, w_hh, c0, cs, acts, dout, dgates, dh0, dc0))
            return pf_error(PF_ERR_NOMEM, "lstm_backward(): out of memory for packing W_hh (H=%lld)", (long long)H);
        return PF_OK;
    }
#endif
    for (int64_t t = L - 1; t >= 0; t--) {
        if (dout) {
            const char *d = (const char *)dout + (size_t)(t * nh) * es;
            if (dtype == PF_FLOAT32)
                for (int64_t k = 0; k < nh; k++) ((float *)dh0)[k] += ((const float *)d)[k];
            else
                for (int64_t k = 0; k < nh; k++) ((double *)dh0)[k] += ((const double *)d)[k];
        }
        const char *a = (const char *)acts + (size_t)(t * ng) * es, *c = (const char *)cs + (size_t)(t * nh) * es;
        const char *cp = t ? (const char *)cs + (size_t)((t - 1) * nh) * es : c0;
        char *dg = (char *)dgates + (size_t)(t * ng) * es;
        if (dtype == PF_FLOAT32)
            cell_bwd_f32(N, H, H, (const float *)a, (const float *)c, (const float *)cp, dh0, dc0, (float *)dg);
        else
            cell_bwd_f64(N, H, H, (const double *)a, (const double *)c, (const double *)cp, dh0, dc0, (double *)dg);
        /* dh of h_{t-1} [N, H] = dG_t [N, 4H] @ W_hh [4H, H] */
        if ((rc = pf_mm(dtype, N, H, 4 * H, dg, 4 * H, 1, w_hh, H, 1, dh0))) return rc;
    }
    return PF_OK;
}
