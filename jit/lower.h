/* lower.h - internal to jit/: the state and helpers for emitting one kernel
 * function with the LLVM-C builder, and the per-class lowering entry points.
 *
 * A kernel is `i32 @name(ptr %buffers, ptr %syms, i64 %part, i64 %nparts)`. Helpers here read dims
 * from %syms (jit_dim), index buffers (jit_in / jit_out), build counted loops
 * and load / store elements. Bool is i8 in memory (0 / 1) and i1 in
 * registers: jit_load returns i1 for IR_DT_BOOL and jit_store takes i1.
 * A lowering emits its code at the builder's position and leaves the builder
 * in a block that continues to the success return (the caller emits
 * `ret i32 0`). Data errors branch to a shared block that returns the code
 * (jit_fail_if). */
#ifndef KILN_JIT_LOWER_H
#define KILN_JIT_LOWER_H

#include <llvm-c/Core.h>
#include <stdbool.h>

#include "../ir/ir.h"
#include "jit.h"

typedef struct jit_fn {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMValueRef buffers; /* param 0: ptr to an array of ptr */
  LLVMValueRef syms;    /* param 1: ptr to i64 symbol values */
  const ir_graph *g;
  const ir_node *node;
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_ptr, t_f16, t_bf16, t_f32, t_f64;
  LLVMBasicBlockRef fail_bb; /* created on first jit_fail_if: returns the phi'd code */
  LLVMValueRef fail_code;    /* phi in fail_bb */
  char *err;                 /* where lowering errors go */
  size_t errlen;
  /* Set by jit_fn_begin, freed by jit_fn_dispose: the kernel is an exported wrapper that loads the buffer pointers and
   * calls `fn`, an internal alwaysinline function taking them as noalias
   * params (inlining turns them into alias scopes, so loops vectorize without
   * run-time alias checks). Everything a lowering emits goes into `fn`. */
  LLVMValueRef kernel;       /* the exported i32(ptr, ptr) wrapper */
  int nbufs;                 /* node->nin + node->nout */
  LLVMValueRef *bufs;        /* params of fn: bufs[i] is buffer i (inputs, then results) */
  int nsyms;
  LLVMValueRef *sym_vals;    /* i64 syms[k], loaded once in fn's entry block */
  bool failed;               /* a helper hit an error (message in err) */
  /* Work splitting (kernel ABI part / nparts, jit.h): params of fn. A
   * lowering that splits calls jit_split_range on its outermost parallel
   * loop; one that does not is run whole in part 0 by the wrapper. */
  LLVMValueRef part, nparts; /* i64 */
  bool split;                /* jit_split_range was called */
  LLVMTypeRef body_type;     /* type of fn */
  /* Where mo.custom finds its kernel library's bitcode
   * (the engine's resolver, jit.h; set by the engine after jit_fn_begin, NULL
   * when there is none). */
  const struct jit_libs *libs;
  /* The prebuilt GEMM (template.h): the prefix of the prebuilt
   * entries the engine defines ("kiln_pre_v4_"), NULL when it has none. */
  const char *prebuilt;
  /* The prebuilt direct conv (template.h): the prefix of its entry
   * ("kiln_pre_v4_") for the QUICK tier's kernels, NULL when the engine has
   * none or the kernel is FULL (which inlines the template). */
  const char *prebuilt_conv;
  /* The prebuilt f32 softmax / layer_norm rows (template.h): the prefix
   * of their entries for kernels of both tiers, NULL when the engine has
   * none (norm.c then links kernels-templates/rows.c). */
  const char *prebuilt_rows;
  /* The half GEMM's generic entries whatever the target has
   * (jit_engine_force_generic_half). */
  bool generic_half;
  /* The best 8-bit GEMM kernel the lowering may pick (0: the best the
   * target has; jit_engine_cap_int8_gemm). */
  jit_mmi_isa int8_cap;
  /* The lazily read template (declarations only) that jit_template_extern
   * last took an entry's type from, and its jit_template_id; read once per
   * kernel instead of once per entry (~0.33 ms each); disposed by
   * jit_fn_dispose. */
  LLVMModuleRef tmpl_decls;
  int tmpl_decls_id;
} jit_fn;

/* Start a kernel function `name` for node n of g in module mod (sets up the
 * builder at the entry block). jit_fn_finish emits `ret i32 0` at the current
 * position. */
