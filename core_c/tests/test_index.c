/* index_select / index_add / index_copy / gather / scatter_add / nonzero against naive loops. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

static unsigned rng = 12345;
static int64_t irand(int64_t n) {
    rng = rng * 1664525u + 1013904223u;
    return (int64_t)((rng >> 8) % (unsigned)n);
}

/* A tensor over fresh memory: contiguous, or column-major (every dim strided) when
 * fortran is set, filled with small integers so every dtype holds them exactly. */
static pf_tensor mk(int dt, int ndim, const int64_t *shape, int fortran) {
    pf_tensor t = pf_make(NULL, dt, ndim, shape);
    int64_t n = pf_numel(&t), s = 1;
    if (fortran)
        for (int i = 0; i < ndim; i++) { t.strides[i] = s; s *= shape[i]; }
    t.data = calloc((size_t)(n ? n : 1), pf_dtype_size[dt]);
    for (int64_t i = 0; i < n; i++) pf_store_f64((char *)t.data + i * pf_dtype_size[dt], dt, (double)(irand(19) - 9));
    return t;
}

/* v as the dtype stores it: uint8 sums of negative values wrap around */
static double stored(int dt, double v) {
    char b[8];
    pf_store_f64(b, dt, v);
    return pf_load_f64(b, dt);
}

static char *at(const pf_tensor *t, const int64_t *c) {
    int64_t o = 0;
    for (int i = 0; i < t->ndim; i++) o += c[i] * t->strides[i];
    return (char *)t->data + o * (int64_t)pf_dtype_size[t->dtype];
}

/* row-major odometer; returns 0 after the last coordinate */
static int next(int64_t *c, const int64_t *shape, int ndim) {
    for (int i = ndim - 1; i >= 0; i--) {
        if (++c[i] < shape[i]) return 1;
        c[i] = 0;
    }
    return 0;
}

static pf_tensor idx1(int dt, int64_t n, const int64_t *vals) {
    pf_tensor t = mk(dt, 1, (int64_t[]){n}, 0);
    for (int64_t i = 0; i < n; i++) pf_store_i64((char *)t.data + i * pf_dtype_size[dt], dt, vals[i]);
    return t;
}

