/* variants.h - internal to src/: shape-specialized variants of a model
 * (variants.c).
 *
 * A model's generic variant (model.c, compiled at load) reads symbolic dims
 * at run time. A specialized variant is, for one binding of all the graph's
 * symbols, every kernel node's ir_kernel_text_bound (all dims constant)
 * fetched from the context's memory cache (so the disk cache backs it),
 * called with no dims. A model keeps at most RT_VARIANTS_MAX of them; adding
 * one more evicts the least recently used. A graph with no symbols never gets
 * one (its generic variant is already static).
 *
 * Thread safety: the table is guarded by a mutex; rt_variant_acquire hands
 * out a counted reference, so an evicted variant stays valid until its last
 * user releases it (its cache entries are released then). */
#ifndef KILN_SRC_VARIANTS_H
#define KILN_SRC_VARIANTS_H

#include "rt.h"

#define RT_VARIANTS_MAX 8

typedef struct rt_variant rt_variant;
typedef struct rt_variants rt_variants;

/* The variant table of a model (nothing compiled yet); NULL on OOM. */
rt_variants *rt_variants_new(void);
/* Free the table and every variant in it (no execute may be running). NULL ok. */
void rt_variants_free(kiln_model *m, rt_variants *vs);

/* The variant to run an execute with the solved symbol values syms under
 * the model's effective policy: NULL means the generic variant (policy off,
 * no symbols, ahead and not declared, or a specialized compile failed).
 * Under sync a missing variant is compiled here. Release a non-NULL result
 * with rt_variant_release. */
rt_variant *rt_variant_acquire(kiln_model *m, const int64_t *syms);
void rt_variant_release(kiln_model *m, rt_variant *v);

/* Run node `node`'s kernel from variant v (NULL: the generic variant). */
int32_t rt_variant_run(const kiln_model *m, const rt_variant *v, int node, void *const *args,
                       const int64_t *syms);

/* Specialized variants compiled for m so far (the CLI's "S specialized"). */
int rt_model_num_specialized(const kiln_model *m);

#endif
