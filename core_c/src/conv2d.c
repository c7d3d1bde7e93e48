/* conv2d: forward and both gradients in one C call each way.
 *
 * Where the CPU has AVX-512, float32 forwards (and stride-1 input gradients) take
 * conv_direct.c's kernels; on AVX2, float32 stride-1 layers on large planes take wide2's
 * kernels below, which read the padded planes in place. Everything else goes through tiles of
 * the unfold small enough to stay in L2, each multiplied straight into the output or the
 * gradients by a GEMM on the calling thread (pf_gemm_serial). */
#include <stdio.h>
#include "conv.h"

static size_t umax(size_t a, size_t b) { return a > b ? a : b; }
static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* A tile's unfold is kept near this size: with the weight and the output tile it stays in
 * the 1 MB L2 of the machine measured, where a whole-batch col (kh*kw times the input)
 * went to memory and back. */
#define TILE_BYTES (192 << 10)
#define DENSE_BYTES (4 << 20)
/* at most this much memory for the weight-gradient partials (MAX_BLOCKS in conv.h) */
#define PARTIAL_BYTES ((int64_t)8 << 20)
/* a backward item's block of the weight gradient is kept near this size */
#define GW_BLOCK_BYTES ((int64_t)256 << 10)

/* Stride 1 takes "wide" positions: over a zero-padded copy of the input (pitch Wp), output
 * (oh, ow) reads xp[(oh + ki*dh)*Wp + ow + kj*dw], so with q = oh*Wp + ow a kernel tap's row
 * of the unfold is one run of xp shifted by the tap: a memcpy, no bounds. The Wp - OW
 * columns past each output row are computed and dropped (7-14% more multiply-adds on the
 * small images measured, against an unfold that cost a third of the time). Other strides
 * unfold each output row's run with its bounds solved per tap. */
#define DEFINE_TILES(T)                                                                                              \
    PF_VEC_CLONES static void im2col_tile_##T(const T *xn, int64_t xsc, int64_t nc, T *col, int64_t ld, int64_t p0,  \
                                              int64_t lt, const conv_geom *g) {                                      \
        const int64_t OW = g->OW, e = p0 + lt;                                                                       \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t ki = 0; ki < g->kh; ki++)                                                                   \
                for (int64_t kj = 0; kj < g->kw; kj++) {                                                             \
                    const T *xp = xn + c * xsc;                                                                      \
                    T *row = col + ((c * g->kh + ki) * g->kw + kj) * ld - p0; /* row[p], p in tile */                \
                    int64_t lo, hi, base = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;                              \
                    pf_valid_range(base, g->sw, g->W, OW, &lo, &hi);                                                 \
                    for (int64_t p = p0; p < e;) {                                                                   \
                        int64_t oh = p / OW, r0 = oh * OW, ow0 = p - r0;                                             \
                        int64_t ow1 = OW < e - r0 ? OW : e - r0, ih = oh * g->sh + dy;                               \
                        T *o = row + r0;                                                                             \
                        p = r0 + ow1;                                                                                \
                        if (ih < 0 || ih >= g->H) {                                                                  \
                            for (int64_t ow = ow0; ow < ow1; ow++) o[ow] = 0;                                        \
                            continue;                                                                                \
                        }                                                                                            \
                        int64_t a = lo < ow0 ? ow0 : lo > ow1 ? ow1 : lo;                                            \
                        int64_t b = hi < a ? a : hi > ow1 ? ow1 : hi;                                                \
                        const T *in = xp + ih * g->xsh + (a * g->sw + base) * g->xsw;                                \
                        int64_t step = g->sw * g->xsw;                                                               \
                        for (int64_t ow = ow0; ow < a; ow++) o[ow] = 0;                                              \
                        for (int64_t k = 0; k < b - a; k++) o[a + k] = in[k * step];                                 \
                        for (int64_t ow = b; ow < ow1; ow++) o[ow] = 0;                                              \
                    }                                                                                                \
                }                                                                                                    \
    }                                                                                                                \
    /* The reverse: col [nc*kh*kw, lt] (rows ld apart) added into contiguous planes gxn [nc, H, W]. */                               \
    PF_VEC_CLONES static void col2im_tile_##T(const T *col, int64_t ld, T *gxn, int64_t nc, int64_t p0, int64_t lt,  \
                                              const conv_geom *g) {                                                  \
        const int64_t OW = g->OW, e = p0 + lt, H = g->H, W = g->W;                                                   \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t ki = 0; ki < g->kh; ki++)                                                                   \
                for (int64_t kj = 0; kj < g->kw; kj++) {                                                             \
                    T *xp = gxn + c * H * W;                                                                         \
                    const T *row = col + ((c * g->kh + ki) * g->kw + kj) * ld - p0;                                  \
                    int64_t lo, hi, base = kj * g->dw - g->pw, dy = ki * g->dh - g->ph;                              \
                    pf_valid_range(base, g->sw, W, OW, &lo, &hi);                                                    \
                    for (int64_t p = p0; p < e;) {                                                                   \
                        int64_t oh = p / OW, r0 = oh * OW, ow0 = p - r0;                                             \
                        int64_t ow1 = OW < e - r0 ? OW : e - r0, ih = oh * g->sh + dy;                               \
                        p = r0 + ow1;                                                                                \
                        if (ih < 0 || ih >= H) continue;                                                             \
                        int64_t a = lo < ow0 ? ow0 : lo > ow1 ? ow1 : lo;                                            \
                        int64_t b = hi < a ? a : hi > ow1 ? ow1 : hi;                                                \
                        const T *cr = row + r0 + a;                                                                  \
                        T *out = xp + ih * W + a * g->sw + base;                                                     \
                        for (int64_t k = 0; k < b - a; k++) out[k * g->sw] += cr[k];                                 \
                    }                                                                                                \
                }                                                                                                    \
    }                                                                                                                \
    /* planes [nc, psz] = x's channels [0, nc) (channel stride xsc) inside a zero border: rows of Wp, the          \
     * zeros after row h's values also row h + 1's left border (see plane_size) */                                   \
    PF_VEC_CLONES static void pad_planes_##T(const T *xn, int64_t xsc, int64_t nc, T *xp, const conv_geom *g,        \
                                             int64_t psz, int64_t Wp) {                                              \
        for (int64_t c = 0; c < nc; c++) {                                                                           \
            T *d = xp + c * psz;                                                                                     \
            const T *src = xn + c * xsc;                                                                             \
            for (int64_t i = 0; i < g->ph * Wp; i++) d[i] = 0;                                                       \
            for (int64_t i = (g->ph + g->H) * Wp; i < psz; i++) d[i] = 0;                                            \
            for (int64_t h = 0; h < g->H; h++) {                                                                     \
                T *r = d + (h + g->ph) * Wp;                                                                         \
                const T *sr = src + h * g->xsh;                                                                      \
                for (int64_t w = 0; w < g->pw; w++) r[w] = 0;                                                        \
                if (g->xsw == 1)                                                                                     \
                    for (int64_t w = 0; w < g->W; w++) r[g->pw + w] = sr[w];                                         \
                else                                                                                                 \
                    for (int64_t w = 0; w < g->W; w++) r[g->pw + w] = sr[w * g->xsw];                                \
                for (int64_t w = g->pw + g->W; w < Wp; w++) r[w] = 0;                                                \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
    static void wide_cols_##T(const T *xp, int64_t nc, int64_t psz, int64_t Wp, T *col, int64_t ld, int64_t q0,      \
                              int64_t lq, const conv_geom *g) {                                                      \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t ki = 0; ki < g->kh; ki++)                                                                   \
                for (int64_t kj = 0; kj < g->kw; kj++)                                                               \
                    memcpy(col + ((c * g->kh + ki) * g->kw + kj) * ld,                                               \
                           xp + c * psz + q0 + ki * g->dh * Wp + kj * g->dw, (size_t)lq * sizeof(T));                \
    }                                                                                                                \
    PF_VEC_CLONES static void wide_fold_##T(const T *col, T *gxp, int64_t nc, int64_t psz, int64_t Wp,               \
                                            int64_t q0, int64_t lq, const conv_geom *g) {                            \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t ki = 0; ki < g->kh; ki++)                                                                   \
                for (int64_t kj = 0; kj < g->kw; kj++) {                                                             \
                    const T *s = col + ((c * g->kh + ki) * g->kw + kj) * lq;                                         \
                    T *d = gxp + c * psz + q0 + ki * g->dh * Wp + kj * g->dw;                                        \
                    for (int64_t i = 0; i < lq; i++) d[i] += s[i];                                                   \
                }                                                                                                    \
    }                                                                                                                \
    /* wide tile ct [og, lq] (rows ld apart) -> out [og, OH*OW] (+ bias), dropping the columns past OW */            \
    PF_VEC_CLONES static void wide_store_##T(const T *ct, int64_t ld, int64_t og, int64_t lq, int64_t q0, T *out,    \
                                             int64_t L, const T *bias, int64_t bs, const conv_geom *g, int64_t Wp) { \
        for (int64_t o = 0; o < og; o++) {                                                                           \
            T b = bias ? bias[o * bs] : 0;                                                                           \
            for (int64_t oh = q0 / Wp; oh * Wp < q0 + lq; oh++) {                                                    \
                int64_t a = q0 - oh * Wp > 0 ? q0 - oh * Wp : 0;                                                     \
                int64_t e = q0 + lq - oh * Wp < g->OW ? q0 + lq - oh * Wp : g->OW;                                   \
                const T *s = ct + o * ld + oh * Wp - q0;                                                             \
                T *d = out + o * L + oh * g->OW;                                                                     \
                for (int64_t ow = a; ow < e; ow++) d[ow] = s[ow] + b;                                                \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
    /* gy [og, OH*OW] -> wide gyq [og, Lq], zeros in the dropped columns */                                          \
    PF_VEC_CLONES static void wide_expand_##T(const T *gy, int64_t og, int64_t L, T *gyq, int64_t Lq,                \
                                              const conv_geom *g, int64_t Wp) {                                      \
        for (int64_t o = 0; o < og; o++)                                                                             \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                                                 \
                const T *s = gy + o * L + oh * g->OW;                                                                \
                T *d = gyq + o * Lq + oh * Wp;                                                                       \
                for (int64_t ow = 0; ow < g->OW; ow++) d[ow] = s[ow];                                                \
                for (int64_t ow = g->OW; ow < Wp && oh * Wp + ow < Lq; ow++) d[ow] = 0;                              \
            }                                                                                                        \
    }                                                                                                                \
    /* gx planes [nc, H, W] = the interior of padded gradient planes [nc, psz] */                                    \
    PF_VEC_CLONES static void unpad_planes_##T(const T *gxp, int64_t nc, T *gx, const conv_geom *g, int64_t psz,     \
                                               int64_t Wp) {                                                         \
        for (int64_t c = 0; c < nc; c++)                                                                             \
            for (int64_t h = 0; h < g->H; h++) {                                                                     \
                const T *s = gxp + c * psz + (h + g->ph) * Wp + g->pw;                                               \
                T *d = gx + (c * g->H + h) * g->W;                                                                   \
                for (int64_t w = 0; w < g->W; w++) d[w] = s[w];                                                      \
            }                                                                                                        \
    }
