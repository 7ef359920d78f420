/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_gens.h: the generations benchmark (online delete, src/gen/gens.h),
 * as a library part: what a fetch costs when it has to look past the
 * newest generation, what a copy-forward costs, and how the directory's
 * size follows the bytes written. `tide bench generations`
 * (src/cli/cmd_bench.c) parses the options, calls these in order and
 * prints what they measured; nothing here prints.
 *
 * A bench is used in four steps, as the store bench's (bench_store.h):
 *
 *   tide_bench_gens_begin      the bench directory, the machine, buffers
 *   tide_bench_gens_run        run r (1 to opts.runs): every variant once
 *                              (the plain store and each G), interleaved
 *   tide_bench_gens_summarize  medians, minima and maxima over the runs
 *   tide_bench_gens_end        the buffers freed, the directory removed
 *
 * Errors: 0 or a negative TIDE_E* code, the whole message in
 * tide_last_error() (it names the variant, the step and the directory
 * left for inspection).
 *
 * Thread safety: one thread drives a bench (the stores' commit threads
 * run beside it and their CPU time is counted: it is the process's).
 * Cost: 40 bytes of precomputed key and expected-value word per item, for
 * one phase at a time.
 */
#ifndef TIDE_BENCH_GENS_H
#define TIDE_BENCH_GENS_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench_store.h"

#define TIDE_BENCH_GENS_VARIANTS_MAX 8u         /* values of G in one bench */
#define TIDE_BENCH_GENS_ITEMS_MAX    10000000u  /* items per span */
#define TIDE_BENCH_GENS_EXTRA_MAX    16u        /* spans beyond G */

/* The measured phases of a G variant, in the order they run. */
enum tide_bench_gens_phase_id {
    TIDE_BG_NEWEST,      /* (a) keys of the newest generation */
    TIDE_BG_COPY,        /* (b) keys only the oldest holds: each copied forward */
    TIDE_BG_AGAIN,       /* (c) the same keys again: now in the newest */
    TIDE_BG_MISS,        /* (d) keys in no generation */
    TIDE_BG_PHASES
};

typedef struct tide_bench_gens_opts {
    uint64_t items;          /* objects per span (and per phase), 1 to ITEMS_MAX. 100000 */
    uint64_t value_size;     /* 1 to TIDE_VALUE_MAX. 200 */
    uint64_t runs;           /* 1 to TIDE_BENCH_RUNS_MAX. 3 */
    uint64_t seed;           /* 0 to 2^31 - 1. 0 */
    unsigned gens[TIDE_BENCH_GENS_VARIANTS_MAX];  /* the values of G. {2, 4} */
    unsigned ngens;          /* how many. 2 */
    unsigned extra_spans;    /* spans filled beyond G before the phases, so that
                                this many rotations drop a generation. 2 */
    const char *parent;      /* where the bench directory is made. "/tmp" */
    int keep;                /* keep every run's directory. 0 */
} tide_bench_gens_opts;

/* One phase: `fetches` fetches (and, for COPY, the sync that makes the
 * copies durable), timed by the process's CPU clock and the wall clock. */
typedef struct tide_bench_gens_phase {
    uint64_t fetches, found;         /* fetched; found (in any generation) */
    uint64_t in_newest;              /* found with *gen_id the newest's */
    uint64_t cpu_ns, wall_ns;        /* CLOCK_PROCESS_CPUTIME_ID, CLOCK_MONOTONIC */
    uint64_t reads, bytes_read;      /* tide_io_posix() counters, differences */
    uint64_t key_lookups;            /* key-file buckets looked at, in the map or
                                        with pread (tide_store_info's key_map_views
                                        + key_bucket_reads, every generation) */
    uint64_t copied, copied_bytes;   /* tide_gens_info.copied_forward{,_bytes} differences */
    uint64_t older_lookups;          /* tide_gens_info.older_lookups difference */
} tide_bench_gens_phase;

/* The directory after one rotation of the setup. */
typedef struct tide_bench_gens_disk {
    uint64_t rotation;               /* 1, 2, ... */
    unsigned generations;            /* held after it */
    uint64_t disk_before_bytes;      /* tide_gens_info.disk_bytes just before it: the peak */
    uint64_t disk_bytes;             /* tide_gens_info.disk_bytes after it */
    uint64_t written_bytes;          /* tide_gens_store_info.bytes_written: all so far */
    uint64_t payload_bytes;          /* objects inserted x (key + value) so far */
    uint64_t deleted_bytes;          /* the rotation report's */
} tide_bench_gens_disk;

/* One G variant of one run. */
typedef struct tide_bench_gens_result {
    unsigned g;
    tide_bench_gens_phase ph[TIDE_BG_PHASES];
    tide_bench_gens_disk *disk;      /* ndisk = g + extra_spans - 1 points */
    size_t ndisk;
    uint64_t setup_ns;               /* the fill and rotations (wall), not measured */
} tide_bench_gens_result;

/* Per-fetch figures of one phase over the runs. The ratios are taken per
 * run (the variants of a run ran back to back) and then summarised. */
typedef struct tide_bench_gens_figures {
    tide_bench_stat cpu_us;          /* CPU µs per fetch */
    tide_bench_stat cpu_per_s;       /* fetches per CPU-second */
    tide_bench_stat wall_per_s;      /* fetches per wall second */
    tide_bench_stat reads;           /* preads per fetch */
    tide_bench_stat vs_plain;        /* cpu_us / the plain store's, same run */
    tide_bench_stat vs_newest;       /* cpu_us / this G's NEWEST, same run */
} tide_bench_gens_figures;

typedef struct tide_bench_gens_summary {
    size_t runs;
    tide_bench_gens_figures plain;
    tide_bench_gens_figures ph[TIDE_BENCH_GENS_VARIANTS_MAX][TIDE_BG_PHASES];
    /* COPY's copy-forward rate: objects and bytes per CPU-second */
    tide_bench_stat copy_objects_per_s[TIDE_BENCH_GENS_VARIANTS_MAX];
    tide_bench_stat copy_bytes_per_s[TIDE_BENCH_GENS_VARIANTS_MAX];
    /* MISS's extra CPU µs per older generation: (miss - newest) / (G - 1) */
    tide_bench_stat miss_us_per_older[TIDE_BENCH_GENS_VARIANTS_MAX];
    /* What each generation adds to a miss, from MISS across the values of
     * G, within each run: (MISS at the largest G - MISS at the smallest) /
     * (the difference of the G). Unlike miss_us_per_older it compares
     * misses with misses (a miss in the newest skips the data-file read a
     * NEWEST hit makes). miss_slope_ok 0 with a single G (or all equal). */
    int miss_slope_ok;
    tide_bench_stat miss_slope_us;
} tide_bench_gens_summary;

typedef struct tide_bench_gens {
    tide_bench_gens_opts opts;
    char dir[TIDE_BENCH_PATH_MAX + 100];       /* PARENT/tide-bench-XXXXXX */
    char run_dir[TIDE_BENCH_PATH_MAX + 200];   /* the variant being run */
    long nproc;
    char kernel[300];
    tide_bench_gens_phase *plain;              /* [runs] */
    tide_bench_gens_result *res;               /* [runs][ngens] */
    /* private */
    unsigned char *keys, *value;
    uint64_t *want;
    int dir_made;
} tide_bench_gens;

/* The defaults named in tide_bench_gens_opts. */
void tide_bench_gens_opts_init(tide_bench_gens_opts *o);

/* Make the bench directory under o->parent, read the machine, allocate.
 * Returns 0, TIDE_EINVAL (an option out of range, named), TIDE_EIO or
 * TIDE_ENOMEM. Call tide_bench_gens_end whatever it returns. */
int tide_bench_gens_begin(tide_bench_gens *b, const tide_bench_gens_opts *o);

/*
 * Run number `run` (1 to opts.runs): the plain store and every G, each on
 * a fresh directory under b->dir, in an order that starts one variant
 * later each run (run 1: plain, G1, G2...; run 2: G1, G2, ..., plain), so
 * a slow spell of the machine falls on each in turn. Each directory is
 * removed after its variant unless opts.keep. Returns 0, or the failing
 * call's code (TIDE_ECORRUPT for a wrong value or a count that does not
 * add up) with the directory left in b->run_dir and the bench directory
 * kept.
 */
int tide_bench_gens_run(tide_bench_gens *b, unsigned run);

/* The statistics over the runs done (b->opts.runs of them). Pure. */
void tide_bench_gens_summarize(const tide_bench_gens *b, tide_bench_gens_summary *s);

/* Free the buffers; remove the (then empty) bench directory unless
 * opts.keep or a run failed. Safe after a failed begin. */
void tide_bench_gens_end(tide_bench_gens *b);

/* Result of variant v (0-based index into opts.gens) in run r (1-based). */
static inline const tide_bench_gens_result *tide_bench_gens_at(const tide_bench_gens *b,
                                                               unsigned r, unsigned v)
{
    return &b->res[(size_t)(r - 1) * b->opts.ngens + v];
}

#endif
