/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_file.c: the node's config file (tided --config FILE), read into a
 * tide_config line by line; every value goes through ti_config_set_value,
 * as a flag's or a variable's does (config.c).
 *
 * The file is in XRP Ledger's INI style, so that tided can be pointed at a
 * node's own rippled.cfg:
 *
 *     # comment            ; comment too (';' only as a whole line)
 *     [node_size]
 *     medium               a bare value: the section is the setting
 *     [sweep_interval]
 *     60
 *     [node_db]
 *     type=NuDB            the only backend; any other type is an error
 *     path=/var/lib/tide   = data_dir     # a trailing comment
 *     nudb_block_size=16384
 *     online_delete_objects=1000000   Tide's online delete, in objects
 *     online_delete=2000   rippled's, in ledgers: never read (finish
 *                          refuses it while Tide's is given nowhere)
 *     earliest_seq=32570   rippled's: an info line, ignored
 *     [node]
 *     cache_budget=1GiB    every setting by its name (except the env-only ones)
 *     [http]
 *     metrics_token_file=/etc/tide/metrics.token    the token files
 *     [memory]             a group's name (the startup log's "settings
 *     memory_limit=1GiB    [memory]: ..."): the settings of that group
 *     [server]             any other section: one info line, then skipped
 *
 * The file is read whole before a line is parsed: opened without blocking
 * (O_NONBLOCK, so a FIFO cannot hold the open), checked on the opened
 * descriptor to be a regular file (a symlink to one is fine; a FIFO, a
 * device such as /dev/zero, a directory or a socket is refused by name,
 * nothing read), and refused when larger than TIDE_CONFIG_FILE_MAX (1
 * MiB); the read stops one byte past the cap, so a file that grows while
 * it is read is refused too. The same function serves the start,
 * --check-config and SIGHUP, which runs on the main thread: nothing here
 * may wait on the file or read it without bound.
 *
 * A '#' anywhere starts a comment, as rippled reads the key=value lines of
 * its own file; "\#" is a literal '#'. A '#' glued to the text before it
 * ("path=/srv/a#1") warns, since it may have been meant as part of a value.
 * A UTF-8 byte-order mark before the first line is skipped; a UTF-16 file
 * is refused by name. Blank lines are skipped; spaces around keys and
 * values are trimmed; a CR before the LF is dropped.
 *
 * A setting is written in its own section (its row's: [node] for most)
 * or in the section named after its group (tide_config_group_name: node,
 * http, cache, memory, node_db, archive), the label the startup log and
 * --check-config print it under, so that what the log shows can be
 * written back as it reads: [memory] memory_limit=1GiB. Sections other
 * than those and [node_size] and [sweep_interval] are another program's
 * (rippled's [server], [port_*], [ips], ...): each logs "config FILE:LINE:
 * section [server] is not used by tide; skipped" and its lines are not
 * read as settings, but a key=value line there whose key is one of Tide's
 * is an error naming where it belongs (rippled's sections hold none of
 * them; dropping it would pass a setting never applied). A section one
 * edit away from one of Tide's ([nodes], [node-db], [NODE_SIZE]) is an
 * error too: skipping a typo would drop its settings in silence. A key
 * that is no setting's is answered with the nearest one
 * (ti_config_nearest_key: "did you mean cache_budget?"). In [node_db], the online delete
 * settings are Tide's (online_delete_objects, generations, ...: config.c's
 * table, by tide_config_file_key). rippled's keys that Tide reads there
 * mean what they mean to rippled (type, path, nudb_block_size,
 * advisory_delete, back_off_milliseconds, recovery_wait_seconds). Two of
 * rippled's keys are named like a Tide setting but count something else
 * (online_delete: ledgers, not objects; delete_batch: SQL records, not
 * keys: ti_config_rippled_keys): the file records them for
 * tide_config_finish, never as the setting's value, and Tide's own key for
 * each carries its unit. rippled's other keys (earliest_seq,
 * age_threshold_seconds, ...) log an info line, any other unknown key a
 * warning, and a key one edit from a key Tide reads there is an error
 * ("did you mean path?"): [node_db] is shared with rippled, whose keys are
 * not Tide's to refuse, but a misspelt path would make tided open (and
 * create) a store somewhere else. [node] is Tide's alone, so an unknown
 * key there is an error.
 *
 * Invariants:
 *   1. Nothing is skipped in silence: a line is a comment or blank, or is
 *      parsed, or lies in another program's section, which was named once
 *      in the log as skipped, and holds none of Tide's keys.
 *   2. Within one file a setting is set once; a second line for it is an
 *      error naming both lines.
 *   3. A failed load leaves the settings of the lines before the failing
 *      one set, and returns TIDE_EINVAL (or the I/O error) naming
 *      FILE:LINE; tided then stops, so nothing half-read is served.
 *   4. At most TIDE_CONFIG_FILE_MAX + 1 bytes are read, and only from a
 *      regular file; a file refused for its type or size sets nothing.
 *
 * Never: refuse a key of rippled's own in [node_db] that Tide does not
 * read; read one of rippled's keys as Tide's when it counts something
 * else; accept a key one edit from one of Tide's (a typo would drop its
 * setting in silence); block on the config file's open or read it to its
 * end when that end may not come.
 */
