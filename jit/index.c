/* index.c - lowering of the indexing classes for the host and for SIMT
 * targets: gather_nd / gather_elements, the scatter family, tile, range
 * (ops.def documents them; ir/interp_index.c is their meaning).
 *
 * Each op is one routine per result element (or per update) shared by both
 * targets: the host runs it in loops whose outer range is split between the
 * parts (jit_split_range), SIMT in a grid-stride loop over the elements.
 * gather_nd on the host copies slices of whole 64-byte lines a line at a
 * time, prefetching rows ahead (copy_rows). Scatter is order-dependent (a
 * repeated index: the last update wins, or combines in row-major order), so
 * it never splits: the host runs it whole in part 0 and SIMT in one thread,
 * after copying the input to the result.
 * Indices are loaded as i64 (sign-extended), wrapped once when negative and
 * checked against the axis before any element is read or written: outside
 * [-d, d) the kernel returns JIT_KERR_INDEX (a SIMT thread sets the error
 * word). range returns JIT_KERR_RANGE when step is 0 or the declared length
 * differs from the one start, stop and step give.
 * Assumes a verified node whose run-time shape checks have passed. */
#include "jit.h"
#include "lower.h"
#include "simt.h"

static LLVMValueRef ld_index(jit_fn *f, const ir_type *it, LLVMValueRef i) {
  return LLVMBuildSExt(f->b, jit_load(f, it->dtype, jit_in(f, 1), i), f->t_i64, "");
}

/* v wrapped into [0, d), failing outside [-d, d). */
static LLVMValueRef wrap_index(jit_fn *f, LLVMValueRef v, LLVMValueRef d) {
  LLVMValueRef neg = LLVMBuildICmp(f->b, LLVMIntSLT, v, jit_i64(f, 0), "");
  v = LLVMBuildSelect(f->b, neg, LLVMBuildAdd(f->b, v, d, ""), v, "");
  /* unsigned: also catches what is still negative */
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntUGE, v, d, ""), JIT_KERR_INDEX);
  return v;
}

static int norm_axis(jit_fn *f, int rank, int *ax) {
  if (!jit_simt_norm_axis(ir_node_attr_int(f->node, "axis", -1), rank, ax))
    return jit_fn_error(f, "mo.%s: axis out of range for rank %d", ir_op_get(f->node->op)->name,
                        rank);
  return 0;
}

/* ---- gather_nd ---- */

typedef struct gnd {
  int b, k, q;
  LLVMValueRef inner, tuples, block;
} gnd;

static int gnd_setup(jit_fn *f, gnd *g) {
  const ir_type *x = &f->node->in[0]->type, *it = &f->node->in[1]->type;
  int64_t k;
  g->b = (int)ir_node_attr_int(f->node, "batch_dims", 0);
  g->q = it->rank;
  if (g->q < 1 || !ir_dim_is_const(it->dims[g->q - 1], &k) || g->b < 0 || g->b + k > x->rank)
    return jit_fn_error(f, "mo.gather_nd: malformed node");
  g->k = (int)k;
  g->inner = jit_numel_range(f, x, g->b + g->k, x->rank);
  g->tuples = jit_numel_range(f, it, g->b, g->q - 1);
  g->block = jit_numel_range(f, x, g->b, g->b + g->k); /* index tuples per batch */
  return 0;
}

/* Element offset in the input of index tuple t (a flat position over the
 * indices' leading dims), before the slice's inner offset. */
