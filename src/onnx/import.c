/* import.c - ONNX model -> kiln graph (kiln/onnx.h): the driver.
 *
 *   read (mapped) -> the large initializers' raw_data found in place
 *   (wire.c) -> protobuf-c unpacks the rest -> opset of the default domain
 *   -> initializers decoded and checked (tensor.c) -> graph inputs (those
 *   that are not initializers) with dim_param symbols -> nodes in order
 *   (ops_table.c; unsupported ones collected, errors.c) -> outputs
 *   -> the weight source (weights by name, kept by the graph).
 * The decoded proto and the file's mapping are owned by the weight source:
 * weights borrow raw_data from them, so they live as long as any graph or
 * model that binds them. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_io.h"
#include "ox.h"

static void free_model(void *p) { onnx__model_proto__free_unpacked(p, NULL); }

void ox_free(ox *x) {
  for (int i = 0; i < x->nvals; i++) {
    kiln_tensor_free(x->vals[i]->init);
    free(x->vals[i]);
  }
  free(x->vals);
  free(x->index);
  ox_unsup_free(x);
}

/* The graph's inputs that are not initializers. */
static int add_inputs(ox *x, const Onnx__GraphProto *gp) {
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name) return rt_err(x->st, KILN_ERR_IO, "ONNX graph input %zu has no name", i);
    if (ox_find(x, vi->name)) continue; /* an initializer (old opsets list them as inputs) */
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
      return rt_err(x->st, KILN_ERR_UNSUPPORTED, "ONNX graph input '%s' is not a tensor",
                    vi->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ir_dtype dt;
    if (!tt->has_elem_type || !ox_dtype(tt->elem_type, &dt))
      return rt_err(x->st, KILN_ERR_UNSUPPORTED, "ONNX graph input '%s': element type %d is not "
                    "supported", vi->name, (int)tt->elem_type);
    if (!tt->shape)
      return rt_err(x->st, KILN_ERR_UNSUPPORTED, "ONNX graph input '%s' has no shape (rank "
                    "unknown)", vi->name);
    int rank = (int)tt->shape->n_dim;
    if (rank > IR_MAX_RANK)
      return rt_err(x->st, KILN_ERR_UNSUPPORTED, "ONNX graph input '%s': rank %d is over %d",
                    vi->name, rank, IR_MAX_RANK);
    char texts[IR_MAX_RANK][160];
    const char *dims[IR_MAX_RANK];
    for (int a = 0; a < rank; a++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[a];
      const ir_dim *sd = NULL;
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (d->dim_value < 0)
          return rt_err(x->st, KILN_ERR_IO, "ONNX graph input '%s': dim %d is %lld", vi->name, a,
                        (long long)d->dim_value);
        snprintf(texts[a], sizeof texts[a], "%lld", (long long)d->dim_value);
      } else {
        bool named = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                     d->dim_param && *d->dim_param;
        if (!(sd = ox_symbol(x, named ? d->dim_param : NULL)))
          return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
        ir_dim_print(sd, texts[a], sizeof texts[a]);
      }
      dims[a] = texts[a];
    }
    ox_val *v = ox_new_val(x, vi->name);
    if (!v) return -1;
    if (!(v->v = kiln_graph_add_input(x->g, vi->name, (kiln_dtype)dt, rank, dims, x->st)))
      return -1;
  }
  return 0;
}

int ox_add_initializers(ox *x, const Onnx__GraphProto *gp) {
  if (gp->n_sparse_initializer)
    return rt_err(x->st, KILN_ERR_UNSUPPORTED, "sparse initializers are not supported ('%s')",
                  gp->sparse_initializer[0]->values && gp->sparse_initializer[0]->values->name
                      ? gp->sparse_initializer[0]->values->name : "?");
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t->name || !*t->name)
      return rt_err(x->st, KILN_ERR_IO, "ONNX initializer %zu has no name", i);
    char what[512];
    snprintf(what, sizeof what, "ONNX initializer '%s'", t->name);
    ox_val *v = ox_new_val(x, t->name);
    if (!v) return -1;
    const ox_raw *raw = gp == x->raw_graph && i < x->nraw ? &x->raw[i] : NULL;
    kiln_tensor *d = ox_tensor_decode_in(t, x->dir, x->ws, raw, &v->in_file, what, x->st);
    if (!d || ox_set_init(x, v, d) < 0) {
      if (d && !v->init) kiln_tensor_free(d);
      return -1;
    }
  }
  return 0;
}

