/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim.c: a simulated file system in memory, for tests: the handle.
 *
 * The model. A sim holds inodes (files) and two namespaces that map paths to
 * inodes: the DURABLE namespace (what a power loss keeps for certain) and
 * the CURRENT namespace (what open, stat, unlink and rename see). Each inode
 * keeps its DURABLE image (bytes and size as of its last successful sync),
 * its CURRENT image (what reads see), and, in the sim's one ordered list of
 * pending operations, the writes (offset + bytes) and truncates (new size)
 * made to it since that sync. Namespace changes are pending too: every
 * create, unlink and rename appends a namespace operation made of one or
 * two effects, "path now names inode I" or "path names nothing" (a rename
 * is both). Directories are names without inodes: a directory exists when
 * it is in the CURRENT set of directories made (by tide_io_sim_mkdir, which
 * also puts it and its parents in the DURABLE set at once, or by the
 * tide_io's mkdir), or when a current file lies under it (an implicit
 * directory, always there). The tide_io's mkdir and rmdir change the
 * current set and append a namespace operation of one effect, "directory
 * D is made" or "D is removed", pending like a create until sync_dir of
 * D's parent applies it to the durable set. A crash keeps or loses it like
 * any namespace operation, and when it loses a mkdir it loses what was
 * made inside, files and directories, synced or not (nothing on a disk
 * reaches them). A directory no mkdir made (implicit) is never lost.
 *
 *   sync(f)        durable image := current image; f's pending ops go.
 *   sync_dir(d)    every pending effect on a path whose directory is d is
 *                  applied to the durable namespace, in order, and retired
 *                  (so a rename across directories becomes durable half by
 *                  half, as each directory is synced).
 *   crash(seed)    a subset of the pending operations (data and namespace)
 *                  is applied, in order, to the durable state; writes may be
 *                  torn at a 512-byte file boundary. Then current := durable,
 *                  nothing is pending, old handles are dead.
 *
 * The files. This one is the handle (life, clone, the mutex, the test
 * helpers and counters of io_sim.h); io_sim_table.c is the tide_io;
 * io_sim_fs.c the data; io_sim_fault.c the counted calls, faults and
 * capacity; io_sim_crash.c the crash images; io_sim_map.c the maps (a
 * crash detaches them); io_sim_check.c asserts the invariants below. io_sim_impl.h holds what they share.
 *
 * Invariants (ti_sim_check asserts them at the end of every call):
 *   1. For every inode, current image == durable image with its pending
 *      operations (the ops of sim->ops on it, ino->npending of them) applied
 *      in order, each write growing the file with zeros up to its offset,
 *      each truncate cutting or zero-extending. So an inode with nothing
 *      pending has current == durable.
 *   2. Current namespace == durable namespace with the pending effects of
 *      sim->nsops (those not yet retired by a sync_dir) applied in order;
 *      every namespace operation in sim->nsops has one such effect at least.
 *      Likewise the current set of directories made == the durable set
 *      with the pending mkdirs and rmdirs applied in order, and no
 *      directory made has a current file's name.
 *   3. Every inode in sim->inodes is named by either namespace or by a
 *      pending effect, or held by a handle of the present generation: the
 *      calls that can leave one unreachable run gc(), which frees it with
 *      its pending operations, so every op in sim->ops belongs to a live
 *      inode.
 *   4. A handle whose gen differs from sim->gen (it predates a crash) never
 *      touches its inode: every call on it fails with TIDE_EIO before
 *      looking (io_sim_table.c's file_enter), and close only frees the
 *      handle. ino->handles counts the handles of the present generation
 *      and the inode's locks are theirs: at most one exclusive, never with
 *      a shared one, no more locks than handles.
 *   5. An image's size is at most its allocated capacity (b is NULL exactly
 *      when that is 0), and the bytes between are never read: growth always
 *      zero-fills the gap it opens. The crash's staging images are empty
 *      between calls.
 *   6. Every look at the sim's state is made holding sim->mu, by the thread
 *      recorded as its owner, except in create and destroy (the caller owns
 *      the sim alone then) and the validation of fail_at's arguments; the
 *      tide_io counters are also updated with relaxed atomics so readers
 *      outside the sim need no lock.
 *
 * Checking costs O(inodes + pending ops + (names + pending effects)^2) a
 * call, names and effects being a handful in a test. Comparing bytes (the
 * rest of invariant 1) costs O(bytes of the sim); it runs at every call only
 * in paranoid mode (tide_io_sim_set_paranoid, which clones inherit), and
 * whenever a test calls tide_io_sim_check. A sim set unchecked
 * (tide_io_sim_set_checked(sim, 0), which clones inherit too) skips the
 * check at the end of its calls and is checked only when a test calls
 * tide_io_sim_check: the fuzz target that runs a whole store on a fresh
 * sim per input checks once at the end of the input, where the checks at
 * every call took a fifth of its time.
 *
 * Decisions a test relies on:
 *   - Counted calls: open, read_at, write_at, sync, truncate, size, lock,
 *     unlink, rename, sync_dir, stat, mkdir, rmdir, list, whatever their
 *     outcome (also on a dead handle). close is not counted and never fails; nor are the test
 *     helpers of io_sim.h. The fault of fail_at is checked right after
 *     counting, before any other check.
 *   - An injected EIO or ENOSPC never has an effect, on a sync as well: the
 *     pending writes stay pending and visible, and a later sync may still
 *     make them durable (a retryable failure). SYNC_FAIL is the other
 *     model, Linux's since 2018 ("fsyncgate"): the kernel marks the dirty
 *     pages clean after a failed writeback, so the data is gone; the sim
 *     also evicts them, so the file's pending writes and truncates are
 *     neither durable nor visible any more: current reverts to the durable
 *     image, size included, and a retried sync succeeds having saved
 *     nothing. A store that retries fsync after a failure loses data here.
 *   - A kind that makes no sense for the call it lands on (SHORT_WRITE on a
 *     read, SYNC_FAIL on a stat, ENOSPC on a read) fails that call as EIO.
 *     SHORT_WRITE writes a prefix ending at the last 512-byte file boundary
 *     at or below the middle of the write (none when that is before the
 *     write), deterministic so that a failing run repeats.
 *   - Capacity counts the current sizes of live files (named in the current
 *     namespace or held open). Only growth is refused.
 *   - A torn write that survives grows the file to the end of its surviving
 *     prefix; a dropped write or truncate changes nothing, so growth from a
 *     dropped write is lost.
 *   - crash_state keeps every pending namespace operation: the enumeration
 *     is over file contents, with the namespace as the program left it.
 *     crash_state_ns also chooses which pending namespace operations
 *     survive (any subset, applied in order): a power loss may keep a
 *     later unlink and lose an earlier one of the same directory, which
 *     only a sync_dir between them rules out.
 *   - Locks belong to the inode, as flock's do, and die with the handle.
 *   - A special file (tide_io_sim_put_special: a FIFO, a device, a socket)
 *     is a name and nothing else: open refuses it with TIDE_ENOTSTORE, as
 *     it refuses a directory, and stat, unlink and rename treat it as a
 *     file. No call blocks on it.
 *   - list reports the current namespace: the files directly in the
 *     directory, and as directories the directories made in it and the
 *     first component of any deeper file's path. The names are collected
 *     under the mutex and the callback runs after it is released. rmdir
 *     refuses an implicit directory as not empty (it has the file that
 *     makes it).
 *
 * Never: let a dead handle reach its inode (the crash may have freed it);
 *   never call out of the sim (no callbacks) while holding sim->mu.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_sim_impl.h"
