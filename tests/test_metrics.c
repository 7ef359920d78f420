/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_metrics.c: the node's Prometheus exposition, rendered in process.
 *
 * The text must pass promtool (Debian's prometheus package) and Tide's own
 * stricter checks (tests/promcheck.c), carry every family of the design
 * (docs/ARCHITECTURE.md, "Metric families") that this allocator has, and
 * agree with the figures it is computed from:
 * the node-cache bytes against the sizes put, the trims against the
 * sweeper's totals.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "promcheck.h"
#include "mem/account.h"
#include "mem/alloc.h"
#include "node/metrics.h"
#include "node/node.h"
#include "tide/error.h"

typedef struct fixture {
    th_scratch sc;
    tide_node *node;
} fixture;

/* A node on a fresh scratch directory, without a sweeper. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    tide_node_opts o;
    if (f == NULL || th_scratch_init(&f->sc) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    tide_node_opts_init(&o);
    o.dir = f->sc.dir;
    o.sweep_interval_ms = 0;
    return tide_node_open(&f->node, &o) != 0 ? -1 : 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->node) tide_node_close(f->node);
    th_teardown(state);
    free(f);
    return 0;
}

static char *render(tide_node *n, const tide_metrics_opts *o)
{
    char *text = NULL;
    size_t len = 0;
    int rc = tide_metrics_render(n, o, &text, &len);
    if (rc) fail_msg("render: %s", tide_strerror(rc));
    expect_u64(strlen(text), len, "length reported");
    return text;
}

static void expect_family(const char *text, const char *name, const char *type)
{
    char want[200];
    snprintf(want, sizeof want, "# TYPE %s %s\n", name, type);
    if (strstr(text, want) == NULL) fail_msg("expected the family line '%s' in the exposition", want);
}

static void the_exposition_passes_promtool_and_tides_own_checks(void **state)
{
    fixture *f = *state;
    char msg[4096];
    uint8_t key[32];

    for (uint64_t i = 0; i < 100; i++) {
        th_key(i, 32, key);
        expect_rc(tide_node_put(f->node, key, "value", 5), 0, "put");
    }
    tide_node_sweep(f->node, NULL);
    char *text = render(f->node, NULL);
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    int st = th_promtool_check(text, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
    free(text);
}

static void every_design_family_is_present_with_its_type(void **state)
{
    fixture *f = *state;
    uint64_t keys;
    double end = th_now_ms() + 20000;
    while (!tide_node_keys(f->node, &keys) && th_now_ms() < end) usleep(2000);   /* the count at open */
    tide_node_sweep(f->node, NULL);
    char *text = render(f->node, NULL);
    expect_family(text, "tide_memory_consumer_bytes", "gauge");
    expect_family(text, "tide_memory_allocations_total", "counter");
    expect_family(text, "tide_memory_allocated_bytes_total", "counter");
    expect_family(text, "tide_cache_entries", "gauge");
    expect_family(text, "tide_cache_bytes", "gauge");
    expect_family(text, "tide_cache_target_entries", "gauge");
    expect_family(text, "tide_cache_budget_bytes", "gauge");
    expect_family(text, "tide_cache_hits_total", "counter");
    expect_family(text, "tide_cache_misses_total", "counter");
    expect_family(text, "tide_cache_evictions_total", "counter");
    expect_family(text, "tide_sweeps_total", "counter");
    expect_family(text, "tide_sweep_duration_seconds", "histogram");
    expect_family(text, "tide_trims_total", "counter");
    expect_family(text, "tide_trim_duration_seconds", "histogram");
    expect_family(text, "tide_trim_released_bytes_total", "counter");
    expect_family(text, "tide_trim_last_rss_delta_bytes", "gauge");
    expect_family(text, "tide_trim_minor_faults_total", "counter");
    expect_family(text, "tide_cache_arena_live_bytes", "gauge");
    expect_family(text, "tide_cache_arena_resident_bytes", "gauge");
    expect_family(text, "tide_cache_arena_segments", "gauge");
    expect_family(text, "tide_cache_arena_evacuated_objects_total", "counter");
    expect_family(text, "tide_cache_arena_evacuated_bytes_total", "counter");
    expect_family(text, "tide_cache_arena_released_segments_total", "counter");
    expect_family(text, "tide_cache_arena_evacuate_seconds_total", "counter");
    expect_family(text, "tide_cache_arena_release_seconds_total", "counter");
    /* one sample per cache's arena */
    assert_false(isnan(th_prom_value(text, "tide_cache_arena_live_bytes{cache=\"node_cache\"}")));
    assert_false(isnan(th_prom_value(text, "tide_cache_arena_resident_bytes{cache=\"key_cache\"}")));
    assert_false(isnan(th_prom_value(text, "tide_cache_arena_segments{cache=\"key_cache\",state=\"open\"}")));
    expect_family(text, "tide_allocator_info", "gauge");
    expect_family(text, "process_resident_memory_bytes", "gauge");
    expect_family(text, "process_cpu_seconds_total", "counter");
    expect_family(text, "process_start_time_seconds", "gauge");
    expect_family(text, "process_open_fds", "gauge");
    expect_family(text, "tide_process_rss_anon_bytes", "gauge");
    expect_family(text, "tide_process_rss_file_bytes", "gauge");
    expect_family(text, "tide_store_keys", "gauge");
    expect_family(text, "tide_store_block_size_bytes", "gauge");
    expect_family(text, "tide_store_inserts_total", "counter");
    expect_family(text, "tide_store_fetches_total", "counter");
    expect_family(text, "tide_store_commits_total", "counter");
    expect_family(text, "tide_store_commit_duration_seconds", "histogram");
    expect_family(text, "tide_store_data_file_bytes", "gauge");
    expect_family(text, "tide_store_key_file_bytes", "gauge");
    expect_family(text, "tide_store_key_map_bytes", "gauge");
    expect_contains(text, "tide_store_key_map_bytes{state=\"mapped\"} ", "the key map's mapped bytes");
    expect_contains(text, "tide_store_key_map_bytes{state=\"resident\"} ", "the key map's resident bytes");
    expect_family(text, "tide_store_dat_map_bytes", "gauge");
    expect_contains(text, "tide_store_dat_map_bytes{state=\"mapped\"} ", "the data map's mapped bytes");
    expect_contains(text, "tide_store_dat_map_bytes{state=\"resident\"} ", "the data map's resident bytes");
    if (tide_mem_alloc_family() == TIDE_MEM_ALLOC_GLIBC) {
        expect_family(text, "tide_glibc_arena_bytes", "gauge");
        expect_family(text, "tide_glibc_in_use_bytes", "gauge");
        expect_family(text, "tide_glibc_free_bytes", "gauge");
        expect_family(text, "tide_glibc_mmap_bytes", "gauge");
        expect_family(text, "tide_glibc_arenas", "gauge");
        expect_contains(text, "tide_allocator_info{name=\"glibc\",version=\"", "allocator identity");
    }
    if (strstr(text, "tide_process_referenced_bytes") != NULL)
        fail_msg("smaps_rollup figures are off by default, but tide_process_referenced_bytes is present");
    free(text);
}

