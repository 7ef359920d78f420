/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_flush.c: a commit in ranges (src/store/commit.c): a flush
 * of the deferred index (and an
 * ordinary commit) that changes more buckets than one range holds logs
 * and rebuilds them range by range, with buffers bounded by
 * TI_COMMIT_RANGE_BYTES, not by the key file.
 *
 * Tiny ranges are forced with ti_commit_set_range_bytes (a test-only
 * setter: ranges of one or two buckets); the default range holds every
 * bucket these small stores change, so "default" is a commit of one range.
 *
 * On the simulated file system, from NuDB's fixture b512-k32-spill
 * (512-byte blocks at load factor 0.95: the flush splits buckets with
 * spill chains and spills):
 *   - a flush (and an ordinary commit) in tiny ranges writes nudb.key and
 *     nudb.dat byte for byte as one range does, with one log sync a range;
 *   - the world stopped at every call of a multi-range flush (each
 *     range's log write and sync, the bucket writes, the final syncs, the
 *     idle log), then a power loss (chosen and drawn crash images): the
 *     recovered store holds every acknowledged item, verifies, and NuDB's
 *     view (recovered without tide.meta) verifies with the indexed items;
 *   - one failed call at every point of the same flush: rolled back (the
 *     ranges no longer in memory read back from nudb.log, seen in its read
 *     count), the store usable, the next flush writes the same files;
 *     with every call failing from there on (the rollback fails too) the
 *     store is broken, the log stays, and the next open recovers it.
 * The 16-byte packing of a placed entry keeps every bit (offset and hash
 * 2^48 - 1, size 2^32 - 1), and values of 70,000 bytes and 16 MiB come back
 * byte for byte from an ordinary commit and a flush.
 * And the flush's buffers (note_alloc's bytes) stay within the documented
 * bound on a key file many times TI_COMMIT_RANGE_BYTES (a million items),
 * commit_buffer_bytes sampled at every allocation peaks within it and is 0
 * after; an ordinary commit there fills its ranges by real record sizes
 * and pays 3 + one sync a range.
 *
 * The sims are freed whatever happens (the group's teardown).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "expect.h"
#include "io/io_sim.h"
#include "store/store_impl.h"
#include "store/full.h"

#define DB "/db"
#define KEY 32
#define VMIN 1
#define VMAX 300
#define BASE 3000u          /* the fixture's items, 0..BASE-1 */
#define T0 1000000u         /* the first item of the tail */
#define TAIL 400u           /* items of the tail the flush indexes */
#define LAG (16u << 10)     /* a tail of 1024 slots (768 entries) */
#define TINY 1500u          /* ranges of two 512-byte buckets (one, the first) */
#define SLOW 600000u        /* commits only when asked */

static tide_io_sim *g_base;  /* the base store, closed, everything durable */
static tide_io_sim *g_big;   /* the large store's sim (freed at the end) */
static tide_io_sim *g_large; /* the large values' sim (freed at the end) */

#define OK(expr) expect_ok((expr), #expr)

static tide_store *open_sim(tide_io_sim *sim, uint64_t lag, const char *what)
{
    tide_store_opts o;
    tide_store *s = NULL;

    th_store_opts(&o);
    o.io = tide_io_sim_io(sim);
    o.commit_interval_ms = SLOW;
    o.index_lag_bytes = lag;
    expect_ok(tide_store_open(&s, DB, &o), what);
    return s;
}

static int put_fixture_file(const char *file)
{
    char from[1024], to[64];
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;

    snprintf(from, sizeof from, "%s/b512-k32-spill/%s", th_fixture_root(), file);
    snprintf(to, sizeof to, "%s/%s", DB, file);
    if (th_read_file(from, &buf, &len) != 0) return -1;
    rc = tide_io_sim_put_file(g_base, to, buf, len);
    free(buf);
    return rc;
}

/* NuDB's fixture b512-k32-spill (512-byte blocks, load factor 0.95, spill
 * chains; items 0..2999 with 16..64-byte values). */
static int group_setup(void **state)
{
    (void)state;
    if (tide_io_sim_create(&g_base) != 0 || tide_io_sim_mkdir(g_base, DB) != 0) return -1;
    if (put_fixture_file("nudb.dat") != 0 || put_fixture_file("nudb.key") != 0) return -1;
    return 0;
}

/* Every test starts with the default ranges, whatever a failed one left. */
static int test_setup(void **state)
{
    (void)state;
    ti_commit_set_range_bytes(0);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ti_commit_set_range_bytes(0);
    tide_io_sim_destroy(g_base);
    tide_io_sim_destroy(g_big);
    tide_io_sim_destroy(g_large);
    return 0;
}

static tide_io_sim *clone_base(void)
{
    tide_io_sim *c = NULL;
    OK(tide_io_sim_clone(g_base, &c));
    return c;
}

static void get_file(tide_io_sim *sim, const char *name, void **data, size_t *len)
{
    char path[64];
    snprintf(path, sizeof path, "%s/%s", DB, name);
    expect_ok(tide_io_sim_get_file(sim, path, data, len), name);
}

static tide_io_sim_file_stats log_stats(tide_io_sim *sim)
{
    tide_io_sim_file_stats st;
    memset(&st, 0, sizeof st);
    tide_io_sim_file_stats_get(sim, DB "/nudb.log", &st);
    return st;
}

/* nudb.key and nudb.dat of `a` and `b` are byte for byte the same. */
static void expect_same_files(tide_io_sim *a, tide_io_sim *b, const char *what)
{
    static const char *const names[2] = { "nudb.key", "nudb.dat" };
    for (int i = 0; i < 2; i++) {
        void *x, *y;
        size_t nx, ny;
        get_file(a, names[i], &x, &nx);
        get_file(b, names[i], &y, &ny);
        if (nx != ny || memcmp(x, y, nx) != 0) {
            size_t at = 0;
            while (at < nx && at < ny && ((uint8_t *)x)[at] == ((uint8_t *)y)[at]) at++;
            fail_msg("%s: %s differs: %zu and %zu bytes, first difference at offset %zu", what,
                     names[i], nx, ny, at);
        }
        free(x);
        free(y);
    }
}

static void expect_verify(tide_io_sim *sim, uint64_t keys, const char *what)
{
    tide_verify_report r;
    expect_ok(tide_store_verify_io(DB, tide_io_sim_io(sim), &r), what);
    expect_u64(r.keys, keys, what);
}

/* Every item: the fixture's and the tail's. */
#define expect_all(s, what) do { \
        expect_items((s), 0, BASE, KEY, 16, 64, (what)); \
        expect_items((s), T0, T0 + TAIL, KEY, VMIN, VMAX, (what)); \
    } while (0)

