/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tools.h: the operator's tools over an archive (`tide archive ls`,
 * `verify`, `get`, `restore`): what a prefix of the pool holds, whether
 * it is what its manifest says, one key's value, and a node's data
 * directory rebuilt from it (docs/ARCHIVE.md, "Tools").
 *
 * A tool session is one connection to the pool and the manifest as it
 * was read at open; each call works from that copy, so a node uploading
 * meanwhile may add objects a listing or a check does not know about yet
 * (they show as unnamed, or are not looked at). Results come back in
 * structures; nothing here prints.
 *
 * Errors: every call returns 0 or a negative TIDE_E* code with
 * tide_last_error() naming the object or the file. TIDE_EUNAVAIL always
 * means the cluster did not answer within the session's timeout: nothing
 * was judged, and the call may simply be run again.
 *
 * Thread safety: a session is used by one thread at a time.
 */
#ifndef TIDE_ARCHIVE_TOOLS_H
#define TIDE_ARCHIVE_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "archive/catalog.h"
#include "gen/manifest.h"
#include "io/io.h"
#include "store/full.h"

typedef struct tide_archive_tool tide_archive_tool;

typedef struct tide_archive_tool_opts {
    const char *conf;        /* ceph.conf; NULL: librados' own search */
    const char *pool;        /* NULL or "": "tide" */
    const char *user;        /* NULL or "": "admin" */
    const char *prefix;      /* required (tide_archive_default_prefix offers one) */
    unsigned    timeout_s;   /* the longest one RADOS call waits; 0: 10 */
} tide_archive_tool_opts;

/*
 * Connect to the pool and read PREFIX.manifest. A prefix with no manifest
 * is no error: tide_archive_tool_catalog then says has_manifest 0 (ls lists
 * what objects there are; the other calls say there is nothing archived).
 * Errors: tide_rados_connect's (TIDE_EUNAVAIL when no monitor answered
 * within timeout_s, with what to check); TIDE_EINVAL for a bad prefix;
 * tide_archive_catalog_decode's for a manifest that is not one.
 * Cost: the connection and two round trips.
 */
int tide_archive_tool_open(tide_archive_tool **out, const tide_archive_tool_opts *opts);

/* Disconnect and free. NULL is a no-op. */
void tide_archive_tool_close(tide_archive_tool *t);

/* The manifest read at open (newest first), the pool's and the prefix's
 * names, and whether there was a manifest at all. Valid until close. */
const tide_archive_catalog *tide_archive_tool_catalog(const tide_archive_tool *t, int *has_manifest);
const char *tide_archive_tool_pool(const tide_archive_tool *t);
const char *tide_archive_tool_prefix(const tide_archive_tool *t);

/* ---- ls ---- */

typedef struct tide_archive_ls_gen {
    uint64_t id;
    tide_archive_state state;
    uint64_t uid;
    unsigned key_size, block_size;
    uint64_t chunk_bytes;
    uint64_t dat_bytes;          /* sealed: the manifest's; open: the bytes of its
                                    data chunks contiguous from chunk 0 (stat) */
    uint64_t key_bytes, filter_bytes, records;   /* sealed only */
    uint64_t sealed_unix_us;     /* sealed only */
    unsigned objects;            /* objects of the pool this entry names (listed) */
    unsigned missing;            /* sealed: objects the manifest names that the pool
                                    lacks (verify says more) */
} tide_archive_ls_gen;

#define TIDE_ARCHIVE_LS_UNNAMED_MAX 256   /* unnamed objects listed by name */

typedef struct tide_archive_ls_object {
    char     oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t bytes;
} tide_archive_ls_object;

typedef struct tide_archive_ls {
    int      has_manifest;
    unsigned keep;               /* the writing node's G (0: unknown) */
    char     writer[128];
    uint64_t updated_unix_us;
    unsigned count, sealed, open, deleting;
    tide_archive_ls_gen *gens;   /* newest first, count of them */
    uint64_t objects;            /* every object of the prefix (listed) */
    uint64_t named_bytes;        /* the entries' bytes: sealed data, key and filter,
                                    open data (the contiguous chunks), the manifest */
    uint64_t unnamed;            /* objects of the prefix the manifest does not name */
    tide_archive_ls_object *unnamed_list;   /* the first TIDE_ARCHIVE_LS_UNNAMED_MAX,
                                               sorted by name, with their sizes */
    unsigned unnamed_listed;
    uint64_t unnamed_bytes;      /* of those listed */
} tide_archive_ls;

