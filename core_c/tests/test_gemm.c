/* pf_matmul against a naive double-accumulating reference, on every GEMM path this CPU
 * has: shapes around the tile and block edges, transposed and broadcast views, batches,
 * strided out, every supported dtype; then the error cases and path selection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64 in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

typedef struct {
    int dt;
    int64_t nb, M, K, N; /* nb = 0: plain 2-d operands */
    int ta, tb;          /* store a (b) transposed and view it through strides */
    int bcast;           /* b has one matrix repeated with batch stride 0 */
    int out_cm;          /* out is a column-major view */
} gcase;

/* a [nb?, rows, cols] view over fresh storage; trans stores it as [nb?, cols, rows] */
static pf_tensor make_view(const gcase *g, int64_t rows, int64_t cols, int trans, int bcast) {
    int64_t nb = g->nb ? g->nb : 1, es = (int64_t)pf_dtype_size[g->dt], store = bcast ? 1 : nb;
    pf_tensor t = {.dtype = g->dt, .ndim = g->nb ? 3 : 2};
    t.data = malloc((size_t)(store * rows * cols * es) + 1);
    int d = t.ndim - 2;
    if (g->nb) t.shape[0] = g->nb, t.strides[0] = bcast ? 0 : rows * cols;
    t.shape[d] = rows, t.shape[d + 1] = cols;
    t.strides[d] = trans ? 1 : cols, t.strides[d + 1] = trans ? rows : 1;
    for (int64_t i = 0; i < store * rows * cols; i++) {
        char *p = (char *)t.data + i * es;
        if (pf_is_float(g->dt)) pf_store_f64(p, g->dt, urand());
        else pf_store_i64(p, g->dt, (int64_t)(urand() * 1000));
    }
    return t;
}

static const char *elem(const pf_tensor *t, int64_t bi, int64_t i, int64_t j) {
    int d = t->ndim - 2;
    int64_t off = (d ? bi * t->strides[0] : 0) + i * t->strides[d] + j * t->strides[d + 1];
    return (const char *)t->data + off * (int64_t)pf_dtype_size[t->dtype];
}

static void run_case(const gcase *g, const char *path) {
    pf_tensor a = make_view(g, g->M, g->K, g->ta, 0), b = make_view(g, g->K, g->N, g->tb, g->bcast);
    pf_tensor c = make_view(g, g->M, g->N, g->out_cm, 0);
    int64_t nb = g->nb ? g->nb : 1, es = (int64_t)pf_dtype_size[g->dt];
    memset(c.data, 0xff, (size_t)(nb * g->M * g->N * es)); /* NaN garbage that beta = 0 must overwrite */
    int rc = pf_matmul(&a, &b, &c);
    CHECK(rc == PF_OK, "%s %s nb=%lld M=%lld K=%lld N=%lld: %s", path, pf_dtype_name[g->dt], (long long)g->nb,
          (long long)g->M, (long long)g->K, (long long)g->N, pf_last_error());
    int64_t bad = 0;
    double worst = 0;
    for (int64_t bi = 0; bi < nb && rc == PF_OK; bi++)
        for (int64_t i = 0; i < g->M; i++)
            for (int64_t j = 0; j < g->N; j++) {
                if (pf_is_float(g->dt)) {
                    double ref = 0, mag = 0;
                    for (int64_t k = 0; k < g->K; k++) {
                        double p = pf_load_f64(elem(&a, bi, i, k), g->dt) * pf_load_f64(elem(&b, bi, k, j), g->dt);
                        ref += p, mag += fabs(p);
                    }
                    double err = fabs(pf_load_f64(elem(&c, bi, i, j), g->dt) - ref);
                    /* relative to sum |a b|, which grows with K like the rounding error */
                    double tol = (g->dt == PF_FLOAT32 ? 1e-5 : 1e-12) * (mag + 1e-30);
                    if (!(err <= tol)) bad++;
                    if (err / (mag + 1e-30) > worst) worst = err / (mag + 1e-30);
                } else {
                    uint64_t ref = 0; /* wraps like the kernel */
                    for (int64_t k = 0; k < g->K; k++)
                        ref += (uint64_t)pf_load_i64(elem(&a, bi, i, k), g->dt) *
                               (uint64_t)pf_load_i64(elem(&b, bi, k, j), g->dt);
                    int64_t want = g->dt == PF_INT32 ? (int64_t)(int32_t)(uint32_t)ref : (int64_t)ref;
                    if (pf_load_i64(elem(&c, bi, i, j), g->dt) != want) bad++;
                }
            }
    CHECK(bad == 0, "%s %s nb=%lld M=%lld K=%lld N=%lld ta=%d tb=%d bcast=%d out_cm=%d: %lld wrong (worst rel %.3g)",
          path, pf_dtype_name[g->dt], (long long)g->nb, (long long)g->M, (long long)g->K, (long long)g->N, g->ta,
          g->tb, g->bcast, g->out_cm, (long long)bad, worst);
    free(a.data), free(b.data), free(c.data);
}

