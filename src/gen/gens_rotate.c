/*
 * gens_rotate.c: a rotation (a new empty generation in front, the oldest
 * dropped once `keep` are held) and the removal of a generation directory.
 *
 * The steps, in the order that makes a crash at any point safe:
 *
 *     create   mkdir gen-N+1, tide_store_create in it, sync DIR, open it
 *     manifest tide_gen_manifest_write: N+1 first, without the dropped
 *     switch   under the write lock: the slots and the manifest in memory,
 *              the ids, newest_objects restarts at 0 (no I/O)
 *     drop     close each dropped store, then delete it: nudb.dat cut by
 *              delete_chunk_bytes per step with back_off_ms pauses, every
 *              file unlinked, the directory removed, DIR synced
 *
 * Before the manifest write is durable nothing the old manifest names has
 * changed, so a crash leaves the old manifest and an unnamed gen-N+1 that
 * open removes. After it, the new manifest names N+1 (present and whole:
 * created and synced before) and the kept ones; a dropped directory left
 * behind is unnamed and open removes it.
 *
 * Invariants:
 *   1. The in-memory switch follows a manifest write that returned 0, so
 *      no insert reaches the new generation before the disk names it.
 *   2. A dropped store is closed only after the switch: every call that
 *      could hold it held the read lock, which the switch waited out.
 *   3. One rotation at a time (rotate_mu); only a rotation changes the
 *      list, so a rotation reads g->m and g->gens without the read lock.
 *
 * Never: delete a generation the manifest on disk names; switch when the
 * manifest write failed (the disk may then hold either manifest: the old
 * one is written back before the new directory is removed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gens_impl.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

typedef struct file_list {
    char (*names)[256];
    unsigned n, cap;
} file_list;

static int collect_files(void *arg, const char *name, int is_dir)
{
    file_list *l = arg;
    if (is_dir) return 0;
    if (strlen(name) >= 256) return tide_err_set(TIDE_EINVAL, "%s: file name too long", name);
    if (l->n == l->cap) {
        unsigned cap = l->cap ? 2 * l->cap : 8;
        void *p = realloc(l->names, cap * sizeof *l->names);
        if (p == NULL) return tide_err_set(TIDE_ENOMEM, "remove: out of memory");
        l->names = p;
        l->cap = cap;
    }
    snprintf(l->names[l->n++], 256, "%s", name);
    return 0;
}

/* Cut nudb.dat of `path` by `chunk` bytes per step, pausing between. */
static int cut_dat(tide_gens *g, tide_io *io, const char *path, uint64_t chunk, unsigned pause_ms,
                   unsigned *steps)
{
    char p[TI_GENS_PATH_CAP];
    tide_file *f = NULL;
    uint64_t size = 0;
    int rc;

    if ((rc = ti_gens_path(p, path, "nudb.dat")) != 0) return rc;
    rc = io->open(io, p, TIDE_IO_WRITE, &f);
    if (rc == TIDE_ENOENT) return 0;
    if (rc) return rc;
    rc = io->size(f, &size);
    while (rc == 0 && size > 0) {
        size = size > chunk ? size - chunk : 0;
        rc = io->truncate(f, size);
        if (rc) break;
        if (steps) (*steps)++;
        ti_gens_trace(g, "delete-step");
        if (size > 0 && pause_ms) tide_clock_sleep_us((uint64_t)pause_ms * 1000);
    }
    io->close(f);
    return rc;
}

int ti_gens_remove_dir(tide_gens *g, tide_io *io, const char *parent, const char *path,
                       uint64_t chunk, unsigned pause_ms, uint64_t *bytes, unsigned *steps)
{
    file_list l = { NULL, 0, 0 };
    uint64_t total = 0;
    int rc;

    rc = io->list(io, path, collect_files, &l);
    for (unsigned i = 0; i < l.n && rc == 0; i++) {
        char p[TI_GENS_PATH_CAP];
        tide_file *f = NULL;
        uint64_t n = 0;
        if ((rc = ti_gens_path(p, path, l.names[i])) != 0) break;
        if (io->open(io, p, TIDE_IO_READ, &f) == 0) {
            if (io->size(f, &n) != 0) n = 0;
            io->close(f);
        }
        total += n;
    }
    if (rc == 0 && chunk > 0) rc = cut_dat(g, io, path, chunk, pause_ms, steps);
    for (unsigned i = 0; i < l.n && rc == 0; i++) {
        char p[TI_GENS_PATH_CAP];
        if ((rc = ti_gens_path(p, path, l.names[i])) != 0) break;
        rc = io->unlink(io, p);
        if (rc == TIDE_ENOENT) rc = 0;
    }
    if (rc == 0) rc = io->rmdir(io, path);
    if (rc == 0) rc = io->sync_dir(io, parent);
    if (rc == 0 && bytes) *bytes += total;
    free(l.names);
    return rc;
}

