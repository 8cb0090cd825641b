/* simt_lower.c - the SIMT lowering of graph ops (simt.h): one kernel per
 * node, every block JIT_SIMT_BLOCK threads, in three shapes of launch:
 *   elements  grid-stride loop over the result's elements (elementwise ops,
 *             broadcast_to, reshape / squeeze / unsqueeze, transpose,
 *             permute, concat, split, slice_tensor, gather);
 *   rows      one block per row of a reduction axis, the threads striding
 *             along it and combining through a shared-memory tree with
 *             barriers (sum, mean, max, min, argmax, argmin, softmax,
 *             logsoftmax, layer_norm);
 *   tiles     matmul: 16x16 output tiles, A and B tiles staged in shared
 *             memory, one block per tile and batch matrix;
 *   custom    mo.custom / mo.inplace_custom (custom.c): every thread calls
 *             the kernel library's function; grid by the simt_grid
 *             attribute (kiln/kernel.h). An elementwise custom kernel
 *             (marked kiln.elementwise) is an elementwise op instead: the
 *             elements loop calls its scalar function per element.
 * jit_simt_geometry gives the launch of each under a symbol binding.
 *
 * Semantics follow the reference interpreter (ir/interp.c) and reuse the
 * CPU path's scalar code (jit_scalar_unary / binary / cast), so emulated
 * kernels agree with the CPU kernels element for element; the reductions
 * combine in a tree (not left to right), and float sums, softmax and
 * layer_norm are computed in double like the interpreter. matmul
 * accumulates in the element type (f32 in float, as GPUs do), f16 / bf16 in
 * float, integers in i64 (wrapping).
 * Every op of the CPU path is lowered (mo.fused never reaches here: device
 * models compile the unfused graph). Transcendental functions map to the
 * target's math library in simt_math.c (libdevice on nvptx, ROCm's ocml on
 * amdgpu). */
#include <stdio.h>
#include <string.h>

#include "custom.h"
#include "jit.h"
#include "simt.h"

#define TILE 16

/* ---- small helpers ---- */

static LLVMValueRef i64v(jit_fn *f, int64_t v) { return jit_i64(f, v); }

static LLVMValueRef sreg64(jit_simt_fn *sf, jit_simt_sreg r, int dim) {
  return LLVMBuildZExt(sf->f.b, jit_simt_sreg_get(sf, r, dim), sf->f.t_i64, "");
}

static bool norm_axis(int64_t a, int rank, int *out) {
  if (a < -rank || a >= rank) return false;
  *out = (int)(a < 0 ? a + rank : a);
  return true;
}

static LLVMValueRef numel(jit_fn *f, const ir_type *t) { return jit_numel_range(f, t, 0, t->rank); }

/* if (cond) { ...then at the builder... } : returns the join block to
 * position at after the body (call if_end). */
typedef struct if_block {
  LLVMBasicBlockRef join;
} if_block;

static void if_begin(jit_fn *f, if_block *ib, LLVMValueRef cond) {
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "then");
  ib->join = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "join");
  LLVMBuildCondBr(f->b, cond, then, ib->join);
  LLVMPositionBuilderAtEnd(f->b, then);
}

static void if_end(jit_fn *f, if_block *ib) {
  LLVMBuildBr(f->b, ib->join);
  LLVMPositionBuilderAtEnd(f->b, ib->join);
}

/* Coordinates of linear index i over the shape dims[rank] (row-major). */
static void unravel(jit_fn *f, LLVMValueRef i, const LLVMValueRef *dims, int rank,
                    LLVMValueRef *coord) {
  LLVMValueRef rest = i;
  for (int k = rank - 1; k >= 0; k--) {
    if (k == 0) {
      coord[k] = rest;
      break;
    }
    coord[k] = LLVMBuildURem(f->b, rest, dims[k], "");
    rest = LLVMBuildUDiv(f->b, rest, dims[k], "");
  }
}

/* Linear index of operand type t (aligned to the right of the result's
 * rank r, numpy broadcasting: an axis of size 1 contributes 0) at the
 * result coordinates coord. */
static LLVMValueRef bcast_index(jit_fn *f, const ir_type *t, const ir_type *ot, int r,
                                const LLVMValueRef *coord) {
  int off = r - t->rank;
  LLVMValueRef idx = i64v(f, 0);
  for (int k = off; k < r; k++) {
    const ir_dim *d = t->dims[k - off];
    LLVMValueRef dv = jit_dim(f, d);
    LLVMValueRef c = coord[k];
    int64_t cv;
    if (!ir_dim_equal(d, ot->dims[k])) {
      if (ir_dim_is_const(d, &cv) && cv == 1)
        c = i64v(f, 0);
      else
        c = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, dv, i64v(f, 1), ""), i64v(f, 0),
                            c, "");
    }
    idx = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, idx, dv, ""), c, "");
  }
  return idx;
}

/* ---- elements: elementwise ---- */

static LLVMValueRef compute_elementwise(jit_fn *f, const ir_node *n, LLVMValueRef *v) {
  ir_dtype in0 = n->in[0]->type.dtype;
  switch (ir_op_get(n->op)->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_UNARY_PRED:
  case IR_CLS_UNARY_LOGICAL: return jit_scalar_unary(f, n->op, in0, v[0]);
  case IR_CLS_BINARY:
  case IR_CLS_BINARY_FLOAT:
  case IR_CLS_COMPARE:
  case IR_CLS_BINARY_LOGICAL: return jit_scalar_binary(f, n->op, in0, v[0], v[1]);
  case IR_CLS_WHERE: return LLVMBuildSelect(f->b, v[0], v[1], v[2], "");
  case IR_CLS_CAST: return jit_scalar_cast(f, in0, n->out[0]->type.dtype, v[0]);
  default: return v[0]; /* broadcast_to */
  }
}

static bool ew_custom(const ir_node *n) {
  return n && n->op == IR_OP_CUSTOM && ir_node_attr_int(n, "kiln.elementwise", 0) != 0;
}

/* Elementwise ops, and an elementwise custom kernel (kiln/kernel.h
 * KILN_ELEMENTWISE_KERNEL: its scalar function called per element, linked
 * by custom.c). */
