/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tail.c: the deferred index's in-memory tail (see tail.h).
 *
 * Layout: slots of two 64-bit words, the entry packed into 128 bits:
 *   word 0: offset (48 bits) | low 16 bits of the hash << 48
 *   word 1: high 32 bits of the 48-bit hash | value size (32 bits) << 32
 * A slot whose word 0 is 0 is empty (no record starts at offset 0: the
 * data file's header is there). An entry's home slot is hash & (nslots - 1);
 * collisions probe forward (linear probing, wrapping).
 *
 * Invariants:
 *   1. count == the number of occupied slots <= 3/4 of nslots.
 *   2. Every entry is reached from its home slot without crossing an empty
 *      slot (nothing is ever removed alone, so probing stays sound).
 *   3. nslots is 0 or a power of two from TI_TAIL_MIN_SLOTS to max_slots.
 * ti_tail_check asserts them.
 *
 * Never: remove one entry (it would break invariant 2); hold more than
 *   ti_tail_limit entries (the flush comes first).
 */
#include <string.h>

#include "store/tail.h"
#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/err.h"

void ti_tail_init(ti_tail *t, uint64_t budget_bytes)
{
    uint64_t n = TI_TAIL_MIN_SLOTS;
    memset(t, 0, sizeof *t);
    while (n * 2 * TI_TAIL_SLOT_BYTES <= budget_bytes && n < (1ull << 40)) n *= 2;
    t->max_slots = n;
}

uint64_t ti_tail_limit(const ti_tail *t)
{
    return t->max_slots / 4 * 3;
}

uint64_t ti_tail_budget_for(uint64_t entries)
{
    uint64_t slots = TI_TAIL_MIN_SLOTS;
    while (slots / 4 * 3 < entries && slots < (1ull << 40)) slots *= 2;
    return slots * TI_TAIL_SLOT_BYTES;
}

static void put_slot(uint64_t *slots, uint64_t nslots, const tide_entry *e)
{
    uint64_t i = ti_tail_home_index(nslots, e->hash);
    while (slots[2 * i] != 0) i = (i + 1) & (nslots - 1);
    slots[2 * i] = e->offset | (e->hash & 0xffff) << 48;
    slots[2 * i + 1] = (e->hash >> 16) | e->size << 32;
}

static void get_slot(const uint64_t *w, tide_entry *e)
{
    e->offset = w[0] & TIDE_FIELD48_MAX;
    e->hash = (w[0] >> 48) | (w[1] & 0xffffffffull) << 16;
    e->size = w[1] >> 32;
}

int ti_tail_prepare(const ti_tail *t, uint64_t more, uint64_t **fresh, uint64_t *fresh_slots)
{
    uint64_t need = t->count + more, n = t->nslots ? t->nslots : TI_TAIL_MIN_SLOTS;
    uint64_t *slots;

    *fresh = NULL;
    *fresh_slots = 0;
    if (need > ti_tail_limit(t))
        return tide_err_set(TIDE_EINVAL, "tail index: %llu entries exceed its limit of %llu",
                            (unsigned long long)need, (unsigned long long)ti_tail_limit(t));
    while (need > n / 4 * 3) n *= 2;
    if (n == t->nslots) return 0;
    /* The entries it is made for (more than 3/8 of its slots, unless it is
     * the smallest) land at random: every page is written soon. */
    slots = tide_big_alloc_resident(n * TI_TAIL_SLOT_BYTES);
    if (slots == NULL)
        return tide_err_set(TIDE_ENOMEM, "tail index: cannot map %llu bytes",
                            (unsigned long long)(n * TI_TAIL_SLOT_BYTES));
    for (uint64_t i = 0; i < t->nslots; i++) {
        tide_entry e;
        if (i + TI_TAIL_AHEAD < t->nslots && ti_tail_slot(t, i + TI_TAIL_AHEAD, &e))
            __builtin_prefetch(slots + 2 * ti_tail_home_index(n, e.hash), 1);
        if (ti_tail_slot(t, i, &e)) put_slot(slots, n, &e);
    }
    *fresh = slots;
    *fresh_slots = n;
    return 0;
}

uint64_t *ti_tail_swap(ti_tail *t, uint64_t *fresh, uint64_t fresh_slots, uint64_t *old_slots)
{
    uint64_t *old = t->slots;
    *old_slots = t->nslots;
    t->slots = fresh;
    t->nslots = fresh_slots;
    return old;
}

void ti_tail_free_table(uint64_t *slots, uint64_t nslots)
{
    if (slots) tide_big_free(slots, nslots * TI_TAIL_SLOT_BYTES);
}

void ti_tail_add(ti_tail *t, const tide_entry *e)
{
    TIDE_ASSERT(t->nslots > 0 && t->count + 1 <= t->nslots / 4 * 3);
    TIDE_ASSERT(e->offset != 0 && e->offset <= TIDE_FIELD48_MAX && e->size <= 0xffffffffull);
    put_slot(t->slots, t->nslots, e);
    t->count++;
}

int ti_tail_add_growing(ti_tail *t, const tide_entry *e, uint64_t *grown_bytes)
{
    uint64_t *fresh = NULL, fresh_slots = 0, old_slots = 0;
    int rc;

    *grown_bytes = 0;
    if (t->count + 1 > t->nslots / 4 * 3) {
        if ((rc = ti_tail_prepare(t, 1, &fresh, &fresh_slots)) != 0) return rc;
        ti_tail_free_table(ti_tail_swap(t, fresh, fresh_slots, &old_slots), old_slots);
        *grown_bytes = fresh_slots * TI_TAIL_SLOT_BYTES;
    }
    ti_tail_add(t, e);
    return 0;
}

int ti_tail_next(const ti_tail *t, uint64_t hash, uint64_t *cursor, tide_entry *e)
{
    if (t->nslots == 0) return 0;
    uint64_t mask = t->nslots - 1;
    /* The cursor is probes made + 1 (0: none yet). */
    uint64_t i = (ti_tail_home_index(t->nslots, hash) + (*cursor ? *cursor - 1 : 0)) & mask;
    if (*cursor == 0) *cursor = 1;
    for (; *cursor <= t->nslots; i = (i + 1) & mask) {
        const uint64_t *w = t->slots + 2 * i;
        (*cursor)++;
        if (w[0] == 0) { *cursor = t->nslots + 1; return 0; }
        get_slot(w, e);
        if (e->hash == hash) return 1;
    }
    return 0;
}

int ti_tail_slot(const ti_tail *t, uint64_t i, tide_entry *e)
{
    const uint64_t *w = t->slots + 2 * i;
    if (w[0] == 0) return 0;
    get_slot(w, e);
    return 1;
}

void ti_tail_clear(ti_tail *t)
{
    ti_tail_free_table(t->slots, t->nslots);
    t->slots = NULL;
    t->nslots = 0;
    t->count = 0;
}

void ti_tail_check(const ti_tail *t)
{
    uint64_t n = 0;
    TIDE_ASSERT(t->nslots == 0 || ((t->nslots & (t->nslots - 1)) == 0 &&
                                   t->nslots >= TI_TAIL_MIN_SLOTS && t->nslots <= t->max_slots));
    TIDE_ASSERT((t->nslots == 0) == (t->slots == NULL));
    for (uint64_t i = 0; i < t->nslots; i++) {
        tide_entry e, f;
        uint64_t cur = 0;
        int found = 0;
        if (!ti_tail_slot(t, i, &e)) continue;
        n++;
        while (!found && ti_tail_next(t, e.hash, &cur, &f)) found = f.offset == e.offset;
        TIDE_ASSERT(found);
    }
    TIDE_ASSERT(n == t->count);
    TIDE_ASSERT(t->count <= t->nslots / 4 * 3);
}
