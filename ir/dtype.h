/* dtype.h - element types: every MAX dtype, its MO spelling and size.
 *
 * The order of IR_DTYPE_LIST is ABI: include/kiln/kiln.h's kiln_dtype has
 * the same values (src/ checks this with static asserts). */
#ifndef KILN_IR_DTYPE_H
#define KILN_IR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

/* X(enum, MO spelling, size in bytes, numpy descr or NULL) */
#define IR_DTYPE_LIST(X)                    \
  X(BOOL, "bool", 1, "|b1")                 \
  X(SI8, "si8", 1, "|i1")                   \
  X(SI16, "si16", 2, "<i2")                 \
  X(SI32, "si32", 4, "<i4")                 \
  X(SI64, "si64", 8, "<i8")                 \
  X(UI8, "ui8", 1, "|u1")                   \
  X(UI16, "ui16", 2, "<u2")                 \
  X(UI32, "ui32", 4, "<u4")                 \
  X(UI64, "ui64", 8, "<u8")                 \
  X(F16, "f16", 2, "<f2")                   \
  X(BF16, "bf16", 2, NULL)                  \
  X(F32, "f32", 4, "<f4")                   \
  X(F64, "f64", 8, "<f8")                   \
  X(F8E4M3FN, "f8e4m3fn", 1, NULL)          \
  X(F8E4M3FNUZ, "f8e4m3fnuz", 1, NULL)      \
  X(F8E5M2, "f8e5m2", 1, NULL)              \
  X(F8E5M2FNUZ, "f8e5m2fnuz", 1, NULL)

typedef enum ir_dtype {
#define X(e, s, n, d) IR_DT_##e,
  IR_DTYPE_LIST(X)
#undef X
  IR_DT_COUNT
} ir_dtype;

const char *ir_dtype_name(ir_dtype t);            /* "f32"; "?" if out of range */
bool ir_dtype_from_name(const char *s, size_t n, ir_dtype *out);
size_t ir_dtype_size(ir_dtype t);
const char *ir_dtype_numpy_descr(ir_dtype t);     /* "<f4" or NULL */

bool ir_dtype_is_float(ir_dtype t);   /* f16 bf16 f32 f64 and float8 kinds */
bool ir_dtype_is_int(ir_dtype t);     /* signed or unsigned integers, not bool */
bool ir_dtype_is_signed(ir_dtype t);  /* signed ints */
/* The dtypes compute kernels support (the rest are storage-only: they may be
 * moved, reshaped, sliced, gathered and cast, but not computed on). */
bool ir_dtype_is_compute(ir_dtype t); /* bool si32 si64 f32 f64 */
/* f16 and bf16: float ops take them and compute in f32, rounding each result
 * once to nearest even (ir_node_computes_narrow, widen_narrow.c). */
bool ir_dtype_is_half(ir_dtype t);
/* The narrow dtypes ops compute on through a wider one (widen_narrow.c):
 * f16 / bf16 -> f32; si8 / si16 / ui8 / ui16 -> si32; ui32 -> si64 (every
 * value exact in the wider type, so each op's result there, wrapped or
 * rounded back once, is its meaning). ir_dtype_widened gives the wider type,
 * or t itself for a dtype that is not narrow (ui64 has none: storage only). */
bool ir_dtype_is_narrow(ir_dtype t);
ir_dtype ir_dtype_widened(ir_dtype t);
/* Types cast can read and write: bool, every integer, every float (float8
 * kinds included: they are only cast, never computed on). */
bool ir_dtype_is_castable(ir_dtype t);

/* The four float8 encodings: sign, exponent, `mbits` mantissa bits; the
 * smallest normal is 2^emin; `max_bits` encodes the largest finite value
 * (`max`). fn kinds have no infinity (e4m3fn's NaN is S.1111.111); e5m2 has
 * IEEE infinities (S.11111.00) and NaNs; fnuz kinds have one NaN (0x80) and
 * no negative zero or infinity. A cast into one rounds to nearest even and
 * saturates: a finite value past `max` (or an infinity where the kind has
 * none) becomes +-max; NaN stays NaN. */
typedef struct ir_float8_format {
  int mbits, emin;
  unsigned max_bits;
  double max;
  bool has_inf, fnuz;
} ir_float8_format;
/* t's format into *f; false when t is not a float8 kind. */
bool ir_float8_format_of(ir_dtype t, ir_float8_format *f);

#endif
