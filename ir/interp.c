/* interp.c - the reference interpreter (interp.h): solves symbolic dims from
 * the input shapes, checks the graph's run-time shape facts, then runs the
 * nodes one at a time with plain row-major loops.
 *
 * Assumes: a graph that passed ir_graph_verify (every value typed, operands
 * of the dtypes each op allows); a little-endian host (dense attributes and
 * tensors are little-endian).
 * Guarantees: no crash and no out-of-bounds access whatever the graph and
 * inputs: besides trusting the verifier, every op re-checks the run-time
 * shapes it indexes with and reports a mismatch as an error, and so do
 * data-dependent faults (gather index, integer mod by zero). On failure
 * everything it allocated is freed and the outputs are zeroed.
 *
 * Semantics the JIT must match (beyond seed 002 and ops.def):
 *  - integer add/sub/mul/negate/abs/sum wrap (two's complement); mod is
 *    Python's floor mod (result has the divisor's sign); x mod 0 is an error
 *    for integers, NaN for floats; INT_MIN mod -1 is 0.
 *  - float max/min (elementwise and reductions) propagate NaN and order
 *    -0 < +0 (LLVM's llvm.maximum / llvm.minimum); relu(x) = max(x, +0), so
 *    relu(NaN) = NaN and relu(-0) = +0.
 *  - argmax / argmin: first index of the extreme; a NaN counts as the
 *    extreme for both (the first NaN wins); an empty axis gives 0.
 *    Reducing max / min over an empty axis gives -inf / +inf (INT_MIN /
 *    INT_MAX of the dtype for integers); mean of an empty float axis is NaN.
 *  - integer mean: the wrapped sum divided by the count, truncated toward 0;
 *    an empty axis is an error.
 *  - f32 sums, matmuls, softmax and layer_norm are computed in double and
 *    rounded once; f32 elementwise math is computed in float with libm.
 *  - cast float -> int: truncate toward zero, saturate to the target range,
 *    NaN -> 0 (LLVM's fptosi.sat / fptoui.sat); int -> int: truncate or
 *    extend the two's-complement bits; -> bool: x != 0 (NaN is true);
 *    -> f16 / bf16: one rounding, to nearest with ties to even, from the
 *    exact source value (overflow -> inf; NaN keeps its sign and top payload
 *    bits and is made quiet).
 *  - a dense constant with one element fills a result of any size (splat). */
#include "interp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---- */

static int fail(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t msglen, const char *fmt, ...) {
  if (msg && msglen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static const char *dim_text(const ir_dim *d, char *buf, size_t cap) {
  ir_dim_print(d, buf, cap);
  return buf;
}

static const char *shape_text(const int64_t *shape, int rank, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

static const char *input_name(const ir_graph *g, int i) {
  if (g->input_names && g->input_names[i]) return g->input_names[i];
  return g->inputs[i]->name ? g->inputs[i]->name : "?";
}

/* ---- sizes ---- */

int64_t ir_tensor_numel(const ir_tensor *t) {
  if (!t || t->rank < 0 || t->rank > IR_MAX_RANK) return -1;
  bool zero = false;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0) return -1;
    if (t->shape[i] == 0) zero = true;
  }
  if (zero) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(n, t->shape[i], &n)) return -1;
  return n;
}

/* Product of shape[from..to). Only used on validated shapes (no overflow). */
static int64_t span(const ir_tensor *t, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++) n *= t->shape[i];
  return n;
}

/* ---- symbols and run-time checks ---- */

/* Does d need a symbol that is not bound yet? */
static bool needs_unbound(const ir_dim *d, int nsyms, const bool *bound) {
  for (int s = 0; s < nsyms; s++)
    if (!bound[s] && ir_dim_uses_sym(d, s)) return true;
  return false;
}

/* Check axis a of input i against its declared dim d (all symbols bound). */
static int check_axis(const ir_graph *g, int i, int a, const ir_dim *d, int64_t got,
                      const int64_t *syms, const int *from, char *msg, size_t msglen) {
  int64_t want;
  ir_dim_err err;
  char dt[128];
  err.msg[0] = '\0';
  if (!ir_dim_eval(d, syms, &want, &err))
    return fail(msg, msglen, "input %d (%s): axis %d (%s): %s", i, input_name(g, i), a,
                dim_text(d, dt, sizeof dt), err.msg);
  if (want == got) return 0;
  if (ir_dim_is_const(d, NULL))
    return fail(msg, msglen, "input %d (%s): axis %d expected %lld, got %lld", i,
                input_name(g, i), a, (long long)want, (long long)got);
  if (ir_dim_is_sym(d))
    return fail(msg, msglen, "input %d (%s): axis %d is %s = %lld from input %d, got %lld", i,
                input_name(g, i), a, d->name, (long long)want, from[d->sym], (long long)got);
  return fail(msg, msglen, "input %d (%s): axis %d expected %s = %lld, got %lld", i,
              input_name(g, i), a, dim_text(d, dt, sizeof dt), (long long)want, (long long)got);
}

/* "mo.add (line 3)", or "mo.add (%r)" for a graph built through the API. */
static const char *node_where(const ir_node *n, char *buf, size_t cap) {
  const ir_op_info *info = ir_op_get(n->op);
  const char *op = info ? info->name : "?";
  if (n->loc.line > 0)
    snprintf(buf, cap, "mo.%s (line %d)", op, n->loc.line);
  else
    snprintf(buf, cap, "mo.%s (%%%s)", op, n->nout > 0 ? n->out[0]->name : "?");
  return buf;
}

/* "batch = 4", or just "4" for a constant dim. */
static const char *dim_value_text(const ir_dim *d, int64_t v, char *buf, size_t cap) {
  char dt[128];
  if (ir_dim_is_const(d, NULL))
    snprintf(buf, cap, "%lld", (long long)v);
  else
    snprintf(buf, cap, "%s = %lld", dim_text(d, dt, sizeof dt), (long long)v);
  return buf;
}

static int run_checks(const ir_graph *g, const int64_t *syms, char *msg, size_t msglen) {
  for (int i = 0; i < g->nchecks; i++) {
    const ir_check *c = &g->checks[i];
    char where[160] = "", node[150], lt[200], rt[200];
    int64_t l, r;
    ir_dim_err err;
    err.msg[0] = '\0';
    const char *what = c->what ? c->what : "";
    if (c->node) {
      /* A `what` that names its op ("mo.reshape: ...") drops that prefix:
       * node_where names the op and its place. */
      char prefix[64];
      snprintf(prefix, sizeof prefix, "mo.%s: ", ir_op_get(c->node->op)->name);
      if (strncmp(what, prefix, strlen(prefix)) == 0) what += strlen(prefix);
      snprintf(where, sizeof where, "%s: ", node_where(c->node, node, sizeof node));
    }
    if (!ir_dim_eval(c->lhs, syms, &l, &err) || !ir_dim_eval(c->rhs, syms, &r, &err))
      return fail(msg, msglen, "%s%s: %s", where, what, err.msg);
    bool ok = c->kind == IR_CHECK_EQ ? l == r : l >= r;
    if (ok) continue;
    return fail(msg, msglen, "%s%s: %s but needs to %s %s", where, what,
                dim_value_text(c->lhs, l, lt, sizeof lt),
                c->kind == IR_CHECK_EQ ? "equal" : "be at least",
                dim_value_text(c->rhs, r, rt, sizeof rt));
  }
  return 0;
}

/* A value (or, failing that, a check) that mentions symbol s; NULL if none. */
static const char *symbol_user(const ir_graph *g, int s, bool *in_check) {
  *in_check = false;
  for (int v = 0; v < g->nvalues; v++) {
    const ir_type *t = &g->values[v]->type;
    for (int a = 0; a < t->rank; a++)
      if (ir_dim_uses_sym(t->dims[a], s)) return g->values[v]->name;
  }
  for (int i = 0; i < g->nchecks; i++) {
    const ir_check *c = &g->checks[i];
    if (ir_dim_uses_sym(c->lhs, s) || ir_dim_uses_sym(c->rhs, s)) {
      *in_check = true;
      return c->node && c->node->nout > 0 ? c->node->out[0]->name : "?";
    }
  }
  return NULL;
}

