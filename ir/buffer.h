/* buffer.h - internal to ir/: the rules of mutable buffers and chains
 * (buffer.c), which ir_infer_node and ir_graph_verify call.
 *
 * A `!mo.buffer` value names memory the graph mutates in place: a graph
 * input (the caller's tensor, mutated across executes) or a mo.buffer.create
 * result. Only the buffer ops (class BUFFER) take buffers and chains; every
 * other op sees tensors. A `!mo.chain` orders the effects on buffers: each
 * buffer op takes one chain and returns the next, a chain value is used at
 * most once (a fork would leave two effects unordered), and a buffer that is
 * stored to is touched from one chain only (two chains, from two
 * mo.chain.create, would race on it). Under these rules the node order of a
 * verified graph is an order in which every load sees exactly the stores
 * before it on its chain: the runtimes run buffer ops in node order. */
#ifndef KILN_IR_BUFFER_H
#define KILN_IR_BUFFER_H

#include "infer_impl.h"

/* Operands and declared results of a node that is not a buffer op must be
 * tensors. 0, or -1 with the node's diagnostic. */
int ir_infer_value_kinds(ir_infer_ctx *c);
/* The shape rule of the BUFFER class (buffer.create, chain.create,
 * mutable.load, mutable.store, mutable.store.slice). */
int ir_infer_buffer(ir_infer_ctx *c, ir_type *r);
/* Whole-graph rules: no chain inputs, no buffer or chain outputs, each chain
 * used once, no two chains on one stored buffer. 0, or -1 with d filled at
 * the offending node (the other node's line:col in the message). */
int ir_buffer_verify(const ir_graph *g, ir_diag *d);

#endif