static int lower_elementwise(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *ot = &n->out[0]->type;
  int r = ot->rank;
  if (n->nin > JIT_EW_MAX_IN)
    return jit_fn_error(f, "mo.%s: too many operands", ir_op_get(n->op)->name);
  LLVMValueRef cfn = NULL;
  if (ew_custom(n) && !(cfn = jit_simt_custom_ew_fn(sf))) return -1;
  LLVMValueRef dims[IR_MAX_RANK], coord[IR_MAX_RANK], v[JIT_EW_MAX_IN];
  jit_shape(f, ot, dims);
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, numel(f, ot));
  unravel(f, i, dims, r, coord);
  for (int j = 0; j < n->nin; j++) {
    const ir_type *t = &n->in[j]->type;
    v[j] = jit_load(f, t->dtype, jit_in(f, j), bcast_index(f, t, ot, r, coord));
  }
  LLVMValueRef y = cfn ? jit_simt_custom_ew_call(f, cfn, n->nin, v) : compute_elementwise(f, n, v);
  jit_store(f, ot->dtype, jit_out(f, 0), i, y);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

/* ---- elements: data movement ---- */

/* Copy in0[src(i)] to out0[i] for every result element; src from coord. */
typedef LLVMValueRef (*src_index_fn)(jit_simt_fn *sf, const LLVMValueRef *coord, void *ud);

static int lower_gathered_copy(jit_simt_fn *sf, int in, int out, src_index_fn src, void *ud) {
  jit_fn *f = &sf->f;
  const ir_type *ot = &f->node->out[out]->type;
  LLVMValueRef dims[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, ot, dims);
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, numel(f, ot));
  unravel(f, i, dims, ot->rank, coord);
  LLVMValueRef s = src(sf, coord, ud);
  ir_dtype dt = ot->dtype;
  jit_store(f, dt, jit_out(f, out), i, jit_load(f, dt, jit_in(f, in), s));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

static int lower_flat_copy(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_type *ot = &f->node->out[0]->type;
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, numel(f, ot));
  jit_store(f, ot->dtype, jit_out(f, 0), i, jit_load(f, ot->dtype, jit_in(f, 0), i));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

typedef struct perm_ud {
  int perm[IR_MAX_RANK]; /* result axis k = input axis perm[k] */
} perm_ud;

static LLVMValueRef permuted_src(jit_simt_fn *sf, const LLVMValueRef *coord, void *ud) {
  jit_fn *f = &sf->f;
  const perm_ud *p = ud;
  const ir_type *xt = &f->node->in[0]->type;
  LLVMValueRef xc[IR_MAX_RANK];
  for (int k = 0; k < xt->rank; k++) xc[p->perm[k]] = coord[k];
  LLVMValueRef idx = i64v(f, 0);
  for (int a = 0; a < xt->rank; a++)
    idx = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, idx, jit_dim(f, xt->dims[a]), ""), xc[a], "");
  return idx;
}

static int lower_permute(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  int r = n->in[0]->type.rank;
  perm_ud p;
  for (int k = 0; k < r; k++) p.perm[k] = k;
  if (n->op == IR_OP_TRANSPOSE) {
    int a1, a2;
    if (!norm_axis(ir_node_attr_int(n, "axis_1", 0), r, &a1) ||
        !norm_axis(ir_node_attr_int(n, "axis_2", 0), r, &a2))
      return jit_fn_error(f, "mo.transpose: axis out of range for rank %d", r);
    p.perm[a1] = a2;
    p.perm[a2] = a1;
  } else {
    const ir_attr *a = ir_node_attr(n, "dims");
    if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n != r)
      return jit_fn_error(f, "mo.permute: dims must list %d axes", r);
    for (int k = 0; k < r; k++)
      if (!norm_axis(a->u.ints.v[k], r, &p.perm[k]))
        return jit_fn_error(f, "mo.permute: axis %lld out of range",
                            (long long)a->u.ints.v[k]);
  }
  return lower_gathered_copy(sf, 0, 0, permuted_src, &p);
}

/* concat / split: pieces along `axis` of the whole. */
static int lower_concat_split(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  bool concat = n->op == IR_OP_CONCAT;
  const ir_type *wt = concat ? &n->out[0]->type : &n->in[0]->type;
  int np = concat ? n->nin : n->nout, axis;
  if (!norm_axis(ir_node_attr_int(n, "axis", concat ? INT64_MIN : 0), wt->rank, &axis))
    return jit_fn_error(f, "mo.%s: axis out of range", concat ? "concat" : "split");
  LLVMValueRef inner = jit_numel_range(f, wt, axis + 1, wt->rank);
  LLVMValueRef wlen = jit_dim(f, wt->dims[axis]);
  LLVMValueRef start = i64v(f, 0);
  for (int k = 0; k < np; k++) {
    const ir_type *pt = concat ? &n->in[k]->type : &n->out[k]->type;
    LLVMValueRef plen = jit_dim(f, pt->dims[axis]);
    /* piece element (o, a, in) <-> whole element (o, start + a, in) */
    jit_simt_loop l;
    LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, numel(f, pt));
    LLVMValueRef in = LLVMBuildURem(f->b, i, inner, "");
    LLVMValueRef rest = LLVMBuildUDiv(f->b, i, inner, "");
    LLVMValueRef a = LLVMBuildURem(f->b, rest, plen, "");
    LLVMValueRef o = LLVMBuildUDiv(f->b, rest, plen, "");
    LLVMValueRef w = LLVMBuildAdd(
        f->b,
        LLVMBuildMul(f->b, LLVMBuildAdd(f->b, LLVMBuildMul(f->b, o, wlen, ""),
                                        LLVMBuildAdd(f->b, start, a, ""), ""),
                     inner, ""),
        in, "");
    ir_dtype dt = pt->dtype;
    if (concat)
      jit_store(f, dt, jit_out(f, 0), w, jit_load(f, dt, jit_in(f, k), i));
    else
      jit_store(f, dt, jit_out(f, k), i, jit_load(f, dt, jit_in(f, 0), w));
    jit_simt_grid_loop_end(sf, &l);
    start = LLVMBuildAdd(f->b, start, plen, "");
  }
  return f->failed ? -1 : 0;
}

typedef struct gather_ud {
  int axis;
} gather_ud;

