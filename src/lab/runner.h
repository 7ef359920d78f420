/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * runner.h: the trim lab's engine, what `tide lab` runs: the variants, the
 * nodes it starts and supervises, the load it sends them, the sampler and
 * the sweep poller, one repetition, and the summary.
 *
 * A caller (src/cli/cmd_lab.c) fills a tide_lab_plan from its options,
 * then:
 *
 *     tide_lab_plan_variants()      the variants from --variant and --custom
 *     tide_lab_run_prepare()        tided found, preloads present, the
 *                                   output and scratch directories made
 *     tide_lab_run_all()            every repetition: nodes started, loaded,
 *                                   sampled and polled, stopped
 *     tide_lab_summary_compute()    the figures per variant and repetition
 *     tide_lab_summary_write()      the CSVs, the chart (gnuplot), summary.json
 *     tide_lab_summary_free(), tide_lab_run_finish()
 *
 * and prints the summary itself (text or the JSON document).
 *
 * The modules: variant.c (the built-in table and the variant parser),
 * node.c (child processes: ports, spawn, death, stop), load.c (the client
 * threads), sampler.c (RSS and Referenced, /v1/sweeps), runner.c (prepare,
 * one repetition, the repetitions), summary.c (figures, the document, the
 * files). lab.h holds the workload, the series and the writers they use.
 *
 * Errors: functions return 0 or a negative TIDE_E* code. Before any node
 * starts (the plan, prepare, the summary) the reason is in
 * tide_last_error() and nothing is printed. While nodes run, what the
 * operator must read (a node's death with its log's tail, a failure, the
 * progress lines) is written to the plan's `report` stream as it happens,
 * each line starting "tide lab: ", so that it reads in the order it
 * happened; the return code then only says that it failed.
 *
 * Thread safety: one run per process at a time (the run installs handlers
 * for SIGINT and SIGTERM while it lasts).
 */
#ifndef TIDE_LAB_RUNNER_H
#define TIDE_LAB_RUNNER_H

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab/lab.h"

#define TIDE_LAB_MAX_VARIANTS 16
#define TIDE_LAB_MAX_ARGS     24
#define TIDE_LAB_MAX_ENV      8
#define TIDE_LAB_MAX_CLIENTS  64
#define TIDE_LAB_DEFAULT_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

/* ---- variants (variant.c) ------------------------------------------------- */

typedef struct tide_lab_variant {
    char  name[32];
    char *args[TIDE_LAB_MAX_ARGS];   /* tided flags (owned) */
    int   nargs;
    char *env[TIDE_LAB_MAX_ENV];     /* VAR=VALUE for the child (owned) */
    int   nenv;
    char  spec[256];                 /* as given, for the summary */
} tide_lab_variant;

/* The built-in variants' spec ("--trim-policy every:2", ...; @JEMALLOC@
 * stands for the jemalloc path), or NULL when `name` is not one. Pure. */
const char *tide_lab_builtin_spec(const char *name);

/* Write the built-in names to buf as "trim, notrim, ..., rot4" (the
 * table's order), for messages and help. 0, or TIDE_EINVAL when cap is too
 * small (buf then holds what fits). Pure; 160 bytes are enough. */
int tide_lab_variant_names(char *buf, size_t cap);

/* Write the built-ins as the help's VARIANTS lines to f: "    NAME  WHAT"
 * with NAME padded to 10 columns, continuation lines indented under WHAT.
 * 0 or TIDE_EIO. */
int tide_lab_variant_help(FILE *f);

/* Parse `spec` (blank-separated tided flags and VAR=VALUE words; @JEMALLOC@
 * becomes `jemalloc`) into v under `name`. 0, or TIDE_EINVAL naming what
 * was wrong (a bad name, too many flags or settings). */
int tide_lab_variant_parse(tide_lab_variant *v, const char *name, const char *spec, const char *jemalloc);

/* 1 when a node of v runs with online delete: its flags or --node-args
 * (`node_args`, may be NULL) give --online-delete other than 0, or its
 * environment TIDE_ONLINE_DELETE other than 0. The lab then samples its
 * rotations, and writes the disk and rotation files. Pure. */
int tide_lab_variant_rotates(const tide_lab_variant *v, const char *node_args);

