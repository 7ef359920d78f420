/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_release.c: one measurement of what giving a cache's freed memory
 * back costs (bench_release.h): fill, erase at random, release, with the
 * RSS and the time of each step.
 *
 * The cache is the node's (tide_cache, src/cache/cache.h) with the
 * settings tided gives it but the ones that would act during the run: no
 * byte budget, no hard limit, an age of a day, no target. The release is
 * the sweeper's own sequence (src/node/sweeper.c): the arena's evacuation
 * and release, then the allocator's trim; with the arena off, the trim
 * alone. So the figures are those of a sweep on a node whose cache holds
 * opts.bytes, less the sweep's walk of the lists, which is the same either
 * way.
 *
 * Keys are the object's number in 8 little-endian bytes, then 24 bytes of
 * its mix (the cache hashes them anyway); an object's bytes are its
 * number's mix repeated, so nothing is left to the zero page.
 *
 * Invariants:
 *   1. Every object made is inserted or the measurement fails: the figures
 *      are never of a cache smaller than asked.
 *   2. The erased objects are chosen by the seed alone, the same for the
 *      arena on and off, so two measurements of one seed free the same
 *      objects of the same sizes in the same order.
 *
 * The kernel's floor (step 5 of bench_release.h) is measured after the
 * cache is destroyed, so its mapping never adds to the cache's RSS.
 *
 * Never: print, fork or exit; time anything but the release calls in
 * release_ns, or the floor's madvise calls in floor_ns (the RSS reads
 * and the page writes are outside both).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench/bench_release.h"
#include "cache/cache.h"
#include "mem/proc.h"
#include "mem/trim.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

#define KEY_BYTES 32u
#define MIB ((uint64_t)1 << 20)

void tide_bench_release_opts_init(tide_bench_release_opts *o)
{
    memset(o, 0, sizeof *o);
    o->bytes = (uint64_t)4 << 30;
    o->min_size = 64;
    o->max_size = 4096;
    o->free_pct = 90;
    o->arena = 1;
    o->segment_bytes = (size_t)2 << 20;
}

static int check_opts(const tide_bench_release_opts *o)
{
    if (o->bytes < MIB || o->bytes > ((uint64_t)1 << 40))
        return tide_err_set(TIDE_EINVAL, "bytes %llu is outside 1 MiB..1 TiB", (unsigned long long)o->bytes);
    if (o->min_size < 1 || o->max_size > MIB || o->min_size > o->max_size)
        return tide_err_set(TIDE_EINVAL, "object sizes %u-%u: expected 1 <= min <= max <= 1 MiB", o->min_size,
                            o->max_size);
    if (o->free_pct < 1 || o->free_pct > 99)
        return tide_err_set(TIDE_EINVAL, "free_pct %u is outside 1..99", o->free_pct);
    return 0;
}

static uint64_t anon_rss(void)
{
    uint64_t b = 0;

    return tide_mem_proc_anon_rss(&b) == 0 ? b : 0;
}

static void key_of(uint64_t i, uint8_t key[KEY_BYTES])
{
    uint64_t m = tide_random_mix64(i);

    for (unsigned k = 0; k < 8; k++) key[k] = (uint8_t)(i >> (8 * k));
    for (unsigned k = 8; k < KEY_BYTES; k++) key[k] = (uint8_t)(m >> (8 * (k % 8)));
}

/* Object i's size: uniform in [min, max], from the seed (2). */
static size_t size_of(const tide_bench_release_opts *o, uint64_t i)
{
    uint64_t span = (uint64_t)o->max_size - o->min_size + 1;

    return o->min_size + (size_t)(tide_random_mix64(o->seed * 0x100000001b3ull + i) % span);
}

/* Whether object i is erased (2). */
static int erased(const tide_bench_release_opts *o, uint64_t i)
{
    return tide_random_mix64(~o->seed ^ (i * 0x9e3779b97f4a7c15ull)) % 100 < o->free_pct;
}

static int fill(tide_cache *c, const tide_bench_release_opts *o, uint8_t *buf, tide_bench_release_result *r)
{
    uint8_t key[KEY_BYTES];
    uint64_t total = 0;
    int rc = 0;

    for (uint64_t i = 0; total < o->bytes; i++) {
        size_t len = size_of(o, i);
        uint64_t m = tide_random_mix64(i);
        tide_cache_obj *v = NULL;
        for (size_t k = 0; k < len; k += 8) memcpy(buf + k, &m, len - k < 8 ? len - k : 8);
        key_of(i, key);
        rc = tide_cache_obj_make(c, &v, buf, len);
        if (rc == 0) rc = tide_cache_insert(c, key, v);
        tide_cache_obj_release(v);
        if (rc) return tide_err_prefix(rc, "object %llu of %zu bytes", (unsigned long long)i, len);
        total += len;
        r->objects = i + 1;
    }
    return rc;
}