static LLVMValueRef tuple_base(jit_fn *f, const gnd *g, LLVMValueRef t, bool check) {
  const ir_type *x = &f->node->in[0]->type, *it = &f->node->in[1]->type;
  LLVMValueRef bi = LLVMBuildUDiv(f->b, t, g->tuples, ""); /* tuples > 0 when t exists */
  LLVMValueRef off = jit_mul(f, bi, g->block);
  LLVMValueRef pos = jit_i64(f, 0);
  for (int m = 0; m < g->k; m++) {
    LLVMValueRef d = jit_dim(f, x->dims[g->b + m]);
    LLVMValueRef v = ld_index(f, it, jit_add(f, jit_mul(f, t, jit_i64(f, g->k)), jit_i64(f, m)));
    if (check) {
      v = wrap_index(f, v, d);
    } else {
      LLVMValueRef neg = LLVMBuildICmp(f->b, LLVMIntSLT, v, jit_i64(f, 0), "");
      v = LLVMBuildSelect(f->b, neg, LLVMBuildAdd(f->b, v, d, ""), v, "");
    }
    pos = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, pos, d, ""), v, "");
  }
  return LLVMBuildMul(f->b, LLVMBuildAdd(f->b, off, pos, ""), g->inner, "");
}

static LLVMValueRef gnd_base(jit_fn *f, const gnd *g, LLVMValueRef t) {
  return tuple_base(f, g, t, true);
}

/* Rows of whole 64-byte lines (a constant slice size): tuple t + AHEAD's
 * row is prefetched line by line while row t is copied a line at a time,
 * with non-temporal stores when the result is at least NT_BYTES (it would
 * not stay in cache: the stores then skip the read of each result line).
 * On [65536, 256] f32 rows picked at random (a C replica of the loop, in
 * triad units): memcpy per row ~0.5x, prefetching alone ~0.6x,
 * non-temporal stores alone ~0.35x, both with 4 to 8 rows ahead ~0.8x. */
enum { AHEAD = 6, NT_BYTES = 8 << 20 };

static void copy_rows(jit_fn *f, const gnd *g, LLVMValueRef lo, LLVMValueRef hi, int64_t lines,
                      bool nt) {
  LLVMTypeRef vt = LLVMVectorType(f->t_i64, 8);
  LLVMValueRef last = LLVMBuildSub(f->b, hi, jit_i64(f, 1), ""), bytes = jit_i64(f, 64 * lines);
  size_t sz = ir_dtype_size(f->node->out[0]->type.dtype);
  unsigned ntk = LLVMGetMDKindIDInContext(f->ctx, "nontemporal", 11);
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(f->t_i32, 1, 0));
  LLVMValueRef ntmd = LLVMMetadataAsValue(f->ctx, LLVMMDNodeInContext2(f->ctx, &one, 1));
  jit_loop T;
  LLVMValueRef t = jit_loop_begin(f, &T, lo, hi, "t");
  /* the row AHEAD tuples on (the last one near the end): its address is not
   * checked, a prefetch never faults */
  LLVMValueRef tn = jit_add(f, t, jit_i64(f, AHEAD));
  tn = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, tn, last, ""), last, tn, "");
  LLVMValueRef pbyte = LLVMBuildMul(f->b, tuple_base(f, g, tn, false), jit_i64(f, (int64_t)sz), "");
  LLVMValueRef src = jit_mul(f, gnd_base(f, g, t), jit_i64(f, (int64_t)sz));
  LLVMValueRef dst = jit_mul(f, t, bytes);
  for (int64_t l = 0; l < lines; l++) {
    LLVMValueRef o = LLVMBuildAdd(f->b, pbyte, jit_i64(f, 64 * l), "");
    LLVMValueRef a[4] = {LLVMBuildGEP2(f->b, f->t_i8, jit_in(f, 0), &o, 1, ""),
                         LLVMConstInt(f->t_i32, 0, 0), LLVMConstInt(f->t_i32, 3, 0),
                         LLVMConstInt(f->t_i32, 1, 0)};
    jit_intrinsic(f, "llvm.prefetch", f->t_ptr, a, 4);
  }
  for (int64_t l = 0; l < lines; l++) {
    LLVMValueRef si = jit_add(f, src, jit_i64(f, 64 * l)), di = jit_add(f, dst, jit_i64(f, 64 * l));
    LLVMValueRef v = LLVMBuildLoad2(
        f->b, vt, LLVMBuildInBoundsGEP2(f->b, f->t_i8, jit_in(f, 0), &si, 1, ""), "");
    LLVMSetAlignment(v, (unsigned)sz);
    LLVMValueRef st =
        LLVMBuildStore(f->b, v, LLVMBuildInBoundsGEP2(f->b, f->t_i8, jit_out(f, 0), &di, 1, ""));
    LLVMSetAlignment(st, nt ? 64 : (unsigned)sz);
    if (nt) LLVMSetMetadata(st, ntk, ntmd);
  }
  jit_loop_end_rolled(f, &T);
}

