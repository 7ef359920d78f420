/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * live.h: tide.live, the page a writer shares with readers in other
 * processes, and the reader's view of the store through it.
 * live.c writes and reads the page; reader.c is the reader's fetch.
 * docs/FORMAT.md gives the page's layout, docs/DURABILITY.md the protocol.
 */
#ifndef TIDE_STORE_LIVE_H
#define TIDE_STORE_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "store/tail.h"

struct tide_store;

/* The page: 8-byte words, native byte order (little-endian: the page is
 * never read on another machine, never synced, rebuilt at every writable
 * open). Every word is read and written with 8-byte atomics only. */
enum {
    TI_LIVE_MAGIC = 0,      /* "TIDELIVE" */
    TI_LIVE_VERSION,        /* 1 */
    TI_LIVE_SEQ,            /* the seqlock: odd while nudb.key is being written */
    TI_LIVE_GEN,            /* bumped at every writable open (and its recovery) */
    TI_LIVE_PID,            /* the writer's pid; 0 once its open failed */
    TI_LIVE_START,          /* its start time (/proc/PID/stat, clock ticks) */
    TI_LIVE_OPEN,           /* 1 while the writer has the store open */
    TI_LIVE_UID,            /* the store's uid (nudb.key's header) */
    TI_LIVE_BUCKETS,        /* the published bucket count */
    TI_LIVE_KEY_BYTES,      /* nudb.key's size: (buckets + 1) x block size */
    TI_LIVE_W,              /* dat_indexed: nudb.key indexes every record below */
    TI_LIVE_C,              /* dat_committed: every record below is complete */
    TI_LIVE_WORDS
};
#define TI_LIVE_BYTES 4096u
#define TI_LIVE_MAGIC_WORD 0x4556494c45444954ull   /* "TIDELIVE" read little-endian */
#define TI_LIVE_VERSION_1 1u
/* How long a reader's fetch waits for a writer's key-file write to end. */
#define TI_LIVE_WAIT_MS 10000u

typedef struct ti_live {
    tide_io   *io;
    tide_file *f;
    uint64_t  *w;            /* the mapped page: TI_LIVE_WORDS words */
    /* The reader's view, changed under the store's key_lock (write). */
    uint64_t   view_seq;     /* the even seq the view was read at; 0 none */
    uint64_t   view_gen, W, C;
    uint64_t   scanned;      /* the tail index holds [W, scanned) */
    ti_tail    tail;         /* the records of [W, scanned) (tail.c) */
    /* Counters (atomic). */
    uint64_t   retries, waits, tail_scans;
    /* Reader: why tide.live could not be opened (not ENOENT), kept for
     * the refusal when a writer turns out to hold the store; 0 none. */
    int        open_rc;
    char       open_err[384];
} ti_live;

/* Writer: open (create) tide.live beside the store, map it read-write,
 * make seq odd, bump the generation and name this process. No-op (s->live
 * stays NULL) when the io cannot share a map (the simulated file system).
 * A tide.live that cannot be opened or mapped (another user's file, a
 * directory in its place) is not an error: a warning names it and the
 * fix, s->live stays NULL and readers in other processes are refused; but
 * a process still attached to that page (a Tide reader of an earlier
 * writer, which would read unguarded) is: TIDE_EBUSY naming it. Called
 * once the exclusive lock is held, before recovery. */
int ti_live_create(struct tide_store *s);
/* Writer: seq to odd before the first key-file write of a commit, flush
 * or rollback (and before nudb.key grows). No-op without a live page. */
void ti_live_begin(struct tide_store *s);
/* Writer: publish buckets, key file size, dat_indexed, dat_committed and
 * the uid, then seq to even. No-op without a live page. */
void ti_live_end(struct tide_store *s);
/* Writer: begin + end, for a change of the counts alone (the deferred
 * index's phase A raising C). */
void ti_live_publish(struct tide_store *s);
/* Writer, clean close: OPEN to 0, published, seq even. */
void ti_live_closed(struct tide_store *s);
/* Writer: a rollback begins (seq odd, as ti_live_begin) and GEN is bumped
 * under that odd seq, so a reader's tail index built from the undone
 * records is thrown away even when C rises past them again before the
 * reader looks (offsets are reused). End it with ti_live_end. */
