/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_cache.c: the tagged cache and the key cache (src/cache), one thread.
 *
 * Time is a counter the test sets (opts.clock_us), so ages are exact. Every
 * object is made with a hook that counts frees, so a test can say when the
 * cache let go of the last reference. Every test ends with tide_cache_check
 * (the invariants of cache.c's essay) through the teardown.
 *
 * Objects are made by the cache (tide_cache_obj_make): in its segment arena,
 * or with malloc when TEST_CACHE_ARENA=0 (the run with the arena off).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "cache/cache.h"
#include "cache/keycache.h"
#include "tide/error.h"
#include "helpers.h"

#define SEC 1000000ull
#define KEY_SIZE 32

/* ---- per-test state ------------------------------------------------------- */

typedef struct ts {
    tide_cache *c;
    tide_keycache *k;
    uint64_t now;               /* the injected clock, in microseconds */
    int64_t account;            /* the account counter the cache keeps */
    size_t freed, made;         /* objects freed (the hook) and made */
    tide_cache_obj_hook hook;
    tide_cache_obj *held[256];  /* references the test holds; released at teardown */
    size_t nheld;
} ts;

static uint64_t test_clock(void *arg)
{
    return *(uint64_t *)arg;
}

static void count_free(void *arg, const tide_cache_obj *o)
{
    (void)o;
    ((ts *)arg)->freed++;
}

static int setup(void **state)
{
    ts *t = calloc(1, sizeof *t);

    if (t == NULL) return -1;
    t->hook.on_free = count_free;
    t->hook.arg = t;
    t->now = 1000 * SEC;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    ts *t = *state;

    if (t->c) {
        tide_cache_check(t->c);
        tide_cache_destroy(t->c);
    }
    if (t->k) {
        tide_keycache_check(t->k);
        tide_keycache_destroy(t->k);
    }
    for (size_t i = 0; i < t->nheld; i++) tide_cache_obj_release(t->held[i]);
    free(t);
    return 0;
}

/* 1 unless TEST_CACHE_ARENA=0: the cache's objects live in its arena. */
static int arena_on(void)
{
    const char *v = getenv("TEST_CACHE_ARENA");

    return v == NULL || strcmp(v, "0") != 0;
}

/* Options for a test cache: the injected clock and account, no byte limits
 * unless the test sets them, the arena as TEST_CACHE_ARENA says, and the
 * hook that counts frees for the objects the cache makes. */
static tide_cache_opts test_opts(ts *t, size_t target, unsigned age_s)
{
    tide_cache_opts o;

    tide_cache_opts_init(&o);
    o.key_size = KEY_SIZE;
    o.target_size = target;
    o.age_s = age_s;
    o.budget_bytes = 0;
    o.hard_limit_bytes = 0;
    o.clock_us = test_clock;
    o.clock_arg = &t->now;
    o.account_bytes = &t->account;
    o.arena = arena_on();
    o.obj_hook = &t->hook;
    return o;
}

static void make_cache(ts *t, const tide_cache_opts *o)
{
    expect_rc(tide_cache_create(&t->c, o), 0, "tide_cache_create");
}

static void key_of(uint64_t i, uint8_t *key)
{
    th_key(i, KEY_SIZE, key);
}

/* A fresh object for item i with `len` bytes of value(i), counted in made. */
static tide_cache_obj *make_obj(ts *t, uint64_t i, size_t len)
{
    tide_cache_obj *o = NULL;
    uint8_t buf[4096];

    if (len > sizeof buf) fail_msg("make_obj: %zu bytes is more than the test's buffer", len);
    th_value(i, len, buf);
    expect_rc(tide_cache_obj_make(t->c, &o, buf, len), 0, "tide_cache_obj_make");
    t->made++;
    return o;
}

/* Insert item i (len bytes); keep our reference when `hold`, else drop it. */
static tide_cache_obj *put(ts *t, uint64_t i, size_t len, int hold)
{
    uint8_t key[KEY_SIZE];
    tide_cache_obj *o = make_obj(t, i, len);

    key_of(i, key);
    expect_rc(tide_cache_insert(t->c, key, o), 0, "tide_cache_insert");
    if (hold) {
        if (t->nheld == sizeof t->held / sizeof t->held[0]) fail_msg("too many held objects");
        t->held[t->nheld++] = o;
        return o;
    }
    tide_cache_obj_release(o);
    return NULL;
}

/* Drop the reference the test holds to `o`. */
static void unhold(ts *t, tide_cache_obj *o)
{
    for (size_t i = 0; i < t->nheld; i++)
        if (t->held[i] == o) {
            t->held[i] = t->held[--t->nheld];
            tide_cache_obj_release(o);
            return;
        }
    fail_msg("unhold: the test does not hold that object");
}

/* Look item i up: NULL, or the object after checking its bytes. The caller
 * releases it. */
static tide_cache_obj *get(ts *t, uint64_t i)
{
    uint8_t key[KEY_SIZE], want[4096];
    tide_cache_obj *o;

    key_of(i, key);
    o = tide_cache_lookup(t->c, key);
    if (o == NULL) return NULL;
    size_t len = tide_cache_obj_len(o);
    if (len > sizeof want) fail_msg("lookup of item %" PRIu64 ": a %zu-byte object", i, len);
    th_value(i, len, want);
    if (memcmp(tide_cache_obj_data(o), want, len) != 0)
        fail_msg("lookup of item %" PRIu64 ": expected value(%" PRIu64 ") in its %zu bytes, "
                 "got other bytes", i, i, len);
    return o;
}

/* 1 when item i is found (the reference is dropped at once). */
static int present(ts *t, uint64_t i)
{
    tide_cache_obj *o = get(t, i);

    tide_cache_obj_release(o);
    return o != NULL;
}

static tide_cache_stats stats(ts *t)
{
    tide_cache_stats s;

    tide_cache_stats_get(t->c, &s);
    return s;
}

/* What the cache costs with no entries. */
static size_t empty_bytes(ts *t)
{
    tide_cache_stats s = stats(t);
    size_t slots = (s.slots * 8 + 8 + 15) & ~(size_t)15;

    return tide_cache_fixed_cost(t->c) + slots;
}

static void expect_states(ts *t, size_t strong, size_t weak, const char *what)
{
    tide_cache_stats s = stats(t);

    if (s.strong != strong || s.weak != weak)
        fail_msg("%s: expected %zu strong and %zu weak entries, got %zu and %zu", what, strong,
                 weak, s.strong, s.weak);
}

static void expect_account(ts *t, const char *what)
{
    tide_cache_stats s = stats(t);

    if (t->account != (int64_t)s.bytes)
        fail_msg("%s: expected the account counter to equal bytes %zu, got %" PRId64, what,
                 s.bytes, t->account);
}

/* ---- strong and weak -------------------------------------------------------- */

static void sweep_demotes_an_expired_entry_still_held_elsewhere(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    tide_cache_sweep_report r;

    make_cache(t, &o);
    tide_cache_obj *held = put(t, 1, 100, 1);
    expect_u64(tide_cache_obj_refs(held), 2, "refs of an inserted object we hold");
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, &r);
    expect_u64(r.demoted, 1, "entries the sweep demoted");
    expect_u64(r.evicted, 0, "entries the sweep removed");
    expect_states(t, 0, 1, "after a sweep past the age with the object held");
    expect_u64(t->freed, 0, "objects freed while we hold the only one");
    expect_u64(tide_cache_obj_refs(held), 1, "strong refs of a demoted object (ours)");
    expect_u64(stats(t).bytes, empty_bytes(t) + tide_cache_weak_entry_cost(t->c),
               "bytes of a cache with one weak entry (the entry alone)");
    expect_account(t, "after the demotion");
}

