/* attention.c: scaled dot-product attention forward (output and the kept weights) and backward
 * against a double reference, causal or not, with dropout or not (the reference takes its mask
 * from pf_random's Bernoulli draw of the weights' shape at the same seed and offset), more or
 * fewer keys than queries, rows spaced out in memory, float32 and float64, serial and threaded
 * sizes, several row blocks; bad input. */
#include <math.h>
#include <stdlib.h>
#include "core.h"
#include "check.h"

/* [B, R, C] over fresh memory whose rows are `pad` elements longer than C; random values */
static pf_tensor mat(int dt, int64_t B, int64_t R, int64_t C, int64_t pad, unsigned *seed) {
    int64_t rs = C + pad;
    pf_tensor t = {.data = calloc((size_t)(B * R * rs + 1), pf_dtype_size[dt]), .dtype = dt, .ndim = 3,
                   .shape = {B, R, C}, .strides = {R * rs, rs, 1}};
    for (int64_t i = 0; i < B * R * rs; i++) pf_store_f64((char *)t.data + i * pf_dtype_size[dt], dt, frand(seed));
    return t;
}

static double at(const pf_tensor *t, int64_t b, int64_t r, int64_t c) {
    return pf_load_f64((const char *)t->data + (b * t->strides[0] + r * t->strides[1] + c) * pf_dtype_size[t->dtype],
                       t->dtype);
}

/* worst error relative to max(1, |reference|) over out, the weights and the three gradients */
static double att_case(int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, int causal, int64_t pad,
                       double drop) {
    unsigned seed = 21;
    pf_tensor q = mat(dt, B, L, E, pad, &seed), k = mat(dt, B, S, E, pad, &seed), v = mat(dt, B, S, Ev, pad, &seed);
    pf_tensor g = mat(dt, B, L, Ev, pad, &seed), out = mat(dt, B, L, Ev, 0, &seed), p = mat(dt, B, L, S, 0, &seed);
    pf_tensor gq = mat(dt, B, L, E, 0, &seed), gk = mat(dt, B, S, E, 0, &seed), gv = mat(dt, B, S, Ev, 0, &seed);
    double scale = 1 / sqrt((double)E), worst = 0, inv = 1 / (1 - drop);
    const uint64_t rseed = 77, roff = 1000003;
    /* the kernel's kept mask (written over the keys each query sees) and the reference's own draw */
    pf_tensor kept = {.data = malloc((size_t)(B * L * S) + 1), .dtype = PF_BOOL, .ndim = 3, .shape = {B, L, S},
                      .strides = {L * S, S, 1}};
    CHECK_OK(pf_attention(&q, &k, &v, &out, &p, scale, causal, drop, rseed, roff, drop > 0 ? &kept : NULL));
    CHECK_OK(pf_attention_backward(&g, &q, &k, &v, &p, &gq, &gk, &gv, scale, causal, drop, drop > 0 ? &kept : NULL));
    pf_tensor keep = {.data = malloc((size_t)(B * L * S) + 1), .dtype = PF_BOOL, .ndim = 3, .shape = {B, L, S},
                      .strides = {L * S, S, 1}};
    CHECK_OK(pf_random(PF_RAND_BERNOULLI, &keep, rseed, roff, 1 - drop, 0));
    const unsigned char *kp = keep.data;
    double *P = malloc(sizeof(double) * (size_t)(L * S)), *dS = malloc(sizeof(double) * (size_t)(L * S));
    double *W = malloc(sizeof(double) * (size_t)(L * S));
#define CLOSE(got, want) worst = fmax(worst, fabs((got) - (want)) / fmax(1, fabs(want)))
    for (int64_t b = 0; b < B; b++) {
        for (int64_t i = 0; i < L; i++) {
            int64_t ns = causal ? (i + 1 < S ? i + 1 : S) : S; /* keys j <= i when causal, top-left aligned */
            double m = -INFINITY, z = 0, rowdot = 0;
            for (int64_t j = 0; j < ns; j++) {
                double s = 0;
                for (int64_t e = 0; e < E; e++) s += at(&q, b, i, e) * at(&k, b, j, e);
                P[i * S + j] = s * scale, m = fmax(m, s * scale);
            }
            for (int64_t j = 0; j < S; j++) P[i * S + j] = j < ns ? exp(P[i * S + j] - m) : 0, z += P[i * S + j];
            for (int64_t j = 0; j < S; j++) P[i * S + j] /= z, CLOSE(at(&p, b, i, j), P[i * S + j]);
            for (int64_t j = 0; j < S; j++) W[i * S + j] = kp[(b * L + i) * S + j] ? P[i * S + j] * inv : 0;
            for (int64_t j = 0; drop > 0 && j < ns; j++) /* the kept mask is that draw on the keys seen */
                if (((const unsigned char *)kept.data)[(b * L + i) * S + j] != kp[(b * L + i) * S + j]) worst = 1e9;
            for (int64_t e = 0; e < Ev; e++) {
                double o = 0;
                for (int64_t j = 0; j < S; j++) o += W[i * S + j] * at(&v, b, j, e);
                CLOSE(at(&out, b, i, e), o);
            }
            for (int64_t j = 0; j < S; j++) { /* dP = g V^T, then dS = P (dP - rowsum(P dP)) */
                double dp = 0;
                for (int64_t e = 0; e < Ev; e++) dp += at(&g, b, i, e) * at(&v, b, j, e);
                dp = kp[(b * L + i) * S + j] ? dp * inv : 0;
                dS[i * S + j] = dp, rowdot += P[i * S + j] * dp;
            }
            for (int64_t j = 0; j < S; j++) dS[i * S + j] = P[i * S + j] * (dS[i * S + j] - rowdot);
        }
        for (int64_t i = 0; i < L; i++)
            for (int64_t e = 0; e < E; e++) {
                double s = 0;
                for (int64_t j = 0; j < S; j++) s += dS[i * S + j] * at(&k, b, j, e);
                CLOSE(at(&gq, b, i, e), scale * s);
            }
        for (int64_t j = 0; j < S; j++) {
            for (int64_t e = 0; e < E; e++) {
                double s = 0;
                for (int64_t i = 0; i < L; i++) s += dS[i * S + j] * at(&q, b, i, e);
                CLOSE(at(&gk, b, j, e), scale * s);
            }
            for (int64_t e = 0; e < Ev; e++) {
                double s = 0;
                for (int64_t i = 0; i < L; i++) s += W[i * S + j] * at(&g, b, i, e);
                CLOSE(at(&gv, b, j, e), s);
            }
        }
    }
#undef CLOSE
    pf_tensor *all[] = {&q, &k, &v, &g, &out, &p, &gq, &gk, &gv};
    for (int t = 0; t < 9; t++) free(all[t]->data);
    free(P), free(dS), free(W), free(keep.data), free(kept.data);
    return worst;
}

