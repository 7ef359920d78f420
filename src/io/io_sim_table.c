/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_table.c: the sim's tide_io, the functions the store calls.
 *
 * Each function is one call of io.h carried out on the model of io_sim.c.
 * Every counted call starts in one of two prologues: file_enter for a call
 * on a handle (read_at, write_at, sync, truncate, size, lock), path_enter
 * for a call on a path (open, unlink, rename, sync_dir, stat, mkdir,
 * rmdir, list). A prologue
 * takes sim->mu, counts the call, fails it when fail_at's fault lands on it
 * (unless the call makes that fault itself: SHORT_WRITE on a write,
 * SYNC_FAIL on a sync), and then refuses a dead handle or normalises the
 * path. Whatever it returns, the call ends with ti_sim_unlock, which
 * asserts the invariants (ti_sim_check) before it releases the mutex.
 *
 * Invariants:
 *   1. The order of a call's checks is fixed: count, fault, dead handle
 *      (or path), then the call's own refusals; so a fault lands on a call
 *      whatever its arguments, and an injected failure has no effect.
 *   2. file_enter is the only way a handle's function reaches f->ino, and
 *      it compares generations first (io_sim.c invariant 4). close is the
 *      exception that only frees a dead handle.
 *   3. A call that fails has no effect on the model, except the two a
 *      test asks for (a short write's prefix, a failed sync's drop) and a
 *      sync_dir out of memory, which leaves the effects it applied durable.
 *   4. A call that can leave an inode unreachable (close, a failed create,
 *      unlink, rename, sync_dir) runs ti_sim_gc before it returns.
 *
 * Never: call out of the sim while holding sim->mu (holders copies what it
 *   reports into the caller's array; tide_err_clear runs after the unlock;
 *   list calls back only after the unlock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_sim_impl.h"
#include "util/err.h"

static void count(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }

/* The prologue of a call on a handle. Locks the sim; returns the injected
 * failure, the dead handle's TIDE_EIO, or 0 with *own set to the fault the
 * call makes itself (`own`, or TIDE_IO_SIM_NONE). The caller ends with
 * ti_sim_unlock whatever comes back. */
static int file_enter(tide_file *f, const char *what, uint64_t off, int can_enospc,
                      tide_io_sim_fault own_kind, tide_io_sim_fault *own)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;

    ti_sim_lock(sim);
    k = ti_sim_enter(sim);
    *own = TIDE_IO_SIM_NONE;
    if (k && k != own_kind)
        return ti_sim_injected(sim, k, ti_sim_fault_code(k, can_enospc), f->path, what, off);
    if (f->gen != sim->gen)
        return tide_err_set(TIDE_EIO, "sim: %s: %s: the handle was opened before a crash",
                            f->path, what);
    *own = k;
    return 0;
}

/* The prologue of a call on a path: locks the sim, counts, fails an
 * injected fault, then normalises `path` into p (SIM_PATH_MAX bytes). The
 * caller ends with ti_sim_unlock whatever comes back. */
static int path_enter(tide_io_sim *sim, const char *path, const char *what, int can_enospc,
                      char *p)
{
    tide_io_sim_fault k;

    ti_sim_lock(sim);
    k = ti_sim_enter(sim);
    if (k) return ti_sim_injected(sim, k, ti_sim_fault_code(k, can_enospc), path, what, UINT64_MAX);
    return ti_sim_norm(path, p, what);
}

static int read_only(const tide_file *f, const char *what, uint64_t off)
{
    return tide_err_set(TIDE_EIO, "sim: %s: %s at offset %llu: opened read-only", f->path, what,
                        (unsigned long long)off);
}

/* ---- open and close ---- */

/* Why open of normalised `p` (the file there: ino, or NULL) is refused, or
 * 0. */
