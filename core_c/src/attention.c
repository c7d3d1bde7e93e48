/* Scaled dot-product attention, forward and backward, one call each, with the causal mask
 * and dropout on the weights inside.
 *
 * The composition (mul by scale, matmul, a causal mask built as a tensor, where, softmax,
 * a dropout mask, where, matmul; and twice as many ops back) allocates an [L, S] tensor per
 * op and computes the scores above the causal diagonal only to mask them. Here each (batch,
 * head) is a task and its query rows go in blocks of BR: the block's scores are one product
 * (pf_gemm_serial) with the keys it may see (a causal block stops at its last row), their
 * softmax and dropout are done while the block is in cache, and the output is a second
 * product; backward is four products per block the same way. The weights P (before dropout)
 * are kept for backward, and so is the dropout mask, a byte per weight (drawing it again in
 * backward cost more than keeping it): element (n, i, j) of the mask is the Philox draw at
 * counter offset + (n L + i) S + j, exactly the draw `bernoulli_` makes for a [..., L, S]
 * tensor, so the fused call drops what the composition would. Tasks are independent, so
 * results do not depend on the thread count.
 *
 * Under trapping math (the core builds without it) gcc kept the softmax's exp scalar on AVX2, and
 * that scalar exp was most of the call at generation's sizes. No contraction is asked for, so the
 * vector exp gives the scalar one's bits. */
#include "core.h"

#define BR 64 /* query rows per block: the block's scores (BR x S) and the keys stay in cache */
/* Up to this many keys, float32 forward's two products are register-blocked AVX2 loops (small_scores,
 * small_out) instead of GEMM calls: at a generating model's sizes (1 to 64 keys of 64 features per head)
 * packing the operands cost more than the products. */
#define SMALL_S 64

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SMALL_PATH 1
#define T256 __attribute__((target("avx2,fma")))
#endif

typedef struct {
    const pf_tensor *q, *k, *v, *g, *p;
    pf_tensor *out, *pw, *gq, *gk, *gv;
    unsigned char *keep; /* the dropout mask [nb, L, S], written forward and read back */
    int causal, small; /* small: forward through small_scores / small_out */
    int rows8;         /* float32 row passes in AVX2 (softmax_rows8, dsoftmax_rows8) */
    int64_t nb;
    double scale, drop; /* drop: the dropout probability, 0 for none */
    uint64_t seed, offset;
    char *scratch; /* per thread: a block of dropped weights and of dP */
    size_t per_thread;
    int *rc; /* per thread: the first error of its tasks */
} att_args;

/* byte offset of batch element n (of the leading nd - 2 dims) in t */
static int64_t batch_off(const pf_tensor *t, int64_t n) {
    int64_t off = 0;
    for (int i = t->ndim - 3; i >= 0; i--) {
        int64_t sz = t->shape[i];
        off += (n % sz) * t->strides[i];
        n /= sz;
    }
    return off * (int64_t)pf_dtype_size[t->dtype];
}

/* t's matrix of batch element n, as T *, and its row stride in elements */
#define BATCH(T, t, n) ((T *)((char *)(t)->data + batch_off((t), (n))))
#define RS(t) ((t)->strides[(t)->ndim - 2])

/* C (M x N, rows rsc apart, unit columns) = A B, or += with acc; A's (i, k) at A[i rsa + k csa],
 * B's (k, j) at B[k rsb + j csb], all in elements of dtype dt. An empty sum (K = 0) is zero. */
static int mm(int dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B,
              int64_t rsb, int64_t csb, void *C, int64_t rsc, int acc) {
    if (M == 0 || N == 0) return PF_OK;
    if (K == 0) {
        size_t sz = pf_dtype_size[dt];
        for (int64_t i = 0; !acc && i < M; i++) memset((char *)C + (size_t)(i * rsc) * sz, 0, (size_t)N * sz);
        return PF_OK;
    }
    pf_gemm_prob pr = {M, N, K, A, B, C, rsa, csa, rsb, csb, rsc, 1, acc};
    return pf_gemm_serial(dt, &pr, NULL);
}

/* keys query i may see: j <= i when causal (top-left aligned, as torch), else all S */
PF_ALWAYS_INLINE int64_t seen(const att_args *a, int64_t i, int64_t S) { return a->causal ? (i + 1 < S ? i + 1 : S) : S; }

#ifdef SMALL_PATH
/* Scores of query rows i0 .. i0 + br over the keys each sees, into P (rows ps apart), S <= SMALL_S: K is first
 * transposed into kt (E x 64, zero past its ns keys); then four rows by eight keys at a time, one FMA per
 * feature each, in registers. */
