/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_crash.c: what a power loss leaves of the sim.
 *
 * A crash image is one choice, for each pending write or truncate, of
 * whether it survives and how much of a write does (keep[k], cut[k]), and,
 * for each pending namespace operation, whether it survives (nskeep[k]).
 * crash_to builds the image of such a choice and makes it the sim's whole
 * state; a namespace operation may be a mkdir or rmdir, kept or lost like
 * a create or an unlink. The three ways to choose are the public calls: tide_io_sim_crash
 * draws the choice from a seed, tide_io_sim_crash_state takes a mask of the
 * writes (and one tear) and keeps every namespace operation, and
 * tide_io_sim_crash_state_ns takes a mask of each kind. The description
 * calls (pending_op, pending_ns_op) name the operations the masks number.
 *
 * Invariants:
 *   1. A crash changes nothing until everything it needs is allocated:
 *      the new images are built in each inode's staging images and the new
 *      namespaces beside the old ones, then swapped in by steps that cannot
 *      fail. On TIDE_ENOMEM the sim is as it was (the staging images are
 *      emptied again: io_sim.c invariant 5).
 *   2. Kept operations are applied in the order they were made, a write
 *      cut at cut[k] bytes (cut[k] == len: whole). A cut other than the
 *      whole write ends on a 512-byte file boundary inside the write.
 *   3. After a crash: current == durable for every inode, no op and no
 *      namespace operation is pending, no handle or lock counts, sim->gen
 *      has moved on (every older handle is dead), no fault is armed, and
 *      gc has freed what no name reaches.
 *   4. The same sim and seed give the same crash: the draw is the seeded
 *      splitmix64 sequence (tide_random_next64), two bits and a position
 *      per write, one bit per namespace operation, in that order.
 *   5. A directory whose pending mkdir the image does not keep (so it is
 *      not in the staged durable set) takes everything named under it out
 *      of the image, synced or not; an implicit directory (no mkdir) is
 *      never lost.
 *
 * Never: apply a namespace effect a sync_dir already retired, or an op of
 *   an inode gc has freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_sim_impl.h"
#include "util/err.h"
#include "util/random.h"

/* ---- building a crash image ---- */

/* Stage each inode with pending ops: durable with the kept ops applied. */
static int stage_images(tide_io_sim *sim, const unsigned char *keep, const size_t *cut)
{
    for (inode *i = sim->inodes; i; i = i->next)
        if (i->npending && ti_sim_img_assign(&i->stage_dur, &i->dur) != 0) return TIDE_ENOMEM;
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        image *m = &o->ino->stage_dur;
        if (!keep[k]) continue;
        if (o->is_truncate ? ti_sim_img_truncate(m, o->off) != 0
                           : ti_sim_img_write(m, o->off, o->data, cut[k]) != 0)
            return TIDE_ENOMEM;
    }
    for (inode *i = sim->inodes; i; i = i->next)
        if (i->npending && ti_sim_img_assign(&i->stage_cur, &i->stage_dur) != 0)
            return TIDE_ENOMEM;
    return 0;
}

/* Take out of *dur and *ddur everything under directory `d`. */
static void drop_under(ns *dur, dirset *ddur, const char *d)
{
    for (size_t k = dur->n; k-- > 0;)
        if (ti_sim_under(dur->e[k].path, d)) ti_sim_ns_set(dur, dur->e[k].path, NULL);
    for (size_t k = ddur->n; k-- > 0;)
        if (ti_sim_under(ddur->v[k], d)) ti_sim_dirset_put(ddur, ddur->v[k], 0);
}

/* A directory whose mkdir is pending and not in the staged durable set
 * was lost, and with it whatever its entries named, synced or not: on a
 * disk nothing reaches them. (A directory no mkdir made, implicit, is
 * never lost.) */
