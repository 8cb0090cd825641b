/* fastmath.c - call-free float math for host kernels (fastmath.h).
 *
 * Polynomials: fitted for kiln with numpy (monomial basis in the variable
 * named, math.erf / math.erfc as the target), by Lawson's iteratively
 * reweighted least squares on 4000 Chebyshev nodes of the interval (300
 * iterations; it converges to the weighted minimax fit), the weight chosen
 * so that the fit error is the error it causes in the final result; then
 * rounded to float. "fit error" below is that weighted maximum, in double;
 * the accuracy of the float evaluation, measured over every float, is
 * stated in fastmath.h. */
#include "fastmath.h"

/* erf(x) = x + x Q(x^2) for |x| < 1: Q(s) ~ erf(sqrt s) / sqrt s - 1 on
 * [0, 1], weight x / erf(x) (relative error of erf), fit error 1.2e-9. */
static const double ERF_Q[7] = {0x1.06eba8p-3,  -0x1.81273ep-2, 0x1.ce2cf8p-4, -0x1.b7f90ep-6,
                                0x1.5405b8p-8,  -0x1.a3f722p-11, 0x1.496a84p-14};
/* erf(a) = 1 - 2^L(a - 1) for 1 <= a < 4: L(u) ~ log2(erfc(1 + u)) on
 * [0, 2.93], weight erfc ln 2 (absolute error of erf), fit error 1.0e-9;
 * past 3.92, 1 - erfc rounds to 1 in float. */
static const double ERF_L[7] = {-0x1.558eaep+1, -0x1.e7532p+1,  -0x1.37638ap+0, -0x1.ea7a7p-5,
                                0x1.d39596p-7,  -0x1.595266p-9, 0x1.18bb58p-12};
/* 2^f = 1 + f P(f) for |f| <= 1/2: P(f) ~ (2^f - 1) / f, weight for the
 * relative error of 2^f, fit error 2.0e-9. */
static const double EXP2_P[6] = {0x1.62e43p-1,   0x1.ebfbdcp-3,  0x1.c6aee8p-5,
                                 0x1.3b2d4cp-7,  0x1.5f3e52p-10, 0x1.41fbbcp-13};

/* tanh(x) = x + x s T(s), s = x^2, for |x| < 0.875: T(s) ~ (tanh(sqrt s) /
 * sqrt s - 1) / s on [0, 0.766], weight x s / tanh x (relative error of
 * tanh), fit error 7.4e-10. */
static const double TANH_T[7] = {-0x1.55555p-2,   0x1.110faap-3,  -0x1.b9da72p-5, 0x1.6377ccp-6,
                                 -0x1.110564p-7,  0x1.5b7922p-9,  -0x1.f9da14p-12};

static LLVMValueRef horner(jit_fn *f, LLVMValueRef x, const double *c, int n) {
  LLVMValueRef p = LLVMConstReal(f->t_f32, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) {
    LLVMValueRef a[3] = {p, x, LLVMConstReal(f->t_f32, c[i])};
    p = jit_intrinsic(f, "llvm.fma", f->t_f32, a, 3);
  }
  return p;
}

LLVMValueRef jit_erf_f32(jit_fn *f, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef t = f->t_f32;
  LLVMValueRef a = jit_intrinsic(f, "llvm.fabs", t, &x, 1);
  /* |x| < 1 (also NaN, +-0, subnormals: fma(x, Q, x) keeps them) */
  LLVMValueRef q = horner(f, LLVMBuildFMul(b, x, x, ""), ERF_Q, 7);
  LLVMValueRef sa[3] = {x, q, x};
  LLVMValueRef small = jit_intrinsic(f, "llvm.fma", t, sa, 3);
  /* |x| >= 1: a clamped to 4 (infinities too), so L is in [-26.3, -2.6] */
  LLVMValueRef four = LLVMConstReal(t, 4.0);
  LLVMValueRef ac = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a, four, ""), a, four, "");
  LLVMValueRef l = horner(f, LLVMBuildFSub(b, ac, LLVMConstReal(t, 1.0), ""), ERF_L, 7);
  /* 2^l = 2^k 2^(l - k), k = rint(l): adding M = 0x1.8p23 + 127 rounds l to
   * an integer and leaves k + 127 in the low mantissa bits of j (the bits
   * of 2^k once shifted into the exponent field); l - k is exact. */
  LLVMValueRef m = LLVMConstReal(t, 0x1.8000fep+23);
  LLVMValueRef j = LLVMBuildFAdd(b, l, m, "");
  LLVMValueRef fr = LLVMBuildFSub(b, l, LLVMBuildFSub(b, j, m, ""), "");
  LLVMValueRef pa[3] = {fr, horner(f, fr, EXP2_P, 6), LLVMConstReal(t, 1.0)};
  LLVMValueRef p = jit_intrinsic(f, "llvm.fma", t, pa, 3);
  LLVMValueRef scale = LLVMBuildShl(b, LLVMBuildBitCast(b, j, f->t_i32, ""),
                                    LLVMConstInt(f->t_i32, 23, 0), "");
  LLVMValueRef e = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, scale, t, ""), "");
  LLVMValueRef cs[2] = {LLVMBuildFSub(b, LLVMConstReal(t, 1.0), e, ""), x};
  LLVMValueRef large = jit_intrinsic(f, "llvm.copysign", t, cs, 2);
  /* ordered compare: NaN takes the small path, which returns it */
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGE, a, LLVMConstReal(t, 1.0), "");
  return LLVMBuildSelect(b, big, large, small, "");
}

LLVMValueRef jit_tanh_f32(jit_fn *f, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef t = f->t_f32;
  LLVMValueRef a = jit_intrinsic(f, "llvm.fabs", t, &x, 1);
  /* |x| < 0.875 (also NaN and subnormals, which fma(x, q, x) keeps; -0
   * gives +0 there, q being -0: the copysign below puts its sign back) */
  LLVMValueRef sq = LLVMBuildFMul(b, x, x, "");
  LLVMValueRef q = LLVMBuildFMul(b, sq, horner(f, sq, TANH_T, 7), "");
  LLVMValueRef sa[3] = {x, q, x};
  LLVMValueRef small = jit_intrinsic(f, "llvm.fma", t, sa, 3);
  /* |x| >= 0.875: 1 - 2 / (e^2|x| + 1), e from jit_exp_f32 (+inf past
   * 44.4, so 1); 2 / (e + 1) <= 0.30 there, so 1 - it cancels little */
  LLVMValueRef e = jit_exp_f32(f, LLVMBuildFAdd(b, a, a, ""));
  LLVMValueRef one = LLVMConstReal(t, 1.0);
  LLVMValueRef r = LLVMBuildFDiv(b, LLVMConstReal(t, 2.0), LLVMBuildFAdd(b, e, one, ""), "");
  LLVMValueRef large = LLVMBuildFSub(b, one, r, "");
  /* ordered compare: NaN takes the small path, which returns it; tanh has
   * x's sign everywhere */
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGE, a, LLVMConstReal(t, 0.875), "");
  LLVMValueRef cs[2] = {LLVMBuildSelect(b, big, large, small, ""), x};
  return jit_intrinsic(f, "llvm.copysign", t, cs, 2);
}
