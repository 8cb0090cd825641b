/* simt.h - the SIMT side of jit/: a kernel is written once against kiln's
 * SIMT intrinsics (thread / block ids, a block barrier, the block's shared
 * memory) and emitted for one of three targets:
 *   nvptx   PTX text for an SM (sm_80 default, sm_90): entries marked as
 *           kernels, launch bounds from the block size;
 *   amdgpu  a relocatable AMDGPU object for a gfx arch (gfx90a default,
 *           gfx942); the runtime links it into a loadable code object;
 *   emu     a host object whose entry follows jit/simt_abi.h, run by the
 *           simt-emu device with the same launch geometry.
 *
 * Kernel parameters, in order (the launch passes params[i] -> value):
 *   one pointer per buffer (the node's operands, then its results),
 *   one i64 per symbol of the graph (its value), then
 *   one pointer to an int32 error word: a thread that hits a data error
 *   (jit_fail_if) stores the JIT_KERR_* code there; the launcher zeroes it
 *   before and reads it after.
 *
 * The lowering helpers of lower.h work on a SIMT kernel too: jit_simt_begin
 * fills a jit_fn whose bufs / sym_vals are the kernel's, and whose fn is an
 * internal body (alwaysinline) returning the i32 status; the per-target
 * entry calls it and stores a nonzero status in the error word. jit/ knows
 * nothing of devices: it emits bytes; src/ loads and launches them. */
#ifndef KILN_JIT_SIMT_H
#define KILN_JIT_SIMT_H

#include <stddef.h>
#include <stdint.h>

#include "lower.h"

typedef enum jit_simt_kind { JIT_SIMT_EMU, JIT_SIMT_NVPTX, JIT_SIMT_AMDGPU } jit_simt_kind;

struct jit_simt_math;

typedef struct jit_simt_target {
  jit_simt_kind kind;
  char arch[16]; /* "sm_80", "gfx90a", "" for emu (the host CPU) */
  /* nvptx / amdgpu: where the device math library comes from (below);
   * borrowed. NULL: a kernel that needs the library fails, saying so. */
  const struct jit_simt_math *math;
} jit_simt_target;

/* The device math library of a GPU target (nvptx: CUDA's libdevice;
 * amdgpu: ROCm's ocml), as the resolver hands it over. */
typedef struct jit_simt_mathlib {
  void *data;       /* the bitcode, malloc'd: jit/ frees it (free()) */
  size_t len;
  char label[1024]; /* where it came from (its path), for messages */
  const char *hint; /* how to provide another one, for messages (static) */
} jit_simt_mathlib;

/* jit/ reads no files and no environment: src/ finds and reads the math
 * library (src/simt_mathlib.c), as it hands over custom kernel bitcode
 * (jit_libs). find(ud, t, needs, lib, err, errlen): t's library into *lib
 * and 0; or -1 with err, a message that starts with `needs` ("the
 * kernel's call to erff needs CUDA's libdevice on sm_80") and says where
 * it looked and how to provide the library. Called only when a kernel
 * calls a function its module does not define; from compiling threads at
 * once: find must be thread-safe. */
typedef struct jit_simt_math {
  void *ud;
  int (*find)(void *ud, const jit_simt_target *t, const char *needs, jit_simt_mathlib *lib,
              char *err, size_t errlen);
} jit_simt_math;

/* "sm_80", "sm_90", "gfx90a", "gfx942", "simt-emu" (also "nvptx" = sm_80,
 * "amdgpu" = gfx90a) into t's kind and arch (t->math is left as it is).
 * 0, or -1 with err naming the accepted ones. */
int jit_simt_target_parse(const char *name, jit_simt_target *t, char *err, size_t errlen);

/* A SIMT kernel under construction: the lower.h state plus the target's. */
typedef struct jit_simt_fn {
  jit_fn f;
  jit_simt_target target;
  LLVMValueRef entry;   /* the kernel entry (exported) */
  LLVMValueRef thread;  /* emu: the jit_simt_thread * param of the body; else NULL */
  LLVMValueRef shared;  /* generic ptr to the block's static shared memory, once asked */
  uint64_t shared_bytes;
  unsigned max_threads; /* launch bound: threads per block */
} jit_simt_fn;

