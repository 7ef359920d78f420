/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_node_concurrency.c: gets racing puts of the same keys; and, with
 * online delete, gets racing puts and rotations.
 *
 * Readers ask for keys a writer is about to put, so many of their misses
 * reach the key cache while the put of the same key is in flight. Once the
 * writer is done every key must read back: a miss remembered after the put
 * erased the key from the key cache would hide the key for key_cache_age
 * (node.c's put_gen guards against exactly that).
 *
 * With generations (G = 2) the writer rotates after every SPAN puts, so
 * key j is written in span j / SPAN + 1 and, whatever the readers do
 * (their reads only copy it forward, extending its life), it is readable
 * until the rotation count reaches j / SPAN + 2. A reader that gets
 * ENOTFOUND checks, after its get, the count and the rotations the writer
 * has begun (a dropping rotation hides the generation it drops before its
 * manifest moves the count: gens.h): a miss before rotation j / SPAN + 2
 * began is a key lost inside its retention (through the node cache's tag
 * or the generations).
 * The readers read even keys only, so each odd key is untouched after its
 * put and at the end is readable exactly when its span is one of the last
 * two (the node cache still holds every one of them: the tag decides).
 * Run under ThreadSanitizer by `make tsan` (the name contains
 * "concurrency").
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "node/node.h"
#include "tide/error.h"

#define READERS 3

typedef struct race {
    tide_node *node;
    uint64_t keys;
    _Atomic uint64_t next;     /* the writer's next key */
    _Atomic int writer_done;
    _Atomic uint64_t reader_hits, reader_misses;
    th_failures fail;          /* the threads' failures, for the test's thread */
} race;

/* Put key i with its 64-byte value; a failure is recorded for the test's
 * thread and returns non-zero. Both writers below use it. */
static int put_key(tide_node *n, uint64_t i, th_failures *fail)
{
    uint8_t key[32], val[64];
    int rc;

    th_key(i, 32, key);
    th_value(i, sizeof val, val);
    rc = tide_node_put(n, key, val, sizeof val);
    if (rc != 0)
        th_failure(fail, "put of key %" PRIu64 ": expected 0, got %d (%s)", i, rc, tide_strerror(rc));
    return rc;
}

static void *writer(void *arg)
{
    race *r = arg;
    for (uint64_t i = 0; i < r->keys; i++) {
        if (put_key(r->node, i, &r->fail) != 0) break;
        atomic_store(&r->next, i + 1);
    }
    atomic_store(&r->writer_done, 1);
    return NULL;
}

static void *reader(void *arg)
{
    race *r = arg;
    uint8_t key[32];
    th_rng rng;
    th_rng_init(&rng, (uint64_t)(uintptr_t)&rng);
    while (!atomic_load(&r->writer_done)) {
        uint64_t k = atomic_load(&r->next) + th_rng_below(&rng, 4);   /* about to be put */
        tide_cache_obj *v = NULL;
        th_key(k, 32, key);
        int rc = tide_node_get(r->node, key, &v);
        if (rc == 0) atomic_fetch_add(&r->reader_hits, 1), tide_cache_obj_release(v);
        else if (rc == TIDE_ENOTFOUND) atomic_fetch_add(&r->reader_misses, 1);
        else th_failure(&r->fail, "get of key %" PRIu64 ": expected 0 or TIDE_ENOTFOUND, got %d (%s)", k, rc,
                        tide_strerror(rc));
    }
    return NULL;
}

static _Atomic uint64_t fake_now_us = 1000000;
static uint64_t fake_clock(void *arg) { (void)arg; return atomic_load(&fake_now_us); }

static void every_key_reads_back_after_gets_raced_its_put(void **state)
{
    th_scratch *sc = *state;
    race r = { .keys = th_small() ? 3000 : 20000 };
    tide_node_opts o;
    pthread_t w, rd[READERS];

    th_failures_init(&r.fail);
    tide_node_opts_init(&o);
    o.dir = sc->dir;
    o.sweep_interval_ms = 0;
    o.key_cache_age_s = 3600;            /* a stale miss would outlive the test */
    o.cache_age_s = 1;                   /* while the objects are swept out below */
    o.hooks.clock_us = fake_clock;
    expect_rc(tide_node_open(&r.node, &o), 0, "open");
    for (int i = 0; i < READERS; i++) pthread_create(&rd[i], NULL, reader, &r);
    pthread_create(&w, NULL, writer, &r);
    pthread_join(w, NULL);
    for (int i = 0; i < READERS; i++) pthread_join(rd[i], NULL);
    th_failures_check(&r.fail, "the writer and the readers");
    if (atomic_load(&r.reader_misses) == 0) fail_msg("expected the readers to miss at least once");

    /* Empty the node cache so every get below asks the key cache first. */
    tide_node_sweep_report sw;
    atomic_fetch_add(&fake_now_us, 10 * 1000000u);
    tide_node_sweep(r.node, &sw);
    expect_u64(sw.node_cache.entries_before - sw.node_cache.evicted, 0, "node cache entries left");

    uint64_t missing = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < r.keys; i++) {
        uint8_t key[32];
        tide_cache_obj *v = NULL;
        th_key(i, 32, key);
        int rc = tide_node_get(r.node, key, &v);
        if (rc == 0) tide_cache_obj_release(v);
        else if (missing++ == 0) first = i;
    }
    if (missing) fail_msg("%" PRIu64 " of %" PRIu64 " keys read as missing after their put (first: %" PRIu64 ")",
                          missing, r.keys, first);
    expect_rc(tide_node_close(r.node), 0, "close");
}

