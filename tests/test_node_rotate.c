/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_node_rotate.c: online delete through the node (node.h's online
 * delete section): the exact retention timeline with 2 and 3 generations,
 * the node cache included (a cached object of a dropped generation is not
 * served; a cache hit in the current span copies forward); keep-lists;
 * the advisory_delete gate; the health gate's abandonment; the release
 * after a rotation that dropped a generation; the rotator thread; and a
 * node with online delete off, which has none of it.
 *
 * Rotations are made by tide_node_rotate / tide_node_rotate_keep or by a
 * manual tide_node_rotate_check (rotate_check_ms 0: no thread), so every
 * test asserts events, never time. The health gate is held shut by the
 * opts.health hook; the release is a fake that counts its calls.
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

#include "expect.h"
#include "helpers.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "node/config.h"
#include "node/node.h"
#include "node/startup.h"
#include "gen/manifest.h"
#include "io/io_sim.h"
#include "tide/error.h"
#include "util/log.h"

typedef th_scratch fixture;
#define setup    th_scratch_setup
#define teardown th_scratch_teardown

typedef struct fakes {
    int releases;
    int unhealthy_left;          /* looks the gate answers unhealthy; < 0: for ever */
    int looks;
} fakes;

static int fake_release(void *arg, tide_mem_trim_report *out)
{
    fakes *f = arg;
    memset(out, 0, sizeof *out);
    out->family = TIDE_MEM_ALLOC_GLIBC;
    out->result = 1;
    out->rss_before = 100u << 20;
    out->rss_after = 96u << 20;
    out->rss_delta = -(4 << 20);
    out->duration_ns = 1000;
    f->releases++;
    return 0;
}

static int fake_health(void *arg, char *why, size_t cap)
{
    fakes *f = arg;
    f->looks++;
    if (f->unhealthy_left == 0) return 1;
    if (f->unhealthy_left > 0) f->unhealthy_left--;
    snprintf(why, cap, "held shut by the test");
    return 0;
}

static void gen_opts(tide_node_opts *o, const char *dir, unsigned g, fakes *f)
{
    tide_node_opts_init(o);
    o->dir = dir;
    o->sweep_interval_ms = 0;
    o->online_delete_on = 1;
    o->generations = g;
    o->rotate_check_ms = 0;
    o->back_off_ms = 0;
    o->delete_chunk = 4096;
    o->hooks.release = fake_release;
    o->hooks.release_arg = f;
}

static tide_node *open_with(const tide_node_opts *o)
{
    tide_node *n = NULL;
    int rc = tide_node_open(&n, o);
    if (rc) fail_msg("tide_node_open(%s): %s (%s)", o->dir, tide_strerror(rc), tide_last_error());
    return n;
}

static void key_of(uint64_t i, uint8_t key[32]) { th_key(i, 32, key); }

static size_t len_of(uint64_t i) { return th_len(i, 1, 300); }

static void put(tide_node *n, uint64_t i)
{
    uint8_t key[32], val[300];
    key_of(i, key);
    th_value(i, len_of(i), val);
    int rc = tide_node_put(n, key, val, len_of(i));
    if (rc) fail_msg("put of key %" PRIu64 ": %s (%s)", i, tide_strerror(rc), tide_last_error());
}

/* Read key i: 1 when it is served with its bytes, 0 when absent. */
static int readable(tide_node *n, uint64_t i)
{
    uint8_t key[32], want[300];
    tide_cache_obj *v = NULL;
    int rc;

    key_of(i, key);
    th_value(i, len_of(i), want);
    rc = tide_node_get(n, key, &v);
    if (rc == TIDE_ENOTFOUND) return 0;
    if (rc) fail_msg("get of key %" PRIu64 ": %s (%s)", i, tide_strerror(rc), tide_last_error());
    if (tide_cache_obj_len(v) != len_of(i) || memcmp(tide_cache_obj_data(v), want, len_of(i)) != 0)
        fail_msg("key %" PRIu64 ": wrong bytes served", i);
    tide_cache_obj_release(v);
    return 1;
}

#define expect_readable(n, i, what) do { \
        if (!readable((n), (i))) fail_msg("%s: key %d should be readable; it is gone", (what), (int)(i)); \
    } while (0)
#define expect_gone(n, i, what) do { \
        if (readable((n), (i))) fail_msg("%s: key %d should be gone; it was served", (what), (int)(i)); \
    } while (0)

static void rotate(tide_node *n, tide_node_rotation_report *r)
{
    if (r) memset(r, 0, sizeof *r);      /* tide_node_rotate keeps r's keep_* fields */
    int rc = tide_node_rotate(n, "admin", r);
    if (rc) fail_msg("tide_node_rotate: %s (%s)", tide_strerror(rc), tide_last_error());
}

/* ---- the timeline ----------------------------------------------------------------------- */

