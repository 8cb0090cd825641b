/* simt_rows.c - the SIMT lowering of row ops (simt.h): reductions along
 * one axis (sum, mean, prod, max, min, argmax, argmin), softmax / logsoftmax and
 * layer_norm. A row is the run of elements along the axis at one (outer,
 * inner) position; it is handled by a group of G threads of a block of
 * JIT_SIMT_BLOCK: G is a power of two, about one thread per
 * ROW_ELEMS_PER_THREAD elements of a row, at most JIT_SIMT_BLOCK
 * (jit_simt_row_threads), and a block holds JIT_SIMT_BLOCK / G rows. The
 * threads of a group stride along the row and combine through a
 * shared-memory tree with barriers; a group of one thread combines nothing
 * and reaches no barrier. jit_simt_geometry sizes the grid with the same
 * G; the kernel computes G from the row length, so the two agree.
 *
 * Semantics follow the reference interpreter (ir/interp.c): the
 * combinations form a tree (not left to right), and float sums, softmax
 * and layer_norm are computed in double. */
#include "simt.h"

#define ROW_ELEMS_PER_THREAD 4

int64_t jit_simt_row_threads(int64_t len) {
  int64_t want = len / ROW_ELEMS_PER_THREAD + (len % ROW_ELEMS_PER_THREAD != 0), g = 1;
  while (g < want && g < JIT_SIMT_BLOCK) g *= 2;
  return g;
}

static LLVMValueRef i64v(jit_fn *f, int64_t v) { return jit_i64(f, v); }

typedef enum combine_op {
  C_SUM_F, C_MAX_F, C_MIN_F, C_PROD_F, C_SUM_I, C_MAX_I, C_MIN_I, C_PROD_I
} combine_op;

static LLVMValueRef combine(jit_fn *f, combine_op op, bool is_signed, LLVMValueRef a,
                            LLVMValueRef b) {
  LLVMValueRef ab[2] = {a, b};
  switch (op) {
  case C_SUM_F: return LLVMBuildFAdd(f->b, a, b, "");
  case C_MAX_F: return jit_intrinsic(f, "llvm.maximum", f->t_f64, ab, 2);
  case C_MIN_F: return jit_intrinsic(f, "llvm.minimum", f->t_f64, ab, 2);
  case C_PROD_F: return LLVMBuildFMul(f->b, a, b, "");
  case C_SUM_I: return LLVMBuildAdd(f->b, a, b, "");
  case C_PROD_I: return LLVMBuildMul(f->b, a, b, "");
  case C_MAX_I:
    return LLVMBuildSelect(
        f->b, LLVMBuildICmp(f->b, is_signed ? LLVMIntSGT : LLVMIntUGT, a, b, ""), a, b, "");
  case C_MIN_I:
    return LLVMBuildSelect(
        f->b, LLVMBuildICmp(f->b, is_signed ? LLVMIntSLT : LLVMIntULT, a, b, ""), a, b, "");
  }
  return a;
}

/* A row of x: this thread's group (G threads, log2 G = lg) and place in
 * it (tx; slot = the thread's index in the block); element j of the row is
 * x[base + j * inner]; the row has len elements, of which this group loops
 * over n (0 for a group past the last row); yi: the row's number, the
 * index of its result in a reduction. */
typedef struct row {
  LLVMValueRef g, lg, tx, slot, base, inner, len, n, yi, active;
} row;