static void sweep_frees_an_expired_entry_nobody_else_holds(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    tide_cache_sweep_report r;

    make_cache(t, &o);
    put(t, 1, 100, 0);
    expect_u64(t->freed, 0, "objects freed while the cache holds the only reference");
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, &r);
    expect_u64(r.evicted, 1, "entries the sweep removed");
    expect_u64(r.demoted, 0, "entries the sweep demoted");
    expect_u64(t->freed, 1, "objects freed by the sweep");
    expect_states(t, 0, 0, "after the sweep");
    expect_u64(stats(t).bytes, empty_bytes(t), "bytes of the emptied cache");
    expect_account(t, "after the eviction");
}

static void sweep_keeps_an_entry_until_it_reaches_the_age(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    put(t, 1, 10, 0);
    t->now += 60 * SEC - 1;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 1, 0, "one microsecond before the age");
    t->now += 1;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 0, 0, "at the age");
}

static void a_lookup_refreshes_the_access_time(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    put(t, 1, 10, 0);
    put(t, 2, 10, 0);
    t->now += 50 * SEC;
    if (!present(t, 1)) fail_msg("lookup of item 1: expected a hit, got NULL");
    t->now += 10 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 1, 0, "60 s after insert, 10 s after item 1's lookup");
    if (!present(t, 1)) fail_msg("item 1 after the sweep: expected a hit, got NULL");
    if (present(t, 2)) fail_msg("item 2 after the sweep: expected a miss, got a hit");
}

static void lookup_revives_a_weak_entry_into_a_strong_one(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    tide_cache_obj *held = put(t, 7, 300, 1);
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 0, 1, "after the demotion");

    tide_cache_obj *got = get(t, 7);
    if (got != held) fail_msg("lookup of a weak entry: expected the held object %p, got %p",
                              (void *)held, (void *)got);
    expect_states(t, 1, 0, "after the lookup");
    expect_u64(stats(t).revivals, 1, "revivals");
    expect_u64(stats(t).hits, 1, "hits");
    expect_u64(tide_cache_obj_refs(held), 3, "strong refs (ours, the lookup's, the cache's)");
    expect_u64(stats(t).bytes, empty_bytes(t) + tide_cache_entry_cost(t->c, 300),
               "bytes of one strong entry of 300 bytes");
    expect_account(t, "after the revival");
    tide_cache_obj_release(got);
    unhold(t, held);
    expect_u64(t->freed, 0, "objects freed while the revived entry holds one");

    /* Strong again: the revived entry is young, and once old it is freed. */
    t->now += 59 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 1, 0, "59 s after the revival");
    t->now += 1 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 0, 0, "60 s after the revival");
    expect_u64(t->freed, 1, "objects freed");
}

static void sweep_reaps_a_weak_entry_whose_object_died(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    tide_cache_sweep_report r;

    make_cache(t, &o);
    tide_cache_obj *held = put(t, 3, 100, 1);
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, NULL);
    unhold(t, held);
    /* The object is dead; its memory waits for the weak entry to go. */
    expect_u64(t->freed, 0, "objects freed while the weak entry remains");
    expect_states(t, 0, 1, "after the last holder let go");
    tide_cache_sweep(t->c, &r);
    expect_u64(r.reaped, 1, "weak entries reaped by the next sweep");
    expect_u64(t->freed, 1, "objects freed by the sweep");
    expect_states(t, 0, 0, "after the reap");
    expect_u64(stats(t).reaped, 1, "reaped counter");
    expect_u64(stats(t).evictions, 0, "evictions (a reap is not one)");
    expect_u64(stats(t).bytes, empty_bytes(t), "bytes after the reap");
    expect_account(t, "after the reap");
}

static void lookup_of_a_weak_entry_whose_object_died_misses_and_reaps_it(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    tide_cache_obj *held = put(t, 3, 100, 1);
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, NULL);
    unhold(t, held);
    if (present(t, 3)) fail_msg("lookup of a dead weak entry: expected NULL, got an object");
    expect_u64(t->freed, 1, "objects freed by the lookup");
    expect_states(t, 0, 0, "after the lookup");
    expect_u64(stats(t).misses, 1, "misses");
    expect_u64(stats(t).hits, 0, "hits");
}

static void sweep_frees_nothing_an_outside_holder_still_needs(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    tide_cache_obj *held = put(t, 9, 64, 1);
    for (int i = 0; i < 5; i++) {
        t->now += 60 * SEC;
        tide_cache_sweep(t->c, NULL);
    }
    expect_states(t, 0, 1, "after five sweeps with the object held");
    expect_u64(tide_cache_obj_len(held), 64, "length of the held object");
    tide_cache_destroy(t->c);
    t->c = NULL;
    expect_u64(t->freed, 0, "objects freed by destroy while held");
    unhold(t, held);
    expect_u64(t->freed, 1, "objects freed when the holder let go after destroy");
}