/* two batch dims, b broadcast along the first and a with its batch dims swapped in memory */
static void batch_4d(void) {
    enum { B0 = 2, B1 = 3, M = 5, K = 7, N = 4 };
    float a[B1][B0][M][K], b[B1][K][N], c[B0][B1][M][N];
    for (int i = 0; i < B1 * B0 * M * K; i++) (&a[0][0][0][0])[i] = (float)urand();
    for (int i = 0; i < B1 * K * N; i++) (&b[0][0][0])[i] = (float)urand();
    pf_tensor ta = {.data = a, .dtype = PF_FLOAT32, .ndim = 4, .shape = {B0, B1, M, K},
                    .strides = {M * K, B0 * M * K, K, 1}};
    pf_tensor tb = {.data = b, .dtype = PF_FLOAT32, .ndim = 4, .shape = {B0, B1, K, N}, .strides = {0, K * N, N, 1}};
    pf_tensor tc = pf_make(c, PF_FLOAT32, 4, (int64_t[]){B0, B1, M, N});
    CHECK_OK(pf_matmul(&ta, &tb, &tc));
    int bad = 0;
    for (int p = 0; p < B0; p++)
        for (int q = 0; q < B1; q++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double ref = 0;
                    for (int k = 0; k < K; k++) ref += (double)a[q][p][i][k] * b[q][k][j];
                    bad += fabs(c[p][q][i][j] - ref) > 1e-5;
                }
    CHECK(bad == 0, "4-d batch: %d wrong", bad);
}

/* negative strides (flipped views) and stride 0 inside a matrix (expanded rows) */
static void odd_strides(void) {
    enum { M = 19, K = 45, N = 37 };
    static float a[K], b[K][N], c[M][N];
    for (int i = 0; i < K; i++) a[i] = (float)urand();
    for (int i = 0; i < K * N; i++) (&b[0][0])[i] = (float)urand();
    pf_tensor ta = {.data = a, .dtype = PF_FLOAT32, .ndim = 2, .shape = {M, K}, .strides = {0, 1}};
    pf_tensor tb = {.data = &b[K - 1][0], .dtype = PF_FLOAT32, .ndim = 2, .shape = {K, N}, .strides = {-N, 1}};
    pf_tensor tc = {.data = &c[M - 1][N - 1], .dtype = PF_FLOAT32, .ndim = 2, .shape = {M, N}, .strides = {-N, -1}};
    CHECK_OK(pf_matmul(&ta, &tb, &tc));
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int k = 0; k < K; k++) ref += (double)a[k] * b[K - 1 - k][j];
            bad += fabs(c[M - 1 - i][N - 1 - j] - ref) > 1e-5;
        }
    CHECK(bad == 0, "negative / zero strides: %d wrong", bad);
}

/* M = 1 or N = 1 (the matrix-vector path) with x strided, forcing its copy */
static void gemv_cases(const char *path) {
    enum { K = 150, N = 40, S = 3 };
    static float a[K * S], b[K * N], c[N * S];
    for (int i = 0; i < K * S; i++) a[i] = (float)urand();
    for (int i = 0; i < K * N; i++) b[i] = (float)urand();
    /* x (1 x K, stride S) times b viewed as K x N with rows 1 apart (W^T); and
     * b (N x K, row-major) times x viewed as a K x 1 column of stride S */
    pf_tensor x_row = {.data = a, .dtype = PF_FLOAT32, .ndim = 2, .shape = {1, K}, .strides = {K * S, S}};
    pf_tensor wt = {.data = b, .dtype = PF_FLOAT32, .ndim = 2, .shape = {K, N}, .strides = {1, K}};
    pf_tensor y_row = {.data = c, .dtype = PF_FLOAT32, .ndim = 2, .shape = {1, N}, .strides = {N * S, S}};
    pf_tensor w = {.data = b, .dtype = PF_FLOAT32, .ndim = 2, .shape = {N, K}, .strides = {K, 1}};
    pf_tensor x_col = {.data = a, .dtype = PF_FLOAT32, .ndim = 2, .shape = {K, 1}, .strides = {S, 1}};
    pf_tensor y_col = {.data = c, .dtype = PF_FLOAT32, .ndim = 2, .shape = {N, 1}, .strides = {S, 1}};
    for (int form = 0; form < 2; form++) {
        memset(c, 0xff, sizeof c);
        CHECK_OK(form ? pf_matmul(&w, &x_col, &y_col) : pf_matmul(&x_row, &wt, &y_row));
        int bad = 0;
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int k = 0; k < K; k++) ref += (double)a[k * S] * b[j * K + k];
            bad += !(fabs(c[j * S] - ref) <= 1e-5 * K);
        }
        CHECK(bad == 0, "%s gemv form %d: %d wrong", path, form, bad);
    }
}

