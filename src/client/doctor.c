/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * doctor.c: reading a node's /metrics page and saying what its memory is,
 * and from its /v1/status what its disk is; with an archive, how it is.
 *
 * Layout: a small parser of the text format (one sample at a time, labels
 * read on demand), the analysis that fills a tide_doctor_report, the
 * memory limit's families (the limit, the overload level, peaks, PSI, the cgroup's
 * events, churn), the archive's families, the rules and their table, the
 * disk side (the status's "online_delete" object and the disk families of
 * the page, with the findings they lead to), the status's "archive"
 * object, then the two renderings, words and JSON.
 *
 * The rules (the table `rules[]`, documented in doctor.h, `tide doctor
 * --help` and docs/OPERATIONS.md): limit, cgroup_events, pressure,
 * overload, growth, rss_vs_live, allocator_free, arena, peak,
 * unbounded_consumers, and the archive's: archive_conflict, archive_up,
 * archive_lag, archive_rotation_waits, archive_sync_failures, judged only
 * on a page with a tide_archive_* family (a node without an archive says
 * nothing of one, so neither does the report). Each reads its figures
 * from the report, compares them with doctor.h's named thresholds and
 * gives one result: a finding (WARN or BAD, with its figures and the
 * advice naming the flags), "cannot tell" (its figures are not on the
 * page), or passed. The verdict is the worst finding's severity and
 * summary, "; N more findings" after it. growth needs two pages
 * (tide_doctor_analyze_growth); from one it says so. overload,
 * cgroup_events, archive_rotation_waits and archive_sync_failures read
 * since-start counters: from one page they say "since start"
 * (cgroup_events "since the cgroup was made") and are never BAD but for
 * oom_kill; with two they are redone on the counters'
 * increase between the pages, "in the last N s". limit judges against the
 * page's own enter marks (tide_overload_mark_bytes), doctor.h's fractions
 * only when the page has none.
 *
 * The analysis, in the order an operator asks:
 *   1. RSS in the parts that add up to it, in one line (mem/proc.h): the
 *      process's anonymous memory, what the limit counts; the pages of
 *      nudb.dat's and nudb.key's read-only maps, page cache that ps and top
 *      show but the limit does not count; code and libraries. Then RSS
 *      against what the allocator says is live (glibc: in-use chunks
 *      plus mmapped chunks; jemalloc, tcmalloc: allocated bytes).
 *   2. What the allocator holds free (tide_allocator_free_bytes): the most a
 *      trim could return. glibc can give back only whole free pages, so the
 *      words say "up to".
 *   3. The consumers, largest first, each against its budget.
 *   4. The trims: how many, how often they lowered RSS, the mean release,
 *      the median and p95 duration estimated from the histogram's buckets
 *      (as Prometheus' histogram_quantile does), faults per trim.
 *   5. The consumers left unbounded and the setting that bounds each.
 *   6. The disk (online delete): its bytes now and per
 *      generation, the last rotation's age, and as findings with advice:
 *      online delete off (the store grows without bound), rotation attempts
 *      that failed or were abandoned, an advisory_delete allowance under
 *      which nothing will be deleted.
 *   7. The archive, when the page has its families: where it is (pool,
 *      prefix, mode), whether the cluster answers, a conflict, the lag,
 *      what it holds, reads and failed calls, rotations and syncs that
 *      waited for it; with the status, archive_sync, the node's last
 *      failure and each local generation's state there.
 *
 * A page is a node's only when it has a sample of a tide_* family: the
 * process_* families are every exporter's (Prometheus' own /metrics has
 * process_resident_memory_bytes), so a page without tide_* samples, an
 * HTML page or garbage is refused by name, never explained as all well.
 * Lines that are not NAME[{LABELS}] VALUE are not samples.
 *
 * Invariants:
 *   1. consumers[] is sorted by bytes, largest first.
 *   2. A figure absent from the page is negative in the report and is
 *      printed as unknown, never as 0; so is one absent from the status
 *      (a node from before online delete has none): missing members are
 *      tolerated, never guessed. A rule whose figures are absent says it
 *      cannot tell; it never fires or passes on a guess.
 *   3. Each rule gives exactly one result (finding, cannot tell, or
 *      passed), but for the archive's on a page without the archive's
 *      families, which give none; findings are sorted worst first, the
 *      table's order within a severity, and the verdict is findings[0]'s
 *      (ok when none).
 *   4. In JSON, bytes and counts are integers, ratios and seconds reals.
 *
 * Never: fetch anything (the caller brings the text), guess a figure, or
 * let a rule's threshold live anywhere but doctor.h's constants.
 */
#include "client/doctor.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mem/proc.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/size.h"

static void disk_from_metrics(const char *text, tide_doctor_disk *d);
static void limit_from_metrics(const char *text, tide_doctor_report *r);
static void archive_from_metrics(const char *text, tide_doctor_archive *a);
static void run_rules(tide_doctor_report *r);

/* ---- the text format --------------------------------------------------------- */

typedef struct sample {
    char   name[160];
    char   labels[768];   /* raw, without braces */
    double value;
} sample;

/* 1 when line[0..n) is a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static int metric_name(const char *line, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)line[0]) || line[0] == '_' || line[0] == ':')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)line[i]) || line[i] == '_' || line[i] == ':')) return 0;
    return 1;
}

/* The next sample at or after *p; 0 when found, -1 at the end. A line
 * that is not NAME[{LABELS}] VALUE (HTML, prose, garbage) is no sample. */
static int sample_next(const char **p, sample *s)
{
    while (**p) {
        const char *line = *p, *e = strchr(line, '\n');
        size_t len = e ? (size_t)(e - line) : strlen(line);
        *p = line + len + (e ? 1 : 0);
        if (len == 0 || line[0] == '#') continue;
        size_t nl = strcspn(line, "{ \n");
        if (nl >= sizeof s->name || nl >= len || !metric_name(line, nl)) continue;
        memcpy(s->name, line, nl);
        s->name[nl] = '\0';
        const char *v = line + nl;
        s->labels[0] = '\0';
        if (*v == '{') {
            const char *close = v + 1;
            int in_str = 0;
            for (; close < line + len; close++) {   /* a '}' inside a quoted value is not the end */
                if (in_str && *close == '\\') { close++; continue; }
                if (*close == '"') in_str = !in_str;
                else if (*close == '}' && !in_str) break;
            }
            if (close >= line + len) continue;
            size_t ll = (size_t)(close - v - 1);
            if (ll >= sizeof s->labels) continue;
            memcpy(s->labels, v + 1, ll);
            s->labels[ll] = '\0';
            v = close + 1;
        }
        while (*v == ' ') v++;
        const char *end = v, *stop = line + len;
        if (strncmp(v, "+Inf", 4) == 0) {
            s->value = INFINITY;
            end = v + 4;
        } else {
            char *e;
            s->value = strtod(v, &e);
            end = e;
            if (end == v) continue;
        }
        /* Then nothing but an optional integer timestamp. */
        while (end < stop && *end == ' ') end++;
        if (end < stop && *end == '-') end++;
        while (end < stop && isdigit((unsigned char)*end)) end++;
        while (end < stop && (*end == ' ' || *end == '\r')) end++;
        if (end != stop) continue;
        return 0;
    }
    return -1;
}

/* The unescaped value of label `key` in raw labels; 0 when found. */
static int label_get(const char *raw, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = raw;

    while (*p) {
        const char *eq = strchr(p, '=');
        if (eq == NULL || eq[1] != '"') return -1;
        int match = (size_t)(eq - p) == kl && strncmp(p, key, kl) == 0;
        size_t n = 0;
        const char *q = eq + 2;
        for (; *q && *q != '"'; q++) {
            char c = *q;
            if (c == '\\' && q[1]) { q++; c = *q == 'n' ? '\n' : *q; }
            if (match && n + 1 < cap) out[n++] = c;
        }
        if (match) { out[n] = '\0'; return 0; }
        if (*q != '"') return -1;
        p = q + 1;
        if (*p == ',') p++;
    }
    return -1;
}

/* The value of `name` whose label `lkey` is `lval` (lkey NULL: the first
 * sample named `name`); NAN when absent. */
static double value_of(const char *text, const char *name, const char *lkey, const char *lval)
{
    sample s;
    char v[256];
    const char *p = text;

    while (sample_next(&p, &s) == 0) {
        if (strcmp(s.name, name) != 0) continue;
        if (lkey == NULL) return s.value;
        if (label_get(s.labels, lkey, v, sizeof v) == 0 && strcmp(v, lval) == 0) return s.value;
    }
    return NAN;
}

static double or_neg(double v) { return isnan(v) ? -1.0 : v; }

/* The sum of every sample of family `name`, whatever its labels; NAN when
 * the page has none. */
static double sum_of(const char *text, const char *name)
{
    sample s;
    const char *p = text;
    double sum = NAN;

    while (sample_next(&p, &s) == 0)
        if (strcmp(s.name, name) == 0) sum = isnan(sum) ? s.value : sum + s.value;
    return sum;
}

/* Prometheus' histogram_quantile over the cumulative buckets of `family`:
 * linear within the bucket the rank falls in; the last finite bound when it
 * falls in +Inf. Negative when there are no observations. */
static double quantile(const char *text, const char *family, double q)
{
    char bucket_name[200], le[64];
    double bound[64], cum[64], total = 0;
    int n = 0;
    sample s;
    const char *p = text;

    snprintf(bucket_name, sizeof bucket_name, "%s_bucket", family);
    while (sample_next(&p, &s) == 0 && n < 64) {
        if (strcmp(s.name, bucket_name) != 0 || label_get(s.labels, "le", le, sizeof le) != 0) continue;
        bound[n] = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
        cum[n] = s.value;
        n++;
    }
    if (n == 0) return -1;
    total = cum[n - 1];
    if (total <= 0) return -1;
    double rank = q * total, lo = 0, below = 0;
    for (int i = 0; i < n; i++) {
        if (cum[i] >= rank) {
            if (isinf(bound[i])) return i > 0 ? bound[i - 1] : -1;
            double in = cum[i] - below;
            return in > 0 ? lo + (bound[i] - lo) * (rank - below) / in : bound[i];
        }
        lo = bound[i];
        below = cum[i];
    }
    return lo;
}

/* ---- the analysis -------------------------------------------------------------------- */

static int by_bytes_desc(const void *a, const void *b)
{
    double x = ((const tide_doctor_consumer *)a)->bytes, y = ((const tide_doctor_consumer *)b)->bytes;
    return (x < y) - (x > y);
}
/* RSS in its parts: the node's own split when the page has it, else the
 * same sums from RssAnon, RssFile and the two maps' resident pages (a map
 * not on the page counts 0: a node reading with pread has none). */
static void rss_parts_from_metrics(const char *text, tide_doctor_report *r)
{
    double a = value_of(text, "tide_process_resident_memory_part_bytes", "part", "anonymous");
    double m = value_of(text, "tide_process_resident_memory_part_bytes", "part", "store_maps");
    double o = value_of(text, "tide_process_resident_memory_part_bytes", "part", "other_files");

    r->part_anonymous = r->part_store_maps = r->part_other_files = -1;
    if (!isnan(a) && !isnan(m) && !isnan(o)) {
        r->part_anonymous = a;
        r->part_store_maps = m;
        r->part_other_files = o;
    } else if (r->rss >= 0 && r->rss_anon >= 0 && r->rss_file >= 0 && r->rss_file <= r->rss) {
        double maps = (r->key_map_resident > 0 ? r->key_map_resident : 0) +
                      (r->dat_map_resident > 0 ? r->dat_map_resident : 0);
        r->part_store_maps = maps < r->rss_file ? maps : r->rss_file;
        r->part_other_files = r->rss_file - r->part_store_maps;
        r->part_anonymous = r->rss - r->rss_file;
    }
}


/* TIDE_EINVAL unless the page holds a sample of a tide_* family: any
 * exporter has process_* families (Prometheus' own /metrics has
 * process_resident_memory_bytes), so only tide_* ones tell a node's page. */
static int check_tide_page(const char *text)
{
    sample s;
    const char *p = text;
    size_t samples = 0;
    char other[64] = "";

    while (sample_next(&p, &s) == 0) {
        if (strncmp(s.name, "tide_", 5) == 0) return 0;
        if (samples++ == 0) snprintf(other, sizeof other, "%.63s", s.name);
    }
    if (samples > 0)
        return tide_err_set(TIDE_EINVAL, "does not look like a tide node's /metrics: no tide_* families "
                            "(its %zu samples are other families', %s the first)", samples, other);
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n') text++;
    return tide_err_set(TIDE_EINVAL, "does not look like a tide node's /metrics: no tide_* families "
                        "(no metric samples at all%s)", *text == '<' ? "; it looks like HTML" : "");
}

