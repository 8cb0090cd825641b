/* cli.h - the `kiln` command line: one file per subcommand plus shared
 * helpers (tensor printing, seeded random fill).
 *
 * Exit status, for every command: 0 success, 1 an error in the input or the
 * run (message on stderr), 2 a usage error (unknown command or option). */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/kiln.h"

enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };

int cli_check(int argc, char **argv); /* argv[0] is "check" */
int cli_run(int argc, char **argv);   /* argv[0] is "run" */
int cli_help(int argc, char **argv);  /* argv[0] is "help" */
int cli_cache(int argc, char **argv); /* argv[0] is "cache" (cache.c) */
int cli_devices(int argc, char **argv); /* argv[0] is "devices" (devices.c) */
int cli_compile(int argc, char **argv); /* argv[0] is "compile" (compile.c) */
int cli_import(int argc, char **argv);  /* argv[0] is "import" (import.c) */
void cli_usage_import(FILE *out);
/* A graph file: ONNX models imported, MO text parsed (load.c). */
kiln_graph *cli_load_graph(const char *path, kiln_status *st);
bool cli_is_onnx(const char *path);
void cli_usage_compile(FILE *out);
void cli_usage(FILE *out);
void cli_usage_run(FILE *out);
void cli_usage_check(FILE *out);
void cli_usage_cache(FILE *out);

/* Fill t with seeded pseudo-random values: floats uniform in [-1, 1),
 * integers in [0, 10), bools 0 / 1. `state` advances. */
void cli_fill_random(kiln_tensor *t, uint64_t *state);
/* "f32 [3, 10] = [0.1, -2, ...]": dtype, shape and the first `max` values. */
void cli_print_tensor(FILE *out, const kiln_tensor *t, int max);
/* mkdir -p; 0 or -1 with errno set. */
int cli_mkdirs(const char *path);

#endif
