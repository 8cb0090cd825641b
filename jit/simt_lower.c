/* simt_lower.c - the SIMT lowering of graph ops (simt.h): one kernel per
 * node, every block JIT_SIMT_BLOCK threads, in these shapes of launch:
 *   elements  grid-stride loop over the result's elements (elementwise ops,
 *             broadcast_to, reshape / squeeze / unsqueeze, transpose,
 *             permute, concat, split, slice_tensor, gather, band_part
 *             (band.c), gather_nd, gather_elements, tile, range (index.c),
 *             pad (pad.c), the pools (pool.c), conv2d (conv.c, direct),
 *             dequantize and qmatmul over GGUF blocks (simt_quant.c),
 *             and a mo.fused
 *             elementwise chain, simt_fused.c);
 *   rows      groups of threads per row of a reduction axis, sized to the
 *             row (simt_rows.c: sum, mean, max, min, argmax, argmin,
 *             softmax, logsoftmax, layer_norm);
 *   lines     one thread per line along an axis, walking it in order
 *             (scan.c: cumsum; sort.c: top_k, bottom_k, argsort);
 *   tiles     matmul: 16x16 output tiles, A and B tiles staged in shared
 *             memory, one block per tile and batch matrix; a mo.fused GEMM
 *             applies its epilogue to each output element (simt_fused.c);
 *   serial    one block whose first thread runs the whole node in order
 *             (index.c: the scatter family, whose updates must apply in
 *             index order; masked.c: masked_scatter, a running count);
 *   custom    mo.custom / mo.inplace_custom (custom.c): every thread calls
 *             the kernel library's function; grid by the simt_grid
 *             attribute (kiln/kernel.h). An elementwise custom kernel
 *             (marked kiln.elementwise) is an elementwise op instead: the
 *             elements loop calls its scalar function per element.
 * Dispatch goes through SIMT_RULES, one row per op class whose count and
 * order the compiler checks against ir/ops.def; a class without a lowering
 * (the sources) is refused by name. jit_simt_geometry gives the launch of
 * each under a symbol binding, from the same rows.
 *
 * Semantics follow the reference interpreter (ir/interp.c) and reuse the
 * CPU path's scalar code (jit_scalar_unary / binary / cast), so emulated
 * kernels agree with the CPU kernels element for element; the reductions
 * combine in a tree (not left to right), and float sums, softmax and
 * layer_norm are computed in double like the interpreter. matmul
 * accumulates in the element type (f32 in float, as GPUs do), f16 / bf16 in
 * float, integers in i64 (wrapping). Transcendental functions map to the
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

LLVMValueRef jit_simt_sreg64(jit_simt_fn *sf, jit_simt_sreg r, int dim) {
  return LLVMBuildZExt(sf->f.b, jit_simt_sreg_get(sf, r, dim), sf->f.t_i64, "");
}

bool jit_simt_norm_axis(int64_t a, int rank, int *out) {
  if (a < -rank || a >= rank) return false;
  *out = (int)(a < 0 ? a + rank : a);
  return true;
}

static LLVMValueRef numel(jit_fn *f, const ir_type *t) { return jit_numel_range(f, t, 0, t->rank); }

int jit_simt_each_element(jit_simt_fn *sf, jit_elem_fn elem, void *ud) {
  jit_fn *f = &sf->f;
  const ir_type *y = &f->node->out[0]->type;
  jit_simt_loop l;
  elem(f, ud, jit_simt_grid_loop_begin(sf, &l, numel(f, y)));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

void jit_simt_if_begin(jit_fn *f, jit_simt_if *ib, LLVMValueRef cond) {
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "then");
  ib->join = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "join");
  LLVMBuildCondBr(f->b, cond, then, ib->join);
  LLVMPositionBuilderAtEnd(f->b, then);
}

void jit_simt_if_end(jit_fn *f, jit_simt_if *ib) {
  LLVMBuildBr(f->b, ib->join);
  LLVMPositionBuilderAtEnd(f->b, ib->join);
}

void jit_simt_unravel(jit_fn *f, LLVMValueRef i, const LLVMValueRef *dims, int rank,
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

LLVMValueRef jit_simt_bcast_index(jit_fn *f, const ir_type *t, const ir_type *ot, int r,
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

LLVMValueRef jit_simt_ew_value(jit_fn *f, const ir_node *n, LLVMValueRef *v) {
  ir_dtype in0 = n->in[0]->type.dtype;
  /* gelu reads its attribute from f->node: point it at n */
  const ir_node *save = f->node;
  f->node = n;
  LLVMValueRef r;
  switch (ir_op_get(n->op)->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_UNARY_PRED:
  case IR_CLS_UNARY_LOGICAL: r = jit_scalar_unary(f, n->op, in0, v[0]); break;
  case IR_CLS_BINARY:
  case IR_CLS_COMPARE:
  case IR_CLS_BINARY_LOGICAL: r = jit_scalar_binary(f, n->op, in0, v[0], v[1]); break;
  case IR_CLS_WHERE: r = LLVMBuildSelect(f->b, v[0], v[1], v[2], ""); break;
  case IR_CLS_CAST: r = jit_scalar_cast(f, in0, n->out[0]->type.dtype, v[0]); break;
  default: r = v[0]; /* broadcast_to */
  }
  f->node = save;
  return r;
}

