/* npy.c - numpy .npy files (io.h).
 *
 * The header is a Python dict literal; we accept exactly what numpy writes
 * and reads: the keys 'descr', 'fortran_order' and 'shape' (no others),
 * string / True / False / tuple-of-int values, trailing commas, spaces, and
 * a terminating newline. The data must be exactly numel * itemsize bytes.
 * A NUL byte inside a header string is rejected (it would otherwise cut
 * 'descr' short: "<f4\0junk" must not read as "<f4").
 * Files are read with stdio straight into the tensor (no double copy). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_header {
  kiln_dtype dtype;
  int rank;
  int64_t shape[IR_MAX_RANK];
} npy_header;

typedef struct hp {
  const char *s;
  size_t len, pos;
  const char *what;
  kiln_status *st;
} hp;

static int hfail(hp *p, const char *msg) {
  return rt_err(p->st, KILN_ERR_IO, "%s: malformed .npy header at byte %zu: %s", p->what, p->pos,
                msg);
}

static void hws(hp *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n'))
    p->pos++;
}

static bool hchar(hp *p, char c) {
  hws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return true;
  }
  return false;
}

/* A quoted string into buf (no escapes: numpy headers never need them). */
static int hstring(hp *p, char *buf, size_t cap) {
  hws(p);
  if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
    return hfail(p, "expected a quoted string");
  char q = p->s[p->pos++];
  size_t n = 0;
  while (p->pos < p->len && p->s[p->pos] != q) {
    if (p->s[p->pos] == '\\') return hfail(p, "escapes are not supported in header strings");
    if (p->s[p->pos] == '\0') return hfail(p, "NUL byte in a header string");
    if (n + 1 >= cap) return hfail(p, "string too long");
    buf[n++] = p->s[p->pos++];
  }
  if (p->pos >= p->len) return hfail(p, "unterminated string");
  p->pos++;
  buf[n] = 0;
  return 0;
}

static int hshape(hp *p, npy_header *h) {
  if (!hchar(p, '(')) return hfail(p, "expected '(' for the shape");
  h->rank = 0;
  for (;;) {
    if (hchar(p, ')')) return 0;
    hws(p);
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
      return hfail(p, "expected a non-negative integer in the shape");
    int64_t v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
      int d = p->s[p->pos++] - '0';
      if (v > (INT64_MAX - d) / 10) return hfail(p, "shape entry too large");
      v = v * 10 + d;
    }
    if (p->pos < p->len && p->s[p->pos] == 'L') p->pos++; /* Python 2 long */
    if (h->rank == IR_MAX_RANK) return hfail(p, "rank above 16 is not supported");
    h->shape[h->rank++] = v;
    if (hchar(p, ',')) continue;
    if (hchar(p, ')')) return 0;
    return hfail(p, "expected ',' or ')' in the shape");
  }
}

static int descr_dtype(hp *p, const char *d, kiln_dtype *out) {
  if (strlen(d) < 2) return hfail(p, "empty dtype");
  char order = d[0];
  const char *code = d + 1;
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    order = '=';
    code = d;
  }
  for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
    const char *nd = ir_dtype_numpy_descr((ir_dtype)t);
    if (!nd || strcmp(nd + 1, code) != 0) continue;
    if (order == '>' && ir_dtype_size((ir_dtype)t) > 1)
      return rt_err(p->st, KILN_ERR_UNSUPPORTED,
                    "%s: big-endian .npy data ('%s') is not supported; save it little-endian",
                    p->what, d);
    *out = (kiln_dtype)t;
    return 0;
  }
  return rt_err(p->st, KILN_ERR_UNSUPPORTED,
                "%s: .npy dtype '%s' is not supported (bool, int8-64, uint8-64, f2, f4, f8)",
                p->what, d);
}

