/* rnn.c: the LSTM layer forward against a double reference step loop (float64 and float32, with
 * and without b_hh), backward against central differences of forward in float64 (every entry of
 * xw, h0 and c0, gradients flowing from out, h_n and c_n or only some of them); bad input. */
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
    test_bad_input();
    return pf_test_summary("test_rnn");
}
