/* elementwise.c against naive references: unary/binary ops per dtype, broadcasting and
 * strided operands, where, copy/cast, fill, arange/linspace, float16 round trips, errors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static int close_f(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

static void test_float16(void) {
    /* every finite half survives half -> float -> half */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pf_h2f((uint16_t)h);
        if (isnan(f)) continue;
        if (pf_f2h(f) != h) bad++;
    }
    CHECK(bad == 0, "%d halves did not round-trip", bad);
    CHECK(pf_f2h(65520.0f) == 0x7c00, "65520 should round to inf");
    CHECK(pf_f2h(1.0f + 1.0f / 2048) == 0x3c00, "ties round to even");
    CHECK(pf_h2f(0x0001) == ldexpf(1.0f, -24), "smallest subnormal");
}

static void test_unary(void) {
    enum { N = 100003 }; /* above the grain, odd length */
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)((i % 2001) - 1000) / 37.0f;
    int64_t shape[1] = {N};
    pf_tensor tx = pf_make(x, PF_FLOAT32, 1, shape), ty = pf_make(y, PF_FLOAT32, 1, shape);
    struct { int op; double (*ref)(double); } ops[] = {{PF_EXP, exp}, {PF_TANH, tanh}, {PF_SIN, sin}, {PF_ABS, fabs}};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        CHECK_OK(pf_unary(ops[k].op, &tx, &ty, 0, 0));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += !close_f(y[i], ops[k].ref(x[i]), 2e-6);
        CHECK(bad == 0, "op %d: %d wrong", ops[k].op, bad);
    }
    /* exp at its edges: overflow, underflow to subnormals and zero, nan */
    float edge[6] = {89.0f, -87.5f, -103.0f, -200.0f, NAN, 88.7f}, out[6];
    int64_t s6[1] = {6};
    pf_tensor te = pf_make(edge, PF_FLOAT32, 1, s6), to = pf_make(out, PF_FLOAT32, 1, s6);
    CHECK_OK(pf_unary_contig(PF_EXP, PF_FLOAT32, edge, out, 6));
    for (int i = 0; i < 6; i++) CHECK(close_f(out[i], expf(edge[i]), 2e-6), "exp(%g) = %g", edge[i], out[i]);
    /* predicates store exactly 0 or 1 (glibc's isinf returns -1 for -inf) */
    uint8_t pb[6];
    int64_t s6b[1] = {6};
    pf_tensor tpb = pf_make(pb, PF_BOOL, 1, s6b);
    float infs[6] = {INFINITY, -INFINITY, 1.0f, NAN, -0.0f, 3.0f};
    pf_tensor tinf = pf_make(infs, PF_FLOAT32, 1, s6b);
    CHECK_OK(pf_unary(PF_ISINF, &tinf, &tpb, 0, 0));
    CHECK(pb[0] == 1 && pb[1] == 1 && pb[2] == 0 && pb[3] == 0, "isinf stores %d %d %d %d", pb[0], pb[1], pb[2], pb[3]);
    CHECK_OK(pf_unary(PF_ISFINITE, &tinf, &tpb, 0, 0));
    CHECK(pb[0] == 0 && pb[2] == 1 && pb[3] == 0 && pb[4] == 1, "isfinite stores %d %d %d %d", pb[0], pb[2], pb[3], pb[4]);
    /* clamp with an open side, relu keeps nan */
    CHECK_OK(pf_unary(PF_CLAMP, &te, &to, -INFINITY, 0.0));
    CHECK(out[0] == 0.0f && out[1] == -87.5f && isnan(out[4]), "clamp");
    /* strided input: every other element */
    pf_tensor half = tx;
    half.shape[0] = N / 2;
    half.strides[0] = 2;
    pf_tensor yh = pf_make(y, PF_FLOAT32, 1, half.shape);
    CHECK_OK(pf_unary(PF_NEG, &half, &yh, 0, 0));
    int bad = 0;
    for (int i = 0; i < N / 2; i++) bad += y[i] != -x[2 * i];
    CHECK(bad == 0, "strided neg: %d wrong", bad);
    /* integer ops and predicates */
    int64_t iv[4] = {-3, 0, 7, INT64_MIN}, io[4];
    uint8_t bo[4];
    int64_t s4[1] = {4};
    pf_tensor ti = pf_make(iv, PF_INT64, 1, s4), tio = pf_make(io, PF_INT64, 1, s4), tb = pf_make(bo, PF_BOOL, 1, s4);
    CHECK_OK(pf_unary(PF_ABS, &ti, &tio, 0, 0));
    CHECK(io[0] == 3 && io[2] == 7 && io[3] == INT64_MIN, "int abs wraps like torch");
    CHECK_OK(pf_unary(PF_ISNAN, &ti, &tb, 0, 0));
    CHECK(!bo[0] && !bo[3], "int isnan");
    CHECK(pf_unary(PF_EXP, &ti, &tio, 0, 0) == PF_ERR_TYPE, "exp of int64 is a type error");
    CHECK(pf_unary(PF_ISNAN, &ti, &tio, 0, 0) == PF_ERR_TYPE, "predicate needs a bool output");
    CHECK(pf_unary(PF_POW_SCALAR, &ti, &tio, -1, 0) == PF_ERR_RUNTIME, "negative integer power");
    /* a whole exponent float32 cannot hold keeps its parity: -1 ** -(2**31 + 1) is -1 (float32 would round it to
     * the even 2**31), both through the unary row and the scalar entry */
    float pw[3] = {-1.0f, -0.0f, 2.0f}, po[3];
    int64_t s3[1] = {3};
    pf_tensor tpw = pf_make(pw, PF_FLOAT32, 1, s3), tpo = pf_make(po, PF_FLOAT32, 1, s3);
    CHECK_OK(pf_unary(PF_POW_SCALAR, &tpw, &tpo, -2147483649.0, 0));
    CHECK(po[0] == -1.0f && po[1] == -INFINITY && po[2] == 0.0f, "pow_scalar %g %g %g", po[0], po[1], po[2]);
    CHECK_OK(pf_binary_scalar(PF_POW, PF_FLOAT32, pw, 33554433.0, po, 3, 0));
    CHECK(po[0] == -1.0f && po[1] == -0.0f && signbit(po[1]) && po[2] == INFINITY, "pow scalar entry");
    CHECK_OK(pf_binary_scalar(PF_POW, PF_FLOAT32, pw, 3.0, po, 3, 0));
    CHECK(po[0] == -1.0f && po[2] == 8.0f, "pow scalar entry, small exponent");
    /* logit: open without eps (NaN outside [0, 1], infinities at its ends); with p1 != 0 clamped to [p0, 1 - p0] */
    double lx[5] = {-0.5, 0.0, 0.25, 1.0, NAN}, ly[5];
    int64_t s5[1] = {5};
    pf_tensor tlx = pf_make(lx, PF_FLOAT64, 1, s5), tly = pf_make(ly, PF_FLOAT64, 1, s5);
    CHECK_OK(pf_unary_contig(PF_LOGIT, PF_FLOAT64, lx, ly, 5));
    CHECK(isnan(ly[0]) && ly[1] == -INFINITY && close_f(ly[2], log(1.0 / 3.0), 1e-15) && ly[3] == INFINITY &&
              isnan(ly[4]), "logit %g %g %g %g %g", ly[0], ly[1], ly[2], ly[3], ly[4]);
    CHECK_OK(pf_unary(PF_LOGIT, &tlx, &tly, 0.1, 1));
    CHECK(close_f(ly[0], log(0.1 / 0.9), 1e-15) && close_f(ly[3], log(0.9 / 0.1), 1e-15) && isnan(ly[4]),
          "logit with eps %g %g %g", ly[0], ly[3], ly[4]);
    free(x);
    free(y);
}