/* A module for target t (triple and data layout set); NULL with err. */
LLVMModuleRef jit_simt_module_new(LLVMContextRef ctx, const jit_simt_target *t, const char *name,
                                  char *err, size_t errlen);

/* Start kernel `name` for node n of g (buffers: n's operands then results;
 * g's symbols by value). max_threads: the block size the kernel will be
 * launched with at most (launch bounds). Errors go to err (sf->f.failed). */
void jit_simt_begin(jit_simt_fn *sf, const jit_simt_target *t, LLVMContextRef ctx,
                    LLVMModuleRef mod, const ir_graph *g, const ir_node *n, const char *name,
                    unsigned max_threads, char *err, size_t errlen);
/* Close the body (`ret i32 0` at the current position) and build the entry. */
void jit_simt_finish(jit_simt_fn *sf);
void jit_simt_dispose(jit_simt_fn *sf);

typedef enum jit_simt_sreg {
  JIT_SIMT_TID,    /* threadIdx */
  JIT_SIMT_NTID,   /* blockDim */
  JIT_SIMT_CTAID,  /* blockIdx */
  JIT_SIMT_NCTAID, /* gridDim */
} jit_simt_sreg;

/* The i32 value of a special register along dim 0 (x), 1 (y) or 2 (z). */
LLVMValueRef jit_simt_sreg_get(jit_simt_fn *sf, jit_simt_sreg r, int dim);
/* __syncthreads(): every thread of the block reaches it before any goes on. */
void jit_simt_barrier(jit_simt_fn *sf);
/* A generic pointer to the block's static shared memory of `bytes` bytes
 * (16-byte aligned). One region per kernel: the first call fixes its size,
 * later calls must ask for at most that many bytes. */
LLVMValueRef jit_simt_shared(jit_simt_fn *sf, uint64_t bytes);

/* Grid-stride loop over [0, n) (n an i64):
 *   for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
 * as jit_simt_grid_loop_begin / _end around the body (like jit_loop). */
typedef struct jit_simt_loop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef iv, step;
} jit_simt_loop;
LLVMValueRef jit_simt_grid_loop_begin(jit_simt_fn *sf, jit_simt_loop *l, LLVMValueRef n);
void jit_simt_grid_loop_end(jit_simt_fn *sf, jit_simt_loop *l);
/* jit_each_element (lower.h) on SIMT: elem for every flat index of result
 * 0, in a grid-stride loop. 0, or -1 with f->err. */
int jit_simt_each_element(jit_simt_fn *sf, jit_elem_fn elem, void *ud);

/* ---- graph ops (simt_lower.c, simt_rows.c, simt_fused.c) ----
 * Every SIMT kernel of a node runs with JIT_SIMT_BLOCK threads per block
 * (the launch bound to give jit_simt_begin). */
#define JIT_SIMT_BLOCK 256
#define JIT_SIMT_MAX_GRID 65535 /* grid-stride kernels cap their grid here */

/* Lower sf's node (begun with jit_simt_begin, block JIT_SIMT_BLOCK); 0, or
 * -1 with the error in sf->f.err: an op class with no SIMT lowering says
 * "mo.X has no SIMT lowering", a mo.fused body of a form the lowering does
 * not take names the form and the op. */
int jit_simt_lower_node(jit_simt_fn *sf);

/* Whether jit_simt_lower_node takes node n (verified, types inferred): its
 * op class has a SIMT lowering, and a mo.fused body is one the lowering
 * takes (elementwise members over one shape, or one matmul whose result
 * only elementwise members of its shape and dtype use). For the runtime to
 * decide what to fuse for a device. jit_simt_check_node: the same with the
 * reason in err (-1) or 0. */
bool jit_simt_can_lower(const ir_node *n);
int jit_simt_check_node(const ir_node *n, char *err, size_t errlen);

