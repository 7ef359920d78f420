/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim.h: a simulated file system in memory, for tests.
 *
 * A tide_io_sim is a tide_io (tide_io_sim_io) that keeps every file in
 * memory twice over: the durable image, as of the file's last successful
 * sync, and the operations pending since then. A test runs the store on it,
 * then asks for the state after a power loss (tide_io_sim_crash), makes the
 * n-th call fail (tide_io_sim_fail_at), fills the disk
 * (tide_io_sim_set_capacity), or lists every crash state in turn
 * (tide_io_sim_crash_state). io_sim.c's opening comment states the model and
 * its invariants; every call below and through the tide_io asserts them at
 * its end (TIDE_ASSERT: a broken one aborts the process), so a sim is
 * always in a state the model allows.
 *
 * Paths are plain strings. Repeated '/' are collapsed and a trailing '/' is
 * dropped; "." and ".." have no meaning. A path's directory is everything
 * before its last '/' (none for "name": always present). A directory exists
 * when it was made with tide_io_sim_mkdir (or is a parent of one) or with
 * the tide_io's mkdir (and not removed since with its rmdir), or when a
 * current file lies under it. The tide_io's mkdir and rmdir are namespace
 * operations like a create or an unlink: pending until sync_dir of the
 * directory's parent, so a crash may lose them.
 *
 * Thread safety: every function here and every call through the tide_io
 * takes the sim's one mutex, so the store's commit thread and its callers
 * may share a sim; each call is atomic with respect to the others.
 * Lifetime: every tide_file must be closed before tide_io_sim_destroy.
 */
#ifndef TIDE_IO_SIM_H
#define TIDE_IO_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

typedef struct tide_io_sim tide_io_sim;

/* ---- life ---- */

/*
 * Make an empty sim: no files, no directories but the implicit ones,
 * unlimited capacity, no fault armed. *out owns it until
 * tide_io_sim_destroy. Returns 0 or TIDE_ENOMEM. Cost: one allocation.
 */
int tide_io_sim_create(tide_io_sim **out);

/* Free the sim and every file in it. Handles still open become dangling:
 * close them first. NULL is a no-op. */
void tide_io_sim_destroy(tide_io_sim *sim);

/* The file interface to hand to the store (tide_store_opts.io,
 * tide_store_create_opts.io, tide_store_recover_io, ...). It lives as long as
 * the sim. Never NULL for a valid sim; no I/O. */
tide_io *tide_io_sim_io(tide_io_sim *sim);

/*
 * Deep-copy the sim into *out: every file's durable image, pending
 * operations and current image, both namespaces, the pending namespace
 * operations, the directories, the capacity and the counters. The copy has
 * no open handles and no locks (files reachable only through an open handle
 * of `sim` are not copied) and no fault armed. Safe while the store runs on
 * `sim`: the copy is the state between two calls. Returns 0 or TIDE_ENOMEM
 * (*out untouched). Cost: memory and time in proportion to the sim's bytes.
 */
int tide_io_sim_clone(tide_io_sim *sim, tide_io_sim **out);

/* ---- test helpers (never counted, never faulted) ---- */

/*
 * Make directory `path` (and its parents) exist, durably. Returns 0,
 * TIDE_EINVAL (empty path), TIDE_EEXIST when a file has that path, or
 * TIDE_ENOMEM.
 */
int tide_io_sim_mkdir(tide_io_sim *sim, const char *path);

/*
 * Make `path` a file holding `len` bytes of `data` (copied; data may be
 * NULL when len is 0), durably: in both namespaces, with no pending
 * operations. A file already at `path` is replaced, and pending namespace
 * operations on `path` are forgotten. Open handles of a replaced file keep
 * the old file. Returns 0, TIDE_EINVAL (empty path or a directory), or
 * TIDE_ENOMEM. Meant for setting a sim up before use.
 */
int tide_io_sim_put_file(tide_io_sim *sim, const char *path, const void *data, size_t len);

