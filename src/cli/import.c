/* import.c - `kiln import MODEL.onnx -o GRAPH.mlir --weights-out W.safetensors`:
 * the imported graph as MO text (what `kiln check` accepts) and the weights
 * the model carries as .safetensors, so that `kiln run GRAPH.mlir --weights
 * W.safetensors` computes what `kiln run MODEL.onnx` does, bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "src/io.h"
#include "src/onnx/onnx_io.h"
#include "src/weight_source.h"

void cli_usage_import(FILE *out) {
  fprintf(out,
          "usage: kiln import MODEL.onnx [-o GRAPH.mlir] [--weights-out W.safetensors]\n"
          "\n"
          "Import an ONNX model and write it as MO text (standard output without -o)\n"
          "and its weights (initializers that became mo.constant.external) as a\n"
          ".safetensors file; --weights-out is required when the model has weights.\n"
          "`kiln run GRAPH.mlir --weights W.safetensors` then gives the same results as\n"
          "`kiln run MODEL.onnx`. Unsupported ops are listed all at once (exit 1).\n");
}

static int write_text(const char *path, const char *text) {
  FILE *f = path ? fopen(path, "w") : stdout;
  if (!f) {
    perror(path);
    return -1;
  }
  size_t n = strlen(text);
  bool ok = fwrite(text, 1, n, f) == n && (n == 0 || text[n - 1] == '\n' || fputc('\n', f) != EOF);
  if (path) ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "%s: write error\n", path ? path : "<stdout>");
  return ok ? 0 : -1;
}

int cli_import(int argc, char **argv) {
  const char *model = NULL, *out = NULL, *wout = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      cli_usage_import(stdout);
      return CLI_OK;
    } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--weights-out") == 0 && i + 1 < argc) {
      wout = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "kiln import: unknown option or missing value '%s'\n\n", argv[i]);
      cli_usage_import(stderr);
      return CLI_USAGE;
    } else if (!model) {
      model = argv[i];
    } else {
      fprintf(stderr, "kiln import: more than one model given\n\n");
      cli_usage_import(stderr);
      return CLI_USAGE;
    }
  }
  if (!model) {
    fprintf(stderr, "kiln import: no model given\n\n");
    cli_usage_import(stderr);
    return CLI_USAGE;
  }
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_file(model, st);
  char *text = g ? kiln_graph_print(g, st) : NULL;
  int rc = CLI_ERR;
  if (!text) {
    fprintf(stderr, "%s\n", kiln_status_message(st));
    goto done;
  }
  struct rt_wsrc *ws = rt_graph_weight_source(g);
  int nw = rt_wsrc_count(ws);
  if (nw > 0 && !wout) {
    fprintf(stderr, "kiln import: %s has %d weight%s: pass --weights-out FILE.safetensors\n",
            model, nw, nw == 1 ? "" : "s");
    rc = CLI_USAGE;
    goto done;
  }
  if (wout) {
    const char **names = calloc((size_t)nw + 1, sizeof *names);
    kiln_tensor **ts = calloc((size_t)nw + 1, sizeof *ts);
    int wrc = -1, got = 0;
    if (names && ts) {
      for (; got < nw; got++) {
        names[got] = rt_wsrc_name(ws, got);
        if (!(ts[got] = rt_wsrc_get(ws, got, st))) break;
      }
      if (got == nw)
        wrc = rt_safetensors_write(wout, names, (const kiln_tensor *const *)ts, nw, st);
    }
    for (int i = 0; i < got; i++) kiln_tensor_free(ts[i]);
    free(names);
    free(ts);
    if (wrc < 0) {
      fprintf(stderr, "%s\n", kiln_status_message(st));
      goto done;
    }
  }
  if (write_text(out, text) == 0) rc = CLI_OK;
done:
  free(text);
  kiln_graph_free(g);
  kiln_status_free(st);
  return rc;
}
