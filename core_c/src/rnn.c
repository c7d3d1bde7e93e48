/* An LSTM layer over a whole sequence, forward and backward, one call each way.
 *
 * The op-by-op step (a GEMM, an add, four activations, a cell update, each a Python call and a
 * new tensor, and twice as many back) costs more than its arithmetic at language-model sizes;
 * here the time loop runs in C: per step one product h W_hh^T (pf_mm, threaded when large) and
 * one pass over the gates that adds the input half and the bias, activates, and updates c and h
 * in place. Forward keeps the activated gates and every c for backward; backward walks the steps
 * in reverse, writing each step's gate gradient and carrying dh (one product dG_t W_hh) and dc.
 * The weight gradient dG^T [h0; h_1..h_{L-1}] is one GEMM over all steps, left to the caller.
 * Gates are (i, f, g, o) as torch lays them out. */
#include "core.h"

#define LSTM_KERNELS(T, SUF, SIG, TANH)                                                                 \
    /* one step: gates = xw + hw (+ b); c = f c_prev + i g; h = o tanh(c) */                          \
    PF_VEC_CLONES static void cell_fwd_##SUF(int64_t N, int64_t H, const T *xw, const T *hw, const T *b, \
                                             const T *cp, T *c, T *h, T *act) {                         \
        for (int64_t n = 0; n < N; n++) {                                                             \
            const T *x = xw + n * 4 * H, *y = hw + n * 4 * H;                                         \
            T *a = act ? act + n * 4 * H : NULL;                                                      \
            for (int64_t j = 0; j < H; j++) {                                                         \
                T zi = x[j] + y[j], zf = x[H + j] + y[H + j], zg = x[2 * H + j] + y[2 * H + j],       \
                  zo = x[3 * H + j] + y[3 * H + j];                                                   \
                if (b) zi += b[j], zf += b[H + j], zg += b[2 * H + j], zo += b[3 * H + j];            \
                T i = SIG(zi), f = SIG(zf), g = TANH(zg), o = SIG(zo);                                \
                T cn = f * cp[n * H + j] + i * g;                                                     \
                c[n * H + j] = cn;                                                                    \
                h[n * H + j] = o * TANH(cn);                                                          \
                if (a) a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;                    \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    /* one step back: dh (this step's h gradient, all of it) and dc (carried) in; the gate           \
     * gradient dg out and dc replaced by the gradient of c_prev */                                 \
    PF_VEC_CLONES static void cell_bwd_##SUF(int64_t N, int64_t H, const T *act, const T *c, const T *cp, \
                                             const T *dh, T *dc, T *dg) {                             \
        for (int64_t n = 0; n < N; n++) {                                                             \
            const T *a = act + n * 4 * H;                                                             \
            T *d = dg + n * 4 * H;                                                                    \
            for (int64_t j = 0; j < H; j++) {                                                         \
                int64_t k = n * H + j;                                                                \
                T i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];                         \
                T tc = TANH(c[k]), gh = dh[k];                                                        \
                T gc = dc[k] + gh * o * (1 - tc * tc);                                                \
                d[j] = gc * g * i * (1 - i);                                                          \
                d[H + j] = gc * cp[k] * f * (1 - f);                                                  \
                d[2 * H + j] = gc * i * (1 - g * g);                                                  \
                d[3 * H + j] = gh * tc * o * (1 - o);                                                 \
                dc[k] = gc * f;                                                                       \
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

int pf_lstm_forward(int dtype, int64_t L, int64_t N, int64_t H, const void *xw, const void *w_hh, const void *b_hh,
                    const void *h0, const void *c0, void *out, void *cs, void *acts, void *hw) {
    int rc = check_sizes(dtype, L, N, H, "lstm_forward");
    if (rc) return rc;
    if (!L || !N || !H) return PF_OK;
    if (!xw || !w_hh || !h0 || !c0 || !out || !cs || !hw)
        return pf_error(PF_ERR_VALUE, "lstm_forward(): a NULL input or output buffer");
    size_t es = pf_dtype_size[dtype];
    int64_t nh = N * H, ng = 4 * N * H;
    for (int64_t t = 0; t < L; t++) {
        const char *hp = t ? (const char *)out + (size_t)((t - 1) * nh) * es : h0;
        const char *cp = t ? (const char *)cs + (size_t)((t - 1) * nh) * es : c0;
        /* hw [N, 4H] = h_prev [N, H] @ W_hh^T (W_hh [4H, H] read transposed in place) */
        if ((rc = pf_mm(dtype, N, 4 * H, H, hp, H, 1, w_hh, 1, H, hw))) return rc;
        const char *x = (const char *)xw + (size_t)(t * ng) * es;
        char *c = (char *)cs + (size_t)(t * nh) * es, *h = (char *)out + (size_t)(t * nh) * es;
        char *a = acts ? (char *)acts + (size_t)(t * ng) * es : NULL;
        if (dtype == PF_FLOAT32)
            cell_fwd_f32(N, H, (const float *)x, hw, b_hh, (const float *)cp, (float *)c, (float *)h, (float *)a);
        else
            cell_fwd_f64(N, H, (const double *)x, hw, b_hh, (const double *)cp, (double *)c, (double *)h,
                         (double *)a);
    }
    return PF_OK;
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
            cell_bwd_f32(N, H, (const float *)a, (const float *)c, (const float *)cp, dh0, dc0, (float *)dg);
        else
            cell_bwd_f64(N, H, (const double *)a, (const double *)c, (const double *)cp, dh0, dc0, (double *)dg);
        /* dh of h_{t-1} [N, H] = dG_t [N, 4H] @ W_hh [4H, H] */
        if ((rc = pf_mm(dtype, N, H, 4 * H, dg, 4 * H, 1, w_hh, H, 1, dh0))) return rc;
    }
    return PF_OK;
}
