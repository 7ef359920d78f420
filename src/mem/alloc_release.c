/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_release.c: asking an allocator family to give free memory back to
 * the kernel, with its own call (tide_mem_alloc_release; alloc.h has each
 * family's call and cost).
 *
 * Invariants:
 *   1. *result is 0 unless the release call was made.
 *
 * Never: call a family's release whose symbol was not found; release from
 * a request path (the node's sweeper calls it, once per round).
 */
#include "mem/alloc_impl.h"

#include <malloc.h>
#include <string.h>

#include "tide/error.h"
#include "util/err.h"

int tide_mem_alloc_release(int family, size_t pad, int *result)
{
    ti_alloc_get_syms();
    *result = 0;
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC:
        *result = malloc_trim(pad);
        return 0;
    case TIDE_MEM_ALLOC_JEMALLOC: {
        int e;
        if (!ti_alloc_syms.mallctl) break;
        e = ti_alloc_syms.mallctl("arena." JEMALLOC_ARENAS_ALL ".purge", NULL, NULL, NULL, 0);
        if (e != 0)
            return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"arena." JEMALLOC_ARENAS_ALL
                                ".purge\"): %s", strerror(e));
        *result = 1;
        return 0;
    }
    case TIDE_MEM_ALLOC_TCMALLOC:
        if (!ti_alloc_syms.tc_release) break;
        ti_alloc_syms.tc_release();
        *result = 1;
        return 0;
    case TIDE_MEM_ALLOC_MIMALLOC:
        if (!ti_alloc_syms.mi_collect) break;
        ti_alloc_syms.mi_collect(true);
        *result = 1;
        return 0;
    case TIDE_MEM_ALLOC_SANITIZER:
        if (ti_alloc_syms.san_purge) {
            ti_alloc_syms.san_purge();
            *result = 1;
        }
        return 0;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator release: no release call for family %s (%d)",
                            tide_mem_alloc_family_name(family), family);
    }
    return tide_err_set(TIDE_EINVAL, "allocator release: %s's symbols are not in this process",
                        tide_mem_alloc_family_name(family));
}