/* The manifest after this rotation, and the generations it drops (oldest
 * first) into dropped[0..*nd). */
static int next_manifest(const tide_gens *g, uint64_t now_us, tide_gen_manifest *m,
                         tide_gen *dropped, unsigned *nd)
{
    unsigned k = g->opts.keep, one = 0;
    tide_gen d;
    int rc;

    *m = g->m;
    *nd = 0;
    if (k >= m->keep) m->keep = k;   /* a raised keep drops nothing now */
    rc = tide_gen_manifest_rotate(m, now_us, &d, &one);
    if (rc) return rc;
    /* A lowered keep: the rotation dropped by the old one; drop the rest
     * beyond the new one too. */
    while (m->count > k) dropped[(*nd)++] = m->gens[--m->count];
    if (one) dropped[(*nd)++] = d;
    m->keep = k;
    for (unsigned i = 1; i < *nd; i++)   /* oldest (lowest id) first */
        for (unsigned j = i; j > 0 && dropped[j - 1].id > dropped[j].id; j--) {
            tide_gen t = dropped[j];
            dropped[j] = dropped[j - 1];
            dropped[j - 1] = t;
        }
    return tide_gen_manifest_check(m);
}

/* Step "create": the new generation's directory and store, open. */
static int create_next(tide_gens *g, uint64_t id, const char *path, tide_store **s)
{
    tide_store_create_opts co;
    tide_store_info si;
    tide_store_opts so;
    int rc;

    tide_store_get_info(g->gens[0].s, &si);
    tide_store_create_opts_init(&co);
    co.key_size = si.key_size;
    co.block_size = si.block_size;
    co.load_factor = si.load_factor;
    co.appnum = si.appnum;
    co.io = g->io;
    so = g->opts.store;
    so.io = g->io;
    rc = g->io->mkdir(g->io, path);
    if (rc == TIDE_EEXIST) {
        /* Left by an earlier rotation whose undo could not finish: no
         * manifest this handle wrote names it. */
        rc = ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL);
        if (rc == 0) rc = g->io->mkdir(g->io, path);
    }
    if (rc) return rc;
    rc = tide_store_create(path, &co);
    if (rc == 0) rc = g->io->sync_dir(g->io, g->dir);
    if (rc == 0) rc = tide_store_open(s, path, &so);
    if (rc) {
        tide_log(TIDE_LOG_WARN, "%s: rotation: creating generation %" PRIu64 " failed: %s",
                 g->dir, id, tide_last_error());
        ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL);
    }
    return rc;
}

/* Step "switch": the new list in memory, under the write lock. The
 * dropped stores' slots go to out[0..nd) (their counters are retired here,
 * so store_info's sums never step down). */
static void switch_to(tide_gens *g, const tide_gen_manifest *m, tide_store *fresh,
                      ti_gens_slot *out, unsigned nd, uint64_t *objects_before)
{
    ti_gens_slot next[TIDE_GEN_MAX];
    unsigned n = 0;

    pthread_rwlock_wrlock(&g->lock);
    next[n].id = m->gens[0].id;
    next[n++].s = fresh;
    for (unsigned i = 0; i < g->m.count; i++) {
        if (n < m->count && g->gens[i].id == m->gens[n].id) next[n++] = g->gens[i];
    }
    TIDE_ASSERT(n == m->count);
    unsigned o = 0;
    for (unsigned i = g->m.count; i-- > 0;) {   /* oldest first, as `dropped` */
        int kept = 0;
        for (unsigned j = 0; j < m->count; j++) kept |= m->gens[j].id == g->gens[i].id;
        if (!kept) { ti_gens_retire(g, g->gens[i].s); out[o++] = g->gens[i]; }
    }
    TIDE_ASSERT(o == nd);
    memcpy(g->gens, next, sizeof next[0] * n);
    g->m = *m;
    *objects_before = __atomic_exchange_n(&g->newest_objects, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g->newest_id, m->gens[0].id, __ATOMIC_RELAXED);
    __atomic_store_n(&g->oldest_id, m->gens[m->count - 1].id, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&g->lock);
}