static int open_refusal(tide_io_sim *sim, const char *p, const inode *ino, int flags)
{
    int create = (flags & TIDE_IO_CREATE) != 0;

    if (ino && create && (flags & TIDE_IO_EXCL))
        return tide_err_set(TIDE_EEXIST, "sim: %s: open: the file exists (O_EXCL)", p);
    if (ino && ino->special[0])
        return tide_err_set(TIDE_ENOTSTORE, "sim: %s: is %s, not a regular file: a store's files "
                            "are regular files; nothing was opened", p, ino->special);
    if (ino) return 0;
    if (ti_sim_is_dir(sim, p))
        return tide_err_set(TIDE_ENOTSTORE, "sim: %s: is a directory, not a regular file: a "
                            "store's files are regular files; nothing was opened", p);
    if (!create) return tide_err_set(TIDE_ENOENT, "sim: %s: open: no such file", p);
    if (!ti_sim_parent_exists(sim, p))
        return tide_err_set(TIDE_ENOENT, "sim: %s: open: no such directory", p);
    return 0;
}

/* A new empty file at `p`: a current name and a pending create. No effect
 * on failure (the new inode, unreachable, goes at the caller's gc). */
static int open_create(tide_io_sim *sim, const char *p, inode **out)
{
    inode *ino = ti_sim_inode_new(sim);

    if (ino == NULL || ti_sim_ns_set(&sim->cur_ns, p, ino) != 0) return TIDE_ENOMEM;
    if (ti_sim_nsop_add(sim, p, ino, NULL, NULL) != 0) {
        ti_sim_ns_set(&sim->cur_ns, p, NULL);
        return TIDE_ENOMEM;
    }
    *out = ino;
    return 0;
}

static int sim_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    tide_file *f = NULL;
    inode *ino = NULL;
    int rc, made = 0;

    if ((rc = path_enter(sim, path, "open", (flags & TIDE_IO_CREATE) != 0, p)) != 0) goto out;
    ino = ti_sim_ns_get(&sim->cur_ns, p);
    if ((rc = open_refusal(sim, p, ino, flags)) != 0) goto out;
    f = malloc(sizeof *f + strlen(p) + 1);
    if (f == NULL) { rc = tide_err_set(TIDE_ENOMEM, "sim: %s: open: out of memory", p); goto out; }
    if (ino == NULL) {
        made = 1;
        if (open_create(sim, p, &ino) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: open: out of memory", p);
            goto out;
        }
    }
    f->sim = sim;
    f->ino = ino;
    f->gen = sim->gen;
    f->writable = (flags & (TIDE_IO_WRITE | TIDE_IO_CREATE)) != 0;
    f->lock = 0;
    strcpy(f->path, p);
    ino->handles++;
    *out = f;
    f = NULL;
out:
    free(f);
    if (made && rc) ti_sim_gc(sim);
    ti_sim_unlock(sim);
    return rc;
}

static void unlock_handle(tide_file *f)
{
    if (f->lock == 1) f->ino->shared_locks--;
    if (f->lock == 2) f->ino->excl_locks--;
    f->lock = 0;
}

static void sim_close(tide_file *f)
{
    tide_io_sim *sim;

    if (f == NULL) return;
    sim = f->sim;
    ti_sim_lock(sim);
    if (f->gen == sim->gen) {
        unlock_handle(f);
        f->ino->handles--;
        ti_sim_gc(sim);
    }
    ti_sim_unlock(sim);
    free(f);
}

/* ---- calls on a handle ---- */

static int sim_read_at(tide_file *f, void *buf, size_t len, uint64_t off)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault own;
    inode *ino;
    int rc;

    if ((rc = file_enter(f, "read", off, 0, TIDE_IO_SIM_NONE, &own)) != 0) goto out;
    ino = f->ino;
    if (off > ino->cur.size || len > ino->cur.size - off) {
        rc = tide_err_set(TIDE_ECORRUPT, "sim: %s: short read at offset %llu: wanted %zu bytes, "
                          "the file is %llu bytes", f->path, (unsigned long long)off, len,
                          (unsigned long long)ino->cur.size);
        goto out;
    }
    if (len) memcpy(buf, ino->cur.b + off, len);
    ino->reads++;
    ino->bytes_read += len;
    count(&sim->io.reads, 1);
    count(&sim->io.bytes_read, len);
out:
    ti_sim_unlock(sim);
    return rc;
}

/* SHORT_WRITE: the prefix ti_sim_short_part names, which obeys the
 * capacity like any write and may be empty; then TIDE_EIO. */
