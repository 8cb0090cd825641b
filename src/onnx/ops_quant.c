/* ops_quant.c - ONNX's integer-quantized ops: MatMulInteger (mo.matmul.integer),
 * QuantizeLinear and DequantizeLinear (per tensor and per axis),
 * DynamicQuantizeLinear and QLinearMatMul, composed from kiln ops.
 *
 * Quantizing is cast(round(x / scale) + zero_point) in f32: mo.round rounds
 * half to even and a float -> integer cast saturates to the target's range,
 * which is ONNX's saturate(). Dequantizing is (x - zero_point) * scale with
 * both integers exact in f32. A per-axis scale or zero point (1-D, one per
 * entry of `axis`) is reshaped to [C, 1, ..., 1] so it broadcasts along that
 * axis. QLinearMatMul takes the exact integer product and scales it in f64
 * by (a_scale * b_scale / y_scale) formed in f32, as ONNX's reference does. */
#include <stdio.h>

#include "ox.h"

/* v (a scale or zero point) set to broadcast along `axis` of a rank-`rank`
 * operand: a scalar or one-element value as it is, a 1-D one reshaped to
 * [C, 1, ...]. NULL on failure (st set, or unsupported recorded). */
static kiln_value *along_axis(ox *x, const Onnx__NodeProto *n, kiln_value *v, int axis,
                              int rank, const char *what) {
  const ir_type *t = ox_type(v);
  int64_t c;
  if (t->rank == 0 || (t->rank == 1 && ir_dim_is_const(t->dims[0], &c) && c == 1)) return v;
  if (t->rank != 1) {
    ox_unsupported(x, n, "%s of rank %d (a scalar or 1-D per axis)", what, t->rank);
    return NULL;
  }
  const ir_dim *one = ir_dim_const(x->ir->arena, 1);
  const ir_dim *dims[IR_MAX_RANK];
  if (!one) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  if (axis < 0) {
    ox_fail(x, KILN_ERR_VERIFY, "%s is one per axis, but axis %lld is out of range for rank %d",
            what, (long long)ox_attr_int(n, "axis", 1), rank);
    return NULL;
  }
  dims[0] = t->dims[0];
  for (int i = 1; i < rank - axis; i++) dims[i] = one;
  return ox_reshape(x, v, rank - axis, dims);
}

/* The `axis` attribute of a per-axis node, normalized for rank (default
 * 1); -1 when out of range, which only a per-axis scale or zero point
 * refuses (a per-tensor one ignores the axis, as ONNX's tests do). */
static int quant_axis(const Onnx__NodeProto *n, int rank) {
  int axis;
  return ox_axis(ox_attr_int(n, "axis", 1), rank, &axis) ? axis : -1;
}

static kiln_value *to_f32(ox *x, kiln_value *v) {
  if (ox_type(v)->dtype == IR_DT_F32) return v;
  return ox_op(x, "cast", &v, 1, NULL, "{dtype = f32}");
}

static bool is_quant_int(ir_dtype dt) {
  return dt == IR_DT_UI8 || dt == IR_DT_SI8 || dt == IR_DT_UI16 || dt == IR_DT_SI16;
}

/* cast(round(xf / scale) + zp) to dt; xf, scale f32, zp NULL or any integer */
static kiln_value *quantize(ox *x, kiln_value *xf, kiln_value *scale, kiln_value *zp,
                            ir_dtype dt) {
  kiln_value *q = OP2("div", xf, scale);
  if (q) q = OP1("round", q);
  if (q && zp) {
    kiln_value *zf = to_f32(x, zp);
    q = zf ? OP2("add", q, zf) : NULL;
  }
  return q ? ox_op(x, "cast", &q, 1, NULL, "{dtype = %s}", ir_dtype_name(dt)) : NULL;
}

int ox_op_QuantizeLinear(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                         int nout) {
  BEGIN;
  kiln_value *a = IN(0), *scale = a ? IN(1) : NULL, *zp = NULL;
  if (!scale) return rc;
  if (nin > 2 && in[2] && !(zp = IN(2))) return rc;
  ir_dtype dt = zp ? ox_type(zp)->dtype : IR_DT_UI8;
  if (!is_quant_int(dt))
    return ox_unsupported(x, n, "quantizing to %s (kiln: ui8, si8, ui16, si16)",
                          ir_dtype_name(dt));
  int rank = ox_type(a)->rank, axis = quant_axis(n, rank);
  if (!(a = to_f32(x, a)) || !(scale = to_f32(x, scale))) return FAILED();
  if (!(scale = along_axis(x, n, scale, axis, rank, "y_scale"))) return FAILED();
  if (zp && !(zp = along_axis(x, n, zp, axis, rank, "y_zero_point"))) return FAILED();
  if (!(out[0]->v = quantize(x, a, scale, zp, dt))) return FAILED();
  return 0;
}

