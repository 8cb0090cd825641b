/* trace.c - Chrome trace-event JSON for a context (trace.h).
 *
 * File layout: "[\n" then one event per line, each after the first
 * preceded by ",", then "\n]\n". A write seeks back to body_end (where
 * "\n]" starts), appends the buffered events and the trailer again and
 * flushes the stdio buffer, so between writes the file parses as JSON.
 * Timestamps are microseconds since the file was opened (CLOCK_MONOTONIC);
 * pid is the process's, tid the kernel thread id. */
#define _GNU_SOURCE /* pthread_getname_np */
#include "trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

static _Thread_local int tls_tid;

static int thread_id(void) {
  if (!tls_tid) tls_tid = (int)syscall(SYS_gettid);
  return tls_tid;
}

rt_trace *rt_trace_new(void) {
  rt_trace *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  if (pthread_mutex_init(&t->mu, NULL) != 0) {
    free(t);
    return NULL;
  }
  return t;
}

const char *rt_trace_escape(const char *s, char *buf, size_t cap) {
  size_t k = 0;
  if (!cap) return buf;
  for (; s && *s && k + 7 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[k++] = '\\';
      buf[k++] = (char)c;
    } else if (c < 0x20) {
      k += (size_t)snprintf(buf + k, cap - k, "\\u%04x", c);
    } else {
      buf[k++] = (char)c;
    }
  }
  buf[k] = 0;
  return buf;
}

/* Under mu: write the buffer and the trailer. 0, or -1 (errno). */
static int write_out(rt_trace *t) {
  if (!t->f) return 0;
  if (fseek(t->f, t->body_end, SEEK_SET) != 0) return -1;
  if (t->len && fwrite(t->buf, 1, t->len, t->f) != t->len) return -1;
  t->body_end += (long)t->len;
  t->len = 0;
  if (fputs("\n]\n", t->f) == EOF || fflush(t->f) != 0) return -1;
  return 0;
}

/* Under mu: append one formatted event (its leading ",\n" included). */
static void append(rt_trace *t, const char *ev, size_t n) {
  if (!t->f || t->write_failed) return;
  if (t->len + n > t->cap) {
    if (t->len && write_out(t) != 0) { /* a full disk, say: stop; close reports it */
      t->write_failed = true;
      t->len = 0;
      atomic_store(&t->on, 0);
      return;
    }
    if (n > t->cap) {
      size_t nc = n > RT_TRACE_BUFFER_BYTES ? n : RT_TRACE_BUFFER_BYTES;
      char *b = realloc(t->buf, nc);
      if (!b) return; /* dropped: out of memory */
      t->buf = b;
      t->cap = nc;
    }
  }
  memcpy(t->buf + t->len, ev, n);
  t->len += n;
}

/* Under mu: name track tid on its first event: track_name, or (NULL) the
 * calling thread's name. */
static void name_track(rt_trace *t, int tid, const char *track_name) {
  for (int i = 0; i < t->nnamed; i++)
    if (t->named[i] == tid) return;
  if (t->nnamed == t->named_cap) {
    int nc = t->named_cap ? t->named_cap * 2 : 16;
    int *n = realloc(t->named, (size_t)nc * sizeof *n);
    if (!n) return;
    t->named = n;
    t->named_cap = nc;
  }
  t->named[t->nnamed++] = tid;
  char name[64] = "", esc[160], ev[320];
  if (track_name) snprintf(name, sizeof name, "%s", track_name);
  else if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0])
    snprintf(name, sizeof name, "thread %d", tid);
  int n = snprintf(ev, sizeof ev,
                   ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"name\":\"%s\"}}",
                   t->pid, tid, rt_trace_escape(name, esc, sizeof esc));
  append(t, ev, (size_t)n);
}

/* One event on track tid (named track_name, NULL: the calling thread's). */
static void record(rt_trace *t, int tid, const char *track_name, char ph, const char *cat,
                   const char *name, int64_t t0_ns, int64_t t1_ns, const char *args) {
  char en[512], ec[64], ev[2048];
  pthread_mutex_lock(&t->mu);
  if (!t->f) {
    pthread_mutex_unlock(&t->mu);
    return;
  }
  name_track(t, tid, track_name);
  /* microseconds with 3 decimals, printed from integers: formatting doubles
   * was most of an event's cost */
  long long ts = t0_ns - t->t0_ns, dur = t1_ns - t0_ns;
  if (ts < 0) ts = 0;
  if (dur < 0) dur = 0;
  int n;
  if (ph == 'X')
    n = snprintf(ev, sizeof ev,
                 ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"ts\":%lld.%03lld,"
                 "\"dur\":%lld.%03lld,"
                 "\"pid\":%d,\"tid\":%d%s%s%s}",
                 rt_trace_escape(cat, ec, sizeof ec), rt_trace_escape(name, en, sizeof en),
                 ts / 1000, ts % 1000, dur / 1000, dur % 1000, t->pid, tid,
                 args ? ",\"args\":{" : "", args ? args : "", args ? "}" : "");
  else
    n = snprintf(ev, sizeof ev,
                 ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"%s\",\"name\":\"%s\",\"ts\":%lld.%03lld,"
                 "\"pid\":%d,\"tid\":%d%s%s%s}",
                 rt_trace_escape(cat, ec, sizeof ec), rt_trace_escape(name, en, sizeof en),
                 ts / 1000, ts % 1000, t->pid, tid, args ? ",\"args\":{" : "", args ? args : "",
                 args ? "}" : "");
  if (n > 0 && (size_t)n < sizeof ev) append(t, ev, (size_t)n); /* a cut event is dropped */
  pthread_mutex_unlock(&t->mu);
}

