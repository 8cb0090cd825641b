/* oracle.c - the JIT-vs-interpreter runner of oracle.h.
 *
 * Assumes: kiln_dtype and ir_dtype share their values (dtype.h says so);
 * bool is one byte 0 / 1 on both sides.
 * Guarantees: no abort, no leak (every path frees what it made, also on a
 * failure of either side); the same seed and binding give the same inputs.
 *
 * Tolerances (oracle.h) and why:
 *  - TOL_EXACT for ops that are one correctly rounded IEEE operation or no
 *    arithmetic at all (movement, compare, abs, floor...): any difference is
 *    a bug.
 *  - TOL_F32_ARITH 2e-6 (~16 ulp), TOL_F64_ARITH 1e-12: one or two roundings
 *    per element, but the JIT may legitimately contract a*b+c into an FMA or
 *    evaluate a formula (sigmoid, silu, mod) in another order.
 *  - TOL_F32_TRANS 1e-5, TOL_F64_TRANS 1e-12: libm is within 1-4 ulp; the JIT
 *    may use LLVM intrinsics or another libm entry point (expf vs exp
 *    rounded). 1e-5 in f32 is ~80 ulp: loose enough for two valid
 *    implementations, far too tight for a wrong formula.
 *  - sums, dot products and normalizations get an atol that grows with the
 *    length of the reduced axis (set by each test, with its reason).
 *  - f16 / bf16 outputs are held to the same rtol / atol (a cast alone
 *    passes 0: it rounds exactly once); test_ops_half.c says why its own
 *    tolerances are two ulps of the half dtype. */
#include "oracle.h"

#include <criterion/criterion.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "under_test.h"

/* ---- generators ---- */

oracle_gen gen_uniform(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_UNIFORM, lo, hi, 0};
  return g;
}
oracle_gen gen_nonzero(double lo, double hi, double min_abs) {
  oracle_gen g = {ORACLE_GEN_UNIFORM, lo, hi, min_abs};
  return g;
}
oracle_gen gen_quant(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_QUANT, lo, hi, 0};
  return g;
}
oracle_gen gen_halves(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_HALVES, lo, hi, 0};
  return g;
}
oracle_gen gen_special(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_SPECIAL, lo, hi, 0};
  return g;
}
oracle_gen gen_naninf(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_NANINF, lo, hi, 0};
  return g;
}
oracle_gen gen_const(double v) {
  oracle_gen g = {ORACLE_GEN_CONST, v, v, 0};
  return g;
}
oracle_gen gen_iota(double start) {
  oracle_gen g = {ORACLE_GEN_IOTA, start, start, 0};
  return g;
}

oracle_gen gen_integers(double lo, double hi) {
  oracle_gen g = {ORACLE_GEN_INTEGERS, lo, hi, 0};
  return g;
}

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static int64_t clamp_to_i64(double v) {
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  return (int64_t)v;
}

