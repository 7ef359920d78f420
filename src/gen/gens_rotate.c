/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens_rotate.c: a rotation (a new empty generation in front, the oldest
 * dropped once `keep` are held) and the removal of a generation directory.
 *
 * Copies forward (a fetch that hits an older generation, a re-PUT, touch,
 * keep) are inserts into the newest's pool, durable at its next commit.
 * A rotation that drops generation D must not delete D while a copy taken
 * from it could still be lost, nor name a manifest without D before those
 * copies are durable: a crash would lose an object read inside its
 * retention. So, when the rotation drops something, in this order:
 *
 *     a create   mkdir gen-N+1, tide_store_create in it, sync DIR, open it
 *     a' flush   (the deferred index only) N stops deferring and its tail is
 *                indexed (tide_store_set_deferring(N, 0)): N takes no insert
 *                after the switch, so only the newest ever holds a tail and
 *                the tails of all open generations stay within the one
 *                index_lag_bytes. Inserts
 *                until the switch still reach N and are indexed commit by
 *                commit; N+1 takes none yet: the sum never passes one
 *                budget. Undone (N defers again) if the rotation fails
 *     b sync     tide_store_sync of every kept store while the dropped ones
 *                are still readable: the bulk of the pending copies (an
 *                older kept store may still hold copies made while it was
 *                the newest) is committed outside the hide window
 *     c hide     under the write lock: the dropped ones leave the read list
 *                (g->nread); no new copy from them can start. Writes still
 *                go to N, which the manifest on disk names. From here until
 *                the switch their objects read as absent (their span is
 *                ending); if the rotation fails they are shown again (and
 *                read_epoch moves), unless the disk is unknown (invariant 8)
 *     d sync     again, of every kept store: only the copies made since b
 *                (usually empty pools, no I/O): every copy taken from a
 *                dropped generation is durable now
 *     e manifest tide_gen_manifest_write: N+1 first, without the dropped
 *     f switch   under the write lock: the slots and the manifest in memory,
 *                the ids, newest_objects restarts at 0 (no I/O)
 *     g drop     close each dropped store, then delete it: nudb.dat cut by
 *                delete_chunk per step with back_off_ms pauses (a
 *                tide_gens_interrupt stops it between two steps), every file
 *                unlinked, the generation's directory synced (so no crash
 *                keeps its rmdir and loses its unlinks), the directory
 *                removed, DIR synced. While a Tide reader in another
 *                process holds the generation (a shared lock on nudb.key
 *                or tide.live: every reader holds tide.live's, live.c)
 *                nothing is cut, only unlinked (lock_out_all); otherwise
 *                the cut and the unlinks run under both locks, exclusive
 *                (invariant 12)
 *
 * A rotation that drops nothing skips b, c and d. A crash before e is
 * durable leaves the old manifest, which names everything (nothing was
 * deleted) and an unnamed gen-N+1 that open removes. After e the copies are
 * durable in the kept stores (d) and the new manifest names N+1 (present
 * and whole: created and synced in a) and the kept ones; a dropped
 * directory left behind is unnamed and open removes it.
 *
 * Invariants:
 *   1. The in-memory switch follows a manifest write that returned 0, so
 *      no insert reaches the new generation before the disk names it.
 *   2. A dropped store is closed only after the switch: every call that
 *      could hold it held the read lock, which the switch waited out.
 *   3. One rotation at a time (rotate_mu); only a rotation changes the
 *      list, so a rotation reads g->m and g->gens without the read lock.
 *   4. The dropped generations are the oldest: the kept ones are the
 *      prefix g->gens[0..nread) once hidden (asserted in hide).
 *   5. A manifest without a generation is written only after every kept
 *      store was synced with that generation hidden (c, then d, then e):
 *      every copy taken from it is durable before the disk forgets it.
 *   6. After a failed manifest write whose write-back failed too, the disk
 *      may name N+1 or not (disk_unknown): every directory is kept, and
 *      the next rotation first writes g->m again and refuses to go on
 *      until that succeeds. create_next removes an existing gen-N+1 only
 *      while the disk is known to hold g->m, which never names it.
 *   7. After tide_gens_interrupt no delete step starts and rotate returns
 *      TIDE_ECLOSED; what a stopped drop left is unnamed, for open.
 *   8. While disk_unknown the hidden generations stay hidden: the disk may
 *      hold the new manifest, which no longer names them, and a copy from
 *      them into N would not be durable before a crash. Rewriting g->m
 *      (tide_gens_rewrite_manifest, or the next rotation's first step)
 *      does not show them again: they stay hidden until a rotation drops
 *      them (their span was ending), or one fails with the disk known,
 *      which shows them (a failure while the disk is known always does).
 *   9. read_epoch moves (seq_cst) exactly when the readable list grows:
 *      the only growth is set_readable(g, 0) after a failed rotation.
 *  10. After a switch only the newest generation defers its index: the
 *      one it replaced stopped at a' and every older one was stopped by
 *      its own rotation or opened with no lag (gens_open.c, invariant 5).
 *      So a dropped generation's tail is empty (asserted at g): its close
 *      writes nothing to a key file deleted right after, and no
 *      acknowledged record of a kept one waits in a tail at the switch.
 *      A crash anywhere recovers a tail from tide.meta at the next open,
 *      whatever lag that open gives (open.c).
 *  11. A BROKEN newest is the exception to 10: a' skips its flush (the
 *      flush cannot commit; the rotation must still move writes off it).
 *      Its tail stays readable in memory until its close (a broken close
 *      writes nothing; the next open recovers the tail from tide.meta).
 *      While any kept generation holds such a tail the new newest starts
 *      with its index off (hold_fresh_deferring), so the tails together
 *      still stay within one index_lag_bytes.
 *  12. A dropped generation's nudb.dat is cut only under LOCK_EX on its
 *      nudb.key and tide.live, taken when no reader held either, and
 *      every file of it is unlinked before the locks go: a reader that
 *      takes its shared lock after the drop finds tide.live gone, and
 *      one that holds it is never cut under.
 *
 * Never: delete a generation the manifest on disk names, or may name;
 * show a hidden generation while the disk may not name it;
 * switch when the manifest write failed (the disk may then hold either
 * manifest: the old one is written back before the new directory is
 * removed); write a manifest without a generation whose copies are not
 * yet durable.
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

int ti_gens_names_add(ti_gens_names *l, const char *name)
{
    if (strlen(name) >= sizeof l->names[0])
        return tide_err_set(TIDE_EINVAL, "%s: file name too long", name);
    if (l->n == l->cap) {
        unsigned cap = l->cap ? 2 * l->cap : 8;
        void *p = realloc(l->names, cap * sizeof *l->names);
        if (p == NULL) return tide_err_set(TIDE_ENOMEM, "%s: out of memory", name);
        l->names = p;
        l->cap = cap;
    }
    snprintf(l->names[l->n++], sizeof l->names[0], "%s", name);
    return 0;
}

static int collect_files(void *arg, const char *name, int is_dir)
{
    return is_dir ? 0 : ti_gens_names_add(arg, name);
}

/* Lock `name` of `path` exclusively into *out: 0, or TIDE_EBUSY when
 * another handle holds it. A missing file leaves *out NULL and is 0.
 * Opened for writing: where flock is emulated with fcntl locks (NFS) an
 * exclusive lock needs a writable descriptor. */
static int lock_out_readers(tide_io *io, const char *path, const char *name, tide_file **out)
{
    char p[TI_GENS_PATH_CAP];
    int rc;

    *out = NULL;
    if ((rc = ti_gens_path(p, path, name)) != 0) return rc;
    rc = io->open(io, p, TIDE_IO_WRITE, out);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        return 0;
    }
    if (rc) return rc;
    rc = io->lock(*out, 1);
    if (rc) {
        io->close(*out);
        *out = NULL;
    }
    return rc;
}

