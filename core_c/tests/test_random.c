/* random.c: pf_random's determinism across thread counts and offsets, distributions and bounds;
 * randperm, weighted draws and multinomial sampling, their results and bad input. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

#define N 1000000

static unsigned seed = 777;

static pf_tensor vec(void *data, int dt, int64_t n) { return pf_make(data, dt, 1, &n); }

static void test_determinism(void) {
    static float a[N], b[N];
    pf_tensor ta = vec(a, PF_FLOAT32, N), tb = vec(b, PF_FLOAT32, N);
    for (int kind = 0; kind < 4; kind++) {
        double p0 = kind == PF_RAND_BERNOULLI ? 0.3 : kind == PF_RAND_INT ? -50 : 0, p1 = kind == PF_RAND_INT ? 50 : 1;
        pf_set_num_threads(1);
        CHECK_OK(pf_random(kind, &ta, 42, 7, p0, p1));
        pf_set_num_threads(2);
        CHECK_OK(pf_random(kind, &tb, 42, 7, p0, p1));
        CHECK(memcmp(a, b, sizeof a) == 0, "kind %d differs between 1 and 2 threads", kind);
        /* offset n/2 continues the draw from offset 0 */
        pf_tensor head = vec(b, PF_FLOAT32, N / 2), tail = vec(b + N / 2, PF_FLOAT32, N - N / 2);
        pf_set_num_threads(0);
        CHECK_OK(pf_random(kind, &head, 42, 7, p0, p1));
        CHECK_OK(pf_random(kind, &tail, 42, 7 + N / 2, p0, p1));
        CHECK(memcmp(a, b, sizeof a) == 0, "kind %d: offset draws are not the tail of the long draw", kind);
        /* another seed gives other bits */
        CHECK_OK(pf_random(kind, &tb, 43, 7, p0, p1));
        CHECK(memcmp(a, b, sizeof a) != 0, "kind %d: seed ignored", kind);
    }
    /* Philox4x32-10 known answer: key 0, counter 0 -> 6627e8d5 e169c58d ... */
    double d;
    pf_tensor td = vec(&d, PF_FLOAT64, 1);
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &td, 0, 0, 0, 1));
    CHECK(d == (double)(0x6627e8d5e169c58dull >> 11) * 0x1p-53, "Philox KAT: %.17g", d);
}

static void moments(const double *x, int64_t n, double *mean, double *sd) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    *mean = s / n;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *sd = sqrt(ss / (n - 1));
}

static void test_distributions(void) {
    static double x[N];
    static float f[N];
    pf_tensor tx = vec(x, PF_FLOAT64, N), tf = vec(f, PF_FLOAT32, N);
    double mean, sd, lo, hi;
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tf, 1, 0, 0, 1));
    lo = 1, hi = 0;
    for (int i = 0; i < N; i++) { x[i] = f[i]; lo = fmin(lo, f[i]); hi = fmax(hi, f[i]); }
    moments(x, N, &mean, &sd);
    CHECK(fabs(mean - 0.5) < 0.002 && fabs(sd - sqrt(1 / 12.0)) < 0.002, "uniform f32 mean %g sd %g", mean, sd);
    CHECK(lo >= 0 && hi < 1 && lo < 1e-4 && hi > 1 - 1e-4, "uniform f32 range [%g, %g]", lo, hi);
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tx, 2, 0, -3, 5));
    moments(x, N, &mean, &sd);
    lo = 5, hi = -3;
    for (int i = 0; i < N; i++) { lo = fmin(lo, x[i]); hi = fmax(hi, x[i]); }
    CHECK(fabs(mean - 1) < 0.02 && lo >= -3 && hi < 5, "uniform f64 [-3, 5): mean %g range [%g, %g]", mean, lo, hi);

    CHECK_OK(pf_random(PF_RAND_NORMAL, &tx, 3, 0, 0, 1));
    moments(x, N, &mean, &sd);
    CHECK(fabs(mean) < 0.005 && fabs(sd - 1) < 0.005, "normal mean %g sd %g", mean, sd);
    int tails = 0;
    for (int i = 0; i < N; i++) tails += fabs(x[i]) > 1.959964;
    CHECK(fabs(tails / (double)N - 0.05) < 0.002, "normal 5%% tails: %g", tails / (double)N);
    CHECK_OK(pf_random(PF_RAND_NORMAL, &tf, 4, 0, 2, 3));
    for (int i = 0; i < N; i++) x[i] = f[i];
    moments(x, N, &mean, &sd);
    CHECK(fabs(mean - 2) < 0.015 && fabs(sd - 3) < 0.015, "normal(2, 3) f32 mean %g sd %g", mean, sd);
    uint16_t h[1000];
    pf_tensor th = vec(h, PF_FLOAT16, 1000);
    CHECK_OK(pf_random(PF_RAND_NORMAL, &th, 4, 0, 0, 1));
    double hs = 0;
    for (int i = 0; i < 1000; i++) hs += pf_h2f(h[i]);
    CHECK(fabs(hs / 1000) < 0.15, "normal f16 mean %g", hs / 1000);

    /* bernoulli */
    static uint8_t bb[N];
    pf_tensor tb = vec(bb, PF_BOOL, N);
    CHECK_OK(pf_random(PF_RAND_BERNOULLI, &tb, 5, 0, 0.3, 0));
    int64_t ones = 0, other = 0;
    for (int i = 0; i < N; i++) { ones += bb[i] == 1; other += bb[i] > 1; }
    CHECK(fabs(ones / (double)N - 0.3) < 0.002 && !other, "bernoulli(0.3): %g", ones / (double)N);
    CHECK_OK(pf_random(PF_RAND_BERNOULLI, &tf, 5, 0, 1.0, 0));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += f[i] != 1.0f;
    CHECK_OK(pf_random(PF_RAND_BERNOULLI, &tf, 5, 0, 0.0, 0));
    for (int i = 0; i < N; i++) bad += f[i] != 0.0f;
    CHECK(!bad, "bernoulli p=0/1: %d wrong", bad);
}

