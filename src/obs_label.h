/* obs_label.h - internal to src/: the names traces, profiles, logs and perf
 * maps give kernels (obs_label.c): the op, or a fused group's ops joined by
 * '+', and a type as "[batch, 128] f32". Always NUL-terminated, cut to
 * cap; never fail. */
#ifndef KILN_SRC_OBS_LABEL_H
#define KILN_SRC_OBS_LABEL_H

#include <stddef.h>

#include "ir/ir.h"

/* "mo.matmul" or "mo.add+mo.relu" for node i of g. */
const char *rt_obs_node_ops(const ir_graph *g, int i, char *buf, size_t cap);
/* "[batch, 128] f32" */
const char *rt_obs_type_text(const ir_type *t, char *buf, size_t cap);
/* A kernel graph (a kernel text parsed back): its ops joined by '+', a
 * space and its first output's type: "mo.add+mo.relu [4, 128] f32". */
const char *rt_obs_kernel_label(const ir_graph *kg, char *buf, size_t cap);

#endif
