/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_arena.c: the segment arena (src/mem/arena.c), one thread.
 *
 * Most tests use 64 KiB segments so that a few hundred objects fill
 * several. Every test runs tide_arena_check (the invariants of arena.c's
 * essay) before it closes the arena. The property test drives random
 * allocations, frees, holds, lets-go and evacuations against a model (each
 * object's first 8 bytes are its model id and the rest a pattern of it)
 * and checks the arena after every step; its seed is printed and
 * TIDE_TEST_SEED repeats it. The RSS test reads RssAnon from
 * /proc/self/status around a release. The benchmark prints figures and
 * asserts none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "expect.h"
#include "mem/arena.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "util/clock.h"
#include "helpers.h"

#define SEG  ((size_t)64 << 10)

static tide_arena *open_small(unsigned reserve, size_t limit)
{
    tide_arena_opts o;
    tide_arena *a = NULL;

    tide_arena_opts_init(&o);
    o.segment_bytes = SEG;
    o.reserve = reserve;
    o.limit_bytes = limit;
    o.va_bytes = (size_t)256 << 20;
    expect_ok(tide_arena_open(&a, &o), "tide_arena_open with 64 KiB segments");
    return a;
}

static void fill(void *p, size_t len, uint64_t id)
{
    th_stream(id * 2 + 1, p, len);
}

/* 1 when the first `len` bytes of p (at most 4 KiB) are fill()'s for id. */
static int same(const void *p, size_t len, uint64_t id)
{
    unsigned char want[4096];
    size_t n = len < sizeof want ? len : sizeof want;

    th_stream(id * 2 + 1, want, n);
    return memcmp(p, want, n) == 0;
}

static tide_arena_stats stats(tide_arena *a)
{
    tide_arena_stats st;

    tide_arena_stats_get(a, &st);
    return st;
}

/* ---- options and errors ---- */

static void options_out_of_range_are_refused_naming_the_option(void **state)
{
    static const struct { size_t seg, limit, va; unsigned pct; const char *name; } bad[] = {
        { 1000, 0, 1u << 30, 50, "segment_bytes 1000" },
        { 32 << 10, 0, 1u << 30, 50, "segment_bytes 32768" },
        { 3 << 20, 0, 1u << 30, 50, "segment_bytes 3145728" },
        { 2 << 20, 1 << 20, 0, 50, "limit_bytes 1048576" },
        { 2 << 20, 0, 1 << 20, 50, "va_bytes 1048576" },
        { 2 << 20, 0, 1u << 30, 0, "evacuate_pct 0" },
        { 2 << 20, 0, 1u << 30, 100, "evacuate_pct 100" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tide_arena_opts o;
        tide_arena *a = NULL;
        tide_arena_opts_init(&o);
        o.segment_bytes = bad[i].seg;
        o.limit_bytes = bad[i].limit;
        o.va_bytes = bad[i].va;
        o.evacuate_pct = bad[i].pct;
        expect_error(tide_arena_open(&a, &o), TIDE_EINVAL, bad[i].name);
        expect_contains(tide_last_error(), bad[i].name, "the error names the option");
        assert_null(a);
    }
}

static void defaults_open_two_mib_segments_with_one_in_reserve(void **state)
{
    tide_arena *a = NULL;
    tide_arena_opts o;
    void *p = NULL;

    (void)state;
    tide_arena_opts_init(&o);
    expect_u64(o.segment_bytes, 2u << 20, "default segment_bytes");
    expect_u64(o.reserve, 1, "default reserve");
    expect_u64(o.limit_bytes, 0, "default limit");
    expect_ok(tide_arena_open(&a, NULL), "tide_arena_open(NULL opts)");
    expect_ok(tide_arena_alloc(a, 100, &p), "alloc 100 bytes");
    expect_u64((uintptr_t)p % 16, 0, "alignment");
    expect_u64(stats(a).resident_bytes, 2u << 20, "one segment resident");
    tide_arena_free(a, p);
    tide_arena_free(a, NULL);
    tide_arena_check(a);
    tide_arena_close(a);
    tide_arena_close(NULL);
}

/* ---- allocation ---- */

static void allocations_are_aligned_sized_and_counted(void **state)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4000, SEG / 4 };
    tide_arena *a = open_small(1, 0);
    void *p[8];
    uint64_t sum = 0;

    (void)state;
    for (size_t i = 0; i < 8; i++) {
        expect_ok(tide_arena_alloc(a, sizes[i], &p[i]), "alloc");
        expect_u64((uintptr_t)p[i] % 16, 0, "a payload is 16-aligned");
        expect_u64(tide_arena_size(a, p[i]), sizes[i], "tide_arena_size gives the size asked");
        expect_u64(tide_arena_alloc_size(a, sizes[i]), 16 + ((sizes[i] + 15) & ~(size_t)15),
                   "alloc_size: a 16-byte header and the size rounded to 16");
        memset(p[i], 0xab, sizes[i]);
        sum += tide_arena_alloc_size(a, sizes[i]);
    }
    tide_arena_check(a);
    expect_u64(stats(a).live_bytes, sum, "live_bytes is the sum of alloc sizes");
    expect_u64(stats(a).live_objects, 8, "live_objects");
    expect_u64(stats(a).allocations, 8, "allocations");
    for (size_t i = 0; i < 8; i++) tide_arena_free(a, p[i]);
    tide_arena_check(a);
    expect_u64(stats(a).live_bytes, 0, "live_bytes after freeing everything");
    expect_u64(stats(a).frees, 8, "frees");
    tide_arena_close(a);
}

