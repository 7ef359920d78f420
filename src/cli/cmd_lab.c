/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_lab.c: `tide lab`, trim or no trim side by side on live nodes: the
 * options, the call of the lab's runner, and the printed summary.
 *
 * The engine is src/lab/runner.h: it starts one tided per variant on
 * loopback, drives them all with the same ledger-like workload, samples
 * their RSS and collects their sweep rounds, stops them, and computes and
 * writes the figures, the CSVs, the chart (gnuplot) and the summary document.
 * This file turns the options into a tide_lab_plan, runs it, and prints
 * the summary as a table or as the JSON document (--json).
 *
 * Layout: the option parsers; the options; the plan's checks; the table;
 * the verb.
 *
 * Invariants:
 *   1. An error before any node starts is printed here, once, as
 *      "tide lab: <message>" (exit 2 for a usage error, 1 otherwise); what
 *      happens while the nodes run the runner reports as it happens.
 *   2. A run interrupted by SIGINT or SIGTERM prints what was measured and
 *      exits 1.
 *
 * Never: start a process, open a socket or read /proc here (the runner
 * does), or print the summary before the files are written.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/runner.h"
#include "tide/error.h"
#include "util/size.h"

#define VERB "lab"

/* ---- the option parsers ------------------------------------------------------ */

static int parse_seconds(const char *opt, const char *text, double min, double max, double *out)
{
    if (cli_parse_double(text, out) != 0 || *out < min || *out > max)
        return cli_usage(VERB, "%s '%s' is not a number of seconds from %g to %g", opt, text, min, max);
    return 0;
}

static int parse_count(const char *opt, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    if (cli_parse_u64(text, min, max, out) != 0)
        return cli_usage(VERB, "%s '%s' is not a whole number from %llu to %llu", opt, text,
                         (unsigned long long)min, (unsigned long long)max);
    return 0;
}

/* --object-size MIN-MAX (sizes, e.g. 64KiB-256KiB) into the workload. */
static int parse_object_size(tide_lab_plan *p, const char *text)
{
    char lo[64], hi[64];
    const char *dash = strchr(text, '-');
    uint64_t a, b;

    if (dash == NULL || (size_t)(dash - text) >= sizeof lo || strlen(dash + 1) >= sizeof hi) goto bad;
    snprintf(lo, sizeof lo, "%.*s", (int)(dash - text), text);
    snprintf(hi, sizeof hi, "%s", dash + 1);
    if (tide_size_parse(lo, &a) != 0 || tide_size_parse(hi, &b) != 0 || a < 1 || a > b || b > TIDE_LAB_OBJECT_MAX)
        goto bad;
    p->w.size_min = (uint32_t)a;
    p->w.size_max = (uint32_t)b;
    return CLI_OK;
bad:
    return cli_usage(VERB, "--object-size '%s' is not MIN-MAX, two sizes from 1 to 16MiB with MIN <= MAX "
                     "(e.g. 64KiB-256KiB)", text);
}

/* ---- the options ---------------------------------------------------------------- */

enum { O_VARIANT = 256, O_CUSTOM, O_DURATION, O_LEDGERS, O_INTERVAL, O_OBJECTS, O_READS, O_CLIENTS,
       O_SEED, O_WARMUP, O_REPEAT, O_SWEEP, O_NODE_SIZE, O_NODE_ARGS, O_TIDED, O_JEMALLOC, O_PORT,
       O_OUT, O_PREFIX, O_SCRATCH, O_KEEP, O_REFERENCED, O_JSON, O_BASELINE, O_INNER, O_RECENT, O_WAVE, O_WAVE_PCT,
       O_SAMPLE, O_OBJECT_SIZE, O_HEARTBEAT, O_QUIET, O_REDRAW };

static const struct option lab_options[] = {
    { "variant", required_argument, NULL, O_VARIANT },   { "custom", required_argument, NULL, O_CUSTOM },
    { "duration", required_argument, NULL, O_DURATION }, { "ledgers", required_argument, NULL, O_LEDGERS },
    { "ledger-interval", required_argument, NULL, O_INTERVAL },
    { "objects", required_argument, NULL, O_OBJECTS },   { "reads", required_argument, NULL, O_READS },
    { "inner-pct", required_argument, NULL, O_INNER },   { "recent-pct", required_argument, NULL, O_RECENT },
    { "wave", required_argument, NULL, O_WAVE },         { "wave-pct", required_argument, NULL, O_WAVE_PCT },
    { "clients", required_argument, NULL, O_CLIENTS },   { "seed", required_argument, NULL, O_SEED },
    { "warmup", required_argument, NULL, O_WARMUP },     { "repeat", required_argument, NULL, O_REPEAT },
    { "sweep-interval", required_argument, NULL, O_SWEEP },
    { "node-size", required_argument, NULL, O_NODE_SIZE }, { "node-args", required_argument, NULL, O_NODE_ARGS },
    { "tided", required_argument, NULL, O_TIDED },       { "jemalloc", required_argument, NULL, O_JEMALLOC },
    { "port", required_argument, NULL, O_PORT },         { "out", required_argument, NULL, O_OUT },
    { "prefix", required_argument, NULL, O_PREFIX },     { "scratch", required_argument, NULL, O_SCRATCH },
    { "keep", no_argument, NULL, O_KEEP },               { "referenced", no_argument, NULL, O_REFERENCED },
    { "baseline", required_argument, NULL, O_BASELINE },
    { "sample-interval", required_argument, NULL, O_SAMPLE }, { "object-size", required_argument, NULL, O_OBJECT_SIZE },
    { "heartbeat", required_argument, NULL, O_HEARTBEAT }, { "quiet", no_argument, NULL, O_QUIET },
    { "json", no_argument, NULL, O_JSON },               { "help", no_argument, NULL, 'h' },
    { "redraw", no_argument, NULL, O_REDRAW },
    { NULL, 0, NULL, 0 },
};

