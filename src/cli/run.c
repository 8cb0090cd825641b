/* run.c - `kiln run GRAPH.mlir [OPTIONS]` (see cli_usage_run).
 *
 * Order of work: parse options, load and compile the graph, bind --dim,
 * read --input files (their shapes also bind plain symbolic dims not given
 * by --dim), bind --weights, fill what is still missing when
 * --random-inputs, apply --bucket and --specialize, execute (N times with
 * --repeat; outputs are allocated by the first run and reused), print,
 * write --out files. With --device the graph compiles for that device
 * (kiln_model_compile_on) and the executes run there; outputs the graph
 * leaves on the device (typed gpu:N) are copied to the host to be printed
 * or written. --bucket and --specialize steer the model's variants on
 * every device. --generate N (with --prompt) replaces the inputs and the
 * executes: the graph is driven as a decoder (generate.c). Every error
 * prints one message on stderr and exits 1; bad options exit 2. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cache_mem.h"
#include "../device.h"
#include "../io.h"
#include "../kernel_lib.h"
#include "../name_map.h"
#include "../weight_file.h"
#include "../variants.h"
#include "kiln/custom.h"
#include "kiln/device.h"
#include "cli.h"
#include "cli_generate.h"
#include "cli_profile.h"

typedef struct named {
  char *name;
  const char *value;
} named;

typedef struct run_opts {
  const char *graph, *out;
  const char *device; /* --device; NULL or "cpu": the CPU model runs */
  named *inputs, *dims, *buckets;
  const char **weights;
  const char **kernels; /* --kernels FILE.c|.ll|.bc, in order */
  int ninputs, ndims, nweights, nbuckets, nkernels;
  bool random, stats, profile; /* --profile: the per-kernel table (profile.c) */
  const char *trace;           /* --trace FILE: Chrome trace-event JSON */
  int specialize; /* kiln_specialize_policy, -1: not given (the context's) */
  long repeat;
  long generate;   /* --generate N: tokens to generate after --prompt; 0: a plain run */
  int64_t *prompt; /* --prompt T,T,...: token ids */
  int nprompt;
  uint64_t seed;
  int threads; /* --threads; -1: the context's default */
} run_opts;

static bool parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

/* --opt VALUE or --opt=VALUE; *val is NULL when the option does not match. */
static int opt_value(int argc, char **argv, int *i, const char *opt, const char **val) {
  size_t n = strlen(opt);
  *val = NULL;
  if (strncmp(argv[*i], opt, n) != 0) return 0;
  if (argv[*i][n] == '=') {
    *val = argv[*i] + n + 1;
    return 1;
  }
  if (argv[*i][n] != 0) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "kiln run: %s needs a value\n", opt);
    return -1;
  }
  *val = argv[++*i];
  return 1;
}

static int split_named(const char *opt, const char *v, named *out) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v || !eq[1]) {
    fprintf(stderr, "kiln run: %s expects NAME=VALUE, got '%s'\n", opt, v);
    return -1;
  }
  out->name = strndup(v, (size_t)(eq - v));
  out->value = eq + 1;
  return out->name ? 0 : -1;
}

static void opts_free(run_opts *o) {
  for (int i = 0; i < o->ninputs; i++) free(o->inputs[i].name);
  for (int i = 0; i < o->ndims; i++) free(o->dims[i].name);
  for (int i = 0; i < o->nbuckets; i++) free(o->buckets[i].name);
  free(o->inputs);
  free(o->dims);
  free(o->buckets);
  free(o->weights);
  free(o->kernels);
  free(o->prompt);
}

/* --prompt "1,7,3": at least one token id >= 0. */
static int parse_prompt(const char *v, run_opts *o) {
  size_t cap = strlen(v) / 2 + 1;
  char *end;
  free(o->prompt);
  o->nprompt = 0;
  if (!(o->prompt = calloc(cap, sizeof *o->prompt))) return -1;
  for (const char *c = v;; c = end + 1) {
    errno = 0;
    long long t = strtoll(c, &end, 10);
    if (end == c || errno || t < 0 || (*end && *end != ',') || (size_t)o->nprompt >= cap) {
      fprintf(stderr, "kiln run: --prompt expects token ids >= 0 separated by commas, got '%s'\n",
              v);
      return -1;
    }
    o->prompt[o->nprompt++] = t;
    if (!*end) return 0;
  }
}

