/* pad_data.c - ONNX Pad whose pads (and constant_value) are run-time data
 * (a graph input or computed from inputs: ox_run_time_data).
 *
 * mo.pad takes its paddings as an attribute, so each padded axis becomes a
 * gather instead: the result positions 0 .. d + before + after - 1 (a
 * mo.range whose length symbol kiln reads from the data before the graph
 * runs) minus `before` give the source index, mapped into the axis by the
 * mode: "constant" clamps it and puts the value where it falls outside,
 * "edge" clamps it, "reflect" folds it with period 2 (d - 1) as numpy's
 * "reflect" (an axis of 1 element repeats it). Negative pads crop. A result
 * length below 0 makes the range's step 0, a data error; so does padding an
 * empty axis in "edge" or "reflect" mode (nothing to copy), where ONNX's
 * answer is undefined. The axes must be known at import. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* v padded along `axis` by the rank-0 si64 values b (before) and e (after). */
static kiln_value *pad_axis(ox *x, kiln_value *v, int axis, kiln_value *b, kiln_value *e,
                            const char *mode, kiln_value *value) {
  const ir_type *t = ox_type(v);
  kiln_value *shp, *d, *len, *z, *one, *bad, *step, *pos, *src, *hi, *idx, *g;
  const ir_dim *sym = ox_symbol(x, NULL), *along[IR_MAX_RANK];
  if (!sym) return NULL;
  char ty[256];
  ox_type_text(ty, sizeof ty, IR_DT_SI64, 1, &sym);
  if (!(shp = ox_op(x, "shape_to_tensor", &v, 1, NULL, NULL)) || !(d = ox_entry(x, shp, axis)) ||
      !(len = OP2("add", d, b)) || !(len = OP2("add", len, e)) ||
      !(z = ox_scalar(x, IR_DT_SI64, 0)) || !(one = ox_scalar(x, IR_DT_SI64, 1)) ||
      !(bad = OP2("greater", z, len)))
    return NULL;
  bool clamp_only = strcmp(mode, "constant") != 0;
  kiln_value *empty;
  if (clamp_only && (!(empty = OP2("equal", d, z)) || !(bad = OP2("logical_or", bad, empty))))
    return NULL;
  if (!(step = ox_op(x, "where", (kiln_value *[]){bad, z, one}, 3, NULL, NULL)) ||
      !(pos = ox_op(x, "range", (kiln_value *[]){z, len, step}, 3, ty, NULL)) ||
      !(src = OP2("sub", pos, b)) || !(hi = OP2("sub", d, one)))
    return NULL;
  if (strcmp(mode, "reflect") == 0) {
    /* r = src mod 2 (d - 1), folded back past d - 1; period 0 (d = 1): 0 */
    kiln_value *per, *per1, *r, *over, *back, *single;
    if (!(per = OP2("add", hi, hi)) || !(single = OP2("equal", per, z)) ||
        !(per1 = ox_op(x, "where", (kiln_value *[]){single, one, per}, 3, NULL, NULL)) ||
        !(r = OP2("mod", src, per1)) || !(over = OP2("greater", r, hi)) ||
        !(back = OP2("sub", per, r)) ||
        !(idx = ox_op(x, "where", (kiln_value *[]){over, back, r}, 3, NULL, NULL)))
      return NULL;
  } else if (!(idx = OP2("max", src, z)) || !(idx = OP2("min", idx, hi)) ||
             !(idx = OP2("max", idx, z))) {
    return NULL;
  }
  if (!(g = ox_op(x, "gather", (kiln_value *[]){v, idx}, 2, NULL, "{axis = %d}", axis)))
    return NULL;
  if (clamp_only) return g;
  /* constant: the value where the source falls outside [0, d) */
  kiln_value *lo_out, *hi_out, *out;
  for (int i = 0; i < t->rank; i++) along[i] = i == axis ? sym : ir_dim_const(x->ir->arena, 1);
  if (!(lo_out = OP2("greater", z, src)) || !(hi_out = OP2("greater", src, hi)) ||
      !(out = OP2("logical_or", lo_out, hi_out)) || !(out = ox_reshape(x, out, t->rank, along)))
    return NULL;
  return ox_op(x, "where", (kiln_value *[]){out, value, g}, 3, NULL, NULL);
}

int ox_pad_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *pads, ox_val *cval,
                double value, const int64_t *axes, int na, const char *mode, ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(a), *pt = ox_type(pads->v);
  int64_t len;
  if (pt->rank != 1 || !ir_dim_is_const(pt->dims[0], &len))
    return ox_unsupported(x, n, "input '%s' (pads) is run-time data of a length not known at "
                          "import", pads->name);
  if (len != 2 * na)
    return ox_fail(x, KILN_ERR_VERIFY, "pads has %lld entries for %d axes", (long long)len, na);
  kiln_value *p = pads->v, *val;
  if (pt->dtype != IR_DT_SI64 && !(p = ox_op(x, "cast", &p, 1, NULL, "{dtype = si64}")))
    return FAILED();
  if (cval) {
    int rc = 0;
    ox_val *cin[1] = {cval};
    if (!(val = ox_in(x, cin, 1, 0, &rc))) return rc;
    if (ox_type(val)->rank != 0 && !(val = ox_reshape(x, val, 0, NULL))) return FAILED();
    if (ox_type(val)->dtype != t->dtype &&
        !(val = ox_op(x, "cast", &val, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype))))
      return FAILED();
  } else if (!(val = ox_scalar(x, t->dtype, value))) {
    return FAILED();
  }
  kiln_value *v = a;
  for (int i = 0; i < na; i++) {
    int ax;
    kiln_value *b, *e;
    if (!ox_axis(axes[i], t->rank, &ax))
      return ox_fail(x, KILN_ERR_VERIFY, "axis %lld out of range", (long long)axes[i]);
    if (!(b = ox_entry(x, p, i)) || !(e = ox_entry(x, p, na + i)) ||
        !(v = pad_axis(x, v, ax, b, e, mode, val)))
      return FAILED();
  }
  out->v = v;
  return 0;
}
