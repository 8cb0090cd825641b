/* cli_dot.h - Graphviz DOT of a graph before and after fusion (dot.c). */
#ifndef KILN_CLI_DOT_H
#define KILN_CLI_DOT_H

#include "kiln/kiln.h"

/* Write kg (verified) to path as DOT: the graph as given and as prepared
 * for the host, fused groups as clusters, shapes on edges. 0, or -1 with
 * st (a preparation error names the node; a file error the path). */
int cli_write_dot(const char *path, const kiln_graph *kg, kiln_status *st);

#endif
