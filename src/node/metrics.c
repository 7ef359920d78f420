/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.c: the node's figures as Prometheus text, computed at scrape time.
 *
 * Layout: a growable text buffer (the writer), the two calls that write a
 * family header and a sample, then one function per group of families in
 * the order they appear: build, memory consumers, caches, sweeps and trims,
 * the allocator, the process (with anonymous RSS in the parts that add up to
 * it: counted, held by the arenas, by the allocator, the rest), the memory limit (the governor's level,
 * marks, actions and peaks, the cgroup, PSI), the store (with RSS in the parts
 * that add up to it, once its maps' resident pages are counted), online delete
 * (rotations and generations), then the caller's extra families.
 *
 * Invariants:
 *   1. Each family name is written once, as HELP then TYPE, and all of its
 *      samples follow it before the next family begins (the writer asserts
 *      that a sample's name starts with the open family's name).
 *   2. Every value is in base units: bytes, seconds, counts.
 *   3. A histogram's buckets are cumulative, end with le="+Inf", and that
 *      bucket equals _count.
 *   4. A shared structure is reported once: the allocator's figures are the
 *      process's, not each consumer's; the consumers' accounts are disjoint.
 *
 * Never: read smaps_rollup unless asked (it walks every page table under the
 * mmap lock); print a token; make a figure up when it cannot be read (leave
 * the family out).
 */
#include "node/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/account.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/version.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/hist.h"

#ifndef TIDE_REVISION
#define TIDE_REVISION "unknown"
#endif

struct tide_metrics_writer {
    char  *buf;
    size_t len, cap;
    int    oom;
    char   family[128];   /* the open family, for invariant 1 */
};

void tide_metrics_opts_init(tide_metrics_opts *o)
{
    memset(o, 0, sizeof *o);
}

static void put(tide_metrics_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(tide_metrics_writer *w, const char *fmt, ...)
{
    va_list ap;
    int need;

    if (w->oom) return;
    for (;;) {
        va_start(ap, fmt);
        need = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
        va_end(ap);
        if (need < 0) { w->oom = 1; return; }
        if ((size_t)need < w->cap - w->len) break;
        size_t cap = w->cap * 2 + (size_t)need;
        char *nb = realloc(w->buf, cap);
        if (nb == NULL) { w->oom = 1; return; }
        w->buf = nb;
        w->cap = cap;
    }
    w->len += (size_t)need;
}

void tide_metrics_family(tide_metrics_writer *w, const char *name, const char *type, const char *help)
{
    snprintf(w->family, sizeof w->family, "%s", name);
    put(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_escaped(tide_metrics_writer *w, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\') put(w, "\\\\");
        else if (*v == '"') put(w, "\\\"");
        else if (*v == '\n') put(w, "\\n");
        else put(w, "%c", *v);
    }
}

void tide_metrics_sample(tide_metrics_writer *w, const char *name, const char *const *labels,
                         int nlabels, double value)
{
    TIDE_ASSERT(strncmp(name, w->family, strlen(w->family)) == 0);
    put(w, "%s", name);
    for (int i = 0; i < nlabels; i++) {
        put(w, "%s%s=\"", i ? "," : "{", labels[2 * i]);
        put_escaped(w, labels[2 * i + 1]);
        put(w, "\"");
    }
    if (nlabels) put(w, "}");
    if (isinf(value)) put(w, " %s\n", value > 0 ? "+Inf" : "-Inf");
    else if (isnan(value)) put(w, " NaN\n");
    else if (value == floor(value) && fabs(value) < 9007199254740992.0) put(w, " %.0f\n", value);
    else put(w, " %.17g\n", value);
}

/* A family with one unlabelled sample. */
static void one(tide_metrics_writer *w, const char *name, const char *type, const char *help, double v)
{
    tide_metrics_family(w, name, type, help);
    tide_metrics_sample(w, name, NULL, 0, v);
}

/* One series of a histogram family already open: its buckets, _sum and
 * _count, with the label key=value when key is not NULL. */
static void histogram_series(tide_metrics_writer *w, const char *name, const char *key, const char *value,
                             const tide_hist *h)
{
    char sample[160], le[32];
    const char *lab[4] = { key, value, "le", le };
    const char **bl = key ? lab : lab + 2;
    int nl = key ? 1 : 0;

    snprintf(sample, sizeof sample, "%s_bucket", name);
    for (int i = 0; i < TIDE_HIST_BUCKETS; i++) {
        snprintf(le, sizeof le, "%g", TIDE_HIST_BOUNDS_S[i]);
        tide_metrics_sample(w, sample, bl, nl + 1, (double)h->bucket[i]);
    }
    snprintf(le, sizeof le, "+Inf");
    tide_metrics_sample(w, sample, bl, nl + 1, (double)h->bucket[TIDE_HIST_BUCKETS]);
    TIDE_ASSERT(h->bucket[TIDE_HIST_BUCKETS] == h->count);
    snprintf(sample, sizeof sample, "%s_sum", name);
    tide_metrics_sample(w, sample, lab, nl, (double)h->sum_ns / 1e9);
    snprintf(sample, sizeof sample, "%s_count", name);
    tide_metrics_sample(w, sample, lab, nl, (double)h->count);
}

static void histogram(tide_metrics_writer *w, const char *name, const char *help, const tide_hist *h)
{
    tide_metrics_family(w, name, "histogram", help);
    histogram_series(w, name, NULL, NULL, h);
}

/* One histogram family with a label: a series per label value, all under
 * one HELP and TYPE. */
static void histogram_labelled(tide_metrics_writer *w, const char *name, const char *help, const char *key,
                               const char *const *values, const tide_hist *const *h, int n)
{
    tide_metrics_family(w, name, "histogram", help);
    for (int k = 0; k < n; k++) histogram_series(w, name, key, values[k], h[k]);
}

/* ---- the groups ----------------------------------------------------------- */

/* The build's identity: the version, the source revision it was built from
 * (the Makefile's -DTIDE_REVISION: the git short hash or REVISION=), and
 * the allocator detected once at startup (what serves malloc: "glibc",
 * "jemalloc", "sanitizer", ...), so a dashboard can join any series to
 * the build that produced it. */
static void write_build(tide_metrics_writer *w, const tide_metrics_opts *o)
{
    const char *lab[6] = { "version", o->version ? o->version : TIDE_VERSION, "revision", TIDE_REVISION,
                           "allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()) };
    tide_metrics_family(w, "tide_build_info", "gauge",
                        "The build: its version, the source revision it was built from and the allocator "
                        "serving malloc; always 1.");
    tide_metrics_sample(w, "tide_build_info", lab, 3, 1);
}

static void write_consumers(tide_metrics_writer *w)
{
    tide_mem_account_entry e[TIDE_MEM_ACCOUNT_MAX];
    size_t n = tide_mem_account_snapshot(e, TIDE_MEM_ACCOUNT_MAX);

    if (n > TIDE_MEM_ACCOUNT_MAX) n = TIDE_MEM_ACCOUNT_MAX;
    tide_metrics_family(w, "tide_memory_consumer_bytes", "gauge",
                        "Bytes held by each long-lived consumer of memory, as the consumer counts them.");
    for (size_t i = 0; i < n; i++) {
        const char *lab[2] = { "consumer", e[i].name };
        tide_metrics_sample(w, "tide_memory_consumer_bytes", lab, 1, (double)e[i].bytes);
    }
    /* Churn at the source: rate() of these shows which consumer
     * allocates even while its bytes stay flat. */
    tide_metrics_family(w, "tide_memory_allocations_total", "counter",
                        "Allocations each long-lived consumer of memory has made.");
    for (size_t i = 0; i < n; i++) {
        const char *lab[2] = { "consumer", e[i].name };
        tide_metrics_sample(w, "tide_memory_allocations_total", lab, 1, (double)e[i].allocations);
    }
    tide_metrics_family(w, "tide_memory_allocated_bytes_total", "counter",
                        "Bytes asked for by the allocations of each long-lived consumer of memory.");
    for (size_t i = 0; i < n; i++) {
        const char *lab[2] = { "consumer", e[i].name };
        tide_metrics_sample(w, "tide_memory_allocated_bytes_total", lab, 1, (double)e[i].allocated_bytes);
    }
}

typedef struct unbounded_ctx { tide_metrics_writer *w; } unbounded_ctx;

static void unbounded_sample(void *arg, const char *consumer, const char *how)
{
    const char *lab[4] = { "consumer", consumer, "setting", how };
    tide_metrics_sample(((unbounded_ctx *)arg)->w, "tide_unbounded_consumer", lab, 2, 1);
}

static void write_config(tide_metrics_writer *w, const tide_config *c)
{
    struct { const char *consumer; uint64_t budget; } b[] = {
        { "node_cache", c->cache_budget },
        { "store_insert_pool", c->insert_burst },
        { "store_tail_index", c->store_index_lag },
    };
    unbounded_ctx ctx = { w };

    tide_metrics_family(w, "tide_memory_consumer_budget_bytes", "gauge",
                        "The bound set on each consumer that has one (0: unbounded).");
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        const char *lab[2] = { "consumer", b[i].consumer };
        tide_metrics_sample(w, "tide_memory_consumer_budget_bytes", lab, 1, (double)b[i].budget);
    }
    tide_metrics_family(w, "tide_unbounded_consumer", "gauge",
                        "1 for each consumer left without a bound, labelled with the setting that would bound it.");
    tide_config_unbounded(c, tide_mem_alloc_family(), unbounded_sample, &ctx);
    one(w, "tide_sweep_interval_seconds", "gauge", "Seconds from the end of one sweep round to the next.",
        (double)c->sweep_interval);
}

/* A family with one sample for the node cache and one for the key cache. */
static void cache_pair(tide_metrics_writer *w, const char *name, const char *type, const char *help,
                       double node_cache, double key_cache)
{
    static const char *const nc[2] = { "cache", "node_cache" }, *const kc[2] = { "cache", "key_cache" };

    tide_metrics_family(w, name, type, help);
    tide_metrics_sample(w, name, nc, 1, node_cache);
    tide_metrics_sample(w, name, kc, 1, key_cache);
}

static void write_caches(tide_metrics_writer *w, tide_node *n)
{
    const tide_node_opts *no = tide_node_options(n);
    tide_cache_stats cs;
    tide_keycache_stats ks;

    tide_node_cache_stats(n, &cs);
    tide_node_keycache_stats(n, &ks);
    const char *nc[2] = { "cache", "node_cache" };
    const char *ns[4] = { "cache", "node_cache", "state", "strong" };
    const char *nw[4] = { "cache", "node_cache", "state", "weak" };
    const char *ke[4] = { "cache", "key_cache", "state", "strong" };

    tide_metrics_family(w, "tide_cache_entries", "gauge",
                        "Entries in each cache by state (a weak entry's object is held only outside the cache).");
    tide_metrics_sample(w, "tide_cache_entries", ns, 2, (double)cs.strong);
    tide_metrics_sample(w, "tide_cache_entries", nw, 2, (double)cs.weak);
    tide_metrics_sample(w, "tide_cache_entries", ke, 2, (double)ks.entries);
    cache_pair(w, "tide_cache_bytes", "gauge", "Bytes each cache's memory costs, as malloc sizes it.",
               (double)cs.bytes, (double)ks.bytes);
    cache_pair(w, "tide_cache_target_entries", "gauge",
               "Target entries of each cache; above it the cache's age shrinks (0: no target).",
               (double)no->cache_target, (double)no->key_cache_size);
    tide_metrics_family(w, "tide_cache_budget_bytes", "gauge",
                        "Bytes a sweep shrinks each cache under (0: unbounded).");
    tide_metrics_sample(w, "tide_cache_budget_bytes", nc, 1, (double)no->cache_budget);
    cache_pair(w, "tide_cache_hits_total", "counter", "Lookups each cache answered.",
               (double)cs.hits, (double)ks.hits);
    cache_pair(w, "tide_cache_misses_total", "counter", "Lookups each cache could not answer.",
               (double)cs.misses, (double)ks.misses);
    cache_pair(w, "tide_cache_evictions_total", "counter",
               "Entries each cache let go by age, budget or hard limit.", (double)cs.evictions, (double)ks.evictions);
}

static void write_sweeps(tide_metrics_writer *w, tide_node *n)
{
    tide_node_totals t;

    tide_node_totals_get(n, &t);
    one(w, "tide_sweeps_total", "counter", "Sweep rounds (every cache swept, then at most one trim).",
        (double)t.sweeps);
    histogram(w, "tide_sweep_duration_seconds", "Time to sweep every cache in one round, the trim excluded.",
              &t.sweep_duration);
    one(w, "tide_trims_total", "counter", "Release calls made after sweeps (malloc_trim(0) under glibc).",
        (double)t.trims);
    one(w, "tide_trims_skipped_total", "counter", "Sweep rounds whose trim the trim policy let pass.",
        (double)t.trims_skipped);
    one(w, "tide_trims_lowered_rss_total", "counter", "Trims after which RSS was lower than before.",
        (double)t.trims_lowered);
    histogram(w, "tide_trim_duration_seconds", "Wall time of each release call.", &t.trim_duration);
    one(w, "tide_trim_released_bytes_total", "counter",
        "RSS given back by trims, summed over the trims that lowered it.", (double)t.trim_released_bytes);
    one(w, "tide_trim_last_rss_delta_bytes", "gauge",
        "RSS after minus RSS before the latest trim (negative: released).", (double)t.last_trim_rss_delta);
    one(w, "tide_trim_minor_faults_total", "counter", "Minor page faults the sweeper thread took during trims.",
        (double)t.trim_minflt);
    one(w, "tide_trim_major_faults_total", "counter", "Major page faults the sweeper thread took during trims.",
        (double)t.trim_majflt);
}

/* One family with a sample per cache whose arena there is (cache="..."). */
static void arena_family(tide_metrics_writer *w, const char *name, const char *type, const char *help,
                         const char *const *caches, const double *v, int n)
{
    tide_metrics_family(w, name, type, help);
    for (int i = 0; i < n; i++) {
        const char *lab[2] = { "cache", caches[i] };
        tide_metrics_sample(w, name, lab, 1, v[i]);
    }
}

/* The caches' arenas as one page reads them, once: the arena families and
 * the anonymous RSS parts show the same figures. */
typedef struct page_arenas {
    const char      *caches[2];
    tide_arena_stats a[2];
    int              k;          /* arenas read: 0 with cache_arena off */
} page_arenas;

static void read_arenas(tide_node *n, page_arenas *pa)
{
    tide_arena_stats s;

    pa->k = 0;
    if (tide_node_cache_arena_stats(n, &s)) { pa->caches[pa->k] = "node_cache"; pa->a[pa->k++] = s; }
    if (tide_node_key_cache_arena_stats(n, &s)) { pa->caches[pa->k] = "key_cache"; pa->a[pa->k++] = s; }
}

/* The caches' arenas, each labelled with its cache (absent with
 * cache_arena off). */
static void write_arena(tide_metrics_writer *w, tide_node *n, const page_arenas *pa)
{
    static const char *const states[4] = { "open", "used", "empty", "released" };
    const char *const *caches = pa->caches;
    const tide_arena_stats *a = pa->a;
    tide_node_totals t;
    double v[2] = { 0, 0 };
    int k = pa->k;

    if (k == 0) return;
    tide_node_totals_get(n, &t);
#define ARENA_FAMILY(name, type, help, expr) do { \
        for (int i = 0; i < k; i++) v[i] = (double)(expr); \
        arena_family(w, name, type, help, caches, v, k); \
    } while (0)
    ARENA_FAMILY("tide_cache_arena_live_bytes", "gauge",
                 "Bytes live in each cache's arena: the node cache's objects and entries, the key cache's "
                 "entries (headers and rounding included).", a[i].live_bytes);
    ARENA_FAMILY("tide_cache_arena_resident_bytes", "gauge",
                 "Bytes of each arena's segments not given back, and its large objects' mappings.",
                 a[i].resident_bytes);
    tide_metrics_family(w, "tide_cache_arena_segments", "gauge",
                        "Each arena's segments by state: open (allocations go there), used, empty "
                        "(resident, the reserve), released (given back, reused first).");
    for (int i = 0; i < k; i++) {
        size_t seg[4] = { a[i].seg_open, a[i].seg_used, a[i].seg_empty, a[i].seg_released };
        for (int j = 0; j < 4; j++) {
            const char *lab[4] = { "cache", caches[i], "state", states[j] };
            tide_metrics_sample(w, "tide_cache_arena_segments", lab, 2, (double)seg[j]);
        }
    }
    ARENA_FAMILY("tide_cache_arena_evacuated_objects_total", "counter",
                 "Arena allocations (cached objects and entries) the sweeps' evacuations moved to copies.",
                 a[i].evacuated_objects);
    ARENA_FAMILY("tide_cache_arena_evacuated_bytes_total", "counter",
                 "Bytes of the allocations the sweeps' evacuations moved.", a[i].evacuated_bytes);
    ARENA_FAMILY("tide_cache_arena_released_segments_total", "counter",
                 "Segments given back to the kernel (one madvise each).", a[i].releases);
    ARENA_FAMILY("tide_cache_arena_evacuate_seconds_total", "counter",
                 "Time the sweeps spent evacuating (walks and copies), their releases excluded.",
                 (strcmp(caches[i], "node_cache") == 0 ? t.arena_evacuate_ns : t.key_arena_evacuate_ns) / 1e9);
    ARENA_FAMILY("tide_cache_arena_release_seconds_total", "counter",
                 "Time the sweeps spent in the arena's madvise calls.", a[i].release_ns / 1e9);
    ARENA_FAMILY("tide_cache_arena_refusals_total", "counter",
                 "Allocations the arena refused (the object or key was not cached).", a[i].refusals);
#undef ARENA_FAMILY
}

/* `st`: the allocator's statistics, read once per page by
 * tide_metrics_render; NULL when they could not be read. */
static void write_allocator(tide_metrics_writer *w, const tide_mem_alloc_stats *st_)
{
    tide_mem_alloc_info info;
    tide_mem_alloc_stats st;
    int family = tide_mem_alloc_family();
    double free_bytes = -1;

    if (tide_mem_alloc_identity(&info) == 0) {
        const char *lab[4] = { "name", tide_mem_alloc_family_name(info.family), "version", info.version };
        tide_metrics_family(w, "tide_allocator_info", "gauge", "The allocator serving malloc; always 1.");
        tide_metrics_sample(w, "tide_allocator_info", lab, 2, 1);
    }
    if (st_ == NULL) return;
    st = *st_;
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC:
        one(w, "tide_glibc_arena_bytes", "gauge", "Bytes glibc obtained for its arenas with brk and mmap "
            "(mallinfo2 arena), mmapped chunks excluded.", (double)st.glibc.arena);
        one(w, "tide_glibc_in_use_bytes", "gauge", "Bytes in allocated chunks (mallinfo2 uordblks).",
            (double)st.glibc.in_use);
        one(w, "tide_glibc_free_bytes", "gauge", "Bytes in free chunks glibc keeps (mallinfo2 fordblks).",
            (double)st.glibc.free);
        one(w, "tide_glibc_mmap_bytes", "gauge", "Bytes in chunks served by their own mmap (mallinfo2 hblkhd).",
            (double)st.glibc.mmap);
        one(w, "tide_glibc_top_releasable_bytes", "gauge",
            "Free bytes at the top of the main heap (mallinfo2 keepcost).", (double)st.glibc.top_releasable);
        if (st.glibc.has_arenas)
            one(w, "tide_glibc_arenas", "gauge", "Arenas glibc has made (at most MALLOC_ARENA_MAX).",
                (double)st.glibc.arenas);
        free_bytes = (double)st.glibc.free;
        break;
    case TIDE_MEM_ALLOC_JEMALLOC:
        one(w, "tide_jemalloc_allocated_bytes", "gauge", "jemalloc stats.allocated.", (double)st.jemalloc.allocated);
        one(w, "tide_jemalloc_active_bytes", "gauge", "jemalloc stats.active.", (double)st.jemalloc.active);
        one(w, "tide_jemalloc_resident_bytes", "gauge", "jemalloc stats.resident.", (double)st.jemalloc.resident);
        one(w, "tide_jemalloc_mapped_bytes", "gauge", "jemalloc stats.mapped.", (double)st.jemalloc.mapped);
        one(w, "tide_jemalloc_retained_bytes", "gauge", "jemalloc stats.retained.", (double)st.jemalloc.retained);
        one(w, "tide_jemalloc_metadata_bytes", "gauge", "jemalloc stats.metadata.", (double)st.jemalloc.metadata);
        one(w, "tide_jemalloc_dirty_bytes", "gauge", "Dirty pages of every arena, not yet purged.",
            (double)st.jemalloc.dirty);
        one(w, "tide_jemalloc_muzzy_bytes", "gauge", "Muzzy pages of every arena (MADV_FREE'd, still counted).",
            (double)st.jemalloc.muzzy);
        free_bytes = (double)(st.jemalloc.active - st.jemalloc.allocated + st.jemalloc.dirty);
        break;
    case TIDE_MEM_ALLOC_TCMALLOC:
        one(w, "tide_tcmalloc_allocated_bytes", "gauge", "tcmalloc generic.current_allocated_bytes.",
            (double)st.tcmalloc.allocated);
        one(w, "tide_tcmalloc_heap_bytes", "gauge", "tcmalloc generic.heap_size.", (double)st.tcmalloc.heap_size);
        one(w, "tide_tcmalloc_pageheap_free_bytes", "gauge", "tcmalloc tcmalloc.pageheap_free_bytes.",
            (double)st.tcmalloc.pageheap_free);
        one(w, "tide_tcmalloc_pageheap_unmapped_bytes", "gauge", "tcmalloc tcmalloc.pageheap_unmapped_bytes.",
            (double)st.tcmalloc.pageheap_unmapped);
        free_bytes = (double)st.tcmalloc.pageheap_free;
        break;
    case TIDE_MEM_ALLOC_MIMALLOC:
        one(w, "tide_mimalloc_commit_bytes", "gauge", "mimalloc current_commit (mi_process_info).",
            (double)st.mimalloc.current_commit);
        one(w, "tide_mimalloc_peak_commit_bytes", "gauge", "mimalloc peak_commit (mi_process_info).",
            (double)st.mimalloc.peak_commit);
        break;
    default:
        break;
    }
    if (free_bytes >= 0)
        one(w, "tide_allocator_free_bytes", "gauge",
            "Bytes the allocator holds that no allocation uses: what a release could give back, at most.",
            free_bytes);
}

/* `st`: /proc/self/status, read once per page by tide_metrics_render;
 * NULL when it could not be read. */
static void write_process(tide_metrics_writer *w, const tide_metrics_opts *o, const tide_mem_proc_status *st)
{
    tide_mem_proc_process p;
    uint64_t rss;

    /* The names and HELP texts of Prometheus' official clients. */
    if (tide_mem_proc_process_read(&p) == 0) {
        one(w, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
            p.cpu_seconds);
        one(w, "process_open_fds", "gauge", "Number of open file descriptors.", (double)p.open_fds);
        one(w, "process_max_fds", "gauge", "Maximum number of open file descriptors.", (double)p.max_fds);
        one(w, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", (double)p.virtual_bytes);
        one(w, "process_virtual_memory_max_bytes", "gauge", "Maximum amount of virtual memory available in bytes.",
            p.virtual_max_bytes == UINT64_MAX ? 18446744073709551615.0 : (double)p.virtual_max_bytes);
        one(w, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
            p.start_time_seconds);
    }
    if (tide_mem_proc_statm_rss(&rss) == 0)
        one(w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", (double)rss);
    if (st != NULL) {
        if (st->has_split) {
            one(w, "tide_process_rss_anon_bytes", "gauge", "Resident anonymous memory (RssAnon): heap, stacks, "
                "anonymous mappings.", (double)st->rss_anon);
            one(w, "tide_process_rss_file_bytes", "gauge", "Resident file-backed memory (RssFile): the binary, "
                "libraries, mapped files.", (double)st->rss_file);
        }
        one(w, "tide_process_resident_memory_peak_bytes", "gauge", "Peak resident memory (VmHWM).",
            (double)st->vm_hwm);
    }
    if (o->smaps) {
        tide_mem_proc_smaps sm;
        if (tide_mem_proc_smaps_rollup_read(&sm) == 0) {
            one(w, "tide_process_referenced_bytes", "gauge", "Resident pages accessed since they were mapped or "
                "last cleared (smaps_rollup Referenced).", (double)sm.referenced);
            if (sm.has_lazy_free)
                one(w, "tide_process_lazyfree_bytes", "gauge", "Pages freed with MADV_FREE the kernel has not "
                    "reclaimed yet; they still count in RSS (smaps_rollup LazyFree).", (double)sm.lazy_free);
        }
    }
}

/* Anonymous RSS in the parts that add up to it, so that what no consumer
 * counts is seen and split: the consumers' bytes; what the cache arenas
 * hold beyond their live objects (the open segment's unused tail, the
 * empty and reserve segments); what the allocator keeps beyond its live
 * allocations (tide_mem_alloc_held_free, left out when the allocator does
 * not say); and the rest: allocations no consumer counts (h2o's buffers,
 * the libraries'), thread stacks and static data.
 *
 * The allocators' figures are upper bounds: glibc's counts the free chunks
 * whose pages a trim gave back, jemalloc's resident counts pages of its
 * extents never written (a calloc'd table). So the allocator's part is
 * capped at what RssAnon leaves after the counted bytes and the arenas,
 * and the rest is then 0. The rest is negative only when counted bytes
 * are not all resident (a table allocated and not yet written). RssAnon,
 * the arenas and the allocator are the page's own reads (tide_metrics_
 * render's); the consumers' total is read here, a moment apart. Left out
 * without the RssAnon/RssFile split. */
static void write_anon_parts(tide_metrics_writer *w, const tide_mem_proc_status *ps, const page_arenas *pa,
                             const tide_mem_alloc_stats *st)
{
    static const char family[] = "tide_process_rss_anon_part_bytes";
    const char *lab[2] = { "part", NULL };
    uint64_t counted = tide_mem_account_total(), arena_free = 0, held = 0;
    int has_held = st != NULL && tide_mem_alloc_held_free(st, &held);
    double rest;

    if (ps == NULL || !ps->has_split) return;
    for (int i = 0; i < pa->k; i++) arena_free += pa->a[i].resident_bytes - pa->a[i].live_bytes;
    rest = (double)ps->rss_anon - (double)counted - (double)arena_free;
    if (has_held && (double)held > rest) held = rest > 0 ? (uint64_t)rest : 0;
    rest -= (double)held;
    tide_metrics_family(w, family, "gauge", "Anonymous RSS (RssAnon) in parts that add up to it: counted is "
                        "what the consumers count (tide_memory_consumer_bytes); cache_arena_free what the cache "
                        "arenas hold beyond their live objects; allocator_free what the allocator keeps beyond "
                        "its live allocations (left out when it does not say; at most what counted and the "
                        "arenas leave, since the allocators' own figures are upper bounds); other the rest: "
                        "allocations no consumer counts, thread stacks, static data.");
    lab[1] = "counted";
    tide_metrics_sample(w, family, lab, 1, (double)counted);
    lab[1] = "cache_arena_free";
    tide_metrics_sample(w, family, lab, 1, (double)arena_free);
    if (has_held) {
        lab[1] = "allocator_free";
        tide_metrics_sample(w, family, lab, 1, (double)held);
    }
    lab[1] = "other";
    tide_metrics_sample(w, family, lab, 1, rest);
}

/* A store file's read-only map (src/store/keymap.c; nudb.key's, and
 * nudb.dat's of lookup.c "Reading nudb.dat"): the file's bytes it shows,
 * and of those the pages this process has mapped in (pagemap, not the
 * page cache's mincore). Page cache the kernel reclaims under pressure:
 * counted in RssFile, never in RssAnon. */
static int write_map(tide_metrics_writer *w, tide_node *n, const char *family, const char *help,
                     uint64_t bytes, int (*resident_of)(tide_node *, uint64_t *), uint64_t *res)
{
    const char *mapped[2] = { "state", "mapped" }, *resident[2] = { "state", "resident" };
    int rc;

    *res = 0;
    tide_metrics_family(w, family, "gauge", help);
    tide_metrics_sample(w, family, mapped, 1, (double)bytes);
    if ((rc = resident_of(n, res)) == 0) tide_metrics_sample(w, family, resident, 1, (double)*res);
    return rc;
}

/* RSS in the parts that add up to it (mem/proc.h tide_mem_rss_parts),
 * with the store maps' pages just counted: what ps and top show, read
 * right. Left out without the RssAnon/RssFile split. */
static void write_rss_parts(tide_metrics_writer *w, uint64_t maps_resident)
{
    static const char family[] = "tide_process_resident_memory_part_bytes";
    const char *parts[3][2] = { { "part", "anonymous" }, { "part", "store_maps" }, { "part", "other_files" } };
    tide_mem_proc_status st;
    tide_mem_rss_parts p;

    if (tide_mem_proc_status_read(&st) != 0 || tide_mem_rss_parts_of(&st, maps_resident, &p) != 0) {
        tide_err_clear();
        return;
    }
    tide_metrics_family(w, family, "gauge", "RSS (VmRSS, what ps and top show) in parts that add up to it: "
                        "anonymous is the process's own memory (RssAnon + RssShmem), what memory_limit counts; "
                        "store_maps the pages of nudb.dat and nudb.key mapped read-only, page cache the kernel "
                        "reclaims, not counted; other_files the binary and libraries.");
    tide_metrics_sample(w, family, parts[0], 1, (double)p.anonymous);
    tide_metrics_sample(w, family, parts[1], 1, (double)p.store_maps);
    tide_metrics_sample(w, family, parts[2], 1, (double)p.other_files);
}

static void write_maps(tide_metrics_writer *w, tide_node *n, const tide_store_info *si)
{
    uint64_t key = 0, dat = 0;
    int rc;

    rc = write_map(w, n, "tide_store_key_map_bytes", "nudb.key's read-only map, file-backed "
                   "and reclaimable (in RssFile, not RssAnon): the key-file bytes it shows "
                   "(mapped), and the pages of it this process has mapped in (resident: "
                   "present in its page tables, /proc/self/pagemap; not the file's page-cache residency).",
                   si->key_map_bytes, tide_node_key_map_resident, &key);
    rc |= write_map(w, n, "tide_store_dat_map_bytes", "nudb.dat's read-only map, in which "
                    "fetches read the records and spill records, file-backed and reclaimable (in "
                    "RssFile, not RssAnon): the data-file bytes it shows (mapped), and the pages of "
                    "it this process has mapped in (resident).", si->dat_map_bytes, tide_node_dat_map_resident,
                    &dat);
    if (rc == 0) write_rss_parts(w, key + dat);
}

/* `si`: the store's figures, read once per page by tide_metrics_render. */
static void write_store(tide_metrics_writer *w, tide_node *n, const tide_store_info *si_)
{
    const tide_store_info si = *si_;
    tide_hist h;
    uint64_t keys;

    if (tide_node_keys(n, &keys))
        one(w, "tide_store_keys", "gauge", "Keys in the store (absent until the count made at open is done, "
            "and always with generations: a key copied forward is in two, and a drop removes keys uncounted).",
            (double)keys);
    one(w, "tide_store_block_size_bytes", "gauge", "Block size of the key file.", (double)si.block_size);
    one(w, "tide_store_buckets", "gauge", "Buckets in the key file.", (double)si.buckets);
    one(w, "tide_store_inserts_total", "counter", "Values inserted since the store was opened.",
        (double)si.inserts);
    one(w, "tide_store_fetches_total", "counter", "Fetches that reached the store since it was opened.",
        (double)si.fetches);
    one(w, "tide_store_commits_total", "counter", "Commits that reached the files.", (double)si.commits);
    one(w, "tide_store_commit_failures_total", "counter", "Commits that failed (each is retried).",
        (double)si.commit_failures);
    memcpy(h.bucket, si.commit_duration.bucket, sizeof h.bucket);
    h.sum_ns = si.commit_duration.sum_ns;
    h.count = si.commit_duration.count;
    histogram(w, "tide_store_commit_duration_seconds", "Wall time of each commit that reached the files.", &h);
    one(w, "tide_store_data_file_bytes", "gauge", "Size of nudb.dat.", (double)si.dat_file_bytes);
    one(w, "tide_store_key_file_bytes", "gauge", "Size of nudb.key.", (double)si.key_file_bytes);
    write_maps(w, n, &si);
    one(w, "tide_store_written_bytes_total", "counter", "Bytes commits wrote to the store's files.",
        (double)si.bytes_written);
    /* The deferred index. */
    one(w, "tide_store_tail_index_items", "gauge", "Entries in the deferred index's tail: committed "
        "records nudb.key does not index yet.", (double)si.tail_items);
    one(w, "tide_store_tail_index_bytes", "gauge", "Memory of the tail index's table "
        "(the store_tail_index consumer).", (double)si.tail_bytes);
    one(w, "tide_store_index_flushes_total", "counter", "Flushes that wrote the tail's entries "
        "into nudb.key.", (double)si.index_flushes);
}

/* Online delete: the rotator's totals and the generations. A plain store
 * shows as one generation (position 0, id 0) with no rotation. */
static void write_rotations(tide_metrics_writer *w, tide_node *n)
{
    static const char *const phases[] = { "gate", "keep", "create", "sync", "manifest", "switch", "drop",
                                          "trim" };
    tide_node_rotation_totals t;
    tide_gens_info gi;
    const tide_hist *h[TIDE_NODE_ROTATION_NPHASES + 1];
    char pos[16];

    tide_node_rotation_totals_get(n, &t);
    tide_node_gens_info(n, &gi);
    one(w, "tide_online_delete_enabled", "gauge", "1 when the data directory holds generations (online delete).",
        gi.enabled);
    one(w, "tide_rotations_total", "counter", "Rotations made (a new generation in front, the oldest beyond "
        "generations dropped).", (double)t.rotations);
    one(w, "tide_rotation_failures_total", "counter", "Rotation attempts that returned an error.",
        (double)t.failures);
    one(w, "tide_rotations_abandoned_total", "counter",
        "Rotation attempts abandoned after rotation_wait_max_seconds of an unhealthy node.", (double)t.abandoned);
    one(w, "tide_rotation_gate_waits_total", "counter",
        "Waits of recovery_wait_seconds the health gate made rotations take.", (double)t.gate_waits);
    for (int i = 0; i < TIDE_NODE_ROTATION_NPHASES; i++) h[i] = &t.phase_duration[i];
    h[TIDE_NODE_ROTATION_NPHASES] = &t.trim_duration;
    histogram_labelled(w, "tide_rotation_duration_seconds", "Wall time of each phase of a rotation: gate (waiting "
                       "for health), keep (the keep-list), create, sync (the kept stores' syncs around the hide), "
                       "manifest, switch, drop (the gradual delete), trim (the release after a drop).", "phase",
                       phases, h, TIDE_NODE_ROTATION_NPHASES + 1);
    one(w, "tide_rotation_copied_objects_total", "counter", "Objects copied forward into the newest generation: "
        "reads and re-PUTs of older ones, cache hits, keep-lists.", (double)gi.copied_forward);
    one(w, "tide_rotation_copied_bytes_total", "counter", "Value bytes copied forward into the newest generation.",
        (double)gi.copied_forward_bytes);
    one(w, "tide_rotation_copy_failures_total", "counter", "Copies forward that failed (logged; the read "
        "was still served).", (double)gi.copy_failures);
    one(w, "tide_rotation_deleted_bytes_total", "counter", "File bytes of dropped generations removed from disk.",
        (double)t.deleted_bytes);
    one(w, "tide_rotation_trims_total", "counter", "Release calls made right after rotations that dropped a "
        "generation.", (double)t.trims);
    one(w, "tide_rotation_trim_released_bytes_total", "counter",
        "RSS given back by the releases after rotations, over those that lowered it.", (double)t.trim_released_bytes);
    one(w, "tide_older_generation_lookups_total", "counter", "Fetches and existence checks that missed the newest "
        "generation and read the older ones (one key-file read each).", (double)gi.older_lookups);
    one(w, "tide_generations", "gauge", "Generations held (1 for a plain store).", (double)gi.count);
    tide_metrics_family(w, "tide_generation_bytes", "gauge", "File bytes of each generation by position, newest 0.");
    for (unsigned i = 0; i < gi.count && i < TIDE_GEN_MAX; i++) {
        const char *lab[2] = { "position", pos };
        snprintf(pos, sizeof pos, "%u", i);
        tide_metrics_sample(w, "tide_generation_bytes", lab, 1, (double)(gi.gens[i].dat_file_bytes
                            + gi.gens[i].key_file_bytes + gi.gens[i].log_file_bytes));
    }
    tide_metrics_family(w, "tide_generation_id", "gauge", "The id of the generation at each position, newest 0 "
                        "(0 for a plain store).");
    for (unsigned i = 0; i < gi.count && i < TIDE_GEN_MAX; i++) {
        const char *lab[2] = { "position", pos };
        snprintf(pos, sizeof pos, "%u", i);
        tide_metrics_sample(w, "tide_generation_id", lab, 1, (double)gi.gens[i].id);
    }
    one(w, "tide_newest_generation_objects", "gauge", "Data records in the newest generation (what the "
        "online_delete trigger counts; copies forward included).", (double)gi.newest_objects);
    one(w, "tide_disk_bytes", "gauge", "File bytes of every generation (the data directory's stores).",
        (double)gi.disk_bytes);
}

/* ---- the archive (docs/ARCHIVE.md) ---------------------------------------------- */

/* The archive's figures; the families are absent without an archive. */
static void write_archive(tide_metrics_writer *w, tide_node *n)
{
    static const char *const ops[TIDE_ARCHIVE_OPS] = { "write", "read", "seal", "manifest", "delete" };
    tide_archive *a = tide_node_archive(n);
    tide_node_rotation_totals t;
    tide_archive_info ai;
    tide_hist hs[TIDE_ARCHIVE_OPS];
    const tide_hist *h[TIDE_ARCHIVE_OPS];

    if (a == NULL) return;
    tide_archive_get_info(a, &ai);
    tide_node_rotation_totals_get(n, &t);
    tide_metrics_family(w, "tide_archive_info", "gauge", "The archive this node uses: its pool, its prefix "
                        "and its mode (primary or replica); always 1.");
    {
        const char *lab[6] = { "pool", ai.pool, "prefix", ai.prefix, "mode", ai.replica ? "replica" : "primary" };
        tide_metrics_sample(w, "tide_archive_info", lab, 3, 1);
    }
    one(w, "tide_archive_up", "gauge", "1 while the archive's cluster answers (connected, and the last call "
        "to RADOS worked); 0 otherwise.", ai.up);
    one(w, "tide_archive_conflict", "gauge", "1 when another writer changed the prefix's manifest, or it holds "
        "another store's generation under an id of this node's: uploads have stopped.", ai.conflict);
    one(w, "tide_archive_lag_bytes", "gauge", "Bytes this node made durable that the archive does not hold yet: "
        "each local generation's nudb.dat beyond what is uploaded, and the key files of generations waiting "
        "to be sealed.", (double)ai.lag_bytes);
    one(w, "tide_archive_uploaded_bytes_total", "counter", "Bytes written to RADOS (data, key files, filters).",
        (double)ai.uploaded_bytes);
    one(w, "tide_archive_sealed_generations", "gauge", "Generations sealed in the archive's manifest now.",
        (double)ai.sealed_generations);
    one(w, "tide_archive_generations", "gauge", "Generations the archive's manifest lists, open ones included.",
        (double)ai.archived_generations);
    one(w, "tide_archive_bytes", "gauge", "Data and key bytes of the sealed generations in the archive.",
        (double)ai.archive_bytes);
    one(w, "tide_archive_seals_total", "counter", "Generations sealed since start (a replica: seals seen).",
        (double)ai.seals);
    one(w, "tide_archive_deleted_generations_total", "counter", "Generations removed from the archive by "
        "archive_keep since start.", (double)ai.deleted_generations);
    tide_metrics_family(w, "tide_archive_reads_total", "counter", "Reads that missed every local generation "
                        "and asked the archive, by result: found, missed (in no sealed generation), failed "
                        "(the cluster did not answer, or an object was not what the manifest says).");
    {
        const char *lab[2] = { "result", "found" };
        tide_metrics_sample(w, "tide_archive_reads_total", lab, 1, (double)ai.reads_found);
        lab[1] = "missed";
        tide_metrics_sample(w, "tide_archive_reads_total", lab, 1, (double)ai.reads_missed);
        lab[1] = "failed";
        tide_metrics_sample(w, "tide_archive_reads_total", lab, 1, (double)ai.reads_failed);
    }
    one(w, "tide_archive_filter_skips_total", "counter", "Archived generations a read did not ask RADOS about "
        "because their key filter said the key is not there.", (double)ai.reads_filtered);
    one(w, "tide_archive_filter_bytes", "gauge", "Bytes of key filters held (within archive_filter_budget).",
        (double)ai.filter_bytes);
    one(w, "tide_archive_filters_dropped_total", "counter", "Filters given up or not loaded for want of "
        "archive_filter_budget (reads of those generations cost a bucket read each).",
        (double)ai.filters_dropped);
    tide_metrics_family(w, "tide_archive_errors_total", "counter", "Failed calls to RADOS by operation.");
    {
        const char *names[5] = { "write", "read", "manifest", "delete", "connect" };
        uint64_t v[5] = { ai.errors_write, ai.errors_read, ai.errors_manifest, ai.errors_delete,
                          ai.errors_connect };
        for (int i = 0; i < 5; i++) {
            const char *lab[2] = { "op", names[i] };
            tide_metrics_sample(w, "tide_archive_errors_total", lab, 1, (double)v[i]);
        }
    }
    for (int k = 0; k < TIDE_ARCHIVE_OPS; k++) {
        memcpy(hs[k].bucket, ai.op[k].bucket, sizeof hs[k].bucket);
        hs[k].sum_ns = ai.op[k].sum_ns;
        hs[k].count = ai.op[k].count;
        h[k] = &hs[k];
    }
    histogram_labelled(w, "tide_archive_op_duration_seconds", "Wall time of operations on RADOS: write (one "
                       "asynchronous write, queued to acknowledged), read (a read through the archive that asked RADOS, "
                       "every generation it asked; one the filters answered alone is not one), seal, manifest (a read or write of the manifest), delete (one "
                       "generation's objects).", "op", ops, h, TIDE_ARCHIVE_OPS);
    one(w, "tide_archive_rotation_waits_total", "counter", "Rotation health looks that found a generation to "
        "drop not yet sealed in the archive (the rotation waited).", (double)t.archive_waits);
    one(w, "tide_archive_sync_waits_total", "counter", "Syncs (PUT ?sync=1 batches) that waited for the "
        "archive (archive_sync=archive).", (double)tide_node_archive_sync_waits(n, 0));
    one(w, "tide_archive_sync_failures_total", "counter", "Of those, syncs the archive did not take within "
        "archive_timeout (answered 503 archive_unavailable).", (double)tide_node_archive_sync_waits(n, 1));
}

/* ---- the memory limit (governor.c) ---------------------------------------------- */

/* One PSI file's averages and totals under scope=`scope`. The families are
 * open: ratio when `ratio`, the stall seconds otherwise. */
static void psi_samples(tide_metrics_writer *w, const char *scope, const tide_mem_psi *p, int ratio)
{
    static const char *const windows[3] = { "10s", "60s", "300s" };
    const tide_mem_psi_line *lines[2] = { &p->some, &p->full };
    const char *kinds[2] = { "some", "full" };

    for (int k = 0; k < (p->has_full ? 2 : 1); k++) {
        if (!ratio) {
            const char *lab[4] = { "scope", scope, "kind", kinds[k] };
            tide_metrics_sample(w, "tide_memory_pressure_stall_seconds_total", lab, 2,
                                (double)lines[k]->total_us / 1e6);
            continue;
        }
        double avg[3] = { lines[k]->avg10, lines[k]->avg60, lines[k]->avg300 };
        for (int i = 0; i < 3; i++) {
            const char *lab[6] = { "scope", scope, "kind", kinds[k], "window", windows[i] };
            tide_metrics_sample(w, "tide_memory_pressure_ratio", lab, 3, avg[i] / 100.0);
        }
    }
}

/* PSI: the governor's file (the system's unless psi_path names another)
 * and the cgroup's memory.pressure (v2). */
static void write_pressure(tide_metrics_writer *w, tide_node *n, const tide_node_memory_status *st)
{
    const char *pp = tide_node_options(n)->hooks.psi_path;
    const char *scope = pp == NULL || strcmp(pp, TIDE_MEM_PSI_SYSTEM) == 0 ? "system" : "cgroup";
    int own = st->last.has_psi, cg = st->last.has_cgroup && st->last.cgroup.has_psi;

    if (own && cg && strcmp(scope, "cgroup") == 0) own = 0;     /* the same file twice */
    if (!own && !cg) return;
    tide_metrics_family(w, "tide_memory_pressure_ratio", "gauge", "PSI memory stall averages as a ratio of wall "
                        "time (avg/100): some or all tasks stalled, over 10 s, 60 s and 300 s.");
    if (own) psi_samples(w, scope, &st->last.psi, 1);
    if (cg) psi_samples(w, "cgroup", &st->last.cgroup.psi, 1);
    tide_metrics_family(w, "tide_memory_pressure_stall_seconds_total", "counter",
                        "PSI memory stall time in total (some: at least one task stalled; full: all).");
    if (own) psi_samples(w, scope, &st->last.psi, 0);
    if (cg) psi_samples(w, "cgroup", &st->last.cgroup.psi, 0);
}

/* The cgroup whose usage counts beside RSS, when the governor reads one. */
static void write_cgroup(tide_metrics_writer *w, const tide_metrics_opts *o, const tide_node_memory_status *st)
{
    const tide_mem_cgroup_usage *u = &st->last.cgroup;

    if (!st->last.has_cgroup) return;
    if (o->config && o->config->cgroup_limited)
        one(w, "tide_cgroup_memory_limit_bytes", "gauge", "The memory limit of the cgroup that applies (v2 "
            "memory.max, v1 memory.limit_in_bytes).", (double)o->config->cgroup_limit);
    one(w, "tide_cgroup_memory_usage_bytes", "gauge", "The cgroup's memory usage (memory.current, v1 "
        "memory.usage_in_bytes), page cache included.", (double)u->current_bytes);
    one(w, "tide_cgroup_memory_page_cache_bytes", "gauge", "The cgroup's page cache (active_file + "
        "inactive_file), which the kernel reclaims first; usage less this counts.", (double)u->page_cache_bytes);
    tide_metrics_family(w, "tide_cgroup_memory_events_total", "counter", "The cgroup's memory events (v2 "
                        "memory.events; v1: max from memory.failcnt, oom_kill from memory.oom_control).");
    for (int e = 0; e < TIDE_MEM_EV_COUNT; e++) {
        const char *lab[2] = { "event", tide_mem_event_name(e) };
        if (u->has_event[e]) tide_metrics_sample(w, "tide_cgroup_memory_events_total", lab, 1, (double)u->events[e]);
    }
}

static void write_overload(tide_metrics_writer *w, const tide_node_memory_status *st)
{
    static const char *const levels[TIDE_OVERLOAD_LEVELS] = { "normal", "soft", "high", "critical" };

    if (st->limit_bytes)
        tide_metrics_family(w, "tide_overload_mark_bytes", "gauge", "The counted bytes at which each level is "
                            "entered and below which it is left (absent without a limit).");
    for (int l = TIDE_OVERLOAD_SOFT; st->limit_bytes && l < TIDE_OVERLOAD_LEVELS; l++) {
        const char *le[4] = { "level", levels[l], "edge", "enter" }, *ll[4] = { "level", levels[l], "edge", "leave" };
        tide_metrics_sample(w, "tide_overload_mark_bytes", le, 2, (double)st->marks_enter[l]);
        tide_metrics_sample(w, "tide_overload_mark_bytes", ll, 2, (double)st->marks_leave[l]);
    }
    one(w, "tide_overload_level_changes_total", "counter", "Changes of the overload level (each logged once).",
        (double)st->level_changes);
    tide_metrics_family(w, "tide_overload_actions_total", "counter", "What the memory governor did: sweep rounds, "
                        "cache limits shrunk and restored, release calls, writes shed, accepting stopped.");
    for (int a = 0; a < TIDE_NODE_ACT_COUNT; a++) {
        const char *lab[2] = { "action", tide_node_action_name(a) };
        tide_metrics_sample(w, "tide_overload_actions_total", lab, 1, (double)st->actions[a]);
    }
    one(w, "tide_overload_rejected_writes_total", "counter", "Node puts refused at the high level or above.",
        (double)st->rejected_writes);
    tide_metrics_family(w, "tide_memory_reading_failures_total", "counter", "Governor readings that failed "
                        "(what=\"reading\": skipped, the level kept) or whose cgroup figures failed "
                        "(what=\"cgroup\": RSS alone read, the level kept).");
    {
        const char *lr[2] = { "what", "reading" }, *lc[2] = { "what", "cgroup" };
        tide_metrics_sample(w, "tide_memory_reading_failures_total", lr, 1, (double)st->reading_failures);
        tide_metrics_sample(w, "tide_memory_reading_failures_total", lc, 1, (double)st->cgroup_failures);
    }
    tide_metrics_family(w, "tide_overload_level_seconds_total", "counter", "Time spent at each overload level.");
    for (int l = 0; l < TIDE_OVERLOAD_LEVELS; l++) {
        const char *lab[2] = { "level", levels[l] };
        tide_metrics_sample(w, "tide_overload_level_seconds_total", lab, 1, (double)st->level_seconds_us[l] / 1e6);
    }
}

static void write_memory_limit(tide_metrics_writer *w, tide_node *n, const tide_metrics_opts *o)
{
    tide_node_memory_status st;

    tide_node_memory_get(n, &st);
    one(w, "tide_memory_limit_bytes", "gauge", "The process memory limit the governor holds (0: none).",
        (double)st.limit_bytes);
    one(w, "tide_memory_counted_bytes", "gauge", "What counts against the limit: the larger of the RSS and the "
        "cgroup's usage less page cache, at the latest reading.", (double)st.counted_bytes);
    one(w, "tide_overload_level", "gauge", "The overload level: 0 normal, 1 soft, 2 high (writes refused), "
        "3 critical (no new connections).", (double)st.level);
    write_overload(w, &st);
    tide_metrics_family(w, "tide_memory_peak_bytes", "gauge", "The highest counted bytes since the node opened "
                        "(with the kernel's VmHWM when larger) and since the last sweep round began.");
    const char *ps[2] = { "since", "start" }, *pw[2] = { "since", "sweep" };
    tide_metrics_sample(w, "tide_memory_peak_bytes", ps, 1, (double)st.peak_start_bytes);
    tide_metrics_sample(w, "tide_memory_peak_bytes", pw, 1, (double)st.peak_sweep_bytes);
    write_cgroup(w, o, &st);
    write_pressure(w, n, &st);
}

int tide_metrics_render(tide_node *n, const tide_metrics_opts *o, char **out, size_t *len)
{
    tide_metrics_writer w = { 0 };
    tide_metrics_opts dflt;
    tide_store_info si;
    tide_mem_alloc_stats ast;
    const tide_mem_alloc_stats *ast_ok;
    tide_mem_proc_status ps;
    const tide_mem_proc_status *ps_ok;
    page_arenas pa;
    int rc = 0;

    *out = NULL;
    *len = 0;
    if (o == NULL) tide_metrics_opts_init(&dflt), o = &dflt;
    w.cap = 16384;
    w.buf = malloc(w.cap);
    if (w.buf == NULL) { rc = TIDE_ENOMEM; goto out; }
    w.buf[0] = '\0';
    /* The store's two consumers (insert pool, commit buffers) are set from
     * its counters, so set them before the consumers are written: set only
     * by write_store below, the page showed the pool of the previous scrape
     * beside the RssAnon of this one. */
    tide_node_store_info(n, &si);
    /* Read once: under glibc the read walks every free chunk. */
    ast_ok = tide_mem_alloc_stats_read(tide_mem_alloc_family(), &ast) == 0 ? &ast : NULL;
    if (ast_ok == NULL) tide_err_clear();
    ps_ok = tide_mem_proc_status_read(&ps) == 0 ? &ps : NULL;
    if (ps_ok == NULL) tide_err_clear();
    read_arenas(n, &pa);
    write_build(&w, o);
    write_consumers(&w);
    if (o->config) write_config(&w, o->config);
    write_caches(&w, n);
    write_sweeps(&w, n);
    write_arena(&w, n, &pa);
    write_allocator(&w, ast_ok);
    write_process(&w, o, ps_ok);
    write_anon_parts(&w, ps_ok, &pa, ast_ok);
    write_memory_limit(&w, n, o);
    write_store(&w, n, &si);
    write_rotations(&w, n);
    write_archive(&w, n);
    if (o->extra) o->extra(o->extra_arg, &w);
    if (w.oom) { rc = TIDE_ENOMEM; goto out; }
    *out = w.buf;
    *len = w.len;
    w.buf = NULL;
out:
    free(w.buf);
    return rc;
}
