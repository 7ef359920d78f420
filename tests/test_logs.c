/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_logs.c: the log as an operator's tools read it: the
 * journal's syslog priority prefix, the json format read back with jansson
 * whatever the message holds, a real tided that writes nothing but json on
 * stderr, the startup's settings lines, one per group, none cut, and its
 * archive line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "node/config.h"
#include "node/startup.h"
#include "util/log.h"

/* ---- lines a test reads back -------------------------------------------- */

#define MAX_LINES 64

typedef struct lines {
    int   n;
    int   level[MAX_LINES];
    char *text[MAX_LINES];
} lines;

static void lines_sink(void *arg, int level, const char *line)
{
    lines *l = arg;

    if (l->n >= MAX_LINES) return;
    l->level[l->n] = level;
    l->text[l->n++] = strdup(line);
}

static void lines_free(lines *l)
{
    for (int i = 0; i < l->n; i++) free(l->text[i]);
    l->n = 0;
}

/* The log back to its defaults (stderr, text, info, look at the journal
 * again), whatever a test changed. */
static void log_defaults(void)
{
    tide_log_set_sink(NULL, NULL);
    tide_log_set_format(TIDE_LOG_FORMAT_TEXT);
    tide_log_set_level(TIDE_LOG_INFO);
    tide_log_set_journal(-1);
    unsetenv("JOURNAL_STREAM");
}

static int log_reset(void **state)
{
    log_defaults();
    return th_teardown(state);
}

/* th_scratch_teardown after log_defaults. */
static int scratch_reset(void **state)
{
    log_defaults();
    return th_scratch_teardown(state);
}

/* `line` parsed as one JSON object with exactly time, level, pid and
 * message, the time RFC 3339 UTC to the millisecond, the pid ours, the
 * level `level`. Returns the object (the caller decrefs it); fails the
 * test naming `what` otherwise. */
static json_t *expect_json_line(const char *line, const char *level, const char *what)
{
    json_error_t err;
    json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &err);
    const char *t;

    if (j == NULL) fail_msg("%s: not JSON (%s at %d): %.300s", what, err.text, err.position, line);
    if (!json_is_object(j) || json_object_size(j) != 4)
        fail_msg("%s: expected an object of 4 fields, got %.300s", what, line);
    t = json_string_value(json_object_get(j, "time"));
    if (t == NULL || strlen(t) != 24 || t[4] != '-' || t[10] != 'T' || t[19] != '.' || t[23] != 'Z')
        fail_msg("%s: time is not YYYY-MM-DDTHH:MM:SS.mmmZ: %.300s", what, line);
    if (!json_is_string(json_object_get(j, "level")) || strcmp(json_string_value(json_object_get(j, "level")), level))
        fail_msg("%s: expected level \"%s\": %.300s", what, level, line);
    if (!json_is_integer(json_object_get(j, "pid")) || json_integer_value(json_object_get(j, "pid")) != getpid())
        fail_msg("%s: expected pid %d: %.300s", what, (int)getpid(), line);
    if (!json_is_string(json_object_get(j, "message"))) fail_msg("%s: no message string: %.300s", what, line);
    return j;
}

/* ---- the json escaper ------------------------------------------------------ */

static void json_escape_writes_quotes_backslashes_and_control_characters_as_escapes(void **state)
{
    char out[256];
    size_t used = 0, n;
    const char in[] = "a\"b\\c\nd\te\rf\bg\fh\x01i\x1fj\x7fk";

    (void)state;
    n = tide_log_json_escape(out, sizeof out, in, sizeof in - 1, &used);
    expect_str(out, "a\\\"b\\\\c\\nd\\te\\rf\\bg\\fh\\u0001i\\u001fj\\u007fk", "the escaped text");
    assert_int_equal(n, strlen(out));
    assert_int_equal(used, sizeof in - 1);
}

