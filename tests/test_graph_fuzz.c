/* test_graph_fuzz.c - a differential fuzzer: random graphs, the JIT against
 * the reference interpreter (tests/support/oracle.h).
 *
 * Each seed builds, valid by construction, a graph of 4 to 14 ops over f32
 * and si32 values (a quarter of the inputs are si32; casts join the two;
 * ints take only the ops that cannot overflow) of rank 1 to 3, whose dims
 * come from {n, m, 1, 3, 5} (n and m symbolic) and grow algebraic ones
 * (n * 3 from a flattening reshape, m + 5 from a concat): elementwise
 * chains with broadcasting (what fusion joins), reductions, softmax /
 * logsoftmax / layer_norm, matmul against a fresh weight, transposes,
 * permutes, reshapes, concats, pads, broadcast_to, cumsum, masked_scatter
 * (a random bool mask, updates of the input's shape), nonzero of an exact
 * value (a count set from data, used by a gather_nd and a sum), tile,
 * band_part, max / avg_pool2d (3x3, padded to the same shape, through a
 * rank-4 reshape), floor / ceil / trunc / round (of exact values) and atan,
 * top_k / bottom_k (k = 1, exact values), prod (of a tanh), irfft (n of 1,
 * 4, 5 or 8 along any axis, every normalization), and compares /
 * where / argmax on values derived from the inputs by exact ops only (a
 * compare of two computed floats would flip on a last-bit difference).
 * Values no op consumed, and a few others, are the outputs. Each graph
 * runs at three dim bindings, one with an empty dim. With KILN_TEST_DEVICE the JIT side runs
 * on that device (tools/gpu_check.sh), so the fuzzer checks SIMT code too.
 *
 * KILN_GRAPH_FUZZ=N runs N seeds (default 40) from KILN_GRAPH_FUZZ_SEED
 * (default 1). A failure names the seed and prints the graph;
 * KILN_GRAPH_FUZZ_PRINT=1 prints each graph before it runs (for a crash).
 * The runtime's own switches widen it: KILN_SPECIALIZE=sync checks the
 * shape-specialized variants, KILN_FUSE=0 the unfused kernels.
 * Tolerance: rtol 1e-3, atol 1e-3: chains of up to 14 f32 ops, sums of at
 * most 25 terms of magnitude <= ~10^3, against the oracle's doubles; an
 * indexing or fusion bug is off by O(1). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

#define MAXV 64
#define DIM 48

typedef struct fval {
  int id;        /* gtext value */
  int rank;
  char dims[3][DIM];
  bool exact;    /* derived from inputs by exact ops only */
  bool isint;    /* si32, else f32 */
  int uses;
} fval;

typedef struct fuzz {
  gt *t;
  uint64_t rng;
  fval v[MAXV];
  int nv;
  int nweights;
  bool cur_int; /* the dtype of the op being built: si32, else f32 */
  int ncounts;  /* mo.nonzero counts made (symbols c0 .. c3) */
  char shape_buf[3 * DIM + 8];
} fuzz;

static uint32_t rnd(fuzz *z, uint32_t n) {
  z->rng = z->rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)((z->rng >> 33) % n);
}

static const char *const DIMS[] = {"n", "m", "1", "3", "5"};

/* d = s, cut to DIM - 1 characters (callers keep dims shorter). */
static void dimcpy(char *d, const char *s) {
  size_t n = strlen(s);
  if (n >= DIM) n = DIM - 1;
  memmove(d, s, n);
  d[n] = 0;
}

static const char *shape_of(fuzz *z, int rank, char dims[][DIM]) {
  size_t k = 0;
  z->shape_buf[0] = 0;
  for (int i = 0; i < rank; i++)
    k += (size_t)snprintf(z->shape_buf + k, sizeof z->shape_buf - k, "%s%s", i ? ", " : "",
                          dims[i]);
  return z->shape_buf;
}