static void a_large_object_gets_its_own_mapping_unmapped_when_freed(void **state)
{
    tide_arena *a = open_small(1, 0);
    size_t size = SEG / 4 + 1, len;
    void *p = NULL;
    unsigned char *page;

    (void)state;
    len = tide_arena_alloc_size(a, size);
    expect_ok(tide_arena_alloc(a, size, &p), "alloc of a quarter segment and a byte");
    assert_true(len >= size + 64 && len % 4096 == 0);
    expect_u64(stats(a).large_objects, 1, "large_objects");
    expect_u64(stats(a).large_bytes, len, "large_bytes is the mapping");
    expect_u64(stats(a).resident_bytes, len, "resident: the mapping, no segment");
    expect_u64(tide_arena_size(a, p), size, "size of the large object");
    memset(p, 7, size);
    tide_arena_set_tag(a, p, 99);
    expect_u64(tide_arena_tag(a, p), 99, "a large object keeps its tag");
    tide_arena_check(a);
    page = (unsigned char *)((uintptr_t)p & ~(uintptr_t)4095);
    tide_arena_free(a, p);
    /* msync says ENOMEM for a range that is not mapped. */
    assert_int_equal(msync(page, 4096, MS_ASYNC), -1);
    expect_u64(errno, ENOMEM, "the large mapping is gone after the free");
    expect_u64(stats(a).large_bytes, 0, "large_bytes after the free");
    expect_u64(stats(a).resident_bytes, 0, "resident after the free");
    tide_arena_check(a);
    tide_arena_close(a);
}

/* Allocate `segs` segments' worth of 1008-byte objects (1024 with the
 * header: 64 a segment) into p[]; returns how many. */
static size_t fill_segments(tide_arena *a, void **p, size_t cap, size_t segs)
{
    size_t n = segs * (SEG / 1024);

    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        expect_ok(tide_arena_alloc(a, 1008, &p[i]), "alloc while filling segments");
        fill(p[i], 8, i);
    }
    return n;
}

