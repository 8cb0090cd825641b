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

#include "../ir/interp.h"
#include "libcalls.h"

/* f32 bits -> bf16 bits, to nearest even; a NaN stays NaN (sign and top
 * payload kept, made quiet); overflow gives inf (the lowering's rule too,
 * jit/elementwise.c: f32_to_bf16) */
uint16_t jit_bf16_from_f32(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  if (isnan(x)) return (uint16_t)((b >> 16) | 0x40);
  return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

static float in_low_bits(uint32_t h) {
  float r;
  memcpy(&r, &h, sizeof r);
  return r;
}

static float truncsfbf2(float x) { return in_low_bits(jit_bf16_from_f32(x)); }
/* f64 -> bf16 in one rounding: the interpreter's (a rare call: the lowering
 * narrows f64 through f32 rounded to odd itself) */
static float truncdfbf2(double x) { return in_low_bits(ir_bf16_from_double(x)); }

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
