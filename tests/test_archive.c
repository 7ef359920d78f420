/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_archive.c: a node's generations archived in a real Ceph cluster
 * (tests/support/ceph.h starts one monitor and one OSD on loopback), read
 * back through the node, and what happens when the cluster goes away or
 * the node dies in the middle.
 *
 * Each test runs a tide_node with online delete rotated by hand
 * (tide_node_rotate; no rotator thread), the archive on with 64 KiB chunks
 * so a generation is many objects, under a prefix of its own. The tests
 * assert events: an upload is waited for with tide_archive_wait, a seal by
 * polling tide_archive_sealed with a generous bound (the cluster is real
 * and a loaded machine is slow); no figure of time is asserted.
 *
 * The crash tests fork a child that runs the node and kills itself with
 * SIGKILL at a step of the archiver (the archive's trace hook), so the
 * crash lands exactly there: after a data chunk is acknowledged, after the
 * key file of a sealing generation, after its filter, after its manifest
 * entry. The parent then opens the same directory and prefix, lets the
 * archive finish, and compares every archived object with the local files
 * byte for byte.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <xxhash.h>

#include "archive/archive.h"
#include "archive/catalog.h"
#include "archive/rados.h"
#include "helpers.h"
#include "node/node.h"
#include "support/ceph.h"
#include "tide/error.h"
#include "util/log.h"

#define CHUNK (64u << 10)
#define SPAN 200                 /* objects written per span */
#define WAIT_MS 120000           /* the longest an event is waited for */

static th_ceph cluster;
static unsigned prefixes;

static int group_setup(void **state)
{
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);    /* the refusals below are expected */
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    th_ceph_stop(&cluster);
    return 0;
}

/* Every test: scratch directories removed and the OSD running again,
 * whatever the outcome. */
static int teardown(void **state)
{
    th_teardown(state);
    if (cluster.up) th_ceph_osd_start(&cluster, 0);
    return 0;
}

static void new_prefix(char *out, size_t cap)
{
    snprintf(out, cap, "t%d-%u", (int)getpid(), ++prefixes);
}

static void key_of(uint64_t i, uint8_t key[32]) { th_key(i, 32, key); }
static size_t len_of(uint64_t i) { return th_len(i, 100, 3000); }

static void node_opts(tide_node_opts *o, const char *dir, const char *prefix)
{
    tide_node_opts_init(o);
    o->dir = dir;
    o->sweep_interval_ms = 0;
    o->online_delete_on = 1;
    o->generations = 2;
    o->rotate_check_ms = 0;
    o->back_off_ms = 0;
    o->delete_chunk = 4096;
    o->memory_poll_ms = 0;
    o->archive_on = 1;
    o->archive.conf = cluster.conf;
    o->archive.pool = cluster.pool;
    o->archive.prefix = prefix;
    o->archive.chunk_bytes = CHUNK;
    o->archive.timeout_s = 3;
    o->archive.filter_budget = 1u << 20;
    o->archive.poll_ms = 50;
}

/* A scratch directory, a prefix of its own and the options over them. */
static void prepare(tide_node_opts *o, char *dir, size_t dcap, char *prefix, size_t pcap)
{
    if (th_scratch_make(dir, dcap)) fail_msg("no scratch directory");
    new_prefix(prefix, pcap);
    node_opts(o, dir, prefix);
}

static tide_node *open_node(const tide_node_opts *o)
{
    tide_node *n = NULL;
    int rc = tide_node_open(&n, o);
    if (rc) fail_msg("tide_node_open(%s): %s (%s)", o->dir, tide_strerror(rc), tide_last_error());
    return n;
}

static void put(tide_node *n, uint64_t i)
{
    uint8_t key[32], val[3000];
    int rc;

    key_of(i, key);
    th_value(i, len_of(i), val);
    rc = tide_node_put(n, key, val, len_of(i));
    if (rc) fail_msg("put of key %" PRIu64 ": %s (%s)", i, tide_strerror(rc), tide_last_error());
}

