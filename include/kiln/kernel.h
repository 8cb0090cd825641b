/* kiln/kernel.h - the ABI of custom kernels (mo.custom, mo.inplace_custom):
 * what a kernel written in C receives from kiln, and the KILN_KERNEL macros
 * that declare one (KILN_KERNEL, KILN_SIMT_KERNEL, KILN_ELEMENTWISE_KERNEL).
 * C99, self-contained: it includes only <stdint.h>, <stddef.h> and
 * <stdbool.h> and names nothing of kiln's internals, so a kernel library
 * compiles on its own (kiln passes this header to clang itself when it
 * compiles a .c library; for .ll / .bc built by hand, include it with
 * -I<kiln>/include).
 *
 * A kernel is a function
 *     int32_t NAME(const kiln_kernel_args *args);
 * declared with KILN_KERNEL(NAME, NINPUTS, NOUTPUTS) (NINPUTS / NOUTPUTS:
 * the operand and result counts it accepts, -1 for any). The macro also
 * emits the marker `const int32_t kiln_abi_NAME[3] = {KILN_KERNEL_ABI,
 * NINPUTS, NOUTPUTS}`: kiln checks the function's LLVM type (i32 (ptr)), the
 * marker's ABI version and the counts against the op before it runs
 * anything, and refuses a symbol without a marker. Return 0 on success; any
 * other value makes the execute fail with an error naming the op.
 *
 * What the kernel gets:
 *   - args->inputs[i], i < args->ninputs: the op's operands, in order, read
 *     only. args->outputs[o], o < args->noutputs: its results, to be written
 *     in full (kiln does not zero them).
 *   - every tensor is dense and row-major: strides[k] (in elements) is the
 *     product of dims[k+1..rank); data never overlaps between tensors.
 *   - args->params: the op's attributes other than `symbol`, by name, of
 *     kind int (int64), float (double), bool or string. Read them with
 *     kiln_param_int / _float / _bool / _string below (a default when absent
 *     or of another kind).
 *   - mo.inplace_custom: outputs[0] is the buffer the kernel updates in
 *     place; on entry it holds a copy of operand 0 (inputs[0] is that
 *     operand, unchanged). The op's result is outputs[0] after the call.
 * kiln links the kernel's code into its own kernel module and inlines it:
 * in a shape-specialized variant, dims are constants LLVM folds into the
 * kernel's loops. Kernels run on one thread (one call per execute) and must
 * not keep state between calls.
 *
 * Worked example (examples/custom_ops/rms_norm.c): RMS normalization over
 * the last axis, y = x / sqrt(mean(x^2) + eps) * gamma, for f32.
 *
 *     #include <math.h>
 *     #include <kiln/kernel.h>
 *
 *     KILN_KERNEL(rms_norm, 2, 1)
 *     int32_t rms_norm(const kiln_kernel_args *args) {
 *       const kiln_kernel_tensor *x = &args->inputs[0], *g = &args->inputs[1];
 *       const kiln_kernel_tensor *y = &args->outputs[0];
 *       if (x->dtype != KILN_KERNEL_F32 || x->rank < 1) return 1;
 *       int64_t n = x->dims[x->rank - 1], rows = kiln_kernel_numel(x) / (n ? n : 1);
 *       float eps = (float)kiln_param_float(args, "epsilon", 1e-6);
 *       const float *xp = x->data, *gp = g->data;
 *       float *yp = y->data;
 *       for (int64_t r = 0; r < rows; r++, xp += n, yp += n) {
 *         float ss = 0;
 *         for (int64_t i = 0; i < n; i++) ss += xp[i] * xp[i];
 *         float s = 1.0f / sqrtf(ss / (float)n + eps);
 *         for (int64_t i = 0; i < n; i++) yp[i] = xp[i] * s * gp[i];
 *       }
 *       return 0;
 *     }
 *
 * and in a graph:
 *     %y = mo.custom(%x, %g) {symbol = "rms_norm", epsilon = 1.0e-6}
 *          : (!mo.tensor<[rows, 64], f32>, !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32>
 * run with `kiln run graph.mlir --kernels rms_norm.c ...`.
 *
 * SIMT kernels (simt-emu, CUDA, HIP): declared with
 *     KILN_SIMT_KERNEL(NAME, NINPUTS, NOUTPUTS)
 * instead (same function type and arguments; the marker carries
 * KILN_KERNEL_ON_SIMT). kiln never runs a KILN_KERNEL on a SIMT device nor a
 * KILN_SIMT_KERNEL on the CPU: it says so when the graph is compiled.
 * kiln compiles the library for each target it needs (C: with clang, for
 * the host / simt-emu, nvptx64-nvidia-cuda or amdgcn-amd-amdhsa; on the GPU
 * targets <math.h> is a small header of kiln's declaring the C99 float and
 * double functions, and other libc headers are not available). A .ll / .bc
 * library serves the target its triple names (none: every target).
 * Launch: every thread of the grid calls the kernel once with the same
 * args (tensor views of device memory); blocks have KILN_SIMT_BLOCK threads
 * (x only); the grid (x only) depends on the op's `simt_grid` attribute:
 *   "elements" (default): ceil(N / KILN_SIMT_BLOCK) blocks, N the element
 *              count of result 0;
 *   "rows":    one block per row of result 0 (N / its last dim);
 * both capped at KILN_SIMT_MAX_GRID blocks, so a kernel walks its work with
 * grid-stride loops (kiln_simt_global_id / _global_size, or block_id /
 * grid_dim for rows). An empty result launches nothing. The helpers below
 * give the thread's place; kiln replaces each call with the target's own
 * code (NVVM special registers and bar.sync, AMDGPU workitem / workgroup
 * ids and s_barrier, the emulator's thread state and fiber switch). On
 * simt-emu the kernel's code is inlined into kiln's kernel, so the helpers
 * must be called from the kernel or from functions it can inline (not
 * recursive ones). Return 0 from every thread; a non-zero return from any
 * thread fails the execute. mo.inplace_custom: the launcher copies operand
 * 0 into outputs[0] before the launch.
 * Example (examples/custom_ops/rms_norm_simt.c): one block per row, the
 * threads stride along the row and sum their squares in shared memory:
 *
 *     KILN_SIMT_KERNEL(rms_norm_simt, 2, 1)
 *     int32_t rms_norm_simt(const kiln_kernel_args *args) {
 *       ... n = last dim, rows = numel / n ...
 *       float *part = kiln_simt_shared();
 *       uint32_t t = kiln_simt_thread_id();
 *       for (int64_t r = kiln_simt_block_id(); r < rows; r += kiln_simt_grid_dim()) {
 *         float ss = 0;
 *         for (int64_t i = t; i < n; i += kiln_simt_block_dim()) ss += x[r*n+i] * x[r*n+i];
 *         part[t] = ss;
 *         kiln_simt_barrier();
 *         for (uint32_t s = kiln_simt_block_dim() / 2; s > 0; s /= 2) {
 *           if (t < s) part[t] += part[t + s];
 *           kiln_simt_barrier();
 *         }
 *         float scale = 1.0f / sqrtf(part[0] / (float)n + eps);
 *         kiln_simt_barrier();   // part is reused by the next row
 *         for (int64_t i = t; i < n; i += kiln_simt_block_dim())
 *           y[r*n+i] = x[r*n+i] * scale * g[i];
 *       }
 *       return 0;
 *     }
 * with `simt_grid = "rows"` on the op; run it with
 * `kiln run graph.mlir --device simt-emu --kernels rms_norm_simt.c ...`.
 *
 * Elementwise kernels: a pure scalar function of one element of each
 * operand, declared with
 *     KILN_ELEMENTWISE_KERNEL(NAME, NINPUTS)
 *     T NAME(T0 a, T1 b, ...);
 * (marker flag KILN_KERNEL_ELEMENTWISE, result count 1). kiln calls it once
 * per element of the result, operands broadcast numpy-style, so it can sit
 * inside a fused chain: an elementwise custom op joins the elementwise ops
 * around it (and a GEMM's epilogue) in one kernel, its code inlined into
 * the loop LLVM vectorizes. It runs on every target (CPU, simt-emu, CUDA,
 * HIP): it uses no thread helpers.
 *   - Types: each parameter's C type is its operand's element type, the
 *     return type the result's: float (f32), double (f64), int8_t / uint8_t
 *     (si8 / ui8), int16_t / uint16_t, int32_t / uint32_t, int64_t /
 *     uint64_t, bool (bool). kiln checks the LLVM type of the function:
 *     integer widths, not signedness (int32_t fits si32 and ui32). f16 and
 *     bf16 are not supported (cast to f32 around the op).
 *   - At most KILN_ELEMENTWISE_MAX_INPUTS operands; the op is mo.custom
 *     (not mo.inplace_custom) with one result whose declared shape is the
 *     broadcast of the operands' shapes (numpy rules; dims compared as
 *     expressions: each operand dim equals the result's or is 1).
 *   - No parameters: an attribute other than `symbol` is refused (pass a
 *     value as an operand, a one-element tensor broadcasts). No state, no
 *     side effects, no errors: the function may be called for the elements
 *     in any order, on several threads, and not at all for an empty result.
 * Example (examples/custom_ops/swish_beta.c): swish with a per-channel
 * beta, y = x * sigmoid(beta * x):
 *
 *     #include <math.h>
 *     #include <kiln/kernel.h>
 *
 *     KILN_ELEMENTWISE_KERNEL(swish_beta, 2)
 *     float swish_beta(float x, float beta) {
 *       return x / (1.0f + expf(-beta * x));
 *     }
 *
 * and in a graph, between builtin ops that fuse with it into one kernel:
 *     %h = mo.add(%x, %b) : !mo.tensor<[rows, 64], f32>
 *     %s = mo.custom(%h, %beta) {symbol = "swish_beta"}
 *          : (!mo.tensor<[rows, 64], f32>, !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32>
 *     %y = mo.mul(%s, %g) : !mo.tensor<[rows, 64], f32> */
