/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_impl.h: what the files of the simulated file system share.
 *
 * io_sim.c's essay states the model and its six invariants; this header
 * holds the structures they speak of and the ti_sim_* functions one file of
 * the sim calls in another. The sim is seven files, one job each:
 *
 *   io_sim.c        the handle: life, clone, locking, the test helpers
 *                   (mkdir, put, get, holders) and the counters
 *   io_sim_table.c  the tide_io table (open ... holders) and the one
 *                   prologue every counted call goes through
 *   io_sim_fs.c     the file system in memory: images, paths, namespaces,
 *                   inodes, pending operations, gc
 *   io_sim_fault.c  counted calls, fail_at's injected failures, the disk's
 *                   capacity
 *   io_sim_crash.c  crash images: drawn, chosen, and the description of
 *                   what is pending
 *   io_sim_check.c  ti_sim_check: the invariants, asserted
 *   io_sim_map.c    maps: a copy of a file's current image that follows it
 *
 * Locking: every function here but ti_sim_lock expects the caller to hold
 * sim->mu (taken with ti_sim_lock, released with ti_sim_unlock, which runs
 * ti_sim_check first), and none calls out of the sim. "No effect on
 * failure" below means the sim is as it was when TIDE_ENOMEM comes back.
 * Nothing here is for use outside src/io.
 */
#ifndef TIDE_IO_SIM_IMPL_H
#define TIDE_IO_SIM_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io_sim.h"

#define SIM_PATH_MAX 1024
#define SIM_FILE_MAX ((uint64_t)1 << 30)   /* per file: a test never needs more */
#define SECTOR 512u

/* Bytes [0, size) of a file; [size, cap) are allocated and mean nothing
 * (invariant 5). cap == 0 exactly when b == NULL. */
typedef struct image {
    uint8_t *b;
    uint64_t size;
    size_t cap;
} image;

typedef struct inode inode;
typedef struct sim_map sim_map;   /* io_sim_map.c */
struct inode {
    inode *next;
    sim_map *maps;                /* the maps following this inode's current image */
    image dur, cur;
    image stage_dur, stage_cur;   /* crash and check scratch: empty between calls */
    uint64_t npending;            /* ops in sim->ops on this inode */
    int handles;                  /* open handles of the present generation */
    int shared_locks, excl_locks;
    int mark;                     /* gc and clone scratch */
    inode *copy;                  /* clone scratch */
    uint64_t seen_ops, seen_refs, seen_size;   /* ti_sim_check scratch */
    char special[24];             /* "" a regular file, else what it is ("a FIFO") */
    uint64_t writes, bytes_written, reads, bytes_read, syncs;
};

/* A pending write (data, len > 0) or truncate (off is the new size; data
 * NULL, len 0). */
typedef struct op {
    inode *ino;
    int is_truncate;
    uint64_t off;                 /* write: offset; truncate: new size */
    size_t len;
    uint8_t *data;
} op;

typedef struct entry {
    char *path;
    inode *ino;
} entry;

/* A namespace: each path at most once, in no order. */
typedef struct ns {
    entry *e;
    size_t n, cap;
} ns;

typedef struct effect {
    char *path;                   /* NULL once retired (by a sync_dir, or a put_file) */
    inode *ino;                   /* NULL: the path names nothing */
} effect;

/* One create (p -> I), unlink (p -> none) or rename (a -> none, b -> I);
 * at least one effect's path is not NULL. A directory operation (dir
 * SIM_MKDIR or SIM_RMDIR) has one effect, eff[0], with the directory's
 * path and ino NULL, and changes the directory sets, not the namespaces. */
enum { SIM_FILE_OP = 0, SIM_MKDIR = 1, SIM_RMDIR = 2 };
typedef struct nsop {
    effect eff[2];
    int dir;
} nsop;

/* A set of directory paths (normalised, each at most once, in no order). */
typedef struct dirset {
    char **v;
    size_t n, cap;
} dirset;

struct sim_holder { char path[SIM_PATH_MAX]; int pid; char comm[32]; };

