/* ops_control.c - ONNX If as a mo.if: then_branch and else_branch become
 * its regions, the values they read from enclosing scopes its operands
 * (after the predicate), in one order for both. The branches must agree in
 * output count, dtypes and ranks; a result dim is the branches' dim where
 * both have the same one the outer graph knows, else a fresh symbol (set
 * when the node runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"

static int import_branch(ox *x, ox_sub *s, const char *name, const Onnx__GraphProto *g,
                         const ox_names *names, kiln_value **caps, int *ncap) {
  if (g->n_input)
    return ox_fail(x, KILN_ERR_VERIFY, "%s takes %zu inputs; If's branches take none", name,
                   g->n_input);
  if (ox_sub_open(x, s, name) < 0) return -1;
  int rc = ox_sub_captures(s, names, caps, NULL, ncap);
  if (rc) return rc;
  if ((rc = ox_sub_body(s, g))) return rc;
  kiln_value *outs[64];
  for (size_t i = 0; i < g->n_output; i++)
    if (!(outs[i] = ox_sub_output(s, g, i, &rc))) return rc;
  if (kiln_graph_set_outputs(s->x.g, outs, (int)g->n_output, NULL, x->st) < 0)
    return ox_fail(x, kiln_status_code(x->st), "%s: %s", name, kiln_status_message(x->st));
  return 0;
}

/* The mo.if's result types into types[nout]. */
static int result_types(ox *x, ox_sub *br, int nout, char (*types)[1024]) {
  for (int i = 0; i < nout; i++) {
    const ir_value *const *o0 = (const ir_value *const *)br[0].x.ir->outputs;
    const ir_value *const *o1 = (const ir_value *const *)br[1].x.ir->outputs;
    const ir_type *a = &o0[i]->type, *b = &o1[i]->type;
    if (a->dtype != b->dtype || a->rank != b->rank)
      return ox_fail(x, KILN_ERR_VERIFY, "output %d: then_branch gives %s of rank %d, "
                     "else_branch %s of rank %d", i, ir_dtype_name(a->dtype), a->rank,
                     ir_dtype_name(b->dtype), b->rank);
    const ir_dim *dims[IR_MAX_RANK];
    for (int d = 0; d < a->rank; d++) {
      const ir_dim *da = ox_sub_dim_out(&br[0], a->dims[d]);
      const ir_dim *db = ox_sub_dim_out(&br[1], b->dims[d]);
      dims[d] = da && db && ir_dim_equal(da, db) ? da : ox_symbol(x, NULL);
      if (!dims[d]) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ox_type_text(types[i], sizeof types[i], a->dtype, a->rank, dims);
  }
  return 0;
}

int ox_op_If(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  const Onnx__AttributeProto *ta = ox_attr(n, "then_branch"), *ea = ox_attr(n, "else_branch");
  const Onnx__GraphProto *g[2] = {ta ? ta->g : NULL, ea ? ea->g : NULL};
  if (!g[0] || !g[1])
    return ox_fail(x, KILN_ERR_VERIFY, "the %s attribute (a graph) is missing",
                   g[0] ? "else_branch" : "then_branch");
  if (g[0]->n_output != g[1]->n_output)
    return ox_fail(x, KILN_ERR_VERIFY, "then_branch gives %zu outputs, else_branch %zu: they "
                   "must agree", g[0]->n_output, g[1]->n_output);
  if (g[0]->n_output != (size_t)nout)
    return ox_fail(x, KILN_ERR_VERIFY, "the branches give %zu outputs, the node has %d",
                   g[0]->n_output, nout);
  int r;
  if ((r = ox_body_tensors_only(x, n, g[0])) || (r = ox_body_tensors_only(x, n, g[1]))) return r;
  if (nin < 1 || !in[0]) return ox_fail(x, KILN_ERR_VERIFY, "the condition input is absent");
  kiln_value *c = ox_scalar_input(x, in, nin, 0, IR_DT_BOOL, "the condition", &rc);
  if (!c) return rc;
  ox_names names = {0};
  ox_sub br[2] = {0};
  kiln_value **ops = NULL;
  char (*types)[1024] = calloc((size_t)nout, sizeof *types);
  const char **tp = calloc((size_t)nout, sizeof *tp);
  rc = -1;
  if (!types || !tp) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (ox_free_names(x, g, 2, &names) < 0) goto done;
  if (!(ops = calloc((size_t)names.n + 1, sizeof *ops))) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  ops[0] = c;
  int ncap = 0;
  /* both branches, so that the unsupported nodes of each are listed */
  if ((rc = import_branch(x, &br[0], "then_branch", g[0], &names, ops + 1, &ncap)) < 0) goto done;
  int rc_else = import_branch(x, &br[1], "else_branch", g[1], &names, ops + 1, &ncap);
  if (rc_else < 0 || rc > 0) {
    rc = rc_else < 0 ? -1 : 1;
    goto done;
  }
  if ((rc = rc_else) || (rc = result_types(x, br, nout, types))) goto done;
  for (int i = 0; i < nout; i++) tp[i] = types[i];
  kiln_graph *regions[2] = {br[0].x.g, br[1].x.g};
  kiln_value *v = kiln_graph_add_region_op(x->g, "mo.if", ops, 1 + ncap, regions, 2, tp, nout,
                                           x->st);
  if (!v) {
    rc = ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
    goto done;
  }
  for (int i = 0; i < nout; i++) out[i]->v = kiln_value_result(v, i);
  rc = 0;
done:
  ox_sub_close(&br[0]);
  ox_sub_close(&br[1]);
  ox_names_free(&names);
  free(ops);
  free(types);
  free(tp);
  return rc;
}