static void test_index_select_add(void) {
    const int64_t shape[3] = {4, 5, 6}, vals[6] = {1, -1, 0, 1, -2, 3};
    for (int dt = 0; dt < PF_NUM_DTYPES; dt++)
        for (int dim = -1; dim < 3; dim++)
            for (int lay = 0; lay < 4; lay++) {
                int d = dim < 0 ? dim + 3 : dim, bad = 0;
                pf_tensor x = mk(dt, 3, shape, lay & 1), idx = idx1(lay & 2 ? PF_INT32 : PF_INT64, 6, vals);
                int64_t oshape[3] = {4, 5, 6}, c[3] = {0, 0, 0};
                oshape[d] = 6;
                pf_tensor out = mk(dt, 3, oshape, lay >> 1);
                CHECK_OK(pf_index_select(&x, dim, &idx, &out));
                size_t es = pf_dtype_size[dt];
                do {
                    int64_t xc[3] = {c[0], c[1], c[2]}, v = vals[c[d]];
                    xc[d] = v < 0 ? v + shape[d] : v;
                    bad += memcmp(at(&out, c), at(&x, xc), es) != 0;
                } while (next(c, oshape, 3));
                CHECK(!bad, "index_select %s dim %d layout %d: %d wrong", pf_dtype_name[dt], dim, lay, bad);

                /* index_copy of `out` (as src) into y: for the repeated 1 the later j wins */
                {
                    pf_tensor y = mk(dt, 3, shape, lay >> 1);
                    char *ref = malloc(120 * es);
                    int64_t yc[3] = {0, 0, 0};
                    for (int i = 0; i < 120; i++, next(yc, shape, 3)) memcpy(ref + i * es, at(&y, yc), es);
                    do { /* row-major order visits j ascending for each rest position */
                        int64_t v = vals[c[d]], xc[3] = {c[0], c[1], c[2]};
                        xc[d] = v < 0 ? v + shape[d] : v;
                        memcpy(ref + ((xc[0] * 5 + xc[1]) * 6 + xc[2]) * es, at(&out, c), es);
                    } while (next(c, oshape, 3));
                    CHECK_OK(pf_index_copy(&y, dim, &idx, &out));
                    bad = 0;
                    for (int i = 0; i < 120; i++, next(yc, shape, 3)) bad += memcmp(ref + i * es, at(&y, yc), es) != 0;
                    CHECK(!bad, "index_copy %s dim %d layout %d: %d wrong", pf_dtype_name[dt], dim, lay, bad);
                    free(ref);
                    free(y.data);
                }
                /* index_add of `out` (as src) back into x: repeated 1 accumulates twice */
                if (dt == PF_BOOL) {
                    CHECK(pf_index_add(&x, dim, &idx, &out) == PF_ERR_TYPE, "index_add bool");
                } else {
                    int64_t n = pf_numel(&x);
                    double *want = malloc((size_t)n * sizeof *want);
                    memset(c, 0, sizeof c);
                    for (int64_t i = 0; i < n; i++, next(c, shape, 3)) want[i] = pf_load_f64(at(&x, c), dt);
                    memset(c, 0, sizeof c);
                    do {
                        int64_t v = vals[c[d]], xc[3] = {c[0], c[1], c[2]};
                        xc[d] = v < 0 ? v + shape[d] : v;
                        want[(xc[0] * 5 + xc[1]) * 6 + xc[2]] += pf_load_f64(at(&out, c), dt);
                    } while (next(c, oshape, 3));
                    CHECK_OK(pf_index_add(&x, dim, &idx, &out));
                    bad = 0;
                    memset(c, 0, sizeof c);
                    for (int64_t i = 0; i < n; i++, next(c, shape, 3)) bad += pf_load_f64(at(&x, c), dt) != stored(dt, want[i]);
                    CHECK(!bad, "index_add %s dim %d layout %d: %d wrong", pf_dtype_name[dt], dim, lay, bad);
                    free(want);
                }
                free(x.data); free(idx.data); free(out.data);
            }
}

/* big enough to run threaded; accumulation order is fixed, so results match bit for bit */
static void test_index_parallel(void) {
    int64_t V = 100, D = 64, L = 20000;
    int64_t *vals = malloc((size_t)L * sizeof *vals);
    for (int64_t i = 0; i < L; i++) vals[i] = irand(2 * V) - V;
    pf_tensor idx = idx1(PF_INT64, L, vals), src = mk(PF_FLOAT32, 2, (int64_t[]){L, D}, 0);
    for (int64_t i = 0; i < L * D; i++) ((float *)src.data)[i] = (float)irand(1000) * 0.001f;
    float *res[2];
    for (int nt = 1; nt <= 2; nt++) {
        pf_set_num_threads(nt);
        pf_tensor out = mk(PF_FLOAT32, 2, (int64_t[]){V, D}, 0);
        memset(out.data, 0, (size_t)(V * D) * 4);
        CHECK_OK(pf_index_add(&out, 0, &idx, &src));
        res[nt - 1] = out.data;
        /* index_copy with many repeats: the last j of each row wins */
        pf_tensor cp = mk(PF_FLOAT32, 2, (int64_t[]){V, D}, 0);
        CHECK_OK(pf_index_copy(&cp, 0, &idx, &src));
        int64_t last[100], wrong = 0;
        for (int64_t j = 0; j < L; j++) last[(vals[j] + V) % V] = j;
        for (int64_t v = 0; v < V; v++)
            wrong += memcmp((float *)cp.data + v * D, (float *)src.data + last[v] * D, (size_t)D * 4) != 0;
        CHECK(!wrong, "large index_copy with %d threads: %lld rows wrong", nt, (long long)wrong);
        free(cp.data);
        /* select the rows back: an embedding lookup */
        pf_tensor sel = mk(PF_FLOAT32, 2, (int64_t[]){L, D}, 0);
        CHECK_OK(pf_index_select(&out, 0, &idx, &sel));
        int bad = 0;
        for (int64_t j = 0; j < L; j++)
            bad += memcmp((float *)sel.data + j * D, (float *)out.data + (vals[j] + V) % V * D, (size_t)D * 4) != 0;
        CHECK(!bad, "large index_select with %d threads: %d rows wrong", nt, bad);
        free(sel.data);
    }
    CHECK(memcmp(res[0], res[1], (size_t)(V * D) * 4) == 0, "index_add differs between 1 and 2 threads");
    double want = 0, got = 0;
    for (int64_t i = 0; i < L * D; i++) want += ((float *)src.data)[i];
    for (int64_t i = 0; i < V * D; i++) got += res[0][i];
    CHECK(fabs(want - got) < 1e-3 * fabs(want), "index_add total %g vs %g", got, want);
    pf_set_num_threads(0);
    free(res[0]); free(res[1]); free(vals); free(idx.data); free(src.data);
}