#include "util/err.h"

void ti_sim_lock(tide_io_sim *sim)
{
    pthread_mutex_lock(&sim->mu);
    sim->owner = pthread_self();
    sim->locked = 1;
}

void ti_sim_unlock(tide_io_sim *sim)
{
    if (!sim->unchecked) ti_sim_check(sim, sim->paranoid);
    sim->locked = 0;
    pthread_mutex_unlock(&sim->mu);
}

/* ---- life ---- */

int tide_io_sim_create(tide_io_sim **out)
{
    tide_io_sim *sim = calloc(1, sizeof *sim);

    if (sim == NULL) return tide_err_set(TIDE_ENOMEM, "sim: create: out of memory");
    sim->io = ti_sim_io_template;
    pthread_mutex_init(&sim->mu, NULL);
    sim->capacity = UINT64_MAX;
    *out = sim;
    return 0;
}

void tide_io_sim_destroy(tide_io_sim *sim)
{
    if (sim == NULL) return;
    ti_sim_ops_clear(sim);
    free(sim->ops);
    for (size_t i = 0; i < sim->nnsops; i++) ti_sim_nsop_free(&sim->nsops[i]);
    free(sim->nsops);
    ti_sim_ns_free(&sim->cur_ns);
    ti_sim_ns_free(&sim->dur_ns);
    ti_sim_dirset_free(&sim->dirs);
    ti_sim_dirset_free(&sim->dur_dirs);
    free(sim->holders);
    while (sim->inodes) {
        inode *i = sim->inodes;
        sim->inodes = i->next;
        ti_sim_inode_free(i);
    }
    pthread_mutex_destroy(&sim->mu);
    free(sim);
}

