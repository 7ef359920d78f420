/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_cache_concurrency.c: the tagged cache and the key cache under
 * threads.
 *
 * Four workers insert, look up, erase and release objects of 2000 keys for
 * about two seconds. Each keeps up to 32 of the objects it gets for 1.5 s of
 * cache time (a few early), longer than the 1 s age, so entries are demoted
 * while held, revived by lookups, and die while weak, however fast the
 * machine (or slow, under TSan); on a loaded machine the run goes on, up to
 * a minute, until each has happened at least once. A sweeper thread advances the injected
 * clock by 250 ms and sweeps every 2 ms, so entries keep expiring; a byte
 * budget and a hard limit keep the cache evicting on insert too. The key
 * cache gets the same treatment for one second. Every object's bytes are
 * value(i) of th_len(i) bytes (the fixture formula), so a lookup must return
 * NULL or exactly those bytes, and a held object keeps them. At the end:
 * every lookup was counted as a hit or a miss, bytes never passed the hard
 * limit, the account counter equals bytes, demotions, revivals and evictions
 * all happened, and once the workers have dropped their references and the
 * cache is destroyed, every object made has been freed exactly once (the
 * free hook counts them; ASan would see a second free).
 *
 * The objects live in the cache's arena (64 KiB segments; TEST_CACHE_ARENA=0
 * runs them on malloc), as do the key cache's entries in its own, and the
 * sweepers evacuate and release after each sweep, so entries are moved to copies while workers hold and read the
 * originals: a held object must keep its bytes across a move, and the free
 * hook sees each moved original once more (made + moved == freed at the
 * end). The run goes on until at least one object has been moved.
 *
 * Threads never call cmocka (its failures longjmp); they record the first
 * failure and a count (th_failures), and the main thread fails after
 * joining them.
 * `make tsan` runs this under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <pthread.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "cache/keycache.h"
#include "tide/error.h"
#include "util/clock.h"
#include "helpers.h"

#define KEY_SIZE 32
#define KEYS     2000
#define VMIN     1
#define VMAX     400
#define WORKERS  4
#define HOLD     32
#define HOLD_US  1500000u   /* cache time a worker keeps a reference */
#define RUN_MS   2000
#define EVENTS_MS 60000     /* the most the cache test runs waiting for its events */
#define HARD_LIMIT (256u << 10)
#define BUDGET     (192u << 10)
#define SEGMENT    (64u << 10)
#define EVACUATE   (128u << 10) /* bytes an evacuation may move */

/* 1 unless TEST_CACHE_ARENA=0. */
static int arena_on(void)
{
    const char *v = getenv("TEST_CACHE_ARENA");

    return v == NULL || strcmp(v, "0") != 0;
}

/* ---- shared state ---- */

typedef struct shared {
    tide_cache *c;
    tide_keycache *k;
    atomic_ullong now;              /* the injected clock */
    atomic_int stop;
    int64_t account;                /* updated by the cache with atomic adds */
    atomic_ullong made, freed;
    atomic_ullong lookups, inserts, sweeps, moved;
    atomic_ullong kc_contains;
    tide_cache_obj_hook hook;
    th_failures fail;
} shared;

static uint64_t shared_clock(void *arg)
{
    return atomic_load_explicit(&((shared *)arg)->now, memory_order_relaxed);
}

static void count_free(void *arg, const tide_cache_obj *o)
{
    shared *sh = arg;

    if (tide_cache_obj_refs(o) != 0)
        th_failure(&sh->fail, "an object freed with %u strong references: expected 0",
                   tide_cache_obj_refs(o));
    atomic_fetch_add(&sh->freed, 1);
}

static void shared_init(shared *sh)
{
    memset(sh, 0, sizeof *sh);
    th_failures_init(&sh->fail);
    atomic_init(&sh->now, 1000000000ull);
    atomic_init(&sh->stop, 0);
    sh->hook.on_free = count_free;
    sh->hook.arg = sh;
}

/* ---- the tagged cache ---- */

typedef struct worker_arg {
    shared *sh;
    int id;
} worker_arg;

static void check_obj(shared *sh, uint64_t i, tide_cache_obj *o, const char *how)
{
    uint8_t want[VMAX];
    size_t len = th_len(i, VMIN, VMAX);

    if (tide_cache_obj_len(o) != len) {
        th_failure(&sh->fail, "%s of item %" PRIu64 ": expected %zu bytes, got %zu", how, i,
                   len, tide_cache_obj_len(o));
        return;
    }
    th_value(i, len, want);
    if (memcmp(tide_cache_obj_data(o), want, len) != 0)
        th_failure(&sh->fail, "%s of item %" PRIu64 ": expected value(%" PRIu64 "), got "
                   "other bytes", how, i, i);
}

