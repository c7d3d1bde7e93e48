/* layer_norm.c: forward (y, the saved mean and 1/std) and backward (gx, gw, gb) against a double
 * reference, with and without weight and bias, rows of every length around the 16 lanes, serial
 * and threaded sizes, thread-count independence of gw and gb; bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "check.h"

typedef struct {
    char *x, *w, *b, *y, *mean, *rstd, *g, *gx, *gw, *gb;
} ln_bufs;

static ln_bufs alloc_bufs(int dt, int64_t rows, int64_t d) {
    size_t es = pf_dtype_size[dt], rd = (size_t)(rows * d) * es + 1, dd = (size_t)d * es, rr = (size_t)rows * es + 1;
    ln_bufs u = {malloc(rd), malloc(dd), malloc(dd), malloc(rd), malloc(rr), malloc(rr), malloc(rd), malloc(rd),
                 malloc(dd), malloc(dd)};
    unsigned seed = 4;
    for (int64_t i = 0; i < rows * d; i++) {
        pf_store_f64(u.x + i * es, dt, 3 + 2 * frand(&seed)); /* a mean away from 0 */
        pf_store_f64(u.g + i * es, dt, frand(&seed));
    }
    for (int64_t j = 0; j < d; j++) {
        pf_store_f64(u.w + j * es, dt, 1 + frand(&seed));
        pf_store_f64(u.b + j * es, dt, frand(&seed));
    }
    return u;
}

static void free_bufs(ln_bufs *u) {
    char **p = &u->x;
    for (int k = 0; k < 10; k++) free(p[k]);
}

/* worst error, relative to max(1, |reference|), over every output */
static double ln_case(int dt, int64_t rows, int64_t d, int affine) {
    size_t es = pf_dtype_size[dt];
    ln_bufs u = alloc_bufs(dt, rows, d);
    const void *w = affine ? u.w : NULL, *b = affine ? u.b : NULL;
    CHECK_OK(pf_layer_norm(dt, u.x, w, b, u.y, u.mean, u.rstd, rows, d, 1e-5));
    CHECK_OK(pf_layer_norm_backward(dt, u.g, u.x, u.mean, u.rstd, w, u.gx, affine ? u.gw : NULL,
                                    affine ? u.gb : NULL, rows, d));
    double worst = 0, *rgw = calloc((size_t)d, 8), *rgb = calloc((size_t)d, 8);
#define AT(buf, i) pf_load_f64((buf) + (i) * es, dt)
#define CLOSE(got, want) worst = fmax(worst, fabs((got) - (want)) / fmax(1, fabs(want)))
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, v = 0, a = 0, c = 0;
        for (int64_t j = 0; j < d; j++) m += AT(u.x, r * d + j);
        m /= (double)d;
        for (int64_t j = 0; j < d; j++) v += (AT(u.x, r * d + j) - m) * (AT(u.x, r * d + j) - m);
        double rs = 1 / sqrt(v / (double)d + 1e-5);
        CLOSE(AT(u.mean, r), m);
        CLOSE(AT(u.rstd, r), rs);
        for (int64_t j = 0; j < d; j++) {
            double xh = (AT(u.x, r * d + j) - m) * rs, gh = AT(u.g, r * d + j) * (affine ? AT(u.w, j) : 1);
            CLOSE(AT(u.y, r * d + j), affine ? xh * AT(u.w, j) + AT(u.b, j) : xh);
            a += gh, c += gh * xh;
            rgw[j] += AT(u.g, r * d + j) * xh, rgb[j] += AT(u.g, r * d + j);
        }
        for (int64_t j = 0; j < d; j++) {
            double xh = (AT(u.x, r * d + j) - m) * rs, gh = AT(u.g, r * d + j) * (affine ? AT(u.w, j) : 1);
            CLOSE(AT(u.gx, r * d + j), rs * (gh - a / (double)d - xh * c / (double)d));
        }
    }
    for (int64_t j = 0; affine && j < d; j++) {
        CLOSE(AT(u.gw, j), rgw[j]);
        CLOSE(AT(u.gb, j), rgb[j]);
    }
