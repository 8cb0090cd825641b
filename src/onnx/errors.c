/* errors.c - the importer's errors: unsupported nodes are collected and
 * reported together, grouped by op type with their node names, the opset and
 * the reason (one KILN_ERR_UNSUPPORTED status); hard errors name the node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

struct ox_unsup {
  char *op;     /* op type, with its domain when not the default one */
  char *node;   /* node name or "#index" */
  char *reason;
};

const char *ox_node_label(const Onnx__NodeProto *n, char *buf, size_t cap) {
  if (!n) {
    snprintf(buf, cap, "the graph");
    return buf;
  }
  snprintf(buf, cap, "node '%s' (%s)", n->name && *n->name ? n->name : n->output && n->n_output ?
           n->output[0] : "?", n->op_type ? n->op_type : "?");
  return buf;
}

int ox_fail(ox *x, kiln_code code, const char *fmt, ...) {
  char msg[1536], lab[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rt_err(x->st, code, "ONNX %s, opset %lld: %s", ox_node_label(x->node, lab, sizeof lab),
                (long long)x->opset, msg);
}

int ox_unsupported(ox *x, const Onnx__NodeProto *n, const char *fmt, ...) {
  if (x->nunsup == x->capunsup) {
    int cap = x->capunsup ? 2 * x->capunsup : 16;
    ox_unsup *u = realloc(x->unsup, (size_t)cap * sizeof *u);
    if (!u) return 1; /* the list stays shorter; the import still fails */
    x->unsup = u;
    x->capunsup = cap;
  }
  char reason[1024] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
  }
  char op[256], node[256];
  const char *dom = n && n->domain && *n->domain && strcmp(n->domain, "ai.onnx") ? n->domain : NULL;
  snprintf(op, sizeof op, "%s%s%s", dom ? dom : "", dom ? "." : "",
           n && n->op_type ? n->op_type : "?");
  snprintf(node, sizeof node, "%s",
           n && n->name && *n->name ? n->name : n && n->n_output ? n->output[0] : "?");
  ox_unsup *u = &x->unsup[x->nunsup];
  u->op = strdup(op);
  u->node = strdup(node);
  u->reason = strdup(reason);
  if (u->op && u->node && u->reason) x->nunsup++;
  else {
    free(u->op);
    free(u->node);
    free(u->reason);
  }
  return 1;
}

/* Append to a growing string; false on out-of-memory. */
static bool cat(char **s, size_t *len, size_t *cap, const char *fmt, ...) {
  char tmp[1400];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return false;
  if (*len + (size_t)n + 1 > *cap) {
    size_t c = (*cap + (size_t)n + 1) * 2;
    char *p = realloc(*s, c);
    if (!p) return false;
    *s = p;
    *cap = c;
  }
  memcpy(*s + *len, tmp, (size_t)n + 1);
  *len += (size_t)n;
  return true;
}

int ox_report_unsupported(ox *x) {
  char *s = NULL;
  size_t len = 0, cap = 0;
  bool *done = calloc((size_t)x->nunsup + 1, sizeof *done);
  bool ok = done != NULL;
  int kinds = 0;
  for (int i = 0; ok && i < x->nunsup; i++) {
    if (done[i]) continue;
    kinds++;
    int cnt = 0;
    for (int j = i; j < x->nunsup; j++) cnt += strcmp(x->unsup[j].op, x->unsup[i].op) == 0;
    ok = cat(&s, &len, &cap, "\n  %s (%d node%s):", x->unsup[i].op, cnt, cnt == 1 ? "" : "s");
    int shown = 0;
    for (int j = i; ok && j < x->nunsup; j++) {
      if (done[j] || strcmp(x->unsup[j].op, x->unsup[i].op) != 0) continue;
      done[j] = true;
      if (shown++ < 8)
        ok = cat(&s, &len, &cap, "%s '%s'%s%s%s", shown > 1 ? "," : "", x->unsup[j].node,
                 *x->unsup[j].reason ? " (" : "", x->unsup[j].reason,
                 *x->unsup[j].reason ? ")" : "");
    }
    if (ok && shown > 8) ok = cat(&s, &len, &cap, ", and %d more", shown - 8);
  }
  free(done);
  if (!ok) {
    free(s);
    return rt_err(x->st, KILN_ERR_UNSUPPORTED, "the ONNX model uses ops kiln does not support");
  }
  rt_err(x->st, KILN_ERR_UNSUPPORTED,
         "the ONNX model (opset %lld) uses %d op type%s kiln does not support:%s",
         (long long)x->opset, kinds, kinds == 1 ? "" : "s", s ? s : "");
  free(s);
  return -1;
}

void ox_unsup_free(ox *x) {
  for (int i = 0; i < x->nunsup; i++) {
    free(x->unsup[i].op);
    free(x->unsup[i].node);
    free(x->unsup[i].reason);
  }
  free(x->unsup);
  x->unsup = NULL;
  x->nunsup = x->capunsup = 0;
}

void ox_unsup_move(ox *to, ox *from) {
  for (int i = 0; i < from->nunsup; i++) {
    ox_unsup *u = &from->unsup[i];
    if (to->nunsup == to->capunsup) {
      int cap = to->capunsup ? 2 * to->capunsup : 16;
      ox_unsup *grown = realloc(to->unsup, (size_t)cap * sizeof *grown);
      if (!grown) break; /* the list stays shorter; the import still fails */
      to->unsup = grown;
      to->capunsup = cap;
    }
    to->unsup[to->nunsup++] = *u;
    u->op = u->node = u->reason = NULL;
  }
  ox_unsup_free(from);
}
