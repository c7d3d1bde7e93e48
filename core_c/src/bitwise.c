/* Bitwise family: and, or, xor, not, the shifts, gcd and lcm, on bool and the integer dtypes.
 *
 * One run function per (op, dtype) over byte-strided operands, computed in the element type
 * itself (so gcd/lcm and the shifts see exactly torch's wrap-arounds), from one table indexed
 * [op][dtype] (NULL: unsupported) that the X-macro rows below fill; the drivers walk any
 * strides and broadcasts with the shared walker. */
#include "core.h"

typedef void (*bit_run)(const char *a, int64_t sa, const char *b, int64_t sb, char *o, int64_t so, int64_t n);

/* ---- scalar ops, T the element type, U its unsigned twin ---- */

/* through int64 parameters, so one expression serves the unsigned type too (no always-false
 * comparisons there) */
static inline int neg(int64_t v) { return v < 0; }
static inline int past_width(int64_t count, int width) { return count < 0 || count >= width; }
static inline int minus_one(int64_t v) { return v == -1; }

/* torch's lshift: a count < 0 or >= the width gives 0 (unsigned math: no overflow) */
#define SHL(T, U, a, b) (past_width(b, 8 * (int)sizeof(T)) ? (T)0 : (T)(U)((U)(a) << (b)))
/* torch's rshift: a count < 0 or >= the width gives the sign fill (0 for unsigned) */
#define SHR(T, a, b) (past_width(b, 8 * (int)sizeof(T)) ? (T)(neg(a) ? -1 : 0) : (T)((a) >> (b)))

/* torch's calc_gcd in T: |a| wraps for the type's minimum (as torch's std::abs does), remainders in
 * int64 (a remainder by -1 is 0: the only division that could trap) */
#define GCD_FN(sfx, T)                                                                            \
    static inline T gcd_##sfx(T a, T b) {                                                         \
        a = neg(a) ? (T)(0 - (uint64_t)a) : a;                                                    \
        b = neg(b) ? (T)(0 - (uint64_t)b) : b;                                                    \
        while (a != 0) {                                                                          \
            T c = a;                                                                              \
            a = (T)(minus_one(a) ? 0 : (int64_t)b % (int64_t)a);                                   \
            b = c;                                                                                \
        }                                                                                         \
        return b;                                                                                 \
    }                                                                                             \
    /* lcm = |a / g * b|, 0 when g is 0; narrow types compute a / g * b in int (C's promotion,  \
     * as torch), int32 and int64 wrap in their own width */                                       \
    static inline T lcm_##sfx(T a, T b) {                                                         \
        T g = gcd_##sfx(a, b);                                                                    \
        if (g == 0) return 0;                                                                     \
        int64_t q = minus_one(g) ? (int64_t)(0 - (uint64_t)(int64_t)a) : (int64_t)a / (int64_t)g; \
        uint64_t m = (uint64_t)q * (uint64_t)(int64_t)b;                                          \
        int64_t r = sizeof(T) < 4 ? (int64_t)m : (int64_t)(T)m;                                   \
        return (T)(r < 0 ? 0 - (uint64_t)r : (uint64_t)r);                                        \
    }
GCD_FN(i64, int64_t)
GCD_FN(i32, int32_t)
GCD_FN(i16, int16_t)
GCD_FN(i8, int8_t)
GCD_FN(u8, uint8_t)

/* ---- run generator ---- */

