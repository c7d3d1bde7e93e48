/* conv2d on small planes as per-tap GEMMs that skip the taps falling in the padding (float32,
 * the AVX2 kernel set; the AVX-512 one has conv_direct.c and conv_weight_grad.c).
 *
 * On a 4x4 plane with padding 1, 31% of a 3x3 kernel's taps read padding (16% on 8x8, 18% on
 * 7x7), and an unfold multiplies them as zeros. Here the product's K runs tap-major (k = t*cg +
 * c): the weight is packed once per call as one pack per tap, [og, cg] (read in place: the
 * input gradient, the forward of grad_out with the flipped, transposed weight, takes the same
 * packs with other strides, no flipped copy), and the batch's output positions are sorted into
 * classes by which taps they read inside the plane (interior, edges, corners; see
 * sort_positions). Per tile of panels, per tap, per K block: the B panels of the positions that
 * read the tap are gathered from x straight into the GEMM's layout (AVX2 gathers), and only those
 * panels are multiplied (pf_gemm_packed_block). So no unfold buffer, no copy of it into panels,
 * and no zeros multiplied where a panel's positions all read padding. A layer whose classes
 * would waste more lanes than the padding saves takes one class: the plain implicit GEMM. The
 * weight gradient (at the end) runs K over the positions that read each tap.
 *
 * Each output element is one thread's, summed over taps and K blocks in a fixed order, and tiles
 * are fixed by the shapes (cut to equal work, see cost_cuts): results do not depend on the thread
 * count. Batches of at most 64 output positions (the late layers at batch 1) take rows_gemm
 * instead: the weight read in place, never packed. */
#include "conv.h"
#include "gemm.h"
#ifdef HAVE_DIRECT
#include <immintrin.h>
#define TA2 __attribute__((target("avx2,fma")))

#define MAX_TAPS 32           /* a panel's taps as bits of a uint32_t */
#define MAX_L 64              /* output planes up to 8x8: the late layers of a CIFAR ResNet */
#define MIN_PANELS 8          /* below this (batch 1, 2) the tiled paths keep their row splits */
#define B_BYTES (128 << 10)   /* a tile's gathered B per K block, beside a part of A in L2 */
#define A_BYTES (192 << 10)   /* a part of the weight's pack (rows x K block) */

typedef struct {
    conv_job *j;
    int wflip;
    int64_t M, Kc, kk, L, NL, nr, kc, nparts, prow, npanel, ntiles, tpan, ldc;
    int64_t *cut;     /* [ntiles + 1]: tile i is panels [cut[i], cut[i + 1]) */
    size_t pack_each; /* bytes per pack: [kk][nparts] packs */
    char *packs;
    int32_t *offs;    /* [kk][npanel * nr]: where lane i reads x for tap t (-1: zero) */
    int64_t *dst;     /* [npanel * nr]: the lane's output offset n*O*L + p, or -1 */
    uint32_t *pmask;  /* [npanel]: taps read by some lane of the panel */
    char *ws;
    size_t ws_each;
    int err;
} taps_job;

/* Part (t, q) of the weight: rows [q*prow, ...) of A_t [M, Kc], A_t(m, c) = w[o = m][c][t], or for
 * the flipped weight w[o = c][m][kk - 1 - t] (w [Kc, M, kh, kw]). */
static const float *tap_a(const taps_job *tj, int64_t t, int64_t q, int64_t *rows, int64_t *rsa, int64_t *csa) {
    const float *w = (const float *)tj->j->w;
    int64_t r0 = q * tj->prow, kk = tj->kk;
    *rows = tj->M - r0 < tj->prow ? tj->M - r0 : tj->prow;
    if (!tj->wflip) {
        *rsa = tj->Kc * kk, *csa = kk;
        return w + r0 * tj->Kc * kk + t;
    }
    *rsa = kk, *csa = tj->M * kk;
    return w + r0 * kk + (kk - 1 - t);
}

/* items: (part, piece of its rows); each packs its rows for every tap, so those rows of the
 * weight are read from memory once and from cache for the other taps */
static void pack_taps(void *arg, int64_t i0, int64_t i1) {
    taps_job *tj = arg;
    int64_t pieces = (tj->prow + 11) / 12;
    for (int64_t i = i0; i < i1; i++) {
        int64_t q = i / pieces, piece = i % pieces, rows, rsa, csa;
        tap_a(tj, 0, q, &rows, &rsa, &csa);
        int64_t pp = (rows + 11) / 12; /* this part's pieces */
        if (piece >= pp) continue;
        for (int64_t t = 0; t < tj->kk; t++) {
            const float *a = tap_a(tj, t, q, &rows, &rsa, &csa);
            if (pf_gemm_pack_a_piece(PF_FLOAT32, rows, tj->Kc, a, rsa, csa,
                                     tj->packs + (size_t)(t * tj->nparts + q) * tj->pack_each, tj->pack_each, piece, pp))
                __atomic_store_n(&tj->err, 1, __ATOMIC_RELAXED);
        }
    }
}

