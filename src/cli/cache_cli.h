/* cache_cli.h - internal to the `kiln cache` command: its options and the
 * helpers its files share (cache.c: dispatch, ls, stats, prune, verify,
 * explain, warm; cache_bundle.c: export, import). */
#ifndef KILN_CLI_CACHE_CLI_H
#define KILN_CLI_CACHE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cache_disk.h"

typedef struct cache_opts {
  const char *sub;
  const char *dir;
  const char *max_bytes; /* --max-bytes text, or NULL */
  const char **pos;      /* positional arguments after the subcommand */
  int npos;
  const char **dims; /* --dim SYM=V[,V...] texts */
  int ndims;
  const char *target; /* warm --target NAME, or NULL */
  const char **kernels; /* warm / explain --kernels FILE, in order */
  int nkernels;
  bool runtime_off; /* KILN_CACHE disables the store for the runtime */
  const char *runtime_off_value;
} cache_opts;

/* "812 B", "1.5 KiB", "3.2 GiB" into buf. */
const char *cli_human_bytes(char *buf, size_t cap, uint64_t v);

/* Subcommands in cache_bundle.c: 0, CLI_ERR or CLI_USAGE after printing why. */
int cli_cache_export(const cache_opts *o, kc_disk *d);
int cli_cache_import(const cache_opts *o, kc_disk *d);

#endif
