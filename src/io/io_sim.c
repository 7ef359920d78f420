/*
 * io_sim.c: a simulated file system in memory, for tests.
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
 * is both). Directories are not objects: a directory exists when
 * tide_io_sim_mkdir made it (or a child of it), or when a current file lies
 * under it; they are always durable.
 *
 *   sync(f)        durable image := current image; f's pending ops go.
 *   sync_dir(d)    every pending effect on a path whose directory is d is
 *                  applied to the durable namespace, in order, and removed
 *                  (so a rename across directories becomes durable half by
 *                  half, as each directory is synced).
 *   crash(seed)    a subset of the pending operations (data and namespace)
 *                  is applied, in order, to the durable state; writes may be
 *                  torn at a 512-byte file boundary. Then current := durable,
 *                  nothing is pending, old handles are dead.
 *
 * Invariants:
 *   1. For every inode, current image == durable image with its pending
 *      operations (in sim->ops, in order) applied in order, each write
 *      growing the file with zeros up to its offset, each truncate cutting
 *      or zero-extending.
 *   2. Current namespace == durable namespace with the effects of
 *      sim->nsops applied in order.
 *   3. An inode lives while it is named by either namespace or by a pending
 *      effect, or held by a handle of the present generation; gc() frees the
 *      others together with their pending operations, so every op in
 *      sim->ops belongs to a live inode.
 *   4. A handle whose gen differs from sim->gen (it predates a crash) never
 *      touches its inode: every call on it fails with TIDE_EIO before
 *      looking, and close only frees the handle.
 *   5. Bytes beyond an image's size up to its capacity are not relied on:
 *      growth always zero-fills the gap it opens.
 *   6. Everything runs under sim->mu; the tide_io counters are also updated
 *      with relaxed atomics so readers outside the sim need no lock.
 *
 * Decisions a test relies on:
 *   - Counted calls: open, read_at, write_at, sync, truncate, size, lock,
 *     unlink, rename, sync_dir, stat, whatever their outcome (also on a dead
 *     handle). close is not counted and never fails; nor are the test
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
 *
 * Never: let a dead handle reach its inode (the crash may have freed it);
 *   never call out of the sim (no callbacks) while holding sim->mu.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_sim.h"
#include "util/err.h"

#define SIM_PATH_MAX 1024
#define SIM_FILE_MAX ((uint64_t)1 << 30)   /* per file: a test never needs more */
#define SECTOR 512u

typedef struct image {
    uint8_t *b;
    uint64_t size;
    size_t cap;
} image;

typedef struct inode inode;
struct inode {
    inode *next;
    image dur, cur;
    image stage_dur, stage_cur;   /* crash: built first, swapped in after */
    uint64_t npending;            /* ops in sim->ops on this inode */
    int handles;                  /* open handles of the present generation */
    int shared_locks, excl_locks;
    int mark;                     /* gc and clone scratch */
    inode *copy;                  /* clone scratch */
    char special[24];             /* "" a regular file, else what it is ("a FIFO") */
    uint64_t writes, bytes_written, reads, bytes_read, syncs;
};

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

typedef struct ns {
    entry *e;
    size_t n, cap;
} ns;

typedef struct effect {
    char *path;                   /* NULL once applied by a sync_dir */
    inode *ino;                   /* NULL: the path names nothing */
} effect;

typedef struct nsop {
    effect eff[2];
} nsop;

struct tide_io_sim {
    tide_io io;                   /* first: a tide_io * is a tide_io_sim * */
    pthread_mutex_t mu;
    inode *inodes;
    ns cur_ns, dur_ns;
    char **dirs;
    size_t ndirs, dirs_cap;
    op *ops;
    size_t nops, ops_cap;
    nsop *nsops;
    size_t nnsops, nsops_cap;
    uint64_t calls, faults, gen, capacity;
    tide_io_sim_fault fault;
    uint64_t fault_at;            /* absolute call number */
    int fault_persistent;
    struct sim_holder { char path[SIM_PATH_MAX]; int pid; char comm[32]; } *holders;
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

static void count(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z;

    *s += 0x9E3779B97F4A7C15ull;
    z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
    void **arr = arrp;
    size_t c = *cap ? *cap : 8;
    void *p;

    if (need <= *cap) return 0;
    while (c < need) c *= 2;
    p = realloc(*arr, c * elem);
    if (p == NULL) return TIDE_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

/* ---- images ---- */

static int img_reserve(image *m, uint64_t need)
{
    size_t c = m->cap ? m->cap : 4096;
    uint8_t *p;

    if (need <= m->cap) return 0;
    while (c < need) c *= 2;
    p = realloc(m->b, c);
    if (p == NULL) return TIDE_ENOMEM;
    m->b = p;
    m->cap = c;
    return 0;
}

/* Write `len` bytes at `off`, zero-filling any gap. No effect on failure. */
static int img_write(image *m, uint64_t off, const void *p, size_t len)
{
    uint64_t end = off + len;

    if (len == 0) return 0;
    if (img_reserve(m, end) != 0) return TIDE_ENOMEM;
    if (off > m->size) memset(m->b + m->size, 0, off - m->size);
    memcpy(m->b + off, p, len);
    if (end > m->size) m->size = end;
    return 0;
}

static int img_truncate(image *m, uint64_t size)
{
    if (size > m->size) {
        if (img_reserve(m, size) != 0) return TIDE_ENOMEM;
        memset(m->b + m->size, 0, size - m->size);
    }
    m->size = size;
    return 0;
}

/* dst := src, reusing dst's buffer. No effect on failure. */
static int img_assign(image *dst, const image *src)
{
    if (img_reserve(dst, src->size) != 0) return TIDE_ENOMEM;
    if (src->size) memcpy(dst->b, src->b, src->size);
    dst->size = src->size;
    return 0;
}

static void img_free(image *m)
{
    free(m->b);
    memset(m, 0, sizeof *m);
}

/* ---- paths ---- */

/* Collapse repeated '/', drop a trailing one. */
static int norm(const char *in, char *out, const char *op)
{
    size_t n = 0;

    if (in == NULL || *in == '\0')
        return tide_err_set(TIDE_ENOENT, "sim: %s: empty path", op);
    for (const char *p = in; *p; p++) {
        if (*p == '/' && n > 0 && out[n - 1] == '/') continue;
        if (n + 1 >= SIM_PATH_MAX)
            return tide_err_set(TIDE_EIO, "sim: %.64s...: %s: path longer than %d bytes", in, op,
                                SIM_PATH_MAX - 1);
        out[n++] = *p;
    }
    if (n > 1 && out[n - 1] == '/') n--;
    out[n] = '\0';
    return 0;
}

/* Length of the directory part: before the last '/', "/" for "/name",
 * "" (0) for a bare name. */
static size_t dir_len(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) return 0;
    if (slash == path) return 1;
    return (size_t)(slash - path);
}

static int in_dir(const char *path, const char *dir)
{
    size_t n = dir_len(path);
    return strlen(dir) == n && strncmp(path, dir, n) == 0;
}

/* ---- namespaces ---- */

static long ns_find(const ns *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].path, path) == 0) return (long)i;
    return -1;
}

