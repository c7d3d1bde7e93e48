/* conv2d's weight gradient as an implicit GEMM (AVX-512, float32, planes small enough for the
 * tap table of conv.c).
 *
 * grad_w[o, c, t] = sum over the batch's positions P = (n, p) of gy[n, o, p] * x[n, c, tab[t][p]]
 * is a GEMM: A = grad_out [og, positions], B = the unfold transposed [positions, R]. The tiled path
 * builds an unfold per tile and its GEMM packs both operands again per tile, grad_out once per
 * block of input channels (37 times over for a 512-channel 4x4 layer: transposes were the
 * step's largest cost after the multiply-adds). Here grad_out is packed once per call
 * (pf_gemm_pack_a, per chunk of samples), and B's panels are gathered from x per K block
 * straight into the GEMM's layout: a panel row is one position, its lanes input channels at one
 * tap (masked AVX-512 gathers from the tap's offset), so the product's columns come out
 * tap-major; each item puts its block into grad_w's order once at the end.
 *
 * Items are (block of samples, group, block of input channels). Sample blocks (fixed by the
 * shapes, never by the thread count) give small layers enough items; their partials are summed
 * in block order, so the result does not depend on how many threads ran. */
#include "conv.h"
#ifdef HAVE_DIRECT
#include <immintrin.h>
#define D512 __attribute__((target("avx512f")))

#define LANES 32             /* a B panel's width: the float32 AVX-512 GEMM's nr, checked */
#define KC_MAX 320           /* the largest K block of its packs, checked */
#define CHUNK_POSITIONS 1024 /* a pack chunk holds at least this many positions (whole samples) */
#define MIN_ITEMS MAX_BLOCKS /* sample blocks are added until there are this many items */
#define PARTIAL_BYTES ((int64_t)8 << 20)
/* A panel row's two gathers feed og / 12 micro-kernel rows: at 64 output channels per group
 * the path only ties the tiled one (CIFAR ResNet's first stage), from 128 it is 20-35% faster.
 * Below 16 input channels per group most of the 32 lanes would be padding (a stem's 3). */
#define MIN_OG 96
#define MIN_CG 16

typedef struct {
    int64_t n0, nn;  /* the chunk's samples */
    size_t off;      /* its packs (one per group) start here in the pack buffer */
    int64_t kc;      /* the packs' K block */
} gw_chunk;

typedef struct {
    conv_job *j;
    int64_t nblk, ncb, items, nchunk;
    const int64_t *blk_chunk; /* [nblk + 1]: block b's chunks are [blk_chunk[b], blk_chunk[b + 1]) */
    gw_chunk *ch;
    char *packs;
    size_t pack_each; /* per chunk: G packs of this many bytes */
    float *dst;       /* grad_w, or nblk partials [nblk, O, R] */
    float *gw;        /* grad_w */
    char *ws;
    size_t ws_each;
    int err;
} gw_job;

/* B panels (one per tap, kcur x LANES each) for batch positions [P, P + kcur): row k of tap t's
 * panel holds channels [0, nc) of xg at position P + k's tap-t input, zero for padding and for
 * lanes past nc */
D512 static void gather_panels(const float *xg, int64_t xsn, int64_t xsc, int nc, const int32_t *tab, int64_t L,
                               int64_t kk, int64_t P, int64_t kcur, float *bp) {
    const __m512i lo = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32((int32_t)xsc));
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32((int32_t)(16 * xsc)));
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nc) - 1);
    const __mmask16 m1 = nc >= 32 ? (__mmask16)0xffff : nc > 16 ? (__mmask16)((1u << (nc - 16)) - 1) : 0;
    const __m512 z = _mm512_setzero_ps();
    for (int64_t t = 0; t < kk; t++) {
        const int32_t *tt = tab + t * L;
        float *d = bp + t * kcur * LANES;
        int64_t n = P / L, p = P % L;
        for (int64_t k = 0; k < kcur; k++, d += LANES) {
            int32_t s = tt[p];
            if (s < 0) {
                _mm512_storeu_ps(d, z);
                _mm512_storeu_ps(d + 16, z);
            } else {
                const float *b = xg + n * xsn + s;
                _mm512_storeu_ps(d, _mm512_mask_i32gather_ps(z, m0, lo, b, 4));
                _mm512_storeu_ps(d + 16, _mm512_mask_i32gather_ps(z, m1, hi, b, 4));
            }
            if (++p == L) p = 0, n++;
        }
    }
}

