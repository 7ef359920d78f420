/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_fs.c: the simulated file system's data, in memory.
 *
 * The pieces io_sim.c's model is made of, and the only code that changes
 * them piece by piece: images (a byte buffer and a size), paths
 * (normalised strings), namespaces (path -> inode tables), namespace
 * operations (one or two effects), inodes, and the sim's one ordered list
 * of pending writes and truncates. The calls in io_sim_table.c and the
 * crashes in io_sim_crash.c are made of these steps.
 *
 * Invariants (the parts of io_sim.c's six that this file keeps):
 *   1. An image's cap is 0 exactly when b is NULL, and size <= cap; every
 *      growth (a write past the end, a truncate up) zero-fills the gap it
 *      opens first, so the bytes in [size, cap) are never read (io_sim.c
 *      invariant 5).
 *   2. ti_sim_pend_write and ti_sim_pend_truncate change the current image
 *      and append the op in one step, with ino->npending counting it; only
 *      ti_sim_ops_drop and ti_sim_ops_clear remove ops, and they zero the
 *      count (io_sim.c invariant 1).
 *   3. A namespace, and a set of directories, holds each path at most once
 *      (ti_sim_ns_set replaces, ti_sim_dirset_put adds once).
 *      An effect is retired by setting its path to NULL, and a namespace
 *      operation with both paths NULL leaves the list at once (io_sim.c
 *      invariant 2).
 *   4. ti_sim_gc frees exactly the inodes ti_sim_mark_live(sim, 1) leaves
 *      unmarked, with their pending ops, so no op outlives its inode
 *      (io_sim.c invariant 3).
 *   5. Every function that may fail with TIDE_ENOMEM has no effect when it
 *      does, except ti_sim_nsops_retire, which leaves a consistent half
 *      (its contract says which).
 *
 * Never: take sim->mu here (the callers hold it), or set an error message
 *   (the callers name the call that failed).
 */
#include <stdlib.h>
#include <string.h>

#include "io/io_sim_impl.h"
#include "util/err.h"

int ti_sim_grow(void *arrp, size_t *cap, size_t need, size_t elem)
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

/* Room for `need` bytes in m (capacity grown, never shrunk). */
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

int ti_sim_img_write(image *m, uint64_t off, const void *p, size_t len)
{
    uint64_t end = off + len;

    if (len == 0) return 0;
    if (img_reserve(m, end) != 0) return TIDE_ENOMEM;
    if (off > m->size) memset(m->b + m->size, 0, off - m->size);
    memcpy(m->b + off, p, len);
    if (end > m->size) m->size = end;
    return 0;
}

int ti_sim_img_truncate(image *m, uint64_t size)
{
    if (size > m->size) {
        if (img_reserve(m, size) != 0) return TIDE_ENOMEM;
        memset(m->b + m->size, 0, size - m->size);
    }
    m->size = size;
    return 0;
}

int ti_sim_img_assign(image *dst, const image *src)
{
    if (img_reserve(dst, src->size) != 0) return TIDE_ENOMEM;
    if (src->size) memcpy(dst->b, src->b, src->size);
    dst->size = src->size;
    return 0;
}

void ti_sim_img_free(image *m)
{
    free(m->b);
    memset(m, 0, sizeof *m);
}

/* ---- paths ---- */

int ti_sim_norm(const char *in, char *out, const char *what)
{
    size_t n = 0;

    if (in == NULL || *in == '\0')
        return tide_err_set(TIDE_ENOENT, "sim: %s: empty path", what);
    for (const char *p = in; *p; p++) {
        if (*p == '/' && n > 0 && out[n - 1] == '/') continue;
        if (n + 1 >= SIM_PATH_MAX)
            return tide_err_set(TIDE_EIO, "sim: %.64s...: %s: path longer than %d bytes", in, what,
                                SIM_PATH_MAX - 1);
        out[n++] = *p;
    }
    if (n > 1 && out[n - 1] == '/') n--;
    out[n] = '\0';
    return 0;
}

size_t ti_sim_dir_len(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) return 0;
    if (slash == path) return 1;
    return (size_t)(slash - path);
}

static int in_dir(const char *path, const char *dir)
{
    size_t n = ti_sim_dir_len(path);
    return strlen(dir) == n && strncmp(path, dir, n) == 0;
}

/* ---- namespaces ---- */

static long ns_find(const ns *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].path, path) == 0) return (long)i;
    return -1;
}

inode *ti_sim_ns_get(const ns *s, const char *path)
{
    long i = ns_find(s, path);
    return i < 0 ? NULL : s->e[i].ino;
}

int ti_sim_ns_set(ns *s, const char *path, inode *ino)
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
    if (ti_sim_grow(&s->e, &s->cap, s->n + 1, sizeof *s->e) != 0) return TIDE_ENOMEM;
    if ((copy = strdup(path)) == NULL) return TIDE_ENOMEM;
    s->e[s->n++] = (entry){ copy, ino };
    return 0;
}