tide_io *tide_io_sim_io(tide_io_sim *sim)
{
    return &sim->io;
}

/* ---- clone: inodes, pending ops, namespaces, directories, counters ---- */

/* Copy the marked inodes of `sim` into `c`, in the same order, leaving
 * each original's copy pointer on its copy (NULL when unmarked). */
static int clone_inodes(tide_io_sim *sim, tide_io_sim *c)
{
    inode **tail = &c->inodes;

    for (inode *i = sim->inodes; i; i = i->next) {
        inode *n;
        i->copy = NULL;
        if (!i->mark) continue;
        if ((n = calloc(1, sizeof *n)) == NULL) return TIDE_ENOMEM;
        *tail = n;
        tail = &n->next;
        i->copy = n;
        if (ti_sim_img_assign(&n->dur, &i->dur) != 0 || ti_sim_img_assign(&n->cur, &i->cur) != 0)
            return TIDE_ENOMEM;
        n->writes = i->writes;
        n->bytes_written = i->bytes_written;
        n->reads = i->reads;
        n->bytes_read = i->bytes_read;
        n->syncs = i->syncs;
        memcpy(n->special, i->special, sizeof n->special);
    }
    return 0;
}

static int clone_ops(tide_io_sim *sim, tide_io_sim *c)
{
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        op n = *o;
        if (!o->ino->mark) continue;
        n.ino = o->ino->copy;
        n.data = NULL;
        if (o->len && (n.data = malloc(o->len)) == NULL) return TIDE_ENOMEM;
        if (o->len) memcpy(n.data, o->data, o->len);
        if (ti_sim_grow(&c->ops, &c->ops_cap, c->nops + 1, sizeof *c->ops) != 0) {
            free(n.data);
            return TIDE_ENOMEM;
        }
        c->ops[c->nops++] = n;
        n.ino->npending++;
    }
    return 0;
}

static int clone_nsops(tide_io_sim *sim, tide_io_sim *c)
{
    for (size_t k = 0; k < sim->nnsops; k++) {
        const nsop *o = &sim->nsops[k];
        nsop n = { { { NULL, NULL }, { NULL, NULL } }, o->dir };
        if (ti_sim_grow(&c->nsops, &c->nsops_cap, c->nnsops + 1, sizeof *c->nsops) != 0)
            return TIDE_ENOMEM;
        for (int j = 0; j < 2; j++) {
            if (o->eff[j].path == NULL) continue;
            n.eff[j].ino = o->eff[j].ino ? o->eff[j].ino->copy : NULL;
            if ((n.eff[j].path = strdup(o->eff[j].path)) == NULL) {
                ti_sim_nsop_free(&n);
                return TIDE_ENOMEM;
            }
        }
        c->nsops[c->nnsops++] = n;
    }
    return 0;
}

static int clone_dirs(tide_io_sim *sim, tide_io_sim *c)
{
    if (ti_sim_dirset_copy(&c->dirs, &sim->dirs) != 0
        || ti_sim_dirset_copy(&c->dur_dirs, &sim->dur_dirs) != 0)
        return TIDE_ENOMEM;
    return 0;
}

