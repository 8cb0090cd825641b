/* nms.c - lowering of mo.non_maximum_suppression (ops.def) for the host
 * and for SIMT targets.
 *
 * The steps of ir/interp_nms.c, in one part (host) or in the first thread
 * of one block (SIMT): per batch and class, up to N rounds; each round
 * scans the scores for the best box ranked after the last one taken, then
 * tests it against the boxes already selected for the class (read back from
 * the result's rows) and appends its row when none overlaps. Every value is
 * computed in double in the interpreter's order, so both agree bit for bit.
 * The count goes into the node's last buffer (jit.h). */
#include "lower.h"
#include "simt.h"

typedef struct nms {
  jit_fn *f;
  ir_dtype et;
  bool center;
  LLVMValueRef nbox; /* N */
} nms;

static LLVMValueRef ld_double(nms *s, int buf, LLVMValueRef idx) {
  jit_fn *f = s->f;
  LLVMValueRef v = jit_load(f, s->et, jit_in(f, buf), idx);
  return s->et == IR_DT_F64 ? v : LLVMBuildFPExt(f->b, v, f->t_f64, "");
}

static LLVMValueRef fminmax(jit_fn *f, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return jit_intrinsic(f, name, f->t_f64, args, 2);
}

/* Box i of batch b as (ymin, xmin, ymax, xmax). */
static void box(nms *s, LLVMValueRef b, LLVMValueRef i, LLVMValueRef c[4]) {
  jit_fn *f = s->f;
  LLVMValueRef e = jit_mul(f, jit_add(f, jit_mul(f, b, s->nbox), i), jit_i64(f, 4)), v[4];
  for (int k = 0; k < 4; k++) v[k] = ld_double(s, 0, jit_add(f, e, jit_i64(f, k)));
  if (s->center) { /* x_center, y_center, width, height */
    LLVMValueRef hh = jit_fdiv(f, v[3], jit_dc(f, 2)), hw = jit_fdiv(f, v[2], jit_dc(f, 2));
    c[0] = jit_fsub(f, v[1], hh);
    c[1] = jit_fsub(f, v[0], hw);
    c[2] = jit_fadd(f, v[1], hh);
    c[3] = jit_fadd(f, v[0], hw);
  } else {
    c[0] = fminmax(f, "llvm.minnum", v[0], v[2]);
    c[1] = fminmax(f, "llvm.minnum", v[1], v[3]);
    c[2] = fminmax(f, "llvm.maxnum", v[0], v[2]);
    c[3] = fminmax(f, "llvm.maxnum", v[1], v[3]);
  }
}

static LLVMValueRef gt0(jit_fn *f, LLVMValueRef x) {
  return LLVMBuildFCmp(f->b, LLVMRealOGT, x, jit_dc(f, 0), "");
}

/* ir_ref_nms_overlaps: an IoU above thr (i1). */
static LLVMValueRef overlaps(jit_fn *f, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef thr) {
  LLVMValueRef ih = jit_fsub(f, fminmax(f, "llvm.minnum", a[2], b[2]),
                             fminmax(f, "llvm.maxnum", a[0], b[0]));
  LLVMValueRef iw = jit_fsub(f, fminmax(f, "llvm.minnum", a[3], b[3]),
                             fminmax(f, "llvm.maxnum", a[1], b[1]));
  LLVMValueRef area_a = jit_fmul(f, jit_fsub(f, a[2], a[0]), jit_fsub(f, a[3], a[1]));
  LLVMValueRef area_b = jit_fmul(f, jit_fsub(f, b[2], b[0]), jit_fsub(f, b[3], b[1]));
  LLVMValueRef inter = jit_fmul(f, ih, iw);
  LLVMValueRef uni = jit_fsub(f, jit_fadd(f, area_a, area_b), inter);
  LLVMValueRef ok = LLVMBuildAnd(f->b, gt0(f, ih), gt0(f, iw), "");
  ok = LLVMBuildAnd(f->b, ok, LLVMBuildAnd(f->b, gt0(f, area_a), gt0(f, area_b), ""), "");
  ok = LLVMBuildAnd(f->b, ok, gt0(f, uni), "");
  LLVMValueRef iou = LLVMBuildFCmp(f->b, LLVMRealOGT, jit_fdiv(f, inter, uni), thr, "");
  return LLVMBuildAnd(f->b, ok, iou, "overlaps");
}

#define LD(slot, t) LLVMBuildLoad2(f->b, (t), (slot), "")
#define ST(v, slot) LLVMBuildStore(f->b, (v), (slot))