static void test_binary(void) {
    /* [3, 1] op [1, 4] -> [3, 4], float64 */
    double a[3] = {1, 2, 3}, b[4] = {10, 20, 30, 40}, o[12];
    int64_t sa[2] = {3, 1}, sb[2] = {1, 4}, so[2] = {3, 4};
    pf_tensor ta = pf_make(a, PF_FLOAT64, 2, sa), tb = pf_make(b, PF_FLOAT64, 2, sb), to = pf_make(o, PF_FLOAT64, 2, so);
    CHECK_OK(pf_binary(PF_SUB, &ta, &tb, &to));
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) bad += o[i * 4 + j] != a[i] - b[j];
    CHECK(bad == 0, "broadcast sub: %d wrong", bad);
    /* incompatible shapes name both */
    int64_t s5[2] = {3, 5};
    pf_tensor t5 = pf_make(o, PF_FLOAT64, 2, s5);
    CHECK(pf_binary(PF_ADD, &ta, &tb, &t5) == PF_ERR_VALUE && strstr(pf_last_error(), "[1, 4]"), "%s",
          pf_last_error());
    /* comparisons -> bool; mixed dtypes rejected */
    uint8_t c[12];
    pf_tensor tc = pf_make(c, PF_BOOL, 2, so);
    CHECK_OK(pf_binary(PF_LT, &ta, &tb, &tc));
    CHECK(c[0] == 1, "1 < 10");
    pf_tensor tf = ta;
    tf.dtype = PF_FLOAT32;
    CHECK(pf_binary(PF_ADD, &tf, &tb, &to) == PF_ERR_TYPE, "mixed dtypes");
    /* int floor division and Python-style remainder; division by zero is an error */
    int64_t x[4] = {7, -7, 7, -7}, y[4] = {2, 2, -2, -2}, q[4], r[4], z[4] = {1, 0, 1, 1};
    int64_t s4[1] = {4};
    pf_tensor tx = pf_make(x, PF_INT64, 1, s4), ty = pf_make(y, PF_INT64, 1, s4), tq = pf_make(q, PF_INT64, 1, s4),
              tr = pf_make(r, PF_INT64, 1, s4), tz = pf_make(z, PF_INT64, 1, s4);
    CHECK_OK(pf_binary(PF_FLOOR_DIVIDE, &tx, &ty, &tq));
    CHECK_OK(pf_binary(PF_REMAINDER, &tx, &ty, &tr));
    CHECK(q[0] == 3 && q[1] == -4 && q[2] == -4 && q[3] == 3, "floordiv %lld %lld %lld %lld", (long long)q[0],
          (long long)q[1], (long long)q[2], (long long)q[3]);
    CHECK(r[0] == 1 && r[1] == 1 && r[2] == -1 && r[3] == -1, "remainder");
    CHECK(pf_binary(PF_FLOOR_DIVIDE, &tx, &tz, &tq) == PF_ERR_RUNTIME, "division by zero");
    /* NaN propagates through maximum */
    float fa[2] = {NAN, 1}, fb[2] = {0, NAN}, fo[2];
    CHECK_OK(pf_binary_contig(PF_MAXIMUM, PF_FLOAT32, fa, fb, fo, 2));
    CHECK(isnan(fo[0]) && isnan(fo[1]), "maximum propagates nan");
    /* float16 add */
    uint16_t ha[2] = {pf_f2h(1.5f), pf_f2h(-2.0f)}, hb[2] = {pf_f2h(0.25f), pf_f2h(4.0f)}, ho[2];
    CHECK_OK(pf_binary_contig(PF_ADD, PF_FLOAT16, ha, hb, ho, 2));
    CHECK(pf_h2f(ho[0]) == 1.75f && pf_h2f(ho[1]) == 2.0f, "half add");
    /* BCE with logits and its gradient against double formulas, far logits included (exp overflows there) */
    float lx[6] = {0, 100, -100, 2.5f, -7, NAN}, lt[6] = {1, 0, 1, 0.3f, 0.9f, 1}, lo[6], lg[6];
    CHECK_OK(pf_binary_contig(PF_BCE_WITH_LOGITS, PF_FLOAT32, lx, lt, lo, 6));
    CHECK_OK(pf_binary_contig(PF_BCE_WITH_LOGITS_BACKWARD, PF_FLOAT32, lx, lt, lg, 6));
    for (int i = 0; i < 5; i++) {
        double x = lx[i], t = lt[i], want = (1 - t) * x + log1p(exp(-fabs(x))) + (x < 0 ? -x : 0);
        double gwant = 1 / (1 + exp(-x)) - t;
        CHECK(fabs(lo[i] - want) <= 1e-6 * fmax(1, fabs(want)) && fabs(lg[i] - gwant) <= 1e-6,
              "bce_with_logits(%g, %g) = %g (want %g), gradient %g (want %g)", x, t, lo[i], want, lg[i], gwant);
    }
    CHECK(isnan(lo[5]) && isnan(lg[5]), "bce_with_logits of NaN");
}