#ifndef KILN_KERNEL_H
#define KILN_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h> /* bool for elementwise kernels */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version in every KILN_KERNEL marker; kiln refuses other values. */
#define KILN_KERNEL_ABI 1

/* Element types: the values of kiln_dtype (kiln/common.h). */
enum {
  KILN_KERNEL_BOOL = 0, /* one byte, 0 or 1 */
  KILN_KERNEL_I8 = 1,
  KILN_KERNEL_I16 = 2,
  KILN_KERNEL_I32 = 3,
  KILN_KERNEL_I64 = 4,
  KILN_KERNEL_U8 = 5,
  KILN_KERNEL_U16 = 6,
  KILN_KERNEL_U32 = 7,
  KILN_KERNEL_U64 = 8,
  KILN_KERNEL_F16 = 9,
  KILN_KERNEL_BF16 = 10,
  KILN_KERNEL_F32 = 11,
  KILN_KERNEL_F64 = 12
};

/* Parameter kinds. */
enum {
  KILN_PARAM_INT = 0,
  KILN_PARAM_FLOAT = 1,
  KILN_PARAM_BOOL = 2,
  KILN_PARAM_STRING = 3
};

typedef struct kiln_kernel_tensor {
  void *data;             /* dense row-major elements */
  const int64_t *dims;    /* rank entries */
  const int64_t *strides; /* rank entries, in elements */
  int32_t dtype;          /* KILN_KERNEL_* */
  int32_t rank;
} kiln_kernel_tensor;