#define SPAN 500

typedef struct rot_race {
    tide_node *node;
    uint64_t keys;
    _Atomic uint64_t next;
    _Atomic int writer_done;
    _Atomic uint64_t found, gone;
    _Atomic uint64_t started;            /* rotations the writer has begun */
    th_failures fail;
} rot_race;

static uint64_t rotations_now(tide_node *n)
{
    tide_gens_info gi;
    tide_node_gens_info(n, &gi);
    return gi.rotations;
}

static void *rot_writer(void *arg)
{
    rot_race *r = arg;
    int rc;
    for (uint64_t i = 0; i < r->keys; i++) {
        if (put_key(r->node, i, &r->fail) != 0) break;
        atomic_store(&r->next, i + 1);
        if ((i + 1) % SPAN == 0) atomic_fetch_add(&r->started, 1);
        if ((i + 1) % SPAN == 0 && (rc = tide_node_rotate(r->node, "admin", NULL)) != 0) {
            th_failure(&r->fail, "rotation after key %" PRIu64 ": %d (%s)", i, rc, tide_strerror(rc));
            break;
        }
    }
    atomic_store(&r->writer_done, 1);
    return NULL;
}

static void *rot_reader(void *arg)
{
    rot_race *r = arg;
    uint8_t key[32], want[64];
    th_rng rng;
    th_rng_init(&rng, (uint64_t)(uintptr_t)&rng);
    while (!atomic_load(&r->writer_done)) {
        uint64_t w = atomic_load(&r->next), j;
        tide_cache_obj *v = NULL;
        if (w == 0) continue;
        j = w - 1 - th_rng_below(&rng, w < 4 * SPAN ? w : 4 * SPAN);
        j &= ~(uint64_t)1;                 /* even keys only: the odd ones stay untouched */
        th_key(j, 32, key);
        int rc = tide_node_get(r->node, key, &v);
        if (rc == 0) {
            th_value(j, sizeof want, want);
            if (tide_cache_obj_len(v) != sizeof want || memcmp(tide_cache_obj_data(v), want, sizeof want) != 0)
                th_failure(&r->fail, "key %" PRIu64 ": wrong bytes", j);
            tide_cache_obj_release(v);
            atomic_fetch_add(&r->found, 1);
        } else if (rc == TIDE_ENOTFOUND) {
            /* A rotation that drops a generation hides it before its
             * manifest moves the count (gens.h: its span is ending), so
             * the bound is the rotations begun, read after the get. */
            uint64_t after = rotations_now(r->node), begun = atomic_load(&r->started);
            if (after < j / SPAN + 2 && begun < j / SPAN + 2)
                th_failure(&r->fail, "key %" PRIu64 " (span %" PRIu64 ") read as missing after %" PRIu64
                           " rotations: it is kept until %" PRIu64, j, j / SPAN + 1, after, j / SPAN + 2);
            atomic_fetch_add(&r->gone, 1);
        } else {
            th_failure(&r->fail, "get of key %" PRIu64 ": %d (%s)", j, rc, tide_strerror(rc));
        }
    }
    return NULL;
}

static void no_key_is_lost_inside_its_retention_while_gets_race_puts_and_rotations(void **state)
{
    th_scratch *sc = *state;
    rot_race r = { .keys = th_small() ? 3000 : 12000 };
    tide_node_opts o;
    pthread_t w, rd[READERS];
    uint64_t final, missing = 0;

    th_failures_init(&r.fail);
    tide_node_opts_init(&o);
    o.dir = sc->dir;
    o.sweep_interval_ms = 0;
    o.online_delete_on = 1;
    o.generations = 2;
    o.rotate_check_ms = 0;
    o.back_off_ms = 0;
    o.trim_after_rotation = 0;
    expect_rc(tide_node_open(&r.node, &o), 0, "open with generations");
    for (int i = 0; i < READERS; i++) pthread_create(&rd[i], NULL, rot_reader, &r);
    pthread_create(&w, NULL, rot_writer, &r);
    pthread_join(w, NULL);
    for (int i = 0; i < READERS; i++) pthread_join(rd[i], NULL);
    th_failures_check(&r.fail, "the writer and the readers");
    final = rotations_now(r.node);
    expect_u64(final, r.keys / SPAN, "a rotation per span");
    /* The odd keys were never read: each is readable exactly while its
     * span is one of the last two, the cache's copy included. */
    for (uint64_t j = 1; j < r.keys; j += 2) {
        uint8_t key[32];
        tide_cache_obj *v = NULL;
        int keep = j / SPAN + 2 > final, rc;
        th_key(j, 32, key);
        rc = tide_node_get(r.node, key, &v);
        if (rc == 0) tide_cache_obj_release(v);
        if (keep && rc != 0) missing++;
        if (!keep && rc != TIDE_ENOTFOUND)
            fail_msg("odd key %" PRIu64 " of span %" PRIu64 ", never read, should be gone after %" PRIu64
                     " rotations; got %d", j, j / SPAN + 1, final, rc);
    }
    if (missing) fail_msg("%" PRIu64 " untouched keys of the last two spans are missing", missing);
    if (atomic_load(&r.found) == 0) fail_msg("expected the readers to find keys");
    expect_rc(tide_node_close(r.node), 0, "close");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_key_reads_back_after_gets_raced_its_put, th_scratch_setup,
                                        th_scratch_teardown),
        cmocka_unit_test_setup_teardown(no_key_is_lost_inside_its_retention_while_gets_race_puts_and_rotations,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
