/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_ceph_fixture.c: the Ceph cluster the archive tests run against
 * (tests/support/ceph.h) is a real one, and behaves as the archive will
 * rely on: an object written with the librados C API reads back byte for
 * byte; an exclusive create of an object that exists fails with -EEXIST
 * and changes nothing; with the OSD stopped a read fails within
 * rados_osd_op_timeout with -ETIMEDOUT, and the same client reads again once
 * the OSD is back; and stopping the cluster leaves none of its processes.
 *
 * One cluster for the whole binary (the group setup; about 4 s to start).
 * The last test stops it, so it must stay last. TIDE_SKIP_CEPH=1 skips
 * every test, saying so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <rados/librados.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "support/ceph.h"

static th_ceph cluster;

static int group_setup(void **state)
{
    (void)state;
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    th_ceph_stop(&cluster);
    return 0;
}

/* ---- a librados client of the fixture's cluster ------------------------- */

typedef struct client {
    rados_t rados;
    rados_ioctx_t io;
    int made, opened;
    int osd_stopped;   /* the test stopped osd.0: the teardown starts it */
} client;

static int client_setup(void **state)
{
    *state = calloc(1, sizeof(client));
    return *state ? 0 : -1;
}

static void client_close(client *cl)
{
    if (cl->opened) rados_ioctx_destroy(cl->io);
    if (cl->made) rados_shutdown(cl->rados);
    cl->opened = cl->made = 0;
}

static int client_teardown(void **state)
{
    client *cl = *state;

    client_close(cl);
    if (cl->osd_stopped && cluster.up && th_ceph_osd_start(&cluster, 0) != 0)
        fprintf(stderr, "teardown: osd.0 did not start again; the tests after this one will fail\n");
    free(cl);
    return th_teardown(state);
}

#define expect_rados(call, what)                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ < 0) fail_msg("%s: expected success, got %d (%s)", what, rc_, strerror(-rc_));     \
    } while (0)

/* Connect as client.admin with the cluster's ceph.conf and open its pool.
 * `osd_timeout`, when not NULL, is rados_osd_op_timeout in seconds (Ceph's
 * default is none: an operation waits for its OSD for ever). */
static void client_open(client *cl, const char *osd_timeout)
{
    expect_rados(rados_create(&cl->rados, NULL), "rados_create");
    cl->made = 1;
    expect_rados(rados_conf_read_file(cl->rados, cluster.conf), cluster.conf);
    expect_rados(rados_conf_set(cl->rados, "client_mount_timeout", "30"), "client_mount_timeout");
    if (osd_timeout != NULL)
        expect_rados(rados_conf_set(cl->rados, "rados_osd_op_timeout", osd_timeout), "rados_osd_op_timeout");
    expect_rados(rados_connect(cl->rados), "rados_connect");
    expect_rados(rados_ioctx_create(cl->rados, cluster.pool, &cl->io), cluster.pool);
    cl->opened = 1;
}

/* Read object `oid` whole (up to cap bytes) and compare it with want. */
static void expect_object(client *cl, const char *oid, const char *want, size_t len)
{
    char *buf = malloc(len + 1);
    int got;

    assert_non_null(buf);
    got = rados_read(cl->io, oid, buf, len + 1, 0);
    if (got < 0) {
        free(buf);
        fail_msg("rados_read %s: expected %zu bytes, got %d (%s)", oid, len, got, strerror(-got));
    }
    if ((size_t)got != len || memcmp(buf, want, len) != 0) {
        size_t at = 0;
        while (at < len && at < (size_t)got && buf[at] == want[at]) at++;
        free(buf);
        fail_msg("rados_read %s: expected the %zu bytes written, got %d bytes differing from byte %zu", oid, len,
                 got, at);
    }
    free(buf);
}

/* ---- the tests ---------------------------------------------------------- */

static void an_object_written_with_librados_reads_back_byte_for_byte(void **state)
{
    client *cl = *state;
    size_t len = 3u << 20;
    char *data = malloc(len);
    uint64_t size = 0;
    time_t mtime;
    th_rng rng;
    int rc;

    th_ceph_require(&cluster);
    assert_non_null(data);
    th_rng_init(&rng, th_seed(0x636570680a));
    th_rng_bytes(&rng, data, len);
    client_open(cl, NULL);

    expect_rados(rados_write_full(cl->io, "fixture.whole", data, len), "rados_write_full fixture.whole");
    expect_rados(rados_stat(cl->io, "fixture.whole", &size, &mtime), "rados_stat fixture.whole");
    if (size != len)
        fail_msg("rados_stat fixture.whole: expected %zu bytes, got %llu", len, (unsigned long long)size);
    expect_object(cl, "fixture.whole", data, len);

    expect_rados(rados_remove(cl->io, "fixture.whole"), "rados_remove fixture.whole");
    rc = rados_read(cl->io, "fixture.whole", data, 16, 0);
    if (rc != -ENOENT)
        fail_msg("rados_read of a removed object: expected -ENOENT, got %d (%s)", rc, strerror(-rc));
    free(data);
}

/* An exclusive create, alone or with a write in the same operation: 0 for
 * an absent object, -EEXIST for a present one, whose bytes stay. */
