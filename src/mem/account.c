/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * account.c: the per-consumer byte counters.
 *
 * A fixed array of slots, each one a cache line: the counter, the churn
 * totals (allocations and the bytes they asked for) and the name.
 * The first five are named at compile time; registration fills the next
 * free slot under a mutex and then publishes it by storing the new count
 * with release order, so a reader that loads the count with acquire order
 * sees every name below it complete. Counters are updated with relaxed
 * atomics: each counter is exact on its own (no update is lost, whatever
 * the number of threads), and nothing else depends on their order.
 *
 * Invariants:
 *   1. 5 <= nslots <= TIDE_MEM_ACCOUNT_MAX, and nslots only grows.
 *   2. Slot names below nslots are set, unique, and never change.
 *   3. Each slot is 64-byte aligned, so two busy counters never share a
 *      cache line; a slot's totals sit on its counter's line.
 *   4. The totals only grow (they are Prometheus counters): an allocation
 *      noted with negative bytes is a consumer's bug and stops the process.
 *      They wrap only past 2^64, which no process reaches.
 *
 * Never: allocate, lock, or make a system call on the update path.
 */
#include "mem/account.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"

struct slot {
    _Alignas(64) _Atomic int64_t bytes;
    _Atomic uint64_t allocations, allocated_bytes;
    char name[TIDE_MEM_ACCOUNT_NAME_MAX];
};

static struct slot slots[TIDE_MEM_ACCOUNT_MAX] = {
    [TIDE_MEM_NODE_CACHE]        = { .name = "node_cache" },
    [TIDE_MEM_KEY_CACHE]         = { .name = "key_cache" },
    [TIDE_MEM_STORE_INSERT_POOL] = { .name = "store_insert_pool" },
    [TIDE_MEM_STORE_COMMIT]      = { .name = "store_commit" },
    [TIDE_MEM_STORE_TAIL_INDEX]  = { .name = "store_tail_index" },
    [TIDE_MEM_HTTP]              = { .name = "http" },
};
static _Atomic int nslots = TIDE_MEM_ACCOUNT_BUILTIN;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

_Static_assert(sizeof(struct slot) == 64, "one account slot per cache line");

int tide_mem_account_register(const char *name, int *id)
{
    size_t len = name ? strlen(name) : 0;
    int n, rc = 0;

    if (len == 0 || len >= TIDE_MEM_ACCOUNT_NAME_MAX)
        return tide_err_set(TIDE_EINVAL, "memory account: consumer name '%s' must be 1 to %d "
                            "characters", name ? name : "(null)", TIDE_MEM_ACCOUNT_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return tide_err_set(TIDE_EINVAL, "memory account: consumer name '%s': character %zu "
                                "is not one of [a-z0-9_]", name, i + 1);
    }
    pthread_mutex_lock(&register_lock);
    n = atomic_load_explicit(&nslots, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        if (strcmp(slots[i].name, name) == 0) {
            *id = i;
            goto out;
        }
    }
    if (n == TIDE_MEM_ACCOUNT_MAX) {
        rc = tide_err_set(TIDE_ENOMEM, "memory account: cannot register '%s': all %d consumer "
                          "slots are taken", name, TIDE_MEM_ACCOUNT_MAX);
        goto out;
    }
    memcpy(slots[n].name, name, len + 1);
    atomic_store_explicit(&slots[n].bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[n].allocations, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[n].allocated_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&nslots, n + 1, memory_order_release);
    *id = n;
out:
    pthread_mutex_unlock(&register_lock);
    return rc;
}

void tide_mem_account_add(int id, int64_t bytes)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    atomic_fetch_add_explicit(&slots[id].bytes, bytes, memory_order_relaxed);
}

void tide_mem_account_sub(int id, int64_t bytes)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    atomic_fetch_sub_explicit(&slots[id].bytes, bytes, memory_order_relaxed);
}

void tide_mem_account_set(int id, int64_t bytes)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    atomic_store_explicit(&slots[id].bytes, bytes, memory_order_relaxed);
}

void tide_mem_account_note_alloc(int id, int64_t bytes)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    TIDE_ASSERT(bytes >= 0);                                  /* 4 */
    atomic_fetch_add_explicit(&slots[id].allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&slots[id].allocated_bytes, (uint64_t)bytes, memory_order_relaxed);
}

void tide_mem_account_alloc(int id, int64_t bytes)
{
    tide_mem_account_note_alloc(id, bytes);
    atomic_fetch_add_explicit(&slots[id].bytes, bytes, memory_order_relaxed);
}

void tide_mem_account_free(int id, int64_t bytes)
{
    tide_mem_account_sub(id, bytes);
}

void tide_mem_account_totals(int id, uint64_t *allocations, uint64_t *allocated_bytes)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    *allocations = atomic_load_explicit(&slots[id].allocations, memory_order_relaxed);
    *allocated_bytes = atomic_load_explicit(&slots[id].allocated_bytes, memory_order_relaxed);
}

int64_t tide_mem_account_get(int id)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    return atomic_load_explicit(&slots[id].bytes, memory_order_relaxed);
}

int64_t *tide_mem_account_counter(int id)
{
    TIDE_ASSERT((unsigned)id < TIDE_MEM_ACCOUNT_MAX);
    /* _Atomic int64_t has int64_t's size and alignment here (asserted below),
     * so the cache's __atomic adds on it are the same operations. */
    _Static_assert(sizeof(_Atomic int64_t) == sizeof(int64_t), "atomic int64_t is plain");
    return (int64_t *)&slots[id].bytes;
}

const char *tide_mem_account_name(int id)
{
    if (id < 0 || id >= atomic_load_explicit(&nslots, memory_order_acquire)) return NULL;
    return slots[id].name;
}

size_t tide_mem_account_snapshot(tide_mem_account_entry *out, size_t cap)
{
    int n = atomic_load_explicit(&nslots, memory_order_acquire);

    for (int i = 0; i < n && (size_t)i < cap; i++) {
        out[i].id = i;
        memcpy(out[i].name, slots[i].name, sizeof out[i].name);
        out[i].bytes = atomic_load_explicit(&slots[i].bytes, memory_order_relaxed);
        out[i].allocations = atomic_load_explicit(&slots[i].allocations, memory_order_relaxed);
        out[i].allocated_bytes = atomic_load_explicit(&slots[i].allocated_bytes, memory_order_relaxed);
    }
    return (size_t)n;
}

uint64_t tide_mem_account_total(void)
{
    tide_mem_account_entry e[TIDE_MEM_ACCOUNT_MAX];
    size_t n = tide_mem_account_snapshot(e, TIDE_MEM_ACCOUNT_MAX);
    int64_t sum = 0;

    for (size_t i = 0; i < n && i < TIDE_MEM_ACCOUNT_MAX; i++) sum += e[i].bytes;
    return sum > 0 ? (uint64_t)sum : 0;
}
