/* safetensors.c - .safetensors files (io.h): mapped read-only, header
 * validated in full at open (JSON shape, known dtypes, non-negative shapes,
 * offsets ordered and inside the data section, size == dtype * shape), so
 * rt_safetensors_tensor can never read outside the file.
 *
 * What the format requires and open enforces, as the reference reader
 * (huggingface/safetensors) does: the header is UTF-8 JSON, so every tensor
 * name is valid UTF-8; sorted by offset, the tensors' data ranges are
 * disjoint and tile the data section exactly, from byte 0 to its end, with
 * no hole and nothing after the last tensor (no bytes the header does not
 * account for: a file is read one way only; zero-size tensors sit anywhere
 * in the chain). A file breaking either is refused naming the tensor.
 *
 * Everything is linear in the number of tensors but the offset check
 * (a sort): names are hashed (name_map.h), also by the JSON reader's
 * duplicate-key check. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "json.h"
#include "name_map.h"

typedef struct st_entry {
  const char *name; /* in names */
  kiln_dtype dtype;
  int rank;
  int64_t shape[IR_MAX_RANK];
  uint64_t begin, end; /* relative to the data section */
} st_entry;

struct rt_safetensors {
  char *path;
  const unsigned char *map;
  size_t size;
  size_t data_off; /* 8 + header length */
  int n;
  st_entry *e;
  rt_name_map index; /* name -> entry; keys are the entries' names */
  char *names;       /* the entries' names live here */
};

static const struct {
  const char *name;
  kiln_dtype dtype;
} st_dtypes[] = {
    {"BOOL", KILN_BOOL},    {"U8", KILN_UINT8},     {"I8", KILN_INT8},
    {"U16", KILN_UINT16},   {"I16", KILN_INT16},    {"U32", KILN_UINT32},
    {"I32", KILN_INT32},    {"U64", KILN_UINT64},   {"I64", KILN_INT64},
    {"F16", KILN_FLOAT16},  {"BF16", KILN_BFLOAT16}, {"F32", KILN_FLOAT32},
    {"F64", KILN_FLOAT64},  {"F8_E4M3", KILN_FLOAT8_E4M3FN}, {"F8_E5M2", KILN_FLOAT8_E5M2},
};

const char *rt_safetensors_dtype_name(kiln_dtype t) {
  for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
    if (st_dtypes[i].dtype == t) return st_dtypes[i].name;
  return NULL;
}

void rt_safetensors_close(rt_safetensors *f) {
  if (!f) return;
  if (f->map) munmap((void *)f->map, f->size);
  rt_name_map_clear(&f->index);
  free(f->names);
  free(f->e);
  free(f->path);
  free(f);
}

static int bad(rt_safetensors *f, kiln_status *st, const char *fmt, const char *name,
               const char *detail) {
  return rt_err(st, KILN_ERR_IO, "%s: malformed safetensors file: tensor '%s': %s%s", f->path,
                name, fmt, detail ? detail : "");
}