static bool ew_custom(const ir_node *n) {
  return n && n->op == IR_OP_CUSTOM && ir_node_attr_int(n, "kiln.elementwise", 0) != 0;
}

/* Elementwise ops, and an elementwise custom kernel (kiln/kernel.h
 * KILN_ELEMENTWISE_KERNEL: its scalar function called per element, linked
 * by custom.c). */
int jit_simt_serial(jit_simt_fn *sf, int (*body)(jit_fn *f)) {
  jit_simt_loop l;
  jit_simt_grid_loop_begin(sf, &l, jit_i64(&sf->f, 1));
  int rc = body(&sf->f);
  jit_simt_grid_loop_end(sf, &l);
  return rc;
}

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
  jit_simt_unravel(f, i, dims, r, coord);
  /* broadcast_to reads operand 0 only (a shape operand is read before the run) */
  int nin = ir_op_get(n->op)->cls == IR_CLS_BROADCAST_TO ? 1 : n->nin;
  for (int j = 0; j < nin; j++) {
    const ir_type *t = &n->in[j]->type;
    v[j] = jit_load(f, t->dtype, jit_in(f, j), jit_simt_bcast_index(f, t, ot, r, coord));
  }
  LLVMValueRef y = cfn ? jit_simt_custom_ew_call(f, cfn, n->nin, v) : jit_simt_ew_value(f, n, v);
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
  jit_simt_unravel(f, i, dims, ot->rank, coord);
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
    if (!jit_simt_norm_axis(ir_node_attr_int(n, "axis_1", 0), r, &a1) ||
        !jit_simt_norm_axis(ir_node_attr_int(n, "axis_2", 0), r, &a2))
      return jit_fn_error(f, "mo.transpose: axis out of range for rank %d", r);
    p.perm[a1] = a2;
    p.perm[a2] = a1;
  } else {
    const ir_attr *a = ir_node_attr(n, "dims");
    if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n != r)
      return jit_fn_error(f, "mo.permute: dims must list %d axes", r);
    for (int k = 0; k < r; k++)
      if (!jit_simt_norm_axis(a->u.ints.v[k], r, &p.perm[k]))
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
  if (!jit_simt_norm_axis(ir_node_attr_int(n, "axis", concat ? INT64_MIN : 0), wt->rank, &axis))
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

/* Index element j of mo.gather's indices, checked against the axis length d
 * (JIT_KERR_INDEX) and made non-negative. */
static LLVMValueRef gather_index(jit_fn *f, LLVMValueRef j, LLVMValueRef d) {
  const ir_type *it = &f->node->in[1]->type;
  LLVMValueRef iv = jit_load(f, it->dtype, jit_in(f, 1), j);
  iv = ir_dtype_is_signed(it->dtype) ? LLVMBuildSExt(f->b, iv, f->t_i64, "")
                                     : LLVMBuildZExt(f->b, iv, f->t_i64, "");
  if (LLVMTypeOf(iv) != f->t_i64) iv = LLVMBuildSExtOrBitCast(f->b, iv, f->t_i64, "");
  LLVMValueRef lo = LLVMBuildICmp(f->b, LLVMIntSLT, iv, LLVMBuildNeg(f->b, d, ""), "");
  LLVMValueRef hi = LLVMBuildICmp(f->b, LLVMIntSGE, iv, d, "");
  jit_fail_if(f, LLVMBuildOr(f->b, lo, hi, ""), JIT_KERR_INDEX);
  LLVMValueRef neg = LLVMBuildICmp(f->b, LLVMIntSLT, iv, i64v(f, 0), "");
  return LLVMBuildSelect(f->b, neg, LLVMBuildAdd(f->b, iv, d, ""), iv, "");
}