static void clone_counters(const tide_io_sim *sim, tide_io_sim *c)
{
    c->calls = sim->calls;
    c->faults = sim->faults;
    c->capacity = sim->capacity;
    c->paranoid = sim->paranoid;
    c->unchecked = sim->unchecked;
    c->io.bytes_written = sim->io.bytes_written;
    c->io.bytes_read = sim->io.bytes_read;
    c->io.syncs = sim->io.syncs;
    c->io.writes = sim->io.writes;
    c->io.reads = sim->io.reads;
}

int tide_io_sim_clone(tide_io_sim *sim, tide_io_sim **out)
{
    tide_io_sim *c = NULL;
    int rc;

    if ((rc = tide_io_sim_create(&c)) != 0) return rc;
    ti_sim_lock(sim);
    ti_sim_mark_live(sim, 0);           /* what only a handle reaches is not copied */
    rc = clone_inodes(sim, c);
    if (rc == 0) rc = clone_ops(sim, c);
    if (rc == 0 && (ti_sim_ns_copy(&c->cur_ns, &sim->cur_ns, 1) != 0
                    || ti_sim_ns_copy(&c->dur_ns, &sim->dur_ns, 1) != 0))
        rc = TIDE_ENOMEM;
    if (rc == 0) rc = clone_nsops(sim, c);
    if (rc == 0) rc = clone_dirs(sim, c);
    if (rc == 0) clone_counters(sim, c);
    ti_sim_unlock(sim);
    if (rc) {
        tide_io_sim_destroy(c);
        return tide_err_set(TIDE_ENOMEM, "sim: clone: out of memory");
    }
    ti_sim_lock(c);                     /* the copy must meet the invariants too */
    ti_sim_unlock(c);
    *out = c;
    return 0;
}

/* ---- test helpers ---- */

int tide_io_sim_mkdir(tide_io_sim *sim, const char *path)
{
    char p[SIM_PATH_MAX];
    int rc;

    ti_sim_lock(sim);
    if ((rc = ti_sim_norm(path, p, "mkdir")) != 0) { rc = TIDE_EINVAL; goto out; }
    for (size_t n = strlen(p); n > 1; n = ti_sim_dir_len(p)) {
        p[n] = '\0';
        if (ti_sim_ns_get(&sim->cur_ns, p)) {
            rc = tide_err_set(TIDE_EEXIST, "sim: %s: mkdir: a file has that name", p);
            goto out;
        }
    }
    /* The directory and each parent: "/a/b" lists "/a/b" and "/a", in
     * both sets, a pending mkdir or rmdir of them forgotten. */
    if ((rc = ti_sim_norm(path, p, "mkdir")) != 0) goto out;
    for (size_t n = strlen(p); n > 0; n = ti_sim_dir_len(p)) {
        int had;
        p[n] = '\0';
        if (strcmp(p, "/") == 0) break;
        had = ti_sim_dirset_has(&sim->dirs, p);
        if (ti_sim_dirset_put(&sim->dirs, p, 1) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: mkdir: out of memory", p);
            goto out;
        }
        if (ti_sim_dirset_put(&sim->dur_dirs, p, 1) != 0) {
            if (!had) ti_sim_dirset_put(&sim->dirs, p, 0);   /* as it was */
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: mkdir: out of memory", p);
            goto out;
        }
        ti_sim_dirops_forget(sim, p);
    }
out:
    ti_sim_unlock(sim);
    return rc;
}

/* put_file and put_special: a new durable inode at `path`, in both
 * namespaces, with the pending effects on `path` forgotten. */
static int put_inode(tide_io_sim *sim, const char *path, const void *data, size_t len,
                     const char *special)
{
    char p[SIM_PATH_MAX];
    inode *ino, *old;
    int rc;

    ti_sim_lock(sim);
    if ((rc = ti_sim_norm(path, p, "put file")) != 0) { rc = TIDE_EINVAL; goto out; }
    old = ti_sim_ns_get(&sim->cur_ns, p);
    if (old == NULL && ti_sim_is_dir(sim, p)) {
        rc = tide_err_set(TIDE_EINVAL, "sim: %s: put file: is a directory", p);
        goto out;
    }
    if ((ino = ti_sim_inode_new(sim)) == NULL
        || ti_sim_img_write(&ino->dur, 0, data, len) != 0
        || ti_sim_img_write(&ino->cur, 0, data, len) != 0
        || ti_sim_ns_set(&sim->cur_ns, p, ino) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: put file: out of memory", p);
        goto out;                       /* gc frees the new inode */
    }
    if (special) snprintf(ino->special, sizeof ino->special, "%s", special);
    if (ti_sim_ns_set(&sim->dur_ns, p, ino) != 0) {
        ti_sim_ns_set(&sim->cur_ns, p, old);   /* a replace or a removal: cannot fail */
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: put file: out of memory", p);
        goto out;
    }
    ti_sim_nsops_retire(sim, p, 0, 0);  /* the file is durable as it is; cannot fail */
out:
    ti_sim_gc(sim);
    ti_sim_unlock(sim);
    return rc;
}