static void json_escape_keeps_utf8_and_writes_other_bytes_as_backslash_x(void **state)
{
    char out[256];
    size_t used = 0;
    /* é, €, U+1F600; then a lone 0xff, a cut sequence (e2 82 then 'x'),
     * an overlong '/' (c0 af), a surrogate (ed a0 80), above U+10FFFF (f4 90 80 80) */
    const char in[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xff|\xe2\x82x|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80";

    (void)state;
    tide_log_json_escape(out, sizeof out, in, sizeof in - 1, &used);
    expect_str(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\\\\xff|\\\\xe2\\\\x82x|\\\\xc0\\\\xaf|"
               "\\\\xed\\\\xa0\\\\x80|\\\\xf4\\\\x90\\\\x80\\\\x80", "the escaped text");
    assert_int_equal(used, sizeof in - 1);
}

/* However short the room, the text stops before an escape that does not
 * fit: never half of \u0001, of \\xff or of a UTF-8 sequence. */
static void json_escape_writes_an_escape_whole_or_not_at_all(void **state)
{
    const char in[] = "ab\x01\xe2\x82\xac\xff\"";
    /* the pieces end at these output lengths: a b \u0001 € \\xff \" */
    static const size_t ends[] = { 0, 1, 2, 8, 11, 16, 18 };
    static const size_t inputs[] = { 0, 1, 2, 3, 6, 7, 8 };

    (void)state;
    for (size_t cap = 1; cap <= 20; cap++) {
        char out[32];
        size_t used = 99, n = tide_log_json_escape(out, cap, in, sizeof in - 1, &used), k = 0;

        for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
            if (ends[i] <= cap - 1) k = i;
        if (n != ends[k] || used != inputs[k])
            fail_msg("cap %zu: expected %zu bytes for %zu of the input, got %zu for %zu (%s)", cap, ends[k],
                     inputs[k], n, used, out);
        assert_int_equal(strlen(out), n);
    }
}

/* ---- json lines -------------------------------------------------------------- */

static void json_lines_parse_with_jansson_and_give_back_every_hostile_message(void **state)
{
    static const char *const hostile[] = {
        "plain words", "a \"quoted\" word", "back\\slash and \\\"", "two\nlines\r\n and a tab\t",
        "control \x01\x02\x1b[31m red", "DEL \x7f", "{\"looks\":\"like json\"}", "</script>", "caf\xc3\xa9 \xe2\x82\xac",
    };
    lines l = { 0 };

    (void)state;
    tide_log_set_sink(lines_sink, &l);
    tide_log_set_format(TIDE_LOG_FORMAT_JSON);
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) tide_log(TIDE_LOG_WARN, "%s", hostile[i]);
    tide_log_set_sink(NULL, NULL);
    assert_int_equal(l.n, (int)(sizeof hostile / sizeof hostile[0]));
    for (int i = 0; i < l.n; i++) {
        json_t *j = expect_json_line(l.text[i], "warn", hostile[i]);
        const char *m = json_string_value(json_object_get(j, "message"));
        size_t want = strlen(hostile[i]);

        while (want > 0 && hostile[i][want - 1] == '\n') want--;   /* a trailing newline is dropped */
        if (strlen(m) != want || memcmp(m, hostile[i], want) != 0)
            fail_msg("message %d: expected it back as written, got %s", i, m);
        if (strchr(l.text[i], '\n') || strchr(l.text[i], '\x01'))
            fail_msg("line %d holds a raw newline or control character: %s", i, l.text[i]);
        json_decref(j);
    }
    lines_free(&l);
}

static void json_lines_write_bytes_that_are_not_utf8_as_backslash_x(void **state)
{
    lines l = { 0 };
    json_t *j;

    (void)state;
    tide_log_set_sink(lines_sink, &l);
    tide_log_set_format(TIDE_LOG_FORMAT_JSON);
    tide_log(TIDE_LOG_ERROR, "key \xff\xfe in %s", "/srv/\xc0\xaf");
    tide_log_set_sink(NULL, NULL);
    assert_int_equal(l.n, 1);
    j = expect_json_line(l.text[0], "error", "a message of bytes that are not UTF-8");
    expect_str(json_string_value(json_object_get(j, "message")), "key \\xff\\xfe in /srv/\\xc0\\xaf", "the message");
    json_decref(j);
    lines_free(&l);
}

/* A message of 5000 bytes is cut to the line cap and the line is still one
 * object, whichever escape falls at the cut: plain text, quotes (2 bytes
 * each), control characters (6), a multi-byte character (kept whole). */
static void a_json_line_cut_at_the_cap_is_still_valid_json_ending_in_dots(void **state)
{
    static const char fill[] = { 'x', '"', '\x01', '\xe2' };
    lines l = { 0 };
    char *msg = malloc(5001);
    int saved;

    (void)state;
    assert_non_null(msg);
    tide_log_set_sink(lines_sink, &l);
    tide_log_set_format(TIDE_LOG_FORMAT_JSON);
    for (size_t f = 0; f < sizeof fill; f++) {
        for (size_t i = 0; i < 5000; i++) msg[i] = fill[f];
        if (fill[f] == '\xe2')
            for (size_t i = 0; i + 3 <= 5000; i += 3) memcpy(msg + i, "\xe2\x82\xac", 3);
        msg[5000] = '\0';
        errno = ENOSPC;
        tide_log(TIDE_LOG_INFO, "%s", msg);
        saved = errno;
        if (saved != ENOSPC) fail_msg("errno after a cut json line: expected ENOSPC kept, got %d", saved);
    }
    tide_log_set_sink(NULL, NULL);
    assert_int_equal(l.n, (int)sizeof fill);
    for (int i = 0; i < l.n; i++) {
        size_t len = strlen(l.text[i]);
        json_t *j = expect_json_line(l.text[i], "info", "a cut line");
        const char *m = json_string_value(json_object_get(j, "message"));

        if (len > TIDE_LOG_LINE_MAX - 1) fail_msg("line %d: %zu bytes, over the cap of %d", i, len, TIDE_LOG_LINE_MAX - 1);
        if (len < TIDE_LOG_LINE_MAX - 8) fail_msg("line %d: %zu bytes, cut far below the cap", i, len);
        if (strlen(m) < 4 || strcmp(m + strlen(m) - 3, "...") != 0) fail_msg("line %d: the message does not end in ...", i);
        json_decref(j);
    }
    lines_free(&l);
    free(msg);
}