static int parse_opts(int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  o->repeat = 1;
  o->specialize = -1;
  o->threads = -1;
  o->inputs = calloc((size_t)argc, sizeof *o->inputs);
  o->dims = calloc((size_t)argc, sizeof *o->dims);
  o->weights = calloc((size_t)argc, sizeof *o->weights);
  o->buckets = calloc((size_t)argc, sizeof *o->buckets);
  o->kernels = calloc((size_t)argc, sizeof *o->kernels);
  if (!o->inputs || !o->dims || !o->weights || !o->buckets || !o->kernels) return -1;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if ((r = opt_value(argc, argv, &i, "--input", &v))) {
      if (r < 0 || split_named("--input", v, &o->inputs[o->ninputs++]) < 0) return -1;
    } else if ((r = opt_value(argc, argv, &i, "--weights", &v))) {
      if (r < 0) return -1;
      o->weights[o->nweights++] = v;
    } else if ((r = opt_value(argc, argv, &i, "--kernels", &v))) {
      if (r < 0) return -1;
      o->kernels[o->nkernels++] = v;
    } else if ((r = opt_value(argc, argv, &i, "--dim", &v))) {
      if (r < 0 || split_named("--dim", v, &o->dims[o->ndims++]) < 0) return -1;
    } else if ((r = opt_value(argc, argv, &i, "--out", &v))) {
      if (r < 0) return -1;
      o->out = v;
    } else if ((r = opt_value(argc, argv, &i, "--repeat", &v))) {
      int64_t n;
      if (r < 0 || !parse_i64(v, &n) || n < 1 || n > 1000000) {
        if (r > 0) fprintf(stderr, "kiln run: --repeat expects a count >= 1, got '%s'\n", v);
        return -1;
      }
      o->repeat = (long)n;
    } else if ((r = opt_value(argc, argv, &i, "--generate", &v))) {
      int64_t n;
      if (r < 0 || !parse_i64(v, &n) || n < 1 || n > 1000000) {
        if (r > 0) fprintf(stderr, "kiln run: --generate expects a count >= 1, got '%s'\n", v);
        return -1;
      }
      o->generate = (long)n;
    } else if ((r = opt_value(argc, argv, &i, "--prompt", &v))) {
      if (r < 0 || parse_prompt(v, o) < 0) return -1;
    } else if ((r = opt_value(argc, argv, &i, "--seed", &v))) {
      int64_t n;
      if (r < 0 || !parse_i64(v, &n)) {
        if (r > 0) fprintf(stderr, "kiln run: --seed expects an integer, got '%s'\n", v);
        return -1;
      }
      o->seed = (uint64_t)n;
    } else if ((r = opt_value(argc, argv, &i, "--specialize", &v))) {
      if (r < 0) return -1;
      if (strcmp(v, "off") == 0) o->specialize = KILN_SPECIALIZE_OFF;
      else if (strcmp(v, "sync") == 0) o->specialize = KILN_SPECIALIZE_SYNC;
      else if (strcmp(v, "ahead") == 0) o->specialize = KILN_SPECIALIZE_AHEAD;
      else if (strcmp(v, "async") == 0) o->specialize = KILN_SPECIALIZE_ASYNC;
      else {
        fprintf(stderr, "kiln run: --specialize expects off, sync, async or ahead, got '%s'\n",
                v);
        return -1;
      }
    } else if ((r = opt_value(argc, argv, &i, "--threads", &v))) {
      int64_t n;
      if (r < 0 || !parse_i64(v, &n) || n < 0 || n > 1024) {
        if (r > 0)
          fprintf(stderr, "kiln run: --threads expects 1 to 1024, or 0 for one per core, got '%s'\n",
                  v);
        return -1;
      }
      o->threads = (int)n;
    } else if ((r = opt_value(argc, argv, &i, "--device", &v))) {
      if (r < 0) return -1;
      o->device = v;
    } else if ((r = opt_value(argc, argv, &i, "--bucket", &v))) {
      if (r < 0 || split_named("--bucket", v, &o->buckets[o->nbuckets++]) < 0) return -1;
    } else if (strcmp(argv[i], "--random-inputs") == 0) {
      o->random = true;
    } else if (strcmp(argv[i], "--stats") == 0) {
      o->stats = true;
    } else if (strcmp(argv[i], "--profile") == 0) {
      o->profile = true;
    } else if ((r = opt_value(argc, argv, &i, "--trace", &v))) {
      if (r < 0) return -1;
      o->trace = v;
    } else if (argv[i][0] == '-' && argv[i][1] != 0) {
      fprintf(stderr, "kiln run: unknown option '%s'\n", argv[i]);
      return -1;
    } else if (!o->graph) {
      o->graph = argv[i];
    } else {
      fprintf(stderr, "kiln run: more than one graph given ('%s', '%s')\n", o->graph, argv[i]);
      return -1;
    }
  }
  if (!o->graph) {
    fprintf(stderr, "kiln run: no graph given\n");
    return -1;
  }
  if (o->prompt && !o->generate) o->generate = -1; /* marks --prompt alone */
  if (o->generate && !o->prompt) {
    fprintf(stderr, "kiln run: --generate needs --prompt T,T,... (the first tokens)\n");
    return -1;
  }
  if (o->generate < 0) {
    fprintf(stderr, "kiln run: --prompt goes with --generate N\n");
    return -1;
  }
  if (o->generate && (o->ninputs || o->random || o->repeat > 1 || o->out)) {
    fprintf(stderr, "kiln run: --generate feeds the inputs itself: --input, --random-inputs, "
                    "--repeat and --out do not go with it\n");
    return -1;
  }
  return 0;
}

