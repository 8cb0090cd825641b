/* ops_loop.c - ONNX Loop (opsets 1 to 21, tensor values) as a mo.while
 * (loop.c): trip count M and / or condition, loop-carried values, scan
 * outputs stacked along a new first axis. Sequence and optional values are
 * refused by name. */
#include <stdio.h>
#include <string.h>

#include "loop.h"

static const Onnx__GraphProto *graph_attr(const Onnx__NodeProto *n, const char *name) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a ? a->g : NULL;
}

static const char *kind_name(Onnx__TypeProto__ValueCase k) {
  return k == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE   ? "a sequence"
         : k == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "an optional"
         : k == ONNX__TYPE_PROTO__VALUE_MAP_TYPE      ? "a map"
                                                      : "not a tensor";
}

int ox_body_tensors_only(ox *x, const Onnx__NodeProto *n, const Onnx__GraphProto *g) {
  for (size_t k = 0; k < g->n_input + g->n_output; k++) {
    const Onnx__ValueInfoProto *vi = k < g->n_input ? g->input[k] : g->output[k - g->n_input];
    const Onnx__TypeProto *t = vi->type;
    if (t && t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        t->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET)
      return ox_unsupported(x, n, "subgraph %s '%s' is %s: kiln's loops and branches carry "
                            "tensors only", k < g->n_input ? "input" : "output",
                            vi->name ? vi->name : "?", kind_name(t->value_case));
  }
  return 0;
}

int ox_op_Loop(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  ox_loop l = {.body = graph_attr(n, "body")};
  if (!l.body) return ox_fail(x, KILN_ERR_VERIFY, "the body attribute (a graph) is missing");
  if (nin < 2)
    return ox_fail(x, KILN_ERR_VERIFY, "Loop takes at least 2 inputs (M, cond), not %d", nin);
  if (!in[0] && !in[1])
    return ox_unsupported(x, n, "neither a trip count nor a condition: the loop never ends");
  l.nstate = nin - 2;
  l.nacc = nout - l.nstate;
  if (l.nacc < 0)
    return ox_fail(x, KILN_ERR_VERIFY, "%d loop-carried inputs but only %d outputs", l.nstate,
                   nout);
  if (l.nstate > OX_LOOP_MAX || l.nacc > OX_LOOP_MAX)
    return ox_unsupported(x, n, "over %d loop-carried values or scan outputs", OX_LOOP_MAX);
  if (l.body->n_input != (size_t)(2 + l.nstate))
    return ox_fail(x, KILN_ERR_VERIFY, "the body takes %zu inputs; with %d loop-carried values "
                   "it must take %d (iteration number, condition, the values)",
                   l.body->n_input, l.nstate, 2 + l.nstate);
  if (l.body->n_output != (size_t)(1 + l.nstate + l.nacc))
    return ox_fail(x, KILN_ERR_VERIFY, "the body gives %zu outputs; it must give %d (condition, "
                   "%d loop-carried values, %d scan outputs)", l.body->n_output,
                   1 + l.nstate + l.nacc, l.nstate, l.nacc);
  int r = ox_body_tensors_only(x, n, l.body);
  if (r) return r;
  if (in[0] && !(l.trip = ox_scalar_input(x, in, nin, 0, IR_DT_SI64, "the trip count M", &rc)))
    return rc;
  if (in[1] && !(l.cond = ox_scalar_input(x, in, nin, 1, IR_DT_BOOL, "the condition", &rc)))
    return rc;
  for (int k = 0; k < l.nstate; k++) {
    if (!in[2 + k])
      return ox_fail(x, KILN_ERR_VERIFY, "loop-carried input %d is absent", k);
    if (!(l.state[k] = IN(2 + k))) return rc;
  }
  return ox_loop_build(x, n, &l, out);
}
