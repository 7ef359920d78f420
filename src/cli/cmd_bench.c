/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_bench.c: `tide bench store`, the store benchmark's command line.
 *
 * The bench itself (the workload, the timing, the measurements, the
 * medians) is src/bench/bench_store.c. This file parses the options into a
 * tide_bench_store_opts, calls begin, run (per run) and summarize, and
 * prints: a header that states the method, the machine and where each
 * figure comes from; one line per phase of each run as it ends; then the
 * summary as a table, or with --json as one document.
 *
 * Invariants:
 *   1. Nothing is printed that the output does not name with its source.
 *   2. With --json, stdout carries exactly one JSON document; the header and
 *      the per-run lines go to stderr.
 *   3. After a failure the path of the store left for inspection is printed.
 *
 * Never: print a summary after a failed run: the first failure ends the
 *   bench with exit 1.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench_gens.h"
#include "bench/bench_store.h"
#include "cli/cli.h"
#include "gen/manifest.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/size.h"

static const char help_bench[] =
"NAME\n"
"    tide bench store - measure the store: throughput, memory, writes\n"
"\n"
"SYNOPSIS\n"
"    tide bench store [--items N] [--value-size N] [--block-size N]\n"
"                     [--runs N] [--dir DIR] [--burst SIZE] [--seed N]\n"
"                     [--fetch-threads N] [--pread] [--keep] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Each run creates a fresh store (key size 32, load factor 0.5) in its\n"
"    own directory and runs two phases, LOAD on one thread, FETCH on one\n"
"    (or --fetch-threads):\n"
"\n"
"    LOAD   inserts N items, then tide_store_sync(); timed from the first\n"
"           insert to the return of the sync. Keys are 32 random bytes,\n"
"           values value-size random bytes, both from splitmix64 streams\n"
"           of the item's index (the formula of tests/fixtures/nudb), so\n"
"           the values are made on the fly and never held by the bench;\n"
"           the keys are made on the fly too.\n"
"    FETCH  fetches every key once in a shuffled order (a keyed Feistel\n"
"           permutation of the indexes; with N threads each takes 1/N of\n"
"           it) and compares each\n"
"           value byte for byte with the one inserted (a mismatch stops\n"
"           the bench with exit status 1). The page cache is warm.\n"
"\n"
"    For each phase it reports: items/s; the CPU time of the process\n"
"    (getrusage: user + system, every thread, the store's commit thread\n"
"    included) in seconds and in microseconds per item; peak RSS split\n"
"    into anonymous and file-backed memory (a sampler thread reads\n"
"    /proc/self/status every 10 ms and keeps the maximum; VmHWM is reset\n"
"    before the phase through /proc/self/clear_refs where permitted, and\n"
"    reported too); bytes written, from /proc/self/io (write_bytes: sent\n"
"    to the storage layer; wchar: passed to write calls), from the store's\n"
"    own counter, and from the block device holding DIR\n"
"    (/sys/dev/block/MAJ:MIN/stat; it counts every process's writes, so\n"
"    keep the machine quiet); and the commits and syncs the store made.\n"
"\n"
"    After the runs it prints a summary: median and range (min-max) of\n"
"    items/s per phase, the durability mode, the file sizes, peak RSS,\n"
"    bytes written, and the write amplification of the load: device bytes\n"
"    written / (N x (32 + value-size)), and the same from write_bytes.\n"
"\n"
"OPTIONS\n"
"    --items N        items per run. Default 100000.\n"
"    --value-size N   bytes per value (1MB, 4KiB forms accepted). Default\n"
"                     200.\n"
"    --block-size N   key-file block size, as for tide create (invalid\n"
"                     values warn and use 4096). Default 4096.\n"
"    --runs N         runs; the summary takes medians over them. Default 3.\n"
"    --dir DIR        make the bench directory under DIR (which must\n"
"                     exist). Default: a fresh directory under /tmp.\n"
"    --burst SIZE     insert pool bound (tide_store_opts.burst_bytes), e.g.\n"
"                     16MiB. Default 16 MiB.\n"
"    --seed N         data seed, 0 to 2147483647; 0 gives the keys of the\n"
"                     fixtures' formula. Default 0.\n"
"    --fetch-threads N  run FETCH on N threads (1 to 64), each fetching its\n"
"                     slice of the one shuffled order. Default 1.\n"
"    --pread          open the store with pread: lookups read nudb.key's\n"
"                     buckets and nudb.dat's records with pread instead of\n"
"                     reading them in place in the mapped files (to compare\n"
"                     the two). Default: the maps.\n"
"    --keep           keep the stores (default: each is removed after its\n"
"                     run; a failed run's store is always kept, and its\n"
"                     path printed)\n"
"    --json           print the results as one JSON object on stdout (the\n"
"                     progress lines go to stderr)\n"
"    -h, --help       print this text\n"
"\n"
"    Memory: the bench holds O(1) memory of its own (keys, values and the\n"
"    shuffled order are computed per item), so the RSS it reports is the\n"
"    store's.\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 a store call failed or a fetched value differed; 2 usage\n"
"    error.\n"
"\n"
"EXAMPLES\n"
"    tide bench store\n"
"    tide bench store --items 20000 --runs 3\n"
"    tide bench store --items 1000000 --value-size 1KiB --block-size 16384 \\\n"
"                     --dir /mnt/nvme --json > bench.json\n";

