/* reduce.c: the reduction family and dot, every op against a naive reference over
 * contiguous, transposed, column-major and flipped layouts and every dtype; thread-count
 * independence on sizes past PF_GRAIN; NaN propagation; error cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* ties: few distinct values (exact in float16), so first-occurrence rules show */
enum { DATA_RANDOM, DATA_TIES, DATA_NEAR_ONE };

static void fill(void *buf, int dt, int64_t n, int kind) {
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (kind == DATA_TIES) v = floor(urand() * 9) - 4;
        else if (kind == DATA_NEAR_ONE) v = 0.9 + 0.2 * urand();
        else v = pf_is_float(dt) ? 4 * urand() - 2 : floor(urand() * 2001) - 1000;
        if (dt == PF_BOOL) v = urand() < 0.5;
        if (kind == DATA_TIES && pf_is_float(dt)) v /= 4;
        pf_store_f64((char *)buf + i * (int64_t)pf_dtype_size[dt], dt, v);
    }
}

static double eps_of(int dt) { return dt == PF_FLOAT32 ? 1.2e-7 : dt == PF_FLOAT16 ? 1e-3 : 1e-15; }
/* smallest positive value of a float dtype: the absolute error floor of a rounding */
static double tiny_of(int dt) { return dt == PF_FLOAT32 ? 1.5e-45 : dt == PF_FLOAT16 ? 6e-8 : 1e-300; }

/* v as the output dtype stores it, so overflow to inf and underflow compare equal */
static double rounded(double v, int dt) {
    char b[8];
    pf_store_f64(b, dt, v);
    return pf_load_f64(b, dt);
}

/* Runs op and compares every output with a naive reference computed here; out is
 * written with a stride of 2 when `spaced` (results must not assume contiguity). */
