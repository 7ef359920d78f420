/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.c: the process's log.
 *
 * A line is "<UTC time to the millisecond>Z <LEVEL> <message>", e.g.
 * "2026-11-30T03:40:00.123Z WARN nudb_block_size=5000 is not a power of two".
 * tide_log() formats the whole line into a stack buffer and hands it to the
 * sink in one call. The default sink appends "\n" and writes the line to
 * stderr with a single write(2), so lines from different threads never
 * interleave. A custom sink (tide_log_set_sink) receives the same line,
 * without the newline, plus the level as a number.
 *
 * Invariants:
 *   1. A line is at most TIDE_LOG_LINE_MAX - 1 bytes; a longer message is cut
 *      and ends in "...".
 *   2. Messages below the current level cost one atomic load and no
 *      formatting.
 *   3. tide_log() leaves errno as it found it, so a caller can log and then
 *      report errno.
 *
 * The level may be changed at any time (it is an atomic int). The sink and
 * its argument are set once at startup, before threads start, or by a test
 * that logs from one thread only.
 *
 * Never: allocate, or call the log from the sink.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

#define TIDE_LOG_LINE_MAX 2048

static int log_level = TIDE_LOG_INFO;          /* read with __atomic */
static tide_log_sink log_sink = NULL;         /* NULL: stderr */
static void *log_sink_arg = NULL;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };
static const char *const level_tags[] = { "DEBUG", "INFO", "WARN", "ERROR", "OFF" };

static void stderr_sink(const char *line, size_t len)
{
    char buf[TIDE_LOG_LINE_MAX + 1];
    size_t off = 0;
    ssize_t n;

    memcpy(buf, line, len);
    buf[len++] = '\n';
    while (off < len) {
        n = write(STDERR_FILENO, buf + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* nowhere left to report it */
        off += (size_t)n;
    }
}

void tide_log(int level, const char *fmt, ...)
{
    char line[TIDE_LOG_LINE_MAX];
    int saved = errno;
    struct timespec ts;
    struct tm tm;
    size_t used;
    va_list ap;
    int n;

    if (level < TIDE_LOG_DEBUG || level >= TIDE_LOG_OFF) goto out;
    if (level < __atomic_load_n(&log_level, __ATOMIC_RELAXED)) goto out;

    tide_clock_real_timespec(&ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L, level_tags[level]);
    used = n > 0 ? (size_t)n : 0;
    va_start(ap, fmt);
    n = vsnprintf(line + used, sizeof line - used, fmt, ap);
    va_end(ap);
    if (n < 0) {
        line[used] = '\0';
    } else if ((size_t)n >= sizeof line - used) {
        memcpy(line + sizeof line - 4, "...", 4);
    }
    used = strlen(line);
    while (used > 0 && line[used - 1] == '\n') line[--used] = '\0';

    if (log_sink) log_sink(log_sink_arg, level, line);
    else stderr_sink(line, used);
out:
    errno = saved;
}

void tide_log_set_level(int level)
{
    if (level < TIDE_LOG_DEBUG) level = TIDE_LOG_DEBUG;
    if (level > TIDE_LOG_OFF) level = TIDE_LOG_OFF;
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

int tide_log_get_level(void)
{
    return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void tide_log_set_sink(tide_log_sink sink, void *arg)
{
    log_sink = sink;
    log_sink_arg = sink ? arg : NULL;
}

int tide_log_level_parse(const char *name)
{
    int i;

    if (name == NULL) return -1;
    for (i = TIDE_LOG_DEBUG; i <= TIDE_LOG_OFF; i++)
        if (strcasecmp(name, level_names[i]) == 0) return i;
    if (strcasecmp(name, "warning") == 0) return TIDE_LOG_WARN;
    return -1;
}

const char *tide_log_level_name(int level)
{
    if (level < TIDE_LOG_DEBUG || level > TIDE_LOG_OFF) return "unknown";
    return level_names[level];
}
