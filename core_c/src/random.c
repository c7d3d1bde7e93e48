/* Random numbers: fills from the counter-based Philox4x32-10 generator (Salmon et al., SC'11),
 * and the draws built on them: permutations, weighted draws (the data samplers') and
 * multinomial sampling.
 *
 * Element i of dst (row-major, whatever its strides) is a function of the seed and its
 * counter offset + i alone. So the bits do not depend on the thread count or on how the
 * work is split, and a draw starting at offset k equals the tail of a longer draw from
 * offset 0: the Python side only has to advance the offset by numel after each call.
 * Permutations and weighted draws take their uniforms from the same stream, so they too are
 * a function of (seed, offset); the counters each uses are documented at its entry point. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"

/* Philox4x32-10 on PB consecutive counters at once: kept as arrays so the compiler turns
 * the rounds into SIMD multiplies (about 2x over one block at a time with SSE2 alone).
 * Word j of block blk0 + i lands in out[j][i]. */
#define PB 8
PF_ALWAYS_INLINE void philox4x32_10(uint64_t blk0, uint64_t seed, uint32_t out[4][PB]) {
    uint32_t c0[PB], c1[PB], c2[PB], c3[PB];
    for (int i = 0; i < PB; i++) {
        uint64_t c = blk0 + (uint64_t)i;
        c0[i] = (uint32_t)c;
        c1[i] = (uint32_t)(c >> 32);
        c2[i] = c3[i] = 0;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        for (int i = 0; i < PB; i++) {
            uint64_t m0 = (uint64_t)0xD2511F53u * c0[i], m1 = (uint64_t)0xCD9E8D57u * c2[i];
            uint32_t n0 = (uint32_t)(m1 >> 32) ^ c1[i] ^ k0, n2 = (uint32_t)(m0 >> 32) ^ c3[i] ^ k1;
            c1[i] = (uint32_t)m1;
            c3[i] = (uint32_t)m0;
            c0[i] = n0;
            c2[i] = n2;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    memcpy(out[0], c0, sizeof c0);
    memcpy(out[1], c1, sizeof c1);
    memcpy(out[2], c2, sizeof c2);
    memcpy(out[3], c3, sizeof c3);
}

/* High 64 bits of a * b, from 32-bit halves (no __int128 needed). */
static inline uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

static inline double u53(uint32_t a, uint32_t b) { return (double)((((uint64_t)a << 32) | b) >> 11) * 0x1p-53; }

typedef struct {
    int kind, dt;
    double lo, span;      /* uniform: lo + u * span; normal: mean, std */
    double top;           /* uniform: largest value of dt below the upper bound */
    uint16_t top16;
    uint64_t ilow, irange; /* randint: low + floor(r * irange / 2^64); irange 0 = 2^64 */
    double prob;
} gen;

/* Largest float16 or bfloat16 (dt) strictly below v (v finite). */
static uint16_t half_below(int dt, double v) {
    uint16_t h = pf_half_store(dt, (float)v);
    while ((double)pf_half_load(dt, h) >= v) h = (h & 0x8000) ? h + 1 : (h == 0 ? 0x8001 : h - 1);
    return h;
}

/* Fills n elements at p (byte stride st): elements e0, e0 + 1, ... Element e takes lane
 * e % per of Philox block e / per, where 32-bit kinds share a block among 4 elements and
 * 64-bit kinds and Box-Muller pairs among 2. The value still depends on (seed, e) alone;
 * a block straddling two runs or two threads is simply computed twice. */
static void gen_run(const gen *g, uint64_t seed, uint64_t e0, char *p, int64_t st, int64_t n) {
    const unsigned per = g->kind == PF_RAND_BERNOULLI || (g->kind == PF_RAND_UNIFORM && g->dt != PF_FLOAT64) ? 4 : 2;
    uint32_t w[4][PB];
    for (int64_t k = 0; k < n;) {
        uint64_t e = e0 + (uint64_t)k;
        unsigned q0 = (unsigned)(e % per); /* lane of the first element */
        int64_t m = (int64_t)(PB * per - q0);
        if (m > n - k) m = n - k;
        /* stop at the 2^64 wrap: the element after it starts block 0, not block e/per + 1 */
        if ((uint64_t)0 - e < (uint64_t)m && e != 0) m = (int64_t)((uint64_t)0 - e);
        philox4x32_10(e / per, seed, w);
        char *o = p + k * st;
        switch (g->kind) {
        case PF_RAND_UNIFORM:
            if (g->dt == PF_FLOAT64)
                for (int64_t i = 0; i < m; i++) {
                    unsigned q = q0 + (unsigned)i, b = q / 2, l = q % 2;
                    double v = g->lo + u53(w[2 * l][b], w[2 * l + 1][b]) * g->span;
                    *(double *)(o + i * st) = v < g->top ? v : g->top; /* lo + u*span may round up to the bound */
                }
            else if (g->dt == PF_FLOAT32)
                for (int64_t i = 0; i < m; i++) {
                    unsigned q = q0 + (unsigned)i;
                    float f = (float)(g->lo + (double)(w[q % 4][q / 4] >> 8) * 0x1p-24 * g->span);
                    *(float *)(o + i * st) = (double)f < g->top ? f : (float)g->top;
                }
            else
                for (int64_t i = 0; i < m; i++) {
                    unsigned q = q0 + (unsigned)i;
                    float f = (float)(g->lo + (double)(w[q % 4][q / 4] >> 8) * 0x1p-24 * g->span);
                    uint16_t h = pf_half_store(g->dt, f);
                    *(uint16_t *)(o + i * st) = (double)pf_half_load(g->dt, h) < g->top ? h : g->top16;
                }
            break;
        case PF_RAND_NORMAL: {
            double z[2] = {0, 0};
            for (int64_t i = 0; i < m; i++) {
                unsigned q = q0 + (unsigned)i, b = q / 2, l = q % 2;
                if (i == 0 || l == 0) {
                    /* Box-Muller, both outputs; u1 in (0, 1] keeps the log finite */
                    double u1 = ((double)((((uint64_t)w[0][b] << 32) | w[1][b]) >> 11) + 1.0) * 0x1p-53;
                    double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u53(w[2][b], w[3][b]);
                    z[0] = r * cos(t);
                    z[1] = r * sin(t);
                }
                pf_store_f64(o + i * st, g->dt, g->lo + g->span * z[l]);
            }
            break;
        }
        case PF_RAND_INT:
            for (int64_t i = 0; i < m; i++) {
                unsigned q = q0 + (unsigned)i, b = q / 2, l = q % 2;
                uint64_t r = ((uint64_t)w[2 * l][b] << 32) | w[2 * l + 1][b];
                /* multiply-shift: bias at most irange / 2^64, nothing to reject or retry */
                uint64_t v = g->ilow + (g->irange ? mulhi64(r, g->irange) : r);
                pf_store_i64(o + i * st, g->dt, (int64_t)v);
            }
            break;
        default: /* bernoulli: 32 bits resolve p to 2^-32, plenty for a mask */
            for (int64_t i = 0; i < m; i++) {
                unsigned q = q0 + (unsigned)i;
                pf_store_i64(o + i * st, g->dt, (double)w[q % 4][q / 4] * 0x1p-32 < g->prob);
            }
        }
        k += m;
    }
}

/* Philox4x32-10 on NL consecutive counters, one per 32-bit lane of GCC vectors (vpmuludq on the
 * even and odd lanes): word j of block blk0 + i lands in out[j][i], the words philox4x32_10 gives.
 * Written once per lane count: 16 lanes (64-byte vectors) for AVX-512 and the default build, 8
 * (32-byte) for AVX2, where gcc split the 64-byte vectors into halves it kept spilling to the stack
 * (a mask byte cost as much as torch's, about 9 ns). */
#define LO32 0x00000000FFFFFFFFull
/* lo, hi = the low and high 32 bits of c * k in each lane (k < 2^32): even lanes, then odd */
#define MULHILO(U32, U64, c, k, lo, hi)                                             \
    do {                                                                            \
        U64 pe_ = ((U64)(c) & LO32) * (k), po_ = ((U64)(c) >> 32) * (k);            \
        lo = (U32)((pe_ & LO32) | (po_ << 32));                                     \
        hi = (U32)((pe_ >> 32) | (po_ & ~LO32));                                    \
    } while (0)
#define DEFINE_PHILOX(NL)                                                                                  \
    typedef uint32_t u32x##NL __attribute__((vector_size(4 * NL)));                                       \
    typedef uint64_t u64x##NL __attribute__((vector_size(4 * NL)));                                       \
    PF_ALWAYS_INLINE void philox##NL(uint64_t blk0, uint64_t seed, uint32_t out[4][NL]) {                  \
        uint32_t lo[NL], hi[NL];                                                                          \
        for (int i = 0; i < NL; i++)                                                                      \
            lo[i] = (uint32_t)(blk0 + (uint64_t)i), hi[i] = (uint32_t)((blk0 + (uint64_t)i) >> 32);       \
        u32x##NL c0, c1, c2 = {0}, c3 = {0}, l0, h0, l1, h1;                                              \
        memcpy(&c0, lo, sizeof lo);                                                                       \
        memcpy(&c1, hi, sizeof hi);                                                                       \
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);                                        \
        const u64x##NL m0 = (u64x##NL){0} + 0xD2511F53u, m1 = (u64x##NL){0} + 0xCD9E8D57u;                \
        for (int r = 0; r < 10; r++) {                                                                    \
            MULHILO(u32x##NL, u64x##NL, c0, m0, l0, h0);                                                  \
            MULHILO(u32x##NL, u64x##NL, c2, m1, l1, h1);                                                  \
            c0 = h1 ^ c1 ^ k0;                                                                            \
            c2 = h0 ^ c3 ^ k1;                                                                            \
            c1 = l1;                                                                                      \
            c3 = l0;                                                                                      \
            k0 += 0x9E3779B9u;                                                                            \
            k1 += 0xBB67AE85u;                                                                            \
        }                                                                                                 \
        memcpy(out[0], &c0, 4 * NL);                                                                      \
        memcpy(out[1], &c1, 4 * NL);                                                                      \
        memcpy(out[2], &c2, 4 * NL);                                                                      \
        memcpy(out[3], &c3, 4 * NL);                                                                      \
    }
DEFINE_PHILOX(16)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
/* AVX2 has no 64-bit lane multiply, and gcc does not see that MULHILO's 64-bit factors hold 32 bits:
 * each product was a full 64 x 64 one (three vpmuludq with shifts and adds; the constant factor a chain of
 * shifts and adds), most of a mask byte's cost. vpmuludq is the 32 x 32 -> 64 product itself, on the even
 * lanes; the odd lanes are shifted down to meet it. The same words as the generic form. */
#include <immintrin.h>
typedef uint32_t u32x8 __attribute__((vector_size(32)));
#define MULHILO8(c, m, lo, hi)                                                                       \
    do {                                                                                             \
        __m256i pe_ = _mm256_mul_epu32(c, m), po_ = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);   \
        lo = _mm256_blend_epi32(pe_, _mm256_slli_epi64(po_, 32), 0xAA);                              \
        hi = _mm256_blend_epi32(_mm256_srli_epi64(pe_, 32), po_, 0xAA);                              \
    } while (0)
static inline __attribute__((always_inline, target("avx2"))) void philox8(uint64_t blk0, uint64_t seed,
                                                                          uint32_t out[4][8]) {
    uint32_t lo[8], hi[8];
    for (int i = 0; i < 8; i++) lo[i] = (uint32_t)(blk0 + (uint64_t)i), hi[i] = (uint32_t)((blk0 + (uint64_t)i) >> 32);
    __m256i c0 = _mm256_loadu_si256((const __m256i *)lo), c1 = _mm256_loadu_si256((const __m256i *)hi);
    __m256i c2 = _mm256_setzero_si256(), c3 = c2, l0, h0, l1, h1;
    __m256i k0 = _mm256_set1_epi32((int)(uint32_t)seed), k1 = _mm256_set1_epi32((int)(uint32_t)(seed >> 32));
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
    const __m256i w0 = _mm256_set1_epi32((int)0x9E3779B9u), w1 = _mm256_set1_epi32((int)0xBB67AE85u);
    for (int r = 0; r < 10; r++) {
        MULHILO8(c0, m0, l0, h0);
        MULHILO8(c2, m1, l1, h1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(h1, c1), k0);
        c2 = _mm256_xor_si256(_mm256_xor_si256(h0, c3), k1);
        c1 = l1;
        c3 = l0;
        k0 = _mm256_add_epi32(k0, w0);
        k1 = _mm256_add_epi32(k1, w1);
    }
    _mm256_storeu_si256((__m256i *)out[0], c0);
    _mm256_storeu_si256((__m256i *)out[1], c1);
    _mm256_storeu_si256((__m256i *)out[2], c2);
    _mm256_storeu_si256((__m256i *)out[3], c3);
}
#else
DEFINE_PHILOX(8)
#endif

/* gen_run's Bernoulli draw into bytes: w * 2^-32 < prob is w < ceil(prob 2^32) in integers (w 2^-32 and
 * prob 2^32 are exact), NL Philox blocks (4 NL draws) at once */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WHOLE_RUN(NL)                                                                                      \
    if (m == 4 * NL) { /* block b's four bytes as one little-endian word: byte l is word l's draw */      \
        u32x##NL v[4], bytes = {0}, one = bytes + 1;                                                      \
        memcpy(v, w, sizeof w);                                                                           \
        for (int l = 0; l < 4; l++)                                                                       \
            bytes |= (thr > UINT32_MAX ? one : ((u32x##NL)(v[l] < (uint32_t)thr) & one)) << (8 * l);      \
        memcpy(o, &bytes, 4 * NL);                                                                        \
    } else
#else
#define WHOLE_RUN(NL)
#endif
#define DEFINE_BERNOULLI(NL, ATTR)                                                                         \
    ATTR static void bernoulli_bytes##NL(uint64_t seed, uint64_t e0, int64_t n, double prob,               \
                                         unsigned char *out) {                                             \
        const uint64_t thr = (uint64_t)ceil(prob * 0x1p32);                                               \
        uint32_t w[4][NL];                                                                                \
        for (int64_t k = 0; k < n;) {                                                                     \
            uint64_t e = e0 + (uint64_t)k;                                                                \
            unsigned q0 = (unsigned)(e % 4);                                                              \
            int64_t m = (int64_t)(4 * NL - q0);                                                           \
            if (m > n - k) m = n - k;                                                                     \
            if ((uint64_t)0 - e < (uint64_t)m && e != 0) m = (int64_t)((uint64_t)0 - e); /* as gen_run */ \
            philox##NL(e / 4, seed, w);                                                                   \
            unsigned char *o = out + k;                                                                   \
            WHOLE_RUN(NL)                                                                                 \
            for (int64_t i = 0; i < m; i++) {                                                             \
                unsigned q = q0 + (unsigned)i;                                                            \
                o[i] = w[q % 4][q / 4] < thr;                                                             \
            }                                                                                             \
            k += m;                                                                                       \
        }                                                                                                 \
    }
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
DEFINE_BERNOULLI(16, __attribute__((target_clones("avx512f", "default"))))
DEFINE_BERNOULLI(8, __attribute__((target("avx2"))))
void pf_bernoulli_bytes(uint64_t seed, uint64_t e0, int64_t n, double prob, unsigned char *out) {
    /* the kernel set the GEMM chose (pf_gemm_select): forcing "avx2" runs the 8-lane words on any machine */
    if (!strcmp(pf_gemm_path(), "avx2")) bernoulli_bytes8(seed, e0, n, prob, out);
    else bernoulli_bytes16(seed, e0, n, prob, out);
}
#else
DEFINE_BERNOULLI(16, )
void pf_bernoulli_bytes(uint64_t seed, uint64_t e0, int64_t n, double prob, unsigned char *out) {
    bernoulli_bytes16(seed, e0, n, prob, out);
}
#endif

/* Exact integer range of each dtype for randint bounds (floats: consecutive integers). */
static const double int_lo[] = {[PF_FLOAT32] = -0x1p24, [PF_FLOAT64] = -0x1p53, [PF_FLOAT16] = -0x1p11,
                                 [PF_INT64] = -0x1p63,   [PF_INT32] = -0x1p31,   [PF_BOOL] = 0,
                                 [PF_UINT8] = 0,         [PF_INT8] = -0x1p7,     [PF_INT16] = -0x1p15,
                                 [PF_BFLOAT16] = -0x1p8};
static const double int_hi[] = {[PF_FLOAT32] = 0x1p24, [PF_FLOAT64] = 0x1p53, [PF_FLOAT16] = 0x1p11,
                                [PF_INT64] = 0x1p63,   [PF_INT32] = 0x1p31,   [PF_BOOL] = 2,
                                [PF_UINT8] = 0x1p8,    [PF_INT8] = 0x1p7,     [PF_INT16] = 0x1p15,
                                [PF_BFLOAT16] = 0x1p8};
_Static_assert(sizeof int_lo / sizeof int_lo[0] == PF_NUM_DTYPES && sizeof int_hi / sizeof int_hi[0] == PF_NUM_DTYPES,
               "a dtype without its randint range");
static const double float_max[] = {[PF_FLOAT32] = FLT_MAX, [PF_FLOAT64] = DBL_MAX, [PF_FLOAT16] = 65504.0,
                                   [PF_BFLOAT16] = 0x1.fep127};

static int setup(int kind, int dt, double p0, double p1, gen *g) {
    const char *dn = pf_dtype_name[dt];
    *g = (gen){.kind = kind, .dt = dt, .lo = p0, .span = p1};
    switch (kind) {
    case PF_RAND_UNIFORM:
        if (!pf_is_float(dt)) return pf_error(PF_ERR_TYPE, "uniform: dst must be a float dtype, got %s", dn);
        if (!isfinite(p0) || !isfinite(p1))
            return pf_error(PF_ERR_VALUE, "uniform bounds must be finite, got low=%g, high=%g", p0, p1);
        if (p0 > p1) return pf_error(PF_ERR_VALUE, "uniform: expects low <= high, got low=%g > high=%g", p0, p1);
        g->span = p1 - p0;
        if (p0 < -float_max[dt] || p1 > float_max[dt])
            return pf_error(PF_ERR_VALUE, "uniform: bounds [%g, %g) are outside the range of %s", p0, p1, dn);
        if (g->span > float_max[dt])
            return pf_error(PF_ERR_VALUE, "uniform: high - low = %g is larger than the largest %s", g->span, dn);
        if (p0 == p1) { /* the empty range [p, p) gives p, as torch */
            g->top = p0;
            g->top16 = pf_half_store(dt, (float)p0);
            break;
        }
        if (dt == PF_FLOAT64) g->top = nextafter(p1, -INFINITY);
        else if (dt == PF_FLOAT32) {
            float f = (float)p1;
            g->top = (double)f < p1 ? f : nextafterf(f, -INFINITY);
        } else {
            g->top16 = half_below(dt, p1);
            g->top = pf_half_load(dt, g->top16);
        }
        break;
    case PF_RAND_NORMAL:
        if (!pf_is_float(dt)) return pf_error(PF_ERR_TYPE, "normal: dst must be a float dtype, got %s", dn);
        if (!(p1 >= 0.0)) return pf_error(PF_ERR_VALUE, "normal expects std >= 0.0, but found std %g", p1);
        if (!isfinite(p0) || !isfinite(p1))
            return pf_error(PF_ERR_VALUE, "normal: mean and std must be finite, got mean=%g, std=%g", p0, p1);
        break;
    case PF_RAND_INT:
        if (!isfinite(p0) || !isfinite(p1))
            return pf_error(PF_ERR_VALUE, "randint bounds must be finite, got low=%g, high=%g", p0, p1);
        if (p0 != floor(p0) || p1 != floor(p1))
            return pf_error(PF_ERR_VALUE, "randint bounds must be integers, got low=%.17g, high=%.17g", p0, p1);
        if (p0 >= p1) return pf_error(PF_ERR_VALUE, "randint expects low < high, got low=%.17g, high=%.17g", p0, p1);
        if (p0 < int_lo[dt] || p1 > int_hi[dt])
            return pf_error(PF_ERR_VALUE, "randint: [%.17g, %.17g) is outside the range [%.17g, %.17g] of %s", p0, p1,
                            int_lo[dt], int_hi[dt], dn);
        /* low >= -2^63 converts exactly; high - 1 <= 2^63 - 1 needs the uint64 route */
        g->ilow = (uint64_t)(int64_t)p0;
        {
            uint64_t hi_incl = p1 == 0x1p63 ? (uint64_t)INT64_MAX : (uint64_t)(int64_t)p1 - 1;
            g->irange = hi_incl - g->ilow + 1; /* wraps to 0 for the full 2^64 range */
        }
        break;
    case PF_RAND_BERNOULLI:
        if (!(p0 >= 0.0 && p0 <= 1.0))
            return pf_error(PF_ERR_VALUE, "bernoulli expects 0 <= p <= 1, but got p=%g", p0);
        g->prob = p0;
        break;
    default: return pf_error(PF_ERR_VALUE, "random: unknown kind %d", kind);
    }
    return PF_OK;
}

typedef struct {
    const gen *g;
    pf_tensor *dst;
    uint64_t seed, offset;
} fill_job;

static void fill_part(void *arg, int64_t b, int64_t e) {
    const fill_job *j = arg;
    const pf_tensor *dst = j->dst;
    pf_walk w;
    pf_walk_tensor(&w, dst, b);
    while (b < e) {
        int64_t n = pf_walk_run(&w, e - b);
        char *o = (char *)dst->data + w.off[0];
        if (j->g->kind == PF_RAND_BERNOULLI && dst->dtype == PF_BOOL && w.inner[0] == 1) /* dropout's masks */
            pf_bernoulli_bytes(j->seed, j->offset + (uint64_t)b, n, j->g->prob, (unsigned char *)o);
        else
            gen_run(j->g, j->seed, j->offset + (uint64_t)b, o, w.inner[0], n);
        b += n;
        pf_walk_advance(&w, n);
    }
}

int pf_random(int kind, pf_tensor *dst, uint64_t seed, uint64_t offset, double p0, double p1) {
    int rc = pf_check(dst, "random: dst");
    if (rc != PF_OK) return rc;
    gen g;
    if ((rc = setup(kind, dst->dtype, p0, p1, &g)) != PF_OK) return rc;
    int64_t total = pf_numel(dst);
    fill_job j = {&g, dst, seed, offset};
    pf_parallel_range(pf_threads_for(total), total, fill_part, &j);
    return PF_OK;
}

/* ---- permutations and weighted draws ------------------------------------------------ */

/* The first j < n - 1 with c[j] > target, else n - 1: the inverse CDF over the running sums c. */
static int64_t first_above(const double *c, int64_t n, double target) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c[mid] > target) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static int check_index_out(const pf_tensor *out, const char *who) {
    if (!out) return pf_error(PF_ERR_VALUE, "%s: NULL output", who);
    if (out->dtype != PF_INT64 || out->ndim != 1 || (out->shape[0] > 1 && out->strides[0] != 1))
        return pf_error(PF_ERR_VALUE, "%s: output must be a contiguous 1-d int64 tensor", who);
    if (out->shape[0] > 0 && !out->data) return pf_error(PF_ERR_VALUE, "%s: NULL output data", who);
    return PF_OK;
}

/* n uniforms in [0, 1) as doubles, from counters offset .. offset + n - 1 (caller frees) */
static double *uniforms(int64_t n, uint64_t seed, uint64_t offset, int *rc) {
    double *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    if (!u) {
        *rc = pf_error(PF_ERR_NOMEM, "sampling: cannot allocate %lld doubles", (long long)n);
        return NULL;
    }
    pf_tensor t = {.data = u, .dtype = PF_FLOAT64, .ndim = 1, .shape = {n}, .strides = {1}};
    *rc = pf_random(PF_RAND_UNIFORM, &t, seed, offset, 0.0, 1.0);
    if (*rc) {
        free(u);
        return NULL;
    }
    return u;
}

int pf_randperm(pf_tensor *out, uint64_t seed, uint64_t offset) {
    int rc = check_index_out(out, "randperm");
    if (rc) return rc;
    int64_t n = out->shape[0], *p = out->data;
    if (n == 0) return PF_OK;
    double *u = uniforms(n, seed, offset, &rc);
    if (!u) return rc;
    for (int64_t i = 0; i < n; i++) p[i] = i;
    /* Fisher-Yates from the top: position i swaps with a uniform j in [0, i] */
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(u[i] * (double)(i + 1));
        if (j > i) j = i; /* u < 1, but guard the rounding of u * (i + 1) */
        int64_t tmp = p[i];
        p[i] = p[j];
        p[j] = tmp;
    }
    free(u);
    return PF_OK;
}

typedef struct {
    double key;
    int64_t index;
} keyed;

static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index); /* stable: equal keys keep index order */
}

