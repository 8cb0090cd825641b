/* ops_random.c - ONNX RandomUniform, RandomNormal and their *Like forms onto
 * mo.random.uniform / mo.random.normal.
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
