/* test_libcalls.c - the runtime routines the engine defines for JIT code
 * (jit/libcalls.c): their roundings bit by bit, and a bfloat kernel that
 * LLVM lowers through __truncsfbf2 on a host without AVX512-BF16 links
 * and computes the interpreter's values on any host. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "jit/libcalls.h"
#include "kiln/kiln.h"
#include "support/oracle.h"

static float f32_of(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static double f64_of(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

Test(libcalls, f32_to_bf16_rounds_to_nearest_even) {
  cr_assert_eq(jit_bf16_from_f32(1.0f), 0x3f80);
  cr_assert_eq(jit_bf16_from_f32(-2.0f), 0xc000);
  /* halfway: to the even neighbour, down then up */
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x3f808000)), 0x3f80);
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x3f818000)), 0x3f82);
  /* just past halfway rounds up; just below rounds down */
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x3f808001)), 0x3f81);
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x3f807fff)), 0x3f80);
  /* overflow to inf; inf and zeros kept; subnormals round like any value */
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x7f7fffff)), 0x7f80);
  cr_assert_eq(jit_bf16_from_f32(INFINITY), 0x7f80);
  cr_assert_eq(jit_bf16_from_f32(-0.0f), 0x8000);
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x00018000)), 0x0002);
  /* NaN: quiet, sign and top payload kept (never rounded into inf) */
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x7f800001)), 0x7fc0);
  cr_assert_eq(jit_bf16_from_f32(f32_of(0xff80ffff)), 0xffc0);
  cr_assert_eq(jit_bf16_from_f32(f32_of(0x7fa00000)), 0x7fe0);
}

Test(libcalls, f64_to_bf16_rounds_once) {
  cr_assert_eq(jit_bf16_from_f64(1.0), 0x3f80);
  /* 1 + 2^-8 is halfway between two bf16 values (ties to even: down);
   * 1 + 2^-8 + 2^-40 is past it: a double rounding through the f32 nearest
   * (which drops the 2^-40) would give 0x3f80 too */
  cr_assert_eq(jit_bf16_from_f64(1.0 + 0x1p-8), 0x3f80);
  cr_assert_eq(jit_bf16_from_f64(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  cr_assert_eq(jit_bf16_from_f64(-(1.0 + 0x1p-8 + 0x1p-40)), 0xbf81);
  /* past f32's range: inf; NaN stays NaN */
  cr_assert_eq(jit_bf16_from_f64(1e300), 0x7f80);
  cr_assert_eq(jit_bf16_from_f64(-1e300), 0xff80);
  cr_assert_eq(jit_bf16_from_f64(f64_of(0x7ff8000000000001ull)) & 0x7fc0, 0x7fc0);
  /* tiny values round to zero or the smallest subnormal */
  cr_assert_eq(jit_bf16_from_f64(1e-300), 0x0000);
  cr_assert_eq(jit_bf16_from_f64(0x1p-133 * 1.5), 0x0002);
}

/* abs / neg / max on bf16: instcombine turns the widen-compute-narrow the
 * lowering writes into bfloat operations, which an x86 host without
 * AVX512-BF16 lowers through __truncsfbf2 (Debian 12's libgcc has none:
 * the kernels failed to link). Every host: the interpreter's bits. */
Test(libcalls, bf16_kernels_that_round_through_the_routine_link) {
  static const char g[] =
      "mo.graph @g<n>(%x: !mo.tensor<[n, 37], bf16>, %y: !mo.tensor<[n, 37], bf16>) -> "
      "(!mo.tensor<[n, 37], bf16>, !mo.tensor<[n, 37], bf16>, !mo.tensor<[n, 37], bf16>) {\n"
      "  %a = mo.abs(%x) : (!mo.tensor<[n, 37], bf16>) -> !mo.tensor<[n, 37], bf16>\n"
      "  %b = mo.negative(%y) : (!mo.tensor<[n, 37], bf16>) -> !mo.tensor<[n, 37], bf16>\n"
      "  %c = mo.max(%x, %y) : (!mo.tensor<[n, 37], bf16>, !mo.tensor<[n, 37], bf16>) -> "
      "!mo.tensor<[n, 37], bf16>\n"
      "  mo.output %a, %b, %c : !mo.tensor<[n, 37], bf16>, !mo.tensor<[n, 37], bf16>, "
      "!mo.tensor<[n, 37], bf16>\n}\n";
  setenv("KILN_CACHE", "off", 1);
  oracle_case c = {.label = "bf16 abs / negative / max", .mlir = g, .bindings = "n=1;n=5",
                   .seed = 11, .gen_default = gen_naninf(-4, 4)};
  ORACLE_ASSERT(&c);
}