/* The drop's exclusive locks on a generation's nudb.key and tide.live. */
typedef struct drop_locks {
    tide_file *key, *live;
} drop_locks;

static void unlock_readers(tide_io *io, drop_locks *l)
{
    if (l->live) io->close(l->live);
    if (l->key) io->close(l->key);
    l->live = l->key = NULL;
}

/* Lock the readers out of the generation at `path` before its cut: 0 with
 * both locks in *l (a missing file has none), or 0 with *held set when
 * another Tide handle holds it, or the locks cannot be taken at all: then
 * the files are only unlinked.
 *
 * Why: a reader holds a shared lock on tide.live (every read-only path:
 * live.c, the readers' hold) and, a plain read-only handle, on nudb.key. A
 * plain reader maps nudb.dat, and a cut under a map is a SIGBUS, not an
 * error; any other reader would read short. Unlinked, the files stay the
 * reader's until it closes, and the kernel frees the blocks then, at once,
 * not by steps. Unlinking is always safe; only the cut needs the locks. The
 * caller keeps them through the cut and the unlinks (unlock_readers after
 * the last), so a reader that opens the generation meanwhile is refused
 * (a rotation is deleting it), and one that gets its lock afterwards finds
 * tide.live unlinked: none ever opens a file the cut has shortened. */
