/* mx.h - internal to src/max/: the structs behind the M_ handles of kiln's
 * MAX C API layer and the helpers its files share.
 *
 * Invariants:
 *   - an M_Status message is NULL or a malloc'd string it owns;
 *   - an mx_buf is one tensor's storage (a kiln_tensor, owned or borrowing
 *     the caller's data) shared by reference count between tensor handles,
 *     maps and captured graphs; the last reference frees it;
 *   - an M_AsyncCompiledModel is reference counted too: the caller's handle
 *     and each model initialized from it (until its init is done) hold one;
 *   - every thread the layer starts is joined exactly once, under the lock of
 *     the object that owns it;
 *   - an accelerator is one kiln_device per MAX accelerator id, shared by
 *     every handle that uses it (device.c's registry: a device model only
 *     takes tensors on its own kiln_device handle). Device handles from
 *     M_newDevice / M_getTensorDevice, contexts, models, compiled models and
 *     device tensors each hold one reference; M_Device values copied into
 *     configs and specs hold none (their `dev` is NULL). */
#ifndef KILN_SRC_MAX_MX_H
#define KILN_SRC_MAX_MX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "kiln/kiln.h"
#include "max/c/common.h"
#include "max/c/context.h"
#include "max/c/device.h"
#include "max/c/model.h"
#include "max/c/safetensors.h"
#include "max/c/tensor.h"
#include "max/c/weights.h"

#define MX_MAX_RANK 16 /* kiln's largest rank (ir/ir.h) */

struct M_Status {
  int error;
  char *msg;
};

/* An open accelerator (device.c). refs and next are under the registry's
 * lock; the rest is fixed once opened. */
typedef struct mx_dev {
  int id;          /* MAX accelerator id */
  kiln_device *kd; /* "cuda:N", "hip:N" or "simt-emu" */
  int refs;
  struct mx_dev *next;
} mx_dev;

struct M_Device {
  M_DeviceType type;
  int id;
  mx_dev *dev; /* accelerator handles: one reference; NULL for the host and in copies */
};

struct M_RuntimeConfig {
  int ndevices, cap;
  M_Device *devices;
};

struct M_RuntimeContext {
  kiln_context *kc;
  mx_dev *accel; /* the config's accelerator (one reference), or NULL: models run on the host */
};

struct M_TensorSpec {
  char *name;
  M_Dtype dtype;
  int64_t rank; /* M_DYNAMIC_RANK_VALUE when dynamic */
  int64_t *shape;
  M_Device device;
};

typedef struct mx_buf {
  atomic_int refs;
  kiln_tensor *t;
  mx_dev *dev; /* t's accelerator (one reference), NULL for host memory */
} mx_buf;

struct M_AsyncTensor {
  mx_buf *buf; /* one reference */
  char *name;
};

struct M_AsyncTensorMap {
  int n, cap;
  char **names;
  mx_buf **bufs; /* one reference each */
};

/* One registry entry. Without a type, the graph's declaration gives it. */
typedef struct mx_weight {
  char *name;
  const void *data;
  bool typed;
  kiln_dtype dtype;
  int rank;
  int64_t shape[MX_MAX_RANK];
} mx_weight;

struct M_WeightsRegistry {
  size_t n;
  mx_weight *w;
};

struct M_CompileConfig {
  char *path;
};

struct M_AsyncCompiledModel {
  atomic_int refs;
  kiln_context *kc;
  mx_dev *dev; /* the accelerator it compiles for (one reference), NULL: the host */
  char *path;
  pthread_mutex_t lock;
  bool has_thread, done; /* done: the compile ran (joined) */
  pthread_t thread;
  kiln_graph *graph;     /* kept for further inits; NULL on error */
  kiln_model *km;        /* the compiled model (host or accelerator), until the first
                          * init takes it */
  char *err;             /* compile error, or NULL */
};

typedef struct mx_capture mx_capture;