void jit_fn_begin(jit_fn *f, LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g,
                  const ir_node *n, const char *name, char *err, size_t errlen);
void jit_fn_finish(jit_fn *f);
void jit_fn_dispose(jit_fn *f); /* the builder only; the function stays in mod */

/* Types and constants */
LLVMTypeRef jit_type(jit_fn *f, ir_dtype t);     /* register type: i1 for bool, i8..i64, half, bfloat, float, double */
LLVMTypeRef jit_mem_type(jit_fn *f, ir_dtype t); /* memory type: i8 for bool, else jit_type */
LLVMValueRef jit_i64(jit_fn *f, int64_t v);
LLVMValueRef jit_fconst(jit_fn *f, ir_dtype t, double v);

/* Dims: the i64 value of a dim expression (reads %syms, folds constants;
 * floordiv / ceildiv / mod with floor semantics). */
LLVMValueRef jit_dim(jit_fn *f, const ir_dim *d);
/* All dims of a type into out[rank]. */
void jit_shape(jit_fn *f, const ir_type *t, LLVMValueRef *out);
/* Product of dims [from, to) of a type (1 when empty). */
LLVMValueRef jit_numel_range(jit_fn *f, const ir_type *t, int from, int to);

/* Buffers: operand i, result i (as ptr). */
LLVMValueRef jit_in(jit_fn *f, int i);
LLVMValueRef jit_out(jit_fn *f, int i);

/* Elements: base[idx] with idx an i64 element index. */
LLVMValueRef jit_load(jit_fn *f, ir_dtype t, LLVMValueRef base, LLVMValueRef idx);
void jit_store(jit_fn *f, ir_dtype t, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v);

/* for (iv = lo; iv < hi; iv++) { body } as:
 *   jit_loop L; LLVMValueRef i = jit_loop_begin(f, &L, lo, hi, "i");
 *   ... body at the builder ...
 *   jit_loop_end(f, &L);   // builder continues after the loop
 * Loops nest freely; values defined before the loop are usable inside. */
typedef struct jit_loop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef iv, iv_next_phi_in;
} jit_loop;
LLVMValueRef jit_loop_begin(jit_fn *f, jit_loop *l, LLVMValueRef lo, LLVMValueRef hi,
                            const char *name);
void jit_loop_end(jit_fn *f, jit_loop *l);
/* jit_loop_end for a loop LLVM must not unroll (a body that is already a
 * whole run of work, such as one memcpy: unrolled, it is only more code). */
void jit_loop_end_rolled(jit_fn *f, jit_loop *l);
/* jit_loop_end for a loop whose vectorized body LLVM should run `count`
 * vectors of at a time (llvm.loop.interleave.count): a long dependent chain
 * per element (erf, exp) then overlaps across independent vectors. */
void jit_loop_end_interleaved(jit_fn *f, jit_loop *l, int count);

/* This call's share [*lo, *hi) of an outer loop of n iterations (i64):
 * part `part` of `nparts` near-equal ranges. Call it once per kernel, on the
 * outermost loop whose iterations are independent (each writes its own
 * outputs). Marks the kernel as split (see jit_fn.split). */
void jit_split_range(jit_fn *f, LLVMValueRef n, LLVMValueRef *lo, LLVMValueRef *hi);

/* The loop of an op computed one result element at a time (fold, roi_align,
 * random, conv2d_transpose, conv3d): elem(f, ud, e) for every flat index e
 * of result 0 in this call's share (jit_split_range); 0, or -1 with f->err.
 * jit_simt_each_element (simt.h) is its SIMT twin, over a grid. */
typedef void (*jit_elem_fn)(jit_fn *f, void *ud, LLVMValueRef e);
int jit_each_element(jit_fn *f, jit_elem_fn elem, void *ud);
/* This call's share of an [outer, inner] loop pair (reduce.c; used by the
 * reductions and norm.c): the outer loop is split when it has at least as
 * many iterations as the inner one or as there are parts, else the inner
 * one; only outer when inner is the constant 1. */
void jit_split_outer_inner(jit_fn *f, LLVMValueRef outer, LLVMValueRef inner, LLVMValueRef *olo,
                           LLVMValueRef *ohi, LLVMValueRef *ilo, LLVMValueRef *ihi);

