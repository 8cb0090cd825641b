/* plan.h - the memory planner: the intermediates of one execute (values a
 * kernel produces that are not graph outputs) share one arena, placed by
 * lifetime so that values live at the same time never overlap.
 *
 * Lifetime of a value: [index of its defining node, index of its last user]
 * (inclusive; node order = kernel order). A node's operands and results are
 * both live at that node, so they never share memory (the kernel ABI marks
 * buffers noalias). Inputs, constants, weights and graph outputs are not
 * planned (graph outputs are written into the output tensors), nor are
 * aliases (rt_plan_aliases: a reshape's result shares its operand's
 * buffer, a load's tensor its buffer's memory), whose uses count as uses of
 * the buffer they share.
 *
 * Placement: greedy by size, largest first, each into the best-fitting gap
 * (smallest that fits, lowest offset on ties) among the already placed
 * values whose lifetimes overlap its own, else above them all. Every offset
 * and every size is rounded up to RT_PLAN_ALIGN; a zero-size value takes no
 * space (offset 0: it still gets a valid, non-NULL pointer into the arena).
 *
 * Per model, plan.c keeps the lifetimes (computed once) and the plans of the
 * last RT_PLAN_SLOTS symbol bindings (an LRU keyed by the symbol values; a
 * binding whose values fit the room a plan gave them reuses it, and plans
 * after a model's first give each value half as much room again, four
 * times as much once its bindings keep growing: plan.c),
 * all in the model graph's arena (freed with the model); a small spin lock
 * in the model guards them, held only for a lookup or an insert, never while
 * planning. Each execute allocates its own arena (one malloc): concurrent
 * executes of one model never share intermediate memory. */
#ifndef KILN_SRC_PLAN_H
#define KILN_SRC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

#define RT_PLAN_ALIGN 64
#define RT_PLAN_SLOTS 4

/* Place n buffers: size[i] bytes live from node first[i] to node last[i]
 * (first <= last). Writes offset[i] (multiples of RT_PLAN_ALIGN) and the
 * arena size *total (a multiple of RT_PLAN_ALIGN, 0 when nothing needs
 * space). Buffers i != j with overlapping lifetimes and nonzero sizes never
 * overlap in [offset, offset + size). Deterministic. Returns 0, or -1 when
 * out of memory or the arena size overflows size_t. */
int rt_plan_place(int n, const size_t *size, const int *first, const int *last, size_t *offset,
                  size_t *total);

/* What an execute needs of a plan. */
typedef struct rt_plan_view {
  int n;          /* intermediates */
  const int *ids; /* their value ids (n entries, owned by the model) */
  size_t total;   /* arena bytes; 0 when all are empty (or n == 0) */
  bool poison;    /* fill the arena with rt_plan_poison before running */
} rt_plan_view;

/* The plan of m's intermediates for the solved symbol values syms
 * (g->nsyms entries) into *v, their offsets copied into offset[] (room for
 * g->nvalues entries; offset[k] belongs to v->ids[k]). Looks the binding up
 * in the model's cache; on a miss evaluates the sizes (shape errors say which
 * op and value: "mo.add (%t): ..."), plans and caches. Also raises the
 * model's peak (rt_model_peak_bytes) to v->total. Safe to call from several
 * threads at once on one model. Returns 0 or -1 with st.
 * v->poison is whether KILN_POISON_ARENA was set (and not "0") when the
 * model's first lookup (its first execute) happened: read once per model, so
 * the execute path never calls getenv. */
int rt_plan_lookup(kiln_model *m, const int64_t *syms, rt_plan_view *v, size_t *offset,
                   kiln_status *st);

/* Plan m's intermediates for syms ahead of need (the prepare thread,
 * spec_prep.h, for the end of the next bucket of a growing dim: variants.c)
 * and cache the plan so that every later binding whose intermediates fit
 * in it uses it, however much smaller; a plan made ahead that syms fits
 * already is kept instead (marked recent). *total: its arena bytes. 0, or
 * -1 with st. */
int rt_plan_prepare(kiln_model *m, const int64_t *syms, size_t *total, kiln_status *st);

/* Whether m's plan cache holds a plan made ahead (rt_plan_prepare) for
 * exactly syms: specialize_ahead then queues no job for it (an earlier
 * sequence planned that bucket; queueing would wake the prepare thread from
 * the execute for nothing). Marks it recent. Takes the spin lock only. */
bool rt_plan_cached_ahead(kiln_model *m, const int64_t *syms);

/* Make m's kept arena block (execute.c) hold at least `bytes`, its pages
 * touched, so the execute that first needs that much neither allocates nor
 * faults: a larger block replaces the kept one (an execute holding it keeps
 * its own and frees it at the end). Off the request path (compile thread). */
void rt_arena_reserve(kiln_model *m, size_t bytes);

/* Reshape-like nodes (mo.reshape, mo.squeeze, mo.unsqueeze, and
 * mo.transfer_to, all a flat copy of the same bytes in one memory) whose
 * result is no graph output run no kernel: the result is an alias of its
 * operand's buffer (dense, row-major: the same bytes in the same order).
 * Sets m->alias (see rt.h): the first value of a chain of such nodes for
 * every alias, -1 elsewhere; NULL when the graph has none. The planner
 * (rt_plan_lookup) does not place aliases and keeps the buffer they share
 * live until their last use; the execute sets an alias's pointer to its
 * operand's and skips its node. A graph output stays a copy (its tensor is
 * the caller's). Loads of a buffer that nothing writes while their tensor
 * is read alias the buffer (buffers.h: rt_buffer_alias_loads), as the
 * in-place kernels' loads and results do (rt_buffer_alias_in_place).
 * Call once at compile, after the graph is prepared. 0, or
 * -1 (out of memory) with st. */
int rt_plan_aliases(kiln_model *m, kiln_status *st);

/* Whether node n of g is such an alias (then it is never compiled either:
 * kiln_model_compile, specialization and `kiln cache` skip it). */
bool rt_node_is_alias(const ir_graph *g, const ir_node *n);

/* Fill an arena of nbytes with the poison pattern: as f32 words and as f64
 * NaNs (bytes 0xAB, 0xFF, 0xF8). */
void rt_plan_poison(void *arena, size_t nbytes);

#endif
