/* pyframe core: the whole C API.
 *
 * cffi's cdef reads this very file, so it holds only what cdef understands: plain
 * #define integer constants, enums, one struct and prototypes (no #include, no #ifdef).
 *
 * Conventions
 * - Integer types are int64_t / uint64_t; the includer provides <stdint.h> and <stddef.h>.
 * - A tensor is a pf_tensor descriptor: data already offset to element 0, strides in
 *   elements (0 = broadcast). The caller allocates every buffer.
 * - Every entry point returns PF_OK or an error code; pf_last_error() then holds a
 *   message naming the shapes or values involved. Nothing aborts.
 * - Shapes and dtypes are checked here too, not only in Python.
 */

#define PF_MAX_DIMS 8

/* dtypes; the order is the index of every per-dtype table */
#define PF_FLOAT32 0
#define PF_FLOAT64 1
#define PF_FLOAT16 2
#define PF_INT64 3
#define PF_INT32 4
#define PF_BOOL 5
#define PF_UINT8 6
#define PF_INT8 7
#define PF_INT16 8
#define PF_BFLOAT16 9 /* stored as the top 16 bits of a float32, rounded to nearest even */
#define PF_NUM_DTYPES 10

/* error codes, mapped to Python exception types by pyframe/_backend.py */
#define PF_OK 0
#define PF_ERR_VALUE 1
#define PF_ERR_INDEX 2
#define PF_ERR_TYPE 3
#define PF_ERR_RUNTIME 4
#define PF_ERR_NOMEM 5
#define PF_ERR_LINALG 6  /* a singular or indefinite matrix, no convergence: LinAlgError */

/* unary ops: y = f(x; p0, p1); output dtype = input dtype unless noted. Each code has one row in
 * elementwise.c's UNARY_OPS (its kernels and name); a count assertion there fails the build when a
 * code here has no row. New codes go last, before PF_NUM_UNARY. */
enum {
    PF_NEG,
    PF_ABS,
    PF_EXP,
    PF_LOG,
    PF_SQRT,
    PF_TANH,
    PF_SIGMOID,
    PF_RELU,
    PF_SIN,
    PF_COS,
    PF_SIGN,
    PF_RECIPROCAL,
    PF_SQUARE,
    PF_ERF,
    PF_CLAMP,       /* clamp(x, p0, p1); use +-inf for an open side */
    PF_POW_SCALAR,  /* x ** p0 */
    PF_RPOW_SCALAR, /* p0 ** x */
    PF_ISNAN,       /* -> bool */
    PF_ISINF,       /* -> bool */
    PF_ISFINITE,    /* -> bool */
    PF_LOGICAL_NOT, /* -> bool */
    PF_LOG1P,
    PF_EXPM1,
    PF_FLOOR,
    PF_CEIL,
    PF_ROUND,
    PF_RSQRT,
    PF_TAN,
    PF_SINH,
    PF_COSH,
    PF_ASIN,
    PF_ACOS,
    PF_ATAN,
    PF_ASINH,
    PF_ACOSH,
    PF_ATANH,
    PF_LOG2,
    PF_LOG10,
    PF_EXP2,
    PF_ERFC,
    PF_TRUNC,
    PF_LOGIT, /* log(x / (1 - x)); when p1 != 0, x is first clamped to [p0, 1 - p0] (torch's eps) */
    PF_LGAMMA,
    PF_DIGAMMA,
    PF_TRIGAMMA, /* digamma's derivative */
    PF_ERFINV,
    PF_I0, /* modified Bessel functions of the first kind, orders 0 and 1, and their exp(-|x|)-scaled forms */
    PF_I0E,
    PF_I1,
    PF_I1E,
    PF_BESSEL_J0, /* Bessel functions of the first and second kind, orders 0 and 1 */
    PF_BESSEL_J1,
    PF_BESSEL_Y0,
    PF_BESSEL_Y1,
    PF_POLYGAMMA, /* p0 = n >= 0 */
    PF_NDTRI,
    PF_ERFCX,
    PF_AIRY_AI,
    PF_BESSEL_K0, /* modified Bessel functions of the second kind, and exp(x) K(x) */
    PF_BESSEL_K1,
    PF_BESSEL_K0E,
    PF_BESSEL_K1E,
    PF_FREXP_MANTISSA, /* frexp's two results: mantissa in [0.5, 1) (sign kept), exponent (a float value) */
    PF_FREXP_EXPONENT,
    /* activations with torch's parameters (their gradients: pf_activation_backward) */
    PF_LEAKY_RELU, /* x > 0 ? x : p0 x */
    PF_ELU,        /* x <= 0 ? p0 expm1(p1 x) : x (elu: p1 = 1; celu: p1 = 1 / p0) */
    PF_SELU,       /* scale (x <= 0 ? alpha expm1(x) : x) with torch's constants */
    PF_SOFTPLUS,   /* p0 x > p1 ? x : log1p(exp(p0 x)) / p0 (p0 = beta, p1 = threshold) */
    PF_MISH,       /* x tanh(log1p(exp(x))), as x n / (n + 2) with n = e^x (e^x + 2) */
    PF_SILU,       /* x sigmoid(x) */
    PF_HARDSIGMOID, /* clamp(x + 3, 0, 6) / 6 */
    PF_HARDSWISH,   /* x clamp(x + 3, 0, 6) / 6 */
    PF_NUM_UNARY
};

/* binary ops: out = a op b, a and b broadcast to out, a, b same dtype; one row each in elementwise.c's
 * BINARY_OPS, counted the same way */
