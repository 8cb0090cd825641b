/* ops_channel.c - ONNX ops over the channel axis of N x C x ... tensors:
 * BatchNormalization (inference and training mode), InstanceNormalization, DepthToSpace and
 * SpaceToDepth, each composed from kiln ops (elementwise, layer_norm,
 * reshape, permute). */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* v (rank 1, [C]) shaped to broadcast along axis 1 of a rank-`rank` value:
 * [C, 1, ..., 1], cast to dt where its dtype differs. */
static kiln_value *per_channel(ox *x, kiln_value *v, int rank, ir_dtype dt) {
  if (ox_type(v)->rank != 1) {
    ox_fail(x, KILN_ERR_VERIFY, "a per-channel operand must be 1-D, not of rank %d",
            ox_type(v)->rank);
    return NULL;
  }
  if (ox_type(v)->dtype != dt &&
      !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return NULL;
  if (rank <= 2) return v;
  const ir_dim *dims[IR_MAX_RANK];
  dims[0] = ox_type(v)->dims[0];
  for (int i = 1; i < rank - 1; i++) dims[i] = ir_dim_const(x->ir->arena, 1);
  return ox_reshape(x, v, rank - 1, dims);
}

/* v averaged over every axis but the channel axis 1 (kept, size 1). */
static kiln_value *channel_mean(ox *x, kiln_value *v) {
  int rank = ox_type(v)->rank;
  for (int a = 0; v && a < rank; a++)
    if (a != 1) v = ox_op(x, "mean", &v, 1, NULL, "{axis = %d}", a);
  return v;
}

/* running * momentum + current * (1 - momentum), current reshaped to [C]. */
static kiln_value *running(ox *x, kiln_value *run, kiln_value *cur, double momentum) {
  const ir_dim *c = ox_dim(cur, 1);
  kiln_value *m = ox_scalar(x, IR_DT_F64, momentum), *rest = ox_scalar(x, IR_DT_F64, 1 - momentum);
  ir_dtype dt = ox_type(cur)->dtype;
  if (!m || !rest || !(cur = ox_reshape(x, cur, 1, &c))) return NULL;
  if (dt != IR_DT_F64 && (!(m = ox_op(x, "cast", &m, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))) ||
                          !(rest = ox_op(x, "cast", &rest, 1, NULL, "{dtype = %s}",
                                         ir_dtype_name(dt)))))
    return NULL;
  if (ox_type(run)->dtype != dt &&
      !(run = ox_op(x, "cast", &run, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))))
    return NULL;
  kiln_value *a = OP2("mul", run, m), *b = a ? OP2("mul", cur, rest) : NULL;
  return b ? OP2("add", a, b) : NULL;
}

/* y = (x - mean) / sqrt(var + epsilon) * scale + B, per channel: with the
 * running statistics given (inference), or in training mode with the
 * batch's own mean and (population) variance over every axis but 1, the
 * running statistics then updated by momentum (outputs 1 and 2). */
