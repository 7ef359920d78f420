/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c: the tagged cache.
 *
 * Objects are kept by key with a last-access time. A strong entry holds a
 * strong reference to its object; a sweep demotes an expired entry to weak
 * when someone else still holds the object, and removes it otherwise. A weak
 * entry holds a weak reference: the object's memory stays valid (so the entry
 * can be found and revived) but the object may die, when its last holder lets
 * go. A lookup revives a live weak entry; a sweep reaps dead ones.
 *
 * Weak references (obj.c): an object counts strong holders and weak ones.
 * Its bytes die when strong reaches 0, and its memory is freed when weak
 * does; the strong holders together hold one weak reference. Reviving is an
 * upgrade: a compare-and-swap that raises strong only from a nonzero value.
 * So a lookup racing with the last holder's release either wins (strong goes
 * 1 -> 2 before the release takes it back to 1, and the object lives) or
 * loses (it sees 0 and reaps the entry); it never resurrects a dead object,
 * and never reads freed memory, because the entry's weak reference keeps the
 * memory until the entry is gone.
 *
 * The lists: strong entries on `strong`, in access order (oldest at the
 * head), so a sweep stops at the first entry young enough to keep and the
 * hard limit finds the oldest in O(1); weak entries on `weak`, in the order
 * they were demoted.
 *
 * The arena (opts.arena): the objects tide_cache_obj_make makes live in a
 * segment arena (mem/arena.h) the cache owns through its home (obj_impl.h),
 * so what a sweep frees goes back to the kernel a segment at a time. An
 * object's arena tag names the entry that took it (set when an entry takes
 * an untagged object, cleared when that entry lets it go, both under the
 * lock), which is how an evacuation finds the entry to repoint: move_obj
 * copies the object into a new one of the same size (allocated before the
 * lock), points the entry at it under the lock, and drops the entry's
 * reference to the old one after unlocking; holders of the old one keep
 * reading it, and its last holder frees it. A weak entry's object is never
 * moved (its holders keep it alive anyway). An object two entries share
 * is tagged by the first only, and moves only that entry. The copy takes
 * the generation tag the original has under the lock; one a holder sets on
 * the original afterwards stays there, and costs the copy one more check
 * against the generations at its next hit (node.c).
 *
 * The entries live in the same arena, so what a sweep frees of them goes
 * back whole too (on malloc, each freed entry is a 96-byte hole between
 * kept ones). An entry nobody outside the lock ever points at: the table,
 * the lists and its object's tag do, all under the lock. So an evacuation
 * moves a linked entry (tagged TI_CORE_ENTRY_TAG) by copying it and
 * putting the copy in its place on its chain and its list, and retagging
 * its object, all under the lock (ti_core_move_entry, entry_moved); the
 * old entry is freed after.
 *
 * The struct begins with a ti_core (core.h): the lock, the hash table,
 * `bytes`, the hard limit and the account counter. What the key cache does
 * alike lives once in core.c: doubling the table (ti_core_grow, which
 * allocates and frees outside the lock) and the teardown (ti_core_destroy,
 * which drains the lists through drain() below). The lists, the entries and
 * what an entry costs are this file's.
 *
 * Invariants (tide_cache_check walks them; the cheap ones are asserted as
 * the code goes):
 *   1. bytes == chunk(sizeof cache) + chunk(slots * 8)
 *               + sum over entries of entry_bytes
 *               + sum over strong entries of obj_cost: chunk(32 + object
 *                 len), or tide_arena_alloc_size(32 + len) in an arena;
 *      entry_bytes is chunk(offsetof(entry, key) + key_size), or its
 *      tide_arena_alloc_size in an arena.
 *   2. Every entry is in the table and on exactly one list: `strong` when
 *      e->weak == 0, `weak` otherwise; t.count == strong.n + weak.n.
 *   3. A strong entry holds one strong reference to its object, a weak entry
 *      one weak reference; a weak entry's object may be dead (strong == 0).
 *   4. Along `strong`, atime never decreases: each access sets atime to the
 *      later of the clock and the tail's atime, so a clock that steps back
 *      cannot unsort the list (it delays expiry instead).
 *   5. A strong entry whose object's strong count is 1 is the only holder,
 *      and it stays so while the lock is held: a new reference needs one
 *      already held (retain) or this lock (lookup). So a sweep that reads 1
 *      removes the entry and frees the object. Reading more than 1 is not
 *      stable (holders release without the lock), so a demotion drops the
 *      cache's strong reference with release_held, which says whether it was
 *      the last; if it was, the entry is reaped at once.
 *   6. bytes <= hard_limit (when set) whenever the lock is free.
 *   7. No object or entry is freed while the lock is held. What an operation
 *      removes goes on a victim chain and is released after unlocking; every
 *      reference dropped under the lock is provably not the last
 *      (release_held, weak_to_strong assert it).
 *   8. *account_bytes changes, under the lock, by exactly what bytes does.
 *   9. Every allocation the cache makes (struct, slot arrays, entries,
 *      objects of tide_cache_obj_make and of evacuations) is noted once in
 *      account_id's churn totals (ti_core_note_alloc).
 *  10. An arena object's tag is 0 or an entry in the table that holds it
 *      (10 is set and cleared only under the lock); the arena's live bytes
 *      are at least the costs of the strong entries' objects they tag, and
 *      equal them when nothing else holds an object (no outside holder, no
 *      weak entry, no object made but not inserted).
 *  11. An evacuation changes no count: the copy costs what the original
 *      did, and the entry keeps its state and place on its list.
 *  12. In an arena, an entry's tag is TI_CORE_ENTRY_TAG exactly while it is
 *      linked in the table (set and cleared under the lock), and the
 *      arena's live bytes are at least the linked entries' entry_bytes
 *      plus the costs of invariant 10.
 *
 * Never: free or allocate under the lock (an evacuation's copy is
 * allocated before it); call the allocator's release (trimming belongs
 * to the sweeper, once per sweep of every cache); raise a strong count
 * from 0; move a weak entry's object.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/core.h"
