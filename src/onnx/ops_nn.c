/* ops_nn.c - ONNX MatMul (1-D operands promoted and squeezed back), Gemm
 * (transA / transB, alpha, beta, optional C), Softmax / LogSoftmax (one axis
 * from opset 13; before it, the input coerced to 2-D at `axis`),
 * LayerNormalization (any axis, through a 2-D view; Mean and InvStdDev
 * outputs computed when asked), the Reduce* family (axes as attribute or
 * input, keepdims, noop_with_empty_axes; run-time axes in data_axes.c),
 * ArgMax / ArgMin and Hardmax. Dropout is in ops_random.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"



/* prod(dims[from..to)) */
static const ir_dim *prod(ox *x, const ir_type *t, int from, int to) {
  const ir_dim *p = ir_dim_const(x->ir->arena, 1);
  for (int i = from; p && i < to; i++) p = ir_dim_mul(x->ir->arena, p, t->dims[i]);
  return p;
}

int ox_op_MatMul(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL, *r;
  if (!b) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!ir_dtype_in_set(dt, IR_DTS_FI))
    return ox_unsupported(x, n, "%s operands (kiln's matmul takes %s)", ir_dtype_name(dt),
                          ir_dtype_set_name(IR_DTS_FI));
  int ra = ox_type(a)->rank, rb = ox_type(b)->rank;
  if (ra == 0 || rb == 0) return ox_fail(x, KILN_ERR_VERIFY, "MatMul of a scalar");
  if (ra == 1 && !(a = ox_op(x, "unsqueeze", &a, 1, NULL, "{axis = 0}"))) return FAILED();
  if (rb == 1 && !(b = ox_op(x, "unsqueeze", &b, 1, NULL, "{axis = -1}"))) return FAILED();
  if (!(r = OP2("matmul", a, b))) return FAILED();
  if (rb == 1 && !(r = ox_op(x, "squeeze", &r, 1, NULL, "{axis = -1}"))) return FAILED();
  if (ra == 1 && !(r = ox_op(x, "squeeze", &r, 1, NULL, "{axis = %d}", rb == 1 ? -1 : -2)))
    return FAILED();
  out[0]->v = r;
  return 0;
}