#include "io/io.h"
#include "node/config_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/err.h"
#include "util/log.h"

/* The section named after setting `id`'s group, the startup log's
 * "settings [memory]: ...": its key may be written there too. */
static const char *group_section(int id)
{
    return tide_config_group_name(ti_config_settings[id].group);
}

/* The setting written as [section] key (key "" for a bare value), or -1:
 * in its own section, or in its group's. */
static int lookup_key(const char *section, const char *key)
{
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const ti_config_setting *st = &ti_config_settings[id];
        if (st->section && key[0] != '\0' && strcmp(key, tide_config_file_key(id)) == 0
            && (strcmp(section, st->section) == 0 || strcmp(section, group_section(id)) == 0))
            return id;
        if (st->alt_section && strcmp(section, st->alt_section) == 0 && strcmp(key, st->alt_key) == 0)
            return id;
    }
    return -1;
}

/* The setting whose file key is `key` in whichever section, or -1. */
static int setting_of_key(const char *key)
{
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (ti_config_settings[id].section && strcmp(key, tide_config_file_key(id)) == 0) return id;
    return -1;
}

/* Where setting `id` is written: "[node] or [memory]", or "[node_db]"
 * when its group's section is its own. */
static void places_of(int id, char *out, size_t cap)
{
    const char *own = ti_config_settings[id].section, *group = group_section(id);

    if (strcmp(own, group) == 0) snprintf(out, cap, "[%s]", own);
    else snprintf(out, cap, "[%s] or [%s]", own, group);
}

/* The sections Tide reads; any other is skipped (a rippled.cfg has many).
 * cache and memory are groups' sections only (group_section). */
static const char *const tide_sections[] = { "node", "node_db", "node_size", "sweep_interval", "http",
                                             "archive", "cache", "memory" };
#define N_TIDE_SECTIONS (sizeof tide_sections / sizeof tide_sections[0])

static int known_section(const char *s)
{
    for (size_t i = 0; i < N_TIDE_SECTIONS; i++)
        if (strcmp(s, tide_sections[i]) == 0) return 1;
    return 0;
}

static int bare_section(const char *s)
{
    return strcmp(s, "node_size") == 0 || strcmp(s, "sweep_interval") == 0;
}

/* 1 when a and b differ only in case or by one edit: a letter added,
 * dropped or changed, or two neighbours swapped. */
static int one_edit_apart(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i = 0;

    if (strcasecmp(a, b) == 0) return 1;
    if (la > lb + 1 || lb > la + 1) return 0;
    while (i < la && i < lb && a[i] == b[i]) i++;
    if (la == lb)
        return strcmp(a + i + 1, b + i + 1) == 0
            || (i + 1 < la && a[i] == b[i + 1] && a[i + 1] == b[i] && strcmp(a + i + 2, b + i + 2) == 0);
    return la > lb ? strcmp(a + i + 1, b + i) == 0 : strcmp(a + i, b + i + 1) == 0;
}