static int parse_header(const char *s, size_t len, const char *what, npy_header *h,
                        kiln_status *st) {
  hp p = {s, len, 0, what, st};
  bool have_descr = false, have_fortran = false, have_shape = false;
  char descr[64] = "";
  if (!hchar(&p, '{')) return hfail(&p, "expected '{'");
  for (;;) {
    if (hchar(&p, '}')) break;
    char key[32];
    if (hstring(&p, key, sizeof key) < 0) return -1;
    if (!hchar(&p, ':')) return hfail(&p, "expected ':'");
    if (strcmp(key, "descr") == 0 && !have_descr) {
      hws(&p);
      if (p.pos < p.len && p.s[p.pos] == '[')
        return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: structured .npy dtypes are not supported",
                      what);
      if (hstring(&p, descr, sizeof descr) < 0) return -1;
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0 && !have_fortran) {
      hws(&p);
      if (p.len - p.pos >= 4 && memcmp(p.s + p.pos, "True", 4) == 0) {
        return rt_err(st, KILN_ERR_UNSUPPORTED,
                      "%s: fortran_order is True; only C-order .npy files are supported "
                      "(save with np.ascontiguousarray)",
                      what);
      } else if (p.len - p.pos >= 5 && memcmp(p.s + p.pos, "False", 5) == 0) {
        p.pos += 5;
      } else {
        return hfail(&p, "fortran_order must be True or False");
      }
      have_fortran = true;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      if (hshape(&p, h) < 0) return -1;
      have_shape = true;
    } else {
      return hfail(&p, "unexpected or repeated key (expected 'descr', 'fortran_order', 'shape')");
    }
    if (hchar(&p, ',')) continue;
    if (hchar(&p, '}')) break;
    return hfail(&p, "expected ',' or '}'");
  }
  hws(&p);
  if (p.pos != p.len) return hfail(&p, "unexpected text after the header dict");
  if (!have_descr || !have_fortran || !have_shape)
    return hfail(&p, !have_descr ? "missing 'descr'" : !have_shape ? "missing 'shape'"
                                                                    : "missing 'fortran_order'");
  return descr_dtype(&p, descr, &h->dtype);
}

/* The fixed prelude: magic, version, header length. Returns the header
 * offset (10 or 12) or -1. */
static int prelude(const unsigned char *b, size_t have, const char *what, uint32_t *hlen,
                   kiln_status *st) {
  if (have < 8 || memcmp(b, magic, 6) != 0)
    return rt_err(st, KILN_ERR_IO, "%s: not a .npy file (bad magic; expected \\x93NUMPY)", what);
  int major = b[6];
  if (major == 1) {
    if (have < 10) return rt_err(st, KILN_ERR_IO, "%s: truncated .npy header", what);
    *hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8;
    return 10;
  }
  if (major == 2 || major == 3) {
    if (have < 12) return rt_err(st, KILN_ERR_IO, "%s: truncated .npy header", what);
    *hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
    return 12;
  }
  return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported", what,
                major, b[7]);
}

/* The data after the header must be exactly what the shape and dtype need:
 * checked before anything is allocated, so a small file claiming a huge
 * shape is an error, not a huge allocation. */
static int check_data_size(const npy_header *h, size_t have, const char *what, kiln_status *st) {
  int64_t numel;
  size_t need;
  if (rt_shape_bytes(h->dtype, h->rank, h->shape, &numel, &need, st) < 0) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", kiln_status_message(st));
    return rt_err(st, KILN_ERR_IO, "%s: %s", what, msg);
  }
  if (have != need)
    return rt_err(st, KILN_ERR_IO, "%s: .npy data is %zu bytes, shape and dtype need %zu", what,
                  have, need);
  return 0;
}

kiln_tensor *rt_npy_decode(const void *buf, size_t len, const char *what, kiln_status *st) {
  const unsigned char *b = buf;
  uint32_t hlen = 0;
  int off = prelude(b, len, what, &hlen, st);
  if (off < 0) return NULL;
  if (hlen > len - (size_t)off) {
    rt_err(st, KILN_ERR_IO, "%s: truncated .npy header (%u header bytes, file has %zu)", what,
           hlen, len - (size_t)off);
    return NULL;
  }
  npy_header h;
  if (parse_header((const char *)b + off, hlen, what, &h, st) < 0) return NULL;
  if (check_data_size(&h, len - (size_t)off - hlen, what, st) < 0) return NULL;
  kiln_tensor *t = rt_tensor_alloc(h.dtype, h.rank, h.shape, st);
  if (!t) return NULL;
  if (t->nbytes) memcpy(t->data, b + off + hlen, t->nbytes);
  rt_ok(st);
  return t;
}