int ir_solve_symbols(const ir_graph *g, const ir_tensor *inputs, int ninputs, int64_t *sym_values,
                     char *msg, size_t msglen) {
  if (!g) return fail(msg, msglen, "no graph");
  if (ninputs != g->ninputs)
    return fail(msg, msglen, "expected %d inputs, got %d", g->ninputs, ninputs);
  if (ninputs > 0 && !inputs) return fail(msg, msglen, "inputs are NULL");
  if (g->nsyms > 0 && !sym_values) return fail(msg, msglen, "sym_values is NULL");
  int nsyms = g->nsyms, rc = -1;
  bool *bound = calloc((size_t)(nsyms ? nsyms : 1), sizeof *bound);
  int *from = calloc((size_t)(nsyms ? nsyms : 1), sizeof *from);
  if (!bound || !from) {
    rc = fail(msg, msglen, "out of memory");
    goto out;
  }
  for (int s = 0; s < nsyms; s++) sym_values[s] = 0;
  /* Pass 1: types, then bind each plain symbol at its first occurrence and
   * check every axis whose dim is computable now. */
  for (int i = 0; i < ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    const ir_tensor *x = &inputs[i];
    if (x->dtype != t->dtype) {
      fail(msg, msglen, "input %d (%s): expected dtype %s, got %s", i, input_name(g, i),
           ir_dtype_name(t->dtype), ir_dtype_name(x->dtype));
      goto out;
    }
    if (x->rank != t->rank) {
      fail(msg, msglen, "input %d (%s): expected rank %d, got %d", i, input_name(g, i), t->rank,
           x->rank);
      goto out;
    }
    for (int a = 0; a < x->rank; a++) {
      if (x->shape[a] < 0) {
        fail(msg, msglen, "input %d (%s): axis %d has negative size %lld", i, input_name(g, i), a,
             (long long)x->shape[a]);
        goto out;
      }
    }
    for (int a = 0; a < x->rank; a++) {
      const ir_dim *d = t->dims[a];
      if (ir_dim_is_sym(d) && d->sym >= 0 && d->sym < nsyms && !bound[d->sym]) {
        bound[d->sym] = true;
        from[d->sym] = i;
        sym_values[d->sym] = x->shape[a];
        continue;
      }
      if (needs_unbound(d, nsyms, bound)) continue; /* deferred to pass 2 */
      if (check_axis(g, i, a, d, x->shape[a], sym_values, from, msg, msglen)) goto out;
    }
  }
  /* Pass 2: every symbol a plain dim can bind is bound now; check the
   * deferred algebraic dims (re-checking the others is harmless). */
  for (int i = 0; i < ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    for (int a = 0; a < t->rank; a++) {
      const ir_dim *d = t->dims[a];
      if (needs_unbound(d, nsyms, bound)) {
        char dt[128];
        fail(msg, msglen, "input %d (%s): cannot solve symbolic dim '%s' from the input shapes", i,
             input_name(g, i), dim_text(d, dt, sizeof dt));
        goto out;
      }
      if (check_axis(g, i, a, d, inputs[i].shape[a], sym_values, from, msg, msglen)) goto out;
    }
  }
  for (int s = 0; s < nsyms; s++) {
    if (bound[s]) continue;
    bool in_check;
    const char *user = symbol_user(g, s, &in_check);
    if (!user) continue; /* declared but never used: its value does not matter */
    fail(msg, msglen, "symbolic dim '%s' is not determined by the input shapes (used by %s%%%s)",
         g->syms[s], in_check ? "a run-time check of " : "", user);
    goto out;
  }
  rc = run_checks(g, sym_values, msg, msglen);
out:
  free(bound);
  free(from);
  return rc;
}

int ir_eval_shape(const ir_type *t, const int64_t *sym_values, int64_t *shape, char *msg,
                  size_t msglen) {
  if (!t || t->rank < 0) return fail(msg, msglen, "type has no inferred shape");
  if (t->rank > IR_MAX_RANK)
    return fail(msg, msglen, "rank %d exceeds the maximum %d", t->rank, IR_MAX_RANK);
  for (int a = 0; a < t->rank; a++) {
    char dt[128];
    ir_dim_err err;
    err.msg[0] = '\0';
    if (!ir_dim_eval(t->dims[a], sym_values, &shape[a], &err))
      return fail(msg, msglen, "dim '%s': %s", dim_text(t->dims[a], dt, sizeof dt), err.msg);
    if (shape[a] < 0)
      return fail(msg, msglen, "dim '%s' evaluates to %lld, which is negative",
                  dim_text(t->dims[a], dt, sizeof dt), (long long)shape[a]);
  }
  return 0;
}

/* ---- f16 / bf16 ---- */

/* Round m * 2^e (m > 0) to a binary float format with `eb` exponent bits and
 * `mb` stored mantissa bits, to nearest, ties to even. Returns the bits
 * without the sign: overflow gives infinity, tiny values subnormals or 0. */
static uint32_t round_to_format(uint64_t m, int e, int eb, int mb) {
  int bias = (1 << (eb - 1)) - 1, emin = 1 - bias;
  int lead = 63 - __builtin_clzll(m) + e; /* exponent of the leading bit */
  int q = (lead < emin ? emin : lead) - mb; /* exponent of the last kept bit */
  int shift = q - e;
  uint64_t r;
  if (shift <= 0) {
    r = m << -shift; /* exact: at most mb + 1 bits */
  } else if (shift > 64) {
    r = 0; /* below half of the smallest step */
  } else {
    uint64_t rest, half;
    if (shift == 64) {
      r = 0;
      rest = m;
      half = 1ull << 63;
    } else {
      r = m >> shift;
      rest = m & ((1ull << shift) - 1);
      half = 1ull << (shift - 1);
    }
    if (rest > half || (rest == half && (r & 1))) r++;
  }
  if (r >> (mb + 1)) { /* rounding carried into a new leading bit */
    r >>= 1;
    q++;
  }
  if (r < (1ull << mb)) return (uint32_t)r; /* subnormal or zero */
  int biased = q + mb + bias;
  if (biased >= (1 << eb) - 1) return (uint32_t)((1u << eb) - 1) << mb; /* infinity */
  return ((uint32_t)biased << mb) | (uint32_t)(r - (1ull << mb));
}

static uint16_t double_to_small(double v, int eb, int mb) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  uint32_t sign = (uint32_t)(b >> 63) << (eb + mb);
  int exp = (int)((b >> 52) & 0x7ff);
  uint64_t frac = b & ((1ull << 52) - 1);
  uint32_t inf = ((1u << eb) - 1) << mb;
  if (exp == 0x7ff) {
    if (frac == 0) return (uint16_t)(sign | inf);
    return (uint16_t)(sign | inf | (1u << (mb - 1)) | (uint32_t)(frac >> (52 - mb)));
  }
  if (exp == 0 && frac == 0) return (uint16_t)sign;
  uint64_t m = exp ? (frac | (1ull << 52)) : frac;
  int e = (exp ? exp : 1) - 1075;
  return (uint16_t)(sign | round_to_format(m, e, eb, mb));
}

static uint16_t int_to_small(bool negative, uint64_t magnitude, int eb, int mb) {
  uint32_t sign = negative ? 1u << (eb + mb) : 0;
  if (magnitude == 0) return 0;
  return (uint16_t)(sign | round_to_format(magnitude, 0, eb, mb));
}

static double small_to_double(uint16_t h, int eb, int mb) {
  uint64_t sign = (uint64_t)(h >> (eb + mb)) & 1;
  int exp = (h >> mb) & ((1 << eb) - 1);
  uint32_t frac = h & ((1u << mb) - 1);
  int bias = (1 << (eb - 1)) - 1;
  double v;
  if (exp == (1 << eb) - 1) {
    /* infinity or NaN: keep the payload bits in the top of the mantissa */
    uint64_t b = (sign << 63) | (0x7ffull << 52) | ((uint64_t)frac << (52 - mb));
    memcpy(&v, &b, sizeof v);
    return v;
  }
  if (exp == 0)
    v = ldexp((double)frac, 1 - bias - mb);
  else
    v = ldexp((double)(frac | (1u << mb)), exp - bias - mb);
  return sign ? -v : v;
}

