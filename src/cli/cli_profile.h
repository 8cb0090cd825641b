/* cli_profile.h - `kiln run --profile`'s table (profile.c). */
#ifndef KILN_CLI_PROFILE_H
#define KILN_CLI_PROFILE_H

#include <stdio.h>

#include "kiln/kiln.h"

/* Print m's profile with the machine's measured peaks (a matmul compiled
 * and run in ctx). 0, or -1 with st. */
int cli_print_profile(FILE *out, kiln_context *ctx, const kiln_model *m, kiln_status *st);

#endif
