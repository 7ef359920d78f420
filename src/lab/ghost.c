/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost.c: the RSS-ghost scenarios and variants (see ghost.h).
 *
 * Each scenario is a function that allocates, writes, frees and reads
 * RSS at fixed points. They share a small "rig": the scenario's pointer
 * arrays (book) in anonymous mmap regions written before the start
 * reading, a statm reader that keeps the highest value seen, and a sink
 * that every allocation feeds one byte into, so no allocation can be
 * optimised away.
 *
 * The patterns (why each one does or does not leave a ghost under glibc is
 * in docs/GHOST.md):
 *   batches     `rounds` (2) rounds of: N objects of one size, then one
 *               48-byte "receipt" that is kept, then the N objects freed.
 *               The receipt stands for whatever a program allocates
 *               between making a batch and dropping it; under glibc it
 *               sits above the freed batch, so the batch cannot be given
 *               back by shrinking the top of the heap. The second round
 *               matters for 200 KB objects: glibc serves the first round
 *               with mmap, raises its mmap threshold when they are freed,
 *               and serves the second from the heap.
 *   mixed       groups of one 8 KiB vector buffer (kept) followed by 128
 *               items of 96 bytes (freed).
 *   lifetime    pairs of one 256-byte long-lived object (kept) and one
 *               short-lived object of 600 to 1400 bytes (freed).
 *   business    requests against a tide_cache: each request allocates a
 *               16 KiB scratch buffer, inserts 20 objects (mostly 525 B,
 *               some 100 B to 2 KB), looks 10 up, frees the scratch; every
 *               50 requests a sweep; at the end every entry ages out and a
 *               last sweep frees them. The cache's clock is simulated (100
 *               ms per request), so the run takes no real time.
 *   threads     4 threads, each running the mixed pattern on a quarter of
 *               the groups; the peak is read when all four have allocated.
 *
 * The "arena" variant puts every object in Tide's segment arena instead
 * (rig_arena: 64 KiB segments, no reserve; mem/arena.h). A book slot is
 * the one pointer its object's owner has, so the object's arena tag is the
 * slot's address, and the evacuation after the frees moves each live
 * object by copying it and storing the copy in its slot (rig_move); the
 * empty segments then go back. Business's cache keeps its objects and
 * entries in its own arena, evacuated the same way (tide_cache_evacuate).
 *
 * Invariants:
 *   1. Between the start reading and the after-free reading, the only
 *      allocator calls are the scenario's own (and, for business, the
 *      cache's; with the arena, the evacuation's list of candidate
 *      segments); bookkeeping never mallocs.
 *   2. live_bytes counts requested bytes of objects still held at the
 *      after-free reading, nothing else (business: tide_cache_stats.bytes).
 *   3. Every object a scenario allocates is freed before it returns,
 *      whether it succeeded or not.
 *
 * Never: read RSS through stdio or anything that mallocs; call exit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "cache/cache.h"
#include "lab/ghost_impl.h"
#include "mem/alloc.h"
#include "mem/arena.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"

/* ---- the rig ------------------------------------------------------------- */

static volatile unsigned char ghost_sink;

/* The arena variant's arena, or NULL (malloc). A scenario runs alone in its
 * process (ghost_run.c re-executes the binary for each), so the rig keeps
 * it here for the run: ti_lab_ghost_scenario_run opens and closes it. */
static tide_arena *rig_arena;

#define RIG_SEGMENT ((size_t)64 * 1024)

typedef struct book {
    void **p;       /* mmap'd, written before the start reading */
    size_t cap;     /* slots */
    size_t map_len;
} book;

/* free (or the arena's). NULL: nothing. */
static void obj_free(void *p)
{
    if (rig_arena) tide_arena_free(rig_arena, p);
    else free(p);
}

static int book_open(book *b, size_t slots)
{
    size_t len = (slots ? slots : 1) * sizeof(void *);
    void *m;

    memset(b, 0, sizeof *b);
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return tide_err_sys(errno, "ghost: mmap of %zu bytes of bookkeeping", len);
    memset(m, 0, len);           /* resident now, part of the baseline */
    b->p = m;
    b->cap = slots;
    b->map_len = len;
    return 0;
}