static const struct option options[] = {
    { "items",      required_argument, NULL, 'n' },
    { "value-size", required_argument, NULL, 'v' },
    { "block-size", required_argument, NULL, 'b' },
    { "runs",       required_argument, NULL, 'r' },
    { "dir",        required_argument, NULL, 'd' },
    { "burst",      required_argument, NULL, 'B' },
    { "seed",       required_argument, NULL, 's' },
    { "keep",       no_argument,       NULL, 'k' },
    { "fetch-threads", required_argument, NULL, 'T' },
    { "pread",      no_argument,       NULL, 'P' },
    { "json",       no_argument,       NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

typedef struct bench_args {
    tide_bench_store_opts o;
    int json;
} bench_args;

/* The options that take a size or a path. */
static int option_value(tide_bench_store_opts *o, int id, const char *val)
{
    char warning[256];
    struct stat st;
    uint64_t v;

    switch (id) {
    case 'v':
        if (tide_size_parse(val, &v) != 0 || v < 1 || v > TIDE_VALUE_MAX)
            return cli_usage("bench", "--value-size '%s' is not a size from 1 byte to %llu "
                             "bytes", val, (unsigned long long)TIDE_VALUE_MAX);
        o->value_size = v;
        break;
    case 'b':
        o->block_size = tide_block_size_parse(val, warning, sizeof warning);
        if (warning[0]) fprintf(stderr, "tide bench: warning: %s\n", warning);
        break;
    case 'd':
        if (strlen(val) > TIDE_BENCH_PATH_MAX)
            return cli_usage("bench", "--dir: the path is longer than 3000 bytes");
        if (stat(val, &st) != 0 || !S_ISDIR(st.st_mode))
            return cli_usage("bench", "--dir '%s' is not an existing directory", val);
        o->parent = val;
        break;
    default:
        if (tide_size_parse(val, &v) != 0 || v < 1 || v > (uint64_t)SIZE_MAX / 2)
            return cli_usage("bench", "--burst '%s' is not a size such as 16MiB", val);
        o->burst = v;
        break;
    }
    return CLI_OK;
}

static int option(void *arg, int id, const char *val)
{
    bench_args *b = arg;

    switch (id) {
    case 'n':
        if (cli_parse_u64(val, 1, UINT32_MAX, &b->o.items) != 0)
            return cli_usage("bench", "--items '%s' is not a whole number from 1 to %u",
                             val, UINT32_MAX);
        break;
    case 'r':
        if (cli_parse_u64(val, 1, TIDE_BENCH_RUNS_MAX, &b->o.runs) != 0)
            return cli_usage("bench", "--runs '%s' is not a whole number from 1 to 1000", val);
        break;
    case 's':
        if (cli_parse_u64(val, 0, (1ull << 31) - 1, &b->o.seed) != 0)
            return cli_usage("bench", "--seed '%s' is not a whole number from 0 to 2147483647",
                             val);
        break;
    case 'T': {
        uint64_t v;
        if (cli_parse_u64(val, 1, 64, &v) != 0)
            return cli_usage("bench", "--fetch-threads '%s' is not a whole number from 1 to 64", val);
        b->o.fetch_threads = (unsigned)v;
        break;
    }
    case 'P': b->o.pread = 1; break;
    case 'k': b->o.keep = 1; break;
    case 'j': b->json = 1; break;
    default:  return option_value(&b->o, id, val);
    }
    return CLI_OK;
}

/* ---- figures ---- */

/* The summary's rows, in the order printed, each a tide_bench_metric. A
 * NULL format is a row of bytes. */
static const struct row {
    int metric;
    const char *label, *fmt, *json;
} rows[] = {
    { TIDE_BENCH_ITEMS_PER_S,   "items/s",                 "%.0f", "items_per_s" },
    { TIDE_BENCH_SECONDS,       "seconds",                 "%.3f", "seconds" },
    { TIDE_BENCH_PEAK_ANON,     "peak RSS anon (sampled)", NULL,   "peak_rss_anon_bytes" },
    { TIDE_BENCH_PEAK_FILE,     "peak RSS file (sampled)", NULL,   "peak_rss_file_bytes" },
    { TIDE_BENCH_VM_HWM,        "VmHWM (reset per phase)", NULL,   "vm_hwm_bytes" },
    { TIDE_BENCH_DEV_WRITTEN,   "written: device",         NULL,   "device_bytes_written" },
    { TIDE_BENCH_WRITE_BYTES,   "written: io write_bytes", NULL,   "io_write_bytes" },
    { TIDE_BENCH_WCHAR,         "written: io wchar",       NULL,   "io_wchar" },
    { TIDE_BENCH_STORE_WRITTEN, "written: store counter",  NULL,   "store_bytes_written" },
    { TIDE_BENCH_COMMITS,       "commits",                 "%.0f", "commits" },
    { TIDE_BENCH_SYNCS,         "syncs",                   "%.0f", "syncs" },
    { TIDE_BENCH_CPU_US,        "CPU us/item (process)",   "%.2f", "cpu_us_per_item" },
};

static const char *hs(double bytes, char *buf, size_t cap)
{
    return tide_size_format(bytes < 0 ? 0 : (uint64_t)(bytes + 0.5), buf, cap);
}

static void durability_text(const tide_bench_store_opts *o, char *out, size_t cap)
{
    char b1[32];
    snprintf(out, cap, "commit every %u ms (sooner when the %s insert pool fills) with fdatasync, "
             "sync at end", TIDE_COMMIT_INTERVAL_DEFAULT_MS, hs((double)o->burst, b1, sizeof b1));
}

static void device_text(const tide_bench_store *b, char *out, size_t cap)
{
    const tide_mem_proc_blockdev *d = &b->dev;

    if (b->dev_ok && d->is_partition)
        snprintf(out, cap, "%s %u:%u, a partition of %s", d->name, d->major, d->minor,
                 d->parent_name);
    else if (b->dev_ok)
        snprintf(out, cap, "%s %u:%u", d->name, d->major, d->minor);
    else
        snprintf(out, cap, "counters unreadable: %s", b->dev_error);
}

/* ---- the text ---- */

static void print_header(FILE *o, const tide_bench_store *b)
{
    const tide_bench_store_opts *c = &b->opts;
    char b1[32], devdesc[600], durability[200], reset_note[600] = "";

    device_text(b, devdesc, sizeof devdesc);
    durability_text(c, durability, sizeof durability);
    if (!b->can_reset)
        snprintf(reset_note, sizeof reset_note, " (VmHWM not reset: %s; it is the process's "
                 "lifetime peak)", b->reset_error);
    fprintf(o, "method: per run a fresh store (key size %u, load factor %.1f, block size %u, "
            "burst %s); LOAD = %llu inserts of %u-byte keys and %llu-byte values + "
            "tide_store_sync, timed together; FETCH = %llu fetches in a shuffled order on %u "
            "thread%s, every value compared, warm page cache, nudb.key %s; value generation "
            "(%.0f ns/item) is "
            "inside both timings; %llu run%s, seed %llu\n",
            TIDE_BENCH_KEY_SIZE, TIDE_BENCH_LOAD_FACTOR, c->block_size,
            hs((double)c->burst, b1, sizeof b1), (unsigned long long)c->items,
            TIDE_BENCH_KEY_SIZE, (unsigned long long)c->value_size, (unsigned long long)c->items,
            c->fetch_threads, c->fetch_threads == 1 ? "" : "s",
            c->pread ? "read with pread (--pread)" : "mapped", b->gen_ns, (unsigned long long)c->runs, c->runs == 1 ? "" : "s",
            (unsigned long long)c->seed);
    fprintf(o, "machine: %ld CPUs, %s; dir %s on %s\n", b->nproc, b->kernel, b->dir, devdesc);
    fprintf(o, "memory: peak RSS from /proc/self/status every %u ms%s; the bench generates "
            "keys, values and the fetch order on the fly and holds O(1) memory of its own\n",
            TIDE_BENCH_SAMPLE_US / 1000, reset_note);
    fprintf(o, "durability: %s\n", durability);
    fflush(o);
}

static void print_phase_line(FILE *o, unsigned run, unsigned runs, const char *name,
                             const tide_bench_phase *p)
{
    char a[32], fl[32], h[32], d[32], wb[32], wc[32], sw[32];
    fprintf(o, "run %u/%u %-5s %10.0f items/s %8.3f s  cpu %.3f s %.2f us/item  commits %llu "
            "syncs %llu  peak anon %s file %s HWM %s  written: device %s write_bytes %s wchar %s "
            "store %s\n",
            run, runs, name, p->items_per_s, p->secs, p->cpu_secs, p->cpu_us_per_item,
            (unsigned long long)p->commits,
            (unsigned long long)p->syncs, hs((double)p->peak_anon, a, sizeof a),
            hs((double)p->peak_file, fl, sizeof fl), hs((double)p->vm_hwm, h, sizeof h),
            p->dev_ok ? hs((double)p->dev_written, d, sizeof d) : "n/a",
            p->dev_bytes_ok ? hs((double)p->write_bytes, wb, sizeof wb) : "n/a",
            p->io_ok ? hs((double)p->wchar, wc, sizeof wc) : "n/a",
            hs((double)p->store_written, sw, sizeof sw));
    fflush(o);
}

/* One row of the table: LOAD's and FETCH's median (min-max). */
static void print_row(const struct row *r, const char *label, const tide_bench_summary *s)
{
    char m[32], lo[32], hi[32], cell[2][128], f3[64];
    const tide_bench_stat *v[2] = { &s->load[r->metric], &s->fetch[r->metric] };

    if (r->fmt) snprintf(f3, sizeof f3, "%s (%s-%s)", r->fmt, r->fmt, r->fmt);
    for (int k = 0; k < 2; k++) {
        if (r->fmt)
            snprintf(cell[k], sizeof cell[k], f3, v[k]->median, v[k]->min, v[k]->max);
        else if (!s->ok[r->metric])
            snprintf(cell[k], sizeof cell[k], "n/a");
        else
            snprintf(cell[k], sizeof cell[k], "%s (%s-%s)", hs(v[k]->median, m, sizeof m),
                     hs(v[k]->min, lo, sizeof lo), hs(v[k]->max, hi, sizeof hi));
    }
    printf("  %-28s %-34s %s\n", label, cell[0], cell[1]);
}

static void print_summary(const tide_bench_store *b, const tide_bench_summary *s)
{
    const tide_bench_store_opts *c = &b->opts;
    char b1[32], b2[32], b3[32], devdesc[600], durability[200];

    device_text(b, devdesc, sizeof devdesc);
    durability_text(c, durability, sizeof durability);
    printf("\nsummary over %zu run%s: median (min-max)\n", s->runs, s->runs == 1 ? "" : "s");
    printf("  %-28s %-34s %s\n", "", "LOAD", "FETCH");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        print_row(&rows[i], rows[i].metric == TIDE_BENCH_VM_HWM && !b->can_reset
                  ? "VmHWM (lifetime)" : rows[i].label, s);
    printf("  %-28s %s\n", "durability", durability);
    printf("  %-28s data file %s, key file %s (%llu buckets)\n", "files after LOAD",
           hs(s->dat_bytes.median, b1, sizeof b1), hs(s->key_bytes.median, b2, sizeof b2),
           (unsigned long long)s->buckets);
    printf("  %-28s %s (%llu x (32 + %llu))\n", "payload", hs((double)s->payload, b3, sizeof b3),
           (unsigned long long)c->items, (unsigned long long)c->value_size);
    if (s->ok[TIDE_BENCH_DEV_WRITTEN])
        printf("  %-28s %.2f (%.2f-%.2f)  device bytes written / payload\n",
               "write amplification", s->wa_device.median, s->wa_device.min, s->wa_device.max);
    else
        printf("  %-28s n/a from the device (%s)\n", "write amplification", devdesc);
    if (s->ok[TIDE_BENCH_WRITE_BYTES])
        printf("  %-28s %.2f (%.2f-%.2f)  /proc/self/io write_bytes / payload\n", "",
               s->wa_write_bytes.median, s->wa_write_bytes.min, s->wa_write_bytes.max);
    printf("  %-28s %.2f (%.2f-%.2f)  store bytes written / payload\n", "",
           s->wa_store.median, s->wa_store.min, s->wa_store.max);
}

/* ---- the JSON ---- */

static json_t *j_stat(tide_bench_stat s)
{
    return json_pack("{s:f, s:f, s:f}", "median", s.median, "min", s.min, "max", s.max);
}

static json_t *j_stat_or_null(tide_bench_stat s, int ok)
{
    return ok ? j_stat(s) : json_null();
}

static json_t *j_phase(const tide_bench_phase *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "seconds", json_real(p->secs));
    json_object_set_new(o, "items_per_s", json_real(p->items_per_s));
    json_object_set_new(o, "cpu_seconds", json_real(p->cpu_secs));
    json_object_set_new(o, "cpu_us_per_item", json_real(p->cpu_us_per_item));
    json_object_set_new(o, "rss_anon_start_bytes", json_integer((json_int_t)p->anon_start));
    json_object_set_new(o, "rss_file_start_bytes", json_integer((json_int_t)p->file_start));
    json_object_set_new(o, "peak_rss_anon_bytes", json_integer((json_int_t)p->peak_anon));
    json_object_set_new(o, "peak_rss_file_bytes", json_integer((json_int_t)p->peak_file));
    json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)p->peak_rss));
    json_object_set_new(o, "vm_hwm_bytes", json_integer((json_int_t)p->vm_hwm));
    json_object_set_new(o, "rss_samples", json_integer((json_int_t)p->samples));
    json_object_set_new(o, "io_write_bytes", p->dev_bytes_ok
                        ? json_integer((json_int_t)p->write_bytes) : json_null());
    json_object_set_new(o, "io_wchar", p->io_ok ? json_integer((json_int_t)p->wchar) : json_null());
    json_object_set_new(o, "device_bytes_written", p->dev_ok
                        ? json_integer((json_int_t)p->dev_written) : json_null());
    json_object_set_new(o, "store_bytes_written", json_integer((json_int_t)p->store_written));
    json_object_set_new(o, "commits", json_integer((json_int_t)p->commits));
    json_object_set_new(o, "syncs", json_integer((json_int_t)p->syncs));
    return o;
}