/* A deferred store on `sim` with the tail [BASE, BASE + TAIL) acknowledged
 * (synced: phase A commits), not yet indexed. */
static tide_store *open_with_tail(tide_io_sim *sim)
{
    tide_store *s = open_sim(sim, LAG, "open deferred");
    expect_inserted(s, T0, T0 + TAIL, KEY, VMIN, VMAX, "insert the tail");
    expect_ok(tide_store_sync(s), "sync the tail (phase A)");
    return s;
}

/* The base with its tail flushed in ranges of `range` bytes (0: one range);
 * *log_syncs: nudb.log's syncs during the flush. */
static tide_io_sim *flushed(size_t range, uint64_t *log_syncs)
{
    tide_io_sim *sim = clone_base();
    tide_store *s = open_with_tail(sim);
    uint64_t syncs0 = log_stats(sim).syncs;

    ti_commit_set_range_bytes(range);
    expect_ok(tide_store_flush(s), "flush");
    ti_commit_set_range_bytes(0);
    *log_syncs = log_stats(sim).syncs - syncs0;
    expect_all(s, "every item after the flush");
    expect_closed(&s, "close");
    expect_verify(sim, BASE + TAIL, "verify after the flush");
    return sim;
}

/* The base with TAIL more items in one ordinary commit (no lag). */
static tide_io_sim *committed(size_t range, uint64_t *log_syncs)
{
    tide_io_sim *sim = clone_base();
    tide_store *s = open_sim(sim, 0, "open");
    uint64_t syncs0;

    expect_inserted(s, T0, T0 + TAIL, KEY, VMIN, VMAX, "insert a batch");
    syncs0 = log_stats(sim).syncs;
    ti_commit_set_range_bytes(range);
    expect_ok(tide_store_sync(s), "commit the batch");
    ti_commit_set_range_bytes(0);
    *log_syncs = log_stats(sim).syncs - syncs0;
    expect_closed(&s, "close");
    expect_verify(sim, BASE + TAIL, "verify after the commit");
    return sim;
}