/* The Tide section `s` is probably a typo of, or NULL. */
static const char *typo_of_section(const char *s)
{
    for (size_t i = 0; i < N_TIDE_SECTIONS; i++)
        if (one_edit_apart(s, tide_sections[i])) return tide_sections[i];
    return NULL;
}

/* The keys rippled documents for its [node_db] (online deletion, the
 * RocksDB tuning, the cache) that Tide has no use for: expected in a
 * node's own config, so each gets an info line, not a warning. Its online
 * deletion keys that mean the same to Tide (advisory_delete,
 * back_off_milliseconds, recovery_wait_seconds) are settings of the table
 * instead, and online_delete and delete_batch, which count something else,
 * are ti_config_rippled_keys; age_threshold_seconds stays rippled's
 * (Tide's health gate is its commit backlog, not a ledger's age). */
static int rippled_node_db_key(const char *k)
{
    static const char *const keys[] = {
        "age_threshold_seconds", "earliest_seq", "fast_load",
        "cache_size", "cache_age", "open_files", "filter_bits", "cache_mb", "file_size_mb",
        "file_size_mult", "compression",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0) return 1;
    return 0;
}

/* Cut a line at its comment: a '#' anywhere, as rippled reads its own
 * file; "\#" stands for a literal '#'. *glued is set when the '#' touches
 * the text before it ("path=/srv/a#1"), where it may have been meant as
 * part of the value. */
static void strip_comment(char *s, int *glued)
{
    char *w = s;

    *glued = 0;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == '#') { *w++ = '#'; r++; continue; }
        if (*r == '#') {
            *glued = w > s && w[-1] != ' ' && w[-1] != '\t';
            break;
        }
        *w++ = *r;
    }
    *w = '\0';
}

/* Where tide_config_load_file is in its file. */
typedef struct file_reader {
    tide_config *c;
    const char  *path;
    unsigned     lineno;
    char         section[128];
    int          skipping;          /* inside a section Tide does not read */
    unsigned     seen_line[TIDE_CFG_COUNT];
    unsigned     type_line;         /* [node_db] type=, once */
} file_reader;

/* Refuse what cannot be a UTF-8 text line: a UTF-16 file, a NUL byte. */
static int check_line_bytes(const file_reader *r, const char *s, size_t n)
{
    if (r->lineno == 1 && n >= 2 && ((s[0] == '\xff' && s[1] == '\xfe') || (s[0] == '\xfe' && s[1] == '\xff')))
        return tide_err_set(TIDE_EINVAL, "%s:1: the file is UTF-16 (it starts with a UTF-16 byte-order "
                            "mark); save it as UTF-8", r->path);
    if (n != strlen(s))
        return tide_err_set(TIDE_EINVAL, "%s:%u: the line holds a NUL byte", r->path, r->lineno);
    return 0;
}

/* A "[section]" line: enter it, or skip another program's section. */
static int read_section(file_reader *r, char *s)
{
    char *rb = strchr(s, ']'), *key;
    const char *typo;

    if (rb == NULL)
        return tide_err_set(TIDE_EINVAL, "%s:%u: %s: unterminated section (no ']')", r->path, r->lineno, s);
    if (*ti_config_trim(rb + 1) != '\0')
        return tide_err_set(TIDE_EINVAL, "%s:%u: %s: text after the section's ']'", r->path, r->lineno, s);
    *rb = '\0';
    key = ti_config_trim(s + 1);
    if (*key == '\0')
        return tide_err_set(TIDE_EINVAL, "%s:%u: []: a section without a name", r->path, r->lineno);
    snprintf(r->section, sizeof r->section, "%s", key);
    r->skipping = !known_section(key);
    if (!r->skipping) return 0;
    /* One edit from a section Tide reads is a typo, not another
     * program's section: skipping it would drop the settings under
     * it without a word. */
    typo = typo_of_section(key);
    if (typo != NULL)
        return tide_err_set(TIDE_EINVAL, "%s:%u: [%s]: unknown section; did you mean [%s]? (tide reads "
                            "[node], [node_db], [node_size], [sweep_interval], [http], [cache], [memory] and "
                            "[archive] and skips other programs' sections)", r->path, r->lineno, key, typo);
    tide_log(TIDE_LOG_INFO, "config %s:%u: section [%s] is not used by tide; skipped", r->path, r->lineno, key);
    return 0;
}

