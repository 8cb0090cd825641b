/* generate.c - `kiln run GRAPH --generate N --prompt T,T,...`: drive a
 * decoder graph greedily, one execute for the prompt and one per new token.
 *
 * The graph's interface (the convention; cli_usage_run repeats it):
 *   - input 0: the tokens, si32 / si64 [n] with n symbolic;
 *   - buffer inputs (!mo.buffer, static shapes): allocated zero-filled by
 *     kiln and passed to every execute, so the graph's stores persist (a
 *     KV cache);
 *   - si32 / si64 [n] inputs (the tokens' symbol): the tokens' positions,
 *     the number of tokens already run plus 0 .. n-1;
 *   - si32 / si64 [1] or rank-0 inputs: the number of tokens run after
 *     this call (the length of the written part of the caches);
 *   - output 0: the logits, f32 / f64 [..., vocab]: the next token is the
 *     argmax of its last row (the first on ties).
 * Any other input is refused before anything runs. The execute's time is
 * measured alone (building the small token tensors is not in it). On a
 * device model (kiln run --device) the buffers stay host tensors: the
 * device copies them in and back each execute (src/device_model.c). */
#include <stdlib.h>
#include <string.h>

#include "../rt.h"
#include "kiln/device.h"
#include "cli_generate.h"

typedef enum port_role { ROLE_TOKENS, ROLE_BUFFER, ROLE_POSITIONS, ROLE_LENGTH } port_role;

static bool is_index_dtype(kiln_dtype t) { return t == KILN_INT32 || t == KILN_INT64; }

/* Each input's role by the convention, or -1 naming the input that fits none. */
static int classify(const kiln_model *m, port_role *role) {
  int nin = kiln_model_num_inputs(m);
  const char *sym = NULL;
  if (nin < 1 || !is_index_dtype(kiln_model_input_dtype(m, 0)) ||
      kiln_model_input_rank(m, 0) != 1 || kiln_model_input_dim_static(m, 0, 0) >= 0 ||
      kiln_model_input_is_buffer(m, 0) == 1) {
    fprintf(stderr, "--generate: input 0 (%s) must be the tokens, si32 / si64 [n] with n "
                    "symbolic\n", nin > 0 ? kiln_model_input_name(m, 0) : "none");
    return -1;
  }
  sym = kiln_model_input_dim(m, 0, 0);
  role[0] = ROLE_TOKENS;
  for (int i = 1; i < nin; i++) {
    int rank = kiln_model_input_rank(m, i);
    bool index = is_index_dtype(kiln_model_input_dtype(m, i));
    if (kiln_model_input_is_buffer(m, i) == 1) {
      for (int a = 0; a < rank; a++)
        if (kiln_model_input_dim_static(m, i, a) < 0) {
          fprintf(stderr, "--generate: buffer input %d (%s) has a symbolic dim (axis %d, %s): "
                          "kiln allocates buffers, so their shapes must be static\n",
                  i, kiln_model_input_name(m, i), a, kiln_model_input_dim(m, i, a));
          return -1;
        }
      role[i] = ROLE_BUFFER;
    } else if (index && rank == 1 && kiln_model_input_dim_static(m, i, 0) < 0 &&
               strcmp(kiln_model_input_dim(m, i, 0), sym) == 0) {
      role[i] = ROLE_POSITIONS;
    } else if (index && (rank == 0 || (rank == 1 && kiln_model_input_dim_static(m, i, 0) == 1))) {
      role[i] = ROLE_LENGTH;
    } else {
      fprintf(stderr, "--generate: input %d (%s) is none of: a buffer, si32 / si64 [%s] "
                      "positions, si32 / si64 [1] length (kiln run --help)\n",
              i, kiln_model_input_name(m, i), sym);
      return -1;
    }
  }
  kiln_dtype out = nin > 0 && kiln_model_num_outputs(m) > 0 ? kiln_model_output_dtype(m, 0)
                                                             : KILN_BOOL;
  if (kiln_model_num_outputs(m) < 1 || (out != KILN_FLOAT32 && out != KILN_FLOAT64) ||
      kiln_model_output_rank(m, 0) < 1) {
    fprintf(stderr, "--generate: output 0 must be the logits, f32 / f64 [..., vocab]\n");
    return -1;
  }
  return 0;
}

