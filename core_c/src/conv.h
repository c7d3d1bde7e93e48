/* Shared by the convolution files: conv.c (unfold and fold, and the geometry checks),
 * conv2d.c (the op: its tiled unfold + GEMM path and the entry points), conv_direct.c
 * (its AVX-512 float32 kernels, which never build the unfold), conv_weight_grad.c and
 * conv_taps.c (small planes on the AVX2 kernels, skipping the taps in the padding); pool.c
 * takes the window geometry. */
#ifndef PF_CONV_H
#define PF_CONV_H
#include "core.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_DIRECT 1 /* conv_direct.c's kernels, taken when the GEMM path is avx512 */
#endif

typedef struct {
    int64_t H, W, OH, OW;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    /* element strides: x over (h, w), col over (row, output position) */
    int64_t xsh, xsw, csr, csp;
} conv_geom;

/* The windows over an H x W plane: checks kernel, stride and dilation >= 1, padding >= 0 (with
 * half_pad also at most half the dilated kernel, torch's pooling rule, so every window holds an
 * input) and at least one output; fills g but for its strides. `fn` names the op in messages. */
int pf_window_geometry(const char *fn, int64_t H, int64_t W, int kh, int kw, int sh, int sw, int ph, int pw, int dh,
                       int dw, int half_pad, conv_geom *g);
/* Validates an unfold of x into col and fills g; `fn` names the op in messages. */
int pf_conv_geometry(const char *fn, const pf_tensor *x, const pf_tensor *col, int kh, int kw, int sh, int sw,
                     int ph, int pw, int dh, int dw, conv_geom *g);

/* Weight-gradient partials: one per block of samples, summed in block order afterwards,
 * so the result does not depend on how many threads ran (nor on the busy-machine
 * fallback). At most this many blocks; the direct forward splits small batches as finely. */
#define MAX_BLOCKS 8

/* One conv2d call, forward or backward, shared by its threads. Work items never share
 * an output element: forward items are (sample, tile of output positions); backward items
 * are (block of samples, group, block of the group's input channels), each owning its
 * samples' grad_x planes for those channels and its block's weight-gradient partial. */
typedef struct {
    conv_geom g;
    int dt, wide, padded; /* wide: stride 1; padded: the wide path needs a padded copy of x */
    int cols_t;           /* wide float32 on AVX-512: the weight gradient's unfold built transposed */
    int dense;            /* tiles over the batch's positions n*L + p (small images, see dense_wins) */
    int64_t es, N, C, O, G, cg, og, kk, R, L, lt, ntiles;
    int64_t msub, mrows; /* forward: blocks of mrows output channels per group (dense: items are tile x group x block) */
    int64_t Hp, Wp, Lq; /* wide: padded plane, positions (the last row ends at OW) */
    const char *x, *w, *bias, *gy;
    int64_t xsn, xsc, bs;
    char *out, *gx, *gw; /* out: the output, or grad_w when partials are summed into it; gw: nblk partials
                          * [O, R] (or grad_w itself when nblk is 1) */
    int64_t nblk, nsub, csub; /* backward: sample blocks, channel blocks per group of csub channels */
    char *ws;
    const int32_t *tab; /* small planes: per tap and output position, where x is read (see build_taps), or NULL */
    int gather;          /* tab read by AVX-512 gathers */
    const int32_t *tabg; /* the same over grad_x's contiguous planes (tab itself when x's are contiguous) */
    char *wpk;          /* the weight packed once for every tile's GEMM (see pack_weight), or NULL */
    size_t wpk_each;    /* bytes per packed part: a group's weight, or (backward) a group's block of csub channels */
    int implicit;       /* dense float32 forward: B panels gathered from x per K block (pf_conv_pack_b) */
    int64_t pkc, pnr;   /* the weight pack's K block and panel width */
    size_t off_offs;    /* implicit: a tile's absolute offsets [kk, ltp] in the per-thread buffer */
    int err;            /* set (atomically) by a thread whose GEMM refused its pack */
    const char *gyq;    /* backward, wide: grad_out at wide positions [N, O, Lq] */
    const float *gyqt;  /* backward, wgt (AVX2): grad_out at wide positions, blocks of 16 channels [N, G, ogp / 16, Lq, 16] */
    int64_t ogp;        /* wgt: og rounded up to 16 */
    int64_t hq;         /* wgt of a strided layer: rows per phase plane (Wp their pitch, Lq their positions), else 0 */
    size_t off_gwt;     /* wgt: a thread's block of the weight gradient, transposed [csub * kk, ogp] */
    size_t ws_each, off_col, off_ct, off_gxp, off_gemm; /* per-thread buffer layout */
} conv_job;