static fval *add_val(fuzz *z, int id, int rank, char dims[][DIM], bool exact) {
  fval *f = &z->v[z->nv++];
  memset(f, 0, sizeof *f);
  f->id = id;
  f->rank = rank;
  for (int i = 0; i < rank; i++) dimcpy(f->dims[i], dims[i]);
  f->exact = exact || z->cur_int;
  f->isint = z->cur_int;
  return f;
}

static const char *cur_dt(const fuzz *z) { return z->cur_int ? "si32" : "f32"; }

/* An input of the current dtype: floats in [-2, 2], ints in [-20, 20]. */
static int input_id(fuzz *z, int rank, char dims[][DIM]) {
  return gt_in_gen(z->t, cur_dt(z), shape_of(z, rank, dims),
                   z->cur_int ? gen_uniform(-20, 20) : gen_uniform(-2, 2));
}

static fval *new_input(fuzz *z) {
  char dims[3][DIM];
  int rank = 1 + (int)rnd(z, 3);
  for (int i = 0; i < rank; i++) dimcpy(dims[i], DIMS[rnd(z, 5)]);
  z->cur_int = rnd(z, 4) == 0;
  int id = input_id(z, rank, dims);
  return add_val(z, id, rank, dims, true);
}

/* An input of exactly the given shape. */
static fval *input_like(fuzz *z, int rank, char dims[][DIM]) {
  int id = input_id(z, rank, dims);
  return add_val(z, id, rank, dims, true);
}

static fval *pick(fuzz *z) { return &z->v[rnd(z, (uint32_t)z->nv)]; }

static fval *op1(fuzz *z, const char *op, const char *attrs, fval *a, int rank, char dims[][DIM],
                 bool exact) {
  a->uses++;
  char full[40];
  snprintf(full, sizeof full, "mo.%s", op);
  int id = gt_op1(z->t, full, attrs, a->id, cur_dt(z), shape_of(z, rank, dims));
  return add_val(z, id, rank, dims, exact);
}

static fval *op2(fuzz *z, const char *op, fval *a, fval *b, int rank, char dims[][DIM],
                 bool exact) {
  a->uses++;
  b->uses++;
  char full[40];
  snprintf(full, sizeof full, "mo.%s", op);
  int id = gt_op2(z->t, full, NULL, a->id, b->id, cur_dt(z), shape_of(z, rank, dims));
  return add_val(z, id, rank, dims, exact);
}

/* A value broadcastable against a: a's shape with some dims 1 and maybe
 * fewer leading axes; an existing value of that shape or a fresh input. */
static fval *broadcast_partner(fuzz *z, fval *a) {
  char dims[3][DIM];
  int drop = a->rank > 1 ? (int)rnd(z, (uint32_t)a->rank) : 0;
  int rank = a->rank - drop;
  for (int i = 0; i < rank; i++)
    dimcpy(dims[i], rnd(z, 3) == 0 ? "1" : a->dims[i + drop]);
  /* an existing value of that shape, else a new input */
  for (int k = 0; k < z->nv; k++) {
    fval *c = &z->v[k];
    if (c == a || c->rank != rank || c->isint != z->cur_int) continue;
    bool same = true;
    for (int i = 0; i < rank; i++) same &= strcmp(c->dims[i], dims[i]) == 0;
    if (same && rnd(z, 2)) return c;
  }
  return input_like(z, rank, dims);
}

/* a cast to f32 (exact: ints of at most a few thousand) */
static void to_float(fuzz *z, fval *a, int r, char dims[][DIM]) {
  z->cur_int = false;
  op1(z, "cast", "{dtype = f32}", a, r, dims, true);
}