/* i64 index arithmetic that cannot wrap (nsw): sizes and offsets. */
LLVMValueRef jit_mul(jit_fn *f, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef jit_add(jit_fn *f, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef jit_sub(jit_fn *f, LLVMValueRef a, LLVMValueRef b);

/* Shorthands for scalar float code written op by op (resize.c, roi_align.c):
 * a double constant, the arithmetic, a compare and a select. */
static inline LLVMValueRef jit_dc(jit_fn *f, double v) { return LLVMConstReal(f->t_f64, v); }
static inline LLVMValueRef jit_fadd(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(f->b, a, b, "");
}
static inline LLVMValueRef jit_fsub(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(f->b, a, b, "");
}
static inline LLVMValueRef jit_fmul(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(f->b, a, b, "");
}
static inline LLVMValueRef jit_fdiv(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFDiv(f->b, a, b, "");
}
static inline LLVMValueRef jit_fcmp(jit_fn *f, LLVMRealPredicate p, LLVMValueRef a,
                                    LLVMValueRef b) {
  return LLVMBuildFCmp(f->b, p, a, b, "");
}
static inline LLVMValueRef jit_sel(jit_fn *f, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, c, a, b, "");
}

/* A stack slot of type t at the top of the function's entry block (so O3
 * promotes it to SSA), for accumulators carried across loops. */
LLVMValueRef jit_alloca(jit_fn *f, LLVMTypeRef t, const char *name);

/* The declaration in f->mod of the C library's function `name` of type ty
 * (malloc, free: kernels that need a workspace), added on first use. */
LLVMValueRef jit_libc_fn(jit_fn *f, const char *name, LLVMTypeRef ty);

/* If cond (i1) is true, return `code` from the kernel. */
void jit_fail_if(jit_fn *f, LLVMValueRef cond, int code);

/* Call an LLVM intrinsic by name ("llvm.exp") overloaded on the value type. */
LLVMValueRef jit_intrinsic(jit_fn *f, const char *name, LLVMTypeRef overload, LLVMValueRef *args,
                           int nargs);
/* Like jit_intrinsic for intrinsics overloaded on several types
 * ("llvm.fptosi.sat" on {result, operand}); noverloads may be 0. */
LLVMValueRef jit_intrinsic_n(jit_fn *f, const char *name, LLVMTypeRef *overloads, int noverloads,
                             LLVMValueRef *args, int nargs);
/* Record a lowering error in f->err (and f->failed); returns -1 so a lowering
 * can `return jit_fn_error(f, "...", ...)`. */
int jit_fn_error(jit_fn *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* exp of a double without a call (vectorizable), within an ulp or two of
 * libm's exp; for reductions that compute in double (softmax). */
LLVMValueRef jit_exp_f64(jit_fn *f, LLVMValueRef x);
/* exp of a float in float arithmetic without a call (vectorizable), at most
 * 1 ulp from the correctly rounded result; NaN, infinities, overflow and
 * subnormal results handled. For f32 elementwise ops on host targets. */
LLVMValueRef jit_exp_f32(jit_fn *f, LLVMValueRef x);
/* exp of a float x <= 0, -inf or NaN (softmax's x - max) in fewer
 * instructions: as accurate as jit_exp_f32 down to 2^-126, +0 below
 * (x < -87.34); x > 0 is outside its contract. */
LLVMValueRef jit_exp_f32_nonpos(jit_fn *f, LLVMValueRef x);

/* Call a libm function ("erff", "tanh"...) taking and returning `t`. */
LLVMValueRef jit_libm(jit_fn *f, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs);

/* Scalar semantics shared by the lowerings (elementwise.c): the value of an
 * elementwise op on already-loaded operands of dtype `in` (register types). */
LLVMValueRef jit_scalar_unary(jit_fn *f, ir_op op, ir_dtype in, LLVMValueRef x);
LLVMValueRef jit_scalar_binary(jit_fn *f, ir_op op, ir_dtype in, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef jit_scalar_cast(jit_fn *f, ir_dtype from, ir_dtype to, LLVMValueRef x);
/* float8 codes (i8) from f32 and back (float8.c; the rule: ir/dtype.h) */
LLVMValueRef jit_f32_to_float8(jit_fn *f, ir_dtype to, LLVMValueRef x);
LLVMValueRef jit_float8_to_f32(jit_fn *f, ir_dtype from, LLVMValueRef c);

/* ---- fusion ---- */
/* A group of elementwise nodes (classes unary*, binary*, compare, logical,
 * where, cast, broadcast_to; a mo.custom marked kiln.elementwise) emitted as one loop nest over `shape`, which
 * is every member's result shape (elementwise.c). Member k's operand j comes
 * from src[JIT_EW_MAX_IN * k + j]: a member index m >= 0 (its result, in registers), or
 * -1 - b for input buffer b (in_ptrs[b], of type in_types[b], broadcast to
 * shape). Result o of the group is member out_node[o]'s result, stored to
 * out_ptrs[o] (a dense buffer of `shape`). The outer loop is split with
 * jit_split_range. 0, or -1 with f->err. */
typedef struct jit_ew_group {
  int nnodes;
  const ir_node *const *nodes; /* topological order */
  const int *src;              /* JIT_EW_MAX_IN * nnodes entries */
  int nin;
  const ir_type *const *in_types;
  const LLVMValueRef *in_ptrs;
  /* NULL, or per input NULL (a dense buffer) or the element strides of
   * each of its in_types' axes (a slice read in place: in_ptrs at its
   * first element) */
  const LLVMValueRef *const *in_strides;
  int nout;
  const int *out_node;
  const LLVMValueRef *out_ptrs;
  const ir_type *shape;
} jit_ew_group;
int jit_emit_ew_group(jit_fn *f, const jit_ew_group *g);
/* The members of g at one element, at the builder (no loop): idx[b] is
 * input buffer b's element index (NULL for a buffer no member reads), oidx
 * the results' index. Loads each buffer once, computes the members in
 * order, stores the group's results. */
void jit_emit_ew_element(jit_fn *f, const jit_ew_group *g, LLVMValueRef *idx, LLVMValueRef oidx);
/* Operands of a group member, at most (ir.h). */
#define JIT_EW_MAX_IN IR_EW_MAX_IN
/* The value of elementwise node n on its loaded operands v (register types). */
LLVMValueRef jit_ew_compute(jit_fn *f, const ir_node *n, LLVMValueRef *v);
/* End the loop over the elements of members nodes[0..n): 4 vectors at a
 * time (jit_loop_end_interleaved) where one of them is a long dependent
 * chain of float math inlined per element (exp, erf, tanh, gelu, sigmoid,
 * silu of f32 on the host: ~20 dependent FMAs, which one vector at a time
 * leaves latency-bound; measured on this AVX2 host, gelu over [64, 3072]
 * ran 430 -> 270 us), else as jit_loop_end (LLVM's choice). */
void jit_ew_loop_end(jit_fn *f, jit_loop *l, const ir_node *const *nodes, int n);
/* Element strides st[ot->rank] of a dense buffer of type t read broadcast to
 * shape ot (numpy rules, right-aligned): 0 on axes t lacks or has as 1 (a
 * select at run time when t's dim is another expression than ot's). */
void jit_bcast_strides(jit_fn *f, const ir_type *t, const ir_type *ot, LLVMValueRef *st);
/* The same for input b of group g, read through its own strides where
 * g->in_strides gives them. */
void jit_group_in_strides(jit_fn *f, const jit_ew_group *g, int b, const ir_type *ot,
                          LLVMValueRef *st);

/* A GEMM epilogue (jit/fused.c for matmul.c): fn is
 * `void (ptr ctx, i64 i0, i64 j0, i64 m, i64 n, ptr C, i64 ldc)`, called by
 * the GEMM template for every finished block of C (rows i0.., columns j0..
 * of the batch's matrix, C pointing at element (i0, j0)); ctx is passed
 * through. Before each batch's GEMM the lowering stores, for every buffer b
 * of the epilogue, its element offset for that batch, sum over the batch
 * axes k of iv_k * bstride[b][k], to boff_slot[b] (an i64 slot). */
typedef struct jit_gemm_epi {
  LLVMValueRef fn, ctx;
  int nbufs;
  LLVMValueRef (*bstride)[IR_MAX_RANK]; /* over the matmul result's axes */
  const LLVMValueRef *boff_slot;
} jit_gemm_epi;
/* Operands a GEMM reads in place from larger buffers (slices, fused.c):
 * for operand k (0: A, 1: B) with on[k], its buffer pointer is at element
 * (0, ..., 0) and strides[k][a] is the element stride of the operand's own
 * axis a (its last axis has stride 1: each row is contiguous). */
typedef struct jit_matmul_in_place {
  bool on[2];
  LLVMValueRef strides[2][IR_MAX_RANK];
} jit_matmul_in_place;
/* mo.matmul node n on buffers A, B -> C (matmul.c), with an epilogue when
 * epi is not NULL (f32 / f64 only), operands read in place where ip says
 * so (NULL: both dense). 0, or -1 with f->err. */
int jit_emit_matmul(jit_fn *f, const ir_node *n, LLVMValueRef A, LLVMValueRef B, LLVMValueRef C,
                    const jit_gemm_epi *epi, const jit_matmul_in_place *ip);
/* The same for a mo.matmul with kiln.wide_result (half operands, an f32
 * result: matmul_half.c); jit_emit_matmul hands such nodes to it. */
int jit_emit_matmul_half(jit_fn *f, const ir_node *n, LLVMValueRef A, LLVMValueRef B,
                         LLVMValueRef C, const jit_gemm_epi *epi);
/* A matmul with a 1-D operand (ops.def) seen as the matmul of its matrix
 * view (matmul.c): a [K] is [1, K], b [K] is [K, 1], and the result gets
 * the dropped dims back; the data are the same bytes, only the types
 * change. view.node is n with such types (dims in arena a, copies of n's
 * values); false on out-of-memory. Used by the host and SIMT lowerings. */
typedef struct jit_matmul_1d {
  ir_node node;
  ir_value va, vb, vc;
  ir_value *in[2], *out[1];
} jit_matmul_1d;
bool jit_matmul_view(const ir_node *n, ir_arena *a, jit_matmul_1d *view);
/* The GEMM template's entry kiln_gemm_<t>_v<VL>_<variant> ("ex", "tex",
 * "pex") for dt (f32 / f64) and this target's vector width, and, when work
 * is not NULL, its _work entry (matmul.c): the engine's prebuilt entries
 * when it has them for this target and prefer_prebuilt (sizes that do not
 * fold to constants), else linked from the template. 0, or -1 with f->err. */
int jit_gemm_entries(jit_fn *f, ir_dtype dt, const char *variant, bool prefer_prebuilt,
                     LLVMValueRef *gemm, LLVMValueRef *work);
/* Rows of the template's register tile (its MR, matmul.c) for f32 and f64
 * on a target with (or without) avx512f: a block of C rows that is a
 * multiple of it leaves no partial row tile. */
int64_t jit_gemm_tile_rows(bool avx512f);
/* mo.softmax / mo.logsoftmax node n (norm.c) on buffers X -> Y. With a
 * prologue `pro` (X unused, may be NULL): each row of n's operand is first
 * computed by pro's members (pro->out_node[0] gives it, the inputs read
 * broadcast to n's shape) and written into Y, then normalized in place, so
 * the results equal those of pro's kernel followed by n's, bit for bit.
 * pro->out_ptrs is ignored. 0, or -1 with f->err. */
int jit_emit_softmax(jit_fn *f, const ir_node *n, LLVMValueRef X, LLVMValueRef Y,
                     const jit_ew_group *pro);
/* mo.fused: its body (f->node->body) as one kernel (fused.c): an
 * elementwise group, a matmul with an elementwise epilogue, or a softmax
 * with an elementwise prologue. */
int jit_lower_fused(jit_fn *f);

/* Per-class lowerings: 0, or -1 with f->err filled. */
int jit_lower_elementwise(jit_fn *f); /* unary, binary, compare, logical, where, cast, broadcast_to */
int jit_lower_matmul(jit_fn *f);
int jit_lower_reduce(jit_fn *f);      /* sum mean prod max min argmax argmin */
int jit_lower_scan(jit_fn *f);        /* cumsum (scan.c) */
int jit_lower_fft(jit_fn *f);         /* irfft (fft.c) */
int jit_lower_band_part(jit_fn *f);   /* band_part (band.c) */
int jit_lower_gather_index(jit_fn *f); /* gather_nd gather_elements (index.c) */
int jit_lower_scatter(jit_fn *f);      /* scatter*, scatter_nd* (index.c) */
int jit_lower_tile(jit_fn *f);         /* tile (index.c) */
int jit_lower_range(jit_fn *f);        /* range (index.c) */
int jit_lower_pad(jit_fn *f);         /* pad (pad.c) */
int jit_lower_pool(jit_fn *f);        /* max_pool2d avg_pool2d (pool.c) */
int jit_lower_conv(jit_fn *f);        /* conv2d (conv.c); dispatches the class's other ops */
int jit_lower_conv_t(jit_fn *f);      /* conv2d_transpose (conv_t.c) */
int jit_lower_conv3d(jit_fn *f);      /* conv3d (conv3d.c) */
int jit_lower_sort(jit_fn *f);        /* top_k bottom_k argsort (sort.c) */
int jit_lower_resize(jit_fn *f);      /* resize resize_nearest _linear _bicubic (resize.c) */
int jit_lower_fold(jit_fn *f);        /* fold (fold.c) */
int jit_lower_roi_align(jit_fn *f);   /* roi_align (roi_align.c) */
int jit_lower_random(jit_fn *f);      /* random.uniform random.normal (random.c) */
int jit_lower_print(jit_fn *f);       /* print (print.c) */
int jit_lower_nonzero(jit_fn *f);     /* nonzero (nonzero.c) */
int jit_lower_nms(jit_fn *f);         /* non_maximum_suppression (nms.c) */
int jit_lower_masked_scatter(jit_fn *f);  /* masked_scatter (masked.c) */
int jit_lower_shape_to_tensor(jit_fn *f); /* shape_to_tensor (masked.c) */
int jit_lower_slice_data(jit_fn *f);  /* slice_tensor with data bounds (slice_data.c) */
int jit_lower_repeat(jit_fn *f);          /* repeat_interleave (repeat.c) */
int jit_lower_quant(jit_fn *f);           /* dequantize, qmatmul (quant.c) */
int jit_lower_matmul_integer(jit_fn *f);  /* matmul.integer (matmul_integer.c) */
/* A matmul's batch loop (matmul.c): for the nb batch axes of tc, each
 * axis' dim bdim[j] and element strides of a, b and c (matrices of M x K,
 * K x N, M x N, mkn = {M, K, N}); a has nba batch axes and b nbb, aligned
 * to the last of tc's (numpy broadcasting), an axis of size 1 or absent read
 * with stride 0 (decided at run time). */
void jit_matmul_batch_strides(jit_fn *f, const ir_type *ta, int nba, const ir_type *tb, int nbb,
                              const ir_type *tc, int nb, const LLVMValueRef mkn[3],
                              LLVMValueRef *bdim, LLVMValueRef *sa, LLVMValueRef *sb,
                              LLVMValueRef *sc);
/* Open the nb batch loops (batch[0] outermost) over bdim and give off[0..2],
 * the element offsets of a, b and c in the current batch (sum over j of
 * iv_j times sa / sb / sc[j]); the caller closes the loops innermost first. */
void jit_matmul_batch_begin(jit_fn *f, int nb, const LLVMValueRef *bdim, const LLVMValueRef *sa,
                            const LLVMValueRef *sb, const LLVMValueRef *sc, jit_loop *batch,
                            LLVMValueRef off[3]);
int jit_lower_softmax(jit_fn *f);     /* softmax, logsoftmax */
int jit_lower_layer_norm(jit_fn *f);
int jit_lower_movement(jit_fn *f);    /* reshape squeeze unsqueeze transpose permute concat split slice gather */
/* Where mo.slice_tensor node n (attribute bounds) reads (numpy's rules;
 * used by the CPU and SIMT lowerings): result element (c0, ...) is operand
 * element *base + sum c_a * strides[a] (rank entries; a stride is negative
 * for a negative step). 0, or -1 with f->err on a malformed node. */
int jit_slice_layout(jit_fn *f, const ir_node *n, LLVMValueRef *base, LLVMValueRef *strides);
/* The same for a mo.slice_tensor with data bounds (slice_data.c): bufs[j]
 * holds operand j (1: start, 2: stop, 3: step, 4: axes), read at run time. */
int jit_slice_data_layout(jit_fn *f, const ir_node *n, const LLVMValueRef *bufs,
                          LLVMValueRef *base, LLVMValueRef *strides);

/* The window of a pool or conv2d node (pool.c): kernel taps [kh, kw] (1s
 * for conv2d, whose filter gives them), stride and dilation [h, w], padding
 * [top, bottom, left, right], the defaults of an empty list applied. 0, or
 * -1 with f->err. */
typedef struct jit_win {
  int64_t k[2], st[2], dil[2], pad[4];
} jit_win;
int jit_win_read(jit_fn *f, const ir_node *n, jit_win *w);

/* Lower f->node through the host lowering of its op class (lower.c's
 * table, one entry per class of ops.def); 0, or -1 with f->err. */
int jit_lower_node(jit_fn *f);

#endif