/* ---- element access (memcpy: caller buffers need not be aligned) ---- */

static char *elem(const ir_tensor *t, int64_t i) {
  return (char *)t->data + i * (int64_t)ir_dtype_size(t->dtype);
}

static double ld_f(const ir_tensor *t, int64_t i) {
  const char *p = elem(t, i);
  switch (t->dtype) {
  case IR_DT_F32: { float v; memcpy(&v, p, 4); return v; }
  case IR_DT_F64: { double v; memcpy(&v, p, 8); return v; }
  case IR_DT_F16: { uint16_t v; memcpy(&v, p, 2); return small_to_double(v, 5, 10); }
  case IR_DT_BF16: { uint16_t v; memcpy(&v, p, 2); return small_to_double(v, 8, 7); }
  default: return 0.0;
  }
}

static void st_f(const ir_tensor *t, int64_t i, double v) {
  char *p = elem(t, i);
  switch (t->dtype) {
  case IR_DT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case IR_DT_F64: memcpy(p, &v, 8); break;
  case IR_DT_F16: { uint16_t h = double_to_small(v, 5, 10); memcpy(p, &h, 2); break; }
  case IR_DT_BF16: { uint16_t h = double_to_small(v, 8, 7); memcpy(p, &h, 2); break; }
  default: break;
  }
}

/* Integers and bool, sign- or zero-extended to 64 bits (ui64 keeps its bits). */
static int64_t ld_i(const ir_tensor *t, int64_t i) {
  const char *p = elem(t, i);
  switch (t->dtype) {
  case IR_DT_BOOL: { uint8_t v; memcpy(&v, p, 1); return v != 0; }
  case IR_DT_SI8: { int8_t v; memcpy(&v, p, 1); return v; }
  case IR_DT_SI16: { int16_t v; memcpy(&v, p, 2); return v; }
  case IR_DT_SI32: { int32_t v; memcpy(&v, p, 4); return v; }
  case IR_DT_SI64: { int64_t v; memcpy(&v, p, 8); return v; }
  case IR_DT_UI8: { uint8_t v; memcpy(&v, p, 1); return v; }
  case IR_DT_UI16: { uint16_t v; memcpy(&v, p, 2); return v; }
  case IR_DT_UI32: { uint32_t v; memcpy(&v, p, 4); return v; }
  case IR_DT_UI64: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; }
  default: return 0;
  }
}

/* Store the low bits of v (integers wrap); bool stores v != 0. */
static void st_i(const ir_tensor *t, int64_t i, int64_t v) {
  char *p = elem(t, i);
  uint64_t u = (uint64_t)v;
  switch (ir_dtype_size(t->dtype)) {
  case 1: { uint8_t b = t->dtype == IR_DT_BOOL ? (v != 0) : (uint8_t)u; memcpy(p, &b, 1); break; }
  case 2: { uint16_t b = (uint16_t)u; memcpy(p, &b, 2); break; }
  case 4: { uint32_t b = (uint32_t)u; memcpy(p, &b, 4); break; }
  case 8: memcpy(p, &u, 8); break;
  default: break;
  }
}

/* v wrapped to the range of integer dtype dt (sign-extended from its width). */
static int64_t wrap_i(ir_dtype dt, uint64_t v) {
  int w = (int)ir_dtype_size(dt) * 8;
  if (w >= 64) return (int64_t)v;
  uint64_t mask = (1ull << w) - 1, sign = 1ull << (w - 1);
  return (int64_t)((v & mask) ^ sign) - (int64_t)sign;
}

static int64_t int_min(ir_dtype dt) {
  return dt == IR_DT_SI32 ? INT32_MIN : INT64_MIN;
}
static int64_t int_max(ir_dtype dt) {
  return dt == IR_DT_SI32 ? INT32_MAX : INT64_MAX;
}

static bool is_fc(ir_dtype dt) { return dt == IR_DT_F32 || dt == IR_DT_F64; }
static bool is_ic(ir_dtype dt) { return dt == IR_DT_SI32 || dt == IR_DT_SI64; }

/* ---- scalar semantics ---- */

enum { GELU_NONE, GELU_TANH, GELU_QUICK };

static float un_f32(ir_op op, int gelu, float x) {
  switch (op) {
  case IR_OP_ABS: return fabsf(x);
  case IR_OP_NEGATE: return -x;
  case IR_OP_EXP: return expf(x);
  case IR_OP_LOG: return logf(x);
  case IR_OP_LOG1P: return log1pf(x);
  case IR_OP_SQRT: return sqrtf(x);
  case IR_OP_RSQRT: return 1.0f / sqrtf(x);
  case IR_OP_TANH: return tanhf(x);
  case IR_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case IR_OP_RELU: return isnan(x) ? x : (x > 0.0f ? x : 0.0f);
  case IR_OP_SILU: return x * (1.0f / (1.0f + expf(-x)));
  case IR_OP_ERF: return erff(x);
  case IR_OP_SIN: return sinf(x);
  case IR_OP_COS: return cosf(x);
  case IR_OP_FLOOR: return floorf(x);
  case IR_OP_ROUND: return nearbyintf(x); /* default mode: half to even */
  case IR_OP_TRUNC: return truncf(x);
  case IR_OP_GELU:
    if (gelu == GELU_TANH)
      return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    if (gelu == GELU_QUICK) return x * (1.0f / (1.0f + expf(-1.702f * x)));
    return 0.5f * x * (1.0f + erff(x / 1.4142135623730951f));
  default: return NAN;
  }
}

static double un_f64(ir_op op, int gelu, double x) {
  switch (op) {
  case IR_OP_ABS: return fabs(x);
  case IR_OP_NEGATE: return -x;
  case IR_OP_EXP: return exp(x);
  case IR_OP_LOG: return log(x);
  case IR_OP_LOG1P: return log1p(x);
  case IR_OP_SQRT: return sqrt(x);
  case IR_OP_RSQRT: return 1.0 / sqrt(x);
  case IR_OP_TANH: return tanh(x);
  case IR_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case IR_OP_RELU: return isnan(x) ? x : (x > 0.0 ? x : 0.0);
  case IR_OP_SILU: return x * (1.0 / (1.0 + exp(-x)));
  case IR_OP_ERF: return erf(x);
  case IR_OP_SIN: return sin(x);
  case IR_OP_COS: return cos(x);
  case IR_OP_FLOOR: return floor(x);
  case IR_OP_ROUND: return nearbyint(x);
  case IR_OP_TRUNC: return trunc(x);
  case IR_OP_GELU:
    if (gelu == GELU_TANH)
      return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    if (gelu == GELU_QUICK) return x * (1.0 / (1.0 + exp(-1.702 * x)));
    return 0.5 * x * (1.0 + erf(x / 1.4142135623730951));
  default: return NAN;
  }
}

static int64_t un_int(ir_op op, int64_t x) {
  uint64_t u = (uint64_t)x;
  switch (op) {
  case IR_OP_ABS: return x < 0 ? (int64_t)(0 - u) : x; /* wraps on INT_MIN (store truncates) */
  case IR_OP_NEGATE: return (int64_t)(0 - u);
  case IR_OP_RELU: return x > 0 ? x : 0;
  default: return 0;
  }
}

/* max / min with NaN propagation and -0 < +0 (llvm.maximum / llvm.minimum). */
static double max_f(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}
static double min_f(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}

static float bin_f32(ir_op op, float a, float b) {
  switch (op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUB: return a - b;
  case IR_OP_MUL: return a * b;
  case IR_OP_DIV: return a / b;
  case IR_OP_POW: return powf(a, b);
  case IR_OP_MAX: return (float)max_f(a, b);
  case IR_OP_MIN: return (float)min_f(a, b);
  case IR_OP_MOD: {
    float r = fmodf(a, b);
    if (r == 0.0f) return copysignf(0.0f, b);
    if ((r < 0.0f) != (b < 0.0f)) r += b;
    return r;
  }
  default: return NAN;
  }
}

