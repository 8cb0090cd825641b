/* wire.c - an ONNX model's large initializers found in place, so their bytes
 * are read from the caller's buffer (the file's mapping) instead of being
 * copied by protobuf-c.
 *
 * A walk over the protobuf wire format along one path only: ModelProto.graph
 * (7) -> GraphProto.initializer (5) -> TensorProto.raw_data (9). It reads
 * tags and lengths, records where each initializer's raw_data lies, and
 * writes a copy of the model without those raw_data fields for protobuf-c
 * to unpack: protobuf-c stays the reader of everything else. It is not a
 * protobuf parser. Any layout it does not expect (the graph field twice, so
 * protobuf-c would merge them; raw_data twice in one tensor; a group; a
 * malformed tag or varint; a graph cut short outside an initializer) makes
 * it step aside: protobuf-c then unpacks the whole buffer, copying, and says
 * what is wrong as before. The one error it reports itself is an initializer
 * cut by the end of the buffer, named, since the generic "truncated
 * protobuf" does not say which tensor a short download lost.
 *
 * Guarantees: every pointer in ox_split.raw lies inside [buf, buf + len);
 * nothing is read outside it; the rest copy is small (the model without the
 * taken bytes); on -1 and 0 nothing is allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };
enum { MODEL_GRAPH = 7, GRAPH_INITIALIZER = 5, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9 };

typedef struct wfield {
  uint64_t num;
  int type;
  const uint8_t *start, *body, *end; /* tag, value (after a length), end */
  uint64_t declared;                 /* a length-delimited field's length */
} wfield;

enum { FIELD_END = 0, FIELD_OK = 1, FIELD_BAD = -1, FIELD_CUT = -2 };

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* The field at *p (advanced past it). FIELD_CUT: a length-delimited field
 * whose declared length runs past end (f->body, f->declared set). */
static int next_field(const uint8_t **p, const uint8_t *end, wfield *f) {
  if (*p >= end) return FIELD_END;
  f->start = *p;
  uint64_t tag, v;
  if (!get_varint(p, end, &tag) || (tag >> 3) == 0) return FIELD_BAD;
  f->num = tag >> 3;
  f->type = (int)(tag & 7);
  switch (f->type) {
  case WT_VARINT:
    if (!get_varint(p, end, &v)) return FIELD_BAD;
    break;
  case WT_I64:
  case WT_I32: {
    size_t n = f->type == WT_I64 ? 8 : 4;
    if ((size_t)(end - *p) < n) return FIELD_BAD;
    *p += n;
    break;
  }
  case WT_LEN:
    if (!get_varint(p, end, &f->declared)) return FIELD_BAD;
    f->body = *p;
    if (f->declared > (uint64_t)(end - *p)) return FIELD_CUT;
    *p += f->declared;
    break;
  default:
    return FIELD_BAD; /* groups (3, 4) and unknown wire types */
  }
  f->end = *p;
  return FIELD_OK;
}

typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n) {
  if (b->oom || n == 0) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void put_varint(wbuf *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) tmp[n] |= 0x80;
    n++;
  } while (v);
  put(b, tmp, n);
}

static void put_len_field(wbuf *b, uint64_t num, uint64_t len) {
  put_varint(b, num << 3 | WT_LEN);
  put_varint(b, len);
}

typedef struct walk {
  const char *what;
  kiln_status *st;
  size_t min_bytes;
  ox_raw *raw;
  size_t nraw, capraw;
  size_t ntaken;
} walk;

