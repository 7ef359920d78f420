/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arena.h: segment memory for long-lived objects, which the allocator
 * cannot strand.
 *
 * Objects live in segments (2 MiB by default) that the arena maps itself,
 * inside one address range it reserves at open. An allocation bumps a
 * pointer in the one open segment; a free only counts: each segment knows
 * the bytes of its live objects, and a segment whose last object is freed
 * is empty and can go back to the kernel whole, with one
 * madvise(MADV_DONTNEED). What a free leaves between live objects is never
 * reused in place; the owner reclaims it by evacuation: the arena walks the
 * least-used segments and asks the owner to move each live object (copy it
 * into a new allocation and point its own structures at the copy), so the
 * old segment empties and is released. Objects above a quarter of a segment
 * get a mapping of their own, unmapped when freed.
 *
 * An owner whose readers hold references (the node cache: an HTTP response
 * holds the object it sends) moves a held object by copying it and freeing
 * the old copy when the last holder lets go; the old segment is released
 * after that, at the next tide_arena_release.
 *
 * Errors are 0 or a negative TIDE_E* code with tide_last_error() set.
 * Thread safety: every call may be made from any thread at any time on the
 * same arena, but tide_arena_close, which no other call may overlap or
 * follow. One mutex guards the arena: an allocation or a free takes it once
 * (uncontended: two atomic operations, a handful of loads and stores
 * inside; threads allocating at once wait for each other there); no
 * system call is ever made under it but the mprotect that brings a segment
 * the arena has never used into use (once per segment of the peak).
 */
#ifndef TIDE_MEM_ARENA_H
#define TIDE_MEM_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_arena tide_arena;

typedef struct tide_arena_opts {
    size_t segment_bytes;   /* a power of two from 64 KiB to 1 GiB; default 2 MiB */
    unsigned reserve;       /* empty segments kept resident for reuse; default 1 */
    size_t limit_bytes;     /* the most resident bytes (segments not released, plus
                               large mappings); 0: none. At least one segment. */
    size_t va_bytes;        /* the address range reserved for segments when there is
                               no limit; default 64 GiB (with a limit: the limit) */
    unsigned evacuate_pct;  /* a segment is evacuated only when its live bytes are at
                               most this percent of it (1..99); default 50 */
    int hugepages;          /* 1: madvise(MADV_HUGEPAGE) each segment brought into use */
} tide_arena_opts;

/* The defaults above. Pure. */
void tide_arena_opts_init(tide_arena_opts *o);

/*
 * Open an arena with `o` (NULL: the defaults). *out is the arena, which the
 * caller closes with tide_arena_close.
 * Errors: TIDE_EINVAL naming the option that is out of range; TIDE_ENOMEM
 * when the address range cannot be reserved or the segment table allocated.
 * Cost: one mmap(PROT_NONE) of the range (plus a segment, trimmed with two
 * munmaps to align it), which takes address space, no memory; one mmap of
 * a table of 48 bytes a segment of the range (its pages are resident only
 * once a segment they describe is used, whatever allocator serves malloc);
 * one calloc of the arena's struct.
 */
int tide_arena_open(tide_arena **out, const tide_arena_opts *o);

/*
 * Unmap everything: the range, every large mapping, the table. Pointers the
 * arena gave out are invalid after it (objects still live are not an
 * error: they go with it). NULL is a no-op.
 */
void tide_arena_close(tide_arena *a);

/*
 * Allocate `size` bytes (0 allowed), 16-byte aligned, uninitialized (a
 * segment released and reused reads as zeros; nothing promises it). *p is
 * the object until tide_arena_free.
 * Errors: TIDE_ENOMEM when the limit would be passed, the range is full, or
 * the kernel refuses a mapping: counted in stats.refusals, the arena
 * unchanged.
 * Cost: at most tide_arena_alloc_size(size) bytes of a segment, under the
 * lock; a segment never used before costs one mprotect (and one madvise
 * with hugepages); a large object (size > segment / 4) one mmap of size
 * plus a page, outside the lock. Page faults when the bytes are written.
 */
int tide_arena_alloc(tide_arena *a, size_t size, void **p);

/*
 * Free object `p` (NULL: nothing): its bytes leave its segment's count, and
 * the segment becomes empty when it was the last. A large object is
 * unmapped, outside the lock. `p` not from this arena, or freed twice, is
 * a bug that stops the process (TIDE_ASSERT).
 * Cost: one lock, O(1); no system call but a large object's munmap.
 */
void tide_arena_free(tide_arena *a, void *p);

/* The bytes an object of `size` takes from the arena: a 16-byte header and
 * the size rounded up to 16 in a segment; the mapping (size plus a page,
 * rounded to pages) for a large one. What an owner counts as the object's
 * cost. Pure. */
size_t tide_arena_alloc_size(const tide_arena *a, size_t size);

/* The size `p` was allocated with. Reads the object's header; no lock (the
 * size never changes while p lives). */
size_t tide_arena_size(const tide_arena *a, const void *p);

