/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_bench_archive.c: `tide bench archive`, the archive benchmark's
 * command line: what an upload, a read through the archive and an
 * acknowledged write cost against a running Ceph cluster (the measuring is
 * src/bench/bench_archive.c's; this file parses, runs and prints).
 *
 * The output states its method (what was run, the sizes, the runs, the
 * machine and its load), prints each run's figures as the run ends, then
 * the summary as a table, or with --json one document holding every run's
 * raw figures and the summary.
 *
 * Invariants:
 *   1. Nothing is printed that the output does not name with its source.
 *   2. With --json, stdout carries exactly one JSON document; the method,
 *      the per-run lines and the table go to stderr (so a script keeps
 *      both: bench/archive).
 *   3. A failure is printed before the bench is ended (its removals may
 *      set a message of their own).
 *
 * Never: print a summary after a failed run: the first failure ends the
 *   bench with exit 1.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench_archive.h"
#include "cli/cli.h"
#include "tide/error.h"
#include "util/size.h"

static const char help_archive[] =
"NAME\n"
"    tide bench archive - measure the RADOS archive: uploads, reads through\n"
"    it, acknowledged writes\n"
"\n"
"SYNOPSIS\n"
"    tide bench archive --conf FILE [--pool NAME] [--prefix P] [--size SIZE]\n"
"                       [--inflight LIST] [--keys N] [--puts N] [--runs N]\n"
"                       [--filter-budget SIZE] [--chunk SIZE] [--piece SIZE]\n"
"                       [--value-size N] [--timeout S] [--seed N] [--dir DIR]\n"
"                       [--keep] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Against a running cluster (scripts/ceph-up starts one; bench/archive\n"
"    runs this with a cluster of its own), on one machine, side by side.\n"
"    First it writes one generation of SIZE bytes of 32-byte keys and\n"
"    value-size-byte values (the store bench's objects) with online delete\n"
"    on, syncs and rotates it, so it is read-only: what a node's archive\n"
"    seals; and it uploads it once under PREFIX-read for the reads. Then\n"
"    each run measures, each section's variants in an order that starts\n"
"    one later each run:\n"
"\n"
"    upload  for each value of inflight: a primary archive opened on the\n"
"            generation under a fresh prefix uploads nudb.dat (inflight\n"
"            asynchronous writes of --piece bytes in flight) and seals it\n"
"            (nudb.key uploaded the same way, a filter of its keys built\n"
"            from the local store and written, the manifest entry). The\n"
"            data's MB/s is nudb.dat's bytes over the time from the open's\n"
"            return to the archive holding all of them (tide_archive_wait);\n"
"            the seal's time is split at the archive's trace points. The\n"
"            prefix's objects are removed after.\n"
"    read    --keys fetches per phase, each timed alone: present keys\n"
"            through tide_store_fetch on the local copy (mapped, page cache\n"
"            warm) and the same keys through tide_archive_fetch (a replica\n"
"            of the read copy, its filter held); absent keys through the\n"
"            archive with the filter, and with a filter budget of 0 (every\n"
"            miss reads a bucket). Each phase's first fetch, which opens the\n"
"            generation (headers, index check, the filter's download), is\n"
"            timed apart. Values are compared with the ones written. Reads\n"
"            per fetch are the RADOS ranged reads (tide_archive_info) or the\n"
"            local file reads (none through the maps).\n"
"    sync    --puts of (tide_node_put, tide_node_sync) on a fresh node\n"
"            (online delete on, the archive on under a fresh prefix), each\n"
"            pair timed, with archive_sync local and archive (the sync also\n"
"            waits until RADOS holds the bytes).\n"
"\n"
"    The summary gives, over the runs, the median (min-max) of each\n"
"    figure, the percentiles p50, p90, p99 and max of each phase's\n"
"    latencies, and ratios taken within each run: each inflight's MB/s\n"
"    over the first's, the archive's hit latency over the local one's, an\n"
"    archive-synced write over a local one. The 1-minute load average is\n"
"    read at the start and after each run.\n"
"\n"
"    The cluster holds at most the read copy and one upload at a time\n"
"    (about 2.5 x SIZE): keep that well under its OSDs' capacity (an OSD\n"
"    of scripts/ceph-up whose file fills aborts; --osd-gib sizes it).\n"
"    Every object the bench writes is removed before it ends.\n"
"\n"
"OPTIONS\n"
"    --conf FILE        the cluster's ceph.conf (required)\n"
"    --pool NAME        the pool, which must exist. Default tide.\n"
"    --prefix P         the objects' names start with P-, 1 to 40\n"
"                       characters of A-Z a-z 0-9 _ -. Default\n"
"                       tide-bench-PID.\n"
"    --size SIZE        the generation's nudb.dat, 1MiB to 2GiB. Default\n"
"                       256MiB.\n"
"    --inflight LIST    the uploads' writes in flight, comma-separated,\n"
"                       each 1 to 256, at most 8. Default 1,4,16.\n"
"    --keys N           fetches per read phase; fewer than the\n"
"                       generation's objects. Default 10000.\n"
"    --puts N           synced puts per write variant. Default 1000.\n"
"    --runs N           runs; the summary takes medians over them.\n"
"                       Default 3.\n"
"    --filter-budget SIZE  the filtered read phases' filter budget (the\n"
"                       unfiltered one has 0). Default 64MiB.\n"
"    --chunk SIZE       the archive's object size, a multiple of 32KiB\n"
"                       from 64KiB to 128MiB. Default 64MiB.\n"
"    --piece SIZE       bytes per write, a multiple of 32KiB up to the\n"
"                       chunk. Default 1MiB.\n"
"    --value-size N     bytes per value, 1 to 65536. Default 200.\n"
"    --timeout S        the archive's RADOS timeout, 1 to 300 s. Default\n"
"                       10.\n"
"    --seed N           data seed, 0 to 2147483647. Default 0.\n"
"    --dir DIR          make the bench directory under DIR (which must\n"
"                       exist). Default: a fresh directory under /tmp.\n"
"    --keep             keep the local directory (a failed run's is always\n"
"                       kept, and its path printed); the pool's objects are\n"
"                       removed whatever this says\n"
"    --json             print the results as one JSON object on stdout, every\n"
"                       run's figures and the summary (the method, the\n"
"                       progress lines and the table go to stderr)\n"
"    -h, --help         print this text\n"
"\n"
"    Memory: the bench's keys, items and latencies (48 bytes a key) are\n"
"    counted under the consumer bench, the archives' write buffers and\n"
"    filters under archive_upload and archive_filters, as a node counts\n"
"    its own; librados' memory is its own (the peak RSS shows it).\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 a call failed, a value differed or a count did not add up;\n"
"    2 usage error (no --conf among them).\n"
"\n"
"EXAMPLES\n"
"    bench/archive\n"
"    tide bench archive --conf /tmp/c/ceph.conf\n"
"    tide bench archive --conf /tmp/c/ceph.conf --size 16MiB --keys 2000 \\\n"
"                       --puts 100 --runs 1 --json\n";

static const struct option archive_options[] = {
    { "conf",          required_argument, NULL, 'c' },
    { "pool",          required_argument, NULL, 'p' },
    { "prefix",        required_argument, NULL, 'P' },
    { "size",          required_argument, NULL, 'S' },
    { "inflight",      required_argument, NULL, 'i' },
    { "keys",          required_argument, NULL, 'K' },
    { "puts",          required_argument, NULL, 'u' },
    { "runs",          required_argument, NULL, 'r' },
    { "filter-budget", required_argument, NULL, 'f' },
    { "chunk",         required_argument, NULL, 'C' },
    { "piece",         required_argument, NULL, 'W' },
    { "value-size",    required_argument, NULL, 'v' },
    { "timeout",       required_argument, NULL, 't' },
    { "seed",          required_argument, NULL, 's' },
    { "dir",           required_argument, NULL, 'd' },
    { "keep",          no_argument,       NULL, 'k' },
    { "json",          no_argument,       NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

typedef struct archive_args {
    tide_bench_archive_opts o;
    int json;
} archive_args;

/* "1,4,16": each 1 to 256, at most 8 of them. */
static int parse_inflight(tide_bench_archive_opts *o, const char *val)
{
    char buf[256], *save = NULL;
    uint64_t v;

    if (strlen(val) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", val);
    o->ninflight = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->ninflight == TIDE_BENCH_ARCHIVE_INFLIGHT_MAX) return -1;
        if (cli_parse_u64(t, 1, 256, &v) != 0) return -1;
        o->inflight[o->ninflight++] = (unsigned)v;
    }
    return o->ninflight ? 0 : -1;
}

/* The options that take a size. */
static int size_option(archive_args *b, int id, const char *val)
{
    uint64_t v;

    if (tide_size_parse(val, &v) != 0)
        return cli_usage("bench", "--%s '%s' is not a size such as 64MiB",
                         id == 'S' ? "size" : id == 'f' ? "filter-budget" : id == 'C' ? "chunk"
                                                                           : "piece", val);
    switch (id) {
    case 'S':
        if (v < TIDE_BENCH_ARCHIVE_SIZE_MIN || v > TIDE_BENCH_ARCHIVE_SIZE_MAX)
            return cli_usage("bench", "--size '%s' is not from 1MiB to 2GiB", val);
        b->o.size = v;
        break;
    case 'f': b->o.filter_budget = v; break;
    case 'C':
        if (v < (64u << 10) || v > (128u << 20) || v % 32768)
            return cli_usage("bench", "--chunk '%s' is not a multiple of 32KiB from 64KiB to 128MiB", val);
        b->o.chunk_bytes = v;
        break;
    default:
        if (v < 32768 || v > (128u << 20) || v % 32768)
            return cli_usage("bench", "--piece '%s' is not a multiple of 32KiB up to 128MiB", val);
        b->o.piece_bytes = v;
        break;
    }
    return CLI_OK;
}

/* The options that take a whole number. */
static int number_option(archive_args *b, int id, const char *val)
{
    static const struct { int id; const char *name; uint64_t min, max; } lim[] = {
        { 'K', "keys", 1, TIDE_BENCH_ARCHIVE_KEYS_MAX }, { 'u', "puts", 1, TIDE_BENCH_ARCHIVE_PUTS_MAX },
        { 'r', "runs", 1, TIDE_BENCH_RUNS_MAX }, { 'v', "value-size", 1, 65536 },
        { 't', "timeout", 1, 300 }, { 's', "seed", 0, (1ull << 31) - 1 },
    };
    uint64_t v = 0;

    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        if (lim[i].id != id) continue;
        if (cli_parse_u64(val, lim[i].min, lim[i].max, &v) != 0)
            return cli_usage("bench", "--%s '%s' is not a whole number from %llu to %llu",
                             lim[i].name, val, (unsigned long long)lim[i].min,
                             (unsigned long long)lim[i].max);
    }
    switch (id) {
    case 'K': b->o.keys = v; break;
    case 'u': b->o.puts = v; break;
    case 'r': b->o.runs = v; break;
    case 'v': b->o.value_size = v; break;
    case 't': b->o.timeout_s = (unsigned)v; break;
    default:  b->o.seed = v; break;
    }
    return CLI_OK;
}

static int archive_option(void *arg, int id, const char *val)
{
    archive_args *b = arg;
    struct stat st;

    switch (id) {
    case 'c':
        if (stat(val, &st) != 0 || !S_ISREG(st.st_mode) || access(val, R_OK) != 0)
            return cli_usage("bench", "--conf '%s' is not a readable file", val);
        b->o.conf = val;
        break;
    case 'p': b->o.pool = val; break;
    case 'P': b->o.prefix = val; break;
    case 'i':
        if (parse_inflight(&b->o, val) != 0)
            return cli_usage("bench", "--inflight '%s' is not a list such as 1,4,16 of at most %u "
                             "numbers from 1 to 256", val, TIDE_BENCH_ARCHIVE_INFLIGHT_MAX);
        break;
    case 'd':
        if (strlen(val) > TIDE_BENCH_PATH_MAX)
            return cli_usage("bench", "--dir: the path is longer than 3000 bytes");
        if (stat(val, &st) != 0 || !S_ISDIR(st.st_mode))
            return cli_usage("bench", "--dir '%s' is not an existing directory", val);
        b->o.parent = val;
        break;
    case 'k': b->o.keep = 1; break;
    case 'j': b->json = 1; break;
    case 'S': case 'f': case 'C': case 'W': return size_option(b, id, val);
    default: return number_option(b, id, val);
    }
    return CLI_OK;
}

static const cli_verb verb_archive = {
    .name = "bench", .usage = "bench archive",
    .summary = "measure the RADOS archive: uploads, reads through it, acknowledged writes",
    .help = help_archive, .options = archive_options, .option = archive_option,
    .args = CLI_ARGS_NONE,
};

/* ---- the text ---- */

static const char *const read_names[TIDE_BA_READS] = {
    "local hit", "archive hit", "archive miss, filter", "archive miss, no filter" };
static const char *const read_json[TIDE_BA_READS] = {
    "local_hit", "archive_hit", "archive_miss_filter", "archive_miss_no_filter" };
static const char *const sync_names[TIDE_BA_SYNCS] = { "local", "archive" };

static const char *hs(double bytes, char *buf, size_t cap)
{
    return tide_size_format(bytes < 0 ? 0 : (uint64_t)(bytes + 0.5), buf, cap);
}

static void print_header(FILE *o, const tide_bench_archive *b)
{
    const tide_bench_archive_opts *c = &b->opts;
    char list[64] = "", s1[32], s2[32], s3[32], s4[32], s5[32], s6[32];

    for (unsigned i = 0; i < c->ninflight; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? "," : "", c->inflight[i]);
    fprintf(o, "method: one generation of %llu objects (32-byte keys, %llu-byte values; nudb.dat %s, "
            "nudb.key %s) written with online delete (%.1f s), synced and rotated, uploaded once "
            "under %s-read for the reads; per run, each section's variants interleaved (the first "
            "moves one each run): UPLOAD at inflight {%s} (pieces %s, chunks %s) under a fresh "
            "prefix each, removed after; READ %llu fetches per phase, each timed alone "
            "(CLOCK_MONOTONIC): local hit (tide_store_fetch, mapped, warm), archive hit, miss with "
            "the filter (budget %s) and without (budget 0) (tide_archive_fetch through a replica); "
            "SYNC %llu x (tide_node_put + tide_node_sync), archive_sync local and archive, a fresh "
            "node each; %llu run%s, seed %llu\n",
            (unsigned long long)b->items, (unsigned long long)c->value_size,
            hs((double)b->dat_bytes, s1, sizeof s1), hs((double)b->key_bytes, s2, sizeof s2),
            (double)b->fill_ns / 1e9, b->prefix, list, hs((double)c->piece_bytes, s3, sizeof s3),
            hs((double)c->chunk_bytes, s4, sizeof s4), (unsigned long long)c->keys,
            hs((double)c->filter_budget, s5, sizeof s5), (unsigned long long)c->puts,
            (unsigned long long)c->runs, c->runs == 1 ? "" : "s", (unsigned long long)c->seed);
    fprintf(o, "machine: %ld CPUs, %s; load average %.2f %.2f %.2f at the start; dir %s\n",
            b->nproc, b->kernel, b->load_begin[0], b->load_begin[1], b->load_begin[2], b->dir);
    fprintf(o, "cluster: %s, pool %s, RADOS timeout %u s; the bench's buffers %s (consumer bench)\n",
            c->conf, c->pool, c->timeout_s, hs((double)b->held, s6, sizeof s6));
    fflush(o);
}

static void print_run(FILE *o, const tide_bench_archive *b, unsigned r)
{
    const tide_bench_archive_result *x = &b->runs[r - 1];
    unsigned runs = (unsigned)b->opts.runs;
    char s1[32];

    for (unsigned v = 0; v < b->opts.ninflight; v++) {
        const tide_bench_archive_upload *u = &x->up[v];
        fprintf(o, "run %u/%u upload inflight=%-3u data %.1f MB/s (%.3f s)  seal %.3f s (key %.3f, "
                "filter %.3f, manifest %.3f)  open %.1f ms  writes %llu  buffers %s\n", r, runs,
                u->inflight, u->data_ns ? (double)u->dat_bytes * 1e3 / (double)u->data_ns : 0,
                (double)u->data_ns / 1e9, (double)(u->key_ns + u->filter_ns + u->manifest_ns) / 1e9,
                (double)u->key_ns / 1e9, (double)u->filter_ns / 1e9, (double)u->manifest_ns / 1e9,
                (double)u->open_ns / 1e6, (unsigned long long)u->writes,
                hs((double)u->upload_buffers, s1, sizeof s1));
    }
    for (int id = 0; id < TIDE_BA_READS; id++) {
        const tide_bench_archive_read *p = &x->rd[id];
        fprintf(o, "run %u/%u read %-24s p50 %.1f p90 %.1f p99 %.1f max %.1f us  reads/fetch %.3f  "
                "found %llu  filtered %llu  first fetch %.1f ms (%llu reads)\n", r, runs,
                read_names[id], (double)p->p50_ns / 1e3, (double)p->p90_ns / 1e3,
                (double)p->p99_ns / 1e3, (double)p->max_ns / 1e3,
                p->fetches ? (double)p->reads / (double)p->fetches : 0,
                (unsigned long long)p->found, (unsigned long long)p->filtered,
                (double)p->open_ns / 1e6, (unsigned long long)p->open_reads);
    }
    for (int w = 0; w < TIDE_BA_SYNCS; w++) {
        const tide_bench_archive_sync *p = &x->sy[w];
        fprintf(o, "run %u/%u sync archive_sync=%-8s p50 %.2f p90 %.2f p99 %.2f max %.2f ms  "
                "archive waits %llu\n", r, runs, sync_names[w], (double)p->p50_ns / 1e6,
                (double)p->p90_ns / 1e6, (double)p->p99_ns / 1e6, (double)p->max_ns / 1e6,
                (unsigned long long)p->archive_waits);
    }
    fprintf(o, "run %u/%u load average %.2f\n", r, runs, x->load1);
    fflush(o);
}

/* "median (min-max)" with fmt for each number. */
static const char *cell(char *buf, size_t cap, const char *fmt, tide_bench_stat s)
{
    char f3[64];

    snprintf(f3, sizeof f3, "%s (%s-%s)", fmt, fmt, fmt);
    snprintf(buf, cap, f3, s.median, s.min, s.max);
    return buf;
}

static void print_uploads(FILE *o, const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    char c1[64], c2[64], c3[64], c4[64], s1[32], s2[32];

    fprintf(o, "upload of the sealed generation (nudb.dat %s, nudb.key %s):\n",
           hs((double)b->dat_bytes, s1, sizeof s1), hs((double)b->key_bytes, s2, sizeof s2));
    fprintf(o, "  %-9s %-22s %-19s %-22s %-24s %s\n", "inflight", "data MB/s", "vs the first",
           "seal s", "key + filter + manifest", "open ms");
    for (unsigned v = 0; v < b->opts.ninflight; v++) {
        char parts[96];
        snprintf(parts, sizeof parts, "%.3f + %.3f + %.3f", s->up[v].key_s.median,
                 s->up[v].filter_s.median, s->up[v].manifest_s.median);
        fprintf(o, "  %-9u %-22s %-19s %-22s %-24s %s\n", b->opts.inflight[v],
               cell(c1, sizeof c1, "%.1f", s->up[v].mb_s), cell(c2, sizeof c2, "%.2f", s->up[v].vs_first),
               cell(c3, sizeof c3, "%.3f", s->up[v].seal_s), parts,
               cell(c4, sizeof c4, "%.1f", s->up[v].open_ms));
    }
}

static void print_reads(FILE *o, const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    char c[5][64];

    fprintf(o, "reads: %llu fetches per phase, each timed alone, us:\n", (unsigned long long)b->opts.keys);
    fprintf(o, "  %-24s %-22s %-22s %-22s %8s %12s  %s\n", "phase", "p50", "p90", "p99", "max",
           "reads/fetch", "first fetch ms");
    for (int id = 0; id < TIDE_BA_READS; id++)
        fprintf(o, "  %-24s %-22s %-22s %-22s %8.0f %12.3f  %s\n", read_names[id],
               cell(c[0], sizeof c[0], "%.1f", s->rd[id].p50_us),
               cell(c[1], sizeof c[1], "%.1f", s->rd[id].p90_us),
               cell(c[2], sizeof c[2], "%.1f", s->rd[id].p99_us), s->rd[id].max_us.median,
               s->rd[id].reads.median, cell(c[3], sizeof c[3], "%.1f", s->rd[id].open_ms));
    fprintf(o, "  archive hit / local hit: p50 %s, p99 %s (within each run)\n",
           cell(c[0], sizeof c[0], "%.1fx", s->hit_vs_local_p50),
           cell(c[1], sizeof c[1], "%.1fx", s->hit_vs_local_p99));
}

static void print_syncs(FILE *o, const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    char c[4][64];

    fprintf(o, "acknowledged writes: %llu x (tide_node_put + tide_node_sync), ms:\n",
           (unsigned long long)b->opts.puts);
    fprintf(o, "  %-24s %-22s %-22s %-22s %8s\n", "archive_sync", "p50", "p90", "p99", "max");
    for (int w = 0; w < TIDE_BA_SYNCS; w++)
        fprintf(o, "  %-24s %-22s %-22s %-22s %8.2f\n", sync_names[w],
               cell(c[0], sizeof c[0], "%.2f", s->sy[w].p50_ms),
               cell(c[1], sizeof c[1], "%.2f", s->sy[w].p90_ms),
               cell(c[2], sizeof c[2], "%.2f", s->sy[w].p99_ms), s->sy[w].max_ms.median);
    fprintf(o, "  archive / local: p50 %s, p99 %s (within each run)\n",
           cell(c[0], sizeof c[0], "%.2fx", s->sync_vs_local_p50),
           cell(c[1], sizeof c[1], "%.2fx", s->sync_vs_local_p99));
}

static void print_summary(FILE *o, const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    char s1[32], s2[32], s3[32], s4[32], s5[32];
    uint64_t anon = 0, file = 0;

    for (size_t r = 0; r < s->runs; r++) {
        if (b->runs[r].peak_anon > anon) anon = b->runs[r].peak_anon;
        if (b->runs[r].peak_file > file) file = b->runs[r].peak_file;
    }
    fprintf(o, "\nsummary over %zu run%s: median (min-max); max: the median of the runs' maxima\n",
           s->runs, s->runs == 1 ? "" : "s");
    print_uploads(o, b, s);
    print_reads(o, b, s);
    print_syncs(o, b, s);
    fprintf(o, "memory: write buffers %s at inflight %u (archive_upload), filter %s (archive_filters), "
           "the bench's %s (bench); peak RSS anon %s, file %s (every run)\n",
           hs((double)b->runs[0].up[b->opts.ninflight - 1].upload_buffers, s1, sizeof s1),
           b->opts.inflight[b->opts.ninflight - 1],
           hs((double)b->runs[0].rd[TIDE_BA_HIT].filter_memory, s2, sizeof s2),
           hs((double)b->held, s3, sizeof s3), hs((double)anon, s4, sizeof s4),
           hs((double)file, s5, sizeof s5));
    fprintf(o, "load average: %.2f at the start; %.2f (%.2f-%.2f) after the runs\n", b->load_begin[0],
           s->load1.median, s->load1.min, s->load1.max);
}

/* ---- the JSON ---- */

static json_t *j_stat(tide_bench_stat s)
{
    return json_pack("{s:f, s:f, s:f}", "median", s.median, "min", s.min, "max", s.max);
}

static json_t *j_upload(const tide_bench_archive_upload *u)
{
    return json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "inflight", (int)u->inflight, "dat_bytes", (json_int_t)u->dat_bytes,
                     "key_bytes", (json_int_t)u->key_bytes, "filter_bytes", (json_int_t)u->filter_bytes,
                     "open_ns", (json_int_t)u->open_ns, "data_ns", (json_int_t)u->data_ns,
                     "key_ns", (json_int_t)u->key_ns, "filter_ns", (json_int_t)u->filter_ns,
                     "manifest_ns", (json_int_t)u->manifest_ns, "writes", (json_int_t)u->writes,
                     "upload_buffers_bytes", (json_int_t)u->upload_buffers);
}