/* "a, b, c" from names(i) for i < n, into buf. */
typedef const char *(*name_fn)(const kiln_model *, int);
static const char *name_list(char *buf, size_t cap, int n, name_fn get, const kiln_model *m) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", get(m, i));
  if (n == 0) snprintf(buf, cap, "none");
  return buf;
}

static const char *sym_name(const kiln_model *m, int i) { return rt_model_symbol_name(m, i); }

typedef struct run_state {
  kiln_status *st;
  kiln_graph *g;
  kiln_context *ctx;
  kiln_model *m;
  int nsyms, nin, nout, nw;
  int64_t *syms;
  bool *known;
  kiln_tensor **ins, **outs, **wts;
  rt_wfile **files;
  double *times;
  kiln_device *dev;        /* --device other than cpu, else NULL */
} run_state;

static int fail_st(run_state *s) {
  fprintf(stderr, "%s\n", kiln_status_message(s->st));
  return -1;
}

static int bind_dims(run_state *s, const run_opts *o) {
  for (int i = 0; i < o->ndims; i++) {
    int k = 0;
    while (k < s->nsyms && strcmp(rt_model_symbol_name(s->m, k), o->dims[i].name) != 0) k++;
    char list[1024];
    if (k == s->nsyms) {
      fprintf(stderr, "--dim %s: the graph has no symbolic dim '%s' (symbols: %s)\n",
              o->dims[i].name, o->dims[i].name,
              name_list(list, sizeof list, s->nsyms, sym_name, s->m));
      return -1;
    }
    int64_t v;
    if (!parse_i64(o->dims[i].value, &v) || v < 0) {
      fprintf(stderr, "--dim %s: expected a non-negative integer, got '%s'\n", o->dims[i].name,
              o->dims[i].value);
      return -1;
    }
    s->syms[k] = v;
    s->known[k] = true;
  }
  return 0;
}

static int read_inputs(run_state *s, const run_opts *o) {
  char list[1024];
  for (int i = 0; i < o->ninputs; i++) {
    int idx = kiln_model_input_index(s->m, o->inputs[i].name);
    if (idx < 0) {
      fprintf(stderr, "--input %s: the model has no input '%s' (inputs: %s)\n",
              o->inputs[i].name, o->inputs[i].name,
              name_list(list, sizeof list, s->nin, kiln_model_input_name, s->m));
      return -1;
    }
    if (s->ins[idx]) {
      fprintf(stderr, "--input %s: given twice\n", o->inputs[i].name);
      return -1;
    }
    if (!(s->ins[idx] = rt_npy_read(o->inputs[i].value, s->st))) return fail_st(s);
    /* a plain symbolic dim takes its value from the file unless --dim gave one */
    const kiln_tensor *t = s->ins[idx];
    for (int a = 0; a < kiln_tensor_rank(t) && a < kiln_model_input_rank(s->m, idx); a++) {
      if (kiln_model_input_dim_static(s->m, idx, a) >= 0) continue;
      const char *d = kiln_model_input_dim(s->m, idx, a);
      for (int k = 0; k < s->nsyms; k++)
        if (!s->known[k] && strcmp(rt_model_symbol_name(s->m, k), d) == 0) {
          s->syms[k] = kiln_tensor_shape(t)[a];
          s->known[k] = true;
        }
    }
  }
  return 0;
}

static int read_weights_with(run_state *s, const run_opts *o, const rt_name_map *index);

/* The model's weight names are hashed once, so matching a file's tensors to
 * them stays linear in the number of weights. */
static int read_weights(run_state *s, const run_opts *o) {
  rt_name_map index = {0};
  for (int w = 0; w < s->nw; w++) {
    const char *name = kiln_model_weight_name(s->m, w);
    if (rt_name_map_put(&index, name, strlen(name), w) == -2) {
      rt_name_map_clear(&index);
      fprintf(stderr, "out of memory\n");
      return -1;
    }
  }
  int rc = read_weights_with(s, o, &index);
  rt_name_map_clear(&index);
  return rc;
}