/* ---- the journal ------------------------------------------------------------ */

/* Run `fn` with fd 2 sent to a scratch file, then read the file back
 * into `out` (cap bytes). fd 2 is restored. */
static void with_stderr_in_file(const char *dir, void (*fn)(const char *path), char *out, size_t cap)
{
    char path[2200];
    int fd, saved;
    char *text;

    th_path(path, sizeof path, dir, "stderr.txt");
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    fn(path);
    dup2(saved, 2);
    close(saved);
    text = th_slurp(path);
    snprintf(out, cap, "%s", text);
    free(text);
}

/* JOURNAL_STREAM for the file at `path` (our fd 2 now), with `ino_delta`
 * added to its inode (1: another file's). */
static void set_journal_stream(const char *path, int ino_delta)
{
    struct stat st;
    char v[64];

    assert_int_equal(stat(path, &st), 0);
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + ino_delta);
    setenv("JOURNAL_STREAM", v, 1);
    tide_log_set_journal(-1);
}

static void log_four_levels(void)
{
    tide_log_set_level(TIDE_LOG_DEBUG);
    tide_log(TIDE_LOG_ERROR, "an error");
    tide_log(TIDE_LOG_WARN, "a warning");
    tide_log(TIDE_LOG_INFO, "some news");
    tide_log(TIDE_LOG_DEBUG, "a detail");
}

static void journal_matching(const char *path)     { set_journal_stream(path, 0); log_four_levels(); }
static void journal_mismatched(const char *path)   { set_journal_stream(path, 1); log_four_levels(); }
static void journal_matching_json(const char *path)
{
    set_journal_stream(path, 0);
    tide_log_set_format(TIDE_LOG_FORMAT_JSON);
    tide_log(TIDE_LOG_WARN, "a \"warning\"");
}

static void stderr_lines_carry_the_syslog_priority_when_journal_stream_names_stderr(void **state)
{
    th_scratch *s = *state;
    char out[4096];

    with_stderr_in_file(s->base, journal_matching, out, sizeof out);
    expect_str(out, "<3>ERROR an error\n<4>WARN a warning\n<6>INFO some news\n<7>DEBUG a detail\n",
               "the journal's lines: the priority prefix, no time");
    assert_int_equal(tide_log_journal(), 1);
}

static void a_journal_stream_of_another_file_gives_no_prefix(void **state)
{
    th_scratch *s = *state;
    char out[4096];

    with_stderr_in_file(s->base, journal_mismatched, out, sizeof out);
    if (strchr(out, '<') != NULL) fail_msg("a mismatched JOURNAL_STREAM gave a prefix: %s", out);
    if (th_count(out, "Z ERROR an error\n") != 1 || th_count(out, "Z DEBUG a detail\n") != 1 || out[0] != '2')
        fail_msg("expected the plain timed lines, got: %s", out);
    assert_int_equal(tide_log_journal(), 0);
}

static void a_json_line_to_the_journal_is_the_prefix_then_the_object(void **state)
{
    th_scratch *s = *state;
    char out[4096];
    json_t *j;

    with_stderr_in_file(s->base, journal_matching_json, out, sizeof out);
    if (strncmp(out, "<4>{", 4) != 0 || out[strlen(out) - 1] != '\n')
        fail_msg("expected '<4>{...}\\n', got: %s", out);
    out[strlen(out) - 1] = '\0';
    j = expect_json_line(out + 3, "warn", "the object after the prefix");
    expect_str(json_string_value(json_object_get(j, "message")), "a \"warning\"", "the message");
    json_decref(j);
}

static void journal_stream_matches_only_the_file_on_the_descriptor(void **state)
{
    th_scratch *s = *state;
    char path[2200], v[80];
    struct stat st;
    int fd, p[2];

    th_path(path, sizeof path, s->base, "f");
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(pipe(p), 0);
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    assert_int_equal(tide_log_journal_matches(v, fd), 1);
    assert_int_equal(tide_log_journal_matches(v, p[1]), 0);     /* another file */
    close(p[0]);
    close(p[1]);
    assert_int_equal(tide_log_journal_matches(NULL, fd), 0);
    assert_int_equal(tide_log_journal_matches("", fd), 0);
    assert_int_equal(tide_log_journal_matches("12", fd), 0);
    assert_int_equal(tide_log_journal_matches(":12", fd), 0);
    snprintf(v, sizeof v, "%llu:%llux", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    assert_int_equal(tide_log_journal_matches(v, fd), 0);        /* trailing text */
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    close(fd);
    assert_int_equal(tide_log_journal_matches(v, fd), 0);        /* closed */
}

static void log_format_parse_knows_text_and_json(void **state)
{
    (void)state;
    assert_int_equal(tide_log_format_parse("text"), TIDE_LOG_FORMAT_TEXT);
    assert_int_equal(tide_log_format_parse("JSON"), TIDE_LOG_FORMAT_JSON);
    assert_int_equal(tide_log_format_parse("xml"), -1);
    assert_int_equal(tide_log_format_parse(NULL), -1);
    expect_str(tide_log_format_name(TIDE_LOG_FORMAT_JSON), "json", "name of json");
    tide_log_set_format(42);                                     /* ignored */
    assert_int_equal(tide_log_get_format(), TIDE_LOG_FORMAT_TEXT);
}

/* ---- a real tided ------------------------------------------------------------- */

static int free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, len) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* Every line of `text` one json object (expect_json_line, any level);
 * returns how many lines. */