/* bp: panels [p0, p1) of the tile that read tap t, channels [c0, c0 + kcur): panel after panel,
 * each kcur x nr (row k: channel c0 + k at the lanes' offsets, zero where -1) */
static TA2 void gather_b(const taps_job *tj, const float *x, int64_t xsc, int64_t t, int64_t p0, int64_t p1,
                         int64_t c0, int64_t kcur, float *bp) {
    const int64_t nr = tj->nr, lanes = tj->npanel * nr;
    const uint32_t bit = 1u << t;
    const __m256i neg = _mm256_set1_epi32(-1);
    for (int64_t p = p0; p < p1; p++) {
        if (!(tj->pmask[p] & bit)) continue;
        const int32_t *ix = tj->offs + t * lanes + p * nr;
        for (int64_t l = 0; l < nr; l += 8) {
            __m256i o = _mm256_loadu_si256((const __m256i *)(ix + l));
            __m256 m = _mm256_castsi256_ps(_mm256_cmpgt_epi32(o, neg));
            const float *xc = x + c0 * xsc;
            float *d = bp + l;
            for (int64_t k = 0; k < kcur; k++, xc += xsc, d += nr)
                _mm256_storeu_ps(d, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xc, o, m, 4));
        }
        bp += kcur * nr;
    }
}

static void taps_thread(void *arg, int t_, int T) {
    taps_job *tj = arg;
    conv_job *j = tj->j;
    const int64_t nr = tj->nr, kc = tj->kc, ldc = tj->ldc, L = j->L, M = tj->M;
    float *bp = (float *)(tj->ws + (size_t)t_ * tj->ws_each);
    float *ct = bp + ((kc * tj->tpan * nr + 15) & ~(int64_t)15);
    const float *x = (const float *)j->x, *bias = (const float *)j->bias;
    float *out = (float *)j->out;
    int64_t i0, i1;
    pf_split(tj->ntiles, t_, T, &i0, &i1);
    for (int64_t tile = i0; tile < i1; tile++) {
        int64_t pa, pb;
        pa = tj->cut[tile], pb = tj->cut[tile + 1];
        uint64_t written = 0; /* panels of the tile (at most 64) holding a first product */
        for (int64_t t = 0; t < tj->kk; t++) {
            uint32_t bit = 1u << t;
            uint64_t reads = 0;
            for (int64_t p = pa; p < pb; p++)
                if (tj->pmask[p] & bit) reads |= 1ull << (p - pa);
            if (!reads) continue;
            for (int64_t pc = 0; pc < tj->Kc; pc += kc) {
                int64_t kcur = tj->Kc - pc < kc ? tj->Kc - pc : kc;
                gather_b(tj, x, j->xsc, t, pa, pb, pc, kcur, bp);
                for (int64_t q = 0; q < tj->nparts; q++) {
                    const char *pk = tj->packs + (size_t)(t * tj->nparts + q) * tj->pack_each;
                    /* runs of consecutive panels that read the tap and agree on whether to add */
                    int64_t at = 0; /* the run's first panel's place in bp */
                    for (int64_t p = pa; p < pb;) {
                        if (!(reads >> (p - pa) & 1)) {
                            p++;
                            continue;
                        }
                        int acc = pc > 0 || (written >> (p - pa) & 1);
                        int64_t e = p + 1;
                        while (e < pb && (reads >> (e - pa) & 1) && (pc > 0 || (int)(written >> (e - pa) & 1) == acc)) e++;
                        if (pf_gemm_packed_block(PF_FLOAT32, pk, pc, kcur, bp + at * kcur * nr, (e - p) * nr,
                                                 ct + q * tj->prow * ldc + (p - pa) * nr, ldc, acc))
                            __atomic_store_n(&tj->err, 1, __ATOMIC_RELAXED);
                        at += e - p, p = e;
                    }
                }
            }
            written |= reads;
        }
        /* the products out to their positions, bias added; a panel no tap reads (only padding) is
         * the bias alone */
        for (int64_t m = 0; m < M; m++) {
            const float *c = ct + m * ldc;
            float *o = out + m * L;
            for (int64_t i = pa * nr; i < pb * nr; i++) {
                int64_t d = tj->dst[i];
                if (d < 0) continue;
                float v = written >> (i / nr - pa) & 1 ? c[i - pa * nr] : 0.0f;
                o[d] = bias ? v + bias[m * j->bs] : v;
            }
        }
    }
}

/* Tap-panels (the products' work) of the classes laid out in `order` (cnt[u] positions of mask
 * uniq[u] each), cut into panels of nr: each class padded to whole panels, or cut straight on (a
 * panel then reads the union of its classes' taps). Sets *panels. */
