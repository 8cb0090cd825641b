/* lower.c - dispatch one node to its class's host lowering (lower.h).
 *
 * The dispatch is a table with one entry per op class (ops.def's CLS rows),
 * whose size the compiler checks against IR_CLS_COUNT: a class added to
 * ops.def without a host lowering fails the build. A class whose entry is
 * left empty (a class placed between others) fails at lowering with the op's
 * name, never silently.
 *
 * Assumes the graph is verified (ir_graph_verify): operand counts, dtypes and
 * result types obey ops.def. Source nodes (constants) have no kernel; asking
 * to lower one is an error, not a crash. */
#include "custom.h"
#include "lower.h"

typedef int (*jit_lower_fn)(jit_fn *f);

static int lower_source(jit_fn *f) {
  return jit_fn_error(f, "mo.%s has no kernel (the runtime binds its data)",
                      ir_op_get(f->node->op)->name);
}

/* Buffer ops touch the caller's memory in node order: the runtime runs them
 * (src/buffers.c), never a kernel. */
static int lower_buffer(jit_fn *f) {
  return jit_fn_error(f, "mo.%s has no kernel (the runtime runs buffer ops)",
                      ir_op_get(f->node->op)->name);
}

/* mo.if / mo.while / mo.call: the host runs their regions (ir/control.h). */
static int lower_control(jit_fn *f) {
  return jit_fn_error(f, "mo.%s has no kernel (the runtime runs its regions)",
                      ir_op_get(f->node->op)->name);
}

static const jit_lower_fn host_lowering[] = {
    [IR_CLS_UNARY] = jit_lower_elementwise,
    [IR_CLS_UNARY_FLOAT] = jit_lower_elementwise,
    [IR_CLS_UNARY_PRED] = jit_lower_elementwise,
    [IR_CLS_UNARY_LOGICAL] = jit_lower_elementwise,
    [IR_CLS_BINARY] = jit_lower_elementwise,
    [IR_CLS_COMPARE] = jit_lower_elementwise,
    [IR_CLS_BINARY_LOGICAL] = jit_lower_elementwise,
    [IR_CLS_WHERE] = jit_lower_elementwise,
    [IR_CLS_CAST] = jit_lower_elementwise,
    [IR_CLS_CONSTANT] = lower_source,
    [IR_CLS_CONSTANT_EXTERNAL] = lower_source,
    [IR_CLS_MATMUL] = jit_lower_matmul,
    [IR_CLS_REDUCE] = jit_lower_reduce,
    [IR_CLS_REDUCE_ARG] = jit_lower_reduce,
    [IR_CLS_SOFTMAX] = jit_lower_softmax,
    [IR_CLS_LAYER_NORM] = jit_lower_layer_norm,
    [IR_CLS_RESHAPE] = jit_lower_movement,
    [IR_CLS_TRANSPOSE] = jit_lower_movement,
    [IR_CLS_PERMUTE] = jit_lower_movement,
    [IR_CLS_BROADCAST_TO] = jit_lower_elementwise,
    [IR_CLS_CONCAT] = jit_lower_movement,
    [IR_CLS_SPLIT] = jit_lower_movement,
    [IR_CLS_SLICE] = jit_lower_movement,
    [IR_CLS_SQUEEZE] = jit_lower_movement,
    [IR_CLS_UNSQUEEZE] = jit_lower_movement,
    [IR_CLS_GATHER] = jit_lower_movement,
    [IR_CLS_FUSED] = jit_lower_fused,
    [IR_CLS_CUSTOM] = jit_lower_custom,
    [IR_CLS_SCAN] = jit_lower_scan,
    [IR_CLS_BAND_PART] = jit_lower_band_part,
    [IR_CLS_GATHER_INDEX] = jit_lower_gather_index,
    [IR_CLS_SCATTER] = jit_lower_scatter,
    [IR_CLS_TILE] = jit_lower_tile,
    [IR_CLS_RANGE] = jit_lower_range,
    [IR_CLS_PAD] = jit_lower_pad,
    [IR_CLS_POOL] = jit_lower_pool,
    [IR_CLS_CONV] = jit_lower_conv,
    [IR_CLS_SORT] = jit_lower_sort,
    [IR_CLS_RESIZE] = jit_lower_resize,
    [IR_CLS_FOLD] = jit_lower_fold,
    [IR_CLS_ROI_ALIGN] = jit_lower_roi_align,
    [IR_CLS_RANDOM] = jit_lower_random,
    [IR_CLS_PRINT] = jit_lower_print,
    [IR_CLS_NONZERO] = jit_lower_nonzero,
    [IR_CLS_NMS] = jit_lower_nms,
    [IR_CLS_MASKED_SCATTER] = jit_lower_masked_scatter,
    [IR_CLS_SHAPE_TO_TENSOR] = jit_lower_shape_to_tensor,
    [IR_CLS_SLICE_DATA] = jit_lower_slice_data,
    [IR_CLS_REPEAT] = jit_lower_repeat,
    [IR_CLS_DEQUANTIZE] = jit_lower_quant,
    [IR_CLS_QMATMUL] = jit_lower_quant,
    [IR_CLS_BUFFER] = lower_buffer,
    [IR_CLS_CONTROL] = lower_control,
    [IR_CLS_MATMUL_INTEGER] = jit_lower_matmul_integer,
    [IR_CLS_FFT] = jit_lower_fft,
};
_Static_assert(sizeof host_lowering / sizeof host_lowering[0] == IR_CLS_COUNT,
               "every op class of ir/ops.def needs a host lowering in jit/lower.c");

int jit_lower_node(jit_fn *f) {
  const ir_node *n = f->node;
  if (!n) return jit_fn_error(f, "no node to lower");
  const ir_op_info *info = ir_op_get(n->op);
  if (!info) return jit_fn_error(f, "unknown op %d", (int)n->op);
  jit_lower_fn lower = host_lowering[info->cls];
  if (!lower) return jit_fn_error(f, "mo.%s: no host lowering for its op class", info->name);
  return lower(f);
}
