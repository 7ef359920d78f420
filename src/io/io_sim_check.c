/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_check.c: the sim's invariants, asserted.
 *
 * ti_sim_check asserts, with TIDE_ASSERT (on in every build), the six
 * invariants of io_sim.c's essay; ti_sim_unlock runs it at the end of every
 * call (of a sim not set unchecked), so a call that breaks one aborts the
 * process before it returns, naming the broken expression. The checks go from the ground up, so that
 * the first one to fire names the cause rather than a consequence: the
 * lock (6), the images' memory (5), the handles' counts (4), that every
 * reference lands on a listed inode and every listed inode is reachable
 * (3), then the meaning: the namespaces (2), the pending ops and the sizes
 * (1), and, when asked, the bytes (1).
 *
 * Invariants:
 *   1. ti_sim_check changes nothing the model can see: it writes only the
 *      inodes' check scratch (seen_*) and, comparing bytes, the staging
 *      images, which it empties again.
 *   2. Without bytes it costs O(inodes + pending ops + (names + pending
 *      effects)^2) and allocates nothing. With bytes it costs O(bytes of
 *      the sim + inodes with pending ops x pending ops) more and allocates
 *      one staging image at a time (allocate, replay, compare, free, then
 *      the next inode); when that allocation fails, that inode's bytes go
 *      unchecked (out of memory is not a broken invariant).
 *   3. Counting a reference dereferences the inode it names before the
 *      check knows it is listed: a dangling pointer makes the counts
 *      disagree and the assert fire (or the sanitizer report first), and
 *      nothing between the counting and the assert allocates or frees.
 *
 * Never: return an error, or check without sim->mu (that is itself a
 *   broken invariant 6, and the first assert says so).
 */
#include <pthread.h>
#include <string.h>

#include "io/io_sim_impl.h"
#include "util/assert.h"

/* 6: the caller holds sim->mu. */
static void check_lock(const tide_io_sim *sim)
{
    TIDE_ASSERT(sim->locked && pthread_equal(sim->owner, pthread_self()));
    TIDE_ASSERT(sim->faults <= sim->calls);
}

static void check_image(const image *m)
{
    TIDE_ASSERT((m->b == NULL) == (m->cap == 0));
    TIDE_ASSERT(m->size <= m->cap);
}

/* 5 and 4, inode by inode; and the scratch of the counts below zeroed. */
static void check_inodes(tide_io_sim *sim)
{
    for (inode *i = sim->inodes; i; i = i->next) {
        i->seen_refs = i->seen_ops = 0;
        i->seen_size = i->dur.size;
        check_image(&i->dur);
        check_image(&i->cur);
        TIDE_ASSERT(i->stage_dur.cap == 0 && i->stage_cur.cap == 0);
        TIDE_ASSERT(i->handles >= 0 && i->shared_locks >= 0);
        TIDE_ASSERT(i->excl_locks == 0 || (i->excl_locks == 1 && i->shared_locks == 0));
        TIDE_ASSERT(i->shared_locks + i->excl_locks <= i->handles);
    }
}

/* One pending op, well formed, counted on its inode and its size replayed
 * over the inode's (the ops come in order). */
static void count_op(const op *o)
{
    inode *i = o->ino;

    i->seen_ops++;
    if (o->is_truncate) {
        TIDE_ASSERT(o->len == 0 && o->data == NULL);
        i->seen_size = o->off;
    } else {
        TIDE_ASSERT(o->len > 0 && o->data != NULL);
        if (o->off + o->len > i->seen_size) i->seen_size = o->off + o->len;
    }
}

/* 3: every name, pending effect and op lands on a listed inode, and every
 * listed inode is reached by a name, an effect or a handle. */
static void check_reach(tide_io_sim *sim)
{
    uint64_t refs = 0, seen_refs = 0, seen_ops = 0;
    const ns *spaces[2] = { &sim->cur_ns, &sim->dur_ns };

    for (int s = 0; s < 2; s++)
        for (size_t k = 0; k < spaces[s]->n; k++, refs++) {
            TIDE_ASSERT(spaces[s]->e[k].ino != NULL);
            spaces[s]->e[k].ino->seen_refs++;
        }
    for (size_t k = 0; k < sim->nnsops; k++) {
        const nsop *o = &sim->nsops[k];
        TIDE_ASSERT(o->eff[0].path != NULL || o->eff[1].path != NULL);
        TIDE_ASSERT(o->dir == SIM_FILE_OP || (o->eff[1].path == NULL && o->eff[0].ino == NULL));
        for (int j = 0; j < 2; j++)
            if (o->eff[j].path && o->eff[j].ino) o->eff[j].ino->seen_refs++, refs++;
    }
    for (size_t k = 0; k < sim->nops; k++) count_op(&sim->ops[k]);
    for (const inode *i = sim->inodes; i; i = i->next) {
        TIDE_ASSERT(i->seen_refs > 0 || i->handles > 0);
        seen_refs += i->seen_refs;
        seen_ops += i->seen_ops;
    }
    TIDE_ASSERT(seen_refs == refs);
    TIDE_ASSERT(seen_ops == sim->nops);
}

/* What the durable namespace with the pending effects applied names at
 * `path`: the last pending effect on it, else the durable name. */
static const inode *expected_at(const tide_io_sim *sim, const char *path)
{
    for (size_t k = sim->nnsops; k-- > 0;)
        for (int j = 2; j-- > 0;) {
            const effect *e = &sim->nsops[k].eff[j];
            if (sim->nsops[k].dir) continue;
            if (e->path && strcmp(e->path, path) == 0) return e->ino;
        }
    return ti_sim_ns_get(&sim->dur_ns, path);
}

