/* slice_dyn.c - ONNX Slice whose starts or ends are symbolic dims (known at
 * import as dims, not as constants), as PyTorch exports slicing a
 * [1, max_len] buffer (position or token type ids) up to the sequence
 * length. kiln's slice_tensor takes constant bounds only, so each sliced
 * axis becomes a gather of start + step * (0, 1, ..., len - 1), with len
 * the symbolic (end - start) ceildiv step. Bounds past the dim are not
 * clamped here (a symbolic end cannot be compared with the dim at import):
 * such an index is out of range and the gather reports a data error at run
 * time. Starts must be constants and steps positive constants. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* 0 .. len - 1, or len - 1 .. 0 (reverse), as a rank-1 si64 value. */
static kiln_value *iota(ox *x, const ir_dim *len, bool reverse) {
  char ty[256];
  kiln_value *k = ox_scalar(x, IR_DT_SI64, 1), *c;
  if (!k) return NULL;
  ox_type_text(ty, sizeof ty, IR_DT_SI64, 1, &len);
  if (!(c = ox_op(x, "broadcast_to", &k, 1, ty, NULL))) return NULL;
  return ox_op(x, "cumsum", &c, 1, NULL, "{axis = 0, exclusive = true, reverse = %s}",
               reverse ? "true" : "false");
}

kiln_value *ox_iota(ox *x, const ir_dim *len) { return iota(x, len, false); }
kiln_value *ox_iota_reversed(ox *x, const ir_dim *len) { return iota(x, len, true); }

kiln_value *ox_iota_along(ox *x, const ir_dim *len, int axis, int rank) {
  const ir_dim *dims[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) dims[d] = d == axis ? len : ir_dim_const(x->ir->arena, 1);
  kiln_value *p = ox_iota(x, len);
  return p ? ox_reshape(x, p, rank, dims) : NULL;
}

bool ox_slice_is_dynamic(const ox_val *const *in, int nin) {
  for (int i = 1; i <= 2 && i < nin; i++) {
    const ox_val *v = in[i];
    if (!v || !v->known) continue;
    for (int64_t j = 0; j < v->numel; j++) {
      int64_t c;
      if (!ir_dim_is_const(v->e[j], &c)) return true;
    }
  }
  return false;
}

/* A bound normalized against dim d: negative constants count from the end,
 * constants past 2^62 mean "to the end". */
static const ir_dim *bound(ox *x, const ir_dim *b, const ir_dim *d) {
  int64_t c;
  if (!ir_dim_is_const(b, &c)) return b;
  if (c > (INT64_C(1) << 62)) return d;
  if (c < 0) return ir_dim_add(x->ir->arena, d, ir_dim_const(x->ir->arena, c));
  return b;
}

int ox_slice_dynamic(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out) {
  BEGIN;
  ox_val *s = in[1], *e = nin > 2 ? in[2] : NULL;
  if (!s || !e || !s->known || !e->known || s->rank != 1 || e->rank != 1 || s->numel != e->numel)
    return ox_unsupported(x, n, "symbolic starts or ends need both as known 1-D data of one length");
  int64_t ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int na = 0, nsp = 0;
  if (nin > 3 && in[3] && !ox_known_consts(in[3], ax, IR_MAX_RANK, &na))
    return ox_unsupported(x, n, "axes '%s' are not known at import", in[3]->name);
  if (nin > 4 && in[4] && !ox_known_consts(in[4], sp, IR_MAX_RANK, &nsp))
    return ox_unsupported(x, n, "steps '%s' are not known at import", in[4]->name);
  int ns = (int)s->numel;
  if (ns > IR_MAX_RANK || (na && na != ns) || (nsp && nsp != ns))
    return ox_fail(x, KILN_ERR_VERIFY, "starts, ends, axes and steps differ in length");
  kiln_value *a = IN(0);
  if (!a) return rc;
  int rank = ox_type(a)->rank;
  for (int i = 0; i < ns; i++) {
    int axis;
    if (!ox_axis(na ? ax[i] : i, rank, &axis))
      return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
    int64_t step = nsp ? sp[i] : 1, c;
    if (step <= 0)
      return ox_unsupported(x, n, "a step of %lld with symbolic bounds (only positive steps)",
                            (long long)step);
    const ir_dim *d = ox_dim(a, axis);
    const ir_dim *lo = bound(x, s->e[i], d), *hi = bound(x, e->e[i], d);
    if (!lo || !hi) return ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (!ir_dim_is_const(lo, &c))
      return ox_unsupported(x, n, "a symbolic start on axis %d (only ends may be symbolic)", axis);
    const ir_dim *len = ir_dim_sub(x->ir->arena, hi, lo);
    if (len && step > 1) len = ir_dim_ceildiv(x->ir->arena, len, step, NULL);
    if (!len) return ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    kiln_value *idx = ox_iota(x, len);
    if (idx && step != 1) idx = OP2("mul", idx, ox_scalar(x, IR_DT_SI64, (double)step));
    if (idx && c != 0) idx = OP2("add", idx, ox_scalar(x, IR_DT_SI64, (double)c));
    if (!idx || !(a = ox_op(x, "gather", (kiln_value *[]){a, idx}, 2, NULL, "{axis = %d}", axis)))
      return FAILED();
  }
  out[0]->v = a;
  return 0;
}
