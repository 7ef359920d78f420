/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arena.c: segment memory that the owner compacts and the kernel gets back.
 *
 * Why: a cache that mallocs each object and later frees most of them leaves
 * the survivors scattered over pages no allocator can return (each page
 * keeps one live object), so resident memory stays several times what is
 * live. Here the owner can move the survivors, and memory goes back to the
 * kernel a whole segment at a time.
 *
 * Layout. At open the arena reserves one range of address space with
 * mmap(PROT_NONE), aligned to the segment size, and a table with one
 * struct seg per segment of the range, outside it: a segment's pages hold
 * objects only, so a released segment holds nothing the arena needs. The
 * segment of a pointer is (p - base) >> shift, with no lookup. Segments are
 * brought into use in address order (mprotect to read-write, the first time
 * only) and then move between states:
 *
 *   open       the one segment allocations bump into (top grows);
 *   used       closed, holding live objects; loses them as they are freed;
 *   empty      no live object, resident; on the empty stack, reused first;
 *   releasing  being given back by a release, outside the lock;
 *   released   madvise(MADV_DONTNEED) done: no memory, still in the range;
 *              on the released stack, reused before a segment never used.
 *
 * An object in a segment is a 16-byte header (its size, its state: live,
 * moved, free, and the owner's tag) and its bytes rounded up to 16, so the headers of a segment
 * tile [0, top) and a walk finds every object. An object above a quarter
 * of a segment gets a mapping of its own with a 64-byte header (on a
 * doubly linked list), unmapped when it is freed.
 *
 * Evacuation pins the segments it chooses (not open; live bytes at most
 * evacuate_pct of the segment, fewest first, within the byte budget) and
 * walks them, offering each live object the owner has tagged to its
 * callback with the lock dropped. The tag (a word of the header, 0 at
 * allocation) is how the owner finds its own structure from an object,
 * and a nonzero tag says the object is published: one still being filled
 * in by the thread that allocated it is never offered. A pinned segment receives no allocation (it is not open and
 * is never made open while pinned) and is not released until it is
 * unpinned, so the callback can read an object another thread frees during
 * the callback. An object the owner moved but still keeps for a holder is
 * marked moved and not offered again.
 *
 * Release vs unmap: an empty segment is released with madvise(MADV_DONTNEED)
 * and keeps its place in the range. munmap would also return the address
 * space, but a segment mapped again needs a fresh aligned mapping (three
 * system calls) and a new VMA each time; with the range reserved once, a
 * released segment comes back by page faults alone, and the kernel merges
 * the range's segments into few VMAs. The address space kept is the peak
 * number of segments ever used, which costs no memory.
 *
 * Invariants (tide_arena_check asserts them):
 *   1. Every live object is in exactly one place: between 0 and top of the
 *      segment (p - base) >> shift, where the headers tile [0, top), or on
 *      the large list; nowhere else.
 *   2. A segment's live and objects are the sums of tide_arena_alloc_size
 *      and the count over its headers in state live or moved, and its
 *      moved the sum over those in state moved; the arena's
 *      live_bytes and live_objects are the sums over segments and large
 *      mappings.
 *   3. resident = segments open, used, empty or releasing x segment_bytes
 *      + large mappings (made or being made), and resident <= limit when a
 *      limit is set: a step that would pass it is refused.
 *   4. A released segment holds no reachable object: live, objects and top
 *      are 0, it is on the released stack only, and its pages read zeros.
 *   5. At most one segment is open. A pinned segment is used, never open,
 *      never on the empty stack: no copy lands in a segment being
 *      evacuated, and none is released while its evacuation runs.
 *   6. A used segment that is not pinned has live > 0 (the free that took
 *      it to 0 made it empty); an empty one has live 0 and is on the empty
 *      stack; n_state[] counts the segments in each state.
 *   7. Headers change only under the lock, and in a used segment only their
 *      state does: top grows only while the segment is open.
 *
 * Never: call the owner's callback, madvise, mmap or munmap with the lock
 *   held (the one system call made under it is the mprotect that brings a
 *   never-used segment into use); reuse the space of a freed object in
 *   place; release a pinned segment.
 */
#include "mem/arena.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"

#define HDR         16u                 /* an object's header in a segment */
#define LARGE_HDR   64u                 /* a large mapping's header */
#define WALK_BATCH  256u                /* headers walked per hold of the lock */
#define NONE        UINT32_MAX          /* no segment (stacks, open) */
#define SEG_MIN     ((size_t)64 << 10)
#define SEG_MAX     ((size_t)1 << 30)

enum { OBJ_FREE = 0x65657246u, OBJ_LIVE = 0x6576694cu, OBJ_MOVED = 0x65766f4du,
       LARGE_MAGIC = 0x6772614cu };

enum { SEG_FRESH, SEG_OPEN, SEG_USED, SEG_EMPTY, SEG_RELEASING, SEG_RELEASED, SEG_STATES };

typedef struct hdr {
    uint32_t size;                      /* what tide_arena_alloc was asked */
    uint32_t state;                     /* OBJ_* */
    uint64_t tag;                       /* the owner's word; 0: not offered */
} hdr;

typedef struct large {
    uint32_t magic;
    uint64_t tag;
    size_t size, map_len;
    struct large *prev, *next;
} large;

typedef struct seg {
    uint32_t state;                     /* SEG_* */
    uint32_t pinned;                    /* chosen by an evacuation running */
    uint32_t next;                      /* on the empty or released stack */
    size_t top, live, objects;
    size_t moved;                       /* of live: objects moved, kept for a holder */
} seg;

struct tide_arena {
    pthread_mutex_t mu;
    tide_arena_opts o;
    unsigned char *base;                /* the range, segment-aligned */
    size_t range, nsegs, fresh;         /* segments [0, fresh) have been used */
    unsigned shift;
    seg *segs;                          /* nsegs of them, in a mapping of its own */
    size_t segs_len;                    /* that mapping's length */
    uint32_t open, empty, released;     /* the open segment, the two stacks */
    size_t n_state[SEG_STATES];
    large *larges;
    size_t large_pending;               /* mapping bytes reserved, not yet mapped */
    tide_arena_stats st;                /* the counters; the state counts are n_state */
};

_Static_assert(sizeof(hdr) == HDR, "an object header is 16 bytes");
_Static_assert(sizeof(large) <= LARGE_HDR, "a large header fits its 64 bytes");

void tide_arena_opts_init(tide_arena_opts *o)
{
    memset(o, 0, sizeof *o);
    o->segment_bytes = (size_t)2 << 20;
    o->reserve = 1;
    o->va_bytes = (size_t)64 << 30;
    o->evacuate_pct = 50;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) & ~(to - 1);
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

static size_t large_len(size_t size)
{
    return round_up(LARGE_HDR + size, page_size());
}

size_t tide_arena_alloc_size(const tide_arena *a, size_t size)
{
    if (size > a->o.segment_bytes / 4) return large_len(size);
    return HDR + round_up(size, 16);
}

static int opts_check(const tide_arena_opts *o)
{
    size_t s = o->segment_bytes;

    if (s < SEG_MIN || s > SEG_MAX || (s & (s - 1)) != 0)
        return tide_err_set(TIDE_EINVAL, "arena: segment_bytes %zu is not a power of two from "
                            "64 KiB to 1 GiB", s);
    if (o->limit_bytes != 0 && o->limit_bytes < s)
        return tide_err_set(TIDE_EINVAL, "arena: limit_bytes %zu is below one segment (%zu)",
                            o->limit_bytes, s);
    if (o->limit_bytes == 0 && (o->va_bytes < s || o->va_bytes > ((size_t)1 << 46)))
        return tide_err_set(TIDE_EINVAL, "arena: va_bytes %zu is not from one segment (%zu) "
                            "to 64 TiB", o->va_bytes, s);
    if (o->evacuate_pct < 1 || o->evacuate_pct > 99)
        return tide_err_set(TIDE_EINVAL, "arena: evacuate_pct %u is not from 1 to 99",
                            o->evacuate_pct);
    if (o->reserve > (1u << 20))
        return tide_err_set(TIDE_EINVAL, "arena: reserve %u segments is more than 2^20",
                            o->reserve);
    return 0;
}

/* Reserve `range` bytes of address space aligned to `align`: map range +
 * align and trim both ends. */
/* The bytes of a table of n segments' records, rounded up to pages. */
static size_t table_len(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    return (n * sizeof(seg) + page - 1) / page * page;
}

static int reserve_range(size_t range, size_t align, unsigned char **out)
{
    size_t len = range + align, head;
    unsigned char *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                            -1, 0);

    if (m == MAP_FAILED)
        return tide_err_sys(errno, "arena: mmap of %zu bytes of address space", len);
    head = round_up((size_t)(uintptr_t)m, align) - (size_t)(uintptr_t)m;
    if (head) munmap(m, head);
    if (align - head) munmap(m + head + range, align - head);
    *out = m + head;
    return 0;
}

