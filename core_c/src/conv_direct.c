/* conv2d's direct kernels (AVX-512, float32): the unfold never built.
 *
 * Over "phase planes" of the padded input (sh*sw planes per channel, plane (a, b) holding
 * xpad[h*sh + a][w*sw + b]) every kernel tap reads output positions q = oh*Wq + ow as one
 * contiguous run at its own offset, for any stride and dilation. So a micro-kernel takes
 * the GEMM's B rows straight from the planes through a table of K offsets, and stores
 * its 32 wide positions compressed to the valid ones (ow < OW), bias added: no unfold
 * buffer, no second pass over the output. Rows of A are the packed weights. */
#include "conv.h"
#ifdef HAVE_DIRECT
#include <immintrin.h>
#define D512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

static inline __attribute__((always_inline)) D512 void direct_body(const int MR, int64_t K, const float *a,
                                                                    const float *src, const int64_t *off, float *out,
                                                                    int64_t L, int m, const float *bias,
                                                                    __mmask16 lo, __mmask16 hi) {
    __m512 c0[12], c1[12];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++, a += MR) {
        const float *b = src + off[k];
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    int nlo = __builtin_popcount(lo), nhi = __builtin_popcount(hi);
    __mmask16 slo = (__mmask16)((1u << nlo) - 1), shi = (__mmask16)((1u << nhi) - 1);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= m) break;
        __m512 bi = _mm512_set1_ps(bias ? bias[i] : 0.0f);
        _mm512_mask_storeu_ps(out + i * L, slo, _mm512_maskz_compress_ps(lo, _mm512_add_ps(c0[i], bi)));
        _mm512_mask_storeu_ps(out + i * L + nlo, shi, _mm512_maskz_compress_ps(hi, _mm512_add_ps(c1[i], bi)));
    }
}

typedef void (*direct_fn)(int64_t, const float *, const float *, const int64_t *, float *, int64_t, int,
                          const float *, __mmask16, __mmask16);
#define DIRECT(MR)                                                                                           \
    static D512 void direct_##MR(int64_t K, const float *a, const float *src, const int64_t *off, float *out, \
                                 int64_t L, int m, const float *bias, __mmask16 lo, __mmask16 hi) {          \
        direct_body(MR, K, a, src, off, out, L, m, bias, lo, hi);                                            \
    }
DIRECT(12)
DIRECT(8)
DIRECT(4)

/* rows per micro-kernel for `rem` output channels left: 16 as two 8s, not 12 + 4 */
static int direct_mr(int64_t rem) { return rem > 16 ? 12 : rem > 4 ? 8 : 4; }

typedef struct {
    const conv_job *j;
    int64_t sh, sw, pwe, Hph, Wq, phsz, cstride, plane_floats, K, Lq, ntq, nchunk;
    const int64_t *off;  /* [K] */
    const float *apack;  /* per group, per block of rows: [K][MR] */
    const float *biasf;  /* [O] or NULL */
    float *planes;       /* per thread: plane_floats */
    char *tiles;         /* per thread: ntq lane masks and first outputs, tile_bytes apart */
    size_t tile_bytes;
} direct_job;

/* r[0, n) = in[0, n*step) every step-th element, step 1 or 2, in masked 16-lane pieces: rows
 * of small images are 14-32 floats, which gcc's vector loops would mostly do scalar. */
static inline __attribute__((always_inline)) D512 void copy_row(float *r, const float *in, int64_t n, int step) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t i = 0; i < n; i += 16) {
        int64_t left = n - i;
        __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __m512 v;
        if (step == 1) {
            v = _mm512_maskz_loadu_ps(m, in + i);
        } else { /* elements 2i .. 2i + 2*left - 2 of in, the even ones kept */
            int64_t want = 2 * left - 1;
            __mmask16 m0 = want >= 16 ? 0xffff : (__mmask16)((1u << want) - 1);
            __mmask16 m1 = want >= 32 ? 0xffff : want > 16 ? (__mmask16)((1u << (want - 16)) - 1) : 0;
            v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, in + 2 * i), even,
                                       _mm512_maskz_loadu_ps(m1, in + 2 * i + 16));
        }
        _mm512_mask_storeu_ps(r + i, m, v);
    }
}

