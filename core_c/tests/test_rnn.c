/* rnn.c: the LSTM layer forward against a double reference step loop (float64 and float32, with
 * and without b_hh), backward against central differences of forward in float64 (every entry of
 * xw, h0 and c0, gradients flowing from out, h_n and c_n or only some of them); float32 at sizes
 * whose units do not fill the packed path's 16-unit panels and whose rows do not fill its tiles,
 * against float64 forward and backward, on every kernel set; bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

enum { L = 4, N = 3, H = 5, G = 4 * H };

static double sig(double x) { return 1 / (1 + exp(-x)); }

/* reference forward in double: out [L, N, H], cs [L, N, H] */
static void ref_forward(const double *xw, const double *w, const double *b, const double *h0, const double *c0,
                        double *out, double *cs) {
    for (int t = 0; t < L; t++) {
        const double *hp = t ? out + (t - 1) * N * H : h0, *cp = t ? cs + (t - 1) * N * H : c0;
        for (int n = 0; n < N; n++)
            for (int j = 0; j < H; j++) {
                double z[4];
                for (int q = 0; q < 4; q++) {
                    int r = q * H + j;
                    z[q] = xw[(t * N + n) * G + r] + (b ? b[r] : 0);
                    for (int k = 0; k < H; k++) z[q] += hp[n * H + k] * w[r * H + k];
                }
                double c = sig(z[1]) * cp[n * H + j] + sig(z[0]) * tanh(z[2]);
                cs[(t * N + n) * H + j] = c;
                out[(t * N + n) * H + j] = sig(z[3]) * tanh(c);
            }
    }
}

static double buf[6][L * N * G];

static void fill(double *p, int n, unsigned *seed, double scale) {
    for (int i = 0; i < n; i++) p[i] = scale * frand(seed);
}

static void test_forward(void) {
    unsigned seed = 3;
    double *xw = buf[0], *w = buf[1], *b = buf[2], *h0 = buf[3], *c0 = buf[4];
    fill(xw, L * N * G, &seed, 2);
    fill(w, G * H, &seed, 0.5);
    fill(b, G, &seed, 1);
    fill(h0, N * H, &seed, 1);
    fill(c0, N * H, &seed, 1);
    double ro[L * N * H], rc[L * N * H];
    for (int with_b = 0; with_b < 2; with_b++) {
        ref_forward(xw, w, with_b ? b : NULL, h0, c0, ro, rc);
        double out[L * N * H], cs[L * N * H], acts[L * N * G], hw[N * G];
        CHECK_OK(pf_lstm_forward(PF_FLOAT64, L, N, H, xw, w, with_b ? b : NULL, h0, c0, out, cs, acts, hw));
        double worst = 0;
        for (int i = 0; i < L * N * H; i++) worst = fmax(worst, fmax(fabs(out[i] - ro[i]), fabs(cs[i] - rc[i])));
        CHECK(worst < 1e-12, "float64 forward off by %g", worst);
        /* float32, and without acts (inference) */
        float fx[L * N * G], fw[G * H], fb[G], fh[N * H], fc[N * H], fo[L * N * H], fcs[L * N * H], fhw[N * G];
        for (int i = 0; i < L * N * G; i++) fx[i] = (float)xw[i];
        for (int i = 0; i < G * H; i++) fw[i] = (float)w[i];
        for (int i = 0; i < G; i++) fb[i] = (float)b[i];
        for (int i = 0; i < N * H; i++) fh[i] = (float)h0[i], fc[i] = (float)c0[i];
        CHECK_OK(pf_lstm_forward(PF_FLOAT32, L, N, H, fx, fw, with_b ? fb : NULL, fh, fc, fo, fcs, NULL, fhw));
        worst = 0;
        for (int i = 0; i < L * N * H; i++) worst = fmax(worst, fmax(fabs(fo[i] - ro[i]), fabs(fcs[i] - rc[i])));
        CHECK(worst < 2e-5, "float32 forward off by %g", worst);
    }
}

/* loss = sum(R * out) + sum(Rh * h_n) + sum(Rc * c_n), any weight set may be NULL */
static double loss_of(const double *xw, const double *w, const double *b, const double *h0, const double *c0,
                      const double *R, const double *Rh, const double *Rc) {
    double out[L * N * H], cs[L * N * H], s = 0;
    ref_forward(xw, w, b, h0, c0, out, cs);
    for (int i = 0; i < L * N * H; i++) s += R ? R[i] * out[i] : 0;
    for (int i = 0; i < N * H; i++)
        s += (Rh ? Rh[i] * out[(L - 1) * N * H + i] : 0) + (Rc ? Rc[i] * cs[(L - 1) * N * H + i] : 0);
    return s;
}

