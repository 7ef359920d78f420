/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost_impl.h: what ghost.c gives ghost_run.c inside the lab part: the
 * scenario run and its verdict, the variants' lookup and check, the
 * allocator variables and the library search. Not for other parts:
 * ghost.h and ghost_run.h are the interface.
 *
 * Errors: 0 or a negative TIDE_E* code with the reason in tide_last_error().
 */
#ifndef TIDE_LAB_GHOST_IMPL_H
#define TIDE_LAB_GHOST_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "lab/ghost.h"

/* ---- scenarios ---- */

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
int ti_lab_ghost_scenario_run(size_t index, double size, const tide_lab_ghost_after *after,
                                tide_lab_ghost_sample *out);

/* rss_after_free - rss_start - live_bytes, signed. Pure. */
int64_t ti_lab_ghost_bytes(const tide_lab_ghost_sample *s);

/* 1 when the memory came back: the ghost is under 10% of the growth from
 * start to peak (or is not positive). Pure. */
int ti_lab_ghost_returned(const tide_lab_ghost_sample *s);


/* ---- variants ---- */

/* The variant named `name`, or NULL. Pure. */
const tide_lab_ghost_variant *ti_lab_ghost_variant_find(const char *name);

/* 1 when `name` names an environment variable that would change which
 * allocator serves malloc or how it behaves (LD_PRELOAD, GLIBC_TUNABLES,
 * MALLOC_*, MALLOC_CONF, TCMALLOC_*, MIMALLOC_*, ...), which the parent
 * removes from every child's environment before adding the variant's own.
 * `name` is "NAME" or "NAME=value". Pure. */
int ti_lab_ghost_env_is_allocator(const char *name);

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
int ti_lab_ghost_library_find(const char *file, char *path, size_t cap);

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
int ti_lab_ghost_variant_check(const tide_lab_ghost_variant *v, char *version, size_t cap);

/* For glibc: the number of malloc arenas (main arena included) now; 0 when
 * malloc is not glibc's or they cannot be counted. Cost: see
 * tide_mem_alloc_stats_read (a walk of every arena, one FILE allocated). */
unsigned ti_lab_ghost_glibc_arenas(void);


#endif
