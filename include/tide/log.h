/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tide/log.h: where the library's log lines go, for a program that uses
 * libtide.
 *
 * The library logs what a caller cannot see in a return code: a recovered
 * commit, a block size it replaced by the default, an interrupted rekey
 * cleaned up. By default a line goes to the process's stderr ("2026-11-30T
 * 03:40:00.123Z WARN message"). A program that owns its stderr (a daemon
 * with its own log, a tool whose output is parsed) sets a level below
 * which lines are dropped (TIDE_LOG_OFF: none is written) or a sink of its
 * own, which then receives every line at or above the level instead of
 * stderr.
 *
 * Threads: set the sink before the first call into the library from more
 * than one thread; the level may change at any time (it is atomic). A sink
 * is called on whichever thread logs, possibly several at once: it must be
 * thread-safe and must not call into the library.
 *
 * Never: include anything; a program reads this header alone.
 */
#ifndef TIDE_PUBLIC_LOG_H
#define TIDE_PUBLIC_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* The levels, lowest first; TIDE_LOG_OFF as a level drops every line. */
enum { TIDE_LOG_DEBUG = 0, TIDE_LOG_INFO = 1, TIDE_LOG_WARN = 2, TIDE_LOG_ERROR = 3, TIDE_LOG_OFF = 4 };

/* A sink: `level` one of TIDE_LOG_DEBUG .. TIDE_LOG_ERROR, `line` the whole
 * line as stderr would get it ("TIME LEVEL message"), NUL-terminated,
 * without the newline, valid only during the call. */
typedef void (*tide_log_sink)(void *arg, int level, const char *line);

/* Lines below `level` are dropped (default TIDE_LOG_INFO); a value below
 * TIDE_LOG_DEBUG counts as it, one above TIDE_LOG_OFF as that. Costs one
 * atomic store. */
void tide_log_set_level(int level);
/* The level set (TIDE_LOG_INFO until one is). */
int  tide_log_get_level(void);
/* Every line at or above the level goes to `sink` (called with `arg`)
 * instead of stderr; NULL restores stderr. */
void tide_log_set_sink(tide_log_sink sink, void *arg);

#ifdef __cplusplus
}
#endif

#endif
