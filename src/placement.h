/* placement.h - internal to src/: where a graph's values live (the device
 * of their types, ir_type.device) and which placements each runtime runs
 * (placement.c). */
#ifndef KILN_SRC_PLACEMENT_H
#define KILN_SRC_PLACEMENT_H

#include <stdbool.h>

#include "rt.h"

/* The CPU model (kiln_model_compile): every value on the host (cpu:N, any
 * N: one host memory). 0, or -1 with st naming the first value on a GPU
 * and how to run the graph there. */
int rt_place_check_host(const ir_graph *g, kiln_status *st);

/* A device model on device `label` ("cuda:0"): the graph's values on a GPU
 * must all name one GPU (gpu:N, which stands for this device). *placed:
 * whether any value is on a GPU. A placed graph computes on the GPU only:
 * every node other than a constant, a weight and mo.transfer_to must make
 * its results there. An unplaced graph (types without a device: cpu:0)
 * runs wholly on the device, as before devices were part of types. 0, or
 * -1 with st saying what and where. */
int rt_place_check_device(const ir_graph *g, const char *label, bool *placed, kiln_status *st);

#endif