static void a_flush_in_tiny_ranges_writes_the_files_one_range_writes(void **state)
{
    uint64_t one = 0, tiny = 0, single = 0;
    tide_io_sim *a, *b, *c;
    tide_verify_report before, after;

    (void)state;
    OK(tide_store_verify_io(DB, tide_io_sim_io(g_base), &before));
    a = flushed(0, &one);
    b = flushed(TINY, &tiny);
    c = flushed(1, &single);
    OK(tide_store_verify_io(DB, tide_io_sim_io(a), &after));
    print_message("  flush of %u entries: buckets %llu -> %llu, spill records %llu -> %llu; "
                  "log syncs: %llu in one range, %llu in ranges of %u bytes, %llu of one bucket\n",
                  TAIL, (unsigned long long)before.buckets, (unsigned long long)after.buckets,
                  (unsigned long long)before.spill_records_written,
                  (unsigned long long)after.spill_records_written, (unsigned long long)one,
                  (unsigned long long)tiny, TINY, (unsigned long long)single);
    if (after.buckets <= before.buckets || after.spill_records_written <= before.spill_records_written)
        fail_msg("the flush was meant to split buckets and write spill records");
    /* The log's syncs: one a range, then the emptied log and the idle log. */
    expect_u64(one, 3, "log syncs of a flush of one range");
    if (tiny < one + 20 || single <= tiny)
        fail_msg("expected many more log syncs in tiny ranges: %llu, %llu, %llu",
                 (unsigned long long)one, (unsigned long long)tiny, (unsigned long long)single);
    expect_same_files(a, b, "ranges of TINY bytes against one range");
    expect_same_files(a, c, "ranges of one bucket against one range");
    tide_io_sim_destroy(a);
    tide_io_sim_destroy(b);
    tide_io_sim_destroy(c);

    a = committed(0, &one);
    b = committed(1, &tiny);
    expect_u64(one, 2, "log syncs of an ordinary commit of one range");
    if (tiny < one + 20) fail_msg("expected the ordinary commit in many ranges");
    expect_same_files(a, b, "an ordinary commit in ranges of one bucket against one range");
    tide_io_sim_destroy(a);
    tide_io_sim_destroy(b);
}

/* A crash image of `w` (kept: the sim's state after the power loss): every
 * acknowledged item survives Tide's recovery, which verifies; NuDB's view
 * (the log rolled back, no tide.meta) verifies with the indexed items. */
static void check_crash_image(tide_io_sim *w, const char *where)
{
    char what[512];
    tide_recover_report rep;
    tide_verify_report r;
    tide_io_sim *nudb = NULL;
    tide_store *s;
    int rc;

    OK(tide_io_sim_clone(w, &nudb));
    rc = tide_io_sim_io(nudb)->unlink(tide_io_sim_io(nudb), DB "/tide.meta");
    if (rc != 0 && rc != TIDE_ENOENT) fail_msg("%s: unlink tide.meta: %d", where, rc);
    snprintf(what, sizeof what, "%s: NuDB's view (recovered without tide.meta)", where);
    expect_ok(tide_store_recover_io(DB, tide_io_sim_io(nudb), &rep), what);
    expect_ok(tide_store_verify_io(DB, tide_io_sim_io(nudb), &r), what);
    if (r.keys != BASE && r.keys != BASE + TAIL)
        fail_msg("%s: expected %u or %u keys, got %llu", what, BASE, BASE + TAIL,
                 (unsigned long long)r.keys);
    tide_io_sim_destroy(nudb);

    snprintf(what, sizeof what, "%s: Tide's recovery", where);
    s = open_sim(w, LAG, what);
    expect_all(s, what);
    expect_closed(&s, what);
    expect_verify(w, BASE + TAIL, what);
}

/* The world stopped at call n of the flush (every call from it fails). 0
 * once the flush made fewer than n calls. */
static int stop_flush_at(tide_io_sim *sim, uint64_t n)
{
    tide_store *s = open_with_tail(sim);
    uint64_t c0 = tide_io_sim_calls(sim);
    int rc;

    ti_commit_set_range_bytes(TINY);
    OK(tide_io_sim_fail_at(sim, n, TIDE_IO_SIM_EIO, 1));
    rc = tide_store_flush(s);
    ti_commit_set_range_bytes(0);
    if (tide_io_sim_calls(sim) - c0 < n) {
        expect_ok(rc, "the flush with the fault past its calls");
        OK(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0));
        expect_closed(&s, "close");
        return 0;
    }
    if (rc == 0 && n < 2) fail_msg("call %llu failed and the flush succeeded", (unsigned long long)n);
    tide_store_close(s);        /* fails: the world has stopped */
    return 1;
}

