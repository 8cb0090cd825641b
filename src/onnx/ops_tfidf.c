/* ops_tfidf.c - ONNX TfIdfVectorizer on integer sequences ([L] or [N, L],
 * L known at import; pool_strings is refused by name), as ONNX's reference
 * counts: an n-gram of the pool, of length k in [min_gram_length,
 * max_gram_length], occurs at position i with distance d when
 * x[i + t * d] == gram[t] for every t < k; d runs over 1 .. max_skip_count + 1
 * for k >= 2 and is 1 for unigrams (counted once). Each occurrence adds 1 to
 * the gram's column (ngram_indexes); TF gives the counts, IDF the weight
 * where a count is nonzero, TFIDF count * weight (weights default to 1).
 * Every (gram, distance) pair is a few compares of static slices and a sum
 * along the last axis, so the pool is bounded (OX_TFIDF_MAX_TERMS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

#define OX_TFIDF_MAX_TERMS 8192 /* compares (gram elements x distances) per node */

typedef struct tfidf {
  ox *x;
  kiln_value *a;
  int rank;
  int64_t len;
} tfidf;

/* a[..., s : s + m] (the last axis). */
static kiln_value *window(tfidf *t, int64_t s, int64_t m) {
  ox *x = t->x;
  kiln_value *a = t->a;
  if (t->rank == 1)
    return ox_op(x, "slice_tensor", &a, 1, NULL, "{start = [%lld], step = [1], stop = [%lld]}",
                 (long long)s, (long long)(s + m));
  return ox_op(x, "slice_tensor", &a, 1, NULL, "{start = [0, %lld], step = [1, 1], stop = [%lld, "
               "%lld]}", (long long)s, (long long)INT64_MAX, (long long)(s + m));
}

/* How often gram[0 .. k) occurs at distance d, as f32 [..., 1]; NULL with
 * *none when it cannot fit. */
static kiln_value *occurrences(tfidf *t, const int64_t *gram, int64_t k, int64_t d, bool *none) {
  ox *x = t->x;
  int64_t m = t->len - (k - 1) * d;
  *none = m <= 0;
  if (*none) return NULL;
  kiln_value *match = NULL;
  for (int64_t i = 0; i < k; i++) {
    ir_dtype dt = ox_type(t->a)->dtype;
    kiln_value *w = window(t, i * d, m), *g = NULL;
    if (w && !(g = kiln_graph_add_constant(x->g, KILN_INT64, 0, NULL, &gram[i], x->st))) {
      ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
      return NULL;
    }
    if (g && dt != IR_DT_SI64) g = ox_op(x, "cast", &g, 1, NULL, "{dtype = %s}", ir_dtype_name(dt));
    kiln_value *eq = g ? OP2("equal", w, g) : NULL;
    if (!eq) return NULL;
    match = match ? OP2("logical_and", match, eq) : eq;
    if (!match) return NULL;
  }
  kiln_value *f = ox_op(x, "cast", &match, 1, NULL, "{dtype = f32}");
  return f ? ox_op(x, "sum", &f, 1, NULL, "{axis = %d}", t->rank - 1) : NULL;
}