enum {
    PF_ADD,
    PF_SUB,
    PF_MUL,
    PF_DIV,
    PF_POW,
    PF_MAXIMUM,
    PF_MINIMUM,
    PF_EQ, /* comparisons and logical ops -> bool */
    PF_NE,
    PF_LT,
    PF_LE,
    PF_GT,
    PF_GE,
    PF_LOGICAL_AND,
    PF_LOGICAL_OR,
    PF_LOGICAL_XOR,
    PF_ATAN2,
    PF_REMAINDER,    /* Python-style modulo, sign of b */
    PF_FLOOR_DIVIDE,
    /* fused activation gradients, float dtypes: a = incoming gradient, b = the activation's output */
    PF_RELU_BACKWARD,    /* b <= 0 ? 0 : a (a NaN output passes the gradient, as torch) */
    PF_TANH_BACKWARD,    /* a * (1 - b * b) */
    PF_SIGMOID_BACKWARD, /* a * (b * (1 - b)) */
    PF_ZETA,             /* Hurwitz zeta(a, b) */
    PF_NEXTAFTER,
    /* orthogonal polynomials of a with degree b (truncated to an integer) */
    PF_CHEBYSHEV_T,
    PF_CHEBYSHEV_U,
    PF_CHEBYSHEV_V,
    PF_CHEBYSHEV_W,
    PF_SHIFTED_CHEBYSHEV_T,
    PF_SHIFTED_CHEBYSHEV_U,
    PF_SHIFTED_CHEBYSHEV_V,
    PF_SHIFTED_CHEBYSHEV_W,
    PF_HERMITE_H,
    PF_HERMITE_HE,
    PF_LAGUERRE_L,
    PF_LEGENDRE_P,
    PF_IGAMMA,  /* regularized incomplete gamma functions of a (shape) and b (x): P(a, b) and Q(a, b) */
    PF_IGAMMAC,
    /* binary_cross_entropy_with_logits without pos_weight: a = logits, b = targets */
    PF_BCE_WITH_LOGITS,          /* (1 - b) a + softplus(-a), softplus(-a) = log1p(exp(-|a|)) + max(-a, 0) */
    PF_BCE_WITH_LOGITS_BACKWARD, /* sigmoid(a) - b: the gradient before the incoming one's factor */
    PF_NUM_BINARY
};

/* reductions over the last `nred` dims of x */
#define PF_SUM 0
#define PF_MEAN 1
#define PF_MAX 2         /* values; indices too when idx != NULL */
#define PF_MIN 3
#define PF_ARGMAX 4      /* writes idx only */
#define PF_ARGMIN 5
#define PF_VAR 6         /* uses `correction` (Bessel: 1) */
#define PF_PROD 7
#define PF_ANY 8         /* -> bool */
#define PF_ALL 9         /* -> bool */
#define PF_NUM_REDUCE 10

/* scans (scan.c) */
#define PF_SCAN_SUM 0
#define PF_SCAN_PROD 1
#define PF_SCAN_LOGSUMEXP 2 /* floating out only */

/* random kinds */
#define PF_RAND_UNIFORM 0 /* [p0, p1) */
#define PF_RAND_NORMAL 1  /* mean p0, std p1 */
#define PF_RAND_INT 2     /* integers in [p0, p1) */
#define PF_RAND_BERNOULLI 3 /* 1 with probability p0 */
#define PF_RAND_GAMMA 4     /* pf_random_param: Gamma(a, 1) */
#define PF_RAND_POISSON 5   /* pf_random_param: Poisson(a) */
#define PF_RAND_BINOMIAL 6  /* pf_random_param: Binomial(count a, prob b) */

typedef struct {
    void *data;
    int dtype;
    int ndim;
    int64_t shape[PF_MAX_DIMS];
    int64_t strides[PF_MAX_DIMS];
} pf_tensor;

/* memory: 64-byte aligned, cached by size class for reuse (up to pf_cache_limit() bytes kept:
 * 1 GiB or 1/16 of physical memory, whichever is less); pf_free(NULL) is a no-op;
 * pf_empty_cache returns the cached blocks to the system */
void *pf_alloc(size_t nbytes);
void pf_free(void *ptr);
void pf_empty_cache(void);
size_t pf_cache_limit(void);
size_t pf_cached_bytes(void);
/* out[0] bytes in blocks handed out and not freed, out[1] the most there were since the last
 * pf_reset_peak (or the start), out[2] bytes cached; sizes are the blocks' size classes; under
 * AddressSanitizer (no cache) all three stay 0 */
void pf_memory_stats(int64_t out[3]);
void pf_reset_peak(void);

/* errors: message of the last failing call on this thread */
const char *pf_last_error(void);

/* threads: n <= 0 restores the default (OMP_NUM_THREADS or the core count) */
void pf_set_num_threads(int n);
int pf_get_num_threads(void);
int pf_openmp_enabled(void);
const char *pf_compiler(void);

/* GEMM path: "avx512", "avx2", "portable"; "auto" picks the best the CPU supports */
int pf_gemm_select(const char *path);
const char *pf_gemm_path(void);
int pf_cpu_supports(const char *path);

/* elementwise (elementwise.c) */
int pf_unary(int op, const pf_tensor *x, pf_tensor *out, double p0, double p1);
int pf_unary_contig(int op, int dtype, const void *x, void *out, int64_t n);
int pf_binary(int op, const pf_tensor *a, const pf_tensor *b, pf_tensor *out);
int pf_binary_contig(int op, int dtype, const void *a, const void *b, void *out, int64_t n);
/* out = a op s (or s op a when scalar_first) over n contiguous float32/float64 elements;
   pow with s = 2 squares exactly, as torch and NumPy do */
int pf_binary_scalar(int op, int dtype, const void *a, double s, void *out, int64_t n, int scalar_first);
int pf_where(const pf_tensor *cond, const pf_tensor *a, const pf_tensor *b, pf_tensor *out);
/* out = a + alpha * b (add's alpha; sub passes -alpha) with broadcasting, one dtype throughout, in one rounding as
   torch's fused multiply-add: alpha for floating dtypes (cast to the dtype first, as torch), ialpha for integer ones
   (wrapping); bool is not accepted */
int pf_axpy(const pf_tensor *a, const pf_tensor *b, double alpha, int64_t ialpha, pf_tensor *out);
/* copy with broadcasting of src to dst's shape and dtype conversion */
int pf_copy(const pf_tensor *src, pf_tensor *dst);
/* value for floating dst, ivalue for integer and bool dst */
int pf_fill(pf_tensor *dst, double value, int64_t ivalue);
/* dst[i] = start + i * step for a 1-d dst; linspace-style symmetric fill when end is used */
int pf_arange(pf_tensor *dst, double start, double step);
int pf_linspace(pf_tensor *dst, double start, double end);

