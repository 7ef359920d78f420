/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lab.h: the trim lab's library part: the synthetic ledger workload, the
 * series of RSS samples and sweep reports a node yields, their summary
 * figures (the plateau test among them), and the CSV writers and the
 * gnuplot script that draws them (their functions, used only inside the
 * lab part, are in lab_impl.h; the types are here).
 *
 * The lab's runner (runner.h) owns the processes, the HTTP clients and the
 * clock; everything here is pure computation or writes to a FILE the
 * caller opened, so that it can be tested without a node.
 *
 * The workload is a function of (seed, ledger, op index): any client thread
 * can compute any op without shared state, and every node is sent the same
 * ops. A ledger is PUTs of new objects and `reads` GETs spread evenly
 * among them. The number of new objects follows a slow wave around
 * `objects` (a real network's load rises and falls; a perfectly steady load
 * lets glibc reuse every freed chunk, docs/LAB.md shows it). Object sizes: inner_pct per cent are inner-node-like
 * (500 to 550 bytes, about 525), the rest uniform from 100 to 2048 bytes.
 * A GET reads, with probability recent_pct, an object of one of the two
 * previous ledgers (in the node cache); otherwise an object of any earlier
 * ledger, uniformly (mostly a store fetch that the cache then holds until
 * it ages out).
 *
 * Errors: functions return 0 or a negative TIDE_E* code with the reason in
 * tide_last_error(). Nothing here exits or prints to stdout or stderr.
 */
#ifndef TIDE_LAB_LAB_H
#define TIDE_LAB_LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the workload --------------------------------------------------------- */

#define TIDE_LAB_KEY_SIZE 32

typedef struct tide_lab_workload {
    uint64_t seed;
    unsigned objects;      /* new objects per ledger, >= 1 */
    unsigned reads;        /* reads per ledger */
    unsigned inner_pct;    /* share of objects of about 525 bytes, 0..100 */
    unsigned recent_pct;   /* share of reads aimed at the last two ledgers */
    unsigned wave_period;  /* ledgers per load cycle; 0: every ledger alike */
    unsigned wave_pct;     /* the cycle's amplitude, 0..100 per cent of objects */
    uint32_t size_min, size_max; /* the other objects' sizes, uniform; 100..2048
                                    (--object-size: large objects push a node with
                                    a memory limit to its marks) */
} tide_lab_workload;

/* The largest object size the lab sends (--object-size's maximum). */
#define TIDE_LAB_OBJECT_MAX (16u << 20)

enum { TIDE_LAB_PUT = 1, TIDE_LAB_GET = 2 };

typedef struct tide_lab_op {
    int      kind;                     /* TIDE_LAB_PUT or TIDE_LAB_GET */
    uint64_t ledger, index;            /* the object's identity */
    uint32_t len;                      /* its value's size in bytes */
    uint8_t  key[TIDE_LAB_KEY_SIZE];
} tide_lab_op;

/* Fill `w` with the defaults: seed 1, 2000 objects, 1000 reads, 60% inner,
 * 50% recent, a wave of 120 ledgers and 75%, other objects of 100 to 2048
 * bytes. */
void tide_lab_workload_init(tide_lab_workload *w);

/* New objects in `ledger`: objects x (1 + wave_pct/100 x sin(2 pi ledger /
 * wave_period)), rounded, at least 1; `objects` without a wave. Pure. */
unsigned tide_lab_ledger_objects(const tide_lab_workload *w, uint64_t ledger);

/* Ops in `ledger`: its objects + reads. Pure. */
size_t tide_lab_ledger_ops(const tide_lab_workload *w, uint64_t ledger);

/* Op `i` (0 <= i < tide_lab_ledger_ops) of `ledger`. Pure and
 * deterministic: the same (w, ledger, i) always gives the same op. A GET
 * names an object written by an earlier ledger (ledger 0 reads its own
 * objects, which may not be written yet: a 404). Cost: a few dozen
 * multiplications. */
void tide_lab_ledger_op(const tide_lab_workload *w, uint64_t ledger, size_t i, tide_lab_op *op);

/* The object (ledger, index): its key and size, kind PUT. Pure. */
void tide_lab_object(const tide_lab_workload *w, uint64_t ledger, uint64_t index, tide_lab_op *op);

/* Write op->len deterministic bytes of the object's value into buf. */
void tide_lab_value_fill(const tide_lab_workload *w, const tide_lab_op *op, uint8_t *buf);

/* ---- series: what one node yielded in one repetition ------------------------ */