/* Loads weight i as a double; 0 on success, else an error for a negative, NaN or inf weight. */
static int load_weights(const pf_tensor *w, double *out, double *total, int64_t *positive) {
    int64_t n = w->shape[0];
    size_t sz = pf_dtype_size[w->dtype];
    *total = 0;
    *positive = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = pf_load_f64((const char *)w->data + (size_t)(i * w->strides[0]) * sz, w->dtype);
        if (!(v >= 0) || isinf(v))
            return pf_error(PF_ERR_VALUE, "weighted sampling: weight %lld is %g; weights must be finite and >= 0",
                            (long long)i, v);
        out[i] = v;
        *total += v;
        *positive += v > 0;
    }
    if (!(*total > 0) || isinf(*total))
        return pf_error(PF_ERR_VALUE, "weighted sampling: the weights must have a positive, finite sum (got %g)",
                        *total);
    return PF_OK;
}

int pf_weighted_sample(const pf_tensor *weights, pf_tensor *out, int replacement, uint64_t seed,
                       uint64_t offset) {
    int rc = check_index_out(out, "weighted_sample");
    if (rc) return rc;
    if (!weights || weights->ndim != 1 || !pf_is_float(weights->dtype))
        return pf_error(PF_ERR_VALUE, "weighted_sample: weights must be a 1-d floating tensor");
    int64_t n = weights->shape[0], k = out->shape[0], *dst = out->data;
    if (n == 0) return pf_error(PF_ERR_VALUE, "weighted_sample: weights must not be empty");
    if (k == 0) return PF_OK;
    double *w = malloc((size_t)n * sizeof *w), total = 0;
    if (!w) return pf_error(PF_ERR_NOMEM, "weighted_sample: cannot allocate %lld doubles", (long long)n);
    int64_t positive = 0;
    rc = load_weights(weights, w, &total, &positive);
    if (!rc && !replacement && k > positive)
        rc = pf_error(PF_ERR_VALUE,
                      "weighted_sample: cannot draw %lld samples without replacement from %lld positive weights",
                      (long long)k, (long long)positive);
    double *u = rc ? NULL : uniforms(replacement ? k : n, seed, offset, &rc);
    if (!u) {
        free(w);
        return rc;
    }
    if (replacement) {
        /* inverse CDF: the first index whose running sum exceeds u * total */
        for (int64_t i = 1; i < n; i++) w[i] += w[i - 1];
        for (int64_t s = 0; s < k; s++) {
            int64_t lo = first_above(w, n, u[s] * w[n - 1]);
            while (lo > 0 && w[lo] == w[lo - 1]) lo--; /* u * total rounding up to total */
            dst[s] = lo;
        }
    } else {
        /* Efraimidis-Spirakis: the k smallest of E_i / w_i, E_i exponential, are a weighted
         * draw without replacement; zero weights get +inf and are never among them */
        keyed *kv = malloc((size_t)n * sizeof *kv);
        if (!kv) {
            free(w);
            free(u);
            return pf_error(PF_ERR_NOMEM, "weighted_sample: cannot allocate %lld keys", (long long)n);
        }
        for (int64_t i = 0; i < n; i++) {
            kv[i].key = w[i] > 0 ? -log1p(-u[i]) / w[i] : INFINITY;
            kv[i].index = i;
        }
        qsort(kv, (size_t)n, sizeof *kv, by_key);
        for (int64_t s = 0; s < k; s++) dst[s] = kv[s].index;
        free(kv);
    }
    free(w);
    free(u);
    return PF_OK;
}

