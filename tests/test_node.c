/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_node.c: the node's read and write paths, and the sweeper's rounds.
 *
 * The sweeper tests run with an interval of tens of milliseconds, a trace
 * callback that records each step with its time, and (where the point is the
 * order, not the kernel) a release function standing in for tide_mem_trim,
 * so they check exactly what the node promises: both caches swept, in order,
 * then one release, then a wait of at least the interval counted from the
 * end of the round. Lower bounds only: a loaded machine makes rounds late,
 * never early.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "mem/account.h"
#include "mem/alloc.h"
#include "node/node.h"
#include "tide/error.h"

/* Every test gets a fresh scratch directory; f->dir, the node's data
 * directory inside it, does not exist yet (the node makes it). */
typedef th_scratch fixture;
#define setup    th_scratch_setup
#define teardown th_scratch_teardown

static void key_of(uint64_t i, uint8_t key[32]) { th_key(i, 32, key); }

static tide_node *open_node(const char *dir, uint64_t interval_ms)
{
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_opts_init(&o);
    o.dir = dir;
    o.sweep_interval_ms = interval_ms;
    int rc = tide_node_open(&n, &o);
    if (rc) fail_msg("tide_node_open(%s): %s (%s)", dir, tide_strerror(rc), tide_last_error());
    return n;
}

static void expect_stored(tide_node *n, uint64_t i, const char *what)
{
    uint8_t key[32], want[600];
    tide_cache_obj *v = NULL;
    size_t len = th_len(i, 1, sizeof want);
    key_of(i, key);
    th_value(i, len, want);
    int rc = tide_node_get(n, key, &v);
    if (rc) fail_msg("%s: get of key %llu: expected the value, got %s", what, (unsigned long long)i,
                     tide_strerror(rc));
    expect_u64(tide_cache_obj_len(v), len, what);
    if (memcmp(tide_cache_obj_data(v), want, len) != 0) fail_msg("%s: key %llu: wrong bytes", what,
                                                                 (unsigned long long)i);
    tide_cache_obj_release(v);
}

static void put_value(tide_node *n, uint64_t i)
{
    uint8_t key[32], val[600];
    size_t len = th_len(i, 1, sizeof val);
    key_of(i, key);
    th_value(i, len, val);
    int rc = tide_node_put(n, key, val, len);
    if (rc) fail_msg("put of key %llu: %s (%s)", (unsigned long long)i, tide_strerror(rc), tide_last_error());
}

/* ---- read and write paths ---------------------------------------------------------------------- */

static void open_creates_the_store_and_its_directory_on_first_run(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    char p[4200];
    assert_true(th_exists(th_path(p, sizeof p, f->dir, "nudb.dat")));
    assert_true(th_exists(th_path(p, sizeof p, f->dir, "nudb.key")));
    expect_u64(tide_node_key_size(n), 32, "key size of a new store");
    expect_rc(tide_node_close(n), 0, "close");
}

static void open_refuses_a_missing_store_when_creation_is_off(void **state)
{
    fixture *f = *state;
    tide_node_opts o;
    tide_node *n = (tide_node *)1;
    tide_node_opts_init(&o);
    o.dir = f->dir;
    o.create_if_missing = 0;
    expect_rc(tide_node_open(&n, &o), TIDE_ENOENT, "open without a store");
    assert_null(n);
    expect_contains(tide_last_error(), "no store here", "the message");
    o.dir = NULL;
    expect_rc(tide_node_open(&n, &o), TIDE_EINVAL, "open without a directory");
}

static void a_second_node_on_the_same_store_is_refused_as_busy(void **state)
{
    fixture *f = *state;
    tide_node *a = open_node(f->dir, 0), *b = NULL;
    tide_node_opts o;
    tide_node_opts_init(&o);
    o.dir = f->dir;
    expect_rc(tide_node_open(&b, &o), TIDE_EBUSY, "second open");
    expect_rc(tide_node_close(a), 0, "close");
}