/* sample n's phase planes for all channels, zero outside the input */
static D512 void build_planes(const direct_job *d, int64_t n, float *pl) {
    const conv_job *j = d->j;
    const conv_geom *g = &j->g;
    const float *xn = (const float *)j->x + n * j->xsn;
    for (int64_t b = 0; b < d->sw; b++) {
        int64_t lo, hi, hlo, hhi, step = d->sw * g->xsw;
        pf_valid_range(b - d->pwe, d->sw, g->W, d->Wq, &lo, &hi);
        for (int64_t a = 0; a < d->sh; a++) {
            pf_valid_range(a - g->ph, d->sh, g->H, d->Hph, &hlo, &hhi);
            for (int64_t c = 0; c < j->C; c++) {
                float *p = pl + c * d->cstride + (a * d->sw + b) * d->phsz;
                memset(p, 0, (size_t)(hlo * d->Wq) * sizeof(float));
                memset(p + hhi * d->Wq, 0, (size_t)((d->Hph - hhi) * d->Wq) * sizeof(float));
                const float *in = xn + c * j->xsc + (hlo * d->sh + a - g->ph) * g->xsh + (lo * d->sw + b - d->pwe) * g->xsw;
                for (int64_t h = hlo; h < hhi; h++, in += d->sh * g->xsh) {
                    float *r = p + h * d->Wq;
                    for (int64_t w = 0; w < lo; w++) r[w] = 0;
                    if (step <= 2)
                        copy_row(r + lo, in, hi - lo, (int)step);
                    else
                        for (int64_t w = lo; w < hi; w++) r[w] = in[(w - lo) * step];
                    for (int64_t w = hi; w < d->Wq; w++) r[w] = 0;
                }
            }
        }
    }
}

static void direct_thread(void *arg, int t, int T) {
    const direct_job *d = arg;
    const conv_job *j = d->j;
    const int64_t OW = j->g.OW, L = j->L, Wq = d->Wq, K = d->K;
    direct_fn fns[3] = {direct_4, direct_8, direct_12};
    float *pl = d->planes + (size_t)t * d->plane_floats;
    uint32_t *masks = (uint32_t *)(d->tiles + (size_t)t * d->tile_bytes); /* per tile: lanes, first output */
    int64_t *done = (int64_t *)(masks + d->ntq + (d->ntq & 1));
    int64_t i0, i1, have = -1;
    pf_split(j->N * d->nchunk, t, T, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        int64_t n = it / d->nchunk, ch = it % d->nchunk, t0, t1;
        pf_split(d->ntq, (int)ch, (int)d->nchunk, &t0, &t1);
        if (n != have) build_planes(d, n, pl), have = n;
        for (int64_t tq = t0; tq < t1; tq++) {
            int64_t q0 = tq * 32;
            uint32_t valid = 0; /* lanes of output columns (ow < OW) before Lq, in runs */
            for (int64_t k = 0, ow = q0 % Wq, end = d->Lq - q0 < 32 ? d->Lq - q0 : 32; k < end;) {
                int64_t run = ow < OW ? OW - ow : Wq - ow;
                if (run > end - k) run = end - k;
                if (ow < OW) valid |= (uint32_t)((1ull << (k + run)) - (1ull << k));
                k += run, ow = ow + run == Wq ? 0 : ow + run;
            }
            masks[tq - t0] = valid, done[tq - t0] = q0 / Wq * OW + (q0 % Wq < OW ? q0 % Wq : OW);
        }
        /* a block of weight rows is read from cache for all of the item's tiles: big layers'
         * weights (512 x 4608) do not fit, and streaming them once per tile doubled the time */
        const float *ap = d->apack;
        for (int64_t gi = 0; gi < j->G; gi++)
            for (int64_t r0 = 0; r0 < j->og;) {
                int mr = direct_mr(j->og - r0), m = (int)(j->og - r0 < mr ? j->og - r0 : mr);
                const float *bias = d->biasf ? d->biasf + gi * j->og + r0 : NULL;
                float *out = (float *)j->out + (n * j->O + gi * j->og + r0) * L;
                for (int64_t tq = t0; tq < t1; tq++)
                    fns[mr / 4 - 1](K, ap, pl + gi * j->cg * d->cstride + tq * 32, d->off, out + done[tq - t0], L, m,
                                    bias, (__mmask16)(masks[tq - t0] & 0xffff), (__mmask16)(masks[tq - t0] >> 16));
                ap += K * mr, r0 += m;
            }
    }
}