static void test_gather_scatter(void) {
    const int64_t xshape[3] = {4, 5, 6};
    for (int dt = 0; dt < PF_NUM_DTYPES; dt++)
        for (int d = 0; d < 3; d++)
            for (int lay = 0; lay < 4; lay++) {
                /* index no larger than x except along d, where it may be longer */
                int64_t ishape[3] = {3, 4, 5}, c[3] = {0, 0, 0};
                ishape[d] = 7;
                pf_tensor x = mk(dt, 3, xshape, lay & 1), index = mk(lay & 2 ? PF_INT32 : PF_INT64, 3, ishape, lay >> 1);
                do pf_store_i64(at(&index, c), index.dtype, irand(xshape[d])); while (next(c, ishape, 3));
                pf_tensor out = mk(dt, 3, ishape, lay & 1);
                CHECK_OK(pf_gather(&x, d, &index, &out));
                int bad = 0;
                do {
                    int64_t xc[3] = {c[0], c[1], c[2]};
                    xc[d] = pf_load_i64(at(&index, c), index.dtype);
                    bad += memcmp(at(&out, c), at(&x, xc), pf_dtype_size[dt]) != 0;
                } while (next(c, ishape, 3));
                CHECK(!bad, "gather %s dim %d layout %d: %d wrong", pf_dtype_name[dt], d, lay, bad);

                /* scatter_add from a src larger than index into x */
                pf_tensor src = mk(dt, 3, (int64_t[]){8, 8, 8}, lay >> 1);
                if (dt == PF_BOOL) {
                    CHECK(pf_scatter_add(&x, d, &index, &src) == PF_ERR_TYPE, "scatter_add bool");
                } else {
                    double want[120];
                    memset(c, 0, sizeof c);
                    for (int i = 0; i < 120; i++, next(c, xshape, 3)) want[i] = pf_load_f64(at(&x, c), dt);
                    memset(c, 0, sizeof c);
                    do {
                        int64_t xc[3] = {c[0], c[1], c[2]};
                        xc[d] = pf_load_i64(at(&index, c), index.dtype);
                        want[(xc[0] * 5 + xc[1]) * 6 + xc[2]] += pf_load_f64(at(&src, c), dt);
                    } while (next(c, ishape, 3));
                    CHECK_OK(pf_scatter_add(&x, d, &index, &src));
                    bad = 0;
                    memset(c, 0, sizeof c);
                    for (int i = 0; i < 120; i++, next(c, xshape, 3)) bad += pf_load_f64(at(&x, c), dt) != stored(dt, want[i]);
                    CHECK(!bad, "scatter_add %s dim %d layout %d: %d wrong", pf_dtype_name[dt], d, lay, bad);
                }
                free(x.data); free(index.data); free(out.data); free(src.data);
            }
}