DEFINE_TILES(float)
DEFINE_TILES(double)

/* Dense tiles run over the batch's positions n*L + p, so a tile may hold the ends of several
 * samples: small images (7x7, 4x4) fill whole GEMM panels instead of a part-empty last one.
 * Each sample's run of a tile is unfolded, and its outputs stored or its gradient gathered. */
#define DEFINE_DENSE(T)                                                                                 \
    /* out[o*L + i] = ct[o*ld + i] (+ bias[o]) for o < og, i < n */                                    \
    PF_VEC_CLONES static void dense_store_##T(const T *ct, int64_t ld, T *out, int64_t L, int64_t og,   \
                                              int64_t n, const T *bias, int64_t bs) {                   \
        for (int64_t o = 0; o < og; o++) {                                                              \
            T b = bias ? bias[o * bs] : 0;                                                              \
            for (int64_t i = 0; i < n; i++) out[o * L + i] = ct[o * ld + i] + b;                        \
        }                                                                                               \
    }                                                                                                   \
    PF_VEC_CLONES static void dense_gather_##T(const T *gy, int64_t L, T *gt, int64_t ld, int64_t og,   \
                                               int64_t n) {                                             \
        for (int64_t o = 0; o < og; o++)                                                                \
            for (int64_t i = 0; i < n; i++) gt[o * ld + i] = gy[o * L + i];                             \
    }
DEFINE_DENSE(float)
DEFINE_DENSE(double)

#define DISPATCH(j, name, ...) \
    ((j)->dt == PF_FLOAT32 ? name##_float(__VA_ARGS__) : name##_double(__VA_ARGS__))
#define F(T, p) ((T *)(p))


/* col rows [nc*kk, lt] (ld apart) = channels [0, nc) of sample plane set xn over positions [p0, p0 + lt) */
static void unfold_tile(const conv_job *j, const char *xn, int64_t nc, char *col, int64_t ld, int64_t p0, int64_t lt) {
    if (j->tab)
        pf_conv_tab_unfold(j, xn, nc, col, ld, p0, lt);
    else
        DISPATCH(j, im2col_tile, F(const void, xn), j->xsc, nc, F(void, col), ld, p0, lt, &j->g);
}

/* the reverse, added into contiguous planes gxn [nc, H, W] */
static void fold_tile(const conv_job *j, const char *col, int64_t ld, char *gxn, int64_t nc, int64_t p0, int64_t lt) {
    if (j->tabg)
        pf_conv_tab_fold(j, col, ld, gxn, nc, p0, lt);
    else
        DISPATCH(j, col2im_tile, F(const void, col), ld, F(void, gxn), nc, p0, lt, &j->g);
}

static void fill_row(const conv_job *j, char *dst, int64_t n, double v) {
    if (j->dt == PF_FLOAT32)
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)v;
    else
        for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = v;
}

/* Elements per padded plane of the wide path: Hp rows of Wp, then room for the last row's
 * right border. Rows share their zero columns: a window hanging off row h's right edge reads
 * row h + 1's left border, so a row needs max(left, right) zeros, not both (a 'same' 3x3 on a
 * 16x16 plane computes 17 positions per output row, not 18: 6% of the multiply-adds). */
static int64_t plane_size(const conv_job *j) { return j->Hp * j->Wp + j->g.pw; }

/* x's planes for channels [c0, c0 + nc) of sample n as the wide path reads them: a
 * padded copy in buf, or x itself when it already is one (no padding, contiguous rows). */
static const char *wide_source(const conv_job *j, int64_t n, int64_t c0, int64_t nc, char *buf, int64_t *psz) {
    const char *xn = j->x + (n * j->xsn + c0 * j->xsc) * j->es;
    if (!j->padded) {
        *psz = j->xsc;
        return xn;
    }
    *psz = plane_size(j);
    if (j->dt == PF_FLOAT32) pad_planes_float(F(const float, xn), j->xsc, nc, F(float, buf), &j->g, *psz, j->Wp);
    else pad_planes_double(F(const double, xn), j->xsc, nc, F(double, buf), &j->g, *psz, j->Wp);
    return buf;
}


/* A tile's product: over the weight's pack `part` when the call packed it, else packing per tile. */
static void tile_gemm(conv_job *j, const pf_gemm_prob *p, int64_t part, char *gws) {
    if (!j->wpk) {
        pf_gemm_serial(j->dt, p, gws);
        return;
    }
    if (pf_gemm_serial_packed(j->dt, p, j->wpk + (size_t)part * j->wpk_each, gws))
        __atomic_store_n(&j->err, 1, __ATOMIC_RELAXED);
}

/* part i of the weight as the forward's A (group i / msub, its block of rows i % msub: [<= mrows, R]) or grad_x's (group i / nsub, its
 * block of channels i % nsub transposed: [ns*kk, og]) */
static void weight_part(const conv_job *j, int back, int64_t i, const char **a, int64_t *m, int64_t *k, int64_t *rsa,
                        int64_t *csa) {
    if (!back) {
        int64_t r0 = i % j->msub * j->mrows;
        *a = j->w + (i / j->msub * j->og + r0) * j->R * j->es, *m = j->og - r0 < j->mrows ? j->og - r0 : j->mrows;
        *k = j->R, *rsa = j->R, *csa = 1;
        return;
    }
    int64_t gi = i / j->nsub, s0 = i % j->nsub * j->csub, ns = j->cg - s0 < j->csub ? j->cg - s0 : j->csub;
    *a = j->w + (gi * j->og * j->R + s0 * j->kk) * j->es, *m = ns * j->kk, *k = j->og, *rsa = 1, *csa = j->R;
}

typedef struct {
    conv_job *j;
    int back;
    int64_t pieces; /* per part */
} pack_job;

/* items: (part, piece of its rows), so that one part (a group's whole weight) is packed by the team */
static void pack_parts(void *arg, int64_t i0, int64_t i1) {
    pack_job *pj = arg;
    for (int64_t i = i0; i < i1; i++) {
        const char *a;
        int64_t m, k, rsa, csa, part = i / pj->pieces;
        weight_part(pj->j, pj->back, part, &a, &m, &k, &rsa, &csa);
        if (pf_gemm_pack_a_piece(pj->j->dt, m, k, a, rsa, csa, pj->j->wpk + (size_t)part * pj->j->wpk_each,
                                 pj->j->wpk_each, i % pj->pieces, pj->pieces))
            __atomic_store_n(&pj->j->err, 1, __ATOMIC_RELAXED);
    }
}

/* The weight packed once for all tiles (parts: see weight_part), when the tiles' GEMMs (`uses`
 * of each part, the first `p`) would otherwise each pack it again: a 512 x 4608 weight repacked
 * per tile of 224 positions cost about a tenth of a late ResNet layer's time. Returns PF_OK with
 * j->wpk NULL when it does not pay. */
static int pack_weight(conv_job *j, int back, int64_t parts, int64_t uses, const pf_gemm_prob *p) {
    if (uses < 2 || !pf_gemm_packs_a(j->dt, p)) return PF_OK;
    j->wpk_each = (pf_gemm_pack_bytes(j->dt, p->M, p->K) + 63) & ~(size_t)63;
    if (!(j->wpk = pf_alloc((size_t)parts * j->wpk_each)))
        return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the packed weight (%zu bytes)", parts * j->wpk_each);
    /* pieces of at least 48 rows, at most 8 per part (a 512 x 4608 weight was packed by one thread) */
    pack_job pj = {j, back, p->M / 48 < 1 ? 1 : p->M / 48 > 8 ? 8 : p->M / 48};
    pf_parallel_range(pf_threads_for(parts * p->M * p->K), parts * pj.pieces, pack_parts, &pj);
    if (j->err) {
        pf_free(j->wpk);
        j->wpk = NULL;
        return pf_error(PF_ERR_VALUE, "conv2d: packing the weight failed");
    }
    return PF_OK;
}

/* Row pitch of a dense forward tile's product: 64 bytes past the tile, so that rows of a power-of-two
 * tile (256 positions: 1 KB apart) do not share cache sets (a stride-2 512-channel layer at batch 32
 * was 9% slower in two tiles of 256 than in tiles of 448 and 64) */
static int64_t dense_ldc(const conv_job *j) { return j->lt + 64 / j->es; }

/* Row pitch of a wide forward tile's unfold, which the GEMM reads in place as B when the layer has
 * at most 64 output channels: 64 bytes past the tile, so that a micro-kernel's K rows (512 bytes apart
 * for tiles of 128 positions) do not crowd 8 of L1's 64 sets (CIFAR ResNet's 64-channel 32x32 layers) */
static int64_t wide_ld(const conv_job *j) { return j->lt + 64 / j->es; }

#ifdef HAVE_DIRECT
/* The implicit forward of one dense tile (positions P0 .. P0 + lt of the batch), group gi and
 * its block of rows (pack `part`): no unfold; per K block of the pack, its B panels gathered
 * from x, then multiplied into ct [rows, lt]. offs: the tile's absolute offsets into x per tap, made by tile_offsets. */
static void implicit_tile(conv_job *j, int64_t gi, int64_t part, int64_t lt, const int32_t *offs, char *bp, char *ct,
                          int64_t ldc) {
    const char *pk = j->wpk + (size_t)part * j->wpk_each;
    const float *xg = (const float *)j->x + gi * j->cg * j->xsc;
    int64_t ltp = (lt + j->pnr - 1) / j->pnr * j->pnr;
    for (int64_t pc = 0; pc < j->R; pc += j->pkc) {
        int64_t kcur = j->R - pc < j->pkc ? j->R - pc : j->pkc;
        pf_conv_pack_b(xg, j->xsc, j->kk, offs, ltp, pc, kcur, j->pnr, (float *)bp);
        if (pf_gemm_packed_block(j->dt, pk, pc, kcur, bp, lt, ct, ldc, pc > 0))
            __atomic_store_n(&j->err, 1, __ATOMIC_RELAXED);
    }
}
#endif

/* offs [kk, ltp]: where tap t of tile lane i reads x (sample and position from the tap table),
 * -1 for padding and for the lanes past lt */
static void tile_offsets(const conv_job *j, int64_t P0, int64_t lt, int64_t ltp, int32_t *offs) {
    for (int64_t t = 0; t < j->kk; t++)
        for (int64_t i = 0; i < ltp; i++) {
            int64_t P = P0 + i, o = i < lt ? j->tab[t * j->L + P % j->L] : -1;
            offs[t * ltp + i] = o < 0 ? -1 : (int32_t)(P / j->L * j->xsn + o);
        }
}

