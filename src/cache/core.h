/*
 * core.h: what the tagged cache and the key cache share (internal to
 * src/cache): a chained hash table of entries keyed by fixed-size keys, an
 * age list, the cost of an allocation, and the effective age.
 *
 * An entry begins with a tc_entry; the key (key_size bytes) sits at
 * key_off bytes from the entry's start. Each cache keeps its entries on
 * one or more age lists (doubly linked, oldest at the head).
 *
 * Thread safety: none; each cache guards its table and lists with its own
 * mutex.
 */
#ifndef TIDE_CACHE_CORE_H
#define TIDE_CACHE_CORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tc_entry {
    struct tc_entry *hnext;         /* hash chain */
    struct tc_entry *prev, *next;   /* age list; `next` also chains victims */
    uint64_t hash;
    uint64_t atime_us;              /* last access, on the cache's clock */
} tc_entry;

typedef struct tc_list {
    tc_entry *head, *tail;          /* head: oldest */
    size_t n;
} tc_list;

typedef struct tc_table {
    tc_entry **slots;               /* nslots chains */
    size_t nslots;                  /* a power of two */
    size_t count;                   /* entries linked */
    unsigned key_size;
    size_t key_off;                 /* where an entry's key starts */
    uint64_t seed;                  /* random per table: no chosen-key floods */
} tc_table;

#define TC_SLOTS_MIN 64u

/* What malloc really takes for a request of `n` bytes: glibc's chunk size
 * on 64-bit (n plus the 8-byte size field, rounded up to 16, at least 32).
 * Exact for glibc below its mmap threshold; within a page above it, and
 * within a size class for jemalloc, tcmalloc and mimalloc. Pure. */
static inline size_t tc_chunk(size_t n)
{
    size_t c = (n + 8u + 15u) & ~(size_t)15u;
    return c < 32u ? 32u : c;
}

/* The age an entry may reach before a sweep lets it go: `age_us`, shrunk to
 * age_us * target / count when count exceeds a nonzero target, never below
 * 1 s (even when age_us itself is). Pure. */
uint64_t tc_effective_age_us(uint64_t age_us, size_t target, size_t count);

/* Smallest power of two >= n, at least TC_SLOTS_MIN; 0 when it would
 * overflow a size_t. Pure. */
size_t tc_slots_for(size_t n);

/* Set up an empty table over `slots` (nslots zeroed chains). */
void tc_table_init(tc_table *t, tc_entry **slots, size_t nslots, unsigned key_size,
                   size_t key_off, uint64_t seed);
/* The hash of a key_size-byte key (XXH3, seeded). One pass over the key. */
uint64_t tc_hash(const tc_table *t, const void *key);
/* The entry with this hash and key, or NULL. O(chain). */
tc_entry *tc_find(const tc_table *t, uint64_t hash, const void *key);
/* Link `e` (its hash set, its key in place, not already linked). O(1). */
void tc_link(tc_table *t, tc_entry *e);
/* Unlink `e`, which must be linked. O(chain). */
void tc_unlink(tc_table *t, tc_entry *e);
/* Move every entry onto `slots` (nslots zeroed chains, a power of two) and
 * return the old slot array for the caller to free. O(count + old nslots). */
tc_entry **tc_rehash(tc_table *t, tc_entry **slots, size_t nslots);

/* Age lists. O(1) each. */
void tc_list_push(tc_list *l, tc_entry *e);     /* at the tail */
void tc_list_remove(tc_list *l, tc_entry *e);

#endif