static void value_cases(const char *path) {
    static const int64_t sq[] = {1, 7, 33, 257};
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++) run_case(&(gcase){PF_FLOAT32, 0, sq[s], sq[s], sq[s], t & 1, t >> 1, 0, 0}, path);
    static const int64_t mkn[][3] = {
        {5, 300, 17},    {257, 33, 129}, {1, 784, 128}, {64, 784, 1}, {3, 70, 1000}, {100, 64, 3},  {300, 800, 200},
        {900, 50, 40},   {8, 10, 4200},  {40, 3, 33},   {13, 1, 45},  {1, 1000, 1}, {1, 70, 2500}, {2500, 70, 1},
        {1, 5000, 7},
    };
    for (size_t s = 0; s < sizeof mkn / sizeof mkn[0]; s++)
        for (int t = 0; t < 4; t++)
            run_case(&(gcase){PF_FLOAT32, 0, mkn[s][0], mkn[s][1], mkn[s][2], t & 1, t >> 1, 0, t == 3}, path);
    /* batches: parallel over the batch (small products) and inside each product */
    run_case(&(gcase){PF_FLOAT32, 3, 33, 40, 17, 0, 0, 0, 0}, path);
    run_case(&(gcase){PF_FLOAT32, 5, 20, 30, 25, 1, 0, 1, 0}, path);
    run_case(&(gcase){PF_FLOAT32, 2, 130, 140, 150, 0, 1, 1, 1}, path);
    run_case(&(gcase){PF_FLOAT32, 8, 20, 30, 40, 1, 1, 1, 1}, path);
    run_case(&(gcase){PF_FLOAT32, 4, 0, 5, 6, 0, 0, 0, 0}, path);
    run_case(&(gcase){PF_FLOAT32, 3, 6, 0, 5, 0, 0, 0, 0}, path); /* K = 0: zeros */
    run_case(&(gcase){PF_FLOAT32, 0, 6, 0, 5, 1, 1, 0, 1}, path);
    /* packed B wider than one column block (kc x nc under 1 MB): two or three blocks, the last narrower */
    for (int t = 0; t < 4; t++) {
        run_case(&(gcase){PF_FLOAT32, 0, 100, 320, 1700, t & 1, t >> 1, 0, t == 3}, path);
        run_case(&(gcase){PF_FLOAT64, 0, 100, 256, 1100, t & 1, t >> 1, 0, t == 1}, path);
    }
    for (int t = 0; t < 4; t++) {
        run_case(&(gcase){PF_FLOAT64, 0, 257, 33, 129, t & 1, t >> 1, 0, t == 2}, path);
        run_case(&(gcase){PF_FLOAT64, 0, 7, 300, 5, t & 1, t >> 1, 0, 0}, path);
        run_case(&(gcase){PF_FLOAT64, 3, 40, 50, 60, t & 1, t >> 1, t == 1, 0}, path);
        run_case(&(gcase){PF_FLOAT64, 0, 150, 400, 140, t & 1, t >> 1, 0, 0}, path);
    }
    batch_4d();
    odd_strides();
    gemv_cases(path);
}

static void int_cases(void) {
    for (int dt = PF_INT64; dt <= PF_INT32; dt++)
        for (int t = 0; t < 4; t++) {
            run_case(&(gcase){dt, 0, 7, 9, 5, t & 1, t >> 1, 0, t == 3}, "-");
            run_case(&(gcase){dt, 2, 33, 65, 40, t & 1, t >> 1, t == 2, 0}, "-");
            run_case(&(gcase){dt, 0, 80, 60, 70, t & 1, t >> 1, 0, 0}, "-");
            run_case(&(gcase){dt, 0, 4, 0, 3, 0, 0, 0, 0}, "-");
        }
}

static void expect_err(int rc, int code, const char *what, const char *needle1, const char *needle2) {
    const char *msg = pf_last_error();
    CHECK(rc == code, "%s: got %d, want %d (%s)", what, rc, code, msg);
    CHECK(strstr(msg, needle1) && (!needle2 || strstr(msg, needle2)), "%s: message '%s' lacks '%s'/'%s'", what,
          msg, needle1, needle2 ? needle2 : "");
}

/* Random shapes 1..130 around the small-product limit (128) through all three entries:
 * pf_matmul, pf_mm (C contiguous) and pf_gemm_serial with acc (C += A B, C rows padded).
 * A and B are stored transposed or not, with padded leading dims. */
/* skinny: M up to just past PF_WT_M, N or K past PF_SMALL_DIM (gemm_small.c's skinny path and, with
 * B transposed, its x W^T path for PF_WT_MIN_M .. PF_WT_M rows) */
