/* ops_scan.c - ONNX Scan, opsets 9 to 21 (scan inputs and outputs along
 * any axis, either direction), as a mo.while (loop.c). Opset 8's form
 * (states [batch, ...], scan inputs and outputs [batch, sequence, ...])
 * is one opset-9 scan per batch entry (a static batch of up to
 * SCAN8_BATCH_MAX; each entry's results stacked along axis 0); its
 * sequence_lens input (per-entry lengths) is refused by name. */
#include <stdio.h>
#include <stdlib.h>
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

#define SCAN8_BATCH_MAX 64

/* Opset 8: in[0] sequence_lens (absent), then states and scan inputs with a
 * leading batch axis; the scan axis is 1. */
static int scan8(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  const Onnx__AttributeProto *ba = ox_attr(n, "body");
  const Onnx__GraphProto *body = ba ? ba->g : NULL;
  if (!body) return ox_fail(x, KILN_ERR_VERIFY, "the body attribute (a graph) is missing");
  if (nin > 0 && in[0]) return ox_unsupported(x, n, "opset 8's sequence_lens input");
  int64_t nscan = ox_attr_int(n, "num_scan_inputs", -1);
  if (nscan < 1 || nscan > nin - 1)
    return ox_fail(x, KILN_ERR_VERIFY, "num_scan_inputs is %lld: it must be 1 to the input "
                   "count after sequence_lens (%d)", (long long)nscan, nin - 1);
  int nseq = (int)nscan, nstate = nin - 1 - nseq, nacc = nout - nstate;
  if (nacc < 0)
    return ox_fail(x, KILN_ERR_VERIFY, "%d state inputs but only %d outputs", nstate, nout);
  if (nstate > OX_LOOP_MAX || nacc > OX_LOOP_MAX || nseq > OX_LOOP_MAX)
    return ox_unsupported(x, n, "over %d states, scan inputs or scan outputs", OX_LOOP_MAX);
  if (body->n_input != (size_t)(nin - 1) || body->n_output != (size_t)nout)
    return ox_fail(x, KILN_ERR_VERIFY, "the body takes %zu inputs and gives %zu outputs; the "
                   "node's %d inputs (after sequence_lens) and %d outputs need as many",
                   body->n_input, body->n_output, nin - 1, nout);
  int r = ox_body_tensors_only(x, n, body);
  if (r) return r;
  int64_t dirs[OX_LOOP_MAX];
  if (int_list(x, n, "directions", nseq, dirs)) return -1;
  kiln_value *v[2 * OX_LOOP_MAX];
  int64_t batch = -1;
  for (int k = 0; k < nin - 1; k++) {
    if (!in[1 + k]) return ox_fail(x, KILN_ERR_VERIFY, "input %d is absent", 1 + k);
    if (!(v[k] = IN(1 + k))) return rc;
    int64_t b;
    if (ox_type(v[k])->rank < (k < nstate ? 1 : 2))
      return ox_fail(x, KILN_ERR_VERIFY, "input %d lacks the batch%s axis", 1 + k,
                     k < nstate ? "" : " and sequence");
    if (!ir_dim_is_const(ox_dim(v[k], 0), &b)) return ox_unsupported(x, n, "a symbolic batch");
    if (batch >= 0 && b != batch)
      return ox_fail(x, KILN_ERR_VERIFY, "input %d has a batch of %lld, input 1 of %lld", 1 + k,
                     (long long)b, (long long)batch);
    batch = b;
  }
  if (batch < 1 || batch > SCAN8_BATCH_MAX)
    return ox_unsupported(x, n, "a batch of %lld (opset 8's Scan: 1 to %d, one loop each)",
                          (long long)batch, SCAN8_BATCH_MAX);
  kiln_value **parts = calloc((size_t)(nout * batch), sizeof *parts);
  if (!parts) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t b = 0; b < batch; b++) {
    ox_loop l = {.body = body, .scan = true, .nstate = nstate, .nacc = nacc, .nseq = nseq};
    ox_val res[2 * OX_LOOP_MAX], *rp[2 * OX_LOOP_MAX];
    kiln_value *k = ox_scalar(x, IR_DT_SI64, (double)b);
    for (int i = 0; k && i < nin - 1; i++) {
      kiln_value *e = ox_op(x, "gather", (kiln_value *[]){v[i], k}, 2, NULL, "{axis = 0}");
      if (!e) k = NULL;
      else if (i < nstate) l.state[i] = e;
      else l.seq[i - nstate] = e;
    }
    for (int m = 0; m < nseq; m++) l.seq_axis[m] = 0, l.seq_reverse[m] = dirs[m] == 1;
    for (int i = 0; i < nout; i++) memset(&res[i], 0, sizeof res[i]), rp[i] = &res[i];
    if (!k || (r = ox_loop_build(x, n, &l, rp)) != 0) {
      free(parts);
      return k ? r : FAILED();
    }
    for (int i = 0; i < nout; i++)
      if (!(parts[i * batch + b] = ox_op(x, "unsqueeze", &res[i].v, 1, NULL, "{axis = 0}"))) {
        free(parts);
        return FAILED();
      }
  }
  for (int i = 0; i < nout; i++) {
    kiln_value *all = batch == 1 ? parts[i * batch]
                                 : ox_op(x, "concat", parts + i * batch, (int)batch, NULL,
                                         "{axis = 0}");
    if (!all) {
      free(parts);
      return FAILED();
    }
    if (out[i]) out[i]->v = all;
  }
  free(parts);
  return 0;
}

int ox_op_Scan(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  if (x->opset < 9) return scan8(x, n, in, nin, out, nout);
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