static void conv_forward_thread(void *arg, int t, int T) {
    conv_job *j = arg;
    const int64_t es = j->es, L = j->L, R = j->R, pos = j->wide ? j->Lq : L;
    char *base = j->ws + (size_t)t * j->ws_each, *col = base + j->off_col, *gws = base + j->off_gemm;
    char *ct = base + j->off_ct;
    int64_t i0, i1, have = -1, psz = 0;
    const char *src = NULL;
    if (j->dense) { /* items: (tile, group, block of rows), tile-major so a thread's items share unfolds */
        int64_t per = j->G * j->msub, have_t = -1, have_g = -1, ldc = dense_ldc(j);
        pf_split(j->ntiles * per, t, T, &i0, &i1);
        for (int64_t it = i0; it < i1; it++) {
            int64_t tile = it / per, gi = it % per / j->msub, r0 = it % j->msub * j->mrows;
            int64_t m = j->og - r0 < j->mrows ? j->og - r0 : j->mrows;
            int64_t P0 = tile * j->lt, lt = j->N * L - P0 < j->lt ? j->N * L - P0 : j->lt;
            int32_t *offs = (int32_t *)(base + j->off_offs);
            if (j->implicit && tile != have_t) tile_offsets(j, P0, lt, (lt + j->pnr - 1) / j->pnr * j->pnr, offs);
#ifdef HAVE_DIRECT
            if (j->implicit) implicit_tile(j, gi, it % per, lt, offs, col, ct, ldc);
#endif
            for (int64_t P = P0; P < P0 + lt && !j->implicit && (tile != have_t || gi != have_g);) {
                int64_t n = P / L, p = P % L, seg = L - p < P0 + lt - P ? L - p : P0 + lt - P; /* each sample's run */
                unfold_tile(j, j->x + (n * j->xsn + gi * j->cg * j->xsc) * es, j->cg, col + (P - P0) * es, lt, p, seg);
                P += seg;
            }
            have_t = tile, have_g = gi;
            pf_gemm_prob p = {m, lt, R, j->w + (gi * j->og + r0) * R * es, col, ct, R, 1, lt, 1, ldc, 1, 0};
            if (!j->implicit) tile_gemm(j, &p, it % per, gws);
            const char *bias = j->bias ? j->bias + (gi * j->og + r0) * j->bs * es : NULL;
            for (int64_t P = P0; P < P0 + lt;) {
                int64_t n = P / L, q = P % L, seg = L - q < P0 + lt - P ? L - q : P0 + lt - P;
                DISPATCH(j, dense_store, F(const void, ct + (P - P0) * es), ldc,
                         F(void, j->out + ((n * j->O + gi * j->og + r0) * L + q) * es), L, m, seg, F(const void, bias),
                         j->bs);
                P += seg;
            }
        }
        return;
    }
    pf_split(j->N * j->ntiles, t, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t n = it / j->ntiles, p0 = it % j->ntiles * j->lt, lt = pos - p0 < j->lt ? pos - p0 : j->lt;
        if (j->wide && n != have) src = wide_source(j, n, 0, j->C, base, &psz), have = n;
        for (int64_t gi = 0; gi < j->G; gi++) {
            char *c = j->out + ((n * j->O + gi * j->og) * L + p0) * es;
            const char *bias = j->bias ? j->bias + gi * j->og * j->bs * es : NULL;
            pf_gemm_prob p = {j->og, lt, R, j->w + gi * j->og * R * es, col, c, R, 1, lt, 1, L, 1, bias != NULL};
            if (j->wide) {
                DISPATCH(j, wide_cols, F(const void, src + gi * j->cg * psz * es), j->cg, psz, j->Wp, F(void, col),
                         wide_ld(j), p0, lt, &j->g);
                p.C = ct, p.rsc = lt, p.acc = 0, p.rsb = wide_ld(j);
                tile_gemm(j, &p, gi, gws);
                DISPATCH(j, wide_store, F(const void, ct), lt, j->og, lt, p0,
                         F(void, j->out + (n * j->O + gi * j->og) * L * es), L, F(const void, bias), j->bs, &j->g,
                         j->Wp);
                continue;
            }
            unfold_tile(j, j->x + (n * j->xsn + gi * j->cg * j->xsc) * es, j->cg, col, lt, p0, lt);
            if (bias) /* the GEMM adds onto the bias */
                for (int64_t o = 0; o < j->og; o++) fill_row(j, c + o * L * es, lt, pf_load_f64(bias + o * j->bs * es, j->dt));
            tile_gemm(j, &p, gi, gws);
        }
    }
}

#ifdef HAVE_DIRECT
static int wgrad_takes(const conv_job *j);
static int wgt_takes(const conv_job *j);
static void phase_planes(const float *xn, int64_t xsc, int64_t nc, float *pl, const conv_geom *g, int64_t hq,
                         int64_t wq);
static void wgt_sample(const conv_job *j, const float *pl, int64_t psz, int64_t ns, const float *gyt, float *gwt,
                       int acc);
static void wgt_flush(const conv_job *j, const float *gwt, int64_t nk, float *gw, int64_t ldw);
static void expand_rows_t(void *arg, int64_t i0, int64_t i1);
static void wgrad_sample(const conv_job *j, const float *pl, int64_t psz, int64_t ns, const float *gy, int64_t gys,
                         float *gw, int64_t ldw, int acc);
#endif

static void conv_backward_thread(void *arg, int t, int T) {
    conv_job *j = arg;
    const int64_t es = j->es, L = j->L, R = j->R, kk = j->kk, HW = j->g.H * j->g.W;
    const int64_t pos = j->wide ? j->Lq : L;
    char *base = j->ws + (size_t)t * j->ws_each, *col = base + j->off_col, *gws = base + j->off_gemm;
    char *gxp = base + j->off_gxp;
    int64_t i0, i1;
    pf_split(j->nblk * j->G * j->nsub, t, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t sb = it / (j->G * j->nsub), gi = it / j->nsub % j->G, sub = it % j->nsub;
        int64_t s0 = sub * j->csub, ns = j->cg - s0 < j->csub ? j->cg - s0 : j->csub, c0 = gi * j->cg + s0;
        int64_t n0, n1;
        pf_split(j->N, (int)sb, (int)j->nblk, &n0, &n1);
        if (j->dense) {
            char *gt = base + j->off_ct, *gw = j->gw ? j->gw + ((sb * j->O + gi * j->og) * R + s0 * kk) * es : NULL;
            for (int64_t n = n0; n < n1 && j->gx; n++) memset(j->gx + (n * j->C + c0) * HW * es, 0, (size_t)(ns * HW * es));
            for (int64_t P0 = n0 * L; P0 < n1 * L; P0 += j->lt) {
                int64_t lt = n1 * L - P0 < j->lt ? n1 * L - P0 : j->lt;
                for (int64_t P = P0; P < P0 + lt;) { /* the tile's gradient rows, and its unfold */
                    int64_t n = P / L, p = P % L, seg = L - p < P0 + lt - P ? L - p : P0 + lt - P;
                    DISPATCH(j, dense_gather, F(const void, j->gy + ((n * j->O + gi * j->og) * L + p) * es), L,
                             F(void, gt + (P - P0) * es), lt, j->og, seg);
                    if (gw)
                        unfold_tile(j, j->x + (n * j->xsn + c0 * j->xsc) * es, ns, col + (P - P0) * es, lt, p, seg);
                    P += seg;
                }
                if (gw) { /* gw[og, s0*kk:] += g [og, lt] @ col^T [lt, ns*kk] */
                    pf_gemm_prob p = {j->og, ns * kk, lt, gt, col, gw, lt, 1, 1, lt, R, 1, P0 > n0 * L};
                    pf_gemm_serial(j->dt, &p, gws);
                }
                if (j->gx) { /* col [ns*kk, lt] = w^T [ns*kk, og] @ g [og, lt], folded run by run */
                    pf_gemm_prob p = {ns * kk, lt, j->og, j->w + (gi * j->og * R + s0 * kk) * es, gt, col,
                                      1, R, lt, 1, lt, 1, 0};
                    tile_gemm(j, &p, gi * j->nsub + sub, gws);
                    for (int64_t P = P0; P < P0 + lt;) {
                        int64_t n = P / L, p = P % L, seg = L - p < P0 + lt - P ? L - p : P0 + lt - P;
                        fold_tile(j, col + (P - P0) * es, lt, j->gx + (n * j->C + c0) * HW * es, ns, p, seg);
                        P += seg;
                    }
                }
            }
            continue;
        }
        for (int64_t n = n0; n < n1; n++) {
            char *gxn = j->gx ? j->gx + (n * j->C + c0) * HW * es : NULL;
            const char *gyn = j->gy + (n * j->O + gi * j->og) * L * es, *src = NULL;
            int64_t psz = 0, gys = L; /* gradient rows: [og, pos] at gys apart */
            /* where the wide path folds the input gradient: padded planes, or gx itself */
            char *fold = !gxn ? NULL : j->wide && j->padded ? gxp : gxn;
            if (j->wide) {
                if (j->gw) src = wide_source(j, n, c0, ns, base, &psz);
                gyn = j->gyq + (n * j->O + gi * j->og) * j->Lq * es, gys = j->Lq;
            }
#ifdef HAVE_DIRECT
            if (j->hq && j->gw) { /* wgt of a strided layer: the phase planes of channels [c0, c0 + ns) */
                psz = j->g.sh * j->g.sw * j->hq * j->Wp;
                src = base + j->off_gwt + align64((size_t)(j->csub * j->kk * j->ogp) * sizeof(float));
                phase_planes((const float *)j->x + n * j->xsn + c0 * j->xsc, j->xsc, ns, (float *)src, &j->g, j->hq,
                             j->Wp);
            }
#endif
            if (fold) memset(fold, 0, (size_t)(ns * (j->wide && j->padded ? plane_size(j) : HW) * es));
            int gw_done = 0;
#ifdef HAVE_DIRECT
            if (j->gw && j->gyqt) {
                float *gwt = (float *)(base + j->off_gwt);
                wgt_sample(j, (const float *)src, psz, ns, j->gyqt + (n * j->G + gi) * j->ogp * j->Lq, gwt, n > n0);
                if (n == n1 - 1)
                    wgt_flush(j, gwt, ns * kk, (float *)j->gw + (sb * j->O + gi * j->og) * R + s0 * kk, R);
                gw_done = 1;
            } else if (j->gw && wgrad_takes(j)) {
                wgrad_sample(j, (const float *)src, psz, ns, (const float *)gyn, gys,
                             (float *)j->gw + (sb * j->O + gi * j->og) * R + s0 * kk, R, n > n0);
                gw_done = 1;
            }
#endif
            for (int64_t p0 = 0; p0 < pos && (fold || !gw_done); p0 += j->lt) {
                int64_t lt = pos - p0 < j->lt ? pos - p0 : j->lt;
                const char *gyt = gyn + p0 * es;
                if (j->gw && !gw_done) { /* gw[og, s0*kk:] += gy [og, lt] @ col^T [lt, ns*kk] */
                    pf_gemm_prob p = {j->og, ns * kk, lt, gyt, col, j->gw + ((sb * j->O + gi * j->og) * R + s0 * kk) * es,
                                      gys, 1, 1, lt, R, 1, n > n0 || p0 > 0};
#ifdef HAVE_DIRECT
                    if (j->cols_t) /* col^T built directly, so the GEMM reads it unpacked */
                        pf_conv_cols_t(j, (const float *)src, ns, psz, (float *)col, p0, lt), p.rsb = ns * kk, p.csb = 1;
                    else
#endif
                    if (j->wide)
                        DISPATCH(j, wide_cols, F(const void, src), ns, psz, j->Wp, F(void, col), lt, p0, lt, &j->g);
                    else
                        unfold_tile(j, j->x + (n * j->xsn + c0 * j->xsc) * es, ns, col, lt, p0, lt);
                    pf_gemm_serial(j->dt, &p, gws);
                }
                if (fold) { /* col [ns*kk, lt] = w^T [ns*kk, og] @ gy [og, lt], folded into gx */
                    pf_gemm_prob p = {ns * kk, lt, j->og, j->w + (gi * j->og * R + s0 * kk) * es, gyt, col,
                                      1, R, gys, 1, lt, 1, 0};
                    tile_gemm(j, &p, gi * j->nsub + sub, gws);
                    if (j->wide)
                        DISPATCH(j, wide_fold, F(const void, col), F(void, fold), ns,
                                 j->padded ? plane_size(j) : HW, j->Wp, p0, lt, &j->g);
                    else
                        fold_tile(j, col, lt, fold, ns, p0, lt);
                }
            }
            if (fold && fold != gxn)
                DISPATCH(j, unpad_planes, F(const void, fold), ns, F(void, gxn), &j->g, plane_size(j), j->Wp);
        }
    }
}