int tide_doctor_analyze(const char *text, tide_doctor_report *r)
{
    sample s;
    const char *p;
    char v[256];
    int rc;

    memset(r, 0, sizeof *r);
    rc = check_tide_page(text);
    if (rc) return rc;
    r->rss = or_neg(value_of(text, "process_resident_memory_bytes", NULL, NULL));
    if (r->rss < 0 && isnan(value_of(text, "tide_memory_consumer_bytes", NULL, NULL)))
        return tide_err_set(TIDE_EINVAL, "does not look like a tide node's /metrics: neither "
                            "process_resident_memory_bytes nor tide_memory_consumer_bytes is on it");
    r->rss_anon = or_neg(value_of(text, "tide_process_rss_anon_bytes", NULL, NULL));
    r->rss_file = or_neg(value_of(text, "tide_process_rss_file_bytes", NULL, NULL));
    r->key_map_resident = or_neg(value_of(text, "tide_store_key_map_bytes", "state", "resident"));
    r->dat_map_resident = or_neg(value_of(text, "tide_store_dat_map_bytes", "state", "resident"));
    rss_parts_from_metrics(text, r);
    snprintf(r->allocator, sizeof r->allocator, "unknown");
    for (p = text; sample_next(&p, &s) == 0;) {
        if (strcmp(s.name, "tide_allocator_info") != 0) continue;
        label_get(s.labels, "name", r->allocator, sizeof r->allocator);
        label_get(s.labels, "version", r->allocator_version, sizeof r->allocator_version);
        break;
    }
    if (strcmp(r->allocator, "glibc") == 0) {
        double in_use = value_of(text, "tide_glibc_in_use_bytes", NULL, NULL);
        double mmap = value_of(text, "tide_glibc_mmap_bytes", NULL, NULL);
        r->live = isnan(in_use) ? -1 : in_use + (isnan(mmap) ? 0 : mmap);
    } else if (strcmp(r->allocator, "jemalloc") == 0) {
        r->live = or_neg(value_of(text, "tide_jemalloc_allocated_bytes", NULL, NULL));
    } else if (strcmp(r->allocator, "tcmalloc") == 0) {
        r->live = or_neg(value_of(text, "tide_tcmalloc_allocated_bytes", NULL, NULL));
    } else {
        r->live = -1;
    }
    r->allocator_free = or_neg(value_of(text, "tide_allocator_free_bytes", NULL, NULL));
    /* Summed over the caches' arenas (cache="node_cache", "key_cache"). */
    r->arena_live = or_neg(sum_of(text, "tide_cache_arena_live_bytes"));
    r->arena_resident = or_neg(sum_of(text, "tide_cache_arena_resident_bytes"));
    r->arena_evacuated = or_neg(sum_of(text, "tide_cache_arena_evacuated_bytes_total"));

    for (p = text; sample_next(&p, &s) == 0;) {
        if (strcmp(s.name, "tide_memory_consumer_bytes") == 0 && r->nconsumers < TIDE_DOCTOR_MAX &&
            label_get(s.labels, "consumer", v, sizeof v) == 0) {
            tide_doctor_consumer *c = &r->consumers[r->nconsumers++];
            label_get(s.labels, "consumer", c->name, sizeof c->name);
            c->bytes = s.value;
            c->budget = or_neg(value_of(text, "tide_memory_consumer_budget_bytes", "consumer", v));
            r->consumers_total += s.value;
        } else if (strcmp(s.name, "tide_unbounded_consumer") == 0 && r->nunbounded < TIDE_DOCTOR_MAX &&
                   s.value == 1) {
            tide_doctor_unbounded *u = &r->unbounded[r->nunbounded++];
            label_get(s.labels, "consumer", u->consumer, sizeof u->consumer);
            label_get(s.labels, "setting", u->setting, sizeof u->setting);
        }
    }
    qsort(r->consumers, r->nconsumers, sizeof r->consumers[0], by_bytes_desc);

    r->sweeps = or_neg(value_of(text, "tide_sweeps_total", NULL, NULL));
    r->trims = or_neg(value_of(text, "tide_trims_total", NULL, NULL));
    r->trims_lowered = or_neg(value_of(text, "tide_trims_lowered_rss_total", NULL, NULL));
    r->trim_released = or_neg(value_of(text, "tide_trim_released_bytes_total", NULL, NULL));
    r->trim_seconds = or_neg(value_of(text, "tide_trim_duration_seconds_sum", NULL, NULL));
    r->trim_minflt = or_neg(value_of(text, "tide_trim_minor_faults_total", NULL, NULL));
    r->trim_p50_s = quantile(text, "tide_trim_duration_seconds", 0.5);
    r->trim_p95_s = quantile(text, "tide_trim_duration_seconds", 0.95);
    r->sweep_interval = or_neg(value_of(text, "tide_sweep_interval_seconds", NULL, NULL));
    double delta = value_of(text, "tide_trim_last_rss_delta_bytes", NULL, NULL);
    r->last_trim_delta = isnan(delta) ? 0 : delta;
    disk_from_metrics(text, &r->disk);
    limit_from_metrics(text, r);
    archive_from_metrics(text, &r->archive);
    run_rules(r);
    return 0;
}

/* ---- the memory limit's families ---------------------------------------------- */

/* Over the samples of `name` whose labels k1=v1 and k2=v2 (a NULL key
 * matches all): their sum (max 0) or their largest (max 1); NAN when none. */
static double over(const char *text, const char *name, const char *k1, const char *v1, const char *k2,
                   const char *v2, int max)
{
    sample s;
    char v[256];
    const char *p = text;
    double acc = NAN;

    while (sample_next(&p, &s) == 0) {
        if (strcmp(s.name, name) != 0) continue;
        if (k1 && (label_get(s.labels, k1, v, sizeof v) != 0 || strcmp(v, v1) != 0)) continue;
        if (k2 && (label_get(s.labels, k2, v, sizeof v) != 0 || strcmp(v, v2) != 0)) continue;
        if (isnan(acc)) acc = s.value;
        else acc = max ? fmax(acc, s.value) : acc + s.value;
    }
    return acc;
}

static void limit_from_metrics(const char *text, tide_doctor_report *r)
{
    r->limit = or_neg(value_of(text, "tide_memory_limit_bytes", NULL, NULL));
    r->counted = or_neg(value_of(text, "tide_memory_counted_bytes", NULL, NULL));
    r->level = or_neg(value_of(text, "tide_overload_level", NULL, NULL));
    r->level_changes = or_neg(value_of(text, "tide_overload_level_changes_total", NULL, NULL));
    r->rejected_requests = or_neg(over(text, "tide_overload_rejected_requests_total", NULL, NULL, NULL, NULL, 0));
    r->rejected_writes = or_neg(value_of(text, "tide_overload_rejected_writes_total", NULL, NULL));
    r->queue_refused = or_neg(value_of(text, "tide_overload_rejected_requests_total", "reason", "store_queue"));
    r->body_refused = or_neg(value_of(text, "tide_http_requests_refused_total", "reason", "body_budget"));
    r->body_budget = or_neg(value_of(text, "tide_http_body_budget_bytes", NULL, NULL));
    r->peak_start = or_neg(value_of(text, "tide_memory_peak_bytes", "since", "start"));
    r->peak_sweep = or_neg(value_of(text, "tide_memory_peak_bytes", "since", "sweep"));
    r->pressure_some10 = or_neg(over(text, "tide_memory_pressure_ratio", "kind", "some", "window", "10s", 1));
    r->pressure_some60 = or_neg(over(text, "tide_memory_pressure_ratio", "kind", "some", "window", "60s", 1));
    r->cg_limit = or_neg(value_of(text, "tide_cgroup_memory_limit_bytes", NULL, NULL));
    r->cg_oom = or_neg(value_of(text, "tide_cgroup_memory_events_total", "event", "oom"));
    r->cg_oom_kill = or_neg(value_of(text, "tide_cgroup_memory_events_total", "event", "oom_kill"));
    r->cg_max = or_neg(value_of(text, "tide_cgroup_memory_events_total", "event", "max"));
    r->cg_high = or_neg(value_of(text, "tide_cgroup_memory_events_total", "event", "high"));
    r->mark_soft = or_neg(over(text, "tide_overload_mark_bytes", "level", "soft", "edge", "enter", 1));
    r->mark_high = or_neg(over(text, "tide_overload_mark_bytes", "level", "high", "edge", "enter", 1));
    for (size_t i = 0; i < r->nconsumers; i++) {
        tide_doctor_consumer *c = &r->consumers[i];
        c->allocations = or_neg(value_of(text, "tide_memory_allocations_total", "consumer", c->name));
        c->allocated = or_neg(value_of(text, "tide_memory_allocated_bytes_total", "consumer", c->name));
    }
}

/* ---- the archive's families --------------------------------------------------- */

/* 1 when the page has a sample of a tide_archive_* family. */
static int has_archive(const char *text)
{
    sample s;
    const char *p = text;

    while (sample_next(&p, &s) == 0)
        if (strncmp(s.name, "tide_archive_", 13) == 0) return 1;
    return 0;
}

/* The archive's figures, each < 0 when the page lacks it (invariant 2);
 * the status's part stays unknown until tide_doctor_analyze_status. */
static void archive_from_metrics(const char *text, tide_doctor_archive *a)
{
    sample s;
    const char *p;

    memset(a, 0, sizeof *a);
    a->present = has_archive(text);
    for (p = text; a->present && sample_next(&p, &s) == 0;) {
        if (strcmp(s.name, "tide_archive_info") != 0) continue;
        label_get(s.labels, "pool", a->pool, sizeof a->pool);
        label_get(s.labels, "prefix", a->prefix, sizeof a->prefix);
        label_get(s.labels, "mode", a->mode, sizeof a->mode);
        break;
    }
    a->up = or_neg(value_of(text, "tide_archive_up", NULL, NULL));
    a->conflict = or_neg(value_of(text, "tide_archive_conflict", NULL, NULL));
    a->lag_bytes = or_neg(value_of(text, "tide_archive_lag_bytes", NULL, NULL));
    a->sealed_generations = or_neg(value_of(text, "tide_archive_sealed_generations", NULL, NULL));
    a->generations = or_neg(value_of(text, "tide_archive_generations", NULL, NULL));
    a->archive_bytes = or_neg(value_of(text, "tide_archive_bytes", NULL, NULL));
    a->uploaded_bytes = or_neg(value_of(text, "tide_archive_uploaded_bytes_total", NULL, NULL));
    a->rotation_waits = or_neg(value_of(text, "tide_archive_rotation_waits_total", NULL, NULL));
    a->sync_waits = or_neg(value_of(text, "tide_archive_sync_waits_total", NULL, NULL));
    a->sync_failures = or_neg(value_of(text, "tide_archive_sync_failures_total", NULL, NULL));
    a->reads_found = or_neg(value_of(text, "tide_archive_reads_total", "result", "found"));
    a->reads_missed = or_neg(value_of(text, "tide_archive_reads_total", "result", "missed"));
    a->reads_failed = or_neg(value_of(text, "tide_archive_reads_total", "result", "failed"));
    a->errors_write = or_neg(value_of(text, "tide_archive_errors_total", "op", "write"));
    a->errors_read = or_neg(value_of(text, "tide_archive_errors_total", "op", "read"));
    a->errors_manifest = or_neg(value_of(text, "tide_archive_errors_total", "op", "manifest"));
    a->errors_delete = or_neg(value_of(text, "tide_archive_errors_total", "op", "delete"));
    a->errors_connect = or_neg(value_of(text, "tide_archive_errors_total", "op", "connect"));
}

/* ---- the rules ---------------------------------------------------------------- */

#define MIB 1048576.0
#define STR_(x) #x
#define STR(x) STR_(x)

const char *tide_doctor_severity_name(tide_doctor_severity s)
{
    return s == TIDE_DOCTOR_BAD ? "bad" : s == TIDE_DOCTOR_WARN ? "warn" : "ok";
}

static const char *size_words(double bytes, char *buf, size_t cap)
{
    if (bytes < 0) snprintf(buf, cap, "unknown");
    else tide_size_format((uint64_t)bytes, buf, cap);
    return buf;
}

static tide_doctor_finding *add_finding(tide_doctor_report *r, const char *rule, tide_doctor_severity sev)
{
    TIDE_ASSERT(sev != TIDE_DOCTOR_OK && r->nfindings < TIDE_DOCTOR_RULES);
    tide_doctor_finding *f = &r->findings[r->nfindings++];
    memset(f, 0, sizeof *f);
    f->rule = rule;
    f->severity = sev;
    return f;
}

static void fig(tide_doctor_finding *f, const char *name, double v, int integer)
{
    if (f->nfigures >= TIDE_DOCTOR_FIGURES || v < 0) return;   /* unknown figures are left out */
    tide_doctor_figure *g = &f->figures[f->nfigures++];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->value = integer ? floor(v) : v;
    g->integer = integer;
}