typedef struct kiln_kernel_param {
  const char *name; /* the attribute's name */
  int32_t kind;     /* KILN_PARAM_* */
  int32_t reserved;
  int64_t i;        /* int; bool as 0 / 1 */
  double f;         /* float */
  const char *s;    /* string (NUL-terminated) */
} kiln_kernel_param;

typedef struct kiln_kernel_args {
  const kiln_kernel_tensor *inputs;
  const kiln_kernel_tensor *outputs;
  const kiln_kernel_param *params;
  int32_t ninputs, noutputs, nparams;
  int32_t abi; /* KILN_KERNEL_ABI */
} kiln_kernel_args;

/* Declares kernel NAME taking NIN operands and NOUT results (-1: any) and
 * its ABI marker. Put it before the function's definition. */
#define KILN_KERNEL(NAME, NIN, NOUT)                                                  \
  __attribute__((used)) const int32_t kiln_abi_##NAME[3] = {KILN_KERNEL_ABI, (NIN), (NOUT)}; \
  int32_t NAME(const kiln_kernel_args *args);

/* Marker flag: the kernel runs on SIMT devices (KILN_SIMT_KERNEL). */
#define KILN_KERNEL_ON_SIMT 0x100

/* Declares SIMT kernel NAME (see above); the function type is the same. */
#define KILN_SIMT_KERNEL(NAME, NIN, NOUT)                                             \
  __attribute__((used)) const int32_t kiln_abi_##NAME[3] = {                          \
      KILN_KERNEL_ABI | KILN_KERNEL_ON_SIMT, (NIN), (NOUT)};                          \
  int32_t NAME(const kiln_kernel_args *args);

