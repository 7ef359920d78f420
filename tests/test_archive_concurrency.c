/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_archive_concurrency.c: reads through the archive on many threads
 * while the archiver seals generations and retention deletes them, against
 * a real Ceph cluster (tests/support/ceph.h). `make tsan` runs it (its name
 * holds "concurrency").
 *
 * A primary writes spans and rotates (each rotation waits for the seal it
 * needs), and archive_keep deletes the oldest sealed generations; four
 * readers read keys of every span written so far, over and over, through
 * a replica of the same prefix (which never copies forward, so every read
 * goes to the archive unless its small caches answer), while the replica
 * follows the manifest and its generations come and go under them. What
 * is asserted: a read never returns bytes other than the key's; it answers
 * a value or "absent" (a key not sealed yet, or whose generation retention
 * deleted), never an error; and every key of the generations the archive
 * keeps reads back through the replica at the end.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "archive/archive.h"
#include "helpers.h"
#include "node/node.h"
#include "support/ceph.h"
#include "tide/error.h"
#include "util/log.h"

#define SPAN 150
#define SPANS 7
#define READERS 4
#define WAIT_MS 120000

static th_ceph cluster;

static int group_setup(void **state)
{
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    th_ceph_stop(&cluster);
    return 0;
}

static size_t len_of(uint64_t i) { return th_len(i, 50, 1500); }

typedef struct shared {
    tide_node *n;                /* the replica the readers read */
    uint64_t written;            /* keys below it were written (atomic) */
    int stop;                    /* atomic */
    uint64_t reads, found, absent;
    char error[512];             /* the first wrong answer (under mu) */
    pthread_mutex_t mu;
} shared;

static void *reader(void *arg)
{
    shared *sh = arg;
    th_rng rng;
    uint64_t reads = 0, found = 0, absent = 0;

    th_rng_init(&rng, (uint64_t)pthread_self());
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        uint64_t written = __atomic_load_n(&sh->written, __ATOMIC_ACQUIRE), i;
        uint8_t key[32], want[1500];
        tide_cache_obj *v = NULL;
        int rc;

        if (written == 0) { usleep(1000); continue; }
        i = th_rng_below(&rng, written);
        th_key(i, 32, key);
        th_value(i, len_of(i), want);
        rc = tide_node_get(sh->n, key, &v);
        reads++;
        if (rc == 0) {
            found++;
            if (tide_cache_obj_len(v) != len_of(i) || memcmp(tide_cache_obj_data(v), want, len_of(i)) != 0) {
                pthread_mutex_lock(&sh->mu);
                if (!sh->error[0]) snprintf(sh->error, sizeof sh->error, "key %" PRIu64 ": other bytes", i);
                pthread_mutex_unlock(&sh->mu);
            }
            tide_cache_obj_release(v);
        } else if (rc == TIDE_ENOTFOUND) {
            absent++;
        } else {
            pthread_mutex_lock(&sh->mu);
            if (!sh->error[0])
                snprintf(sh->error, sizeof sh->error, "key %" PRIu64 ": %s (%s)", i, tide_strerror(rc),
                         tide_last_error());
            pthread_mutex_unlock(&sh->mu);
        }
    }
    pthread_mutex_lock(&sh->mu);
    sh->reads += reads;
    sh->found += found;
    sh->absent += absent;
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

static void rotate(tide_node *n)
{
    double t0 = th_now_ms();

    for (;;) {
        tide_node_rotation_report r;
        int rc;
        memset(&r, 0, sizeof r);
        rc = tide_node_rotate(n, "admin", &r);
        if (rc == 0) return;
        if (rc != TIDE_EUNAVAIL || th_now_ms() - t0 > WAIT_MS) fail_msg("rotation: %s", r.error);
        usleep(50000);
    }
}

