/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * account.h: bytes held, per consumer of long-lived memory.
 *
 * Each consumer (the node cache, the key cache, the store's insert pool,
 * the commit buffers, HTTP connections, ...) adds what it takes and
 * subtracts what it gives back, so that /metrics and /v1/status can say
 * where the memory is, and the sweeper can compare it with what the
 * allocator and the kernel report. The counters are what the consumers say
 * they hold (payload plus the overhead they choose to count), not what the
 * allocator spent on them.
 *
 * The table is process-wide and fixed: five built-in consumers with the ids
 * below, and up to TIDE_MEM_ACCOUNT_MAX in all with the ones registered at
 * startup. Each counter is a signed 64-bit atomic on its own cache line;
 * updates are relaxed atomic adds, so they cost a few nanoseconds, never
 * allocate, never lock, and do not order other memory operations. A
 * counter that goes negative means a consumer subtracted more than it
 * added: a bug in that consumer, shown as is rather than clamped.
 *
 * Thread safety: everything here may be called from any thread at any time.
 */
#ifndef TIDE_MEM_ACCOUNT_H
#define TIDE_MEM_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

enum {
    TIDE_MEM_NODE_CACHE        = 0,   /* "node_cache": cached objects */
    TIDE_MEM_KEY_CACHE         = 1,   /* "key_cache": recent misses */
    TIDE_MEM_STORE_INSERT_POOL = 2,   /* "store_insert_pool": pending inserts */
    TIDE_MEM_STORE_COMMIT      = 3,   /* "store_commit": commit buffers */
    TIDE_MEM_HTTP              = 4,   /* "http": connections and buffers */
    TIDE_MEM_STORE_TAIL_INDEX  = 5,   /* "store_tail_index": the deferred
                                         index's tail */
    TIDE_MEM_ACCOUNT_BUILTIN   = 6,   /* the number of built-in consumers */
    TIDE_MEM_ACCOUNT_MAX       = 16   /* consumers in all, built-in included */
};

#define TIDE_MEM_ACCOUNT_NAME_MAX 32   /* with the terminating NUL */

/*
 * The id of consumer `name`, registering it when it is new: *id is the
 * existing id when the name is taken (a built-in one included), so two
 * modules may register the same name and share the counter. A new counter
 * starts at 0.
 *
 * `name` is 1 to 31 characters of [a-z0-9_] (it becomes a metrics label).
 * Errors: TIDE_EINVAL for a bad name; TIDE_ENOMEM when all
 * TIDE_MEM_ACCOUNT_MAX slots are taken (the table is fixed; raise the
 * constant). Register at startup: it takes a mutex.
 * Cost: a scan of at most 16 names; no allocation.
 */
int tide_mem_account_register(const char *name, int *id);

/*
 * Update consumer `id` (a TIDE_MEM_* constant or a registered id) by
 * `bytes`: add, subtract, or overwrite. An id outside 0..MAX-1 is a bug and
 * stops the process (TIDE_ASSERT). Cost: one relaxed atomic read-modify-
 * write (set: one store) on the counter's own cache line; no allocation, no
 * lock, no system call.
 */
void tide_mem_account_add(int id, int64_t bytes);
void tide_mem_account_sub(int id, int64_t bytes);
void tide_mem_account_set(int id, int64_t bytes);

/*
 * Churn at the source: besides the bytes held, each consumer
 * counts the allocations it makes and the bytes they asked for, as
 * monotonic totals (tide_memory_allocations_total{consumer} and
 * tide_memory_allocated_bytes_total{consumer}), so rate() shows which
 * consumer churns even when the bytes it holds stay flat.
 * tide_mem_account_alloc adds `bytes` to the held counter and to the
 * totals (one allocation); tide_mem_account_free subtracts from the held
 * counter only. A consumer that keeps its own held counter
 * (tide_mem_account_counter) calls tide_mem_account_note_alloc for the
 * totals alone. Same id rule and cost as add (two or three relaxed atomic
 * adds; the totals sit on the counter's own cache line). `bytes` must be
 * >= 0 for alloc and note_alloc: the totals are counters that never go
 * down, so a negative size is a consumer's bug and stops the process
 * (TIDE_ASSERT), like a bad id.
 */
void tide_mem_account_alloc(int id, int64_t bytes);
void tide_mem_account_free(int id, int64_t bytes);
void tide_mem_account_note_alloc(int id, int64_t bytes);

/* The totals of consumer `id` (relaxed loads). */
void tide_mem_account_totals(int id, uint64_t *allocations, uint64_t *allocated_bytes);

/* The current value of consumer `id` (a relaxed load); 0 for an id never
 * registered. Same id rule as the updates. */
int64_t tide_mem_account_get(int id);

/* The counter itself, for a consumer that updates it with its own atomic
 * adds (tide_cache_opts.account_bytes): a plain int64_t the __atomic
 * builtins may be used on, with the same relaxed meaning as add/sub. */
int64_t *tide_mem_account_counter(int id);

/* The name of consumer `id`, or NULL when no consumer has that id. The
 * string lives as long as the process. */
const char *tide_mem_account_name(int id);

typedef struct tide_mem_account_entry {
    int     id;
    char    name[TIDE_MEM_ACCOUNT_NAME_MAX];
    int64_t bytes;
    uint64_t allocations;       /* the churn totals (tide_mem_account_alloc) */
    uint64_t allocated_bytes;
} tide_mem_account_entry;

/*
 * Copy every registered consumer, in id order, into out[0..cap-1]. Returns
 * the number registered (which may exceed cap; only cap are written). Each
 * value is read atomically, but the snapshot as a whole is not: a consumer
 * moving bytes to another during the copy may be seen on both sides or on
 * neither. No allocation, no lock.
 */
size_t tide_mem_account_snapshot(tide_mem_account_entry *out, size_t cap);

/* The sum of every registered consumer's bytes (0 when negative), read as
 * tide_mem_account_snapshot reads them. No allocation, no lock. */
uint64_t tide_mem_account_total(void);

#endif
