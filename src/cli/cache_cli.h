/* cache_cli.h - internal to the `kiln cache` command: its options and the
 * helpers its files share (cache.c: dispatch, ls, stats, prune, verify,
 * explain, warm; cache_bundle.c: export, import; cache_sign.c: keys and
 * bundle signatures; cache_recompile.c: verify --recompile; cache_remote.c:
 * the remote cache on Redis). */
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
  const char *sign;        /* export --sign SECRET_KEY, or NULL */
  const char **trust_keys; /* import --trust-key PUBLIC_KEY, repeatable */
  int ntrust_keys;
  bool trust_unsigned; /* import --trust-unsigned */
  bool recompile;      /* verify --recompile */
  const char *sample;  /* verify --sample N text, or NULL */
  bool remote;            /* --remote[=URL]: ls, stats, warm on the remote cache */
  const char *remote_url; /* its URL, or NULL: KILN_CACHE_REMOTE */
  bool runtime_off; /* KILN_CACHE disables the store for the runtime */
  const char *runtime_off_value;
} cache_opts;

/* "812 B", "1.5 KiB", "3.2 GiB" into buf. */
const char *cli_human_bytes(char *buf, size_t cap, uint64_t v);

/* Subcommands in cache_bundle.c: 0, CLI_ERR or CLI_USAGE after printing why. */
int cli_cache_export(const cache_opts *o, kc_disk *d);
int cli_cache_import(const cache_opts *o, kc_disk *d);
/* `kiln cache keygen SECRET PUBLIC` (no store). */
int cli_cache_keygen(const cache_opts *o);
/* `kiln cache verify --recompile [--sample N]`. */
int cli_cache_recompile(const cache_opts *o, kc_disk *d);

/* The remote cache (cache_remote.c): its server from --remote=URL, else
 * KILN_CACHE_REMOTE (NULL after printing why); push, pull, ls --remote,
 * stats --remote. */
struct kr_remote;
struct kr_remote *cli_remote_open(const cache_opts *o, const char *cmd);
int cli_cache_push(const cache_opts *o, kc_disk *d);
int cli_cache_pull(const cache_opts *o, kc_disk *d);
int cli_cache_ls_remote(const cache_opts *o);
int cli_cache_stats_remote(const cache_opts *o);

/* The signature line of buf[n] with the secret key at secret_path, into
 * line[cap]. 0, or -1 with why. */
int cli_bundle_sign(const char *secret_path, const void *buf, size_t n, char *line, size_t cap,
                    char *why, size_t whylen);
/* Whether the bundle buf[n] with the bytes after its "end\n" line,
 * trailer[tlen] (tlen 0: unsigned), may be imported under the trusted
 * public key files keys[nkeys] and --trust-unsigned. 0 with a note for the
 * user (may be ""), or -1 with why. */
int cli_bundle_check(const char *trailer, size_t tlen, const void *buf, size_t n,
                     const char *const *keys, int nkeys, bool trust_unsigned, char *note,
                     size_t notelen, char *why, size_t whylen);

#endif