/* Blocks [b0, b1) (over groups, then each group's blocks of rows) of the weight in the kernels'
 * layout, [K][mr] per block with zero rows past the group's last, at d->apack: a 256 x 2304
 * weight took a fifth of its layer's time at batch 1, serial before the team. */
static void pack_rows(void *arg, int64_t b0, int64_t b1) {
    const direct_job *d = arg;
    const conv_job *j = d->j;
    const float *w = (const float *)j->w;
    int64_t nbk = 0, rows = 0; /* blocks and rows (padded) per group */
    for (int64_t r0 = 0; r0 < j->og; r0 += direct_mr(j->og - r0)) nbk++, rows += direct_mr(j->og - r0);
    for (int64_t b = b0; b < b1; b++) {
        int64_t gi = b / nbk, r0 = 0, done = 0; /* the block's first row, and the padded rows before it */
        for (int64_t i = 0; i < b % nbk; i++) done += direct_mr(j->og - r0), r0 += direct_mr(j->og - r0);
        int mr = direct_mr(j->og - r0);
        float *ap = (float *)d->apack + (gi * rows + done) * d->K;
        for (int i = 0; i < mr; i++) {
            if (r0 + i >= j->og) {
                for (int64_t k = 0; k < d->K; k++) ap[k * mr + i] = 0.0f;
                continue;
            }
            const float *src = w + (gi * j->og + r0 + i) * j->R;
            for (int64_t k = 0; k < d->K; k++) ap[k * mr + i] = src[k];
        }
    }
}