/* Whether the durable directories with the pending mkdirs and rmdirs
 * applied hold `path`. */
static int expected_dir(const tide_io_sim *sim, const char *path)
{
    for (size_t k = sim->nnsops; k-- > 0;) {
        const nsop *o = &sim->nsops[k];
        if (o->dir && o->eff[0].path && strcmp(o->eff[0].path, path) == 0)
            return o->dir == SIM_MKDIR;
    }
    return ti_sim_dirset_has(&sim->dur_dirs, path);
}

/* 2 for the directories: each one current or durable or pending agrees,
 * and no directory made has a file's name. */
static void check_dirs(const tide_io_sim *sim)
{
    for (size_t k = 0; k < sim->dirs.n; k++) {
        TIDE_ASSERT(expected_dir(sim, sim->dirs.v[k]));
        TIDE_ASSERT(ti_sim_ns_get(&sim->cur_ns, sim->dirs.v[k]) == NULL);
    }
    for (size_t k = 0; k < sim->dur_dirs.n; k++) {
        const char *p = sim->dur_dirs.v[k];
        TIDE_ASSERT(ti_sim_dirset_has(&sim->dirs, p) == expected_dir(sim, p));
    }
    for (size_t k = 0; k < sim->nnsops; k++) {
        const char *p = sim->nsops[k].eff[0].path;
        if (sim->nsops[k].dir)
            TIDE_ASSERT(ti_sim_dirset_has(&sim->dirs, p) == expected_dir(sim, p));
    }
}

/* 2: every path any of them mentions agrees. With nothing pending the
 * two namespaces are equal: as many entries (each path is in a namespace
 * once), each of the current ones in the durable one, most often at the
 * same place. */
static void check_names(const tide_io_sim *sim)
{
    if (sim->nnsops == 0) {
        TIDE_ASSERT(sim->cur_ns.n == sim->dur_ns.n);
        for (size_t k = 0; k < sim->cur_ns.n; k++) {
            const entry *c = &sim->cur_ns.e[k], *d = &sim->dur_ns.e[k];
            if (c->ino == d->ino && strcmp(c->path, d->path) == 0) continue;
            TIDE_ASSERT(ti_sim_ns_get(&sim->dur_ns, c->path) == c->ino);
        }
        return;
    }
    for (size_t k = 0; k < sim->cur_ns.n; k++)
        TIDE_ASSERT(expected_at(sim, sim->cur_ns.e[k].path) == sim->cur_ns.e[k].ino);
    for (size_t k = 0; k < sim->dur_ns.n; k++) {
        const char *p = sim->dur_ns.e[k].path;
        TIDE_ASSERT(ti_sim_ns_get(&sim->cur_ns, p) == expected_at(sim, p));
    }
    for (size_t k = 0; k < sim->nnsops; k++)
        for (int j = 0; j < 2; j++) {
            const char *p = sim->nsops[k].eff[j].path;
            if (p && !sim->nsops[k].dir)
                TIDE_ASSERT(ti_sim_ns_get(&sim->cur_ns, p) == expected_at(sim, p));
        }
}

/* 1 without the bytes: npending counts the inode's ops, and replaying
 * their sizes over the durable size (count_op) gave the current size. */
static void check_pending(const tide_io_sim *sim)
{
    for (const inode *i = sim->inodes; i; i = i->next) {
        TIDE_ASSERT(i->npending == i->seen_ops);
        TIDE_ASSERT(i->cur.size == i->seen_size);
    }
}

/* 1 with the bytes, for one inode with pending ops: replay its ops over a
 * copy of its durable image (in its staging image), compare with the
 * current image, and free the copy. Returns without asserting when the
 * copy cannot be allocated or grown (out of memory, not a broken
 * invariant). */
static void check_inode_bytes(const tide_io_sim *sim, inode *i)
{
    int ok = ti_sim_img_assign(&i->stage_dur, &i->dur) == 0;

    for (size_t k = 0; ok && k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        if (o->ino != i) continue;
        if (o->is_truncate ? ti_sim_img_truncate(&i->stage_dur, o->off) != 0
                           : ti_sim_img_write(&i->stage_dur, o->off, o->data, o->len) != 0)
            ok = 0;
    }
    if (ok)
        TIDE_ASSERT(i->stage_dur.size == i->cur.size
                    && (i->cur.size == 0
                        || memcmp(i->stage_dur.b, i->cur.b, i->cur.size) == 0));
    ti_sim_img_free(&i->stage_dur);
}

/* 1 with the bytes, inode by inode: one staging image alive at a time. An
 * inode with nothing pending has its current image equal its durable one. */
static void check_bytes(tide_io_sim *sim)
{
    for (inode *i = sim->inodes; i; i = i->next) {
        if (i->npending) {
            check_inode_bytes(sim, i);
            continue;
        }
        TIDE_ASSERT(i->dur.size == i->cur.size
                    && (i->cur.size == 0 || memcmp(i->dur.b, i->cur.b, i->cur.size) == 0));
    }
}

void ti_sim_check(tide_io_sim *sim, int bytes)
{
    check_lock(sim);
    check_inodes(sim);
    check_reach(sim);
    check_names(sim);
    check_dirs(sim);
    check_pending(sim);
    if (bytes) check_bytes(sim);
}