int tide_arena_open(tide_arena **out, const tide_arena_opts *o)
{
    tide_arena_opts dflt;
    tide_arena *a = NULL;
    int rc, mu = 0;

    if (o == NULL) {
        tide_arena_opts_init(&dflt);
        o = &dflt;
    }
    rc = opts_check(o);
    if (rc) goto out;
    a = calloc(1, sizeof *a);
    if (a == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "arena: calloc of %zu bytes failed", sizeof *a);
        goto out;
    }
    a->o = *o;
    a->shift = (unsigned)__builtin_ctzl(o->segment_bytes);
    /* With a limit, no more segments than it allows; else va_bytes' worth. */
    a->range = (o->limit_bytes ? o->limit_bytes : o->va_bytes) >> a->shift << a->shift;
    a->nsegs = a->range >> a->shift;
    a->n_state[SEG_FRESH] = a->nsegs;
    a->open = a->empty = a->released = NONE;
    a->st.segment_bytes = o->segment_bytes;
    a->st.limit_bytes = o->limit_bytes;
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "arena: pthread_mutex_init failed");
        goto out;
    }
    mu = 1;
    /* Mapped, not calloc'd: a page of the table is resident only once a
     * segment it describes is used, whichever allocator serves malloc (some
     * zero a calloc'd block by writing it, which would make the whole table
     * resident at open: 48 MiB for 64 GiB of 64 KiB segments). */
    a->segs_len = table_len(a->nsegs);
    a->segs = mmap(NULL, a->segs_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a->segs == MAP_FAILED) {
        a->segs = NULL;
        rc = tide_err_set(TIDE_ENOMEM, "arena: mapping a table of %zu segments failed: %s", a->nsegs,
                          strerror(errno));
        goto out;
    }
    rc = reserve_range(a->range, o->segment_bytes, &a->base);
    if (rc) goto out;
    *out = a;