static int short_write(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    tide_io_sim *sim = f->sim;
    inode *ino = f->ino;
    size_t part = ti_sim_short_part(off, len);
    uint64_t end = off + part > ino->cur.size ? off + part : ino->cur.size;

    if (part && (ti_sim_check_room(sim, f->path, ino, "write", off, end) != 0
                 || ti_sim_pend_write(sim, ino, off, buf, part) != 0))
        part = 0;
    return tide_err_set(TIDE_EIO, "sim: %s: write at offset %llu: injected short write (call "
                        "%llu): %zu of %zu bytes written", f->path, (unsigned long long)off,
                        (unsigned long long)sim->calls, part, len);
}

static int sim_write_at(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault own;
    inode *ino;
    int rc;

    if ((rc = file_enter(f, "write", off, 1, TIDE_IO_SIM_SHORT_WRITE, &own)) != 0) goto out;
    if (!f->writable) { rc = read_only(f, "write", off); goto out; }
    if (own == TIDE_IO_SIM_SHORT_WRITE) { rc = short_write(f, buf, len, off); goto out; }
    ino = f->ino;
    if ((rc = ti_sim_check_room(sim, f->path, ino, "write", off,
                                off + len > ino->cur.size ? off + len : ino->cur.size)) != 0)
        goto out;
    if (ti_sim_pend_write(sim, ino, off, buf, len) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: write at offset %llu: out of memory", f->path,
                          (unsigned long long)off);
        goto out;
    }
    ino->writes++;
    ino->bytes_written += len;
    count(&sim->io.writes, 1);
    count(&sim->io.bytes_written, len);
out:
    ti_sim_unlock(sim);
    return rc;
}

/* SYNC_FAIL: the pending writes and truncates are dropped, current reverts
 * to durable (io_sim.c, "fsyncgate"); then TIDE_EIO. */
static int failed_sync(tide_file *f)
{
    tide_io_sim *sim = f->sim;
    inode *ino = f->ino;
    uint64_t lost = ino->npending;

    if (ti_sim_img_assign(&ino->cur, &ino->dur) != 0)
        return tide_err_set(TIDE_ENOMEM, "sim: %s: sync: out of memory", f->path);
    ti_sim_maps_follow(ino, 0, UINT64_MAX);
    ti_sim_ops_drop(sim, ino);
    return tide_err_set(TIDE_EIO, "sim: %s: sync: injected sync failure (call %llu): %llu "
                        "pending operations dropped, the file is back to its last synced "
                        "%llu bytes", f->path, (unsigned long long)sim->calls,
                        (unsigned long long)lost, (unsigned long long)ino->cur.size);
}

static int sim_sync(tide_file *f)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault own;
    inode *ino;
    int rc;

    if ((rc = file_enter(f, "sync", UINT64_MAX, 1, TIDE_IO_SIM_SYNC_FAIL, &own)) != 0) goto out;
    if (own == TIDE_IO_SIM_SYNC_FAIL) { rc = failed_sync(f); goto out; }
    ino = f->ino;
    if (ino->npending) {
        if (ti_sim_img_assign(&ino->dur, &ino->cur) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: sync: out of memory", f->path);
            goto out;
        }
        ti_sim_ops_drop(sim, ino);
    }
    ino->syncs++;
    count(&sim->io.syncs, 1);
out:
    ti_sim_unlock(sim);
    return rc;
}

static int sim_truncate(tide_file *f, uint64_t size)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault own;
    int rc;

    if ((rc = file_enter(f, "truncate", size, 1, TIDE_IO_SIM_NONE, &own)) != 0) goto out;
    if (!f->writable) { rc = read_only(f, "truncate", size); goto out; }
    if ((rc = ti_sim_check_room(sim, f->path, f->ino, "truncate", size, size)) != 0) goto out;
    if (ti_sim_pend_truncate(sim, f->ino, size) != 0)
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: truncate at offset %llu: out of memory",
                          f->path, (unsigned long long)size);
out:
    ti_sim_unlock(sim);
    return rc;
}

