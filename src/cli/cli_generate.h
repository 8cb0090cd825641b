/* cli_generate.h - `kiln run --generate`: a decoder graph driven greedily
 * (generate.c has the input convention). */
#ifndef KILN_CLI_GENERATE_H
#define KILN_CLI_GENERATE_H

#include "kiln/kiln.h"

/* Runs the prompt, then `steps` greedy tokens, on m (compiled, weights
 * bound); prints the prompt, the generated tokens and the step times.
 * *prefill_ms: the prompt's execute. 0, or -1 after printing why on stderr. */
int cli_generate(kiln_model *m, const int64_t *prompt, int nprompt, long steps,
                 double *prefill_ms, kiln_status *st);

#endif