static void put_span(tide_node *n, uint64_t first, uint64_t count)
{
    for (uint64_t i = first; i < first + count; i++) put(n, i);
}

/* Key i through the node: 0 when served with its own bytes, else the code. */
static int get(tide_node *n, uint64_t i)
{
    uint8_t key[32], want[3000];
    tide_cache_obj *v = NULL;
    int rc;

    key_of(i, key);
    th_value(i, len_of(i), want);
    rc = tide_node_get(n, key, &v);
    if (rc) return rc;
    if (tide_cache_obj_len(v) != len_of(i) || memcmp(tide_cache_obj_data(v), want, len_of(i)) != 0) {
        tide_cache_obj_release(v);
        fail_msg("key %" PRIu64 " read back with other bytes (%zu, expected %zu)", i,
                 tide_cache_obj_len(v), len_of(i));
    }
    tide_cache_obj_release(v);
    return 0;
}

static void wait_sealed(tide_node *n, uint64_t id)
{
    double t0 = th_now_ms();

    while (!tide_archive_sealed(tide_node_archive(n), id)) {
        if (th_now_ms() - t0 > WAIT_MS) {
            tide_archive_info ai;
            tide_archive_get_info(tide_node_archive(n), &ai);
            fail_msg("generation %" PRIu64 " was not sealed within %d ms (up %d, lag %" PRIu64 ", "
                     "problem: %s)", id, WAIT_MS, ai.up, ai.lag_bytes, ai.problem);
        }
        usleep(20000);
    }
}

/* A rotation, once every generation it would drop is sealed: the node
 * refuses it before (TIDE_EUNAVAIL naming the archive), so try until it runs. */
static void rotate(tide_node *n)
{
    tide_node_rotation_report r;
    double t0 = th_now_ms();
    int rc;

    for (;;) {
        memset(&r, 0, sizeof r);
        rc = tide_node_rotate(n, "admin", &r);
        if (rc == 0) return;
        if (rc != TIDE_EUNAVAIL || strstr(r.error, "not sealed") == NULL)
            fail_msg("rotation: %s (%s)", tide_strerror(rc), r.error);
        if (th_now_ms() - t0 > WAIT_MS) fail_msg("rotation still refused after %d ms: %s", WAIT_MS, r.error);
        usleep(100000);
    }
}

static uint64_t newest_id(tide_node *n)
{
    tide_gens_info gi;
    tide_node_gens_info(n, &gi);
    return gi.gens[0].id;
}

static uint64_t oldest_id(tide_node *n)
{
    tide_gens_info gi;
    tide_node_gens_info(n, &gi);
    return gi.gens[gi.count - 1].id;
}

static tide_archive_info archive_info(tide_node *n)
{
    tide_archive_info ai;
    tide_archive_get_info(tide_node_archive(n), &ai);
    return ai;
}

/* ---- tests ----------------------------------------------------------------- */

