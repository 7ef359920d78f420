/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.h: the tagged cache (objects by key, after XRP Ledger's TaggedCache)
 * and the reference-counted objects it holds.
 *
 * Life of a cache:
 *
 *     tide_cache_opts o;  tide_cache_opts_init(&o);
 *     o.target_size = 100000;  o.budget_bytes = 64 << 20;
 *     tide_cache *c;      tide_cache_create(&c, &o);
 *     tide_cache_obj *v;  tide_cache_obj_make(c, &v, bytes, len);
 *     tide_cache_insert(c, key, v);          -- the cache takes its own reference
 *     tide_cache_obj_release(v);             -- ours
 *     v = tide_cache_lookup(c, key);         -- a new reference, or NULL
 *     ... tide_cache_obj_data(v) ...;  tide_cache_obj_release(v);
 *     tide_cache_sweep(c, NULL);             -- from the sweeper, on a timer
 *     tide_cache_destroy(c);
 *
 * Semantics (docs/ARCHITECTURE.md, "The node cache"): an entry is a key
 * (key_size bytes), an object and its last access time. A strong entry holds
 * a reference to its object. A sweep lets an expired strong entry go: it
 * becomes weak when someone else still holds the object, and is removed
 * (dropping the last reference, which frees the object) otherwise. A weak
 * entry stays findable while its object lives; a lookup that finds it makes
 * it strong again, and a sweep removes it once the object has died. The byte
 * budget and the hard limit count what the cache's memory costs
 * (tide_cache_stats.bytes, below).
 *
 * How weak references work is in cache.c's essay; in short, an object has a
 * strong count (its holders, the cache's strong entries among them) and a
 * weak count (the cache's weak entries, plus one for all strong holders
 * together). Its bytes die when the strong count reaches zero and its memory
 * is freed when the weak count does.
 *
 * Every function is thread-safe unless it says otherwise. Error codes are in
 * tide/error.h; tide_last_error() says what was wrong.
 */
#ifndef TIDE_CACHE_H
#define TIDE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "mem/arena.h"
#include "tide/error.h"

/* ---- objects ---------------------------------------------------------- */

typedef struct tide_cache_obj tide_cache_obj;

/* Called once per object, just before its memory is freed (the bytes are
 * still readable). For counting and accounting; it must not touch any
 * cache. The hook struct must outlive every object made with it. */
typedef struct tide_cache_obj_hook {
    void (*on_free)(void *arg, const tide_cache_obj *o);
    void *arg;
    tide_arena *arena;          /* NULL in a caller's hook; set only in a
                                   cache's own (tide_cache_obj_make) */
} tide_cache_obj_hook;

/*
 * Make an object holding a copy of `len` bytes at `bytes` (bytes may be NULL
 * when len is 0). The caller holds the only
 * reference. `hook` may be NULL. Returns 0 or TIDE_ENOMEM.
 * Cost: one malloc of len + 32 bytes, one copy.
 */
int tide_cache_obj_new(tide_cache_obj **out, const void *bytes, size_t len,
                       const tide_cache_obj_hook *hook);

/* The bytes tide_cache_obj_new asks malloc for, for `len` bytes: len plus
 * the header. For a caller's churn totals (mem/account.h). Pure. */
size_t tide_cache_obj_alloc_size(size_t len);

typedef struct tide_cache tide_cache;

/*
 * Make an object for cache `c`: in c's arena when it has one (opts.arena),
 * else with malloc as tide_cache_obj_new; its hook is opts.obj_hook's, and
 * the allocation is noted in opts.account_id's churn totals. An object
 * made so may be inserted in any cache, but only c moves it in an
 * evacuation (tide_cache_evacuate), and it may outlive c (c's arena is
 * closed when the last such object is freed).
 * Returns 0, or TIDE_ENOMEM (the arena refused: counted in its refusals).
 * Cost: one arena allocation (one lock; see mem/arena.h) or one malloc of
 * len + 32 bytes, and one copy.
 */
int tide_cache_obj_make(tide_cache *c, tide_cache_obj **out, const void *bytes, size_t len);

/* Take another reference to `o` (the caller must hold one). Returns `o`.
 * One atomic add. */
tide_cache_obj *tide_cache_obj_retain(tide_cache_obj *o);

/* Drop one reference. The last one (counting the cache's weak entries, see
 * above) calls the hook and frees the object. NULL is ignored. One atomic
 * subtraction; at most one free. */
void tide_cache_obj_release(tide_cache_obj *o);

/* The bytes and their length. Read-only once the object is shared. */
const void *tide_cache_obj_data(const tide_cache_obj *o);
size_t tide_cache_obj_len(const tide_cache_obj *o);

/* The generation tag: the id of the store generation the object is known
 * to be in (online delete: the node copies an object forward on a cache
 * hit when its tag is below the newest generation, and forgets it when
 * the tag is below the oldest kept one). 0 for a new object and for a
 * node without generations. 8 bytes of the header; relaxed atomics (any
 * thread; the tag orders nothing else). */
uint64_t tide_cache_obj_gen(const tide_cache_obj *o);
void tide_cache_obj_set_gen(tide_cache_obj *o, uint64_t gen);

/* The strong count at this instant (holders, including the cache's strong
 * entry). For tests and diagnostics only: it may change at once. */
unsigned tide_cache_obj_refs(const tide_cache_obj *o);

/* ---- the cache -------------------------------------------------------- */

typedef struct tide_cache_opts {
    unsigned key_size;          /* bytes per key, 1..65535; default 32 */
    size_t   target_size;       /* entries; above it the age shrinks (0: no
                                   target); default 262144 (node_size tiny) */
    unsigned age_s;             /* seconds an entry stays strong without an
                                   access, 1..; default 30 (tiny) */
    size_t   budget_bytes;      /* a sweep shrinks `bytes` under it, oldest
                                   strong entries first (0: none); default
                                   64 MiB (tiny) */
    size_t   hard_limit_bytes;  /* `bytes` never exceeds it: an insert (or a
                                   revival) evicts the oldest entries first
                                   (0: none); must be >= budget_bytes when
                                   both are set; default 128 MiB */
    uint64_t (*clock_us)(void *arg); /* monotonic microseconds; NULL
                                   (default): tide_clock_mono_us. Called
                                   under the cache's lock: it must be cheap
                                   and must not call into the cache */
    void    *clock_arg;
    int64_t *account_bytes;     /* NULL (default), or a counter the cache adds
                                   its changes of `bytes` to with atomic adds,
                                   so a counter that starts at 0 and serves
                                   only this cache equals `bytes` whenever no
                                   call is in progress; at destroy the cache
                                   subtracts what it still counts */
    int      account_id;        /* -1 (default): none; or a mem/account.h
                                   consumer id (TIDE_MEM_NODE_CACHE) whose
                                   churn totals count each allocation the
                                   cache makes (its struct, slot arrays,
                                   entries, and the objects of
                                   tide_cache_obj_make and of evacuations)
                                   with the bytes asked for
                                   (tide_mem_account_note_alloc; the bytes
                                   held go through account_bytes) */
    int      arena;             /* 1 (default): tide_cache_obj_make puts
                                   objects in a segment arena the cache owns
                                   (mem/arena.h), which tide_cache_evacuate
                                   compacts and gives back to the kernel a
                                   segment at a time; 0: malloc */
    size_t   arena_segment_bytes; /* the arena's segment: a power of two
                                   from 64 KiB to 1 GiB; default 2 MiB */
    unsigned arena_reserve;     /* empty segments the arena keeps resident;
                                   default 1 */
    int arena_hugepages;        /* 1: madvise(MADV_HUGEPAGE) each segment
                                   brought into use; 0 (default) */
    const tide_cache_obj_hook *obj_hook; /* NULL (default), or the hook of
                                   the objects tide_cache_obj_make makes
                                   (its arena field NULL); must outlive
                                   them */
} tide_cache_opts;

/* Fill `o` with the defaults above. */
void tide_cache_opts_init(tide_cache_opts *o);

/*
 * Make an empty cache. `opts` may be NULL (the defaults). The hash table
 * starts with enough slots for target_size entries (a power of two, at least
 * 64) but at most 1024, and no more than an eighth of the hard limit allows;
 * it doubles when the entries outnumber the slots and the hard limit allows,
 * and never shrinks. The slot array counts in `bytes` from the start (with
 * the defaults: 1024 slots, 8 KiB) and a doubling that would pass the hard
 * limit is skipped (chains grow longer instead). Starting small keeps an
 * empty cache's count honest: a table sized for the target would be
 * calloc'd pages counted but not yet resident.
 * Returns 0, TIDE_EINVAL (an option out of range: the message names it) or
 * TIDE_ENOMEM.
 */
int tide_cache_create(tide_cache **out, const tide_cache_opts *opts);

/* Drop every reference the cache holds (objects held elsewhere live on)
 * and free it. NULL is ignored. No call may be in progress or follow.
 * Cost: O(entries + slots). */
void tide_cache_destroy(tide_cache *c);

/*
 * Put `obj` under `key` (key_size bytes). The cache takes its own strong
 * reference; the caller keeps its own. An entry already under the key, strong
 * or weak, is replaced (its reference is dropped; replacement is not an
 * eviction). When the hard limit is set, the oldest entries are let go until
 * the new one fits: strong ones first (demoted when shared, removed
 * otherwise), then weak ones. Counts one insert.
 * Returns 0, TIDE_ETOOBIG when the entry alone (its object, the entry and the
 * cache's table) costs more than the hard limit (the cache is unchanged), or
 * TIDE_ENOMEM.
 * Cost: one hash, one malloc (the entry, before the lock), one lock; frees
 * what it displaces after unlocking. When the entries outnumber the slots, a
 * rehash: one calloc outside the lock and O(entries) under it.
 */
int tide_cache_insert(tide_cache *c, const void *key, tide_cache_obj *obj);

/*
 * The object under `key` with a new reference for the caller (who releases
 * it), or NULL. A hit refreshes the entry's access time; a weak entry whose
 * object lives becomes strong again (a revival, which may let the oldest
 * entries go under the hard limit); a weak entry whose object has died is
 * removed and counts as a miss.
 * Cost: one hash, one lock; allocates nothing. Frees nothing unless it
 * removes a dead entry or a revival pushes entries out, and then only after
 * unlocking.
 */
tide_cache_obj *tide_cache_lookup(tide_cache *c, const void *key);

/* Remove the entry under `key`, if any. Returns 1 when there was one, else
 * 0. Not an eviction. Cost: one hash, one lock; frees after unlocking. */
int tide_cache_erase(tide_cache *c, const void *key);

/* What one sweep did. */
typedef struct tide_cache_sweep_report {
    uint64_t effective_age_us;  /* the age it used (see tide_cache_sweep) */
    size_t   entries_before;    /* strong + weak when it started */
    size_t   demoted;           /* strong -> weak (held elsewhere) */
    size_t   evicted;           /* strong entries removed: the cache held the
                                   only reference, so their objects are freed */
    size_t   reaped;            /* weak entries removed: their objects had died */
    size_t   bytes_before, bytes_after;
} tide_cache_sweep_report;

/*
 * Let go of what has not been used for the effective age: `age_s`, shrunk to
 * age_s * target_size / entries when the entries (strong + weak) exceed a
 * nonzero target_size, never below 1 s. A strong entry last accessed at least
 * that long ago is demoted to weak when its object is held elsewhere, and
 * removed otherwise; weak entries whose objects have died are removed. Then,
 * while `bytes` exceeds a nonzero budget, the oldest strong entries go the
 * same way. `report` may be NULL.
 * Cost: one lock; O(weak entries + strong entries let go), since strong
 * entries are kept in access order; frees everything it removes after
 * unlocking, and allocates nothing.
 */
void tide_cache_sweep(tide_cache *c, tide_cache_sweep_report *report);

/*
 * Change the byte budget and the hard limit at run time (the memory
 * governor shrinks them under pressure and gives them back).
 * Same rules as the options: 0 means none, and hard_limit_bytes must be >=
 * budget_bytes when both are set (TIDE_EINVAL otherwise, nothing changed).
 * A lower hard limit is enforced at once: the oldest entries are let go
 * (demoted, or freed when nothing else holds them) until `bytes` is under
 * it, and counted as evictions; a lower budget waits for the next sweep.
 * The slot array never shrinks, so a nonzero hard limit below what the
 * cache takes empty now (its struct and slot array) is raised to that,
 * and the budget lowered to the hard limit when above it (so that a
 * governor dividing a small limit by 8 cannot break invariant 6;
 * tide_cache_stats shows the limits in force). Returns 0 or TIDE_EINVAL.
 * Cost: one lock; O(entries let go); frees after unlocking; allocates
 * nothing.
 */
int tide_cache_set_limits(tide_cache *c, size_t budget_bytes, size_t hard_limit_bytes);

typedef struct tide_cache_stats {
    uint64_t hits;          /* lookups that returned an object */
    uint64_t misses;        /* lookups that returned NULL */
    uint64_t inserts;       /* successful tide_cache_insert calls */
    uint64_t evictions;     /* entries removed by a sweep (age or budget) or
                               by the hard limit while their objects lived */
    uint64_t demotions;     /* strong -> weak, by a sweep or the hard limit */
    uint64_t revivals;      /* weak -> strong, by a lookup */
    uint64_t reaped;        /* weak entries removed after their objects died */
    size_t   strong, weak;  /* entries by state */
    /*
     * What the cache's memory costs, in bytes, as malloc sizes it (glibc's
     * chunk: request + 8 rounded up to 16, at least 32):
     *   the cache struct and its hash-table slot array, plus
     *   for every entry, strong or weak: the entry (49 bytes + key_size;
     *   in an arena as the arena sizes it, like the objects below), plus
     *   for every strong entry: its object (32 bytes + len: the counts,
     *   the hook, the length and the generation tag, then the bytes);
     *   an object in an arena as the arena sizes it instead
     *   (tide_arena_alloc_size: a 16-byte header and 32 + len rounded up
     *   to 16; a page-rounded mapping above a quarter of a segment).
     * A weak entry's object is not counted: whoever keeps it alive holds that
     * memory. (After its last holder lets go, the object's memory waits for
     * the next sweep or lookup of its key; see cache.c.)
     */
    size_t   bytes;
    size_t   slots;         /* hash-table slots */
    uint64_t effective_age_us;  /* what a sweep would use now */
    size_t   budget_bytes, hard_limit_bytes; /* in force (0: none);
                               tide_cache_set_limits changes them */
} tide_cache_stats;

/* A consistent snapshot of the counters. Cost: one lock, O(1). */
void tide_cache_stats_get(tide_cache *c, tide_cache_stats *out);

/* What one strong entry whose object holds `len` bytes adds to `bytes`, and
 * what one weak entry adds (the entry alone; see tide_cache_stats.bytes).
 * Pure. */
size_t tide_cache_entry_cost(const tide_cache *c, size_t len);
size_t tide_cache_weak_entry_cost(const tide_cache *c);
/* What the cache struct itself adds (the slot array is the rest of an empty
 * cache's bytes: chunk(slots * 8)). Pure. */
size_t tide_cache_fixed_cost(const tide_cache *c);

/* ---- the arena ------------------------------------------------------------ */

/* What one evacuation and release did (tide_cache_evacuate). */
typedef struct tide_cache_arena_report {
    tide_arena_evac_report evac;    /* segments walked, allocations moved and kept:
                                       cached objects and their entries */
    uint64_t moved_entries;         /* of evac.moved_objects, the entries (the
                                       rest are cached objects) */
    uint64_t released;              /* segments given back, evacuation's and release's */
    uint64_t evacuate_ns, release_ns; /* time in the copies and walks; in the madvise calls */
} tide_cache_arena_report;

/*
 * Compact the cache's arena: move the entries and the strong entries'
 * objects of its least-used segments, at most `budget_bytes` of them (0:
 * none), into copies (mem/arena.h's tide_arena_evacuate), then give every
 * empty segment beyond the reserve back to the kernel. A moved entry takes
 * its old place in the table and its list; an entry whose object moved
 * points at the copy at once; the old object stays readable for whoever holds it and
 * is freed by its last holder (so a free hook sees one extra free per
 * move), and its segment goes back at a later release. Weak entries'
 * objects are not moved. Nothing to do without an arena (0, report zero).
 * Returns 0 or the arena's error (a madvise that failed: TIDE_EIO).
 * Cost: per object or entry moved, one arena allocation and one lock of
 * the cache held for one copy (and, for an entry, one walk of its chain); per segment released, one madvise.
 */
int tide_cache_evacuate(tide_cache *c, size_t budget_bytes, tide_cache_arena_report *report);

/* The arena's counters into *out; 1 when the cache has an arena, else 0
 * (*out zeroed). O(1), the arena's lock. */
int tide_cache_arena_stats(tide_cache *c, tide_arena_stats *out);

/* Walk every entry and check the invariants of cache.c's essay, aborting
 * through TIDE_ASSERT when one is broken. For tests. Cost: one lock held
 * for O(entries + slots). */
void tide_cache_check(tide_cache *c);

#endif