static int64_t layout_cost(const uint32_t *uniq, const int64_t *cnt, const int64_t *order, int64_t nu, int padded,
                           int64_t nr, int64_t *panels) {
    int64_t cost = 0, np = 0, fill = 0;
    uint32_t m = 0;
    for (int64_t k = 0; k < nu; k++) {
        int64_t u = order[k], left = cnt[u];
        while (left > 0) {
            int64_t take = nr - fill < left ? nr - fill : left;
            m |= uniq[u], fill += take, left -= take;
            if (fill == nr || (padded && left == 0)) cost += __builtin_popcount(m), np++, fill = 0, m = 0;
        }
    }
    if (fill) cost += __builtin_popcount(m), np++;
    *panels = np;
    return cost;
}

/* Sorts the batch's positions into panels by class (the set of taps read inside the plane) and
 * fills offs, dst and pmask (allocated here in one block, returned) and tj->npanel. Of three
 * layouts the one with the fewest tap-panels: classes padded to whole panels (most taps first);
 * classes cut straight on in a chain where each class is a subset of the one before when one is
 * left, else a superset (the interior, an edge, its corner, the next edge, ...: a panel across a
 * boundary reads the larger class's taps; 7x7 planes at batch 8: 187 tap-panels against 205
 * padded and 225 for one class); or one class in the batch's order. */
static void *sort_positions(taps_job *tj, const int32_t *tab) {
    conv_job *j = tj->j;
    const int64_t L = j->L, kk = tj->kk, nr = tj->nr, N = j->N;
    uint32_t cls[MAX_L], uniq[MAX_L] = {0}, all = 0; /* zeroed: gcc -O2 cannot see the first nu entries are written */
    int64_t nu = 0, cnt[MAX_L] = {0}, byc[MAX_L] = {0}, chain[MAX_L] = {0}, used[MAX_L] = {0};
    for (int64_t p = 0; p < L; p++) {
        cls[p] = 0;
        for (int64_t t = 0; t < kk; t++)
            if (tab[t * L + p] >= 0) cls[p] |= 1u << t;
        all |= cls[p];
        int64_t u = 0;
        while (u < nu && uniq[u] != cls[p]) u++;
        if (u == nu) uniq[nu++] = cls[p];
        cnt[u] += N;
    }
    for (int64_t u = 0; u < nu; u++) byc[u] = u;
    for (int64_t a = 1; a < nu; a++) /* insertion sort: most taps first, then most positions */
        for (int64_t b = a; b > 0; b--) {
            int64_t x = byc[b - 1], y = byc[b];
            int px = __builtin_popcount(uniq[x]), py = __builtin_popcount(uniq[y]);
            if (px > py || (px == py && cnt[x] >= cnt[y])) break;
            byc[b] = x, byc[b - 1] = y;
        }
    for (int64_t k = 0; k < nu; k++) { /* the chain: subset of the last, else superset, else most taps */
        int64_t pick = -1;
        uint32_t last = k ? uniq[chain[k - 1]] : 0;
        for (int pass = 0; pass < 3 && pick < 0; pass++)
            for (int64_t i = 0; i < nu && pick < 0; i++) {
                int64_t u = byc[i];
                if (used[u]) continue;
                int ok = k == 0 || pass == 2 || (pass == 0 ? (uniq[u] & ~last) == 0 : (last & ~uniq[u]) == 0);
                if (ok) pick = u;
            }
        chain[k] = pick, used[pick] = 1;
    }
    int64_t pp, pc, ones = (N * L + nr - 1) / nr;
    int64_t cp = layout_cost(uniq, cnt, byc, nu, 1, nr, &pp), cc = layout_cost(uniq, cnt, chain, nu, 0, nr, &pc);
    int64_t c1 = ones * __builtin_popcount(all);
    /* a split layout must save a tenth: its gathers are scattered over the batch */
    int mode = nu > 1 && 10 * (cp < cc ? cp : cc) < 9 * c1 ? (cp <= cc ? 1 : 2) : 0;
    const int64_t *order = mode == 1 ? byc : chain;
    tj->npanel = mode == 0 ? ones : mode == 1 ? pp : pc;
    int64_t lanes = tj->npanel * nr;
    size_t bytes = (size_t)lanes * (size_t)(kk * 4 + 8) + (size_t)tj->npanel * 4;
    char *buf = pf_alloc(bytes);
    if (!buf) return NULL;
    tj->dst = (int64_t *)buf, tj->offs = (int32_t *)(buf + lanes * 8);
    tj->pmask = (uint32_t *)(buf + lanes * (8 + kk * 4));
    int64_t i = 0;
    for (int64_t k = 0; k < (mode ? nu : 1); k++) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t p = 0; p < L; p++)
                if (!mode || cls[p] == uniq[order[k]]) tj->dst[i++] = n * j->O * L + p;
        while (mode == 1 && i % nr) tj->dst[i++] = -1;
    }
    while (i < lanes) tj->dst[i++] = -1;
    for (int64_t q = 0; q < tj->npanel; q++) tj->pmask[q] = 0;
    for (int64_t l = 0; l < lanes; l++) {
        int64_t d = tj->dst[l], n = d / (j->O * L), p = d % (j->O * L);
        for (int64_t t = 0; t < kk; t++) {
            int32_t s = d >= 0 ? tab[t * L + p] : -1;
            tj->offs[t * lanes + l] = s < 0 ? -1 : (int32_t)(n * j->xsn + s);
            if (s >= 0) tj->pmask[l / nr] |= 1u << t;
        }
    }
    return buf;
}