static void erase(tide_cache *c, const tide_bench_release_opts *o, tide_bench_release_result *r)
{
    uint8_t key[KEY_BYTES];

    r->kept = r->objects;
    for (uint64_t i = 0; i < r->objects; i++) {
        if (!erased(o, i)) continue;
        key_of(i, key);
        if (tide_cache_erase(c, key)) r->kept--;
    }
}

/* Step 3: the sweeper's release sequence. */
static int release(tide_cache *c, const tide_bench_release_opts *o, tide_bench_release_result *r)
{
    tide_cache_arena_report a;
    tide_mem_trim_report t;
    int rc = 0;

    if (o->arena) {
        rc = tide_cache_evacuate(c, SIZE_MAX, &a);
        if (rc) return tide_err_prefix(rc, "the arena's evacuation and release");
        r->release_ns = a.release_ns;
        r->evacuate_ns = a.evacuate_ns;
        r->moved_bytes = a.evac.moved_bytes;
        r->released_segments = a.released;
        rc = tide_mem_trim(&t);
        r->trim_ns = t.duration_ns;
    } else {
        rc = tide_mem_trim(&t);
        r->release_ns = t.duration_ns;
    }
    if (rc) return tide_err_prefix(rc, "the allocator's trim");
    return 0;
}

/* Step 5: the kernel's own cost of what the arena's release did, on pages
 * that were never the cache's: map n segments aligned to one, write every
 * page, give each segment back with one madvise, timed alone. */
static int kernel_floor(const tide_bench_release_opts *o, uint64_t segments, tide_bench_release_result *r)
{
    size_t seg = o->segment_bytes, len = (size_t)segments * seg, page = 4096;
    unsigned char *map, *base;
    uint64_t t0;
    int rc = 0;

    if (len == 0) return 0;
    map = mmap(NULL, len + seg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return tide_err_sys(errno, "the floor's mapping of %zu bytes", len + seg);
    base = (unsigned char *)(((uintptr_t)map + seg - 1) & ~(uintptr_t)(seg - 1));
    if (o->hugepages) (void)madvise(base, len, MADV_HUGEPAGE);
    for (size_t i = 0; i < len; i += page) base[i] = (unsigned char)(i >> 12 | 1);
    t0 = tide_clock_mono_ns();
    for (size_t off = 0; off < len && rc == 0; off += seg)
        if (madvise(base + off, seg, MADV_DONTNEED) != 0) rc = tide_err_sys(errno, "the floor's madvise");
    r->floor_ns = tide_clock_mono_ns() - t0;
    r->floor_bytes = len;
    munmap(map, len + seg);
    return rc;
}

int tide_bench_release_measure(const tide_bench_release_opts *o, tide_bench_release_result *out)
{
    tide_cache_opts co;
    tide_cache_stats st;
    tide_bench_release_result r;
    tide_cache *c = NULL;
    uint8_t *buf = NULL;
    uint64_t t0;
    int rc;

    memset(&r, 0, sizeof r);
    rc = check_opts(o);
    if (rc) goto out;
    buf = malloc(o->max_size);
    if (buf == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "a %u-byte value buffer", o->max_size);
        goto out;
    }
    tide_cache_opts_init(&co);
    co.key_size = KEY_BYTES;
    co.target_size = 0;
    co.age_s = 86400;
    co.budget_bytes = 0;
    co.hard_limit_bytes = 0;
    co.arena = o->arena;
    co.arena_segment_bytes = o->segment_bytes;
    co.arena_hugepages = o->hugepages;
    rc = tide_cache_create(&c, &co);
    if (rc) goto out;
    t0 = tide_clock_mono_ns();
    rc = fill(c, o, buf, &r);
    if (rc) goto out;
    r.fill_ns = tide_clock_mono_ns() - t0;
    r.rss_full = anon_rss();
    t0 = tide_clock_mono_ns();
    erase(c, o, &r);
    r.erase_ns = tide_clock_mono_ns() - t0;
    tide_cache_stats_get(c, &st);
    r.counted_bytes = st.bytes;
    r.rss_erased = anon_rss();
    rc = release(c, o, &r);
    r.rss_after = anon_rss();
    if (rc) goto out;
    tide_cache_destroy(c);
    c = NULL;
    if (o->arena) rc = kernel_floor(o, r.released_segments, &r);
out:
    tide_cache_destroy(c);
    free(buf);
    if (rc == 0) *out = r;
    return rc;
}
