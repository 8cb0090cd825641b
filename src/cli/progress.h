/* progress.h - a progress bar for long CLI loops (progress.c): on a
 * terminal one line redrawn in place, "[#####.....] 12/40 30% 0:04 left
 * WHAT", the time left estimated from the mean time per finished step;
 * elsewhere (a pipe, a log file) nothing is drawn and the caller prints its
 * own plain lines. */
#ifndef KILN_CLI_PROGRESS_H
#define KILN_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct cli_progress {
  FILE *out;
  bool tty;      /* out is a terminal: draw; else stay silent */
  int total, done;
  double t0_ms;  /* when it started */
  double drawn_ms; /* last redraw (redraws are at most every 50 ms) */
} cli_progress;

/* Start a bar of total steps on out (drawn only when out is a terminal). */
void cli_progress_start(cli_progress *p, FILE *out, int total);
/* Step done (0-based) starts now, on what. */
void cli_progress_at(cli_progress *p, int done, const char *what);
/* Clear the bar's line (before printing an error, say); the next
 * cli_progress_at draws it again. */
void cli_progress_clear(cli_progress *p);
/* Draw the full bar with the elapsed time, and end its line. */
void cli_progress_end(cli_progress *p);
/* "1:05" (or "1:02:03") for seconds s into buf. */
const char *cli_progress_clock(double s, char *buf, size_t cap);

#endif