static void drop_lost_dirs(tide_io_sim *sim, ns *dur, dirset *ddur)
{
    for (size_t k = 0; k < sim->nnsops; k++) {
        const nsop *o = &sim->nsops[k];
        if (o->dir == SIM_MKDIR && !ti_sim_dirset_has(ddur, o->eff[0].path))
            drop_under(dur, ddur, o->eff[0].path);
    }
}

/* The durable namespace and directories with the kept namespace
 * operations applied, less what lost directories held, into *dur and
 * *ddur, and a copy of each into *cur and *dcur. */
static int stage_names(tide_io_sim *sim, const unsigned char *nskeep, ns *dur, ns *cur,
                       dirset *ddur, dirset *dcur)
{
    if (ti_sim_ns_copy(dur, &sim->dur_ns, 0) != 0) return TIDE_ENOMEM;
    if (ti_sim_dirset_copy(ddur, &sim->dur_dirs) != 0) return TIDE_ENOMEM;
    for (size_t k = 0; k < sim->nnsops; k++) {
        const nsop *o = &sim->nsops[k];
        if (!nskeep[k]) continue;
        for (int j = 0; j < 2; j++) {
            const effect *e = &o->eff[j];
            if (e->path == NULL) continue;
            if (o->dir ? ti_sim_dirset_put(ddur, e->path, o->dir == SIM_MKDIR) != 0
                       : ti_sim_ns_set(dur, e->path, e->ino) != 0)
                return TIDE_ENOMEM;
        }
    }
    drop_lost_dirs(sim, dur, ddur);
    if (ti_sim_dirset_copy(dcur, ddur) != 0) return TIDE_ENOMEM;
    return ti_sim_ns_copy(cur, dur, 0);
}

/* Make the staged state the sim's state. Cannot fail. */
static void swap_in(tide_io_sim *sim, ns *dur, ns *cur, dirset *ddur, dirset *dcur)
{
    for (inode *i = sim->inodes; i; i = i->next) {
        ti_sim_maps_detach(i);              /* the crashed process's maps (io_sim_map.c 3) */
        if (i->npending) {
            image t = i->dur;
            i->dur = i->stage_dur;
            i->stage_dur = t;
            t = i->cur;
            i->cur = i->stage_cur;
            i->stage_cur = t;
        }
        ti_sim_img_free(&i->stage_dur);
        ti_sim_img_free(&i->stage_cur);
        i->handles = 0;
        i->shared_locks = i->excl_locks = 0;
    }
    ti_sim_ops_clear(sim);
    for (size_t k = 0; k < sim->nnsops; k++) ti_sim_nsop_free(&sim->nsops[k]);
    sim->nnsops = 0;
    ti_sim_ns_free(&sim->dur_ns);
    ti_sim_ns_free(&sim->cur_ns);
    sim->dur_ns = *dur;
    sim->cur_ns = *cur;
    ti_sim_dirset_free(&sim->dur_dirs);
    ti_sim_dirset_free(&sim->dirs);
    sim->dur_dirs = *ddur;
    sim->dirs = *dcur;
    sim->gen++;
    sim->fault = TIDE_IO_SIM_NONE;
    ti_sim_gc(sim);
}

/* Apply, to a copy of the durable state, the pending ops with keep[i] (the
 * first cut[i] bytes of a write) and the namespace ops with nskeep[j]; make
 * that the whole state. The sim is unchanged on TIDE_ENOMEM. */
static int crash_to(tide_io_sim *sim, const unsigned char *keep, const size_t *cut,
                    const unsigned char *nskeep)
{
    ns dur = { 0 }, cur = { 0 };
    dirset ddur = { 0 }, dcur = { 0 };

    if (stage_images(sim, keep, cut) == 0
        && stage_names(sim, nskeep, &dur, &cur, &ddur, &dcur) == 0) {
        swap_in(sim, &dur, &cur, &ddur, &dcur);
        return 0;
    }
    for (inode *i = sim->inodes; i; i = i->next) {
        ti_sim_img_free(&i->stage_dur);
        ti_sim_img_free(&i->stage_cur);
    }
    ti_sim_ns_free(&dur);
    ti_sim_ns_free(&cur);
    ti_sim_dirset_free(&ddur);
    ti_sim_dirset_free(&dcur);
    return tide_err_set(TIDE_ENOMEM, "sim: crash: out of memory");
}

