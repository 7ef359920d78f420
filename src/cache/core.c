/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core.c: the hash table and age lists under both caches, and what both
 * do alike on their common head (ti_core): growing the table, tearing
 * the cache down, and keeping entries in a segment arena (allocating,
 * tagging and moving them, core.h).
 *
 * Chains are singly linked through ti_core_entry.hnext; the slot of an entry is
 * the low bits of its 64-bit hash, so a rehash into twice the slots needs
 * no hashing. Keys are compared only when the full hashes match.
 *
 * Invariants:
 *   1. t->count == the number of entries reachable from t->slots.
 *   2. Each entry is on the chain of slot (hash & (nslots - 1)).
 *   3. l->n == the number of entries on the list, and a list's head has no
 *      prev and its tail no next.
 *   4. k->bytes <= k->hard_limit (when set) whenever k->mu is free; growth
 *      is charged to bytes only when it fits.
 *   5. Nothing is allocated or freed while k->mu is held: ti_core_grow
 *      allocates the new slot array before locking and frees the one left
 *      over after unlocking; ti_core_move_entry allocates the copy before
 *      and frees the original after.
 *   6. In an arena, an entry's tag is TI_CORE_ENTRY_TAG exactly while it is
 *      linked; a move keeps the entry's hash, key, links and list, so the
 *      table and lists are the same before and after but for the address.
 *
 * Never: compare the keys of entries whose full hashes differ, or hash a
 *   key again to move it (a grow uses the hash stored in the entry).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cache/core.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

uint64_t ti_core_effective_age_us(uint64_t age_us, size_t target, size_t count)
{
    const uint64_t floor_us = 1000000u;
    uint64_t eff = age_us;

    if (target != 0 && count > target) {
        __extension__ unsigned __int128 p = (unsigned __int128)age_us * target;
        eff = (uint64_t)(p / count);
    }
    return eff < floor_us ? floor_us : eff;
}

/* Smallest power of two >= n, at least TC_SLOTS_MIN; 0 when it would
 * overflow a size_t. Pure. */
static size_t slots_for(size_t n)
{
    size_t s = TC_SLOTS_MIN;

    while (s < n) {
        if (s > ((size_t)-1 >> 1)) return 0;
        s <<= 1;
    }
    return s;
}

size_t ti_core_start_slots(size_t target, size_t hard_limit)
{
    size_t nslots = slots_for(target);

    if (nslots == 0 || nslots > TC_SLOTS_START) nslots = TC_SLOTS_START;
    while (hard_limit && nslots > TC_SLOTS_MIN && ti_core_table_cost(nslots) > hard_limit / 8)
        nslots >>= 1;
    return nslots;
}

/* Set up an empty table over `slots` (nslots zeroed chains). */
static void table_init(ti_core_table *t, ti_core_entry **slots, size_t nslots, unsigned key_size,
                       size_t key_off, uint64_t seed)
{
    TIDE_ASSERT(nslots != 0 && (nslots & (nslots - 1)) == 0);
    t->slots = slots;
    t->nslots = nslots;
    t->count = 0;
    t->key_size = key_size;
    t->key_off = key_off;
    t->seed = seed;
}

int ti_core_init(ti_core *k, ti_core_entry **slots, size_t nslots, unsigned key_size, size_t key_offset,
                 size_t fixed, size_t hard_limit, int64_t *account, const char *who)
{
    uint64_t seed = 0;

    if (tide_random_bytes(&seed, sizeof seed) != 0)
        seed = tide_clock_mono_us() ^ (uint64_t)(uintptr_t)k;   /* still unpredictable enough */
    if (pthread_mutex_init(&k->mu, NULL) != 0)
        return tide_err_set(TIDE_ENOMEM, "%s: pthread_mutex_init failed", who);
    table_init(&k->t, slots, nslots, key_size, key_offset, seed);
    k->hard_limit = hard_limit;
    k->account = account;
    k->bytes = ti_core_base_cost(k, fixed);
    ti_core_account(k, 0);
    return 0;
}

uint64_t ti_core_hash(const ti_core_table *t, const void *key)
{
    return XXH3_64bits_withSeed(key, t->key_size, t->seed);
}

static const void *key_of(const ti_core_table *t, const ti_core_entry *e)
{
    return (const unsigned char *)e + t->key_off;
}

ti_core_entry *ti_core_find(const ti_core_table *t, uint64_t hash, const void *key)
{
    ti_core_entry *e = t->slots[hash & (t->nslots - 1)];

    for (; e != NULL; e = e->hnext)
        if (e->hash == hash && memcmp(key_of(t, e), key, t->key_size) == 0)
            return e;
    return NULL;
}

void ti_core_link(ti_core_table *t, ti_core_entry *e)
{
    ti_core_entry **slot = &t->slots[e->hash & (t->nslots - 1)];

    e->hnext = *slot;
    *slot = e;
    t->count++;
}