#undef AT
#undef CLOSE
    free(rgw), free(rgb);
    free_bufs(&u);
    return worst;
}

static void test_values(void) {
    const int64_t shapes[][2] = {{1, 1}, {3, 15}, {5, 16}, {4, 33}, {3000, 40}}; /* the last threaded */
    pf_set_num_threads(2);
    for (int dt = PF_FLOAT32; dt <= PF_FLOAT64; dt++)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            for (int affine = 0; affine < 2; affine++) {
                double err = ln_case(dt, shapes[k][0], shapes[k][1], affine);
                CHECK(err < (dt == PF_FLOAT32 ? 2e-4 : 1e-11), "layer_norm %s [%lld, %lld] affine=%d: %g",
                      pf_dtype_name[dt], (long long)shapes[k][0], (long long)shapes[k][1], affine, err);
            }
    pf_set_num_threads(0);
}

/* gw and gb are summed per column in row order by whichever thread owns the column */
static void test_threads_agree(void) {
    int64_t rows = 2000, d = 64;
    ln_bufs u = alloc_bufs(PF_FLOAT32, rows, d);
    float gw1[64], gb1[64];
    CHECK_OK(pf_layer_norm(PF_FLOAT32, u.x, u.w, u.b, u.y, u.mean, u.rstd, rows, d, 1e-5));
    pf_set_num_threads(1);
    CHECK_OK(pf_layer_norm_backward(PF_FLOAT32, u.g, u.x, u.mean, u.rstd, u.w, NULL, gw1, gb1, rows, d));
    pf_set_num_threads(2);
    CHECK_OK(pf_layer_norm_backward(PF_FLOAT32, u.g, u.x, u.mean, u.rstd, u.w, NULL, u.gw, u.gb, rows, d));
    pf_set_num_threads(0);
    CHECK(!memcmp(gw1, u.gw, sizeof gw1) && !memcmp(gb1, u.gb, sizeof gb1), "gw, gb differ between 1 and 2 threads");
    free_bufs(&u);
}

static void test_bad_input(void) {
    float x[4] = {1, 2, 3, 4}, y[4], m[2], r[2], gw[2] = {5, 5}, gb[2] = {5, 5};
    CHECK(pf_layer_norm(PF_INT64, x, NULL, NULL, y, m, r, 2, 2, 1e-5) == PF_ERR_TYPE, "int64");
    CHECK(pf_layer_norm(PF_FLOAT32, x, NULL, NULL, y, m, r, 2, 0, 1e-5) == PF_ERR_VALUE, "d = 0");
    CHECK(pf_layer_norm(PF_FLOAT32, x, NULL, NULL, y, m, r, 2, 2, -1) == PF_ERR_VALUE, "negative eps");
    CHECK(pf_layer_norm(PF_FLOAT32, x, NULL, NULL, NULL, m, r, 2, 2, 1e-5) == PF_ERR_VALUE, "NULL output");
    CHECK(pf_layer_norm_backward(PF_FLOAT32, NULL, x, m, r, NULL, y, NULL, NULL, 2, 2) == PF_ERR_VALUE, "NULL grad");
    /* no rows: the parameter gradients are sums over nothing */
    CHECK_OK(pf_layer_norm_backward(PF_FLOAT32, NULL, NULL, NULL, NULL, NULL, NULL, gw, gb, 0, 2));
    CHECK(gw[0] == 0 && gw[1] == 0 && gb[0] == 0 && gb[1] == 0, "zero rows leave %g %g %g %g", gw[0], gw[1], gb[0], gb[1]);
}

int main(void) {
    test_values();
    test_threads_agree();
    test_bad_input();
    return pf_test_summary("test_layer_norm");
}