/* Step "drop": close and delete the dropped generations. */
static void drop_all(tide_gens *g, ti_gens_slot *d, unsigned nd, tide_gens_rotate_report *r)
{
    for (unsigned i = 0; i < nd; i++) {
        char p[TI_GENS_PATH_CAP];
        int rc = tide_store_close(d[i].s);
        if (rc) tide_log(TIDE_LOG_WARN, "%s: rotation: closing dropped generation %" PRIu64
                         ": %s", g->dir, d[i].id, tide_last_error());
        ti_gens_trace(g, "drop");
        rc = ti_gens_gen_path(p, g->dir, d[i].id);
        if (rc == 0) rc = ti_gens_remove_dir(g, g->io, g->dir, p, g->opts.delete_chunk_bytes,
                                             g->opts.back_off_ms, &r->deleted_bytes,
                                             &r->delete_steps);
        if (rc) tide_log(TIDE_LOG_WARN, "%s: rotation: deleting dropped generation %" PRIu64
                         " stopped (%s); the next open removes the rest", g->dir, d[i].id,
                         tide_last_error());
    }
}

/* The manifest write failed: put the old one back, then remove the new
 * directory only if that worked (else the disk may name it). */
static void undo_manifest(tide_gens *g, tide_store *fresh, const char *path, uint64_t id)
{
    tide_store_close(fresh);
    if (tide_gen_manifest_write(g->io, g->dir, &g->m) == 0)
        ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL);
    else
        tide_log(TIDE_LOG_WARN, "%s: rotation: generation %" PRIu64 " left in place: the "
                 "manifest on disk may name it (the next open keeps or removes it)", g->dir, id);
}

int tide_gens_rotate(tide_gens *g, tide_gens_rotate_report *report)
{
    tide_gens_rotate_report r;
    tide_gen_manifest m;
    tide_gen dropped[TIDE_GEN_MAX];
    ti_gens_slot gone[TIDE_GEN_MAX];
    tide_store *fresh = NULL;
    char path[TI_GENS_PATH_CAP];
    unsigned nd = 0;
    uint64_t t;
    int rc;

    memset(&r, 0, sizeof r);
    if (!g->enabled)
        return tide_err_set(TIDE_EINVAL, "%s: online delete is off: no generations to rotate",
                            g->dir);
    pthread_mutex_lock(&g->rotate_mu);
    r.started_unix_us = tide_clock_real_us();
    t = tide_clock_mono_ns();
    rc = next_manifest(g, r.started_unix_us, &m, dropped, &nd);
    if (rc) goto out;
    r.new_id = m.gens[0].id;
    if ((rc = ti_gens_gen_path(path, g->dir, r.new_id)) != 0) goto out;
    ti_gens_trace(g, "create");
    if ((rc = create_next(g, r.new_id, path, &fresh)) != 0) goto out;
    r.create_ns = tide_clock_mono_ns() - t;

    t = tide_clock_mono_ns();
    ti_gens_trace(g, "manifest");
    rc = tide_gen_manifest_write(g->io, g->dir, &m);
    if (rc) {
        tide_log(TIDE_LOG_WARN, "%s: rotation: writing the manifest failed: %s", g->dir,
                 tide_last_error());
        int keep_rc = rc;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tide_last_error());
        undo_manifest(g, fresh, path, r.new_id);
        rc = tide_err_set(keep_rc, "%s", msg);
        goto out;
    }
    r.manifest_ns = tide_clock_mono_ns() - t;

    t = tide_clock_mono_ns();
    ti_gens_trace(g, "switch");
    switch_to(g, &m, fresh, gone, nd, &r.objects_in_previous);
    r.switch_ns = tide_clock_mono_ns() - t;

    t = tide_clock_mono_ns();
    for (unsigned i = 0; i < nd; i++) r.dropped_ids[i] = dropped[i].id;
    r.dropped = nd;
    drop_all(g, gone, nd, &r);
    r.drop_ns = tide_clock_mono_ns() - t;
    r.rotations = m.rotations;
    tide_log(TIDE_LOG_INFO, "%s: rotated: generation %" PRIu64 " is the newest, %u dropped "
             "(%" PRIu64 " bytes deleted)", g->dir, r.new_id, nd, r.deleted_bytes);
    ti_gens_trace(g, "done");
out:
    pthread_mutex_unlock(&g->rotate_mu);
    if (report) *report = r;
    return rc;
}
