/* lower.c - dispatch one node to its class's lowering (lower.h).
 *
 * Assumes the graph is verified (ir_graph_verify): operand counts, dtypes and
 * result types obey ops.def. Constant nodes have no kernel; asking to lower
 * one is an error, not a crash. */
#include "custom.h"
#include "lower.h"

int jit_lower_node(jit_fn *f) {
  const ir_node *n = f->node;
  if (!n || (unsigned)n->op >= IR_OP_COUNT) return jit_fn_error(f, "no node to lower");
  const ir_op_info *info = ir_op_get(n->op);
  if (!info) return jit_fn_error(f, "unknown op %d", (int)n->op);
  switch (info->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_UNARY_PRED:
  case IR_CLS_UNARY_LOGICAL:
  case IR_CLS_BINARY:
  case IR_CLS_BINARY_FLOAT:
  case IR_CLS_COMPARE:
  case IR_CLS_BINARY_LOGICAL:
  case IR_CLS_WHERE:
  case IR_CLS_CAST:
  case IR_CLS_BROADCAST_TO: return jit_lower_elementwise(f);
  case IR_CLS_MATMUL: return jit_lower_matmul(f);
  case IR_CLS_REDUCE:
  case IR_CLS_REDUCE_ARG: return jit_lower_reduce(f);
  case IR_CLS_SOFTMAX: return jit_lower_softmax(f);
  case IR_CLS_LAYER_NORM: return jit_lower_layer_norm(f);
  case IR_CLS_RESHAPE:
  case IR_CLS_TRANSPOSE:
  case IR_CLS_PERMUTE:
  case IR_CLS_CONCAT:
  case IR_CLS_SPLIT:
  case IR_CLS_SLICE:
  case IR_CLS_SQUEEZE:
  case IR_CLS_UNSQUEEZE:
  case IR_CLS_GATHER: return jit_lower_movement(f);
  case IR_CLS_FUSED: return jit_lower_fused(f);
  case IR_CLS_CUSTOM: return jit_lower_custom(f);
  case IR_CLS_CONSTANT:
  case IR_CLS_CONSTANT_EXTERNAL:
    return jit_fn_error(f, "mo.%s has no kernel (the runtime binds its data)", info->name);
  }
  return jit_fn_error(f, "mo.%s: no lowering for its op class", info->name);
}
