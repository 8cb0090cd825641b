/* ops_table.c - ONNX op type -> importer function, one table, looked up by
 * linear search (a hundred rows, once per node). */
#include <stdlib.h>
#include <string.h>

#include "ox.h"

typedef struct { const char *name; ox_op_fn fn; } op_row;

#define ROW(name) {#name, ox_op_##name},
static const op_row rows[] = {
    OX_OPS_ELEMENTWISE(ROW) OX_OPS_NN(ROW) OX_OPS_SHAPE(ROW) OX_OPS_FOLD(ROW)
    OX_OPS_INDEX(ROW)
    OX_OPS_VISION(ROW) OX_OPS_CHANNEL(ROW) OX_OPS_LOSS(ROW) OX_OPS_ONEHOT(ROW)
    OX_OPS_EINSUM(ROW) OX_OPS_RNN(ROW) OX_OPS_HYPERBOLIC(ROW)
    OX_OPS_SORT(ROW) OX_OPS_RESIZE(ROW) OX_OPS_ROI(ROW)
    OX_OPS_RANDOM(ROW) OX_OPS_QUANT(ROW) OX_OPS_CONTROL(ROW)
    OX_OPS_WINDOW(ROW) OX_OPS_NORMALIZE(ROW) OX_OPS_GRIDSAMPLE(ROW)
    OX_OPS_UNIQUE(ROW) OX_OPS_TFIDF(ROW) OX_OPS_LINALG(ROW)
};
#undef ROW

ox_op_fn ox_op_lookup(const char *op_type) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (strcmp(rows[i].name, op_type) == 0) return rows[i].fn;
  return NULL;
}
