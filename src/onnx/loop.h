/* loop.h - internal to src/onnx/: ONNX Loop and Scan as one mo.while
 * (loop.c builds it; ops_loop.c and ops_scan.c describe the two ops).
 *
 * The while's carried values, in order:
 *   i            si64 scalar, the iteration count from 0
 *   M, cond      Loop only: the trip count (INT64_MAX when absent) and the
 *                condition (true when absent)
 *   states       the ONNX loop-carried values / scan states
 *   accs         one per scan output: the slices so far, stacked along the
 *                output axis (empty at first)
 *   seqs         Scan only: the scan inputs, passed through; the body
 *                gathers slice i (or L - 1 - i) of each along its axis
 *   captures     the values the body reads from enclosing scopes
 * @cond: Loop: i < M (and cond when the node has one); Scan: i < L, L the
 * first scan input's length along its axis. @body: the ONNX body on the
 * formals bound from these, then i + 1, the new states and each slice
 * concatenated onto its accumulator (before it in reverse direction).
 * A state whose dims the body changes is carried with fresh symbols for
 * them (the body is imported once to learn this, and again to build). */
#ifndef KILN_SRC_ONNX_LOOP_H
#define KILN_SRC_ONNX_LOOP_H

#include "ox.h"

#define OX_LOOP_MAX 64 /* states, scan inputs and scan outputs, each */

typedef struct ox_loop {
  const Onnx__GraphProto *body;
  bool scan;                       /* Scan (else Loop) */
  kiln_value *trip, *cond;         /* Loop: scalars, or NULL when absent */
  int nstate, nacc, nseq;
  kiln_value *state[OX_LOOP_MAX];  /* initial values */
  kiln_value *seq[OX_LOOP_MAX];    /* Scan's inputs */
  int seq_axis[OX_LOOP_MAX];       /* normalized */
  bool seq_reverse[OX_LOOP_MAX];
  int acc_axis[OX_LOOP_MAX];       /* normalized against the result's rank (-1: ask) */
  int64_t acc_axis_attr[OX_LOOP_MAX];
  bool acc_reverse[OX_LOOP_MAX];
} ox_loop;

/* Build the while for l; out[nstate + nacc] get the final states then the
 * stacked scan outputs. 0, -1 or 1 (unsupported, recorded). */
int ox_loop_build(ox *x, const Onnx__NodeProto *n, ox_loop *l, ox_val **out);

/* Refuse (1, recorded) a subgraph whose inputs or outputs are not
 * tensors (sequences, optionals); 0 otherwise. */
int ox_body_tensors_only(ox *x, const Onnx__NodeProto *n, const Onnx__GraphProto *g);

/* v (one element) as a rank-0 value; `what` names it in errors. */
kiln_value *ox_scalar_of(ox *x, kiln_value *v, const char *what);
/* Input i, of dtype want and one element, as a rank-0 value; NULL with *rc
 * -1 or 1. */
kiln_value *ox_scalar_input(ox *x, ox_val **in, int nin, int i, ir_dtype want,
                            const char *what, int *rc);

#endif
