/* patch.h - mo.fold's window geometry read from a node's attributes, shared
 * by the reference interpreter (interp_patch.c) and the lowerings
 * (jit/fold.c). The shape rule (infer_patch.c) checks the same attributes
 * with messages; this reader only refuses what it cannot use. */
#ifndef KILN_IR_PATCH_H
#define KILN_IR_PATCH_H

#include "ir.h"

typedef struct ir_fold_geom {
  int64_t out[2], k[2], st[2], dil[2], pad[2]; /* per spatial axis (H, W) */
  int64_t blocks[2];                           /* Lh, Lw */
} ir_fold_geom;

/* g from n's attributes (defaults from the schema); false when they are
 * malformed (a node the verifier would refuse). */
bool ir_fold_geom_read(const ir_node *n, ir_fold_geom *g);

#endif