int tide_io_sim_put_file(tide_io_sim *sim, const char *path, const void *data, size_t len)
{
    return put_inode(sim, path, data, len, NULL);
}

int tide_io_sim_put_special(tide_io_sim *sim, const char *path, const char *kind)
{
    if (kind == NULL || kind[0] == '\0' || strlen(kind) >= sizeof ((inode *)0)->special)
        return tide_err_set(TIDE_EINVAL, "sim: %s: put special: the kind must be 1 to 23 characters",
                            path);
    return put_inode(sim, path, NULL, 0, kind);
}

static int get_image(tide_io_sim *sim, const char *path, int durable, void **data, size_t *len)
{
    char p[SIM_PATH_MAX];
    const image *m;
    inode *ino;
    void *buf;
    int rc;

    ti_sim_lock(sim);
    if ((rc = ti_sim_norm(path, p, "get file")) != 0) goto out;
    ino = ti_sim_ns_get(durable ? &sim->dur_ns : &sim->cur_ns, p);
    if (ino == NULL) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: get file: no such %sfile", p,
                          durable ? "durable " : "");
        goto out;
    }
    m = durable ? &ino->dur : &ino->cur;
    if ((buf = malloc(m->size ? m->size : 1)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: get file: out of memory", p);
        goto out;
    }
    if (m->size) memcpy(buf, m->b, m->size);
    *data = buf;
    *len = m->size;
out:
    ti_sim_unlock(sim);
    return rc;
}

int tide_io_sim_get_file(tide_io_sim *sim, const char *path, void **data, size_t *len)
{
    return get_image(sim, path, 0, data, len);
}

int tide_io_sim_get_durable_file(tide_io_sim *sim, const char *path, void **data, size_t *len)
{
    return get_image(sim, path, 1, data, len);
}

int tide_io_sim_add_holder(tide_io_sim *sim, const char *path, int pid, const char *comm)
{
    struct sim_holder *h;
    int rc = 0;

    ti_sim_lock(sim);
    h = realloc(sim->holders, (sim->nholders + 1) * sizeof *h);
    if (h == NULL) { rc = tide_err_set(TIDE_ENOMEM, "sim: add holder: out of memory"); goto out; }
    sim->holders = h;
    h += sim->nholders;
    if ((rc = ti_sim_norm(path, h->path, "add holder")) != 0) goto out;
    h->pid = pid;
    snprintf(h->comm, sizeof h->comm, "%s", comm ? comm : "?");
    sim->nholders++;
out:
    ti_sim_unlock(sim);
    return rc;
}

void tide_io_sim_clear_holders(tide_io_sim *sim)
{
    ti_sim_lock(sim);
    sim->nholders = 0;
    ti_sim_unlock(sim);
}

/* ---- counters ---- */

enum sim_counter { SIM_CALLS, SIM_FAULTS, SIM_USAGE, SIM_PENDING, SIM_PENDING_NS };

/* One of the sim's numbers, read under its mutex. */
static uint64_t counter(tide_io_sim *sim, enum sim_counter which)
{
    uint64_t v = 0;

    ti_sim_lock(sim);
    switch (which) {
    case SIM_CALLS: v = sim->calls; break;
    case SIM_FAULTS: v = sim->faults; break;
    case SIM_USAGE: v = ti_sim_usage(sim); break;
    case SIM_PENDING: v = sim->nops; break;
    case SIM_PENDING_NS: v = sim->nnsops; break;
    }
    ti_sim_unlock(sim);
    return v;
}