/* y = x[:axis] + idx + x[axis+1:]: y (o, j..., in) = x (o, idx[j], in). */
static LLVMValueRef gather_src(jit_simt_fn *sf, const LLVMValueRef *coord, void *ud) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  int axis = ((const gather_ud *)ud)->axis;
  const ir_type *xt = &n->in[0]->type, *it = &n->in[1]->type;
  LLVMValueRef j = i64v(f, 0);
  for (int k = 0; k < it->rank; k++)
    j = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, j, jit_dim(f, it->dims[k]), ""), coord[axis + k], "");
  LLVMValueRef iv = jit_load(f, it->dtype, jit_in(f, 1), j);
  iv = ir_dtype_is_signed(it->dtype) ? LLVMBuildSExt(f->b, iv, f->t_i64, "")
                                     : LLVMBuildZExt(f->b, iv, f->t_i64, "");
  if (LLVMTypeOf(iv) != f->t_i64) iv = LLVMBuildSExtOrBitCast(f->b, iv, f->t_i64, "");
  LLVMValueRef d = jit_dim(f, xt->dims[axis]);
  LLVMValueRef lo = LLVMBuildICmp(f->b, LLVMIntSLT, iv, LLVMBuildNeg(f->b, d, ""), "");
  LLVMValueRef hi = LLVMBuildICmp(f->b, LLVMIntSGE, iv, d, "");
  jit_fail_if(f, LLVMBuildOr(f->b, lo, hi, ""), JIT_KERR_INDEX);
  LLVMValueRef neg = LLVMBuildICmp(f->b, LLVMIntSLT, iv, i64v(f, 0), "");
  iv = LLVMBuildSelect(f->b, neg, LLVMBuildAdd(f->b, iv, d, ""), iv, "");
  LLVMValueRef idx = i64v(f, 0);
  for (int a = 0; a < xt->rank; a++) {
    LLVMValueRef c = a < axis ? coord[a] : a == axis ? iv : coord[a - 1 + it->rank];
    idx = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, idx, jit_dim(f, xt->dims[a]), ""), c, "");
  }
  return idx;
}

typedef struct slice_ud {
  LLVMValueRef base, strides[IR_MAX_RANK];
} slice_ud;

static LLVMValueRef slice_src(jit_simt_fn *sf, const LLVMValueRef *coord, void *ud) {
  jit_fn *f = &sf->f;
  const slice_ud *s = ud;
  LLVMValueRef idx = s->base;
  for (int a = 0; a < f->node->out[0]->type.rank; a++)
    idx = LLVMBuildAdd(f->b, idx, LLVMBuildMul(f->b, coord[a], s->strides[a], ""), "");
  return idx;
}

/* slice_tensor: a gathered copy through the CPU path's slice layout (the
 * runtime has checked the bounds before the launch). */
static int lower_slice(jit_simt_fn *sf) {
  slice_ud s;
  if (jit_slice_layout(&sf->f, &s.base, s.strides) < 0) return -1;
  return lower_gathered_copy(sf, 0, 0, slice_src, &s);
}

static int lower_gather(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  gather_ud g;
  if (!norm_axis(ir_node_attr_int(f->node, "axis", -1), f->node->in[0]->type.rank, &g.axis))
    return jit_fn_error(f, "mo.gather: axis out of range");
  return lower_gathered_copy(sf, 0, 0, gather_src, &g);
}

/* ---- rows: block reductions ---- */

typedef enum combine_op { C_SUM_F, C_MAX_F, C_MIN_F, C_SUM_I, C_MAX_I, C_MIN_I } combine_op;

static LLVMValueRef combine(jit_fn *f, combine_op op, bool is_signed, LLVMValueRef a,
                            LLVMValueRef b) {
  LLVMValueRef ab[2] = {a, b};
  switch (op) {
  case C_SUM_F: return LLVMBuildFAdd(f->b, a, b, "");
  case C_MAX_F: return jit_intrinsic(f, "llvm.maximum", f->t_f64, ab, 2);
  case C_MIN_F: return jit_intrinsic(f, "llvm.minimum", f->t_f64, ab, 2);
  case C_SUM_I: return LLVMBuildAdd(f->b, a, b, "");
  case C_MAX_I:
    return LLVMBuildSelect(
        f->b, LLVMBuildICmp(f->b, is_signed ? LLVMIntSGT : LLVMIntUGT, a, b, ""), a, b, "");
  case C_MIN_I:
    return LLVMBuildSelect(
        f->b, LLVMBuildICmp(f->b, is_signed ? LLVMIntSLT : LLVMIntULT, a, b, ""), a, b, "");
  }
  return a;
}

/* Every thread of the block holds v (f64 or i64); returns the block-wide
 * combination, in every thread. sh: JIT_SIMT_BLOCK 8-byte slots. */
static LLVMValueRef block_reduce(jit_simt_fn *sf, LLVMValueRef sh, LLVMValueRef tid,
                                 LLVMValueRef v, combine_op op, bool is_signed) {
  jit_fn *f = &sf->f;
  LLVMTypeRef ty = LLVMTypeOf(v);
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(f->b, ty, sh, &tid, 1, "");
  LLVMBuildStore(f->b, v, slot);
  jit_simt_barrier(sf);
  for (int s = JIT_SIMT_BLOCK / 2; s > 0; s /= 2) {
    if_block ib;
    if_begin(f, &ib, LLVMBuildICmp(f->b, LLVMIntULT, tid, i64v(f, s), ""));
    LLVMValueRef o = LLVMBuildAdd(f->b, tid, i64v(f, s), "");
    LLVMValueRef a = LLVMBuildLoad2(f->b, ty, slot, "");
    LLVMValueRef b = LLVMBuildLoad2(f->b, ty, LLVMBuildInBoundsGEP2(f->b, ty, sh, &o, 1, ""), "");
    LLVMBuildStore(f->b, combine(f, op, is_signed, a, b), slot);
    if_end(f, &ib);
    jit_simt_barrier(sf);
  }
  LLVMValueRef r = LLVMBuildLoad2(f->b, ty, sh, "");
  jit_simt_barrier(sf); /* sh is reused by the next reduction */
  return r;
}

/* for (j = tid; j < len; j += JIT_SIMT_BLOCK) { body } */
typedef struct row_loop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef j;
} row_loop;

static LLVMValueRef row_loop_begin(jit_fn *f, row_loop *l, LLVMValueRef tid, LLVMValueRef len) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  l->header = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.header");
  l->body = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.body");
  l->exit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.exit");
  LLVMBuildBr(f->b, l->header);
  LLVMPositionBuilderAtEnd(f->b, l->header);
  l->j = LLVMBuildPhi(f->b, f->t_i64, "j");
  LLVMAddIncoming(l->j, &tid, &pre, 1);
  LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, l->j, len, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(f->b, l->body);
  return l->j;
}

static void row_loop_end(jit_fn *f, row_loop *l) {
  LLVMValueRef next = LLVMBuildAdd(f->b, l->j, i64v(f, JIT_SIMT_BLOCK), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMBuildBr(f->b, l->header);
  LLVMAddIncoming(l->j, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(f->b, l->exit);
}

/* A row of x: this block's (outer, inner) pair; element j of the row is
 * x[base + j * inner]. */
typedef struct row {
  LLVMValueRef tid, base, inner, len;
} row;

static int row_setup(jit_simt_fn *sf, const ir_type *xt, int axis, row *rw) {
  jit_fn *f = &sf->f;
  rw->tid = sreg64(sf, JIT_SIMT_TID, 0);
  LLVMValueRef r = sreg64(sf, JIT_SIMT_CTAID, 0);
  rw->inner = jit_numel_range(f, xt, axis + 1, xt->rank);
  rw->len = jit_dim(f, xt->dims[axis]);
  LLVMValueRef o = LLVMBuildUDiv(f->b, r, rw->inner, "");
  LLVMValueRef in = LLVMBuildURem(f->b, r, rw->inner, "");
  rw->base = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, LLVMBuildMul(f->b, o, rw->len, ""), rw->inner, ""),
                          in, "");
  return 0;
}

