/* ops_rnn.c - ONNX's RNN, GRU and LSTM, unrolled over a sequence length
 * known at import (at most MAX_STEPS steps): each gate's input projection
 * is one matmul over every step at once, then each step adds the previous
 * hidden state's projection and applies the gate equations of the ONNX
 * operator docs; Y stacks the steps' hidden states, Y_h (and LSTM's Y_c)
 * is the last. Directions forward, reverse and bidirectional; layout 0 and
 * 1; clip; the activations Sigmoid, Tanh and Relu; sequence_lens going
 * forward (a batch row past its length keeps its state and outputs zeros).
 * Refused by name: sequence_lens in reverse, other activations, a symbolic
 * or too long sequence, LSTM's input_forget. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

#define MAX_STEPS 1024

typedef enum { CELL_RNN, CELL_GRU, CELL_LSTM } cell_kind;

typedef struct cell {
  ox *x;
  cell_kind kind;
  int gates;          /* 1, 3, 4 */
  int64_t hidden;
  const char *act[3]; /* f, g, h: kiln op names */
  double clip;        /* 0: none */
  bool lbr;           /* GRU linear_before_reset */
  ir_dtype dt;
} cell;

/* rows [from, to) of v along axis 0 (v of known dims). */
static kiln_value *rows(ox *x, kiln_value *v, int64_t from, int64_t to) {
  const ir_type *t = ox_type(v);
  char a[256], b[256], c[256];
  int na = 0, nb = 0, nc = 0;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = 0;
    if (i > 0 && !ir_dim_is_const(t->dims[i], &d)) {
      ox_unsupported(x, x->node, "a weight of symbolic shape");
      return NULL;
    }
    na += snprintf(a + na, sizeof a - (size_t)na, "%s%lld", i ? ", " : "",
                   (long long)(i ? 0 : from));
    nb += snprintf(b + nb, sizeof b - (size_t)nb, "%s%lld", i ? ", " : "", (long long)(i ? d : to));
    nc += snprintf(c + nc, sizeof c - (size_t)nc, "%s1", i ? ", " : "");
  }
  return ox_op(x, "slice_tensor", &v, 1, NULL, "{start = [%s], stop = [%s], step = [%s]}", a, b, c);
}

/* v[i] along axis 0 (the axis dropped). */
static kiln_value *pick(ox *x, kiln_value *v, int64_t i) {
  kiln_value *k = ox_scalar(x, IR_DT_SI64, (double)i);
  return k ? ox_op(x, "gather", (kiln_value *[]){v, k}, 2, NULL, "{axis = 0}") : NULL;
}

static kiln_value *transpose2(ox *x, kiln_value *v) {
  return ox_op(x, "transpose", &v, 1, NULL, "{axis_1 = 0, axis_2 = 1}");
}

static kiln_value *activate(cell *c, int which, kiln_value *v) {
  ox *x = c->x;
  if (!v) return NULL;
  if (c->clip > 0) {
    kiln_value *hi = ox_scalar(x, c->dt, c->clip), *lo = ox_scalar(x, c->dt, -c->clip);
    if (!hi || !lo || !(v = OP2("min", v, hi)) || !(v = OP2("max", v, lo))) return NULL;
  }
  return OP1(c->act[which], v);
}