static inode *ns_get(const ns *s, const char *path)
{
    long i = ns_find(s, path);
    return i < 0 ? NULL : s->e[i].ino;
}

/* path names ino (NULL: nothing). No effect on failure. */
static int ns_set(ns *s, const char *path, inode *ino)
{
    long i = ns_find(s, path);
    char *copy;

    if (ino == NULL) {
        if (i >= 0) {
            free(s->e[i].path);
            s->e[i] = s->e[--s->n];
        }
        return 0;
    }
    if (i >= 0) {
        s->e[i].ino = ino;
        return 0;
    }
    if (grow(&s->e, &s->cap, s->n + 1, sizeof *s->e) != 0) return TIDE_ENOMEM;
    if ((copy = strdup(path)) == NULL) return TIDE_ENOMEM;
    s->e[s->n++] = (entry){ copy, ino };
    return 0;
}

static void ns_free(ns *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].path);
    free(s->e);
    memset(s, 0, sizeof *s);
}

/* dst := a copy of src (dst empty). No effect on failure. */
static int ns_copy(ns *dst, const ns *src, int only_marked)
{
    ns t = { 0 };

    for (size_t i = 0; i < src->n; i++) {
        inode *ino = src->e[i].ino;
        if (only_marked) {
            if (!ino->mark) continue;
            ino = ino->copy;
        }
        if (ns_set(&t, src->e[i].path, ino) != 0) { ns_free(&t); return TIDE_ENOMEM; }
    }
    *dst = t;
    return 0;
}

static void nsop_free(nsop *o)
{
    free(o->eff[0].path);
    free(o->eff[1].path);
}

/* Append a namespace operation of one or two effects. No effect on
 * failure. */
static int nsop_add(tide_io_sim *sim, const char *p0, inode *i0, const char *p1, inode *i1)
{
    nsop o = { { { NULL, i0 }, { NULL, i1 } } };

    if (grow(&sim->nsops, &sim->nsops_cap, sim->nnsops + 1, sizeof *sim->nsops) != 0)
        return TIDE_ENOMEM;
    if ((o.eff[0].path = strdup(p0)) == NULL) return TIDE_ENOMEM;
    if (p1 && (o.eff[1].path = strdup(p1)) == NULL) { free(o.eff[0].path); return TIDE_ENOMEM; }
    sim->nsops[sim->nnsops++] = o;
    return 0;
}

static int is_dir(const tide_io_sim *sim, const char *path)
{
    size_t n = strlen(path);

    if (n == 0 || strcmp(path, "/") == 0) return 1;
    for (size_t i = 0; i < sim->ndirs; i++)
        if (strcmp(sim->dirs[i], path) == 0) return 1;
    for (size_t i = 0; i < sim->cur_ns.n; i++) {
        const char *p = sim->cur_ns.e[i].path;
        if (strncmp(p, path, n) == 0 && p[n] == '/') return 1;
    }
    return 0;
}

/* Does the directory of `path` exist? */
static int parent_exists(const tide_io_sim *sim, const char *path)
{
    char d[SIM_PATH_MAX];
    size_t n = dir_len(path);

    memcpy(d, path, n);
    d[n] = '\0';
    return is_dir(sim, d);
}

/* ---- inodes and pending operations ---- */

static inode *inode_new(tide_io_sim *sim)
{
    inode *ino = calloc(1, sizeof *ino);
    if (ino == NULL) return NULL;
    ino->next = sim->inodes;
    sim->inodes = ino;
    return ino;
}

static void inode_free(inode *ino)
{
    img_free(&ino->dur);
    img_free(&ino->cur);
    img_free(&ino->stage_dur);
    img_free(&ino->stage_cur);
    free(ino);
}

/* Remove the pending ops on `ino` from the sim's list (the caller fixes
 * ino->npending). */
static void ops_drop(tide_io_sim *sim, const inode *ino)
{
    size_t w = 0;

    for (size_t r = 0; r < sim->nops; r++) {
        if (sim->ops[r].ino == ino) free(sim->ops[r].data);
        else sim->ops[w++] = sim->ops[r];
    }
    sim->nops = w;
}

static void ops_clear(tide_io_sim *sim)
{
    for (size_t i = 0; i < sim->nops; i++) free(sim->ops[i].data);
    sim->nops = 0;
    for (inode *i = sim->inodes; i; i = i->next) i->npending = 0;
}

/* Mark the inodes a name, a pending effect or (with_handles) a handle
 * reaches. */
static void mark_live(tide_io_sim *sim, int with_handles)
{
    for (inode *i = sim->inodes; i; i = i->next) i->mark = with_handles && i->handles > 0;
    for (size_t k = 0; k < sim->cur_ns.n; k++) sim->cur_ns.e[k].ino->mark = 1;
    for (size_t k = 0; k < sim->dur_ns.n; k++) sim->dur_ns.e[k].ino->mark = 1;
    for (size_t k = 0; k < sim->nnsops; k++)
        for (int j = 0; j < 2; j++)
            if (sim->nsops[k].eff[j].path && sim->nsops[k].eff[j].ino)
                sim->nsops[k].eff[j].ino->mark = 1;
}

/* Free every inode nothing reaches, with its pending ops (invariant 3). */
static void gc(tide_io_sim *sim)
{
    inode **pp = &sim->inodes;

    mark_live(sim, 1);
    while (*pp) {
        inode *i = *pp;
        if (i->mark) { pp = &i->next; continue; }
        *pp = i->next;
        if (i->npending) ops_drop(sim, i);
        inode_free(i);
    }
}

/* Sum of the current sizes of live files: named now, or open. */
static uint64_t usage(const tide_io_sim *sim)
{
    uint64_t total = 0;

    for (inode *i = sim->inodes; i; i = i->next) {
        int live = i->handles > 0;
        for (size_t k = 0; !live && k < sim->cur_ns.n; k++) live = sim->cur_ns.e[k].ino == i;
        if (live) total += i->cur.size;
    }
    return total;
}