static json_t *j_read(const tide_bench_archive_read *p)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "fetches", (json_int_t)p->fetches, "found", (json_int_t)p->found,
                     "filtered", (json_int_t)p->filtered, "reads", (json_int_t)p->reads,
                     "read_bytes", (json_int_t)p->read_bytes, "open_ns", (json_int_t)p->open_ns,
                     "open_reads", (json_int_t)p->open_reads,
                     "filter_memory_bytes", (json_int_t)p->filter_memory,
                     "p50_ns", (json_int_t)p->p50_ns, "p90_ns", (json_int_t)p->p90_ns,
                     "p99_ns", (json_int_t)p->p99_ns, "max_ns", (json_int_t)p->max_ns,
                     "total_ns", (json_int_t)p->total_ns);
}

static json_t *j_sync(const tide_bench_archive_sync *p)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "puts", (json_int_t)p->puts,
                     "archive_waits", (json_int_t)p->archive_waits, "archive_failed",
                     (json_int_t)p->archive_failed, "p50_ns", (json_int_t)p->p50_ns, "p90_ns",
                     (json_int_t)p->p90_ns, "p99_ns", (json_int_t)p->p99_ns, "max_ns",
                     (json_int_t)p->max_ns, "total_ns", (json_int_t)p->total_ns);
}

