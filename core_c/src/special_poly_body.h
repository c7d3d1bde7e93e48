/* The orthogonal polynomials of special_poly.c, written once for a floating type T: special_poly.c includes this
 * file twice, with T = double (names pf_X) and T = float (pf_Xf). Each is evaluated by its three-term recurrence
 * (or, for the Chebyshev families inside (-1, 1) at higher degree, by its trigonometric form) exactly as PyTorch's
 * ATen/native/Math.h does (BSD-3-Clause, Copyright (c) Facebook, Inc. and its affiliates), so that the rounding
 * agrees with torch's too. The degree n arrives as an integer: a negative degree gives 0.
 *
 * The recurrences' steps are written as fma(): torch's CPU kernels are compiled for AVX2/AVX-512 with FMA, where
 * the compiler fuses a * b - c into one rounding. Near a polynomial's roots one rounding per step grows past
 * float32's tolerance (He_7(3.7644825f) is 43.70886 unfused, 43.70929 in torch); C's fma() is the hardware
 * instruction where the CPU has one. */

static T FN(chebyshev_polynomial_t_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)1.0) {
        if (x > (T)0.0 || n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if ((n > 6) && (fabs(x) < (T)1.0)) {
        return cos(n * acos(x));
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x;
    }
    T p = (T)1.0;
    T q = x;
    T r = x;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x, q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(chebyshev_polynomial_u_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)1.0) {
        if (x > (T)0.0 || n % 2 == 0) {
            return n + 1;
        }
        return -(n + 1);
    }
    if ((n > 8) && (fabs(x) < (T)1.0)) {
        if (sin(acos(x)) != (T)0.0) {
            return sin((n + 1) * acos(x)) / sin(acos(x));
        }
        return (n + 1) * cos((n + 1) * acos(x)) / x;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x;
    }
    T p = (T)1.0;
    T q = x + x;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x, q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(chebyshev_polynomial_v_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)1.0) {
        if (x > (T)0.0) {
            return (T)1.0;
        }
        if (n % 2 == 0) {
            return n + n + 1;
        }
        return -(n + n + 1);
    }
    if ((n > 8) && (fabs(x) < (T)1.0)) {
        if (sin(acos(x) / (T)2.0) != (T)1.0) {
            return cos((n + (T)0.5) * acos(x)) / cos(acos(x) / (T)2.0);
        }
        if (n % 2 == 0) {
            return n + n + 1;
        }
        return -(n + n + 1);
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x - (T)1.0;
    }
    T p = (T)1.0;
    T q = x + x - (T)1.0;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x, q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(chebyshev_polynomial_w_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)1.0) {
        if (x > (T)0.0) {
            return n + n + 1;
        }
        if (n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if ((n > 8) && (fabs(x) < (T)1.0)) {
        if (cos(acos(x) / (T)2.0) != (T)1.0) {
            return sin((n + (T)0.5) * acos(x)) / sin(acos(x) / (T)2.0);
        }
        if (x > (T)0.0) {
            return n + n + 1;
        }
        if (n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x + (T)1.0;
    }
    T p = (T)1.0;
    T q = x + x + (T)1.0;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x, q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(hermite_polynomial_h_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x;
    }
    if (n > HERMITE_LIMIT) {
        return (T)NAN;
    }
    T p = (T)1.0;
    T q = x + x;
    T r = (T)0.0;
    for (int64_t k = 2; k < n + n; k += 2) {
        r = fma(x + x, q, -(k * p));
        p = q;
        q = r;
    }
    return r;
}
static T FN(hermite_polynomial_he_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x;
    }
    if (n > HERMITE_LIMIT) {
        return (T)NAN;
    }
    T p = (T)1.0;
    T q = x;
    T r = (T)0.0;
    for (int64_t k = 1; k < n; k++) {
        r = fma(x, q, -(k * p));
        p = q;
        q = r;
    }
    return r;
}
static T FN(laguerre_polynomial_l_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)0.0) {
        return (T)1.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return (T)1.0 - x;
    }
    T p = (T)1.0;
    T q = (T)1.0 - x;
    T r = (T)0.0;
    for (int64_t k = 1; (k < n) && !isnan(q); k++) {
        r = fma((k + k) + ((T)1.0 - x), q, -(k * p)) / (k + 1);
        p = q;
        q = r;
    }
    return r;
}
static T FN(legendre_polynomial_p_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (fabs(x) == (T)1.0) {
        if (x > (T)0.0 || n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x;
    }
    T p = (T)1.0;
    T q = x;
    T r = (T)0.0;
    for (int64_t k = 1; (k < n) && !isnan(q); k++) {
        r = fma((k + k + 1) * x, q, -(k * p)) / (k + 1);
        p = q;
        q = r;
    }
    return r;
}
static T FN(shifted_chebyshev_polynomial_t_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (x == (T)1.0) {
        return (T)1.0;
    }
    if (x == (T)0.0) {
        if (n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if ((n > 6) && (fabs(x + x - (T)1.0) < (T)1.0)) {
        return cos(n * acos(x + x - (T)1.0));
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x - (T)1.0;
    }
    T p = (T)1.0;
    T q = x + x - (T)1.0;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x - (T)1.0 + (x + x - (T)1.0), q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(shifted_chebyshev_polynomial_u_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (x == (T)1.0) {
        return n + 1;
    }
    if (x == (T)0.0) {
        if (n % 2 == 0) {
            return n + 1;
        }
        return -(n + 1);
    }
    if ((n > 6) && (fabs(x + x - (T)1.0) < (T)1.0)) {
        if (sin(acos(x + x - (T)1.0)) != (T)0.0) {
            return sin((n + 1) * acos(x + x - (T)1.0)) / sin(acos(x + x - (T)1.0));
        }
        return (n + 1) * cos((n + 1) * acos(x + x - (T)1.0)) / (x + x - (T)1.0);
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x - (T)1.0 + (x + x - (T)1.0);
    }
    T p = (T)1.0;
    T q = x + x - (T)1.0 + (x + x - (T)1.0);
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x - (T)1.0 + (x + x - (T)1.0), q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(shifted_chebyshev_polynomial_v_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (x == (T)1.0) {
        return (T)1.0;
    }
    if (x == (T)0.0) {
        if (n % 2 == 0) {
            return (n + n + 1);
        }
        return -(n + n + 1);
    }
    if ((n > 6) && (fabs(x + x - (T)1.0) < (T)1.0)) {
        if (sin(acos(x + x - (T)1.0) / (T)2.0) != (T)1.0) {
            return cos((n + (T)0.5) * acos(x + x - (T)1.0)) / cos(acos(x + x - (T)1.0) / (T)2.0);
        }
        if (n % 2 == 0) {
            return n + n + 1;
        }
        return -(n + n + 1);
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x - (T)1.0 + (x + x - (T)1.0) - (T)1.0;
    }
    T p = (T)1.0;
    T q = x + x - (T)1.0 + (x + x - (T)1.0) - (T)1.0;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x - (T)1.0 + (x + x - (T)1.0), q, -p);
        p = q;
        q = r;
    }
    return r;
}
static T FN(shifted_chebyshev_polynomial_w_n)(T x, int64_t n) {
    if (n < 0) {
        return (T)0.0;
    }
    if (x == (T)1.0) {
        return n + n + 1;
    }
    if (x == (T)0.0) {
        if (n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if ((n > 4) && (fabs(x + x - (T)1.0) < (T)1.0)) {
        if (cos(acos(x + x - (T)1.0) / (T)2.0) != (T)1.0) {
            return sin((n + (T)0.5) * acos(x + x - (T)1.0)) / sin(acos(x + x - (T)1.0) / (T)2.0);
        }
        if (n % 2 == 0) {
            return (T)1.0;
        }
        return (T)-1.0;
    }
    if (n == 0) {
        return (T)1.0;
    }
    if (n == 1) {
        return x + x - (T)1.0 + (x + x - (T)1.0) + (T)1.0;
    }
    T p = (T)1.0;
    T q = x + x - (T)1.0 + (x + x - (T)1.0) + (T)1.0;
    T r = (T)0.0;
    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = fma(x + x - (T)1.0 + (x + x - (T)1.0), q, -p);
        p = q;
        q = r;
    }
    return r;
}


/* the degree from a floating n as torch takes it (truncated); NaN, infinities and degrees past int64 count as
 * negative, whose polynomial is 0 */
static int64_t FN(poly_degree)(T n) { return isfinite(n) && fabs(n) < (T)9.2e18 ? (int64_t)n : -1; }

#define PF_POLY(NAME) \
    T FN(NAME)(T x, T n) { return FN(NAME##_n)(x, FN(poly_degree)(n)); }
PF_POLY(chebyshev_polynomial_t)
PF_POLY(chebyshev_polynomial_u)
PF_POLY(chebyshev_polynomial_v)
PF_POLY(chebyshev_polynomial_w)
PF_POLY(hermite_polynomial_h)
PF_POLY(hermite_polynomial_he)
PF_POLY(laguerre_polynomial_l)
PF_POLY(legendre_polynomial_p)
PF_POLY(shifted_chebyshev_polynomial_t)
PF_POLY(shifted_chebyshev_polynomial_u)
PF_POLY(shifted_chebyshev_polynomial_v)
PF_POLY(shifted_chebyshev_polynomial_w)
#undef PF_POLY
