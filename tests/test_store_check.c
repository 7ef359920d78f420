/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_check.c: tide_store_check, the store's invariants run
 * (store.c's essay: invariants 1-5; committer.c's: the state diagram; store_impl.h:
 * the handle's modes).
 *
 * What is checked here:
 *   - The check fires: a child process breaks one invariant of an open
 *     store (white-box, through store_impl.h: a pool's count, its byte
 *     count, the state against commit_err, the sequence order, the key
 *     file's size, the mode against the commit thread) and must die of SIGABRT with TIDE_ASSERT's line naming
 *     the broken expression on stderr; with opts.check_invariants the
 *     store's own check after a commit does it, without, the same commit
 *     passes (but in TIDE_DEBUG_CHECKS builds, which check always).
 *   - The check holds in the states a test can reach: QUIET (read-only),
 *     IDLE with items pending, RETRYING after a full disk, IDLE again once
 *     space returns, and at close.
 *   - Checks on do not change results: one workload on two simulated file
 *     systems, checks off and on, leaves byte-identical files and the same
 *     write, sync and byte counts.
 *
 * Every child is killed and reaped by the teardown, whatever happens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/io_sim.h"
#include "store/store_impl.h"
#include "store/full.h"
#include "util/log.h"
#include "helpers.h"
#include "expect.h"

#define KEY_SIZE 32
#define VMIN 1
#define VMAX 300

static void create_store(const char *dir, tide_io *io)
{
    tide_store_create_opts co;

    tide_store_create_opts_init(&co);
    co.key_size = KEY_SIZE;
    co.uid = 0x636865636b000001ull;
    co.salt = 0x5a17;
    co.io = io;
    expect_ok(tide_store_create(dir, &co), "create");
}

/* ---- the check fires ---- */

typedef enum breakage {
    BREAK_PENDING_COUNT,     /* pending's count one more than its items */
    BREAK_POOL_BYTES,        /* pending's used 16 bytes more than its items */
    BREAK_STATE,             /* LOG_DIRTY with commit_err 0 */
    BREAK_SYNC_SEQ,          /* a sync waiting for inserts never made */
    BREAK_KEY_FILE,          /* one zero block appended to nudb.key */
    BREAK_MODE               /* a writer's handle said to be a reader */
} breakage;

static void break_one(th_store_env *env, tide_store *s, breakage b)
{
    switch (b) {
    case BREAK_PENDING_COUNT: s->pending->count++; break;
    case BREAK_POOL_BYTES: s->pending->used += 16; break;
    case BREAK_STATE: s->state = TI_STORE_LOG_DIRTY; break;
    case BREAK_SYNC_SEQ: s->sync_seq = s->insert_seq + 5; break;
    case BREAK_MODE: s->mode = TI_STORE_READER; break;
    case BREAK_KEY_FILE: {
        uint8_t zero[4096] = { 0 };
        long long size = th_file_size(env->key_path);
        if (size < 0 || th_pwrite_file(env->key_path, zero, sizeof zero, (uint64_t)size) != 0) _exit(3);
        break;
    }
    }
}

/* In a child: open the store (checks on or off), insert 10 items, break
 * one invariant, and then either call tide_store_check (`direct`) or sync
 * (the commit thread's own check). Exits 0 when nothing stopped it. */
static void child_breaks(th_store_env *env, breakage b, int direct, int checks, int err_fd)
{
    struct rlimit no_core = { 0, 0 };
    tide_store_opts o;
    tide_store *s = NULL;

    signal(SIGABRT, SIG_DFL);           /* not cmocka's handler: die of it */
    setrlimit(RLIMIT_CORE, &no_core);
    dup2(err_fd, 2);
    th_store_opts(&o);
    o.check_invariants = checks;
    o.commit_interval_ms = 60000;       /* commits only when the test syncs */
    if (tide_store_open(&s, env->dir, &o) != 0) _exit(2);
    if (th_store_insert_items(s, 0, 10, KEY_SIZE, VMIN, VMAX, NULL) != 0) _exit(2);
    if (b == BREAK_SYNC_SEQ || b == BREAK_KEY_FILE) {
        /* These hold the store's pools alone: they must outlast a commit. */
        if (tide_store_sync(s) != 0) _exit(2);
        if (th_store_insert_items(s, 10, 20, KEY_SIZE, VMIN, VMAX, NULL) != 0) _exit(2);
    }
    pthread_mutex_lock(&s->pool_mu);
    break_one(env, s, b);
    pthread_mutex_unlock(&s->pool_mu);
    if (direct) tide_store_check(s);
    else tide_store_sync(s);
    _exit(0);                            /* no close: the store is broken on purpose */
}

/* Run child_breaks; return its wait status, with its stderr in err. */
static int run_child(th_store_env *env, breakage b, int direct, int checks, char *err, size_t cap)
{
    int pipefd[2], status = 0;
    size_t used = 0;
    ssize_t n;

    if (pipe(pipefd) != 0) fail_msg("pipe failed");
    env->child = th_fork();
    if (env->child < 0) fail_msg("fork failed");
    if (env->child == 0) {
        close(pipefd[0]);
        child_breaks(env, b, direct, checks, pipefd[1]);
    }
    close(pipefd[1]);
    while (used + 1 < cap && (n = read(pipefd[0], err + used, cap - 1 - used)) > 0) used += (size_t)n;
    err[used] = '\0';
    close(pipefd[0]);
    if (th_waitpid(env->child, &status, 0) != env->child) fail_msg("waitpid failed");
    env->child = 0;
    return status;
}

static void expect_abort_naming(th_store_env *env, breakage b, int direct, const char *expr,
                                const char *what)
{
    char err[4096];
    int status;

    create_store(env->dir, NULL);
    status = run_child(env, b, direct, 1, err, sizeof err);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("%s: expected the child to die of SIGABRT, got %s %d; stderr: '%s'", what,
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
    expect_contains(err, "tide: invariant broken: ", what);
    expect_contains(err, expr, what);
}

static void a_pending_count_off_by_one_aborts_the_check(void **state)
{
    expect_abort_naming(*state, BREAK_PENDING_COUNT, 1, "p->count == s->insert_seq - s->committing_seq",
                        "pending count + 1, tide_store_check");
}

static void a_pool_byte_count_off_by_16_aborts_the_check(void **state)
{
    expect_abort_naming(*state, BREAK_POOL_BYTES, 1, "used == p->used",
                        "pending used + 16, tide_store_check");
}

static void a_state_that_contradicts_the_commit_error_aborts_the_check(void **state)
{
    expect_abort_naming(*state, BREAK_STATE, 1, "(s->commit_err != 0) == failed",
                        "LOG_DIRTY with commit_err 0, tide_store_check");
}

static void a_key_file_a_block_longer_than_its_buckets_aborts_the_check(void **state)
{
    expect_abort_naming(*state, BREAK_KEY_FILE, 1,
                        "size == (s->buckets + 1) * (uint64_t)s->block_size",
                        "nudb.key + 4096 zero bytes, tide_store_check");
}

static void a_writer_said_to_be_a_reader_aborts_the_check(void **state)
{
    expect_abort_naming(*state, BREAK_MODE, 1, "!s->thread_started || s->mode == TI_STORE_WRITER",
                        "a writer's mode set to READER, tide_store_check");
}

static void the_commit_thread_checks_after_its_commit_when_asked(void **state)
{
    th_store_env *env = *state;
    char err[4096];
    int status;

    expect_abort_naming(env, BREAK_SYNC_SEQ, 0, "s->sync_seq <= s->insert_seq",
                        "sync_seq past insert_seq, then a commit with check_invariants");
    /* The same commit with the option off passes (the check is the option's). */
    th_rmrf(env->dir);
    if (th_mkdtemp(env->dir, sizeof env->dir) != 0) fail_msg("mkdtemp failed");
    create_store(env->dir, NULL);
    status = run_child(env, BREAK_SYNC_SEQ, 0, 0, err, sizeof err);
#ifdef TIDE_DEBUG_CHECKS
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("check_invariants 0 in a TIDE_DEBUG_CHECKS build: expected SIGABRT all the same, "
                 "got status %d; stderr: '%s'", status, err);
#else
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("check_invariants 0: expected the commit to pass unchecked (exit 0), got status "
                 "%d; stderr: '%s'", status, err);
#endif
}

/* ---- the check holds where it should ---- */

static void the_check_holds_read_only_pending_through_a_full_disk_and_at_close(void **state)
{
    th_store_env *env = *state;
    tide_io_sim *sim = NULL;
    tide_store_opts o;
    tide_store *ro = NULL;
    uint8_t key[KEY_SIZE];

    (void)env;
    expect_ok(tide_io_sim_create(&sim), "sim create");
    expect_ok(tide_io_sim_mkdir(sim, "/db"), "sim mkdir");
    create_store("/db", tide_io_sim_io(sim));

    th_store_opts(&o);
    o.io = tide_io_sim_io(sim);
    o.read_only = 1;
    expect_ok(tide_store_open(&ro, "/db", &o), "read-only open");
    expect_u64(ro->state, TI_STORE_QUIET, "read-only handle's state");
    expect_u64(ro->mode, TI_STORE_READER, "read-only handle's mode");
    expect_ok(tide_store_check(ro), "check of a read-only handle");
    expect_ok(tide_store_close(ro), "read-only close");

    o.read_only = 0;
    o.commit_interval_ms = 60000;
    expect_ok(tide_store_open(&env->s, "/db", &o), "open");
    expect_ok(th_store_insert_items(env->s, 0, 100, KEY_SIZE, VMIN, VMAX, NULL), "100 inserts");
    expect_u64(env->s->state, TI_STORE_IDLE, "state with items pending");
    expect_u64(env->s->mode, TI_STORE_WRITER, "read-write handle's mode");
    expect_ok(tide_store_check(env->s), "check with 100 items pending");
    expect_ok(tide_store_sync(env->s), "sync");

    expect_ok(th_store_insert_items(env->s, 100, 200, KEY_SIZE, VMIN, VMAX, NULL), "100 more");
    tide_io_sim_set_capacity(sim, tide_io_sim_usage(sim));
    expect_rc(tide_store_sync(env->s), TIDE_ENOSPC, "sync on a full disk");
    expect_u64(env->s->state, TI_STORE_RETRYING, "state after a commit that met a full disk");
    expect_ok(tide_store_check(env->s), "check in RETRYING");
    th_key(500, KEY_SIZE, key);
    expect_rc(tide_store_insert(env->s, key, "v", 1), TIDE_ENOSPC, "insert while RETRYING");

    tide_io_sim_set_capacity(sim, UINT64_MAX);
    expect_ok(tide_store_sync(env->s), "sync once space returns");
    expect_u64(env->s->state, TI_STORE_IDLE, "state after the retry");
    expect_ok(tide_store_check(env->s), "check after the retry");
    expect_ok(tide_store_close(env->s), "close (checks at close)");
    env->s = NULL;
    tide_io_sim_destroy(sim);
}

/* ---- checks on do not change results ---- */

typedef struct outcome {
    void *dat, *key;
    size_t dat_len, key_len;
    uint64_t writes, syncs, bytes_written, commits;
} outcome;

static void run_workload(int checks, outcome *out)
{
    tide_io_sim *sim = NULL;
    tide_store_opts o;
    tide_store_info info;
    tide_store *s = NULL;
    tide_io *io;

    expect_ok(tide_io_sim_create(&sim), "sim create");
    io = tide_io_sim_io(sim);
    expect_ok(tide_io_sim_mkdir(sim, "/db"), "sim mkdir");
    create_store("/db", io);
    th_store_opts(&o);
    o.check_invariants = checks;
    o.io = io;
    o.commit_interval_ms = 60000;
    o.burst_bytes = 64u << 10;          /* the pool fills: commits the store starts itself */
    expect_ok(tide_store_open(&s, "/db", &o), "open");
    for (uint64_t b = 0; b < 10; b++) {
        expect_ok(th_store_insert_items(s, b * 300, b * 300 + 300, KEY_SIZE, VMIN, VMAX, NULL),
                  "a batch of 300 inserts");
        expect_ok(tide_store_sync(s), "sync");
    }
    tide_store_get_info(s, &info);
    out->commits = info.commits;
    out->bytes_written = info.bytes_written;
    out->syncs = info.syncs;
    expect_ok(tide_store_close(s), "close");
    out->writes = io->writes;
    expect_ok(tide_io_sim_get_file(sim, "/db/nudb.dat", &out->dat, &out->dat_len), "nudb.dat");
    expect_ok(tide_io_sim_get_file(sim, "/db/nudb.key", &out->key, &out->key_len), "nudb.key");
    tide_io_sim_destroy(sim);
}

static void checks_on_leave_the_same_files_and_counts_as_checks_off(void **state)
{
    outcome off = { 0 }, on = { 0 };

    (void)state;
    run_workload(0, &off);
    run_workload(1, &on);
    expect_u64(on.dat_len, off.dat_len, "nudb.dat size, checks on vs off");
    expect_u64(on.key_len, off.key_len, "nudb.key size, checks on vs off");
    if (memcmp(on.dat, off.dat, off.dat_len) != 0 || memcmp(on.key, off.key, off.key_len) != 0)
        fail_msg("checks on vs off: expected byte-identical nudb.dat and nudb.key, they differ");
    expect_u64(on.writes, off.writes, "writes, checks on vs off");
    expect_u64(on.syncs, off.syncs, "syncs, checks on vs off");
    expect_u64(on.bytes_written, off.bytes_written, "bytes written, checks on vs off");
    expect_u64(on.commits, off.commits, "commits, checks on vs off");
    if (off.commits <= 10)
        fail_msg("expected the 64 KiB burst to start commits beside the 10 syncs, got %" PRIu64
                 " commits", off.commits);
    free(on.dat); free(on.key); free(off.dat); free(off.key);
}

#define T(f) cmocka_unit_test_setup_teardown(f, th_store_setup, th_store_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(a_pending_count_off_by_one_aborts_the_check),
        T(a_pool_byte_count_off_by_16_aborts_the_check),
        T(a_state_that_contradicts_the_commit_error_aborts_the_check),
        T(a_key_file_a_block_longer_than_its_buckets_aborts_the_check),
        T(a_writer_said_to_be_a_reader_aborts_the_check),
        T(the_commit_thread_checks_after_its_commit_when_asked),
        T(the_check_holds_read_only_pending_through_a_full_disk_and_at_close),
        T(checks_on_leave_the_same_files_and_counts_as_checks_off),
    };

    tide_log_set_level(TIDE_LOG_ERROR);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
