/* matmul throughput: best-of-runs GFLOP/s per GEMM path, float32 for square sizes and a
 * few layer-like shapes, then float64 squares. Usage: bench_gemm [path ...] (default: every path this CPU has).
 * Compare with numpy in a separate process: a shared process would fight over the cores.
 * Build: make build/c/bench_gemm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* (M, K, N, transposed b, float64) */
static const int64_t shapes[][5] = {
    {256, 256, 256, 0},  {512, 512, 512, 0},   {1024, 1024, 1024, 0}, {2048, 2048, 2048, 0},
    {1024, 1024, 1024, 1}, {64, 64, 64, 0},    {32, 32, 32, 0},       {64, 784, 128, 0},
    {64, 784, 128, 1},   {128, 512, 512, 0},   {128, 512, 512, 1},    {1, 784, 128, 0},
    {256, 256, 256, 0, 1}, {1024, 1024, 1024, 0, 1},
};

static void *filled(int64_t n, int dt) {
    void *p = pf_alloc(n * pf_dtype_size[dt]);
    for (int64_t i = 0; i < n; i++) pf_store_f64((char *)p + i * pf_dtype_size[dt], dt, (double)(i % 17) * 0.1 - 0.8);
    return p;
}

static double bench(int64_t M, int64_t K, int64_t N, int tb, int dt) {
    void *a = filled(M * K, dt), *b = filled(K * N, dt), *c = filled(M * N, dt);
    pf_tensor ta = {.data = a, .dtype = dt, .ndim = 2, .shape = {M, K}, .strides = {K, 1}};
    pf_tensor tbt = {.data = b, .dtype = dt, .ndim = 2, .shape = {K, N}, .strides = {N, 1}};
    if (tb) tbt.strides[0] = 1, tbt.strides[1] = K;
    pf_tensor tc = {.data = c, .dtype = dt, .ndim = 2, .shape = {M, N}, .strides = {N, 1}};
    /* best of many ~2 ms chunks over 0.4 s: other processes on a 2-core box only add time */
    double flops = 2.0 * M * N * K, best = 1e30, end = now() + 0.4;
    int reps = (int)(4e8 / flops) + 1;
    for (int run = 0; run < 5 || now() < end; run++) {
        double t = now();
        for (int r = 0; r < reps; r++) pf_matmul(&ta, &tbt, &tc);
        t = (now() - t) / reps;
        if (t < best) best = t;
    }
    pf_free(a), pf_free(b), pf_free(c);
    return flops / best * 1e-9;
}

int main(int argc, char **argv) {
    static const char *const all[] = {"avx512", "avx2", "portable"};
    const char *const *paths = argc > 1 ? (const char *const *)argv + 1 : all;
    int np = argc > 1 ? argc - 1 : 3;
    printf("threads %d\n%-22s", pf_threads(), "M x K x N");
    for (int p = 0; p < np; p++) printf("%10s", paths[p]);
    printf("   GFLOP/s\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        char name[64];
        snprintf(name, sizeof name, "%lldx%lldx%lld%s%s", (long long)shapes[s][0], (long long)shapes[s][1],
                 (long long)shapes[s][2], shapes[s][3] ? " bT" : "", shapes[s][4] ? " f64" : "");
        printf("%-22s", name);
        for (int p = 0; p < np; p++) {
            if (pf_gemm_select(paths[p]) != PF_OK) {
                printf("%10s", "-");
                continue;
            }
            printf("%10.1f", bench(shapes[s][0], shapes[s][1], shapes[s][2], (int)shapes[s][3],
                                    shapes[s][4] ? PF_FLOAT64 : PF_FLOAT32));
            fflush(stdout);
        }
        printf("\n");
    }
    return 0;
}