/* The document's head: what was measured, on what. */
static void json_head(json_t *root, const tide_bench_store *b)
{
    const tide_bench_store_opts *c = &b->opts;
    const tide_mem_proc_blockdev *d = &b->dev;
    char durability[200];

    durability_text(c, durability, sizeof durability);
    json_object_set_new(root, "bench", json_string("store"));
    json_object_set_new(root, "method", json_pack(
        "{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:s, s:s}",
        "items", (json_int_t)c->items, "value_size", (json_int_t)c->value_size,
        "key_size", (json_int_t)TIDE_BENCH_KEY_SIZE, "block_size", (json_int_t)c->block_size,
        "load_factor", TIDE_BENCH_LOAD_FACTOR, "burst_bytes", (json_int_t)c->burst,
        "runs", (json_int_t)c->runs, "seed", (json_int_t)c->seed,
        "value_generation_ns_per_item", b->gen_ns,
        "load", "N inserts + tide_store_sync, timed together",
        "fetch", "N fetches in a shuffled order, values compared"));
    json_object_set_new(json_object_get(root, "method"), "fetch_threads",
                        json_integer((json_int_t)c->fetch_threads));
    json_object_set_new(json_object_get(root, "method"), "key_file",
                        json_string(c->pread ? "pread" : "mapped"));
    json_object_set_new(root, "machine", json_pack("{s:I, s:s}", "nproc",
                        (json_int_t)b->nproc, "kernel", b->kernel));
    json_object_set_new(root, "dir", json_string(b->dir));
    json_object_set_new(root, "device", b->dev_ok
        ? json_pack("{s:s, s:I, s:I, s:b, s:o}", "name", d->name,
                    "major", (json_int_t)d->major, "minor", (json_int_t)d->minor,
                    "is_partition", d->is_partition, "parent", d->is_partition
                    ? json_string(d->parent_name) : json_null())
        : json_null());
    json_object_set_new(root, "durability", json_string(durability));
    json_object_set_new(root, "peak_reset", json_boolean(b->can_reset));
}