static int sim_size(tide_file *f, uint64_t *out)
{
    tide_io_sim_fault own;
    int rc;

    if ((rc = file_enter(f, "size", UINT64_MAX, 0, TIDE_IO_SIM_NONE, &own)) == 0)
        *out = f->ino->cur.size;
    ti_sim_unlock(f->sim);
    return rc;
}

static int sim_lock(tide_file *f, int exclusive)
{
    tide_io_sim_fault own;
    int rc, shared, excl;

    if ((rc = file_enter(f, "lock", UINT64_MAX, 0, TIDE_IO_SIM_NONE, &own)) != 0) goto out;
    /* Other handles' locks (flock converts this handle's own lock). */
    shared = f->ino->shared_locks - (f->lock == 1);
    excl = f->ino->excl_locks - (f->lock == 2);
    if (excl > 0 || (exclusive && shared > 0)) {
        rc = tide_err_set(TIDE_EBUSY, exclusive
                          ? "sim: %s: the store is open in another process or handle"
                          : "sim: %s: the store is open for writing in another process or handle",
                          f->path);
        goto out;
    }
    unlock_handle(f);
    f->lock = exclusive ? 2 : 1;
    if (exclusive) f->ino->excl_locks++;
    else f->ino->shared_locks++;
out:
    ti_sim_unlock(f->sim);
    return rc;
}

/* ---- calls on a path ---- */

static int sim_unlink(tide_io *io, const char *path)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    int rc;

    if ((rc = path_enter(sim, path, "unlink", 0, p)) != 0) goto out;
    if (ti_sim_ns_get(&sim->cur_ns, p) == NULL) {
        rc = ti_sim_is_dir(sim, p) ? tide_err_set(TIDE_EIO, "sim: %s: unlink: is a directory", p)
                                   : tide_err_set(TIDE_ENOENT, "sim: %s: unlink: no such file", p);
        goto out;
    }
    if (ti_sim_nsop_add(sim, p, NULL, NULL, NULL) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: unlink: out of memory", p);
        goto out;
    }
    ti_sim_ns_set(&sim->cur_ns, p, NULL);
    ti_sim_gc(sim);
out:
    ti_sim_unlock(sim);
    return rc;
}

static int sim_rename(tide_io *io, const char *from, const char *to)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char a[SIM_PATH_MAX], b[SIM_PATH_MAX];
    inode *ino;
    int rc;

    if ((rc = path_enter(sim, from, "rename", 1, a)) != 0) goto out;
    if ((rc = ti_sim_norm(to, b, "rename")) != 0) goto out;
    if ((ino = ti_sim_ns_get(&sim->cur_ns, a)) == NULL) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: rename to %s: no such file", a, b);
        goto out;
    }
    if (ti_sim_ns_get(&sim->cur_ns, b) == NULL && ti_sim_is_dir(sim, b)) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: rename to %s: the target is a directory", a, b);
        goto out;
    }
    if (!ti_sim_parent_exists(sim, b)) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: rename to %s: no such directory", a, b);
        goto out;
    }
    if (strcmp(a, b) == 0) goto out;
    if (ti_sim_nsop_add(sim, a, NULL, b, ino) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: rename to %s: out of memory", a, b);
        goto out;
    }
    if (ti_sim_ns_set(&sim->cur_ns, b, ino) != 0) {
        ti_sim_nsop_free(&sim->nsops[--sim->nnsops]);
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: rename to %s: out of memory", a, b);
        goto out;
    }
    ti_sim_ns_set(&sim->cur_ns, a, NULL);
    ti_sim_gc(sim);
out:
    ti_sim_unlock(sim);
    return rc;
}

/* Why normalised `d` cannot be used as a directory by `what`: TIDE_EIO
 * when a file has the name, TIDE_ENOENT when nothing does; else 0. */
static int dir_refusal(const tide_io_sim *sim, const char *d, const char *what)
{
    if (ti_sim_ns_get(&sim->cur_ns, d) != NULL)
        return tide_err_set(TIDE_EIO, "sim: %s: %s: not a directory", d, what);
    if (!ti_sim_is_dir(sim, d))
        return tide_err_set(TIDE_ENOENT, "sim: %s: %s: no such directory", d, what);
    return 0;
}