static void empty_segments_beyond_the_reserve_are_released_and_reused(void **state)
{
    tide_arena *a = open_small(1, 0);
    void *p[1024];
    size_t n, released = 99;
    tide_arena_stats st;

    (void)state;
    n = fill_segments(a, p, 1024, 4);
    expect_u64(n, 4 * SEG / 1024, "four full segments of 1024-byte objects");
    for (size_t i = 0; i < n; i++) tide_arena_free(a, p[i]);
    st = stats(a);
    expect_u64(st.seg_empty, 3, "the three closed segments are empty");
    expect_u64(st.seg_open, 1, "the last one stays open");
    tide_arena_check(a);
    expect_ok(tide_arena_release(a, &released), "release");
    expect_u64(released, 2, "two released: the reserve keeps one");
    st = stats(a);
    expect_u64(st.seg_released, 2, "seg_released");
    expect_u64(st.seg_empty, 1, "seg_empty: the reserve");
    expect_u64(st.resident_bytes, 2 * SEG, "resident: the open one and the reserve");
    expect_u64(st.releases, 2, "releases counted");
    tide_arena_check(a);
    n = fill_segments(a, p, 1024, 4);
    st = stats(a);
    expect_u64(st.seg_total, 4, "reuse: no segment beyond the four is used");
    expect_u64(st.seg_released, 0, "the released ones came back");
    tide_arena_check(a);
    for (size_t i = 0; i < n; i++) tide_arena_free(a, p[i]);
    tide_arena_close(a);
}

static void the_limit_refuses_and_counts_and_nothing_breaks(void **state)
{
    tide_arena *a = open_small(0, 4 * SEG);
    void *p[1024], *q = NULL;
    size_t n = 0;
    int rc = 0;

    (void)state;
    while (n < 1024 && (rc = tide_arena_alloc(a, 1008, &p[n])) == 0) n++;
    expect_error(rc, TIDE_ENOMEM, "the allocation past four segments");
    expect_contains(tide_last_error(), "limit", "the refusal says the limit");
    expect_u64(n, 4 * SEG / 1024, "four segments' worth allocated");
    expect_u64(stats(a).refusals, 1, "one refusal counted");
    expect_u64(stats(a).resident_bytes, 4 * SEG, "resident at the limit");
    expect_error(tide_arena_alloc(a, SEG, &q), TIDE_ENOMEM, "a large object past the limit");
    expect_u64(stats(a).refusals, 2, "two refusals counted");
    tide_arena_check(a);
    for (size_t i = 0; i < SEG / 1024; i++) tide_arena_free(a, p[i]);   /* the first segment */
    expect_ok(tide_arena_alloc(a, 1008, &q), "an allocation once a segment is empty");
    tide_arena_check(a);
    tide_arena_free(a, q);
    for (size_t i = SEG / 1024; i < n; i++) tide_arena_free(a, p[i]);
    tide_arena_check(a);
    tide_arena_close(a);
}

static void a_full_address_range_refuses_with_a_count(void **state)
{
    tide_arena_opts o;
    tide_arena *a = NULL;
    void *p[256];
    size_t n = 0;
    int rc = 0;

    (void)state;
    tide_arena_opts_init(&o);
    o.segment_bytes = SEG;
    o.va_bytes = 2 * SEG;
    expect_ok(tide_arena_open(&a, &o), "open with a range of two segments");
    while (n < 256 && (rc = tide_arena_alloc(a, 1008, &p[n])) == 0) n++;
    expect_error(rc, TIDE_ENOMEM, "the allocation past two segments");
    expect_contains(tide_last_error(), "range is full", "the refusal says the range is full");
    expect_u64(stats(a).refusals, 1, "refusals");
    tide_arena_check(a);
    tide_arena_close(a);
}

/* ---- evacuation ---- */

/* The owner of the evacuation tests: objects by id; the tag is id + 1. */
typedef struct owner {
    void *obj[1024];
    void *old[4096];         /* moved while held: freed at let-go */
    int held[1024];
    size_t nold, offered, declined_every;
} owner;