/* add with alpha: one fma per element (float32 against double arithmetic rounded once), broadcast and strided
 * operands, in place, wrapping integers, 16-bit floats in float32, and the refusals */
static void test_axpy(void) {
    enum { R = 37, C = 41 };
    static float a[R * C], b[C], o[R * C], big[2 * R * C];
    unsigned s = 11;
    for (int i = 0; i < R * C; i++) a[i] = (float)(4 * frand(&s)), big[2 * i] = a[i], big[2 * i + 1] = 99;
    for (int j = 0; j < C; j++) b[j] = (float)(4 * frand(&s));
    const float al = -0.1234567f;
    int64_t sh[2] = {R, C}, sb[1] = {C};
    pf_tensor ta = pf_make(a, PF_FLOAT32, 2, sh), tb = pf_make(b, PF_FLOAT32, 1, sb), to = pf_make(o, PF_FLOAT32, 2, sh);
    CHECK_OK(pf_axpy(&ta, &tb, al, 0, &to));
    int bad = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) bad += o[i * C + j] != (float)((double)a[i * C + j] + (double)al * b[j]);
    CHECK(bad == 0, "broadcast float32 axpy: %d not rounded once", bad);
    /* in place on a strided view (every other float of big): the gaps stay */
    pf_tensor tv = pf_make(big, PF_FLOAT32, 2, sh);
    tv.strides[0] = 2 * C, tv.strides[1] = 2;
    CHECK_OK(pf_axpy(&tv, &tb, al, 0, &tv));
    bad = 0;
    for (int i = 0; i < R * C; i++) bad += big[2 * i] != o[i] || big[2 * i + 1] != 99;
    CHECK(bad == 0, "strided in-place axpy: %d wrong", bad);
    /* alpha 0 keeps inf * 0 = NaN, as torch */
    float x[2] = {1, 2}, y[2] = {INFINITY, 3}, z[2];
    int64_t s2[1] = {2};
    pf_tensor tx = pf_make(x, PF_FLOAT32, 1, s2), ty = pf_make(y, PF_FLOAT32, 1, s2), tz = pf_make(z, PF_FLOAT32, 1, s2);
    CHECK_OK(pf_axpy(&tx, &ty, 0.0, 0, &tz));
    CHECK(isnan(z[0]) && z[1] == 2, "alpha 0: %g %g", z[0], z[1]);
    /* int8 wraps: 100 + 3 * 50 = 250 -> -6 */
    int8_t i8a[2] = {100, -100}, i8b[2] = {50, 50}, i8o[2];
    pf_tensor t8a = pf_make(i8a, PF_INT8, 1, s2), t8b = pf_make(i8b, PF_INT8, 1, s2), t8o = pf_make(i8o, PF_INT8, 1, s2);
    CHECK_OK(pf_axpy(&t8a, &t8b, 0.0, 3, &t8o));
    CHECK(i8o[0] == -6 && i8o[1] == 50, "int8 axpy %d %d", i8o[0], i8o[1]);
    int64_t la[2] = {INT64_MAX, 5}, lb[2] = {1, -2}, lo[2];
    pf_tensor tla = pf_make(la, PF_INT64, 1, s2), tlb = pf_make(lb, PF_INT64, 1, s2), tlo = pf_make(lo, PF_INT64, 1, s2);
    CHECK_OK(pf_axpy(&tla, &tlb, 0.0, 1, &tlo));
    CHECK(lo[0] == INT64_MIN && lo[1] == 3, "int64 axpy wraps");
    /* float16: alpha rounded to float16 first (0.1 -> 0.0999755859375), the sum rounded once */
    uint16_t ha[2] = {pf_f2h(1.0f), pf_f2h(-2.0f)}, hb[2] = {pf_f2h(10.0f), pf_f2h(4.0f)}, ho[2];
    pf_tensor tha = pf_make(ha, PF_FLOAT16, 1, s2), thb = pf_make(hb, PF_FLOAT16, 1, s2), tho = pf_make(ho, PF_FLOAT16, 1, s2);
    CHECK_OK(pf_axpy(&tha, &thb, 0.1, 0, &tho));
    CHECK(ho[0] == pf_f2h(1.0f + pf_h2f(pf_f2h(0.1f)) * 10.0f) && pf_h2f(ho[1]) == pf_h2f(pf_f2h(-2.0f + 0.4f)),
          "half axpy %g %g", pf_h2f(ho[0]), pf_h2f(ho[1]));
    /* refused: bool, mixed dtypes, shapes that do not broadcast */
    uint8_t ba[2] = {1, 0}, bo[2];
    pf_tensor tba = pf_make(ba, PF_BOOL, 1, s2), tbo = pf_make(bo, PF_BOOL, 1, s2);
    CHECK(pf_axpy(&tba, &tba, 0.0, 1, &tbo) == PF_ERR_TYPE && strstr(pf_last_error(), "bool"), "%s", pf_last_error());
    CHECK(pf_axpy(&tx, &t8a, 1.0, 0, &tz) == PF_ERR_TYPE, "mixed dtypes");
    int64_t s3[1] = {3};
    pf_tensor t3 = pf_make(o, PF_FLOAT32, 1, s3);
    CHECK(pf_axpy(&tx, &ty, 1.0, 0, &t3) == PF_ERR_VALUE, "shapes [2] into [3]: %s", pf_last_error());
}