static void int_range(ir_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case IR_DT_SI8: *lo = INT8_MIN; *hi = INT8_MAX; break;
  case IR_DT_SI16: *lo = INT16_MIN; *hi = INT16_MAX; break;
  case IR_DT_SI32: *lo = INT32_MIN; *hi = INT32_MAX; break;
  case IR_DT_UI8: *lo = 0; *hi = UINT8_MAX; break;
  case IR_DT_UI16: *lo = 0; *hi = UINT16_MAX; break;
  case IR_DT_UI32: *lo = 0; *hi = UINT32_MAX; break;
  case IR_DT_UI64: *lo = 0; *hi = INT64_MAX; break; /* generated values stay below 2^63 */
  default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

static double gen_float(const oracle_gen *g, rng *r, int64_t i, bool f64) {
  double lo = g->lo, hi = g->hi;
  if (g->kind == ORACLE_GEN_DEFAULT) {
    lo = -3;
    hi = 3;
  }
  for (int tries = 0;; tries++) {
    double v;
    switch (g->kind) {
    case ORACLE_GEN_CONST: return lo;
    case ORACLE_GEN_IOTA: return lo + (double)i;
    case ORACLE_GEN_QUANT:
      v = floor((lo + rng_unit(r) * (hi - lo)) * 8.0 + 0.5) / 8.0;
      if (v < lo) v += 0.125;
      if (v > hi) v -= 0.125;
      break;
    case ORACLE_GEN_INTEGERS: {
      int64_t klo = (int64_t)ceil(lo), khi = (int64_t)floor(hi);
      v = (double)(klo + (int64_t)(rng_next(r) % (uint64_t)(khi - klo + 1)));
      break;
    }
    case ORACLE_GEN_HALVES: {
      int64_t klo = (int64_t)ceil(2 * lo), khi = (int64_t)floor(2 * hi);
      int64_t k = klo + (int64_t)(rng_next(r) % (uint64_t)(khi - klo + 1));
      v = (double)k / 2.0;
      break;
    }
    case ORACLE_GEN_NANINF:
      if ((rng_next(r) & 7) == 0) {
        static const double s[] = {NAN, INFINITY, -INFINITY};
        return s[rng_next(r) % 3];
      }
      v = lo + rng_unit(r) * (hi - lo);
      break;
    case ORACLE_GEN_SPECIAL:
      if (rng_next(r) & 1) {
        static const double s32[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30,
                                     1e-40, -1e-40, FLT_MAX, -FLT_MAX, 1.0, -1.0, 0.5,
                                     2.5, -2.5};
        static const double s64[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e300, -1e300,
                                     1e-310, -1e-310, DBL_MAX, -DBL_MAX, 1.0, -1.0, 0.5,
                                     2.5, -2.5};
        size_t n = sizeof s32 / sizeof s32[0];
        return (f64 ? s64 : s32)[rng_next(r) % n];
      }
      v = lo + rng_unit(r) * (hi - lo);
      break;
    default: v = lo + rng_unit(r) * (hi - lo); break;
    }
    if (g->min_abs <= 0 || fabs(v) >= g->min_abs || tries > 1000) return v;
  }
}

static int64_t gen_int(const oracle_gen *g, rng *r, int64_t i, ir_dtype dt) {
  int64_t tlo, thi;
  int_range(dt, &tlo, &thi);
  int64_t lo = -20, hi = 20;
  if (g->kind != ORACLE_GEN_DEFAULT) {
    lo = clamp_to_i64(ceil(g->lo));
    hi = clamp_to_i64(floor(g->hi));
  }
  if (lo < tlo) lo = tlo;
  if (hi > thi) hi = thi;
  if (hi < lo) hi = lo;
  if (g->kind == ORACLE_GEN_CONST) return lo;
  if (g->kind == ORACLE_GEN_IOTA) {
    int64_t v = lo + i;
    return v > thi ? thi : v;
  }
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* 0 means the whole 64-bit range */
  for (int tries = 0;; tries++) {
    uint64_t u = rng_next(r);
    int64_t v = (int64_t)((uint64_t)lo + (span ? u % span : u));
    double a = v < 0 ? -(double)v : (double)v;
    if (g->min_abs <= 0 || a >= g->min_abs || tries > 1000) return v;
  }
}

static uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xff);
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