void ti_core_unlink(ti_core_table *t, ti_core_entry *e)
{
    ti_core_entry **p = &t->slots[e->hash & (t->nslots - 1)];

    while (*p != e) {
        TIDE_ASSERT(*p != NULL);    /* 2: e is on its own slot's chain */
        p = &(*p)->hnext;
    }
    *p = e->hnext;
    e->hnext = NULL;
    TIDE_ASSERT(t->count > 0);
    t->count--;
}

void ti_core_replace(ti_core_table *t, ti_core_list *l, ti_core_entry *old, ti_core_entry *copy)
{
    ti_core_entry **p = &t->slots[old->hash & (t->nslots - 1)];

    TIDE_ASSERT(copy->hash == old->hash && copy->hnext == old->hnext);
    while (*p != old) {
        TIDE_ASSERT(*p != NULL);    /* 2: old is on its own slot's chain */
        p = &(*p)->hnext;
    }
    *p = copy;
    if (copy->prev) copy->prev->next = copy;
    else l->head = copy;
    if (copy->next) copy->next->prev = copy;
    else l->tail = copy;
}

/* Move every entry onto `slots` (nslots zeroed chains, a power of two) and
 * return the old slot array for the caller to free. O(count + old nslots). */
static ti_core_entry **rehash(ti_core_table *t, ti_core_entry **slots, size_t nslots)
{
    ti_core_entry **old = t->slots;
    size_t n = t->nslots, moved = 0;

    TIDE_ASSERT(nslots != 0 && (nslots & (nslots - 1)) == 0);
    for (size_t i = 0; i < n; i++) {
        ti_core_entry *e = old[i], *next;
        for (; e != NULL; e = next) {
            next = e->hnext;
            ti_core_entry **slot = &slots[e->hash & (nslots - 1)];
            e->hnext = *slot;
            *slot = e;
            moved++;
        }
    }
    TIDE_ASSERT(moved == t->count);     /* 1 */
    t->slots = slots;
    t->nslots = nslots;
    return old;
}

size_t ti_core_grow_want(const ti_core *k)
{
    size_t delta;

    if (k->t.count <= k->t.nslots || k->t.nslots > SIZE_MAX / 2) return 0;
    delta = ti_core_table_cost(k->t.nslots * 2) - ti_core_table_cost(k->t.nslots);
    if (k->hard_limit && k->bytes + delta > k->hard_limit) return 0;
    return k->t.nslots * 2;
}

void ti_core_grow(ti_core *k, size_t want)
{
    ti_core_entry **slots = NULL, **old = NULL;
    size_t before;

    if (want > SIZE_MAX / sizeof *slots) return;
    slots = calloc(want, sizeof *slots);
    if (slots == NULL) return;      /* chains grow longer instead */
    ti_core_note_alloc(k, want * sizeof *slots);
    pthread_mutex_lock(&k->mu);
    before = k->bytes;
    if (k->t.nslots < want && k->t.count > k->t.nslots) {
        size_t delta = ti_core_table_cost(want) - ti_core_table_cost(k->t.nslots);
        if (k->hard_limit == 0 || k->bytes + delta <= k->hard_limit) {
            old = rehash(&k->t, slots, want);
            slots = NULL;
            k->bytes += delta;
        }
    }
    ti_core_account(k, before);
    TIDE_ASSERT(k->hard_limit == 0 || k->bytes <= k->hard_limit);  /* 4 */
    pthread_mutex_unlock(&k->mu);
    free(slots);                    /* 5 */
    free(old);
}

void ti_core_destroy(ti_core *k, size_t fixed,
                     void (*drain)(ti_core *k, ti_core_entry **victims),
                     void (*free_victims)(ti_core *k, ti_core_entry *victims))
{
    ti_core_entry *v = NULL;

    if (k->account) __atomic_sub_fetch(k->account, (int64_t)k->bytes, __ATOMIC_RELAXED);
    drain(k, &v);
    TIDE_ASSERT(k->t.count == 0 && k->bytes == fixed + ti_core_table_cost(k->t.nslots));
    free_victims(k, v);
    pthread_mutex_destroy(&k->mu);
    free(k->t.slots);
    k->t.slots = NULL;
}

int ti_core_erase(ti_core *k, const void *key,
                  void (*remove)(ti_core *k, ti_core_entry *e, ti_core_entry **victims),
                  void (*check)(const ti_core *k),
                  void (*free_victims)(ti_core *k, ti_core_entry *victims))
{
    uint64_t h = ti_core_hash(&k->t, key);
    ti_core_entry *victims = NULL, *e;
    size_t before;

    pthread_mutex_lock(&k->mu);
    before = k->bytes;
    e = ti_core_find(&k->t, h, key);
    if (e) remove(k, e, &victims);
    ti_core_finish(k, before, check, free_victims, victims);
    return e != NULL;
}

