/* ops_random.c - ONNX RandomUniform, RandomNormal and their *Like forms onto
 * mo.random.uniform / mo.random.normal, and Dropout (training mode draws
 * its mask with mo.random.uniform).
 *
 * The result type is the `shape` attribute (RandomUniform / RandomNormal)
 * or the input's shape (the *Like forms, whose default dtype is the
 * input's), of `dtype` (ONNX's default float); kiln draws f32 and f64 only.
 * ONNX's seed is a float: kiln's generator takes it truncated to an
 * integer. Without one ONNX lets the runtime pick; kiln's draws are a
 * function of (seed, element index) only, so it picks seed 0 and every
 * execute gives the same values. The numbers are kiln's generator's
 * (ops.def), not ONNX Runtime's: the distribution is ONNX's, the values
 * are not the same. */
#include <math.h>
#include <stdio.h>

#include "ox.h"

/* The op and its attributes for node n with result dims dims[rank]. */
static int random_op(ox *x, const Onnx__NodeProto *n, ir_dtype dflt, int rank,
                     const ir_dim *const *dims, ox_val **out, bool normal) {
  ir_dtype dt = dflt;
  const Onnx__AttributeProto *da = ox_attr(n, "dtype");
  if (da && !ox_dtype((int32_t)da->i, &dt))
    return ox_unsupported(x, n, "dtype %lld", (long long)da->i);
  if (dt != IR_DT_F32 && dt != IR_DT_F64)
    return ox_unsupported(x, n, "dtype %s (kiln draws f32 and f64)", ir_dtype_name(dt));
  double seed = ox_attr_float(n, "seed", 0.0);
  if (!isfinite(seed) || fabs(seed) >= 9.0e18) return ox_fail(x, KILN_ERR_VERIFY, "seed %g", seed);
  char ty[1024];
  ox_type_text(ty, sizeof ty, dt, rank, dims);
  kiln_value *v =
      normal ? ox_op(x, "random.normal", NULL, 0, ty, "{mean = %.17g, seed = %lld, std = %.17g}",
                     ox_attr_float(n, "mean", 0.0), (long long)seed, ox_attr_float(n, "scale", 1.0))
             : ox_op(x, "random.uniform", NULL, 0, ty, "{high = %.17g, low = %.17g, seed = %lld}",
                     ox_attr_float(n, "high", 1.0), ox_attr_float(n, "low", 0.0),
                     (long long)seed);
  if (!v) return x->nunsup ? 1 : -1;
  out[0]->v = v;
  return 0;
}

static int from_shape_attr(ox *x, const Onnx__NodeProto *n, ox_val **out, bool normal) {
  int rank;
  const int64_t *shape = ox_attr_ints(n, "shape", &rank);
  if (!shape) return ox_fail(x, KILN_ERR_VERIFY, "the shape attribute is missing");
  if (rank > IR_MAX_RANK) return ox_unsupported(x, n, "rank %d", rank);
  const ir_dim *dims[IR_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return ox_fail(x, KILN_ERR_VERIFY, "shape[%d] is %lld", i, (long long)shape[i]);
    if (!(dims[i] = ir_dim_const(x->ir->arena, shape[i])))
      return ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return random_op(x, n, IR_DT_F32, rank, dims, out, normal);
}

static int like_input(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                      bool normal) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  return random_op(x, n, t->dtype, t->rank, t->dims, out, normal);
}

int ox_op_RandomUniform(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  (void)in, (void)nin, (void)nout;
  return from_shape_attr(x, n, out, false);
}

int ox_op_RandomNormal(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                       int nout) {
  (void)in, (void)nin, (void)nout;
  return from_shape_attr(x, n, out, true);
}

int ox_op_RandomUniformLike(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                            int nout) {
  (void)nout;
  return like_input(x, n, in, nin, out, false);
}

int ox_op_RandomNormalLike(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                           int nout) {
  (void)nout;
  return like_input(x, n, in, nin, out, true);
}