typedef struct lab_args {
    tide_lab_plan *p;
    const char    *variants;                         /* --variant's list */
    const char    *customs[TIDE_LAB_MAX_VARIANTS];   /* --custom NAME=SPEC */
    size_t         ncustom;
    int            warmup_given, json;
    int            redraw;                           /* --redraw given */
    const char    *run_option;                       /* an option only a run takes */
} lab_args;

/* A whole number option into *out (unsigned). */
static int count_opt(const char *opt, const char *text, uint64_t min, uint64_t max, unsigned *out)
{
    uint64_t u;
    int rc = parse_count(opt, text, min, max, &u);
    if (rc == 0) *out = (unsigned)u;
    return rc;
}

/* One option (getopt_long's c, its optarg). CLI_OK or CLI_USAGE. */
static int parse_option(lab_args *a, int c, const char *arg)
{
    tide_lab_plan *p = a->p;

    switch (c) {
    case O_VARIANT: a->variants = arg; return CLI_OK;
    case O_CUSTOM:
        if (a->ncustom >= TIDE_LAB_MAX_VARIANTS || strchr(arg, '=') == NULL)
            return cli_usage(VERB, "--custom '%s' is not NAME=TIDED-FLAGS (e.g. pad='--trim-policy every:2')", arg);
        a->customs[a->ncustom++] = arg;
        return CLI_OK;
    case O_DURATION: return parse_seconds("--duration", arg, 0, 86400, &p->duration);
    case O_LEDGERS: return parse_count("--ledgers", arg, 0, 100000000, &p->ledgers);
    case O_INTERVAL: return parse_seconds("--ledger-interval", arg, 0.01, 3600, &p->interval);
    case O_OBJECTS: return count_opt("--objects", arg, 1, 1000000, &p->w.objects);
    case O_READS: return count_opt("--reads", arg, 0, 1000000, &p->w.reads);
    case O_INNER: return count_opt("--inner-pct", arg, 0, 100, &p->w.inner_pct);
    case O_RECENT: return count_opt("--recent-pct", arg, 0, 100, &p->w.recent_pct);
    case O_WAVE: return count_opt("--wave", arg, 0, 1000000, &p->w.wave_period);
    case O_WAVE_PCT: return count_opt("--wave-pct", arg, 0, 100, &p->w.wave_pct);
    case O_CLIENTS: return count_opt("--clients", arg, 1, TIDE_LAB_MAX_CLIENTS, &p->clients);
    case O_SEED: return parse_count("--seed", arg, 0, UINT64_MAX, &p->w.seed);
    case O_WARMUP: a->warmup_given = 1; return parse_seconds("--warmup", arg, 0, 86400, &p->warmup);
    case O_REPEAT: return count_opt("--repeat", arg, 1, 100, &p->repeat);
    case O_SWEEP: return count_opt("--sweep-interval", arg, 10, 600, &p->sweep_interval);
    case O_NODE_SIZE:
        if (strcmp(arg, "tiny") && strcmp(arg, "small") && strcmp(arg, "medium") &&
            strcmp(arg, "large") && strcmp(arg, "huge"))
            return cli_usage(VERB, "--node-size '%s' is not tiny, small, medium, large or huge", arg);
        p->node_size = arg;
        return CLI_OK;
    case O_NODE_ARGS: p->node_args = arg; return CLI_OK;
    case O_TIDED: p->tided = arg; return CLI_OK;
    case O_JEMALLOC: p->jemalloc = arg; return CLI_OK;
    case O_PORT: return count_opt("--port", arg, 1024, 65535, &p->base_port);
    case O_OUT: p->out = arg; return CLI_OK;
    case O_PREFIX: p->prefix = arg; return CLI_OK;
    case O_SCRATCH: p->scratch = arg; return CLI_OK;
    case O_KEEP: p->keep = 1; return CLI_OK;
    case O_REFERENCED: p->referenced = 1; return CLI_OK;
    case O_BASELINE: p->baseline = arg; return CLI_OK;
    case O_SAMPLE: return parse_seconds("--sample-interval", arg, 0.01, 60, &p->sample_interval);
    case O_OBJECT_SIZE: return parse_object_size(p, arg);
    case O_JSON: a->json = 1; return CLI_OK;
    case O_HEARTBEAT: return parse_seconds("--heartbeat", arg, 0, 86400, &p->heartbeat);
    case O_QUIET: p->heartbeat = 0; return CLI_OK;
    default: return CLI_USAGE;
    }
}

