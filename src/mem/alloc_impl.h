/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_impl.h: what the files of the allocator module (mem/alloc*.c) share:
 * the allocator functions found at run time, and a few helpers. Nothing
 * outside src/mem includes it; alloc.h is the module's contract.
 *
 * ti_alloc_syms is written once, by the resolution inside pthread_once, and
 * read only after ti_alloc_get_syms() returned (alloc.c, invariant 1): a
 * NULL member means that function is not in the process.
 */
#ifndef TIDE_MEM_ALLOC_IMPL_H
#define TIDE_MEM_ALLOC_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/alloc.h"

/* jemalloc 5's MALLCTL_ARENAS_ALL: "arena.4096.*" means every arena. */
#define JEMALLOC_ARENAS_ALL "4096"

typedef int    (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef size_t (*sallocx_fn)(const void *, int);
typedef size_t (*usable_size_fn)(void *);
typedef int    (*tc_get_prop_fn)(const char *, size_t *);
typedef int    (*tc_ownership_fn)(const void *);
typedef void   (*void_fn)(void);
typedef const char *(*tc_version_fn)(int *, int *, const char **);
typedef int    (*mi_version_fn)(void);
typedef void   (*mi_collect_fn)(bool);
typedef bool   (*mi_in_heap_fn)(const void *);
typedef void   (*mi_process_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *,
                                     size_t *, size_t *, size_t *);
typedef int    (*san_ownership_fn)(const volatile void *);
typedef size_t (*san_size_fn)(void);

typedef struct ti_alloc_syms_t {
    void *malloc_addr;          /* the malloc calls bind to */
    void *libc_addr;            /* gnu_get_libc_version, inside libc */
    mallctl_fn mallctl;
    sallocx_fn sallocx;
    usable_size_fn usable_size;
    tc_get_prop_fn tc_get_prop;
    tc_ownership_fn tc_ownership;
    void_fn tc_release;
    tc_version_fn tc_version;
    mi_version_fn mi_version;
    mi_collect_fn mi_collect;
    mi_in_heap_fn mi_in_heap;
    mi_process_info_fn mi_process_info;
    san_ownership_fn san_ownership;
    san_size_fn san_allocated, san_heap_size, san_free;
    void_fn san_purge;
    const char *san_name;       /* which sanitizer runtime is loaded */
} ti_alloc_syms_t;


/* The functions found; valid after ti_alloc_get_syms(). */
extern ti_alloc_syms_t ti_alloc_syms;

/* Resolve the symbols once (pthread_once); every reader calls it first. */
void ti_alloc_get_syms(void);

/* Whether `addr` lies in a loaded segment of the main executable. */
int ti_alloc_in_executable(const void *addr);

/* strlen-bounded copy of `src` (NULL: "") into dst, always terminated when
 * cap > 0, cut to cap - 1 bytes. */
void ti_alloc_copy_str(char *dst, size_t cap, const char *src);

/* Call fn(arg, name, value) for each accepted tide_mem_alloc_mallopt()
 * parameter, in alloc_mallopt.c's fixed order, under its lock. */
void ti_alloc_mallopt_each(void (*fn)(void *arg, const char *name, int value), void *arg);

#endif
