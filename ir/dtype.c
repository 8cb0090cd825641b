/* dtype.c - names, sizes and classes of element types (dtype.h). */
#include "dtype.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
  const char *descr;
} dtypes[] = {
#define X(e, s, n, d) {s, n, d},
    IR_DTYPE_LIST(X)
#undef X
};

const char *ir_dtype_name(ir_dtype t) {
  return (unsigned)t < IR_DT_COUNT ? dtypes[t].name : "?";
}

bool ir_dtype_from_name(const char *s, size_t n, ir_dtype *out) {
  for (int i = 0; i < IR_DT_COUNT; i++) {
    if (strlen(dtypes[i].name) == n && memcmp(dtypes[i].name, s, n) == 0) {
      *out = (ir_dtype)i;
      return true;
    }
  }
  return false;
}

size_t ir_dtype_size(ir_dtype t) { return (unsigned)t < IR_DT_COUNT ? dtypes[t].size : 0; }

const char *ir_dtype_numpy_descr(ir_dtype t) {
  return (unsigned)t < IR_DT_COUNT ? dtypes[t].descr : NULL;
}

bool ir_dtype_is_float(ir_dtype t) {
  return t == IR_DT_F16 || t == IR_DT_BF16 || t == IR_DT_F32 || t == IR_DT_F64 ||
         t == IR_DT_F8E4M3FN || t == IR_DT_F8E4M3FNUZ || t == IR_DT_F8E5M2 ||
         t == IR_DT_F8E5M2FNUZ;
}

bool ir_dtype_is_int(ir_dtype t) { return t >= IR_DT_SI8 && t <= IR_DT_UI64; }

bool ir_dtype_is_signed(ir_dtype t) { return t >= IR_DT_SI8 && t <= IR_DT_SI64; }

bool ir_dtype_is_compute(ir_dtype t) {
  return t == IR_DT_BOOL || t == IR_DT_SI32 || t == IR_DT_SI64 || t == IR_DT_F32 ||
         t == IR_DT_F64;
}

bool ir_dtype_is_half(ir_dtype t) { return t == IR_DT_F16 || t == IR_DT_BF16; }

ir_dtype ir_dtype_widened(ir_dtype t) {
  switch (t) {
  case IR_DT_F16:
  case IR_DT_BF16: return IR_DT_F32;
  case IR_DT_SI8:
  case IR_DT_SI16:
  case IR_DT_UI8:
  case IR_DT_UI16: return IR_DT_SI32;
  case IR_DT_UI32: return IR_DT_SI64;
  default: return t;
  }
}

bool ir_dtype_is_narrow(ir_dtype t) { return ir_dtype_widened(t) != t; }

bool ir_dtype_is_castable(ir_dtype t) {
  return t == IR_DT_BOOL || ir_dtype_is_int(t) || ir_dtype_is_float(t);
}

bool ir_float8_format_of(ir_dtype t, ir_float8_format *f) {
  switch (t) {
  case IR_DT_F8E4M3FN: *f = (ir_float8_format){3, -6, 0x7E, 448.0, false, false}; return true;
  case IR_DT_F8E4M3FNUZ: *f = (ir_float8_format){3, -7, 0x7F, 240.0, false, true}; return true;
  case IR_DT_F8E5M2: *f = (ir_float8_format){2, -14, 0x7B, 57344.0, true, false}; return true;
  case IR_DT_F8E5M2FNUZ: *f = (ir_float8_format){2, -15, 0x7F, 57344.0, false, true}; return true;
  default: return false;
  }
}