/*
 * Make `path` a file that is not a regular file, durably, replacing any
 * file there: `kind` says what it is in messages ("a FIFO", "a socket",
 * "a character device"; 1 to 23 characters). open refuses it with
 * TIDE_ENOTSTORE, at once, whatever the flags, as the POSIX io refuses a
 * real one; stat sees a file (not a directory); unlink and rename work.
 * Returns 0, TIDE_EINVAL (bad path or kind) or TIDE_ENOMEM.
 */
int tide_io_sim_put_special(tide_io_sim *sim, const char *path, const char *kind);

/*
 * The current image of `path` (what a read sees now): *data is a malloc'd
 * buffer of *len bytes (at least one byte allocated) that the caller frees.
 * Returns 0, TIDE_ENOENT, or TIDE_ENOMEM (*data untouched on error).
 */
int tide_io_sim_get_file(tide_io_sim *sim, const char *path, void **data, size_t *len);

/* Same, for the durable image of the file the durable namespace has at
 * `path` (what a crash that keeps no pending operation leaves). */
int tide_io_sim_get_durable_file(tide_io_sim *sim, const char *path, void **data, size_t *len);

/* ---- other processes ---- */

/*
 * Pretend that process `pid` (named `comm`) has `path` open, for
 * tide_io.holders: from now on, while `path` names a file in the current
 * namespace, holders() lists it. Nothing else changes (no lock is taken;
 * the store's own files are untouched). A clone has none of them.
 * Returns 0, TIDE_EINVAL (bad path) or TIDE_ENOMEM. No I/O.
 */
int tide_io_sim_add_holder(tide_io_sim *sim, const char *path, int pid, const char *comm);

/* Forget every holder added. No I/O. */
void tide_io_sim_clear_holders(tide_io_sim *sim);

/* ---- counters ---- */

/*
 * Calls made through the tide_io since the sim was created (for a clone:
 * since the original was created). Every call of open, read_at, write_at,
 * sync, truncate, size, lock, unlink, rename, sync_dir, stat, mkdir, rmdir
 * and list counts once,
 * whether it succeeds or fails; close never counts, nor do the functions of
 * this header. fail_at's n counts the same calls. No I/O.
 */
uint64_t tide_io_sim_calls(tide_io_sim *sim);

/* Failures injected so far by fail_at (not by capacity). No I/O. */
uint64_t tide_io_sim_faults(tide_io_sim *sim);

/* What the sim knows about one file; counters belong to the file, so they
 * follow it through a rename, and count successful calls only. */
typedef struct tide_io_sim_file_stats {
    uint64_t size;           /* current size */
    uint64_t durable_size;   /* size of the durable image */
    uint64_t pending_ops;    /* writes and truncates since the last sync */
    uint64_t writes, bytes_written;
    uint64_t reads, bytes_read;
    uint64_t syncs;
} tide_io_sim_file_stats;

/* Fill `out` for the file the current namespace has at `path`. Returns 0
 * or TIDE_ENOENT. No I/O. */
int tide_io_sim_file_stats_get(tide_io_sim *sim, const char *path, tide_io_sim_file_stats *out);

/* ---- faults ---- */

typedef enum tide_io_sim_fault {
    TIDE_IO_SIM_NONE = 0,      /* disarm */
    TIDE_IO_SIM_EIO,           /* TIDE_EIO, no effect */
    TIDE_IO_SIM_ENOSPC,        /* TIDE_ENOSPC, no effect (open with CREATE,
                                  write_at, truncate, sync, rename, sync_dir,
                                  mkdir);
                                  other calls fail as EIO */
    TIDE_IO_SIM_SHORT_WRITE,   /* write_at: applies the first bytes up to the
                                  last 512-byte file boundary at or below the
                                  write's middle (possibly none), then
                                  TIDE_EIO; other calls fail as EIO */
    TIDE_IO_SIM_SYNC_FAIL,     /* sync: TIDE_EIO and the file's pending
                                  operations are dropped (current reverts to
                                  durable); other calls fail as EIO */
} tide_io_sim_fault;