static void check_op(int op, const pf_tensor *x, int nred, int odt, double corr, int spaced, const char *what) {
    int k = x->ndim - nred;
    int64_t O = numel_of(x->shape, k), R = numel_of(x->shape + k, nred);
    int arg = op == PF_ARGMAX || op == PF_ARGMIN, best = arg || op == PF_MAX || op == PF_MIN;
    int64_t ostep = spaced ? 2 : 1;
    char *obuf = calloc((size_t)(O * ostep + 1), 8);
    int64_t *ibuf = calloc((size_t)(O * ostep + 1), 8);
    pf_tensor out = {.data = obuf, .dtype = odt, .ndim = k}, idx = {.data = ibuf, .dtype = PF_INT64, .ndim = k};
    int64_t s = ostep;
    for (int i = k - 1; i >= 0; i--) {
        out.shape[i] = idx.shape[i] = x->shape[i];
        out.strides[i] = idx.strides[i] = s;
        s *= x->shape[i];
    }
    int rc = pf_reduce(op, x, nred, arg ? NULL : &out, best ? &idx : NULL, corr);
    CHECK(rc == PF_OK, "%s op %d dtype %s nred %d: %s", what, op, pf_dtype_name[x->dtype], nred, pf_last_error());
    if (rc != PF_OK) goto done;
    int dt = x->dtype;
    tally t = {0};
    for (int64_t o = 0; o < O; o++) {
        const char *got = elem_at(&out, o);
        int64_t gi = *(const int64_t *)elem_at(&idx, o);
        if (best) {
            int64_t bp = 0;
            for (int64_t r = 1; r < R; r++) {
                const char *a = elem_at(x, o * R + r), *b = elem_at(x, o * R + bp);
                int take;
                if (pf_is_float(dt)) {
                    double va = pf_load_f64(a, dt), vb = pf_load_f64(b, dt);
                    take = vb == vb && (va != va || (op == PF_MAX || op == PF_ARGMAX ? va > vb : va < vb));
                } else {
                    int64_t va = pf_load_i64(a, dt), vb = pf_load_i64(b, dt);
                    take = op == PF_MAX || op == PF_ARGMAX ? va > vb : va < vb;
                }
                if (take) bp = r;
            }
            int ok = gi == bp && (arg || !memcmp(got, elem_at(x, o * R + bp), pf_dtype_size[dt]));
            TALLY(&t, ok, "out %lld: index %lld want %lld", (long long)o, (long long)gi, (long long)bp);
            continue;
        }
        if (op == PF_ANY || op == PF_ALL) {
            int64_t nz = 0;
            for (int64_t r = 0; r < R; r++) nz += pf_load_f64(elem_at(x, o * R + r), dt) != 0;
            int want = op == PF_ANY ? nz > 0 : nz == R;
            TALLY(&t, *got == want, "out %lld: %d", (long long)o, *got);
            continue;
        }
        if (!pf_is_float(dt) && (op == PF_SUM || op == PF_PROD)) {
            uint64_t acc = op == PF_PROD;
            for (int64_t r = 0; r < R; r++) {
                uint64_t v = (uint64_t)pf_load_i64(elem_at(x, o * R + r), dt);
                acc = op == PF_PROD ? acc * v : acc + v;
            }
            double g = pf_load_f64(got, odt);
            int ok = pf_is_float(odt) ? g == (double)(int64_t)acc : pf_load_i64(got, odt) == (int64_t)acc;
            TALLY(&t, ok, "out %lld: %g want %lld", (long long)o, g, (long long)acc);
            continue;
        }
        long double sum = 0, abs_sum = 0, prod = 1;
        for (int64_t r = 0; r < R; r++) {
            long double v = pf_load_f64(elem_at(x, o * R + r), dt);
            sum += v, abs_sum += fabsl(v), prod *= v;
        }
        double want, tol;
        if (op == PF_SUM) want = (double)sum, tol = eps_of(odt) * fabs(want) + 1e-13 * (double)abs_sum;
        else if (op == PF_PROD) want = (double)prod, tol = (R + 4) * eps_of(odt) * fabs(want);
        else if (op == PF_MEAN) want = (double)(sum / R), tol = eps_of(odt) * fabs(want) + 1e-13 * (double)abs_sum / R;
        else { /* PF_VAR */
            long double mean = sum / R, ss = 0, sq = 0;
            for (int64_t r = 0; r < R; r++) {
                long double d = pf_load_f64(elem_at(x, o * R + r), dt) - mean;
                ss += d * d, sq += pf_load_f64(elem_at(x, o * R + r), dt) * pf_load_f64(elem_at(x, o * R + r), dt);
            }
            double dof = R - corr > 0 ? R - corr : 0;
            want = (double)(ss / dof), tol = 4 * eps_of(odt) * fabs(want) + 1e-12 * (double)sq / (dof > 0 ? dof : 1);
        }
        double g = pf_load_f64(got, odt);
        want = rounded(want, odt), tol += tiny_of(odt);
        TALLY(&t, same_float(g, want, tol), "out %lld: %.17g want %.17g", (long long)o, g, want);
    }
    if (spaced && !best) /* the gaps stay untouched */
        for (int64_t o = 0; o < O; o++) TALLY(&t, obuf[(2 * o + 1) * pf_dtype_size[odt]] == 0, "wrote gap %lld", (long long)o);
    CHECK(t.bad == 0, "%s op %d dtype %s nred %d: %lld wrong, first %s", what, op, pf_dtype_name[dt], nred,
          (long long)t.bad, t.first);
done:
    free(obuf);
    free(ibuf);
}

static int sum_dtype(int dt) { return pf_is_float(dt) ? dt : PF_INT64; }

/* every op over every nred of view x */
static void check_all_ops(const pf_tensor *x, int spaced, const char *what) {
    int dt = x->dtype;
    for (int nred = 0; nred <= x->ndim; nred++) {
        check_op(PF_SUM, x, nred, sum_dtype(dt), 0, spaced, what);
        check_op(PF_PROD, x, nred, sum_dtype(dt), 0, spaced, what);
        check_op(PF_ANY, x, nred, PF_BOOL, 0, spaced, what);
        check_op(PF_ALL, x, nred, PF_BOOL, 0, spaced, what);
        if (pf_is_float(dt)) {
            check_op(PF_MEAN, x, nred, dt, 0, spaced, what);
            check_op(PF_VAR, x, nred, dt, 1, spaced, what);
            check_op(PF_VAR, x, nred, dt, 0, spaced, what);
        }
        int64_t R = numel_of(x->shape + x->ndim - nred, nred);
        if (R == 0) continue;
        for (int op = PF_MAX; op <= PF_ARGMIN; op++) check_op(op, x, nred, dt, 0, spaced, what);
    }
}