static int host_gather_nd(jit_fn *f) {
  gnd g;
  if (gnd_setup(f, &g) != 0) return -1;
  const ir_type *it = &f->node->in[1]->type, *y = &f->node->out[0]->type;
  LLVMValueRef lo, hi;
  jit_split_range(f, jit_numel_range(f, it, 0, g.q - 1), &lo, &hi);
  size_t sz = ir_dtype_size(y->dtype);
  int64_t inner;
  if (LLVMIsAConstantInt(g.inner) && (inner = LLVMConstIntGetSExtValue(g.inner)) > 0 &&
      (inner * (int64_t)sz) % 64 == 0) {
    /* non-temporal stores want the result 64-byte aligned (each row then is) */
    LLVMValueRef big = LLVMBuildAnd(
        f->b,
        LLVMBuildICmp(f->b, LLVMIntSGE, jit_mul(f, jit_numel_range(f, y, 0, y->rank),
                                                 jit_i64(f, (int64_t)sz)),
                      jit_i64(f, NT_BYTES), ""),
        LLVMBuildICmp(f->b, LLVMIntEQ,
                      LLVMBuildAnd(f->b, LLVMBuildPtrToInt(f->b, jit_out(f, 0), f->t_i64, ""),
                                   jit_i64(f, 63), ""),
                      jit_i64(f, 0), ""),
        "");
    LLVMBasicBlockRef ntb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "nt");
    LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "plain");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "rows.done");
    LLVMBuildCondBr(f->b, big, ntb, plain);
    LLVMPositionBuilderAtEnd(f->b, ntb);
    copy_rows(f, &g, lo, hi, inner * (int64_t)sz / 64, true);
    /* non-temporal stores are weakly ordered: visible before the kernel
     * returns (and its part is counted done) */
    LLVMBuildFence(f->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, plain);
    copy_rows(f, &g, lo, hi, inner * (int64_t)sz / 64, false);
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, done);
    return f->failed ? -1 : 0;
  }
  jit_loop T, I;
  LLVMValueRef t = jit_loop_begin(f, &T, lo, hi, "t");
  LLVMValueRef src = gnd_base(f, &g, t), dst = jit_mul(f, t, g.inner);
  LLVMValueRef i = jit_loop_begin(f, &I, jit_i64(f, 0), g.inner, "i");
  jit_store(f, y->dtype, jit_out(f, 0), jit_add(f, dst, i),
            jit_load(f, y->dtype, jit_in(f, 0), jit_add(f, src, i)));
  jit_loop_end(f, &I);
  jit_loop_end(f, &T);
  return f->failed ? -1 : 0;
}

/* ---- per-element sources: gather_elements, tile, gather_nd on SIMT ---- */

/* The input element that result element e (coordinates c) reads. */
static LLVMValueRef elem_src(jit_fn *f, const gnd *g, int ax, LLVMValueRef e, LLVMValueRef *c) {
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type;
  if (n->op == IR_OP_GATHER_ND) {
    LLVMValueRef t = LLVMBuildUDiv(f->b, e, g->inner, ""); /* inner > 0 when e exists */
    return jit_add(f, gnd_base(f, g, t), LLVMBuildURem(f->b, e, g->inner, ""));
  }
  LLVMValueRef src = jit_i64(f, 0);
  for (int a = 0; a < x->rank; a++) {
    LLVMValueRef d = jit_dim(f, x->dims[a]), ca = c[a];
    if (n->op == IR_OP_TILE)
      ca = LLVMBuildURem(f->b, ca, d, ""); /* d > 0 when the result has elements */
    else if (a == ax)
      ca = wrap_index(f, ld_index(f, &n->in[1]->type, e), d);
    src = jit_add(f, jit_mul(f, src, d), ca);
  }
  return src;
}

