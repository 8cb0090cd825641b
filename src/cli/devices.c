/* devices.c - `kiln devices`: list every kind of device, how many this
 * machine has, and for each one what the driver says; where a kind has none,
 * why (no driver library, no device, driver too old). Exit 0 even when no
 * GPU is found: that is an answer, not an error. */
#include <string.h>

#include "cli.h"

int cli_devices(int argc, char **argv) {
  if (argc > 1) {
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
      printf("usage: kiln devices\n\nLists cpu, cuda, hip and simt-emu devices, or why there "
             "are none.\n");
      return CLI_OK;
    }
    fprintf(stderr, "kiln devices: unexpected argument '%s'\n", argv[1]);
    return CLI_USAGE;
  }
  kiln_status *st = kiln_status_new();
  if (!st) {
    fprintf(stderr, "kiln devices: out of memory\n");
    return CLI_ERR;
  }
  static const kiln_device_kind kinds[] = {KILN_DEVICE_CPU, KILN_DEVICE_CUDA, KILN_DEVICE_HIP,
                                           KILN_DEVICE_SIMT_EMU};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const char *kn = kiln_device_kind_name(kinds[k]);
    int n = kiln_device_count(kinds[k], st);
    if (n <= 0) {
      printf("%-9s none: %s\n", kn, kiln_status_message(st));
      continue;
    }
    for (int i = 0; i < n; i++) {
      char spec[32];
      snprintf(spec, sizeof spec, "%s:%d", kn, i);
      kiln_device *d = kiln_device_open(spec, st);
      if (!d) {
        printf("%-9s %s\n", spec, kiln_status_message(st));
        continue;
      }
      printf("%-9s %s\n", kiln_device_label(d), kiln_device_description(d));
      kiln_device_close(d);
    }
  }
  kiln_status_free(st);
  return CLI_OK;
}
