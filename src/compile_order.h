/* compile_order.h - internal to src/: the order in which threads that each
 * take the next kernel compile a model's kernels (compile_order.c). */
#ifndef KILN_SRC_COMPILE_ORDER_H
#define KILN_SRC_COMPILE_ORDER_H

#include "rt.h"

/* LLVM's rough cost of node n's kernel (n may be a mo.fused: its body's
 * ops), in units of a permute's: at least 1. */
int rt_compile_cost(const ir_node *n);

/* Reorder nodes[0..n) (nodes of the prepared graph g that have a kernel)
 * for threads that claim them in order: the first node of each distinct kernel text, by
 * rt_compile_cost, highest first (ties in the given order), then the nodes
 * whose text an earlier one has, in the given order. Leaves the order as it
 * was when out of memory. */
void rt_compile_order(const ir_graph *g, int *nodes, int n);

#endif