static int read_weights_with(run_state *s, const run_opts *o, const rt_name_map *index) {
  char list[2048];
  for (int f = 0; f < o->nweights; f++) {
    rt_wfile *sf = s->files[f] = rt_wfile_open(o->weights[f], s->st);
    if (!sf) return fail_st(s);
    for (int i = 0; i < rt_wfile_count(sf); i++) {
      const char *name = rt_wfile_name(sf, i);
      int w = rt_name_map_get(index, name, strlen(name));
      if (w < 0 && rt_wfile_is_gguf(sf)) continue; /* a GGUF holds a whole model */
      if (w < 0) {
        fprintf(stderr, "%s: tensor '%s' is not a weight of the model (weights: %s)\n",
                o->weights[f], name,
                name_list(list, sizeof list, s->nw, kiln_model_weight_name, s->m));
        return -1;
      }
      if (s->wts[w]) {
        fprintf(stderr, "%s: weight '%s' is given twice\n", o->weights[f], name);
        return -1;
      }
      if (!(s->wts[w] = rt_wfile_tensor(sf, i, s->st))) return fail_st(s);
      if (kiln_model_bind_weight(s->m, name, s->wts[w], s->st) < 0) {
        fprintf(stderr, "%s: %s\n", o->weights[f], kiln_status_message(s->st));
        return -1;
      }
      if (kiln_model_weight_needs_data(s->m, name) == 0) /* read from a copy: keep it once */
        rt_wfile_drop(sf, i);
    }
  }
  return 0;
}

/* Shape of a random input / weight from the bound symbols. */
static int port_shape(run_state *s, bool weight, int i, int rank, int64_t *shape) {
  int missing = -1;
  if (rank > 64) {
    fprintf(stderr, "%s %d: rank %d is too large\n", weight ? "weight" : "input", i, rank);
    return -1;
  }
  if (rt_model_port_shape(s->m, weight, i, s->syms, s->known, shape, &missing, s->st) == 0)
    return 0;
  if (missing >= 0)
    fprintf(stderr, "%s; pass --dim %s=VALUE\n", kiln_status_message(s->st),
            rt_model_symbol_name(s->m, missing));
  else
    fprintf(stderr, "%s\n", kiln_status_message(s->st));
  return -1;
}

/* Before random inputs are made: every value whose dims the known symbols
 * fix must have a size that fits in int64 and, all together, in this
 * machine's memory, so a --dim typo is an error and not an out-of-memory
 * kill after gigabytes of random data were written. */
static int check_sizes(run_state *s) {
  const ir_graph *g = s->m->g;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double mem = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0, total = 0.0;
  int64_t shape[IR_MAX_RANK];
  char msg[256];
  for (int v = 0; v < g->nvalues; v++) {
    const ir_type *t = &g->values[v]->type;
    bool fixed = true;
    for (int a = 0; a < t->rank && fixed; a++)
      for (int k = 0; k < g->nsyms && fixed; k++)
        if (!s->known[k] && ir_dim_uses_sym(t->dims[a], k)) fixed = false;
    if (!fixed) continue;
    int64_t numel;
    size_t bytes;
    msg[0] = '\0';
    if (ir_eval_shape(t, s->syms, shape, msg, sizeof msg) < 0 ||
        rt_shape_bytes((kiln_dtype)t->dtype, t->rank, shape, &numel, &bytes, s->st) < 0) {
      fprintf(stderr, "value %%%s: %s\n", g->values[v]->name,
              msg[0] ? msg : kiln_status_message(s->st));
      return -1;
    }
    total += (double)bytes;
  }
  if (mem > 0 && total > mem) {
    fprintf(stderr, "with these dims the graph's tensors need %.3g GB, more than this machine's "
                    "%.3g GB of memory\n", total / 1e9, mem / 1e9);
    return -1;
  }
  return 0;
}