static void unknown(tide_doctor_report *r, const char *rule, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void unknown(tide_doctor_report *r, const char *rule, const char *fmt, ...)
{
    va_list ap;
    TIDE_ASSERT(r->nunknown < TIDE_DOCTOR_RULES);
    tide_doctor_unknown *u = &r->unknown[r->nunknown++];
    u->rule = rule;
    va_start(ap, fmt);
    vsnprintf(u->why, sizeof u->why, fmt, ap);
    va_end(ap);
}

static const char *const level_names[] = { "normal", "soft", "high", "critical" };
static const char *const level_effects[] = {
    "nothing shed", "sweeping now, cache targets shrunk", "writes refused",
    "new connections refused, writes refused",
};

static void rule_limit(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "limit";
    char a[32], b[32];
    double now = r->counted >= 0 ? r->counted : r->rss;
    (void)earlier;

    if (r->limit <= 0) {
        tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
        snprintf(f->summary, sizeof f->summary, "unbounded process: no memory limit%s",
                 r->limit < 0 ? " on the page (no tide_memory_limit_bytes: a node from before memory_limit?)" : "");
        snprintf(f->detail, sizeof f->detail, "%s; RSS %s: nothing but the kernel's OOM killer bounds the "
                 "process", r->limit < 0 ? "the page has no tide_memory_limit_bytes"
                                         : "tide_memory_limit_bytes is 0", size_words(r->rss, a, sizeof a));
        snprintf(f->advice, sizeof f->advice, "set --memory-limit SIZE (TIDE_MEMORY_LIMIT, [node] "
                 "memory_limit), or run the node in a cgroup with a memory limit (v2 memory.max, v1 "
                 "memory.limit_in_bytes), which it takes when none is set; budgets not set explicitly "
                 "then derive from it%s", r->limit < 0 ? "; a node from before memory_limit needs an upgrade for it" : "");
        fig(f, "limit_bytes", r->limit, 1);
        fig(f, "rss_bytes", r->rss, 1);
        return;
    }
    if (now < 0) { unknown(r, name, "a limit of %s, but neither counted bytes nor RSS on the page",
                           size_words(r->limit, a, sizeof a)); return; }
    double ratio = now / r->limit;
    int level = r->level >= 0 && r->level <= 3 ? (int)r->level : -1;
    /* The node's own enter marks when the page has them (its --memory-levels),
     * doctor.h's fractions of the limit only when it does not. */
    int marks = r->mark_soft > 0 && r->mark_high > 0;
    double warn_at = marks ? r->mark_soft : TIDE_DOCTOR_LIMIT_WARN * r->limit;
    double bad_at = marks ? r->mark_high : TIDE_DOCTOR_LIMIT_BAD * r->limit;
    tide_doctor_severity sev = level >= 2 || now >= bad_at ? TIDE_DOCTOR_BAD
                             : level == 1 || now >= warn_at ? TIDE_DOCTOR_WARN : TIDE_DOCTOR_OK;
    if (sev == TIDE_DOCTOR_OK) return;
    tide_doctor_finding *f = add_finding(r, name, sev);
    if (level >= 0)
        snprintf(f->summary, sizeof f->summary, "memory at %.0f%% of its %s limit (%s level: %s)", 100 * ratio,
                 size_words(r->limit, a, sizeof a), level_names[level], level_effects[level]);
    else
        snprintf(f->summary, sizeof f->summary, "memory at %.0f%% of its %s limit (the page gives no "
                 "overload level)", 100 * ratio, size_words(r->limit, a, sizeof a));
    snprintf(f->detail, sizeof f->detail, "%s %s counted against a limit of %s; warn from %.0f%% or the soft "
             "level, bad from %.0f%% or the high level (%s)", r->counted >= 0 ? "tide_memory_counted_bytes" : "RSS",
             size_words(now, b, sizeof b), size_words(r->limit, a, sizeof a), 100 * warn_at / r->limit,
             100 * bad_at / r->limit, marks ? "the node's soft and high enter marks, "
             "tide_overload_mark_bytes" : "the page has no tide_overload_mark_bytes: doctor's defaults");
    snprintf(f->advice, sizeof f->advice, "raise --memory-limit (TIDE_MEMORY_LIMIT, [node] memory_limit) "
             "if the machine or the cgroup has the room, or lower what the node holds: --cache-budget, "
             "--key-cache-size, --insert-burst, --http-body-budget, --store-index-lag; the node leaves a "
             "level below its "
             "mark less --memory-hysteresis points (--memory-levels sets the marks), and refused writes "
             "(503, Retry-After: 1) lose nothing acknowledged");
    fig(f, "counted_bytes", now, 1);
    fig(f, "limit_bytes", r->limit, 1);
    fig(f, "ratio", ratio, 0);
    fig(f, "level", r->level, 1);
}

/* The increase of a counter between the scrapes into *v (now less was),
 * and 0; or 1, *v left at now (since start), when the counter went down
 * or the earlier page lacks it: the node restarted between them. */
static int increase(double *v, double was)
{
    if (*v < 0) return 0;
    if (was < 0 || was > *v) return 1;
    *v -= was;
    return 0;
}

/* The words of a counter's window: "in the last N s" with two scrapes,
 * else "since start" (and why, when the node restarted between them). */
static const char *window_words(double s, int reset, char *buf, size_t cap)
{
    if (s > 0 && !reset) snprintf(buf, cap, "in the last %.0f s", s);
    else snprintf(buf, cap, "since start%s", s > 0 ? " (the node restarted between the scrapes)" : "");
    return buf;
}

static void overload_advice(tide_doctor_finding *f, const tide_doctor_report *r, double body, int flapping,
                            int memory)
{
    char a[32];

    /* A full store queue is not the memory's: more room would not help. */
    if (!memory && body <= 0 && !flapping) {
        snprintf(f->advice, sizeof f->advice, "the 503s carry Retry-After: 1, so clients that retry lose "
                 "nothing; the store workers' queue was full: raise --store-workers (threads waiting for "
                 "the disk) or --store-queue, or send less at once; if the disk is the bottleneck, neither "
                 "helps: reduce the load");
        return;
    }
    snprintf(f->advice, sizeof f->advice, "the 503s carry Retry-After: 1, so clients that retry lose "
             "nothing; to refuse fewer, give the node more room (--memory-limit) or hold less "
             "(--cache-budget, --insert-burst)%s%s%s", body > 0 ? "; bodies in flight are bounded by "
             "--http-body-budget (now " : "", body > 0 ? size_words(r->body_budget, a, sizeof a) : "",
             body > 0 ? "; when unset, 10% of the limit): raise it, or send fewer at once" : "");
    /* What the lab saw flap was the soft level halving the caches and the
     * caches refilling (111.7 -> 66.7 MiB within 140 ms): the cure is
     * less cache against the limit; the hysteresis only spaces the turns. */
    if (flapping && strlen(f->advice) + 260 < sizeof f->advice)
        strcat(f->advice, "; a level that comes and goes is most often the soft level halving the caches "
               "and the caches refilling: lower --cache-budget (or leave it unset, derived from the limit) "
               "or raise --memory-limit; only then a wider --memory-hysteresis (default 5 points)");
}

/* Since-start counters from one scrape; their increase with two (the
 * report's interval, set by tide_doctor_analyze_growth). Always WARN: a
 * refusal is an answer, not a loss. */
static void rule_overload(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "overload";
    char w[64];
    double s = earlier != NULL && r->interval > 0 ? r->interval : 0;
    double rq = r->rejected_requests, rw = r->rejected_writes, body = r->body_refused, ch = r->level_changes;
    double q = r->queue_refused > 0 ? r->queue_refused : 0;
    int reset = 0;

    if (rq < 0 && rw < 0 && ch < 0 && body < 0) {
        unknown(r, name, "the page has no tide_overload_rejected_requests_total, "
                "tide_overload_rejected_writes_total, tide_overload_level_changes_total or "
                "tide_http_requests_refused_total (a node from before memory_limit)");
        return;
    }
    if (s > 0) {
        reset |= increase(&rq, earlier->rejected_requests);
        reset |= increase(&rw, earlier->rejected_writes);
        reset |= increase(&body, earlier->body_refused);
        reset |= increase(&ch, earlier->level_changes);
        if (earlier->queue_refused > 0) reset |= increase(&q, earlier->queue_refused);
        if (reset) rq = r->rejected_requests, rw = r->rejected_writes, body = r->body_refused,
                   ch = r->level_changes, q = r->queue_refused > 0 ? r->queue_refused : 0;
    }
    window_words(s, reset, w, sizeof w);
    /* The store queue's refusals are in rejected_requests too; the memory's
     * are the rest. */
    double refused = fmax(rq - q, rw);
    int flapping = ch >= TIDE_DOCTOR_FLAP_CHANGES;
    if (refused <= 0 && body <= 0 && q <= 0 && !flapping) return;
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    if (refused > 0)
        snprintf(f->summary, sizeof f->summary, "%.0f requests refused for memory %s (503)%s", refused, w,
                 flapping ? ", and the level changed often" : "");
    else if (body > 0)
        snprintf(f->summary, sizeof f->summary, "%.0f requests refused at http_body_budget %s (503)%s",
                 body, w, flapping ? ", and the level changed often" : "");
    else if (q > 0 && !flapping)
        snprintf(f->summary, sizeof f->summary, "%.0f requests refused for a full store queue %s (503)", q, w);
    else
        snprintf(f->summary, sizeof f->summary, "the overload level changed %.0f times %s", ch, w);
    snprintf(f->detail, sizeof f->detail, "%s: tide_overload_rejected_requests_total %.0f, "
             "tide_overload_rejected_writes_total %.0f, tide_overload_level_changes_total %.0f, "
             "tide_http_requests_refused_total{reason=\"body_budget\"} %.0f (warn from one refusal, or from %d "
             "changes; never bad: a refusal loses nothing)", w, rq, rw, ch, body, TIDE_DOCTOR_FLAP_CHANGES);
    overload_advice(f, r, body, flapping, refused > 0);
    fig(f, "rejected_requests", rq, 1);
    fig(f, "rejected_writes", rw, 1);
    fig(f, "body_budget_refused", body, 1);
    fig(f, "level_changes", ch, 1);
    fig(f, "seconds", s > 0 && !reset ? s : -1, 0);
}

static void rule_pressure(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "pressure";
    (void)earlier;

    if (r->pressure_some10 < 0 && r->pressure_some60 < 0) {
        unknown(r, name, "the page has no tide_memory_pressure_ratio (a kernel without PSI, or a node "
                "from before memory_limit)");
        return;
    }
    tide_doctor_severity sev = r->pressure_some60 >= TIDE_DOCTOR_PRESSURE_BAD ? TIDE_DOCTOR_BAD
                             : r->pressure_some10 >= TIDE_DOCTOR_PRESSURE_WARN ? TIDE_DOCTOR_WARN : TIDE_DOCTOR_OK;
    if (sev == TIDE_DOCTOR_OK) return;
    tide_doctor_finding *f = add_finding(r, name, sev);
    snprintf(f->summary, sizeof f->summary, "memory pressure: tasks stalled on memory %.0f%% of the last 10 s, "
             "%.0f%% of the last minute", 100 * fmax(r->pressure_some10, 0), 100 * fmax(r->pressure_some60, 0));
    snprintf(f->detail, sizeof f->detail, "PSI some avg10 %.2f, avg60 %.2f (the worse of system and cgroup); "
             "warn from avg10 %.2f, bad from avg60 %.2f", r->pressure_some10, r->pressure_some60,
             TIDE_DOCTOR_PRESSURE_WARN, TIDE_DOCTOR_PRESSURE_BAD);
    snprintf(f->advice, sizeof f->advice, "the kernel is reclaiming to make room: the machine or the "
             "cgroup is short of memory. Give the cgroup more (memory.max), or set --memory-limit below "
             "what it has so the node sheds before the kernel stalls it; --memory-pressure P (default 10) "
             "holds the soft level while avg10 is at least P%%");
    fig(f, "some_avg10", r->pressure_some10, 0);
    fig(f, "some_avg60", r->pressure_some60, 0);
}

/* memory.events counts since the cgroup was made. From one scrape only
 * oom_kill > 0 is BAD (a process was killed: that is never old news to
 * hide); oom and max are WARN, "since the cgroup was made". With two
 * scrapes their increase is judged: oom or oom_kill up, BAD; max up,
 * WARN; an old oom_kill with none since, WARN. */
static void rule_cgroup_events(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "cgroup_events";
    char a[32], w[64];
    double s = earlier != NULL && r->interval > 0 ? r->interval : 0;
    double oom = r->cg_oom, kill = r->cg_oom_kill, max = r->cg_max;
    int reset = 0;

    if (oom < 0 && kill < 0 && max < 0) {
        unknown(r, name, "the page has no tide_cgroup_memory_events_total (not in a memory cgroup, or a "
                "node from before memory_limit)");
        return;
    }
    if (s > 0) {
        reset |= increase(&oom, earlier->cg_oom);
        reset |= increase(&kill, earlier->cg_oom_kill);
        reset |= increase(&max, earlier->cg_max);
        if (reset) oom = r->cg_oom, kill = r->cg_oom_kill, max = r->cg_max;
    }
    if (s > 0 && !reset) snprintf(w, sizeof w, "in the last %.0f s", s);
    else snprintf(w, sizeof w, "since the cgroup was made");
    int windowed = s > 0 && !reset, old_kill = windowed && kill <= 0 && r->cg_oom_kill > 0;
    tide_doctor_severity sev = kill > 0 || (windowed && oom > 0) ? TIDE_DOCTOR_BAD
                             : oom > 0 || max > 0 || old_kill ? TIDE_DOCTOR_WARN : TIDE_DOCTOR_OK;
    if (sev == TIDE_DOCTOR_OK) return;
    tide_doctor_finding *f = add_finding(r, name, sev);
    if (old_kill)
        snprintf(f->summary, sizeof f->summary, "%.0f processes OOM-killed since the cgroup was made, none "
                 "%s", r->cg_oom_kill, w);
    else if (kill > 0 || oom > 0)
        snprintf(f->summary, sizeof f->summary, "the cgroup hit its limit %s: %.0f OOM events, %.0f processes "
                 "OOM-killed", w, fmax(oom, 0), fmax(kill, 0));
    else
        snprintf(f->summary, sizeof f->summary, "the cgroup reached its limit %.0f times %s (memory.events "
                 "max)", max, w);
    snprintf(f->detail, sizeof f->detail, "tide_cgroup_memory_events_total %s: oom %.0f, oom_kill %.0f, max "
             "%.0f; since the cgroup was made: oom %.0f, oom_kill %.0f, max %.0f, high %.0f; the cgroup's "
             "limit %s", w, oom, kill, max, r->cg_oom, r->cg_oom_kill, r->cg_max, r->cg_high,
             size_words(r->cg_limit, a, sizeof a));
    snprintf(f->advice, sizeof f->advice, "the kernel, not the node, enforced the limit: leave "
             "--memory-limit unset so the node takes the cgroup's, or set it well below (other "
             "processes and page cache in the group count there too); raise memory.max if the load "
             "needs it.%s", windowed ? "" : " The counts are since the cgroup was made: run with --interval S "
             "to judge what happens now");
    fig(f, "oom", oom, 1);
    fig(f, "oom_kill", kill, 1);
    fig(f, "max", max, 1);
    fig(f, "cgroup_limit_bytes", r->cg_limit, 1);
    fig(f, "seconds", windowed ? s : -1, 0);
}

static const char *allocator_advice(const tide_doctor_report *r)
{
    if (strcmp(r->allocator, "jemalloc") == 0)
        return "a sweep trims (POST /v1/admin/sweep with the admin token does one now; a shorter "
               "--sweep-interval, --trim-policy always); jemalloc returns dirty pages on its own "
               "schedule: MALLOC_CONF=dirty_decay_ms:1000,muzzy_decay_ms:1000 shortens it";
    return "a sweep trims (POST /v1/admin/sweep with the admin token does one now; a shorter "
           "--sweep-interval, --trim-policy always); under glibc --arena-max 2 (TIDE_ARENA_MAX) "
           "bounds the arenas that keep freed memory, and --mmap-threshold SIZE sends large values "
           "to mmap, returned on free; docs/GHOST.md explains the rest";
}

/* The allocator rules' finding for `v` against warn and bad, or NULL when
 * below warn or the process is too small to judge (code and libraries
 * are most of a small process's RSS): under TIDE_DOCTOR_SMALL_RSS_MIB, or
 * under TIDE_DOCTOR_SMALL_LIMIT_SHARE of the limit when that is less (a
 * node limited to 64 MiB is judged at 16 MiB). */
/* The process's own memory: the RSS less its file-backed pages (the
 * binary, libraries, nudb.key's read-only map: page cache the allocator
 * never held and the kernel reclaims), at most all of RssFile; the whole
 * RSS when the page does not say RssFile. *anon says which. Never less a
 * figure of the key file's page-cache residency, which can be the whole
 * file whoever read it. */
/* What process_rss computes when the page says RssFile, in the findings'
 * words: not "of RSS", since it leaves the file-backed pages out. */
#define ANON_RSS "anonymous RSS (RSS less file-backed)"
/* The rules table's: a rule's base depends on the page it judges. */
#define ANON_RSS_RULE "anonymous RSS (RSS less file-backed; the whole RSS when the page has no " \
    "tide_process_rss_file_bytes)"

static double process_rss(const tide_doctor_report *r, int *anon)
{
    int a = r->rss_file > 0 && r->rss_file < r->rss;
    if (anon) *anon = a;
    return a ? r->rss - r->rss_file : r->rss;
}

static tide_doctor_finding *graded(tide_doctor_report *r, const char *name, double v, double warn, double bad)
{
    double small = TIDE_DOCTOR_SMALL_RSS_MIB * MIB;
    if (r->limit > 0 && TIDE_DOCTOR_SMALL_LIMIT_SHARE * r->limit < small) small = TIDE_DOCTOR_SMALL_LIMIT_SHARE * r->limit;
    if (process_rss(r, NULL) < small || v < warn) return NULL;
    return add_finding(r, name, v >= bad ? TIDE_DOCTOR_BAD : TIDE_DOCTOR_WARN);
}

static void rule_rss_vs_live(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "rss_vs_live";
    char a[32], b[32];
    (void)earlier;

    if (r->rss < 0 || r->live <= 0) {
        unknown(r, name, "the page does not say %s", r->rss < 0 ? "the RSS" : "the allocator's live bytes");
        return;
    }
    int anon;
    double rss = process_rss(r, &anon);
    double ratio = rss / r->live;
    char alloc[sizeof r->allocator];
    memcpy(alloc, r->allocator, sizeof alloc);   /* not from inside the object written */
    tide_doctor_finding *f = graded(r, name, ratio, TIDE_DOCTOR_RSS_LIVE_WARN, TIDE_DOCTOR_RSS_LIVE_BAD);
    if (f == NULL) return;
    snprintf(f->summary, sizeof f->summary, "%s is %.1f times what the allocator says is live (%s against %s)",
             anon ? ANON_RSS : "RSS", ratio, size_words(rss, a, sizeof a), size_words(r->live, b, sizeof b));
    snprintf(f->detail, sizeof f->detail, "%s / live bytes (%s) = %.2f; warn from "
             "%.1f, bad from %.1f, judged from %d MiB of %s or a quarter of the limit",
             anon ? "(process_resident_memory_bytes - tide_process_rss_file_bytes)" : "process_resident_memory_bytes",
             alloc, ratio, TIDE_DOCTOR_RSS_LIVE_WARN, TIDE_DOCTOR_RSS_LIVE_BAD, TIDE_DOCTOR_SMALL_RSS_MIB,
             anon ? "anonymous RSS" : "RSS");
    snprintf(f->advice, sizeof f->advice, "memory freed but kept, or fragmented: %s", allocator_advice(r));
    fig(f, "rss_bytes", r->rss, 1);
    if (anon) fig(f, "rss_file_bytes", r->rss_file, 1);
    fig(f, "live_bytes", r->live, 1);
    fig(f, "ratio", ratio, 0);
}

static void rule_allocator_free(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "allocator_free";
    char a[32], b[32];
    (void)earlier;

    if (r->rss <= 0 || r->allocator_free < 0) {
        unknown(r, name, "the page does not say %s", r->rss <= 0 ? "the RSS" : "what the allocator holds free "
                "(tide_allocator_free_bytes)");
        return;
    }
    /* Free heap is anonymous memory: its share of the anonymous part, not
     * of an RSS nudb.key's map can fill with page cache. */
    int anon;
    double rss = process_rss(r, &anon);
    double share = r->allocator_free / rss;
    tide_doctor_finding *f = graded(r, name, share, TIDE_DOCTOR_FREE_WARN, TIDE_DOCTOR_FREE_BAD);
    if (f == NULL) return;
    snprintf(f->summary, sizeof f->summary, "the allocator holds %s free, %.0f%% of %s",
             size_words(r->allocator_free, a, sizeof a), 100 * share, anon ? ANON_RSS : "RSS");
    snprintf(f->detail, sizeof f->detail, "tide_allocator_free_bytes %s / %s %s = %.2f; warn from %.2f, bad "
             "from %.2f, judged from %d MiB of %s or a quarter of the limit", a,
             anon ? "(process_resident_memory_bytes - tide_process_rss_file_bytes)" : "RSS",
             size_words(rss, b, sizeof b), share, TIDE_DOCTOR_FREE_WARN, TIDE_DOCTOR_FREE_BAD, TIDE_DOCTOR_SMALL_RSS_MIB,
             anon ? "anonymous RSS" : "RSS");
    snprintf(f->advice, sizeof f->advice, "a trim could return up to that much: %s", allocator_advice(r));
    fig(f, "allocator_free_bytes", r->allocator_free, 1);
    fig(f, "rss_bytes", r->rss, 1);
    if (anon) fig(f, "rss_file_bytes", r->rss_file, 1);
    fig(f, "share", share, 0);
}

/* The caches' arenas (summed) hold resident what the sweeps should have
 * given back: after a sweep's evacuation and release it is at most 100/90 of its
 * live bytes plus the open segment, the one open when the sweep began and
 * the reserve (cache.c), so resident
 * well above that means the evacuation budget is too small for the churn,
 * or readers hold moved objects (their segments wait for them). */
static void rule_arena(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "arena";
    char a[32], b[32];
    double slack = TIDE_DOCTOR_ARENA_SLACK_MIB * MIB, ratio;
    tide_doctor_finding *f;
    (void)earlier;

    if (r->arena_resident < 0 || r->arena_live < 0) {
        unknown(r, name, "the page has no tide_cache_arena_resident_bytes (cache_arena=off, or a node from "
                "before the arena)");
        return;
    }
    ratio = r->arena_live > 0 ? r->arena_resident / r->arena_live : 0;
    if (r->arena_resident < TIDE_DOCTOR_SMALL_RSS_MIB * MIB || r->arena_resident - r->arena_live <= slack ||
        (r->arena_live > 0 && ratio < TIDE_DOCTOR_ARENA_WARN))
        return;
    f = add_finding(r, name, r->arena_live <= 0 || ratio >= TIDE_DOCTOR_ARENA_BAD ? TIDE_DOCTOR_BAD
                                                                                   : TIDE_DOCTOR_WARN);
    if (r->arena_live > 0)
        snprintf(f->summary, sizeof f->summary, "the caches' arenas keep %s resident for %s live, %.1f times",
                 size_words(r->arena_resident, a, sizeof a), size_words(r->arena_live, b, sizeof b), ratio);
    else
        snprintf(f->summary, sizeof f->summary, "the caches' arenas keep %s resident with nothing live",
                 size_words(r->arena_resident, a, sizeof a));
    snprintf(f->detail, sizeof f->detail, "tide_cache_arena_resident_bytes / tide_cache_arena_live_bytes = %.2f; "
             "warn from %.1f, bad from %.1f, judged from %d MiB resident and more than %d MiB above live (after a "
             "sweep it is at most 1.11 times live plus two segments and the reserve)", ratio,
             TIDE_DOCTOR_ARENA_WARN, TIDE_DOCTOR_ARENA_BAD, TIDE_DOCTOR_SMALL_RSS_MIB, TIDE_DOCTOR_ARENA_SLACK_MIB);
    snprintf(f->advice, sizeof f->advice, "raise --cache-arena-evacuate (the bytes a sweep may copy) or shorten "
             "--sweep-interval; a client slow to read its responses holds moved objects, and their segments, "
             "until it is done (GET /v1/sweeps: arena.kept_objects)");
    fig(f, "arena_resident_bytes", r->arena_resident, 1);
    fig(f, "arena_live_bytes", r->arena_live, 1);
    fig(f, "ratio", ratio, 0);
    if (r->arena_evacuated >= 0) fig(f, "arena_evacuated_bytes", r->arena_evacuated, 1);
}

static void rule_peak(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "peak";
    char a[32], b[32], c[32];
    double now = r->counted >= 0 ? r->counted : r->rss;
    (void)earlier;

    if (r->peak_start < 0 || now <= 0) {
        unknown(r, name, "the page has no tide_memory_peak_bytes{since=\"start\"} (a node from before "
                "memory_limit)");
        return;
    }
    double ratio = r->peak_start / now, of_limit = r->limit > 0 ? r->peak_start / r->limit : -1;
    if (ratio < TIDE_DOCTOR_PEAK_WARN && of_limit < TIDE_DOCTOR_LIMIT_BAD) return;
    /* The sweep's peak below the start's: the spike came before the last
     * sweep, whose trim gave it back; at it: it came since, not yet trimmed. */
    int before_sweep = r->peak_sweep >= 0 && r->peak_sweep < r->peak_start;
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    if (ratio >= TIDE_DOCTOR_PEAK_WARN)
        snprintf(f->summary, sizeof f->summary, "a spike: memory peaked at %s, %.1f times the %s now",
                 size_words(r->peak_start, a, sizeof a), ratio, size_words(now, b, sizeof b));
    else
        snprintf(f->summary, sizeof f->summary, "memory peaked at %.0f%% of its %s limit", 100 * of_limit,
                 size_words(r->limit, a, sizeof a));
    snprintf(f->detail, sizeof f->detail, "tide_memory_peak_bytes since start %s, since the last sweep %s, "
             "counted now %s (warn from %.1f times now, or %.0f%% of the limit): %s%s",
             size_words(r->peak_start, a, sizeof a), size_words(r->peak_sweep, c, sizeof c),
             size_words(now, b, sizeof b), TIDE_DOCTOR_PEAK_WARN, 100 * TIDE_DOCTOR_LIMIT_BAD,
             before_sweep ? "it came before the last sweep, and the memory was given back since"
             : r->peak_sweep < 0 ? "when it came is not on the page"
             : "it came since the last sweep, whose trim has not run on it yet",
             r->limit > 0 ? "" : "; no limit held it");
    snprintf(f->advice, sizeof f->advice, "size --memory-limit (and the cgroup) for the peak, not for now; "
             "rate(tide_memory_allocated_bytes_total[5m]) by consumer shows which consumer churned; large "
             "bodies are bounded by --http-body-budget and --max-object-size, insert bursts by "
             "--insert-burst");
    fig(f, "peak_start_bytes", r->peak_start, 1);
    fig(f, "peak_sweep_bytes", r->peak_sweep, 1);
    fig(f, "now_bytes", now, 1);
    fig(f, "ratio", ratio, 0);
    fig(f, "limit_bytes", r->limit, 1);
    fig(f, "of_limit", of_limit, 0);
}

static void rule_unbounded(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "unbounded_consumers";
    (void)earlier;

    /* "process" (no memory limit) is the limit rule's, not told twice. */
    size_t k = 0;
    for (size_t i = 0; i < r->nunbounded; i++) k += strcmp(r->unbounded[i].consumer, "process") != 0;
    if (k == 0) return;
    char summary[sizeof r->findings[0].summary], advice[sizeof r->findings[0].advice];
    size_t n = 0, m = 0, j = 0;
    n += (size_t)snprintf(summary, sizeof summary, "%zu consumer%s unbounded:", k, k == 1 ? "" : "s");
    for (size_t i = 0; i < r->nunbounded && n < sizeof summary && m < sizeof advice; i++) {
        const tide_doctor_unbounded *u = &r->unbounded[i];
        if (strcmp(u->consumer, "process") == 0) continue;
        n += (size_t)snprintf(summary + n, sizeof summary - n, "%s %s", j ? "," : "", u->consumer);
        m += (size_t)snprintf(advice + m, sizeof advice - m, "%s%s: %s", j ? "; " : "", u->consumer, u->setting);
        j++;
    }
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    memcpy(f->summary, summary, sizeof summary);
    memcpy(f->advice, advice, sizeof advice);
    snprintf(f->detail, sizeof f->detail, "tide_unbounded_consumer is 1 for each: nothing stops it growing "
             "but the process limit");
    fig(f, "unbounded", (double)k, 1);
}

/* The consumer of `earlier` named `name`, or NULL. */
static const tide_doctor_consumer *consumer_in(const tide_doctor_report *r, const char *name)
{
    for (size_t i = 0; i < r->nconsumers; i++)
        if (strcmp(r->consumers[i].name, name) == 0) return &r->consumers[i];
    return NULL;
}

static void rule_growth(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "growth";
    const tide_doctor_consumer *top = NULL, *was = NULL;
    double best = 0, s = r->interval;
    size_t growing = 0, common = 0;
    char a[32], b[32], c[32], d[32], e2[32];

    if (earlier == NULL || s <= 0) {
        unknown(r, name, "needs two scrapes: run with --interval SECONDS");
        return;
    }
    for (size_t i = 0; i < r->nconsumers; i++) {
        const tide_doctor_consumer *k = &r->consumers[i], *e = consumer_in(earlier, k->name);
        if (e == NULL) continue;
        common++;
        if ((k->allocations >= 0 && e->allocations > k->allocations) ||
            (k->allocated >= 0 && e->allocated > k->allocated)) {
            unknown(r, name, "%s's churn counters went down between the scrapes: the node restarted",
                    k->name);
            return;
        }
        double grew = k->bytes - e->bytes;
        if (grew < TIDE_DOCTOR_GROWTH_MIN_MIB * MIB || grew < TIDE_DOCTOR_GROWTH_SHARE * e->bytes) continue;
        growing++;
        if (grew > best) best = grew, top = k, was = e;
    }
    if (common == 0) { unknown(r, name, "no consumer is on both pages"); return; }
    if (top == NULL) return;
    /* The commit's buffers, the insert pool and request bodies rise and
     * fall with each commit and request: two readings of them are two
     * moments, not a trend, so no time to the limit is projected from them
     * and they are never BAD (a persistent rise shows on the other
     * consumers it feeds, or as peak and limit findings). */
    int transient = strcmp(top->name, "store_commit") == 0 || strcmp(top->name, "store_insert_pool") == 0 ||
                    strcmp(top->name, "http") == 0;
    double rate = best / s, room = r->limit > 0 && r->counted >= 0 ? r->limit - r->counted : -1;
    double eta = room >= 0 && !transient ? room / rate : -1;
    /* A bounded consumer stops at its most: the node cache's hard limit is
     * twice its budget (tide_node_opts; the governor only lowers it), the
     * others' budget is their most. When that is nearer than the limit, the
     * consumer alone cannot reach the limit, so no time is projected (a
     * real node's page: node_cache 24.9 MiB of its 25.6 MiB hard limit was
     * "reaching the 64 MiB limit in 14 s"). */
    double most = top->budget > 0 ? (strcmp(top->name, "node_cache") == 0 ? 2 * top->budget : top->budget) : -1;
    double left = most >= 0 ? (most > top->bytes ? most - top->bytes : 0) : -1;
    int capped = eta >= 0 && left >= 0 && left < room;
    if (capped) eta = -1;
    int bad = !transient && (top->budget == 0 || (eta >= 0 && eta <= TIDE_DOCTOR_GROWTH_BAD_S));
    tide_doctor_finding *f = add_finding(r, name, bad ? TIDE_DOCTOR_BAD : TIDE_DOCTOR_WARN);
    snprintf(f->summary, sizeof f->summary, "%s grew %s in %.0f s (%s/s)%s%s", top->name,
             size_words(best, a, sizeof a), s, size_words(rate, b, sizeof b), transient ? ", transient" : "",
             growing > 1 ? ", and others too" : "");
    int n = snprintf(f->detail, sizeof f->detail, "tide_memory_consumer_bytes{consumer=\"%s\"} %s, then %s "
                     "%.0f s later (%zu consumer%s grew by at least %d MiB and %.0f%%)", top->name,
                     size_words(was->bytes, a, sizeof a), size_words(top->bytes, b, sizeof b), s, growing,
                     growing == 1 ? "" : "s", TIDE_DOCTOR_GROWTH_MIN_MIB, 100 * TIDE_DOCTOR_GROWTH_SHARE);
    if (n > 0 && (size_t)n < sizeof f->detail) {
        if (transient)
            snprintf(f->detail + n, sizeof f->detail - (size_t)n, "; %s is transient, it rises and falls with "
                     "each commit or request, so no time to the limit is projected from it", top->name);
        else if (eta >= 0)
            snprintf(f->detail + n, sizeof f->detail - (size_t)n, "; at that rate it reaches the %s limit in "
                     "%.0f s", size_words(r->limit, c, sizeof c), eta);
        else if (capped)
            snprintf(f->detail + n, sizeof f->detail - (size_t)n, "; it can grow %s more at most (to %s, %s), "
                     "less than the %s left under the limit, so it alone cannot reach the limit",
                     size_words(left, c, sizeof c), size_words(most, d, sizeof d),
                     strcmp(top->name, "node_cache") == 0 ? "its hard limit, twice its budget" : "its budget",
                     size_words(room, e2, sizeof e2));
    }
    snprintf(f->advice, sizeof f->advice, "%s%s; scrape again to see whether it levels off at its budget "
             "(rate(tide_memory_consumer_bytes[5m]) on a dashboard), and rate("
             "tide_memory_allocated_bytes_total[5m]) for what it churns", transient ? "a transient consumer: "
             "two readings are two moments, not a trend; if it is high on every scrape, " : "", top->budget == 0
             ? "it is unbounded: bound it (tide doctor's unbounded_consumers finding names the setting)"
             : "bound it lower (--cache-budget for node_cache, --key-cache-size for key_cache, "
               "--insert-burst for the insert pool, --http-body-budget for http, --store-index-lag for "
               "store_tail_index) or give the node more "
               "--memory-limit");
    fig(f, "grown_bytes", best, 1);
    fig(f, "seconds", s, 0);
    fig(f, "bytes_per_second", rate, 0);
    fig(f, "bytes", top->bytes, 1);
    if (top->allocations >= 0 && was->allocations >= 0)
        fig(f, "allocations_per_second", (top->allocations - was->allocations) / s, 0);
    if (top->allocated >= 0 && was->allocated >= 0)
        fig(f, "allocated_bytes_per_second", (top->allocated - was->allocated) / s, 0);
    fig(f, "seconds_to_limit", eta, 0);
}

/* ---- the archive's rules (judged only on a page with its families) -------------- */

/* "pool P, prefix X (primary)", "?" for what the page does not say; at
 * most 159 bytes (buffers of 160). */
static const char *archive_where(const tide_doctor_archive *a, char *buf, size_t cap)
{
    snprintf(buf, cap, "pool %.60s, prefix %.64s (%s)", a->pool[0] ? a->pool : "?", a->prefix[0] ? a->prefix : "?",
             a->mode[0] ? a->mode : "mode not said");
    return buf;
}

static int archive_replica(const tide_doctor_archive *a) { return strcmp(a->mode, "replica") == 0; }

/* A count in words: "3", or "unknown" when the page lacks it. */
static const char *count_words(double v, char *buf, size_t cap)
{
    if (v < 0) snprintf(buf, cap, "unknown");
    else snprintf(buf, cap, "%.0f", v);
    return buf;
}

/* Another writer changed the manifest, or it holds another store's
 * generation: the node stopped uploading, and a restart is the only way
 * on (the archiver never clears its conflict). */
static void rule_archive_conflict(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "archive_conflict";
    const tide_doctor_archive *a = &r->archive;
    char w[160], b[32];
    (void)earlier;

    if (a->conflict < 0) {
        unknown(r, name, "the page has the archive's families but no tide_archive_conflict");
        return;
    }
    if (a->conflict < 1) return;
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_BAD);
    snprintf(f->summary, sizeof f->summary, "the archive's prefix %s is another writer's: this node has "
             "stopped uploading", a->prefix[0] ? a->prefix : "?");
    snprintf(f->detail, sizeof f->detail, "tide_archive_conflict 1 (%s): another node changed the prefix's "
             "manifest, or it lists a generation of another store under an id of this node's; the lag (%s) "
             "grows, and rotations wait for seals that will not come", archive_where(a, w, sizeof w),
             size_words(a->lag_bytes, b, sizeof b));
    snprintf(f->advice, sizeof f->advice, "give each primary its own --archive-prefix (TIDE_ARCHIVE_PREFIX, "
             "[archive] archive_prefix) and restart this node: uploads resume only after a restart; a node "
             "meant to serve another's archive runs --archive-mode replica. If this data directory is the "
             "prefix's own (a node rebuilt on an empty disk under its old prefix), rebuild it from the "
             "archive (tide archive restore) instead of starting it empty. The node's log has the ERROR "
             "line saying which of the two it met");
    fig(f, "conflict", a->conflict, 1);
    fig(f, "lag_bytes", a->lag_bytes, 1);
    fig(f, "sealed_generations", a->sealed_generations, 1);
}