typedef struct tide_lab_sample {
    double   t;             /* seconds since the workload started */
    uint64_t rss;           /* bytes, /proc/PID/statm */
    uint64_t referenced;    /* bytes, smaps_rollup Referenced; 0 when not asked */
    uint64_t disk;          /* bytes, the sizes of every file under the node's data
                               directory; 0 when it could not be walked */
} tide_lab_sample;

/* One sweep round as /v1/sweeps reports it. */
typedef struct tide_lab_sweep {
    uint64_t seq;
    double   t;             /* start, seconds since the workload started */
    uint64_t sweep_ns, freed_bytes;
    int      trimmed, trim_rc;
    uint64_t rss_before, rss_after;
    int64_t  rss_delta;
    uint64_t duration_ns, minflt, majflt;
    uint64_t consumer_bytes;  /* what every consumer counted, and */
    uint64_t anon_rss;        /* the node's anonymous RSS, at the round's end
                                 (0: the node did not say) */
} tide_lab_sweep;

/* One rotation attempt as GET /v1/rotations reports it (online delete,
 * docs/ROTATION.md). Durations in nanoseconds; a phase the node did not
 * report is 0. */
typedef struct tide_lab_rotation {
    uint64_t seq;
    double   t;             /* start, seconds since the workload started */
    char     trigger[16];   /* "objects", "bytes", "time", "admin" */
    int      rc;            /* 0: done */
    unsigned dropped;       /* generations dropped */
    uint64_t deleted_bytes, objects_in_previous;
    uint64_t gate_ns, create_ns, manifest_ns, switch_ns, drop_ns, trim_ns, total_ns;
    int      trimmed;       /* the release after the drop was made */
    uint64_t trim_rss_before, trim_rss_after;
    int64_t  trim_rss_delta;
} tide_lab_rotation;

/* What the client threads counted on one node, and what its GET /v1/status
 * said of its memory limit at the end of the load
 * (docs/MEMORY-LIMIT.md). A PUT answered 503 with the error "overloaded" is
 * shed; any other answer but 201 and 409 is a PUT error. */
typedef struct tide_lab_requests {
    uint64_t puts, puts_existing, puts_shed, put_errors;
    uint64_t gets, gets_missing, get_errors, bad_length;
    uint64_t get_ns;            /* the GETs answered 200: their time, summed */
    double   load_s;            /* seconds the load ran */
    int      status_read;       /* 1 when /v1/status had a memory_limit object */
    uint64_t level_changes, rejected_writes;
    uint64_t rejected_requests; /* its overload 503s: rejected_requests.write + .body */
    uint64_t status_limit;      /* its limit_bytes (0: none) */
    uint64_t late;              /* the repetition's late ledger shares (one client
                                   thread finishing a ledger after its interval),
                                   the same for every node of it */
    uint64_t ledger_shares;     /* the repetition's ledgers x client threads */
} tide_lab_requests;

typedef struct tide_lab_series {
    char            variant[32];
    unsigned        rep;            /* 1-based repetition */
    int             port;
    int             rotating;       /* its node runs with online delete */
    uint64_t        written_bytes;  /* value bytes of the PUTs it stored (201) */
    uint64_t        limit_bytes;    /* its memory limit (status, else its flags); 0: none */
    tide_lab_requests req;
    tide_lab_sample *samples;
    size_t          nsamples, capsamples;
    tide_lab_sweep  *sweeps;        /* sorted by seq, no duplicates */
    size_t          nsweeps, capsweeps;
    tide_lab_rotation *rotations;   /* sorted by seq, no duplicates */
    size_t          nrotations, caprotations;
} tide_lab_series;

/* ---- figures ---------------------------------------------------------------- */

/* The plateau test (docs/LAB.md, "Verdicts"). Of the samples at t >=
 * warmup, take the last third by time (t >= t_end - (t_end - warmup) / 3);
 * under a waved load of period P, the last ceil(third / P) whole waves
 * instead, at most as many as fit after the warm-up (none: no telling).
 * Fit RSS = a + b t (+ c sin(2 pi t / P) + d cos(2 pi t / P) with a wave)
 * by least squares over the window; the drift is b times the window's
 * span, the noise the standard deviation of the residuals.
 * The plateau is reached when |drift| <= max(TIDE_LAB_PLATEAU_NOISES x
 * noise, TIDE_LAB_PLATEAU_LEVEL x the window's mean RSS): what the line
 * still moves is within its own noise or immaterial to a comparison at
 * the per cent level. With fewer than TIDE_LAB_PLATEAU_MIN samples in the
 * third there is no telling. */