/* The memory limit a node of v is told: --memory-limit in its
 * flags or in `node_args` (may be NULL), or TIDE_MEMORY_LIMIT in its
 * environment, the flag winning as in tided; 0 when none is given or the
 * size does not parse (tided then refuses it and the run fails). What a
 * node took from a cgroup is not here: the status poll reads it. Pure. */
uint64_t tide_lab_variant_limit(const tide_lab_variant *v, const char *node_args);

/* Free what v owns (v itself is the caller's). */
void tide_lab_variant_free(tide_lab_variant *v);

/* ---- the plan ---------------------------------------------------------------- */

typedef struct tide_lab_plan {
    tide_lab_variant  v[TIDE_LAB_MAX_VARIANTS];
    size_t            nv;
    tide_lab_workload w;
    double            duration, interval, warmup;   /* seconds */
    double            sample_interval;              /* seconds between RSS samples; 1 */
    double            heartbeat;    /* seconds between heartbeat lines on
                                       report (each variant's RSS); 10, 0: none */
    uint64_t          ledgers;                      /* 0: no limit */
    unsigned          clients, repeat, sweep_interval, base_port;
    int               keep, referenced;
    const char       *tided;        /* NULL: tided next to this executable */
    const char       *out, *prefix, *scratch;       /* scratch NULL: a new one */
    const char       *node_size, *node_args, *jemalloc, *baseline;
    char              command[1024];  /* for the chart and the document */
    FILE             *report;       /* progress and failures while running */
} tide_lab_plan;

/* The defaults of `tide lab` (docs/LAB.md): 300 s, a ledger a second, 4
 * clients, one repetition, an RSS sample a second, a heartbeat line
 * every 10 s, sweeps every 10 s,
 * node size tiny, lab-out/lab,
 * baseline notrim, the workload's defaults; no variants; report stderr. */
void tide_lab_plan_init(tide_lab_plan *p);

/* The variants to run: the names of the comma-separated `list` in order
 * (built-ins or customs), then every custom not named in it. A custom is
 * "NAME=SPEC". A name given twice runs once. 0, or TIDE_EINVAL with the
 * message the operator reads (a custom named like a built-in, an unknown
 * name with the list of known ones, too many variants, an empty list). */
int tide_lab_plan_variants(tide_lab_plan *p, const char *list, const char *const *customs, size_t ncustom);

/* Free the variants' strings. */
void tide_lab_plan_free(tide_lab_plan *p);

/* ---- the run (runner.c) -------------------------------------------------------- */

typedef struct tide_lab_run {
    const tide_lab_plan *plan;
    char             tided[PATH_MAX];     /* the tided that runs */
    char             scratch[PATH_MAX];   /* stores and logs */
    int              scratch_made;        /* made here: removed at the end */
    tide_lab_series *series;              /* [repeat x nv]: repetition r's
                                             variant i at r * nv + i */
    size_t           nseries;
    int              interrupted;         /* a signal stopped the run */
    int              signal;              /* which one */
    /* Undone by tide_lab_run_finish: */
    int              http_ready, sigs_set;
    struct sigaction old_int, old_term, old_pipe;
} tide_lab_run;

/* Check and make what the run needs: tided (plan->tided or next to this
 * executable) is executable, every LD_PRELOAD a variant names exists,
 * plan->out exists or is made, the scratch directory exists or is made
 * (a new $TMPDIR/tide-lab-XXXXXX without plan->scratch), the series are
 * allocated. 0, or TIDE_ENOENT / TIDE_EIO / TIDE_ENOMEM with the message;
 * tide_lab_run_finish() undoes it either way. */
int tide_lab_run_prepare(tide_lab_run *r, const tide_lab_plan *plan);

/* Run every repetition, one after the other, while SIGINT and SIGTERM
 * only set a flag and SIGPIPE is ignored. Each repetition starts one
 * tided per variant at once, waits for them to answer /healthz, loads them
 * all the same from plan->clients threads, samples RSS every
 * plan->sample_interval seconds and polls /v1/sweeps (and /v1/rotations of a node with online delete) every
 * 5 s into the series, reads each node's memory limit from /v1/status
 * once the load has ended, and stops every node before the next. Returns 0 when every repetition ran; after a signal, 0 with
 * r->interrupted set (the series hold what was measured); TIDE_EIO when a
 * node failed to start or died, or TIDE_ENOMEM: reported on plan->report,
 * and the scratch directory is then kept. Every child started is stopped
 * before it returns. Cost: the plan's duration per repetition. */
