/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_store.h: the store benchmark, as a library part: the workload, the
 * timing, the measurements around each phase and the medians over runs.
 * `tide bench store` (src/cli/cmd_bench.c) parses the options, calls these
 * in order and prints what they measured; nothing here prints.
 *
 * A bench is used in four steps, each a function below:
 *
 *   tide_bench_store_begin      the bench directory, the machine, the
 *                               device counters, the generation cost
 *   tide_bench_store_run        one run (LOAD then FETCH on a fresh store),
 *                               opts.runs times, run 1 first
 *   tide_bench_store_summarize  medians, minima and maxima over the runs
 *   tide_bench_store_end        the buffers freed, the directory removed
 *
 * Errors: 0 or a negative TIDE_E* code. begin's message, in
 * tide_last_error(), is the whole story ("cannot make a directory under
 * /x: Permission denied"); a failed run also fills a tide_bench_failure
 * that says which call failed and where the store was left.
 *
 * Thread safety: one thread drives a bench; each phase of a run starts and
 * joins a sampler thread of its own. Cost: a run holds O(1) memory of its own
 * (keys, values and the fetch order are computed per item), so the RSS it
 * reports is the store's.
 */
#ifndef TIDE_BENCH_STORE_H
#define TIDE_BENCH_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/proc.h"

#define TIDE_BENCH_KEY_SIZE    32u
#define TIDE_BENCH_LOAD_FACTOR 0.5
#define TIDE_BENCH_SAMPLE_US   10000u     /* the RSS sampler's period */
#define TIDE_BENCH_RUNS_MAX    1000u
#define TIDE_BENCH_PATH_MAX    3000u      /* the longest parent directory */

/* ---- the workload, for this bench and for bench/peers ----
 *
 * Item i of seed s: its key is stream((s << 33) + 2i + 1, 32 bytes), its
 * value stream((s << 33) + 2i + 2, n bytes), stream(x, n) being the first n
 * bytes of the splitmix64 sequence started at x (little-endian words). Seed
 * 0 is the formula of tests/fixtures/nudb. Pure, thread-safe; a few ns per
 * 8 bytes. `key` holds TIDE_BENCH_KEY_SIZE bytes, `value` n.
 */
void tide_bench_key(uint64_t seed, uint64_t i, unsigned char *key);
void tide_bench_value(uint64_t seed, uint64_t i, unsigned char *value, size_t n);

/* A pseudo-random permutation of [0, n), computed per step without a
 * table (a keyed Feistel network walked until it falls inside [0, n)):
 * the fetch order. init is pure; at is pure and thread-safe, O(1) (under
 * 4 rounds of 4 mixes on average). n >= 1. */
typedef struct tide_bench_perm {
    uint64_t n, half_bits, mask, round_keys[4];
} tide_bench_perm;
void tide_bench_perm_init(tide_bench_perm *p, uint64_t n, uint64_t seed);
uint64_t tide_bench_perm_at(const tide_bench_perm *p, uint64_t i);
/* The permutation's key for run `run` of data seed `seed`. Pure. */
uint64_t tide_bench_fetch_seed(uint64_t seed, unsigned run);

/* The peak RSS sampler: a thread that reads /proc/self/status every
 * TIDE_BENCH_SAMPLE_US and keeps the maxima (anonymous, file-backed,
 * total), read after stop. Without a thread (pthread_create failed) stop
 * takes one sample. One owner thread calls start then stop; the fields are
 * the sampler's until stop returns. */
typedef struct tide_bench_sampler {
    pthread_t th;
    atomic_int stop;
    int running;
    uint64_t max_anon, max_file, max_rss, samples;
} tide_bench_sampler;
/* CPU seconds (user + system, every thread) the process has used so far,
 * from getrusage(RUSAGE_SELF); 0 if it fails. Allocates nothing. */
double tide_bench_cpu_seconds(void);

void tide_bench_sampler_start(tide_bench_sampler *sm);
void tide_bench_sampler_stop(tide_bench_sampler *sm);

/* What to measure. tide_bench_store_opts_init gives the defaults named. */
typedef struct tide_bench_store_opts {
    uint64_t items;          /* items per run, 1 to UINT32_MAX. 100000 */
    uint64_t value_size;     /* bytes per value, 1 to TIDE_VALUE_MAX. 200 */
    uint64_t runs;           /* 1 to TIDE_BENCH_RUNS_MAX. 3 */
    uint64_t burst;          /* the store's burst_bytes. TIDE_BURST_DEFAULT */
    uint64_t seed;           /* the data's seed, 0 to 2^31 - 1. 0 */
    unsigned block_size;     /* the key file's. TIDE_BLOCK_SIZE_DEFAULT */
    const char *parent;      /* where the bench directory is made. "/tmp" */
    int keep;                /* keep the stores and the directory. 0 */
    unsigned fetch_threads;  /* FETCH's threads, each a slice of the order. 1 */
    int pread;               /* the store's pread: lookups pread nudb.key. 0 */
} tide_bench_store_opts;

/* One phase (LOAD or FETCH) of one run. */
typedef struct tide_bench_phase {
    double   secs, items_per_s;
    double   cpu_secs, cpu_us_per_item;          /* getrusage(RUSAGE_SELF): user + system, every thread */
    uint64_t anon_start, file_start;           /* RSS when the phase began */
    uint64_t peak_anon, peak_file, peak_rss;   /* the sampler's maxima */
    uint64_t vm_hwm;                           /* VmHWM when it ended */
    uint64_t samples;
    int      io_ok, dev_bytes_ok;              /* /proc/self/io read; its write_bytes present */
    uint64_t write_bytes, wchar;
    int      dev_ok;                           /* the block device's counters read */
    uint64_t dev_written, parent_written;
    uint64_t store_written, commits, syncs;    /* tide_store_get_info differences */
} tide_bench_phase;

typedef struct tide_bench_run {
    tide_bench_phase load, fetch;
    uint64_t dat_bytes, key_bytes, buckets;    /* the files after LOAD */
} tide_bench_run;

/* The figures of a phase that the summary takes over the runs, in the
 * order the bench prints them. */
enum tide_bench_metric {
    TIDE_BENCH_ITEMS_PER_S, TIDE_BENCH_SECONDS, TIDE_BENCH_PEAK_ANON, TIDE_BENCH_PEAK_FILE,
    TIDE_BENCH_VM_HWM, TIDE_BENCH_DEV_WRITTEN, TIDE_BENCH_WRITE_BYTES, TIDE_BENCH_WCHAR,
    TIDE_BENCH_STORE_WRITTEN, TIDE_BENCH_COMMITS, TIDE_BENCH_SYNCS, TIDE_BENCH_CPU_US,
    TIDE_BENCH_METRICS
};

typedef struct tide_bench_stat { double median, min, max; } tide_bench_stat;

/* The median, min and max of v[0..n) (all zero for n 0), sorting v in
 * place: the bench part's one statistic (its benches share it). */
tide_bench_stat ti_bench_stat_sorted(double *v, size_t n);

/* The machine line's facts: online CPUs, and "sysname release machine"
 * ("unknown" when uname fails) into kernel (cap bytes). Two system calls. */
void ti_bench_machine(long *nproc, char *kernel, size_t cap);

typedef struct tide_bench_summary {
    size_t runs;
    /* ok[m]: every phase of every run had metric m (the device and the
     * /proc/self/io figures may be unreadable); always 1 for the others. */
    int ok[TIDE_BENCH_METRICS];
    tide_bench_stat load[TIDE_BENCH_METRICS], fetch[TIDE_BENCH_METRICS];
    tide_bench_stat dat_bytes, key_bytes;
    uint64_t buckets;                          /* run 1's */
    uint64_t payload;                          /* items x (key size + value size) */
    /* LOAD's bytes written per payload byte: by the device, by
     * /proc/self/io's write_bytes, by the store's own counter. */
    tide_bench_stat wa_device, wa_write_bytes, wa_store;
} tide_bench_summary;

/* Why a run failed. `during` names the store call ("create", "open",
 * "load: insert", "load: sync", "fetch", "close"); NULL when none failed
 * but something else did (`wrong_value`, or the run directory could not be
 * made, tide_last_error() saying why). */
typedef struct tide_bench_failure {
    const char *during;
    uint64_t item;           /* the item inserted or fetched */
    uint64_t nth;            /* fetch: its place in the fetch order */
    int wrong_value;         /* the store returned another value: */
    size_t got_len, first_diff;   /* its length, the first byte that differs */
} tide_bench_failure;

/* A bench in progress. Read the fields; begin, run and end write them. */
typedef struct tide_bench_store {
    tide_bench_store_opts opts;
    char dir[TIDE_BENCH_PATH_MAX + 100];       /* PARENT/tide-bench-XXXXXX */
    char run_dir[TIDE_BENCH_PATH_MAX + 200];   /* the current run's store */
    long nproc;
    char kernel[300];                          /* "Linux 6.1.0 x86_64" */
    int dev_ok;                                /* `dev` read; else dev_error says why */
    tide_mem_proc_blockdev dev;
    char dev_error[512];
    int can_reset;                             /* VmHWM is reset per phase; else: */
    char reset_error[512];
    double gen_ns;                             /* making a key and a value, per item */
    tide_bench_run *runs;                      /* opts.runs results */
    /* private */
    unsigned char *key, *value;
    int dir_made;
} tide_bench_store;

/* The defaults named in tide_bench_store_opts. */
void tide_bench_store_opts_init(tide_bench_store_opts *o);

/*
 * Make the bench directory under o->parent, read the machine and the
 * device that holds it, try the VmHWM reset, allocate the buffers and time
 * the generation of up to 100000 items. Returns 0, or TIDE_EIO / TIDE_ENOMEM
 * with the whole message in tide_last_error(). Call tide_bench_store_end
 * whatever it returns. Cost: the generation's few milliseconds.
 */
int tide_bench_store_begin(tide_bench_store *b, const tide_bench_store_opts *o);

/*
 * Run number `run` (1 to opts.runs) into b->runs[run - 1]: a fresh store in
 * b->run_dir, LOAD (the inserts and one sync, timed together) and FETCH
 * (every item in a shuffled order, each value compared). The store is
 * removed afterwards unless opts.keep. Returns 0, or the failing call's
 * TIDE_E* code with `why` filled and tide_last_error() as that call left
 * it (TIDE_ECORRUPT for a wrong value); the store is then left in
 * b->run_dir and the bench directory is kept.
 */
int tide_bench_store_run(tide_bench_store *b, unsigned run, tide_bench_failure *why);

/* The statistics over the runs done (b->opts.runs of them). Pure. */
void tide_bench_store_summarize(const tide_bench_store *b, tide_bench_summary *s);

/* Free the buffers; remove the (then empty) bench directory unless
 * opts.keep or a run failed. Safe after a failed begin. */
void tide_bench_store_end(tide_bench_store *b);

#endif