static T256 void small_scores(const att_args *a, const float *q, int64_t rsq, const float *k, int64_t rsk, float *kt,
                              float *P, int64_t ps, int64_t i0, int64_t br, int64_t ns, int64_t E, int64_t S) {
    for (int64_t e = 0; e < E; e++) {
        float *row = kt + e * SMALL_S;
        for (int64_t j = 0; j < ns; j++) row[j] = k[j * rsk + e];
        for (int64_t j = ns; j < (ns + 7) / 8 * 8; j++) row[j] = 0;
    }
    _Alignas(32) float tmp[4][8];
    for (int64_t r0 = 0; r0 < br; r0 += 4) {
        int nr = br - r0 < 4 ? (int)(br - r0) : 4;
        int64_t nmax = seen(a, i0 + r0 + nr - 1, S);
        const float *qr[4];
        for (int r = 0; r < 4; r++) qr[r] = q + (i0 + r0 + (r < nr ? r : 0)) * rsq;
        for (int64_t j0 = 0; j0 < nmax; j0 += 8) {
            __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
            const float *kc = kt + j0;
            for (int64_t e = 0; e < E; e++) {
                __m256 kv = _mm256_loadu_ps(kc + e * SMALL_S);
                c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(qr[0] + e), kv, c0);
                c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(qr[1] + e), kv, c1);
                c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(qr[2] + e), kv, c2);
                c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(qr[3] + e), kv, c3);
            }
            _mm256_store_ps(tmp[0], c0), _mm256_store_ps(tmp[1], c1);
            _mm256_store_ps(tmp[2], c2), _mm256_store_ps(tmp[3], c3);
            for (int r = 0; r < nr; r++) {
                int64_t ni = seen(a, i0 + r0 + r, S), m = ni - j0 < 8 ? ni - j0 : 8;
                for (int64_t j = 0; j < m; j++) P[(r0 + r) * ps + j0 + j] = tmp[r][j];
            }
        }
    }
}

/* The output rows (ro apart) of weight rows i0 .. i0 + br (W, ws apart; zero past each row's keys, up to the
 * block's last row's) times V, Ev a multiple of 8: four rows by sixteen (or eight) columns in registers. */
static T256 void small_out(const att_args *a, const float *W, int64_t ws, const float *v, int64_t rsv, float *o,
                           int64_t ro, int64_t i0, int64_t br, int64_t Ev, int64_t S) {
    for (int64_t r0 = 0; r0 < br; r0 += 4) {
        int nr = br - r0 < 4 ? (int)(br - r0) : 4;
        int64_t nmax = seen(a, i0 + r0 + nr - 1, S);
        const float *wr[4];
        for (int r = 0; r < 4; r++) wr[r] = W + (r0 + (r < nr ? r : 0)) * ws;
        int64_t c = 0;
        for (; c + 16 <= Ev; c += 16) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, d0 = a0, d1 = a0, f0 = a0, f1 = a0;
            for (int64_t j = 0; j < nmax; j++) {
                __m256 v0 = _mm256_loadu_ps(v + j * rsv + c), v1 = _mm256_loadu_ps(v + j * rsv + c + 8);
                __m256 w = _mm256_broadcast_ss(wr[0] + j);
                a0 = _mm256_fmadd_ps(w, v0, a0), a1 = _mm256_fmadd_ps(w, v1, a1);
                w = _mm256_broadcast_ss(wr[1] + j);
                b0 = _mm256_fmadd_ps(w, v0, b0), b1 = _mm256_fmadd_ps(w, v1, b1);
                w = _mm256_broadcast_ss(wr[2] + j);
                d0 = _mm256_fmadd_ps(w, v0, d0), d1 = _mm256_fmadd_ps(w, v1, d1);
                w = _mm256_broadcast_ss(wr[3] + j);
                f0 = _mm256_fmadd_ps(w, v0, f0), f1 = _mm256_fmadd_ps(w, v1, f1);
            }
            __m256 acc[4][2] = {{a0, a1}, {b0, b1}, {d0, d1}, {f0, f1}};
            for (int r = 0; r < nr; r++) {
                _mm256_storeu_ps(o + (i0 + r0 + r) * ro + c, acc[r][0]);
                _mm256_storeu_ps(o + (i0 + r0 + r) * ro + c + 8, acc[r][1]);
            }
        }
        for (; c < Ev; c += 8) {
            __m256 a0 = _mm256_setzero_ps(), b0 = a0, d0 = a0, f0 = a0;
            for (int64_t j = 0; j < nmax; j++) {
                __m256 v0 = _mm256_loadu_ps(v + j * rsv + c);
                a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wr[0] + j), v0, a0);
                b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wr[1] + j), v0, b0);
                d0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wr[2] + j), v0, d0);
                f0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wr[3] + j), v0, f0);
            }
            __m256 acc[4] = {a0, b0, d0, f0};
            for (int r = 0; r < nr; r++) _mm256_storeu_ps(o + (i0 + r0 + r) * ro + c, acc[r]);
        }
    }
}

/* pf_expf in AVX2 lanes, operation for operation (no contraction: the same bits as its scalar and
 * gcc-vectorized forms) */