/*
 * What the prefix holds: the manifest's entries with their figures, and
 * every object whose name starts with "PREFIX." that the manifest does not
 * name (an upload's leftover, another writer's, a deleted generation's
 * remains). An open generation names every data chunk of its id; a sealed
 * one exactly its chunks and filter; one being deleted every object of its
 * id. *out is filled (free it with tide_archive_ls_free, also after an
 * error). Errors: rados.h's. Cost: a walk of the whole pool's object list
 * (librados lists no names by prefix), a stat per open generation's chunk
 * and per unnamed object listed.
 */
int tide_archive_tool_ls(tide_archive_tool *t, tide_archive_ls *out);
void tide_archive_ls_free(tide_archive_ls *l);

/* ---- verify ---- */

#define TIDE_ARCHIVE_PROBLEMS_MAX 64      /* problems kept with their text */

typedef struct tide_archive_problem {
    char object[TIDE_ARCHIVE_OID_CAP];    /* the object, or for --deep the
                                             generation's "rados:POOL/PREFIX/gen-ID" */
    char what[320];
} tide_archive_problem;

typedef struct tide_archive_verify_gen {
    uint64_t id;
    tide_archive_state state;
    unsigned objects;            /* objects read */
    uint64_t bytes;              /* bytes read */
    unsigned problems;
    int      deep;               /* the store's verify ran on it */
    int      deep_rc;            /* its result (0: a sound NuDB store) */
    tide_verify_report report;   /* its figures */
} tide_archive_verify_gen;

typedef struct tide_archive_verify {
    unsigned count;
    tide_archive_verify_gen *gens;        /* newest first */
    uint64_t objects, bytes;
    unsigned problems;                    /* every problem found */
    tide_archive_problem problem[TIDE_ARCHIVE_PROBLEMS_MAX];   /* the first ones */
} tide_archive_verify;

typedef struct tide_archive_verify_opts {
    int              deep;       /* also tide_store_verify_io on each sealed one */
    tide_progress_fn progress;   /* NULL, or: bytes read of the sealed generations'
                                    data, key and filter objects (a deep verify's
                                    reads are not counted) */
    void            *progress_arg;
} tide_archive_verify_opts;

/*
 * Check the archive against its manifest. For every sealed generation:
 * each data and key chunk is there, of the size the manifest says, and
 * its XXH64 is the manifest's (every chunk read whole, a piece of at most
 * 4 MiB at a time); the filter object likewise; the headers of nudb.dat
 * and nudb.key (at the start of chunk 0 of each) are NuDB's, of the
 * entry's uid and key size, and nudb.key's block size is the entry's.
 * For every open one: its data chunks are contiguous from chunk 0 (each
 * but the last exactly chunk_bytes, none after a short or missing one),
 * a complete chunk whose sum attribute (tide.xxh64) is set has that sum,
 * and chunk 0 starts with a nudb.dat header of the entry's uid. With
 * opts->deep, each sealed generation whose objects passed is then opened
 * read-only on archive_io and checked by tide_store_verify_io: proof that
 * it is a sound NuDB store. A generation being deleted is not checked.
 * Each problem is recorded by object name (out->problem) and the check
 * goes on. Returns 0 when there is none; TIDE_ECORRUPT when there are,
 * the first in tide_last_error(); TIDE_ENOENT when the prefix has no
 * manifest; TIDE_EUNAVAIL (and rados.h's other errors) when a read could
 * not be made: the check stopped. Free *out with tide_archive_verify_free.
 * Cost: every byte of the sealed generations read once (twice and more
 * with deep), the open ones' chunks read once; memory one piece buffer.
 */
int tide_archive_tool_verify(tide_archive_tool *t, const tide_archive_verify_opts *opts,
                             tide_archive_verify *out);
void tide_archive_verify_free(tide_archive_verify *v);

/* ---- get ---- */

/*
 * Look `key` up in the sealed generations, newest first, through the
 * store's own lookup on archive_io (open generations are not read: their
 * key file is not in the archive). On success *out is a malloc'd value of
 * *len bytes and *gen_id (may be NULL) the generation. *looked (may be
 * NULL) gets how many generations were asked. Errors: TIDE_ENOTFOUND (in
 * none, or no sealed generation), TIDE_EKEYSIZE (key_len is not the
 * generations' key size), TIDE_ENOENT (no manifest), TIDE_EUNAVAIL, and a
 * generation's TIDE_ECORRUPT naming it. Cost: per generation asked, an
 * open (its headers and index check, about 6 reads) and a lookup (a
 * bucket read, one per spill record, one record read).
 */