static json_t *json_runs(const tide_bench_store *b, size_t n)
{
    json_t *jr = json_array();

    for (size_t i = 0; i < n; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "run", json_integer((json_int_t)i + 1));
        json_object_set_new(x, "dat_file_bytes", json_integer((json_int_t)b->runs[i].dat_bytes));
        json_object_set_new(x, "key_file_bytes", json_integer((json_int_t)b->runs[i].key_bytes));
        json_object_set_new(x, "buckets", json_integer((json_int_t)b->runs[i].buckets));
        json_object_set_new(x, "load", j_phase(&b->runs[i].load));
        json_object_set_new(x, "fetch", j_phase(&b->runs[i].fetch));
        json_array_append_new(jr, x);
    }
    return jr;
}

static json_t *json_summary(const tide_bench_summary *s)
{
    json_t *sum = json_object(), *jl = json_object(), *jf = json_object(), *wa = json_object();

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int m = rows[i].metric;
        json_object_set_new(jl, rows[i].json, j_stat_or_null(s->load[m], s->ok[m]));
        json_object_set_new(jf, rows[i].json, j_stat_or_null(s->fetch[m], s->ok[m]));
    }
    json_object_set_new(wa, "payload_bytes", json_integer((json_int_t)s->payload));
    json_object_set_new(wa, "device", j_stat_or_null(s->wa_device, s->ok[TIDE_BENCH_DEV_WRITTEN]));
    json_object_set_new(wa, "io_write_bytes",
                        j_stat_or_null(s->wa_write_bytes, s->ok[TIDE_BENCH_WRITE_BYTES]));
    json_object_set_new(wa, "store", j_stat(s->wa_store));
    json_object_set_new(sum, "load", jl);
    json_object_set_new(sum, "fetch", jf);
    json_object_set_new(sum, "dat_file_bytes", j_stat(s->dat_bytes));
    json_object_set_new(sum, "key_file_bytes", j_stat(s->key_bytes));
    json_object_set_new(sum, "write_amplification", wa);
    return sum;
}

static int print_json(const tide_bench_store *b, const tide_bench_summary *s)
{
    json_t *root = json_object();
    int rc;

    json_head(root, b);
    json_object_set_new(root, "runs", json_runs(b, s->runs));
    json_object_set_new(root, "summary", json_summary(s));
    rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    putchar('\n');
    if (rc != 0) return cli_error("bench", "cannot write the JSON output");
    return CLI_OK;
}

/* ---- tide bench generations ---- */