static int sim_sync_dir(tide_io *io, const char *dir)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char d[SIM_PATH_MAX];
    int rc;

    if ((rc = path_enter(sim, dir, "sync directory", 1, d)) != 0) goto out;
    if ((rc = dir_refusal(sim, d, "sync directory")) != 0) goto out;
    if (ti_sim_nsops_retire(sim, d, 1, 1) != 0) {
        /* Effects applied so far are durable and retired; the rest stay
         * pending. Invariant 2 holds either way; an inode the applied
         * effects unnamed goes at the gc. */
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: sync directory: out of memory", d);
    } else {
        count(&sim->io.syncs, 1);
    }
    ti_sim_gc(sim);
out:
    ti_sim_unlock(sim);
    return rc;
}

static int sim_stat(tide_io *io, const char *path, int *isdir)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    int rc;

    if ((rc = path_enter(sim, path, "stat", 0, p)) != 0) goto out;
    if (ti_sim_ns_get(&sim->cur_ns, p)) {
        if (isdir) *isdir = 0;
    } else if (ti_sim_is_dir(sim, p)) {
        if (isdir) *isdir = 1;
    } else {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: stat: no such file or directory", p);
    }
out:
    ti_sim_unlock(sim);
    return rc;
}

static int sim_mkdir(tide_io *io, const char *path)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    int rc;

    if ((rc = path_enter(sim, path, "mkdir", 1, p)) != 0) goto out;
    if (ti_sim_ns_get(&sim->cur_ns, p) || ti_sim_is_dir(sim, p)) {
        rc = tide_err_set(TIDE_EEXIST, "sim: %s: mkdir: the %s exists", p,
                          ti_sim_ns_get(&sim->cur_ns, p) ? "file" : "directory");
        goto out;
    }
    if (!ti_sim_parent_exists(sim, p)) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: mkdir: no such parent directory", p);
        goto out;
    }
    if (ti_sim_dirop_add(sim, p, SIM_MKDIR) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: mkdir: out of memory", p);
        goto out;
    }
    if (ti_sim_dirset_put(&sim->dirs, p, 1) != 0) {
        ti_sim_nsop_free(&sim->nsops[--sim->nnsops]);
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: mkdir: out of memory", p);
    }
out:
    ti_sim_unlock(sim);
    return rc;
}

/* Does anything current (a file, or a directory made) lie under `dir`? */
static int has_entries(const tide_io_sim *sim, const char *dir)
{
    for (size_t i = 0; i < sim->cur_ns.n; i++)
        if (ti_sim_under(sim->cur_ns.e[i].path, dir)) return 1;
    for (size_t i = 0; i < sim->dirs.n; i++)
        if (ti_sim_under(sim->dirs.v[i], dir)) return 1;
    return 0;
}

static int sim_rmdir(tide_io *io, const char *path)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    int rc;

    if ((rc = path_enter(sim, path, "rmdir", 0, p)) != 0) goto out;
    if ((rc = dir_refusal(sim, p, "rmdir")) != 0) goto out;
    /* A directory only a file under it makes (never mkdir'd) has that
     * file; the root and a bare name's "" always have the rest. */
    if (has_entries(sim, p) || !ti_sim_dirset_has(&sim->dirs, p)) {
        rc = tide_err_set(TIDE_ENOTEMPTY, "sim: %s: rmdir: directory not empty", p);
        goto out;
    }
    if (ti_sim_dirop_add(sim, p, SIM_RMDIR) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: rmdir: out of memory", p);
        goto out;
    }
    ti_sim_dirset_put(&sim->dirs, p, 0);
out:
    ti_sim_unlock(sim);
    return rc;
}

/* One entry of a listing: the name, a NUL, then is_dir as one byte. */
static int list_add(char ***v, size_t *n, size_t *cap, const char *name, size_t len, int is_dir)
{
    char *e;

    for (size_t i = 0; i < *n; i++)
        if (strncmp((*v)[i], name, len) == 0 && (*v)[i][len] == '\0') return 0;
    if (ti_sim_grow(v, cap, *n + 1, sizeof **v) != 0 || (e = malloc(len + 2)) == NULL)
        return TIDE_ENOMEM;
    memcpy(e, name, len);
    e[len] = '\0';
    e[len + 1] = (char)is_dir;
    (*v)[(*n)++] = e;
    return 0;
}