static void base_opts(tide_node_opts *o, const char *dir, const char *prefix)
{
    tide_node_opts_init(o);
    o->dir = dir;
    o->sweep_interval_ms = 0;
    o->cache_target = 8;                  /* caches too small to answer: reads go to the archive */
    o->cache_budget = 16u << 10;
    o->rotate_check_ms = 0;
    o->back_off_ms = 0;
    o->memory_poll_ms = 0;
    o->archive_on = 1;
    o->archive.conf = cluster.conf;
    o->archive.pool = cluster.pool;
    o->archive.prefix = prefix;
    o->archive.chunk_bytes = 64u << 10;
    o->archive.keep = 3;
    o->archive.timeout_s = 5;
    o->archive.filter_budget = 700;       /* two filters of 150 keys: the others are dropped and taken */
    o->archive.poll_ms = 20;
}

static void reads_race_seals_and_retention(void **state)
{
    char dir[4096], rdir[4096], prefix[64];
    pthread_t threads[READERS];
    tide_node_opts o, ro;
    tide_archive_info ai;
    tide_node *primary = NULL;
    shared sh;
    double t0;

    (void)state;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    if (th_scratch_make(dir, sizeof dir) || th_scratch_make(rdir, sizeof rdir)) fail();
    snprintf(prefix, sizeof prefix, "c%d", (int)getpid());
    base_opts(&o, dir, prefix);
    o.online_delete_on = 1;
    o.generations = 2;
    base_opts(&ro, rdir, prefix);
    ro.archive.replica = 1;
    if (tide_node_open(&primary, &o) != 0) fail_msg("open: %s", tide_last_error());
    if (tide_node_open(&sh.n, &ro) != 0) fail_msg("open the replica: %s", tide_last_error());
    for (int t = 0; t < READERS; t++) assert_int_equal(pthread_create(&threads[t], NULL, reader, &sh), 0);
    for (uint64_t s = 0; s < SPANS; s++) {
        for (uint64_t i = s * SPAN; i < (s + 1) * SPAN; i++) {
            uint8_t key[32], val[1500];
            th_key(i, 32, key);
            th_value(i, len_of(i), val);
            int rc = tide_node_put(primary, key, val, len_of(i));
            if (rc && rc != TIDE_EEXIST) fail_msg("put %" PRIu64 ": %s", i, tide_strerror(rc));
            __atomic_store_n(&sh.written, i + 1, __ATOMIC_RELEASE);
        }
        rotate(primary);
    }
    rotate(primary);                      /* the last span sealed too */
    __atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < READERS; t++) pthread_join(threads[t], NULL);
    if (sh.error[0]) fail_msg("a reader saw: %s", sh.error);
    tide_archive_get_info(tide_node_archive(sh.n), &ai);
    fprintf(stderr, "readers: %" PRIu64 " reads, %" PRIu64 " found, %" PRIu64 " absent; the replica's archive: %"
            PRIu64 " seals seen, %" PRIu64 " reads found, %" PRIu64 " missed, %u filters dropped\n", sh.reads,
            sh.found, sh.absent, ai.seals, ai.reads_found, ai.reads_missed, ai.filters_dropped);
    assert_true(sh.found > 0);
    assert_true(ai.reads_found > 0);
    /* The archive keeps the newest 3 sealed generations: the last two
     * spans' and the empty one the last rotation sealed. They read back
     * through the replica once it has seen their seals. */
    for (uint64_t i = (SPANS - 2) * SPAN; i < SPANS * SPAN; i++) {
        uint8_t key[32];
        tide_cache_obj *v = NULL;
        int rc;
        th_key(i, 32, key);
        t0 = th_now_ms();
        while ((rc = tide_node_get(sh.n, key, &v)) == TIDE_ENOTFOUND && th_now_ms() - t0 < WAIT_MS)
            usleep(20000);
        if (rc) fail_msg("key %" PRIu64 " through the replica at the end: %s", i, tide_strerror(rc));
        tide_cache_obj_release(v);
    }
    assert_int_equal(tide_node_close(sh.n), 0);
    assert_int_equal(tide_node_close(primary), 0);
    pthread_mutex_destroy(&sh.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(reads_race_seals_and_retention, th_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
