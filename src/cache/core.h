/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core.h: what the tagged cache and the key cache share (internal to
 * src/cache): a chained hash table of entries keyed by fixed-size keys, an
 * age list, the cost of an allocation, and the effective age.
 *
 * An entry begins with a ti_core_entry; the key (key_size bytes) sits at
 * key_off bytes from the entry's start. Each cache keeps its entries on
 * one or more age lists (doubly linked, oldest at the head).
 *
 * A cache struct begins with a ti_core: its mutex, its table, what it costs
 * (`bytes`), its hard limit and the counter it reports the cost to. The rest
 * (lists, clock, ages, counters) is the cache's own. On that common head
 * core.c grows the table (ti_core_grow) and tears a cache down
 * (ti_core_destroy), once for both caches.
 *
 * Thread safety: the table and list functions take no lock; each cache
 * guards its table and lists with the mutex in its ti_core. ti_core_grow,
 * ti_core_move_entry and ti_core_evacuate take that mutex themselves;
 * ti_core_destroy runs with no call in progress.
 */
#ifndef TIDE_CACHE_CORE_H
#define TIDE_CACHE_CORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/account.h"
#include "cache/cache.h"            /* tide_cache_arena_report */
#include "mem/arena.h"

typedef struct ti_core_entry {
    struct ti_core_entry *hnext;         /* hash chain */
    struct ti_core_entry *prev, *next;   /* age list; `next` also chains victims */
    uint64_t hash;
    uint64_t atime_us;              /* last access, on the cache's clock */
} ti_core_entry;

typedef struct ti_core_list {
    ti_core_entry *head, *tail;          /* head: oldest */
    size_t n;
} ti_core_list;

typedef struct ti_core_table {
    ti_core_entry **slots;               /* nslots chains */
    size_t nslots;                  /* a power of two */
    size_t count;                   /* entries linked */
    unsigned key_size;
    size_t key_off;                 /* where an entry's key starts */
    uint64_t seed;                  /* random per table: no chosen-key floods */
} ti_core_table;

/* The head of each cache struct (its first member, so a ti_core * is the
 * cache's address). Guarded by `mu`, except `t.key_size` and `t.seed`,
 * which are fixed at create. (`hard_limit` is not: the memory governor
 * changes it at run time, under `mu`.) */
typedef struct ti_core {
    pthread_mutex_t mu;
    ti_core_table t;
    size_t bytes;                   /* the cache's cost, as malloc (or the
                                       entries' arena) sizes it */
    size_t hard_limit;              /* bytes never exceeds it (0: none) */
    int64_t *account;               /* NULL, or a counter that follows bytes */
    int account_id;                 /* a mem/account.h consumer whose churn
                                       totals count this cache's allocations,
                                       or -1; set by the cache after
                                       ti_core_init, fixed after create */
} ti_core;

#define TC_SLOTS_MIN 64u
/* The most slots a new table starts with (8 KiB of them), whatever the
 * target: a table sized for the target at once is megabytes of calloc'd
 * pages that count in the consumer's bytes but are not resident until
 * entries arrive, so a fresh node would report a cache four times its RSS.
 * Doubling from here costs one O(entries) rehash per doubling. */
#define TC_SLOTS_START 1024u

/* What malloc really takes for a request of `n` bytes: glibc's chunk size
 * on 64-bit (n plus the 8-byte size field, rounded up to 16, at least 32).
 * Exact for glibc below its mmap threshold; within a page above it, and
 * within a size class for jemalloc, tcmalloc and mimalloc. Pure. */
static inline size_t ti_core_chunk(size_t n)
{
    size_t c = (n + 8u + 15u) & ~(size_t)15u;
    return c < 32u ? 32u : c;
}

/* What a slot array of `nslots` chains costs. Pure. */
static inline size_t ti_core_table_cost(size_t nslots)
{
    return ti_core_chunk(nslots * sizeof(ti_core_entry *));
}

/* Add to *k->account what k->bytes has moved since it was `before`. Under
 * the lock; O(1), one relaxed atomic add when it moved. */
/* What no eviction can reclaim: the cache struct (`fixed` bytes) and the
 * slot array. */
static inline size_t ti_core_base_cost(const ti_core *k, size_t fixed)
{
    return ti_core_chunk(fixed) + ti_core_table_cost(k->t.nslots);
}

/* Churn totals: one allocation of `bytes` made for the cache,
 * noted in consumer account_id's totals (nothing when -1). Any thread, no
 * lock needed; two relaxed atomic adds. */
static inline void ti_core_note_alloc(const ti_core *k, size_t bytes)
{
    if (k->account_id >= 0) tide_mem_account_note_alloc(k->account_id, (int64_t)bytes);
}