static inline __attribute__((always_inline)) T256 __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.72283935546875f), lo = _mm256_set1_ps(-103.97208f);
    __m256 xc = _mm256_blendv_ps(lo, _mm256_blendv_ps(hi, x, _mm256_cmp_ps(x, hi, _CMP_LT_OQ)),
                                 _mm256_cmp_ps(x, lo, _CMP_GT_OQ));
    const __m256 big = _mm256_set1_ps(12582912.f);
    __m256 n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)), big), big);
    __m256 r = _mm256_add_ps(_mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f))),
                             _mm256_mul_ps(n, _mm256_set1_ps(2.12194440e-4f)));
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r), _mm256_set1_ps(1.0f));
    __m256i e = _mm256_cvttps_epi32(n), e1 = _mm256_srai_epi32(_mm256_add_epi32(e, _mm256_srli_epi32(e, 31)), 1);
    __m256i e2 = _mm256_sub_epi32(e, e1), b127 = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, b127), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, b127), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* keep's 8 bytes at kr as a lane mask */
static inline __attribute__((always_inline)) T256 __m256 keep8(const unsigned char *kr) {
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)kr));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, _mm256_setzero_si256()));
}

/* lane l of v over lanes 0..7 in order: the row's reductions start from their 8 lane partials */
static inline __attribute__((always_inline)) T256 float hsum8(__m256 v) {
    _Alignas(32) float t[8];
    _mm256_store_ps(t, v);
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* softmax_rows_f32 on an AVX2 machine: gcc kept its max scalar (a compare and branch per key) */
static T256 void softmax_rows8(const att_args *a, float *P, int64_t ps, const unsigned char *keep, float *d,
                               int64_t i0, int64_t br, int64_t ns, int64_t S) {
    float sc = (float)a->scale, inv = (float)(1.0 / (1.0 - a->drop));
    __m256 vsc = _mm256_set1_ps(sc), vinv = _mm256_set1_ps(inv);
    for (int64_t r = 0; r < br; r++) {
        float *restrict x = P + r * ps;
        int64_t ni = seen(a, i0 + r, S), nv = ni / 8 * 8;
        __m256 vm = _mm256_set1_ps(-INFINITY), vs = _mm256_setzero_ps();
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x + j), vsc);
            _mm256_storeu_ps(x + j, y);
            vm = _mm256_max_ps(y, vm); /* y > m ? y : m, as the scalar form */
        }
        _Alignas(32) float t[8];
        _mm256_store_ps(t, vm);
        float m = -INFINITY, sum = 0;
        for (int l = 0; l < 8; l++) m = t[l] > m ? t[l] : m;
        for (int64_t j = nv; j < ni; j++) x[j] *= sc, m = x[j] > m ? x[j] : m;
        if (m == -INFINITY) m = 0; /* all -inf scores: exp gives 0s, 0/0 below gives NaN as torch */
        __m256 vmax = _mm256_set1_ps(m);
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmax));
            _mm256_storeu_ps(x + j, e);
            vs = _mm256_add_ps(vs, e);
        }
        for (int64_t j = nv; j < ni; j++) x[j] = pf_expf(x[j] - m), sum += x[j];
        sum += hsum8(vs);
        __m256 vis = _mm256_set1_ps(1.0f / sum);
        float *restrict dr = keep ? d + r * S : NULL;
        const unsigned char *kr = keep ? keep + r * S : NULL;
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 w = _mm256_mul_ps(_mm256_loadu_ps(x + j), vis);
            _mm256_storeu_ps(x + j, w);
            if (dr) _mm256_storeu_ps(dr + j, _mm256_and_ps(_mm256_mul_ps(w, vinv), keep8(kr + j)));
        }
        float is = 1.0f / sum;
        for (int64_t j = nv; j < ni; j++) {
            x[j] *= is;
            if (dr) dr[j] = kr[j] ? x[j] * inv : 0;
        }
        for (int64_t j = ni; j < S; j++) x[j] = 0;
        for (int64_t j = ni; dr && j < ns; j++) dr[j] = 0;
    }
}

