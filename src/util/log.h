/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h: the process's log.
 *
 * One sink per process, like SQLite's SQLITE_CONFIG_LOG: by default lines go
 * to stderr as "2026-11-30T03:40:00.123Z WARN message", or with the json
 * format as one object a line,
 * {"time":"2026-11-30T03:40:00.123Z","level":"warn","pid":42,"message":"..."}.
 * When stderr is the systemd journal (JOURNAL_STREAM names it) each line
 * starts with its syslog priority ("<4>WARN message") and a text line
 * leaves the time to the journal. The level, format and sink are set at
 * startup, before threads start (the level and format may change later:
 * they are atomic); tide_log itself is thread-safe (one write(2) per line).
 */
#ifndef TIDE_LOG_H
#define TIDE_LOG_H

#include <stddef.h>

/* The levels, tide_log_sink, tide_log_set_level, tide_log_get_level and
 * tide_log_set_sink: the public part, one definition for the library and
 * the programs that use it. */
#include "tide/log.h"

/* How a line is written (tide_log_set_format). */
enum { TIDE_LOG_FORMAT_TEXT = 0, TIDE_LOG_FORMAT_JSON = 1 };

/* The longest line, newline excluded, is TIDE_LOG_LINE_MAX - 1 bytes. */
#define TIDE_LOG_LINE_MAX 2048

void tide_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* tide_log_set_sink (tide/log.h): a sink receives the line in the format
 * set, without the newline and without the journal's priority prefix. */
/* "debug", "info", "warn", "error", "off" -> level; -1 when unknown. */
int  tide_log_level_parse(const char *name);
const char *tide_log_level_name(int level);

/* TIDE_LOG_FORMAT_TEXT or _JSON (anything else is ignored). Any time;
 * lines already being written keep the format they started with. */
void tide_log_set_format(int format);
int  tide_log_get_format(void);
/* "text", "json" (any case) -> TIDE_LOG_FORMAT_*; -1 when unknown (NULL
 * too). */
int  tide_log_format_parse(const char *name);
/* "text", "json", "unknown". */
const char *tide_log_format_name(int format);

/*
 * 1 when `journal_stream` (JOURNAL_STREAM's value, "DEV:INODE" in decimal,
 * as systemd.exec(5) sets it for a service whose stdout or stderr is the
 * journal) names the file open on `fd` (fstat's st_dev and st_ino), else 0
 * (NULL, malformed text, a closed fd, another file: stderr redirected
 * after systemd started the process). Allocates nothing; one fstat(2).
 */
int tide_log_journal_matches(const char *journal_stream, int fd);

/* Whether stderr lines carry the journal's priority prefix: 1 on, 0 off,
 * -1 (the initial state) to look at JOURNAL_STREAM and fd 2 again when the
 * next line is written (tide_log_journal_matches). The look happens once;
 * call with -1 after redirecting fd 2. */
void tide_log_set_journal(int on);
/* 1 when stderr lines carry the prefix (looking first if not yet done). */
int  tide_log_journal(void);
/* The prefix a line of `level` written to stderr by other means than
 * tide_log (a program's own error message, a progress line's sink) needs
 * so that the journal files it at its priority: "<3>" for TIDE_LOG_ERROR
 * and so on when tide_log_journal() is 1, else "" (and "" for a level
 * out of range). A static string; looks at the journal once, as above. */
const char *tide_log_prefix(int level);

/*
 * `in` (`len` bytes) as the inside of a JSON string, into `out` (`cap`
 * bytes, always NUL-terminated when cap > 0): '"' and '\\' escaped, the
 * control characters (below 0x20, and 0x7f) as \n, \t, \r, \b, \f or
 * \u00XX, well-formed UTF-8 as it is, and every byte that is not part of a
 * well-formed sequence as the text \xNN (written "\\xNN": backslash, x,
 * two lower-case hex digits), so that no JSON reader refuses the line and
 * the bytes can still be told apart. An escape is written whole or not at
 * all: when `out` is short the text stops before the first one that does
 * not fit. *used (may be NULL) gets how many bytes of `in` were written.
 * Returns the bytes written, NUL excluded. Allocates nothing.
 */
size_t tide_log_json_escape(char *out, size_t cap, const char *in, size_t len, size_t *used);

#endif