static int lock_out_all(tide_gens *g, tide_io *io, const char *path, uint64_t bytes,
                        drop_locks *l, int *held)
{
    char why[256];
    int rc;

    *held = 0;
    rc = lock_out_readers(io, path, "nudb.key", &l->key);
    if (rc == 0) rc = lock_out_readers(io, path, "tide.live", &l->live);
    if (rc == 0) return 0;
    snprintf(why, sizeof why, "%s", tide_last_error());
    tide_err_clear();
    unlock_readers(io, l);
    tide_log(TIDE_LOG_INFO, "%s: %s: its files (%" PRIu64 " bytes) are unlinked without "
             "stepped cuts, and the disk frees them when that handle closes (%s)", path,
             rc == TIDE_EBUSY ? "another Tide handle (a reader) holds this dropped generation"
                              : "the dropped generation's files cannot be locked",
             bytes, why);
    ti_gens_trace(g, "delete-unlink-only");
    *held = 1;
    return 0;
}

/* Cut nudb.dat of `path` by `chunk` bytes per step, pausing between; the
 * caller holds lock_out_all's locks. */
static int cut_dat(tide_gens *g, tide_io *io, const char *path, uint64_t chunk, unsigned pause_ms,
                   unsigned *steps)
{
    char p[TI_GENS_PATH_CAP];
    tide_file *f = NULL;
    uint64_t size = 0;
    int rc;

    if ((rc = ti_gens_path(p, path, "nudb.dat")) != 0) return rc;
    rc = io->open(io, p, TIDE_IO_WRITE, &f);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        return 0;
    }
    if (rc) return rc;
    rc = io->size(f, &size);
    while (rc == 0 && size > 0) {
        if (ti_gens_interrupted(g)) {   /* invariant 7: between two steps */
            rc = tide_err_set(TIDE_ECLOSED, "%s: interrupted (tide_gens_interrupt)", path);
            break;
        }
        size = size > chunk ? size - chunk : 0;
        rc = io->truncate(f, size);
        if (rc) break;
        if (steps) (*steps)++;
        ti_gens_trace(g, "delete-step");
        if (size > 0 && pause_ms) ti_gens_pause(g, pause_ms);
    }
    io->close(f);
    return rc;
}

int ti_gens_remove_dir(tide_gens *g, tide_io *io, const char *parent, const char *path,
                       uint64_t chunk, unsigned pause_ms, uint64_t *bytes, unsigned *steps,
                       uint64_t *held_bytes)
{
    ti_gens_names l = { NULL, 0, 0 };
    drop_locks locks = { NULL, NULL };
    uint64_t total = 0;
    int rc, held = 0;

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
    if (rc == 0 && chunk > 0) rc = lock_out_all(g, io, path, total, &locks, &held);
    if (rc == 0 && chunk > 0 && !held) rc = cut_dat(g, io, path, chunk, pause_ms, steps);
    if (rc == 0 && ti_gens_interrupted(g))
        rc = tide_err_set(TIDE_ECLOSED, "%s: interrupted (tide_gens_interrupt)", path);
    for (unsigned i = 0; i < l.n && rc == 0; i++) {
        char p[TI_GENS_PATH_CAP];
        if ((rc = ti_gens_path(p, path, l.names[i])) != 0) break;
        rc = io->unlink(io, p);
        if (rc == TIDE_ENOENT) rc = 0;
    }
    /* Every file unlinked under the locks: a reader that locks tide.live
     * from now on finds it gone (live.c), never a shortened nudb.dat. */
    unlock_readers(io, &locks);
    /* The unlinks durable before the rmdir: else a crash could keep the
     * directory's removal and lose its files' (a directory gone from DIR
     * with files still under it). */
    if (rc == 0 && l.n > 0) rc = io->sync_dir(io, path);
    if (rc == 0) rc = io->rmdir(io, path);
    if (rc == TIDE_ENOENT) rc = 0;   /* already gone */
    if (rc == 0) rc = io->sync_dir(io, parent);
    if (rc == 0 && held && held_bytes) *held_bytes += total;
    else if (rc == 0 && bytes) *bytes += total;
    free(l.names);
    return rc;
}

