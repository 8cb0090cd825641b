/* resize.h - the meaning of the resize ops' attributes (ops.def), shared by
 * the shape rule (infer_resize.c), the reference interpreter
 * (interp_resize.c) and the lowerings (jit/resize.c): the accepted names of
 * each mode, the node's parameters read into a struct, and the per-axis
 * arithmetic in double that every kernel mirrors operation for operation.
 * Not part of any API. */
#ifndef KILN_IR_RESIZE_H
#define KILN_IR_RESIZE_H

#include "ir.h"

typedef enum ir_resize_interp {
  IR_RESIZE_NEAREST,
  IR_RESIZE_LINEAR,
  IR_RESIZE_CUBIC,
} ir_resize_interp;

typedef enum ir_resize_coord {
  IR_RESIZE_HALF_PIXEL,
  IR_RESIZE_PYTORCH_HALF_PIXEL,
  IR_RESIZE_ALIGN_CORNERS,
  IR_RESIZE_ASYMMETRIC,
  IR_RESIZE_TF_HALF_PIXEL_FOR_NN,
  IR_RESIZE_HALF_PIXEL_SYMMETRIC,
} ir_resize_coord;

typedef enum ir_resize_round {
  IR_RESIZE_ROUND_PREFER_FLOOR,
  IR_RESIZE_ROUND_PREFER_CEIL,
  IR_RESIZE_FLOOR,
  IR_RESIZE_CEIL,
} ir_resize_round;

/* Which list a name is looked up in. */
typedef enum ir_resize_list {
  IR_RESIZE_LIST_MODE,
  IR_RESIZE_LIST_COORD,
  IR_RESIZE_LIST_ROUND,
} ir_resize_list;

/* The value a name has in list l, or -1 when the list lacks it. */
int ir_resize_lookup(ir_resize_list l, const char *name);
/* The list's names for a message: "\"nearest\", \"linear\", ...". */
const char *ir_resize_names(ir_resize_list l);

typedef struct ir_resize {
  ir_resize_interp interp;
  ir_resize_coord coord;
  ir_resize_round round;
  double a;        /* cubic_coeff_a */
  bool exclude;    /* exclude_outside */
  double scale[2]; /* scale_h, scale_w (0: the result's dim over the operand's) */
} ir_resize;

/* The node's parameters (defaults from its schema, the mode from its op);
 * false when an attribute is malformed or names no mode (the shape rule
 * reports those; a verified node never fails). */
bool ir_resize_read(const ir_node *n, ir_resize *p);

/* At most this many taps per result element (linear over 8 axes, cubic
 * over 4): the kernels unroll them. */
#define IR_RESIZE_MAX_TAPS 256

/* The scale attribute of axis i of a rank-r operand: scale_h for axis r - 2,
 * scale_w for axis r - 1, else 0. */
double ir_resize_scale_of(const ir_resize *p, int i, int r);
/* Which axes node n resizes (ops.def): those whose result dim is not the
 * operand's dim, and those a scale attribute names (every axis with a
 * scales operand); the count. The others
 * are copied. Reads the node's types only, so every side agrees. */
int ir_resize_axes(const ir_node *n, const ir_resize *p, bool resized[IR_MAX_RANK]);
/* Taps per axis of p's interpolation: 1, 2 or 4. */
int ir_resize_ntaps(const ir_resize *p);

/* The per-axis constants of resizing n elements to m with scale attribute
 * sa (0: m / n): *s the scale and *len the resized length L (ops.def). */
void ir_resize_axis(double sa, int64_t n, int64_t m, double *s, double *len);
/* Coordinate x in the operand of result index o (ops.def's formulas). */
double ir_resize_coord_of(ir_resize_coord c, double o, double n, double m, double s, double len);
/* The taps of coordinate x on an axis of n >= 1 elements: indices clamped
 * into [0, n), weights; the count (1, 2 or 4). */
int ir_resize_taps(const ir_resize *p, double x, int64_t n, int64_t idx[4], double w[4]);
/* floor(x) kept in [-8, n + 8] before it becomes an integer (a coordinate far
 * outside the axis reads the edge either way; no conversion overflows; NaN,
 * which only absurd scales make, becomes -8). */
double ir_resize_floor_bound(double fl, double n);

#endif
