/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.c: the process's log.
 *
 * A text line is "<UTC time to the millisecond>Z <LEVEL> <message>", e.g.
 * "2026-11-30T03:40:00.123Z WARN nudb_block_size=5000 is not a power of two".
 * A json line (tide_log_set_format; tided's --log-format json) is one
 * object:
 *
 *   {"time":"2026-11-30T03:40:00.123Z","level":"warn","pid":42,"message":"..."}
 *
 * The field names are the ones log shippers look for without being told:
 * "time" (Fluentd's and Vector's default time key, Go's slog, RFC 3339 in
 * UTC), "level" (Loki, Grafana, Elastic's log.level detection: debug,
 * info, warn, error), "message" (Elastic's, Vector's and journald's name
 * for the text), and "pid", which tells two tided on one host apart once
 * their lines are merged. The message goes last, so that a line cut at the
 * cap only shortens the message and still closes the object. There is no
 * "priority" field: it would repeat "level" in numbers, and the journal
 * reads the priority from the prefix below anyway.
 *
 * The journal: systemd sets JOURNAL_STREAM="DEV:INODE" for a service whose
 * stderr is connected to journald, and documents (systemd.exec(5)) that a
 * program should compare it with fstat(2) of the descriptor, since stderr
 * may have been redirected after the service started. When it matches,
 * every stderr line starts with its syslog priority as sd-daemon(3)
 * defines the prefixes: <3> error, <4> warn, <6> info, <7> debug.
 * journald strips the prefix and stores the priority, so `journalctl -p
 * warning` and the colours work. A text line then leaves out its time: the
 * journal stamps every entry when it receives it (to the microsecond, and
 * journalctl prints it), so a second time in the message would only repeat
 * it and push the text right. A json line keeps "time": a shipper reading
 * the journal's MESSAGE field gets the whole object, time included.
 *
 * tide_log() formats the message into one stack buffer, builds the line in
 * a second one and hands it to the sink in one call. The default sink
 * appends "\n" and writes the line to stderr with a single write(2), so
 * lines from different threads never interleave. A custom sink
 * (tide_log_set_sink) receives the same line, without the newline and the
 * journal's prefix, plus the level as a number.
 *
 * Invariants:
 *   1. A line is at most TIDE_LOG_LINE_MAX - 1 bytes, the journal's prefix
 *      included; a longer message is cut and ends in "...". A cut json line
 *      is still one valid object: an escape is written whole or not at all,
 *      and the closing "} always fits.
 *   2. Messages below the current level cost one atomic load and no
 *      formatting.
 *   3. tide_log() leaves errno as it found it, so a caller can log and then
 *      report errno.
 *   4. A json line is valid JSON and valid UTF-8 whatever the message holds
 *      (quotes, backslashes, control characters, bytes that are not UTF-8).
 *
 * The level and the format may be changed at any time (atomic ints); the
 * journal's look happens once, at the first line to stderr (an atomic
 * int: two threads racing to it compute the same answer). The sink and its
 * argument are set once at startup, before threads start, or by a test
 * that logs from one thread only.
 *
 * Never: allocate, or call the log from the sink.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/utf8.h"

static int log_level = TIDE_LOG_INFO;          /* read with __atomic */
static int log_format = TIDE_LOG_FORMAT_TEXT;  /* read with __atomic */
static int log_journal = -1;                   /* -1: not looked yet; __atomic */
static tide_log_sink log_sink = NULL;         /* NULL: stderr */
static void *log_sink_arg = NULL;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };
static const char *const level_tags[] = { "DEBUG", "INFO", "WARN", "ERROR", "OFF" };
/* sd-daemon(3)'s SD_DEBUG, SD_INFO, SD_WARNING, SD_ERR */
static const char *const level_prefixes[] = { "<7>", "<6>", "<4>", "<3>" };