/* dsoftmax_rows_f32 on an AVX2 machine, the row sum in 8 lanes */
static T256 void dsoftmax_rows8(const att_args *a, const float *P, int64_t ps, const unsigned char *keep, float *dp,
                                int64_t i0, int64_t br, int64_t ns, int64_t S) {
    float sc = (float)a->scale, inv = (float)(1.0 / (1.0 - a->drop));
    __m256 vsc = _mm256_set1_ps(sc), vinv = _mm256_set1_ps(inv);
    for (int64_t r = 0; r < br; r++) {
        const float *x = P + r * ps;
        float *restrict d = dp + r * S;
        const unsigned char *kr = a->drop > 0 ? keep + r * S : NULL;
        int64_t ni = seen(a, i0 + r, S), nv = ni / 8 * 8;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 dj = _mm256_loadu_ps(d + j);
            if (kr) {
                dj = _mm256_and_ps(_mm256_mul_ps(dj, vinv), keep8(kr + j));
                _mm256_storeu_ps(d + j, dj);
            }
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(x + j), dj));
        }
        float rs = 0;
        for (int64_t j = nv; j < ni; j++) {
            if (kr) d[j] = kr[j] ? d[j] * inv : 0;
            rs += x[j] * d[j];
        }
        rs += hsum8(acc);
        __m256 vrs = _mm256_set1_ps(rs);
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j), _mm256_sub_ps(_mm256_loadu_ps(d + j), vrs));
            _mm256_storeu_ps(d + j, _mm256_mul_ps(v, vsc));
        }
        for (int64_t j = nv; j < ni; j++) d[j] = x[j] * (d[j] - rs) * sc;
        for (int64_t j = ni; j < ns; j++) d[j] = 0;
    }
}
#endif

/* the block's dropout mask, rows i0 .. i0 + br, each over the keys it sees; row r at keep + r S. A
 * row's draw goes on to a multiple of 64 keys (at most S): whole runs of 16 Philox blocks are the
 * vectorized case, and the draws past the keys a row sees are never read. */
static void draw_keep(const att_args *a, int64_t n, int64_t L, int64_t S, int64_t i0, int64_t br, unsigned char *keep) {
    for (int64_t r = 0; r < br; r++) {
        int64_t m = (seen(a, i0 + r, S) + 63) & ~(int64_t)63;
        pf_bernoulli_bytes(a->seed, a->offset + (uint64_t)((n * L + i0 + r) * S), m < S ? m : S, 1.0 - a->drop,
                           keep + r * S);
    }
}

/* Row passes over a block of rows i0 .. i0 + br, compiled per ISA. Row r sees ni = seen(i0 + r)
 * keys and the block's products cover ns (its last row's ni). */
/* Row passes over a block of rows i0 .. i0 + br, compiled per ISA. Row r sees ni = seen(i0 + r)
 * keys and the block's products cover ns (its last row's ni). A row's max and sums run in RL independent
 * lanes (one chain each, which gcc vectorizes) combined at the row's end: one running sum was a serial
 * chain of scalar adds, and the max a scalar compare, per key. */
