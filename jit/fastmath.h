/* fastmath.h - call-free (so vectorizable) math for kernels, where libm's
 * scalar calls would stop LLVM's vectorizer: every function here is built
 * from arithmetic, fma, fabs, copysign and selects (no branch), handles
 * NaN, infinities, signed zeros and subnormals like libm, and states its
 * measured accuracy. exp of a float is jit_exp_f32 (lower.h, jit/emit.c). */
#ifndef KILN_JIT_FASTMATH_H
#define KILN_JIT_FASTMATH_H

#include "lower.h"

/* erf of a float, in float arithmetic (x: float or a float vector). For
 * |x| < 1, x + x Q(x^2); else copysign(1 - 2^L(|x| - 1), x), |x| clamped
 * to 4, with Q and L polynomials fitted for kiln (fastmath.c) and 2^L
 * computed inline (no call, no integer conversion). Measured over every
 * float, against libm's double erf: within 0.991 ulp of the exact value,
 * at most 1 ulp from the correctly rounded float (tests/test_fastmath.c
 * checks that bound on a dense sample); erf(+-0) = +-0, subnormals keep
 * their sign, erf(+-inf) = +-1, NaN stays NaN. About 35 vector
 * instructions per 16 floats with AVX-512. */
LLVMValueRef jit_erf_f32(jit_fn *f, LLVMValueRef x);

/* tanh of a float, in float arithmetic: for |x| < 0.875, x + x s T(s)
 * (s = x^2, T fitted for kiln, fastmath.c); else copysign(1 - 2 / (e + 1),
 * x), e = jit_exp_f32(2 |x|), with x's sign. Within 2 ulp of the correctly
 * rounded result (tests/test_fastmath.c checks that bound on a dense sample
 * of 17M floats, where it measured 1; numpy's model of the two formulas put
 * the worst at 0.86 and 1.25 ulp of the exact value); tanh(+-0) = +-0,
 * subnormals keep their value, tanh(+-inf) = +-1, NaN stays NaN. */
LLVMValueRef jit_tanh_f32(jit_fn *f, LLVMValueRef x);

#endif