struct M_AsyncModel {
  M_AsyncCompiledModel *compiled; /* one reference until init is done */
  kiln_context *kc;
  size_t nw;
  mx_weight *w; /* copy of the registry */
  bool has_registry;
  pthread_mutex_t lock;
  bool has_thread, done;
  pthread_t thread;
  char *err; /* init error, or NULL */
  mx_dev *dev; /* the accelerator (one reference), NULL: the host */
  kiln_model *km; /* runs the graph, on the host or on the accelerator dev */
  int nbound;
  kiln_tensor **bound; /* weight tensors bound to km (borrowing the data) */
  int nin, nout;
  char **in_names, **out_names;
  pthread_mutex_t cap_lock;
  mx_capture *captures;
};

/* ---- status.c ---- */
void mx_ok(M_Status *st);
/* Set st to an error with a formatted message; returns NULL-friendly -1. */
int mx_err(M_Status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A formatted malloc'd string (NULL on out-of-memory). */
char *mx_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *mx_strdup(const char *s); /* NULL for NULL or out-of-memory */

/* ---- device.c ---- */
/* Accelerator `id`, opened on first use: a new reference, or NULL with st
 * filled (the message starts with `fn`). */
mx_dev *mx_dev_acquire(int id, const char *fn, M_Status *st);
void mx_dev_ref(mx_dev *d);     /* NULL ok */
void mx_dev_release(mx_dev *d); /* NULL ok; the last reference closes the device */
const char *mx_dev_label(const mx_dev *d); /* "cuda:0", "simt-emu"; "the host" for NULL */

/* ---- tensor.c ---- */
bool mx_dtype_to_kiln(M_Dtype d, kiln_dtype *out);
M_Dtype mx_dtype_from_kiln(kiln_dtype d);
mx_buf *mx_buf_new(kiln_tensor *t); /* takes t; NULL (t freed) on out-of-memory */
/* The same for t on accelerator dev (takes a new reference on dev). */
mx_buf *mx_buf_new_on(kiln_tensor *t, mx_dev *dev);
void mx_buf_ref(mx_buf *b);
void mx_buf_unref(mx_buf *b);
/* A new handle on b (takes a new reference); NULL on out-of-memory. */
M_AsyncTensor *mx_tensor_wrap(mx_buf *b, const char *name);
/* Add b under name to map (takes a new reference), replacing a namesake. */
int mx_map_put(M_AsyncTensorMap *map, const char *name, mx_buf *b, M_Status *st);
/* Index of name in map, -1 if none. */
int mx_map_find(const M_AsyncTensorMap *map, const char *name);

/* ---- model.c ---- */
/* Waits for m's init; returns its kiln model or NULL with st filled. */
kiln_model *mx_model_ready(M_AsyncModel *m, M_Status *st);
/* Checks inputs[nin] (m's input order) against the model's inputs: dtype,
 * rank, static dims and symbolic dims. 0 or -1 with st filled. */
int mx_check_inputs(M_AsyncModel *m, kiln_model *km, kiln_tensor *const *inputs, M_Status *st);
/* What mx_run does: an execute, or on an accelerator a capture / replay
 * of the device model's launch sequence under a key (on the host these
 * are executes: capture.c keeps the signature and the outputs). */
typedef enum mx_op { MX_EXECUTE, MX_CAPTURE, MX_REPLAY } mx_op;
/* Runs m (km, on the host or its accelerator); outputs[i] NULL gets a
 * new owned host tensor (an output the device model leaves on its device
 * is copied back). A kiln error is copied into st with prefix `what`. */
int mx_run(M_AsyncModel *m, kiln_model *km, mx_op op, uint64_t key, kiln_tensor *const *inputs,
           kiln_tensor **outputs, const char *what, M_Status *st);
/* "the host" or the accelerator's label: where m runs. */
const char *mx_model_place(const M_AsyncModel *m);

/* ---- capture.c ---- */
void mx_captures_free(M_AsyncModel *m);

#endif
