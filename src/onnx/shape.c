/* shape.c - dims on the ONNX side: dim_param names -> kiln symbols
 * (sanitized to identifiers; unnamed unknown dims get fresh names), known
 * integer data whose elements are dims (what Shape produces and Gather /
 * Concat / arithmetic carry along), and Reshape's target with 0 and -1
 * resolved symbolically: -1 is the input's element count divided by the
 * other target dims, after cancelling the factors both sides share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

bool ox_axis(int64_t a, int rank, int *out) {
  if (a < -rank || a >= rank) return false;
  *out = (int)(a < 0 ? a + rank : a);
  return true;
}

bool ox_dtype_is_known_kind(ir_dtype dt) { return dt == IR_DT_BOOL || ir_dtype_is_int(dt); }

const ir_dim *ox_symbol(ox *x, const char *name) {
  char buf[128];
  size_t k = 0;
  if (name)
    for (const char *p = name; *p && k < sizeof buf - 1; p++) {
      char c = *p;
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                (k > 0 && c >= '0' && c <= '9');
      if (!ok && k == 0 && c >= '0' && c <= '9') buf[k++] = 'd';
      buf[k++] = ok || (c >= '0' && c <= '9') ? c : '_';
    }
  buf[k] = 0;
  int *counter = x->counter ? x->counter : &x->nsym;
  if (k == 0) snprintf(buf, sizeof buf, "unk_%d", (*counter)++);
  while (!name && ir_graph_symbol(x->ir, buf, strlen(buf), false) >= 0) /* fresh */
    snprintf(buf, sizeof buf, "unk_%d", (*counter)++);
  int s = ir_graph_symbol(x->ir, buf, strlen(buf), true);
  if (s < 0) return NULL;
  return ir_dim_sym(x->ir->arena, s, x->ir->syms[s]);
}

const char *ox_count_rows_type(ox *x, int64_t cols, char *buf, size_t cap) {
  const ir_dim *dims[2] = {ox_symbol(x, NULL), ir_dim_const(x->ir->arena, cols)};
  if (!dims[0] || !dims[1]) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return ox_type_text(buf, cap, IR_DT_SI64, 2, dims);
}

int ox_set_known(ox *x, ox_val *v, ir_dtype dt, int rank, const int64_t *shape,
                 const ir_dim *const *e) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  const ir_dim **copy = ir_arena_alloc(x->ir->arena, (size_t)(n ? n : 1) * sizeof *copy);
  if (!copy) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (n) memcpy(copy, e, (size_t)n * sizeof *copy);
  v->known = true;
  v->dtype = dt;
  v->rank = rank;
  for (int i = 0; i < rank; i++) v->shape[i] = shape[i];
  v->numel = n;
  v->e = copy;
  return 0;
}

bool ox_run_time_data(const ox_val *v) {
  const char *why;
  return v && !v->known && !v->init && v->v &&
         !ir_value_read_blocker((const ir_value *)v->v, &why);
}

bool ox_known_consts(const ox_val *v, int64_t *out, int max, int *n) {
  if (!v || !v->known || v->numel > max) return false;
  for (int64_t i = 0; i < v->numel; i++)
    if (!ir_dim_is_const(v->e[i], &out[i])) return false;
  *n = (int)v->numel;
  return true;
}

/* Remove from a[] the first dim equal to d; true when one was found. */
static bool take(const ir_dim **a, int *na, const ir_dim *d) {
  for (int i = 0; i < *na; i++)
    if (ir_dim_equal(a[i], d)) {
      a[i] = a[--*na];
      return true;
    }
  return false;
}

int ox_reshape_dims(ox *x, const kiln_value *in, const ox_val *shape, bool allowzero,
                    const ir_dim **dims, int *n) {
  if (!shape->known || shape->rank != 1)
    return ox_unsupported(x, x->node, "the target shape '%s' is not known at import",
                          shape->name);
  if (shape->numel > IR_MAX_RANK)
    return ox_unsupported(x, x->node, "target rank %lld is over kiln's %d",
                          (long long)shape->numel, IR_MAX_RANK);
  const ir_type *t = ox_type(in);
  ir_arena *a = x->ir->arena;
  int infer = -1;
  *n = (int)shape->numel;
  for (int i = 0; i < *n; i++) {
    int64_t c;
    const ir_dim *d = shape->e[i];
    if (ir_dim_is_const(d, &c) && c == 0 && !allowzero) {
      if (i >= t->rank) return ox_fail(x, KILN_ERR_VERIFY, "target dim %d is 0 (copy) but the input has rank %d", i, t->rank);
      dims[i] = t->dims[i];
    } else if (ir_dim_is_const(d, &c) && c == -1) {
      if (infer >= 0) return ox_fail(x, KILN_ERR_VERIFY, "more than one -1 in the target shape");
      infer = i;
      dims[i] = NULL;
    } else if (ir_dim_is_const(d, &c) && c < 0) {
      return ox_fail(x, KILN_ERR_VERIFY, "target dim %d is %lld", i, (long long)c);
    } else {
      dims[i] = d;
    }
  }
  if (infer < 0) return 0;
  /* -1 = prod(input) / prod(other target dims): cancel shared factors first */
  const ir_dim *num[IR_MAX_RANK];
  int nn = 0, nd = 0;
  int64_t cnum = 1, cden = 1, c;
  for (int i = 0; i < t->rank; i++) {
    if (ir_dim_is_const(t->dims[i], &c)) cnum *= c;
    else num[nn++] = t->dims[i];
  }
  for (int i = 0; i < *n; i++) {
    if (i == infer) continue;
    if (ir_dim_is_const(dims[i], &c)) cden *= c;
    else if (!take(num, &nn, dims[i])) nd++;
  }
  if (nd > 0) { /* products of several dims: compare the whole symbolic parts */
    const ir_dim *pn = ir_dim_const(a, 1), *pd = ir_dim_const(a, 1);
    for (int i = 0; i < t->rank && pn; i++)
      if (!ir_dim_is_const(t->dims[i], &c)) pn = ir_dim_mul(a, pn, t->dims[i]);
    for (int i = 0; i < *n && pd; i++)
      if (i != infer && !ir_dim_is_const(dims[i], &c)) pd = ir_dim_mul(a, pd, dims[i]);
    if (!pn || !pd) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (!ir_dim_equal(pn, pd))
      return ox_unsupported(x, x->node, "cannot infer the -1 of the target shape symbolically");
    nn = 0;
  }
  if (cden == 0) return ox_fail(x, KILN_ERR_VERIFY, "-1 in a target shape with a 0 dim");
  const ir_dim *r = ir_dim_const(a, 1);
  for (int i = 0; i < nn && r; i++) r = ir_dim_mul(a, r, num[i]);
  if (r && cnum % cden == 0) {
    r = ir_dim_mul(a, r, ir_dim_const(a, cnum / cden));
  } else if (r) {
    r = ir_dim_mul(a, r, ir_dim_const(a, cnum));
    if (r && nn == 0) return ox_fail(x, KILN_ERR_VERIFY, "%lld elements do not reshape into a multiple of %lld", (long long)cnum, (long long)cden);
    if (r) r = ir_dim_floordiv(a, r, cden, NULL);
  }
  if (!r) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  dims[infer] = r;
  return 0;
}