static inline void ti_core_account(ti_core *k, size_t before)
{
    if (k->account && k->bytes != before)
        __atomic_add_fetch(k->account, (int64_t)k->bytes - (int64_t)before, __ATOMIC_RELAXED);
}

/* The age an entry may reach before a sweep lets it go: `age_us`, shrunk to
 * age_us * target / count when count exceeds a nonzero target, never below
 * 1 s (even when age_us itself is). Pure. */
uint64_t ti_core_effective_age_us(uint64_t age_us, size_t target, size_t count);

/* The slots a new cache starts with: slots_for(target) (core.c), at most
 * TC_SLOTS_START (0 too), halved while the slot array would take more than
 * an eighth of `hard_limit` (0: none), down to TC_SLOTS_MIN. */
size_t ti_core_start_slots(size_t target, size_t hard_limit);

/* The core of a new cache: its mutex, its table over `slots` (nslots, taken
 * on success), a hash seed from getrandom (the clock and the core's address
 * when that fails), the hard limit, the account, and bytes = the cache
 * struct (`fixed`) plus the slot array, added to *account. Returns 0, or
 * TIDE_ENOMEM ("`who`: pthread_mutex_init failed") with `slots` not taken. */
int ti_core_init(ti_core *k, ti_core_entry **slots, size_t nslots, unsigned key_size, size_t key_offset,
                 size_t fixed, size_t hard_limit, int64_t *account, const char *who);

/* The hash of a key_size-byte key (XXH3, seeded). One pass over the key. */
uint64_t ti_core_hash(const ti_core_table *t, const void *key);
/* The entry with this hash and key, or NULL. O(chain). */
ti_core_entry *ti_core_find(const ti_core_table *t, uint64_t hash, const void *key);
/* Link `e` (its hash set, its key in place, not already linked). O(1). */
void ti_core_link(ti_core_table *t, ti_core_entry *e);
/* Unlink `e`, which must be linked. O(chain). */
void ti_core_unlink(ti_core_table *t, ti_core_entry *e);

/* Put `copy`, a byte copy of linked entry `old` (the same hash, key and
 * links), in old's place on its chain and on list `l`, which holds it;
 * old is then unlinked from both and may be freed. For an owner that
 * moves its entries (the tagged cache's arena). O(chain). */
void ti_core_replace(ti_core_table *t, ti_core_list *l, ti_core_entry *old, ti_core_entry *copy);

/* Under the lock, after an insert has linked an entry: twice the slots
 * when the entries now outnumber them and the hard limit leaves room for
 * the larger array; else 0 (no growth). Reads `k` only; O(1). */
size_t ti_core_grow_want(const ti_core *k);

/* Grow the table to `want` slots (from ti_core_grow_want), after unlocking.
 * The new array is allocated before taking the lock and the old one freed
 * after releasing it; under the lock it rehashes only if the entries still
 * outnumber the slots, `want` is more than there are and the hard limit
 * still allows, and charges the difference in table_cost to bytes (and
 * *account). A failed allocation leaves the table as it is: chains grow
 * longer instead. Cost: one calloc of want * 8 bytes, one lock for
 * O(entries + old slots), one free. */
void ti_core_grow(ti_core *k, size_t want);

/* Tear a cache down; no call may be in progress or follow. Takes bytes off
 * *account, lets `drain` remove every entry (from the table and the lists,
 * taking its cost off bytes, onto *victims through ti_core_entry.next), checks
 * that what is left is `fixed` (chunk of the cache struct) plus the slot
 * array, hands the victims to `free_victims`, and destroys the mutex and
 * frees the slot array. The caller frees the cache struct itself.
 * Cost: O(entries + slots). */
void ti_core_destroy(ti_core *k, size_t fixed,
                     void (*drain)(ti_core *k, ti_core_entry **victims),
                     void (*free_victims)(ti_core *k, ti_core_entry *victims));

/* The end of every cache call that changed the table under k->mu, in the
 * order the caches' invariants need: the bytes since `before` go to
 * *account, `check` asserts the cache's cheap invariants, the lock is
 * dropped, and only then `free_victims` gets `victims` (a cache never
 * frees under its lock). `check` and `free_victims` get the cache as its
 * ti_core, which is its first member. */
void ti_core_finish(ti_core *k, size_t before, void (*check)(const ti_core *k),
                    void (*free_victims)(ti_core *k, ti_core_entry *victims), ti_core_entry *victims);

/* The erase of both caches: under k->mu, find `key`; when it is there,
 * `remove` takes it out (from the table and its list, its cost off bytes,
 * onto the victims); then ti_core_finish. `remove` gets the cache as its
 * ti_core. Returns 1 when the key was there, 0 when not.
 * Cost: one hash, one chain walk, one lock. */
