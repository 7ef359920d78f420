/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_tally.c: the slots of the per-thread counters (src/store/
 * tally.c), one allocator for the process, slots given back at exit.
 *
 *   - 16 threads hold their slots while 40 others take one, count and
 *     exit one after another; then 16 more join the first 16: the 32 live
 *     threads each own a slot, all different (a round robin that never
 *     gives slots back puts the last ones on the first ones' slots).
 *   - With every slot owned (32 live threads), 8 more threads share slots
 *     (own none) and their adds, and the owners', all reach the sums; once
 *     the owners have exited, a new thread owns a slot again.
 *
 * Threads never call cmocka; they record, and the main thread fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "store/tally.h"

/* A thread that takes its slot, records it, and holds it until released. */
typedef struct holder {
    pthread_t th;
    unsigned slot;
    int owns, adds;
} holder;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, released;
static ti_tally g_tally;

static void *hold_main(void *arg)
{
    holder *h = arg;

    h->slot = ti_tally_slot_take();
    h->owns = ti_tally_owns_slot();
    for (int i = 0; i < h->adds; i++) ti_tally_add(&g_tally, TI_TALLY_FETCHES, 1);
    pthread_mutex_lock(&mu);
    ready++;
    pthread_cond_broadcast(&cv);
    while (!released) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void start(holder *h, int n, int adds)
{
    for (int i = 0; i < n; i++) {
        h[i].adds = adds;
        if (pthread_create(&h[i].th, NULL, hold_main, &h[i]) != 0) fail_msg("pthread_create failed");
    }
}

static void wait_ready(int n)
{
    pthread_mutex_lock(&mu);
    while (ready < n) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void release_all(holder *h, int n)
{
    pthread_mutex_lock(&mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++) pthread_join(h[i].th, NULL);
    ready = 0;
    released = 0;
}

static void *count_once(void *arg)
{
    (void)arg;
    ti_tally_add(&g_tally, TI_TALLY_MAP_VIEWS, 1);
    return NULL;
}

#define HALF (TI_TALLY_SLOTS / 2)
#define PASSERS 40

static void slots_given_back_are_taken_again(void **state)
{
    holder h[TI_TALLY_SLOTS];
    unsigned seen = 0;
    (void)state;

    memset(h, 0, sizeof h);
    start(h, HALF, 0);
    wait_ready(HALF);
    for (int i = 0; i < PASSERS; i++) {      /* come and go, one at a time */
        pthread_t th;
        if (pthread_create(&th, NULL, count_once, NULL) != 0) fail_msg("pthread_create failed");
        pthread_join(th, NULL);
    }
    start(h + HALF, HALF, 0);
    wait_ready(TI_TALLY_SLOTS);
    for (int i = 0; i < TI_TALLY_SLOTS; i++) {
        if (!h[i].owns) { release_all(h, TI_TALLY_SLOTS); fail_msg("live thread %d of 32 owns no slot", i); }
        if (seen & (1u << h[i].slot)) {
            release_all(h, TI_TALLY_SLOTS);
            fail_msg("live thread %d got slot %u, which another live thread has", i, h[i].slot);
        }
        seen |= 1u << h[i].slot;
    }
    release_all(h, TI_TALLY_SLOTS);
    if (ti_tally_sum(&g_tally, TI_TALLY_MAP_VIEWS) != PASSERS)
        fail_msg("the passers' adds: expected %d, got %llu", PASSERS,
                 (unsigned long long)ti_tally_sum(&g_tally, TI_TALLY_MAP_VIEWS));
}

#define EXTRA 8
#define ADDS 1000

static void past_every_slot_threads_share_and_sums_stay_exact(void **state)
{
    holder h[TI_TALLY_SLOTS + EXTRA];
    uint64_t before = ti_tally_sum(&g_tally, TI_TALLY_FETCHES);
    holder again;
    (void)state;

    memset(h, 0, sizeof h);
    start(h, TI_TALLY_SLOTS, ADDS);
    wait_ready(TI_TALLY_SLOTS);
    start(h + TI_TALLY_SLOTS, EXTRA, ADDS);
    wait_ready(TI_TALLY_SLOTS + EXTRA);
    int owners = 0, sharers = 0;
    for (int i = 0; i < TI_TALLY_SLOTS + EXTRA; i++) {
        owners += h[i].owns;
        sharers += !h[i].owns && h[i].slot < TI_TALLY_SLOTS;
    }
    release_all(h, TI_TALLY_SLOTS + EXTRA);
    if (owners != TI_TALLY_SLOTS || sharers != EXTRA)
        fail_msg("expected %d owners and %d sharers, got %d and %d", TI_TALLY_SLOTS, EXTRA, owners, sharers);
    uint64_t got = ti_tally_sum(&g_tally, TI_TALLY_FETCHES) - before;
    if (got != (uint64_t)(TI_TALLY_SLOTS + EXTRA) * ADDS)
        fail_msg("the sum: expected %d adds, got %llu", (TI_TALLY_SLOTS + EXTRA) * ADDS, (unsigned long long)got);
    memset(&again, 0, sizeof again);
    start(&again, 1, 0);
    wait_ready(1);
    release_all(&again, 1);
    if (!again.owns) fail_msg("after the owners exited, a new thread should own a slot again");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slots_given_back_are_taken_again),
        cmocka_unit_test(past_every_slot_threads_share_and_sums_stay_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