static void step(fuzz *z) {
  fval *a = pick(z);
  char dims[3][DIM];
  int r = a->rank;
  for (int i = 0; i < r; i++) dimcpy(dims[i], a->dims[i]);
  z->cur_int = a->isint;
  uint32_t what = rnd(z, 28);
  if (z->cur_int &&
      (what == 5 || what == 7 || what == 8 || what == 24 || what == 26 || what == 27)) {
    /* float-only ops */
    to_float(z, a, r, dims);
    return;
  }
  switch (what) {
  case 0:
  case 1: {
    static const char *const un[] = {"abs", "negate", "relu", "tanh", "sigmoid", "gelu", "silu",
                                     "sin", "cos", "erf"};
    const char *op = un[rnd(z, z->cur_int ? 3 : 10)];
    bool ex = a->exact && (strcmp(op, "abs") == 0 || strcmp(op, "negate") == 0 ||
                           strcmp(op, "relu") == 0);
    op1(z, op, NULL, a, r, dims, ex);
    break;
  }
  case 2:
  case 3:
  case 4: {
    static const char *const bin[] = {"add", "sub", "mul", "max", "min"};
    static const char *const ibin[] = {"add", "sub", "max", "min"}; /* no overflow */
    fval *b = broadcast_partner(z, a);
    bool ex = a->exact && b->exact && rnd(z, 5) >= 3; /* max / min */
    const char *op = z->cur_int ? ibin[rnd(z, 4)] : bin[ex ? 3 + rnd(z, 2) : rnd(z, 5)];
    if (rnd(z, 2)) op2(z, op, a, b, r, dims, ex);
    else op2(z, op, b, a, r, dims, ex);
    break;
  }
  case 5: { /* x / (|y| + 1) */
    fval *b = broadcast_partner(z, a);
    char bd[3][DIM];
    for (int i = 0; i < b->rank; i++) dimcpy(bd[i], b->dims[i]);
    fval *ab = op1(z, "abs", NULL, b, b->rank, bd, false);
    int one = gt_const(z->t, "f32", "", "1.0");
    fval *c = add_val(z, one, 0, NULL, true);
    fval *d = op2(z, "add", ab, c, b->rank, bd, false);
    op2(z, "div", a, d, r, dims, false);
    break;
  }
  case 6: { /* reduction over one axis, kept as 1 */
    static const char *const red[] = {"sum", "mean", "max", "min"};
    if (r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "{axis = %d}", rnd(z, 2) ? ax : ax - r);
    const char *op = red[rnd(z, 4)];
    snprintf(dims[ax], DIM, "1");
    op1(z, op, attrs, a, r, dims, a->exact && (strcmp(op, "max") == 0 || strcmp(op, "min") == 0));
    break;
  }
  case 7: { /* softmax / logsoftmax along an axis */
    if (r == 0) break;
    char attrs[32];
    snprintf(attrs, sizeof attrs, "{axis = %d}", (int)rnd(z, (uint32_t)r));
    op1(z, rnd(z, 2) ? "softmax" : "logsoftmax", attrs, a, r, dims, false);
    break;
  }
  case 8: { /* layer_norm over the last axis, fresh gamma and beta */
    if (r == 0) break;
    char ld[3][DIM];
    dimcpy(ld[0], dims[r - 1]);
    fval *g = input_like(z, 1, ld), *b = input_like(z, 1, ld);
    a->uses++, g->uses++, b->uses++;
    int ins[3] = {a->id, g->id, b->id};
    int id = gt_op(z->t, "mo.layer_norm", "{epsilon = 0.001}", ins, 3, "f32", shape_of(z, r, dims));
    add_val(z, id, r, dims, false);
    break;
  }
  case 9: { /* matmul with a fresh weight (or input) [K, P] */
    if (r < 2) break;
    char wd[2][DIM];
    dimcpy(wd[0], dims[r - 1]);
    dimcpy(wd[1], DIMS[2 + rnd(z, 3)]); /* a weight brings no symbol of its own */
    char name[16];
    snprintf(name, sizeof name, "w%d", z->nweights++);
    /* a weight of static shape (a device model binds only those), else an input */
    bool stat = wd[0][0] >= '0' && wd[0][0] <= '9' && !strchr(wd[0], 'n') && !strchr(wd[0], 'm');
    int w;
    if (stat) {
      w = gt_weight(z->t, name, cur_dt(z), shape_of(z, 2, wd));
    } else {
      fval *b = input_like(z, 2, wd);
      b->uses++;
      w = b->id;
    }
    dimcpy(dims[r - 1], wd[1]);
    a->uses++;
    int id = gt_op2(z->t, "mo.matmul", NULL, a->id, w, cur_dt(z), shape_of(z, r, dims));
    add_val(z, id, r, dims, false);
    break;
  }
  case 10: { /* transpose two axes */
    if (r < 2) break;
    int i = (int)rnd(z, (uint32_t)r), j = (int)rnd(z, (uint32_t)r);
    if (i == j) j = (i + 1) % r;
    char attrs[48], tmp[DIM];
    snprintf(attrs, sizeof attrs, "{axis_1 = %d, axis_2 = %d}", i, j);
    dimcpy(tmp, dims[i]);
    dimcpy(dims[i], dims[j]);
    dimcpy(dims[j], tmp);
    op1(z, "transpose", attrs, a, r, dims, a->exact);
    break;
  }
  case 11: { /* reshape: flatten the last two axes, or split off a unit axis */
    if (r >= 2 && strlen(dims[r - 2]) + strlen(dims[r - 1]) + 8 < DIM) {
      char f[2 * DIM + 16];
      snprintf(f, sizeof f, "(%s) * (%s)", dims[r - 2], dims[r - 1]);
      dimcpy(dims[r - 2], f);
      op1(z, "reshape", NULL, a, r - 1, dims, a->exact);
    } else if (r < 3) {
      snprintf(dims[r], DIM, "1");
      op1(z, "reshape", NULL, a, r + 1, dims, a->exact);
    }
    break;
  }
  case 12: { /* concat with a fresh input along one axis */
    if (r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r);
    char bd[3][DIM];
    for (int i = 0; i < r; i++) dimcpy(bd[i], dims[i]);
    dimcpy(bd[ax], DIMS[rnd(z, 5)]);
    fval *b = input_like(z, r, bd);
    if (strlen(dims[ax]) + strlen(bd[ax]) + 8 >= DIM) break;
    char s[2 * DIM + 16];
    snprintf(s, sizeof s, "(%s) + (%s)", dims[ax], bd[ax]);
    dimcpy(dims[ax], s);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "{axis = %d}", ax);
    a->uses++, b->uses++;
    int ins[2] = {a->id, b->id};
    int id = gt_op(z->t, "mo.concat", attrs, ins, 2, cur_dt(z), shape_of(z, r, dims));
    add_val(z, id, r, dims, a->exact && b->exact);
    break;
  }
  case 13: { /* cumsum */
    if (r == 0) break;
    char attrs[64];
    snprintf(attrs, sizeof attrs, "{axis = %d, exclusive = %s, reverse = %s}",
             (int)rnd(z, (uint32_t)r), rnd(z, 2) ? "true" : "false", rnd(z, 2) ? "true" : "false");
    op1(z, "cumsum", attrs, a, r, dims, false);
    break;
  }
  case 14: { /* where(x > y, a, b) on exact operands */
    if (!a->exact) break;
    fval *b = broadcast_partner(z, a);
    if (!b->exact) break;
    a->uses++, b->uses++;
    int c = gt_op2(z->t, "mo.greater", NULL, a->id, b->id, "bool", shape_of(z, r, dims));
    fval *p = pick(z), *q = broadcast_partner(z, a);
    /* p must broadcast to dims too: use a itself unless p has a's shape */
    if (p->rank != r || p->isint != z->cur_int) p = a;
    for (int i = 0; i < r && p != a; i++)
      if (strcmp(p->dims[i], dims[i]) != 0) p = a;
    p->uses++, q->uses++;
    int ins[3] = {c, p->id, q->id};
    int id = gt_op(z->t, "mo.where", NULL, ins, 3, cur_dt(z), shape_of(z, r, dims));
    add_val(z, id, r, dims, p->exact && q->exact);
    break;
  }
  case 15: { /* argmax / argmin of an exact value, cast back to f32 */
    if (!a->exact || r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "{axis = %d}", ax);
    snprintf(dims[ax], DIM, "1");
    a->uses++;
    int i = gt_op1(z->t, rnd(z, 2) ? "mo.argmax" : "mo.argmin", attrs, a->id, "si64",
                   shape_of(z, r, dims));
    int f = gt_op1(z->t, "mo.cast", z->cur_int ? "{dtype = si32}" : "{dtype = f32}", i,
                   cur_dt(z), shape_of(z, r, dims));
    add_val(z, f, r, dims, true);
    break;
  }
  case 16: { /* pad one axis with a constant (reflect needs a long enough axis) */
    if (r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r), lo = (int)rnd(z, 3), hi = (int)rnd(z, 3);
    char attrs[160], s[2 * DIM + 16];
    size_t k = (size_t)snprintf(attrs, sizeof attrs, "{paddings = [");
    for (int i = 0; i < r; i++)
      k += (size_t)snprintf(attrs + k, sizeof attrs - k, "%s%d, %d", i ? ", " : "",
                            i == ax ? lo : 0, i == ax ? hi : 0);
    snprintf(attrs + k, sizeof attrs - k, "], value = %s}",
             rnd(z, 2) ? (z->cur_int ? "2.0" : "0.5") : "-1.0");
    snprintf(s, sizeof s, "(%s) + %d", dims[ax], lo + hi);
    if (strlen(s) >= DIM) break;
    dimcpy(dims[ax], s);
    op1(z, "pad", attrs, a, r, dims, a->exact);
    break;
  }
  case 17: { /* broadcast_to: a unit axis grows, or a leading axis appears */
    if (r == 3) {
      int ax = -1;
      for (int i = 0; i < r; i++)
        if (strcmp(dims[i], "1") == 0) ax = i;
      if (ax < 0) break;
      dimcpy(dims[ax], DIMS[2 + rnd(z, 3)]); /* no symbol the inputs do not bind */
      op1(z, "broadcast_to", NULL, a, r, dims, a->exact);
    } else {
      char nd[3][DIM];
      dimcpy(nd[0], DIMS[2 + rnd(z, 3)]);
      for (int i = 0; i < r; i++) dimcpy(nd[i + 1], dims[i]);
      op1(z, "broadcast_to", NULL, a, r + 1, nd, a->exact);
    }
    break;
  }
  case 18: { /* permute a rank-3 value */
    if (r != 3) break;
    static const int perms[5][3] = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const int *p = perms[rnd(z, 5)];
    char attrs[48], nd[3][DIM];
    snprintf(attrs, sizeof attrs, "{dims = [%d, %d, %d]}", p[0], p[1], p[2]);
    for (int i = 0; i < 3; i++) dimcpy(nd[i], dims[p[i]]);
    op1(z, "permute", attrs, a, 3, nd, a->exact);
    break;
  }
  case 19: { /* masked_scatter: a random bool mask broadcast to a, updates of a's shape */
    char md[3][DIM];
    int drop = r > 1 ? (int)rnd(z, (uint32_t)r) : 0;
    for (int i = 0; i < r - drop; i++) dimcpy(md[i], rnd(z, 3) == 0 ? "1" : dims[i + drop]);
    char ms[3 * DIM + 8];
    snprintf(ms, sizeof ms, "%s", shape_of(z, r - drop, md));
    int m = gt_in_gen(z->t, "bool", ms, (oracle_gen){0});
    fval *u = input_like(z, r, dims);
    a->uses++, u->uses++;
    int ins[3] = {a->id, m, u->id};
    int id = gt_op(z->t, "mo.masked_scatter", NULL, ins, 3, cur_dt(z), shape_of(z, r, dims));
    add_val(z, id, r, dims, a->exact && u->exact);
    break;
  }
  case 20: { /* nonzero of an exact value (its count set from data): the indices, the
              * values they pick (gather_nd) as outputs, and those values' sum, [1] */
    if (!a->exact || z->ncounts >= 4 || r == 0) { /* gather_nd needs data of rank >= 1 */
      op1(z, "abs", NULL, a, r, dims, a->exact);
      break;
    }
    char rows[2][DIM], cnt[1][DIM], one[1][DIM] = {"1"};
    snprintf(rows[0], DIM, "c%d", z->ncounts++);
    snprintf(rows[1], DIM, "%d", r);
    dimcpy(cnt[0], rows[0]);
    a->uses++;
    int idx = gt_op(z->t, "mo.nonzero", NULL, &a->id, 1, "si64", shape_of(z, 2, rows));
    int ins[2] = {a->id, idx};
    int vals = gt_op(z->t, "mo.gather_nd", NULL, ins, 2, cur_dt(z), shape_of(z, 1, cnt));
    gt_out(z->t, idx);
    gt_out(z->t, vals);
    int sum = gt_op1(z->t, "mo.sum", "{axis = 0}", vals, cur_dt(z), shape_of(z, 1, one));
    add_val(z, sum, 1, one, z->cur_int); /* a float sum's order may differ */
    break;
  }
  case 21: { /* tile one axis 2 or 3 times */
    if (r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r), k = 2 + (int)rnd(z, 2);
    char attrs[64], s[DIM + 16];
    size_t n = (size_t)snprintf(attrs, sizeof attrs, "{repeats = [");
    for (int i = 0; i < r; i++)
      n += (size_t)snprintf(attrs + n, sizeof attrs - n, "%s%d", i ? ", " : "", i == ax ? k : 1);
    snprintf(attrs + n, sizeof attrs - n, "]}");
    snprintf(s, sizeof s, "(%s) * %d", dims[ax], k);
    if (strlen(s) >= DIM) break;
    dimcpy(dims[ax], s);
    op1(z, "tile", attrs, a, r, dims, a->exact);
    break;
  }
  case 22: { /* band_part of the last two axes */
    if (r < 2) break;
    char attrs[96];
    snprintf(attrs, sizeof attrs, "{num_lower = %d, num_upper = %d, exclude = %s}",
             (int)rnd(z, 4) - 1, (int)rnd(z, 4) - 1, rnd(z, 2) ? "true" : "false");
    op1(z, "band_part", attrs, a, r, dims, a->exact);
    break;
  }
  case 23: { /* a 3x3 pool, stride 1, padding 1, of [1, d0, d1, d2] (NHWC): the same shape;
              * H and W static (an empty one is refused: shorter than the window) */
    if (r != 3 || strpbrk(dims[0], "nmc") || strpbrk(dims[1], "nmc")) break;
    char s4[3 * DIM + 16];
    snprintf(s4, sizeof s4, "1, %s", shape_of(z, 3, dims));
    bool avg = !z->cur_int && rnd(z, 2);
    a->uses++;
    int x4 = gt_op1(z->t, "mo.reshape", NULL, a->id, cur_dt(z), s4);
    int p = gt_op1(z->t, avg ? "mo.avg_pool2d" : "mo.max_pool2d",
                   avg ? "{kernel_size = [3, 3], padding = [1], count_boundary = true}"
                       : "{kernel_size = [3, 3], padding = [1]}",
                   x4, cur_dt(z), s4);
    int id = gt_op1(z->t, "mo.reshape", NULL, p, cur_dt(z), shape_of(z, 3, dims));
    add_val(z, id, 3, dims, a->exact && !avg);
    break;
  }
  case 24: { /* rounding of an exact value (exact), else atan */
    static const char *const rounding[] = {"floor", "ceil", "trunc", "round"};
    op1(z, a->exact ? rounding[rnd(z, 4)] : "atan", NULL, a, r, dims, a->exact);
    break;
  }
  case 25: { /* top_k / bottom_k, k = 1, of an exact value along a static last axis: the
              * values and the indices (cast back) */
    if (!a->exact || r == 0 || strpbrk(dims[r - 1], "nmc")) break;
    snprintf(dims[r - 1], DIM, "1");
    const char *sh = shape_of(z, r, dims);
    char shape[3 * DIM + 8];
    snprintf(shape, sizeof shape, "%s", sh);
    const char *dts[2] = {cur_dt(z), "si64"}, *shapes[2] = {shape, shape};
    a->uses++;
    int v = gt_opn(z->t, rnd(z, 2) ? "mo.top_k" : "mo.bottom_k", "{k = 1, axis = -1}", &a->id, 1,
                   2, dts, shapes);
    add_val(z, v, r, dims, true);
    int f = gt_op1(z->t, "mo.cast", z->cur_int ? "{dtype = si32}" : "{dtype = f32}", v + 1,
                   cur_dt(z), shape);
    add_val(z, f, r, dims, true);
    break;
  }
  case 26: { /* prod over one axis of tanh(a) (bounded: no overflow), kept as 1 */
    if (r == 0) break;
    fval *t = op1(z, "tanh", NULL, a, r, dims, false);
    int ax = (int)rnd(z, (uint32_t)r);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "{axis = %d}", ax);
    snprintf(dims[ax], DIM, "1");
    op1(z, "prod", attrs, t, r, dims, false);
    break;
  }
  case 27: { /* irfft along one axis to 1, 4, 5 or 8 values (a power of two or not) */
    static const char *const lens[] = {"1", "4", "5", "8"};
    static const char *const norms[] = {"backward", "ortho", "forward"};
    if (r == 0) break;
    int ax = (int)rnd(z, (uint32_t)r);
    const char *len = lens[rnd(z, 4)];
    char attrs[96];
    snprintf(attrs, sizeof attrs, "{n = %s, axis = %d, normalization = \"%s\"}", len,
             rnd(z, 2) ? ax : ax - r, norms[rnd(z, 3)]);
    snprintf(dims[ax], DIM, "%s", len);
    op1(z, "irfft", attrs, a, r, dims, false);
    break;
  }
  }
}

