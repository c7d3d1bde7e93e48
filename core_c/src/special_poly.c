/* The orthogonal polynomials of torch.special (Chebyshev T, U, V, W and their shifted forms, Hermite H and He,
 * Laguerre L, Legendre P) of x and a degree n, in double and float: the bodies are special_poly_body.h's, made
 * once per type. */
#include <stdint.h>
#include <tgmath.h>
#include "special.h"

#define T double
#define FN(name) pf_##name
#define HERMITE_LIMIT 512 /* torch's: a higher degree gives NaN */
#include "special_poly_body.h"
#undef T
#undef FN
#undef HERMITE_LIMIT

#define T float
#define FN(name) pf_##name##f
#define HERMITE_LIMIT 128
#include "special_poly_body.h"
#undef T
#undef FN
#undef HERMITE_LIMIT
