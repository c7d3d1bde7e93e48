/* Scaled dot-product attention, forward and backward, one call each.
 *
 * The composition (mul by scale, matmul, a causal mask built as a tensor, where, softmax,
 * matmul; and twice as many ops back) allocates a [L, S] score tensor per op and a mask
 * per call. Here each (batch, head) is a task: a query row's scores, their softmax and the
 * weighted sum of values are done while the row is in cache, the causal mask is a loop
 * bound (key j <= query i, top-left aligned as torch), and the probabilities are kept for
 * backward. Tasks are independent, so results do not depend on the thread count. */
#include "core.h"

typedef struct {
    const pf_tensor *q, *k, *v, *g, *p;
    pf_tensor *out, *pw, *gq, *gk, *gv;
    int causal, nb;
    double scale;
    char *scratch; /* per thread: K^T forward; a row of S and V^T backward */
    size_t per_thread;
} att_args;

/* byte offset of batch element n (of the leading nd - 2 dims) in t */
static int64_t batch_off(const pf_tensor *t, int64_t n) {
    int64_t off = 0;
    for (int i = t->ndim - 3; i >= 0; i--) {
        int64_t sz = t->shape[i];
        off += (n % sz) * t->strides[i];
        n /= sz;
    }
    return off * (int64_t)pf_dtype_size[t->dtype];
}

#define ROW(t, base, i) ((base) + (i) * (t)->strides[(t)->ndim - 2])
/* t's matrix of batch element n, as T * */
#define BATCH(T, t, n) ((T *)((char *)(t)->data + batch_off((t), (n))))

