/* float8.c - casts between float8 codes (carried as i8) and f32, in LLVM IR
 * that every target lowers (no tables, no libcalls): the host, PTX, AMDGCN
 * and simt-emu alike.
 *
 * The formats and the rule are ir/dtype.h's (ir_float8_format): into a
 * float8, round to nearest even and saturate (a finite value past max, or an
 * infinity where the kind has none, becomes +-max; e5m2 keeps infinities);
 * NaN stays NaN (S.1111.111 for the fn kinds and e5m2, 0x80 for fnuz, which
 * also have no negative zero). Out of a float8 the value is exact in f32.
 *
 * f32 -> code: with e = floor(log2 |x|) clamped below at emin (so the
 * subnormal range shares the normal path), q = roundeven(|x| * 2^(m - e))
 * counts quanta of 2^(e - m), and the code is ((e - emin) << m) + q: a q
 * that rounds up to 2^(m+1) carries into the exponent field by itself, as
 * 2^m does from the subnormals into the first normal binade. */
#include <math.h>

#include "lower.h"

static LLVMValueRef i32c(jit_fn *f, long long v) {
  return LLVMConstInt(f->t_i32, (unsigned long long)v, 1);
}
static LLVMValueRef i8c(jit_fn *f, unsigned v) { return LLVMConstInt(f->t_i8, v, 0); }

LLVMValueRef jit_f32_to_float8(jit_fn *f, ir_dtype to, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  ir_float8_format fm;
  if (!ir_float8_format_of(to, &fm)) {
    jit_fn_error(f, "mo.cast: %s is not a float8 kind", ir_dtype_name(to));
    return LLVMGetPoison(f->t_i8);
  }
  int emax_cap = 1;
  while (ldexp(1.0, emax_cap) <= 2 * fm.max) emax_cap++; /* 2^emax_cap > 2 max */
  LLVMValueRef bits = LLVMBuildBitCast(b, x, f->t_i32, "");
  LLVMValueRef a = jit_intrinsic(f, "llvm.fabs", f->t_f32, &x, 1);
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  LLVMValueRef isinf = LLVMBuildFCmp(b, LLVMRealOEQ, a, LLVMConstReal(f->t_f32, INFINITY), "");
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, a, LLVMConstReal(f->t_f32, 2 * fm.max), "");
  /* e = floor(log2 a) from the exponent bits (f32 subnormals and 0 go to emin) */
  LLVMValueRef e = LLVMBuildSub(
      b, LLVMBuildAnd(b, LLVMBuildLShr(b, bits, i32c(f, 23), ""), i32c(f, 0xFF), ""),
      i32c(f, 127), "");
  LLVMValueRef lo = LLVMBuildICmp(b, LLVMIntSLT, e, i32c(f, fm.emin), "");
  e = LLVMBuildSelect(b, lo, i32c(f, fm.emin), e, "");
  LLVMValueRef hi = LLVMBuildICmp(b, LLVMIntSGT, e, i32c(f, emax_cap), "");
  e = LLVMBuildSelect(b, hi, i32c(f, emax_cap), e, "");
  /* 2^(m - e) as the bits of an f32: (127 + m - e) << 23, in [1, 254] */
  LLVMValueRef sbits = LLVMBuildShl(b, LLVMBuildSub(b, i32c(f, 127 + fm.mbits), e, ""),
                                    i32c(f, 23), "");
  LLVMValueRef scaled = LLVMBuildFMul(b, a, LLVMBuildBitCast(b, sbits, f->t_f32, ""), "");
  LLVMValueRef q = jit_intrinsic(f, "llvm.roundeven", f->t_f32, &scaled, 1);
  q = LLVMBuildFPToUI(b, LLVMBuildSelect(b, big, LLVMConstReal(f->t_f32, 0), q, ""), f->t_i32,
                      "");
  LLVMValueRef code = LLVMBuildAdd(
      b, LLVMBuildShl(b, LLVMBuildSub(b, e, i32c(f, fm.emin), ""), i32c(f, fm.mbits), ""), q, "");
  LLVMValueRef over = LLVMBuildOr(
      b, big, LLVMBuildICmp(b, LLVMIntUGT, code, i32c(f, fm.max_bits), ""), "");
  code = LLVMBuildSelect(b, over, i32c(f, fm.max_bits), code, "");
  if (fm.has_inf) code = LLVMBuildSelect(b, isinf, i32c(f, 0x7C), code, "");
  LLVMValueRef c8 = LLVMBuildTrunc(b, code, f->t_i8, "");
  LLVMValueRef sign = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, i32c(f, 24), ""), f->t_i8, "");
  sign = LLVMBuildAnd(b, sign, i8c(f, 0x80), "");
  if (fm.fnuz) /* no negative zero */
    sign = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, c8, i8c(f, 0), ""), i8c(f, 0), sign, "");
  LLVMValueRef r = LLVMBuildOr(b, c8, sign, "");
  LLVMValueRef nan = fm.fnuz ? i8c(f, 0x80) : LLVMBuildOr(b, sign, i8c(f, 0x7F), "");
  return LLVMBuildSelect(b, isnan, nan, r, "");
}