/* A write of [off, off + len) or a truncate to off (len == 0 and
 * is_truncate): is the file size allowed and is there room? */
static int check_room(tide_io_sim *sim, const char *path, inode *ino, const char *what,
                      uint64_t off, uint64_t new_size)
{
    uint64_t used;

    if (new_size > SIM_FILE_MAX || new_size < off)
        return tide_err_set(TIDE_EIO, "sim: %s: %s at offset %llu: the file would pass the "
                            "sim's limit of %llu bytes", path, what, (unsigned long long)off,
                            (unsigned long long)SIM_FILE_MAX);
    if (new_size <= ino->cur.size || sim->capacity == UINT64_MAX) return 0;
    used = usage(sim);
    if (used + (new_size - ino->cur.size) > sim->capacity)
        return tide_err_set(TIDE_ENOSPC, "sim: %s: %s at offset %llu: no space: %llu bytes in "
                            "use, %llu more needed, capacity %llu", path, what,
                            (unsigned long long)off, (unsigned long long)used,
                            (unsigned long long)(new_size - ino->cur.size),
                            (unsigned long long)sim->capacity);
    return 0;
}

/* Record and apply a pending write. No effect on failure. */
static int pend_write(tide_io_sim *sim, inode *ino, uint64_t off, const void *p, size_t len)
{
    uint8_t *copy;

    if (len == 0) return 0;
    if (grow(&sim->ops, &sim->ops_cap, sim->nops + 1, sizeof *sim->ops) != 0) return TIDE_ENOMEM;
    if (img_reserve(&ino->cur, off + len) != 0) return TIDE_ENOMEM;
    if ((copy = malloc(len)) == NULL) return TIDE_ENOMEM;
    memcpy(copy, p, len);
    img_write(&ino->cur, off, p, len);          /* cannot fail: reserved */
    sim->ops[sim->nops++] = (op){ ino, 0, off, len, copy };
    ino->npending++;
    return 0;
}

static int pend_truncate(tide_io_sim *sim, inode *ino, uint64_t size)
{
    if (grow(&sim->ops, &sim->ops_cap, sim->nops + 1, sizeof *sim->ops) != 0) return TIDE_ENOMEM;
    if (img_truncate(&ino->cur, size) != 0) return TIDE_ENOMEM;
    sim->ops[sim->nops++] = (op){ ino, 1, size, 0, NULL };
    ino->npending++;
    return 0;
}

/* ---- calls: counting, faults, handles ---- */

/* Count a call; return the fault it must suffer (TIDE_IO_SIM_NONE: none). */
static tide_io_sim_fault enter(tide_io_sim *sim)
{
    uint64_t c = ++sim->calls;

    if (sim->fault == TIDE_IO_SIM_NONE) return TIDE_IO_SIM_NONE;
    if (c == sim->fault_at || (sim->fault_persistent && c > sim->fault_at)) {
        sim->faults++;
        return sim->fault;
    }
    return TIDE_IO_SIM_NONE;
}

/* The code a fault of `kind` gives a call that may (or may not) fail with
 * ENOSPC. */
static int fault_code(tide_io_sim_fault kind, int can_enospc)
{
    return kind == TIDE_IO_SIM_ENOSPC && can_enospc ? TIDE_ENOSPC : TIDE_EIO;
}

/* What a failure of `kind` that returns `code` is called in messages. */
static const char *fault_label(tide_io_sim_fault kind, int code)
{
    if (code == TIDE_ENOSPC) return "ENOSPC";
    if (kind == TIDE_IO_SIM_EIO || kind == TIDE_IO_SIM_ENOSPC) return "EIO";
    return kind == TIDE_IO_SIM_SHORT_WRITE ? "short write (as EIO)" : "sync failure (as EIO)";
}

static int injected(tide_io_sim *sim, tide_io_sim_fault kind, int code, const char *path,
                    const char *what, uint64_t off)
{
    if (off == UINT64_MAX)
        return tide_err_set(code, "sim: %s: %s: injected %s (call %llu)", path, what,
                            fault_label(kind, code), (unsigned long long)sim->calls);
    return tide_err_set(code, "sim: %s: %s at offset %llu: injected %s (call %llu)", path, what,
                        (unsigned long long)off, fault_label(kind, code),
                        (unsigned long long)sim->calls);
}

static int dead(tide_file *f, const char *what)
{
    return tide_err_set(TIDE_EIO, "sim: %s: %s: the handle was opened before a crash", f->path,
                        what);
}

/* ---- the tide_io ---- */

static int sim_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    tide_file *f = NULL;
    inode *ino = NULL, *made = NULL;
    int create = (flags & TIDE_IO_CREATE) != 0;
    tide_io_sim_fault k;
    int rc;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, fault_code(k, create), path, "open", UINT64_MAX); goto out; }
    if ((rc = norm(path, p, "open")) != 0) goto out;
    ino = ns_get(&sim->cur_ns, p);
    if (ino && create && (flags & TIDE_IO_EXCL)) {
        rc = tide_err_set(TIDE_EEXIST, "sim: %s: open: the file exists (O_EXCL)", p);
        goto out;
    }
    if (ino && ino->special[0]) {
        rc = tide_err_set(TIDE_ENOTSTORE, "sim: %s: is %s, not a regular file: a store's files are "
                          "regular files; nothing was opened", p, ino->special);
        goto out;
    }
    if (ino == NULL) {
        if (is_dir(sim, p)) {
            rc = tide_err_set(TIDE_ENOTSTORE, "sim: %s: is a directory, not a regular file: a "
                              "store's files are regular files; nothing was opened", p);
            goto out;
        }
        if (!create) { rc = tide_err_set(TIDE_ENOENT, "sim: %s: open: no such file", p); goto out; }
        if (!parent_exists(sim, p)) {
            rc = tide_err_set(TIDE_ENOENT, "sim: %s: open: no such directory", p);
            goto out;
        }
    }
    f = malloc(sizeof *f + strlen(p) + 1);
    if (f == NULL) { rc = tide_err_set(TIDE_ENOMEM, "sim: %s: open: out of memory", p); goto out; }
    if (ino == NULL) {
        if ((made = ino = inode_new(sim)) == NULL
            || ns_set(&sim->cur_ns, p, ino) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: open: out of memory", p);
            goto out;
        }
        if (nsop_add(sim, p, ino, NULL, NULL) != 0) {
            ns_set(&sim->cur_ns, p, NULL);
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: open: out of memory", p);
            goto out;
        }
        made = NULL;
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
    rc = 0;
out:
    free(f);
    if (made) gc(sim);
    pthread_mutex_unlock(&sim->mu);
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
    pthread_mutex_lock(&sim->mu);
    if (f->gen == sim->gen) {
        unlock_handle(f);
        f->ino->handles--;
        gc(sim);
    }
    pthread_mutex_unlock(&sim->mu);
    free(f);
}

