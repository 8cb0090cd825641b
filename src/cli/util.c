/* util.c - helpers shared by the CLI commands: seeded random fill, printing
 * a tensor's first values, mkdir -p. The PRNG is splitmix64, so a seed gives
 * the same values on every machine. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { /* [-1, 1) */
  return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xFF, m = x & 0x7FFFFF;
  if (e == 0xFF) return (uint16_t)(sign | 0x7C00 | (m ? 0x200 : 0));
  int ne = (int)e - 127 + 15;
  if (ne >= 31) return (uint16_t)(sign | 0x7C00);
  if (ne <= 0) { /* subnormal or zero */
    if (ne < -10) return (uint16_t)sign;
    m |= 0x800000;
    int shift = 14 - ne;
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = (uint32_t)ne << 10 | m >> 13, rem = m & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: fine */
  return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF, x;
  if (e == 0) {
    float f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  if (e == 31) x = sign | 0x7F800000 | (m << 13);
  else x = sign | ((e - 15 + 127) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

void cli_fill_random(kiln_tensor *t, uint64_t *state) {
  int64_t n = kiln_tensor_numel(t);
  void *d = kiln_tensor_data(t);
  for (int64_t i = 0; i < n; i++) {
    switch (kiln_tensor_dtype(t)) {
    case KILN_BOOL: ((uint8_t *)d)[i] = (uint8_t)(next(state) & 1); break;
    case KILN_INT8: ((int8_t *)d)[i] = (int8_t)(next(state) % 10); break;
    case KILN_INT16: ((int16_t *)d)[i] = (int16_t)(next(state) % 10); break;
    case KILN_INT32: ((int32_t *)d)[i] = (int32_t)(next(state) % 10); break;
    case KILN_INT64: ((int64_t *)d)[i] = (int64_t)(next(state) % 10); break;
    case KILN_UINT8: ((uint8_t *)d)[i] = (uint8_t)(next(state) % 10); break;
    case KILN_UINT16: ((uint16_t *)d)[i] = (uint16_t)(next(state) % 10); break;
    case KILN_UINT32: ((uint32_t *)d)[i] = (uint32_t)(next(state) % 10); break;
    case KILN_UINT64: ((uint64_t *)d)[i] = next(state) % 10; break;
    case KILN_FLOAT16: ((uint16_t *)d)[i] = f32_to_f16((float)uniform(state)); break;
    case KILN_BFLOAT16: ((uint16_t *)d)[i] = f32_to_bf16((float)uniform(state)); break;
    case KILN_FLOAT32: ((float *)d)[i] = (float)uniform(state); break;
    case KILN_FLOAT64: ((double *)d)[i] = uniform(state); break;
    default: /* float8 kinds: a small positive value in every encoding */
      ((uint8_t *)d)[i] = (uint8_t)(0x20 + next(state) % 16);
      break;
    }
  }
}

static void print_value(FILE *out, const kiln_tensor *t, int64_t i) {
  const void *d = kiln_tensor_data(t);
  switch (kiln_tensor_dtype(t)) {
  case KILN_BOOL: fputs(((const uint8_t *)d)[i] ? "true" : "false", out); break;
  case KILN_INT8: fprintf(out, "%d", ((const int8_t *)d)[i]); break;
  case KILN_INT16: fprintf(out, "%d", ((const int16_t *)d)[i]); break;
  case KILN_INT32: fprintf(out, "%d", ((const int32_t *)d)[i]); break;
  case KILN_INT64: fprintf(out, "%lld", (long long)((const int64_t *)d)[i]); break;
  case KILN_UINT8: fprintf(out, "%u", ((const uint8_t *)d)[i]); break;
  case KILN_UINT16: fprintf(out, "%u", ((const uint16_t *)d)[i]); break;
  case KILN_UINT32: fprintf(out, "%u", ((const uint32_t *)d)[i]); break;
  case KILN_UINT64: fprintf(out, "%llu", (unsigned long long)((const uint64_t *)d)[i]); break;
  case KILN_FLOAT16: fprintf(out, "%.6g", f16_to_f32(((const uint16_t *)d)[i])); break;
  case KILN_BFLOAT16: fprintf(out, "%.4g", bf16_to_f32(((const uint16_t *)d)[i])); break;
  case KILN_FLOAT32: fprintf(out, "%.6g", ((const float *)d)[i]); break;
  case KILN_FLOAT64: fprintf(out, "%.10g", ((const double *)d)[i]); break;
  default: fprintf(out, "0x%02x", ((const uint8_t *)d)[i]); break;
  }
}

void cli_print_tensor(FILE *out, const kiln_tensor *t, int max) {
  fprintf(out, "%s [", kiln_dtype_name(kiln_tensor_dtype(t)));
  for (int a = 0; a < kiln_tensor_rank(t); a++)
    fprintf(out, "%s%lld", a ? ", " : "", (long long)kiln_tensor_shape(t)[a]);
  fputs("] = [", out);
  int64_t n = kiln_tensor_numel(t);
  for (int64_t i = 0; i < n && i < max; i++) {
    if (i) fputs(", ", out);
    print_value(out, t, i);
  }
  if (n > max) fprintf(out, ", ... (%lld values)", (long long)n);
  fputs("]\n", out);
}

int cli_mkdirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    buf[i] = c;
  }
  struct stat sb;
  if (stat(path, &sb) != 0) return -1;
  if (!S_ISDIR(sb.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}
