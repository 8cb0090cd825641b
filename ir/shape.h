/* shape.h - run-time shapes: dense tensors as shapes, symbolic dims solved
 * from the input shapes, a graph's run-time shape checks, and types
 * evaluated under solved symbols (shape.c).
 *
 * The reference interpreter and both runtimes (CPU models, device models)
 * call these, so all three report the same message for the same mistake.
 * Nothing here runs an op or touches tensor data. */
#ifndef KILN_IR_SHAPE_H
#define KILN_IR_SHAPE_H

#include "ir.h"

/* A dense row-major tensor. */
typedef struct ir_tensor {
  ir_dtype dtype;
  int rank;
  int64_t shape[IR_MAX_RANK];
  void *data; /* numel * ir_dtype_size(dtype) bytes */
} ir_tensor;

/* Solve the graph's symbols from the inputs' shapes into sym_values[g->nsyms]
 * and check every input's dtype, rank and dims and every run-time check:
 *   "input 0 (x): expected dtype f32, got si32"
 *   "input 1 (k): axis 1 is seq = 7 from input 0, got 5"
 *   "input 0 (x): axis 1 expected 784, got 783"
 * Inputs may be given as shapes only (data unused). Returns 0 or -1 with msg. */
int ir_solve_symbols(const ir_graph *g, const ir_tensor *inputs, int ninputs, int64_t *sym_values,
                     char *msg, size_t msglen);
/* The same, visiting only nodes[0..nnodes) (node indices, ascending) for the
 * dims read from data and the symbols set from data: the list
 * ir_solve_nodes gives, made once per graph (a decode step of 175 nodes
 * spent ~10% of its time walking them all); nodes NULL: every node. */
int ir_solve_symbols_at(const ir_graph *g, const ir_tensor *inputs, int ninputs,
                        int64_t *sym_values, const int *nodes, int nnodes, char *msg,
                        size_t msglen);
/* The indices of g's nodes that read dims from data or set a symbol from
 * data (ir_node_reads_dims, ir_node_data_sym), into nodes (NULL: count
 * only); returns how many. */
int ir_solve_nodes(const ir_graph *g, int *nodes);

/* Symbols defined from data (ir_node_data_sym: mo.nonzero's count). After
 * ir_solve_symbols such a symbol holds its bound, the largest value its node
 * can give it (mo.nonzero: operand 0's element count), so buffers planned
 * then are large enough; the run-time checks that use it wait. Once the
 * node has run, ir_data_sym_bind sets it to the value the node gave (which
 * must lie in 0..bound, and must not make any value that uses it larger
 * than planned) and runs the checks that were waiting on it (and on no
 * later node). Kernels written for symbolic dims then see the real
 * value. Both return 0 or -1 with msg. */
int ir_data_sym_bound(const ir_node *n, const int64_t *sym_values, int64_t *bound, char *msg,
                      size_t msglen);
int ir_data_sym_bind(const ir_graph *g, const ir_node *n, int64_t *sym_values, int64_t value,
                     char *msg, size_t msglen);

/* Evaluate a type's shape with solved symbols; returns 0 or -1 with msg
 * (negative dim, overflow). */
int ir_eval_shape(const ir_type *t, const int64_t *sym_values, int64_t *shape, char *msg,
                  size_t msglen);

/* Message helpers the interpreter shares with the code above.
 * ir_ref_fail writes a formatted message into msg (when msg && msglen) and
 * returns -1; ir_ref_dim_text prints d into buf and returns buf;
 * ir_ref_input_name is input i's argument name, or its SSA name. */
int ir_ref_fail(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ir_ref_dim_text(const ir_dim *d, char *buf, size_t cap);
const char *ir_ref_input_name(const ir_graph *g, int i);

#endif