/* y = x[:axis] + idx + x[axis+1:]: y (o, j..., in) = x (o, idx[j], in). */
static LLVMValueRef gather_src(jit_simt_fn *sf, const LLVMValueRef *coord, void *ud) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  int axis = ((const gather_ud *)ud)->axis;
  const ir_type *xt = &n->in[0]->type, *it = &n->in[1]->type;
  LLVMValueRef j = i64v(f, 0);
  for (int k = 0; k < it->rank; k++)
    j = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, j, jit_dim(f, it->dims[k]), ""), coord[axis + k], "");
  LLVMValueRef iv = gather_index(f, j, jit_dim(f, xt->dims[axis]));
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
  if (jit_slice_layout(&sf->f, sf->f.node, &s.base, s.strides) < 0) return -1;
  return lower_gathered_copy(sf, 0, 0, slice_src, &s);
}

static int lower_gather(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  gather_ud g;
  if (!jit_simt_norm_axis(ir_node_attr_int(f->node, "axis", -1), f->node->in[0]->type.rank, &g.axis))
    return jit_fn_error(f, "mo.gather: axis out of range");
  /* A result empty for want of inner elements (the dims after axis) gathers
   * nothing, yet its indices are checked, as on the CPU, which checks them
   * once per outer row (jit_simt_geometry launches a thread per index then). */
  const ir_type *xt = &f->node->in[0]->type;
  LLVMValueRef outer = jit_numel_range(f, xt, 0, g.axis);
  LLVMValueRef ny = numel(f, &f->node->out[0]->type);
  LLVMValueRef none = LLVMBuildICmp(f->b, LLVMIntEQ, ny, i64v(f, 0), "");
  LLVMValueRef rows = LLVMBuildICmp(f->b, LLVMIntNE, outer, i64v(f, 0), "");
  LLVMValueRef empty_inner = LLVMBuildAnd(f->b, none, rows, "");
  jit_simt_if empty;
  jit_simt_if_begin(f, &empty, empty_inner);
  jit_simt_loop l;
  gather_index(f, jit_simt_grid_loop_begin(sf, &l, numel(f, &f->node->in[1]->type)),
               jit_dim(f, xt->dims[g.axis]));
  jit_simt_grid_loop_end(sf, &l);
  jit_simt_if_end(f, &empty);
  return lower_gathered_copy(sf, 0, 0, gather_src, &g);
}

/* ---- tiles: matmul ---- */

static LLVMValueRef acc_slot(jit_fn *f, LLVMTypeRef ty, LLVMValueRef init) {
  LLVMValueRef a = jit_alloca(f, ty, "acc");
  LLVMBuildStore(f->b, init, a);
  return a;
}

