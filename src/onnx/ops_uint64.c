/* ops_uint64.c - ONNX's Max, Min, Mod and BitShift on ui64, composed from
 * kiln's si64 ops: kiln stores ui64 but its arithmetic takes si64 (ir/ops.def).
 *
 * A ui64 is cast to the si64 of the same bits and back. Add, sub, mul and
 * pow wrap, so they give the unsigned answer's bits as they are; what
 * differs is order and division, rebuilt here exactly over the full range:
 *  - a <u b: where a and b differ in sign (top bit), b < 0; else a < b.
 *  - a >>u y (y in 1..63): the low 63 bits of a (a + 2^63 when a < 0, no
 *    overflow) floor-divided by 2 then by 2^(y-1), plus 2^63 >> y when a's
 *    top bit was set. 2^(y-1) <= 2^62 stays positive.
 *  - a %u b: b >= 2^63 (b < 0 as si64): a >=u b ? a - b : a. b < 2^63:
 *    a < 2^63 gives a % b; else (low63(a) % b + 2^63 % b) mod b, the sum
 *    formed without overflow ((r1 + r2) mod b = r1 >= b - r2 ? r1 - (b -
 *    r2) : r1 + r2) and 2^63 % b as 2 * (2^62 % b) mod b the same way.
 * Every branch is computed in every lane (mo.where picks), so each is kept
 * free of overflow in the lanes it does not serve too. */
#include "ox.h"

#define OP3(name, a, b, c) ox_op(x, name, (kiln_value *[]){a, b, c}, 3, NULL, NULL)

static kiln_value *cast(ox *x, kiln_value *v, ir_dtype dt) {
  return v ? ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(dt)) : NULL;
}

/* an si64 constant: v is -2^63, 2^62 or small, so exact as a double */
static kiln_value *k64(ox *x, int64_t v) { return ox_scalar(x, IR_DT_SI64, (double)v); }

static kiln_value *neg(ox *x, kiln_value *a) { /* bool: a < 0 */
  kiln_value *z = k64(x, 0);
  return z ? OP2("greater", z, a) : NULL;
}

/* bool: a <u b (a, b si64 holding ui64 bits) */
static kiln_value *ult(ox *x, kiln_value *a, kiln_value *b) {
  kiln_value *na = neg(x, a), *nb = neg(x, b), *d, *lt;
  if (!na || !nb || !(d = OP2("not_equal", na, nb)) || !(lt = OP2("greater", b, a))) return NULL;
  return OP3("where", d, nb, lt);
}

/* a with its top bit cleared: a - (-2^63) where a < 0, else a (the
 * other lanes subtract -2^63 from itself) */
static kiln_value *low63(ox *x, kiln_value *a) {
  kiln_value *n = neg(x, a), *mn = k64(x, INT64_MIN), *t, *s;
  if (!n || !mn || !(t = OP3("where", n, a, mn)) || !(s = OP2("sub", t, mn))) return NULL;
  return OP3("where", n, s, a);
}

/* (r1 + r2) mod b for r1, r2 in [0, b), b > 0, without overflow */
static kiln_value *add_mod(ox *x, kiln_value *r1, kiln_value *r2, kiln_value *b) {
  kiln_value *room = OP2("sub", b, r2), *ge, *over, *sum;
  if (!room || !(ge = OP2("greater_equal", r1, room)) || !(over = OP2("sub", r1, room)) ||
      !(sum = OP2("add", r1, r2)))
    return NULL;
  return OP3("where", ge, over, sum);
}

/* the ui64 operand i as si64 bits */
static kiln_value *in_si64(ox *x, ox_val **in, int nin, int i, int *rc) {
  kiln_value *v = ox_in(x, in, nin, i, rc);
  return v ? cast(x, v, IR_DT_SI64) : NULL;
}

kiln_value *ox_uint64_minmax(ox *x, ox_val **in, int nin, bool max, int *rc) {
  kiln_value *acc = in_si64(x, in, nin, 0, rc);
  for (int i = 1; acc && i < nin; i++) {
    kiln_value *b = in_si64(x, in, nin, i, rc), *lt;
    if (!b || !(lt = ult(x, acc, b))) return NULL;
    acc = max ? OP3("where", lt, b, acc) : OP3("where", lt, acc, b);
  }
  return cast(x, acc, IR_DT_UI64);
}

kiln_value *ox_uint64_shift(ox *x, ox_val **in, int nin, bool left, int *rc) {
  kiln_value *a = in_si64(x, in, nin, 0, rc), *y = a ? in_si64(x, in, nin, 1, rc) : NULL;
  kiln_value *two = y ? k64(x, 2) : NULL, *one = two ? k64(x, 1) : NULL, *r;
  if (!one) return NULL;
  if (left) {
    kiln_value *p = OP2("pow", two, y);
    return p ? cast(x, OP2("mul", a, p), IR_DT_UI64) : NULL;
  }
  kiln_value *ym1, *q, *lo, *top, *z, *hi, *y0;
  if (!(ym1 = OP2("sub", y, one)) || !(z = k64(x, 0)) || !(ym1 = OP2("max", ym1, z)) ||
      !(q = OP2("pow", two, ym1)) || !(lo = low63(x, a)) || !(lo = OP2("floor_div", lo, two)) ||
      !(lo = OP2("floor_div", lo, q)) || !(top = k64(x, INT64_C(1) << 62)) ||
      !(top = OP2("floor_div", top, q)) || !(hi = neg(x, a)) || !(top = OP3("where", hi, top, z)) ||
      !(r = OP2("add", lo, top)) || !(y0 = OP2("equal", y, z)) || !(r = OP3("where", y0, a, r)))
    return NULL;
  return cast(x, r, IR_DT_UI64);
}

kiln_value *ox_uint64_mod(ox *x, ox_val **in, int nin, int *rc) {
  kiln_value *a = in_si64(x, in, nin, 0, rc), *b = a ? in_si64(x, in, nin, 1, rc) : NULL;
  if (!b) return NULL;
  /* b >= 2^63 */
  kiln_value *lt, *big, *small, *r1, *m62, *r2, *hi_a, *hi_b, *r;
  if (!(lt = ult(x, a, b)) || !(big = OP2("sub", a, b)) || !(big = OP3("where", lt, a, big)))
    return NULL;
  /* b < 2^63 */
  if (!(r1 = low63(x, a)) || !(r1 = OP2("mod", r1, b)) || !(m62 = k64(x, INT64_C(1) << 62)) ||
      !(m62 = OP2("mod", m62, b)) || !(r2 = add_mod(x, m62, m62, b)) ||
      !(r2 = add_mod(x, r1, r2, b)) || !(small = OP2("mod", a, b)) || !(hi_a = neg(x, a)) ||
      !(small = OP3("where", hi_a, r2, small)) || !(hi_b = neg(x, b)) ||
      !(r = OP3("where", hi_b, big, small)))
    return NULL;
  return cast(x, r, IR_DT_UI64);
}