#define BIT_RUN(name, T, EXPR)                                                                     \
    static void name(const char *ap, int64_t sa, const char *bp, int64_t sb, char *op_, int64_t so, int64_t n) { \
        if (sa == sizeof(T) && sb == sizeof(T) && so == sizeof(T)) {                               \
            const T *restrict A = (const T *)ap, *restrict B = (const T *)bp;                      \
            T *restrict O = (T *)op_;                                                              \
            for (int64_t i = 0; i < n; i++) { T a = A[i], b = B[i]; O[i] = (T)(EXPR); }             \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = *(const T *)(ap + i * sa), b = *(const T *)(bp + i * sb);                    \
                *(T *)(op_ + i * so) = (T)(EXPR);                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* X(op code, name, expression of a and b (T, U and sfx in scope), takes bool) */
#define BITWISE_OPS(X)                                       \
    X(PF_BITWISE_AND, and, a & b, 1)                          \
    X(PF_BITWISE_OR, or, a | b, 1)                            \
    X(PF_BITWISE_XOR, xor, a ^ b, 1)                          \
    X(PF_BITWISE_LEFT_SHIFT, lshift, SHL(T, U, a, b), 0)      \
    X(PF_BITWISE_RIGHT_SHIFT, rshift, SHR(T, a, b), 0)        \
    X(PF_GCD, gcd, gcd_##sfx(a, b), 0)                        \
    X(PF_LCM, lcm, lcm_##sfx(a, b), 0)

/* the integer dtypes: X(code, suffix, T, U) */
#define INT_TYPES(X, ...)                                \
    X(PF_INT64, i64, int64_t, uint64_t, __VA_ARGS__)     \
    X(PF_INT32, i32, int32_t, uint32_t, __VA_ARGS__)     \
    X(PF_INT16, i16, int16_t, uint16_t, __VA_ARGS__)     \
    X(PF_INT8, i8, int8_t, uint8_t, __VA_ARGS__)         \
    X(PF_UINT8, u8, uint8_t, uint8_t, __VA_ARGS__)

#define INT_RUN(code, sfx, TT, UU, nm, EXPR) BIT_RUN(bit_##nm##_##sfx, TT, EXPR_##nm(TT, UU, sfx))
#define EXPR_and(T, U, sfx) a & b
#define EXPR_or(T, U, sfx) a | b
#define EXPR_xor(T, U, sfx) a ^ b
#define EXPR_lshift(T, U, sfx) SHL(T, U, a, b)
#define EXPR_rshift(T, U, sfx) SHR(T, a, b)
#define EXPR_gcd(T, U, sfx) gcd_##sfx(a, b)
#define EXPR_lcm(T, U, sfx) lcm_##sfx(a, b)
#define RUNS(op, nm, expr, with_bool) INT_TYPES(INT_RUN, nm, expr)
BITWISE_OPS(RUNS)
/* bool: the logical forms of and, or, xor on 0/1 bytes */
BIT_RUN(bit_and_b8, uint8_t, a & b)
BIT_RUN(bit_or_b8, uint8_t, a | b)
BIT_RUN(bit_xor_b8, uint8_t, a ^ b)

#define INT_ENTRY(code, sfx, TT, UU, nm, ...) [code] = bit_##nm##_##sfx,
#define BOOL_ENTRY_1(nm) [PF_BOOL] = bit_##nm##_b8,
#define BOOL_ENTRY_0(nm)
#define TABLE_ROW(op, nm, expr, with_bool) [op] = {INT_TYPES(INT_ENTRY, nm) BOOL_ENTRY_##with_bool(nm)},
#define NAME_ROW(op, nm, ...) [op] = #nm,
#define COUNT_ROW(...) +1
static const bit_run bit_table[PF_NUM_BITWISE][PF_NUM_DTYPES] = {BITWISE_OPS(TABLE_ROW)};
static const char *const bit_name[PF_NUM_BITWISE] = {BITWISE_OPS(NAME_ROW)};
_Static_assert(0 BITWISE_OPS(COUNT_ROW) == PF_NUM_BITWISE, "a bitwise op code in pyframe_api.h has no row");

/* ~x: bool flips its 0/1 byte, integers every bit */
#define NOT_RUN(code, sfx, T, U, ...)                                                              \
    static void not_##sfx(const char *xp, int64_t sx, char *op_, int64_t so, int64_t n) {          \
        for (int64_t i = 0; i < n; i++) *(T *)(op_ + i * so) = (T) ~*(const T *)(xp + i * sx);     \
    }
INT_TYPES(NOT_RUN, _)
static void not_b8(const char *xp, int64_t sx, char *op_, int64_t so, int64_t n) {
    for (int64_t i = 0; i < n; i++) *(uint8_t *)(op_ + i * so) = !*(const uint8_t *)(xp + i * sx);
}
typedef void (*not_run)(const char *x, int64_t sx, char *o, int64_t so, int64_t n);
#define NOT_ENTRY(code, sfx, ...) [code] = not_##sfx,
static const not_run not_table[PF_NUM_DTYPES] = {INT_TYPES(NOT_ENTRY, _)[PF_BOOL] = not_b8};

/* ---- drivers ---- */

typedef struct {
    pf_walk w;
    bit_run bin;
    not_run un;
    const char *a, *b;
    char *o;
} bit_job;

static void bit_range(void *arg, int64_t begin, int64_t end) {
    const bit_job *j = arg;
    pf_walk w = j->w;
    pf_walk_seek(&w, begin);
    for (int64_t pos = begin; pos < end;) {
        int64_t len = pf_walk_run(&w, end - pos);
        if (j->bin) j->bin(j->a + w.off[0], w.inner[0], j->b + w.off[1], w.inner[1], j->o + w.off[2], w.inner[2], len);
        else j->un(j->a + w.off[0], w.inner[0], j->o + w.off[1], w.inner[1], len);
        pos += len;
        pf_walk_advance(&w, len);
    }
}

int pf_bitwise(int op, const pf_tensor *a, const pf_tensor *b, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(a, "first operand")) || (rc = pf_check(b, "second operand")) ||
        (rc = pf_check(out, "output")))
        return rc;
    if (op < 0 || op >= PF_NUM_BITWISE) return pf_error(PF_ERR_VALUE, "unknown bitwise op code %d", op);
    if (a->dtype != b->dtype || out->dtype != a->dtype)
        return pf_error(PF_ERR_TYPE, "%s: operands and output must have one dtype, got %s, %s and %s", bit_name[op],
                        pf_dtype_name[a->dtype], pf_dtype_name[b->dtype], pf_dtype_name[out->dtype]);
    bit_run run = bit_table[op][a->dtype];
    if (!run)
        return pf_error(PF_ERR_TYPE, "%s: not implemented for %s (it takes %s)", bit_name[op],
                        pf_dtype_name[a->dtype], bit_table[op][PF_BOOL] ? "bool and integer dtypes" : "integer dtypes");
    int64_t sa[PF_MAX_DIMS], sb[PF_MAX_DIMS];
    if ((rc = pf_broadcast_strides(a, out->ndim, out->shape, sa, "first operand")) ||
        (rc = pf_broadcast_strides(b, out->ndim, out->shape, sb, "second operand")))
        return rc;
    const int64_t *st[3] = {sa, sb, out->strides};
    size_t es = pf_dtype_size[a->dtype], sz[3] = {es, es, es};
    bit_job j = {.bin = run, .a = a->data, .b = b->data, .o = out->data};
    pf_walk_init(&j.w, out->ndim, out->shape, 3, st, sz);
    pf_parallel_range(pf_threads_for(j.w.numel), j.w.numel, bit_range, &j);
    return PF_OK;
}

int pf_bitwise_not(const pf_tensor *x, pf_tensor *out) {
    int rc;
    if ((rc = pf_check(x, "bitwise_not input")) || (rc = pf_check(out, "bitwise_not output"))) return rc;
    if (x->dtype != out->dtype)
        return pf_error(PF_ERR_TYPE, "bitwise_not: input is %s but output is %s", pf_dtype_name[x->dtype],
                        pf_dtype_name[out->dtype]);
    not_run run = not_table[x->dtype];
    if (!run)
        return pf_error(PF_ERR_TYPE, "bitwise_not: not implemented for %s (it takes bool and integer dtypes)",
                        pf_dtype_name[x->dtype]);
    int64_t sx[PF_MAX_DIMS];
    if ((rc = pf_broadcast_strides(x, out->ndim, out->shape, sx, "input"))) return rc;
    const int64_t *st[2] = {sx, out->strides};
    size_t es = pf_dtype_size[x->dtype], sz[2] = {es, es};
    bit_job j = {.un = run, .a = x->data, .o = out->data};
    pf_walk_init(&j.w, out->ndim, out->shape, 2, st, sz);
    pf_parallel_range(pf_threads_for(j.w.numel), j.w.numel, bit_range, &j);
    return PF_OK;
}