static void test_nonzero(void) {
    const int64_t shape[3] = {3, 4, 5};
    for (int dt = 0; dt < PF_NUM_DTYPES; dt++)
        for (int lay = 0; lay < 2; lay++) {
            pf_tensor x = mk(dt, 3, shape, lay);
            int64_t c[3] = {0, 0, 0}, want = 0, coords[60][3];
            do {
                int nz = (c[0] * 7 + c[1] * 3 + c[2]) % 4 == 0;
                double v = nz ? (c[2] == 4 && pf_is_float(dt) ? NAN : 2.0) : (pf_is_float(dt) ? -0.0 : 0.0);
                pf_store_f64(at(&x, c), dt, v);
                if (nz) memcpy(coords[want++], c, sizeof c);
            } while (next(c, shape, 3));
            CHECK(pf_count_nonzero(&x) == want, "count_nonzero %s: %lld vs %lld", pf_dtype_name[dt],
                  (long long)pf_count_nonzero(&x), (long long)want);
            /* out transposed in memory: any strides */
            int64_t ob[60 * 3];
            pf_tensor out = {.data = ob, .dtype = PF_INT64, .ndim = 2, .shape = {want, 3}, .strides = {1, want}};
            CHECK_OK(pf_nonzero(&x, &out));
            int bad = 0;
            for (int64_t i = 0; i < want; i++)
                for (int k = 0; k < 3; k++) bad += ob[i + k * want] != coords[i][k];
            CHECK(!bad, "nonzero %s layout %d: %d wrong", pf_dtype_name[dt], lay, bad);
            out.shape[0] = want + 1;
            CHECK(pf_nonzero(&x, &out) == PF_ERR_VALUE, "nonzero count mismatch");
            free(x.data);
        }
    /* large, threaded: same rows as serial */
    int64_t n = 1000003, *res[2], cnt[2];
    pf_tensor x = mk(PF_INT32, 1, &n, 0);
    for (int nt = 1; nt <= 2; nt++) {
        pf_set_num_threads(nt);
        cnt[nt - 1] = pf_count_nonzero(&x);
        res[nt - 1] = malloc((size_t)cnt[nt - 1] * 8);
        pf_tensor out = pf_make(res[nt - 1], PF_INT64, 2, (int64_t[]){cnt[nt - 1], 1});
        CHECK_OK(pf_nonzero(&x, &out));
    }
    int64_t want = 0, bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (((int32_t *)x.data)[i]) bad += res[0][want++] != i;
    CHECK(cnt[0] == want && cnt[1] == want && !bad, "large nonzero: %lld/%lld vs %lld, %lld wrong",
          (long long)cnt[0], (long long)cnt[1], (long long)want, (long long)bad);
    CHECK(memcmp(res[0], res[1], (size_t)want * 8) == 0, "nonzero differs between thread counts");
    pf_set_num_threads(0);
    free(res[0]); free(res[1]); free(x.data);
    /* 0-d */
    double s = 3.0;
    int64_t dummy;
    pf_tensor x0 = {.data = &s, .dtype = PF_FLOAT64, .ndim = 0}, o0 = {.data = &dummy, .dtype = PF_INT64, .ndim = 2, .shape = {1, 0}};
    CHECK(pf_count_nonzero(&x0) == 1, "0-d count");
    CHECK_OK(pf_nonzero(&x0, &o0));
}