/* ---- the age and the target size ------------------------------------------- */

static void age_shrinks_to_age_times_target_over_entries_above_the_target(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 100, 60);
    tide_cache_sweep_report r;

    make_cache(t, &o);
    for (uint64_t i = 0; i < 200; i++) put(t, i, 16, 0);
    expect_u64(stats(t).effective_age_us, 30 * SEC, "effective age of 200 entries, target 100, "
               "age 60 s");
    t->now += 30 * SEC - 1;
    tide_cache_sweep(t->c, &r);
    expect_u64(r.effective_age_us, 30 * SEC, "the sweep's effective age");
    expect_states(t, 200, 0, "1 us before the effective age");
    t->now += 1;
    tide_cache_sweep(t->c, &r);
    expect_u64(r.evicted, 200, "entries removed at the effective age");
    expect_u64(t->freed, 200, "objects freed");
    /* At or below the target the age is the full 60 s again. */
    expect_u64(stats(t).effective_age_us, 60 * SEC, "effective age of an empty cache");
    for (uint64_t i = 0; i < 100; i++) put(t, i, 16, 0);
    expect_u64(stats(t).effective_age_us, 60 * SEC, "effective age at the target");
    t->now += 59 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 100, 0, "59 s after, at the target");
}

static void effective_age_never_drops_below_one_second(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 1, 60);

    make_cache(t, &o);
    for (uint64_t i = 0; i < 1000; i++) put(t, i, 8, 0);
    /* 60 s * 1 / 1000 = 60 ms, raised to 1 s. */
    expect_u64(stats(t).effective_age_us, 1 * SEC, "effective age of 1000 entries, target 1");
    t->now += SEC - 1;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 1000, 0, "1 us before 1 s");
    t->now += 1;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 0, 0, "at 1 s");
}

/* ---- bytes, the budget and the hard limit --------------------------------- */

static void bytes_count_entries_objects_and_the_table(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    size_t want;

    make_cache(t, &o);
    want = empty_bytes(t);
    expect_u64(stats(t).bytes, want, "bytes of an empty cache (struct and slots)");
    expect_account(t, "after create");
    for (uint64_t i = 0; i < 50; i++) {
        put(t, i, (size_t)(i * 37 % 500) + 1, 0);
        want += tide_cache_entry_cost(t->c, (size_t)(i * 37 % 500) + 1);
        expect_u64(stats(t).bytes, want, "bytes after an insert");
        expect_account(t, "after an insert");
    }
    /* glibc's chunk sizes: a 32-byte key makes an entry of 49 + 32 = 81 bytes
     * (a 96-byte chunk); a 100-byte object 132 bytes (a 144-byte chunk). In
     * the arena each is a 16-byte header and its size rounded up to 16: 112
     * and 160. */
    expect_u64(tide_cache_entry_cost(t->c, 100), arena_on() ? 112 + 160 : 96 + 144,
               "cost of a strong entry of 100 bytes");
    expect_u64(tide_cache_weak_entry_cost(t->c), arena_on() ? 112 : 96, "cost of a weak entry");
}

static void sweep_shrinks_the_cache_under_its_byte_budget_oldest_first(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 3600);
    tide_cache_sweep_report r;
    size_t base, per;

    /* Measure the costs with a throwaway cache of the same shape. */
    make_cache(t, &o);
    base = empty_bytes(t);
    per = tide_cache_entry_cost(t->c, 200);
    tide_cache_destroy(t->c);
    t->c = NULL;

    o.budget_bytes = base + 10 * per;
    make_cache(t, &o);
    for (uint64_t i = 0; i < 20; i++) {
        put(t, i, 200, 0);
        t->now += SEC;
    }
    expect_u64(stats(t).bytes, base + 20 * per, "bytes before the sweep (over the budget)");
    tide_cache_sweep(t->c, &r);
    expect_u64(r.evicted, 10, "entries the budget removed");
    expect_u64(stats(t).bytes, base + 10 * per, "bytes after the sweep");
    if (r.bytes_after > o.budget_bytes)
        fail_msg("bytes after the sweep: expected at most the budget %zu, got %zu",
                 o.budget_bytes, r.bytes_after);
    for (uint64_t i = 0; i < 20; i++)
        if (present(t, i) != (i >= 10))
            fail_msg("item %" PRIu64 " after the budget sweep: expected %s, got %s", i,
                     i >= 10 ? "present (among the 10 newest)" : "absent (among the oldest)",
                     i >= 10 ? "absent" : "present");
    expect_account(t, "after the budget sweep");
}

static void budget_sweep_demotes_held_objects_instead_of_freeing_them(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 3600);
    size_t base, per, weak;

    make_cache(t, &o);
    base = empty_bytes(t);
    per = tide_cache_entry_cost(t->c, 200);
    weak = tide_cache_weak_entry_cost(t->c);
    tide_cache_destroy(t->c);
    t->c = NULL;

    /* Two strong entries and the weak one a demotion leaves (the entry alone). */
    o.budget_bytes = base + 2 * per + weak;
    make_cache(t, &o);
    put(t, 0, 200, 1);
    put(t, 1, 200, 0);
    put(t, 2, 200, 0);
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 2, 1, "after a budget sweep with the oldest object held");
    expect_u64(t->freed, 0, "objects freed");
    expect_u64(stats(t).demotions, 1, "demotions");
    if (stats(t).bytes > o.budget_bytes)
        fail_msg("bytes: expected at most the budget %zu, got %zu", o.budget_bytes,
                 stats(t).bytes);
}

