/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens.h: a node's data directory as an ordered list of generations (online
 * delete), or as one plain store, under one handle.
 *
 * Layout with generations (docs/ROTATION.md has the whole story, with the
 * timeline of which objects survive which rotation):
 *
 *     DIR/tide.generations              the manifest (manifest.h)
 *     DIR/gen-000000000007/nudb.{dat,key,log}   the newest: takes the writes
 *     DIR/gen-000000000006/nudb.{dat,key,log}   older: read, copied forward from
 *
 * Each generation directory is a complete NuDB store that NuDB, `tide
 * verify` and `tide get` open alone. Without a manifest DIR is a plain
 * store (nudb.* in DIR itself) and the handle is a thin wrapper of one
 * tide_store: no rotation, no copy-forward, nothing else changes.
 *
 * Semantics (with generations):
 *   - write-once across every generation: an insert of a key any
 *     generation holds is TIDE_EEXIST;
 *   - reads look newest first; a read that finds the object in an older
 *     generation copies it forward into the newest, and so does an insert
 *     refused because an older one holds the key ("re-PUT"): touched
 *     objects live on;
 *   - a rotation puts a new empty generation in front and, once `keep`
 *     (G) are held, drops the oldest whole. With G generations an object
 *     last written or read in span s (the time between two rotations) is
 *     readable through span s+G-1 and gone after the rotation that ends it.
 *
 * Crash safety: a rotation that drops a generation first syncs every kept
 * store, then hides it from reads (no copy from it can start), syncs the
 * kept stores again (only the copies made since: every copy taken from it
 * is durable, and the hide window is that short second sync), then writes the new manifest durably, then
 * switches in memory, and deletes the dropped generation only after that
 * (gens_rotate.c's essay), so a crash at any point leaves a manifest
 * naming generations that are all present and whole, and every object
 * read, touched, kept or re-PUT inside its retention readable; open
 * reconciles the rest (removes what the manifest does not name, saying so)
 * and refuses, with an error naming it, a named generation that is missing
 * or damaged, and generation directories with no manifest at all.
 *
 * Thread safety: every function may be called from any thread unless it
 * says otherwise. Inserts, fetches and syncs run alongside each other and
 * alongside a rotation, which excludes them only for its hide and its
 * switch (each a few stores under a write lock; no I/O inside it).
 * Rotations are serialised. close must not run alongside anything.
 */
#ifndef TIDE_GEN_GENS_H
#define TIDE_GEN_GENS_H

#include <stddef.h>
#include <stdint.h>

#include "gen/manifest.h"
#include "io/io.h"
#include "store/full.h"

typedef struct tide_gens tide_gens;

/* Called at each step of a rotation or an open, for tests and logs: "create",
 * "sync", "hide", "sync" again (these three only when the rotation drops
 * something), "manifest",
 * "switch", "drop", "delete-step", "done"; at open "reconcile", "adopt".
 * Must not call the handle (tide_gens_interrupt excepted). */
typedef void (*tide_gens_trace_fn)(void *arg, const char *step);

typedef struct tide_gens_opts {
    int      online_delete;       /* 0 (default): DIR is a plain store, as it always was;
                                     a DIR that already holds tide.generations is opened
                                     as generations anyway (nothing is lost; tide_gens_rotate
                                     still works when called) and open logs a warning.
                                     1: generations: an empty DIR gets generation 1; a plain
                                     store in DIR is adopted as generation 1 without copying
                                     (its three files are renamed into gen-000000000001/,
                                     crash-safe and resumable: see gens.c's essay) */
    unsigned keep;                /* G, TIDE_GEN_MIN..TIDE_GEN_MAX, or 0 (the default): the
                                     manifest's own keep (a new manifest: TIDE_GEN_MIN).
                                     (Changed from a default of 2: a caller that did not
                                     ask for a keep silently cut a G=3 directory to 2.)
                                     A keep given that differs from the manifest's takes
                                     effect at the next rotation; a lower one then drops
                                     every generation beyond it, and open says so at WARN
                                     naming the generations that will go */
    int      create_if_missing;   /* 1 (default): create DIR (its parent must exist) and
                                     an empty store when none is there */
    unsigned key_size;            /* for a new store; default 32 */
    unsigned block_size;          /* for a new store; default 4096. Each new generation
                                     takes the newest's key size and block size */
    tide_store_opts store;        /* how every generation is opened (burst, commit
                                     interval, check_invariants); store.io is ignored:
                                     `io` below is used for everything.
                                     store.read_only (added for the CLI's `tide get`
                                     over generations, which may run beside nothing
                                     but must change nothing): every generation opened
                                     read-only; open adopts, creates and removes
                                     nothing (no manifest: the plain store read-only);
                                     fetch does not copy forward (*gen_id is where it
                                     was found); insert, touch, keep and rotate are
                                     TIDE_EINVAL */
    struct tide_io *io;           /* NULL (default): POSIX */
    uint64_t delete_chunk;  /* a dropped generation's nudb.dat is cut by this
                                     much per step before it is unlinked, so the file
                                     system frees it gradually; default 64 MiB */
    unsigned back_off_ms;         /* pause between two delete steps; default 100
                                     (rippled's back_off_milliseconds) */
    tide_gens_trace_fn trace;     /* NULL (default) */
    void    *trace_arg;
} tide_gens_opts;

void tide_gens_opts_init(tide_gens_opts *o);

/*
 * Open DIR as opts say. With generations: read the manifest; remove every
 * gen-* directory (and tide.generations.tmp) the manifest does not name,
 * logging each at WARN with its size; finish an interrupted adoption;
 * open every named generation read-write (recovering each as tide_store_open
 * does) newest first; count the newest generation's data records (one
 * sequential read of its nudb.dat: the objects written into it, which the
 * rotation trigger counts from).
 * Returns 0 with *out owning the handle; TIDE_ENOENT (nothing there and
 * create_if_missing 0); TIDE_ECORRUPT, changing nothing, when DIR has no
 * manifest but gen-* directories other than a resumable gen-000000000001
 * (a lost manifest: the message names them and says "restore
 * tide.generations, or move these directories away"), whatever
 * online_delete says; TIDE_ECORRUPT naming the generation ("DIR:
 * generation 6 (gen-000000000006) named by tide.generations is missing")
 * when a named generation is missing or fails to open (its open error's
 * message follows; gens_open.c: TIDE_EBUSY and TIDE_ENOMEM keep their own
 * code with the same message, since another handle holding a generation
 * says nothing about its files); the manifest's read errors (manifest.h); every
 * tide_store_open error; TIDE_EINVAL (a bad option, a manifest and a plain
 * store's files both in DIR: the message says which). On error nothing is
 * left open and nothing named by the manifest was changed.
 * Cost: the directory list, one store open per generation, the newest's
 * data-file read, the removal of unnamed directories.
 */
int tide_gens_open(tide_gens **out, const char *dir, const tide_gens_opts *opts);

/* Close every generation (each commits what is pending). Returns 0 or the
 * first close error; the handle is freed in every case. NULL is a no-op. */
int tide_gens_close(tide_gens *g);

/* 1 when DIR holds generations (a manifest), 0 for a plain store. Fixed
 * for the handle's life. */
int tide_gens_enabled(const tide_gens *g);

/* The key size every key passed in must have. */
unsigned tide_gens_key_size(const tide_gens *g);

/* The newest generation's id and the oldest kept one's (plain store: both
 * 0). Atomic loads; they change only at a rotation's hide (the oldest:
 * the first generation kept; back if the rotation fails) and switch. */
uint64_t tide_gens_newest_id(const tide_gens *g);
uint64_t tide_gens_oldest_id(const tide_gens *g);

/*
 * Insert into the newest generation, write-once across every generation.
 * Returns 0; TIDE_EEXIST when any generation holds the key (then, when an
 * older one holds it and the newest does not, its stored value is copied
 * forward into the newest: the re-PUT touches it; a failed copy is logged
 * and counted, not returned); the store's insert errors. *gen_id (may be
 * NULL) gets the id of the generation that now holds the key (0 for a plain
 * store), on 0 and on TIDE_EEXIST.
 * Cost: the newest's insert, plus one existence check per older generation
 * (a key-file bucket read each, and a data-file read of the key when an
 * entry's hash matches), plus a fetch and an insert for a copy-forward.
 */
int tide_gens_insert(tide_gens *g, const void *key, const void *value, size_t len,
                     uint64_t *gen_id);

/*
 * Fetch newest first. On success *out is a malloc'd buffer of *len bytes
 * (the caller frees it) and *gen_id (may be NULL) the id of the generation
 * that holds the object after the call: when it was found in an older one it
 * has been copied forward into the newest (an insert into the newest
 * generation, durable at its next commit) and *gen_id is the newest's.
 * Errors: TIDE_ENOTFOUND (in no generation), the stores' read errors. A
 * failed copy-forward is logged and counted, the fetch still succeeds with
 * *gen_id the older generation's.
 * Cost: one store fetch per generation looked in (newest first, stopping at
 * the first hit), plus an insert for a copy-forward.
 */
int tide_gens_fetch(tide_gens *g, const void *key, void **out, size_t *len, uint64_t *gen_id);

/*
 * The node cache's copy-forward: an object with these bytes, last known in
 * generation `gen_id`, was just read. When gen_id is below the newest id,
 * insert the bytes into the newest generation (TIDE_EEXIST there counts as
 * done). Returns 0 with *now_gen_id the generation that holds it now;
 * TIDE_ENOTFOUND when gen_id is below the oldest kept id (the object's
 * generation was dropped, or a rotation dropping it has hidden it: the
 * caller must forget its copy); the insert's
 * errors. A plain store: 0 with *now_gen_id 0, nothing done.
 */
int tide_gens_touch(tide_gens *g, const void *key, const void *value, size_t len,
                    uint64_t gen_id, uint64_t *now_gen_id);

/*
 * Copy `key` forward into the newest generation if an older one holds it
 * and the newest does not (the keep-list of POST /v1/admin/rotate).
 * Returns 0 with *copied 1 when it copied, 0 when nothing was needed;
 * TIDE_ENOTFOUND when no generation holds it; read and insert errors.
 */
int tide_gens_keep(tide_gens *g, const void *key, int *copied);

/* Wait until every insert that returned before this call is durable, in
 * every generation that may hold pending inserts. Returns 0 or the first
 * commit error. */
int tide_gens_sync(tide_gens *g);

/* ---- rotation ---- */

typedef struct tide_gens_rotate_report {
    uint64_t started_unix_us;
    uint64_t new_id;              /* the generation created */
    uint64_t dropped_ids[TIDE_GEN_MAX]; /* the generations dropped, oldest first */
    unsigned dropped;             /* how many (0 while fewer than keep were held) */
    uint64_t deleted_bytes;       /* file bytes of the dropped generations removed */
    uint64_t held_bytes;          /* file bytes of dropped generations another Tide
                                     handle held open (a reader): unlinked, not cut;
                                     the disk frees them when it closes */
    unsigned delete_steps;        /* truncate steps taken */
    uint64_t create_ns, manifest_ns, switch_ns, drop_ns; /* phase wall times */
    uint64_t sync_ns;             /* the kept stores' two syncs around the hide, and
                                     flush_ns before them (0 when nothing is dropped
                                     and the newest does not defer); manifest_ns is the
                                     manifest write alone (added: the syncs were in
                                     manifest_ns) */
    uint64_t flush_ns;            /* the deferred index: indexing the tail of the
                                     generation that was newest, which stops deferring
                                     (0 without a lag); part of sync_ns */
    uint64_t objects_in_previous; /* data records of the generation that was newest */
    uint64_t rotations;           /* the manifest's count after this one */
} tide_gens_rotate_report;

/*
 * Rotate: create generation newest+1 (directory, empty store, synced), open
 * it; when the newest defers its index (opts.store.index_lag_bytes), stop
 * that and index its tail (tide_store_set_deferring: only the newest ever
 * holds a tail, so all of them together stay within one budget, and no
 * generation is flushed when it is dropped; a broken newest is not flushed:
 * its tail stays readable until its close, and while a kept generation
 * holds such a tail the new newest starts with its index off, gens_rotate.c
 * invariant 11); when generations beyond keep go: sync every kept store, hide them
 * from reads (an object only they hold reads as absent from here: its span
 * is ending; shown again if the rotation fails, unless the disk is
 * unknown, below) and sync the kept stores again (so every copy forward
 * taken from them is durable; the second sync commits only the copies made
 * since the first); write the manifest naming the new
 * one first and without the dropped ones (durably: manifest.h), switch in
 * memory (new inserts go to the new generation from here), then close
 * each dropped generation and delete it: nudb.dat cut by delete_chunk
 * per step with back_off_ms pauses, the files unlinked, the directory
 * removed and DIR synced. The promise: an object read, touched, kept or
 * re-PUT (or durably written) in span s reads through span s+G-1, across
 * any crash.
 * Returns 0 with *report filled (may be NULL); TIDE_EINVAL for a plain
 * store ("DIR: online delete is off: no generations to rotate");
 * TIDE_ECLOSED after tide_gens_interrupt; TIDE_EIO / TIDE_ENOSPC from the
 * steps. A failure before the manifest is written leaves everything as it
 * was (the new directory removed when it can be; open removes it
 * otherwise); a failed manifest write whose write-back of the old one
 * fails too leaves the disk naming either list: every directory is kept,
 * the generations being dropped stay hidden (the disk may no longer name
 * them: a copy from them would not be durable before a crash) until a
 * rotation drops them, and the next rotation (or
 * tide_gens_rewrite_manifest) first writes the handle's manifest again,
 * failing (changing nothing else) until that works; a failure while
 * deleting a dropped generation, or an interrupt, leaves the rotation done
 * (returns 0, the report's deleted_bytes short, logged) and open removes
 * the rest. sync_ns is the kept stores' syncs, manifest_ns the write alone.
 * Thread safety: serialised with other rotations; inserts and fetches go
 * on throughout except during the switch.
 * Cost: a store create (three syncs), a store open, when dropping one
 * commit per kept store with pending inserts, the manifest write (two
 * syncs), the drop: per dropped generation one store close, one truncate
 * per delete_chunk of its data file, three unlinks, one rmdir, two
 * directory syncs (gens.c: the generation's own directory is synced after
 * the unlinks and before the rmdir, so a crash never keeps the removal of
 * a directory and loses its files' unlinks; io_sim showed that state);
 * sleeps back_off_ms between truncates.
 */
int tide_gens_rotate(tide_gens *g, tide_gens_rotate_report *report);

/*
 * After a double fault (a failed manifest write whose write-back failed
 * too, see tide_gens_rotate) write the handle's manifest again, so a
 * rotator can retry at each look instead of waiting for its next trigger.
 * The hidden generations stay hidden (gens_rotate.c, invariant 8).
 * Returns 0 when the disk is known (nothing to do, or written now); the
 * write's errors. Serialised with rotations (waits for a running one).
 * Cost: an atomic load when there is nothing to do; else the manifest
 * write (two syncs).
 */
int tide_gens_rewrite_manifest(tide_gens *g);

/* 1 while the manifest on disk is unknown (after a double fault, until a
 * rewrite succeeds); 0 otherwise and for a plain store. Atomic load. */
int tide_gens_disk_unknown(const tide_gens *g);

/*
 * The readable epoch: a count that moves (sequentially consistent) each
 * time the set of readable generations grows, which is only when a failed
 * rotation shows its hidden generations again. A caller that reads it
 * before a fetch answered TIDE_ENOTFOUND and finds it moved after must
 * treat that miss as possibly stale (the node's key cache forgets it).
 * Plain store: always 0. Atomic load, any thread.
 */
uint64_t tide_gens_read_epoch(const tide_gens *g);

/*
 * For a shutdown: a running drop stops before its next delete step (its
 * back-off pause is cut short), leaving the rest of the dropped directory
 * for the next open's reconcile, and from now on tide_gens_rotate returns
 * TIDE_ECLOSED at once. Inserts, fetches and the rest go on working; close
 * must still be called (after the rotation returned). Cannot be undone.
 * Thread safety: any thread, any time, also from a trace hook. Cost: a
 * mutex and a broadcast.
 */
void tide_gens_interrupt(tide_gens *g);

/* ---- information ---- */

typedef struct tide_gens_gen_info {
    uint64_t id;
    char     dir[TIDE_GEN_DIR_CAP];
    uint64_t dat_file_bytes, key_file_bytes, log_file_bytes;
    int      writable;            /* the newest */
    uint64_t tail_items, tail_bytes; /* its deferred index's tail (tide_store_info's):
                                     0 for every generation but the newest */
    uint64_t dat_durable;         /* nudb.dat below this survives any crash
                                     (tide_store_info's): the archive's bound */
    uint64_t uid, salt;           /* its key file's header */
    unsigned key_size, block_size;
} tide_gens_gen_info;

typedef struct tide_gens_info {
    int      enabled;             /* tide_gens_enabled */
    unsigned keep, count;         /* G (the manifest's) and how many are held */
    uint64_t rotations, last_rotation_us;
    tide_gens_gen_info gens[TIDE_GEN_MAX];  /* newest first */
    uint64_t disk_bytes;          /* sum of the three files over every generation */
    uint64_t newest_objects;      /* data records in the newest: counted at open plus
                                     inserts since (the online_delete trigger's count) */
    uint64_t newest_bytes;        /* the newest's nudb.dat size */
    uint64_t copied_forward, copied_forward_bytes; /* since open: reads, re-PUTs, touches,
                                     keeps */
    uint64_t copy_failures;
    uint64_t older_lookups;       /* fetches and existence checks that went past the newest */
    uint64_t removed_at_open;     /* unnamed directories reconcile removed */
} tide_gens_info;

/* A snapshot. Cost: one read lock; a size query per file (no reads). */
void tide_gens_get_info(tide_gens *g, tide_gens_info *out);

/*
 * The store counters as one tide_store_info: the headers and option fields
 * of the newest generation; file sizes summed over the kept generations;
 * the counters (inserts, fetches, commits, commit_failures, bytes_written,
 * syncs, commit_duration) summed over every generation this handle opened,
 * dropped ones included, so they never go down; pool_bytes,
 * pool_spare_bytes and commit_buffer_bytes summed over the open ones. A plain store: its
 * tide_store_get_info.
 */
void tide_gens_store_info(tide_gens *g, tide_store_info *out);

/* The key-file maps' pages this process has mapped in, summed over the
 * open generations (tide_store_key_map_resident): file-backed, reclaimable.
 * 0 or TIDE_EIO (the sum of those that could be read is still set).
 * Thread-safe. Cost: one 8 KiB read of /proc/self/pagemap per 4 MiB of key file. */
int tide_gens_key_map_resident(tide_gens *g, uint64_t *bytes);
/* The same for the data files' maps (tide_store_dat_map_resident). */
int tide_gens_dat_map_resident(tide_gens *g, uint64_t *bytes);

/*
 * Without opening anything for writing or taking a writer's lock: read DIR's
 * manifest and inspect each generation (tide_store_inspect), and list the
 * gen-* directories the manifest does not name (what open would remove).
 * For `tide generations` and `tide verify`. Returns 0; TIDE_ENOENT when DIR
 * has no manifest (a plain store or nothing); the manifest's read errors.
 * A generation that cannot be inspected does not fail the call: its
 * entry's `problem` says why (empty when it is fine). The listing is of
 * one manifest, read before and after the generations: a rotation
 * meanwhile makes it read them again (up to 8 times; then it keeps those
 * the last manifest names), so a generation a rotation dropped under it
 * is never listed as missing or damaged. Cost: one tide_store_inspect per
 * generation per pass, two manifest reads and one listing of DIR.
 */
typedef struct tide_gens_listing {
    tide_gen_manifest manifest;
    struct {
        tide_store_info info;
        char problem[256];
    } gens[TIDE_GEN_MAX];         /* in the manifest's order */
    unsigned unnamed;             /* gen-* directories the manifest does not name */
    char     unnamed_dirs[8][TIDE_GEN_DIR_CAP]; /* the first 8 of them */
    uint64_t disk_bytes;          /* the named generations' files */
} tide_gens_listing;

int tide_gens_inspect(const char *dir, struct tide_io *io, tide_gens_listing *out);

#endif