static void small_cases(const char *path, int skinny) {
    for (int it = 0; it < (skinny ? 90 : 160); it++) {
        int dt = it % 5 == 4 ? PF_FLOAT64 : PF_FLOAT32;
        int64_t M = 1 + (int64_t)((urand() + 1) * 65), N = 1 + (int64_t)((urand() + 1) * 65);
        int64_t K = 1 + (int64_t)((urand() + 1) * 65);
        if (it % 7 == 0) M = 128 + it % 3, N = 127 + it % 4; /* both sides of the limit */
        if (skinny) {
            M = it % 6 == 0 ? 32 + it % 4 / 2 : 1 + (int64_t)((urand() + 1) * 16);
            if (it % 6 == 3 || it % 6 == 5) M = it % 4 == 1 ? 64 + it % 8 / 4 : 15 + (int64_t)((urand() + 1) * 25);
            N = 100 + (int64_t)((urand() + 1) * 300), K = 60 + (int64_t)((urand() + 1) * 350);
            if (it % 5 == 1) N = 3 + it % 4; /* few columns, long K */
        }
        int ta = it & 1, tb = (it >> 1) & 1, entry = it % 3, acc = entry == 2 && (it & 4);
        int64_t lda = (ta ? M : K) + it % 3, ldb = (tb ? K : N) + (it >> 2) % 3, ldc = N + (entry ? it % 2 : 0);
        if (entry == 1) ldc = N;
        size_t es = pf_dtype_size[dt];
        char *a = malloc((size_t)((ta ? K : M) * lda) * es), *b = malloc((size_t)((tb ? N : K) * ldb) * es);
        char *c = malloc((size_t)(M * ldc) * es);
        double *c0 = malloc((size_t)(M * N) * sizeof(double));
        for (int64_t i = 0; i < (ta ? K : M) * lda; i++) pf_store_f64(a + i * es, dt, urand());
        for (int64_t i = 0; i < (tb ? N : K) * ldb; i++) pf_store_f64(b + i * es, dt, urand());
        for (int64_t i = 0; i < M * ldc; i++) pf_store_f64(c + i * es, dt, acc ? urand() : NAN);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) c0[i * N + j] = pf_load_f64(c + (i * ldc + j) * es, dt);
        int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1, rsb = tb ? 1 : ldb, csb = tb ? ldb : 1;
        int rc;
        if (entry == 0) {
            pf_tensor ta_ = {.data = a, .dtype = dt, .ndim = 2, .shape = {M, K}, .strides = {rsa, csa}};
            pf_tensor tb_ = {.data = b, .dtype = dt, .ndim = 2, .shape = {K, N}, .strides = {rsb, csb}};
            pf_tensor tc_ = {.data = c, .dtype = dt, .ndim = 2, .shape = {M, N}, .strides = {ldc, 1}};
            rc = pf_matmul(&ta_, &tb_, &tc_);
        } else if (entry == 1) {
            rc = pf_mm(dt, M, N, K, a, rsa, csa, b, rsb, csb, c);
        } else {
            pf_gemm_prob p = {M, N, K, a, b, c, rsa, csa, rsb, csb, ldc, 1, acc};
            rc = pf_gemm_serial(dt, &p, NULL);
        }
        CHECK(rc == PF_OK, "%s small entry %d: %s", path, entry, pf_last_error());
        int64_t bad = 0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double ref = acc ? c0[i * N + j] : 0, mag = fabs(ref);
                for (int64_t k = 0; k < K; k++) {
                    double x = pf_load_f64(a + (i * rsa + k * csa) * es, dt) * pf_load_f64(b + (k * rsb + j * csb) * es, dt);
                    ref += x, mag += fabs(x);
                }
                double err = fabs(pf_load_f64(c + (i * ldc + j) * es, dt) - ref);
                bad += !(err <= (dt == PF_FLOAT32 ? 1e-5 : 1e-12) * (mag + 1e-30));
            }
        /* the padding of C's rows is never written */
        for (int64_t i = 0; i < M && !acc; i++)
            for (int64_t j = N; j < ldc; j++) bad += !isnan(pf_load_f64(c + (i * ldc + j) * es, dt));
        CHECK(bad == 0, "%s small %s entry=%d M=%lld N=%lld K=%lld ta=%d tb=%d acc=%d: %lld wrong", path,
              pf_dtype_name[dt], entry, (long long)M, (long long)N, (long long)K, ta, tb, acc, (long long)bad);
        free(a), free(b), free(c), free(c0);
    }
    /* pf_mm's own checks and empty sizes */
    float z[4] = {1, 2, 3, 4};
    CHECK_OK(pf_mm(PF_FLOAT32, 2, 2, 0, NULL, 0, 1, NULL, 2, 1, z));
    CHECK(z[0] == 0 && z[3] == 0, "mm K = 0 writes zeros");
    CHECK_OK(pf_mm(PF_FLOAT32, 0, 2, 3, NULL, 3, 1, NULL, 2, 1, NULL));
    expect_err(pf_mm(PF_INT32, 2, 2, 2, z, 2, 1, z, 2, 1, z), PF_ERR_TYPE, "mm int", "float32 or float64", NULL);
    expect_err(pf_mm(PF_FLOAT32, -1, 2, 2, z, 2, 1, z, 2, 1, z), PF_ERR_VALUE, "mm negative", "negative", NULL);
    expect_err(pf_mm(PF_FLOAT32, 2, 2, 2, NULL, 2, 1, z, 2, 1, z), PF_ERR_VALUE, "mm NULL", "missing", NULL);
}

/* Every edge of the small kernels' tiles: M = 1..13 (row tiles of 6 and 8), N = 1..34 (column vectors
 * of 4, 8 and 16 lanes, strips of 2 or 4 vectors, the masked last vector), C overwritten and (through
 * pf_gemm_serial) accumulated, against a double reference: each element is the same k-ordered sum
 * of float products, so the error bound is tight. */