/* A [node_db] key that is no setting: rippled's business, not an error,
 * unless it is a near miss of a key Tide reads (a typo). One of rippled's
 * keys that count something else than Tide's setting of their name is
 * recorded for tide_config_finish, which refuses it or logs it. */
static int read_node_db_other(file_reader *r, const char *key, const char *what)
{
    static const char *const ours[] = { "type", "path", "nudb_block_size" };

    for (int i = 0; i < TIDE_CONFIG_RIPPLED_KEYS; i++)
        if (strcmp(key, ti_config_rippled_keys[i].key) == 0) {
            if (r->c->rippled_keys[i][0] == '\0')
                snprintf(r->c->rippled_keys[i], sizeof r->c->rippled_keys[i], "%s", what);
            return 0;
        }
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        if (one_edit_apart(key, ours[i]))
            return tide_err_set(TIDE_EINVAL, "%s: unknown key in [node_db]; did you mean %s?", what, ours[i]);
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (ti_config_settings[id].section && strcmp(ti_config_settings[id].section, "node_db") == 0
            && (one_edit_apart(key, tide_config_file_key(id)) || one_edit_apart(key, ti_config_settings[id].name)))
            return tide_err_set(TIDE_EINVAL, "%s: unknown key in [node_db]; did you mean %s?", what,
                                tide_config_file_key(id));
    if (rippled_node_db_key(key))
        tide_log(TIDE_LOG_INFO, "config %s:%u: [node_db] %s is rippled's, not used by tide; ignored",
                 r->path, r->lineno, key);
    else
        tide_log(TIDE_LOG_WARN, "%s: unknown key in [node_db], ignored (tide reads type, path, "
                 "nudb_block_size and the online delete settings there)", what);
    return 0;
}

/* A key no setting has in this section (not [node_db]): TIDE_EINVAL,
 * saying where it belongs when it is a setting's key elsewhere ([http]
 * generations=3: in [node_db]) or a setting's name whose file key
 * differs ([node] online_delete), and the nearest key when it is none. */
static int unknown_key(const file_reader *r, const char *key, const char *what)
{
    char places[80];
    int id = setting_of_key(key);

    if (id >= 0 || (id = lookup_key("node_db", key)) >= 0) {
        if (ti_config_settings[id].alt_section && strcmp(key, ti_config_settings[id].alt_key) == 0)
            snprintf(places, sizeof places, "[%s]", ti_config_settings[id].alt_section);
        else places_of(id, places, sizeof places);
        return tide_err_set(TIDE_EINVAL, "%s: %s belongs in %s, not in [%s]", what, key, places, r->section);
    }
    for (id = 0; id < TIDE_CFG_COUNT; id++)
        if (ti_config_settings[id].file_key && strcmp(key, ti_config_settings[id].name) == 0)
            return tide_err_set(TIDE_EINVAL, "%s: unknown key in [%s] (the file writes %s as [%s] %s, its "
                                "unit in the key: rippled's own %s counts something else)", what, r->section,
                                key, ti_config_settings[id].section, ti_config_settings[id].file_key, key);
    id = ti_config_nearest_key(key);
    if (id >= 0 && lookup_key(r->section, tide_config_file_key(id)) == id)
        return tide_err_set(TIDE_EINVAL, "%s: unknown key in [%s]; did you mean %s?", what, r->section,
                            tide_config_file_key(id));
    if (id >= 0) {
        places_of(id, places, sizeof places);
        return tide_err_set(TIDE_EINVAL, "%s: unknown key in [%s]; did you mean %s (in %s)?", what, r->section,
                            tide_config_file_key(id), places);
    }
    return tide_err_set(TIDE_EINVAL, "%s: unknown key in [%s]", what, r->section);
}

