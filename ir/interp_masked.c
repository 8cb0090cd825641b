/* interp_masked.c - the reference interpreter's routines for
 * mo.masked_scatter and mo.shape_to_tensor (ops.def is their meaning).
 *
 * masked_scatter walks the result in row-major order with a running count
 * of the mask's true elements; the mask is read broadcast (numpy's rules,
 * right-aligned, a size-1 axis repeated). A true element past the updates'
 * end is an error before anything is read there.
 * shape_to_tensor writes the operand's run-time dims.
 * Assumes a verified node whose run-time checks passed; the tensors' shapes
 * are checked again here, so a malformed call fails with a message. */
#include <string.h>

#include "interp_impl.h"

int ir_ref_masked_scatter(const ir_node *n, const ir_tensor *x, const ir_tensor *m,
                          const ir_tensor *u, ir_tensor *y, char *msg, size_t msglen) {
  (void)n;
  if (x->dtype != y->dtype || u->dtype != x->dtype || x->rank != y->rank ||
      memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->rank) != 0 || m->rank > x->rank)
    return ir_ref_fail(msg, msglen, "operand and result types do not fit");
  int64_t mst[IR_MAX_RANK] = {0}, stride = 1;
  for (int i = m->rank - 1; i >= 0; i--) {
    int ax = i + x->rank - m->rank;
    if (m->shape[i] != 1 && m->shape[i] != x->shape[ax])
      return ir_ref_fail(msg, msglen, "the mask's axis %d (%lld) does not broadcast to %lld", i,
                         (long long)m->shape[i], (long long)x->shape[ax]);
    mst[ax] = m->shape[i] == 1 ? 0 : stride;
    stride *= m->shape[i];
  }
  int64_t total = ir_tensor_numel(x), nu = ir_tensor_numel(u), k = 0;
  int64_t c[IR_MAX_RANK] = {0}, mi = 0;
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t e = 0; e < total; e++) {
    if (ir_ref_ld_i(m, mi)) {
      if (k >= nu)
        return ir_ref_fail(msg, msglen,
                           "the mask selects more elements than the updates have (%lld)",
                           (long long)nu);
      memcpy(ir_ref_elem(y, e), ir_ref_elem(u, k++), es);
    } else {
      memcpy(ir_ref_elem(y, e), ir_ref_elem(x, e), es);
    }
    for (int a = x->rank - 1; a >= 0; a--) { /* the next index, and the mask's offset */
      mi += mst[a];
      if (++c[a] < x->shape[a]) break;
      mi -= mst[a] * c[a];
      c[a] = 0;
    }
  }
  return 0;
}

int ir_ref_shape_to_tensor(const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  if (y->dtype != IR_DT_SI64 || y->rank != 1 || y->shape[0] != x->rank)
    return ir_ref_fail(msg, msglen, "the result is not si64 [%d]", x->rank);
  for (int a = 0; a < x->rank; a++) ir_ref_st_i(y, a, x->shape[a]);
  return 0;
}