static void test_bad_inputs(void) {
    float xb[5] = {1, 2, 3, 4, 5}, ob[5];
    pf_tensor x = pf_make(xb, PF_FLOAT32, 1, (int64_t[]){5}), out = pf_make(ob, PF_FLOAT32, 1, (int64_t[]){1});
    int64_t seven = 7, minus6 = -6, m1 = -1;
    pf_tensor i7 = pf_make(&seven, PF_INT64, 1, (int64_t[]){1}), im6 = pf_make(&minus6, PF_INT64, 1, (int64_t[]){1});
    CHECK(pf_index_select(&x, 0, &i7, &out) == PF_ERR_INDEX, "out of range");
    CHECK(strstr(pf_last_error(), "index 7 is out of bounds for dimension 0 with size 5") != NULL, "msg: %s",
          pf_last_error());
    CHECK(pf_index_select(&x, 0, &im6, &out) == PF_ERR_INDEX, "-6 out of range");
    CHECK(pf_index_add(&x, 0, &i7, &out) == PF_ERR_INDEX, "index_add out of range");
    CHECK(pf_index_copy(&x, 0, &i7, &out) == PF_ERR_INDEX, "index_copy out of range");
    CHECK(strstr(pf_last_error(), "index_copy: index 7") != NULL, "msg: %s", pf_last_error());
    CHECK(pf_index_select(&x, 1, &i7, &out) == PF_ERR_INDEX, "dim out of range");
    CHECK(pf_index_select(&x, -2, &i7, &out) == PF_ERR_INDEX, "dim -2 out of range");
    pf_tensor fidx = pf_make(xb, PF_FLOAT32, 1, (int64_t[]){1});
    CHECK(pf_index_select(&x, 0, &fidx, &out) == PF_ERR_TYPE, "float index");
    int64_t ib[4] = {0, 1, 2, 3};
    pf_tensor i2d = pf_make(ib, PF_INT64, 2, (int64_t[]){2, 2});
    CHECK(pf_index_select(&x, 0, &i2d, &out) == PF_ERR_INDEX, "2-d index");
    pf_tensor i2 = pf_make(ib, PF_INT64, 1, (int64_t[]){2});
    CHECK(pf_index_select(&x, 0, &i2, &out) == PF_ERR_VALUE, "out shape mismatch");
    double dob[2];
    pf_tensor dout = pf_make(dob, PF_FLOAT64, 1, (int64_t[]){2});
    CHECK(pf_index_select(&x, 0, &i2, &dout) == PF_ERR_TYPE, "dtype mismatch");
    pf_tensor im1 = pf_make(&m1, PF_INT64, 1, (int64_t[]){1});
    CHECK_OK(pf_index_select(&x, 0, &im1, &out));
    CHECK(ob[0] == 5, "-1 selects the last: %g", ob[0]);
    CHECK(pf_index_select(NULL, 0, &im1, &out) != PF_OK, "NULL x");

    /* 0-d x: one index, 0 or -1 */
    float s = 4, so = 0;
    pf_tensor x0 = {.data = &s, .dtype = PF_FLOAT32, .ndim = 0}, o0 = {.data = &so, .dtype = PF_FLOAT32, .ndim = 0};
    int64_t zero = 0;
    pf_tensor iz = pf_make(&zero, PF_INT64, 1, (int64_t[]){1}), one = pf_make(ib + 1, PF_INT64, 1, (int64_t[]){1});
    CHECK_OK(pf_index_select(&x0, 0, &iz, &o0));
    CHECK(so == 4, "0-d select: %g", so);
    CHECK(pf_index_select(&x0, 0, &one, &o0) == PF_ERR_INDEX, "0-d index 1");
    CHECK(pf_index_select(&x0, 0, &i2, &o0) == PF_ERR_INDEX, "0-d two indices");

    /* gather / scatter_add: no wrapping, bound named; nothing written on error */
    float g[6] = {1, 2, 3, 4, 5, 6}, go[4] = {0};
    int64_t gi[4] = {0, 2, -1, 1};
    pf_tensor gx = pf_make(g, PF_FLOAT32, 2, (int64_t[]){2, 3}), gidx = pf_make(gi, PF_INT64, 2, (int64_t[]){2, 2});
    pf_tensor gout = pf_make(go, PF_FLOAT32, 2, (int64_t[]){2, 2});
    CHECK(pf_gather(&gx, 1, &gidx, &gout) == PF_ERR_INDEX, "gather -1");
    CHECK(strstr(pf_last_error(), "index -1 is out of bounds for dimension 1 with size 3") != NULL, "msg: %s",
          pf_last_error());
    CHECK(pf_scatter_add(&gx, 1, &gidx, &gout) == PF_ERR_INDEX, "scatter_add -1");
    CHECK(g[0] == 1 && g[1] == 2 && g[2] == 3 && g[5] == 6, "scatter_add wrote before failing");
    gi[2] = 3;
    CHECK(pf_gather(&gx, 1, &gidx, &gout) == PF_ERR_INDEX, "gather 3");
    gi[2] = 0;
    CHECK_OK(pf_gather(&gx, 1, &gidx, &gout));
    CHECK(go[0] == 1 && go[1] == 3 && go[2] == 4 && go[3] == 5, "gather values %g %g %g %g", go[0], go[1], go[2], go[3]);
    pf_tensor gbig = pf_make(gi, PF_INT64, 2, (int64_t[]){3, 1}), gbo = pf_make(go, PF_FLOAT32, 2, (int64_t[]){3, 1});
    CHECK(pf_gather(&gx, 1, &gbig, &gbo) == PF_ERR_VALUE, "index larger than x off dim");
    pf_tensor g1 = pf_make(gi, PF_INT64, 1, (int64_t[]){4});
    CHECK(pf_gather(&gx, 1, &g1, &gout) == PF_ERR_VALUE, "index ndim");
    pf_tensor gout3 = pf_make(go, PF_FLOAT32, 2, (int64_t[]){2, 1});
    CHECK(pf_gather(&gx, 1, &gidx, &gout3) == PF_ERR_VALUE, "gather out shape");
    CHECK(pf_scatter_add(&gx, 1, &gidx, &gout3) == PF_ERR_VALUE, "src smaller than index");
    CHECK(pf_gather(&gx, 2, &gidx, &gout) == PF_ERR_INDEX, "gather dim");
    CHECK(pf_count_nonzero(NULL) == -1, "count_nonzero NULL");
    int64_t nb[2];
    pf_tensor nout = pf_make(nb, PF_INT32, 2, (int64_t[]){1, 2});
    CHECK(pf_nonzero(&gx, &nout) == PF_ERR_TYPE, "nonzero out int32");
}

