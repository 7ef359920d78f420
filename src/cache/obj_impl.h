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
