/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tail.h: the deferred index's tail: the entries of the records
 * in nudb.dat that the key file does not index yet, [dat_indexed,
 * dat_committed), in memory.
 *
 * An open-addressing table of 16-byte slots keyed by the 48-bit hash
 * (linear probing), holding what a bucket entry holds: offset, value size,
 * hash. It only grows (by doubling, up to the largest power of two of slots
 * that fits the budget) and is emptied all at once by the flush that
 * indexes it; entries are never removed one by one.
 *
 * Thread safety: none of its own. The store changes it only on the commit
 * thread under key_lock (write) and reads it under key_lock (read); the
 * commit thread also reads it without the lock (it is the only writer).
 */
#ifndef TIDE_STORE_TAIL_H
#define TIDE_STORE_TAIL_H

#include <stddef.h>
#include <stdint.h>

#include "store/format.h"

typedef struct ti_tail {
    uint64_t *slots;      /* 2 words per slot; NULL while empty */
    uint64_t  nslots;     /* a power of two, or 0 */
    uint64_t  count;      /* entries held */
    uint64_t  max_slots;  /* the budget's power of two (>= 1024) */
} ti_tail;

#define TI_TAIL_SLOT_BYTES 16u
#define TI_TAIL_MIN_SLOTS  16u

/* An empty tail whose table may grow to the largest power of two of slots
 * of TI_TAIL_SLOT_BYTES that fits `budget_bytes` (at least
 * TI_TAIL_MIN_SLOTS). Allocates nothing. */
void ti_tail_init(ti_tail *t, uint64_t budget_bytes);

/* Entries the tail can take at most: 3/4 of max_slots. */
uint64_t ti_tail_limit(const ti_tail *t);

/* The smallest budget (a power of two of bytes) whose tail takes at least
 * `entries` entries: the inverse of ti_tail_init and ti_tail_limit. */
uint64_t ti_tail_budget_for(uint64_t entries);

/* The index of the slot a search for `hash` starts at in a table of
 * nslots (a power of two): every insert, search and prefetch starts here. */
static inline uint64_t ti_tail_home_index(uint64_t nslots, uint64_t hash)
{
    return hash & (nslots - 1);
}

/* The slot a search for `hash` starts at, or NULL while the table is
 * empty: for a prefetch. */
static inline const uint64_t *ti_tail_home(const ti_tail *t, uint64_t hash)
{
    return t->nslots ? t->slots + 2 * ti_tail_home_index(t->nslots, hash) : NULL;
}

/* How many entries ahead of its insert an entry's home slot is asked for.
 * Once the table outgrows the caches each insert misses on its slot; with
 * the slots of the next entries already on their way, the misses overlap
 * instead of following one another. Eight covers a miss's latency at the
 * cost of an insert into a table in cache. */
#define TI_TAIL_AHEAD 8

/* Ask for the home slot of `hash`, to be written soon (see TI_TAIL_AHEAD). */
static inline void ti_tail_prefetch(const ti_tail *t, uint64_t hash)
{
    const uint64_t *slot = ti_tail_home(t, hash);
    if (slot) __builtin_prefetch(slot, 1);
}

/* The table's bytes (nslots * TI_TAIL_SLOT_BYTES). */
static inline uint64_t ti_tail_bytes(const ti_tail *t) { return t->nslots * TI_TAIL_SLOT_BYTES; }

/* A table with room for `more` entries beyond count, built (rehashed) into
 * *fresh (its size in *fresh_slots) without touching `t`, so the caller can
 * swap it in under its lock with ti_tail_swap; *fresh is NULL when the
 * present table has room. TIDE_ENOMEM, or TIDE_EINVAL past the limit
 * (count + more > ti_tail_limit). Cost: one allocation and a rehash. */
int ti_tail_prepare(const ti_tail *t, uint64_t more, uint64_t **fresh, uint64_t *fresh_slots);

/* Install a table from ti_tail_prepare; returns the old one (and its slot
 * count in *old_slots) for the caller to free after its lock. */
uint64_t *ti_tail_swap(ti_tail *t, uint64_t *fresh, uint64_t fresh_slots, uint64_t *old_slots);

/* Free a table returned by ti_tail_swap or ti_tail_prepare. */
void ti_tail_free_table(uint64_t *slots, uint64_t nslots);

/* Add an entry (offset >= 1, size < 2^32); the table has room (asserted). */
void ti_tail_add(ti_tail *t, const tide_entry *e);

/* Add an entry, doubling the table first (rehashed, the old one freed)
 * when it is full; *grown_bytes gets the new table's bytes, 0 when it had
 * room. For a caller that owns the table alone (recovery's scan, a
 * reader's index under its own lock). TIDE_ENOMEM, or TIDE_EINVAL past
 * the limit; nothing added then. */
int ti_tail_add_growing(ti_tail *t, const tide_entry *e, uint64_t *grown_bytes);

/* The entries whose hash is `hash`, one per call: *cursor starts at 0;
 * returns 1 with *e filled, 0 when there are no more. */
int ti_tail_next(const ti_tail *t, uint64_t hash, uint64_t *cursor, tide_entry *e);

/* Slot i (0 <= i < nslots): 1 with *e filled when it holds an entry. */
int ti_tail_slot(const ti_tail *t, uint64_t i, tide_entry *e);

/* Empty it and free the table; the budget stays. */
void ti_tail_clear(ti_tail *t);

/* Assert its invariants (count == occupied slots, every entry reachable
 * from its hash's home slot, count <= 3/4 of nslots). O(nslots). */
void ti_tail_check(const ti_tail *t);

#endif
