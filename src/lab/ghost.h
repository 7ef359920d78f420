/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost.h: the RSS-ghost lab: allocation scenarios that free memory and
 * measure whether the resident set comes back down, and the allocator
 * variants they are run under.
 *
 * A scenario runs in the calling process, which should be a fresh child
 * made for it (ghost_run.h re-executes the running binary once per
 * scenario and variant): an allocator is chosen when a process starts
 * (LD_PRELOAD, MALLOC_* environment), and a heap already shaped by other
 * work would blur the figures. Each scenario reads RSS from
 * /proc/self/statm at three points: at its start, after allocating (the
 * peak), and after freeing; and it says how many bytes it still holds.
 * The ghost is
 *
 *     ghost = rss_after_free - rss_start - live_bytes
 *
 * as measured, signed: negative when the allocator gave back more than the
 * scenario had added (pages of the start that were returned too, or live
 * bytes that share pages).
 *
 * A variant is an allocator and its settings: the environment and
 * LD_PRELOAD the child must start with, and what the child does after the
 * frees (malloc_trim(0), or a wait for jemalloc's background decay). The
 * names of scenarios and variants are an interface: scripts rely on them.
 * What only the lab part calls (running a scenario, checking a variant,
 * finding a library) is in ghost_impl.h.
 *
 * Errors: functions return 0 or a negative TIDE_E* code with the reason in
 * tide_last_error(). Nothing here exits or prints.
 */
#ifndef TIDE_LAB_GHOST_H
#define TIDE_LAB_GHOST_H

#include <stddef.h>
#include <stdint.h>

/* ---- scenarios ----------------------------------------------------------- */

/* The number of scenarios, and the i-th one's name ("small-batch",
 * "medium-batch", "large-batch", "mixed", "lifetime", "business",
 * "threads", in that order; NULL past the end).
 * Pure; fixed strings. */
size_t tide_lab_ghost_scenario_count(void);
const char *tide_lab_ghost_scenario_name(size_t i);

/* The index of scenario `name`, or -1. Pure. */
int tide_lab_ghost_scenario_find(const char *name);

/* What to do between the last free and the after-free reading. */
typedef struct tide_lab_ghost_after {
    int      trim;      /* 1: release with the allocator's own call
                           (tide_mem_alloc_release: malloc_trim(0) for glibc) */
    unsigned wait_ms;   /* sleep this long first (background purging) */
    int      arena;     /* 1: the scenario's objects live in Tide's segment
                           arena (mem/arena.h: 64 KiB segments, no
                           reserve; the business scenario's cache in its
                           own), which is evacuated and released after the
                           frees, as tided's sweeper does its caches' */
} tide_lab_ghost_after;

typedef struct tide_lab_ghost_sample {
    uint64_t rss_start;        /* bytes, statm, before the first allocation */
    uint64_t rss_peak;         /* the highest reading after an allocation
                                  phase (batches: after each round) */
    uint64_t rss_after_free;   /* after the frees (and the trim or wait) */
    uint64_t live_bytes;       /* bytes requested and still held at the
                                  after-free reading (business: what the
                                  cache counts as its bytes) */
    uint64_t allocated_bytes;  /* bytes requested in all, over all rounds */
    uint64_t objects;          /* allocations made in all */
    unsigned threads;          /* threads that allocated (1 but for
                                  "threads") */
    int      trim_result;      /* the release call's result; -1 when none
                                  was made */
    uint64_t elapsed_us;       /* wall time of the whole scenario */
} tide_lab_ghost_sample;

/* ---- variants ------------------------------------------------------------ */

typedef struct tide_lab_ghost_variant {
    const char *name;       /* "glibc", "glibc-mmap16k", ... */
    const char *summary;    /* one line */
    int         family;     /* the TIDE_MEM_ALLOC_* that must serve malloc */
    const char *preload;    /* the library to LD_PRELOAD (a file name, e.g.
                               "libjemalloc.so.2"), or NULL */
    const char *package;    /* the Debian package that holds it, or NULL */
    const char *env[2];     /* "NAME=value" settings for the child; NULL
                               ends the list early */
    tide_lab_ghost_after after;
    const char *base;       /* the variant this one changes a setting of
                               ("glibc" for glibc-trim and the arena,
                               "jemalloc" for jemalloc-bg), which the
                               conclusions compare it with; NULL for an
                               allocator's defaults */
} tide_lab_ghost_variant;

/* The number of variants and the i-th ("glibc", "glibc-mmap16k",
 * "glibc-trim", "glibc-arena2", "jemalloc", "jemalloc-bg", "tcmalloc",
 * "mimalloc", "arena", in that order); NULL past the end. Pure. */
size_t tide_lab_ghost_variant_count(void);
const tide_lab_ghost_variant *tide_lab_ghost_variant_at(size_t i);

#endif
