/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pool.h: the insert pool, where inserts wait for their commit.
 *
 * A pool is a hash table of items over an arena of large chunks. Items are
 * immutable once added (except `offset`, set by the commit thread), and are
 * freed all at once after their commit. The arena maps its chunks with
 * mmap(2) (util/bigbuf.h), never malloc, so what a pool gives back goes to the kernel at once
 * instead of staying in malloc's arenas. A committed pool either gives back
 * everything (ti_pool_reset) or, while inserts keep coming, keeps its chunks
 * and table for the next batch (ti_pool_recycle): that batch writes over
 * them, where new mappings would first be zeroed by the kernel, a page
 * cleared for every 4 KiB of values.
 *
 * Thread safety: none; the store guards each pool with its pool mutex.
 */
#ifndef TIDE_POOL_H
#define TIDE_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ti_pool_item {
    struct ti_pool_item *next;    /* hash chain */
    struct ti_pool_item *after;   /* insertion order */
    uint64_t hash;                  /* 48-bit store hash */
    uint64_t offset;                /* in nudb.dat, assigned by the commit */
    uint32_t len;                   /* value bytes */
    uint8_t  data[];                /* key_size key bytes, then the value */
} ti_pool_item;

typedef struct ti_pool_chunk ti_pool_chunk;

typedef struct ti_pool {
    unsigned key_size;
    ti_pool_item **table;         /* power-of-two slots, chained */
    uint64_t mask;
    uint64_t count;                 /* items */
    uint64_t record_bytes;          /* their size as nudb.dat records */
    uint64_t bytes;                 /* memory in use: chunks + table */
    uint64_t spare_bytes;           /* memory kept for the next batch:
                                       the spare chunks */
    uint64_t used;                  /* of which items and table: what the
                                       burst bound counts */
    uint64_t used_before_last;      /* `used` just before the newest item
                                       was added (store.c invariant 5) */
    size_t   chunk_size;            /* mapping size, 64 KiB .. 1 MiB */
    ti_pool_item *first, *last;   /* insertion order */
    ti_pool_chunk *chunks;        /* in use, newest first */
    ti_pool_chunk *spare;         /* kept by ti_pool_recycle, each of
                                       chunk_size bytes */
    uint8_t *bump;                  /* free space in the newest chunk */
    size_t   bump_left;
    void   (*note_alloc)(int id, int64_t bytes); /* NULL, or called with
                                       note_id after each chunk or table
                                       allocation (tide_store_opts'); kept
                                       by ti_pool_reset */
    int      note_id;
} ti_pool;

/* Initialise an empty pool; allocates nothing until the first add. Chunks
 * are an eighth of `burst_bytes`, from 64 KiB to 1 MiB, so a small pool
 * does not map more than it may hold. */
void ti_pool_init(ti_pool *p, unsigned key_size, size_t burst_bytes);

/* Free every item, chunk and spare chunk, and the table: the pool is empty,
 * holds no memory, and is reusable. Cost: one munmap per chunk. */
void ti_pool_reset(ti_pool *p);

/* Empty the pool for its next batch but keep its memory: the chunks of
 * chunk_size become spares, which the next adds take before mapping new
 * ones, and the table stays at its size, cleared. A chunk made for one
 * large item is unmapped. Call it when the next batch is about to come (the
 * store: the other pool is filling); otherwise ti_pool_reset, so an idle
 * store holds nothing. Cost: a memset of the table; one munmap per large
 * chunk; allocates nothing. */
void ti_pool_recycle(ti_pool *p);

/* The item with this key (and hash), or NULL. Cost: one chain walk. */
ti_pool_item *ti_pool_find(const ti_pool *p, uint64_t hash, const void *key);

/* Ask the CPU for the table slot ti_pool_find(p, hash, ...) reads first,
 * so that two pools' misses overlap. A hint: reads nothing. */
static inline void ti_pool_prefetch(const ti_pool *p, uint64_t hash)
{
    if (p && p->table) __builtin_prefetch(&p->table[hash & p->mask]);
}

/* Copy key and value into the pool. The caller has checked the key is new.
 * TIDE_ENOMEM when a chunk or the table cannot grow (the pool is unchanged).
 * Cost: a copy of the value; sometimes a new chunk (mmap) or a doubled table. */
int ti_pool_add(ti_pool *p, uint64_t hash, const void *key, const void *value, uint32_t len);

/* Assert (TIDE_ASSERT) pool.c's invariants, and that the pool was below
 * `burst_bytes` before its newest item came in (store.c invariant 5).
 * Cost: one walk of the items, one table lookup each; no allocation. */
void ti_pool_check(const ti_pool *p, size_t burst_bytes);

#endif