kiln_tensor *rt_npy_read(const char *path, kiln_status *st) {
  FILE *f = rt_fopen_regular(path, NULL, st);
  if (!f) return NULL;
  kiln_tensor *t = NULL;
  char *hdr = NULL;
  unsigned char pre[12];
  size_t got = fread(pre, 1, sizeof pre, f);
  uint32_t hlen = 0;
  int off = prelude(pre, got, path, &hlen, st);
  if (off < 0) goto done;
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || sb.st_size < off) {
    rt_err(st, KILN_ERR_IO, "%s: cannot stat the file", path);
    goto done;
  }
  size_t fsize = (size_t)sb.st_size;
  if (hlen > fsize - (size_t)off) {
    rt_err(st, KILN_ERR_IO, "%s: truncated .npy header (%u header bytes, file has %zu)", path, hlen,
           fsize - (size_t)off);
    goto done;
  }
  if (fseek(f, off, SEEK_SET) != 0 || !(hdr = malloc((size_t)hlen + 1))) {
    rt_err(st, KILN_ERR_IO, "%s: cannot read the .npy header", path);
    goto done;
  }
  if (fread(hdr, 1, hlen, f) != hlen) {
    rt_err(st, KILN_ERR_IO, "%s: truncated .npy header (expected %u bytes)", path, hlen);
    goto done;
  }
  npy_header h;
  if (parse_header(hdr, hlen, path, &h, st) < 0) goto done;
  if (check_data_size(&h, fsize - (size_t)off - hlen, path, st) < 0) goto done;
  if (!(t = rt_tensor_alloc(h.dtype, h.rank, h.shape, st))) goto done;
  size_t n = t->nbytes ? fread(t->data, 1, t->nbytes, f) : 0;
  if (n != t->nbytes) {
    rt_err(st, KILN_ERR_IO, "%s: .npy data is %zu bytes, shape and dtype need %zu", path, n,
           t->nbytes);
    kiln_tensor_free(t);
    t = NULL;
    goto done;
  }
  if (fgetc(f) != EOF) {
    rt_err(st, KILN_ERR_IO, "%s: .npy file has data past the %zu bytes shape and dtype need", path,
           t->nbytes);
    kiln_tensor_free(t);
    t = NULL;
    goto done;
  }
  rt_ok(st);
done:
  free(hdr);
  fclose(f);
  return t;
}

void *rt_npy_encode(const kiln_tensor *t, size_t *len, kiln_status *st) {
  if (!t) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "npy: tensor is NULL");
    return NULL;
  }
  const char *descr = ir_dtype_numpy_descr((ir_dtype)t->dtype);
  if (!descr) {
    rt_err(st, KILN_ERR_UNSUPPORTED, "%s has no numpy dtype; cast it (e.g. to f32) to save as .npy",
           kiln_dtype_name(t->dtype));
    return NULL;
  }
  size_t cap = 96 + (size_t)t->rank * 24, n = 0;
  char *dict = malloc(cap);
  if (!dict) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  n += (size_t)snprintf(dict + n, cap - n, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                        descr);
  for (int i = 0; i < t->rank; i++)
    n += (size_t)snprintf(dict + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  n += (size_t)snprintf(dict + n, cap - n, "%s), }", t->rank == 1 ? "," : "");
  /* pad with spaces so that data starts at a multiple of 64, then '\n' */
  size_t pre = n + 64 <= 65535 ? 10 : 12; /* v1 header length is a u16 */
  size_t total = (pre + n + 1 + 63) / 64 * 64;
  size_t hlen = total - pre;
  char *out = malloc(total + t->nbytes);
  if (!out) {
    free(dict);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  memcpy(out, magic, 6);
  out[6] = pre == 10 ? 1 : 2;
  out[7] = 0;
  for (size_t k = 0; k < pre - 8; k++) out[8 + k] = (char)((hlen >> (8 * k)) & 0xFF);
  memcpy(out + pre, dict, n);
  memset(out + pre + n, ' ', hlen - n - 1);
  out[total - 1] = '\n';
  if (t->nbytes) memcpy(out + total, t->data, t->nbytes);
  free(dict);
  *len = total + t->nbytes;
  rt_ok(st);
  return out;
}

int rt_npy_write(const char *path, const kiln_tensor *t, kiln_status *st) {
  size_t len;
  void *buf = rt_npy_encode(t, &len, st);
  if (!buf) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) {
    int e = errno;
    free(buf);
    return rt_err(st, KILN_ERR_IO, "%s: cannot create: %s", path, strerror(e));
  }
  size_t w = fwrite(buf, 1, len, f);
  free(buf);
  int bad = w != len;
  if (fclose(f) != 0) bad = 1;
  if (bad) return rt_err(st, KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
  rt_ok(st);
  return 0;
}
