/* ops_loss.c - ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (which is the former over LogSoftmax along the class axis), composed from
 * kiln ops: the class of each sample picked with gather_elements, weighted
 * by a gather of the class weights, ignored samples zeroed, then reduced
 * ("none", "sum", or "mean": the weighted sum over the sum of the weights
 * taken). Input [N, C] or [N, C, d1, ...], target [N] or [N, d1, ...]. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* The sum of every element of v, as a rank-0 value. */
static kiln_value *sum_all(ox *x, kiln_value *v) {
  const ir_type *t = ox_type(v);
  const ir_dim *all = ir_dim_const(x->ir->arena, 1);
  for (int i = 0; all && i < t->rank; i++) all = ir_dim_mul(x->ir->arena, all, t->dims[i]);
  if (!all) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  kiln_value *r = ox_reshape(x, v, 1, &all);
  if (!r || !(r = ox_op(x, "sum", &r, 1, NULL, "{axis = 0}"))) return NULL;
  return ox_reshape(x, r, 0, NULL);
}

/* The loss of log-probabilities lp against target, weights w (may be NULL);
 * NULL after recording an error or an unsupported attribute. */
static kiln_value *nll(ox *x, const Onnx__NodeProto *n, kiln_value *lp, kiln_value *target,
                       kiln_value *w) {
  char red[16];
  const char *reduction = ox_attr_string(n, "reduction", "mean", red, sizeof red);
  bool none = strcmp(reduction, "none") == 0, sum = strcmp(reduction, "sum") == 0;
  if (!none && !sum && strcmp(reduction, "mean") != 0) {
    ox_fail(x, KILN_ERR_VERIFY, "reduction must be \"none\", \"sum\" or \"mean\", not \"%s\"",
            reduction);
    return NULL;
  }
  const ir_type *t = ox_type(lp), *tt = ox_type(target);
  if (t->rank < 2 || tt->rank != t->rank - 1 || !ir_dtype_is_int(tt->dtype)) {
    ox_fail(x, KILN_ERR_VERIFY,
            "the input must be [N, C, ...] and the target [N, ...] of integers (ranks %d, %d)",
            t->rank, tt->rank);
    return NULL;
  }
  ir_dtype dt = t->dtype;
  kiln_value *tgt = target, *ignored = NULL, *picked, *loss, *wt = NULL;
  if (tt->dtype != IR_DT_SI64 && !(tgt = ox_op(x, "cast", &tgt, 1, NULL, "{dtype = si64}")))
    return NULL;
  if (ox_attr(n, "ignore_index")) { /* an ignored target may be out of range: read class 0 */
    kiln_value *ii = ox_scalar(x, IR_DT_SI64, (double)ox_attr_int(n, "ignore_index", 0)), *z;
    if (!ii || !(ignored = OP2("equal", tgt, ii)) || !(z = ox_scalar(x, IR_DT_SI64, 0)) ||
        !(tgt = ox_op(x, "where", (kiln_value *[]){ignored, z, tgt}, 3, NULL, NULL)))
      return NULL;
  }
  /* the target's class of each sample: [N, 1, d...] -> [N, d...] */
  const ir_dim *one_axis[IR_MAX_RANK];
  for (int i = 0, j = 0; i < t->rank; i++)
    one_axis[i] = i == 1 ? ir_dim_const(x->ir->arena, 1) : tt->dims[j++];
  kiln_value *idx = ox_reshape(x, tgt, t->rank, one_axis);
  if (!idx ||
      !(picked = ox_op(x, "gather_elements", (kiln_value *[]){lp, idx}, 2, NULL, "{axis = 1}")) ||
      !(picked = ox_reshape(x, picked, tt->rank, (const ir_dim *const *)tt->dims)) ||
      !(loss = OP1("negate", picked)))
    return NULL;
  if (w) {
    if (ox_type(w)->dtype != dt && !(w = ox_op(x, "cast", &w, 1, NULL, "{dtype = %s}",
                                               ir_dtype_name(dt))))
      return NULL;
    if (!(wt = ox_op(x, "gather", (kiln_value *[]){w, tgt}, 2, NULL, "{axis = 0}"))) return NULL;
  }
  if (ignored) {
    kiln_value *z = ox_scalar(x, dt, 0), *o = wt ? wt : ox_scalar(x, dt, 1);
    if (!z || !o || !(wt = ox_op(x, "where", (kiln_value *[]){ignored, z, o}, 3, NULL, NULL)))
      return NULL;
  }
  if (wt && !(loss = OP2("mul", loss, wt))) return NULL;
  if (none) return loss;
  kiln_value *total = sum_all(x, loss);
  if (!total || sum) return total;
  if (!wt) { /* the mean over the samples */
    const ir_dim *cnt = ir_dim_const(x->ir->arena, 1);
    for (int i = 0; cnt && i < tt->rank; i++) cnt = ir_dim_mul(x->ir->arena, cnt, tt->dims[i]);
    int64_t c;
    if (!cnt || !ir_dim_is_const(cnt, &c)) { /* symbolic sample count: sum of ones */
      kiln_value *one = ox_scalar(x, dt, 1), *ones;
      char ty[1024];
      ox_type_text(ty, sizeof ty, dt, tt->rank, (const ir_dim *const *)tt->dims);
      if (!one || !(ones = ox_op(x, "broadcast_to", &one, 1, ty, NULL)) ||
          !(wt = sum_all(x, ones)))
        return NULL;
      return OP2("div", total, wt);
    }
    kiln_value *k = ox_scalar(x, dt, (double)c);
    return k ? OP2("div", total, k) : NULL;
  }
  kiln_value *wsum = sum_all(x, wt);
  return wsum ? OP2("div", total, wsum) : NULL;
}

int ox_op_NegativeLogLikelihoodLoss(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                                    ox_val **out, int nout) {
  BEGIN;
  kiln_value *lp = IN(0), *target = lp ? IN(1) : NULL, *w = NULL;
  if (!target) return rc;
  if (nin > 2 && in[2] && !(w = IN(2))) return rc;
  if (!(out[0]->v = nll(x, n, lp, target, w))) return FAILED();
  return 0;
}

int ox_op_SoftmaxCrossEntropyLoss(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                                  ox_val **out, int nout) {
  BEGIN;
  kiln_value *scores = IN(0), *labels = scores ? IN(1) : NULL, *w = NULL, *lp;
  if (!labels) return rc;
  if (nin > 2 && in[2] && !(w = IN(2))) return rc;
  if (ox_type(scores)->rank < 2)
    return ox_fail(x, KILN_ERR_VERIFY, "the scores must be [N, C, ...], not of rank %d",
                   ox_type(scores)->rank);
  if (!(lp = ox_op(x, "logsoftmax", &scores, 1, NULL, "{axis = 1}")) ||
      !(out[0]->v = nll(x, n, lp, labels, w)))
    return FAILED();
  if (nout > 1 && out[1] && *out[1]->name) out[1]->v = lp;
  return 0;
}