/* Bernoulli into contiguous bool takes the vectorized path (pf_bernoulli_bytes), every other dtype
 * the general one: the same draws for every offset, length, probability and seed, 1 and 0 included. */
static void test_bernoulli_paths(void) {
    enum { M = 300 };
    static uint8_t b[M];
    static float f[M];
    const double probs[] = {0.0, 1e-9, 0.3, 0.5, 0.8, 1.0 - 0x1p-33, 1.0};
    int bad = 0;
    for (size_t pi = 0; pi < sizeof probs / sizeof *probs; pi++)
        for (uint64_t off = 0; off < 9; off++)
            for (int64_t n = 0; n <= M; n += n < 70 ? 1 : 23) {
                pf_tensor tb = vec(b, PF_BOOL, n), tf = vec(f, PF_FLOAT32, n);
                uint64_t seed = 0x9E3779B97F4A7C15ull * (off + 1), o = off * 1000003 + (off & 1 ? UINT64_MAX - 40 : 0);
                CHECK_OK(pf_random(PF_RAND_BERNOULLI, &tb, seed, o, probs[pi], 0));
                CHECK_OK(pf_random(PF_RAND_BERNOULLI, &tf, seed, o, probs[pi], 0));
                for (int64_t i = 0; i < n; i++) bad += b[i] != (f[i] == 1.0f) || b[i] > 1;
            }
    CHECK(!bad, "bernoulli into bool differs from the general path in %d draws", bad);
}

/* Ranges one ulp wide: lo + u * span rounds up to the excluded bound unless clamped. */
static void test_upper_bound_excluded(void) {
    static float f[N];
    static double x[N];
    static uint16_t h[N];
    pf_tensor tf = vec(f, PF_FLOAT32, N), tx = vec(x, PF_FLOAT64, N), th = vec(h, PF_FLOAT16, N);
    int bad = 0;
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tf, 6, 0, 1.0, 1.0 + 0x1p-23));
    for (int i = 0; i < N; i++) bad += f[i] != 1.0f;
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tx, 6, 0, 1.0, 1.0 + 0x1p-52));
    for (int i = 0; i < N; i++) bad += x[i] != 1.0;
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &th, 6, 0, 1.0, 1.0 + 0x1p-10));
    for (int i = 0; i < N; i++) bad += h[i] != 0x3c00;
    CHECK(!bad, "uniform returned its excluded upper bound %d times", bad);
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tf, 6, 0, 100.0, 100.0 + 1e-6)); /* p1 not a float */
    for (int i = 0; i < N; i++) bad += !(f[i] >= 100.0f && (double)f[i] < 100.0 + 1e-6);
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &tf, 6, 0, 2.0, 2.0)); /* empty range: the bound */
    for (int i = 0; i < N; i++) bad += f[i] != 2.0f;
    CHECK(!bad, "uniform narrow ranges: %d wrong", bad);
}

