/* help.c - usage texts for `kiln`, `kiln help` and `kiln help COMMAND`. */
#include <string.h>

#include "cli.h"

void cli_usage(FILE *out) {
  fprintf(out,
          "usage: kiln COMMAND [ARGS]\n"
          "\n"
          "commands:\n"
          "  check GRAPH.mlir       parse and verify a graph, print its canonical IR\n"
          "                         ('-' reads standard input)\n"
          "  run GRAPH.mlir [OPTS]  compile a graph and run it on the CPU\n"
          "  help [COMMAND]         show this help, or a command's\n"
          "  --version              print kiln's and LLVM's versions\n"
          "\n"
          "exit status: 0 success, 1 error (bad input, failed run), 2 usage error\n");
}

void cli_usage_check(FILE *out) {
  fprintf(out,
          "usage: kiln check GRAPH.mlir\n"
          "\n"
          "Parse and verify GRAPH.mlir ('-' reads standard input) and print its\n"
          "canonical text. On bad input prints FILE:LINE:COL: message on stderr and\n"
          "exits 1.\n");
}

void cli_usage_run(FILE *out) {
  fprintf(out,
          "usage: kiln run GRAPH.mlir [OPTIONS]\n"
          "\n"
          "Compile GRAPH.mlir, run it once (or --repeat N times) and print each\n"
          "output's name, dtype, shape and first values.\n"
          "\n"
          "  --input NAME=FILE.npy       input NAME from a .npy file (repeatable)\n"
          "  --weights FILE.safetensors  bind weights by name (repeatable)\n"
          "  --random-inputs             fill missing inputs and weights with seeded\n"
          "                              random values (floats in [-1, 1), ints in [0, 10))\n"
          "  --dim SYM=VALUE             value of a symbolic dim, for random inputs\n"
          "                              (repeatable; dims of --input files are taken\n"
          "                              from the files)\n"
          "  --seed N                    seed for --random-inputs (default 0)\n"
          "  --out DIR                   write NAME.npy per output into DIR (created)\n"
          "  --repeat N                  run N times; print median, min and max time\n"
          "  --stats                     print compile time and execute time\n"
          "\n"
          "Input names are the graph's argument_names, else its SSA names (without %%).\n");
}

int cli_help(int argc, char **argv) {
  if (argc < 2) {
    cli_usage(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "run") == 0) {
    cli_usage_run(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "check") == 0) {
    cli_usage_check(stdout);
    return CLI_OK;
  }
  fprintf(stderr, "kiln help: unknown command '%s'\n\n", argv[1]);
  cli_usage(stderr);
  return CLI_USAGE;
}