static void smaps_figures_appear_only_when_asked(void **state)
{
    fixture *f = *state;
    tide_metrics_opts o;
    tide_metrics_opts_init(&o);
    o.smaps = 1;
    char *text = render(f->node, &o);
    expect_family(text, "tide_process_referenced_bytes", "gauge");
    free(text);
}

static void node_cache_bytes_are_the_values_put_plus_the_stated_overhead(void **state)
{
    fixture *f = *state;
    const unsigned n = 1000;
    uint64_t sum = 0;
    uint8_t key[32], val[700];
    tide_cache_stats cs;

    double before = th_prom_value("", "x");   /* NaN: absent */
    assert_true(isnan(before));
    char *text0 = render(f->node, NULL);
    double base = th_prom_value(text0, "tide_memory_consumer_bytes{consumer=\"node_cache\"}");
    free(text0);
    for (unsigned i = 0; i < n; i++) {
        size_t len = th_len(i, 100, sizeof val);
        th_key(i, 32, key);
        th_value(i, len, val);
        expect_rc(tide_node_put(f->node, key, val, len), 0, "put");
        sum += len;
    }
    char *text = render(f->node, NULL);
    double consumer = th_prom_value(text, "tide_memory_consumer_bytes{consumer=\"node_cache\"}");
    double cache = th_prom_value(text, "tide_cache_bytes{cache=\"node_cache\"}");
    tide_node_cache_stats(f->node, &cs);
    expect_u64((uint64_t)cache, cs.bytes, "tide_cache_bytes against the cache's own count");
    expect_u64((uint64_t)(consumer - base), (uint64_t)(cache - base), "consumer bytes against cache bytes");
    /* cache.h: per entry 49 + key_size bytes and per object 24 + len, each
     * rounded up to glibc's 16-byte chunks with 8 bytes of header: at most
     * (49 + 32 + 8 + 15) + (24 + 8 + 15) = 151 bytes beyond the value. In
     * the node cache's arena (on by default) each is a 16-byte header and
     * its size rounded up to 16: the entry 16 + 96, the object 16 + 32 +
     * len rounded up, at most 112 + (16 + 32 + 15) = 175. */
    double added = cache - base;
    uint64_t per = tide_node_options(f->node)->cache_arena ? 175 : 151;
    if (added < (double)sum || added > (double)(sum + per * n))
        fail_msg("node cache grew by %.0f bytes for %" PRIu64 " bytes of values in %u entries; expected "
                 "between %" PRIu64 " and %" PRIu64, added, sum, n, sum, sum + per * n);
    expect_u64((uint64_t)th_prom_value(text, "tide_cache_entries{cache=\"node_cache\",state=\"strong\"}"), n,
               "strong entries");
    /* What the consumer counts beyond the empty cache is the entries and
     * the objects, which are exactly what the arena holds live. */
    if (tide_node_options(f->node)->cache_arena)
        expect_u64((uint64_t)(consumer - base), (uint64_t)th_prom_value(text, "tide_cache_arena_live_bytes{cache=\"node_cache\"}"),
                   "consumer bytes against the arena's live bytes");
    free(text);
}

