/*
 * gens_impl.h: what the files of the generations handle share (gens.c,
 * gens_open.c, gens_rotate.c, gens_inspect.c). Not for other parts.
 *
 * The handle: the manifest as last written and the open stores, newest
 * first, in `gens` (slot i holds manifest generation i). Both change only
 * at a rotation's switch, under the write lock of `lock`; every insert,
 * fetch, touch, keep, sync and info holds the read lock for its whole
 * call, so a store a switch drops is closed after the switch when no
 * call can still hold it.
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

/* The counters of stores this handle closed (dropped at a rotation), so
 * tide_gens_store_info's sums never go down. Under retired_mu. */
typedef struct ti_gens_retired {
    uint64_t inserts, fetches, commits, commit_failures, bytes_written, syncs;
    uint64_t hist[TIDE_STORE_HIST_BUCKETS + 1], hist_sum_ns, hist_count;
} ti_gens_retired;

struct tide_gens {
    char            dir[TI_GENS_PATH_CAP];
    tide_io        *io;
    tide_gens_opts  opts;
    int             enabled;
    unsigned        key_size;
    tide_store     *plain;             /* plain mode: the one store */

    pthread_rwlock_t lock;             /* the list: m and gens */
    pthread_mutex_t  rotate_mu;        /* serialises rotations */
    tide_gen_manifest m;               /* as on disk; count == ngens */
    ti_gens_slot      gens[TIDE_GEN_MAX];

    uint64_t newest_id, oldest_id;     /* atomics, written at the switch */
    uint64_t newest_objects;           /* atomic: records in the newest */
    uint64_t copied_forward, copied_forward_bytes, copy_failures; /* atomics */
    /* Apart from the counters above: a fetch that hits the newest writes
     * none of these, so its path shares no written line but the lock. */
    uint64_t older_lookups __attribute__((aligned(64)));
    uint64_t removed_at_open;

    pthread_mutex_t  retired_mu;
    ti_gens_retired  retired;
};

/* DIR/name into out; TIDE_EINVAL when it does not fit. */
int ti_gens_path(char *out, const char *dir, const char *name);

/* DIR/gen-<id> into out. */
int ti_gens_gen_path(char *out, const char *dir, uint64_t id);

/* Remove directory `path` (a generation) of DIR `parent`: nudb.dat cut
 * by `chunk` bytes per step (0: no cut) with `pause_ms` between steps, every
 * file in it unlinked, the directory removed, `parent` synced. Adds the
 * file bytes removed to *bytes and the cut steps to *steps (either may be
 * NULL). Returns 0 or the first io error (what was removed stays removed).
 * `g` (may be NULL) gets the "delete-step" traces. */
int ti_gens_remove_dir(tide_gens *g, tide_io *io, const char *parent, const char *path,
                       uint64_t chunk, unsigned pause_ms, uint64_t *bytes, unsigned *steps);

/* Add the counters of open store `s` to g->retired (before it is closed). */
void ti_gens_retire(tide_gens *g, tide_store *s);

/* Call the trace hook, if any. */
void ti_gens_trace(const tide_gens *g, const char *step);

/* Sum of the three file sizes of store directory `path` (missing files
 * count 0) into the three outputs (any may be NULL). */
void ti_gens_file_sizes(tide_io *io, const char *path, uint64_t *dat, uint64_t *key,
                        uint64_t *log);

#endif