int tide_archive_tool_get(tide_archive_tool *t, const void *key, size_t key_len, void **out,
                          size_t *len, uint64_t *gen_id, unsigned *looked);

/* ---- restore ---- */

enum {
    TIDE_ARCHIVE_RESTORED_SEALED = 0,   /* downloaded whole */
    TIDE_ARCHIVE_RESTORED_OPEN   = 1,   /* its data chunks, cut at the last whole record,
                                           its key file rebuilt */
    TIDE_ARCHIVE_RESTORED_FRESH  = 2,   /* made empty: the archive had no open generation
                                           newer than its sealed ones */
};

typedef struct tide_archive_restore_gen {
    uint64_t id;
    int      kind;                /* TIDE_ARCHIVE_RESTORED_* */
    char     dir[TIDE_GEN_DIR_CAP];
    uint64_t archived_bytes;      /* bytes taken from the archive: a sealed one's
                                     nudb.dat and nudb.key, an open one's data */
    uint64_t cut_bytes;           /* open: bytes past the last whole record, cut off */
    uint64_t dat_bytes, key_bytes;/* its files, restored */
    tide_verify_report report;    /* the store's verify of it */
} tide_archive_restore_gen;

typedef struct tide_archive_restore {
    unsigned keep;                /* the manifest's G, or the option's */
    uint64_t rotations, last_rotation_us;   /* as written to tide.generations */
    unsigned count;
    tide_archive_restore_gen gens[TIDE_GEN_MAX];   /* newest first */
    uint64_t downloaded_bytes;
    unsigned left_sealed;         /* sealed generations beyond keep, not restored */
    uint64_t left_open;           /* an open entry not restored (not the newest), or 0 */
    int      archive_cut;         /* the archive's copy of the open generation was cut */
    uint64_t archive_cut_from, archive_cut_to;
    unsigned strays_removed;      /* its data chunks past the cut, removed */
    char     writer[128];         /* the manifest's last writer */
    uint64_t updated_unix_us;
} tide_archive_restore;

typedef struct tide_archive_restore_opts {
    unsigned         keep;        /* 0: the manifest's keep (TIDE_GEN_MIN when it has
                                     none); else TIDE_GEN_MIN..TIDE_GEN_MAX */
    tide_io         *io;          /* the local files'; NULL: POSIX */
    tide_progress_fn progress;    /* NULL, or: bytes downloaded of those planned */
    void            *progress_arg;
} tide_archive_restore_opts;

/*
 * 0 when `dir` may take a restore: an empty directory, or a missing one
 * whose parent is a directory. TIDE_EEXIST when it holds anything
 * (naming the first entry), TIDE_ENOENT when the parent is missing,
 * TIDE_ENOTSTORE when `dir` is not a directory. Nothing is changed.
 */
int tide_archive_restore_check_dir(tide_io *io, const char *dir);

/*
 * Rebuild a node's data directory `dir` from the archive (docs/ARCHIVE.md,
 * "Tools", has the steps and the crash behaviour): the newest sealed
 * generations and the newest open one (at most keep in all) into
 * gen-NNNNNNNNNNNN/, every chunk checked against its XXH64 as it is
 * written; the open one cut at its last whole record (and the archive's
 * copy of it cut back to the same size, so the node's next uploads meet
 * no different bytes) and its nudb.key rebuilt; each generation checked
 * by tide_store_verify_io; then tide.generations written last. Everything
 * is synced before it returns 0.
 * Refuses a `dir` tide_archive_restore_check_dir refuses, changing
 * nothing. Errors: TIDE_ENOENT (no manifest, or no generation to
 * restore), TIDE_ECORRUPT naming the object or the generation whose
 * bytes are not what the archive says, TIDE_EUNAVAIL, the local file
 * system's. After a failure `dir` holds generation directories and no
 * tide.generations (a node refuses to start on it): remove it and run
 * again. *report (may be NULL) is filled as far as the restore got.
 * Cost: the generations' bytes downloaded once and written once, read
 * once more by the verify; the open one's rekey (a walk of its nudb.dat).
 */
int tide_archive_tool_restore(tide_archive_tool *t, const char *dir,
                              const tide_archive_restore_opts *opts, tide_archive_restore *report);

#endif
