/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_archive.h: the archive benchmark (src/archive, a node's
 * generations in a Ceph RADOS pool), as a library part: what an upload of
 * a sealed generation costs at each number of writes in flight, what a read
 * through the archive costs beside a read of the local copy (hits, and
 * misses with and without the filters), and what archive_sync=archive adds
 * to an acknowledged write. `tide bench archive` (src/cli/cmd_bench_archive.c)
 * parses the options, calls these in order and prints what they measured;
 * nothing here prints. The cluster is the caller's (scripts/ceph-up starts
 * one; bench/archive runs the whole thing).
 *
 * A bench is used in four steps, as the other benches' are:
 *
 *   tide_bench_archive_begin      the bench directory, the machine, the
 *                                 cluster's connection, the generation
 *                                 written locally and rotated, and one
 *                                 sealed copy of it uploaded for the reads
 *   tide_bench_archive_run        run r (1 to opts.runs): every variant of
 *                                 the three sections once, interleaved
 *   tide_bench_archive_summarize  medians, minima and maxima over the runs
 *   tide_bench_archive_end        every object the bench wrote removed from
 *                                 the pool, the directory removed
 *
 * Errors: 0 or a negative TIDE_E* code, the whole message in
 * tide_last_error() (it names the section, the variant and the prefix).
 *
 * Thread safety: one thread drives a bench; the archives' threads and
 * librados' run beside it (their CPU time is the process's).
 * Cost: in memory, 48 bytes per key of a read phase (the keys, their
 * items and the latencies, counted under the memory consumer "bench"), the
 * archives' write buffers (inflight x piece_bytes, "archive_upload") and filters
 * ("archive_filters"), and librados' own; in the pool, the read copy
 * (about SIZE plus its key file) and one upload at a time, each removed when
 * measured; on the local disk, the generation (about SIZE plus its key
 * file) and a small node per acknowledged-write variant.
 */
#ifndef TIDE_BENCH_ARCHIVE_H
#define TIDE_BENCH_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "archive/rados.h"
#include "bench/bench_store.h"

#define TIDE_BENCH_ARCHIVE_INFLIGHT_MAX 8u           /* values of inflight in one bench */
#define TIDE_BENCH_ARCHIVE_SIZE_MIN     (1ull << 20)
#define TIDE_BENCH_ARCHIVE_SIZE_MAX     (2ull << 30)
#define TIDE_BENCH_ARCHIVE_KEYS_MAX     10000000u
#define TIDE_BENCH_ARCHIVE_PUTS_MAX     1000000u
#define TIDE_BENCH_ARCHIVE_PREFIX_MAX   40u          /* the variants' suffixes follow */

/* The read phases, in the order of a run's first round. */
enum tide_bench_archive_read_id {
    TIDE_BA_LOCAL,          /* present keys, tide_store_fetch on the local copy */
    TIDE_BA_HIT,            /* present keys, tide_archive_fetch (filters held) */
    TIDE_BA_MISS_FILTER,    /* absent keys, tide_archive_fetch (filters held) */
    TIDE_BA_MISS_NOFILTER,  /* absent keys, tide_archive_fetch, filter budget 0 */
    TIDE_BA_READS
};

/* The acknowledged-write variants. */
enum { TIDE_BA_SYNC_LOCAL, TIDE_BA_SYNC_ARCHIVE, TIDE_BA_SYNCS };

