/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_bench_release.c: `tide bench release`, what giving a cache's freed
 * memory back to the kernel costs per GiB: the node cache's arena against
 * the allocator's trim (src/bench/bench_release.h measures; this file runs
 * and prints).
 *
 * Each measurement runs in a child process of its own (fork), so each
 * starts from a fresh heap and nothing one left resident counts in the
 * next; the child sends its figures back through a pipe and exits. A run
 * measures the arena on and off, the first of the two alternating from
 * run to run; the summary gives each figure's median over the runs with
 * its range, and the ratio of the medians.
 *
 * Invariants:
 *   1. The parent waits for every child it forked, whatever the outcome.
 *   2. Both variants of a run use the same seed: the same objects, the
 *      same ones erased (bench_release.c, invariant 2).
 *
 * Never: run two measurements at once (each reads its own RSS, but the
 * two would compete for the machine's memory and CPU).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench_release.h"
#include "cli/cli.h"
#include "mem/alloc.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/size.h"

#define RUNS_MAX 100u
#define GIB      1073741824.0
#define MIB      1048576.0

static const char help_release[] =
"NAME\n"
"    tide bench release - measure what giving a cache's freed memory back to\n"
"    the kernel costs, per GiB: the node cache's arena against the\n"
"    allocator's trim\n"
"\n"
"SYNOPSIS\n"
"    tide bench release [--size SIZE] [--object-size MIN-MAX] [--free PCT]\n"
"                       [--hugepages] [--runs N] [--seed N] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Fills a node cache (the one tided keeps, with 32-byte keys) with SIZE\n"
"    bytes of objects of random sizes, erases PCT per cent of them at\n"
"    random, then gives the freed memory back as tided's sweeper does after\n"
"    a sweep, and times it:\n"
"\n"
"    arena on   the objects and their entries live in 2 MiB segments\n"
"               (cache_arena=on, tided's default); the evacuation copies\n"
"               the live objects out of the least-used segments, then each\n"
"               empty segment goes back with one madvise(MADV_DONTNEED).\n"
"               The release time is the madvise calls'; the evacuation's\n"
"               and the allocator's trim after it are shown beside it.\n"
"    arena off  every object and entry is malloc'd (cache_arena=off); the\n"
"               release is the allocator's trim (malloc_trim(0) under\n"
"               glibc; each allocator's own under LD_PRELOAD).\n"
"\n"
"    Each measurement runs in a child process of its own, from a fresh\n"
"    heap. A run measures both, the first alternating from run to run,\n"
"    with the same objects erased. Released is the fall of anonymous RSS\n"
"    (RssAnon + RssShmem) across the release; per GiB is the release time\n"
"    over that.\n"
"\n"
"    After the arena's release, the same child measures the kernel's floor:\n"
"    as many fresh segments as the release gave back, every page written,\n"
"    then one madvise(MADV_DONTNEED) each with the same huge-page advice.\n"
"    No release of those pages can cost less; the arena's figure over the\n"
"    floor's is what the arena itself adds. With 4 KiB pages the kernel\n"
"    frees 512 pages a segment, with a huge page one, and that, not the\n"
"    arena, sets the cost per GiB.\n"
"\n"
"    The machine needs SIZE plus about 10% of memory free for each child.\n"
"\n"
"OPTIONS\n"
"    --size SIZE        object bytes to cache, 1MiB to 1TiB (default 4GiB)\n"
"    --object-size MIN-MAX\n"
"                       object sizes, uniform between the two, 1 to 1MiB\n"
"                       (default 64-4096)\n"
"    --free PCT         per cent of the objects erased, 1 to 99 (default 90)\n"
"    --hugepages        the arena's segments in transparent huge pages\n"
"                       (cache_arena_hugepages=on): a release then frees\n"
"                       one huge page a segment instead of 512 pages, when\n"
"                       /sys/kernel/mm/transparent_hugepage/enabled is\n"
"                       madvise or always\n"
"    --runs N           runs, 1 to 100 (default 3)\n"
"    --seed N           the sizes and the choice of erased objects, 0 to\n"
"                       2147483647 (default 0)\n"
"    --json             the figures as one JSON object on stdout (the\n"
"                       progress goes to stderr)\n"
"\n"
"EXIT STATUS\n"
"    0 measured; 1 a measurement failed (the message says which); 2 usage\n"
"\n"
"EXAMPLES\n"
"    tide bench release\n"
"    tide bench release --size 8GiB --runs 5\n"
"    LD_PRELOAD=libjemalloc.so.2 tide bench release --size 1GiB --json\n";

static const struct option release_options[] = {
    { "size",        required_argument, NULL, 'S' },
    { "object-size", required_argument, NULL, 'o' },
    { "free",        required_argument, NULL, 'f' },
    { "runs",        required_argument, NULL, 'r' },
    { "seed",        required_argument, NULL, 's' },
    { "hugepages",   no_argument,       NULL, 'H' },
    { "json",        no_argument,       NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

typedef struct release_args {
    tide_bench_release_opts o;
    uint64_t runs;
    int json;
} release_args;

/* "64-4096" into min and max. 0, or -1 when it is not two sizes in range. */
static int parse_range(const char *val, uint32_t *min, uint32_t *max)
{
    char buf[64], *dash;
    uint64_t a, b;

    if (strlen(val) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", val);
    dash = strchr(buf, '-');
    if (dash == NULL) return -1;
    *dash = '\0';
    if (tide_size_parse(buf, &a) != 0 || tide_size_parse(dash + 1, &b) != 0) return -1;
    if (a < 1 || b > (1u << 20) || a > b) return -1;
    *min = (uint32_t)a;
    *max = (uint32_t)b;
    return 0;
}

static int release_option(void *arg, int id, const char *val)
{
    release_args *b = arg;
    uint64_t v;

    switch (id) {
    case 'S':
        if (tide_size_parse(val, &v) != 0 || v < (1u << 20) || v > ((uint64_t)1 << 40))
            return cli_usage("bench", "--size '%s' is not a size from 1MiB to 1TiB", val);
        b->o.bytes = v;
        break;
    case 'o':
        if (parse_range(val, &b->o.min_size, &b->o.max_size) != 0)
            return cli_usage("bench", "--object-size '%s' is not MIN-MAX with 1 <= MIN <= MAX <= 1MiB "
                             "(such as 64-4096)", val);
        break;
    case 'f':
        if (cli_parse_u64(val, 1, 99, &v) != 0)
            return cli_usage("bench", "--free '%s' is not a whole number from 1 to 99", val);
        b->o.free_pct = (unsigned)v;
        break;
    case 'r':
        if (cli_parse_u64(val, 1, RUNS_MAX, &b->runs) != 0)
            return cli_usage("bench", "--runs '%s' is not a whole number from 1 to %u", val, RUNS_MAX);
        break;
    case 's':
        if (cli_parse_u64(val, 0, (1ull << 31) - 1, &b->o.seed) != 0)
            return cli_usage("bench", "--seed '%s' is not a whole number from 0 to 2147483647", val);
        break;
    case 'H':
        b->o.hugepages = 1;
        break;
    default:
        b->json = 1;
        break;
    }
    return CLI_OK;
}

static const cli_verb verb_release = {
    .name = "bench", .usage = "bench release",
    .summary = "measure the cost of giving freed cache memory back: the arena against the allocator's trim",
    .help = help_release, .options = release_options, .option = release_option,
    .args = CLI_ARGS_NONE,
};

/* What a child sends back. */
typedef struct child_report {
    int rc;
    char error[512];
    tide_bench_release_result r;
} child_report;

/* Measure with the arena on or off in a child process (1). */
static int measure(const tide_bench_release_opts *base, int arena, tide_bench_release_result *out)
{
    tide_bench_release_opts o = *base;
    child_report rep;
    int fds[2], st = 0;
    size_t have = 0;
    pid_t pid;

    o.arena = arena;
    if (pipe(fds) != 0) return cli_error("bench", "pipe: %s", strerror(errno));
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return cli_error("bench", "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        memset(&rep, 0, sizeof rep);
        rep.rc = tide_bench_release_measure(&o, &rep.r);
        if (rep.rc) snprintf(rep.error, sizeof rep.error, "%s", tide_last_error());
        _exit(write(fds[1], &rep, sizeof rep) == (ssize_t)sizeof rep ? 0 : 1);
    }
    close(fds[1]);
    memset(&rep, 0, sizeof rep);
    while (have < sizeof rep) {
        ssize_t n = read(fds[0], (char *)&rep + have, sizeof rep - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
    }
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) { }
    if (have != sizeof rep || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return cli_error("bench", "the arena-%s measurement's process ended without its figures (%s %d); "
                         "out of memory? It needs --size plus about 10%% free",
                         arena ? "on" : "off", WIFSIGNALED(st) ? "signal" : "status",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    if (rep.rc) return cli_error("bench", "arena %s: %s", arena ? "on" : "off", rep.error);
    *out = rep.r;
    return CLI_OK;
}

static double released_gib(const tide_bench_release_result *r)
{
    return r->rss_erased > r->rss_after ? (double)(r->rss_erased - r->rss_after) / GIB : 0.0;
}

/* ms per GiB released; 0 when nothing was. */
static double ms_per_gib(const tide_bench_release_result *r)
{
    double g = released_gib(r);

    return g > 0 ? (double)r->release_ns / 1e6 / g : 0.0;
}

/* The kernel's floor in ms per GiB given back; 0 when it was not measured. */
static double floor_ms_per_gib(const tide_bench_release_result *r)
{
    return r->floor_bytes ? (double)r->floor_ns / 1e6 / ((double)r->floor_bytes / GIB) : 0.0;
}

static void print_line(FILE *f, unsigned run, const char *what, const tide_bench_release_result *r)
{
    fprintf(f, "run %u, arena %-3s: %" PRIu64 " objects, %" PRIu64 " kept (counted %.1f MiB); RSS filled %.1f MiB, "
            "erased %.1f MiB, after %.1f MiB; released %.3f GiB in %.3f ms (%.2f ms/GiB)", run, what, r->objects,
            r->kept, (double)r->counted_bytes / MIB, (double)r->rss_full / MIB, (double)r->rss_erased / MIB,
            (double)r->rss_after / MIB, released_gib(r), (double)r->release_ns / 1e6, ms_per_gib(r));
    if (r->evacuate_ns || r->released_segments)
        fprintf(f, "; evacuation %.1f ms (%.1f MiB moved), %" PRIu64 " segments, trim after %.3f ms",
                (double)r->evacuate_ns / 1e6, (double)r->moved_bytes / MIB, r->released_segments,
                (double)r->trim_ns / 1e6);
    if (r->floor_bytes)
        fprintf(f, "; kernel floor %.2f ms/GiB", floor_ms_per_gib(r));
    fputc('\n', f);
    fflush(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median, min and max of v[0..n). */
static void spread(double *v, size_t n, double out[3])
{
    qsort(v, n, sizeof *v, cmp_double);
    out[0] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    out[1] = v[0];
    out[2] = v[n - 1];
}

typedef double (*figure_fn)(const tide_bench_release_result *r);

static double f_ms_per_gib(const tide_bench_release_result *r) { return ms_per_gib(r); }
static double f_release_ms(const tide_bench_release_result *r) { return (double)r->release_ns / 1e6; }
static double f_released(const tide_bench_release_result *r) { return released_gib(r); }
static double f_after_mib(const tide_bench_release_result *r) { return (double)r->rss_after / MIB; }
static double f_counted_mib(const tide_bench_release_result *r) { return (double)r->counted_bytes / MIB; }
static double f_evac_ms(const tide_bench_release_result *r) { return (double)r->evacuate_ns / 1e6; }
static double f_floor(const tide_bench_release_result *r) { return floor_ms_per_gib(r); }

static const struct { const char *name, *json; figure_fn f; } figures[] = {
    { "release ms/GiB", "release_ms_per_gib", f_ms_per_gib },
    { "release ms", "release_ms", f_release_ms },
    { "released GiB", "released_gib", f_released },
    { "RSS after MiB", "rss_after_mib", f_after_mib },
    { "counted MiB", "counted_mib", f_counted_mib },
    { "evacuation ms", "evacuate_ms", f_evac_ms },
    { "floor ms/GiB", "kernel_floor_ms_per_gib", f_floor },
};
#define NFIGURES (sizeof figures / sizeof figures[0])

/* The summary: each figure's median [min, max] per variant, and on/off. */
static int summarize(const release_args *b, tide_bench_release_result *res[2])
{
    double v[RUNS_MAX], s[2][NFIGURES][3];
    json_t *root = NULL;
    FILE *f = b->json ? stderr : stdout;

    for (int a = 0; a < 2; a++)
        for (size_t k = 0; k < NFIGURES; k++) {
            for (size_t r = 0; r < b->runs; r++) v[r] = figures[k].f(&res[a][r]);
            spread(v, b->runs, s[a][k]);
        }
    fprintf(f, "\nmedians of %" PRIu64 " run%s [min, max]:\n%-16s %-28s %-28s %s\n", b->runs,
            b->runs == 1 ? "" : "s", "", "arena on", "arena off", "on/off");
    for (size_t k = 0; k < NFIGURES; k++) {
        char on[64], off[64];
        snprintf(on, sizeof on, "%.3f [%.3f, %.3f]", s[1][k][0], s[1][k][1], s[1][k][2]);
        snprintf(off, sizeof off, "%.3f [%.3f, %.3f]", s[0][k][0], s[0][k][1], s[0][k][2]);
        fprintf(f, "%-16s %-28s %-28s", figures[k].name, on, off);
        if (s[0][k][0] > 0) fprintf(f, " %.3f", s[1][k][0] / s[0][k][0]);
        fputc('\n', f);
    }
    if (!b->json) return CLI_OK;
    root = json_pack("{s:s,s:b,s:s,s:I,s:i,s:i,s:i,s:I,s:I}", "bench", "release", "hugepages", b->o.hugepages,
                     "allocator",
                     tide_mem_alloc_family_name(tide_mem_alloc_family()), "bytes", (json_int_t)b->o.bytes,
                     "min_size", (int)b->o.min_size, "max_size", (int)b->o.max_size, "free_pct", (int)b->o.free_pct,
                     "runs", (json_int_t)b->runs, "seed", (json_int_t)b->o.seed);
    if (root == NULL) return cli_error("bench", "building the JSON failed");
    for (int a = 1; a >= 0; a--) {
        json_t *var = json_object();
        for (size_t k = 0; k < NFIGURES; k++)
            json_object_set_new(var, figures[k].json, json_pack("{s:f,s:f,s:f}", "median", s[a][k][0], "min",
                                                                 s[a][k][1], "max", s[a][k][2]));
        json_object_set_new(root, a ? "arena_on" : "arena_off", var);
    }
    if (json_dumpf(root, stdout, JSON_COMPACT) != 0 || fputc('\n', stdout) == EOF) {
        json_decref(root);
        return cli_error("bench", "writing the JSON failed");
    }
    json_decref(root);
    return CLI_OK;
}

static int release_bench(const release_args *b)
{
    tide_bench_release_result *res[2] = { NULL, NULL };
    FILE *f = b->json ? stderr : stdout;
    int rc = CLI_OK;

    res[0] = calloc(b->runs, sizeof *res[0]);
    res[1] = calloc(b->runs, sizeof *res[1]);
    if (res[0] == NULL || res[1] == NULL) {
        rc = cli_error("bench", "out of memory");
        goto out;
    }
    fprintf(f, "method: per measurement a child process; a node cache (32-byte keys) filled with %.2f GiB of "
            "objects of %u-%u bytes, %u%% erased at random (seed %" PRIu64 "), then the sweeper's release: "
            "arena on%s = evacuation (no budget limit) + one madvise per empty segment, timed alone, then the "
            "allocator's trim; arena off = the allocator's trim (%s), timed alone; released = the fall of "
            "anonymous RSS across it; %" PRIu64 " run%s, the first variant alternating\n",
            (double)b->o.bytes / GIB, b->o.min_size, b->o.max_size, b->o.free_pct, b->o.seed,
            b->o.hugepages ? " (segments in huge pages)" : "",
            tide_mem_alloc_family_name(tide_mem_alloc_family()), b->runs, b->runs == 1 ? "" : "s");
    for (unsigned r = 0; r < b->runs && rc == CLI_OK; r++) {
        for (int k = 0; k < 2 && rc == CLI_OK; k++) {
            int arena = (int)((r + (unsigned)k) % 2 == 0);
            rc = measure(&b->o, arena, &res[arena][r]);
            if (rc == CLI_OK) print_line(f, r + 1, arena ? "on" : "off", &res[arena][r]);
        }
    }
    if (rc == CLI_OK) rc = summarize(b, res);
out:
    free(res[0]);
    free(res[1]);
    return rc;
}

int cli_bench_release_main(int argc, char **argv)
{
    release_args b;
    cli_args a;
    int rc;

    memset(&b, 0, sizeof b);
    tide_bench_release_opts_init(&b.o);
    b.runs = 3;
    if (cli_parse(&verb_release, argc, argv, &b, &a, &rc)) return rc;
    return release_bench(&b);
}