int ox_op_DequantizeLinear(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                           int nout) {
  BEGIN;
  kiln_value *a = IN(0), *scale = a ? IN(1) : NULL, *zp = NULL, *r;
  if (!scale) return rc;
  if (nin > 2 && in[2] && !(zp = IN(2))) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!is_quant_int(dt) && dt != IR_DT_SI32)
    return ox_unsupported(x, n, "dequantizing %s (kiln: ui8, si8, ui16, si16, si32)",
                          ir_dtype_name(dt));
  if (ox_type(scale)->dtype != IR_DT_F32)
    return ox_unsupported(x, n, "a %s scale (kiln: f32)", ir_dtype_name(ox_type(scale)->dtype));
  int rank = ox_type(a)->rank, axis = quant_axis(n, rank);
  if (!(scale = along_axis(x, n, scale, axis, rank, "x_scale"))) return FAILED();
  if (!(r = to_f32(x, a))) return FAILED();
  if (zp) {
    kiln_value *zf = along_axis(x, n, zp, axis, rank, "x_zero_point");
    if (!zf || !(zf = to_f32(x, zf)) || !(r = OP2("sub", r, zf))) return FAILED();
  }
  if (!(out[0]->v = OP2("mul", r, scale))) return FAILED();
  return 0;
}

/* x flattened and reduced by op ("max" / "min") to a scalar */
static kiln_value *reduce_all(ox *x, kiln_value *a, const char *op) {
  const ir_type *t = ox_type(a);
  const ir_dim *numel = ir_dim_const(x->ir->arena, 1);
  for (int i = 0; numel && i < t->rank; i++) numel = ir_dim_mul(x->ir->arena, numel, t->dims[i]);
  if (!numel) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  kiln_value *flat = ox_reshape(x, a, 1, &numel);
  kiln_value *r = flat ? ox_op(x, op, &flat, 1, NULL, "{axis = 0}") : NULL;
  return r ? ox_reshape(x, r, 0, NULL) : NULL;
}

/* ONNX's reference: min / max widened to include 0, scale (max - min) / 255
 * (1 / 255 when they are equal), zero point round(clip(-min / scale, 0, 255)),
 * y = saturate(round(x / scale) + zero point), all ui8. */
int ox_op_DynamicQuantizeLinear(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                                ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  if (ox_type(a)->dtype != IR_DT_F32)
    return ox_unsupported(x, n, "%s input (ONNX: f32)", ir_dtype_name(ox_type(a)->dtype));
  kiln_value *zero = ox_scalar(x, IR_DT_F32, 0), *one = ox_scalar(x, IR_DT_F32, 1);
  kiln_value *q255 = ox_scalar(x, IR_DT_F32, 255);
  kiln_value *hi = zero ? reduce_all(x, a, "max") : NULL;
  kiln_value *lo = hi ? reduce_all(x, a, "min") : NULL;
  if (!one || !q255 || !lo) return FAILED();
  kiln_value *range, *same, *scale, *zpf, *zp;
  if (!(hi = OP2("max", hi, zero)) || !(lo = OP2("min", lo, zero)) ||
      !(range = OP2("sub", hi, lo)) || !(same = OP2("equal", range, zero)) ||
      !(range = ox_op(x, "where", (kiln_value *[]){same, one, range}, 3, NULL, NULL)) ||
      !(scale = OP2("div", range, q255)))
    return FAILED();
  /* qmin - min / scale, clipped to [0, 255], rounded */
  if (!(zpf = OP2("div", lo, scale)) || !(zpf = OP2("sub", zero, zpf)) ||
      !(zpf = OP2("max", zpf, zero)) || !(zpf = OP2("min", zpf, q255)) ||
      !(zpf = OP1("round", zpf)) ||
      !(zp = ox_op(x, "cast", &zpf, 1, NULL, "{dtype = ui8}")))
    return FAILED();
  kiln_value *y = quantize(x, a, scale, zpf, IR_DT_UI8);
  if (!y) return FAILED();
  out[0]->v = y;
  if (nout > 1 && out[1]) out[1]->v = scale;
  if (nout > 2 && out[2]) out[2]->v = zp;
  return 0;
}

