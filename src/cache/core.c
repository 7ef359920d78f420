/*
 * core.c: the hash table and age lists under both caches.
 *
 * Chains are singly linked through tc_entry.hnext; the slot of an entry is
 * the low bits of its 64-bit hash, so a rehash into twice the slots needs
 * no hashing. Keys are compared only when the full hashes match.
 *
 * Invariants:
 *   1. t->count == the number of entries reachable from t->slots.
 *   2. Each entry is on the chain of slot (hash & (nslots - 1)).
 *   3. l->n == the number of entries on the list, and a list's head has no
 *      prev and its tail no next.
 */
#include <string.h>

#include <xxhash.h>

#include "cache/core.h"
#include "util/assert.h"

uint64_t tc_effective_age_us(uint64_t age_us, size_t target, size_t count)
{
    const uint64_t floor_us = 1000000u;
    uint64_t eff = age_us;

    if (target != 0 && count > target) {
        __extension__ unsigned __int128 p = (unsigned __int128)age_us * target;
        eff = (uint64_t)(p / count);
    }
    return eff < floor_us ? floor_us : eff;
}

size_t tc_slots_for(size_t n)
{
    size_t s = TC_SLOTS_MIN;

    while (s < n) {
        if (s > ((size_t)-1 >> 1)) return 0;
        s <<= 1;
    }
    return s;
}

void tc_table_init(tc_table *t, tc_entry **slots, size_t nslots, unsigned key_size,
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

uint64_t tc_hash(const tc_table *t, const void *key)
{
    return XXH3_64bits_withSeed(key, t->key_size, t->seed);
}

static const void *key_of(const tc_table *t, const tc_entry *e)
{
    return (const unsigned char *)e + t->key_off;
}

tc_entry *tc_find(const tc_table *t, uint64_t hash, const void *key)
{
    tc_entry *e = t->slots[hash & (t->nslots - 1)];

    for (; e != NULL; e = e->hnext)
        if (e->hash == hash && memcmp(key_of(t, e), key, t->key_size) == 0)
            return e;
    return NULL;
}

void tc_link(tc_table *t, tc_entry *e)
{
    tc_entry **slot = &t->slots[e->hash & (t->nslots - 1)];

    e->hnext = *slot;
    *slot = e;
    t->count++;
}

void tc_unlink(tc_table *t, tc_entry *e)
{
    tc_entry **p = &t->slots[e->hash & (t->nslots - 1)];

    while (*p != e) {
        TIDE_ASSERT(*p != NULL);    /* 2: e is on its own slot's chain */
        p = &(*p)->hnext;
    }
    *p = e->hnext;
    e->hnext = NULL;
    TIDE_ASSERT(t->count > 0);
    t->count--;
}

tc_entry **tc_rehash(tc_table *t, tc_entry **slots, size_t nslots)
{
    tc_entry **old = t->slots;
    size_t n = t->nslots, moved = 0;

    TIDE_ASSERT(nslots != 0 && (nslots & (nslots - 1)) == 0);
    for (size_t i = 0; i < n; i++) {
        tc_entry *e = old[i], *next;
        for (; e != NULL; e = next) {
            next = e->hnext;
            tc_entry **slot = &slots[e->hash & (nslots - 1)];
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

void tc_list_push(tc_list *l, tc_entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail) l->tail->next = e;
    else l->head = e;
    l->tail = e;
    l->n++;
}

void tc_list_remove(tc_list *l, tc_entry *e)
{
    TIDE_ASSERT(l->n > 0);
    if (e->prev) e->prev->next = e->next;
    else l->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else l->tail = e->prev;
    e->prev = e->next = NULL;
    l->n--;
}