/* reductions (reduce.c): out holds x's first ndim - nred dims */
int pf_reduce(int op, const pf_tensor *x, int nred, pf_tensor *out, pf_tensor *idx, double correction);
/* softmax / log_softmax over the last dim of x */
int pf_softmax(const pf_tensor *x, pf_tensor *out, int log);
/* The same over `rows` contiguous rows of n elements each, without descriptors (the ops' lean
 * paths): out [rows] of out_dtype (NULL for argmax/argmin), idx [rows] int64 or NULL. */
int pf_reduce_rows(int op, int dtype, const void *x, int64_t rows, int64_t n, void *out, int out_dtype,
                   void *idx, double correction);
int pf_softmax_rows(int dtype, const void *x, void *out, int64_t rows, int64_t n, int log);
/* the gradient of softmax (log: log_softmax) over `rows` contiguous rows of n from the output y and its gradient g:
   log_softmax g - exp(y) sum(g), softmax y (g - sum(g y)); float32 or float64; gx may be g */
int pf_softmax_backward_rows(int dtype, const void *g, const void *y, void *gx, int64_t rows, int64_t n, int log);
/* out[0] = sum of a[i * sa] * b[i * sb] for i < n, float32 or float64 (torch.dot), accumulated in
 * double lanes in a fixed order */
int pf_dot(int dtype, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n, void *out);

/* sorting and selection (sort.c): along `dim` of a contiguous x; values (x's dtype) and indices
 * (int64) contiguous with x's shape but k at dim. NaN counts as the largest value. sort is
 * stable; topk returns the k largest (or smallest), in order, ties to the lower index. */
int pf_sort(const pf_tensor *x, int dim, int descending, pf_tensor *values, pf_tensor *indices);
int pf_topk(const pf_tensor *x, int dim, int64_t k, int largest, pf_tensor *values, pf_tensor *indices);
/* torch.mode of each row of a contiguous x [rows, n]: values [rows] (x's dtype), indices [rows] int64 (the
 * last occurrence); among equally frequent values the smallest */
int pf_mode(const pf_tensor *x, pf_tensor *values, pf_tensor *indices);
/* out[b, j] = the count of seq[b, :] elements < values[b, j] (<= when right); seq [B, N] or [1, N] ascending,
 * values and out [B, M], all contiguous, seq and values of one dtype, out int64 or int32 */
int pf_searchsorted(const pf_tensor *seq, const pf_tensor *values, int right, pf_tensor *out);

/* counting into bins (histogram.c); out and hist are accumulated into (zero them first); weights may be NULL
 * (a count of 1 each) or hold one value per input element (per row of histogramdd's x) */
int pf_bincount(const pf_tensor *x, const pf_tensor *weights, pf_tensor *out);
int pf_histc(const pf_tensor *x, const pf_tensor *weights, double lo, double hi, pf_tensor *out);
int pf_histogramdd(const pf_tensor *x, const pf_tensor *weights, const pf_tensor *edges, const int64_t *nedges,
                   pf_tensor *hist);

/* scans (scan.c): cumsum / cumprod along `dim`; x and out contiguous of one shape, out's dtype may
 * differ (accumulation in double for floating out, int64 for integer out) */
int pf_scan(int op, const pf_tensor *x, int dim, pf_tensor *out);
/* cummax (largest) / cummin along `dim`: values (x's dtype) and indices (int64), all contiguous of x's shape;
 * ties and NaN take over the running extreme, so each index is the latest of equal values (torch's) */
int pf_scan_extreme(const pf_tensor *x, int dim, int largest, pf_tensor *values, pf_tensor *indices);

/* batched matmul (gemm.c): a [..., M, K] @ b [..., K, N] -> out [..., M, N];
 * batch dims of a, b and out equal (broadcast with stride 0 beforehand) */
int pf_matmul(const pf_tensor *a, const pf_tensor *b, pf_tensor *out);
/* the same for one float32/float64 product given by pointers and element strides (no
 * descriptors: the lean entry for small operands): c [M, N] contiguous = a [M, K] @ b [K, N] */
int pf_mm(int dtype, int64_t M, int64_t N, int64_t K, const void *a, int64_t rsa, int64_t csa, const void *b,
          int64_t rsb, int64_t csb, void *c);
/* the same plus a bias row broadcast over the rows of c (bias [N] at element stride bs, or NULL):
 * c = a @ b + bias, one pass (a Linear layer) */
int pf_mm_bias(int dtype, int64_t M, int64_t N, int64_t K, const void *a, int64_t rsa, int64_t csa, const void *b,
               int64_t rsb, int64_t csb, const void *bias, int64_t bs, void *c);

/* conv helpers (conv.c): x [N, C, H, W] <-> col [N, C*KH*KW, OH*OW] */
int pf_im2col(const pf_tensor *x, pf_tensor *col, int kh, int kw, int sh, int sw,
              int ph, int pw, int dh, int dw, double pad_value);
/* col2im accumulates into x (zero it first for a plain fold) */
int pf_col2im(const pf_tensor *col, pf_tensor *x, int kh, int kw, int sh, int sw,
              int ph, int pw, int dh, int dw);

/* 3-d unfold and fold (conv.c): x [N, C, D, H, W] <-> col [N, C*KD*KH*KW, OD*OH*OW], geom holds kernel[3],
 * stride[3], padding[3], dilation[3]; col2vol accumulates into x (contiguous; zero it first for a plain fold) */
int pf_vol2col(const pf_tensor *x, pf_tensor *col, const int64_t *geom);
int pf_col2vol(const pf_tensor *col, pf_tensor *x, const int64_t *geom);

/* conv2d (conv.c): out [N, O, OH, OW] = x [N, C, H, W] (any strides) correlated with weight
 * [O, C/groups, KH, KW], plus bias [O] (NULL: none); weight and out contiguous, one float dtype */
