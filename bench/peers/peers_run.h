/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers_run.h: one run of one engine at one size (peers_run.c), and the
 * figures it yields. The run happens in a child process, so that each
 * engine's memory, /proc/self/io counters and threads are its own and no
 * engine inherits another's heap; the child sends a peer_result back
 * through a pipe and exits.
 *
 * COLD (peer_job.cold_memory): the engine closed, its files' pages
 * dropped from the page cache (fdatasync, then POSIX_FADV_DONTNEED), the
 * child moved into a v1 memory cgroup of its own limited to cold_memory
 * bytes (page cache and anonymous memory alike, as a node on a machine of
 * that size), the engine opened again on its files, and the first
 * cold_fetches items of the order fetched on one thread, each compared:
 * the first half as COLD (from an empty cache), the second as SETTLED
 * (what the cache holds by then is what a node in that memory keeps).
 * The cgroup needs root and /sys/fs/cgroup/memory; without them the run
 * fails saying so.
 *
 * Errors: peer_run returns 0 with res->ok set, or res->ok 0 and
 * res->error saying what failed (a library call, a wrong or missing value,
 * the child's death). Thread safety: one caller; no threads alive in the
 * caller when it forks. Cost: the run's.
 */
#ifndef TIDE_BENCH_PEERS_RUN_H
#define TIDE_BENCH_PEERS_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peers.h"

enum { PH_LOAD, PH_FETCH1, PH_FETCH2, PH_COLD, PH_SETTLED, PHASES };

typedef struct peer_phase {
    double secs, cpu_secs;                 /* wall clock; user + system of the process */
    double items_per_s, items_per_cpu_s;
    uint64_t anon_start, file_start;       /* RSS when the phase began */
    uint64_t peak_anon, peak_file;         /* the sampler's maxima */
    int wchar_ok;                          /* /proc/self/io read (wchar) */
    int io_ok;                             /* and its write_bytes present */
    uint64_t write_bytes, wchar;           /* wchar: bytes passed to write calls */
    int dev_ok;                            /* the device's counters read */
    uint64_t dev_written;
    int cache_ok;                          /* every file of the directory mincore'd */
    uint64_t page_cache;                   /* after the phase: resident bytes of them */
    int ran;                               /* the phase ran (FETCH1 and FETCH2 may be
                                              skipped, COLD runs when asked for) */
    uint64_t items;                        /* what its rates count */
    uint64_t dev_reads, dev_read_bytes;    /* the device's read I/Os and bytes (dev_ok) */
    uint64_t read_bytes;                   /* /proc/self/io read_bytes (io_ok) */
} peer_phase;

typedef struct peer_result {
    int ok;
    char error[PEER_ERROR_MAX + 200];
    peer_phase ph[PHASES];
    uint64_t commits;                      /* during the load */
    int own_ok;                            /* the engine has its own byte counter */
    uint64_t own_written;                  /* its bytes written during the load */
    uint64_t file_bytes, disk_bytes;       /* after the load: st_size and st_blocks sums */
    uint64_t checked;                      /* values fetched and compared */
    /* The cold phase: the engine's page cache before it (after the
     * eviction), and its memory cgroup's peak usage and page cache at its
     * end (memory.max_usage_in_bytes, memory.stat total_cache). */
    uint64_t cold_cached_before, cold_cg_peak, cold_cg_cache;
} peer_result;

typedef struct peer_job {
    const peer_ops *ops;
    const char *dir;                       /* the engine's own directory, made by the run */
    peer_cfg cfg;
    uint64_t seed;                         /* the data's */
    uint64_t order_seed;                   /* the fetch order's */
    uint64_t fault_item;                   /* 1 + the item made wrong on purpose; 0 none */
    int fault_phase;                       /* PH_LOAD: stored wrong (FETCH1 fails first);
                                              PH_FETCH2: only FETCH2 expects it changed */
    int warm;                              /* run FETCH1 and FETCH2 */
    uint64_t cold_memory;                  /* 0: no COLD phase; else its cgroup's limit */
    uint64_t cold_fetches;                 /* COLD's gets, the order's first ones */
} peer_job;

int peer_run(const peer_job *job, peer_result *res);

/* The memory cgroup a run's child `pid` makes for its cold phase. */
void peer_cgroup_path(pid_t pid, char *buf, size_t cap);

/* Remove `dir` and everything below it. 0, or -1 with errno set. */
int peer_remove_tree(const char *dir);

#endif