uint64_t tide_io_sim_calls(tide_io_sim *sim) { return counter(sim, SIM_CALLS); }
uint64_t tide_io_sim_faults(tide_io_sim *sim) { return counter(sim, SIM_FAULTS); }
uint64_t tide_io_sim_usage(tide_io_sim *sim) { return counter(sim, SIM_USAGE); }
uint64_t tide_io_sim_pending_count(tide_io_sim *sim) { return counter(sim, SIM_PENDING); }
uint64_t tide_io_sim_pending_ns_count(tide_io_sim *sim) { return counter(sim, SIM_PENDING_NS); }

int tide_io_sim_file_stats_get(tide_io_sim *sim, const char *path, tide_io_sim_file_stats *out)
{
    char p[SIM_PATH_MAX];
    inode *ino;
    int rc;

    ti_sim_lock(sim);
    if ((rc = ti_sim_norm(path, p, "file stats")) != 0) goto out;
    if ((ino = ti_sim_ns_get(&sim->cur_ns, p)) == NULL) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: file stats: no such file", p);
        goto out;
    }
    out->size = ino->cur.size;
    out->durable_size = ino->dur.size;
    out->pending_ops = ino->npending;
    out->writes = ino->writes;
    out->bytes_written = ino->bytes_written;
    out->reads = ino->reads;
    out->bytes_read = ino->bytes_read;
    out->syncs = ino->syncs;
out:
    ti_sim_unlock(sim);
    return rc;
}

/* ---- self-check ---- */

void tide_io_sim_check(tide_io_sim *sim)
{
    ti_sim_lock(sim);
    ti_sim_check(sim, 1);
    ti_sim_unlock(sim);
}

void tide_io_sim_set_paranoid(tide_io_sim *sim, int on)
{
    ti_sim_lock(sim);
    sim->paranoid = on != 0;
    ti_sim_unlock(sim);
}

void tide_io_sim_set_checked(tide_io_sim *sim, int on)
{
    ti_sim_lock(sim);
    sim->unchecked = on == 0;
    ti_sim_unlock(sim);
}

/* Break the file `ino` (NULL: none at the path) as `what` says. */
static int break_file(tide_io_sim *sim, inode *ino, char *p, tide_io_sim_breakage what)
{
    if (ino == NULL) return tide_err_set(TIDE_ENOENT, "sim: %s: break: no such file", p);
    switch (what) {
    case TIDE_IO_SIM_BREAK_PENDING_COUNT: ino->npending++; return 0;
    case TIDE_IO_SIM_BREAK_NAME: ti_sim_ns_set(&sim->cur_ns, p, NULL); return 0;
    case TIDE_IO_SIM_BREAK_LOCKS: ino->excl_locks = 2; return 0;
    case TIDE_IO_SIM_BREAK_SIZE: ino->cur.size = ino->cur.cap + 1; return 0;
    case TIDE_IO_SIM_BREAK_DIR:
        p[ti_sim_dir_len(p)] = '\0';
        return ti_sim_dirset_put(&sim->dur_dirs, p, 1);
    case TIDE_IO_SIM_BREAK_BYTE:
        if (ino->cur.size == 0) break;
        ino->cur.b[ino->cur.size / 2] ^= 0xff;
        return 0;
    default: break;
    }
    return tide_err_set(TIDE_EINVAL, "sim: %s: break: cannot break invariant %d here", p,
                        (int)what);
}

int tide_io_sim_break(tide_io_sim *sim, const char *path, tide_io_sim_breakage what)
{
    char p[SIM_PATH_MAX];
    int rc = 0;

    if (what == TIDE_IO_SIM_BREAK_UNLOCKED) {
        ti_sim_check(sim, 0);           /* without the mutex: invariant 6 fires */
        return 0;
    }
    ti_sim_lock(sim);
    if (what == TIDE_IO_SIM_BREAK_ORPHAN) {
        if (ti_sim_inode_new(sim) == NULL) rc = tide_err_set(TIDE_ENOMEM, "sim: break: out of memory");
    } else if ((rc = ti_sim_norm(path, p, "break")) == 0) {
        rc = break_file(sim, ti_sim_ns_get(&sim->cur_ns, p), p, what);
    }
    sim->locked = 0;                    /* no check: the next call's sees the damage */
    pthread_mutex_unlock(&sim->mu);
    return rc;
}
