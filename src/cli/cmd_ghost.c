/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_ghost.c: `tide ghost`, the RSS-ghost matrix: the options, the rows
 * the ghost runner returns, printed as a table, one JSON object (--json)
 * or CSV (--csv).
 *
 * For every selected scenario and variant (src/lab/ghost.h) the runner
 * (src/lab/ghost_run.h) starts a fresh child that re-executes this binary
 * as `tide ghost --child SCENARIO --variant VARIANT --size F` (and once per
 * preloadable allocator as `tide ghost --child-probe`, for the header);
 * those two hidden modes are answered here, by printing the runner's
 * child report as one line on stdout.
 *
 * Layout: the lists; the child modes; the three outputs; the verb.
 *
 * Invariants:
 *   1. The exit status is 1 when a row failed (each failure also named on
 *      stderr), 0 when every row ran or was skipped, 2 for a usage error.
 *   2. A child mode prints exactly one line on stdout (its report), or
 *      nothing when the report could not be made.
 *
 * Never: start a process here (the runner does), or print anything but
 * the report on a child's stdout.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/ghost_run.h"
#include "mem/alloc.h"
#include "tide/error.h"
#include "util/clock.h"

#define VERB "ghost"
#define MAX_SCENARIOS 16
#define MAX_VARIANTS  16

enum { OUT_TABLE, OUT_JSON, OUT_CSV };

/* ---- lists ------------------------------------------------------------- */

/* Parse "a,b,c" into indexes of known names (dupes dropped, table order
 * kept by the caller). Returns CLI_OK or CLI_USAGE with a message. */
static int parse_scenarios(const char *text, int *chosen)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(text) >= sizeof buf) return cli_usage(VERB, "--scenario: list too long");
    strcpy(buf, text);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = tide_lab_ghost_scenario_find(tok);
        if (i < 0) {
            char names[256] = "";
            for (size_t k = 0; k < tide_lab_ghost_scenario_count(); k++) {
                strcat(names, k ? ", " : "");
                strcat(names, tide_lab_ghost_scenario_name(k));
            }
            return cli_usage(VERB, "--scenario: '%s' is not a scenario (%s)", tok, names);
        }
        chosen[i] = 1;
    }
    return CLI_OK;
}

static int parse_variants(const char *text, int *chosen)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(text) >= sizeof buf) return cli_usage(VERB, "--variant: list too long");
    strcpy(buf, text);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < tide_lab_ghost_variant_count(); i++)
            if (strcmp(tide_lab_ghost_variant_at(i)->name, tok) == 0) break;
        if (i == tide_lab_ghost_variant_count()) {
            char names[256] = "";
            for (size_t k = 0; k < tide_lab_ghost_variant_count(); k++) {
                strcat(names, k ? ", " : "");
                strcat(names, tide_lab_ghost_variant_at(k)->name);
            }
            return cli_usage(VERB, "--variant: '%s' is not a variant (%s)", tok, names);
        }
        chosen[i] = 1;
    }
    return CLI_OK;
}

static int any(const int *chosen, size_t n)
{
    for (size_t i = 0; i < n; i++) if (chosen[i]) return 1;
    return 0;
}

/* ---- the child modes --------------------------------------------------- */

/* Print `obj` as one line on stdout and drop it. */
static void print_json_line(json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT);
    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        free(text);
    }
    json_decref(obj);
    fflush(stdout);
}

/* `ghost --child ...`: the child's report on stdout (ghost_run.h). */
static int child_run(const char *scenario, const char *variant, double size)
{
    json_t *o = NULL;
    int rc = tide_lab_ghost_child(scenario, variant, size, &o);

    if (o) print_json_line(o);
    return rc == 0 ? CLI_OK : rc == TIDE_EINVAL ? CLI_USAGE : CLI_FAIL;
}

/* `ghost --child-probe`: the allocator this child got, on stdout. */
static int child_probe(void)
{
    json_t *o = NULL;
    int rc = tide_lab_ghost_probe(&o);

    if (o) print_json_line(o);
    return rc == 0 ? CLI_OK : CLI_FAIL;
}

/* ---- output ------------------------------------------------------------ */

static double mib(json_t *r, const char *key)
{
    return (double)json_integer_value(json_object_get(r, key)) / (1024.0 * 1024.0);
}

static const char *str_or(json_t *r, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(r, key));
    return s ? s : dflt;
}