static void test_layouts(void) {
    static const int64_t shape3[3] = {4, 5, 6};
    static const int perms[4][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {1, 2, 0}};
    for (int dt = 0; dt < PF_NUM_DTYPES; dt++) {
        void *buf = malloc(120 * 8);
        for (int kind = DATA_RANDOM; kind <= DATA_TIES; kind++) {
            fill(buf, dt, 120, kind);
            for (int p = 0; p < 4; p++) {
                pf_tensor x = permuted(buf, dt, 3, shape3, perms[p]);
                check_all_ops(&x, p == 1, "[4, 5, 6] permuted");
            }
            /* last dim flipped: negative stride */
            int64_t s2[2] = {12, 10};
            pf_tensor f = pf_make(buf, dt, 2, s2);
            f.data = (char *)buf + 9 * pf_dtype_size[dt];
            f.strides[1] = -1;
            check_all_ops(&f, 0, "flipped");
        }
        free(buf);
    }
}

/* reducing outer dims: the columns driver, with and without a batch dim in front */
static void test_columns(void) {
    for (int dt = 0; dt < PF_NUM_DTYPES; dt++) {
        void *buf = malloc(40 * 50 * 8);
        fill(buf, dt, 40 * 50, DATA_TIES);
        int64_t s2[2] = {40, 50};
        int p2[2] = {1, 0}; /* buffer [50, 40]: view [40, 50] reduces the outer dim */
        pf_tensor x2 = permuted(buf, dt, 2, s2, p2);
        check_all_ops(&x2, 0, "columns [40, 50]");
        int64_t s3[3] = {3, 33, 20};
        int p3[3] = {0, 2, 1}; /* buffer [3, 20, 33] */
        pf_tensor x3 = permuted(buf, dt, 3, s3, p3);
        check_all_ops(&x3, 1, "columns [3, 33, 20]");
        fill(buf, dt, 40 * 50, DATA_RANDOM);
        check_all_ops(&x3, 0, "columns [3, 33, 20] random");
        int64_t sn[2] = {4, 500}; /* too narrow for columns: strided runs instead */
        pf_tensor xn = permuted(buf, dt, 2, sn, p2);
        check_all_ops(&xn, 0, "narrow columns [4, 500]");
        free(buf);
    }
}

/* result bytes of one reduction with nt threads */
static void run_threads(int op, const pf_tensor *x, int nred, int odt, int nt, void *out, int64_t *idx) {
    int k = x->ndim - nred, arg = op == PF_ARGMAX || op == PF_ARGMIN, best = arg || op == PF_MAX || op == PF_MIN;
    pf_tensor o = pf_make(out, odt, k, x->shape), ix = pf_make(idx, PF_INT64, k, x->shape);
    pf_set_num_threads(nt);
    CHECK_OK(pf_reduce(op, x, nred, arg ? NULL : &o, best ? &ix : NULL, 1));
    pf_set_num_threads(0);
}

/* Sizes past PF_GRAIN and CHUNK, through every driver: checked against the reference
 * with the default threads, and bit for bit equal with 1, 2 and 3 threads. */
static void check_threads(const pf_tensor *x, int nred, const char *what) {
    static const int ops[] = {PF_SUM, PF_MEAN, PF_VAR, PF_PROD, PF_MAX, PF_MIN, PF_ARGMAX, PF_ARGMIN, PF_ANY, PF_ALL};
    int dt = x->dtype;
    int64_t O = numel_of(x->shape, x->ndim - nred);
    char *o1 = malloc((size_t)O * 8), *o2 = malloc((size_t)O * 8);
    int64_t *i1 = malloc((size_t)O * 8), *i2 = malloc((size_t)O * 8);
    for (size_t n = 0; n < sizeof ops / sizeof ops[0]; n++) {
        int op = ops[n];
        if (!pf_is_float(dt) && (op == PF_MEAN || op == PF_VAR)) continue;
        int odt = op == PF_ANY || op == PF_ALL ? PF_BOOL : op == PF_SUM || op == PF_PROD ? sum_dtype(dt) : dt;
        check_op(op, x, nred, odt, 1, 0, what);
        memset(o1, 0, (size_t)O * 8), memset(i1, 0, (size_t)O * 8);
        run_threads(op, x, nred, odt, 1, o1, i1);
        for (int nt = 2; nt <= 3; nt++) {
            memset(o2, 0, (size_t)O * 8), memset(i2, 0, (size_t)O * 8);
            run_threads(op, x, nred, odt, nt, o2, i2);
            CHECK(!memcmp(o1, o2, (size_t)O * 8) && !memcmp(i1, i2, (size_t)O * 8),
                  "%s op %d dtype %s: %d threads differ from 1", what, op, pf_dtype_name[dt], nt);
        }
    }
    free(o1), free(o2), free(i1), free(i2);
}