#define RL 16
#define ATT_ROWS(T, SUF, EXP)                                                                                   \
    /* raw scores -> softmax weights over the keys a row sees, 0 past them up to S; with keep (dropout),        \
     * also the dropped weights d = keep ? P / (1 - p) : 0, rows S apart, 0 from ni up to ns */                 \
    PF_VEC_CLONES static void softmax_rows_##SUF(const att_args *a, T *P, int64_t ps, const unsigned char *keep, \
                                                 T *d, int64_t i0, int64_t br, int64_t ns, int64_t S) {         \
        T sc = (T)a->scale, inv = (T)(1.0 / (1.0 - a->drop));                                                   \
        for (int64_t r = 0; r < br; r++) {                                                                      \
            T *restrict x = P + r * ps;                                                                         \
            int64_t ni = seen(a, i0 + r, S), nv = ni / RL * RL;                                                 \
            T lm[RL], ls[RL], m = -INFINITY, sum = 0;                                                           \
            for (int l = 0; l < RL; l++) lm[l] = -INFINITY, ls[l] = 0;                                          \
            for (int64_t j0 = 0; j0 < nv; j0 += RL)                                                             \
                for (int l = 0; l < RL; l++) {                                                                  \
                    T y = x[j0 + l] * sc;                                                                       \
                    x[j0 + l] = y;                                                                              \
                    lm[l] = y > lm[l] ? y : lm[l];                                                              \
                }                                                                                               \
            for (int64_t j = nv; j < ni; j++) x[j] *= sc, m = x[j] > m ? x[j] : m;                              \
            for (int l = 0; l < RL; l++) m = lm[l] > m ? lm[l] : m;                                             \
            if (m == -INFINITY) m = 0; /* all -inf scores: exp gives 0s, 0/0 below gives NaN as torch */        \
            for (int64_t j0 = 0; j0 < nv; j0 += RL)                                                             \
                for (int l = 0; l < RL; l++) {                                                                  \
                    T e = EXP(x[j0 + l] - m);                                                                   \
                    x[j0 + l] = e;                                                                              \
                    ls[l] += e;                                                                                 \
                }                                                                                               \
            for (int64_t j = nv; j < ni; j++) x[j] = EXP(x[j] - m), sum += x[j];                                \
            for (int l = 0; l < RL; l++) sum += ls[l];                                                          \
            T is = (T)1 / sum;                                                                                  \
            for (int64_t j = 0; j < ni; j++) x[j] *= is;                                                        \
            for (int64_t j = ni; j < S; j++) x[j] = 0;                                                          \
            if (keep) {                                                                                         \
                const unsigned char *kr = keep + r * S;                                                         \
                T *restrict dr = d + r * S;                                                                     \
                for (int64_t j = 0; j < ni; j++) dr[j] = kr[j] ? x[j] * inv : 0;                                \
                for (int64_t j = ni; j < ns; j++) dr[j] = 0;                                                    \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    /* the dropped weights d = keep ? P / (1 - p) : 0, rows S apart, up to ns */                                \
    PF_VEC_CLONES static void drop_rows_##SUF(const att_args *a, const T *P, int64_t ps, const unsigned char *keep, \
                                              T *d, int64_t i0, int64_t br, int64_t ns, int64_t S) {            \
        T inv = (T)(1.0 / (1.0 - a->drop));                                                                     \
        for (int64_t r = 0; r < br; r++) {                                                                      \
            const T *x = P + r * ps;                                                                            \
            const unsigned char *kr = keep + r * S;                                                             \
            T *restrict dr = d + r * S;                                                                         \
            int64_t ni = seen(a, i0 + r, S);                                                                    \
            for (int64_t j = 0; j < ni; j++) dr[j] = kr[j] ? x[j] * inv : 0;                                    \
            for (int64_t j = ni; j < ns; j++) dr[j] = 0;                                                        \
        }                                                                                                       \
    }                                                                                                           \
    /* dW (rows S apart) -> dS = P (dP - rowsum(P dP)) scale, dP being dW masked and scaled as W was */         \
    PF_VEC_CLONES static void dsoftmax_rows_##SUF(const att_args *a, const T *P, int64_t ps,                    \
                                                  const unsigned char *keep, T *dp, int64_t i0, int64_t br,     \
                                                  int64_t ns, int64_t S) {                                      \
        T sc = (T)a->scale, inv = (T)(1.0 / (1.0 - a->drop));                                                   \
        for (int64_t r = 0; r < br; r++) {                                                                      \
            const T *x = P + r * ps;                                                                            \
            T *restrict d = dp + r * S;                                                                         \
            int64_t ni = seen(a, i0 + r, S), nv = ni / RL * RL;                                                 \
            T lr[RL], rs = 0;                                                                                   \
            for (int l = 0; l < RL; l++) lr[l] = 0;                                                             \
            if (a->drop > 0) {                                                                                  \
                const unsigned char *kr = keep + r * S;                                                         \
                for (int64_t j0 = 0; j0 < nv; j0 += RL)                                                         \
                    for (int l = 0; l < RL; l++) {                                                              \
                        T dj = kr[j0 + l] ? d[j0 + l] * inv : 0;                                                \
                        d[j0 + l] = dj;                                                                         \
                        lr[l] += x[j0 + l] * dj;                                                                \
                    }                                                                                           \
                for (int64_t j = nv; j < ni; j++) d[j] = kr[j] ? d[j] * inv : 0, rs += x[j] * d[j];             \
            } else {                                                                                            \
                for (int64_t j0 = 0; j0 < nv; j0 += RL)                                                         \
                    for (int l = 0; l < RL; l++) lr[l] += x[j0 + l] * d[j0 + l];                                \
                for (int64_t j = nv; j < ni; j++) rs += x[j] * d[j];                                            \
            }                                                                                                   \
            for (int l = 0; l < RL; l++) rs += lr[l];                                                           \
            for (int64_t j = 0; j < ni; j++) d[j] = x[j] * (d[j] - rs) * sc;                                    \
            for (int64_t j = ni; j < ns; j++) d[j] = 0;                                                         \
        }                                                                                                       \
    }

ATT_ROWS(float, f32, pf_expf)
ATT_ROWS(double, f64, exp)

#define ATT_TASKS(T, SUF, DT)                                                                                   \
    /* kt: scratch for small_scores (float32 only) */                                                         \
    static int att_fwd_##SUF(const att_args *a, int64_t n, T *pd, float *kt) {                                  \
        const pf_tensor *q = a->q, *k = a->k, *v = a->v;                                                        \
        int nd = q->ndim;                                                                                       \
        int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1];       \
        const T *qb = BATCH(const T, q, n), *kb = BATCH(const T, k, n), *vb = BATCH(const T, v, n);             \
        T *ob = BATCH(T, a->out, n), *pb = BATCH(T, a->pw, n);                                                  \
        int64_t ps = RS(a->pw);                                                                                 \
        (void)kt;                                                                                               \
        for (int64_t i0 = 0; i0 < L; i0 += BR) {                                                                \
            int64_t br = L - i0 < BR ? L - i0 : BR, ns = seen(a, i0 + br - 1, S);                               \
            T *P = pb + i0 * ps;                                                                                \
            int rc = PF_OK;                                                                                     \
            if (SMALL_ON(a))                                                                                    \
                SMALL_CALL(small_scores(a, (const float *)qb, RS(q), (const float *)kb, RS(k), kt, (float *)P,  \
                                        ps, i0, br, ns, E, S));                                                 \
            else                                                                                                \
                rc = mm(DT, br, ns, E, qb + i0 * RS(q), RS(q), 1, kb, 1, RS(k), P, ps, 0);                      \
            if (rc) return rc;                                                                                  \
            const T *W = P;                                                                                     \
            int64_t ws = ps;                                                                                    \
            unsigned char *keep = NULL;                                                                         \
            if (a->drop > 0) {                                                                                  \
                keep = a->keep + (n * L + i0) * S;                                                              \
                draw_keep(a, n, L, S, i0, br, keep);                                                            \
                W = pd, ws = S;                                                                                 \
            }                                                                                                   \
            if (DT == PF_FLOAT32 && ROWS8_ON(a))                                                                \
                SMALL_CALL(softmax_rows8(a, (float *)P, ps, keep, (float *)pd, i0, br, ns, S));                 \
            else                                                                                                \
                softmax_rows_##SUF(a, P, ps, keep, pd, i0, br, ns, S);                                          \
            if (SMALL_ON(a))                                                                                    \
                SMALL_CALL(small_out(a, (const float *)W, ws, (const float *)vb, RS(v), (float *)ob, RS(a->out), \
                                     i0, br, Ev, S));                                                           \
            else                                                                                                \
                rc = mm(DT, br, Ev, ns, W, ws, 1, vb, RS(v), 1, ob + i0 * RS(a->out), RS(a->out), 0);           \
            if (rc) return rc;                                                                                  \
        }                                                                                                       \
        return PF_OK;                                                                                           \
    }                                                                                                           \
    /* W = dropped P; dV = W^T dO; dW = dO V^T; dS (dsoftmax_rows); dQ = dS K; dK = dS^T Q */                   \
    static int att_bwd_##SUF(const att_args *a, int64_t n, T *pd, T *dp) {                                      \
        const pf_tensor *q = a->q, *k = a->k, *v = a->v;                                                        \
        int nd = q->ndim;                                                                                       \
        int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1];       \
        const T *qb = BATCH(const T, q, n), *kb = BATCH(const T, k, n), *vb = BATCH(const T, v, n);             \
        const T *gb = BATCH(const T, a->g, n), *pb = BATCH(const T, a->p, n);                                   \
        T *gqb = BATCH(T, a->gq, n), *gkb = BATCH(T, a->gk, n), *gvb = BATCH(T, a->gv, n);                      \
        int64_t ps = RS(a->p), gs = RS(a->g);                                                                   \
        for (int64_t j = 0; j < S; j++) {                                                                       \
            memset(gkb + j * RS(a->gk), 0, (size_t)E * sizeof(T));                                              \
            memset(gvb + j * RS(a->gv), 0, (size_t)Ev * sizeof(T));                                             \
        }                                                                                                       \
        for (int64_t i0 = 0; i0 < L; i0 += BR) {                                                                \
            int64_t br = L - i0 < BR ? L - i0 : BR, ns = seen(a, i0 + br - 1, S);                               \
            const T *P = pb + i0 * ps, *W = P;                                                                  \
            int64_t ws = ps;                                                                                    \
            const unsigned char *keep = a->keep ? a->keep + (n * L + i0) * S : NULL;                            \
            if (a->drop > 0) {                                                                                  \
                drop_rows_##SUF(a, P, ps, keep, pd, i0, br, ns, S);                                             \
                W = pd, ws = S;                                                                                 \
            }                                                                                                   \
            int rc = mm(DT, ns, Ev, br, W, 1, ws, gb + i0 * gs, gs, 1, gvb, RS(a->gv), 1);                      \
            if (!rc) rc = mm(DT, br, ns, Ev, gb + i0 * gs, gs, 1, vb, 1, RS(v), dp, S, 0);                      \
            if (rc) return rc;                                                                                  \
            if (DT == PF_FLOAT32 && ROWS8_ON(a))                                                                \
                SMALL_CALL(dsoftmax_rows8(a, (const float *)P, ps, keep, (float *)dp, i0, br, ns, S));          \
            else                                                                                                \
                dsoftmax_rows_##SUF(a, P, ps, keep, dp, i0, br, ns, S);                                         \
            rc = mm(DT, br, E, ns, dp, S, 1, kb, RS(k), 1, gqb + i0 * RS(a->gq), RS(a->gq), 0);                 \
            if (!rc) rc = mm(DT, ns, E, br, dp, 1, S, qb + i0 * RS(q), RS(q), 1, gkb, RS(a->gk), 1);            \
            if (rc) return rc;                                                                                  \
        }                                                                                                       \
        return PF_OK;                                                                                           \
    }