static void small_edges(const char *path) {
    static const int dts[2] = {PF_FLOAT32, PF_FLOAT64};
    for (int d = 0; d < 2; d++)
        for (int64_t K = 1; K <= 17; K += 8)
            for (int64_t M = 1; M <= 13; M++)
                for (int64_t N = 1; N <= 34; N++)
                    for (int acc = 0; acc < 2; acc++) {
                        int dt = dts[d];
                        size_t es = pf_dtype_size[dt];
                        int64_t ldc = N + 3;
                        char *a = malloc((size_t)(M * K) * es), *b = malloc((size_t)(K * N) * es);
                        char *c = malloc((size_t)(M * ldc) * es);
                        for (int64_t i = 0; i < M * K; i++) pf_store_f64(a + i * es, dt, urand());
                        for (int64_t i = 0; i < K * N; i++) pf_store_f64(b + i * es, dt, urand());
                        for (int64_t i = 0; i < M * ldc; i++) pf_store_f64(c + i * es, dt, acc ? urand() : NAN);
                        double *c0 = malloc((size_t)(M * ldc) * sizeof(double));
                        for (int64_t i = 0; i < M * ldc; i++) c0[i] = pf_load_f64(c + i * es, dt);
                        pf_gemm_prob p = {M, N, K, a, b, c, K, 1, N, 1, ldc, 1, acc};
                        CHECK_OK(pf_gemm_serial(dt, &p, NULL));
                        int64_t bad = 0;
                        for (int64_t i = 0; i < M; i++) {
                            for (int64_t j = 0; j < N; j++) {
                                double ref = 0, mag = 0;
                                for (int64_t k = 0; k < K; k++) {
                                    double x = pf_load_f64(a + (i * K + k) * es, dt) * pf_load_f64(b + (k * N + j) * es, dt);
                                    ref += x, mag += fabs(x);
                                }
                                if (acc) ref += c0[i * ldc + j], mag += fabs(c0[i * ldc + j]);
                                double err = fabs(pf_load_f64(c + (i * ldc + j) * es, dt) - ref);
                                bad += !(err <= (dt == PF_FLOAT32 ? 1e-5 : 1e-12) * (mag + 1e-30));
                            }
                            for (int64_t j = N; j < ldc; j++) /* past the row: never written */
                                bad += acc ? pf_load_f64(c + (i * ldc + j) * es, dt) != c0[i * ldc + j]
                                           : !isnan(pf_load_f64(c + (i * ldc + j) * es, dt));
                        }
                        CHECK(bad == 0, "%s small edges %s M=%lld N=%lld K=%lld acc=%d: %lld wrong", path,
                              pf_dtype_name[dt], (long long)M, (long long)N, (long long)K, acc, (long long)bad);
                        free(a), free(b), free(c), free(c0);
                    }
}

static void error_cases(void) {
    float buf[64] = {0};
    double dbuf[64] = {0};
    pf_tensor a = pf_make(buf, PF_FLOAT32, 2, (int64_t[]){2, 3}), b = pf_make(buf, PF_FLOAT32, 2, (int64_t[]){4, 5});
    pf_tensor c = pf_make(buf, PF_FLOAT32, 2, (int64_t[]){2, 5});
    expect_err(pf_matmul(&a, &b, &c), PF_ERR_VALUE, "inner dims", "[2, 3]", "[4, 5]");
    b = pf_make(buf, PF_FLOAT32, 2, (int64_t[]){3, 5});
    pf_tensor c2 = pf_make(buf, PF_FLOAT32, 2, (int64_t[]){2, 4});
    expect_err(pf_matmul(&a, &b, &c2), PF_ERR_VALUE, "out shape", "[2, 4]", "[3, 5]");
    pf_tensor a3 = pf_make(buf, PF_FLOAT32, 3, (int64_t[]){2, 2, 3});
    pf_tensor b3 = pf_make(buf, PF_FLOAT32, 3, (int64_t[]){3, 3, 5});
    pf_tensor c3 = pf_make(buf, PF_FLOAT32, 3, (int64_t[]){2, 2, 5});
    expect_err(pf_matmul(&a3, &b3, &c3), PF_ERR_VALUE, "batch dims", "[2, 2, 3]", "[3, 3, 5]");
    expect_err(pf_matmul(&a3, &b, &c), PF_ERR_VALUE, "ndim mismatch", "[2, 2, 3]", "[3, 5]");
    pf_tensor h = pf_make(buf, PF_FLOAT16, 2, (int64_t[]){2, 3}), hb = pf_make(buf, PF_FLOAT16, 2, (int64_t[]){3, 5});
    pf_tensor hc = pf_make(buf, PF_FLOAT16, 2, (int64_t[]){2, 5});
    expect_err(pf_matmul(&h, &hb, &hc), PF_ERR_TYPE, "float16", "float16", ".float()");
    pf_tensor bl = pf_make(buf, PF_BOOL, 2, (int64_t[]){2, 3}), blb = pf_make(buf, PF_BOOL, 2, (int64_t[]){3, 5});
    pf_tensor blc = pf_make(buf, PF_BOOL, 2, (int64_t[]){2, 5});
    expect_err(pf_matmul(&bl, &blb, &blc), PF_ERR_TYPE, "bool", "bool", NULL);
    pf_tensor db = pf_make(dbuf, PF_FLOAT64, 2, (int64_t[]){3, 5});
    expect_err(pf_matmul(&a, &db, &c), PF_ERR_TYPE, "mixed dtypes", "float32", "float64");
    pf_tensor v = pf_make(buf, PF_FLOAT32, 1, (int64_t[]){3});
    expect_err(pf_matmul(&v, &v, &v), PF_ERR_VALUE, "1-d", "[3]", NULL);
    pf_tensor big = pf_make(buf, PF_FLOAT32, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 2, 3});
    big.ndim = 9;
    expect_err(pf_matmul(&big, &b, &c), PF_ERR_VALUE, "ndim 9", "9 dims", "[3, 5]");
    pf_tensor nul = a;
    nul.data = NULL;
    expect_err(pf_matmul(&nul, &b, &c), PF_ERR_VALUE, "NULL data", "NULL", "[2, 3]");
    expect_err(pf_matmul(&a, &b, NULL), PF_ERR_VALUE, "NULL out", "matmul: out", NULL);
    /* empty operands need no data */
    pf_tensor e0 = pf_make(NULL, PF_FLOAT32, 2, (int64_t[]){0, 3});
    pf_tensor e1 = pf_make(NULL, PF_FLOAT32, 2, (int64_t[]){0, 5});
    CHECK_OK(pf_matmul(&e0, &b, &e1));
}

