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
 * Where the memory comes from: malloc, for an object made with
 * tide_cache_obj_new; the cache's segment arena (mem/arena.h), for one a
 * cache with an arena made with tide_cache_obj_make. Such an object's hook
 * is the cache's home (obj_impl.h), whose `arena` says where to free it and
 * which lives, with the arena, until the last of its objects is freed. An
 * evacuation (cache.c) moves an entry to a copy made by ti_cache_obj_copy:
 * a new object with its own counts, the entry's reference only; the old
 * one keeps its holders' references and is freed by the last of them.
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
 *   5. An arena object holds one reference on its home from its making to
 *      its free, so the arena is closed only after its last object is freed.
 *
 * Never: raise strong from 0 (a dead object stays dead), or order the
 *   counts with a standalone fence.
 */
#include <stdlib.h>
#include <string.h>

#include "cache/obj_impl.h"
#include "mem/arena.h"
#include "util/assert.h"
#include "util/err.h"

/* The counts, hook, length and tag of a new object, and its bytes. */
static void obj_init(tide_cache_obj *o, const void *bytes, size_t len,
                     const tide_cache_obj_hook *hook)
{
    atomic_init(&o->strong, 1u);
    atomic_init(&o->weak, 1u);
    o->hook = hook;
    o->len = len;
    atomic_init(&o->gen, 0);
    if (bytes != NULL && len > 0) memcpy(o->data, bytes, len);
}

static int len_check(size_t len)
{
    if (len > (size_t)-1 - TIDE_CACHE_OBJ_HEADER - 64)
        return tide_err_set(TIDE_ENOMEM, "cache object: %zu bytes is more than can be allocated",
                            len);
    return 0;
}

int tide_cache_obj_new(tide_cache_obj **out, const void *bytes, size_t len,
                       const tide_cache_obj_hook *hook)
{
    tide_cache_obj *o = NULL;
    int rc;

    TIDE_ASSERT(hook == NULL || hook->arena == NULL);
    rc = len_check(len);
    if (rc) goto out;
    o = malloc(TIDE_CACHE_OBJ_HEADER + len);
    if (o == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "cache object: malloc of %zu bytes failed",
                          TIDE_CACHE_OBJ_HEADER + len);
        goto out;
    }
    obj_init(o, bytes, len, hook);
    *out = o;
out:
    return rc;
}

int ti_cache_obj_new_in(ti_cache_home *home, tide_cache_obj **out, const void *bytes, size_t len)
{
    void *p = NULL;
    int rc;

    rc = len_check(len);
    if (rc) goto out;
    rc = tide_arena_alloc(home->hook.arena, TIDE_CACHE_OBJ_HEADER + len, &p);
    if (rc) goto out;
    atomic_fetch_add_explicit(&home->refs, 1u, memory_order_relaxed);      /* 5 */
    obj_init(p, bytes, len, &home->hook);
    *out = p;
out:
    return rc;
}

void ti_cache_obj_copy(tide_cache_obj *copy, const tide_cache_obj *o)
{
    ti_cache_home *home = (ti_cache_home *)(uintptr_t)o->hook;

    atomic_fetch_add_explicit(&home->refs, 1u, memory_order_relaxed);      /* 5 */
    obj_init(copy, o->data, o->len, o->hook);
    atomic_init(&copy->gen, tide_cache_obj_gen(o));
}

void ti_cache_home_release(ti_cache_home *home)
{
    if (atomic_fetch_sub_explicit(&home->refs, 1u, memory_order_acq_rel) != 1) return;
    tide_arena_close(home->hook.arena);
    free(home);
}

size_t tide_cache_obj_alloc_size(size_t len)
{
    return TIDE_CACHE_OBJ_HEADER + len;
}

static void obj_free(tide_cache_obj *o)
{
    const tide_cache_obj_hook *hook = o->hook;

    if (hook && hook->on_free) hook->on_free(hook->arg, o);
    if (hook && hook->arena) {
        tide_arena_free(hook->arena, o);
        ti_cache_home_release((ti_cache_home *)(uintptr_t)hook);        /* 5 */
    } else {
        free(o);
    }
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