static int elem_setup(jit_fn *f, gnd *g, int *ax) {
  *ax = -1;
  if (f->node->op == IR_OP_GATHER_ND) return gnd_setup(f, g);
  if (f->node->op == IR_OP_GATHER_ELEMENTS) return norm_axis(f, f->node->in[0]->type.rank, ax);
  return 0;
}

static void elem_body(jit_fn *f, const gnd *g, int ax, LLVMValueRef e) {
  const ir_type *y = &f->node->out[0]->type;
  LLVMValueRef dims[IR_MAX_RANK], c[IR_MAX_RANK];
  if (f->node->op != IR_OP_GATHER_ND) {
    jit_shape(f, y, dims);
    jit_simt_unravel(f, e, dims, y->rank, c);
  }
  LLVMValueRef s = elem_src(f, g, ax, e, c);
  jit_store(f, y->dtype, jit_out(f, 0), e, jit_load(f, y->dtype, jit_in(f, 0), s));
}

static int host_elements(jit_fn *f) {
  gnd g;
  int ax;
  if (elem_setup(f, &g, &ax) != 0) return -1;
  const ir_type *y = &f->node->out[0]->type;
  LLVMValueRef lo, hi;
  jit_split_range(f, jit_numel_range(f, y, 0, y->rank), &lo, &hi);
  jit_loop E;
  elem_body(f, &g, ax, jit_loop_begin(f, &E, lo, hi, "e"));
  jit_loop_end(f, &E);
  return f->failed ? -1 : 0;
}

int jit_lower_gather_index(jit_fn *f) {
  return f->node->op == IR_OP_GATHER_ND ? host_gather_nd(f) : host_elements(f);
}

int jit_lower_tile(jit_fn *f) { return host_elements(f); }

static int simt_elements(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  gnd g;
  int ax;
  if (elem_setup(f, &g, &ax) != 0) return -1;
  const ir_type *y = &f->node->out[0]->type;
  jit_simt_loop l;
  elem_body(f, &g, ax, jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, y, 0, y->rank)));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_gather_index(jit_simt_fn *sf) { return simt_elements(sf); }
int jit_simt_lower_tile(jit_simt_fn *sf) { return simt_elements(sf); }

/* ---- scatter ---- */

static ir_op combine_op(ir_op op) {
  switch (op) {
  case IR_OP_SCATTER_ADD: case IR_OP_SCATTER_ND_ADD: return IR_OP_ADD;
  case IR_OP_SCATTER_MUL: case IR_OP_SCATTER_ND_MUL: return IR_OP_MUL;
  case IR_OP_SCATTER_MAX: case IR_OP_SCATTER_ND_MAX: return IR_OP_MAX;
  case IR_OP_SCATTER_MIN: case IR_OP_SCATTER_ND_MIN: return IR_OP_MIN;
  default: return IR_OP_SCATTER;
  }
}

/* result[yi] = updates[ui], or combined with it. */
static void scatter_apply(jit_fn *f, ir_op op, ir_dtype dt, LLVMValueRef yi, LLVMValueRef ui) {
  LLVMValueRef u = jit_load(f, dt, jit_in(f, 1), ui);
  if (op != IR_OP_SCATTER) u = jit_scalar_binary(f, op, dt, jit_load(f, dt, jit_out(f, 0), yi), u);
  jit_store(f, dt, jit_out(f, 0), yi, u);
}

/* The result starts as a copy of the input. A result of NT_BYTES or more
 * whose start is 64-byte aligned is written a line at a time with
 * non-temporal stores: it would not stay in cache for the updates anyway,
 * and the stores then skip reading each result line first; the rest, byte
 * by byte. Else one element at a time (LLVM vectorizes the loop). */