static json_t *j_runs(const tide_bench_archive *b)
{
    json_t *runs = json_array();

    for (unsigned r = 0; r < b->opts.runs; r++) {
        const tide_bench_archive_result *x = &b->runs[r];
        json_t *o = json_object(), *up = json_array(), *rd = json_object(), *sy = json_object();
        for (unsigned v = 0; v < b->opts.ninflight; v++) json_array_append_new(up, j_upload(&x->up[v]));
        for (int id = 0; id < TIDE_BA_READS; id++) json_object_set_new(rd, read_json[id], j_read(&x->rd[id]));
        for (int w = 0; w < TIDE_BA_SYNCS; w++) json_object_set_new(sy, sync_names[w], j_sync(&x->sy[w]));
        json_object_set_new(o, "run", json_integer(r + 1));
        json_object_set_new(o, "upload", up);
        json_object_set_new(o, "read", rd);
        json_object_set_new(o, "sync", sy);
        json_object_set_new(o, "load1", json_real(x->load1));
        json_object_set_new(o, "peak_rss_anon_bytes", json_integer((json_int_t)x->peak_anon));
        json_object_set_new(o, "peak_rss_file_bytes", json_integer((json_int_t)x->peak_file));
        json_array_append_new(runs, o);
    }
    return runs;
}