int jit_simt_lower_matmul(jit_simt_fn *sf, const ir_node *n, int a_buf, int b_buf,
                          jit_simt_epilogue_fn epi, void *ud) {
  jit_fn *f = &sf->f;
  if (!epi && (n->in[0]->type.rank == 1 || n->in[1]->type.rank == 1)) {
    ir_arena *ar = ir_arena_new(); /* a vector operand: its matrix view (ops.def) */
    jit_matmul_1d v;
    int rc = ar && jit_matmul_view(n, ar, &v)
                 ? jit_simt_lower_matmul(sf, &v.node, a_buf, b_buf, NULL, NULL)
                 : jit_fn_error(f, "out of memory");
    ir_arena_free(ar);
    return rc;
  }
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
  LLVMValueRef tx = jit_simt_sreg64(sf, JIT_SIMT_TID, 0), ty = jit_simt_sreg64(sf, JIT_SIMT_TID, 1);
  LLVMValueRef col = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, jit_simt_sreg64(sf, JIT_SIMT_CTAID, 0), i64v(f, TILE), ""), tx, "col");
  LLVMValueRef rowv = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, jit_simt_sreg64(sf, JIT_SIMT_CTAID, 1), i64v(f, TILE), ""), ty, "row");
  LLVMValueRef bi = jit_simt_sreg64(sf, JIT_SIMT_CTAID, 2);
  /* batch offsets (broadcast like the interpreter: whole matrices) */
  LLVMValueRef ydims[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, yt, ydims);
  jit_simt_unravel(f, bi, ydims, ry - 2, coord);
  ir_type ab = *at, bb = *bt, yb = *yt;
  ab.rank = ra - 2;
  bb.rank = rb - 2;
  yb.rank = ry - 2;
  LLVMValueRef ao = ry > 2 ? jit_simt_bcast_index(f, &ab, &yb, ry - 2, coord) : i64v(f, 0);
  LLVMValueRef bo = ry > 2 ? jit_simt_bcast_index(f, &bb, &yb, ry - 2, coord) : i64v(f, 0);
  ao = LLVMBuildMul(f->b, ao, LLVMBuildMul(f->b, M, K, ""), "");
  bo = LLVMBuildMul(f->b, bo, LLVMBuildMul(f->b, K, N, ""), "");
  LLVMValueRef yo = LLVMBuildMul(f->b, bi, LLVMBuildMul(f->b, M, N, ""), "");
  LLVMValueRef sh = jit_simt_shared(sf, 2ull * TILE * TILE * csz);
  LLVMValueRef shb = LLVMBuildInBoundsGEP2(f->b, ct, sh, (LLVMValueRef[]){i64v(f, TILE * TILE)}, 1, "");
  LLVMValueRef zero = fl ? LLVMConstReal(ct, 0) : LLVMConstInt(ct, 0, 0);
  LLVMValueRef acc = acc_slot(f, ct, zero);
  LLVMValueRef ntiles = LLVMBuildUDiv(f->b, LLVMBuildAdd(f->b, K, i64v(f, TILE - 1), ""), i64v(f, TILE), "");
  LLVMValueRef a = jit_in(f, a_buf), b = jit_in(f, b_buf), y = jit_out(f, 0);
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
    jit_simt_if ib;
    jit_simt_if_begin(f, &ib, ok);
    LLVMValueRef bidx = tb ? LLVMBuildAdd(f->b, LLVMBuildMul(f->b, col, K, ""), kk, "")
                           : LLVMBuildAdd(f->b, LLVMBuildMul(f->b, kk, N, ""), col, "");
    LLVMValueRef idx = which ? LLVMBuildAdd(f->b, bo, bidx, "")
                             : LLVMBuildAdd(f->b, ao, LLVMBuildAdd(f->b, LLVMBuildMul(f->b, rowv, K, ""), kk, ""), "");
    LLVMValueRef v = jit_load(f, dt, which ? b : a, idx);
    if (fl && LLVMTypeOf(v) != ct) v = LLVMBuildFPExt(f->b, v, ct, "");
    if (!fl && LLVMTypeOf(v) != ct)
      v = ir_dtype_is_signed(dt) ? LLVMBuildSExt(f->b, v, ct, "") : LLVMBuildZExt(f->b, v, ct, "");
    LLVMBuildStore(f->b, v, slot);
    jit_simt_if_end(f, &ib);
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
  jit_simt_if wb;
  jit_simt_if_begin(f, &wb, LLVMBuildAnd(f->b, in_m, in_n, ""));
  LLVMValueRef r = LLVMBuildLoad2(f->b, ct, acc, "");
  LLVMTypeRef et = jit_type(f, dt);
  if (fl && et != ct) r = jit_scalar_cast(f, ct == f->t_f64 ? IR_DT_F64 : IR_DT_F32, dt, r);
  if (!fl && et != ct) r = LLVMBuildTrunc(f->b, r, et, "");
  ir_dtype odt = dt;
  if (epi) {
    coord[ry - 2] = rowv;
    coord[ry - 1] = col;
    r = epi(sf, ud, r, coord);
    odt = f->node->out[0]->type.dtype;
  }
  jit_store(f, odt, y, LLVMBuildAdd(f->b, yo, LLVMBuildAdd(f->b, LLVMBuildMul(f->b, rowv, N, ""), col, ""), ""), r);
  jit_simt_if_end(f, &wb);
  return f->failed ? -1 : 0;
}

static int lower_matmul(jit_simt_fn *sf) { return jit_simt_lower_matmul(sf, sf->f.node, 0, 1, NULL, NULL); }

/* ---- dispatch and geometry ---- */