static void test_randint(void) {
    static int64_t v[N];
    static int32_t w[N];
    pf_tensor tv = vec(v, PF_INT64, N), tw = vec(w, PF_INT32, N);
    CHECK_OK(pf_random(PF_RAND_INT, &tv, 7, 0, -3, 4));
    int64_t count[7] = {0}, out = 0;
    for (int i = 0; i < N; i++) {
        if (v[i] < -3 || v[i] >= 4) out++;
        else count[v[i] + 3]++;
    }
    int even = 1;
    for (int k = 0; k < 7; k++) even &= fabs(count[k] / (double)N - 1 / 7.0) < 0.003;
    CHECK(!out && even, "randint [-3, 4): %lld outside, counts %lld %lld %lld %lld %lld %lld %lld", (long long)out,
          (long long)count[0], (long long)count[1], (long long)count[2], (long long)count[3], (long long)count[4],
          (long long)count[5], (long long)count[6]);
    /* full int32 and int64 ranges: both signs show up */
    CHECK_OK(pf_random(PF_RAND_INT, &tw, 8, 0, -0x1p31, 0x1p31));
    int64_t neg = 0;
    for (int i = 0; i < N; i++) neg += w[i] < 0;
    CHECK(fabs(neg / (double)N - 0.5) < 0.005, "int32 full range: %g negative", neg / (double)N);
    CHECK_OK(pf_random(PF_RAND_INT, &tv, 8, 0, -0x1p63, 0x1p63));
    neg = 0;
    for (int i = 0; i < N; i++) neg += v[i] < 0;
    CHECK(fabs(neg / (double)N - 0.5) < 0.005, "int64 full range: %g negative", neg / (double)N);
    CHECK_OK(pf_random(PF_RAND_INT, &tv, 8, 0, 1e15, 1e15 + 2));
    out = 0;
    for (int i = 0; i < N; i++) out += v[i] != 1000000000000000LL && v[i] != 1000000000000001LL;
    CHECK(!out, "randint near 1e15: %lld outside", (long long)out);
    float f[1000];
    pf_tensor tf = vec(f, PF_FLOAT32, 1000);
    CHECK_OK(pf_random(PF_RAND_INT, &tf, 9, 0, 0, 10));
    out = 0;
    for (int i = 0; i < 1000; i++) out += f[i] != floorf(f[i]) || f[i] < 0 || f[i] > 9;
    CHECK(!out, "randint float32: %lld bad", (long long)out);
    uint8_t b[1000];
    pf_tensor tb = vec(b, PF_BOOL, 1000);
    CHECK_OK(pf_random(PF_RAND_INT, &tb, 9, 0, 0, 2));
}

static void test_strided(void) {
    /* every third element of a buffer, and a transposed 2-d view */
    static double buf[3 * 1000], ref[1000];
    for (int i = 0; i < 3000; i++) buf[i] = -7;
    pf_tensor s = {.data = buf, .dtype = PF_FLOAT64, .ndim = 1, .shape = {1000}, .strides = {3}};
    pf_tensor r = vec(ref, PF_FLOAT64, 1000);
    CHECK_OK(pf_random(PF_RAND_NORMAL, &s, 10, 5, 0, 1));
    CHECK_OK(pf_random(PF_RAND_NORMAL, &r, 10, 5, 0, 1));
    int bad = 0;
    for (int i = 0; i < 1000; i++) bad += buf[3 * i] != ref[i] || buf[3 * i + 1] != -7 || buf[3 * i + 2] != -7;
    pf_tensor t = {.data = buf, .dtype = PF_FLOAT64, .ndim = 2, .shape = {10, 100}, .strides = {1, 10}};
    CHECK_OK(pf_random(PF_RAND_NORMAL, &t, 10, 5, 0, 1));
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 100; j++) bad += buf[i + 10 * j] != ref[i * 100 + j];
    CHECK(!bad, "strided dst: %d wrong", bad);
}

