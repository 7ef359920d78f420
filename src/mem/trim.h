/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trim.h: one instrumented release of free heap memory to the kernel.
 *
 * tide_mem_trim() makes the release call of the allocator that serves
 * malloc (malloc_trim(0) for glibc; see tide_mem_alloc_release) and measures
 * it: RSS before and after from /proc/self/statm, the wall time of the call
 * on CLOCK_MONOTONIC, and the minor and major page faults the calling thread
 * took during it. The sweeper calls it once after every sweep of every cache
 * and logs tide_mem_trim_format()'s line at debug level; this module does
 * not log.
 *
 * There is no pad argument and no knob: only glibc's main heap honours a
 * pad, and on real nodes 0, 256 KiB, 1 MiB and 16 MiB made no measurable
 * difference.
 */
#ifndef TIDE_MEM_TRIM_H
#define TIDE_MEM_TRIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_mem_trim_report {
    int      family;       /* TIDE_MEM_ALLOC_* of the allocator released */
    int      result;       /* malloc_trim's return (1 released, 0 nothing to
                              release); 1 for the other families when the
                              call was made; 0 when it failed */
    uint64_t rss_before;   /* bytes, statm, just before the call; 0 when
                              statm could not be read */
    uint64_t rss_after;    /* bytes, statm, just after the call */
    int64_t  rss_delta;    /* rss_after - rss_before (negative: released) */
    uint64_t duration_ns;  /* wall time of the release call alone */
    uint64_t minflt;       /* minor faults of the calling thread during it */
    uint64_t majflt;       /* major faults of the calling thread during it */
} tide_mem_trim_report;

/*
 * Release free memory with the allocator's own call, measured.
 *
 * Fills *r in every case (zeroed first). Returns 0, or the first error:
 * TIDE_EIO / TIDE_ECORRUPT when statm or getrusage could not be read (the
 * release is still made; the unread figure is 0), or the error of
 * tide_mem_alloc_release (TIDE_EINVAL for an allocator with no release
 * call, TIDE_EIO when jemalloc's purge fails; result is then 0).
 *
 * Thread safety: any thread; the faults counted are the calling thread's
 * (the release runs on it), and two trims at once are allowed but each then
 * sees RSS moved by the other. Cost: the release itself (for glibc, a walk
 * of every arena under its lock: tens to hundreds of ms on a large heap,
 * during which other threads' mallocs in that arena wait) plus two
 * open/read/close of statm, two getrusage and four clock_gettime. Allocates
 * nothing (the first call of the process also detects the allocator, which
 * mallocs and frees one probe block; see tide_mem_alloc_family).
 */
int tide_mem_trim(tide_mem_trim_report *r);

/* tide_mem_trim with glibc's malloc_trim(pad): `pad` bytes stay at the top
 * of the main heap for the next allocations (tide_mem_alloc_release).
 * tide_mem_trim is this with 0. */
int tide_mem_trim_pad(size_t pad, tide_mem_trim_report *r);

/*
 * The report as one line, exactly:
 *   trim allocator=glibc result=1 rss_before=<kB>kB rss_after=<kB>kB delta=<kB>kB duration_us=<n> minflt=<n> majflt=<n>
 * with sizes in KiB (bytes / 1024; delta = rss_after/1024 - rss_before/1024,
 * signed, so the line adds up as printed) and the duration in whole
 * microseconds. Written to buf (cap
 * bytes, always terminated when cap > 0). Returns the length the whole line
 * needs, like snprintf (>= cap means it was cut; 160 bytes always suffice).
 * No allocation; thread-safe.
 */
int tide_mem_trim_format(const tide_mem_trim_report *r, char *buf, size_t cap);

#endif