static void the_world_stopped_anywhere_in_a_multi_range_flush_loses_nothing(void **state)
{
    uint64_t images = 0, n;

    (void)state;
    for (n = 1;; n++) {
        tide_io_sim *w = clone_base();
        uint64_t pending;
        char where[160];

        if (!stop_flush_at(w, n)) {
            tide_io_sim_destroy(w);
            break;
        }
        pending = tide_io_sim_pending_count(w);
        for (int k = 0; k < 5; k++) {
            tide_io_sim *v = NULL;
            OK(tide_io_sim_clone(w, &v));
            if (k == 0 && pending <= 64) OK(tide_io_sim_crash_state(v, 0, -1, 0));
            else if (k == 1 && pending <= 64)
                OK(tide_io_sim_crash_state(v, pending == 64 ? ~0ull : (1ull << pending) - 1, -1, 0));
            else OK(tide_io_sim_crash(v, n * 7 + (uint64_t)k));
            snprintf(where, sizeof where, "flush stopped at call %llu, crash image %d",
                     (unsigned long long)n, k);
            check_crash_image(v, where);
            tide_io_sim_destroy(v);
            images++;
        }
        tide_io_sim_destroy(w);
    }
    print_message("  the multi-range flush stopped at each of its %llu calls: %llu crash images "
                  "recovered and checked\n", (unsigned long long)(n - 1), (unsigned long long)images);
    if (n < 100) fail_msg("expected a flush of many ranges (%llu calls)", (unsigned long long)n);
}

/* One failed call (n) of the flush: the store rolls back and stays usable;
 * the next flush (the close's) writes `clean`'s files. 1 when the rollback read nudb.log
 * back, -1 once n is past the flush's calls. */
static int fail_once_at(tide_io_sim *clean, uint64_t n, tide_io_sim_fault kind)
{
    tide_io_sim *sim = clone_base();
    tide_store *s = open_with_tail(sim);
    uint64_t c0 = tide_io_sim_calls(sim), reads0 = log_stats(sim).reads;
    int rc, from_log;

    ti_commit_set_range_bytes(TINY);
    OK(tide_io_sim_fail_at(sim, n, kind, 0));
    rc = tide_store_flush(s);
    if (tide_io_sim_calls(sim) - c0 < n) {
        ti_commit_set_range_bytes(0);
        expect_closed(&s, "close");
        tide_io_sim_destroy(sim);
        return -1;
    }
    from_log = log_stats(sim).reads > reads0;
    expect_all(s, "every item after the failed flush");
    (void)rc;
    /* The close retries at once (a flush retried by the thread waits a
     * second) and flushes. */
    expect_closed(&s, "close: the flush again");
    ti_commit_set_range_bytes(0);
    expect_verify(sim, BASE + TAIL, "verify");
    expect_same_files(clean, sim, "the files after a failed flush and its retry");
    tide_io_sim_destroy(sim);
    return from_log;
}

/* Every call from n fails: the rollback too. The store is broken, the log
 * stays, and the next open (the disk well again) recovers it. */
static void fail_from(uint64_t n)
{
    tide_io_sim *sim = clone_base();
    tide_store *s = open_with_tail(sim);
    tide_store_info info;
    int rc;

    ti_commit_set_range_bytes(TINY);
    OK(tide_io_sim_fail_at(sim, n, TIDE_IO_SIM_EIO, 1));
    rc = tide_store_flush(s);
    ti_commit_set_range_bytes(0);
    if (rc == 0) fail_msg("call %llu on failed and the flush succeeded", (unsigned long long)n);
    if (tide_store_close(s) == 0) fail_msg("a broken store closed with 0");
    OK(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0));
    OK(tide_store_inspect(DB, tide_io_sim_io(sim), &info));
    if (info.log_file_bytes <= 62) fail_msg("the broken flush left no pre-images for recovery");
    s = open_sim(sim, LAG, "the open after a broken flush");
    expect_all(s, "every item after recovery");
    expect_closed(&s, "close");
    expect_verify(sim, BASE + TAIL, "verify after recovery");
    tide_io_sim_destroy(sim);
}