static double bin_f64(ir_op op, double a, double b) {
  switch (op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUB: return a - b;
  case IR_OP_MUL: return a * b;
  case IR_OP_DIV: return a / b;
  case IR_OP_POW: return pow(a, b);
  case IR_OP_MAX: return max_f(a, b);
  case IR_OP_MIN: return min_f(a, b);
  case IR_OP_MOD: {
    double r = fmod(a, b);
    if (r == 0.0) return copysign(0.0, b);
    if ((r < 0.0) != (b < 0.0)) r += b;
    return r;
  }
  default: return NAN;
  }
}

/* Integer binary op on sign-extended operands; the store wraps the result.
 * Returns false on mod by zero. */
static bool bin_int(ir_op op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case IR_OP_ADD: *r = (int64_t)(ua + ub); return true;
  case IR_OP_SUB: *r = (int64_t)(ua - ub); return true;
  case IR_OP_MUL: *r = (int64_t)(ua * ub); return true;
  case IR_OP_MAX: *r = a > b ? a : b; return true;
  case IR_OP_MIN: *r = a < b ? a : b; return true;
  case IR_OP_MOD: {
    if (b == 0) return false;
    if (b == -1) { *r = 0; return true; } /* avoids INT64_MIN % -1 */
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    *r = m;
    return true;
  }
  default: *r = 0; return true;
  }
}

static bool cmp_f(ir_op op, double a, double b) {
  switch (op) {
  case IR_OP_EQUAL: return a == b;
  case IR_OP_NOT_EQUAL: return a != b;
  case IR_OP_GREATER: return a > b;
  case IR_OP_GREATER_EQUAL: return a >= b;
  default: return false;
  }
}

static bool cmp_i(ir_op op, int64_t a, int64_t b) {
  switch (op) {
  case IR_OP_EQUAL: return a == b;
  case IR_OP_NOT_EQUAL: return a != b;
  case IR_OP_GREATER: return a > b;
  case IR_OP_GREATER_EQUAL: return a >= b;
  default: return false;
  }
}

/* Float -> integer bits: truncate, saturate, NaN -> 0 (fptosi.sat / fptoui.sat). */
static uint64_t float_to_int_bits(double v, ir_dtype to) {
  int w = (int)ir_dtype_size(to) * 8;
  if (isnan(v)) return 0;
  double t = trunc(v);
  if (ir_dtype_is_signed(to)) {
    int64_t lo = w == 64 ? INT64_MIN : -(int64_t)(1ull << (w - 1));
    int64_t hi = w == 64 ? INT64_MAX : (int64_t)((1ull << (w - 1)) - 1);
    if (t < ldexp(-1.0, w - 1)) return (uint64_t)lo;
    if (t >= ldexp(1.0, w - 1)) return (uint64_t)hi;
    return (uint64_t)(int64_t)t;
  }
  if (t <= 0.0) return 0;
  if (t >= ldexp(1.0, w)) return w == 64 ? UINT64_MAX : (1ull << w) - 1;
  return (uint64_t)t;
}

static void cast_elem(const ir_tensor *x, int64_t xi, const ir_tensor *y, int64_t yi) {
  ir_dtype from = x->dtype, to = y->dtype;
  bool ffloat = ir_dtype_is_float(from), fsigned = ir_dtype_is_signed(from);
  if (to == IR_DT_BOOL) {
    st_i(y, yi, ffloat ? ld_f(x, xi) != 0.0 : ld_i(x, xi) != 0);
  } else if (ir_dtype_is_float(to)) {
    if (ffloat) {
      st_f(y, yi, ld_f(x, xi)); /* f16/bf16/f32 -> double is exact: one rounding */
      return;
    }
    int64_t v = ld_i(x, xi);
    uint64_t u = (uint64_t)v;
    bool neg = fsigned && v < 0;
    uint64_t mag = neg ? 0 - u : u;
    char *p = elem(y, yi);
    switch (to) {
    case IR_DT_F32: { float f = fsigned ? (float)v : (float)u; memcpy(p, &f, 4); break; }
    case IR_DT_F64: { double d = fsigned ? (double)v : (double)u; memcpy(p, &d, 8); break; }
    case IR_DT_F16: { uint16_t h = int_to_small(neg, mag, 5, 10); memcpy(p, &h, 2); break; }
    case IR_DT_BF16: { uint16_t h = int_to_small(neg, mag, 8, 7); memcpy(p, &h, 2); break; }
    default: break;
    }
  } else if (ffloat) {
    st_i(y, yi, (int64_t)float_to_int_bits(ld_f(x, xi), to));
  } else {
    st_i(y, yi, ld_i(x, xi)); /* two's-complement truncation / extension */
  }
}

/* ---- the run ---- */

typedef struct run {
  const ir_graph *g;
  const int64_t *syms;
  ir_tensor *vals; /* by value id */
  bool *owned;     /* vals[i].data was malloc'd by the run */
  bool *ready;     /* vals[i] holds its data */
  ir_weight_fn weights;
  void *ud;
  char *msg;
  size_t msglen;
} run;