int ox_op_TfIdfVectorizer(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  BEGIN;
  if (ox_attr(n, "pool_strings")) return ox_unsupported(x, n, "pool_strings (string input)");
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *at = ox_type(a);
  tfidf t = {.x = x, .a = a, .rank = at->rank};
  if ((at->rank != 1 && at->rank != 2) || !ir_dtype_is_int(at->dtype))
    return ox_fail(x, KILN_ERR_VERIFY, "X must be 1-D or 2-D integers, not %s of rank %d",
                   ir_dtype_name(at->dtype), at->rank);
  if (!ir_dim_is_const(at->dims[at->rank - 1], &t.len))
    return ox_unsupported(x, n, "a sequence length not known at import");
  int np = 0, nc = 0, ni = 0, nw = 0;
  const int64_t *pool = ox_attr_ints(n, "pool_int64s", &np);
  const int64_t *counts = ox_attr_ints(n, "ngram_counts", &nc);
  const int64_t *index = ox_attr_ints(n, "ngram_indexes", &ni);
  const Onnx__AttributeProto *wa = ox_attr(n, "weights");
  const float *weights = wa && wa->n_floats ? wa->floats : NULL;
  nw = wa ? (int)wa->n_floats : 0;
  int64_t lo = ox_attr_int(n, "min_gram_length", 0), hi = ox_attr_int(n, "max_gram_length", 0);
  int64_t skips = ox_attr_int(n, "max_skip_count", 0);
  char mbuf[16];
  const char *mode = ox_attr_string(n, "mode", "", mbuf, sizeof mbuf);
  int m = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : strcmp(mode, "TFIDF") == 0
                                                                           ? 2 : -1;
  if (m < 0) return ox_fail(x, KILN_ERR_VERIFY, "mode \"%s\" is not TF, IDF or TFIDF", mode);
  if (lo < 1 || hi < lo || nc < 1 || skips < 0 || skips > 1024)
    return ox_fail(x, KILN_ERR_VERIFY, "gram lengths %lld .. %lld, %d ngram_counts and "
                   "max_skip_count %lld are not valid", (long long)lo, (long long)hi, nc,
                   (long long)skips);
  /* the pool's grams: section s (length s + 1) runs from counts[s] to counts[s + 1] */
  int64_t ngrams = 0, cols = 0, terms = 0;
  for (int s = 0; s < nc; s++) {
    int64_t end = s + 1 < nc ? counts[s + 1] : np;
    if (counts[s] < 0 || end < counts[s] || end > np || (end - counts[s]) % (s + 1))
      return ox_fail(x, KILN_ERR_VERIFY, "ngram_counts[%d] = %lld does not split pool_int64s "
                     "(%d values) into grams of length %d", s, (long long)counts[s], np, s + 1);
    ngrams += (end - counts[s]) / (s + 1);
    terms += (end - counts[s]) * (s ? skips + 1 : 1);
  }
  if (ngrams != ni) return ox_fail(x, KILN_ERR_VERIFY, "%lld grams but %d ngram_indexes",
                                   (long long)ngrams, ni);
  if (terms > OX_TFIDF_MAX_TERMS)
    return ox_unsupported(x, n, "a pool of %lld compares (over %d)", (long long)terms,
                          OX_TFIDF_MAX_TERMS);
  for (int j = 0; j < ni; j++) {
    if (index[j] < 0 || index[j] >= 1 << 20)
      return ox_fail(x, KILN_ERR_VERIFY, "ngram_indexes[%d] = %lld", j, (long long)index[j]);
    if (index[j] + 1 > cols) cols = index[j] + 1;
  }
  if (weights && nw < cols)
    return ox_fail(x, KILN_ERR_VERIFY, "%d weights for %lld columns", nw, (long long)cols);
  kiln_value **col = calloc((size_t)cols + 1, sizeof *col);
  if (!col) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  rc = -1;
  for (int s = 0, j = 0; s < nc; s++) {
    int64_t k = s + 1, end = s + 1 < nc ? counts[s + 1] : np;
    for (int64_t p = counts[s]; p < end; p += k, j++) {
      if (k < lo || k > hi) continue;
      for (int64_t d = 1; d <= (k == 1 ? 1 : skips + 1); d++) {
        bool none;
        kiln_value *c = occurrences(&t, pool + p, k, d, &none);
        if (none) continue;
        kiln_value **dst = &col[index[j]];
        if (!c || !(*dst = *dst ? OP2("add", *dst, c) : c)) goto done;
      }
    }
  }
  const ir_dim *one = ir_dim_const(x->ir->arena, 1), *zd[2] = {at->dims[0], one};
  char ty[256];
  kiln_value *zero = ox_scalar(x, IR_DT_F32, 0);
  if (!zero) goto done;
  for (int64_t c = 0; c < cols; c++) {
    if (!col[c] && !(col[c] = ox_op(x, "broadcast_to", &zero, 1,
                                    ox_type_text(ty, sizeof ty, IR_DT_F32, t.rank,
                                                 t.rank == 1 ? &one : zd), NULL)))
      goto done;
    if (m > 0) { /* IDF: the weight where the count is nonzero; TFIDF: count * weight */
      kiln_value *w = ox_scalar(x, IR_DT_F32, weights ? weights[c] : 1.0);
      kiln_value *nz = w && m == 1 ? OP2("greater", col[c], zero) : NULL;
      if (nz) nz = ox_op(x, "cast", &nz, 1, NULL, "{dtype = f32}");
      if (!w || (m == 1 && !nz) || !(col[c] = OP2("mul", m == 1 ? nz : col[c], w))) goto done;
    }
  }
  kiln_value *y = cols == 1 ? col[0] : ox_op(x, "concat", col, (int)cols, NULL, "{axis = %d}",
                                             t.rank - 1);
  if (!y) goto done;
  out[0]->v = y;
  rc = 0;
done:
  free(col);
  return rc < 0 ? FAILED() : rc;
}
