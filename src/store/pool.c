/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pool.c: the insert pool (see pool.h).
 *
 * Layout: items are bump-allocated from chunks of chunk_size bytes (an item
 * larger than that gets a chunk of its own). The table holds chains of items
 * by 48-bit hash and doubles when it holds more items than slots. A
 * recycled pool's chunks wait on the spare list, and a new chunk is taken
 * from there before one is mapped: under a steady load each pool maps its
 * chunks once, not once a batch. Its table keeps its size; its slots are
 * cleared, which costs less than the kernel's zeroing of a new mapping and
 * saves the rehash of every doubling on the way up.
 *
 * Invariants:
 *   1. count == number of items reachable from `first` == items in the table.
 *   2. bytes == sum of in-use chunk sizes + table slots * sizeof(pointer);
 *      used == sum of item allocations + the table: used <= bytes;
 *      spare_bytes == sum of spare chunk sizes, each chunk_size.
 *   3. record_bytes == sum over items of 6 + key_size + len.
 *   4. Every item is found through the table; count <= table slots.
 * ti_pool_check asserts them.
 *   5. Each chunk mapped and each table allocated is given to note_alloc
 *      once, with its size (churn totals); a spare taken again is not a new
 *      allocation. A reset or recycle keeps the hook.
 *
 * Never: free an item on its own. Items live exactly as long as their batch.
 * Never: hand out a spare before the pool that kept it was emptied: its items
 * were its commit's, and the commit is done with them when it recycles.
 */
#include <stdlib.h>
#include <string.h>

#include "store/pool.h"
#include "store/format.h"
#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/err.h"

#define CHUNK_MIN (64u << 10)
#define CHUNK_MAX (1u << 20)

struct ti_pool_chunk {
    ti_pool_chunk *next;
    size_t size;          /* mapped bytes, including this header */
};

void ti_pool_init(ti_pool *p, unsigned key_size, size_t burst_bytes)
{
    size_t chunk = burst_bytes / 8;
    memset(p, 0, sizeof *p);
    p->key_size = key_size;
    p->chunk_size = chunk < CHUNK_MIN ? CHUNK_MIN : chunk > CHUNK_MAX ? CHUNK_MAX : chunk;
}

static void unmap_chunks(ti_pool_chunk *c)
{
    while (c) {
        ti_pool_chunk *next = c->next;
        tide_big_free(c, c->size);
        c = next;
    }
}

/* Forget the items and the chunk list (the callers have freed or kept the
 * chunks); the settings, the table and the spares stay as they are. */
static void empty_items(ti_pool *p)
{
    ti_pool saved = *p;
    uint64_t table_bytes = p->table ? (p->mask + 1) * sizeof *p->table : 0;

    memset(p, 0, sizeof *p);
    p->key_size = saved.key_size;
    p->chunk_size = saved.chunk_size;
    p->note_alloc = saved.note_alloc;
    p->note_id = saved.note_id;
    p->table = saved.table;
    p->mask = saved.mask;
    p->bytes = p->used = table_bytes;
    p->spare = saved.spare;
    p->spare_bytes = saved.spare_bytes;
}

void ti_pool_reset(ti_pool *p)
{
    unmap_chunks(p->chunks);
    unmap_chunks(p->spare);
    if (p->table) tide_big_free(p->table, (p->mask + 1) * sizeof *p->table);
    p->table = NULL;
    p->mask = 0;
    p->spare = NULL;
    p->spare_bytes = 0;
    empty_items(p);
}

void ti_pool_recycle(ti_pool *p)
{
    ti_pool_chunk *c = p->chunks;

    while (c) {
        ti_pool_chunk *next = c->next;
        if (c->size == p->chunk_size) {
            c->next = p->spare;
            p->spare = c;
            p->spare_bytes += c->size;
        } else {
            tide_big_free(c, c->size);
        }
        c = next;
    }
    if (p->table) memset(p->table, 0, (p->mask + 1) * sizeof *p->table);
    empty_items(p);
}

ti_pool_item *ti_pool_find(const ti_pool *p, uint64_t hash, const void *key)
{
    if (p->table == NULL) return NULL;
    for (ti_pool_item *it = p->table[hash & p->mask]; it; it = it->next)
        if (it->hash == hash && memcmp(it->data, key, p->key_size) == 0) return it;
    return NULL;
}

static int grow_table(ti_pool *p)
{
    uint64_t slots = p->table ? (p->mask + 1) * 2 : 1024;
    /* Half full at once, at random: every page is written, the first touch
     * of each a read (the chain's head). */
    ti_pool_item **t = tide_big_alloc_resident(slots * sizeof *t);
    if (t == NULL) return tide_err_set(TIDE_ENOMEM, "insert pool: cannot grow the table to %llu slots",
                                       (unsigned long long)slots);
    if (p->note_alloc) p->note_alloc(p->note_id, (int64_t)(slots * sizeof *t));
    for (ti_pool_item *it = p->first; it; it = it->after) {
        uint64_t i = it->hash & (slots - 1);
        it->next = t[i];
        t[i] = it;
    }
    if (p->table) {
        p->bytes -= (p->mask + 1) * sizeof *t;
        p->used -= (p->mask + 1) * sizeof *t;
        tide_big_free(p->table, (p->mask + 1) * sizeof *t);
    }
    p->table = t;
    p->mask = slots - 1;
    p->bytes += slots * sizeof *t;
    p->used += slots * sizeof *t;
    return 0;
}