static int op_fail(run *r, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int op_fail(run *r, const ir_node *n, const char *fmt, ...) {
  char detail[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  const ir_op_info *info = ir_op_get(n->op);
  return fail(r->msg, r->msglen, "mo.%s (%%%s): %s", info ? info->name : "?",
              n->nout > 0 ? n->out[0]->name : "?", detail);
}

static const ir_tensor *IN(run *r, const ir_node *n, int k) { return &r->vals[n->in[k]->id]; }
static ir_tensor *OUT(run *r, const ir_node *n, int k) { return &r->vals[n->out[k]->id]; }

/* Normalize an axis attribute against rank; false when out of range. */
static bool norm_axis(int64_t axis, int rank, int *out) {
  if (axis < -(int64_t)rank || axis >= rank) return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

/* Strides (in elements) of `in` along the output's axes under numpy
 * broadcasting: trailing axes align; a size-1 axis repeats (stride 0).
 * False when the shapes do not broadcast. */
static bool bcast_strides(const ir_tensor *in, const ir_tensor *out, int64_t *st) {
  if (in->rank > out->rank) return false;
  int lead = out->rank - in->rank;
  int64_t s = 1;
  for (int a = out->rank - 1; a >= 0; a--) {
    if (a < lead) {
      st[a] = 0;
      continue;
    }
    int64_t d = in->shape[a - lead];
    if (d == 1)
      st[a] = 0;
    else if (d == out->shape[a])
      st[a] = s;
    else
      return false;
    s *= d;
  }
  return true;
}

/* Offset in a tensor with strides st (over out's axes) of out's element i. */
static int64_t bcast_offset(const ir_tensor *out, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int a = out->rank - 1; a >= 0; a--) {
    int64_t d = out->shape[a];
    off += (i % d) * st[a];
    i /= d;
  }
  return off;
}

static bool same_shape(const ir_tensor *a, const ir_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

static int dtype_fail(run *r, const ir_node *n, ir_dtype dt) {
  return op_fail(r, n, "dtype %s is not supported here", ir_dtype_name(dt));
}

static int run_elementwise(run *r, const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  ir_tensor *y = OUT(r, n, 0);
  const ir_tensor *x[3];
  int64_t st[3][IR_MAX_RANK];
  char s1[256], s2[256];
  if (n->nin < 1 || n->nin > 3) return op_fail(r, n, "unexpected operand count %d", n->nin);
  for (int k = 0; k < n->nin; k++) {
    x[k] = IN(r, n, k);
    if (!bcast_strides(x[k], y, st[k]))
      return op_fail(r, n, "operand %d has shape %s which does not broadcast to %s", k,
                     shape_text(x[k]->shape, x[k]->rank, s1, sizeof s1),
                     shape_text(y->shape, y->rank, s2, sizeof s2));
  }
  ir_dtype dt = x[0]->dtype;
  int gelu = GELU_NONE;
  if (n->op == IR_OP_GELU) {
    const char *ap = ir_node_attr_string(n, "approximate", "none");
    if (strcmp(ap, "tanh") == 0)
      gelu = GELU_TANH;
    else if (strcmp(ap, "quick") == 0)
      gelu = GELU_QUICK;
    else if (strcmp(ap, "none") != 0)
      return op_fail(r, n, "unknown approximate = \"%s\"", ap);
  }
  /* the dtypes each class computes on */
  switch (info->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_BINARY:
    if (!is_fc(dt) && !is_ic(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != dt || (n->nin == 2 && x[1]->dtype != dt)) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_BINARY_FLOAT:
    if (!is_fc(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != dt || (n->nin == 2 && x[1]->dtype != dt)) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_PRED:
    if (!is_fc(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_LOGICAL:
  case IR_CLS_BINARY_LOGICAL:
    for (int k = 0; k < n->nin; k++)
      if (x[k]->dtype != IR_DT_BOOL) return dtype_fail(r, n, x[k]->dtype);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_COMPARE:
    if (!ir_dtype_is_compute(dt) || x[1]->dtype != dt) return dtype_fail(r, n, x[1]->dtype);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_WHERE:
    if (dt != IR_DT_BOOL) return dtype_fail(r, n, dt);
    if (x[1]->dtype != y->dtype || x[2]->dtype != y->dtype) return dtype_fail(r, n, x[2]->dtype);
    break;
  case IR_CLS_CAST:
    if (!ir_dtype_is_castable(dt)) return dtype_fail(r, n, dt);
    if (!ir_dtype_is_castable(y->dtype)) return dtype_fail(r, n, y->dtype);
    break;
  default:
    return op_fail(r, n, "not an elementwise op");
  }
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) {
    int64_t o[3] = {0, 0, 0};
    for (int k = 0; k < n->nin; k++) o[k] = bcast_offset(y, st[k], i);
    switch (info->cls) {
    case IR_CLS_UNARY:
    case IR_CLS_UNARY_FLOAT:
      if (dt == IR_DT_F32)
        st_f(y, i, un_f32(n->op, gelu, (float)ld_f(x[0], o[0])));
      else if (dt == IR_DT_F64)
        st_f(y, i, un_f64(n->op, gelu, ld_f(x[0], o[0])));
      else
        st_i(y, i, un_int(n->op, ld_i(x[0], o[0])));
      break;
    case IR_CLS_UNARY_PRED: {
      double v = ld_f(x[0], o[0]);
      st_i(y, i, n->op == IR_OP_IS_NAN ? isnan(v) != 0 : isinf(v) != 0);
      break;
    }
    case IR_CLS_UNARY_LOGICAL:
      st_i(y, i, !ld_i(x[0], o[0]));
      break;
    case IR_CLS_BINARY:
    case IR_CLS_BINARY_FLOAT:
      if (dt == IR_DT_F32) {
        st_f(y, i, bin_f32(n->op, (float)ld_f(x[0], o[0]), (float)ld_f(x[1], o[1])));
      } else if (dt == IR_DT_F64) {
        st_f(y, i, bin_f64(n->op, ld_f(x[0], o[0]), ld_f(x[1], o[1])));
      } else {
        int64_t v;
        if (!bin_int(n->op, ld_i(x[0], o[0]), ld_i(x[1], o[1]), &v))
          return op_fail(r, n, "integer division by zero");
        st_i(y, i, v);
      }
      break;
    case IR_CLS_COMPARE:
      if (is_fc(dt))
        st_i(y, i, cmp_f(n->op, ld_f(x[0], o[0]), ld_f(x[1], o[1])));
      else
        st_i(y, i, cmp_i(n->op, ld_i(x[0], o[0]), ld_i(x[1], o[1])));
      break;
    case IR_CLS_BINARY_LOGICAL: {
      bool a = ld_i(x[0], o[0]) != 0, b = ld_i(x[1], o[1]) != 0;
      st_i(y, i, n->op == IR_OP_LOGICAL_AND ? (a && b) : n->op == IR_OP_LOGICAL_OR ? (a || b)
                                                                               : (a != b));
      break;
    }
    case IR_CLS_WHERE:
      if (ld_i(x[0], o[0]))
        memcpy(elem(y, i), elem(x[1], o[1]), es);
      else
        memcpy(elem(y, i), elem(x[2], o[2]), es);
      break;
    case IR_CLS_CAST:
      cast_elem(x[0], o[0], y, i);
      break;
    default:
      break;
    }
  }
  return 0;
}

static int run_matmul(run *r, const ir_node *n) {
  const ir_tensor *a = IN(r, n, 0), *b = IN(r, n, 1);
  ir_tensor *y = OUT(r, n, 0);
  int ra = a->rank, rb = b->rank, ry = y->rank;
  char s1[256], s2[256], s3[256];
  if (ra < 2 || rb < 2 || ry != (ra > rb ? ra : rb))
    return op_fail(r, n, "ranks %d x %d -> %d are not a matmul", ra, rb, ry);
  int64_t M = a->shape[ra - 2], K = a->shape[ra - 1], N = b->shape[rb - 1];
  if (b->shape[rb - 2] != K || y->shape[ry - 2] != M || y->shape[ry - 1] != N)
    return op_fail(r, n, "shapes %s x %s do not give %s", shape_text(a->shape, ra, s1, sizeof s1),
                   shape_text(b->shape, rb, s2, sizeof s2),
                   shape_text(y->shape, ry, s3, sizeof s3));
  if (a->dtype != y->dtype || b->dtype != y->dtype || !(is_fc(y->dtype) || is_ic(y->dtype)))
    return dtype_fail(r, n, y->dtype);
  /* batch dims: broadcast like elementwise, counting whole matrices */
  ir_tensor ab = {.rank = ra - 2}, bb = {.rank = rb - 2}, yb = {.rank = ry - 2};
  memcpy(ab.shape, a->shape, sizeof(int64_t) * (size_t)(ra - 2));
  memcpy(bb.shape, b->shape, sizeof(int64_t) * (size_t)(rb - 2));
  memcpy(yb.shape, y->shape, sizeof(int64_t) * (size_t)(ry - 2));
  int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
  if (!bcast_strides(&ab, &yb, sa) || !bcast_strides(&bb, &yb, sb))
    return op_fail(r, n, "batch dims of %s and %s do not broadcast",
                   shape_text(a->shape, ra, s1, sizeof s1),
                   shape_text(b->shape, rb, s2, sizeof s2));
  int64_t nbatch = span(&yb, 0, yb.rank);
  bool fl = is_fc(y->dtype);
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t ao = bcast_offset(&yb, sa, bi) * M * K, bo = bcast_offset(&yb, sb, bi) * K * N;
    int64_t yo = bi * M * N;
    for (int64_t i = 0; i < M; i++) {
      for (int64_t j = 0; j < N; j++) {
        if (fl) {
          double acc = 0.0;
          for (int64_t k = 0; k < K; k++)
            acc += ld_f(a, ao + i * K + k) * ld_f(b, bo + k * N + j);
          st_f(y, yo + i * N + j, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t k = 0; k < K; k++)
            acc += (uint64_t)ld_i(a, ao + i * K + k) * (uint64_t)ld_i(b, bo + k * N + j);
          st_i(y, yo + i * N + j, (int64_t)acc);
        }
      }
    }
  }
  return 0;
}

/* Split x's shape around `axis` into outer * len * inner; check that y is x
 * with that axis of size `ylen`. */
static int axis_split(run *r, const ir_node *n, const ir_tensor *x, const ir_tensor *y,
                      int64_t ylen, int *axis, int64_t *outer, int64_t *len, int64_t *inner) {
  int64_t attr = ir_node_attr_int(n, "axis", -1);
  if (!norm_axis(attr, x->rank, axis))
    return op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, x->rank);
  bool ok = y->rank == x->rank;
  for (int i = 0; ok && i < x->rank; i++)
    ok = y->shape[i] == (i == *axis && ylen >= 0 ? ylen : x->shape[i]);
  if (!ok) {
    char s1[256], s2[256];
    return op_fail(r, n, "result shape %s does not fit input shape %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2));
  }
  *outer = span(x, 0, *axis);
  *len = x->shape[*axis];
  *inner = span(x, *axis + 1, x->rank);
  return 0;
}

static int run_reduce(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t outer, len, inner;
  if (axis_split(r, n, x, y, 1, &axis, &outer, &len, &inner)) return -1;
  ir_dtype dt = x->dtype;
  bool arg = n->op == IR_OP_ARGMAX || n->op == IR_OP_ARGMIN;
  if (!is_fc(dt) && !is_ic(dt)) return dtype_fail(r, n, dt);
  if (arg ? !ir_dtype_is_int(y->dtype) : y->dtype != dt) return dtype_fail(r, n, y->dtype);
  if (n->op == IR_OP_REDUCE_MEAN && !is_fc(dt) && len == 0 && outer * inner > 0)
    return op_fail(r, n, "integer mean over an empty axis");
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t yi = o * inner + in, base = o * len * inner + in;
      if (arg) {
        bool mx = n->op == IR_OP_ARGMAX;
        int64_t best = 0;
        if (is_fc(dt)) {
          double bv = len > 0 ? ld_f(x, base) : 0.0;
          for (int64_t j = 1; j < len && !isnan(bv); j++) {
            double v = ld_f(x, base + j * inner);
            if (isnan(v) || (mx ? v > bv : v < bv)) {
              bv = v;
              best = j;
            }
          }
        } else {
          int64_t bv = len > 0 ? ld_i(x, base) : 0;
          for (int64_t j = 1; j < len; j++) {
            int64_t v = ld_i(x, base + j * inner);
            if (mx ? v > bv : v < bv) {
              bv = v;
              best = j;
            }
          }
        }
        st_i(y, yi, best);
      } else if (is_fc(dt)) {
        double acc;
        if (n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN) {
          acc = 0.0;
          for (int64_t j = 0; j < len; j++) acc += ld_f(x, base + j * inner);
          if (n->op == IR_OP_REDUCE_MEAN) acc /= (double)len; /* 0 / 0 = NaN */
        } else {
          bool mx = n->op == IR_OP_REDUCE_MAX;
          acc = mx ? -INFINITY : INFINITY;
          for (int64_t j = 0; j < len; j++) {
            double v = ld_f(x, base + j * inner);
            acc = mx ? max_f(acc, v) : min_f(acc, v);
          }
        }
        st_f(y, yi, acc);
      } else {
        if (n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN) {
          uint64_t acc = 0;
          for (int64_t j = 0; j < len; j++) acc += (uint64_t)ld_i(x, base + j * inner);
          int64_t s = wrap_i(dt, acc);
          st_i(y, yi, n->op == IR_OP_REDUCE_MEAN ? s / len : s);
        } else {
          bool mx = n->op == IR_OP_REDUCE_MAX;
          int64_t acc = mx ? int_min(dt) : int_max(dt);
          for (int64_t j = 0; j < len; j++) {
            int64_t v = ld_i(x, base + j * inner);
            if (mx ? v > acc : v < acc) acc = v;
          }
          st_i(y, yi, acc);
        }
      }
    }
  }
  return 0;
}

static int run_softmax(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t outer, len, inner;
  if (axis_split(r, n, x, y, -1, &axis, &outer, &len, &inner)) return -1;
  if (!is_fc(x->dtype) || y->dtype != x->dtype) return dtype_fail(r, n, x->dtype);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * len * inner + in;
      double m = -INFINITY, s = 0.0;
      for (int64_t j = 0; j < len; j++) m = max_f(m, ld_f(x, base + j * inner));
      for (int64_t j = 0; j < len; j++) s += exp(ld_f(x, base + j * inner) - m);
      for (int64_t j = 0; j < len; j++) {
        int64_t k = base + j * inner;
        double v = ld_f(x, k) - m;
        st_f(y, k, n->op == IR_OP_SOFTMAX ? exp(v) / s : v - log(s));
      }
    }
  }
  return 0;
}

static int run_layer_norm(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0), *gm = IN(r, n, 1), *bt = IN(r, n, 2);
  ir_tensor *y = OUT(r, n, 0);
  if (x->rank < 1 || !same_shape(x, y)) return op_fail(r, n, "result shape differs from input");
  int64_t len = x->shape[x->rank - 1];
  if (ir_tensor_numel(gm) != len || ir_tensor_numel(bt) != len)
    return op_fail(r, n, "gamma and beta need %lld elements, have %lld and %lld", (long long)len,
                   (long long)ir_tensor_numel(gm), (long long)ir_tensor_numel(bt));
  if (!is_fc(x->dtype) || y->dtype != x->dtype || gm->dtype != x->dtype || bt->dtype != x->dtype)
    return dtype_fail(r, n, x->dtype);
  double eps = ir_node_attr_float(n, "epsilon", 1e-5);
  int64_t rows = span(x, 0, x->rank - 1);
  for (int64_t row = 0; row < rows && len > 0; row++) {
    int64_t base = row * len;
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < len; j++) mean += ld_f(x, base + j);
    mean /= (double)len;
    for (int64_t j = 0; j < len; j++) {
      double d = ld_f(x, base + j) - mean;
      var += d * d;
    }
    var /= (double)len;
    double den = sqrt(var + eps);
    for (int64_t j = 0; j < len; j++)
      st_f(y, base + j, (ld_f(x, base + j) - mean) / den * ld_f(gm, j) + ld_f(bt, j));
  }
  return 0;
}

