/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_systemd.c: tided under systemd, end to end: the sd_notify
 * messages (READY=1 once /healthz answers, RELOADING=1 and READY=1 around
 * a SIGHUP, STOPPING=1 and the extended timeouts of the open and of the
 * final commit, no RELOADING or READY during the drain), the watchdog
 * (pinged for our WATCHDOG_PID only, and not while an event loop is
 * stuck), --check-config's warnings, $STATE_DIRECTORY as the data dir's
 * default, and the token files and credentials: used as the tokens,
 * never logged, and refused (exit 2) when others can read them, they are
 * missing or empty.
 *
 * NOTIFY_SOCKET is a unix datagram socket the test binds in its scratch
 * directory (notify_sock). The stuck loop is made by a test hook of
 * tided's (TIDE_TEST_STALL_MS). How the settings are read is in
 * test_systemd.c; the unit file's check in tests/systemd-smoke.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"

/* ---- sd_notify, STATE_DIRECTORY, token files ----------------------------- */

/* A NOTIFY_SOCKET: a unix datagram socket bound in the test's scratch
 * directory, and every message it received, in order. */
typedef struct notify_sock {
    int  fd;
    char path[700];
    char env[720];            /* "NOTIFY_SOCKET=path" */
    char all[16384];          /* the messages, each followed by "\n--\n" */
} notify_sock;

static void notify_open(notify_sock *n, const tided *t)
{
    struct sockaddr_un a;

    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    th_path(n->path, sizeof n->path, t->dir, "notify");
    assert_true(strlen(n->path) < sizeof a.sun_path);
    /* memcpy, not snprintf: gcc -O1 (the asan build) sees a 700-byte
     * source for a 108-byte field and fails -Wformat-truncation. */
    memcpy(a.sun_path, n->path, strlen(n->path) + 1);
    snprintf(n->env, sizeof n->env, "NOTIFY_SOCKET=%s", n->path);
    n->all[0] = '\0';
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(n->fd >= 0);
    assert_int_equal(bind(n->fd, (struct sockaddr *)&a, sizeof a), 0);
}

/* Read messages until one holds `line` (a whole line: "READY=1") or ms
 * pass (then 0; also when tided exited first). Every message read is kept
 * in n->all; the one that matched is copied to got (may be NULL). */
static int notify_wait(notify_sock *n, tided *t, const char *line, int ms, char *got, size_t cap)
{
    double end = th_now_ms() + ms;
    char want[64];

    snprintf(want, sizeof want, "\n%s\n", line);
    while (th_now_ms() < end) {
        struct pollfd p = { n->fd, POLLIN, 0 };
        char msg[4096 + 2];
        ssize_t r;
        if (poll(&p, 1, 50) <= 0) {
            if (wait_exit(t, 0)) return 0;
            continue;
        }
        msg[0] = '\n';
        r = recv(n->fd, msg + 1, sizeof msg - 3, 0);
        if (r <= 0) continue;
        msg[r + 1] = '\n';
        msg[r + 2] = '\0';
        size_t have = strlen(n->all);
        snprintf(n->all + have, sizeof n->all - have, "%s--\n", msg + 1);
        if (strstr(msg, want) != NULL) {
            if (got) snprintf(got, cap, "%s", msg + 1);
            return 1;
        }
    }
    return 0;
}

static void notify_close(notify_sock *n)
{
    if (n->fd >= 0) close(n->fd);
    n->fd = -1;
}

/* One GET /healthz, no retries: its status. */
static long healthz_once(const tided *t)
{
    resp r = http(t, "GET", "/healthz", NULL, 0, 0, NULL);
    long st = r.status;
    resp_free(&r);
    return st;
}