/* Dropout: the input (and a mask of trues) at inference, training_mode
 * absent or false. In training mode (known at import or run-time data) a
 * kept element is x / (1 - ratio), a dropped one 0: keep where a
 * mo.random.uniform draw in [0, 1) of x's shape is >= ratio (ONNX's
 * reference rule; ratio defaults to 0.5). ONNX leaves the generator to the
 * runtime, so a mask with 0 < ratio < 1 differs from another runtime's; with
 * ratio 0 every element is kept and y = x exactly. The seed attribute
 * seeds kiln's generator (0 without one). */
int ox_op_Dropout(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int64_t train = 0;
  int cnt;
  bool run_time = nin > 2 && in[2] && !ox_known_consts(in[2], &train, 1, &cnt);
  if (!in[0]) return ox_fail(x, KILN_ERR_IO, "input 0 is required");
  BEGIN;
  bool want_mask = nout > 1 && *out[1]->name;
  kiln_value *a = IN(0), *one, *mask = NULL;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  char ty[4096];
  if (!run_time && !train) {
    if (want_mask) {
      ox_type_text(ty, sizeof ty, IR_DT_BOOL, t->rank, (const ir_dim *const *)t->dims);
      if (!(one = ox_scalar(x, IR_DT_BOOL, 1)) ||
          !(out[1]->v = ox_op(x, "broadcast_to", &one, 1, ty, NULL)))
        return FAILED();
    }
    return ox_alias(x, out[0], in[0]);
  }
  if (t->dtype != IR_DT_F32 && t->dtype != IR_DT_F64)
    return ox_unsupported(x, n, "training mode on %s (kiln draws f32 and f64)",
                          ir_dtype_name(t->dtype));
  kiln_value *ratio, *u, *keep, *inv, *scale, *y, *z, *on = NULL;
  if (nin > 1 && in[1]) {
    if (!(ratio = IN(1))) return rc;
    if (ox_type(ratio)->rank != 0 && !(ratio = ox_reshape(x, ratio, 0, NULL))) return FAILED();
    if (ox_type(ratio)->dtype != t->dtype &&
        !(ratio = ox_op(x, "cast", &ratio, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype))))
      return FAILED();
  } else if (!(ratio = ox_scalar(x, t->dtype, 0.5))) {
    return FAILED();
  }
  if (run_time && (!(on = IN(2)) ||
                   (ox_type(on)->rank != 0 && !(on = ox_reshape(x, on, 0, NULL))) ||
                   (ox_type(on)->dtype != IR_DT_BOOL &&
                    !(on = ox_op(x, "cast", &on, 1, NULL, "{dtype = bool}")))))
    return rc ? rc : FAILED();
  ox_type_text(ty, sizeof ty, t->dtype, t->rank, (const ir_dim *const *)t->dims);
  if (!(u = ox_op(x, "random.uniform", NULL, 0, ty, "{high = 1.0, low = 0.0, seed = %lld}",
                  (long long)ox_attr_int(n, "seed", 0))) ||
      !(keep = OP2("greater_equal", u, ratio)) || !(one = ox_scalar(x, t->dtype, 1.0)) ||
      !(inv = OP2("sub", one, ratio)) || !(inv = OP2("div", one, inv)) ||
      !(z = ox_scalar(x, t->dtype, 0.0)))
    return FAILED();
  scale = inv;
  if (on && (!(mask = OP1("logical_not", on)) || !(keep = OP2("logical_or", keep, mask)) ||
             !(scale = ox_op(x, "where", (kiln_value *[]){on, inv, one}, 3, NULL, NULL))))
    return FAILED();
  if (!(y = OP2("mul", a, scale)) ||
      !(out[0]->v = ox_op(x, "where", (kiln_value *[]){keep, y, z}, 3, NULL, NULL)))
    return FAILED();
  if (want_mask) out[1]->v = keep;
  return 0;
}
