/* simt_abi.h - what a SIMT kernel receives when it runs on the CPU
 * emulator (simt-emu, src/device_emu.c), shared by the SIMT lowering and the
 * emulator. On a GPU the same values come from the hardware (thread / block
 * ids, shared memory, barriers); on simt-emu every thread of a block gets
 * one jit_simt_thread and runs on a fiber (src/device_emu.c).
 *
 * Entry point on simt-emu: void kernel(void **params, jit_simt_thread *t)
 *   params: params[i] points at the value of kernel parameter i (the CUDA
 *           launch convention);
 *   t:      this thread's ids and its block's shared memory; t->barrier(t)
 *           is __syncthreads(): it returns once every thread of the block
 *           has called it (a thread that exits instead is an error the
 *           emulator reports for the launch).
 * Shared memory: a kernel's static shared memory (jit_simt_fn.shared_bytes
 * after lowering) is a global on a GPU; on simt-emu the launcher passes it
 * as the launch's shared size (plus any dynamic shared memory). */
#ifndef KILN_JIT_SIMT_ABI_H
#define KILN_JIT_SIMT_ABI_H

#include <stdint.h>

typedef struct jit_simt_thread {
  uint32_t tid[3];    /* threadIdx */
  uint32_t ntid[3];   /* blockDim */
  uint32_t ctaid[3];  /* blockIdx */
  uint32_t nctaid[3]; /* gridDim */
  void *shared;       /* the block's shared memory (16-byte aligned, zeroed per block) */
  void (*barrier)(struct jit_simt_thread *t);
  void *emu;          /* the emulator's; kernels do not touch it */
} jit_simt_thread;

typedef void (*jit_simt_kernel_fn)(void **params, jit_simt_thread *t);

#endif