/* Churn totals: each put allocates a cache object (32 + len
 * bytes) and a cache entry, so node_cache's two counters grow by at least
 * two allocations and the values' bytes per put, and store_insert_pool's
 * by the pool's first table and chunk. */
static void a_put_makes_the_node_caches_allocation_totals_grow(void **state)
{
    fixture *f = *state;
    const unsigned n = 50;
    uint64_t sum = 0;
    uint8_t key[32], val[700];
    char *text;
    double a0, b0, a1, b1, p0, p1;

    text = render(f->node, NULL);
    a0 = th_prom_value(text, "tide_memory_allocations_total{consumer=\"node_cache\"}");
    b0 = th_prom_value(text, "tide_memory_allocated_bytes_total{consumer=\"node_cache\"}");
    p0 = th_prom_value(text, "tide_memory_allocations_total{consumer=\"store_insert_pool\"}");
    free(text);
    if (isnan(a0) || isnan(b0) || isnan(p0)) fail_msg("the churn series are missing from the page");
    for (unsigned i = 0; i < n; i++) {
        size_t len = th_len(i + 5000, 100, sizeof val);
        th_key(i + 5000, 32, key);
        th_value(i + 5000, len, val);
        expect_rc(tide_node_put(f->node, key, val, len), 0, "put");
        sum += len;
    }
    text = render(f->node, NULL);
    a1 = th_prom_value(text, "tide_memory_allocations_total{consumer=\"node_cache\"}");
    b1 = th_prom_value(text, "tide_memory_allocated_bytes_total{consumer=\"node_cache\"}");
    p1 = th_prom_value(text, "tide_memory_allocations_total{consumer=\"store_insert_pool\"}");
    free(text);
    if (a1 - a0 < 2.0 * n)
        fail_msg("%u puts: node_cache allocations grew by %.0f, expected at least %u (an object and an "
                 "entry each)", n, a1 - a0, 2 * n);
    if (b1 - b0 < (double)sum + (32.0 + 32.0) * n)
        fail_msg("%u puts of %" PRIu64 " value bytes: node_cache allocated bytes grew by %.0f, expected at "
                 "least the values plus 32-byte headers and 32-byte keys", n, sum, b1 - b0);
    if (p1 <= p0) fail_msg("store_insert_pool allocations did not grow (%.0f -> %.0f) over %u puts", p0, p1, n);
}

static void trims_on_the_page_agree_with_the_sweepers_totals(void **state)
{
    fixture *f = *state;
    tide_node_totals t;
    for (int i = 0; i < 3; i++) tide_node_sweep(f->node, NULL);
    tide_node_totals_get(f->node, &t);
    char *text = render(f->node, NULL);
    expect_u64((uint64_t)th_prom_value(text, "tide_sweeps_total"), t.sweeps, "sweeps");
    expect_u64((uint64_t)th_prom_value(text, "tide_trims_total"), t.trims, "trims");
    expect_u64((uint64_t)th_prom_value(text, "tide_trim_duration_seconds_count"), t.trims, "trim histogram count");
    expect_u64((uint64_t)th_prom_value(text, "tide_trim_duration_seconds_bucket{le=\"+Inf\"}"), t.trims,
               "trim histogram +Inf bucket");
    free(text);
}

static void with_the_settings_the_page_names_budgets_and_unbounded_consumers(void **state)
{
    fixture *f = *state;
    tide_metrics_opts o;
    tide_config c;
    char msg[1024];
    char *argv[] = { "tided", "--cache-budget", "0", "--insert-burst", "8MiB", "--sweep-interval", "30", NULL };

    tide_config_defaults(&c);
    expect_rc(tide_config_apply_args(&c, 7, argv), 0, "flags");
    expect_rc(tide_config_finish(&c), 0, "finish");
    tide_metrics_opts_init(&o);
    o.config = &c;
    char *text = render(f->node, &o);
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_consumer_budget_bytes{consumer=\"store_insert_pool\"}"),
               8u << 20, "insert pool budget");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_consumer_budget_bytes{consumer=\"node_cache\"}"), 0,
               "node cache budget (unbounded)");
    expect_contains(text, "tide_unbounded_consumer{consumer=\"node_cache\",setting=\"", "unbounded node cache");
    expect_contains(text, "--cache-budget", "the setting that bounds it");
    expect_u64((uint64_t)th_prom_value(text, "tide_sweep_interval_seconds"), 30, "sweep interval");
    int st = th_promtool_check(text, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
    free(text);
}