/* The cluster does not answer: what goes on, what waits, what fails. */
static void rule_archive_up(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "archive_up";
    const tide_doctor_archive *a = &r->archive;
    char w[160], b[32];
    (void)earlier;

    if (a->up < 0) {
        unknown(r, name, "the page has the archive's families but no tide_archive_up");
        return;
    }
    if (a->up >= 1) return;
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_BAD);
    snprintf(f->summary, sizeof f->summary, "the archive's cluster does not answer (%s)",
             archive_where(a, w, sizeof w));
    snprintf(f->detail, sizeof f->detail, "tide_archive_up 0: the node is not connected, or its last call to "
             "RADOS failed; failed calls since start: connect %.0f, write %.0f, read %.0f, manifest %.0f, "
             "delete %.0f; reads that failed %.0f; lag %s", fmax(a->errors_connect, 0), fmax(a->errors_write, 0),
             fmax(a->errors_read, 0), fmax(a->errors_manifest, 0), fmax(a->errors_delete, 0),
             fmax(a->reads_failed, 0), size_words(a->lag_bytes, b, sizeof b));
    if (archive_replica(a))
        snprintf(f->advice, sizeof f->advice, "a replica takes no writes and reads through the archive: "
                 "every object not in its node cache answers 503 archive_unavailable (with Retry-After) "
                 "until the cluster answers. Check the cluster (ceph -s; the monitors of --archive-conf, "
                 "the pool --archive-pool, the key of --archive-user) and the network to it; the node "
                 "reconnects by itself, no restart needed; GET /v1/status' archive.problem has the last "
                 "failure");
    else
        snprintf(f->advice, sizeof f->advice, "the node goes on without it: writes commit locally and "
                 "tide_archive_lag_bytes grows; a rotation that would drop a generation the archive has not "
                 "sealed waits, so the disk grows past online_delete's bound; reads of objects only the "
                 "archive holds, and with archive_sync=archive every PUT ?sync=1, answer 503 "
                 "archive_unavailable with Retry-After. Check the cluster (ceph -s; the monitors of "
                 "--archive-conf, the pool --archive-pool, the key of --archive-user) and the network to "
                 "it; the node reconnects by itself and catches up, no restart needed; GET /v1/status' "
                 "archive.problem has the last failure");
    fig(f, "up", a->up, 1);
    fig(f, "lag_bytes", a->lag_bytes, 1);
    fig(f, "errors_connect", a->errors_connect, 1);
    fig(f, "errors_write", a->errors_write, 1);
    fig(f, "errors_read", a->errors_read, 1);
    fig(f, "errors_manifest", a->errors_manifest, 1);
    fig(f, "reads_failed", a->reads_failed, 1);
}

