/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keycache.c: the key cache, keys recently found absent.
 *
 * A set of fixed-size keys, each with a last-access time, over the same hash
 * table as the tagged cache (core.h), on one list in access order (oldest at
 * the head). A hit moves the key to the tail; a sweep removes keys from the
 * head while they are older than the effective age; the hard limit removes
 * from the head on insert.
 *
 * The struct begins with a ti_core (core.h), as the tagged cache's does:
 * the lock, the table, `bytes`, the hard limit and the account counter.
 * Doubling the table and the teardown are core.c's (ti_core_grow,
 * ti_core_destroy), shared with the tagged cache.
 *
 * The arena (opts.arena): the entries live in a segment arena the key
 * cache owns (mem/arena.h), so what a sweep removes goes back to the
 * kernel a segment at a time, as the tagged cache's does (core.h, "entries
 * in a segment arena"). Nothing outside the lock points at an entry, so
 * tide_keycache_evacuate moves one by copying it into its own place
 * (ti_core_move_entry). The arena keeps no empty segment in reserve: a key
 * cache is small beside the node cache, and a reserve would be most of it.
 *
 * Invariants (tide_keycache_check walks them):
 *   1. bytes == chunk(sizeof keycache) + chunk(slots * 8) + entries * entry_bytes,
 *      entry_bytes being an entry's malloc chunk, or its arena allocation.
 *   2. t.count == lru.n, and every key on the list is in the table.
 *   3. Along the list, atime never decreases (each access sets it to the
 *      later of the clock and the tail's atime).
 *   4. bytes <= hard_limit (when set) whenever the lock is free.
 *   5. Nothing is freed while the lock is held.
 *   6. *account_bytes changes, under the lock, by exactly what bytes does.
 *   7. Every allocation (struct, slot arrays, entries, the copies of
 *      moved entries) is noted once in account_id's churn totals
 *      (ti_core_note_alloc).
 *   8. In an arena, an entry's tag is TI_CORE_ENTRY_TAG exactly while it is
 *      linked, and the arena's live bytes are the linked entries'
 *      entry_bytes.
 *
 * Never: hold a value: an entry is a key and its last-access time, and a
 *   hit says only that the key was absent from the store.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/core.h"
#include "cache/keycache.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

typedef struct kentry {
    ti_core_entry h;
    unsigned char key[];
} kentry;

struct tide_keycache {
    ti_core core;                   /* first: lock, table, bytes, hard limit, account */
    ti_core_list lru;
    size_t entry_bytes;
    size_t target_size;
    uint64_t age_us;
    uint64_t (*clock_us)(void *arg);
    void *clock_arg;
    uint64_t hits, misses, inserts, evictions;
    tide_arena *arena;              /* the entries', or NULL (malloc) */
};

static uint64_t default_clock(void *arg)
{
    (void)arg;
    return tide_clock_mono_us();
}

void tide_keycache_opts_init(tide_keycache_opts *o)
{
    memset(o, 0, sizeof *o);
    o->key_size = 32;
    o->target_size = 262144;
    o->age_s = 30;
    o->hard_limit_bytes = (size_t)32 << 20;
    o->account_id = -1;
    o->arena_segment_bytes = (size_t)2 << 20;
}

static size_t base_cost(const tide_keycache *k)
{
    return ti_core_base_cost(&k->core, sizeof *k);
}

static void push(tide_keycache *k, kentry *e, uint64_t now)
{
    ti_core_list_push_at(&k->lru, &e->h, now);
}

static void remove_entry(tide_keycache *k, kentry *e, ti_core_entry **victims)
{
    ti_core_unlink(&k->core.t, &e->h);
    ti_core_entry_mark(k->arena, &e->h, 0);
    ti_core_list_remove(&k->lru, &e->h);
    k->core.bytes -= k->entry_bytes;
    e->h.next = *victims;
    *victims = &e->h;
}

static void free_victims(ti_core *k, ti_core_entry *v)
{
    tide_arena *a = ((tide_keycache *)k)->arena;

    while (v) {
        ti_core_entry *next = v->next;
        ti_core_entry_free(a, v);
        v = next;
    }
}

static void check_cheap(const tide_keycache *k)
{
    TIDE_ASSERT(k->core.t.count == k->lru.n);                            /* 2 */
    TIDE_ASSERT(k->core.hard_limit == 0 || k->core.bytes <= k->core.hard_limit);   /* 4 */
}

/* check_cheap as ti_core_finish calls it. */
static void core_check(const ti_core *core) { check_cheap((const tide_keycache *)core); }

int tide_keycache_create(tide_keycache **out, const tide_keycache_opts *opts)
{
    tide_keycache_opts d;
    tide_keycache *k = NULL;
    ti_core_entry **slots = NULL;
    tide_arena *arena = NULL;
    tide_arena_opts ao;
    size_t nslots, entry_bytes;
    int rc = 0;

    if (opts == NULL) {
        tide_keycache_opts_init(&d);
        opts = &d;
    }
    if (opts->key_size < 1 || opts->key_size > 65535) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: key_size %u is outside 1..65535",
                          opts->key_size);
        goto out;
    }
    if (opts->age_s < 1) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: age_s 0 is below 1 second");
        goto out;
    }
    if (opts->arena) {
        tide_arena_opts_init(&ao);
        ao.segment_bytes = opts->arena_segment_bytes;
        ao.reserve = 0;
        ao.evacuate_pct = TI_CORE_ARENA_EVACUATE_PCT;
        ao.hugepages = opts->arena_hugepages;
        rc = tide_arena_open(&arena, &ao);
        if (rc) {
            rc = tide_err_prefix(rc, "tide_keycache_create");
            goto out;
        }
    }
    nslots = ti_core_start_slots(opts->target_size, opts->hard_limit_bytes);
    entry_bytes = ti_core_entry_cost(arena, offsetof(kentry, key) + opts->key_size);
    if (opts->hard_limit_bytes &&
        ti_core_chunk(sizeof *k) + ti_core_table_cost(nslots) + entry_bytes > opts->hard_limit_bytes) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: hard_limit_bytes %zu is below "
                          "the %zu bytes a key cache of one key takes", opts->hard_limit_bytes,
                          ti_core_chunk(sizeof *k) + ti_core_table_cost(nslots) + entry_bytes);
        goto out;
    }
    k = calloc(1, sizeof *k);
    slots = calloc(nslots, sizeof *slots);
    if (k == NULL || slots == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_keycache_create: allocating a key cache of %zu "
                          "slots", nslots);
        goto out;
    }
    rc = ti_core_init(&k->core, slots, nslots, opts->key_size, offsetof(kentry, key), sizeof *k,
                      opts->hard_limit_bytes, opts->account_bytes, "tide_keycache_create");
    if (rc) goto out;
    slots = NULL;
    k->core.account_id = opts->account_id;
    ti_core_note_alloc(&k->core, sizeof *k);
    ti_core_note_alloc(&k->core, nslots * sizeof *slots);
    k->entry_bytes = entry_bytes;
    k->target_size = opts->target_size;
    k->age_us = (uint64_t)opts->age_s * 1000000u;
    k->clock_us = opts->clock_us ? opts->clock_us : default_clock;
    k->clock_arg = opts->clock_us ? opts->clock_arg : NULL;
    k->arena = arena;
    arena = NULL;
    *out = k;
    k = NULL;
