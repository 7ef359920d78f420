/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * obj.c: reference-counted byte objects with a weak count.
 *
 * An object is one allocation: a 32-byte header and its bytes. Two counts,
 * as in std::shared_ptr's control block:
 *   strong: the holders (callers, and the cache's strong entries);
 *   weak:   the cache's weak entries, plus one shared by all strong holders
 *           together while strong > 0.
 * The object dies when strong reaches 0; its memory is freed when weak does.
 * A weak reference can become strong only through tide_cache_obj_try_upgrade,
 * which never raises strong from 0, so a dead object stays dead.
 *
 * The header also carries a tag the node sets: the id of the store
 * generation the object is known to be in (online delete; node.c). It is a
 * plain relaxed atomic beside the counts: it orders nothing, and a reader
 * that sees an old tag only makes one more check against the generations.
 *
 * Invariants:
 *   1. strong > 0 implies weak > 0 (the strong holders' shared weak count).
 *   2. Once strong is 0 it stays 0 (retain needs a strong reference already
 *      held, so strong > 0 when it adds; upgrade refuses 0).
 *   3. The memory is freed exactly once: by whoever takes weak from 1 to 0,
 *      which can happen only after strong has reached 0 (by 1).
 *   4. Every decrement that may free is acq_rel, so everything any holder did
 *      with the object happens before the free (no standalone fences: TSan
 *      models these).
 *
 * Never: raise strong from 0 (a dead object stays dead), or order the
 *   counts with a standalone fence.
 */
#include <stdlib.h>
#include <string.h>

#include "cache/obj_impl.h"
#include "util/assert.h"
#include "util/err.h"

int tide_cache_obj_new(tide_cache_obj **out, const void *bytes, size_t len,
                       const tide_cache_obj_hook *hook)
{
    tide_cache_obj *o = NULL;
    int rc = 0;

    if (len > (size_t)-1 - TIDE_CACHE_OBJ_HEADER - 64) {
        rc = tide_err_set(TIDE_ENOMEM, "cache object: %zu bytes is more than can be allocated",
                          len);
        goto out;
    }
    o = malloc(TIDE_CACHE_OBJ_HEADER + len);
    if (o == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "cache object: malloc of %zu bytes failed",
                          TIDE_CACHE_OBJ_HEADER + len);
        goto out;
    }
    atomic_init(&o->strong, 1u);
    atomic_init(&o->weak, 1u);
    o->hook = hook;
    o->len = len;
    atomic_init(&o->gen, 0);
    if (bytes != NULL && len > 0) memcpy(o->data, bytes, len);
    *out = o;
out:
    return rc;
}

size_t tide_cache_obj_alloc_size(size_t len)
{
    return TIDE_CACHE_OBJ_HEADER + len;
}

static void obj_free(tide_cache_obj *o)
{
    if (o->hook && o->hook->on_free) o->hook->on_free(o->hook->arg, o);
    free(o);
}

tide_cache_obj *tide_cache_obj_retain(tide_cache_obj *o)
{
    unsigned prev = atomic_fetch_add_explicit(&o->strong, 1u, memory_order_relaxed);
    TIDE_ASSERT(prev > 0);      /* 2: the caller holds a strong reference */
    return o;
}

void tide_cache_obj_weak_retain(tide_cache_obj *o)
{
    unsigned prev = atomic_fetch_add_explicit(&o->weak, 1u, memory_order_relaxed);
    TIDE_ASSERT(prev > 0);
}

void tide_cache_obj_weak_release(tide_cache_obj *o)
{
    unsigned prev = atomic_fetch_sub_explicit(&o->weak, 1u, memory_order_acq_rel);
    TIDE_ASSERT(prev > 0);
    if (prev == 1) {
        TIDE_ASSERT(atomic_load_explicit(&o->strong, memory_order_relaxed) == 0);  /* 3 */
        obj_free(o);
    }
}

void tide_cache_obj_release(tide_cache_obj *o)
{
    if (o == NULL) return;
    unsigned prev = atomic_fetch_sub_explicit(&o->strong, 1u, memory_order_acq_rel);
    TIDE_ASSERT(prev > 0);
    if (prev == 1) tide_cache_obj_weak_release(o);   /* the holders' shared one */
}

int tide_cache_obj_release_held(tide_cache_obj *o)
{
    unsigned prev = atomic_fetch_sub_explicit(&o->strong, 1u, memory_order_acq_rel);
    TIDE_ASSERT(prev > 0);
    if (prev != 1) return 0;
    prev = atomic_fetch_sub_explicit(&o->weak, 1u, memory_order_acq_rel);
    TIDE_ASSERT(prev > 1);      /* the caller's weak reference remains */
    return 1;
}

void tide_cache_obj_weak_to_strong(tide_cache_obj *o)
{
    unsigned prev = atomic_fetch_add_explicit(&o->strong, 1u, memory_order_relaxed);
    TIDE_ASSERT(prev > 0);
    prev = atomic_fetch_sub_explicit(&o->weak, 1u, memory_order_acq_rel);
    TIDE_ASSERT(prev > 1);      /* 1: the strong holders' shared weak count remains */
}

int tide_cache_obj_try_upgrade(tide_cache_obj *o)
{
    unsigned s = atomic_load_explicit(&o->strong, memory_order_relaxed);

    while (s != 0)
        if (atomic_compare_exchange_weak_explicit(&o->strong, &s, s + 1u,
                                                  memory_order_acquire, memory_order_relaxed))
            return 1;
    return 0;
}

uint64_t tide_cache_obj_gen(const tide_cache_obj *o)
{
    return atomic_load_explicit(&((tide_cache_obj *)o)->gen, memory_order_relaxed);
}

void tide_cache_obj_set_gen(tide_cache_obj *o, uint64_t gen)
{
    atomic_store_explicit(&o->gen, gen, memory_order_relaxed);
}

const void *tide_cache_obj_data(const tide_cache_obj *o) { return o->data; }
size_t tide_cache_obj_len(const tide_cache_obj *o) { return o->len; }

unsigned tide_cache_obj_refs(const tide_cache_obj *o)
{
    return atomic_load_explicit(&o->strong, memory_order_relaxed);
}