static void test_large(void) {
    int64_t n = 300001; /* ten chunks, the last one short */
    void *buf = malloc((size_t)n * 8);
    static const int dts[] = {PF_FLOAT32, PF_FLOAT64, PF_FLOAT16, PF_INT32, PF_BOOL};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        int dt = dts[d];
        fill(buf, dt, n, dt == PF_FLOAT16 ? DATA_TIES : DATA_RANDOM);
        pf_tensor full = pf_make(buf, dt, 1, &n);
        check_threads(&full, 1, "full 300001");
        check_threads(&full, 0, "nred = 0 over 300001");
        int64_t rows[2] = {3, 100000}; /* few long rows: the items driver */
        pf_tensor r3 = pf_make(buf, dt, 2, rows);
        check_threads(&r3, 1, "[3, 100000]");
        int64_t many[2] = {3000, 100}; /* many short rows: the rows driver */
        pf_tensor rm = pf_make(buf, dt, 2, many);
        check_threads(&rm, 1, "[3000, 100]");
        int64_t cs[2] = {60, 5000};
        int cp[2] = {1, 0}; /* buffer [5000, 60]: the columns driver */
        pf_tensor c = permuted(buf, dt, 2, cs, cp);
        check_threads(&c, 1, "columns [60, 5000]");
        int64_t ts[2] = {500, 600};
        int tp[2] = {1, 0}; /* transposed full reduction: indices follow the logical order */
        pf_tensor t = permuted(buf, dt, 2, ts, tp);
        check_threads(&t, 2, "transposed full [500, 600]");
        int64_t bs[3] = {2, 300, 200};
        int bp[3] = {1, 0, 2}; /* buffer [300, 2, 200]: a block of two runs per position, two outputs */
        pf_tensor b = permuted(buf, dt, 3, bs, bp);
        check_threads(&b, 2, "[2, 300, 200] over (1, 2)");
        int64_t ms[3] = {80, 60, 50};
        int mp[3] = {1, 0, 2}; /* many outputs whose blocks do not coalesce */
        pf_tensor m = permuted(buf, dt, 3, ms, mp);
        check_threads(&m, 2, "[80, 60, 50] over (1, 2)");
    }
    /* a product that neither underflows nor overflows, so its chunked rounding shows */
    fill(buf, PF_FLOAT64, n, DATA_NEAR_ONE);
    pf_tensor near = pf_make(buf, PF_FLOAT64, 1, &n);
    check_threads(&near, 1, "near one, full 300001");
    free(buf);
}

static void test_nan(void) {
    int64_t n = 200000;
    float *a = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) a[i] = (float)(i % 1000);
    a[150000] = 1e30f; /* a big value before the first NaN, in an earlier chunk */
    a[170001] = NAN;
    a[190000] = NAN;
    pf_tensor x = pf_make(a, PF_FLOAT32, 1, &n);
    float v;
    int64_t ix;
    pf_tensor o = {.data = &v, .dtype = PF_FLOAT32}, io = {.data = &ix, .dtype = PF_INT64};
    static const int ops[] = {PF_SUM, PF_MEAN, PF_VAR, PF_PROD};
    for (int i = 0; i < 4; i++) {
        CHECK_OK(pf_reduce(ops[i], &x, 1, &o, NULL, 1));
        CHECK(isnan(v), "op %d of a NaN row: %g", ops[i], v);
    }
    for (int op = PF_MAX; op <= PF_ARGMIN; op++) {
        v = 0, ix = -1;
        CHECK_OK(pf_reduce(op, &x, 1, &o, &io, 0));
        CHECK(ix == 170001 && (op >= PF_ARGMAX || isnan(v)), "op %d: NaN at %lld, value %g", op, (long long)ix, v);
    }
    uint8_t any;
    pf_tensor ob = {.data = &any, .dtype = PF_BOOL};
    float z[3] = {0, NAN, 0};
    int64_t three = 3;
    pf_tensor zx = pf_make(z, PF_FLOAT32, 1, &three);
    CHECK_OK(pf_reduce(PF_ANY, &zx, 1, &ob, NULL, 0));
    CHECK(any, "NaN counts as true");
    /* float16 NaN, and a NaN first in its row */
    uint16_t h[4] = {pf_f2h(1), pf_f2h(NAN), pf_f2h(5), pf_f2h(NAN)};
    int64_t four = 4;
    pf_tensor hx = pf_make(h, PF_FLOAT16, 1, &four);
    uint16_t hv;
    pf_tensor ho = {.data = &hv, .dtype = PF_FLOAT16};
    CHECK_OK(pf_reduce(PF_MAX, &hx, 1, &ho, &io, 0));
    CHECK(isnan(pf_h2f(hv)) && ix == 1, "float16 max with NaN: %g at %lld", pf_h2f(hv), (long long)ix);
    CHECK_OK(pf_reduce(PF_MIN, &hx, 1, &ho, &io, 0));
    CHECK(isnan(pf_h2f(hv)) && ix == 1, "float16 min with NaN");
    double d[3] = {NAN, 2, -1};
    pf_tensor dx = pf_make(d, PF_FLOAT64, 1, &three);
    double dv;
    pf_tensor dout = {.data = &dv, .dtype = PF_FLOAT64};
    CHECK_OK(pf_reduce(PF_MIN, &dx, 1, &dout, &io, 0));
    CHECK(isnan(dv) && ix == 0, "NaN first: %g at %lld", dv, (long long)ix);
    /* columns driver: per-column NaN */
    int64_t cs[2] = {32, 4};
    float c[4][32];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 32; j++) c[r][j] = (float)(r * j);
    c[2][5] = NAN;
    pf_tensor cx = {.data = c, .dtype = PF_FLOAT32, .ndim = 2, .shape = {32, 4}, .strides = {1, 32}};
    float cv[32];
    int64_t ci[32];
    pf_tensor co = pf_make(cv, PF_FLOAT32, 1, cs), cio = pf_make(ci, PF_INT64, 1, cs);
    CHECK_OK(pf_reduce(PF_MAX, &cx, 1, &co, &cio, 0));
    CHECK(isnan(cv[5]) && ci[5] == 2 && cv[6] == 18 && ci[6] == 3, "columns NaN: %g at %lld", cv[5], (long long)ci[5]);
    CHECK_OK(pf_reduce(PF_SUM, &cx, 1, &co, NULL, 0));
    CHECK(isnan(cv[5]) && cv[6] == 36, "columns NaN sum: %g", cv[5]);
    free(a);
}