static int create_exclusive(client *cl, const char *oid, const char *with)
{
    rados_write_op_t op = rados_create_write_op();
    int rc;

    assert_non_null(op);
    rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
    if (with != NULL) rados_write_op_write_full(op, with, strlen(with));
    rc = rados_write_op_operate(op, cl->io, oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

static void an_exclusive_create_of_an_existing_object_fails_with_eexist(void **state)
{
    client *cl = *state;
    const char *kept = "the first writer's bytes";
    int rc;

    th_ceph_require(&cluster);
    client_open(cl, NULL);
    rc = rados_remove(cl->io, "fixture.excl");
    if (rc != 0 && rc != -ENOENT) fail_msg("rados_remove fixture.excl: expected 0 or -ENOENT, got %d", rc);

    rc = create_exclusive(cl, "fixture.excl", kept);
    if (rc != 0) fail_msg("exclusive create of an absent object: expected 0, got %d (%s)", rc, strerror(-rc));
    rc = create_exclusive(cl, "fixture.excl", NULL);
    if (rc != -EEXIST)
        fail_msg("exclusive create of a present object: expected -EEXIST, got %d (%s)", rc, strerror(-rc));
    rc = create_exclusive(cl, "fixture.excl", "a second writer's bytes");
    if (rc != -EEXIST)
        fail_msg("exclusive create with a write, of a present object: expected -EEXIST, got %d (%s)", rc,
                 strerror(-rc));
    expect_object(cl, "fixture.excl", kept, strlen(kept));
    expect_rados(rados_remove(cl->io, "fixture.excl"), "rados_remove fixture.excl");
}

static void a_read_with_the_osd_stopped_times_out_and_works_once_it_is_back(void **state)
{
    client *cl = *state;
    const char *text = "written before the OSD stopped";
    char buf[64];
    double t0, waited;
    int rc;

    th_ceph_require(&cluster);
    client_open(cl, "2");
    expect_rados(rados_write_full(cl->io, "fixture.osd", text, strlen(text)), "rados_write_full fixture.osd");

    if (th_ceph_osd_stop(&cluster, 0) != 0) fail_msg("th_ceph_osd_stop(0) failed (its messages are above)");
    cl->osd_stopped = 1;
    t0 = th_now_ms();
    rc = rados_read(cl->io, "fixture.osd", buf, sizeof buf, 0);
    waited = (th_now_ms() - t0) / 1000.0;
    if (rc != -ETIMEDOUT)
        fail_msg("rados_read with osd.0 stopped and rados_osd_op_timeout 2: expected -ETIMEDOUT, got %d (%s) "
                 "after %.1f s", rc, rc < 0 ? strerror(-rc) : "bytes read", waited);
    if (waited < 1.5 || waited > 10)
        fail_msg("rados_read with osd.0 stopped: expected to wait about 2 s (rados_osd_op_timeout), waited %.1f s",
                 waited);
    print_message("    a read with osd.0 stopped: -ETIMEDOUT after %.1f s\n", waited);

    t0 = th_now_ms();
    if (th_ceph_osd_start(&cluster, 0) != 0) fail_msg("th_ceph_osd_start(0) failed (its messages are above)");
    cl->osd_stopped = 0;
    print_message("    osd.0 back and the pool writable after %.1f s\n", (th_now_ms() - t0) / 1000.0);
    expect_object(cl, "fixture.osd", text, strlen(text));
    expect_rados(rados_remove(cl->io, "fixture.osd"), "rados_remove fixture.osd");
}

/* Last: it stops the binary's cluster. */
static void stopping_the_cluster_leaves_none_of_its_processes(void **state)
{
    pid_t pids[8];
    char dir[sizeof cluster.dir];
    int n;

    (void)state;
    th_ceph_require(&cluster);
    n = th_ceph_pids(&cluster, pids, 8);
    if (n != 2) fail_msg("expected 2 daemons running (mon.a, osd.0), found %d", n);
    for (int i = 0; i < n; i++) {
        /* In this binary's session, where tests/run-tests looks for
         * processes a test leaves behind. */
        if (getsid(pids[i]) != getsid(0))
            fail_msg("daemon pid %d: expected it in the test's session %d, it is in %d", (int)pids[i],
                     (int)getsid(0), (int)getsid(pids[i]));
    }
    memcpy(dir, cluster.dir, sizeof dir);

    th_ceph_stop(&cluster);
    for (int i = 0; i < n; i++)
        if (th_ceph_running(&cluster, pids[i]))
            fail_msg("daemon pid %d still runs after th_ceph_stop", (int)pids[i]);
    if (th_exists(dir)) fail_msg("%s: expected th_ceph_stop to remove the cluster's directory", dir);
    if (cluster.up) fail_msg("expected cluster.up 0 after th_ceph_stop");
    th_ceph_stop(&cluster);   /* a second stop does nothing */
    if (th_ceph_pids(&cluster, pids, 8) != 0) fail_msg("expected no daemon recorded after th_ceph_stop");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_object_written_with_librados_reads_back_byte_for_byte, client_setup,
                                        client_teardown),
        cmocka_unit_test_setup_teardown(an_exclusive_create_of_an_existing_object_fails_with_eexist, client_setup,
                                        client_teardown),
        cmocka_unit_test_setup_teardown(a_read_with_the_osd_stopped_times_out_and_works_once_it_is_back,
                                        client_setup, client_teardown),
        cmocka_unit_test(stopping_the_cluster_leaves_none_of_its_processes),
    };

    return th_run_group("ceph fixture, one cluster", tests, group_setup, group_teardown, th_teardown);
}
