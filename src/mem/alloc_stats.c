/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_stats.c: what an allocator family says it holds
 * (tide_mem_alloc_stats_read; alloc.h has each family's source and cost).
 *
 * glibc: mallinfo2() and the arena count from malloc_info()'s XML, counted
 * as it streams through a cookie FILE (no buffer of the whole text).
 * jemalloc: stats.* after an "epoch" refresh. tcmalloc: four numeric
 * properties. mimalloc: mi_process_info. The sanitizers: their counters.
 * Then tide_mem_alloc_held_free, which reads what the allocator keeps
 * beyond its live allocations out of those figures.
 *
 * Invariants:
 *   1. Only the member of the asked family is filled; the rest stay 0.
 *   2. *out is written only on success.
 *
 * Never: call a family's function whose symbol was not found.
 */
#include "mem/alloc_impl.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "tide/error.h"
#include "util/err.h"

/* A stdio sink that counts "<heap nr=" in malloc_info's XML as it passes. */
struct heap_counter { size_t matched; unsigned heaps; };
static const char heap_tag[] = "<heap nr=";

static ssize_t heap_count_write(void *cookie, const char *buf, size_t n)
{
    struct heap_counter *hc = cookie;

    for (size_t i = 0; i < n; i++) {
        if (buf[i] == heap_tag[hc->matched]) {
            if (++hc->matched == sizeof heap_tag - 1) {
                hc->heaps++;
                hc->matched = 0;
            }
        } else {
            hc->matched = buf[i] == '<' ? 1 : 0;
        }
    }
    return (ssize_t)n;
}

static int glibc_arena_count(unsigned *out)
{
    struct heap_counter hc = { 0, 0 };
    cookie_io_functions_t io = { .read = NULL, .write = heap_count_write,
                                 .seek = NULL, .close = NULL };
    char vbuf[2048];
    FILE *f;
    int rc;

    f = fopencookie(&hc, "w", io);
    if (f == NULL) return -1;
    setvbuf(f, vbuf, _IOFBF, sizeof vbuf);
    rc = malloc_info(0, f);
    fclose(f);
    if (rc != 0 || hc.heaps == 0) return -1;
    *out = hc.heaps;
    return 0;
}

static int jemalloc_size(const char *name, uint64_t *out)
{
    size_t v = 0, sz = sizeof v;
    int e = ti_alloc_syms.mallctl(name, &v, &sz, NULL, 0);

    if (e != 0)
        return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"%s\"): %s", name, strerror(e));
    *out = v;
    return 0;
}

int tide_mem_alloc_stats_read(int family, tide_mem_alloc_stats *out)
{
    tide_mem_alloc_stats s;
    int rc = 0;

    ti_alloc_get_syms();
    memset(&s, 0, sizeof s);
    s.family = family;
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC: {
        struct mallinfo2 mi = mallinfo2();
        s.glibc.arena = mi.arena;
        s.glibc.in_use = mi.uordblks;
        s.glibc.free = mi.fordblks;
        s.glibc.mmap = mi.hblkhd;
        s.glibc.mmap_count = mi.hblks;
        s.glibc.top_releasable = mi.keepcost;
        s.glibc.has_arenas = glibc_arena_count(&s.glibc.arenas) == 0;
        break;
    }
    case TIDE_MEM_ALLOC_JEMALLOC: {
        uint64_t epoch = 1, page = 0, pdirty = 0, pmuzzy = 0;
        size_t sz = sizeof epoch;
        int e;
        if (!ti_alloc_syms.mallctl) goto absent;
        e = ti_alloc_syms.mallctl("epoch", &epoch, &sz, &epoch, sizeof epoch);
        if (e != 0)
            return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"epoch\"): %s", strerror(e));
        if ((rc = jemalloc_size("stats.allocated", &s.jemalloc.allocated)) ||
            (rc = jemalloc_size("stats.active", &s.jemalloc.active)) ||
            (rc = jemalloc_size("stats.resident", &s.jemalloc.resident)) ||
            (rc = jemalloc_size("stats.mapped", &s.jemalloc.mapped)) ||
            (rc = jemalloc_size("stats.retained", &s.jemalloc.retained)) ||
            (rc = jemalloc_size("stats.metadata", &s.jemalloc.metadata)) ||
            (rc = jemalloc_size("arenas.page", &page)) ||
            (rc = jemalloc_size("stats.arenas." JEMALLOC_ARENAS_ALL ".pdirty", &pdirty)) ||
            (rc = jemalloc_size("stats.arenas." JEMALLOC_ARENAS_ALL ".pmuzzy", &pmuzzy)))
            return rc;
        s.jemalloc.dirty = pdirty * page;
        s.jemalloc.muzzy = pmuzzy * page;
        break;
    }
    case TIDE_MEM_ALLOC_TCMALLOC: {
        size_t v[4] = { 0, 0, 0, 0 };
        static const char *const props[4] = {
            "generic.current_allocated_bytes", "generic.heap_size",
            "tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
        };
        if (!ti_alloc_syms.tc_get_prop) goto absent;
        for (int i = 0; i < 4; i++)
            if (!ti_alloc_syms.tc_get_prop(props[i], &v[i]))
                return tide_err_set(TIDE_EIO, "tcmalloc: property %s is not available", props[i]);
        s.tcmalloc.allocated = v[0];
        s.tcmalloc.heap_size = v[1];
        s.tcmalloc.pageheap_free = v[2];
        s.tcmalloc.pageheap_unmapped = v[3];
        break;
    }
    case TIDE_MEM_ALLOC_MIMALLOC: {
        size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
        if (!ti_alloc_syms.mi_process_info) goto absent;
        ti_alloc_syms.mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit,
                             &faults);
        s.mimalloc.current_rss = rss;
        s.mimalloc.peak_rss = peak_rss;
        s.mimalloc.current_commit = commit;
        s.mimalloc.peak_commit = peak_commit;
        s.mimalloc.page_faults = faults;
        break;
    }
    case TIDE_MEM_ALLOC_SANITIZER:
        if (!ti_alloc_syms.san_allocated || !ti_alloc_syms.san_heap_size || !ti_alloc_syms.san_free) goto absent;
        s.sanitizer.allocated = ti_alloc_syms.san_allocated();
        s.sanitizer.heap_size = ti_alloc_syms.san_heap_size();
        s.sanitizer.free = ti_alloc_syms.san_free();
        break;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator statistics: no statistics for family %s (%d)",
                            tide_mem_alloc_family_name(family), family);
    }
    *out = s;
    return 0;
absent:
    return tide_err_set(TIDE_EINVAL, "allocator statistics: %s's symbols are not in this process",
                        tide_mem_alloc_family_name(family));
}

/* A figure the allocator reports may be read a moment apart from the one
 * it is compared with (jemalloc's resident after its allocated); never
 * let that wrap. */
static uint64_t minus(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

int tide_mem_alloc_held_free(const tide_mem_alloc_stats *st, uint64_t *out)
{
    switch (st->family) {
    case TIDE_MEM_ALLOC_GLIBC:
        *out = st->glibc.free;
        return 1;
    case TIDE_MEM_ALLOC_JEMALLOC:
        *out = minus(st->jemalloc.resident, st->jemalloc.allocated);
        return 1;
    case TIDE_MEM_ALLOC_TCMALLOC:
        *out = minus(minus(st->tcmalloc.heap_size, st->tcmalloc.pageheap_unmapped), st->tcmalloc.allocated);
        return 1;
    case TIDE_MEM_ALLOC_SANITIZER:
        *out = st->sanitizer.free;
        return 1;
    default:
        return 0;
    }
}
