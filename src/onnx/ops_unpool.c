/* ops_unpool.c - ONNX's MaxUnpool: X [N, C, D1..Dk] written into zeros at
 * the flat indices I (MaxPool's Indices output) as mo.scatter along axis 0
 * of the flattened zeros.
 *
 * The indices address the inferred shape: N, C and (D - 1) * stride +
 * kernel - pad_begin - pad_end per spatial axis. With output_shape (known
 * at import, or data read before the graph runs: its dims are then
 * symbols), ONNX's reference places that result at the origin of zeros of
 * output_shape, so each index is moved to the same coordinates in the
 * larger tensor. Indices out of range (or an output_shape too small for
 * them) are mo.scatter's error at run time. */
#include <stdio.h>

#include "ox.h"

/* The inferred output dims of n for a (rank r) into dims[r]. */
static int inferred_dims(ox *x, const Onnx__NodeProto *n, const kiln_value *a,
                         const ir_dim **dims) {
  int r = ox_type(a)->rank, sp = r - 2, cnt;
  ir_arena *ar = x->ir->arena;
  const int64_t *k = ox_attr_ints(n, "kernel_shape", &cnt);
  if (!k || cnt != sp) return ox_fail(x, KILN_ERR_VERIFY, "kernel_shape needs %d entries", sp);
  int ns = 0, np = 0;
  const int64_t *st = ox_attr_ints(n, "strides", &ns), *p = ox_attr_ints(n, "pads", &np);
  if ((st && ns != sp) || (p && np != 2 * sp))
    return ox_fail(x, KILN_ERR_VERIFY, "strides or pads do not match %d spatial axes", sp);
  dims[0] = ox_dim(a, 0), dims[1] = ox_dim(a, 1);
  for (int i = 0; i < sp; i++) {
    int64_t d;
    if (!ir_dim_is_const(ox_dim(a, 2 + i), &d))
      return ox_unsupported(x, n, "a symbolic spatial dim");
    int64_t o = (d - 1) * (st ? st[i] : 1) + k[i] - (p ? p[i] + p[sp + i] : 0);
    if (o < 0) return ox_fail(x, KILN_ERR_VERIFY, "spatial axis %d of the output is %lld", i,
                              (long long)o);
    dims[2 + i] = ir_dim_const(ar, o);
  }
  return 0;
}

/* Flat indices ix into the inferred dims inf[r] moved to the same
 * coordinates in the output of shape s (si64 [r]), whose dims are out[r]:
 * (c0 s1 + c1) s2 + c2 ... A coordinate that does not fit (output_shape
 * smaller than the inferred shape, or an index past it) becomes the
 * output's size, so mo.scatter refuses it at run time. */
static kiln_value *move_indices(ox *x, kiln_value *ix, const ir_dim *const *inf, kiln_value *s,
                                int r) {
  kiln_value *c[IR_MAX_RANK], *o[IR_MAX_RANK], *rem = ix, *bad = NULL, *nw, *total, *t;
  for (int i = r - 1; i >= 1; i--) {
    int64_t d;
    if (!ir_dim_is_const(inf[i], &d)) return NULL; /* checked by the caller */
    kiln_value *kd = ox_scalar(x, IR_DT_SI64, (double)d);
    if (!kd || !(c[i] = OP2("mod", rem, kd)) || !(rem = OP2("floor_div", rem, kd))) return NULL;
  }
  c[0] = rem;
  for (int i = 0; i < r; i++) {
    kiln_value *ki = ox_scalar(x, IR_DT_SI64, i);
    if (!ki || !(o[i] = ox_op(x, "gather", (kiln_value *[]){s, ki}, 2, NULL, "{axis = 0}")))
      return NULL;
  }
  nw = c[0], total = o[0];
  for (int i = 0; i < r; i++) {
    if (i > 0 && (!(nw = OP2("mul", nw, o[i])) || !(nw = OP2("add", nw, c[i])) ||
                  !(total = OP2("mul", total, o[i]))))
      return NULL;
    if (!(t = OP2("greater_equal", c[i], o[i])) || !(bad = bad ? OP2("logical_or", bad, t) : t))
      return NULL;
  }
  return ox_op(x, "where", (kiln_value *[]){bad, total, nw}, 3, NULL, NULL);
}

int ox_op_MaxUnpool(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0), *ix = a ? IN(1) : NULL, *shape = NULL, *z, *r;
  if (!ix) return rc;
  int rank = ox_type(a)->rank;
  if (rank < 3) return ox_fail(x, KILN_ERR_VERIFY, "MaxUnpool of a rank-%d input (needs N, C, "
                               "spatial axes)", rank);
  if (ox_type(ix)->rank != rank)
    return ox_fail(x, KILN_ERR_VERIFY, "MaxUnpool's indices have rank %d, X rank %d",
                   ox_type(ix)->rank, rank);
  const ir_dim *inf[IR_MAX_RANK], *dims[IR_MAX_RANK];
  if ((rc = inferred_dims(x, n, a, inf)) != 0) return rc;
  ir_arena *ar = x->ir->arena;
  const ir_dim *flat_in = ox_dim(a, 0);
  for (int i = 1; i < rank; i++) flat_in = ir_dim_mul(ar, flat_in, ox_dim(a, i));
  for (int i = 0; i < rank; i++) dims[i] = inf[i];
  if (nin > 2 && in[2]) { /* output_shape: known at import or read before the graph runs */
    int64_t known[IR_MAX_RANK], c;
    int cnt;
    bool k = ox_known_consts(in[2], known, IR_MAX_RANK, &cnt);
    if (!(shape = IN(2))) return rc;
    if (ox_type(shape)->rank != 1 || (k && cnt != rank))
      return ox_fail(x, KILN_ERR_VERIFY, "output_shape must hold %d dims", rank);
    if (!ir_dim_is_const(inf[1], &c)) return ox_unsupported(x, n, "a symbolic channel dim");
    for (int i = 0; i < rank; i++)
      if (!(dims[i] = k ? ir_dim_const(ar, known[i]) : ox_symbol(x, NULL)))
        return ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (ox_type(shape)->dtype != IR_DT_SI64 &&
        !(shape = ox_op(x, "cast", &shape, 1, NULL, "{dtype = si64}")))
      return FAILED();
  }
  const ir_dim *total = dims[0];
  for (int i = 1; i < rank; i++) total = ir_dim_mul(ar, total, dims[i]);
  ir_dtype dt = ox_type(a)->dtype;
  char ty[256];
  if (!(z = ox_scalar(x, dt, 0)) ||
      !(z = ox_op(x, "broadcast_to", (kiln_value *[]){z, shape}, shape ? 2 : 1,
                  ox_type_text(ty, sizeof ty, dt, rank, dims), NULL)) ||
      !(z = ox_reshape(x, z, 1, &total)) || !(a = ox_reshape(x, a, 1, &flat_in)) ||
      !(ix = ox_reshape(x, ix, 1, &flat_in)) ||
      (shape && !(ix = move_indices(x, ix, inf, shape, rank))) ||
      !(r = ox_op(x, "scatter", (kiln_value *[]){z, a, ix}, 3, NULL, "{axis = 0}")) ||
      !(r = ox_reshape(x, r, rank, dims)))
    return FAILED();
  out[0]->v = r;
  return 0;
}
