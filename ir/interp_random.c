/* interp_random.c - the reference interpreter's routine for the
 * random-number class: mo.random.uniform and mo.random.normal. This file
 * is the generator's definition; the kernels (jit/random.c) compute the
 * same values.
 *
 * The generator is counter-based: value i of a stream is splitmix64's
 * (i + 1)-th output from the state key = mix(seed + 0x9E3779B97F4A7C15),
 * that is bits(i) = mix(key + (i + 1) * 0x9E3779B97F4A7C15), with mix
 * splitmix64's output function (random.h). Element i of the result (its
 * row-major index) uses only bits(i) (uniform) or bits(2i) and bits(2i + 1)
 * (normal), so it is the same for every thread split and on every device.
 *   uniform: u = (bits(i) >> (64 - m)) * 2^-m, m = 24 (f32) or 53 (f64),
 *            so u is in [0, 1) and exact in the dtype; the element is
 *            fma(high - low, u, low) in double, rounded once to the dtype
 *            (low <= it <= high; equal to high only by that rounding).
 *   normal:  u1 = ((bits(2i) >> 11) + 1) * 2^-53 in (0, 1], u2 = (bits(2i +
 *            1) >> 11) * 2^-53 in [0, 1); z = sqrt(-2 log u1) * cos(2 pi u2)
 *            (Box-Muller); the element is fma(std, z, mean) in double,
 *            rounded once. log and cos come from the target's math library,
 *            so devices may differ from the host in the last bits.
 * Assumes a verified node; checks the result's dtype it writes. */
#include <math.h>

#include "interp_impl.h"
#include "random.h"

int ir_ref_random(const ir_node *n, ir_tensor *y, char *msg, size_t msglen) {
  bool uni = n->op == IR_OP_RANDOM_UNIFORM;
  if (y->dtype != IR_DT_F32 && y->dtype != IR_DT_F64)
    return ir_ref_fail(msg, msglen, "dtype %s is not supported", ir_dtype_name(y->dtype));
  uint64_t key = ir_rand_key(ir_node_attr_int(n, "seed", 0));
  double a = ir_node_attr_float(n, uni ? "low" : "mean", 0.0);
  double b = ir_node_attr_float(n, uni ? "high" : "std", 1.0);
  int m = y->dtype == IR_DT_F32 ? 24 : 53;
  int64_t total = ir_tensor_numel(y);
  for (int64_t i = 0; i < total; i++) {
    double v;
    if (uni) {
      double u = ldexp((double)(ir_rand_bits(key, (uint64_t)i) >> (64 - m)), -m);
      v = fma(b - a, u, a);
    } else {
      uint64_t j = 2 * (uint64_t)i;
      double u1 = ldexp((double)((ir_rand_bits(key, j) >> 11) + 1), -53);
      double u2 = ldexp((double)(ir_rand_bits(key, j + 1) >> 11), -53);
      double z = sqrt(-2.0 * log(u1)) * cos(IR_RAND_TWO_PI * u2);
      v = fma(b, z, a);
    }
    ir_ref_st_f(y, i, v);
  }
  return 0;
}