out:
    tide_arena_close(arena);
    free(slots);
    free(k);
    return rc;
}

/* For ti_core_destroy: every key onto the victim chain. */
static void drain(ti_core *core, ti_core_entry **victims)
{
    tide_keycache *k = (tide_keycache *)core;

    while (k->lru.head) remove_entry(k, (kentry *)k->lru.head, victims);
}

void tide_keycache_destroy(tide_keycache *k)
{
    if (k == NULL) return;
    ti_core_destroy(&k->core, ti_core_chunk(sizeof *k), drain, free_victims);
    tide_arena_close(k->arena);
    free(k);
}

int tide_keycache_insert(tide_keycache *k, const void *key)
{
    kentry *e = NULL, *old;
    ti_core_entry *victims = NULL;
    size_t before, want = 0;
    uint64_t now;
    int rc = 0;

    e = ti_core_entry_alloc(k->arena, offsetof(kentry, key) + k->core.t.key_size);
    if (e == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_keycache_insert: allocating a %zu-byte entry failed%s",
                          offsetof(kentry, key) + k->core.t.key_size,
                          k->arena ? " (the arena refused it)" : "");
        goto out;
    }
    ti_core_note_alloc(&k->core, offsetof(kentry, key) + k->core.t.key_size);
    memcpy(e->key, key, k->core.t.key_size);
    e->h.hash = ti_core_hash(&k->core.t, key);

    pthread_mutex_lock(&k->core.mu);
    before = k->core.bytes;
    now = k->clock_us(k->clock_arg);
    k->inserts++;
    old = (kentry *)ti_core_find(&k->core.t, e->h.hash, key);
    if (old) {
        ti_core_list_remove(&k->lru, &old->h);       /* refresh; `e` is not needed */
        push(k, old, now);
    } else {
        while (k->core.hard_limit && k->core.bytes + k->entry_bytes > k->core.hard_limit) {
            TIDE_ASSERT(k->lru.head != NULL);   /* one key fits: checked at create */
            remove_entry(k, (kentry *)k->lru.head, &victims);
            k->evictions++;
        }
        ti_core_link(&k->core.t, &e->h);
        ti_core_entry_mark(k->arena, &e->h, 1);
        push(k, e, now);
        k->core.bytes += k->entry_bytes;
        e = NULL;
        want = ti_core_grow_want(&k->core);
    }
    ti_core_finish(&k->core, before, core_check, free_victims, victims);
    if (want) ti_core_grow(&k->core, want);     /* doubles the slots, outside the lock */