static void a_put_is_served_from_the_node_cache(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    tide_node_totals t;
    put_value(n, 1);
    expect_stored(n, 1, "after put");
    tide_node_totals_get(n, &t);
    expect_u64(t.puts, 1, "puts");
    expect_u64(t.gets_cache, 1, "gets answered by the cache");
    expect_u64(t.gets_store, 0, "gets answered by the store");
    expect_rc(tide_node_close(n), 0, "close");
}

static void after_reopen_the_first_get_reads_the_store_and_the_second_the_cache(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    tide_node_totals t;
    for (uint64_t i = 0; i < 100; i++) put_value(n, i);
    expect_rc(tide_node_close(n), 0, "close");
    n = open_node(f->dir, 0);
    expect_stored(n, 42, "first get");
    expect_stored(n, 42, "second get");
    tide_node_totals_get(n, &t);
    expect_u64(t.gets_store, 1, "gets answered by the store");
    expect_u64(t.gets_cache, 1, "gets answered by the cache");
    expect_rc(tide_node_close(n), 0, "close");
}

static void a_put_of_a_stored_key_is_refused_whether_cached_or_not(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    uint8_t key[32];
    key_of(7, key);
    put_value(n, 7);
    expect_rc(tide_node_put(n, key, "other", 5), TIDE_EEXIST, "put of a cached key");
    expect_rc(tide_node_close(n), 0, "close");
    n = open_node(f->dir, 0);
    expect_rc(tide_node_put(n, key, "other", 5), TIDE_EEXIST, "put of a stored, uncached key");
    expect_stored(n, 7, "the first value stays");
    tide_node_totals t;
    tide_node_totals_get(n, &t);
    expect_u64(t.puts_existing, 1, "puts that found the key");
    expect_u64(t.puts, 0, "puts that stored");
    expect_rc(tide_node_close(n), 0, "close");
}

static void a_repeated_miss_is_answered_by_the_key_cache_until_a_put(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    tide_node_totals t;
    tide_cache_obj *v = (tide_cache_obj *)1;
    uint8_t key[32];
    key_of(99, key);
    expect_rc(tide_node_get(n, key, &v), TIDE_ENOTFOUND, "first get of a missing key");
    assert_null(v);
    expect_rc(tide_node_get(n, key, &v), TIDE_ENOTFOUND, "second get of a missing key");
    tide_node_totals_get(n, &t);
    expect_u64(t.gets_keycache, 1, "misses answered by the key cache");
    expect_u64(t.gets_missing, 2, "misses");
    put_value(n, 99);
    expect_stored(n, 99, "a get after the put");
    expect_rc(tide_node_close(n), 0, "close");
}

/* The server's two halves of a GET miss (the loop's tide_node_get_cached,
 * then a worker's tide_node_get_miss) ask each cache once: one node-cache
 * lookup and one key-cache probe in all, the miss counted once; the next
 * get is answered by the loop's half from the key cache. */
static void a_get_miss_in_two_halves_asks_each_cache_once(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    tide_cache_stats c0, c1;
    tide_keycache_stats k0, k1;
    tide_node_totals t;
    tide_cache_obj *v = (tide_cache_obj *)1;
    uint8_t key[32];

    key_of(98, key);
    tide_node_cache_stats(n, &c0);
    tide_node_keycache_stats(n, &k0);
    expect_rc(tide_node_get_cached(n, key, &v), TIDE_NODE_GET_MISS, "the loop's half of a miss");
    assert_null(v);
    tide_node_totals_get(n, &t);
    expect_u64(t.gets, 0, "the loop's half counts nothing it does not answer");
    expect_rc(tide_node_get_miss(n, key, NULL, &v), TIDE_ENOTFOUND, "the worker's half");
    assert_null(v);
    tide_node_cache_stats(n, &c1);
    tide_node_keycache_stats(n, &k1);
    expect_u64(c1.hits + c1.misses - c0.hits - c0.misses, 1, "node-cache lookups for one miss");
    expect_u64(k1.hits + k1.misses - k0.hits - k0.misses, 1, "key-cache probes for one miss");
    tide_node_totals_get(n, &t);
    expect_u64(t.gets, 1, "gets");
    expect_u64(t.gets_missing, 1, "misses");
    expect_rc(tide_node_get_cached(n, key, &v), TIDE_ENOTFOUND, "the next get, from the key cache on the loop");
    expect_rc(tide_node_close(n), 0, "close");
}