int ti_core_erase(ti_core *k, const void *key,
                  void (*remove)(ti_core *k, ti_core_entry *e, ti_core_entry **victims),
                  void (*check)(const ti_core *k),
                  void (*free_victims)(ti_core *k, ti_core_entry *victims));

/* ---- entries in a segment arena ----------------------------------------
 *
 * A cache may keep its entries in a segment arena (mem/arena.h) instead of
 * malloc, so what a sweep frees of them goes back to the kernel whole. No
 * one outside the cache's lock points at an entry (the table, the lists
 * and, in the tagged cache, its object's tag do, all under the lock), so
 * an evacuation moves one by copying it and putting the copy in its place.
 * A linked entry's arena tag is TI_CORE_ENTRY_TAG, set as it is linked and
 * cleared as it is unlinked, both under the lock; the arena offers only
 * tagged allocations to an evacuation. A NULL arena means malloc: every
 * helper below then does what malloc'd entries need (or nothing).
 */
#define TI_CORE_ENTRY_TAG 1u

/* Both caches' arenas evacuate a segment at most this full (fewest live
 * bytes first, within the sweep's budget). After an evacuation every
 * segment is fuller than this or was emptied, but the open one and the one
 * open when it began (never a candidate), so an arena holds at most 100/90
 * of its live bytes plus those two segments and its reserve: the 1.10 x of
 * the memory promise (docs/MEMORY-LIMIT.md). The arena's own default, 50,
 * would leave a workload that frees half of each segment at twice its live
 * bytes. */
#define TI_CORE_ARENA_EVACUATE_PCT 90

/* A new entry of `size` bytes, uninitialized and untagged, from `a` (or
 * malloc); NULL when refused (a counted refusal in the arena). */
void *ti_core_entry_alloc(tide_arena *a, size_t size);
/* Free an entry ti_core_entry_alloc made from the same `a`. Never under
 * the lock. */
void ti_core_entry_free(tide_arena *a, void *e);
/* What an entry of `size` bytes costs: its arena allocation, or its malloc
 * chunk. Pure. */
size_t ti_core_entry_cost(const tide_arena *a, size_t size);
/* Under the lock, as `e` is linked (1) or unlinked (0): its tag. */
void ti_core_entry_mark(tide_arena *a, ti_core_entry *e, int linked);

/*
 * An arena move callback's work for an entry (its tag read
 * TI_CORE_ENTRY_TAG): allocate a copy (before the lock), and under k->mu,
 * when p is still linked, copy it, put the copy in its place on its chain
 * and on the list `list_of` names, and call `moved` (NULL: none) to
 * repoint whatever else refers to the entry; then free p after unlocking.
 * Returns TIDE_ARENA_MOVED, or TIDE_ARENA_KEPT (p was unlinked meanwhile,
 * or the copy was refused). Cost: one arena allocation, one lock held for
 * one copy and one walk of p's chain.
 */
int ti_core_move_entry(ti_core *k, tide_arena *a, void *p, size_t size,
                       ti_core_list *(*list_of)(ti_core *k, ti_core_entry *e),
                       void (*moved)(ti_core *k, ti_core_entry *old, ti_core_entry *copy));

/* What a cache tells ti_core_evacuate about its arena's allocations. */
typedef struct ti_core_evac_ops {
    /* The list a linked entry is on. */
    ti_core_list *(*list_of)(ti_core *k, ti_core_entry *e);
    /* Under the lock, after an entry moved: repoint what else refers to
     * it. NULL: nothing does. */
    void (*moved)(ti_core *k, ti_core_entry *old, ti_core_entry *copy);
    /* An allocation whose tag is not TI_CORE_ENTRY_TAG (the tagged cache's
     * objects), as a tide_arena_move_fn would; NULL: there is none. */
    int (*move_other)(ti_core *k, tide_arena *a, void *p, size_t size, uint64_t tag);
} ti_core_evac_ops;

/*
 * The sweep's compaction of k's arena `a` (NULL: nothing, report zero):
 * tide_arena_evacuate within `budget_bytes` (0: none), each entry moved by
 * ti_core_move_entry and any other allocation by ops->move_other, then
 * tide_arena_release; the report's times and counts, moved_entries
 * included. Returns 0 or the arena's error.
 */
int ti_core_evacuate(ti_core *k, tide_arena *a, size_t budget_bytes, const ti_core_evac_ops *ops,
                     tide_cache_arena_report *report);

/* Age lists. O(1) each. */
void ti_core_list_push(ti_core_list *l, ti_core_entry *e);     /* at the tail */
/* At the tail with access time `now`, or the tail's when that is later, so
 * the list stays ordered by access time when clocks of two threads cross. */
void ti_core_list_push_at(ti_core_list *l, ti_core_entry *e, uint64_t now);
void ti_core_list_remove(ti_core_list *l, ti_core_entry *e);

#endif
