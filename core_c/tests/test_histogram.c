/* histogram.c: bincount, histc and histogramdd against naive counts, and their error paths. */
#include "core.h"
#include "check.h"

static void test_bins(void) {
    int64_t x[7] = {0, 3, 1, 3, 3, 0, 1}, n[1] = {7}, nb[1] = {5}, counts[5] = {0};
    pf_tensor tx = pf_make(x, PF_INT64, 1, n), tc = pf_make(counts, PF_INT64, 1, nb);
    CHECK_OK(pf_bincount(&tx, NULL, &tc));
    CHECK(counts[0] == 2 && counts[1] == 2 && counts[2] == 0 && counts[3] == 3 && counts[4] == 0, "bincount");
    x[2] = 5;
    CHECK(pf_bincount(&tx, NULL, &tc) == PF_ERR_VALUE, "a value past the bins must fail");
    float v[6] = {0.f, 0.5f, 1.f, 2.f, -0.1f, 1.f / 3.f}, h[4] = {0};
    int64_t vn[1] = {6}, hn[1] = {4};
    pf_tensor tv = pf_make(v, PF_FLOAT32, 1, vn), th = pf_make(h, PF_FLOAT32, 1, hn);
    CHECK_OK(pf_histc(&tv, NULL, 0.0, 2.0, &th));
    /* bins of width 0.5: 0 and 1/3 -> 0, 0.5 -> 1, 1 -> 2, 2 (the last edge) -> 3, -0.1 outside */
    CHECK(h[0] == 2 && h[1] == 1 && h[2] == 1 && h[3] == 1, "histc: %g %g %g %g", h[0], h[1], h[2], h[3]);
    CHECK(pf_histc(&tv, NULL, 1.0, 1.0, &th) == PF_ERR_VALUE, "an empty range must fail");
    double pts[8] = {0, 0, 1, 1, 2, 0.5, 9, 9}, edges[6] = {0, 1, 2, 0, 0.5, 1}, hist[4] = {0}, w[4] = {1, 2, 3, 4};
    int64_t ps[2] = {4, 2}, es[1] = {6}, hs[2] = {2, 2}, ws[1] = {4}, ne[2] = {3, 3};
    pf_tensor tp = pf_make(pts, PF_FLOAT64, 2, ps), te = pf_make(edges, PF_FLOAT64, 1, es);
    pf_tensor thd = pf_make(hist, PF_FLOAT64, 2, hs), tw = pf_make(w, PF_FLOAT64, 1, ws);
    CHECK_OK(pf_histogramdd(&tp, &tw, &te, ne, &thd));
    /* (0, 0) -> [0][0]; (1, 1) -> [1][1] (right edges closed); (2, 0.5) -> [1][1]; (9, 9) outside */
    CHECK(hist[0] == 1 && hist[1] == 0 && hist[2] == 0 && hist[3] == 5, "histogramdd: %g %g %g %g", hist[0], hist[1],
          hist[2], hist[3]);
    ne[1] = 2;
    CHECK(pf_histogramdd(&tp, &tw, &te, ne, &thd) == PF_ERR_VALUE, "edges that do not fit hist must fail");
}

int main(void) {
    test_bins();
    return pf_test_summary("test_histogram");
}
