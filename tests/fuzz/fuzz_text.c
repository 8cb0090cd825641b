/* fuzz_text.c - libFuzzer target for the MO text reader: any bytes go
 * through kiln_graph_parse (lexer, parser, MAX-printed forms, verifier, shape
 * inference), which must return a graph or a status, never crash, hang or
 * leak. A graph it accepts must print, and the printed text must parse again
 * and print the same (the canonical form is a fixed point). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse((const char *)data, size, "fuzz", st);
  if (!g && kiln_status_code(st) == KILN_OK) __builtin_trap(); /* a failure says why */
  if (g) {
    char *text = kiln_graph_print(g, st);
    if (!text) __builtin_trap();
    kiln_graph *again = kiln_graph_parse(text, strlen(text), "printed", st);
    if (!again) __builtin_trap(); /* kiln printed text it cannot read */
    char *text2 = kiln_graph_print(again, st);
    if (!text2 || strcmp(text, text2) != 0) __builtin_trap();
    free(text2);
    free(text);
    kiln_graph_free(again);
  }
  kiln_graph_free(g);
  kiln_status_free(st);
  return 0;
}