static void rule_archive_lag(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "archive_lag";
    const tide_doctor_archive *a = &r->archive;
    double warn = TIDE_DOCTOR_ARCHIVE_LAG_WARN_MIB * MIB;
    char b[32];
    (void)earlier;

    if (a->lag_bytes < 0) {
        unknown(r, name, "the page has the archive's families but no tide_archive_lag_bytes");
        return;
    }
    if (a->lag_bytes < warn) return;
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    snprintf(f->summary, sizeof f->summary, "the archive is %s behind this node",
             size_words(a->lag_bytes, b, sizeof b));
    snprintf(f->detail, sizeof f->detail, "tide_archive_lag_bytes %.0f: durable bytes of the local "
             "generations' nudb.dat not yet in RADOS, and the key files of generations waiting to be "
             "sealed; warn from %d MiB; the cluster %s", a->lag_bytes, TIDE_DOCTOR_ARCHIVE_LAG_WARN_MIB,
             a->up >= 1 ? "answers, so it is slower than the writes" : a->up == 0 ? "does not answer "
             "(archive_up)" : "may or may not answer (no tide_archive_up)");
    snprintf(f->advice, sizeof f->advice, "with archive_sync=local a PUT ?sync=1 is acknowledged before "
             "its bytes reach RADOS: losing this machine now loses up to that much of what the archive "
             "would have held (archive_sync=archive makes each sync wait for them). When the cluster "
             "answers but trails the writes, give the upload more: --archive-inflight (writes in flight), "
             "a faster pool, or fewer writes; rate(tide_archive_uploaded_bytes_total[5m]) against the "
             "write rate shows whether it catches up");
    fig(f, "lag_bytes", a->lag_bytes, 1);
    fig(f, "warn_bytes", warn, 1);
    fig(f, "up", a->up, 1);
}

/* A since-start counter of the archive, or its increase between two
 * scrapes; *reset when the node restarted between them. */
static double archive_counter(const tide_doctor_report *r, const tide_doctor_report *earlier, double now,
                              double was, int *reset)
{
    double v = now;

    *reset = 0;
    if (earlier != NULL && r->interval > 0) {
        *reset = increase(&v, was);
        if (*reset) v = now;
    }
    return v;
}

static void rule_archive_rotation_waits(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "archive_rotation_waits";
    const tide_doctor_archive *a = &r->archive;
    double s = earlier != NULL && r->interval > 0 ? r->interval : 0;
    char win[80], b[32], n[32];
    int reset;

    if (a->rotation_waits < 0) {
        unknown(r, name, "the page has the archive's families but no tide_archive_rotation_waits_total");
        return;
    }
    double waits = archive_counter(r, earlier, a->rotation_waits, earlier ? earlier->archive.rotation_waits : -1,
                                   &reset);
    if (waits <= 0) return;
    window_words(s, reset, win, sizeof win);
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    snprintf(f->summary, sizeof f->summary, "rotations waited for the archive %s (%.0f looks found a "
             "generation to drop not yet sealed)", win, waits);
    snprintf(f->detail, sizeof f->detail, "tide_archive_rotation_waits_total %.0f %s: the rotation's health "
             "gate found a generation it would drop that the archive has not sealed; %s sealed generations "
             "in the archive, lag %s (warn from one wait: a generation sealed in time is never waited for)",
             waits, win, count_words(a->sealed_generations, n, sizeof n), size_words(a->lag_bytes, b, sizeof b));
    snprintf(f->advice, sizeof f->advice, "a generation is dropped only once the archive holds it sealed, so "
             "while a rotation waits the disk holds a generation more than online_delete bounds "
             "(tide_disk_bytes); a seal needs the cluster (archive_up), the generation's data all uploaded "
             "(archive_lag) and a sync after its last day as the newest. GET /v1/rotations gives each "
             "attempt's reason; after rotation_wait_max_seconds an attempt is abandoned and the next tries "
             "again.%s", s > 0 && !reset ? "" : " The count is since start: run with --interval S to "
             "see whether rotations wait now");
    fig(f, "waits", waits, 1);
    fig(f, "sealed_generations", a->sealed_generations, 1);
    fig(f, "lag_bytes", a->lag_bytes, 1);
    fig(f, "seconds", s > 0 && !reset ? s : -1, 0);
}