static void every_object_reads_back_after_its_local_generations_are_gone(void **state)
{
    char dir[4096], prefix[64];
    tide_node_opts o;
    tide_node *n;
    const unsigned spans = 8;
    uint64_t archived_reads = 0;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    n = open_node(&o);
    for (unsigned s = 0; s < spans; s++) {
        put_span(n, (uint64_t)s * SPAN, SPAN);
        rotate(n);
    }
    /* G = 2: the node holds the last two generations, the archive the rest. */
    assert_true(oldest_id(n) >= spans);
    for (uint64_t i = 0; i < (uint64_t)spans * SPAN; i++) {
        int rc = get(n, i);
        if (rc) fail_msg("key %" PRIu64 " (span %" PRIu64 "): %s (%s)", i, i / SPAN, tide_strerror(rc),
                         tide_last_error());
    }
    archived_reads = archive_info(n).reads_found;
    /* Spans 0 .. spans-2 were dropped locally: every one of their keys came from the archive. */
    if (archived_reads < (uint64_t)(spans - 2) * SPAN)
        fail_msg("%" PRIu64 " reads answered by the archive, expected at least %u", archived_reads,
                 (spans - 2) * SPAN);
    assert_true(archive_info(n).sealed_generations >= spans - 1);
    /* Each of them read a bucket of nudb.key and a record of nudb.dat through RADOS. */
    if (archive_info(n).rados_reads < 2 * archived_reads)
        fail_msg("%" PRIu64 " ranged reads of archived objects for %" PRIu64 " reads answered by the "
                 "archive, expected at least two each", archive_info(n).rados_reads, archived_reads);
    /* The reads copied every object forward: a second pass needs the archive for none. */
    for (uint64_t i = 0; i < (uint64_t)spans * SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(archive_info(n).reads_found, archived_reads);
    /* A key that was never written is absent, and the filters spared most generations a read. */
    assert_int_equal(get(n, 1u << 30), TIDE_ENOTFOUND);
    assert_true(archive_info(n).reads_filtered > 0);
    /* A miss the filters answer alone is no RADOS operation: the read
     * histogram counts no more reads than RADOS was asked for. */
    tide_archive_info a0 = archive_info(n), a1;
    for (uint64_t i = 1; i <= 50; i++) assert_int_equal(get(n, (1u << 30) + i), TIDE_ENOTFOUND);
    a1 = archive_info(n);
    if (a1.op[TIDE_ARCHIVE_OP_READ].count - a0.op[TIDE_ARCHIVE_OP_READ].count > a1.rados_reads - a0.rados_reads)
        fail_msg("50 misses counted %" PRIu64 " reads in the histogram for %" PRIu64 " RADOS reads (%" PRIu64
                 " filtered)", a1.op[TIDE_ARCHIVE_OP_READ].count - a0.op[TIDE_ARCHIVE_OP_READ].count,
                 a1.rados_reads - a0.rados_reads, a1.reads_filtered - a0.reads_filtered);
    assert_int_equal(tide_node_close(n), 0);
}

static void a_rotation_never_drops_a_generation_the_archive_lacks(void **state)
{
    char dir[4096], prefix[64];
    tide_node_rotation_report r;
    tide_node_opts o;
    tide_node *n;
    uint64_t first;
    int rc;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    n = open_node(&o);
    first = newest_id(n);
    put_span(n, 0, SPAN);
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    rotate(n);                      /* drops nothing: fewer than G generations */
    put_span(n, SPAN, SPAN);
    memset(&r, 0, sizeof r);
    rc = tide_node_rotate(n, "admin", &r);
    assert_int_equal(rc, TIDE_EUNAVAIL);
    if (strstr(r.error, "not sealed") == NULL) fail_msg("the refusal does not say why: %s", r.error);
    {
        char want[64];
        snprintf(want, sizeof want, "generation %" PRIu64, first);
        if (strstr(r.error, want) == NULL) fail_msg("the refusal does not name %s: %s", want, r.error);
    }
    /* Nothing was dropped: the first span reads back from the disk. */
    assert_int_equal(oldest_id(n), first);
    for (uint64_t i = 0; i < SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    rotate(n);                      /* runs once the archive has sealed it */
    assert_true(oldest_id(n) > first);
    assert_true(tide_archive_sealed(tide_node_archive(n), first));
    for (uint64_t i = 0; i < 2 * SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(tide_node_close(n), 0);
}

static void the_health_gate_waits_for_the_archive_and_counts_it(void **state)
{
    char dir[4096], prefix[64];
    tide_node_rotation_report r;
    tide_node_rotation_totals t;
    tide_node_opts o;
    tide_node *n;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    o.online_delete = SPAN;         /* the objects trigger */
    o.recovery_wait_s = 1;
    o.rotation_wait_max_s = 2;
    n = open_node(&o);
    put_span(n, 0, SPAN);
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    assert_int_equal(tide_node_rotate_check(n, &r), 1);     /* creates generation 2, drops nothing */
    assert_int_equal(r.rc, 0);
    put_span(n, SPAN, SPAN);
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_node_rotate_check(n, &r), 1);     /* would drop 1: waits, then gives up */
    assert_true(r.abandoned);
    if (strstr(r.error, "archive has not sealed generation") == NULL)
        fail_msg("the abandoned attempt does not say why: %s", r.error);
    tide_node_rotation_totals_get(n, &t);
    assert_true(t.archive_waits > 0);
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    assert_int_equal(tide_node_close(n), 0);
}

static void writes_go_on_while_the_osd_is_down_and_the_archive_catches_up(void **state)
{
    char dir[4096], prefix[64];
    tide_archive_info ai;
    tide_node_opts o;
    tide_node *n;
    tide_gens_info gi;
    double t0;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    n = open_node(&o);
    put_span(n, 0, 20);
    assert_int_equal(tide_node_sync(n), 0);
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    put_span(n, 20, SPAN);
    assert_int_equal(tide_node_sync(n), 0);           /* archive_sync=local: the disk is enough */
    /* The archiver meets the stopped OSD: its writes time out, and the lag stays. */
    t0 = th_now_ms();
    do {
        usleep(50000);
        ai = archive_info(n);
    } while ((ai.up || ai.errors_write == 0) && th_now_ms() - t0 < WAIT_MS);
    if (ai.up) fail_msg("the archive still says up with the OSD stopped (errors %" PRIu64 ")", ai.errors_write);
    assert_true(ai.lag_bytes > 0);
    assert_true(ai.errors_write > 0);
    /* Reads of what the disk holds are unaffected. */
    for (uint64_t i = 0; i < 20 + SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    tide_node_gens_info(n, &gi);
    if (tide_archive_wait(tide_node_archive(n), gi.gens[0].id, gi.gens[0].dat_durable, WAIT_MS) != 0)
        fail_msg("the archive did not catch up: %s", tide_last_error());
    t0 = th_now_ms();
    while (archive_info(n).lag_bytes != 0 && th_now_ms() - t0 < WAIT_MS) usleep(20000);
    ai = archive_info(n);
    assert_int_equal(ai.lag_bytes, 0);
    assert_int_equal(ai.up, 1);
    assert_int_equal(tide_node_close(n), 0);
}

static void archive_sync_answers_only_once_rados_holds_the_bytes(void **state)
{
    char dir[4096], prefix[64];
    tide_node_opts o;
    tide_node *n;
    tide_gens_info gi;
    uint64_t uploaded = 0;
    int rc;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    o.archive_sync = 1;
    n = open_node(&o);
    put_span(n, 0, SPAN);
    rotate(n);
    put_span(n, SPAN, SPAN);
    rotate(n);                                         /* span 0 now only in the archive */
    put_span(n, 2 * SPAN, 10);
    assert_int_equal(tide_node_sync(n), 0);
    tide_node_gens_info(n, &gi);
    const char *state_name = tide_archive_gen_state(tide_node_archive(n), gi.gens[0].id, &uploaded);
    if (uploaded < gi.gens[0].dat_durable)
        fail_msg("a sync returned with %" PRIu64 " of %" PRIu64 " bytes in the archive (%s)", uploaded,
                 gi.gens[0].dat_durable, state_name);
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    put_span(n, 2 * SPAN + 10, 10);
    rc = tide_node_sync(n);
    if (rc != TIDE_EUNAVAIL) fail_msg("a sync with the OSD stopped: %s (%s)", tide_strerror(rc), tide_last_error());
    /* The writes are durable on the disk all the same, and read back. */
    for (uint64_t i = 2 * SPAN; i < 2 * SPAN + 20; i++) assert_int_equal(get(n, i), 0);
    /* An object only the archive holds cannot be read now: unavailable, not absent. */
    rc = get(n, 0);
    if (rc != TIDE_EUNAVAIL) fail_msg("an archive-only key with the OSD stopped: %s", tide_strerror(rc));
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    {
        double t0 = th_now_ms();
        while ((rc = tide_node_sync(n)) == TIDE_EUNAVAIL && th_now_ms() - t0 < WAIT_MS) usleep(50000);
    }
    assert_int_equal(rc, 0);
    {
        double t0 = th_now_ms();
        while ((rc = get(n, 0)) == TIDE_EUNAVAIL && th_now_ms() - t0 < WAIT_MS) usleep(50000);
    }
    assert_int_equal(rc, 0);
    assert_true(tide_node_archive_sync_waits(n, 1) >= 1);
    assert_int_equal(tide_node_close(n), 0);
}

static void a_second_store_on_the_same_prefix_stops_as_a_conflict(void **state)
{
    char dir1[4096], dir2[4096], prefix[64];
    tide_node_opts o1, o2;
    tide_node *a, *b;
    double t0;

    (void)state;
    if (th_scratch_make(dir1, sizeof dir1) || th_scratch_make(dir2, sizeof dir2)) fail();
    new_prefix(prefix, sizeof prefix);
    node_opts(&o1, dir1, prefix);
    node_opts(&o2, dir2, prefix);
    a = open_node(&o1);
    put_span(a, 0, SPAN);
    rotate(a);
    wait_sealed(a, 1);
    assert_int_equal(tide_node_close(a), 0);
    /* Another store, its generation 1 another uid: it must not write over it. */
    b = open_node(&o2);
    put_span(b, 1000000, 20);
    t0 = th_now_ms();
    while (!archive_info(b).conflict && th_now_ms() - t0 < WAIT_MS) usleep(20000);
    assert_int_equal(archive_info(b).conflict, 1);
    if (strstr(archive_info(b).problem, "another store") == NULL)
        fail_msg("the conflict does not say what it is: %s", archive_info(b).problem);
    /* Its generation 1 is not the archive's sealed 1: no rotation drops it. */
    {
        tide_node_rotation_report r;
        memset(&r, 0, sizeof r);
        assert_int_equal(tide_node_rotate(b, "admin", &r), 0);    /* creates 2, drops nothing */
        put_span(b, 1000020, 20);
        memset(&r, 0, sizeof r);
        assert_int_equal(tide_node_rotate(b, "admin", &r), TIDE_EUNAVAIL);
        assert_int_equal(oldest_id(b), 1);
        for (uint64_t i = 1000000; i < 1000040; i++) assert_int_equal(get(b, i), 0);
    }
    assert_int_equal(tide_node_close(b), 0);
    /* The first store's archive is whole: reopened, it serves span 0 from it. */
    a = open_node(&o1);
    put_span(a, SPAN, SPAN);
    rotate(a);
    put_span(a, 2 * SPAN, 10);
    rotate(a);
    for (uint64_t i = 0; i < SPAN; i++) assert_int_equal(get(a, i), 0);
    assert_int_equal(tide_node_close(a), 0);
}

static void a_directory_older_than_its_archive_stops_as_a_conflict(void **state)
{
    char dir[4096], old[4096], prefix[64], cmd[8400], *out = NULL;
    tide_node_rotation_report r;
    tide_node_opts o, oo;
    tide_node *n;
    double t0;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) || th_scratch_make(old, sizeof old)) fail();
    new_prefix(prefix, sizeof prefix);
    node_opts(&o, dir, prefix);
    n = open_node(&o);
    put_span(n, 0, SPAN);
    assert_int_equal(tide_node_close(n), 0);
    /* A copy of the directory while generation 1 is the newest... */
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", dir, old);
    if (th_run(cmd, &out) != 0) fail_msg("%s: %s", cmd, out);
    free(out);
    /* ...then the node goes on: generation 1 takes more and is sealed. */
    n = open_node(&o);
    put_span(n, SPAN, 20);
    rotate(n);
    wait_sealed(n, 1);
    assert_int_equal(tide_node_close(n), 0);
    /* The old copy, started on the same prefix, still writes generation 1. */
    node_opts(&oo, old, prefix);
    n = open_node(&oo);
    t0 = th_now_ms();
    while (!archive_info(n).conflict && th_now_ms() - t0 < WAIT_MS) usleep(20000);
    assert_int_equal(archive_info(n).conflict, 1);
    if (strstr(archive_info(n).problem, "still writes") == NULL)
        fail_msg("the conflict does not say what it is: %s", archive_info(n).problem);
    assert_false(tide_archive_sealed(tide_node_archive(n), 1));
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_node_rotate(n, "admin", &r), 0);           /* drops nothing */
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_node_rotate(n, "admin", &r), TIDE_EUNAVAIL); /* would drop 1: refused */
    for (uint64_t i = 0; i < SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(tide_node_close(n), 0);
}

