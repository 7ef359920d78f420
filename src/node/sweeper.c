/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sweeper.c: the node's sweep rounds and the thread that runs them.
 *
 * A round is, always in this order: sweep the node cache, sweep the key
 * cache, compact the node cache's arena and then the key cache's and give
 * their empty segments back (tide_cache_evacuate, tide_keycache_evacuate,
 * each within cache_arena_evacuate bytes; timed apart from the sweeps, the
 * copies and the madvise calls each), make at most
 * one release call (tide_mem_trim, when opts.trim is
 * set and opts.trim_policy calls for it: always, every N-th round, after a
 * sweep that freed enough, or when the allocator holds enough free), record
 * the report, log the trim line at debug. The next round is due
 * sweep_interval_ms after the end of the last one, whoever ran it
 * (tide_node_sweep runs a round on its caller's thread). The interval counts
 * from the end so that a slow trim on a big heap cannot make rounds pile up
 * back to back. At a round's start the memory governor's sweep peak
 * starts again (governor.c); the governor's own rounds (ti_node_round with
 * force_release) make their release whatever the policy says.
 *
 * Invariants:
 *   1. Rounds never overlap (round_lock), and each makes at most one release
 *      call, after both cache sweeps and the arenas' evacuations and
 *      releases (so the trim sees what the evacuations freed).
 *   2. reports[] holds the last min(seq, TIDE_NODE_REPORTS) rounds;
 *      reports[(seq - 1) % TIDE_NODE_REPORTS] is round seq.
 *   3. totals.sweeps == seq of the last recorded round (asserted by
 *      tide_node_totals_get).
 *   4. next_due_ns is set only at the end of a round (and at open).
 *   5. seq is written only under both round_lock and state_lock, so a
 *      thread holding either may read it.
 *
 * Never: hold state_lock across a cache sweep or a release (readers of the
 * reports must not wait for a trim); release memory anywhere but in a round.
 */
#include "node/node_impl.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "mem/account.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/log.h"

static void trace(tide_node *n, const char *step)
{
    if (n->opts.hooks.trace) n->opts.hooks.trace(n->opts.hooks.trace_arg, step);
}

void ti_node_refresh_store_accounts(tide_node *n, tide_store_info *info)
{
    tide_gens_store_info(n->gens, info);
    /* The spares too: mapped and resident, held for the next batch. */
    tide_mem_account_set(TIDE_MEM_STORE_INSERT_POOL, (int64_t)(info->pool_bytes + info->pool_spare_bytes));
    tide_mem_account_set(TIDE_MEM_STORE_COMMIT, (int64_t)info->commit_buffer_bytes);
    tide_mem_account_set(TIDE_MEM_STORE_TAIL_INDEX, (int64_t)info->tail_bytes);
}

/* The one measured release call, a sweep's and a rotation's (rotator.c). */
int ti_node_release(tide_node *n, tide_mem_trim_report *r)
{
    return n->opts.hooks.release ? n->opts.hooks.release(n->opts.hooks.release_arg, r) : tide_mem_trim_pad(n->opts.trim_pad, r);
}

/* Whether this round's sweep calls for a release, by the policy. seq is the
 * round's number (1-based); called under round_lock. */
static int policy_wants_trim(tide_node *n, uint64_t seq, uint64_t freed)
{
    tide_mem_alloc_stats st;
    uint64_t rss = 0, free_bytes = 0;
    int family;

    if (!n->opts.trim) return 0;
    switch (n->opts.trim_policy) {
    case TIDE_TRIM_NEVER: return 0;
    case TIDE_TRIM_EVERY: return n->opts.trim_param <= 1 || seq % n->opts.trim_param == 0;
    case TIDE_TRIM_FREED: return freed >= n->opts.trim_param;
    case TIDE_TRIM_FREE_PCT:
        family = tide_mem_alloc_family();
        if (tide_mem_alloc_stats_read(family, &st) != 0 || tide_mem_proc_statm_rss(&rss) != 0 || rss == 0)
            return 1;   /* cannot tell: trim, as the default does */
        if (family == TIDE_MEM_ALLOC_GLIBC) free_bytes = st.glibc.free;
        else if (family == TIDE_MEM_ALLOC_JEMALLOC) free_bytes = st.jemalloc.dirty + st.jemalloc.muzzy;
        else if (family == TIDE_MEM_ALLOC_TCMALLOC) free_bytes = st.tcmalloc.pageheap_free;
        else return 1;
        return free_bytes * 100 > rss * n->opts.trim_param;
    default: return 1;
    }
}