static const char help_gens[] =
"NAME\n"
"    tide bench generations - measure online delete: fetches that miss the\n"
"    newest generation, copy-forward, disk against bytes written\n"
"\n"
"SYNOPSIS\n"
"    tide bench generations [--items N] [--value-size N] [--generations LIST]\n"
"                           [--extra-spans N] [--runs N] [--dir DIR]\n"
"                           [--seed N] [--keep] [--json] [--verbose]\n"
"\n"
"DESCRIPTION\n"
"    Each run runs every variant once, each on a fresh directory, in an\n"
"    order that starts one variant later each run, so that a slow spell of\n"
"    a shared machine falls on every variant in turn:\n"
"\n"
"    plain  one plain store (tide_gens, online delete off): N inserts and\n"
"           a sync, then (e) PLAIN: N fetches of them. The baseline.\n"
"    G      generations (online delete on, keep G), for each G of LIST:\n"
"           G + extra-spans spans of N inserts each, with a sync and a\n"
"           rotation between two spans, so that the last G spans are the\n"
"           generations held (N objects each) and extra-spans rotations\n"
"           dropped one. After each rotation the directory's bytes\n"
"           (tide_gens_get_info) and the bytes the stores wrote in all\n"
"           (tide_gens_store_info) are recorded. Then four phases of N\n"
"           fetches each:\n"
"             (a) NEWEST  keys of the newest generation;\n"
"             (b) COPY    keys only the oldest kept generation holds: each\n"
"                         read copies the object into the newest; the\n"
"                         phase ends with tide_gens_sync, timed with it;\n"
"             (c) AGAIN   the same keys again (now in the newest);\n"
"             (d) MISS    keys in no generation (each looked for in all).\n"
"\n"
"    Keys are 32 random bytes and values value-size random bytes, from\n"
"    splitmix64 streams of the item's index (as tide bench store's). A\n"
"    phase's keys, in a shuffled order, and the first 8 bytes of each\n"
"    expected value are computed before its clocks start; each fetch's\n"
"    length and first 8 bytes are compared, and a phase whose counts do\n"
"    not add up (NEWEST and AGAIN all in the newest, COPY copying each key\n"
"    once, MISS finding none) stops the bench with exit status 1.\n"
"\n"
"    The main figure is the CPU time of the process per fetch\n"
"    (CLOCK_PROCESS_CPUTIME_ID: every thread, the stores' commit threads\n"
"    too), which a busy machine disturbs less than the wall clock; fetches\n"
"    per wall second are reported too. Also per fetch: the file reads\n"
"    (pread calls, tide_io counters). Ratios are taken within a run (to\n"
"    the plain store's, and to the same G's NEWEST) and then summarised:\n"
"    median (min-max) over the runs. The copy-forward rate is COPY's\n"
"    objects and bytes copied per CPU-second. What a generation adds to a\n"
"    miss is given two ways: (MISS - NEWEST) / (G - 1) per G, and, with\n"
"    two or more values of G, the slope of MISS from the smallest G to\n"
"    the largest (misses against misses: a miss skips the data-file read\n"
"    a NEWEST hit makes, so the first understates it). The page cache is\n"
"    warm.\n"
"\n"
"OPTIONS\n"
"    --items N          objects per span, and fetches per phase. Default\n"
"                       100000.\n"
"    --value-size N     bytes per value (1KiB forms accepted). Default 200.\n"
"    --generations LIST the values of G, comma-separated, each 2 to 64, at\n"
"                       most 8. Default 2,4.\n"
"    --extra-spans N    spans filled beyond G before the phases (rotations\n"
"                       that drop a generation), 0 to 16. Default 2.\n"
"    --runs N           runs; the summary takes medians over them. Default\n"
"                       3.\n"
"    --dir DIR          make the bench directory under DIR (which must\n"
"                       exist). Default: a fresh directory under /tmp.\n"
"    --seed N           data seed, 0 to 2147483647. Default 0.\n"
"    --keep             keep every variant's directory (a failed one is\n"
"                       always kept, and its path printed)\n"
"    --json             print the results as one JSON object on stdout (the\n"
"                       progress lines go to stderr); it holds every run's\n"
"                       phases and disk series\n"
"    --verbose          print each variant's disk series (after each\n"
"                       rotation: the disk before it, then generations,\n"
"                       disk bytes and bytes written after it)\n"
"    -h, --help         print this text\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 a call failed, a value differed or a count did not add up;\n"
"    2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide bench generations\n"
"    tide bench generations --items 200000 --runs 5\n"
"    tide bench generations --generations 2,3,8 --items 20000 --json\n";

