/* spec_worth.c - whether specializing a binding could pay (spec_policy.h,
 * rt_spec_share): the estimated share of an execute's time spent in the
 * kernels a bound shape can speed up.
 *
 * A variant rebuilds only the kernels whose backend says a bound shape can
 * help (node_syms > 0); the rest (on the host, every f32 / f64 GEMM) run
 * the same code either way. When those kernels are a small part of the
 * execute, no variant can make it noticeably faster, and its compile (a few
 * seconds of CPU for an encoder layer) only takes a core from the requests.
 * The estimate is a roofline of each kernel at the binding: its bytes (every
 * operand and result) at RT_SPEC_EST_BYTES_PER_NS plus, for a GEMM (fused or
 * not), 2 * M * N * K flops at RT_SPEC_EST_FLOPS_PER_NS. Only the ratio of
 * the two rates matters (about ten flops per byte on the hosts measured: a
 * GEMM at ~150 GFLOP/s, a norm at ~15 GB/s). */
#include "spec_policy.h"

#include "backend.h"
#include "ir/shape.h"
#include "rt.h"

#define RT_SPEC_EST_BYTES_PER_NS 10.0  /* 10 GB/s */
#define RT_SPEC_EST_FLOPS_PER_NS 100.0 /* 100 GFLOP/s */

/* Elements of value v at the binding, or -1 when its shape does not
 * evaluate (a dim read from data, a symbol not bound). */
static double numel_at(const ir_value *v, const int64_t *syms) {
  int64_t shape[IR_MAX_RANK];
  char msg[8];
  if (ir_eval_shape(&v->type, syms, shape, msg, sizeof msg) < 0) return -1;
  double n = 1;
  for (int a = 0; a < v->type.rank; a++) n *= (double)shape[a];
  return n;
}

/* The estimated ns of node n at the binding, or -1 when unknown. */
static double node_ns(const ir_node *n, const int64_t *syms) {
  double bytes = 0;
  for (int k = 0; k < n->nin + n->nout; k++) {
    const ir_value *v = k < n->nin ? n->in[k] : n->out[k - n->nin];
    double e = numel_at(v, syms);
    if (e < 0) return -1;
    bytes += e * (double)ir_dtype_size(v->type.dtype);
  }
  double flops = 0;
  const ir_node *mm = ir_node_matmul(n);
  if (mm && mm->nin >= 2 && mm->out[0]->type.rank >= 1) {
    /* 2 * (batch * M * K) * N: A's elements times the result's columns */
    double a = numel_at(mm->in[0], syms);
    int64_t out[IR_MAX_RANK];
    char msg[8];
    if (a < 0 || ir_eval_shape(&mm->out[0]->type, syms, out, msg, sizeof msg) < 0) return -1;
    flops = 2.0 * a * (double)out[mm->out[0]->type.rank - 1];
  }
  return bytes / RT_SPEC_EST_BYTES_PER_NS + flops / RT_SPEC_EST_FLOPS_PER_NS;
}

double rt_spec_share(const kiln_model *m, const int64_t *syms) {
  double all = 0, bound = 0;
  for (int i = 0; i < m->g->nnodes; i++) {
    int ns = m->be->node_syms(m, i);
    if (ns < 0) continue; /* no kernel */
    double t = node_ns(m->g->nodes[i], syms);
    if (t < 0) return 1.0; /* unknown: let the trial decide */
    all += t;
    if (ns > 0) bound += t;
  }
  return all > 0 ? bound / all : 1.0;
}