/* ---- multinomial ------------------------------------------------------------------ */

typedef struct {
    const double *P, *U;
    int64_t *O;
    int64_t n, k;
    int replacement, failed;
} mn_job;

/* rows [r0, r1), with a row of scratch weights of their own */
static void mn_rows(void *arg, int64_t r0, int64_t r1) {
    mn_job *j = arg;
    const double *P = j->P, *U = j->U;
    int64_t *O = j->O, n = j->n, k = j->k;
    double *w = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!w) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const double *p = P + r * n;
        if (j->replacement) {
            /* cumulative weights, then a binary search per draw for the first c[j] > u * total */
            double acc = 0;
            for (int64_t c = 0; c < n; c++) w[c] = acc += p[c];
            for (int64_t s = 0; s < k; s++) {
                int64_t lo = first_above(w, n, U[r * k + s] * acc);
                while (lo > 0 && p[lo] == 0) lo--; /* rounding never picks an empty category */
                while (p[lo] == 0 && lo < n - 1) lo++;
                O[r * k + s] = lo;
            }
        } else {
            /* sequential draws, each removing the category it picked */
            memcpy(w, p, (size_t)n * sizeof(double));
            for (int64_t s = 0; s < k; s++) {
                double total = 0;
                for (int64_t c = 0; c < n; c++) total += w[c];
                double target = U[r * k + s] * total, acc = 0;
                int64_t pick = -1, last = -1;
                for (int64_t c = 0; c < n; c++) {
                    if (w[c] <= 0) continue;
                    last = c;
                    acc += w[c];
                    if (acc > target) {
                        pick = c;
                        break;
                    }
                }
                if (pick < 0) pick = last; /* u * total rounded up to the sum */
                O[r * k + s] = pick;
                w[pick] = 0;
            }
        }
    }
    free(w);
}

