/* name_map.h - a hash index from byte strings (names) to ints, for lookups
 * by name that must stay linear in the number of names: tensor names of a
 * .safetensors file, object keys of a JSON header, weights of a model.
 * Internal to src/.
 *
 * Keys are borrowed: the bytes must stay where they are, unchanged, as long
 * as the map indexes them. Open addressing on XXH3, grown at half full, so
 * put and get cost O(length of the key) on average (name_map.c). A zeroed rt_name_map is
 * an empty map; nothing here allocates until the first put. */
#ifndef KILN_SRC_NAME_MAP_H
#define KILN_SRC_NAME_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_name_slot rt_name_slot;
typedef struct rt_name_entry rt_name_entry;

typedef struct rt_name_map {
  rt_name_slot *slots;     /* cap slots, NULL until the first put */
  rt_name_entry *entries;  /* the keys in insertion order (cap / 2 room) */
  size_t cap;              /* a power of two, or 0 */
  size_t n;                /* keys indexed */
} rt_name_map;

/* Free the table (not the keys); m is empty again. NULL ok. */
void rt_name_map_clear(rt_name_map *m);
/* Make room for n keys in all, so that many puts do not rehash (a hint:
 * 0, or -1 when out of memory, m unchanged then). */
int rt_name_map_reserve(rt_name_map *m, size_t n);
/* Index val (>= 0) under key[0..len). Returns -1 when the key was added,
 * the value already indexed when the key was there (nothing changes), or
 * -2 when out of memory (nothing changes). */
int rt_name_map_put(rt_name_map *m, const char *key, size_t len, int val);
/* The value indexed under key[0..len), or -1. */
int rt_name_map_get(const rt_name_map *m, const char *key, size_t len);

#endif