static void table_header(json_t *m, double size)
{
    json_t *a = json_object_get(m, "allocators");
    const char *name;
    json_t *v;

    printf("tide ghost: page %" PRId64 " B, kernel %s, glibc %s",
           (int64_t)json_integer_value(json_object_get(m, "page_size")),
           str_or(m, "kernel", "?"), str_or(m, "glibc", "?"));
    json_object_foreach(a, name, v) {
        if (strcmp(name, "glibc") == 0) continue;
        printf(", %s %s", name, json_is_string(v) ? json_string_value(v) : "(absent)");
    }
    printf("; size %g\n", size);
    printf("RSS in MiB; ghost = after - start - live; back = ghost under 10%% of (peak - start)\n\n");
    printf("%-13s %-14s %8s %8s %8s %8s %8s  %s\n", "scenario", "variant", "start", "peak",
           "after", "live", "ghost", "back");
}

static void table_row(json_t *r)
{
    const char *st = str_or(r, "status", "failed");

    printf("%-13s %-14s ", str_or(r, "scenario", "?"), str_or(r, "variant", "?"));
    if (strcmp(st, "ok") == 0) {
        printf("%8.2f %8.2f %8.2f %8.2f %8.2f  %s\n", mib(r, "rss_start_bytes"),
               mib(r, "rss_peak_bytes"), mib(r, "rss_after_free_bytes"), mib(r, "live_bytes"),
               mib(r, "ghost_bytes"),
               json_is_true(json_object_get(r, "returned")) ? "yes" : "NO");
    } else if (strcmp(st, "skipped") == 0) {
        const char *pkg = str_or(r, "package", NULL);
        if (pkg) printf("skipped: install %s\n", pkg);
        else printf("skipped: %s\n", str_or(r, "reason", "?"));
    } else {
        printf("FAILED: %s\n", str_or(r, "reason", "?"));
    }
    fflush(stdout);
}

static void csv_text(const char *s)
{
    if (s == NULL) return;
    if (strpbrk(s, ",\"\n") == NULL) { fputs(s, stdout); return; }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s == '\n' ? ' ' : *s);
    }
    putchar('"');
}

static const char *const csv_columns[] = {
    "scenario", "variant", "skipped", "status", "allocator", "allocator_version",
    "rss_start_bytes", "rss_peak_bytes", "rss_after_free_bytes", "live_bytes", "ghost_bytes",
    "peak_growth_bytes", "returned", "allocated_bytes", "objects", "threads", "arenas",
    "trim_result", "wait_ms", "elapsed_ms", "package", "reason", NULL
};

static void csv_row(json_t *r)
{
    for (size_t i = 0; csv_columns[i]; i++) {
        json_t *v = json_object_get(r, csv_columns[i]);
        if (i) putchar(',');
        if (json_is_string(v)) csv_text(json_string_value(v));
        else if (json_is_boolean(v)) fputs(json_is_true(v) ? "true" : "false", stdout);
        else if (json_is_integer(v)) printf("%" PRId64, (int64_t)json_integer_value(v));
        else if (json_is_real(v)) printf("%.3f", json_real_value(v));
    }
    putchar('\n');
}

/* ---- the verb ---------------------------------------------------------- */

static double wall_now(void)
{
    return (double)tide_clock_mono_ns() / 1e9;
}

/* Every chosen scenario under every chosen variant, each row printed as
 * it comes (table or CSV) and kept in results. The number of failed rows,
 * each also named on stderr (invariant 1). */