out:
    if (rc && a) {
        if (mu) pthread_mutex_destroy(&a->mu);
        if (a->segs) munmap(a->segs, a->segs_len);
        free(a);
    }
    return rc;
}

void tide_arena_close(tide_arena *a)
{
    large *l, *next;

    if (a == NULL) return;
    for (l = a->larges; l != NULL; l = next) {
        next = l->next;
        munmap(l, l->map_len);
    }
    munmap(a->base, a->range);
    pthread_mutex_destroy(&a->mu);
    munmap(a->segs, a->segs_len);
    free(a);
}

/* ---- segments (all under the lock) ---- */

static unsigned char *seg_base(const tide_arena *a, size_t i)
{
    return a->base + (i << a->shift);
}

static void set_state(tide_arena *a, size_t i, uint32_t state)
{
    a->n_state[a->segs[i].state]--;
    a->n_state[state]++;
    a->segs[i].state = state;
}

static void push(tide_arena *a, uint32_t *stack, size_t i, uint32_t state)
{
    set_state(a, i, state);
    a->segs[i].next = *stack;
    *stack = (uint32_t)i;
}

static uint32_t pop(tide_arena *a, uint32_t *stack)
{
    uint32_t i = *stack;

    if (i != NONE) {
        *stack = a->segs[i].next;
        a->segs[i].next = NONE;
    }
    return i;
}

