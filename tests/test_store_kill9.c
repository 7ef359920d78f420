/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_kill9.c: the store survives SIGKILL at any moment, on the real
 * file system.
 *
 * A child process opens a store and inserts items with a sync after every
 * batch; after each sync returns it writes the count of acknowledged items
 * to a pipe. The parent kills it with SIGKILL after a random delay, then
 * reopens the store (which recovers an interrupted commit), and checks:
 * every acknowledged item fetches with its exact value; items after the last
 * acknowledgement are absent or exact; the store verifies; new inserts work.
 * A kill -9 loses the process but not the page cache, so this tests the
 * commit's ordering and recovery, not power loss (the simulated file system
 * tests that).
 *
 * The second test runs the same writer with the deferred index (a tail
 * of 16 KiB, 768 entries, so commits alternate between phase A
 * and flushes and a kill lands in either) and reopens without a lag, so
 * the reopen reads the tail back from nudb.dat and indexes it.
 *
 * Iterations: TIDE_KILL9_ITERATIONS (default 50; CI runs the default).
 * The seed is printed, and TIDE_TEST_SEED repeats a run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "store/full.h"

#define KEY_SIZE 32
#define BATCH 200

static unsigned item_len(uint64_t i) { return (unsigned)th_len(i, 1, 600); }

static void child_writer(const char *dir, int fd, unsigned block_size, uint64_t lag)
    __attribute__((noreturn));
static void child_writer(const char *dir, int fd, unsigned block_size, uint64_t lag)
{
    tide_store_create_opts c;
    tide_store_opts o;
    tide_store *s;
    uint8_t key[KEY_SIZE], val[600];

    (void)block_size;
    th_store_opts(&o);
    o.commit_interval_ms = 20;
    o.burst_bytes = 256 << 10;
    o.index_lag_bytes = lag;
    tide_store_create_opts_init(&c);
    c.key_size = KEY_SIZE;
    c.block_size = block_size;
    if (tide_store_open(&s, dir, &o) != 0) _exit(3);
    for (uint64_t i = 0;; i++) {
        th_key(i, KEY_SIZE, key);
        th_value(i, item_len(i), val);
        if (tide_store_insert(s, key, val, item_len(i)) != 0) _exit(4);
        if (i % BATCH == BATCH - 1) {
            uint64_t acked = i + 1;
            if (tide_store_sync(s) != 0) _exit(5);
            if (write(fd, &acked, sizeof acked) != (ssize_t)sizeof acked) _exit(6);
        }
    }
}

/* One iteration: returns the acknowledged count (for the summary). */
static uint64_t one_iteration(uint64_t seed, unsigned iter, unsigned block_size, uint64_t lag)
{
    char dir[4096];
    int pipefd[2];
    uint64_t acked = 0, got, extra = 0, rng = seed ^ ((uint64_t)iter << 32);
    unsigned delay_ms = 20 + (unsigned)(th_splitmix64(&rng) % 400);
    tide_store_create_opts c;
    tide_store *s = NULL;
    tide_verify_report vr;
    uint8_t key[KEY_SIZE], want[600];
    int rc, status;
    pid_t pid;

    assert_int_equal(th_mkdtemp(dir, sizeof dir), 0);
    tide_store_create_opts_init(&c);
    c.key_size = KEY_SIZE;
    c.block_size = block_size;
    assert_int_equal(tide_store_create(dir, &c), 0);
    assert_int_equal(pipe(pipefd), 0);
    pid = th_fork();     /* the writer dies with this binary, whatever happens */
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        child_writer(dir, pipefd[1], block_size, lag);
    }
    close(pipefd[1]);
    {
        struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    th_waitpid(pid, &status, 0);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
        fail_msg("seed %llu iteration %u: the writer exited by itself (status %d) before the kill",
                 (unsigned long long)seed, iter, status);
    while (read(pipefd[0], &got, sizeof got) == (ssize_t)sizeof got) acked = got;
    close(pipefd[0]);

    rc = th_store_open(&s, dir);
    if (rc) fail_msg("seed %llu iteration %u (killed after %u ms, %llu acknowledged): reopen: %s: %s",
                     (unsigned long long)seed, iter, delay_ms, (unsigned long long)acked,
                     tide_strerror(rc), tide_last_error());
    for (uint64_t i = 0;; i++) {
        void *v = NULL;
        size_t len = 0;
        th_key(i, KEY_SIZE, key);
        th_value(i, item_len(i), want);
        rc = tide_store_fetch(s, key, &v, &len);
        if (rc == TIDE_ENOTFOUND && i >= acked) break;
        if (rc != 0)
            fail_msg("seed %llu iteration %u (killed after %u ms): item %llu of %llu acknowledged: "
                     "expected it, got %s: %s", (unsigned long long)seed, iter, delay_ms,
                     (unsigned long long)i, (unsigned long long)acked, tide_strerror(rc),
                     tide_last_error());
        if (len != item_len(i) || memcmp(v, want, len) != 0)
            fail_msg("seed %llu iteration %u: item %llu came back with %zu bytes, wrong; expected "
                     "%u exact bytes", (unsigned long long)seed, iter, (unsigned long long)i,
                     len, item_len(i));
        free(v);
        if (i >= acked) extra++;
    }
    /* New inserts work after recovery. */
    th_key(1u << 30, KEY_SIZE, key);
    assert_int_equal(tide_store_insert(s, key, "after", 5), 0);
    assert_int_equal(tide_store_sync(s), 0);
    assert_int_equal(tide_store_close(s), 0);
    rc = tide_store_verify_io(dir, NULL, &vr);
    if (rc) fail_msg("seed %llu iteration %u: verify after recovery: %s: %s",
                     (unsigned long long)seed, iter, tide_strerror(rc), tide_last_error());
    if (vr.keys != acked + extra + 1)
        fail_msg("seed %llu iteration %u: verify counts %llu keys, expected %llu acknowledged + "
                 "%llu unacknowledged survivors + 1", (unsigned long long)seed, iter,
                 (unsigned long long)vr.keys, (unsigned long long)acked, (unsigned long long)extra);
    th_rmrf(dir);
    return acked;
}

static void kill_loop(uint64_t lag)
{
    const char *env = getenv("TIDE_KILL9_ITERATIONS");
    unsigned iterations = env ? (unsigned)strtoul(env, NULL, 10) : 50;
    uint64_t seed = th_seed(9), total = 0, min = UINT64_MAX, max = 0;

    print_message("kill -9 loop%s: %u iterations, seed %llu (TIDE_TEST_SEED repeats it)\n",
                  lag ? " (deferred index)" : "", iterations, (unsigned long long)seed);
    for (unsigned it = 0; it < iterations; it++) {
        uint64_t a = one_iteration(seed, it, it % 2 ? 8192 : 4096, lag);
        total += a;
        if (a < min) min = a;
        if (a > max) max = a;
    }
    print_message("kill -9 loop: %u kills, acknowledged items per kill %llu..%llu (%llu in all), "
                  "all recovered exactly and verified\n", iterations,
                  (unsigned long long)min, (unsigned long long)max, (unsigned long long)total);
}

static void every_acknowledged_insert_survives_sigkill_at_a_random_moment(void **state)
{
    (void)state;
    kill_loop(0);
}

static void every_acknowledged_insert_survives_sigkill_with_the_index_deferred(void **state)
{
    (void)state;
    kill_loop(16u << 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_acknowledged_insert_survives_sigkill_at_a_random_moment),
        cmocka_unit_test(every_acknowledged_insert_survives_sigkill_with_the_index_deferred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