static int owner_move(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    owner *w = arg;
    size_t id = (size_t)tag - 1;
    void *q = NULL;

    w->offered++;
    if (w->obj[id] != p) fail_msg("move: offered object %zu is not the owner's", id);
    if (w->declined_every && w->offered % w->declined_every == 0) return TIDE_ARENA_KEPT;
    if (tide_arena_alloc(a, size, &q) != 0) return TIDE_ARENA_KEPT;
    memcpy(q, p, size);
    tide_arena_set_tag(a, q, tag);
    tide_arena_set_tag(a, p, 0);
    w->obj[id] = q;
    if (w->held[id]) {                          /* a holder reads it still */
        if (w->nold == sizeof w->old / sizeof w->old[0]) fail_msg("move: too many held copies");
        w->old[w->nold++] = p;
    }
    else tide_arena_free(a, p);
    return TIDE_ARENA_MOVED;
}

/* Fill `segs` segments with 1008-byte objects tagged id + 1, then free
 * all but keep[s] objects of segment s (the first ones). Returns n. */
static size_t owner_fill(tide_arena *a, owner *w, size_t segs, const size_t *keep)
{
    size_t n = fill_segments(a, w->obj, 1024, segs), per = SEG / 1024;

    for (size_t i = 0; i < n; i++) {
        fill(w->obj[i], 1008, i);
        tide_arena_set_tag(a, w->obj[i], i + 1);
    }
    for (size_t i = 0; i < n; i++)
        if (i % per >= keep[i / per]) {
            tide_arena_free(a, w->obj[i]);
            w->obj[i] = NULL;
        }
    return n;
}

/* An arena with no reserve and an owner_fill'ed owner of `segs` segments. */
static owner *owner_start(tide_arena **a, size_t segs, const size_t *keep, size_t *n)
{
    owner *w = calloc(1, sizeof *w);

    assert_non_null(w);
    *a = open_small(0, 0);
    *n = owner_fill(*a, w, segs, keep);
    return w;
}

/* Free what the owner still has, check and close. */
static void owner_end(tide_arena *a, owner *w, size_t n)
{
    for (size_t i = 0; i < n; i++) tide_arena_free(a, w->obj[i]);
    tide_arena_check(a);
    tide_arena_close(a);
    free(w);
}

static void evacuation_empties_the_least_used_segments_first(void **state)
{
    static const size_t keep[5] = { 40, 8, 20, 2, 64 };   /* the last one is open */
    tide_arena *a = NULL;
    tide_arena_evac_report r;
    size_t n;
    owner *w = owner_start(&a, 5, keep, &n);

    (void)state;
    tide_arena_check(a);
    /* A budget of 9 objects: the segment keeping 2 fits, the one keeping 8
     * would not fit beside it, so it waits. */
    expect_ok(tide_arena_evacuate(a, 9 * 1024, owner_move, w, &r), "evacuate 9 objects' worth");
    expect_u64(r.segments, 1, "segments walked");
    expect_u64(r.moved_objects, 2, "objects moved: the least used segment's");
    expect_u64(r.emptied, 1, "segments emptied");
    expect_u64(r.released, 1, "segments released (no reserve)");
    tide_arena_check(a);
    /* 8 and 20 of 64 qualify; 40 of 64 (62%) is above evacuate_pct. */
    expect_ok(tide_arena_evacuate(a, SIZE_MAX, owner_move, w, &r), "evacuate the rest");
    expect_u64(r.segments, 2, "only the segments at most half full are walked");
    expect_u64(r.moved_objects, 28, "their 8 + 20 objects moved");
    expect_u64(r.released, 2, "both released");
    tide_arena_check(a);
    for (size_t i = 0; i < n; i++) {
        if (w->obj[i] == NULL) continue;
        if (!same(w->obj[i], 1008, i)) fail_msg("object %zu: bytes changed by its move", i);
    }
    expect_u64(stats(a).evacuated_objects, 30, "evacuated_objects counts every move");
    owner_end(a, w, n);
}