static uint64_t resident(const tide_arena *a)
{
    size_t n = a->n_state[SEG_OPEN] + a->n_state[SEG_USED] + a->n_state[SEG_EMPTY] +
               a->n_state[SEG_RELEASING];
    return (uint64_t)n * a->o.segment_bytes + a->st.large_bytes + a->large_pending;
}

/* Room for `bytes` more resident under the limit. */
static int fits(const tide_arena *a, size_t bytes)
{
    return a->o.limit_bytes == 0 || resident(a) + bytes <= a->o.limit_bytes;
}

static int refuse(tide_arena *a, const char *why, size_t size)
{
    a->st.refusals++;
    return tide_err_set(TIDE_ENOMEM, "arena: allocation of %zu bytes refused: %s", size, why);
}

/* Close the open segment (used, or empty when everything in it was freed)
 * and open another: an empty one, a released one, or one never used. */
static int next_open(tide_arena *a, size_t size)
{
    uint32_t i;

    if (a->open != NONE) {
        i = a->open;
        a->open = NONE;
        if (a->segs[i].live == 0) {
            a->segs[i].top = 0;
            push(a, &a->empty, i, SEG_EMPTY);
        } else {
            set_state(a, i, SEG_USED);
        }
    }
    i = pop(a, &a->empty);
    if (i == NONE) {
        if (!fits(a, a->o.segment_bytes)) return refuse(a, "the limit is reached", size);
        i = pop(a, &a->released);
    }
    if (i == NONE) {
        if (a->fresh == a->nsegs) return refuse(a, "the arena's address range is full", size);
        i = (uint32_t)a->fresh;
        if (mprotect(seg_base(a, i), a->o.segment_bytes, PROT_READ | PROT_WRITE) != 0)
            return refuse(a, "mprotect of a new segment failed", size);
        if (a->o.hugepages) (void)madvise(seg_base(a, i), a->o.segment_bytes, MADV_HUGEPAGE);
        a->fresh++;
    }
    a->segs[i].top = 0;
    set_state(a, i, SEG_OPEN);
    a->open = i;
    return 0;
}

/* An allocation (objects 1) or a free (-1) of `bytes` (negative for a
 * free) in the arena's counters. */
static void count(tide_arena *a, int64_t bytes, int objects)
{
    a->st.live_bytes += (uint64_t)bytes;
    a->st.live_objects += (uint64_t)(int64_t)objects;
    if (objects > 0) a->st.allocations++;
    else a->st.frees++;
}

/* ---- large objects ---- */