/* Forward by the direct kernels; PF_ERR_NOMEM with a message on failure. */
int pf_conv_direct(conv_job *j, int sh, int sw) {
    const conv_geom *g = &j->g;
    direct_job d = {.j = j, .sh = sh, .sw = sw, .K = j->R};
    int64_t Hp = g->H + 2 * g->ph, Wp = g->W + 2 * g->pw;
    d.Hph = (Hp + sh - 1) / sh, d.Wq = (Wp + sw - 1) / sw, d.pwe = g->pw;
    if (sw == 1) {
        /* Rows share their zero columns: a window hanging off a row's right edge reads the
         * next row's left gap, so rows need max(left, right) zeros between them, not both
         * (a 'same' 3x3 pads 14-wide rows to 15, not 16: 7% of the work, not 14%). */
        int64_t right = g->OW - 1 + (g->kw - 1) * g->dw - g->pw - (g->W - 1);
        d.pwe = right > g->pw ? right : g->pw;
        d.Wq = g->W + d.pwe > g->OW ? g->W + d.pwe : g->OW; /* padding wider than the kernel */
    }
    d.phsz = d.Hph * d.Wq;
    d.cstride = sh * sw * d.phsz;
    d.Lq = (g->OH - 1) * d.Wq + g->OW, d.ntq = (d.Lq + 31) / 32;
    /* garbage lanes read past the last plane by up to 32 + Wq floats */
    d.plane_floats = (j->C * d.cstride + 64 + d.Wq + 15) & ~(int64_t)15;
    d.nchunk = j->N >= MAX_BLOCKS ? 1 : (MAX_BLOCKS + j->N - 1) / j->N;
    if (d.nchunk > d.ntq) d.nchunk = d.ntq;
    int64_t blocks = 0;
    for (int64_t r0 = 0; r0 < j->og; r0 += direct_mr(j->og - r0)) blocks += direct_mr(j->og - r0);
    int nt = pf_threads_for(j->N * j->O * j->L * j->R / 4);
    if (nt > j->N * d.nchunk) nt = (int)(j->N * d.nchunk);
    size_t tile_bytes = d.tile_bytes = ((size_t)(d.ntq + 1) * 12 + 7) & ~(size_t)7;
    size_t bytes = (size_t)(d.K * 8) + (size_t)(j->G * blocks * d.K + j->O) * 4 + (size_t)nt * d.plane_floats * 4 + 64 +
                   (size_t)nt * tile_bytes + 8;
    char *buf = pf_alloc(bytes);
    if (!buf) return pf_error(PF_ERR_NOMEM, "conv2d: out of memory for %lld bytes of buffers", (long long)bytes);
    int64_t *off = (int64_t *)buf;
    float *apack = (float *)(off + d.K), *biasf = apack + j->G * blocks * d.K;
    float *planes = (float *)(((uintptr_t)(biasf + j->O) + 63) & ~(uintptr_t)63);
    for (int64_t c = 0, k = 0; c < j->cg; c++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++, k++) {
                int64_t dy = ki * g->dh, dx = kj * g->dw + d.pwe - g->pw;
                off[k] = c * d.cstride + (dy % sh * sw + dx % sw) * d.phsz + dy / sh * d.Wq + dx / sw;
            }
    d.apack = apack;
    int64_t nbk = 0;
    for (int64_t r0 = 0; r0 < j->og; r0 += direct_mr(j->og - r0)) nbk++;
    pf_parallel_range(pf_threads_for(j->O * d.K), j->G * nbk, pack_rows, &d);
    if (j->bias)
        for (int64_t o = 0; o < j->O; o++) biasf[o] = (float)pf_load_f64(j->bias + o * j->bs * j->es, j->dt);
    for (int i = 0; i < nt; i++) /* the slack the planes do not cover */
        memset(planes + (size_t)i * d.plane_floats + j->C * d.cstride, 0,
               (size_t)(d.plane_floats - j->C * d.cstride) * 4);
    d.off = off, d.biasf = j->bias ? biasf : NULL, d.planes = planes;
    d.tiles = (char *)(((uintptr_t)(planes + (size_t)nt * d.plane_floats) + 7) & ~(uintptr_t)7);
    pf_run_team(nt, direct_thread, &d);
    pf_free(buf);
    return PF_OK;
}

/* grad_x = conv2d(grad_out, w') for stride 1, with w'[g*cg + c, o, i, k] = w[g*og + o, c,
 * kh-1-i, kw-1-k]: input position h reads output h + p - i*d, so flipping the taps and
 * padding by (k-1)*d - p turns the adjoint into a plain correlation. */
typedef struct {
    const float *w;
    float *wf;
    int64_t cg, og, kk;
} flip_job;

/* rows [c0, c1) of w' (x's channels over all groups), in blocks of 64 of w's rows: a block's rows are
 * read as 64 sequential streams (row by row, every c read 512 lines 18 KB apart: 0.8 GB/s) */
