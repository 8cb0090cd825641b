/* patch.h - mo.fold's window geometry and mo.roi_align's parameters read
 * from a node's attributes, shared by the reference interpreter
 * (interp_patch.c) and the lowerings (jit/fold.c, jit/roi_align.c). The
 * shape rule (infer_patch.c) checks the same attributes with messages; these
 * readers only refuse what they cannot use. */
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

typedef struct ir_roi_params {
  int64_t oh, ow;       /* output_height, output_width */
  double scale;         /* spatial_scale */
  int64_t sr;           /* sampling_ratio; 0: ceil(bin size) */
  bool aligned, max;    /* half-pixel offset; mode "max" */
} ir_roi_params;

/* The largest sampling grid per axis (ops.def): above it, a data error (a
 * region's samples per result element stay below 2^20). */
#define IR_ROI_MAX_GRID 1024

/* p from n's attributes; false when malformed. */
bool ir_roi_params_read(const ir_node *n, ir_roi_params *p);

#endif