/* ---- choosing one ---- */

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

    ti_sim_lock(sim);
    keep = malloc(sim->nops + 1);
    cut = malloc((sim->nops + 1) * sizeof *cut);
    nskeep = malloc(sim->nnsops + 1);
    if (!keep || !cut || !nskeep) { rc = tide_err_set(TIDE_ENOMEM, "sim: crash: out of memory"); goto out; }
    for (size_t k = 0; k < sim->nops; k++) {
        const op *o = &sim->ops[k];
        uint64_t r = tide_random_next64(&s), nb;
        keep[k] = r & 1;
        cut[k] = o->len;
        nb = boundaries(o->off, o->len);
        if (keep[k] && !o->is_truncate && nb > 0 && (r & 2)) {
            uint64_t first = (o->off / SECTOR + 1) * SECTOR;
            cut[k] = (size_t)(first + ((r >> 8) % nb) * SECTOR - o->off);
        }
    }
    for (size_t k = 0; k < sim->nnsops; k++) nskeep[k] = tide_random_next64(&s) & 1;
    rc = crash_to(sim, keep, cut, nskeep);
out:
    ti_sim_unlock(sim);
    free(keep);
    free(cut);
    free(nskeep);
    return rc;
}

/* The choice a pair of masks names, whole writes; ns_mask NULL (crash_state)
 * leaves nskeep alone and the namespace operations out of the checks and the
 * wording. TIDE_EINVAL when there are more than 64 operations of a kind, or
 * a bit is set beyond them. */
static int masks_choose(tide_io_sim *sim, uint64_t subset_mask, const uint64_t *ns_mask,
                        unsigned char keep[64], size_t cut[64], unsigned char nskeep[64])
{
    size_t nns = ns_mask ? sim->nnsops : 0;
    uint64_t nsm = ns_mask ? *ns_mask : 0;

    if (sim->nops > 64 || nns > 64)
        return ns_mask
            ? tide_err_set(TIDE_EINVAL, "sim: crash state: %zu pending operations and %zu "
                           "namespace operations, more than the 64 a mask can name", sim->nops,
                           sim->nnsops)
            : tide_err_set(TIDE_EINVAL, "sim: crash state: %zu pending operations, more than "
                           "the 64 a mask can name", sim->nops);
    if ((sim->nops < 64 && (subset_mask >> sim->nops) != 0) || (nns < 64 && (nsm >> nns) != 0))
        return ns_mask
            ? tide_err_set(TIDE_EINVAL, "sim: crash state: masks %#llx/%#llx name operations "
                           "beyond the %zu/%zu pending", (unsigned long long)subset_mask,
                           (unsigned long long)nsm, sim->nops, sim->nnsops)
            : tide_err_set(TIDE_EINVAL, "sim: crash state: mask %#llx names operations beyond "
                           "the %zu pending", (unsigned long long)subset_mask, sim->nops);
    for (size_t k = 0; k < sim->nops; k++) {
        keep[k] = (subset_mask >> k) & 1;
        cut[k] = sim->ops[k].len;
    }
    for (size_t k = 0; k < nns; k++) nskeep[k] = (nsm >> k) & 1;
    return 0;
}

int tide_io_sim_crash_state_ns(tide_io_sim *sim, uint64_t subset_mask, uint64_t ns_mask)
{
    unsigned char keep[64], nskeep[64];
    size_t cut[64];
    int rc;

    ti_sim_lock(sim);
    rc = masks_choose(sim, subset_mask, &ns_mask, keep, cut, nskeep);
    if (rc == 0) rc = crash_to(sim, keep, cut, nskeep);
    ti_sim_unlock(sim);
    return rc;
}

