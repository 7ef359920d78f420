/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_config.c: the node's configuration: precedence across flags, the
 * environment, the file and the node_size preset; the file's syntax; every
 * validation error naming file and line; the nudb_block_size warning; the
 * startup line; the unbounded consumers; the memory limit: its
 * five settings, the cgroup's limit on scratch v1 and v2 layouts and in a
 * real v1 group, the budgets derived from it and the startup lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "mem/alloc.h"
#include "node/config.h"
#include "node/node.h"
#include "node/startup.h"
#include "store/full.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/log.h"

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

/* ---- fixtures: a scratch directory, a fake environment, a log capture ---- */

typedef struct fx {
    char dir[512];
    char path[600];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    tide_log_set_sink(th_log_discard_sink, NULL);   /* tests that read the log set their own */
    if (f == NULL || th_mkdtemp(f->dir, sizeof f->dir) != 0) return -1;
    th_path(f->path, sizeof f->path, f->dir, "tide.cfg");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    th_teardown(state);             /* the scratch cgroup layouts, whatever the outcome */
    tide_log_set_sink(NULL, NULL);
    th_rmrf(f->dir);
    free(f);
    return 0;
}

static void write_cfg(const fx *f, const char *text)
{
    if (th_write_file(f->path, text, strlen(text)) != 0)
        fail_msg("writing %s: expected success, got an error", f->path);
}

/* defaults + file (when text is not NULL) + env + flags + finish. */
static int load_all(const fx *f, tide_config *c, const char *text, const char *const *env,
                    int argc, char **argv)
{
    int rc;
    tide_config_defaults(c);
    if (text) {
        write_cfg(f, text);
        rc = tide_config_load_file(c, f->path);
        if (rc) return rc;
    }
    rc = tide_config_apply_env(c, th_fake_getenv, (void *)env);
    if (rc) return rc;
    if (argc > 0) {
        rc = tide_config_apply_args(c, argc, argv);
        if (rc) return rc;
    }
    return tide_config_finish(c);
}

/* `text` as the config file is refused (TIDE_EINVAL) by a message that
 * starts "PATH:LINE: " and contains `part`; `i` names the case. */
static void expect_file_error(const fx *f, const char *text, unsigned line, const char *part, size_t i)
{
    tide_config c;
    char want[700], what[64];

    tide_err_clear();
    snprintf(what, sizeof what, "case %zu", i);
    expect_rc(load_all(f, &c, text, NULL, 0, NULL), TIDE_EINVAL, what);
    snprintf(want, sizeof want, "%s:%u: ", f->path, line);
    if (strncmp(tide_last_error(), want, strlen(want)) != 0)
        fail_msg("case %zu: expected the message to start with '%s', got '%s'", i, want, tide_last_error());
    expect_contains(tide_last_error(), part, what);
}

static char *describe(const tide_config *c)
{
    static char line[8192];
    tide_config_describe(c, line, sizeof line);
    return line;
}

/* ---- precedence ---------------------------------------------------------------- */

static void a_flag_beats_the_environment_which_beats_the_file_which_beats_the_preset(void **state)
{
    fx *f = *state;
    tide_config c;
    char want[700];
    const char *file = "[node_size]\nsmall\n[sweep_interval]\n45\n[node]\ncache_budget=256MiB\n";
    const char *env[] = { "TIDE_CACHE_BUDGET=512MB", "TIDE_SWEEP_INTERVAL=50", NULL };
    char *argv[] = { "tided", "--cache-budget=1GiB", "--sweep-interval", "70", NULL };

    expect_rc(load_all(f, &c, file, env, 4, argv), 0, "all four sources");
    expect_u64(c.cache_budget, GiB, "cache_budget from the flag");
    expect_u64(c.sweep_interval, 70, "sweep_interval from the flag");
    expect_contains(describe(&c), "cache_budget=1GiB(flag --cache-budget)", "describe");
    expect_contains(describe(&c), "sweep_interval=70(flag --sweep-interval)", "describe");
    expect_contains(describe(&c), "node_size=small(file ", "describe");

    expect_rc(load_all(f, &c, file, env, 0, NULL), 0, "file and environment");
    expect_u64(c.cache_budget, 512000000, "cache_budget from TIDE_CACHE_BUDGET");
    expect_u64(c.sweep_interval, 50, "sweep_interval from TIDE_SWEEP_INTERVAL");
    expect_contains(describe(&c), "cache_budget=512MB(env TIDE_CACHE_BUDGET)", "describe");
    expect_contains(describe(&c), "sweep_interval=50(env TIDE_SWEEP_INTERVAL)", "describe");

    expect_rc(load_all(f, &c, file, NULL, 0, NULL), 0, "file alone");
    expect_u64(c.cache_budget, 256 * MiB, "cache_budget from the file");
    expect_u64(c.sweep_interval, 45, "sweep_interval from the file");
    snprintf(want, sizeof want, "cache_budget=256MiB(file %s:6)", f->path);
    expect_contains(describe(&c), want, "describe");
    snprintf(want, sizeof want, "sweep_interval=45(file %s:4)", f->path);
    expect_contains(describe(&c), want, "describe");
    snprintf(want, sizeof want, "node_size=small(file %s:2)", f->path);
    expect_contains(describe(&c), want, "describe");

    expect_rc(load_all(f, &c, "[node_size]\nsmall\n", NULL, 0, NULL), 0, "node_size alone");
    expect_u64(c.cache_budget, 256 * MiB, "cache_budget from the small preset");
    expect_u64(c.sweep_interval, 30, "sweep_interval from the small preset");
    expect_contains(describe(&c), "cache_budget=256MiB(preset small)", "describe");
    expect_contains(describe(&c), "sweep_interval=30(preset small)", "describe");
}

static void a_flag_applied_before_the_file_still_wins(void **state)
{
    fx *f = *state;
    tide_config c;
    char *argv[] = { "tided", "--listen=0.0.0.0:9000", NULL };

    tide_config_defaults(&c);
    expect_rc(tide_config_apply_args(&c, 2, argv), 0, "flags first");
    write_cfg(f, "[node]\nlisten=127.0.0.1:7000\n");
    expect_rc(tide_config_load_file(&c, f->path), 0, "then the file");
    expect_str(c.listen, "0.0.0.0:9000", "listen");
    expect_str(c.listen_host, "0.0.0.0", "listen_host");
    expect_u64(c.listen_port, 9000, "listen_port");
    expect_contains(describe(&c), "listen=0.0.0.0:9000(flag --listen)", "describe");
}

static void defaults_are_data_127_0_0_1_8080_and_info(void **state)
{
    (void)state;
    tide_config c;
    tide_config_defaults(&c);
    expect_rc(tide_config_finish(&c), 0, "finish");
    expect_str(c.data_dir, "./data", "data_dir");
    expect_str(c.listen, "127.0.0.1:8080", "listen");
    expect_u64(c.nudb_block_size, 4096, "nudb_block_size");
    expect_u64((uint64_t)c.log_level, TIDE_LOG_INFO, "log_level");
    expect_u64((uint64_t)c.mmap_threshold_set, 0, "mmap_threshold_set");
    expect_u64(c.arena_max, 0, "arena_max");
    expect_contains(describe(&c), "data_dir=./data(default)", "describe");
    expect_contains(describe(&c), "(default auto: ", "describe of node_size");
}

static void node_size_is_chosen_from_total_ram_when_unset(void **state)
{
    (void)state;
    static const struct { uint64_t ram; int want; } cases[] = {
        { 4 * GiB, TIDE_NODE_TINY }, { 8 * GiB - 1, TIDE_NODE_TINY }, { 8 * GiB, TIDE_NODE_SMALL },
        { 16 * GiB, TIDE_NODE_MEDIUM }, { 32 * GiB, TIDE_NODE_LARGE }, { 63 * GiB, TIDE_NODE_LARGE },
        { 64 * GiB, TIDE_NODE_HUGE }, { 512 * GiB, TIDE_NODE_HUGE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = tide_config_node_size_for_ram(cases[i].ram);
        if (got != cases[i].want)
            fail_msg("%" PRIu64 " bytes of RAM: expected %s, got %s", cases[i].ram,
                     tide_config_node_size_name(cases[i].want), tide_config_node_size_name(got));
    }
}

static void presets_fill_only_the_settings_nothing_else_set(void **state)
{
    fx *f = *state;
    tide_config c;
    const char *env[] = { "TIDE_CACHE_AGE=45", NULL };

    expect_rc(load_all(f, &c, "[node]\nnode_size=huge\ninsert_burst=1MiB\n", env, 0, NULL), 0, "load");
    expect_u64(c.sweep_interval, 120, "sweep_interval (huge preset)");
    expect_u64(c.cache_target, 8388608, "cache_target (huge preset)");
    expect_u64(c.cache_budget, 16 * GiB, "cache_budget (huge preset)");
    expect_u64(c.cache_age, 45, "cache_age (environment, not the preset's 900)");
    expect_u64(c.insert_burst, MiB, "insert_burst (file, not the preset's 48 MiB)");
    expect_contains(describe(&c), "cache_target=8388608(preset huge)", "describe");
    expect_contains(describe(&c), "cache_age=45(env TIDE_CACHE_AGE)", "describe");

    static const struct { const char *name; unsigned sweep; uint64_t target, age, budget, burst; } table[] = {
        { "tiny",   10,  262144,  30,  64 * MiB,  4 * MiB },
        { "small",  30,  524288,  60, 256 * MiB,  8 * MiB },
        { "medium", 60, 2097152,  90,   1 * GiB, 16 * MiB },
        { "large",  90, 4194304, 120,   4 * GiB, 32 * MiB },
        { "huge",  120, 8388608, 900,  16 * GiB, 48 * MiB },
    };
    for (size_t i = 0; i < 5; i++) {
        char *argv[] = { "tided", "--node-size", (char *)table[i].name, NULL };
        expect_rc(load_all(f, &c, NULL, NULL, 3, argv), 0, table[i].name);
        expect_u64(c.sweep_interval, table[i].sweep, table[i].name);
        expect_u64(c.cache_target, table[i].target, table[i].name);
        expect_u64(c.cache_age, table[i].age, table[i].name);
        expect_u64(c.cache_budget, table[i].budget, table[i].name);
        expect_u64(c.insert_burst, table[i].burst, table[i].name);
    }
}

/* ---- the file ----------------------------------------------------------------- */

static void an_xrpl_style_file_with_comments_and_crlf_is_read(void **state)
{
    fx *f = *state;
    tide_config c;
    const char *text =
        "# Tide node\r\n"
        "; another comment\r\n"
        "\r\n"
        "[node_size]\r\n"
        "  large  \r\n"
        "\r\n"
        "[node_db]\r\n"
        "type=NuDB\r\n"
        "path = /var/lib/tide/db\r\n"
        "nudb_block_size=16384\r\n"
        "[node]\r\n"
        "log_level=debug\r\n"
        "mmap_threshold=128KiB\r\n"
        "arena_max=2\r\n"
        "key_cache_size=1000\r\n"
        "key_cache_age=90\r\n";

    expect_rc(load_all(f, &c, text, NULL, 0, NULL), 0, "load");
    expect_str(tide_config_node_size_name(c.node_size), "large", "node_size");
    expect_str(c.data_dir, "/var/lib/tide/db", "data_dir from [node_db] path");
    expect_u64(c.nudb_block_size, 16384, "nudb_block_size");
    expect_u64((uint64_t)c.log_level, TIDE_LOG_DEBUG, "log_level");
    expect_u64(c.mmap_threshold, 128 * 1024, "mmap_threshold");
    expect_u64((uint64_t)c.mmap_threshold_set, 1, "mmap_threshold_set");
    expect_u64(c.arena_max, 2, "arena_max");
    expect_u64(c.key_cache_size, 1000, "key_cache_size");
    expect_u64(c.key_cache_age, 90, "key_cache_age");
    expect_u64(c.sweep_interval, 90, "sweep_interval (large preset)");
}

static void every_validation_error_names_the_file_and_line(void **state)
{
    fx *f = *state;
    static const struct { const char *text; unsigned line; const char *part; } cases[] = {
        { "[node]\n\ncache_budget=12XB\n", 3, "[node] cache_budget=12XB: not a size (" },
        { "[node]\ncache_bugdet=1GiB\n", 2, "[node] cache_bugdet=1GiB: unknown key in [node]" },
        { "[nodes]\n", 1, "[nodes]: unknown section" },
        { "# x\n[node\n", 2, "[node: unterminated section" },
        { "[node]\ncache_age=30\ncache_age=40\n", 3, "duplicate key (cache_age first set at " },
        { "[node_size]\nmedium\n[node]\nnode_size=large\n", 4, "duplicate key" },
        { "cache_age=30\n", 1, "before any [section]" },
        { "[node]\ncache_age\n", 2, "expected key=value" },
        { "[node_size]\nsize=medium\n", 2, "expected the value on its own line" },
        { "[node_size]\nmedium-ish\n", 2, "[node_size] medium-ish: not a node size" },
        { "[sweep_interval]\n9\n", 2, "[sweep_interval] 9: 9 is outside 10..600" },
        { "[node]\ncache_age=0\n", 2, "[node] cache_age=0: 0 is outside 1..86400" },
        { "[node]\ncache_target=lots\n", 2, "cache_target=lots: not a whole number" },
        { "[node]\ncache_target=-5\n", 2, "cache_target=-5: not a whole number" },
        { "[node]\nlisten=localhost\n", 2, "listen=localhost: not HOST:PORT" },
        { "[node]\nlisten=:8080\n", 2, "empty host" },
        { "[node]\nlisten=127.0.0.1:0\n", 2, "port '0' is not a number from 1 to 65535" },
        { "[node]\nlisten=127.0.0.1:65536\n", 2, "port '65536'" },
        { "[node]\nlog_level=loud\n", 2, "log_level=loud: not a log level" },
        { "[node]\nmmap_threshold=64MiB\n", 2, "mmap_threshold=64MiB: 67108864 bytes is outside" },
        { "[node]\narena_max=0\n", 2, "arena_max=0: 0 is outside 1..4096" },
        { "[node_db]\ntype=RocksDB\n", 2, "type=RocksDB: unsupported type" },
        { "[node_db]\npath=\n", 2, "[node_db] path=: empty path" },
        { "[node]\nmetrics_token=abc\n", 2, "unknown key" },
        { "[node]\n[node_size]\nmedium\n\n[node_size]\nsmall\n", 6, "duplicate key" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_file_error(f, cases[i].text, cases[i].line, cases[i].part, i);
}

/* The startup log's lines are "settings [memory]: ...": each group's name
 * is a section the file reads, for the settings of that group, besides
 * the setting's own section ([node] for most). */
static void the_startup_logs_groups_are_sections_the_file_reads_for_their_settings(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char want[700];

    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_log_set_level(TIDE_LOG_INFO);
    expect_rc(load_all(f, &c, "[memory]\nmemory_limit=1GiB\narena_max=2\n[cache]\ncache_budget=256MiB\n"
                       "[http]\nlisten=127.0.0.1:9999\n[node]\ncache_age=100\n", NULL, 0, NULL), 0, "load");
    expect_u64(c.memory_limit, 1ull << 30, "[memory] memory_limit");
    expect_u64(c.arena_max, 2, "[memory] arena_max");
    expect_u64(c.cache_budget, 256ull << 20, "[cache] cache_budget");
    expect_u64(c.cache_age, 100, "[node] cache_age, as ever");
    snprintf(want, sizeof want, "%s:2", f->path);
    expect_str(c.src[TIDE_CFG_MEMORY_LIMIT].where, want, "memory_limit's source names its line");
    if (strstr(describe(&c), "listen=127.0.0.1:9999(file ") == NULL)
        fail_msg("[http] listen: expected listen=127.0.0.1:9999 from the file, got %s", describe(&c));
    if (strstr(cap.text, "not used by tide") != NULL)
        fail_msg("a group's section was skipped: %s", cap.text);
    for (int g = 0; g < TIDE_CFG_GROUP_COUNT; g++) {
        char text[64];
        snprintf(text, sizeof text, "[%s]\n", tide_config_group_name(g));
        memset(&cap, 0, sizeof cap);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), 0, tide_config_group_name(g));
        if (strstr(cap.text, "not used by tide") != NULL)
            fail_msg("[%s], a group of the startup log, was skipped: %s", tide_config_group_name(g), cap.text);
    }
    tide_log_set_sink(NULL, NULL);

    static const struct { const char *text; unsigned line; const char *part; } bad[] = {
        { "[cache]\ncache_budget=1GiB\n[node]\ncache_budget=2GiB\n", 4, "duplicate key (cache_budget first set at" },
        { "[memory]\ncache_budget=1GiB\n", 2, "[memory] cache_budget=1GiB: cache_budget belongs in [node] or "
          "[cache], not in [memory]" },
        { "[http]\ngenerations=3\n", 2, "[http] generations=3: generations belongs in [node_db], not in [http]" },
        { "[memory]\npath=/srv/x\n", 2, "path belongs in [node_db], not in [memory]" },
        { "[cache]\narchive_pool=p\n", 2, "archive_pool belongs in [archive], not in [cache]" },
        { "[memroy]\n", 1, "[memroy]: unknown section; did you mean [memory]?" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_file_error(f, bad[i].text, bad[i].line, bad[i].part, i);
}

/* A section Tide skips is another program's, but a line in it with one of
 * Tide's keys was meant for Tide: dropping it would say OK to a setting
 * never applied. rippled's own lines there still pass. */
static void a_known_key_in_a_section_tide_skips_is_an_error_naming_where_it_belongs(void **state)
{
    fx *f = *state;
    tide_config c;
    static const struct { const char *text; unsigned line; const char *part; } bad[] = {
        { "[limits]\nmemory_limit=1GiB\n", 2, "[limits] memory_limit=1GiB: memory_limit belongs in [node] or "
          "[memory]; tide does not read [limits]" },
        { "[server]\nport_rpc\n[server_opts]\n  cache_budget = 1GiB  \n", 4,
          "[server_opts] cache_budget=1GiB: cache_budget belongs in [node] or [cache]" },
        { "[rotation]\ngenerations=3\n", 2, "generations belongs in [node_db]; tide does not read [rotation]" },
        { "[tokens]\nmetrics_token_file=/etc/tide/metrics.token\n", 2, "metrics_token_file belongs in [http]" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_file_error(f, bad[i].text, bad[i].line, bad[i].part, i);
    expect_rc(load_all(f, &c, "[port_rpc]\nport=5005\nip=127.0.0.1\nprotocol=http\n[ips]\nr.ripple.com 51235\n",
                       NULL, 0, NULL), 0, "rippled's own sections' lines");
}

/* A mistyped flag or key is answered with the nearest name, as git does;
 * a word near nothing gets no guess. */
static void an_unknown_flag_or_key_is_answered_with_the_nearest_name(void **state)
{
    fx *f = *state;
    tide_config c;
    static const struct { const char *arg, *want; } flags[] = {
        { "--cache-budjet", "--cache-budjet: unknown flag; did you mean --cache-budget?" },
        { "--cache-budjet=1GiB", "--cache-budjet=1GiB: unknown flag; did you mean --cache-budget?" },
        { "--memroy-limit=1GiB", "did you mean --memory-limit?" },
        { "--chek-config", "did you mean --check-config?" },
        { "--archve-pool=p", "did you mean --archive-pool?" },
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char *argv[] = { "tided", (char *)flags[i].arg, NULL };
        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), TIDE_EINVAL, flags[i].arg);
        expect_contains(tide_last_error(), flags[i].want, flags[i].arg);
    }
    char *far[] = { "tided", "--zz", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, far), TIDE_EINVAL, "--zz");
    if (strstr(tide_last_error(), "did you mean") != NULL) fail_msg("--zz is near nothing; got %s", tide_last_error());

    static const struct { const char *text; unsigned line; const char *part; } keys[] = {
        { "[node]\ncache_budjet=1GiB\n", 2, "[node] cache_budjet=1GiB: unknown key in [node]; did you mean "
          "cache_budget?" },
        { "[http]\ncache_budjet=1GiB\n", 2, "unknown key in [http]; did you mean cache_budget (in [node] or "
          "[cache])?" },
        { "[memory]\nmemory_limt=1GiB\n", 2, "unknown key in [memory]; did you mean memory_limit?" },
        { "[archive]\narchive_pol=p\n", 2, "unknown key in [archive]; did you mean archive_pool?" },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        expect_file_error(f, keys[i].text, keys[i].line, keys[i].part, i);
    expect_rc(load_all(f, &c, "[node]\nwhatever=1\n", NULL, 0, NULL), TIDE_EINVAL, "a key near nothing");
    if (strstr(tide_last_error(), "did you mean") != NULL)
        fail_msg("whatever is near no key; got %s", tide_last_error());
}

static void a_missing_file_is_an_error_naming_it(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_config_defaults(&c);
    expect_rc(tide_config_load_file(&c, f->path), TIDE_ENOENT, "load of a missing file");
    expect_contains(tide_last_error(), f->path, "message");
}

static void sweep_interval_accepts_10_and_600_and_rejects_9_and_601(void **state)
{
    fx *f = *state;
    static const struct { const char *v; int rc; } cases[] = {
        { "9", TIDE_EINVAL }, { "10", 0 }, { "600", 0 }, { "601", TIDE_EINVAL },
    };
    for (size_t i = 0; i < 4; i++) {
        tide_config c;
        char text[64], envv[64], flag[64], what[96];
        const char *env[] = { envv, NULL };
        char *argv[] = { "tided", flag, NULL };

        snprintf(text, sizeof text, "[sweep_interval]\n%s\n", cases[i].v);
        snprintf(envv, sizeof envv, "TIDE_SWEEP_INTERVAL=%s", cases[i].v);
        snprintf(flag, sizeof flag, "--sweep-interval=%s", cases[i].v);

        snprintf(what, sizeof what, "file [sweep_interval] %s", cases[i].v);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), cases[i].rc, what);
        if (cases[i].rc == 0) expect_u64(c.sweep_interval, strtoull(cases[i].v, NULL, 10), what);
        else expect_contains(tide_last_error(), "is outside 10..600", what);

        snprintf(what, sizeof what, "%s", envv);
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), cases[i].rc, what);
        if (cases[i].rc) expect_contains(tide_last_error(), envv, what);

        snprintf(what, sizeof what, "%s", flag);
        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), cases[i].rc, what);
        if (cases[i].rc) expect_contains(tide_last_error(), flag, what);
    }
}