/* Checks what both entries share and fills the job's geometry; w must be contiguous. */
static int conv_setup(const char *fn, const pf_tensor *x, const pf_tensor *w, int sh, int sw, int ph, int pw,
                      int dh, int dw, int groups, conv_job *j) {
    char a[128], b[128];
    int rc;
    if ((rc = pf_check(x, "conv2d: x")) != PF_OK || (rc = pf_check(w, "conv2d: weight")) != PF_OK) return rc;
    if (x->ndim != 4 || w->ndim != 4)
        return pf_error(PF_ERR_VALUE, "%s: x [N, C, H, W] and weight [O, C/groups, KH, KW] must be 4-d, got %s and %s",
                        fn, pf_shape_str(x, a), pf_shape_str(w, b));
    if (x->dtype != w->dtype || (x->dtype != PF_FLOAT32 && x->dtype != PF_FLOAT64))
        return pf_error(PF_ERR_TYPE, "%s: x and weight must both be float32 or both float64, got %s and %s", fn,
                        pf_dtype_name[x->dtype], pf_dtype_name[w->dtype]);
    if (!pf_is_contiguous(w)) return pf_error(PF_ERR_VALUE, "%s: weight must be contiguous", fn);
    int64_t N = x->shape[0], C = x->shape[1], O = w->shape[0], kh = w->shape[2], kw = w->shape[3];
    if (groups < 1 || C % groups || O % groups || w->shape[1] * groups != C)
        return pf_error(PF_ERR_VALUE,
                        "%s: groups=%d must divide both the %lld input and %lld output channels, and weight %s "
                        "must have C/groups input channels",
                        fn, groups, (long long)C, (long long)O, pf_shape_str(w, a));
    if (kh < 1 || kw < 1 || kh > INT32_MAX || kw > INT32_MAX)
        return pf_error(PF_ERR_VALUE, "%s: kernel %s must have sizes in [1, 2^31)", fn, pf_shape_str(w, a));
    /* the geometry checks of im2col, against a col of the shape it needs */
    pf_tensor col = {.dtype = x->dtype, .ndim = 3, .data = x->data};
    int64_t nh = x->shape[2] + 2 * (int64_t)ph - (int64_t)dh * (kh - 1) - 1;
    int64_t nw = x->shape[3] + 2 * (int64_t)pw - (int64_t)dw * (kw - 1) - 1;
    col.shape[0] = N, col.shape[1] = C * kh * kw;
    col.shape[2] = nh >= 0 && nw >= 0 && sh > 0 && sw > 0 ? (nh / sh + 1) * (nw / sw + 1) : 0;
    col.strides[0] = col.strides[1] = col.strides[2] = 1;
    if ((rc = pf_conv_geometry(fn, x, &col, (int)kh, (int)kw, sh, sw, ph, pw, dh, dw, &j->g)) != PF_OK) return rc;
    j->dt = x->dtype, j->es = (int64_t)pf_dtype_size[x->dtype];
    j->N = N, j->C = C, j->O = O, j->G = groups, j->cg = C / groups, j->og = O / groups;
    j->kk = kh * kw, j->R = j->cg * j->kk, j->L = j->g.OH * j->g.OW;
    j->x = x->data, j->w = w->data, j->xsn = x->strides[0], j->xsc = x->strides[1];
    j->wide = sh == 1 && sw == 1;
    j->padded = ph || pw || j->g.xsw != 1 || j->g.xsh != j->g.W;
    /* (plane_size: rows share their zero columns; padding wider than the kernel: rows as long as the output's) */
    j->Hp = j->g.H + 2 * (int64_t)ph, j->Wp = j->g.W + pw > j->g.OW ? j->g.W + pw : j->g.OW;
    j->Lq = j->L ? (j->g.OH - 1) * j->Wp + j->g.OW : 0;
    return PF_OK;
}

/* a contiguous [N, c, h, w] map of x's dtype: out, grad_out, grad_x */
static int check_map(const char *fn, const char *what, const pf_tensor *t, const conv_job *j, int64_t c, int64_t h,
                     int64_t w) {
    char a[128];
    int rc;
    if ((rc = pf_check(t, what)) != PF_OK) return rc;
    if (t->ndim != 4 || t->shape[0] != j->N || t->shape[1] != c || t->shape[2] != h || t->shape[3] != w)
        return pf_error(PF_ERR_VALUE, "%s: %s has shape %s, expected [%lld, %lld, %lld, %lld]", fn, what,
                        pf_shape_str(t, a), (long long)j->N, (long long)c, (long long)h, (long long)w);
    if (t->dtype != j->dt)
        return pf_error(PF_ERR_TYPE, "%s: %s is %s, expected %s", fn, what, pf_dtype_name[t->dtype],
                        pf_dtype_name[j->dt]);
    if (!pf_is_contiguous(t)) return pf_error(PF_ERR_VALUE, "%s: %s must be contiguous", fn, what);
    return PF_OK;
}

/* Tile length over `pos` positions: all of them when `rows` of them fit TILE_BYTES, else
 * whole GEMM panels (32). */
/* Tile length over `pos` positions: all of them when `rows` of them fit TILE_BYTES, else
 * whole GEMM panels (32), at least 128 so that a GEMM's packing of the weight is spread over
 * enough columns (a 512 x 4608 weight per 32 columns cost more than the product). */
static int64_t tile_len(const conv_job *j, int64_t rows, int64_t pos) {
    /* dense tiles are for wide layers, whose GEMMs repack the weight per tile: longer ones */
    int64_t lt = (j->dense ? DENSE_BYTES : TILE_BYTES) / (rows * j->es);
    if (lt < 128) lt = 128;
    if (lt >= pos) return pos;
    return lt - lt % 32;
}

/* Small images with many output channels take dense tiles: per-sample tiles (and the
 * direct kernels' 32-lane tiles) would leave a quarter or more of each image's last panel
 * empty: 7x7 fills 64 lanes with 49 outputs, 4x4 32 with 16. */
static int dense_wins(const conv_job *j, int direct) {
    int64_t pos = j->wide ? j->Lq : j->L, lanes = (pos + 31) / 32 * 32;
    /* strided layers whose planes take the tap table (conv.c: taps x positions <= 2^16): the dense
     * tiles gather B from x, which beat the direct kernels' phase planes even at 1/8 lanes wasted
     * (CIFAR ResNet's 64 -> 128 stride-2 layers, 3x3 and 1x1: 10-15%) */
    return j->og >= 32 && (4 * lanes > 5 * j->L || (direct && !j->wide && j->kk * j->L <= (1 << 16)));
}

/* Dense tiles of about equal length, an even number of them when there are few (a layer of 3
 * tiles ran two on one thread and one on the other). A single item (one tile, one group) is
 * split in two: a tile of more positions than output channels into two tiles (each repacks
 * the smaller weight), else the output channels into two blocks of whole 32-row panels (each
 * gathers the smaller tile again): ResNet's 4x4 and 8x8 layers at batch 1 are one tile, and
 * were one thread's work. Not more: each further split repeats the B gathers or the weight's
 * reads, 8% of a stride-2 layer at one thread for a split in four. Fixed by the shapes, never
 * by the thread count. */
static void dense_split(conv_job *j, int64_t pos) {
    int64_t n = j->ntiles;
    if (n > 1 && n < 8 && n % 2) n++;
    if (n == 1 && j->G == 1 && j->og < pos && pos >= 2 * 32) n = 2;
    if (n > 1) {
        j->lt = ((pos + n - 1) / n + 31) / 32 * 32;
        j->ntiles = (pos + j->lt - 1) / j->lt;
    }
    int64_t panels = (j->og + 31) / 32;
    if (j->ntiles * j->G == 1 && panels >= 2) {
        j->mrows = (panels + 1) / 2 * 32;
        j->msub = (j->og + j->mrows - 1) / j->mrows;
    }
}

#ifdef HAVE_DIRECT
#include <immintrin.h>
#define W256 __attribute__((target("avx2,fma")))

/* The wide forward on AVX2 without the unfold (float32, stride 1): a micro-kernel of MR output
 * channels x 16 wide positions reads K rows of B straight from the padded planes, row k at
 * off[k] (channel k / kk, tap k % kk), A from the weight packed per block of MR rows ([K][MR]),
 * and writes its tile to ct (rows ldc apart). One kernel call sums all of K for its outputs, so
 * the result does not depend on the thread count. CIFAR ResNet's 64-channel 32x32 layers spent
 * 6-7% of their forward copying the unfold (and the 128-channel 16x16 ones packing it again). */
static inline __attribute__((always_inline)) W256 void wide2_body(const int MR, int64_t K, const float *a,
                                                                  const float *src, const int64_t *off, float *ct,
                                                                  int64_t ldc, int acc) {
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++, a += MR) {
        const float *b = src + off[k];
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (acc) {
            c0[i] = _mm256_add_ps(c0[i], _mm256_loadu_ps(ct + i * ldc));
            c1[i] = _mm256_add_ps(c1[i], _mm256_loadu_ps(ct + i * ldc + 8));
        }
        _mm256_storeu_ps(ct + i * ldc, c0[i]);
        _mm256_storeu_ps(ct + i * ldc + 8, c1[i]);
    }
}
typedef void (*wide2_fn)(int64_t, const float *, const float *, const int64_t *, float *, int64_t, int);
#define WIDE2(MR) \
    static W256 void wide2_##MR(int64_t K, const float *a, const float *src, const int64_t *off, float *ct, \
                                int64_t ldc, int acc) {                                                     \
        wide2_body(MR, K, a, src, off, ct, ldc, acc);                                                       \
    }
WIDE2(6)
WIDE2(4)
WIDE2(2)

/* rows per kernel for `rem` output channels left: 6s, then one block of 4 or 2 (a 64-channel layer
 * is 10 x 6 + 4, a 128-channel one 21 x 6 + 2) */
static int wide2_mr(int64_t rem) { return rem >= 6 ? 6 : rem > 2 ? 4 : 2; }