static int nms_body(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_type *sc = &n->in[1]->type;
  if (f->nbufs != n->nin + n->nout + 1)
    return jit_fn_error(f, "mo.non_maximum_suppression: the kernel has no buffer for its count");
  nms s = {f, n->in[0]->type.dtype, ir_node_attr_int(n, "center_point_box", 0) == 1,
           jit_dim(f, sc->dims[2])};
  LLVMTypeRef i64 = f->t_i64, f64 = f->t_f64;
  LLVMValueRef nb = jit_dim(f, sc->dims[0]), nc = jit_dim(f, sc->dims[1]), zero = jit_i64(f, 0);
  LLVMValueRef limit = LLVMBuildSExt(f->b, jit_load(f, n->in[2]->type.dtype, jit_in(f, 2), zero),
                                     i64, "limit");
  LLVMValueRef thr = ld_double(&s, 3, zero), floor = n->nin > 4 ? ld_double(&s, 4, zero) : NULL;
  LLVMValueRef count = jit_alloca(f, i64, "count"), start = jit_alloca(f, i64, "start");
  LLVMValueRef last_s = jit_alloca(f, f64, "last_s"), last_i = jit_alloca(f, i64, "last_i");
  LLVMValueRef best_s = jit_alloca(f, f64, "best_s"), best = jit_alloca(f, i64, "best");
  LLVMValueRef stop = jit_alloca(f, f->t_i1, "stop"), keep = jit_alloca(f, f->t_i1, "keep");
  ST(zero, count);
  jit_loop LB, LC, LK, LI, LR;
  LLVMValueRef b = jit_loop_begin(f, &LB, zero, nb, "b");
  LLVMValueRef c = jit_loop_begin(f, &LC, zero, nc, "c");
  LLVMValueRef row0 = jit_mul(f, jit_add(f, jit_mul(f, b, nc), c), s.nbox);
  ST(LD(count, i64), start);
  ST(jit_i64(f, -1), last_i);
  ST(jit_dc(f, 0), last_s);
  ST(LLVMConstInt(f->t_i1, 0, 0), stop);
  jit_loop_begin(f, &LK, zero, s.nbox, "k");
  LLVMValueRef taken = LLVMBuildNSWSub(f->b, LD(count, i64), LD(start, i64), "taken");
  LLVMValueRef room = LLVMBuildICmp(f->b, LLVMIntSLT, taken, limit, "");
  jit_simt_if round, found, keep_it;
  LLVMValueRef go = LLVMBuildAnd(f->b, room, LLVMBuildNot(f->b, LD(stop, f->t_i1), ""), "");
  jit_simt_if_begin(f, &round, go);
  /* the best box ranked after the last one taken */
  ST(jit_i64(f, -1), best);
  ST(jit_dc(f, 0), best_s);
  LLVMValueRef i = jit_loop_begin(f, &LI, zero, s.nbox, "i");
  LLVMValueRef sv = ld_double(&s, 1, jit_add(f, row0, i));
  LLVMValueRef eligible = floor ? LLVMBuildFCmp(f->b, LLVMRealOGT, sv, floor, "")
                                : LLVMBuildFCmp(f->b, LLVMRealORD, sv, sv, "");
  LLVMValueRef li = LD(last_i, i64), ls = LD(last_s, f64);
  LLVMValueRef after = LLVMBuildOr(
      f->b, LLVMBuildICmp(f->b, LLVMIntSLT, li, zero, ""),
      LLVMBuildOr(f->b, LLVMBuildFCmp(f->b, LLVMRealOLT, sv, ls, ""),
                  LLVMBuildAnd(f->b, LLVMBuildFCmp(f->b, LLVMRealOEQ, sv, ls, ""),
                               LLVMBuildICmp(f->b, LLVMIntSGT, i, li, ""), ""),
                  ""),
      "");
  LLVMValueRef bb = LD(best, i64), bs = LD(best_s, f64);
  LLVMValueRef better = LLVMBuildOr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, bb, zero, ""),
                                    LLVMBuildFCmp(f->b, LLVMRealOGT, sv, bs, ""), "");
  LLVMValueRef take = LLVMBuildAnd(f->b, LLVMBuildAnd(f->b, eligible, after, ""), better, "take");
  ST(LLVMBuildSelect(f->b, take, i, bb, ""), best);
  ST(LLVMBuildSelect(f->b, take, sv, bs, ""), best_s);
  jit_loop_end(f, &LI);
  bb = LD(best, i64);
  LLVMValueRef none = LLVMBuildICmp(f->b, LLVMIntSLT, bb, zero, "none");
  ST(none, stop);
  jit_simt_if_begin(f, &found, LLVMBuildNot(f->b, none, ""));
  ST(LD(best_s, f64), last_s);
  ST(bb, last_i);
  LLVMValueRef cand[4], sel[4];
  box(&s, b, bb, cand);
  ST(LLVMConstInt(f->t_i1, 1, 0), keep);
  LLVMValueRef r = jit_loop_begin(f, &LR, LD(start, i64), LD(count, i64), "r");
  LLVMValueRef j = jit_load(f, IR_DT_SI64, jit_out(f, 0), jit_add(f, jit_mul(f, r, jit_i64(f, 3)),
                                                                  jit_i64(f, 2)));
  box(&s, b, j, sel);
  ST(LLVMBuildAnd(f->b, LD(keep, f->t_i1), LLVMBuildNot(f->b, overlaps(f, cand, sel, thr), ""), ""),
     keep);
  jit_loop_end(f, &LR);
  jit_simt_if_begin(f, &keep_it, LD(keep, f->t_i1));
  LLVMValueRef row = jit_mul(f, LD(count, i64), jit_i64(f, 3));
  jit_store(f, IR_DT_SI64, jit_out(f, 0), row, b);
  jit_store(f, IR_DT_SI64, jit_out(f, 0), jit_add(f, row, jit_i64(f, 1)), c);
  jit_store(f, IR_DT_SI64, jit_out(f, 0), jit_add(f, row, jit_i64(f, 2)), bb);
  ST(jit_add(f, LD(count, i64), jit_i64(f, 1)), count);
  jit_simt_if_end(f, &keep_it);
  jit_simt_if_end(f, &found);
  jit_simt_if_end(f, &round);
  jit_loop_end(f, &LK);
  jit_loop_end(f, &LC);
  jit_loop_end(f, &LB);
  LLVMValueRef st = LLVMBuildStore(f->b, LD(count, i64), f->bufs[f->nbufs - 1]);
  LLVMSetAlignment(st, 8);
  return f->failed ? -1 : 0;
}

int jit_lower_nms(jit_fn *f) { return nms_body(f); }

int jit_simt_lower_nms(jit_simt_fn *sf) { return jit_simt_serial(sf, nms_body); }