static void insert_never_takes_bytes_past_the_hard_limit(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 3600);
    size_t base, limit;
    th_rng rng;

    make_cache(t, &o);
    base = empty_bytes(t);
    tide_cache_destroy(t->c);
    t->c = NULL;

    limit = base + 16 * 1024;
    o.hard_limit_bytes = limit;
    make_cache(t, &o);
    th_rng_init(&rng, th_seed(42));
    for (uint64_t i = 0; i < 2000; i++) {
        size_t len = (size_t)th_rng_range(&rng, 1, 3000);
        int hold = th_rng_below(&rng, 8) == 0 && t->nheld < 200;
        put(t, i, len, hold);
        tide_cache_stats s = stats(t);
        if (s.bytes > limit)
            fail_msg("after insert %" PRIu64 " (%zu bytes): expected bytes <= the hard limit %zu, "
                     "got %zu", i, len, limit, s.bytes);
        expect_account(t, "after an insert under the hard limit");
        if (!present(t, i))
            fail_msg("item %" PRIu64 " right after its insert: expected present, got absent", i);
        if (i % 97 == 0) tide_cache_check(t->c);
        t->now += 1000;
        if (th_rng_below(&rng, 16) == 0 && t->nheld > 0) unhold(t, t->held[0]);
    }
    if (stats(t).evictions == 0) fail_msg("evictions: expected some under the hard limit, got 0");
}

static void insert_refuses_an_object_larger_than_the_hard_limit(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    uint8_t key[KEY_SIZE];
    size_t base;
    tide_cache_obj *big;
    tide_cache_stats before, after;

    make_cache(t, &o);
    base = empty_bytes(t);
    tide_cache_destroy(t->c);
    t->c = NULL;

    o.hard_limit_bytes = base + 2048;
    make_cache(t, &o);
    put(t, 1, 100, 0);
    before = stats(t);
    big = make_obj(t, 2, 4000);
    key_of(2, key);
    expect_rc(tide_cache_insert(t->c, key, big), TIDE_ETOOBIG, "insert of a 4000-byte object "
              "under a 2048-byte limit");
    if (strstr(tide_last_error(), "hard limit") == NULL)
        fail_msg("the message: expected it to name the hard limit, got '%s'", tide_last_error());
    after = stats(t);
    expect_u64(after.bytes, before.bytes, "bytes after the refusal");
    expect_u64(after.strong, 1, "strong entries after the refusal (item 1 kept)");
    expect_u64(after.inserts, before.inserts, "inserts after the refusal");
    expect_u64(tide_cache_obj_refs(big), 1, "refs of the refused object (ours only)");
    tide_cache_obj_release(big);
    expect_u64(t->freed, 1, "objects freed (the refused one, by us)");
}

static void a_revival_makes_room_under_the_hard_limit(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    size_t base, per, weak;

    make_cache(t, &o);
    base = empty_bytes(t);
    per = tide_cache_entry_cost(t->c, 500);
    weak = tide_cache_weak_entry_cost(t->c);
    tide_cache_destroy(t->c);
    t->c = NULL;

    /* Room for three strong entries of 500 bytes, plus a weak one. */
    o.hard_limit_bytes = base + 3 * per + weak;
    make_cache(t, &o);
    tide_cache_obj *held = put(t, 0, 500, 1);
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_states(t, 0, 1, "item 0 demoted");
    put(t, 1, 500, 0);
    t->now += SEC;
    put(t, 2, 500, 0);
    t->now += SEC;
    put(t, 3, 500, 0);
    expect_states(t, 3, 1, "three strong and one weak");
    tide_cache_obj *got = get(t, 0);
    if (got != held) fail_msg("lookup of item 0: expected the held object, got %p", (void *)got);
    tide_cache_obj_release(got);
    expect_states(t, 3, 0, "after the revival pushed the oldest out");
    if (stats(t).bytes > o.hard_limit_bytes)
        fail_msg("bytes after the revival: expected at most %zu, got %zu", o.hard_limit_bytes,
                 stats(t).bytes);
    if (present(t, 1)) fail_msg("item 1 (the oldest strong): expected evicted, got present");
    if (!present(t, 2) || !present(t, 3)) fail_msg("items 2 and 3: expected present");
}

/* ---- counters and the account ----------------------------------------------- */

static void counters_count_every_hit_miss_insert_and_eviction_exactly(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 10);
    tide_cache_stats s;

    make_cache(t, &o);
    for (uint64_t i = 0; i < 10; i++) put(t, i, 32, 0);         /* 10 inserts */
    put(t, 3, 40, 0);                                           /* a replacement: 1 insert */
    for (uint64_t i = 0; i < 15; i++) (void)present(t, i);      /* 10 hits, 5 misses */
    tide_cache_obj *held = get(t, 4);                           /* 1 hit, held */
    t->now += 10 * SEC;
    tide_cache_sweep(t->c, NULL);                   /* 9 evictions, 1 demotion */
    (void)present(t, 4);                            /* 1 hit, 1 revival */
    tide_cache_obj_release(held);
    uint8_t key[KEY_SIZE];
    key_of(4, key);
    expect_u64(tide_cache_erase(t->c, key), 1, "erase of item 4");  /* not an eviction */
    (void)present(t, 4);                            /* 1 miss */
    s = stats(t);
    expect_u64(s.inserts, 11, "inserts");
    expect_u64(s.hits, 12, "hits");
    expect_u64(s.misses, 6, "misses");
    expect_u64(s.evictions, 9, "evictions");
    expect_u64(s.demotions, 1, "demotions");
    expect_u64(s.revivals, 1, "revivals");
    expect_u64(s.reaped, 0, "reaped");
    expect_states(t, 0, 0, "at the end");
    expect_u64(t->freed, 11, "objects freed (10 items and the replaced one)");
    expect_u64(t->freed, t->made, "objects freed against made");
}

static void the_account_counter_follows_bytes_from_create_to_destroy(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    tide_cache *second = NULL;

    make_cache(t, &o);
    expect_account(t, "after create");
    for (uint64_t i = 0; i < 300; i++) put(t, i, 100, i % 3 == 0 && t->nheld < 100);
    expect_account(t, "after 300 inserts");
    t->now += 60 * SEC;
    tide_cache_sweep(t->c, NULL);
    expect_account(t, "after a sweep that demoted and freed");
    (void)present(t, 0);
    expect_account(t, "after a revival");
    /* A second cache on the same counter: it holds the sum. */
    expect_rc(tide_cache_create(&second, &o), 0, "create of a second cache");
    tide_cache_stats s2;
    tide_cache_stats_get(second, &s2);
    if (t->account != (int64_t)(stats(t).bytes + s2.bytes))
        fail_msg("shared account: expected %zu + %zu, got %" PRId64, stats(t).bytes, s2.bytes,
                 t->account);
    tide_cache_destroy(second);
    expect_account(t, "after the second cache's destroy");
    tide_cache_destroy(t->c);
    t->c = NULL;
    expect_u64((uint64_t)t->account, 0, "the account after destroy");
}

