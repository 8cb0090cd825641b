/* fastmath.c - call-free math for kernels (fastmath.h). The erfc fit's
 * coefficients were computed for kiln (a Chebyshev least-squares fit of
 * log(erfc(z) / t) + z^2 in t = 1 / (1 + z / 2), z in [0.5, 10], converted to
 * monomials in t). */
#include "fastmath.h"

static LLVMValueRef horner(jit_fn *f, LLVMValueRef x, const double *c, int n) {
  LLVMValueRef p = LLVMConstReal(f->t_f64, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) {
    LLVMValueRef a[3] = {p, x, LLVMConstReal(f->t_f64, c[i])};
    p = jit_intrinsic(f, "llvm.fma", f->t_f64, a, 3);
  }
  return p;
}

LLVMValueRef jit_erf_f32(jit_fn *f, LLVMValueRef x) {
  static const double taylor[] = {1.0,          -1.0 / 3.0,   1.0 / 10.0,  -1.0 / 42.0,
                                  1.0 / 216.0,  -1.0 / 1320.0, 1.0 / 9360.0, -1.0 / 75600.0};
  static const double erfc_p[] = {-1.2655380083210359,  1.0007510623790494,
                                  0.36550172782700074,  0.15213433675508695,
                                  -0.40080299290011417, 0.79973611146752455,
                                  -1.9323268029347667,  2.2345379191062302,
                                  -1.2118613099058775,  0.25790162611671885};
  LLVMBuilderRef b = f->b;
  LLVMTypeRef d = f->t_f64;
  LLVMValueRef xd = LLVMBuildFPExt(b, x, d, "");
  LLVMValueRef z = jit_intrinsic(f, "llvm.fabs", d, &xd, 1);
  /* small: 2/sqrt(pi) * x * S(x^2) (keeps -0 and subnormals) */
  LLVMValueRef x2 = LLVMBuildFMul(b, xd, xd, "");
  LLVMValueRef s = horner(f, x2, taylor, (int)(sizeof taylor / sizeof taylor[0]));
  LLVMValueRef small =
      LLVMBuildFMul(b, LLVMBuildFMul(b, xd, LLVMConstReal(d, 1.1283791670955126), ""), s, "");
  /* large: copysign(1 - t * exp(P(t) - z^2), x); z = inf gives exp(-inf) = 0 */
  LLVMValueRef t = LLVMBuildFDiv(
      b, LLVMConstReal(d, 1.0),
      LLVMBuildFAdd(b, LLVMConstReal(d, 1.0), LLVMBuildFMul(b, z, LLVMConstReal(d, 0.5), ""), ""),
      "");
  LLVMValueRef p = horner(f, t, erfc_p, (int)(sizeof erfc_p / sizeof erfc_p[0]));
  LLVMValueRef e = jit_exp_f64(f, LLVMBuildFSub(b, p, LLVMBuildFMul(b, z, z, ""), ""));
  LLVMValueRef one_m = LLVMBuildFSub(b, LLVMConstReal(d, 1.0), LLVMBuildFMul(b, t, e, ""), "");
  LLVMValueRef cs[2] = {one_m, xd};
  LLVMValueRef large = jit_intrinsic(f, "llvm.copysign", d, cs, 2);
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, z, LLVMConstReal(d, 0.5), ""),
                                   small, large, "");
  return LLVMBuildFPTrunc(b, r, f->t_f32, "");
}