/* A panel's work in cost_cuts: its taps' products, plus about 3 taps' worth for what a panel costs however many taps
 * it reads (its gathers' and GEMM calls' ends, its scatter out). Measured per thread at 2 threads, 8x8 at batch 32:
 * weighing the taps alone left the thread with the edge and corner classes 8% behind. */
static inline int64_t panel_cost(uint32_t mask) { return __builtin_popcount(mask) + 3; }

/* Cuts npanel panels into ntiles tiles of near equal work into cut (tile i: panels [cut[i], cut[i + 1])), each at
 * most 64 panels (the tile's bitmasks); returns the longest tile's panels. Fixed by the shapes, never by the thread
 * count, so the results are too. Equal panel counts gave one of two threads 62% of the tap-panels at 7x7 and batch
 * 8 (the interior class, 9 taps, comes first; corners read 4) and 60% at 8x8 and batch 32. */
static int64_t cost_cuts(const uint32_t *pmask, int64_t npanel, int64_t ntiles, int64_t *cut) {
    int64_t total = 0, acc = 0, p = 0, most = 0;
    for (int64_t q = 0; q < npanel; q++) total += panel_cost(pmask[q]);
    cut[0] = 0;
    for (int64_t i = 1; i < ntiles; i++) {
        int64_t goal = total * i / ntiles; /* take panels while the tile's end stays nearer its goal */
        while (p < npanel - (ntiles - i) && 2 * (acc + panel_cost(pmask[p])) <= 2 * goal + panel_cost(pmask[p]))
            acc += panel_cost(pmask[p]), p++;
        if (p <= cut[i - 1]) acc += panel_cost(pmask[p]), p++; /* at least one panel */
        cut[i] = p;
    }
    cut[ntiles] = npanel;
    for (int64_t i = 0; i < ntiles; i++) most = cut[i + 1] - cut[i] > most ? cut[i + 1] - cut[i] : most;
    if (most <= 64) return most;
    for (int64_t i = 0; i <= ntiles; i++) cut[i] = npanel * i / ntiles; /* equal panel counts */
    return (npanel + ntiles - 1) / ntiles;
}

/* ---- a few positions: the weight read in place ----------------------------------------------
 * At batch 1 the late layers have 16 (4x4) or 64 (8x8) output positions: a product of a large
 * weight [og, R] (9.4 MB for 512 x 512 x 3 x 3) by a thin unfold [R, P], where the blocked
 * GEMM's per-call weight pack (a transposing copy, written and read again) cost as much as the
 * product. Here the unfold is gathered once into xt [R, ldx] (ldx: P rounded up to 8, zeros past
 * P), and each thread streams its rows of the weight from memory once, broadcast per element, into
 * 6 x 16 (or 12 x 8) register tiles over K blocks of RW_KC, its C tile on the stack. Any stride,
 * dilation and kernel size (the unfold reads the tap table). Each output element is one tile's,
 * K in order: the same bits at any thread count. */
#define RW_MAXP 64 /* positions: 8x8 at batch 1, 4x4 up to batch 4 */
#define RW_NB 48   /* rows of the weight per C tile */
#define RW_KC 384  /* K per pass over a tile (as gemm_small.c's x W^T) */

typedef struct {
    const conv_job *j;
    int64_t P, ldx;
    const int32_t *offs; /* [kk, ldx]: where lane i reads x for tap t (-1: a zero) */
    float *xt;           /* [R, ldx] */
} rows_job;

/* rows [c0 * kk, c1 * kk) of xt: channel c's tap t at lane i */
static TA2 void rows_unfold(void *arg, int64_t c0, int64_t c1) {
    const rows_job *r = arg;
    const conv_job *j = r->j;
    const int64_t kk = j->kk, ldx = r->ldx;
    const __m256i neg = _mm256_set1_epi32(-1);
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = (const float *)j->x + c * j->xsc;
        for (int64_t t = 0; t < kk; t++) {
            const int32_t *ix = r->offs + t * ldx;
            float *d = r->xt + (c * kk + t) * ldx;
            for (int64_t l = 0; l < ldx; l += 8) {
                __m256i o = _mm256_loadu_si256((const __m256i *)(ix + l));
                __m256 m = _mm256_castsi256_ps(_mm256_cmpgt_epi32(o, neg));
                _mm256_storeu_ps(d + l, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xc, o, m, 4));
            }
        }
    }
}