static int fill_missing(run_state *s, const run_opts *o) {
  uint64_t rng = o->seed;
  int64_t shape[64];
  for (int i = 0; i < s->nin; i++) {
    if (s->ins[i]) continue;
    const char *name = kiln_model_input_name(s->m, i);
    if (!o->random) {
      fprintf(stderr, "input %d (%s) is missing: pass --input %s=FILE.npy or --random-inputs\n", i,
              name, name);
      return -1;
    }
    int rank = kiln_model_input_rank(s->m, i);
    if (port_shape(s, false, i, rank, shape) < 0) return -1;
    if (!(s->ins[i] = kiln_tensor_new(kiln_model_input_dtype(s->m, i), rank, shape, s->st)))
      return fail_st(s);
    cli_fill_random(s->ins[i], &rng);
  }
  for (int w = 0; w < s->nw; w++) {
    if (s->wts[w] || s->m->weights[w].bound) continue; /* bound by the graph (ONNX) */
    const char *name = kiln_model_weight_name(s->m, w);
    if (!o->random) {
      fprintf(stderr,
              "weight '%s' is not bound: pass --weights FILE.safetensors or --random-inputs\n",
              name);
      return -1;
    }
    int rank = kiln_model_weight_rank(s->m, w);
    if (port_shape(s, true, w, rank, shape) < 0) return -1;
    if (!(s->wts[w] = kiln_tensor_new(kiln_model_weight_dtype(s->m, w), rank, shape, s->st)))
      return fail_st(s);
    cli_fill_random(s->wts[w], &rng);
    if (kiln_model_bind_weight(s->m, name, s->wts[w], s->st) < 0) return fail_st(s);
  }
  return 0;
}

