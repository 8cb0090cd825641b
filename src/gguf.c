/* gguf.c - GGUF files (io.h): llama.cpp's single-file weights, mapped
 * read-only and validated in full at open, so rt_gguf_tensor can never read
 * outside the file.
 *
 * Layout (little-endian, GGUF v2 and v3 share it): "GGUF", u32 version,
 * u64 tensor count, u64 metadata count; metadata key/value pairs (a string
 * key, a u32 value type, the value: 8-64 bit ints, f32, f64, bool, string =
 * u64 length + bytes, array = u32 element type + u64 count + elements);
 * tensor infos (name, u32 rank <= 4, u64 dims innermost first, u32 ggml
 * type, u64 offset into the data section); padding to `general.alignment`
 * (a u32 power of two, default 32); the data section.
 *
 * What open enforces: every length and count fits in what is left of the
 * file before anything is allocated for it (so a forged count cannot make
 * it allocate or loop beyond the file's size), arithmetic is overflow
 * checked, value types are known (arrays nest at most 8 deep), keys and
 * tensor names are unique and hold no NUL, tensor types are ones kiln reads
 * (f32, f16, bf16, q4_0, q8_0, q4_k, q5_k, q6_k), a block type's innermost
 * dim is a multiple of its block, offsets are aligned, and the tensors'
 * bytes lie inside the data section without overlapping. Errors name the
 * file, the byte offset or tensor, and what is wrong.
 *
 * kiln's view of a tensor: GGUF dims reversed (row-major, outermost
 * first); a block-quantized tensor is uint8 with its innermost dim in bytes
 * ([N, K] of q4_0 is [N, K / 32 * 18]), the operand MAX's qmatmul and
 * dequantize take. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ir/qblock.h"
#include "io.h"
#include "name_map.h"

enum { GG_MAX_DIMS = 4, GG_MAX_NEST = 8 };

/* metadata value types */
enum {
  GV_U8, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL, GV_STRING, GV_ARRAY,
  GV_U64, GV_I64, GV_F64, GV_COUNT
};

typedef struct gg_kv {
  char *key;
  uint32_t type;
  size_t at; /* file offset of the value */
} gg_kv;

typedef struct gg_tensor {
  char *name;
  uint32_t ggml_type;
  int rank;                 /* kiln's rank (= GGUF's n_dims) */
  int64_t shape[GG_MAX_DIMS]; /* kiln's shape (reversed, bytes innermost for blocks) */
  kiln_dtype dtype;
  int encoding; /* qb_encoding, or -1 for a plain float tensor */
  uint64_t offset, nbytes; /* relative to the data section */
} gg_tensor;

struct rt_gguf {
  char *path;
  const uint8_t *map;
  size_t size;
  uint32_t version;
  uint64_t alignment;
  size_t data_off;
  int n, nkv;
  gg_tensor *t;
  gg_kv *kv;
  rt_name_map index, kv_index;
};

/* ggml type ids kiln reads, and how. */
static const struct {
  uint32_t id;
  const char *name;
  kiln_dtype dtype;
  int encoding;
} gg_types[] = {
    {0, "f32", KILN_FLOAT32, -1},   {1, "f16", KILN_FLOAT16, -1},
    {30, "bf16", KILN_BFLOAT16, -1}, {2, "q4_0", KILN_UINT8, QB_Q4_0},
    {8, "q8_0", KILN_UINT8, QB_Q8_0}, {12, "q4_k", KILN_UINT8, QB_Q4_K},
    {13, "q5_k", KILN_UINT8, QB_Q5_K}, {14, "q6_k", KILN_UINT8, QB_Q6_K},
};