#include "cache/obj_impl.h"
#include "mem/arena.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

typedef struct entry {
    ti_core_entry h;                     /* first: the table and lists see this */
    tide_cache_obj *obj;
    unsigned char weak;
    unsigned char key[];
} entry;

struct tide_cache {
    ti_core core;                   /* first: lock, table, bytes, hard limit, account */
    ti_core_list strong, weak;
    size_t entry_bytes;             /* chunk(offsetof(entry, key) + key_size) */
    size_t target_size, budget;
    uint64_t age_us;
    uint64_t (*clock_us)(void *arg);
    void *clock_arg;
    uint64_t hits, misses, inserts, evictions, demotions, revivals, reaped;
    ti_cache_home *home;            /* the arena's, or NULL (opts.arena 0) */
    const tide_cache_obj_hook *obj_hook;   /* malloc'd objects' (no arena) */
};

static uint64_t default_clock(void *arg)
{
    (void)arg;
    return tide_clock_mono_us();
}

void tide_cache_opts_init(tide_cache_opts *o)
{
    memset(o, 0, sizeof *o);
    o->key_size = 32;
    o->target_size = 262144;
    o->age_s = 30;
    o->budget_bytes = (size_t)64 << 20;
    o->hard_limit_bytes = (size_t)128 << 20;
    o->account_id = -1;
    o->arena = 1;
    o->arena_segment_bytes = (size_t)2 << 20;
    o->arena_reserve = 1;
}

/* ---- small helpers (all under the lock) --------------------------------- */

/* What an object of `len` bytes costs: its arena allocation in `a`, or
 * its malloc chunk (a NULL). */
static size_t obj_bytes(const tide_arena *a, size_t len)
{
    size_t n = TIDE_CACHE_OBJ_HEADER + len;

    return a ? tide_arena_alloc_size(a, n) : ti_core_chunk(n);
}

static size_t obj_cost(const tide_cache_obj *o)
{
    return obj_bytes(o->hook ? o->hook->arena : NULL, o->len);
}

/* The arena of the cache's own object `o`, or NULL for any other. */
static tide_arena *own_arena(const tide_cache *c, const tide_cache_obj *o)
{
    return c->home && o->hook == &c->home->hook ? c->home->hook.arena : NULL;
}