/* A line in a section Tide skips: another program's, unless it is
 * key=value with the key of one of Tide's settings ([limits]
 * memory_limit=1GiB), which would be dropped in silence: TIDE_EINVAL
 * naming where it belongs. rippled's own sections hold none of them. */
static int check_skipped_line(const file_reader *r, char *s)
{
    char *eq = strchr(s, '='), *key, places[80], what[512];
    int id;

    if (eq == NULL) return 0;
    *eq = '\0';
    key = ti_config_trim(s);
    id = setting_of_key(key);
    if (id < 0) { *eq = '='; return 0; }
    places_of(id, places, sizeof places);
    ti_config_show_value(what, sizeof what, "", ti_config_trim(eq + 1));
    return tide_err_set(TIDE_EINVAL, "%s:%u: [%s] %s=%s: %s belongs in %s; tide does not read [%s] (another "
                        "program's section, skipped)", r->path, r->lineno, r->section, key, what, key, places,
                        r->section);
}

/* [node_db] type=: only NuDB, once. */
static int read_node_db_type(file_reader *r, const char *val, const char *what)
{
    if (r->type_line)
        return tide_err_set(TIDE_EINVAL, "%s: duplicate key (first set at %s:%u)", what, r->path, r->type_line);
    if (strcasecmp(val, "NuDB") != 0)
        return tide_err_set(TIDE_EINVAL, "%s: unsupported type (Tide stores only NuDB)", what);
    r->type_line = r->lineno;
    return 0;
}

/* A line inside a section: a bare value ([node_size], [sweep_interval]) or
 * key=value, given once per file. */
static int read_setting(file_reader *r, char *s)
{
    char *eq = strchr(s, '='), *key, *val, what[512], where[160];
    int id;

    if (bare_section(r->section)) {
        if (eq != NULL)
            return tide_err_set(TIDE_EINVAL, "%s:%u: [%s] %s: expected the value on its own line, "
                                "not key=value", r->path, r->lineno, r->section, s);
        key = "";
        val = s;
        ti_config_show_value(where, sizeof where, "", val);
        snprintf(what, sizeof what, "%s:%u: [%s] %s", r->path, r->lineno, r->section, where);
    } else {
        if (eq == NULL)
            return tide_err_set(TIDE_EINVAL, "%s:%u: [%s] %s: expected key=value", r->path, r->lineno,
                                r->section, s);
        *eq = '\0';
        key = ti_config_trim(s);
        val = ti_config_trim(eq + 1);
        ti_config_show_value(where, sizeof where, "", val);
        snprintf(what, sizeof what, "%s:%u: [%s] %s=%s", r->path, r->lineno, r->section, key, where);
        if (strcmp(r->section, "node_db") == 0 && strcmp(key, "type") == 0)
            return read_node_db_type(r, val, what);
    }
    id = lookup_key(r->section, key);
    if (id < 0 && strcmp(r->section, "node_db") == 0) return read_node_db_other(r, key, what);
    if (id < 0) return unknown_key(r, key, what);
    if (r->seen_line[id])
        return tide_err_set(TIDE_EINVAL, "%s: duplicate key (%s first set at %s:%u)",
                            what, ti_config_settings[id].name, r->path, r->seen_line[id]);
    r->seen_line[id] = r->lineno;
    snprintf(where, sizeof where, "%s:%u", r->path, r->lineno);
    return ti_config_set_value(r->c, id, val, TIDE_SRC_FILE, where, what);
}

