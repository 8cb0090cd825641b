/* progress.c - the CLI's progress bar (progress.h). */
#include "progress.h"

#include <time.h>
#include <unistd.h>

#define BAR_WIDTH 30

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *cli_progress_clock(double s, char *buf, size_t cap) {
  long t = s < 0 ? 0 : (long)(s + 0.5);
  if (t >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

void cli_progress_start(cli_progress *p, FILE *out, int total) {
  p->out = out;
  p->tty = isatty(fileno(out));
  p->total = total;
  p->done = 0;
  p->t0_ms = now_ms();
  p->drawn_ms = -1e9;
}

static void draw(cli_progress *p, const char *what, bool final) {
  int fill = p->total > 0 ? p->done * BAR_WIDTH / p->total : BAR_WIDTH;
  char bar[BAR_WIDTH + 1], tbuf[32];
  for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[BAR_WIDTH] = 0;
  double el = (now_ms() - p->t0_ms) / 1e3;
  int pct = p->total > 0 ? p->done * 100 / p->total : 100;
  fprintf(p->out, "\r\033[K[%s] %d/%d %3d%% ", bar, p->done, p->total, pct);
  if (final) fprintf(p->out, "%s total", cli_progress_clock(el, tbuf, sizeof tbuf));
  else if (p->done > 0)
    fprintf(p->out, "%s left",
            cli_progress_clock(el / p->done * (p->total - p->done), tbuf, sizeof tbuf));
  else fprintf(p->out, "-:-- left");
  if (what && *what) fprintf(p->out, " %s", what);
  fflush(p->out);
}

void cli_progress_at(cli_progress *p, int done, const char *what) {
  p->done = done;
  if (!p->tty) return;
  double t = now_ms();
  if (t - p->drawn_ms < 50 && done > 0) return; /* fast steps: a terminal need not see each */
  p->drawn_ms = t;
  draw(p, what, false);
}

void cli_progress_clear(cli_progress *p) {
  if (!p->tty) return;
  fprintf(p->out, "\r\033[K");
  fflush(p->out);
  p->drawn_ms = -1e9;
}

void cli_progress_end(cli_progress *p) {
  p->done = p->total;
  if (!p->tty) return;
  draw(p, "done", true);
  fputc('\n', p->out);
  fflush(p->out);
}
