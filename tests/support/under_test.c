/* under_test.c - KILN_TEST_DEVICE: see under_test.h. */
#include "under_test.h"

#include <stdlib.h>
#include <string.h>

const char *under_test_device(void) {
  const char *spec = getenv("KILN_TEST_DEVICE");
  return spec && *spec && strcmp(spec, "cpu") != 0 ? spec : NULL;
}

kiln_model *under_test_compile(kiln_context *ctx, const kiln_graph *g, kiln_status *st) {
  static kiln_device *dev;
  const char *spec = under_test_device();
  if (!spec) return kiln_model_compile(ctx, g, st);
  if (!dev && !(dev = kiln_device_open(spec, st))) return NULL;
  return kiln_model_compile_on(ctx, dev, g, st);
}
