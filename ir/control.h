/* control.h - control flow in the IR: mo.if, mo.while, mo.call, their regions
 * and the module's subgraphs (control.c, flow.c).
 *
 * Text (ir/parse.c, ir/print.c): regions are whole graphs written in braces
 * after the node's types, and a module is its main graph followed by the
 * subgraphs mo.call names:
 *   %r = mo.if(%p, %x) : (!mo.tensor<[], bool>, T) -> R {
 *     mo.graph @then(%a: T) -> R { ... }
 *     mo.graph @else(%a: T) -> R { ... }
 *   }
 *   %i2, %x2 = mo.while(%i, %x) : (I, X) -> (I, X2) {
 *     mo.graph @cond(%i: I, %x: X) -> !mo.tensor<[], bool> { ... }
 *     mo.graph @body(%i: I, %x: X) -> (I, X) { ... }
 *   }
 *   %y = mo.call @layer(%x, %w) {prefix = "layer0."} : ...
 * Semantics (MAX's ops.cond, ops.while_loop, ops.call; seed 002):
 *   - mo.if(pred, args...): pred is a bool scalar; the region it picks runs
 *     on args and gives the results. Both regions take args and return the
 *     result types.
 *   - mo.while(init...): the carried values start as init; while @cond on
 *     them gives true, @body maps them to the next carried values; the
 *     results are the last carried values. There is no iteration limit (MAX
 *     has none): the loop runs until @cond gives false.
 *   - mo.call @g(args...): subgraph @g of the module on args; `prefix` is
 *     put before the names of @g's weights (mo.constant.external), so one
 *     layer called N times reads N sets of weights.
 * Regions and subgraphs are isolated: they see only their inputs, and have
 * their own symbols, so a carried value's dims may change per iteration.
 * In the text, a mo.if branch may name values of the graphs enclosing it
 * (MAX writes branches without inputs, as closures): the parser lifts each
 * into an operand of the mo.if and an input of every branch, after the
 * declared ones, in the order the branches first name them
 * (parse_capture.c), so the IR holds only isolated regions.
 * Types match by ir_type_fits: same dtype, rank and device, and equal dims
 * where both sides are constants; a symbolic dim on either side matches
 * any size, which the region's own symbol solving then checks per run.
 * A control node's results are declared (the text's types): dims the outer
 * graph cannot derive may be fresh symbols, known once the node has run
 * (flow.c splits such a graph where it needs to). */
#ifndef KILN_IR_CONTROL_H
#define KILN_IR_CONTROL_H

#include "ir.h"

/* Whether a value of type got may stand where type want is expected (above). */
bool ir_type_fits(const ir_type *want, const ir_type *got);
/* mo.if, mo.while or mo.call (NULL: false). */
bool ir_node_is_control(const ir_node *n);
/* Whether one of g's own nodes (regions aside) is a control node. */
bool ir_graph_has_control(const ir_graph *g);

/* Subgraph `name` of module `main`, or NULL. */
ir_graph *ir_module_find(const ir_graph *main, const char *name);
/* Add sub to main's subgraphs (main owns it from then on, even on failure;
 * sub->nested is set). 0, or -1 with d filled: out of memory, or a name
 * the module already has. */
int ir_module_add_subgraph(ir_graph *main, ir_graph *sub, ir_diag *d);
/* Give node n of g its regions (n owns them from then on, even on failure;
 * each gets nested set). 0, or -1 on out of memory. */
int ir_node_set_regions(ir_graph *g, ir_node *n, ir_graph *const *regions, int nregions);

/* The module's calls: every mo.call in main, its subgraphs and all their
 * regions names a subgraph that exists, with operand and result counts and
 * types that fit its signature, and no subgraph calls itself, directly or
 * through others. 0, or -1 with d filled at the call's line:col.
 * ir_parse runs it on the main graph; ir_graph_verify on every graph that
 * has subgraphs and is not nested. */
int ir_module_verify(const ir_graph *main, ir_diag *d);

/* For graph.c: free the regions and subgraphs g owns; deep-copy them from
 * g into its clone c (node i of c is node i of g). -1 on out of memory. */
void ir_control_free(ir_graph *g);
int ir_control_clone(const ir_graph *g, ir_graph *c);

/* ---- flow.c: a graph with control nodes as a list of steps ----
 * Each step is either a segment (a maximal run of the graph's other nodes,
 * as a graph of its own: inputs are the values it reads from earlier steps
 * or the graph's inputs, outputs the values later steps or the graph's
 * outputs read) or one control node. The interpreter and the CPU runtime
 * both run graphs with control flow this way, one step at a time, each
 * step solving its own symbols from the shapes it is given. */
typedef struct ir_flow_step {
  const ir_node *node; /* the control node, or NULL for a segment */
  ir_graph *seg;       /* the segment (owned), or NULL */
  int nin, nout;
  int *in, *out;       /* value ids of the split graph: what it reads, what it defines */
} ir_flow_step;

typedef struct ir_flow {
  int nsteps;
  ir_flow_step *steps;
} ir_flow;

/* Split verified g (segments get g's symbols, names and locations). NULL
 * with d filled on out of memory or when a segment does not verify. */
ir_flow *ir_flow_split(const ir_graph *g, ir_diag *d);
void ir_flow_free(ir_flow *f); /* NULL ok */

/* ---- interp_control.c: the reference interpreter of such graphs ----
 * ir_interp_run calls it for a graph with control nodes; main is the module
 * (whose subgraphs mo.call finds). Same contract as ir_interp_run. */
struct ir_tensor;
typedef const struct ir_tensor *(*ir_flow_weight_fn)(void *ud, const char *name);
int ir_interp_flow(const ir_graph *main, const ir_graph *g, const struct ir_tensor *inputs,
                   ir_flow_weight_fn weights, void *ud, struct ir_tensor *outputs, char *msg,
                   size_t msglen);

#endif