/* ---- replace, erase, growth, options ------------------------------------------ */

static void an_insert_under_a_present_key_replaces_its_object(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    uint8_t key[KEY_SIZE];

    make_cache(t, &o);
    put(t, 5, 10, 0);
    tide_cache_obj *b = make_obj(t, 5, 20);
    key_of(5, key);
    expect_rc(tide_cache_insert(t->c, key, b), 0, "insert under a present key");
    tide_cache_obj_release(b);
    expect_u64(t->freed, 1, "objects freed (the replaced one)");
    tide_cache_obj *got = get(t, 5);
    if (got == NULL || tide_cache_obj_len(got) != 20)
        fail_msg("lookup after the replace: expected the 20-byte object, got %zu bytes",
                 got ? tide_cache_obj_len(got) : 0);
    tide_cache_obj_release(got);
    expect_states(t, 1, 0, "after the replace");
    expect_u64(stats(t).evictions, 0, "evictions (a replace is not one)");
}

static void the_table_grows_past_its_first_slots_and_finds_every_key(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);

    make_cache(t, &o);
    expect_u64(stats(t).slots, 64, "slots of a cache with no target");
    for (uint64_t i = 0; i < 5000; i++) put(t, i, 4, 0);
    if (stats(t).slots < 4096)
        fail_msg("slots after 5000 inserts: expected at least 4096, got %zu", stats(t).slots);
    for (uint64_t i = 0; i < 5000; i++)
        if (!present(t, i)) fail_msg("item %" PRIu64 ": expected present, got absent", i);
    expect_account(t, "after growth");
}

static void create_refuses_options_out_of_range(void **state)
{
    ts *t = *state;
    tide_cache_opts o;
    tide_cache *c = NULL;

    o = test_opts(t, 0, 60);
    o.key_size = 0;
    expect_rc(tide_cache_create(&c, &o), TIDE_EINVAL, "key_size 0");
    if (strstr(tide_last_error(), "key_size") == NULL)
        fail_msg("the message: expected it to name key_size, got '%s'", tide_last_error());
    o = test_opts(t, 0, 0);
    expect_rc(tide_cache_create(&c, &o), TIDE_EINVAL, "age_s 0");
    o = test_opts(t, 0, 60);
    o.budget_bytes = 2000;
    o.hard_limit_bytes = 1000;
    expect_rc(tide_cache_create(&c, &o), TIDE_EINVAL, "budget above the hard limit");
    o = test_opts(t, 0, 60);
    o.hard_limit_bytes = 100;
    expect_rc(tide_cache_create(&c, &o), TIDE_EINVAL, "a hard limit below an empty cache");
    expect_u64((uint64_t)t->account, 0, "the account after refused creates");
    expect_rc(tide_cache_create(&c, NULL), 0, "create with the defaults");
    tide_cache_destroy(c);
}

/* ---- limits changed at run time ----------------------------------------------------- */

static void a_lower_hard_limit_lets_the_oldest_go_at_once_and_a_restore_gives_room_back(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 128, 3600);    /* 128 slots: no growth */
    tide_cache_obj *held;
    tide_cache_stats s;
    size_t cost, lower;

    make_cache(t, &o);
    cost = tide_cache_entry_cost(t->c, 1000);
    for (uint64_t i = 0; i < 100; i++) {
        put(t, i, 1000, 0);
        t->now += 1000;
    }
    held = get(t, 0);                   /* the oldest is refreshed and held: demoted, not freed */
    t->now += 1000;
    expect_states(t, 100, 0, "before the limits change");
    lower = empty_bytes(t) + 30 * cost;
    expect_rc(tide_cache_set_limits(t->c, lower / 2, lower), 0, "set_limits to 30 entries' worth");
    s = stats(t);
    if (s.bytes > lower) fail_msg("bytes right after the lower limit: expected <= %zu, got %zu", lower, s.bytes);
    expect_u64(s.hard_limit_bytes, lower, "the hard limit in force");
    expect_u64(s.budget_bytes, lower / 2, "the budget in force");
    expect_u64(s.strong, 30, "strong entries left (the newest 30 fit)");
    expect_u64(s.evictions, 70, "evictions: the 70 oldest unshared entries");
    expect_account(t, "after the lower limit");
    tide_cache_check(t->c);
    if (present(t, 1) || !present(t, 99)) fail_msg("expected items 1..70 gone and item 99 kept");
    tide_cache_obj_release(held);
    /* The budget waits for a sweep. */
    tide_cache_sweep(t->c, NULL);
    if (stats(t).bytes > lower / 2) fail_msg("after a sweep: expected bytes <= the budget %zu, got %zu",
                                             lower / 2, stats(t).bytes);
    /* Restored: no limit, so 100 more inserts evict nothing. */
    expect_rc(tide_cache_set_limits(t->c, 0, 0), 0, "set_limits back to none");
    uint64_t ev = stats(t).evictions;
    for (uint64_t i = 100; i < 200; i++) put(t, i, 1000, 0);
    expect_u64(stats(t).evictions, ev, "evictions after the restore");
    expect_u64(stats(t).hard_limit_bytes, 0, "the hard limit after the restore");
    expect_account(t, "after the restore");
    tide_cache_check(t->c);
}

static void set_limits_refuses_a_hard_limit_below_the_budget_and_changes_nothing(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 128, 3600);

    o.budget_bytes = 1 << 20;
    o.hard_limit_bytes = 2 << 20;
    make_cache(t, &o);
    for (uint64_t i = 0; i < 20; i++) put(t, i, 1000, 0);
    expect_rc(tide_cache_set_limits(t->c, 2 << 20, 1 << 20), TIDE_EINVAL, "hard limit below the budget");
    expect_contains(tide_last_error(), "above hard_limit_bytes", "the message");
    expect_u64(stats(t).budget_bytes, 1 << 20, "the budget after the refusal");
    expect_u64(stats(t).hard_limit_bytes, 2 << 20, "the hard limit after the refusal");
    expect_u64(stats(t).evictions, 0, "evictions after the refusal");
    /* A limit below the empty cache is raised to it: every entry goes, the
     * invariants hold. */
    expect_rc(tide_cache_set_limits(t->c, 0, 1), 0, "a hard limit of one byte");
    expect_u64(stats(t).hard_limit_bytes, empty_bytes(t), "the hard limit raised to the empty cache");
    expect_states(t, 0, 0, "after a one-byte limit");
    tide_cache_check(t->c);
}