static void row_setup(jit_simt_fn *sf, const ir_type *xt, int axis, row *rw) {
  jit_fn *f = &sf->f;
  rw->len = jit_dim(f, xt->dims[axis]);
  /* G = 2^lg, lg = ceil(log2(clamp(ceil(len / E), 1, B))) (jit_simt_row_threads) */
  LLVMValueRef want = LLVMBuildUDiv(f->b, LLVMBuildAdd(f->b, rw->len, i64v(f, ROW_ELEMS_PER_THREAD - 1), ""),
                                    i64v(f, ROW_ELEMS_PER_THREAD), "");
  want = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntULT, want, i64v(f, 1), ""), i64v(f, 1), want, "");
  want = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntUGT, want, i64v(f, JIT_SIMT_BLOCK), ""),
                         i64v(f, JIT_SIMT_BLOCK), want, "");
  LLVMValueRef cz[2] = {LLVMBuildSub(f->b, want, i64v(f, 1), ""), LLVMConstInt(f->t_i1, 0, 0)};
  rw->lg = LLVMBuildSub(f->b, i64v(f, 64), jit_intrinsic(f, "llvm.ctlz", f->t_i64, cz, 2), "lg");
  rw->g = LLVMBuildShl(f->b, i64v(f, 1), rw->lg, "g");
  rw->slot = jit_simt_sreg64(sf, JIT_SIMT_TID, 0);
  rw->tx = LLVMBuildAnd(f->b, rw->slot, LLVMBuildSub(f->b, rw->g, i64v(f, 1), ""), "tx");
  LLVMValueRef ty = LLVMBuildLShr(f->b, rw->slot, rw->lg, "ty");
  LLVMValueRef per_block = LLVMBuildLShr(f->b, i64v(f, JIT_SIMT_BLOCK), rw->lg, "");
  rw->yi = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, jit_simt_sreg64(sf, JIT_SIMT_CTAID, 0), per_block, ""),
                        ty, "row");
  rw->inner = jit_numel_range(f, xt, axis + 1, xt->rank);
  LLVMValueRef rows = LLVMBuildMul(f->b, jit_numel_range(f, xt, 0, axis), rw->inner, "");
  rw->active = LLVMBuildICmp(f->b, LLVMIntULT, rw->yi, rows, "");
  rw->n = LLVMBuildSelect(f->b, rw->active, rw->len, i64v(f, 0), "");
  /* inner > 0 whenever a block runs (no rows: no launch); 1 keeps the
   * division defined in a group past the end */
  LLVMValueRef inner = LLVMBuildSelect(f->b, rw->active, rw->inner, i64v(f, 1), "");
  LLVMValueRef o = LLVMBuildUDiv(f->b, rw->yi, inner, "");
  LLVMValueRef in = LLVMBuildURem(f->b, rw->yi, inner, "");
  rw->base = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, LLVMBuildMul(f->b, o, rw->len, ""), rw->inner, ""),
                          in, "");
}

static LLVMValueRef row_index(jit_fn *f, const row *rw, LLVMValueRef j) {
  return LLVMBuildAdd(f->b, rw->base, LLVMBuildMul(f->b, j, rw->inner, ""), "");
}

/* A barrier when the group has more than one thread (G is the same in the
 * whole block, so either every thread reaches it or none does). */
static void group_barrier(jit_simt_fn *sf, const row *rw) {
  jit_fn *f = &sf->f;
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, LLVMBuildICmp(f->b, LLVMIntUGT, rw->g, i64v(f, 1), ""));
  jit_simt_barrier(sf);
  jit_simt_if_end(f, &ib);
}

/* The tree over a group's slots:
 *   for (s = G; s > 1;) { barrier; s /= 2; if (tx < s) { body: slot, slot + s } }
 * tree_begin returns the partner's slot (slot + s) with the builder in the
 * body; tree_end closes it. After the loop the group's first slot holds
 * the combination (visible to the others after a group_barrier). */
typedef struct tree_loop {
  LLVMBasicBlockRef header, exit;
  LLVMValueRef s, half;
  jit_simt_if ib;
} tree_loop;