static int expect_only_json_lines(char *text, pid_t pid, const char *what)
{
    int n = 0;

    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), n++) {
        json_error_t err;
        json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &err);
        if (j == NULL || json_object_size(j) != 4 || !json_is_string(json_object_get(j, "level"))
            || !json_is_string(json_object_get(j, "message")) || !json_is_string(json_object_get(j, "time"))
            || (pid > 0 && json_integer_value(json_object_get(j, "pid")) != pid))
            fail_msg("%s: line %d is not one of tided's json objects: %.400s", what, n + 1, line);
        json_decref(j);
    }
    return n;
}

static void tided_with_log_format_json_writes_only_json_lines_from_start_to_shutdown(void **state)
{
    th_scratch *s = *state;
    char cmd[16384], cfg[2200], err[2200], pidf[2200], *out = NULL, *text;
    int port = free_port(), rc, n;
    pid_t pid;

    assert_true(port > 0);
    th_path(cfg, sizeof cfg, s->base, "tide.cfg");
    th_path(err, sizeof err, s->base, "stderr.json");
    th_path(pidf, sizeof pidf, s->base, "pid");
    /* a skipped section and a rippled key: the file's own info lines, logged before
     * the file's settings are in force, come in json too */
    th_put_file(s->base, "tide.cfg", "[server]\nport_rpc\n[node_db]\ntype=NuDB\nearliest_seq=32570\n");
    snprintf(cmd, sizeof cmd,
             "'%s/tided' --log-format json --config '%s' --data-dir '%s' --listen 127.0.0.1:%d --http-threads 1 "
             "2>'%s' & pid=$!; echo $pid >'%s'; i=0; "
             "while [ $i -lt 1000 ] && ! grep -qs 'listening on' '%s'; do sleep 0.02; i=$((i+1)); done; "
             "kill -TERM $pid; wait $pid; echo $?",
             th_bin_dir(), cfg, s->dir, port, err, pidf, err);
    rc = th_run(cmd, &out);
    assert_int_equal(rc, 0);
    if (atoi(out) != 0) fail_msg("tided exited %d after SIGTERM; its stderr: %s", atoi(out), th_slurp(err));
    free(out);
    text = th_slurp(pidf);
    pid = (pid_t)atoi(text);
    free(text);
    text = th_slurp(err);
    if (strstr(text, "listening on") == NULL || strstr(text, "\"message\":\"shutdown complete\"") == NULL
        || strstr(text, "section [server] is not used") == NULL || strstr(text, "\"message\":\"settings [node]: ") == NULL)
        fail_msg("expected the file's info line, the settings, listening and shutdown complete, got: %s", text);
    n = expect_only_json_lines(text, pid, "tided's stderr");
    if (n < 8) fail_msg("expected at least 8 lines from startup to shutdown, got %d", n);
    free(text);
}

static void tided_with_log_format_json_reports_a_bad_setting_as_a_json_error_and_exits_2(void **state)
{
    th_scratch *s = *state;
    char cmd[8192], err[2200], *out = NULL, *text;
    int rc;

    th_path(err, sizeof err, s->base, "stderr.json");
    snprintf(cmd, sizeof cmd, "TIDE_LOG_FORMAT=json '%s/tided' --data-dir '%s' --sweep-interval 9 2>'%s'; echo $?",
             th_bin_dir(), s->dir, err);
    rc = th_run(cmd, &out);
    assert_int_equal(rc, 0);
    expect_str(out, "2\n", "tided's exit status");
    free(out);
    text = th_slurp(err);
    if (strstr(text, "\"level\":\"error\"") == NULL || strstr(text, "--sweep-interval=9: 9 is outside 10..600") == NULL)
        fail_msg("expected a json error naming the flag, got: %s", text);
    assert_int_equal(expect_only_json_lines(text, 0, "the error"), 1);
    free(text);
    if (th_exists(s->dir)) fail_msg("a tided refused at its settings made %s", s->dir);
}

/* `command` run by the shell with its stderr appended to an empty file
 * of `dir` and JOURNAL_STREAM naming that file (DEV:INODE), as systemd
 * sets it for a stderr that is the journal. Returns its exit status;
 * *err_text gets its stderr (the caller frees it). */
