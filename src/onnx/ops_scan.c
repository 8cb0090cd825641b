/* ops_scan.c - ONNX Scan, opsets 9 to 21 (scan inputs and outputs along
 * any axis, either direction), as a mo.while (loop.c). Opset 8's form
 * (a batch axis and sequence_lens) is refused by name. */
#include <stdio.h>
#include <string.h>

#include "loop.h"

/* ints attribute `name` of count entries (default 0 each) into out. */
static int int_list(ox *x, const Onnx__NodeProto *n, const char *name, int count, int64_t *out) {
  int got = 0;
  const int64_t *v = ox_attr_ints(n, name, &got);
  if (v && got != count)
    return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries, not %d", name, got, count);
  for (int i = 0; i < count; i++) out[i] = v ? v[i] : 0;
  return 0;
}

int ox_op_Scan(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  if (x->opset < 9)
    return ox_unsupported(x, n, "opset %lld's Scan (a batch axis and sequence_lens); opset 9's "
                          "form is supported", (long long)x->opset);
  const Onnx__AttributeProto *ba = ox_attr(n, "body");
  ox_loop l = {.body = ba ? ba->g : NULL, .scan = true};
  if (!l.body) return ox_fail(x, KILN_ERR_VERIFY, "the body attribute (a graph) is missing");
  int64_t nscan = ox_attr_int(n, "num_scan_inputs", -1);
  if (nscan < 1 || nscan > nin)
    return ox_fail(x, KILN_ERR_VERIFY, "num_scan_inputs is %lld: it must be 1 to the input "
                   "count (%d)", (long long)nscan, nin);
  l.nseq = (int)nscan;
  l.nstate = nin - l.nseq;
  l.nacc = nout - l.nstate;
  if (l.nacc < 0)
    return ox_fail(x, KILN_ERR_VERIFY, "%d state inputs but only %d outputs", l.nstate, nout);
  if (l.nstate > OX_LOOP_MAX || l.nacc > OX_LOOP_MAX || l.nseq > OX_LOOP_MAX)
    return ox_unsupported(x, n, "over %d states, scan inputs or scan outputs", OX_LOOP_MAX);
  if (l.body->n_input != (size_t)nin || l.body->n_output != (size_t)nout)
    return ox_fail(x, KILN_ERR_VERIFY, "the body takes %zu inputs and gives %zu outputs; the "
                   "node's %d inputs and %d outputs need as many", l.body->n_input,
                   l.body->n_output, nin, nout);
  int r = ox_body_tensors_only(x, n, l.body);
  if (r) return r;
  int64_t axes[OX_LOOP_MAX], dirs[OX_LOOP_MAX], oaxes[OX_LOOP_MAX], odirs[OX_LOOP_MAX];
  if (int_list(x, n, "scan_input_axes", l.nseq, axes) ||
      int_list(x, n, "scan_input_directions", l.nseq, dirs) ||
      int_list(x, n, "scan_output_axes", l.nacc, oaxes) ||
      int_list(x, n, "scan_output_directions", l.nacc, odirs))
    return -1;
  for (int k = 0; k < l.nstate; k++) {
    if (!in[k]) return ox_fail(x, KILN_ERR_VERIFY, "state input %d is absent", k);
    if (!(l.state[k] = IN(k))) return rc;
  }
  const ir_dim *len = NULL;
  for (int m = 0; m < l.nseq; m++) {
    if (!in[l.nstate + m]) return ox_fail(x, KILN_ERR_VERIFY, "scan input %d is absent", m);
    if (!(l.seq[m] = IN(l.nstate + m))) return rc;
    int rank = ox_type(l.seq[m])->rank;
    if (!ox_axis(axes[m], rank, &l.seq_axis[m]))
      return ox_fail(x, KILN_ERR_VERIFY, "scan_input_axes[%d] = %lld is out of range for rank "
                     "%d", m, (long long)axes[m], rank);
    if (dirs[m] != 0 && dirs[m] != 1)
      return ox_fail(x, KILN_ERR_VERIFY, "scan_input_directions[%d] is %lld (0 or 1)", m,
                     (long long)dirs[m]);
    l.seq_reverse[m] = dirs[m] == 1;
    const ir_dim *d = ox_dim(l.seq[m], l.seq_axis[m]);
    int64_t a, b;
    if (len && ir_dim_is_const(len, &a) && ir_dim_is_const(d, &b) && a != b)
      return ox_fail(x, KILN_ERR_VERIFY, "scan input %d has %lld slices, scan input 0 has %lld",
                     m, (long long)b, (long long)a);
    if (!len) len = d;
  }
  for (int j = 0; j < l.nacc; j++) {
    if (odirs[j] != 0 && odirs[j] != 1)
      return ox_fail(x, KILN_ERR_VERIFY, "scan_output_directions[%d] is %lld (0 or 1)", j,
                     (long long)odirs[j]);
    l.acc_axis_attr[j] = oaxes[j];
    l.acc_reverse[j] = odirs[j] == 1;
  }
  return ox_loop_build(x, n, &l, out);
}