/* Cut kept write `index` after `at` bytes, or TIDE_EINVAL. */
static int choose_tear(tide_io_sim *sim, const unsigned char *keep, size_t *cut, int index,
                       uint64_t at)
{
    const op *o;

    if ((size_t)index >= sim->nops || !keep[index])
        return tide_err_set(TIDE_EINVAL, "sim: crash state: torn operation %d is not among the "
                            "kept ones", index);
    o = &sim->ops[index];
    if (o->is_truncate || at == 0 || at >= o->len || (o->off + at) % SECTOR)
        return tide_err_set(TIDE_EINVAL, "sim: crash state: cannot tear operation %d (%s of "
                            "%zu bytes at offset %llu) after %llu bytes: the cut must fall "
                            "inside the write on a 512-byte file boundary", index,
                            o->is_truncate ? "a truncate" : "a write", o->len,
                            (unsigned long long)o->off, (unsigned long long)at);
    cut[index] = (size_t)at;
    return 0;
}

int tide_io_sim_crash_state(tide_io_sim *sim, uint64_t subset_mask, int tear_index,
                            uint64_t tear_at)
{
    unsigned char keep[64], unused[64], *nskeep = NULL;
    size_t cut[64];
    int rc;

    ti_sim_lock(sim);
    if ((rc = masks_choose(sim, subset_mask, NULL, keep, cut, unused)) != 0) goto out;
    if (tear_index >= 0 && (rc = choose_tear(sim, keep, cut, tear_index, tear_at)) != 0) goto out;
    if ((nskeep = malloc(sim->nnsops + 1)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: crash state: out of memory");
        goto out;
    }
    memset(nskeep, 1, sim->nnsops + 1);
    rc = crash_to(sim, keep, cut, nskeep);
out:
    ti_sim_unlock(sim);
    free(nskeep);
    return rc;
}

/* ---- what is pending ---- */

/* TIDE_EINVAL unless index < n; `what` names the list in the message. */
static int pending_index(uint64_t index, size_t n, const char *what)
{
    if (index < n) return 0;
    return tide_err_set(TIDE_EINVAL, "sim: pending %sop %llu: there are %zu", what,
                        (unsigned long long)index, n);
}

int tide_io_sim_pending_op(tide_io_sim *sim, uint64_t index, tide_io_sim_op_info *out)
{
    const char *name = "";
    const op *o;
    int rc;

    ti_sim_lock(sim);
    if ((rc = pending_index(index, sim->nops, "")) != 0) goto out;
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
    ti_sim_unlock(sim);
    return rc;
}

int tide_io_sim_pending_ns_op(tide_io_sim *sim, uint64_t index, char *out, size_t cap)
{
    const nsop *o;
    int rc;

    ti_sim_lock(sim);
    if ((rc = pending_index(index, sim->nnsops, "namespace ")) != 0) goto out;
    o = &sim->nsops[index];
    /* Shapes ti_sim_nsop_add makes: create (p0 -> ino), unlink (p0 -> none),
     * rename (p0 -> none, p1 -> ino); a half retired by a sync_dir is NULL;
     * and ti_sim_dirop_add's mkdir and rmdir. */
    if (o->dir)
        snprintf(out, cap, "%s %s", o->dir == SIM_MKDIR ? "mkdir" : "rmdir", o->eff[0].path);
    else if (o->eff[0].path && o->eff[1].path)
        snprintf(out, cap, "rename %s to %s", o->eff[0].path, o->eff[1].path);
    else if (o->eff[1].path)
        snprintf(out, cap, "rename (to) %s", o->eff[1].path);
    else if (o->eff[0].ino)
        snprintf(out, cap, "create %s", o->eff[0].path);
    else
        snprintf(out, cap, "unlink %s", o->eff[0].path);
out:
    ti_sim_unlock(sim);
    return rc;
}