PF_WT_TILE(6, 2)
PF_WT_TILE(12, 1)

/* thread t_'s rows of the output: whole tiles of 6 rows, in C tiles of RW_NB */
static TA2 void rows_thread(void *arg, int t_, int T) {
    const rows_job *r = arg;
    const conv_job *j = r->j;
    const int64_t M = j->og, K = j->R, ldx = r->ldx, L = j->L, c1 = ldx / 16 * 16;
    const float *W = (const float *)j->w, *bias = (const float *)j->bias;
    float *out = (float *)j->out;
    _Alignas(32) float ct[RW_NB * RW_MAXP];
    int64_t u0, u1;
    pf_split((M + 5) / 6, t_, T, &u0, &u1);
    const int64_t rend = u1 * 6 < M ? u1 * 6 : M;
    for (int64_t j0 = u0 * 6; j0 < rend; j0 += RW_NB) {
        const int64_t nb = rend - j0 < RW_NB ? rend - j0 : RW_NB;
        for (int64_t k0 = 0; k0 < K; k0 += RW_KC) {
            const int64_t kc = K - k0 < RW_KC ? K - k0 : RW_KC;
            const float *xk = r->xt + k0 * ldx;
            for (int64_t r0 = 0; c1 && r0 < nb; r0 += 6) {
                int nr = nb - r0 < 6 ? (int)(nb - r0) : 6;
                const float *w = W + (j0 + r0) * K + k0;
                for (int64_t c0 = 0; c0 < c1; c0 += 16)
                    pf_wt_tile_6_2(nr, kc, w, K, xk + c0, ldx, ct + r0 * ldx + c0, k0 == 0);
            }
            for (int64_t r0 = 0; c1 < ldx && r0 < nb; r0 += 12) {
                int nr = nb - r0 < 12 ? (int)(nb - r0) : 12;
                pf_wt_tile_12_1(nr, kc, W + (j0 + r0) * K + k0, K, xk + c1, ldx, ct + r0 * ldx + c1, k0 == 0);
            }
        }
        for (int64_t m = 0; m < nb; m++) {
            const float b = bias ? bias[(j0 + m) * j->bs] : 0.0f;
            for (int64_t n = 0; n < j->N; n++) {
                const float *c = ct + m * ldx + n * L;
                float *o = out + (n * j->O + j0 + m) * L;
                if (bias)
                    for (int64_t p = 0; p < L; p++) o[p] = c[p] + b;
                else
                    memcpy(o, c, (size_t)L * sizeof(float));
            }
        }
    }
}

/* The forward of j by rows_thread when the batch has at most RW_MAXP output positions; *done 0 (nothing
 * written) when it does not apply. */
static int rows_gemm(conv_job *j, int *done) {
    const int64_t P = j->N * j->L, kk = j->kk, ldx = (P + 7) / 8 * 8;
    if (P > RW_MAXP || P < 8 || j->og < 16 || j->R < 64 || j->xsn < 0 || j->xsc < 0) return PF_OK;
    if (j->N * j->xsn + j->C * j->xsc >= INT32_MAX) return PF_OK;
    int32_t *tab = pf_conv_taps(j, 0);
    if (!tab) return PF_OK;
    j->tab = j->tabg = NULL;
    int32_t *offs = pf_alloc((size_t)(kk * ldx) * sizeof(int32_t));
    float *xt = pf_alloc((size_t)(j->R * ldx) * sizeof(float));
    int rc = PF_OK;
    if (!offs || !xt) {
        rc = pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the unfold");
    } else {
        for (int64_t t = 0; t < kk; t++)
            for (int64_t i = 0; i < ldx; i++) {
                int32_t s = i < P ? tab[t * j->L + i % j->L] : -1;
                offs[t * ldx + i] = s < 0 ? -1 : (int32_t)(i / j->L * j->xsn + s);
            }
        rows_job r = {.j = j, .P = P, .ldx = ldx, .offs = offs, .xt = xt};
        pf_parallel_range(pf_threads_for(j->R * ldx), j->C, rows_unfold, &r);
        int nt = pf_threads_for(j->O * P * j->R / 4);
        if (nt > (j->og + 5) / 6) nt = (int)((j->og + 5) / 6);
        pf_run_team(nt, rows_thread, &r);
        *done = 1;
    }
    pf_free(xt);
    pf_free(offs);
    pf_free(tab);
    return rc;
}

