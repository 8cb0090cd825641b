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
 * malformed (a node the verifier would refuse). An output size the
 * attribute leaves to the result type (-1) has out and blocks -1 until
 * ir_fold_geom_size gives it. */
bool ir_fold_geom_read(const ir_node *n, ir_fold_geom *g);

/* The output size [h, w] at run time (the result's dims 2 and 3): out and
 * blocks set; false when a static size differs or no block fits. */
bool ir_fold_geom_size(ir_fold_geom *g, int64_t h, int64_t w);

/* The number of blocks along an axis of output size o: (o + 2 p - d (k - 1)
 * - 1) / s + 1, or -1 when no block fits. */
int64_t ir_fold_blocks(const ir_fold_geom *g, int ax, int64_t o);

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
