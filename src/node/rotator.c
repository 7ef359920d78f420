/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rotator.c: online delete in the node (docs/ROTATION.md): the rotator
 * thread, the admin rotation, the keep-list, the advisory_delete
 * allowance, and the record of every attempt.
 *
 * One attempt, in this order:
 *   1. trigger: the newest generation holds online_delete objects, or its
 *      nudb.dat rotate_bytes, or rotate_interval_s passed since the last
 *      rotation (since open when there was none); the thread looks every
 *      rotate_check_ms (tide_node_rotate_check is one look);
 *   2. advisory gate: with advisory_delete, the rotation that would make
 *      the manifest's count rotations+1 runs only when can_delete >=
 *      rotations+1; a shut gate is not an attempt (nothing recorded, one
 *      INFO line per due episode), the next look asks again;
 *   3. health gate: with an archive (a primary's), every generation the
 *      rotation would drop sealed there (archive_allows: the node never
 *      drops what the archive lacks; counted in archive_waits, and the
 *      report's error says which generation and how far its upload is);
 *      no commit backlog (the insert pools, pending plus
 *      committing, under one burst), no commit failed since the last look, and, when
 *      rotation_max_rss is set, the process's anonymous RSS under it (or opts.health,
 *      a test hook), and the memory level (the memory governor's) below
 *      HIGH; while unhealthy the attempt waits recovery_wait_s and
 *      looks again, and after rotation_wait_max_s in all it is abandoned:
 *      logged at WARN once with the figures, counted, recorded with
 *      abandoned = 1, and the next attempt waits recovery_wait_s more;
 *   0. after a double fault (tide_gens_disk_unknown), every look first
 *      writes the manifest again (tide_gens_rewrite_manifest), whether or
 *      not a rotation is due;
 *   4. the rotation (tide_gens_rotate: create, then, when it drops a
 *      generation, sync, hide, sync again, then manifest, switch, drop);
 *      a rotation that failed after its hide showed the hidden ones again
 *      (the readable epoch moved): the key cache is cleared (node.c);
 *   5. when a generation was dropped and trim_after_rotation is on, one
 *      measured release, the sweep's own call (ti_node_release);
 *   6. the report into the ring, the totals and histograms, one INFO line.
 * tide_node_rotate (POST /v1/admin/rotate) runs 4 to 6 without the gates:
 * the operator asked; but step 4 itself refuses (TIDE_EUNAVAIL) a rotation
 * that would drop a generation the archive has not sealed. tide_node_rotate_keep runs its keep-list and the
 * rotation under one hold of rot_lock, so no rotation of the thread slips
 * between them (a key kept into a generation that then becomes the
 * older one would be dropped by the admin rotation right after). A keep
 * handed over in pieces (POST /v1/admin/keep, then rotate?expect=R) closes
 * the same window optimistically instead: each piece runs under rot_lock
 * and says the manifest's count R it copied at (tide_node_keep_at), and
 * tide_node_rotate_expect rotates only while the count is still R, under
 * the same lock, so a rotation between two pieces, or between the last
 * piece and the rotate, is seen and nothing is dropped that was kept.
 *
 * Locks: rot_check_lock, one look at a time (thread and test calls);
 * rot_lock, one rotation (with its keep-list and trim) at a time; then
 * rot_state_lock, the ring, totals, can_delete and stop, held only for
 * copies. Taken in that order, never the other.
 *
 * Invariants:
 *   1. rotations[] holds the last min(rot_seq, TIDE_NODE_ROTATIONS)
 *      attempts; rotations[(seq - 1) % TIDE_NODE_ROTATIONS] is attempt seq.
 *   2. rot_totals.rotations + failures + abandoned == rot_seq.
 *   3. At most one release per rotation, and only after one that dropped a
 *      generation.
 *   4. can_delete starts at 0 ("never") at every open: a node with
 *      advisory_delete deletes nothing the operator did not allow since
 *      it started.
 *   5. The thread is stopped (joined) before the generations close.
 *   6. The stop interrupts the generations (tide_gens_interrupt) before it
 *      joins: a drop in progress ends at its next delete step, and every
 *      later rotation, the admin's too, is TIDE_ECLOSED.
 *
 * Never: hold rot_state_lock across a rotation, a keep or a release; hold
 * a cache lock at all (the node cache needs nothing at a rotation:
 * node.c's tag rule); rotate past a shut advisory gate but for the admin.
 */
#include "node/node_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mem/proc.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull

/* The largest number can_delete takes: JSON and /metrics carry it exactly. */
#define CAN_DELETE_NUMBER_MAX (1ull << 53)

void ti_node_rotator_init(tide_node *n)
{
    pthread_condattr_t ca;

    pthread_mutex_init(&n->rot_check_lock, NULL);
    pthread_mutex_init(&n->rot_lock, NULL);
    pthread_mutex_init(&n->rot_state_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->rot_cond, &ca);
    pthread_condattr_destroy(&ca);
    n->can_delete = 0;
    n->opened_unix_us = tide_clock_real_us();
}

void ti_node_rotator_destroy(tide_node *n)
{
    pthread_cond_destroy(&n->rot_cond);
    pthread_mutex_destroy(&n->rot_state_lock);
    pthread_mutex_destroy(&n->rot_lock);
    pthread_mutex_destroy(&n->rot_check_lock);
}

/* Wait on rot_cond until the monotonic `deadline_ns` or a stop; returns
 * 1 when stopping. */
static int wait_until(tide_node *n, uint64_t deadline_ns)
{
    struct timespec ts = { (time_t)(deadline_ns / NS_PER_S), (long)(deadline_ns % NS_PER_S) };
    int s;

    pthread_mutex_lock(&n->rot_state_lock);
    while (!n->rot_stop && tide_clock_mono_ns() < deadline_ns)
        if (pthread_cond_timedwait(&n->rot_cond, &n->rot_state_lock, &ts) == ETIMEDOUT) break;
    s = n->rot_stop;
    pthread_mutex_unlock(&n->rot_state_lock);
    return s;
}

/* ---- the record ------------------------------------------------------------------ */

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static void log_report(const tide_node_rotation_report *r)
{
    char del[32], held[32], kept[32], rel[32] = "none";

    if (r->rc != 0) {
        tide_log(TIDE_LOG_WARN, "rotation %" PRIu64 " (%s) %s after %.1f ms: %s: %s", r->seq, r->trigger,
                 r->abandoned ? "abandoned" : "failed", ms(r->total_ns), tide_strerror(r->rc), r->error);
        return;
    }
    tide_size_format(r->gens.deleted_bytes, del, sizeof del);
    tide_size_format(r->gens.held_bytes, held, sizeof held);
    tide_size_format(r->keep_copied_bytes, kept, sizeof kept);
    if (r->trimmed && r->trim.rss_delta < 0) tide_size_format((uint64_t)-r->trim.rss_delta, rel, sizeof rel);
    tide_log(TIDE_LOG_INFO, "rotation %" PRIu64 " (%s): generation %" PRIu64 " created, %u dropped (%s deleted "
             "in %u steps, %s held open by readers), the previous newest held %" PRIu64 " objects; keep-list %" PRIu64 " keys, %" PRIu64
             " copied (%s), %" PRIu64 " missing; gate %.1f ms, keep %.1f ms, create %.1f ms, sync %.1f ms, manifest %.1f ms, "
             "switch %.3f ms, drop %.1f ms; trim %s (released %s, %.1f ms); total %.1f ms", r->seq, r->trigger,
             r->gens.new_id, r->gens.dropped, del, r->gens.delete_steps, held, r->gens.objects_in_previous,
             r->keep_keys, r->keep_copied, kept, r->keep_missing, ms(r->gate_wait_ns), ms(r->keep_ns),
             ms(r->gens.create_ns), ms(r->gens.sync_ns), ms(r->gens.manifest_ns), ms(r->gens.switch_ns), ms(r->gens.drop_ns),
             r->trimmed ? "made" : "not made", rel, ms(r->trim_ns), ms(r->total_ns));
}

/* Put attempt *r in the ring and the totals (it gets its seq), then log it. */
static void record(tide_node *n, tide_node_rotation_report *r)
{
    tide_node_rotation_totals *t = &n->rot_totals;
    uint64_t phase[TIDE_NODE_ROTATION_NPHASES] = { r->gate_wait_ns, r->keep_ns, r->gens.create_ns,
                          r->gens.sync_ns, r->gens.manifest_ns, r->gens.switch_ns, r->gens.drop_ns };

    pthread_mutex_lock(&n->rot_state_lock);
    r->seq = ++n->rot_seq;
    if (r->rc == 0) t->rotations++;
    else if (r->abandoned) t->abandoned++;
    else t->failures++;
    t->dropped += r->gens.dropped;
    t->deleted_bytes += r->gens.deleted_bytes;
    t->keep_copied += r->keep_copied;
    t->keep_copied_bytes += r->keep_copied_bytes;
    if (r->rc == 0)
        for (int i = 0; i < TIDE_NODE_ROTATION_NPHASES; i++) tide_hist_observe(&n->rot_hist[i], phase[i]);
    if (r->trimmed) {
        t->trims++;
        tide_hist_observe(&n->rot_trim_hist, r->trim.duration_ns);
        if (r->trim.rss_delta < 0) {
            t->trims_lowered++;
            t->trim_released_bytes += (uint64_t)-r->trim.rss_delta;
        }
    }
    TIDE_ASSERT(t->rotations + t->failures + t->abandoned == n->rot_seq);
    n->rotations[(r->seq - 1) % TIDE_NODE_ROTATIONS] = *r;
    pthread_mutex_unlock(&n->rot_state_lock);
    log_report(r);
}

/* ---- the rotation ------------------------------------------------------------------ */

/* Steps 4 and 5, with rot_lock held: the rotation, then the release after
 * a drop. Returns the rotation's result. */
static int archive_allows(tide_node *n, char *why, size_t cap);

static int rotate_locked(tide_node *n, tide_node_rotation_report *r)
{
    uint64_t epoch = tide_gens_read_epoch(n->gens);
    char why[400];
    int rc;

    /* Never drop what the archive lacks, whoever asked (the admin too). */
    if (!archive_allows(n, why, sizeof why)) {
        rc = tide_err_set(TIDE_EUNAVAIL, "%s: retry once it is sealed (tide_archive_lag_bytes, "
                          "tide generations)", why);
        snprintf(r->error, sizeof r->error, "%s", tide_last_error());
        memset(&r->gens, 0, sizeof r->gens);
        return rc;
    }
    rc = tide_gens_rotate(n->gens, &r->gens);

    /* A rotation that failed after its hide showed the hidden generations
     * again (the epoch moved): a miss remembered in the window may be
     * false now (node.c, invariant 4). */
    if (tide_gens_read_epoch(n->gens) != epoch) tide_keycache_clear(n->keycache);
    if (rc) {
        snprintf(r->error, sizeof r->error, "%s", tide_last_error());
        memset(&r->gens, 0, sizeof r->gens);
        return rc;
    }
    if (r->gens.dropped > 0 && n->opts.trim_after_rotation) {
        uint64_t t0 = tide_clock_mono_ns();
        r->trim_rc = ti_node_release(n, &r->trim);
        r->trim_ns = tide_clock_mono_ns() - t0;
        r->trimmed = 1;
        if (r->trim_rc)
            tide_log(TIDE_LOG_WARN, "the release after rotation failed: %s", tide_strerror(r->trim_rc));
    }
    return 0;
}

static int not_enabled(tide_node *n, const char *what)
{
    return tide_err_set(TIDE_EINVAL, "%s: online delete is off: no generations to %s", n->dir, what);
}

/* The keep-list, rot_lock held by the caller or not: batches of
 * delete_batch keys with back_off_ms between two. */
static int keep_keys(tide_node *n, const uint8_t *keys, size_t count, tide_node_rotation_report *r)
{
    uint64_t t0 = tide_clock_mono_ns();
    int rc = 0;

    for (size_t i = 0; i < count; i++) {
        const uint8_t *key = keys + i * n->key_size;
        int copied = 0;

        /* The pause ends early at a stop (tide_node_interrupt), and the
         * list stops there: a shutdown does not wait for a long one. */
        if (i > 0 && i % n->opts.delete_batch == 0 &&
            wait_until(n, tide_clock_mono_ns() + (uint64_t)n->opts.back_off_ms * NS_PER_MS)) {
            rc = tide_err_set(TIDE_ECLOSED, "%s: the node is closing: the keep-list stopped after %zu of %zu "
                              "keys", n->dir, i, count);
            break;
        }
        r->keep_keys++;
        rc = tide_gens_keep(n->gens, key, &copied);
        if (rc == TIDE_ENOTFOUND) { r->keep_missing++; rc = 0; continue; }
        if (rc) break;
        if (copied) {
            void *v = NULL;
            size_t len = 0;
            /* The copy's size, read back from the newest (its insert pool:
             * no I/O); tide_gens_keep does not say it. */
            if (tide_gens_fetch(n->gens, key, &v, &len, NULL) == 0) r->keep_copied_bytes += len;
            free(v);
            r->keep_copied++;
        }
    }
    r->keep_ns += tide_clock_mono_ns() - t0;
    return rc;
}

int tide_node_keep_keys(tide_node *n, const void *keys, size_t count, tide_node_rotation_report *r)
{
    tide_node_rotation_report local;

    if (!tide_gens_enabled(n->gens)) return not_enabled(n, "keep keys in");
    if (r == NULL) memset(&local, 0, sizeof local), r = &local;
    return keep_keys(n, keys, count, r);
}

/* The admin rotation with rot_lock held (keep fields of *r already set). */
static int admin_rotate(tide_node *n, const char *trigger, tide_node_rotation_report *r, uint64_t t0)
{
    int rc = rotate_locked(n, r);

    snprintf(r->trigger, sizeof r->trigger, "%s", trigger ? trigger : "admin");
    r->rc = rc;
    r->total_ns = tide_clock_mono_ns() - t0 + r->keep_ns;
    record(n, r);
    if (rc) tide_err_set(rc, "%s", r->error);
    return rc;
}

/* *r zeroed but for the keep-list's fields, which it keeps. */
static void reset_keeping(tide_node_rotation_report *r)
{
    tide_node_rotation_report k = *r;

    memset(r, 0, sizeof *r);
    r->keep_ns = k.keep_ns;
    r->keep_keys = k.keep_keys;
    r->keep_copied = k.keep_copied;
    r->keep_missing = k.keep_missing;
    r->keep_copied_bytes = k.keep_copied_bytes;
}

int tide_node_rotate(tide_node *n, const char *trigger, tide_node_rotation_report *r)
{
    tide_node_rotation_report local;
    uint64_t t0 = tide_clock_mono_ns();
    int rc;

    if (r == NULL) memset(&local, 0, sizeof local), r = &local;
    reset_keeping(r);
    r->started_unix_us = tide_clock_real_us();
    if (!tide_gens_enabled(n->gens)) return not_enabled(n, "rotate");
    pthread_mutex_lock(&n->rot_lock);
    rc = admin_rotate(n, trigger, r, t0);
    pthread_mutex_unlock(&n->rot_lock);
    return rc;
}

int tide_node_rotate_keep(tide_node *n, const void *keys, size_t count, const char *trigger,
                          tide_node_rotation_report *r)
{
    tide_node_rotation_report local;
    uint64_t t0 = tide_clock_mono_ns();
    int rc;

    if (r == NULL) r = &local;
    memset(r, 0, sizeof *r);
    r->started_unix_us = tide_clock_real_us();
    if (!tide_gens_enabled(n->gens)) return not_enabled(n, "rotate");
    pthread_mutex_lock(&n->rot_lock);
    rc = keep_keys(n, keys, count, r);
    if (rc == 0) {
        rc = admin_rotate(n, trigger, r, t0 + r->keep_ns);
    } else {
        /* Nothing rotated: the keep-list's error is the attempt's. */
        snprintf(r->trigger, sizeof r->trigger, "%s", trigger ? trigger : "admin");
        snprintf(r->error, sizeof r->error, "keep-list: %s", tide_last_error());
        r->rc = rc;
        r->total_ns = tide_clock_mono_ns() - t0;
        record(n, r);
        tide_err_set(rc, "%s", r->error);
    }
    pthread_mutex_unlock(&n->rot_lock);
    return rc;
}

/* The manifest's rotation count; rot_lock held, so it cannot move. */
static uint64_t rotations_now(tide_node *n)
{
    tide_gens_info gi;

    tide_gens_get_info(n->gens, &gi);
    return gi.rotations;
}

int tide_node_keep_at(tide_node *n, const void *keys, size_t count, tide_node_rotation_report *r,
                      uint64_t *rotations)
{
    tide_node_rotation_report local;
    int rc;

    if (!tide_gens_enabled(n->gens)) return not_enabled(n, "keep keys in");
    if (r == NULL) memset(&local, 0, sizeof local), r = &local;
    pthread_mutex_lock(&n->rot_lock);
    if (rotations) *rotations = rotations_now(n);
    rc = keep_keys(n, keys, count, r);
    pthread_mutex_unlock(&n->rot_lock);
    return rc;
}

int tide_node_rotate_expect(tide_node *n, uint64_t expect, const char *trigger, tide_node_rotation_report *r,
                            uint64_t *present)
{
    tide_node_rotation_report local;
    uint64_t t0 = tide_clock_mono_ns(), now;
    int rc = 1;

    if (r == NULL) r = &local;
    memset(r, 0, sizeof *r);
    r->started_unix_us = tide_clock_real_us();
    if (!tide_gens_enabled(n->gens)) return not_enabled(n, "rotate");
    pthread_mutex_lock(&n->rot_lock);
    now = rotations_now(n);
    if (present) *present = now;
    if (now == expect) {
        rc = admin_rotate(n, trigger, r, t0);
        if (present) *present = rotations_now(n);
    }
    pthread_mutex_unlock(&n->rot_lock);
    return rc;
}

/* ---- the gates ------------------------------------------------------------------ */

/* The trigger that is due, or NULL (step 1). */
static const char *due_trigger(tide_node *n, const tide_gens_info *gi)
{
    const tide_node_opts *o = &n->opts;
    uint64_t since = gi->last_rotation_us ? gi->last_rotation_us : n->opened_unix_us;

    if (!gi->enabled) return NULL;
    if (o->online_delete && gi->newest_objects >= o->online_delete) return "objects";
    if (o->rotate_bytes && gi->newest_bytes >= o->rotate_bytes) return "bytes";
    if (o->rotate_interval_s && tide_clock_real_us() >= since + o->rotate_interval_s * 1000000u) return "time";
    return NULL;
}

/* advisory_delete lets the rotation that makes the count rotations+1 run. */
static int advisory_allows(tide_node *n, uint64_t rotations)
{
    uint64_t cd;

    if (!n->opts.advisory_delete) return 1;
    pthread_mutex_lock(&n->rot_state_lock);
    cd = n->can_delete;
    pthread_mutex_unlock(&n->rot_state_lock);
    return cd >= rotations + 1;
}

/* The archive's part of step 3 (and of every rotation, step 4): 1 when
 * the rotation would drop no generation the archive lacks, else 0 with
 * the reason in why. A rotation drops the generations past keep - 1 of
 * those held now; each must be sealed in the archive first. */
static int archive_allows(tide_node *n, char *why, size_t cap)
{
    tide_archive_info ai;
    tide_gens_info gi;
    uint64_t uploaded = 0;

    if (n->archive == NULL || n->replica) return 1;
    tide_node_gens_info(n, &gi);
    for (unsigned i = gi.keep ? gi.keep - 1 : 0; i < gi.count; i++) {
        uint64_t id = gi.gens[i].id;
        const char *state;

        if (tide_archive_sealed(n->archive, id)) continue;
        state = tide_archive_gen_state(n->archive, id, &uploaded);
        tide_archive_get_info(n->archive, &ai);
        snprintf(why, cap, "the archive has not sealed generation %" PRIu64 " yet, which this rotation "
                 "would drop (%s, %" PRIu64 " of %" PRIu64 " data bytes there; %s)", id, state, uploaded,
                 gi.gens[i].dat_file_bytes, ai.conflict ? "the archive is in conflict"
                 : ai.up ? "the cluster answers" : "the cluster does not answer");
        return 0;
    }
    return 1;
}

/* Step 3's test: 1 when healthy, else 0 with the reason in why. */
static int healthy(tide_node *n, char *why, size_t cap)
{
    tide_store_info si;
    uint64_t seen = n->rot_failures_seen, rss = 0;
    char a[32], b[32];

    if (!archive_allows(n, why, cap)) {
        pthread_mutex_lock(&n->rot_state_lock);
        n->rot_totals.archive_waits++;
        pthread_mutex_unlock(&n->rot_state_lock);
        return 0;
    }
    if (n->opts.hooks.health) return n->opts.hooks.health(n->opts.hooks.health_arg, why, cap);
    tide_gens_store_info(n->gens, &si);
    n->rot_failures_seen = si.commit_failures;
    if (si.commit_failures > seen) {
        snprintf(why, cap, "%" PRIu64 " commit(s) failed since the last look", si.commit_failures - seen);
        return 0;
    }
    /* A whole burst in the pools (pending plus committing) means commits
     * run back to back, each started by a full pool, and inserts may wait
     * for room: a backlog. Less is only load: half a burst was the first
     * bound, and under the lab's steady writes with a 4 MiB burst it held
     * every first rotation back for 50 s (docs/ROTATION.md). */
    if (si.pool_bytes >= si.burst_bytes) {
        snprintf(why, cap, "a commit backlog: the insert pools hold %s, a whole burst of %s",
                 tide_size_format(si.pool_bytes, a, sizeof a), tide_size_format(si.burst_bytes, b, sizeof b));
        return 0;
    }
    /* At HIGH the node sheds writes to get under its limit; a
     * rotation's keep-list copies and new generation's buffers would add
     * to what it is shedding. The drop itself would free disk, not memory. */
    if (tide_node_overload_level(n) >= TIDE_OVERLOAD_HIGH) {
        tide_node_memory_status ms;
        tide_node_memory_get(n, &ms);
        snprintf(why, cap, "the memory level is %s: counted %s of the limit %s",
                 tide_mem_overload_level_name(ms.level), tide_size_format(ms.counted_bytes, a, sizeof a),
                 tide_size_format(ms.limit_bytes, b, sizeof b));
        return 0;
    }
    /* A read that fails says nothing about memory: not a reason to hold
     * deletes back. Anonymous memory, as the governor counts: nudb.key's
     * mapped pages are page cache, and the RSS grows with them. */
    if (n->opts.rotation_max_rss && tide_mem_proc_anon_rss(&rss) == 0 && rss > n->opts.rotation_max_rss) {
        snprintf(why, cap, "the process RSS (anonymous) is %s, over rotation_max_rss=%s",
                 tide_size_format(rss, a, sizeof a), tide_size_format(n->opts.rotation_max_rss, b, sizeof b));
        return 0;
    }
    return 1;
}

/* Step 3: 0 healthy; 1 abandoned (r says why); -1 the node is closing. */
static int health_gate(tide_node *n, tide_node_rotation_report *r)
{
    uint64_t t0 = tide_clock_mono_ns(), max = (uint64_t)n->opts.rotation_wait_max_s * NS_PER_S;
    uint64_t looks = 0, waits = 0;
    char why[400] = "";

    for (;;) {
        uint64_t now, wait;

        looks++;
        if (healthy(n, why, sizeof why)) break;
        now = tide_clock_mono_ns();
        if (now - t0 >= max) {
            r->abandoned = 1;
            r->rc = TIDE_EBUSY;
            /* A cut message is still the right one (the reason comes last). */
            if (snprintf(r->error, sizeof r->error, "abandoned after %.1f s waiting for health (bound "
                     "rotation_wait_max_seconds=%u, %" PRIu64 " looks, %" PRIu64 " waits of "
                     "recovery_wait_seconds=%u): %s", (double)(now - t0) / 1e9, n->opts.rotation_wait_max_s,
                     looks, waits, n->opts.recovery_wait_s, why) >= (int)sizeof r->error)
                r->error[sizeof r->error - 1] = '\0';
            break;
        }
        wait = (uint64_t)n->opts.recovery_wait_s * NS_PER_S;
        if (wait > max - (now - t0)) wait = max - (now - t0);
        waits++;
        if (wait_until(n, now + wait)) return -1;
    }
    r->gate_wait_ns = tide_clock_mono_ns() - t0;
    pthread_mutex_lock(&n->rot_state_lock);
    n->rot_totals.gate_waits += waits;
    pthread_mutex_unlock(&n->rot_state_lock);
    return r->abandoned ? 1 : 0;
}

/* Step 0 of a look: after a double fault, write the manifest again now
 * rather than at the next trigger, so the disk is known again as soon as
 * the I/O works (the dropped generations stay hidden: gens_rotate.c,
 * invariant 8). Logged once per episode. */
static void rewrite_if_unknown(tide_node *n)
{
    if (!tide_gens_disk_unknown(n->gens)) return;
    pthread_mutex_lock(&n->rot_lock);
    int rc = tide_gens_rewrite_manifest(n->gens);
    pthread_mutex_unlock(&n->rot_lock);
    if (rc == 0) n->rot_rewrite_logged = 0;
    else if (!n->rot_rewrite_logged) {
        tide_log(TIDE_LOG_WARN, "%s: writing the manifest again after a failed rotation failed: %s (retried "
                 "at every look)", n->dir, tide_last_error());
        n->rot_rewrite_logged = 1;
    }
}

/* One look with rot_check_lock held (tide_node_rotate_check). */
static int check_locked(tide_node *n, tide_node_rotation_report *r)
{
    tide_gens_info gi;
    const char *trigger;
    uint64_t t0;
    int g;

    rewrite_if_unknown(n);
    tide_node_gens_info(n, &gi);
    trigger = due_trigger(n, &gi);
    if (trigger == NULL) { n->rot_advisory_logged = 0; return 0; }
    if (tide_clock_mono_ns() < n->rot_next_try_ns) return 0;
    if (!advisory_allows(n, gi.rotations)) {
        if (!n->rot_advisory_logged)
            tide_log(TIDE_LOG_INFO, "rotation due (%s) but advisory_delete waits: can_delete does not allow "
                     "rotation %" PRIu64 " yet (POST /v1/admin/can_delete?value=now)", trigger, gi.rotations + 1);
        n->rot_advisory_logged = 1;
        return 0;
    }
    memset(r, 0, sizeof *r);
    snprintf(r->trigger, sizeof r->trigger, "%s", trigger);
    r->started_unix_us = tide_clock_real_us();
    t0 = tide_clock_mono_ns();
    g = health_gate(n, r);
    if (g < 0) return 0;
    if (g == 0) {
        pthread_mutex_lock(&n->rot_lock);
        /* An admin rotation may have run while the gate waited. */
        tide_node_gens_info(n, &gi);
        if (due_trigger(n, &gi) == NULL || !advisory_allows(n, gi.rotations)) {
            pthread_mutex_unlock(&n->rot_lock);
            return 0;
        }
        r->rc = rotate_locked(n, r);
        r->total_ns = tide_clock_mono_ns() - t0;
        record(n, r);
        pthread_mutex_unlock(&n->rot_lock);
    } else {
        n->rot_next_try_ns = tide_clock_mono_ns() + (uint64_t)n->opts.recovery_wait_s * NS_PER_S;
        r->total_ns = tide_clock_mono_ns() - t0;
        record(n, r);
    }
    n->rot_advisory_logged = 0;
    return 1;
}

int tide_node_rotate_check(tide_node *n, tide_node_rotation_report *r)
{
    tide_node_rotation_report local;
    int made;

    if (r == NULL) r = &local;
    pthread_mutex_lock(&n->rot_check_lock);
    made = check_locked(n, r);
    pthread_mutex_unlock(&n->rot_check_lock);
    return made;
}

/* ---- the thread ------------------------------------------------------------------ */

static void *rotator_main(void *arg)
{
    tide_node *n = arg;

    while (!wait_until(n, tide_clock_mono_ns() + n->opts.rotate_check_ms * NS_PER_MS))
        (void)tide_node_rotate_check(n, NULL);
    return NULL;
}

int ti_node_rotator_start(tide_node *n)
{
    int e = pthread_create(&n->rot_thread, NULL, rotator_main, n);
    if (e == 0) n->rot_started = 1;
    return e;
}

void tide_node_interrupt(tide_node *n)
{
    pthread_mutex_lock(&n->rot_state_lock);
    n->rot_stop = 1;
    pthread_cond_broadcast(&n->rot_cond);
    pthread_mutex_unlock(&n->rot_state_lock);
    /* A gradual drop (delete_chunk steps, back_off_ms apart) may take
     * minutes; the interrupt stops it between two steps and the next open
     * removes the rest, so close never waits for it (invariant 6). */
    if (n->gens) tide_gens_interrupt(n->gens);
}

void ti_node_rotator_stop(tide_node *n)
{
    tide_node_interrupt(n);
    if (n->rot_started) pthread_join(n->rot_thread, NULL);
    n->rot_started = 0;
}

/* ---- can_delete and the figures ------------------------------------------------------- */

/* "never", "always", "now" or a decimal count up to 2^53. */
static int parse_can_delete(tide_node *n, const char *value, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (strcasecmp(value, "never") == 0) { *out = 0; return 0; }
    if (strcasecmp(value, "always") == 0) { *out = UINT64_MAX; return 0; }
    if (strcasecmp(value, "now") == 0) {
        tide_gens_info gi;
        tide_node_gens_info(n, &gi);
        *out = gi.rotations + 1;
        return 0;
    }
    if (value[0] < '0' || value[0] > '9') goto bad;
    errno = 0;
    v = strtoull(value, &end, 10);
    if (*end != '\0' || errno != 0 || v > CAN_DELETE_NUMBER_MAX) goto bad;
    *out = v;
    return 0;
bad:
    return tide_err_set(TIDE_EINVAL, "can_delete: '%.64s' is not a rotation count (0 to 2^53), never, always "
                        "or now", value);
}

int tide_node_can_delete(tide_node *n, const char *value, uint64_t *now)
{
    uint64_t v = 0;
    int rc = 0;

    if (value != NULL) {
        rc = parse_can_delete(n, value, &v);
        if (rc) return rc;
    }
    pthread_mutex_lock(&n->rot_state_lock);
    if (value != NULL) n->can_delete = v;
    if (now) *now = n->can_delete;
    pthread_cond_broadcast(&n->rot_cond);      /* a waiting rotation may go now */
    pthread_mutex_unlock(&n->rot_state_lock);
    return 0;
}

size_t tide_node_rotations(tide_node *n, tide_node_rotation_report *out, size_t cap)
{
    size_t k = 0;

    pthread_mutex_lock(&n->rot_state_lock);
    for (uint64_t s = n->rot_seq; s > 0 && k < cap && k < TIDE_NODE_ROTATIONS; s--, k++)
        out[k] = n->rotations[(s - 1) % TIDE_NODE_ROTATIONS];
    pthread_mutex_unlock(&n->rot_state_lock);
    return k;
}

void tide_node_rotation_totals_get(tide_node *n, tide_node_rotation_totals *out)
{
    pthread_mutex_lock(&n->rot_state_lock);
    *out = n->rot_totals;
    out->can_delete = n->can_delete;
    for (int i = 0; i < TIDE_NODE_ROTATION_NPHASES; i++) tide_hist_snapshot(&n->rot_hist[i], &out->phase_duration[i]);
    tide_hist_snapshot(&n->rot_trim_hist, &out->trim_duration);
    TIDE_ASSERT(out->trim_duration.count == out->trims);
    pthread_mutex_unlock(&n->rot_state_lock);
}

void tide_node_gens_info(tide_node *n, tide_gens_info *out)
{
    tide_gens_get_info(n->gens, out);
}