/* ---- custom kernels (custom.c) ----
 * mo.custom / mo.inplace_custom as a SIMT kernel: sf->f.libs must resolve
 * the node's kiln.library hash to the library built for sf's target (the
 * host's bitcode for simt-emu). The library's LLVM triple must fit the
 * target (no triple: any). Every thread builds the kiln/kernel.h arguments
 * (views of the kernel's buffers, the parameters) and calls the library's
 * `symbol`, which must carry a KILN_SIMT_KERNEL marker; a non-zero return
 * stores JIT_KERR_CUSTOM in the error word. mo.inplace_custom does not copy
 * operand 0: the launcher copies it into result 0 before the launch.
 * jit_simt_custom_finish, after jit_simt_finish: inline the library into
 * the kernel and replace the kiln_simt_* helper calls (kiln/kernel.h) with
 * the target's code (jit_simt_sreg_get, jit_simt_barrier, jit_simt_shared
 * of KILN_SIMT_SHARED_BYTES). 0, or -1 with sf->f.err. */
int jit_simt_lower_custom(jit_simt_fn *sf);
int jit_simt_custom_finish(jit_simt_fn *sf);
#define JIT_SIMT_CUSTOM_SHARED 8192 /* KILN_SIMT_SHARED_BYTES */

typedef struct jit_simt_dims {
  uint32_t grid[3], block[3];
  uint32_t shared_bytes; /* the kernel's static shared memory (simt-emu allocates it) */
} jit_simt_dims;

/* The launch of node n's kernel under the graph's symbol values syms. A
 * grid with a zero extent means there is nothing to do (skip the launch).
 * 0, or -1 with err. */
int jit_simt_geometry(const ir_node *n, const int64_t *syms, jit_simt_dims *out, char *err,
                      size_t errlen);

/* Device math (simt_math.c): before optimizing a GPU module, route its
 * transcendental intrinsics and libm calls to what the target has (nvptx:
 * CUDA's libdevice; amdgpu: ROCm's ocml, with the oclc constants it reads
 * defined for the arch; asked of t->math and linked in when needed,
 * internalized); after, refuse calls to functions, or reads of globals, the
 * module does not define. 0, or -1 with err naming the function or the
 * missing library. Called by jit_simt_optimize. */
int jit_simt_legalize_math(LLVMModuleRef mod, const jit_simt_target *t, char *err, size_t errlen);
int jit_simt_check_externals(LLVMModuleRef mod, const jit_simt_target *t, char *err,
                             size_t errlen);

/* ---- internal to the SIMT lowering (simt_lower.c, simt_rows.c,
 * simt_fused.c) ---- */

/* if (cond) { ... } around the builder: _begin positions in the body,
 * _end joins. */
typedef struct jit_simt_if {
  LLVMBasicBlockRef join;
} jit_simt_if;
void jit_simt_if_begin(jit_fn *f, jit_simt_if *ib, LLVMValueRef cond);
/* The serial launch shape's kernel: body(f), the node's whole computation
 * as host code would write it, run by the first thread of the grid (a
 * grid loop of one iteration). body's return. */
int jit_simt_serial(jit_simt_fn *sf, int (*body)(jit_fn *f));
void jit_simt_if_end(jit_fn *f, jit_simt_if *ib);
/* A special register as i64. */
LLVMValueRef jit_simt_sreg64(jit_simt_fn *sf, jit_simt_sreg r, int dim);
/* Axis a of a rank-`rank` tensor, negative from the end; false if out of range. */
bool jit_simt_norm_axis(int64_t a, int rank, int *out);
/* Coordinates coord[rank] of linear index i over the shape dims (row-major). */
void jit_simt_unravel(jit_fn *f, LLVMValueRef i, const LLVMValueRef *dims, int rank,
                      LLVMValueRef *coord);
/* Linear index into a dense buffer of type t read broadcast (numpy rules,
 * right-aligned) at coordinates coord of a result of type ot, rank r. */
LLVMValueRef jit_simt_bcast_index(jit_fn *f, const ir_type *t, const ir_type *ot, int r,
                                  const LLVMValueRef *coord);

/* Rows (simt_rows.c): threads per row for a row of len elements (the
 * geometry's and the kernel's), and the row ops' lowerings. */