static void *worker_main(void *p)
{
    worker_arg *wa = p;
    shared *sh = wa->sh;
    tide_cache_obj *held[HOLD] = {0};
    uint64_t held_i[HOLD] = {0}, held_t[HOLD] = {0};
    uint8_t key[KEY_SIZE], val[VMAX];
    th_rng rng;
    uint64_t ops = 0;

    th_rng_init(&rng, th_seed(7) * 1000003u + (uint64_t)wa->id);
    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        uint64_t i = th_rng_below(&rng, KEYS), r = th_rng_below(&rng, 100);
        unsigned slot = (unsigned)th_rng_below(&rng, HOLD);
        tide_cache_obj *o = NULL;

        th_key(i, KEY_SIZE, key);
        if (r < 35) {
            size_t len = th_len(i, VMIN, VMAX);
            int rc;
            th_value(i, len, val);
            rc = tide_cache_obj_make(sh->c, &o, val, len);
            if (rc != 0) {
                th_failure(&sh->fail, "obj_make: expected 0, got %d", rc);
                break;
            }
            atomic_fetch_add(&sh->made, 1);
            rc = tide_cache_insert(sh->c, key, o);
            if (rc != 0)
                th_failure(&sh->fail, "insert of item %" PRIu64 ": expected 0, got %d (%s)",
                           i, rc, tide_last_error());
            atomic_fetch_add(&sh->inserts, 1);
        } else if (r < 97) {
            o = tide_cache_lookup(sh->c, key);
            atomic_fetch_add(&sh->lookups, 1);
            if (o) check_obj(sh, i, o, "lookup");
        } else {
            (void)tide_cache_erase(sh->c, key);
        }
        /* A held reference goes after HOLD_US of cache time (or, rarely,
         * early); a slot that is free takes the object just obtained. */
        uint64_t now = shared_clock(sh);
        if (held[slot] && (now - held_t[slot] >= HOLD_US || th_rng_below(&rng, 100) == 0)) {
            tide_cache_obj_release(held[slot]);
            held[slot] = NULL;
        }
        if (o && held[slot] == NULL) {
            held[slot] = o;
            held_i[slot] = i;
            held_t[slot] = now;
        } else {
            tide_cache_obj_release(o);
        }
        /* Held objects must keep their bytes whatever the cache does. */
        unsigned s2 = (unsigned)th_rng_below(&rng, HOLD);
        if (held[s2]) check_obj(sh, held_i[s2], held[s2], "a held object");
        if (++ops % 64 == 0) {
            tide_cache_stats st;
            tide_cache_stats_get(sh->c, &st);
            if (st.bytes > HARD_LIMIT)
                th_failure(&sh->fail, "bytes: expected at most the hard limit %u, got %zu",
                           HARD_LIMIT, st.bytes);
        }
    }
    for (int s = 0; s < HOLD; s++) tide_cache_obj_release(held[s]);
    return NULL;
}

static void *sweeper_main(void *p)
{
    shared *sh = p;

    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        tide_cache_sweep_report r;
        tide_cache_arena_report ar;
        int rc;
        atomic_fetch_add_explicit(&sh->now, 250000u, memory_order_relaxed);
        tide_cache_sweep(sh->c, &r);
        if (r.bytes_after > HARD_LIMIT)
            th_failure(&sh->fail, "sweep: bytes after, expected at most %u, got %zu",
                       HARD_LIMIT, r.bytes_after);
        rc = tide_cache_evacuate(sh->c, EVACUATE, &ar);
        if (rc != 0)
            th_failure(&sh->fail, "evacuate: expected 0, got %d (%s)", rc, tide_last_error());
        atomic_fetch_add(&sh->moved, ar.evac.moved_objects - ar.moved_entries);
        atomic_fetch_add(&sh->sweeps, 1);
        tide_clock_sleep_us(2000);
    }
    return NULL;
}