/* grad_out of chunk c and group gi as A [og, nn*L], packed; a chunk of several samples is first
 * copied into one matrix (the thread's buffer), one sample is packed in place */
static void pack_chunks(void *arg, int t, int T) {
    gw_job *g = arg;
    const conv_job *j = g->j;
    const int64_t L = j->L, og = j->og;
    float *buf = (float *)(g->ws + (size_t)t * g->ws_each);
    int64_t i0, i1;
    pf_split(g->nchunk * j->G, t, T, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        const gw_chunk *c = &g->ch[i / j->G];
        int64_t gi = i % j->G, K = c->nn * L;
        const float *gy = (const float *)j->gy + (c->n0 * j->O + gi * og) * L, *a = gy;
        if (c->nn > 1) {
            for (int64_t n = 0; n < c->nn; n++)
                for (int64_t o = 0; o < og; o++) memcpy(buf + o * K + n * L, gy + (n * j->O + o) * L, (size_t)L * 4);
            a = buf;
        }
        if (pf_gemm_pack_a(PF_FLOAT32, og, K, a, c->nn > 1 ? K : L, 1, g->packs + c->off + (size_t)gi * g->pack_each,
                           g->pack_each))
            __atomic_store_n(&g->err, 1, __ATOMIC_RELAXED);
    }
}

static void gw_items(void *arg, int t, int T) {
    gw_job *g = arg;
    const conv_job *j = g->j;
    const int64_t kk = j->kk, L = j->L, og = j->og, R = j->R, N = kk * LANES;
    float *bp = (float *)(g->ws + (size_t)t * g->ws_each), *ct = bp + kk * KC_MAX * LANES;
    int64_t i0, i1;
    pf_split(g->items, t, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t sb = it / (j->G * g->ncb), gi = it / g->ncb % j->G, c0 = it % g->ncb * LANES;
        int nc = (int)(j->cg - c0 < LANES ? j->cg - c0 : LANES);
        const float *xg = (const float *)j->x + (gi * j->cg + c0) * j->xsc;
        int first = 1;
        for (int64_t ci = g->blk_chunk[sb]; ci < g->blk_chunk[sb + 1]; ci++) {
            const gw_chunk *c = &g->ch[ci];
            const char *pk = g->packs + c->off + (size_t)gi * g->pack_each;
            for (int64_t pc = 0; pc < c->nn * L; pc += c->kc, first = 0) {
                int64_t kcur = c->nn * L - pc < c->kc ? c->nn * L - pc : c->kc;
                gather_panels(xg, j->xsn, j->xsc, nc, j->tab, L, kk, c->n0 * L + pc, kcur, bp);
                if (pf_gemm_packed_block(PF_FLOAT32, pk, pc, kcur, bp, N, ct, N, !first))
                    __atomic_store_n(&g->err, 1, __ATOMIC_RELAXED);
            }
        }
        /* ct [og, kk, LANES] (tap-major) -> grad_w's [og, cg, kk] order */
        float *d = g->dst + (sb * j->O + gi * og) * R + c0 * kk;
        for (int64_t o = 0; o < og; o++)
            for (int c = 0; c < nc; c++)
                for (int64_t tp = 0; tp < kk; tp++) d[o * R + c * kk + tp] = ct[(o * kk + tp) * LANES + c];
    }
}

static void sum_blocks(void *arg, int64_t i0, int64_t i1) {
    const gw_job *g = arg;
    const int64_t n = g->j->O * g->j->R;
    float *out = g->gw;
    for (int64_t i = i0; i < i1; i++) out[i] = g->dst[i];
    for (int64_t b = 1; b < g->nblk; b++)
        for (int64_t i = i0; i < i1; i++) out[i] += g->dst[b * n + i];
}

/* The product once x's table and the blocks are set; PF_OK with *done 0 when the kernel set
 * does not match (the caller's tiled path runs instead). */