typedef struct tide_bench_archive_opts {
    const char *conf;        /* the cluster's ceph.conf. Required */
    const char *pool;        /* the pool (it must exist). "tide" */
    const char *prefix;      /* the objects' names start with PREFIX-; 1 to
                                TIDE_BENCH_ARCHIVE_PREFIX_MAX of [A-Za-z0-9_-].
                                NULL: "tide-bench-PID" */
    uint64_t size;           /* the generation's nudb.dat, about (whole records),
                                SIZE_MIN to SIZE_MAX. 256 MiB */
    uint64_t value_size;     /* 1 to 65536. 200 */
    uint64_t runs;           /* 1 to TIDE_BENCH_RUNS_MAX. 3 */
    uint64_t keys;           /* fetches per read phase, 1 to KEYS_MAX and at most
                                the generation's objects. 10000 */
    uint64_t puts;           /* synced puts per write variant, 1 to PUTS_MAX. 1000 */
    unsigned inflight[TIDE_BENCH_ARCHIVE_INFLIGHT_MAX]; /* each 1 to 256. {1, 4, 16} */
    unsigned ninflight;      /* how many. 3 */
    uint64_t chunk_bytes;    /* the archive's chunk (its checks apply). 64 MiB */
    uint64_t piece_bytes;    /* bytes per write, 32 KiB to the chunk. 1 MiB */
    uint64_t filter_budget;  /* the filtered phases' (the other has 0). 64 MiB */
    unsigned timeout_s;      /* the archive's RADOS timeout, 1 to 300. 10 */
    uint64_t seed;           /* 0 to 2^31 - 1. 0 */
    const char *parent;      /* where the bench directory is made. "/tmp" */
    int keep;                /* keep the local directory (the pool's objects go
                                whatever this says). 0 */
} tide_bench_archive_opts;

/* One upload of the sealed generation under a fresh prefix. */
typedef struct tide_bench_archive_upload {
    unsigned inflight;
    uint64_t dat_bytes, key_bytes, filter_bytes;
    uint64_t open_ns;        /* tide_archive_open: connect and manifest read */
    uint64_t data_ns;        /* open's return to tide_archive_wait's for all of
                                nudb.dat: the first pass's manifest write, the
                                resume's stat, then the data's writes */
    uint64_t key_ns;         /* the data's end to the "key" trace: nudb.key uploaded */
    uint64_t filter_ns;      /* to "filter": the filter built from the local store
                                (a read of its nudb.dat) and written */
    uint64_t manifest_ns;    /* to "sealed": the manifest entry written */
    uint64_t writes;         /* RADOS writes of the data and key files (the write
                                histogram's count; the empty newest generation's
                                one write may be among them) */
    int64_t  upload_buffers; /* the archive_upload consumer while it ran: inflight
                                x piece_bytes */
} tide_bench_archive_upload;

/* One read phase: opts.keys fetches, each timed alone. */
typedef struct tide_bench_archive_read {
    uint64_t fetches, found;
    uint64_t filtered;       /* misses a filter answered with no read */
    uint64_t reads;          /* archive: RADOS ranged reads (tide_archive_info);
                                local: tide_io_posix() reads (the maps need none) */
    uint64_t read_bytes;
    uint64_t open_ns;        /* the open and a first fetch, untimed below: for the
                                archive the generation's headers, its index check
                                and its filter's download */
    uint64_t open_reads;     /* the reads of that first fetch */
    int64_t  filter_memory;  /* the archive_filters consumer after it */
    uint64_t p50_ns, p90_ns, p99_ns, max_ns, total_ns;
} tide_bench_archive_read;

/* One write variant: opts.puts puts, each followed by tide_node_sync. */
typedef struct tide_bench_archive_sync {
    uint64_t puts;
    uint64_t archive_waits;  /* tide_node_archive_sync_waits, failed ones apart */
    uint64_t archive_failed;
    uint64_t p50_ns, p90_ns, p99_ns, max_ns, total_ns;
} tide_bench_archive_sync;

typedef struct tide_bench_archive_result {
    tide_bench_archive_upload up[TIDE_BENCH_ARCHIVE_INFLIGHT_MAX];
    tide_bench_archive_read rd[TIDE_BA_READS];
    tide_bench_archive_sync sy[TIDE_BA_SYNCS];
    double   load1;          /* the 1-minute load average after the run */
    uint64_t peak_anon, peak_file;   /* RSS sampled through the run (bench_store.h) */
} tide_bench_archive_result;

