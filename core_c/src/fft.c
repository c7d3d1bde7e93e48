/* Discrete Fourier transforms along one dim of strided float32/float64 tensors, a complex signal held as two
 * real tensors (re, im): complex to complex, a Hermitian half-spectrum to a real signal (c2r) and a real signal
 * to its half-spectrum (r2c). Each line is copied into double buffers and transformed there: an iterative
 * radix-2 FFT when its length is a power of two, Bluestein's chirp-z (a circular convolution by three radix-2
 * FFTs) otherwise, so every length is O(n log n). Unnormalized: the caller scales. */
#include <math.h>
#include <stdlib.h>
#include "core.h"

#define PF_PI 3.14159265358979323846

/* in-place radix-2 FFT of length n (a power of two): x_k = sum_j x_j exp(sign 2 pi i j k / n) */
static void fft_pow2(double *re, double *im, int64_t n, int sign) {
    for (int64_t i = 1, j = 0; i < n; i++) {
        int64_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double t = re[i];
            re[i] = re[j], re[j] = t;
            t = im[i];
            im[i] = im[j], im[j] = t;
        }
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
        double ang = sign * 2 * PF_PI / (double)len;
        for (int64_t i = 0; i < n; i += len)
            for (int64_t k = 0; k < len / 2; k++) {
                double wr = cos(ang * (double)k), wi = sin(ang * (double)k);
                int64_t a = i + k, b = i + k + len / 2;
                double xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr, im[b] = im[a] - xi;
                re[a] += xr, im[a] += xi;
            }
    }
}

/* the work space dft() needs for length n: 4 m doubles, m the power of two >= 2n - 1 (0 for a power of two) */
static int64_t dft_work(int64_t n) {
    if ((n & (n - 1)) == 0) return 0;
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    return 4 * m;
}

/* in-place DFT of any length n >= 1 */
static void dft(double *re, double *im, int64_t n, int sign, double *work) {
    if ((n & (n - 1)) == 0) {
        fft_pow2(re, im, n, sign);
        return;
    }
    int64_t m = dft_work(n) / 4;
    double *ar = work, *ai = work + m, *br = work + 2 * m, *bi = work + 3 * m;
    for (int64_t i = 0; i < 4 * m; i++) work[i] = 0;
    /* jk = (j^2 + k^2 - (k - j)^2) / 2: x_k = c_k sum_j (x_j c_j) conj(c_(k-j)), c_j = exp(sign pi i j^2 / n) */
    for (int64_t j = 0; j < n; j++) {
        double ang = sign * PF_PI * (double)((j * j) % (2 * n)) / (double)n, cr = cos(ang), ci = sin(ang);
        ar[j] = re[j] * cr - im[j] * ci, ai[j] = re[j] * ci + im[j] * cr;
        br[j] = cr, bi[j] = -ci;
        if (j) br[m - j] = cr, bi[m - j] = -ci;
    }
    fft_pow2(ar, ai, m, -1);
    fft_pow2(br, bi, m, -1);
    for (int64_t i = 0; i < m; i++) {
        double r = ar[i] * br[i] - ai[i] * bi[i], s = ar[i] * bi[i] + ai[i] * br[i];
        ar[i] = r, ai[i] = s;
    }
    fft_pow2(ar, ai, m, 1);
    for (int64_t k = 0; k < n; k++) {
        double ang = sign * PF_PI * (double)((k * k) % (2 * n)) / (double)n, cr = cos(ang), ci = sin(ang);
        double r = ar[k] / (double)m, s = ai[k] / (double)m;
        re[k] = r * cr - s * ci, im[k] = r * ci + s * cr;
    }
}

/* element offset of line L (every index but dim's, row-major) in t */
static int64_t line_offset(const pf_tensor *t, int dim, int64_t L) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += L % t->shape[d] * t->strides[d];
        L /= t->shape[d];
    }
    return off;
}

static void load_line(const pf_tensor *t, int dim, int64_t L, int64_t len, double *dst) {
    int64_t sz = (int64_t)pf_dtype_size[t->dtype], s = t->strides[dim] * sz;
    const char *p = (const char *)t->data + line_offset(t, dim, L) * sz;
    for (int64_t i = 0; i < len; i++) dst[i] = pf_load_f64(p + i * s, t->dtype);
}