static int sim_read_at(tide_file *f, void *buf, size_t len, uint64_t off)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    inode *ino;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, TIDE_EIO, f->path, "read", off); goto out; }
    if (f->gen != sim->gen) { rc = dead(f, "read"); goto out; }
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
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_write_at(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    inode *ino;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k && k != TIDE_IO_SIM_SHORT_WRITE) {
        rc = injected(sim, k, fault_code(k, 1), f->path, "write", off);
        goto out;
    }
    if (f->gen != sim->gen) { rc = dead(f, "write"); goto out; }
    if (!f->writable) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: write at offset %llu: opened read-only", f->path,
                          (unsigned long long)off);
        goto out;
    }
    ino = f->ino;
    if (k == TIDE_IO_SIM_SHORT_WRITE) {
        /* The prefix up to the last sector boundary at or below the middle;
         * it obeys the capacity like any write, and may be empty. */
        uint64_t mid = off + len / 2, cut = mid - mid % SECTOR;
        size_t part = cut > off ? (size_t)(cut - off) : 0;
        uint64_t end = off + part > ino->cur.size ? off + part : ino->cur.size;
        if (part && (check_room(sim, f->path, ino, "write", off, end) != 0
                     || pend_write(sim, ino, off, buf, part) != 0))
            part = 0;
        rc = tide_err_set(TIDE_EIO, "sim: %s: write at offset %llu: injected short write (call "
                          "%llu): %zu of %zu bytes written", f->path, (unsigned long long)off,
                          (unsigned long long)sim->calls, part, len);
        goto out;
    }
    if ((rc = check_room(sim, f->path, ino, "write", off,
                         off + len > ino->cur.size ? off + len : ino->cur.size)) != 0)
        goto out;
    if (pend_write(sim, ino, off, buf, len) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: write at offset %llu: out of memory", f->path,
                          (unsigned long long)off);
        goto out;
    }
    ino->writes++;
    ino->bytes_written += len;
    count(&sim->io.writes, 1);
    count(&sim->io.bytes_written, len);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_sync(tide_file *f)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    inode *ino;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k && k != TIDE_IO_SIM_SYNC_FAIL) {
        rc = injected(sim, k, fault_code(k, 1), f->path, "sync", UINT64_MAX);
        goto out;
    }
    if (f->gen != sim->gen) { rc = dead(f, "sync"); goto out; }
    ino = f->ino;
    if (k == TIDE_IO_SIM_SYNC_FAIL) {
        uint64_t lost = ino->npending;
        if (img_assign(&ino->cur, &ino->dur) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: sync: out of memory", f->path);
            goto out;
        }
        ops_drop(sim, ino);
        ino->npending = 0;
        rc = tide_err_set(TIDE_EIO, "sim: %s: sync: injected sync failure (call %llu): %llu "
                          "pending operations dropped, the file is back to its last synced "
                          "%llu bytes", f->path, (unsigned long long)sim->calls,
                          (unsigned long long)lost, (unsigned long long)ino->cur.size);
        goto out;
    }
    if (ino->npending) {
        if (img_assign(&ino->dur, &ino->cur) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: sync: out of memory", f->path);
            goto out;
        }
        ops_drop(sim, ino);
        ino->npending = 0;
    }
    ino->syncs++;
    count(&sim->io.syncs, 1);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_truncate(tide_file *f, uint64_t size)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    inode *ino;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, fault_code(k, 1), f->path, "truncate", size); goto out; }
    if (f->gen != sim->gen) { rc = dead(f, "truncate"); goto out; }
    if (!f->writable) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: truncate at offset %llu: opened read-only",
                          f->path, (unsigned long long)size);
        goto out;
    }
    ino = f->ino;
    if ((rc = check_room(sim, f->path, ino, "truncate", size, size)) != 0) goto out;
    if (pend_truncate(sim, ino, size) != 0)
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: truncate at offset %llu: out of memory",
                          f->path, (unsigned long long)size);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_size(tide_file *f, uint64_t *out)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) rc = injected(sim, k, TIDE_EIO, f->path, "size", UINT64_MAX);
    else if (f->gen != sim->gen) rc = dead(f, "size");
    else *out = f->ino->cur.size;
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_lock(tide_file *f, int exclusive)
{
    tide_io_sim *sim = f->sim;
    tide_io_sim_fault k;
    int rc = 0, shared, excl;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, TIDE_EIO, f->path, "lock", UINT64_MAX); goto out; }
    if (f->gen != sim->gen) { rc = dead(f, "lock"); goto out; }
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
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_unlink(tide_io *io, const char *path)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    tide_io_sim_fault k;
    int rc;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, TIDE_EIO, path, "unlink", UINT64_MAX); goto out; }
    if ((rc = norm(path, p, "unlink")) != 0) goto out;
    if (ns_get(&sim->cur_ns, p) == NULL) {
        rc = is_dir(sim, p) ? tide_err_set(TIDE_EIO, "sim: %s: unlink: is a directory", p)
                            : tide_err_set(TIDE_ENOENT, "sim: %s: unlink: no such file", p);
        goto out;
    }
    if (nsop_add(sim, p, NULL, NULL, NULL) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: unlink: out of memory", p);
        goto out;
    }
    ns_set(&sim->cur_ns, p, NULL);
    gc(sim);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_rename(tide_io *io, const char *from, const char *to)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char a[SIM_PATH_MAX], b[SIM_PATH_MAX];
    tide_io_sim_fault k;
    inode *ino;
    int rc;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, fault_code(k, 1), from, "rename", UINT64_MAX); goto out; }
    if ((rc = norm(from, a, "rename")) != 0 || (rc = norm(to, b, "rename")) != 0) goto out;
    if ((ino = ns_get(&sim->cur_ns, a)) == NULL) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: rename to %s: no such file", a, b);
        goto out;
    }
    if (ns_get(&sim->cur_ns, b) == NULL && is_dir(sim, b)) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: rename to %s: the target is a directory", a, b);
        goto out;
    }
    if (!parent_exists(sim, b)) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: rename to %s: no such directory", a, b);
        goto out;
    }
    if (strcmp(a, b) == 0) goto out;
    if (nsop_add(sim, a, NULL, b, ino) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: rename to %s: out of memory", a, b);
        goto out;
    }
    if (ns_set(&sim->cur_ns, b, ino) != 0) {
        nsop_free(&sim->nsops[--sim->nnsops]);
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: rename to %s: out of memory", a, b);
        goto out;
    }
    ns_set(&sim->cur_ns, a, NULL);
    gc(sim);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