void rt_trace_span(rt_trace *t, const char *cat, const char *name, int64_t t0_ns, int64_t t1_ns,
                   const char *args) {
  if (rt_trace_on(t)) record(t, thread_id(), NULL, 'X', cat, name, t0_ns, t1_ns, args);
}

void rt_trace_span_on(rt_trace *t, int track, const char *track_name, const char *cat,
                      const char *name, int64_t t0_ns, int64_t t1_ns, const char *args) {
  if (rt_trace_on(t)) record(t, track, track_name, 'X', cat, name, t0_ns, t1_ns, args);
}

void rt_trace_instant(rt_trace *t, const char *cat, const char *name, const char *args) {
  if (rt_trace_on(t)) record(t, thread_id(), NULL, 'i', cat, name, rt_now_ns(), 0, args);
}

void rt_trace_jit_phase(void *ud, const char *phase, const char *fn_name, int64_t t0_ns,
                        int64_t t1_ns) {
  rt_trace *t = ud;
  if (!rt_trace_on(t)) return;
  char esc[96], a[128];
  snprintf(a, sizeof a, "\"fn\":\"%s\"", rt_trace_escape(fn_name, esc, sizeof esc));
  record(t, thread_id(), NULL, 'X', "compile", phase, t0_ns, t1_ns, a);
}

/* Under mu: write what is left and close. 0, or -1 with st. */
static int close_locked(rt_trace *t, kiln_status *st) {
  if (!t->f) return 0;
  atomic_store(&t->on, 0);
  int rc = write_out(t) == 0 && !t->write_failed ? 0 : -1;
  int e = errno;
  if (fclose(t->f) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  t->f = NULL;
  if (rc < 0) rt_err(st, KILN_ERR_IO, "trace '%s': write failed: %s", t->path, strerror(e));
  free(t->path);
  t->path = NULL;
  t->nnamed = 0;
  t->len = 0;
  return rc;
}

int rt_trace_open(rt_trace *t, const char *path, kiln_status *st) {
  pthread_mutex_lock(&t->mu);
  int rc = close_locked(t, st);
  if (rc == 0 && path) {
    FILE *f = fopen(path, "w");
    char *p = strdup(path);
    if (!f || !p) {
      int e = errno;
      if (f) fclose(f);
      free(p);
      pthread_mutex_unlock(&t->mu);
      return rt_err(st, KILN_ERR_IO, "trace '%s': cannot create the file: %s", path,
                    strerror(e));
    }
    t->f = f;
    t->path = p;
    t->write_failed = false;
    t->t0_ns = rt_now_ns();
    t->pid = (int)getpid();
    char head[256];
    int n = snprintf(head, sizeof head,
                     "[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                     "\"args\":{\"name\":\"kiln\"}}",
                     t->pid);
    t->body_end = 0;
    t->len = 0;
    if (!t->buf) {
      t->buf = malloc(RT_TRACE_BUFFER_BYTES);
      t->cap = t->buf ? RT_TRACE_BUFFER_BYTES : 0;
    }
    append(t, head, (size_t)n);
    if (write_out(t) != 0) {
      int e = errno;
      fclose(t->f);
      t->f = NULL;
      free(t->path);
      t->path = NULL;
      pthread_mutex_unlock(&t->mu);
      return rt_err(st, KILN_ERR_IO, "trace '%s': cannot write: %s", path, strerror(e));
    }
    atomic_store(&t->on, 1);
  }
  pthread_mutex_unlock(&t->mu);
  if (rc == 0) rt_ok(st);
  return rc;
}

int rt_trace_flush(rt_trace *t, kiln_status *st) {
  pthread_mutex_lock(&t->mu);
  int rc = 0;
  if (t->f && (write_out(t) != 0 || t->write_failed))
    rc = rt_err(st, KILN_ERR_IO, "trace '%s': write failed: %s", t->path, strerror(errno));
  pthread_mutex_unlock(&t->mu);
  if (rc == 0) rt_ok(st);
  return rc;
}

const char *rt_trace_path(rt_trace *t) { return t ? t->path : NULL; }

void rt_trace_free(rt_trace *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  close_locked(t, NULL);
  pthread_mutex_unlock(&t->mu);
  pthread_mutex_destroy(&t->mu);
  free(t->buf);
  free(t->named);
  free(t);
}