/* "12.345 ms" or, under a millisecond, "41.2 us". */
static const char *fmt_ms(char *buf, size_t cap, double ms) {
  if (ms < 1.0) snprintf(buf, cap, "%.1f us", ms * 1e3);
  else snprintf(buf, cap, "%.3f ms", ms);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int write_outputs(run_state *s, const char *dir) {
  if (cli_mkdirs(dir) != 0) {
    fprintf(stderr, "--out %s: cannot create the directory: %s\n", dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < s->nout; i++) {
    const char *name = kiln_model_output_name(s->m, i);
    size_t n = strlen(dir) + strlen(name) + 32;
    char *path = malloc(n);
    if (!path) return -1;
    int k = snprintf(path, n, "%s/", dir);
    for (const char *c = name; *c; c++) path[k++] = (*c == '/' || *c == '\\') ? '_' : *c;
    snprintf(path + k, n - (size_t)k, "%s.npy", *name ? "" : "output");
    int rc = rt_npy_write(path, s->outs[i], s->st);
    free(path);
    if (rc < 0) return fail_st(s);
  }
  return 0;
}

/* --bucket SYM=pow2|N|exact, per symbol. */
static int set_buckets(run_state *s, const run_opts *o) {
  for (int i = 0; i < o->nbuckets; i++) {
    const char *v = o->buckets[i].value;
    kiln_bucket_kind kind;
    int64_t n = 0;
    if (strcmp(v, "pow2") == 0) kind = KILN_BUCKET_POW2;
    else if (strcmp(v, "exact") == 0) kind = KILN_BUCKET_EXACT;
    else if (parse_i64(v, &n) && n >= 1) kind = KILN_BUCKET_MULTIPLE;
    else {
      fprintf(stderr, "--bucket %s: expected pow2, exact or a multiple N >= 1, got '%s'\n",
              o->buckets[i].name, v);
      return -1;
    }
    if (kiln_model_set_bucket(s->m, o->buckets[i].name, kind, n, s->st) < 0) {
      char list[1024];
      fprintf(stderr, "--bucket %s: %s (symbols: %s)\n", o->buckets[i].name,
              kiln_status_message(s->st), name_list(list, sizeof list, s->nsyms, sym_name, s->m));
      return -1;
    }
  }
  return 0;
}

static const char *policy_name(int p) {
  return p == KILN_SPECIALIZE_OFF     ? "off"
         : p == KILN_SPECIALIZE_SYNC  ? "sync"
         : p == KILN_SPECIALIZE_AHEAD ? "ahead"
                                      : "async";
}

/* --stats: the specialization outcome. Under async the run may end before
 * the background compile: then say so (nothing is waited for). */
static void print_spec_stats(run_state *s, const run_opts *o) {
  int p = o->specialize >= 0 ? o->specialize : (int)kiln_context_specialize_policy(s->ctx);
  double hits = kiln_model_counter(s->m, KILN_COUNTER_HITS);
  double misses = kiln_model_counter(s->m, KILN_COUNTER_MISSES);
  double pending = kiln_model_counter(s->m, KILN_COUNTER_ASYNC_PENDING);
  if (s->nsyms == 0) {
    printf("specialize: %s; the graph has no symbolic dims (the generic variant is static)\n",
           policy_name(p));
    return;
  }
  if (!rt_model_spec_useful(s->m)) {
    printf("specialize: %s; nothing to specialize: the kernels that read symbolic dims are "
           "GEMMs, which run the same prebuilt code for every shape\n", policy_name(p));
    return;
  }
  printf("specialize: %s; %d variant%s live; executes: %.0f hit%s (a live variant), %.0f "
         "miss%s%s\n",
         policy_name(p), kiln_model_variants(s->m), kiln_model_variants(s->m) == 1 ? "" : "s",
         hits, hits == 1 ? "" : "s", misses, misses == 1 ? "" : "es",
         p == KILN_SPECIALIZE_OFF     ? " (off: every execute on the generic variant)"
         : p == KILN_SPECIALIZE_SYNC  ? " (sync: compiled, then ran on the new variant)"
         : p == KILN_SPECIALIZE_AHEAD ? " (ahead: undeclared bindings run generic)"
                                      : " (async: ran on the generic variant)");
  if (p == KILN_SPECIALIZE_ASYNC) {
    double cold = kiln_model_counter(s->m, KILN_COUNTER_COLD);
    double dropped = kiln_model_counter(s->m, KILN_COUNTER_DROPPED);
    double autob = kiln_model_counter(s->m, KILN_COUNTER_AUTO_BUCKETS);
    double skipped = kiln_model_counter(s->m, KILN_COUNTER_SPEC_SKIPPED);
    int hot = rt_spec_hot(s->ctx);
    if (cold > 0)
      printf("specialize: async, %.0f execute%s on a binding not hot yet (a binding is "
             "specialized once it ran %d time%s)\n",
             cold, cold == 1 ? "" : "s", hot, hot == 1 ? "" : "s");
    if (dropped > 0)
      printf("specialize: async, %.0f variant%s dropped: not faster than the generic kernels\n",
             dropped, dropped == 1 ? "" : "s");
    if (skipped > 0)
      printf("specialize: async, %.0f hot binding%s not specialized: the kernels a variant "
             "would rebuild are under 5%% of %s estimated time (the GEMMs, which run the same "
             "prebuilt code for every shape, take the rest)\n",
             skipped, skipped == 1 ? "" : "s", skipped == 1 ? "its" : "their");
    if (autob > 0)
      printf("specialize: async, %.0f symbol%s took many values: pow2 buckets\n", autob,
             autob == 1 ? "" : "s");
    double ahead = kiln_model_counter(s->m, KILN_COUNTER_SPEC_AHEAD);
    if (ahead > 0)
      printf("specialize: async, %.0f bucket%s queued ahead (a bucketed dim grew at every "
             "execute: the next bucket's variant and arena prepared in the background before "
             "the dim reaches it)\n",
             ahead, ahead == 1 ? "" : "s");
    if (pending > 0)
      printf("specialize: async, %.0f compile%s pending at exit (the run ended before the "
             "background compile; not waited for)\n",
             pending, pending == 1 ? "" : "s");
    else
      printf("specialize: async, nothing pending at exit (%.0f background compile%s done)\n",
             kiln_model_counter(s->m, KILN_COUNTER_ASYNC_DONE),
             kiln_model_counter(s->m, KILN_COUNTER_ASYNC_DONE) == 1 ? "" : "s");
  }
}

/* --specialize: the model's policy; under ahead, the run's binding is the
 * declared one (compiled here, before the timed executes). */
static int specialize(run_state *s, const run_opts *o) {
  if (kiln_model_set_specialize(s->m, (kiln_specialize_policy)o->specialize, s->st) < 0)
    return fail_st(s);
  if (o->specialize != KILN_SPECIALIZE_AHEAD || s->nsyms == 0) return 0;
  const char **names = calloc((size_t)s->nsyms, sizeof *names);
  int64_t *vals = calloc((size_t)s->nsyms, sizeof *vals);
  if (!names || !vals) {
    free(names);
    free(vals);
    fprintf(stderr, "kiln run: out of memory\n");
    return -1;
  }
  int n = 0;
  for (int k = 0; k < s->nsyms; k++) {
    if (!s->known[k]) continue; /* kiln_model_specialize names what is missing */
    names[n] = rt_model_symbol_name(s->m, k);
    vals[n++] = s->syms[k];
  }
  int rc = kiln_model_specialize(s->m, names, vals, n, s->st);
  free(names);
  free(vals);
  return rc < 0 ? fail_st(s) : 0;
}

/* --device: open it and compile the graph for it (NULL, "cpu" or the cpu
 * device: the CPU). */
static int compile_model(run_state *s, const run_opts *o) {
  bool on_cpu = !o->device || strcmp(o->device, "cpu") == 0;
  if (!on_cpu && !(s->dev = kiln_device_open(o->device, s->st)))
    return fail_st(s); /* names the device */
  if (!(s->m = kiln_model_compile_on(s->ctx, s->dev, s->g, s->st))) {
    if (on_cpu) return fail_st(s);
    fprintf(stderr, "--device %s: %s\n", o->device, kiln_status_message(s->st));
    return -1;
  }
  return 0;
}

/* Outputs a device model left on its device, copied to the host (to print
 * and write them). */
static int outputs_to_host(run_state *s) {
  for (int i = 0; i < s->nout; i++) {
    if (!kiln_tensor_device(s->outs[i])) continue;
    kiln_tensor *h = kiln_tensor_copy_to(s->outs[i], NULL, s->st);
    if (!h) return fail_st(s);
    kiln_tensor_free(s->outs[i]);
    s->outs[i] = h;
  }
  return 0;
}

static int execute_once(run_state *s) {
  int rc = kiln_model_execute(s->m, s->ins, s->nin, s->outs, s->nout, s->st);
  return rc < 0 ? fail_st(s) : 0;
}

/* The executes of a plain run (--repeat times), then the outputs printed and
 * written. */
static int run_plain(run_state *s, const run_opts *o) {
  for (long r = 0; r < o->repeat; r++) {
    double t0 = rt_now_ms();
    if (execute_once(s) < 0) return -1;
    s->times[r] = rt_now_ms() - t0;
  }
  if (outputs_to_host(s) < 0) return -1;
  for (int i = 0; i < s->nout; i++) {
    printf("%s: ", kiln_model_output_name(s->m, i));
    cli_print_tensor(stdout, s->outs[i], 8);
  }
  return o->out ? write_outputs(s, o->out) : 0;
}

static int run(run_state *s, const run_opts *o) {
  if (!(s->g = cli_load_graph(o->graph, s->st))) return fail_st(s);
  if (!(s->ctx = kiln_context_new(s->st))) return fail_st(s);
  if (o->trace && kiln_context_set_trace(s->ctx, o->trace, s->st) < 0) return fail_st(s);
  if (o->threads >= 0 && kiln_context_set_num_threads(s->ctx, o->threads, s->st) < 0)
    return fail_st(s);
  for (int i = 0; i < o->nkernels; i++)
    if (kiln_context_add_kernel_library(s->ctx, o->kernels[i], s->st) < 0) return fail_st(s);
  if (compile_model(s, o) < 0) return -1;
  s->nsyms = rt_model_num_symbols(s->m);
  s->nin = kiln_model_num_inputs(s->m);
  s->nout = kiln_model_num_outputs(s->m);
  s->nw = kiln_model_num_weights(s->m);
  s->syms = calloc((size_t)s->nsyms + 1, sizeof *s->syms);
  s->known = calloc((size_t)s->nsyms + 1, sizeof *s->known);
  s->ins = calloc((size_t)s->nin + 1, sizeof *s->ins);
  s->outs = calloc((size_t)s->nout + 1, sizeof *s->outs);
  s->wts = calloc((size_t)s->nw + 1, sizeof *s->wts);
  s->files = calloc((size_t)o->nweights + 1, sizeof *s->files);
  s->times = calloc((size_t)o->repeat, sizeof *s->times);
  if (!s->syms || !s->known || !s->ins || !s->outs || !s->wts || !s->files || !s->times) {
    fprintf(stderr, "kiln run: out of memory\n");
    return -1;
  }
  if (bind_dims(s, o) < 0 || read_inputs(s, o) < 0 || read_weights(s, o) < 0)
    return -1;
  if (!o->generate && (check_sizes(s) < 0 || fill_missing(s, o) < 0)) return -1;
  if (set_buckets(s, o) < 0) return -1;
  if (o->specialize >= 0 && specialize(s, o) < 0) return -1;
  if (o->profile && kiln_model_set_profile(s->m, 1, s->st) < 0) return fail_st(s);
  if (o->generate) {
    if (cli_generate(s->m, o->prompt, o->nprompt, o->generate, &s->times[0], s->st) < 0)
      return -1;
  } else if (run_plain(s, o) < 0) {
    return -1;
  }
  char b1[32], b2[32], b3[32];
  if (o->stats) {
    printf("compile: %s\n", fmt_ms(b1, sizeof b1, kiln_model_compile_ms(s->m)));
    double quick = kiln_model_counter(s->m, KILN_COUNTER_QUICK_KERNELS);
    if (quick > 0)
      printf("tier-up: %.0f kernel%s built quick first, %.0f still quick at exit (their full "
             "builds run in the background; KILN_TIER_UP=off builds every kernel fully)\n",
             quick, quick == 1 ? "" : "s", kiln_model_counter(s->m, KILN_COUNTER_QUICK_LIVE));
    if (s->dev && kiln_model_device(s->m)) {
      int hits = 0, misses = 0, nk = rt_device_model_kernels(s->m),
          np = rt_device_model_plan_builds(s->m);
      rt_device_model_cache_counts(s->m, &hits, &misses);
      printf("device: %s (%s); the executes ran there\n", kiln_device_label(s->dev),
             kiln_device_description(s->dev));
      printf("device code: %d kernel%s for %d graph nodes, %d from the disk cache, %d "
             "compiled; %d execute plan%s built, %d specialized variant%s\n",
             nk, nk == 1 ? "" : "s", s->g->ir->nnodes, hits, misses, np, np == 1 ? "" : "s",
             rt_model_num_specialized(s->m), rt_model_num_specialized(s->m) == 1 ? "" : "s");
    } else {
      printf("threads: %d\n", kiln_context_num_threads(s->ctx));
    }
    printf("execute: %s (first run)\n", fmt_ms(b1, sizeof b1, s->times[0]));
  }
  if (o->stats) { /* the planner (CPU), the kernel cache and the variants */
    if (!kiln_model_device(s->m))
      printf("memory: %zu bytes peak for intermediates (arena)\n", rt_model_peak_bytes(s->m));
    rt_cache_stats cs; /* kcache: the context's kernel cache; S: variants.c */
    rt_cache_mem_stats(rt_context_cache(s->ctx), &cs);
    /* A hit is a kernel not compiled: found in memory, on disk or on the server. */
    double pending = kiln_model_counter(s->m, KILN_COUNTER_ASYNC_PENDING);
    char remote[64] = "";
    if (cs.remote_hits)
      snprintf(remote, sizeof remote, ", %llu from the remote cache",
               (unsigned long long)cs.remote_hits);
    printf("cache: %llu hits (%llu from disk%s), %llu misses, %d specialized%s\n",
           (unsigned long long)(cs.hits + cs.backing_hits),
           (unsigned long long)(cs.backing_hits - cs.remote_hits), remote,
           (unsigned long long)cs.compiles, rt_model_num_specialized(s->m),
           pending > 0 ? " (async, pending)" : "");
    printf("%s\n", s->ctx->disk_status);
    if (strcmp(s->ctx->remote_status, "remote cache off") != 0) {
      printf("%s", s->ctx->remote_status);
      if (s->ctx->remote)
        printf(": %.0f fetched, %.0f missed, %.0f errors, %.0f published, %.0f dropped, "
               "%.0f skipped by the breaker so far",
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_HITS),
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_MISSES),
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_ERRORS),
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_PUBLISHED),
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_DROPPED),
               kiln_context_counter(s->ctx, KILN_COUNTER_REMOTE_SKIPS));
      printf("\n");
    }
    print_spec_stats(s, o);
  }
  if (o->profile && cli_print_profile(stdout, s->ctx, s->m, s->st) < 0) return fail_st(s);
  if (o->repeat > 1) {
    qsort(s->times, (size_t)o->repeat, sizeof *s->times, cmp_double);
    long n = o->repeat;
    double med = n % 2 ? s->times[n / 2] : (s->times[n / 2 - 1] + s->times[n / 2]) / 2;
    printf("execute x%ld: median %s, min %s, max %s\n", n, fmt_ms(b1, sizeof b1, med),
           fmt_ms(b2, sizeof b2, s->times[0]), fmt_ms(b3, sizeof b3, s->times[n - 1]));
  }
  return 0;
}