static void with_two_generations_an_object_lives_through_the_next_span_and_a_touch_keeps_it(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    tide_cache_stats cs;
    tide_node *n;
    uint8_t key[32], val[300];

    gen_opts(&o, f->dir, 2, &fk);
    n = open_with(&o);
    /* span 1: objects 1..4 written (and so cached with generation 1) */
    for (uint64_t i = 1; i <= 4; i++) put(n, i);
    rotate(n, &r);                                   /* span 2 */
    expect_u64(r.gens.dropped, 0, "the first rotation drops nothing (2 kept)");
    expect_readable(n, 1, "span 2: a cache hit on an object of span 1");   /* copies it forward */
    key_of(2, key);
    th_value(2, len_of(2), val);
    expect_rc(tide_node_put(n, key, val, len_of(2)), TIDE_EEXIST, "span 2: a re-PUT of object 2");
    put(n, 5);                                       /* written in span 2 */
    rotate(n, &r);                                   /* span 3: generation 1 dropped */
    expect_u64(r.gens.dropped, 1, "the second rotation drops generation 1");
    expect_u64(r.gens.dropped_ids[0], 1, "the dropped one");
    tide_node_cache_stats(n, &cs);
    expect_u64(cs.strong + cs.weak, 5, "every object is still in the node cache: the rotation leaves it alone");
    expect_readable(n, 1, "span 3: read in span 2, copied forward");
    expect_readable(n, 2, "span 3: re-PUT in span 2");
    expect_gone(n, 3, "span 3: written in span 1, untouched in span 2, cached all along");
    expect_gone(n, 4, "span 3: the same, twice");
    expect_readable(n, 5, "span 3: written in span 2");
    /* span 3's reads of 1, 2 and 5 copied them forward again */
    put(n, 6);
    put(n, 7);
    rotate(n, &r);                                   /* span 4: generation 2 dropped */
    expect_readable(n, 1, "span 4: read in span 3");
    expect_readable(n, 2, "span 4: read in span 3");
    expect_readable(n, 5, "span 4: read in span 3");
    expect_readable(n, 6, "span 4: written in span 3");
    rotate(n, &r);                                   /* span 5 */
    expect_gone(n, 7, "span 5: written in span 3, untouched in span 4");
    expect_readable(n, 6, "span 5: read in span 4");
    /* A gone key may be written again: it is in no generation. */
    put(n, 3);
    expect_readable(n, 3, "a key whose object was deleted is written anew");
    expect_rc(tide_node_close(n), 0, "close");
}

/* A cached copy from an older generation: the loop's half hands it over
 * without I/O and counts nothing; the worker's half copies it forward (the
 * same object, now tagged with the newest generation) and serves it
 * without asking the node cache again, counted as a cache hit; it then
 * lives through the rotation that drops its first generation. */
static void a_stale_cached_copy_goes_to_the_worker_which_copies_it_forward(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_totals t0, t1;
    tide_cache_stats c0, c1;
    tide_cache_obj *stale = NULL, *v = NULL;
    tide_node *n;
    uint8_t key[32];

    gen_opts(&o, f->dir, 2, &fk);
    n = open_with(&o);
    put(n, 1);                                       /* cached with generation 1 */
    rotate(n, NULL);                                 /* span 2 */
    key_of(1, key);
    tide_node_totals_get(n, &t0);
    expect_rc(tide_node_get_cached(n, key, &stale), TIDE_NODE_GET_STALE, "the loop's half of a stale hit");
    assert_non_null(stale);
    expect_u64(tide_cache_obj_gen(stale), 1, "the copy's generation");
    tide_node_totals_get(n, &t1);
    expect_u64(t1.gets - t0.gets, 0, "the loop's half counts nothing it does not answer");
    tide_node_cache_stats(n, &c0);
    expect_rc(tide_node_get_miss(n, key, stale, &v), 0, "the worker's half");
    tide_node_cache_stats(n, &c1);
    if (v != stale) fail_msg("expected the cached object itself served");
    expect_u64(tide_cache_obj_gen(v), 2, "copied forward: tagged with the newest generation");
    expect_u64(c1.hits + c1.misses - c0.hits - c0.misses, 0, "node-cache lookups in the worker's half");
    tide_cache_obj_release(v);
    tide_node_totals_get(n, &t1);
    expect_u64(t1.gets - t0.gets, 1, "gets");
    expect_u64(t1.gets_cache - t0.gets_cache, 1, "served as a cache hit");
    rotate(n, NULL);                                 /* span 3: generation 1 dropped */
    expect_readable(n, 1, "span 3: copied forward by the worker's half in span 2");
    expect_rc(tide_node_close(n), 0, "close");
}

