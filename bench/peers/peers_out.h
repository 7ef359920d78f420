/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers_out.h: the options and the state of a bench/peers session, and what
 * it prints (peers_out.c): the header, one progress line per run (stderr)
 * and, with --record, one JSON line per run appended to a file; then the
 * summary as tables or as one JSON document (stdout).
 *
 * Errors: peers_table and peers_json return 0, or 1 when stdout could not
 * be written. Thread safety: one thread. Cost: a sort of --runs figures
 * per figure printed.
 */
#ifndef TIDE_BENCH_PEERS_OUT_H
#define TIDE_BENCH_PEERS_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "peers.h"
#include "peers_run.h"

#define PEERS_SIZES_MAX   16
#define PEERS_ENGINES_MAX 5

typedef struct peers_opts {
    uint64_t sizes[PEERS_SIZES_MAX];
    size_t nsizes;
    uint64_t runs, batch, burst, value_size, seed;   /* batch 0: auto */
    uint64_t index_lag;                              /* tide-defer's budget */
    uint64_t fault_item;                             /* 1 + --fault-item; 0 none */
    int fault_phase;                                 /* --fault-in: PH_LOAD or PH_FETCH2 */
    const peer_ops *engines[PEERS_ENGINES_MAX];
    size_t nengines, baseline;
    const char *baseline_name, *parent;
    const char *record;                              /* --record FILE, or NULL */
    int json;
    int no_warm;                                     /* --no-warm: no FETCH1, FETCH2 */
    uint64_t cold_memory, cold_fetches;              /* --cold-memory (0: no COLD) */
} peers_opts;

typedef struct peers_state {
    peers_opts opts;
    char dir[3100];                          /* PARENT/tide-peers-XXXXXX */
    long nproc;
    char kernel[300];
    /* results[(size * runs + round - 1) * nengines + engine] */
    peer_result *results;
    uint64_t batch;                          /* the batch every size uses */
    uint64_t batch_burst;                    /* the items of a burst (peers.c) */
    char load_before[PEERS_SIZES_MAX][128], load_after[PEERS_SIZES_MAX][128];
    FILE *record;                            /* --record's file, opened to append */
} peers_state;

void peers_header(const peers_state *ps);
void peers_progress(const peers_state *ps, size_t size, unsigned round, size_t engine);
int peers_table(const peers_state *ps);
int peers_json(const peers_state *ps);

/* One line of --record: the run's every figure as one JSON object (the
 * summary's names, each a number or null), with its size, round, engine,
 * the time and `loadavg` (/proc/loadavg as it ended); appended to ps->record,
 * flushed and fsync'd, so that a bench cut short keeps every run it
 * finished. 0, or 1 when the line could not be written (errno set). */
int peers_record(const peers_state *ps, size_t size, unsigned round, size_t engine,
                 const char *loadavg);

#endif
