/* patch.c - mo.fold's window geometry and mo.roi_align's parameters from a
 * node's attributes (patch.h). Accepts exactly what infer_patch.c accepts;
 * values stay below 2^31, so the products below do not overflow. */
#include "patch.h"

#include <math.h>
#include <string.h>

static bool pair(const ir_node *n, const char *name, bool exact, int64_t dflt, int64_t lo,
                 int64_t out[2]) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_INTS)
    return false;
  int nv = a->u.ints.n;
  if (exact ? nv != 2 : nv > 2)
    return false;
  for (int i = 0; i < 2; i++) {
    out[i] = nv == 0 ? dflt : a->u.ints.v[nv == 1 ? 0 : i];
    if (out[i] < lo || out[i] > INT32_MAX)
      return false;
  }
  return true;
}

int64_t ir_fold_blocks(const ir_fold_geom *g, int ax, int64_t o) {
  int64_t span = o + 2 * g->pad[ax] - g->dil[ax] * (g->k[ax] - 1) - 1;
  return o < 0 || span < 0 ? -1 : span / g->st[ax] + 1;
}

bool ir_fold_geom_read(const ir_node *n, ir_fold_geom *g) {
  if (!pair(n, "output_size", true, 0, -1, g->out) || !pair(n, "kernel_size", true, 1, 1, g->k) ||
      !pair(n, "stride", false, 1, 1, g->st) || !pair(n, "dilation", false, 1, 1, g->dil) ||
      !pair(n, "padding", false, 0, 0, g->pad))
    return false;
  for (int i = 0; i < 2; i++)
    if ((g->blocks[i] = ir_fold_blocks(g, i, g->out[i])) < 0 && g->out[i] >= 0)
      return false;
  int64_t L;
  return !__builtin_mul_overflow(g->blocks[0], g->blocks[1], &L);
}

bool ir_fold_geom_size(ir_fold_geom *g, int64_t h, int64_t w) {
  int64_t o[2] = {h, w}, L;
  for (int i = 0; i < 2; i++) {
    if ((g->out[i] >= 0 && g->out[i] != o[i]) || o[i] > INT32_MAX) return false;
    g->out[i] = o[i];
    if ((g->blocks[i] = ir_fold_blocks(g, i, o[i])) < 0) return false;
  }
  return !__builtin_mul_overflow(g->blocks[0], g->blocks[1], &L);
}

bool ir_roi_params_read(const ir_node *n, ir_roi_params *p) {
  const ir_attr *sc = ir_node_attr_or_default(n, "spatial_scale");
  const char *mode = ir_node_attr_string(n, "mode", "avg");
  p->oh = ir_node_attr_int(n, "output_height", 0);
  p->ow = ir_node_attr_int(n, "output_width", 0);
  p->sr = ir_node_attr_int(n, "sampling_ratio", 0);
  p->aligned = ir_node_attr_bool(n, "aligned", false);
  p->max = mode && strcmp(mode, "max") == 0;
  if (!sc || (sc->kind != IR_ATTR_FLOAT && sc->kind != IR_ATTR_INT))
    return false;
  p->scale = sc->kind == IR_ATTR_FLOAT ? sc->u.f : (double)sc->u.i;
  return p->oh >= 1 && p->ow >= 1 && p->oh <= INT32_MAX && p->ow <= INT32_MAX && p->sr >= 0 &&
         p->sr <= IR_ROI_MAX_GRID && p->scale > 0 && !isinf(p->scale) && mode &&
         (p->max || strcmp(mode, "avg") == 0);
}