/* The manifest after this rotation, and the generations it drops (oldest
 * first) into dropped[0..*nd). */
static int next_manifest(const tide_gens *g, uint64_t now_us, tide_gen_manifest *m,
                         tide_gen *dropped, unsigned *nd)
{
    unsigned k = g->opts.keep ? g->opts.keep : g->m.keep, one = 0;   /* 0: the manifest's */
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

/* Step a, "create": the new generation's directory and store, open. */
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
        /* Left by an earlier rotation whose undo could not remove it (or a
         * crash). Invariant 6: the disk holds g->m (read at open or
         * written by this handle since), and g->m never names newest + 1. */
        TIDE_ASSERT(!g->disk_unknown);
        TIDE_ASSERT(id > g->m.gens[0].id);
        rc = ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL, NULL);
        if (rc == 0) rc = g->io->mkdir(g->io, path);
    }
    if (rc) return rc;
    rc = tide_store_create(path, &co);
    if (rc == 0) rc = g->io->sync_dir(g->io, g->dir);
    if (rc == 0) rc = tide_store_open(s, path, &so);
    if (rc) {
        tide_log(TIDE_LOG_WARN, "%s: rotation: creating generation %" PRIu64 " failed: %s",
                 g->dir, id, tide_last_error());
        ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL, NULL);
    }
    return rc;
}

/* Step f, "switch": the new list in memory, under the write lock. The
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
    g->nread = m->count;
    ti_gens_check(g);
    *objects_before = __atomic_exchange_n(&g->newest_objects, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g->newest_id, m->gens[0].id, __ATOMIC_RELAXED);
    __atomic_store_n(&g->oldest_id, m->gens[m->count - 1].id, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&g->lock);
}

/* Step g, "drop": close and delete the dropped generations. */
static void drop_all(tide_gens *g, ti_gens_slot *d, unsigned nd, tide_gens_rotate_report *r)
{
    /* A barrier: a sync that took the old list finishes first. */
    pthread_rwlock_wrlock(&g->sync_lock);
    pthread_rwlock_unlock(&g->sync_lock);
    for (unsigned i = 0; i < nd; i++) {
        char p[TI_GENS_PATH_CAP];
        tide_store_info si;
        tide_store_get_info(d[i].s, &si);
        TIDE_ASSERT((si.tail_items == 0 || si.broken) && si.index_lag_bytes == 0);   /* invariants 10, 11 */
        int rc = tide_store_close(d[i].s);
        if (rc) tide_log(TIDE_LOG_WARN, "%s: rotation: closing dropped generation %" PRIu64
                         ": %s", g->dir, d[i].id, tide_last_error());
        ti_gens_trace(g, "drop");
        rc = ti_gens_gen_path(p, g->dir, d[i].id);
        if (rc == 0 && ti_gens_interrupted(g))
            rc = tide_err_set(TIDE_ECLOSED, "%s: interrupted (tide_gens_interrupt)", p);
        if (rc == 0) rc = ti_gens_remove_dir(g, g->io, g->dir, p, g->opts.delete_chunk,
                                             g->opts.back_off_ms, &r->deleted_bytes,
                                             &r->delete_steps, &r->held_bytes);
        if (rc) tide_log(ti_gens_interrupted(g) ? TIDE_LOG_INFO : TIDE_LOG_WARN, "%s: rotation: "
                         "deleting dropped generation %" PRIu64 " stopped (%s); the next open "
                         "removes the rest", g->dir, d[i].id, tide_last_error());
    }
}

/* Step c (invariant 4): hide the dropped generations, the oldest `nd`.
 * Called with nd == 0 by unhide to show them all again, which bumps
 * read_epoch (a miss read while they were hidden may be stale now). */
static void set_readable(tide_gens *g, unsigned nd)
{
    pthread_rwlock_wrlock(&g->lock);
    TIDE_ASSERT(nd < g->m.count);
    unsigned before = g->nread;
    g->nread = g->m.count - nd;
    __atomic_store_n(&g->oldest_id, g->gens[g->nread - 1].id, __ATOMIC_RELAXED);
    if (g->nread > before) __atomic_add_fetch(&g->read_epoch, 1, __ATOMIC_SEQ_CST);
    ti_gens_check(g);
    pthread_rwlock_unlock(&g->lock);
}

