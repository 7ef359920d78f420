/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_arena_concurrency.c: the segment arena under threads, with an owner
 * built the way the node cache will be.
 *
 * The owner is a table of 512 slots under one mutex; a slot holds a
 * reference-counted object allocated from the arena, tagged slot + 1 once
 * it is filled in and in its slot. Three workers put (a new object
 * replaces the slot's), delete and get objects; a get takes a reference
 * under the owner's lock and reads the bytes after dropping it, and half
 * of them keep the object for a while (up to 8 a worker) before reading it
 * again and letting go. The last reference frees the object to the arena.
 * An evacuator thread evacuates and releases in a loop: its callback, under
 * the owner's lock, re-reads the tag, copies a slot's current object into
 * a new one, puts the copy in the slot, and drops the slot's reference to
 * the old one, which lives on while a reader holds it.
 *
 * Every object's bytes are stream(id) of its length, so any read must see
 * exactly those; a held object that was moved meanwhile must too. The run
 * lasts 1.5 s and goes on (up to a minute) until objects were moved and a
 * holder read a moved object, however slow the machine. At the end every
 * slot is emptied and the arena must have no live object; tide_arena_check
 * runs in the evacuator's loop and at the end.
 *
 * Threads never call cmocka; they record failures (th_failures).
 * `make tsan` runs this under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "mem/arena.h"
#include "tide/error.h"
#include "util/clock.h"
#include "helpers.h"

#define SLOTS    512
#define WORKERS  3
#define HOLD     8
#define SEG      ((size_t)64 << 10)
#define RUN_MS   1500
#define CAP_MS   60000

typedef struct obj {
    atomic_uint refs;
    atomic_int moved;           /* set when the evacuator moved it away */
    uint32_t slot, len;
    uint64_t id;
    unsigned char data[];
} obj;

typedef struct shared {
    tide_arena *a;
    pthread_mutex_t mu;         /* the owner's lock: slots and tags */
    obj *slot[SLOTS];
    atomic_ullong next_id, puts, gets, moved, held_across, workers;
    atomic_int stop;
    th_failures fail;
} shared;

static void put_ref(shared *sh, obj *o)
{
    if (o != NULL && atomic_fetch_sub_explicit(&o->refs, 1u, memory_order_acq_rel) == 1)
        tide_arena_free(sh->a, o);
}

static void verify(shared *sh, const obj *o, const char *how)
{
    unsigned char want[2048];

    if (o->len > sizeof want) {
        th_failure(&sh->fail, "%s: object %" PRIu64 " has length %u", how, o->id, o->len);
        return;
    }
    th_stream(o->id, want, o->len);
    if (memcmp(o->data, want, o->len) != 0)
        th_failure(&sh->fail, "%s: object %" PRIu64 " (%u bytes): expected stream(id), got "
                   "other bytes", how, o->id, o->len);
}

static void do_put(shared *sh, th_rng *r, uint32_t s)
{
    uint32_t len = (uint32_t)th_rng_range(r, 1, 2000);
    obj *o = NULL, *old;

    if (tide_arena_alloc(sh->a, sizeof *o + len, (void **)&o) != 0) {
        th_failure(&sh->fail, "put: alloc of %zu bytes: %s", sizeof *o + len, tide_last_error());
        return;
    }
    atomic_init(&o->refs, 1u);
    atomic_init(&o->moved, 0);
    o->slot = s;
    o->len = len;
    o->id = atomic_fetch_add(&sh->next_id, 1);
    th_stream(o->id, o->data, len);
    pthread_mutex_lock(&sh->mu);
    old = sh->slot[s];
    sh->slot[s] = o;
    tide_arena_set_tag(sh->a, o, s + 1u);       /* filled in and in its slot: offered */
    if (old) tide_arena_set_tag(sh->a, old, 0);
    pthread_mutex_unlock(&sh->mu);
    put_ref(sh, old);
    atomic_fetch_add(&sh->puts, 1);
}

static obj *do_get(shared *sh, uint32_t s)
{
    obj *o;

    pthread_mutex_lock(&sh->mu);
    o = sh->slot[s];
    if (o) atomic_fetch_add_explicit(&o->refs, 1u, memory_order_relaxed);
    pthread_mutex_unlock(&sh->mu);
    if (o) verify(sh, o, "get");
    atomic_fetch_add(&sh->gets, 1);
    return o;
}

static void let_go(shared *sh, obj *o)
{
    verify(sh, o, "a held object, at let-go");
    if (atomic_load(&o->moved)) atomic_fetch_add(&sh->held_across, 1);
    put_ref(sh, o);
}

static void *worker_main(void *arg)
{
    shared *sh = arg;
    obj *held[HOLD] = { 0 };
    unsigned next = 0;
    th_rng r;

    th_rng_init(&r, th_seed(26) * 1000003u + atomic_fetch_add(&sh->workers, 1));
    while (!atomic_load(&sh->stop)) {
        uint32_t s = (uint32_t)th_rng_below(&r, SLOTS), op = (uint32_t)th_rng_below(&r, 10);
        if (op < 4) {
            do_put(sh, &r, s);
        } else if (op < 5) {
            obj *old;
            pthread_mutex_lock(&sh->mu);
            old = sh->slot[s];
            sh->slot[s] = NULL;
            if (old) tide_arena_set_tag(sh->a, old, 0);
            pthread_mutex_unlock(&sh->mu);
            put_ref(sh, old);
        } else {
            obj *o = do_get(sh, s);
            if (o == NULL) continue;
            if (th_rng_below(&r, 2)) {
                put_ref(sh, o);
                continue;
            }
            if (held[next]) let_go(sh, held[next]);     /* the oldest held */
            held[next] = o;
            next = (next + 1) % HOLD;
        }
    }
    for (unsigned k = 0; k < HOLD; k++)
        if (held[k]) let_go(sh, held[k]);
    return NULL;
}

/* The owner's move: under its lock, copy the slot's current object. */
static int move_cb(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    shared *sh = arg;
    obj *o = p, *c = NULL;
    uint32_t s = (uint32_t)tag - 1u;

    pthread_mutex_lock(&sh->mu);
    if (tag == 0 || tide_arena_tag(a, p) != tag || sh->slot[s] != o ||
        tide_arena_alloc(a, size, (void **)&c) != 0) {
        pthread_mutex_unlock(&sh->mu);
        return TIDE_ARENA_KEPT;         /* no longer the slot's, or no room for a copy */
    }
    atomic_init(&c->refs, 1u);
    atomic_init(&c->moved, 0);
    c->slot = o->slot;
    c->len = o->len;
    c->id = o->id;
    memcpy(c->data, o->data, o->len);
    sh->slot[s] = c;
    tide_arena_set_tag(a, c, tag);
    tide_arena_set_tag(a, o, 0);
    atomic_store(&o->moved, 1);
    pthread_mutex_unlock(&sh->mu);
    put_ref(sh, o);                     /* a holder keeps it until it lets go */
    atomic_fetch_add(&sh->moved, 1);
    return TIDE_ARENA_MOVED;
}

static void *evacuator_main(void *arg)
{
    shared *sh = arg;
    unsigned rounds = 0;

    while (!atomic_load(&sh->stop)) {
        tide_arena_evac_report r;
        int rc = tide_arena_evacuate(sh->a, 4 * SEG, move_cb, sh, &r);
        if (rc != 0) th_failure(&sh->fail, "evacuate: %d %s", rc, tide_last_error());
        if (++rounds % 16 == 0) tide_arena_check(sh->a);
        tide_clock_sleep_us(500);
    }
    return NULL;
}

static void workers_and_an_evacuator_share_the_arena_and_holders_read_moved_objects(void **state)
{
    shared *sh = calloc(1, sizeof *sh);
    pthread_t th[WORKERS], ev;
    tide_arena_opts o;
    tide_arena_stats st;
    uint64_t t0;

    (void)state;
    th_failures_init(&sh->fail);
    pthread_mutex_init(&sh->mu, NULL);
    tide_arena_opts_init(&o);
    o.segment_bytes = SEG;
    o.va_bytes = (size_t)1 << 30;
    expect_ok(tide_arena_open(&sh->a, &o), "tide_arena_open");
    for (int i = 0; i < WORKERS; i++) pthread_create(&th[i], NULL, worker_main, sh);
    pthread_create(&ev, NULL, evacuator_main, sh);
    t0 = tide_clock_mono_us();
    for (;;) {
        uint64_t ms = (tide_clock_mono_us() - t0) / 1000;
        tide_clock_sleep_us(50000);
        if (ms >= CAP_MS) break;
        if (ms >= RUN_MS && atomic_load(&sh->moved) > 0 && atomic_load(&sh->held_across) > 0)
            break;
    }
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
    pthread_join(ev, NULL);
    th_failures_check(&sh->fail, "workers and evacuator");
    for (int s = 0; s < SLOTS; s++) put_ref(sh, sh->slot[s]);
    tide_arena_check(sh->a);
    tide_arena_stats_get(sh->a, &st);
    print_message("    %llu puts, %llu gets, %llu moved, %llu held across a move; %" PRIu64
                  " releases\n", (unsigned long long)atomic_load(&sh->puts),
                  (unsigned long long)atomic_load(&sh->gets),
                  (unsigned long long)atomic_load(&sh->moved),
                  (unsigned long long)atomic_load(&sh->held_across), st.releases);
    if (atomic_load(&sh->moved) == 0) fail_msg("moves: expected some within a minute, got none");
    if (atomic_load(&sh->held_across) == 0)
        fail_msg("holders: expected a read of an object moved while held, got none");
    expect_u64(st.live_objects, 0, "live objects once every slot is emptied");
    expect_u64(st.evacuated_objects, atomic_load(&sh->moved), "evacuated_objects: the moves");
    if (st.releases == 0) fail_msg("releases: expected segments released, got none");
    tide_arena_close(sh->a);
    pthread_mutex_destroy(&sh->mu);
    pthread_mutex_destroy(&sh->fail.mu);
    free(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workers_and_an_evacuator_share_the_arena_and_holders_read_moved_objects),
    };
    return cmocka_run_group_tests_name("arena_concurrency", tests, NULL, NULL);
}