static void a_held_object_moves_and_its_segment_goes_after_the_last_holder(void **state)
{
    static const size_t keep[2] = { 4, 64 };
    tide_arena *a = NULL;
    tide_arena_evac_report r;
    size_t n, released = 0;
    owner *w = owner_start(&a, 2, keep, &n);

    (void)state;
    w->held[1] = 1;                 /* object 1 is held by a reader */
    void *reader = w->obj[1];
    expect_ok(tide_arena_evacuate(a, SIZE_MAX, owner_move, w, &r), "evacuate around a holder");
    expect_u64(r.moved_objects, 4, "all four moved, the held one too");
    expect_u64(r.emptied, 0, "the segment is not empty: the holder keeps the old copy");
    expect_u64(stats(a).seg_used, 2, "the old segment and the copies' are in use");
    if (!same(reader, 1008, 1)) fail_msg("the holder's copy changed during the evacuation");
    expect_u64(tide_arena_tag(a, reader), 0, "the old copy is no longer the owner's");
    w->offered = 0;
    expect_ok(tide_arena_evacuate(a, SIZE_MAX, owner_move, w, &r), "evacuate again");
    expect_u64(w->offered, 0, "a moved object is not offered again");
    expect_u64(r.segments, 0, "nor is its segment walked: nothing in it is left to move");
    tide_arena_check(a);
    tide_arena_free(a, w->old[0]);  /* the holder lets go */
    expect_u64(stats(a).seg_empty, 1, "its segment is empty now");
    expect_ok(tide_arena_release(a, &released), "release");
    expect_u64(released, 1, "and released");
    owner_end(a, w, n);
}

static int stop_at_second(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    size_t *calls = arg;

    (void)a; (void)p; (void)size; (void)tag;
    return ++*calls == 2 ? TIDE_EIO : TIDE_ARENA_KEPT;
}

static void a_callback_that_declines_or_fails_leaves_objects_in_place(void **state)
{
    static const size_t keep[3] = { 3, 3, 64 };
    tide_arena *a = NULL;
    tide_arena_evac_report r;
    size_t n, calls = 0;
    owner *w = owner_start(&a, 3, keep, &n);

    (void)state;
    expect_rc(tide_arena_evacuate(a, SIZE_MAX, stop_at_second, &calls, &r), TIDE_EIO,
              "a callback's error is returned");
    expect_u64(calls, 2, "the evacuation stopped at the failing call");
    expect_u64(r.kept_objects, 1, "the first was kept");
    tide_arena_check(a);            /* invariant 5: nothing stays pinned */
    w->declined_every = 1;
    expect_ok(tide_arena_evacuate(a, SIZE_MAX, owner_move, w, &r), "an owner declining all");
    expect_u64(r.kept_objects, 6, "all six offered again and kept");
    expect_u64(r.emptied, 0, "nothing emptied");
    expect_u64(stats(a).seg_used, 2, "both segments still in use");
    /* An untagged object (being filled in, or not the owner's) is not offered. */
    for (size_t i = 0; i < n; i++) if (w->obj[i]) tide_arena_set_tag(a, w->obj[i], 0);
    w->offered = 0;
    expect_ok(tide_arena_evacuate(a, SIZE_MAX, owner_move, w, &r), "evacuate untagged objects");
    expect_u64(w->offered, 0, "untagged objects are not offered");
    owner_end(a, w, n);
}

/* ---- the property test ---- */

#define P_IDS 600

typedef struct model {
    owner w;                         /* obj[id]: the owner's copy, or NULL */
    size_t size[P_IDS];
    uint64_t live_bytes, live_objects, refusals;
    tide_arena *a;
} model;

static void model_alloc(model *m, th_rng *r, size_t id)
{
    size_t size = th_rng_below(r, 20) == 0 ? th_rng_range(r, SEG / 4 + 1, SEG / 2)
                                           : th_rng_range(r, 8, 2000);
    void *p = NULL;
    int rc = tide_arena_alloc(m->a, size, &p);

    if (rc == TIDE_ENOMEM) {
        m->refusals++;
        return;
    }
    expect_ok(rc, "alloc in the property test");
    fill(p, size < 64 ? size : 64, id);
    tide_arena_set_tag(m->a, p, id + 1);
    m->w.obj[id] = p;
    m->size[id] = size;
    m->live_bytes += tide_arena_alloc_size(m->a, size);
    m->live_objects++;
}