/* ---- data movement (any dtype, by element size) ---- */

static int run_copy(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int64_t cnt = ir_tensor_numel(x);
  if (cnt != ir_tensor_numel(y) || x->dtype != y->dtype)
    return op_fail(r, n, "%lld elements of %s cannot become %lld elements of %s", (long long)cnt,
                   ir_dtype_name(x->dtype), (long long)ir_tensor_numel(y),
                   ir_dtype_name(y->dtype));
  if (cnt > 0) memcpy(y->data, x->data, (size_t)cnt * ir_dtype_size(x->dtype));
  return 0;
}

/* y axis i = x axis perm[i]. */
static int permute_copy(run *r, const ir_node *n, const int *perm) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  bool ok = x->rank == y->rank && x->dtype == y->dtype;
  for (int i = 0; ok && i < y->rank; i++) ok = y->shape[i] == x->shape[perm[i]];
  if (!ok) {
    char s1[256], s2[256];
    return op_fail(r, n, "result shape %s is not a permutation of %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2));
  }
  int64_t xs[IR_MAX_RANK], st[IR_MAX_RANK], s = 1;
  for (int a = x->rank - 1; a >= 0; a--) {
    xs[a] = s;
    s *= x->shape[a];
  }
  for (int i = 0; i < y->rank; i++) st[i] = xs[perm[i]];
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) memcpy(elem(y, i), elem(x, bcast_offset(y, st, i)), es);
  return 0;
}

static int run_transpose(run *r, const ir_node *n) {
  int rank = IN(r, n, 0)->rank, a1, a2, perm[IR_MAX_RANK];
  int64_t x1 = ir_node_attr_int(n, "axis_1", INT64_MIN);
  int64_t x2 = ir_node_attr_int(n, "axis_2", INT64_MIN);
  if (!norm_axis(x1, rank, &a1) || !norm_axis(x2, rank, &a2))
    return op_fail(r, n, "axes %lld, %lld are out of range for rank %d", (long long)x1,
                   (long long)x2, rank);
  for (int i = 0; i < rank; i++) perm[i] = i;
  perm[a1] = a2;
  perm[a2] = a1;
  return permute_copy(r, n, perm);
}

static int run_permute(run *r, const ir_node *n) {
  int rank = IN(r, n, 0)->rank, perm[IR_MAX_RANK];
  bool seen[IR_MAX_RANK] = {false};
  const ir_attr *a = ir_node_attr(n, "dims");
  if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n != rank)
    return op_fail(r, n, "dims must list %d axes", rank);
  for (int i = 0; i < rank; i++) {
    if (!norm_axis(a->u.ints.v[i], rank, &perm[i]) || seen[perm[i]])
      return op_fail(r, n, "dims is not a permutation of %d axes", rank);
    seen[perm[i]] = true;
  }
  return permute_copy(r, n, perm);
}