static LLVMValueRef row_index(jit_fn *f, const row *rw, LLVMValueRef j) {
  return LLVMBuildAdd(f->b, rw->base, LLVMBuildMul(f->b, j, rw->inner, ""), "");
}

static LLVMValueRef load_f64(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef i) {
  LLVMValueRef v = jit_load(f, dt, base, i);
  return dt == IR_DT_F64 ? v : LLVMBuildFPExt(f->b, v, f->t_f64, "");
}

static void store_from_f64(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef i,
                           LLVMValueRef v) {
  jit_store(f, dt, base, i, dt == IR_DT_F64 ? v : jit_scalar_cast(f, IR_DT_F64, dt, v));
}

static LLVMValueRef load_i64(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef i) {
  LLVMValueRef v = jit_load(f, dt, base, i);
  if (LLVMTypeOf(v) == f->t_i64) return v;
  return ir_dtype_is_signed(dt) ? LLVMBuildSExt(f->b, v, f->t_i64, "")
                                : LLVMBuildZExt(f->b, v, f->t_i64, "");
}

static LLVMValueRef acc_slot(jit_fn *f, LLVMTypeRef ty, LLVMValueRef init) {
  LLVMValueRef a = jit_alloca(f, ty, "acc");
  LLVMBuildStore(f->b, init, a);
  return a;
}