static void path_cases(void) {
    const char *best = pf_cpu_supports("avx512") ? "avx512" : pf_cpu_supports("avx2") ? "avx2" : "portable";
    CHECK(!strcmp(pf_gemm_path(), best), "default path %s, want %s", pf_gemm_path(), best);
    CHECK(pf_cpu_supports("portable") && pf_cpu_supports("auto") && !pf_cpu_supports("sse9"), "cpu_supports");
    expect_err(pf_gemm_select("sse9"), PF_ERR_VALUE, "unknown path", "sse9", "avx512, avx2, portable or auto");
    expect_err(pf_gemm_select(NULL), PF_ERR_VALUE, "NULL path", "avx512", NULL);
    if (!pf_cpu_supports("avx512"))
        expect_err(pf_gemm_select("avx512"), PF_ERR_VALUE, "missing ISA", "avx512", "supports");
    CHECK_OK(pf_gemm_select("portable"));
    CHECK(!strcmp(pf_gemm_path(), "portable"), "path %s", pf_gemm_path());
    CHECK_OK(pf_gemm_select("auto"));
    CHECK(!strcmp(pf_gemm_path(), best), "auto path %s, want %s", pf_gemm_path(), best);
}

/* A packed once (pf_gemm_pack_a) and read by several products with different B, C and acc:
 * shapes across the K blocks (kc 256-384) and row panels, A and B stored either way. */