static int run_broadcast_to(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int64_t st[IR_MAX_RANK];
  char s1[256], s2[256];
  if (!bcast_strides(x, y, st) || x->dtype != y->dtype)
    return op_fail(r, n, "shape %s does not broadcast to %s",
                   shape_text(x->shape, x->rank, s1, sizeof s1),
                   shape_text(y->shape, y->rank, s2, sizeof s2));
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) memcpy(elem(y, i), elem(x, bcast_offset(y, st, i)), es);
  return 0;
}

/* Shared by concat (pieces = inputs) and split (pieces = results): the
 * pieces laid side by side along `axis` make up `whole`. */
static int check_pieces(run *r, const ir_node *n, const ir_tensor *whole,
                        const ir_tensor *const *pieces, int np, int axis) {
  int64_t sum = 0;
  for (int k = 0; k < np; k++) {
    const ir_tensor *p = pieces[k];
    bool ok = p->rank == whole->rank && p->dtype == whole->dtype;
    for (int i = 0; ok && i < p->rank; i++) ok = i == axis || p->shape[i] == whole->shape[i];
    if (!ok) {
      char s1[256], s2[256];
      return op_fail(r, n, "piece %d of shape %s does not fit %s along axis %d", k,
                     shape_text(p->shape, p->rank, s1, sizeof s1),
                     shape_text(whole->shape, whole->rank, s2, sizeof s2), axis);
    }
    sum += p->shape[axis];
  }
  if (sum != whole->shape[axis])
    return op_fail(r, n, "pieces sum to %lld along axis %d, expected %lld", (long long)sum, axis,
                   (long long)whole->shape[axis]);
  return 0;
}

static int run_concat_split(run *r, const ir_node *n) {
  bool concat = n->op == IR_OP_CONCAT;
  const ir_tensor *whole = concat ? OUT(r, n, 0) : IN(r, n, 0);
  int np = concat ? n->nin : n->nout, axis;
  const ir_tensor **pieces = calloc((size_t)(np ? np : 1), sizeof *pieces);
  if (!pieces) return op_fail(r, n, "out of memory");
  for (int k = 0; k < np; k++) pieces[k] = concat ? IN(r, n, k) : OUT(r, n, k);
  int64_t attr = ir_node_attr_int(n, "axis", concat ? INT64_MIN : 0);
  int rc = -1;
  if (!norm_axis(attr, whole->rank, &axis)) {
    op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, whole->rank);
    goto out;
  }
  if (check_pieces(r, n, whole, pieces, np, axis)) goto out;
  int64_t outer = span(whole, 0, axis), inner = span(whole, axis + 1, whole->rank);
  size_t es = ir_dtype_size(whole->dtype);
  for (int64_t o = 0; o < outer; o++) {
    int64_t woff = o * whole->shape[axis] * inner;
    for (int k = 0; k < np; k++) {
      int64_t cnt = pieces[k]->shape[axis] * inner;
      char *w = elem(whole, woff), *p = elem(pieces[k], o * cnt);
      if (cnt > 0) {
        if (concat)
          memcpy(w, p, (size_t)cnt * es);
        else
          memcpy(p, w, (size_t)cnt * es);
      }
      woff += cnt;
    }
  }
  rc = 0;
out:
  free(pieces);
  return rc;
}

/* One axis of slice_tensor: numpy's rules (ops.def: INT64_MAX stop = to the
 * end, INT64_MIN start = from the beginning, whatever the step's sign). */
static int64_t slice_axis(int64_t d, int64_t start, int64_t stop, int64_t step, int64_t *first) {
  int64_t len;
  if (step > 0) {
    if (start == INT64_MIN) start = 0;
    else if (start < 0) start = start + d < 0 ? 0 : start + d;
    else if (start > d) start = d;
    if (stop == INT64_MAX) stop = d;
    else if (stop < 0) stop = stop + d < 0 ? 0 : stop + d;
    else if (stop > d) stop = d;
    len = start < stop ? (int64_t)((uint64_t)(stop - start - 1) / (uint64_t)step) + 1 : 0;
  } else {
    if (start == INT64_MIN) start = d - 1;
    else if (start < 0) start = start + d < 0 ? -1 : start + d;
    else if (start >= d) start = d - 1;
    if (stop == INT64_MAX) stop = -1;
    else if (stop < 0) stop = stop + d < 0 ? -1 : stop + d;
    else if (stop >= d) stop = d - 1;
    uint64_t ustep = 0 - (uint64_t)step;
    len = stop < start ? (int64_t)((uint64_t)(start - stop - 1) / ustep) + 1 : 0;
  }
  *first = start;
  return len;
}

static int run_slice(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  const ir_attr *lists[3] = {ir_node_attr(n, "start"), ir_node_attr(n, "stop"),
                             ir_node_attr(n, "step")};
  const int64_t dflt[3] = {INT64_MIN, INT64_MAX, 1};
  if (x->rank != y->rank || x->dtype != y->dtype)
    return op_fail(r, n, "result rank or dtype differs from the input");
  for (int k = 0; k < 3; k++)
    if (lists[k] && (lists[k]->kind != IR_ATTR_INTS || lists[k]->u.ints.n > x->rank))
      return op_fail(r, n, "start / stop / step must be lists of at most %d ints", x->rank);
  int64_t first[IR_MAX_RANK], step[IR_MAX_RANK], xs[IR_MAX_RANK], st[IR_MAX_RANK], s = 1;
  for (int a = x->rank - 1; a >= 0; a--) {
    xs[a] = s;
    s *= x->shape[a];
  }
  for (int a = 0; a < x->rank; a++) {
    int64_t v[3];
    for (int k = 0; k < 3; k++)
      v[k] = lists[k] && a < lists[k]->u.ints.n ? lists[k]->u.ints.v[a] : dflt[k];
    if (v[2] == 0) return op_fail(r, n, "step of axis %d is 0", a);
    step[a] = v[2];
    int64_t len = slice_axis(x->shape[a], v[0], v[1], v[2], &first[a]);
    if (len != y->shape[a])
      return op_fail(r, n, "axis %d: slice %lld:%lld:%lld of size %lld has %lld elements, the "
                     "result type says %lld", a, (long long)v[0], (long long)v[1],
                     (long long)v[2], (long long)x->shape[a], (long long)len,
                     (long long)y->shape[a]);
    /* with two or more elements |step| < dim, so the product fits */
    st[a] = y->shape[a] > 1 ? step[a] * xs[a] : 0;
  }
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  if (total == 0) return 0;
  int64_t base = 0; /* every first[a] is a valid index once no axis is empty */
  for (int a = 0; a < x->rank; a++) base += first[a] * xs[a];
  for (int64_t i = 0; i < total; i++)
    memcpy(elem(y, i), elem(x, base + bcast_offset(y, st, i)), es);
  return 0;
}

static int run_gather(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0), *idx = IN(r, n, 1);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t attr = ir_node_attr_int(n, "axis", -1);
  if (!norm_axis(attr, x->rank, &axis))
    return op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, x->rank);
  if (!is_ic(idx->dtype)) return dtype_fail(r, n, idx->dtype);
  /* y = x[:axis] + idx + x[axis+1:] */
  bool ok = y->rank == x->rank - 1 + idx->rank && y->dtype == x->dtype;
  for (int i = 0; ok && i < y->rank; i++) {
    int64_t want = i < axis ? x->shape[i]
                   : i < axis + idx->rank ? idx->shape[i - axis]
                                          : x->shape[i - idx->rank + 1];
    ok = y->shape[i] == want;
  }
  if (!ok) {
    char s1[256], s2[256], s3[256];
    return op_fail(r, n, "result shape %s does not fit input %s with indices %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2),
                   shape_text(idx->shape, idx->rank, s3, sizeof s3));
  }
  int64_t outer = span(x, 0, axis), d = x->shape[axis], inner = span(x, axis + 1, x->rank);
  int64_t ni = ir_tensor_numel(idx);
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < ni; j++) {
      int64_t iv = ld_i(idx, j);
      if (iv < -d || iv >= d)
        return op_fail(r, n, "index %lld out of range for axis %d of size %lld", (long long)iv,
                       axis, (long long)d);
      if (iv < 0) iv += d;
      if (inner > 0)
        memcpy(elem(y, (o * ni + j) * inner), elem(x, (o * d + iv) * inner), (size_t)inner * es);
    }
  }
  return 0;
}