typedef struct {
    conv_job *j;
    int64_t psz, K, kc, chunk, nchunk, ldc, rows; /* rows: packed (padded) rows per group; kc: K block */
    int64_t npos, pitch; /* positions the items cover (Lq, or L for rows), and the store's row pitch (Wp, or OW) */
    int rows16;          /* OW a multiple of 16: tiles of 16 outputs of one row, no wide columns computed */
    int64_t wp;          /* the planes' row pitch: Wp, or with strides (phase planes) Wq */
    int64_t hq;          /* strided layers: rows per phase plane, else 0 */
    const int64_t *off;
    const float *apack; /* per group, per block of rows: [K][mr] */
    float *planes;      /* per thread: C * psz + 16 floats */
    float *ct;          /* per thread: [rows, ldc] */
    size_t plane_floats;
} wide2_job;

static void wide2_pack(void *arg, int64_t b0, int64_t b1) {
    const wide2_job *d = arg;
    const conv_job *j = d->j;
    const float *w = (const float *)j->w;
    int64_t nbk = 0;
    for (int64_t r0 = 0; r0 < j->og; r0 += wide2_mr(j->og - r0)) nbk++;
    for (int64_t b = b0; b < b1; b++) {
        int64_t gi = b / nbk, r0 = 0;
        for (int64_t i = 0; i < b % nbk; i++) r0 += wide2_mr(j->og - r0);
        int mr = wide2_mr(j->og - r0);
        float *ap = (float *)d->apack + (gi * d->rows + r0) * d->K;
        for (int i = 0; i < mr; i++) {
            const float *src = r0 + i < j->og ? w + (gi * j->og + r0 + i) * j->R : NULL;
            for (int64_t k = 0; k < d->K; k++) ap[k * mr + i] = src ? src[k] : 0.0f;
        }
    }
}

/* Strided layers: per channel, sh x sw phase planes [hq, wq], phase (a, b) holding the zero-padded input's
 * rows a, a + sh, ... and columns b, b + sw, ...: output (oh, ow)'s tap (ki, kj) reads phase
 * (ki*dh % sh, kj*dw % sw) at row oh + ki*dh / sh, column ow + kj*dw / sw, a stride-1 read as in wide planes. */
static void phase_planes(const float *xn, int64_t xsc, int64_t nc, float *pl, const conv_geom *g, int64_t hq,
                         int64_t wq) {
    for (int64_t c = 0; c < nc; c++)
        for (int64_t a = 0; a < g->sh; a++)
            for (int64_t b = 0; b < g->sw; b++) {
                float *d = pl + ((c * g->sh + a) * g->sw + b) * hq * wq;
                for (int64_t i = 0; i < hq; i++) {
                    int64_t ih = i * g->sh + a - g->ph;
                    if (ih < 0 || ih >= g->H) {
                        memset(d + i * wq, 0, (size_t)wq * sizeof(float));
                        continue;
                    }
                    const float *sr = xn + c * xsc + ih * g->xsh;
                    for (int64_t jj = 0; jj < wq; jj++) {
                        int64_t iw = jj * g->sw + b - g->pw;
                        d[i * wq + jj] = iw >= 0 && iw < g->W ? sr[iw * g->xsw] : 0.0f;
                    }
                }
            }
}

static void wide2_thread(void *arg, int t, int T) {
    const wide2_job *d = arg;
    const conv_job *j = d->j;
    const wide2_fn fns[3] = {wide2_2, wide2_4, wide2_6};
    float *pl = d->planes + (size_t)t * d->plane_floats, *ct = d->ct + (size_t)t * (size_t)(d->rows * d->ldc);
    int64_t i0, i1, have = -1;
    pf_split(j->N * d->nchunk, t, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t n = it / d->nchunk, q0 = it % d->nchunk * d->chunk, lq = d->npos - q0 < d->chunk ? d->npos - q0 : d->chunk;
        if (n != have) {
            if (d->hq)
                phase_planes((const float *)j->x + n * j->xsn, j->xsc, j->C, pl, &j->g, d->hq, d->wp);
            else
                pad_planes_float((const float *)j->x + n * j->xsn, j->xsc, j->C, pl, &j->g, d->psz, j->Wp);
            have = n;
        }
        for (int64_t gi = 0; gi < j->G; gi++) {
            const float *src = pl + gi * j->cg * d->psz;
            const float *ag = d->apack + gi * d->rows * d->K;
            /* per K block, per tile: its B rows (kc / kk channels x kh plane rows) stay in L1 for all blocks of rows */
            for (int64_t pc = 0; pc < d->K; pc += d->kc) {
                int64_t kcur = d->K - pc < d->kc ? d->K - pc : d->kc;
                for (int64_t q = 0; q < lq; q += 16) {
                    /* where the tile's first output reads: rows16's tiles are 16 outputs of one row */
                    int64_t at = d->rows16 ? (q0 + q) / j->g.OW * d->wp + (q0 + q) % j->g.OW : q0 + q;
                    for (int64_t r0 = 0; r0 < j->og; r0 += wide2_mr(j->og - r0)) {
                        int mr = wide2_mr(j->og - r0);
                        fns[mr / 2 - 1](kcur, ag + r0 * d->K + pc * mr, src + at, d->off + pc, ct + r0 * d->ldc + q,
                                        d->ldc, pc > 0);
                    }
                }
            }
            const float *bias = j->bias ? (const float *)j->bias + gi * j->og * j->bs : NULL;
            wide_store_float(ct, d->ldc, j->og, lq, q0, (float *)j->out + (n * j->O + gi * j->og) * j->L, j->L, bias,
                             j->bs, &j->g, d->pitch);
        }
    }
}

/* AVX2 (its GEMM path), float32, wide, not dense, enough rows (output channels) and K for the kernels: a 3-channel
 * stem (K 27) was 16% slower than through the GEMM. */
static int wide2_takes(const conv_job *j) {
    return !j->dense && j->wide && j->dt == PF_FLOAT32 && j->og >= 16 && j->R >= 64 && !strcmp(pf_gemm_path(), "avx2");
}

/* grad_x of a stride-1 layer as the forward of grad_out with the flipped weight (pf_conv_grad_x_direct) when that
 * forward takes wide2: x's channels are its rows, grad_out's channels x taps its K. CIFAR ResNet's 64-channel
 * 32x32 layers: 13% less time than the GEMM and fold. */
static int wide2_takes_grad_x(const conv_job *j) {
    return !j->dense && j->wide && j->dt == PF_FLOAT32 && j->cg >= 16 && j->og * j->kk >= 64 &&
           !strcmp(pf_gemm_path(), "avx2");
}

/* Strided float32 layers (3x3 stride 2: CIFAR ResNet's 64 -> 128 on 32x32) whose output rows are whole tiles
 * take wide2's kernels over phase planes: 18.2 -> 16.2 ms at one thread through the unfold + GEMM. */
static int wide2_takes_phase(const conv_job *j) {
    return !j->dense && !j->wide && j->dt == PF_FLOAT32 && j->og >= 16 && j->R >= 64 && j->g.OW % 16 == 0 &&
           j->g.kh >= j->g.sh && j->g.kw >= j->g.sw && !strcmp(pf_gemm_path(), "avx2");
}

/* The forward of a wide (or, with phase planes, strided) float32 layer by wide2's kernels; PF_ERR_NOMEM with a
 * message on failure. */
static int wide2_forward(conv_job *j) {
    const conv_geom *g = &j->g;
    wide2_job d = {.j = j, .psz = plane_size(j), .K = j->R, .wp = j->Wp};
    if (!j->wide) {
        d.hq = g->OH + (g->kh - 1) * g->dh / g->sh, d.wp = g->OW + (g->kw - 1) * g->dw / g->sw;
        d.psz = g->sh * g->sw * d.hq * d.wp;
    }
    d.kc = 16 * j->kk; /* 16 channels: a 3x3 tile's B rows are 16 x 3 plane rows, 6 KB (12 KB unaligned) */
    for (int64_t r0 = 0; r0 < j->og; r0 += wide2_mr(j->og - r0)) d.rows += wide2_mr(j->og - r0);
    /* positions per item: the tile's outputs [og, chunk] stay in L1/L2 beside the planes */
    /* rows of a multiple of 16 outputs (CIFAR's 32 and 16) take whole tiles of one row each: the wide columns past
     * OW (1/17 of a 16x16 layer's products) are not computed */
    d.rows16 = j->g.OW % 16 == 0;
    d.npos = d.rows16 ? j->L : j->Lq, d.pitch = d.rows16 ? j->g.OW : j->Wp;
    d.chunk = (32 << 10) / (j->og * 4) / 16 * 16;
    if (d.chunk < 64) d.chunk = 64;
    if (d.chunk > 512) d.chunk = 512;
    if (d.chunk >= d.npos) d.chunk = (d.npos + 15) / 16 * 16;
    d.nchunk = (d.npos + d.chunk - 1) / d.chunk;
    d.ldc = d.chunk + 16; /* rows 64 bytes more than a multiple of 256 apart: no crowding of L1's sets */
    /* the last tile's lanes past Lq read up to 15 floats past the last plane */
    d.plane_floats = ((size_t)(j->C * d.psz) + 16 + 15) & ~(size_t)15;
    int nt = pf_threads_for(j->N * j->O * j->L * j->R / 4);
    if (nt > j->N * d.nchunk) nt = (int)(j->N * d.nchunk);
    size_t offb = (size_t)d.K * 8, apb = (size_t)(j->G * d.rows * d.K) * 4;
    size_t ctb = (size_t)(d.rows * d.ldc) * 4; /* the last block's padded rows are written too */
    size_t bytes = offb + apb + 64 + (size_t)nt * (d.plane_floats * 4 + ctb);
    char *buf = pf_alloc(bytes);
    if (!buf) return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for %zu bytes of buffers", bytes);
    int64_t *off = (int64_t *)buf;
    for (int64_t c = 0, k = 0; c < j->cg; c++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++, k++)
                off[k] = !d.hq ? c * d.psz + ki * g->dh * j->Wp + kj * g->dw
                               : c * d.psz + ((ki * g->dh % g->sh) * g->sw + kj * g->dw % g->sw) * d.hq * d.wp +
                                     ki * g->dh / g->sh * d.wp + kj * g->dw / g->sw;
    d.off = off;
    d.apack = (float *)(buf + offb);
    d.planes = (float *)(((uintptr_t)(buf + offb + apb) + 63) & ~(uintptr_t)63);
    d.ct = d.planes + (size_t)nt * d.plane_floats;
    for (int i = 0; i < nt; i++) /* the slack past the planes, read by the last tiles' spare lanes */
        memset(d.planes + (size_t)i * d.plane_floats + j->C * d.psz, 0,
               (d.plane_floats - (size_t)(j->C * d.psz)) * 4);
    int64_t nbk = 0;
    for (int64_t r0 = 0; r0 < j->og; r0 += wide2_mr(j->og - r0)) nbk++;
    pf_parallel_range(pf_threads_for(j->O * d.K), j->G * nbk, wide2_pack, &d);
    pf_run_team(nt, wide2_thread, &d);
    pf_free(buf);
    return PF_OK;
}
#endif