/* The kiln op of an ONNX activation name, or NULL. */
static const char *act_op(const char *name, size_t len) {
  static const char *const map[][2] = {{"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Relu", "relu"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strlen(map[i][0]) == len && memcmp(map[i][0], name, len) == 0) return map[i][1];
  return NULL;
}

/* Where row b of the batch is within its length at step t (lens [B, 1]):
 * next, else prev. */
static kiln_value *within(ox *x, kiln_value *lens, int64_t t, kiln_value *next, kiln_value *prev) {
  kiln_value *k = ox_scalar(x, IR_DT_SI64, (double)t), *m;
  if (!k || !(m = OP2("greater", lens, k))) return NULL;
  return ox_op(x, "where", (kiln_value *[]){m, next, prev}, 3, NULL, NULL);
}

/* One direction: h0 / c0 [B, H] (c0 LSTM only), xw[g] [T, B, H] the input
 * projections with their biases, rt[g] [H, H] R_g transposed, rbh GRU's
 * separate recurrent bias of the new gate (linear_before_reset) or NULL,
 * p[3] LSTM's peepholes or NULL, lens [B, 1] si64 or NULL. Fills ys[t]
 * [B, H], *hT and *cT. */
static int run_direction(cell *c, kiln_value *const *xw, kiln_value *const *rt, kiln_value *rbh,
                         kiln_value *const *p, kiln_value *lens, kiln_value *h, kiln_value *cs,
                         int64_t steps, bool reverse, kiln_value **ys, kiln_value **hT,
                         kiln_value **cT) {
  ox *x = c->x;
  kiln_value *one = ox_scalar(x, c->dt, 1), *zero = ox_scalar(x, c->dt, 0);
  if (!one || !zero) return -1;
  for (int64_t s = 0; s < steps; s++) {
    int64_t t = reverse ? steps - 1 - s : s;
    kiln_value *g[4], *xt, *h_prev = h, *c_prev = cs;
    for (int k = 0; k < c->gates; k++) {
      if (!(xt = pick(x, xw[k], t))) return -1;
      g[k] = xt;
    }
    if (c->kind == CELL_RNN) {
      kiln_value *hr = OP2("matmul", h, rt[0]);
      if (!hr || !(h = activate(c, 0, OP2("add", g[0], hr)))) return -1;
    } else if (c->kind == CELL_GRU) { /* gates z, r, h */
      kiln_value *z, *r, *hh, *hr;
      if (!(hr = OP2("matmul", h, rt[0])) || !(z = activate(c, 0, OP2("add", g[0], hr))) ||
          !(hr = OP2("matmul", h, rt[1])) || !(r = activate(c, 0, OP2("add", g[1], hr))))
        return -1;
      if (c->lbr) { /* r * (H R_h^T + Rb_h) */
        if (!(hr = OP2("matmul", h, rt[2])) || (rbh && !(hr = OP2("add", hr, rbh))) ||
            !(hr = OP2("mul", r, hr)))
          return -1;
      } else if (!(hr = OP2("mul", r, h)) || !(hr = OP2("matmul", hr, rt[2]))) {
        return -1;
      }
      kiln_value *keep, *take;
      if (!(hh = activate(c, 1, OP2("add", g[2], hr))) || !(keep = OP2("mul", z, h)) ||
          !(take = OP2("sub", one, z)) || !(take = OP2("mul", take, hh)) ||
          !(h = OP2("add", take, keep)))
        return -1;
    } else { /* gates i, o, f, c */
      kiln_value *pre[4], *i, *o, *f, *cc;
      for (int k = 0; k < 4; k++) {
        kiln_value *hr = OP2("matmul", h, rt[k]);
        if (!hr || !(pre[k] = OP2("add", g[k], hr))) return -1;
      }
      kiln_value *pi = NULL, *pf = NULL, *po = NULL;
      if (p && (!(pi = OP2("mul", p[0], cs)) || !(pf = OP2("mul", p[2], cs)) ||
                !(pre[0] = OP2("add", pre[0], pi)) || !(pre[2] = OP2("add", pre[2], pf))))
        return -1;
      if (!(i = activate(c, 0, pre[0])) || !(f = activate(c, 0, pre[2])) ||
          !(cc = activate(c, 1, pre[3])) || !(f = OP2("mul", f, cs)) || !(i = OP2("mul", i, cc)) ||
          !(cs = OP2("add", f, i)))
        return -1;
      if (p && (!(po = OP2("mul", p[1], cs)) || !(pre[1] = OP2("add", pre[1], po)))) return -1;
      kiln_value *hc;
      if (!(o = activate(c, 0, pre[1])) || !(hc = OP1(c->act[2], cs)) || !(h = OP2("mul", o, hc)))
        return -1;
    }
    ys[t] = h;
    if (lens && (!(ys[t] = within(x, lens, t, h, zero)) || !(h = within(x, lens, t, h, h_prev)) ||
                 (cs && !(cs = within(x, lens, t, cs, c_prev)))))
      return -1;
  }
  *hT = h;
  *cT = cs;
  return 0;
}

/* Values of one shape stacked along a new axis 0 (v[] is overwritten by the
 * values reshaped to [1, ...]). */
static kiln_value *stack(ox *x, kiln_value **v, int64_t n) {
  const ir_type *t = ox_type(v[0]);
  const ir_dim *dims[IR_MAX_RANK];
  int rank = 1 + t->rank;
  dims[0] = ir_dim_const(x->ir->arena, 1);
  for (int i = 0; i < t->rank; i++) dims[1 + i] = t->dims[i];
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] = ox_reshape(x, v[i], rank, dims))) return NULL;
  return n == 1 ? v[0] : ox_op(x, "concat", v, (int)n, NULL, "{axis = 0}");
}