static void cache_memory_is_counted_in_the_node_cache_account(void **state)
{
    fixture *f = *state;
    int64_t before = tide_mem_account_get(TIDE_MEM_NODE_CACHE);
    tide_node *n = open_node(f->dir, 0);
    tide_cache_stats cs;
    for (uint64_t i = 0; i < 500; i++) put_value(n, i);
    tide_node_cache_stats(n, &cs);
    expect_u64((uint64_t)(tide_mem_account_get(TIDE_MEM_NODE_CACHE) - before), cs.bytes,
               "node_cache account against the cache's bytes");
    expect_rc(tide_node_close(n), 0, "close");
    expect_u64((uint64_t)tide_mem_account_get(TIDE_MEM_NODE_CACHE), (uint64_t)before,
               "node_cache account after close");
}

static void values_put_without_sync_survive_close_and_reopen(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    for (uint64_t i = 0; i < 2000; i++) put_value(n, i);
    expect_rc(tide_node_sync(n), 0, "sync");
    for (uint64_t i = 2000; i < 3000; i++) put_value(n, i);
    expect_rc(tide_node_close(n), 0, "close");
    n = open_node(f->dir, 0);
    for (uint64_t i = 0; i < 3000; i += 37) expect_stored(n, i, "after reopen");
    expect_rc(tide_node_close(n), 0, "close");
}

static int wait_keys(tide_node *n, uint64_t *keys)
{
    double end = th_now_ms() + 20000;
    while (th_now_ms() < end) {
        if (tide_node_keys(n, keys)) return 0;
        usleep(2000);
    }
    return -1;
}

static void the_key_count_is_the_records_at_open_plus_the_inserts_since(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    uint64_t keys = 0;
    uint8_t key[32];

    if (wait_keys(n, &keys) != 0) fail_msg("the key count of an empty store should finish");
    expect_u64(keys, 0, "keys of a new store");
    for (uint64_t i = 0; i < 300; i++) put_value(n, i);
    key_of(5, key);
    expect_rc(tide_node_put(n, key, "again", 5), TIDE_EEXIST, "a put of a stored key");
    assert_true(tide_node_keys(n, &keys));
    expect_u64(keys, 300, "keys after 300 puts and one refused");
    expect_rc(tide_node_close(n), 0, "close");
    n = open_node(f->dir, 0);
    for (uint64_t i = 300; i < 310; i++) put_value(n, i);   /* perhaps before the count is done */
    if (wait_keys(n, &keys) != 0) fail_msg("the key count should finish within 20 s");
    expect_u64(keys, 310, "keys after reopen and 10 more puts");
    expect_rc(tide_node_close(n), 0, "close");
}