out:
    if (e) ti_core_entry_free(k->arena, e);
    return rc;
}

/* The memory governor lowers the hard limit under pressure. */
int tide_keycache_set_hard_limit(tide_keycache *k, size_t hard_limit_bytes)
{
    ti_core_entry *victims = NULL;
    size_t before, floor_bytes;

    pthread_mutex_lock(&k->core.mu);
    before = k->core.bytes;
    /* One key must always fit (insert asserts it): a lower limit is raised
     * to the empty cache's cost plus one key (keycache.h). */
    floor_bytes = base_cost(k) + k->entry_bytes;
    if (hard_limit_bytes && hard_limit_bytes < floor_bytes) hard_limit_bytes = floor_bytes;
    k->core.hard_limit = hard_limit_bytes;
    while (k->core.hard_limit && k->core.bytes > k->core.hard_limit) {
        TIDE_ASSERT(k->lru.head != NULL);   /* the limit is above the base cost */
        remove_entry(k, (kentry *)k->lru.head, &victims);
        k->evictions++;
    }
    ti_core_finish(&k->core, before, core_check, free_victims, victims);
    return 0;
}

int tide_keycache_contains(tide_keycache *k, const void *key)
{
    uint64_t h = ti_core_hash(&k->core.t, key);
    kentry *e;

    pthread_mutex_lock(&k->core.mu);
    e = (kentry *)ti_core_find(&k->core.t, h, key);
    if (e) {
        ti_core_list_remove(&k->lru, &e->h);
        push(k, e, k->clock_us(k->clock_arg));
        k->hits++;
    } else {
        k->misses++;
    }
    pthread_mutex_unlock(&k->core.mu);
    return e != NULL;
}

/* remove_entry as ti_core_erase calls it. */
static void erase_entry(ti_core *core, ti_core_entry *e, ti_core_entry **victims)
{
    remove_entry((tide_keycache *)core, (kentry *)e, victims);
}

int tide_keycache_erase(tide_keycache *k, const void *key)
{
    return ti_core_erase(&k->core, key, erase_entry, core_check, free_victims);
}

void tide_keycache_clear(tide_keycache *k)
{
    ti_core_entry *victims = NULL;
    size_t before;

    pthread_mutex_lock(&k->core.mu);
    before = k->core.bytes;
    while (k->lru.head) remove_entry(k, (kentry *)k->lru.head, &victims);
    ti_core_finish(&k->core, before, core_check, free_victims, victims);
}