static void under_systemd_ready_comes_when_healthz_answers_then_reloading_and_stopping(void **state)
{
    notify_sock n;
    char bin[600], got[4200];
    char *env[] = { n.env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    notify_open(&n, &t);
    tided_launch(&t, NULL, env, bin, sizeof bin);
    if (!notify_wait(&n, &t, "READY=1", START_MS, got, sizeof got))
        fail_msg("tided under NOTIFY_SOCKET should send READY=1 once it serves; it sent:\n%s\nIts log:\n%s",
                 n.all, log_tail(&t));
    /* The event order: READY=1 arrived, and /healthz answers at once. */
    if (healthz_once(&t) != 200)
        fail_msg("after READY=1, /healthz should answer 200 at the first try. Its log:\n%s", log_tail(&t));
    expect_contains(got, "STATUS=ready: serving on 127.0.0.1:", "READY's STATUS line");
    /* The open asked for more time before it was ready. */
    expect_contains(n.all, "EXTEND_TIMEOUT_USEC=20000000\nSTATUS=opening the store\n--\n",
                    "EXTEND_TIMEOUT_USEC while the store opened");
    expect_contains(got, t.data, "the STATUS names the store");
    kill(t.pid, SIGHUP);
    if (!notify_wait(&n, &t, "RELOADING=1", STOP_MS, got, sizeof got))
        fail_msg("SIGHUP should send RELOADING=1; it sent:\n%s", n.all);
    expect_contains(got, "MONOTONIC_USEC=", "RELOADING carries MONOTONIC_USEC");
    if (!notify_wait(&n, &t, "READY=1", STOP_MS, got, sizeof got))
        fail_msg("after the reload tided should send READY=1 again; it sent:\n%s", n.all);
    expect_contains(got, "STATUS=reloaded", "the second READY's STATUS");
    /* Without WATCHDOG_USEC no ping comes, over four half-seconds (what a
     * 1 s watchdog would ping in; the next test sees those pings). */
    notify_wait(&n, &t, "NO-SUCH-LINE", 2000, NULL, 0);
    if (strstr(n.all, "WATCHDOG=1") != NULL)
        fail_msg("without WATCHDOG_USEC tided must not ping the watchdog; it sent:\n%s", n.all);
    kill(t.pid, SIGTERM);
    if (!notify_wait(&n, &t, "STOPPING=1", STOP_MS, NULL, 0))
        fail_msg("SIGTERM should send STOPPING=1; it sent:\n%s", n.all);
    if (!notify_wait(&n, &t, "STATUS=stopping: the final commit", STOP_MS, NULL, 0))
        fail_msg("the final commit should extend the stop timeout; tided sent:\n%s", n.all);
    expect_contains(n.all, "EXTEND_TIMEOUT_USEC=20000000\nSTATUS=stopping: the final commit\n--\n",
                    "EXTEND_TIMEOUT_USEC during the final commit, without WATCHDOG=1");
    if (!wait_exit(&t, STOP_MS) || !WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after SIGTERM. Its log:\n%s", log_tail(&t));
    notify_close(&n);
    tided_cleanup(&t);
}

/* Start tided with NOTIFY_SOCKET, WATCHDOG_USEC=1 s and `pid_env`, wait for
 * READY=1, then watch for up to `ms`: 1 when WATCHDOG=1 came. */
static int watchdog_pinged(const char *pid_env, int ms)
{
    notify_sock n;
    char bin[600], pid_var[64];
    static char usec[] = "WATCHDOG_USEC=1000000";
    char *env[] = { n.env, usec, pid_var, NULL };
    tided t;
    int pinged;

    snprintf(pid_var, sizeof pid_var, "%s", pid_env);
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    notify_open(&n, &t);
    tided_launch(&t, NULL, env, bin, sizeof bin);
    if (!notify_wait(&n, &t, "READY=1", START_MS, NULL, 0))
        fail_msg("tided should send READY=1; it sent:\n%s\nIts log:\n%s", n.all, log_tail(&t));
    pinged = notify_wait(&n, &t, "WATCHDOG=1", ms, NULL, 0);
    if (pinged && !log_contains(&t, "systemd watchdog: 1000 ms; pinged every 500 ms"))
        fail_msg("a pinging tided should log the watchdog's interval. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    notify_close(&n);
    tided_cleanup(&t);
    return pinged;
}

static void the_watchdog_is_pinged_when_watchdog_usec_is_set_for_our_pid_only(void **state)
{
    (void)state;
    if (!watchdog_pinged("WATCHDOG_PID=", 10000))
        fail_msg("with WATCHDOG_USEC=1000000 and WATCHDOG_PID=its pid tided should send WATCHDOG=1");
    /* Another process's watchdog (WATCHDOG_PID=1) is not ours to ping:
     * four half-second intervals pass without one. */
    if (watchdog_pinged("WATCHDOG_PID=1", 2000))
        fail_msg("with WATCHDOG_PID of another process tided must not send WATCHDOG=1");
}

/* Read every message waiting on n now, without waiting (kept in n->all). */
static void notify_drain(notify_sock *n)
{
    char msg[4096 + 2];
    ssize_t r;

    while ((r = recv(n->fd, msg, sizeof msg - 1, MSG_DONTWAIT)) > 0) {
        size_t have = strlen(n->all);
        msg[r] = '\0';
        snprintf(n->all + have, sizeof n->all - have, "\n%s\n--\n", msg);
    }
}

/* With TIDE_TEST_STALL_MS set, a GET /healthz with x-tide-test-stall on
 * loop 1 (of --http-threads=2) holds that loop's thread (api.c's test
 * hook; on loop 0 it answers 409 at once, so try again). Returns the
 * connection, its answer not read yet, once the log says loop 1 stalls. */
static int stall_loop_1(const tided *t)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nx-tide-test-stall: 1\r\nConnection: close\r\n\r\n";
    char out[512];

    for (int attempt = 0; attempt < 64; attempt++) {
        int fd = connect_from(t, "127.0.0.1");
        double end = th_now_ms() + 5000;
        send_all(fd, req, sizeof req - 1);
        while (th_now_ms() < end) {
            if (log_contains(t, "test hook: loop 1 stalls")) return fd;
            if (has_answer(fd, out, sizeof out)) break;     /* loop 0's 409: another connection */
            struct pollfd p = { -1, 0, 0 };
            poll(&p, 0, 20);
        }
        close(fd);
    }
    fail_msg("no connection of 64 landed on loop 1 to stall it. The log:\n%s", log_tail(t));
    return -1;
}

/* Start tided under a NOTIFY_SOCKET with `env` (n->env first) and wait for
 * READY=1; loop 1 can then be stalled (stall_loop_1). */
static void launch_notified(tided *t, notify_sock *n, char *const env[])
{
    char bin[600];

    memset(t, 0, sizeof *t);
    tided_prepare(t);
    notify_open(n, t);
    tided_launch(t, NULL, env, bin, sizeof bin);
    if (!notify_wait(n, t, "READY=1", START_MS, NULL, 0))
        fail_msg("tided should send READY=1; it sent:\n%s\nIts log:\n%s", n->all, log_tail(t));
}

/* The watchdog's promise: a loop stuck in a handler stops the pings, and
 * they come back once it turns again. Loop 1 is stalled (loop 0, which
 * pings, keeps turning), so only the check of every loop's turn can stop
 * them. Orders, not times: every ping sent before tided logged "not
 * pinging" is drained; a ping read after it must follow the hook's
 * "resumes" line in the log (the log is written before the loop turns). */
static void a_stuck_event_loop_stops_the_watchdog_pings_until_it_turns_again(void **state)
{
    notify_sock n;
    char out[1024];
    static char usec[] = "WATCHDOG_USEC=1000000", pid[] = "WATCHDOG_PID=", stall[] = "TIDE_TEST_STALL_MS=6000";
    char *env[] = { n.env, usec, pid, stall, NULL };
    double end;
    tided t;
    int fd;
    (void)state;

    launch_notified(&t, &n, env);
    if (!notify_wait(&n, &t, "WATCHDOG=1", 10000, NULL, 0))
        fail_msg("tided should ping after READY=1; it sent:\n%s\nIts log:\n%s", n.all, log_tail(&t));
    fd = stall_loop_1(&t);
    end = th_now_ms() + 10000;
    while (!log_contains(&t, "an event loop has not turned for over 2000 ms; not pinging") && th_now_ms() < end) {
        struct pollfd p = { -1, 0, 0 };
        poll(&p, 0, 20);
    }
    if (!log_contains(&t, "not pinging"))
        fail_msg("with loop 1 stuck tided should stop pinging the watchdog. The log:\n%s", log_tail(&t));
    notify_drain(&n);
    if (!notify_wait(&n, &t, "WATCHDOG=1", 15000, NULL, 0))
        fail_msg("once loop 1 turns again the pings should resume; tided sent:\n%s\nIts log:\n%s", n.all,
                 log_tail(&t));
    if (!log_contains(&t, "test hook: loop 1 resumes"))
        fail_msg("tided pinged the watchdog while loop 1 was stuck. The log:\n%s", log_tail(&t));
    read_until_closed(fd, out, sizeof out, STOP_MS);
    expect_contains(out, "200", "the stalled request is answered after the stall");
    close(fd);
    tided_signal_and_reap(&t, SIGTERM);
    notify_close(&n);
    tided_cleanup(&t);
}

/* A SIGHUP during the drain (a request in flight on loop 1) is logged and
 * ignored: RELOADING=1 and READY=1 after STOPPING=1 would tell systemd the
 * service serves again. */
static void sighup_while_draining_sends_no_reloading_or_ready(void **state)
{
    notify_sock n;
    char out[1024];
    static char stall[] = "TIDE_TEST_STALL_MS=4000";
    char *env[] = { n.env, stall, NULL };
    const char *stopping;
    double end;
    tided t;
    int fd;
    (void)state;

    launch_notified(&t, &n, env);
    fd = stall_loop_1(&t);
    kill(t.pid, SIGTERM);
    if (!notify_wait(&n, &t, "STOPPING=1", STOP_MS, NULL, 0))
        fail_msg("SIGTERM should send STOPPING=1; it sent:\n%s", n.all);
    kill(t.pid, SIGHUP);
    end = th_now_ms() + STOP_MS;
    /* Until the SIGHUP was handled one way or the other. */
    while (!log_contains(&t, "SIGHUP while stopping") && !wait_exit(&t, 0) && th_now_ms() < end)
        if (notify_wait(&n, &t, "RELOADING=1", 20, NULL, 0)) break;
    stopping = strstr(n.all, "\nSTOPPING=1\n");
    if (stopping == NULL || strstr(stopping, "RELOADING=1") || strstr(stopping, "READY=1"))
        fail_msg("after STOPPING=1 tided must send neither RELOADING=1 nor READY=1; it sent:\n%s", n.all);
    if (log_contains(&t, "test hook: loop 1 resumes"))
        fail_msg("the SIGHUP should have come while the request was in flight. The log:\n%s", log_tail(&t));
    read_until_closed(fd, out, sizeof out, STOP_MS);
    close(fd);
    if (!wait_exit(&t, STOP_MS) || !WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after the drain. Its log:\n%s", log_tail(&t));
    notify_drain(&n);
    stopping = strstr(n.all, "\nSTOPPING=1\n");
    if (stopping == NULL || strstr(stopping, "RELOADING=1") || strstr(stopping, "READY=1"))
        fail_msg("after STOPPING=1 tided must send neither RELOADING=1 nor READY=1; it sent:\n%s", n.all);
    if (!log_contains(&t, "SIGHUP while stopping: not reloading the settings"))
        fail_msg("a SIGHUP during the drain should be logged as ignored. The log:\n%s", log_tail(&t));
    notify_close(&n);
    tided_cleanup(&t);
}

/* --check-config gives the start's warnings too (an address beyond
 * loopback, a descriptor limit under http_max_connections), from the same
 * code, and exits 1 naming stdout when it cannot write its answer. */
static void check_config_warns_as_a_start_does_and_exits_1_when_stdout_fails(void **state)
{
    th_scratch s;
    char cmd[4096], err[700], *out = NULL, *text;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(s.base, sizeof s.base), 0);
    th_path(err, sizeof err, s.base, "err");
    snprintf(cmd, sizeof cmd, "ulimit -n 300 && env -i '%s/tided' --check-config --data-dir '%s/data' "
             "--listen 0.0.0.0:8080 --http-max-connections 4096 2>'%s'", th_bin_dir(), s.base, err);
    rc = th_run(cmd, &out);
    text = th_slurp(err);
    if (rc != 0) fail_msg("--check-config should pass (exit 0), got %d; stderr:\n%s", rc, text);
    expect_contains(text, "would listen on 0.0.0.0:8080, not a loopback address", "the exposure warning");
    expect_contains(text, "RLIMIT_NOFILE allows 300 descriptors: serving at most 236 connections",
                    "the descriptor limit's warning");
    expect_contains(out, "tided --check-config: OK", "the answer");
    free(out);
    free(text);
    out = NULL;
    snprintf(cmd, sizeof cmd, "env -i '%s/tided' --check-config --data-dir '%s/data' >/dev/full 2>'%s'",
             th_bin_dir(), s.base, err);
    rc = th_run(cmd, &out);
    text = th_slurp(err);
    if (rc != 1) fail_msg("--check-config >/dev/full should exit 1, got %d; stderr:\n%s", rc, text);
    expect_contains(text, "--check-config: cannot write the settings to stdout: No space left on device",
                    "the reason");
    free(out);
    free(text);
    th_scratch_remove(s.base);
}

static void state_directory_holds_the_store_unless_a_data_dir_is_given(void **state)
{
    char sd[700], sd_env[1500], nudb[800], line[800];
    char *env[] = { sd_env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(sd, sizeof sd, t.dir, "state");
    assert_int_equal(mkdir(sd, 0750), 0);
    snprintf(sd_env, sizeof sd_env, "STATE_DIRECTORY=%s:%s/other", sd, t.dir);
    t.no_data_dir = 1;
    tided_start(&t, NULL, env);
    th_path(nudb, sizeof nudb, sd, "nudb.dat");
    if (!th_exists(nudb)) fail_msg("with STATE_DIRECTORY and no data_dir the store belongs in %s", sd);
    snprintf(line, sizeof line, "data_dir=%s(STATE_DIRECTORY)", sd);
    if (!log_contains(&t, line)) fail_msg("the startup log should show %s. Its log:\n%s", line, log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    /* An explicit --data-dir wins: the store goes there, none in STATE_DIRECTORY. */
    assert_int_equal(unlink(nudb), 0);
    t.no_data_dir = 0;
    tided_start(&t, NULL, env);
    if (th_exists(nudb)) fail_msg("with --data-dir the store must not be made in STATE_DIRECTORY (%s)", sd);
    th_path(nudb, sizeof nudb, t.data, "nudb.dat");
    if (!th_exists(nudb)) fail_msg("with --data-dir the store belongs in %s", t.data);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void put_secret(const char *path, const char *text, mode_t mode)
{
    if (th_write_file(path, text, strlen(text)) != 0 || chmod(path, mode) != 0)
        fail_msg("writing %s: expected success, got an error", path);
}

static void a_token_file_and_a_credential_are_the_tokens_and_never_logged(void **state)
{
    char tok[700], creds[700], cred[800], tok_env[800], creds_env[800];
    char *env[] = { tok_env, creds_env, NULL };
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tok, sizeof tok, t.dir, "metrics.token");
    put_secret(tok, "file-metrics-t0ken\n", 0600);
    th_path(creds, sizeof creds, t.dir, "creds");
    assert_int_equal(mkdir(creds, 0700), 0);
    th_path(cred, sizeof cred, creds, "admin_token");
    put_secret(cred, "cred-admin-t0ken\n", 0400);
    snprintf(tok_env, sizeof tok_env, "TIDE_METRICS_TOKEN_FILE=%s", tok);
    snprintf(creds_env, sizeof creds_env, "CREDENTIALS_DIRECTORY=%s", creds);
    tided_start(&t, NULL, env);
    free(scrape_with(&t, NULL, 401));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ke", 401));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ken", 200));
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer wrong");
    expect_status(r, 401, "the admin sweep with a wrong token");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer cred-admin-t0ken");
    expect_status(r, 200, "the admin sweep with the credential's token");
    resp_free(&r);
    if (!log_contains(&t, "metrics_token=set(env TIDE_METRICS_TOKEN_FILE)")
        || !log_contains(&t, "admin_token=set(credential admin_token)"))
        fail_msg("the startup log should say where each token came from. Its log:\n%s", log_tail(&t));
    /* SIGHUP reads the file again; a new token is named, in force at the
     * next start, and the one in force keeps working. */
    put_secret(tok, "next-metrics-t0ken\n", 0600);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: the metrics token changed; it takes effect at the next start", 30000))
        fail_msg("a SIGHUP after the token file changed should say so. Its log:\n%s", log_tail(&t));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ken", 200));
    tided_signal_and_reap(&t, SIGTERM);
    if (log_contains(&t, "file-metrics-t0ken") || log_contains(&t, "cred-admin-t0ken")
        || log_contains(&t, "next-metrics-t0ken"))
        fail_msg("the log must never hold a token. Its log:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

/* tided with `env` exits 2 before it makes a store, its log naming `part`. */
static void refused_at_startup(tided *t, char *const env[], const char *part, const char *what)
{
    char listen_arg[64], data_arg[700];
    const char *flags[] = { data_arg, listen_arg, NULL };
    int rc;

    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    snprintf(data_arg, sizeof data_arg, "--data-dir=%s", t->data);
    rc = tided_run_to_exit(t, flags, env);
    if (rc != 2) fail_msg("%s: tided should exit 2; it exited %d. Its log:\n%s", what, rc, log_tail(t));
    if (!log_contains(t, part)) fail_msg("%s: the message should say '%s'. Its log:\n%s", what, part, log_tail(t));
    if (th_exists(t->data)) fail_msg("%s: a refused start must make no store (%s)", what, t->data);
}

static void a_token_file_others_can_read_missing_or_empty_stops_tided_with_exit_2(void **state)
{
    char tok[700], tok_env[800], fix[1700];
    char *env[] = { tok_env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tok, sizeof tok, t.dir, "admin.token");
    snprintf(tok_env, sizeof tok_env, "TIDE_ADMIN_TOKEN_FILE=%s", tok);
    put_secret(tok, "readable-admin-token", 0644);
    snprintf(fix, sizeof fix, "admin_token_file %s (env TIDE_ADMIN_TOKEN_FILE): mode 0644 lets every user "
             "read the token; make it private to its owner: chmod 600 %s", tok, tok);
    refused_at_startup(&t, env, fix, "a 0644 token file");
    if (log_contains(&t, "readable-admin-token")) fail_msg("the refusal must not show the token");
    put_secret(tok, "", 0600);
    refused_at_startup(&t, env, "empty (the file must hold the token)", "an empty token file");
    assert_int_equal(unlink(tok), 0);
    refused_at_startup(&t, env, "cannot open it: No such file or directory", "a missing token file");
    tided_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(under_systemd_ready_comes_when_healthz_answers_then_reloading_and_stopping),
        cmocka_unit_test(the_watchdog_is_pinged_when_watchdog_usec_is_set_for_our_pid_only),
        cmocka_unit_test(a_stuck_event_loop_stops_the_watchdog_pings_until_it_turns_again),
        cmocka_unit_test(sighup_while_draining_sends_no_reloading_or_ready),
        cmocka_unit_test(check_config_warns_as_a_start_does_and_exits_1_when_stdout_fails),
        cmocka_unit_test(state_directory_holds_the_store_unless_a_data_dir_is_given),
        cmocka_unit_test(a_token_file_and_a_credential_are_the_tokens_and_never_logged),
        cmocka_unit_test(a_token_file_others_can_read_missing_or_empty_stops_tided_with_exit_2),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided under systemd", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