/*
 * Make the n-th counted call from now (n >= 1; n == 1 is the next call)
 * fail with `kind`; with `persistent`, every counted call from the n-th on
 * fails. Replaces any fault armed before; TIDE_IO_SIM_NONE (or n == 0)
 * disarms. A crash disarms too. Each failure records "sim: PATH: OP at
 * offset N: injected EIO (call C)" for tide_last_error().
 *
 * Failure-point loop: for n = 1, 2, ...: c0 = tide_io_sim_calls(sim);
 * arm n; run the workload; done once tide_io_sim_calls(sim) - c0 < n.
 * Returns 0 or TIDE_EINVAL (an unknown kind). No I/O.
 */
int tide_io_sim_fail_at(tide_io_sim *sim, uint64_t n, tide_io_sim_fault kind, int persistent);

/*
 * Disk full: a write_at or truncate that would make the sum of the current
 * sizes of all live files (in the current namespace or open) exceed `bytes`
 * fails with TIDE_ENOSPC and changes nothing. UINT64_MAX (the default)
 * means unlimited. Lowering it below the present usage is allowed: only
 * growth is refused. No I/O.
 */
void tide_io_sim_set_capacity(tide_io_sim *sim, uint64_t bytes);

/* Sum of the current sizes of all live files. No I/O. */
uint64_t tide_io_sim_usage(tide_io_sim *sim);

/* ---- crashes ---- */

/*
 * Turn the sim into the state after a power loss, chosen by a PRNG seeded
 * with `seed` (the same state and seed give the same result):
 *   - each pending write or truncate is kept or dropped (one in two), kept
 *     ones applied to the durable image in their order; a kept write that
 *     spans a 512-byte file boundary is torn (one in two) at one of them,
 *     its prefix surviving; sizes are what the kept operations imply;
 *   - each pending namespace operation (create, unlink, rename, the half
 *     of a rename whose other directory was synced, mkdir, rmdir) is kept
 *     or dropped (one in two), kept ones applied to the durable namespace
 *     in their order; a directory whose mkdir is dropped goes with every
 *     file and directory under it, synced or not.
 * Afterwards current == durable == that image, nothing is pending, every
 * old tide_file fails with TIDE_EIO (close still frees it), no lock is
 * held, and no fault is armed. Files no name reaches are freed.
 * Returns 0 or TIDE_ENOMEM (then the sim is unchanged). Cost: the bytes of
 * the pending operations.
 */
int tide_io_sim_crash(tide_io_sim *sim, uint64_t seed);

/* Pending writes and truncates across all live files, numbered 0..count-1
 * in the order they were made (the numbering crash_state uses). No I/O. */
uint64_t tide_io_sim_pending_count(tide_io_sim *sim);

/* One pending operation, for enumerating the tears of a write. */
typedef struct tide_io_sim_op_info {
    char     path[256];   /* a current (else durable) name of the file, cut
                             to fit; "" when the file has none */
    int      is_truncate;
    uint64_t offset;      /* write: file offset; truncate: new size */
    uint64_t len;         /* write: bytes; truncate: 0 */
} tide_io_sim_op_info;

/* Describe pending operation `index`. Returns 0 or TIDE_EINVAL (no such
 * index). No I/O. */
int tide_io_sim_pending_op(tide_io_sim *sim, uint64_t index, tide_io_sim_op_info *out);

/*
 * Like tide_io_sim_crash, but the crash image is chosen, not drawn: exactly
 * the pending operations whose bit (1 << index) is set in `subset_mask`
 * survive, in their order. When tear_index >= 0, that write (its bit must be
 * set) keeps only its first `tear_at` bytes, where 0 < tear_at < len and
 * offset + tear_at is a multiple of 512 (a sector boundary of the file).
 * Every pending namespace operation is kept, so the enumeration covers the
 * data of files as the namespace will have them.
 *
 * Returns 0, or TIDE_EINVAL (more than 64 pending operations, a bit beyond
 * the count, a bad tear) or TIDE_ENOMEM with the sim unchanged.
 */
int tide_io_sim_crash_state(tide_io_sim *sim, uint64_t subset_mask, int tear_index,
                            uint64_t tear_at);

/* Pending namespace operations (creates, unlinks, renames, mkdirs and
 * rmdirs not yet made durable by a sync_dir), numbered 0..count-1 in the order they were made
 * (the numbering crash_state_ns uses). No I/O. */