static LLVMValueRef tree_begin(jit_simt_fn *sf, tree_loop *t, const row *rw) {
  jit_fn *f = &sf->f;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  LLVMValueRef g = rw->g;
  t->header = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tree.header");
  LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tree.step");
  t->exit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tree.exit");
  LLVMBuildBr(f->b, t->header);
  LLVMPositionBuilderAtEnd(f->b, t->header);
  t->s = LLVMBuildPhi(f->b, f->t_i64, "s");
  LLVMAddIncoming(t->s, &g, &pre, 1);
  LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntUGT, t->s, i64v(f, 1), ""), step, t->exit);
  LLVMPositionBuilderAtEnd(f->b, step);
  jit_simt_barrier(sf);
  t->half = LLVMBuildLShr(f->b, t->s, i64v(f, 1), "");
  jit_simt_if_begin(f, &t->ib, LLVMBuildICmp(f->b, LLVMIntULT, rw->tx, t->half, ""));
  return LLVMBuildAdd(f->b, rw->slot, t->half, "");
}

static void tree_end(jit_simt_fn *sf, tree_loop *t) {
  jit_fn *f = &sf->f;
  jit_simt_if_end(f, &t->ib);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMBuildBr(f->b, t->header);
  LLVMAddIncoming(t->s, &t->half, &latch, 1);
  LLVMPositionBuilderAtEnd(f->b, t->exit);
}

/* Every thread of a group holds v (f64 or i64); returns the group's
 * combination, in every thread of the group. sh: JIT_SIMT_BLOCK 8-byte
 * slots, free again when this returns. */
static LLVMValueRef group_reduce(jit_simt_fn *sf, LLVMValueRef sh, const row *rw,
                                 LLVMValueRef v, combine_op op, bool is_signed) {
  jit_fn *f = &sf->f;
  LLVMTypeRef ty = LLVMTypeOf(v);
  LLVMValueRef me = rw->slot;
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(f->b, ty, sh, &me, 1, "");
  LLVMBuildStore(f->b, v, slot);
  tree_loop t;
  LLVMValueRef o = tree_begin(sf, &t, rw);
  LLVMValueRef a = LLVMBuildLoad2(f->b, ty, slot, "");
  LLVMValueRef b = LLVMBuildLoad2(f->b, ty, LLVMBuildInBoundsGEP2(f->b, ty, sh, &o, 1, ""), "");
  LLVMBuildStore(f->b, combine(f, op, is_signed, a, b), slot);
  tree_end(sf, &t);
  group_barrier(sf, rw);
  LLVMValueRef first = LLVMBuildSub(f->b, rw->slot, rw->tx, "");
  LLVMValueRef r = LLVMBuildLoad2(f->b, ty, LLVMBuildInBoundsGEP2(f->b, ty, sh, &first, 1, ""), "");
  group_barrier(sf, rw); /* sh is reused by the next reduction */
  return r;
}

/* for (j = tx; j < n; j += G) { body } */
typedef struct row_loop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef j, step;
} row_loop;

static LLVMValueRef row_loop_begin(jit_fn *f, row_loop *l, const row *rw) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  LLVMValueRef first = rw->tx;
  l->step = rw->g;
  l->header = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.header");
  l->body = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.body");
  l->exit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.exit");
  LLVMBuildBr(f->b, l->header);
  LLVMPositionBuilderAtEnd(f->b, l->header);
  l->j = LLVMBuildPhi(f->b, f->t_i64, "j");
  LLVMAddIncoming(l->j, &first, &pre, 1);
  LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, l->j, rw->n, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(f->b, l->body);
  return l->j;
}