#ifdef HAVE_DIRECT
/* grad_w of a wide float32 layer on AVX2, one sample at a time: gw[o, k] (+)= sum over the Lq wide positions q of
 * gy[o, q] x plane[off(k) + q] (gy zero at the dropped columns), MR rows of gy by NR rows of the unfold, these read
 * in place from the padded planes: no unfold copy and no transposing pack of it, which were a fifth of the
 * weight gradient of CIFAR ResNet's 64-channel 32x32 layers. Each output is one kernel's sum in a fixed order. */
static inline __attribute__((always_inline)) W256 void wgrad_body(const int MR, const int NR, const float *gy,
                                                                  int64_t gys, const float *const *b, int64_t Lq,
                                                                  float *gw, int64_t ldw, int acc) {
    __m256 c[3][4];
#pragma GCC unroll 3
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int k = 0; k < NR; k++) c[i][k] = _mm256_setzero_ps();
    int64_t q = 0;
    for (; q + 8 <= Lq; q += 8) {
        __m256 g[3];
#pragma GCC unroll 3
        for (int i = 0; i < MR; i++) g[i] = _mm256_loadu_ps(gy + i * gys + q);
#pragma GCC unroll 4
        for (int k = 0; k < NR; k++) {
            __m256 v = _mm256_loadu_ps(b[k] + q);
#pragma GCC unroll 3
            for (int i = 0; i < MR; i++) c[i][k] = _mm256_fmadd_ps(g[i], v, c[i][k]);
        }
    }
    if (q < Lq) { /* the last 1-7 positions, masked */
        const __m256i m =
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(Lq - q)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 g[3];
#pragma GCC unroll 3
        for (int i = 0; i < MR; i++) g[i] = _mm256_maskload_ps(gy + i * gys + q, m);
#pragma GCC unroll 4
        for (int k = 0; k < NR; k++) {
            __m256 v = _mm256_maskload_ps(b[k] + q, m);
#pragma GCC unroll 3
            for (int i = 0; i < MR; i++) c[i][k] = _mm256_fmadd_ps(g[i], v, c[i][k]);
        }
    }
#pragma GCC unroll 3
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int k = 0; k < NR; k++) {
            __m128 h = _mm_add_ps(_mm256_castps256_ps128(c[i][k]), _mm256_extractf128_ps(c[i][k], 1));
            h = _mm_add_ps(h, _mm_movehl_ps(h, h));
            float s = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
            gw[i * ldw + k] = acc ? gw[i * ldw + k] + s : s;
        }
}
typedef void (*wgrad_fn)(const float *, int64_t, const float *const *, int64_t, float *, int64_t, int);
#define WGRAD(MR, NR)                                                                                              \
    static W256 void wgrad_##MR##_##NR(const float *gy, int64_t gys, const float *const *b, int64_t Lq, float *gw, \
                                       int64_t ldw, int acc) {                                                     \
        wgrad_body(MR, NR, gy, gys, b, Lq, gw, ldw, acc);                                                          \
    }
WGRAD(3, 4)
WGRAD(3, 3)
WGRAD(3, 2)
WGRAD(3, 1)
WGRAD(2, 4)
WGRAD(2, 3)
WGRAD(2, 2)
WGRAD(2, 1)
WGRAD(1, 4)
WGRAD(1, 3)
WGRAD(1, 2)
WGRAD(1, 1)

/* AVX2 float32 wide layers on planes of at least this many positions take wgrad's kernels for the weight
 * gradient: each kernel call ends in 12 horizontal sums, which on 16x16 planes (271 positions) made the 128-channel
 * layer's weight gradient 1.5x slower than the GEMM's */
#ifndef WGRAD_MIN_POS
#define WGRAD_MIN_POS 512
#endif
static int wgrad_takes(const conv_job *j) {
    return j->wide && j->dt == PF_FLOAT32 && j->Lq >= WGRAD_MIN_POS && !strcmp(pf_gemm_path(), "avx2");
}

/* gw [og, ns*kk] (rows ldw apart) (+)= gy [og, Lq] (rows gys apart) @ the unfold of planes pl (ns channels, psz
 * apart)^T */
static void wgrad_sample(const conv_job *j, const float *pl, int64_t psz, int64_t ns, const float *gy, int64_t gys,
                         float *gw, int64_t ldw, int acc) {
    static const wgrad_fn fns[3][4] = {{wgrad_1_1, wgrad_1_2, wgrad_1_3, wgrad_1_4},
                                       {wgrad_2_1, wgrad_2_2, wgrad_2_3, wgrad_2_4},
                                       {wgrad_3_1, wgrad_3_2, wgrad_3_3, wgrad_3_4}};
    const conv_geom *g = &j->g;
    const int64_t kk = j->kk, nk = ns * kk;
    for (int64_t o0 = 0; o0 < j->og; o0 += 3) {
        int mr = j->og - o0 < 3 ? (int)(j->og - o0) : 3;
        for (int64_t k0 = 0; k0 < nk; k0 += 4) {
            int nr = nk - k0 < 4 ? (int)(nk - k0) : 4;
            const float *b[4];
            for (int k = 0; k < nr; k++) {
                int64_t c = (k0 + k) / kk, t = (k0 + k) % kk;
                b[k] = pl + c * psz + t / g->kw * g->dh * j->Wp + t % g->kw * g->dw;
            }
            fns[mr - 1][nr - 1](gy + o0 * gys, gys, b, j->Lq, gw + o0 * ldw + k0, ldw, acc);
        }
    }
}

/* wgt: the same weight gradient with the positions as the product's inner dimension and no horizontal sums: a
 * kernel holds MR rows k of the unfold x 16 output channels, and per wide position q broadcasts MR values of the
 * padded planes (row k at b[k] + q) against 16 channels of grad_out, read transposed in blocks of 16 channels
 * (gyt [Lq][16]). The tile is the weight gradient transposed, gwt [k][o]. */