int ox_op_BatchNormalization(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                             ox_val **out, int nout) {
  bool training = ox_attr_int(n, "training_mode", 0) != 0;
  for (int k = 1; k < nout && !training; k++)
    if (out[k] && *out[k]->name) return ox_unsupported(x, n, "the running statistics outputs");
  BEGIN;
  kiln_value *a = IN(0), *p[4] = {NULL, NULL, NULL, NULL}, *raw[4], *r;
  if (!a) return rc;
  for (int k = 0; k < 4; k++)
    if (!(raw[k] = p[k] = IN(k + 1))) return rc;
  const ir_type *t = ox_type(a);
  if (t->rank < 2) return ox_fail(x, KILN_ERR_VERIFY, "X must have a channel axis (rank >= 2)");
  for (int k = 0; k < 4; k++)
    if (!(p[k] = per_channel(x, p[k], t->rank, t->dtype))) return FAILED();
  if (training) { /* the batch's statistics replace the running ones */
    kiln_value *d;
    if (!(p[2] = channel_mean(x, a)) || !(d = OP2("sub", a, p[2])) || !(d = OP2("mul", d, d)) ||
        !(p[3] = channel_mean(x, d)))
      return FAILED();
  }
  kiln_value *eps = ox_scalar(x, IR_DT_F64, ox_attr_float(n, "epsilon", 1e-5)), *inv;
  if (!eps || (t->dtype != IR_DT_F64 &&
               !(eps = ox_op(x, "cast", &eps, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype)))))
    return FAILED();
  /* p: scale, B, mean, var */
  if (!(inv = OP2("add", p[3], eps)) || !(inv = OP1("rsqrt", inv)) ||
      !(inv = OP2("mul", inv, p[0])) || !(r = OP2("sub", a, p[2])) || !(r = OP2("mul", r, inv)) ||
      !(r = OP2("add", r, p[1])))
    return FAILED();
  out[0]->v = r;
  double momentum = ox_attr_float(n, "momentum", 0.9);
  for (int k = 1; training && k < nout && k < 3; k++)
    if (out[k] && *out[k]->name && !(out[k]->v = running(x, raw[k + 1], p[k + 1], momentum)))
      return FAILED();
  return 0;
}

/* Each (n, c) plane normalized over its spatial elements, then scaled and
 * shifted per channel: layer_norm over [N * C, S] (S the product of the
 * spatial dims) with a unit gamma and a zero beta. */
int ox_op_InstanceNormalization(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                                ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *scale = a ? IN(1) : NULL, *bias = scale ? IN(2) : NULL;
  if (!bias) return rc;
  const ir_type *t = ox_type(a);
  if (t->rank < 3) return ox_fail(x, KILN_ERR_VERIFY, "X must be N x C x D1 ... (rank >= 3)");
  ir_arena *ar = x->ir->arena;
  const ir_dim *s = ir_dim_const(ar, 1);
  for (int i = 2; s && i < t->rank; i++) s = ir_dim_mul(ar, s, t->dims[i]);
  const ir_dim *nc = ir_dim_mul(ar, t->dims[0], t->dims[1]);
  if (!s || !nc) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  const ir_dim *flat[2] = {nc, s}, *three[3] = {t->dims[0], t->dims[1], s};
  char ty[1024];
  ox_type_text(ty, sizeof ty, t->dtype, 1, &s);
  kiln_value *one = ox_scalar(x, IR_DT_F64, 1), *zero = ox_scalar(x, IR_DT_F64, 0), *r;
  if (!one || !zero ||
      !(one = ox_op(x, "cast", &one, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype))) ||
      !(zero = ox_op(x, "cast", &zero, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype))) ||
      !(one = ox_op(x, "broadcast_to", &one, 1, ty, NULL)) ||
      !(zero = ox_op(x, "broadcast_to", &zero, 1, ty, NULL)) ||
      !(r = ox_reshape(x, a, 2, flat)) ||
      !(r = ox_op(x, "layer_norm", (kiln_value *[]){r, one, zero}, 3, NULL, "{epsilon = %.17g}",
                  ox_attr_float(n, "epsilon", 1e-5))) ||
      !(r = ox_reshape(x, r, 3, three)) || !(scale = per_channel(x, scale, 3, t->dtype)) ||
      !(bias = per_channel(x, bias, 3, t->dtype)) || !(r = OP2("mul", r, scale)) ||
      !(r = OP2("add", r, bias)) ||
      !(r = ox_reshape(x, r, t->rank, (const ir_dim *const *)t->dims)))
    return FAILED();
  out[0]->v = r;
  return 0;
}

/* reshape to `rank6`, permute by `perm`, reshape to `to` (4-D). */
static kiln_value *shuffle(ox *x, kiln_value *a, const ir_dim *const *rank6, const char *perm,
                           const ir_dim *const *to) {
  kiln_value *r = ox_reshape(x, a, 6, rank6);
  if (!r || !(r = ox_op(x, "permute", &r, 1, NULL, "{dims = [%s]}", perm))) return NULL;
  return ox_reshape(x, r, 4, to);
}

