/* weight_file.h - a weights file opened by path, .safetensors or GGUF
 * (weight_file.c), for the CLI's --weights and
 * kiln_model_bind_weights_file. Internal to src/. */
#ifndef KILN_SRC_WEIGHT_FILE_H
#define KILN_SRC_WEIGHT_FILE_H

#include <stdbool.h>

#include "rt.h"

typedef struct rt_wfile rt_wfile;
/* GGUF when the file starts with "GGUF", else .safetensors. */
rt_wfile *rt_wfile_open(const char *path, kiln_status *st);
void rt_wfile_close(rt_wfile *w); /* NULL ok */
bool rt_wfile_is_gguf(const rt_wfile *w);
int rt_wfile_count(const rt_wfile *w);
const char *rt_wfile_name(const rt_wfile *w, int i); /* owned by w */
/* Tensor i: a borrowed view of the mapping (valid while w is open) or a copy. */
kiln_tensor *rt_wfile_tensor(const rt_wfile *w, int i, kiln_status *st);
/* Where tensor i's bytes lie in the file's mapping (*len of them), or NULL. */
const void *rt_wfile_bytes(const rt_wfile *w, int i, size_t *len);
void rt_wfile_drop(const rt_wfile *w, int i); /* give back its mapped pages */

#endif