static void a_failure_in_a_later_range_rolls_back_from_the_log(void **state)
{
    static const tide_io_sim_fault kinds[2] = { TIDE_IO_SIM_EIO, TIDE_IO_SIM_SYNC_FAIL };
    uint64_t syncs, points = 0, from_log = 0, broken = 0;
    tide_io_sim *clean = flushed(0, &syncs);

    (void)state;
    for (int k = 0; k < 2; k++) {
        for (uint64_t n = 1;; n++) {
            int r = fail_once_at(clean, n, kinds[k]);
            if (r < 0) break;
            points++;
            if (r == 1) {
                from_log++;
                if (k == 0 && broken < 8) {
                    fail_from(n);
                    broken++;
                }
            }
        }
    }
    print_message("  %llu failure points; %llu rollbacks read earlier ranges back from nudb.log; "
                  "%llu broken flushes recovered at the next open\n", (unsigned long long)points,
                  (unsigned long long)from_log, (unsigned long long)broken);
    if (from_log < 10) fail_msg("expected rollbacks that read nudb.log back, got %llu",
                                (unsigned long long)from_log);
    tide_io_sim_destroy(clean);
}

/* ---- the flush's buffers on the real file system ---- */

static int64_t g_noted;
static tide_store *g_sampled;   /* the store whose commit_buffer_bytes count_note samples */
static uint64_t g_peak;         /* the most it reported */

/* Every commit buffer passes here before it is accounted, on the commit
 * thread, sometimes under key_lock held for writing: so the sample reads
 * the counter tide_store_get_info reports (s->commit_buffer_bytes) itself
 * rather than calling it (it takes key_lock to read). */
static void count_note(int id, int64_t bytes)
{
    if (id != 7) return;
    __atomic_fetch_add(&g_noted, bytes, __ATOMIC_RELAXED);
    if (g_sampled) {
        uint64_t now = __atomic_load_n(&g_sampled->commit_buffer_bytes, __ATOMIC_RELAXED);
        if (now > g_peak) g_peak = now;
    }
}

/* An ordinary commit of `n` items on the large store: its log writes (one
 * a range) must be as few as real record sizes allow: every range but the
 * last holds at least TI_COMMIT_RANGE_BYTES less one whole record (ranges
 * sized for full buckets would hold half that at load factor 0.5, and pay
 * twice the syncs). */
static void expect_ranges_filled(tide_io_sim *sim, tide_store *s, uint64_t from, uint64_t n)
{
    tide_io_sim_file_stats a, b;
    tide_store_info i0, i1;
    uint64_t writes, bytes, most;

    tide_store_get_info(s, &i0);
    OK(tide_io_sim_file_stats_get(sim, DB "/nudb.log", &a));
    expect_inserted(s, from, from + n, KEY, 1, 1, "a commit on the large store");
    expect_ok(tide_store_sync(s), "commit");
    OK(tide_io_sim_file_stats_get(sim, DB "/nudb.log", &b));
    tide_store_get_info(s, &i1);
    writes = b.writes - a.writes;
    bytes = b.bytes_written - a.bytes_written;
    most = 8 + ti_fmt_bucket_bytes(i1.capacity);     /* the record of a full bucket */
    print_message("  a commit of %llu items on %llu buckets: %llu log bytes in %llu ranges, "
                  "%llu syncs\n", (unsigned long long)n, (unsigned long long)i0.buckets,
                  (unsigned long long)bytes, (unsigned long long)writes,
                  (unsigned long long)(i1.syncs - i0.syncs));
    if (writes < 2) fail_msg("expected a commit of several ranges, got %llu", (unsigned long long)writes);
    if ((writes - 1) * (TI_COMMIT_RANGE_BYTES - most) > bytes)
        fail_msg("%llu ranges for %llu bytes of log: ranges are not filled by real record sizes",
                 (unsigned long long)writes, (unsigned long long)bytes);
    expect_u64(i1.syncs - i0.syncs, writes + 3, "syncs: one a range, nudb.dat, nudb.key, the log's cut");
}

/* ---- the 16-byte entries a commit places ---- */

static void expect_round_trip(uint64_t offset, uint64_t size, uint64_t hash)
{
    tide_entry e = { offset, size, hash }, back;
    uint64_t h = 0;

    back = ti_commit_pack_round_trip(&e, &h);
    expect_u64(back.offset, offset, "offset after packing");
    expect_u64(back.size, size, "size after packing");
    expect_u64(back.hash, hash, "hash after packing");
    expect_u64(h, hash, "the hash the packed entry sorts by");
}