/* The whole file at `path` into a malloc'd, NUL-terminated *out of *len
 * bytes: a regular file (a symlink to one too) of at most
 * TIDE_CONFIG_FILE_MAX bytes. O_NONBLOCK: a FIFO named as the config file
 * must not block the open (start, --check-config, SIGHUP on the main
 * thread), and the type is checked on the opened descriptor, so nothing
 * is read from a FIFO or a device (/dev/zero never ends). The read stops
 * one byte past the cap, so a file that grows after the fstat is bounded
 * too. 0, TIDE_ENOENT/TIDE_EIO (errno's) when it cannot be opened or
 * read, TIDE_EINVAL for the wrong type or size; each names the path. */
static int read_whole(const char *path, char **out, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    ssize_t n;
    int fd, rc = 0;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return tide_err_sys(errno, "%s: cannot open the config file", path);
    if (fstat(fd, &st) != 0) { rc = tide_err_sys(errno, "%s: cannot stat the config file", path); goto out; }
    if (!S_ISREG(st.st_mode)) {
        rc = tide_err_set(TIDE_EINVAL, "%s: the config file is %s, not a regular file; name a regular file "
                          "(a symlink to one is fine)", path, tide_io_file_kind(st.st_mode));
        goto out;
    }
    if ((uint64_t)st.st_size > TIDE_CONFIG_FILE_MAX) {
        rc = tide_err_set(TIDE_EINVAL, "%s: the config file is %lld bytes, more than the %llu (1 MiB) tided "
                          "reads", path, (long long)st.st_size, (unsigned long long)TIDE_CONFIG_FILE_MAX);
        goto out;
    }
    buf = malloc(TIDE_CONFIG_FILE_MAX + 2);
    if (buf == NULL) { rc = tide_err_set(TIDE_ENOMEM, "%s: reading the config file", path); goto out; }
    while (got < TIDE_CONFIG_FILE_MAX + 1 && (n = read(fd, buf + got, TIDE_CONFIG_FILE_MAX + 1 - got)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { rc = tide_err_sys(errno, "%s: cannot read the config file", path); goto out; }
        got += (size_t)n;
    }
    if (got > TIDE_CONFIG_FILE_MAX) {
        rc = tide_err_set(TIDE_EINVAL, "%s: the config file grew past %llu bytes (1 MiB) while it was read",
                          path, (unsigned long long)TIDE_CONFIG_FILE_MAX);
        goto out;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

/* One line of the file (`n` bytes, NUL-terminated where its '\n' was):
 * bytes checked, comment cut, then a section line or a setting line
 * (nothing inside a skipped section). */
static int read_line(file_reader *r, char *line, size_t n)
{
    char *s = line;
    int glued, rc;

    r->lineno++;
    rc = check_line_bytes(r, line, n);
    if (rc) return rc;
    if (r->lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) s += 3;   /* UTF-8 BOM */
    strip_comment(s, &glued);
    s = ti_config_trim(s);
    if (*s == '\0' || *s == ';') return 0;
    if (*s == '[') return read_section(r, s);
    if (r->skipping) return check_skipped_line(r, s);
    if (r->section[0] == '\0')
        return tide_err_set(TIDE_EINVAL, "%s:%u: %s: a setting before any [section]", r->path, r->lineno, s);
    if (glued)
        tide_log(TIDE_LOG_WARN, "config %s:%u: [%s] %s: the '#' after it starts a comment, as in rippled's "
                 "own config; write \\# for a '#' in a value", r->path, r->lineno, r->section, s);
    return read_setting(r, s);
}

/* The file, read whole (read_whole), then line by line. */
int tide_config_load_file(tide_config *c, const char *path)
{
    char *text = NULL, *p, *end;
    size_t len = 0;
    file_reader r;
    int rc;

    memset(&r, 0, sizeof r);
    r.c = c;
    r.path = path;
    rc = read_whole(path, &text, &len);
    if (rc) goto out;
    for (p = text, end = text + len; p < end && rc == 0; ) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

        p[n] = '\0';
        rc = read_line(&r, p, n);
        p += n + 1;
    }
out:
    free(text);
    return rc;
}