static void run_round(tide_node *n, tide_node_sweep_report *out, int force_release)
{
    tide_node_sweep_report r;
    tide_store_info info;
    uint64_t t0;

    pthread_mutex_lock(&n->round_lock);
    ti_node_governor_round_began(n);
    memset(&r, 0, sizeof r);
    r.started_unix_us = tide_clock_real_us();
    t0 = tide_clock_mono_ns();
    trace(n, "sweep node_cache");
    tide_cache_sweep(n->cache, &r.node_cache);
    trace(n, "sweep key_cache");
    tide_keycache_sweep(n->keycache, &r.key_cache);
    r.sweep_ns = tide_clock_mono_ns() - t0;
    ti_node_refresh_store_accounts(n, &info);
    if (n->opts.cache_arena) {
        trace(n, "evacuate");
        r.arena_rc = tide_cache_evacuate(n->cache, n->opts.cache_arena_evacuate, &r.arena);
        r.key_arena_rc = tide_keycache_evacuate(n->keycache, n->opts.cache_arena_evacuate, &r.key_arena);
    }
    r.freed_bytes = (r.node_cache.bytes_before > r.node_cache.bytes_after
                     ? r.node_cache.bytes_before - r.node_cache.bytes_after : 0)
                  + (r.key_cache.bytes_before > r.key_cache.bytes_after
                     ? r.key_cache.bytes_before - r.key_cache.bytes_after : 0);
    /* seq changes only at the end of a round, under round_lock, which this
     * thread holds: it can be read here without state_lock. */
    if (force_release ? n->opts.trim : policy_wants_trim(n, n->seq + 1, r.freed_bytes)) {
        trace(n, "release");
        r.trim_rc = ti_node_release(n, &r.trim);
        r.trimmed = 1;
    }

    r.consumer_bytes = tide_mem_account_total();
    if (tide_mem_proc_anon_rss(&r.anon_rss) != 0) r.anon_rss = 0;
    pthread_mutex_lock(&n->state_lock);
    r.seq = ++n->seq;
    n->reports[(r.seq - 1) % TIDE_NODE_REPORTS] = r;
    n->totals.sweeps = r.seq;
    n->totals.sweep_ns += r.sweep_ns;
    tide_hist_observe(&n->sweep_hist, r.sweep_ns);
    n->totals.arena_evacuate_ns += r.arena.evacuate_ns;
    n->totals.key_arena_evacuate_ns += r.key_arena.evacuate_ns;
    if (!r.trimmed && n->opts.trim) n->totals.trims_skipped++;
    if (r.trimmed) {
        tide_hist_observe(&n->trim_hist, r.trim.duration_ns);
        n->totals.last_trim_rss_delta = r.trim.rss_delta;
        n->totals.trims++;
        n->totals.trim_ns += r.trim.duration_ns;
        n->totals.trim_minflt += r.trim.minflt;
        n->totals.trim_majflt += r.trim.majflt;
        if (r.trim.rss_delta < 0) {
            n->totals.trims_lowered++;
            n->totals.trim_released_bytes += (uint64_t)-r.trim.rss_delta;
        }
    }
    n->next_due_ns = tide_clock_mono_ns() + n->opts.sweep_interval_ms * 1000000u;
    pthread_cond_broadcast(&n->state_cond);
    pthread_mutex_unlock(&n->state_lock);
    trace(n, "done");
    pthread_mutex_unlock(&n->round_lock);

    if (r.trimmed && tide_log_get_level() <= TIDE_LOG_DEBUG) {
        char line[192];
        tide_mem_trim_format(&r.trim, line, sizeof line);
        tide_log(TIDE_LOG_DEBUG, "%s", line);
    }
    if (r.arena_rc)
        tide_log(TIDE_LOG_WARN, "sweep %" PRIu64 ": the cache arena's evacuation or release failed: %s", r.seq,
                 tide_strerror(r.arena_rc));
    if (r.key_arena_rc)
        tide_log(TIDE_LOG_WARN, "sweep %" PRIu64 ": the key cache arena's evacuation or release failed: %s",
                 r.seq, tide_strerror(r.key_arena_rc));
    if (r.trimmed && r.trim_rc)
        tide_log(TIDE_LOG_WARN, "sweep %" PRIu64 ": the release call failed: %s", r.seq,
                 tide_strerror(r.trim_rc));
    if (out) *out = r;
}

static void *sweeper_main(void *arg)
{
    tide_node *n = arg;

    pthread_mutex_lock(&n->state_lock);
    while (!n->stop) {
        uint64_t now = tide_clock_mono_ns();
        if (now < n->next_due_ns) {
            struct timespec ts = { (time_t)(n->next_due_ns / 1000000000u),
                                   (long)(n->next_due_ns % 1000000000u) };
            pthread_cond_timedwait(&n->state_cond, &n->state_lock, &ts);
            continue;                     /* re-read stop and the due time */
        }
        pthread_mutex_unlock(&n->state_lock);
        run_round(n, NULL, 0);
        pthread_mutex_lock(&n->state_lock);
    }
    pthread_mutex_unlock(&n->state_lock);
    return NULL;
}

int ti_node_sweeper_start(tide_node *n)
{
    return pthread_create(&n->thread, NULL, sweeper_main, n);
}

void tide_node_sweep(tide_node *n, tide_node_sweep_report *r)
{
    run_round(n, r, 0);
}

void ti_node_round(tide_node *n, tide_node_sweep_report *r, int force_release)
{
    run_round(n, r, force_release);
}

size_t tide_node_reports(tide_node *n, tide_node_sweep_report *out, size_t cap)
{
    size_t k = 0;

    pthread_mutex_lock(&n->state_lock);
    for (uint64_t s = n->seq; s > 0 && k < cap && k < TIDE_NODE_REPORTS; s--, k++)
        out[k] = n->reports[(s - 1) % TIDE_NODE_REPORTS];
    pthread_mutex_unlock(&n->state_lock);
    return k;
}

void tide_node_totals_get(tide_node *n, tide_node_totals *out)
{
    pthread_mutex_lock(&n->state_lock);
    *out = n->totals;
    TIDE_ASSERT(out->sweeps == n->seq);
    tide_hist_snapshot(&n->sweep_hist, &out->sweep_duration);
    tide_hist_snapshot(&n->trim_hist, &out->trim_duration);
    TIDE_ASSERT(out->sweep_duration.count == out->sweeps && out->trim_duration.count == out->trims);
    pthread_mutex_unlock(&n->state_lock);
    out->puts = atomic_load(&n->puts);
    out->puts_existing = atomic_load(&n->puts_existing);
    out->gets = atomic_load(&n->gets);
    out->gets_cache = atomic_load(&n->gets_cache);
    out->gets_keycache = atomic_load(&n->gets_keycache);
    out->gets_store = atomic_load(&n->gets_store);
    out->gets_missing = atomic_load(&n->gets_missing);
}

