/* buffers.h - the CPU runtime's buffer ops (ops.def's BUFFER class):
 * mo.buffer.create, mo.chain.create, mo.mutable.load, mo.mutable.store and
 * mo.mutable.store.slice run here, in node order, as copies between the
 * buffers' memory and the tensors' (no kernel is compiled for them).
 *
 * A buffer that is a graph input is the caller's tensor, bound like any
 * input: stores write into the caller's memory, which keeps its contents
 * across executes (a KV cache). A mo.buffer.create buffer lives in the
 * execute's arena, zeroed when it is created. Node order is an order the
 * chains agree with (ir/buffer.h). A load copies the buffer into its
 * tensor unless nothing writes the buffer while the tensor is read
 * (rt_buffer_alias_loads: then the tensor is the buffer's memory), so a
 * tensor loaded before a store keeps the old contents either way. */
#ifndef KILN_SRC_BUFFERS_H
#define KILN_SRC_BUFFERS_H

#include "backend.h"
#include "rt.h"

/* Whether n is a buffer op (run by rt_buffer_run, never a kernel). */
bool rt_node_is_buffer_op(const ir_node *n);
/* Run buffer op n of g: bufs holds each value's memory (by value id), syms
 * the solved symbols. 0, or -1 with st saying which op, where, and why (a
 * slice outside the buffer). */
int rt_buffer_run(const ir_graph *g, const ir_node *n, void *const *bufs, const int64_t *syms,
                  kiln_status *st);

/* Whether mo.mutable.store.slice n's start (its operand 2's data, host
 * memory) puts the slice inside the buffer under syms: 0 with each axis's
 * start in start[], or -1 with st naming the op, its line:col, the buffer,
 * the slice and the axis (the device runtime's message too). */
int rt_buffer_slice_check(const ir_node *n, const void *start_data, const int64_t *syms,
                          int64_t *start, kiln_status *st);

/* mo.inplace_custom on a buffer, zero-copy: for every load -> in-place
 * kernel -> store where the load's tensor is used only as the kernel's
 * operand 0, the kernel's result only by the store, the store writes the
 * loaded buffer and takes the load's chain (so nothing else touches the
 * buffer in between), set alias[] of the loaded tensor and of the result to
 * the buffer's value id: the kernel then gets the buffer's own memory as
 * operand 0 and as result 0 (MAX's inplace_custom: the kernel mutates the
 * buffer), and the load and store copy nothing. Returns how many. */
int rt_buffer_alias_in_place(const ir_graph *g, int *alias);

/* Loads that copy nothing: a mo.mutable.load whose tensor is no graph
 * output and whose buffer nothing writes (no store into it, no in-place
 * kernel on it) from the load until the tensor's last read (through
 * reshape aliases, that read's node included) reads the buffer's own
 * memory: alias[] of the tensor, and of the aliases that pointed at it,
 * becomes the buffer's value id. Kernels never write their operands (an
 * in-place custom kernel copies its operand 0 into its result first), so
 * the tensor holds the loaded contents for as long as it is read. A load
 * read after a later store keeps its copy. Call after
 * rt_buffer_alias_in_place (its loads stay as they are), with alias[]
 * holding the reshape aliases. Returns how many. */
int rt_buffer_alias_loads(const ir_graph *g, int *alias);

/* ---- device models (device_buffers.c) ---- */

/* Whether some mo.mutable.store / store.slice of g writes buffer v. */
bool rt_buffer_stored(const ir_graph *g, const ir_value *v);

/* Node i of g, a mo.mutable.store.slice, compiled for target t and loaded
 * on d into c (fn, handle: the module; sym_map: the identity over g's
 * symbols). 0, or -1 with st. */
int rt_dm_store_slice_load(kiln_device *d, const jit_simt_target *t, const ir_graph *g,
                           int i, rt_code *c, kiln_status *st);

#endif