static int alloc_large(tide_arena *a, size_t size, void **p)
{
    size_t len;
    large *l;
    int rc = 0;

    if (size > SIZE_MAX / 2) {
        pthread_mutex_lock(&a->mu);
        rc = refuse(a, "more than can be mapped", size);
        pthread_mutex_unlock(&a->mu);
        return rc;
    }
    len = large_len(size);
    pthread_mutex_lock(&a->mu);
    if (!fits(a, len)) rc = refuse(a, "the limit is reached", size);
    else a->large_pending += len;
    pthread_mutex_unlock(&a->mu);
    if (rc) return rc;
    l = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_mutex_lock(&a->mu);
    a->large_pending -= len;
    if (l == MAP_FAILED) {
        rc = refuse(a, "mmap failed", size);
        goto out;
    }
    l->magic = LARGE_MAGIC;
    l->tag = 0;
    l->size = size;
    l->map_len = len;
    l->prev = NULL;
    l->next = a->larges;
    if (a->larges) a->larges->prev = l;
    a->larges = l;
    a->st.large_objects++;
    a->st.large_bytes += len;
    count(a, (int64_t)len, 1);
    *p = (unsigned char *)l + LARGE_HDR;
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static void free_large(tide_arena *a, void *p)
{
    large *l = (large *)((unsigned char *)p - LARGE_HDR);

    pthread_mutex_lock(&a->mu);
    TIDE_ASSERT(l->magic == LARGE_MAGIC);       /* 1: p is a live large object */
    l->magic = 0;
    if (l->prev) l->prev->next = l->next;
    else a->larges = l->next;
    if (l->next) l->next->prev = l->prev;
    a->st.large_objects--;
    a->st.large_bytes -= l->map_len;
    count(a, -(int64_t)l->map_len, -1);
    pthread_mutex_unlock(&a->mu);
    munmap(l, l->map_len);
}

static int in_range(const tide_arena *a, const void *p)
{
    uintptr_t u = (uintptr_t)p, b = (uintptr_t)a->base;
    return u >= b && u - b < a->range;
}

/* ---- allocation ---- */

int tide_arena_alloc(tide_arena *a, size_t size, void **p)
{
    size_t total;
    seg *s;
    hdr *h;
    int rc = 0;

    if (size > a->o.segment_bytes / 4) return alloc_large(a, size, p);
    total = HDR + round_up(size, 16);
    pthread_mutex_lock(&a->mu);
    if (a->open == NONE || a->segs[a->open].top + total > a->o.segment_bytes) {
        rc = next_open(a, size);
        if (rc) goto out;
    }
    s = &a->segs[a->open];
    h = (hdr *)(seg_base(a, a->open) + s->top);
    h->size = (uint32_t)size;
    h->state = OBJ_LIVE;
    h->tag = 0;
    s->top += total;
    s->live += total;
    s->objects++;
    count(a, (int64_t)total, 1);
    *p = h + 1;
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

void tide_arena_free(tide_arena *a, void *p)
{
    hdr *h;
    size_t i, total;
    seg *s;

    if (p == NULL) return;
    h = (hdr *)p - 1;           /* after the NULL check: NULL - 1 is undefined */
    if (!in_range(a, p)) {
        free_large(a, p);
        return;
    }
    i = (size_t)((unsigned char *)p - a->base) >> a->shift;
    s = &a->segs[i];
    pthread_mutex_lock(&a->mu);
    TIDE_ASSERT(s->state == SEG_OPEN || s->state == SEG_USED);            /* 1 */
    TIDE_ASSERT(h->state == OBJ_LIVE || h->state == OBJ_MOVED);         /* no double free */
    total = HDR + round_up(h->size, 16);
    if (h->state == OBJ_MOVED) s->moved -= total;
    h->state = OBJ_FREE;
    TIDE_ASSERT(s->live >= total && s->objects > 0);                    /* 2 */
    s->live -= total;
    s->objects--;
    count(a, -(int64_t)total, -1);
    if (s->live == 0 && s->state == SEG_USED && !s->pinned) {           /* 6 */
        s->top = 0;
        push(a, &a->empty, i, SEG_EMPTY);
    }
    pthread_mutex_unlock(&a->mu);
}

/* The tag word of live object p, large or not. */
static uint64_t *tag_of(const tide_arena *a, const void *p)
{
    if (!in_range(a, p)) {
        large *l = (large *)((const unsigned char *)p - LARGE_HDR);
        TIDE_ASSERT(l->magic == LARGE_MAGIC);
        return &l->tag;
    }
    return &((hdr *)p - 1)->tag;
}

void tide_arena_set_tag(tide_arena *a, void *p, uint64_t tag)
{
    pthread_mutex_lock(&a->mu);
    if (in_range(a, p))
        TIDE_ASSERT(((hdr *)p - 1)->state == OBJ_LIVE || ((hdr *)p - 1)->state == OBJ_MOVED);
    *tag_of(a, p) = tag;
    pthread_mutex_unlock(&a->mu);
}

uint64_t tide_arena_tag(tide_arena *a, const void *p)
{
    uint64_t tag;

    pthread_mutex_lock(&a->mu);
    if (in_range(a, p) && ((const hdr *)p - 1)->state == OBJ_FREE) tag = 0;
    else tag = *tag_of(a, p);
    pthread_mutex_unlock(&a->mu);
    return tag;
}

size_t tide_arena_size(const tide_arena *a, const void *p)
{
    if (!in_range(a, p)) return ((const large *)((const unsigned char *)p - LARGE_HDR))->size;
    return ((const hdr *)p - 1)->size;
}

/* ---- release ---- */

int tide_arena_release(tide_arena *a, size_t *released)
{
    size_t n = 0;
    uint32_t i;
    int rc = 0;

    for (;;) {
        uint64_t t0, ns;
        int r;

        pthread_mutex_lock(&a->mu);
        i = a->n_state[SEG_EMPTY] > a->o.reserve ? pop(a, &a->empty) : NONE;
        if (i != NONE) set_state(a, i, SEG_RELEASING);
        pthread_mutex_unlock(&a->mu);
        if (i == NONE) break;
        t0 = tide_clock_mono_ns();
        r = madvise(seg_base(a, i), a->o.segment_bytes, MADV_DONTNEED);
        ns = tide_clock_mono_ns() - t0;
        if (r != 0) rc = tide_err_sys(errno, "arena: madvise(MADV_DONTNEED) of segment %u", i);
        pthread_mutex_lock(&a->mu);
        if (rc == 0) {
            push(a, &a->released, i, SEG_RELEASED);
            a->st.releases++;
            a->st.release_ns += ns;
            n++;
        } else {
            push(a, &a->empty, i, SEG_EMPTY);
        }
        pthread_mutex_unlock(&a->mu);
        if (rc) break;
    }
    if (released) *released = n;
    return rc;
}

/* ---- evacuation ---- */

typedef struct cand {
    size_t live;
    uint32_t i;
} cand;

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;

    if (a->live != b->live) return a->live < b->live ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* A segment to evacuate: used, not pinned, at most evacuate_pct live, and
 * with something to move (not only objects moved already, which wait for
 * their holders). */
static int worth(const tide_arena *a, const seg *s)
{
    return s->state == SEG_USED && !s->pinned && s->live > s->moved &&
           s->live * 100 <= (size_t)a->o.evacuate_pct * a->o.segment_bytes;
}

/* Choose and pin the segments to evacuate into *out (malloc'd, *n of them;
 * the caller frees it). Collects under the lock, sorts outside it, and pins
 * under it what still qualifies, fewest live bytes first, within budget. */
static int choose(tide_arena *a, size_t budget, cand **out, size_t *n)
{
    size_t cap, k = 0, m = 0, sum = 0;
    cand *c;

    pthread_mutex_lock(&a->mu);
    cap = a->fresh;
    pthread_mutex_unlock(&a->mu);
    c = malloc((cap ? cap : 1) * sizeof *c);
    if (c == NULL) return tide_err_set(TIDE_ENOMEM, "arena: malloc of %zu candidates failed", cap);
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < cap; i++)
        if (worth(a, &a->segs[i])) c[k++] = (cand){ a->segs[i].live, (uint32_t)i };
    pthread_mutex_unlock(&a->mu);
    qsort(c, k, sizeof *c, cand_cmp);
    pthread_mutex_lock(&a->mu);
    for (size_t j = 0; j < k; j++) {
        seg *s = &a->segs[c[j].i];
        if (!worth(a, s) || sum + (s->live - s->moved) > budget) continue;
        sum += s->live - s->moved;
        s->pinned = 1;
        c[m++] = c[j];
    }
    pthread_mutex_unlock(&a->mu);
    *out = c;
    *n = m;
    return 0;
}

/* Under the lock: from *off, the next live object of segment i within
 * WALK_BATCH headers; NULL when there is none (then *off is at top, or
 * WALK_BATCH headers further on). */
static hdr *next_live(tide_arena *a, size_t i, size_t *off)
{
    const seg *s = &a->segs[i];

    for (unsigned k = 0; k < WALK_BATCH && *off < s->top; k++) {
        hdr *h = (hdr *)(seg_base(a, i) + *off);
        if (h->state == OBJ_LIVE && h->tag != 0) return h;
        *off += HDR + round_up(h->size, 16);
    }
    return NULL;
}

/* Offer every live object of pinned segment i to `move`, then unpin it. */
static int walk(tide_arena *a, size_t i, tide_arena_move_fn move, void *arg,
                tide_arena_evac_report *r)
{
    size_t off = 0, top;
    int rc = 0;

    for (;;) {
        hdr *h;
        size_t size;
        uint64_t tag;
        int res;

        pthread_mutex_lock(&a->mu);
        top = a->segs[i].top;
        h = next_live(a, i, &off);
        size = h ? h->size : 0;
        tag = h ? h->tag : 0;
        pthread_mutex_unlock(&a->mu);
        if (h == NULL) {
            if (off >= top) break;
            continue;
        }
        res = move(arg, a, h + 1, size, tag);
        pthread_mutex_lock(&a->mu);
        if (res == TIDE_ARENA_MOVED) {
            if (h->state == OBJ_LIVE) {
                h->state = OBJ_MOVED;
                a->segs[i].moved += HDR + round_up(size, 16);
            }
            r->moved_objects++;
            r->moved_bytes += size;
            a->st.evacuated_objects++;
            a->st.evacuated_bytes += size;
        } else if (res == TIDE_ARENA_KEPT) {
            r->kept_objects++;
            r->kept_bytes += size;
        }
        pthread_mutex_unlock(&a->mu);
        if (res < 0) {
            rc = res;
            break;
        }
        off += HDR + round_up(size, 16);
    }
    pthread_mutex_lock(&a->mu);
    a->segs[i].pinned = 0;
    if (a->segs[i].live == 0) {                                           /* 6 */
        a->segs[i].top = 0;
        push(a, &a->empty, i, SEG_EMPTY);
        r->emptied++;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int tide_arena_evacuate(tide_arena *a, size_t budget_bytes, tide_arena_move_fn move, void *arg,
                        tide_arena_evac_report *report)
{
    tide_arena_evac_report r;
    cand *c = NULL;
    size_t n = 0, released = 0, j = 0;
    int rc, rel;

    memset(&r, 0, sizeof r);
    rc = choose(a, budget_bytes, &c, &n);
    if (rc) goto out;
    for (; j < n && rc == 0; j++) {
        rc = walk(a, c[j].i, move, arg, &r);
        r.segments++;
    }
    pthread_mutex_lock(&a->mu);
    for (; j < n; j++) a->segs[c[j].i].pinned = 0;   /* not walked: a callback failed */
    pthread_mutex_unlock(&a->mu);
    rel = tide_arena_release(a, &released);
    r.released = released;
    if (rc == 0) rc = rel;
out:
    free(c);
    if (report) *report = r;
    return rc;
}

/* ---- counters and checks ---- */

void tide_arena_stats_get(tide_arena *a, tide_arena_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    out->resident_bytes = resident(a);
    out->seg_open = a->n_state[SEG_OPEN];
    out->seg_used = a->n_state[SEG_USED];
    out->seg_empty = a->n_state[SEG_EMPTY];
    out->seg_released = a->n_state[SEG_RELEASED];
    out->seg_total = a->fresh;
    pthread_mutex_unlock(&a->mu);
}

/* The length of stack `top`, each member asserted in `state`. */
static size_t stack_len(const tide_arena *a, uint32_t top, uint32_t state)
{
    size_t n = 0;

    for (uint32_t i = top; i != NONE; i = a->segs[i].next, n++) {
        TIDE_ASSERT(i < a->fresh && a->segs[i].state == state);
        TIDE_ASSERT(n <= a->fresh);                                     /* no cycle */
    }
    return n;
}

/* Walk segment i's headers (invariants 1, 2, 7); adds to *live, *objects. */
static void check_seg(const tide_arena *a, size_t i, uint64_t *live, uint64_t *objects)
{
    const seg *s = &a->segs[i];
    size_t off = 0, sum = 0, count = 0, moved = 0;

    while (off < s->top) {
        const hdr *h = (const hdr *)(seg_base(a, i) + off);
        size_t total = HDR + round_up(h->size, 16);
        TIDE_ASSERT(h->state == OBJ_LIVE || h->state == OBJ_MOVED || h->state == OBJ_FREE);
        TIDE_ASSERT(h->size <= a->o.segment_bytes / 4);
        if (h->state != OBJ_FREE) {
            sum += total;
            count++;
        }
        if (h->state == OBJ_MOVED) moved += total;
        off += total;
    }
    TIDE_ASSERT(off == s->top && s->top <= a->o.segment_bytes);         /* 1: they tile */
    TIDE_ASSERT(sum == s->live && count == s->objects && moved == s->moved);   /* 2 */
    *live += sum;
    *objects += count;
}

void tide_arena_check(tide_arena *a)
{
    size_t n[SEG_STATES] = { 0 }, large_n = 0;
    uint64_t live = 0, objects = 0, large_bytes = 0;

    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->fresh; i++) {
        const seg *s = &a->segs[i];
        TIDE_ASSERT(s->state != SEG_FRESH && s->state < SEG_STATES);
        n[s->state]++;
        if (s->pinned) TIDE_ASSERT(s->state == SEG_USED);               /* 5 */
        if (s->state == SEG_OPEN) TIDE_ASSERT(a->open == i);            /* 5 */
        if (s->state == SEG_USED && !s->pinned) TIDE_ASSERT(s->live > 0);   /* 6 */
        if (s->state == SEG_EMPTY || s->state == SEG_RELEASING)
            TIDE_ASSERT(s->live == 0 && s->objects == 0 && s->top == 0 && s->moved == 0);  /* 6 */
        if (s->state == SEG_RELEASED) {                                 /* 4 */
            TIDE_ASSERT(s->live == 0 && s->objects == 0 && s->top == 0);
            TIDE_ASSERT(*(const volatile uint64_t *)seg_base(a, i) == 0);
        }
        if (s->state == SEG_OPEN || s->state == SEG_USED) check_seg(a, i, &live, &objects);
    }
    if (a->fresh < a->nsegs) TIDE_ASSERT(a->segs[a->fresh].state == SEG_FRESH);
    TIDE_ASSERT(n[SEG_OPEN] <= 1 && (n[SEG_OPEN] == 1) == (a->open != NONE));  /* 5 */
    for (int k = SEG_OPEN; k < SEG_STATES; k++) TIDE_ASSERT(n[k] == a->n_state[k]);  /* 6 */
    TIDE_ASSERT(stack_len(a, a->empty, SEG_EMPTY) == n[SEG_EMPTY]);     /* 6 */
    TIDE_ASSERT(stack_len(a, a->released, SEG_RELEASED) == n[SEG_RELEASED]);  /* 4 */
    for (const large *l = a->larges; l != NULL; l = l->next) {          /* 1 */
        TIDE_ASSERT(l->magic == LARGE_MAGIC && l->map_len == large_len(l->size));
        TIDE_ASSERT(l->next == NULL || l->next->prev == l);
        large_n++;
        large_bytes += l->map_len;
    }
    TIDE_ASSERT(large_n == a->st.large_objects && large_bytes == a->st.large_bytes);
    TIDE_ASSERT(live + large_bytes == a->st.live_bytes);                /* 2 */
    TIDE_ASSERT(objects + large_n == a->st.live_objects);               /* 2 */
    TIDE_ASSERT(a->o.limit_bytes == 0 || resident(a) <= a->o.limit_bytes);   /* 3 */
    pthread_mutex_unlock(&a->mu);
}
