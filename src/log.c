/* log.c - the context's log sink (log.h): level filter, stderr or the
 * user's callback. A line is formatted into a bounded buffer (longer lines
 * are cut, with "..." at the end) and handed over under the sink's mutex,
 * so lines from threads never interleave and a callback never runs twice
 * at once for one context. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rt.h"

#define LINE_MAX_BYTES 2048

const char *rt_log_level_name(kiln_log_level level) {
  switch (level) {
  case KILN_LOG_OFF: return "off";
  case KILN_LOG_WARN: return "warn";
  case KILN_LOG_INFO: return "info";
  case KILN_LOG_DEBUG: return "debug";
  }
  return "?";
}

kiln_log_level rt_log_env_level(char *bad, size_t badlen) {
  if (bad && badlen) bad[0] = 0;
  const char *q = getenv("KILN_QUIET");
  bool quiet = q && *q && strcmp(q, "0") != 0;
  const char *v = getenv("KILN_LOG");
  if (!v || !*v) return quiet ? KILN_LOG_OFF : KILN_LOG_WARN;
  static const char *const names[] = {"off", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(v, names[i])) return (kiln_log_level)i;
  if (!strcasecmp(v, "warning")) return KILN_LOG_WARN;
  if (bad && badlen)
    snprintf(bad, badlen, "KILN_LOG='%s' is not a level (off, warn, info, debug); using warn", v);
  return quiet ? KILN_LOG_OFF : KILN_LOG_WARN;
}

int rt_log_init(rt_log *lg) {
  memset(lg, 0, sizeof *lg);
  if (pthread_mutex_init(&lg->mu, NULL) != 0) return -1;
  char bad[256];
  atomic_store(&lg->level, (int)rt_log_env_level(bad, sizeof bad));
  if (bad[0]) rt_logf(lg, KILN_LOG_WARN, "%s", bad);
  return 0;
}

void rt_log_destroy(rt_log *lg) {
  if (lg) pthread_mutex_destroy(&lg->mu);
}

static const char *prefix(kiln_log_level level) {
  switch (level) {
  case KILN_LOG_WARN: return "kiln: warning: ";
  case KILN_LOG_INFO: return "kiln: info: ";
  default: return "kiln: debug: ";
  }
}

void rt_logf(rt_log *lg, kiln_log_level level, const char *fmt, ...) {
  if (level <= KILN_LOG_OFF || !rt_log_on(lg, level)) return;
  char line[LINE_MAX_BYTES];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof line) memcpy(line + sizeof line - 4, "...", 4);
  if (!lg) {
    fprintf(stderr, "%s%s\n", prefix(level), line);
    return;
  }
  pthread_mutex_lock(&lg->mu);
  if (lg->fn) lg->fn(lg->user, level, line);
  else fprintf(stderr, "%s%s\n", prefix(level), line);
  pthread_mutex_unlock(&lg->mu);
}

KILN_API int kiln_context_set_log(kiln_context *ctx, kiln_log_fn fn, void *user,
                                  kiln_log_level level, kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_log: context is NULL");
  if (level < KILN_LOG_OFF || level > KILN_LOG_DEBUG)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_log: level %d is not a kiln_log_level (0 off to 3 debug)",
                  (int)level);
  pthread_mutex_lock(&ctx->log.mu);
  ctx->log.fn = fn;
  ctx->log.user = user;
  atomic_store(&ctx->log.level, (int)level);
  pthread_mutex_unlock(&ctx->log.mu);
  rt_ok(st);
  return 0;
}

KILN_API kiln_log_level kiln_context_log_level(const kiln_context *ctx) {
  if (!ctx) return rt_log_env_level(NULL, 0);
  return (kiln_log_level)atomic_load(&((kiln_context *)ctx)->log.level);
}