/* Entry `e` takes its object: tag it when no entry has (10). */
static void obj_take(tide_cache *c, entry *e)
{
    tide_arena *a = own_arena(c, e->obj);

    if (a && tide_arena_tag(a, e->obj) == 0) tide_arena_set_tag(a, e->obj, (uintptr_t)e);
}

/* Entry `e` lets its object go: untag it when e tagged it (10). */
static void obj_drop(tide_cache *c, entry *e)
{
    tide_arena *a = own_arena(c, e->obj);

    if (a && tide_arena_tag(a, e->obj) == (uintptr_t)e) tide_arena_set_tag(a, e->obj, 0);
}

/* The arena the cache's entries live in, or NULL when they are malloc'd. */
static tide_arena *entry_arena(const tide_cache *c)
{
    return c->home ? c->home->hook.arena : NULL;
}

/* What no eviction can reclaim: the cache struct and the slot array. */
static size_t base_cost(const tide_cache *c)
{
    return ti_core_base_cost(&c->core, sizeof *c);
}

/* Put `e` at the strong tail with a fresh access time (invariant 4). */
static void push_strong(tide_cache *c, entry *e, uint64_t now)
{
    ti_core_list_push_at(&c->strong, &e->h, now);
}

/* Take `e` out of the table and its list; it goes on the victim chain with
 * its reference, to be dropped after unlocking (7). */
static void remove_entry(tide_cache *c, entry *e, ti_core_entry **victims)
{
    ti_core_unlink(&c->core.t, &e->h);
    obj_drop(c, e);
    ti_core_entry_mark(entry_arena(c), &e->h, 0);
    if (e->weak) {
        ti_core_list_remove(&c->weak, &e->h);
        c->core.bytes -= c->entry_bytes;
    } else {
        ti_core_list_remove(&c->strong, &e->h);
        c->core.bytes -= c->entry_bytes + obj_cost(e->obj);
    }
    e->h.next = *victims;
    *victims = &e->h;
}

/* Let a strong entry go: remove it when the cache is the only holder (5),
 * demote it otherwise. */
static void let_go_strong(tide_cache *c, entry *e, ti_core_entry **victims)
{
    TIDE_ASSERT(!e->weak);
    if (tide_cache_obj_refs(e->obj) == 1) {
        remove_entry(c, e, victims);
        c->evictions++;
        return;
    }
    tide_cache_obj_weak_retain(e->obj);
    ti_core_list_remove(&c->strong, &e->h);
    c->core.bytes -= obj_cost(e->obj);
    e->weak = 1;
    ti_core_list_push(&c->weak, &e->h);
    c->demotions++;
    if (tide_cache_obj_release_held(e->obj)) {
        /* The other holders let go meanwhile: the object has died. */
        remove_entry(c, e, victims);
        c->reaped++;
    }
}

/* Let the oldest entries go until `need` more bytes fit under the hard
 * limit: strong ones first, then weak ones. 0, or -1 when nothing is left to
 * let go and it still does not fit. */
static int make_room(tide_cache *c, size_t need, ti_core_entry **victims)
{
    while (c->core.hard_limit && c->core.bytes + need > c->core.hard_limit) {
        if (c->strong.head) {
            let_go_strong(c, (entry *)c->strong.head, victims);
        } else if (c->weak.head) {
            entry *e = (entry *)c->weak.head;
            if (tide_cache_obj_refs(e->obj) == 0) c->reaped++;
            else c->evictions++;
            remove_entry(c, e, victims);
        } else {
            return -1;
        }
    }
    return 0;
}

/* Drop the references of removed entries and free them; never under the
 * lock (7). */
static void free_victims(ti_core *k, ti_core_entry *v)
{
    while (v) {
        entry *e = (entry *)v;
        v = v->next;
        if (e->weak) tide_cache_obj_weak_release(e->obj);
        else tide_cache_obj_release(e->obj);
        ti_core_entry_free(entry_arena((tide_cache *)k), e);
    }
}

static void check_cheap(const tide_cache *c)
{
    TIDE_ASSERT(c->core.t.count == c->strong.n + c->weak.n);         /* 2 */
    TIDE_ASSERT(c->core.hard_limit == 0 || c->core.bytes <= c->core.hard_limit);  /* 6 */
}

