/* under_test.h - the device the op and model suites compile for.
 *
 * KILN_TEST_DEVICE=cuda:0 (hip:0, simt-emu) makes every model these helpers
 * compile a model on that device instead of the CPU, so the suites that
 * check the JIT against an oracle (tests/support/oracle.c, ONNX's node tests)
 * check a GPU the same way; tools/gpu_check.sh runs them so. Unset, empty or
 * "cpu": the CPU, as always. */
#ifndef KILN_TESTS_UNDER_TEST_H
#define KILN_TESTS_UNDER_TEST_H

#include <kiln/kiln.h>

/* The spec of KILN_TEST_DEVICE, or NULL for the CPU. */
const char *under_test_device(void);

/* kiln_model_compile, or kiln_model_compile_on the device under test (opened
 * on first use and kept open for the process: Criterion runs each test in a
 * process of its own). NULL with st set when the device cannot be opened. */
kiln_model *under_test_compile(kiln_context *ctx, const kiln_graph *g, kiln_status *st);

/* A SIMT device model of graph text on the device under test, or simt-emu
 * when KILN_TEST_DEVICE names none: its status, graph, device and model,
 * which under_test_simt_close frees. 0, or -1 with u->st saying why. */
typedef struct under_test_simt {
  kiln_status *st;
  kiln_graph *g;
  kiln_device *dev;
  kiln_device_model *m;
} under_test_simt;
int under_test_simt_open(under_test_simt *u, const char *text);
void under_test_simt_close(under_test_simt *u);

#endif