/* A zero point of MatMulInteger / QLinearMatMul as mo.matmul.integer takes
 * it: rank <= 1 as it is; ONNX's N-D forms [1.., M, 1] (a's, row = true) and
 * [1.., 1, N] (b's) reshaped to 1-D. NULL when not one of them (recorded). */
static kiln_value *zero_point_1d(ox *x, const Onnx__NodeProto *n, kiln_value *z, bool row) {
  const ir_type *t = ox_type(z);
  if (t->rank <= 1) return z;
  int64_t d;
  int keep = row ? t->rank - 2 : t->rank - 1;
  for (int i = 0; i < t->rank; i++)
    if (i != keep && !(ir_dim_is_const(t->dims[i], &d) && d == 1)) {
      ox_unsupported(x, n, "a %s zero point of rank %d that is not one per %s", row ? "a" : "b",
                     t->rank, row ? "row ([..., M, 1])" : "column ([..., 1, N])");
      return NULL;
    }
  return ox_reshape(x, z, 1, &t->dims[keep]);
}

/* matmul.integer(a, b, a_zp, b_zp) with absent zero points left out (a
 * missing a_zp beside a given b_zp becomes a 0 of a's dtype) */
static kiln_value *matmul_integer(ox *x, const Onnx__NodeProto *n, kiln_value *a, kiln_value *b,
                                  kiln_value *za, kiln_value *zb) {
  for (int k = 0; k < 2; k++) {
    ir_dtype dt = ox_type(k ? b : a)->dtype;
    if (dt != IR_DT_UI8 && dt != IR_DT_SI8) {
      ox_unsupported(x, n, "%s operands (ONNX and kiln: ui8, si8)", ir_dtype_name(dt));
      return NULL;
    }
  }
  if (za && !(za = zero_point_1d(x, n, za, true))) return NULL;
  if (zb && !(zb = zero_point_1d(x, n, zb, false))) return NULL;
  if (zb && !za && !(za = ox_scalar(x, ox_type(a)->dtype, 0))) return NULL;
  kiln_value *ops[4] = {a, b, za, zb};
  return ox_op(x, "matmul.integer", ops, zb ? 4 : za ? 3 : 2, NULL, NULL);
}

int ox_op_MatMulInteger(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL, *za = NULL, *zb = NULL;
  if (!b) return rc;
  if (nin > 2 && in[2] && !(za = IN(2))) return rc;
  if (nin > 3 && in[3] && !(zb = IN(3))) return rc;
  if (!(out[0]->v = matmul_integer(x, n, a, b, za, zb))) return FAILED();
  return 0;
}

/* y = saturate(round(matmul.integer(a, b) * (a_scale * b_scale / y_scale)) +
 * y_zp); a_scale may be one per row ([M]: reshaped to [M, 1]), b_scale one
 * per column ([N]). */
int ox_op_QLinearMatMul(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  BEGIN;
  kiln_value *v[8];
  for (int i = 0; i < 8; i++)
    if (!(v[i] = IN(i))) return rc;
  kiln_value *a = v[0], *sa = v[1], *za = v[2], *b = v[3], *sb = v[4], *zb = v[5];
  kiln_value *sy = v[6], *zy = v[7];
  ir_dtype dt = ox_type(zy)->dtype;
  if (dt != IR_DT_UI8 && dt != IR_DT_SI8)
    return ox_unsupported(x, n, "a %s result (ONNX and kiln: ui8, si8)", ir_dtype_name(dt));
  int ra = ox_type(a)->rank;
  kiln_value *c = matmul_integer(x, n, a, b, za, zb), *f, *k;
  if (!c) return FAILED();
  /* a per-row a_scale [M] scales rows of the [..., M, N] product */
  if (ra >= 2 && !(sa = along_axis(x, n, sa, ra - 2, ra, "a_scale"))) return FAILED();
  if (!(k = OP2("mul", sa, sb)) || !(k = OP2("div", k, sy)) ||
      !(k = ox_op(x, "cast", &k, 1, NULL, "{dtype = f64}")) ||
      !(f = ox_op(x, "cast", &c, 1, NULL, "{dtype = f64}")) || !(f = OP2("mul", f, k)) ||
      !(f = OP1("round", f)) || !(k = ox_op(x, "cast", &zy, 1, NULL, "{dtype = f64}")) ||
      !(f = OP2("add", f, k)) ||
      !(out[0]->v = ox_op(x, "cast", &f, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return FAILED();
  return 0;
}
