/* interp_scalar.c - the reference interpreter's scalar semantics: element
 * loads and stores for every dtype, f16 / bf16 rounding, and the value of each
 * elementwise op on one element (the rules are listed at the top of interp.c).
 * Plain C with libm; no allocation. */
#include "interp_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

char *ir_ref_elem(const ir_tensor *t, int64_t i) {
  return (char *)t->data + i * (int64_t)ir_dtype_size(t->dtype);
}

double ir_ref_ld_f(const ir_tensor *t, int64_t i) {
  const char *p = ir_ref_elem(t, i);
  switch (t->dtype) {
  case IR_DT_F32: { float v; memcpy(&v, p, 4); return v; }
  case IR_DT_F64: { double v; memcpy(&v, p, 8); return v; }
  case IR_DT_F16: { uint16_t v; memcpy(&v, p, 2); return small_to_double(v, 5, 10); }
  case IR_DT_BF16: { uint16_t v; memcpy(&v, p, 2); return small_to_double(v, 8, 7); }
  default: return 0.0;
  }
}

void ir_ref_st_f(const ir_tensor *t, int64_t i, double v) {
  char *p = ir_ref_elem(t, i);
  switch (t->dtype) {
  case IR_DT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case IR_DT_F64: memcpy(p, &v, 8); break;
  case IR_DT_F16: { uint16_t h = double_to_small(v, 5, 10); memcpy(p, &h, 2); break; }
  case IR_DT_BF16: { uint16_t h = double_to_small(v, 8, 7); memcpy(p, &h, 2); break; }
  default: break;
  }
}

/* Integers and bool, sign- or zero-extended to 64 bits (ui64 keeps its bits). */
int64_t ir_ref_ld_i(const ir_tensor *t, int64_t i) {
  const char *p = ir_ref_elem(t, i);
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
void ir_ref_st_i(const ir_tensor *t, int64_t i, int64_t v) {
  char *p = ir_ref_elem(t, i);
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
int64_t ir_ref_wrap_i(ir_dtype dt, uint64_t v) {
  int w = (int)ir_dtype_size(dt) * 8;
  if (w >= 64) return (int64_t)v;
  uint64_t mask = (1ull << w) - 1, sign = 1ull << (w - 1);
  return (int64_t)((v & mask) ^ sign) - (int64_t)sign;
}

int64_t ir_ref_int_min(ir_dtype dt) {
  return dt == IR_DT_SI32 ? INT32_MIN : INT64_MIN;
}
int64_t ir_ref_int_max(ir_dtype dt) {
  return dt == IR_DT_SI32 ? INT32_MAX : INT64_MAX;
}

bool ir_ref_is_fc(ir_dtype dt) { return dt == IR_DT_F32 || dt == IR_DT_F64; }
bool ir_ref_is_ic(ir_dtype dt) { return dt == IR_DT_SI32 || dt == IR_DT_SI64; }

/* ---- scalar semantics ---- */

float ir_ref_un_f32(ir_op op, int gelu, float x) {
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
    if (gelu == IR_REF_GELU_TANH)
      return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    if (gelu == IR_REF_GELU_QUICK) return x * (1.0f / (1.0f + expf(-1.702f * x)));
    return 0.5f * x * (1.0f + erff(x / 1.4142135623730951f));
  default: return NAN;
  }
}

double ir_ref_un_f64(ir_op op, int gelu, double x) {
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
    if (gelu == IR_REF_GELU_TANH)
      return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    if (gelu == IR_REF_GELU_QUICK) return x * (1.0 / (1.0 + exp(-1.702 * x)));
    return 0.5 * x * (1.0 + erf(x / 1.4142135623730951));
  default: return NAN;
  }
}