static int run_rows(const int *want_s, const int *want_v, double size, int out, json_t *results)
{
    int sanitized = tide_mem_alloc_family() == TIDE_MEM_ALLOC_SANITIZER, failed = 0;

    for (size_t si = 0; si < tide_lab_ghost_scenario_count(); si++) {
        if (!want_s[si]) continue;
        for (size_t vi = 0; vi < tide_lab_ghost_variant_count(); vi++) {
            json_t *r;
            if (!want_v[vi]) continue;
            r = tide_lab_ghost_row(tide_lab_ghost_scenario_name(si), tide_lab_ghost_variant_at(vi), size,
                                   sanitized);
            if (strcmp(str_or(r, "status", ""), "failed") == 0) {
                failed++;
                fprintf(stderr, "tide ghost: %s under %s: %s\n", str_or(r, "scenario", "?"),
                        str_or(r, "variant", "?"), str_or(r, "reason", "?"));
            }
            if (out == OUT_TABLE) table_row(r);
            if (out == OUT_CSV) csv_row(r);
            json_array_append_new(results, r);
        }
    }
    return failed;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json",        no_argument,       NULL, 'j' },
        { "csv",         no_argument,       NULL, 'c' },
        { "scenario",    required_argument, NULL, 's' },
        { "variant",     required_argument, NULL, 'v' },
        { "size",        required_argument, NULL, 'z' },
        { "help",        no_argument,       NULL, 'h' },
        { "child",       required_argument, NULL, 'C' },
        { "child-probe", no_argument,       NULL, 'P' },
        { NULL, 0, NULL, 0 },
    };
    int want_s[MAX_SCENARIOS] = { 0 }, want_v[MAX_VARIANTS] = { 0 };
    const char *child = NULL, *variant_text = NULL;
    int out = OUT_TABLE, probe = 0, failed = 0, c, rc;
    double size = 1.0, t0;
    json_t *machine = NULL, *results = NULL, *doc;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': out = OUT_JSON; break;
        case 'c': out = OUT_CSV; break;
        case 's':
            rc = parse_scenarios(optarg, want_s);
            if (rc) return rc;
            break;
        case 'v':
            variant_text = optarg;
            rc = parse_variants(optarg, want_v);
            if (rc) return rc;
            break;
        case 'z':
            if (cli_parse_double(optarg, &size) != 0 || !(size > 0.0 && size <= 64.0))
                return cli_usage(VERB, "--size '%s' is not a number greater than 0 and at most 64",
                                 optarg);
            break;
        case 'h': cli_help(VERB, stdout); return CLI_OK;
        case 'C': child = optarg; break;
        case 'P': probe = 1; break;
        default: return cli_option_error(VERB, c, argv);
        }
    }
    if (optind < argc) return cli_usage(VERB, "unexpected argument '%s'", argv[optind]);
    if (probe) return child_probe();
    if (child) return child_run(child, variant_text, size);
    if (!any(want_s, tide_lab_ghost_scenario_count()))
        for (size_t i = 0; i < tide_lab_ghost_scenario_count(); i++) want_s[i] = 1;
    if (!any(want_v, tide_lab_ghost_variant_count()))
        for (size_t i = 0; i < tide_lab_ghost_variant_count(); i++) want_v[i] = 1;

    t0 = wall_now();
    machine = tide_lab_ghost_machine();
    results = json_array();
    if (machine == NULL || results == NULL) { rc = cli_error(VERB, "out of memory"); goto done; }
    if (out == OUT_TABLE) table_header(machine, size);
    if (out == OUT_CSV)
        for (size_t i = 0; csv_columns[i]; i++) printf("%s%s", i ? "," : "", csv_columns[i]);
    if (out == OUT_CSV) putchar('\n');
    failed = run_rows(want_s, want_v, size, out, results);
    if (out == OUT_TABLE)
        printf("\n%zu rows, %d failed, %.1f s\n", json_array_size(results), failed,
               wall_now() - t0);
    if (out == OUT_JSON) {
        doc = json_pack("{s:O, s:f, s:f, s:O}", "machine", machine, "size", size,
                        "wall_seconds", wall_now() - t0, "results", results);
        if (doc == NULL || json_dumpf(doc, stdout, JSON_INDENT(2)) != 0) {
            json_decref(doc);
            rc = cli_error(VERB, "could not write the JSON document");
            goto done;
        }
        putchar('\n');
        json_decref(doc);
    }
    rc = failed ? CLI_FAIL : CLI_OK;
done:
    json_decref(machine);
    json_decref(results);
    return rc;
}

/* ---- the manual and the descriptor ------------------------------------ */