/* Names of ggml types kiln refuses, for the message. */
static const char *other_type_name(uint32_t id) {
  static const char *const names[] = {
      [3] = "q4_1",  [6] = "q5_0",   [7] = "q5_1",   [9] = "q8_1",    [10] = "q2_k",
      [11] = "q3_k", [15] = "q8_k",  [16] = "iq2_xxs", [17] = "iq2_xs", [18] = "iq3_xxs",
      [19] = "iq1_s", [20] = "iq4_nl", [21] = "iq3_s", [22] = "iq2_s", [23] = "iq4_xs",
      [24] = "i8",   [25] = "i16",   [26] = "i32",   [27] = "i64",    [28] = "f64",
      [29] = "iq1_m", [34] = "tq1_0", [35] = "tq2_0"};
  return id < sizeof names / sizeof names[0] && names[id] ? names[id] : "unknown";
}

void rt_gguf_close(rt_gguf *f) {
  if (!f) return;
  if (f->map) munmap((void *)f->map, f->size);
  rt_name_map_clear(&f->index);
  rt_name_map_clear(&f->kv_index);
  for (int i = 0; f->t && i < f->n; i++) free(f->t[i].name);
  for (int i = 0; f->kv && i < f->nkv; i++) free(f->kv[i].key);
  free(f->t);
  free(f->kv);
  free(f->path);
  free(f);
}

/* A cursor over the mapping; every read checks what is left. */
typedef struct gg_cur {
  rt_gguf *f;
  size_t pos;
  kiln_status *st;
} gg_cur;

static int bad_at(gg_cur *c, size_t at, const char *what) {
  return rt_err(c->st, KILN_ERR_IO, "%s: malformed GGUF file: %s (at byte %zu of %zu)",
                c->f->path, what, at, c->f->size);
}

static int need(gg_cur *c, uint64_t n, const char *what) {
  if (n > c->f->size - c->pos) {
    char m[160];
    snprintf(m, sizeof m, "truncated %s: %llu bytes needed, %zu left", what,
             (unsigned long long)n, c->f->size - c->pos);
    return bad_at(c, c->pos, m);
  }
  return 0;
}

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int rd(gg_cur *c, int n, uint64_t *out, const char *what) {
  if (need(c, (uint64_t)n, what) < 0) return -1;
  *out = le(c->f->map + c->pos, n);
  c->pos += (size_t)n;
  return 0;
}

/* A string: u64 length + bytes; *s points into the map. */
static int rd_str(gg_cur *c, const char **s, size_t *len, const char *what) {
  uint64_t n;
  if (rd(c, 8, &n, what) < 0 || need(c, n, what) < 0) return -1;
  *s = (const char *)c->f->map + c->pos;
  *len = (size_t)n;
  c->pos += (size_t)n;
  return 0;
}