static int parse_entry(rt_safetensors *f, const char *name, const rt_json *v, st_entry *e,
                       uint64_t datasize, kiln_status *st) {
  if (v->kind != RT_JSON_OBJECT) return bad(f, st, "expected an object", name, NULL);
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->keys[i], "dtype") && strcmp(v->keys[i], "shape") &&
        strcmp(v->keys[i], "data_offsets"))
      return bad(f, st, "unknown field ", name, v->keys[i]);
  const rt_json *dt = rt_json_get(v, "dtype"), *sh = rt_json_get(v, "shape"),
                *off = rt_json_get(v, "data_offsets");
  if (!dt || dt->kind != RT_JSON_STRING) return bad(f, st, "'dtype' must be a string", name, NULL);
  if (!sh || sh->kind != RT_JSON_ARRAY) return bad(f, st, "'shape' must be an array", name, NULL);
  if (!off || off->kind != RT_JSON_ARRAY || off->n != 2)
    return bad(f, st, "'data_offsets' must be an array of two integers", name, NULL);
  size_t k = 0, nd = sizeof st_dtypes / sizeof st_dtypes[0];
  while (k < nd && strcmp(st_dtypes[k].name, dt->s) != 0) k++;
  if (k == nd)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: tensor '%s': unsupported safetensors dtype '%s'",
                  f->path, name, dt->s);
  e->dtype = st_dtypes[k].dtype;
  if (sh->n > IR_MAX_RANK) return bad(f, st, "rank above 16 is not supported", name, NULL);
  e->rank = sh->n;
  for (int i = 0; i < sh->n; i++) {
    if (sh->items[i].kind != RT_JSON_NUMBER || !sh->items[i].is_int || sh->items[i].i < 0)
      return bad(f, st, "'shape' entries must be non-negative integers", name, NULL);
    e->shape[i] = sh->items[i].i;
  }
  for (int i = 0; i < 2; i++)
    if (off->items[i].kind != RT_JSON_NUMBER || !off->items[i].is_int || off->items[i].i < 0)
      return bad(f, st, "'data_offsets' must be non-negative integers", name, NULL);
  e->begin = (uint64_t)off->items[0].i;
  e->end = (uint64_t)off->items[1].i;
  if (e->begin > e->end)
    return bad(f, st, "data_offsets begin after they end", name, NULL);
  if (e->end > datasize) {
    char d[96];
    snprintf(d, sizeof d, " (offset %llu, data section is %llu bytes)",
             (unsigned long long)e->end, (unsigned long long)datasize);
    return bad(f, st, "data_offsets run past the end of the file", name, d);
  }
  int64_t numel;
  size_t nbytes;
  if (rt_shape_bytes(e->dtype, e->rank, e->shape, &numel, &nbytes, NULL) < 0)
    return bad(f, st, "shape is too large", name, NULL);
  if ((uint64_t)nbytes != e->end - e->begin) {
    char d[128];
    snprintf(d, sizeof d, " (%llu bytes for %lld elements of %s, which need %zu)",
             (unsigned long long)(e->end - e->begin), (long long)numel,
             kiln_dtype_name(e->dtype), nbytes);
    return bad(f, st, "size does not match dtype and shape", name, d);
  }
  return 0;
}

/* Length of the valid UTF-8 prefix of s[0..n) (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF); n when all of it is. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      k = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      k = 2;
      if (c == 0xe0) lo = 0xa0;      /* overlong */
      else if (c == 0xed) hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
      k = 3;
      if (c == 0xf0) lo = 0x90;      /* overlong */
      else if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    } else {
      return i;
    }
    if (n - i <= k || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t j = 2; j <= k; j++)
      if ((s[i + j] & 0xc0) != 0x80) return i;
    i += k + 1;
  }
  return n;
}

/* name for a message: printable ASCII as is, other bytes as \xNN, cut at
 * about 80 bytes of name. */
static const char *printable(const char *name, size_t len, char *buf, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < len && k + 8 < cap && i < 80; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c >= 0x20 && c < 0x7f) buf[k++] = (char)c;
    else k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", c);
  }
  if (len > 80 && k + 4 < cap) k += (size_t)snprintf(buf + k, cap - k, "...");
  buf[k] = 0;
  return buf;
}

typedef struct st_span {
  uint64_t begin, end;
  int i; /* entry */
} st_span;

static int span_cmp(const void *a, const void *b) {
  const st_span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* The tensors' data, sorted by offset, tiles [0, datasize): no overlap, no
 * hole, nothing after the last tensor. */
static int check_tiling(rt_safetensors *f, uint64_t datasize, kiln_status *st) {
  st_span *sp = malloc((size_t)(f->n ? f->n : 1) * sizeof *sp);
  if (!sp) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < f->n; i++) sp[i] = (st_span){f->e[i].begin, f->e[i].end, i};
  qsort(sp, (size_t)f->n, sizeof *sp, span_cmp);
  uint64_t at = 0; /* where the next tensor must begin */
  int prev = -1;   /* the tensor that ends there */
  char d[320];
  for (int k = 0; k < f->n; k++) {
    const st_entry *e = &f->e[sp[k].i];
    if (e->begin < at) {
      snprintf(d, sizeof d, " ([%llu, %llu) overlaps tensor '%s' at [%llu, %llu))",
               (unsigned long long)e->begin, (unsigned long long)e->end, f->e[prev].name,
               (unsigned long long)f->e[prev].begin, (unsigned long long)f->e[prev].end);
      free(sp);
      return bad(f, st, "data_offsets overlap another tensor's", e->name, d);
    }
    if (e->begin > at) {
      if (prev < 0)
        snprintf(d, sizeof d, " (it begins at %llu; the data section begins with %llu bytes "
                 "no tensor holds)", (unsigned long long)e->begin,
                 (unsigned long long)e->begin);
      else
        snprintf(d, sizeof d, " ([%llu, %llu) begins %llu bytes after tensor '%s' ends, at %llu)",
                 (unsigned long long)e->begin, (unsigned long long)e->end,
                 (unsigned long long)(e->begin - at), f->e[prev].name, (unsigned long long)at);
      free(sp);
      return bad(f, st, "data_offsets leave a hole in the data section", e->name, d);
    }
    at = e->end;
    prev = sp[k].i;
  }
  free(sp);
  if (at != datasize) {
    snprintf(d, sizeof d, " (the data section has %llu bytes; the last tensor's data ends at %llu)",
             (unsigned long long)datasize, (unsigned long long)at);
    if (prev < 0)
      return rt_err(st, KILN_ERR_IO, "%s: malformed safetensors file: no tensor holds the data "
                    "section's %llu bytes", f->path, (unsigned long long)datasize);
    return bad(f, st, "data continues after this tensor, the last one", f->e[prev].name, d);
  }
  return 0;
}