static void test_errors(void) {
    float f[4];
    int64_t v[4];
    uint8_t b[4];
    pf_tensor tf = vec(f, PF_FLOAT32, 4), tv = vec(v, PF_INT64, 4), tb = vec(b, PF_BOOL, 4);
    pf_tensor tw = vec(v, PF_INT32, 4);
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, NAN, 5) == PF_ERR_VALUE, "nan low");
    CHECK(strstr(pf_last_error(), "randint bounds must be finite, got low=nan") != NULL, "msg: %s", pf_last_error());
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, 0, INFINITY) == PF_ERR_VALUE, "inf high");
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, 5, 5) == PF_ERR_VALUE, "low == high");
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, 6, 5) == PF_ERR_VALUE, "low > high");
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, 0.5, 5) == PF_ERR_VALUE, "fractional bound");
    CHECK(pf_random(PF_RAND_INT, &tw, 0, 0, 0, 0x1p31 + 1) == PF_ERR_VALUE, "int32 high too big");
    CHECK(pf_random(PF_RAND_INT, &tw, 0, 0, -0x1p31 - 1, 0) == PF_ERR_VALUE, "int32 low too small");
    CHECK(pf_random(PF_RAND_INT, &tv, 0, 0, 0, 0x1p64) == PF_ERR_VALUE, "int64 high too big");
    CHECK(pf_random(PF_RAND_INT, &tb, 0, 0, 0, 3) == PF_ERR_VALUE, "bool high 3");
    CHECK(pf_random(PF_RAND_INT, &tf, 0, 0, 0, 0x1p25) == PF_ERR_VALUE, "float32 beyond 2^24");
    CHECK(pf_random(PF_RAND_UNIFORM, &tb, 0, 0, 0, 1) == PF_ERR_TYPE, "bool uniform");
    CHECK(pf_random(PF_RAND_NORMAL, &tb, 0, 0, 0, 1) == PF_ERR_TYPE, "bool normal");
    CHECK(pf_random(PF_RAND_UNIFORM, &tv, 0, 0, 0, 1) == PF_ERR_TYPE, "int uniform");
    CHECK(pf_random(PF_RAND_UNIFORM, &tf, 0, 0, 1, 0) == PF_ERR_VALUE, "uniform low > high");
    CHECK(pf_random(PF_RAND_UNIFORM, &tf, 0, 0, NAN, 1) == PF_ERR_VALUE, "uniform nan");
    CHECK(pf_random(PF_RAND_UNIFORM, &tf, 0, 0, -3e38, 3e38) == PF_ERR_VALUE, "uniform span overflows float");
    CHECK(pf_random(PF_RAND_NORMAL, &tf, 0, 0, 0, -1) == PF_ERR_VALUE, "negative std");
    CHECK(pf_random(PF_RAND_NORMAL, &tf, 0, 0, 0, NAN) == PF_ERR_VALUE, "nan std");
    CHECK(pf_random(PF_RAND_BERNOULLI, &tb, 0, 0, 1.5, 0) == PF_ERR_VALUE, "p > 1");
    CHECK(pf_random(PF_RAND_BERNOULLI, &tb, 0, 0, -0.1, 0) == PF_ERR_VALUE, "p < 0");
    CHECK(pf_random(PF_RAND_BERNOULLI, &tb, 0, 0, NAN, 0) == PF_ERR_VALUE, "p nan");
    CHECK(pf_random(9, &tf, 0, 0, 0, 1) == PF_ERR_VALUE, "unknown kind");
    CHECK(pf_random(PF_RAND_UNIFORM, NULL, 0, 0, 0, 1) != PF_OK, "NULL dst");
    pf_tensor empty = vec(NULL, PF_FLOAT32, 0);
    CHECK_OK(pf_random(PF_RAND_UNIFORM, &empty, 0, 0, 0, 1));
}