static void scatter_copy(jit_fn *f, ir_dtype dt, LLVMValueRef numel) {
  size_t sz = ir_dtype_size(dt);
  LLVMValueRef bytes = jit_mul(f, numel, jit_i64(f, (int64_t)sz)), X = jit_in(f, 0);
  LLVMValueRef Y = jit_out(f, 0), zero = jit_i64(f, 0);
  LLVMValueRef aligned = LLVMBuildICmp(
      f->b, LLVMIntEQ, LLVMBuildAnd(f->b, LLVMBuildPtrToInt(f->b, Y, f->t_i64, ""),
                                    jit_i64(f, 63), ""), zero, "");
  LLVMValueRef big = LLVMBuildAnd(
      f->b, aligned, LLVMBuildICmp(f->b, LLVMIntSGE, bytes, jit_i64(f, NT_BYTES), ""), "");
  LLVMBasicBlockRef ntb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "nt");
  LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "plain");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "copy.done");
  LLVMBuildCondBr(f->b, big, ntb, plain);
  LLVMPositionBuilderAtEnd(f->b, ntb);
  LLVMTypeRef vt = LLVMVectorType(f->t_i64, 8);
  unsigned ntk = LLVMGetMDKindIDInContext(f->ctx, "nontemporal", 11);
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(f->t_i32, 1, 0));
  LLVMValueRef ntmd = LLVMMetadataAsValue(f->ctx, LLVMMDNodeInContext2(f->ctx, &one, 1));
  LLVMValueRef lines = LLVMBuildUDiv(f->b, bytes, jit_i64(f, 64), "");
  jit_loop L, T, C;
  LLVMValueRef o = jit_mul(f, jit_loop_begin(f, &L, zero, lines, "line"), jit_i64(f, 64));
  LLVMValueRef v = LLVMBuildLoad2(f->b, vt, LLVMBuildInBoundsGEP2(f->b, f->t_i8, X, &o, 1, ""), "");
  LLVMSetAlignment(v, (unsigned)sz);
  LLVMValueRef st = LLVMBuildStore(f->b, v, LLVMBuildInBoundsGEP2(f->b, f->t_i8, Y, &o, 1, ""));
  LLVMSetAlignment(st, 64);
  LLVMSetMetadata(st, ntk, ntmd);
  jit_loop_end(f, &L);
  /* weakly ordered: visible before the updates read the result back */
  LLVMBuildFence(f->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
  LLVMValueRef t = jit_loop_begin(f, &T, jit_mul(f, lines, jit_i64(f, 64)), bytes, "tail");
  LLVMValueRef byte =
      LLVMBuildLoad2(f->b, f->t_i8, LLVMBuildInBoundsGEP2(f->b, f->t_i8, X, &t, 1, ""), "");
  LLVMBuildStore(f->b, byte, LLVMBuildInBoundsGEP2(f->b, f->t_i8, Y, &t, 1, ""));
  jit_loop_end(f, &T);
  LLVMBuildBr(f->b, done);
  LLVMPositionBuilderAtEnd(f->b, plain);
  LLVMValueRef e = jit_loop_begin(f, &C, zero, numel, "c");
  jit_store(f, dt, Y, e, jit_load(f, dt, X, e));
  jit_loop_end(f, &C);
  LLVMBuildBr(f->b, done);
  LLVMPositionBuilderAtEnd(f->b, done);
}

/* The whole scatter, in order (the caller runs it once); host: through
 * scatter_copy, else an element at a time. */
