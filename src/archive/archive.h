/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.h: a node's generations archived in a Ceph RADOS pool, and read
 * back from it (docs/ARCHIVE.md has the whole story).
 *
 * A primary node uploads each generation's nudb.dat as it grows (the
 * bytes no crash can cut: tide_store_info.dat_durable), in chunks, with a
 * bounded number of asynchronous writes in flight, reading from the local
 * file; when a rotation makes a generation read-only it uploads the final
 * nudb.key and a filter of its keys and records the generation as sealed
 * in PREFIX.manifest (catalog.h). The node drops a local generation only
 * once it is sealed here (tide_archive_sealed). A read that misses every
 * local generation looks in the sealed ones the node no longer holds,
 * newest first (tide_archive_fetch). A replica takes no writes: it serves
 * every sealed generation of the prefix and follows new seals.
 *
 * One thread (the archiver) does every upload, seal, manifest write and
 * retention step of a primary, and re-reads the manifest of a replica.
 * It connects on its own when the cluster was away at open, and retries
 * failed steps with a back-off, so a node works on while RADOS is away:
 * the lag grows, and the reads that need the archive fail with
 * TIDE_EUNAVAIL.
 *
 * Thread safety: every call may come from any thread, close excepted.
 */
#ifndef TIDE_ARCHIVE_ARCHIVE_H
#define TIDE_ARCHIVE_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "archive/catalog.h"
#include "gen/gens.h"

typedef struct tide_archive tide_archive;

typedef struct tide_archive_opts {
    const char *conf;          /* ceph.conf; NULL: librados' default search */
    const char *pool;          /* NULL: "tide" */
    const char *prefix;        /* every object's name starts with PREFIX. (required) */
    const char *user;          /* NULL: "admin" */
    unsigned    timeout_s;     /* the longest one RADOS call waits; 0: 10 */
    int         replica;       /* 1: read only, follow the manifest; gens unused */
    tide_gens  *gens;          /* a primary's generations (must have online delete) */
    const char *data_dir;      /* where gens lives: the local files are read there */
    uint64_t    chunk_bytes;   /* a new generation's chunk size; 0: 64 MiB */
    unsigned    keep;          /* sealed generations kept in the archive; 0: all */
    unsigned    inflight;      /* asynchronous writes in flight at most; 0: 4 */
    size_t      piece_bytes;   /* bytes per write; 0: 1 MiB (at most chunk_bytes; rounded
                                  down to whole 32 KiB, so a key-file block is never cut) */
    uint64_t    filter_budget; /* bytes of filters held in memory; 0: none held */
    unsigned    filter_bits;   /* bits per key of a new filter; 0: 10 */
    unsigned    poll_ms;       /* a replica's manifest re-read, a primary's look
                                  without a kick; 0: 1000 */
    /* Called on the archiver thread at each step, for tests and logs:
     * "written" (a chunk's write acknowledged, `bytes` the data file's bytes
     * the archive holds), "key" (a sealing generation's key file
     * uploaded), "filter" (its filter written), "sealed" (the manifest
     * names it sealed). Must not call the archive. NULL: none. */
    void      (*trace)(void *arg, const char *step, uint64_t id, uint64_t bytes);
    void       *trace_arg;
    int         upload_account;/* memory consumers (tide_mem_account ids) of the
                                  write buffers and of the filters; -1: none */
    int         filter_account;
} tide_archive_opts;

void tide_archive_opts_init(tide_archive_opts *o);

/*
 * Open the archive and start its thread. Connects first: a cluster that
 * does not answer within timeout_s is no error (the thread connects later;
 * tide_archive_get_info says up 0), but a conf file librados cannot read,
 * a missing pool, a refused key, a bad prefix or option, a manifest that
 * is not one (TIDE_ECORRUPT) or of a newer format, and a primary whose
 * generations are not enabled are errors, each with its message.
 * A primary writes nothing at open: its first look adds its generations.
 * Cost: the connection (milliseconds; up to timeout_s when away), the
 * manifest read, a thread; the write buffers (inflight x piece_bytes) are
 * allocated when uploads start and counted under upload_account.
 */
int tide_archive_open(tide_archive **out, const tide_archive_opts *opts);

/* Stop the thread (an upload in progress stops after the writes in flight
 * complete or time out), close every archived generation opened for
 * reads, free the filters and disconnect. NULL is a no-op. */
void tide_archive_close(tide_archive *a);

/* Wake the archiver now: a commit or a rotation has given it work.
 * Cost: a mutex and a signal. */
void tide_archive_kick(tide_archive *a);

/* 1 when generation `id` is sealed in the archive (every byte of it
 * there, its manifest entry written) and is this node's (a primary's: the
 * entry's uid is its local generation's), else 0; 0 too while the archive
 * is in conflict. A rotation must not drop a local generation before this
 * says 1. Cost: tide_gens_get_info, a mutex, a scan. */
int tide_archive_sealed(tide_archive *a, uint64_t id);

/*
 * Wait until the archive holds generation `id`'s nudb.dat up to `bytes`
 * (an acknowledged write's durable end), for at most timeout_ms.
 * Returns 0; TIDE_EUNAVAIL when the time ran out (the message says how far
 * the archive is and whether the cluster answers); TIDE_ECLOSED when the
 * archive is closing. Cost: a wait on a condition variable.
 */