static void test_edges(void) {
    /* zero-size blocks: identities, NaN for mean and var */
    float e[1];
    int64_t s30[2] = {3, 0};
    pf_tensor x = pf_make(e, PF_FLOAT32, 2, s30);
    float o[3];
    uint8_t ob[3];
    int64_t three = 3;
    pf_tensor out = pf_make(o, PF_FLOAT32, 1, &three), bout = pf_make(ob, PF_BOOL, 1, &three);
    CHECK_OK(pf_reduce(PF_SUM, &x, 1, &out, NULL, 0));
    CHECK(o[0] == 0 && o[2] == 0, "empty sum");
    CHECK_OK(pf_reduce(PF_PROD, &x, 1, &out, NULL, 0));
    CHECK(o[0] == 1 && o[2] == 1, "empty prod");
    CHECK_OK(pf_reduce(PF_MEAN, &x, 1, &out, NULL, 0));
    CHECK(isnan(o[1]), "empty mean is nan");
    CHECK_OK(pf_reduce(PF_VAR, &x, 1, &out, NULL, 1));
    CHECK(isnan(o[1]), "empty var is nan");
    CHECK_OK(pf_reduce(PF_ANY, &x, 1, &bout, NULL, 0));
    CHECK(!ob[0] && !ob[2], "empty any");
    CHECK_OK(pf_reduce(PF_ALL, &x, 1, &bout, NULL, 0));
    CHECK(ob[0] && ob[2], "empty all");
    /* no outputs at all is fine, even for max */
    int64_t s04[2] = {0, 4}, zero = 0;
    pf_tensor x0 = pf_make(e, PF_FLOAT32, 2, s04), o0 = pf_make(o, PF_FLOAT32, 1, &zero);
    CHECK_OK(pf_reduce(PF_MAX, &x0, 1, &o0, NULL, 0));
    /* var with correction >= R: inf, or nan for a constant row */
    float v2[2] = {1, 3}, r;
    int64_t two = 2;
    pf_tensor xv = pf_make(v2, PF_FLOAT32, 1, &two), ro = {.data = &r, .dtype = PF_FLOAT32};
    CHECK_OK(pf_reduce(PF_VAR, &xv, 1, &ro, NULL, 2));
    CHECK(isinf(r) && r > 0, "var with correction 2 of 2: %g", r);
    CHECK_OK(pf_reduce(PF_VAR, &xv, 1, &ro, NULL, 0.5));
    CHECK(fabsf(r - 4.f / 3) < 1e-6f, "var with correction 0.5: %g", r);
    v2[1] = 1;
    CHECK_OK(pf_reduce(PF_VAR, &xv, 1, &ro, NULL, 3));
    CHECK(isnan(r), "var of a constant row with correction past R: %g", r);
    /* var stays accurate with a large mean */
    int64_t n = 100000;
    double *big = malloc((size_t)n * sizeof(double)), vd;
    for (int64_t i = 0; i < n; i++) big[i] = 1e9 + (i % 2);
    pf_tensor xb = pf_make(big, PF_FLOAT64, 1, &n), od = {.data = &vd, .dtype = PF_FLOAT64};
    CHECK_OK(pf_reduce(PF_VAR, &xb, 1, &od, NULL, 0));
    CHECK(fabs(vd - 0.25) < 1e-9, "var around 1e9: %.17g", vd);
    free(big);
    /* integer inputs to other output dtypes; wrapping sums */
    int32_t iv[4] = {2147483647, 1, -5, 7};
    int64_t four = 4, isum;
    double dsum;
    pf_tensor xi = pf_make(iv, PF_INT32, 1, &four);
    pf_tensor oi = {.data = &isum, .dtype = PF_INT64}, odd = {.data = &dsum, .dtype = PF_FLOAT64};
    CHECK_OK(pf_reduce(PF_SUM, &xi, 1, &oi, NULL, 0));
    CHECK(isum == 2147483650LL, "int32 sum into int64: %lld", (long long)isum);
    CHECK_OK(pf_reduce(PF_SUM, &xi, 1, &odd, NULL, 0));
    CHECK(dsum == 2147483650.0, "int32 sum into float64: %g", dsum);
    int64_t wrap[2] = {INT64_MAX, 1};
    pf_tensor xw = pf_make(wrap, PF_INT64, 1, &two);
    CHECK_OK(pf_reduce(PF_SUM, &xw, 1, &oi, NULL, 0));
    CHECK(isum == INT64_MIN, "int64 sum wraps as torch");
    uint8_t bools[4] = {1, 0, 1, 1};
    pf_tensor xbool = pf_make(bools, PF_BOOL, 1, &four);
    CHECK_OK(pf_reduce(PF_SUM, &xbool, 1, &oi, NULL, 0));
    CHECK(isum == 3, "bool sum counts: %lld", (long long)isum);
    /* 0-d input, nred = 0: a copy */
    double sc = 2.5, so = 0;
    int64_t si = -1;
    pf_tensor xs = {.data = &sc, .dtype = PF_FLOAT64}, os = {.data = &so, .dtype = PF_FLOAT64};
    pf_tensor is = {.data = &si, .dtype = PF_INT64};
    CHECK_OK(pf_reduce(PF_MAX, &xs, 0, &os, &is, 0));
    CHECK(so == 2.5 && si == 0, "0-d max");
    /* float16 sum accumulates wider than float16 */
    int64_t hn = 4096;
    uint16_t *h = malloc((size_t)hn * 2), hs;
    for (int64_t i = 0; i < hn; i++) h[i] = pf_f2h(1);
    pf_tensor xh = pf_make(h, PF_FLOAT16, 1, &hn), oh = {.data = &hs, .dtype = PF_FLOAT16};
    CHECK_OK(pf_reduce(PF_SUM, &xh, 1, &oh, NULL, 0));
    CHECK(pf_h2f(hs) == 4096, "float16 sum of 4096 ones: %g", pf_h2f(hs));
    free(h);
}