static void test_randperm(void) {
    enum { NP = 1000 };
    int64_t p[NP], q[NP];
    int seen[NP];
    pf_tensor tp = vec(p, PF_INT64, NP), tq = vec(q, PF_INT64, NP);
    CHECK_OK(pf_randperm(&tp, 7, 0));
    memset(seen, 0, sizeof seen);
    int ok = 1, fixed = 0;
    for (int i = 0; i < NP; i++) {
        if (p[i] < 0 || p[i] >= NP || seen[p[i]]++) ok = 0;
        fixed += p[i] == i;
    }
    CHECK(ok, "randperm is not a permutation of 0..%d", NP - 1);
    CHECK(fixed < 10, "randperm left %d of %d elements in place", fixed, NP);
    CHECK_OK(pf_randperm(&tq, 7, 0));
    CHECK(memcmp(p, q, sizeof p) == 0, "randperm is not a function of (seed, offset)");
    CHECK_OK(pf_randperm(&tq, 8, 0));
    CHECK(memcmp(p, q, sizeof p) != 0, "randperm ignores the seed");
    pf_tensor empty = vec(p, PF_INT64, 0);
    CHECK_OK(pf_randperm(&empty, 7, 0));
    double d[4];
    pf_tensor bad = vec(d, PF_FLOAT64, 4);
    CHECK(pf_randperm(&bad, 7, 0) == PF_ERR_VALUE, "a float output must be refused");
}

static void test_weighted(void) {
    enum { K = 40000 };
    static int64_t out[K];
    double w[4] = {1, 0, 3, 0};
    int64_t counts[4] = {0};
    pf_tensor tw = vec(w, PF_FLOAT64, 4), to = vec(out, PF_INT64, K);
    CHECK_OK(pf_weighted_sample(&tw, &to, 1, 3, 0));
    for (int i = 0; i < K; i++) counts[out[i]]++;
    CHECK(counts[1] == 0 && counts[3] == 0, "zero weights drawn: %lld %lld", (long long)counts[1],
          (long long)counts[3]);
    CHECK(fabs(counts[2] / (double)K - 0.75) < 0.02, "weight 3 of 4 drawn %lld of %d", (long long)counts[2], K);
    pf_tensor two = vec(out, PF_INT64, 2), three = vec(out, PF_INT64, 3);
    CHECK_OK(pf_weighted_sample(&tw, &two, 0, 3, 0));
    CHECK((out[0] == 0 && out[1] == 2) || (out[0] == 2 && out[1] == 0), "without replacement drew %lld %lld",
          (long long)out[0], (long long)out[1]);
    CHECK(pf_weighted_sample(&tw, &three, 0, 3, 0) == PF_ERR_VALUE, "3 draws from 2 positive weights");
    w[1] = -1;
    CHECK(pf_weighted_sample(&tw, &two, 1, 3, 0) == PF_ERR_VALUE, "negative weight accepted");
    w[1] = NAN;
    CHECK(pf_weighted_sample(&tw, &two, 1, 3, 0) == PF_ERR_VALUE, "NaN weight accepted");
    double z[2] = {0, 0};
    pf_tensor tz = vec(z, PF_FLOAT64, 2);
    CHECK(pf_weighted_sample(&tz, &two, 1, 3, 0) == PF_ERR_VALUE, "all-zero weights accepted");
}

static void test_multinomial(void) {
    enum { R = 2, NC = 4, K = 2000 };
    double p[R * NC] = {0, 1, 3, 0, 1, 1, 1, 1}, *u = malloc(sizeof(double) * R * K);
    int64_t *out = malloc(sizeof(int64_t) * R * K);
    for (int i = 0; i < R * K; i++) u[i] = (frand(&seed) + 1) / 2;
    int64_t sp[2] = {R, NC}, su[2] = {R, K};
    pf_tensor tp = pf_make(p, PF_FLOAT64, 2, sp), tu = pf_make(u, PF_FLOAT64, 2, su), to = pf_make(out, PF_INT64, 2, su);
    CHECK_OK(pf_multinomial(&tp, &tu, 1, &to));
    int counts[NC] = {0};
    for (int i = 0; i < K; i++) counts[out[i]]++;
    CHECK(counts[0] == 0 && counts[3] == 0 && counts[2] > 2 * counts[1], "counts %d %d %d %d", counts[0], counts[1],
          counts[2], counts[3]);
    /* without replacement every row's samples are distinct */
    int64_t sk[2] = {R, 2};
    pf_tensor tu2 = pf_make(u, PF_FLOAT64, 2, sk), to2 = pf_make(out, PF_INT64, 2, sk);
    CHECK_OK(pf_multinomial(&tp, &tu2, 0, &to2));
    CHECK(out[0] != out[1] && out[2] != out[3] && out[0] > 0 && out[0] < 3, "distinct draws");
    int64_t s3[2] = {R, 3};
    pf_tensor tu3 = pf_make(u, PF_FLOAT64, 2, s3), to3 = pf_make(out, PF_INT64, 2, s3);
    CHECK(pf_multinomial(&tp, &tu3, 0, &to3) == PF_ERR_VALUE, "3 draws from 2 non-zero categories must fail");
    p[1] = -1;
    CHECK(pf_multinomial(&tp, &tu, 1, &to) == PF_ERR_VALUE, "negative weight must fail");
    p[1] = 0;
    p[2] = 0;
    CHECK(pf_multinomial(&tp, &tu, 1, &to) == PF_ERR_VALUE, "all-zero row must fail");
    free(u);
    free(out);
}

