/* resize.c - the resize ops' attribute names and per-axis arithmetic
 * (resize.h; ops.def documents the meaning). Every function here is the
 * reference: jit/resize.c emits the same double operations in the same
 * order, so the JIT and the interpreter agree to the last bit on the
 * coordinates and weights. */
#include "resize.h"

#include <math.h>
#include <string.h>

typedef struct name_val {
  const char *name;
  int val;
} name_val;

static const name_val MODES[] = {{"nearest", IR_RESIZE_NEAREST}, {"linear", IR_RESIZE_LINEAR},
                                 {"bilinear", IR_RESIZE_LINEAR}, {"cubic", IR_RESIZE_CUBIC},
                                 {"bicubic", IR_RESIZE_CUBIC},   {NULL, 0}};
static const name_val COORDS[] = {{"half_pixel", IR_RESIZE_HALF_PIXEL},
                                  {"pytorch_half_pixel", IR_RESIZE_PYTORCH_HALF_PIXEL},
                                  {"align_corners", IR_RESIZE_ALIGN_CORNERS},
                                  {"asymmetric", IR_RESIZE_ASYMMETRIC},
                                  {"tf_half_pixel_for_nn", IR_RESIZE_TF_HALF_PIXEL_FOR_NN},
                                  {"half_pixel_symmetric", IR_RESIZE_HALF_PIXEL_SYMMETRIC},
                                  {NULL, 0}};
static const name_val ROUNDS[] = {{"round_prefer_floor", IR_RESIZE_ROUND_PREFER_FLOOR},
                                  {"half_down", IR_RESIZE_ROUND_PREFER_FLOOR},
                                  {"round_prefer_ceil", IR_RESIZE_ROUND_PREFER_CEIL},
                                  {"half_up", IR_RESIZE_ROUND_PREFER_CEIL},
                                  {"floor", IR_RESIZE_FLOOR},
                                  {"down", IR_RESIZE_FLOOR},
                                  {"ceil", IR_RESIZE_CEIL},
                                  {"up", IR_RESIZE_CEIL},
                                  {NULL, 0}};

static const name_val *list_of(ir_resize_list l) {
  return l == IR_RESIZE_LIST_MODE ? MODES : l == IR_RESIZE_LIST_COORD ? COORDS : ROUNDS;
}

int ir_resize_lookup(ir_resize_list l, const char *name) {
  for (const name_val *v = list_of(l); name && v->name; v++)
    if (strcmp(v->name, name) == 0) return v->val;
  return -1;
}

const char *ir_resize_names(ir_resize_list l) {
  switch (l) {
  case IR_RESIZE_LIST_MODE:
    return "\"nearest\", \"linear\", \"bilinear\", \"cubic\" or \"bicubic\"";
  case IR_RESIZE_LIST_COORD:
    return "\"half_pixel\", \"pytorch_half_pixel\", \"align_corners\", \"asymmetric\", "
           "\"tf_half_pixel_for_nn\" or \"half_pixel_symmetric\"";
  case IR_RESIZE_LIST_ROUND:
    return "\"round_prefer_floor\" (\"half_down\"), \"round_prefer_ceil\" (\"half_up\"), "
           "\"floor\" (\"down\") or \"ceil\" (\"up\")";
  }
  return "";
}

/* A string attribute through the schema's default; NULL when it is not a
 * string. */
static const char *str_attr(const ir_node *n, const char *name) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_STRING) return NULL;
  return a->u.s ? a->u.s : ir_op_attr_spec(n->op, name)->a.u.s;
}

bool ir_resize_read(const ir_node *n, ir_resize *p) {
  memset(p, 0, sizeof *p);
  int mode = n->op == IR_OP_RESIZE_NEAREST  ? IR_RESIZE_NEAREST
             : n->op == IR_OP_RESIZE_LINEAR ? IR_RESIZE_LINEAR
             : n->op == IR_OP_RESIZE_BICUBIC
                 ? IR_RESIZE_CUBIC
                 : ir_resize_lookup(IR_RESIZE_LIST_MODE, str_attr(n, "mode"));
  int coord = ir_resize_lookup(IR_RESIZE_LIST_COORD, str_attr(n, "coordinate_transformation_mode"));
  int round = IR_RESIZE_ROUND_PREFER_FLOOR;
  if (mode < 0 || coord < 0) return false;
  if (ir_op_attr_spec(n->op, "nearest_mode")) {
    round = ir_resize_lookup(IR_RESIZE_LIST_ROUND, str_attr(n, "nearest_mode"));
    if (round < 0) return false;
  }
  p->interp = (ir_resize_interp)mode;
  p->coord = (ir_resize_coord)coord;
  p->round = (ir_resize_round)round;
  p->a = ir_node_attr_float(n, "cubic_coeff_a", -0.75);
  p->exclude = ir_node_attr_bool(n, "exclude_outside", false);
  p->scale[0] = ir_node_attr_float(n, "scale_h", 0.0);
  p->scale[1] = ir_node_attr_float(n, "scale_w", 0.0);
  return true;
}