static void rule_archive_sync_failures(tide_doctor_report *r, const tide_doctor_report *earlier)
{
    static const char name[] = "archive_sync_failures";
    const tide_doctor_archive *a = &r->archive;
    double s = earlier != NULL && r->interval > 0 ? r->interval : 0;
    char win[80];
    int reset, reset2;

    if (a->sync_failures < 0) {
        unknown(r, name, "the page has the archive's families but no tide_archive_sync_failures_total");
        return;
    }
    double failed = archive_counter(r, earlier, a->sync_failures, earlier ? earlier->archive.sync_failures : -1,
                                    &reset);
    double waited = archive_counter(r, earlier, a->sync_waits, earlier ? earlier->archive.sync_waits : -1,
                                    &reset2);
    if (reset || reset2) failed = a->sync_failures, waited = a->sync_waits, reset = 1;   /* a restart */
    if (failed <= 0) return;
    window_words(s, reset, win, sizeof win);
    tide_doctor_finding *f = add_finding(r, name, TIDE_DOCTOR_WARN);
    snprintf(f->summary, sizeof f->summary, "%.0f syncs the archive did not take within archive_timeout %s "
             "(503 archive_unavailable)", failed, win);
    snprintf(f->detail, sizeof f->detail, "tide_archive_sync_failures_total %.0f of tide_archive_sync_waits_total "
             "%.0f %s: PUT ?sync=1 batches under archive_sync=archive that RADOS did not acknowledge in time; "
             "each was answered 503 archive_unavailable with Retry-After, its writes durable on this node "
             "(warn from one)", failed, fmax(waited, 0), win);
    snprintf(f->advice, sizeof f->advice, "clients that retry lose nothing. When the cluster does not answer, "
             "see archive_up; when it answers slowly, raise --archive-timeout (the longest one wait, "
             "default 10 s) or --archive-inflight, or run archive_sync=local, which answers after the local "
             "commit and lets the archive follow (tide_archive_lag_bytes says how far behind)%s",
             s > 0 && !reset ? "" : ". The count is since start: run with --interval S to see whether syncs "
             "fail now");
    fig(f, "sync_failures", failed, 1);
    fig(f, "sync_waits", waited, 1);
    fig(f, "seconds", s > 0 && !reset ? s : -1, 0);
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct rule {
    tide_doctor_rule doc;
    void (*check)(tide_doctor_report *r, const tide_doctor_report *earlier);
    int archive;    /* 1: judged only on a page with the archive's families */
} rule;

/* In the order a tie in severity is listed. The threshold words are
 * built from doctor.h's constants, so --help and the code cannot differ
 * (test_doctor checks --help names each). */
static const rule rules[] = {
    { { "limit", "tide_memory_counted_bytes, tide_memory_limit_bytes, tide_overload_level, "
        "tide_overload_mark_bytes{edge=\"enter\"}",
        "bad from the high enter mark (tide_overload_mark_bytes) or the high level; warn from the soft "
        "enter mark or the soft level; without marks on the page " STR(TIDE_DOCTOR_LIMIT_BAD) " and "
        STR(TIDE_DOCTOR_LIMIT_WARN) " of the limit; no limit (0 or absent): warn, unbounded process",
        "--memory-limit, or lower --cache-budget, --key-cache-size, --insert-burst, --http-body-budget, "
        "--store-index-lag" },
      rule_limit, 0 },
    { { "cgroup_events", "tide_cgroup_memory_events_total{event=oom|oom_kill|max|high}",
        "bad when oom or oom_kill > 0; warn when max > 0",
        "leave --memory-limit to the cgroup's or below it; raise memory.max" }, rule_cgroup_events, 0 },
    { { "pressure", "tide_memory_pressure_ratio{kind=\"some\",window=\"10s|60s\"}",
        "bad from avg60 " STR(TIDE_DOCTOR_PRESSURE_BAD) "; warn from avg10 " STR(TIDE_DOCTOR_PRESSURE_WARN),
        "more memory for the cgroup, --memory-limit below it, --memory-pressure" }, rule_pressure, 0 },
    { { "overload", "tide_overload_rejected_requests_total, tide_overload_rejected_writes_total, "
        "tide_overload_level_changes_total, tide_http_requests_refused_total{reason=\"body_budget\"}",
        "warn from one refused request, or from " STR(TIDE_DOCTOR_FLAP_CHANGES) " level changes",
        "--memory-limit, less held, --http-body-budget, --memory-hysteresis" }, rule_overload, 0 },
    { { "growth", "tide_memory_consumer_bytes on two pages, tide_memory_allocations_total, "
        "tide_memory_allocated_bytes_total",
        "warn when a consumer grew by " STR(TIDE_DOCTOR_GROWTH_MIN_MIB) " MiB and "
        STR(TIDE_DOCTOR_GROWTH_SHARE) " of its bytes; bad when unbounded or at the limit within "
        STR(TIDE_DOCTOR_GROWTH_BAD_S) " s, except store_commit, store_insert_pool and http: transient, "
        "warn, no time to the limit", "bound the consumer, or more --memory-limit" }, rule_growth, 0 },
    { { "rss_vs_live", "process_resident_memory_bytes, the allocator's live bytes",
        "bad from " STR(TIDE_DOCTOR_RSS_LIVE_BAD) " times; warn from " STR(TIDE_DOCTOR_RSS_LIVE_WARN)
        " times; not judged below " STR(TIDE_DOCTOR_SMALL_RSS_MIB) " MiB of " ANON_RSS_RULE " (or "
        STR(TIDE_DOCTOR_SMALL_LIMIT_SHARE) " of the limit when less)",
        "a sweep's trim, --arena-max, --mmap-threshold, MALLOC_CONF decay" }, rule_rss_vs_live, 0 },
    { { "allocator_free", "tide_allocator_free_bytes, process_resident_memory_bytes",
        "bad from " STR(TIDE_DOCTOR_FREE_BAD) " of " ANON_RSS_RULE "; warn from " STR(TIDE_DOCTOR_FREE_WARN)
        "; not judged below " STR(TIDE_DOCTOR_SMALL_RSS_MIB) " MiB of it (or "
        STR(TIDE_DOCTOR_SMALL_LIMIT_SHARE) " of the limit when less)",
        "POST /v1/admin/sweep, --sweep-interval, --trim-policy, --arena-max" }, rule_allocator_free, 0 },
    { { "arena", "tide_cache_arena_resident_bytes, tide_cache_arena_live_bytes",
        "bad from " STR(TIDE_DOCTOR_ARENA_BAD) " times; warn from " STR(TIDE_DOCTOR_ARENA_WARN)
        " times; not judged below " STR(TIDE_DOCTOR_SMALL_RSS_MIB) " MiB resident or "
        STR(TIDE_DOCTOR_ARENA_SLACK_MIB) " MiB above live",
        "--cache-arena-evacuate, --sweep-interval; clients slow to read responses" }, rule_arena, 0 },
    { { "peak", "tide_memory_peak_bytes{since=\"start|sweep\"}, tide_memory_counted_bytes",
        "warn when the peak since start is " STR(TIDE_DOCTOR_PEAK_WARN) " times now or more, or "
        STR(TIDE_DOCTOR_LIMIT_BAD) " of the limit",
        "size --memory-limit for the peak; --http-body-budget, --insert-burst" }, rule_peak, 0 },
    { { "unbounded_consumers", "tide_unbounded_consumer{consumer,setting}",
        "warn for any consumer without a bound", "the setting each one names" }, rule_unbounded, 0 },
    { { "archive_conflict", "tide_archive_conflict, tide_archive_info{pool,prefix,mode}",
        "bad when 1: another node changed the prefix's manifest, or it holds another store's generation",
        "its own --archive-prefix for each primary, then a restart; --archive-mode replica to serve "
        "another's archive; tide archive restore for a directory rebuilt under its old prefix" },
      rule_archive_conflict, 1 },
    { { "archive_up", "tide_archive_up, tide_archive_errors_total{op}, tide_archive_reads_total{result}",
        "bad when 0: the cluster does not answer",
        "the cluster (ceph -s), --archive-conf, --archive-pool, --archive-user; the node reconnects by "
        "itself" }, rule_archive_up, 1 },
    { { "archive_lag", "tide_archive_lag_bytes",
        "warn from " STR(TIDE_DOCTOR_ARCHIVE_LAG_WARN_MIB) " MiB",
        "--archive-inflight, a faster pool, fewer writes; archive_sync=archive to acknowledge only what "
        "RADOS holds" }, rule_archive_lag, 1 },
    { { "archive_rotation_waits", "tide_archive_rotation_waits_total",
        "warn from one wait (with --interval: one in the window)",
        "what holds the seals back: archive_up, archive_lag; GET /v1/rotations" },
      rule_archive_rotation_waits, 1 },
    { { "archive_sync_failures", "tide_archive_sync_failures_total, tide_archive_sync_waits_total",
        "warn from one failed sync (with --interval: one in the window)",
        "--archive-timeout, --archive-inflight, or archive_sync=local" }, rule_archive_sync_failures, 1 },
};
#define NRULES (sizeof rules / sizeof rules[0])
_Static_assert(NRULES <= TIDE_DOCTOR_RULES, "the report holds a result per rule");

const tide_doctor_rule *tide_doctor_rule_at(size_t i)
{
    return i < NRULES ? &rules[i].doc : NULL;
}

/* Run rule i; what neither found nor could not tell, passed. The
 * archive's rules give no result on a page without the archive. */
static void run_rule(tide_doctor_report *r, size_t i, const tide_doctor_report *earlier)
{
    size_t f = r->nfindings, u = r->nunknown;
    if (rules[i].archive && !r->archive.present) return;
    rules[i].check(r, earlier);
    TIDE_ASSERT(r->nfindings + r->nunknown <= f + u + 1);   /* one result a rule */
    if (r->nfindings == f && r->nunknown == u) r->passed[r->npassed++] = rules[i].doc.name;
}

/* The table's index of the rule named `name`. */
static size_t rule_index(const char *name)
{
    size_t i = 0;
    while (i < NRULES && strcmp(rules[i].doc.name, name) != 0) i++;
    return i;
}

/* 1 when a is listed before b: worse, or as bad and earlier in the table
 * (results rerun by tide_doctor_analyze_growth come last, yet keep it). */
static int worse(const tide_doctor_finding *a, const tide_doctor_finding *b)
{
    if (a->severity != b->severity) return a->severity > b->severity;
    return rule_index(a->rule) < rule_index(b->rule);
}

/* Findings worst first, the table's order within a severity (an
 * insertion sort), and the verdict from the first. */
static void conclude(tide_doctor_report *r)
{
    for (size_t i = 1; i < r->nfindings; i++) {
        tide_doctor_finding t = r->findings[i];
        size_t j = i;
        for (; j > 0 && worse(&t, &r->findings[j - 1]); j--) r->findings[j] = r->findings[j - 1];
        r->findings[j] = t;
    }
    for (size_t i = 1; i < r->nfindings; i++)
        TIDE_ASSERT(r->findings[i - 1].severity >= r->findings[i].severity);   /* invariant 3 */
    if (r->nfindings == 0) {
        r->severity = TIDE_DOCTOR_OK;
        snprintf(r->summary, sizeof r->summary, "nothing needs you (%zu rule%s passed%s%zu could not tell)",
                 r->npassed, r->npassed == 1 ? "" : "s", r->nunknown ? "; " : ", ", r->nunknown);
        return;
    }
    char first[sizeof r->findings[0].summary];
    memcpy(first, r->findings[0].summary, sizeof first);   /* not from inside the object written */
    r->severity = r->findings[0].severity;
    if (r->nfindings == 1)
        snprintf(r->summary, sizeof r->summary, "%s", first);
    else
        snprintf(r->summary, sizeof r->summary, "%s; %zu more finding%s", first, r->nfindings - 1,
                 r->nfindings == 2 ? "" : "s");
}

static void run_rules(tide_doctor_report *r)
{
    r->nfindings = r->nunknown = r->npassed = 0;
    for (size_t i = 0; i < NRULES; i++) run_rule(r, i, NULL);
    conclude(r);
}

/* 1 for the rules that judge two scrapes differently from one. */
static int two_scrape_rule(const char *name)
{
    return strcmp(name, "growth") == 0 || strcmp(name, "overload") == 0 || strcmp(name, "cgroup_events") == 0 ||
           strcmp(name, "archive_rotation_waits") == 0 || strcmp(name, "archive_sync_failures") == 0;
}

int tide_doctor_analyze_growth(tide_doctor_report *later, const tide_doctor_report *earlier, double seconds)
{
    size_t i, j;

    if (!(seconds > 0)) return tide_err_set(TIDE_EINVAL, "growth: %g seconds between the scrapes", seconds);
    later->interval = seconds;
    /* The one-scrape results of those rules go; the others stay. */
    for (i = j = 0; i < later->nfindings; i++)
        if (!two_scrape_rule(later->findings[i].rule)) later->findings[j++] = later->findings[i];
    later->nfindings = j;
    for (i = j = 0; i < later->nunknown; i++)
        if (!two_scrape_rule(later->unknown[i].rule)) later->unknown[j++] = later->unknown[i];
    later->nunknown = j;
    for (i = j = 0; i < later->npassed; i++)
        if (!two_scrape_rule(later->passed[i])) later->passed[j++] = later->passed[i];
    later->npassed = j;
    for (i = 0; i < NRULES; i++)
        if (two_scrape_rule(rules[i].doc.name)) run_rule(later, i, earlier);
    conclude(later);
    return 0;
}

/* ---- the disk ------------------------------------------------------------------------ */

/* Everything but the page's figures, back to unknown (invariant 2). */
static void disk_reset_status(tide_doctor_disk *d)
{
    tide_doctor_disk keep = *d;

    memset(d, 0, sizeof *d);
    d->advisory_delete = -1;
    d->disk_bytes = d->rotations = d->newest_objects = d->last_rotation_us = d->can_delete = -1;
    d->failures = d->abandoned = d->last_rotation_age_s = -1;
    d->m_disk_bytes = keep.m_disk_bytes;
    d->m_generations = keep.m_generations;
    d->m_rotations = keep.m_rotations;
    d->m_failures = keep.m_failures;
    d->m_abandoned = keep.m_abandoned;
}

static void disk_from_metrics(const char *text, tide_doctor_disk *d)
{
    disk_reset_status(d);
    d->m_disk_bytes = or_neg(value_of(text, "tide_disk_bytes", NULL, NULL));
    d->m_generations = or_neg(value_of(text, "tide_generations", NULL, NULL));
    d->m_rotations = or_neg(value_of(text, "tide_rotations_total", NULL, NULL));
    d->m_failures = or_neg(value_of(text, "tide_rotation_failures_total", NULL, NULL));
    d->m_abandoned = or_neg(value_of(text, "tide_rotations_abandoned_total", NULL, NULL));
}

/* A non-negative JSON integer or real member as a double; -1 when absent
 * or of another type. */
static double member_num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) return json_integer_value(v) < 0 ? -1 : (double)json_integer_value(v);
    if (json_is_real(v)) return json_real_value(v) < 0 ? -1 : json_real_value(v);
    return -1;
}