static int scatter_body(jit_fn *f, bool host) {
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type, *u = &n->in[1]->type, *it = &n->in[2]->type;
  ir_dtype dt = x->dtype;
  ir_op op = combine_op(n->op);
  jit_loop C, U, I;
  LLVMValueRef numel = jit_numel_range(f, x, 0, x->rank);
  if (host) {
    scatter_copy(f, dt, numel);
  } else {
    LLVMValueRef e = jit_loop_begin(f, &C, jit_i64(f, 0), numel, "c");
    jit_store(f, dt, jit_out(f, 0), e, jit_load(f, dt, jit_in(f, 0), e));
    jit_loop_end(f, &C);
  }
  if (n->op >= IR_OP_SCATTER_ND && n->op <= IR_OP_SCATTER_ND_MIN) {
    int64_t k;
    if (it->rank < 1 || !ir_dim_is_const(it->dims[it->rank - 1], &k) || k < 1 || k > x->rank)
      return jit_fn_error(f, "mo.%s: malformed node", ir_op_get(n->op)->name);
    LLVMValueRef inner = jit_numel_range(f, x, (int)k, x->rank);
    LLVMValueRef j = jit_loop_begin(f, &U, jit_i64(f, 0), jit_numel_range(f, it, 0, it->rank - 1), "j");
    LLVMValueRef pos = jit_i64(f, 0);
    for (int m = 0; m < k; m++) {
      LLVMValueRef d = jit_dim(f, x->dims[m]);
      LLVMValueRef idx = LLVMBuildSExt(
          f->b, jit_load(f, it->dtype, jit_in(f, 2), jit_add(f, jit_mul(f, j, jit_i64(f, k)), jit_i64(f, m))),
          f->t_i64, "");
      pos = jit_add(f, jit_mul(f, pos, d), wrap_index(f, idx, d));
    }
    LLVMValueRef i = jit_loop_begin(f, &I, jit_i64(f, 0), inner, "i");
    scatter_apply(f, op, dt, jit_add(f, jit_mul(f, pos, inner), i),
                  jit_add(f, jit_mul(f, j, inner), i));
    jit_loop_end(f, &I);
    jit_loop_end(f, &U);
    return f->failed ? -1 : 0;
  }
  int ax;
  if (norm_axis(f, x->rank, &ax) != 0) return -1;
  LLVMValueRef dims[IR_MAX_RANK], c[IR_MAX_RANK];
  jit_shape(f, it, dims);
  LLVMValueRef p = jit_loop_begin(f, &U, jit_i64(f, 0), jit_numel_range(f, u, 0, u->rank), "p");
  jit_simt_unravel(f, p, dims, it->rank, c);
  LLVMValueRef yi = jit_i64(f, 0);
  for (int a = 0; a < x->rank; a++) {
    LLVMValueRef d = jit_dim(f, x->dims[a]), ca = c[a];
    if (a == ax)
      ca = wrap_index(f, LLVMBuildSExt(f->b, jit_load(f, it->dtype, jit_in(f, 2), p), f->t_i64, ""), d);
    yi = jit_add(f, jit_mul(f, yi, d), ca);
  }
  scatter_apply(f, op, dt, yi, p);
  jit_loop_end(f, &U);
  return f->failed ? -1 : 0;
}

int jit_lower_scatter(jit_fn *f) { return scatter_body(f, true); }

static int simt_scatter_body(jit_fn *f) { return scatter_body(f, false); }

int jit_simt_lower_scatter(jit_simt_fn *sf) { return jit_simt_serial(sf, simt_scatter_body); }

/* ---- range ---- */

/* Checks the length and returns start and step as i64 or double; the
 * element at i is then start + i * step. */