/* The store's consumers on a page are those of the moment it was rendered,
 * beside RssAnon of the same moment: the first page after some puts counts
 * the pending insert pool (before, the consumers were written before the
 * store's counters were read, so a page showed the pool of the previous
 * page, here 0). No commit can run in between: the interval is a minute
 * and the pool far below its burst bound. */
static void a_page_counts_the_insert_pool_of_its_own_moment(void **state)
{
    th_scratch *sc = *state;
    tide_node_opts o;
    tide_node *n = NULL;
    tide_store_info si;
    uint8_t key[32], val[700];

    tide_node_opts_init(&o);
    o.dir = sc->dir;
    o.sweep_interval_ms = 0;
    o.commit_interval_ms = 60000;
    expect_rc(tide_node_open(&n, &o), 0, "open");
    for (uint64_t i = 0; i < 100; i++) {
        th_key(i, 32, key);
        th_value(i, sizeof val, val);
        expect_rc(tide_node_put(n, key, val, sizeof val), 0, "put");
    }
    char *text = render(n, NULL);
    double pool = th_prom_value(text, "tide_memory_consumer_bytes{consumer=\"store_insert_pool\"}");
    free(text);
    tide_node_store_info(n, &si);
    tide_node_close(n);
    if (si.commits != 0) fail_msg("expected no commit during the test, got %" PRIu64, si.commits);
    if (si.pool_bytes < 100 * sizeof val)
        fail_msg("the store's insert pool holds %" PRIu64 " bytes for 100 values of %zu bytes", si.pool_bytes,
                 sizeof val);
    expect_u64((uint64_t)pool, si.pool_bytes + si.pool_spare_bytes, "store_insert_pool on the first page against the store's pool");
}

static void extra(void *arg, struct tide_metrics_writer *w)
{
    (void)arg;
    const char *lab[2] = { "code", "a\"b\\c\nd" };
    tide_metrics_family(w, "tide_test_extra_total", "counter", "A family the caller added.");
    tide_metrics_sample(w, "tide_test_extra_total", lab, 1, 42);
}

static void a_callers_families_follow_and_label_values_are_escaped(void **state)
{
    fixture *f = *state;
    tide_metrics_opts o;
    char msg[1024];
    tide_metrics_opts_init(&o);
    o.extra = extra;
    char *text = render(f->node, &o);
    expect_contains(text, "tide_test_extra_total{code=\"a\\\"b\\\\c\\nd\"} 42\n", "escaped label value");
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    free(text);
}

static void the_checker_itself_catches_a_split_family_and_a_repeated_series(void **state)
{
    (void)state;
    char msg[512];
    const char *split = "# HELP a x\n# TYPE a gauge\na 1\n# HELP b y\n# TYPE b gauge\nb 1\n"
                        "# HELP a x\n# TYPE a gauge\na{l=\"2\"} 1\n";
    const char *twice = "# HELP a x\n# TYPE a gauge\na{l=\"1\"} 1\na{l=\"1\"} 2\n";
    const char *two_types = "# HELP a x\n# TYPE a gauge\n# TYPE a counter\na 1\n";
    const char *bad_hist = "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\n"
                           "h_sum 1\nh_count 4\n";
    expect_rc(th_prom_check(split, msg, sizeof msg), -1, "split family");
    expect_contains(msg, "declared a second time", "split family message");
    expect_rc(th_prom_check(twice, msg, sizeof msg), -1, "repeated series");
    expect_contains(msg, "appears twice", "repeated series message");
    expect_rc(th_prom_check(two_types, msg, sizeof msg), -1, "second TYPE");
    expect_contains(msg, "second TYPE", "second TYPE message");
    expect_rc(th_prom_check(bad_hist, msg, sizeof msg), -1, "count against +Inf");
    expect_contains(msg, "differs from its +Inf bucket", "histogram message");
}

static int count_release(void *arg, tide_mem_trim_report *out)
{
    memset(out, 0, sizeof *out);
    out->family = TIDE_MEM_ALLOC_GLIBC;
    out->rss_delta = -(1 << 20);
    (*(int *)arg)++;
    return 0;
}

/* Online delete's families, on a node with generations after two
 * rotations (the second drops generation 1 and trims), agree with the
 * node's own figures and pass promtool. */