/* ---- the arena ------------------------------------------------------------------ */

/* The bytes the entries and the strong entries' objects cost, all in the
 * arena: bytes less the struct and the slots (invariant 1). */
static uint64_t arena_bytes(ts *t)
{
    return stats(t).bytes - empty_bytes(t);
}

static tide_arena_stats arena_stats(ts *t)
{
    tide_arena_stats a;

    if (tide_cache_arena_stats(t->c, &a) != 1) fail_msg("expected the cache to have an arena");
    return a;
}

/* A reader holds an object (as an HTTP response holds the one it sends)
 * while an evacuation moves its entry: the reader's copy keeps its bytes,
 * the cache serves the new copy, and the old copy's segment goes back to
 * the kernel at the first release after the reader lets go. */
static void a_held_object_keeps_its_bytes_across_an_evacuation_and_its_segment_goes_after(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 0, 60);
    tide_cache_arena_report r;
    tide_arena_stats before, after;
    tide_cache_obj *held, *now;
    uint8_t key[KEY_SIZE], want[200];
    size_t made;
    uint64_t moved;

    if (!arena_on()) skip();
    o.arena_segment_bytes = 64u << 10;
    make_cache(t, &o);
    for (uint64_t i = 0; i < 2000; i++) put(t, i, 200, 0);     /* ~8 segments of 256 */
    held = get(t, 10);                  /* the reader's reference, in the first segment */
    for (uint64_t i = 0; i < 2000; i++) {
        key_of(i, key);
        if (i % 10 != 0) tide_cache_erase(t->c, key);          /* 90% go */
    }
    made = t->made;
    expect_u64(t->freed, 1800, "objects freed by the erases");
    expect_rc(tide_cache_evacuate(t->c, (size_t)1 << 30, &r), 0, "tide_cache_evacuate");
    if (r.evac.moved_objects == 0 || r.released == 0)
        fail_msg("evacuation: expected objects moved and segments released, got %" PRIu64
                 " moved, %" PRIu64 " released", r.evac.moved_objects, r.released);
    /* Every moved object but the held one was freed at once (the free hook
     * sees objects, not entries). */
    if (r.moved_entries == 0) fail_msg("evacuation: expected entries moved too");
    tide_cache_check(t->c);             /* the moved entries' chains, lists and tags */
    moved = r.evac.moved_objects - r.moved_entries;
    expect_u64(t->freed, 1800 + moved - 1, "frees after the moves");
    th_value(10, 200, want);
    if (memcmp(tide_cache_obj_data(held), want, 200) != 0)
        fail_msg("the held object: expected value(10) unchanged across the evacuation");
    now = get(t, 10);                   /* checks value(10) */
    if (now == NULL || now == held)
        fail_msg("lookup after the evacuation: expected the moved copy, got %s",
                 now == NULL ? "nothing" : "the held original");
    tide_cache_obj_release(now);
    expect_u64(arena_stats(t).live_bytes, arena_bytes(t) + tide_cache_entry_cost(t->c, 200)
               - tide_cache_weak_entry_cost(t->c), "arena live: the entries, their objects and the held original");
    before = arena_stats(t);
    tide_cache_obj_release(held);       /* the reader lets go */
    expect_u64(t->freed, 1800 + moved, "frees after the reader let go");
    expect_rc(tide_cache_evacuate(t->c, 0, &r), 0, "release only");
    after = arena_stats(t);
    if (r.released != 1 || after.resident_bytes + (64u << 10) != before.resident_bytes)
        fail_msg("release after the reader let go: expected its segment (64 KiB) back, got %"
                 PRIu64 " segments, resident %" PRIu64 " -> %" PRIu64, r.released,
                 before.resident_bytes, after.resident_bytes);
    expect_u64(after.live_bytes, arena_bytes(t), "arena live: the entries and their objects");
    expect_u64(t->made, made, "objects the test made");
    for (uint64_t i = 0; i < 2000; i += 10)
        if (!present(t, i)) fail_msg("item %" PRIu64 ": expected it kept through the moves", i);
}

/* Random puts, gets, erases, sweeps and evacuations under a hard limit:
 * after each step the bytes the cache counts for its objects equal what its
 * arena holds live (nothing else holds an object), and every lookup finds
 * its item's bytes. */
static void counted_object_bytes_equal_the_arenas_live_bytes_through_random_steps(void **state)
{
    ts *t = *state;
    tide_cache_opts o = test_opts(t, 400, 30);
    tide_cache_arena_report r;
    uint8_t key[KEY_SIZE];
    uint64_t moved = 0, released = 0;
    th_rng rng;

    if (!arena_on()) skip();
    o.arena_segment_bytes = 64u << 10;
    o.hard_limit_bytes = 512u << 10;
    o.budget_bytes = 384u << 10;
    make_cache(t, &o);
    th_rng_init(&rng, th_seed(26));
    for (int step = 0; step < 20000; step++) {
        uint64_t i = th_rng_below(&rng, 1000), op = th_rng_below(&rng, 100);
        key_of(i, key);
        if (op < 40) {
            put(t, i, (size_t)th_rng_range(&rng, 100, 1500), 0);
        } else if (op < 80) {
            (void)present(t, i);
        } else if (op < 95) {
            (void)tide_cache_erase(t->c, key);
        } else if (op < 98) {
            t->now += th_rng_below(&rng, 20) * SEC;
            tide_cache_sweep(t->c, NULL);
        } else {
            expect_rc(tide_cache_evacuate(t->c, (size_t)th_rng_below(&rng, 256u << 10), &r), 0,
                      "tide_cache_evacuate");
            moved += r.evac.moved_objects - r.moved_entries;
            released += r.released;
        }
        if (arena_stats(t).live_bytes != arena_bytes(t))
            fail_msg("step %d: expected the arena's live bytes %" PRIu64 " to equal the entries' and "
                     "objects' counted %" PRIu64, step, arena_stats(t).live_bytes, arena_bytes(t));
        if (step % 1000 == 0) tide_cache_check(t->c);
    }
    expect_u64(t->freed + stats(t).strong, t->made + moved, "objects made (moves too) and freed");
    if (moved == 0 || released == 0)
        fail_msg("expected moves and releases to happen, got %" PRIu64 " and %" PRIu64, moved,
                 released);
}

