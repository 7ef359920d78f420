/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tally.h: counters that many threads add to and few read, without a
 * shared cache line written per add.
 *
 * A tally is TI_TALLY_SLOTS cache-line-sized slots. Each thread takes a
 * slot number the first time it counts (a process-wide round robin) and
 * adds to its own slot only; a reader sums the slots. Two threads share a
 * slot only when more than TI_TALLY_SLOTS threads count, and the adds are
 * atomic, so the sum is exact then too, only slower.
 *
 * Contract: ti_tally_add from any thread; ti_tally_sum from any thread,
 * seeing every add that happened before it (relaxed: a sum taken while
 * others add sees some of their adds). A zeroed tally is empty. Cost: an
 * add is one uncontended atomic add on a line this thread owns (plus, once
 * per thread, one atomic on a shared counter); a sum reads every slot.
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
    TI_TALLY_COUNTERS
};

typedef struct ti_tally_slot {
    _Alignas(TI_TALLY_LINE) uint64_t n[TI_TALLY_COUNTERS];
} ti_tally_slot;

typedef struct ti_tally {
    ti_tally_slot slot[TI_TALLY_SLOTS];
} ti_tally;

/* This thread's slot number. */
static inline unsigned ti_tally_me(void)
{
    static unsigned next;
    static _Thread_local unsigned me;     /* slot + 1; 0: none taken yet */
    if (me == 0) me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % TI_TALLY_SLOTS + 1;
    return me - 1;
}

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