static const struct option gens_options[] = {
    { "items",       required_argument, NULL, 'n' },
    { "value-size",  required_argument, NULL, 'v' },
    { "generations", required_argument, NULL, 'g' },
    { "extra-spans", required_argument, NULL, 'x' },
    { "runs",        required_argument, NULL, 'r' },
    { "dir",         required_argument, NULL, 'd' },
    { "seed",        required_argument, NULL, 's' },
    { "keep",        no_argument,       NULL, 'k' },
    { "json",        no_argument,       NULL, 'j' },
    { "verbose",     no_argument,       NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

typedef struct gens_args {
    tide_bench_gens_opts o;
    int json, verbose;
} gens_args;

/* "2,4": each 2 to 64, at most 8 of them. */
static int parse_gens_list(tide_bench_gens_opts *o, const char *val)
{
    char buf[256], *save = NULL;
    uint64_t g;

    if (strlen(val) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", val);
    o->ngens = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->ngens == TIDE_BENCH_GENS_VARIANTS_MAX) return -1;
        if (cli_parse_u64(t, TIDE_GEN_MIN, TIDE_GEN_MAX, &g) != 0) return -1;
        o->gens[o->ngens++] = (unsigned)g;
    }
    return o->ngens ? 0 : -1;
}

static int gens_option(void *arg, int id, const char *val)
{
    gens_args *b = arg;
    tide_bench_store_opts so;
    uint64_t v;

    switch (id) {
    case 'n':
        if (cli_parse_u64(val, 1, TIDE_BENCH_GENS_ITEMS_MAX, &b->o.items) != 0)
            return cli_usage("bench", "--items '%s' is not a whole number from 1 to %u",
                             val, TIDE_BENCH_GENS_ITEMS_MAX);
        break;
    case 'g':
        if (parse_gens_list(&b->o, val) != 0)
            return cli_usage("bench", "--generations '%s' is not a list such as 2,4 of at most "
                             "%u numbers from %u to %u", val, TIDE_BENCH_GENS_VARIANTS_MAX,
                             TIDE_GEN_MIN, TIDE_GEN_MAX);
        break;
    case 'x':
        if (cli_parse_u64(val, 0, TIDE_BENCH_GENS_EXTRA_MAX, &v) != 0)
            return cli_usage("bench", "--extra-spans '%s' is not a whole number from 0 to %u",
                             val, TIDE_BENCH_GENS_EXTRA_MAX);
        b->o.extra_spans = (unsigned)v;
        break;
    case 'V': b->verbose = 1; break;
    case 'v':
    case 'd':
        /* the store bench's checks and messages, into a scratch copy */
        tide_bench_store_opts_init(&so);
        if (option_value(&so, id, val) != CLI_OK) return CLI_USAGE;
        if (id == 'v') b->o.value_size = so.value_size;
        else b->o.parent = so.parent;
        break;
    default: {
        bench_args sa;
        memset(&sa, 0, sizeof sa);
        tide_bench_store_opts_init(&sa.o);
        if (option(&sa, id, val) != CLI_OK) return CLI_USAGE;
        if (id == 'r') b->o.runs = sa.o.runs;
        else if (id == 's') b->o.seed = sa.o.seed;
        else if (id == 'k') b->o.keep = 1;
        else if (id == 'j') b->json = 1;
        break;
    }
    }
    return CLI_OK;
}

static const cli_verb verb_gens = {
    .name = "bench", .usage = "bench generations",
    .summary = "measure online delete's fetch, copy-forward and disk costs",
    .help = help_gens, .options = gens_options, .option = gens_option,
    .args = CLI_ARGS_NONE,
};

static const char *const phase_names[TIDE_BG_PHASES] = { "NEWEST", "COPY", "AGAIN", "MISS" };
static const char *const phase_json[TIDE_BG_PHASES] = { "newest", "copy", "again", "miss" };

static void gens_header(FILE *o, const tide_bench_gens *b)
{
    const tide_bench_gens_opts *c = &b->opts;
    char list[64] = "";

    for (unsigned i = 0; i < c->ngens; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? "," : "",
                 c->gens[i]);
    fprintf(o, "method: per run and variant a fresh directory; plain = one store (online delete "
            "off) of %llu objects, PLAIN = %llu fetches; G in {%s} = G + %u spans of %llu "
            "inserts (32-byte keys, %llu-byte values) with a sync and a rotation between two "
            "(back-off 0), then NEWEST, COPY (+ tide_gens_sync, timed), AGAIN, MISS, %llu "
            "fetches each in a shuffled order (keys precomputed), one thread; figure: process "
            "CPU time per fetch (CLOCK_PROCESS_CPUTIME_ID, every thread); ratios within a run; "
            "%llu run%s interleaved (the first variant moves one each run), seed %llu\n",
            (unsigned long long)c->items, (unsigned long long)c->items, list, c->extra_spans,
            (unsigned long long)c->items, (unsigned long long)c->value_size,
            (unsigned long long)c->items, (unsigned long long)c->runs, c->runs == 1 ? "" : "s",
            (unsigned long long)c->seed);
    fprintf(o, "machine: %ld CPUs, %s; dir %s\n", b->nproc, b->kernel, b->dir);
    fflush(o);
}

static void gens_phase_line(FILE *o, unsigned run, unsigned runs, unsigned g, const char *name,
                            const tide_bench_gens_phase *p)
{
    double n = p->fetches ? (double)p->fetches : 1;
    char label[16];

    if (g) snprintf(label, sizeof label, "G=%u", g);
    else snprintf(label, sizeof label, "plain");
    fprintf(o, "run %u/%u %-5s %-6s %8.2f cpu us/fetch %9.0f /cpu-s %9.0f /s  reads/fetch %.2f  "
            "found %llu  copied %llu\n", run, runs, label, name, (double)p->cpu_ns / 1e3 / n,
            p->cpu_ns ? n * 1e9 / (double)p->cpu_ns : 0,
            p->wall_ns ? n * 1e9 / (double)p->wall_ns : 0, (double)p->reads / n,
            (unsigned long long)p->found, (unsigned long long)p->copied);
    fflush(o);
}

static void gens_run_lines(FILE *o, const tide_bench_gens *b, unsigned r)
{
    unsigned runs = (unsigned)b->opts.runs;

    gens_phase_line(o, r, runs, 0, "PLAIN", &b->plain[r - 1]);
    for (unsigned v = 0; v < b->opts.ngens; v++) {
        const tide_bench_gens_result *x = tide_bench_gens_at(b, r, v);
        for (int id = 0; id < TIDE_BG_PHASES; id++)
            gens_phase_line(o, r, runs, x->g, phase_names[id], &x->ph[id]);
    }
}

static void gens_disk_lines(FILE *o, const tide_bench_gens_result *x)
{
    char b4[32], d[32], w[32], p[32], del[32];

    fprintf(o, "  disk of G=%u after each rotation (run 1):\n", x->g);
    for (size_t i = 0; i < x->ndisk; i++) {
        const tide_bench_gens_disk *k = &x->disk[i];
        fprintf(o, "    rotation %llu: disk %s before; after: %u generations, disk %s, written %s "
                "in all (payload %s), deleted %s  disk/written %.2f\n",
                (unsigned long long)k->rotation, hs((double)k->disk_before_bytes, b4, sizeof b4),
                k->generations, hs((double)k->disk_bytes, d, sizeof d),
                hs((double)k->written_bytes, w, sizeof w),
                hs((double)k->payload_bytes, p, sizeof p),
                hs((double)k->deleted_bytes, del, sizeof del),
                k->written_bytes ? (double)k->disk_bytes / (double)k->written_bytes : 0);
    }
}

static void gens_row(const char *label, const tide_bench_gens_figures *f, int ratios)
{
    printf("  %-13s %6.2f (%.2f-%.2f) %9.0f (%.0f-%.0f) %9.0f  %5.2f", label, f->cpu_us.median,
           f->cpu_us.min, f->cpu_us.max, f->cpu_per_s.median, f->cpu_per_s.min,
           f->cpu_per_s.max, f->wall_per_s.median, f->reads.median);
    if (ratios)
        printf("  %.2f (%.2f-%.2f)  %.2f (%.2f-%.2f)", f->vs_plain.median, f->vs_plain.min,
               f->vs_plain.max, f->vs_newest.median, f->vs_newest.min, f->vs_newest.max);
    putchar('\n');
}

static void gens_summary(const tide_bench_gens *b, const tide_bench_gens_summary *s, int verbose)
{
    char lbl[32], bs[32];

    printf("\nsummary over %zu run%s: median (min-max); cpu us per fetch, fetches per CPU-second, "
           "per wall second, preads per fetch, ratio of cpu us to PLAIN's and to NEWEST's "
           "(within each run)\n", s->runs, s->runs == 1 ? "" : "s");
    gens_row("plain PLAIN", &s->plain, 0);
    for (unsigned v = 0; v < b->opts.ngens; v++) {
        unsigned g = b->opts.gens[v];
        for (int id = 0; id < TIDE_BG_PHASES; id++) {
            snprintf(lbl, sizeof lbl, "G=%u %s", g, phase_names[id]);
            gens_row(lbl, &s->ph[v][id], 1);
        }
    }
    for (unsigned v = 0; v < b->opts.ngens; v++) {
        const tide_bench_gens_result *x = tide_bench_gens_at(b, 1, v);
        const tide_bench_gens_disk *last = x->ndisk ? &x->disk[x->ndisk - 1] : NULL;
        printf("  G=%u: copy-forward %.0f (%.0f-%.0f) objects and %s per CPU-second; each older "
               "generation adds %.2f (%.2f-%.2f) cpu us to a miss", x->g,
               s->copy_objects_per_s[v].median, s->copy_objects_per_s[v].min,
               s->copy_objects_per_s[v].max,
               hs(s->copy_bytes_per_s[v].median, bs, sizeof bs), s->miss_us_per_older[v].median,
               s->miss_us_per_older[v].min, s->miss_us_per_older[v].max);
        if (last) {
            char d[32], w[32];
            printf("; after %llu rotations disk %s for %s written", (unsigned long long)last->rotation,
                   hs((double)last->disk_bytes, d, sizeof d),
                   hs((double)last->written_bytes, w, sizeof w));
        }
        putchar('\n');
        if (verbose) gens_disk_lines(stdout, x);
    }
    if (s->miss_slope_ok)
        printf("  each generation adds %.2f (%.2f-%.2f) cpu us to a miss (MISS across the values "
               "of G, within each run)\n", s->miss_slope_us.median, s->miss_slope_us.min,
               s->miss_slope_us.max);
}

/* ---- generations: the JSON ---- */

static json_t *j_gphase(const tide_bench_gens_phase *p)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "fetches", (json_int_t)p->fetches, "found", (json_int_t)p->found,
                     "in_newest", (json_int_t)p->in_newest, "cpu_ns", (json_int_t)p->cpu_ns,
                     "wall_ns", (json_int_t)p->wall_ns, "reads", (json_int_t)p->reads,
                     "bytes_read", (json_int_t)p->bytes_read, "copied", (json_int_t)p->copied,
                     "copied_bytes", (json_int_t)p->copied_bytes,
                     "older_lookups", (json_int_t)p->older_lookups);
}