void ti_sim_ns_free(ns *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].path);
    free(s->e);
    memset(s, 0, sizeof *s);
}

int ti_sim_ns_copy(ns *dst, const ns *src, int only_marked)
{
    ns t = { 0 };

    for (size_t i = 0; i < src->n; i++) {
        inode *ino = src->e[i].ino;
        if (only_marked) {
            if (!ino->mark) continue;
            ino = ino->copy;
        }
        if (ti_sim_ns_set(&t, src->e[i].path, ino) != 0) { ti_sim_ns_free(&t); return TIDE_ENOMEM; }
    }
    *dst = t;
    return 0;
}

/* ---- namespace operations ---- */

void ti_sim_nsop_free(nsop *o)
{
    free(o->eff[0].path);
    free(o->eff[1].path);
}

int ti_sim_nsop_add(tide_io_sim *sim, const char *p0, inode *i0, const char *p1, inode *i1)
{
    nsop o = { { { NULL, i0 }, { NULL, i1 } }, SIM_FILE_OP };

    if (ti_sim_grow(&sim->nsops, &sim->nsops_cap, sim->nnsops + 1, sizeof *sim->nsops) != 0)
        return TIDE_ENOMEM;
    if ((o.eff[0].path = strdup(p0)) == NULL) return TIDE_ENOMEM;
    if (p1 && (o.eff[1].path = strdup(p1)) == NULL) { free(o.eff[0].path); return TIDE_ENOMEM; }
    sim->nsops[sim->nnsops++] = o;
    return 0;
}

int ti_sim_dirop_add(tide_io_sim *sim, const char *path, int kind)
{
    nsop o = { { { NULL, NULL }, { NULL, NULL } }, kind };

    if (ti_sim_grow(&sim->nsops, &sim->nsops_cap, sim->nnsops + 1, sizeof *sim->nsops) != 0)
        return TIDE_ENOMEM;
    if ((o.eff[0].path = strdup(path)) == NULL) return TIDE_ENOMEM;
    sim->nsops[sim->nnsops++] = o;
    return 0;
}

/* Apply effect `e` of `o` to the durable state. No effect on failure. */
static int apply_effect(tide_io_sim *sim, const nsop *o, const effect *e)
{
    if (o->dir) return ti_sim_dirset_put(&sim->dur_dirs, e->path, o->dir == SIM_MKDIR);
    return ti_sim_ns_set(&sim->dur_ns, e->path, e->ino);
}

/* Drop the namespace operations whose effects are all retired. */
static void nsops_compact(tide_io_sim *sim)
{
    size_t w = 0;

    for (size_t r = 0; r < sim->nnsops; r++)
        if (sim->nsops[r].eff[0].path || sim->nsops[r].eff[1].path)
            sim->nsops[w++] = sim->nsops[r];
    sim->nnsops = w;
}

void ti_sim_dirops_forget(tide_io_sim *sim, const char *path)
{
    for (size_t r = 0; r < sim->nnsops; r++) {
        nsop *o = &sim->nsops[r];
        if (!o->dir || strcmp(o->eff[0].path, path) != 0) continue;
        free(o->eff[0].path);
        o->eff[0].path = NULL;
    }
    nsops_compact(sim);
}

int ti_sim_nsops_retire(tide_io_sim *sim, const char *path, int by_dir, int apply)
{
    size_t w = 0;
    int rc = 0;

    for (size_t r = 0; r < sim->nnsops; r++) {
        nsop *o = &sim->nsops[r];
        for (int j = 0; j < 2 && rc == 0; j++) {
            effect *e = &o->eff[j];
            if (e->path == NULL || (o->dir && !by_dir)) continue;
            if (by_dir ? !in_dir(e->path, path) : strcmp(e->path, path) != 0) continue;
            if (apply && apply_effect(sim, o, e) != 0) {
                rc = TIDE_ENOMEM;       /* keep compacting: the rest stay pending */
                break;
            }
            free(e->path);
            e->path = NULL;
        }
        if (o->eff[0].path || o->eff[1].path) sim->nsops[w++] = *o;
    }
    sim->nnsops = w;
    return rc;
}

/* ---- directories ---- */

int ti_sim_dirset_has(const dirset *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], path) == 0) return 1;
    return 0;
}

int ti_sim_dirset_put(dirset *s, const char *path, int present)
{
    char *copy;

    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->v[i], path) != 0) continue;
        if (!present) {
            free(s->v[i]);
            s->v[i] = s->v[--s->n];
        }
        return 0;
    }
    if (!present) return 0;
    if (ti_sim_grow(&s->v, &s->cap, s->n + 1, sizeof *s->v) != 0) return TIDE_ENOMEM;
    if ((copy = strdup(path)) == NULL) return TIDE_ENOMEM;
    s->v[s->n++] = copy;
    return 0;
}