static int run_under_journal(const char *dir, const char *command, char **err_text)
{
    char path[2200], cmd[8192], *out = NULL;
    struct stat st;
    int fd, status;

    th_path(path, sizeof path, dir, "stderr.txt");
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "JOURNAL_STREAM=%llu:%llu %s 2>>'%s'; echo $?", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino, command, path);
    assert_int_equal(th_run(cmd, &out), 0);
    status = atoi(out);
    free(out);
    *err_text = th_slurp(path);
    return status;
}

/* Every line of `text` begins with `prefix`; returns how many lines. */
static int expect_every_line_begins(const char *text, const char *prefix, const char *what)
{
    int n = 0;

    for (const char *p = text; *p; n++) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, prefix, strlen(prefix)) != 0)
            fail_msg("%s: line %d does not begin with %s: %.300s", what, n + 1, prefix, p);
        if (nl == NULL) break;
        p = nl + 1;
    }
    return n;
}

/* Under systemd (JOURNAL_STREAM naming tided's stderr) the error that
 * stops tided at its settings is filed at "err": every line of it, the
 * "Run 'tided --help'" hint and --check-config's verdict included, begins
 * with the journal's <3>, in text as in json. */
static void tided_under_the_journal_reports_a_bad_setting_at_priority_err(void **state)
{
    static const char *const modes[] = { "", "--check-config", "--log-format json" };
    th_scratch *s = *state;
    char cmd[8192], *text;

    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        snprintf(cmd, sizeof cmd, "'%s/tided' %s --data-dir '%s' --sweep-interval 9", th_bin_dir(), modes[m], s->dir);
        assert_int_equal(run_under_journal(s->base, cmd, &text), 2);
        expect_contains(text, "--sweep-interval=9: 9 is outside 10..600", "the error");
        if (m == 0) expect_contains(text, "<3>tided: --sweep-interval=9", "the error in text");
        if (m == 0) expect_contains(text, "<3>Run 'tided --help' for the options.\n", "the hint");
        if (m == 1) expect_contains(text, "<3>tided: --check-config: the settings are not valid", "the verdict");
        if (m == 2) expect_contains(text, "<3>{", "the error in json");
        if (expect_every_line_begins(text, "<3>", modes[m]) < (m == 2 ? 1 : 2))
            fail_msg("%s: expected the error and its hint or verdict, got: %s", modes[m], text);
        free(text);
        if (th_exists(s->dir)) fail_msg("a tided refused at its settings made %s", s->dir);
    }
}

/* tide takes --log-format and TIDE_LOG_FORMAT as tided does; a bad one is
 * a usage error (exit 2) for the option and a warning for the variable. */
static void tide_refuses_a_log_format_it_does_not_know(void **state)
{
    char cmd[4096], *out = NULL;
    int rc;

    (void)state;
    rc = th_run_tide("--log-format xml help", 1, &out);
    assert_int_equal(rc, 2);
    expect_contains(out, "--log-format 'xml' is not text or json", "the option's error");
    free(out);
    /* the option overrides the variable, which is then not read: no warning */
    snprintf(cmd, sizeof cmd, "TIDE_LOG_FORMAT=yaml TIDE_LOG_LEVEL=loud '%s/tide' --log-format json "
             "--log-level info help 2>&1 >/dev/null; echo $?; "
             "TIDE_LOG_FORMAT=yaml '%s/tide' help 2>&1 >/dev/null", th_bin_dir(), th_bin_dir());
    rc = th_run(cmd, &out);
    assert_int_equal(rc, 0);
    if (strncmp(out, "0\n", 2) != 0) fail_msg("expected no warning when the options override, got: %s", out);
    expect_contains(out, "0\ntide: TIDE_LOG_FORMAT='yaml' is not text or json; using text", "the variable's warning");
    free(out);
}

/* tide run by a systemd unit (a timer's `tide verify`): its errors and
 * warnings carry the journal's prefix on every line, so that journald
 * files them at err and warning, not at info. */
static void tide_under_the_journal_prefixes_its_errors(void **state)
{
    static const struct { const char *args, *want; } cases[] = {
        { "--log-format xml help", "<3>tide: --log-format 'xml' is not text or json\n<3>Try 'tide --help'.\n" },
        { "nosuchverb", "<3>tide: 'nosuchverb' is not a verb (" },
        { "info", "<3>tide info: " },                                 /* cli_usage: no path */
        { "info /nonexistent/tide-store", "<3>tide info: " },         /* cli_fail */
    };
    th_scratch *s = *state;
    char cmd[8192], *text;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "TIDE_LOG_LEVEL=bad '%s/tide' %s >/dev/null", th_bin_dir(), cases[i].args);
        if (run_under_journal(s->base, cmd, &text) == 0) fail_msg("tide %s: expected a failure", cases[i].args);
        expect_contains(text, cases[i].want, cases[i].args);
        if (i > 0) expect_contains(text, "<4>tide: TIDE_LOG_LEVEL='bad' is not", "the variable's warning");
        for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
            if (p[0] != '<' || (p[1] != '3' && p[1] != '4') || p[2] != '>')
                fail_msg("tide %s: a line without the journal's prefix: %s", cases[i].args, text);
            if (strchr(p, '\n') == NULL) break;
        }
        free(text);
    }
}