static int import_node(ox *x, const Onnx__NodeProto *n);

/* The kiln nodes made for n carry its name and op type as their origin, so
 * a run-time error about one names the ONNX node (ir_node.origin). */
int ox_import_node(ox *x, const Onnx__NodeProto *n) {
  char lab[300];
  snprintf(x->origin, sizeof x->origin, "ONNX %s", ox_node_label(n, lab, sizeof lab));
  x->g->origin = x->origin;
  int rc = import_node(x, n);
  x->g->origin = NULL;
  return rc;
}

static int import_node(ox *x, const Onnx__NodeProto *n) {
  x->node = n;
  if (!n->op_type) return ox_fail(x, KILN_ERR_IO, "a node without op_type");
  ox_val *in[64] = {0}, *out[64] = {0};
  if (n->n_input > 64 || n->n_output > 64)
    return ox_unsupported(x, n, "%zu inputs, %zu outputs", n->n_input, n->n_output) ? 0 : 0;
  if (n->n_output == 0) /* every mapper writes its first result */
    return ox_fail(x, KILN_ERR_IO, "a node (%s) without outputs", n->op_type);
  bool bad = false;
  for (size_t i = 0; i < n->n_input; i++) {
    if (!n->input[i] || !*n->input[i]) continue; /* an absent optional input */
    if (!(in[i] = ox_find(x, n->input[i])))
      return ox_fail(x, KILN_ERR_IO, "input '%s' is not defined before the node", n->input[i]);
    bad |= in[i]->bad;
  }
  for (size_t i = 0; i < n->n_output; i++)
    if (!(out[i] = ox_new_val(x, n->output[i] ? n->output[i] : ""))) return -1;
  ox_op_fn fn = ox_op_lookup(n->domain, n->op_type);
  int rc;
  if (!fn) rc = ox_unsupported(x, n, NULL);
  else if (bad) rc = 1; /* an input comes from an unsupported node: already reported */
  else rc = fn(x, n, in, (int)n->n_input, out, (int)n->n_output);
  if (rc < 0) return -1;
  if (rc > 0)
    for (size_t i = 0; i < n->n_output; i++) out[i]->bad = true;
  return 0;
}

static int set_outputs(ox *x, const Onnx__GraphProto *gp) {
  size_t n = gp->n_output;
  if (n == 0) return rt_err(x->st, KILN_ERR_IO, "the ONNX graph has no outputs");
  kiln_value **vals = calloc(n, sizeof *vals);
  const char **names = calloc(n, sizeof *names);
  int rc = -1;
  if (!vals || !names) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  x->node = NULL;
  for (size_t i = 0; i < n; i++) {
    const char *nm = gp->output[i]->name;
    ox_val *v = nm ? ox_find(x, nm) : NULL;
    if (!v) {
      rt_err(x->st, KILN_ERR_IO, "ONNX graph output '%s' is not defined", nm ? nm : "?");
      goto done;
    }
    bool unsup = false;
    if (!(vals[i] = ox_value(x, v, &unsup))) {
      if (unsup) rc = ox_report_unsupported(x);
      goto done;
    }
    names[i] = nm;
  }
  rc = kiln_graph_set_outputs(x->g, vals, (int)n, names, x->st);
done:
  free(vals);
  free(names);
  return rc;
}

static int64_t default_opset(const Onnx__ModelProto *m) {
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if (!d || !*d || strcmp(d, "ai.onnx") == 0) return m->opset_import[i]->version;
  }
  return 1;
}

/* Import from bytes; dir is the model's directory (NULL: from memory).
 * map_kept NULL: data is the caller's (copied where kept); else data is
 * the file's read-only mapping, and *map_kept says whether the weight
 * source took it (initializers read in place borrow from it). */