/* check_cheap as ti_core_finish calls it. */
static void core_check(const ti_core *k) { check_cheap((const tide_cache *)k); }

/* ---- create and destroy -------------------------------------------------- */

/* For ti_core_destroy: every entry onto the victim chain. */
static void drain(ti_core *k, ti_core_entry **victims)
{
    tide_cache *c = (tide_cache *)k;

    while (c->strong.head) remove_entry(c, (entry *)c->strong.head, victims);
    while (c->weak.head) remove_entry(c, (entry *)c->weak.head, victims);
}

/* The arena and its home, for a cache with opts->arena. */
static int home_open(tide_cache *c, const tide_cache_opts *opts)
{
    tide_arena_opts ao;
    ti_cache_home *h;
    int rc;

    if (opts->obj_hook && opts->obj_hook->arena)
        return tide_err_set(TIDE_EINVAL, "tide_cache_create: obj_hook's arena must be NULL");
    h = calloc(1, sizeof *h);
    if (h == NULL)
        return tide_err_set(TIDE_ENOMEM, "tide_cache_create: calloc of the arena's home failed");
    tide_arena_opts_init(&ao);
    ao.evacuate_pct = TI_CORE_ARENA_EVACUATE_PCT;
    ao.segment_bytes = opts->arena_segment_bytes;
    ao.reserve = opts->arena_reserve;
    ao.hugepages = opts->arena_hugepages;
    rc = tide_arena_open(&h->hook.arena, &ao);
    if (rc) {
        free(h);
        return tide_err_prefix(rc, "tide_cache_create");
    }
    if (opts->obj_hook) {
        h->hook.on_free = opts->obj_hook->on_free;
        h->hook.arg = opts->obj_hook->arg;
    }
    atomic_init(&h->refs, 1u);          /* the cache's */
    c->home = h;
    return 0;
}

int tide_cache_create(tide_cache **out, const tide_cache_opts *opts)
{
    tide_cache_opts d;
    tide_cache *c = NULL;
    ti_core_entry **slots = NULL;
    size_t nslots;
    int rc = 0;

    if (opts == NULL) {
        tide_cache_opts_init(&d);
        opts = &d;
    }
    if (opts->key_size < 1 || opts->key_size > 65535) {
        rc = tide_err_set(TIDE_EINVAL, "tide_cache_create: key_size %u is outside 1..65535",
                          opts->key_size);
        goto out;
    }
    if (opts->age_s < 1) {
        rc = tide_err_set(TIDE_EINVAL, "tide_cache_create: age_s 0 is below 1 second");
        goto out;
    }
    if (opts->hard_limit_bytes && opts->budget_bytes > opts->hard_limit_bytes) {
        rc = tide_err_set(TIDE_EINVAL, "tide_cache_create: budget_bytes %zu is above "
                          "hard_limit_bytes %zu", opts->budget_bytes, opts->hard_limit_bytes);
        goto out;
    }
    nslots = ti_core_start_slots(opts->target_size, opts->hard_limit_bytes);
    if (opts->hard_limit_bytes &&
        ti_core_chunk(sizeof *c) + ti_core_table_cost(nslots) > opts->hard_limit_bytes) {
        rc = tide_err_set(TIDE_EINVAL, "tide_cache_create: hard_limit_bytes %zu is below "
                          "the %zu bytes an empty cache takes", opts->hard_limit_bytes,
                          ti_core_chunk(sizeof *c) + ti_core_table_cost(nslots));
        goto out;
    }
    c = calloc(1, sizeof *c);
    slots = calloc(nslots, sizeof *slots);
    if (c == NULL || slots == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_cache_create: allocating a cache of %zu slots",
                          nslots);
        goto out;
    }
    rc = ti_core_init(&c->core, slots, nslots, opts->key_size, offsetof(entry, key), sizeof *c,
                      opts->hard_limit_bytes, opts->account_bytes, "tide_cache_create");
    if (rc) goto out;
    slots = NULL;
    c->core.account_id = opts->account_id;
    ti_core_note_alloc(&c->core, sizeof *c);
    ti_core_note_alloc(&c->core, nslots * sizeof *slots);
    c->target_size = opts->target_size;
    c->age_us = (uint64_t)opts->age_s * 1000000u;
    c->budget = opts->budget_bytes;
    c->clock_us = opts->clock_us ? opts->clock_us : default_clock;
    c->clock_arg = opts->clock_us ? opts->clock_arg : NULL;
    c->obj_hook = opts->obj_hook;
    if (opts->arena) {
        rc = home_open(c, opts);
        if (rc) {
            ti_core_destroy(&c->core, ti_core_chunk(sizeof *c), drain, free_victims);
            goto out;
        }
    }
    c->entry_bytes = ti_core_entry_cost(entry_arena(c), offsetof(entry, key) + opts->key_size);
    *out = c;
    c = NULL;