int64_t jit_simt_row_threads(int64_t len);
int jit_simt_lower_reduce(jit_simt_fn *sf);
int jit_simt_lower_softmax(jit_simt_fn *sf);
int jit_simt_lower_layer_norm(jit_simt_fn *sf);
/* Lines (scan.c): mo.cumsum, one thread per line along the axis. */
int jit_simt_lower_scan(jit_simt_fn *sf);
/* Lines (sort.c): top_k, bottom_k, argsort, one thread per line. */
int jit_simt_lower_sort(jit_simt_fn *sf);
/* Elements (band.c): mo.band_part. */
int jit_simt_lower_band_part(jit_simt_fn *sf);
/* Indexing (index.c): gather_nd, gather_elements, tile and range over the
 * result's elements; scatter* / scatter_nd* in one thread. */
int jit_simt_lower_gather_index(jit_simt_fn *sf);
int jit_simt_lower_scatter(jit_simt_fn *sf);
int jit_simt_lower_tile(jit_simt_fn *sf);
int jit_simt_lower_range(jit_simt_fn *sf);
/* Elements (pad.c, pool.c, conv.c): mo.pad; mo.max_pool2d / mo.avg_pool2d
 * (a window per thread); mo.conv2d (direct: a dot product per thread). */
int jit_simt_lower_pad(jit_simt_fn *sf);
int jit_simt_lower_pool(jit_simt_fn *sf);
int jit_simt_lower_resize(jit_simt_fn *sf);
int jit_simt_lower_conv(jit_simt_fn *sf);
/* Elements (fft.c): mo.irfft, one result element per thread. */
int jit_simt_lower_fft(jit_simt_fn *sf);
int jit_simt_lower_conv_t(jit_simt_fn *sf); /* conv_t.c: a gather per thread */
int jit_simt_lower_conv3d(jit_simt_fn *sf); /* conv3d.c: a dot product per thread */
/* Elements (simt_quant.c): mo.dequantize, a value decoded from its block per
 * thread; mo.qmatmul, a result element per thread (its lhs blocks quantized
 * and dotted with the weight row's blocks as ir/qblock.h says). */
int jit_simt_lower_dequantize(jit_simt_fn *sf);
int jit_simt_lower_qmatmul(jit_simt_fn *sf);
/* matmul_integer.c: mo.matmul.integer, an si32 dot product per thread. */
int jit_simt_lower_matmul_integer(jit_simt_fn *sf);
/* Elements (fold.c): mo.fold, a gather of the taps per thread. */
int jit_simt_lower_fold(jit_simt_fn *sf);
/* Elements (roi_align.c): mo.roi_align, a region's sampling grid per thread. */
int jit_simt_lower_roi_align(jit_simt_fn *sf);
/* Elements (random.c): mo.random.uniform / normal, one hash per element. */
int jit_simt_lower_random(jit_simt_fn *sf);
/* Elements (print.c): mo.print copies its operand, byte by byte, and does
 * not print on a device. */
int jit_simt_lower_print(jit_simt_fn *sf);
/* Serial (nonzero.c): mo.nonzero in the first thread, which stores the count. */
int jit_simt_lower_nonzero(jit_simt_fn *sf);
/* Serial (nms.c): mo.non_maximum_suppression in the first thread. */
int jit_simt_lower_nms(jit_simt_fn *sf);
/* Serial (masked.c): mo.masked_scatter, in element order in one thread.
 * Elements (masked.c): mo.shape_to_tensor, one dim per thread. */
int jit_simt_lower_masked_scatter(jit_simt_fn *sf);
int jit_simt_lower_shape_to_tensor(jit_simt_fn *sf);
/* Elements (slice_data.c): mo.slice_tensor with data bounds. */
int jit_simt_lower_slice_data(jit_simt_fn *sf);
/* Elements (repeat.c): mo.repeat_interleave, one result element per thread. */
int jit_simt_lower_repeat(jit_simt_fn *sf);

/* Tiles (simt_lower.c): matmul node mm (sf's node or a fused body's) with A
 * and B in buffers a and b and the product in result 0; epi, when not
 * NULL, is called at each output element with the product (in mm's dtype)
 * and its coordinates over mm's result (rank of it), the builder inside
 * the store's guard, and returns the value to store (result 0's dtype). */
