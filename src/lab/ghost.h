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
 * "threads", in that order) and a one-line summary. NULL past the end.
 * Pure; fixed strings. */
size_t tide_lab_ghost_scenario_count(void);
const char *tide_lab_ghost_scenario_name(size_t i);
const char *tide_lab_ghost_scenario_summary(size_t i);

/* The index of scenario `name`, or -1. Pure. */
int tide_lab_ghost_scenario_find(const char *name);

/* What to do between the last free and the after-free reading. */
typedef struct tide_lab_ghost_after {
    int      trim;      /* 1: release with the allocator's own call
                           (tide_mem_alloc_release: malloc_trim(0) for glibc) */
    unsigned wait_ms;   /* sleep this long first (background purging) */
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

/*
 * Run scenario `index` at scale `size` (1.0: about 12 MiB freed per
 * scenario; counts scale linearly, at least one object of each kind),
 * then `after`, in this process.
 *
 * Every allocation goes through malloc and is written in full (memset) so
 * that its pages are resident and the compiler cannot drop it. The
 * scenario's own bookkeeping (its arrays of pointers) lives in anonymous
 * mmap regions made and written before rss_start is read, so it is part of
 * the baseline and never touches the allocator under test. The objects
 * still live at the after-free reading are freed before returning.
 *
 * Returns 0 with *out filled; TIDE_EINVAL for an index out of range or a
 * size not in (0, 64]; TIDE_ENOMEM when an allocation or mmap fails;
 * TIDE_EIO / TIDE_ECORRUPT when statm cannot be read.
 * Thread safety: one scenario per process at a time ("threads" starts its
 * own threads and joins them). Cost: at size 1, some 12 to 30 MiB at the
 * peak and tens of milliseconds, plus after.wait_ms.
 */
int tide_lab_ghost_scenario_run(size_t index, double size, const tide_lab_ghost_after *after,
                                tide_lab_ghost_sample *out);

/* rss_after_free - rss_start - live_bytes, signed. Pure. */
int64_t tide_lab_ghost_bytes(const tide_lab_ghost_sample *s);

/* 1 when the memory came back: the ghost is under 10% of the growth from
 * start to peak (or is not positive). Pure. */
int tide_lab_ghost_returned(const tide_lab_ghost_sample *s);

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
} tide_lab_ghost_variant;

/* The number of variants and the i-th ("glibc", "glibc-mmap16k",
 * "glibc-trim", "glibc-arena2", "jemalloc", "jemalloc-bg", "tcmalloc",
 * "mimalloc", in that order); NULL past the end. Pure. */
size_t tide_lab_ghost_variant_count(void);
const tide_lab_ghost_variant *tide_lab_ghost_variant_at(size_t i);

/* The variant named `name`, or NULL. Pure. */
const tide_lab_ghost_variant *tide_lab_ghost_variant_find(const char *name);

/* 1 when `name` names an environment variable that would change which
 * allocator serves malloc or how it behaves (LD_PRELOAD, GLIBC_TUNABLES,
 * MALLOC_*, MALLOC_CONF, TCMALLOC_*, MIMALLOC_*, ...), which the parent
 * removes from every child's environment before adding the variant's own.
 * `name` is "NAME" or "NAME=value". Pure. */
int tide_lab_ghost_env_is_allocator(const char *name);

/*
 * Find the shared library `file` (e.g. "libjemalloc.so.2") where Debian
 * installs it, without dpkg-architecture: first the directory of the libc
 * this process runs on (found with dladdr: /lib/x86_64-linux-gnu on
 * amd64, /lib/aarch64-linux-gnu on arm64), then the same path under /usr,
 * then /usr/local/lib, /usr/lib64, /lib64, /usr/lib and /lib. Writes the
 * first regular file found into path (cap bytes).
 * Returns 0, TIDE_ENOENT when there is none (the message lists the
 * directories searched), or TIDE_EINVAL when the path does not fit.
 * Cost: one dladdr and up to nine stat(2); no allocation.
 */
int tide_lab_ghost_library_find(const char *file, char *path, size_t cap);

/*
 * In the child, before the scenario: check that variant `v` took effect.
 * The allocator serving malloc must be v->family (tide_mem_alloc_detect);
 * for jemalloc-bg, jemalloc must report background_thread=true and
 * dirty_decay_ms=1000; for glibc-mmap16k, one of up to 32 blocks of 32
 * KiB must be served by mmap (mallinfo2's hblks grows) once the top
 * chunk's pad is used up. Writes the allocator's version
 * into version (cap bytes; "" when it has none to give).
 * Returns 0; TIDE_EMISMATCH when the variant did not take effect (the
 * message says what serves malloc instead and how that was found);
 * TIDE_ENOMEM when the probe cannot be allocated.
 * Cost: one allocator detection and a probe malloc or two.
 */
int tide_lab_ghost_variant_check(const tide_lab_ghost_variant *v, char *version, size_t cap);

/* For glibc: the number of malloc arenas (main arena included) now; 0 when
 * malloc is not glibc's or they cannot be counted. Cost: see
 * tide_mem_alloc_stats_read (a walk of every arena, one FILE allocated). */
unsigned tide_lab_ghost_glibc_arenas(void);

#endif