/* v has rank `rank` (and, where want > 0, dim `axis` equal to want);
 * what names it in the message. */
static bool shaped(ox *x, kiln_value *v, const char *what, int rank, int axis, int64_t want) {
  int64_t d;
  if (!v) return true;
  if (ox_type(v)->rank != rank) {
    ox_fail(x, KILN_ERR_VERIFY, "%s must have rank %d, not %d", what, rank, ox_type(v)->rank);
    return false;
  }
  if (want > 0 && (!ir_dim_is_const(ox_type(v)->dims[axis], &d) || d != want)) {
    ox_fail(x, KILN_ERR_VERIFY, "%s must have %lld along axis %d", what, (long long)want, axis);
    return false;
  }
  return true;
}

/* The operands' ranks and the sizes the cell reads: W [dirs, G * H, I],
 * R [dirs, G * H, H], B [dirs, 2 * G * H], initial states 3-D, P
 * [dirs, 3 * H], sequence_lens 1-D; H from R, which must be known. */
static int check_operands(ox *x, cell *c, int ndir, kiln_value *X, kiln_value *W, kiln_value *R,
                          kiln_value *B, kiln_value *h0, kiln_value *c0, kiln_value *P,
                          kiln_value *lens) {
  int64_t H;
  if (!shaped(x, X, "X", 3, 0, 0) || !shaped(x, R, "R", 3, 0, ndir)) return -1;
  if (!ir_dim_is_const(ox_type(R)->dims[2], &H) || H < 1)
    return ox_unsupported(x, x->node, "a hidden size not known at import");
  int64_t gh = c->gates * H;
  if (!shaped(x, R, "R", 3, 1, gh) || !shaped(x, W, "W", 3, 0, ndir) ||
      !shaped(x, W, "W", 3, 1, gh) || !shaped(x, B, "B", 2, 0, ndir) ||
      !shaped(x, B, "B", 2, 1, 2 * gh) || !shaped(x, h0, "initial_h", 3, 2, H) ||
      !shaped(x, c0, "initial_c", 3, 2, H) || !shaped(x, P, "P", 2, 0, ndir) ||
      !shaped(x, P, "P", 2, 1, 3 * H) || !shaped(x, lens, "sequence_lens", 1, 0, 0))
    return -1;
  c->hidden = H;
  return 0;
}