static void packing_keeps_every_bit_of_offset_size_and_hash(void **state)
{
    (void)state;
    expect_round_trip(TIDE_FIELD48_MAX, 0xffffffffull, TIDE_FIELD48_MAX);
    expect_round_trip(0, 0, 0);
    expect_round_trip(0x800000000001ull, 0x80000001ull, 0x800000000001ull);
    expect_round_trip(0x123456789abcull, 0x89abcdefull, 0xfedcba987654ull);
    expect_round_trip(0xedcba9876543ull, 0x76543210ull, 0x0123456789abull);
}

static void make_key(uint8_t *key, unsigned i)
{
    memset(key, 0, KEY);
    snprintf((char *)key, KEY, "large value %u", i);
}

/* Values of 70,000 bytes (past 16 bits of size) and 16 MiB (past 24):
 * fetched back byte for byte from the buckets a commit and a flush wrote. */
static void expect_large_values(tide_store *s, unsigned from, unsigned to, const char *what)
{
    static const size_t len[2] = { 70000, 16u << 20 };
    uint8_t key[KEY];

    for (unsigned i = from; i < to; i++) {
        uint8_t *want = malloc(len[i % 2]);
        void *got = NULL;
        size_t n = 0;
        assert_non_null(want);
        th_value(i, len[i % 2], want);
        make_key(key, i);
        expect_ok(tide_store_fetch(s, key, &got, &n), what);
        expect_u64(n, len[i % 2], what);
        if (memcmp(got, want, n) != 0) fail_msg("%s: value %u differs", what, i);
        free(got);
        free(want);
    }
}

static void insert_large_values(tide_store *s, unsigned from, unsigned to)
{
    static const size_t len[2] = { 70000, 16u << 20 };
    uint8_t key[KEY];

    for (unsigned i = from; i < to; i++) {
        uint8_t *v = malloc(len[i % 2]);
        assert_non_null(v);
        th_value(i, len[i % 2], v);
        make_key(key, i);
        expect_ok(tide_store_insert(s, key, v, len[i % 2]), "insert a large value");
        free(v);
    }
}

static void large_values_come_back_whole_from_a_commit_and_a_flush(void **state)
{
    tide_store_create_opts co;
    tide_io_sim *sim = NULL;
    tide_store *s;

    (void)state;
    OK(tide_io_sim_create(&sim));
    g_large = sim;
    OK(tide_io_sim_mkdir(sim, DB));
    tide_store_create_opts_init(&co);
    co.key_size = KEY;
    co.io = tide_io_sim_io(sim);
    expect_ok(tide_store_create(DB, &co), "create");
    s = open_sim(sim, 0, "open");
    insert_large_values(s, 0, 2);
    expect_ok(tide_store_sync(s), "an ordinary commit");
    expect_large_values(s, 0, 2, "after an ordinary commit");
    expect_closed(&s, "close");
    s = open_sim(sim, LAG, "open deferred");
    insert_large_values(s, 2, 4);
    expect_ok(tide_store_sync(s), "sync the tail (phase A)");
    expect_ok(tide_store_flush(s), "flush");
    expect_large_values(s, 0, 4, "after the flush");
    expect_closed(&s, "close");
}

#define BIG_ITEMS 1000000u  /* at load factor 0.5: a key file of ~36 MiB */
#define BIG_TAIL 60000u

