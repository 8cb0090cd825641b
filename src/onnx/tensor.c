/* tensor.c - ONNX TensorProto -> kiln_tensor, checked before any data is
 * touched: dtype known, dims non-negative, element count without overflow,
 * the data's size equal to what dtype and dims say (the tensor is named in
 * every message). raw_data found in place in the file's mapping (wire.c)
 * and external data (external.c) are borrowed where aligned for the dtype;
 * raw_data that protobuf-c decoded is borrowed from the proto likewise;
 * unaligned bytes and a caller's buffer (the memory route) are copied;
 * typed fields (float_data, int32_data, ...) are converted into an owned
 * buffer. Also rt_onnx_tensor_read: a whole .pb file holding one
 * TensorProto. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_io.h"
#include "ox.h"

/* raw_data and external data hold little-endian elements, borrowed as the
 * host's own: a big-endian host would need a byte-swapping copy here. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "ONNX raw_data is read in place: kiln assumes a little-endian host");

bool ox_dtype(int32_t onnx, ir_dtype *out) {
  static const int map[] = {
      [1] = IR_DT_F32,       [2] = IR_DT_UI8,         [3] = IR_DT_SI8,       [4] = IR_DT_UI16,
      [5] = IR_DT_SI16,      [6] = IR_DT_SI32,        [7] = IR_DT_SI64,      [9] = IR_DT_BOOL,
      [10] = IR_DT_F16,      [11] = IR_DT_F64,        [12] = IR_DT_UI32,     [13] = IR_DT_UI64,
      [16] = IR_DT_BF16,     [17] = IR_DT_F8E4M3FN,   [18] = IR_DT_F8E4M3FNUZ,
      [19] = IR_DT_F8E5M2,   [20] = IR_DT_F8E5M2FNUZ,
  };
  if (onnx <= 0 || onnx >= (int32_t)(sizeof map / sizeof map[0]) || onnx == 8 || onnx == 14 ||
      onnx == 15)
    return false;
  if (onnx != 9 && map[onnx] == 0) return false;
  *out = (ir_dtype)map[onnx];
  return true;
}

/* Copy n typed elements of src (kind: 'f' float, 'i' int32, 'l' int64, 'd' double,
 * 'u' uint64) into dst as dtype dt. */
static void convert(void *dst, ir_dtype dt, const void *src, char kind, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    int64_t iv = 0;
    uint64_t uv = 0;
    switch (kind) {
    case 'i': iv = ((const int32_t *)src)[i]; uv = (uint64_t)iv; break;
    case 'l': iv = ((const int64_t *)src)[i]; uv = (uint64_t)iv; break;
    case 'u': uv = ((const uint64_t *)src)[i]; iv = (int64_t)uv; break;
    default: break;
    }
    switch (dt) {
    case IR_DT_F32: ((float *)dst)[i] = ((const float *)src)[i]; break;
    case IR_DT_F64: ((double *)dst)[i] = ((const double *)src)[i]; break;
    case IR_DT_SI64: ((int64_t *)dst)[i] = iv; break;
    case IR_DT_SI32: ((int32_t *)dst)[i] = (int32_t)iv; break;
    case IR_DT_SI16: ((int16_t *)dst)[i] = (int16_t)iv; break;
    case IR_DT_UI16: case IR_DT_F16: case IR_DT_BF16: ((uint16_t *)dst)[i] = (uint16_t)iv; break;
    case IR_DT_SI8: ((int8_t *)dst)[i] = (int8_t)iv; break;
    case IR_DT_BOOL: ((uint8_t *)dst)[i] = iv != 0; break;
    case IR_DT_UI32: ((uint32_t *)dst)[i] = (uint32_t)uv; break;
    case IR_DT_UI64: ((uint64_t *)dst)[i] = uv; break;
    default: ((uint8_t *)dst)[i] = (uint8_t)iv; break; /* ui8, float8 kinds */
    }
  }
}

/* Which typed field holds dt's elements, and how many it has. */
static char typed_field(const Onnx__TensorProto *t, ir_dtype dt, const void **src, size_t *n) {
  switch (dt) {
  case IR_DT_F32: *src = t->float_data; *n = t->n_float_data; return 'f';
  case IR_DT_F64: *src = t->double_data; *n = t->n_double_data; return 'd';
  case IR_DT_SI64: *src = t->int64_data; *n = t->n_int64_data; return 'l';
  case IR_DT_UI32: case IR_DT_UI64: *src = t->uint64_data; *n = t->n_uint64_data; return 'u';
  default: *src = t->int32_data; *n = t->n_int32_data; return 'i';
  }
}

kiln_tensor *ox_tensor_decode(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                              const char *what, kiln_status *st) {
  return ox_tensor_decode_in(t, dir, ws, NULL, NULL, what, st);
}

