/* interp_buffer.c - the reference semantics of the buffer ops (ops.def's
 * BUFFER class): plain element loops, independent of the runtime's copies
 * (src/buffers.c) so each checks the other.
 *
 * A buffer's tensor is its memory: the caller's for a graph input (mutated
 * in place, as MAX does), the interpreter's for mo.buffer.create (zeroed).
 * A chain's tensor is a one-byte placeholder. Nodes run in order, which the
 * chain rules (buffer.h) make an order every load and store agrees with. */
#include <stdio.h>
#include <string.h>

#include "interp_impl.h"

static int64_t numel(const ir_tensor *t) {
  int64_t n = 1;
  for (int a = 0; a < t->rank; a++) n *= t->shape[a];
  return n;
}

static void copy_elems(const ir_tensor *src, const ir_tensor *dst) {
  size_t es = ir_dtype_size(src->dtype);
  for (int64_t i = 0; i < numel(src); i++)
    memcpy(ir_ref_elem(dst, i), ir_ref_elem(src, i), es);
}

/* dst[start + idx] = src[idx] for every index of src, after checking that
 * the slice lies in dst. */
static int store_slice(const ir_tensor *dst, const ir_tensor *src, const ir_tensor *start,
                       char *msg, size_t msglen) {
  int64_t st[IR_MAX_RANK];
  for (int a = 0; a < dst->rank; a++) {
    st[a] = ir_ref_ld_i(start, a);
    if (st[a] < 0 || st[a] > dst->shape[a] - src->shape[a])
      return ir_ref_fail(msg, msglen, "the slice [%lld, %lld) of axis %d is outside the buffer's "
                         "%lld", (long long)st[a], (long long)(st[a] + src->shape[a]), a,
                         (long long)dst->shape[a]);
  }
  size_t es = ir_dtype_size(src->dtype);
  int64_t idx[IR_MAX_RANK] = {0};
  for (int64_t i = 0; i < numel(src); i++) {
    int64_t off = 0;
    for (int a = 0; a < dst->rank; a++) off = off * dst->shape[a] + st[a] + idx[a];
    memcpy(ir_ref_elem(dst, off), ir_ref_elem(src, i), es);
    for (int a = src->rank - 1; a >= 0; a--) {
      if (++idx[a] < src->shape[a]) break;
      idx[a] = 0;
    }
  }
  return 0;
}

int ir_ref_buffer(const ir_node *n, const ir_tensor *const *in, ir_tensor *const *out, char *msg,
                  size_t msglen) {
  switch (n->op) {
  case IR_OP_CHAIN_CREATE: return 0;
  case IR_OP_BUFFER_CREATE:
    memset(out[0]->data, 0, (size_t)numel(out[0]) * ir_dtype_size(out[0]->dtype));
    return 0;
  case IR_OP_MUTABLE_LOAD: copy_elems(in[0], out[0]); return 0;
  case IR_OP_MUTABLE_STORE: copy_elems(in[1], in[0]); return 0;
  case IR_OP_MUTABLE_STORE_SLICE: return store_slice(in[0], in[1], in[2], msg, msglen);
  default: break;
  }
  return ir_ref_fail(msg, msglen, "no reference semantics for this buffer op");
}