static void with_three_generations_an_object_lives_three_spans_across_a_reopen(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_gens_info gi;
    tide_node *n;

    gen_opts(&o, f->dir, 3, &fk);
    n = open_with(&o);
    for (uint64_t i = 1; i <= 3; i++) put(n, i);     /* span 1 */
    rotate(n, NULL);                                 /* span 2 */
    put(n, 10);
    rotate(n, NULL);                                 /* span 3 */
    expect_rc(tide_node_close(n), 0, "close in span 3");
    n = open_with(&o);                               /* caches empty: reads go to the generations */
    tide_node_gens_info(n, &gi);
    expect_u64(gi.enabled, 1, "generations after the reopen");
    expect_u64(gi.count, 3, "three held");
    expect_u64(gi.gens[0].id, 3, "the newest");
    expect_readable(n, 1, "span 3: written in span 1 (s + G - 1 = 3)");   /* copied forward into 3 */
    rotate(n, NULL);                                 /* span 4: generation 1 dropped */
    expect_readable(n, 1, "span 4: read in span 3");
    expect_gone(n, 2, "span 4: written in span 1, untouched since");
    expect_readable(n, 10, "span 4: written in span 2, within s + G - 1 = 4");
    rotate(n, NULL);                                 /* span 5: generation 2 dropped */
    expect_readable(n, 10, "span 5: read in span 4");
    expect_gone(n, 3, "span 5: written in span 1");
    tide_node_gens_info(n, &gi);
    expect_u64(gi.rotations, 4, "the manifest counts four rotations");
    expect_u64(gi.gens[gi.count - 1].id, 3, "generations 1 and 2 are gone");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- keep-lists ------------------------------------------------------------------------- */

static void a_keep_list_copies_its_keys_forward_and_they_survive_the_drop(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r, list[4];
    uint8_t keys[3 * 32];
    tide_node *n;

    gen_opts(&o, f->dir, 2, &fk);
    o.delete_batch = 1;                   /* a batch per key, with the pause between them */
    n = open_with(&o);
    for (uint64_t i = 1; i <= 4; i++) put(n, i);
    rotate(n, NULL);                                 /* span 2 */
    put(n, 5);
    key_of(1, keys);
    key_of(2, keys + 32);
    key_of(99, keys + 64);                           /* in no generation */
    expect_rc(tide_node_rotate_keep(n, keys, 3, "admin", &r), 0, "rotate with a keep-list");
    expect_u64(r.keep_keys, 3, "keys handed over");
    expect_u64(r.keep_copied, 2, "copied forward");
    expect_u64(r.keep_missing, 1, "in no generation");
    expect_u64(r.keep_copied_bytes, len_of(1) + len_of(2), "bytes copied");
    expect_u64(r.gens.dropped, 1, "generation 1 dropped");
    expect_str(r.trigger, "admin", "trigger");
    expect_readable(n, 1, "kept");
    expect_readable(n, 2, "kept");
    expect_gone(n, 3, "not on the list, untouched");
    expect_gone(n, 4, "not on the list, untouched");
    expect_u64(tide_node_rotations(n, list, 4), 2, "two attempts recorded");
    expect_u64(list[0].seq, 2, "newest first");
    expect_u64(list[0].keep_copied, 2, "the ring holds the keep-list's figures");

    /* keep_keys, then tide_node_rotate: the keep figures are kept. Key 5
     * was written in span 2 (generation 2, now the older one), unread. */
    key_of(5, keys);
    memset(&r, 0, sizeof r);                         /* keep_keys adds to r's keep figures */
    expect_rc(tide_node_keep_keys(n, keys, 1, &r), 0, "keep_keys");
    expect_u64(r.keep_copied, 1, "key 5 copied from generation 2 into 3");
    expect_rc(tide_node_rotate(n, "admin", &r), 0, "rotate after keep_keys (drops generation 2)");
    expect_u64(r.keep_keys, 1, "the keep figures survive the rotation's fill");
    expect_u64(r.keep_copied, 1, "the keep figures survive the rotation's fill");
    expect_u64(r.gens.dropped_ids[0], 2, "generation 2 dropped");
    expect_readable(n, 5, "kept by keep_keys");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- the gates -------------------------------------------------------------------------- */

static uint64_t rotations_of(tide_node *n)
{
    tide_gens_info gi;
    tide_node_gens_info(n, &gi);
    return gi.rotations;
}

static void advisory_delete_lets_only_what_can_delete_allows_rotate(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    uint64_t now;
    tide_node *n;
    uint64_t next = 1;

    gen_opts(&o, f->dir, 2, &fk);
    o.online_delete = 3;
    o.advisory_delete = 1;
    n = open_with(&o);
    expect_u64(tide_node_rotate_check(n, &r), 0, "nothing due: no attempt");
    for (int i = 0; i < 3; i++) put(n, next++);
    expect_rc(tide_node_can_delete(n, NULL, &now), 0, "read can_delete");
    expect_u64(now, 0, "never after open");
    expect_u64(tide_node_rotate_check(n, &r), 0, "due, but can_delete is never");
    expect_u64(rotations_of(n), 0, "no rotation");
    expect_rc(tide_node_can_delete(n, "now", &now), 0, "now");
    expect_u64(now, 1, "now: the next rotation (count 1)");
    expect_u64(tide_node_rotate_check(n, &r), 1, "now lets one run");
    expect_rc(r.rc, 0, "it rotated");
    expect_str(r.trigger, "objects", "the object trigger");
    expect_u64(rotations_of(n), 1, "one rotation");
    for (int i = 0; i < 3; i++) put(n, next++);
    expect_u64(tide_node_rotate_check(n, &r), 0, "due again; 'now' allowed only one");
    expect_rc(tide_node_can_delete(n, "2", &now), 0, "a number");
    expect_u64(tide_node_rotate_check(n, &r), 1, "count 2 allowed");
    expect_u64(tide_node_rotate_check(n, &r), 0, "not due right after");
    for (int i = 0; i < 3; i++) put(n, next++);
    expect_u64(tide_node_rotate_check(n, &r), 0, "count 3 not allowed by 2");
    expect_rc(tide_node_can_delete(n, "always", &now), 0, "always");
    expect_u64(now, UINT64_MAX, "always");
    expect_u64(tide_node_rotate_check(n, &r), 1, "always");
    for (int i = 0; i < 3; i++) put(n, next++);
    expect_u64(tide_node_rotate_check(n, &r), 1, "always, again");
    expect_rc(tide_node_can_delete(n, "never", &now), 0, "never");
    for (int i = 0; i < 3; i++) put(n, next++);
    expect_u64(tide_node_rotate_check(n, &r), 0, "never");
    expect_u64(rotations_of(n), 4, "four rotations in all");
    /* The admin is not gated: the operator asked. */
    expect_rc(tide_node_rotate(n, "admin", &r), 0, "admin rotation under never");
    expect_rc(tide_node_can_delete(n, "soon", &now), TIDE_EINVAL, "bad text");
    expect_contains(tide_last_error(), "never, always or now", "what is accepted");
    expect_rc(tide_node_can_delete(n, "9007199254740993", &now), TIDE_EINVAL, "over 2^53");
    expect_rc(tide_node_can_delete(n, NULL, &now), 0, "read");
    expect_u64(now, 0, "a refused value changes nothing");
    expect_rc(tide_node_close(n), 0, "close");
}

static void an_unhealthy_node_abandons_the_attempt_after_the_bound_and_logs_it(void **state)
{
    fixture *f = *state;
    fakes fk = { .unhealthy_left = -1 };
    tide_node_opts o;
    tide_node_rotation_report r;
    tide_node_rotation_totals t;
    th_log_capture *cap = calloc(1, sizeof *cap);
    tide_node *n;

    assert_non_null(cap);
    gen_opts(&o, f->dir, 2, &fk);
    o.online_delete = 1;
    o.hooks.health = fake_health;
    o.hooks.health_arg = &fk;
    o.recovery_wait_s = 0;
    o.rotation_wait_max_s = 0;                       /* abandon at the first unhealthy look */
    n = open_with(&o);
    put(n, 1);
    tide_log_set_sink(th_log_capture_sink, cap);
    expect_u64(tide_node_rotate_check(n, &r), 1, "an attempt is made");
    tide_log_set_sink(NULL, NULL);
    expect_u64(r.abandoned, 1, "abandoned");
    expect_rc(r.rc, TIDE_EBUSY, "its rc");
    expect_contains(r.error, "held shut by the test", "the reason is in the report");
    expect_contains(r.error, "rotation_wait_max_seconds=0", "with the bound");
    expect_u64(rotations_of(n), 0, "nothing rotated");
    expect_u64((uint64_t)cap->warnings, 1, "one WARN line");
    expect_contains(cap->text, "abandoned", "the line says abandoned");
    tide_node_rotation_totals_get(n, &t);
    expect_u64(t.abandoned, 1, "counted");
    expect_u64(t.rotations, 0, "no rotation counted");
    expect_u64(tide_node_rotations(n, &r, 1), 1, "recorded");
    expect_u64(r.abandoned, 1, "the recorded report says abandoned");
    expect_rc(tide_node_close(n), 0, "close");

    /* A gate that opens after two unhealthy looks, with a generous bound:
     * the attempt waits (recovery_wait_s 0: at once) and rotates. */
    fk.unhealthy_left = 2;
    fk.looks = 0;
    o.rotation_wait_max_s = 3600;
    n = open_with(&o);
    expect_u64(tide_node_rotate_check(n, &r), 1, "an attempt");
    expect_rc(r.rc, 0, "it rotated once the gate opened");
    expect_u64((uint64_t)fk.looks, 3, "two unhealthy looks, then a healthy one");
    tide_node_rotation_totals_get(n, &t);
    expect_u64(t.gate_waits, 2, "two waits counted");
    expect_u64(rotations_of(n), 1, "one rotation");
    expect_rc(tide_node_close(n), 0, "close");
    free(cap);
}

/* ---- the release after a rotation -------------------------------------------------------- */

static void a_rotation_that_drops_a_generation_makes_one_measured_release(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    tide_node_rotation_totals t;
    tide_node *n;

    gen_opts(&o, f->dir, 2, &fk);
    n = open_with(&o);
    put(n, 1);
    rotate(n, &r);
    expect_u64((uint64_t)fk.releases, 0, "no drop, no release");
    expect_u64(r.trimmed, 0, "the report says so");
    put(n, 2);
    rotate(n, &r);
    expect_u64(r.gens.dropped, 1, "a drop");
    expect_u64((uint64_t)fk.releases, 1, "one release");
    expect_u64(r.trimmed, 1, "recorded");
    expect_i64(r.trim.rss_delta, -(4 << 20), "the release's own report");
    expect_rc(r.trim_rc, 0, "its rc");
    if (r.gens.deleted_bytes == 0) fail_msg("the drop deleted no bytes");
    tide_node_rotation_totals_get(n, &t);
    expect_u64(t.trims, 1, "totals: trims");
    expect_u64(t.trims_lowered, 1, "totals: lowered");
    expect_u64(t.trim_released_bytes, 4u << 20, "totals: released");
    expect_u64(t.trim_duration.count, 1, "the trim histogram");
    expect_u64(t.phase_duration[2].count, 2, "the create phase of both rotations");
    expect_u64(t.dropped, 1, "totals: dropped");
    expect_u64(t.deleted_bytes, r.gens.deleted_bytes, "totals: deleted bytes");
    expect_rc(tide_node_close(n), 0, "close");

    o.trim_after_rotation = 0;
    n = open_with(&o);
    put(n, 3);
    rotate(n, &r);
    expect_u64(r.gens.dropped, 1, "a drop");
    expect_u64((uint64_t)fk.releases, 1, "trim_after_rotation 0: no release");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- the thread and the plain node ---------------------------------------------------------- */

static void the_rotator_thread_rotates_when_the_object_trigger_is_due(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    tide_node *n;
    double t0;

    gen_opts(&o, f->dir, 2, &fk);
    o.online_delete = 2;
    o.rotate_check_ms = 5;
    n = open_with(&o);
    put(n, 1);
    put(n, 2);
    /* Wait for the record, not for the generations' count: the count moves
     * at the switch, inside tide_gens_rotate, and the rotator records the
     * attempt only after the drop and the trim that follow it. */
    t0 = th_now_ms();
    while (tide_node_rotations(n, &r, 1) < 1 && th_now_ms() - t0 < 20000) usleep(2000);
    expect_u64(tide_node_rotations(n, &r, 1), 1, "the thread rotated and recorded it within 20 s");
    expect_u64(rotations_of(n), 1, "one rotation");
    expect_str(r.trigger, "objects", "by the object trigger");
    expect_u64(r.gens.objects_in_previous, 2, "two objects in the previous newest");
    expect_rc(tide_node_close(n), 0, "close stops the thread");
}

static void a_node_with_online_delete_off_has_no_generations(void **state)
{
    fixture *f = *state;
    tide_node_opts o;
    tide_node_rotation_report r;
    tide_gens_info gi;
    tide_node *n;
    char p[4200];
    uint8_t key[32];

    tide_node_opts_init(&o);
    o.dir = f->dir;
    o.sweep_interval_ms = 0;
    o.online_delete = 1;                 /* a trigger without generations does nothing */
    n = open_with(&o);
    put(n, 1);
    expect_rc(tide_node_rotate(n, "admin", &r), TIDE_EINVAL, "rotate");
    expect_contains(tide_last_error(), "online delete is off", "the message");
    key_of(1, key);
    expect_rc(tide_node_keep_keys(n, key, 1, NULL), TIDE_EINVAL, "keep_keys");
    expect_rc(tide_node_rotate_keep(n, key, 1, "admin", NULL), TIDE_EINVAL, "rotate_keep");
    expect_u64(tide_node_rotate_check(n, &r), 0, "rotate_check");
    expect_u64(tide_node_rotations(n, &r, 1), 0, "nothing recorded");
    tide_node_gens_info(n, &gi);
    expect_u64(gi.enabled, 0, "not enabled");
    expect_u64(gi.disk_bytes, gi.gens[0].dat_file_bytes + gi.gens[0].key_file_bytes + gi.gens[0].log_file_bytes,
               "the plain store's files");
    assert_true(th_exists(th_path(p, sizeof p, f->dir, "nudb.dat")));
    assert_false(th_exists(th_path(p, sizeof p, f->dir, "tide.generations")));
    expect_readable(n, 1, "served as always");
    expect_rc(tide_node_close(n), 0, "close");
}

/* The built-in gate with rotation_max_rss: a bound below the process's
 * anonymous RSS, which the gate counts (64 KiB; a test process holds more:
 * the check says so) holds the rotation and names the figures; a bound far
 * above lets it run. */
static void the_health_gate_waits_while_rss_is_over_rotation_max_rss(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    uint64_t rss = 0;
    tide_node *n;

    expect_rc(tide_mem_proc_anon_rss(&rss), 0, "the process's anonymous RSS");
    if (rss <= (64u << 10)) fail_msg("this test needs an anonymous RSS over 64 KiB; it is %" PRIu64, rss);
    gen_opts(&o, f->dir, 2, &fk);
    o.online_delete = 1;
    o.recovery_wait_s = 0;
    o.rotation_wait_max_s = 0;                       /* abandon at the first unhealthy look */
    o.rotation_max_rss = 64u << 10;
    n = open_with(&o);
    put(n, 1);
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_u64(tide_node_rotate_check(n, &r), 1, "an attempt is made");
    tide_log_set_sink(NULL, NULL);
    expect_u64(r.abandoned, 1, "abandoned: RSS over the bound");
    expect_contains(r.error, "over rotation_max_rss=64 KiB", "the reason names the bound");
    expect_u64(rotations_of(n), 0, "nothing rotated");
    expect_rc(tide_node_close(n), 0, "close");

    o.rotation_max_rss = 1ull << 50;
    n = open_with(&o);
    expect_u64(tide_node_rotate_check(n, &r), 1, "an attempt");
    expect_rc(r.rc, 0, "RSS under the bound: it rotates");
    expect_u64(rotations_of(n), 1, "rotated");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- shutdown during a gradual delete ------------------------------------------------------ */

typedef struct locked_log {
    pthread_mutex_t mu;
    th_log_capture cap;
} locked_log;

static void locked_sink(void *arg, int level, const char *line)
{
    locked_log *l = arg;
    pthread_mutex_lock(&l->mu);
    th_log_capture_sink(&l->cap, level, line);
    pthread_mutex_unlock(&l->mu);
}

typedef struct closer { tide_node *n; int rc; } closer;

static void *close_main(void *arg)
{
    closer *c = arg;
    c->rc = tide_node_close(c->n);
    return NULL;
}

/* The rotator thread drops a generation of ~50 delete steps with 60 s
 * between two; tide_node_close interrupts it: close returns, the rotation's
 * line says fewer steps than the file needed, and the next open removes
 * the rest. Before the fix close waited the whole drop (about 50 minutes):
 * the bound below is only there so the failure is a message, not a hang. */
static void close_interrupts_a_gradual_delete_between_two_steps(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_gens_info gi;
    locked_log *ll = calloc(1, sizeof *ll);
    closer c = { 0 };
    pthread_t tid;
    uint64_t needed, steps = UINT64_MAX;
    char p[2400];
    const char *at;
    int done = 0;

    assert_non_null(ll);
    pthread_mutex_init(&ll->mu, NULL);
    gen_opts(&o, f->dir, 2, &fk);
    {
        tide_node *n = open_with(&o);
        for (uint64_t i = 1; i <= 200; i++) {
            uint8_t key[32], val[1000];
            key_of(i, key);
            th_value(i, sizeof val, val);
            expect_rc(tide_node_put(n, key, val, sizeof val), 0, "put into generation 1");
        }
        rotate(n, NULL);                                 /* generation 2; 1 is the older */
        expect_rc(tide_node_close(n), 0, "close");
    }
    o.rotate_check_ms = 1;                               /* the thread looks every ms */
    o.online_delete = 1;                                 /* one object in the newest: due */
    o.back_off_ms = 60000;
    o.delete_chunk = 4096;
    c.n = open_with(&o);
    tide_node_gens_info(c.n, &gi);
    expect_u64(gi.count, 2, "two generations");
    needed = (gi.gens[1].dat_file_bytes + 4095) / 4096;
    if (needed < 10) fail_msg("generation 1's nudb.dat should need many steps; it needs %" PRIu64, needed);
    tide_log_set_sink(locked_sink, ll);
    put(c.n, 1000);                                      /* the trigger: the thread rotates, dropping 1 */
    for (int i = 0; i < 20000; i++) {                    /* wait for the manifest's count to move */
        tide_node_gens_info(c.n, &gi);
        if (gi.rotations == 2) break;
        usleep(1000);
    }
    expect_u64(gi.rotations, 2, "the rotator thread rotated (its drop is under way)");
    expect_rc(pthread_create(&tid, NULL, close_main, &c), 0, "the closing thread");
    for (int i = 0; i < 20000 && !done; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        done = pthread_timedjoin_np(tid, NULL, &ts) == 0;
    }
    if (!done) fail_msg("close did not return while the drop paused 60 s between its steps");
    tide_log_set_sink(NULL, NULL);
    expect_rc(c.rc, 0, "close");
    at = strstr(ll->cap.text, "1 dropped (");
    if (at == NULL || (at = strstr(at, " deleted in ")) == NULL || sscanf(at, " deleted in %" SCNu64, &steps) != 1)
        fail_msg("the rotation's line should say its delete steps; the log says:\n%s", ll->cap.text);
    if (steps >= needed)
        fail_msg("the drop took %" PRIu64 " steps of the %" PRIu64 " the file needed: not interrupted", steps, needed);
    assert_true(th_exists(th_path(p, sizeof p, f->dir, "gen-000000000001")));

    o.rotate_check_ms = 0;
    o.back_off_ms = 0;
    c.n = open_with(&o);
    tide_node_gens_info(c.n, &gi);
    expect_u64(gi.removed_at_open, 1, "the next open removes the rest of generation 1");
    assert_false(th_exists(th_path(p, sizeof p, f->dir, "gen-000000000001")));
    expect_rc(tide_node_close(c.n), 0, "close");
    pthread_mutex_destroy(&ll->mu);
    free(ll);
}

/* After tide_node_interrupt a keep-list stops at its next batch and a
 * rotation is TIDE_ECLOSED; reads and writes go on. */
static void after_an_interrupt_keep_lists_stop_and_rotations_are_closed(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_node_rotation_report r;
    uint8_t keys[3 * 32];
    tide_node *n;

    gen_opts(&o, f->dir, 2, &fk);
    o.delete_batch = 1;
    o.back_off_ms = 60000;                           /* the interrupt cuts the pause short */
    n = open_with(&o);
    for (uint64_t i = 1; i <= 3; i++) put(n, i), key_of(i, keys + (i - 1) * 32);
    tide_node_interrupt(n);
    memset(&r, 0, sizeof r);
    expect_rc(tide_node_keep_at(n, keys, 3, &r, NULL), TIDE_ECLOSED, "the keep-list stops");
    expect_u64(r.keep_keys, 1, "after its first batch");
    expect_contains(tide_last_error(), "stopped after 1 of 3 keys", "and says how far it went");
    tide_log_set_sink(th_log_discard_sink, NULL);
    expect_rc(tide_node_rotate(n, "admin", NULL), TIDE_ECLOSED, "a rotation after the interrupt");
    tide_log_set_sink(NULL, NULL);
    put(n, 4);
    expect_readable(n, 4, "writes and reads go on");
    expect_u64(rotations_of(n), 0, "nothing rotated");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- the keep in force ------------------------------------------------------------------ */

/* A keep-4 ring reopened without generations (opts_init's default) keeps
 * 4: the next rotation drops only the oldest. An explicit 2 is honoured,
 * with a WARN naming the generations the next rotation drops. */
static void a_restart_without_generations_keeps_the_manifests_keep(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_gens_info gi;
    tide_node_rotation_report r;
    th_log_capture *cap = calloc(1, sizeof *cap);
    tide_node *n;

    assert_non_null(cap);
    gen_opts(&o, f->dir, 4, &fk);
    n = open_with(&o);
    for (int i = 0; i < 3; i++) rotate(n, NULL);       /* generations 1..4 */
    expect_rc(tide_node_close(n), 0, "close the keep-4 ring");

    gen_opts(&o, f->dir, 0, &fk);
    tide_node_opts o_default;
    tide_node_opts_init(&o_default);
    o.generations = o_default.generations;             /* as a restart without --generations */
    tide_log_set_sink(th_log_capture_sink, cap);
    n = open_with(&o);
    tide_log_set_sink(NULL, NULL);
    expect_contains(cap->text, "keeping 4 generations (the manifest's keep", "the open says which keep");
    expect_u64((uint64_t)cap->warnings, 0, "no warning: nothing shrinks");
    rotate(n, &r);
    expect_u64(r.gens.dropped, 1, "only the oldest of the four is dropped");
    tide_node_gens_info(n, &gi);
    expect_u64(gi.keep, 4, "the manifest's keep stays 4");
    expect_u64(gi.count, 4, "four held");
    expect_rc(tide_node_close(n), 0, "close");

    memset(cap, 0, sizeof *cap);
    gen_opts(&o, f->dir, 2, &fk);                      /* the operator asks for 2 */
    tide_log_set_sink(th_log_capture_sink, cap);
    n = open_with(&o);
    tide_log_set_sink(NULL, NULL);
    expect_u64((uint64_t)cap->warnings, 1, "one WARN for the shrink");
    expect_contains(cap->text, "keep 2 is below tide.generations's 4: the next rotation keeps 2 and drops "
                    "generations 4, 3, 2", "the WARN names what will be dropped");
    expect_contains(cap->text, "keeping 2 generations (configured: generations; the manifest has 4",
                    "the open says the configured keep is in force");
    rotate(n, &r);
    expect_u64(r.gens.dropped, 3, "the explicit lower keep is honoured");
    tide_node_gens_info(n, &gi);
    expect_u64(gi.keep, 2, "keep 2 now");
    expect_u64(gi.count, 2, "two held");
    expect_rc(tide_node_close(n), 0, "close");

    memset(cap, 0, sizeof *cap);
    expect_rc(th_rmrf(f->dir), 0, "a new directory");
    gen_opts(&o, f->dir, 0, &fk);
    tide_log_set_sink(th_log_capture_sink, cap);
    n = open_with(&o);
    tide_log_set_sink(NULL, NULL);
    expect_contains(cap->text, "keeping 2 generations (the default for a new directory", "a new directory: 2");
    tide_node_gens_info(n, &gi);
    expect_u64(gi.keep, 2, "a new directory keeps 2");
    expect_rc(tide_node_close(n), 0, "close");
    free(cap);
}

/* ---- a rotation that fails after its hide ---------------------------------------------- */

typedef struct window {
    tide_node  *n;
    tide_io_sim *sim;
    int         hidden, got, armed;
    uint64_t    key;            /* the key the GET in the window reads */
    int         persistent;     /* the manifest fault: 1 fails its write-back too */
    uint64_t    fail_n;         /* which call of the manifest write fails first (0: the first) */
} window;

/* At the sync after the hide: a GET of w->key (only generation 1 holds it)
 * is a miss the key cache remembers; at "manifest": the write fails. */
static void window_step(void *arg, const char *step)
{
    window *w = arg;
    if (w->n == NULL) return;
    if (strcmp(step, "hide") == 0) w->hidden = 1;
    if (strcmp(step, "sync") == 0 && w->hidden && !w->got) {
        w->got = 1;
        expect_gone(w->n, w->key, "a GET in the hide window");
    }
    if (strcmp(step, "manifest") == 0 && w->got && !w->armed) {
        w->armed = 1;
        expect_ok(tide_io_sim_fail_at(w->sim, w->fail_n ? w->fail_n : 1, TIDE_IO_SIM_EIO, w->persistent),
                  "io_sim");
    }
}

static void expect_put_exists(tide_node *n, uint64_t i, const char *what)
{
    uint8_t key[32], val[300];
    key_of(i, key);
    th_value(i, len_of(i), val);
    expect_rc(tide_node_put(n, key, val, len_of(i)), TIDE_EEXIST, what);
}

/* A node on a fresh io_sim with G = 2 and window_step as its gens trace:
 * keys 1 and 2 in generation 1, key 3 in generation 2 (the newest). */
static tide_node *open_windowed(tide_io_sim **sim, window *w, fakes *fk)
{
    tide_node_opts o;
    expect_ok(tide_io_sim_create(sim), "io_sim");
    expect_ok(tide_io_sim_mkdir(*sim, "/d"), "io_sim");
    gen_opts(&o, "/d", 2, fk);
    o.hooks.io = tide_io_sim_io(*sim);
    o.hooks.gens_trace = window_step;
    o.hooks.gens_trace_arg = w;
    tide_node *n = open_with(&o);
    put(n, 1);
    put(n, 2);
    rotate(n, NULL);
    put(n, 3);
    w->n = n;
    w->sim = *sim;
    w->hidden = w->got = w->armed = 0;
    return n;
}

/* An admin rotation that must fail with EIO (the window's fault), then the
 * fault disarmed. */
static void rotate_fails(tide_node *n, tide_io_sim *sim, const char *what)
{
    tide_node_rotation_report r;
    memset(&r, 0, sizeof r);
    tide_log_set_level(TIDE_LOG_ERROR);
    expect_rc(tide_node_rotate(n, "admin", &r), TIDE_EIO, what);
    tide_log_set_level(TIDE_LOG_INFO);
    expect_ok(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0), "io_sim");
}

/* The end of a windowed test: a working rotation drops generation 1, key
 * `lives` (copied forward or in 2) is still served; the node is closed. */
static void finish_windowed(tide_node *n, tide_io_sim *sim, window *w, uint64_t lives, const char *what)
{
    tide_node_rotation_report r;
    w->n = NULL;
    rotate(n, &r);
    expect_u64(r.gens.dropped, 1, "a working rotation drops generation 1");
    expect_readable(n, lives, what);
    expect_rc(tide_node_close(n), 0, "close");
    tide_io_sim_destroy(sim);
}

/* A false miss: a GET in the window of a rotation whose
 * manifest write then fails (written back: the disk is known) is
 * remembered as a miss; once generation 1 is shown again the node must
 * answer 200 and 409 for it, not 404 and 409 (the key cache clear after
 * the failure; a PUT answered EEXIST erases the key too). */
static void a_rotation_failed_after_its_hide_leaves_no_false_miss(void **state)
{
    fakes fk = { 0 };
    tide_io_sim *sim = NULL;
    window w = { 0 };
    (void)state;

    tide_node *n = open_windowed(&sim, &w, &fk);     /* 2 newest, 1 holds keys 1 and 2 */
    w.key = 1;
    rotate_fails(n, sim, "the manifest write fails");
    expect_i64(w.got, 1, "the GET ran in the window");
    expect_readable(n, 1, "after the failed rotation: GET 200, not a remembered 404");
    expect_put_exists(n, 1, "PUT 409: the object is present");
    expect_readable(n, 1, "and still 200 after the 409");
    /* The PUT path alone: the miss remembered in the window, then a PUT
     * first (409), then the GET. */
    w.hidden = w.got = w.armed = 0;
    w.key = 2;
    rotate_fails(n, sim, "the manifest write fails again");
    expect_put_exists(n, 2, "PUT 409 of a key missed in the window");
    expect_readable(n, 2, "GET 200 after it");
    finish_windowed(n, sim, &w, 1, "key 1, read after the failure, was copied forward and lives on");
}

/* A double fault (the manifest write and its write-back fail): the
 * rotator's next look writes the manifest again though no rotation is
 * due, and the generation being dropped stays hidden until a rotation
 * drops it. */
static void the_rotators_next_look_rewrites_the_manifest_after_a_double_fault(void **state)
{
    fakes fk = { 0 };
    tide_io_sim *sim = NULL;
    tide_gen_manifest m;
    window w = { 0 };
    (void)state;

    tide_node *n = open_windowed(&sim, &w, &fk);
    w.key = 1;
    w.fail_n = 6;                                     /* the directory sync after the rename */
    w.persistent = 1;                                 /* and the write-back */
    rotate_fails(n, sim, "the double fault");
    expect_ok(tide_gen_manifest_read(tide_io_sim_io(sim), "/d", &m), "read the manifest");
    expect_u64(m.gens[0].id, 3, "the disk names generation 3 (the double fault)");
    expect_gone(n, 1, "generation 1 stays hidden after a double fault");
    expect_i64(tide_node_rotate_check(n, NULL), 0, "a look with no rotation due");
    expect_ok(tide_gen_manifest_read(tide_io_sim_io(sim), "/d", &m), "read the manifest");
    expect_u64(m.gens[0].id, 2, "the look wrote the handle's manifest again");
    expect_u64(m.count, 2, "naming generation 1 still");
    expect_gone(n, 1, "still hidden until a rotation drops it");
    finish_windowed(n, sim, &w, 3, "generation 2's object");
}

/* ---- the startup line of the disk bound -------------------------------------------------- */

static void the_startup_log_states_the_disk_bound_by_mean_record_or_per_record(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_config c;
    th_log_capture *cap = calloc(1, sizeof *cap);
    tide_node *n;

    assert_non_null(cap);
    tide_config_defaults(&c);
    c.online_delete_on = 1;
    c.online_delete = 1000;
    c.generations = 3;
    gen_opts(&o, f->dir, 3, &fk);
    n = open_with(&o);
    tide_log_set_sink(th_log_capture_sink, cap);
    tide_startup_log_disk(&c, n);
    expect_contains(cap->text, "online delete: 3 generations of 1000 objects: the disk holds at most about 3 x 1000 "
                    "objects (copies forward included), i.e. 3000 x (record size)", "an empty newest: per record");
    for (uint64_t i = 1; i <= 10; i++) put(n, i);
    memset(cap, 0, sizeof *cap);
    tide_startup_log_disk(&c, n);
    expect_contains(cap->text, "at the newest's mean record of", "with objects: by the mean record");
    expect_contains(cap->text, "/ 10 objects)", "the mean's figures");
    memset(cap, 0, sizeof *cap);
    c.online_delete_on = 0;
    tide_startup_log_disk(&c, n);
    expect_u64((uint64_t)cap->calls, 0, "nothing with online delete off");
    tide_log_set_sink(NULL, NULL);
    expect_rc(tide_node_close(n), 0, "close");
    free(cap);
}

/* tide_startup_log_disk's lines for `c` and `n` into cap (emptied first). */
static void log_disk_into(th_log_capture *cap, const tide_config *c, tide_node *n)
{
    memset(cap, 0, sizeof *cap);
    tide_log_set_sink(th_log_capture_sink, cap);
    tide_startup_log_disk(c, n);
    tide_log_set_sink(NULL, NULL);
}

/* A keep-2 directory opened with --generations 4: the bound is the keep
 * the next rotation puts in force, and the line says when (not "at most
 * about 2 x N"). */
static void the_startup_bound_is_the_keep_after_the_next_rotation(void **state)
{
    fixture *f = *state;
    fakes fk = { 0 };
    tide_node_opts o;
    tide_config c;
    th_log_capture *cap = calloc(1, sizeof *cap);

    assert_non_null(cap);
    gen_opts(&o, f->dir, 2, &fk);
    expect_rc(tide_node_close(open_with(&o)), 0, "a keep-2 directory");
    gen_opts(&o, f->dir, 4, &fk);
    tide_node *n = open_with(&o);
    tide_config_defaults(&c);
    c.online_delete_on = 1;
    c.online_delete = 1000;
    c.generations = 4;
    c.src[TIDE_CFG_GENERATIONS].kind = TIDE_SRC_FLAG;
    snprintf(c.src[TIDE_CFG_GENERATIONS].where, sizeof c.src[0].where, "--generations");
    log_disk_into(cap, &c, n);
    expect_contains(cap->text, "online delete: 4 generations (4 after the next rotation; 2 now) of 1000 objects: "
                    "the disk holds at most about 4 x 1000 objects", "the bound of the keep to come, and when");
    expect_contains(cap->text, "keep 2 generations in force, 4 from the next rotation (generations=4 from flag "
                    "--generations)", "the keep line says when the configured one takes effect");
    c.src[TIDE_CFG_GENERATIONS].kind = TIDE_SRC_DEFAULT;   /* not set: the manifest's 2, nothing to come */
    log_disk_into(cap, &c, n);
    expect_contains(cap->text, "online delete: 2 generations of 1000 objects: the disk holds at most about 2 x 1000",
                    "not set: the manifest's keep");
    expect_rc(tide_node_close(n), 0, "close");
    free(cap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(with_two_generations_an_object_lives_through_the_next_span_and_a_touch_keeps_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_stale_cached_copy_goes_to_the_worker_which_copies_it_forward, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(with_three_generations_an_object_lives_three_spans_across_a_reopen, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_keep_list_copies_its_keys_forward_and_they_survive_the_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(advisory_delete_lets_only_what_can_delete_allows_rotate, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unhealthy_node_abandons_the_attempt_after_the_bound_and_logs_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_rotation_that_drops_a_generation_makes_one_measured_release, setup, teardown),
        cmocka_unit_test_setup_teardown(the_rotator_thread_rotates_when_the_object_trigger_is_due, setup, teardown),
        cmocka_unit_test_setup_teardown(a_node_with_online_delete_off_has_no_generations, setup, teardown),
        cmocka_unit_test_setup_teardown(the_startup_log_states_the_disk_bound_by_mean_record_or_per_record, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_startup_bound_is_the_keep_after_the_next_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rotation_failed_after_its_hide_leaves_no_false_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(the_rotators_next_look_rewrites_the_manifest_after_a_double_fault, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_restart_without_generations_keeps_the_manifests_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(close_interrupts_a_gradual_delete_between_two_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(after_an_interrupt_keep_lists_stop_and_rotations_are_closed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_health_gate_waits_while_rss_is_over_rotation_max_rss, setup, teardown),
    };
    return th_run_group("test_node_rotate", tests, NULL, NULL, NULL);
}