static int lower_reduce(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type;
  ir_dtype dt = xt->dtype, ydt = n->out[0]->type.dtype;
  int axis;
  if (!norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis))
    return jit_fn_error(f, "mo.%s: axis out of range", ir_op_get(n->op)->name);
  row rw;
  row_setup(sf, xt, axis, &rw);
  LLVMValueRef sh = jit_simt_shared(sf, 2 * JIT_SIMT_BLOCK * 8);
  LLVMValueRef x = jit_in(f, 0), y = jit_out(f, 0);
  LLVMValueRef yi = sreg64(sf, JIT_SIMT_CTAID, 0);
  bool fl = ir_dtype_is_float(dt), sgn = ir_dtype_is_signed(dt);
  bool mx = n->op == IR_OP_REDUCE_MAX || n->op == IR_OP_ARGMAX;
  LLVMValueRef is0 = LLVMBuildICmp(f->b, LLVMIntEQ, rw.tid, i64v(f, 0), "");

  if (n->op == IR_OP_ARGMAX || n->op == IR_OP_ARGMIN) {
    /* per thread: the best (value, index) of its elements; the tree keeps
     * the better of two, ties to the lower index, a NaN beating any number
     * (the first NaN wins); an empty slot has index INT64_MAX */
    LLVMTypeRef vt = fl ? f->t_f64 : f->t_i64;
    LLVMValueRef none = i64v(f, INT64_MAX);
    LLVMValueRef bv = acc_slot(f, vt, fl ? LLVMConstReal(vt, 0) : i64v(f, 0));
    LLVMValueRef bi = acc_slot(f, f->t_i64, none);
    row_loop l;
    LLVMValueRef j = row_loop_begin(f, &l, rw.tid, rw.len);
    LLVMValueRef v = fl ? load_f64(f, dt, x, row_index(f, &rw, j))
                        : load_i64(f, dt, x, row_index(f, &rw, j));
    LLVMValueRef cv = LLVMBuildLoad2(f->b, vt, bv, ""), ci = LLVMBuildLoad2(f->b, f->t_i64, bi, "");
    LLVMValueRef empty = LLVMBuildICmp(f->b, LLVMIntEQ, ci, none, "");
    LLVMValueRef better;
    if (fl) {
      LLVMValueRef vnan = LLVMBuildFCmp(f->b, LLVMRealUNO, v, v, "");
      LLVMValueRef cnan = LLVMBuildFCmp(f->b, LLVMRealUNO, cv, cv, "");
      LLVMValueRef gt = LLVMBuildFCmp(f->b, mx ? LLVMRealOGT : LLVMRealOLT, v, cv, "");
      better = LLVMBuildAnd(f->b, LLVMBuildNot(f->b, cnan, ""), LLVMBuildOr(f->b, vnan, gt, ""), "");
    } else {
      better = LLVMBuildICmp(f->b, mx ? (sgn ? LLVMIntSGT : LLVMIntUGT) : (sgn ? LLVMIntSLT : LLVMIntULT),
                             v, cv, "");
    }
    LLVMValueRef take = LLVMBuildOr(f->b, empty, better, "");
    LLVMBuildStore(f->b, LLVMBuildSelect(f->b, take, v, cv, ""), bv);
    LLVMBuildStore(f->b, LLVMBuildSelect(f->b, take, j, ci, ""), bi);
    row_loop_end(f, &l);
    /* tree over (value, index) pairs: values in sh[0..B), indices after */
    LLVMValueRef shi = LLVMBuildInBoundsGEP2(f->b, f->t_i8, sh, (LLVMValueRef[]){i64v(f, JIT_SIMT_BLOCK * 8)}, 1, "");
    LLVMValueRef vslot = LLVMBuildInBoundsGEP2(f->b, vt, sh, &rw.tid, 1, "");
    LLVMValueRef islot = LLVMBuildInBoundsGEP2(f->b, f->t_i64, shi, &rw.tid, 1, "");
    LLVMBuildStore(f->b, LLVMBuildLoad2(f->b, vt, bv, ""), vslot);
    LLVMBuildStore(f->b, LLVMBuildLoad2(f->b, f->t_i64, bi, ""), islot);
    jit_simt_barrier(sf);
    for (int s = JIT_SIMT_BLOCK / 2; s > 0; s /= 2) {
      if_block ib;
      if_begin(f, &ib, LLVMBuildICmp(f->b, LLVMIntULT, rw.tid, i64v(f, s), ""));
      LLVMValueRef o = LLVMBuildAdd(f->b, rw.tid, i64v(f, s), "");
      LLVMValueRef av = LLVMBuildLoad2(f->b, vt, vslot, ""), ai = LLVMBuildLoad2(f->b, f->t_i64, islot, "");
      LLVMValueRef ov = LLVMBuildLoad2(f->b, vt, LLVMBuildInBoundsGEP2(f->b, vt, sh, &o, 1, ""), "");
      LLVMValueRef oi = LLVMBuildLoad2(f->b, f->t_i64, LLVMBuildInBoundsGEP2(f->b, f->t_i64, shi, &o, 1, ""), "");
      LLVMValueRef aempty = LLVMBuildICmp(f->b, LLVMIntEQ, ai, none, "");
      LLVMValueRef oempty = LLVMBuildICmp(f->b, LLVMIntEQ, oi, none, "");
      LLVMValueRef lower = LLVMBuildICmp(f->b, LLVMIntSLT, oi, ai, "");
      LLVMValueRef obetter;
      if (fl) {
        LLVMValueRef anan = LLVMBuildFCmp(f->b, LLVMRealUNO, av, av, "");
        LLVMValueRef onan = LLVMBuildFCmp(f->b, LLVMRealUNO, ov, ov, "");
        LLVMValueRef gt = LLVMBuildFCmp(f->b, mx ? LLVMRealOGT : LLVMRealOLT, ov, av, "");
        LLVMValueRef eq = LLVMBuildFCmp(f->b, LLVMRealOEQ, ov, av, "");
        LLVMValueRef both_nan = LLVMBuildAnd(f->b, anan, onan, "");
        LLVMValueRef num = LLVMBuildOr(f->b, gt, LLVMBuildAnd(f->b, eq, lower, ""), "");
        obetter = LLVMBuildOr(
            f->b, LLVMBuildAnd(f->b, onan, LLVMBuildNot(f->b, anan, ""), ""),
            LLVMBuildOr(f->b, LLVMBuildAnd(f->b, both_nan, lower, ""),
                        LLVMBuildAnd(f->b, LLVMBuildNot(f->b, LLVMBuildOr(f->b, anan, onan, ""), ""), num, ""), ""),
            "");
      } else {
        LLVMValueRef gt = LLVMBuildICmp(f->b, mx ? (sgn ? LLVMIntSGT : LLVMIntUGT) : (sgn ? LLVMIntSLT : LLVMIntULT),
                                        ov, av, "");
        LLVMValueRef eq = LLVMBuildICmp(f->b, LLVMIntEQ, ov, av, "");
        obetter = LLVMBuildOr(f->b, gt, LLVMBuildAnd(f->b, eq, lower, ""), "");
      }
      LLVMValueRef use_o = LLVMBuildAnd(f->b, LLVMBuildNot(f->b, oempty, ""),
                                        LLVMBuildOr(f->b, aempty, obetter, ""), "");
      LLVMBuildStore(f->b, LLVMBuildSelect(f->b, use_o, ov, av, ""), vslot);
      LLVMBuildStore(f->b, LLVMBuildSelect(f->b, use_o, oi, ai, ""), islot);
      if_end(f, &ib);
      jit_simt_barrier(sf);
    }
    if_block wb;
    if_begin(f, &wb, is0);
    LLVMValueRef best = LLVMBuildLoad2(f->b, f->t_i64, shi, "");
    best = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, best, none, ""), i64v(f, 0), best, "");
    LLVMTypeRef yt = jit_type(f, ydt);
    jit_store(f, ydt, y, yi, LLVMTypeOf(best) == yt ? best : LLVMBuildTrunc(f->b, best, yt, ""));
    if_end(f, &wb);
    return f->failed ? -1 : 0;
  }

  bool sum = n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN;
  combine_op op = fl ? (sum ? C_SUM_F : mx ? C_MAX_F : C_MIN_F) : (sum ? C_SUM_I : mx ? C_MAX_I : C_MIN_I);
  LLVMValueRef init;
  if (fl)
    init = LLVMConstReal(f->t_f64, sum ? 0.0 : mx ? -__builtin_inf() : __builtin_inf());
  else if (sum)
    init = i64v(f, 0);
  else {
    int bits = (int)ir_dtype_size(dt) * 8;
    uint64_t umax = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    int64_t smax = (int64_t)(umax >> 1), smin = -smax - 1;
    init = i64v(f, mx ? (sgn ? smin : 0) : (sgn ? smax : (int64_t)umax));
  }
  LLVMTypeRef vt = fl ? f->t_f64 : f->t_i64;
  LLVMValueRef acc = acc_slot(f, vt, init);
  row_loop l;
  LLVMValueRef j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef v = fl ? load_f64(f, dt, x, row_index(f, &rw, j)) : load_i64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, combine(f, op, sgn, LLVMBuildLoad2(f->b, vt, acc, ""), v), acc);
  row_loop_end(f, &l);
  LLVMValueRef total = block_reduce(sf, sh, rw.tid, LLVMBuildLoad2(f->b, vt, acc, ""), op, sgn);
  if_block wb;
  if_begin(f, &wb, is0);
  if (fl) {
    if (n->op == IR_OP_REDUCE_MEAN)
      total = LLVMBuildFDiv(f->b, total, LLVMBuildSIToFP(f->b, rw.len, f->t_f64, ""), "");
    store_from_f64(f, ydt, y, yi, total);
  } else {
    LLVMTypeRef yt = jit_type(f, ydt);
    LLVMValueRef t = LLVMTypeOf(total) == yt ? total : LLVMBuildTrunc(f->b, total, yt, "");
    if (n->op == IR_OP_REDUCE_MEAN) {
      /* the wrapped sum of the dtype, divided in int64 (truncating) */
      LLVMValueRef w = LLVMTypeOf(t) == f->t_i64 ? t
                       : sgn ? LLVMBuildSExt(f->b, t, f->t_i64, "")
                             : LLVMBuildZExt(f->b, t, f->t_i64, "");
      LLVMValueRef len0 = LLVMBuildICmp(f->b, LLVMIntEQ, rw.len, i64v(f, 0), "");
      LLVMValueRef safe = LLVMBuildSelect(f->b, len0, i64v(f, 1), rw.len, "");
      LLVMValueRef q = LLVMBuildSDiv(f->b, w, safe, "");
      t = LLVMTypeOf(q) == yt ? q : LLVMBuildTrunc(f->b, q, yt, "");
    }
    jit_store(f, ydt, y, yi, t);
  }
  if_end(f, &wb);
  return f->failed ? -1 : 0;
}

