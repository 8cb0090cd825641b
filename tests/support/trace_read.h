/* trace_read.h - reading back a Chrome trace kiln wrote (trace_read.c), for
 * the observability tests: parse it with src/json.c (asserting it is a
 * JSON array) and look events up by name, key and track. */
#ifndef KILN_TESTS_TRACE_READ_H
#define KILN_TESTS_TRACE_READ_H

#include <stdint.h>

#include "src/json.h"

/* An empty file at path (a mkstemp template, rewritten in place). */
void trace_temp_file(char *path);
/* The trace at path, parsed (asserted to be a JSON array); rt_json_free. */
rt_json *trace_read(const char *path);
/* ev's string under key ("" if none), and its number (-1 if none). */
const char *trace_str(const rt_json *ev, const char *key);
int64_t trace_int(const rt_json *ev, const char *key);
/* Events named name (prefix match when name ends with '*'). */
int trace_count_named(const rt_json *j, const char *name);
/* The tid of the track named name by a thread_name event, -1 if none. */
int64_t trace_track_of(const rt_json *j, const char *name);

#endif
