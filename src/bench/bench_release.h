/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_release.h: what giving a cache's freed memory back to the kernel
 * costs, per GiB, with the node cache's arena (its evacuation and its
 * madvise release) against the allocator's own release (malloc_trim under
 * glibc) with the arena off. `tide bench release` (src/cli/cmd_bench_release.c)
 * runs one measurement per child process, interleaved, and prints them;
 * nothing here prints or forks.
 *
 * One measurement, in the calling process:
 *   1. fill a node cache (tide_cache, as tided makes it: 32-byte keys, no
 *      budget, no age expiry during the run) with objects of random sizes
 *      until their bytes reach opts.bytes;
 *   2. erase free_pct per cent of them, chosen at random;
 *   3. release: with the arena, tide_cache_evacuate with no budget limit
 *      (the sweeper's call: copies out of the least-used segments, then
 *      one madvise per empty segment), then the allocator's trim for what
 *      malloc holds; without it, the allocator's trim (tide_mem_trim, the
 *      sweeper's), timed alone;
 *   4. anonymous RSS (RssAnon + RssShmem) after each step;
 *   5. with the arena, the kernel's floor: a fresh mapping of as many
 *      segments as the release gave back, every page written, then the
 *      same madvise(MADV_DONTNEED) per segment with the same huge-page
 *      advice, timed. No release of those pages can cost less, so the
 *      arena's time over the floor's is what the arena itself adds.
 *
 * Errors: 0 or a negative TIDE_E* code with tide_last_error() set.
 * Thread safety: one measurement per process at a time (it reads the
 * process's RSS and trims its heap).
 * Cost: opts.bytes of objects plus their entries (112 bytes each in the
 * arena, 96 from malloc) and a table of 8 bytes an entry; the floor's
 * mapping comes after the cache is released, and is as large as what the
 * release gave back.
 */
#ifndef TIDE_BENCH_RELEASE_H
#define TIDE_BENCH_RELEASE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_bench_release_opts {
    uint64_t bytes;          /* object bytes to cache, 1 MiB to 1 TiB. 4 GiB */
    uint32_t min_size;       /* object sizes, uniform in [min, max]; 1 to */
    uint32_t max_size;       /* 1 MiB, min <= max. 64 and 4096 */
    unsigned free_pct;       /* per cent of the objects erased, 1 to 99. 90 */
    uint64_t seed;           /* the sizes and the choice of erased. 0 */
    int arena;               /* 1: the objects and entries in the arena. 1 */
    size_t segment_bytes;    /* the arena's segment. 2 MiB */
    int hugepages;           /* 1: the arena's segments in transparent huge
                                pages (cache_arena_hugepages). 0 */
} tide_bench_release_opts;

typedef struct tide_bench_release_result {
    uint64_t objects;        /* objects made */
    uint64_t kept;           /* left after the erase */
    uint64_t counted_bytes;  /* the cache's own count after the erase */
    uint64_t rss_full;       /* anonymous RSS, bytes: the cache filled */
    uint64_t rss_erased;     /* after the erase */
    uint64_t rss_after;      /* after the release */
    uint64_t release_ns;     /* the arena's madvise calls; or the allocator's trim */
    uint64_t evacuate_ns;    /* the arena's walks and copies (0 without it) */
    uint64_t moved_bytes;    /* what the evacuation copied */
    uint64_t released_segments;
    uint64_t trim_ns;        /* with the arena: the allocator's trim after it */
    uint64_t fill_ns, erase_ns;
    uint64_t floor_ns;       /* step 5: the kernel's madvise of floor_bytes */
    uint64_t floor_bytes;    /* released_segments x segment (0 without the arena) */
} tide_bench_release_result;

/* The defaults above. Pure. */
void tide_bench_release_opts_init(tide_bench_release_opts *o);

/* One measurement as described above, into *out. Errors: TIDE_EINVAL for
 * an option out of range (the message names it); TIDE_ENOMEM when an
 * object cannot be cached; the cache's or the release's error. The cache
 * is destroyed before returning. */
int tide_bench_release_measure(const tide_bench_release_opts *o, tide_bench_release_result *out);

#endif