static void a_flush_s_buffers_stay_bounded_on_a_large_key_file(void **state)
{
    tide_store_create_opts co;
    tide_io_sim *sim = NULL;
    tide_io_sim_file_stats st;
    tide_store *s;
    uint64_t bound;

    (void)state;
    OK(tide_io_sim_create(&sim));
    g_big = sim;
    OK(tide_io_sim_mkdir(sim, DB));
    tide_store_create_opts_init(&co);
    co.key_size = KEY;
    co.load_factor = 0.5;
    co.io = tide_io_sim_io(sim);
    expect_ok(tide_store_create(DB, &co), "create");
    s = open_sim(sim, 0, "open");
    for (unsigned b = 0; b < 4; b++) {
        expect_inserted(s, b * (BIG_ITEMS / 4), (b + 1) * (BIG_ITEMS / 4), KEY, 1, 1, "load");
        expect_ok(tide_store_sync(s), "commit");
    }
    expect_ranges_filled(sim, s, 2 * (uint64_t)BIG_ITEMS, 50000);
    expect_closed(&s, "close");
    OK(tide_io_sim_file_stats_get(sim, DB "/nudb.key", &st));

    {
        tide_store_opts o;
        th_store_opts(&o);
        o.io = tide_io_sim_io(sim);
        o.commit_interval_ms = SLOW;
        o.index_lag_bytes = 2u << 20;        /* 131072 slots: 98304 entries */
        o.note_alloc = count_note;
        o.commit_account_id = 7;
        expect_ok(tide_store_open(&s, DB, &o), "open deferred");
    }
    expect_inserted(s, BIG_ITEMS, BIG_ITEMS + BIG_TAIL, KEY, 1, 1, "insert the tail");
    expect_ok(tide_store_sync(s), "sync the tail (phase A)");
    __atomic_store_n(&g_noted, 0, __ATOMIC_RELAXED);
    g_sampled = s;
    g_peak = 0;
    expect_ok(tide_store_flush(s), "flush");
    g_sampled = NULL;
    {
        /* docs/MEMORY-LIMIT.md: at the peak, the range, the read and write
         * buffers and a block, 16 bytes an entry placed and 72 for each of
         * the m leaving split sources (24-48 in `moved`, 24 of its sort's
         * scratch); m is about n / 2 (52 bytes an entry): 64 leaves room
         * for m up to two thirds of n. */
        tide_store_info in;
        uint64_t peak_bound = TI_COMMIT_RANGE_BYTES + (3u << 20) + (64u << 10) + 64ull * BIG_TAIL;
        tide_store_get_info(s, &in);
        print_message("  commit_buffer_bytes: peak %llu during the flush (bound %llu), %llu after\n",
                      (unsigned long long)g_peak, (unsigned long long)peak_bound,
                      (unsigned long long)in.commit_buffer_bytes);
        if (g_peak < TI_COMMIT_RANGE_BYTES / 2 || g_peak > peak_bound)
            fail_msg("commit_buffer_bytes peaked at %llu, outside (%zu, %llu]", (unsigned long long)g_peak,
                     TI_COMMIT_RANGE_BYTES / 2, (unsigned long long)peak_bound);
        expect_u64(in.commit_buffer_bytes, 0, "commit_buffer_bytes after the flush");
    }
    /* docs/MEMORY-LIMIT.md: the range, the read and write buffers, and
     * per entry 16 bytes placed + 16 of their sort's scratch + 24 for
     * those leaving a split source, in buffers grown by doubling (every
     * size noted: up to 96 in all), and 24 of their sort's scratch. */
    bound = TI_COMMIT_RANGE_BYTES + (3u << 20) + (64u << 10) + 112ull * BIG_TAIL;
    print_message("  key file %llu bytes (%.1f x TI_COMMIT_RANGE_BYTES); a flush of %u entries "
                  "allocated %lld bytes of buffers in all (bound %llu)\n",
                  (unsigned long long)st.size, (double)st.size / TI_COMMIT_RANGE_BYTES, BIG_TAIL,
                  (long long)g_noted, (unsigned long long)bound);
    if (st.size < 6 * (uint64_t)TI_COMMIT_RANGE_BYTES) fail_msg("the key file is too small");
    if (g_noted <= 0 || (uint64_t)g_noted > bound)
        fail_msg("the flush allocated %lld bytes, past its bound of %llu", (long long)g_noted,
                 (unsigned long long)bound);
    expect_items(s, BIG_ITEMS - 1000, BIG_ITEMS + BIG_TAIL, KEY, 1, 1, "items after the flush");
    expect_closed(&s, "close");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(a_flush_in_tiny_ranges_writes_the_files_one_range_writes, test_setup),
        cmocka_unit_test_setup(the_world_stopped_anywhere_in_a_multi_range_flush_loses_nothing, test_setup),
        cmocka_unit_test_setup(a_failure_in_a_later_range_rolls_back_from_the_log, test_setup),
        cmocka_unit_test(packing_keeps_every_bit_of_offset_size_and_hash),
        cmocka_unit_test_setup(large_values_come_back_whole_from_a_commit_and_a_flush, test_setup),
        cmocka_unit_test_setup(a_flush_s_buffers_stay_bounded_on_a_large_key_file, test_setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