/* pf_cat_rows: rows joined in order, zero-width inputs skipped, every split of the team
 * covering each element once; bad layouts refused before anything is written */
static void test_cat_rows(void) {
    enum { OUTER = 7, TOTAL = 12 };
    float a[OUTER * 5], b[OUTER * 7], out[OUTER * TOTAL];
    for (int i = 0; i < OUTER * 5; i++) a[i] = (float)i;
    for (int i = 0; i < OUTER * 7; i++) b[i] = (float)(1000 + i);
    const void *xs[3] = {a, NULL, b};
    int64_t w[3] = {5, 0, 7};
    for (int nt = 1; nt <= 4; nt++) {
        pf_set_num_threads(nt);
        memset(out, 0, sizeof out);
        CHECK_OK(pf_cat_rows(PF_FLOAT32, 3, xs, w, OUTER, out));
        int bad = 0;
        for (int r = 0; r < OUTER; r++)
            for (int c = 0; c < TOTAL; c++)
                bad += out[r * TOTAL + c] != (c < 5 ? a[r * 5 + c] : b[r * 7 + c - 5]);
        CHECK(bad == 0, "cat_rows with %d threads: %d wrong", nt, bad);
    }
    pf_set_num_threads(0);
    /* one long row per input, large enough for a team: split inside the rows */
    enum { N = 40000 };
    static int64_t p[N], q[N], o2[2 * N];
    for (int i = 0; i < N; i++) p[i] = i, q[i] = -i;
    const void *pq[2] = {p, q};
    int64_t wn[2] = {N, N};
    CHECK_OK(pf_cat_rows(PF_INT64, 2, pq, wn, 1, o2));
    int bad = 0;
    for (int i = 0; i < 2 * N; i++) bad += o2[i] != (i < N ? i : -(i - N));
    CHECK(bad == 0, "long cat: %d wrong", bad);
    int64_t neg[2] = {5, -1};
    CHECK(pf_cat_rows(PF_FLOAT32, 2, xs, neg, OUTER, out) == PF_ERR_VALUE, "negative width");
    CHECK(pf_cat_rows(PF_FLOAT32, 0, xs, w, OUTER, out) == PF_ERR_VALUE, "no inputs");
    CHECK(pf_cat_rows(PF_NUM_DTYPES, 3, xs, w, OUTER, out) == PF_ERR_TYPE, "dtype code");
    CHECK(pf_cat_rows(PF_FLOAT32, 3, xs, w, -1, out) == PF_ERR_VALUE, "negative rows");
    const void *missing[3] = {a, NULL, NULL};
    CHECK(pf_cat_rows(PF_FLOAT32, 3, missing, w, OUTER, out) == PF_ERR_VALUE, "NULL input with a width");
    int64_t huge[2] = {INT64_MAX / 2, INT64_MAX / 2};
    CHECK(pf_cat_rows(PF_FLOAT32, 2, pq, huge, 1, out) == PF_ERR_VALUE, "width overflow");
    /* index_select_rows: the contiguous form of index_select along dim 0 */
    int64_t idx[3] = {6, -7, 3};
    float sel[3 * 5];
    CHECK_OK(pf_index_select_rows(PF_FLOAT32, a, OUTER, 5, idx, 3, sel));
    bad = 0;
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 5; c++) bad += sel[j * 5 + c] != a[((idx[j] + OUTER) % OUTER) * 5 + c];
    CHECK(bad == 0, "index_select_rows: %d wrong", bad);
    idx[1] = 7;
    CHECK(pf_index_select_rows(PF_FLOAT32, a, OUTER, 5, idx, 3, sel) == PF_ERR_INDEX, "row out of range");
    CHECK(pf_index_select_rows(PF_FLOAT32, a, -1, 5, idx, 3, sel) == PF_ERR_VALUE, "negative rows");
}