static void an_invalid_nudb_block_size_warns_with_file_and_line_and_uses_4096(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char want[700];

    tide_log_set_level(TIDE_LOG_DEBUG);
    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, "[node_db]\ntype=NuDB\nnudb_block_size=5000\n", NULL, 0, NULL), 0,
              "a bad block size is not an error");
    tide_log_set_level(TIDE_LOG_INFO);
    expect_u64(c.nudb_block_size, 4096, "nudb_block_size after the fallback");
    expect_u64((uint64_t)cap.warnings, 1, "warnings logged");
    snprintf(want, sizeof want, "%s:3: [node_db] nudb_block_size=5000", f->path);
    expect_contains(cap.text, want, "the warning");
    expect_contains(cap.text, "4096", "the warning");
    snprintf(want, sizeof want, "nudb_block_size=4096(file %s:3 invalid, fell back)", f->path);
    expect_contains(describe(&c), want, "describe after the fallback");

    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    const char *env[] = { "TIDE_NUDB_BLOCK_SIZE=abc", NULL };
    expect_rc(load_all(f, &c, NULL, env, 0, NULL), 0, "a bad block size in the environment");
    expect_u64(c.nudb_block_size, 4096, "nudb_block_size after the fallback");
    expect_contains(cap.text, "TIDE_NUDB_BLOCK_SIZE=abc", "the warning");
}

static void sizes_are_read_in_bytes_and_decimal_and_binary_units(void **state)
{
    fx *f = *state;
    static const struct { const char *text; uint64_t want; } cases[] = {
        { "4096", 4096 }, { "512MB", 512000000 }, { "1GiB", GiB }, { "512 KiB", 512 * 1024 },
        { "2G", 2 * GiB }, { "0", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_config c;
        char text[96];
        snprintf(text, sizeof text, "[node]\ncache_budget=%s\n%s%s\n", cases[i].text,
                 cases[i].want >= 65536 ? "insert_burst=" : "", cases[i].want >= 65536 ? cases[i].text : "");
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), 0, cases[i].text);
        expect_u64(c.cache_budget, cases[i].want, cases[i].text);
        if (cases[i].want >= 65536) expect_u64(c.insert_burst, cases[i].want, cases[i].text);
    }
    tide_config c;
    expect_rc(load_all(f, &c, "[node]\ncache_budget=1.5GiB\n", NULL, 0, NULL), TIDE_EINVAL, "1.5GiB");
    expect_contains(tide_last_error(), "not a size", "1.5GiB");
}

static void an_age_below_the_sweep_interval_warns_only_when_the_operator_chose_it(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };

    tide_log_set_sink(th_log_capture_sink, &cap);
    for (int n = 0; n < TIDE_NODE_SIZE_COUNT; n++) {
        char *argv[] = { "tided", "--node-size", (char *)tide_config_node_size_name(n), NULL };
        expect_rc(load_all(f, &c, NULL, NULL, 3, argv), 0, tide_config_node_size_name(n));
    }
    expect_u64((uint64_t)cap.warnings, 0, "warnings from the presets and defaults alone");
    expect_rc(load_all(f, &c, "[node]\ncache_age=5\n", NULL, 0, NULL), 0, "cache_age=5");
    expect_u64((uint64_t)cap.warnings, 1, "warnings with cache_age=5");
    expect_contains(cap.text, "cache_age=5 is below sweep_interval=", "the warning");
}

/* ---- flags and the environment -------------------------------------------------- */

static void an_unknown_key_or_flag_is_rejected_by_name(void **state)
{
    fx *f = *state;
    tide_config c;
    char *argv[] = { "tided", "--cache-bugdet=1GiB", NULL };
    char *argv2[] = { "tided", "--cache-budget", NULL };
    char *argv3[] = { "tided", "stray", NULL };
    char *argv4[] = { "tided", "--config", "x.cfg", "--data-dir", "/srv/tide", NULL };

    expect_rc(load_all(f, &c, "[node]\nwhatever=1\n", NULL, 0, NULL), TIDE_EINVAL, "unknown key");
    expect_contains(tide_last_error(), "whatever=1: unknown key", "unknown key");
    expect_rc(load_all(f, &c, NULL, NULL, 2, argv), TIDE_EINVAL, "unknown flag");
    expect_contains(tide_last_error(), "--cache-bugdet=1GiB: unknown flag", "unknown flag");
    expect_rc(load_all(f, &c, NULL, NULL, 2, argv2), TIDE_EINVAL, "flag without value");
    expect_contains(tide_last_error(), "--cache-budget: missing its value", "flag without value");
    expect_rc(load_all(f, &c, NULL, NULL, 2, argv3), TIDE_EINVAL, "stray argument");
    expect_contains(tide_last_error(), "stray: unexpected argument", "stray argument");
    expect_rc(load_all(f, &c, NULL, NULL, 5, argv4), 0, "--config is left to the caller");
    expect_str(c.data_dir, "/srv/tide", "data_dir");
}

static void a_bad_environment_value_names_the_variable(void **state)
{
    fx *f = *state;
    tide_config c;
    const char *env[] = { "TIDE_CACHE_BUDGET=12XB", NULL };
    const char *env2[] = { "TIDE_METRICS_PUBLIC=maybe", NULL };

    expect_rc(load_all(f, &c, NULL, env, 0, NULL), TIDE_EINVAL, "TIDE_CACHE_BUDGET=12XB");
    expect_contains(tide_last_error(), "TIDE_CACHE_BUDGET=12XB: not a size (", "message");
    expect_rc(load_all(f, &c, NULL, env2, 0, NULL), TIDE_EINVAL, "TIDE_METRICS_PUBLIC=maybe");
    expect_contains(tide_last_error(), "TIDE_METRICS_PUBLIC=maybe: not 1/0", "message");
}

/* Set but empty is not unset: a script's TIDE_MEMORY_LIMIT=$LIMIT with
 * LIMIT unset must not drop the limit in silence. Blanks alone count as
 * empty; a token's variable is named, never echoed. */
static void a_variable_set_but_empty_is_refused_naming_it_not_taken_for_unset(void **state)
{
    fx *f = *state;
    static const char *const cases[][2] = {
        { "TIDE_MEMORY_LIMIT=", "TIDE_MEMORY_LIMIT is set but empty: give it a value, or unset it for the default "
                                "(unset TIDE_MEMORY_LIMIT; under systemd UnsetEnvironment=TIDE_MEMORY_LIMIT)" },
        { "TIDE_CACHE_BUDGET=  \t", "TIDE_CACHE_BUDGET is set but empty" },
        { "TIDE_DATA_DIR=", "TIDE_DATA_DIR is set but empty" },
        { "TIDE_ADMIN_TOKEN=", "TIDE_ADMIN_TOKEN is set but empty" },
    };
    tide_config c;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *env[] = { cases[i][0], NULL };
        /* the file sets the same setting: the empty variable must not fall back to it either */
        expect_rc(load_all(f, &c, "[node]\nmemory_limit=1GiB\ncache_budget=64MiB\n", env, 0, NULL), TIDE_EINVAL,
                  cases[i][0]);
        expect_contains(tide_last_error(), cases[i][1], cases[i][0]);
    }
}

/* A space between a size's number and its unit is what size.h promises and
 * how the log writes sizes: read alike from a flag, a variable and the
 * file. A space inside the number is refused naming the source, with the
 * forms that are accepted. */
static void a_size_may_have_a_space_before_its_unit_from_every_source_but_not_inside_its_number(void **state)
{
    fx *f = *state;
    const char *env[] = { "TIDE_INSERT_BURST=2 MiB", NULL };
    char *argv[] = { "tided", "--max-object-size=3 MiB", NULL };
    char *bad[] = { "tided", "--cache-budget=1 000MiB", NULL };
    const char *bad_env[] = { "TIDE_CACHE_BUDGET=1 000 000", NULL };
    tide_config c;

    expect_rc(load_all(f, &c, "[node]\ncache_budget = 1 MiB\n", env, 2, argv), 0, "sizes with a space before the unit");
    expect_u64(c.cache_budget, MiB, "[node] cache_budget = 1 MiB");
    expect_u64(c.insert_burst, 2 * MiB, "TIDE_INSERT_BURST=2 MiB");
    expect_u64(c.max_object_size, 3 * MiB, "--max-object-size=3 MiB");
    expect_rc(load_all(f, &c, NULL, NULL, 2, bad), TIDE_EINVAL, "--cache-budget=1 000MiB");
    expect_contains(tide_last_error(), "--cache-budget=1 000MiB: not a size (", "the flag named");
    expect_contains(tide_last_error(), "4096, 1000000, 512MB, 1GiB or 512 KiB", "the accepted forms shown");
    expect_rc(load_all(f, &c, NULL, bad_env, 0, NULL), TIDE_EINVAL, "TIDE_CACHE_BUDGET=1 000 000");
    expect_contains(tide_last_error(), "TIDE_CACHE_BUDGET=1 000 000: not a size (", "the variable named");
    expect_contains(tide_last_error(), "no separators inside", "why it is refused");
}

/* ---- describe and unbounded ------------------------------------------------------ */

static void describe_never_prints_the_metrics_token(void **state)
{
    fx *f = *state;
    tide_config c;
    const char *env[] = { "TIDE_METRICS_TOKEN=s3cr3t-t0ken", "TIDE_METRICS_PUBLIC=0", NULL };

    expect_rc(load_all(f, &c, NULL, env, 0, NULL), 0, "load");
    expect_str(c.metrics_token, "s3cr3t-t0ken", "metrics_token");
    char *line = describe(&c);
    if (strstr(line, "s3cr3t") != NULL)
        fail_msg("describe: expected no token text, got '%s'", line);
    expect_contains(line, "metrics_token=set(env TIDE_METRICS_TOKEN)", "describe");
    expect_contains(line, "metrics_public=0(env TIDE_METRICS_PUBLIC)", "describe");

    /* A token too long to keep is an error that does not echo it either. */
    char big[400], envv[420];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(envv, sizeof envv, "TIDE_METRICS_TOKEN=%s", big);
    const char *env2[] = { envv, NULL };
    expect_rc(load_all(f, &c, NULL, env2, 0, NULL), TIDE_EINVAL, "an overlong token");
    if (strstr(tide_last_error(), "kkkk") != NULL)
        fail_msg("error: expected no token text, got '%s'", tide_last_error());
}

static void describe_truncates_to_the_capacity_and_reports_the_full_length(void **state)
{
    (void)state;
    tide_config c;
    char small[32], big[8192];
    tide_config_defaults(&c);
    tide_config_finish(&c);
    size_t full = tide_config_describe(&c, big, sizeof big);
    size_t got = tide_config_describe(&c, small, sizeof small);
    expect_u64(got, full, "length reported with a short buffer");
    expect_u64(strlen(small), sizeof small - 1, "bytes written to the short buffer");
    expect_u64(strlen(big), full, "bytes written to the long buffer");
}


static void http_threads_and_object_size_are_bounded_and_the_admin_token_never_printed(void **state)
{
    fx *f = *state;
    tide_config c;
    char *argv0[] = { "tided", "--http-threads", "0", NULL };
    char *argv1[] = { "tided", "--http-threads=65", NULL };
    char *argv2[] = { "tided", "--max-object-size", "257MiB", NULL };
    char *argv3[] = { "tided", "--http-threads", "3", "--max-object-size", "64KiB", NULL };
    const char *env[] = { "TIDE_ADMIN_TOKEN=adm1n-s3cret", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 3, argv0), TIDE_EINVAL, "--http-threads 0");
    expect_contains(tide_last_error(), "--http-threads", "message names the flag");
    expect_rc(load_all(f, &c, NULL, NULL, 2, argv1), TIDE_EINVAL, "--http-threads=65");
    expect_contains(tide_last_error(), "65 is outside 1..64", "message gives the range");
    expect_rc(load_all(f, &c, NULL, NULL, 3, argv2), TIDE_EINVAL, "--max-object-size 257MiB");
    expect_rc(load_all(f, &c, NULL, env, 5, argv3), 0, "good values");
    expect_u64(c.http_threads, 3, "http_threads");
    expect_u64(c.max_object_size, 64 * 1024, "max_object_size");
    expect_str(c.admin_token, "adm1n-s3cret", "admin_token");
    char *line = describe(&c);
    if (strstr(line, "adm1n") != NULL) fail_msg("describe: expected no admin token text, got '%s'", line);
    expect_contains(line, "admin_token=set(env TIDE_ADMIN_TOKEN)", "describe");
    expect_contains(line, "max_object_size=64KiB(flag --max-object-size)", "describe");
}

/* ---- a node's own rippled.cfg ------------------------------------------------------ */

/* The line of `text` that starts with `head`, counting from 1; 0 if none. */
static unsigned line_of(const char *text, const char *head)
{
    unsigned n = 1;
    for (const char *p = text; *p; n++) {
        if (strncmp(p, head, strlen(head)) == 0) return n;
        p = strchr(p, '\n');
        if (p == NULL) break;
        p++;
    }
    return 0;
}