LLVMValueRef jit_float8_to_f32(jit_fn *f, ir_dtype from, LLVMValueRef c) {
  LLVMBuilderRef b = f->b;
  ir_float8_format fm;
  if (!ir_float8_format_of(from, &fm)) {
    jit_fn_error(f, "mo.cast: %s is not a float8 kind", ir_dtype_name(from));
    return LLVMGetPoison(f->t_f32);
  }
  unsigned mmask = (1u << fm.mbits) - 1, fmax = 0x7Fu >> fm.mbits;
  LLVMValueRef w = LLVMBuildZExt(b, c, f->t_i32, "");
  LLVMValueRef mag = LLVMBuildAnd(b, w, i32c(f, 0x7F), "");
  LLVMValueRef mant = LLVMBuildAnd(b, w, i32c(f, mmask), "");
  LLVMValueRef field = LLVMBuildLShr(b, mag, i32c(f, fm.mbits), "");
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, w, i32c(f, 0x80), ""), i32c(f, 24), "");
  /* normal: f32 exponent field - 1 + emin + 127, mantissa moved to the top */
  LLVMValueRef nb = LLVMBuildOr(
      b,
      LLVMBuildShl(b, LLVMBuildAdd(b, field, i32c(f, fm.emin + 126), ""), i32c(f, 23), ""),
      LLVMBuildShl(b, mant, i32c(f, 23 - fm.mbits), ""), "");
  LLVMValueRef normal = LLVMBuildBitCast(b, nb, f->t_f32, "");
  /* subnormal (and zero): mant * 2^(emin - m), exact */
  LLVMValueRef sub = LLVMBuildFMul(b, LLVMBuildUIToFP(b, mant, f->t_f32, ""),
                                   LLVMConstReal(f->t_f32, ldexp(1.0, fm.emin - fm.mbits)), "");
  LLVMValueRef is_sub = LLVMBuildICmp(b, LLVMIntEQ, field, i32c(f, 0), "");
  LLVMValueRef v = LLVMBuildSelect(b, is_sub, sub, normal, "");
  LLVMValueRef nan = LLVMConstReal(f->t_f32, NAN);
  if (fm.has_inf) {
    LLVMValueRef top = LLVMBuildICmp(b, LLVMIntEQ, field, i32c(f, fmax), "");
    LLVMValueRef zm = LLVMBuildICmp(b, LLVMIntEQ, mant, i32c(f, 0), "");
    v = LLVMBuildSelect(b, top, LLVMBuildSelect(b, zm, LLVMConstReal(f->t_f32, INFINITY), nan, ""),
                        v, "");
  } else if (!fm.fnuz) {
    v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, mag, i32c(f, 0x7F), ""), nan, v, "");
  }
  LLVMValueRef vb = LLVMBuildOr(b, LLVMBuildBitCast(b, v, f->t_i32, ""), sign, "");
  v = LLVMBuildBitCast(b, vb, f->t_f32, "");
  if (fm.fnuz) /* 0x80 is the one NaN */
    v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, i32c(f, 0x80), ""), nan, v, "");
  return v;
}