static void test_errors(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, o[3];
    int64_t s23[2] = {2, 3}, three = 3, two = 2, idx[3];
    pf_tensor x = pf_make(a, PF_FLOAT32, 2, s23), o3 = pf_make(o, PF_FLOAT32, 1, &three);
    pf_tensor o2 = pf_make(o, PF_FLOAT32, 1, &two), i3 = pf_make(idx, PF_INT64, 1, &three);
    pf_tensor i2 = pf_make(idx, PF_INT64, 1, &two);
    CHECK(pf_reduce(-1, &x, 1, &o2, NULL, 0) == PF_ERR_VALUE, "negative op");
    CHECK(pf_reduce(PF_NUM_REDUCE, &x, 1, &o2, NULL, 0) == PF_ERR_VALUE, "op past the end");
    CHECK(pf_reduce(PF_SUM, &x, -1, &o2, NULL, 0) == PF_ERR_VALUE, "nred -1");
    CHECK(pf_reduce(PF_SUM, &x, 3, &o2, NULL, 0) == PF_ERR_VALUE, "nred past ndim");
    CHECK(pf_reduce(PF_SUM, &x, 1, &o3, NULL, 0) == PF_ERR_VALUE, "out shape");
    CHECK(strstr(pf_last_error(), "[3]") && strstr(pf_last_error(), "[2]") && strstr(pf_last_error(), "[2, 3]"),
          "message names the shapes: %s", pf_last_error());
    CHECK(pf_reduce(PF_SUM, &x, 2, &o2, NULL, 0) == PF_ERR_VALUE, "out ndim");
    CHECK(pf_reduce(PF_SUM, &x, 1, NULL, NULL, 0) == PF_ERR_VALUE, "missing out");
    CHECK(pf_reduce(PF_MAX, &x, 1, &o2, &i3, 0) == PF_ERR_VALUE, "idx shape");
    pf_tensor bad_idx = i2;
    bad_idx.dtype = PF_INT32;
    CHECK(pf_reduce(PF_MAX, &x, 1, &o2, &bad_idx, 0) == PF_ERR_TYPE, "idx dtype");
    CHECK(pf_reduce(PF_ARGMAX, &x, 1, NULL, NULL, 0) == PF_ERR_VALUE, "argmax without idx");
    CHECK_OK(pf_reduce(PF_ARGMAX, &x, 1, NULL, &i2, 0));
    CHECK(idx[0] == 2 && idx[1] == 2, "argmax rows");
    int32_t ia[6] = {1, 2, 3, 4, 5, 6};
    pf_tensor xi = pf_make(ia, PF_INT32, 2, s23);
    CHECK(pf_reduce(PF_MEAN, &xi, 1, &o2, NULL, 0) == PF_ERR_TYPE, "int mean");
    CHECK(strstr(pf_last_error(), "int32") != NULL, "message names the dtype: %s", pf_last_error());
    CHECK(pf_reduce(PF_VAR, &xi, 1, &o2, NULL, 1) == PF_ERR_TYPE, "int var");
    pf_tensor oi = o2, ob = o2;
    oi.dtype = PF_INT64;
    ob.dtype = PF_BOOL;
    CHECK(pf_reduce(PF_SUM, &x, 1, &oi, NULL, 0) == PF_ERR_TYPE, "float sum into int64");
    CHECK(pf_reduce(PF_SUM, &xi, 1, &ob, NULL, 0) == PF_ERR_TYPE, "sum into bool");
    CHECK(pf_reduce(PF_MAX, &xi, 1, &o2, NULL, 0) == PF_ERR_TYPE, "max into another dtype");
    CHECK(pf_reduce(PF_ANY, &x, 1, &o2, NULL, 0) == PF_ERR_TYPE, "any into float");
    CHECK(pf_reduce(PF_MEAN, &x, 1, &ob, NULL, 0) == PF_ERR_TYPE, "mean into bool");
    int64_t s20[2] = {2, 0};
    pf_tensor xe = pf_make(a, PF_FLOAT32, 2, s20);
    CHECK(pf_reduce(PF_MAX, &xe, 1, &o2, NULL, 0) == PF_ERR_RUNTIME, "max over zero size");
    CHECK(strstr(pf_last_error(), "max()") && strstr(pf_last_error(), "zero-size"), "%s", pf_last_error());
    CHECK(pf_reduce(PF_ARGMIN, &xe, 1, NULL, &i2, 0) == PF_ERR_RUNTIME, "argmin over zero size");
    pf_tensor xbad = x;
    xbad.shape[0] = -1;
    CHECK(pf_reduce(PF_SUM, &xbad, 1, &o2, NULL, 0) == PF_ERR_VALUE, "negative shape");
    CHECK(pf_reduce(PF_SUM, NULL, 1, &o2, NULL, 0) == PF_ERR_VALUE, "NULL input");
}