/* tide_store_sync of the first `n` stores (the ones the manifest keeps). */
static int sync_kept(tide_gens *g, unsigned n, unsigned nd)
{
    int rc = 0;
    ti_gens_trace(g, "sync");
    for (unsigned i = 0; i < n && rc == 0; i++) {
        rc = tide_store_sync(g->gens[i].s);
        if (rc) rc = tide_err_prefix(rc, "%s: rotation: syncing generation %" PRIu64 " before "
                                     "the manifest drops %u", g->dir, g->gens[i].id, nd);
    }
    return rc;
}

/* Steps b, c, d: sync every kept store while the dropped ones (dropped[],
 * oldest first) are still readable (the bulk of the pending copies), hide
 * them, sync again (only the copies made since the first: usually empty
 * pools), so the hide window is one cheap commit round (invariant 5). On
 * error they are shown again. */
static int hide_and_sync(tide_gens *g, const tide_gen *dropped, unsigned nd)
{
    unsigned kept = g->m.count - nd;
    for (unsigned i = 0; i < nd; i++)   /* the tail of the list, in order */
        TIDE_ASSERT(g->gens[kept + i].id == dropped[nd - 1 - i].id);
    int rc = sync_kept(g, kept, nd);
    if (rc) return rc;
    ti_gens_trace(g, "hide");
    set_readable(g, nd);
    rc = sync_kept(g, kept, nd);
    if (rc) set_readable(g, 0);
    return rc;
}

/* Step a': the newest (N) stops deferring its index and its tail is
 * indexed (invariant 10); *ns its wall time. Nothing to do when N does not
 * defer. A BROKEN N (a commit it could not undo) is not flushed: its tail
 * stays in memory, readable, until its close, and it takes no insert after
 * the switch (invariant 11), so a broken N never blocks the rotation that
 * moves writes off it. On any other error N defers again. */
static int stop_deferring(tide_gens *g, uint64_t *ns)
{
    tide_store *n = g->gens[0].s;
    tide_store_info si;
    uint64_t t = tide_clock_mono_ns();
    int rc;

    tide_store_get_info(n, &si);
    if (si.index_lag_bytes == 0) return 0;
    ti_gens_trace(g, "flush");
    rc = tide_store_set_deferring(n, 0);   /* on a broken N: the flag, then its error */
    if (rc) tide_store_get_info(n, &si);
    if (rc && si.broken) {
        tide_log(TIDE_LOG_WARN, "%s: rotation: generation %" PRIu64 " (the newest) is broken (reopen to "
                 "recover it): its deferred index's %" PRIu64 " entries stay in memory until its close; "
                 "writes move to the new generation", g->dir, g->gens[0].id, si.tail_items);
        rc = 0;
    } else if (rc) {
        rc = tide_err_prefix(rc, "%s: rotation: indexing the tail of generation %" PRIu64 " (the newest) "
                             "before it stops taking writes", g->dir, g->gens[0].id);
        tide_store_set_deferring(n, 1);
        return rc;
    }
    *ns = tide_clock_mono_ns() - t;
    return 0;
}

/* Invariant 11: while a kept older generation still holds a tail (a broken
 * one, not flushed at a'), the new newest starts with its deferred index
 * off, so the tails together stay within one index_lag_bytes. It takes no
 * insert yet: the call only sets the flag (an empty tail, nothing synced).
 * The rotation that drops the broken one creates a newest that defers. */
static int hold_fresh_deferring(tide_gens *g, tide_store *fresh, unsigned kept)
{
    for (unsigned i = 0; i < kept; i++) {
        tide_store_info si;
        tide_store_get_info(g->gens[i].s, &si);
        if (si.tail_items > 0) return tide_store_set_deferring(fresh, 0);
    }
    return 0;
}

/* The manifest write failed: put the old one back, then remove the new
 * directory only if that worked (else the disk may name it: invariant 6). */
static void undo_manifest(tide_gens *g, tide_store *fresh, const char *path, uint64_t id)
{
    tide_store_close(fresh);
    if (tide_gen_manifest_write(g->io, g->dir, &g->m) == 0) {
        ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL, NULL);
        return;
    }
    __atomic_store_n(&g->disk_unknown, 1, __ATOMIC_RELAXED);
    tide_log(TIDE_LOG_WARN, "%s: rotation: generation %" PRIu64 " left in place: the manifest on "
             "disk may name it; the next rotation writes the manifest again first (the next "
             "open keeps or removes it)", g->dir, id);
}

