/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keymap.h: nudb.key mapped read-only, for fetches and the insert's
 * duplicate check to search a bucket where it lies instead of copying it
 * (keymap.c's essay says why the map never faults). The same machinery
 * maps nudb.dat for the records lookups read (lookup.c "Reading nudb.dat"):
 * there `known` is dat_stable, the size no path cuts the data file below
 * while the store is open, and the bytes below it never change, so the
 * views need no lock; what is said of key_lock below is the key map's.
 *
 * Contract:
 *   - A keymap is part of a tide_store: ti_keymap_init at alloc,
 *     ti_keymap_open once the key file's size is known (load_files),
 *     ti_keymap_close at free. Until open succeeds, and for good when it
 *     fails (the simulated file system, no address space, mmap refused,
 *     opts.pread), ti_keymap_view returns NULL and the caller reads with
 *     pread: the map is a speed-up, never a requirement.
 *   - ti_keymap_view is called holding the store's key_lock (shared or
 *     exclusive) with `known`, the key file's size under that lock
 *     ((buckets + 1) x block_size); it only ever touches bytes below
 *     `known`. The pointer it returns is valid while the caller holds
 *     key_lock (the bytes may change once it is released).
 *   - Nothing is ever written through the map (PROT_READ).
 *
 * Thread safety: view from any number of threads at once (growth takes a
 * mutex of its own; bytes already mapped are read without one, and so is
 * the flag that says the map cannot grow any more). Cost: a view is an
 * atomic load and a compare, plus one mmap call the first time a reader
 * finds the file grown (once per commit that added buckets); past a map
 * that can grow no more (the reservation reached, an mmap failed), one
 * more atomic load and NULL, no lock.
 */
#ifndef TIDE_STORE_KEYMAP_H
#define TIDE_STORE_KEYMAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

/* Address space reserved per store: this, or 4 x the key file when that is
 * larger. PROT_NONE: it costs page-table room, no memory. */
#define TI_KEYMAP_RESERVE_MIN (64ull << 30)

typedef struct ti_keymap {
    tide_io    *io;        /* NULL: not mapped (pread) */
    tide_file  *file;
    tide_io_map m;         /* m.mapped changes under grow_mu only */
    uint64_t    len;       /* bytes readable through the map (atomic) */
    int         full;      /* the map grows no more (atomic; keymap.c invariant 7) */
    uint64_t    random_above; /* past this many bytes mapped, pages are read
                              alone (m.random_access; keymap.c invariant 8) */
    uint64_t    grow_locks;/* times a view took grow_mu (atomic; for the tests) */
    pthread_mutex_t grow_mu;
} ti_keymap;

/* A keymap that maps nothing yet. */
void ti_keymap_init(ti_keymap *k);

/* Map the first `len` bytes of `f` (the key file, `len` its size). Once
 * the map shows more than `random_above` bytes (0: from the start;
 * UINT64_MAX: never), a page not in memory is read alone when touched,
 * without its neighbours (tide_io_map.random_access), and stays so. 0, or
 * the io's error (tide_last_error says why): then k maps nothing and every
 * view is NULL. */
int ti_keymap_open(ti_keymap *k, tide_io *io, tide_file *f, uint64_t len, uint64_t random_above);

/* 1 when the map reads a page alone (random_above passed), 0 while it
 * reads around. Any thread; a relaxed load. */
int ti_keymap_reads_alone(const ti_keymap *k);

/* Bytes [off, off + n) of the key file, or NULL: read them with pread.
 * The caller holds key_lock and off + n <= known (asserted). */
const uint8_t *ti_keymap_view(ti_keymap *k, uint64_t off, size_t n, uint64_t known);

/* Bytes mapped (*mapped: the file's bytes the map shows, at most `known`,
 * the key file's size now, so a rollback's truncate shows; 0 when none)
 * and, of those, the pages this process has mapped in (*resident: present
 * in its page tables, its RssFile share; not the file's page-cache
 * residency). Either may be NULL. 0, or TIDE_EIO (pagemap unreadable).
 * Cost: one 8 KiB read of /proc/self/pagemap per 4 MiB mapped. */
int ti_keymap_stats(ti_keymap *k, uint64_t known, uint64_t *mapped, uint64_t *resident);

/* Release the map (any thread may have viewed it; none may now). */
void ti_keymap_close(ti_keymap *k);

#endif