int ox_op_Gemm(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL, *c = NULL, *r;
  if (!b) return rc;
  if (nin > 2 && in[2] && !(c = IN(2))) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!ir_dtype_is_float(dt)) return ox_unsupported(x, n, "%s Gemm", ir_dtype_name(dt));
  if (ox_attr_int(n, "transA", 0) &&
      !(a = ox_op(x, "transpose", &a, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  if (ox_attr_int(n, "transB", 0) &&
      !(b = ox_op(x, "transpose", &b, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  if (!(r = OP2("matmul", a, b))) return FAILED();
  double alpha = ox_attr_float(n, "alpha", 1.0), beta = ox_attr_float(n, "beta", 1.0);
  kiln_value *k;
  if (alpha != 1.0 && (!(k = ox_scalar(x, dt, alpha)) || !(r = OP2("mul", r, k)))) return FAILED();
  if (c && beta != 0.0) {
    if (beta != 1.0 && (!(k = ox_scalar(x, dt, beta)) || !(c = OP2("mul", c, k)))) return FAILED();
    if (!(r = OP2("add", r, c))) return FAILED();
  }
  out[0]->v = r;
  return 0;
}

static int softmax(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   const char *op) {
  BEGIN;
  kiln_value *a = IN(0), *r;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int axis;
  if (!ox_axis(ox_attr_int(n, "axis", x->opset >= 13 ? -1 : 1), t->rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range for rank %d", t->rank);
  if (x->opset >= 13 || axis == t->rank - 1) {
    if (!(r = ox_op(x, op, &a, 1, NULL, "{axis = %d}", axis))) return FAILED();
  } else { /* the input as 2-D [prod(d < axis), prod(d >= axis)] */
    const ir_dim *d2[2] = {prod(x, t, 0, axis), prod(x, t, axis, t->rank)};
    const ir_dim *back[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) back[i] = t->dims[i];
    int rank = t->rank;
    if (!d2[0] || !d2[1]) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (!(r = ox_reshape(x, a, 2, d2)) || !(r = ox_op(x, op, &r, 1, NULL, "{axis = -1}")) ||
        !(r = ox_reshape(x, r, rank, back)))
      return FAILED();
  }
  out[0]->v = r;
  return 0;
}

int ox_op_Softmax(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return softmax(x, n, in, nin, out, "softmax");
}
int ox_op_LogSoftmax(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     int nout) {
  return softmax(x, n, in, nin, out, "logsoftmax");
}

int ox_op_LayerNormalization(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                             int nout) {
  BEGIN;
  kiln_value *a = IN(0), *g = a ? IN(1) : NULL, *b = NULL, *r;
  if (!g) return rc;
  if (nin > 2 && in[2] && !(b = IN(2))) return rc;
  const ir_type *t = ox_type(a);
  ir_dtype dt = t->dtype;
  int axis, rank = t->rank;
  if (!ox_axis(ox_attr_int(n, "axis", -1), rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range for rank %d", rank);
  double eps = ox_attr_float(n, "epsilon", 1e-5);
  const ir_dim *back[IR_MAX_RANK], *d2[2] = {prod(x, t, 0, axis), prod(x, t, axis, rank)};
  for (int i = 0; i < rank; i++) back[i] = t->dims[i];
  if (!d2[0] || !d2[1]) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  kiln_value *x2 = a;
  bool flat = axis != rank - 1;
  if (flat && (!(x2 = ox_reshape(x, a, 2, d2)) || !(g = ox_reshape(x, g, 1, &d2[1])) ||
               (b && !(b = ox_reshape(x, b, 1, &d2[1])))))
    return FAILED();
  if (!b) { /* no bias: zeros */
    kiln_value *z = ox_scalar(x, dt, 0.0);
    char ty[1024];
    if (!z || !(b = ox_op(x, "broadcast_to", &z, 1, ox_type_text(ty, sizeof ty, dt, 1, &d2[1]),
                          NULL)))
      return FAILED();
  }
  if (ox_type(g)->rank != 1 && !(g = ox_reshape(x, g, 1, &d2[1]))) return FAILED();
  if (ox_type(b)->rank != 1 && !(b = ox_reshape(x, b, 1, &d2[1]))) return FAILED();
  if (!(r = ox_op(x, "layer_norm", (kiln_value *[]){x2, g, b}, 3, NULL, "{epsilon = %.17g}", eps)))
    return FAILED();
  if (flat && !(r = ox_reshape(x, r, rank, back))) return FAILED();
  out[0]->v = r;
  if (nout < 2 || ((!out[1] || !*out[1]->name) && (nout < 3 || !*out[2]->name))) return 0;
  /* Mean and InvStdDev: shape d[:axis] + [1] * (rank - axis) */
  const ir_dim *ms[IR_MAX_RANK];
  for (int i = 0; i < rank; i++) ms[i] = i < axis ? t->dims[i] : ir_dim_const(x->ir->arena, 1);
  kiln_value *xf = x2, *mean, *d, *var, *k;
  if (!flat && !(xf = ox_reshape(x, a, 2, d2))) return FAILED();
  if (!(mean = ox_op(x, "mean", &xf, 1, NULL, "{axis = -1}")) || !(d = OP2("sub", xf, mean)) ||
      !(d = OP2("mul", d, d)) || !(var = ox_op(x, "mean", &d, 1, NULL, "{axis = -1}")) ||
      !(k = ox_scalar(x, dt, eps)) || !(var = OP2("add", var, k)) || !(var = OP1("rsqrt", var)))
    return FAILED();
  if (*out[1]->name && !(out[1]->v = ox_reshape(x, mean, rank, ms))) return FAILED();
  if (nout > 2 && *out[2]->name && !(out[2]->v = ox_reshape(x, var, rank, ms))) return FAILED();
  return 0;
}

/* ---- reductions ---- */
typedef enum { R_PLAIN, R_SQUARE, R_ABS, R_SQRT_SQUARE, R_LOG, R_LOG_EXP } red_kind;

static int reduce(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  const char *op, red_kind kind, int axes_input_opset) {
  BEGIN;
  kiln_value *a = IN(0), *r;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int rank = t->rank;
  int64_t axes[IR_MAX_RANK];
  int na = 0;
  bool keep = ox_attr_int(n, "keepdims", 1) != 0;
  const ir_type *at = nin > 1 && in[1] && in[1]->v ? ox_type(in[1]->v) : NULL;
  int64_t alen = -1;
  if (x->opset >= axes_input_opset && at && !in[1]->known && !in[1]->init &&
      ox_run_time_data(in[1]) && !(at->rank == 1 && ir_dim_is_const(at->dims[0], &alen) &&
                                   alen == 0)) {
    /* axes from data (an empty list known by its type is the no-axes case) */
    r = a;
    if ((kind == R_SQUARE || kind == R_SQRT_SQUARE) && !(r = OP2("mul", r, r))) return FAILED();
    if (kind == R_ABS && !(r = OP1("abs", r))) return FAILED();
    if (kind == R_LOG_EXP && !(r = OP1("exp", r))) return FAILED();
    if ((rc = ox_reduce_data(x, n, r, op, in[1], keep, ox_attr_int(n, "noop_with_empty_axes", 0),
                             &r)))
      return rc;
    if (kind == R_SQRT_SQUARE && !(r = OP1("sqrt", r))) return FAILED();
    if ((kind == R_LOG || kind == R_LOG_EXP) && !(r = OP1("log", r))) return FAILED();
    out[0]->v = r;
    return 0;
  }
  if (x->opset >= axes_input_opset) {
    if (alen == 0) na = 0;
    else if (nin > 1 && in[1] && (!ox_known_consts(in[1], axes, IR_MAX_RANK, &na)))
      return ox_unsupported(x, n, "axes not known at import");
  } else {
    const int64_t *av = ox_attr_ints(n, "axes", &na);
    if (na > IR_MAX_RANK) return ox_fail(x, KILN_ERR_VERIFY, "%d axes", na);
    for (int i = 0; i < na; i++) axes[i] = av[i];
  }
  if (na == 0 && ox_attr_int(n, "noop_with_empty_axes", 0)) {
    out[0]->v = a;
    return 0;
  }
  bool red[IR_MAX_RANK] = {0};
  if (na == 0)
    for (int i = 0; i < rank; i++) red[i] = true;
  for (int i = 0; i < na; i++) {
    int ax;
    if (!ox_axis(axes[i], rank, &ax)) return ox_fail(x, KILN_ERR_VERIFY, "axis %lld out of range", (long long)axes[i]);
    red[ax] = true;
  }
  r = a;
  if ((kind == R_SQUARE || kind == R_SQRT_SQUARE) && !(r = OP2("mul", r, r))) return FAILED();
  if (kind == R_ABS && !(r = OP1("abs", r))) return FAILED();
  if (kind == R_LOG_EXP && !(r = OP1("exp", r))) return FAILED();
  for (int i = 0; i < rank; i++)
    if (red[i] && !(r = ox_op(x, op, &r, 1, NULL, "{axis = %d}", i))) return FAILED();
  if (kind == R_SQRT_SQUARE && !(r = OP1("sqrt", r))) return FAILED();
  if ((kind == R_LOG || kind == R_LOG_EXP) && !(r = OP1("log", r))) return FAILED();
  if (!keep) {
    const ir_dim *d[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < rank; i++)
      if (!red[i]) d[k++] = t->dims[i];
    if (!(r = ox_reshape(x, r, k, d))) return FAILED();
  }
  out[0]->v = r;
  return 0;
}

int ox_reduce_plain(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    const char *op, int axes_input_opset) {
  return reduce(x, n, in, nin, out, op, R_PLAIN, axes_input_opset);
}

#define REDUCE(Name, op, kind, opset)                                                             \
  int ox_op_##Name(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,           \
                   int nout) {                                                                    \
    return reduce(x, n, in, nin, out, op, kind, opset);                                           \
  }
REDUCE(ReduceSum, "sum", R_PLAIN, 13)
REDUCE(ReduceMean, "mean", R_PLAIN, 18)
REDUCE(ReduceMax, "max", R_PLAIN, 18)
REDUCE(ReduceMin, "min", R_PLAIN, 18)
REDUCE(ReduceSumSquare, "sum", R_SQUARE, 18)
REDUCE(ReduceL1, "sum", R_ABS, 18)
REDUCE(ReduceL2, "sum", R_SQRT_SQUARE, 18)
REDUCE(ReduceLogSum, "sum", R_LOG, 18)
REDUCE(ReduceLogSumExp, "sum", R_LOG_EXP, 18)

/* ArgMax / ArgMin. select_last_index = 1: the op on the data reversed along
 * the axis (a gather by len - 1 - i), its first index mapped back through
 * the same reversal, so ties and NaN behave as the op's own. */
static int arg(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
               const char *op) {
  BEGIN;
  kiln_value *a = IN(0), *r, *rev = NULL;
  if (!a) return rc;
  int axis;
  if (!ox_axis(ox_attr_int(n, "axis", 0), ox_type(a)->rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  if (ox_attr_int(n, "select_last_index", 0)) {
    if (!(rev = ox_iota_reversed(x, ox_dim(a, axis))) ||
        !(a = ox_op(x, "gather", (kiln_value *[]){a, rev}, 2, NULL, "{axis = %d}", axis)))
      return FAILED();
  }
  if (!(r = ox_op(x, op, &a, 1, NULL, "{axis = %d}", axis))) return FAILED();
  if (rev && !(r = ox_op(x, "gather", (kiln_value *[]){rev, r}, 2, NULL, "{axis = 0}")))
    return FAILED();
  if (!ox_attr_int(n, "keepdims", 1) &&
      !(r = ox_op(x, "squeeze", &r, 1, NULL, "{axis = %d}", axis)))
    return FAILED();
  out[0]->v = r;
  return 0;
}

int ox_op_ArgMax(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return arg(x, n, in, nin, out, "argmax");
}
int ox_op_ArgMin(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return arg(x, n, in, nin, out, "argmin");
}

/* Hardmax: 1 where an element is the first maximum along the axis (argmax
 * compared with the positions along it), else 0, in the input's dtype. */
int ox_op_Hardmax(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *r, *pos;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int axis;
  if (!ox_axis(ox_attr_int(n, "axis", -1), t->rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  if (!(r = ox_op(x, "argmax", &a, 1, NULL, "{axis = %d}", axis)) ||
      !(pos = ox_iota_along(x, t->dims[axis], axis, t->rank)) ||
      !(r = OP2("equal", r, pos)) ||
      !(r = ox_op(x, "cast", &r, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype))))
    return FAILED();
  out[0]->v = r;
  return 0;
}