static void packed_cases(const char *path) {
    for (int it = 0; it < 24; it++) {
        int dt = it % 4 == 3 ? PF_FLOAT64 : PF_FLOAT32;
        int64_t M = 1 + (int64_t)((urand() + 1) * 150), N = 1 + (int64_t)((urand() + 1) * 150);
        int64_t K = 1 + (int64_t)((urand() + 1) * 400);
        if (it % 6 == 0) M = 12 * (1 + it % 5), K = 256 * (1 + it % 3) + it % 2; /* panel and block edges */
        int ta = it & 1;
        size_t es = pf_dtype_size[dt], bytes = pf_gemm_pack_bytes(dt, M, K);
        CHECK(bytes > 0, "%s pack_bytes(%lld, %lld) = 0", path, (long long)M, (long long)K);
        char *a = malloc((size_t)(M * K) * es), *pk = pf_alloc(bytes);
        for (int64_t i = 0; i < M * K; i++) pf_store_f64(a + i * es, dt, urand());
        int64_t rsa = ta ? 1 : K, csa = ta ? M : 1;
        CHECK_OK(pf_gemm_pack_a(dt, M, K, a, rsa, csa, pk, bytes));
        for (int use = 0; use < 2; use++) { /* the same pack, twice */
            int tb = (it >> 1 & 1) ^ use, acc = use && it % 3 == 0;
            int64_t ldc = N + use;
            char *b = malloc((size_t)(K * N) * es), *c = malloc((size_t)(M * ldc) * es);
            for (int64_t i = 0; i < K * N; i++) pf_store_f64(b + i * es, dt, urand());
            for (int64_t i = 0; i < M * ldc; i++) pf_store_f64(c + i * es, dt, acc ? urand() : NAN);
            double *c0 = malloc((size_t)(M * N) * sizeof(double));
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) c0[i * N + j] = pf_load_f64(c + (i * ldc + j) * es, dt);
            int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
            pf_gemm_prob p = {M, N, K, NULL, b, c, 0, 0, rsb, csb, ldc, 1, acc}; /* A only through the pack */
            char *ws = pf_alloc(pf_gemm_packed_ws_bytes(dt, &p) + 1);
            if (it % 2 == 0) {
                CHECK_OK(pf_gemm_serial_packed(dt, &p, pk, use ? ws : NULL));
            } else { /* B in panels by the caller, one K block at a time (the implicit conv's entry) */
                int64_t kc;
                int nr;
                CHECK_OK(pf_gemm_pack_kc(pk, &kc, &nr));
                int64_t np = (N + nr - 1) / nr;
                char *bp = malloc((size_t)(np * nr * kc) * es);
                for (int64_t pc = 0; pc < K; pc += kc) {
                    int64_t kcur = K - pc < kc ? K - pc : kc;
                    for (int64_t q = 0; q < np; q++)
                        for (int64_t k = 0; k < kcur; k++)
                            for (int64_t l = 0; l < nr; l++) {
                                int64_t j = q * nr + l;
                                double v = j < N ? pf_load_f64(b + ((pc + k) * rsb + j * csb) * es, dt) : 0;
                                pf_store_f64(bp + ((q * kcur + k) * nr + l) * es, dt, v);
                            }
                    CHECK_OK(pf_gemm_packed_block(dt, pk, pc, kcur, bp, N, c, ldc, acc || pc > 0));
                }
                /* a block that is not the pack's is refused */
                CHECK(pf_gemm_packed_block(dt, pk, 1, K - 1, bp, N, c, ldc, 1) == PF_ERR_VALUE || K == 1 || kc == 1,
                      "%s packed block at k 1 accepted", path);
                free(bp);
            }
            int64_t bad = 0;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double ref = acc ? c0[i * N + j] : 0, mag = fabs(ref);
                    for (int64_t k = 0; k < K; k++) {
                        double x = pf_load_f64(a + (i * rsa + k * csa) * es, dt) *
                                   pf_load_f64(b + (k * rsb + j * csb) * es, dt);
                        ref += x, mag += fabs(x);
                    }
                    double err = fabs(pf_load_f64(c + (i * ldc + j) * es, dt) - ref);
                    bad += !(err <= (dt == PF_FLOAT32 ? 1e-5 : 1e-12) * (mag + 1e-30));
                }
            for (int64_t i = 0; i < M && !acc; i++)
                for (int64_t j = N; j < ldc; j++) bad += !isnan(pf_load_f64(c + (i * ldc + j) * es, dt));
            CHECK(bad == 0, "%s packed %s use %d M=%lld N=%lld K=%lld ta=%d tb=%d acc=%d: %lld wrong", path,
                  pf_dtype_name[dt], use, (long long)M, (long long)N, (long long)K, ta, tb, acc, (long long)bad);
            pf_free(ws);
            free(b), free(c), free(c0);
        }
        free(a);
        pf_free(pk);
    }
}

/* What a pack refuses: a bad dtype or size, a short buffer, and a product of another shape or
 * dtype than the pack's (nothing written then). */
static void packed_errors(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {-7, -7, -7, -7};
    CHECK(pf_gemm_pack_bytes(PF_INT32, 2, 3) == 0 && pf_gemm_pack_bytes(PF_FLOAT32, 0, 3) == 0, "pack_bytes of nothing");
    size_t bytes = pf_gemm_pack_bytes(PF_FLOAT32, 2, 3);
    char *pk = pf_alloc(bytes);
    expect_err(pf_gemm_pack_a(PF_INT64, 2, 3, a, 3, 1, pk, bytes), PF_ERR_TYPE, "pack int64", "float32 or float64", NULL);
    expect_err(pf_gemm_pack_a(PF_FLOAT32, 0, 3, a, 3, 1, pk, bytes), PF_ERR_VALUE, "pack M=0", "M, K >= 1", NULL);
    expect_err(pf_gemm_pack_a(PF_FLOAT32, 2, 3, a, 3, 1, pk, bytes - 1), PF_ERR_VALUE, "short buffer", "needs", NULL);
    CHECK_OK(pf_gemm_pack_a(PF_FLOAT32, 2, 3, a, 3, 1, pk, bytes));
    pf_gemm_prob p = {2, 2, 2, NULL, (const char *)b, (char *)c, 0, 0, 2, 1, 2, 1, 0}; /* K 2, pack's 3 */
    CHECK(pf_gemm_serial_packed(PF_FLOAT32, &p, pk, NULL) == PF_ERR_VALUE, "another K accepted");
    p.K = 3, p.M = 1;
    CHECK(pf_gemm_serial_packed(PF_FLOAT32, &p, pk, NULL) == PF_ERR_VALUE, "another M accepted");
    p.M = 2;
    CHECK(pf_gemm_serial_packed(PF_FLOAT64, &p, pk, NULL) == PF_ERR_VALUE, "another dtype accepted");
    for (int i = 0; i < 4; i++) CHECK(c[i] == -7, "a refused product wrote C[%d] = %g", i, c[i]);
    /* made on one kernel set, read after another was selected: the pack says which it is */
    const char *other = pf_cpu_supports("avx2") && strcmp(pf_gemm_path(), "avx2") ? "avx2" : "portable";
    CHECK_OK(pf_gemm_select(other));
    CHECK_OK(pf_gemm_serial_packed(PF_FLOAT32, &p, pk, NULL)); /* [[1 2 3], [4 5 6]] @ [[1 0], [0 1], [1 1]] */
    CHECK(c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11, "after a path switch: %g %g %g %g", c[0], c[1], c[2], c[3]);
    CHECK_OK(pf_gemm_select("auto"));
    pf_free(pk);
}