/* ---- the settings lines ---------------------------------------------------------- */

/* The settings lines of `l`: each within the cap and not cut, and every
 * setting named in exactly one of them, under its own group. */
static int expect_settings_lines(const lines *l)
{
    int count[TIDE_CFG_COUNT] = { 0 }, n = 0;

    for (int i = 0; i < l->n; i++) {
        const char *t = l->text[i], *body = strstr(t, " settings [");
        char group[32] = "";

        if (body == NULL) continue;
        n++;
        if (strlen(t) > TIDE_LOG_LINE_MAX - 1 || strcmp(t + strlen(t) - 3, "...") == 0)
            fail_msg("settings line %d is cut (%zu bytes): %.200s...", i, strlen(t), t);
        sscanf(body, " settings [%31[a-z_]]", group);
        for (int id = 0; id < TIDE_CFG_COUNT; id++) {
            char key[64];
            int here;

            snprintf(key, sizeof key, " %s=", tide_config_name(id));   /* after ": " or " " */
            here = (int)th_count(body, key);
            if (here && strcmp(group, tide_config_group_name(tide_config_group(id))) != 0)
                fail_msg("%s is in the line of [%s], not of its group [%s]", tide_config_name(id), group,
                         tide_config_group_name(tide_config_group(id)));
            count[id] += here;
        }
    }
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (count[id] != 1) fail_msg("%s appears %d times in the settings lines", tide_config_name(id), count[id]);
    return n;
}

static void load_for_log(tide_config *c, const char *data_dir)
{
    char *argv[] = { "tided", "--data-dir", (char *)data_dir, "--listen", "127.0.0.1:1", NULL };

    tide_config_defaults(c);
    expect_rc(tide_config_apply_args(c, 5, argv), 0, "the flags");
    expect_rc(tide_config_finish(c), 0, "finish");
}

static void the_settings_are_one_line_per_group_none_cut_each_setting_once(void **state)
{
    th_scratch *s = *state;
    static tide_config c;
    lines l = { 0 };

    load_for_log(&c, s->dir);
    tide_log_set_sink(lines_sink, &l);
    tide_startup_log(&c);
    tide_log_set_sink(NULL, NULL);
    assert_int_equal(expect_settings_lines(&l), TIDE_CFG_GROUP_COUNT);
    lines_free(&l);
}

/* The startup log's archive lines for tided's flags `extra` (after
 * --data-dir and --listen): into `l`, the settings read by the flags. */
static void archive_lines(const char *dir, char **extra, int nextra, lines *l)
{
    static tide_config c;
    char *argv[16] = { "tided", "--data-dir", (char *)dir, "--listen", "127.0.0.1:1" };

    assert_true(nextra <= 10);
    for (int i = 0; i < nextra; i++) argv[5 + i] = extra[i];
    tide_config_defaults(&c);
    expect_rc(tide_config_apply_args(&c, 5 + nextra, argv), 0, "the flags");
    expect_rc(tide_config_finish(&c), 0, "finish");
    tide_log_set_sink(lines_sink, l);
    tide_startup_log(&c);
    tide_log_set_sink(NULL, NULL);
}

/* The one line of `l` that begins its message with "archive: rados ",
 * or NULL when there is none; two fail the test. */
static const char *archive_line(const lines *l)
{
    const char *found = NULL;

    for (int i = 0; i < l->n; i++) {
        if (strstr(l->text[i], " archive: rados ") == NULL) continue;
        if (found) fail_msg("two archive lines: %s\n%s", found, l->text[i]);
        if (l->level[i] != TIDE_LOG_INFO) fail_msg("the archive line is not at info: %s", l->text[i]);
        found = l->text[i];
    }
    return found;
}

/* With archive=rados one line says where the archive is and how a
 * PUT ?sync=1 is acknowledged, for each archive_sync and for a replica;
 * with archive=off there is none (the settings line names it off). */