/* The first component of `path` below `dir` (prefix `pre`, `np` bytes)
 * as an entry: a directory when more follows it. */
static int list_path(char ***v, size_t *n, size_t *cap, const char *path, const char *pre,
                     size_t np, int is_dir)
{
    const char *rest, *slash;

    if (strncmp(path, pre, np) != 0 || path[np] == '\0') return 0;
    rest = path + np;
    slash = strchr(rest, '/');
    if (slash) return list_add(v, n, cap, rest, (size_t)(slash - rest), 1);
    return list_add(v, n, cap, rest, strlen(rest), is_dir);
}

/* The entries of directory `d` in the current namespace, into *v. */
static int list_collect(tide_io_sim *sim, const char *d, char ***v, size_t *n)
{
    char pre[SIM_PATH_MAX + 1];
    size_t cap = 0, np;

    np = (size_t)snprintf(pre, sizeof pre, "%s%s", d, strcmp(d, "/") == 0 ? "" : "/");
    for (size_t i = 0; i < sim->cur_ns.n; i++)
        if (list_path(v, n, &cap, sim->cur_ns.e[i].path, pre, np, 0) != 0) return TIDE_ENOMEM;
    for (size_t i = 0; i < sim->dirs.n; i++)
        if (list_path(v, n, &cap, sim->dirs.v[i], pre, np, 1) != 0) return TIDE_ENOMEM;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sim_list(tide_io *io, const char *dir,
                    int (*fn)(void *arg, const char *name, int is_dir), void *arg)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char d[SIM_PATH_MAX], **v = NULL;
    size_t n = 0;
    int rc;

    if ((rc = path_enter(sim, dir, "list", 0, d)) != 0) goto out;
    if ((rc = dir_refusal(sim, d, "list")) != 0) goto out;
    if (list_collect(sim, d, &v, &n) != 0)
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: list: out of memory", d);
out:
    ti_sim_unlock(sim);                 /* fn runs outside the sim */
    if (rc == 0 && n > 1) qsort(v, n, sizeof *v, by_name);
    for (size_t i = 0; rc == 0 && i < n; i++) rc = fn(arg, v[i], v[i][strlen(v[i]) + 1]);
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
    return rc;
}

/* Not counted, never faulted: the holders tide_io_sim_add_holder made. */
static int sim_holders(tide_io *io, const char *const *paths, unsigned n, tide_io_holder *out,
                       size_t cap, size_t *count)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];

    *count = 0;
    ti_sim_lock(sim);
    for (size_t h = 0; h < sim->nholders; h++)
        for (unsigned i = 0; i < n; i++) {
            if (ti_sim_norm(paths[i], p, "holders") != 0 || strcmp(p, sim->holders[h].path) != 0)
                continue;
            if (ti_sim_ns_get(&sim->cur_ns, p) == NULL) continue;
            if (*count < cap) {
                out[*count].pid = sim->holders[h].pid;
                out[*count].path = i;
                snprintf(out[*count].comm, sizeof out[*count].comm, "%s", sim->holders[h].comm);
            }
            (*count)++;
            break;
        }
    ti_sim_unlock(sim);
    tide_err_clear();
    return 0;
}

const tide_io ti_sim_io_template = {
    .open = sim_open,
    .close = sim_close,
    .read_at = sim_read_at,
    .write_at = sim_write_at,
    .sync = sim_sync,
    .truncate = sim_truncate,
    .size = sim_size,
    .lock = sim_lock,
    .unlink = sim_unlink,
    .rename = sim_rename,
    .sync_dir = sim_sync_dir,
    .stat = sim_stat,
    .free_bytes = ti_sim_free_bytes,
    .mkdir = sim_mkdir,
    .rmdir = sim_rmdir,
    .list = sim_list,
    .holders = sim_holders,
    .map = ti_sim_map,
    .unmap = ti_sim_unmap,
    .map_resident = ti_sim_map_resident,
};
