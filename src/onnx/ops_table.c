/* ops_table.c - ONNX (domain, op type) -> importer function: one table per
 * domain, looked up by linear search (a hundred rows, once per node). */
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
static const op_row training_rows[] = {OX_OPS_TRAINING(ROW)};
#undef ROW

static ox_op_fn find(const op_row *t, size_t n, const char *op_type) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].name, op_type) == 0) return t[i].fn;
  return NULL;
}

ox_op_fn ox_op_lookup(const char *domain, const char *op_type) {
  if (!domain || !*domain || strcmp(domain, "ai.onnx") == 0)
    return find(rows, sizeof rows / sizeof rows[0], op_type);
  if (strcmp(domain, "ai.onnx.preview.training") == 0)
    return find(training_rows, sizeof training_rows / sizeof training_rows[0], op_type);
  return NULL;
}