static int run_constant(run *r, const ir_node *n) {
  ir_tensor *y = OUT(r, n, 0);
  const ir_attr *a = ir_node_attr(n, "value");
  if (!a || a->kind != IR_ATTR_DENSE) return op_fail(r, n, "missing dense attribute 'value'");
  const ir_dense *v = &a->u.dense;
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  if (v->dtype != y->dtype)
    return op_fail(r, n, "value has dtype %s, the result %s", ir_dtype_name(v->dtype),
                   ir_dtype_name(y->dtype));
  if (v->numel == total) {
    if (total > 0) memcpy(y->data, v->data, (size_t)total * es);
  } else if (v->numel == 1) {
    for (int64_t i = 0; i < total; i++) memcpy(elem(y, i), v->data, es);
  } else {
    return op_fail(r, n, "value has %lld elements, the result type needs %lld",
                   (long long)v->numel, (long long)total);
  }
  return 0;
}

/* constant.external: the result aliases the caller's weight (read only). */
static int run_external(run *r, const ir_node *n) {
  ir_tensor *y = OUT(r, n, 0);
  const char *name = ir_node_attr_string(n, "name", NULL);
  char s1[256], s2[256];
  if (!name) return op_fail(r, n, "missing attribute 'name'");
  const ir_tensor *w = r->weights ? r->weights(r->ud, name) : NULL;
  if (!w) return fail(r->msg, r->msglen, "weight '%s' is not bound", name);
  if (w->dtype != y->dtype)
    return fail(r->msg, r->msglen, "weight '%s': expected dtype %s, got %s", name,
                ir_dtype_name(y->dtype), ir_dtype_name(w->dtype));
  if (w->rank < 0 || w->rank > IR_MAX_RANK)
    return fail(r->msg, r->msglen, "weight '%s': expected shape %s, got rank %d", name,
                shape_text(y->shape, y->rank, s1, sizeof s1), w->rank);
  if (!same_shape(w, y))
    return fail(r->msg, r->msglen, "weight '%s': expected shape %s, got %s", name,
                shape_text(y->shape, y->rank, s1, sizeof s1),
                shape_text(w->shape, w->rank, s2, sizeof s2));
  if (!w->data && ir_tensor_numel(w) > 0)
    return fail(r->msg, r->msglen, "weight '%s' has no data", name);
  y->data = w->data;
  return 0;
}

static int run_node(run *r, const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  if (!info) return fail(r->msg, r->msglen, "node %d has an unknown op", n->id);
  for (int k = 0; k < n->nin; k++)
    if (!r->ready[n->in[k]->id])
      return op_fail(r, n, "operand %d (%%%s) is used before it is computed", k, n->in[k]->name);
  for (int k = 0; k < n->nout; k++) {
    const ir_value *v = n->out[k];
    ir_tensor *t = &r->vals[v->id];
    char m[400];
    if (ir_eval_shape(&v->type, r->syms, t->shape, m, sizeof m))
      return op_fail(r, n, "result %d (%%%s): %s", k, v->name, m);
    t->dtype = v->type.dtype;
    t->rank = v->type.rank;
    if (n->op == IR_OP_CONSTANT_EXTERNAL) continue;
    int64_t cnt = ir_tensor_numel(t);
    size_t es = ir_dtype_size(t->dtype);
    if (es == 0) return op_fail(r, n, "result %d has unknown dtype", k);
    if (cnt < 0 || (uint64_t)cnt > SIZE_MAX / es)
      return op_fail(r, n, "result %d (%%%s) is too large", k, v->name);
    size_t bytes = (size_t)cnt * es;
    t->data = malloc(bytes ? bytes : 1);
    if (!t->data) return op_fail(r, n, "out of memory for %zu bytes", bytes);
    r->owned[v->id] = true;
  }
  int rc;
  switch (info->cls) {
  case IR_CLS_CONSTANT: rc = run_constant(r, n); break;
  case IR_CLS_CONSTANT_EXTERNAL: rc = run_external(r, n); break;
  case IR_CLS_MATMUL: rc = run_matmul(r, n); break;
  case IR_CLS_REDUCE:
  case IR_CLS_REDUCE_ARG: rc = run_reduce(r, n); break;
  case IR_CLS_SOFTMAX: rc = run_softmax(r, n); break;
  case IR_CLS_LAYER_NORM: rc = run_layer_norm(r, n); break;
  case IR_CLS_RESHAPE:
  case IR_CLS_SQUEEZE:
  case IR_CLS_UNSQUEEZE: rc = run_copy(r, n); break;
  case IR_CLS_TRANSPOSE: rc = run_transpose(r, n); break;
  case IR_CLS_PERMUTE: rc = run_permute(r, n); break;
  case IR_CLS_BROADCAST_TO: rc = run_broadcast_to(r, n); break;
  case IR_CLS_CONCAT:
  case IR_CLS_SPLIT: rc = run_concat_split(r, n); break;
  case IR_CLS_SLICE: rc = run_slice(r, n); break;
  case IR_CLS_GATHER: rc = run_gather(r, n); break;
  default: rc = run_elementwise(r, n); break;
  }
  if (rc) return rc;
  for (int k = 0; k < n->nout; k++) r->ready[n->out[k]->id] = true;
  return 0;
}

int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_weight_fn weights, void *ud,
                  ir_tensor *outputs, char *msg, size_t msglen) {
  if (!g) return fail(msg, msglen, "no graph");
  if (g->noutputs > 0 && !outputs) return fail(msg, msglen, "outputs is NULL");
  for (int i = 0; i < g->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  run r = {.g = g, .weights = weights, .ud = ud, .msg = msg, .msglen = msglen};
  int64_t *syms = calloc((size_t)(g->nsyms ? g->nsyms : 1), sizeof *syms);
  size_t nv = (size_t)(g->nvalues ? g->nvalues : 1);
  r.vals = calloc(nv, sizeof *r.vals);
  r.owned = calloc(nv, sizeof *r.owned);
  r.ready = calloc(nv, sizeof *r.ready);
  r.syms = syms;
  int rc = -1, nout_done = 0;
  if (!syms || !r.vals || !r.owned || !r.ready) {
    fail(msg, msglen, "out of memory");
    goto out;
  }
  if (ir_solve_symbols(g, inputs, g->ninputs, syms, msg, msglen)) goto out;
  for (int i = 0; i < g->ninputs; i++) {
    const ir_value *v = g->inputs[i];
    r.vals[v->id] = inputs[i];
    if (!inputs[i].data && ir_tensor_numel(&inputs[i]) != 0) {
      fail(msg, msglen, "input %d (%s): data is NULL", i, input_name(g, i));
      goto out;
    }
    r.ready[v->id] = true;
  }
  for (int i = 0; i < g->nnodes; i++)
    if (run_node(&r, g->nodes[i])) goto out;
  /* Hand over results; a value that is not ours to give (an input, a
   * weight) or that was already given (output twice) is copied. */
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    const ir_tensor *t = &r.vals[v->id];
    if (!r.ready[v->id]) {
      fail(msg, msglen, "output %d (%%%s) is never computed", i, v->name);
      goto out;
    }
    if (r.owned[v->id]) {
      outputs[i] = *t;
      r.owned[v->id] = false;
    } else {
      size_t bytes = (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
      outputs[i] = *t;
      outputs[i].data = malloc(bytes ? bytes : 1);
      if (!outputs[i].data) {
        fail(msg, msglen, "out of memory");
        goto out;
      }
      if (bytes) memcpy(outputs[i].data, t->data, bytes);
    }
    nout_done = i + 1;
  }
  rc = 0;
out:
  if (rc) {
    for (int i = 0; i < nout_done; i++) free(outputs[i].data);
    for (int i = 0; i < g->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  }
  if (r.vals && r.owned)
    for (size_t i = 0; i < nv; i++)
      if (r.owned[i]) free(r.vals[i].data);
  free(r.vals);
  free(r.owned);
  free(r.ready);
  free(syms);
  return rc;
}