int pf_conv2d(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias, pf_tensor *out, int sh, int sw,
              int ph, int pw, int dh, int dw, int groups);
/* its gradients for grad_out [N, O, OH, OW]: grad_x like x and grad_w like weight, contiguous and
 * overwritten; either may be NULL. Results do not depend on the thread count. */
int pf_conv2d_backward(const pf_tensor *grad_out, const pf_tensor *x, const pf_tensor *weight, pf_tensor *grad_x,
                       pf_tensor *grad_w, int sh, int sw, int ph, int pw, int dh, int dw, int groups);

/* pooling (pool.c) over [N, C, D, H, W] float32/float64 (1-d and 2-d pools pass size-1 dims). geom holds 13
 * values: kernel[3], stride[3], padding[3], dilation[3], ceil_mode; the output's spatial sizes must be torch's for
 * them. x may have any strides; what is written (out, indices, grad_in) is contiguous.
 * max: indices [N, C, OD, OH, OW] int64 get each window's flat position (d*H + h)*W + w in the input plane */
int pf_max_pool(const pf_tensor *x, pf_tensor *out, pf_tensor *indices, const int64_t *geom);
/* grad_in [N, C, D, H, W] is overwritten: zero, then grad_in[n, c, indices] += grad_out (max and adaptive max) */
int pf_max_pool_backward(const pf_tensor *grad_out, const pf_tensor *indices, pf_tensor *grad_in);
/* average (dilation 1): each window's sum over its divisor: divisor if > 0, else torch's count (the window within
 * the padded input when count_include_pad, within the input otherwise) */
int pf_avg_pool(const pf_tensor *x, pf_tensor *out, const int64_t *geom, int count_include_pad, int64_t divisor);
int pf_avg_pool_backward(const pf_tensor *grad_out, pf_tensor *grad_in, const int64_t *geom, int count_include_pad,
                         int64_t divisor);
/* adaptive: output o of a dim pools the inputs floor(o*in/out) to ceil((o+1)*in/out); the maximum and its index
 * when indices is given, the average otherwise */
int pf_adaptive_pool(const pf_tensor *x, pf_tensor *out, pf_tensor *indices);
/* fractional max pooling: each plane's windows (kernel[3] long; 1 for the dims not pooled) start where torch's
 * intervals from its samples [N, C, dims] (the input's dtype; (D,) H, W order) put them */
int pf_fractional_max_pool(const pf_tensor *x, const pf_tensor *samples, pf_tensor *out, pf_tensor *indices,
                           const int64_t *kernel);
int pf_adaptive_avg_pool_backward(const pf_tensor *grad_out, pf_tensor *grad_in);

/* grid_sample (sample.c): out [N, C, OH, OW] (contiguous) samples input [N, C, H, W] at grid [N, OH, OW, 2]
 * ((x, y) in [-1, 1]), or out [N, C, OD, OH, OW] from input [N, C, D, H, W] at grid [N, OD, OH, OW, 3];
 * mode 0 bilinear, 1 nearest, 2 bicubic (4-d only); padding_mode 0 zeros, 1 border, 2 reflection (torch's
 * formulas). Backward: input contiguous; grad_input (overwritten) and grad_grid contiguous, either may be NULL. */
int pf_grid_sample(const pf_tensor *input, const pf_tensor *grid, pf_tensor *out, int mode, int padding_mode,
                   int align_corners);
int pf_grid_sample_backward(const pf_tensor *grad_out, const pf_tensor *input, const pf_tensor *grid,
                            pf_tensor *grad_input, pf_tensor *grad_grid, int mode, int padding_mode,
                            int align_corners);

/* embedding_bag (embedding_bag.c): out [B, D] (contiguous) reduces the rows weight[indices[i]] (weight [V, D]) of
 * each bag b, i from offsets[b] to offsets[b + 1] (the last bag to the end; offsets [B] int64 start at 0 and do
 * not decrease); mode 0 sum (times per_sample_weights [n] when not NULL), 1 mean, 2 max (max_indices [B, D]
 * int64 get each maximum's row, -1 for an empty bag); indices equal to padding_idx (-1: none) are skipped and
 * not counted; an empty bag gives zeros. Backward: grad_weight [V, D] contiguous, overwritten. */
int pf_embedding_bag(const pf_tensor *weight, const pf_tensor *indices, const pf_tensor *offsets,
                     const pf_tensor *per_sample_weights, int mode, int64_t padding_idx, pf_tensor *out,
                     pf_tensor *max_indices);
int pf_embedding_bag_backward(const pf_tensor *grad_out, const pf_tensor *indices, const pf_tensor *offsets,
                              const pf_tensor *per_sample_weights, const pf_tensor *max_indices, int mode,
                              int64_t padding_idx, pf_tensor *grad_weight);
/* embedding's lookup: out [L, width] = rows idx[j] of a contiguous weight [rows, width] of dtype, idx contiguous
 * int64 [L]; an index outside [0, rows) (embedding refuses negatives, unlike index_select) is PF_ERR_INDEX, nothing
 * written */
int pf_embedding_rows(int dtype, const void *weight, int64_t rows, int64_t width, const void *idx, int64_t L,
                      void *out);

/* CTC loss (loss.c), torch's CPU algorithm: log_probs [T, N, C] float32/float64 (any strides), targets int64 [N, S]
 * (padded) or 1-d (concatenated), input_lengths and target_lengths int64 [N]; nll [N] gets each sample's negative
 * log likelihood (inf when impossible) and log_alpha [N, T, >= 2*max(target_lengths)+1] (contiguous) the forward
 * variables backward reads. Backward: grad [T, N, C] (contiguous) = d(grad_nll . nll)/d log_probs, log_beta is
 * scratch like log_alpha; zero_infinity zeroes the gradient of impossible samples. */
int pf_ctc_loss(const pf_tensor *log_probs, const pf_tensor *targets, const pf_tensor *input_lengths,
                const pf_tensor *target_lengths, int64_t blank, pf_tensor *nll, pf_tensor *log_alpha);
