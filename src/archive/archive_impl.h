/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive_impl.h: the archive handle's insides, shared by archive.c (the
 * handle, the reads, the information) and uploader.c (the archiver
 * thread: uploads, seals, retention, a replica's following).
 *
 * Locks, in the order they may be taken:
 *   open_mu  serialises the opening of archived generations for reads
 *            (each open is RADOS I/O, done without `mu`);
 *   mu       everything below marked (mu): the catalog, the streams'
 *            positions, the readers' table, the counters; the write
 *            completions take it on librados' threads. Never held across
 *            a call to RADOS or a read of a local file.
 */
#ifndef TIDE_ARCHIVE_IMPL_H
#define TIDE_ARCHIVE_IMPL_H

#define XXH_STATIC_LINKING_ONLY
#include <limits.h>
#include <pthread.h>
#include <xxhash.h>

#include "archive/archive.h"
#include "archive/archive_io.h"
#include "archive/filter.h"
#include "archive/rados.h"
#include "io/io.h"
#include "store/full.h"
#include "util/hist.h"

/* A sealed generation opened for reads. Allocated once, freed when it
 * leaves the catalog and nobody holds it (refs 0). */
typedef struct arch_reader {
    uint64_t    id;
    tide_store *s;              /* NULL until opened (open_mu) */
    tide_archive_filter *filter;/* NULL: none in memory (mu) */
    int         filter_tried;   /* its download was tried (mu) */
    unsigned    refs;           /* fetches using it now (mu) */
    int         gone;           /* no longer in the catalog (mu) */
} arch_reader;

/* One asynchronous write of a stream. */
typedef struct arch_piece {
    struct tide_archive *a;
    uint8_t      *buf;
    uint64_t      off;          /* in the file */
    size_t        len;
    uint64_t      issued_ns;
    XXH64_state_t pre;          /* the chunk's sum before this piece's bytes */
    int           state;        /* PIECE_* (mu) */
    int           rc;
} arch_piece;

enum { PIECE_FREE, PIECE_FLYING, PIECE_DONE, PIECE_FAILED };

/* An upload of one local file, nudb.dat or nudb.key, from 0 on. */
typedef struct arch_stream {
    uint64_t      id;           /* the generation */
    int           is_key;
    uint64_t      chunk_bytes;
    uint64_t      uploaded;     /* contiguous bytes in the archive (mu) */
    uint64_t      read_to;      /* bytes read from the file and summed */
    XXH64_state_t sum;          /* the chunk at read_to, over [chunk start, read_to) */
    uint64_t     *sums;         /* complete chunks' sums, [0, read_to / C) */
    unsigned      nsums, sums_cap;
    uint64_t      entries;      /* nudb.key: bucket entries seen (the filter's size) */
} arch_stream;

/* A local generation the primary uploads. */
typedef struct arch_local {
    uint64_t    id;
    int         resumed;        /* dat.uploaded is known (from the archive's objects) */
    int         quiet;          /* read-only, and synced since (uploader.c, invariant 6) */
    int         sealed;
    arch_stream dat;
    uint64_t    durable;        /* the bound at the last look */
    uint64_t    key_bytes;      /* its nudb.key at the last look (the lag) */
    int         writable;
} arch_local;

struct tide_archive {
    tide_archive_opts o;        /* strings point into the copies below */
    char conf[PATH_MAX], pool[128], prefix[TIDE_ARCHIVE_PREFIX_MAX + 1], user[64];
    char data_dir[PATH_MAX], writer[128];

    tide_rados      *r;         /* NULL until connected; then fixed (atomic load) */
    tide_archive_io *aio;
    tide_io         *local_io;  /* the local files' */

    pthread_mutex_t mu, open_mu;
    pthread_cond_t  kick_cv;    /* the archiver's sleep */
    pthread_cond_t  done_cv;    /* a write completed; uploaded moved */
    pthread_t       thread;
    int             thread_started, closing, kicked;

    tide_archive_catalog cat;   /* (mu) */
    uint64_t        cat_version;/* the manifest object's version; 0: none yet (mu) */
    int             cat_loaded; /* (mu) */
    uint64_t        seal_epoch; /* moves at each install that changes what is sealed (atomic) */
    unsigned        local_keep; /* the node's G at the last pass (archiver thread) */

    arch_local    **locals;     /* (mu) */
    unsigned        nlocals, locals_cap;
    arch_reader   **readers;    /* (mu) */
    unsigned        nreaders, readers_cap;

    arch_piece     *pieces;     /* inflight of them, buffers piece_bytes each */
    unsigned        npieces;

    /* What get_info reports (mu). */
    int      up, conflict;
    char     problem[512];
    uint64_t uploaded_bytes, seals, deleted_generations;
    uint64_t reads_found, reads_missed, reads_filtered, reads_failed;
    uint64_t errors_write, errors_read, errors_manifest, errors_delete, errors_connect;
    uint64_t filter_bytes;
    unsigned filters_dropped;
    tide_hist op[TIDE_ARCHIVE_OPS];
};

/* uploader.c: the thread, and the manifest's read (also open's). */
void *tide_archive_thread(void *arg);
int  ti_archive_read_manifest(tide_archive *a);

/* uploader.c: cut generation `id`'s archived nudb.dat back to `size`
 * bytes (its chunk at size truncated, every later chunk removed): the
 * local file lost bytes the archive has (a crash's recovery cut them;
 * they were never acknowledged), and new ones may come in their place.
 * rados.h's errors. Cost: a truncate, then a stat (and a remove) per
 * later chunk. */
int  ti_archive_cut_dat(tide_rados *r, const char *prefix, uint64_t id, uint64_t chunk_bytes,
                        uint64_t size);

/* archive.c: connect (rados.h's errors); the connection is then fixed. */
int  ti_archive_connect(tide_archive *a);

/* archive.c: a failure of `op` (the counter it counts in, TIDE_ARCHIVE_OP_*)
 * recorded as the problem, `up` 0 when the cluster did not answer. (mu
 * not held.) Returns rc. */
int  ti_archive_failed(tide_archive *a, unsigned op, int rc);
/* A call that worked: up 1, the problem cleared. (mu not held.) */
void ti_archive_worked(tide_archive *a);
/* The catalog changed (mu held): readers of generations no longer sealed
 * in it are marked gone and freed when unused. */
void ti_archive_readers_sync(tide_archive *a);
/* The connection, or NULL before it is made. */
tide_rados *ti_archive_rados(tide_archive *a);

#endif
