/* main.c - `kiln`: dispatch to the subcommands (cli.h for exit codes). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    cli_usage(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("kiln %s\n", kiln_version());
    return CLI_OK;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
    return cli_help(argc - 1, argv + 1);
  if (strcmp(cmd, "check") == 0) return cli_check(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0) return cli_run(argc - 1, argv + 1);
  if (strcmp(cmd, "cache") == 0) return cli_cache(argc - 1, argv + 1);
  if (strcmp(cmd, "compile") == 0) return cli_compile(argc - 1, argv + 1);
  if (strcmp(cmd, "import") == 0) return cli_import(argc - 1, argv + 1);
  if (strcmp(cmd, "devices") == 0) return cli_devices(argc - 1, argv + 1);
  fprintf(stderr, "kiln: unknown command '%s'\n\n", cmd);
  cli_usage(stderr);
  return CLI_USAGE;
}
