/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_lifecycle.c: tided's life as a process: what a stop leaves (a
 * synced PUT survives kill -9; SIGTERM and SIGQUIT commit every PUT
 * answered 201 and exit 0), the CLI reading a running node's store, the
 * command line (a bad flag exits 2 naming it, --help reads like a man page
 * and names every signal), the startup (a second tided on the same data
 * dir, a store it cannot open, a port it cannot bind, a stop signal during
 * the store's open, a listen address beyond loopback), SIGHUP (the log
 * level reloaded, a config that no longer reads changes nothing), and a
 * full disk: 507, then a restart on the full disk that serves every
 * acknowledged object and takes writes again once space returns.
 *
 * Every test starts its own tided (or runs it to its exit). The full-disk
 * tests mount a small tmpfs: one in a private mount namespace (unshare
 * -Urm), one directly, which needs root and is skipped otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"

/* ---- what a stop or a kill leaves ---------------------------------------- */

static void a_put_with_sync_survives_kill_9_and_is_served_after_restart(void **state)
{
    uint8_t value[777];
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    th_value(10, sizeof value, value);
    tided_start(&t, NULL, NULL);
    r = http(&t, "PUT", obj_path(10, "?sync=1"), value, sizeof value, 0, NULL);
    expect_status(r, 201, "PUT ?sync=1");
    expect_contains(r.body, "\"durable\":true", "the 201 body of a synced PUT");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGKILL);
    tided_start(&t, NULL, NULL);
    r = http(&t, "GET", obj_path(10, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after kill -9 and restart of a PUT answered with ?sync=1");
    expect_u64(r.len, sizeof value, "bytes after the restart");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("the value came back different after kill -9");
    resp_free(&r);
    /* A second synced PUT of the same key: 409, and durable. */
    r = http(&t, "PUT", obj_path(10, "?sync=1"), value, sizeof value, 0, NULL);
    expect_status(r, 409, "PUT ?sync=1 of a key already stored");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A stop signal (SIGTERM, SIGINT, SIGQUIT) commits every PUT answered 201
 * before it, exits 0 and logs "shutdown complete"; a restart serves them. */
static void stop_signal_commits_every_acknowledged_put(int sig)
{
    enum { N = 300 };
    tided t;
    resp r;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t v[64];
        th_value(100 + i, sizeof v, v);
        r = http(&t, "PUT", obj_path(100 + i, NULL), v, sizeof v, 0, NULL);
        expect_status(r, 201, "one of many PUTs without sync");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, sig);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after signal %d, got status 0x%x. Its log:\n%s", sig, t.status,
                 log_tail(&t));
    if (!log_contains(&t, "shutdown complete"))
        fail_msg("tided's log should end with 'shutdown complete'. Its log:\n%s", log_tail(&t));
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t v[64];
        th_value(100 + i, sizeof v, v);
        r = http(&t, "GET", obj_path(100 + i, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "GET after the stop signal and a restart of a PUT answered 201");
        if (r.len != sizeof v || memcmp(r.body, v, sizeof v) != 0)
            fail_msg("value %" PRIu64 " came back different after the restart", i);
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void sigterm_commits_every_acknowledged_put_and_exits_0(void **state)
{
    (void)state;
    stop_signal_commits_every_acknowledged_put(SIGTERM);
}

static void sigquit_stops_like_sigterm(void **state)
{
    (void)state;
    stop_signal_commits_every_acknowledged_put(SIGQUIT);
}

/* The CLI reads a running node's store through the tide.live
 * page tided's store publishes: tide get returns what a synced PUT stored
 * (and not-found for a key never PUT), tide info names the running
 * writer, tide visit walks it, tide verify --live finds it sound, and the
 * full verify refuses it saying to use --live. */
static void the_cli_reads_a_running_nodes_store(void **state)
{
    enum { N = 20 };
    uint8_t value[777];
    char cmd[2400], k[65], vpath[700], want[64], *out = NULL;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        th_value(100 + i, sizeof value, value);
        r = http(&t, "PUT", obj_path(100 + i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT ?sync=1");
        resp_free(&r);
    }
    snprintf(vpath, sizeof vpath, "%s/value.bin", t.dir);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t *got = NULL;
        size_t len = 0;
        key_hex(100 + i, k);
        snprintf(cmd, sizeof cmd, "get '%s' %s > '%s'", t.data, k, vpath);
        int rc = th_run_tide(cmd, 0, &out);
        free(out);
        out = NULL;
        if (rc != 0) fail_msg("tide get of a synced PUT's key on the running node's store: exit %d", rc);
        if (th_read_file(vpath, &got, &len) != 0) fail_msg("cannot read %s", vpath);
        th_value(100 + i, sizeof value, value);
        if (len != sizeof value || memcmp(got, value, len) != 0)
            fail_msg("tide get returned %zu bytes, not the %zu the PUT stored", len, sizeof value);
        free(got);
    }
    key_hex(5000, k);
    snprintf(cmd, sizeof cmd, "get '%s' %s", t.data, k);
    expect_i64(th_run_tide(cmd, 1, &out), 1, "tide get of a key never PUT");
    expect_contains(out, "not found", "tide get of a key never PUT");
    free(out);
    snprintf(cmd, sizeof cmd, "info '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide info on a running node's store");
    snprintf(want, sizeof want, "writer        pid %d, running", (int)t.pid);
    expect_contains(out, want, "tide info names the running writer");
    free(out);
    snprintf(cmd, sizeof cmd, "visit '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide visit on a running node's store");
    expect_contains(out, "data records    20 ", "tide visit counts the PUTs");
    free(out);
    snprintf(cmd, sizeof cmd, "verify --live '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide verify --live on a running node's store");
    expect_contains(out, "sound while it runs", "tide verify --live's verdict");
    expect_contains(out, "data records     20", "tide verify --live walked the PUTs");
    free(out);
    snprintf(cmd, sizeof cmd, "verify '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 1, "tide verify (full) on a running node's store");
    expect_contains(out, "tide verify --live", "the full verify says to use --live");
    free(out);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- the command line and the startup ------------------------------------ */

static void a_bad_flag_or_value_exits_2_naming_it(void **state)
{
    static const char *unknown[] = { "--no-such-flag=1", NULL };
    static const char *range[] = { "--sweep-interval=5", NULL };
    static const char *listen[] = { "--listen=nowhere", NULL };
    tided t;
    int rc;
    (void)state;

    memset(&t, 0, sizeof t);
    rc = tided_run_to_exit(&t, unknown, NULL);
    expect_u64(rc, 2, "exit status of tided --no-such-flag=1");
    if (!log_contains(&t, "--no-such-flag")) fail_msg("the message should name --no-such-flag, got:\n%s",
                                                      log_tail(&t));
    rc = tided_run_to_exit(&t, range, NULL);
    expect_u64(rc, 2, "exit status of tided --sweep-interval=5");
    if (!log_contains(&t, "--sweep-interval")) fail_msg("the message should name --sweep-interval, got:\n%s",
                                                        log_tail(&t));
    rc = tided_run_to_exit(&t, listen, NULL);
    expect_u64(rc, 2, "exit status of tided --listen=nowhere");
    if (!log_contains(&t, "--listen")) fail_msg("the message should name --listen, got:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void help_reads_like_a_man_page_and_version_names_tided(void **state)
{
    static const char *help[] = { "--help", NULL };
    static const char *version[] = { "--version", NULL };
    static const char *const sections[] = { "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT",
                                            "ENDPOINTS", "SIGNALS", "EXIT STATUS", "EXAMPLES",
                                            "--data-dir", "--sweep-interval", "TIDE_ADMIN_TOKEN" };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    expect_u64(tided_run_to_exit(&t, help, NULL), 0, "exit status of tided --help");
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!log_contains(&t, sections[i])) fail_msg("tided --help should contain '%s'", sections[i]);
    expect_u64(tided_run_to_exit(&t, version, NULL), 0, "exit status of tided --version");
    if (!log_contains(&t, "tided ")) fail_msg("tided --version should print 'tided VERSION'");
    tided_cleanup(&t);
}

static void the_synopsis_shows_only_forms_tided_accepts_and_help_names_every_signal(void **state)
{
    static const char *help[] = { "--help", NULL };
    static const char *bare[] = { "cache_budget=1GiB", NULL };
    static const char *const signals[] = { "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGPIPE" };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    expect_u64(tided_run_to_exit(&t, help, NULL), 0, "exit status of tided --help");
    if (log_contains(&t, "OPTION=VALUE"))
        fail_msg("tided --help's SYNOPSIS shows OPTION=VALUE words, which tided refuses");
    if (!log_contains(&t, "--SETTING=VALUE"))
        fail_msg("tided --help's SYNOPSIS should show the --SETTING=VALUE form");
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (!log_contains(&t, signals[i])) fail_msg("tided --help should document %s", signals[i]);
    if (!log_contains(&t, "and memory_limit (the limit, its source, the level, the marks,"))
        fail_msg("tided --help's /v1/status line should name memory_limit. Its output:\n%s", log_tail(&t));
    if (!log_contains(&t, "enables every /v1/admin endpoint"))
        fail_msg("tided --help should say TIDE_ADMIN_TOKEN gates every /v1/admin endpoint");
    /* The bare word the old synopsis suggested is refused, naming the form. */
    expect_u64(tided_run_to_exit(&t, bare, NULL), 2, "exit status of tided cache_budget=1GiB");
    if (!log_contains(&t, "settings are --name=value"))
        fail_msg("a bare NAME=VALUE word should be refused naming the --name=value form. Its log:\n%s",
                 log_tail(&t));
    tided_cleanup(&t);
}

static void a_second_tided_on_the_same_data_dir_exits_1_saying_busy(void **state)
{
    tided first, second;
    char listen_arg[64];
    const char *flags[5];
    int rc;
    (void)state;

    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    tided_start(&first, NULL, NULL);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    flags[0] = "--data-dir";
    flags[1] = first.data;
    flags[2] = listen_arg;
    flags[3] = NULL;
    rc = tided_run_to_exit(&second, flags, NULL);
    expect_u64(rc, 1, "exit status of a second tided on a data dir in use");
    if (!log_contains(&second, "busy"))
        fail_msg("the second tided should say the store is busy, got:\n%s", log_tail(&second));
    {
        char holder[64];
        snprintf(holder, sizeof holder, "process %d (tided)", (int)first.pid);
        if (!log_contains(&second, holder))
            fail_msg("the second tided should name the holder ('%s'), got:\n%s", holder, log_tail(&second));
    }
    tided_signal_and_reap(&first, SIGTERM);
    expect_u64(WIFEXITED(first.status) ? WEXITSTATUS(first.status) : 99, 0,
               "exit status of the first tided after SIGTERM");
    tided_cleanup(&first);
    tided_cleanup(&second);
}

/* A store tided cannot open: the error names the file and what is wrong
 * with it (the open runs on a thread of its own, whose message once got
 * lost: "file is corrupt: " with nothing after). */
static void a_store_tided_cannot_open_is_named_with_its_reason(void **state)
{
    tided t;
    char key[700], listen_arg[64];
    const char *flags[] = { NULL, NULL, listen_arg, NULL };
    int rc;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    tided_signal_and_reap(&t, SIGTERM);
    th_path(key, sizeof key, t.data, "nudb.key");
    assert_int_equal(th_write_file(key, "this is not a key file", 22), 0);
    flags[0] = "--data-dir";
    flags[1] = t.data;
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    rc = tided_run_to_exit(&t, flags, NULL);
    expect_u64((uint64_t)rc, 1, "exit status of tided on a damaged key file");
    if (!log_contains(&t, "nudb.key: 22 bytes is shorter than the 104-byte header"))
        fail_msg("tided should name the damaged file and why, got:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void a_tided_that_cannot_bind_creates_no_store(void **state)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    char listen_arg[64], data_arg[700], nudb[700];
    const char *flags[] = { data_arg, listen_arg, NULL };
    struct stat st;
    int fd = socket(AF_INET, SOCK_STREAM, 0), rc;
    tided t;
    (void)state;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(data_arg, sizeof data_arg, "--data-dir=%s", t.data);
    rc = tided_run_to_exit(&t, flags, NULL);
    close(fd);
    if (rc != 1 || !log_contains(&t, "Address already in use"))
        fail_msg("tided on a taken port should exit 1 naming it, got %d. Its log:\n%s", rc, log_tail(&t));
    th_path(nudb, sizeof nudb, t.data, "nudb.dat");
    if (stat(nudb, &st) == 0 || stat(t.data, &st) == 0)
        fail_msg("tided that could not bind created %s", t.data);
    tided_cleanup(&t);
}

static void a_stop_signal_during_the_stores_open_ends_startup(void **state)
{
    static char delay[] = "TIDE_TEST_OPEN_DELAY_MS=600000";
    char *env[] = { delay, NULL };
    char bin[600], listen_arg[128];
    const char *argv[8];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    t.port = free_port(AF_INET);
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", t.port);
    argv[0] = bin;
    argv[1] = "--data-dir";
    argv[2] = t.data;
    argv[3] = listen_arg;
    argv[4] = NULL;
    spawn(&t, (char *const *)argv, env);
    if (!log_waits_for(&t, "Using NuDB block size", 30000))
        fail_msg("tided should log its startup checklist. Its log:\n%s", log_tail(&t));
    poll(NULL, 0, 100);       /* into the held open; the assertion below holds either way */
    tided_signal_and_reap(&t, SIGTERM);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("SIGTERM during the store's open should end tided with 0, got 0x%x. Its log:\n%s", t.status,
                 log_tail(&t));
    if (!log_contains(&t, "during startup: stopping before serving"))
        fail_msg("tided should say it stopped during startup. Its log:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void listening_beyond_loopback_warns_that_status_is_open(void **state)
{
    char listen_arg[64];
    const char *warning = "not a loopback address: /healthz, /v1/status and /v1/sweeps answer anyone";
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    if (log_contains(&t, warning)) fail_msg("tided on 127.0.0.1 should not warn about a non-loopback address");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
    /* 0.0.0.0 takes every address; the test only talks to 127.0.0.1. */
    memset(&t, 0, sizeof t);
    snprintf(t.host, sizeof t.host, "127.0.0.1");
    tided_prepare(&t);
    t.port = free_port(AF_INET);
    snprintf(listen_arg, sizeof listen_arg, "--listen=0.0.0.0:%d", t.port);
    {
        char bin[600];
        const char *argv[] = { bin, "--data-dir", t.data, listen_arg, NULL };
        snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
        spawn(&t, (char *const *)argv, NULL);
    }
    if (wait_healthy(&t) != 0) fail_msg("tided on 0.0.0.0 should answer on 127.0.0.1. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, warning))
        fail_msg("tided on 0.0.0.0 should warn that /v1/status is open. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- SIGHUP -------------------------------------------------------------- */

static void sighup_reloads_the_log_level_and_loses_nothing(void **state)
{
    char cfg[700], flag[720];
    const char *flags[] = { flag, NULL };
    uint8_t v[64];
    FILE *f;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=info\ncache_age=90\n", f);
    fclose(f);
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, NULL);
    th_value(77, sizeof v, v);
    r = http(&t, "PUT", obj_path(77, NULL), v, sizeof v, 0, NULL);
    expect_status(r, 201, "a PUT without sync before SIGHUP");
    resp_free(&r);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=debug\ncache_age=120\n", f);
    fclose(f);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: log_level info -> debug", 30000))
        fail_msg("after SIGHUP the log should say 'SIGHUP: log_level info -> debug'. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, "SIGHUP: cache_age changed (90 -> 120); it takes effect at the next start"))
        fail_msg("after SIGHUP the log should name cache_age as changed for the next start. Its log:\n%s",
                 log_tail(&t));
    r = http(&t, "GET", obj_path(77, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after SIGHUP");
    resp_free(&r);
    if (!log_waits_for(&t, "access: GET", 30000))
        fail_msg("log_level=debug after SIGHUP should log access lines. Its log:\n%s", log_tail(&t));
    /* A file that no longer reads changes nothing. */
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=loud\n", f);
    fclose(f);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: the settings do not read any more, so nothing changed", 30000))
        fail_msg("a SIGHUP with a broken config should say nothing changed. Its log:\n%s", log_tail(&t));
    /* SIGHUP did not stop tided: the value acknowledged before it is
     * committed by the stop and served after a restart. */
    tided_signal_and_reap(&t, SIGTERM);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=info\n", f);
    fclose(f);
    tided_start(&t, flags, NULL);
    r = http(&t, "GET", obj_path(77, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "the value PUT before SIGHUP, after a restart");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* SIGHUP reads the config file on the main thread, which also reads the
 * stop signals: a file replaced by a FIFO (whose open would wait for a
 * writer) or by a symlink to /dev/zero (which never ends) is refused by
 * its type, nothing waited on or read; a file with rippled's online_delete
 * (ledgers) and no online delete setting of Tide's is refused as at a
 * start. The settings in force stay (debug, though the last file says
 * info, so each request still logs an access line) and SIGTERM stops
 * tided as always. */
static void sighup_with_a_config_now_refused_changes_nothing_and_sigterm_still_stops_tided(void **state)
{
    char cfg[700], flag[720], want[1000];
    const char *flags[] = { flag, NULL };
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_put_file(t.dir, "tide.cfg", "[node]\nlog_level=debug\n");
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, NULL);

    assert_int_equal(unlink(cfg), 0);
    assert_int_equal(mkfifo(cfg, 0600), 0);
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s: the config "
             "file is a FIFO, not a regular file", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with the config now a FIFO should log '%s' at once. Its log:\n%s", want, log_tail(&t));

    assert_int_equal(unlink(cfg), 0);
    assert_int_equal(symlink("/dev/zero", cfg), 0);
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s: the config "
             "file is a character device, not a regular file", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with the config now a symlink to /dev/zero should log '%s'. Its log:\n%s", want,
                 log_tail(&t));

    assert_int_equal(unlink(cfg), 0);
    th_put_file(t.dir, "tide.cfg", "[node]\nlog_level=info\n[node_db]\nonline_delete=512\n");
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s:4: [node_db] "
             "online_delete=512 is rippled's: it counts the ledgers rippled keeps", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with rippled's online_delete should log '%s'. Its log:\n%s", want, log_tail(&t));

    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    expect_status(r, 200, "/v1/status after the refused reloads");
    resp_free(&r);
    if (!log_waits_for(&t, "access: GET /v1/status", 30000))
        fail_msg("log_level=debug should still be in force after the refused reloads. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0 || !log_contains(&t, "shutdown complete"))
        fail_msg("SIGTERM after the refused reloads should stop tided cleanly (exit 0, 'shutdown complete'); "
                 "status %d. Its log:\n%s", t.status, log_tail(&t));
    tided_cleanup(&t);
}

/* ---- a full disk --------------------------------------------------------- */

static void a_full_disk_is_507(void **state)
{
    char script[2048], bin[600], dir[512];
    tided t;
    int got = 0;
    uint8_t *v = malloc(1000000);
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    if (access("/usr/bin/unshare", X_OK) != 0 && access("/bin/unshare", X_OK) != 0)
        fail_msg("this test needs unshare(1) (util-linux) to mount a 4 MiB tmpfs in a private mount "
                 "namespace; it is not installed");
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    th_path(dir, sizeof dir, t.dir, "small");
    assert_int_equal(mkdir(dir, 0755), 0);
    t.port = free_port(AF_INET);
    snprintf(script, sizeof script,
             "mount -t tmpfs -o size=4m tmpfs '%s' || { echo 'cannot mount a tmpfs in the namespace'; exit 97; }; "
             "exec '%s' --data-dir '%s/db' --listen 127.0.0.1:%d --http-threads=2", dir, bin, dir, t.port);
    {
        const char *argv[] = { "unshare", "-Urm", "sh", "-c", script, NULL };
        spawn(&t, (char *const *)argv, NULL);
    }
    if (wait_healthy(&t) != 0) {
        if (!wait_exit(&t, 0)) { kill(t.pid, SIGKILL); wait_exit(&t, STOP_MS); }
        fail_msg("tided in 'unshare -Urm' with a 4 MiB tmpfs should start; unshare or mount is unavailable "
                 "here (user namespaces off?). Its output:\n%s", log_tail(&t));
    }
    for (uint64_t i = 0; i < 20 && got != 507; i++) {
        resp r;
        th_value(5000 + i, 1000000, v);
        /* max_object_size is 1 MiB by default: 1,000,000 bytes fit. */
        r = http(&t, "PUT", obj_path(5000 + i, "?sync=1"), v, 1000000, 0, NULL);
        got = (int)r.status;
        if (got != 201 && got != 507)
            fail_msg("PUT ?sync=1 %" PRIu64 " on a 4 MiB disk: expected 201 or 507, got %d: %s", i, got, r.body);
        if (got == 507) expect_error_json(&r, "no_space", "the 507 body");
        resp_free(&r);
    }
    free(v);
    if (got != 507) fail_msg("20 MB of synced PUTs on a 4 MiB tmpfs should meet 507; the last answer was %d", got);
    {
        resp r = http(&t, "GET", "/healthz", NULL, 0, 0, NULL);
        expect_status(r, 200, "GET /healthz after 507");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGKILL);
    tided_cleanup(&t);
}

static int run_quiet(const char *cmd)
{
    char *out = NULL;
    int rc = th_run(cmd, &out);
    free(out);
    return rc;
}

/* A tmpfs of `mib` MiB at `dir` (mounted, or its size changed with
 * remount); 0 when done. Needs root (CI runs as root). */
static int tmpfs_mount(const char *dir, unsigned mib, int remount)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o %ssize=%um tmpfs '%s' 2>&1", remount ? "remount," : "", mib, dir);
    return run_quiet(cmd);
}

/* The full-disk test's node and tmpfs, which its teardown stops and
 * unmounts whatever the outcome. */
static tided full_srv;
static char full_mnt[600];

static int full_disk_teardown(void **state)
{
    (void)state;
    if (full_srv.pid > 0 && !full_srv.reaped) { kill(full_srv.pid, SIGKILL); wait_exit(&full_srv, STOP_MS); }
    if (full_mnt[0]) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "umount '%s' 2>&1", full_mnt);
        run_quiet(cmd);
        full_mnt[0] = '\0';
    }
    tided_cleanup(&full_srv);
    return 0;
}

/* The disk is filled with synced PUTs (default index lag: the newest
 * records are acknowledged and not yet indexed) and the node is stopped.
 * It must start again on the full disk and serve every acknowledged
 * object, answer PUTs 507, and take them again once space returns; a new
 * data directory on the full disk fails to start naming the file it could
 * not write, and leaves no directory behind. Before, the restart failed
 * while indexing the tail, and nothing was served. */
static void a_node_restarts_on_a_full_disk_serves_reads_and_takes_writes_when_space_returns(void **state)
{
    enum { VALUE = 100000, MOST = 400 };
    static uint8_t v[VALUE];
    char *mnt = full_mnt, fresh[600], filler[700];
    tided *tp = &full_srv;
    uint64_t acked = 0;
    int status = 0;
    (void)state;

    if (geteuid() != 0) th_skip("mounting a small tmpfs needs root");
    memset(tp, 0, sizeof *tp);
    tided_prepare(tp);
    th_path(mnt, sizeof full_mnt, tp->dir, "mnt");
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (tmpfs_mount(mnt, 8, 0) != 0) {
        mnt[0] = '\0';
        th_skip("mount -t tmpfs failed here");
    }
    th_path(tp->data, sizeof tp->data, mnt, "db");
    tided_start(tp, NULL, NULL);
    for (uint64_t i = 0; i < MOST && status != 507; i++) {
        resp r;
        th_value(7000 + i, VALUE, v);
        r = http(tp, "PUT", obj_path(7000 + i, "?sync=1"), v, VALUE, 0, NULL);
        status = (int)r.status;
        if (status == 201) acked = i + 1;
        else if (status != 507) fail_msg("PUT ?sync=1 #%" PRIu64 " on an 8 MiB disk: expected 201 or 507, got %d: %s",
                                         i, status, r.body);
        resp_free(&r);
    }
    if (status != 507 || acked < 10) fail_msg("40 MB of PUTs on an 8 MiB disk: expected 507 after some 201s, got %d "
                                             "after %" PRIu64 " acknowledged", status, acked);
    /* Not a byte left, even for a one-byte value or a key-file split. */
    th_path(filler, sizeof filler, mnt, "filler");
    {
        char cmd[900];
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s' bs=4k 2>/dev/null; true", filler);
        run_quiet(cmd);
    }
    tided_signal_and_reap(tp, SIGTERM);

    tided_start(tp, NULL, NULL);
    for (uint64_t i = 0; i < acked; i++) {
        resp r = http(tp, "GET", obj_path(7000 + i, NULL), NULL, 0, 0, NULL);
        th_value(7000 + i, VALUE, v);
        if (r.status != 200 || r.len != VALUE || memcmp(r.body, v, VALUE) != 0)
            fail_msg("GET of acknowledged object #%" PRIu64 " after a restart on the full disk: status %ld, %zu bytes",
                     i, r.status, r.len);
        resp_free(&r);
    }
    {
        resp r = http(tp, "PUT", obj_path(9999, "?sync=1"), "x", 1, 0, NULL);
        expect_status(r, 507, "a PUT while the disk is still full");
        expect_error_json(&r, "no_space", "the 507 body");
        resp_free(&r);
    }
    assert_int_equal(tmpfs_mount(mnt, 64, 1), 0);
    status = 0;
    for (int tries = 0; tries < 300 && status != 201; tries++) {   /* retried every second */
        resp r = http(tp, "PUT", obj_path(9999, "?sync=1"), "x", 1, 0, NULL);
        status = (int)r.status;
        if (status != 201 && status != 507) fail_msg("a PUT once space returned: got %d: %s", status, r.body);
        resp_free(&r);
        if (status != 201) poll(NULL, 0, 200);
    }
    expect_u64((uint64_t)status, 201, "a PUT once space has returned");
    tided_signal_and_reap(tp, SIGTERM);
    expect_u64(WIFEXITED(tp->status) ? WEXITSTATUS(tp->status) : 99, 0, "exit status after space returned");

    /* A new directory on a full disk: an error naming the file; nothing left. */
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(tmpfs_mount(mnt, 8, 1), 0);
    /* A store as NuDB leaves it (no tide.live, no tide.meta) holding one
     * object, then a full disk: the node starts, answers reads and refuses
     * writes. Its shared page was once mapped over a hole, and the first
     * store into it killed the process with SIGBUS. */
    th_path(fresh, sizeof fresh, mnt, "plain");
    {
        char args[2000], *out = NULL, one[700], live[700];
        snprintf(args, sizeof args, "create '%s'", fresh);
        if (th_run_tide(args, 1, &out) != 0) fail_msg("tide %s failed: %s", args, out ? out : "");
        free(out);
        out = NULL;
        th_path(one, sizeof one, tp->dir, "one-byte");
        assert_int_equal(th_write_file(one, "x", 1), 0);
        snprintf(args, sizeof args, "put '%s' %s < '%s'", fresh, obj_path(2, NULL) + strlen("/v1/objects/"), one);
        if (th_run_tide(args, 1, &out) != 0) fail_msg("tide %s failed: %s", args, out ? out : "");
        free(out);
        th_path(live, sizeof live, fresh, "tide.live");
        unlink(live);
    }
    {
        char cmd[900];
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s' bs=4k 2>/dev/null; true", filler);
        run_quiet(cmd);
    }
    snprintf(tp->data, sizeof tp->data, "%s", fresh);
    tided_start(tp, NULL, NULL);
    {
        resp r = http(tp, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "a GET of the NuDB-made store's object on the full disk");
        expect_str(r.body, "x", "its value");
        resp_free(&r);
        r = http(tp, "PUT", obj_path(1, "?sync=1"), "x", 1, 0, NULL);
        expect_status(r, 507, "a PUT on the full disk");
        resp_free(&r);
    }
    tided_signal_and_reap(tp, SIGTERM);
    expect_u64(WIFEXITED(tp->status) ? WEXITSTATUS(tp->status) : 99, 0,
               "exit status of a node that wrote nothing on a full disk");
    th_path(fresh, sizeof fresh, mnt, "fresh");
    {
        char listen_arg[64];
        const char *flags[] = { "--data-dir", fresh, listen_arg, NULL };
        int rc;
        snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
        rc = tided_run_to_exit(tp, flags, NULL);
        expect_u64((uint64_t)rc, 1, "exit status of a first start on a full disk");
        if (!log_contains(tp, "No space left on device") || !log_contains(tp, "/fresh/nudb."))
            fail_msg("the failed start should name the file it could not write, got:\n%s", log_tail(tp));
        if (th_exists(fresh)) fail_msg("a failed first start left %s behind", fresh);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_put_with_sync_survives_kill_9_and_is_served_after_restart),
        cmocka_unit_test(the_cli_reads_a_running_nodes_store),
        cmocka_unit_test(sigterm_commits_every_acknowledged_put_and_exits_0),
        cmocka_unit_test(a_bad_flag_or_value_exits_2_naming_it),
        cmocka_unit_test(help_reads_like_a_man_page_and_version_names_tided),
        cmocka_unit_test(a_second_tided_on_the_same_data_dir_exits_1_saying_busy),
        cmocka_unit_test(a_full_disk_is_507),
        cmocka_unit_test(a_store_tided_cannot_open_is_named_with_its_reason),
        cmocka_unit_test_teardown(a_node_restarts_on_a_full_disk_serves_reads_and_takes_writes_when_space_returns,
                                  full_disk_teardown),
        cmocka_unit_test(sighup_reloads_the_log_level_and_loses_nothing),
        cmocka_unit_test(sighup_with_a_config_now_refused_changes_nothing_and_sigterm_still_stops_tided),
        cmocka_unit_test(sigquit_stops_like_sigterm),
        cmocka_unit_test(a_tided_that_cannot_bind_creates_no_store),
        cmocka_unit_test(a_stop_signal_during_the_stores_open_ends_startup),
        cmocka_unit_test(the_synopsis_shows_only_forms_tided_accepts_and_help_names_every_signal),
        cmocka_unit_test(listening_beyond_loopback_warns_that_status_is_open),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided, the process", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