void ti_sim_dirset_free(dirset *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

int ti_sim_dirset_copy(dirset *dst, const dirset *src)
{
    dirset t = { 0 };

    for (size_t i = 0; i < src->n; i++)
        if (ti_sim_dirset_put(&t, src->v[i], 1) != 0) { ti_sim_dirset_free(&t); return TIDE_ENOMEM; }
    *dst = t;
    return 0;
}

int ti_sim_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

int ti_sim_is_dir(const tide_io_sim *sim, const char *path)
{
    if (path[0] == '\0' || strcmp(path, "/") == 0) return 1;
    if (ti_sim_dirset_has(&sim->dirs, path)) return 1;
    for (size_t i = 0; i < sim->cur_ns.n; i++)
        if (ti_sim_under(sim->cur_ns.e[i].path, path)) return 1;
    return 0;
}

int ti_sim_parent_exists(const tide_io_sim *sim, const char *path)
{
    char d[SIM_PATH_MAX];
    size_t n = ti_sim_dir_len(path);

    memcpy(d, path, n);
    d[n] = '\0';
    return ti_sim_is_dir(sim, d);
}

/* ---- inodes and pending operations ---- */

inode *ti_sim_inode_new(tide_io_sim *sim)
{
    inode *ino = calloc(1, sizeof *ino);
    if (ino == NULL) return NULL;
    ino->next = sim->inodes;
    sim->inodes = ino;
    return ino;
}

void ti_sim_inode_free(inode *ino)
{
    ti_sim_maps_detach(ino);
    ti_sim_img_free(&ino->dur);
    ti_sim_img_free(&ino->cur);
    ti_sim_img_free(&ino->stage_dur);
    ti_sim_img_free(&ino->stage_cur);
    free(ino);
}

void ti_sim_ops_drop(tide_io_sim *sim, inode *ino)
{
    size_t w = 0;

    for (size_t r = 0; r < sim->nops; r++) {
        if (sim->ops[r].ino == ino) free(sim->ops[r].data);
        else sim->ops[w++] = sim->ops[r];
    }
    sim->nops = w;
    ino->npending = 0;
}

void ti_sim_ops_clear(tide_io_sim *sim)
{
    for (size_t i = 0; i < sim->nops; i++) free(sim->ops[i].data);
    sim->nops = 0;
    for (inode *i = sim->inodes; i; i = i->next) i->npending = 0;
}

int ti_sim_pend_write(tide_io_sim *sim, inode *ino, uint64_t off, const void *p, size_t len)
{
    uint8_t *copy;

    if (len == 0) return 0;
    if (ti_sim_grow(&sim->ops, &sim->ops_cap, sim->nops + 1, sizeof *sim->ops) != 0)
        return TIDE_ENOMEM;
    if (img_reserve(&ino->cur, off + len) != 0) return TIDE_ENOMEM;
    if ((copy = malloc(len)) == NULL) return TIDE_ENOMEM;
    memcpy(copy, p, len);
    uint64_t from = off < ino->cur.size ? off : ino->cur.size;   /* a gap's zeros too */
    ti_sim_img_write(&ino->cur, off, p, len);          /* cannot fail: reserved */
    ti_sim_maps_follow(ino, from, off + len);
    sim->ops[sim->nops++] = (op){ ino, 0, off, len, copy };
    ino->npending++;
    return 0;
}

int ti_sim_pend_truncate(tide_io_sim *sim, inode *ino, uint64_t size)
{
    if (ti_sim_grow(&sim->ops, &sim->ops_cap, sim->nops + 1, sizeof *sim->ops) != 0)
        return TIDE_ENOMEM;
    uint64_t was = ino->cur.size;
    if (ti_sim_img_truncate(&ino->cur, size) != 0) return TIDE_ENOMEM;
    ti_sim_maps_follow(ino, size < was ? size : was, UINT64_MAX);
    sim->ops[sim->nops++] = (op){ ino, 1, size, 0, NULL };
    ino->npending++;
    return 0;
}

/* ---- liveness ---- */

void ti_sim_mark_live(tide_io_sim *sim, int with_handles)
{
    for (inode *i = sim->inodes; i; i = i->next) i->mark = with_handles && i->handles > 0;
    for (size_t k = 0; k < sim->cur_ns.n; k++) sim->cur_ns.e[k].ino->mark = 1;
    for (size_t k = 0; k < sim->dur_ns.n; k++) sim->dur_ns.e[k].ino->mark = 1;
    for (size_t k = 0; k < sim->nnsops; k++)
        for (int j = 0; j < 2; j++)
            if (sim->nsops[k].eff[j].path && sim->nsops[k].eff[j].ino)
                sim->nsops[k].eff[j].ino->mark = 1;
}

void ti_sim_gc(tide_io_sim *sim)
{
    inode **pp = &sim->inodes;

    ti_sim_mark_live(sim, 1);
    while (*pp) {
        inode *i = *pp;
        if (i->mark) { pp = &i->next; continue; }
        *pp = i->next;
        if (i->npending) ti_sim_ops_drop(sim, i);
        ti_sim_inode_free(i);
    }
}