static void a_real_rippled_cfg_is_read_for_node_db_and_node_size_and_the_rest_skipped(void **state)
{
    (void)state;
    static const char *const skipped[] = {
        "server", "port_rpc_admin_local", "port_peer", "port_ws_admin_local", "ledger_history",
        "database_path", "debug_logfile", "sntp_servers", "validators_file", "rpc_startup", "ssl_verify",
    };
    char path[1200], want[2000], head[64];
    th_log_capture *cap = calloc(1, sizeof *cap);
    char *text;
    tide_config c;

    snprintf(path, sizeof path, "%s/../rippled/rippled.cfg", th_fixture_root());
    text = th_read_text(path);
    if (text == NULL || cap == NULL) fail_msg("reading the fixture %s: expected its text, got nothing", path);
    tide_log_set_level(TIDE_LOG_DEBUG);
    tide_log_set_sink(th_log_capture_sink, cap);
    /* Its online_delete=2000 counts ledgers; read as Tide's count of
     * objects it deleted what rippled's operator meant to keep: it is
     * never read, and with Tide's own setting given nowhere, refused. */
    tide_config_defaults(&c);
    expect_rc(tide_config_load_file(&c, path), 0, "loading a node's own rippled.cfg");
    expect_rc(tide_config_finish(&c), TIDE_EINVAL, "finish with rippled's online_delete and no setting of tide's");
    snprintf(want, sizeof want, "%s:%u: [node_db] online_delete=2000 is rippled's: it counts the ledgers rippled "
             "keeps, while tide's online_delete counts objects written into the newest generation, so tide does "
             "not read it. Say what tide should do: [node_db] online_delete_objects=N (objects; 0: off, keep "
             "every object; or manual), a key rippled does not use, or --online-delete / TIDE_ONLINE_DELETE",
             path, line_of(text, "online_delete"));
    expect_str(tide_last_error(), want, "the refusal names the line, both units and tide's own key");
    expect_u64(c.online_delete_on, 0, "rippled's online_delete never turns generations on");
    /* Given by the flag, the node runs; rippled's key is named as its own. */
    char *argv[] = { "tided", "--online-delete=100000", NULL };
    memset(cap, 0, sizeof *cap);
    tide_config_defaults(&c);
    expect_rc(tide_config_load_file(&c, path), 0, "loading it again");
    expect_rc(tide_config_apply_args(&c, 2, argv), 0, "--online-delete=100000");
    expect_rc(tide_config_finish(&c), 0, "finish with tide's own online_delete from the flag");
    tide_log_set_level(TIDE_LOG_INFO);
    snprintf(want, sizeof want, "config %s:%u: [node_db] online_delete=2000 is rippled's (it counts the ledgers "
             "rippled keeps), not read by tide, whose setting is online_delete=100000(flag --online-delete)", path,
             line_of(text, "online_delete"));
    expect_contains(cap->text, want, "the info line");
    expect_u64(c.online_delete, 100000, "online_delete from the flag alone");

    expect_str(c.data_dir, "/var/lib/rippled/db/nudb", "data_dir from [node_db] path, its comment cut");
    snprintf(want, sizeof want, "%s:%u", path, line_of(text, "path="));
    expect_str(c.src[TIDE_CFG_DATA_DIR].where, want, "data_dir's source");
    expect_str(tide_config_node_size_name(c.node_size), "large", "node_size from [node_size]");
    snprintf(want, sizeof want, "%s:%u", path, line_of(text, "large"));
    expect_str(c.src[TIDE_CFG_NODE_SIZE].where, want, "node_size's source");
    expect_u64(c.sweep_interval, 90, "the large preset follows");

    expect_u64(th_count(cap->text, "is not used by tide; skipped"), sizeof skipped / sizeof skipped[0],
               "one info line per skipped section");
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        snprintf(head, sizeof head, "[%s]", skipped[i]);
        snprintf(want, sizeof want, "config %s:%u: section [%s] is not used by tide; skipped", path,
                 line_of(text, head), skipped[i]);
        expect_contains(cap->text, want, skipped[i]);
    }
    /* advisory_delete means what rippled means by it (a rotation waits
     * for an operator's can_delete): read as Tide's, with its line. */
    expect_u64(c.advisory_delete, 0, "advisory_delete=0 from [node_db]");
    expect_u64((uint64_t)c.src[TIDE_CFG_ADVISORY_DELETE].kind, TIDE_SRC_FILE, "advisory_delete's source");
    expect_u64((uint64_t)cap->warnings, 0, "warnings");
    free(text);
    free(cap);
}

/* Each key rippled's [node_db] and Tide share a name but not a unit
 * (online_delete: ledgers kept, not objects; delete_batch: SQL records,
 * not keys) is never read as Tide's: refused while Tide's setting is given
 * nowhere, named as rippled's once it is (Tide's own key in the file, the
 * variable or the flag). The keys that mean the same are read. */
static void rippleds_keys_that_count_something_else_are_never_read_as_tides(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    const char *env[] = { "TIDE_DELETE_BATCH=40", NULL };
    char *argv[] = { "tided", "--online-delete=manual", NULL };
    char want[900];

    expect_rc(load_all(f, &c, "[node_db]\ntype=NuDB\nonline_delete=512\n", NULL, 0, NULL), TIDE_EINVAL, "online_delete");
    snprintf(want, sizeof want, "%s:3: [node_db] online_delete=512 is rippled's: it counts the ledgers rippled keeps, "
             "while tide's online_delete counts objects written into the newest generation", f->path);
    expect_contains(tide_last_error(), want, "online_delete refused");
    expect_contains(tide_last_error(), "[node_db] online_delete_objects=N (objects; 0: off, keep every object; or "
                    "manual), a key rippled does not use, or --online-delete / TIDE_ONLINE_DELETE", "tide's own key");
    expect_u64(c.online_delete_on, 0, "generations stay off");
    expect_rc(load_all(f, &c, "[node_db]\ndelete_batch=100\n", NULL, 0, NULL), TIDE_EINVAL, "delete_batch");
    expect_contains(tide_last_error(), ":2: [node_db] delete_batch=100 is rippled's: it counts the records rippled "
                    "deletes from its SQL databases per batch, while tide's delete_batch counts keys of a keep-list "
                    "copied forward per batch", "delete_batch refused");
    expect_contains(tide_last_error(), "[node_db] delete_batch_keys=N (keys per batch", "tide's own key");

    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, "[node_db]\nonline_delete=512\nonline_delete_objects=0\ndelete_batch=7\n"
                       "advisory_delete=1\nback_off_milliseconds=250\nrecovery_wait_seconds=9\n", env, 2, argv), 0,
              "rippled's keys beside tide's own");
    expect_u64(c.online_delete_on, 1, "--online-delete=manual over the file's 0");
    expect_u64(c.online_delete, 0, "manual: no object trigger, never rippled's 512");
    expect_u64(c.delete_batch, 40, "TIDE_DELETE_BATCH, never rippled's 7");
    expect_contains(cap.text, ":2: [node_db] online_delete=512 is rippled's (it counts the ledgers rippled keeps), "
                    "not read by tide, whose setting is online_delete=manual(flag --online-delete)", "online_delete");
    expect_contains(cap.text, ":4: [node_db] delete_batch=7 is rippled's (it counts the records rippled deletes "
                    "from its SQL databases per batch), not read by tide, whose setting is "
                    "delete_batch=40(env TIDE_DELETE_BATCH)", "delete_batch");
    expect_u64(c.advisory_delete, 1, "advisory_delete: rippled's gate, read");
    expect_u64(c.back_off_milliseconds, 250, "back_off_milliseconds: rippled's pause in ms, read");
    expect_u64(c.recovery_wait_seconds, 9, "recovery_wait_seconds: rippled's wait in seconds, read");
}

static void a_utf8_bom_is_accepted_and_utf16_is_refused_by_name(void **state)
{
    fx *f = *state;
    tide_config c;
    static const char bom[] = "\xef\xbb\xbf[node_size]\r\nsmall\r\n[node]\r\ncache_age=45\r\n";
    static const char utf16[] = "\xff\xfe[\0n\0";

    tide_config_defaults(&c);
    assert_int_equal(th_write_file(f->path, bom, sizeof bom - 1), 0);
    expect_rc(tide_config_load_file(&c, f->path), 0, "a file that starts with a UTF-8 BOM");
    expect_str(tide_config_node_size_name(c.node_size), "small", "node_size after the BOM");
    expect_u64(c.cache_age, 45, "cache_age");

    tide_config_defaults(&c);
    assert_int_equal(th_write_file(f->path, utf16, sizeof utf16 - 1), 0);
    expect_rc(tide_config_load_file(&c, f->path), TIDE_EINVAL, "a UTF-16 file");
    expect_contains(tide_last_error(), ":1: the file is UTF-16", "message");

    /* Only at the start: a BOM inside the file is text, and wrong there. */
    expect_rc(load_all(f, &c, "[node]\n\xef\xbb\xbf" "cache_age=45\n", NULL, 0, NULL), TIDE_EINVAL, "a BOM on line 2");
    expect_contains(tide_last_error(), ":2: ", "message names line 2");
}

static void node_db_keys_of_rippled_are_noted_and_typos_of_tides_refused(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };

    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, "[node_db]\ntype=nudb\npath=/srv/xrpl\nage_threshold_seconds=60\nearliest_seq=32570\n"
                       "some_future_knob=7\n", NULL, 0, NULL), 0, "rippled's keys in [node_db]");
    expect_str(c.data_dir, "/srv/xrpl", "path");
    expect_contains(cap.text, ":4: [node_db] age_threshold_seconds is rippled's, not used by tide; ignored", "info line");
    expect_contains(cap.text, ":5: [node_db] earliest_seq is rippled's", "info line");
    expect_contains(cap.text, ":6: [node_db] some_future_knob=7: unknown key in [node_db], ignored", "warning");
    expect_u64((uint64_t)cap.warnings, 1, "only the key nobody documents warns");

    static const struct { const char *text; unsigned line; const char *part; } bad[] = {
        { "[node_db]\npaht=/srv/xrpl\n", 2, "[node_db] paht=/srv/xrpl: unknown key in [node_db]; did you mean path?" },
        { "[node_db]\nPath=/srv/xrpl\n", 2, "did you mean path?" },
        { "[node_db]\nnudb_blocksize=8192\n", 2, "did you mean nudb_block_size?" },
        { "[node_db]\ntpye=NuDB\n", 2, "did you mean type?" },
        { "[node]\nonline_delete=512\n", 2, "[node] online_delete=512: unknown key in [node] (the file writes "
          "online_delete as [node_db] online_delete_objects, its unit in the key" },
        { "[node_db]\npath /srv/xrpl\n", 2, "[node_db] path /srv/xrpl: expected key=value" },
        { "[server]\nport_rpc\n[node_size]\nlarge extra\n", 4, "[node_size] large extra: not a node size" },
        { "[node-db]\npath=/srv\n", 1, "[node-db]: unknown section; did you mean [node_db]?" },
        { "[nodedb]\n", 1, "did you mean [node_db]?" },
        { "[NODE_SIZE]\nlarge\n", 1, "did you mean [node_size]?" },
        { "[sweep_intervals]\n60\n", 1, "did you mean [sweep_interval]?" },
        { "[]\n", 1, "a section without a name" },
        { "[server\n", 1, "unterminated section" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_file_error(f, bad[i].text, bad[i].line, bad[i].part, i);
}

static void anything_goes_inside_a_skipped_section_and_hash_starts_a_comment(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };

    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, "[ips]\nr.ripple.com 51235\n= not an ini line\n[rpc_startup]\n"
                       "{ \"command\": \"log_level\" }\n[node_db]   # where the store lives\n"
                       "path = /srv/tide\\#1   # a literal hash, then a comment\n[node]\n"
                       "cache_age=1000# glued\n", NULL, 0, NULL), 0, "load");
    expect_str(c.data_dir, "/srv/tide#1", "\\# is a literal hash");
    expect_u64(c.cache_age, 1000, "a glued comment is cut too");
    expect_contains(cap.text, ":9: [node] cache_age=1000: the '#' after it starts a comment", "a warning for the glued one");
    expect_u64((uint64_t)cap.warnings, 1, "one warning");
    expect_contains(cap.text, ":1: section [ips] is not used by tide; skipped", "ips skipped");
    expect_contains(cap.text, ":4: section [rpc_startup] is not used by tide; skipped", "rpc_startup skipped");
}

/* ---- ranges: every numeric setting at each end, from each source ----------------- */

typedef struct bound_case { int id; const char *value; int ok; } bound_case;

/* Each numeric setting just inside and just outside each end of its range
 * (the sizes in bytes and in the unit the limit is stated in), and numbers
 * past 64 bits. The size limits are TIDE_CONFIG_BYTES_MAX, 4 PiB. */
static const bound_case bound_cases[] = {
    { TIDE_CFG_SWEEP_INTERVAL, "9", 0 },   { TIDE_CFG_SWEEP_INTERVAL, "10", 1 },
    { TIDE_CFG_SWEEP_INTERVAL, "600", 1 }, { TIDE_CFG_SWEEP_INTERVAL, "601", 0 },
    { TIDE_CFG_CACHE_TARGET, "0", 1 },     { TIDE_CFG_CACHE_TARGET, "4503599627370496", 1 },
    { TIDE_CFG_CACHE_TARGET, "4503599627370497", 0 },
    { TIDE_CFG_CACHE_TARGET, "18446744073709551616", 0 },
    { TIDE_CFG_CACHE_AGE, "0", 0 },        { TIDE_CFG_CACHE_AGE, "1", 1 },
    { TIDE_CFG_CACHE_AGE, "86400", 1 },    { TIDE_CFG_CACHE_AGE, "86401", 0 },
    { TIDE_CFG_CACHE_BUDGET, "0", 1 },     { TIDE_CFG_CACHE_BUDGET, "4PiB", 1 },
    { TIDE_CFG_CACHE_BUDGET, "4503599627370496", 1 },
    { TIDE_CFG_CACHE_BUDGET, "4503599627370497", 0 },
    { TIDE_CFG_CACHE_BUDGET, "4097TiB", 0 },
    { TIDE_CFG_CACHE_BUDGET, "9223372036854775808", 0 },     /* 2^63: 2x it wrapped to 0, no limit */
    { TIDE_CFG_CACHE_BUDGET, "18446744073709551615", 0 },
    { TIDE_CFG_CACHE_BUDGET, "18446744073709551616", 0 },
    { TIDE_CFG_INSERT_BURST, "0", 0 },     { TIDE_CFG_INSERT_BURST, "65535", 0 },
    { TIDE_CFG_INSERT_BURST, "64KiB", 1 }, { TIDE_CFG_INSERT_BURST, "4PiB", 1 },
    { TIDE_CFG_INSERT_BURST, "4503599627370497", 0 },
    { TIDE_CFG_INSERT_BURST, "9223372036854775808", 0 },
    { TIDE_CFG_KEY_CACHE_SIZE, "0", 1 },   { TIDE_CFG_KEY_CACHE_SIZE, "4503599627370496", 1 },
    { TIDE_CFG_KEY_CACHE_SIZE, "4503599627370497", 0 },
    { TIDE_CFG_KEY_CACHE_SIZE, "99999999999999999999", 0 },
    { TIDE_CFG_KEY_CACHE_AGE, "0", 0 },    { TIDE_CFG_KEY_CACHE_AGE, "1", 1 },
    { TIDE_CFG_KEY_CACHE_AGE, "86400", 1 }, { TIDE_CFG_KEY_CACHE_AGE, "86401", 0 },
    { TIDE_CFG_MMAP_THRESHOLD, "0", 1 },   { TIDE_CFG_MMAP_THRESHOLD, "32MiB", 1 },
    { TIDE_CFG_MMAP_THRESHOLD, "33554433", 0 },
    { TIDE_CFG_ARENA_MAX, "0", 0 },        { TIDE_CFG_ARENA_MAX, "1", 1 },
    { TIDE_CFG_ARENA_MAX, "4096", 1 },     { TIDE_CFG_ARENA_MAX, "4097", 0 },
    { TIDE_CFG_HTTP_THREADS, "0", 0 },     { TIDE_CFG_HTTP_THREADS, "1", 1 },
    { TIDE_CFG_HTTP_THREADS, "64", 1 },    { TIDE_CFG_HTTP_THREADS, "65", 0 },
    { TIDE_CFG_MAX_OBJECT_SIZE, "0", 0 },  { TIDE_CFG_MAX_OBJECT_SIZE, "1", 1 },
    { TIDE_CFG_MAX_OBJECT_SIZE, "256MiB", 1 }, { TIDE_CFG_MAX_OBJECT_SIZE, "268435457", 0 },
    { TIDE_CFG_LISTEN, "127.0.0.1:0", 0 }, { TIDE_CFG_LISTEN, "127.0.0.1:1", 1 },
    { TIDE_CFG_LISTEN, "127.0.0.1:65535", 1 }, { TIDE_CFG_LISTEN, "127.0.0.1:65536", 0 },
    { TIDE_CFG_LISTEN, "127.0.0.1:18446744073709551617", 0 },
    { TIDE_CFG_TRIM_POLICY, "every:0", 0 }, { TIDE_CFG_TRIM_POLICY, "every:1", 1 },
    { TIDE_CFG_TRIM_POLICY, "every:1000000", 1 }, { TIDE_CFG_TRIM_POLICY, "every:1000001", 0 },
    { TIDE_CFG_TRIM_POLICY, "every:18446744073709551616", 0 },
    { TIDE_CFG_TRIM_POLICY, "freed:0", 0 }, { TIDE_CFG_TRIM_POLICY, "freed:1", 1 },
    { TIDE_CFG_TRIM_POLICY, "freed:4PiB", 1 }, { TIDE_CFG_TRIM_POLICY, "freed:4503599627370497", 0 },
    { TIDE_CFG_TRIM_POLICY, "freed:18446744073709551615", 0 },
    { TIDE_CFG_TRIM_POLICY, "free-pct:0", 0 }, { TIDE_CFG_TRIM_POLICY, "free-pct:1", 1 },
    { TIDE_CFG_TRIM_POLICY, "free-pct:99", 1 }, { TIDE_CFG_TRIM_POLICY, "free-pct:100", 0 },
    { TIDE_CFG_MEMORY_LIMIT, "33554431", 0 }, { TIDE_CFG_MEMORY_LIMIT, "32MiB", 1 },
    { TIDE_CFG_MEMORY_LIMIT, "4PiB", 1 },     { TIDE_CFG_MEMORY_LIMIT, "4503599627370497", 0 },
    { TIDE_CFG_MEMORY_LIMIT, "18446744073709551616", 0 },
    { TIDE_CFG_MEMORY_HYSTERESIS, "0", 0 },   { TIDE_CFG_MEMORY_HYSTERESIS, "1", 1 },
    { TIDE_CFG_MEMORY_HYSTERESIS, "79", 1 },  { TIDE_CFG_MEMORY_HYSTERESIS, "100", 0 },
    { TIDE_CFG_MEMORY_POLL_MS, "9", 0 },      { TIDE_CFG_MEMORY_POLL_MS, "10", 1 },
    { TIDE_CFG_MEMORY_POLL_MS, "10000", 1 },  { TIDE_CFG_MEMORY_POLL_MS, "10001", 0 },
    { TIDE_CFG_MEMORY_PRESSURE, "0", 1 },     { TIDE_CFG_MEMORY_PRESSURE, "100", 1 },
    { TIDE_CFG_MEMORY_PRESSURE, "101", 0 },
    { TIDE_CFG_MEMORY_LEVELS, "6,7,100", 1 }, { TIDE_CFG_MEMORY_LEVELS, "80,90,101", 0 },
    { TIDE_CFG_MEMORY_LEVELS, "0,90,97", 0 },
    { TIDE_CFG_HTTP_HEADER_TIMEOUT, "0", 0 }, { TIDE_CFG_HTTP_HEADER_TIMEOUT, "1", 1 },
    { TIDE_CFG_HTTP_HEADER_TIMEOUT, "3600", 1 }, { TIDE_CFG_HTTP_HEADER_TIMEOUT, "3601", 0 },
    { TIDE_CFG_HTTP_BODY_MIN_RATE, "0", 1 },  { TIDE_CFG_HTTP_BODY_MIN_RATE, "1GiB", 1 },
    { TIDE_CFG_HTTP_BODY_MIN_RATE, "1073741825", 0 },
    { TIDE_CFG_HTTP_BODY_GRACE, "0", 1 },     { TIDE_CFG_HTTP_BODY_GRACE, "3600", 1 },
    { TIDE_CFG_HTTP_BODY_GRACE, "3601", 0 },
};

