/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_server_work.c: tided's worker threads own the descriptors they
 * close (work.c, invariant 6).
 *
 * tided stops its workers while other threads open descriptors: the
 * systemd notifier's thread opens a datagram socket for each STATUS line
 * of the stop, and libsystemd aborts tided when its close of that socket
 * finds it already closed. A worker's stop that closed a descriptor it
 * never opened would close whatever took that number. These tests start
 * the real workers (their threads, no node: no job is queued), with
 * descriptors the test opened at the numbers in question, and check with
 * fcntl(F_GETFD) that the stops left them open.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"
#include "server/server.h"

/* 1 while fd is an open descriptor of this process. */
static int fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static void stopping_every_worker_closes_no_descriptor_it_did_not_open(void **state)
{
    static const struct { const char *name; enum tided_worker_kind kind; } kinds[] = {
        { "sync", TIDED_WORKER_SYNC },       { "sweep", TIDED_WORKER_SWEEP }, { "metrics", TIDED_WORKER_METRICS },
        { "rotate", TIDED_WORKER_ROTATE },   { "heap", TIDED_WORKER_HEAP },
    };
    tided_worker workers[5], pool;
    tided_server *srv = calloc(1, sizeof *srv);
    int saved_stdin = dup(0), sentinel = open("/dev/null", O_RDONLY | O_CLOEXEC);
    (void)state;

    assert_non_null(srv);
    assert_true(saved_stdin >= 0 && sentinel >= 0);
    unsetenv("TIDE_TEST_STORE_GATE");
    /* Descriptor 0, the number a field left zeroed holds, is the test's
     * /dev/null: the number sd_notify's socket takes once stdin is closed. */
    assert_int_equal(dup2(sentinel, 0), 0);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(tided_worker_start(&workers[i], srv, kinds[i].name, kinds[i].kind), 0);
    assert_int_equal(tided_pool_start(&pool, srv, 2, 8), 0);
    tided_worker_stop(&pool);                 /* in tided's order */
    for (size_t i = 0; i < 5; i++) {
        tided_worker_stop(&workers[i]);
        if (!fd_open(0))
            fail_msg("stopping the %s worker closed descriptor 0, which the test opened (fcntl: %s)",
                     kinds[i].name, strerror(errno));
    }
    if (!fd_open(sentinel))
        fail_msg("the stops closed descriptor %d, which the test opened", sentinel);
    assert_int_equal(dup2(saved_stdin, 0), 0);
    close(saved_stdin);
    close(sentinel);
    free(srv);
}

static void the_store_gate_is_closed_by_the_first_stop_only(void **state)
{
    char dir[2048], fifo[2100];
    tided_server *srv = calloc(1, sizeof *srv);
    tided_worker pool;
    int gate, sentinel;
    (void)state;

    assert_non_null(srv);
    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);
    th_path(fifo, sizeof fifo, dir, "gate");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(setenv("TIDE_TEST_STORE_GATE", fifo, 1), 0);
    assert_int_equal(tided_pool_start(&pool, srv, 2, 8), 0);
    unsetenv("TIDE_TEST_STORE_GATE");
    gate = pool.gate_fd;
    if (gate < 0) fail_msg("the pool should have opened its gate %s; gate_fd is %d", fifo, gate);
    tided_worker_stop(&pool);
    if (fd_open(gate)) fail_msg("the pool's stop should close its gate, descriptor %d", gate);
    assert_int_equal(pool.gate_fd, -1);
    /* The gate's number is free: the next open takes it. A second stop
     * (tided's cleanup after a failed start stops the pool again) must
     * leave it to its new owner. */
    sentinel = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_int_equal(sentinel, gate);
    tided_worker_stop(&pool);
    if (!fd_open(sentinel))
        fail_msg("a second stop of the pool closed descriptor %d, its old gate's number, now the test's", sentinel);
    close(sentinel);
    free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stopping_every_worker_closes_no_descriptor_it_did_not_open),
        cmocka_unit_test(the_store_gate_is_closed_by_the_first_stop_only),
    };
    return th_run_group("tided's workers", tests, NULL, NULL, th_teardown);
}
