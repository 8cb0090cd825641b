/* interp_repeat.c - the reference interpreter's routine for
 * mo.repeat_interleave (ops.def is its meaning).
 *
 * x is seen as [outer, D, inner] around the axis (flattened: [1, numel, 1]);
 * for each outer row, element i of the axis is copied repeats[i] times (the
 * attribute's value, or the repeats tensor's element i, or its only one) in
 * order. A negative count, or counts whose sum is not the result's axis dim,
 * is an error before anything is written past the result.
 * Assumes a verified node; the tensors' shapes are checked again here, so a
 * malformed call fails with a message. */
#include <string.h>

#include "interp_impl.h"

int ir_ref_repeat_interleave(const ir_node *n, const ir_tensor *x, const ir_tensor *reps,
                             ir_tensor *y, char *msg, size_t msglen) {
  int64_t axis = ir_node_attr_int(n, "axis", INT64_MIN), rep = ir_node_attr_int(n, "repeats", 1);
  int64_t outer = 1, d = ir_tensor_numel(x), inner = 1, yd;
  int ax = 0;
  if (x->dtype != y->dtype) return ir_ref_fail(msg, msglen, "operand and result types differ");
  if (axis == INT64_MIN) {
    if (y->rank != 1) return ir_ref_fail(msg, msglen, "the result is not 1-D");
  } else {
    if (axis < -x->rank || axis >= x->rank || y->rank != x->rank)
      return ir_ref_fail(msg, msglen, "axis or rank out of range");
    ax = (int)(axis < 0 ? axis + x->rank : axis);
    for (int a = 0; a < x->rank; a++) {
      if (a != ax && x->shape[a] != y->shape[a])
        return ir_ref_fail(msg, msglen, "the result's axis %d differs from the input's", a);
      if (a < ax) outer *= x->shape[a];
      if (a > ax) inner *= x->shape[a];
    }
    d = x->shape[ax];
  }
  yd = y->shape[ax];
  int64_t len = reps ? ir_tensor_numel(reps) : 1;
  if (reps && (reps->rank != 1 || (len != d && len != 1)))
    return ir_ref_fail(msg, msglen, "repeats has %lld elements but the axis has %lld",
                       (long long)len, (long long)d);
  size_t row = ir_dtype_size(x->dtype) * (size_t)inner;
  for (int64_t o = 0; o < outer; o++) {
    int64_t pos = 0;
    for (int64_t i = 0; i < d; i++) {
      int64_t k = reps ? ir_ref_ld_i(reps, len == 1 ? 0 : i) : rep;
      if (k < 0)
        return ir_ref_fail(msg, msglen, "repeats[%lld] is %lld", (long long)i, (long long)k);
      if (k > yd - pos)
        return ir_ref_fail(msg, msglen, "repeats sum past the result's axis dim %lld",
                           (long long)yd);
      for (int64_t j = 0; j < k; j++, pos++)
        if (row > 0)
          memcpy(ir_ref_elem(y, (o * yd + pos) * inner), ir_ref_elem(x, (o * d + i) * inner),
                 row);
    }
    if (pos != yd)
      return ir_ref_fail(msg, msglen, "repeats sum to %lld but the result's axis dim is %lld",
                         (long long)pos, (long long)yd);
  }
  return 0;
}