static int rnn(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout,
               cell_kind kind) {
  static const int gates_of[] = {1, 3, 4};
  static const char *const default_acts[][3] = {
      {"tanh", "tanh", "tanh"}, {"sigmoid", "tanh", "tanh"}, {"sigmoid", "tanh", "tanh"}};
  cell c = {.x = x, .kind = kind, .gates = gates_of[kind], .clip = ox_attr_float(n, "clip", 0),
            .lbr = ox_attr_int(n, "linear_before_reset", 0) != 0};
  char dir_buf[32];
  const char *dir = ox_attr_string(n, "direction", "forward", dir_buf, sizeof dir_buf);
  int ndir = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  bool rev0 = strcmp(dir, "reverse") == 0;
  if (ndir == 1 && !rev0 && strcmp(dir, "forward") != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "direction \"%s\" is not forward, reverse or bidirectional",
                   dir);
  if (nin > 4 && in[4] && (rev0 || ndir == 2))
    return ox_unsupported(x, n, "sequence_lens (per-batch lengths) in reverse");
  if (kind == CELL_LSTM && ox_attr_int(n, "input_forget", 0))
    return ox_unsupported(x, n, "input_forget = 1");
  const Onnx__AttributeProto *acts = ox_attr(n, "activations");
  int per_dir = kind == CELL_LSTM ? 3 : kind == CELL_GRU ? 2 : 1;
  for (int k = 0; k < 3; k++) c.act[k] = default_acts[kind][k];
  if (acts) {
    if ((int)acts->n_strings != per_dir * ndir)
      return ox_fail(x, KILN_ERR_VERIFY, "%d activations, expected %d", (int)acts->n_strings,
                     per_dir * ndir);
    for (size_t k = 0; k < acts->n_strings; k++) {
      const char *op = act_op((const char *)acts->strings[k].data, acts->strings[k].len);
      if (!op)
        return ox_unsupported(x, n, "activation %.*s", (int)acts->strings[k].len,
                              (const char *)acts->strings[k].data);
      if (k < (size_t)per_dir) c.act[k] = op;
      else if (strcmp(op, c.act[k - (size_t)per_dir]) != 0)
        return ox_unsupported(x, n, "different activations per direction");
    }
  }
  BEGIN;
  kiln_value *X = IN(0), *W = X ? IN(1) : NULL, *R = W ? IN(2) : NULL, *B = NULL, *h0 = NULL,
             *c0 = NULL, *P = NULL, *lens = NULL;
  if (!R) return rc;
  if (nin > 4 && in[4] && !(lens = IN(4))) return rc;
  if (nin > 3 && in[3] && !(B = IN(3))) return rc;
  if (nin > 5 && in[5] && !(h0 = IN(5))) return rc;
  if (kind == CELL_LSTM && nin > 6 && in[6] && !(c0 = IN(6))) return rc;
  if (kind == CELL_LSTM && nin > 7 && in[7] && !(P = IN(7))) return rc;
  bool batchwise = ox_attr_int(n, "layout", 0) != 0;
  if (check_operands(x, &c, ndir, X, W, R, B, h0, c0, P, lens) < 0) return -1;
  if (batchwise && !(X = ox_op(x, "transpose", &X, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  if (batchwise && h0 && !(h0 = ox_op(x, "transpose", &h0, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  if (batchwise && c0 && !(c0 = ox_op(x, "transpose", &c0, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  const ir_type *tx = ox_type(X);
  c.dt = tx->dtype;
  int64_t steps, H;
  if (!ir_dim_is_const(tx->dims[0], &steps) || steps < 1 || steps > MAX_STEPS)
    return ox_unsupported(x, n, "a sequence length not known at import or over %d steps",
                          MAX_STEPS);
  H = c.hidden;
  /* X as [T * B, I] for the input projections */
  const ir_dim *flat[2] = {ir_dim_mul(x->ir->arena, tx->dims[0], tx->dims[1]), tx->dims[2]};
  const ir_dim *tbh[3] = {tx->dims[0], tx->dims[1], ir_dim_const(x->ir->arena, H)};
  const ir_dim *bh[2] = {tx->dims[1], tbh[2]};
  kiln_value *xf = ox_reshape(x, X, 2, flat);
  if (!xf) return FAILED();
  if (lens) { /* [B] -> [B, 1] si64 */
    const ir_dim *b1[2] = {tx->dims[1], ir_dim_const(x->ir->arena, 1)};
    if ((ox_type(lens)->dtype != IR_DT_SI64 &&
         !(lens = ox_op(x, "cast", &lens, 1, NULL, "{dtype = si64}"))) ||
        !(lens = ox_reshape(x, lens, 2, b1)))
      return FAILED();
  }
  kiln_value *ys[2][MAX_STEPS], *hT[2], *cT[2];
  for (int d = 0; d < ndir; d++) {
    kiln_value *Wd = pick(x, W, d), *Rd = pick(x, R, d), *Bd = B ? pick(x, B, d) : NULL;
    if (!Wd || !Rd || (B && !Bd)) return FAILED();
    kiln_value *xw[4], *rt[4], *rbh = NULL, *p[3] = {NULL, NULL, NULL};
    for (int k = 0; k < c.gates; k++) {
      kiln_value *wk = rows(x, Wd, k * H, (k + 1) * H), *rk = rows(x, Rd, k * H, (k + 1) * H);
      if (!wk || !rk || !(wk = transpose2(x, wk)) || !(rt[k] = transpose2(x, rk)) ||
          !(xw[k] = OP2("matmul", xf, wk)))
        return FAILED();
      if (Bd) {
        kiln_value *wb = rows(x, Bd, k * H, (k + 1) * H),
                   *rb = rows(x, Bd, (c.gates + k) * H, (c.gates + k + 1) * H);
        if (!wb || !rb) return FAILED();
        if (kind == CELL_GRU && c.lbr && k == 2) rbh = rb; /* inside r * (...) */
        else if (!(wb = OP2("add", wb, rb))) return FAILED();
        if (!(xw[k] = OP2("add", xw[k], wb))) return FAILED();
      }
      if (!(xw[k] = ox_reshape(x, xw[k], 3, tbh))) return FAILED();
    }
    if (P) {
      kiln_value *Pd = pick(x, P, d);
      for (int k = 0; k < 3; k++)
        if (!Pd || !(p[k] = rows(x, Pd, k * H, (k + 1) * H))) return FAILED();
    }
    kiln_value *h = h0 ? pick(x, h0, d) : NULL, *cs = c0 ? pick(x, c0, d) : NULL;
    char ty[512];
    ox_type_text(ty, sizeof ty, c.dt, 2, bh);
    kiln_value *z = ox_scalar(x, c.dt, 0);
    if ((!h && (!z || !(h = ox_op(x, "broadcast_to", &z, 1, ty, NULL)))) ||
        (kind == CELL_LSTM && !cs && (!z || !(cs = ox_op(x, "broadcast_to", &z, 1, ty, NULL)))))
      return FAILED();
    if (run_direction(&c, xw, rt, rbh, P ? p : NULL, lens, h, cs, steps, d == 1 || rev0, ys[d],
                      &hT[d], &cT[d]) < 0)
      return FAILED();
  }
  /* Y [T, dirs, B, H] (layout 1: [B, T, dirs, H]); Y_h, Y_c [dirs, B, H] */
  if (nout > 0 && out[0] && *out[0]->name) {
    kiln_value *per[MAX_STEPS];
    for (int64_t t = 0; t < steps; t++) {
      kiln_value *dv[2] = {ys[0][t], ndir == 2 ? ys[1][t] : NULL};
      if (!(per[t] = stack(x, dv, ndir))) return FAILED(); /* [dirs, B, H] */
    }
    kiln_value *y = stack(x, per, steps); /* [T, dirs, B, H] */
    if (!y || (batchwise && !(y = ox_op(x, "permute", &y, 1, NULL, "{dims = [2, 0, 1, 3]}"))))
      return FAILED();
    out[0]->v = y;
  }
  for (int k = 1; k < nout && k < 3; k++) {
    if (!out[k] || !*out[k]->name) continue;
    if (k == 2 && kind != CELL_LSTM) return ox_fail(x, KILN_ERR_VERIFY, "too many outputs");
    kiln_value *last[2] = {k == 1 ? hT[0] : cT[0], k == 1 ? hT[1] : cT[1]};
    kiln_value *v = stack(x, last, ndir);
    if (!v || (batchwise && !(v = ox_op(x, "transpose", &v, 1, NULL, "{axis_1 = 0, axis_2 = 1}"))))
      return FAILED();
    out[k]->v = v;
  }
  return 0;
}

int ox_op_RNN(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return rnn(x, n, in, nin, out, nout, CELL_RNN);
}
int ox_op_GRU(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return rnn(x, n, in, nin, out, nout, CELL_GRU);
}
int ox_op_LSTM(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return rnn(x, n, in, nin, out, nout, CELL_LSTM);
}