double ir_resize_scale_of(const ir_resize *p, int i, int r) {
  return i == r - 1 ? p->scale[1] : i == r - 2 ? p->scale[0] : 0.0;
}

int ir_resize_axes(const ir_node *n, const ir_resize *p, bool resized[IR_MAX_RANK]) {
  const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
  int k = 0;
  for (int i = 0; i < x->rank && i < IR_MAX_RANK; i++) {
    resized[i] = i >= y->rank || !ir_dim_equal(x->dims[i], y->dims[i]) ||
                 ir_resize_scale_of(p, i, x->rank) > 0 || n->nin == 3;
    k += resized[i];
  }
  return k;
}

int ir_resize_ntaps(const ir_resize *p) {
  return p->interp == IR_RESIZE_NEAREST ? 1 : p->interp == IR_RESIZE_LINEAR ? 2 : 4;
}

void ir_resize_axis(double sa, int64_t n, int64_t m, double *s, double *len) {
  if (sa > 0) {
    *s = sa;
    *len = sa * (double)n;
  } else {
    *s = (double)m / (double)n;
    *len = (double)m;
  }
}

double ir_resize_coord_of(ir_resize_coord c, double o, double n, double m, double s, double len) {
  switch (c) {
  case IR_RESIZE_HALF_PIXEL: return (o + 0.5) / s - 0.5;
  case IR_RESIZE_PYTORCH_HALF_PIXEL: return len > 1.0 ? (o + 0.5) / s - 0.5 : 0.0;
  case IR_RESIZE_ALIGN_CORNERS: return len == 1.0 ? 0.0 : o * (n - 1.0) / (len - 1.0);
  case IR_RESIZE_ASYMMETRIC: return o / s;
  case IR_RESIZE_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / s;
  case IR_RESIZE_HALF_PIXEL_SYMMETRIC: return n / 2.0 * (1.0 - m / len) + (o + 0.5) / s - 0.5;
  }
  return 0.0;
}

double ir_resize_floor_bound(double fl, double n) {
  return !(fl >= -8.0) ? -8.0 : fl > n + 8.0 ? n + 8.0 : fl; /* NaN: -8 */
}

static int64_t clamp_idx(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* Keys' cubic kernel at distance t in [0, 1] (near) and [1, 2] (far). */
static double cubic_near(double a, double t) { return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0; }
static double cubic_far(double a, double t) {
  return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
}

int ir_resize_taps(const ir_resize *p, double x, int64_t n, int64_t idx[4], double w[4]) {
  double fl = floor(x), r = x - fl;
  if (p->interp == IR_RESIZE_NEAREST) {
    bool up = p->round == IR_RESIZE_ROUND_PREFER_FLOOR  ? r > 0.5
              : p->round == IR_RESIZE_ROUND_PREFER_CEIL ? r >= 0.5
              : p->round == IR_RESIZE_CEIL              ? r > 0.0
                                                        : false;
    double v = ir_resize_floor_bound(up ? fl + 1.0 : fl, (double)n);
    idx[0] = clamp_idx((int64_t)v, n);
    w[0] = 1.0;
    return 1;
  }
  int64_t i0 = (int64_t)ir_resize_floor_bound(fl, (double)n);
  if (p->interp == IR_RESIZE_LINEAR) {
    idx[0] = clamp_idx(i0, n);
    idx[1] = clamp_idx(i0 + 1, n);
    w[0] = 1.0 - r;
    w[1] = r;
    return 2;
  }
  w[0] = cubic_far(p->a, r + 1.0);
  w[1] = cubic_near(p->a, r);
  w[2] = cubic_near(p->a, 1.0 - r);
  w[3] = cubic_far(p->a, 2.0 - r);
  for (int k = 0; k < 4; k++) {
    int64_t i = i0 - 1 + k;
    if (p->exclude && (i < 0 || i >= n)) w[k] = 0.0;
    idx[k] = clamp_idx(i, n);
  }
  if (p->exclude) {
    double sum = ((w[0] + w[1]) + w[2]) + w[3];
    for (int k = 0; k < 4; k++) w[k] = w[k] / sum;
  }
  return 4;
}