static json_t *j_disk(const tide_bench_gens_result *x)
{
    json_t *a = json_array();
    for (size_t i = 0; i < x->ndisk; i++) {
        const tide_bench_gens_disk *k = &x->disk[i];
        json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
            "rotation", (json_int_t)k->rotation, "generations", (json_int_t)k->generations,
            "disk_before_bytes", (json_int_t)k->disk_before_bytes,
            "disk_bytes", (json_int_t)k->disk_bytes, "written_bytes",
            (json_int_t)k->written_bytes, "payload_bytes", (json_int_t)k->payload_bytes,
            "deleted_bytes", (json_int_t)k->deleted_bytes));
    }
    return a;
}

static json_t *j_gruns(const tide_bench_gens *b)
{
    json_t *runs = json_array();

    for (unsigned r = 1; r <= b->opts.runs; r++) {
        json_t *x = json_object(), *vs = json_array();
        json_object_set_new(x, "run", json_integer(r));
        json_object_set_new(x, "plain", j_gphase(&b->plain[r - 1]));
        for (unsigned v = 0; v < b->opts.ngens; v++) {
            const tide_bench_gens_result *res = tide_bench_gens_at(b, r, v);
            json_t *jv = json_object();
            json_object_set_new(jv, "generations", json_integer(res->g));
            json_object_set_new(jv, "setup_wall_ns", json_integer((json_int_t)res->setup_ns));
            for (int id = 0; id < TIDE_BG_PHASES; id++)
                json_object_set_new(jv, phase_json[id], j_gphase(&res->ph[id]));
            json_object_set_new(jv, "disk", j_disk(res));
            json_array_append_new(vs, jv);
        }
        json_object_set_new(x, "variants", vs);
        json_array_append_new(runs, x);
    }
    return runs;
}

static json_t *j_figures(const tide_bench_gens_figures *f, int ratios)
{
    json_t *o = json_object();
    json_object_set_new(o, "cpu_us_per_fetch", j_stat(f->cpu_us));
    json_object_set_new(o, "fetches_per_cpu_s", j_stat(f->cpu_per_s));
    json_object_set_new(o, "fetches_per_s", j_stat(f->wall_per_s));
    json_object_set_new(o, "reads_per_fetch", j_stat(f->reads));
    if (ratios) {
        json_object_set_new(o, "cpu_vs_plain", j_stat(f->vs_plain));
        json_object_set_new(o, "cpu_vs_newest", j_stat(f->vs_newest));
    }
    return o;
}

static json_t *j_gsummary(const tide_bench_gens *b, const tide_bench_gens_summary *s)
{
    json_t *sum = json_object(), *vs = json_array();

    json_object_set_new(sum, "plain", j_figures(&s->plain, 0));
    for (unsigned v = 0; v < b->opts.ngens; v++) {
        json_t *jv = json_object();
        json_object_set_new(jv, "generations", json_integer(b->opts.gens[v]));
        for (int id = 0; id < TIDE_BG_PHASES; id++)
            json_object_set_new(jv, phase_json[id], j_figures(&s->ph[v][id], 1));
        json_object_set_new(jv, "copy_objects_per_cpu_s", j_stat(s->copy_objects_per_s[v]));
        json_object_set_new(jv, "copy_bytes_per_cpu_s", j_stat(s->copy_bytes_per_s[v]));
        json_object_set_new(jv, "miss_cpu_us_per_older_generation",
                            j_stat(s->miss_us_per_older[v]));
        json_array_append_new(vs, jv);
    }
    json_object_set_new(sum, "variants", vs);
    json_object_set_new(sum, "miss_cpu_us_per_generation",
                        s->miss_slope_ok ? j_stat(s->miss_slope_us) : json_null());
    return sum;
}

