/*
 * doctor.c: reading a node's /metrics page and saying what its memory is,
 * and from its /v1/status what its disk is.
 *
 * Layout: a small parser of the text format (one sample at a time, labels
 * read on demand), the analysis that fills a tide_doctor_report, the disk
 * side (the status's "online_delete" object and the disk families of the
 * page, with the findings they lead to), then the two renderings, words
 * and JSON.
 *
 * The analysis, in the order an operator asks:
 *   1. RSS against what the allocator says is live (glibc: in-use chunks
 *      plus mmapped chunks; jemalloc, tcmalloc: allocated bytes).
 *   2. What the allocator holds free (tide_allocator_free_bytes): the most a
 *      trim could return. glibc can give back only whole free pages, so the
 *      words say "up to".
 *   3. The consumers, largest first, each against its budget.
 *   4. The trims: how many, how often they lowered RSS, the mean release,
 *      the median and p95 duration estimated from the histogram's buckets
 *      (as Prometheus' histogram_quantile does), faults per trim.
 *   5. The consumers left unbounded and the setting that bounds each.
 *   6. The disk (online delete, issue 12): its bytes now and per
 *      generation, the last rotation's age, and as findings with advice:
 *      online delete off (the store grows without bound), rotation attempts
 *      that failed or were abandoned, an advisory_delete allowance under
 *      which nothing will be deleted.
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
 *      tolerated, never guessed.
 *
 * Never: fetch anything (the caller brings the text) or guess a figure.
 */
#include "client/doctor.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tide/error.h"
#include "util/err.h"
#include "util/size.h"

static void disk_from_metrics(const char *text, tide_doctor_disk *d);

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
                "--online-delete N (TIDE_ONLINE_DELETE, [node_db] online_delete=N): rotate "
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
                "gate (no commit failed since its last look, the insert pools under one burst, "
                "and the process RSS under rotation_max_rss when that is set) stayed shut past "
                "rotation_wait_max_seconds; GET /v1/rotations says which, and the node's log why",
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

void tide_doctor_format(const tide_doctor_report *r, FILE *f)
{
    char a[32], b[32], c[32];

    fprintf(f, "Allocator: %s%s%s.\n", r->allocator, r->allocator_version[0] ? " " : "", r->allocator_version);
    if (r->rss >= 0 && r->live >= 0)
        fprintf(f, "RSS is %s; the allocator says %s of it is live (%.0f%%).\n", mib(r->rss, a, sizeof a),
                mib(r->live, b, sizeof b), pct(r->live, r->rss));
    else
        fprintf(f, "RSS is %s; the page does not say how much of it is live.\n", mib(r->rss, a, sizeof a));
    if (r->rss_anon >= 0)
        fprintf(f, "  anonymous %s (heap, stacks, mappings), file-backed %s (code, libraries).\n",
                mib(r->rss_anon, a, sizeof a), mib(r->rss_file, b, sizeof b));
    if (r->allocator_free >= 0) {
        fprintf(f, "The allocator holds %s free (%.0f%% of RSS): a trim could return up to that much",
                mib(r->allocator_free, a, sizeof a), pct(r->allocator_free, r->rss));
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
        double rest = r->rss - r->consumers_total - (r->allocator_free > 0 ? r->allocator_free : 0);
        fprintf(f, "  %-18s %12s (code, libraries, stacks, allocator overhead, what no consumer counts)\n",
                "the rest", mib(rest > 0 ? rest : 0, a, sizeof a));
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

int tide_doctor_json(const tide_doctor_report *r, char **out)
{
    json_t *o = json_object(), *cons = json_array(), *unb = json_array(), *trims = json_object();
    int rc = 0;

    *out = NULL;
    if (!o || !cons || !unb || !trims) { rc = TIDE_ENOMEM; goto out; }
    json_object_set_new(o, "allocator", json_string(r->allocator));
    json_object_set_new(o, "allocator_version", json_string(r->allocator_version));
    json_object_set_new(o, "rss_bytes", num_or_null(r->rss));
    json_object_set_new(o, "rss_anon_bytes", num_or_null(r->rss_anon));
    json_object_set_new(o, "rss_file_bytes", num_or_null(r->rss_file));
    json_object_set_new(o, "live_bytes", num_or_null(r->live));
    json_object_set_new(o, "allocator_free_bytes", num_or_null(r->allocator_free));
    for (size_t i = 0; i < r->nconsumers; i++) {
        json_t *c = json_object();
        json_object_set_new(c, "consumer", json_string(r->consumers[i].name));
        json_object_set_new(c, "bytes", json_real(r->consumers[i].bytes));
        json_object_set_new(c, "budget_bytes", num_or_null(r->consumers[i].budget));
        json_object_set_new(c, "unbounded", json_boolean(r->consumers[i].budget == 0));
        json_array_append_new(cons, c);
    }
    json_object_set_new(o, "consumers_total_bytes", json_real(r->consumers_total));
    json_object_set(o, "consumers", cons);
    json_object_set_new(trims, "sweeps", num_or_null(r->sweeps));
    json_object_set_new(trims, "trims", num_or_null(r->trims));
    json_object_set_new(trims, "lowered_rss", num_or_null(r->trims_lowered));
    json_object_set_new(trims, "released_bytes", num_or_null(r->trim_released));
    json_object_set_new(trims, "duration_seconds_sum", num_or_null(r->trim_seconds));
    json_object_set_new(trims, "duration_p50_seconds", num_or_null(r->trim_p50_s));
    json_object_set_new(trims, "duration_p95_seconds", num_or_null(r->trim_p95_s));
    json_object_set_new(trims, "minor_faults", num_or_null(r->trim_minflt));
    json_object_set_new(trims, "sweep_interval_seconds", num_or_null(r->sweep_interval));
    json_object_set_new(trims, "last_rss_delta_bytes", json_real(r->last_trim_delta));
    json_object_set(o, "trims", trims);
    for (size_t i = 0; i < r->nunbounded; i++) {
        json_t *u = json_object();
        json_object_set_new(u, "consumer", json_string(r->unbounded[i].consumer));
        json_object_set_new(u, "setting", json_string(r->unbounded[i].setting));
        json_array_append_new(unb, u);
    }
    json_object_set(o, "unbounded", unb);
    if (r->disk.analyzed) json_object_set_new(o, "disk", disk_json(&r->disk));
    *out = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (*out == NULL) rc = TIDE_ENOMEM;
out:
    json_decref(cons);
    json_decref(unb);
    json_decref(trims);
    json_decref(o);
    return rc;
}