static int lower_softmax(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type;
  ir_dtype dt = xt->dtype;
  int axis;
  if (!norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis))
    return jit_fn_error(f, "mo.%s: axis out of range", ir_op_get(n->op)->name);
  row rw;
  row_setup(sf, xt, axis, &rw);
  LLVMValueRef sh = jit_simt_shared(sf, 2 * JIT_SIMT_BLOCK * 8);
  LLVMValueRef x = jit_in(f, 0), y = jit_out(f, 0);
  LLVMValueRef acc = acc_slot(f, f->t_f64, LLVMConstReal(f->t_f64, -__builtin_inf()));
  row_loop l;
  LLVMValueRef j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, combine(f, C_MAX_F, false, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), v), acc);
  row_loop_end(f, &l);
  LLVMValueRef m = block_reduce(sf, sh, rw.tid, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_MAX_F, false);
  LLVMBuildStore(f->b, LLVMConstReal(f->t_f64, 0), acc);
  j = row_loop_begin(f, &l, rw.tid, rw.len);
  v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMValueRef e = jit_exp_f64(f, LLVMBuildFSub(f->b, v, m, ""));
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), e, ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef s = block_reduce(sf, sh, rw.tid, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false);
  LLVMValueRef logs = n->op == IR_OP_LOGSOFTMAX ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1) : NULL;
  j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef k = row_index(f, &rw, j);
  LLVMValueRef d = LLVMBuildFSub(f->b, load_f64(f, dt, x, k), m, "");
  LLVMValueRef out = n->op == IR_OP_SOFTMAX ? LLVMBuildFDiv(f->b, jit_exp_f64(f, d), s, "")
                                            : LLVMBuildFSub(f->b, d, logs, "");
  store_from_f64(f, dt, y, k, out);
  row_loop_end(f, &l);
  return f->failed ? -1 : 0;
}

static int lower_layer_norm(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type;
  ir_dtype dt = xt->dtype;
  row rw;
  row_setup(sf, xt, xt->rank - 1, &rw);
  LLVMValueRef sh = jit_simt_shared(sf, 2 * JIT_SIMT_BLOCK * 8);
  LLVMValueRef x = jit_in(f, 0), gm = jit_in(f, 1), bt = jit_in(f, 2), y = jit_out(f, 0);
  LLVMValueRef lenf = LLVMBuildSIToFP(f->b, rw.len, f->t_f64, "");
  LLVMValueRef acc = acc_slot(f, f->t_f64, LLVMConstReal(f->t_f64, 0));
  row_loop l;
  LLVMValueRef j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), v, ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef mean = LLVMBuildFDiv(
      f->b, block_reduce(sf, sh, rw.tid, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false),
      lenf, "mean");
  LLVMBuildStore(f->b, LLVMConstReal(f->t_f64, 0), acc);
  j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef d = LLVMBuildFSub(f->b, load_f64(f, dt, x, row_index(f, &rw, j)), mean, "");
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""),
                                     LLVMBuildFMul(f->b, d, d, ""), ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef var = LLVMBuildFDiv(
      f->b, block_reduce(sf, sh, rw.tid, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false),
      lenf, "var");
  LLVMValueRef veps = LLVMBuildFAdd(
      f->b, var, LLVMConstReal(f->t_f64, ir_node_attr_float(n, "epsilon", 1e-5)), "");
  LLVMValueRef den = jit_intrinsic(f, "llvm.sqrt", f->t_f64, &veps, 1);
  j = row_loop_begin(f, &l, rw.tid, rw.len);
  LLVMValueRef k = row_index(f, &rw, j);
  LLVMValueRef t = LLVMBuildFDiv(f->b, LLVMBuildFSub(f->b, load_f64(f, dt, x, k), mean, ""), den, "");
  t = LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, t, load_f64(f, dt, gm, j), ""), load_f64(f, dt, bt, j), "");
  store_from_f64(f, dt, y, k, t);
  row_loop_end(f, &l);
  return f->failed ? -1 : 0;
}

/* ---- tiles: matmul ---- */