static void model_free_old(model *m, size_t k)
{
    void *p = m->w.old[k];

    m->live_bytes -= tide_arena_alloc_size(m->a, tide_arena_size(m->a, p));
    m->live_objects--;
    tide_arena_free(m->a, p);
    m->w.old[k] = m->w.old[--m->w.nold];
}

/* One random step: alloc, free, hold, let go, evacuate or release. */
static void model_step(model *m, th_rng *r)
{
    size_t id = th_rng_below(r, P_IDS), op = th_rng_below(r, 100);
    tide_arena_evac_report rep;

    if (op < 45) {
        if (m->w.obj[id] == NULL) model_alloc(m, r, id);
    } else if (op < 80) {
        if (m->w.obj[id] != NULL) {
            m->live_bytes -= tide_arena_alloc_size(m->a, m->size[id]);
            m->live_objects--;
            tide_arena_free(m->a, m->w.obj[id]);
            m->w.obj[id] = NULL;
            m->w.held[id] = 0;
        }
    } else if (op < 88) {
        m->w.held[id] = !m->w.held[id];
    } else if (op < 94) {
        if (m->w.nold) model_free_old(m, th_rng_below(r, m->w.nold));
    } else if (op < 98) {
        size_t before = m->w.nold, refusals = stats(m->a).refusals;
        m->w.declined_every = th_rng_below(r, 3) == 0 ? 5 : 0;
        expect_ok(tide_arena_evacuate(m->a, th_rng_range(r, 1, 8) * SEG / 4, owner_move, &m->w,
                                      &rep), "evacuate in the property test");
        /* Copies are live objects; the moved ones still held stay live too. */
        m->live_objects += m->w.nold - before;
        for (size_t k = before; k < m->w.nold; k++)
            m->live_bytes += tide_arena_alloc_size(m->a, tide_arena_size(m->a, m->w.old[k]));
        m->refusals += stats(m->a).refusals - refusals;   /* copies refused: kept */
    } else {
        expect_ok(tide_arena_release(m->a, NULL), "release in the property test");
    }
}

static void model_compare(model *m, uint64_t step)
{
    tide_arena_stats st = stats(m->a);

    tide_arena_check(m->a);
    if (st.live_objects != m->live_objects || st.live_bytes != m->live_bytes ||
        st.refusals != m->refusals)
        fail_msg("step %" PRIu64 ": expected %" PRIu64 " objects, %" PRIu64 " bytes, %" PRIu64
                 " refusals; the arena says %" PRIu64 ", %" PRIu64 ", %" PRIu64, step,
                 m->live_objects, m->live_bytes, m->refusals, st.live_objects, st.live_bytes,
                 st.refusals);
}

static void random_steps_keep_the_invariants_and_match_a_model(void **state)
{
    uint64_t seed = th_seed(20261206), steps = 20000;
    model *m = calloc(1, sizeof *m);
    th_rng r;

    (void)state;
    print_message("    seed %" PRIu64 " (TIDE_TEST_SEED repeats it)\n", seed);
    th_rng_init(&r, seed);
    m->a = open_small(1, 20 * SEG);      /* the limit is reached now and then */
    for (uint64_t step = 0; step < steps; step++) {
        model_step(m, &r);
        model_compare(m, step);
    }
    for (size_t id = 0; id < P_IDS; id++) {
        if (m->w.obj[id] == NULL) continue;
        if (!same(m->w.obj[id], m->size[id] < 64 ? m->size[id] : 64, id))
            fail_msg("object %zu: its bytes changed", id);
        tide_arena_free(m->a, m->w.obj[id]);
    }
    while (m->w.nold) model_free_old(m, 0);
    expect_ok(tide_arena_release(m->a, NULL), "the last release");
    tide_arena_check(m->a);
    expect_u64(stats(m->a).live_bytes, 0, "live bytes at the end");
    if (stats(m->a).resident_bytes > 2 * SEG)
        fail_msg("resident at the end: expected at most the open segment and the reserve, %zu "
                 "bytes, got %" PRIu64, 2 * SEG, stats(m->a).resident_bytes);
    print_message("    %" PRIu64 " steps: %" PRIu64 " objects evacuated, %" PRIu64 " releases, "
                  "%" PRIu64 " refusals\n", steps, stats(m->a).evacuated_objects,
                  stats(m->a).releases, stats(m->a).refusals);
    if (stats(m->a).evacuated_objects == 0 || stats(m->a).releases == 0 || m->refusals == 0)
        fail_msg("the steps should have moved objects, released segments and met the limit; "
                 "got %" PRIu64 " moved, %" PRIu64 " releases, %" PRIu64 " refusals",
                 stats(m->a).evacuated_objects, stats(m->a).releases, m->refusals);
    tide_arena_close(m->a);
    free(m);
}