/* ---- the key cache ------------------------------------------------------------- */

static tide_keycache_opts key_opts(ts *t, size_t target, unsigned age_s)
{
    tide_keycache_opts o;

    tide_keycache_opts_init(&o);
    o.key_size = KEY_SIZE;
    o.target_size = target;
    o.age_s = age_s;
    o.hard_limit_bytes = 0;
    o.clock_us = test_clock;
    o.clock_arg = &t->now;
    o.account_bytes = &t->account;
    o.arena = arena_on();
    return o;
}

static int kc_has(ts *t, uint64_t i)
{
    uint8_t key[KEY_SIZE];

    key_of(i, key);
    return tide_keycache_contains(t->k, key);
}

static void kc_put(ts *t, uint64_t i)
{
    uint8_t key[KEY_SIZE];

    key_of(i, key);
    expect_rc(tide_keycache_insert(t->k, key), 0, "tide_keycache_insert");
}

static tide_keycache_stats kstats(ts *t)
{
    tide_keycache_stats s;

    tide_keycache_stats_get(t->k, &s);
    return s;
}

/* The key cache's entries in its arena: 90% erased, an evacuation moves
 * the kept ones out of the emptied segments, which go back (no reserve);
 * every kept key is still known, the arena's live bytes are the entries'
 * cost, and the invariants hold. */
static void keycache_entries_move_and_their_segments_go_back(void **state)
{
    ts *t = *state;
    tide_keycache_opts o = key_opts(t, 0, 60);
    tide_cache_arena_report r;
    tide_arena_stats before, after;
    tide_keycache_stats s;
    uint8_t key[KEY_SIZE];

    if (!arena_on()) {
        expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
        expect_rc(tide_keycache_evacuate(t->k, 1u << 20, &r), 0, "evacuate without an arena");
        expect_u64(r.released + r.evac.moved_objects, 0, "nothing to do without an arena");
        expect_u64((uint64_t)tide_keycache_arena_stats(t->k, &after), 0, "no arena");
        return;
    }
    o.arena_segment_bytes = 64u << 10;
    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
    for (uint64_t i = 0; i < 5000; i++) {
        key_of(i, key);
        expect_rc(tide_keycache_insert(t->k, key), 0, "tide_keycache_insert");
    }
    for (uint64_t i = 0; i < 5000; i++) {
        key_of(i, key);
        if (i % 10 != 0) tide_keycache_erase(t->k, key);
    }
    tide_keycache_stats_get(t->k, &s);
    expect_u64(tide_keycache_arena_stats(t->k, &before), 1, "an arena");
    expect_u64(before.live_bytes, s.entries * tide_keycache_entry_cost(t->k), "live: the kept entries");
    expect_rc(tide_keycache_evacuate(t->k, (size_t)1 << 30, &r), 0, "tide_keycache_evacuate");
    tide_keycache_check(t->k);
    tide_keycache_arena_stats(t->k, &after);
    if (r.moved_entries == 0 || r.moved_entries != r.evac.moved_objects || r.released == 0)
        fail_msg("evacuation: expected entries moved (all of the moves) and segments released, got %" PRIu64
                 " entries of %" PRIu64 " moves, %" PRIu64 " released", r.moved_entries, r.evac.moved_objects,
                 r.released);
    expect_u64(after.live_bytes, before.live_bytes, "live bytes unchanged by the moves");
    /* The open segment and the one open when the evacuation began (never a
     * candidate, it fills with copies) come on top of live / 0.9. */
    if (after.resident_bytes >= before.resident_bytes ||
        after.resident_bytes > after.live_bytes * 100 / 90 + 2 * (64u << 10))
        fail_msg("resident: expected at most live / 0.9 + two segments after, got %" PRIu64 " -> %" PRIu64
                 " for %" PRIu64 " live", before.resident_bytes, after.resident_bytes, after.live_bytes);
    for (uint64_t i = 0; i < 5000; i++)
        if (kc_has(t, i) != (i % 10 == 0))
            fail_msg("key %" PRIu64 ": expected %s after the moves", i, i % 10 == 0 ? "known" : "unknown");
}

static void keycache_knows_a_missed_key_until_it_is_stored(void **state)
{
    ts *t = *state;
    tide_keycache_opts o = key_opts(t, 0, 60);
    uint8_t key[KEY_SIZE];

    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
    if (kc_has(t, 1)) fail_msg("key 1 before any insert: expected absent, got present");
    kc_put(t, 1);
    if (!kc_has(t, 1)) fail_msg("key 1 after its insert: expected present, got absent");
    if (kc_has(t, 2)) fail_msg("key 2: expected absent, got present");
    key_of(1, key);
    expect_u64(tide_keycache_erase(t->k, key), 1, "erase of key 1 (the store got it)");
    if (kc_has(t, 1)) fail_msg("key 1 after erase: expected absent, got present");
    expect_u64(tide_keycache_erase(t->k, key), 0, "second erase of key 1");
    tide_keycache_stats s = kstats(t);
    expect_u64(s.hits, 1, "hits");
    expect_u64(s.misses, 3, "misses");
    expect_u64(s.inserts, 1, "inserts");
    expect_u64(s.evictions, 0, "evictions (an erase is not one)");
    expect_u64(s.entries, 0, "entries");
}