static void rotation_and_generation_families_agree_with_the_node_and_pass_promtool(void **state)
{
    th_scratch *sc = *state;
    static const char *const phases[] = { "gate", "keep", "create", "sync", "manifest", "switch", "drop", "trim" };
    tide_node_opts o;
    tide_node *n = NULL;
    tide_gens_info gi;
    tide_node_rotation_report r;
    uint8_t key[32], val[100];
    char msg[4096], name[200];
    int releases = 0;

    tide_node_opts_init(&o);
    o.dir = sc->dir;
    o.sweep_interval_ms = 0;
    o.online_delete_on = 1;
    o.rotate_check_ms = 0;
    o.back_off_ms = 0;
    o.hooks.release = count_release;
    o.hooks.release_arg = &releases;
    expect_rc(tide_node_open(&n, &o), 0, "open with generations");
    for (uint64_t i = 0; i < 20; i++) {
        th_key(i, 32, key);
        th_value(i, sizeof val, val);
        expect_rc(tide_node_put(n, key, val, sizeof val), 0, "put");
    }
    expect_rc(tide_node_rotate(n, "admin", &r), 0, "rotation 1");
    th_key(0, 32, key);
    expect_rc(tide_node_keep_keys(n, key, 1, NULL), 0, "keep key 0");
    expect_rc(tide_node_rotate(n, "admin", &r), 0, "rotation 2 (drops generation 1)");
    expect_u64((uint64_t)releases, 1, "one release after the drop");
    char *text = render(n, NULL);
    tide_node_gens_info(n, &gi);
    expect_family(text, "tide_rotations_total", "counter");
    expect_family(text, "tide_rotation_failures_total", "counter");
    expect_family(text, "tide_rotations_abandoned_total", "counter");
    expect_family(text, "tide_rotation_duration_seconds", "histogram");
    expect_family(text, "tide_rotation_copied_objects_total", "counter");
    expect_family(text, "tide_rotation_copied_bytes_total", "counter");
    expect_family(text, "tide_rotation_deleted_bytes_total", "counter");
    expect_family(text, "tide_generations", "gauge");
    expect_family(text, "tide_generation_bytes", "gauge");
    expect_family(text, "tide_generation_id", "gauge");
    expect_family(text, "tide_disk_bytes", "gauge");
    expect_family(text, "tide_rotation_trims_total", "counter");
    expect_family(text, "tide_rotation_trim_released_bytes_total", "counter");
    expect_family(text, "tide_older_generation_lookups_total", "counter");
    expect_u64((uint64_t)th_prom_value(text, "tide_rotations_total"), 2, "rotations");
    expect_u64((uint64_t)th_prom_value(text, "tide_generations"), 2, "two generations held");
    expect_u64((uint64_t)th_prom_value(text, "tide_generation_id{position=\"0\"}"), 3, "the newest is 3");
    expect_u64((uint64_t)th_prom_value(text, "tide_generation_id{position=\"1\"}"), 2, "then 2");
    expect_u64((uint64_t)th_prom_value(text, "tide_disk_bytes"), gi.disk_bytes, "disk bytes");
    expect_u64((uint64_t)th_prom_value(text, "tide_rotation_copied_objects_total"), 1, "the one key kept");
    expect_u64((uint64_t)th_prom_value(text, "tide_rotation_copied_bytes_total"), sizeof val, "its bytes");
    expect_u64((uint64_t)th_prom_value(text, "tide_rotation_trims_total"), 1, "one trim");
    expect_u64((uint64_t)th_prom_value(text, "tide_rotation_trim_released_bytes_total"), 1 << 20, "released");
    if (th_prom_value(text, "tide_rotation_deleted_bytes_total") <= 0) fail_msg("the drop deleted nothing");
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        snprintf(name, sizeof name, "tide_rotation_duration_seconds_count{phase=\"%s\"}", phases[i]);
        expect_u64((uint64_t)th_prom_value(text, name), strcmp(phases[i], "trim") == 0 ? 1 : 2, name);
    }
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    int st = th_promtool_check(text, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
    free(text);
    expect_rc(tide_node_close(n), 0, "close");
}

/* ---- the memory limit's families ---- */

static int memory_reading(void *arg, tide_node_memory_reading *r)
{
    (void)arg;
    r->rss_bytes = 50ull << 20;
    r->has_cgroup = 1;
    r->cgroup.current_bytes = 130ull << 20;
    r->cgroup.page_cache_bytes = 40ull << 20;         /* 90 MiB counts: high */
    r->cgroup.events[TIDE_MEM_EV_MAX] = 7;
    r->cgroup.has_event[TIDE_MEM_EV_MAX] = 1;
    r->cgroup.events[TIDE_MEM_EV_OOM_KILL] = 0;
    r->cgroup.has_event[TIDE_MEM_EV_OOM_KILL] = 1;
    r->cgroup.has_psi = 1;
    r->cgroup.psi.some.avg10 = 2.5;
    r->cgroup.psi.some.total_us = 1500000;
    r->has_psi = 1;
    r->psi.some.avg10 = 1.25;
    r->psi.some.avg300 = 0.5;
    r->psi.some.total_us = 3000000;
    r->psi.has_full = 1;
    r->psi.full.avg60 = 0.75;
    r->psi.full.total_us = 1000000;
    return 0;
}