int pf_multinomial(const pf_tensor *probs, const pf_tensor *u, int replacement, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(probs, "probs")) || (rc = pf_check(u, "u")) || (rc = pf_check(out, "out"))) return rc;
    if (probs->ndim != 2 || u->ndim != 2 || out->ndim != 2)
        return pf_error(PF_ERR_VALUE, "multinomial: probs, u and out must be 2-d [rows, n] / [rows, samples]");
    if (probs->dtype != PF_FLOAT64 || u->dtype != PF_FLOAT64 || out->dtype != PF_INT64)
        return pf_error(PF_ERR_TYPE, "multinomial: probs and u must be float64 and out int64");
    if (!pf_is_contiguous(probs) || !pf_is_contiguous(u) || !pf_is_contiguous(out))
        return pf_error(PF_ERR_VALUE, "multinomial: operands must be contiguous");
    int64_t rows = probs->shape[0], n = probs->shape[1], k = out->shape[1];
    if (u->shape[0] != rows || out->shape[0] != rows || u->shape[1] != k)
        return pf_error(PF_ERR_VALUE, "multinomial: u and out must be [%lld, %lld]", (long long)rows, (long long)k);
    if (!replacement && k > n)
        return pf_error(PF_ERR_VALUE,
                        "multinomial: cannot sample %lld > %lld categories without replacement", (long long)k,
                        (long long)n);
    if (n == 0 && rows && k) return pf_error(PF_ERR_VALUE, "multinomial: probs has no categories");
    const double *P = probs->data, *U = u->data;
    int64_t *O = out->data;
    /* validate every row first, so a bad row leaves out untouched */
    for (int64_t r = 0; r < rows; r++) {
        double total = 0;
        int64_t nonzero = 0;
        for (int64_t j = 0; j < n; j++) {
            double p = P[r * n + j];
            if (!(p >= 0) || p == INFINITY)
                return pf_error(PF_ERR_VALUE,
                                "multinomial: probability %g at row %lld, category %lld; probabilities must be "
                                "finite and non-negative", p, (long long)r, (long long)j);
            total += p;
            nonzero += p > 0;
        }
        if (!(total > 0) || total == INFINITY)
            return pf_error(PF_ERR_VALUE, "multinomial: row %lld sums to %g; each row needs a positive finite sum",
                            (long long)r, total);
        if (!replacement && nonzero < k)
            return pf_error(PF_ERR_VALUE,
                            "multinomial: row %lld has %lld non-zero categories, fewer than the %lld samples asked "
                            "for without replacement", (long long)r, (long long)nonzero, (long long)k);
    }
    mn_job j = {P, U, O, n, k, replacement, 0};
    pf_parallel_range(pf_threads_for(rows * n * (replacement ? 1 : k)), rows, mn_rows, &j);
    if (j.failed)
        return pf_error(PF_ERR_NOMEM, "multinomial: cannot allocate scratch for %lld categories", (long long)n);
    return PF_OK;
}

