/* trace_read.h - reading back a Chrome trace kiln wrote (trace_read.c), for
 * the observability tests: parse it with src/json.c (asserting it is a
 * JSON array), look events up by name, key and track, and record the trace
 * of a model specializing in the background (on the host or a device). */
#ifndef KILN_TESTS_TRACE_READ_H
#define KILN_TESTS_TRACE_READ_H

#include <stdint.h>

#include "kiln/kiln.h"
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

/* The trace of a model of graph text (one input [n, 64] f32, n symbolic)
 * compiled on dev (NULL: the host) in a context that specializes in the
 * background on first sight (async, hot 1), executed 3 times at n = 8,
 * each time waiting for the background compiles; path is the trace file.
 * Everything but the parsed trace is freed (asserts on failure). */
rt_json *trace_specializing_runs(const char *text, kiln_device *dev, const char *path);

#endif