out:
    free(slots);
    free(c);
    return rc;
}

void tide_cache_destroy(tide_cache *c)
{
    if (c == NULL) return;
    ti_core_destroy(&c->core, ti_core_chunk(sizeof *c), drain, free_victims);
    if (c->home) ti_cache_home_release(c->home);   /* the arena goes with its last object */
    free(c);
}

int tide_cache_obj_make(tide_cache *c, tide_cache_obj **out, const void *bytes, size_t len)
{
    int rc;

    if (c->home) rc = ti_cache_obj_new_in(c->home, out, bytes, len);
    else rc = tide_cache_obj_new(out, bytes, len, c->obj_hook);
    if (rc == 0) ti_core_note_alloc(&c->core, tide_cache_obj_alloc_size(len));
    return rc;
}

/* ---- insert ---------------------------------------------------------------- */

int tide_cache_insert(tide_cache *c, const void *key, tide_cache_obj *obj)
{
    entry *e = NULL, *old;
    ti_core_entry *victims = NULL;
    size_t cost, before, want = 0;
    uint64_t now;
    int rc = 0, fits;

    e = ti_core_entry_alloc(entry_arena(c), offsetof(entry, key) + c->core.t.key_size);
    if (e == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_cache_insert: allocating a %zu-byte entry failed%s",
                          offsetof(entry, key) + c->core.t.key_size,
                          entry_arena(c) ? " (the arena refused it)" : "");
        goto out;
    }
    ti_core_note_alloc(&c->core, offsetof(entry, key) + c->core.t.key_size);
    memcpy(e->key, key, c->core.t.key_size);
    e->h.hash = ti_core_hash(&c->core.t, key);
    e->obj = tide_cache_obj_retain(obj);
    e->weak = 0;
    cost = c->entry_bytes + obj_cost(obj);

    pthread_mutex_lock(&c->core.mu);
    before = c->core.bytes;
    if (c->core.hard_limit && base_cost(c) + cost > c->core.hard_limit) {
        rc = tide_err_set(TIDE_ETOOBIG, "tide_cache_insert: an object of %zu bytes costs %zu "
                          "as an entry; the hard limit of %zu bytes less the cache's own %zu "
                          "leaves %zu", obj->len, cost, c->core.hard_limit, base_cost(c),
                          c->core.hard_limit - base_cost(c));
        pthread_mutex_unlock(&c->core.mu);
        goto out;
    }
    now = c->clock_us(c->clock_arg);
    old = (entry *)ti_core_find(&c->core.t, e->h.hash, key);
    if (old) remove_entry(c, old, &victims);
    fits = make_room(c, cost, &victims);
    TIDE_ASSERT(fits == 0);         /* base + cost <= hard_limit: checked above */
    ti_core_link(&c->core.t, &e->h);
    ti_core_entry_mark(entry_arena(c), &e->h, 1);
    obj_take(c, e);
    push_strong(c, e, now);
    c->core.bytes += cost;
    c->inserts++;
    e = NULL;
    want = ti_core_grow_want(&c->core);
    ti_core_finish(&c->core, before, core_check, free_victims, victims);
    if (want) ti_core_grow(&c->core, want);     /* doubles the slots, outside the lock */
out:
    if (e) {
        tide_cache_obj_release(e->obj);
        ti_core_entry_free(entry_arena(c), e);
    }
    return rc;
}

/* ---- lookup and erase ----------------------------------------------------- */

