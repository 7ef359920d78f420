/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens_impl.h: what the files of the generations handle share (gens.c,
 * gens_open.c, gens_rotate.c, gens_inspect.c). Not for other parts.
 *
 * The handle: the manifest as last written and the open stores, newest
 * first, in `gens` (slot i holds manifest generation i). Both change only
 * at a rotation's switch, under the write lock of `lock`; every insert,
 * fetch, touch, keep, sync and info holds the read lock for its whole
 * call (sync: see sync_lock), so a store a switch drops is closed after
 * the switch when no call can still hold it. Reads, write-once checks and
 * copies forward look only at the first `nread` slots: a dropping
 * rotation hides the generations it drops before it syncs the kept ones
 * (gens_rotate.c, step c).
 */
#ifndef TIDE_GEN_GENS_IMPL_H
#define TIDE_GEN_GENS_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "gen/gens.h"

#define TI_GENS_PATH_CAP 4096

typedef struct ti_gens_slot {
    uint64_t    id;
    tide_store *s;
} ti_gens_slot;

struct tide_gens {
    char            dir[TI_GENS_PATH_CAP];
    tide_io        *io;
    tide_gens_opts  opts;
    int             enabled;
    unsigned        key_size;
    tide_store     *plain;             /* plain mode: the one store */

    int             read_only;         /* opts.store.read_only: no write of any kind */
    pthread_rwlock_t lock;             /* the list: m and gens */
    /* Held shared by a sync, and by tide_gens_key_map_resident, for the
     * whole call: they sync or scan outside `lock`, so a long commit or a
     * long pagemap scan never holds a switch, and with it every fetch,
     * back. Taken exclusive for a moment after a switch, before dropped
     * stores close, so no such call still holds one of them. */
    pthread_rwlock_t sync_lock;
    pthread_mutex_t  rotate_mu;        /* serialises rotations */
    tide_gen_manifest m;               /* as on disk (unless disk_unknown); count == ngens */
    ti_gens_slot      gens[TIDE_GEN_MAX];
    /* The slots reads look in: gens[0..nread). m.count except between a
     * dropping rotation's steps c and f, when the dropped ones (always the
     * oldest) are hidden, and after a double fault (disk_unknown), when
     * they stay hidden until a rotation drops them (gens_rotate.c,
     * invariant 8). Under `lock`. */
    unsigned          nread;
    /* 1 after a failed manifest write whose undo failed too: the disk may
     * name the newest + 1 or not, so no gen directory may be removed until
     * g->m is written again (gens_rotate.c, invariants 6, 8). */
    int               disk_unknown;    /* written under rotate_mu, read atomically */
    /* tide_gens_read_epoch: bumped (seq_cst) each time the readable list
     * grows, i.e. a failed rotation shows its hidden generations again, so
     * a caller that remembered a miss can tell it may be stale. */
    uint64_t          read_epoch;
    /* tide_gens_interrupt: set once, never cleared (atomic); intr_cv wakes
     * a drop's back-off pause. */
    int               interrupted;
    pthread_mutex_t   intr_mu;
    pthread_cond_t    intr_cv;

    uint64_t newest_id, oldest_id;     /* atomics, written at the switch */
    uint64_t newest_objects;           /* atomic: records in the newest */
    uint64_t copied_forward, copied_forward_bytes, copy_failures; /* atomics */
    /* Apart from the counters above: a fetch that hits the newest writes
     * none of these, so its path shares no written line but the lock. */
    uint64_t older_lookups __attribute__((aligned(64)));
    uint64_t removed_at_open;

    /* The counters of stores this handle closed (dropped at a rotation),
     * so tide_gens_store_info's sums never go down; pools and buffers
     * zero. Under retired_mu. */
    pthread_mutex_t  retired_mu;
    tide_store_info  retired;
};

/* DIR/name into out; TIDE_EINVAL when it does not fit. */
int ti_gens_path(char *out, const char *dir, const char *name);

/* DIR/gen-<id> into out. */
int ti_gens_gen_path(char *out, const char *dir, uint64_t id);

/* Remove directory `path` (a generation) of DIR `parent`: nudb.dat cut
 * by `chunk` bytes per step (0: no cut) with `pause_ms` between steps, every
 * file in it unlinked, the directory removed, `parent` synced. With chunk >
 * 0 and another Tide handle holding the files (a reader's lock), or locks
 * that cannot be taken, nothing is cut: the files are only unlinked, and
 * their bytes go to *held_bytes instead of *bytes; otherwise the cut and
 * the unlinks run under exclusive locks on nudb.key and tide.live, which
 * keep readers out until every file is unlinked. Adds the file bytes
 * removed to *bytes and the cut steps to *steps (any of the three may be
 * NULL). Returns 0 or the first io error (what was removed stays removed).
 * `g` (may be NULL) gets the "delete-step" and "delete-unlink-only"
 * traces. */
int ti_gens_remove_dir(tide_gens *g, tide_io *io, const char *parent, const char *path,
                       uint64_t chunk, unsigned pause_ms, uint64_t *bytes, unsigned *steps,
                       uint64_t *held_bytes);

/* Add the counters of open store `s` to g->retired (before it is closed). */
void ti_gens_retire(tide_gens *g, tide_store *s);

/* A growing list of directory entry names (for removal after a list). */
typedef struct ti_gens_names {
    char (*names)[256];
    unsigned n, cap;
} ti_gens_names;

/* Append `name`: 0, TIDE_EINVAL (longer than 255), TIDE_ENOMEM. */
int ti_gens_names_add(ti_gens_names *l, const char *name);

/* 1 when `name` is exactly a generation directory's name (what
 * tide_gen_dir_name writes for some id), the id in *id; else 0. */
int ti_gens_parse_name(const char *name, uint64_t *id);

/* Assert gens.c's invariant 1 (the caller holds `lock`, or is the only
 * thread: open, the rotation between its steps). */
void ti_gens_check(const tide_gens *g);

/* 1 once tide_gens_interrupt was called (g may be NULL: 0). */
int ti_gens_interrupted(const tide_gens *g);

/* Wait `ms` milliseconds or until tide_gens_interrupt, whichever is first
 * (g NULL: a plain sleep). Returns ti_gens_interrupted(g). */
int ti_gens_pause(tide_gens *g, unsigned ms);

/* Call the trace hook, if any. */
void ti_gens_trace(const tide_gens *g, const char *step);

/* Sum of the three file sizes of store directory `path` (missing files
 * count 0) into the three outputs (any may be NULL). */
void ti_gens_file_sizes(tide_io *io, const char *path, uint64_t *dat, uint64_t *key,
                        uint64_t *log);

#endif
