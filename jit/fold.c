/* fold.c - lowering of mo.fold (col2im; ops.def documents it,
 * ir/interp_patch.c is its meaning) for the host and for SIMT targets.
 *
 * A gather over the result, so no two threads or parts write one element
 * and nothing needs atomics: element (n, c, h, w) sums the taps (i, j) of
 * the kernel whose block covers it (h + ph - i * dh a multiple of sh, the
 * quotient in [0, Lh); likewise w), in the order (i, j) ascending, in the
 * dtype (floats without reassociation, ints wrapping), as the interpreter
 * does. The window (kernel, stride, dilation, padding) is attributes
 * (constants); N, C and the output size H, W may be symbolic: the block
 * counts Lh, Lw are computed from the result's H, W at run time (constant
 * folded when they are static).
 * Host: the result elements are split between the parts (jit_split_range);
 * SIMT: a grid-stride loop over them, one element per thread at a time.
 * Assumes a verified node whose run-time shape checks have passed. */
#include "../ir/patch.h"
#include "lower.h"
#include "simt.h"

/* The number of blocks along axis ax of output size o (i64): (o + 2 p -
 * d (k - 1) - 1) / s + 1. The shape checks made the span >= 0. */
static LLVMValueRef blocks_of(jit_fn *f, const ir_fold_geom *g, int ax, LLVMValueRef o) {
  int64_t less = 2 * g->pad[ax] - g->dil[ax] * (g->k[ax] - 1) - 1;
  LLVMValueRef span = LLVMBuildAdd(f->b, o, jit_i64(f, less), "");
  return LLVMBuildAdd(f->b, LLVMBuildSDiv(f->b, span, jit_i64(f, g->st[ax]), ""), jit_i64(f, 1),
                      "");
}

/* The block along one axis that tap t covers at position o (i64), and
 * whether there is one (below nb, the axis' block count). */
static LLVMValueRef block_of(jit_fn *f, const ir_fold_geom *g, int ax, LLVMValueRef o,
                             LLVMValueRef t, LLVMValueRef nb, LLVMValueRef *ok) {
  LLVMValueRef v = LLVMBuildSub(f->b, LLVMBuildAdd(f->b, o, jit_i64(f, g->pad[ax]), ""),
                                LLVMBuildMul(f->b, t, jit_i64(f, g->dil[ax]), ""), "");
  LLVMValueRef st = jit_i64(f, g->st[ax]);
  LLVMValueRef q = LLVMBuildSDiv(f->b, v, st, ""), r = LLVMBuildSRem(f->b, v, st, "");
  LLVMValueRef nonneg = LLVMBuildICmp(f->b, LLVMIntSGE, v, jit_i64(f, 0), "");
  LLVMValueRef exact = LLVMBuildICmp(f->b, LLVMIntEQ, r, jit_i64(f, 0), "");
  LLVMValueRef below = LLVMBuildICmp(f->b, LLVMIntSLT, q, nb, "");
  *ok = LLVMBuildAnd(f->b, nonneg, LLVMBuildAnd(f->b, exact, below, ""), "");
  return q;
}

static void fold_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const ir_fold_geom *g = ud;
  LLVMValueRef acc = jit_alloca(f, jit_type(f, f->node->out[0]->type.dtype), "acc");
  const ir_node *n = f->node;
  ir_dtype dt = n->out[0]->type.dtype;
  LLVMValueRef dims[4], c4[4];
  jit_shape(f, &n->out[0]->type, dims);
  jit_simt_unravel(f, e, dims, 4, c4);
  LLVMTypeRef t = jit_type(f, dt);
  LLVMBuildStore(f->b, LLVMConstNull(t), acc);
  LLVMValueRef lh_n = blocks_of(f, g, 0, dims[2]), lw_n = blocks_of(f, g, 1, dims[3]);
  LLVMValueRef L = jit_mul(f, lh_n, lw_n), kk = jit_i64(f, g->k[0] * g->k[1]);
  /* x's row of channel c of batch b: (b * C + c) * kh * kw */
  LLVMValueRef row0 = jit_mul(f, jit_add(f, jit_mul(f, c4[0], dims[1]), c4[1]), kk);
  jit_loop I, J;
  LLVMValueRef i = jit_loop_begin(f, &I, jit_i64(f, 0), jit_i64(f, g->k[0]), "i");
  LLVMValueRef okh, lh = block_of(f, g, 0, c4[2], i, lh_n, &okh);
  jit_simt_if ih;
  jit_simt_if_begin(f, &ih, okh);
  LLVMValueRef j = jit_loop_begin(f, &J, jit_i64(f, 0), jit_i64(f, g->k[1]), "j");
  LLVMValueRef okw, lw = block_of(f, g, 1, c4[3], j, lw_n, &okw);
  jit_simt_if iw;
  jit_simt_if_begin(f, &iw, okw);
  LLVMValueRef row = jit_add(f, row0, jit_add(f, jit_mul(f, i, jit_i64(f, g->k[1])), j));
  LLVMValueRef xi =
      jit_add(f, jit_mul(f, row, L), jit_add(f, jit_mul(f, lh, lw_n), lw));
  LLVMValueRef v = jit_load(f, dt, jit_in(f, 0), xi), s = LLVMBuildLoad2(f->b, t, acc, "");
  s = ir_dtype_is_float(dt) ? LLVMBuildFAdd(f->b, s, v, "") : LLVMBuildAdd(f->b, s, v, "");
  LLVMBuildStore(f->b, s, acc);
  jit_simt_if_end(f, &iw);
  jit_loop_end(f, &J);
  jit_simt_if_end(f, &ih);
  jit_loop_end(f, &I);
  jit_store(f, dt, jit_out(f, 0), e, LLVMBuildLoad2(f->b, t, acc, ""));
}

static int fold_setup(jit_fn *f, ir_fold_geom *g) {
  const ir_node *n = f->node;
  if (!ir_fold_geom_read(n, g) || n->in[0]->type.rank != 3 || n->out[0]->type.rank != 4)
    return jit_fn_error(f, "mo.fold: malformed attributes or ranks");
  return 0;
}

int jit_lower_fold(jit_fn *f) {
  ir_fold_geom g;
  return fold_setup(f, &g) != 0 ? -1 : jit_each_element(f, fold_elem, &g);
}

int jit_simt_lower_fold(jit_simt_fn *sf) {
  ir_fold_geom g;
  return fold_setup(&sf->f, &g) != 0 ? -1 : jit_simt_each_element(sf, fold_elem, &g);
}
