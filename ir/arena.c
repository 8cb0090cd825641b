/* arena.c - chunked bump allocator for IR objects (see arena.h).
 * Chunks double in size up to 1 MiB; a request larger than a chunk gets a
 * chunk of its own. Memory is zeroed and 16-byte aligned. */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
  struct chunk *next;
  size_t cap, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct ir_arena {
  chunk *head;
  size_t next_cap;
};

ir_arena *ir_arena_new(void) {
  ir_arena *a = calloc(1, sizeof *a);
  if (a) a->next_cap = 4096;
  return a;
}

void ir_arena_free(ir_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *ir_arena_alloc(ir_arena *a, size_t n) {
  if (!a) return NULL;
  size_t need = (n + 15) & ~(size_t)15;
  if (need < n) return NULL; /* overflow */
  chunk *c = a->head;
  if (!c || c->cap - c->used < need) {
    size_t cap = a->next_cap;
    if (cap < need) cap = need;
    c = malloc(sizeof(chunk) + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
    if (a->next_cap < (1u << 20)) a->next_cap *= 2;
  }
  void *p = c->data + c->used;
  c->used += need;
  memset(p, 0, need);
  return p;
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n) {
  char *p = ir_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *ir_arena_strdup(ir_arena *a, const char *s) {
  return s ? ir_arena_strndup(a, s, strlen(s)) : NULL;
}

void *ir_arena_memdup(ir_arena *a, const void *p, size_t n) {
  void *q = ir_arena_alloc(a, n ? n : 1);
  if (q && n) memcpy(q, p, n);
  return q;
}