/* The run's length and warm-up, then the variants. CLI_OK or CLI_USAGE. */
static int plan_check(lab_args *a, int argc, char **argv)
{
    tide_lab_plan *p = a->p;

    if (optind < argc) return cli_usage(VERB, "unexpected argument '%s'", argv[optind]);
    if (p->duration <= 0 && p->ledgers == 0)
        return cli_usage(VERB, "--duration 0 needs --ledgers N (the run must end)");
    if (p->duration <= 0 || (p->ledgers && (double)p->ledgers * p->interval < p->duration))
        p->duration = (double)p->ledgers * p->interval;
    if (!a->warmup_given) p->warmup = 0.2 * p->duration;
    if (p->warmup >= p->duration)
        return cli_usage(VERB, "--warmup %g must be shorter than the run (%g s)", p->warmup, p->duration);
    if (tide_lab_plan_variants(p, a->variants, a->customs, a->ncustom) != 0)
        return cli_usage(VERB, "%s", tide_last_error());
    return CLI_OK;
}

/* The command as typed, for the chart's subtitle and the document. */
static void plan_command(tide_lab_plan *p, int argc, char **argv)
{
    size_t at = (size_t)snprintf(p->command, sizeof p->command, "tide");
    for (int i = 0; i < argc && at < sizeof p->command; i++)
        at += (size_t)snprintf(p->command + at, sizeof p->command - at, " %s", argv[i]);
}

/* Parse argv into a->p. CLI_OK, CLI_USAGE, or -1 after --help (printed). */
static int parse_options(lab_args *a, int argc, char **argv)
{
    int c, rc;

    plan_command(a->p, argc, argv);
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", lab_options, NULL)) != -1) {
        if (c == 'h') { cli_help(VERB, stdout); return -1; }
        if (c == '?' || c == ':') return cli_option_error(VERB, c, argv);
        if (c == O_REDRAW) { a->redraw = 1; continue; }
        if (c != O_OUT && c != O_PREFIX && a->run_option == NULL) a->run_option = argv[optind - (optarg ? 2 : 1)];
        if ((rc = parse_option(a, c, optarg))) return rc;
    }
    if (a->redraw) {
        /* A redraw reads a finished run's files; any option of a run would
         * be silently ignored, so it is refused. */
        if (a->run_option)
            return cli_usage(VERB, "--redraw takes only --out and --prefix (the run's settings are read from "
                             "its summary), not %s", a->run_option);
        if (optind < argc) return cli_usage(VERB, "unexpected argument '%s'", argv[optind]);
        return CLI_OK;
    }
    return plan_check(a, argc, argv);
}

/* ---- the table ------------------------------------------------------------------ */

static void fmt_mib(char *buf, size_t cap, double v)
{
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.1f", v / 1048576.0);
}

static void fmt_num(char *buf, size_t cap, const char *f, double v)
{
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, f, v);
}

static void print_row(FILE *f, const char *label, const tide_lab_figures *x, double red)
{
    char pl[32], rd[32], lw[32], rm[32], rx[32], dm[32], dp[32], mf[32], fr[32];
    fmt_mib(pl, sizeof pl, x->plateau_mean_rss);
    fmt_num(rd, sizeof rd, "%+.1f%%", isnan(red) ? NAN : -red);
    fmt_num(lw, sizeof lw, "%.0f%%", x->lowered_pct);
    fmt_mib(rm, sizeof rm, x->release_median);
    fmt_mib(rx, sizeof rx, x->release_max);
    fmt_num(dm, sizeof dm, "%.2f", x->trim_median_ms);
    fmt_num(dp, sizeof dp, "%.2f", x->trim_p95_ms);
    fmt_num(mf, sizeof mf, "%.0f", x->minflt_per_trim);
    fmt_mib(fr, sizeof fr, x->freed_median);
    fprintf(f, "%-14s %9s %8s %5zu/%-5zu %7s %7s %7s %7s %7s %8s %7s\n", label, pl, rd, x->trims, x->sweeps,
            lw, rm, rx, dm, dp, mf, fr);
}

static int any_rotation(const tide_lab_plan *o, const tide_lab_summary *s)
{
    for (size_t i = 0; i < o->nv; i++) if (s->v[i].rot) return 1;
    return 0;
}