int pf_ctc_loss_backward(const pf_tensor *grad_nll, const pf_tensor *log_probs, const pf_tensor *targets,
                         const pf_tensor *input_lengths, const pf_tensor *target_lengths, const pf_tensor *nll,
                         const pf_tensor *log_alpha, pf_tensor *log_beta, int64_t blank, int zero_infinity,
                         pf_tensor *grad);

/* batch norm with batch statistics (batch_norm.c), x [N, C, L] float32/float64 (any strides), y contiguous;
 * mean and var [C] float64 get the biased batch statistics (kept for backward at full precision); weight, bias, running_mean and running_var may be
 * NULL (running_var is updated with the unbiased variance) */
int pf_batch_norm_forward(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias, double eps,
                          double momentum, pf_tensor *running_mean, pf_tensor *running_var, pf_tensor *y,
                          pf_tensor *mean, pf_tensor *var);
/* grad_out, grad_in contiguous [N, C, L]; grad_in, grad_weight, grad_bias may be NULL (not wanted) */
int pf_batch_norm_backward(const pf_tensor *grad_out, const pf_tensor *x, const pf_tensor *mean,
                           const pf_tensor *var, const pf_tensor *weight, double eps, pf_tensor *grad_in,
                           pf_tensor *grad_weight, pf_tensor *grad_bias);

/* batch norm with the running statistics (eval, batch_norm.c): y = x * scale + shift per channel, x [N, C, L]
 * float32/float64 (any strides), y contiguous; weight and bias may be NULL, the running statistics may not */
int pf_batch_norm_eval(const pf_tensor *x, const pf_tensor *weight, const pf_tensor *bias,
                       const pf_tensor *running_mean, const pf_tensor *running_var, double eps, pf_tensor *y);

/* indexing (index.c) */
/* out[..., j, ...] = x[..., idx[j], ...] along dim; idx is 1-d int64, negatives wrap */
int pf_index_select(const pf_tensor *x, int dim, const pf_tensor *idx, pf_tensor *out);
/* the same along dim 0 of a contiguous x seen as [rows, width], idx contiguous int64 [L], out [L, width] */
int pf_index_select_rows(int dtype, const void *x, int64_t rows, int64_t width, const void *idx, int64_t L,
                         void *out);
/* out[..., idx[j], ...] += src[..., j, ...] along dim */
int pf_index_add(pf_tensor *out, int dim, const pf_tensor *idx, const pf_tensor *src);
/* out[..., idx[j], ...] = src[..., j, ...] along dim; for a repeated index the last j wins */
int pf_index_copy(pf_tensor *out, int dim, const pf_tensor *idx, const pf_tensor *src);
/* torch.gather / scatter_add semantics; index int64 with x's ndim */
int pf_gather(const pf_tensor *x, int dim, const pf_tensor *index, pf_tensor *out);
int pf_scatter_add(pf_tensor *out, int dim, const pf_tensor *index, const pf_tensor *src);
/* torch.scatter_reduce_: op PF_SUM, PF_PROD, PF_MEAN, PF_MAX (amax) or PF_MIN (amin); without include_self
 * an element written to reduces src's values alone */
int pf_scatter_reduce(pf_tensor *out, int dim, const pf_tensor *index, const pf_tensor *src, int op,
                      int include_self);
/* torch.cat of n contiguous inputs of one dtype: input i seen as [outer, widths[i]] (its size
 * along the dim times the size of the dims after it), out as [outer, sum of widths] */
int pf_cat_rows(int dtype, int n, const void *const *xs, const int64_t *widths, int64_t outer, void *out);
/* the same for two inputs of na and nb elements joined whole (cat([a, b]) along dim 0), without the arrays */
int pf_cat2(int dtype, const void *a, int64_t na, const void *b, int64_t nb, void *out);
/* count of nonzero elements, and their coordinates into out [count, ndim] int64 */
int64_t pf_count_nonzero(const pf_tensor *x);
int pf_nonzero(const pf_tensor *x, pf_tensor *out);

/* random (random.c): counter-based Philox; element i depends only on (seed, offset + i) */
int pf_random(int kind, pf_tensor *dst, uint64_t seed, uint64_t offset,
              double p0, double p1);
/* index outputs below are contiguous 1-d int64 */
/* a uniformly random permutation of 0 .. n-1 (n = out's length); uses counters offset .. offset + n - 1 */
int pf_randperm(pf_tensor *out, uint64_t seed, uint64_t offset);
/* len(out) indices drawn with probability proportional to the 1-d float weights (finite, >= 0,
 * positive sum); without replacement needs len(out) <= the number of positive weights. Uses
 * len(out) counters with replacement, len(weights) without */
int pf_weighted_sample(const pf_tensor *weights, pf_tensor *out, int replacement, uint64_t seed,
                       uint64_t offset);
/* multinomial sampling: probs [rows, n] float64 (non-negative, finite, positive row sums),
 * u [rows, k] float64 uniforms in [0, 1), out [rows, k] int64 category indices */
int pf_multinomial(const pf_tensor *probs, const pf_tensor *u, int replacement, pf_tensor *out);
/* gamma, Poisson and binomial draws (PF_RAND_GAMMA/POISSON/BINOMIAL), one per element of out from
 * contiguous float64 parameters a (and b for binomial) of out's size; element e uses counter offset + e */
int pf_random_param(int kind, const pf_tensor *a, const pf_tensor *b, pf_tensor *out, uint64_t seed,
                    uint64_t offset);
/* d x / d alpha of a Gamma(alpha, 1) draw x (the reparameterised gradient), contiguous float64 */
int pf_standard_gamma_grad(const pf_tensor *alpha, const pf_tensor *x, pf_tensor *out);

/* dense linear algebra (linalg.c): the last two dims are the matrix, the leading dims a batch
 * that every operand shares (broadcast with stride 0 beforehand); float32 or float64, one
 * dtype per call, any strides; computed in double. NaN or Inf in the input, a singular or
 * non positive-definite matrix and non-convergence are PF_ERR_LINALG naming the batch element. */