/* the descriptor-free entry (rows of a contiguous buffer), and the dot kernel */
static void test_rows_and_dot(void) {
    float x[3 * 4] = {1, 2, 3, 4, -1, -2, -3, -4, 0.5f, 0.25f, 0, 1};
    float out[3];
    int64_t ix[3];
    CHECK_OK(pf_reduce_rows(PF_SUM, PF_FLOAT32, x, 3, 4, out, PF_FLOAT32, NULL, 0));
    CHECK(out[0] == 10 && out[1] == -10 && out[2] == 1.75f, "row sums %g %g %g", out[0], out[1], out[2]);
    CHECK_OK(pf_reduce_rows(PF_ARGMAX, PF_FLOAT32, x, 3, 4, NULL, 0, ix, 0));
    CHECK(ix[0] == 3 && ix[1] == 0 && ix[2] == 3, "row argmax %lld %lld %lld", (long long)ix[0], (long long)ix[1],
          (long long)ix[2]);
    CHECK(pf_reduce_rows(PF_SUM, PF_FLOAT32, x, -1, 4, out, PF_FLOAT32, NULL, 0) == PF_ERR_VALUE, "negative rows");
    CHECK(pf_reduce_rows(PF_SUM, PF_NUM_DTYPES, x, 3, 4, out, PF_FLOAT32, NULL, 0) == PF_ERR_TYPE, "dtype code");
    CHECK(pf_reduce_rows(PF_SUM, PF_FLOAT32, x, 3, 4, out, PF_NUM_DTYPES, NULL, 0) == PF_ERR_TYPE, "output dtype code");
    CHECK(pf_reduce_rows(PF_SUM, PF_FLOAT32, x, INT64_MAX, 4, out, PF_FLOAT32, NULL, 0) == PF_ERR_VALUE, "overflow");
    /* dot: exact small sums, strided operands, lengths around the 16-lane blocks */
    double a[41], b[41];
    for (int i = 0; i < 41; i++) a[i] = i, b[i] = i % 2 ? -1 : 2;
    for (int n = 0; n <= 41; n += 5) {
        double want = 0, got = -1;
        for (int i = 0; i < n; i++) want += a[i] * b[i];
        CHECK_OK(pf_dot(PF_FLOAT64, a, 1, b, 1, n, &got));
        CHECK(got == want, "dot n=%d: %g want %g", n, got, want);
    }
    double got = 0;
    CHECK_OK(pf_dot(PF_FLOAT64, a, 2, b, 2, 20, &got));
    CHECK(got == 2 * 2 * (0 + 19) * 20 / 2, "strided dot %g", got);
    float f[3] = {1e8f, 1, -1e8f}, g[3] = {1, 1, 1}, r = 0;
    CHECK_OK(pf_dot(PF_FLOAT32, f, 1, g, 1, 3, &r));
    CHECK(r == 1, "float32 dot accumulates in double: %g", r);
    CHECK(pf_dot(PF_INT64, a, 1, b, 1, 3, &got) == PF_ERR_TYPE, "dot of int64");
    CHECK(pf_dot(PF_FLOAT64, a, 1, b, 1, -1, &got) == PF_ERR_VALUE, "negative length");
    CHECK(pf_dot(PF_FLOAT64, NULL, 1, b, 1, 3, &got) == PF_ERR_VALUE, "missing data");
}