static void finding(tide_doctor_disk *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void finding(tide_doctor_disk *d, const char *fmt, ...)
{
    va_list ap;
    if (d->nfindings >= TIDE_DOCTOR_FINDINGS) return;
    va_start(ap, fmt);
    vsnprintf(d->findings[d->nfindings++], sizeof d->findings[0], fmt, ap);
    va_end(ap);
}

/* can_delete: a count, or "always" (UINT64_MAX: a -1 or a huge number once
 * it passed through a signed JSON integer, or the words themselves). */
static void read_can_delete(const json_t *o, tide_doctor_disk *d)
{
    const json_t *v = json_object_get(o, "can_delete");

    if (json_is_integer(v) && (json_integer_value(v) < 0 || json_integer_value(v) == INT64_MAX))
        d->can_delete_always = 1;
    else if (json_is_string(v) && strcmp(json_string_value(v), "always") == 0)
        d->can_delete_always = 1;
    else if (json_is_string(v) && strcmp(json_string_value(v), "never") == 0)
        d->can_delete = 0;
    else
        d->can_delete = member_num(o, "can_delete");
}

static void read_online_delete(const json_t *od, uint64_t now_us, tide_doctor_disk *d)
{
    const json_t *gens = json_object_get(od, "generations"), *adv = json_object_get(od, "advisory_delete");
    const json_t *last;

    d->reported = 1;
    d->enabled = json_is_true(json_object_get(od, "enabled"));
    d->advisory_delete = json_is_boolean(adv) ? json_is_true(adv)
                       : json_is_integer(adv) ? json_integer_value(adv) != 0 : -1;
    for (size_t i = 0; json_is_array(gens) && i < json_array_size(gens) && d->ngens < TIDE_DOCTOR_GENS; i++) {
        const json_t *g = json_array_get(gens, i);
        const char *dir = json_string_value(json_object_get(g, "dir"));
        if (!json_is_object(g)) continue;
        d->gens[d->ngens].id = (uint64_t)(member_num(g, "id") < 0 ? 0 : member_num(g, "id"));
        snprintf(d->gens[d->ngens].dir, sizeof d->gens[0].dir, "%s", dir ? dir : "?");
        d->gens[d->ngens].bytes = member_num(g, "bytes");
        d->ngens++;
    }
    d->disk_bytes = member_num(od, "disk_bytes");
    d->rotations = member_num(od, "rotations");
    d->last_rotation_us = member_num(od, "last_rotation_unix_us");
    if (d->last_rotation_us < 0) d->last_rotation_us = member_num(od, "last_rotation_us");
    d->failures = member_num(od, "failures");
    d->abandoned = member_num(od, "abandoned");
    d->newest_objects = member_num(od, "newest_objects");
    last = json_object_get(od, "last_rotation");
    if (json_is_object(last) && json_is_integer(json_object_get(last, "rc"))) {
        d->last_rc_known = 1;
        d->last_rc = (int)json_integer_value(json_object_get(last, "rc"));
        d->last_seq = member_num(last, "seq");
    }
    read_can_delete(od, d);
    if (d->last_rotation_us > 0 && now_us >= d->last_rotation_us)
        d->last_rotation_age_s = ((double)now_us - d->last_rotation_us) / 1e6;
}

/* What needs the operator (invariant 2: only from figures that are there). */
static void disk_findings(tide_doctor_disk *d)
{
    double rotations = d->rotations >= 0 ? d->rotations : d->m_rotations;
    /* The page's counters first, the status's when the page has none. */
    double failures = d->m_failures >= 0 ? d->m_failures : d->failures;
    double abandoned = d->m_abandoned >= 0 ? d->m_abandoned : d->abandoned;
    int enabled = d->reported ? d->enabled : d->m_generations > 0;

    if (!d->status_read && d->m_generations < 0 && d->m_disk_bytes < 0) {
        finding(d, "the disk side is unknown: /v1/status was not read (%s) and /metrics has no "
                "tide_disk_bytes (a node from before online delete?)", d->status_error);
        return;
    }
    if (!enabled) {
        finding(d, "online delete is off: the store grows without bound. Turn it on with "
                "--online-delete N (TIDE_ONLINE_DELETE, [node_db] online_delete_objects=N): rotate "
                "after N objects, keeping --generations G (default 2)");
        return;
    }
    /* Failures count since start; whether deletes run now is the newest
     * attempt's result (the status's last_rotation). */
    if (failures > 0 && d->last_rc_known && d->last_rc == 0)
        finding(d, "%.0f rotation attempt%s failed since start (tide_rotation_failures_total), but the "
                "newest attempt (%.0f) succeeded: rotations and deletes run again; GET /v1/rotations "
                "gives the failed ones' errors", failures, failures == 1 ? "" : "s", d->last_seq);
    else if (failures > 0 && d->last_rc_known)
        finding(d, "%.0f rotation attempt%s failed (tide_rotation_failures_total), the newest (%.0f) "
                "too: GET /v1/rotations gives each one's error; until one succeeds nothing is deleted "
                "and the disk grows", failures, failures == 1 ? "" : "s", d->last_seq);
    else if (failures > 0)
        finding(d, "%.0f rotation attempt%s failed since start (tide_rotation_failures_total); whether "
                "a later one succeeded is not known here (/v1/status' online_delete.last_rotation not "
                "read): GET /v1/rotations gives each one's result", failures, failures == 1 ? "" : "s");
    if (abandoned > 0)
        finding(d, "%.0f rotation attempt%s abandoned (tide_rotations_abandoned_total): the health "
                "gate (no commit failed since its last look, the insert pools under one burst, RSS "
                "under rotation_max_rss when set, and with an archive each generation to drop sealed "
                "there) stayed shut past rotation_wait_max_seconds; GET /v1/rotations says which, and "
                "the node's log why",
                abandoned, abandoned == 1 ? " was" : "s were");
    if (d->advisory_delete == 1 && !d->can_delete_always && d->can_delete == 0)
        finding(d, "advisory_delete is on and can_delete is never: nothing will be deleted until "
                "POST /v1/admin/can_delete?value=now (or a rotation count, or always) allows it; "
                "the disk grows meanwhile");
    else if (d->advisory_delete == 1 && !d->can_delete_always && d->can_delete > 0 && rotations >= 0 &&
             d->can_delete <= rotations)
        finding(d, "advisory_delete is on and can_delete is %.0f, which %.0f rotations have "
                "reached: no further rotation may run until POST /v1/admin/can_delete?value=now "
                "(or a higher count, or always)", d->can_delete, rotations);
}

/* /v1/status' "archive" object into the archive's status part: the
 * setting of archive_sync, the node's last failure and each local
 * generation's state; any member may be missing (invariant 2). `o` NULL
 * or without the object: all of it unknown. */
static void read_archive_status(const json_t *o, tide_doctor_archive *a)
{
    const json_t *ar = json_is_object(o) ? json_object_get(o, "archive") : NULL, *gens;
    const char *v;

    a->status_reported = 0;
    a->sync[0] = a->problem[0] = '\0';
    a->ngens = 0;
    if (!json_is_object(ar)) return;
    a->status_reported = 1;
    if ((v = json_string_value(json_object_get(ar, "sync"))) != NULL) snprintf(a->sync, sizeof a->sync, "%s", v);
    if ((v = json_string_value(json_object_get(ar, "problem"))) != NULL)
        snprintf(a->problem, sizeof a->problem, "%s", v);
    gens = json_object_get(ar, "generations");
    for (size_t i = 0; json_is_array(gens) && i < json_array_size(gens) && a->ngens < TIDE_DOCTOR_ARCHIVE_GENS; i++) {
        const json_t *g = json_array_get(gens, i);
        if (!json_is_object(g) || member_num(g, "id") < 0) continue;
        v = json_string_value(json_object_get(g, "state"));
        a->gens[a->ngens].id = (uint64_t)member_num(g, "id");
        snprintf(a->gens[a->ngens].state, sizeof a->gens[0].state, "%s", v ? v : "?");
        a->gens[a->ngens].uploaded_bytes = member_num(g, "uploaded_bytes");
        a->ngens++;
    }
}

int tide_doctor_analyze_status(tide_doctor_report *r, const char *status_json, const char *unread,
                               uint64_t now_us)
{
    tide_doctor_disk *d = &r->disk;
    json_error_t err;
    json_t *o = NULL, *od;

    disk_reset_status(d);       /* a second call replaces the first's findings */
    d->analyzed = 1;
    if (status_json == NULL) {
        snprintf(d->status_error, sizeof d->status_error, "%s", unread ? unread : "not fetched");
    } else if ((o = json_loads(status_json, 0, &err)) == NULL || !json_is_object(o)) {
        snprintf(d->status_error, sizeof d->status_error, "/v1/status is not a JSON object%s%s",
                 o ? "" : ": ", o ? "" : err.text);
    } else {
        d->status_read = 1;
        od = json_object_get(o, "online_delete");
        if (json_is_object(od)) read_online_delete(od, now_us, d);
    }
    read_archive_status(o, &r->archive);
    json_decref(o);
    disk_findings(d);
    return 0;
}

/* ---- words ---------------------------------------------------------------------------- */

static const char *mib(double bytes, char *buf, size_t cap)
{
    if (bytes < 0) snprintf(buf, cap, "unknown");
    else snprintf(buf, cap, "%.1f MiB", bytes / 1048576.0);
    return buf;
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

/* "3 d 4 h", "2 h 5 min", "4 min 10 s", "12 s". */
static const char *age(double s, char *buf, size_t cap)
{
    unsigned long long t = (unsigned long long)s;
    if (t >= 86400) snprintf(buf, cap, "%llu d %llu h", t / 86400, t % 86400 / 3600);
    else if (t >= 3600) snprintf(buf, cap, "%llu h %llu min", t / 3600, t % 3600 / 60);
    else if (t >= 60) snprintf(buf, cap, "%llu min %llu s", t / 60, t % 60);
    else snprintf(buf, cap, "%llu s", t);
    return buf;
}

/* Disk sizes span bytes to terabytes: "16.2 KiB", "3 GiB"; "unknown" when absent. */
static const char *human(double bytes, char *buf, size_t cap)
{
    if (bytes < 0) snprintf(buf, cap, "unknown");
    else tide_size_format((uint64_t)bytes, buf, cap);
    return buf;
}

static void disk_format(const tide_doctor_disk *d, FILE *f)
{
    double bytes = d->disk_bytes >= 0 ? d->disk_bytes : d->m_disk_bytes;
    double rotations = d->rotations >= 0 ? d->rotations : d->m_rotations;
    char a[32], b[32];

    if (d->reported && d->enabled) {
        fprintf(f, "Disk: %s in %zu generation%s, newest first:", human(bytes, a, sizeof a), d->ngens,
                d->ngens == 1 ? "" : "s");
        for (size_t i = 0; i < d->ngens; i++)
            fprintf(f, "%s %llu (%s) %s", i ? "," : "", (unsigned long long)d->gens[i].id, d->gens[i].dir,
                    human(d->gens[i].bytes, a, sizeof a));
        fprintf(f, ".\n");
        if (d->last_rotation_us == 0 || rotations == 0)
            fprintf(f, "  No rotation yet");
        else if (d->last_rotation_age_s >= 0)
            fprintf(f, "  %.0f rotation%s, the last %s ago", rotations, rotations == 1 ? "" : "s",
                    age(d->last_rotation_age_s, b, sizeof b));
        else
            fprintf(f, "  %s rotations, the last at an unknown time", rotations < 0 ? "unknown" : "some");
        if (d->newest_objects >= 0) fprintf(f, "; the newest generation holds %.0f objects", d->newest_objects);
        fprintf(f, ".\n");
    } else if (bytes >= 0) {
        fprintf(f, "Disk: %s.\n", human(bytes, a, sizeof a));
    } else if (d->status_read) {
        fprintf(f, "Disk: the node does not say how big its store is.\n");
    }
    for (size_t i = 0; i < d->nfindings; i++) fprintf(f, "Disk finding: %s.\n", d->findings[i]);
    if (d->nfindings == 0) fprintf(f, "Disk: online delete is on and rotating; nothing needs you.\n");
}

/* The archive's figures (only for a page with its families). */
static void archive_format(const tide_doctor_archive *a, FILE *f)
{
    char w[160], b[32], c[32], d[32], n[32], m[32];

    fprintf(f, "Archive: %s%s%s: the cluster %s; %s.\n", archive_where(a, w, sizeof w),
            a->sync[0] ? ", archive_sync=" : "", a->sync, a->up >= 1 ? "answers" : a->up == 0
            ? "does not answer" : "answers or not (the page does not say)", a->conflict >= 1
            ? "another writer holds the prefix (uploads stopped)" : a->conflict == 0 ? "no conflict"
            : "a conflict or not (the page does not say)");
    fprintf(f, "  %s generation%s sealed of %s listed (%s); lag %s; %s uploaded since start.\n",
            count_words(a->sealed_generations, n, sizeof n), a->sealed_generations == 1 ? "" : "s",
            count_words(a->generations, m, sizeof m),
            human(a->archive_bytes, b, sizeof b), human(a->lag_bytes, c, sizeof c),
            human(a->uploaded_bytes, d, sizeof d));
    fprintf(f, "  Reads that missed every local generation and asked it: %s found, %s missed, %s failed.\n",
            count_words(a->reads_found, b, sizeof b), count_words(a->reads_missed, c, sizeof c),
            count_words(a->reads_failed, d, sizeof d));
    fprintf(f, "  Rotations waited for it %s times; syncs that waited for it %s, %s of them failed.\n",
            count_words(a->rotation_waits, b, sizeof b), count_words(a->sync_waits, c, sizeof c),
            count_words(a->sync_failures, d, sizeof d));
    fprintf(f, "  Failed calls to RADOS since start: connect %s, write %s, read %s, manifest %s, delete %s.\n",
            count_words(a->errors_connect, w, sizeof w), count_words(a->errors_write, b, sizeof b),
            count_words(a->errors_read, c, sizeof c), count_words(a->errors_manifest, d, sizeof d),
            count_words(a->errors_delete, n, sizeof n));
    if (a->ngens) {
        fprintf(f, "  Local generations in the archive, newest first:");
        for (size_t i = 0; i < a->ngens; i++) {
            fprintf(f, "%s %llu %s", i ? "," : "", (unsigned long long)a->gens[i].id, a->gens[i].state);
            if (strcmp(a->gens[i].state, "uploading") == 0)
                fprintf(f, " (%s there)", human(a->gens[i].uploaded_bytes, b, sizeof b));
        }
        fprintf(f, ".\n");
    }
    if (a->problem[0]) fprintf(f, "  The node's last failure: %s\n", a->problem);
}

static void rules_format(const tide_doctor_report *r, FILE *f)
{
    fprintf(f, "verdict: %s: %s\n", tide_doctor_severity_name(r->severity), r->summary);
    for (size_t i = 0; i < r->nfindings; i++) {
        const tide_doctor_finding *k = &r->findings[i];
        fprintf(f, "  %-4s %s: %s.\n", tide_doctor_severity_name(k->severity), k->rule, k->summary);
        fprintf(f, "       %s.\n       figures:", k->detail);
        for (size_t j = 0; j < k->nfigures; j++)
            fprintf(f, k->figures[j].integer ? " %s=%.0f" : " %s=%.3g", k->figures[j].name, k->figures[j].value);
        fprintf(f, "\n       advice: %s.\n", k->advice);
    }
    for (size_t i = 0; i < r->nunknown; i++)
        fprintf(f, "  cannot tell %s: %s.\n", r->unknown[i].rule, r->unknown[i].why);
    fprintf(f, "  passed:");
    for (size_t i = 0; i < r->npassed; i++) fprintf(f, "%s %s", i ? "," : "", r->passed[i]);
    fprintf(f, "%s\n", r->npassed ? "." : " none.");
}

void tide_doctor_format(const tide_doctor_report *r, FILE *f)
{
    char a[32], b[32], c[32], d[32];

    rules_format(r, f);
    fprintf(f, "Allocator: %s%s%s.\n", r->allocator, r->allocator_version[0] ? " " : "", r->allocator_version);
    if (r->rss >= 0 && r->live >= 0)
        fprintf(f, "RSS is %s; the allocator says %s of it is live (%.0f%%).\n", mib(r->rss, a, sizeof a),
                mib(r->live, b, sizeof b), pct(r->live, r->rss));
    else
        fprintf(f, "RSS is %s; the page does not say how much of it is live.\n", mib(r->rss, a, sizeof a));
    if (r->part_anonymous >= 0) {
        /* ps and top show RSS: what of it the node counts, in one line. */
        tide_mem_rss_parts p = { (uint64_t)(r->part_anonymous + r->part_store_maps + r->part_other_files),
                                 (uint64_t)r->part_anonymous, (uint64_t)r->part_store_maps,
                                 (uint64_t)r->part_other_files };
        char line[400];
        tide_mem_rss_parts_text(&p, r->limit > 0, line, sizeof line);
        fprintf(f, "%s.\n", line);
    }
    if (r->rss_anon >= 0 && r->key_map_resident >= 0 && r->dat_map_resident >= 0)
        fprintf(f, "  anonymous %s (heap, stacks, mappings), file-backed %s (code, libraries, and "
                "%s of nudb.key's read-only map and %s of nudb.dat's: page cache the kernel reclaims, left out "
                "of RSS against live).\n", mib(r->rss_anon, a, sizeof a), mib(r->rss_file, b, sizeof b),
                mib(r->key_map_resident, c, sizeof c), mib(r->dat_map_resident, d, sizeof d));
    else if (r->rss_anon >= 0 && r->key_map_resident >= 0)
        fprintf(f, "  anonymous %s (heap, stacks, mappings), file-backed %s (code, libraries, and "
                "%s of nudb.key's read-only map: page cache the kernel reclaims, left out of RSS against live).\n",
                mib(r->rss_anon, a, sizeof a), mib(r->rss_file, b, sizeof b),
                mib(r->key_map_resident, c, sizeof c));
    else if (r->rss_anon >= 0)
        fprintf(f, "  anonymous %s (heap, stacks, mappings), file-backed %s (code, libraries).\n",
                mib(r->rss_anon, a, sizeof a), mib(r->rss_file, b, sizeof b));
    int anon;
    double own = process_rss(r, &anon);
    if (r->allocator_free >= 0) {
        fprintf(f, anon ? "The allocator holds %s free, %.0f%% of %s: a trim could return up to that much"
                        : "The allocator holds %s free (%.0f%% of %s): a trim could return up to that much",
                mib(r->allocator_free, a, sizeof a), pct(r->allocator_free, own), anon ? ANON_RSS : "RSS");
        if (strcmp(r->allocator, "glibc") == 0) fprintf(f, ", less the free space inside partly used pages");
        fprintf(f, ".\n");
    } else {
        fprintf(f, "The page does not say how much the allocator holds free.\n");
    }

    fprintf(f, "Consumers, largest first (%s in all):\n", mib(r->consumers_total, a, sizeof a));
    for (size_t i = 0; i < r->nconsumers; i++) {
        const tide_doctor_consumer *k = &r->consumers[i];
        if (k->budget > 0)
            fprintf(f, "  %-18s %12s of a %s budget (%.0f%%)\n", k->name, mib(k->bytes, a, sizeof a),
                    mib(k->budget, b, sizeof b), pct(k->bytes, k->budget));
        else if (k->budget == 0)
            fprintf(f, "  %-18s %12s, unbounded\n", k->name, mib(k->bytes, a, sizeof a));
        else
            fprintf(f, "  %-18s %12s\n", k->name, mib(k->bytes, a, sizeof a));
    }
    if (r->rss >= 0) {
        /* File-backed pages are no consumer's and no allocator's: the rest
         * is of the anonymous part, the file-backed part its own line. */
        double rest = own - r->consumers_total - (r->allocator_free > 0 ? r->allocator_free : 0);
        fprintf(f, "  %-18s %12s (stacks, allocator overhead, what no consumer counts)\n",
                "the rest", mib(rest > 0 ? rest : 0, a, sizeof a));
        if (anon)
            fprintf(f, "  %-18s %12s (code, libraries, nudb.key's map and nudb.dat's: page cache, not counted above)\n",
                    "file-backed", mib(r->rss_file, a, sizeof a));
    }

    if (r->trims > 0) {
        fprintf(f, "Trims: %.0f after %.0f sweeps", r->trims, r->sweeps);
        if (r->sweep_interval > 0) fprintf(f, " (one every %.0f s)", r->sweep_interval);
        fprintf(f, "; %.0f%% lowered RSS; they returned %s in all, %s per trim on average;\n",
                pct(r->trims_lowered, r->trims), mib(r->trim_released, a, sizeof a),
                mib(r->trim_released / r->trims, b, sizeof b));
        fprintf(f, "  duration median %.1f ms, p95 %.1f ms (from the histogram), %.0f minor faults per trim; "
                "the latest moved RSS by %s%s.\n", r->trim_p50_s * 1000, r->trim_p95_s * 1000,
                r->trim_minflt / r->trims, r->last_trim_delta < 0 ? "-" : "+",
                mib(fabs(r->last_trim_delta), c, sizeof c));
    } else if (r->trims == 0) {
        fprintf(f, "Trims: none yet (%.0f sweeps). Freed memory stays with the allocator until the first.\n",
                r->sweeps < 0 ? 0 : r->sweeps);
    } else {
        fprintf(f, "Trims: the page does not say.\n");
    }

    if (r->nunbounded == 0) {
        fprintf(f, "Every consumer the node knows of is bounded.\n");
    } else {
        for (size_t i = 0; i < r->nunbounded; i++)
            fprintf(f, "Unbounded: %s. To bound it: %s.\n", r->unbounded[i].consumer, r->unbounded[i].setting);
    }
    if (r->disk.analyzed) disk_format(&r->disk, f);
    if (r->archive.present) archive_format(&r->archive, f);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static json_t *num_or_null(double v) { return v < 0 ? json_null() : json_real(v); }

/* Counts as integers when known, null when not. */
static json_t *int_or_null(double v) { return v < 0 ? json_null() : json_integer((json_int_t)v); }

static json_t *disk_json(const tide_doctor_disk *d)
{
    json_t *o = json_object(), *gens = json_array(), *fs = json_array();

    json_object_set_new(o, "status_read", json_boolean(d->status_read));
    json_object_set_new(o, "status_error", d->status_read ? json_null() : json_string(d->status_error));
    json_object_set_new(o, "online_delete_reported", json_boolean(d->reported));
    json_object_set_new(o, "enabled", d->reported ? json_boolean(d->enabled) : json_null());
    json_object_set_new(o, "advisory_delete", d->advisory_delete < 0 ? json_null()
                                                                     : json_boolean(d->advisory_delete));
    json_object_set_new(o, "disk_bytes", int_or_null(d->disk_bytes));
    for (size_t i = 0; i < d->ngens; i++) {
        json_t *g = json_object();
        json_object_set_new(g, "id", json_integer((json_int_t)d->gens[i].id));
        json_object_set_new(g, "dir", json_string(d->gens[i].dir));
        json_object_set_new(g, "bytes", int_or_null(d->gens[i].bytes));
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", d->reported ? gens : (json_decref(gens), json_null()));
    json_object_set_new(o, "rotations", int_or_null(d->rotations));
    json_object_set_new(o, "last_rotation_unix_us", int_or_null(d->last_rotation_us));
    json_object_set_new(o, "last_rotation_age_seconds", num_or_null(d->last_rotation_age_s));
    json_object_set_new(o, "newest_objects", int_or_null(d->newest_objects));
    json_object_set_new(o, "can_delete", d->can_delete_always ? json_string("always")
                                                              : int_or_null(d->can_delete));
    json_object_set_new(o, "metrics_disk_bytes", int_or_null(d->m_disk_bytes));
    json_object_set_new(o, "metrics_generations", int_or_null(d->m_generations));
    json_object_set_new(o, "metrics_rotations", int_or_null(d->m_rotations));
    json_object_set_new(o, "rotation_failures", int_or_null(d->m_failures >= 0 ? d->m_failures : d->failures));
    json_object_set_new(o, "rotations_abandoned", int_or_null(d->m_abandoned >= 0 ? d->m_abandoned
                                                                                 : d->abandoned));
    for (size_t i = 0; i < d->nfindings; i++) json_array_append_new(fs, json_string(d->findings[i]));
    json_object_set_new(o, "findings", fs);
    return o;
}

static json_t *flag_or_null(double v) { return v < 0 ? json_null() : json_boolean(v >= 1); }

static json_t *text_or_null(const char *s) { return s[0] ? json_string(s) : json_null(); }

/* The archive's object (invariant 4); null for a page without it. */
static json_t *archive_json(const tide_doctor_archive *a)
{
    json_t *o, *gens;

    if (!a->present) return json_null();
    o = json_object();
    json_object_set_new(o, "pool", text_or_null(a->pool));
    json_object_set_new(o, "prefix", text_or_null(a->prefix));
    json_object_set_new(o, "mode", text_or_null(a->mode));
    json_object_set_new(o, "sync", text_or_null(a->sync));
    json_object_set_new(o, "up", flag_or_null(a->up));
    json_object_set_new(o, "conflict", flag_or_null(a->conflict));
    json_object_set_new(o, "problem", text_or_null(a->problem));
    json_object_set_new(o, "lag_bytes", int_or_null(a->lag_bytes));
    json_object_set_new(o, "sealed_generations", int_or_null(a->sealed_generations));
    json_object_set_new(o, "generations", int_or_null(a->generations));
    json_object_set_new(o, "archive_bytes", int_or_null(a->archive_bytes));
    json_object_set_new(o, "uploaded_bytes", int_or_null(a->uploaded_bytes));
    json_object_set_new(o, "rotation_waits", int_or_null(a->rotation_waits));
    json_object_set_new(o, "sync_waits", int_or_null(a->sync_waits));
    json_object_set_new(o, "sync_failures", int_or_null(a->sync_failures));
    json_object_set_new(o, "reads", json_pack("{s:o,s:o,s:o}", "found", int_or_null(a->reads_found),
                                              "missed", int_or_null(a->reads_missed),
                                              "failed", int_or_null(a->reads_failed)));
    json_object_set_new(o, "errors", json_pack("{s:o,s:o,s:o,s:o,s:o}", "connect", int_or_null(a->errors_connect),
                                               "write", int_or_null(a->errors_write),
                                               "read", int_or_null(a->errors_read),
                                               "manifest", int_or_null(a->errors_manifest),
                                               "delete", int_or_null(a->errors_delete)));
    gens = a->status_reported ? json_array() : json_null();
    for (size_t i = 0; i < a->ngens; i++)
        json_array_append_new(gens, json_pack("{s:I,s:s,s:o}", "id", (json_int_t)a->gens[i].id,
                                              "state", a->gens[i].state, "uploaded_bytes",
                                              int_or_null(a->gens[i].uploaded_bytes)));
    json_object_set_new(o, "local_generations", gens);
    return o;
}

static json_t *figure_json(const tide_doctor_figure *g)
{
    return g->integer ? json_integer((json_int_t)g->value) : json_real(g->value);
}

/* "verdict", "findings", "unknown", "passed", and the memory limit's figures. */
static void rules_json(const tide_doctor_report *r, json_t *o)
{
    json_t *v = json_object(), *fs = json_array(), *us = json_array(), *ps = json_array(), *m = json_object();

    json_object_set_new(v, "severity", json_string(tide_doctor_severity_name(r->severity)));
    json_object_set_new(v, "summary", json_string(r->summary));
    json_object_set_new(o, "verdict", v);
    for (size_t i = 0; i < r->nfindings; i++) {
        const tide_doctor_finding *k = &r->findings[i];
        json_t *x = json_object(), *figs = json_object();
        json_object_set_new(x, "rule", json_string(k->rule));
        json_object_set_new(x, "severity", json_string(tide_doctor_severity_name(k->severity)));
        json_object_set_new(x, "summary", json_string(k->summary));
        json_object_set_new(x, "detail", json_string(k->detail));
        for (size_t j = 0; j < k->nfigures; j++)
            json_object_set_new(figs, k->figures[j].name, figure_json(&k->figures[j]));
        json_object_set_new(x, "figures", figs);
        json_object_set_new(x, "advice", json_string(k->advice));
        json_array_append_new(fs, x);
    }
    json_object_set_new(o, "findings", fs);
    for (size_t i = 0; i < r->nunknown; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "rule", json_string(r->unknown[i].rule));
        json_object_set_new(x, "why", json_string(r->unknown[i].why));
        json_array_append_new(us, x);
    }
    json_object_set_new(o, "unknown", us);
    for (size_t i = 0; i < r->npassed; i++) json_array_append_new(ps, json_string(r->passed[i]));
    json_object_set_new(o, "passed", ps);
    json_object_set_new(o, "interval_seconds", json_real(r->interval));
    json_object_set_new(m, "limit_bytes", int_or_null(r->limit));
    json_object_set_new(m, "counted_bytes", int_or_null(r->counted));
    json_object_set_new(m, "level", int_or_null(r->level));
    json_object_set_new(m, "level_changes", int_or_null(r->level_changes));
    json_object_set_new(m, "rejected_requests", int_or_null(r->rejected_requests));
    json_object_set_new(m, "rejected_writes", int_or_null(r->rejected_writes));
    json_object_set_new(m, "peak_start_bytes", int_or_null(r->peak_start));
    json_object_set_new(m, "peak_sweep_bytes", int_or_null(r->peak_sweep));
    json_object_set_new(m, "pressure_some_avg10", num_or_null(r->pressure_some10));
    json_object_set_new(m, "pressure_some_avg60", num_or_null(r->pressure_some60));
    json_object_set_new(m, "cgroup_limit_bytes", int_or_null(r->cg_limit));
    json_object_set_new(m, "cgroup_oom", int_or_null(r->cg_oom));
    json_object_set_new(m, "cgroup_oom_kill", int_or_null(r->cg_oom_kill));
    json_object_set_new(m, "cgroup_max", int_or_null(r->cg_max));
    json_object_set_new(o, "memory_limit", m);
}

int tide_doctor_json(const tide_doctor_report *r, char **out)
{
    json_t *o = json_object(), *cons = json_array(), *unb = json_array(), *trims = json_object();
    int rc = 0;

    *out = NULL;
    if (!o || !cons || !unb || !trims) { rc = TIDE_ENOMEM; goto out; }
    rules_json(r, o);
    json_object_set_new(o, "allocator", json_string(r->allocator));
    json_object_set_new(o, "allocator_version", json_string(r->allocator_version));
    json_object_set_new(o, "rss_bytes", int_or_null(r->rss));
    json_object_set_new(o, "rss_anon_bytes", int_or_null(r->rss_anon));
    json_object_set_new(o, "rss_file_bytes", int_or_null(r->rss_file));
    json_object_set_new(o, "key_map_resident_bytes", int_or_null(r->key_map_resident));
    json_object_set_new(o, "dat_map_resident_bytes", int_or_null(r->dat_map_resident));
    if (r->part_anonymous >= 0) {
        json_t *parts = json_object();
        json_object_set_new(parts, "anonymous_bytes", int_or_null(r->part_anonymous));
        json_object_set_new(parts, "store_maps_bytes", int_or_null(r->part_store_maps));
        json_object_set_new(parts, "other_files_bytes", int_or_null(r->part_other_files));
        json_object_set_new(o, "rss_parts", parts);
    } else {
        json_object_set_new(o, "rss_parts", json_null());
    }
    json_object_set_new(o, "live_bytes", int_or_null(r->live));
    json_object_set_new(o, "allocator_free_bytes", int_or_null(r->allocator_free));
    for (size_t i = 0; i < r->nconsumers; i++) {
        json_t *c = json_object();
        json_object_set_new(c, "consumer", json_string(r->consumers[i].name));
        json_object_set_new(c, "bytes", json_integer((json_int_t)r->consumers[i].bytes));  /* may be < 0: a bug shown */
        json_object_set_new(c, "budget_bytes", int_or_null(r->consumers[i].budget));
        json_object_set_new(c, "allocations", int_or_null(r->consumers[i].allocations));
        json_object_set_new(c, "allocated_bytes", int_or_null(r->consumers[i].allocated));
        json_object_set_new(c, "unbounded", json_boolean(r->consumers[i].budget == 0));
        json_array_append_new(cons, c);
    }
    json_object_set_new(o, "consumers_total_bytes", json_integer((json_int_t)r->consumers_total));
    json_object_set(o, "consumers", cons);
    json_object_set_new(trims, "sweeps", int_or_null(r->sweeps));
    json_object_set_new(trims, "trims", int_or_null(r->trims));
    json_object_set_new(trims, "lowered_rss", int_or_null(r->trims_lowered));
    json_object_set_new(trims, "released_bytes", int_or_null(r->trim_released));
    json_object_set_new(trims, "duration_seconds_sum", num_or_null(r->trim_seconds));
    json_object_set_new(trims, "duration_p50_seconds", num_or_null(r->trim_p50_s));
    json_object_set_new(trims, "duration_p95_seconds", num_or_null(r->trim_p95_s));
    json_object_set_new(trims, "minor_faults", int_or_null(r->trim_minflt));
    json_object_set_new(trims, "sweep_interval_seconds", num_or_null(r->sweep_interval));
    json_object_set_new(trims, "last_rss_delta_bytes", json_integer((json_int_t)r->last_trim_delta));
    json_object_set(o, "trims", trims);
    for (size_t i = 0; i < r->nunbounded; i++) {
        json_t *u = json_object();
        json_object_set_new(u, "consumer", json_string(r->unbounded[i].consumer));
        json_object_set_new(u, "setting", json_string(r->unbounded[i].setting));
        json_array_append_new(unb, u);
    }
    json_object_set(o, "unbounded", unb);
    if (r->disk.analyzed) json_object_set_new(o, "disk", disk_json(&r->disk));
    json_object_set_new(o, "archive", archive_json(&r->archive));
    *out = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (*out == NULL) rc = TIDE_ENOMEM;
out:
    json_decref(cons);
    json_decref(unb);
    json_decref(trims);
    json_decref(o);
    return rc;
}