static int gens_json(const tide_bench_gens *b, const tide_bench_gens_summary *s)
{
    const tide_bench_gens_opts *c = &b->opts;
    json_t *root = json_object(), *gl = json_array();
    int rc;

    for (unsigned i = 0; i < c->ngens; i++) json_array_append_new(gl, json_integer(c->gens[i]));
    json_object_set_new(root, "bench", json_string("generations"));
    json_object_set_new(root, "method", json_pack(
        "{s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:s, s:s}", "items", (json_int_t)c->items,
        "value_size", (json_int_t)c->value_size, "key_size", (json_int_t)TIDE_BENCH_KEY_SIZE,
        "generations", gl, "extra_spans", (json_int_t)c->extra_spans,
        "runs", (json_int_t)c->runs, "seed", (json_int_t)c->seed,
        "clock", "CLOCK_PROCESS_CPUTIME_ID (every thread) and CLOCK_MONOTONIC",
        "order", "variants interleaved per run, the first moving one each run"));
    json_object_set_new(root, "machine", json_pack("{s:I, s:s}", "nproc",
                        (json_int_t)b->nproc, "kernel", b->kernel));
    json_object_set_new(root, "dir", json_string(b->dir));
    json_object_set_new(root, "runs", j_gruns(b));
    json_object_set_new(root, "summary", j_gsummary(b, s));
    rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    putchar('\n');
    if (rc != 0) return cli_error("bench", "cannot write the JSON output");
    return CLI_OK;
}

static int gens_bench(tide_bench_gens *b, const gens_args *ga)
{
    FILE *o = ga->json ? stderr : stdout;
    tide_bench_gens_summary s;
    int rc;

    if (tide_bench_gens_begin(b, &ga->o) != 0) return cli_error("bench", "%s", tide_last_error());
    gens_header(o, b);
    for (unsigned r = 1; r <= ga->o.runs; r++) {
        rc = tide_bench_gens_run(b, r);
        if (rc) {
            cli_fail("bench", rc);
            return CLI_FAIL;
        }
        gens_run_lines(o, b, r);
    }
    tide_bench_gens_summarize(b, &s);
    if (!ga->json) gens_summary(b, &s, ga->verbose);
    else if ((rc = gens_json(b, &s)) != CLI_OK) return rc;
    if (ga->o.keep) fprintf(o, "kept: %s\n", b->dir);
    return CLI_OK;
}

static int gens_main(int argc, char **argv)
{
    tide_bench_gens b;
    gens_args ga;
    cli_args a;
    int rc;

    memset(&ga, 0, sizeof ga);
    tide_bench_gens_opts_init(&ga.o);
    if (cli_parse(&verb_gens, argc, argv, &ga, &a, &rc)) return rc;
    rc = gens_bench(&b, &ga);
    tide_bench_gens_end(&b);
    return rc;
}

/* ---- the verb ---- */

/* Say why run `run` failed, and where its store was left. */
static int run_failed(const tide_bench_store *b, unsigned run, int rc, const tide_bench_failure *f)
{
    if (f->wrong_value) {
        fprintf(stderr, "tide bench: run %u: item %llu: fetched %zu bytes, inserted %llu; "
                "first difference at byte %zu. The store returned wrong data; it is left "
                "in %s\n", run, (unsigned long long)f->item, f->got_len,
                (unsigned long long)b->opts.value_size, f->first_diff, b->run_dir);
        return CLI_FAIL;
    }
    if (f->during == NULL) return cli_error("bench", "%s", tide_last_error());
    cli_fail("bench", rc);
    fprintf(stderr, "tide bench: (during %s; the store is left in %s)\n", f->during, b->run_dir);
    if (strcmp(f->during, "load: insert") == 0)
        fprintf(stderr, "tide bench: run %u: insert of item %llu of %llu failed\n", run,
                (unsigned long long)f->item, (unsigned long long)b->opts.items);
    else if (strcmp(f->during, "fetch") == 0)
        fprintf(stderr, "tide bench: run %u: fetch of item %llu (the %llu-th fetched) failed\n",
                run, (unsigned long long)f->item, (unsigned long long)f->nth);
    return CLI_FAIL;
}

/* Begin, every run with its lines, the summary. */
static int bench(tide_bench_store *b, const bench_args *ba)
{
    FILE *o = ba->json ? stderr : stdout;
    tide_bench_summary s;
    tide_bench_failure why;
    int rc;

    if (tide_bench_store_begin(b, &ba->o) != 0) return cli_error("bench", "%s", tide_last_error());
    print_header(o, b);
    for (unsigned r = 1; r <= ba->o.runs; r++) {
        rc = tide_bench_store_run(b, r, &why);
        if (rc) return run_failed(b, r, rc, &why);
        print_phase_line(o, r, (unsigned)ba->o.runs, "load", &b->runs[r - 1].load);
        print_phase_line(o, r, (unsigned)ba->o.runs, "fetch", &b->runs[r - 1].fetch);
    }
    tide_bench_store_summarize(b, &s);
    if (!ba->json) print_summary(b, &s);
    else if ((rc = print_json(b, &s)) != CLI_OK) return rc;
    if (ba->o.keep) fprintf(o, "kept: %s\n", b->dir);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    tide_bench_store b;
    bench_args ba;
    cli_args a;
    int rc;

    if (argc < 2)
        return cli_usage("bench", "which bench? 'store', 'generations', 'release' or 'archive': tide "
                         "bench store [OPTIONS]");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_verb_help(&cli_verb_bench, stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "generations") == 0) return gens_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "release") == 0) return cli_bench_release_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "archive") == 0) return cli_bench_archive_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "store") != 0)
        return cli_usage("bench", "'%s' is not a bench; 'store', 'generations', 'release' and 'archive' "
                         "are", argv[1]);
    memset(&ba, 0, sizeof ba);
    tide_bench_store_opts_init(&ba.o);
    if (cli_parse(&cli_verb_bench, argc - 1, argv + 1, &ba, &a, &rc)) return rc;
    rc = bench(&b, &ba);
    tide_bench_store_end(&b);
    return rc;
}

const cli_verb cli_verb_bench = {
    .name = "bench", .usage = "bench store|generations|release|archive",
    .summary = "measure the store (throughput, memory, writes), online delete's costs, what giving freed cache memory back costs, or the RADOS archive's",
    .help = help_bench, .run = run,
    .options = options, .option = option, .args = CLI_ARGS_NONE,
};
