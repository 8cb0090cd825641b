/* interp_ops.c - the reference interpreter's routines for the scan class
 * (mo.cumsum) and the band_part class (mo.band_part): plain row-major loops, the meaning the JIT and the SIMT
 * kernels must match (ops.def documents the attributes).
 *
 * Assumes a verified node; re-checks the run-time shapes it indexes with
 * (the operand and result of one shape) and reports a mismatch, so no
 * graph or input makes it read or write out of bounds.
 * cumsum: floats accumulate in double and every result is rounded once
 * from the running sum; integers accumulate in 64 bits and the store wraps
 * to the dtype (the same low bits as wrapping at every step). */
#include "interp_impl.h"

#include <stdio.h>
#include <string.h>

static bool norm_axis(int64_t axis, int rank, int *out) {
  if (axis < -(int64_t)rank || axis >= rank) return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

int ir_ref_scan(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  const ir_attr *a = ir_node_attr_or_default(n, "axis");
  int axis;
  if (!a || a->kind != IR_ATTR_INT || !norm_axis(a->u.i, x->rank, &axis))
    return ir_ref_fail(msg, msglen, "axis is out of range for rank %d", x->rank);
  bool same = x->rank == y->rank && x->dtype == y->dtype;
  for (int i = 0; same && i < x->rank; i++) same = x->shape[i] == y->shape[i];
  if (!same) return ir_ref_fail(msg, msglen, "the result's shape or dtype differs from the operand's");
  bool fl = ir_ref_is_fc(x->dtype);
  if (!fl && !ir_ref_is_ic(x->dtype))
    return ir_ref_fail(msg, msglen, "dtype %s is not supported here", ir_dtype_name(x->dtype));
  bool excl = ir_node_attr_bool(n, "exclusive", false);
  bool rev = ir_node_attr_bool(n, "reverse", false);
  int64_t outer = 1, inner = 1, len = x->shape[axis];
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  for (int i = axis + 1; i < x->rank; i++) inner *= x->shape[i];
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * len * inner + in;
      double fs = 0.0;
      uint64_t is = 0;
      for (int64_t k = 0; k < len; k++) {
        int64_t j = rev ? len - 1 - k : k, e = base + j * inner;
        if (fl) {
          double v = ir_ref_ld_f(x, e);
          if (!excl) fs += v;
          ir_ref_st_f(y, e, fs);
          if (excl) fs += v;
        } else {
          uint64_t v = (uint64_t)ir_ref_ld_i(x, e);
          if (!excl) is += v;
          ir_ref_st_i(y, e, (int64_t)is);
          if (excl) is += v;
        }
      }
    }
  }
  return 0;
}

int ir_ref_band_part(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg,
                     size_t msglen) {
  bool same = x->rank == y->rank && x->dtype == y->dtype && x->rank >= 2;
  for (int i = 0; same && i < x->rank; i++) same = x->shape[i] == y->shape[i];
  if (!same) return ir_ref_fail(msg, msglen, "the result's shape or dtype differs from the operand's");
  const ir_attr *la = ir_node_attr_or_default(n, "num_lower");
  const ir_attr *ua = ir_node_attr_or_default(n, "num_upper");
  if (!la || la->kind != IR_ATTR_INT || !ua || ua->kind != IR_ATTR_INT)
    return ir_ref_fail(msg, msglen, "num_lower and num_upper must be integers");
  int64_t lo = la->u.i, up = ua->u.i;
  bool excl = ir_node_attr_bool(n, "exclude", false);
  int64_t M = x->shape[x->rank - 2], N = x->shape[x->rank - 1];
  int64_t total = ir_tensor_numel(x);
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t e = 0; e < total; e++) {
    int64_t col = e % N, row = (e / N) % M;
    bool in = (lo < 0 || row - col <= lo) && (up < 0 || col - row <= up);
    char *dst = ir_ref_elem(y, e);
    if (in != excl)
      memcpy(dst, ir_ref_elem(x, e), es);
    else
      memset(dst, 0, es); /* +0, integer 0, false */
  }
  return 0;
}
