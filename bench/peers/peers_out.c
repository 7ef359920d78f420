/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers_out.c: what bench/peers prints. The header (stderr) states the
 * method and the machine; a progress line per run (stderr) gives that
 * run's main figures as it ends; the summary (stdout) is, per size, the
 * median over the rounds of every figure of every engine, as two tables
 * (rates with their ratio to the baseline engine; writes, files and
 * memory), and a third with COLD's and SETTLED's reads when the runs had
 * them, or, with --json, one document that also holds each figure's
 * minimum and maximum. A run with a cold phase has a second progress line
 * for each of its halves.
 *
 * Write amplification is wchar (the bytes the process passed to write
 * calls) / payload: the table's "WA" and the progress line's. /proc/self/io
 * write_bytes is kept in the JSON only, as load_write_amp_write_bytes: the
 * kernel charges it per dirtied folio (ext4 with large folios, kernel 6.18:
 * up to 64 KiB or more for a 4 KiB pwrite into a cached file), so it
 * inflates in-place writers (Tide's buckets, LMDB's pages) and is no
 * measure of what the engine wrote. The device counter stays as a second
 * opinion (every process's writes count there); Tide's own bytes_written
 * counter (load_write_amp_store) cross-checks its wchar.
 *
 * Invariants:
 *   1. A figure some run could not read is "-" in the tables and null in
 *      the JSON (peers.c invariant 3).
 *   2. A ratio is engine / baseline of the medians; "-" when either is
 *      missing or the baseline's is 0.
 *   3. A --record line is written whole and synced before the next run
 *      starts: a bench cut short (a session's end, a kill) leaves every run
 *      it finished, one line each, and at most one torn last line.
 * Never: print to stdout before the summary.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_store.h"
#include "peers_out.h"

enum {
    M_LOAD_IPS, M_LOAD_IPC, M_F1_IPS, M_F1_IPC, M_F2_IPS, M_F2_IPC, M_LOAD_SECS,
    M_LOAD_CPU_US, M_WA_IO, M_WA_DEV, M_WA_WCHAR, M_COMMITS, M_ITEMS_PER_COMMIT,
    M_FILE_BYTES, M_DISK_BYTES, M_LOAD_ANON, M_LOAD_FILE, M_F1_ANON, M_F1_FILE,
    M_F2_ANON, M_F2_FILE, M_WA_STORE, M_LOAD_CACHE, M_F1_CACHE, M_F2_CACHE,
    M_COLD_IPS, M_COLD_IPC, M_COLD_DEV_READS, M_COLD_DEV_KIB, M_COLD_READ_KIB,
    M_SET_IPS, M_SET_IPC, M_SET_DEV_READS, M_SET_DEV_KIB, M_SET_READ_KIB,
    M_COLD_CG_PEAK, M_COLD_CG_CACHE, M_COLD_ANON, M_COUNT
};

/* The JSON names, in the order above. */
static const char *const metric_key[M_COUNT] = {
    "load_items_per_s", "load_items_per_cpu_s", "fetch1_items_per_s",
    "fetch1_items_per_cpu_s", "fetch2_items_per_s", "fetch2_items_per_cpu_s",
    "load_seconds", "load_cpu_us_per_item", "load_write_amp_write_bytes",
    "load_write_amp_device", "load_write_amp_wchar", "load_commits", "items_per_commit",
    "file_bytes", "disk_bytes", "load_peak_anon", "load_peak_file", "fetch1_peak_anon",
    "fetch1_peak_file", "fetch2_peak_anon", "fetch2_peak_file", "load_write_amp_store",
    "load_page_cache", "fetch1_page_cache", "fetch2_page_cache",
    "cold_items_per_s", "cold_items_per_cpu_s", "cold_device_reads_per_fetch",
    "cold_device_kib_per_fetch", "cold_read_bytes_kib_per_fetch",
    "settled_items_per_s", "settled_items_per_cpu_s", "settled_device_reads_per_fetch",
    "settled_device_kib_per_fetch", "settled_read_bytes_kib_per_fetch", "cold_cgroup_peak",
    "cold_cgroup_page_cache", "cold_peak_anon",
};

typedef struct stat3 { int ok; double median, min, max; } stat3;

/* Figure m of one run; 0 when the run could not read it. */
static int figure(const peer_result *r, uint64_t items, uint64_t value_size, int m, double *v)
{
    const peer_phase *l = &r->ph[PH_LOAD], *f1 = &r->ph[PH_FETCH1], *f2 = &r->ph[PH_FETCH2];
    const peer_phase *c = &r->ph[m >= M_SET_IPS && m <= M_SET_READ_KIB ? PH_SETTLED : PH_COLD];
    double payload = (double)items * (double)(TIDE_BENCH_KEY_SIZE + value_size);
    double fetches = c->items ? (double)c->items : 1;

    *v = 0;
    if (m >= M_COLD_IPS && !c->ran) return 0;                          /* invariant 1 */
    if (m >= M_SET_IPS && m <= M_SET_READ_KIB) m += M_COLD_IPS - M_SET_IPS;   /* the same figures of the other half */
    if (((m >= M_F1_IPS && m <= M_F2_IPC) || (m >= M_F1_ANON && m <= M_F2_FILE) || m == M_F1_CACHE ||
         m == M_F2_CACHE) && !f1->ran)
        return 0;
    switch (m) {
    case M_LOAD_IPS: *v = l->items_per_s; return 1;
    case M_LOAD_IPC: *v = l->items_per_cpu_s; return 1;
    case M_F1_IPS: *v = f1->items_per_s; return 1;
    case M_F1_IPC: *v = f1->items_per_cpu_s; return 1;
    case M_F2_IPS: *v = f2->items_per_s; return 1;
    case M_F2_IPC: *v = f2->items_per_cpu_s; return 1;
    case M_COLD_IPS: *v = c->items_per_s; return 1;
    case M_COLD_IPC: *v = c->items_per_cpu_s; return 1;
    case M_COLD_DEV_READS: *v = (double)c->dev_reads / fetches; return c->dev_ok;
    case M_COLD_DEV_KIB: *v = (double)c->dev_read_bytes / 1024.0 / fetches; return c->dev_ok;
    case M_COLD_READ_KIB: *v = (double)c->read_bytes / 1024.0 / fetches; return c->io_ok;
    case M_COLD_CG_PEAK: *v = (double)r->cold_cg_peak; return r->cold_cg_peak > 0;
    case M_COLD_CG_CACHE: *v = (double)r->cold_cg_cache; return 1;
    case M_COLD_ANON: *v = (double)c->peak_anon; return 1;
    case M_LOAD_SECS: *v = l->secs; return 1;
    case M_LOAD_CPU_US: *v = l->cpu_secs * 1e6 / (double)items; return 1;
    case M_WA_IO: *v = (double)l->write_bytes / payload; return l->io_ok;
    case M_WA_DEV: *v = (double)l->dev_written / payload; return l->dev_ok;
    case M_WA_WCHAR: *v = (double)l->wchar / payload; return l->wchar_ok;
    case M_COMMITS: *v = (double)r->commits; return 1;
    case M_ITEMS_PER_COMMIT: *v = r->commits ? (double)items / (double)r->commits : 0; return 1;
    case M_FILE_BYTES: *v = (double)r->file_bytes; return 1;
    case M_DISK_BYTES: *v = (double)r->disk_bytes; return 1;
    case M_LOAD_ANON: *v = (double)l->peak_anon; return 1;
    case M_LOAD_FILE: *v = (double)l->peak_file; return 1;
    case M_F1_ANON: *v = (double)f1->peak_anon; return 1;
    case M_F1_FILE: *v = (double)f1->peak_file; return 1;
    case M_F2_ANON: *v = (double)f2->peak_anon; return 1;
    case M_F2_FILE: *v = (double)f2->peak_file; return 1;
    case M_WA_STORE: *v = (double)r->own_written / payload; return r->own_ok;
    case M_LOAD_CACHE: *v = (double)l->page_cache; return l->cache_ok;
    case M_F1_CACHE: *v = (double)f1->page_cache; return f1->cache_ok;
    default: *v = (double)f2->page_cache; return f2->cache_ok;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, minimum and maximum of figure m over the rounds of size z. */
static stat3 stat_of(const peers_state *ps, size_t z, size_t e, int m)
{
    const peers_opts *o = &ps->opts;
    double v[1000];
    stat3 s = { 1, 0, 0, 0 };
    size_t n = o->runs;

    for (size_t r = 0; r < n; r++) {
        const peer_result *res = &ps->results[(z * o->runs + r) * o->nengines + e];
        s.ok &= figure(res, o->sizes[z], o->value_size, m, &v[r]);
    }
    if (!s.ok || n == 0) return (stat3){ 0, 0, 0, 0 };
    qsort(v, n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

void peers_header(const peers_state *ps)
{
    const peers_opts *o = &ps->opts;
    fprintf(stderr, "peers: %zu engines x %llu rounds per size, interleaved; value %llu bytes, "
            "key 32; burst %llu; batch %s\n", o->nengines, (unsigned long long)o->runs,
            (unsigned long long)o->value_size, (unsigned long long)o->burst,
            o->batch ? "as given" : "auto (the items of a burst in Tide's insert pool)");
    fprintf(stderr, "peers: machine: %ld CPUs, %s; bench directory %s\n", ps->nproc,
            ps->kernel, ps->dir);
}

void peers_progress(const peers_state *ps, size_t z, unsigned r, size_t e)
{
    const peers_opts *o = &ps->opts;
    const peer_result *res = &ps->results[(z * o->runs + (r - 1)) * o->nengines + e];
    double wa = 0;
    int wa_ok = figure(res, o->sizes[z], o->value_size, M_WA_WCHAR, &wa);
    char b[48] = "";

    if (o->engines[e] != &peer_tide_ops)
        snprintf(b, sizeof b, " (batch %llu)", (unsigned long long)ps->batch);
    fprintf(stderr, "  %llu items r%u %-20s load %.0f/s (%.0f/CPU-s, %.1f s) fetch1 %.0f/s "
            "(%.0f/CPU-s) fetch2 %.0f/s (%.0f/CPU-s) WA %s%.2f commits %llu%s\n",
            (unsigned long long)o->sizes[z], r, o->engines[e]->name,
            res->ph[PH_LOAD].items_per_s, res->ph[PH_LOAD].items_per_cpu_s,
            res->ph[PH_LOAD].secs, res->ph[PH_FETCH1].items_per_s,
            res->ph[PH_FETCH1].items_per_cpu_s, res->ph[PH_FETCH2].items_per_s,
            res->ph[PH_FETCH2].items_per_cpu_s, wa_ok ? "" : "(n/a) ", wa,
            (unsigned long long)res->commits, b);
    for (int half = 0; half < 2 && res->ph[PH_COLD].ran; half++) {
        const peer_phase *c = &res->ph[half ? PH_SETTLED : PH_COLD];
        double reads = 0, kib = 0;
        int dev = figure(res, o->sizes[z], o->value_size, half ? M_SET_DEV_READS : M_COLD_DEV_READS, &reads);
        figure(res, o->sizes[z], o->value_size, half ? M_SET_DEV_KIB : M_COLD_DEV_KIB, &kib);
        fprintf(stderr, "  %llu items r%u %-20s %-7s %.0f/s (%.0f/CPU-s, %llu fetches) device reads %s%.3f a fetch, "
                "%.1f KiB", (unsigned long long)o->sizes[z], r, o->engines[e]->name, half ? "settled" : "cold",
                c->items_per_s, c->items_per_cpu_s, (unsigned long long)c->items, dev ? "" : "(n/a) ", reads, kib);
        if (half)
            fprintf(stderr, "; cgroup peak %.1f MiB, page cache %.1f MiB (%.1f MiB cached before)",
                    (double)res->cold_cg_peak / 1048576.0, (double)res->cold_cg_cache / 1048576.0,
                    (double)res->cold_cached_before / 1048576.0);
        fputc('\n', stderr);
    }
}

/* "357k 1.00x" into out: the median in thousands and its ratio. */
static void cell(char *out, size_t n, stat3 s, stat3 base, double scale, const char *unit)
{
    char ratio[32] = "-";
    if (!s.ok) {
        snprintf(out, n, "-");
        return;
    }
    if (base.ok && base.median > 0) snprintf(ratio, sizeof ratio, "%.2fx", s.median / base.median);
    snprintf(out, n, "%.*f%s %s", scale == 1 ? 2 : 0, s.median / scale, unit, ratio);
}

static void rates_table(const peers_state *ps, size_t z)
{
    static const int ms[] = { M_LOAD_IPS, M_LOAD_IPC, M_F1_IPS, M_F1_IPC, M_F2_IPS, M_F2_IPC,
                              M_WA_WCHAR };
    const peers_opts *o = &ps->opts;
    char c[64];

    printf("%-20s %-14s %-14s %-14s %-14s %-14s %-14s %-14s\n", "engine", "load/s",
           "load/CPU-s", "fetch1/s", "fetch1/CPU-s", "fetch2/s", "fetch2/CPU-s", "WA (wchar)");
    for (size_t e = 0; e < o->nengines; e++) {
        printf("%-20s", o->engines[e]->name);
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            stat3 s = stat_of(ps, z, e, ms[i]), b = stat_of(ps, z, o->baseline, ms[i]);
            cell(c, sizeof c, s, b, ms[i] == M_WA_WCHAR ? 1 : 1000,
                 ms[i] == M_WA_WCHAR ? "" : "k");
            printf(" %-14s", c);
        }
        printf("\n");
    }
}

static void mib(char *out, size_t n, stat3 s)
{
    if (s.ok) snprintf(out, n, "%.1f", s.median / 1048576.0);
    else snprintf(out, n, "-");
}

/* "a/b/c" of three MiB figures: m0, m0 + step, m0 + 2 step. */
static void three(char *out, size_t n, const peers_state *ps, size_t z, size_t e, int m0,
                  int step)
{
    char a[3][32];
    for (int k = 0; k < 3; k++) mib(a[k], sizeof a[k], stat_of(ps, z, e, m0 + step * k));
    snprintf(out, n, "%s/%s/%s", a[0], a[1], a[2]);
}

static void ratio2(char *out, size_t n, stat3 s)
{
    if (s.ok) snprintf(out, n, "%.2f", s.median);
    else snprintf(out, n, "-");
}

static void resources_table(const peers_state *ps, size_t z)
{
    const peers_opts *o = &ps->opts;
    char anon[100], file[100], cache[100], wd[32], ws[32], fb[32], db[32];

    printf("\n%-20s %-7s %-7s %-7s %-7s %-9s %-9s %-20s %-20s %s\n", "engine", "WA dev",
           "WA own", "CPU us", "items/", "files", "on disk", "anon MiB load/f1/f2",
           "file MiB load/f1/f2", "page cache MiB load/f1/f2");
    printf("%-20s %-7s %-7s %-7s %-7s %-9s %-9s\n", "", "", "", "/item", "commit", "MiB",
           "MiB");
    for (size_t e = 0; e < o->nengines; e++) {
        ratio2(wd, sizeof wd, stat_of(ps, z, e, M_WA_DEV));
        ratio2(ws, sizeof ws, stat_of(ps, z, e, M_WA_STORE));
        mib(fb, sizeof fb, stat_of(ps, z, e, M_FILE_BYTES));
        mib(db, sizeof db, stat_of(ps, z, e, M_DISK_BYTES));
        three(anon, sizeof anon, ps, z, e, M_LOAD_ANON, 2);
        three(file, sizeof file, ps, z, e, M_LOAD_FILE, 2);
        three(cache, sizeof cache, ps, z, e, M_LOAD_CACHE, 1);
        printf("%-20s %-7s %-7s %-7.2f %-7.0f %-9s %-9s %-20s %-20s %s\n",
               o->engines[e]->name, wd, ws, stat_of(ps, z, e, M_LOAD_CPU_US).median,
               stat_of(ps, z, e, M_ITEMS_PER_COMMIT).median, fb, db, anon, file, cache);
    }
}

static void fixed(char *out, size_t n, stat3 s, const char *fmt)
{
    if (s.ok) snprintf(out, n, fmt, s.median);
    else snprintf(out, n, "-");
}

/* COLD's and SETTLED's figures, when the runs had them: a row per engine
 * and half. */
static void cold_table(const peers_state *ps, size_t z)
{
    const peers_opts *o = &ps->opts;
    char c[64], d[64], r[32], k[32], rb[32], pk[32], pc[32], an[32];

    printf("\n%-20s %-8s %-14s %-14s %-10s %-10s %-10s %-10s %-10s %s\n", "cold", "half", "fetches/s",
           "fetches/CPU-s", "dev reads", "dev KiB", "read KiB", "cg peak", "cg cache", "anon MiB");
    printf("%-20s %-8s %-14s %-14s %-10s %-10s %-10s %-10s %-10s\n", "", "", "", "", "/fetch", "/fetch", "/fetch",
           "MiB", "MiB");
    for (size_t e = 0; e < o->nengines; e++) {
        for (int half = 0; half < 2; half++) {
            int m0 = half ? M_SET_IPS : M_COLD_IPS;     /* IPS, IPC, DEV_READS, DEV_KIB, READ_KIB follow */
            cell(c, sizeof c, stat_of(ps, z, e, m0), stat_of(ps, z, o->baseline, m0), 1000, "k");
            cell(d, sizeof d, stat_of(ps, z, e, m0 + 1), stat_of(ps, z, o->baseline, m0 + 1), 1000, "k");
            fixed(r, sizeof r, stat_of(ps, z, e, m0 + 2), "%.3f");
            fixed(k, sizeof k, stat_of(ps, z, e, m0 + 3), "%.1f");
            fixed(rb, sizeof rb, stat_of(ps, z, e, m0 + 4), "%.1f");
            if (half) {
                mib(pk, sizeof pk, stat_of(ps, z, e, M_COLD_CG_PEAK));
                mib(pc, sizeof pc, stat_of(ps, z, e, M_COLD_CG_CACHE));
                mib(an, sizeof an, stat_of(ps, z, e, M_COLD_ANON));
            } else {
                snprintf(pk, sizeof pk, " "), snprintf(pc, sizeof pc, " "), snprintf(an, sizeof an, " ");
            }
            printf("%-20s %-8s %-14s %-14s %-10s %-10s %-10s %-10s %-10s %s\n", half ? "" : o->engines[e]->name,
                   half ? "settled" : "cold", c, d, r, k, rb, pk, pc, an);
        }
    }
}

int peers_table(const peers_state *ps)
{
    const peers_opts *o = &ps->opts;
    for (size_t z = 0; z < o->nsizes; z++) {
        printf("%s== %llu items, %llu rounds: medians; ratio = engine / %s; batch %llu; "
               "load average %s -> %s\n", z ? "\n" : "", (unsigned long long)o->sizes[z],
               (unsigned long long)o->runs, o->engines[o->baseline]->name,
               (unsigned long long)ps->batch, ps->load_before[z], ps->load_after[z]);
        rates_table(ps, z);
        resources_table(ps, z);
        if (o->cold_memory) cold_table(ps, z);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static json_t *stat_json(stat3 s)
{
    if (!s.ok) return json_null();
    return json_pack("{s:f, s:f, s:f}", "median", s.median, "min", s.min, "max", s.max);
}

static json_t *engine_json(const peers_state *ps, size_t z, size_t e)
{
    json_t *j = json_pack("{s:s, s:s}", "engine", ps->opts.engines[e]->name, "durability",
                          ps->opts.engines[e]->durability);
    for (int m = 0; m < M_COUNT; m++)
        json_object_set_new(j, metric_key[m], stat_json(stat_of(ps, z, e, m)));
    return j;
}

int peers_json(const peers_state *ps)
{
    const peers_opts *o = &ps->opts;
    json_t *root = json_object(), *sizes = json_array();
    int rc;

    json_object_set_new(root, "bench", json_string("bench/peers"));
    json_object_set_new(root, "machine", json_pack("{s:I, s:s}", "nproc", (json_int_t)ps->nproc,
                                                   "kernel", ps->kernel));
    json_object_set_new(root, "options", json_pack(
        "{s:I, s:I, s:I, s:I, s:s, s:s}", "runs", (json_int_t)o->runs, "value_size",
        (json_int_t)o->value_size, "burst", (json_int_t)o->burst, "seed", (json_int_t)o->seed,
        "batch", o->batch ? "given" : "auto", "baseline", o->engines[o->baseline]->name));
    json_object_set_new(json_object_get(root, "options"), "warm_fetches", json_boolean(!o->no_warm));
    json_object_set_new(json_object_get(root, "options"), "cold_memory",
                        o->cold_memory ? json_integer((json_int_t)o->cold_memory) : json_null());
    json_object_set_new(json_object_get(root, "options"), "cold_fetches", json_integer((json_int_t)o->cold_fetches));
    for (size_t z = 0; z < o->nsizes; z++) {
        json_t *engines = json_array();
        for (size_t e = 0; e < o->nengines; e++)
            json_array_append_new(engines, engine_json(ps, z, e));
        json_array_append_new(sizes, json_pack("{s:I, s:I, s:s, s:s, s:o}", "items",
                                               (json_int_t)o->sizes[z], "batch",
                                               (json_int_t)ps->batch, "loadavg_before",
                                               ps->load_before[z], "loadavg_after",
                                               ps->load_after[z], "engines", engines));
    }
    json_object_set_new(root, "sizes", sizes);
    rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc == 0) rc = fputs("\n", stdout) == EOF;
    return rc == 0 && fflush(stdout) == 0 ? 0 : 1;
}

int peers_record(const peers_state *ps, size_t z, unsigned r, size_t e, const char *loadavg)
{
    const peers_opts *o = &ps->opts;
    const peer_result *res = &ps->results[(z * o->runs + (r - 1)) * o->nengines + e];
    json_t *j = json_pack("{s:I, s:I, s:s, s:I, s:I, s:s}", "items", (json_int_t)o->sizes[z],
                          "round", (json_int_t)r, "engine", o->engines[e]->name, "batch",
                          (json_int_t)ps->batch, "time", (json_int_t)time(NULL), "loadavg",
                          loadavg);
    char *line;
    int rc = 1;

    if (j == NULL) return 1;
    for (int m = 0; m < M_COUNT; m++) {
        double v;
        json_object_set_new(j, metric_key[m], figure(res, o->sizes[z], o->value_size, m, &v)
                                                  ? json_real(v) : json_null());
    }
    line = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (line == NULL) return 1;
    if (fprintf(ps->record, "%s\n", line) >= 0 && fflush(ps->record) == 0 &&
        fsync(fileno(ps->record)) == 0)
        rc = 0;
    free(line);
    return rc;
}
