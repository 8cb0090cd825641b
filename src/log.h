/* log.h - internal to src/: a context's log sink (log.c).
 *
 * One line per event (a kernel compiled, unloaded or evicted, a corrupt
 * disk-cache entry found, a setting that did not work), filtered by a
 * level: KILN_LOG=off|warn|info|debug when the context is created (default
 * warn; KILN_QUIET=1 means off), or kiln_context_set_log. Lines go to
 * stderr ("kiln: warning: ...", "kiln: info: ...", "kiln: debug: ...") or
 * to the callback given to kiln_context_set_log, without the prefix.
 * rt_log_on is one relaxed load: callers test it before formatting. */
#ifndef KILN_SRC_LOG_H
#define KILN_SRC_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "kiln/runtime.h"

typedef struct rt_log {
  atomic_int level;   /* kiln_log_level */
  pthread_mutex_t mu; /* guards fn and user, and serializes the lines */
  kiln_log_fn fn;     /* NULL: stderr */
  void *user;
} rt_log;

/* The level the environment asks for (KILN_LOG, KILN_QUIET). A KILN_LOG
 * value that is not a level gives warn and a message in bad (else ""). */
kiln_log_level rt_log_env_level(char *bad, size_t badlen);
/* Set up lg from the environment (a bad KILN_LOG is logged as a warning).
 * 0, or -1 when the mutex cannot be made. */
int rt_log_init(rt_log *lg);
void rt_log_destroy(rt_log *lg);

static inline bool rt_log_on(rt_log *lg, kiln_log_level level) {
  return lg ? level <= (kiln_log_level)atomic_load_explicit(&lg->level, memory_order_relaxed)
            : level <= rt_log_env_level(NULL, 0);
}
/* One line at level (no newline in fmt). lg NULL: stderr at the
 * environment's level (code that has no context). */
void rt_logf(rt_log *lg, kiln_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The name of a level: "off", "warn", "info", "debug". */
const char *rt_log_level_name(kiln_log_level level);

#endif