static double f16_bits_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp((double)man, -24);
  else if (exp == 0x1f)
    v = man ? NAN : INFINITY;
  else
    v = ldexp((double)(man | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

static double bf16_bits_to_double(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void fill(void *data, ir_dtype dt, int64_t n, const oracle_gen *g, rng *r) {
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case IR_DT_BOOL: {
      uint8_t b;
      if (g->kind == ORACLE_GEN_CONST) b = g->lo != 0;
      else if (g->kind == ORACLE_GEN_IOTA) b = (uint8_t)(i & 1);
      else b = (uint8_t)(rng_next(r) >> 63);
      ((uint8_t *)data)[i] = b;
      break;
    }
    case IR_DT_F32: ((float *)data)[i] = (float)gen_float(g, r, i, false); break;
    case IR_DT_F64: ((double *)data)[i] = gen_float(g, r, i, true); break;
    case IR_DT_F16: ((uint16_t *)data)[i] = f32_to_f16_bits((float)gen_float(g, r, i, false)); break;
    case IR_DT_BF16:
      ((uint16_t *)data)[i] = f32_to_bf16_bits((float)gen_float(g, r, i, false));
      break;
    case IR_DT_SI8: ((int8_t *)data)[i] = (int8_t)gen_int(g, r, i, dt); break;
    case IR_DT_SI16: ((int16_t *)data)[i] = (int16_t)gen_int(g, r, i, dt); break;
    case IR_DT_SI32: ((int32_t *)data)[i] = (int32_t)gen_int(g, r, i, dt); break;
    case IR_DT_SI64: ((int64_t *)data)[i] = gen_int(g, r, i, dt); break;
    case IR_DT_UI8: ((uint8_t *)data)[i] = (uint8_t)gen_int(g, r, i, dt); break;
    case IR_DT_UI16: ((uint16_t *)data)[i] = (uint16_t)gen_int(g, r, i, dt); break;
    case IR_DT_UI32: ((uint32_t *)data)[i] = (uint32_t)gen_int(g, r, i, dt); break;
    case IR_DT_UI64: ((uint64_t *)data)[i] = (uint64_t)gen_int(g, r, i, dt); break;
    default: ((uint8_t *)data)[i] = (uint8_t)rng_next(r); break; /* float8 kinds: any byte */
    }
  }
}

void oracle_fill(void *data, kiln_dtype dt, int64_t n, const oracle_gen *g, uint64_t seed) {
  rng r = {seed};
  fill(data, (ir_dtype)dt, n, g, &r);
}

/* ---- messages ---- */

static void addf(oracle_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(oracle_report *r, const char *fmt, ...) {
  size_t len = strlen(r->msg);
  if (len + 1 >= sizeof r->msg) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg + len, sizeof r->msg - len, fmt, ap);
  va_end(ap);
}

static void add_text(oracle_report *r, const char *mlir) {
  addf(r, "\n--- graph ---\n%.8000s%s", mlir, strlen(mlir) > 8000 ? "\n[...]" : "");
}

static void fmt_shape(char *buf, size_t cap, int rank, const int64_t *shape) {
  size_t len = 0;
  buf[0] = 0;
  len += (size_t)snprintf(buf + len, cap - len, "[");
  for (int i = 0; i < rank && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

static void fmt_index(char *buf, size_t cap, int rank, const int64_t *shape, int64_t flat) {
  int64_t idx[IR_MAX_RANK];
  for (int i = rank - 1; i >= 0; i--) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  fmt_shape(buf, cap, rank, idx);
}

static double elem_double(ir_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case IR_DT_F32: return ((const float *)p)[i];
  case IR_DT_F64: return ((const double *)p)[i];
  case IR_DT_F16: return f16_bits_to_double(((const uint16_t *)p)[i]);
  case IR_DT_BF16: return bf16_bits_to_double(((const uint16_t *)p)[i]);
  default: return 0;
  }
}

static void fmt_elem(char *buf, size_t cap, ir_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case IR_DT_F32: snprintf(buf, cap, "%.9g", ((const float *)p)[i]); break;
  case IR_DT_F64: snprintf(buf, cap, "%.17g", ((const double *)p)[i]); break;
  case IR_DT_F16:
  case IR_DT_BF16:
    snprintf(buf, cap, "%.6g (0x%04x)", elem_double(dt, p, i), ((const uint16_t *)p)[i]);
    break;
  case IR_DT_BOOL: snprintf(buf, cap, "%u (byte)", ((const uint8_t *)p)[i]); break;
  case IR_DT_SI8: snprintf(buf, cap, "%d", ((const int8_t *)p)[i]); break;
  case IR_DT_SI16: snprintf(buf, cap, "%d", ((const int16_t *)p)[i]); break;
  case IR_DT_SI32: snprintf(buf, cap, "%" PRId32, ((const int32_t *)p)[i]); break;
  case IR_DT_SI64: snprintf(buf, cap, "%" PRId64, ((const int64_t *)p)[i]); break;
  case IR_DT_UI8: snprintf(buf, cap, "%u", ((const uint8_t *)p)[i]); break;
  case IR_DT_UI16: snprintf(buf, cap, "%u", ((const uint16_t *)p)[i]); break;
  case IR_DT_UI32: snprintf(buf, cap, "%" PRIu32, ((const uint32_t *)p)[i]); break;
  case IR_DT_UI64: snprintf(buf, cap, "%" PRIu64, ((const uint64_t *)p)[i]); break;
  default: snprintf(buf, cap, "0x%02x", ((const uint8_t *)p)[i]); break;
  }
}

/* ---- comparison ---- */

static bool float_close(double a, double b, double rtol, double atol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  /* exact mode: the sign of zero counts too (negate(0) = -0, relu(-0) = +0) */
  if (rtol == 0 && atol == 0) return a == b && signbit(a) == signbit(b);
  return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Compare the JIT's output (dtype jdt, shape jshape, data jd) to the oracle's.
 * Returns 0 or -1 with the report filled. */
static int compare_output(oracle_report *r, const char *where, int oi, const ir_value *ov,
                          kiln_dtype jdt, int jrank, const int64_t *jshape, const void *jd,
                          const ir_tensor *o, double rtol, double atol) {
  char s1[256], s2[256];
  if ((int)jdt != (int)o->dtype) {
    addf(r, "%s: output %d (%%%s): dtype jit %s, oracle %s", where, oi, ov->name,
         kiln_dtype_name(jdt), ir_dtype_name(o->dtype));
    return -1;
  }
  if (jrank != o->rank ||
      (o->rank > 0 && memcmp(jshape, o->shape, sizeof(int64_t) * (size_t)o->rank) != 0)) {
    fmt_shape(s1, sizeof s1, jrank, jshape);
    fmt_shape(s2, sizeof s2, o->rank, o->shape);
    addf(r, "%s: output %d (%%%s): shape jit %s, oracle %s", where, oi, ov->name, s1, s2);
    return -1;
  }
  char what[700];
  snprintf(what, sizeof what, "%s: output %d (%%%s", where, oi, ov->name);
  return oracle_compare(r, what, (kiln_dtype)o->dtype, o->rank, o->shape, jd, o->data, rtol, atol);
}

int oracle_compare(oracle_report *r, const char *what, kiln_dtype kdt, int rank,
                   const int64_t *shape, const void *jd, const void *od, double rtol,
                   double atol) {
  ir_dtype dt = (ir_dtype)kdt;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  size_t es = ir_dtype_size(dt);
  bool is_float = dt == IR_DT_F32 || dt == IR_DT_F64 || dt == IR_DT_F16 || dt == IR_DT_BF16;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; i++) {
    bool same;
    if (is_float)
      same = float_close(elem_double(dt, jd, i), elem_double(dt, od, i), rtol, atol);
    else
      same = memcmp((const char *)jd + (size_t)i * es, (const char *)od + (size_t)i * es, es) == 0;
    if (!same) {
      if (first < 0) first = i;
      bad++;
    }
  }
  if (bad == 0) return 0;
  char ej[64], eo[64], idx[256], s1[256];
  fmt_elem(ej, sizeof ej, dt, jd, first);
  fmt_elem(eo, sizeof eo, dt, od, first);
  fmt_shape(s1, sizeof s1, rank, shape);
  fmt_index(idx, sizeof idx, rank, shape, first);
  addf(r,
       "%s, %s %s): %" PRId64 " of %" PRId64 " elements differ; first at flat %" PRId64
       " index %s: jit %s, oracle %s",
       what, ir_dtype_name(dt), s1, bad, n, first, idx, ej, eo);
  if (is_float)
    addf(r, " (|diff| %.3g, allowed %.3g)",
         fabs(elem_double(dt, jd, first) - elem_double(dt, od, first)),
         atol + rtol * fabs(elem_double(dt, od, first)));
  return -1;
}

/* ---- bindings ---- */

#define MAX_BINDINGS 16

typedef struct binding {
  char text[128];
  int64_t vals[64];
} binding;

static int parse_bindings(ir_graph *g, const char *spec, binding *out, int *nout,
                          oracle_report *r) {
  *nout = 0;
  const char *p = spec ? spec : "";
  if (g->nsyms > 64) {
    addf(r, "test bug: too many symbols");
    return -1;
  }
  do {
    if (*nout >= MAX_BINDINGS) {
      addf(r, "test bug: more than %d bindings", MAX_BINDINGS);
      return -1;
    }
    binding *b = &out[*nout];
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    snprintf(b->text, sizeof b->text, "%.*s", (int)len, p);
    bool set[64] = {0};
    const char *q = p;
    while (q < p + len) {
      while (q < p + len && (*q == ' ' || *q == ',')) q++;
      if (q >= p + len) break;
      const char *eq = memchr(q, '=', (size_t)(p + len - q));
      if (!eq) {
        addf(r, "test bug: binding '%s' lacks '='", b->text);
        return -1;
      }
      const char *ne = eq;
      while (ne > q && ne[-1] == ' ') ne--;
      int s = ir_graph_symbol(g, q, (size_t)(ne - q), false);
      if (s < 0) {
        addf(r, "test bug: binding '%s' names a symbol the graph does not have", b->text);
        return -1;
      }
      char *numend;
      long long v = strtoll(eq + 1, &numend, 10);
      b->vals[s] = v;
      set[s] = true;
      q = numend;
    }
    /* only the inputs' shapes need values: other symbols come from data
     * (mo.nonzero's count, a mo.reshape's shape operand, ...) */
    for (int s = 0; s < g->nsyms && s < 64; s++) {
      bool used = false;
      for (int i = 0; i < g->ninputs && !used; i++)
        for (int a = 0; a < g->inputs[i]->type.rank; a++)
          used |= ir_dim_uses_sym(g->inputs[i]->type.dims[a], s);
      if (!used) set[s] = true;
    }
    for (int s = 0; s < g->nsyms; s++) {
      if (!set[s]) {
        addf(r, "test bug: binding '%s' leaves symbol '%s' unbound", b->text, g->syms[s]);
        return -1;
      }
    }
    (*nout)++;
    p = end ? end + 1 : NULL;
  } while (p);
  return 0;
}

/* ---- weights ---- */

typedef struct weight_set {
  int n;
  const char *names[64];
  ir_tensor t[64];
  kiln_tensor *kt[64];
} weight_set;

static const ir_tensor *weight_lookup(void *ud, const char *name) {
  weight_set *w = ud;
  for (int i = 0; i < w->n; i++)
    if (strcmp(w->names[i], name) == 0) return &w->t[i];
  return NULL;
}

static void free_weights(weight_set *w) {
  for (int i = 0; i < w->n; i++) {
    kiln_tensor_free(w->kt[i]);
    free(w->t[i].data);
  }
  w->n = 0;
}

/* ---- the runner ---- */

static size_t tensor_bytes(const ir_tensor *t) {
  return (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
}

/* n bytes aligned to `align` (a power of two; at least 64, which any kernel
 * may assume of a weight that asks for it with its align attribute) */
static void *alloc_aligned(size_t n, size_t align) {
  if (align < 64) align = 64;
  return aligned_alloc(align, (n + align - 1) / align * align + align);
}
static void *alloc_bytes(size_t n) { return alloc_aligned(n, 64); }

typedef struct run_state {
  const oracle_case *c;
  ir_graph *g;
  kiln_graph *kg;
  kiln_context *ctx;
  kiln_model *m;
  kiln_status *st;
  weight_set *wsets; /* one per binding, freed after the model */
  int nwsets;
} run_state;

static void run_cleanup(run_state *s) {
  kiln_model_free(s->m);
  kiln_context_free(s->ctx);
  kiln_graph_free(s->kg);
  kiln_status_free(s->st);
  ir_graph_free(s->g);
  for (int i = 0; i < s->nwsets; i++) free_weights(&s->wsets[i]);
  free(s->wsets);
}

/* FNV-1a of the label: cases that share a seed (one table run over several
 * dtypes) still get different data. */
static uint64_t label_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static const oracle_gen *input_gen(const oracle_case *c, int i) {
  if (c->gens && i < c->ngens && c->gens[i].kind != ORACLE_GEN_DEFAULT) return &c->gens[i];
  return &c->gen_default;
}

/* Run one binding. Returns 0 when it agrees (or both fail with expect_error). */
static int run_binding(run_state *s, int bi, const binding *b, oracle_report *r) {
  const oracle_case *c = s->c;
  ir_graph *g = s->g;
  char where[256];
  snprintf(where, sizeof where, "%s%s%s%s", c->label ? c->label : "case",
           b->text[0] ? " [" : "", b->text, b->text[0] ? "]" : "");
  int ni = g->ninputs, no = g->noutputs;
  char msg[1024];
  int rc = -1;
  ir_tensor *ins = calloc((size_t)(ni ? ni : 1), sizeof(ir_tensor));
  kiln_tensor **kins = calloc((size_t)(ni ? ni : 1), sizeof(kiln_tensor *));
  ir_tensor *outs = calloc((size_t)(no ? no : 1), sizeof(ir_tensor));
  kiln_tensor **kouts = calloc((size_t)(no ? no : 1), sizeof(kiln_tensor *));
  kiln_tensor **kouts2 = calloc((size_t)(no ? no : 1), sizeof(kiln_tensor *));
  bool oracle_ok = false;
  if (!ins || !kins || !outs || !kouts || !kouts2) {
    addf(r, "%s: out of memory", where);
    goto done;
  }
  /* inputs */
  for (int i = 0; i < ni; i++) {
    const ir_type *t = &g->inputs[i]->type;
    ins[i].dtype = t->dtype;
    ins[i].rank = t->rank;
    if (ir_eval_shape(t, b->vals, ins[i].shape, msg, sizeof msg) != 0) {
      addf(r, "%s: test bug: input %d shape: %s", where, i, msg);
      goto done;
    }
    size_t nb = tensor_bytes(&ins[i]);
    ins[i].data = alloc_bytes(nb);
    if (!ins[i].data) {
      addf(r, "%s: out of memory", where);
      goto done;
    }
    rng rg = {(c->seed * 0x100000001B3ull ^ label_hash(c->label)) + (uint64_t)bi * 7919u +
              (uint64_t)i * 104729u + 1};
    fill(ins[i].data, t->dtype, ir_tensor_numel(&ins[i]), input_gen(c, i), &rg);
    kins[i] = kiln_tensor_borrow((kiln_dtype)t->dtype, t->rank, ins[i].shape, ins[i].data, s->st);
    if (!kins[i]) {
      addf(r, "%s: kiln_tensor_borrow(input %d): %s", where, i, kiln_status_message(s->st));
      goto done;
    }
  }
  /* weights: fresh per binding, bound to the model and kept alive until it is freed */
  weight_set *w = &s->wsets[bi];
  s->nwsets = bi + 1;
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *n = g->nodes[k];
    if (n->op != IR_OP_CONSTANT_EXTERNAL) continue;
    if (w->n >= 64) {
      addf(r, "%s: test bug: too many weights", where);
      goto done;
    }
    const char *name = ir_node_attr_string(n, "name", NULL);
    if (!name) {
      addf(r, "%s: constant.external node %d without name", where, k);
      goto done;
    }
    ir_tensor *wt = &w->t[w->n];
    const ir_type *t = &n->out[0]->type;
    wt->dtype = t->dtype;
    wt->rank = t->rank;
    if (ir_eval_shape(t, b->vals, wt->shape, msg, sizeof msg) != 0) {
      addf(r, "%s: test bug: weight %s shape: %s", where, name, msg);
      goto done;
    }
    int64_t align = ir_node_attr_int(n, "align", 1);
    wt->data = align > 0 && align <= 4096 && !(align & (align - 1))
                   ? alloc_aligned(tensor_bytes(wt), (size_t)align)
                   : alloc_bytes(tensor_bytes(wt));
    if (!wt->data) {
      addf(r, "%s: out of memory", where);
      goto done;
    }
    w->names[w->n++] = name;
    rng rg = {(c->seed * 0x100000001B3ull ^ label_hash(c->label)) + (uint64_t)bi * 7919u +
              (uint64_t)k * 15485863u + 77};
    const oracle_gen *wg = c->wgen.kind != ORACLE_GEN_DEFAULT ? &c->wgen : &c->gen_default;
    fill(wt->data, t->dtype, ir_tensor_numel(wt), wg, &rg);
    kiln_tensor *kt = kiln_tensor_borrow((kiln_dtype)t->dtype, t->rank, wt->shape, wt->data, s->st);
    if (!kt) {
      addf(r, "%s: kiln_tensor_borrow(weight %s): %s", where, name, kiln_status_message(s->st));
      goto done;
    }
    w->kt[w->n - 1] = kt; /* kept alive (handle and memory) until the model is freed */
    if (kiln_model_bind_weight(s->m, name, kt, s->st) != 0) {
      addf(r, "%s: kiln_model_bind_weight(%s): %s", where, name, kiln_status_message(s->st));
      goto done;
    }
  }
  /* oracle */
  msg[0] = 0;
  oracle_ok = ir_interp_run(g, ins, weight_lookup, w, outs, msg, sizeof msg) == 0;
  r->oracle_failed = !oracle_ok;
  snprintf(r->oracle_msg, sizeof r->oracle_msg, "%s", oracle_ok ? "" : msg);
  /* JIT, run 1: kiln allocates the outputs */
  kiln_status_clear(s->st);
  int jrc = kiln_model_execute(s->m, kins, ni, kouts, no, s->st);
  r->jit_failed = jrc != 0;
  r->jit_code = kiln_status_code(s->st);
  snprintf(r->jit_msg, sizeof r->jit_msg, "%s", jrc == 0 ? "" : kiln_status_message(s->st));
  if (jrc == 0 && kiln_status_is_error(s->st)) {
    addf(r, "%s: kiln_model_execute returned 0 with an error status: %s", where,
         kiln_status_message(s->st));
    goto done;
  }
  if (c->expect_error) {
    if (jrc == 0 || oracle_ok) {
      addf(r, "%s: expected an error from both; jit %s%s, oracle %s%s", where,
           jrc ? "failed: " : "succeeded", jrc ? r->jit_msg : "",
           oracle_ok ? "succeeded" : "failed: ", oracle_ok ? "" : r->oracle_msg);
      goto done;
    }
    for (int i = 0; i < no; i++) {
      if (kouts[i]) {
        addf(r, "%s: kiln_model_execute failed but filled output slot %d", where, i);
        goto done;
      }
    }
    rc = 0;
    goto done;
  }
  if (jrc != 0 || !oracle_ok) {
    addf(r, "%s: %s", where,
         jrc != 0 && !oracle_ok ? "both failed" : jrc != 0 ? "jit failed, oracle succeeded"
                                                             : "oracle failed, jit succeeded");
    if (jrc != 0) addf(r, "\n  jit (%s): %s", kiln_code_name(r->jit_code), r->jit_msg);
    if (!oracle_ok) addf(r, "\n  oracle: %s", r->oracle_msg);
    goto done;
  }
  rc = 0;
  for (int i = 0; i < no; i++) {
    if (!kouts[i]) {
      addf(r, "%s: output %d not filled", where, i);
      rc = -1;
      break;
    }
    if (compare_output(r, where, i, g->outputs[i], kiln_tensor_dtype(kouts[i]),
                       kiln_tensor_rank(kouts[i]), kiln_tensor_shape(kouts[i]),
                       kiln_tensor_data(kouts[i]), &outs[i], c->rtol, c->atol) != 0) {
      rc = -1;
      addf(r, "\n");
    }
  }
  if (rc != 0) goto done;
  if (c->require_finite) {
    for (int i = 0; i < no; i++) {
      const char *side[2] = {"oracle", "jit"};
      const void *data[2] = {outs[i].data, kiln_tensor_data(kouts[i])};
      int64_t n = ir_tensor_numel(&outs[i]);
      if (outs[i].dtype != IR_DT_F32 && outs[i].dtype != IR_DT_F64) continue;
      for (int k = 0; k < 2; k++) {
        for (int64_t e = 0; e < n; e++) {
          double v = elem_double(outs[i].dtype, data[k], e);
          if (!isfinite(v)) {
            char idx[256];
            fmt_index(idx, sizeof idx, outs[i].rank, outs[i].shape, e);
            addf(r, "%s: output %d (%%%s): %s gives %g at index %s; a finite result is required",
                 where, i, g->outputs[i]->name, side[k], v, idx);
            rc = -1;
            break;
          }
        }
      }
    }
    if (rc != 0) goto done;
  }
  /* JIT, run 2: into caller tensors full of garbage */
  for (int i = 0; i < no; i++) {
    kouts2[i] = kiln_tensor_new((kiln_dtype)outs[i].dtype, outs[i].rank, outs[i].shape, s->st);
    if (!kouts2[i]) {
      addf(r, "%s: kiln_tensor_new(output %d): %s", where, i, kiln_status_message(s->st));
      rc = -1;
      goto done;
    }
    memset(kiln_tensor_data(kouts2[i]), 0xA5, kiln_tensor_nbytes(kouts2[i]));
  }
  if (kiln_model_execute(s->m, kins, ni, kouts2, no, s->st) != 0) {
    addf(r, "%s: second execute (caller outputs) failed: %s", where, kiln_status_message(s->st));
    rc = -1;
    goto done;
  }
  char where2[400];
  snprintf(where2, sizeof where2, "%s (2nd run, caller outputs pre-filled with 0xA5)", where);
  for (int i = 0; i < no; i++) {
    if (compare_output(r, where2, i, g->outputs[i], kiln_tensor_dtype(kouts2[i]),
                       kiln_tensor_rank(kouts2[i]), kiln_tensor_shape(kouts2[i]),
                       kiln_tensor_data(kouts2[i]), &outs[i], c->rtol, c->atol) != 0) {
      rc = -1;
      addf(r, "\n");
    }
  }
done:
  if (oracle_ok)
    for (int i = 0; i < no; i++) free(outs[i].data);
  for (int i = 0; ins && i < ni; i++) free(ins[i].data);
  for (int i = 0; kins && i < ni; i++) kiln_tensor_free(kins[i]);
  for (int i = 0; kouts && i < no; i++) kiln_tensor_free(kouts[i]);
  for (int i = 0; kouts2 && i < no; i++) kiln_tensor_free(kouts2[i]);
  free(ins);
  free(kins);
  free(outs);
  free(kouts);
  free(kouts2);
  return rc;
}

int oracle_run(const oracle_case *c, oracle_report *r) {
  memset(r, 0, sizeof *r);
  run_state s = {0};
  s.c = c;
  const char *label = c->label ? c->label : "case";
  int rc = -1;
  if (!c->mlir) {
    addf(r, "%s: test bug: no graph text (gt_finish failed?)", label);
    return -1;
  }
  size_t len = strlen(c->mlir);
  ir_diag d = {0};
  s.g = ir_parse(c->mlir, len, &d);
  if (!s.g) {
    addf(r, "%s: ir_parse failed: %d:%d: %s", label, d.line, d.col, d.msg);
    add_text(r, c->mlir);
    return -1;
  }
  s.st = kiln_status_new();
  if (!s.st) {
    addf(r, "%s: out of memory", label);
    goto out;
  }
  s.kg = kiln_graph_parse(c->mlir, len, "case.mlir", s.st);
  if (!s.kg) {
    addf(r, "%s: kiln_graph_parse failed (ir_parse accepted it): %s", label,
         kiln_status_message(s.st));
    goto out;
  }
  s.ctx = kiln_context_new(s.st);
  if (!s.ctx) {
    addf(r, "%s: kiln_context_new: %s", label, kiln_status_message(s.st));
    goto out;
  }
  s.m = under_test_compile(s.ctx, s.kg, s.st);
  if (!s.m) {
    addf(r, "%s: kiln_model_compile failed (%s): %s", label,
         kiln_code_name(kiln_status_code(s.st)), kiln_status_message(s.st));
    goto out;
  }
  r->compiles = 1;
  if (kiln_model_num_inputs(s.m) != s.g->ninputs || kiln_model_num_outputs(s.m) != s.g->noutputs) {
    addf(r, "%s: model has %d inputs / %d outputs, the graph %d / %d", label,
         kiln_model_num_inputs(s.m), kiln_model_num_outputs(s.m), s.g->ninputs, s.g->noutputs);
    goto out;
  }
  binding *bs = calloc(MAX_BINDINGS, sizeof(binding));
  s.wsets = calloc(MAX_BINDINGS, sizeof(weight_set));
  if (!bs || !s.wsets) {
    free(bs);
    addf(r, "%s: out of memory", label);
    goto out;
  }
  int nb = 0;
  if (parse_bindings(s.g, c->bindings, bs, &nb, r) != 0) {
    free(bs);
    goto out;
  }
  rc = 0;
  for (int i = 0; i < nb; i++) {
    if (run_binding(&s, i, &bs[i], r) != 0) {
      rc = -1;
      addf(r, "\n");
    }
  }
  free(bs);
out:
  if (rc != 0) add_text(r, c->mlir);
  run_cleanup(&s);
  return rc;
}

int oracle_known(const char *label, const char *mlir, const oracle_expect *exp, int nexp,
                 double rtol, double atol, oracle_report *r) {
  memset(r, 0, sizeof *r);
  int rc = -1;
  ir_diag d = {0};
  ir_graph *g = ir_parse(mlir, strlen(mlir), &d);
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = NULL;
  kiln_context *ctx = NULL;
  kiln_model *m = NULL;
  kiln_tensor **kouts = calloc((size_t)(nexp > 0 ? nexp : 1), sizeof(kiln_tensor *));
  ir_tensor *outs = calloc((size_t)(nexp > 0 ? nexp : 1), sizeof(ir_tensor));
  bool oracle_ok = false;
  char msg[1024] = "";
  if (!g) {
    addf(r, "%s: ir_parse failed: %d:%d: %s", label, d.line, d.col, d.msg);
    goto out;
  }
  if (!st || !kouts || !outs) {
    addf(r, "%s: out of memory", label);
    goto out;
  }
  if (g->ninputs != 0 || g->noutputs != nexp) {
    addf(r, "%s: test bug: the graph has %d inputs and %d outputs, %d answers given", label,
         g->ninputs, g->noutputs, nexp);
    goto out;
  }
  oracle_ok = ir_interp_run(g, NULL, NULL, NULL, outs, msg, sizeof msg) == 0;
  if (!oracle_ok) addf(r, "%s: oracle failed: %s\n", label, msg);
  kg = kiln_graph_parse(mlir, strlen(mlir), "known.mlir", st);
  if (kg) ctx = kiln_context_new(st);
  if (ctx) m = under_test_compile(ctx, kg, st);
  if (!m || kiln_model_execute(m, NULL, 0, kouts, nexp, st) != 0) {
    addf(r, "%s: jit failed: %s\n", label, kiln_status_message(st));
    goto out;
  }
  rc = oracle_ok ? 0 : -1;
  for (int i = 0; i < nexp; i++) {
    const oracle_expect *e = &exp[i];
    char what[300];
    for (int side = 0; side < 2; side++) {
      if (side == 1 && !oracle_ok) break;
      kiln_dtype dt = side ? (kiln_dtype)outs[i].dtype : kiln_tensor_dtype(kouts[i]);
      int rank = side ? outs[i].rank : kiln_tensor_rank(kouts[i]);
      const int64_t *shape = side ? outs[i].shape : kiln_tensor_shape(kouts[i]);
      const void *data = side ? outs[i].data : kiln_tensor_data(kouts[i]);
      const char *who = side ? "oracle" : "jit";
      if (dt != e->dtype || rank != e->rank ||
          (rank > 0 && memcmp(shape, e->shape, sizeof(int64_t) * (size_t)rank) != 0)) {
        char s1[256], s2[256];
        fmt_shape(s1, sizeof s1, rank, shape);
        fmt_shape(s2, sizeof s2, e->rank, e->shape);
        addf(r, "%s: output %d: %s gives %s %s, expected %s %s\n", label, i, who,
             kiln_dtype_name(dt), s1, kiln_dtype_name(e->dtype), s2);
        rc = -1;
        continue;
      }
      /* oracle_compare labels the first buffer "jit" and the second "oracle":
       * here they are this side's result and the known answer */
      snprintf(what, sizeof what, "%s: output %d computed by the %s [shown as 'jit'] vs the known "
               "answer [shown as 'oracle'] (", label, i, who);
      if (oracle_compare(r, what, e->dtype, e->rank, e->shape, data, e->data, rtol, atol) != 0) {
        addf(r, "\n");
        rc = -1;
      }
    }
  }
out:
  if (rc != 0) addf(r, "--- graph ---\n%.8000s", mlir);
  if (oracle_ok)
    for (int i = 0; i < nexp; i++) free(outs[i].data);
  for (int i = 0; kouts && i < nexp; i++) kiln_tensor_free(kouts[i]);
  free(kouts);
  free(outs);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(kg);
  kiln_status_free(st);
  ir_graph_free(g);
  return rc;
}

int oracle_compile_only(const char *mlir, kiln_code *code, char *msg, size_t cap) {
  kiln_status *st = kiln_status_new();
  if (!st) return -1;
  int rc = -1;
  kiln_context *ctx = NULL;
  kiln_model *m = NULL;
  kiln_graph *kg = kiln_graph_parse(mlir, strlen(mlir), "case.mlir", st);
  if (kg) ctx = kiln_context_new(st);
  if (ctx) m = under_test_compile(ctx, kg, st);
  if (m) rc = 0;
  if (code) *code = kiln_status_code(st);
  if (msg && cap) snprintf(msg, cap, "%s", kiln_status_message(st));
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(kg);
  kiln_status_free(st);
  return rc;
}

int oracle_ir_parse_only(const char *mlir, char *msg, size_t cap) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(mlir, strlen(mlir), &d);
  if (!g) {
    if (msg && cap) snprintf(msg, cap, "%d:%d: %s", d.line, d.col, d.msg);
    return -1;
  }
  if (msg && cap) msg[0] = 0;
  ir_graph_free(g);
  return 0;
}

void oracle_expect_known(const char *label, const char *mlir, oracle_expect e) {
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known(label, mlir, &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
}

void oracle_expect_both_fail(oracle_case *c, const char *word) {
  c->expect_error = true;
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(c, r);
  cr_expect_eq(rc, 0, "%s: %s", c->label, r->msg);
  if (rc == 0) {
    cr_expect(strstr(r->jit_msg, word) != NULL, "%s: JIT message lacks '%s': %s", c->label, word,
              r->jit_msg);
    cr_expect(strstr(r->oracle_msg, word) != NULL, "%s: oracle message lacks '%s': %s", c->label,
              word, r->oracle_msg);
  }
  free(r);
}