static double central(double *v, const double *xw, const double *w, const double *b, const double *h0,
                      const double *c0, const double *R, const double *Rh, const double *Rc) {
    double keep = *v, e = 1e-6;
    *v = keep + e;
    double up = loss_of(xw, w, b, h0, c0, R, Rh, Rc);
    *v = keep - e;
    double down = loss_of(xw, w, b, h0, c0, R, Rh, Rc);
    *v = keep;
    return (up - down) / (2 * e);
}

static void test_backward(void) {
    unsigned seed = 7;
    double *xw = buf[0], *w = buf[1], *b = buf[2], *h0 = buf[3], *c0 = buf[4], *R = buf[5];
    double Rh[N * H], Rc[N * H];
    fill(R, L * N * H, &seed, 1);
    fill(Rh, N * H, &seed, 1);
    fill(Rc, N * H, &seed, 1);
    for (int which = 0; which < 3; which++) { /* all three gradients; out only; c_n only */
        const double *gr = which == 2 ? NULL : R, *gh = which == 0 ? Rh : NULL, *gc = which == 1 ? NULL : Rc;
        double out[L * N * H], cs[L * N * H], acts[L * N * G], hw[N * G], dg[L * N * G], dh0[N * H], dc0[N * H];
        CHECK_OK(pf_lstm_forward(PF_FLOAT64, L, N, H, xw, w, b, h0, c0, out, cs, acts, hw));
        CHECK_OK(pf_lstm_backward(PF_FLOAT64, L, N, H, w, c0, cs, acts, gr, gh, gc, dg, dh0, dc0));
        double worst = 0;
        for (int i = 0; i < L * N * G; i++)
            worst = fmax(worst, fabs(dg[i] - central(&xw[i], xw, w, b, h0, c0, gr, gh, gc)));
        for (int i = 0; i < N * H; i++) {
            worst = fmax(worst, fabs(dh0[i] - central(&h0[i], xw, w, b, h0, c0, gr, gh, gc)));
            worst = fmax(worst, fabs(dc0[i] - central(&c0[i], xw, w, b, h0, c0, gr, gh, gc)));
        }
        CHECK(worst < 1e-7, "backward (case %d) off by %g from central differences", which, worst);
    }
}

/* float32 (the packed path on AVX-512, the per-step product elsewhere) against float64 at sizes
 * with a partial last panel (H % 16), partial row tiles (N % 6) and several panels per thread */