static void a_key_of_another_size_is_refused_by_the_archive(void **state)
{
    char dir[4096], prefix[64];
    uint8_t key[16] = { 1 };
    tide_node_opts o;
    tide_node *n;
    void *v = NULL;
    size_t len = 0;
    uint64_t gen = 0;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    n = open_node(&o);
    put_span(n, 0, 20);
    rotate(n);
    wait_sealed(n, 1);
    assert_int_equal(tide_archive_fetch(tide_node_archive(n), 0, key, sizeof key, &v, &len, &gen),
                     TIDE_EKEYSIZE);
    assert_null(v);
    assert_int_equal(tide_node_close(n), 0);
}

static void archive_keep_deletes_the_oldest_sealed_generations(void **state)
{
    tide_rados_opts ro = { cluster.conf, NULL, cluster.pool, 5 };
    char dir[4096], prefix[64], oid[TIDE_ARCHIVE_OID_CAP];
    tide_archive_catalog cat;
    tide_rados *r = NULL;
    tide_node_opts o;
    tide_node *n;
    uint64_t size = 0;
    double t0;

    (void)state;
    prepare(&o, dir, sizeof dir, prefix, sizeof prefix);
    o.archive.keep = 2;
    n = open_node(&o);
    for (unsigned s = 0; s < 6; s++) {
        put_span(n, (uint64_t)s * SPAN, SPAN);
        rotate(n);
    }
    /* Generations 1..6 sealed in turn; the archive keeps the newest 2. */
    wait_sealed(n, 6);
    t0 = th_now_ms();
    /* A generation being deleted is no longer sealed, and counts as deleted
     * once its objects and its entry are gone: wait for both. */
    while ((archive_info(n).sealed_generations > 2 || archive_info(n).deleted_generations < 4) &&
           th_now_ms() - t0 < WAIT_MS)
        usleep(20000);
    assert_int_equal(archive_info(n).sealed_generations, 2);
    assert_true(archive_info(n).deleted_generations >= 4);
    if (tide_archive_catalog_snapshot(tide_node_archive(n), &cat) != 0) fail();
    for (uint64_t id = 1; id <= 4; id++) assert_null(tide_archive_catalog_find(&cat, id));
    assert_non_null(tide_archive_catalog_find(&cat, 5));
    assert_non_null(tide_archive_catalog_find(&cat, 6));
    tide_archive_catalog_clear(&cat);
    /* Their objects are gone, the kept ones' are there. */
    if (tide_rados_connect(&r, &ro) != 0) fail_msg("connect: %s", tide_last_error());
    for (uint64_t id = 1; id <= 4; id++) {
        tide_archive_oid_dat(oid, prefix, id, 0);
        assert_int_equal(tide_rados_stat(r, oid, &size), TIDE_ENOENT);
        tide_archive_oid_filter(oid, prefix, id);
        assert_int_equal(tide_rados_stat(r, oid, &size), TIDE_ENOENT);
    }
    tide_archive_oid_dat(oid, prefix, 5, 0);
    assert_int_equal(tide_rados_stat(r, oid, &size), 0);
    tide_rados_close(r);
    /* What retention deleted is gone; what it kept is served. */
    assert_int_equal(get(n, 0), TIDE_ENOTFOUND);
    for (uint64_t i = 4 * SPAN; i < 6 * SPAN; i++) assert_int_equal(get(n, i), 0);
    assert_int_equal(tide_node_close(n), 0);
}