typedef LLVMValueRef (*jit_simt_epilogue_fn)(jit_simt_fn *sf, void *ud, LLVMValueRef v,
                                             const LLVMValueRef *coord);
int jit_simt_lower_matmul(jit_simt_fn *sf, const ir_node *mm, int a, int b,
                          jit_simt_epilogue_fn epi, void *ud);
/* The value of elementwise node n (not a custom one) on loaded operands v. */
LLVMValueRef jit_simt_ew_value(jit_fn *f, const ir_node *n, LLVMValueRef *v);

/* mo.fused (simt_fused.c): the body as one kernel; the check behind
 * jit_simt_check_node for it. */
int jit_simt_lower_fused(jit_simt_fn *sf);
int jit_simt_check_fused(const ir_node *n, char *err, size_t errlen);

/* Verify and optimize mod (O3 for the target); 0 or -1 with err. */
int jit_simt_optimize(LLVMModuleRef mod, const jit_simt_target *t, char *err, size_t errlen);

/* ---- whole graphs (simt_graph.c) ----
 * Every kernel node of verified graph g as one SIMT kernel of one module for
 * t, named by jit_simt_kernel_name. Each kernel is lowered from the node's
 * canonical kernel text, so its symbol parameters are the kernel's own
 * (ir_kernel_text's d0, d1, ...). syms NULL: generic kernels; else bind:
 * NULL binds every symbol (static kernels, no symbol parameters), or binds
 * the symbols s with bind[s]. only_node >= 0: that node's kernel alone.
 * llvm_text: *out is the optimized LLVM IR (text) instead of the target's
 * code (jit_simt_emit). A GPU kernel that calls math functions links the
 * library t->math gives. 0, or -1 with err naming the node. */
int jit_simt_compile_graph(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                           const bool *bind, int only_node, bool llvm_text, void **out,
                           size_t *len, char *err, size_t errlen);
/* The same with custom kernels: libs resolves each custom node's
 * kiln.library to the library built for t (NULL: a custom node fails with a
 * message). */
int jit_simt_compile_graph_libs(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                                const bool *bind, int only_node, bool llvm_text,
                                const struct jit_libs *libs, void **out, size_t *len, char *err,
                                size_t errlen);
/* Node `node`'s kernel alone, named fn_name, emitted for t (the runtime's
 * path: a specialized kernel gets a name of its own, since simt-emu loads
 * every module into one symbol namespace). As jit_simt_compile_graph_libs
 * otherwise. */
int jit_simt_compile_node(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                          const bool *bind, int node, const struct jit_libs *libs,
                          const char *fn_name, void **out, size_t *len, char *err,
                          size_t errlen);
/* Node `node` of g, a mo.mutable.store.slice, as the kernel fn_name for t
 * (simt_buffer.c): lowered from g itself, so its symbol parameters are all
 * of g's symbols in order; its buffers are the node's operands and result.
 * A slice outside the buffer sets JIT_KERR_SLICE. jit_simt_geometry gives
 * its launch. 0, or -1 with err. */
int jit_simt_compile_store_slice(const ir_graph *g, const jit_simt_target *t, int node,
                                 const char *fn_name, void **out, size_t *len, char *err,
                                 size_t errlen);
/* The same kernel lowered into mod (jit_simt_compile_graph puts it beside
 * a graph's other kernels). 0, or -1 with err. */
int jit_simt_store_slice_into(LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g,
                              int node, const jit_simt_target *t, const char *fn_name, char *err,
                              size_t errlen);
/* "kiln_<node>_<op>" (dots as underscores). */
void jit_simt_kernel_name(const ir_graph *g, int node, char *out, size_t cap);

/* Optimize (O3 for the target) and emit mod: PTX text (NUL-terminated; *len
 * counts the NUL), an AMDGPU relocatable object, or a host object. *out is
 * malloc'd (caller frees). 0, or -1 with err. The module is left optimized. */
int jit_simt_emit(LLVMModuleRef mod, const jit_simt_target *t, void **out, size_t *len, char *err,
                  size_t errlen);

#endif