int pf_conv_taps_gemm(conv_job *j, int wflip, int *done) {
    *done = 0;
    if (!wflip && j->dt == PF_FLOAT32 && j->G == 1 && !strcmp(pf_gemm_path(), "avx2") && j->N * j->L <= RW_MAXP)
        return rows_gemm(j, done);
    int64_t N = j->N, L = j->L, kk = j->kk;
    if (j->dt != PF_FLOAT32 || j->G != 1 || L > MAX_L || kk > MAX_TAPS || kk < 2 || j->og < 32 || j->cg < 16 ||
        j->g.sh != 1 || j->g.sw != 1 || j->xsn < 0 || j->xsc < 0 || strcmp(pf_gemm_path(), "avx2"))
        return PF_OK;
    /* x's offsets (and the gathers' channel steps) within int32 */
    if (N * j->xsn + j->C * j->xsc >= INT32_MAX || N * j->O * L >= INT64_MAX / 2) return PF_OK;
    taps_job tj = {.j = j, .wflip = wflip, .M = j->og, .Kc = j->cg, .kk = kk, .L = L, .NL = N * L};
    /* the kernel set's panel width and the K block of a Kc-column pack, from a pack of one row */
    {
        size_t b = pf_gemm_pack_bytes(PF_FLOAT32, 1, tj.Kc);
        char *p = pf_alloc(b);
        float *z = pf_alloc((size_t)tj.Kc * 4);
        int nr = 0, bad = !p || !z;
        if (!bad) {
            memset(z, 0, (size_t)tj.Kc * 4);
            bad = pf_gemm_pack_a(PF_FLOAT32, 1, tj.Kc, z, tj.Kc, 1, p, b) || pf_gemm_pack_kc(p, &tj.kc, &nr);
        }
        pf_free(p);
        pf_free(z);
        if (bad) return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the weight's packs");
        tj.nr = nr;
    }
    if (tj.nr % 8 || tj.NL < MIN_PANELS * tj.nr) return PF_OK;
    int32_t *tab = pf_conv_taps(j, 0);
    if (!tab) return PF_OK;
    void *pos = sort_positions(&tj, tab);
    pf_free(tab);
    j->tab = j->tabg = NULL;
    if (!pos) return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the position classes");
    const int64_t nr = tj.nr;
    /* parts of the weight's rows, equal and whole panels of 12, each near A_BYTES per K block */
    tj.nparts = (tj.M * tj.kc * 4 + A_BYTES - 1) / A_BYTES;
    tj.prow = ((tj.M + tj.nparts - 1) / tj.nparts + 11) / 12 * 12;
    tj.nparts = (tj.M + tj.prow - 1) / tj.prow;
    tj.pack_each = (pf_gemm_pack_bytes(PF_FLOAT32, tj.prow, tj.Kc) + 63) & ~(size_t)63;
    /* tiles of about B_BYTES of B per K block, at most 64 panels, of equal work and an even number (2 threads) */
    tj.tpan = B_BYTES / (tj.kc * nr * 4);
    if (tj.tpan < 1) tj.tpan = 1;
    if (tj.tpan > 64) tj.tpan = 64;
    tj.ntiles = (tj.npanel + tj.tpan - 1) / tj.tpan;
    if (tj.ntiles > 1 && tj.ntiles % 2) tj.ntiles++;
    if (tj.ntiles > tj.npanel) tj.ntiles = tj.npanel;
    if (!(tj.cut = pf_alloc((size_t)(tj.ntiles + 1) * sizeof(int64_t)))) {
        pf_free(pos);
        return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the tiles");
    }
    tj.tpan = cost_cuts(tj.pmask, tj.npanel, tj.ntiles, tj.cut);
    tj.ldc = tj.tpan * nr + 16; /* rows 64 bytes past the tile: see conv2d.c's dense_ldc */
    tj.ws_each = (((size_t)((tj.kc * tj.tpan * nr + 15) & ~(int64_t)15) + (size_t)(tj.M * tj.ldc)) * 4 + 63) & ~(size_t)63;
    int nt = pf_threads_for(N * j->O * L * j->R / 4);
    if (nt > tj.ntiles) nt = (int)tj.ntiles;
    if (nt < 1) nt = 1;
    tj.packs = pf_alloc((size_t)(kk * tj.nparts) * tj.pack_each);
    tj.ws = pf_alloc((size_t)nt * tj.ws_each);
    int rc = PF_OK;
    if (!tj.packs || !tj.ws) {
        rc = pf_error(PF_ERR_NOMEM, "conv2d: out of memory for the weight's packs and tile buffers");
    } else {
        int64_t pieces = (tj.prow + 11) / 12;
        pf_parallel_range(pf_threads_for(j->O * j->R), tj.nparts * pieces, pack_taps, &tj);
        if (!tj.err) pf_run_team(nt, taps_thread, &tj);
        if (tj.err) rc = pf_error(PF_ERR_VALUE, "conv2d: a tap's product did not match the packed weight");
        else *done = 1;
    }
    pf_free(tj.ws);
    pf_free(tj.packs);
    pf_free(tj.cut);
    pf_free(pos);
    return rc;
}
/* ---- the weight gradient -------------------------------------------------------------------
 * grad_w[o, c, t] = sum over the positions P that read tap t inside the plane of gy[o, P] *
 * x[c, tap t of P]: per tap a GEMM [og, K] x [K, cg] whose K runs only over those positions. The
 * positions are sorted into their classes (each class reads an exact set of taps), grad_out is
 * packed once per class (A [og, class positions]), and for tap t the products run over the classes
 * that read it, B's panels gathered from x (a panel row is one position, its lanes 16 input
 * channels: no masks, every position of the class reads the tap). Items are blocks of input
 * channels, each owning its columns of every tap's product, summed in a fixed order. */