static void the_archive_gets_one_line_saying_where_it_is_and_how_a_sync_answers(void **state)
{
    th_scratch *s = *state;
    lines l = { 0 };
    char *local[] = { "--online-delete", "100", "--archive", "rados", "--archive-conf", "/etc/ceph/c1.conf",
                      "--archive-prefix", "node1", "--archive-pool", "tidepool" };
    char *archive[] = { "--online-delete", "100", "--archive", "rados", "--archive-prefix", "node1",
                        "--archive-sync", "archive", "--archive-timeout", "7" };
    char *replica[] = { "--archive", "rados", "--archive-prefix", "node1", "--archive-mode", "replica" };
    const char *t;

    archive_lines(s->dir, local, 10, &l);
    t = archive_line(&l);
    if (t == NULL) fail_msg("archive=rados: no archive line");
    expect_contains(t, "archive: rados pool tidepool, prefix node1 (primary), conf /etc/ceph/c1.conf, user admin; "
                    "a PUT ?sync=1 answers after the local commit, the archive follows (archive_sync=local;",
                    "archive_sync=local");
    lines_free(&l);

    archive_lines(s->dir, archive, 10, &l);
    t = archive_line(&l);
    if (t == NULL) fail_msg("archive_sync=archive: no archive line");
    expect_contains(t, "archive: rados pool tide, prefix node1 (primary), conf /etc/ceph/ceph.conf, user admin; "
                    "a PUT ?sync=1 answers after its bytes are in RADOS too (archive_sync=archive; 503 "
                    "archive_unavailable when they are not within archive_timeout=7 s", "archive_sync=archive");
    lines_free(&l);

    archive_lines(s->dir, replica, 6, &l);
    t = archive_line(&l);
    if (t == NULL) fail_msg("a replica: no archive line");
    expect_contains(t, "prefix node1 (replica)", "the mode");
    expect_contains(t, "takes no writes (a PUT answers 403 read_only_replica)", "a replica's writes");
    lines_free(&l);

    archive_lines(s->dir, NULL, 0, &l);
    if (archive_line(&l)) fail_msg("archive=off: an archive line: %s", archive_line(&l));
    lines_free(&l);
}

/* A data_dir of 1640 bytes leaves no room for the rest of [node] in one
 * line: the group goes on in a second ("(continued)"); one of 4000 bytes
 * cannot fit in any line and is shown by its first 64 bytes and length. */
static void a_group_too_long_for_one_line_goes_on_in_the_next_and_nothing_is_cut(void **state)
{
    th_scratch *s = *state;
    static tide_config c;
    static char dir[4100];
    lines l = { 0 };
    size_t sizes[] = { 1640, 4000 };

    for (size_t k = 0; k < 2; k++) {
        memset(dir, 'd', sizes[k]);
        memcpy(dir, s->base, strlen(s->base));
        dir[strlen(s->base)] = '/';
        dir[sizes[k]] = '\0';
        load_for_log(&c, dir);
        tide_log_set_format(k == 0 ? TIDE_LOG_FORMAT_TEXT : TIDE_LOG_FORMAT_JSON);
        tide_log_set_sink(lines_sink, &l);
        tide_startup_log(&c);
        tide_log_set_sink(NULL, NULL);
        tide_log_set_format(TIDE_LOG_FORMAT_TEXT);
        if (k == 0) {
            assert_int_equal(expect_settings_lines(&l), TIDE_CFG_GROUP_COUNT + 1);
            int found = 0;
            for (int i = 0; i < l.n; i++) found += strstr(l.text[i], "settings [node] (continued): ") != NULL;
            assert_int_equal(found, 1);
        } else {
            char want[64];
            snprintf(want, sizeof want, "...(%zu bytes)(flag --data-dir)", sizes[k]);
            int found = 0;
            for (int i = 0; i < l.n; i++) {
                if (strstr(l.text[i], "settings [") == NULL) continue;
                json_t *j = expect_json_line(l.text[i], "info", "a settings line in json");
                const char *m = json_string_value(json_object_get(j, "message"));
                if (strcmp(m + strlen(m) - 3, "...") == 0) fail_msg("a json settings line was cut: %s", m);
                found += strstr(m, want) != NULL;
                json_decref(j);
            }
            assert_int_equal(found, 1);
        }
        lines_free(&l);
    }
}

/* The json settings lines of `l` (raw lines): each within the cap as
 * written, one object whose message does not end in "..."; their messages
 * (" " + message, so that expect_settings_lines finds " settings [")
 * into `m`. */
static void json_settings_messages(const lines *l, lines *m)
{
    for (int i = 0; i < l->n; i++) {
        const char *t = l->text[i], *msg;
        json_t *j;
        char *one;

        if (strstr(t, "\"message\":\"settings [") == NULL) continue;
        if (strlen(t) > TIDE_LOG_LINE_MAX - 1) fail_msg("a json settings line of %zu bytes", strlen(t));
        j = expect_json_line(t, "info", "a json settings line");
        msg = json_string_value(json_object_get(j, "message"));
        if (strlen(msg) >= 3 && strcmp(msg + strlen(msg) - 3, "...") == 0)
            fail_msg("a json settings line was cut: %.300s", t);
        one = malloc(strlen(msg) + 2);
        assert_non_null(one);
        sprintf(one, " %s", msg);
        m->level[m->n] = l->level[i];
        m->text[m->n++] = one;
        json_decref(j);
    }
}

/* In json the budget counts the escaped bytes: a data_dir of quotes (2
 * bytes each written) or of bytes that are not UTF-8 (5 each, "\\xff")
 * that fits raw but not escaped goes on in a continued line, or shows its
 * first 64 bytes and length, and no line is cut (before: a 1608-byte
 * data_dir of '"' gave a 2046-byte line that lost its value's end and
 * source). */