#define TIDE_LAB_PLATEAU_NOISES 2.0
#define TIDE_LAB_PLATEAU_LEVEL  0.02
#define TIDE_LAB_PLATEAU_MIN    10

enum { TIDE_LAB_PLATEAU_UNKNOWN = -1, TIDE_LAB_PLATEAU_NONE = 0, TIDE_LAB_PLATEAU_REACHED = 1 };

typedef struct tide_lab_plateau {
    int    state;               /* TIDE_LAB_PLATEAU_* */
    size_t samples;             /* in the window */
    double span;                /* the window's seconds; 0: under a wave,
                                   no whole wave after the warm-up */
    double drift, noise, level; /* bytes (NAN when unknown) */
} tide_lab_plateau;

/* A run is invalid, its load generator having fallen behind, when more
 * than TIDE_LAB_LATE_PCT per cent of a repetition's ledger shares were
 * late: the nodes then got less load than planned, at other moments. */
#define TIDE_LAB_LATE_PCT 1.0

/* The summary of one series. Byte figures are doubles (means and medians);
 * a figure with nothing to measure is NAN. */
typedef struct tide_lab_figures {
    size_t   samples, plateau_samples;
    double   plateau_mean_rss;      /* mean RSS of the samples at t >= warmup */
    double   plateau_mean_referenced;
    double   peak_rss, last_rss;
    size_t   sweeps, trims, trims_lowered;
    double   lowered_pct;           /* trims_lowered / trims * 100 */
    double   release_median, release_max, release_total;  /* over lowering trims */
    double   trim_median_ms, trim_p95_ms, trim_max_ms, trim_total_ms;
    double   minflt_per_trim;
    double   freed_median;          /* bytes the caches freed per sweep */
    tide_lab_plateau plateau;       /* whether the RSS line stopped moving */
    double   anon_per_counted;      /* median over the sweeps at t >= warmup
                                       of the node's anonymous RSS over what
                                       its consumers counted, at each round's
                                       end (NAN: the node did not say) */
} tide_lab_figures;

/* The rotation figures of one series with online delete (NAN: nothing to
 * measure). The RSS step of a rotation is the first RSS sample at least
 * TIDE_LAB_STEP_AFTER_S after the rotation ended minus the last sample at
 * or before its start: what the node's memory did across it, the trim
 * included when one was made. */
#define TIDE_LAB_STEP_AFTER_S 3.0

typedef struct tide_lab_rotfig {
    size_t   rotations, failures, dropping;  /* done; failed; done and dropped one */
    double   peak_disk, last_disk, written;  /* bytes */
    double   step_median, step_min, step_max; /* RSS step over the dropping rotations */
    size_t   steps;                          /* how many had both samples */
    double   trim_release_median;            /* -rss_delta of the trims after rotation */
    size_t   trims;
    double   create_ms, manifest_ms, switch_ms, drop_ms, total_ms, trim_ms; /* medians */
    double   deleted_median, objects_median; /* per dropping rotation */
} tide_lab_rotfig;

/* The memory-limit figures of one series (NAN: nothing to measure).
 * The GET rate is the GETs answered 200 per second of load; its
 * ratio is against the baseline series of the same repetition. */
typedef struct tide_lab_limfig {
    double limit;               /* bytes; NAN: no limit */
    double peak_rss;            /* the largest RSS sample */
    double peak_per_limit;      /* peak_rss / limit */
    size_t samples, samples_over;   /* RSS samples; those above the limit */
    double puts_sent, puts_shed, shed_pct;  /* shed_pct: puts_shed / puts_sent x 100 */
    double get_rate, get_rate_ratio, get_mean_ms;
    double level_changes, rejected_writes;  /* NAN without the status */
} tide_lab_limfig;

/* ---- writers ------------------------------------------------------------------ */

typedef struct tide_lab_chart {
    const char *title;        /* first title line */
    const char *subtitle;     /* below it, e.g. the command, wrapped; may be NULL */
    double      warmup_s;     /* shaded, and where the plateau lines start */
    double      wave_s;       /* the load wave's period in seconds; 0: none */
    double      duration_s;   /* x axis end; 0: the last sample */
    const char *prefix;       /* the files' common name: PREFIX-rss.csv, -sweeps.csv,
                                 -disk.csv, -rotations.csv are read, PREFIX-rss.png
                                 and -rss.svg written, by the script, all in the
                                 script's directory */
    const char *baseline;     /* the variant the panels' titles compare with; may be NULL */
} tide_lab_chart;

#endif