static void test_values(void) {
    /* B, L, S, E, Ev: square, more keys, fewer keys (causal rows past the last key), one key, threaded */
    const int64_t shapes[][5] = {{3, 5, 5, 4, 3},   {2, 4, 9, 8, 5},      {2, 9, 4, 3, 6},
                                 {4, 3, 1, 2, 2},   {16, 64, 64, 32, 32}, {2, 150, 140, 16, 8},
                                 {1, 70, 200, 8, 0}};
    pf_set_num_threads(2);
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int f = 0; f < 8; f++) {
                const int64_t *h = shapes[s];
                double drop = f >> 2 ? 0.3 : 0.0;
                double err = att_case(dt, h[0], h[1], h[2], h[3], h[4], f & 1, f >> 1 & 1 ? 3 : 0, drop);
                CHECK(err < (dt == PF_FLOAT32 ? 2e-5 : 1e-12),
                      "attention %s shape %zu causal=%d spaced=%d dropout=%g: %g", pf_dtype_name[dt], s, f & 1,
                      f >> 1 & 1, drop, err);
            }
    pf_set_num_threads(0);
}

static void test_bad_input(void) {
    unsigned seed = 1;
    pf_tensor q = mat(PF_FLOAT32, 2, 3, 4, 0, &seed), k = mat(PF_FLOAT32, 2, 5, 4, 0, &seed);
    pf_tensor v = mat(PF_FLOAT32, 2, 5, 2, 0, &seed), out = mat(PF_FLOAT32, 2, 3, 2, 0, &seed);
    pf_tensor p = mat(PF_FLOAT32, 2, 3, 5, 0, &seed);
    CHECK_OK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, 0.0, 0, 0, NULL));
    pf_tensor kd = k;
    kd.dtype = PF_FLOAT64;
    CHECK(pf_attention(&q, &kd, &v, &out, &p, 0.5, 0, 0.0, 0, 0, NULL) == PF_ERR_TYPE, "key of another dtype");
    pf_tensor ki = k;
    ki.shape[2] = 3;
    CHECK(pf_attention(&q, &ki, &v, &out, &p, 0.5, 0, 0.0, 0, 0, NULL) == PF_ERR_VALUE, "key's E differs");
    pf_tensor ks = k;
    ks.strides[2] = 2;
    CHECK(pf_attention(&q, &ks, &v, &out, &p, 0.5, 0, 0.0, 0, 0, NULL) == PF_ERR_VALUE, "key's last dim strided");
    pf_tensor k0 = k, v0 = v, p0 = p;
    k0.shape[1] = v0.shape[1] = p0.shape[2] = 0;
    CHECK(pf_attention(&q, &k0, &v0, &out, &p0, 0.5, 0, 0.0, 0, 0, NULL) == PF_ERR_VALUE, "no keys");
    pf_tensor qi = q;
    qi.dtype = PF_INT32;
    CHECK(pf_attention(&qi, &k, &v, &out, &p, 0.5, 0, 0.0, 0, 0, NULL) == PF_ERR_TYPE, "int32 query");
    CHECK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, 1.0, 0, 0, NULL) == PF_ERR_VALUE, "dropout_p 1");
    CHECK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, -0.1, 0, 0, NULL) == PF_ERR_VALUE, "negative dropout_p");
    CHECK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, NAN, 0, 0, NULL) == PF_ERR_VALUE, "NaN dropout_p");
    CHECK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, 0.5, 0, 0, NULL) == PF_ERR_VALUE, "dropout without a mask");
    CHECK(pf_attention(&q, &k, &v, &out, &p, 0.5, 0, 0.5, 0, 0, &p) == PF_ERR_VALUE, "a float mask");
    free(q.data), free(k.data), free(v.data), free(out.data), free(p.data);
}

int main(void) {
    test_values();
    test_bad_input();
    return pf_test_summary("test_attention");
}