/* Apply to the durable namespace, and retire, every pending effect on a
 * path in `dir`. */
static int apply_dir(tide_io_sim *sim, const char *dir)
{
    size_t w = 0;

    for (size_t r = 0; r < sim->nnsops; r++) {
        nsop *o = &sim->nsops[r];
        for (int j = 0; j < 2; j++) {
            effect *e = &o->eff[j];
            if (e->path == NULL || !in_dir(e->path, dir)) continue;
            if (ns_set(&sim->dur_ns, e->path, e->ino) != 0) return TIDE_ENOMEM;
            free(e->path);
            e->path = NULL;
        }
        if (o->eff[0].path || o->eff[1].path) sim->nsops[w++] = *o;
    }
    sim->nnsops = w;
    return 0;
}

static int sim_sync_dir(tide_io *io, const char *dir)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char d[SIM_PATH_MAX];
    tide_io_sim_fault k;
    int rc;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, fault_code(k, 1), dir, "sync directory", UINT64_MAX); goto out; }
    if ((rc = norm(dir, d, "sync directory")) != 0) goto out;
    if (ns_get(&sim->cur_ns, d) != NULL) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: sync directory: not a directory", d);
        goto out;
    }
    if (!is_dir(sim, d)) {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: sync directory: no such directory", d);
        goto out;
    }
    if (apply_dir(sim, d) != 0) {
        /* Effects applied so far are durable and retired; the rest stay
         * pending. Invariant 2 holds either way. */
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: sync directory: out of memory", d);
        goto out;
    }
    gc(sim);
    count(&sim->io.syncs, 1);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_stat(tide_io *io, const char *path, int *isdir)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];
    tide_io_sim_fault k;
    int rc;

    pthread_mutex_lock(&sim->mu);
    k = enter(sim);
    if (k) { rc = injected(sim, k, TIDE_EIO, path, "stat", UINT64_MAX); goto out; }
    if ((rc = norm(path, p, "stat")) != 0) goto out;
    if (ns_get(&sim->cur_ns, p)) {
        if (isdir) *isdir = 0;
    } else if (is_dir(sim, p)) {
        if (isdir) *isdir = 1;
    } else {
        rc = tide_err_set(TIDE_ENOENT, "sim: %s: stat: no such file or directory", p);
    }
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int sim_holders(tide_io *io, const char *const *paths, unsigned n, tide_io_holder *out,
                       size_t cap, size_t *count)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    char p[SIM_PATH_MAX];

    *count = 0;
    pthread_mutex_lock(&sim->mu);
    for (size_t h = 0; h < sim->nholders; h++)
        for (unsigned i = 0; i < n; i++) {
            if (norm(paths[i], p, "holders") != 0 || strcmp(p, sim->holders[h].path) != 0) continue;
            if (ns_get(&sim->cur_ns, p) == NULL) continue;
            if (*count < cap) {
                out[*count].pid = sim->holders[h].pid;
                out[*count].path = i;
                snprintf(out[*count].comm, sizeof out[*count].comm, "%s", sim->holders[h].comm);
            }
            (*count)++;
            break;
        }
    pthread_mutex_unlock(&sim->mu);
    tide_err_clear();
    return 0;
}

int tide_io_sim_add_holder(tide_io_sim *sim, const char *path, int pid, const char *comm)
{
    struct sim_holder *h;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    h = realloc(sim->holders, (sim->nholders + 1) * sizeof *h);
    if (h == NULL) { rc = tide_err_set(TIDE_ENOMEM, "sim: add holder: out of memory"); goto out; }
    sim->holders = h;
    h += sim->nholders;
    if ((rc = norm(path, h->path, "add holder")) != 0) goto out;
    h->pid = pid;
    snprintf(h->comm, sizeof h->comm, "%s", comm ? comm : "?");
    sim->nholders++;
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

void tide_io_sim_clear_holders(tide_io_sim *sim)
{
    pthread_mutex_lock(&sim->mu);
    sim->nholders = 0;
    pthread_mutex_unlock(&sim->mu);
}

static const tide_io sim_io_template = {
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
    .holders = sim_holders,
};

/* ---- life ---- */

int tide_io_sim_create(tide_io_sim **out)
{
    tide_io_sim *sim = calloc(1, sizeof *sim);

    if (sim == NULL) return tide_err_set(TIDE_ENOMEM, "sim: create: out of memory");
    sim->io = sim_io_template;
    pthread_mutex_init(&sim->mu, NULL);
    sim->capacity = UINT64_MAX;
    *out = sim;
    return 0;
}

void tide_io_sim_destroy(tide_io_sim *sim)
{
    if (sim == NULL) return;
    ops_clear(sim);
    free(sim->ops);
    for (size_t i = 0; i < sim->nnsops; i++) nsop_free(&sim->nsops[i]);
    free(sim->nsops);
    ns_free(&sim->cur_ns);
    ns_free(&sim->dur_ns);
    for (size_t i = 0; i < sim->ndirs; i++) free(sim->dirs[i]);
    free(sim->dirs);
    free(sim->holders);
    while (sim->inodes) {
        inode *i = sim->inodes;
        sim->inodes = i->next;
        inode_free(i);
    }
    pthread_mutex_destroy(&sim->mu);
    free(sim);
}

tide_io *tide_io_sim_io(tide_io_sim *sim)
{
    return &sim->io;
}

int tide_io_sim_clone(tide_io_sim *sim, tide_io_sim **out)
{
    tide_io_sim *c = NULL;
    int rc;

    if ((rc = tide_io_sim_create(&c)) != 0) return rc;
    pthread_mutex_lock(&sim->mu);
    mark_live(sim, 0);
    /* Inodes, in the same order. */
    {
        inode **tail = &c->inodes;
        for (inode *i = sim->inodes; i; i = i->next) {
            inode *n;
            i->copy = NULL;
            if (!i->mark) continue;
            if ((n = calloc(1, sizeof *n)) == NULL) goto nomem;
            *tail = n;
            tail = &n->next;
            i->copy = n;
            if (img_assign(&n->dur, &i->dur) != 0 || img_assign(&n->cur, &i->cur) != 0) goto nomem;
            n->writes = i->writes;
            n->bytes_written = i->bytes_written;
            n->reads = i->reads;
            n->bytes_read = i->bytes_read;
            n->syncs = i->syncs;
            memcpy(n->special, i->special, sizeof n->special);
        }
    }
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        op n = *o;
        if (!o->ino->mark) continue;
        n.ino = o->ino->copy;
        n.data = NULL;
        if (o->len && (n.data = malloc(o->len)) == NULL) goto nomem;
        if (o->len) memcpy(n.data, o->data, o->len);
        if (grow(&c->ops, &c->ops_cap, c->nops + 1, sizeof *c->ops) != 0) { free(n.data); goto nomem; }
        c->ops[c->nops++] = n;
        n.ino->npending++;
    }
    if (ns_copy(&c->cur_ns, &sim->cur_ns, 1) != 0 || ns_copy(&c->dur_ns, &sim->dur_ns, 1) != 0)
        goto nomem;
    for (size_t k = 0; k < sim->nnsops; k++) {
        const nsop *o = &sim->nsops[k];
        nsop n = { { { NULL, NULL }, { NULL, NULL } } };
        if (grow(&c->nsops, &c->nsops_cap, c->nnsops + 1, sizeof *c->nsops) != 0) goto nomem;
        for (int j = 0; j < 2; j++) {
            if (o->eff[j].path == NULL) continue;
            n.eff[j].ino = o->eff[j].ino ? o->eff[j].ino->copy : NULL;
            if ((n.eff[j].path = strdup(o->eff[j].path)) == NULL) { nsop_free(&n); goto nomem; }
        }
        c->nsops[c->nnsops++] = n;
    }
    if (grow(&c->dirs, &c->dirs_cap, sim->ndirs, sizeof *c->dirs) != 0) goto nomem;
    for (size_t k = 0; k < sim->ndirs; k++) {
        if ((c->dirs[k] = strdup(sim->dirs[k])) == NULL) goto nomem;
        c->ndirs++;
    }
    c->calls = sim->calls;
    c->faults = sim->faults;
    c->capacity = sim->capacity;
    c->io.bytes_written = sim->io.bytes_written;
    c->io.bytes_read = sim->io.bytes_read;
    c->io.syncs = sim->io.syncs;
    c->io.writes = sim->io.writes;
    c->io.reads = sim->io.reads;
    pthread_mutex_unlock(&sim->mu);
    *out = c;
    return 0;
nomem:
    pthread_mutex_unlock(&sim->mu);
    tide_io_sim_destroy(c);
    return tide_err_set(TIDE_ENOMEM, "sim: clone: out of memory");
}