#ifdef SMALL_PATH
#define SMALL_ON_CPU 1
#define SMALL_ON(a) ((a)->small)
#define ROWS8_ON(a) ((a)->rows8)
#define SMALL_CALL(call) call
#else
#define SMALL_ON_CPU 0
#define SMALL_ON(a) 0
#define ROWS8_ON(a) 0
#define SMALL_CALL(call) (void)0
#endif
ATT_TASKS(float, f32, PF_FLOAT32)
ATT_TASKS(double, f64, PF_FLOAT64)

/* thread t's scratch: two blocks of BR x S values (dropped weights, dP), then small_scores' K^T */
static void team(void *arg, int t, int T, int backward) {
    const att_args *a = arg;
    int64_t b, e, S = a->k->shape[a->k->ndim - 2];
    pf_split(a->nb, t, T, &b, &e);
    size_t blk = (size_t)(BR * S) * pf_dtype_size[a->q->dtype];
    char *pd = a->scratch + (size_t)t * a->per_thread, *dp = pd + blk, *kt = dp + blk;
    int rc = PF_OK, f32 = a->q->dtype == PF_FLOAT32;
    for (int64_t n = b; n < e && !rc; n++) {
        if (backward)
            rc = f32 ? att_bwd_f32(a, n, (float *)pd, (float *)dp) : att_bwd_f64(a, n, (double *)pd, (double *)dp);
        else
            rc = f32 ? att_fwd_f32(a, n, (float *)pd, (float *)kt) : att_fwd_f64(a, n, (double *)pd, NULL);
    }
    a->rc[t] = rc;
}
static void fwd_team(void *arg, int t, int T) { team(arg, t, T, 0); }
static void bwd_team(void *arg, int t, int T) { team(arg, t, T, 1); }

