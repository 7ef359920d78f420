/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tally.c: the slot numbers of the per-thread counters (tally.h), one
 * allocator for the whole process.
 *
 * Why here and not in the header: a function-local static in a static
 * inline function is one variable per translation unit, so each .c that
 * counted had a round robin of its own and two files' threads could pile
 * onto the same slots; and a slot was never given back, so a process that
 * starts and ends threads (a server's workers, a bench's fetch threads
 * run after run) walked the round robin forward and, past 32 threads
 * ever started, put live threads on one slot while others stood empty.
 *
 * Layout: `taken`, a bit per slot (bit i: slot i belongs to a live thread
 * alone), and `shared`, a counter for the threads that find every bit
 * taken. A thread's slot is in thread-local storage; a pthread key whose
 * destructor runs at the thread's exit gives an owned slot back.
 *
 * Invariants:
 *   1. A thread that owns a slot (its bit set by its own compare-exchange)
 *      is the only live thread that owns it; it clears the bit at exit and
 *      no one else ever clears it.
 *   2. Past TI_TALLY_SLOTS live threads, the rest share slots (round
 *      robin over all of them) and own none; the adds are atomic, so every
 *      sum stays exact, only those adds share a line. A thread keeps the
 *      slot it got for life: one that shares does not move to a slot
 *      freed later.
 *   3. A slot given back keeps its counts: the sums never lose an add;
 *      the next owner adds to them.
 *
 * Never: clear another thread's bit; take a lock on the counting path (a
 * thread's first add does two atomics and a pthread_setspecific, its
 * later adds none of that).
 */
#include <pthread.h>

#include "store/tally.h"
#include "util/assert.h"

static uint32_t taken;                  /* bit i: slot i owned (atomic) */
static unsigned shared;                 /* round robin of the sharers (atomic) */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int key_ok;
static _Thread_local unsigned me;       /* slot + 1; 0: none taken yet */
static _Thread_local int owner;         /* 1: the slot is this thread's alone */

_Static_assert(TI_TALLY_SLOTS <= 32, "one bit per slot in a uint32_t");

/* At a thread's exit (invariant 1). `arg` is non-NULL, set by the thread
 * that owns slot arg - 1. */
static void give_back(void *arg)
{
    unsigned slot = (unsigned)(uintptr_t)arg - 1;
    __atomic_fetch_and(&taken, ~(1u << slot), __ATOMIC_RELEASE);
}

static void make_key(void)
{
    key_ok = pthread_key_create(&exit_key, give_back) == 0;
}

/* The lowest free slot, taken, or -1 when all are. */
static int take_free(void)
{
    uint32_t t = __atomic_load_n(&taken, __ATOMIC_ACQUIRE);

    while (t != (uint32_t)((1ull << TI_TALLY_SLOTS) - 1)) {
        unsigned slot = (unsigned)__builtin_ctz(~t);
        if (__atomic_compare_exchange_n(&taken, &t, t | (1u << slot), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return (int)slot;
    }
    return -1;
}

unsigned ti_tally_slot_take(void)
{
    int slot = -1;

    if (me) return me - 1;                  /* one slot per thread, once */
    pthread_once(&key_once, make_key);
    /* Without the key no slot could be given back: share rather than own. */
    if (key_ok) slot = take_free();
    if (slot >= 0 && pthread_setspecific(exit_key, (void *)(uintptr_t)(slot + 1)) != 0) {
        give_back((void *)(uintptr_t)(slot + 1));
        slot = -1;
    }
    owner = slot >= 0;
    if (slot < 0) slot = (int)(__atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED) % TI_TALLY_SLOTS);
    TIDE_ASSERT(slot >= 0 && slot < TI_TALLY_SLOTS);
    me = (unsigned)slot + 1;
    return (unsigned)slot;
}

unsigned ti_tally_me(void)
{
    return me ? me - 1 : ti_tally_slot_take();
}

int ti_tally_owns_slot(void)
{
    return owner;
}
