/* libcalls.h - compiler-runtime routines the engine defines for JIT code
 * (libcalls.c). */
#ifndef KILN_JIT_LIBCALLS_H
#define KILN_JIT_LIBCALLS_H

#include <stdint.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>

/* Defines __truncsfbf2 and __truncdfbf2 in jd (before any lookup of them);
 * an error when jd already has them. */
LLVMErrorRef jit_define_libcalls(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd);

/* What __truncsfbf2 computes: the bfloat bits of x, rounded once to
 * nearest even (NaN stays a quiet NaN with its sign, overflow gives inf),
 * on the bits: the interpreter's ir_bf16_from_double, which __truncdfbf2
 * calls, gives the same for every float. */
uint16_t jit_bf16_from_f32(float x);

#endif