/* RSS in parts (what ps and top show, read right): a store written, then
 * read back by a node opened again (its cache empty, so every GET reads
 * the files through their maps). The three parts add up to the RSS; the
 * store maps' part is the two maps' resident pages on the same page; the
 * anonymous part is the rest of RSS less RssFile. Passes promtool. */
static void rss_parts_add_up_and_the_store_maps_part_is_the_maps_pages(void **state)
{
    th_skip_unless_maps();
    fixture *f = *state;
    tide_node_opts o;
    tide_cache_obj *obj = NULL;
    static uint8_t value[2000];
    uint8_t key[32];
    char msg[4096];

    memset(value, 'v', sizeof value);
    for (uint64_t i = 0; i < 2000; i++) {
        th_key(i, 32, key);
        expect_rc(tide_node_put(f->node, key, value, sizeof value), 0, "put");
    }
    expect_ok(tide_node_close(f->node), "close");
    f->node = NULL;
    tide_node_opts_init(&o);
    o.dir = f->sc.dir;
    o.sweep_interval_ms = 0;
    expect_ok(tide_node_open(&f->node, &o), "open again");
    for (uint64_t i = 0; i < 2000; i++) {
        th_key(i, 32, key);
        expect_rc(tide_node_get(f->node, key, &obj), 0, "get");
        tide_cache_obj_release(obj);
    }
    char *text = render(f->node, NULL);
    expect_family(text, "tide_process_resident_memory_part_bytes", "gauge");
    double anon = th_prom_value(text, "tide_process_resident_memory_part_bytes{part=\"anonymous\"}");
    double maps = th_prom_value(text, "tide_process_resident_memory_part_bytes{part=\"store_maps\"}");
    double files = th_prom_value(text, "tide_process_resident_memory_part_bytes{part=\"other_files\"}");
    double rss = th_prom_value(text, "process_resident_memory_bytes");
    double key_res = th_prom_value(text, "tide_store_key_map_bytes{state=\"resident\"}");
    double dat_res = th_prom_value(text, "tide_store_dat_map_bytes{state=\"resident\"}");
    if (isnan(anon) || isnan(maps) || isnan(files) || isnan(rss) || isnan(key_res) || isnan(dat_res))
        fail_msg("expected the three parts, the RSS and both maps' resident bytes on the page");
    /* 2000 values of 2000 bytes read through the data map: its pages. */
    if (dat_res < 1 << 20) fail_msg("the data map shows %.0f resident bytes after 4 MB read through it", dat_res);
    if (maps != key_res + dat_res)
        fail_msg("store_maps %.0f, expected the maps' resident pages %.0f + %.0f", maps, key_res, dat_res);
    /* RSS was read a moment before the parts (statm, then status): a
     * page or two apart, never a MiB. */
    if (fabs(anon + maps + files - rss) > (1 << 20))
        fail_msg("the parts %.0f + %.0f + %.0f = %.0f, expected the RSS %.0f within 1 MiB", anon, maps, files,
                 anon + maps + files, rss);
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    int st = th_promtool_check(text, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
    free(text);
}

/* A cache arena family's samples on the page, summed over both caches. */
static double sum_arenas(const char *text, const char *family)
{
    char name[256];
    double sum = 0;

    snprintf(name, sizeof name, "%s{cache=\"node_cache\"}", family);
    if (!isnan(th_prom_value(text, name))) sum += th_prom_value(text, name);
    snprintf(name, sizeof name, "%s{cache=\"key_cache\"}", family);
    if (!isnan(th_prom_value(text, name))) sum += th_prom_value(text, name);
    return sum;
}

/* Anonymous RSS in parts: after puts into the node cache's arena, the
 * parts add up to RssAnon, counted is every consumer's bytes, the arenas'
 * part is their resident less live bytes on the same page. Then 32 MiB
 * the test mallocs and writes, which no consumer counts, appear in the
 * uncounted parts (other, or the allocator's where its cap moves), not in
 * counted. Passes promtool. */
static void anon_parts_add_up_and_what_no_consumer_counts_is_other(void **state)
{
    fixture *f = *state;
    static uint8_t value[2000];
    const size_t big = (size_t)32 << 20;
    uint8_t key[32];
    unsigned char *uncounted = NULL;
    char msg[4096];
    double part[2][4], anon[2];
    static const char *const names[4] = { "counted", "cache_arena_free", "allocator_free", "other" };

    memset(value, 'v', sizeof value);
    for (uint64_t i = 0; i < 2000; i++) {
        th_key(i, 32, key);
        expect_rc(tide_node_put(f->node, key, value, sizeof value), 0, "put");
    }
    for (int round = 0; round < 2; round++) {
        char *text = render(f->node, NULL);
        char name[128];
        expect_family(text, "tide_process_rss_anon_part_bytes", "gauge");
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "tide_process_rss_anon_part_bytes{part=\"%s\"}", names[k]);
            part[round][k] = th_prom_value(text, name);
        }
        anon[round] = th_prom_value(text, "tide_process_rss_anon_bytes");
        if (isnan(part[round][0]) || isnan(part[round][1]) || isnan(part[round][3]) || isnan(anon[round]))
            fail_msg("expected counted, cache_arena_free, other and RssAnon on the page");
        /* The test's allocator says what it holds (glibc, or a sanitizer's). */
        if (isnan(part[round][2])) fail_msg("expected allocator_free under %s",
                                            tide_mem_alloc_family_name(tide_mem_alloc_family()));
        if (part[round][0] != (double)tide_mem_account_total())
            fail_msg("counted %.0f, expected the consumers' total %" PRIu64, part[round][0],
                     tide_mem_account_total());
        double arena_free = sum_arenas(text, "tide_cache_arena_resident_bytes") -
                            sum_arenas(text, "tide_cache_arena_live_bytes");
        if (part[round][1] != arena_free)
            fail_msg("cache_arena_free %.0f, expected the arenas' resident less live %.0f", part[round][1],
                     arena_free);
        if (round == 0 && part[0][1] <= 0) fail_msg("expected the arena's open segment held beyond its live bytes");
        /* RssAnon was read a moment before the parts' own read: a page or
         * two apart, never a MiB. */
        double sum = part[round][0] + part[round][1] + part[round][2] + part[round][3];
        if (fabs(sum - anon[round]) > (1 << 20))
            fail_msg("the parts add up to %.0f, expected RssAnon %.0f within 1 MiB", sum, anon[round]);
        if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
        int st = th_promtool_check(text, msg, sizeof msg);
        if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
        free(text);
        if (round == 0) {
            uncounted = malloc(big);
            if (uncounted == NULL) fail_msg("malloc of 32 MiB");
            for (size_t i = 0; i < big; i += 4096) uncounted[i] = (unsigned char)(i >> 12 | 1);
        }
    }
    /* The allocator's part is capped at what the others leave (its own
     * figure is an upper bound), so uncounted bytes may land in it too. */
    double rose = part[1][2] + part[1][3] - part[0][2] - part[0][3];
    if (rose < (double)big * 0.9)
        fail_msg("allocator_free + other rose by %.0f after 32 MiB no consumer counts, expected at least 90%% of it",
                 rose);
    if (fabs(part[1][0] - part[0][0]) > (1 << 20))
        fail_msg("counted moved by %.0f, expected the uncounted bytes outside it", part[1][0] - part[0][0]);
    free(uncounted);
}