static inline __attribute__((always_inline)) W256 void wgt_body(const int MR, const float *const *b, const float *gyt,
                                                                int64_t nq, float *gwt, int64_t ldt, int acc) {
    __m256 c0[6], c1[6];
    const float *bk[6];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps(), bk[i] = b[i];
    for (int64_t q = 0; q < nq; q++, gyt += 16) {
        __m256 g0 = _mm256_load_ps(gyt), g1 = _mm256_load_ps(gyt + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 bi = _mm256_broadcast_ss(bk[i] + q);
            c0[i] = _mm256_fmadd_ps(bi, g0, c0[i]);
            c1[i] = _mm256_fmadd_ps(bi, g1, c1[i]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (acc) {
            c0[i] = _mm256_add_ps(c0[i], _mm256_load_ps(gwt + i * ldt));
            c1[i] = _mm256_add_ps(c1[i], _mm256_load_ps(gwt + i * ldt + 8));
        }
        _mm256_store_ps(gwt + i * ldt, c0[i]);
        _mm256_store_ps(gwt + i * ldt + 8, c1[i]);
    }
}
typedef void (*wgt_fn)(const float *const *, const float *, int64_t, float *, int64_t, int);
#define WGT(MR)                                                                                                   \
    static W256 void wgt_##MR(const float *const *b, const float *gyt, int64_t nq, float *gwt, int64_t ldt, int acc) { \
        wgt_body(MR, b, gyt, nq, gwt, ldt, acc);                                                                    \
    }
WGT(1)
WGT(2)
WGT(3)
WGT(4)
WGT(5)
WGT(6)

#ifndef WGT_QC
#define WGT_QC 2048
#endif
/* AVX2 float32 wide layers with 16 or more output channels per group (16-lane blocks) and K of 16 or more (with
 * the 1 x 3 x 3 K of MNIST's first layer the transposes cost more than the dot kernels) take wgt's kernels */
static int wgt_takes(const conv_job *j) {
    return j->wide && !j->dense && j->dt == PF_FLOAT32 && j->og >= 16 && j->R >= 16 && !strcmp(pf_gemm_path(), "avx2");
}

/* Strided layers (per-sample tiles, taps in every phase) take them over phase planes (see phase_planes), 16 output
 * rows per plane row or more: CIFAR ResNet's 64 -> 128 stride-2 layer */
static int wgt_takes_phase(const conv_job *j) {
    return !j->wide && !j->dense && j->dt == PF_FLOAT32 && j->og >= 16 && j->R >= 16 && j->g.kh >= j->g.sh &&
           j->g.kw >= j->g.sw && j->g.OW >= 16 && !strcmp(pf_gemm_path(), "avx2");
}

/* gwt [ns*kk, ogp] (+)= the unfold of planes pl (ns channels, psz apart) @ gyt ([ogp / 16][Lq][16]) */
static void wgt_sample(const conv_job *j, const float *pl, int64_t psz, int64_t ns, const float *gyt, float *gwt,
                       int acc) {
    static const wgt_fn fns[6] = {wgt_1, wgt_2, wgt_3, wgt_4, wgt_5, wgt_6};
    const conv_geom *g = &j->g;
    const int64_t kk = j->kk, nk = ns * kk, Lq = j->Lq, ogp = j->ogp;
    const int64_t qc = (Lq + (Lq + WGT_QC - 1) / WGT_QC - 1) / ((Lq + WGT_QC - 1) / WGT_QC); /* even chunks */
    for (int64_t q0 = 0; q0 < Lq; q0 += qc) {
        int64_t nq = Lq - q0 < qc ? Lq - q0 : qc;
        for (int64_t k0 = 0; k0 < nk; k0 += 6) {
            int mr = nk - k0 < 6 ? (int)(nk - k0) : 6;
            const float *b[6];
            for (int k = 0; k < mr; k++) {
                int64_t c = (k0 + k) / kk, ki = (k0 + k) % kk / g->kw * g->dh, kj = (k0 + k) % g->kw * g->dw;
                b[k] = pl + c * psz + q0 +
                       (j->hq ? ((ki % g->sh) * g->sw + kj % g->sw) * j->hq * j->Wp + ki / g->sh * j->Wp + kj / g->sw
                              : ki * j->Wp + kj);
            }
            for (int64_t ob = 0; ob < ogp / 16; ob++)
                fns[mr - 1](b, gyt + (ob * Lq + q0) * 16, nq, gwt + k0 * ogp + ob * 16, ogp, acc || q0 > 0);
        }
    }
}

/* r[i] <- column i of the 8 x 8 block in r */
static inline __attribute__((always_inline)) W256 void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++)
        for (int h = 0; h < 2; h++) {
            u[4 * i + h] = _mm256_shuffle_ps(t[4 * i + h], t[4 * i + 2 + h], 0x44);
            u[4 * i + 2 + h] = _mm256_shuffle_ps(t[4 * i + h], t[4 * i + 2 + h], 0xEE);
        }
    /* u: 0 = (0,4: col 0), 1 = col 2, 2 = col 1, 3 = col 3 of rows 0-3 | 4-7 likewise, per 128-bit half */
    static const int col[4] = {0, 2, 1, 3};
    for (int i = 0; i < 4; i++) {
        r[col[i]] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[col[i] + 4] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* gw [og, nk] (rows ldw apart) = gwt [nk, ogp]^T */
static W256 void wgt_flush(const conv_job *j, const float *gwt, int64_t nk, float *gw, int64_t ldw) {
    const int64_t og = j->og, ogp = j->ogp;
    int64_t k8 = nk / 8 * 8, o8 = og / 8 * 8;
    for (int64_t k = 0; k < k8; k += 8)
        for (int64_t o = 0; o < o8; o += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_load_ps(gwt + (k + i) * ogp + o);
            transpose8(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(gw + (o + i) * ldw + k, r[i]);
        }
    for (int64_t o = 0; o < og; o++)
        for (int64_t k = o < o8 ? k8 : 0; k < nk; k++) gw[o * ldw + k] = gwt[k * ogp + o];
}

/* gyqt [N, G, ogp / 16, Lq, 16] = grad_out at wide positions, zero in the dropped columns and past og */
static W256 void expand_rows_t(void *arg, int64_t i0, int64_t i1) {
    const conv_job *j = arg;
    const int64_t L = j->L, Lq = j->Lq, Wp = j->Wp, OW = j->g.OW, nob = j->ogp / 16;
    for (int64_t it = i0; it < i1; it++) { /* (sample, group) */
        const float *gy = (const float *)j->gy + it * j->og * L;
        float *d = (float *)j->gyqt + it * nob * Lq * 16;
        for (int64_t ob = 0; ob < nob; ob++, d += Lq * 16)
            for (int64_t h = 0; h < 16; h += 8) {
                int64_t o0 = ob * 16 + h;
                for (int64_t oh = 0; oh < j->g.OH; oh++) {
                    int64_t ow = 0;
                    float *dr = d + oh * Wp * 16 + h;
                    if (o0 + 8 <= j->og)
                        for (; ow + 8 <= OW; ow += 8) {
                            __m256 r[8];
                            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(gy + (o0 + i) * L + oh * OW + ow);
                            transpose8(r);
                            for (int i = 0; i < 8; i++) _mm256_store_ps(dr + (ow + i) * 16, r[i]);
                        }
                    for (; ow < Wp && oh * Wp + ow < Lq; ow++)
                        for (int64_t i = 0; i < 8; i++)
                            dr[ow * 16 + i] = o0 + i < j->og && ow < OW ? gy[(o0 + i) * L + oh * OW + ow] : 0.0f;
                }
            }
    }
}
#endif

static int run_job(conv_job *j, int64_t items, pf_team_fn fn) {
    int nt = pf_threads_for(j->N * j->O * j->L * j->R / 4); /* multiply-adds, at ~4 per element of work */
    if (nt > items) nt = (int)items;
    if (nt < 1) nt = 1;
    j->ws = pf_alloc((size_t)nt * j->ws_each);
    if (!j->ws) {
        pf_free(j->wpk);
        j->wpk = NULL;
        return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for %d tile buffers", nt);
    }
    pf_run_team(nt, fn, j);
    pf_free(j->ws);
    pf_free(j->wpk);
    j->wpk = NULL;
    if (j->err) return pf_error(PF_ERR_VALUE, "conv2d: a tile's product did not match the packed weight");
    return PF_OK;
}

/* wflip: weight holds the weight of the conv whose input gradient this is ([Kc, M, kh, kw], read
 * flipped and transposed by the per-tap path); *done 0, nothing written, when that path does not apply */
static int conv2d_run(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias, pf_tensor *out, int sh,
                      int sw, int ph, int pw, int dh, int dw, int groups, int wflip, int *done) {
    conv_job j = {0};
    int rc;
    if ((rc = conv_setup("conv2d", x, weight, sh, sw, ph, pw, dh, dw, groups, &j)) != PF_OK) return rc;
    if ((rc = check_map("conv2d", "out", out, &j, j.O, j.g.OH, j.g.OW)) != PF_OK) return rc;
    if (bias) {
        char a[128];
        if ((rc = pf_check(bias, "conv2d: bias")) != PF_OK) return rc;
        if (bias->ndim != 1 || bias->shape[0] != j.O || bias->dtype != j.dt)
            return pf_error(PF_ERR_VALUE, "conv2d: bias must be [%lld] of %s, got %s of %s", (long long)j.O,
                            pf_dtype_name[j.dt], pf_shape_str(bias, a), pf_dtype_name[bias->dtype]);
        j.bias = bias->data, j.bs = bias->strides[0];
    }
    j.out = out->data;
    if (j.N == 0 || j.L == 0 || j.O == 0) return PF_OK;
    if (j.R == 0) { /* no input channels: the output is the bias */
        for (int64_t n = 0; n < j.N; n++)
            for (int64_t o = 0; o < j.O; o++)
                fill_row(&j, j.out + (n * j.O + o) * j.L * j.es, j.L, j.bias ? pf_load_f64(j.bias + o * j.bs * j.es, j.dt) : 0);
        return PF_OK;
    }
#ifdef HAVE_DIRECT
    { /* small planes on the AVX2 kernels: per-tap products that skip the padding's taps */
        int taps = 0;
        if ((rc = pf_conv_taps_gemm(&j, wflip, &taps)) != PF_OK || taps) return rc;
    }
#endif
    if (wflip) {
        *done = 0;
        return PF_OK;
    }
    int direct = j.dt == PF_FLOAT32 && !strcmp(pf_gemm_path(), "avx512");
    if ((j.dense = dense_wins(&j, direct))) j.wide = 0;
#ifdef HAVE_DIRECT
    if (!j.dense && j.dt == PF_FLOAT32 && !strcmp(pf_gemm_path(), "avx512")) return pf_conv_direct(&j, sh, sw);
    if (wide2_takes(&j) || wide2_takes_phase(&j)) return wide2_forward(&j);
#endif
    int64_t pos = j.dense ? j.N * j.L : j.wide ? j.Lq : j.L;
    j.lt = tile_len(&j, j.R, pos), j.ntiles = (pos + j.lt - 1) / j.lt;
    j.msub = 1, j.mrows = j.og;
    if (j.dense) dense_split(&j, pos);
    size_t ws = 0;
    for (int64_t lt = j.lt, k = 0; k < 2; k++, lt = pos - (j.ntiles - 1) * j.lt) {
        pf_gemm_prob p = {j.og, lt, j.R, j.w, j.x, j.out, j.R, 1, lt, 1, j.L, 1, 1};
        ws = umax(ws, umax(pf_gemm_ws_bytes(j.dt, &p), pf_gemm_packed_ws_bytes(j.dt, &p)));
        p.rsc = lt, p.acc = 0;
        ws = umax(ws, umax(pf_gemm_ws_bytes(j.dt, &p), pf_gemm_packed_ws_bytes(j.dt, &p)));
    }
    size_t es = (size_t)j.es;
    pf_gemm_prob first = {j.mrows, j.lt, j.R, j.w, j.x, j.out, j.R, 1, j.lt, 1, j.lt, 1, 0};
    if ((rc = pack_weight(&j, 0, j.G * j.msub, j.dense ? j.ntiles : j.N * j.ntiles, &first)) != PF_OK) return rc;
    int32_t *tab = j.wide ? NULL : pf_conv_taps(&j, 0);
    size_t colb = (size_t)(j.R * (j.wide ? wide_ld(&j) : j.lt)) * es;
#ifdef HAVE_DIRECT
    /* dense float32 tiles with the weight packed and x's offsets within int32: B gathered from x
     * per K block (no unfold buffer, no copy of it into panels) */
    if (j.dense && j.wpk && j.tab && j.gather && j.dt == PF_FLOAT32 && j.N * j.xsn + j.g.H * j.g.xsh + j.g.W * j.g.xsw < INT32_MAX) {
        int pnr = 0;
        if (pf_gemm_pack_kc(j.wpk, &j.pkc, &pnr) == PF_OK && pnr % 16 == 0) j.pnr = pnr, j.implicit = 1;
    }
    if (j.implicit) {
        int64_t ltp = (j.lt + j.pnr - 1) / j.pnr * j.pnr;
        colb = align64((size_t)(j.pkc * ltp) * es) + (size_t)(j.kk * ltp) * sizeof(int32_t);
    }
#endif
    j.off_col = j.wide && j.padded ? align64((size_t)(j.C * plane_size(&j)) * es) : 0;
    j.off_offs = j.off_col + (j.implicit ? align64((size_t)(j.pkc * ((j.lt + j.pnr - 1) / j.pnr * j.pnr)) * es) : 0);
    j.off_ct = j.off_col + align64(colb);
    j.off_gemm = j.off_ct + (j.wide || j.dense ? align64((size_t)(j.og * (j.dense ? dense_ldc(&j) : j.lt)) * es) : 0);
    j.ws_each = j.off_gemm + align64(ws);
    rc = run_job(&j, j.dense ? j.ntiles * j.G * j.msub : j.N * j.ntiles, conv_forward_thread);
    pf_free(tab);
    return rc;
}

int pf_conv2d(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias, pf_tensor *out, int sh, int sw,
              int ph, int pw, int dh, int dw, int groups) {
    return conv2d_run(x, weight, bias, out, sh, sw, ph, pw, dh, dw, groups, 0, NULL);
}

int pf_conv2d_wflip(const pf_tensor *gy, const pf_tensor *w, pf_tensor *gx, int sh, int sw, int ph, int pw, int dh,
                    int dw, int groups, int *done) {
    *done = 1;
    return conv2d_run(gy, w, NULL, gx, sh, sw, ph, pw, dh, dw, groups, 1, done);
}

static void expand_rows(void *arg, int64_t i0, int64_t i1) {
    const conv_job *j = arg;
    for (int64_t n = i0; n < i1; n++)
        DISPATCH(j, wide_expand, F(const void, j->gy + n * j->O * j->L * j->es), j->O, j->L,
                 F(void, j->gyq + n * j->O * j->Lq * j->es), j->Lq, &j->g, j->Wp);
}

/* out[i] = the float32 partials' sum, in block order in double (as the loop below adds them), 256 elements at a
 * time: one vector pass per block instead of a dtype-dispatched load per element and block (1% of a ResNet step) */
PF_VEC_CLONES static void sum_partials_f32(const float *p, int64_t n, int64_t nblk, float *out, int64_t i0,
                                          int64_t i1) {
    double acc[256];
    for (int64_t i = i0; i < i1; i += 256) {
        int64_t m = i1 - i < 256 ? i1 - i : 256;
        for (int64_t k = 0; k < m; k++) acc[k] = 0;
        for (int64_t b = 0; b < nblk; b++)
            for (int64_t k = 0; k < m; k++) acc[k] += (double)p[b * n + i + k];
        for (int64_t k = 0; k < m; k++) out[i + k] = (float)acc[k];
    }
}

static void sum_partials(void *arg, int64_t i0, int64_t i1) {
    const conv_job *j = arg;
    int64_t n = j->O * j->R;
    if (j->dt == PF_FLOAT32) {
        sum_partials_f32((const float *)j->gw, n, j->nblk, (float *)j->out, i0, i1);
        return;
    }
    for (int64_t i = i0; i < i1; i++) {
        double s = 0;
        for (int64_t b = 0; b < j->nblk; b++) s += pf_load_f64(j->gw + (b * n + i) * j->es, j->dt);
        pf_store_f64(j->out + i * j->es, j->dt, s);
    }
}

int pf_conv2d_backward(const pf_tensor *grad_out, const pf_tensor *x, const pf_tensor *weight, pf_tensor *grad_x,
                       pf_tensor *grad_w, int sh, int sw, int ph, int pw, int dh, int dw, int groups) {
    conv_job j = {0};
    int rc;
    if ((rc = conv_setup("conv2d_backward", x, weight, sh, sw, ph, pw, dh, dw, groups, &j)) != PF_OK) return rc;
    if ((rc = check_map("conv2d_backward", "grad_out", grad_out, &j, j.O, j.g.OH, j.g.OW)) != PF_OK) return rc;
    if (grad_x && (rc = check_map("conv2d_backward", "grad_x", grad_x, &j, j.C, j.g.H, j.g.W)) != PF_OK) return rc;
    if (grad_w) {
        char a[128], b[128];
        if ((rc = pf_check(grad_w, "conv2d_backward: grad_w")) != PF_OK) return rc;
        int like = grad_w->ndim == 4 && grad_w->dtype == j.dt && pf_is_contiguous(grad_w);
        for (int d = 0; like && d < 4; d++) like = grad_w->shape[d] == weight->shape[d];
        if (!like)
            return pf_error(PF_ERR_VALUE, "conv2d_backward: grad_w must be contiguous %s of %s like weight, got %s %s",
                            pf_shape_str(weight, a), pf_dtype_name[j.dt], pf_shape_str(grad_w, b),
                            pf_dtype_name[grad_w->dtype]);
    }
    j.gy = grad_out->data;
    if ((j.dense = dense_wins(&j, 0))) j.wide = 0;
#ifdef HAVE_DIRECT
    if (grad_w) { /* small planes on the AVX2 kernels: per-tap products over the positions that read each tap */
        int done = 0;
        if ((rc = pf_conv_taps_grad_w(&j, grad_w, &done)) != PF_OK) return rc;
        if (done) grad_w = NULL;
        if (done && !grad_x) return PF_OK;
    }
    if (grad_w) { /* grad_w as an implicit GEMM: grad_out packed once, B gathered from x */
        int done = 0;
        if ((rc = pf_conv_grad_w_implicit(&j, grad_w, &done)) != PF_OK) return rc;
        if (done) grad_w = NULL;
        if (done && !grad_x) return PF_OK;
    }
    /* stride 1: grad_x is grad_out correlated with the flipped, transposed weight (padding
     * (k-1)*d - p), which the forward does with no unfold at all: the direct kernels, or on dense
     * layers the implicit tiles, with no column buffer to fold back and no transposed pack (ResNet's 256-channel 8x8 layer at batch 32: 21 -> 19 ms, the 512-channel 4x4 one
     * 27 -> 25 ms at one thread). Its output rows are x's channels: with fewer than 8 per group the
     * micro-kernels would idle. A dense layer with fewer positions than output channels keeps the
     * tiled path: flipping the weight costs about what the product does (512-channel 4x4 at batch
     * 1: 2.6 ms tiled, 3.8 ms flipped). */
    int avx512 = !strcmp(pf_gemm_path(), "avx512"), flip = !j.dense || j.N * j.L >= j.og || !avx512;
    if (grad_x && flip && j.dt == PF_FLOAT32 && j.cg >= 8 && sh == 1 && sw == 1 && ph <= (j.g.kh - 1) * dh && pw <= (j.g.kw - 1) * dw &&
        j.N && j.L && j.R && (avx512 || !strcmp(pf_gemm_path(), "avx2"))) {
        /* on AVX2 the per-tap path (conv_taps.c), else a flipped copy where the wide planes take it */
        int done = 0;
        if ((rc = pf_conv_grad_x_direct(grad_out, weight, grad_x, &j, avx512 || wide2_takes_grad_x(&j), &done)) != PF_OK)
            return rc;
        if (done) grad_x = NULL;
        if (done && !grad_w) return PF_OK;
    }
#endif
    if (grad_w && (j.N == 0 || j.L == 0)) memset(grad_w->data, 0, (size_t)(pf_numel(grad_w) * j.es));
    if (grad_x && (j.L == 0 || j.O == 0)) memset(grad_x->data, 0, (size_t)(pf_numel(grad_x) * j.es));
    if (j.N == 0 || j.L == 0 || j.O == 0 || j.R == 0 || (!grad_x && !grad_w)) return PF_OK;
    /* blocks: of samples for the weight-gradient partials; of channels when there are too
     * few samples to go round (both fixed by the shapes, never by the thread count) */
    int64_t part = j.O * j.R * j.es;
    j.nblk = j.N < MAX_BLOCKS ? j.N : MAX_BLOCKS;
    if (grad_w && j.nblk * part > PARTIAL_BYTES) j.nblk = PARTIAL_BYTES / part > 1 ? PARTIAL_BYTES / part : 1;
    int64_t want = (MAX_BLOCKS + j.nblk * j.G - 1) / (j.nblk * j.G);
    j.nsub = want < j.cg ? want : j.cg;
    j.csub = (j.cg + j.nsub - 1) / j.nsub;
    /* big layers: each item's block of the weight gradient, accumulated over its samples and
     * tiles, stays in cache (512 x 4608 floats of a 512-channel 3x3 is 9 MB, re-read per tile) */
    int64_t fit = GW_BLOCK_BYTES / (j.og * j.kk * j.es);
    if (grad_w && j.csub > fit) j.csub = fit > 1 ? fit : 1;
    j.nsub = (j.cg + j.csub - 1) / j.csub;
    int64_t pos = j.dense ? (j.N + j.nblk - 1) / j.nblk * j.L : j.wide ? j.Lq : j.L; /* dense: a block's */
    j.lt = tile_len(&j, j.csub * j.kk, pos);
    size_t ws = 0;
    int64_t last = pos - (pos - 1) / j.lt * j.lt, rem = j.cg - (j.nsub - 1) * j.csub, gys = j.wide ? j.Lq : j.L;
    if (j.dense) /* blocks differ by a sample at most: the shorter one's last tile */
        last = (j.N / j.nblk * j.L - 1) % j.lt + 1, gys = 0;
#ifdef HAVE_DIRECT
    /* (fewer than 32 rows would leave the GEMM packing its one partial panel anyway) */
    j.cols_t = j.wide && j.dt == PF_FLOAT32 && j.csub * j.kk >= 32 && !strcmp(pf_gemm_path(), "avx512");
#endif
    for (int k = 0; k < 6; k++) {
        int64_t lt = k % 3 == 0 ? j.lt : k % 3 == 1 ? last : pos - (pos - 1) / j.lt * j.lt;
        int64_t ns = (k >= 3 ? rem : j.csub) * j.kk, rs = gys ? gys : lt; /* dense: a tile's own rows */
        pf_gemm_prob pw_ = {j.og, ns, lt, j.gy, j.x, NULL, rs, 1, j.cols_t ? ns : 1, j.cols_t ? 1 : lt, j.R, 1, 1};
        pf_gemm_prob px = {ns, lt, j.og, j.w, j.gy, NULL, 1, j.R, rs, 1, lt, 1, 0};
        ws = umax(ws, umax(pf_gemm_ws_bytes(j.dt, &pw_), pf_gemm_ws_bytes(j.dt, &px)));
        ws = umax(ws, pf_gemm_packed_ws_bytes(j.dt, &px));
    }
    size_t es = (size_t)j.es, plane = (size_t)(j.csub * plane_size(&j)) * es;
    j.off_col = j.wide && j.padded ? align64(plane) : 0;
    j.off_gxp = j.off_col + align64((size_t)(j.csub * j.kk * j.lt) * es);
    j.off_ct = j.off_gxp + (j.wide && j.padded ? align64(plane) : 0);
    j.off_gemm = j.off_ct + (j.dense ? align64((size_t)(j.og * j.lt) * es) : 0);
    j.ws_each = j.off_gemm + align64(ws);
    int wgt = 0;
#ifdef HAVE_DIRECT
    /* (with 16 output channels and grad_x still to fold, grad_out's two wide copies cost what wgt saves) */
    if ((wgt = grad_w && (wgt_takes(&j) || wgt_takes_phase(&j)) && !(j.wide && grad_x && j.og < 32))) {
        j.ogp = (j.og + 15) / 16 * 16;
        j.off_gwt = j.ws_each;
        j.ws_each += align64((size_t)(j.csub * j.kk * j.ogp) * sizeof(float));
        if (!j.wide) { /* phase planes, wide positions over them, and room for them after the tile */
            j.hq = j.g.OH + (j.g.kh - 1) * j.g.dh / j.g.sh, j.Wp = j.g.OW + (j.g.kw - 1) * j.g.dw / j.g.sw;
            j.Lq = (j.g.OH - 1) * j.Wp + j.g.OW;
            j.ws_each += align64((size_t)(j.csub * j.g.sh * j.g.sw * j.hq * j.Wp + 16) * sizeof(float));
        }
    }
#endif
    j.gx = grad_x ? grad_x->data : NULL;
    char *partials = NULL;
    if (grad_w && j.nblk > 1) {
        if (!(partials = pf_alloc((size_t)(j.nblk * part))))
            return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for %lld weight-gradient partials",
                            (long long)j.nblk);
        j.gw = partials;
    } else {
        j.gw = grad_w ? grad_w->data : NULL;
    }
    char *gyq = NULL;
    if (j.wide && (j.gx || !wgt)) { /* grad_out in wide positions, once for every item that reads it */
        if (!(gyq = pf_alloc((size_t)(j.N * j.O * j.Lq) * es))) {
            pf_free(partials);
            return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the widened gradient");
        }
        j.gyq = gyq;
        pf_parallel_range(pf_threads_for(j.N * j.O * j.Lq), j.N, expand_rows, &j);
    }
    float *gyqt = NULL;
#ifdef HAVE_DIRECT
    if (wgt) { /* the same, transposed in blocks of 16 channels, for wgt's kernels */
        if (!(gyqt = pf_alloc((size_t)(j.N * j.G * j.ogp * j.Lq) * sizeof(float)))) {
            pf_free(gyq);
            pf_free(partials);
            return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the widened gradient");
        }
        j.gyqt = gyqt;
        pf_parallel_range(pf_threads_for(j.N * j.O * j.Lq), j.N * j.G, expand_rows_t, &j);
    }
#endif
    if (j.gx) { /* grad_x's A, the weight's blocks transposed, once for every item and tile */
        int64_t per_block = j.dense ? (pos + j.lt - 1) / j.lt : (j.N + j.nblk - 1) / j.nblk * ((pos + j.lt - 1) / j.lt);
        pf_gemm_prob first = {j.csub * j.kk, j.lt, j.og, j.w, j.gy, NULL, 1, j.R, j.lt, 1, j.lt, 1, 0};
        rc = pack_weight(&j, 1, j.G * j.nsub, j.nblk * per_block, &first);
    }
    int32_t *tab = j.wide ? NULL : pf_conv_taps(&j, 1);
    if (rc == PF_OK) rc = run_job(&j, j.nblk * j.G * j.nsub, conv_backward_thread);
    pf_free(tab);
    pf_free(gyq);
    pf_free(gyqt);
    if (rc == PF_OK && partials) {
        j.out = grad_w->data;
        pf_parallel_range(pf_threads_for(j.nblk * j.O * j.R), j.O * j.R, sum_partials, &j);
    }
    pf_free(partials);
    return rc;
}
