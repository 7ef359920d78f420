/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h: the process's log.
 *
 * One sink per process, like SQLite's SQLITE_CONFIG_LOG: by default lines go
 * to stderr as "2026-11-30T03:40:00.123Z WARN message". The level and sink
 * are set once at startup, before threads start; tide_log itself is
 * thread-safe (one write(2) per line).
 */
#ifndef TIDE_LOG_H
#define TIDE_LOG_H

enum { TIDE_LOG_DEBUG = 0, TIDE_LOG_INFO = 1, TIDE_LOG_WARN = 2, TIDE_LOG_ERROR = 3, TIDE_LOG_OFF = 4 };

typedef void (*tide_log_sink)(void *arg, int level, const char *line);

void tide_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tide_log_set_level(int level);
int  tide_log_get_level(void);
/* NULL restores the stderr sink. */
void tide_log_set_sink(tide_log_sink sink, void *arg);
/* "debug", "info", "warn", "error", "off" -> level; -1 when unknown. */
int  tide_log_level_parse(const char *name);
const char *tide_log_level_name(int level);

#endif