/* ---- parameterised draws: gamma, Poisson, binomial ---------------------------------- */

/* The samplers follow ATen's Distributions.h: gamma from NumPy's distributions.c (Copyright 2005 Robert Kern,
 * MIT), Poisson PTRS from the same NumPy file, binomial inversion and BTRS from TensorFlow's
 * random_binomial_op.cc (Copyright 2019 The TensorFlow Authors, Apache 2.0); see THIRD_PARTY_NOTICES.md. */

/* Element e of a parameterised draw owns the counter offset + e, as the fills do, and takes as many
 * uniforms as its rejection loop needs from its own stream: Philox blocks with that counter in
 * words 0-1 and the draw index j = 1, 2, ... in word 2 (the fills use j = 0), two 53-bit uniforms
 * per block. So an element's value depends on (seed, offset + e) alone, whatever the thread count. */
typedef struct {
    uint64_t ctr, seed;
    uint32_t j, used;
    uint32_t w[4];
} stream;

static void stream_block(stream *s) {
    uint32_t c0 = (uint32_t)s->ctr, c1 = (uint32_t)(s->ctr >> 32), c2 = ++s->j, c3 = 0;
    uint32_t k0 = (uint32_t)s->seed, k1 = (uint32_t)(s->seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t m0 = (uint64_t)0xD2511F53u * c0, m1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(m1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(m0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)m1;
        c3 = (uint32_t)m0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    s->w[0] = c0, s->w[1] = c1, s->w[2] = c2, s->w[3] = c3;
    s->used = 0;
}

/* a uniform in [0, 1) */
static double st_uniform(stream *s) {
    if (s->used >= 2) stream_block(s);
    double u = u53(s->w[2 * s->used], s->w[2 * s->used + 1]);
    s->used++;
    return u;
}

/* a standard normal (Box-Muller, the cosine half; 1 - u keeps the log finite) */
static double st_normal(stream *s) {
    double u1 = 1.0 - st_uniform(s), u2 = st_uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Gamma(alpha, 1): Marsaglia and Tsang (2000), alpha < 1 boosted by U^(1/alpha), as torch and NumPy */
static double draw_gamma(stream *s, double alpha) {
    double scale = 1.0;
    if (alpha < 1.0) {
        if (alpha == 0.0) return 0.0;
        scale = pow(1.0 - st_uniform(s), 1.0 / alpha);
        alpha += 1.0;
    }
    const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, y;
        do {
            x = st_normal(s);
            y = 1.0 + c * x;
        } while (y <= 0);
        double v = y * y * y, u = 1.0 - st_uniform(s), xx = x * x;
        if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
        if (log(u) < 0.5 * xx + d * (1.0 - v + log(v))) return scale * d * v;
    }
}

/* Poisson(lam): multiplication of uniforms below 10, Hormann's PTRS above (as NumPy and torch) */
static double draw_poisson(stream *s, double lam) {
    if (lam <= 0) return 0.0;
    if (lam < 10) {
        double enlam = exp(-lam), prod = 1.0, x = 0;
        for (;;) {
            prod *= st_uniform(s);
            if (prod > enlam) x += 1;
            else return x;
        }
    }
    const double slam = sqrt(lam), loglam = log(lam), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double u = st_uniform(s) - 0.5, v = st_uniform(s), us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1)) return k;
    }
}