/* ---- crashes ------------------------------------------------------------------ */

typedef struct crash_at {
    const char *step;
    uint64_t id;
    unsigned skip;               /* events of that step to let pass first */
} crash_at;

static void crash_trace(void *arg, const char *step, uint64_t id, uint64_t bytes)
{
    crash_at *c = arg;
    (void)bytes;
    if (strcmp(step, c->step) == 0 && id == c->id && c->skip-- == 0) raise(SIGKILL);
}

/* The child: a node that writes two spans, rotates once and waits to die
 * at `step` of generation 1's upload or seal. */
static void crashing_child(const char *dir, const char *prefix, crash_at *c)
{
    tide_node_opts o;
    tide_node *n;

    node_opts(&o, dir, prefix);
    o.archive.trace = crash_trace;
    o.archive.trace_arg = c;
    o.archive.inflight = 1;      /* one write at a time: the crash point is exact */
    if (tide_node_open(&n, &o) != 0) _exit(3);
    for (uint64_t i = 0; i < SPAN; i++) {
        uint8_t key[32], val[3000];
        key_of(i, key);
        th_value(i, len_of(i), val);
        if (tide_node_put(n, key, val, len_of(i)) != 0) _exit(4);
    }
    if (tide_node_rotate(n, "admin", NULL) != 0) _exit(5);
    sleep(300);                  /* the trace hook kills it long before */
    _exit(6);
}