static void print_rotation_row(const char *label, const tide_lab_rotfig *x)
{
    char pk[32], ls[32], wr[32], st[32], tr[32], cr[32], mf[32], sw[32], dr[32], tt[32], tm[32];
    fmt_mib(pk, sizeof pk, x->peak_disk);
    fmt_mib(ls, sizeof ls, x->last_disk);
    fmt_mib(wr, sizeof wr, x->written);
    fmt_num(st, sizeof st, "%+.1f", isnan(x->step_median) ? NAN : x->step_median / 1048576.0);
    fmt_mib(tr, sizeof tr, x->trim_release_median);
    fmt_num(cr, sizeof cr, "%.1f", x->create_ms);
    fmt_num(mf, sizeof mf, "%.1f", x->manifest_ms);
    fmt_num(sw, sizeof sw, "%.3f", x->switch_ms);
    fmt_num(dr, sizeof dr, "%.0f", x->drop_ms);
    fmt_num(tt, sizeof tt, "%.0f", x->total_ms);
    fmt_num(tm, sizeof tm, "%.1f", x->trim_ms);
    printf("%-14s %8s %8s %9s %5zu/%-3zu %8s %8s %7s %8s %7s %7s %7s %6s\n", label, pk, ls, wr, x->dropping,
           x->rotations, st, tr, cr, mf, sw, dr, tt, tm);
}

/* The rotating variants' figures (docs/ROTATION.md), when there are any:
 * disk against bytes written, the RSS step across a rotation, and the
 * phases' medians over the rotations that dropped a generation. */
static void print_rotations(const tide_lab_plan *o, const tide_lab_summary *s)
{
    if (!any_rotation(o, s)) return;
    printf("\n%-14s %8s %8s %9s %9s %8s %8s %7s %8s %7s %7s %7s %6s\n", "online delete", "peak", "final",
           "written", "dropping/", "RSS step", "trim rel", "create", "manifest", "switch", "drop", "total", "trim");
    printf("%-14s %8s %8s %9s %9s %8s %8s %7s %8s %7s %7s %7s %6s\n", "", "disk MiB", "disk MiB", "MiB",
           "rotations", "med MiB", "med MiB", "med ms", "med ms", "med ms", "med ms", "med ms", "med ms");
    for (size_t i = 0; i < o->nv; i++) {
        if (s->v[i].rot == NULL) continue;
        for (unsigned r = 0; r < o->repeat; r++) {
            char label[48];
            if (o->repeat > 1) snprintf(label, sizeof label, "%s rep %u", o->v[i].name, r + 1);
            else snprintf(label, sizeof label, "%s", o->v[i].name);
            print_rotation_row(label, &s->v[i].rot[r]);
        }
    }
    printf("(RSS step: RSS %g s after a rotation that dropped a generation minus RSS just before it, median "
           "over those after the warm-up; phases: medians over the rotations that dropped one)\n",
           TIDE_LAB_STEP_AFTER_S);
}

static int any_limit(const tide_lab_plan *o, const tide_lab_summary *s)
{
    for (size_t i = 0; i < o->nv; i++) if (s->v[i].lim) return 1;
    return 0;
}

static void print_limit_row(const char *label, const tide_lab_limfig *x)
{
    char lm[32], pk[32], pl[32], ov[32], sh[32], gr[32], rt[32], gm[32], lc[32];
    fmt_mib(lm, sizeof lm, x->limit);
    fmt_mib(pk, sizeof pk, x->peak_rss);
    fmt_num(pl, sizeof pl, "%.3f", x->peak_per_limit);
    snprintf(ov, sizeof ov, "%zu/%zu", x->samples_over, x->samples);
    fmt_num(sh, sizeof sh, "%.2f%%", x->shed_pct);
    fmt_num(gr, sizeof gr, "%.0f", x->get_rate);
    fmt_num(rt, sizeof rt, "%.3f", x->get_rate_ratio);
    fmt_num(gm, sizeof gm, "%.2f", x->get_mean_ms);
    fmt_num(lc, sizeof lc, "%.0f", x->level_changes);
    printf("%-14s %7s %8s %6s %11s %8s %7s %7s %7s %7s\n", label, lm, pk, pl, ov, sh, gr, rt, gm, lc);
}

/* The memory-limit figures (docs/MEMORY-LIMIT.md), when a node had a
 * limit: a row per variant and repetition. */
static void print_limits(const tide_lab_plan *o, const tide_lab_summary *s)
{
    if (!any_limit(o, s)) return;
    printf("\n%-14s %7s %8s %6s %11s %8s %7s %7s %7s %7s\n", "memory limit", "limit", "max RSS", "max/", "samples",
           "PUTs", "GET", "GET vs", "GET", "level");
    printf("%-14s %7s %8s %6s %11s %8s %7s %7s %7s %7s\n", "", "MiB", "MiB", "limit", "over/all", "shed", "/s",
           o->baseline, "mean ms", "changes");
    for (size_t i = 0; i < o->nv; i++) {
        for (unsigned r = 0; r < o->repeat; r++) {
            char label[48];
            if (o->repeat > 1) snprintf(label, sizeof label, "%s rep %u", o->v[i].name, r + 1);
            else snprintf(label, sizeof label, "%s", o->v[i].name);
            print_limit_row(label, &s->v[i].lim[r]);
        }
        if (o->repeat > 1) {      /* the medians over the repetitions */
            tide_lab_limfig m = s->v[i].lim[0];
            char label[48];
            snprintf(label, sizeof label, "%s median", o->v[i].name);
            m.peak_rss = m.get_rate = m.get_mean_ms = NAN;
            m.peak_per_limit = s->v[i].peak_per_limit_median;
            m.shed_pct = s->v[i].shed_pct_median;
            m.get_rate_ratio = s->v[i].get_rate_ratio_median;
            m.level_changes = s->v[i].level_changes_median;
            m.samples = m.samples_over = 0;      /* samples: all the repetitions' */
            for (unsigned r = 0; r < o->repeat; r++)
                m.samples += s->v[i].lim[r].samples, m.samples_over += s->v[i].lim[r].samples_over;
            print_limit_row(label, &m);
        }
    }
    printf("(max RSS: the largest sample, every %g s; PUTs shed: 503 overloaded per PUT sent; GET /s: GETs "
           "answered 200 per second of load; level changes: the node's /v1/status%s)\n", o->sample_interval,
           o->repeat > 1 ? "; a median line: the medians over the repetitions, the samples of all of them" : "");
}

