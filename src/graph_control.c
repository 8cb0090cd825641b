/* graph_control.c - the C builder's control flow (kiln/graph.h): mo.if and
 * mo.while with their regions, and the module's subgraphs for mo.call.
 *
 * Regions and subgraphs are kiln_graphs the caller built and finished
 * (kiln_graph_set_outputs); these calls copy them (the caller keeps and
 * frees its graphs, whose values stay valid). A failed call leaves the
 * graph as it was (the node is dropped, as kiln_graph_add_op does). */
#include <stdlib.h>
#include <string.h>

#include "ir/control.h"
#include "rt.h"

static bool owns(const kiln_graph *g, const kiln_value *kv) {
  const ir_value *v = (const ir_value *)kv;
  return v && v->id >= 0 && v->id < g->ir->nvalues && g->ir->values[v->id] == v;
}

KILN_API kiln_value *kiln_graph_add_region_op(kiln_graph *g, const char *op,
                                              kiln_value *const *operands, int noperands,
                                              kiln_graph *const *regions, int nregions,
                                              const char *const *result_types, int nresults,
                                              kiln_status *st) {
  const char *nm = op && strncmp(op, "mo.", 3) == 0 ? op + 3 : op ? op : "";
  ir_op id = strcmp(nm, "if") == 0 ? IR_OP_IF : IR_OP_WHILE;
  kiln_value *res = NULL;
  ir_value **in = NULL;
  ir_type *decl = NULL;
  if (!g || !op || (strcmp(nm, "if") != 0 && strcmp(nm, "while") != 0)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_region_op: %s",
           !g ? "graph is NULL" : "op must be mo.if or mo.while");
    goto done;
  }
  if (noperands < 1 || !operands || nregions != 2 || !regions || !regions[0] || !regions[1] ||
      nresults < 0 || (nresults > 0 && !result_types) || (id == IR_OP_IF && nresults < 1)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "mo.%s takes at least one operand, two regions and %s", nm,
           id == IR_OP_IF ? "a result type per result" : "a result type per carried value "
                                                         "(or none: the operands' types)");
    goto done;
  }
  int nout = id == IR_OP_WHILE && nresults == 0 ? noperands : nresults;
  in = calloc((size_t)noperands, sizeof *in);
  decl = calloc((size_t)nout + 1, sizeof *decl);
  if (!in || !decl) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < noperands; i++) {
    if (!owns(g, operands[i])) {
      rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s: operand %d is %s", nm, i,
             operands[i] ? "a value of another graph" : "NULL");
      goto done;
    }
    in[i] = (ir_value *)operands[i];
  }
  ir_diag d = {0};
  for (int i = 0; i < nout; i++) {
    if (nresults == 0) {
      decl[i] = in[i]->type;
    } else if (!result_types[i] ||
               ir_parse_type(g->ir, result_types[i], strlen(result_types[i]), &decl[i], &d) < 0) {
      rt_err(st, KILN_ERR_PARSE, "result type %d of mo.%s: %d:%d: %s", i, nm, d.line, d.col,
             result_types[i] ? d.msg : "NULL");
      goto done;
    }
  }
  ir_graph *ir = g->ir;
  int nnodes = ir->nnodes, nvalues = ir->nvalues, nchecks = ir->nchecks;
  ir_node *n = ir_graph_add_node(ir, id, in, noperands, NULL, 0, nout, decl, NULL,
                                 (ir_loc){0, 0}, &d);
  if (!n) {
    rt_err(st, KILN_ERR_VERIFY, "mo.%s: %s", nm, d.msg);
    goto done;
  }
  ir_graph *r[2] = {ir_graph_clone(regions[0]->ir), ir_graph_clone(regions[1]->ir)};
  if (!r[0] || !r[1] || !ir_node_set_origin(ir, n, g->origin)) {
    ir_graph_free(r[0]);
    ir_graph_free(r[1]);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  } else if (ir_node_set_regions(ir, n, r, 2) < 0) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  } else if (ir_infer_node(ir, n, &d) < 0) {
    rt_err(st, KILN_ERR_VERIFY, "%s", d.msg);
    ir_node_set_regions(ir, n, NULL, 0); /* frees them */
  } else {
    res = (kiln_value *)n->out[0];
    rt_ok(st);
  }
  if (!res) {
    ir->nnodes = nnodes;
    ir->nvalues = nvalues;
    ir->nchecks = nchecks;
  }
done:
  free(in);
  free(decl);
  return res;
}

KILN_API int kiln_graph_add_subgraph(kiln_graph *g, kiln_graph *sub, kiln_status *st) {
  if (!g || !sub) {
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_subgraph: %s is NULL",
                  g ? "subgraph" : "graph");
  }
  if (sub->ir->nsubgraphs) {
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_graph_add_subgraph: a subgraph has no subgraphs of its own (add them "
                  "to the main graph)");
  }
  ir_diag d = {0};
  ir_graph *copy = ir_graph_clone(sub->ir);
  if (!copy) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (ir_module_add_subgraph(g->ir, copy, &d) < 0)
    return rt_err(st, KILN_ERR_VERIFY, "%s", d.msg);
  rt_ok(st);
  return 0;
}