#define GW_LANES 64
#define MAX_KC_GW 512 /* the largest K block of the kernel sets' packs, checked */ /* input channels per item: B of a K block beside A in L2 */

typedef struct {
    conv_job *j;
    int64_t nu, kk, L, nr, lanes;
    uint32_t uniq[MAX_L];
    int64_t cnt[MAX_L], first[MAX_L], kc[MAX_L]; /* per class: positions, where its list starts, K block */
    int64_t *pos;    /* the classes' positions, n*L + p, class after class */
    char *packs;     /* per class: A [og, cnt] packed */
    size_t off[MAX_L];
    float *gw;
    char *ws;
    size_t ws_each;
    int64_t items;
    int err;
} taps_gw;

/* class u's grad_out rows [og, cnt[u]] copied together (the thread's buffer), then packed */
static void gw_pack(void *arg, int t_, int T) {
    taps_gw *g = arg;
    const conv_job *j = g->j;
    const int64_t L = j->L, og = j->og;
    float *buf = (float *)(g->ws + (size_t)t_ * g->ws_each);
    int64_t i0, i1;
    pf_split(g->nu, t_, T, &i0, &i1);
    for (int64_t u = i0; u < i1; u++) {
        const int64_t K = g->cnt[u], *ps = g->pos + g->first[u];
        for (int64_t o = 0; o < og; o++) {
            const float *gy = (const float *)j->gy + o * L;
            for (int64_t i = 0; i < K; i++) buf[o * K + i] = gy[ps[i] / L * j->O * L + ps[i] % L];
        }
        if (pf_gemm_pack_a(PF_FLOAT32, og, K, buf, K, 1, g->packs + g->off[u], g->off[u + 1] - g->off[u]))
            __atomic_store_n(&g->err, 1, __ATOMIC_RELAXED);
    }
}

/* B panels for positions [k0, k0 + kcur) of class u at tap t, channels [c0, c0 + nc) of x:
 * nc / nr panels (nc a multiple of nr; channels past cg read as zeros), panel q at q * kcur * nr */
static TA2 void gw_gather(const taps_gw *g, int64_t u, int64_t t, int64_t k0, int64_t kcur, int64_t c0, int64_t nc,
                          float *bp) {
    const conv_job *j = g->j;
    const int64_t nr = g->nr, L = j->L, xsc = j->xsc, cg = j->cg;
    const int32_t *tab = j->tab + t * L;
    const int64_t *ps = g->pos + g->first[u] + k0;
    const __m256i step = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int32_t)xsc));
    for (int64_t q = 0; q < nc / nr; q++) {
        float *d = bp + q * kcur * nr;
        for (int64_t l = 0; l < nr; l += 8) {
            int64_t c = c0 + q * nr + l, left = cg - c;
            __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(left < 0 ? 0 : left > 8 ? 8 : left)),
                                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            const float *xc = (const float *)j->x + (c < cg ? c : 0) * xsc;
            for (int64_t k = 0; k < kcur; k++) {
                const float *b = xc + ps[k] / L * j->xsn + tab[ps[k] % L];
                _mm256_storeu_ps(d + k * nr + l,
                                 _mm256_mask_i32gather_ps(_mm256_setzero_ps(), b, step, _mm256_castsi256_ps(m), 4));
            }
        }
    }
}

static void gw_thread(void *arg, int t_, int T) {
    taps_gw *g = arg;
    const conv_job *j = g->j;
    const int64_t og = j->og, cg = j->cg, kk = g->kk, R = j->R, lanes = g->lanes;
    float *bp = (float *)(g->ws + (size_t)t_ * g->ws_each), *ct = bp + ((MAX_KC_GW * lanes + 15) & ~15);
    int64_t i0, i1;
    pf_split(g->items, t_, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t c0 = it * lanes, nc = cg - c0 < lanes ? (cg - c0 + g->nr - 1) / g->nr * g->nr : lanes;
        for (int64_t t = 0; t < kk; t++) {
            float *c = ct + t * og * lanes;
            int first = 1;
            for (int64_t u = 0; u < g->nu; u++) {
                if (!(g->uniq[u] >> t & 1)) continue;
                for (int64_t k0 = 0; k0 < g->cnt[u]; k0 += g->kc[u], first = 0) {
                    int64_t kcur = g->cnt[u] - k0 < g->kc[u] ? g->cnt[u] - k0 : g->kc[u];
                    gw_gather(g, u, t, k0, kcur, c0, nc, bp);
                    if (pf_gemm_packed_block(PF_FLOAT32, g->packs + g->off[u], k0, kcur, bp, nc, c, lanes, !first))
                        __atomic_store_n(&g->err, 1, __ATOMIC_RELAXED);
                }
            }
            if (first) /* no position reads the tap */
                for (int64_t i = 0; i < og * lanes; i++) c[i] = 0.0f;
        }
        /* ct [kk, og, lanes] -> grad_w's [og, cg, kk] */
        for (int64_t o = 0; o < og; o++)
            for (int64_t l = 0; l < lanes && c0 + l < cg; l++)
                for (int64_t t = 0; t < kk; t++) g->gw[o * R + (c0 + l) * kk + t] = ct[(t * og + o) * lanes + l];
    }
}

