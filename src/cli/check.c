/* check.c - `kiln check GRAPH.mlir [--dot F]`: parse + verify, print
 * canonical IR; --dot also writes the graph before and after fusion as
 * Graphviz DOT (dot.c). Errors print the status message
 * ("FILE:LINE:COL: message") and exit 1. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_dot.h"

/* All of stdin, malloc'd; NULL on failure. */
static char *read_stdin(size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, stdin);
    if (n < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      return NULL;
    }
    buf = nb;
    cap *= 2;
  }
  if (buf && ferror(stdin)) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

int cli_check(int argc, char **argv) {
  const char *dot = NULL;
  if (argc == 4 && strcmp(argv[2], "--dot") == 0) {
    dot = argv[3];
    argc = 2;
  } else if (argc == 4 && strcmp(argv[1], "--dot") == 0) {
    dot = argv[2];
    argv[2] = argv[3];
    argv++;
    argc = 2;
  }
  if (argc != 2 || (argv[1][0] == '-' && argv[1][1] != 0)) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
      cli_usage_check(stdout);
      return CLI_OK;
    }
    cli_usage_check(stderr);
    return CLI_USAGE;
  }
  kiln_status *st = kiln_status_new();
  kiln_graph *g = NULL;
  if (strcmp(argv[1], "-") == 0) {
    size_t len = 0;
    char *text = read_stdin(&len);
    if (!text) {
      fprintf(stderr, "<stdin>: read error\n");
      kiln_status_free(st);
      return CLI_ERR;
    }
    g = kiln_graph_parse(text, len, "<stdin>", st);
    free(text);
  } else {
    g = cli_load_graph(argv[1], st);
  }
  char *out = g ? kiln_graph_print(g, st) : NULL;
  int rc = CLI_ERR;
  if (out && dot && cli_write_dot(dot, g, st) < 0) {
    free(out);
    out = NULL;
  }
  if (out) {
    fputs(out, stdout);
    size_t n = strlen(out);
    if (n == 0 || out[n - 1] != '\n') fputc('\n', stdout);
    rc = CLI_OK;
  } else {
    fprintf(stderr, "%s\n", kiln_status_message(st));
  }
  free(out);
  kiln_graph_free(g);
  kiln_status_free(st);
  return rc;
}