/* x = a^-1 b: a [..., n, n], b and x [..., n, k]; LU with partial pivoting */
int pf_linalg_solve(const pf_tensor *a, const pf_tensor *b, pf_tensor *x);
/* x = a^-1 b for triangular a, reading only its upper (or lower) triangle; unit: diagonal taken as 1 */
int pf_linalg_solve_triangular(const pf_tensor *a, const pf_tensor *b, pf_tensor *x, int upper, int unit);
/* det, its sign and log|det| [...] by LU (each output may be NULL); a singular matrix is not an
 * error here: det 0, sign 0, logabsdet -inf */
int pf_linalg_det(const pf_tensor *a, pf_tensor *det, pf_tensor *sign, pf_tensor *logabsdet);
/* a = l l^T from a's lower triangle; l [..., n, n] lower, zeros above */
int pf_linalg_cholesky(const pf_tensor *a, pf_tensor *l);
/* the same factorization that never fails on the matrix: info [...] (contiguous int32) gets 0, or the order of the
 * first leading minor that is not positive-definite (NaN included), as LAPACK's potrf; l then holds the factor
 * so far (the failing pivot on its diagonal, later columns the input's lower triangle) */
int pf_linalg_cholesky_ex(const pf_tensor *a, pf_tensor *l, pf_tensor *info);
/* Householder QR with LAPACK's signs: a [..., m, n], q [..., m, k] (NULL: R only), r [..., k, n],
 * k = m when complete, else min(m, n) */
int pf_linalg_qr(const pf_tensor *a, pf_tensor *q, pf_tensor *r, int complete);
/* LAPACK's geqrf: h [..., m, n] holds R on and above the diagonal and the reflectors v_j (v_j[j] = 1
 * implied) below it, H_j = I - tau_j v_j v_j^T, tau [..., min(m, n)] (0: no reflection) */
int pf_linalg_geqrf(const pf_tensor *a, pf_tensor *h, pf_tensor *tau);
/* symmetric eigendecomposition (cyclic Jacobi) of the matrix in a's lower (upper) triangle:
 * w [..., n] ascending, v [..., n, n] eigenvectors as columns (may be NULL) */
int pf_linalg_eigh(const pf_tensor *a, pf_tensor *w, pf_tensor *v, int upper);
/* a = u diag(s) vh by one-sided Jacobi, s [..., k] descending, k = min(m, n); u [..., m, full ? m : k]
 * and vh [..., full ? n : k, n], both NULL for singular values only */
int pf_linalg_svd(const pf_tensor *a, pf_tensor *u, pf_tensor *s, pf_tensor *vh, int full);
/* out = exp(a) by Pade 13 with scaling and squaring (Higham 2005) */
int pf_linalg_matrix_exp(const pf_tensor *a, pf_tensor *out);
/* LAPACK's getrf: a [..., m, n] = P L U with partial pivoting; lu [..., m, n] holds U on and above the
 * diagonal and L (unit diagonal implied) below it, piv [..., min(m, n)] the 1-based row swapped with each row
 * in turn and info [...] the 1-based index of the first exactly zero pivot (0: none); piv and info are of a's
 * floating dtype. A singular matrix is not an error. */
int pf_linalg_lu_factor(const pf_tensor *a, pf_tensor *lu, pf_tensor *piv, pf_tensor *info);
/* LAPACK's sytrf (lower, real symmetric; linalg_ldl.c): a [..., n, n] (its lower triangle is read) = P L D L^T P^T
 * with Bunch-Kaufman pivoting; ld [..., n, n] holds L (unit diagonal implied) below the diagonal and the 1 x 1 and
 * 2 x 2 blocks of D on and beside it, zeros above; piv [..., n] LAPACK's 1-based ipiv (k > 0: a 1 x 1 block, row k
 * swapped with it; two equal -p: a 2 x 2 block whose second row was swapped with p) and info [...] the 1-based
 * index of the first exactly zero diagonal block (0: none); piv and info are of a's floating dtype. */
int pf_linalg_ldl_factor(const pf_tensor *a, pf_tensor *ld, pf_tensor *piv, pf_tensor *info);
/* LAPACK's sytrs: x [..., n, k] = A^-1 b [..., n, k] from ldl_factor's ld and piv (all with one batch shape);
 * piv is checked to be a valid ipiv. */
int pf_linalg_ldl_solve(const pf_tensor *ld, const pf_tensor *piv, const pf_tensor *b, pf_tensor *x);

/* discrete Fourier transforms along `dim` (fft.c), unnormalized, float32/float64, a complex signal held as two
 * real tensors of one shape; x_k = sum_j x_j exp(sign 2 pi i j k / n) (sign -1: forward, +1: inverse).
 * mode 0: (re, im) -> (out_re, out_im), length n along dim (im may be NULL: zero);
 * mode 1 (c2r): (re, im) hold the first n/2 + 1 values of a Hermitian spectrum, out_re the real signal of length
 *   n = out_re's size along dim (out_im NULL);
 * mode 2 (r2c): re real of length n, (out_re, out_im) the first n/2 + 1 values of its transform (im NULL). */
int pf_fft(const pf_tensor *re, const pf_tensor *im, pf_tensor *out_re, pf_tensor *out_im, int dim, int mode,
           int sign);

/* optimizers (optim.c): one fused in-place step of torch.optim's update (foreach=False) over a
 * contiguous parameter of n elements, float32 or float64, with state buffers s0..s2 of its dtype
 * (the ones a kind does not use may be NULL) and the kind's scalars in hp, listed in the source
 * (step-dependent ones computed by the caller in double, as torch does in Python; Adam's last
 * is its 1-based step count). Everything is checked first: an error changes nothing. */
#define PF_OPTIM_SGD 0
#define PF_OPTIM_ADAM 1      /* and AdamW (decoupled weight decay) */
#define PF_OPTIM_ADADELTA 2
#define PF_OPTIM_ADAGRAD 3
#define PF_OPTIM_RMSPROP 4
#define PF_OPTIM_ADAMAX 5
#define PF_OPTIM_NADAM 6
#define PF_OPTIM_RADAM 7
#define PF_OPTIM_ASGD 8
#define PF_OPTIM_RPROP 9
#define PF_NUM_OPTIM 10
int pf_optim_step(int kind, int dtype, int64_t n, void *param, const void *grad, void *s0, void *s1, void *s2,
                  const double *hp, int nhp);