/* The governor's families, after an injected reading that puts the node
 * at high and one refused put, agree with tide_node_memory_get and pass
 * promtool. */
static void memory_limit_families_agree_with_the_governor_and_pass_promtool(void **state)
{
    th_scratch *sc = *state;
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_memory_status st;
    uint8_t key[32];
    char msg[4096];

    tide_node_opts_init(&o);
    o.dir = sc->dir;
    o.sweep_interval_ms = 0;
    o.memory_poll_ms = 0;
    o.memory_limit = 100ull << 20;
    o.hooks.memory_reading = memory_reading;
    o.hooks.release = count_release;
    int releases = 0;
    o.hooks.release_arg = &releases;
    expect_rc(tide_node_open(&n, &o), 0, "open with a limit of 100 MiB");
    expect_u64((uint64_t)tide_node_memory_check(n), TIDE_OVERLOAD_HIGH, "the level after the reading");
    th_key(1, 32, key);
    expect_rc(tide_node_put(n, key, "v", 1), TIDE_EOVERLOAD, "a put at high");
    tide_node_memory_get(n, &st);
    char *text = render(n, NULL);
    expect_family(text, "tide_memory_limit_bytes", "gauge");
    expect_family(text, "tide_memory_counted_bytes", "gauge");
    expect_family(text, "tide_overload_level", "gauge");
    expect_family(text, "tide_overload_mark_bytes", "gauge");
    expect_family(text, "tide_overload_level_changes_total", "counter");
    expect_family(text, "tide_overload_actions_total", "counter");
    expect_family(text, "tide_overload_rejected_writes_total", "counter");
    expect_family(text, "tide_overload_level_seconds_total", "counter");
    expect_family(text, "tide_memory_peak_bytes", "gauge");
    expect_family(text, "tide_cgroup_memory_usage_bytes", "gauge");
    expect_family(text, "tide_cgroup_memory_page_cache_bytes", "gauge");
    expect_family(text, "tide_cgroup_memory_events_total", "counter");
    expect_family(text, "tide_memory_pressure_ratio", "gauge");
    expect_family(text, "tide_memory_pressure_stall_seconds_total", "counter");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_limit_bytes"), st.limit_bytes, "the limit");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_counted_bytes"), 90ull << 20, "counted (the cgroup's)");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_level"), TIDE_OVERLOAD_HIGH, "the level");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_mark_bytes{level=\"high\",edge=\"enter\"}"),
               st.marks_enter[TIDE_OVERLOAD_HIGH], "high's enter mark");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_mark_bytes{level=\"soft\",edge=\"leave\"}"),
               st.marks_leave[TIDE_OVERLOAD_SOFT], "soft's leave mark");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_level_changes_total"), st.level_changes, "changes");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_level_changes_total"), 1, "one change");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_actions_total{action=\"shed_writes\"}"), 1, "shed");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_actions_total{action=\"sweep\"}"),
               st.actions[TIDE_NODE_ACT_SWEEP], "sweeps");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_actions_total{action=\"trim\"}"), (uint64_t)releases,
               "trims (the release calls)");
    expect_u64((uint64_t)th_prom_value(text, "tide_overload_rejected_writes_total"), 1, "rejected writes");
    expect_family(text, "tide_memory_reading_failures_total", "counter");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_reading_failures_total{what=\"reading\"}"),
               st.reading_failures, "failed readings");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_reading_failures_total{what=\"cgroup\"}"),
               st.cgroup_failures, "failed cgroup figures");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_peak_bytes{since=\"start\"}"), st.peak_start_bytes,
               "peak since start");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_peak_bytes{since=\"sweep\"}"), 90ull << 20,
               "peak since the round");
    expect_u64((uint64_t)th_prom_value(text, "tide_cgroup_memory_usage_bytes"), 130ull << 20, "usage");
    expect_u64((uint64_t)th_prom_value(text, "tide_cgroup_memory_page_cache_bytes"), 40ull << 20, "page cache");
    expect_u64((uint64_t)th_prom_value(text, "tide_cgroup_memory_events_total{event=\"max\"}"), 7, "max events");
    if (strstr(text, "event=\"oom\"")) fail_msg("an event the reading did not have is on the page");
    if (th_prom_value(text, "tide_memory_pressure_ratio{scope=\"system\",kind=\"some\",window=\"10s\"}") != 0.0125)
        fail_msg("system some avg10: expected 0.0125");
    if (th_prom_value(text, "tide_memory_pressure_ratio{scope=\"cgroup\",kind=\"some\",window=\"10s\"}") != 0.025)
        fail_msg("cgroup some avg10: expected 0.025");
    expect_u64((uint64_t)th_prom_value(text, "tide_memory_pressure_stall_seconds_total{scope=\"system\",kind=\"full\"}"),
               1, "system full stall seconds");
    if (strstr(text, "scope=\"cgroup\",kind=\"full\"")) fail_msg("the cgroup had no full line");
    if (th_prom_check(text, msg, sizeof msg) != 0) fail_msg("own check: %s", msg);
    int pst = th_promtool_check(text, msg, sizeof msg);
    if (pst != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", pst, msg);
    free(text);
    expect_rc(tide_node_close(n), 0, "close");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_exposition_passes_promtool_and_tides_own_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(every_design_family_is_present_with_its_type, setup, teardown),
        cmocka_unit_test_setup_teardown(smaps_figures_appear_only_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(node_cache_bytes_are_the_values_put_plus_the_stated_overhead, setup, teardown),
        cmocka_unit_test_setup_teardown(a_put_makes_the_node_caches_allocation_totals_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(trims_on_the_page_agree_with_the_sweepers_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(with_the_settings_the_page_names_budgets_and_unbounded_consumers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_callers_families_follow_and_label_values_are_escaped, setup, teardown),
        cmocka_unit_test(the_checker_itself_catches_a_split_family_and_a_repeated_series),
        cmocka_unit_test_setup_teardown(a_page_counts_the_insert_pool_of_its_own_moment, th_scratch_setup,
                                        th_scratch_teardown),
        cmocka_unit_test_setup_teardown(rotation_and_generation_families_agree_with_the_node_and_pass_promtool,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(rss_parts_add_up_and_the_store_maps_part_is_the_maps_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(anon_parts_add_up_and_what_no_consumer_counts_is_other, setup, teardown),
        cmocka_unit_test_setup_teardown(memory_limit_families_agree_with_the_governor_and_pass_promtool,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
