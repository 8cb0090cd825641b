/* cli_profile.h - `kiln run --profile`'s table (profile.c). */
#ifndef KILN_CLI_PROFILE_H
#define KILN_CLI_PROFILE_H

#include <stdio.h>

#include "kiln/kiln.h"

/* Print m's profile with the measured peaks of where it ran (a matmul
 * compiled and run in ctx, on m's device if it has one); ctx's trace is
 * closed first. 0, or -1 with st. */
int cli_print_profile(FILE *out, kiln_context *ctx, const kiln_model *m, kiln_status *st);

#endif