void ti_live_rollback(struct tide_store *s);
/* Writer: the rollback failed (TI_COMMIT_BROKEN): seq stays odd and PID
 * becomes 0, so readers say at once that the store needs recovery by a
 * restart of its writer, instead of waiting for an even seq. */
void ti_live_broken(struct tide_store *s);

/* The readers' hold, the first step of every read-only path of the
 * store (a read-only open, ti_store_walk, tide_store_inspect): open
 * `dir`/tide.live and take LOCK_SH on it, then check that it is still
 * linked. A rotation's drop cuts a generation's nudb.dat only while it
 * holds LOCK_EX there (gens_rotate.c), and unlinks the files before it
 * lets go, so while the hold lasts nothing is cut under the reader.
 *   0, *out the held file: keep it open while reading, close it after.
 *   0, *out NULL: nothing to hold (no tide.live, or a file system that
 *      shares no pages); or tide.live could not be opened (not ENOENT) or
 *      locked for another reason than a conflict: *open_rc is that error
 *      (0 otherwise), tide_last_error says why, and the caller goes on
 *      without a hold as before (a drop that cannot lock only unlinks).
 *   TIDE_EBUSY: the lock is refused: a rotation is deleting the store.
 *   TIDE_ENOENT: tide.live was unlinked: a rotation has deleted it.
 * Cost: an open, a flock and a stat. */
int ti_live_hold(tide_io *io, const char *dir, tide_file **out, int *open_rc);
/* For a reader that held `dir` (ti_live_hold gave it a file) and then met
 * TIDE_ENOENT: the error that a rotation deleted the store when its
 * tide.live is gone too, else rc as it is. */
int ti_live_lost(tide_io *io, const char *dir, int rc);

/* Reader, step 1 (before nudb.key is opened, so a writer's holders scan
 * never sees a reader without its tide.live): ti_live_hold, the file kept
 * in s->live. TIDE_EBUSY or TIDE_ENOENT when a rotation is deleting or
 * has deleted the store (ti_live_hold). */
int ti_live_preopen(struct tide_store *s);
/* Reader, step 2, after the shared lock on nudb.key failed with
 * TIDE_EBUSY (`busy` is that error's code): map the page and check that
 * it names a running writer, then take LOCK_SH on tide.live. 0 (s->live
 * set: a live reader) or TIDE_EBUSY with a message. */
int ti_live_attach(struct tide_store *s);
/* Reader, step 3, once the headers are read: the first view (waits for
 * an even seq), and the page's uid against the store's. */
int ti_live_start_reader(struct tide_store *s);

/* Unmap and close; a writer whose seq is odd (a failed open, a broken
 * commit) leaves it odd with PID 0, so readers report the store as
 * needing recovery instead of waiting. Frees the tail index. */
void ti_live_free(struct tide_store *s);

/* TIDE_EBUSY, saying the store needs its writer restarted, when the page
 * marks a broken writer (ti_live_broken: seq odd, PID 0, OPEN 1); else 0.
 * The one check of attach (live.c) and of a reader's wait (reader.c). */
int ti_live_refuse_broken(const ti_live *l, const char *dir);
/* 1 when the writer the page names is running. */
int ti_live_writer_alive(const ti_live *l);
/* This process's start time in clock ticks after boot (/proc/PID/stat
 * field 22), or 0 when it cannot be read. */
uint64_t ti_live_proc_start(int pid);

/* Reader (reader.c): pool-less lookup through the seqlock: lookup.c's
 * path (the tail index of [W, C), then the key file under the published
 * bucket count) inside each attempt.
 * Retries while a write overlaps; TIDE_EBUSY after TI_LIVE_WAIT_MS of
 * writes, or at once when the writer died in the middle of one. */
int ti_reader_lookup(struct tide_store *s, uint64_t h, const void *key, void **value, size_t *len);
/* Reader: bucket `index` as one consistent view has it (the seqlock, as a
 * lookup), into buf (block_size bytes); *buckets and *dat_end get that
 * view's bucket count and data-file bound. TIDE_ENOTFOUND when index is
 * past the view's last bucket. For verify --live (verify_live.c). */
int ti_reader_bucket(struct tide_store *s, uint64_t index, uint8_t *buf, uint64_t *buckets,
                     uint64_t *dat_end);
/* Bring the view to the page's counts under seq `s1` (even): buckets,
 * data file bound, tail index. Caller holds no lock. */
int ti_reader_refresh(struct tide_store *s, uint64_t s1);

#endif