/*
 * The owner's word of live object `p`: 0 at allocation. An object is
 * offered to evacuation only while its tag is nonzero, so an owner sets it
 * once the object is filled in and reachable from its structures (the
 * cache: when an entry takes it), and uses it to find that structure from
 * the object. tide_arena_tag reads it; 0 for an object freed. `p` must be
 * live, or be the object of a move callback in progress.
 * Cost: one lock, O(1).
 */
void tide_arena_set_tag(tide_arena *a, void *p, uint64_t tag);
uint64_t tide_arena_tag(tide_arena *a, const void *p);

/*
 * Evacuation. The owner's callback is called for each live object with a
 * nonzero tag in a segment being evacuated, with no lock of the arena held:
 *
 *   rc = move(arg, a, p, size, tag)
 *
 * It returns TIDE_ARENA_MOVED when nothing of the owner points at p any more
 * but a copy it made (tide_arena_alloc on this arena, which never places it
 * in a segment being evacuated) and p is freed, or will be freed when its
 * last holder lets go; TIDE_ARENA_KEPT when p stays where it is (the owner
 * declines, or p died meanwhile, or the copy was refused); or a negative
 * code, which stops the evacuation and is returned. The callback may free
 * p itself. Its segment stays mapped until the evacuation is over, so p's
 * bytes may be read even if another thread frees p during the callback;
 * whether p still belongs to the owner is the owner's to know (under its
 * own lock). An object returned MOVED but not yet freed is not offered
 * again.
 */
enum { TIDE_ARENA_MOVED = 1, TIDE_ARENA_KEPT = 0 };
typedef int (*tide_arena_move_fn)(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag);

typedef struct tide_arena_evac_report {
    size_t segments;        /* segments chosen and walked */
    size_t emptied;         /* of those, empty when walked (released if beyond the reserve) */
    uint64_t moved_objects, moved_bytes;      /* returned MOVED (bytes: sizes) */
    uint64_t kept_objects, kept_bytes;        /* returned KEPT */
    uint64_t released;      /* segments released by the release that follows */
} tide_arena_evac_report;

/*
 * Evacuate the segments that gain most: those not open, whose live bytes
 * are at most evacuate_pct of a segment, lowest live bytes first, while the
 * bytes to move of the segments chosen stay within `budget_bytes` (at
 * least one segment is chosen when any qualifies and fits). A segment whose
 * live objects were all moved already (they wait for their holders) is not
 * chosen: there is nothing in it to move. Then
 * tide_arena_release. `report` (may be NULL) says what happened.
 * Returns 0, or the callback's negative code (the segments walked so far
 * count; the release still runs).
 * Cost: the lock is taken once to choose (O(segments in use), a sort of
 * the candidates), then for every 256 headers walked and once a callback;
 * a request waits at most one such hold, never a copy. The copies are the
 * callback's, outside the lock. Several evacuations may run at once: each
 * chooses only segments no other one has.
 */
int tide_arena_evacuate(tide_arena *a, size_t budget_bytes, tide_arena_move_fn move, void *arg,
                        tide_arena_evac_report *report);

/*
 * Give empty segments beyond the reserve back to the kernel: one
 * madvise(MADV_DONTNEED) each, made outside the lock; the segment stays in
 * the range (mapped, no memory) and is reused before any never used.
 * *released (may be NULL) gets how many. Returns 0, or TIDE_EIO when a
 * madvise fails (the segment stays empty and resident; the others go).
 * Cost: one lock per segment, one madvise: the kernel frees the segment's
 * pages and flushes the TLB (see the figures in docs/ARCHITECTURE.md).
 */
int tide_arena_release(tide_arena *a, size_t *released);

typedef struct tide_arena_stats {
    size_t segment_bytes;
    uint64_t live_bytes;        /* sum of tide_arena_alloc_size of live objects */
    uint64_t live_objects;
    uint64_t resident_bytes;    /* segments not released x segment_bytes + large mappings */
    uint64_t limit_bytes;       /* 0: none */
    size_t seg_open, seg_used, seg_empty, seg_released;  /* segments per state */
    size_t seg_total;           /* segments ever brought into use (the range used) */
    size_t large_objects;
    uint64_t large_bytes;       /* their mappings */
    uint64_t allocations, frees;
    uint64_t evacuated_objects, evacuated_bytes;  /* moved, all evacuations */
    uint64_t releases;          /* segments released, all releases */
    uint64_t release_ns;        /* time spent in their madvise calls */
    uint64_t refusals;          /* allocations refused with TIDE_ENOMEM */
} tide_arena_stats;

/* A consistent copy of the counters (under the lock). O(1). */
void tide_arena_stats_get(tide_arena *a, tide_arena_stats *out);

/*
 * Walk every segment and large mapping and assert the invariants of
 * arena.c's essay (TIDE_ASSERT: a broken one stops the process).
 * Cost: the lock for O(objects + segments); for tests and diagnosis.
 */
void tide_arena_check(tide_arena *a);

#endif
