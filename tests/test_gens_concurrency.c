/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gens_concurrency.c: the generations handle under threads. Writers
 * insert distinct keys and read each back at once, readers fetch keys the
 * writers acknowledged, a syncer syncs, and one thread rotates again and
 * again (G=3), all on one handle on real files. Its name has
 * "concurrency" in it, so `make tsan` runs it under ThreadSanitizer.
 *
 * The rule every read is held to ("no lost write"): an acknowledged
 * object, last known in generation `gen` (the insert's *gen_id, or a
 * later fetch's), must read back exactly unless `gen` is below the oldest
 * kept id read AFTER the fetch: ids only grow and a fetch holds the read
 * lock throughout, so oldest <= gen after the call means the generation
 * was held for the whole fetch. After the run the handle is closed and
 * reopened and every acknowledged object is checked by the same rule.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gen/gens.h"
#include "util/clock.h"
#include "util/log.h"
#include "helpers.h"
#include "expect.h"

#define KS 32
#define VMIN 8
#define VMAX 200
#define WRITERS 2
#define READERS 2

typedef struct shared {
    tide_gens   *g;
    th_failures  fails;
    atomic_int   stop;
    uint64_t     per_writer;
    uint64_t    *gen;          /* per item: last known generation (atomic) */
    atomic_uint_least64_t acked[WRITERS];   /* items acknowledged by writer w, in order */
    atomic_ulong reads, gone, rotations;
} shared;

static uint64_t item_of(unsigned w, uint64_t j, uint64_t per) { return w * per + j; }

/* Check item i by the rule; 1 read, 0 legitimately gone. */
static int check_item(shared *sh, tide_gens *g, uint64_t i, const char *who)
{
    uint8_t k[KS], v[VMAX];
    size_t want = th_len(i, VMIN, VMAX), len = 0;
    void *out = NULL;
    uint64_t got_gen = 0, known = __atomic_load_n(&sh->gen[i], __ATOMIC_ACQUIRE);
    th_key(i, KS, k);
    th_value(i, want, v);
    int rc = tide_gens_fetch(g, k, &out, &len, &got_gen);
    uint64_t oldest = tide_gens_oldest_id(g);
    if (rc == 0) {
        if (len != want || memcmp(out, v, len) != 0)
            th_failure(&sh->fails, "%s: item %" PRIu64 ": wrong bytes", who, i);
        free(out);
        if (got_gen > known) __atomic_store_n(&sh->gen[i], got_gen, __ATOMIC_RELEASE);
        return 1;
    }
    if (rc == TIDE_ENOTFOUND && known < oldest) return 0;
    th_failure(&sh->fails, "%s: item %" PRIu64 " (last known in generation %" PRIu64 ", oldest "
               "kept %" PRIu64 "): fetch %d %s: %s", who, i, known, oldest, rc, tide_strerror(rc),
               tide_last_error());
    return 0;
}

typedef struct worker { shared *sh; unsigned w; } worker;

static void *writer(void *arg)
{
    worker *wk = arg;
    shared *sh = wk->sh;
    for (uint64_t j = 0; j < sh->per_writer && !atomic_load(&sh->stop); j++) {
        uint64_t i = item_of(wk->w, j, sh->per_writer), gen = 0;
        uint8_t k[KS], v[VMAX];
        size_t len = th_len(i, VMIN, VMAX);
        th_key(i, KS, k);
        th_value(i, len, v);
        int rc = tide_gens_insert(sh->g, k, v, len, &gen);
        if (rc) {
            th_failure(&sh->fails, "writer %u: insert of item %" PRIu64 ": %d %s: %s", wk->w, i, rc,
                       tide_strerror(rc), tide_last_error());
            break;
        }
        __atomic_store_n(&sh->gen[i], gen, __ATOMIC_RELEASE);
        atomic_store(&sh->acked[wk->w], j + 1);
        check_item(sh, sh->g, i, "writer's read-back");
    }
    return NULL;
}

static void *reader(void *arg)
{
    worker *wk = arg;
    shared *sh = wk->sh;
    th_rng r;
    th_rng_init(&r, 77 + wk->w);
    while (!atomic_load(&sh->stop)) {
        unsigned w = (unsigned)th_rng_below(&r, WRITERS);
        uint64_t n = atomic_load(&sh->acked[w]);
        if (n == 0) continue;
        uint64_t i = item_of(w, th_rng_below(&r, n), sh->per_writer);
        if (check_item(sh, sh->g, i, "reader")) atomic_fetch_add(&sh->reads, 1);
        else atomic_fetch_add(&sh->gone, 1);
    }
    return NULL;
}

static void *syncer(void *arg)
{
    shared *sh = arg;
    while (!atomic_load(&sh->stop)) {
        int rc = tide_gens_sync(sh->g);
        if (rc) th_failure(&sh->fails, "sync: %d %s", rc, tide_strerror(rc));
        tide_clock_sleep_us(2000);
    }
    return NULL;
}

static void inserts_and_fetches_alongside_repeated_rotations_lose_no_write(void **state)
{
    th_scratch *t = *state;
    shared sh;
    tide_gens_opts o;
    pthread_t wt[WRITERS], rt[READERS], st;
    worker ww[WRITERS], rw[READERS];
    unsigned rotations = th_small() ? 8 : 25;

    memset(&sh, 0, sizeof sh);
    th_failures_init(&sh.fails);
    sh.per_writer = th_small() ? 1500 : 6000;
    sh.gen = calloc(WRITERS * sh.per_writer, sizeof *sh.gen);
    assert_non_null(sh.gen);
    tide_gens_opts_init(&o);
    o.online_delete = 1;
    o.keep = 3;
    o.delete_chunk = 16384;
    o.back_off_ms = 1;
    o.store.commit_interval_ms = 20;
    o.store.check_invariants = 1;
    tide_log_set_level(TIDE_LOG_WARN);
    expect_ok(tide_gens_open(&sh.g, t->dir, &o), "open");
    for (unsigned w = 0; w < WRITERS; w++) {
        ww[w] = (worker){ &sh, w };
        assert_int_equal(pthread_create(&wt[w], NULL, writer, &ww[w]), 0);
    }
    for (unsigned w = 0; w < READERS; w++) {
        rw[w] = (worker){ &sh, w };
        assert_int_equal(pthread_create(&rt[w], NULL, reader, &rw[w]), 0);
    }
    assert_int_equal(pthread_create(&st, NULL, syncer, &sh), 0);
    for (unsigned r = 0; r < rotations; r++) {
        tide_gens_rotate_report rep;
        tide_clock_sleep_us(3000);
        int rc = tide_gens_rotate(sh.g, &rep);
        if (rc) th_failure(&sh.fails, "rotation %u: %d %s: %s", r, rc, tide_strerror(rc),
                           tide_last_error());
        else atomic_fetch_add(&sh.rotations, 1);
    }
    for (unsigned w = 0; w < WRITERS; w++) pthread_join(wt[w], NULL);
    atomic_store(&sh.stop, 1);
    for (unsigned w = 0; w < READERS; w++) pthread_join(rt[w], NULL);
    pthread_join(st, NULL);
    th_failures_check(&sh.fails, "during the run");

    tide_gens_info in;
    tide_gens_get_info(sh.g, &in);
    expect_ok(tide_gens_close(sh.g), "close");
    expect_ok(tide_gens_open(&sh.g, t->dir, &o), "reopen");
    uint64_t present = 0, gone = 0;
    for (unsigned w = 0; w < WRITERS; w++)
        for (uint64_t j = 0; j < atomic_load(&sh.acked[w]); j++) {
            if (check_item(&sh, sh.g, item_of(w, j, sh.per_writer), "after reopen")) present++;
            else gone++;
        }
    th_failures_check(&sh.fails, "after reopen");
    expect_ok(tide_gens_close(sh.g), "close after the check");
    tide_log_set_level(TIDE_LOG_INFO);
    if (present == 0) fail_msg("nothing read back after the reopen");
    print_message("  %lu rotations, %lu reads, %lu legitimately gone during the run; "
                  "%" PRIu64 " copied forward; after reopen %" PRIu64 " present, %" PRIu64
                  " dropped\n", (unsigned long)atomic_load(&sh.rotations),
                  (unsigned long)atomic_load(&sh.reads), (unsigned long)atomic_load(&sh.gone),
                  in.copied_forward, present, gone);
    free(sh.gen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inserts_and_fetches_alongside_repeated_rotations_lose_no_write,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return th_run_group("test_gens_concurrency", tests, NULL, NULL, NULL);
}