static int parse_header(rt_safetensors *f, kiln_status *st) {
  if (f->size < 8)
    return rt_err(st, KILN_ERR_IO,
                  "%s: malformed safetensors file: %zu bytes, too short for the header length",
                  f->path, f->size);
  uint64_t hlen = 0;
  for (int i = 0; i < 8; i++) hlen |= (uint64_t)f->map[i] << (8 * i);
  if (hlen > f->size - 8)
    return rt_err(st, KILN_ERR_IO,
                  "%s: malformed safetensors file: header length %llu runs past the end of the "
                  "file (%zu bytes)",
                  f->path, (unsigned long long)hlen, f->size);
  f->data_off = 8 + (size_t)hlen;
  uint64_t datasize = f->size - f->data_off;
  char err[256];
  rt_json *j = rt_json_parse((const char *)f->map + 8, (size_t)hlen, err, sizeof err);
  if (!j)
    return rt_err(st, KILN_ERR_IO, "%s: malformed safetensors header: JSON %s", f->path, err);
  int rc = -1;
  if (j->kind != RT_JSON_OBJECT) {
    rt_err(st, KILN_ERR_IO, "%s: malformed safetensors header: expected a JSON object", f->path);
    goto done;
  }
  size_t nbytes = 1;
  for (int i = 0; i < j->n; i++) nbytes += j->keylens[i] + 1;
  f->e = calloc((size_t)(j->n ? j->n : 1), sizeof *f->e);
  char *names = f->names = malloc(nbytes); /* every name, NUL-terminated, one after another */
  if (!f->e || !names || rt_name_map_reserve(&f->index, (size_t)j->n) < 0) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < j->n; i++) {
    const char *name = j->keys[i];
    if (strlen(name) != j->keylens[i]) {
      rt_err(st, KILN_ERR_IO, "%s: malformed safetensors header: a tensor name contains NUL",
             f->path);
      goto done;
    }
    size_t ok = utf8_valid_prefix((const unsigned char *)name, j->keylens[i]);
    if (ok != j->keylens[i]) {
      char pn[400];
      rt_err(st, KILN_ERR_IO,
             "%s: malformed safetensors header: tensor '%s': its name is not valid UTF-8 "
             "(byte %zu of the name)", f->path, printable(name, j->keylens[i], pn, sizeof pn), ok);
      goto done;
    }
    if (strcmp(name, "__metadata__") == 0) {
      if (j->items[i].kind != RT_JSON_OBJECT) {
        rt_err(st, KILN_ERR_IO, "%s: malformed safetensors header: __metadata__ must be an object",
               f->path);
        goto done;
      }
      continue;
    }
    st_entry *e = &f->e[f->n];
    if (parse_entry(f, name, &j->items[i], e, datasize, st) < 0) goto done;
    e->name = memcpy(names, name, j->keylens[i] + 1);
    names += j->keylens[i] + 1;
    if (rt_name_map_put(&f->index, e->name, j->keylens[i], f->n) == -2) {
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    f->n++;
  }
  if (check_tiling(f, datasize, st) < 0) goto done;
  /* the rest of the header (metadata, dtypes): JSON is UTF-8 text */
  size_t ok = utf8_valid_prefix(f->map + 8, (size_t)hlen);
  if (ok != (size_t)hlen) {
    rt_err(st, KILN_ERR_IO, "%s: malformed safetensors header: byte %zu is not valid UTF-8",
           f->path, ok);
    goto done;
  }
  rc = 0;
done:
  rt_json_free(j);
  return rc;
}