/* Every object of a sealed generation is the local file's bytes, and the
 * manifest's sums are the objects'. */
static void archive_matches_local(const char *dir, const char *prefix, uint64_t id)
{
    tide_rados_opts ro = { cluster.conf, NULL, cluster.pool, 5 };
    tide_archive_catalog cat;
    tide_archive_gen *g;
    tide_rados *r = NULL;
    char oid[TIDE_ARCHIVE_OID_CAP], path[4200], *text = NULL;
    uint8_t *local = NULL, *obj = NULL;
    size_t len = 0, got = 0;

    if (tide_rados_connect(&r, &ro) != 0) fail_msg("connect: %s", tide_last_error());
    tide_archive_oid_manifest(oid, prefix);
    if (tide_rados_read_full(r, oid, TIDE_ARCHIVE_MANIFEST_CAP, &text, &len, NULL) != 0)
        fail_msg("manifest: %s", tide_last_error());
    if (tide_archive_catalog_decode(text, len, oid, prefix, &cat) != 0) fail_msg("%s", tide_last_error());
    free(text);
    g = tide_archive_catalog_find(&cat, id);
    assert_non_null(g);
    assert_int_equal(g->state, TIDE_ARCHIVE_SEALED);
    for (int f = 0; f < 2; f++) {
        uint64_t bytes = f ? g->key_bytes : g->dat_bytes;
        unsigned chunks = f ? g->key_chunks : g->dat_chunks;
        const uint64_t *sums = f ? g->key_sums : g->dat_sums;

        snprintf(path, sizeof path, "%s/gen-%012" PRIu64 "/%s", dir, id, f ? "nudb.key" : "nudb.dat");
        if (th_read_file(path, &local, &len) != 0) fail_msg("%s unreadable", path);
        if (len != bytes) fail_msg("%s: %zu bytes, the manifest says %" PRIu64, path, len, bytes);
        obj = malloc(g->chunk_bytes);
        for (unsigned c = 0; c < chunks; c++) {
            uint64_t off = (uint64_t)c * g->chunk_bytes;
            size_t want = bytes - off < g->chunk_bytes ? (size_t)(bytes - off) : (size_t)g->chunk_bytes;
            if (f) tide_archive_oid_key(oid, prefix, id, c);
            else tide_archive_oid_dat(oid, prefix, id, c);
            if (tide_rados_read(r, oid, 0, obj, g->chunk_bytes, &got) != 0) fail_msg("%s", tide_last_error());
            if (got != want) fail_msg("%s holds %zu bytes, expected %zu", oid, got, want);
            if (memcmp(obj, local + off, want) != 0) fail_msg("%s differs from %s at chunk %u", oid, path, c);
            if (XXH64(obj, got, 0) != sums[c]) fail_msg("%s: its XXH64 is not the manifest's", oid);
        }
        free(obj);
        free(local);
        local = obj = NULL;
    }
    tide_archive_catalog_clear(&cat);
    tide_rados_close(r);
}