static json_t *j_summary(const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    json_t *o = json_object(), *up = json_array(), *rd = json_object(), *sy = json_object();

    for (unsigned v = 0; v < b->opts.ninflight; v++)
        json_array_append_new(up, json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
            "inflight", (int)b->opts.inflight[v], "data_mb_per_s", j_stat(s->up[v].mb_s),
            "vs_first", j_stat(s->up[v].vs_first), "open_ms", j_stat(s->up[v].open_ms),
            "data_s", j_stat(s->up[v].data_s), "seal_s", j_stat(s->up[v].seal_s),
            "key_s", j_stat(s->up[v].key_s), "filter_s", j_stat(s->up[v].filter_s),
            "manifest_s", j_stat(s->up[v].manifest_s)));
    for (int id = 0; id < TIDE_BA_READS; id++)
        json_object_set_new(rd, read_json[id], json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
            "p50_us", j_stat(s->rd[id].p50_us), "p90_us", j_stat(s->rd[id].p90_us),
            "p99_us", j_stat(s->rd[id].p99_us), "max_us", j_stat(s->rd[id].max_us),
            "reads_per_fetch", j_stat(s->rd[id].reads), "first_fetch_ms", j_stat(s->rd[id].open_ms)));
    json_object_set_new(rd, "hit_vs_local_p50", j_stat(s->hit_vs_local_p50));
    json_object_set_new(rd, "hit_vs_local_p99", j_stat(s->hit_vs_local_p99));
    for (int w = 0; w < TIDE_BA_SYNCS; w++)
        json_object_set_new(sy, sync_names[w], json_pack("{s:o, s:o, s:o, s:o}",
            "p50_ms", j_stat(s->sy[w].p50_ms), "p90_ms", j_stat(s->sy[w].p90_ms),
            "p99_ms", j_stat(s->sy[w].p99_ms), "max_ms", j_stat(s->sy[w].max_ms)));
    json_object_set_new(sy, "archive_vs_local_p50", j_stat(s->sync_vs_local_p50));
    json_object_set_new(sy, "archive_vs_local_p99", j_stat(s->sync_vs_local_p99));
    json_object_set_new(o, "upload", up);
    json_object_set_new(o, "read", rd);
    json_object_set_new(o, "sync", sy);
    json_object_set_new(o, "load1", j_stat(s->load1));
    return o;
}

