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
#include "shape.h" /* ir_tensor, ir_solve_symbols, ir_eval_shape */

/* Elements of t; -1 for a bad rank, a negative dim or an overflow. */
int64_t ir_tensor_numel(const ir_tensor *t);

/* The bf16 bits of v rounded once, to nearest with ties to even, as the
 * interpreter stores a bf16 (overflow gives inf, tiny values subnormals or
 * 0; a NaN keeps its sign and top payload, made quiet). */
uint16_t ir_bf16_from_double(double v);

/* Weight lookup for constant.external: return the tensor bound to `name`, or
 * NULL when there is none. */
typedef const ir_tensor *(*ir_weight_fn)(void *ud, const char *name);

/* Run g on inputs[g->ninputs]. On success outputs[g->noutputs] hold malloc'd
 * data (free each with free(outputs[i].data)); on failure nothing is left
 * allocated and msg says what went wrong and where (op name and output
 * value). Returns 0 or -1. */
int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_weight_fn weights, void *ud,
                  ir_tensor *outputs, char *msg, size_t msglen);

/* Compute value `want` of g alone: only the nodes it depends on run, in
 * node order, under sym_values as they stand (the caller has bound every
 * symbol their results use). check (when not NULL) sees each node first
 * and may refuse it (return -1 with msg). On success *out holds the value
 * with malloc'd data (free(out->data)); ir/shape.c reads dims from data
 * computed inside the graph this way. Returns 0 or -1 with msg. */
typedef int (*ir_interp_node_check)(void *ud, const ir_node *n, char *msg, size_t msglen);
int ir_interp_value(const ir_graph *g, const ir_tensor *inputs, int64_t *sym_values,
                    ir_interp_node_check check, void *ud, const ir_value *want, ir_tensor *out,
                    char *msg, size_t msglen);

#endif