static void workers_and_a_sweeper_share_the_cache_and_every_object_is_freed_once(void **state)
{
    shared *sh = calloc(1, sizeof *sh);
    pthread_t th[WORKERS], sw;
    worker_arg wa[WORKERS];
    tide_cache_opts o;
    tide_cache_stats st;
    int rc;

    (void)state;
    if (sh == NULL) fail_msg("calloc");
    shared_init(sh);
    tide_cache_opts_init(&o);
    o.key_size = KEY_SIZE;
    o.target_size = 500;
    o.age_s = 1;
    o.budget_bytes = BUDGET;
    o.hard_limit_bytes = HARD_LIMIT;
    o.clock_us = shared_clock;
    o.clock_arg = sh;
    o.account_bytes = &sh->account;
    o.arena = arena_on();
    o.arena_segment_bytes = SEGMENT;
    o.obj_hook = &sh->hook;
    rc = tide_cache_create(&sh->c, &o);
    if (rc != 0) fail_msg("tide_cache_create: expected 0, got %d (%s)", rc, tide_last_error());

    for (int i = 0; i < WORKERS; i++) {
        wa[i].sh = sh;
        wa[i].id = i;
        pthread_create(&th[i], NULL, worker_main, &wa[i]);
    }
    pthread_create(&sw, NULL, sweeper_main, sh);
    /* RUN_MS, and on until a demotion, a revival and an eviction have each
     * happened (at most EVENTS_MS): on a loaded machine the threads may get
     * little of the CPU in RUN_MS, and the assertion below is about what
     * the cache does, not how fast. */
    {
        double t0 = th_now_ms(), t;
        do {
            tide_clock_sleep_us(20 * 1000);
            t = th_now_ms() - t0;
            tide_cache_stats_get(sh->c, &st);
        } while (t < EVENTS_MS && (t < RUN_MS || st.demotions == 0 || st.revivals == 0 || st.evictions == 0 ||
                                   (arena_on() && atomic_load(&sh->moved) == 0)));
    }
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
    pthread_join(sw, NULL);

    tide_cache_check(sh->c);
    tide_cache_stats_get(sh->c, &st);
    print_message("    %" PRIu64 " lookups (%" PRIu64 " hits), %" PRIu64 " inserts, %" PRIu64
                  " sweeps; %" PRIu64 " evictions, %" PRIu64 " demotions, %" PRIu64
                  " revivals, %" PRIu64 " reaped, %" PRIu64 " moved\n",
                  (uint64_t)atomic_load(&sh->lookups), st.hits, (uint64_t)atomic_load(&sh->inserts),
                  (uint64_t)atomic_load(&sh->sweeps), st.evictions, st.demotions, st.revivals,
                  st.reaped, (uint64_t)atomic_load(&sh->moved));
    th_failures_check(&sh->fail, "workers and sweeper");
    if (st.hits + st.misses != atomic_load(&sh->lookups))
        fail_msg("hits + misses: expected the %llu lookups, got %" PRIu64 " + %" PRIu64,
                 (unsigned long long)atomic_load(&sh->lookups), st.hits, st.misses);
    if (st.inserts != atomic_load(&sh->inserts))
        fail_msg("inserts: expected %llu, got %" PRIu64,
                 (unsigned long long)atomic_load(&sh->inserts), st.inserts);
    if (sh->account != (int64_t)st.bytes)
        fail_msg("account: expected bytes %zu, got %" PRId64, st.bytes, sh->account);
    if (st.demotions == 0 || st.revivals == 0 || st.evictions == 0)
        fail_msg("expected demotions, revivals and evictions all to happen, got %" PRIu64
                 ", %" PRIu64 ", %" PRIu64, st.demotions, st.revivals, st.evictions);
    if (arena_on() && atomic_load(&sh->moved) == 0)
        fail_msg("expected evacuations to move objects while workers held them, got none");
    /* Only the cache holds references now; each move made one more object. */
    uint64_t made = atomic_load(&sh->made) + atomic_load(&sh->moved);
    uint64_t before_destroy = atomic_load(&sh->freed);
    if (before_destroy + st.strong + st.weak < made)
        fail_msg("objects: %" PRIu64 " made (moves included), %" PRIu64 " freed, %zu entries: "
                 "some were lost", made, before_destroy, st.strong + st.weak);
    tide_cache_destroy(sh->c);
    if (atomic_load(&sh->freed) != made)
        fail_msg("objects freed after destroy: expected all %" PRIu64 " made (moves included), "
                 "got %llu", made, (unsigned long long)atomic_load(&sh->freed));
    if (sh->account != 0)
        fail_msg("account after destroy: expected 0, got %" PRId64, sh->account);
    pthread_mutex_destroy(&sh->fail.mu);
    free(sh);
}

/* ---- the key cache ---- */