void ti_core_finish(ti_core *k, size_t before, void (*check)(const ti_core *k),
                    void (*free_victims)(ti_core *k, ti_core_entry *victims), ti_core_entry *victims)
{
    ti_core_account(k, before);
    check(k);
    pthread_mutex_unlock(&k->mu);
    free_victims(k, victims);
}

void ti_core_list_push(ti_core_list *l, ti_core_entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail) l->tail->next = e;
    else l->head = e;
    l->tail = e;
    l->n++;
}

void ti_core_list_push_at(ti_core_list *l, ti_core_entry *e, uint64_t now)
{
    uint64_t floor = l->tail ? l->tail->atime_us : 0;

    e->atime_us = now > floor ? now : floor;
    ti_core_list_push(l, e);
}

void ti_core_list_remove(ti_core_list *l, ti_core_entry *e)
{
    TIDE_ASSERT(l->n > 0);
    if (e->prev) e->prev->next = e->next;
    else l->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else l->tail = e->prev;
    e->prev = e->next = NULL;
    l->n--;
}

/* ---- entries in a segment arena ---------------------------------------- */

void *ti_core_entry_alloc(tide_arena *a, size_t size)
{
    void *p = NULL;

    if (a == NULL) return malloc(size);
    return tide_arena_alloc(a, size, &p) == 0 ? p : NULL;
}

void ti_core_entry_free(tide_arena *a, void *e)
{
    if (a) tide_arena_free(a, e);
    else free(e);
}

size_t ti_core_entry_cost(const tide_arena *a, size_t size)
{
    return a ? tide_arena_alloc_size(a, size) : ti_core_chunk(size);
}

void ti_core_entry_mark(tide_arena *a, ti_core_entry *e, int linked)
{
    if (a) tide_arena_set_tag(a, e, linked ? TI_CORE_ENTRY_TAG : 0);
}

int ti_core_move_entry(ti_core *k, tide_arena *a, void *p, size_t size,
                       ti_core_list *(*list_of)(ti_core *k, ti_core_entry *e),
                       void (*moved)(ti_core *k, ti_core_entry *old, ti_core_entry *copy))
{
    ti_core_entry *e = p, *copy = NULL;
    void *q = NULL;

    if (tide_arena_alloc(a, size, &q) != 0) return TIDE_ARENA_KEPT;    /* counted refusal */
    pthread_mutex_lock(&k->mu);
    /* Still linked: the tag is cleared under the lock when it leaves. */
    if (tide_arena_tag(a, p) == TI_CORE_ENTRY_TAG) {
        copy = q;
        memcpy(copy, e, size);
        ti_core_replace(&k->t, list_of(k, e), e, copy);
        if (moved) moved(k, e, copy);
        tide_arena_set_tag(a, e, 0);
        tide_arena_set_tag(a, copy, TI_CORE_ENTRY_TAG);
    }
    pthread_mutex_unlock(&k->mu);
    if (copy == NULL) {
        tide_arena_free(a, q);
        return TIDE_ARENA_KEPT;
    }
    ti_core_note_alloc(k, size);
    tide_arena_free(a, e);
    return TIDE_ARENA_MOVED;
}

typedef struct evac_ctx {
    ti_core *k;
    const ti_core_evac_ops *ops;
    uint64_t entries;               /* entries moved */
} evac_ctx;

/* The arena's move callback: an entry by its tag, anything else the
 * cache's. */
static int evac_move(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    evac_ctx *m = arg;
    int rc;

    if (tag != TI_CORE_ENTRY_TAG) {
        TIDE_ASSERT(m->ops->move_other != NULL);
        return m->ops->move_other(m->k, a, p, size, tag);
    }
    rc = ti_core_move_entry(m->k, a, p, size, m->ops->list_of, m->ops->moved);
    if (rc == TIDE_ARENA_MOVED) m->entries++;
    return rc;
}

int ti_core_evacuate(ti_core *k, tide_arena *a, size_t budget_bytes, const ti_core_evac_ops *ops,
                     tide_cache_arena_report *report)
{
    tide_cache_arena_report r;
    evac_ctx m = { k, ops, 0 };
    tide_arena_stats s0, s1, s2;
    size_t released = 0;
    uint64_t t0, t1;
    int rc = 0;

    memset(&r, 0, sizeof r);
    if (a == NULL) goto out;
    tide_arena_stats_get(a, &s0);
    t0 = tide_clock_mono_ns();
    if (budget_bytes) rc = tide_arena_evacuate(a, budget_bytes, evac_move, &m, &r.evac);
    r.moved_entries = m.entries;
    t1 = tide_clock_mono_ns();
    tide_arena_stats_get(a, &s1);
    if (rc == 0) rc = tide_arena_release(a, &released);
    tide_arena_stats_get(a, &s2);
    r.released = r.evac.released + released;
    r.release_ns = s2.release_ns - s0.release_ns;
    /* The evacuation's own release is in its wall time: take it out. */
    r.evacuate_ns = t1 - t0 - (s1.release_ns - s0.release_ns);
out:
    *report = r;
    return rc;
}