static int add_raw(walk *w, ox_raw r) {
  if (w->nraw == w->capraw) {
    size_t cap = w->capraw ? 2 * w->capraw : 64;
    ox_raw *q = realloc(w->raw, cap * sizeof *q);
    if (!q) return rt_err(w->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    w->raw = q;
    w->capraw = cap;
  }
  w->raw[w->nraw++] = r;
  return 0;
}

/* An initializer cut by the end of the buffer: its name if the bytes that
 * are there hold it. */
static int cut_initializer(walk *w, const wfield *init, const uint8_t *end) {
  const uint8_t *p = init->body;
  wfield f;
  const char *name = NULL;
  size_t nlen = 0;
  while (next_field(&p, end, &f) == FIELD_OK)
    if (f.num == TENSOR_NAME && f.type == WT_LEN) {
      name = (const char *)f.body;
      nlen = (size_t)f.declared;
    }
  size_t have = (size_t)(end - init->body);
  if (name)
    return rt_err(w->st, KILN_ERR_IO,
                  "%s: ONNX initializer '%.*s' (initializer %zu) is cut short: the file ends "
                  "%zu bytes into its %llu (truncated file?)",
                  w->what, (int)(nlen > 200 ? 200 : nlen), name, w->nraw, have,
                  (unsigned long long)init->declared);
  return rt_err(w->st, KILN_ERR_IO,
                "%s: ONNX initializer %zu is cut short before its name: the file ends %zu bytes "
                "into its %llu (truncated file?)",
                w->what, w->nraw, have, (unsigned long long)init->declared);
}

/* One initializer into out, its raw_data left out when large: 1, 0 (step
 * aside) or -1. */
static int walk_initializer(walk *w, const wfield *init, wbuf *out) {
  const uint8_t *p = init->body, *raw_at = NULL;
  wfield f, raw = {0};
  int rc;
  while ((rc = next_field(&p, init->end, &f)) == FIELD_OK) {
    if (f.num != TENSOR_RAW_DATA) continue;
    if (raw_at || f.type != WT_LEN) return 0; /* protobuf-c's rules decide */
    raw = f;
    raw_at = f.start;
  }
  if (rc != FIELD_END) return 0;
  if (!raw_at || raw.declared < w->min_bytes) {
    put(out, init->start, (size_t)(init->end - init->start));
    return add_raw(w, (ox_raw){0}) < 0 ? -1 : 1;
  }
  size_t before = (size_t)(raw.start - init->body), after = (size_t)(init->end - raw.end);
  put_len_field(out, GRAPH_INITIALIZER, before + after);
  put(out, init->body, before);
  put(out, raw.end, after);
  w->ntaken++;
  return add_raw(w, (ox_raw){.data = raw.body, .len = (size_t)raw.declared}) < 0 ? -1 : 1;
}

/* The graph's fields [p, end) into out; cut: the graph ran past the buffer. */
static int walk_graph(walk *w, const uint8_t *p, const uint8_t *end, bool cut, wbuf *out) {
  wfield f;
  int rc;
  while ((rc = next_field(&p, end, &f)) == FIELD_OK) {
    if (f.num == GRAPH_INITIALIZER && f.type == WT_LEN) {
      int r = walk_initializer(w, &f, out);
      if (r <= 0) return r;
    } else {
      put(out, f.start, (size_t)(f.end - f.start));
    }
  }
  if (rc == FIELD_CUT && cut && f.num == GRAPH_INITIALIZER && f.type == WT_LEN)
    return cut_initializer(w, &f, end);
  return rc == FIELD_END && !cut ? 1 : 0;
}

static int split(walk *w, const uint8_t *buf, size_t len, wbuf *rest, wbuf *graph) {
  const uint8_t *p = buf, *end = buf + len;
  wfield f;
  int rc;
  bool seen = false;
  while ((rc = next_field(&p, end, &f)) != FIELD_END) {
    bool is_graph = f.num == MODEL_GRAPH && f.type == WT_LEN;
    if (rc == FIELD_CUT && is_graph && !seen) /* the file ends inside the graph */
      return walk_graph(w, f.body, end, true, graph);
    if (rc != FIELD_OK) return 0;
    if (!is_graph) {
      put(rest, f.start, (size_t)(f.end - f.start));
      continue;
    }
    if (seen) return 0; /* protobuf-c merges repeated messages: leave it to it */
    seen = true;
    int r = walk_graph(w, f.body, f.end, false, graph);
    if (r <= 0) return r;
  }
  if (!seen || w->ntaken == 0) return 0; /* nothing to leave in place */
  put_len_field(rest, MODEL_GRAPH, graph->n);
  put(rest, graph->p, graph->n);
  if (rest->oom || graph->oom) return rt_err(w->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  return 1;
}

int ox_wire_split(const void *buf, size_t len, size_t min_bytes, ox_split *out,
                  const char *what, kiln_status *st) {
  memset(out, 0, sizeof *out);
  walk w = {.what = what, .st = st, .min_bytes = min_bytes ? min_bytes : 1};
  wbuf rest = {0}, graph = {0};
  int rc = split(&w, buf, len, &rest, &graph);
  free(graph.p);
  if (rc <= 0) {
    free(rest.p);
    free(w.raw);
    return rc;
  }
  out->rest = rest.p;
  out->rest_len = rest.n;
  out->raw = w.raw;
  out->nraw = w.nraw;
  return 1;
}

void ox_split_free(ox_split *s) {
  if (!s) return;
  free(s->rest);
  free(s->raw);
  memset(s, 0, sizeof *s);
}