static const char help_ghost[] =
"NAME\n"
"    tide ghost - measure the RSS ghost: freed memory that stays resident\n"
"\n"
"SYNOPSIS\n"
"    tide ghost [--scenario NAME[,NAME...]] [--variant NAME[,NAME...]]\n"
"               [--size FACTOR] [--json | --csv]\n"
"\n"
"DESCRIPTION\n"
"    Runs every selected scenario under every selected allocator variant,\n"
"    each pair in a fresh child process (tide re-executes itself with the\n"
"    variant's environment and LD_PRELOAD). The child checks that the\n"
"    variant took effect, writes every byte it allocates, and reads RSS\n"
"    from /proc/self/statm at the start, after allocating (the peak) and\n"
"    after freeing. Its bookkeeping lives in mmap'd memory that is part\n"
"    of the start reading, never in the allocator under test.\n"
"\n"
"        ghost = RSS after freeing - RSS at start - bytes still live\n"
"\n"
"    as measured (it may be negative). The memory came back when the\n"
"    ghost is under 10% of the growth from start to peak. docs/GHOST.md\n"
"    explains the figures.\n"
"\n"
"  Scenarios (about 12 MiB freed each at --size 1)\n"
"    small-batch   2 rounds of 250000 objects of 48 B; after each batch a\n"
"                  48 B receipt is allocated and kept, then the batch is\n"
"                  freed (the receipt stands for whatever a program\n"
"                  allocates between making a batch and dropping it)\n"
"    medium-batch  the same with 200 objects of 60 KiB\n"
"    large-batch   the same with 60 objects of 200 KiB (glibc serves the\n"
"                  first round by mmap, then raises its mmap threshold)\n"
"    mixed         1000 groups of an 8 KiB vector buffer (kept) and 128\n"
"                  items of 96 B (freed), allocated alternately\n"
"    lifetime      12000 pairs of a 256 B long-lived object (kept) and a\n"
"                  600-1400 B short-lived one (freed)\n"
"    business      2000 requests into a tide_cache: a 16 KiB scratch\n"
"                  buffer, 20 inserts (mostly 525 B), 10 lookups, a sweep\n"
"                  every 50 requests; then every entry ages out\n"
"    threads       the mixed pattern on 4 threads at once (glibc gives\n"
"                  each thread its own arena)\n"
"\n"
"  Variants\n"
"    glibc          glibc's malloc, defaults\n"
"    glibc-mmap16k  MALLOC_MMAP_THRESHOLD_=16384 (blocks of 16 KiB and\n"
"                   more are mmap'd and munmap'd on free)\n"
"    glibc-trim     malloc_trim(0) after the frees, before the reading\n"
"    glibc-arena2   MALLOC_ARENA_MAX=2\n"
"    jemalloc       LD_PRELOAD of libjemalloc.so.2, defaults\n"
"    jemalloc-bg    MALLOC_CONF=background_thread:true,dirty_decay_ms:1000;\n"
"                   the child waits 3 s after the frees so the decay\n"
"                   can act before the reading (at 1.5 s it has done only\n"
"                   part of its work; see docs/GHOST.md)\n"
"    tcmalloc       LD_PRELOAD of libtcmalloc_minimal.so.4, defaults\n"
"    mimalloc       LD_PRELOAD of libmimalloc.so.2, defaults\n"
"    arena          every object in Tide's segment arena (64 KiB\n"
"                   segments, no reserve; business's cache in its own),\n"
"                   evacuated and given back after the frees as tided's\n"
"                   sweeper does its caches'; glibc for the rest\n"
"    The libraries are looked for in the directory of the running libc\n"
"    (e.g. /lib/x86_64-linux-gnu), then /usr/local/lib, /usr/lib64 and\n"
"    /usr/lib. A missing one makes its rows 'skipped', naming the Debian\n"
"    package (libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0). A\n"
"    variant that does not take effect (another allocator serves malloc,\n"
"    jemalloc did not read MALLOC_CONF, a 32 KiB block is not mmap'd\n"
"    under glibc-mmap16k) makes its rows fail. Allocator variables of\n"
"    tide's own environment (LD_PRELOAD, MALLOC_*, GLIBC_TUNABLES, ...)\n"
"    are removed from every child's.\n"
"\n"
"OPTIONS\n"
"    --scenario LIST  comma-separated scenario names. Default: all.\n"
"    --variant LIST   comma-separated variant names. Default: all.\n"
"    --size FACTOR    scale the object counts, greater than 0 and at most\n"
"                     64. Default 1 (the whole matrix takes about 35 s,\n"
"                     21 of them jemalloc-bg's waits).\n"
"    --json           print one JSON object (below) instead of the table\n"
"    --csv            print a header line and one line per row\n"
"    -h, --help       print this text\n"
"\n"
"OUTPUT\n"
"    The table starts with the machine: page size, kernel, glibc version\n"
"    and each preloadable allocator's version (or absent). RSS figures\n"
"    are in MiB.\n"
"\n"
"    --json prints {\"machine\": {page_size, kernel, glibc,\n"
"    tide_allocator, allocators: {glibc, jemalloc, tcmalloc, mimalloc:\n"
"    version or null}}, \"size\", \"wall_seconds\", \"results\": [...]}.\n"
"    Each result (and each --csv line) has: scenario, variant, skipped\n"
"    (true/false), status (ok, skipped or failed), reason (why it was\n"
"    skipped or failed), package (the Debian package to install, for a\n"
"    missing library), allocator and allocator_version (as the child\n"
"    detected them), rss_start_bytes, rss_peak_bytes,\n"
"    rss_after_free_bytes, live_bytes, ghost_bytes, peak_growth_bytes\n"
"    (peak - start), returned (ghost under 10% of the growth),\n"
"    allocated_bytes and objects (all requests made), threads, arenas\n"
"    (glibc's arena count at the end), trim_result (malloc_trim's return\n"
"    under glibc-trim), wait_ms, elapsed_ms. A row that is not ok has null\n"
"    figures (empty fields in CSV).\n"
"\n"
"EXIT STATUS\n"
"    0 every row ran or was skipped; 1 a row failed (the reason is in the\n"
"    row and on stderr); 2 usage error (an unknown scenario or variant, a\n"
"    bad --size).\n"
"\n"
"EXAMPLES\n"
"    tide ghost\n"
"    tide ghost --scenario mixed --variant glibc,glibc-trim\n"
"    tide ghost --size 0.1 --json | jq '.results[] | [.scenario, .variant, .ghost_bytes]'\n"
"    tide ghost --csv > ghost.csv\n";

const cli_verb cli_verb_ghost = {
    .name = "ghost", .usage = "ghost",
    .summary = "measure freed memory that stays resident, per allocator",
    .help = help_ghost, .run = run,
};