/* An index tensor of shape [n] (rank 1) or [] holding first, first + 1, ... */
static kiln_tensor *index_tensor(kiln_dtype dt, int rank, int64_t n, int64_t first,
                                 kiln_status *st) {
  kiln_tensor *t = kiln_tensor_new(dt, rank, &n, st);
  if (!t) return NULL;
  for (int64_t k = 0; k < (rank ? n : 1); k++) {
    if (dt == KILN_INT32) ((int32_t *)kiln_tensor_data(t))[k] = (int32_t)(first + k);
    else ((int64_t *)kiln_tensor_data(t))[k] = first + k;
  }
  return t;
}

/* The argmax of the last row of the logits (the first index on ties). */
static int64_t last_row_argmax(const kiln_tensor *t) {
  int rank = kiln_tensor_rank(t);
  int64_t vocab = kiln_tensor_shape(t)[rank - 1], numel = kiln_tensor_numel(t), best = 0;
  if (vocab <= 0 || numel < vocab) return -1;
  bool f64 = kiln_tensor_dtype(t) == KILN_FLOAT64;
  const void *d = kiln_tensor_data(t);
  double top = 0;
  for (int64_t k = 0; k < vocab; k++) {
    int64_t at = numel - vocab + k;
    double v = f64 ? ((const double *)d)[at] : ((const float *)d)[at];
    if (k == 0 || v > top) top = v, best = k;
  }
  return best;
}

/* One execute of tokens[0..n) at position `done`; *next the argmax. */
static int step(kiln_model *m, const port_role *role, kiln_tensor **ins, kiln_tensor **outs,
                const int64_t *tokens, int64_t n, int64_t done, int64_t *next, double *ms,
                kiln_status *st) {
  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m), rc = -1;
  for (int i = 0; i < nin; i++) {
    if (role[i] == ROLE_BUFFER) continue;
    kiln_dtype dt = kiln_model_input_dtype(m, i);
    int rank = kiln_model_input_rank(m, i);
    if (role[i] == ROLE_TOKENS) {
      if (!(ins[i] = kiln_tensor_new(dt, 1, &n, st))) goto done;
      for (int64_t k = 0; k < n; k++) {
        if (dt == KILN_INT32) ((int32_t *)kiln_tensor_data(ins[i]))[k] = (int32_t)tokens[k];
        else ((int64_t *)kiln_tensor_data(ins[i]))[k] = tokens[k];
      }
    } else if (role[i] == ROLE_POSITIONS) {
      if (!(ins[i] = index_tensor(dt, 1, n, done, st))) goto done;
    } else if (!(ins[i] = index_tensor(dt, rank, 1, done + n, st))) {
      goto done;
    }
  }
  double t0 = rt_now_ms();
  if (kiln_model_execute(m, ins, nin, outs, nout, st) < 0) goto done;
  *ms = rt_now_ms() - t0;
  if (kiln_tensor_device(outs[0])) { /* logits a device model left there (typed gpu:N) */
    kiln_tensor *host = kiln_tensor_copy_to(outs[0], NULL, st);
    if (!host) goto done;
    kiln_tensor_free(outs[0]);
    outs[0] = host;
  }
  if ((*next = last_row_argmax(outs[0])) < 0) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "--generate: output 0 (the logits) is empty");
    goto done;
  }
  rc = 0;