static void every_numeric_setting_is_range_checked_at_each_end_naming_its_source(void **state)
{
    fx *f = *state;

    for (size_t i = 0; i < sizeof bound_cases / sizeof bound_cases[0]; i++) {
        const bound_case *bc = &bound_cases[i];
        const char *name = tide_config_name(bc->id), *env_name = tide_config_env(bc->id);
        char text[256], envv[256], flag[256], what[320], want[900];
        const char *env[] = { envv, NULL };
        char *argv[] = { "tided", flag, NULL };
        tide_config c;
        int want_rc = bc->ok ? 0 : TIDE_EINVAL;

        snprintf(text, sizeof text, "# limits\n[node]\n%s=%s\n", name, bc->value);
        snprintf(envv, sizeof envv, "%s=%s", env_name, bc->value);
        snprintf(flag, sizeof flag, "%s=%s", tide_config_flag(bc->id), bc->value);

        snprintf(what, sizeof what, "file [node] %s=%s", name, bc->value);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), want_rc, what);
        if (bc->ok) {
            expect_u64((uint64_t)c.src[bc->id].kind, TIDE_SRC_FILE, what);
        } else {
            snprintf(want, sizeof want, "%s:3: [node] %s=%s: ", f->path, name, bc->value);
            if (strncmp(tide_last_error(), want, strlen(want)) != 0)
                fail_msg("%s: expected the message to start with '%s', got '%s'", what, want, tide_last_error());
        }

        expect_rc(load_all(f, &c, NULL, env, 0, NULL), want_rc, envv);
        if (bc->ok) expect_u64((uint64_t)c.src[bc->id].kind, TIDE_SRC_ENV, envv);
        else {
            snprintf(want, sizeof want, "%s: ", envv);
            expect_contains(tide_last_error(), want, envv);
        }

        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), want_rc, flag);
        if (bc->ok) expect_u64((uint64_t)c.src[bc->id].kind, TIDE_SRC_FLAG, flag);
        else {
            snprintf(want, sizeof want, "%s: ", flag);
            expect_contains(tide_last_error(), want, flag);
        }
    }
}

static void the_size_limits_are_stated_and_a_refusal_names_them(void **state)
{
    fx *f = *state;
    tide_config c;
    char r[160];
    const char *env[] = { "TIDE_CACHE_BUDGET=9223372036854775808", NULL };

    expect_u64(TIDE_CONFIG_BYTES_MAX, 1ull << 52, "TIDE_CONFIG_BYTES_MAX on a 64-bit build");
    tide_config_range_text(TIDE_CFG_CACHE_BUDGET, r, sizeof r);
    expect_str(r, "0 to 4PiB", "cache_budget's range");
    tide_config_range_text(TIDE_CFG_INSERT_BURST, r, sizeof r);
    expect_str(r, "64KiB to 4PiB", "insert_burst's range");
    tide_config_range_text(TIDE_CFG_MAX_OBJECT_SIZE, r, sizeof r);
    expect_str(r, "1 to 256MiB", "max_object_size's range");
    tide_config_range_text(TIDE_CFG_MMAP_THRESHOLD, r, sizeof r);
    expect_str(r, "0 to 32MiB", "mmap_threshold's range");
    tide_config_range_text(TIDE_CFG_SWEEP_INTERVAL, r, sizeof r);
    expect_str(r, "10 to 600", "sweep_interval's range");
    tide_config_range_text(TIDE_CFG_CACHE_TARGET, r, sizeof r);
    expect_str(r, "0 to 4503599627370496 (2^52)", "cache_target's range");
    tide_config_range_text(TIDE_CFG_LISTEN, r, sizeof r);
    expect_str(r, "port 1 to 65535", "listen's range");
    expect_u64(tide_config_range_text(TIDE_CFG_LOG_LEVEL, r, sizeof r), 0, "log_level has no range");

    expect_rc(load_all(f, &c, NULL, env, 0, NULL), TIDE_EINVAL, "2^63 bytes");
    expect_contains(tide_last_error(), "TIDE_CACHE_BUDGET=9223372036854775808: 9223372036854775808 bytes is "
                    "outside 0..4503599627370496 bytes (0 to 4PiB)", "the message states the range");
    expect_rc(load_all(f, &c, "[node]\ncache_budget=4PiB\n", NULL, 0, NULL), 0, "4PiB");
    expect_u64(c.cache_budget, 1ull << 52, "4PiB in bytes");
    expect_contains(describe(&c), "cache_budget=4PiB(file ", "describe writes it back as it is stated");
}

static void a_node_budget_whose_double_overflows_saturates_the_hard_limit(void **state)
{
    fx *f = *state;
    static const size_t budgets[] = { (size_t)1 << 52, SIZE_MAX / 2, SIZE_MAX / 2 + 1,
                                      (size_t)1 << 63, (SIZE_MAX / 2 + 1) + ((size_t)1 << 20), SIZE_MAX };

    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        tide_node_opts o;
        tide_node *n = NULL;
        char dir[700], what[96];

        snprintf(dir, sizeof dir, "%s/node%zu", f->dir, i);
        snprintf(what, sizeof what, "open with cache_budget %zu", budgets[i]);
        tide_node_opts_init(&o);
        o.dir = dir;
        o.sweep_interval_ms = 0;
        o.count_keys_max_bytes = 0;
        o.cache_budget = budgets[i];
        /* Before: 2 * budget wrapped below the budget and the cache
         * refused it ("budget_bytes ... is above hard_limit_bytes ..."),
         * or wrapped to 0 at 2^63, which means no limit. */
        expect_rc(tide_node_open(&n, &o), 0, what);
        expect_rc(tide_node_close(n), 0, "close");
    }
}

/* ---- path lengths --------------------------------------------------------------------- */

static void a_data_dir_too_long_for_path_max_is_refused_from_every_source_never_cut(void **state)
{
    fx *f = *state;
    static const size_t lens[] = { TIDE_CONFIG_DATA_DIR_MAX, TIDE_CONFIG_DATA_DIR_MAX + 1, 4095, 4096, 5000, 70000 };
    size_t big = 70000 + 64;
    char *dir = malloc(big), *text = malloc(big + 64), *envv = malloc(big + 64), *flag = malloc(big + 64);

    if (!dir || !text || !envv || !flag) fail_msg("malloc: expected memory, got none");
    expect_u64(TIDE_CONFIG_DATA_DIR_MAX, 4086, "4096 less \"/nudb.dat\" and its NUL");
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        int ok = n <= TIDE_CONFIG_DATA_DIR_MAX;
        const char *env[] = { envv, NULL };
        char *argv[] = { "tided", flag, NULL };
        char what[96], want[160];
        tide_config c;

        dir[0] = '/';
        memset(dir + 1, 'd', n - 1);
        dir[n] = '\0';
        snprintf(text, big + 64, "[node_db]\npath=%s\n", dir);
        snprintf(envv, big + 64, "TIDE_DATA_DIR=%s", dir);
        snprintf(flag, big + 64, "--data-dir=%s", dir);
        snprintf(want, sizeof want, "path is %zu bytes, longer than 4086 bytes", n);

        snprintf(what, sizeof what, "TIDE_DATA_DIR of %zu bytes", n);
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), ok ? 0 : TIDE_EINVAL, what);
        if (ok) expect_str(c.data_dir, dir, what);
        else {
            expect_contains(tide_last_error(), "TIDE_DATA_DIR=/ddd", what);
            expect_contains(tide_last_error(), want, what);
        }
        snprintf(what, sizeof what, "--data-dir of %zu bytes", n);
        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), ok ? 0 : TIDE_EINVAL, what);
        if (ok) expect_str(c.data_dir, dir, what);
        else expect_contains(tide_last_error(), want, what);
        snprintf(what, sizeof what, "[node_db] path of %zu bytes", n);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), ok ? 0 : TIDE_EINVAL, what);
        if (ok) expect_str(c.data_dir, dir, what);
        else {
            expect_contains(tide_last_error(), ":2: [node_db] path=/ddd", what);
            expect_contains(tide_last_error(), want, what);
        }
    }

    /* The other long values from the environment: refused whole, by name. */
    static const struct { const char *name; size_t len; const char *part; int secret; } others[] = {
        { "TIDE_LISTEN", 5000, "(5000 bytes): longer than 287 bytes", 0 },
        { "TIDE_METRICS_TOKEN", 5000, "TIDE_METRICS_TOKEN: longer than 255 bytes", 1 },
        { "TIDE_ADMIN_TOKEN", 256, "TIDE_ADMIN_TOKEN: longer than 255 bytes", 1 },
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        const char *env[] = { envv, NULL };
        tide_config c;
        int w = snprintf(envv, big + 64, "%s=", others[i].name);
        memset(envv + w, 'a', others[i].len);
        envv[w + (int)others[i].len] = '\0';
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), TIDE_EINVAL, others[i].name);
        expect_contains(tide_last_error(), others[i].part, others[i].name);
        if (others[i].secret && strstr(tide_last_error(), "aaaaaaaa") != NULL)
            fail_msg("%s: expected the secret's text kept out of the message, got '%s'", others[i].name,
                     tide_last_error());
    }
    free(dir); free(text); free(envv); free(flag);
}

/* ---- the startup log --------------------------------------------------------------- */

static void startup_log_reads_as_a_checklist_and_warns_about_a_block_size_mismatch(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char data[700];
    const char *env[] = { "TIDE_CACHE_BUDGET=0", "TIDE_METRICS_TOKEN=m3trics-tok", NULL };
    char *argv[] = { "tided", "--data-dir", data, "--nudb-block-size", "16384", NULL };
    tide_store_create_opts co;

    th_path(data, sizeof data, f->dir, "store");
    assert_int_equal(mkdir(data, 0755), 0);
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    co.block_size = 4096;
    expect_rc(tide_store_create(data, &co), 0, "create a 4096-byte-block store");
    expect_rc(load_all(f, &c, NULL, env, 5, argv), 0, "load");
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);

    expect_contains(cap.text, "settings [node]: node_size=", "the settings line of the node group");
    expect_contains(cap.text, "cache_budget=0(env TIDE_CACHE_BUDGET)", "a setting with its source");
    expect_contains(cap.text, "allocator: ", "the allocator line");
    expect_contains(cap.text, "Using NuDB block size: 4096 bytes", "the store's own block size");
    expect_contains(cap.text, "tide rekey", "the mismatch warning names the fix");
    expect_contains(cap.text, "unbounded: node_cache", "the unbounded node cache");
    expect_contains(cap.text, "--cache-budget", "how to bound it");
    expect_contains(cap.text, "TIDE_ADMIN_TOKEN", "how to enable the admin endpoints");
    if (strstr(cap.text, "m3trics") != NULL) fail_msg("the startup log printed the metrics token");
    if (cap.warnings < 2) fail_msg("expected at least 2 warnings (block size, node cache), got %d", cap.warnings);
}

static void startup_log_for_a_new_store_uses_the_configured_block_size_without_warning(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char data[700];
    char *argv[] = { "tided", "--data-dir", data, "--nudb-block-size", "8192", "--arena-max", "2", NULL };

    th_path(data, sizeof data, f->dir, "none-yet");
    expect_rc(load_all(f, &c, NULL, NULL, 7, argv), 0, "load");
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_contains(cap.text, "Using NuDB block size: 8192 bytes (a new store will be created in", "block size");
    expect_contains(cap.text, "/metrics answers 401", "how to enable scraping");
    if (strstr(cap.text, "tide rekey") != NULL) fail_msg("no mismatch warning expected; got: %s", cap.text);
    if (strstr(cap.text, "unbounded: node_cache") != NULL) fail_msg("the preset bounds the node cache");
}

static void trim_policy_is_a_setting_with_its_errors_named(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;
    char *argv[] = { "tided", "--trim-policy", "every:4", NULL };
    char *bad[] = { "tided", "--trim-policy=free-pct:150", NULL };
    const char *env[] = { "TIDE_TRIM_POLICY=freed:1MiB", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_contains(describe(&c), "trim_policy=always(default)", "the default");
    expect_rc(load_all(f, &c, NULL, env, 3, argv), 0, "flag over env");
    expect_contains(describe(&c), "trim_policy=every:4(flag --trim-policy)", "describe");
    tide_startup_node_opts(&c, &o);
    expect_u64((uint64_t)o.trim_policy, TIDE_TRIM_EVERY, "node policy");
    expect_u64(o.trim_param, 4, "node policy's N");
    expect_rc(load_all(f, &c, "[node]\ntrim_policy=never\n", NULL, 0, NULL), 0, "file");
    expect_u64((uint64_t)c.trim_policy, TIDE_TRIM_NEVER, "never from the file");
    expect_rc(load_all(f, &c, NULL, NULL, 2, bad), TIDE_EINVAL, "free-pct:150");
    expect_contains(tide_last_error(), "--trim-policy=free-pct:150: free-pct:P needs P from 1 to 99", "message");
}

static void startup_node_opts_follow_the_settings(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;
    char *argv[] = { "tided", "--node-size", "small", "--sweep-interval", "45", "--key-cache-size", "99", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 7, argv), 0, "load");
    tide_startup_node_opts(&c, &o);
    expect_str(o.dir, "./data", "dir");
    expect_u64(o.sweep_interval_ms, 45000, "sweep interval in ms");
    expect_u64(o.cache_target, 524288, "small preset's cache target");
    expect_u64(o.cache_age_s, 60, "small preset's cache age");
    expect_u64(o.cache_budget, 256 * MiB, "small preset's budget");
    expect_u64(o.insert_burst, 8 * MiB, "small preset's insert burst");
    expect_u64(o.key_cache_size, 99, "key cache size");
}

typedef struct seen { char text[1024]; int n; } seen;

static void record_unbounded(void *arg, const char *consumer, const char *how)
{
    seen *s = arg;
    char line[256];
    snprintf(line, sizeof line, "%s: %s\n", consumer, how);
    strncat(s->text, line, sizeof s->text - strlen(s->text) - 1);
    s->n++;
}

static void unbounded_names_each_unbounded_consumer_and_the_setting_that_bounds_it(void **state)
{
    fx *f = *state;
    tide_config c;
    seen s = { "", 0 };
    const char *env[] = { "TIDE_CACHE_BUDGET=0", NULL };

    /* insert_burst cannot be 0: the store's pool is always bounded, so it
     * is never on the list. */
    expect_rc(load_all(f, &c, "[node]\nkey_cache_size=0\n", env, 0, NULL), 0, "load");
    expect_u64((uint64_t)tide_config_unbounded(&c, TIDE_MEM_ALLOC_GLIBC, record_unbounded, &s), 4, "count");
    expect_u64((uint64_t)s.n, 4, "callbacks");
    expect_str(s.text,
               "node_cache: set --cache-budget / TIDE_CACHE_BUDGET / [node] cache_budget\n"
               "key_cache: set --key-cache-size / TIDE_KEY_CACHE_SIZE / [node] key_cache_size\n"
               "malloc_arenas: set --arena-max / TIDE_ARENA_MAX / [node] arena_max\n"
               "process: set --memory-limit / TIDE_MEMORY_LIMIT / [node] memory_limit, or run tided in a "
               "cgroup with a memory limit\n",
               "unbounded list (no memory limit and no cgroup's, so the process is unbounded)");
    {
        tide_config zero;
        expect_rc(load_all(f, &zero, "[node]\ninsert_burst=0\n", NULL, 0, NULL), TIDE_EINVAL, "insert_burst=0");
        expect_contains(tide_last_error(), "insert_burst", "insert_burst=0 is refused by name");
    }

    /* Under another allocator arena_max bounds nothing: not listed. */
    memset(&s, 0, sizeof s);
    expect_u64((uint64_t)tide_config_unbounded(&c, TIDE_MEM_ALLOC_JEMALLOC, record_unbounded, &s), 3,
               "count under jemalloc");
    if (strstr(s.text, "malloc_arenas") != NULL) fail_msg("malloc_arenas listed under jemalloc: %s", s.text);

    char *argv[] = { "tided", "--arena-max=4", "--memory-limit=1GiB", NULL };
    memset(&s, 0, sizeof s);
    expect_rc(load_all(f, &c, NULL, NULL, 3, argv), 0, "load with arena_max and memory_limit");
    expect_u64((uint64_t)tide_config_unbounded(&c, TIDE_MEM_ALLOC_GLIBC, record_unbounded, &s), 0, "count when all bounded");
    expect_str(s.text, "", "unbounded list when all bounded");
}

/* ---- online delete --------------------------------------------------------------------- */

/* Every online delete setting: its value and its source after a load. */
typedef struct od_case { int id; const char *value; uint64_t want; } od_case;

static const od_case od_cases[] = {
    { TIDE_CFG_ONLINE_DELETE, "5000", 5000 },   { TIDE_CFG_GENERATIONS, "3", 3 },
    { TIDE_CFG_ROTATION_MAX_RSS, "2GiB", 2ull << 30 },
    { TIDE_CFG_ADVISORY_DELETE, "1", 1 },       { TIDE_CFG_ROTATE_BYTES, "1GiB", GiB },
    { TIDE_CFG_ROTATE_INTERVAL, "3600", 3600 }, { TIDE_CFG_DELETE_BATCH, "50", 50 },
    { TIDE_CFG_BACK_OFF_MS, "10", 10 },         { TIDE_CFG_DELETE_CHUNK, "1MiB", MiB },
    { TIDE_CFG_RECOVERY_WAIT, "2", 2 },         { TIDE_CFG_ROTATION_WAIT_MAX, "60", 60 },
    { TIDE_CFG_TRIM_AFTER_ROTATION, "0", 0 },
};

static uint64_t od_value(const tide_config *c, int id)
{
    switch (id) {
    case TIDE_CFG_ONLINE_DELETE:       return c->online_delete;
    case TIDE_CFG_GENERATIONS:         return c->generations;
    case TIDE_CFG_ROTATION_MAX_RSS:    return c->rotation_max_rss;
    case TIDE_CFG_ADVISORY_DELETE:     return (uint64_t)c->advisory_delete;
    case TIDE_CFG_ROTATE_BYTES:        return c->rotate_bytes;
    case TIDE_CFG_ROTATE_INTERVAL:     return c->rotate_interval;
    case TIDE_CFG_DELETE_BATCH:        return c->delete_batch;
    case TIDE_CFG_BACK_OFF_MS:         return c->back_off_milliseconds;
    case TIDE_CFG_DELETE_CHUNK:        return c->delete_chunk;
    case TIDE_CFG_RECOVERY_WAIT:       return c->recovery_wait_seconds;
    case TIDE_CFG_ROTATION_WAIT_MAX:   return c->rotation_wait_max_seconds;
    case TIDE_CFG_TRIM_AFTER_ROTATION: return (uint64_t)c->trim_after_rotation;
    default: fail_msg("od_value: setting %d is not an online delete one", id);
    }
    return 0;
}