/* gamma, Poisson and binomial draws: moments, thread-count independence, bad parameters refused untouched;
 * the gamma gradient at points of its three regimes against values torch's _standard_gamma_grad gives */
static void test_param_draws(void) {
    enum { M = 200000 };
    static double a[M], b[M], x[M], y[M];
    pf_tensor ta = vec(a, PF_FLOAT64, M), tb = vec(b, PF_FLOAT64, M), tx = vec(x, PF_FLOAT64, M),
              ty = vec(y, PF_FLOAT64, M);
    const int kinds[3] = {PF_RAND_GAMMA, PF_RAND_POISSON, PF_RAND_BINOMIAL};
    const double pa[3][2] = {{0.4, 6.0}, {3.0, 40.0}, {8.0, 300.0}}, pb = 0.3;
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < 2; r++) {
            double p = pa[k][r], mean = 0, var = 0;
            for (int i = 0; i < M; i++) a[i] = p, b[i] = pb;
            pf_set_num_threads(1);
            CHECK_OK(pf_random_param(kinds[k], &ta, &tb, &tx, 9, 3));
            pf_set_num_threads(2);
            CHECK_OK(pf_random_param(kinds[k], &ta, &tb, &ty, 9, 3));
            pf_set_num_threads(0);
            CHECK(memcmp(x, y, sizeof x) == 0, "kind %d differs between 1 and 2 threads", kinds[k]);
            for (int i = 0; i < M; i++) mean += x[i];
            mean /= M;
            for (int i = 0; i < M; i++) var += (x[i] - mean) * (x[i] - mean);
            var /= M - 1;
            double em = kinds[k] == PF_RAND_BINOMIAL ? p * pb : p, ev = kinds[k] == PF_RAND_BINOMIAL ? p * pb * (1 - pb) : p;
            CHECK(fabs(mean - em) < 5 * sqrt(ev / M) && fabs(var / ev - 1) < 0.05, "kind %d p %g: mean %g var %g",
                  kinds[k], p, mean, var);
        }
    a[5] = -1;
    x[0] = 12345;
    CHECK(pf_random_param(PF_RAND_GAMMA, &ta, NULL, &tx, 1, 0) == PF_ERR_VALUE && x[0] == 12345, "negative alpha");
    a[5] = 2.5;
    CHECK(pf_random_param(PF_RAND_BINOMIAL, &ta, &tb, &tx, 1, 0) == PF_ERR_VALUE, "non-integer count");
    CHECK(pf_random_param(99, &ta, NULL, &tx, 1, 0) == PF_ERR_VALUE, "unknown kind");
    double al[4] = {0.3, 1.5, 20.0, 20.0}, xs[4] = {0.1, 3.0, 21.0, 30.0}, g[4];
    const double want[4] = {0.78940440, 1.54749797, 1.03315275, 1.22659786}; /* torch._standard_gamma_grad */
    pf_tensor tal = vec(al, PF_FLOAT64, 4), txs = vec(xs, PF_FLOAT64, 4), tg = vec(g, PF_FLOAT64, 4);
    CHECK_OK(pf_standard_gamma_grad(&tal, &txs, &tg));
    for (int i = 0; i < 4; i++) CHECK(fabs(g[i] - want[i]) < 1e-7, "gamma grad %d: %g vs %g", i, g[i], want[i]);
}

int main(void) {
    test_determinism();
    test_param_draws();
    test_distributions();
    test_upper_bound_excluded();
    test_randint();
    test_strided();
    test_errors();
    test_randperm();
    test_weighted();
    test_multinomial();
    test_bernoulli_paths();
    return pf_test_summary("test_random");
}