static void test_copy_fill_where(void) {
    /* transpose copy with a cast: float32 [2, 3] viewed as [3, 2] -> int32 */
    float src[6] = {0.5f, 1.5f, -2.5f, 3.9f, NAN, 1e20f};
    int32_t dst[6];
    int64_t s32[2] = {3, 2};
    pf_tensor ts = {.data = src, .dtype = PF_FLOAT32, .ndim = 2, .shape = {3, 2}, .strides = {1, 3}};
    pf_tensor td = pf_make(dst, PF_INT32, 2, s32);
    CHECK_OK(pf_copy(&ts, &td));
    CHECK(dst[0] == 0 && dst[1] == 3 && dst[2] == 1 && dst[4] == -2, "transposed cast");
    CHECK(dst[3] == INT32_MIN && dst[5] == INT32_MIN, "nan and out-of-range casts are defined");
    /* fill through a stride, arange, linspace's exact end */
    double d[5];
    int64_t s5[1] = {5};
    pf_tensor t5 = pf_make(d, PF_FLOAT64, 1, s5);
    CHECK_OK(pf_linspace(&t5, 0.0, 1.0));
    CHECK(d[0] == 0.0 && d[4] == 1.0 && d[2] == 0.5, "linspace");
    CHECK_OK(pf_arange(&t5, 2.0, -0.5));
    CHECK(d[4] == 0.0, "arange");
    pf_tensor every2 = {.data = d, .dtype = PF_FLOAT64, .ndim = 1, .shape = {3}, .strides = {2}};
    CHECK_OK(pf_fill(&every2, 7.0, 0));
    CHECK(d[0] == 7.0 && d[1] == 1.5 && d[4] == 7.0, "strided fill");
    /* where with a broadcast condition */
    uint8_t cond[2] = {1, 0};
    float a[4] = {1, 2, 3, 4}, b[4] = {-1, -2, -3, -4}, o[4];
    int64_t sc[2] = {1, 2}, s22[2] = {2, 2};
    pf_tensor tc = pf_make(cond, PF_BOOL, 2, sc), ta = pf_make(a, PF_FLOAT32, 2, s22), tb = pf_make(b, PF_FLOAT32, 2, s22),
              to = pf_make(o, PF_FLOAT32, 2, s22);
    CHECK_OK(pf_where(&tc, &ta, &tb, &to));
    CHECK(o[0] == 1 && o[1] == -2 && o[2] == 3 && o[3] == -4, "where");
    /* bad descriptors */
    pf_tensor nine = ta;
    nine.ndim = 9;
    CHECK(pf_copy(&nine, &to) == PF_ERR_VALUE && strstr(pf_last_error(), "at most 8"), "9 dims");
    pf_tensor neg = ta;
    neg.shape[0] = -1;
    CHECK(pf_fill(&neg, 0, 0) == PF_ERR_VALUE, "negative size");
    pf_tensor null = ta;
    null.data = NULL;
    CHECK(pf_fill(&null, 0, 0) == PF_ERR_VALUE, "NULL data");
    pf_tensor zero = ta;
    zero.shape[0] = 0;
    zero.data = NULL;
    CHECK_OK(pf_fill(&zero, 0, 0));
}

static void test_thread_independence(void) {
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof(float)), *y1 = malloc(N * sizeof(float)), *y2 = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)i * 1e-5f - 3.0f;
    pf_set_num_threads(1);
    CHECK_OK(pf_unary_contig(PF_SIGMOID, PF_FLOAT32, x, y1, N));
    pf_set_num_threads(2);
    CHECK_OK(pf_unary_contig(PF_SIGMOID, PF_FLOAT32, x, y2, N));
    pf_set_num_threads(0);
    CHECK(memcmp(y1, y2, N * sizeof(float)) == 0, "1 and 2 threads differ");
    free(x);
    free(y1);
    free(y2);
}

int main(void) {
    test_float16();
    test_unary();
    test_binary();
    test_axpy();
    test_copy_fill_where();
    test_thread_independence();
    return pf_test_summary("test_elementwise");
}
