/* name_map.c - the name -> int hash index (name_map.h). The keys, their
 * hashes and values sit in an array in insertion order; the open-addressing
 * table (linear probing) holds 8 bytes per slot, 32 bits of the hash and
 * the entry's number, so a probe stays in a small table and the key's
 * bytes are compared only when the hash bits agree. */
#include "name_map.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct rt_name_slot {
  uint32_t hash; /* the key hash's high half */
  uint32_t entry; /* entry number + 1; 0: empty */
};

typedef struct rt_name_entry {
  const char *key;
  size_t len;
  uint64_t hash;
  int val;
} rt_name_entry;

void rt_name_map_clear(rt_name_map *m) {
  if (!m) return;
  free(m->slots);
  free(m->entries);
  *m = (rt_name_map){0};
}

/* The slot of key (hash h): its own, or the empty one it would take. */
static rt_name_slot *find(const rt_name_map *m, const char *key, size_t len, uint64_t h) {
  size_t mask = m->cap - 1;
  uint32_t hi = (uint32_t)(h >> 32);
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    rt_name_slot *s = &m->slots[i];
    if (!s->entry) return s;
    if (s->hash != hi) continue;
    const rt_name_entry *e = &m->entries[s->entry - 1];
    if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) return s;
  }
}

/* Rehash into cap slots (a power of two, above twice the keys) and make
 * room for cap / 2 entries. */
static int rehash(rt_name_map *m, size_t cap) {
  rt_name_slot *slots = calloc(cap, sizeof *slots);
  rt_name_entry *entries = slots ? realloc(m->entries, cap / 2 * sizeof *entries) : NULL;
  if (!entries) {
    free(slots);
    return -1;
  }
  free(m->slots);
  m->slots = slots;
  m->entries = entries;
  m->cap = cap;
  for (size_t k = 0; k < m->n; k++) {
    rt_name_slot *s = find(m, entries[k].key, entries[k].len, entries[k].hash);
    *s = (rt_name_slot){(uint32_t)(entries[k].hash >> 32), (uint32_t)k + 1};
  }
  return 0;
}

int rt_name_map_reserve(rt_name_map *m, size_t n) {
  size_t cap = m->cap ? m->cap : 64;
  while (cap < 2 * n + 2) cap *= 2;
  if (cap > ((size_t)UINT32_MAX + 1)) return -1;
  return cap == m->cap ? 0 : rehash(m, cap);
}

int rt_name_map_put(rt_name_map *m, const char *key, size_t len, int val) {
  if ((m->n + 1) * 2 > m->cap && rt_name_map_reserve(m, m->n + 1) < 0) return -2;
  uint64_t h = XXH3_64bits(key, len);
  rt_name_slot *s = find(m, key, len, h);
  if (s->entry) return m->entries[s->entry - 1].val;
  m->entries[m->n] = (rt_name_entry){key, len, h, val};
  *s = (rt_name_slot){(uint32_t)(h >> 32), (uint32_t)++m->n};
  return -1;
}

int rt_name_map_get(const rt_name_map *m, const char *key, size_t len) {
  if (!m || !m->cap) return -1;
  const rt_name_slot *s = find(m, key, len, XXH3_64bits(key, len));
  return s->entry ? m->entries[s->entry - 1].val : -1;
}
