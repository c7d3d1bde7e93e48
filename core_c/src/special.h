/* Special functions, scalar (special.c, special_bessel.c, special_poly.c, special_erfcx.c): the elementwise
 * table's rows call them. Each comes in double (pf_X) and float (pf_Xf). */
#ifndef PF_SPECIAL_H
#define PF_SPECIAL_H

#define PF_SPECIAL_1(name) \
    double pf_##name(double x); \
    float pf_##name##f(float x);
#define PF_SPECIAL_2(name) \
    double pf_##name(double x, double y); \
    float pf_##name##f(float x, float y);

PF_SPECIAL_1(digamma)
PF_SPECIAL_1(trigamma)
PF_SPECIAL_1(erfinv)
PF_SPECIAL_1(ndtri)
PF_SPECIAL_1(erfcx)
PF_SPECIAL_1(i0)
PF_SPECIAL_1(i0e)
PF_SPECIAL_1(i1)
PF_SPECIAL_1(i1e)
PF_SPECIAL_1(bessel_j0)
PF_SPECIAL_1(bessel_j1)
PF_SPECIAL_1(bessel_y0)
PF_SPECIAL_1(bessel_y1)
PF_SPECIAL_1(modified_bessel_k0)
PF_SPECIAL_1(modified_bessel_k1)
PF_SPECIAL_1(scaled_modified_bessel_k0)
PF_SPECIAL_1(scaled_modified_bessel_k1)
PF_SPECIAL_1(airy_ai)
PF_SPECIAL_2(zeta) /* (x, q) */
PF_SPECIAL_2(polygamma) /* (x, n) */
PF_SPECIAL_2(igamma)    /* (a, x): regularized lower incomplete gamma P */
PF_SPECIAL_2(igammac)   /* (a, x): regularized upper incomplete gamma Q = 1 - P */
/* (x, n): the degree n truncated to an integer, as torch takes it */
PF_SPECIAL_2(chebyshev_polynomial_t)
PF_SPECIAL_2(chebyshev_polynomial_u)
PF_SPECIAL_2(chebyshev_polynomial_v)
PF_SPECIAL_2(chebyshev_polynomial_w)
PF_SPECIAL_2(shifted_chebyshev_polynomial_t)
PF_SPECIAL_2(shifted_chebyshev_polynomial_u)
PF_SPECIAL_2(shifted_chebyshev_polynomial_v)
PF_SPECIAL_2(shifted_chebyshev_polynomial_w)
PF_SPECIAL_2(hermite_polynomial_h)
PF_SPECIAL_2(hermite_polynomial_he)
PF_SPECIAL_2(laguerre_polynomial_l)
PF_SPECIAL_2(legendre_polynomial_p)

#undef PF_SPECIAL_1
#undef PF_SPECIAL_2
#endif