void tide_keycache_sweep(tide_keycache *k, tide_keycache_sweep_report *report)
{
    tide_keycache_sweep_report r;
    ti_core_entry *victims = NULL;
    uint64_t now, eff;

    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&k->core.mu);
    now = k->clock_us(k->clock_arg);
    r.entries_before = k->lru.n;
    r.bytes_before = k->core.bytes;
    eff = ti_core_effective_age_us(k->age_us, k->target_size, k->lru.n);
    r.effective_age_us = eff;
    while (k->lru.head && now >= eff && k->lru.head->atime_us <= now - eff) {
        remove_entry(k, (kentry *)k->lru.head, &victims);
        r.evicted++;
    }
    k->evictions += r.evicted;
    r.bytes_after = k->core.bytes;
    ti_core_finish(&k->core, r.bytes_before, core_check, free_victims, victims);
    if (report) *report = r;
}

void tide_keycache_stats_get(tide_keycache *k, tide_keycache_stats *out)
{
    pthread_mutex_lock(&k->core.mu);
    out->hits = k->hits;
    out->misses = k->misses;
    out->inserts = k->inserts;
    out->evictions = k->evictions;
    out->entries = k->lru.n;
    out->bytes = k->core.bytes;
    out->slots = k->core.t.nslots;
    out->effective_age_us = ti_core_effective_age_us(k->age_us, k->target_size, k->lru.n);
    out->hard_limit_bytes = k->core.hard_limit;
    pthread_mutex_unlock(&k->core.mu);
}

size_t tide_keycache_entry_cost(const tide_keycache *k)
{
    return k->entry_bytes;
}

void tide_keycache_check(tide_keycache *k)
{
    size_t n = 0, nl = 0;
    uint64_t last = 0;
    tide_arena_stats st;

    pthread_mutex_lock(&k->core.mu);
    for (ti_core_entry *x = k->lru.head; x; x = x->next, nl++) {
        TIDE_ASSERT(ti_core_find(&k->core.t, x->hash, ((kentry *)x)->key) == x);    /* 2 */
        TIDE_ASSERT(k->arena == NULL || tide_arena_tag(k->arena, x) == TI_CORE_ENTRY_TAG);   /* 8 */
        TIDE_ASSERT(x->atime_us >= last);                                  /* 3 */
        last = x->atime_us;
    }
    for (size_t i = 0; i < k->core.t.nslots; i++)
        for (ti_core_entry *x = k->core.t.slots[i]; x; x = x->hnext) n++;
    TIDE_ASSERT(nl == k->lru.n && n == k->core.t.count && n == nl);             /* 2 */
    TIDE_ASSERT(k->core.bytes == base_cost(k) + n * k->entry_bytes);            /* 1 */
    TIDE_ASSERT(k->core.hard_limit == 0 || k->core.bytes <= k->core.hard_limit);          /* 4 */
    if (k->arena) {
        tide_arena_check(k->arena);
        tide_arena_stats_get(k->arena, &st);
        TIDE_ASSERT(st.live_bytes == n * k->entry_bytes);                            /* 8 */
    }
    pthread_mutex_unlock(&k->core.mu);
}

/* For ti_core_move_entry: the one list. */
static ti_core_list *lru_of(ti_core *core, ti_core_entry *e)
{
    (void)e;
    return &((tide_keycache *)core)->lru;
}

/* Every tagged allocation of a key cache's arena is a linked entry (8):
 * no move_other. */
static const ti_core_evac_ops key_ops = { lru_of, NULL, NULL };

int tide_keycache_evacuate(tide_keycache *k, size_t budget_bytes, tide_cache_arena_report *report)
{
    tide_cache_arena_report r;
    int rc;

    rc = ti_core_evacuate(&k->core, k->arena, budget_bytes, &key_ops, &r);
    if (report) *report = r;
    return rc;
}

int tide_keycache_arena_stats(tide_keycache *k, tide_arena_stats *out)
{
    if (k->arena == NULL) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    tide_arena_stats_get(k->arena, out);
    return 1;
}