int cli_run(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    cli_usage_run(stdout);
    return CLI_OK;
  }
  run_opts o;
  if (parse_opts(argc, argv, &o) < 0) {
    fprintf(stderr, "\n");
    cli_usage_run(stderr);
    opts_free(&o);
    return CLI_USAGE;
  }
  run_state s = {0};
  s.st = kiln_status_new();
  int rc = s.st && run(&s, &o) == 0 ? CLI_OK : CLI_ERR;
  for (int i = 0; s.outs && i < s.nout; i++) kiln_tensor_free(s.outs[i]);
  for (int i = 0; s.ins && i < s.nin; i++) kiln_tensor_free(s.ins[i]);
  kiln_model_free(s.m); /* before the weight tensors it borrows, and the device */
  kiln_device_close(s.dev);
  for (int i = 0; s.wts && i < s.nw; i++) kiln_tensor_free(s.wts[i]);
  for (int i = 0; s.files && i < o.nweights; i++) rt_wfile_close(s.files[i]);
  kiln_context_free(s.ctx);
  kiln_graph_free(s.g);
  free(s.syms);
  free(s.known);
  free(s.ins);
  free(s.outs);
  free(s.wts);
  free(s.files);
  free(s.times);
  kiln_status_free(s.st);
  opts_free(&o);
  return rc;
}