/* shape [batch..., rows, cols] with the batch dims of q, a float dtype equal to q's, unit last stride */
static int check_operand(const pf_tensor *t, const pf_tensor *q, int64_t rows, int64_t cols, const char *what) {
    int rc = pf_check(t, what);
    if (rc) return rc;
    char a[128], b[128];
    if (t->dtype != q->dtype)
        return pf_error(PF_ERR_TYPE, "scaled_dot_product_attention: %s has dtype %s, query has %s", what,
                        pf_dtype_name[t->dtype], pf_dtype_name[q->dtype]);
    int ok = t->ndim == q->ndim && t->shape[t->ndim - 2] == rows && t->shape[t->ndim - 1] == cols;
    for (int i = 0; ok && i < q->ndim - 2; i++) ok = t->shape[i] == q->shape[i];
    if (!ok)
        return pf_error(PF_ERR_VALUE,
                        "scaled_dot_product_attention: %s has shape %s, expected the query's batch dims "
                        "(query %s) then [%lld, %lld]",
                        what, pf_shape_str(t, a), pf_shape_str(q, b), (long long)rows, (long long)cols);
    if (cols > 1 && t->strides[t->ndim - 1] != 1)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: %s needs a unit stride in its last dim, got %lld",
                        what, (long long)t->strides[t->ndim - 1]);
    return PF_OK;
}

static int check_all(const att_args *a, int backward) {
    const pf_tensor *q = a->q;
    int rc = pf_check(q, "query");
    if (rc) return rc;
    if (q->dtype != PF_FLOAT32 && q->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "scaled_dot_product_attention: the fused kernel takes float32 or float64, got %s",
                        pf_dtype_name[q->dtype]);
    if (q->ndim < 2)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: query needs at least 2 dims, got %d", q->ndim);
    if (!(a->drop >= 0.0 && a->drop < 1.0))
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: the fused kernel's dropout_p must be in [0, 1), "
                        "got %g", a->drop);
    int nd = q->ndim;
    int64_t L = q->shape[nd - 2], E = q->shape[nd - 1];
    if ((rc = pf_check(a->k, "key")) || (rc = pf_check(a->v, "value"))) return rc;
    if (a->k->ndim != nd || a->v->ndim != nd)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: query, key and value need one ndim, got %d, %d, %d",
                        nd, a->k->ndim, a->v->ndim);
    int64_t S = a->k->shape[nd - 2], Ev = a->v->shape[nd - 1];
    if ((rc = check_operand(q, q, L, E, "query")) || (rc = check_operand(a->k, q, S, E, "key")) ||
        (rc = check_operand(a->v, q, S, Ev, "value")))
        return rc;
    if (!backward)
        return (rc = check_operand(a->out, q, L, Ev, "output")) ? rc : check_operand(a->pw, q, L, S, "attention weights");
    if ((rc = check_operand(a->g, q, L, Ev, "output gradient")) ||
        (rc = check_operand(a->p, q, L, S, "attention weights")) || (rc = check_operand(a->gq, q, L, E, "query gradient")) ||
        (rc = check_operand(a->gk, q, S, E, "key gradient")) || (rc = check_operand(a->gv, q, S, Ev, "value gradient")))
        return rc;
    return PF_OK;
}