static void store_line(pf_tensor *t, int dim, int64_t L, int64_t len, const double *src) {
    int64_t sz = (int64_t)pf_dtype_size[t->dtype], s = t->strides[dim] * sz;
    char *p = (char *)t->data + line_offset(t, dim, L) * sz;
    for (int64_t i = 0; i < len; i++) pf_store_f64(p + i * s, t->dtype, src[i]);
}

static int same_shape_but(const pf_tensor *a, const pf_tensor *b, int dim) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (d != dim && a->shape[d] != b->shape[d]) return 0;
    return 1;
}

int pf_fft(const pf_tensor *re, const pf_tensor *im, pf_tensor *out_re, pf_tensor *out_im, int dim, int mode,
           int sign) {
    const char *fn = "fft";
    int rc;
    if ((rc = pf_check(re, "input")) || (im && (rc = pf_check(im, "input (imaginary part)"))) ||
        (rc = pf_check(out_re, "out")) || (out_im && (rc = pf_check(out_im, "out (imaginary part)"))))
        return rc;
    const pf_tensor *all[4] = {re, im, out_re, out_im};
    for (int i = 0; i < 4; i++)
        if (all[i] && all[i]->dtype != re->dtype)
            return pf_error(PF_ERR_TYPE, "%s: every operand must have the input's dtype", fn);
    if (re->dtype != PF_FLOAT32 && re->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "%s: float32 or float64 only, got %s", fn, pf_dtype_name[re->dtype]);
    if (dim < 0 || dim >= re->ndim) return pf_error(PF_ERR_VALUE, "%s: dim %d out of range", fn, dim);
    if (mode < 0 || mode > 2 || (sign != 1 && sign != -1))
        return pf_error(PF_ERR_VALUE, "%s: mode must be 0, 1 or 2 and sign +-1", fn);
    if ((mode != 1 && !out_im) || (mode == 2 && im))
        return pf_error(PF_ERR_VALUE, "%s: an imaginary output (and no imaginary input for r2c) is needed", fn);
    int64_t nin = re->shape[dim], nout = out_re->shape[dim];
    int64_t n = mode == 1 ? nout : nin;
    int64_t want_in = mode == 1 ? n / 2 + 1 : n, want_out = mode == 2 ? n / 2 + 1 : n;
    if ((im && (!same_shape_but(re, im, dim) || im->shape[dim] != nin)) || !same_shape_but(re, out_re, dim) ||
        (out_im && (!same_shape_but(re, out_im, dim) || out_im->shape[dim] != nout)) || nin != want_in ||
        nout != want_out || n < 1)
        return pf_error(PF_ERR_VALUE, "%s: shapes do not fit a transform of length %lld along dim %d", fn,
                        (long long)n, dim);
    int64_t lines = 1;
    for (int d = 0; d < re->ndim; d++)
        if (d != dim) lines *= re->shape[d];
    double *buf = malloc(sizeof(double) * (size_t)(2 * n + dft_work(n) + 1));
    if (!buf) return pf_error(PF_ERR_NOMEM, "%s: out of memory for a line of %lld", fn, (long long)n);
    double *br = buf, *bi = buf + n, *work = buf + 2 * n;
    for (int64_t L = 0; L < lines; L++) {
        for (int64_t i = 0; i < 2 * n; i++) buf[i] = 0;
        load_line(re, dim, L, nin, br);
        if (im) load_line(im, dim, L, nin, bi);
        if (mode == 1) { /* the Hermitian extension: x_(n-k) = conj(x_k); DC's and Nyquist's imaginary parts drop */
            bi[0] = 0;
            if (n % 2 == 0) bi[n / 2] = 0;
            for (int64_t k = 1; k < (n + 1) / 2; k++) br[n - k] = br[k], bi[n - k] = -bi[k];
        }
        dft(br, bi, n, sign, work);
        store_line(out_re, dim, L, nout, br);
        if (out_im) store_line(out_im, dim, L, nout, bi);
    }
    free(buf);
    return PF_OK;
}