static void crash_then_finish(const char *step, unsigned skip)
{
    char dir[4096], prefix[64];
    crash_at c = { step, 1, skip };
    tide_node_opts o;
    tide_node *n;
    pid_t pid;
    int status = 0;

    if (th_scratch_make(dir, sizeof dir)) fail();
    new_prefix(prefix, sizeof prefix);
    pid = th_fork();
    if (pid < 0) fail_msg("fork");
    if (pid == 0) crashing_child(dir, prefix, &c);
    th_waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("the child did not die at step %s (status %#x)", step, status);
    /* The node again, on the same directory and prefix: it finishes. */
    node_opts(&o, dir, prefix);
    n = open_node(&o);
    put_span(n, SPAN, 10);
    rotate(n);                                         /* drops generation 1 once sealed */
    assert_true(oldest_id(n) > 1);
    for (uint64_t i = 0; i < SPAN + 10; i++) {
        int rc = get(n, i);
        if (rc) fail_msg("after a crash at %s, key %" PRIu64 ": %s (%s)", step, i, tide_strerror(rc),
                         tide_last_error());
    }
    assert_int_equal(tide_node_close(n), 0);
}

static void a_crash_after_a_chunk_resumes_the_upload(void **state)
{
    (void)state;
    crash_then_finish("written", 2);
}