static void no_key_count_is_made_over_the_size_limit(void **state)
{
    fixture *f = *state;
    tide_node_opts o;
    tide_node *n = NULL;
    uint64_t keys = 77;

    tide_node_opts_init(&o);
    o.dir = f->dir;
    o.sweep_interval_ms = 0;
    o.count_keys_max_bytes = 1;          /* below any data file's header */
    expect_rc(tide_node_open(&n, &o), 0, "open");
    put_value(n, 1);
    usleep(50000);
    expect_u64((uint64_t)tide_node_keys(n, &keys), 0, "keys known");
    expect_u64(keys, 77, "keys untouched");
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- the sweeper --------------------------------------------------------------------------------- */

#define MAX_STEPS 256

typedef struct recorder {
    pthread_mutex_t lock;
    int n;
    const char *step[MAX_STEPS];
    double at_ms[MAX_STEPS];
    int releases;
    unsigned release_sleep_ms;
} recorder;

static void record(void *arg, const char *step)
{
    recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    if (r->n < MAX_STEPS) {
        r->step[r->n] = step;
        r->at_ms[r->n] = th_now_ms();
        r->n++;
    }
    pthread_mutex_unlock(&r->lock);
}

static int fake_release(void *arg, tide_mem_trim_report *out)
{
    recorder *r = arg;
    memset(out, 0, sizeof *out);
    out->family = TIDE_MEM_ALLOC_GLIBC;
    out->result = 1;
    out->rss_before = 100u << 20;
    out->rss_after = 90u << 20;
    out->rss_delta = -(10 << 20);
    out->duration_ns = (uint64_t)r->release_sleep_ms * 1000000u;
    if (r->release_sleep_ms) usleep(r->release_sleep_ms * 1000u);
    pthread_mutex_lock(&r->lock);
    r->releases++;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

static int wait_sweeps(tide_node *n, uint64_t want, double limit_ms)
{
    double t0 = th_now_ms();
    tide_node_totals t;
    for (;;) {
        tide_node_totals_get(n, &t);
        if (t.sweeps >= want) return 0;
        if (th_now_ms() - t0 > limit_ms) return -1;
        usleep(2000);
    }
}

/* Options for a node on `dir` whose release is fake_release recording
 * into `rec`, swept every `interval_ms` (0: only when a test sweeps). */
static void fake_release_opts(tide_node_opts *o, const char *dir, unsigned interval_ms, recorder *rec)
{
    tide_node_opts_init(o);
    o->dir = dir;
    o->sweep_interval_ms = interval_ms;
    o->hooks.release = fake_release;
    o->hooks.release_arg = rec;
}

static void each_round_sweeps_both_caches_in_order_then_evacuates_then_releases_once(void **state)
{
    fixture *f = *state;
    recorder rec = { .lock = PTHREAD_MUTEX_INITIALIZER, .release_sleep_ms = 20 };
    tide_node_opts o;
    tide_node *n = NULL;
    const unsigned interval = 40;
    static const char *const order[5] = { "sweep node_cache", "sweep key_cache", "evacuate", "release", "done" };

    fake_release_opts(&o, f->dir, interval, &rec);
    o.hooks.trace = record;
    o.hooks.trace_arg = &rec;
    expect_rc(tide_node_open(&n, &o), 0, "open");
    if (wait_sweeps(n, 4, 20000) != 0) fail_msg("expected 4 sweeps within 20 s");
    expect_rc(tide_node_close(n), 0, "close");

    pthread_mutex_lock(&rec.lock);
    int rounds = rec.n / 5;
    if (rounds < 4 || rec.n % 5 != 0)
        fail_msg("expected whole rounds of 5 steps, at least 4 rounds; got %d steps", rec.n);
    for (int i = 0; i < rec.n; i++)
        if (strcmp(rec.step[i], order[i % 5]) != 0)
            fail_msg("step %d: expected \"%s\", got \"%s\"", i, order[i % 5], rec.step[i]);
    expect_u64((uint64_t)rec.releases, (uint64_t)rounds, "release calls, one per round");
    /* The first round is due one interval after open; each next one an
     * interval after the previous round ended, the release included. */
    for (int r = 1; r < rounds; r++) {
        double gap = rec.at_ms[5 * r] - rec.at_ms[5 * r - 1];
        if (gap < interval - 1.0)   /* 1 ms for the two clock reads' spacing */
            fail_msg("round %d began %.1f ms after round %d ended; expected at least %u ms", r + 1, gap, r,
                     interval);
    }
    pthread_mutex_unlock(&rec.lock);
}

static void reports_carry_rss_before_and_after_and_a_duration(void **state)
{
    fixture *f = *state;
    recorder rec = { .lock = PTHREAD_MUTEX_INITIALIZER, .release_sleep_ms = 1 };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r, latest[TIDE_NODE_REPORTS + 1];
    tide_node_totals t;

    fake_release_opts(&o, f->dir, 0, &rec);
    expect_rc(tide_node_open(&n, &o), 0, "open");
    for (int i = 0; i < 70; i++) tide_node_sweep(n, &r);
    expect_u64(r.seq, 70, "seq of the 70th round");
    assert_true(r.trimmed);
    expect_u64(r.trim.rss_before, 100u << 20, "rss_before");
    expect_u64(r.trim.rss_after, 90u << 20, "rss_after");
    expect_u64(r.trim.duration_ns, 1000000, "duration");
    expect_u64(tide_node_reports(n, latest, TIDE_NODE_REPORTS + 1), TIDE_NODE_REPORTS, "reports kept");
    expect_u64(latest[0].seq, 70, "newest first");
    expect_u64(latest[TIDE_NODE_REPORTS - 1].seq, 70 - TIDE_NODE_REPORTS + 1, "oldest kept");
    tide_node_totals_get(n, &t);
    expect_u64(t.sweeps, 70, "sweeps");
    expect_u64(t.trims, 70, "trims");
    expect_u64(t.trims_lowered, 70, "trims that lowered RSS");
    expect_u64(t.trim_released_bytes, 70ull * (10 << 20), "bytes released");
    expect_u64((uint64_t)-t.last_trim_rss_delta, 10 << 20, "last trim's RSS delta");
    expect_u64(t.trim_duration.count, 70, "trim histogram count");
    expect_u64(t.trim_duration.sum_ns, 70ull * 1000000, "trim histogram sum");
    /* 1 ms lands in the 0.001 s bucket (le is inclusive) and every one above. */
    expect_u64(t.trim_duration.bucket[1], 0, "trims <= 0.5 ms");
    expect_u64(t.trim_duration.bucket[2], 70, "trims <= 1 ms");
    expect_u64(t.trim_duration.bucket[TIDE_HIST_BUCKETS], 70, "trims <= +Inf");
    expect_u64(t.sweep_duration.count, 70, "sweep histogram count");
    expect_rc(tide_node_close(n), 0, "close");
}

static void a_real_round_trims_with_the_allocator_and_measures_it(void **state)
{
    fixture *f = *state;
    tide_node *n = open_node(f->dir, 0);
    tide_node_sweep_report r;
    tide_node_sweep(n, &r);
    assert_true(r.trimmed);
    if (tide_mem_alloc_family() == TIDE_MEM_ALLOC_UNKNOWN) {
        /* No family named: tide_mem_alloc_release has no call to make and
         * refuses, so there is no release rc to expect. */
        expect_rc(tide_node_close(n), 0, "close");
        th_skip("malloc is served by an allocator Tide cannot name; no release call to check");
    }
    /* Every named family, the sanitizers' included, has a release that
     * returns 0 (alloc.h); the /proc reads around it must succeed too. */
    expect_rc(r.trim_rc, 0, "trim rc");
    if (r.trim.rss_before == 0 || r.trim.rss_after == 0)
        fail_msg("expected RSS before and after from statm, got %llu and %llu",
                 (unsigned long long)r.trim.rss_before, (unsigned long long)r.trim.rss_after);
    expect_u64((uint64_t)r.trim.family, (uint64_t)tide_mem_alloc_family(), "family released");
    expect_rc(tide_node_close(n), 0, "close");
}

static void with_trim_off_a_round_sweeps_but_never_releases(void **state)
{
    fixture *f = *state;
    recorder rec = { .lock = PTHREAD_MUTEX_INITIALIZER };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;
    tide_node_totals t;

    fake_release_opts(&o, f->dir, 0, &rec);
    o.trim = 0;
    expect_rc(tide_node_open(&n, &o), 0, "open");
    tide_node_sweep(n, &r);
    tide_node_sweep(n, &r);
    assert_false(r.trimmed);
    expect_u64((uint64_t)rec.releases, 0, "release calls");
    tide_node_totals_get(n, &t);
    expect_u64(t.sweeps, 2, "sweeps");
    expect_u64(t.trims, 0, "trims");
    expect_rc(tide_node_close(n), 0, "close");
}

static void trim_policy_every_n_trims_only_every_nth_round(void **state)
{
    fixture *f = *state;
    recorder rec = { .lock = PTHREAD_MUTEX_INITIALIZER };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;
    tide_node_totals t;

    fake_release_opts(&o, f->dir, 0, &rec);
    expect_rc(tide_trim_policy_parse("every:3", &o.trim_policy, &o.trim_param), 0, "parse every:3");
    expect_rc(tide_node_open(&n, &o), 0, "open");
    for (int i = 1; i <= 7; i++) {
        tide_node_sweep(n, &r);
        expect_u64((uint64_t)r.trimmed, i % 3 == 0, "round trimmed only when its number is a multiple of 3");
    }
    tide_node_totals_get(n, &t);
    expect_u64(t.trims, 2, "trims in 7 rounds");
    expect_u64(t.trims_skipped, 5, "rounds skipped");
    expect_u64((uint64_t)rec.releases, 2, "release calls");
    expect_rc(tide_node_close(n), 0, "close");
}

typedef struct fake_clock { uint64_t us; } fake_clock;
static uint64_t read_fake(void *arg);

static void trim_policy_freed_trims_only_after_a_sweep_that_freed_enough(void **state)
{
    fixture *f = *state;
    recorder rec = { .lock = PTHREAD_MUTEX_INITIALIZER };
    fake_clock clk = { 1000000 };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;

    fake_release_opts(&o, f->dir, 0, &rec);
    o.cache_age_s = 5;
    o.hooks.clock_us = read_fake;
    o.hooks.clock_arg = &clk;
    expect_rc(tide_trim_policy_parse("freed:64KiB", &o.trim_policy, &o.trim_param), 0, "parse freed:64KiB");
    expect_u64(o.trim_param, 65536, "freed's bytes");
    expect_rc(tide_node_open(&n, &o), 0, "open");
    for (uint64_t i = 0; i < 400; i++) put_value(n, i);   /* about 120 KiB of values */
    tide_node_sweep(n, &r);
    assert_false(r.trimmed);
    expect_u64(r.freed_bytes, 0, "nothing aged out yet");
    clk.us += 6 * 1000000u;
    tide_node_sweep(n, &r);
    if (r.freed_bytes < 65536) fail_msg("expected the sweep to free at least 64 KiB, it freed %llu",
                                        (unsigned long long)r.freed_bytes);
    assert_true(r.trimmed);
    tide_node_sweep(n, &r);
    assert_false(r.trimmed);
    expect_u64((uint64_t)rec.releases, 1, "release calls");
    expect_rc(tide_node_close(n), 0, "close");
}

static void trim_policies_parse_and_print_in_the_same_form(void **state)
{
    (void)state;
    static const char *const good[] = { "always", "never", "every:4", "freed:64MiB", "free-pct:20" };
    static const char *const bad[] = { "", "sometimes", "every:0", "every:", "every:x", "free-pct:100",
                                       "free-pct:0", "freed:0", "freed:lots", "every:3x" };
    int p;
    uint64_t v;
    char back[64];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        expect_rc(tide_trim_policy_parse(good[i], &p, &v), 0, good[i]);
        tide_trim_policy_format(p, v, back, sizeof back);
        expect_str(back, good[i], "printed back");
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tide_trim_policy_parse(bad[i], &p, &v) != TIDE_EINVAL)
            fail_msg("trim policy '%s': expected TIDE_EINVAL", bad[i]);
}

static uint64_t read_fake(void *arg) { return ((fake_clock *)arg)->us; }

static void a_sweep_evicts_what_aged_out_of_both_caches(void **state)
{
    fixture *f = *state;
    fake_clock clk = { 1000000 };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;
    tide_cache_stats cs;
    tide_keycache_stats ks;
    tide_cache_obj *v;
    uint8_t key[32];

    tide_node_opts_init(&o);
    o.dir = f->dir;
    o.sweep_interval_ms = 0;
    o.cache_age_s = 5;
    o.key_cache_age_s = 5;
    o.hooks.clock_us = read_fake;
    o.hooks.clock_arg = &clk;
    expect_rc(tide_node_open(&n, &o), 0, "open");
    for (uint64_t i = 0; i < 50; i++) put_value(n, i);
    key_of(1000, key);
    expect_rc(tide_node_get(n, key, &v), TIDE_ENOTFOUND, "a miss");
    tide_node_sweep(n, &r);
    expect_u64(r.node_cache.evicted, 0, "evicted before the age");
    clk.us += 6 * 1000000u;
    tide_node_sweep(n, &r);
    expect_u64(r.node_cache.evicted, 50, "node cache entries evicted after the age");
    expect_u64(r.key_cache.evicted, 1, "key cache entries evicted after the age");
    tide_node_cache_stats(n, &cs);
    tide_node_keycache_stats(n, &ks);
    expect_u64(cs.strong + cs.weak, 0, "node cache entries left");
    expect_u64(ks.entries, 0, "key cache entries left");
    expect_stored(n, 3, "a get after eviction reads the store");
    expect_rc(tide_node_close(n), 0, "close");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(open_creates_the_store_and_its_directory_on_first_run, setup, teardown),
        cmocka_unit_test_setup_teardown(open_refuses_a_missing_store_when_creation_is_off, setup, teardown),
        cmocka_unit_test_setup_teardown(a_second_node_on_the_same_store_is_refused_as_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(a_put_is_served_from_the_node_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(a_get_miss_in_two_halves_asks_each_cache_once, setup, teardown),
        cmocka_unit_test_setup_teardown(after_reopen_the_first_get_reads_the_store_and_the_second_the_cache,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_put_of_a_stored_key_is_refused_whether_cached_or_not, setup, teardown),
        cmocka_unit_test_setup_teardown(a_repeated_miss_is_answered_by_the_key_cache_until_a_put, setup, teardown),
        cmocka_unit_test_setup_teardown(cache_memory_is_counted_in_the_node_cache_account, setup, teardown),
        cmocka_unit_test_setup_teardown(values_put_without_sync_survive_close_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(the_key_count_is_the_records_at_open_plus_the_inserts_since, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(no_key_count_is_made_over_the_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(each_round_sweeps_both_caches_in_order_then_evacuates_then_releases_once, setup, teardown),
        cmocka_unit_test_setup_teardown(reports_carry_rss_before_and_after_and_a_duration, setup, teardown),
        cmocka_unit_test_setup_teardown(a_real_round_trims_with_the_allocator_and_measures_it, setup, teardown),
        cmocka_unit_test_setup_teardown(with_trim_off_a_round_sweeps_but_never_releases, setup, teardown),
        cmocka_unit_test_setup_teardown(a_sweep_evicts_what_aged_out_of_both_caches, setup, teardown),
        cmocka_unit_test_setup_teardown(trim_policy_every_n_trims_only_every_nth_round, setup, teardown),
        cmocka_unit_test_setup_teardown(trim_policy_freed_trims_only_after_a_sweep_that_freed_enough, setup,
                                        teardown),
        cmocka_unit_test(trim_policies_parse_and_print_in_the_same_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