static void online_delete_settings_are_off_by_default_and_read_from_flag_env_and_file(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_u64(c.online_delete_on, 0, "online delete is off by default");
    expect_u64(c.online_delete, 0, "no object trigger");
    expect_u64(c.generations, 2, "2 generations, as rippled's two backends");
    expect_u64(c.advisory_delete, 0, "advisory_delete");
    expect_u64(c.delete_batch, 100, "delete_batch");
    expect_u64(c.back_off_milliseconds, 100, "back_off_milliseconds");
    expect_u64(c.delete_chunk, 64 * MiB, "delete_chunk");
    expect_u64(c.recovery_wait_seconds, 5, "recovery_wait_seconds");
    expect_u64(c.rotation_wait_max_seconds, 300, "rotation_wait_max_seconds");
    expect_u64(c.trim_after_rotation, 1, "trim_after_rotation");
    /* G not set: the node is given 0 (the manifest's keep), and the
     * settings line says so, not "2" (a default of 2 would shrink a keep-4
     * ring restarted without --generations to 2). */
    expect_contains(describe(&c), "online_delete=0(default) generations=manifest(not set: the manifest's keep, "
                    "2 for a new directory)", "describe");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.generations, 0, "node opts: G not set is 0, the manifest's keep");
    {
        char fileg[] = "[node_db]\ntype=NuDB\ngenerations=3\n";
        const char *envg[] = { "TIDE_GENERATIONS=5", NULL };
        expect_rc(load_all(f, &c, fileg, NULL, 0, NULL), 0, "generations in the file");
        tide_startup_node_opts(&c, &o);
        expect_u64(o.generations, 3, "node opts: the file's G is passed");
        expect_contains(describe(&c), "generations=3(file ", "describe: the file's G");
        expect_rc(load_all(f, &c, NULL, envg, 0, NULL), 0, "generations in the environment");
        tide_startup_node_opts(&c, &o);
        expect_u64(o.generations, 5, "node opts: the environment's G is passed");
    }

    for (size_t i = 0; i < sizeof od_cases / sizeof od_cases[0]; i++) {
        const od_case *oc = &od_cases[i];
        char text[256], envv[256], flag[256], where[700];
        const char *env[] = { envv, NULL };
        char *argv[] = { "tided", flag, NULL };

        snprintf(text, sizeof text, "[node_db]\ntype=NuDB\n%s=%s\n", tide_config_file_key(oc->id), oc->value);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), 0, text);
        expect_u64(od_value(&c, oc->id), oc->want, text);
        snprintf(where, sizeof where, "%s:3", f->path);
        expect_str(c.src[oc->id].where, where, text);

        snprintf(envv, sizeof envv, "%s=%s", tide_config_env(oc->id), oc->value);
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), 0, envv);
        expect_u64(od_value(&c, oc->id), oc->want, envv);
        expect_u64((uint64_t)c.src[oc->id].kind, TIDE_SRC_ENV, envv);

        snprintf(flag, sizeof flag, "%s=%s", tide_config_flag(oc->id), oc->value);
        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), 0, flag);
        expect_u64(od_value(&c, oc->id), oc->want, flag);
        expect_u64((uint64_t)c.src[oc->id].kind, TIDE_SRC_FLAG, flag);
    }

    /* "manual": generations on, no object trigger; 0: off again. */
    char *manual[] = { "tided", "--online-delete", "manual", "--generations=4", "--rotate-bytes=8MiB",
                       "--rotation-max-rss=3GiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 6, manual), 0, "--online-delete manual");
    expect_u64(c.online_delete_on, 1, "manual turns generations on");
    expect_u64(c.online_delete, 0, "manual has no object trigger");
    expect_contains(describe(&c), "online_delete=manual(flag --online-delete)", "describe says manual");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.online_delete_on, 1, "node opts: on");
    expect_u64(o.online_delete, 0, "node opts: no object trigger");
    expect_u64(o.generations, 4, "node opts: generations");
    expect_u64(o.rotate_bytes, 8 * MiB, "node opts: rotate_bytes");
    expect_u64(o.delete_chunk, 64 * MiB, "node opts: delete_chunk");
    expect_u64(o.trim_after_rotation, 1, "node opts: trim_after_rotation");
    expect_u64(o.rotation_max_rss, 3ull << 30, "node opts: rotation_max_rss");

    const char *env0[] = { "TIDE_ONLINE_DELETE=0", NULL };
    char *on[] = { "tided", "--online-delete=7", NULL };
    expect_rc(load_all(f, &c, "[node_db]\nonline_delete_objects=manual\n", env0, 2, on), 0, "file, env and flag");
    expect_u64(c.online_delete_on, 1, "the flag wins");
    expect_u64(c.online_delete, 7, "the flag's count");
    expect_rc(load_all(f, &c, "[node_db]\nonline_delete_objects=manual\n", env0, 0, NULL), 0, "file and env");
    expect_u64(c.online_delete_on, 0, "TIDE_ONLINE_DELETE=0 over the file turns it off");
}

/* store_key_map: on by default; off from the file, the environment or a
 * flag reaches the node as store_key_map 0; a bad value is a clear error
 * naming the line. */
static void store_key_map_is_on_by_default_and_off_reaches_the_node(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;
    const char *env[] = { "TIDE_STORE_KEY_MAP=off", NULL };
    char *argv[] = { "tided", "--store-key-map", "0", NULL };
    char *on[] = { "tided", "--store-key-map=on", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_u64((uint64_t)c.store_key_map, 1, "on by default");
    expect_contains(describe(&c), "store_key_map=on(default)", "describe");
    tide_startup_node_opts(&c, &o);
    expect_u64((uint64_t)o.store_key_map, 1, "node opts: the map");
    expect_rc(load_all(f, &c, "[node]\nstore_key_map=off\n", NULL, 0, NULL), 0, "off in the file");
    expect_u64((uint64_t)c.store_key_map, 0, "the file's off");
    tide_startup_node_opts(&c, &o);
    expect_u64((uint64_t)o.store_key_map, 0, "node opts: pread");
    expect_rc(load_all(f, &c, NULL, env, 0, NULL), 0, "off in the environment");
    expect_u64((uint64_t)c.store_key_map, 0, "the environment's off");
    expect_contains(describe(&c), "store_key_map=off(env TIDE_STORE_KEY_MAP)", "describe: env");
    expect_rc(load_all(f, &c, NULL, NULL, 3, argv), 0, "--store-key-map 0");
    expect_u64((uint64_t)c.store_key_map, 0, "the flag's 0");
    expect_rc(load_all(f, &c, "[node]\nstore_key_map=off\n", env, 2, on), 0, "file, env and flag");
    expect_u64((uint64_t)c.store_key_map, 1, "the flag wins");
    expect_file_error(f, "[node]\nstore_key_map=sometimes\n", 2,
                      "[node] store_key_map=sometimes: not 1/0, true/false, yes/no or on/off", 0);
}

/* One name per setting: its flag is its name with '-' for '_' (the
 * tokens and their files have none), its variable TIDE_ and the name in
 * capitals; the name is its tide_config field's too (FIELD, config_impl.h). */
static void every_settings_flag_and_variable_spell_its_name(void **state)
{
    (void)state;
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const char *name = tide_config_name(id), *flag = tide_config_flag(id);
        char want_flag[80], want_env[80];
        size_t n = strlen(name);

        assert_true(n + sizeof "TIDE_" < sizeof want_env);
        snprintf(want_flag, sizeof want_flag, "--%s", name);
        snprintf(want_env, sizeof want_env, "TIDE_%s", name);
        for (size_t i = 0; i < n; i++) {
            if (want_flag[2 + i] == '_') want_flag[2 + i] = '-';
            if (want_env[5 + i] >= 'a' && want_env[5 + i] <= 'z') want_env[5 + i] = (char)(want_env[5 + i] - 'a' + 'A');
        }
        expect_str(tide_config_env(id), want_env, name);
        if (flag != NULL) expect_str(flag, want_flag, name);
    }
}

/* The node cache's arena: on, 2 MiB segments, a reserve of 1 and 64 MiB
 * evacuated per sweep by default; each from the file, the environment or a
 * flag reaches the node; a segment that is not a power of two, a reserve
 * or a segment out of range are clear errors naming the setting. */
static void cache_arena_settings_have_defaults_reach_the_node_and_refuse_bad_values(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;
    const char *env[] = { "TIDE_CACHE_ARENA_EVACUATE=0", NULL };
    char *argv[] = { "tided", "--cache-arena", "off", "--cache-arena-reserve", "3", "--cache-arena-hugepages",
                     "on", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_contains(describe(&c), "cache_arena=on(default) cache_arena_segment=2MiB(default) "
                    "cache_arena_reserve=1(default) cache_arena_evacuate=64MiB(default) "
                    "cache_arena_hugepages=off(default)", "describe");
    tide_startup_node_opts(&c, &o);
    expect_u64((uint64_t)o.cache_arena, 1, "node opts: the arena on");
    expect_u64(o.cache_arena_segment, 2u << 20, "node opts: the segment");
    expect_u64(o.cache_arena_reserve, 1, "node opts: the reserve");
    expect_u64(o.cache_arena_evacuate, 64u << 20, "node opts: the evacuation budget");
    expect_u64((uint64_t)o.cache_arena_hugepages, 0, "node opts: no huge pages");
    expect_rc(load_all(f, &c, "[node]\ncache_arena_segment=64KiB\n", env, 7, argv), 0,
              "file, environment and flags");
    tide_startup_node_opts(&c, &o);
    expect_u64((uint64_t)o.cache_arena, 0, "the flag's off");
    expect_u64(o.cache_arena_segment, 64u << 10, "the file's segment");
    expect_u64(o.cache_arena_reserve, 3, "the flag's reserve");
    expect_u64(o.cache_arena_evacuate, 0, "the environment's 0: no evacuation");
    expect_u64((uint64_t)o.cache_arena_hugepages, 1, "the flag's huge pages");
    expect_u64(o.trim_pad, 0, "no trim pad by default");
    expect_contains(describe(&c), "cache_arena_evacuate=0(env TIDE_CACHE_ARENA_EVACUATE)", "describe: env");
    expect_file_error(f, "[node]\ncache_arena_segment=3MiB\n", 2,
                      "[node] cache_arena_segment=3MiB: 3145728 bytes is not a power of two", 0);
    expect_file_error(f, "[node]\ncache_arena_segment=32KiB\n", 2,
                      "[node] cache_arena_segment=32KiB: 32768 bytes is outside 65536..1073741824", 0);
    expect_file_error(f, "[node]\ncache_arena_reserve=1025\n", 2,
                      "[node] cache_arena_reserve=1025: 1025 is outside 0..1024", 0);
    expect_file_error(f, "[node]\ncache_arena_hugepages=2\n", 2,
                      "[node] cache_arena_hugepages=2: not 1/0, true/false, yes/no or on/off", 0);
    expect_file_error(f, "[node]\ncache_arena=maybe\n", 2,
                      "[node] cache_arena=maybe: not 1/0, true/false, yes/no or on/off", 0);
    expect_rc(load_all(f, &c, "[node]\ntrim_pad=1MiB\n", NULL, 0, NULL), 0, "a trim pad from the file");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.trim_pad, 1u << 20, "the file's trim pad");
    expect_file_error(f, "[node]\ntrim_pad=2GiB\n", 2,
                      "[node] trim_pad=2GiB: 2147483648 bytes is outside 0..1073741824", 0);
}

static void online_delete_bad_values_are_clear_errors_naming_the_line(void **state)
{
    fx *f = *state;
    tide_config c;
    static const struct { const char *text; unsigned line; const char *part; } bad[] = {
        { "[node_db]\nonline_delete_objects=-1\n", 2,
          "[node_db] online_delete_objects=-1: not a number of objects or 'manual'" },
        { "[node_db]\nonline_delete_objects=lots\n", 2,
          "online_delete_objects=lots: not a number of objects or 'manual'" },
        { "[node_db]\nonline_delete_objects=4503599627370497\n", 2, "is outside 0..4503599627370496 (or 'manual')" },
        { "[node_db]\ntype=NuDB\ngenerations=1\n", 3, "[node_db] generations=1: 1 is outside 2..64" },
        { "[node_db]\ngenerations=65\n", 2, "65 is outside 2..64" },
        { "[node_db]\nadvisory_delete=2\n", 2, "advisory_delete=2: not 1/0" },
        { "[node_db]\nrotate_bytes=12XB\n", 2, "rotate_bytes=12XB: not a size" },
        { "[node_db]\nrotate_interval=31536001\n", 2, "31536001 is outside 0..31536000" },
        { "[node_db]\ndelete_batch_keys=0\n", 2, "delete_batch_keys=0: 0 is outside 1..1000000" },
        { "[node_db]\nback_off_milliseconds=60001\n", 2, "60001 is outside 0..60000" },
        { "[node_db]\ndelete_chunk=100\n", 2, "delete_chunk=100: 100 bytes is outside 4096.." },
        { "[node_db]\nrecovery_wait_seconds=0\n", 2, "0 is outside 1..3600" },
        { "[node_db]\nrotation_wait_max_seconds=0\n", 2, "0 is outside 1..604800" },
        { "[node_db]\ntrim_after_rotation=maybe\n", 2, "trim_after_rotation=maybe: not 1/0" },
        { "[node_db]\nonline_delet=5\n", 2, "unknown key in [node_db]; did you mean online_delete_objects?" },
        { "[node_db]\nonline_delete_object=5\n", 2, "did you mean online_delete_objects?" },
        { "[node_db]\ndelete_batch_key=5\n", 2, "did you mean delete_batch_keys?" },
        { "[node_db]\ngeneration=3\n", 2, "did you mean generations?" },
        { "[node]\ngenerations=3\n", 2, "generations belongs in [node_db]" },
        { "[node_db]\nonline_delete_objects=5\nonline_delete_objects=6\n", 3,
          "duplicate key (online_delete first set at" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_file_error(f, bad[i].text, bad[i].line, bad[i].part, i);

    const char *env[] = { "TIDE_GENERATIONS=1", NULL };
    expect_rc(load_all(f, &c, NULL, env, 0, NULL), TIDE_EINVAL, "TIDE_GENERATIONS=1");
    expect_contains(tide_last_error(), "TIDE_GENERATIONS=1: 1 is outside 2..64", "the variable is named");
    char *argv[] = { "tided", "--online-delete=some", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, argv), TIDE_EINVAL, "--online-delete=some");
    expect_contains(tide_last_error(), "--online-delete=some: not a number of objects or 'manual'", "the flag");
}

static void with_online_delete_off_the_startup_log_warns_of_an_unbounded_disk(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char data[700], help[2048];
    char *argv[] = { "tided", "--data-dir", data, "--generations=3", NULL };

    th_path(data, sizeof data, f->dir, "none-yet");
    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, NULL, NULL, 4, argv), 0, "load");
    expect_contains(cap.text, "generations (--generations) has no effect: online_delete is 0 (off)", "moot warning");
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_contains(cap.text, "unbounded: disk grows without bound: online_delete is 0 (off)", "the disk warning");
    expect_contains(cap.text, "--online-delete / TIDE_ONLINE_DELETE / [node_db] online_delete_objects (N objects",
                    "how to bound it");

    memset(&cap, 0, sizeof cap);
    char *on[] = { "tided", "--data-dir", data, "--online-delete=1000", NULL };
    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, NULL, NULL, 4, on), 0, "load with online delete");
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    if (strstr(cap.text, "disk grows without bound") != NULL) fail_msg("online delete is on: %s", cap.text);

    tide_config_help(TIDE_CFG_ONLINE_DELETE, help, sizeof help);
    expect_contains(help, "    --online-delete N|manual\n", "help heading");
    expect_contains(help, "Range: 0 (off), 1 to 4503599627370496 (2^52) objects, or manual.", "help range");
    expect_contains(help, "Environment TIDE_ONLINE_DELETE; file [node_db] online_delete_objects.", "help keys");
    tide_config_help(TIDE_CFG_DELETE_BATCH, help, sizeof help);
    expect_contains(help, "Environment TIDE_DELETE_BATCH; file [node_db] delete_batch_keys.", "help keys");
    tide_config_help(TIDE_CFG_BACK_OFF_MS, help, sizeof help);
    expect_contains(help, "Default: 100.", "back_off default from the row");
}

/* ---- the memory limit ----------------------------------------------------------------- */

/* Every memory setting: a value other than its default, what it reads as,
 * and how describe shows it. */
typedef struct mem_case { int id; const char *value; const char *shown; } mem_case;

static const mem_case mem_cases[] = {
    { TIDE_CFG_MEMORY_LIMIT, "512MiB", "512MiB" },
    { TIDE_CFG_MEMORY_LEVELS, "70, 85,95", "70,85,95" },
    { TIDE_CFG_MEMORY_HYSTERESIS, "3", "3" },
    { TIDE_CFG_MEMORY_POLL_MS, "250", "250" },
    { TIDE_CFG_MEMORY_PRESSURE, "0", "0" },
};

static uint64_t mem_value(const tide_config *c, int id)
{
    switch (id) {
    case TIDE_CFG_MEMORY_LIMIT:      return c->memory_limit;
    case TIDE_CFG_MEMORY_LEVELS:     return c->memory_levels[1] * 10000u + c->memory_levels[2] * 100u + c->memory_levels[3];
    case TIDE_CFG_MEMORY_HYSTERESIS: return c->memory_hysteresis;
    case TIDE_CFG_MEMORY_POLL_MS:    return c->memory_poll_milliseconds;
    case TIDE_CFG_MEMORY_PRESSURE:   return c->memory_pressure;
    default: fail_msg("mem_value: setting %d is not a memory one", id);
    }
    return 0;
}

static const uint64_t mem_wants[] = { 512 * MiB, 708595, 3, 250, 0 };