tide_cache_obj *tide_cache_lookup(tide_cache *c, const void *key)
{
    uint64_t h = ti_core_hash(&c->core.t, key);
    tide_cache_obj *obj = NULL;
    ti_core_entry *victims = NULL;
    entry *e;
    size_t before;

    pthread_mutex_lock(&c->core.mu);
    before = c->core.bytes;
    e = (entry *)ti_core_find(&c->core.t, h, key);
    if (e == NULL) {
        c->misses++;
    } else if (!e->weak) {
        obj = tide_cache_obj_retain(e->obj);
        ti_core_list_remove(&c->strong, &e->h);
        push_strong(c, e, c->clock_us(c->clock_arg));
        c->hits++;
    } else if (tide_cache_obj_try_upgrade(e->obj)) {
        /* Revive: the caller's reference is taken; now the entry's. Off the
         * weak list first, so making room cannot pick this entry. */
        obj = e->obj;
        c->hits++;
        ti_core_list_remove(&c->weak, &e->h);
        if (make_room(c, obj_cost(obj), &victims) == 0) {
            tide_cache_obj_weak_to_strong(obj);
            e->weak = 0;
            c->core.bytes += obj_cost(obj);
            push_strong(c, e, c->clock_us(c->clock_arg));
            c->revivals++;
        } else {
            ti_core_list_push(&c->weak, &e->h);  /* no room: it stays weak */
        }
    } else {
        remove_entry(c, e, &victims);       /* dead: reap it now */
        c->reaped++;
        c->misses++;
    }
    ti_core_finish(&c->core, before, core_check, free_victims, victims);
    return obj;
}

/* remove_entry as ti_core_erase calls it. */
static void erase_entry(ti_core *k, ti_core_entry *e, ti_core_entry **victims)
{
    remove_entry((tide_cache *)k, (entry *)e, victims);
}

int tide_cache_erase(tide_cache *c, const void *key)
{
    return ti_core_erase(&c->core, key, erase_entry, core_check, free_victims);
}

/* ---- sweep ------------------------------------------------------------------ */

void tide_cache_sweep(tide_cache *c, tide_cache_sweep_report *report)
{
    tide_cache_sweep_report r;
    ti_core_entry *victims = NULL, *next;
    uint64_t now, eff, demotions, evictions, reaped;

    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&c->core.mu);
    now = c->clock_us(c->clock_arg);
    r.entries_before = c->strong.n + c->weak.n;
    r.bytes_before = c->core.bytes;
    demotions = c->demotions;
    evictions = c->evictions;
    reaped = c->reaped;
    eff = ti_core_effective_age_us(c->age_us, c->target_size, r.entries_before);
    r.effective_age_us = eff;

    /* Weak entries whose objects have died. */
    for (ti_core_entry *w = c->weak.head; w; w = next) {
        next = w->next;
        if (tide_cache_obj_refs(((entry *)w)->obj) == 0) {
            remove_entry(c, (entry *)w, &victims);
            c->reaped++;
        }
    }
    /* Strong entries not accessed for eff: the oldest are at the head (4). */
    while (c->strong.head && now >= eff && c->strong.head->atime_us <= now - eff)
        let_go_strong(c, (entry *)c->strong.head, &victims);
    /* The byte budget. */
    while (c->budget && c->core.bytes > c->budget && c->strong.head)
        let_go_strong(c, (entry *)c->strong.head, &victims);

    r.demoted = (size_t)(c->demotions - demotions);
    r.evicted = (size_t)(c->evictions - evictions);
    r.reaped = (size_t)(c->reaped - reaped);
    r.bytes_after = c->core.bytes;
    ti_core_finish(&c->core, r.bytes_before, core_check, free_victims, victims);
    if (report) *report = r;
}

/* ---- limits at run time (the memory governor) ------------------------------- */