static void stderr_write(const char *buf, size_t len)
{
    size_t off = 0;
    ssize_t n;

    while (off < len) {
        n = write(STDERR_FILENO, buf + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* nowhere left to report it */
        off += (size_t)n;
    }
}

/* ---- json ------------------------------------------------------------- */

size_t tide_log_json_escape(char *out, size_t cap, const char *in, size_t len, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)in;
    size_t i = 0, o = 0;

    while (i < len && cap > 0) {
        char esc[8];
        const char *piece = esc;
        size_t n = 0, take = 1;
        unsigned char c = u[i];

        if (c == '"' || c == '\\') esc[0] = '\\', esc[1] = (char)c, n = 2;
        else if (c == '\n') memcpy(esc, "\\n", 2), n = 2;
        else if (c == '\t') memcpy(esc, "\\t", 2), n = 2;
        else if (c == '\r') memcpy(esc, "\\r", 2), n = 2;
        else if (c == '\b') memcpy(esc, "\\b", 2), n = 2;
        else if (c == '\f') memcpy(esc, "\\f", 2), n = 2;
        else if (c < 0x20 || c == 0x7f) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4], esc[5] = hex[c & 15], n = 6;
        } else if ((take = tide_utf8_seq(u + i, len - i)) != 0) {
            piece = in + i, n = take;            /* ASCII, or a whole sequence */
        } else {                                 /* not UTF-8: the text \xNN */
            memcpy(esc, "\\\\x", 3);
            esc[3] = hex[c >> 4], esc[4] = hex[c & 15], n = 5, take = 1;
        }
        if (o + n > cap - 1) break;              /* whole or not at all */
        memcpy(out + o, piece, n);
        o += n;
        i += take;
    }
    if (cap > 0) out[o] = '\0';
    if (used) *used = i;
    return o;
}

/* The json line of `msg` (`mlen` bytes; `cut` when it was already cut)
 * after `head` bytes already in `line` (the journal's prefix). */
static size_t json_line(char *line, size_t cap, size_t head, int level, const struct tm *tm, long ms,
                        const char *msg, size_t mlen, int cut)
{
    size_t used = head, room, done;
    int n;

    n = snprintf(line + used, cap - used, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\","
                 "\"pid\":%ld,\"message\":\"", tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour,
                 tm->tm_min, tm->tm_sec, ms, level_names[level], (long)getpid());
    used += n > 0 ? (size_t)n : 0;
    room = cap - used - 2;                       /* the closing "} */
    n = (int)tide_log_json_escape(line + used, room, msg, mlen, &done);
    if (done < mlen || cut) {                    /* cut: again, with room for "..." */
        n = (int)tide_log_json_escape(line + used, room - 3, msg, mlen, &done);
        memcpy(line + used + n, "...", 3);
        n += 3;
    }
    used += (size_t)n;
    memcpy(line + used, "\"}", 3);
    return used + 2;
}

/* The text line: "<time>Z LEVEL message", the time left out for the
 * journal. */
static size_t text_line(char *line, size_t cap, size_t head, int level, int journal, const struct tm *tm, long ms,
                        const char *msg, size_t mlen, int cut)
{
    size_t used = head;
    int n;

    if (journal)
        n = snprintf(line + used, cap - used, "%s ", level_tags[level]);
    else
        n = snprintf(line + used, cap - used, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ", tm->tm_year + 1900,
                     tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec, ms, level_tags[level]);
    used += n > 0 ? (size_t)n : 0;
    if (mlen > cap - 1 - used) mlen = cap - 1 - used, cut = 1;
    memcpy(line + used, msg, mlen);
    used += mlen;
    if (cut && mlen >= 3) memcpy(line + used - 3, "...", 3);
    line[used] = '\0';
    return used;
}

