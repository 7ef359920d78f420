/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tally.h: counters that many threads add to and few read, without a
 * shared cache line written per add.
 *
 * A tally is TI_TALLY_SLOTS cache-line-sized slots. Each thread takes a
 * slot number the first time it counts, from one allocator for the whole
 * process (tally.c), and adds to its own slot only; a reader sums the
 * slots. A thread owns the lowest free slot and gives it back when it
 * exits (its counts stay in the slot: sums never lose an add), so up to
 * TI_TALLY_SLOTS live threads count on lines of their own however many
 * threads have come and gone. Past TI_TALLY_SLOTS live threads the others
 * share slots (round robin) and keep them for life; the adds are atomic,
 * so the sums stay exact then too, those adds only slower.
 *
 * Contract: ti_tally_add from any thread; ti_tally_sum from any thread,
 * seeing every add that happened before it (relaxed: a sum taken while
 * others add sees some of their adds). A zeroed tally is empty. Cost: an
 * add is one uncontended atomic add on a line this thread owns (plus, on
 * a thread's first add, a few atomics and a pthread_setspecific); a sum
 * reads every slot.
 */
#ifndef TIDE_STORE_TALLY_H
#define TIDE_STORE_TALLY_H

#include <stdint.h>

#define TI_TALLY_SLOTS 32
#define TI_TALLY_LINE  64

/* The counters of the fetch path. */
enum ti_tally_counter {
    TI_TALLY_FETCHES,        /* tide_store_fetch calls */
    TI_TALLY_MAP_VIEWS,      /* buckets searched in place in the key map */
    TI_TALLY_BUCKET_READS,   /* buckets read with pread (no map, or past it) */
    TI_TALLY_DAT_VIEWS,      /* records and spill records read in the data map */
    TI_TALLY_DAT_READS,      /* records and spill records read with pread */
    TI_TALLY_COUNTERS
};

typedef struct ti_tally_slot {
    _Alignas(TI_TALLY_LINE) uint64_t n[TI_TALLY_COUNTERS];
} ti_tally_slot;

typedef struct ti_tally {
    ti_tally_slot slot[TI_TALLY_SLOTS];
} ti_tally;

/* This thread's slot number, taken on its first call (tally.c). */
unsigned ti_tally_me(void);

/* Take this thread's slot now (ti_tally_me does on its first call): the
 * lowest free one, owned until the thread exits, or a shared one when
 * every slot is owned; the slot it has when it has one. For the tests. */
unsigned ti_tally_slot_take(void);

/* 1 when this thread's slot is its own, 0 when it shares one (or has
 * none yet). For the tests. */
int ti_tally_owns_slot(void);

static inline void ti_tally_add(ti_tally *t, enum ti_tally_counter c, uint64_t v)
{
    __atomic_fetch_add(&t->slot[ti_tally_me()].n[c], v, __ATOMIC_RELAXED);
}

static inline uint64_t ti_tally_sum(const ti_tally *t, enum ti_tally_counter c)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < TI_TALLY_SLOTS; i++)
        sum += __atomic_load_n(&t->slot[i].n[c], __ATOMIC_RELAXED);
    return sum;
}

#endif