/* Marker flag: an elementwise scalar kernel (KILN_ELEMENTWISE_KERNEL). */
#define KILN_KERNEL_ELEMENTWISE 0x200
#define KILN_ELEMENTWISE_MAX_INPUTS 8

/* Declares elementwise kernel NAME of NIN operands (see above): put it
 * before the function's definition, `T NAME(T0 a, ...)`, whose C types
 * follow the op's dtypes. */
#define KILN_ELEMENTWISE_KERNEL(NAME, NIN)                                            \
  __attribute__((used)) const int32_t kiln_abi_##NAME[3] = {                          \
      KILN_KERNEL_ABI | KILN_KERNEL_ELEMENTWISE, (NIN), 1};

/* ---- SIMT helpers: only in KILN_SIMT_KERNEL code (kiln maps each call to
 * the target; on the CPU they do not exist). All along x. ---- */
#define KILN_SIMT_BLOCK 256          /* threads per block */
#define KILN_SIMT_MAX_GRID 65535     /* blocks per grid, at most */
#define KILN_SIMT_SHARED_BYTES 8192  /* kiln_simt_shared's size */

uint32_t kiln_simt_thread_id(void); /* threadIdx.x: 0 .. block_dim - 1 */
uint32_t kiln_simt_block_dim(void); /* blockDim.x (KILN_SIMT_BLOCK) */
uint32_t kiln_simt_block_id(void);  /* blockIdx.x: 0 .. grid_dim - 1 */
uint32_t kiln_simt_grid_dim(void);  /* gridDim.x */
/* __syncthreads(): returns once every thread of the block has called it;
 * every thread of the block must reach the same barriers. */
void kiln_simt_barrier(void);
/* The block's shared memory: KILN_SIMT_SHARED_BYTES bytes, 16-byte
 * aligned, zeroed when the block starts on simt-emu (unspecified on GPUs). */
void *kiln_simt_shared(void);

/* The thread's index in the grid, and the grid's thread count (the step of
 * a grid-stride loop over elements). */
static inline int64_t kiln_simt_global_id(void) {
  return (int64_t)kiln_simt_block_id() * kiln_simt_block_dim() + kiln_simt_thread_id();
}
static inline int64_t kiln_simt_global_size(void) {
  return (int64_t)kiln_simt_grid_dim() * kiln_simt_block_dim();
}

/* ---- helpers (inlined; constant-fold when kiln inlines the kernel) ---- */

static inline int kiln_kernel_streq_(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

static inline const kiln_kernel_param *kiln_param_find(const kiln_kernel_args *a, const char *name,
                                                       int32_t kind) {
  for (int32_t k = 0; k < a->nparams; k++)
    if (a->params[k].kind == kind && kiln_kernel_streq_(a->params[k].name, name))
      return &a->params[k];
  return NULL;
}

static inline int64_t kiln_param_int(const kiln_kernel_args *a, const char *name, int64_t dflt) {
  const kiln_kernel_param *p = kiln_param_find(a, name, KILN_PARAM_INT);
  return p ? p->i : dflt;
}

/* A float parameter; an int one is converted (1 reads as 1.0). */
static inline double kiln_param_float(const kiln_kernel_args *a, const char *name, double dflt) {
  const kiln_kernel_param *p = kiln_param_find(a, name, KILN_PARAM_FLOAT);
  if (p) return p->f;
  p = kiln_param_find(a, name, KILN_PARAM_INT);
  return p ? (double)p->i : dflt;
}

static inline int kiln_param_bool(const kiln_kernel_args *a, const char *name, int dflt) {
  const kiln_kernel_param *p = kiln_param_find(a, name, KILN_PARAM_BOOL);
  return p ? p->i != 0 : dflt;
}

static inline const char *kiln_param_string(const kiln_kernel_args *a, const char *name,
                                            const char *dflt) {
  const kiln_kernel_param *p = kiln_param_find(a, name, KILN_PARAM_STRING);
  return p ? p->s : dflt;
}

static inline int64_t kiln_kernel_numel(const kiln_kernel_tensor *t) {
  int64_t n = 1;
  for (int32_t k = 0; k < t->rank; k++) n *= t->dims[k];
  return n;
}

#ifdef __cplusplus
}
#endif
#endif
