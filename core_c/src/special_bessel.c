/* Bessel functions as torch.special computes them: J0, J1, Y0, Y1, the modified K0 and K1 (and exp(x) K0(x),
 * exp(x) K1(x)) and the Airy function Ai, in double and float: the bodies are special_bessel_body.h's, made once
 * per type. */
#include <float.h>
#include <tgmath.h>
#include "special.h"

#define PF_PI 3.14159265358979323846

#define T double
#define FN(name) pf_##name
#define EPS DBL_EPSILON
#include "special_bessel_body.h"
#undef T
#undef FN
#undef EPS

#define T float
#define FN(name) pf_##name##f
#define EPS FLT_EPSILON
#include "special_bessel_body.h"
#undef T
#undef FN
#undef EPS