static void memory_settings_have_defaults_and_are_read_from_flag_env_and_file_with_their_source(void **state)
{
    fx *f = *state;
    tide_config c;

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_contains(describe(&c), "memory_limit=none(default) memory_levels=80,90,97(default) "
                    "memory_hysteresis=5(default) memory_poll_milliseconds=100(default) "
                    "memory_pressure=10(default)", "describe: the defaults");
    expect_u64(c.memory_levels[0], 0, "pct[0] is unused (mem/overload.h)");
    expect_u64(c.key_cache_hard_limit, 0, "no limit: the node's own key cache hard limit");
    for (size_t i = 0; i < sizeof mem_cases / sizeof mem_cases[0]; i++) {
        const mem_case *mc = &mem_cases[i];
        char text[256], envv[256], flag[256], want[900], one[64];
        const char *env[] = { envv, NULL };
        char *argv[] = { "tided", flag, NULL };

        snprintf(text, sizeof text, "[node]\n# a comment\n%s=%s\n", tide_config_name(mc->id), mc->value);
        expect_rc(load_all(f, &c, text, NULL, 0, NULL), 0, text);
        expect_u64(mem_value(&c, mc->id), mem_wants[i], text);
        snprintf(want, sizeof want, "%s=%s(file %s:3)", tide_config_name(mc->id), mc->shown, f->path);
        expect_contains(describe(&c), want, text);
        tide_config_describe_one(&c, mc->id, one, sizeof one);
        expect_str(one, mc->shown, "describe_one");

        snprintf(envv, sizeof envv, "%s=%s", tide_config_env(mc->id), mc->value);
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), 0, envv);
        expect_u64(mem_value(&c, mc->id), mem_wants[i], envv);
        snprintf(want, sizeof want, "%s=%s(env %s)", tide_config_name(mc->id), mc->shown, tide_config_env(mc->id));
        expect_contains(describe(&c), want, envv);

        snprintf(flag, sizeof flag, "%s=%s", tide_config_flag(mc->id), mc->value);
        expect_rc(load_all(f, &c, NULL, NULL, 2, argv), 0, flag);
        expect_u64(mem_value(&c, mc->id), mem_wants[i], flag);
        snprintf(want, sizeof want, "%s=%s(flag %s)", tide_config_name(mc->id), mc->shown, tide_config_flag(mc->id));
        expect_contains(describe(&c), want, flag);
    }
    expect_str(tide_config_flag(TIDE_CFG_MEMORY_POLL_MS), "--memory-poll-milliseconds", "the poll flag");
    expect_str(tide_config_env(TIDE_CFG_MEMORY_LIMIT), "TIDE_MEMORY_LIMIT", "the limit's variable");
}

/* A bad memory value, as a flag (or with `env`), and a part of the message. */
typedef struct mem_bad { const char *flag; const char *env; const char *part; } mem_bad;

static const mem_bad mem_bads[] = {
    { "--memory-levels=90,80,97", NULL, "--memory-levels=90,80,97: the high mark 80 is not above the soft mark 90" },
    { "--memory-levels=80,97,97", NULL, "the critical mark 97 is not above the high mark 97" },
    { "--memory-levels=0,90,97", NULL, "--memory-levels=0,90,97: the soft mark 0 is outside 1..100" },
    { "--memory-levels=80,90,101", NULL, "the critical mark 101 is outside 1..100 (percent of memory_limit)" },
    { "--memory-levels=80,90,99999999999999999999999", NULL, "the critical mark 99999999999999999999999 is outside" },
    { "--memory-levels=80,ninety,97", NULL, "the high mark 'ninety' is not a whole number" },
    { "--memory-levels=80,,97", NULL, "the high mark '' is not a whole number" },
    { "--memory-levels=-80,90,97", NULL, "the soft mark '-80' is not a whole number" },
    { "--memory-levels=80,90", NULL, "--memory-levels=80,90: 2 values, not three" },
    { "--memory-levels=80", NULL, "1 value, not three: write the soft, high and critical marks" },
    { "--memory-levels=60,70,80,90", NULL, "4 values, not three" },
    { "--memory-hysteresis=80", NULL, "memory_hysteresis=80 (flag --memory-hysteresis) is not below the soft "
      "mark of memory_levels=80,90,97 (default)" },
    { "--memory-hysteresis=40", "TIDE_MEMORY_LEVELS=40,60,70", "memory_hysteresis=40 (flag --memory-hysteresis) "
      "is not below the soft mark of memory_levels=40,60,70 (env TIDE_MEMORY_LEVELS): a level is left "
      "(mark - hysteresis)% below its mark, so the hysteresis takes 1 to 39" },
    { "--memory-hysteresis=0", NULL, "--memory-hysteresis=0: 0 is outside 1..99" },
    { "--memory-limit=16MiB", NULL, "--memory-limit=16MiB: 16MiB (16777216 bytes) is below 32MiB, the smallest "
      "memory_limit" },
    { "--memory-limit=33554431", NULL, "--memory-limit=33554431: 33554431 (33554431 bytes) is below 32MiB" },
    { "--memory-limit=0", NULL, "--memory-limit=0: 0 (0 bytes) is below 32MiB" },
    { "--memory-limit=64XB", NULL, "--memory-limit=64XB: not a size" },
    { "--memory-limit=64MiBs", NULL, "--memory-limit=64MiBs: not a size" },
    { "--memory-limit=1.5GiB", NULL, "--memory-limit=1.5GiB: not a size" },
    { "--memory-limit=5PiB", NULL, "--memory-limit=5PiB: 5629499534213120 bytes is outside" },
    { "--memory-poll-milliseconds=9", NULL, "--memory-poll-milliseconds=9: 9 is outside 10..10000" },
    { "--memory-poll-milliseconds=10001", NULL, "10001 is outside 10..10000" },
    { "--memory-pressure=101", NULL, "--memory-pressure=101: 101 is outside 0..100" },
    { "--memory-pressure=ten", NULL, "--memory-pressure=ten: not a whole number" },
};

static void memory_settings_refuse_bad_values_with_a_clear_error(void **state)
{
    fx *f = *state;
    tide_config c;

    for (size_t i = 0; i < sizeof mem_bads / sizeof mem_bads[0]; i++) {
        const mem_bad *b = &mem_bads[i];
        const char *env[] = { b->env, NULL };
        char *argv[] = { "tided", (char *)b->flag, NULL };

        tide_err_clear();
        expect_rc(load_all(f, &c, NULL, env, 2, argv), TIDE_EINVAL, b->flag);
        expect_contains(tide_last_error(), b->part, b->flag);
    }
    /* The same rules from the file and the environment, naming them. */
    expect_file_error(f, "[node]\nmemory_levels=80;90;97\n", 2, "[node] memory_levels=80;90;97: 1 value, not three", 0);
    expect_file_error(f, "[node]\n\nmemory_limit=12XB\n", 3, "[node] memory_limit=12XB: not a size", 1);
    {
        const char *env[] = { "TIDE_MEMORY_LEVELS=97,90,80", NULL };
        expect_rc(load_all(f, &c, NULL, env, 0, NULL), TIDE_EINVAL, "TIDE_MEMORY_LEVELS=97,90,80");
        expect_contains(tide_last_error(), "TIDE_MEMORY_LEVELS=97,90,80: the high mark 90 is not above the soft "
                        "mark 97", "the variable and what is wrong");
    }
    /* Inside the rules: the extremes. */
    {
        char *argv[] = { "tided", "--memory-levels=2,3,100", "--memory-hysteresis=1", "--memory-limit=32MiB",
                         "--memory-pressure=100", "--memory-poll-milliseconds=10000", NULL };
        char *one[] = { "tided", "--memory-levels=1,2,3", NULL };
        expect_rc(load_all(f, &c, NULL, NULL, 6, argv), 0, "2,3,100 with hysteresis 1 at 32 MiB");
        expect_u64(c.memory_levels[1], 2, "soft");
        expect_u64(c.memory_levels[3], 100, "critical");
        expect_u64(c.memory_limit, 32 * MiB, "the smallest limit");
        /* A soft mark of 1% leaves no hysteresis of at least 1 point. */
        expect_rc(load_all(f, &c, NULL, NULL, 2, one), TIDE_EINVAL, "1,2,3");
        expect_contains(tide_last_error(), "a soft mark of 1% leaves no room for memory_hysteresis, which is at "
                        "least 1: raise the soft mark", "1,2,3");
    }
}

/* ---- the cgroup's limit: scratch layouts, as tests/test_mem_cgroup.c builds them ---- */

/* A scratch root (removed by the teardown, whatever the outcome) with the
 * files of `layout`: pairs of a path under the root and its text,
 * NULL-terminated. */
static void cgroup_layout(char *root, size_t cap, const char *const *layout)
{
    if (th_scratch_make(root, cap) != 0) fail_msg("cannot make a scratch directory");
    for (const char *const *l = layout; l[0] != NULL; l += 2) th_put_file(root, l[0], l[1]);
}

/* defaults + env + flags + apply_cgroup(root) + finish, with the log in *cap. */
static int load_cg(tide_config *c, const char *root, const char *const *env, int argc, char **argv,
                   th_log_capture *cap)
{
    int rc;

    memset(cap, 0, sizeof *cap);
    tide_log_set_sink(th_log_capture_sink, cap);
    tide_config_defaults(c);
    rc = tide_config_apply_env(c, th_fake_getenv, (void *)env);
    if (rc == 0 && argc > 0) rc = tide_config_apply_args(c, argc, argv);
    if (rc == 0) rc = tide_config_apply_cgroup(c, root);
    if (rc == 0) rc = tide_config_finish(c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    return rc;
}

/* The two versions' layouts of a 200 MiB group "tide" (v1 with a limit
 * two levels up, "max"-like at the leaf), and where it is. */
static const char *const v1_layout[] = {
    "proc/self/cgroup", "12:cpu,cpuacct:/tide/x\n11:memory:/tide/x\n",
    "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n",
    "sys/fs/cgroup/memory/tide/memory.limit_in_bytes", "209715200\n",
    "sys/fs/cgroup/memory/tide/memory.usage_in_bytes", "4096\n",
    "sys/fs/cgroup/memory/tide/x/memory.limit_in_bytes", "9223372036854771712\n",
    NULL };
static const char *const v2_layout[] = {
    "proc/self/cgroup", "0::/tide/x\n",
    "sys/fs/cgroup/tide/memory.max", "209715200\n",
    "sys/fs/cgroup/tide/memory.current", "4096\n",
    "sys/fs/cgroup/tide/x/memory.max", "max\n",
    NULL };
static const struct cg_version { int version; const char *const *layout; const char *dir; } cg_versions[] = {
    { 1, v1_layout, "sys/fs/cgroup/memory/tide" },
    { 2, v2_layout, "sys/fs/cgroup/tide" },
};

static void the_cgroup_limit_becomes_memory_limit_when_unset_with_its_source(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        const struct cg_version *v = &cg_versions[i];
        char root[2048], dir[2200], want[2400];
        tide_config c;
        th_log_capture cap;
        tide_node_opts o;

        cgroup_layout(root, sizeof root, v->layout);
        snprintf(dir, sizeof dir, "%s/%s", root, v->dir);
        expect_ok(load_cg(&c, root, NULL, 0, NULL, &cap), "unset, in a 200 MiB group");
        expect_u64(c.memory_limit, 200 * MiB, "the cgroup's limit");
        expect_u64((uint64_t)c.src[TIDE_CFG_MEMORY_LIMIT].kind, TIDE_SRC_DERIVED, "derived from the cgroup");
        snprintf(want, sizeof want, "cgroup v%d %s", v->version, dir);
        expect_str(c.src[TIDE_CFG_MEMORY_LIMIT].where, want, "the source names the version and directory");
        snprintf(want, sizeof want, "memory_limit=200MiB(cgroup v%d %s)", v->version, dir);
        expect_contains(describe(&c), want, "describe prints the cgroup source");
        expect_u64(c.cgroup_limited, 1, "cgroup_limited");
        expect_u64(c.cgroup_limit, 200 * MiB, "cgroup_limit");
        expect_u64((uint64_t)c.cgroup_version, (uint64_t)v->version, "cgroup_version");
        expect_str(c.cgroup_path, dir, "cgroup_path: the limited directory");
        expect_u64((uint64_t)cap.warnings, 0, "no warning when the cgroup's limit is taken");
        tide_startup_node_opts(&c, &o);
        expect_str(o.cgroup_path, dir, "node opts: the cgroup whose usage counts");
        expect_u64((uint64_t)o.cgroup_version, (uint64_t)v->version, "node opts: its version");
        expect_u64(o.memory_limit, 200 * MiB, "node opts: the limit");
        expect_u64(o.store_page_memory, 200 * MiB, "node opts: the store's page memory is the cgroup's");
        th_scratch_remove(root);
    }
}

static void an_operator_limit_above_the_cgroups_is_lowered_with_a_warning_and_below_it_kept(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        const struct cg_version *v = &cg_versions[i];
        char root[2048], dir[2200], want[2400];
        char *above[] = { "tided", "--memory-limit=1GiB", NULL };
        const char *below[] = { "TIDE_MEMORY_LIMIT=100MiB", NULL };
        tide_config c;
        th_log_capture cap;

        cgroup_layout(root, sizeof root, v->layout);
        snprintf(dir, sizeof dir, "%s/%s", root, v->dir);
        expect_ok(load_cg(&c, root, NULL, 2, above, &cap), "1 GiB in a 200 MiB group");
        expect_u64(c.memory_limit, 200 * MiB, "lowered to the cgroup's");
        expect_u64((uint64_t)cap.warnings, 1, "one warning");
        expect_contains(cap.text, "memory_limit=1GiB (flag --memory-limit) is above the cgroup's memory limit, "
                        "200MiB (cgroup v", "the warning names the operator's value and the cgroup's");
        expect_contains(cap.text, dir, "the warning names the cgroup's directory");
        snprintf(want, sizeof want, "memory_limit=200MiB(cgroup v%d %s, lowered from 1GiB (flag --memory-limit))",
                 v->version, dir);
        expect_contains(describe(&c), want, "describe says it was lowered, from what");

        expect_ok(load_cg(&c, root, below, 0, NULL, &cap), "100 MiB in a 200 MiB group");
        expect_u64(c.memory_limit, 100 * MiB, "the operator's, below the cgroup's, is kept");
        expect_u64((uint64_t)c.src[TIDE_CFG_MEMORY_LIMIT].kind, TIDE_SRC_ENV, "its source stays the operator's");
        expect_contains(describe(&c), "memory_limit=100MiB(env TIDE_MEMORY_LIMIT)", "describe");
        expect_u64((uint64_t)cap.warnings, 0, "no warning");
        expect_u64(c.cgroup_limited, 1, "the cgroup is recorded: its usage counts too");
        th_scratch_remove(root);
    }
}

static void no_cgroup_limit_or_a_corrupt_one_leaves_memory_limit_unchanged(void **state)
{
    static const char *const none[] = { "proc/self/cgroup", "1:cpu:/x\n", NULL };
    static const char *const unlimited[] = {
        "proc/self/cgroup", "0::/a\n", "sys/fs/cgroup/a/memory.max", "max\n", NULL };
    static const char *const corrupt_v2[] = {
        "proc/self/cgroup", "0::/a\n", "sys/fs/cgroup/a/memory.max", "lots\n", NULL };
    static const char *const corrupt_v1[] = {
        "proc/self/cgroup", "4:memory:/a\n", "sys/fs/cgroup/memory/a/memory.limit_in_bytes", "12x\n", NULL };
    static const struct { const char *const *layout; int warns; const char *what; } cases[] = {
        { none, 0, "no memory controller" }, { unlimited, 0, "an unlimited v2 group" },
        { corrupt_v2, 1, "memory.max" }, { corrupt_v1, 1, "memory.limit_in_bytes" },
    };
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char root[2048];
        char *argv[] = { "tided", "--memory-limit=300MiB", NULL };
        tide_config c;
        th_log_capture cap;

        cgroup_layout(root, sizeof root, cases[i].layout);
        expect_ok(load_cg(&c, root, NULL, 0, NULL, &cap), cases[i].what);
        expect_u64(c.memory_limit, 0, cases[i].what);
        expect_u64((uint64_t)c.src[TIDE_CFG_MEMORY_LIMIT].kind, TIDE_SRC_DEFAULT, cases[i].what);
        expect_u64(c.cgroup_limited, 0, cases[i].what);
        expect_u64((uint64_t)cap.warnings, (uint64_t)cases[i].warns, cases[i].what);
        if (cases[i].warns) {
            expect_contains(cap.text, "memory limit: the cgroup's could not be read, so none is taken from it",
                            cases[i].what);
            expect_contains(cap.text, cases[i].what, "the warning names the file");
        }
        expect_ok(load_cg(&c, root, NULL, 2, argv, &cap), cases[i].what);
        expect_u64(c.memory_limit, 300 * MiB, "the operator's stays");
        expect_u64((uint64_t)c.src[TIDE_CFG_MEMORY_LIMIT].kind, TIDE_SRC_FLAG, cases[i].what);
        th_scratch_remove(root);
    }
    /* A root with nothing at all: no limit known, nothing changed. */
    {
        char root[2048];
        tide_config c;
        th_log_capture cap;
        static const char *const empty[] = { NULL };
        cgroup_layout(root, sizeof root, empty);
        expect_ok(load_cg(&c, root, NULL, 0, NULL, &cap), "an empty root");
        expect_u64(c.memory_limit, 0, "an empty root");
        expect_u64((uint64_t)cap.warnings, 0, "an empty root: nothing to warn about");
        th_scratch_remove(root);
    }
}

static void a_cgroup_limit_below_32_mib_stops_tided_naming_the_cgroup(void **state)
{
    static const char *const small[] = {
        "proc/self/cgroup", "0::/tiny\n", "sys/fs/cgroup/tiny/memory.max", "16777216\n", NULL };
    char root[2048], want[2400];
    char *argv[] = { "tided", "--memory-limit=64MiB", NULL };
    tide_config c;
    th_log_capture cap;
    (void)state;

    cgroup_layout(root, sizeof root, small);
    expect_rc(load_cg(&c, root, NULL, 0, NULL, &cap), TIDE_EINVAL, "a 16 MiB group");
    snprintf(want, sizeof want, "memory_limit=16MiB (cgroup v2 %s/sys/fs/cgroup/tiny) is below 32MiB, the "
             "smallest limit tided runs in: raise the cgroup's memory limit", root);
    expect_contains(tide_last_error(), want, "the error names the cgroup");
    expect_rc(load_cg(&c, root, NULL, 2, argv, &cap), TIDE_EINVAL, "64 MiB lowered to a 16 MiB group");
    expect_contains(tide_last_error(), "is below 32MiB", "lowered below the minimum is refused too");
    expect_contains(tide_last_error(), "lowered from 64MiB (flag --memory-limit)", "and says from what");
    th_scratch_remove(root);
}

/* In the child, inside the group: tided's own order (defaults, flags, the
 * real cgroup, finish) with `arg` as --memory-limit (NULL: unset); reports
 * "rc limit kind cache_budget|where". */
