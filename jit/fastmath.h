/* fastmath.h - call-free (so vectorizable) math for kernels, where libm's
 * scalar calls would stop LLVM's vectorizer: every function here is built
 * from arithmetic, fma, fabs and selects, handles NaN, infinities, signed
 * zeros and subnormals like libm, and states its accuracy. */
#ifndef KILN_JIT_FASTMATH_H
#define KILN_JIT_FASTMATH_H

#include "lower.h"

/* erf of a float (x: float, returns float), computed in double: for
 * |x| < 0.5 a Taylor series (relative error < 3e-11), else
 * 1 - t * exp(P(t) - x^2) with t = 1 / (1 + |x| / 2) and P a degree-9
 * polynomial fitted to erfc on [0.5, 10] (relative error of erfc < 3e-9;
 * beyond 10, erfc underflows float's resolution of 1). So the float result is
 * within one ulp of the correctly rounded one. */
LLVMValueRef jit_erf_f32(jit_fn *f, LLVMValueRef x);

#endif