/* with dropout: the mask tensor, bool, contiguous, of the weights' shape [batch..., L, S] */
static int check_keep(att_args *a, const pf_tensor *keep) {
    if (!(a->drop > 0)) return PF_OK;
    if (!keep) return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: dropout needs a mask tensor, got NULL");
    int rc = pf_check(keep, "dropout mask");
    if (rc) return rc;
    const pf_tensor *q = a->q;
    char b1[128], b2[128], b3[128];
    int nd = q->ndim, ok = keep->dtype == PF_BOOL && keep->ndim == nd && pf_is_contiguous(keep) &&
                           keep->shape[nd - 2] == q->shape[nd - 2] && keep->shape[nd - 1] == a->k->shape[nd - 2];
    for (int i = 0; ok && i < nd - 2; i++) ok = keep->shape[i] == q->shape[i];
    if (!ok)
        return pf_error(PF_ERR_VALUE,
                        "scaled_dot_product_attention: the dropout mask must be a contiguous bool tensor of the "
                        "weights' shape (query %s, key %s), got %s %s",
                        pf_shape_str(q, b1), pf_shape_str(a->k, b2), pf_dtype_name[keep->dtype],
                        pf_shape_str(keep, b3));
    a->keep = keep->data;
    return PF_OK;
}

/* the tasks on a team, each thread with its scratch; the first error any of them met */
static int run(att_args *a, pf_team_fn fn) {
    const pf_tensor *q = a->q;
    int nd = q->ndim;
    a->nb = 1;
    for (int i = 0; i < nd - 2; i++) a->nb *= q->shape[i];
    if (a->nb == 0) return PF_OK;
    int64_t S = a->k->shape[nd - 2];
    int nt = pf_threads_for(pf_numel(q) * S / (a->causal ? 2 : 1));
    if (nt > a->nb) nt = (int)a->nb;
    size_t blk = (size_t)(BR * S) * pf_dtype_size[q->dtype];
    int64_t E = q->shape[nd - 1], Ev = a->v->shape[nd - 1];
    /* the GEMM's portable path (forced by its env override, or a CPU without AVX2 and FMA) keeps the GEMM calls */
    a->small = SMALL_ON_CPU && fn == fwd_team && q->dtype == PF_FLOAT32 && S <= SMALL_S && E > 0 && Ev % 8 == 0 &&
               strcmp(pf_gemm_path(), "portable") != 0;
    /* on AVX2 machines (or forced there), float32's row passes in AVX2; AVX-512 ones keep the vectorized C */
    a->rows8 = SMALL_ON_CPU && q->dtype == PF_FLOAT32 && strcmp(pf_gemm_path(), "avx2") == 0;
    size_t kt = a->small ? (size_t)(E * SMALL_S) * sizeof(float) : 0;
    a->per_thread = (2 * blk + kt + 63) & ~(size_t)63;
    a->scratch = pf_alloc((size_t)nt * a->per_thread + (size_t)nt * sizeof(int));
    if (!a->scratch) return pf_error(PF_ERR_NOMEM, "scaled_dot_product_attention: out of memory for its scratch");
    a->rc = (int *)(a->scratch + (size_t)nt * a->per_thread);
    for (int t = 0; t < nt; t++) a->rc[t] = PF_OK;
    pf_run_team(nt, fn, a);
    int rc = PF_OK;
    for (int t = 0; t < nt && !rc; t++) rc = a->rc[t];
    pf_free(a->scratch);
    return rc ? pf_error(rc, "scaled_dot_product_attention: out of memory for a product's packing buffer") : PF_OK;
}

int pf_attention(const pf_tensor *q, const pf_tensor *k, const pf_tensor *v, pf_tensor *out, pf_tensor *p,
                 double scale, int causal, double dropout_p, uint64_t seed, uint64_t offset, pf_tensor *keep) {
    att_args a = {.q = q, .k = k, .v = v, .out = out, .pw = p, .causal = causal != 0, .scale = scale,
                  .drop = dropout_p, .seed = seed, .offset = offset};
    int rc = check_all(&a, 0);
    if (!rc) rc = check_keep(&a, keep);
    if (rc) return rc;
    if (q->shape[q->ndim - 2] == 0) return PF_OK;
    if (k->shape[k->ndim - 2] == 0)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: the fused kernel needs at least one key");
    return run(&a, fwd_team);
}

int pf_attention_backward(const pf_tensor *g, const pf_tensor *q, const pf_tensor *k, const pf_tensor *v,
                          const pf_tensor *p, pf_tensor *gq, pf_tensor *gk, pf_tensor *gv, double scale, int causal,
                          double dropout_p, const pf_tensor *keep) {
    att_args a = {.q = q, .k = k, .v = v, .g = g, .p = p, .gq = gq, .gk = gk, .gv = gv, .causal = causal != 0,
                  .scale = scale, .drop = dropout_p};
    int rc = check_all(&a, 1);
    if (!rc) rc = check_keep(&a, keep);
    if (rc) return rc;
    return run(&a, bwd_team);
}