static void a_crash_after_the_key_file_seals_whole(void **state)
{
    (void)state;
    crash_then_finish("key", 0);
}

static void a_crash_after_the_filter_seals_whole(void **state)
{
    (void)state;
    crash_then_finish("filter", 0);
}

static void a_crash_after_the_seal_loses_nothing(void **state)
{
    (void)state;
    crash_then_finish("sealed", 0);
}

static void a_sealed_generation_is_the_local_files_byte_for_byte(void **state)
{
    char dir[4096], prefix[64];
    crash_at c = { "sealed", 1, 0 };
    pid_t pid;
    int status = 0;

    (void)state;
    if (th_scratch_make(dir, sizeof dir)) fail();
    new_prefix(prefix, sizeof prefix);
    /* Killed right after the seal: generation 1 is still on the disk. */
    pid = th_fork();
    if (pid < 0) fail_msg("fork");
    if (pid == 0) crashing_child(dir, prefix, &c);
    th_waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    archive_matches_local(dir, prefix, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(every_object_reads_back_after_its_local_generations_are_gone, teardown),
        cmocka_unit_test_teardown(a_rotation_never_drops_a_generation_the_archive_lacks, teardown),
        cmocka_unit_test_teardown(the_health_gate_waits_for_the_archive_and_counts_it, teardown),
        cmocka_unit_test_teardown(writes_go_on_while_the_osd_is_down_and_the_archive_catches_up, teardown),
        cmocka_unit_test_teardown(archive_sync_answers_only_once_rados_holds_the_bytes, teardown),
        cmocka_unit_test_teardown(a_second_store_on_the_same_prefix_stops_as_a_conflict, teardown),
        cmocka_unit_test_teardown(a_directory_older_than_its_archive_stops_as_a_conflict, teardown),
        cmocka_unit_test_teardown(a_key_of_another_size_is_refused_by_the_archive, teardown),
        cmocka_unit_test_teardown(archive_keep_deletes_the_oldest_sealed_generations, teardown),
        cmocka_unit_test_teardown(a_crash_after_a_chunk_resumes_the_upload, teardown),
        cmocka_unit_test_teardown(a_crash_after_the_key_file_seals_whole, teardown),
        cmocka_unit_test_teardown(a_crash_after_the_filter_seals_whole, teardown),
        cmocka_unit_test_teardown(a_crash_after_the_seal_loses_nothing, teardown),
        cmocka_unit_test_teardown(a_sealed_generation_is_the_local_files_byte_for_byte, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