/* A positive blocksize attribute, or 0 after recording the failure. */
static int64_t blocksize(ox *x, const Onnx__NodeProto *n) {
  int64_t b = ox_attr_int(n, "blocksize", 0);
  if (b <= 0) ox_fail(x, KILN_ERR_VERIFY, "blocksize must be positive, not %lld", (long long)b);
  return b > 0 ? b : 0;
}

/* [N, C, H, W] -> [N, C / b^2, H * b, W * b]; DCR: depth is (row, column,
 * channel), CRD: (channel, row, column). C must be known. */
int ox_op_DepthToSpace(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                       int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int64_t b = blocksize(x, n), c;
  if (!b) return -1;
  const ir_type *t = ox_type(a);
  if (t->rank != 4) return ox_fail(x, KILN_ERR_VERIFY, "X must be 4-D, not of rank %d", t->rank);
  if (!ir_dim_is_const(t->dims[1], &c)) return ox_unsupported(x, n, "a symbolic channel count");
  if (c % (b * b) != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "channels %lld are not a multiple of blocksize^2 = %lld",
                   (long long)c, (long long)(b * b));
  char mode[8];
  const char *m = ox_attr_string(n, "mode", "DCR", mode, sizeof mode);
  bool crd = strcmp(m, "CRD") == 0;
  if (!crd && strcmp(m, "DCR") != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "mode must be \"DCR\" or \"CRD\", not \"%s\"", m);
  ir_arena *ar = x->ir->arena;
  const ir_dim *bd = ir_dim_const(ar, b), *cd = ir_dim_const(ar, c / (b * b));
  const ir_dim *dcr[6] = {t->dims[0], bd, bd, cd, t->dims[2], t->dims[3]};
  const ir_dim *crd6[6] = {t->dims[0], cd, bd, bd, t->dims[2], t->dims[3]};
  const ir_dim *to[4] = {t->dims[0], cd, ir_dim_mul(ar, t->dims[2], bd),
                         ir_dim_mul(ar, t->dims[3], bd)};
  if (!(out[0]->v = crd ? shuffle(x, a, crd6, "0, 1, 4, 2, 5, 3", to)
                        : shuffle(x, a, dcr, "0, 3, 4, 1, 5, 2", to)))
    return FAILED();
  return 0;
}

/* [N, C, H, W] -> [N, C * b^2, H / b, W / b], depth (row, column, channel).
 * H and W must be known multiples of b. */
int ox_op_SpaceToDepth(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                       int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int64_t b = blocksize(x, n), h, w;
  if (!b) return -1;
  const ir_type *t = ox_type(a);
  if (t->rank != 4) return ox_fail(x, KILN_ERR_VERIFY, "X must be 4-D, not of rank %d", t->rank);
  if (!ir_dim_is_const(t->dims[2], &h) || !ir_dim_is_const(t->dims[3], &w))
    return ox_unsupported(x, n, "a symbolic height or width");
  if (h % b != 0 || w % b != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "height %lld and width %lld must be multiples of %lld",
                   (long long)h, (long long)w, (long long)b);
  ir_arena *ar = x->ir->arena;
  const ir_dim *bd = ir_dim_const(ar, b), *hd = ir_dim_const(ar, h / b),
               *wd = ir_dim_const(ar, w / b);
  const ir_dim *six[6] = {t->dims[0], t->dims[1], hd, bd, wd, bd};
  const ir_dim *to[4] = {t->dims[0], ir_dim_mul(ar, t->dims[1], ir_dim_const(ar, b * b)), hd, wd};
  if (!(out[0]->v = shuffle(x, a, six, "0, 3, 5, 1, 2, 4", to))) return FAILED();
  return 0;
}