static void test_float32_sizes(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {1, 1, 17}, {3, 7, 37}, {2, 13, 20}, {4, 20, 70}, {2, 2, 129}};
    const char *paths[] = {"avx512", "avx2", "portable"};
    for (int pi = 0; pi < 3; pi++) {
        if (!pf_cpu_supports(paths[pi])) continue;
        CHECK_OK(pf_gemm_select(paths[pi]));
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            int64_t l = shapes[si][0], n = shapes[si][1], h = shapes[si][2], g = 4 * h;
            size_t nx = (size_t)(l * n * g), nw = (size_t)(g * h), ns = (size_t)(n * h), no = (size_t)(l * n * h);
            double *d = malloc(sizeof(double) * (4 * nx + nw + g + 4 * ns + 3 * no + n * g));
            float *f = malloc(sizeof(float) * (4 * nx + nw + g + 4 * ns + 3 * no + n * g));
            double *dx = d, *dw = dx + nx, *db = dw + nw, *dh0 = db + g, *dc0 = dh0 + ns, *dout = dc0 + ns,
                   *dcs = dout + no, *dacts = dcs + no, *dgo = dacts + nx, *ddg = dgo + no, *dgh = ddg + nx,
                   *dgc = dgh + ns, *dhw = dgc + ns;
            float *fx = f, *fw = fx + nx, *fb = fw + nw, *fh0 = fb + g, *fc0 = fh0 + ns, *fout = fc0 + ns,
                  *fcs = fout + no, *facts = fcs + no, *fgo = facts + nx, *fdg = fgo + no, *fgh = fdg + nx,
                  *fgc = fgh + ns, *fhw = fgc + ns;
            unsigned seed = 11 + (unsigned)si;
            fill(dx, (int)nx, &seed, 2);
            fill(dw, (int)nw, &seed, 2 / sqrt((double)h));
            fill(db, (int)g, &seed, 1);
            fill(dh0, (int)ns, &seed, 1);
            fill(dc0, (int)ns, &seed, 1);
            fill(dgo, (int)no, &seed, 1);
            fill(dgh, (int)ns, &seed, 1);
            fill(dgc, (int)ns, &seed, 1);
            /* round the inputs to float32 first, so both runs see the same numbers */
            for (size_t i = 0; i < nx; i++) fx[i] = (float)dx[i], dx[i] = fx[i];
            for (size_t i = 0; i < nw; i++) fw[i] = (float)dw[i], dw[i] = fw[i];
            for (int64_t i = 0; i < g; i++) fb[i] = (float)db[i], db[i] = fb[i];
            for (size_t i = 0; i < ns; i++) {
                fh0[i] = (float)dh0[i], dh0[i] = fh0[i], fc0[i] = (float)dc0[i], dc0[i] = fc0[i];
                fgh[i] = (float)dgh[i], dgh[i] = fgh[i], fgc[i] = (float)dgc[i], dgc[i] = fgc[i];
            }
            for (size_t i = 0; i < no; i++) fgo[i] = (float)dgo[i], dgo[i] = fgo[i];
            CHECK_OK(pf_lstm_forward(PF_FLOAT64, l, n, h, dx, dw, db, dh0, dc0, dout, dcs, dacts, dhw));
            CHECK_OK(pf_lstm_forward(PF_FLOAT32, l, n, h, fx, fw, fb, fh0, fc0, fout, fcs, facts, fhw));
            double worst = 0;
            for (size_t i = 0; i < no; i++) worst = fmax(worst, fmax(fabs(fout[i] - dout[i]), fabs(fcs[i] - dcs[i])));
            CHECK(worst < 5e-5, "%s float32 forward L=%lld N=%lld H=%lld off by %g", paths[pi], (long long)l,
                  (long long)n, (long long)h, worst);
            double dgh0[4096], dgc0[4096];
            float fgh0[4096], fgc0[4096];
            CHECK_OK(pf_lstm_backward(PF_FLOAT64, l, n, h, dw, dc0, dcs, dacts, dgo, dgh, dgc, ddg, dgh0, dgc0));
            CHECK_OK(pf_lstm_backward(PF_FLOAT32, l, n, h, fw, fc0, fcs, facts, fgo, fgh, fgc, fdg, fgh0, fgc0));
            worst = 0;
            for (size_t i = 0; i < nx; i++) worst = fmax(worst, fabs(fdg[i] - ddg[i]));
            for (size_t i = 0; i < ns; i++) worst = fmax(worst, fmax(fabs(fgh0[i] - dgh0[i]), fabs(fgc0[i] - dgc0[i])));
            CHECK(worst < 2e-4, "%s float32 backward L=%lld N=%lld H=%lld off by %g", paths[pi], (long long)l,
                  (long long)n, (long long)h, worst);
            /* without acts (inference) the same h and c, bit for bit */
            float *o2 = malloc(sizeof(float) * 2 * no);
            CHECK_OK(pf_lstm_forward(PF_FLOAT32, l, n, h, fx, fw, NULL, fh0, fc0, o2, o2 + no, NULL, fhw));
            CHECK_OK(pf_lstm_forward(PF_FLOAT32, l, n, h, fx, fw, NULL, fh0, fc0, fout, fcs, facts, fhw));
            CHECK(!memcmp(o2, fout, sizeof(float) * no) && !memcmp(o2 + no, fcs, sizeof(float) * no),
                  "%s float32 forward without acts differs", paths[pi]);
            free(o2), free(d), free(f);
        }
    }
    CHECK_OK(pf_gemm_select("auto"));
}

static void test_bad_input(void) {
    double x[G] = {0}, w[G * H] = {0}, h[H] = {0}, c[H] = {0}, o[H], cs[H], hw[G];
    CHECK(pf_lstm_forward(PF_INT64, 1, 1, H, x, w, NULL, h, c, o, cs, NULL, hw) == PF_ERR_TYPE, "int64 accepted");
    CHECK(strstr(pf_last_error(), "float32 or float64") != NULL, "message: %s", pf_last_error());
    CHECK(pf_lstm_forward(PF_FLOAT64, 1, -1, H, x, w, NULL, h, c, o, cs, NULL, hw) == PF_ERR_VALUE, "N < 0");
    CHECK(pf_lstm_forward(PF_FLOAT64, 1, 1, H, x, NULL, NULL, h, c, o, cs, NULL, hw) == PF_ERR_VALUE, "no w_hh");
    CHECK(pf_lstm_backward(PF_FLOAT64, 1, 1, H, w, c, cs, NULL, NULL, NULL, NULL, x, h, c) == PF_ERR_VALUE,
          "no acts");
    CHECK_OK(pf_lstm_forward(PF_FLOAT64, 0, 1, H, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
}

int main(void) {
    test_forward();
    test_backward();
    test_float32_sizes();
    test_bad_input();
    return pf_test_summary("test_rnn");
}