static json_t *j_method(const tide_bench_archive *b)
{
    const tide_bench_archive_opts *c = &b->opts;
    json_t *il = json_array();

    for (unsigned i = 0; i < c->ninflight; i++) json_array_append_new(il, json_integer(c->inflight[i]));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s}",
        "size", (json_int_t)c->size, "items", (json_int_t)b->items, "key_size",
        (json_int_t)TIDE_BENCH_KEY_SIZE, "value_size", (json_int_t)c->value_size, "dat_bytes",
        (json_int_t)b->dat_bytes, "key_bytes", (json_int_t)b->key_bytes, "inflight", il,
        "piece_bytes", (json_int_t)c->piece_bytes, "chunk_bytes", (json_int_t)c->chunk_bytes,
        "keys", (json_int_t)c->keys, "puts", (json_int_t)c->puts, "filter_budget",
        (json_int_t)c->filter_budget, "runs", (json_int_t)c->runs, "seed", (json_int_t)c->seed,
        "pool", c->pool, "prefix", b->prefix,
        "order", "each section's variants interleaved per run, the first moving one each run");
}

static int print_json(const tide_bench_archive *b, const tide_bench_archive_summary *s)
{
    json_t *root = json_object();
    int rc;

    json_object_set_new(root, "bench", json_string("archive"));
    json_object_set_new(root, "method", j_method(b));
    json_object_set_new(root, "machine", json_pack("{s:I, s:s, s:[f, f, f]}", "nproc",
                        (json_int_t)b->nproc, "kernel", b->kernel, "load_at_start",
                        b->load_begin[0], b->load_begin[1], b->load_begin[2]));
    json_object_set_new(root, "fill_ns", json_integer((json_int_t)b->fill_ns));
    json_object_set_new(root, "bench_buffers_bytes", json_integer((json_int_t)b->held));
    json_object_set_new(root, "dir", json_string(b->dir));
    json_object_set_new(root, "runs", j_runs(b));
    json_object_set_new(root, "summary", j_summary(b, s));
    rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    putchar('\n');
    if (rc != 0) return cli_error("bench", "cannot write the JSON output");
    return CLI_OK;
}

