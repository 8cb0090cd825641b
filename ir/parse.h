/* parse.h - the runtime's own entry into the MO text parser (parse.c).
 *
 * ir_parse (ir.h) reads user text and refuses every attribute in the
 * runtime's kiln.* namespace (kiln.transpose_b, kiln.packed_b, kiln.library,
 * kiln.elementwise, kiln.simt_stub): those are facts the runtime stamps on
 * nodes after checking them, and graph text cannot claim them. Kernel texts
 * (ir_kernel_text and its variants) carry those facts, and kernels are
 * compiled from their re-parsed text, so that one path reads them back here. */
#ifndef KILN_IR_PARSE_H
#define KILN_IR_PARSE_H

#include "ir.h"

/* ir_parse for a kernel text the runtime printed itself (ir_kernel_text,
 * _bound, _partial): the same grammar, checks and guarantees, but kiln.*
 * attributes are accepted. Never pass it user text. Returns a verified graph
 * the caller frees with ir_graph_free, or NULL with d filled. */
ir_graph *ir_parse_kernel_text(const char *text, size_t len, ir_diag *d);

#endif