/* conv.c: small planes (kernel taps x output positions at most 2^16) unfold and fold through a
 * table of where each tap's output position reads its plane, made once per call: pf_conv_taps
 * sets j->tab (and j->tabg over grad_x's contiguous planes, with grad) and returns what to
 * free, or NULL (tables left NULL) when the planes are too large or memory is short. Then the
 * rows [nc*kk, lt] (ld apart) of positions [p0, p0 + lt) of channels [0, nc) of planes xn
 * (channel stride j->xsc), and the reverse, added into contiguous planes gxn [nc, H, W]. */
int32_t *pf_conv_taps(conv_job *j, int grad);
void pf_conv_tab_unfold(const conv_job *j, const char *xn, int64_t nc, char *col, int64_t ld, int64_t p0, int64_t lt);
void pf_conv_tab_fold(const conv_job *j, const char *col, int64_t ld, char *gxn, int64_t nc, int64_t p0, int64_t lt);

#ifdef HAVE_DIRECT
/* conv_direct.c: the forward over j (x, w, bias, out and the geometry set), grad_x of a
 * stride-1 conv as the forward of grad_out with the flipped, transposed weight, and the
 * wide unfold transposed (colt [lt, nc*kk]) for the weight gradient's GEMM. */
int pf_conv_direct(conv_job *j, int sh, int sw);
/* conv.c: one K block of a tile's B panels for the GEMM straight from x: row k (channel k / kk
 * of xg, channel stride xsc; tap k % kk) at lane i reads xg[offs[(k % kk) * ltp + i]] (-1: a
 * zero); bp[(i / nr * kcur + k - pc) * nr + i % nr] for k in [pc, pc + kcur), i < ltp (a
 * multiple of nr, itself a multiple of 16). */
void pf_conv_pack_b(const float *xg, int64_t xsc, int64_t kk, const int32_t *offs, int64_t ltp, int64_t pc,
                    int64_t kcur, int64_t nr, float *bp);
/* *done 1 when gx was written: by the per-tap path (conv_taps.c), else, with copy, by a flipped copy
 * of the weight through pf_conv2d */
int pf_conv_grad_x_direct(const pf_tensor *gy, const pf_tensor *w, pf_tensor *gx, const conv_job *j, int copy,
                          int *done);
/* conv_taps.c: the forward of j (x, w, bias, out and the geometry set) on small planes as per-tap
 * products that skip the taps reading padding, or (not wflip) at most 64 output positions in the
 * batch, any stride, with the weight read in place (float32, AVX2 kernel set); *done 0, nothing
 * written, when it does not apply. wflip: j->w is the weight [Kc, M, kh, kw] of the conv whose
 * input gradient this is, read flipped and transposed. */
int pf_conv_taps_gemm(conv_job *j, int wflip, int *done);
/* conv_taps.c: grad_w of j (x, gy and the geometry set) on the same planes as per-tap products over
 * the positions that read each tap; *done 0, nothing written, when it does not apply. */
int pf_conv_taps_grad_w(conv_job *j, pf_tensor *grad_w, int *done);
/* conv2d.c: pf_conv2d of gy with that flipped weight read in place, when the per-tap path takes
 * it (*done 0 and nothing written otherwise) */
int pf_conv2d_wflip(const pf_tensor *gy, const pf_tensor *w, pf_tensor *gx, int sh, int sw, int ph, int pw, int dh,
                    int dw, int groups, int *done);
/* conv_weight_grad.c: grad_w of j (x, gy and the geometry set) as an implicit GEMM, float32 on
 * small planes with enough output channels; *done 0 (nothing written) when it does not apply. */
int pf_conv_grad_w_implicit(conv_job *j, pf_tensor *grad_w, int *done);
void pf_conv_cols_t(const conv_job *j, const float *xp, int64_t nc, int64_t psz, float *colt, int64_t q0, int64_t lt);
#endif
#endif