/* One graph from seed; 0 when JIT and oracle agree. */
static int run_seed(unsigned seed) {
  fuzz *z = calloc(1, sizeof *z);
  cr_assert(z);
  z->rng = 0x9E3779B97F4A7C15ull * (seed + 1);
  char name[32];
  snprintf(name, sizeof name, "fuzz%u", seed);
  z->t = gt_new(name, "n, m, c0, c1, c2, c3");
  int nops = 4 + (int)rnd(z, 11);
  new_input(z);
  while (z->nv < MAXV - 8 && nops-- > 0) step(z);
  int nout = 0;
  for (int i = 0; i < z->nv; i++)
    if (z->v[i].rank > 0 && (z->v[i].uses == 0 || rnd(z, 6) == 0)) gt_out(z->t, z->v[i].id), nout++;
  if (!nout) gt_out(z->t, z->v[z->nv - 1].id);
  char label[48];
  snprintf(label, sizeof label, "graph fuzz seed %u", seed);
  int ng = 0;
  const oracle_gen *gens = gt_gens(z->t, &ng);
  oracle_case c = {.label = label, .mlir = gt_finish(z->t), .bindings = "n=2,m=3;n=1,m=5;n=0,m=2",
                   .seed = seed, .rtol = 1e-3, .atol = 1e-3, .gens = gens, .ngens = ng,
                   .gen_default = gen_uniform(-2, 2), .wgen = gen_uniform(-1, 1)};
  if (getenv("KILN_GRAPH_FUZZ_PRINT")) fprintf(stderr, "// seed %u\n%s\n", seed, c.mlir);
  oracle_report *r = malloc(sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  if (rc != 0) cr_expect_fail("%s", r->msg);
  free(r);
  gt_free(z->t);
  free(z);
  return rc;
}

Test(graph_fuzz, random_graphs_agree_with_the_oracle, .timeout = 600) {
  const char *ns = getenv("KILN_GRAPH_FUZZ"), *ss = getenv("KILN_GRAPH_FUZZ_SEED");
  int n = ns ? atoi(ns) : 40;
  unsigned s0 = ss ? (unsigned)strtoul(ss, NULL, 10) : 1;
  int bad = 0;
  for (int i = 0; i < n; i++) bad += run_seed(s0 + (unsigned)i) != 0;
  cr_log_info("%d random graphs, %d disagree", n, bad);
}
