/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io.h: the file interface. Every file operation of the store goes through
 * a tide_io, so tests can swap the POSIX file system for one that fails the
 * n-th call or loses unsynced writes in a simulated crash.
 *
 * Contract shared by every implementation:
 *   - Calls return 0 or a negative TIDE_E* code. ENOSPC (and EDQUOT) map to
 *     TIDE_ENOSPC, ENOENT to TIDE_ENOENT, anything else to TIDE_EIO; the
 *     implementation records "path: operation at offset N: strerror" in
 *     tide_last_error().
 *   - open opens regular files only, and never blocks: a FIFO, directory,
 *     device or socket at `path` is TIDE_ENOTSTORE ("path: is a FIFO, not a
 *     regular file"), found before anything is opened or created.
 *   - read_at reads exactly `len` bytes or fails; reading past the end of the
 *     file is TIDE_ECORRUPT ("short read"), since the store only reads what
 *     its headers say exists. write_at writes all `len` bytes or fails.
 *   - Nothing written is durable until sync() returns 0 for that file (and,
 *     for creates, renames, unlinks, mkdirs and rmdirs, sync_dir() for the
 *     directory the name is in).
 *   - A tide_file may be used by several threads at once (read_at and
 *     write_at are positional); open/close are not concurrent with use.
 */
#ifndef TIDE_IO_H
#define TIDE_IO_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_file tide_file;   /* defined by each implementation */

enum {
    TIDE_IO_READ   = 0,       /* open an existing file read-only */
    TIDE_IO_WRITE  = 1 << 0,  /* open for reading and writing */
    TIDE_IO_CREATE = 1 << 1,  /* create when missing (implies WRITE) */
    TIDE_IO_EXCL   = 1 << 2,  /* with CREATE: fail with TIDE_EEXIST if present */
};

/* Another process that has a file open (tide_io.holders). */
typedef struct tide_io_holder {
    int      pid;
    char     comm[32];      /* its /proc/PID/comm, or "?" */
    unsigned path;          /* which of the paths asked about */
} tide_io_holder;

/* A read-only view of a file (tide_io.map). Zero it before the first
 * map; read base, reserved and mapped; the rest is the implementation's. */
typedef struct tide_io_map {
    const uint8_t *base;   /* NULL until mapped; then fixed until unmap */
    uint64_t reserved;     /* bytes of address space at base */
    uint64_t mapped;       /* [0, mapped) show the file: a page multiple */
    int random_access;     /* the reads through it are scattered, so a page
                              not in memory is read alone (no read-around;
                              MADV_RANDOM). May be set between two map
                              calls: the next one advises every byte mapped
                              so far too. */
    uint64_t advised;      /* [0, advised) advised random: the implementation's */
} tide_io_map;

typedef struct tide_io tide_io;
struct tide_io {
    int  (*open)(tide_io *io, const char *path, int flags, tide_file **out);
    void (*close)(tide_file *f);
    int  (*read_at)(tide_file *f, void *buf, size_t len, uint64_t off);
    int  (*write_at)(tide_file *f, const void *buf, size_t len, uint64_t off);
    int  (*sync)(tide_file *f);
    int  (*truncate)(tide_file *f, uint64_t size);
    int  (*size)(tide_file *f, uint64_t *out);
    /* Take an advisory lock for the life of the handle: exclusive (a
     * writer) or shared (read-only handles). TIDE_EBUSY when another handle
     * holds a conflicting one; never blocks. */
    int  (*lock)(tide_file *f, int exclusive);
    int  (*unlink)(tide_io *io, const char *path);
    int  (*rename)(tide_io *io, const char *from, const char *to);
    int  (*sync_dir)(tide_io *io, const char *dir);
    /* 0 when `path` exists, TIDE_ENOENT when not; *is_dir set when non-NULL. */
    int  (*stat)(tide_io *io, const char *path, int *is_dir);
    /* Bytes an unprivileged writer may still add on the file system of
     * `dir` (statvfs's f_bavail x f_frsize; the sim: its capacity less its
     * use, UINT64_MAX without one). May be NULL: unknown. One system call. */
    int  (*free_bytes)(tide_io *io, const char *dir, uint64_t *out);
    /* Make one directory (mode 0755): its parent must exist (TIDE_ENOENT
     * when not); TIDE_EEXIST when anything has that name; TIDE_ENOSPC when
     * the disk is full. Durable once sync_dir() of the parent returns 0.
     * Cost: one system call. */
    int  (*mkdir)(tide_io *io, const char *path);
    /* Remove an empty directory: TIDE_ENOTEMPTY when it has entries,
     * TIDE_ENOENT when there is none, TIDE_EIO when `path` is a file.
     * Durable once sync_dir() of the parent returns 0. Cost: one system
     * call. */
    int  (*rmdir)(tide_io *io, const char *path);
    /* Call fn(arg, name, is_dir) for each entry of directory `dir` but "."
     * and "..", in strcmp order of the names, as the directory is when the
     * call starts (the names are collected first, so fn may create or
     * remove entries); stop at the first non-zero value fn returns and
     * return it. Otherwise 0, or TIDE_ENOENT (no such directory), TIDE_EIO
     * (not a directory, or a read failed), TIDE_ENOMEM. `name` is valid
     * during the callback only. No lock is held while fn runs. Cost: one
     * pass over the directory and memory for all its names (O(entries x
     * name length)), then a sort: meant for directories of a few thousand
     * entries at most, like a node's data directory. */
    int  (*list)(tide_io *io, const char *dir,
                 int (*fn)(void *arg, const char *name, int is_dir), void *arg);
    /* The other processes (not this one) that have any of paths[0..n) open,
     * whatever name they opened it by (the same device and inode): up to
     * `cap` of them into `out`, their number in *count (which may exceed
     * cap). A missing path is skipped. Never blocks; not counted as a call
     * of the file system. NULL (an implementation that cannot tell): none.
     * Processes it may not look into are not seen (POSIX: /proc/PID/fd of
     * another user's process, unless root). */
    int  (*holders)(tide_io *io, const char *const *paths, unsigned n,
                    tide_io_holder *out, size_t cap, size_t *count);
    /* For readers in other processes: map the file's first `len`
     * bytes MAP_SHARED, read-write when `writable` (the file opened
     * TIDE_IO_WRITE, at least `len` bytes long), read-only otherwise, into
     * *out; the map outlives the tide_file. Only tide.live (src/store/
     * live.c) is mapped so: a page shared between processes, never synced.
     * NULL (the simulated file system: no other process can share it):
     * there is no live file. A writable map's blocks are allocated first,
     * so that no store through it can fault for want of space.
     * Errors: TIDE_ENOSPC (the blocks cannot be allocated), TIDE_EIO (mmap
     * failed). Cost: one fallocate and one mmap; not counted as a read or
     * write. */
    int  (*share)(tide_file *f, size_t len, int writable, void **out);
    /* Release a map made by share (p may be NULL). */
    void (*unshare)(void *p, size_t len);
    /* Show the file read-only in memory (MAP_SHARED, PROT_READ: nothing is
     * ever written through it). The first call on a zeroed *m reserves
     * m->reserved bytes of address space (the caller sets it; the
     * implementation may lower it to what it could reserve) and maps the
     * file's first `len` bytes at m->base; later calls with a larger `len`
     * map the rest in place over the reservation, so m->base never moves
     * and a pointer into the map stays valid until unmap. m->mapped becomes
     * `len` rounded up to a page (the bytes of the last page past the
     * file's end read as zeros). `len` must be at most m->reserved and the
     * file at least `len` bytes long: a page past the end of the file
     * faults with SIGBUS when touched, so a caller maps and touches only
     * bytes it knows exist, and must not touch bytes a truncate has cut
     * off. TIDE_EINVAL ("mapping is not supported"; NULL means the same)
     * when the implementation cannot map (the simulated file system can:
     * a copy of the file that follows its writes and truncates, its pages
     * past the end unreadable, io_sim_map.c); TIDE_ENOMEM when the address
     * space could not be reserved; TIDE_EIO when mmap failed (tide_last_error says
     * why). Not thread-safe on one map: the caller serialises the calls
     * (readers of the bytes already mapped need no lock). Cost: one mmap
     * call (two on the first), and with random_access one madvise of the
     * bytes not yet advised. Not counted as a read. */
    int  (*map)(tide_file *f, struct tide_io_map *m, uint64_t len);
    /* Release a map made by `map` (a zeroed one is left alone); *m is
     * zeroed. The file may be closed before or after. */
    void (*unmap)(struct tide_io_map *m);
    /* Bytes of the map's [0, mapped) that this process has mapped in now
     * (pages present in its page tables, /proc/self/pagemap): the map's
     * share of the process's RssFile, file-backed page cache the kernel
     * may reclaim, never anonymous memory. Not the file's residency in the
     * page cache (mincore), which counts pages any write or read of the
     * file brought in. Cost: one 8 KiB pread of pagemap per 4 MiB mapped.
     * 0 or TIDE_EIO (pagemap cannot be read). */
    int  (*map_resident)(const struct tide_io_map *m, uint64_t *bytes);
    /* Whether `path` is a symbolic link: 1, with its target resolved to an
     * absolute path (realpath) in `target` (cap bytes) and *dangling 0; or
     * with the target as written and *dangling 1 when it points at nothing;
     * 0 when `path` is no link (or nothing), or a link that cannot be
     * resolved for another reason (a loop, a directory this user may not
     * search: opening it fails with that error). NULL (the simulated file
     * system): there are no links. Not counted. Cost: lstat, readlink and
     * realpath. */
    int  (*link)(tide_io *io, const char *path, char *target, size_t cap, int *dangling);
    /* Counters every implementation keeps (atomically). Calls on paths
     * (unlink, rename, stat, mkdir, rmdir, list) count in none of them;
     * sync_dir counts as a sync. */
    uint64_t bytes_written, bytes_read, syncs, writes, reads;
};

/* The process-wide POSIX implementation (pread, pwrite, fdatasync, flock).
 * Thread-safe. */
tide_io *tide_io_posix(void);

/* A file type that is not a regular file, in words ("a FIFO", "a
 * directory", ...), from a stat's st_mode; for the refusals that name it.
 * Static text; no I/O. */
const char *tide_io_file_kind(unsigned mode);

#endif