struct tide_io_sim {
    tide_io io;                   /* first: a tide_io * is a tide_io_sim * */
    pthread_mutex_t mu;
    pthread_t owner;              /* the thread in a call, while `locked` */
    int locked;
    int paranoid;                 /* ti_sim_check compares bytes too */
    int unchecked;                /* calls skip ti_sim_check (tide_io_sim_set_checked) */
    inode *inodes;
    ns cur_ns, dur_ns;
    dirset dirs, dur_dirs;        /* the directories made: current, durable */
    op *ops;
    size_t nops, ops_cap;
    nsop *nsops;
    size_t nnsops, nsops_cap;
    uint64_t calls, faults, gen, capacity;
    tide_io_sim_fault fault;
    uint64_t fault_at;            /* absolute call number */
    int fault_persistent;
    struct sim_holder *holders;
    size_t nholders;
};

struct tide_file {
    tide_io_sim *sim;
    inode *ino;
    uint64_t gen;
    int writable;
    int lock;                     /* 0 none, 1 shared, 2 exclusive */
    char path[];
};

/* ---- io_sim.c: the handle ---- */

/* Take sim->mu and note the calling thread as its owner (invariant 6). */
void ti_sim_lock(tide_io_sim *sim);
/* ti_sim_check, then release sim->mu: every call ends here, so the
 * invariants are asserted after every operation. */
void ti_sim_unlock(tide_io_sim *sim);

/* ---- io_sim_map.c: maps ---- */

/* tide_io.map, unmap, map_resident (io.h), on the sim (io_sim_map.c's
 * invariants). map and map_resident take sim->mu themselves. */
int ti_sim_map(tide_file *f, struct tide_io_map *m, uint64_t len);
void ti_sim_unmap(struct tide_io_map *m);
int ti_sim_map_resident(const struct tide_io_map *m, uint64_t *bytes);
/* Copy ino's current image into its maps: bytes [lo, hi) changed, and the
 * size may have. */
void ti_sim_maps_follow(inode *ino, uint64_t lo, uint64_t hi);
/* Stop ino's maps following it (a crash, a gc, the destroy). */
void ti_sim_maps_detach(inode *ino);

/* ---- io_sim_table.c ---- */

/* The tide_io functions a new sim starts with. */
extern const tide_io ti_sim_io_template;

/* ---- io_sim_fs.c: the file system ---- */

/* Make room in a growable array for `need` elements of `elem` bytes. */
int ti_sim_grow(void *arrp, size_t *cap, size_t need, size_t elem);

/* Write `len` bytes at `off`, zero-filling any gap. No effect on failure. */
int ti_sim_img_write(image *m, uint64_t off, const void *p, size_t len);
/* Cut, or zero-extend, to `size`. No effect on failure. */
int ti_sim_img_truncate(image *m, uint64_t size);
/* dst := src, reusing dst's buffer. No effect on failure. */
int ti_sim_img_assign(image *dst, const image *src);
void ti_sim_img_free(image *m);

/* Normalise `in` into `out` (SIM_PATH_MAX bytes): repeated '/' collapsed,
 * a trailing one dropped. TIDE_ENOENT (empty) or TIDE_EIO (too long),
 * naming `what` (the call). */
int ti_sim_norm(const char *in, char *out, const char *what);
/* Length of the directory part: before the last '/', 1 for "/name", 0 for
 * a bare name. */
size_t ti_sim_dir_len(const char *path);

inode *ti_sim_ns_get(const ns *s, const char *path);
/* `path` names `ino` (NULL: nothing). No effect on failure; never fails
 * when it removes or replaces. */
int ti_sim_ns_set(ns *s, const char *path, inode *ino);
void ti_sim_ns_free(ns *s);
/* dst := a copy of src (dst empty); with only_marked, of the entries whose
 * inode is marked, pointing at its copy. No effect on failure. */
int ti_sim_ns_copy(ns *dst, const ns *src, int only_marked);

/* Append a namespace operation of one or two effects. No effect on failure. */
int ti_sim_nsop_add(tide_io_sim *sim, const char *p0, inode *i0, const char *p1, inode *i1);
void ti_sim_nsop_free(nsop *o);
/* Retire every pending effect whose path is `dir`'s child (by_dir) or is
 * `path` itself (!by_dir), applying it to the durable namespace first when
 * `apply`. On TIDE_ENOMEM the effects applied so far are retired and the
 * others stay pending: invariant 2 holds either way. */
int ti_sim_nsops_retire(tide_io_sim *sim, const char *path, int by_dir, int apply);