typedef enum launch_shape {
  L_NONE,
  L_ELEMENTS,
  L_ROWS,
  L_LINES,  /* grid-stride over the lines along an axis (outer * inner) */
  L_TILES,
  L_CUSTOM, /* elements for an elementwise custom kernel, else its simt_grid */
  L_FUSED,  /* tiles for a GEMM with an epilogue, else elements */
  L_SERIAL, /* one block; its first thread does the whole node (scatter) */
} launch_shape;

static int lower_custom(jit_simt_fn *sf) {
  return ew_custom(sf->f.node) ? lower_elementwise(sf) : jit_simt_lower_custom(sf);
}

/* The SIMT lowering per op class: one row per class of ir/ops.def, in its
 * CLS order (both checked at compile time below), with the launch shape
 * and the lowering; a NULL lowering: the class has none (sources, whose
 * values the runtime supplies), and loading such a node says so. */
#define SIMT_RULES(X)                                   \
  X(UNARY, L_ELEMENTS, lower_elementwise)               \
  X(UNARY_FLOAT, L_ELEMENTS, lower_elementwise)         \
  X(UNARY_PRED, L_ELEMENTS, lower_elementwise)          \
  X(UNARY_LOGICAL, L_ELEMENTS, lower_elementwise)       \
  X(BINARY, L_ELEMENTS, lower_elementwise)              \
  X(COMPARE, L_ELEMENTS, lower_elementwise)             \
  X(BINARY_LOGICAL, L_ELEMENTS, lower_elementwise)      \
  X(WHERE, L_ELEMENTS, lower_elementwise)               \
  X(CAST, L_ELEMENTS, lower_elementwise)                \
  X(CONSTANT, L_NONE, NULL)                             \
  X(CONSTANT_EXTERNAL, L_NONE, NULL)                    \
  X(MATMUL, L_TILES, lower_matmul)                      \
  X(REDUCE, L_ROWS, jit_simt_lower_reduce)              \
  X(REDUCE_ARG, L_ROWS, jit_simt_lower_reduce)          \
  X(SOFTMAX, L_ROWS, jit_simt_lower_softmax)            \
  X(LAYER_NORM, L_ROWS, jit_simt_lower_layer_norm)      \
  X(RESHAPE, L_ELEMENTS, lower_flat_copy)               \
  X(TRANSPOSE, L_ELEMENTS, lower_permute)               \
  X(PERMUTE, L_ELEMENTS, lower_permute)                 \
  X(BROADCAST_TO, L_ELEMENTS, lower_elementwise)        \
  X(CONCAT, L_ELEMENTS, lower_concat_split)             \
  X(SPLIT, L_ELEMENTS, lower_concat_split)              \
  X(SLICE, L_ELEMENTS, lower_slice)                     \
  X(SQUEEZE, L_ELEMENTS, lower_flat_copy)               \
  X(UNSQUEEZE, L_ELEMENTS, lower_flat_copy)             \
  X(GATHER, L_ELEMENTS, lower_gather)                   \
  X(FUSED, L_FUSED, jit_simt_lower_fused)               \
  X(CUSTOM, L_CUSTOM, lower_custom)                     \
  X(SCAN, L_LINES, jit_simt_lower_scan)                 \
  X(BAND_PART, L_ELEMENTS, jit_simt_lower_band_part)   \
  X(GATHER_INDEX, L_ELEMENTS, jit_simt_lower_gather_index) \
  X(SCATTER, L_SERIAL, jit_simt_lower_scatter)          \
  X(TILE, L_ELEMENTS, jit_simt_lower_tile)              \
  X(RANGE, L_ELEMENTS, jit_simt_lower_range)          \
  X(PAD, L_ELEMENTS, jit_simt_lower_pad)                  \
  X(POOL, L_ELEMENTS, jit_simt_lower_pool)                \
  X(CONV, L_ELEMENTS, jit_simt_lower_conv)              \
  X(SORT, L_LINES, jit_simt_lower_sort)                 \
  X(RESIZE, L_ELEMENTS, jit_simt_lower_resize)              \
  X(FOLD, L_ELEMENTS, jit_simt_lower_fold)                 \
  X(ROI_ALIGN, L_ELEMENTS, jit_simt_lower_roi_align)        \
  X(RANDOM, L_ELEMENTS, jit_simt_lower_random)              \
  X(PRINT, L_ELEMENTS, jit_simt_lower_print)              \
  X(NONZERO, L_SERIAL, jit_simt_lower_nonzero)          \
  X(NMS, L_SERIAL, jit_simt_lower_nms)                  \
  X(MASKED_SCATTER, L_SERIAL, jit_simt_lower_masked_scatter) \
  X(SHAPE_TO_TENSOR, L_ELEMENTS, jit_simt_lower_shape_to_tensor) \
  X(SLICE_DATA, L_ELEMENTS, jit_simt_lower_slice_data)        \
  X(REPEAT, L_ELEMENTS, jit_simt_lower_repeat)        \
  X(DEQUANTIZE, L_ELEMENTS, jit_simt_lower_dequantize)  \
  X(QMATMUL, L_ELEMENTS, jit_simt_lower_qmatmul) \
  X(BUFFER, L_NONE, NULL) \
  X(CONTROL, L_NONE, NULL) \
  X(MATMUL_INTEGER, L_ELEMENTS, jit_simt_lower_matmul_integer) \
  X(FFT, L_ELEMENTS, jit_simt_lower_fft)