/* Invariant 6: before anything else, make the disk hold g->m again. */
static int rewrite_manifest(tide_gens *g)
{
    int rc = tide_gen_manifest_write(g->io, g->dir, &g->m);
    if (rc)
        return tide_err_prefix(rc, "%s: rotation refused: the manifest on disk is unknown since "
                               "a failed rotation and writing it again failed (every generation "
                               "directory is kept)", g->dir);
    __atomic_store_n(&g->disk_unknown, 0, __ATOMIC_RELAXED);
    return 0;
}

int tide_gens_rewrite_manifest(tide_gens *g)
{
    int rc = 0;
    if (!g->enabled || !__atomic_load_n(&g->disk_unknown, __ATOMIC_RELAXED)) return 0;
    pthread_mutex_lock(&g->rotate_mu);
    if (g->disk_unknown) rc = rewrite_manifest(g);
    pthread_mutex_unlock(&g->rotate_mu);
    if (rc == 0) tide_log(TIDE_LOG_INFO, "%s: the manifest on disk is known again (rewritten after "
                          "a failed rotation)", g->dir);
    return rc;
}

uint64_t tide_gens_read_epoch(const tide_gens *g)
{
    return __atomic_load_n(&g->read_epoch, __ATOMIC_SEQ_CST);
}

int tide_gens_disk_unknown(const tide_gens *g)
{
    return __atomic_load_n(&g->disk_unknown, __ATOMIC_RELAXED);
}

/* Step e, undone on failure (with the hidden ones shown again). */
static int write_manifest(tide_gens *g, const tide_gen_manifest *m, tide_store *fresh,
                          const char *path)
{
    char msg[512];
    ti_gens_trace(g, "manifest");
    int rc = tide_gen_manifest_write(g->io, g->dir, m);
    if (rc == 0) return 0;
    snprintf(msg, sizeof msg, "%s", tide_last_error());
    tide_log(TIDE_LOG_WARN, "%s: rotation: writing the manifest failed: %s", g->dir, msg);
    undo_manifest(g, fresh, path, m->gens[0].id);
    /* Invariant 8: with the disk unknown the hidden ones stay hidden. */
    if (g->nread < g->m.count && !g->disk_unknown) set_readable(g, 0);
    return tide_err_set(rc, "%s", msg);
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
    if (g->read_only) return tide_err_set(TIDE_EINVAL, "%s: rotate: opened read-only", g->dir);
    pthread_mutex_lock(&g->rotate_mu);
    r.started_unix_us = tide_clock_real_us();
    t = tide_clock_mono_ns();
    if (ti_gens_interrupted(g)) {
        rc = tide_err_set(TIDE_ECLOSED, "%s: rotate: interrupted (the handle is closing)", g->dir);
        goto out;
    }
    if (g->disk_unknown && (rc = rewrite_manifest(g)) != 0) goto out;
    rc = next_manifest(g, r.started_unix_us, &m, dropped, &nd);
    if (rc) goto out;
    r.new_id = m.gens[0].id;
    if ((rc = ti_gens_gen_path(path, g->dir, r.new_id)) != 0) goto out;
    ti_gens_trace(g, "create");
    if ((rc = create_next(g, r.new_id, path, &fresh)) != 0) goto out;
    r.create_ns = tide_clock_mono_ns() - t;

    t = tide_clock_mono_ns();
    if ((rc = stop_deferring(g, &r.flush_ns)) != 0 || (rc = hold_fresh_deferring(g, fresh, g->m.count - nd)) != 0 ||
        (nd > 0 && (rc = hide_and_sync(g, dropped, nd)) != 0)) {
        tide_log(TIDE_LOG_WARN, "%s: rotation: %s", g->dir, tide_last_error());
        tide_store_set_deferring(g->gens[0].s, 1);
        tide_store_close(fresh);
        ti_gens_remove_dir(NULL, g->io, g->dir, path, 0, 0, NULL, NULL, NULL);
        goto out;
    }
    r.sync_ns = nd > 0 || r.flush_ns ? tide_clock_mono_ns() - t : 0;

    t = tide_clock_mono_ns();
    if ((rc = write_manifest(g, &m, fresh, path)) != 0) {
        tide_store_set_deferring(g->gens[0].s, 1);   /* N is still the newest */
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
             "(%" PRIu64 " bytes deleted, %" PRIu64 " unlinked and held open by readers)", g->dir,
             r.new_id, nd, r.deleted_bytes, r.held_bytes);
    ti_gens_trace(g, "done");
out:
    pthread_mutex_unlock(&g->rotate_mu);
    if (report) *report = r;
    return rc;
}