int pf_conv_taps_grad_w(conv_job *j, pf_tensor *grad_w, int *done) {
    *done = 0;
    const int64_t N = j->N, L = j->L, kk = j->kk;
    if (j->dt != PF_FLOAT32 || j->G != 1 || L > MAX_L || kk > MAX_TAPS || kk < 2 || j->og < 32 || j->cg < 16 ||
        j->g.sh != 1 || j->g.sw != 1 || j->xsn < 0 || j->xsc < 0 || N * L < 128 || strcmp(pf_gemm_path(), "avx2"))
        return PF_OK;
    if (N * j->xsn + j->C * j->xsc >= INT32_MAX || 16 * j->xsc >= INT32_MAX) return PF_OK;
    int32_t *tab = pf_conv_taps(j, 0);
    if (!tab) return PF_OK;
    taps_gw g = {.j = j, .kk = kk, .L = L, .gw = (float *)grad_w->data};
    uint32_t cls[MAX_L];
    for (int64_t p = 0; p < L; p++) {
        cls[p] = 0;
        for (int64_t t = 0; t < kk; t++)
            if (tab[t * L + p] >= 0) cls[p] |= 1u << t;
        int64_t u = 0;
        while (u < g.nu && g.uniq[u] != cls[p]) u++;
        if (u == g.nu) g.uniq[g.nu++] = cls[p], g.cnt[u] = 0;
        g.cnt[u] += N;
    }
    int rc = PF_OK;
    g.pos = pf_alloc((size_t)(N * L) * sizeof(int64_t));
    int64_t kmax = 0, cmax = 0;
    for (int64_t u = 0, at = 0; u < g.nu; u++) {
        g.first[u] = at;
        for (int64_t n = 0; n < N && g.pos; n++)
            for (int64_t p = 0; p < L; p++)
                if (cls[p] == g.uniq[u]) g.pos[at++] = n * L + p;
        g.off[u + 1] = g.off[u] + ((pf_gemm_pack_bytes(PF_FLOAT32, j->og, g.cnt[u]) + 63) & ~(size_t)63);
        cmax = g.cnt[u] > cmax ? g.cnt[u] : cmax;
    }
    g.packs = pf_alloc(g.off[g.nu]);
    /* the packs' K blocks and panel width (a pack of class 0 tells the kernel set) */
    g.ws_each = ((size_t)(j->og * cmax) * 4 + 63) & ~(size_t)63;
    int nt = pf_threads_for(N * j->O * L * j->R / 4);
    g.ws = pf_alloc((size_t)(nt > 1 ? nt : 1) * g.ws_each);
    if (!g.pos || !g.packs || !g.ws) {
        rc = pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the weight gradient's classes");
        goto out;
    }
    pf_run_team(nt < g.nu ? nt : (int)g.nu, gw_pack, &g);
    for (int64_t u = 0; u < g.nu && !g.err; u++) {
        int nr = 0;
        if (pf_gemm_pack_kc(g.packs + g.off[u], &g.kc[u], &nr) || nr % 8 || nr > 32 || g.kc[u] > MAX_KC_GW)
            g.err = 1;
        g.nr = nr;
        kmax = g.kc[u] > kmax ? g.kc[u] : kmax;
    }
    if (g.err) goto out; /* another kernel set: the tiled path */
    g.lanes = GW_LANES;
    g.items = (j->cg + g.lanes - 1) / g.lanes;
    pf_free(g.ws);
    g.ws_each = ((size_t)(((MAX_KC_GW * g.lanes + 15) & ~15) + kk * j->og * g.lanes) * 4 + 63) & ~(size_t)63;
    if (nt > g.items) nt = (int)g.items;
    if (nt < 1) nt = 1;
    if (!(g.ws = pf_alloc((size_t)nt * g.ws_each))) {
        rc = pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the weight gradient's buffers");
        goto out;
    }
    pf_run_team(nt, gw_thread, &g);
    if (g.err) rc = pf_error(PF_ERR_VALUE, "conv2d_backward: a tap's product did not match its pack");
    else *done = 1;
out:
    pf_free(g.ws);
    pf_free(g.packs);
    pf_free(g.pos);
    pf_free(tab);
    j->tab = j->tabg = NULL;
    return rc;
}
#endif
