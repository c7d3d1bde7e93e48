/* Random fills from the counter-based Philox4x32-10 generator (Salmon et al., SC'11).
 *
 * Element i of dst (row-major, whatever its strides) is a function of the seed and its
 * counter offset + i alone. So the bits do not depend on the thread count or on how the
 * work is split, and a draw starting at offset k equals the tail of a longer draw from
 * offset 0: the Python side only has to advance the offset by numel after each call. */
#include <float.h>
#include <math.h>
#include "core.h"

/* Philox4x32-10 on PB consecutive counters at once: kept as arrays so the compiler turns
 * the rounds into SIMD multiplies (about 2x over one block at a time with SSE2 alone).
 * Word j of block blk0 + i lands in out[j][i]. */
#define PB 8
static void philox4x32_10(uint64_t blk0, uint64_t seed, uint32_t out[4][PB]) {
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

/* Largest float16 strictly below v (v finite). */
static uint16_t half_below(double v) {
    uint16_t h = pf_f2h((float)v);
    while ((double)pf_h2f(h) >= v) h = (h & 0x8000) ? h + 1 : (h == 0 ? 0x8001 : h - 1);
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
                    uint16_t h = pf_f2h((float)(g->lo + (double)(w[q % 4][q / 4] >> 8) * 0x1p-24 * g->span));
                    *(uint16_t *)(o + i * st) = (double)pf_h2f(h) < g->top ? h : g->top16;
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

/* Exact integer range of each dtype for randint bounds (floats: consecutive integers). */
static const double int_lo[PF_NUM_DTYPES] = {-0x1p24, -0x1p53, -0x1p11, -0x1p63, -0x1p31, 0};
static const double int_hi[PF_NUM_DTYPES] = {0x1p24, 0x1p53, 0x1p11, 0x1p63, 0x1p31, 2};
static const double float_max[3] = {FLT_MAX, DBL_MAX, 65504.0};

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
            g->top16 = pf_f2h((float)p0);
            break;
        }
        if (dt == PF_FLOAT64) g->top = nextafter(p1, -INFINITY);
        else if (dt == PF_FLOAT32) {
            float f = (float)p1;
            g->top = (double)f < p1 ? f : nextafterf(f, -INFINITY);
        } else {
            g->top16 = half_below(p1);
            g->top = pf_h2f(g->top16);
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

int pf_random(int kind, pf_tensor *dst, uint64_t seed, uint64_t offset, double p0, double p1) {
    int rc = pf_check(dst, "random: dst");
    if (rc != PF_OK) return rc;
    gen g;
    if ((rc = setup(kind, dst->dtype, p0, p1, &g)) != PF_OK) return rc;
    int64_t total = pf_numel(dst);
    const int64_t *st[1] = {dst->strides};
    size_t sizes[1] = {pf_dtype_size[dst->dtype]};
    int nt = pf_threads_for(total);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = 0, T = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        int64_t b, e;
        pf_split(total, t, T, &b, &e);
        pf_walk w;
        pf_walk_init(&w, dst->ndim, dst->shape, 1, st, sizes);
        pf_walk_seek(&w, b);
        while (b < e) {
            int64_t n = pf_walk_run(&w, e - b);
            char *p = (char *)dst->data + w.off[0];
            gen_run(&g, seed, offset + (uint64_t)b, p, w.inner[0], n);
            b += n;
            pf_walk_advance(&w, n);
        }
    }
    return PF_OK;
}
