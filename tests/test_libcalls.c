/* test_libcalls.c - the runtime routines the engine defines for JIT code
 * (jit/libcalls.c; __truncdfbf2 is the interpreter's ir_bf16_from_double):
 * their roundings bit by bit, and a bfloat kernel that
 * LLVM lowers through __truncsfbf2 on a host without AVX512-BF16 links
 * and computes the interpreter's values on any host. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir/interp.h"
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

/* __truncsfbf2's bit trick and the interpreter's general rounding (which
 * __truncdfbf2 calls) agree on every float class: a sweep of bit patterns
 * with every exponent, ties, NaN payloads and both signs */
Test(libcalls, f32_rounding_equals_the_interpreters) {
  int bad = 0;
  for (uint64_t k = 0; k < (1ull << 32); k += 65521) {
    uint32_t lows[] = {0x0000, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (int i = 0; i < 5; i++) {
      uint32_t b = ((uint32_t)k & 0xffff0000u) | lows[i];
      float x = f32_of(b);
      uint16_t want = ir_bf16_from_double((double)x), got = jit_bf16_from_f32(x);
      if (want != got && bad++ < 5)
        cr_log_error("0x%08x: bit trick 0x%04x, interpreter 0x%04x", b, got, want);
    }
  }
  cr_assert_eq(bad, 0, "%d patterns round differently", bad);
}

Test(libcalls, f64_to_bf16_rounds_once) {
  cr_assert_eq(ir_bf16_from_double(1.0), 0x3f80);
  /* 1 + 2^-8 is halfway between two bf16 values (ties to even: down);
   * 1 + 2^-8 + 2^-40 is past it: a double rounding through the f32 nearest
   * (which drops the 2^-40) would give 0x3f80 too */
  cr_assert_eq(ir_bf16_from_double(1.0 + 0x1p-8), 0x3f80);
  cr_assert_eq(ir_bf16_from_double(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  cr_assert_eq(ir_bf16_from_double(-(1.0 + 0x1p-8 + 0x1p-40)), 0xbf81);
  /* past f32's range: inf; NaN stays NaN */
  cr_assert_eq(ir_bf16_from_double(1e300), 0x7f80);
  cr_assert_eq(ir_bf16_from_double(-1e300), 0xff80);
  cr_assert_eq(ir_bf16_from_double(f64_of(0x7ff8000000000001ull)) & 0x7fc0, 0x7fc0);
  /* tiny values round to zero or the smallest subnormal */
  cr_assert_eq(ir_bf16_from_double(1e-300), 0x0000);
  cr_assert_eq(ir_bf16_from_double(0x1p-133 * 1.5), 0x0002);
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
