/* libcalls.c - compiler-runtime routines that JIT code may call and the
 * process need not have. On an x86 host without AVX512-BF16, LLVM promotes
 * bfloat arithmetic that its own folds form (instcombine moves fabs, fneg
 * and compares through the widening casts the lowering writes, so they act
 * on bfloat) to float and rounds the result back through __truncsfbf2,
 * which Debian 12's libgcc (GCC 12) lacks: such kernels failed to link.
 * The engine defines these names in its JITDylib (jit_define_libcalls),
 * ahead of whatever the process has, so every host links the same code.
 *
 * ABI: a bfloat result comes back in the low 16 bits of xmm0, so each
 * routine returns a float whose bit pattern holds the bfloat there (the
 * value is moved, never computed on). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <llvm-c/Orc.h>

#include "libcalls.h"

/* f32 bits -> bf16 bits, to nearest even; a NaN stays NaN (sign and top
 * payload kept, made quiet); overflow gives inf (the lowering's rule too,
 * jit/elementwise.c: f32_to_bf16) */
static uint32_t bf16_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  if (isnan(x)) return (b >> 16) | 0x40;
  return (b + 0x7fff + ((b >> 16) & 1)) >> 16;
}

static float in_low_bits(uint32_t h) {
  float r;
  memcpy(&r, &h, sizeof r);
  return r;
}

uint16_t jit_bf16_from_f32(float x) { return (uint16_t)bf16_bits(x); }

/* f64 -> bf16 in one rounding: to f32 rounding to odd (truncate toward
 * zero, then set the last bit when inexact), which the f32 -> bf16 step
 * rounds as the f64 itself would round */
uint16_t jit_bf16_from_f64(double x) {
  if (isnan(x)) return (uint16_t)bf16_bits((float)x);
  float t = (float)x;
  if (fabs((double)t) > fabs(x)) t = nextafterf(t, 0.0f);
  if ((double)t != x) {
    uint32_t b;
    memcpy(&b, &t, sizeof b);
    b |= 1;
    memcpy(&t, &b, sizeof t);
  }
  return (uint16_t)bf16_bits(t);
}

static float truncsfbf2(float x) { return in_low_bits(jit_bf16_from_f32(x)); }
static float truncdfbf2(double x) { return in_low_bits(jit_bf16_from_f64(x)); }

static const struct {
  const char *name;
  void *fn;
} LIBCALLS[] = {
    {"__truncsfbf2", (void *)truncsfbf2},
    {"__truncdfbf2", (void *)truncdfbf2},
};
enum { NLIBCALLS = sizeof LIBCALLS / sizeof LIBCALLS[0] };

LLVMErrorRef jit_define_libcalls(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd) {
  LLVMOrcCSymbolMapPair pairs[NLIBCALLS];
  for (int i = 0; i < NLIBCALLS; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, LIBCALLS[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)LIBCALLS[i].fn;
    pairs[i].Sym.Flags.GenericFlags =
        LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  /* the unit takes the names; a failed define disposes of the unit */
  return LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, NLIBCALLS));
}
