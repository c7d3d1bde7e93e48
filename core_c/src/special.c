/* Special functions: digamma, trigamma (digamma's derivative), polygamma and the Hurwitz zeta function, erfinv,
 * ndtri, and the modified Bessel functions i0, i1 (and i0e = exp(-|x|) i0(x), i1e), each in float and double as
 * PyTorch computes them (the Bessel functions J, Y, K and Airy's are special_bessel.c's, erfcx special_erfcx.c's).
 *
 * Ported from PyTorch's ATen/native/Math.h (BSD-3-Clause, Copyright (c) Facebook, Inc. and its affiliates), whose
 * digamma, zeta, ndtri, i0 and i0e are derived from the Cephes Math Library (3-Clause BSD License, Copyright (c)
 * 2018, Steven Moshier) and erfinv from Gary L. Pavlis's translation of the MATLAB erfinv m-file. The float versions
 * compute in float where PyTorch's do, so results agree to the last bit or close to it. */
#include <math.h>
#include "special.h"

#define PF_PI 3.14159265358979323846

/* ---- digamma (Cephes psi) ------------------------------------------------------------------------------ */
static double polevl(double x, const double *a, int len) {
    double r = 0;
    for (int i = 0; i <= len; i++) r = r * x + a[i];
    return r;
}
static float polevlf(float x, const float *a, int len) {
    float r = 0;
    for (int i = 0; i <= len; i++) r = r * x + a[i];
    return r;
}

static const double PSI_A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                               -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                               8.33333333333333333333E-2};
static const float PSI_AF[] = {8.33333333333333333333E-2f, -2.10927960927960927961E-2f, 7.57575757575757575758E-3f,
                               -4.16666666666666666667E-3f, 3.96825396825396825397E-3f, -8.33333333333333333333E-3f,
                               8.33333333333333333333E-2f};

double pf_digamma(double x) {
    if (x == 0) return copysign(INFINITY, -x);
    if (x < 0) {
        if (x == trunc(x)) return NAN;
        double q, r = modf(x, &q);
        return pf_digamma(1 - x) - PF_PI / tan(PF_PI * r);
    }
    double result = 0;
    while (x < 10) {
        result -= 1 / x;
        x += 1;
    }
    if (x == 10) return result + 2.25175258906672110764;
    double y = 0;
    if (x < 1.0e17) {
        double z = 1.0 / (x * x);
        y = z * polevl(z, PSI_A, 6);
    }
    return result + log(x) - (0.5 / x) - y;
}

float pf_digammaf(float x) {
    if (x == 0) return copysignf(INFINITY, -x);
    if (x < 0) {
        if (x == truncf(x)) return NAN;
        double q, r = modf(x, &q);
        float pi_over_tan_pi_x = (float)(PF_PI / tan(PF_PI * r));
        return pf_digammaf(1 - x) - pi_over_tan_pi_x;
    }
    float result = 0;
    while (x < 10) {
        result -= 1 / x;
        x += 1;
    }
    if (x == 10) return result + 2.25175258906672110764f;
    float y = 0;
    if (x < 1.0e17f) {
        float z = 1 / (x * x);
        y = z * polevlf(z, PSI_AF, 6);
    }
    return result + logf(x) - (0.5f / x) - y;
}

/* ---- trigamma ------------------------------------------------------------------------------------------- */
#define PF_TRIGAMMA(NAME, T, SIN, PI)                                                                  \
    T NAME(T x) {                                                                                      \
        T sign = +1, result = 0;                                                                       \
        if (x < (T)0.5) {                                                                              \
            sign = -1;                                                                                 \
            const T s = SIN(PI * x);                                                                   \
            result -= (PI * PI) / (s * s);                                                             \
            x = 1 - x;                                                                                 \
        }                                                                                              \
        for (int i = 0; i < 6; ++i) {                                                                  \
            result += 1 / (x * x);                                                                     \
            x += 1;                                                                                    \
        }                                                                                              \
        const T ixx = 1 / (x * x);                                                                     \
        result += (1 + 1 / (2 * x) + ixx * ((T)1 / 6 - ixx * ((T)1 / 30 - ixx * ((T)1 / 42)))) / x;   \
        return sign * result;                                                                          \
    }