typedef struct simt_rule {
  launch_shape shape;
  int (*lower)(jit_simt_fn *sf);
} simt_rule;

#define RULE_ROW(cls, shape, fn) {shape, fn},
static const simt_rule rules[] = {SIMT_RULES(RULE_ROW)};
#undef RULE_ROW
_Static_assert(sizeof rules / sizeof *rules == IR_CLS_COUNT,
               "jit/simt_lower.c: SIMT_RULES needs one row per op class of ir/ops.def");
#define RULE_POS(cls, shape, fn) RULE_POS_##cls,
enum { SIMT_RULES(RULE_POS) };
#undef RULE_POS
#define RULE_ORDER(cls, shape, fn)                                                                 \
  _Static_assert((int)RULE_POS_##cls == (int)IR_CLS_##cls, "jit/simt_lower.c: SIMT_RULES row " #cls          \
                                                 " is out of ir/ops.def's class order");
SIMT_RULES(RULE_ORDER)
#undef RULE_ORDER

static const simt_rule *rule_of(const ir_node *n) {
  const ir_op_info *info = n ? ir_op_get(n->op) : NULL;
  if (!info || (unsigned)info->cls >= IR_CLS_COUNT) return NULL;
  return &rules[info->cls];
}

static launch_shape shape_of(const ir_node *n) {
  const simt_rule *r = rule_of(n);
  if (!r || !r->lower) return L_NONE;
  switch (r->shape) {
  case L_CUSTOM: return ew_custom(n) ? L_ELEMENTS : L_CUSTOM;
  case L_FUSED: return ir_node_matmul(n) ? L_TILES : L_ELEMENTS;
  default: return r->shape;
  }
}

int jit_simt_check_node(const ir_node *n, char *err, size_t errlen) {
  const ir_op_info *info = n ? ir_op_get(n->op) : NULL;
  if (!info) {
    snprintf(err, errlen, "no op to lower");
    return -1;
  }
  const simt_rule *r = rule_of(n);
  if (!r || !r->lower) {
    snprintf(err, errlen, "mo.%s has no SIMT lowering", info->name);
    return -1;
  }
  if (info->cls == IR_CLS_FUSED) return jit_simt_check_fused(n, err, errlen);
  if (info->cls == IR_CLS_MATMUL && ir_node_attr_int(n, "kiln.packed_b", 0)) {
    snprintf(err, errlen, "mo.matmul: kiln.packed_b is not supported on SIMT targets");
    return -1;
  }
  return 0;
}

bool jit_simt_can_lower(const ir_node *n) {
  char err[256];
  return jit_simt_check_node(n, err, sizeof err) == 0;
}