int tide_cache_set_limits(tide_cache *c, size_t budget_bytes, size_t hard_limit_bytes)
{
    ti_core_entry *victims = NULL;
    size_t before, floor_bytes;
    int rc = 0;

    if (hard_limit_bytes && budget_bytes > hard_limit_bytes)
        return tide_err_set(TIDE_EINVAL, "tide_cache_set_limits: budget_bytes %zu is above "
                            "hard_limit_bytes %zu", budget_bytes, hard_limit_bytes);
    pthread_mutex_lock(&c->core.mu);
    before = c->core.bytes;
    /* No eviction can reclaim the struct and the slot array: a hard limit
     * below them is raised to them, so invariant 6 can hold (cache.h). */
    floor_bytes = base_cost(c);
    if (hard_limit_bytes && hard_limit_bytes < floor_bytes) hard_limit_bytes = floor_bytes;
    if (hard_limit_bytes && budget_bytes > hard_limit_bytes) budget_bytes = hard_limit_bytes;
    c->core.hard_limit = hard_limit_bytes;
    c->budget = budget_bytes;
    rc = make_room(c, 0, &victims);
    TIDE_ASSERT(rc == 0);           /* the limit is at least the base cost */
    ti_core_finish(&c->core, before, core_check, free_victims, victims);
    return rc;
}

/* ---- the arena ----------------------------------------------------------------- */

/* For ti_core_move_entry: the list entry `e` is on. */
static ti_core_list *list_of(ti_core *k, ti_core_entry *e)
{
    tide_cache *c = (tide_cache *)k;

    return ((entry *)e)->weak ? &c->weak : &c->strong;
}

/* For ti_core_move_entry, under the lock: the entry's object, when this
 * entry tagged it, is retagged with the copy (10). */
static void entry_moved(ti_core *k, ti_core_entry *old, ti_core_entry *copy)
{
    tide_cache *c = (tide_cache *)k;
    tide_cache_obj *o = ((entry *)copy)->obj;
    tide_arena *a = own_arena(c, o);

    if (a && tide_arena_tag(a, o) == (uintptr_t)old) tide_arena_set_tag(a, o, (uintptr_t)copy);
}

/* Repoint the strong entry the tag names from object `p` to a copy, or
 * decline. The copy is allocated before the
 * lock and, when declined, freed after it; the entry's reference to the
 * old object is dropped after unlocking (7). */
static int move_obj(ti_core *k, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    tide_cache *c = (tide_cache *)k;
    tide_cache_obj *old = p, *copy = NULL;
    void *q = NULL;
    entry *e = (entry *)(uintptr_t)tag;

    if (tide_arena_alloc(a, size, &q) != 0) return TIDE_ARENA_KEPT;   /* counted refusal */
    pthread_mutex_lock(&c->core.mu);
    /* A tag read under the lock names a live entry that holds p (10). */
    if (tide_arena_tag(a, p) == tag && !e->weak) {
        TIDE_ASSERT(e->obj == old);
        copy = q;
        ti_cache_obj_copy(copy, old);
        TIDE_ASSERT(obj_cost(copy) == obj_cost(old));                     /* 11 */
        tide_arena_set_tag(a, old, 0);
        tide_arena_set_tag(a, copy, tag);
        e->obj = copy;
    }
    pthread_mutex_unlock(&c->core.mu);
    if (copy == NULL) {
        tide_arena_free(a, q);
        return TIDE_ARENA_KEPT;
    }
    ti_core_note_alloc(&c->core, size);
    tide_cache_obj_release(old);        /* the entry's: holders keep theirs */
    return TIDE_ARENA_MOVED;
}

/* The arena's allocations: entries (ti_core moves them; entry_moved
 * retags their objects) and objects (move_obj: an object's tag is an
 * entry's address, 16-byte aligned, never TI_CORE_ENTRY_TAG). */
static const ti_core_evac_ops cache_ops = { list_of, entry_moved, move_obj };

int tide_cache_evacuate(tide_cache *c, size_t budget_bytes, tide_cache_arena_report *report)
{
    tide_cache_arena_report r;
    int rc;

    rc = ti_core_evacuate(&c->core, entry_arena(c), budget_bytes, &cache_ops, &r);
    if (report) *report = r;
    return rc;
}

int tide_cache_arena_stats(tide_cache *c, tide_arena_stats *out)
{
    if (c->home == NULL) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    tide_arena_stats_get(c->home->hook.arena, out);
    return 1;
}

/* ---- counters ---------------------------------------------------------------- */

