/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keycache.h: the key cache, a set of keys recently found absent.
 *
 * A fetch that misses the node cache asks the key cache before the store:
 * a key it contains is known absent, and the store is skipped. Whoever
 * stores a key must erase it here first (tide_keycache_erase), or fetches
 * would keep reporting it absent until it aged out.
 *
 *     tide_keycache_opts o;  tide_keycache_opts_init(&o);
 *     tide_keycache *k;      tide_keycache_create(&k, &o);
 *     if (tide_keycache_contains(k, key)) -> absent, skip the store
 *     else fetch; on TIDE_ENOTFOUND: tide_keycache_insert(k, key);
 *     on store insert: tide_keycache_erase(k, key);
 *     tide_keycache_sweep(k, NULL);        -- from the sweeper
 *     tide_keycache_destroy(k);
 *
 * Entries age as in the tagged cache (cache.h): a sweep removes every key not
 * looked up or inserted for the effective age (age_s, shrunk to
 * age_s * target_size / entries above a nonzero target, never below 1 s).
 * There are no objects, so no weak entries and no byte budget; a hard limit
 * in bytes bounds it, removing the oldest keys on insert.
 *
 * Every function is thread-safe (one mutex per key cache).
 */
#ifndef TIDE_KEYCACHE_H
#define TIDE_KEYCACHE_H

#include <stddef.h>
#include <stdint.h>
#include "cache/cache.h"            /* tide_cache_arena_report */
#include "mem/arena.h"
#include "tide/error.h"

typedef struct tide_keycache tide_keycache;

typedef struct tide_keycache_opts {
    unsigned key_size;          /* bytes per key, 1..65535; default 32 */
    size_t   target_size;       /* entries; above it the age shrinks (0: no
                                   target); default 262144 */
    unsigned age_s;             /* seconds a key stays without an access,
                                   1..; default 30 */
    size_t   hard_limit_bytes;  /* `bytes` never exceeds it (0: none);
                                   default 32 MiB */
    uint64_t (*clock_us)(void *arg); /* as in tide_cache_opts; NULL (default):
                                   tide_clock_mono_us */
    void    *clock_arg;
    int64_t *account_bytes;     /* as in tide_cache_opts; NULL (default) */
    int      account_id;        /* as in tide_cache_opts; -1 (default): none */
    int      arena;             /* 1: the entries live in a segment arena the
                                   key cache owns (mem/arena.h), compacted and
                                   given back a segment at a time by
                                   tide_keycache_evacuate; 0 (default): malloc */
    size_t   arena_segment_bytes; /* as in tide_cache_opts; default 2 MiB */
    int      arena_hugepages;   /* as in tide_cache_opts; default 0 */
} tide_keycache_opts;

/* Fill `o` with the defaults above. */
void tide_keycache_opts_init(tide_keycache_opts *o);

/* Make an empty key cache (`opts` NULL: the defaults). The table starts with
 * slots for target_size keys (a power of two, at least 64, at most an eighth
 * of the hard limit), doubles as in the tagged cache and never shrinks.
 * Returns 0, TIDE_EINVAL (the message names the option) or TIDE_ENOMEM. */
int tide_keycache_create(tide_keycache **out, const tide_keycache_opts *opts);

/* Free it. NULL is ignored. No call may be in progress or follow.
 * Cost: O(entries + slots). */
void tide_keycache_destroy(tide_keycache *k);

/* Record that `key` is absent (or refresh its time if already recorded).
 * Under the hard limit the oldest keys are removed first (evictions).
 * Counts one insert. Returns 0 or TIDE_ENOMEM.
 * Cost: one hash, one malloc (before the lock), one lock; frees after
 * unlocking; a rehash as in tide_cache_insert when the keys outnumber the
 * slots. */
int tide_keycache_insert(tide_keycache *k, const void *key);

/* 1 when `key` is recorded as absent (a hit, which refreshes its time),
 * else 0 (a miss). Cost: one hash, one lock; allocates and frees nothing. */
int tide_keycache_contains(tide_keycache *k, const void *key);

/* Forget `key` (it has been stored). Returns 1 when it was there, else 0.
 * Not an eviction. Cost: one hash, one lock; frees after unlocking. */
int tide_keycache_erase(tide_keycache *k, const void *key);

/* Forget every key (a rotation that failed after hiding generations made
 * remembered misses possibly false: node.c). Not evictions. Cost: one
 * lock, O(keys); frees after unlocking; allocates nothing. */
void tide_keycache_clear(tide_keycache *k);

typedef struct tide_keycache_sweep_report {
    uint64_t effective_age_us;
    size_t   entries_before;
    size_t   evicted;
    size_t   bytes_before, bytes_after;
} tide_keycache_sweep_report;

/* Remove every key not accessed for the effective age. `report` may be
 * NULL. Cost: one lock; O(keys removed), since keys are kept in access
 * order; frees after unlocking; allocates nothing. */
void tide_keycache_sweep(tide_keycache *k, tide_keycache_sweep_report *report);

/* Change the hard limit at run time (0: none), as tide_cache_set_limits
 * does: a lower one removes the oldest keys at once (counted as
 * evictions). A nonzero limit below the empty key cache plus one key is
 * raised to that (insert needs room for one key; tide_keycache_stats shows
 * the limit in force). Returns 0. Cost: one lock; O(keys removed); frees
 * after unlocking. (The memory governor lowers it under pressure.) */
int tide_keycache_set_hard_limit(tide_keycache *k, size_t hard_limit_bytes);

typedef struct tide_keycache_stats {
    uint64_t hits;          /* contains() that returned 1 */
    uint64_t misses;        /* contains() that returned 0 */
    uint64_t inserts;       /* successful inserts, refreshes included */
    uint64_t evictions;     /* keys removed by a sweep or the hard limit */
    size_t   entries;
    /* What its memory costs, as malloc sizes it (glibc's chunk: request + 8
     * rounded up to 16, at least 32): the key cache struct, its slot array
     * (8 bytes a slot) and, per key, an entry of 40 bytes + key_size; with
     * opts.arena, an entry as the arena sizes it instead (a 16-byte header
     * and its size rounded up to 16). */
    size_t   bytes;
    size_t   slots;
    uint64_t effective_age_us;
    size_t   hard_limit_bytes;  /* in force (0: none) */
} tide_keycache_stats;

/* A consistent snapshot. Cost: one lock, O(1). */
void tide_keycache_stats_get(tide_keycache *k, tide_keycache_stats *out);

/* What one key adds to `bytes`. Pure. */
size_t tide_keycache_entry_cost(const tide_keycache *k);

/*
 * Compact the key cache's arena, as tide_cache_evacuate does the tagged
 * cache's: move the entries of its least-used segments, at most
 * `budget_bytes` of them (0: none), into copies that take their places in
 * the table and the list, then give every empty segment back (the key
 * cache keeps none in reserve). Nothing to do without an arena (0, report
 * zero). Returns 0 or the arena's error. Cost: per entry moved, one arena
 * allocation and one lock held for one copy and one chain walk; per
 * segment released, one madvise.
 */
int tide_keycache_evacuate(tide_keycache *k, size_t budget_bytes, tide_cache_arena_report *report);

/* The arena's counters into *out; 1 when the key cache has an arena, else 0
 * (*out zeroed). O(1), the arena's lock. */
int tide_keycache_arena_stats(tide_keycache *k, tide_arena_stats *out);

/* Check keycache.c's invariants, aborting through TIDE_ASSERT when one is
 * broken. For tests. Cost: one lock for O(entries + slots). */
void tide_keycache_check(tide_keycache *k);

#endif
