/* capture.h - internal to src/: capture / replay / verify of CPU model
 * executes (capture.c; the public calls are kiln_model_capture, _replay,
 * _verify_replay and _release in kiln/runtime.h).
 *
 * A capture is one execute's resolved binding kept under a caller's key:
 * the input dtypes and shapes, the solved symbols and the variant it ran
 * (a reference held, so the variant outlives LRU eviction). A replay of
 * inputs of the captured shapes skips solving and the variant lookup;
 * verify re-solves and says whether the captured binding still holds. */
#ifndef KILN_SRC_CAPTURE_H
#define KILN_SRC_CAPTURE_H

#include "rt.h"
#include "variants.h"

typedef struct rt_capture rt_capture;

/* Run an execute (execute.c). cap: replay that capture (NULL: solve and
 * look up as kiln_model_execute does); record: fill it from this execute
 * (NULL: none). 0, or -1 with st. */
int rt_model_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                     kiln_tensor **outputs, int noutputs, const rt_capture *cap,
                     rt_capture *record, kiln_status *st);

/* For execute.c: check bound inputs against the capture's dtypes and
 * shapes and copy its symbols into syms; remember an execute's binding. */
int rt_capture_check_inputs(const kiln_model *m, const rt_capture *c, const ir_tensor *ins,
                            int64_t *syms, kiln_status *st);
rt_variant *rt_capture_variant(const rt_capture *c);
int rt_capture_record(kiln_model *m, rt_capture *c, const ir_tensor *ins, const int64_t *syms,
                      rt_variant *var, kiln_status *st);

/* Free every capture of m (kiln_model_free). */
void rt_captures_free(kiln_model *m);

#endif