int64_t ir_ref_un_int(ir_op op, int64_t x) {
  uint64_t u = (uint64_t)x;
  switch (op) {
  case IR_OP_ABS: return x < 0 ? (int64_t)(0 - u) : x; /* wraps on INT_MIN (store truncates) */
  case IR_OP_NEGATE: return (int64_t)(0 - u);
  case IR_OP_RELU: return x > 0 ? x : 0;
  default: return 0;
  }
}

/* max / min with NaN propagation and -0 < +0 (llvm.maximum / llvm.minimum). */
double ir_ref_max_f(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}
double ir_ref_min_f(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}

float ir_ref_bin_f32(ir_op op, float a, float b) {
  switch (op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUB: return a - b;
  case IR_OP_MUL: return a * b;
  case IR_OP_DIV: return a / b;
  case IR_OP_POW: return powf(a, b);
  case IR_OP_MAX: return (float)ir_ref_max_f(a, b);
  case IR_OP_MIN: return (float)ir_ref_min_f(a, b);
  case IR_OP_MOD: {
    float r = fmodf(a, b);
    if (r == 0.0f) return copysignf(0.0f, b);
    if ((r < 0.0f) != (b < 0.0f)) r += b;
    return r;
  }
  default: return NAN;
  }
}

double ir_ref_bin_f64(ir_op op, double a, double b) {
  switch (op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUB: return a - b;
  case IR_OP_MUL: return a * b;
  case IR_OP_DIV: return a / b;
  case IR_OP_POW: return pow(a, b);
  case IR_OP_MAX: return ir_ref_max_f(a, b);
  case IR_OP_MIN: return ir_ref_min_f(a, b);
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
bool ir_ref_bin_int(ir_op op, int64_t a, int64_t b, int64_t *r) {
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

bool ir_ref_cmp_f(ir_op op, double a, double b) {
  switch (op) {
  case IR_OP_EQUAL: return a == b;
  case IR_OP_NOT_EQUAL: return a != b;
  case IR_OP_GREATER: return a > b;
  case IR_OP_GREATER_EQUAL: return a >= b;
  default: return false;
  }
}

bool ir_ref_cmp_i(ir_op op, int64_t a, int64_t b) {
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

void ir_ref_cast_elem(const ir_tensor *x, int64_t xi, const ir_tensor *y, int64_t yi) {
  ir_dtype from = x->dtype, to = y->dtype;
  bool ffloat = ir_dtype_is_float(from), fsigned = ir_dtype_is_signed(from);
  if (to == IR_DT_BOOL) {
    ir_ref_st_i(y, yi, ffloat ? ir_ref_ld_f(x, xi) != 0.0 : ir_ref_ld_i(x, xi) != 0);
  } else if (ir_dtype_is_float(to)) {
    if (ffloat) {
      ir_ref_st_f(y, yi, ir_ref_ld_f(x, xi)); /* f16/bf16/f32 -> double is exact: one rounding */
      return;
    }
    int64_t v = ir_ref_ld_i(x, xi);
    uint64_t u = (uint64_t)v;
    bool neg = fsigned && v < 0;
    uint64_t mag = neg ? 0 - u : u;
    char *p = ir_ref_elem(y, yi);
    switch (to) {
    case IR_DT_F32: { float f = fsigned ? (float)v : (float)u; memcpy(p, &f, 4); break; }
    case IR_DT_F64: { double d = fsigned ? (double)v : (double)u; memcpy(p, &d, 8); break; }
    case IR_DT_F16: { uint16_t h = int_to_small(neg, mag, 5, 10); memcpy(p, &h, 2); break; }
    case IR_DT_BF16: { uint16_t h = int_to_small(neg, mag, 8, 7); memcpy(p, &h, 2); break; }
    default: break;
    }
  } else if (ffloat) {
    ir_ref_st_i(y, yi, (int64_t)float_to_int_bits(ir_ref_ld_f(x, xi), to));
  } else {
    ir_ref_st_i(y, yi, ir_ref_ld_i(x, xi)); /* two's-complement truncation / extension */
  }
}