static void book_close(book *b)
{
    if (b->p) {
        for (size_t i = 0; i < b->cap; i++) obj_free(b->p[i]);
        munmap(b->p, b->map_len);
    }
    memset(b, 0, sizeof *b);
}

/* Free the first n objects of b, in order (a scenario's frees). */
static void book_free(book *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        obj_free(b->p[i]);
        b->p[i] = NULL;
    }
}

/* Slot i of b holds `p` from now on: in the arena, p's tag is the slot. */
static void book_put(book *b, size_t i, void *p)
{
    b->p[i] = p;
    if (rig_arena && p) tide_arena_set_tag(rig_arena, p, (uintptr_t)&b->p[i]);
}

/* An evacuation's move (mem/arena.h): copy the object its slot (the tag)
 * holds, and store the copy there. Single-threaded: the scenario's frees
 * are over. */
static int rig_move(void *arg, tide_arena *a, void *p, size_t size, uint64_t tag)
{
    void **slot = (void **)(uintptr_t)tag, *q = NULL;

    (void)arg;
    if (*slot != p || tide_arena_alloc(a, size, &q) != 0) return TIDE_ARENA_KEPT;
    memcpy(q, p, size);
    tide_arena_set_tag(a, q, tag);
    *slot = q;
    tide_arena_free(a, p);
    return TIDE_ARENA_MOVED;
}

/* malloc (or the arena), write every byte, feed the sink. NULL on failure. */
static void *obj_new(size_t n, unsigned char fill)
{
    unsigned char *p = NULL;

    if (rig_arena) {
        if (tide_arena_alloc(rig_arena, n, (void **)&p) != 0) return NULL;
    } else {
        p = malloc(n);
    }
    if (p == NULL) return NULL;
    memset(p, fill, n);
    ghost_sink ^= p[n - 1];
    return p;
}

static int rss_now(uint64_t *out)
{
    int rc = tide_mem_proc_statm_rss(out);
    return rc ? tide_err_prefix(rc, "ghost: reading RSS") : 0;
}

static int rss_peak_update(tide_lab_ghost_sample *s)
{
    uint64_t r;
    int rc = rss_now(&r);
    if (rc == 0 && r > s->rss_peak) s->rss_peak = r;
    return rc;
}

static size_t scaled(double size, double base)
{
    double n = base * size;
    return n < 1.0 ? 1 : (size_t)n;
}

/* xorshift64: deterministic sizes, no libc state. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#define ENOMEM_AT(what, n) tide_err_set(TIDE_ENOMEM, "ghost: malloc of %zu bytes failed (%s)", \
                                        (size_t)(n), what)

/*
 * The end of every scenario: the variant's release or wait, then the
 * after-free reading. Called while the scenario still holds its live
 * objects.
 */