static void row_loop_end(jit_fn *f, row_loop *l) {
  LLVMValueRef next = LLVMBuildAdd(f->b, l->j, l->step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMBuildBr(f->b, l->header);
  LLVMAddIncoming(l->j, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(f->b, l->exit);
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

int jit_simt_lower_reduce(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type;
  ir_dtype dt = xt->dtype, ydt = n->out[0]->type.dtype;
  int axis;
  if (!jit_simt_norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis))
    return jit_fn_error(f, "mo.%s: axis out of range", ir_op_get(n->op)->name);
  row rw;
  row_setup(sf, xt, axis, &rw);
  LLVMValueRef sh = jit_simt_shared(sf, 2 * JIT_SIMT_BLOCK * 8);
  LLVMValueRef x = jit_in(f, 0), y = jit_out(f, 0);
  LLVMValueRef yi = rw.yi;
  bool fl = ir_dtype_is_float(dt), sgn = ir_dtype_is_signed(dt);
  bool mx = n->op == IR_OP_REDUCE_MAX || n->op == IR_OP_ARGMAX;
  LLVMValueRef is0 = LLVMBuildAnd(f->b, rw.active, LLVMBuildICmp(f->b, LLVMIntEQ, rw.tx, i64v(f, 0), ""), "");

  if (n->op == IR_OP_ARGMAX || n->op == IR_OP_ARGMIN) {
    /* per thread: the best (value, index) of its elements; the tree keeps
     * the better of two, ties to the lower index, a NaN beating any number
     * (the first NaN wins); an empty slot has index INT64_MAX */
    LLVMTypeRef vt = fl ? f->t_f64 : f->t_i64;
    LLVMValueRef none = i64v(f, INT64_MAX);
    LLVMValueRef bv = acc_slot(f, vt, fl ? LLVMConstReal(vt, 0) : i64v(f, 0));
    LLVMValueRef bi = acc_slot(f, f->t_i64, none);
    row_loop l;
    LLVMValueRef j = row_loop_begin(f, &l, &rw);
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
    LLVMValueRef vslot = LLVMBuildInBoundsGEP2(f->b, vt, sh, &rw.slot, 1, "");
    LLVMValueRef islot = LLVMBuildInBoundsGEP2(f->b, f->t_i64, shi, &rw.slot, 1, "");
    LLVMBuildStore(f->b, LLVMBuildLoad2(f->b, vt, bv, ""), vslot);
    LLVMBuildStore(f->b, LLVMBuildLoad2(f->b, f->t_i64, bi, ""), islot);
    tree_loop tl;
    LLVMValueRef o = tree_begin(sf, &tl, &rw);
    {
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
    }
    tree_end(sf, &tl);
    jit_simt_if wb;
    jit_simt_if_begin(f, &wb, is0);
    LLVMValueRef best = LLVMBuildLoad2(f->b, f->t_i64, islot, ""); /* tx 0: the group's first */
    best = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, best, none, ""), i64v(f, 0), best, "");
    LLVMTypeRef yt = jit_type(f, ydt);
    jit_store(f, ydt, y, yi, LLVMTypeOf(best) == yt ? best : LLVMBuildTrunc(f->b, best, yt, ""));
    jit_simt_if_end(f, &wb);
    return f->failed ? -1 : 0;
  }

  bool sum = n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN;
  bool prod = n->op == IR_OP_REDUCE_PROD;
  combine_op op = fl ? (prod ? C_PROD_F : sum ? C_SUM_F : mx ? C_MAX_F : C_MIN_F)
                     : (prod ? C_PROD_I : sum ? C_SUM_I : mx ? C_MAX_I : C_MIN_I);
  LLVMValueRef init;
  if (fl)
    init = LLVMConstReal(f->t_f64, prod ? 1.0 : sum ? 0.0 : mx ? -__builtin_inf() : __builtin_inf());
  else if (sum || prod)
    init = i64v(f, prod ? 1 : 0);
  else {
    int bits = (int)ir_dtype_size(dt) * 8;
    uint64_t umax = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    int64_t smax = (int64_t)(umax >> 1), smin = -smax - 1;
    init = i64v(f, mx ? (sgn ? smin : 0) : (sgn ? smax : (int64_t)umax));
  }
  LLVMTypeRef vt = fl ? f->t_f64 : f->t_i64;
  LLVMValueRef acc = acc_slot(f, vt, init);
  row_loop l;
  LLVMValueRef j = row_loop_begin(f, &l, &rw);
  LLVMValueRef v = fl ? load_f64(f, dt, x, row_index(f, &rw, j)) : load_i64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, combine(f, op, sgn, LLVMBuildLoad2(f->b, vt, acc, ""), v), acc);
  row_loop_end(f, &l);
  LLVMValueRef total = group_reduce(sf, sh, &rw, LLVMBuildLoad2(f->b, vt, acc, ""), op, sgn);
  jit_simt_if wb;
  jit_simt_if_begin(f, &wb, is0);
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
  jit_simt_if_end(f, &wb);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_softmax(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type;
  ir_dtype dt = xt->dtype;
  int axis;
  if (!jit_simt_norm_axis(ir_node_attr_int(n, "axis", -1), xt->rank, &axis))
    return jit_fn_error(f, "mo.%s: axis out of range", ir_op_get(n->op)->name);
  row rw;
  row_setup(sf, xt, axis, &rw);
  LLVMValueRef sh = jit_simt_shared(sf, 2 * JIT_SIMT_BLOCK * 8);
  LLVMValueRef x = jit_in(f, 0), y = jit_out(f, 0);
  LLVMValueRef acc = acc_slot(f, f->t_f64, LLVMConstReal(f->t_f64, -__builtin_inf()));
  row_loop l;
  LLVMValueRef j = row_loop_begin(f, &l, &rw);
  LLVMValueRef v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, combine(f, C_MAX_F, false, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), v), acc);
  row_loop_end(f, &l);
  LLVMValueRef m = group_reduce(sf, sh, &rw, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_MAX_F, false);
  LLVMBuildStore(f->b, LLVMConstReal(f->t_f64, 0), acc);
  j = row_loop_begin(f, &l, &rw);
  v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMValueRef e = jit_exp_f64(f, LLVMBuildFSub(f->b, v, m, ""));
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), e, ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef s = group_reduce(sf, sh, &rw, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false);
  LLVMValueRef logs = n->op == IR_OP_LOGSOFTMAX ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1) : NULL;
  j = row_loop_begin(f, &l, &rw);
  LLVMValueRef k = row_index(f, &rw, j);
  LLVMValueRef d = LLVMBuildFSub(f->b, load_f64(f, dt, x, k), m, "");
  LLVMValueRef out = n->op == IR_OP_SOFTMAX ? LLVMBuildFDiv(f->b, jit_exp_f64(f, d), s, "")
                                            : LLVMBuildFSub(f->b, d, logs, "");
  store_from_f64(f, dt, y, k, out);
  row_loop_end(f, &l);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_layer_norm(jit_simt_fn *sf) {
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
  LLVMValueRef j = row_loop_begin(f, &l, &rw);
  LLVMValueRef v = load_f64(f, dt, x, row_index(f, &rw, j));
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), v, ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef mean = LLVMBuildFDiv(
      f->b, group_reduce(sf, sh, &rw, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false),
      lenf, "mean");
  LLVMBuildStore(f->b, LLVMConstReal(f->t_f64, 0), acc);
  j = row_loop_begin(f, &l, &rw);
  LLVMValueRef d = LLVMBuildFSub(f->b, load_f64(f, dt, x, row_index(f, &rw, j)), mean, "");
  LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f64, acc, ""),
                                     LLVMBuildFMul(f->b, d, d, ""), ""), acc);
  row_loop_end(f, &l);
  LLVMValueRef var = LLVMBuildFDiv(
      f->b, group_reduce(sf, sh, &rw, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), C_SUM_F, false),
      lenf, "var");
  LLVMValueRef veps = LLVMBuildFAdd(
      f->b, var, LLVMConstReal(f->t_f64, ir_node_attr_float(n, "epsilon", 1e-5)), "");
  LLVMValueRef den = jit_intrinsic(f, "llvm.sqrt", f->t_f64, &veps, 1);
  j = row_loop_begin(f, &l, &rw);
  LLVMValueRef k = row_index(f, &rw, j);
  LLVMValueRef t = LLVMBuildFDiv(f->b, LLVMBuildFSub(f->b, load_f64(f, dt, x, k), mean, ""), den, "");
  t = LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, t, load_f64(f, dt, gm, j), ""), load_f64(f, dt, bt, j), "");
  store_from_f64(f, dt, y, k, t);
  row_loop_end(f, &l);
  return f->failed ? -1 : 0;
}