/* ---- test helpers ---- */

int tide_io_sim_mkdir(tide_io_sim *sim, const char *path)
{
    char p[SIM_PATH_MAX];
    int rc;

    pthread_mutex_lock(&sim->mu);
    if ((rc = norm(path, p, "mkdir")) != 0) { rc = TIDE_EINVAL; goto out; }
    for (size_t n = strlen(p); n > 1; n = dir_len(p)) {
        p[n] = '\0';
        if (ns_get(&sim->cur_ns, p)) {
            rc = tide_err_set(TIDE_EEXIST, "sim: %s: mkdir: a file has that name", p);
            goto out;
        }
    }
    /* The directory and each parent: "/a/b" lists "/a/b" and "/a". */
    if ((rc = norm(path, p, "mkdir")) != 0) goto out;
    for (size_t n = strlen(p); n > 0; n = dir_len(p)) {
        int listed = 0;
        char *d;
        p[n] = '\0';
        if (strcmp(p, "/") == 0) break;
        for (size_t i = 0; i < sim->ndirs; i++) listed |= strcmp(sim->dirs[i], p) == 0;
        if (listed) continue;
        if (grow(&sim->dirs, &sim->dirs_cap, sim->ndirs + 1, sizeof *sim->dirs) != 0
            || (d = strdup(p)) == NULL) {
            rc = tide_err_set(TIDE_ENOMEM, "sim: %s: mkdir: out of memory", p);
            goto out;
        }
        sim->dirs[sim->ndirs++] = d;
    }
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int put_inode(tide_io_sim *sim, const char *path, const void *data, size_t len,
                     const char *special);

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

static int put_inode(tide_io_sim *sim, const char *path, const void *data, size_t len,
                     const char *special)
{
    char p[SIM_PATH_MAX];
    inode *ino, *old;
    size_t w = 0;
    int rc;

    pthread_mutex_lock(&sim->mu);
    if ((rc = norm(path, p, "put file")) != 0) { rc = TIDE_EINVAL; goto out; }
    old = ns_get(&sim->cur_ns, p);
    if (old == NULL && is_dir(sim, p)) {
        rc = tide_err_set(TIDE_EINVAL, "sim: %s: put file: is a directory", p);
        goto out;
    }
    if ((ino = inode_new(sim)) == NULL
        || img_write(&ino->dur, 0, data, len) != 0 || img_write(&ino->cur, 0, data, len) != 0
        || ns_set(&sim->cur_ns, p, ino) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: put file: out of memory", p);
        goto out;                       /* gc frees the new inode */
    }
    if (special) snprintf(ino->special, sizeof ino->special, "%s", special);
    if (ns_set(&sim->dur_ns, p, ino) != 0) {
        ns_set(&sim->cur_ns, p, old);   /* a replace or a removal: cannot fail */
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: put file: out of memory", p);
        goto out;
    }
    /* Forget pending effects on p: the file is durable as it is. */
    for (size_t r = 0; r < sim->nnsops; r++) {
        nsop *o = &sim->nsops[r];
        for (int j = 0; j < 2; j++)
            if (o->eff[j].path && strcmp(o->eff[j].path, p) == 0) {
                free(o->eff[j].path);
                o->eff[j].path = NULL;
            }
        if (o->eff[0].path || o->eff[1].path) sim->nsops[w++] = *o;
    }
    sim->nnsops = w;
out:
    gc(sim);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

static int get_image(tide_io_sim *sim, const char *path, int durable, void **data, size_t *len)
{
    char p[SIM_PATH_MAX];
    const image *m;
    inode *ino;
    void *buf;
    int rc;

    pthread_mutex_lock(&sim->mu);
    if ((rc = norm(path, p, "get file")) != 0) goto out;
    ino = ns_get(durable ? &sim->dur_ns : &sim->cur_ns, p);
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
    pthread_mutex_unlock(&sim->mu);
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

/* ---- counters ---- */

uint64_t tide_io_sim_calls(tide_io_sim *sim)
{
    uint64_t c;
    pthread_mutex_lock(&sim->mu);
    c = sim->calls;
    pthread_mutex_unlock(&sim->mu);
    return c;
}

uint64_t tide_io_sim_faults(tide_io_sim *sim)
{
    uint64_t c;
    pthread_mutex_lock(&sim->mu);
    c = sim->faults;
    pthread_mutex_unlock(&sim->mu);
    return c;
}

int tide_io_sim_file_stats_get(tide_io_sim *sim, const char *path, tide_io_sim_file_stats *out)
{
    char p[SIM_PATH_MAX];
    inode *ino;
    int rc;

    pthread_mutex_lock(&sim->mu);
    if ((rc = norm(path, p, "file stats")) != 0) goto out;
    if ((ino = ns_get(&sim->cur_ns, p)) == NULL) {
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
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

/* ---- faults ---- */

int tide_io_sim_fail_at(tide_io_sim *sim, uint64_t n, tide_io_sim_fault kind, int persistent)
{
    if ((int)kind < (int)TIDE_IO_SIM_NONE || (int)kind > (int)TIDE_IO_SIM_SYNC_FAIL)
        return tide_err_set(TIDE_EINVAL, "sim: fail at %llu: unknown fault kind %d",
                            (unsigned long long)n, (int)kind);
    pthread_mutex_lock(&sim->mu);
    sim->fault = n == 0 ? TIDE_IO_SIM_NONE : kind;
    sim->fault_at = sim->calls + n;
    sim->fault_persistent = persistent != 0;
    pthread_mutex_unlock(&sim->mu);
    return 0;
}

void tide_io_sim_set_capacity(tide_io_sim *sim, uint64_t bytes)
{
    pthread_mutex_lock(&sim->mu);
    sim->capacity = bytes;
    pthread_mutex_unlock(&sim->mu);
}

uint64_t tide_io_sim_usage(tide_io_sim *sim)
{
    uint64_t u;
    pthread_mutex_lock(&sim->mu);
    u = usage(sim);
    pthread_mutex_unlock(&sim->mu);
    return u;
}

/* ---- crashes ---- */

/* Apply, to a copy of the durable state, the pending ops with keep[i] (the
 * first cut[i] bytes of a write) and the namespace ops with nskeep[j]; make
 * that the whole state. The sim is unchanged on TIDE_ENOMEM. */
static int crash_to(tide_io_sim *sim, const unsigned char *keep, const size_t *cut,
                    const unsigned char *nskeep)
{
    ns dur = { 0 }, cur = { 0 };
    int rc = 0;

    for (inode *i = sim->inodes; i; i = i->next) {
        if (i->npending == 0) continue;
        if (img_assign(&i->stage_dur, &i->dur) != 0) goto nomem;
    }
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        image *m = &o->ino->stage_dur;
        if (!keep[k]) continue;
        if (o->is_truncate ? img_truncate(m, o->off) != 0
                           : img_write(m, o->off, o->data, cut[k]) != 0)
            goto nomem;
    }
    for (inode *i = sim->inodes; i; i = i->next)
        if (i->npending && img_assign(&i->stage_cur, &i->stage_dur) != 0) goto nomem;
    for (size_t k = 0; k < sim->dur_ns.n; k++)
        if (ns_set(&dur, sim->dur_ns.e[k].path, sim->dur_ns.e[k].ino) != 0) goto nomem;
    for (size_t k = 0; k < sim->nnsops; k++) {
        if (!nskeep[k]) continue;
        for (int j = 0; j < 2; j++) {
            const effect *e = &sim->nsops[k].eff[j];
            if (e->path && ns_set(&dur, e->path, e->ino) != 0) goto nomem;
        }
    }
    for (size_t k = 0; k < dur.n; k++)
        if (ns_set(&cur, dur.e[k].path, dur.e[k].ino) != 0) goto nomem;

    /* Nothing below can fail. */
    for (inode *i = sim->inodes; i; i = i->next) {
        if (i->npending) {
            image t = i->dur;
            i->dur = i->stage_dur;
            i->stage_dur = t;
            t = i->cur;
            i->cur = i->stage_cur;
            i->stage_cur = t;
        }
        img_free(&i->stage_dur);
        img_free(&i->stage_cur);
        i->handles = 0;
        i->shared_locks = i->excl_locks = 0;
    }
    ops_clear(sim);
    for (size_t k = 0; k < sim->nnsops; k++) nsop_free(&sim->nsops[k]);
    sim->nnsops = 0;
    ns_free(&sim->dur_ns);
    ns_free(&sim->cur_ns);
    sim->dur_ns = dur;
    sim->cur_ns = cur;
    sim->gen++;
    sim->fault = TIDE_IO_SIM_NONE;
    gc(sim);
    return 0;
nomem:
    for (inode *i = sim->inodes; i; i = i->next) {
        img_free(&i->stage_dur);
        img_free(&i->stage_cur);
    }
    ns_free(&dur);
    ns_free(&cur);
    rc = tide_err_set(TIDE_ENOMEM, "sim: crash: out of memory");
    return rc;
}

/* The number of 512-byte file boundaries strictly inside a write. */
static uint64_t boundaries(uint64_t off, size_t len)
{
    if (len == 0) return 0;
    return (off + len - 1) / SECTOR - off / SECTOR;
}

int tide_io_sim_crash(tide_io_sim *sim, uint64_t seed)
{
    unsigned char *keep = NULL, *nskeep = NULL;
    size_t *cut = NULL;
    uint64_t s = seed;
    int rc;

    pthread_mutex_lock(&sim->mu);
    keep = malloc(sim->nops + 1);
    cut = malloc((sim->nops + 1) * sizeof *cut);
    nskeep = malloc(sim->nnsops + 1);
    if (!keep || !cut || !nskeep) { rc = tide_err_set(TIDE_ENOMEM, "sim: crash: out of memory"); goto out; }
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        uint64_t r = splitmix64(&s), nb;
        keep[k] = r & 1;
        cut[k] = o->len;
        nb = boundaries(o->off, o->len);
        if (keep[k] && !o->is_truncate && nb > 0 && (r & 2)) {
            uint64_t first = (o->off / SECTOR + 1) * SECTOR;
            cut[k] = (size_t)(first + ((r >> 8) % nb) * SECTOR - o->off);
        }
    }
    for (size_t k = 0; k < sim->nnsops; k++) nskeep[k] = splitmix64(&s) & 1;
    rc = crash_to(sim, keep, cut, nskeep);
out:
    pthread_mutex_unlock(&sim->mu);
    free(keep);
    free(cut);
    free(nskeep);
    return rc;
}

uint64_t tide_io_sim_pending_count(tide_io_sim *sim)
{
    uint64_t n;
    pthread_mutex_lock(&sim->mu);
    n = sim->nops;
    pthread_mutex_unlock(&sim->mu);
    return n;
}

int tide_io_sim_pending_op(tide_io_sim *sim, uint64_t index, tide_io_sim_op_info *out)
{
    const char *name = "";
    const op *o;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    if (index >= sim->nops) {
        rc = tide_err_set(TIDE_EINVAL, "sim: pending op %llu: there are %zu",
                          (unsigned long long)index, sim->nops);
        goto out;
    }
    o = &sim->ops[index];
    for (size_t k = 0; k < sim->dur_ns.n; k++)
        if (sim->dur_ns.e[k].ino == o->ino) name = sim->dur_ns.e[k].path;
    for (size_t k = 0; k < sim->cur_ns.n; k++)
        if (sim->cur_ns.e[k].ino == o->ino) name = sim->cur_ns.e[k].path;
    snprintf(out->path, sizeof out->path, "%s", name);
    out->is_truncate = o->is_truncate;
    out->offset = o->off;
    out->len = o->len;
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

uint64_t tide_io_sim_pending_ns_count(tide_io_sim *sim)
{
    uint64_t n;
    pthread_mutex_lock(&sim->mu);
    n = sim->nnsops;
    pthread_mutex_unlock(&sim->mu);
    return n;
}

int tide_io_sim_pending_ns_op(tide_io_sim *sim, uint64_t index, char *out, size_t cap)
{
    const nsop *o;
    int rc = 0;

    pthread_mutex_lock(&sim->mu);
    if (index >= sim->nnsops) {
        rc = tide_err_set(TIDE_EINVAL, "sim: pending namespace op %llu: there are %zu",
                          (unsigned long long)index, sim->nnsops);
        goto out;
    }
    o = &sim->nsops[index];
    /* Shapes nsop_add makes: create (p0 -> ino), unlink (p0 -> none),
     * rename (p0 -> none, p1 -> ino); a half retired by a sync_dir is NULL. */
    if (o->eff[0].path && o->eff[1].path)
        snprintf(out, cap, "rename %s to %s", o->eff[0].path, o->eff[1].path);
    else if (o->eff[1].path)
        snprintf(out, cap, "rename (to) %s", o->eff[1].path);
    else if (o->eff[0].ino)
        snprintf(out, cap, "create %s", o->eff[0].path);
    else
        snprintf(out, cap, "unlink %s", o->eff[0].path);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int tide_io_sim_crash_state_ns(tide_io_sim *sim, uint64_t subset_mask, uint64_t ns_mask)
{
    unsigned char keep[64], nskeep[64];
    size_t cut[64];
    int rc;

    pthread_mutex_lock(&sim->mu);
    if (sim->nops > 64 || sim->nnsops > 64) {
        rc = tide_err_set(TIDE_EINVAL, "sim: crash state: %zu pending operations and %zu namespace "
                          "operations, more than the 64 a mask can name", sim->nops, sim->nnsops);
        goto out;
    }
    if ((sim->nops < 64 && (subset_mask >> sim->nops) != 0) ||
        (sim->nnsops < 64 && (ns_mask >> sim->nnsops) != 0)) {
        rc = tide_err_set(TIDE_EINVAL, "sim: crash state: masks %#llx/%#llx name operations beyond "
                          "the %zu/%zu pending", (unsigned long long)subset_mask,
                          (unsigned long long)ns_mask, sim->nops, sim->nnsops);
        goto out;
    }
    for (size_t k = 0; k < sim->nops; k++) {
        keep[k] = (subset_mask >> k) & 1;
        cut[k] = sim->ops[k].len;
    }
    for (size_t k = 0; k < sim->nnsops; k++) nskeep[k] = (ns_mask >> k) & 1;
    rc = crash_to(sim, keep, cut, nskeep);
out:
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int tide_io_sim_crash_state(tide_io_sim *sim, uint64_t subset_mask, int tear_index,
                            uint64_t tear_at)
{
    unsigned char keep[64], *nskeep = NULL;
    size_t cut[64];
    int rc;

    pthread_mutex_lock(&sim->mu);
    if (sim->nops > 64) {
        rc = tide_err_set(TIDE_EINVAL, "sim: crash state: %zu pending operations, more than the "
                          "64 a mask can name", sim->nops);
        goto out;
    }
    if (sim->nops < 64 && (subset_mask >> sim->nops) != 0) {
        rc = tide_err_set(TIDE_EINVAL, "sim: crash state: mask %#llx names operations beyond the "
                          "%zu pending", (unsigned long long)subset_mask, sim->nops);
        goto out;
    }
    for (size_t k = 0; k < sim->nops; k++) {
        keep[k] = (subset_mask >> k) & 1;
        cut[k] = sim->ops[k].len;
    }
    if (tear_index >= 0) {
        const op *o;
        if ((size_t)tear_index >= sim->nops || !keep[tear_index]) {
            rc = tide_err_set(TIDE_EINVAL, "sim: crash state: torn operation %d is not among the "
                              "kept ones", tear_index);
            goto out;
        }
        o = &sim->ops[tear_index];
        if (o->is_truncate || tear_at == 0 || tear_at >= o->len || (o->off + tear_at) % SECTOR) {
            rc = tide_err_set(TIDE_EINVAL, "sim: crash state: cannot tear operation %d (%s of "
                              "%zu bytes at offset %llu) after %llu bytes: the cut must fall "
                              "inside the write on a 512-byte file boundary", tear_index,
                              o->is_truncate ? "a truncate" : "a write", o->len,
                              (unsigned long long)o->off, (unsigned long long)tear_at);
            goto out;
        }
        cut[tear_index] = (size_t)tear_at;
    }
    if ((nskeep = malloc(sim->nnsops + 1)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: crash state: out of memory");
        goto out;
    }
    memset(nskeep, 1, sim->nnsops + 1);
    rc = crash_to(sim, keep, cut, nskeep);
out:
    pthread_mutex_unlock(&sim->mu);
    free(nskeep);
    return rc;
}