static void *kc_worker_main(void *p)
{
    worker_arg *wa = p;
    shared *sh = wa->sh;
    uint8_t key[KEY_SIZE];
    th_rng rng;

    th_rng_init(&rng, th_seed(11) * 1000003u + (uint64_t)wa->id);
    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        uint64_t i = th_rng_below(&rng, KEYS), r = th_rng_below(&rng, 100);
        th_key(i, KEY_SIZE, key);
        if (r < 40) {
            int rc = tide_keycache_insert(sh->k, key);
            if (rc != 0) th_failure(&sh->fail, "keycache insert: expected 0, got %d", rc);
        } else if (r < 90) {
            (void)tide_keycache_contains(sh->k, key);
            atomic_fetch_add(&sh->kc_contains, 1);
        } else {
            (void)tide_keycache_erase(sh->k, key);
        }
    }
    return NULL;
}

static void *kc_sweeper_main(void *p)
{
    shared *sh = p;

    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        tide_keycache_sweep_report r;
        tide_cache_arena_report ar;
        atomic_fetch_add_explicit(&sh->now, 250000u, memory_order_relaxed);
        tide_keycache_sweep(sh->k, &r);
        if (tide_keycache_evacuate(sh->k, (size_t)1 << 20, &ar) != 0)
            th_failure(&sh->fail, "tide_keycache_evacuate: %s", tide_last_error());
        atomic_fetch_add(&sh->moved, ar.moved_entries);
        atomic_fetch_add(&sh->sweeps, 1);
        tide_clock_sleep_us(2000);
    }
    return NULL;
}

static void keycache_workers_and_a_sweeper_keep_the_counts_exact(void **state)
{
    shared *sh = calloc(1, sizeof *sh);
    pthread_t th[WORKERS], sw;
    worker_arg wa[WORKERS];
    tide_keycache_opts o;
    tide_keycache_stats st;
    int rc;

    (void)state;
    if (sh == NULL) fail_msg("calloc");
    shared_init(sh);
    tide_keycache_opts_init(&o);
    o.key_size = KEY_SIZE;
    o.target_size = 500;
    o.age_s = 2;
    o.hard_limit_bytes = 64u << 10;
    o.clock_us = shared_clock;
    o.clock_arg = sh;
    o.account_bytes = &sh->account;
    o.arena = arena_on();
    o.arena_segment_bytes = 64u << 10;
    rc = tide_keycache_create(&sh->k, &o);
    if (rc != 0) fail_msg("tide_keycache_create: expected 0, got %d (%s)", rc, tide_last_error());
    for (int i = 0; i < WORKERS; i++) {
        wa[i].sh = sh;
        wa[i].id = i;
        pthread_create(&th[i], NULL, kc_worker_main, &wa[i]);
    }
    pthread_create(&sw, NULL, kc_sweeper_main, sh);
    /* Half the run, and on until an entry has moved (in the arena), up to
     * a minute on a loaded machine. */
    for (unsigned ms = 0; ms < RUN_MS / 2 || (arena_on() && atomic_load(&sh->moved) == 0 && ms < 60000); ms += 10)
        tide_clock_sleep_us(10000);
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
    pthread_join(sw, NULL);

    tide_keycache_check(sh->k);
    tide_keycache_stats_get(sh->k, &st);
    th_failures_check(&sh->fail, "key cache workers");
    if (arena_on() && atomic_load(&sh->moved) == 0) fail_msg("no key cache entry was moved in a minute");
    if (st.hits + st.misses != atomic_load(&sh->kc_contains))
        fail_msg("hits + misses: expected the %llu contains calls, got %" PRIu64 " + %" PRIu64,
                 (unsigned long long)atomic_load(&sh->kc_contains), st.hits, st.misses);
    if (st.bytes > o.hard_limit_bytes)
        fail_msg("bytes: expected at most %zu, got %zu", o.hard_limit_bytes, st.bytes);
    if (sh->account != (int64_t)st.bytes)
        fail_msg("account: expected bytes %zu, got %" PRId64, st.bytes, sh->account);
    tide_keycache_destroy(sh->k);
    if (sh->account != 0)
        fail_msg("account after destroy: expected 0, got %" PRId64, sh->account);
    pthread_mutex_destroy(&sh->fail.mu);
    free(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workers_and_a_sweeper_share_the_cache_and_every_object_is_freed_once),
        cmocka_unit_test(keycache_workers_and_a_sweeper_keep_the_counts_exact),
    };
    return cmocka_run_group_tests_name("cache_concurrency", tests, NULL, NULL);
}