/* Append a pending mkdir or rmdir (SIM_MKDIR, SIM_RMDIR) of `path`. No
 * effect on failure. */
int ti_sim_dirop_add(tide_io_sim *sim, const char *path, int kind);
/* Retire the pending directory operations on `path` itself, unapplied
 * (the test helper tide_io_sim_mkdir makes it durable by hand). */
void ti_sim_dirops_forget(tide_io_sim *sim, const char *path);

/* Is `path` in the set? Put it in (present) or take it out: no effect on
 * failure, never fails when it takes out. */
int ti_sim_dirset_has(const dirset *s, const char *path);
int ti_sim_dirset_put(dirset *s, const char *path, int present);
void ti_sim_dirset_free(dirset *s);
/* dst := a copy of src (dst empty). No effect on failure. */
int ti_sim_dirset_copy(dirset *dst, const dirset *src);

/* Does `path` lie under directory `dir` (at any depth; dir not "/")? */
int ti_sim_under(const char *path, const char *dir);

/* Is `path` a directory (made by mkdir, a parent of one, or above a
 * current file)? Does the directory of `path` exist? */
int ti_sim_is_dir(const tide_io_sim *sim, const char *path);
int ti_sim_parent_exists(const tide_io_sim *sim, const char *path);

/* A new empty inode at the head of sim->inodes; NULL when out of memory. */
inode *ti_sim_inode_new(tide_io_sim *sim);
void ti_sim_inode_free(inode *ino);

/* Record a pending write (len > 0; 0 is a no-op) or truncate and apply it
 * to the current image. No effect on failure. */
int ti_sim_pend_write(tide_io_sim *sim, inode *ino, uint64_t off, const void *p, size_t len);
int ti_sim_pend_truncate(tide_io_sim *sim, inode *ino, uint64_t size);
/* Forget the pending ops on `ino` (npending := 0), or every one. */
void ti_sim_ops_drop(tide_io_sim *sim, inode *ino);
void ti_sim_ops_clear(tide_io_sim *sim);

/* Mark the inodes a name, a pending effect or (with_handles) a handle
 * reaches. */
void ti_sim_mark_live(tide_io_sim *sim, int with_handles);
/* Free every inode nothing reaches, with its pending ops (invariant 3). */
void ti_sim_gc(tide_io_sim *sim);

/* ---- io_sim_fault.c: counted calls, faults, capacity ---- */

/* Count a call; return the fault it must suffer (TIDE_IO_SIM_NONE: none). */
tide_io_sim_fault ti_sim_enter(tide_io_sim *sim);
/* The code a fault of `kind` gives a call that can (or cannot) fail with
 * ENOSPC. */
int ti_sim_fault_code(tide_io_sim_fault kind, int can_enospc);
/* Record "sim: PATH: WHAT[ at offset OFF]: injected KIND (call C)" and
 * return `code`; off UINT64_MAX: no offset. */
int ti_sim_injected(tide_io_sim *sim, tide_io_sim_fault kind, int code, const char *path,
                    const char *what, uint64_t off);
/* A write or truncate of `ino` that starts at `off` and leaves the file
 * `new_size` bytes: TIDE_EIO past SIM_FILE_MAX, TIDE_ENOSPC past the
 * capacity, else 0. */
int ti_sim_check_room(tide_io_sim *sim, const char *path, inode *ino, const char *what,
                      uint64_t off, uint64_t new_size);
/* The bytes of `len` at `off` a SHORT_WRITE applies: up to the last sector
 * boundary at or below the write's middle (0 when that is before off). */
size_t ti_sim_short_part(uint64_t off, size_t len);
/* Sum of the current sizes of live files: named now, or open. */
uint64_t ti_sim_usage(const tide_io_sim *sim);
/* The io's free_bytes: capacity less use, UINT64_MAX without a capacity. */
int ti_sim_free_bytes(tide_io *io, const char *dir, uint64_t *out);

/* ---- io_sim_check.c ---- */

/* Assert invariants 1 to 6 (io_sim.c) with TIDE_ASSERT, comparing image
 * bytes (the O(bytes) half of invariant 1) when `bytes`. Cost without
 * bytes: O(inodes + ops + (names + effects)^2). */
void ti_sim_check(tide_io_sim *sim, int bytes);

#endif