/* pf_mm_bias: c = a b + bias row (any bias stride), one row (the vector path) and several */
static void bias_cases(void) {
    for (int it = 0; it < 40; it++) {
        int dt = it % 3 == 2 ? PF_FLOAT64 : PF_FLOAT32;
        int64_t M = it % 4 == 0 ? 1 : 1 + (int64_t)((urand() + 1) * 80), N = 1 + (int64_t)((urand() + 1) * 90);
        int64_t K = it % 9 == 0 ? 0 : 1 + (int64_t)((urand() + 1) * 200), bs = 1 + it % 2;
        size_t es = pf_dtype_size[dt];
        char *a = malloc((size_t)(M * K + 1) * es), *b = malloc((size_t)(K * N + 1) * es);
        char *bias = malloc((size_t)(N * bs) * es), *c = malloc((size_t)(M * N) * es);
        for (int64_t i = 0; i < M * K; i++) pf_store_f64(a + i * es, dt, urand());
        for (int64_t i = 0; i < K * N; i++) pf_store_f64(b + i * es, dt, urand());
        for (int64_t i = 0; i < N * bs; i++) pf_store_f64(bias + i * es, dt, urand());
        int tb = it & 1; /* b as x W^T reads it */
        int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
        CHECK_OK(pf_mm_bias(dt, M, N, K, a, K, 1, b, rsb, csb, it % 5 == 4 ? NULL : bias, bs, c));
        int64_t bad = 0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double ref = it % 5 == 4 ? 0 : pf_load_f64(bias + j * bs * es, dt), mag = fabs(ref);
                for (int64_t k = 0; k < K; k++) {
                    double x = pf_load_f64(a + (i * K + k) * es, dt) * pf_load_f64(b + (k * rsb + j * csb) * es, dt);
                    ref += x, mag += fabs(x);
                }
                bad += !(fabs(pf_load_f64(c + (i * N + j) * es, dt) - ref) <= (dt == PF_FLOAT32 ? 1e-5 : 1e-12) * (mag + 1e-30));
            }
        CHECK(bad == 0, "mm_bias %s M=%lld N=%lld K=%lld: %lld wrong", pf_dtype_name[dt], (long long)M, (long long)N,
              (long long)K, (long long)bad);
        free(a), free(b), free(bias), free(c);
    }
    expect_err(pf_mm_bias(PF_INT32, 2, 2, 2, NULL, 2, 1, NULL, 2, 1, NULL, 1, NULL), PF_ERR_TYPE, "mm_bias int32",
               "float32 or float64", NULL);
}

int main(void) {
    path_cases();
    static const char *const paths[] = {"avx512", "avx2", "portable"};
    for (int p = 0; p < 3; p++) {
        if (!pf_cpu_supports(paths[p])) continue;
        CHECK_OK(pf_gemm_select(paths[p]));
        value_cases(paths[p]);
        small_cases(paths[p], 0);
        small_edges(paths[p]);
        small_cases(paths[p], 1);
        packed_cases(paths[p]);
    }
    packed_errors();
    bias_cases();
    CHECK_OK(pf_gemm_select("auto"));
    int_cases();
    /* odd and single thread counts change the thread grid */
    for (int nt = 1; nt <= 3; nt += 2) {
        pf_set_num_threads(nt);
        run_case(&(gcase){PF_FLOAT32, 0, 300, 800, 200, 0, 1, 0, 0}, nt == 1 ? "1 thread" : "3 threads");
        run_case(&(gcase){PF_FLOAT32, 0, 5, 100, 700, 1, 0, 0, 0}, nt == 1 ? "1 thread" : "3 threads");
        run_case(&(gcase){PF_FLOAT32, 7, 30, 40, 50, 0, 0, 1, 0}, nt == 1 ? "1 thread" : "3 threads");
        small_cases(nt == 1 ? "skinny, 1 thread" : "skinny, 3 threads", 1);
        small_cases(nt == 1 ? "small, 1 thread" : "small, 3 threads", 0); /* split by columns or rows */
        run_case(&(gcase){PF_FLOAT32, 0, 300, 320, 1700, 1, 1, 0, 0}, nt == 1 ? "1 thread" : "3 threads");
        /* few rows, N over several column blocks: the team splits each block's columns */
        run_case(&(gcase){PF_FLOAT32, 0, 52, 384, 3000, 0, 0, 0, 0}, nt == 1 ? "1 thread" : "3 threads");
        run_case(&(gcase){PF_FLOAT64, 0, 40, 300, 1700, 0, 1, 0, 0}, nt == 1 ? "1 thread" : "3 threads");
    }
    pf_set_num_threads(0);
    error_cases();
    return pf_test_summary("test_gemm");
}