static void child_reads_its_settings(void *arg, int fd)
{
    tide_config c;
    char flag[64], line[400];
    char *argv[] = { "tided", flag, NULL };
    int rc, n;

    tide_log_set_sink(th_log_discard_sink, NULL);
    tide_config_defaults(&c);
    snprintf(flag, sizeof flag, "--memory-limit=%s", arg ? (const char *)arg : "");
    rc = arg ? tide_config_apply_args(&c, 2, argv) : 0;
    if (rc == 0) rc = tide_config_apply_cgroup(&c, NULL);
    if (rc == 0) rc = tide_config_finish(&c);
    n = snprintf(line, sizeof line, "%d %" PRIu64 " %d %" PRIu64 "|%s", rc, c.memory_limit,
                 c.src[TIDE_CFG_MEMORY_LIMIT].kind, c.cache_budget, c.src[TIDE_CFG_MEMORY_LIMIT].where);
    if (write(fd, line, (size_t)n) != n) _exit(4);
}

static void in_a_real_v1_group_of_96_mib_the_settings_take_its_limit_and_lower_a_larger_one(void **state)
{
    char dir[256], got[512] = "", want[400];
    int status, rc = -1, kind = -1;
    unsigned long long limit = 0, budget = 0;
    const char *where = NULL;
    (void)state;

    th_cgroup_v1("tide-config", 96 * MiB, dir, sizeof dir);
    for (int round = 0; round < 2; round++) {
        status = th_cgroup_child(dir, child_reads_its_settings, round ? "1GiB" : NULL, got, sizeof got);
        if (status != 0) fail_msg("the child did not exit 0 (status %d: 3 = cannot join the group)", status);
        if (sscanf(got, "%d %llu %d %llu", &rc, &limit, &kind, &budget) != 4 || (where = strchr(got, '|')) == NULL)
            fail_msg("the child reported '%s', expected 'rc limit kind budget|where'", got);
        expect_ok(rc, round ? "1 GiB in the group" : "unset in the group");
        expect_u64(limit, 96 * MiB, "the group's limit is the node's");
        expect_u64((uint64_t)kind, TIDE_SRC_DERIVED, "from the cgroup");
        expect_u64(budget, 96 * MiB / 5, "cache_budget: 20% of the group's limit");
        snprintf(want, sizeof want, "|cgroup v1 %s%s", dir, round ? ", lowered from 1GiB (flag --memory-limit)" : "");
        expect_str(where, want, "the source names the group");
    }
}

/* ---- the split ------------------------------------------------------------------ */

typedef struct split_case { const char *limit; uint64_t cache, key, burst, body; } split_case;

/* L x 20%, 5%, 4% (at most 64 MiB), 10% (at least max_object_size),
 * rounded down to a byte. */
static const split_case split_cases[] = {
    { "64MiB", 13421772, 3355443, 2684354, 6710886 },
    { "128MiB", 26843545, 6710886, 5368709, 13421772 },
    { "1GiB", 214748364, 53687091, 42949672, 107374182 },
};

static void budgets_not_set_derive_from_the_limit_with_exact_bytes_and_sources(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;

    for (size_t i = 0; i < sizeof split_cases / sizeof split_cases[0]; i++) {
        const split_case *sc = &split_cases[i];
        char flag[64], want[200];
        char *argv[] = { "tided", flag, "--node-size=huge", NULL };

        snprintf(flag, sizeof flag, "--memory-limit=%s", sc->limit);
        expect_rc(load_all(f, &c, NULL, NULL, 3, argv), 0, flag);
        expect_u64(c.cache_budget, sc->cache, "cache_budget: 20%");
        expect_u64(c.key_cache_hard_limit, sc->key, "key cache hard limit: 5%");
        expect_u64(c.insert_burst, sc->burst, "insert_burst: 4%");
        expect_u64(c.http_body_budget, sc->body, "http_body_budget: 10%");
        expect_u64((uint64_t)c.src[TIDE_CFG_CACHE_BUDGET].kind, TIDE_SRC_DERIVED, "replaces huge's preset");
        /* Bytes (exact), then the size for people after the source. */
        snprintf(want, sizeof want, "cache_budget=%" PRIu64 "(memory_limit 20%%, ", sc->cache);
        expect_contains(describe(&c), want, flag);
        snprintf(want, sizeof want, "insert_burst=%" PRIu64 "(memory_limit 4%%, ", sc->burst);
        expect_contains(describe(&c), want, flag);
        snprintf(want, sizeof want, "http_body_budget=%" PRIu64 "(memory_limit 10%%, ", sc->body);
        expect_contains(describe(&c), want, flag);
        tide_startup_node_opts(&c, &o);
        expect_u64(o.cache_budget, sc->cache, "node opts: cache_budget");
        expect_u64(o.key_cache_hard_limit, sc->key, "node opts: key_cache_hard_limit");
        expect_u64(o.insert_burst, sc->burst, "node opts: insert_burst");
    }
    char *at64[] = { "tided", "--memory-limit=64MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, at64), 0, "64 MiB");
    expect_contains(describe(&c), "cache_budget=13421772(memory_limit 20%, 12.8 MiB) insert_burst=2684354("
                    "memory_limit 4%, 2.6 MiB)", "a derived size no whole unit: bytes, and its size (before: bytes only)");
    expect_contains(describe(&c), "http_body_budget=6710886(memory_limit 10%, 6.4 MiB)", "the body budget");
    /* The burst stops at 64 MiB; the body budget holds one max_object_size. */
    char *big[] = { "tided", "--memory-limit=4GiB", "--max-object-size=256MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, big), 0, "4 GiB");
    expect_u64(c.insert_burst, 64 * MiB, "4% of 4 GiB is above 64 MiB");
    expect_contains(describe(&c), "insert_burst=64MiB(memory_limit 4%, at most 64MiB)", "describe");
    expect_u64(c.http_body_budget, 429496729, "10% of 4 GiB is above 256 MiB");
    /* 200 MiB, not 256: with store_index_lag (1/8) in the sum, 256 MiB
     * bodies under 1 GiB pass the high mark. */
    char *raised[] = { "tided", "--memory-limit=1GiB", "--max-object-size=200MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, raised), 0, "1 GiB, 200 MiB objects");
    expect_u64(c.http_body_budget, 200 * MiB, "raised to max_object_size");
    expect_contains(describe(&c), "http_body_budget=200MiB(memory_limit 10%, raised to max_object_size)", "describe");
}

/* store_index_lag is 64MiB by default, memory_limit / 8
 * under a limit, the operator's when set (0: off), and reaches the node. */
static void store_index_lag_defaults_to_64mib_or_an_eighth_of_the_limit(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;

    char *plain[] = { "tided", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 1, plain), 0, "no limit");
    expect_u64(c.store_index_lag, 64 * MiB, "the default");
    char *lim[] = { "tided", "--memory-limit=1GiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, lim), 0, "1 GiB");
    expect_u64(c.store_index_lag, 128 * MiB, "an eighth of the limit");
    expect_contains(describe(&c), "store_index_lag=128MiB(memory_limit / 8)", "its source");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.index_lag_bytes, 128 * MiB, "node opts");
    char *off[] = { "tided", "--memory-limit=1GiB", "--store-index-lag=0", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, off), 0, "off");
    expect_u64(c.store_index_lag, 0, "the operator's 0 is kept");
    const char *env[] = { "TIDE_STORE_INDEX_LAG=lots", NULL };
    expect_rc(load_all(f, &c, NULL, env, 1, plain), TIDE_EINVAL, "a bad size");
    expect_contains(tide_last_error(), "TIDE_STORE_INDEX_LAG", "the message names the variable");
}

static void explicit_budgets_are_kept_and_over_the_limit_stop_tided_naming_each(void **state)
{
    fx *f = *state;
    tide_config c;
    char want[900];

    /* Kept: the operator's, with its source; the rest derived. */
    char *kept[] = { "tided", "--memory-limit=1GiB", "--cache-budget=100MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, kept), 0, "an explicit cache_budget");
    expect_u64(c.cache_budget, 100 * MiB, "the operator's cache_budget");
    expect_contains(describe(&c), "cache_budget=100MiB(flag --cache-budget)", "its source");
    expect_u64(c.insert_burst, 42949672, "insert_burst still derived");

    /* Over: 2 x 400 MiB + 2 x 64 MiB + 200 MiB = 1128 MiB > 1 GiB. */
    const char *env[] = { "TIDE_INSERT_BURST=64MiB", NULL };
    char *over[] = { "tided", "--memory-limit=1GiB", "--cache-budget=400MiB", NULL };
    expect_rc(load_all(f, &c, "[node]\nhttp_body_budget=200MiB\n", env, 3, over), TIDE_EINVAL, "over the limit");
    expect_contains(tide_last_error(), "the budgets set explicitly may hold 1128MiB, more than memory_limit=1GiB "
                    "(flag --memory-limit): ", "the total and the limit with its source");
    expect_contains(tide_last_error(), "cache_budget=400MiB (flag --cache-budget) may hold 800MiB (the node "
                    "cache's hard limit is twice it)", "cache_budget named");
    expect_contains(tide_last_error(), "insert_burst=64MiB (env TIDE_INSERT_BURST) may hold 128MiB (two insert "
                    "pools", "insert_burst named");
    snprintf(want, sizeof want, "http_body_budget=200MiB (file %s:2) may hold 200MiB", f->path);
    expect_contains(tide_last_error(), want, "http_body_budget named with its file and line");
    expect_contains(tide_last_error(), "leave them unset to derive them from memory_limit", "the fix");

    /* Explicit under the limit, with the derived ones over its high mark
     * (90%): refused, saying how far to lower the explicit one or raise the
     * limit. 800 MiB + 5% + 2 x 4% + 10% + 1/8 (store_index_lag) of 1 GiB
     * = 1220039145 bytes. */
    char *warn[] = { "tided", "--memory-limit=1GiB", "--cache-budget=400MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, warn), TIDE_EINVAL, "explicit and derived over the high mark");
    expect_contains(tide_last_error(), "the budgets may hold 1220039145 in all, more than the high mark of "
                    "memory_limit=1GiB (flag --memory-limit), 90% = 966367641, where writes are shed: ",
                    "the figures");
    expect_contains(tide_last_error(), "cache_budget=400MiB (flag --cache-budget) may hold 800MiB", "the explicit one");
    expect_contains(tide_last_error(), "the derived ones and the key cache 381178345; ", "the derived ones' sum");
    /* 1220039145 - 966367641 = 253671504 to shed, half of it from the budget:
     * 419430400 - 126835752 = 292594648 bytes, 279 MiB whole. */
    expect_contains(tide_last_error(), "lower cache_budget to at most 279MiB, or raise memory_limit to at least ",
                    "how far to lower it");
    char *fits[] = { "tided", "--memory-limit=1GiB", "--cache-budget=279MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, fits), 0, "the advised cache_budget starts");
    char *fits2[] = { "tided", "--memory-limit=1GiB", "--cache-budget=280MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, fits2), TIDE_EINVAL, "1 MiB more does not");
    {
        const char *at = strstr(tide_last_error(), "raise memory_limit to at least ");
        char flag[80], *raise[] = { "tided", flag, "--cache-budget=280MiB", NULL };
        size_t n;
        if (at == NULL) fail_msg("no raise advice: %s", tide_last_error());
        at += strlen("raise memory_limit to at least ");
        n = strcspn(at, " ,;)");
        snprintf(flag, sizeof flag, "--memory-limit=%.*s", (int)n, at);
        expect_rc(load_all(f, &c, NULL, NULL, 3, raise), 0, "the advised memory_limit starts");
    }

    /* The lab's limit64-c24: 2 x 24 MiB + 4% x 2 + 10% + 5% + 1/8 of 64 MiB,
     * 111%, past the high mark: refused (before: a warning, and the node went
     * 10.5% past its limit). (60397977 - 23823645) / 2 = 18287166: 17 MiB
     * (21 MiB before store_index_lag was counted). */
    char *lab[] = { "tided", "--memory-limit=64MiB", "--cache-budget=24MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, lab), TIDE_EINVAL, "the lab's 98%");
    expect_contains(tide_last_error(), "more than the high mark of memory_limit=64MiB (flag --memory-limit), 90% = "
                    "60397977", "the mark");
    expect_contains(tide_last_error(), "cache_budget=24MiB (flag --cache-budget) may hold 48MiB", "named");
    expect_contains(tide_last_error(), "lower cache_budget to at most 17MiB", "how far");
    /* The derived store_index_lag (8 MiB here) is advised too, not
     * cache_budget alone: it counts in the sum. */
    expect_contains(tide_last_error(), "raise memory_limit to at least 89MiB; store_index_lag (derived: memory_limit "
                    "/ 8 = 8MiB) counts too: a lower one (0: the deferred index off) takes its difference off the sum",
                    "the derived lag in the advice, not enough alone");
    /* 8 MiB is less than the 13757316 bytes over the mark: 0 alone does
     * not pass (65766685 > 60397977), and the advice says so. */
    char *lab0[] = { "tided", "--memory-limit=64MiB", "--cache-budget=24MiB", "--store-index-lag=0", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, lab0), TIDE_EINVAL, "the lab's with the deferred index off");

    /* test_memory_limit's cache_budget: the largest 128 MiB takes beside
     * its store_index_lag of 1 MiB. */
    char *lim128[] = { "tided", "--memory-limit=128MiB", "--cache-budget=44438651", "--store-index-lag=1MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, lim128), 0, "44438651 at 128 MiB: at the high mark");
    char *lim128b[] = { "tided", "--memory-limit=128MiB", "--cache-budget=44438652", "--store-index-lag=1MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, lim128b), TIDE_EINVAL, "one byte more: above it");
    /* The derived store_index_lag (16 MiB here) counts in the sum: left
     * out, this would pass with 102% of the limit in the budgets
     * (2 x 44438651 + 30870076 + 16777216 = 136524594); it is refused.
     * An explicit lag is named with its source, with how far to lower it. */
    char *lag128[] = { "tided", "--memory-limit=128MiB", "--cache-budget=44438651", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, lag128), TIDE_EINVAL, "with the derived lag: over the high mark");
    expect_contains(tide_last_error(), "the budgets may hold 136524594 in all, more than the high mark of "
                    "memory_limit=128MiB (flag --memory-limit), 90% = 120795955", "the lag in the sum");
    /* 15728639 over the mark, the derived lag 16 MiB: lowering it alone
     * fits (at most 1048577 bytes, rounded down to 1MiB; lim128 above
     * passes with it). */
    expect_contains(tide_last_error(), "or set store_index_lag (derived: memory_limit / 8) to at most 1MiB",
                    "the derived lag in the advice");
    char *lagset[] = { "tided", "--memory-limit=128MiB", "--cache-budget=30MiB", "--store-index-lag=40MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, lagset), TIDE_EINVAL, "an explicit lag over the high mark");
    expect_contains(tide_last_error(), "store_index_lag=40MiB (flag --store-index-lag) may hold 40MiB", "named");
    expect_contains(tide_last_error(), "lower store_index_lag to at most ", "and how far to lower it");

    /* Between the soft and the high marks (2 x 16 MiB + 23823645 = 85.5%,
     * rounded up; 20 MiB before store_index_lag was counted): one warning. */
    char *soft[] = { "tided", "--memory-limit=64MiB", "--cache-budget=16MiB", NULL };
    th_log_capture cap = { .text = "" };
    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, NULL, NULL, 3, soft), 0, "explicit and derived past the soft mark");
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_u64((uint64_t)cap.warnings, 1, "one warning past the soft mark");
    expect_contains(cap.text, "86% of memory_limit=64MiB (flag --memory-limit), above its soft mark (80%)",
                    "the soft-mark warning's figures");
    expect_contains(cap.text, "cache_budget=16MiB (flag --cache-budget) may hold 32MiB", "the explicit one named");

    /* Derived alone (75.5%: 63% and store_index_lag's 12.5%) never warns. */
    char *plain[] = { "tided", "--memory-limit=64MiB", NULL };
    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    expect_rc(load_all(f, &c, NULL, NULL, 2, plain), 0, "derived alone");
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_u64((uint64_t)cap.warnings, 0, "no warning for the derived split");

    /* cache_budget 0 (unbounded) under a limit: the governor cannot shrink
     * such a cache, so it is refused (before: allowed, counted as 0 bytes;
     * a deliberate change of the contract). */
    char *zero[] = { "tided", "--memory-limit=64MiB", "--cache-budget=0", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, zero), TIDE_EINVAL, "an unbounded node cache under a limit");
    expect_contains(tide_last_error(), "cache_budget=0 (flag --cache-budget) leaves the node cache unbounded, which "
                    "memory_limit=64MiB (flag --memory-limit) cannot hold: set a cache_budget, or leave it unset "
                    "to derive 20% of the limit", "the error");
    char *nolimit[] = { "tided", "--cache-budget=0", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, nolimit), 0, "unbounded without a limit stays allowed");
}

static void the_archives_memory_counts_under_a_limit(void **state)
{
    fx *f = *state;
    tide_config c;

    /* With the archive on, its filter budget derives from the limit (5%,
     * at most 64 MiB) and its write buffers count in the sum. */
    char *on[] = { "tided", "--memory-limit=256MiB", "--online-delete=manual", "--archive=rados", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, on), 0, "the archive under a 256 MiB limit");
    expect_u64(c.archive_filter_budget, 256ull * 1048576 * 5 / 100, "archive_filter_budget derived");
    expect_i64(c.src[TIDE_CFG_ARCHIVE_FILTER_BUDGET].kind, TIDE_SRC_DERIVED, "its source");
    char *big[] = { "tided", "--memory-limit=1TiB", "--online-delete=manual", "--archive=rados", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 4, big), 0, "a large limit");
    expect_u64(c.archive_filter_budget, 64ull * 1048576, "at most 64 MiB");
    /* Off, the default stays and nothing is derived. */
    char *off[] = { "tided", "--memory-limit=256MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 2, off), 0, "the archive off");
    expect_u64(c.archive_filter_budget, 64ull * 1048576, "the default");
    /* An explicit filter budget the limit cannot hold is refused by name. */
    char *over[] = { "tided", "--memory-limit=256MiB", "--online-delete=manual", "--archive=rados",
                     "--archive-filter-budget=100MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 5, over), TIDE_EINVAL, "filters past the high mark");
    expect_contains(tide_last_error(), "archive_filter_budget=100MiB (flag --archive-filter-budget) may hold "
                    "100MiB", "named with its source");
    expect_contains(tide_last_error(), "lower archive_filter_budget to at most ", "and how far to lower it");
    /* The same budget with the archive off counts for nothing. */
    char *unused[] = { "tided", "--memory-limit=256MiB", "--archive-filter-budget=100MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, unused), 0, "the archive off: its budget holds nothing");
}

static void a_body_budget_raised_to_max_object_size_counts_as_the_operators(void **state)
{
    fx *f = *state;
    tide_config c;

    /* 128 MiB objects under 64 MiB: the body budget raised to them alone is
     * over the limit. Before: it started, warning "lower the explicit ones"
     * with none explicit. */
    char *over[] = { "tided", "--memory-limit=64MiB", "--max-object-size=128MiB", NULL };
    expect_rc(load_all(f, &c, NULL, NULL, 3, over), TIDE_EINVAL, "128 MiB bodies under 64 MiB");
    expect_contains(tide_last_error(), "the budgets set explicitly may hold 128MiB, more than memory_limit=64MiB "
                    "(flag --memory-limit)", "the older wording: over the limit alone");
    expect_contains(tide_last_error(), "http_body_budget=128MiB (memory_limit 10%, raised to max_object_size) may "
                    "hold 128MiB (request bodies held), as max_object_size=128MiB (flag --max-object-size)",
                    "max_object_size named with its source");

    /* Under the limit but over the high mark: 2 x 53687091 + 2 x 10737418 +
     * 13421772 + 33554432 (store_index_lag, 1/8) + 128 MiB = 310042950 >
     * 241591910; the objects may be 134217728 - 68451040 = 65766688 bytes
     * (62 MiB whole; 94 MiB before the lag was counted). */
    const char *env[] = { "TIDE_MAX_OBJECT_SIZE=128MiB", NULL };
    char *high[] = { "tided", "--memory-limit=256MiB", NULL };
    expect_rc(load_all(f, &c, NULL, env, 2, high), TIDE_EINVAL, "128 MiB bodies under 256 MiB");
    expect_contains(tide_last_error(), "as max_object_size=128MiB (env TIDE_MAX_OBJECT_SIZE)", "named from the env");
    expect_contains(tide_last_error(), "lower max_object_size to at most 62MiB", "how far");
    const char *env62[] = { "TIDE_MAX_OBJECT_SIZE=62MiB", NULL };
    expect_rc(load_all(f, &c, NULL, env62, 2, high), 0, "the advised max_object_size starts");
}

static void the_startup_log_says_where_the_limit_came_from_the_marks_and_the_split(void **state)
{
    fx *f = *state;
    tide_config c;
    th_log_capture cap = { .text = "" };
    char *argv[] = { "tided", "--memory-limit=1GiB", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 2, argv), 0, "1 GiB");
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_contains(cap.text, "memory limit: 1GiB (1073741824 bytes) from flag --memory-limit (no cgroup limit "
                    "found); counts RSS, read every 100 ms; marks soft 80% = 858993459 bytes (left below 75% = "
                    "805306368), high 90% = 966367641 bytes (left below 85% = 912680550), critical 97% = "
                    "1041529569 bytes (left below 92% = 987842478); memory pressure (PSI some avg10) at or above "
                    "10% holds soft", "the limit's line");
    expect_contains(cap.text, "memory split: cache_budget=214748364 (memory_limit 20%; hard limit 429496728 bytes), "
                    "insert_burst=42949672 (memory_limit 4%; two pools 85899344 bytes), http_body_budget=107374182 "
                    "(memory_limit 10%; held bodies 107374182 bytes), store_index_lag=128MiB (memory_limit / 8; "
                    "tail index 134217728 bytes), key cache hard limit 53687091 bytes (memory_limit 5%): the "
                    "budgets may hold 810675073 bytes, 76% of the limit", "the split's line (the lag in it)");
    /* 75.49%: rounded up (before: truncated). */
    if (strstr(cap.text, "unbounded: process") != NULL) fail_msg("a limit is set; got: %s", cap.text);
    expect_contains(cap.text, "admin endpoints are off (403): to enable every /v1/admin endpoint (sweep, rotate, "
                    "keep, can_delete, heap) give a token by a file, [http] admin_token_file / TIDE_ADMIN_TOKEN_FILE "
                    "(mode 600), by systemd's LoadCredential=admin_token:FILE, or by TIDE_ADMIN_TOKEN",
                    "the token gates them all (before: sweep); the hint names the file and the credential");
    expect_contains(cap.text, "/metrics answers 401 to every scrape: give a token (then send Authorization: Bearer "
                    "<token>) by a file, [http] metrics_token_file / TIDE_METRICS_TOKEN_FILE (mode 600), by systemd's "
                    "LoadCredential=metrics_token:FILE, or by TIDE_METRICS_TOKEN; or set TIDE_METRICS_PUBLIC=1",
                    "the metrics hint names the file and the credential");
    {
        char entry[4096];
        tide_config_help(TIDE_CFG_ADMIN_TOKEN, entry, sizeof entry);
        expect_contains(entry, "enables every /v1/admin endpoint (POST sweep, rotate and keep, GET|POST",
                        "the admin token's help names every endpoint");
    }

    /* In a cgroup: what counts names it. */
    char root[2048], want[4600];
    th_log_capture cgcap;
    cgroup_layout(root, sizeof root, v2_layout);
    expect_ok(load_cg(&c, root, NULL, 0, NULL, &cgcap), "in a v2 group");
    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    snprintf(want, sizeof want, "memory limit: 200MiB (209715200 bytes) from cgroup v2 %s/sys/fs/cgroup/tide; counts "
             "the larger of RSS and the cgroup's usage less page cache (cgroup v2 %s/sys/fs/cgroup/tide, limit "
             "209715200 bytes)", root, root);
    expect_contains(cap.text, want, "the cgroup's limit and what counts");
    th_scratch_remove(root);

    /* No limit: the unbounded "process" warning says how to set one. */
    memset(&cap, 0, sizeof cap);
    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "no limit");
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_startup_log(&c);
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_contains(cap.text, "unbounded: process has no limit; set --memory-limit / TIDE_MEMORY_LIMIT / [node] "
                    "memory_limit, or run tided in a cgroup with a memory limit", "the process warning");
    if (strstr(cap.text, "memory limit:") != NULL || strstr(cap.text, "memory split:") != NULL)
        fail_msg("no limit: no limit or split lines expected; got: %s", cap.text);
}

static void startup_node_opts_map_the_memory_settings(void **state)
{
    fx *f = *state;
    tide_config c;
    tide_node_opts o;
    char *argv[] = { "tided", "--memory-limit=256MiB", "--memory-levels=70,85,95", "--memory-hysteresis=4",
                     "--memory-poll-milliseconds=50", "--memory-pressure=20", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 6, argv), 0, "every memory setting");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.memory_limit, 256 * MiB, "memory_limit");
    expect_u64(o.memory_pct[0], 0, "pct[0]");
    expect_u64(o.memory_pct[1], 70, "soft");
    expect_u64(o.memory_pct[2], 85, "high");
    expect_u64(o.memory_pct[3], 95, "critical");
    expect_u64(o.memory_hysteresis_pct, 4, "hysteresis");
    expect_u64(o.memory_poll_ms, 50, "poll");
    expect_u64(o.memory_pressure_pct, 20, "pressure");
    expect_u64(o.key_cache_hard_limit, 256 * MiB * 5 / 100, "key cache hard limit: 5%");
    if (o.cgroup_path != NULL) fail_msg("no cgroup limit: cgroup_path should be NULL, got %s", o.cgroup_path);
    expect_u64(o.store_page_memory, 0, "no cgroup limit: the store's page memory is the machine's");

    /* No limit: the node's defaults stand (its 32 MiB key cache bound). */
    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    tide_startup_node_opts(&c, &o);
    expect_u64(o.memory_limit, 0, "no limit");
    expect_u64(o.key_cache_hard_limit, 0, "the node's default key cache hard limit");
    expect_u64(o.memory_pct[1], 80, "default soft");
    expect_u64(o.memory_poll_ms, 100, "default poll");
}