/* scatter_reduce on a 1-d float64 tensor against a naive loop, each op with and without the self values */
static void test_scatter_reduce(void) {
    int ops[5] = {PF_SUM, PF_PROD, PF_MEAN, PF_MAX, PF_MIN};
    int64_t n[1] = {4}, m[1] = {6}, idx[6] = {0, 2, 2, 0, 3, 2};
    double src[6] = {1, -2, 3, 0.5, 4, 2}, base[4] = {2, 1, -1, 3};
    for (int o = 0; o < 5; o++)
        for (int self = 0; self < 2; self++) {
            double out[4], want[4];
            int cnt[4] = {0};
            memcpy(out, base, sizeof out);
            memcpy(want, base, sizeof want);
            for (int j = 0; j < 6; j++) {
                int p = (int)idx[j];
                double s = src[j];
                if (!self && !cnt[p]) want[p] = s;
                else if (ops[o] == PF_PROD) want[p] *= s;
                else if (ops[o] == PF_MAX) want[p] = s > want[p] ? s : want[p];
                else if (ops[o] == PF_MIN) want[p] = s < want[p] ? s : want[p];
                else want[p] += s;
                cnt[p]++;
            }
            if (ops[o] == PF_MEAN)
                for (int p = 0; p < 4; p++) want[p] /= cnt[p] ? cnt[p] + self : 1;
            pf_tensor to = pf_make(out, PF_FLOAT64, 1, n), ti = pf_make(idx, PF_INT64, 1, m);
            pf_tensor ts = pf_make(src, PF_FLOAT64, 1, m);
            CHECK_OK(pf_scatter_reduce(&to, 0, &ti, &ts, ops[o], self));
            int bad = 0;
            for (int p = 0; p < 4; p++) bad += fabs(out[p] - want[p]) > 1e-12;
            CHECK(bad == 0, "scatter_reduce op %d include_self %d: %d mismatches", ops[o], self, bad);
        }
    double out[4];
    pf_tensor to = pf_make(out, PF_FLOAT64, 1, n), ti = pf_make(idx, PF_INT64, 1, m), ts = pf_make(src, PF_FLOAT64, 1, m);
    CHECK(pf_scatter_reduce(&to, 0, &ti, &ts, PF_VAR, 1) == PF_ERR_VALUE, "an unknown reduction must fail");
}

int main(void) {
    test_scatter_reduce();
    test_index_select_add();
    test_index_parallel();
    test_gather_scatter();
    test_nonzero();
    test_bad_inputs();
    test_cat_rows();
    return pf_test_summary("test_index");
}