/* Whether the load generator kept up, a line per variant saying what
 * the run concludes or why it concludes nothing, and how the chart went. */
static void print_verdicts(const tide_lab_plan *o, const tide_lab_summary *s)
{
    printf("\n");
    if (s->invalid)
        printf("INVALID RUN: the load generator fell behind: %llu of %llu ledger shares late (%.1f%%; a repetition "
               "over %g%% is invalid): the nodes did not get the planned load, and no figure above is a result\n",
               (unsigned long long)s->late, (unsigned long long)s->shares,
               s->shares ? 100.0 * (double)s->late / (double)s->shares : 0.0, TIDE_LAB_LATE_PCT);
    else
        printf("load: %llu of %llu ledger shares late (at most %g%% per repetition allowed)\n",
               (unsigned long long)s->late, (unsigned long long)s->shares, TIDE_LAB_LATE_PCT);
    printf("verdicts (plateau test and rules: docs/LAB.md, \"Verdicts\"):\n");
    for (size_t i = 0; i < o->nv; i++) printf("  %s\n", s->v[i].why);
    printf("chart: %s\n", s->chart);
}

/* The summary as a table: a row per variant (with --repeat, the medians
 * first, then a row per repetition). */
static void print_table(const tide_lab_plan *o, const tide_lab_summary *s)
{
    printf("%s\n", o->command);
    printf("%zu variants x %u repetition%s of %g s, plateau after %g s; %u objects (wave: +-%u%% over %u "
           "ledgers) + %u reads per ledger every %g s from %u client threads; seed %llu\n",
           o->nv, o->repeat, o->repeat > 1 ? "s" : "", o->duration, o->warmup, o->w.objects, o->w.wave_pct,
           o->w.wave_period, o->w.reads, o->interval, o->clients, (unsigned long long)o->w.seed);
    printf("\n%-14s %9s %8s %11s %7s %7s %7s %7s %7s %8s %7s\n", "variant", "plateau", "vs", "trims/",
           "lowered", "release", "release", "trim", "trim", "minflt", "freed");
    printf("%-14s %9s %8s %11s %7s %7s %7s %7s %7s %8s %7s\n", "", "MiB", o->baseline, "sweeps", "RSS", "med MiB",
           "max MiB", "med ms", "p95 ms", "/trim", "med MiB");
    for (size_t i = 0; i < o->nv; i++) {
        const tide_lab_vsum *v = &s->v[i];
        tide_lab_figures m = v->fig[0];
        int base = i == s->base;     /* its own reduction is no figure */
        if (o->repeat > 1) {     /* the medians line first, then each repetition */
            m.plateau_mean_rss = v->plateau_median;
            print_row(stdout, o->v[i].name, &m, base ? NAN : v->reduction_median);
            for (unsigned r = 0; r < o->repeat; r++) {
                char label[48];
                snprintf(label, sizeof label, "  rep %u", r + 1);
                print_row(stdout, label, &v->fig[r], base ? NAN : v->reduction[r]);
            }
        } else {
            print_row(stdout, o->v[i].name, &m, base ? NAN : v->reduction[0]);
        }
    }
    if (o->repeat > 1) printf("(a variant's first line: plateau and reduction are medians over the repetitions; "
                              "the trim columns are repetition 1's)\n");
    print_rotations(o, s);
    print_limits(o, s);
    print_verdicts(o, s);
    printf("\nfiles: %s/%s-rss.csv, %s-sweeps.csv, %s-rss.gp, %s-rss.png, %s-rss.svg, %s-summary.json", o->out,
           o->prefix, o->prefix, o->prefix, o->prefix, o->prefix, o->prefix);
    if (any_rotation(o, s)) printf(", %s-disk.csv, %s-rotations.csv", o->prefix, o->prefix);
    if (any_limit(o, s)) printf(", %s-limits.csv", o->prefix);
    printf("\n");
}

/* ---- the verb ------------------------------------------------------------------- */