static kiln_graph *import(const void *data, size_t len, const char *dir, bool *map_kept,
                          const char *what, kiln_status *st) {
  ox_split sp;
  int split = ox_wire_split(data, len, OX_IN_PLACE_MIN, &sp, what, st);
  if (split < 0) return NULL;
  Onnx__ModelProto *mp = split ? onnx__model_proto__unpack(NULL, sp.rest_len, sp.rest)
                               : onnx__model_proto__unpack(NULL, len, data);
  free(sp.rest); /* protobuf-c copied what it read */
  sp.rest = NULL;
  if (!mp) {
    ox_split_free(&sp);
    rt_err(st, KILN_ERR_IO, "%s: not a valid ONNX model (malformed or truncated protobuf)", what);
    return NULL;
  }
  if (!mp->graph) {
    ox_split_free(&sp);
    onnx__model_proto__free_unpacked(mp, NULL);
    rt_err(st, KILN_ERR_IO, "%s: the ONNX model has no graph", what);
    return NULL;
  }
  for (size_t i = 0; i < sp.nraw; i++) sp.raw[i].mapped = map_kept != NULL;
  ox x = {.dir = dir, .st = st, .opset = default_opset(mp), .raw = sp.raw, .nraw = sp.nraw,
          .raw_graph = mp->graph};
  if (!(x.ws = rt_wsrc_new(st))) {
    ox_split_free(&sp);
    onnx__model_proto__free_unpacked(mp, NULL);
    return NULL;
  }
  if (rt_wsrc_keep(x.ws, mp, free_model, st) < 0) goto fail;
  if (split && map_kept) { /* on failure keep_map unmaps it at once */
    *map_kept = true;
    if (rt_wsrc_keep_map(x.ws, (void *)data, len, st) < 0) goto fail;
  }
  const Onnx__GraphProto *gp = mp->graph;
  x.gp = gp;
  if (!(x.g = kiln_graph_new("onnx", st))) goto fail;
  x.ir = x.g->ir;
  if (ox_add_initializers(&x, gp) < 0 || add_inputs(&x, gp) < 0) goto fail;
  for (size_t i = 0; i < gp->n_node; i++)
    if (ox_import_node(&x, gp->node[i]) < 0) goto fail;
  if (x.nunsup > 0) {
    ox_report_unsupported(&x);
    goto fail;
  }
  if (set_outputs(&x, gp) < 0) goto fail;
  x.g->wsrc = x.ws;
  ox_free(&x);
  ox_split_free(&sp);
  rt_ok(st);
  return x.g;
fail:
  if (x.nunsup > 0 && kiln_status_code(st) != KILN_ERR_UNSUPPORTED) {
    /* a hard error after unsupported nodes: say both, the hard one first */
    char first[1024];
    snprintf(first, sizeof first, "%s", kiln_status_message(st));
    kiln_code code = kiln_status_code(st);
    ox_report_unsupported(&x);
    char *all = strdup(kiln_status_message(st));
    rt_err(st, code, "%s; also, %s", first, all ? all : "unsupported ops");
    free(all);
  }
  ox_free(&x);
  ox_split_free(&sp);
  kiln_graph_free(x.g);
  rt_wsrc_release(x.ws);
  return NULL;
}

KILN_API kiln_graph *kiln_graph_from_onnx_memory(const void *data, size_t len, kiln_status *st) {
  if (!data && len) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_from_onnx_memory: data is NULL");
    return NULL;
  }
  static const uint8_t none = 0;
  return import(data ? data : &none, len, NULL, NULL, "ONNX model", st);
}

KILN_API kiln_graph *kiln_graph_from_onnx_file(const char *path, kiln_status *st) {
  if (!path) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_from_onnx_file: path is NULL");
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
  if (fd < 0) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, "%s: %s", path,
           strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
    rt_err(st, KILN_ERR_IO, "%s: not a regular file", path);
    close(fd);
    return NULL;
  }
  size_t len = (size_t)sb.st_size;
  void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len && map == MAP_FAILED) {
    rt_err(st, KILN_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    return NULL;
  }
  char *pcopy = strdup(path);
  if (!pcopy) {
    if (map) munmap(map, len);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  static const uint8_t none = 0;
  /* the weight source keeps the mapping when initializers are read in place
   * from it; else protobuf-c copied what it keeps and the mapping goes */
  bool kept = false;
  kiln_graph *g = import(map ? map : &none, len, dirname(pcopy), map ? &kept : NULL, path, st);
  if (map && !kept) munmap(map, len);
  free(pcopy);
  return g;
}

struct rt_wsrc *rt_graph_weight_source(const kiln_graph *g) { return g ? g->wsrc : NULL; }

bool rt_onnx_is_model_path(const char *path) {
  size_t n = path ? strlen(path) : 0;
  return n >= 5 && strcmp(path + n - 5, ".onnx") == 0;
}