int tide_lab_run_all(tide_lab_run *r);

/* Remove the scratch directory when this run made it and the plan does
 * not keep it (report "stores and logs kept in" when it keeps them and
 * ok is set); free the series; give back the signal handlers and libcurl.
 * The handlers stay until here, so that a ^C while the caller writes the
 * summary only sets the flag, and a closed stdout is not a SIGPIPE. */
void tide_lab_run_finish(tide_lab_run *r, int ok);

/* ---- the summary (summary.c) ----------------------------------------------------- */

typedef struct tide_lab_vsum {
    tide_lab_figures *fig;          /* [repeat] */
    tide_lab_rotfig  *rot;          /* [repeat], NULL when the variant does not rotate */
    double *reduction;              /* [repeat] against the baseline, NAN without one */
    tide_lab_limfig  *lim;          /* [repeat], NULL when no variant of the run has a
                                       memory limit */
    double  plateau_median, reduction_median;
    double  reduction_min, reduction_max;   /* over the repetitions (NAN: none) */
    int     verdict;                /* 1: the reduction is a result (the run is
                                       valid, and the variant and the baseline
                                       reached a plateau in every repetition) */
    char    why[224];               /* the verdict, or why there is none */
    double  peak_per_limit_median, shed_pct_median, get_rate_ratio_median, level_changes_median;
    size_t  samples, trims;
} tide_lab_vsum;

typedef struct tide_lab_summary {
    tide_lab_vsum *v;               /* [nv], the plan's order */
    size_t         nv;
    size_t         base;            /* the baseline's index, or (size_t)-1 */
    uint64_t       late, shares;    /* late ledger shares, and shares, in all */
    int            invalid;         /* a repetition's late shares were over
                                       TIDE_LAB_LATE_PCT per cent of its shares */
    char           chart[PATH_MAX + 160];  /* how the chart went: drawn, or
                                       gnuplot missing and how to draw it, or
                                       its error; never a failure of the run */
    json_t        *doc;             /* the summary document, after _write */
} tide_lab_summary;

/* The figures of every series, the plateau medians over the repetitions
 * and the reductions against the baseline with their spread, each
 * variant's verdict (docs/LAB.md, "Verdicts"), the late ledger shares and
 * whether they make the run invalid; with a memory limit in the run
 * (a variant's flags, or a node's status), every variant's memory-limit
 * figures (the GET rate against the baseline's) and their medians. 0 or
 * TIDE_ENOMEM. */
int tide_lab_summary_compute(tide_lab_summary *s, const tide_lab_run *r);

/* Write OUT/PREFIX-rss.csv, -sweeps.csv, the chart's script -rss.gp and
 * -summary.json (the document, kept in s->doc for the caller to print),
 * and run gnuplot on the script for -rss.png and -rss.svg (s->chart says
 * how that went; a missing or failing gnuplot fails nothing), when a variant
 * rotates -disk.csv and -rotations.csv too, and when a variant has a
 * memory limit -limits.csv. 0, or TIDE_EIO / TIDE_ENOMEM
 * naming the file. */
int tide_lab_summary_write(tide_lab_summary *s, const tide_lab_run *r);

void tide_lab_summary_free(tide_lab_summary *s);

/* ---- a chart again from a run's files (redraw.c) -------------------------- */

/* Draw dir/PREFIX-rss.png and .svg again from dir/PREFIX-rss.csv,
 * -sweeps.csv, -disk.csv and -limits.csv (the last two when present) and
 * the settings in dir/PREFIX-summary.json, rewriting dir/PREFIX-rss.gp
 * and running gnuplot on it; `said` gets a line for the operator. The
 * CSVs and the summary are read, never written. 0 (gnuplot missing is
 * said, not failed); TIDE_ENOENT for a missing summary or CSV;
 * TIDE_EINVAL naming the file and line of a row that does not parse;
 * TIDE_EIO; TIDE_ENOMEM. Allocates the series, freed before it returns;
 * O(rows). */
int tide_lab_redraw(const char *dir, const char *prefix, char *said, size_t cap);

#endif
