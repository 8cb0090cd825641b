/* interp_scalar.c - the reference interpreter's scalar semantics: element
 * loads and stores for every dtype, f16 / bf16 rounding, and the value of each
 * elementwise op on one element (the rules are listed at the top of interp.c).
 * An op without a meaning here is reported as such (false / IR_REF_NO_MEANING),
 * never given a value. Plain C with libm; no allocation. */
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

uint16_t ir_bf16_from_double(double v) { return double_to_small(v, 8, 7); }

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

/* float8 (ir_float8_format): the exact value of code b. */
static double f8_to_double(unsigned b, const ir_float8_format *f) {
  unsigned mag = b & 0x7F, mmask = (1u << f->mbits) - 1, field = mag >> f->mbits;
  bool neg = (b & 0x80) != 0;
  if (f->fnuz && b == 0x80) return NAN;
  if (!f->fnuz && !f->has_inf && mag == 0x7F) return neg ? -NAN : NAN;
  if (f->has_inf && field == (0x7Fu >> f->mbits))
    return (mag & mmask) ? (neg ? -NAN : NAN) : neg ? -INFINITY : INFINITY;
  double v = field == 0 ? ldexp((double)(mag & mmask), f->emin - f->mbits)
                        : ldexp((double)((mag & mmask) | (mmask + 1)),
                                (int)field - 1 + f->emin - f->mbits);
  return neg ? -v : v;
}

/* v into float8 code: nearest, ties to even; saturating (dtype.h). */
static unsigned double_to_f8(double v, const ir_float8_format *f) {
  unsigned sign = signbit(v) ? 0x80 : 0;
  if (isnan(v)) return f->fnuz ? 0x80 : sign | 0x7F;
  double a = fabs(v);
  unsigned code;
  if (isinf(a)) {
    code = f->has_inf ? 0x7Cu : f->max_bits;
  } else if (a > 2 * f->max) {
    code = f->max_bits;
  } else {
    int ex = 0;
    (void)frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1): floor(log2 a) = ex - 1 */
    int e = a == 0 ? f->emin : ex - 1 < f->emin ? f->emin : ex - 1;
    double q = nearbyint(ldexp(a, f->mbits - e)); /* default rounding: to nearest even */
    code = (unsigned)((e - f->emin) << f->mbits) + (unsigned)q;
    if (code > f->max_bits) code = f->max_bits;
  }
  if (code == 0 && f->fnuz) return 0; /* no negative zero */
  return sign | code;
}

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
  default: break;
  }
  ir_float8_format f8;
  return ir_float8_format_of(t->dtype, &f8) ? f8_to_double(*(const uint8_t *)p, &f8) : 0.0;
}

