/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * obj_impl.h: the layout of a tide_cache_obj and the weak-reference
 * operations only the cache uses (internal to src/cache; the scheme and its
 * invariants are in cache.c's essay).
 */
#ifndef TIDE_CACHE_OBJ_IMPL_H
#define TIDE_CACHE_OBJ_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"

struct tide_cache_obj {
    atomic_uint strong;             /* holders; 0: the object has died */
    atomic_uint weak;               /* weak entries, + 1 while strong > 0 */
    const tide_cache_obj_hook *hook;
    size_t len;
    _Atomic uint64_t gen;           /* the generation tag (tide_cache_obj_gen) */
    unsigned char data[];
};

/* The header's size: what an object costs beyond its bytes. */
#define TIDE_CACHE_OBJ_HEADER offsetof(struct tide_cache_obj, data)

/*
 * Where a cache's own objects live when it has an arena (cache.c): its
 * objects' hook points at `hook`, whose `arena` is the arena they were
 * allocated in and whose on_free and arg are the cache's obj_hook's. The
 * home outlives the cache while any of its objects lives (an HTTP
 * response may hold one past the node's shutdown of its cache): `refs` is
 * the live objects plus one for the cache, and the last one out closes the
 * arena and frees the home.
 */
typedef struct ti_cache_home {
    tide_cache_obj_hook hook;       /* first: an object's hook is the home */
    atomic_size_t refs;
} ti_cache_home;

/* Make an object of `len` bytes (a copy of `bytes`, which may be NULL when
 * len is 0) in home's arena: strong and weak 1, its hook the home's, one
 * more reference on the home. Returns 0 or TIDE_ENOMEM (the arena's
 * refusal). Cost: one arena allocation, one copy. */
int ti_cache_obj_new_in(ti_cache_home *home, tide_cache_obj **out, const void *bytes, size_t len);

/* Fill `copy` (an arena allocation of the same size as `o`, which some
 * entry holds) with o's length, generation tag and bytes, counts 1 and 1
 * (the entry's reference), and one more reference on the home: the object
 * an evacuation moves an entry to. Cost: one copy of the bytes. */
void ti_cache_obj_copy(tide_cache_obj *copy, const tide_cache_obj *o);

/* Drop one reference on the home; the last closes its arena and frees it. */
void ti_cache_home_release(ti_cache_home *home);

/* Take a weak reference; the caller holds a strong or weak one. */
void tide_cache_obj_weak_retain(tide_cache_obj *o);
/* Drop a weak reference; the last one (with strong == 0) frees. */
void tide_cache_obj_weak_release(tide_cache_obj *o);
/* With a weak reference held: take a strong one if the object lives (strong
 * > 0) and return 1; return 0 when it has died. One CAS loop. */
int tide_cache_obj_try_upgrade(tide_cache_obj *o);
/* With a strong reference just taken by try_upgrade and a weak one held:
 * take one more strong reference and drop the weak one (the cache entry
 * turns strong). Frees nothing: strong > 0 throughout. */
void tide_cache_obj_weak_to_strong(tide_cache_obj *o);
/* Drop a strong reference while also holding a weak one, so nothing can be
 * freed; returns 1 when that was the last strong reference (the object has
 * died). */
int tide_cache_obj_release_held(tide_cache_obj *o);

#endif
