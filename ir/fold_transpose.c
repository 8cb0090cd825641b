/* fold_transpose.c - mo.matmul(A, transpose(B)) as one matmul that reads B
 * transposed (ir_graph_fold_transpose_b, ir.h).
 *
 * A mo.transpose (or mo.permute) that swaps exactly the last two axes of a
 * rank >= 2 value, whose result is used once, as operand 1 of a mo.matmul,
 * and is no graph output, leaves the graph: the matmul reads the
 * transpose's operand directly and carries kiln.transpose_b = 1 (operand 1
 * then has shape [..., N, K]; infer.c, interp.c and every lowering read it
 * so). A GEMM packs B anyway, so packing it from the transposed layout
 * costs nothing extra, where a separate transpose writes and reads the
 * whole matrix once more (q k^T in attention; x W^T with weights stored
 * [out, in], as PyTorch exports them).
 * Assumes a verified graph; keeps it verified (the matmul's result type is
 * unchanged). The transpose node and its result leave g->nodes and
 * g->values, which are renumbered; a transpose that a run-time check names
 * stays (none do today). */
#include <stdlib.h>

#include "ir.h"

/* n swaps exactly the last two axes of its rank >= 2 operand. */
static bool swaps_last_two(const ir_node *n) {
  if (n->nin != 1 || n->nout != 1) return false;
  int r = n->in[0]->type.rank;
  if (r < 2) return false;
  if (n->op == IR_OP_TRANSPOSE) {
    int64_t a = ir_node_attr_int(n, "axis_1", 0), b = ir_node_attr_int(n, "axis_2", 0);
    if (a < 0) a += r;
    if (b < 0) b += r;
    return (a == r - 2 && b == r - 1) || (a == r - 1 && b == r - 2);
  }
  if (n->op == IR_OP_PERMUTE) {
    const ir_attr *d = ir_node_attr(n, "dims");
    if (!d || d->kind != IR_ATTR_INTS || d->u.ints.n != r) return false;
    for (int i = 0; i < r - 2; i++)
      if (d->u.ints.v[i] != i && d->u.ints.v[i] != i - r) return false;
    int64_t x = d->u.ints.v[r - 2], y = d->u.ints.v[r - 1];
    return (x == r - 1 || x == -1) && (y == r - 2 || y == -2);
  }
  return false;
}

static bool checked(const ir_graph *g, const ir_node *n) {
  for (int i = 0; i < g->nchecks; i++)
    if (g->checks[i].node == n) return true;
  return false;
}

int ir_graph_fold_transpose_b(ir_graph *g, ir_diag *d) {
  if (!g) return ir_diag_set(d, (ir_loc){0, 0}, "ir_graph_fold_transpose_b: no graph");
  bool *drop = calloc((size_t)g->nnodes + 1, sizeof *drop); /* by node id */
  if (!drop) return ir_diag_set(d, (ir_loc){0, 0}, "out of memory folding transposes");
  int folded = 0;
  for (int i = 0; i < g->nnodes; i++) {
    ir_node *mm = g->nodes[i];
    if (mm->op != IR_OP_MATMUL || mm->nin != 2 || ir_node_attr_int(mm, "kiln.transpose_b", 0))
      continue;
    ir_node *tr = mm->in[1]->def;
    if (!tr || !swaps_last_two(tr) || ir_value_uses(g, mm->in[1]) != 1 || checked(g, tr)) continue;
    if (ir_node_set_attr_int(g, mm, "kiln.transpose_b", 1) < 0) {
      folded = ir_diag_set(d, mm->loc, "out of memory folding transposes");
      break; /* the matmuls folded so far are whole; their transposes go below */
    }
    mm->in[1] = tr->in[0];
    drop[tr->id] = true;
    folded++;
  }
  ir_graph_drop_nodes(g, drop);
  free(drop);
  return folded;
}