PF_TRIGAMMA(pf_trigamma, double, sin, PF_PI)
PF_TRIGAMMA(pf_trigammaf, float, sinf, (float)PF_PI)

/* ---- erfinv: a rational first guess, then two Newton steps -------------------------------------------------- */
#define PF_ERFINV(NAME, T, SQRT, LOG, ERF, EXP, COPYSIGN, FABS)                                          \
    T NAME(T y) {                                                                                        \
        static const T a[4] = {(T)0.886226899, (T)-1.645349621, (T)0.914624893, (T)-0.140543331};       \
        static const T b[4] = {(T)-2.118377725, (T)1.442710462, (T)-0.329097515, (T)0.012229801};       \
        static const T c[4] = {(T)-1.970840454, (T)-1.624906493, (T)3.429567803, (T)1.641345311};       \
        static const T d[2] = {(T)3.543889200, (T)1.637067800};                                          \
        const T two_over_sqrt_pi = (T)1.12837916709551257390;                                            \
        T x, z, num, dem, y_abs = FABS(y);                                                               \
        if (y_abs > 1) return (T)NAN;                                                                    \
        if (y_abs == 1) return COPYSIGN((T)INFINITY, y);                                                 \
        if (y_abs <= (T)0.7) {                                                                           \
            z = y * y;                                                                                   \
            num = (((a[3] * z + a[2]) * z + a[1]) * z + a[0]);                                           \
            dem = ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + (T)1);                              \
            x = y * num / dem;                                                                           \
        } else {                                                                                         \
            z = SQRT(-LOG(((T)1 - y_abs) / (T)2));                                                      \
            num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];                                             \
            dem = (d[1] * z + d[0]) * z + (T)1;                                                          \
            x = COPYSIGN(num, y) / dem;                                                                  \
        }                                                                                                \
        x = x - (ERF(x) - y) / (two_over_sqrt_pi * EXP(-x * x));                                         \
        x = x - (ERF(x) - y) / (two_over_sqrt_pi * EXP(-x * x));                                         \
        return x;                                                                                        \
    }
PF_ERFINV(pf_erfinv, double, sqrt, log, erf, exp, copysign, fabs)
PF_ERFINV(pf_erfinvf, float, sqrtf, logf, erff, expf, copysignf, fabsf)

/* ---- i0, i0e, i1, i1e (Cephes): Chebyshev expansions on [0, 8] and (8, inf) of exp(-x) I0(x), exp(-x) I1(x) -- */
#define I0_A \
    {-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16, \
     1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14, \
     -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11, \
     9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9, \
     -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7, \
     1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5, \
     -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4, \
     1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2, \
     -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2, \
     1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1}
#define I0_B \
    {-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17, \
     3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16, \
     1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15, \
     -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13, \
     7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11, \
     -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10, \
     3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7, \
     2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3, \
     8.04490411014108831608E-1}
#define I1_A \
    {2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16, \
     -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14, \
     3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11, \
     -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9, \
     9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7, \
     -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5, \
     4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4, \
     -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2, \
     2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1, \
     -1.76416518357834055153E-1, 2.52587186443633654823E-1}
#define I1_B \
    {7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17, \
     -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16, \
     -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14, \
     4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13, \
     -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11, \
     3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10, \
     -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7, \
     -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3, \
     7.78576235018280120474E-1}
static const double I0A[] = I0_A, I0B[] = I0_B, I1A[] = I1_A, I1B[] = I1_B;
/* float: the double coefficients rounded (PyTorch's float i1 uses shorter tables, 17 and 7 terms) */
static const float I0AF[] = I0_A, I0BF[] = I0_B, I1AF[] = I1_A, I1BF[] = I1_B;

