/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_ghost.c: `tide ghost`, the RSS-ghost matrix: the options, the rows
 * the ghost runner returns, printed as a table, one JSON object (--json)
 * or CSV (--csv); then one line of conclusion per variant, and the files
 * (src/lab/ghost_chart.h): the matrix as CSV in --out DIR, the gnuplot
 * script beside it, and the chart gnuplot draws from them.
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
 * Where the conclusions go: after the table on stdout; in the JSON
 * document ("conclusions", with "files" and "chart"); on stderr beside
 * --csv, so that stdout stays one CSV.
 *
 * Invariants:
 *   1. The exit status is 1 when a row failed (each failure also named on
 *      stderr) or the files could not be written, 0 when every row ran or
 *      was skipped, 2 for a usage error. A missing gnuplot is not a
 *      failure: the chart's line says how to draw it.
 *   2. A child mode prints exactly one line on stdout (its report), or
 *      nothing when the report could not be made.
 *
 * Never: start a process here (the runner and gnuplot's run do), write
 * a file from a child mode, or print anything but the report on a child's
 * stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "lab/ghost_chart.h"
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
            if (out == OUT_CSV) tide_lab_ghost_csv_row(stdout, r);
            json_array_append_new(results, r);
        }
    }
    return failed;
}

/* What the command line asked for. */
typedef struct ghost_opts {
    int         want_s[MAX_SCENARIOS], want_v[MAX_VARIANTS];
    const char *child, *variant_text, *out_dir, *prefix;
    int         out, probe;
    double      size;
} ghost_opts;

/* The options into *o. CLI_OK, CLI_USAGE, or -1 after --help. */
static int parse(int argc, char **argv, ghost_opts *o)
{
    static const struct option opts[] = {
        { "json",        no_argument,       NULL, 'j' },
        { "csv",         no_argument,       NULL, 'c' },
        { "scenario",    required_argument, NULL, 's' },
        { "variant",     required_argument, NULL, 'v' },
        { "size",        required_argument, NULL, 'z' },
        { "out",         required_argument, NULL, 'o' },
        { "prefix",      required_argument, NULL, 'p' },
        { "help",        no_argument,       NULL, 'h' },
        { "child",       required_argument, NULL, 'C' },
        { "child-probe", no_argument,       NULL, 'P' },
        { NULL, 0, NULL, 0 },
    };
    int c, rc = CLI_OK;

    memset(o, 0, sizeof *o);
    o->out = OUT_TABLE, o->size = 1.0, o->out_dir = "ghost-out", o->prefix = "ghost";
    cli_getopt_reset();
    while (rc == CLI_OK && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': o->out = OUT_JSON; break;
        case 'c': o->out = OUT_CSV; break;
        case 's': rc = parse_scenarios(optarg, o->want_s); break;
        case 'v':
            o->variant_text = optarg;
            rc = parse_variants(optarg, o->want_v);
            break;
        case 'z':
            if (cli_parse_double(optarg, &o->size) != 0 || !(o->size > 0.0 && o->size <= 64.0))
                rc = cli_usage(VERB, "--size '%s' is not a number greater than 0 and at most 64", optarg);
            break;
        case 'o': o->out_dir = optarg; break;
        case 'p':
            if (optarg[0] == '\0' || strchr(optarg, '/'))
                rc = cli_usage(VERB, "--prefix '%s' is not a file name (empty, or has a '/')", optarg);
            else o->prefix = optarg;
            break;
        case 'h': cli_help(VERB, stdout); return -1;
        case 'C': o->child = optarg; break;
        case 'P': o->probe = 1; break;
        default: return cli_option_error(VERB, c, argv);
        }
    }
    if (rc == CLI_OK && optind < argc) rc = cli_usage(VERB, "unexpected argument '%s'", argv[optind]);
    return rc;
}

/* The conclusions, the files and how the chart went, on f (stdout for the
 * table, stderr beside CSV on stdout). */
static void print_outcome(FILE *f, const ghost_opts *o, json_t *conclusions, const char *note)
{
    size_t i;
    json_t *c;

    fputc('\n', f);
    json_array_foreach(conclusions, i, c) fprintf(f, "%s\n", json_string_value(c));
    fprintf(f, "\nfiles: %s/%s-matrix.csv, %s-matrix.gp, %s-matrix.png, %s-matrix.svg\nchart: %s\n", o->out_dir,
            o->prefix, o->prefix, o->prefix, o->prefix, note);
}

/* The JSON document: the machine, the rows, the conclusions, the files. */
static int print_json(const ghost_opts *o, json_t *machine, json_t *results, json_t *conclusions,
                      const char *note, double seconds)
{
    char p[4][4096];
    static const char *const what[] = { "csv", "gp", "png", "svg" };
    json_t *doc;
    int rc = CLI_OK;

    for (size_t i = 0; i < 4; i++) snprintf(p[i], sizeof p[i], "%s/%s-matrix.%s", o->out_dir, o->prefix, what[i]);
    doc = json_pack("{s:O, s:f, s:f, s:O, s:O, s:{s:s, s:s, s:s, s:s}, s:s}", "machine", machine, "size", o->size,
                    "wall_seconds", seconds, "results", results, "conclusions", conclusions, "files", "csv", p[0],
                    "gnuplot", p[1], "png", p[2], "svg", p[3], "chart", note);
    if (doc == NULL || json_dumpf(doc, stdout, JSON_INDENT(2)) != 0) rc = cli_error(VERB, "could not write the JSON document");
    else putchar('\n');
    json_decref(doc);
    return rc;
}