static void with_a_limit_the_process_and_the_key_cache_are_bounded(void **state)
{
    fx *f = *state;
    tide_config c;
    seen s = { "", 0 };
    char *argv[] = { "tided", "--memory-limit=512MiB", "--key-cache-size=0", "--arena-max=2", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 4, argv), 0, "a limit, unbounded key cache entries");
    expect_u64((uint64_t)tide_config_unbounded(&c, TIDE_MEM_ALLOC_GLIBC, record_unbounded, &s), 0,
               "nothing unbounded: the key cache has 5% of the limit");
    expect_str(s.text, "", "no consumer listed");
    expect_u64(c.key_cache_hard_limit, 512 * MiB / 20, "the key cache's bound");
}

/* Every row of the table has what --help and the file need. */
static void every_setting_has_a_name_a_variable_and_a_help_entry(void **state)
{
    char entry[4096];
    (void)state;

    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (tide_config_name(id) == NULL || tide_config_env(id) == NULL)
            fail_msg("setting %d has no name or variable", id);
        if (tide_config_help(id, entry, sizeof entry) < 20) fail_msg("setting %d has no help entry", id);
    }
    tide_config_help(TIDE_CFG_MEMORY_LEVELS, entry, sizeof entry);
    expect_contains(entry, "    --memory-levels SOFT,HIGH,CRITICAL\n", "the heading");
    expect_contains(entry, "Range: three percents, 1 to 100, each above the one before.", "the range");
    expect_contains(entry, "Default: 80,90,97.", "the default");
    expect_contains(entry, "Environment TIDE_MEMORY_LEVELS; file [node] memory_levels.", "the other spellings");
    tide_config_help(TIDE_CFG_MEMORY_LIMIT, entry, sizeof entry);
    expect_contains(entry, "Range: 32MiB to 4PiB.", "the limit's range");
    expect_contains(entry, "Default: the cgroup's memory limit", "the limit's default");
    tide_config_help(TIDE_CFG_MEMORY_POLL_MS, entry, sizeof entry);
    expect_contains(entry, "--memory-poll-milliseconds MS", "the poll flag");
}

/* The bounds of a slow request: the head's time from its first byte, the
 * body's rate after a grace, and h2o's bound of the whole request above
 * them; from every source, refused by name. */
static void request_time_bounds_have_safe_defaults_and_are_read_from_every_source(void **state)
{
    fx *f = *state;
    tide_config c;
    char entry[4096];
    const char *env[] = { "TIDE_HTTP_HEADER_TIMEOUT=20", NULL };
    char *argv[] = { "tided", "--http-body-grace=0", NULL };
    char *bad_rate[] = { "tided", "--http-body-min-rate=fast", NULL };
    char *bad_head[] = { "tided", "--http-header-timeout=0", NULL };

    expect_rc(load_all(f, &c, NULL, NULL, 0, NULL), 0, "defaults");
    expect_u64(c.http_request_timeout, 60, "http_request_timeout");
    expect_u64(c.http_header_timeout, 10, "http_header_timeout");
    expect_u64(c.http_body_min_rate, 500, "http_body_min_rate");
    expect_u64(c.http_body_grace, 10, "http_body_grace");
    expect_contains(describe(&c), "http_header_timeout=10(default) http_body_min_rate=500(default) "
                    "http_body_grace=10(default)", "describe: the defaults");
    expect_rc(load_all(f, &c, "[node]\nhttp_body_min_rate=1KiB\n", env, 2, argv), 0, "file, env and flag");
    expect_u64(c.http_body_min_rate, 1024, "the file's rate");
    expect_u64(c.http_header_timeout, 20, "the environment's head timeout");
    expect_u64(c.http_body_grace, 0, "the flag's grace");
    expect_contains(describe(&c), "http_body_min_rate=1KiB(file ", "the rate's source");
    expect_contains(describe(&c), "http_header_timeout=20(env TIDE_HTTP_HEADER_TIMEOUT)", "the timeout's source");
    expect_contains(describe(&c), "http_body_grace=0(flag --http-body-grace)", "the grace's source");
    expect_rc(load_all(f, &c, NULL, NULL, 2, bad_rate), TIDE_EINVAL, "a rate that is not a size");
    expect_contains(tide_last_error(), "--http-body-min-rate=fast: not a size", "the refusal names the flag");
    expect_rc(load_all(f, &c, NULL, NULL, 2, bad_head), TIDE_EINVAL, "a head timeout of 0");
    expect_contains(tide_last_error(), "--http-header-timeout=0: 0 is outside 1..3600", "the refusal states the range");
    expect_u64((uint64_t)tide_config_group(TIDE_CFG_HTTP_BODY_GRACE), TIDE_CFG_GROUP_HTTP, "logged with http's");
    tide_config_help(TIDE_CFG_HTTP_BODY_MIN_RATE, entry, sizeof entry);
    expect_contains(entry, "    --http-body-min-rate BYTES\n", "the heading");
    expect_contains(entry, "Range: 0 to 1GiB.", "the range");
    expect_contains(entry, "Default: 500.", "the default");
    expect_contains(entry, "Environment TIDE_HTTP_BODY_MIN_RATE; file [node] http_body_min_rate.", "the spellings");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_flag_beats_the_environment_which_beats_the_file_which_beats_the_preset, setup, teardown),
        cmocka_unit_test_setup_teardown(a_flag_applied_before_the_file_still_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(defaults_are_data_127_0_0_1_8080_and_info, setup, teardown),
        cmocka_unit_test_setup_teardown(node_size_is_chosen_from_total_ram_when_unset, setup, teardown),
        cmocka_unit_test_setup_teardown(presets_fill_only_the_settings_nothing_else_set, setup, teardown),
        cmocka_unit_test_setup_teardown(an_xrpl_style_file_with_comments_and_crlf_is_read, setup, teardown),
        cmocka_unit_test_setup_teardown(every_validation_error_names_the_file_and_line, setup, teardown),
        cmocka_unit_test_setup_teardown(the_startup_logs_groups_are_sections_the_file_reads_for_their_settings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_known_key_in_a_section_tide_skips_is_an_error_naming_where_it_belongs,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_unknown_flag_or_key_is_answered_with_the_nearest_name, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_file_is_an_error_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(sweep_interval_accepts_10_and_600_and_rejects_9_and_601, setup, teardown),
        cmocka_unit_test_setup_teardown(an_invalid_nudb_block_size_warns_with_file_and_line_and_uses_4096, setup, teardown),
        cmocka_unit_test_setup_teardown(an_age_below_the_sweep_interval_warns_only_when_the_operator_chose_it, setup, teardown),
        cmocka_unit_test_setup_teardown(sizes_are_read_in_bytes_and_decimal_and_binary_units, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unknown_key_or_flag_is_rejected_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_environment_value_names_the_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(a_variable_set_but_empty_is_refused_naming_it_not_taken_for_unset, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_size_may_have_a_space_before_its_unit_from_every_source_but_not_inside_its_number,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(describe_never_prints_the_metrics_token, setup, teardown),
        cmocka_unit_test_setup_teardown(describe_truncates_to_the_capacity_and_reports_the_full_length, setup, teardown),
        cmocka_unit_test_setup_teardown(http_threads_and_object_size_are_bounded_and_the_admin_token_never_printed, setup, teardown),
        cmocka_unit_test_setup_teardown(startup_log_reads_as_a_checklist_and_warns_about_a_block_size_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(startup_log_for_a_new_store_uses_the_configured_block_size_without_warning, setup, teardown),
        cmocka_unit_test_setup_teardown(startup_node_opts_follow_the_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(trim_policy_is_a_setting_with_its_errors_named, setup, teardown),
        cmocka_unit_test_setup_teardown(unbounded_names_each_unbounded_consumer_and_the_setting_that_bounds_it, setup, teardown),
        cmocka_unit_test_setup_teardown(every_numeric_setting_is_range_checked_at_each_end_naming_its_source, setup, teardown),
        cmocka_unit_test_setup_teardown(the_size_limits_are_stated_and_a_refusal_names_them, setup, teardown),
        cmocka_unit_test_setup_teardown(a_node_budget_whose_double_overflows_saturates_the_hard_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(a_real_rippled_cfg_is_read_for_node_db_and_node_size_and_the_rest_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(rippleds_keys_that_count_something_else_are_never_read_as_tides, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_utf8_bom_is_accepted_and_utf16_is_refused_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(node_db_keys_of_rippled_are_noted_and_typos_of_tides_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(anything_goes_inside_a_skipped_section_and_hash_starts_a_comment, setup, teardown),
        cmocka_unit_test_setup_teardown(a_data_dir_too_long_for_path_max_is_refused_from_every_source_never_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(online_delete_settings_are_off_by_default_and_read_from_flag_env_and_file, setup, teardown),
        cmocka_unit_test_setup_teardown(store_key_map_is_on_by_default_and_off_reaches_the_node, setup, teardown),
        cmocka_unit_test(every_settings_flag_and_variable_spell_its_name),
        cmocka_unit_test_setup_teardown(cache_arena_settings_have_defaults_reach_the_node_and_refuse_bad_values,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(online_delete_bad_values_are_clear_errors_naming_the_line, setup, teardown),
        cmocka_unit_test_setup_teardown(with_online_delete_off_the_startup_log_warns_of_an_unbounded_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(memory_settings_have_defaults_and_are_read_from_flag_env_and_file_with_their_source, setup, teardown),
        cmocka_unit_test_setup_teardown(memory_settings_refuse_bad_values_with_a_clear_error, setup, teardown),
        cmocka_unit_test_setup_teardown(the_cgroup_limit_becomes_memory_limit_when_unset_with_its_source, setup, teardown),
        cmocka_unit_test_setup_teardown(an_operator_limit_above_the_cgroups_is_lowered_with_a_warning_and_below_it_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(no_cgroup_limit_or_a_corrupt_one_leaves_memory_limit_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(a_cgroup_limit_below_32_mib_stops_tided_naming_the_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(in_a_real_v1_group_of_96_mib_the_settings_take_its_limit_and_lower_a_larger_one, setup, teardown),
        cmocka_unit_test_setup_teardown(budgets_not_set_derive_from_the_limit_with_exact_bytes_and_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(store_index_lag_defaults_to_64mib_or_an_eighth_of_the_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(explicit_budgets_are_kept_and_over_the_limit_stop_tided_naming_each, setup, teardown),
        cmocka_unit_test_setup_teardown(a_body_budget_raised_to_max_object_size_counts_as_the_operators, setup, teardown),
        cmocka_unit_test_setup_teardown(the_startup_log_says_where_the_limit_came_from_the_marks_and_the_split, setup, teardown),
        cmocka_unit_test_setup_teardown(startup_node_opts_map_the_memory_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(with_a_limit_the_process_and_the_key_cache_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(every_setting_has_a_name_a_variable_and_a_help_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(the_archives_memory_counts_under_a_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(request_time_bounds_have_safe_defaults_and_are_read_from_every_source, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