/* Float sums of runs of 256 or more take 32 lanes (a kernel of its own, with prefetch, in
 * the contiguous case), shorter ones 16: either way element k goes to the same lane
 * whatever the stride, so a run and the same values spaced 3 apart sum to the same bits. */
static void test_strided_sums_equal(void) {
    int64_t lens[] = {31, 32, 255, 256, 257, 1000, 40000, 70001};
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT16; dt++) {
        size_t isz = pf_dtype_size[dt];
        char *c = malloc((size_t)70001 * isz), *sp = malloc((size_t)70001 * 3 * isz);
        fill(c, dt, 70001, DATA_RANDOM);
        for (int64_t i = 0; i < 70001; i++) memcpy(sp + (size_t)i * 3 * isz, c + (size_t)i * isz, isz);
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            int64_t n = lens[k];
            double a = 0, b = 0;
            pf_tensor xc = {.data = c, .dtype = dt, .ndim = 1, .shape = {n}, .strides = {1}};
            pf_tensor xs = {.data = sp, .dtype = dt, .ndim = 1, .shape = {n}, .strides = {3}};
            pf_tensor oa = {.data = &a, .dtype = PF_FLOAT64}, ob = {.data = &b, .dtype = PF_FLOAT64};
            CHECK_OK(pf_reduce(PF_SUM, &xc, 1, &oa, NULL, 0));
            CHECK_OK(pf_reduce(PF_SUM, &xs, 1, &ob, NULL, 0));
            CHECK(!memcmp(&a, &b, sizeof a), "%s sum of %lld: contiguous %.17g, spaced %.17g", pf_dtype_name[dt],
                  (long long)n, a, b);
        }
        free(c), free(sp);
    }
}

int main(void) {
    test_strided_sums_equal();
    test_layouts();
    test_columns();
    test_large();
    test_nan();
    test_edges();
    test_errors();
    test_rows_and_dot();
    return pf_test_summary("test_reduce");
}