static void flip_rows(void *arg, int64_t c0, int64_t c1) {
    const flip_job *f = arg;
    const int64_t cg = f->cg, og = f->og, kk = f->kk;
    for (int64_t gi = c0 / cg; gi * cg < c1; gi++) {
        int64_t r0 = gi * cg > c0 ? gi * cg : c0, r1 = (gi + 1) * cg < c1 ? (gi + 1) * cg : c1;
        for (int64_t o0 = 0; o0 < og; o0 += 64) {
            int64_t o1 = og - o0 < 64 ? og : o0 + 64;
            for (int64_t r = r0; r < r1; r++) {
                const float *src = f->w + ((gi * og) * cg + r - gi * cg) * kk;
                float *dst = f->wf + r * og * kk;
                if (kk == 9) /* 3x3: unrolled, no loop over 9 taps per o */
                    for (int64_t o = o0; o < o1; o++) {
                        const float *s = src + o * cg * 9;
                        float *d = dst + o * 9;
                        d[0] = s[8], d[1] = s[7], d[2] = s[6], d[3] = s[5], d[4] = s[4], d[5] = s[3], d[6] = s[2];
                        d[7] = s[1], d[8] = s[0];
                    }
                else
                    for (int64_t o = o0; o < o1; o++)
                        for (int64_t t = 0; t < kk; t++) dst[o * kk + t] = src[o * cg * kk + kk - 1 - t];
            }
        }
    }
}

int pf_conv_grad_x_direct(const pf_tensor *gy, const pf_tensor *w, pf_tensor *gx, const conv_job *j, int copy,
                          int *done) {
    const int64_t kh = j->g.kh, kw = j->g.kw, kk = j->kk, og = j->og;
    /* the per-tap path reads the weight flipped in place: no copy */
    pf_tensor wv = {.data = w->data, .dtype = PF_FLOAT32, .ndim = 4, .shape = {j->C, og, kh, kw},
                    .strides = {og * kk, kk, kw, 1}};
    int rc = pf_conv2d_wflip(gy, &wv, gx, 1, 1, (int)((kh - 1) * j->g.dh - j->g.ph), (int)((kw - 1) * j->g.dw - j->g.pw),
                             (int)j->g.dh, (int)j->g.dw, (int)j->G, done);
    if (rc != PF_OK || *done || !copy) return rc;
    *done = 1;
    float *wf = pf_alloc((size_t)(j->O * j->R) * sizeof(float));
    if (!wf) return pf_error(PF_ERR_NOMEM, "conv2d_backward: out of memory for the flipped weight");
    /* by the team: a 512-channel 3x3 weight is 9.4 MB, about 2 ms on one thread */
    flip_job f = {(const float *)w->data, wf, j->cg, og, kk};
    pf_parallel_range(pf_threads_for(j->O * j->R), j->C, flip_rows, &f);
    pf_tensor wt = {.data = wf, .dtype = PF_FLOAT32, .ndim = 4, .shape = {j->C, og, kh, kw},
                    .strides = {og * kk, kk, kw, 1}};
    rc = pf_conv2d(gy, &wt, NULL, gx, 1, 1, (int)((kh - 1) * j->g.dh - j->g.ph),
                       (int)((kw - 1) * j->g.dw - j->g.pw), (int)j->g.dh, (int)j->g.dw, (int)j->G);
    pf_free(wf);
    return rc;
}

/* The wide unfold transposed, colt [lt, nc*kk]: the weight gradient's GEMM then reads it
 * in place instead of packing (transposing) the unfold. */
void pf_conv_cols_t(const conv_job *j, const float *xp, int64_t nc, int64_t psz, float *colt, int64_t q0,
                     int64_t lt) {
    const conv_geom *g = &j->g;
    const int64_t kk = j->kk, R = nc * kk;
    const float *rows[16];
    for (int64_t r0 = 0; r0 < R; r0 += 16) {
        int nr = R - r0 < 16 ? (int)(R - r0) : 16;
        for (int i = 0; i < nr; i++) {
            int64_t r = r0 + i, t = r % kk;
            rows[i] = xp + r / kk * psz + q0 + t / g->kw * g->dh * j->Wp + t % g->kw * g->dw;
        }
        pf_transpose_rows_f32(rows, nr, nr, lt, colt + r0, R);
    }
}
#endif