static int lower_matmul(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *at = &n->in[0]->type, *bt = &n->in[1]->type, *yt = &n->out[0]->type;
  ir_dtype dt = yt->dtype;
  int ra = at->rank, rb = bt->rank, ry = yt->rank;
  if (ra < 2 || rb < 2) return jit_fn_error(f, "mo.matmul: ranks %d x %d", ra, rb);
  bool fl = ir_dtype_is_float(dt);
  LLVMTypeRef ct = !fl ? f->t_i64 : dt == IR_DT_F64 ? f->t_f64 : f->t_f32;
  unsigned csz = LLVMGetTypeKind(ct) == LLVMFloatTypeKind ? 4 : 8;
  LLVMValueRef M = jit_dim(f, at->dims[ra - 2]), K = jit_dim(f, at->dims[ra - 1]);
  if (ir_node_attr_int(n, "kiln.packed_b", 0)) /* the CPU runtime's, never a device's */
    return jit_fn_error(f, "mo.matmul: kiln.packed_b is not supported on SIMT targets");
  /* kiln.transpose_b (ir/fold_transpose.c): B is [..., N, K] */
  bool tb = ir_node_attr_int(n, "kiln.transpose_b", 0) != 0;
  LLVMValueRef N = jit_dim(f, bt->dims[rb - (tb ? 2 : 1)]);
  LLVMValueRef tx = sreg64(sf, JIT_SIMT_TID, 0), ty = sreg64(sf, JIT_SIMT_TID, 1);
  LLVMValueRef col = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, sreg64(sf, JIT_SIMT_CTAID, 0), i64v(f, TILE), ""), tx, "col");
  LLVMValueRef rowv = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, sreg64(sf, JIT_SIMT_CTAID, 1), i64v(f, TILE), ""), ty, "row");
  LLVMValueRef bi = sreg64(sf, JIT_SIMT_CTAID, 2);
  /* batch offsets (broadcast like the interpreter: whole matrices) */
  LLVMValueRef ydims[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, yt, ydims);
  unravel(f, bi, ydims, ry - 2, coord);
  ir_type ab = *at, bb = *bt, yb = *yt;
  ab.rank = ra - 2;
  bb.rank = rb - 2;
  yb.rank = ry - 2;
  LLVMValueRef ao = ry > 2 ? bcast_index(f, &ab, &yb, ry - 2, coord) : i64v(f, 0);
  LLVMValueRef bo = ry > 2 ? bcast_index(f, &bb, &yb, ry - 2, coord) : i64v(f, 0);
  ao = LLVMBuildMul(f->b, ao, LLVMBuildMul(f->b, M, K, ""), "");
  bo = LLVMBuildMul(f->b, bo, LLVMBuildMul(f->b, K, N, ""), "");
  LLVMValueRef yo = LLVMBuildMul(f->b, bi, LLVMBuildMul(f->b, M, N, ""), "");
  LLVMValueRef sh = jit_simt_shared(sf, 2ull * TILE * TILE * csz);
  LLVMValueRef shb = LLVMBuildInBoundsGEP2(f->b, ct, sh, (LLVMValueRef[]){i64v(f, TILE * TILE)}, 1, "");
  LLVMValueRef zero = fl ? LLVMConstReal(ct, 0) : LLVMConstInt(ct, 0, 0);
  LLVMValueRef acc = acc_slot(f, ct, zero);
  LLVMValueRef ntiles = LLVMBuildUDiv(f->b, LLVMBuildAdd(f->b, K, i64v(f, TILE - 1), ""), i64v(f, TILE), "");
  LLVMValueRef a = jit_in(f, 0), b = jit_in(f, 1), y = jit_out(f, 0);
  LLVMValueRef in_m = LLVMBuildICmp(f->b, LLVMIntSLT, rowv, M, "");
  LLVMValueRef in_n = LLVMBuildICmp(f->b, LLVMIntSLT, col, N, "");
  jit_loop tl;
  LLVMValueRef t = jit_loop_begin(f, &tl, i64v(f, 0), ntiles, "tile");
  LLVMValueRef k0 = LLVMBuildMul(f->b, t, i64v(f, TILE), "");
  /* stage A[row, k0 + tx] and B[k0 + ty, col], zero outside */
  for (int which = 0; which < 2; which++) {
    LLVMValueRef kk = LLVMBuildAdd(f->b, k0, which ? ty : tx, "");
    LLVMValueRef ok = LLVMBuildAnd(f->b, which ? in_n : in_m, LLVMBuildICmp(f->b, LLVMIntSLT, kk, K, ""), "");
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(
        f->b, ct, which ? shb : sh,
        (LLVMValueRef[]){LLVMBuildAdd(f->b, LLVMBuildMul(f->b, ty, i64v(f, TILE), ""), tx, "")}, 1, "");
    LLVMBuildStore(f->b, zero, slot);
    if_block ib;
    if_begin(f, &ib, ok);
    LLVMValueRef bidx = tb ? LLVMBuildAdd(f->b, LLVMBuildMul(f->b, col, K, ""), kk, "")
                           : LLVMBuildAdd(f->b, LLVMBuildMul(f->b, kk, N, ""), col, "");
    LLVMValueRef idx = which ? LLVMBuildAdd(f->b, bo, bidx, "")
                             : LLVMBuildAdd(f->b, ao, LLVMBuildAdd(f->b, LLVMBuildMul(f->b, rowv, K, ""), kk, ""), "");
    LLVMValueRef v = jit_load(f, dt, which ? b : a, idx);
    if (fl && LLVMTypeOf(v) != ct) v = LLVMBuildFPExt(f->b, v, ct, "");
    if (!fl && LLVMTypeOf(v) != ct)
      v = ir_dtype_is_signed(dt) ? LLVMBuildSExt(f->b, v, ct, "") : LLVMBuildZExt(f->b, v, ct, "");
    LLVMBuildStore(f->b, v, slot);
    if_end(f, &ib);
  }
  jit_simt_barrier(sf);
  LLVMValueRef s = LLVMBuildLoad2(f->b, ct, acc, "");
  for (int kk = 0; kk < TILE; kk++) {
    LLVMValueRef av = LLVMBuildLoad2(
        f->b, ct, LLVMBuildInBoundsGEP2(f->b, ct, sh, (LLVMValueRef[]){LLVMBuildAdd(f->b, LLVMBuildMul(f->b, ty, i64v(f, TILE), ""), i64v(f, kk), "")}, 1, ""), "");
    LLVMValueRef bv = LLVMBuildLoad2(
        f->b, ct, LLVMBuildInBoundsGEP2(f->b, ct, shb, (LLVMValueRef[]){LLVMBuildAdd(f->b, i64v(f, kk * TILE), tx, "")}, 1, ""), "");
    s = fl ? LLVMBuildFAdd(f->b, s, LLVMBuildFMul(f->b, av, bv, ""), "")
           : LLVMBuildAdd(f->b, s, LLVMBuildMul(f->b, av, bv, ""), "");
  }
  LLVMBuildStore(f->b, s, acc);
  jit_simt_barrier(sf);
  jit_loop_end(f, &tl);
  if_block wb;
  if_begin(f, &wb, LLVMBuildAnd(f->b, in_m, in_n, ""));
  LLVMValueRef r = LLVMBuildLoad2(f->b, ct, acc, "");
  LLVMTypeRef et = jit_type(f, dt);
  if (fl && et != ct) r = jit_scalar_cast(f, ct == f->t_f64 ? IR_DT_F64 : IR_DT_F32, dt, r);
  if (!fl && et != ct) r = LLVMBuildTrunc(f->b, r, et, "");
  jit_store(f, dt, y, LLVMBuildAdd(f->b, yo, LLVMBuildAdd(f->b, LLVMBuildMul(f->b, rowv, N, ""), col, ""), ""), r);
  if_end(f, &wb);
  return f->failed ? -1 : 0;
}

/* ---- dispatch and geometry ---- */

typedef enum launch_shape { L_NONE, L_ELEMENTS, L_ROWS, L_TILES, L_CUSTOM } launch_shape;

static launch_shape shape_of(const ir_node *n) {
  const ir_op_info *info = n ? ir_op_get(n->op) : NULL;
  if (!info) return L_NONE;
  switch (info->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_UNARY_PRED:
  case IR_CLS_UNARY_LOGICAL:
  case IR_CLS_BINARY:
  case IR_CLS_BINARY_FLOAT:
  case IR_CLS_COMPARE:
  case IR_CLS_BINARY_LOGICAL:
  case IR_CLS_WHERE:
  case IR_CLS_CAST:
  case IR_CLS_BROADCAST_TO:
  case IR_CLS_RESHAPE:
  case IR_CLS_SQUEEZE:
  case IR_CLS_UNSQUEEZE:
  case IR_CLS_TRANSPOSE:
  case IR_CLS_PERMUTE:
  case IR_CLS_CONCAT:
  case IR_CLS_SPLIT:
  case IR_CLS_SLICE:
  case IR_CLS_GATHER: return L_ELEMENTS;
  case IR_CLS_REDUCE:
  case IR_CLS_REDUCE_ARG:
  case IR_CLS_SOFTMAX:
  case IR_CLS_LAYER_NORM: return L_ROWS;
  case IR_CLS_MATMUL: return L_TILES;
  case IR_CLS_CUSTOM: return ew_custom(n) ? L_ELEMENTS : L_CUSTOM;
  default: return L_NONE;
  }
}