rt_safetensors *rt_safetensors_open(const char *path, kiln_status *st) {
  rt_safetensors *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(path ? path : "(null)"))) {
    free(f);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  /* O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it) */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, "%s: cannot open: %s", path,
           strerror(errno));
    rt_safetensors_close(f);
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    rt_err(st, KILN_ERR_IO, "%s: not a regular file", path);
    close(fd);
    rt_safetensors_close(f);
    return NULL;
  }
  f->size = (size_t)sb.st_size;
  if (f->size > 0) {
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      rt_err(st, KILN_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
      close(fd);
      rt_safetensors_close(f);
      return NULL;
    }
    f->map = p;
  }
  close(fd);
  if (parse_header(f, st) < 0) {
    rt_safetensors_close(f);
    return NULL;
  }
  rt_ok(st);
  return f;
}

int rt_safetensors_count(const rt_safetensors *f) { return f ? f->n : 0; }

const char *rt_safetensors_name(const rt_safetensors *f, int i) {
  return f && i >= 0 && i < f->n ? f->e[i].name : NULL;
}

int rt_safetensors_find(const rt_safetensors *f, const char *name) {
  return f && name ? rt_name_map_get(&f->index, name, strlen(name)) : -1;
}

kiln_tensor *rt_safetensors_tensor(const rt_safetensors *f, int i, kiln_status *st) {
  if (!f || i < 0 || i >= f->n) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "no tensor %d in the safetensors file", i);
    return NULL;
  }
  const st_entry *e = &f->e[i];
  const unsigned char *data = f->map ? f->map + f->data_off + e->begin : NULL;
  size_t es = kiln_dtype_size(e->dtype);
  if (data && (uintptr_t)data % es == 0)
    return kiln_tensor_borrow(e->dtype, e->rank, e->shape, (void *)data, st);
  kiln_tensor *t = rt_tensor_alloc(e->dtype, e->rank, e->shape, st);
  if (!t) return NULL;
  if (t->nbytes) memcpy(t->data, data, t->nbytes);
  rt_ok(st);
  return t;
}

const void *rt_safetensors_bytes(const rt_safetensors *f, int i, size_t *len) {
  *len = 0;
  if (!f || !f->map || i < 0 || i >= f->n) return NULL;
  const st_entry *e = &f->e[i];
  *len = (size_t)(e->end - e->begin);
  return f->map + f->data_off + e->begin;
}

static int put_escaped(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
    else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
    else fputc(*p, out);
  }
  return fputc('"', out);
}

int rt_safetensors_write(const char *path, const char *const *names,
                         const kiln_tensor *const *tensors, int n, kiln_status *st) {
  char *hdr = NULL;
  size_t hsz = 0;
  FILE *h = open_memstream(&hdr, &hsz);
  if (!h) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  uint64_t off = 0;
  fputc('{', h);
  for (int i = 0; i < n; i++) {
    const char *dn = rt_safetensors_dtype_name(tensors[i]->dtype);
    if (!dn) {
      fclose(h);
      free(hdr);
      return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: safetensors has no dtype for %s", path,
                    kiln_dtype_name(tensors[i]->dtype));
    }
    if (i) fputc(',', h);
    put_escaped(h, names[i]);
    fprintf(h, ":{\"dtype\":\"%s\",\"shape\":[", dn);
    for (int a = 0; a < tensors[i]->rank; a++)
      fprintf(h, "%s%lld", a ? "," : "", (long long)tensors[i]->shape[a]);
    fprintf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
            (unsigned long long)(off + tensors[i]->nbytes));
    off += tensors[i]->nbytes;
  }
  fputc('}', h);
  while ((ftell(h) + 8) % 8) fputc(' ', h); /* keep the data 8-byte aligned */
  if (fclose(h) != 0) {
    free(hdr);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    int e = errno;
    free(hdr);
    return rt_err(st, KILN_ERR_IO, "%s: cannot create: %s", path, strerror(e));
  }
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hsz >> (8 * i));
  bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(hdr, 1, hsz, f) == hsz;
  for (int i = 0; ok && i < n; i++)
    if (tensors[i]->nbytes)
      ok = fwrite(tensors[i]->data, 1, tensors[i]->nbytes, f) == tensors[i]->nbytes;
  free(hdr);
  if (fclose(f) != 0) ok = false;
  if (!ok) return rt_err(st, KILN_ERR_IO, "%s: write error", path);
  rt_ok(st);
  return 0;
}