#define ATT_KERNELS(T, SUF, EXP)                                                                          \
    /* acc[x] += (c[r] * s) * rows[r * rs + x] summed over r < R, for x < m: four rows per pass,          \
     * so one += chain through memory per four rows. Scores run it over K^T and dP over V^T (rows         \
     * of S keys), the output over V's rows and dQ over K's. */                                           \
    static inline void addrows_##SUF(T *restrict acc, int64_t m, const T *c, T s, const T *rows,          \
                                     int64_t rs, int64_t R) {                                             \
        int64_t r = 0;                                                                                    \
        for (; r + 4 <= R; r += 4) {                                                                      \
            T c0 = c[r] * s, c1 = c[r + 1] * s, c2 = c[r + 2] * s, c3 = c[r + 3] * s;                     \
            const T *restrict r0 = rows + r * rs, *restrict r1 = r0 + rs, *restrict r2 = r1 + rs,         \
                              *restrict r3 = r2 + rs;                                                     \
            for (int64_t x = 0; x < m; x++) acc[x] += c0 * r0[x] + c1 * r1[x] + c2 * r2[x] + c3 * r3[x];  \
        }                                                                                                 \
        for (; r < R; r++) {                                                                              \
            T cr = c[r] * s;                                                                              \
            const T *restrict rr = rows + r * rs;                                                         \
            for (int64_t x = 0; x < m; x++) acc[x] += cr * rr[x];                                         \
        }                                                                                                 \
    }                                                                                                     \
    PF_VEC_CLONES static void att_fwd_##SUF(const att_args *a, int64_t n, T *kt) {                                 \
        const pf_tensor *q = a->q, *k = a->k, *v = a->v;                                                  \
        int nd = q->ndim;                                                                                 \
        int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1]; \
        const T *qb = BATCH(const T, q, n), *kb = BATCH(const T, k, n), *vb = BATCH(const T, v, n);       \
        T *ob = BATCH(T, a->out, n), *pb = BATCH(T, a->pw, n);                                            \
        T sc = (T)a->scale;                                                                               \
        /* K^T [E][S], so a row's scores are E vectorized passes over the keys */                        \
        for (int64_t j = 0; j < S; j++) {                                                                 \
            const T *kj = ROW(k, kb, j);                                                                  \
            for (int64_t e = 0; e < E; e++) kt[e * S + j] = kj[e];                                        \
        }                                                                                                 \
        for (int64_t i = 0; i < L; i++) {                                                                 \
            const T *qi = ROW(q, qb, i);                                                                  \
            T *restrict pi = ROW(a->pw, pb, i), *restrict oi = ROW(a->out, ob, i);                                   \
            int64_t ns = a->causal ? (i + 1 < S ? i + 1 : S) : S;                                         \
            for (int64_t j = 0; j < ns; j++) pi[j] = 0;                                                   \
            addrows_##SUF(pi, ns, qi, sc, kt, S, E);                                                      \
            T m = -INFINITY;                                                                              \
            for (int64_t j = 0; j < ns; j++) m = pi[j] > m ? pi[j] : m;                                   \
            if (m == -INFINITY) m = 0; /* all -inf scores: exp gives 0s, 0/0 below gives NaN as torch */  \
            T sum = 0;                                                                                    \
            for (int64_t j = 0; j < ns; j++) pi[j] = EXP(pi[j] - m);                                      \
            for (int64_t j = 0; j < ns; j++) sum += pi[j];                                                \
            T inv = (T)1 / sum;                                                                           \
            for (int64_t j = 0; j < ns; j++) pi[j] *= inv;                                                \
            for (int64_t j = ns; j < S; j++) pi[j] = 0;                                                   \
            for (int64_t e = 0; e < Ev; e++) oi[e] = 0;                                                   \
            addrows_##SUF(oi, Ev, pi, (T)1, vb, v->strides[nd - 2], ns);                                  \
        }                                                                                                 \
    }                                                                                                     \
    /* dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(P * dP)); dQ = scale dS K; dK = scale dS^T Q */   \
    PF_VEC_CLONES static void att_bwd_##SUF(const att_args *a, int64_t n, T *dp, T *vt) {                            \
        const pf_tensor *q = a->q, *k = a->k, *v = a->v;                                                  \
        int nd = q->ndim;                                                                                 \
        int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1]; \
        const T *qb = BATCH(const T, q, n), *kb = BATCH(const T, k, n), *vb = BATCH(const T, v, n);       \
        const T *gb = BATCH(const T, a->g, n), *pb = BATCH(const T, a->p, n);                             \
        T *gqb = BATCH(T, a->gq, n), *gkb = BATCH(T, a->gk, n), *gvb = BATCH(T, a->gv, n);                \
        T sc = (T)a->scale;                                                                               \
        for (int64_t j = 0; j < S; j++) {                                                                 \
            T *gkj = ROW(a->gk, gkb, j), *gvj = ROW(a->gv, gvb, j);                                       \
            const T *vj = ROW(v, vb, j);                                                                  \
            for (int64_t e = 0; e < E; e++) gkj[e] = 0;                                                   \
            for (int64_t e = 0; e < Ev; e++) gvj[e] = 0;                                                  \
            for (int64_t e = 0; e < Ev; e++) vt[e * S + j] = vj[e]; /* V^T, as K^T forward */            \
        }                                                                                                 \
        for (int64_t i = 0; i < L; i++) {                                                                 \
            const T *qi = ROW(q, qb, i), *gi = ROW(a->g, gb, i), *pi = ROW(a->p, pb, i);                  \
            T *restrict gqi = ROW(a->gq, gqb, i);                                                              \
            int64_t ns = a->causal ? (i + 1 < S ? i + 1 : S) : S;                                         \
            for (int64_t j = 0; j < ns; j++) dp[j] = 0;                                                   \
            addrows_##SUF(dp, ns, gi, (T)1, vt, S, Ev);                                                   \
            T rs = 0;                                                                                     \
            for (int64_t j = 0; j < ns; j++) {                                                            \
                T *restrict gvj = ROW(a->gv, gvb, j);                                                     \
                T pj = pi[j];                                                                             \
                for (int64_t e = 0; e < Ev; e++) gvj[e] += pj * gi[e];                                    \
                rs += pj * dp[j];                                                                         \
            }                                                                                             \
            for (int64_t j = 0; j < ns; j++) { /* dS, then its rows into dK and dQ */                    \
                T ds = pi[j] * (dp[j] - rs) * sc;                                                         \
                T *restrict gkj = ROW(a->gk, gkb, j);                                                     \
                for (int64_t e = 0; e < E; e++) gkj[e] += ds * qi[e];                                     \
                dp[j] = ds;                                                                               \
            }                                                                                             \
            for (int64_t e = 0; e < E; e++) gqi[e] = 0;                                                   \
            addrows_##SUF(gqi, E, dp, (T)1, kb, k->strides[nd - 2], ns);                                  \
        }                                                                                                 \
    }