void ir_ref_st_f(const ir_tensor *t, int64_t i, double v) {
  char *p = ir_ref_elem(t, i);
  switch (t->dtype) {
  case IR_DT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case IR_DT_F64: memcpy(p, &v, 8); break;
  case IR_DT_F16: { uint16_t h = double_to_small(v, 5, 10); memcpy(p, &h, 2); break; }
  case IR_DT_BF16: { uint16_t h = double_to_small(v, 8, 7); memcpy(p, &h, 2); break; }
  default: {
    ir_float8_format f8;
    if (ir_float8_format_of(t->dtype, &f8)) *(uint8_t *)p = (uint8_t)double_to_f8(v, &f8);
    break;
  }
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

/* ---- scalar semantics ----
 * Each function gives op's value on one element and returns true, or returns
 * false when it has no meaning for op (an op added to ops.def without one):
 * the caller reports that with the op's name, never a made-up value. */

bool ir_ref_un_f32(ir_op op, int gelu, float x, float *y) {
  switch (op) {
  case IR_OP_ABS: *y = fabsf(x); return true;
  case IR_OP_NEGATE: *y = -x; return true;
  case IR_OP_EXP: *y = expf(x); return true;
  case IR_OP_LOG: *y = logf(x); return true;
  case IR_OP_LOG1P: *y = log1pf(x); return true;
  case IR_OP_SQRT: *y = sqrtf(x); return true;
  case IR_OP_RSQRT: *y = 1.0f / sqrtf(x); return true;
  case IR_OP_TANH: *y = tanhf(x); return true;
  case IR_OP_SIGMOID: *y = 1.0f / (1.0f + expf(-x)); return true;
  case IR_OP_RELU: *y = isnan(x) ? x : (x > 0.0f ? x : 0.0f); return true;
  case IR_OP_SILU: *y = x * (1.0f / (1.0f + expf(-x))); return true;
  case IR_OP_ERF: *y = erff(x); return true;
  case IR_OP_SIN: *y = sinf(x); return true;
  case IR_OP_COS: *y = cosf(x); return true;
  case IR_OP_FLOOR: *y = floorf(x); return true;
  case IR_OP_ROUND: *y = nearbyintf(x); return true; /* default mode: half to even */
  case IR_OP_TRUNC: *y = truncf(x); return true;
  case IR_OP_CEIL: *y = ceilf(x); return true;
  case IR_OP_ACOS: *y = acosf(x); return true;
  case IR_OP_ASIN: *y = asinf(x); return true;
  case IR_OP_ATAN: *y = atanf(x); return true;
  case IR_OP_ATANH: *y = atanhf(x); return true;
  case IR_OP_GELU:
    if (gelu == IR_REF_GELU_TANH)
      *y = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    else if (gelu == IR_REF_GELU_QUICK)
      *y = x * (1.0f / (1.0f + expf(-1.702f * x)));
    else
      *y = 0.5f * x * (1.0f + erff(x / 1.4142135623730951f));
    return true;
  default: return false;
  }
}

bool ir_ref_un_f64(ir_op op, int gelu, double x, double *y) {
  switch (op) {
  case IR_OP_ABS: *y = fabs(x); return true;
  case IR_OP_NEGATE: *y = -x; return true;
  case IR_OP_EXP: *y = exp(x); return true;
  case IR_OP_LOG: *y = log(x); return true;
  case IR_OP_LOG1P: *y = log1p(x); return true;
  case IR_OP_SQRT: *y = sqrt(x); return true;
  case IR_OP_RSQRT: *y = 1.0 / sqrt(x); return true;
  case IR_OP_TANH: *y = tanh(x); return true;
  case IR_OP_SIGMOID: *y = 1.0 / (1.0 + exp(-x)); return true;
  case IR_OP_RELU: *y = isnan(x) ? x : (x > 0.0 ? x : 0.0); return true;
  case IR_OP_SILU: *y = x * (1.0 / (1.0 + exp(-x))); return true;
  case IR_OP_ERF: *y = erf(x); return true;
  case IR_OP_SIN: *y = sin(x); return true;
  case IR_OP_COS: *y = cos(x); return true;
  case IR_OP_FLOOR: *y = floor(x); return true;
  case IR_OP_ROUND: *y = nearbyint(x); return true;
  case IR_OP_TRUNC: *y = trunc(x); return true;
  case IR_OP_CEIL: *y = ceil(x); return true;
  case IR_OP_ACOS: *y = acos(x); return true;
  case IR_OP_ASIN: *y = asin(x); return true;
  case IR_OP_ATAN: *y = atan(x); return true;
  case IR_OP_ATANH: *y = atanh(x); return true;
  case IR_OP_GELU:
    if (gelu == IR_REF_GELU_TANH)
      *y = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    else if (gelu == IR_REF_GELU_QUICK)
      *y = x * (1.0 / (1.0 + exp(-1.702 * x)));
    else
      *y = 0.5 * x * (1.0 + erf(x / 1.4142135623730951));
    return true;
  default: return false;
  }
}

bool ir_ref_un_int(ir_op op, int64_t x, int64_t *y) {
  uint64_t u = (uint64_t)x;
  switch (op) {
  case IR_OP_ABS: *y = x < 0 ? (int64_t)(0 - u) : x; return true; /* wraps on INT_MIN */
  case IR_OP_NEGATE: *y = (int64_t)(0 - u); return true;
  case IR_OP_RELU: *y = x > 0 ? x : 0; return true;
  default: return false;
  }
}

bool ir_ref_pred(ir_op op, double x, bool *y) {
  switch (op) {
  case IR_OP_IS_NAN: *y = isnan(x) != 0; return true;
  case IR_OP_IS_INF: *y = isinf(x) != 0; return true;
  default: return false;
  }
}

bool ir_ref_logic(ir_op op, bool a, bool b, bool *y) {
  switch (op) {
  case IR_OP_LOGICAL_NOT: *y = !a; return true;
  case IR_OP_LOGICAL_AND: *y = a && b; return true;
  case IR_OP_LOGICAL_OR: *y = a || b; return true;
  case IR_OP_LOGICAL_XOR: *y = a != b; return true;
  default: return false;
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

bool ir_ref_bin_f32(ir_op op, float a, float b, float *y) {
  switch (op) {
  case IR_OP_ADD: *y = a + b; return true;
  case IR_OP_SUB: *y = a - b; return true;
  case IR_OP_MUL: *y = a * b; return true;
  case IR_OP_DIV: *y = a / b; return true;
  case IR_OP_FLOOR_DIV: *y = floorf(a / b); return true;
  case IR_OP_POW: *y = powf(a, b); return true;
  case IR_OP_MAX: *y = (float)ir_ref_max_f(a, b); return true;
  case IR_OP_MIN: *y = (float)ir_ref_min_f(a, b); return true;
  case IR_OP_MOD: {
    float r = fmodf(a, b);
    if (r == 0.0f)
      r = copysignf(0.0f, b);
    else if ((r < 0.0f) != (b < 0.0f))
      r += b;
    *y = r;
    return true;
  }
  default: return false;
  }
}

bool ir_ref_bin_f64(ir_op op, double a, double b, double *y) {
  switch (op) {
  case IR_OP_ADD: *y = a + b; return true;
  case IR_OP_SUB: *y = a - b; return true;
  case IR_OP_MUL: *y = a * b; return true;
  case IR_OP_DIV: *y = a / b; return true;
  case IR_OP_FLOOR_DIV: *y = floor(a / b); return true;
  case IR_OP_POW: *y = pow(a, b); return true;
  case IR_OP_MAX: *y = ir_ref_max_f(a, b); return true;
  case IR_OP_MIN: *y = ir_ref_min_f(a, b); return true;
  case IR_OP_MOD: {
    double r = fmod(a, b);
    if (r == 0.0)
      r = copysign(0.0, b);
    else if ((r < 0.0) != (b < 0.0))
      r += b;
    *y = r;
    return true;
  }
  default: return false;
  }
}

/* Integer power by repeated squaring over the bits of e >= 0, wrapping
 * (the store keeps the dtype's low bits, which wrap the same way). */
static int64_t int_pow(int64_t x, int64_t e) {
  uint64_t r = 1, base = (uint64_t)x;
  for (; e > 0; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return (int64_t)r;
}

/* Integer binary op on sign-extended operands; the store wraps the result. */
int ir_ref_bin_int(ir_op op, int64_t a, int64_t b, int64_t *y) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case IR_OP_ADD: *y = (int64_t)(ua + ub); return IR_REF_OK;
  case IR_OP_SUB: *y = (int64_t)(ua - ub); return IR_REF_OK;
  case IR_OP_MUL: *y = (int64_t)(ua * ub); return IR_REF_OK;
  case IR_OP_MAX: *y = a > b ? a : b; return IR_REF_OK;
  case IR_OP_MIN: *y = a < b ? a : b; return IR_REF_OK;
  case IR_OP_MOD: {
    if (b == 0) return IR_REF_DIV_ZERO;
    if (b == -1) { *y = 0; return IR_REF_OK; } /* avoids INT64_MIN % -1 */
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    *y = m;
    return IR_REF_OK;
  }
  case IR_OP_FLOOR_DIV: {
    if (b == 0) return IR_REF_DIV_ZERO;
    if (b == -1) { *y = (int64_t)(0 - ua); return IR_REF_OK; } /* INT_MIN // -1 wraps */
    int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) q -= 1;
    *y = q;
    return IR_REF_OK;
  }
  case IR_OP_POW:
    if (b >= 0) {
      *y = int_pow(a, b);
      return IR_REF_OK;
    }
    /* x^-k: the real result truncated toward zero */
    if (a == 0) return IR_REF_DIV_ZERO;
    *y = a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    return IR_REF_OK;
  default: return IR_REF_NO_MEANING;
  }
}

bool ir_ref_cmp_f(ir_op op, double a, double b, bool *y) {
  switch (op) {
  case IR_OP_EQUAL: *y = a == b; return true;
  case IR_OP_NOT_EQUAL: *y = a != b; return true;
  case IR_OP_GREATER: *y = a > b; return true;
  case IR_OP_GREATER_EQUAL: *y = a >= b; return true;
  default: return false;
  }
}

bool ir_ref_cmp_i(ir_op op, int64_t a, int64_t b, bool *y) {
  switch (op) {
  case IR_OP_EQUAL: *y = a == b; return true;
  case IR_OP_NOT_EQUAL: *y = a != b; return true;
  case IR_OP_GREATER: *y = a > b; return true;
  case IR_OP_GREATER_EQUAL: *y = a >= b; return true;
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
    default: /* float8: any integer that does not saturate is exact in double */
      ir_ref_st_f(y, yi, fsigned ? (double)v : (double)u);
      break;
    }
  } else if (ffloat) {
    ir_ref_st_i(y, yi, (int64_t)float_to_int_bits(ir_ref_ld_f(x, xi), to));
  } else {
    ir_ref_st_i(y, yi, ir_ref_ld_i(x, xi)); /* two's-complement truncation / extension */
  }
}