static int settle_and_read(const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    if (rig_arena) {
        int rc = tide_arena_evacuate(rig_arena, SIZE_MAX, rig_move, NULL, NULL);
        if (rc == 0) rc = tide_arena_release(rig_arena, NULL);
        if (rc) return tide_err_prefix(rc, "ghost: the arena's evacuation and release after the frees");
    }
    if (after && after->wait_ms) {
        struct timespec ts = { after->wait_ms / 1000, (long)(after->wait_ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
    }
    if (after && after->trim) {
        int result = 0;
        int rc = tide_mem_alloc_release(tide_mem_alloc_family(), 0, &result);
        if (rc) return tide_err_prefix(rc, "ghost: releasing free memory after the frees");
        s->trim_result = result;
    }
    return rss_now(&s->rss_after_free);
}

/* ---- batches ------------------------------------------------------------- */

#define BATCH_ROUNDS   2
#define RECEIPT_BYTES  48

static int run_batch(size_t count, size_t obj_size, const tide_lab_ghost_after *after,
                     tide_lab_ghost_sample *s)
{
    book objs = { 0 }, receipts = { 0 };
    int rc;

    rc = book_open(&objs, count);
    if (rc) goto out;
    rc = book_open(&receipts, BATCH_ROUNDS);
    if (rc) goto out;
    rc = rss_now(&s->rss_start);
    if (rc) goto out;
    for (unsigned r = 0; r < BATCH_ROUNDS; r++) {
        for (size_t i = 0; i < count; i++) {
            book_put(&objs, i, obj_new(obj_size, (unsigned char)(0x11 + r)));
            if (objs.p[i] == NULL) { rc = ENOMEM_AT("batch object", obj_size); goto out; }
        }
        book_put(&receipts, r, obj_new(RECEIPT_BYTES, 0x5a));
        if (receipts.p[r] == NULL) { rc = ENOMEM_AT("receipt", RECEIPT_BYTES); goto out; }
        s->objects += count + 1;
        s->allocated_bytes += (uint64_t)count * obj_size + RECEIPT_BYTES;
        rc = rss_peak_update(s);
        if (rc) goto out;
        book_free(&objs, count);
    }
    s->live_bytes = (uint64_t)BATCH_ROUNDS * RECEIPT_BYTES;
    rc = settle_and_read(after, s);
out:
    book_close(&objs);
    book_close(&receipts);
    return rc;
}

static int run_small_batch(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    return run_batch(scaled(size, 250000), 48, after, s);
}

static int run_medium_batch(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    return run_batch(scaled(size, 200), 60 * 1024, after, s);
}

static int run_large_batch(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    return run_batch(scaled(size, 60), 200 * 1024, after, s);
}

/* ---- mixed (also the body of each thread of "threads") ------------------- */

#define MIXED_VECTOR_BYTES 8192
#define MIXED_ITEMS        128
#define MIXED_ITEM_BYTES   96
#define MIXED_GROUPS       1000

typedef struct mixed_part {
    size_t groups;
    book   vectors;    /* groups slots, kept */
    book   items;      /* groups * MIXED_ITEMS slots, freed */
    int    rc;
    char   err[160];
} mixed_part;

static int mixed_part_open(mixed_part *m, size_t groups)
{
    int rc;

    memset(m, 0, sizeof *m);
    m->groups = groups;
    rc = book_open(&m->vectors, groups);
    if (rc == 0) rc = book_open(&m->items, groups * MIXED_ITEMS);
    return rc;
}

static void mixed_part_close(mixed_part *m)
{
    book_close(&m->vectors);
    book_close(&m->items);
}

/* Allocate the groups: a vector buffer, then its items (the vector holds
 * their addresses, as a vector of pointers would). */
static int mixed_part_alloc(mixed_part *m)
{
    for (size_t g = 0; g < m->groups; g++) {
        void **vec = obj_new(MIXED_VECTOR_BYTES, 0x22);
        if (vec == NULL) return ENOMEM_AT("vector buffer", MIXED_VECTOR_BYTES);
        book_put(&m->vectors, g, vec);
        for (size_t k = 0; k < MIXED_ITEMS; k++) {
            void *it = obj_new(MIXED_ITEM_BYTES, 0x33);
            if (it == NULL) return ENOMEM_AT("item", MIXED_ITEM_BYTES);
            book_put(&m->items, g * MIXED_ITEMS + k, it);
            vec[k] = it;
        }
    }
    return 0;
}

static void mixed_part_count(const mixed_part *m, tide_lab_ghost_sample *s)
{
    s->objects += m->groups * (1 + MIXED_ITEMS);
    s->allocated_bytes += (uint64_t)m->groups * (MIXED_VECTOR_BYTES + MIXED_ITEMS * MIXED_ITEM_BYTES);
    s->live_bytes += (uint64_t)m->groups * MIXED_VECTOR_BYTES;
}

static int run_mixed(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    mixed_part m;
    int rc;

    rc = mixed_part_open(&m, scaled(size, MIXED_GROUPS));
    if (rc) goto out;
    rc = rss_now(&s->rss_start);
    if (rc) goto out;
    rc = mixed_part_alloc(&m);
    if (rc) goto out;
    rc = rss_peak_update(s);
    if (rc) goto out;
    book_free(&m.items, m.items.cap);
    mixed_part_count(&m, s);
    rc = settle_and_read(after, s);
out:
    mixed_part_close(&m);
    return rc;
}

/* ---- lifetime ------------------------------------------------------------ */

#define LIFE_LONG_BYTES  256
#define LIFE_SHORT_MIN   600
#define LIFE_SHORT_SPAN  801      /* 600 .. 1400 */
#define LIFE_PAIRS       12000

static int run_lifetime(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    size_t pairs = scaled(size, LIFE_PAIRS);
    book longs = { 0 }, shorts = { 0 };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int rc;

    rc = book_open(&longs, pairs);
    if (rc) goto out;
    rc = book_open(&shorts, pairs);
    if (rc) goto out;
    rc = rss_now(&s->rss_start);
    if (rc) goto out;
    for (size_t i = 0; i < pairs; i++) {
        size_t n = LIFE_SHORT_MIN + (size_t)(rng_next(&seed) % LIFE_SHORT_SPAN);
        book_put(&longs, i, obj_new(LIFE_LONG_BYTES, 0x44));
        if (longs.p[i] == NULL) { rc = ENOMEM_AT("long-lived object", LIFE_LONG_BYTES); goto out; }
        book_put(&shorts, i, obj_new(n, 0x55));
        if (shorts.p[i] == NULL) { rc = ENOMEM_AT("short-lived object", n); goto out; }
        s->allocated_bytes += LIFE_LONG_BYTES + n;
    }
    s->objects = 2 * (uint64_t)pairs;
    rc = rss_peak_update(s);
    if (rc) goto out;
    book_free(&shorts, pairs);
    s->live_bytes = (uint64_t)pairs * LIFE_LONG_BYTES;
    rc = settle_and_read(after, s);
out:
    book_close(&longs);
    book_close(&shorts);
    return rc;
}

/* ---- business ------------------------------------------------------------ */

#define BIZ_REQUESTS      2000
#define BIZ_OBJECTS       20
#define BIZ_LOOKUPS       10
#define BIZ_SCRATCH_BYTES (16 * 1024)
#define BIZ_SWEEP_EVERY   50
#define BIZ_STEP_US       100000u       /* simulated time per request */
#define BIZ_AGE_S         10

static uint64_t biz_clock(void *arg)
{
    return *(const uint64_t *)arg;
}

static size_t biz_object_size(uint64_t *seed)
{
    uint64_t r = rng_next(seed);
    /* two in three like an inner node (525 B), the rest 100 B to 2 KB */
    if (r % 3 != 0) return 525;
    return 100 + (size_t)((r >> 8) % 1949);
}

static int run_business(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    size_t requests = scaled(size, BIZ_REQUESTS);
    tide_cache *c = NULL;
    tide_cache_opts o;
    tide_cache_stats st;
    uint64_t now = 1000000, seed = 0x2545f4914f6cdd1dull, key_no = 0;
    unsigned char key[32];
    unsigned char buf[2048];
    int rc;

    tide_cache_opts_init(&o);
    o.key_size = sizeof key;
    o.target_size = 16384;
    o.age_s = BIZ_AGE_S;
    o.budget_bytes = scaled(size, 8u << 20);
    o.hard_limit_bytes = 2 * o.budget_bytes;
    o.clock_us = biz_clock;
    o.clock_arg = &now;
    o.arena = rig_arena != NULL;
    o.arena_segment_bytes = RIG_SEGMENT;
    o.arena_reserve = 0;
    memset(buf, 0x66, sizeof buf);
    memset(key, 0, sizeof key);

    rc = rss_now(&s->rss_start);
    if (rc) goto out;
    rc = tide_cache_create(&c, &o);
    if (rc) goto out;
    for (size_t r = 0; r < requests; r++) {
        unsigned char *scratch = obj_new(BIZ_SCRATCH_BYTES, 0x77);
        if (scratch == NULL) { rc = ENOMEM_AT("request scratch", BIZ_SCRATCH_BYTES); goto out; }
        s->objects++;
        s->allocated_bytes += BIZ_SCRATCH_BYTES;
        now += BIZ_STEP_US;
        for (unsigned i = 0; i < BIZ_OBJECTS && rc == 0; i++) {
            tide_cache_obj *v = NULL;
            size_t n = biz_object_size(&seed);
            memcpy(key, &key_no, sizeof key_no);
            key_no++;
            rc = o.arena ? tide_cache_obj_make(c, &v, buf, n) : tide_cache_obj_new(&v, buf, n, NULL);
            if (rc == 0) rc = tide_cache_insert(c, key, v);
            tide_cache_obj_release(v);
            s->objects++;
            s->allocated_bytes += n;
        }
        for (unsigned i = 0; i < BIZ_LOOKUPS && rc == 0; i++) {
            uint64_t k = key_no - 1 - rng_next(&seed) % (key_no < 4096 ? key_no : 4096);
            tide_cache_obj *v;
            memcpy(key, &k, sizeof k);
            v = tide_cache_lookup(c, key);
            if (v) ghost_sink ^= ((const unsigned char *)tide_cache_obj_data(v))[0];
            tide_cache_obj_release(v);
        }
        ghost_sink ^= scratch[BIZ_SCRATCH_BYTES - 1];
        obj_free(scratch);
        if (rc) goto out;
        if (r % BIZ_SWEEP_EVERY == BIZ_SWEEP_EVERY - 1) tide_cache_sweep(c, NULL);
        if (r % BIZ_SWEEP_EVERY == 0) {
            rc = rss_peak_update(s);
            if (rc) goto out;
        }
    }
    rc = rss_peak_update(s);
    if (rc) goto out;
    /* the load is over: everything ages out */
    now += (uint64_t)(BIZ_AGE_S + 1) * 1000000u;
    tide_cache_sweep(c, NULL);
    if (o.arena) {
        rc = tide_cache_evacuate(c, SIZE_MAX, NULL);
        if (rc) goto out;
    }
    tide_cache_stats_get(c, &st);
    s->live_bytes = st.bytes;
    rc = settle_and_read(after, s);
out:
    tide_cache_destroy(c);
    return rc;
}

/* ---- threads ------------------------------------------------------------- */

#define THREADS 4

/* The gate between the main thread and the workers: each worker counts
 * itself in once it has allocated, then waits until the main thread has
 * read the peak and opens the gate. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    unsigned        allocated;
    int             open;
} gate;

typedef struct thread_arg {
    mixed_part part;
    gate      *g;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;

    a->part.rc = mixed_part_alloc(&a->part);
    if (a->part.rc)
        snprintf(a->part.err, sizeof a->part.err, "%s", tide_last_error());
    pthread_mutex_lock(&a->g->mu);
    a->g->allocated++;
    pthread_cond_broadcast(&a->g->cv);
    while (!a->g->open) pthread_cond_wait(&a->g->cv, &a->g->mu);
    pthread_mutex_unlock(&a->g->mu);
    book_free(&a->part.items, a->part.items.cap);
    return NULL;
}

static int run_threads(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s)
{
    size_t groups = scaled(size / THREADS, MIXED_GROUPS);
    thread_arg args[THREADS];
    pthread_t tid[THREADS];
    gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    unsigned started = 0;
    int rc = 0;

    memset(args, 0, sizeof args);
    for (unsigned t = 0; t < THREADS && rc == 0; t++)
        rc = mixed_part_open(&args[t].part, groups);
    if (rc) goto out;
    rc = rss_now(&s->rss_start);
    if (rc) goto out;
    for (unsigned t = 0; t < THREADS; t++) {
        int e;
        args[t].g = &g;
        e = pthread_create(&tid[t], NULL, thread_main, &args[t]);
        if (e != 0) {
            rc = tide_err_sys(e, "ghost: pthread_create of thread %u", t + 1);
            break;
        }
        started++;
    }
    pthread_mutex_lock(&g.mu);
    while (g.allocated < started) pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    if (rc == 0) rc = rss_peak_update(s);
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (unsigned t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (rc) goto out;
    for (unsigned t = 0; t < THREADS; t++) {
        if (args[t].part.rc) {
            rc = tide_err_set(args[t].part.rc, "ghost: thread %u: %s", t + 1, args[t].part.err);
            goto out;
        }
        mixed_part_count(&args[t].part, s);
    }
    s->threads = THREADS;
    rc = settle_and_read(after, s);
out:
    for (unsigned t = 0; t < THREADS; t++) mixed_part_close(&args[t].part);
    return rc;
}

/* ---- the scenario table -------------------------------------------------- */

typedef struct scenario {
    const char *name;
    int (*run)(double size, const tide_lab_ghost_after *after, tide_lab_ghost_sample *s);
} scenario;

static const scenario scenarios[] = {
    /* 2 rounds of 250000 x 48 B, a 48 B receipt kept after each, the batch freed */
    { "small-batch",  run_small_batch },
    /* 2 rounds of 200 x 60 KiB, a 48 B receipt kept after each, the batch freed */
    { "medium-batch", run_medium_batch },
    /* 2 rounds of 60 x 200 KiB, a 48 B receipt kept after each, the batch freed */
    { "large-batch",  run_large_batch },
    /* 1000 x (one 8 KiB vector buffer kept, 128 items of 96 B freed) */
    { "mixed",        run_mixed },
    /* 12000 x (one 256 B long-lived kept, one 600-1400 B short-lived freed) */
    { "lifetime",     run_lifetime },
    /* 2000 requests into a tide_cache (16 KiB scratch, 20 inserts, 10
     * lookups, a sweep every 50), then all aged out */
    { "business",     run_business },
    /* the mixed pattern on 4 threads at once, 250 groups each */
    { "threads",      run_threads },
};

#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

size_t tide_lab_ghost_scenario_count(void)
{
    return NSCENARIOS;
}

const char *tide_lab_ghost_scenario_name(size_t i)
{
    return i < NSCENARIOS ? scenarios[i].name : NULL;
}

int tide_lab_ghost_scenario_find(const char *name)
{
    for (size_t i = 0; i < NSCENARIOS; i++)
        if (strcmp(scenarios[i].name, name) == 0) return (int)i;
    return -1;
}

int ti_lab_ghost_scenario_run(size_t index, double size, const tide_lab_ghost_after *after,
                                tide_lab_ghost_sample *out)
{
    tide_lab_ghost_sample s;
    uint64_t t0;
    int rc;

    memset(&s, 0, sizeof s);
    s.threads = 1;
    s.trim_result = -1;
    if (index >= NSCENARIOS)
        return tide_err_set(TIDE_EINVAL, "ghost: scenario %zu does not exist (%zu scenarios)",
                            index, NSCENARIOS);
    if (!(size > 0.0 && size <= 64.0))
        return tide_err_set(TIDE_EINVAL, "ghost: size %g is not in (0, 64]", size);
    /* Settle the allocator before the start reading: its detection mallocs
     * a probe once per process. */
    (void)tide_mem_alloc_family();
    if (after && after->arena) {
        tide_arena_opts ao;
        tide_arena_opts_init(&ao);
        ao.segment_bytes = RIG_SEGMENT;
        ao.reserve = 0;
        ao.evacuate_pct = 90;
        rc = tide_arena_open(&rig_arena, &ao);
        if (rc) return tide_err_prefix(rc, "ghost: opening the arena");
    }
    t0 = tide_clock_mono_us();
    rc = scenarios[index].run(size, after, &s);
    s.elapsed_us = tide_clock_mono_us() - t0;
    tide_arena_close(rig_arena);
    rig_arena = NULL;
    if (rc == 0) *out = s;
    return rc;
}

int64_t ti_lab_ghost_bytes(const tide_lab_ghost_sample *s)
{
    return (int64_t)s->rss_after_free - (int64_t)s->rss_start - (int64_t)s->live_bytes;
}

int ti_lab_ghost_returned(const tide_lab_ghost_sample *s)
{
    int64_t ghost = ti_lab_ghost_bytes(s);
    int64_t growth = (int64_t)s->rss_peak - (int64_t)s->rss_start;

    if (ghost <= 0) return 1;
    return ghost * 10 < growth;
}

/* ---- variants ------------------------------------------------------------ */

#define JEMALLOC_BG_WAIT_MS 3000  /* 3 x dirty_decay_ms: see docs/GHOST.md */

static const tide_lab_ghost_variant variants[] = {
    { "glibc", "glibc's malloc with its defaults",
      TIDE_MEM_ALLOC_GLIBC, NULL, NULL, { NULL, NULL }, { 0, 0, 0 }, NULL },
    { "glibc-mmap16k", "glibc with MALLOC_MMAP_THRESHOLD_=16384 (fixed; no dynamic threshold)",
      TIDE_MEM_ALLOC_GLIBC, NULL, NULL, { "MALLOC_MMAP_THRESHOLD_=16384", NULL }, { 0, 0, 0 }, "glibc" },
    { "glibc-trim", "glibc, and malloc_trim(0) after the frees",
      TIDE_MEM_ALLOC_GLIBC, NULL, NULL, { NULL, NULL }, { 1, 0, 0 }, "glibc" },
    { "glibc-arena2", "glibc with MALLOC_ARENA_MAX=2",
      TIDE_MEM_ALLOC_GLIBC, NULL, NULL, { "MALLOC_ARENA_MAX=2", NULL }, { 0, 0, 0 }, "glibc" },
    { "jemalloc", "jemalloc (LD_PRELOAD) with its defaults",
      TIDE_MEM_ALLOC_JEMALLOC, "libjemalloc.so.2", "libjemalloc2", { NULL, NULL }, { 0, 0, 0 }, NULL },
    { "jemalloc-bg", "jemalloc with background_thread:true,dirty_decay_ms:1000, read 3 s "
                     "after the frees",
      TIDE_MEM_ALLOC_JEMALLOC, "libjemalloc.so.2", "libjemalloc2",
      { "MALLOC_CONF=background_thread:true,dirty_decay_ms:1000", NULL },
      { 0, JEMALLOC_BG_WAIT_MS, 0 }, "jemalloc" },
    { "tcmalloc", "gperftools' tcmalloc_minimal (LD_PRELOAD) with its defaults",
      TIDE_MEM_ALLOC_TCMALLOC, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4",
      { NULL, NULL }, { 0, 0, 0 }, NULL },
    { "mimalloc", "mimalloc (LD_PRELOAD) with its defaults",
      TIDE_MEM_ALLOC_MIMALLOC, "libmimalloc.so.2", "libmimalloc2.0", { NULL, NULL }, { 0, 0, 0 }, NULL },
    { "arena", "Tide's segment arena for every object (64 KiB segments, no reserve), evacuated and released "
               "after the frees; glibc for the rest",
      TIDE_MEM_ALLOC_GLIBC, NULL, NULL, { NULL, NULL }, { 0, 0, 1 }, "glibc" },
};

#define NVARIANTS (sizeof variants / sizeof variants[0])

size_t tide_lab_ghost_variant_count(void)
{
    return NVARIANTS;
}

const tide_lab_ghost_variant *tide_lab_ghost_variant_at(size_t i)
{
    return i < NVARIANTS ? &variants[i] : NULL;
}

const tide_lab_ghost_variant *ti_lab_ghost_variant_find(const char *name)
{
    for (size_t i = 0; i < NVARIANTS; i++)
        if (strcmp(variants[i].name, name) == 0) return &variants[i];
    return NULL;
}

int ti_lab_ghost_env_is_allocator(const char *name)
{
    static const char *const exact[] = { "LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CONF",
                                         "JE_MALLOC_CONF", NULL };
    static const char *const prefix[] = { "MALLOC_", "TCMALLOC_", "MIMALLOC_", NULL };
    size_t len = strcspn(name, "=");

    for (size_t i = 0; exact[i]; i++)
        if (strlen(exact[i]) == len && strncmp(name, exact[i], len) == 0) return 1;
    for (size_t i = 0; prefix[i]; i++)
        if (strncmp(name, prefix[i], strlen(prefix[i])) == 0) return 1;
    return 0;
}

/* ---- finding Debian's libraries ------------------------------------------ */

static int file_exists(const char *dir, const char *file, char *path, size_t cap)
{
    struct stat st;
    int n = snprintf(path, cap, "%s/%s", dir, file);

    if (n < 0 || (size_t)n >= cap) return 0;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int ti_lab_ghost_library_find(const char *file, char *path, size_t cap)
{
    static const char *const fixed[] = { "/usr/local/lib", "/usr/lib64", "/lib64", "/usr/lib",
                                         "/lib", NULL };
    char libc_dir[PATH_MAX] = "", usr_dir[PATH_MAX + 8] = "", tried[2 * PATH_MAX + 128] = "";
    Dl_info info;

    if (cap < 2 || strchr(file, '/') != NULL)
        return tide_err_set(TIDE_EINVAL, "ghost: '%s': a library file name, without '/', "
                            "and room for its path are needed", file);
    /* The multiarch directory is wherever our own libc came from. */
    if (dladdr((void *)gnu_get_libc_version, &info) != 0 && info.dli_fname &&
        strlen(info.dli_fname) < sizeof libc_dir) {
        char *slash;
        strcpy(libc_dir, info.dli_fname);
        slash = strrchr(libc_dir, '/');
        if (slash && slash != libc_dir) *slash = '\0';
        else libc_dir[0] = '\0';
        if (libc_dir[0] && strncmp(libc_dir, "/usr/", 5) != 0)
            snprintf(usr_dir, sizeof usr_dir, "/usr%s", libc_dir);
    }
    if (libc_dir[0] && file_exists(libc_dir, file, path, cap)) return 0;
    if (usr_dir[0] && file_exists(usr_dir, file, path, cap)) return 0;
    for (size_t i = 0; fixed[i]; i++)
        if (file_exists(fixed[i], file, path, cap)) return 0;
    snprintf(tried, sizeof tried, "%s%s%s%s/usr/local/lib, /usr/lib64, /lib64, /usr/lib, /lib",
             libc_dir, libc_dir[0] ? ", " : "", usr_dir, usr_dir[0] ? ", " : "");
    path[0] = '\0';
    return tide_err_set(TIDE_ENOENT, "%s: not found in %s", file, tried);
}

/* ---- checking a variant in the child ------------------------------------- */

static int check_jemalloc_bg(void)
{
    tide_mem_alloc_options o;
    const char *bg, *decay;

    tide_mem_alloc_options_read(TIDE_MEM_ALLOC_JEMALLOC, &o);
    bg = tide_mem_alloc_option_get(&o, "background_thread");
    decay = tide_mem_alloc_option_get(&o, "dirty_decay_ms");
    if (bg == NULL || strcmp(bg, "true") != 0 || decay == NULL || strcmp(decay, "1000") != 0)
        return tide_err_set(TIDE_EMISMATCH, "jemalloc-bg: jemalloc reports background_thread=%s "
                            "dirty_decay_ms=%s, not true and 1000 (was MALLOC_CONF read?)",
                            bg ? bg : "(unreadable)", decay ? decay : "(unreadable)");
    return 0;
}

/*
 * glibc consults its mmap threshold only when the top chunk cannot serve a
 * request (sysmalloc); a 32 KiB block at the start of a process comes from
 * the 128 KiB top pad whatever the threshold. So allocate 32 KiB blocks
 * until the top is used up (at most 1 MiB): with a 16 KiB threshold one of
 * them is then mmap'd; with the default 128 KiB threshold the heap grows
 * by brk instead and none is.
 */
#define PROBE_BLOCKS 32

static int check_mmap_threshold(void)
{
    struct mallinfo2 before = mallinfo2(), now = before;
    void *blocks[PROBE_BLOCKS] = { 0 };
    int rc = 0;
    size_t i;

    for (i = 0; i < PROBE_BLOCKS && now.hblks == before.hblks; i++) {
        blocks[i] = obj_new(32 * 1024, 0x01);
        if (blocks[i] == NULL) { rc = ENOMEM_AT("mmap-threshold probe", 32 * 1024); goto out; }
        now = mallinfo2();
    }
    if (now.hblks == before.hblks)
        rc = tide_err_set(TIDE_EMISMATCH, "glibc-mmap16k: none of %d blocks of 32 KiB was "
                          "served by mmap: MALLOC_MMAP_THRESHOLD_=16384 did not take effect",
                          PROBE_BLOCKS);
out:
    for (i = 0; i < PROBE_BLOCKS; i++) free(blocks[i]);
    return rc;
}

int ti_lab_ghost_variant_check(const tide_lab_ghost_variant *v, char *version, size_t cap)
{
    tide_mem_alloc_info info;
    int rc;

    if (cap) version[0] = '\0';
    rc = tide_mem_alloc_detect(&info);
    if (rc) return rc;
    if (cap) snprintf(version, cap, "%s", info.version);
    if (info.family != v->family)
        return tide_err_set(TIDE_EMISMATCH, "%s: malloc is served by %s (%s), not %s; %s",
                            v->name, tide_mem_alloc_family_name(info.family),
                            info.library[0] ? info.library : "library unknown",
                            tide_mem_alloc_family_name(v->family), info.evidence);
    if (strcmp(v->name, "jemalloc-bg") == 0) return check_jemalloc_bg();
    if (strcmp(v->name, "glibc-mmap16k") == 0) return check_mmap_threshold();
    return 0;
}

unsigned ti_lab_ghost_glibc_arenas(void)
{
    tide_mem_alloc_stats st;

    if (tide_mem_alloc_family() != TIDE_MEM_ALLOC_GLIBC) return 0;
    if (tide_mem_alloc_stats_read(TIDE_MEM_ALLOC_GLIBC, &st) != 0) return 0;
    return st.glibc.has_arenas ? st.glibc.arenas : 0;
}
