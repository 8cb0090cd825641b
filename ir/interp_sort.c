/* interp_sort.c - the reference interpreter's routine for the sorting class
 * (top_k, bottom_k, argsort): the meaning the JIT and SIMT kernels must
 * match (ops.def documents it).
 *
 * Each line along the axis is sorted whole by a stable merge sort of its
 * indices, then cut to k: no bounded selection and no threshold (the
 * kernels' way for top_k), so the two check each other. A NaN orders above every number; equal keys
 * keep index order. top_k is the first k of the descending order, bottom_k
 * of the ascending one.
 * Assumes a verified node; re-checks the run-time shapes it indexes with,
 * so no graph or input makes it read or write out of bounds. */
#include "interp_impl.h"

#include <math.h>
#include <stdlib.h>

typedef struct line_keys {
  const ir_tensor *x;
  bool fl, desc;
  int64_t base, stride;
} line_keys;

/* a strictly before b in the requested order (NaN the largest). */
static bool before(const line_keys *L, int64_t a, int64_t b) {
  int64_t ea = L->base + a * L->stride, eb = L->base + b * L->stride;
  if (L->fl) {
    double va = ir_ref_ld_f(L->x, ea), vb = ir_ref_ld_f(L->x, eb);
    bool na = isnan(va), nb = isnan(vb);
    if (na || nb) return L->desc ? na && !nb : nb && !na;
    return L->desc ? va > vb : va < vb;
  }
  int64_t va = ir_ref_ld_i(L->x, ea), vb = ir_ref_ld_i(L->x, eb);
  return L->desc ? va > vb : va < vb;
}

/* Stable bottom-up merge sort of idx[0..n) through tmp. */
static void merge_sort(const line_keys *L, int64_t *idx, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) tmp[o++] = before(L, idx[j], idx[i]) ? idx[j++] : idx[i++];
      while (i < mid) tmp[o++] = idx[i++];
      while (j < hi) tmp[o++] = idx[j++];
    }
    for (int64_t i = 0; i < n; i++) idx[i] = tmp[i];
  }
}

static bool same_but(const ir_tensor *x, const ir_tensor *y, int axis, int64_t len) {
  if (x->rank != y->rank) return false;
  for (int i = 0; i < x->rank; i++)
    if (y->shape[i] != (i == axis ? len : x->shape[i])) return false;
  return true;
}

int ir_ref_sort(const ir_node *n, const ir_tensor *x, ir_tensor *vals, ir_tensor *idx, char *msg,
                size_t msglen) {
  bool arg = n->op == IR_OP_ARGSORT;
  int64_t a = ir_node_attr_int(n, "axis", arg ? 0 : -1);
  if (a < -(int64_t)x->rank || a >= x->rank)
    return ir_ref_fail(msg, msglen, "axis is out of range for rank %d", x->rank);
  int axis = (int)(a < 0 ? a + x->rank : a);
  int64_t len = x->shape[axis];
  int64_t k = arg ? len : ir_node_attr_int(n, "k", 0);
  if (k < 1 && len > 0) return ir_ref_fail(msg, msglen, "k = %lld must be at least 1", (long long)k);
  if (k > len)
    return ir_ref_fail(msg, msglen, "k = %lld exceeds the size of axis %d (%lld)", (long long)k,
                       axis, (long long)len);
  bool fl = ir_ref_is_fc(x->dtype);
  if (!fl && !ir_ref_is_ic(x->dtype))
    return ir_ref_fail(msg, msglen, "dtype %s is not supported here", ir_dtype_name(x->dtype));
  if (idx->dtype != IR_DT_SI64 || !same_but(x, idx, axis, k) ||
      (vals && (vals->dtype != x->dtype || !same_but(x, vals, axis, k))))
    return ir_ref_fail(msg, msglen, "the results' shapes or dtypes do not fit the operand");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  for (int i = axis + 1; i < x->rank; i++) inner *= x->shape[i];
  if (outer == 0 || inner == 0 || len == 0) return 0;
  int64_t *ord = malloc(2 * (size_t)len * sizeof *ord);
  if (!ord) return ir_ref_fail(msg, msglen, "out of memory sorting a line of %lld", (long long)len);
  line_keys L = {x, fl, arg ? !ir_node_attr_bool(n, "ascending", true) : n->op == IR_OP_TOP_K, 0,
                 inner};
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      L.base = o * len * inner + in;
      for (int64_t i = 0; i < len; i++) ord[i] = i;
      merge_sort(&L, ord, ord + len, len);
      int64_t ob = o * k * inner + in;
      for (int64_t j = 0; j < k; j++) {
        ir_ref_st_i(idx, ob + j * inner, ord[j]);
        if (vals) {
          int64_t e = L.base + ord[j] * inner;
          if (fl) ir_ref_st_f(vals, ob + j * inner, ir_ref_ld_f(x, e));
          else ir_ref_st_i(vals, ob + j * inner, ir_ref_ld_i(x, e));
        }
      }
    }
  }
  free(ord);
  return 0;
}