kiln_tensor *ox_tensor_decode_in(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                                 const ox_raw *raw, const void **in_file, const char *what,
                                 kiln_status *st) {
  const void *file_bytes = NULL; /* the data's bytes in a file mapping */
  if (in_file) *in_file = NULL;
  ir_dtype dt;
  if (!t->has_data_type || !ox_dtype(t->data_type, &dt)) {
    rt_err(st, KILN_ERR_UNSUPPORTED, "%s: ONNX data type %d is not supported", what,
           (int)t->data_type);
    return NULL;
  }
  if (t->n_dims > IR_MAX_RANK) {
    rt_err(st, KILN_ERR_UNSUPPORTED, "%s: rank %zu is over kiln's %d", what, t->n_dims,
           IR_MAX_RANK);
    return NULL;
  }
  if (t->segment) {
    rt_err(st, KILN_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    return NULL;
  }
  int rank = (int)t->n_dims;
  int64_t numel;
  size_t nbytes;
  kiln_status *tmp = kiln_status_new();
  if (rt_shape_bytes((kiln_dtype)dt, rank, t->dims, &numel, &nbytes, tmp) < 0) {
    rt_err(st, KILN_ERR_IO, "%s: bad dims: %s", what, kiln_status_message(tmp));
    kiln_status_free(tmp);
    return NULL;
  }
  kiln_status_free(tmp);
  size_t esize = ir_dtype_size(dt);
  const void *data = NULL;
  bool borrow = true;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if (!(data = ox_external_data(t, dir, ws, nbytes, what, st))) return NULL;
    file_bytes = data;
  } else if ((raw && raw->data) || t->has_raw_data) {
    bool in_place = raw && raw->data;
    size_t have = in_place ? raw->len : t->raw_data.len;
    if (have != nbytes) {
      rt_err(st, KILN_ERR_IO,
             "%s: raw_data holds %zu bytes but %s with %lld elements needs %zu", what,
             have, ir_dtype_name(dt), (long long)numel, nbytes);
      return NULL;
    }
    data = in_place ? raw->data : t->raw_data.data;
    if (in_place && raw->mapped) file_bytes = data;
    else if (in_place) borrow = false; /* the caller's buffer: it may go after the import */
  } else {
    const void *src;
    size_t n;
    char kind = typed_field(t, dt, &src, &n);
    if ((int64_t)n != numel) {
      rt_err(st, KILN_ERR_IO, "%s: holds %zu values but %s with %lld elements needs %lld", what,
             n, ir_dtype_name(dt), (long long)numel, (long long)numel);
      return NULL;
    }
    kiln_tensor *out = rt_tensor_alloc((kiln_dtype)dt, rank, t->dims, st);
    if (!out) return NULL;
    convert(out->data, dt, src, kind, numel);
    return out;
  }
  static const char empty[RT_ALIGN] __attribute__((aligned(RT_ALIGN)));
  if (!data || nbytes == 0) {
    data = empty;
    file_bytes = NULL;
  }
  if (in_file) *in_file = file_bytes;
  if (borrow && (uintptr_t)data % esize == 0) /* borrowed view */
    return kiln_tensor_borrow((kiln_dtype)dt, rank, t->dims, (void *)data, st);
  /* Not aligned for its dtype where it lies (a file's raw_data sits at any
   * offset): kernels and prepacking read typed elements, so an aligned copy.
   * A large one (nothing reads it during the import: only known integers
   * and constants are read, all smaller) is not copied now: its shape only,
   * and the weight source copies the file's bytes at each bind
   * (rt_wsrc_add_mapped), so copies of every weight never coexist. */
  if (in_file && file_bytes && numel > OX_KNOWN_MAX)
    return rt_tensor_header((kiln_dtype)dt, rank, t->dims, st);
  kiln_tensor *out = rt_tensor_alloc((kiln_dtype)dt, rank, t->dims, st);
  if (out) memcpy(out->data, data, nbytes);
  if (file_bytes) rt_map_drop(file_bytes, nbytes);
  return out;
}

kiln_tensor *rt_onnx_tensor_read(const char *path, char **name, kiln_status *st) {
  size_t len = 0;
  char *buf = rt_read_file(path, NULL, &len, st);
  if (!buf) return NULL;
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)buf);
  free(buf);
  if (!t) {
    rt_err(st, KILN_ERR_IO, "%s: not an ONNX TensorProto (malformed or truncated protobuf)", path);
    return NULL;
  }
  kiln_tensor *d = ox_tensor_decode(t, NULL, NULL, path, st), *out = NULL;
  if (d) { /* an owned copy: the proto goes now */
    out = rt_tensor_alloc(d->dtype, d->rank, d->shape, st);
    if (out) memcpy(out->data, d->data, d->nbytes);
    kiln_tensor_free(d);
  }
  if (out && name) *name = strdup(t->name ? t->name : "");
  onnx__tensor_proto__free_unpacked(t, NULL);
  return out;
}