static void keycache_sweep_removes_keys_past_the_shrunk_age(void **state)
{
    ts *t = *state;
    tide_keycache_opts o = key_opts(t, 100, 60);
    tide_keycache_sweep_report r;

    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
    for (uint64_t i = 0; i < 150; i++) kc_put(t, i);
    t->now += 10 * SEC;
    for (uint64_t i = 150; i < 200; i++) kc_put(t, i);
    /* 200 keys over a target of 100: 30 s. */
    expect_u64(kstats(t).effective_age_us, 30 * SEC, "effective age");
    t->now += 20 * SEC - 1;
    tide_keycache_sweep(t->k, &r);
    expect_u64(r.evicted, 0, "keys removed 1 us before 30 s");
    t->now += 1;
    (void)kc_has(t, 0);  /* a hit refreshes key 0 */
    tide_keycache_sweep(t->k, &r);
    expect_u64(r.effective_age_us, 30 * SEC, "the sweep's effective age");
    expect_u64(r.evicted, 149, "keys removed at 30 s (all the first 150 but key 0)");
    expect_u64(kstats(t).entries, 51, "keys left");
    if (!kc_has(t, 0)) fail_msg("key 0 (refreshed): expected present, got absent");
    expect_u64(kstats(t).evictions, 149, "evictions");
    if (t->account != (int64_t)kstats(t).bytes)
        fail_msg("account: expected bytes %zu, got %" PRId64, kstats(t).bytes, t->account);
}

static void keycache_never_exceeds_its_hard_limit(void **state)
{
    ts *t = *state;
    tide_keycache_opts o = key_opts(t, 128, 60);    /* 128 slots: no growth */
    size_t limit;

    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
    limit = kstats(t).bytes + 100 * tide_keycache_entry_cost(t->k);
    tide_keycache_destroy(t->k);
    t->k = NULL;
    o.hard_limit_bytes = limit;
    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create with a hard limit");
    for (uint64_t i = 0; i < 1000; i++) {
        kc_put(t, i);
        if (kstats(t).bytes > limit)
            fail_msg("after key %" PRIu64 ": expected bytes <= %zu, got %zu", i, limit,
                     kstats(t).bytes);
        if (t->account != (int64_t)kstats(t).bytes)
            fail_msg("account after key %" PRIu64 ": expected %zu, got %" PRId64, i,
                     kstats(t).bytes, t->account);
    }
    expect_u64(kstats(t).entries, 100, "keys kept under the limit");
    expect_u64(kstats(t).evictions, 900, "evictions");
    if (!kc_has(t, 999) || kc_has(t, 899))
        fail_msg("expected the newest 100 keys to remain (999 present, 899 absent)");
    tide_keycache_destroy(t->k);
    t->k = NULL;
    expect_u64((uint64_t)t->account, 0, "the account after destroy");
}

static void keycache_a_lower_hard_limit_removes_the_oldest_keys_at_once(void **state)
{
    ts *t = *state;
    tide_keycache_opts o = key_opts(t, 128, 60);    /* 128 slots: no growth */
    size_t lower;

    expect_rc(tide_keycache_create(&t->k, &o), 0, "tide_keycache_create");
    for (uint64_t i = 0; i < 100; i++) kc_put(t, i);
    lower = kstats(t).bytes - 60 * tide_keycache_entry_cost(t->k);
    expect_rc(tide_keycache_set_hard_limit(t->k, lower), 0, "set_hard_limit to 40 keys' worth");
    expect_u64(kstats(t).entries, 40, "keys left");
    expect_u64(kstats(t).evictions, 60, "evictions");
    expect_u64(kstats(t).hard_limit_bytes, lower, "the limit in force");
    if (t->account != (int64_t)kstats(t).bytes)
        fail_msg("account: expected bytes %zu, got %" PRId64, kstats(t).bytes, t->account);
    if (kc_has(t, 59) || !kc_has(t, 60)) fail_msg("expected keys 0..59 gone and key 60 kept");
    tide_keycache_check(t->k);
    expect_rc(tide_keycache_set_hard_limit(t->k, 0), 0, "set_hard_limit back to none");
    for (uint64_t i = 100; i < 300; i++) kc_put(t, i);
    expect_u64(kstats(t).evictions, 60, "evictions after the restore");
    expect_rc(tide_keycache_set_hard_limit(t->k, 1), 0, "a limit of one byte");
    expect_u64(kstats(t).entries, 1, "keys left under a one-byte limit (raised to one key)");
    tide_keycache_check(t->k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(sweep_demotes_an_expired_entry_still_held_elsewhere),
        T(sweep_frees_an_expired_entry_nobody_else_holds),
        T(sweep_keeps_an_entry_until_it_reaches_the_age),
        T(a_lookup_refreshes_the_access_time),
        T(lookup_revives_a_weak_entry_into_a_strong_one),
        T(sweep_reaps_a_weak_entry_whose_object_died),
        T(lookup_of_a_weak_entry_whose_object_died_misses_and_reaps_it),
        T(sweep_frees_nothing_an_outside_holder_still_needs),
        T(age_shrinks_to_age_times_target_over_entries_above_the_target),
        T(effective_age_never_drops_below_one_second),
        T(bytes_count_entries_objects_and_the_table),
        T(sweep_shrinks_the_cache_under_its_byte_budget_oldest_first),
        T(budget_sweep_demotes_held_objects_instead_of_freeing_them),
        T(insert_never_takes_bytes_past_the_hard_limit),
        T(insert_refuses_an_object_larger_than_the_hard_limit),
        T(a_revival_makes_room_under_the_hard_limit),
        T(counters_count_every_hit_miss_insert_and_eviction_exactly),
        T(the_account_counter_follows_bytes_from_create_to_destroy),
        T(an_insert_under_a_present_key_replaces_its_object),
        T(the_table_grows_past_its_first_slots_and_finds_every_key),
        T(create_refuses_options_out_of_range),
        T(a_held_object_keeps_its_bytes_across_an_evacuation_and_its_segment_goes_after),
        T(counted_object_bytes_equal_the_arenas_live_bytes_through_random_steps),
        T(keycache_knows_a_missed_key_until_it_is_stored),
        T(keycache_entries_move_and_their_segments_go_back),
        T(keycache_sweep_removes_keys_past_the_shrunk_age),
        T(keycache_never_exceeds_its_hard_limit),
        T(a_lower_hard_limit_lets_the_oldest_go_at_once_and_a_restore_gives_room_back),
        T(set_limits_refuses_a_hard_limit_below_the_budget_and_changes_nothing),
        T(keycache_a_lower_hard_limit_removes_the_oldest_keys_at_once),
#undef T
    };
    return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
