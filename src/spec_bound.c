/* spec_bound.c - the largest value each symbol of a graph can take, as the
 * graph itself declares it (spec_policy.h, rt_spec_sym_max), so that the
 * async policy never buckets, plans or specializes past it: a decoder whose
 * KV caches hold 640 tokens reads cache[:, :total], and a pow2 bucket of
 * total past 512 ends at 640, not 1024 (whose variant no execute could use).
 *
 * Two facts bound a symbol s, both checked at every execute, so a binding
 * past them is an error before any kernel runs:
 *   - a run-time check "C >= s" with C a constant (ir.h's ir_check: a
 *     tensor stored into a buffer's slice fits the buffer's static axis);
 *   - a slice read from data (mo.slice_tensor, at the top level or in a
 *     fused group) whose result axis is s over a static axis of length C:
 *     a slice is never longer than the axis it cuts (ir_ref_slice_axis).
 * A symbol neither bounds stays at INT64_MAX. */
#include <stdint.h>

#include "ir/ir.h"
#include "spec_policy.h"

static void lower(int64_t *max, int s, int64_t c) {
  if (s >= 0 && c >= 0 && c < max[s]) max[s] = c;
}

/* The slices of g (and of its fused groups' bodies) read from data. */
static void slices(const ir_graph *g, int64_t *max) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_FUSED && n->body) slices(n->body, max);
    if (n->op != IR_OP_SLICE_DATA || n->nin < 1 || n->nout < 1) continue;
    const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
    for (int a = 0; a < y->rank && a < x->rank; a++) {
      int64_t c;
      if (ir_dim_is_sym(y->dims[a]) && ir_dim_is_const(x->dims[a], &c))
        lower(max, y->dims[a]->sym, c);
    }
  }
}

void rt_spec_sym_max(const ir_graph *g, int64_t *max) {
  for (int s = 0; s < g->nsyms; s++) max[s] = INT64_MAX;
  for (int i = 0; i < g->nchecks; i++) {
    const ir_check *c = &g->checks[i];
    int64_t v;
    if (c->kind == IR_CHECK_GE && ir_dim_is_const(c->lhs, &v) && ir_dim_is_sym(c->rhs))
      lower(max, c->rhs->sym, v);
  }
  slices(g, max);
}