static int run_implicit(gw_job *g, int *done) {
    conv_job *j = g->j;
    int64_t per = j->G * g->ncb, part = j->O * j->R * 4;
    g->nblk = (MIN_ITEMS + per - 1) / per;
    if (g->nblk > j->N) g->nblk = j->N;
    if (g->nblk > 1 && g->nblk * part > PARTIAL_BYTES) g->nblk = PARTIAL_BYTES / part > 1 ? PARTIAL_BYTES / part : 1;
    g->items = g->nblk * per;
    /* chunks of at most nper samples inside each block */
    int64_t nper = (CHUNK_POSITIONS + j->L - 1) / j->L, blk_chunk[MAX_BLOCKS + 1], cmax = 1;
    if (!(g->ch = pf_alloc((size_t)(j->N + g->nblk) * sizeof(gw_chunk))))
        return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the weight gradient's chunks");
    for (int64_t b = 0; b < g->nblk; b++) {
        int64_t n0, n1;
        pf_split(j->N, (int)b, (int)g->nblk, &n0, &n1);
        blk_chunk[b] = g->nchunk;
        for (int64_t n = n0; n < n1; n += nper) {
            gw_chunk *c = &g->ch[g->nchunk++];
            c->n0 = n, c->nn = n1 - n < nper ? n1 - n : nper;
            cmax = c->nn > cmax ? c->nn : cmax;
        }
    }
    blk_chunk[g->nblk] = g->nchunk;
    g->blk_chunk = blk_chunk;
    /* every pack has the room of the largest chunk's */
    g->pack_each = (pf_gemm_pack_bytes(PF_FLOAT32, j->og, cmax * j->L) + 63) & ~(size_t)63;
    for (int64_t c = 0; c < g->nchunk; c++) g->ch[c].off = (size_t)(c * j->G) * g->pack_each;
    size_t copy = (size_t)(j->og * cmax * j->L) * 4, item = (size_t)(j->kk * (KC_MAX + j->og) * LANES) * 4;
    g->ws_each = ((copy > item ? copy : item) + 63) & ~(size_t)63;
    int nt = pf_threads_for(j->N * j->O * j->L * j->R / 4);
    if (nt > g->items) nt = (int)g->items;
    if (nt < 1) nt = 1;
    g->packs = pf_alloc((size_t)g->nchunk * j->G * g->pack_each);
    g->ws = pf_alloc((size_t)nt * g->ws_each);
    g->dst = g->nblk > 1 ? pf_alloc((size_t)(g->nblk * part)) : g->gw;
    if (!g->packs || !g->ws || !g->dst)
        return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the weight gradient's packs");
    pf_run_team(nt, pack_chunks, g);
    for (int64_t c = 0; c < g->nchunk && !g->err; c++) {
        int nr = 0;
        if (pf_gemm_pack_kc(g->packs + g->ch[c].off, &g->ch[c].kc, &nr) || nr != LANES || g->ch[c].kc > KC_MAX)
            g->err = 1;
    }
    if (g->err) return PF_OK; /* packs of another kernel set */
    pf_run_team(nt, gw_items, g);
    if (g->err) return pf_error(PF_ERR_VALUE, "conv2d_backward: a weight-gradient product did not match its pack");
    if (g->nblk > 1) pf_parallel_range(pf_threads_for(g->nblk * part / 4), j->O * j->R, sum_blocks, g);
    *done = 1;
    return PF_OK;
}

int pf_conv_grad_w_implicit(conv_job *j, pf_tensor *grad_w, int *done) {
    *done = 0;
    if (j->dt != PF_FLOAT32 || j->og < MIN_OG || j->cg < MIN_CG || j->N < 1 || j->L < 1 || j->R < 1 || j->xsc < 0 || j->xsn < 0 ||
        j->xsc > INT32_MAX / (2 * LANES) || strcmp(pf_gemm_path(), "avx512"))
        return PF_OK;
    int32_t *tab = pf_conv_taps(j, 0);
    int rc = PF_OK;
    if (tab && j->gather) {
        gw_job g = {.j = j, .ncb = (j->cg + LANES - 1) / LANES, .gw = (float *)grad_w->data};
        rc = run_implicit(&g, done);
        if (g.dst != g.gw) pf_free(g.dst);
        pf_free(g.ws);
        pf_free(g.packs);
        pf_free(g.ch);
    }
    pf_free(tab);
    j->tab = j->tabg = NULL;
    return rc;
}
#endif