int jit_simt_lower_node(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  char err[512];
  if (jit_simt_check_node(f->node, err, sizeof err) < 0) return jit_fn_error(f, "%s", err);
  return rule_of(f->node)->lower(sf);
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
  if (n->op == IR_OP_MUTABLE_STORE_SLICE) { /* simt_buffer.c: the stored tensor's elements */
    const ir_type *t = &n->in[1]->type;
    if (eval_span(t, 0, t->rank, syms, &total, err, errlen) < 0) return -1;
    int64_t blocks = total ? (total + JIT_SIMT_BLOCK - 1) / JIT_SIMT_BLOCK : 1; /* checks start */
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)(blocks > JIT_SIMT_MAX_GRID ? JIT_SIMT_MAX_GRID : blocks);
    return 0;
  }
  switch (shape_of(n)) {
  case L_NONE:
  case L_FUSED: /* shape_of resolves it */
    if (jit_simt_check_node(n, err, errlen) == 0) snprintf(err, errlen, "no SIMT kernel for this node");
    return -1;
  case L_ELEMENTS: {
    const ir_type *t = n->op == IR_OP_SPLIT ? &n->in[0]->type : &n->out[0]->type;
    if (eval_span(t, 0, t->rank, syms, &total, err, errlen) < 0) return -1;
    /* an empty gather still checks its indices (lower_gather); an empty
     * range its step */
    if (total == 0 && n->op == IR_OP_GATHER &&
        eval_span(&n->in[1]->type, 0, n->in[1]->type.rank, syms, &total, err, errlen) < 0)
      return -1;
    if (total == 0 && n->op == IR_OP_RANGE) total = 1;
    int64_t blocks = (total + JIT_SIMT_BLOCK - 1) / JIT_SIMT_BLOCK;
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)(blocks > JIT_SIMT_MAX_GRID ? JIT_SIMT_MAX_GRID : blocks);
    return 0;
  }
  case L_SERIAL:
    out->block[0] = JIT_SIMT_BLOCK;
    return 0;
  case L_ROWS: {
    const ir_type *xt = &n->in[0]->type;
    int axis = xt->rank - 1;
    if (n->op != IR_OP_LAYER_NORM &&
        !jit_simt_norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis)) {
      snprintf(err, errlen, "axis out of range");
      return -1;
    }
    int64_t outer, inner, len;
    if (eval_span(xt, 0, axis, syms, &outer, err, errlen) < 0 ||
        eval_span(xt, axis + 1, xt->rank, syms, &inner, err, errlen) < 0 ||
        eval(xt->dims[axis], syms, &len, err, errlen) < 0)
      return -1;
    /* JIT_SIMT_BLOCK / G rows per block, G threads per row (simt_rows.c) */
    int64_t per_block = JIT_SIMT_BLOCK / jit_simt_row_threads(len);
    if (__builtin_mul_overflow(outer, inner, &total) ||
        (total + per_block - 1) / per_block > INT32_MAX) {
      snprintf(err, errlen, "%lld rows do not fit one grid", (long long)total);
      return -1;
    }
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)((total + per_block - 1) / per_block);
    out->shared_bytes = 2 * JIT_SIMT_BLOCK * 8;
    return 0;
  }
  case L_LINES: { /* scan.c, sort.c: one thread per line outside the axis */
    const ir_type *xt = &n->in[0]->type;
    int axis;
    int64_t outer, inner;
    const ir_attr *ax = ir_node_attr_or_default(n, "axis"); /* argsort's default is 0 */
    if (!ax || !jit_simt_norm_axis(ax->u.i, xt->rank, &axis)) {
      snprintf(err, errlen, "axis out of range");
      return -1;
    }
    if (eval_span(xt, 0, axis, syms, &outer, err, errlen) < 0 ||
        eval_span(xt, axis + 1, xt->rank, syms, &inner, err, errlen) < 0)
      return -1;
    if (__builtin_mul_overflow(outer, inner, &total)) {
      snprintf(err, errlen, "element count overflows");
      return -1;
    }
    int64_t blocks = (total + JIT_SIMT_BLOCK - 1) / JIT_SIMT_BLOCK;
    out->block[0] = JIT_SIMT_BLOCK;
    out->grid[0] = (uint32_t)(blocks > JIT_SIMT_MAX_GRID ? JIT_SIMT_MAX_GRID : blocks);
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
    const ir_node *mm = ir_node_matmul(n); /* n, or the GEMM of a fused body */
    const ir_type *at = &mm->in[0]->type, *bt = &mm->in[1]->type, *yt = &mm->out[0]->type;
    bool tb = ir_node_attr_int(mm, "kiln.transpose_b", 0) != 0; /* B is [..., N, K] */
    /* a vector operand is one row (a) or one column (b), its dim dropped from y */
    int ma = at->rank >= 2, mb = bt->rank >= 2;
    int64_t M = 1, N = 1, nb;
    if ((ma && eval(at->dims[at->rank - 2], syms, &M, err, errlen) < 0) ||
        (mb && eval(bt->dims[bt->rank - (tb ? 2 : 1)], syms, &N, err, errlen) < 0) ||
        eval_span(yt, 0, yt->rank - ma - mb, syms, &nb, err, errlen) < 0)
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