#define PF_CHBEVL(NAME, T)                                                                             \
    static T NAME(T x, const T *array, int len) {                                                      \
        T b0 = array[0], b1 = 0, b2 = 0;                                                               \
        for (int i = 1; i < len; ++i) {                                                                \
            b2 = b1;                                                                                   \
            b1 = b0;                                                                                   \
            b0 = x * b1 - b2 + array[i];                                                               \
        }                                                                                              \
        return (T)0.5 * (b0 - b2);                                                                     \
    }
PF_CHBEVL(chbevl, double)
PF_CHBEVL(chbevlf, float)

double pf_i0(double x) {
    x = fabs(x);
    if (x <= 8.0) return exp(x) * chbevl(x / 2.0 - 2.0, I0A, 30);
    return exp(x) * chbevl(32.0 / x - 2.0, I0B, 25) / sqrt(x);
}
float pf_i0f(float x) {
    x = fabsf(x);
    if (x <= 8.0f) return expf(x) * chbevlf(x / 2.0f - 2.0f, I0AF, 30);
    return expf(x) * chbevlf(32.0f / x - 2.0f, I0BF, 25) / sqrtf(x);
}
double pf_i0e(double x) {
    x = fabs(x);
    if (x <= 8.0) return chbevl(x / 2.0 - 2.0, I0A, 30);
    return chbevl(32.0 / x - 2.0, I0B, 25) / sqrt(x);
}
float pf_i0ef(float x) {
    x = fabsf(x);
    if (x <= 8.0f) return chbevlf(x / 2.0f - 2.0f, I0AF, 30);
    return chbevlf(32.0f / x - 2.0f, I0BF, 25) / sqrtf(x);
}

#define PF_I1(NAME, T, EXP, SQRT, FABS, CH, A, B, SCALED)                                              \
    T NAME(T x0) {                                                                                     \
        T x = FABS(x0), out;                                                                           \
        if (x <= (T)8) out = (SCALED ? (T)1 : EXP(x)) * x * CH(x / (T)2 - (T)2, A, 29);                \
        else out = (SCALED ? (T)1 : EXP(x)) * CH((T)32 / x - (T)2, B, 25) / SQRT(x);                   \
        return x0 < 0 ? -out : out;                                                                    \
    }
PF_I1(pf_i1, double, exp, sqrt, fabs, chbevl, I1A, I1B, 0)
PF_I1(pf_i1f, float, expf, sqrtf, fabsf, chbevlf, I1AF, I1BF, 0)
PF_I1(pf_i1e, double, exp, sqrt, fabs, chbevl, I1A, I1B, 1)
PF_I1(pf_i1ef, float, expf, sqrtf, fabsf, chbevlf, I1AF, I1BF, 1)

/* ---- Hurwitz zeta (Cephes zeta), polygamma ------------------------------------------------------------- */
/* Euler-Maclaurin: the sum of (q + k)^-x up to q + k > 9 (at least 9 terms), then the tail by Bernoulli terms.
 * float computes in double (PyTorch's accumulate type), so pf_zetaf is pf_zeta rounded. */
double pf_zeta(double x, double q) {
    static const double A[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                               7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                               -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
    const double MACHEP = 1.11022302462515654042E-16;
    if (x == 1) return INFINITY;
    if (x < 1) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (x != floor(x)) return NAN; /* q^-x would be complex */
    }
    double s = pow(q, -x), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i += 1;
        a += 1;
        b = pow(a, -x);
        s += b;
        if (-MACHEP * s < b && b < MACHEP * s) return s;
    }
    double w = a, k = 0;
    s += b * w / (x - 1);
    s -= 0.5 * b;
    a = 1;
    for (i = 0; i < 12; i++) {
        a *= x + k;
        b /= w;
        double t = a * b / A[i];
        s = s + t;
        if (fabs(t / s) < MACHEP) return s;
        k += 1;
        a *= x + k;
        b /= w;
        k += 1;
    }
    return s;
}
float pf_zetaf(float x, float q) { return (float)pf_zeta(x, q); }