done:
  for (int i = 0; i < nin; i++)
    if (role[i] != ROLE_BUFFER) kiln_tensor_free(ins[i]), ins[i] = NULL;
  for (int i = 0; i < nout; i++) kiln_tensor_free(outs[i]), outs[i] = NULL; /* n changes */
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of xs[0..n) (sorted in place). */
static double median(double *xs, long n) {
  qsort(xs, (size_t)n, sizeof *xs, cmp_double);
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static void print_times(const double *ms, long steps, double *scratch) {
  enum { WINDOW = 64 };
  if (steps == 0) return;
  memcpy(scratch, ms, (size_t)steps * sizeof *ms);
  double med = median(scratch, steps);
  double p99 = scratch[(long)(0.99 * (double)(steps - 1))], max = scratch[steps - 1];
  printf("steps: %ld, median %.1f us, p99 %.1f us, max %.1f us\n", steps, med * 1e3,
         p99 * 1e3, max * 1e3);
  printf("step-time curve (median of each %d steps, us):", WINDOW);
  for (long s = 0; s < steps; s += WINDOW) {
    long n = steps - s < WINDOW ? steps - s : WINDOW;
    memcpy(scratch, ms + s, (size_t)n * sizeof *ms);
    printf("%s %ld-%ld: %.1f", s ? "," : "", s, s + n - 1, median(scratch, n) * 1e3);
  }
  printf("\n");
}

int cli_generate(kiln_model *m, const int64_t *prompt, int nprompt, long steps,
                 double *prefill_ms, kiln_status *st) {
  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m), rc = -1;
  port_role *role = calloc((size_t)nin + 1, sizeof *role);
  kiln_tensor **ins = calloc((size_t)nin + 1, sizeof *ins);
  kiln_tensor **outs = calloc((size_t)nout + 1, sizeof *outs);
  int64_t *tokens = malloc(((size_t)nprompt + (size_t)steps) * sizeof *tokens);
  double *ms = calloc((size_t)steps + 1, sizeof *ms), *scratch = calloc((size_t)steps + 1, 8);
  if (!role || !ins || !outs || !tokens || !ms || !scratch) {
    fprintf(stderr, "kiln run: out of memory\n");
    goto done;
  }
  if (classify(m, role) < 0) goto done;
  for (int i = 0; i < nin; i++) {
    if (role[i] != ROLE_BUFFER) continue;
    int64_t shape[IR_MAX_RANK];
    int rank = kiln_model_input_rank(m, i);
    for (int a = 0; a < rank && a < IR_MAX_RANK; a++)
      shape[a] = kiln_model_input_dim_static(m, i, a);
    if (!(ins[i] = kiln_tensor_new(kiln_model_input_dtype(m, i), rank, shape, st))) {
      fprintf(stderr, "buffer input %d (%s): %s\n", i, kiln_model_input_name(m, i),
              kiln_status_message(st));
      goto done;
    }
  }
  memcpy(tokens, prompt, (size_t)nprompt * sizeof *tokens);
  int64_t len = nprompt, next;
  if (step(m, role, ins, outs, tokens, len, 0, &next, prefill_ms, st) < 0) {
    fprintf(stderr, "--generate: the prompt (%d tokens): %s\n", nprompt,
            kiln_status_message(st));
    goto done;
  }
  for (long s = 0; s < steps; s++) {
    tokens[len] = next;
    if (step(m, role, ins, outs, tokens + len, 1, len, &next, &ms[s], st) < 0) {
      fprintf(stderr, "--generate: step %ld (token %lld, %lld tokens run): %s\n", s,
              (long long)tokens[len], (long long)len, kiln_status_message(st));
      goto done;
    }
    len++;
  }
  printf("prompt:");
  for (int k = 0; k < nprompt; k++) printf("%s %lld", k ? "," : "", (long long)tokens[k]);
  printf("\ngenerated:");
  for (long k = 0; k < steps; k++) printf("%s %lld", k ? "," : "", (long long)tokens[nprompt + k]);
  printf("\nprefill (%d tokens): %.1f us\n", nprompt, *prefill_ms * 1e3);
  print_times(ms, steps, scratch);
  rc = 0;
done:
  for (int i = 0; ins && i < nin; i++) kiln_tensor_free(ins[i]);
  free(role);
  free(ins);
  free(outs);
  free(tokens);
  free(ms);
  free(scratch);
  return rc;
}