/* Stirling's series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2], for BTRS */
static double stirling_tail(double k) {
    static const double tail[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983, 0.02079067210376509,
                                  0.0166446911898211,  0.0138761288230707,  0.0118967099458917, 0.0104112652619720,
                                  0.00925546218271273, 0.00833056343336287};
    if (k < 10) return tail[(int)k];
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* Binomial(n, p) for p <= 1/2: geometric waiting times when n p < 10, Hormann's BTRS otherwise */
static double draw_binomial_low(stream *s, double n, double p) {
    if (n * p < 10.0) {
        double logq = log1p(-p), sum = 0, k = 0;
        for (;;) {
            sum += ceil(log(1.0 - st_uniform(s)) / logq);
            if (sum > n) return k;
            k += 1;
        }
    }
    const double sd = sqrt(n * p * (1 - p)), b = 1.15 + 2.53 * sd, a = -0.0873 + 0.0248 * b + 0.01 * p;
    const double c = n * p + 0.5, vr = 0.92 - 4.2 / b, r = p / (1 - p), alpha = (2.83 + 5.1 / b) * sd;
    const double m = floor((n + 1) * p);
    for (;;) {
        double u = st_uniform(s) - 0.5, v = st_uniform(s), us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + c);
        if (k < 0 || k > n) continue;
        if (us >= 0.07 && v <= vr) return k;
        v = log(v * alpha / (a / (us * us) + b));
        double bound = (m + 0.5) * log((m + 1) / (r * (n - m + 1))) + (n + 1) * log((n - m + 1) / (n - k + 1)) +
                       (k + 0.5) * log(r * (n - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(n - m) -
                       stirling_tail(k) - stirling_tail(n - k);
        if (v <= bound) return k;
    }
}

static double draw_binomial(stream *s, double n, double p) {
    if (n <= 0 || p <= 0) return 0.0;
    if (p >= 1) return n;
    return p <= 0.5 ? draw_binomial_low(s, n, p) : n - draw_binomial_low(s, n, 1.0 - p);
}

typedef struct {
    int kind;
    const double *a, *b;
    double *out;
    uint64_t seed, offset;
} param_job;

static void param_part(void *arg, int64_t e0, int64_t e1) {
    const param_job *j = arg;
    for (int64_t e = e0; e < e1; e++) {
        stream s = {.ctr = j->offset + (uint64_t)e, .seed = j->seed, .j = 0, .used = 2};
        double v;
        if (j->kind == PF_RAND_GAMMA) v = draw_gamma(&s, j->a[e]);
        else if (j->kind == PF_RAND_POISSON) v = draw_poisson(&s, j->a[e]);
        else v = draw_binomial(&s, j->a[e], j->b[e]);
        j->out[e] = v;
    }
}

int pf_random_param(int kind, const pf_tensor *a, const pf_tensor *b, pf_tensor *out, uint64_t seed,
                    uint64_t offset) {
    int rc;
    if ((rc = pf_check(a, "random: a")) || (rc = pf_check(out, "random: out"))) return rc;
    if (kind != PF_RAND_GAMMA && kind != PF_RAND_POISSON && kind != PF_RAND_BINOMIAL)
        return pf_error(PF_ERR_VALUE, "random_param: unknown kind %d (gamma, poisson or binomial)", kind);
    if (kind == PF_RAND_BINOMIAL && (rc = pf_check(b, "random: b"))) return rc;
    const pf_tensor *ts[3] = {a, kind == PF_RAND_BINOMIAL ? b : a, out};
    int64_t n = pf_numel(out);
    for (int i = 0; i < 3; i++) {
        if (ts[i]->dtype != PF_FLOAT64 || !pf_is_contiguous(ts[i]) || pf_numel(ts[i]) != n)
            return pf_error(PF_ERR_VALUE, "random_param: parameters and out must be contiguous float64 of %lld "
                                          "elements", (long long)n);
    }
    const double *A = a->data, *B = kind == PF_RAND_BINOMIAL ? b->data : NULL;
    for (int64_t e = 0; e < n; e++) { /* checked before any draw, so a bad parameter leaves out untouched */
        if (kind == PF_RAND_BINOMIAL) {
            if (!(A[e] >= 0) || !isfinite(A[e]) || A[e] != floor(A[e]) || !(B[e] >= 0 && B[e] <= 1))
                return pf_error(PF_ERR_VALUE, "binomial: count %g and prob %g at %lld; counts must be non-negative "
                                              "integers and probabilities in [0, 1]", A[e], B[e], (long long)e);
        } else if (!(A[e] >= 0) || !isfinite(A[e])) {
            return pf_error(PF_ERR_VALUE, "%s: parameter %g at %lld; it must be finite and non-negative",
                            kind == PF_RAND_GAMMA ? "gamma" : "poisson", A[e], (long long)e);
        }
    }
    param_job j = {kind, A, B, out->data, seed, offset};
    pf_parallel_range(pf_threads_for(n * 64), n, param_part, &j);
    return PF_OK;
}

/* ---- the reparameterised gamma gradient ---------------------------------------------- */

/* Ported from PyTorch's ATen/native/Distributions.h (standard_gamma_grad_one; BSD-3-Clause, THIRD_PARTY_NOTICES.md) */

double pf_digamma(double x); /* special.c */

/* d x / d alpha for x ~ Gamma(alpha, 1) held at its CDF value: -(dCDF/dalpha) / pdf, torch's three
 * regimes (a Taylor series for small x, Rice's saddle point for large alpha, a rational fit between) */
static double gamma_grad_one(double alpha, double x) {
    if (x < 0.8) {
        double numer = 1, denom = alpha, series1 = numer / denom, series2 = numer / (denom * denom);
        for (int i = 1; i <= 5; ++i) {
            numer *= -x / i;
            denom += 1;
            series1 += numer / denom;
            series2 += numer / (denom * denom);
        }
        double pow_x_alpha = pow(x, alpha), pdf = pow(x, alpha - 1) * exp(-x), cdf = pow_x_alpha * series1;
        double cdf_alpha = (log(x) - pf_digamma(alpha)) * cdf - pow_x_alpha * series2;
        double result = -cdf_alpha / pdf;
        return isnan(result) ? 0.0 : result;
    }
    if (alpha > 8.0) {
        if (0.9 * alpha <= x && x <= 1.1 * alpha) {
            double numer_1 = 1 + 24 * alpha * (1 + 12 * alpha);
            double numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha +
                             alpha * (107 + 3600 * x);
            double denom = 1244160 * (alpha * alpha) * (alpha * alpha);
            return numer_1 * numer_2 / denom;
        }
        double denom = sqrt(8 * alpha), term2 = denom / (alpha - x);
        double term3 = pow(x - alpha - alpha * log(x / alpha), -1.5);
        double term23 = x < alpha ? term2 - term3 : term2 + term3;
        double term1 = log(x / alpha) * term23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
        double stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
        return -stirling * x * term1 / denom;
    }
    static const double coef_uv[3][8] = {
        {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
        {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
         -0.00058392623},
        {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
         -1.5247877e-07},
    };
    double u = log(x / alpha), v = log(alpha), cv[8];
    for (int i = 0; i < 8; ++i) cv[i] = coef_uv[0][i] + u * (coef_uv[1][i] + u * coef_uv[2][i]);
    double p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3])), q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]));
    return exp(p / q);
}

typedef struct {
    const double *alpha, *x;
    double *out;
} ggrad_job;

static void ggrad_part(void *arg, int64_t e0, int64_t e1) {
    const ggrad_job *j = arg;
    for (int64_t e = e0; e < e1; e++) j->out[e] = gamma_grad_one(j->alpha[e], j->x[e]);
}

int pf_standard_gamma_grad(const pf_tensor *alpha, const pf_tensor *x, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(alpha, "alpha")) || (rc = pf_check(x, "x")) || (rc = pf_check(out, "out"))) return rc;
    int64_t n = pf_numel(out);
    const pf_tensor *ts[3] = {alpha, x, out};
    for (int i = 0; i < 3; i++)
        if (ts[i]->dtype != PF_FLOAT64 || !pf_is_contiguous(ts[i]) || pf_numel(ts[i]) != n)
            return pf_error(PF_ERR_VALUE, "standard_gamma_grad: alpha, x and out must be contiguous float64 of "
                                          "%lld elements", (long long)n);
    ggrad_job j = {alpha->data, x->data, out->data};
    pf_parallel_range(pf_threads_for(n * 16), n, ggrad_part, &j);
    return PF_OK;
}
