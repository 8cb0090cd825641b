/* ops_sort.c - ONNX TopK onto mo.top_k / mo.bottom_k (largest picks which).
 *
 * K is an attribute before opset 10 and an input after; as an input known
 * at import it is the size of the results' axis, as run-time data (a graph
 * input or computed from inputs) data_axes.c sorts the whole axis and
 * slices K from it. kiln always returns the selection sorted, which
 * sorted = 0 (order unspecified) allows, and puts the lower index first
 * among equal values, as ONNX requires. */
#include "ox.h"

int ox_op_TopK(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int64_t k = ox_attr_int(n, "k", -1);
  if (nin >= 2 && in[1]) {
    int cnt, axis;
    if (!ox_axis(ox_attr_int(n, "axis", -1), ox_type(a)->rank, &axis))
      return ox_fail(x, KILN_ERR_VERIFY, "axis out of range for rank %d", ox_type(a)->rank);
    if (!in[1]->known && !in[1]->init && ox_run_time_data(in[1]))
      return ox_topk_data(x, n, a, axis, ox_attr_int(n, "largest", 1) != 0, in[1], out, nout);
    if (!ox_known_consts(in[1], &k, 1, &cnt) || cnt != 1)
      return ox_unsupported(x, n, "K is not known at import: a graph input, not an "
                                  "initializer or Constant");
  }
  if (k < 1) return ox_fail(x, KILN_ERR_VERIFY, "TopK: K = %lld must be at least 1", (long long)k);
  const char *op = ox_attr_int(n, "largest", 1) ? "top_k" : "bottom_k";
  kiln_value *r0 = ox_op(x, op, &a, 1, NULL, "{axis = %lld, k = %lld}",
                         (long long)ox_attr_int(n, "axis", -1), (long long)k);
  if (!r0) return FAILED();
  out[0]->v = r0;
  if (nout > 1) out[1]->v = kiln_value_result(r0, 1);
  return 0;
}
