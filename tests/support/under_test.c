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

int under_test_simt_open(under_test_simt *u, const char *text) {
  memset(u, 0, sizeof *u);
  u->st = kiln_status_new();
  if (!u->st) return -1;
  const char *spec = under_test_device() ? under_test_device() : "simt-emu";
  if (!(u->g = kiln_graph_parse(text, strlen(text), "g.mlir", u->st))) return -1;
  if (!(u->dev = kiln_device_open(spec, u->st))) return -1;
  return (u->m = kiln_device_model_compile(u->dev, u->g, u->st)) ? 0 : -1;
}

void under_test_simt_close(under_test_simt *u) {
  kiln_device_model_free(u->m);
  kiln_device_close(u->dev);
  kiln_graph_free(u->g);
  kiln_status_free(u->st);
  memset(u, 0, sizeof *u);
}