/* What an item of `len` value bytes takes of the arena (and of `used`). */
static size_t item_bytes(const ti_pool *p, uint32_t len)
{
    return (sizeof(ti_pool_item) + p->key_size + (size_t)len + 15) & ~(size_t)15;
}

/* A chunk of `size` bytes for the chunk list: a spare if it is of
 * chunk_size and one is kept, else a new mapping; NULL if that fails. */
static ti_pool_chunk *take_chunk(ti_pool *p, size_t size)
{
    ti_pool_chunk *c = NULL;
    if (size == p->chunk_size && p->spare) {
        c = p->spare;
        p->spare = c->next;
        p->spare_bytes -= size;
    } else {
        /* Filled front to back by the items that follow: resident at once,
         * so its pages cost one call instead of a fault each. */
        void *m = tide_big_alloc_resident(size);
        if (m == NULL) return NULL;
        if (p->note_alloc) p->note_alloc(p->note_id, (int64_t)size);
        c = m;
        c->size = size;
    }
    c->next = p->chunks;
    p->chunks = c;
    p->bytes += size;
    return c;
}

static void *arena_alloc(ti_pool *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > p->bump_left) {
        size_t size = n + 64 > p->chunk_size ? ((n + 64 + 4095) & ~(size_t)4095) : p->chunk_size;
        ti_pool_chunk *c = take_chunk(p, size);
        if (c == NULL) return NULL;
        p->bump = (uint8_t *)c + 64;
        p->bump_left = size - 64;
    }
    void *r = p->bump;
    p->bump += n;
    p->bump_left -= n;
    p->used += n;
    return r;
}

int ti_pool_add(ti_pool *p, uint64_t hash, const void *key, const void *value, uint32_t len)
{
    uint64_t before = p->used;
    ti_pool_item *it;
    int rc;

    if (p->table == NULL || p->count >= p->mask + 1) {
        rc = grow_table(p);
        if (rc) return rc;
    }
    it = arena_alloc(p, sizeof *it + p->key_size + (size_t)len);
    if (it == NULL)
        return tide_err_set(TIDE_ENOMEM, "insert pool: cannot map %zu bytes for a value",
                            sizeof *it + p->key_size + (size_t)len);
    it->hash = hash;
    it->offset = 0;
    it->len = len;
    memcpy(it->data, key, p->key_size);
    memcpy(it->data + p->key_size, value, len);
    it->after = NULL;
    if (p->last) p->last->after = it;
    else p->first = it;
    p->last = it;
    it->next = p->table[hash & p->mask];
    p->table[hash & p->mask] = it;
    p->count++;
    p->record_bytes += TIDE_DAT_RECORD_HEADER + p->key_size + (uint64_t)len;
    p->used_before_last = before;
    return 0;
}

void ti_pool_check(const ti_pool *p, size_t burst_bytes)
{
    uint64_t n = 0, records = 0, used = 0;
    const ti_pool_item *last = NULL;

    for (const ti_pool_item *it = p->first; it; it = it->after) {
        TIDE_ASSERT(it->len >= 1);
        TIDE_ASSERT(ti_pool_find(p, it->hash, it->data) == it);
        used += item_bytes(p, it->len);
        records += TIDE_DAT_RECORD_HEADER + p->key_size + (uint64_t)it->len;
        last = it;
        n++;
    }
    TIDE_ASSERT(n == p->count && last == p->last);
    TIDE_ASSERT(records == p->record_bytes);
    if (p->table) {
        TIDE_ASSERT(p->count <= p->mask + 1);
        used += (p->mask + 1) * sizeof *p->table;
    }
    TIDE_ASSERT(used == p->used && p->used <= p->bytes);
    uint64_t chunk_bytes = 0, spare_bytes = 0;
    for (const ti_pool_chunk *c = p->chunks; c; c = c->next) chunk_bytes += c->size;
    for (const ti_pool_chunk *c = p->spare; c; c = c->next) {
        TIDE_ASSERT(c->size == p->chunk_size);
        spare_bytes += c->size;
    }
    TIDE_ASSERT(chunk_bytes + (p->table ? (p->mask + 1) * sizeof *p->table : 0) == p->bytes);
    TIDE_ASSERT(spare_bytes == p->spare_bytes);
    TIDE_ASSERT(p->count == 0 || p->used_before_last < burst_bytes);
}