/* pf_optim_step over `count` parameters of one dtype in one call (the per-parameter Python work
 * left is gathering pointers): s0[i].. are parameter i's buffers (the s1 and s2 arrays may be
 * NULL). steps (Adam only, else NULL): each parameter's float32 step count, incremented here in
 * float32 as torch's `step += 1`, its new value replacing hp's last entry for that parameter. */
int pf_optim_steps(int kind, int dtype, int64_t count, void *const *params, const void *const *grads,
                   void *const *s0, void *const *s1, void *const *s2, const int64_t *numels, float *const *steps,
                   const double *hp, int nhp);

/* layer normalization over the last dim (layer_norm.c): x, y [rows, d] contiguous, w, b [d] (either may
 * be NULL), mean and rstd [rows] saved for backward; float32 or float64, one dtype for all. */
int pf_layer_norm(int dtype, const void *x, const void *w, const void *b, void *y, void *mean, void *rstd,
                  int64_t rows, int64_t d, double eps);
/* gx [rows, d], gw, gb [d]; any of the three may be NULL (not wanted) */
int pf_layer_norm_backward(int dtype, const void *g, const void *x, const void *mean, const void *rstd,
                           const void *w, void *gx, void *gw, void *gb, int64_t rows, int64_t d);

/* scaled dot-product attention (attention.c): q [..., L, E], k [..., S, E], v [..., S, Ev], out
 * [..., L, Ev] and the softmax weights p [..., L, S] (before dropout) kept for backward; one float
 * dtype, batch dims equal (no broadcast), any strides but a unit last one; causal: key j <= query i
 * (top-left); S >= 1. dropout_p in [0, 1): weight (n, i, j) of batch element n is kept when the
 * Bernoulli(1 - dropout_p) draw at counter offset + (n L + i) S + j (pf_random's) is 1, and scaled
 * by 1 / (1 - dropout_p); with dropout the mask goes to keep (bool, contiguous, p's shape; NULL without
 * dropout), each row's bytes over the keys its query sees (the rest are not written) */
int pf_attention(const pf_tensor *q, const pf_tensor *k, const pf_tensor *v, pf_tensor *out, pf_tensor *p,
                 double scale, int causal, double dropout_p, uint64_t seed, uint64_t offset, pf_tensor *keep);
/* gq, gk, gv (shapes of q, k, v) from g (out's shape), forward's p and, with dropout, its keep mask; all written */
int pf_attention_backward(const pf_tensor *g, const pf_tensor *q, const pf_tensor *k, const pf_tensor *v,
                          const pf_tensor *p, pf_tensor *gq, pf_tensor *gk, pf_tensor *gv, double scale, int causal,
                          double dropout_p, const pf_tensor *keep);
/* dropout of n contiguous float32/float64 values (dropout.c): keep[i] = the Bernoulli(1 - p) draw at counter
 * offset + i (bernoulli_'s for a bool tensor), y[i] = keep[i] ? x[i] * (1 / (1 - p)) : 0, p in [0, 1);
 * backward: gx[i] = keep[i] ? g[i] * (1 / (1 - p)) : 0 */
int pf_dropout(int dtype, const void *x, void *y, unsigned char *keep, int64_t n, double p, uint64_t seed,
               uint64_t offset);
int pf_dropout_backward(int dtype, const void *g, const unsigned char *keep, void *gx, int64_t n, double p);

/* an LSTM layer over a sequence (rnn.c), gates (i, f, g, o), all buffers contiguous, float32 or
 * float64: xw [L, N, 4H] the input half of the gates (x W_ih^T + b_ih), w_hh [4H, H], b_hh [4H] or
 * NULL, h0 and c0 [N, H]. Writes out [L, N, H] (every h), cs [L, N, H] (every c) and, when not NULL,
 * acts [L, N, 4H] (the activated gates, for backward); hw [N, 4H] is scratch. */
int pf_lstm_forward(int dtype, int64_t L, int64_t N, int64_t H, const void *xw, const void *w_hh, const void *b_hh,
                    const void *h0, const void *c0, void *out, void *cs, void *acts, void *hw);
/* backward from forward's cs and acts: dout [L, N, H], dhn and dcn [N, H] the gradients of out, h_n
 * and c_n (each may be NULL: zero); writes dgates [L, N, 4H] (the gradient of xw, and of
 * h_{t-1} W_hh^T + b_hh), dh0 and dc0 [N, H] */
int pf_lstm_backward(int dtype, int64_t L, int64_t N, int64_t H, const void *w_hh, const void *c0, const void *cs,
                     const void *acts, const void *dout, const void *dhn, const void *dcn, void *dgates, void *dh0,
                     void *dc0);

/* GELU (activation.c) over n contiguous float32/float64 elements; approximate 0 = erf, 1 = tanh.
 * Forward also writes the gate cdf (0.5 (1 + erf(x / sqrt 2)), or the tanh form) when cdf is not
 * NULL; backward reads it when given (else recomputes it; the tanh form always recomputes tanh):
 * gx = g * d gelu / dx. Backward's approximate 2 is the erf form with cdf holding the forward's
 * output y = x cdf: the gate is y / x (0.5 where |x| < 2^-24, 2^-53 for float64). */
int pf_gelu(int dtype, const void *x, void *y, void *cdf, int64_t n, int approximate);
int pf_gelu_backward(int dtype, const void *g, const void *x, const void *cdf, void *gx, int64_t n,
                     int approximate);
/* gx = g * f'(x) for the activation f of unary code op (PF_LEAKY_RELU .. PF_HARDSWISH) with the forward's p0
 * and p1 (activation.c): torch's derivative formulas over n contiguous float32/float64 elements */
int pf_activation_backward(int op, int dtype, const void *g, const void *x, void *gx, int64_t n, double p0,
                           double p1);

