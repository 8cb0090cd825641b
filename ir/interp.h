/* interp.h - the reference interpreter: plain loops for every op of ops.def.
 *
 * It is the oracle the tests compare the JIT against, so it favours the
 * obvious over the fast: each op is a direct loop over output elements in
 * row-major order, reductions accumulate in the element type in index order
 * (f32 sums accumulate in double and round once, for a tighter oracle),
 * transcendental functions come from libm.
 * It needs a verified graph. Run-time shape checks (ir_graph checks) and
 * data-dependent errors (gather index out of range, integer mod by zero) are
 * reported as errors, never as crashes. */
#ifndef KILN_IR_INTERP_H
#define KILN_IR_INTERP_H

#include "ir.h"

/* A dense row-major tensor. */
typedef struct ir_tensor {
  ir_dtype dtype;
  int rank;
  int64_t shape[IR_MAX_RANK];
  void *data; /* numel * ir_dtype_size(dtype) bytes */
} ir_tensor;

int64_t ir_tensor_numel(const ir_tensor *t);

/* Weight lookup for constant.external: return the tensor bound to `name`, or
 * NULL when there is none. */
typedef const ir_tensor *(*ir_weight_fn)(void *ud, const char *name);

/* Solve the graph's symbols from the inputs' shapes into sym_values[g->nsyms]
 * and check every input's dtype, rank and dims and every run-time check.
 * Shared by the interpreter and the runtime so both report the same errors:
 *   "input 0 (x): expected dtype f32, got si32"
 *   "input 1 (k): axis 1 is seq = 7 from input 0, got 5"
 *   "input 0 (x): axis 1 expected 784, got 783"
 * Inputs may be given as shapes only (data unused). Returns 0 or -1 with msg. */
int ir_solve_symbols(const ir_graph *g, const ir_tensor *inputs, int ninputs, int64_t *sym_values,
                     char *msg, size_t msglen);

/* Evaluate a type's shape with solved symbols; returns 0 or -1 with msg
 * (negative dim, overflow). */
int ir_eval_shape(const ir_type *t, const int64_t *sym_values, int64_t *shape, char *msg,
                  size_t msglen);

/* Run g on inputs[g->ninputs]. On success outputs[g->noutputs] hold malloc'd
 * data (free each with free(outputs[i].data)); on failure nothing is left
 * allocated and msg says what went wrong and where (op name and output
 * value). Returns 0 or -1. */
int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_weight_fn weights, void *ud,
                  ir_tensor *outputs, char *msg, size_t msglen);

#endif