static void json_settings_lines_count_escapes_and_none_is_cut(void **state)
{
    static const struct { char fill; size_t size; int whole; } cases[] = {
        { '"', 800, 1 }, { '\\', 820, 1 }, { '\xff', 320, 1 }, { '\x01', 270, 1 },
        { '"', 1608, 0 }, { '\xff', 1000, 0 }, { '\x01', 1500, 0 },
    };
    th_scratch *s = *state;
    static tide_config c;
    static char dir[2100];

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lines l = { 0 }, m = { 0 };
        size_t base = strlen(s->base) + 1;
        char want[80];
        int found = 0;

        memcpy(dir, s->base, base - 1);
        dir[base - 1] = '/';
        memset(dir + base, cases[k].fill, cases[k].size - base);
        dir[cases[k].size] = '\0';
        load_for_log(&c, dir);
        tide_log_set_format(TIDE_LOG_FORMAT_JSON);
        tide_log_set_sink(lines_sink, &l);
        tide_startup_log(&c);
        tide_log_set_sink(NULL, NULL);
        tide_log_set_format(TIDE_LOG_FORMAT_TEXT);
        json_settings_messages(&l, &m);
        if (expect_settings_lines(&m) < TIDE_CFG_GROUP_COUNT)
            fail_msg("case %zu: fewer settings lines than groups", k);
        snprintf(want, sizeof want, "...(%zu bytes)(flag --data-dir)", cases[k].size);
        for (int i = 0; i < m.n; i++) {
            if (cases[k].whole && cases[k].fill != '\xff') {
                char *at = strstr(m.text[i], " data_dir=");
                found += at && strncmp(at + 10, dir, cases[k].size) == 0
                         && strncmp(at + 10 + cases[k].size, "(flag --data-dir)", 17) == 0;
            } else if (cases[k].whole) {
                found += strstr(m.text[i], " data_dir=") && th_count(m.text[i], "\\xff") == cases[k].size - base
                         && strstr(m.text[i], "(flag --data-dir)");
            } else {
                found += strstr(m.text[i], want) != NULL;
            }
        }
        if (found != 1)
            fail_msg("case %zu (%zu bytes of 0x%02x): expected data_dir %s once", k, cases[k].size,
                     (unsigned char)cases[k].fill, cases[k].whole ? "whole with its source" : want);
        lines_free(&l);
        lines_free(&m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(json_escape_writes_quotes_backslashes_and_control_characters_as_escapes, log_reset),
        cmocka_unit_test_teardown(json_escape_keeps_utf8_and_writes_other_bytes_as_backslash_x, log_reset),
        cmocka_unit_test_teardown(json_escape_writes_an_escape_whole_or_not_at_all, log_reset),
        cmocka_unit_test_teardown(json_lines_parse_with_jansson_and_give_back_every_hostile_message, log_reset),
        cmocka_unit_test_teardown(json_lines_write_bytes_that_are_not_utf8_as_backslash_x, log_reset),
        cmocka_unit_test_teardown(a_json_line_cut_at_the_cap_is_still_valid_json_ending_in_dots, log_reset),
        cmocka_unit_test_teardown(log_format_parse_knows_text_and_json, log_reset),
        cmocka_unit_test_setup_teardown(stderr_lines_carry_the_syslog_priority_when_journal_stream_names_stderr,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(a_journal_stream_of_another_file_gives_no_prefix, th_scratch_setup,
                                        scratch_reset),
        cmocka_unit_test_setup_teardown(a_json_line_to_the_journal_is_the_prefix_then_the_object, th_scratch_setup,
                                        scratch_reset),
        cmocka_unit_test_setup_teardown(journal_stream_matches_only_the_file_on_the_descriptor, th_scratch_setup,
                                        scratch_reset),
        cmocka_unit_test_setup_teardown(tided_with_log_format_json_writes_only_json_lines_from_start_to_shutdown,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(tided_with_log_format_json_reports_a_bad_setting_as_a_json_error_and_exits_2,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(tided_under_the_journal_reports_a_bad_setting_at_priority_err,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_teardown(tide_refuses_a_log_format_it_does_not_know, th_teardown),
        cmocka_unit_test_setup_teardown(tide_under_the_journal_prefixes_its_errors, th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(the_archive_gets_one_line_saying_where_it_is_and_how_a_sync_answers,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(the_settings_are_one_line_per_group_none_cut_each_setting_once,
                                        th_scratch_setup, scratch_reset),
        cmocka_unit_test_setup_teardown(json_settings_lines_count_escapes_and_none_is_cut, th_scratch_setup,
                                        scratch_reset),
        cmocka_unit_test_setup_teardown(a_group_too_long_for_one_line_goes_on_in_the_next_and_nothing_is_cut,
                                        th_scratch_setup, scratch_reset),
    };
    return th_run_group("logs", tests, NULL, NULL, th_teardown);
}