/* cross-entropy over class indices (loss.c): x [n, c] contiguous logits, target [n] int64 (each in
 * [0, c) or ignore_index), weight [c] or NULL; writes each row's weighted loss (0 when ignored) to
 * loss [n], its log-sum-exp to lse [n], and sums[0] = the sum of the row losses, sums[1] = the sum
 * of the kept rows' weights (double, in row order). A target out of range is PF_ERR_INDEX. */
int pf_cross_entropy(int dtype, const void *x, const int64_t *target, const void *weight, int64_t n, int64_t c,
                     int64_t ignore_index, void *loss, void *lse, double *sums);
/* gx [n, c] = scale_i * w[t_i] * (softmax(x_i) - onehot(t_i)), 0 on ignored rows; scale_i is
 * gscale[i] (x's dtype), or g0 when gscale is NULL */
int pf_cross_entropy_backward(int dtype, const void *x, const int64_t *target, const void *weight, const void *lse,
                              const void *gscale, double g0, int64_t n, int64_t c, int64_t ignore_index, void *gx);

/* sparse COO (sparse.c). Coalesce: keys[nnz] are the entries' linear indices, each in [0, limit); writes
 * unique[] (the distinct keys, ascending; room for nnz), *n_unique, and slot[k], the position in unique of
 * entry k's key. Product: out [M, N] = S @ dense [K, N] with S the M x K matrix of entries (rows[k],
 * cols[k], vals[k]) (duplicates add up), all contiguous, float32 or float64; the gradient to the values:
 * gvals[k] = <g[rows[k], :], dense[cols[k], :]> with g [M, N]. */
int pf_coo_coalesce(int64_t nnz, const int64_t *keys, int64_t limit, int64_t *slot, int64_t *unique,
                    int64_t *n_unique);
int pf_spmm_coo(int dtype, int64_t nnz, const int64_t *rows, const int64_t *cols, const void *vals, int64_t M,
                int64_t K, int64_t N, const void *dense, void *out);
int pf_spmm_coo_values_grad(int dtype, int64_t nnz, const int64_t *rows, const int64_t *cols, int64_t M, int64_t K,
                            int64_t N, const void *g, const void *dense, void *gvals);
/* Sparse add (torch's, for contiguous values): one walk over the two entry lists' linear keys as if each
 * were sorted, equal keys into one entry; tslot[i] / sslot[j] is the result entry of each input entry,
 * keys_out (room for nt + ns) the result's keys, *n_out their count. */
int pf_coo_merge(int64_t nt, const int64_t *tkeys, int64_t ns, const int64_t *skeys, int64_t *tslot, int64_t *sslot,
                 int64_t *keys_out, int64_t *n_out);
/* SparseAdam's step on the rows of a coalesced gradient: keys[n] strictly increasing in [0, limit), each
 * naming a block of `block` elements of param, exp_avg and exp_avg_sq (contiguous [limit * block]);
 * gvals [n * block]; step_size = lr * sqrt(1 - beta2^t) / (1 - beta1^t). float32 or float64. */
int pf_sparse_adam(int dtype, int64_t n, const int64_t *keys, int64_t limit, int64_t block, const void *gvals,
                   void *param, void *exp_avg, void *exp_avg_sq, double step_size, double beta1, double beta2,
                   double eps, int maximize);
/* CSR matrices: crow [M + 1], col [nnz]. pf_csr_rows checks torch's invariants (columns against K
 * unless K < 0) and writes each entry's row; pf_csr_crow makes crow from sorted rows. pf_csr_mm:
 * out [M, N] = S @ dense [K, N] reduced per row by PF_CSR_* (amax / amin write arg [M, N], the entry
 * chosen or -1; NULL for sum / mean); its backward writes gvals [nnz] and/or gdense [K, N] (NULL: not
 * wanted) from g [M, N]. pf_csr_sampled_addmm: out[k] = alpha * <A[rows[k], :], B[:, col[k]]> +
 * beta * c[k], A [M, K] and B [K, N] contiguous. */
enum { PF_CSR_SUM, PF_CSR_MEAN, PF_CSR_AMAX, PF_CSR_AMIN };
int pf_csr_rows(int64_t M, int64_t K, const int64_t *crow, int64_t nnz, const int64_t *col, int64_t *rows);
int pf_csr_crow(int64_t nnz, const int64_t *rows, int64_t M, int64_t *crow);
int pf_csr_mm(int dtype, int reduce, int64_t M, int64_t K, int64_t N, const int64_t *crow, const int64_t *col,
              const void *vals, const void *dense, void *out, int64_t *arg);
int pf_csr_mm_backward(int dtype, int reduce, int64_t M, int64_t K, int64_t N, const int64_t *crow,
                       const int64_t *col, const void *vals, const void *dense, const int64_t *arg, const void *g,
                       void *gvals, void *gdense);
int pf_csr_sampled_addmm(int dtype, int64_t nnz, const int64_t *rows, const int64_t *col, const void *c, int64_t M,
                         int64_t N, int64_t K, const void *A, const void *B, double alpha, double beta, void *out);

/* bitwise and integer-only binary ops (bitwise.c): a, b and out of one dtype, broadcast as
 * pf_binary. and/or/xor take bool and the integer dtypes; shifts, gcd and lcm the integer ones.
 * Shifts are torch's: a left shift by a negative count or by the type's width or more gives 0;
 * a right shift so gives the sign fill (0 for uint8). */
enum {
    PF_BITWISE_AND,
    PF_BITWISE_OR,
    PF_BITWISE_XOR,
    PF_BITWISE_LEFT_SHIFT,
    PF_BITWISE_RIGHT_SHIFT,
    PF_GCD,
    PF_LCM,
    PF_NUM_BITWISE
};
int pf_bitwise(int op, const pf_tensor *a, const pf_tensor *b, pf_tensor *out);
/* out = ~x (bool: logical not), x broadcast to out, both of one dtype, bool or integer */
int pf_bitwise_not(const pf_tensor *x, pf_tensor *out);