/* ---- the kernel's view ---- */

static uint64_t rss_anon(void)
{
    tide_mem_proc_status st;

    expect_ok(tide_mem_proc_status_read(&st), "read /proc/self/status");
    if (!st.has_split) th_skip("this kernel has no RssAnon line");
    return st.rss_anon;
}

static void freed_segments_go_back_to_the_kernel(void **state)
{
    const size_t seg = (size_t)2 << 20, k = 16;
    tide_arena_opts o;
    tide_arena *a = NULL;
    void **p = calloc(k * 1024 + 1024, sizeof *p);
    size_t n = 0, released = 0;
    uint64_t before, after;

    (void)state;
    tide_arena_opts_init(&o);
    o.reserve = 0;
    expect_ok(tide_arena_open(&a, &o), "open with 2 MiB segments");
    while (stats(a).seg_total <= k) {       /* k full segments, and the open one */
        expect_ok(tide_arena_alloc(a, 2032, &p[n]), "alloc");
        memset(p[n], 0x5a, 2032);           /* touch every page */
        n++;
    }
    before = rss_anon();
    for (size_t i = 0; i < n; i++) tide_arena_free(a, p[i]);
    expect_ok(tide_arena_release(a, &released), "release");
    after = rss_anon();
    expect_u64(released, k, "every closed segment released");
    print_message("    RssAnon %" PRIu64 " KiB -> %" PRIu64 " KiB after releasing %zu segments "
                  "of 2 MiB (%.0f us)\n", before >> 10, after >> 10, released,
                  stats(a).release_ns / 1e3);
    if (before < after || before - after < k * seg * 3 / 4)
        fail_msg("RssAnon: expected a fall of at least %zu KiB (3/4 of %zu segments), got %"
                 PRId64 " KiB", k * seg * 3 / 4 >> 10, k, ((int64_t)before - (int64_t)after) / 1024);
    tide_arena_check(a);
    tide_arena_close(a);
    free(p);
}

/* ---- figures, printed ---- */

#define B_N (1u << 17)

typedef struct bench {
    void *p[B_N];
    size_t sz[B_N];
    uint64_t bytes;
} bench;

static int bench_move(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    bench *b = arg;
    void *q = NULL;

    if (tide_arena_alloc(a, size, &q) != 0) return TIDE_ARENA_KEPT;
    memcpy(q, p, size);
    tide_arena_set_tag(a, q, tag);
    b->p[tag - 1] = q;
    tide_arena_free(a, p);
    return TIDE_ARENA_MOVED;
}

/* One allocator's figures: a warm-up round (allocate, touch, free every
 * object), then a timed round that allocates and touches them all and
 * frees seven in eight, then the release (`release`), with RssAnon around
 * it. The arena's release is an evacuation and tide_arena_release;
 * malloc's is malloc_trim(0). */