static void range_setup(jit_fn *f, LLVMValueRef *start, LLVMValueRef *step) {
  ir_dtype dt = f->node->in[0]->type.dtype;
  LLVMValueRef N = jit_dim(f, f->node->out[0]->type.dims[0]), want;
  LLVMValueRef v[3];
  for (int k = 0; k < 3; k++) v[k] = jit_load(f, dt, jit_in(f, k), jit_i64(f, 0));
  if (ir_dtype_is_float(dt)) {
    for (int k = 0; k < 3; k++)
      if (dt != IR_DT_F64) v[k] = LLVMBuildFPExt(f->b, v[k], f->t_f64, "");
    LLVMValueRef zero = LLVMConstReal(f->t_f64, 0);
    jit_fail_if(f, LLVMBuildFCmp(f->b, LLVMRealOEQ, v[2], zero, ""), JIT_KERR_RANGE);
    LLVMValueRef q = LLVMBuildFDiv(f->b, LLVMBuildFSub(f->b, v[1], v[0], ""), v[2], "");
    LLVMValueRef w = jit_intrinsic(f, "llvm.ceil", f->t_f64, &q, 1);
    LLVMValueRef big = LLVMBuildFCmp(f->b, LLVMRealOGE, w, LLVMConstReal(f->t_f64, 9.0e18), "");
    LLVMValueRef safe = LLVMBuildSelect(f->b, big, zero, w, "");
    LLVMValueRef wi = LLVMBuildFPToSI(f->b, LLVMBuildSelect(f->b, LLVMBuildFCmp(f->b, LLVMRealOGT, safe, zero, ""), safe, zero, ""), f->t_i64, "");
    want = LLVMBuildSelect(f->b, big, jit_i64(f, INT64_MAX), wi, "");
  } else {
    for (int k = 0; k < 3; k++) v[k] = LLVMBuildSExt(f->b, v[k], f->t_i64, "");
    LLVMValueRef z = jit_i64(f, 0), one = jit_i64(f, 1), s = v[2];
    jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntEQ, s, z, ""), JIT_KERR_RANGE);
    LLVMValueRef d = LLVMBuildSub(f->b, v[1], v[0], ""); /* wraps as in the interpreter */
    LLVMValueRef up = LLVMBuildICmp(f->b, LLVMIntSGT, s, z, "");
    LLVMValueRef sp = LLVMBuildSelect(f->b, up, s, one, "");
    LLVMValueRef sn = LLVMBuildSelect(f->b, up, one, LLVMBuildNeg(f->b, s, ""), "");
    LLVMValueRef lp = LLVMBuildAdd(f->b, LLVMBuildSDiv(f->b, LLVMBuildSub(f->b, d, one, ""), sp, ""), one, "");
    LLVMValueRef ln = LLVMBuildAdd(
        f->b, LLVMBuildUDiv(f->b, LLVMBuildSub(f->b, LLVMBuildNeg(f->b, d, ""), one, ""), sn, ""), one, "");
    LLVMValueRef okp = LLVMBuildICmp(f->b, LLVMIntSGT, d, z, "");
    LLVMValueRef okn = LLVMBuildICmp(f->b, LLVMIntSLT, d, z, "");
    want = LLVMBuildSelect(f->b, up, LLVMBuildSelect(f->b, okp, lp, z, ""),
                           LLVMBuildSelect(f->b, okn, ln, z, ""), "");
  }
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntNE, want, N, ""), JIT_KERR_RANGE);
  *start = v[0];
  *step = v[2];
}

static void range_elem(jit_fn *f, LLVMValueRef start, LLVMValueRef step, LLVMValueRef i) {
  ir_dtype dt = f->node->out[0]->type.dtype;
  LLVMValueRef y;
  if (ir_dtype_is_float(dt)) {
    y = LLVMBuildFAdd(f->b, start, LLVMBuildFMul(f->b, LLVMBuildSIToFP(f->b, i, f->t_f64, ""), step, ""), "");
    if (dt != IR_DT_F64) y = LLVMBuildFPTrunc(f->b, y, jit_type(f, dt), "");
  } else {
    y = LLVMBuildAdd(f->b, start, LLVMBuildMul(f->b, i, step, ""), "");
    y = LLVMBuildTrunc(f->b, y, jit_type(f, dt), "");
  }
  jit_store(f, dt, jit_out(f, 0), i, y);
}

int jit_lower_range(jit_fn *f) {
  LLVMValueRef start, step, lo, hi;
  range_setup(f, &start, &step);
  jit_split_range(f, jit_dim(f, f->node->out[0]->type.dims[0]), &lo, &hi);
  jit_loop L;
  range_elem(f, start, step, jit_loop_begin(f, &L, lo, hi, "i"));
  jit_loop_end(f, &L);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_range(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  LLVMValueRef start, step;
  range_setup(f, &start, &step);
  jit_simt_loop l;
  range_elem(f, start, step,
             jit_simt_grid_loop_begin(sf, &l, jit_dim(f, f->node->out[0]->type.dims[0])));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