int jit_simt_lower_node(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  if (!n) return jit_fn_error(f, "no node to lower");
  const ir_op_info *info = ir_op_get(n->op);
  switch (info ? info->cls : IR_CLS_CONSTANT) {
  case IR_CLS_RESHAPE:
  case IR_CLS_SQUEEZE:
  case IR_CLS_UNSQUEEZE: return lower_flat_copy(sf);
  case IR_CLS_TRANSPOSE:
  case IR_CLS_PERMUTE: return lower_permute(sf);
  case IR_CLS_CONCAT:
  case IR_CLS_SPLIT: return lower_concat_split(sf);
  case IR_CLS_GATHER: return lower_gather(sf);
  case IR_CLS_SLICE: return lower_slice(sf);
  case IR_CLS_REDUCE:
  case IR_CLS_REDUCE_ARG: return lower_reduce(sf);
  case IR_CLS_SOFTMAX: return lower_softmax(sf);
  case IR_CLS_LAYER_NORM: return lower_layer_norm(sf);
  case IR_CLS_MATMUL: return lower_matmul(sf);
  case IR_CLS_CUSTOM: return ew_custom(n) ? lower_elementwise(sf) : jit_simt_lower_custom(sf);
  default: break;
  }
  if (shape_of(n) == L_ELEMENTS) return lower_elementwise(sf);
  return jit_fn_error(f, "mo.%s has no SIMT lowering yet", info ? info->name : "?");
}

static int eval(const ir_dim *d, const int64_t *syms, int64_t *v, char *err, size_t errlen) {
  ir_dim_err e = {0};
  if (!ir_dim_eval(d, syms, v, &e) || *v < 0) {
    snprintf(err, errlen, "a dim of the kernel does not evaluate under the binding");
    return -1;
  }
  return 0;
}

static int eval_span(const ir_type *t, int from, int to, const int64_t *syms, int64_t *out,
                     char *err, size_t errlen) {
  int64_t p = 1, v;
  for (int k = from; k < to; k++) {
    if (eval(t->dims[k], syms, &v, err, errlen) < 0) return -1;
    if (__builtin_mul_overflow(p, v, &p)) {
      snprintf(err, errlen, "element count overflows");
      return -1;
    }
  }
  *out = p;
  return 0;
}

int jit_simt_geometry(const ir_node *n, const int64_t *syms, jit_simt_dims *out, char *err,
                      size_t errlen) {
  memset(out, 0, sizeof *out);
  for (int k = 0; k < 3; k++) out->grid[k] = out->block[k] = 1;
  int64_t total = 0;
  switch (shape_of(n)) {
  case L_NONE: snprintf(err, errlen, "no SIMT kernel for this node"); return -1;
  case L_ELEMENTS: {
    const ir_type *t = n->op == IR_OP_SPLIT ? &n->in[0]->type : &n->out[0]->type;
    if (eval_span(t, 0, t->rank, syms, &total, err, errlen) < 0) return -1;
    int64_t blocks = (total + JIT_SIMT_BLOCK - 1) / JIT_SIMT_BLOCK;
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)(blocks > JIT_SIMT_MAX_GRID ? JIT_SIMT_MAX_GRID : blocks);
    return 0;
  }
  case L_ROWS: {
    const ir_type *xt = &n->in[0]->type;
    int axis = xt->rank - 1;
    if (n->op != IR_OP_LAYER_NORM &&
        !norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis)) {
      snprintf(err, errlen, "axis out of range");
      return -1;
    }
    int64_t outer, inner;
    if (eval_span(xt, 0, axis, syms, &outer, err, errlen) < 0 ||
        eval_span(xt, axis + 1, xt->rank, syms, &inner, err, errlen) < 0)
      return -1;
    if (__builtin_mul_overflow(outer, inner, &total) || total > INT32_MAX) {
      snprintf(err, errlen, "%lld rows do not fit one grid", (long long)total);
      return -1;
    }
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)total;
    out->shared_bytes = 2 * JIT_SIMT_BLOCK * 8;
    return 0;
  }
  case L_CUSTOM: {
    /* kiln/kernel.h: JIT_SIMT_BLOCK threads per block; simt_grid "elements"
     * (default): a block per JIT_SIMT_BLOCK elements of result 0, "rows": a
     * block per row of result 0; capped at JIT_SIMT_MAX_GRID */
    const ir_type *t = &n->out[0]->type;
    const char *grid = ir_node_attr_string(n, "simt_grid", "elements");
    bool rows = strcmp(grid, "rows") == 0;
    if (!rows && strcmp(grid, "elements") != 0) {
      snprintf(err, errlen, "simt_grid = \"%s\": expected \"elements\" or \"rows\"", grid);
      return -1;
    }
    if (eval_span(t, 0, rows && t->rank > 0 ? t->rank - 1 : t->rank, syms, &total, err,
                  errlen) < 0)
      return -1;
    int64_t blocks = rows ? total : (total + JIT_SIMT_BLOCK - 1) / JIT_SIMT_BLOCK, last = 1;
    if (rows && t->rank > 0 && eval(t->dims[t->rank - 1], syms, &last, err, errlen) < 0)
      return -1;
    if (last == 0) blocks = 0; /* rows of nothing: no work */
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)(blocks > JIT_SIMT_MAX_GRID ? JIT_SIMT_MAX_GRID : blocks);
    out->shared_bytes = JIT_SIMT_CUSTOM_SHARED;
    return 0;
  }
  case L_TILES: {
    const ir_type *at = &n->in[0]->type, *bt = &n->in[1]->type, *yt = &n->out[0]->type;
    int64_t M, N, nb;
    if (eval(at->dims[at->rank - 2], syms, &M, err, errlen) < 0 ||
        eval(bt->dims[bt->rank - 1], syms, &N, err, errlen) < 0 ||
        eval_span(yt, 0, yt->rank - 2, syms, &nb, err, errlen) < 0)
      return -1;
    int64_t gx = (N + TILE - 1) / TILE, gy = (M + TILE - 1) / TILE;
    if (gx > INT32_MAX || gy > JIT_SIMT_MAX_GRID || nb > JIT_SIMT_MAX_GRID) {
      snprintf(err, errlen, "matmul of %lld x %lld (batch %lld) does not fit one grid",
               (long long)M, (long long)N, (long long)nb);
      return -1;
    }
    out->block[0] = out->block[1] = TILE;
    out->grid[0] = (uint32_t)gx;
    out->grid[1] = (uint32_t)gy;
    out->grid[2] = (uint32_t)nb;
    ir_dtype dt = yt->dtype;
    out->shared_bytes = 2 * TILE * TILE * (dt == IR_DT_F32 || dt == IR_DT_F16 || dt == IR_DT_BF16 ? 4 : 8);
    return 0;
  }
  }
  return -1;
}