static void bench_one(bench *b, tide_arena *a, const char *name)
{
    uint64_t t0, talloc, tfree, trel, before, after;

    for (int round = 0; round < 2; round++) {
        t0 = tide_clock_mono_ns();
        for (size_t i = 0; i < B_N; i++) {
            if (a) expect_ok(tide_arena_alloc(a, b->sz[i], &b->p[i]), "alloc");
            else b->p[i] = malloc(b->sz[i]);
            memset(b->p[i], 1, 16);
        }
        talloc = tide_clock_mono_ns() - t0;
        for (size_t i = 0; a && i < B_N; i++) tide_arena_set_tag(a, b->p[i], i + 1);
        t0 = tide_clock_mono_ns();
        for (size_t i = 0; i < B_N; i++) {
            if (round == 1 && i % 8 == 0) continue;
            if (a) tide_arena_free(a, b->p[i]);
            else free(b->p[i]);
        }
        tfree = tide_clock_mono_ns() - t0;
    }
    before = rss_anon();
    t0 = tide_clock_mono_ns();
    if (a) expect_ok(tide_arena_evacuate(a, SIZE_MAX, bench_move, b, NULL), "evacuate");
    else malloc_trim(0);
    trel = tide_clock_mono_ns() - t0;
    after = rss_anon();
    print_message("      %-6s %5.1f ns/alloc %5.1f ns/free; RssAnon %4" PRIu64 " -> %3" PRIu64
                  " MiB in %6.2f ms (%.1f ms per GiB returned)\n", name,
                  (double)talloc / B_N, (double)tfree / (B_N - B_N / 8), before >> 20,
                  after >> 20, trel / 1e6,
                  before > after ? trel / 1e6 / ((double)(before - after) / (1u << 30)) : 0.0);
    if (a)
        print_message("             of which madvise: %.2f ms for %" PRIu64 " segments (%.1f ms "
                      "per GiB)\n", stats(a).release_ns / 1e6, stats(a).releases,
                      stats(a).release_ns / 1e6 / ((double)stats(a).releases * (2u << 20) /
                                                   (1u << 30) + 1e-9));
    for (size_t i = 0; i < B_N; i += 8) {
        if (a) tide_arena_free(a, b->p[i]);
        else free(b->p[i]);
    }
}

static void benchmark_against_malloc(void **state)
{
    bench *b;
    tide_arena *a = NULL;
    th_rng r;

    (void)state;
    if (TH_SANITIZER) th_skip("figures from a sanitizer build mean nothing");
    b = calloc(1, sizeof *b);
    if (b == NULL) fail_msg("out of memory");
    th_rng_init(&r, 1);
    for (size_t i = 0; i < B_N; i++) b->bytes += b->sz[i] = th_rng_range(&r, 64, 1024);
    print_message("    %u objects of 64..1024 bytes (%" PRIu64 " MiB), one thread; after a warm-up "
                  "round, allocate and touch all, free 7 in 8, then give memory back:\n",
                  B_N, b->bytes >> 20);
    expect_ok(tide_arena_open(&a, NULL), "open");
    bench_one(b, a, "arena");
    tide_arena_check(a);
    tide_arena_close(a);                /* first: it leaves nothing resident behind */
    bench_one(b, NULL, "malloc");
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_out_of_range_are_refused_naming_the_option),
        cmocka_unit_test(defaults_open_two_mib_segments_with_one_in_reserve),
        cmocka_unit_test(allocations_are_aligned_sized_and_counted),
        cmocka_unit_test(a_large_object_gets_its_own_mapping_unmapped_when_freed),
        cmocka_unit_test(empty_segments_beyond_the_reserve_are_released_and_reused),
        cmocka_unit_test(the_limit_refuses_and_counts_and_nothing_breaks),
        cmocka_unit_test(a_full_address_range_refuses_with_a_count),
        cmocka_unit_test(evacuation_empties_the_least_used_segments_first),
        cmocka_unit_test(a_held_object_moves_and_its_segment_goes_after_the_last_holder),
        cmocka_unit_test(a_callback_that_declines_or_fails_leaves_objects_in_place),
        cmocka_unit_test(random_steps_keep_the_invariants_and_match_a_model),
        cmocka_unit_test(freed_segments_go_back_to_the_kernel),
        cmocka_unit_test(benchmark_against_malloc),
    };
    return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
