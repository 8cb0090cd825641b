/* service_ort.h - ONNX Runtime through its C API, loaded at run time, for
 * bench/service.c and bench/encoder_latency.c: one library and environment
 * per process, sessions on the CPU execution provider, one request at a
 * time (an f32 [1, seq, hidden] hidden state, or a text encoder's tokens).
 *
 * The library is dlopen'ed (kiln never links against it) and asked for the
 * API version of the onnxruntime_c_api.h it was compiled with; a library
 * older than that header is refused with a message. Errors come back as
 * NULL / -1 with the reason in err (cap bytes, always terminated). */
#ifndef SERVICE_ORT_H
#define SERVICE_ORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct svc_ort svc_ort;
typedef struct svc_ort_session svc_ort_session;

/* Loads the library at path and creates the environment. Owned by the
 * caller: svc_ort_close, after its sessions. */
svc_ort *svc_ort_open(const char *path, char *err, size_t cap);
void svc_ort_close(svc_ort *o); /* NULL ok; unloads the library */
/* "1.32.0" (owned by the library, valid until svc_ort_close). */
const char *svc_ort_version(const svc_ort *o);

/* A session on model_path: intra_op_num_threads = threads,
 * inter_op_num_threads = 1, sequential execution, ORT_ENABLE_ALL graph
 * optimizations (ORT's other defaults, thread spinning included).
 * load_ms gets the session's creation time. Owned by the caller:
 * svc_ort_session_free. */
svc_ort_session *svc_ort_session_new(svc_ort *o, const char *model_path, int threads,
                                     double *load_ms, char *err, size_t cap);
void svc_ort_session_free(svc_ort_session *s); /* NULL ok */

/* One request: in and out are the caller's [batch, seq, hidden] f32
 * buffers, the model's "hidden" and "out" (borrowed for the call; ORT
 * writes the result into out). 0 or -1. */
int svc_ort_session_run(svc_ort_session *s, float *in, float *out, int64_t batch, int64_t seq,
                        int64_t hidden, char *err, size_t cap);

/* One request to a text encoder: input_ids and attention_mask, si64
 * [batch, seq] (borrowed for the call); the session's last output (f32,
 * out_numel elements) is copied into out. 0 or -1. */
int svc_ort_session_run_encoder(svc_ort_session *s, int64_t *ids, int64_t *mask, int64_t batch,
                                int64_t seq, float *out, int64_t out_numel, char *err, size_t cap);

#endif