ATT_KERNELS(float, f32, pf_expf)
ATT_KERNELS(double, f64, exp)

static void fwd_team(void *arg, int t, int T) {
    const att_args *a = arg;
    int64_t b, e;
    pf_split(a->nb, t, T, &b, &e);
    char *kt = a->scratch + (size_t)t * a->per_thread;
    for (int64_t n = b; n < e; n++) {
        if (a->q->dtype == PF_FLOAT32)
            att_fwd_f32(a, n, (float *)kt);
        else
            att_fwd_f64(a, n, (double *)kt);
    }
}

static void bwd_team(void *arg, int t, int T) {
    const att_args *a = arg;
    int64_t b, e, S = a->k->shape[a->k->ndim - 2];
    pf_split(a->nb, t, T, &b, &e);
    char *dp = a->scratch + (size_t)t * a->per_thread, *vt = dp + (size_t)(S + 8) * sizeof(double);
    for (int64_t n = b; n < e; n++) {
        if (a->q->dtype == PF_FLOAT32)
            att_bwd_f32(a, n, (float *)dp, (float *)vt);
        else
            att_bwd_f64(a, n, (double *)dp, (double *)vt);
    }
}

/* shape [batch..., rows, cols] with the batch dims of q, a float dtype equal to q's, unit last stride */
static int check_operand(const pf_tensor *t, const pf_tensor *q, int64_t rows, int64_t cols, const char *what) {
    int rc = pf_check(t, what);
    if (rc) return rc;
    char a[128], b[128];
    if (t->dtype != q->dtype)
        return pf_error(PF_ERR_TYPE, "scaled_dot_product_attention: %s has dtype %s, query has %s", what,
                        pf_dtype_name[t->dtype], pf_dtype_name[q->dtype]);
    int ok = t->ndim == q->ndim && t->shape[t->ndim - 2] == rows && t->shape[t->ndim - 1] == cols;
    for (int i = 0; ok && i < q->ndim - 2; i++) ok = t->shape[i] == q->shape[i];
    if (!ok)
        return pf_error(PF_ERR_VALUE,
                        "scaled_dot_product_attention: %s has shape %s, expected the query's batch dims "
                        "(query %s) then [%lld, %lld]",
                        what, pf_shape_str(t, a), pf_shape_str(q, b), (long long)rows, (long long)cols);
    if (cols > 1 && t->strides[t->ndim - 1] != 1)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: %s needs a unit stride in its last dim, got %lld",
                        what, (long long)t->strides[t->ndim - 1]);
    return PF_OK;
}