void tide_cache_stats_get(tide_cache *c, tide_cache_stats *out)
{
    pthread_mutex_lock(&c->core.mu);
    out->hits = c->hits;
    out->misses = c->misses;
    out->inserts = c->inserts;
    out->evictions = c->evictions;
    out->demotions = c->demotions;
    out->revivals = c->revivals;
    out->reaped = c->reaped;
    out->strong = c->strong.n;
    out->weak = c->weak.n;
    out->bytes = c->core.bytes;
    out->slots = c->core.t.nslots;
    out->effective_age_us = ti_core_effective_age_us(c->age_us, c->target_size,
                                                c->strong.n + c->weak.n);
    out->budget_bytes = c->budget;
    out->hard_limit_bytes = c->core.hard_limit;
    pthread_mutex_unlock(&c->core.mu);
}

size_t tide_cache_entry_cost(const tide_cache *c, size_t len)
{
    return c->entry_bytes + obj_bytes(c->home ? c->home->hook.arena : NULL, len);
}

size_t tide_cache_weak_entry_cost(const tide_cache *c)
{
    return c->entry_bytes;
}

size_t tide_cache_fixed_cost(const tide_cache *c)
{
    return ti_core_chunk(sizeof *c);
}

/* Invariants 10 and 12 over every entry, and the arena's own
 * (tide_arena_check).
 * Under the lock. */
static void check_arena(tide_cache *c)
{
    tide_arena_stats st;
    uint64_t tagged = 0;
    tide_arena *a;

    if (c->home == NULL) return;
    a = c->home->hook.arena;
    for (size_t i = 0; i < c->core.t.nslots; i++) {
        for (ti_core_entry *x = c->core.t.slots[i]; x; x = x->hnext) {
            entry *e = (entry *)x, *f;
            uint64_t tag;
            TIDE_ASSERT(tide_arena_tag(a, e) == TI_CORE_ENTRY_TAG);          /* 12 */
            tagged += c->entry_bytes;
            if (own_arena(c, e->obj) == NULL) continue;
            tag = tide_arena_tag(a, e->obj);
            if (tag == 0) continue;
            f = (entry *)(uintptr_t)tag;
            TIDE_ASSERT(ti_core_find(&c->core.t, f->h.hash, f->key) == &f->h);   /* 10 */
            TIDE_ASSERT(f->obj == e->obj);                                      /* 10 */
            if (f == e && !e->weak) tagged += obj_cost(e->obj);
        }
    }
    tide_arena_check(a);
    tide_arena_stats_get(a, &st);
    TIDE_ASSERT(tagged <= st.live_bytes);                                       /* 10, 12 */
}

void tide_cache_check(tide_cache *c)
{
    size_t bytes, n = 0, ns = 0, nw = 0;
    uint64_t last = 0;

    pthread_mutex_lock(&c->core.mu);
    bytes = base_cost(c);
    for (ti_core_entry *x = c->strong.head; x; x = x->next, ns++) {
        entry *e = (entry *)x;
        TIDE_ASSERT(!e->weak);                                          /* 2 */
        TIDE_ASSERT(ti_core_find(&c->core.t, x->hash, e->key) == x);              /* 2 */
        TIDE_ASSERT(tide_cache_obj_refs(e->obj) >= 1);                  /* 3 */
        TIDE_ASSERT(x->atime_us >= last);                               /* 4 */
        last = x->atime_us;
        bytes += c->entry_bytes + obj_cost(e->obj);
    }
    for (ti_core_entry *x = c->weak.head; x; x = x->next, nw++) {
        entry *e = (entry *)x;
        TIDE_ASSERT(e->weak);                                           /* 2 */
        TIDE_ASSERT(ti_core_find(&c->core.t, x->hash, e->key) == x);              /* 2 */
        bytes += c->entry_bytes;
    }
    check_arena(c);
    for (size_t i = 0; i < c->core.t.nslots; i++)
        for (ti_core_entry *x = c->core.t.slots[i]; x; x = x->hnext) n++;
    TIDE_ASSERT(ns == c->strong.n && nw == c->weak.n);                  /* 2 */
    TIDE_ASSERT(n == c->core.t.count && n == ns + nw);                       /* 2 */
    TIDE_ASSERT(bytes == c->core.bytes);                                     /* 1 */
    TIDE_ASSERT(c->core.hard_limit == 0 || c->core.bytes <= c->core.hard_limit);       /* 6 */
    pthread_mutex_unlock(&c->core.mu);
}