/* ---- the verb ---- */

/* Begin, every run with its lines, the summary; a failure printed here (3). */
static int archive_bench(tide_bench_archive *b, const archive_args *ba)
{
    FILE *o = ba->json ? stderr : stdout;
    tide_bench_archive_summary s;
    int rc;

    if ((rc = tide_bench_archive_begin(b, &ba->o)) != 0) return cli_fail("bench", rc);
    print_header(o, b);
    for (unsigned r = 1; r <= ba->o.runs; r++) {
        if ((rc = tide_bench_archive_run(b, r)) != 0) {
            cli_fail("bench", rc);
            return CLI_FAIL;
        }
        print_run(o, b, r);
    }
    tide_bench_archive_summarize(b, &s);
    print_summary(o, b, &s);
    if (ba->json && (rc = print_json(b, &s)) != CLI_OK) return rc;
    if (ba->o.keep) fprintf(o, "kept: %s\n", b->dir);
    return CLI_OK;
}

int cli_bench_archive_main(int argc, char **argv)
{
    tide_bench_archive b;
    archive_args ba;
    cli_args a;
    int rc;

    memset(&ba, 0, sizeof ba);
    tide_bench_archive_opts_init(&ba.o);
    if (cli_parse(&verb_archive, argc, argv, &ba, &a, &rc)) return rc;
    if (ba.o.conf == NULL)
        return cli_usage("bench", "--conf FILE is required: the ceph.conf of a running cluster "
                         "(scripts/ceph-up DIR prints CEPH_CONF=DIR/ceph.conf; bench/archive starts "
                         "one and runs this)");
    rc = archive_bench(&b, &ba);
    tide_bench_archive_end(&b);
    return rc;
}
