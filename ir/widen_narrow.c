/* widen_narrow.c - narrow dtypes computed wider (ir_graph_widen_narrow, ir.h).
 *
 * An op on narrow dtypes (ir_dtype_is_narrow) means its counterpart on the
 * operands widened exactly (ir_dtype_widened: f16 / bf16 -> f32; si8, si16,
 * ui8, ui16 -> si32; ui32 -> si64), with each narrow result brought back once:
 * rounded to nearest even (floats) or wrapped to its low bits (integers, as
 * every integer cast does). So reductions, softmax, norms and matmul
 * accumulate in f32, as MAX and every BLAS do; integer sums, products and
 * matmuls wrap as if computed in the narrow type (arithmetic modulo 2^w),
 * while comparisons, division, mean and max see the exact values (unsigned
 * ones included); and one lowering per op serves every dtype. This pass
 * makes that explicit for the compilers: before node n it inserts mo.cast
 * to the wider dtype of each operand n widens (ir_node_widens_operand; one
 * cast per distinct value), n then computes wide results, and after n a
 * mo.cast back defines each original narrow result value, so every use and
 * graph output stays as it was. ir_graph_fuse then folds the casts into the
 * elementwise kernels next to them.
 *
 * Assumes a verified graph without mo.fused nodes (it runs before fusion);
 * keeps it verified. The new nodes keep n's location, so an error in them
 * points at the op the user wrote. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* A mo.cast of v to `to`, appended to g (result named freshly). */
static ir_node *cast_to(ir_graph *g, ir_value *v, ir_dtype to, ir_loc loc, ir_diag *d) {
  ir_attr a = {.name = "dtype", .kind = IR_ATTR_DTYPE, .u.dtype = to};
  ir_type t = v->type;
  t.dtype = to;
  return ir_graph_add_node(g, IR_OP_CAST, &v, 1, &a, 1, 1, &t, NULL, loc, d);
}

/* Rewrite n (see above), appending its casts to g->nodes. -1 with d. */
static int widen(ir_graph *g, ir_node *n, ir_diag *d) {
  for (int k = 0; k < n->nin; k++) {
    ir_value *v = n->in[k];
    if (!ir_node_widens_operand(n, k)) continue;
    ir_node *c = cast_to(g, v, ir_dtype_widened(v->type.dtype), n->loc, d);
    if (!c) return -1;
    for (int j = k; j < n->nin; j++) /* the same value twice: one cast */
      if (n->in[j] == v) n->in[j] = c->out[0];
  }
  int first_post = g->nnodes;
  for (int k = 0; k < n->nout; k++) {
    ir_value *v = n->out[k];
    if (!ir_dtype_is_narrow(v->type.dtype)) continue;
    /* the cast's fresh result becomes n's wide result; v moves to the cast */
    ir_node *c = cast_to(g, v, v->type.dtype, n->loc, d);
    if (!c) return -1;
    ir_value *w = c->out[0];
    w->type = v->type;
    w->type.dtype = ir_dtype_widened(v->type.dtype);
    w->def = n;
    w->index = k;
    n->out[k] = w;
    c->in[0] = w;
    c->out[0] = v;
    v->def = c;
    v->index = 0;
  }
  /* the op's own rule on the f32 operands; its checks are g's already */
  int nchecks = g->nchecks;
  int rc = ir_infer_node(g, n, d);
  g->nchecks = nchecks;
  if (rc < 0) return -1;
  for (int i = first_post; i < g->nnodes; i++) /* a result the op types from an attribute */
    if (g->nodes[i]->in[0]->type.dtype != ir_dtype_widened(g->nodes[i]->out[0]->type.dtype))
      return ir_diag_set(d, n->loc,
                         "mo.%s cannot compute in %s: its result dtype does not follow its "
                         "operands", ir_op_get(n->op)->name,
                         ir_dtype_name(g->nodes[i]->out[0]->type.dtype));
  return 0;
}

int ir_graph_widen_narrow(ir_graph *g, ir_diag *d) {
  int n0 = g->nnodes, count = 0;
  for (int i = 0; i < n0; i++)
    count += !g->nodes[i]->body && ir_node_computes_narrow(g->nodes[i]);
  if (count == 0) return 0;
  ir_node **old = malloc((size_t)n0 * sizeof *old);
  int *from = malloc((size_t)(n0 + 1) * sizeof *from); /* node i's casts: [from[i], from[i+1]) */
  if (!old || !from) {
    free(old);
    free(from);
    return ir_diag_set(d, (ir_loc){0, 0}, "out of memory widening narrow-dtype ops");
  }
  memcpy(old, g->nodes, (size_t)n0 * sizeof *old);
  int rc = 0;
  for (int i = 0; i < n0 && rc == 0; i++) {
    from[i] = g->nnodes;
    if (!old[i]->body && ir_node_computes_narrow(old[i])) rc = widen(g, old[i], d);
  }
  from[n0] = g->nnodes;
  if (rc == 0) {
    /* topological order again: each node between its casts (operand casts
     * were made before result casts, and a cast's operand is either an
     * earlier value or the node's own result) */
    ir_node **added = malloc((size_t)(g->nnodes - n0 + 1) * sizeof *added);
    if (!added) {
      rc = ir_diag_set(d, (ir_loc){0, 0}, "out of memory widening narrow-dtype ops");
    } else {
      memcpy(added, g->nodes + n0, (size_t)(g->nnodes - n0) * sizeof *added);
      int at = 0;
      for (int i = 0; i < n0; i++) {
        ir_node *const *mine = added + (from[i] - n0);
        int nmine = from[i + 1] - from[i], pre = 0;
        while (pre < nmine && !ir_dtype_is_narrow(mine[pre]->out[0]->type.dtype)) pre++;
        for (int j = 0; j < pre; j++) g->nodes[at++] = mine[j];
        g->nodes[at++] = old[i];
        for (int j = pre; j < nmine; j++) g->nodes[at++] = mine[j];
      }
      for (int i = 0; i < g->nnodes; i++) g->nodes[i]->id = i;
      free(added);
    }
  }
  free(old);
  free(from);
  return rc < 0 ? -1 : count;
}