void tide_log(int level, const char *fmt, ...)
{
    char msg[TIDE_LOG_LINE_MAX], line[TIDE_LOG_LINE_MAX + 1];   /* + the newline */
    int saved = errno, journal = 0, cut = 0;
    struct timespec ts;
    struct tm tm;
    size_t mlen, head = 0, len;
    va_list ap;
    int n;

    if (level < TIDE_LOG_DEBUG || level >= TIDE_LOG_OFF) goto out;
    if (level < __atomic_load_n(&log_level, __ATOMIC_RELAXED)) goto out;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) msg[0] = '\0';
    mlen = strlen(msg);
    if (n > 0 && (size_t)n >= sizeof msg) cut = 1;
    while (mlen > 0 && msg[mlen - 1] == '\n') msg[--mlen] = '\0';

    tide_clock_real_timespec(&ts);
    gmtime_r(&ts.tv_sec, &tm);
    if (log_sink == NULL && tide_log_journal()) {
        journal = 1;
        memcpy(line, level_prefixes[level], 3);
        head = 3;
    }
    if (__atomic_load_n(&log_format, __ATOMIC_RELAXED) == TIDE_LOG_FORMAT_JSON)
        len = json_line(line, TIDE_LOG_LINE_MAX, head, level, &tm, ts.tv_nsec / 1000000L, msg, mlen, cut);
    else
        len = text_line(line, TIDE_LOG_LINE_MAX, head, level, journal, &tm, ts.tv_nsec / 1000000L, msg, mlen, cut);

    if (log_sink) {
        log_sink(log_sink_arg, level, line);
    } else {
        line[len++] = '\n';
        stderr_write(line, len);
    }
out:
    errno = saved;
}

/* ---- settings ------------------------------------------------------------ */

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

void tide_log_set_format(int format)
{
    if (format != TIDE_LOG_FORMAT_TEXT && format != TIDE_LOG_FORMAT_JSON) return;
    __atomic_store_n(&log_format, format, __ATOMIC_RELAXED);
}

int tide_log_get_format(void)
{
    return __atomic_load_n(&log_format, __ATOMIC_RELAXED);
}

int tide_log_format_parse(const char *name)
{
    if (name == NULL) return -1;
    if (strcasecmp(name, "text") == 0) return TIDE_LOG_FORMAT_TEXT;
    if (strcasecmp(name, "json") == 0) return TIDE_LOG_FORMAT_JSON;
    return -1;
}

const char *tide_log_format_name(int format)
{
    return format == TIDE_LOG_FORMAT_TEXT ? "text" : format == TIDE_LOG_FORMAT_JSON ? "json" : "unknown";
}

/* ---- the journal ------------------------------------------------------------ */

/* The decimal number at `s`, which must end in `stop`; *end at `stop`.
 * 0 or -1 (no digit, another character, past 64 bits). */
static int parse_decimal(const char *s, char stop, unsigned long long *out, char **end)
{
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    *out = strtoull(s, end, 10);
    return errno == 0 && **end == stop ? 0 : -1;
}

int tide_log_journal_matches(const char *journal_stream, int fd)
{
    unsigned long long dev, ino;
    char *p;
    struct stat st;
    int saved = errno, rc = 0;

    if (journal_stream == NULL) goto out;
    if (parse_decimal(journal_stream, ':', &dev, &p) != 0) goto out;
    if (parse_decimal(p + 1, '\0', &ino, &p) != 0) goto out;
    if (fstat(fd, &st) != 0) goto out;
    rc = (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
out:
    errno = saved;
    return rc;
}

void tide_log_set_journal(int on)
{
    __atomic_store_n(&log_journal, on < 0 ? -1 : on != 0, __ATOMIC_RELAXED);
}

int tide_log_journal(void)
{
    int on = __atomic_load_n(&log_journal, __ATOMIC_RELAXED);

    if (on < 0) {
        on = tide_log_journal_matches(getenv("JOURNAL_STREAM"), STDERR_FILENO);
        __atomic_store_n(&log_journal, on, __ATOMIC_RELAXED);
    }
    return on;
}

const char *tide_log_prefix(int level)
{
    if (level < TIDE_LOG_DEBUG || level > TIDE_LOG_ERROR || !tide_log_journal()) return "";
    return level_prefixes[level];
}