static int check_all(const att_args *a, int backward) {
    const pf_tensor *q = a->q;
    int rc = pf_check(q, "query");
    if (rc) return rc;
    if (q->dtype != PF_FLOAT32 && q->dtype != PF_FLOAT64)
        return pf_error(PF_ERR_TYPE, "scaled_dot_product_attention: the fused kernel takes float32 or float64, got %s",
                        pf_dtype_name[q->dtype]);
    if (q->ndim < 2)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: query needs at least 2 dims, got %d", q->ndim);
    int nd = q->ndim;
    int64_t L = q->shape[nd - 2], E = q->shape[nd - 1];
    if ((rc = pf_check(a->k, "key")) || (rc = pf_check(a->v, "value"))) return rc;
    if (a->k->ndim != nd || a->v->ndim != nd)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: query, key and value need one ndim, got %d, %d, %d",
                        nd, a->k->ndim, a->v->ndim);
    int64_t S = a->k->shape[nd - 2], Ev = a->v->shape[nd - 1];
    if ((rc = check_operand(q, q, L, E, "query")) || (rc = check_operand(a->k, q, S, E, "key")) ||
        (rc = check_operand(a->v, q, S, Ev, "value")))
        return rc;
    if (!backward)
        return (rc = check_operand(a->out, q, L, Ev, "output")) ? rc : check_operand(a->pw, q, L, S, "attention weights");
    if ((rc = check_operand(a->g, q, L, Ev, "output gradient")) ||
        (rc = check_operand(a->p, q, L, S, "attention weights")) || (rc = check_operand(a->gq, q, L, E, "query gradient")) ||
        (rc = check_operand(a->gk, q, S, E, "key gradient")) || (rc = check_operand(a->gv, q, S, Ev, "value gradient")))
        return rc;
    return PF_OK;
}

static int64_t batch_count(const pf_tensor *q) {
    int64_t nb = 1;
    for (int i = 0; i < q->ndim - 2; i++) nb *= q->shape[i];
    return nb;
}

static int threads(const att_args *a) {
    const pf_tensor *q = a->q;
    int nd = q->ndim;
    int64_t work = pf_numel(q) * a->k->shape[nd - 2] / (a->causal ? 2 : 1);
    int nt = pf_threads_for(work);
    return nt > a->nb ? (int)a->nb : nt;
}

int pf_attention(const pf_tensor *q, const pf_tensor *k, const pf_tensor *v, pf_tensor *out, pf_tensor *p,
                 double scale, int causal) {
    att_args a = {.q = q, .k = k, .v = v, .out = out, .pw = p, .causal = causal != 0, .scale = scale};
    int rc = check_all(&a, 0);
    if (rc) return rc;
    a.nb = batch_count(q);
    if (a.nb == 0 || q->shape[q->ndim - 2] == 0) return PF_OK;
    if (k->shape[k->ndim - 2] == 0)
        return pf_error(PF_ERR_VALUE, "scaled_dot_product_attention: the fused kernel needs at least one key");
    int nt = threads(&a);
    int64_t S = k->shape[k->ndim - 2], E = q->shape[q->ndim - 1];
    a.per_thread = ((size_t)(E * S) * sizeof(double) + 63) & ~(size_t)63;
    a.scratch = pf_alloc((size_t)nt * a.per_thread);
    if (!a.scratch) return pf_error(PF_ERR_NOMEM, "scaled_dot_product_attention: out of memory for K^T");
    pf_run_team(nt, fwd_team, &a);
    pf_free(a.scratch);
    return PF_OK;
}

int pf_attention_backward(const pf_tensor *g, const pf_tensor *q, const pf_tensor *k, const pf_tensor *v,
                          const pf_tensor *p, pf_tensor *gq, pf_tensor *gk, pf_tensor *gv, double scale, int causal) {
    att_args a = {.q = q, .k = k, .v = v, .g = g, .p = p, .gq = gq, .gk = gk, .gv = gv, .causal = causal != 0,
                  .scale = scale};
    int rc = check_all(&a, 1);
    if (rc) return rc;
    a.nb = batch_count(q);
    if (a.nb == 0) return PF_OK;
    int nt = threads(&a);
    int64_t S = k->shape[k->ndim - 2];
    int64_t Ev = v->shape[v->ndim - 1];
    a.per_thread = ((size_t)(S + 8 + Ev * S) * sizeof(double) + 63) & ~(size_t)63;
    a.scratch = pf_alloc((size_t)nt * a.per_thread);
    if (!a.scratch) return pf_error(PF_ERR_NOMEM, "scaled_dot_product_attention: out of memory for %lld scores", (long long)S);
    pf_run_team(nt, bwd_team, &a);
    pf_free(a.scratch);
    return PF_OK;
}
