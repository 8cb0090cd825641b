/* arena.h - bump allocator that owns every IR object of one graph.
 *
 * Objects are never freed one by one; ir_arena_free releases all at once.
 * Allocation grows the arena by new chunks (no size fixed in advance).
 * Returned memory is zeroed and aligned to 16 bytes. Allocation failure
 * returns NULL (callers report "out of memory"). */
#ifndef KILN_IR_ARENA_H
#define KILN_IR_ARENA_H

#include <stddef.h>

typedef struct ir_arena ir_arena;

ir_arena *ir_arena_new(void);
void ir_arena_free(ir_arena *a); /* NULL is a no-op */
void *ir_arena_alloc(ir_arena *a, size_t n);
char *ir_arena_strdup(ir_arena *a, const char *s);
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
void *ir_arena_memdup(ir_arena *a, const void *p, size_t n);

#endif
