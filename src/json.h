/* json.h - a small strict JSON reader (RFC 8259) for file headers
 * (safetensors). Internal to src/.
 *
 * Strict: no comments, no trailing commas, no leading zeros, no control
 * characters in strings, no duplicate object keys, nothing but whitespace
 * after the value, nesting at most RT_JSON_MAX_DEPTH deep. Strings are
 * decoded to UTF-8 (\uXXXX escapes and surrogate pairs included) and may
 * hold NUL bytes (len says how long they are). Numbers keep their double
 * value and, when the text is an integer that fits, the exact int64.
 * Linear in the text: duplicate keys are found through a hash of the keys
 * (from the 8th key of an object on), and the whole tree lives in one arena
 * (json.c), its arrays sized exactly, freed at once by rt_json_free. */
#ifndef KILN_SRC_JSON_H
#define KILN_SRC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_JSON_MAX_DEPTH 64

typedef enum rt_json_kind {
  RT_JSON_NULL,
  RT_JSON_BOOL,
  RT_JSON_NUMBER,
  RT_JSON_STRING,
  RT_JSON_ARRAY,
  RT_JSON_OBJECT,
} rt_json_kind;

typedef struct rt_json rt_json;
typedef struct rt_json_arena rt_json_arena;
struct rt_json {
  rt_json_kind kind;
  bool b;          /* BOOL */
  double num;      /* NUMBER */
  bool is_int;     /* NUMBER: integer text that fits in int64 */
  int64_t i;       /* NUMBER when is_int */
  char *s;         /* STRING: NUL-terminated, len bytes (may contain NUL) */
  size_t len;
  int n;           /* ARRAY / OBJECT: number of items */
  rt_json *items;  /* n items */
  char **keys;     /* OBJECT: n keys (NUL-terminated) */
  size_t *keylens; /* OBJECT: key lengths */
  size_t pos;      /* byte offset of the value in the text */
  struct rt_json_arena *arena; /* the root's: the pieces of the tree live there (json.c) */
};

/* Parse text[0..len). Returns a malloc'd tree (free with rt_json_free), or
 * NULL with err = "byte 37: expected ':' after an object key". */
rt_json *rt_json_parse(const char *text, size_t len, char *err, size_t errlen);
void rt_json_free(rt_json *j);
/* Member `key` of an object, NULL if absent or j is not an object. */
const rt_json *rt_json_get(const rt_json *j, const char *key);

#endif