static int run(int argc, char **argv)
{
    static tide_lab_plan plan;
    lab_args a = { &plan, "trim,notrim", { NULL }, 0, 0, 0, 0, NULL };
    tide_lab_run lab;
    tide_lab_summary sum;
    int rc;

    memset(&lab, 0, sizeof lab);
    memset(&sum, 0, sizeof sum);
    tide_lab_plan_init(&plan);
    rc = parse_options(&a, argc, argv);
    if (rc) { rc = rc < 0 ? CLI_OK : rc; goto done; }
    if (a.redraw) {
        char said[PATH_MAX + 256];
        if (tide_lab_redraw(plan.out, plan.prefix, said, sizeof said) != 0)
            rc = cli_error(VERB, "%s", tide_last_error());
        else
            printf("%s\n", said);
        goto done;
    }
    if (tide_lab_run_prepare(&lab, &plan) != 0) { rc = cli_error(VERB, "%s", tide_last_error()); goto done; }
    if (tide_lab_run_all(&lab) != 0) { rc = CLI_FAIL; goto done; }     /* reported as it happened */
    if (tide_lab_summary_compute(&sum, &lab) != 0 || tide_lab_summary_write(&sum, &lab) != 0) {
        rc = cli_error(VERB, "%s", tide_last_error());
        goto done;
    }
    if (a.json) {
        char *s = json_dumps(sum.doc, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (s) { puts(s); free(s); }
    } else {
        print_table(&plan, &sum);
    }
    if (lab.interrupted) rc = CLI_FAIL;       /* invariant 2 */
done:
    tide_lab_summary_free(&sum);
    tide_lab_run_finish(&lab, rc == CLI_OK);
    tide_lab_plan_free(&plan);
    return rc;
}

/* ---- the manual and the descriptor ------------------------------------ */

static const char help_lab[] =
"NAME\n"
"    tide lab - run tided with and without trims side by side and chart RSS\n"
"\n"
"SYNOPSIS\n"
"    tide lab [--variant NAME[,NAME...]] [--custom NAME=FLAGS]...\n"
"             [--duration S] [--ledgers N] [--ledger-interval S]\n"
"             [--objects N] [--reads N] [--wave N] [--wave-pct P]\n"
"             [--object-size MIN-MAX] [--sample-interval S]\n"
"             [--clients N] [--seed N]\n"
"             [--warmup S] [--repeat N] [--sweep-interval S]\n"
"             [--node-size SIZE] [--node-args FLAGS] [--out DIR]\n"
"             [--prefix NAME] [--referenced] [--json] [--keep]\n"
"             [--heartbeat S | --quiet]\n"
"    tide lab --redraw [--out DIR] [--prefix NAME]\n"
"\n"
"DESCRIPTION\n"
"    Starts one tided per variant at once, on 127.0.0.1, each with a fresh\n"
"    store in a scratch directory, and the same node settings (--node-size,\n"
"    default tiny: a 64 MiB cache budget and a 30 s cache age, so that the\n"
"    node cache frees memory at every sweep; --sweep-interval, default 10).\n"
"    Then drives every node with the same synthetic ledger workload from\n"
"    --clients threads, each holding one keep-alive HTTP connection per\n"
"    node and sending each request to every node in turn, in an order\n"
"    shuffled per repetition.\n"
"\n"
"    A ledger, every --ledger-interval seconds, PUTs --objects new objects\n"
"    (60% of about 525 bytes, like inner nodes, the rest from 100 bytes to\n"
"    2 KiB) and GETs --reads objects spread among them: half from the two\n"
"    previous ledgers, half from any earlier ledger (mostly store reads the\n"
"    cache then holds until they age out). The number of new objects\n"
"    rises and falls in a slow wave (--wave, --wave-pct): under a perfectly\n"
"    steady load glibc reuses every freed chunk and a trim finds little to\n"
"    return (docs/LAB.md). Every byte is a function of --seed. A ledger\n"
"    that takes longer than its interval is counted late and the next\n"
"    starts at once: check the count, the run is meant to be a plateau, not\n"
"    a saturation test.\n"
"\n"
"    tide lab samples each node's RSS every second (--sample-interval) from\n"
"    /proc/PID/statm\n"
"    (and Referenced from smaps_rollup with --referenced), and collects every\n"
"    sweep round and trim from GET /v1/sweeps (each counted once, by seq).\n"
"    At the end it stops the nodes (SIGTERM, then SIGKILL after 15 s),\n"
"    removes the stores (unless --keep) and prints, per variant: the plateau\n"
"    mean RSS (the samples after --warmup), the reduction against the\n"
"    baseline (notrim), trims/sweeps, the share of trims that lowered RSS,\n"
"    the median and largest release, the median and p95 trim duration, minor\n"
"    faults per trim, and the median bytes a sweep freed. With --repeat N\n"
"    every variant runs N times, all variants of a repetition at once,\n"
"    repetition after repetition; each variant's first line then gives the\n"
"    medians over the repetitions and the following lines each repetition.\n"
"\n"
"    While it runs, it prints a heartbeat line on stderr every 10 s of\n"
"    workload (--heartbeat; 18 lines for a 180 s run), so that a long run\n"
"    is seen alive: the seconds elapsed and planned, the repetition, and\n"
"    each variant's RSS at its last sample, in the order of --variant:\n"
"        tide lab: 30/180 s, repetition 1/1, RSS: trim 58.2 MiB notrim 71.9 MiB\n"
"    (? for a node not sampled yet). --quiet leaves them out; stdout is\n"
"    the same either way.\n"
"\n"
"VARIANTS\n";

/* After the variant table, which tide_lab_variant_help() writes. */
static const char help_lab_after[] =
"    --custom NAME=FLAGS defines another: FLAGS are tided flags, and words of\n"
"    the form VAR=VALUE go to its environment, e.g.\n"
"    --custom 'arena2=--arena-max 2 --trim-policy never'. A custom variant\n"
"    runs whether or not --variant names it.\n"
"\n"
"OPTIONS\n"
"    --variant LIST      the variants, comma-separated. Default trim,notrim.\n"
"    --custom NAME=FLAGS define and add a variant (repeatable).\n"
"    --duration S        seconds of workload per repetition. Default 300.\n"
"                        0 with --ledgers: as long as the ledgers take.\n"
"    --ledgers N         stop after N ledgers (default 0: no limit).\n"
"    --ledger-interval S seconds between ledger starts. Default 1.\n"
"    --objects N         new objects per ledger. Default 2000.\n"
"    --reads N           reads per ledger. Default 1000.\n"
"    --inner-pct P       share of objects of about 525 bytes. Default 60.\n"
"    --object-size MIN-MAX  the other objects' sizes, uniform (sizes, up to\n"
"                        16MiB). Default 100-2048. With --inner-pct 0 and\n"
"                        e.g. 64KiB-256KiB a node with --memory-limit 64MiB\n"
"                        reaches its marks (docs/MEMORY-LIMIT.md).\n"
"    --sample-interval S seconds between RSS samples, 0.01 to 60. Default 1.\n"
"    --recent-pct P      share of reads from the last two ledgers. Default 50.\n"
"    --wave N            ledgers per load cycle: ledger L writes objects x\n"
"                        (1 + P/100 x sin(2 pi L / N)) new objects. Default\n"
"                        120. 0: every ledger alike.\n"
"    --wave-pct P        the cycle's amplitude in per cent. Default 75.\n"
"    --clients N         client threads, 1 to 64. Default 4.\n"
"    --seed N            the workload's seed. Default 1.\n"
"    --warmup S          seconds left out of the plateau. Default 20% of\n"
"                        the run.\n"
"    --repeat N          repetitions, 1 to 100. Default 1.\n"
"    --sweep-interval S  the nodes' sweep interval, 10 to 600. Default 10.\n"
"    --node-size SIZE    the nodes' preset (tiny, small, medium, large,\n"
"                        huge). Default tiny.\n"
"    --node-args FLAGS   more tided flags for every node, blank-separated,\n"
"                        e.g. '--cache-age 20 --http-threads 2'.\n"
"    --baseline NAME     the variant reductions are measured against.\n"
"                        Default notrim (none when it is not run).\n"
"    --tided PATH        the tided to run. Default: tided next to this tide.\n"
"    --jemalloc PATH     the jemalloc to preload. Default\n"
"                        /usr/lib/x86_64-linux-gnu/libjemalloc.so.2.\n"
"    --port P            use ports P, P+1, ... (default: free ports the\n"
"                        kernel picks). A busy port is an error.\n"
"    --out DIR           where the files go (created). Default lab-out.\n"
"    --prefix NAME       the files' prefix. Default lab.\n"
"    --scratch DIR       where the stores and logs go. Default a new\n"
"                        $TMPDIR/tide-lab-XXXXXX, removed at the end.\n"
"    --keep              keep the stores and node logs.\n"
"    --referenced        also sample smaps_rollup's Referenced (the bits are\n"
"                        cleared every 10 s, so it counts pages touched in\n"
"                        the last 10 s or less).\n"
"    --json              print the summary as one JSON object.\n"
"    --heartbeat S       seconds of workload between heartbeat lines on\n"
"                        stderr, 0 to 86400 (0: none). Default 10.\n"
"    --quiet             no heartbeat lines (--heartbeat 0); failures and\n"
"                        the repetitions' start and end lines stay.\n"
"    --redraw            start no node: draw DIR/NAME-rss.png and .svg again\n"
"                        from a finished run's CSVs, with the settings in\n"
"                        its DIR/NAME-summary.json (--out, --prefix name\n"
"                        them), rewriting DIR/NAME-rss.gp. The CSVs and the\n"
"                        summary are not changed, so the table and the\n"
"                        verdicts stay the run's; the panels' titles are\n"
"                        this version's plateau test on the same samples.\n"
"    -h, --help          print this text\n"
"\n"
"FILES\n"
"    DIR/NAME-rss.csv      rep,variant,port,t_s,rss_bytes,referenced_bytes\n"
"    DIR/NAME-sweeps.csv   rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,\n"
"                          trim_rc,rss_before,rss_after,rss_delta,\n"
"                          duration_ms,minflt,majflt,consumer_bytes,\n"
"                          anon_rss (every sweep round; the last two: what\n"
"                          every consumer counted and RssAnon + RssShmem\n"
"                          at the round's end)\n"
"    DIR/NAME-rss.gp       the chart's gnuplot script, which reads the CSVs\n"
"                          beside it: redraw with `gnuplot NAME-rss.gp`\n"
"    DIR/NAME-rss.png, DIR/NAME-rss.svg\n"
"                          the chart, when gnuplot is installed (otherwise\n"
"                          the summary says how to draw it): one panel per\n"
"                          variant on shared axes, RSS per repetition, the\n"
"                          live bytes the consumers count and the anonymous\n"
"                          RSS at each sweep, the memory limit,\n"
"                          each trim a candle from RSS before to after\n"
"                          (green: lowered, red: not), the plateau mean\n"
"                          when one was reached\n"
"    DIR/NAME-summary.json the --json document\n"
"    With a variant that has a memory limit (limit64, limit128, limit256,\n"
"    or --memory-limit in its flags; docs/MEMORY-LIMIT.md), also:\n"
"    DIR/NAME-limits.csv   rep,variant,limit_bytes,peak_rss_bytes,\n"
"                          peak_per_limit,samples,samples_over_limit,\n"
"                          puts_sent,puts,puts_existing,puts_shed,put_errors,\n"
"                          shed_pct,gets,gets_missing,get_errors,load_s,\n"
"                          get_rate,get_rate_ratio,get_mean_ms,level_changes,\n"
"                          rejected_writes,rejected_requests\n"
"    and each repetition in the JSON a \"memory_limit\" object (the same\n"
"    figures; get_rate_ratio against --baseline, e.g. unlimited), each\n"
"    variant the medians (peak_per_limit_median, shed_pct_median,\n"
"    get_rate_ratio_median, level_changes_median).\n"
"    With a variant that runs online delete (rot2, rot2-notrim, rot4, or\n"
"    --online-delete in its flags; docs/ROTATION.md), also:\n"
"    DIR/NAME-disk.csv     rep,variant,t_s,disk_bytes,rotations (the data\n"
"                          directory's file bytes, every second)\n"
"    DIR/NAME-rotations.csv  rep,variant,seq,t_s,trigger,rc,dropped,\n"
"                          deleted_bytes,objects_in_previous, the phases'\n"
"                          _ms, trimmed, trim_*, rss_before, rss_after,\n"
"                          rss_step, disk_before, disk_after\n"
"    and the chart draws the disk on the right axis with the rotations\n"
"    marked; each\n"
"    repetition in the JSON a \"rotation\" object (peak_disk_bytes,\n"
"    written_bytes, rss_step_median_bytes, the phases' medians, ...).\n"
"    The JSON has command, machine, settings, baseline, files, chart (how\n"
"    the drawing went), valid, load: {late_ledger_shares, ledger_shares,\n"
"    late_pct, late_pct_allowed, valid} (a run whose client threads fell\n"
"    behind on more than 1% of a repetition's ledger shares is invalid),\n"
"    interrupted and variants: [{name, spec, samples, trims,\n"
"    plateau_mean_rss_median_bytes, reduction_pct_median,\n"
"    reduction_pct_min, reduction_pct_max, verdict (null unless the run\n"
"    is valid and the variant and the baseline reached a plateau in every\n"
"    repetition), no_verdict (why not), repetitions:\n"
"    [{rep, port, plateau: {reached, samples, window_s (the seconds the\n"
"    test fitted: the last third, or whole waves under a waved load),\n"
"    drift_bytes, noise_bytes, level_bytes}, late_ledger_shares,\n"
"    ledger_shares, samples,\n"
"    plateau_mean_rss_bytes, reduction_pct, sweeps,\n"
"    trims, trims_lowered_pct, release_median_bytes, trim_median_ms,\n"
"    trim_p95_ms, minflt_per_trim, anon_rss_per_counted_median (the\n"
"    median, over the plateau's sweep rounds, of the node's anonymous RSS\n"
"    over what its consumers counted at each round's end), ...}]}].\n"
"    Figures without data are null.\n"
"\n"
"EXIT STATUS\n"
"    0 measured; 1 tided is missing, a port is busy, a node failed to start\n"
"    or died (its log's last lines are printed and the scratch directory is\n"
"    kept), or the run was interrupted (SIGINT, SIGTERM: the nodes are\n"
"    stopped and what was measured is written); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide lab --duration 600\n"
"    tide lab --variant trim,notrim,every4,freed64m,freepct10 --repeat 3 \\\n"
"             --duration 240\n"
"    tide lab --duration 25 --objects 200 --reads 100 --json | jq .variants\n"
"    tide lab --variant trim,notrim,jemalloc --out /tmp/lab --keep\n"
"    tide lab --variant limit64,limit128,limit256,unlimited --baseline unlimited \\\n"
"             --inner-pct 0 --object-size 64KiB-256KiB --sample-interval 0.1\n";

const cli_verb cli_verb_lab = {
    .name = "lab", .usage = "lab",
    .summary = "run tided with and without trims side by side; RSS chart",
    .help = help_lab, .help_table = tide_lab_variant_help,
    .help_after = help_lab_after, .run = run,
};