/* the n-th derivative of digamma (n >= 0 an integer): digamma, trigamma, then (-1)^(n+1) n! zeta(n + 1, x) */
double pf_polygamma(double x, double n) {
    if (n == 0) return pf_digamma(x);
    if (n == 1) return pf_trigamma(x);
    return (fmod(n, 2) != 0 ? 1.0 : -1.0) * exp(lgamma(n + 1)) * pf_zeta(n + 1, x);
}
float pf_polygammaf(float x, float n) {
    if (n == 0) return pf_digammaf(x);
    if (n == 1) return pf_trigammaf(x);
    return (fmodf(n, 2) != 0 ? 1.0f : -1.0f) * expf(lgammaf(n + 1)) * (float)pf_zeta(n + 1, x);
}

/* ---- ndtri (Cephes): the inverse of the standard normal CDF --------------------------------------------- */
/* a rational function of y - 1/2 in the middle; of 1 / sqrt(-2 log y) in the tails (two ranges) */
#define NDTRI_P0 \
    {-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1, \
     1.39312609387279679503E1, -1.23916583867381258016E0}
#define NDTRI_Q0 \
    {1.00000000000000000000E0, 1.95448858338141759834E0, 4.67627912898881538453E0, \
     8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2, \
     -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0}
#define NDTRI_P1 \
    {4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1, \
     4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0, \
     -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4}
#define NDTRI_Q1 \
    {1.00000000000000000000E0, 1.57799883256466749731E1, 4.53907635128879210584E1, \
     4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0, \
     -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4}
#define NDTRI_P2 \
    {3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0, \
     1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2, \
     3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9}
#define NDTRI_Q2 \
    {1.00000000000000000000E0, 6.02427039364742014255E0, 3.67983563856160859403E0, \
     1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2, \
     3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9}

#define PF_NDTRI(NAME, T, POLEVL, SQRT, LOG)                                                           \
    T NAME(T y0) {                                                                                     \
        static const T P0[] = NDTRI_P0, Q0[] = NDTRI_Q0, P1[] = NDTRI_P1, Q1[] = NDTRI_Q1;             \
        static const T P2[] = NDTRI_P2, Q2[] = NDTRI_Q2;                                               \
        const T s2pi = (T)2.50662827463100050242E0, exp_m2 = (T)0.13533528323661269189;                \
        if (y0 == 0) return (T)-INFINITY;                                                              \
        if (y0 == 1) return (T)INFINITY;                                                               \
        if (y0 < 0 || y0 > 1) return (T)NAN;                                                           \
        int negate = 1;                                                                                \
        T y = y0;                                                                                      \
        if (y > 1 - exp_m2) {                                                                          \
            y = 1 - y;                                                                                 \
            negate = 0;                                                                                \
        }                                                                                              \
        if (y > exp_m2) {                                                                              \
            y = y - (T)0.5;                                                                            \
            const T y2 = y * y;                                                                        \
            return (y + y * (y2 * POLEVL(y2, P0, 4) / POLEVL(y2, Q0, 8))) * s2pi;                      \
        }                                                                                              \
        T x = SQRT((T)-2.0 * LOG(y));                                                                  \
        const T x0 = x - LOG(x) / x, z = 1 / x;                                                        \
        const T x1 = x < 8 ? z * POLEVL(z, P1, 8) / POLEVL(z, Q1, 8) : z * POLEVL(z, P2, 8) / POLEVL(z, Q2, 8); \
        x = x0 - x1;                                                                                   \
        return negate ? -x : x;                                                                        \
    }
PF_NDTRI(pf_ndtri, double, polevl, sqrt, log)
PF_NDTRI(pf_ndtrif, float, polevlf, sqrtf, logf)