uint64_t tide_io_sim_pending_ns_count(tide_io_sim *sim);

/* Describe pending namespace operation `index` into `out` (cap bytes),
 * e.g. "unlink /db/nudb.key" or "mkdir /db/gen-1". Returns 0 or
 * TIDE_EINVAL. No I/O. */
int tide_io_sim_pending_ns_op(tide_io_sim *sim, uint64_t index, char *out, size_t cap);

/*
 * A crash image chosen over both kinds of pending operation: exactly the
 * writes and truncates whose bit is set in `subset_mask` survive (whole,
 * in order), and exactly the namespace operations whose bit is set in
 * `ns_mask` (in order: a kept unlink whose earlier neighbour is dropped
 * leaves that neighbour's file in place). Afterwards as tide_io_sim_crash.
 * Returns 0, TIDE_EINVAL (more than 64 of either kind, a bit beyond the
 * count) or TIDE_ENOMEM with the sim unchanged.
 */
int tide_io_sim_crash_state_ns(tide_io_sim *sim, uint64_t subset_mask, uint64_t ns_mask);

/* ---- self-check ---- */

/*
 * Assert every invariant of io_sim.c's essay, the bytes of invariant 1
 * included, with TIDE_ASSERT: a broken one aborts the process with a line
 * on stderr naming the expression ("tide: invariant broken: ..."). Every
 * call of the tide_io and of this header already asserts them at its end,
 * without the bytes unless the sim is paranoid, and not at all when it is
 * set unchecked. Cost: O(bytes of the sim).
 * No I/O.
 */
void tide_io_sim_check(tide_io_sim *sim);

/* With `on`, every call compares bytes too (what tide_io_sim_check does):
 * O(bytes of the sim) a call instead of O(files + pending operations). A
 * clone inherits the setting; a new sim starts without. No I/O. */
void tide_io_sim_set_paranoid(tide_io_sim *sim, int on);

/* Without `on`, the calls no longer assert the invariants at their end:
 * only tide_io_sim_check does (so a broken invariant is found at the next
 * check, not at the call that broke it). For a sim that runs many calls
 * and is checked at known points (the fuzz target checks at the end of
 * each input). A clone inherits the setting; a new sim starts checked. No
 * I/O. */
void tide_io_sim_set_checked(tide_io_sim *sim, int on);

/* Ways to break the sim on purpose, each against one invariant of
 * io_sim.c, for a test that the check fires (in a child process: the next
 * check aborts). */
typedef enum tide_io_sim_breakage {
    TIDE_IO_SIM_BREAK_PENDING_COUNT = 1,  /* 1: the file's count of pending ops, one too many */
    TIDE_IO_SIM_BREAK_BYTE,               /* 1: a byte of the file's current image flipped,
                                             which only a check of the bytes sees */
    TIDE_IO_SIM_BREAK_NAME,               /* 2: the file's current name dropped, no unlink pending */
    TIDE_IO_SIM_BREAK_ORPHAN,             /* 3: an inode that nothing reaches */
    TIDE_IO_SIM_BREAK_LOCKS,              /* 4: the file's count of exclusive locks, two */
    TIDE_IO_SIM_BREAK_SIZE,               /* 5: the file's current size past its allocation */
    TIDE_IO_SIM_BREAK_UNLOCKED,           /* 6: run the check without holding the mutex */
    TIDE_IO_SIM_BREAK_DIR,                /* 2: the file's directory put in the durable set
                                             of directories made only, no rmdir pending */
} tide_io_sim_breakage;

/*
 * Break invariant `what` of the file the current namespace has at `path`
 * (ignored for ORPHAN and UNLOCKED), without checking; UNLOCKED checks at
 * once, and so aborts. Test-only: the sim is unusable afterwards (any call,
 * destroy included, may abort or misbehave). Returns 0, TIDE_ENOENT (no
 * such file) or TIDE_EINVAL (an unknown `what`, or BYTE on an empty file).
 */
int tide_io_sim_break(tide_io_sim *sim, const char *path, tide_io_sim_breakage what);

#endif