int tide_archive_wait(tide_archive *a, uint64_t id, uint64_t bytes, unsigned timeout_ms);

/*
 * Look `key` up in the sealed generations with an id below `below_id`
 * (a primary passes its oldest local generation's id: what the node still
 * holds it reads itself; 0: every sealed generation), newest first,
 * stopping at the first that holds it. On success *out is a malloc'd
 * value of *len bytes and *gen_id the generation. Errors: TIDE_ENOTFOUND;
 * TIDE_EKEYSIZE (key_len is not the generations' key size);
 * TIDE_EUNAVAIL (the cluster did not answer within timeout_s, or the
 * archive is not connected, or is known away: then at once, no RADOS
 * call); TIDE_ECORRUPT and TIDE_EIO from a generation whose objects are
 * not what the manifest says (the message names it). An object missing
 * under the read is a miss of that generation when the manifest no longer
 * calls it sealed (retention deleted it meanwhile; a replica reads the
 * manifest again to know), TIDE_ECORRUPT otherwise.
 * Cost: for each generation looked in, one filter test (no I/O); where the
 * filter says "maybe", or there is none in memory, the store's lookup
 * through RADOS: one ranged read of the bucket in nudb.key, one per spill
 * record, one of the record in nudb.dat (two across a chunk boundary).
 * The first lookup in a generation opens it: its two headers and the
 * open's index check (three buckets, 64 KiB of nudb.dat, then a bucket and
 * a key read for each of 32 sampled records), about 70 ranged reads one
 * after another, and its filter's download when the budget has room
 * (tide bench archive: 20 to 35 ms on one machine over loopback).
 */
int tide_archive_fetch(tide_archive *a, uint64_t below_id, const void *key, size_t key_len,
                       void **out, size_t *len, uint64_t *gen_id);

typedef struct tide_archive_info {
    int      up;                  /* connected, and the last call to RADOS worked */
    int      replica;
    char     pool[128], prefix[TIDE_ARCHIVE_PREFIX_MAX + 1];
    char     problem[512];        /* the last failure, "" when none since it worked */
    int      conflict;            /* another writer changed the manifest: uploads stop */
    uint64_t lag_bytes;           /* local durable bytes not yet in the archive, plus the
                                     key files of generations waiting to be sealed */
    uint64_t uploaded_bytes;      /* written to RADOS since open (data, keys, filters) */
    uint64_t sealed_generations;  /* in the manifest now */
    uint64_t archived_generations;/* every entry, open ones included */
    uint64_t archive_bytes;       /* the sealed generations' data and key bytes */
    uint64_t oldest_unsealed;     /* the oldest local generation not sealed (0: none) */
    uint64_t seals, deleted_generations;
    uint64_t reads_found, reads_missed, reads_filtered, reads_failed;
    uint64_t rados_reads;         /* ranged reads of sealed generations' objects since open:
                                     the stores' file reads through archive_io (a bucket, a
                                     spill record, a record; a read across a chunk boundary
                                     counts one per object). Filter downloads and manifest
                                     reads are not among them */
    uint64_t rados_read_bytes;    /* their bytes */
    uint64_t errors_write, errors_read, errors_manifest, errors_delete, errors_connect;
    uint64_t filter_bytes;        /* filters in memory */
    unsigned filters_held, filters_dropped; /* sealed generations with / without one */
    uint64_t inflight_bytes;      /* write buffers held now */
    /* Durations of RADOS operations, by kind (cumulative buckets with
     * TIDE_HIST_BOUNDS, then +Inf, as every Tide histogram). A read is a
     * tide_archive_fetch that looked in at least one generation through
     * RADOS; one the filters answered alone is not among them. */
    struct { uint64_t bucket[15]; uint64_t sum_ns, count; } op[5];
} tide_archive_info;

/* The kinds of tide_archive_info.op, and their names for metrics. */
enum { TIDE_ARCHIVE_OP_WRITE, TIDE_ARCHIVE_OP_READ, TIDE_ARCHIVE_OP_SEAL,
       TIDE_ARCHIVE_OP_MANIFEST, TIDE_ARCHIVE_OP_DELETE, TIDE_ARCHIVE_OPS };
const char *tide_archive_op_name(unsigned op);

/* A snapshot. Cost: for a primary tide_gens_get_info (the lag is counted
 * from the generations themselves), then a mutex; no RADOS call. */
void tide_archive_get_info(tide_archive *a, tide_archive_info *out);

/* A count that moves (sequentially consistent) each time the sealed
 * generations the archive serves change: a seal, one seen in a re-read
 * manifest, a deletion. A caller that remembers a miss reads it before
 * the fetch and forgets the miss when it moved. Atomic load, any thread. */
uint64_t tide_archive_seal_epoch(tide_archive *a);

/* A copy of the manifest as the archive last read or wrote it (the caller
 * clears it). TIDE_ENOMEM. */
int tide_archive_catalog_snapshot(tide_archive *a, tide_archive_catalog *out);

/* The state of local generation `id` in the archive, for `tide
 * generations` and /v1/rotations: "sealed", "uploading" (with *uploaded
 * the bytes there), "waiting" (nothing uploaded yet), or "absent". */
const char *tide_archive_gen_state(tide_archive *a, uint64_t id, uint64_t *uploaded);

#endif
