/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_progress.c: the one progress line of the long verbs (verify, visit,
 * rekey), drawn on stderr.
 *
 * The library's walks call back with done/total (tide_progress_fn's
 * contract in tide/store.h: on the caller's thread, done never decreasing,
 * a last call with done == total). A verb passes those to
 * cli_progress_draw with a label; this file decides whether to draw, how
 * often, and what the line looks like:
 *
 *     tide verify: nudb.dat   62%  28.1 MiB of 45.4 MiB  410 MiB/s
 *
 * Layout: the mode (auto, on, off) and the --progress options; the rate
 * limit; the line; the end.
 *
 * Invariants:
 *   1. Nothing is written unless the mode says so: auto draws only when
 *      stderr is a terminal, so a script, a pipe or a test without a
 *      terminal sees the same bytes as before progress existed.
 *   2. One line, redrawn in place ("\r" ... "\033[K"), at most
 *      CLI_PROGRESS_HZ times a second; a call with done == total is always
 *      drawn, so the line a step leaves says 100%.
 *   3. cli_progress_end ends a drawn line with a newline (the final line
 *      stays, clean, and whatever follows starts on a line of its own);
 *      after it nothing more is drawn until the next start.
 *   4. Percent, counts and rate on one line are of the same measure: done
 *      and total as given, never mixed with another step's, and the rate
 *      divides done by the time since that measure began
 *      (cli_progress_restart at a new step), not since the verb began.
 *   5. While a line may be drawn, the process's log goes through this
 *      file's sink: a log line (a warning from inside the walk) erases the
 *      progress line, takes a line of its own, and the progress line is
 *      drawn again at the next call, so the two never share a line.
 *
 * Never: draw on stdout, or allocate (the callbacks come from inside a
 *   walk).
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/log.h"

#define EVERY_US (1000000u / CLI_PROGRESS_HZ)
#define RATE_AFTER_US 250000u   /* a rate from the first reads means nothing */

int cli_progress_option(int *mode, int id)
{
    if (id == CLI_OPT_PROGRESS) { *mode = CLI_PROGRESS_ON; return 1; }
    if (id == CLI_OPT_NO_PROGRESS) { *mode = CLI_PROGRESS_OFF; return 1; }
    return 0;
}

/* Invariant 5: the log's line on a line of its own, the progress line
 * erased first and drawn again at its next call. */
static void log_sink(void *arg, int level, const char *line)
{
    cli_progress *p = arg;
    if (p->drawn) fputs("\r\033[K", stderr);
    fputs(tide_log_prefix(level), stderr);     /* the journal's, as the stderr sink writes it */
    fputs(line, stderr);
    fputc('\n', stderr);
    fflush(stderr);
    p->drawn = 0;
}

int cli_option_flag_progress(void *opts, int id, const char *arg)
{
    cli_flag_progress *f = opts;
    (void)arg;
    if (!cli_progress_option(&f->progress, id)) f->flag = 1;
    return CLI_OK;
}

void cli_progress_start(cli_progress *p, const char *verb, int mode)
{
    memset(p, 0, sizeof *p);
    p->verb = verb;
    p->on = mode == CLI_PROGRESS_ON || (mode == CLI_PROGRESS_AUTO && isatty(2));  /* invariant 1 */
    p->start_us = tide_clock_mono_us();
    if (p->on) tide_log_set_sink(log_sink, p);
}

/* 1 when a line of done/total is to be drawn now (invariant 2). */
static int due(cli_progress *p, uint64_t done, uint64_t total, uint64_t now)
{
    if (!p->on) return 0;
    if (done >= total) return 1;
    return !p->drawn || now - p->last_us >= EVERY_US;
}

void cli_progress_format(const cli_progress *p, const char *what, uint64_t done, uint64_t total,
                         const char *unit, uint64_t now_us, char *out, size_t cap)
{
    char b1[32], b2[32], b3[32];
    size_t n;

    n = (size_t)snprintf(out, cap, "tide %s: %s  %3.0f%%  ", p->verb, what,
                         total ? 100.0 * (double)done / (double)total : 100.0);
    if (n >= cap) return;
    if (unit != NULL) {
        snprintf(out + n, cap - n, "%llu of %llu %s", (unsigned long long)done, (unsigned long long)total, unit);
        return;
    }
    n += (size_t)snprintf(out + n, cap - n, "%s of %s", cli_human(done, b1, sizeof b1),
                          cli_human(total, b2, sizeof b2));
    if (n < cap && now_us >= p->start_us && now_us - p->start_us >= RATE_AFTER_US)  /* this measure's time */
        snprintf(out + n, cap - n, "  %s/s", cli_human((uint64_t)((double)done * 1e6 /
                                                                  (double)(now_us - p->start_us)), b3, sizeof b3));
}

void cli_progress_restart(cli_progress *p, uint64_t now_us)
{
    p->start_us = now_us;
}

void cli_progress_draw(cli_progress *p, const char *what, uint64_t done, uint64_t total,
                       const char *unit)
{
    uint64_t now = tide_clock_mono_us();
    char text[384];

    if (!due(p, done, total, now)) return;
    TIDE_ASSERT(done <= total || total == 0);
    p->last_us = now;
    cli_progress_format(p, what, done, total, unit, now, text, sizeof text);
    fprintf(stderr, "\r%s\033[K", text);
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_end(cli_progress *p)
{
    if (p->drawn) {             /* invariant 3 */
        fputc('\n', stderr);
        fflush(stderr);
    }
    if (p->on) tide_log_set_sink(NULL, NULL);
    p->drawn = 0;
    p->on = 0;
}