/* The matrix, its files and conclusions, in the output asked for. */
static int run_matrix(const ghost_opts *o)
{
    json_t *machine = NULL, *results = NULL, *conclusions = NULL;
    double t0 = wall_now();
    char note[8192] = "";
    int failed, rc;

    if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {     /* before the minutes of the run */
        rc = cli_error(VERB, "--out %s: cannot make the directory: %s", o->out_dir, strerror(errno));
        goto done;
    }
    machine = tide_lab_ghost_machine();
    results = json_array();
    if (machine == NULL || results == NULL) { rc = cli_error(VERB, "out of memory"); goto done; }
    if (o->out == OUT_TABLE) table_header(machine, o->size);
    if (o->out == OUT_CSV) tide_lab_ghost_csv_header(stdout);
    failed = run_rows(o->want_s, o->want_v, o->size, o->out, results);
    if (o->out == OUT_TABLE)
        printf("\n%zu rows, %d failed, %.1f s\n", json_array_size(results), failed, wall_now() - t0);
    fflush(stdout);
    conclusions = tide_lab_ghost_conclusions(results);
    if (conclusions == NULL) { rc = cli_error(VERB, "out of memory"); goto done; }
    if (tide_lab_ghost_files(o->out_dir, o->prefix, machine, results, o->size, note, sizeof note) != 0) {
        rc = cli_error(VERB, "%s", tide_last_error());
        goto done;
    }
    if (o->out == OUT_JSON) rc = print_json(o, machine, results, conclusions, note, wall_now() - t0);
    else print_outcome(o->out == OUT_CSV ? stderr : stdout, o, conclusions, note), rc = CLI_OK;
    if (rc == CLI_OK && failed) rc = CLI_FAIL;
done:
    json_decref(machine);
    json_decref(results);
    json_decref(conclusions);
    return rc;
}

static int run(int argc, char **argv)
{
    ghost_opts o;
    int rc = parse(argc, argv, &o);

    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    if (o.probe) return child_probe();
    if (o.child) return child_run(o.child, o.variant_text, o.size);
    if (!any(o.want_s, tide_lab_ghost_scenario_count()))
        for (size_t i = 0; i < tide_lab_ghost_scenario_count(); i++) o.want_s[i] = 1;
    if (!any(o.want_v, tide_lab_ghost_variant_count()))
        for (size_t i = 0; i < tide_lab_ghost_variant_count(); i++) o.want_v[i] = 1;
    return run_matrix(&o);
}

/* ---- the manual and the descriptor ------------------------------------ */

static const char help_ghost[] =
"NAME\n"
"    tide ghost - measure the RSS ghost: freed memory that stays resident\n"
"\n"
"SYNOPSIS\n"
"    tide ghost [--scenario NAME[,NAME...]] [--variant NAME[,NAME...]]\n"
"               [--size FACTOR] [--json | --csv] [--out DIR] [--prefix NAME]\n"
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
"    Then one line of conclusion per variant, from the figures: the\n"
"    scenario where its ghost is largest and how much of what the frees\n"
"    could give back (peak - start - live) stayed resident; in how many\n"
"    scenarios the memory came back; and for a variant of glibc or\n"
"    jemalloc (glibc-trim, jemalloc-bg, the arena, ...) how much of the\n"
"    plain allocator's ghost it removes where it removes the most. The\n"
"    matrix is written as CSV, with a gnuplot script beside it that gnuplot\n"
"    runs to draw the chart (FILES).\n"
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
"    --csv            print a header line and one line per row (the\n"
"                     conclusions and the files' names go to stderr)\n"
"    --out DIR        where the files go (created). Default ghost-out.\n"
"    --prefix NAME    the files' prefix. Default ghost.\n"
"    -h, --help       print this text\n"
"\n"
"OUTPUT\n"
"    The table starts with the machine: page size, kernel, glibc version\n"
"    and each preloadable allocator's version (or absent). RSS figures\n"
"    are in MiB.\n"
"\n"
"    --json prints {\"machine\": {page_size, kernel, glibc,\n"
"    tide_allocator, allocators: {glibc, jemalloc, tcmalloc, mimalloc:\n"
"    version or null}}, \"size\", \"wall_seconds\", \"results\": [...],\n"
"    \"conclusions\": [one line per variant], \"files\": {csv, gnuplot, png,\n"
"    svg}, \"chart\": how the drawing went}.\n"
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
"FILES\n"
"    DIR/NAME-matrix.csv   the rows, as --csv prints them (figures in bytes)\n"
"    DIR/NAME-matrix.gp    the chart's gnuplot script, which reads the CSV\n"
"                          beside it: redraw with `gnuplot NAME-matrix.gp`\n"
"    DIR/NAME-matrix.png   the chart, drawn when gnuplot is installed\n"
"    DIR/NAME-matrix.svg   (otherwise the chart line says how to draw it):\n"
"                          one group of bars per variant, one bar per\n"
"                          scenario, the ghost filled and peak - start -\n"
"                          live outlined; the key outside, on the right\n"
"\n"
"EXIT STATUS\n"
"    0 every row ran or was skipped; 1 a row failed (the reason is in the\n"
"    row and on stderr) or a file could not be written; 2 usage error (an unknown scenario or variant, a\n"
"    bad --size).\n"
"\n"
"EXAMPLES\n"
"    tide ghost\n"
"    tide ghost --scenario mixed --variant glibc,glibc-trim\n"
"    tide ghost --size 0.1 --json | jq '.results[] | [.scenario, .variant, .ghost_bytes]'\n"
"    tide ghost --csv > ghost.csv\n"
"    tide ghost --out /tmp/ghost && xdg-open /tmp/ghost/ghost-matrix.svg\n";

const cli_verb cli_verb_ghost = {
    .name = "ghost", .usage = "ghost",
    .summary = "measure freed memory that stays resident, per allocator",
    .help = help_ghost, .run = run,
};