/* A malloc'd NUL-terminated copy of a name; refuses embedded NULs. */
static char *rd_name(gg_cur *c, const char *what) {
  size_t at = c->pos, len;
  const char *s;
  if (rd_str(c, &s, &len, what) < 0) return NULL;
  if (memchr(s, 0, len)) {
    char m[96];
    snprintf(m, sizeof m, "%s holds a NUL byte", what);
    bad_at(c, at, m);
    return NULL;
  }
  char *out = malloc(len + 1);
  if (!out) {
    rt_err(c->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  memcpy(out, s, len);
  out[len] = 0;
  return out;
}

static int scalar_size(uint32_t type) {
  static const int sizes[GV_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return type < GV_COUNT ? sizes[type] : -1;
}

/* Skip one value of `type` (checking it), arrays nested at most GG_MAX_NEST. */
static int skip_value(gg_cur *c, uint32_t type, int depth) {
  char m[96];
  if (type >= GV_COUNT) {
    snprintf(m, sizeof m, "unknown metadata value type %u", type);
    return bad_at(c, c->pos - 4, m);
  }
  if (type == GV_STRING) {
    const char *s;
    size_t len;
    return rd_str(c, &s, &len, "metadata string");
  }
  if (type != GV_ARRAY) {
    if (type == GV_BOOL && need(c, 1, "metadata bool") == 0 && c->f->map[c->pos] > 1)
      return bad_at(c, c->pos, "metadata bool is neither 0 nor 1");
    if (need(c, (uint64_t)scalar_size(type), "metadata value") < 0) return -1;
    c->pos += (size_t)scalar_size(type);
    return 0;
  }
  if (depth >= GG_MAX_NEST) return bad_at(c, c->pos, "metadata arrays nest too deep");
  uint64_t et, count;
  if (rd(c, 4, &et, "array element type") < 0 || rd(c, 8, &count, "array length") < 0)
    return -1;
  if (et >= GV_COUNT) {
    snprintf(m, sizeof m, "unknown metadata array element type %llu", (unsigned long long)et);
    return bad_at(c, c->pos - 12, m);
  }
  int es = scalar_size((uint32_t)et);
  if (es > 0) {
    if (count > (c->f->size - c->pos) / (uint64_t)es)
      return bad_at(c, c->pos - 8, "truncated metadata array: its length runs past the end");
    if (et == GV_BOOL)
      for (uint64_t i = 0; i < count; i++)
        if (c->f->map[c->pos + i] > 1)
          return bad_at(c, c->pos + (size_t)i, "metadata bool is neither 0 nor 1");
    c->pos += (size_t)(count * (uint64_t)es);
    return 0;
  }
  /* strings take at least 8 bytes, arrays 12: a forged count fails fast */
  uint64_t least = et == GV_STRING ? 8 : 12;
  if (count > (c->f->size - c->pos) / least)
    return bad_at(c, c->pos - 8, "truncated metadata array: its length runs past the end");
  for (uint64_t i = 0; i < count; i++)
    if (skip_value(c, (uint32_t)et, depth + 1) < 0) return -1;
  return 0;
}

static int parse_kv(gg_cur *c, uint64_t nkv) {
  rt_gguf *f = c->f;
  /* a pair takes at least 8 (key length) + 4 (type) + 1 bytes */
  if (nkv > (f->size - c->pos) / 13 || nkv > (uint64_t)INT32_MAX) {
    char m[96];
    snprintf(m, sizeof m, "metadata count %llu cannot fit in the file", (unsigned long long)nkv);
    return bad_at(c, 16, m);
  }
  if (nkv && !(f->kv = calloc((size_t)nkv, sizeof *f->kv)))
    return rt_err(c->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (rt_name_map_reserve(&f->kv_index, (size_t)nkv) < 0)
    return rt_err(c->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (uint64_t i = 0; i < nkv; i++) {
    gg_kv *kv = &f->kv[i];
    size_t at = c->pos;
    if (!(kv->key = rd_name(c, "metadata key"))) return -1;
    f->nkv = (int)i + 1;
    uint64_t type;
    if (rd(c, 4, &type, "metadata value type") < 0) return -1;
    kv->type = (uint32_t)type;
    kv->at = c->pos;
    if (type > UINT32_MAX) return bad_at(c, c->pos - 4, "metadata value type");
    if (skip_value(c, kv->type, 0) < 0) return -1;
    int dup = rt_name_map_put(&f->kv_index, kv->key, strlen(kv->key), (int)i);
    if (dup == -2) return rt_err(c->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (dup >= 0) {
      char m[160];
      snprintf(m, sizeof m, "metadata key '%.100s' is given twice", kv->key);
      return bad_at(c, at, m);
    }
  }
  return 0;
}

static int bad_tensor(gg_cur *c, const gg_tensor *t, const char *what) {
  return rt_err(c->st, KILN_ERR_IO, "%s: malformed GGUF file: tensor '%s': %s", c->f->path,
                t->name, what);
}

static int parse_tensor(gg_cur *c, gg_tensor *t) {
  char m[192];
  uint64_t nd, type, ne[GG_MAX_DIMS];
  if (!(t->name = rd_name(c, "tensor name"))) return -1;
  if (rd(c, 4, &nd, "tensor rank") < 0) return -1;
  if (nd > GG_MAX_DIMS) {
    snprintf(m, sizeof m, "rank %llu (GGUF allows at most 4)", (unsigned long long)nd);
    return bad_tensor(c, t, m);
  }
  for (uint64_t d = 0; d < nd; d++)
    if (rd(c, 8, &ne[d], "tensor dims") < 0) return -1;
  if (rd(c, 4, &type, "tensor type") < 0 || rd(c, 8, &t->offset, "tensor offset") < 0) return -1;
  size_t k = 0, ntypes = sizeof gg_types / sizeof gg_types[0];
  while (k < ntypes && gg_types[k].id != type) k++;
  if (k == ntypes)
    return rt_err(c->st, KILN_ERR_UNSUPPORTED,
                  "%s: tensor '%s': unsupported GGML type %llu (%s; kiln reads f32, f16, bf16, "
                  "q4_0, q8_0, q4_k, q5_k, q6_k)",
                  c->f->path, t->name, (unsigned long long)type, other_type_name((uint32_t)type));
  t->ggml_type = (uint32_t)type;
  t->dtype = gg_types[k].dtype;
  t->encoding = gg_types[k].encoding;
  t->rank = (int)nd;
  /* element count and bytes, overflow checked (dims < 2^62 each) */
  uint64_t numel = 1;
  for (uint64_t d = 0; d < nd; d++) {
    if (ne[d] > (uint64_t)INT64_MAX / 4 || (ne[d] && numel > UINT64_MAX / 4 / ne[d]))
      return bad_tensor(c, t, "dims are too large");
    numel *= ne[d];
    t->shape[nd - 1 - d] = (int64_t)ne[d];
  }
  if (t->encoding >= 0) {
    int be = QB_ELEMS(t->encoding), bb = QB_BYTES(t->encoding);
    if (nd == 0 || ne[0] % (uint64_t)be) {
      snprintf(m, sizeof m, "innermost dim %llu is not a multiple of %s's block of %d",
               nd ? (unsigned long long)ne[0] : 1ull, gg_types[k].name, be);
      return bad_tensor(c, t, m);
    }
    t->shape[nd - 1] = (int64_t)(ne[0] / (uint64_t)be * (uint64_t)bb);
    t->nbytes = numel / (uint64_t)be * (uint64_t)bb;
  } else {
    t->nbytes = numel * kiln_dtype_size(t->dtype);
  }
  if (t->offset % c->f->alignment) {
    snprintf(m, sizeof m, "offset %llu is not a multiple of the alignment %llu",
             (unsigned long long)t->offset, (unsigned long long)c->f->alignment);
    return bad_tensor(c, t, m);
  }
  return 0;
}

static int span_cmp(const void *a, const void *b) {
  const gg_tensor *x = *(const gg_tensor *const *)a, *y = *(const gg_tensor *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Every tensor inside the data section, none overlapping another. */
static int check_spans(gg_cur *c) {
  rt_gguf *f = c->f;
  uint64_t datasize = f->size - f->data_off;
  for (int i = 0; i < f->n; i++) {
    gg_tensor *t = &f->t[i];
    if (t->offset > datasize || t->nbytes > datasize - t->offset) {
      char m[192];
      snprintf(m, sizeof m,
               "data runs past the end of the file (offset %llu + %llu bytes, data section "
               "is %llu bytes)",
               (unsigned long long)t->offset, (unsigned long long)t->nbytes,
               (unsigned long long)datasize);
      return bad_tensor(c, t, m);
    }
  }
  size_t n = f->n > 0 ? (size_t)f->n : 1;
  gg_tensor **order = malloc(sizeof *order * n);
  if (!order) return rt_err(c->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < f->n; i++) order[i] = &f->t[i];
  qsort(order, (size_t)f->n, sizeof *order, span_cmp);
  int rc = 0;
  for (int i = 1; i < f->n && rc == 0; i++) {
    const gg_tensor *p = order[i - 1], *t = order[i];
    if (p->nbytes && t->nbytes && t->offset < p->offset + p->nbytes) {
      char m[192];
      snprintf(m, sizeof m, "its data overlaps tensor '%.100s'", p->name);
      rc = bad_tensor(c, t, m);
    }
  }
  free(order);
  return rc;
}

static int parse(rt_gguf *f, kiln_status *st) {
  gg_cur c = {.f = f, .pos = 0, .st = st};
  uint64_t version, nt, nkv;
  if (f->size < 4 || memcmp(f->map, "GGUF", 4) != 0)
    return rt_err(st, KILN_ERR_IO, "%s: not a GGUF file (the file does not start with 'GGUF')",
                  f->path);
  c.pos = 4;
  if (rd(&c, 4, &version, "header") < 0) return -1;
  if (version != 2 && version != 3) {
    if ((version & 0xffff) == 0 && version)
      return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: big-endian GGUF files are not supported",
                    f->path);
    return rt_err(st, KILN_ERR_UNSUPPORTED,
                  "%s: unsupported GGUF version %llu (kiln reads versions 2 and 3)", f->path,
                  (unsigned long long)version);
  }
  f->version = (uint32_t)version;
  if (rd(&c, 8, &nt, "header") < 0 || rd(&c, 8, &nkv, "header") < 0) return -1;
  if (parse_kv(&c, nkv) < 0) return -1;
  f->alignment = 32;
  int ai = rt_name_map_get(&f->kv_index, "general.alignment", 17);
  if (ai >= 0) {
    const gg_kv *kv = &f->kv[ai];
    uint64_t a = kv->type == GV_U32 ? le(f->map + kv->at, 4) : 0;
    if (kv->type != GV_U32 || a == 0 || (a & (a - 1)))
      return rt_err(st, KILN_ERR_IO,
                    "%s: malformed GGUF file: general.alignment must be a u32 power of two",
                    f->path);
    f->alignment = a;
  }
  /* a tensor info takes at least 8 + 4 + 4 + 8 bytes */
  if (nt > (f->size - c.pos) / 24 || nt > (uint64_t)INT32_MAX) {
    char m[96];
    snprintf(m, sizeof m, "tensor count %llu cannot fit in the file", (unsigned long long)nt);
    return bad_at(&c, 8, m);
  }
  if (nt && !(f->t = calloc((size_t)nt, sizeof *f->t)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (rt_name_map_reserve(&f->index, (size_t)nt) < 0)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (uint64_t i = 0; i < nt; i++) {
    f->n = (int)i + 1;
    if (parse_tensor(&c, &f->t[i]) < 0) return -1;
    int dup = rt_name_map_put(&f->index, f->t[i].name, strlen(f->t[i].name), (int)i);
    if (dup == -2) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (dup >= 0) return bad_tensor(&c, &f->t[i], "the name is given twice");
  }
  size_t pad = (size_t)((f->alignment - c.pos % f->alignment) % f->alignment);
  if (nt && pad > f->size - c.pos) return need(&c, pad, "padding before the data section");
  f->data_off = nt ? c.pos + pad : c.pos;
  return check_spans(&c);
}

rt_gguf *rt_gguf_open(const char *path, kiln_status *st) {
  rt_gguf *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(path ? path : "(null)"))) {
    free(f);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  /* O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it) */
  int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, "%s: cannot open: %s",
           f->path, strerror(errno));
    rt_gguf_close(f);
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    rt_err(st, KILN_ERR_IO, "%s: not a regular file", f->path);
    close(fd);
    rt_gguf_close(f);
    return NULL;
  }
  f->size = (size_t)sb.st_size;
  if (f->size > 0) {
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      rt_err(st, KILN_ERR_IO, "%s: cannot map: %s", f->path, strerror(errno));
      close(fd);
      rt_gguf_close(f);
      return NULL;
    }
    f->map = p;
  }
  close(fd);
  if (parse(f, st) < 0) {
    rt_gguf_close(f);
    return NULL;
  }
  rt_ok(st);
  return f;
}

int rt_gguf_count(const rt_gguf *f) { return f ? f->n : 0; }

const char *rt_gguf_name(const rt_gguf *f, int i) {
  return f && i >= 0 && i < f->n ? f->t[i].name : NULL;
}

int rt_gguf_find(const rt_gguf *f, const char *name) {
  return f && name ? rt_name_map_get(&f->index, name, strlen(name)) : -1;
}

const char *rt_gguf_encoding(const rt_gguf *f, int i) {
  if (!f || i < 0 || i >= f->n || f->t[i].encoding < 0) return NULL;
  return qb_name((qb_encoding)f->t[i].encoding);
}

kiln_tensor *rt_gguf_tensor(const rt_gguf *f, int i, kiln_status *st) {
  if (!f || i < 0 || i >= f->n) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "no tensor %d in the GGUF file", i);
    return NULL;
  }
  const gg_tensor *t = &f->t[i];
  const uint8_t *data = f->map ? f->map + f->data_off + t->offset : NULL;
  size_t es = kiln_dtype_size(t->dtype);
  if (data && (uintptr_t)data % es == 0)
    return kiln_tensor_borrow(t->dtype, t->rank, t->shape, (void *)data, st);
  kiln_tensor *out = rt_tensor_alloc(t->dtype, t->rank, t->shape, st);
  if (!out) return NULL;
  if (out->nbytes) memcpy(out->data, data, out->nbytes);
  rt_ok(st);
  return out;
}

const void *rt_gguf_bytes(const rt_gguf *f, int i, size_t *len) {
  *len = 0;
  if (!f || !f->map || i < 0 || i >= f->n) return NULL;
  const gg_tensor *t = &f->t[i];
  *len = (size_t)t->nbytes;
  return f->map + f->data_off + t->offset;
}

int rt_gguf_meta_count(const rt_gguf *f) { return f ? f->nkv : 0; }

const char *rt_gguf_meta_key(const rt_gguf *f, int i) {
  return f && i >= 0 && i < f->nkv ? f->kv[i].key : NULL;
}

int rt_gguf_meta_find(const rt_gguf *f, const char *key) {
  return f && key ? rt_name_map_get(&f->kv_index, key, strlen(key)) : -1;
}

int rt_gguf_meta_int(const rt_gguf *f, int i, int64_t *out) {
  if (!f || i < 0 || i >= f->nkv) return -1;
  const gg_kv *kv = &f->kv[i];
  const uint8_t *p = f->map + kv->at;
  int n = scalar_size(kv->type);
  if (kv->type == GV_F32 || kv->type == GV_F64 || n <= 0) return -1;
  uint64_t v = le(p, n);
  bool is_signed = kv->type == GV_I8 || kv->type == GV_I16 || kv->type == GV_I32 ||
                   kv->type == GV_I64;
  if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ull << (8 * n); /* sign-extend */
  if (!is_signed && v > (uint64_t)INT64_MAX) return -1;
  *out = (int64_t)v;
  return 0;
}

const char *rt_gguf_meta_string(const rt_gguf *f, int i, size_t *len) {
  if (!f || i < 0 || i >= f->nkv || f->kv[i].type != GV_STRING) return NULL;
  const uint8_t *p = f->map + f->kv[i].at;
  *len = (size_t)le(p, 8);
  return (const char *)p + 8;
}

int rt_gguf_meta_array(const rt_gguf *f, int i, int *elem_type, uint64_t *count) {
  if (!f || i < 0 || i >= f->nkv || f->kv[i].type != GV_ARRAY) return -1;
  const uint8_t *p = f->map + f->kv[i].at;
  *elem_type = (int)le(p, 4);
  *count = le(p + 4, 8);
  return 0;
}