typedef struct tide_bench_archive_summary {
    size_t runs;
    struct {
        tide_bench_stat mb_s;        /* nudb.dat's MB (10^6 bytes) per second of data_ns */
        tide_bench_stat vs_first;    /* mb_s over the first inflight's, within each run */
        tide_bench_stat open_ms, data_s, seal_s, key_s, filter_s, manifest_s;
    } up[TIDE_BENCH_ARCHIVE_INFLIGHT_MAX];
    struct {
        tide_bench_stat p50_us, p90_us, p99_us, max_us, reads, open_ms;
    } rd[TIDE_BA_READS];
    tide_bench_stat hit_vs_local_p50, hit_vs_local_p99;   /* within each run */
    struct { tide_bench_stat p50_ms, p90_ms, p99_ms, max_ms; } sy[TIDE_BA_SYNCS];
    tide_bench_stat sync_vs_local_p50, sync_vs_local_p99; /* within each run */
    tide_bench_stat load1;
} tide_bench_archive_summary;

typedef struct tide_bench_archive {
    tide_bench_archive_opts opts;
    char dir[TIDE_BENCH_PATH_MAX + 100];       /* PARENT/tide-bench-XXXXXX */
    char data_dir[TIDE_BENCH_PATH_MAX + 200];  /* dir/data: the generations */
    char gen_dir[TIDE_BENCH_PATH_MAX + 300];   /* the sealed generation's store */
    char prefix[64];                           /* the bench's prefix */
    char where[128];                           /* the section and variant running */
    long nproc;
    char kernel[300];
    double load_begin[3];                      /* getloadavg at begin */
    uint64_t items, gen_id, dat_bytes, key_bytes;
    uint64_t fill_ns;                          /* the generation's inserts, sync, rotation */
    tide_bench_archive_result *runs;           /* [opts.runs] */
    /* private */
    tide_rados *r;                             /* the removals' connection */
    unsigned char *keys;                       /* a read phase's keys, */
    uint64_t *item;                            /* their items (the values' check), */
    uint64_t *lat;                             /* a phase's latencies */
    unsigned char *value;                      /* one value */
    unsigned char key[TIDE_BENCH_KEY_SIZE];    /* one key */
    unsigned char open_key[TIDE_BENCH_KEY_SIZE]; /* a present key the phases' first
                                                  (untimed) fetch asks */
    size_t held;                               /* bytes counted under "bench" */
    int upload_account, filter_account, bench_account;
    int dir_made, read_copy;
} tide_bench_archive;

/* The defaults named in tide_bench_archive_opts. */
void tide_bench_archive_opts_init(tide_bench_archive_opts *o);

/*
 * Check the options, make the bench directory under o->parent, read the
 * machine and connect to the cluster; write the generation (opts.size of
 * records, 32-byte keys) with tide_gens (online delete, keep 2), sync and
 * rotate it so it is read-only; upload it once under PREFIX-read and wait
 * for its seal, for the read phases. Returns 0, TIDE_EINVAL (an option out
 * of range, named), the cluster's errors (TIDE_EUNAVAIL when it does not
 * answer within timeout_s), the store's, TIDE_ENOMEM. Call
 * tide_bench_archive_end whatever it returns. Cost: the generation's write
 * (seconds per 100 MiB) and one upload.
 */
int tide_bench_archive_begin(tide_bench_archive *b, const tide_bench_archive_opts *o);

/*
 * Run number `run` (1 to opts.runs) into b->runs[run - 1]: each value of
 * inflight's upload (a primary archive on the generation under a fresh
 * prefix, then the prefix's objects removed), the four read phases (keys
 * drawn afresh each run), and the two write variants (a fresh node and
 * prefix each, removed after), each section's variants in an order that
 * starts one later each run. Returns 0, or the failing call's code
 * (TIDE_ECORRUPT for a wrong value or a count that does not add up;
 * TIDE_EUNAVAIL when an upload or a seal did not end in time) with the
 * message naming the variant.
 */
int tide_bench_archive_run(tide_bench_archive *b, unsigned run);

/* The statistics over the runs done (b->opts.runs of them). Pure. */
void tide_bench_archive_summarize(const tide_bench_archive *b, tide_bench_archive_summary *s);

/* Remove the read copy's objects (and any a failed variant left), close
 * the connection, free the buffers, remove the directory unless opts.keep.
 * Safe after a failed begin. */
void tide_bench_archive_end(tide_bench_archive *b);

#endif
