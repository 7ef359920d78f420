/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * governor.c: the node's memory governor (docs/MEMORY-LIMIT.md):
 * it reads what the process costs, moves the overload level
 * (mem/overload.h) against opts.memory_limit, and does what each level
 * asks.
 *
 * One look (tide_node_memory_check; the thread makes one every
 * memory_poll_ms):
 *   1. a reading: opts.memory_reading, or the real one: the process's
 *      anonymous resident memory, RssAnon + RssShmem (/proc/self/status;
 *      VmRSS on a kernel before 4.5 that has no split): file-backed pages
 *      (the binary, libraries, nudb.key's read-only map) are page cache the
 *      kernel reclaims under pressure, as it does the cgroup's, and never
 *      what a sweep or a trim can give back; the cgroup's usage, page cache and events
 *      (opts.cgroup_path), PSI (opts.psi_path, the system's by default),
 *      and whether the PSI trigger fired since the last look; a failed
 *      reading is counted and changes nothing else, and so is one whose
 *      cgroup figures failed (cgroup_failures);
 *   2. counted = max(rss, cgroup usage - page cache), and which one it was;
 *      the peaks (since open; since the last sweep round began; on a
 *      kernel without RssAnon the kernel's VmHWM is added to the first
 *      when the status is asked for, tide_node_memory_get, not read at
 *      each look);
 *   3. the pressure flag, with its own hysteresis: on when some avg10 (the
 *      larger of the system's and the cgroup's v2 memory.pressure) >=
 *      memory_pressure_pct or the trigger fired, off once avg10 < half of
 *      it and the trigger has been quiet one window (2 s) since it last
 *      fired;
 *   4. with a limit, the level (tide_mem_overload_update); a change is
 *      logged once (WARN up, INFO down) with the figures and the mark
 *      crossed, recorded in the ring and counted;
 *   5. the actions: on a rise to SOFT or above, the caches' budgets and
 *      hard limits divided by 2^level when that is stricter than the
 *      divisor in force (shrink; a fall above NORMAL keeps the divisor), shed_writes entering HIGH,
 *      stop_accepting entering CRITICAL, then one sweep round with its
 *      release (ti_node_round, forced unless opts.trim is 0); while the
 *      counted bytes stay at or above SOFT's enter mark, the round again
 *      every TIDE_NODE_MEMORY_RESWEEP_MS, backing off (doubling, to
 *      TIDE_NODE_MEMORY_RESWEEP_MAX_MS) while the rounds free nothing;
 *      back at NORMAL the caches'
 *      limits as opened (restore).
 * The governor's time (the resweep, the seconds per level) is opts.clock_us
 * when set (tests), else the monotonic clock.
 *
 * The thread waits with poll() on a wake pipe (close writes to it after
 * setting mem_stopping; tide_node_memory_configure writes to it for a look
 * at once) and the
 * PSI trigger's descriptor (on the cgroup's memory.pressure with a v2
 * cgroup_path, else on the PSI file) when the kernel granted one (POLLPRI: a look at
 * once), for memory_poll_ms.
 *
 * Invariants:
 *   1. mem_level == mem_ov.level after every look with a limit, NORMAL
 *      without one; it is written only under mem_check_lock.
 *   2. mem_st.level_changes == the number of log lines about a level, and
 *      each change goes into the ring once.
 *   3. mem_shrunk is 1 exactly when the caches run with their limits as
 *      opened (they run with them divided by mem_shrunk); it moves only
 *      with a shrink or a restore, each counted.
 *   4. Locks: mem_check_lock, then round_lock (the round), then mem_lock
 *      (copies only).
 *
 * Never: drop or refuse to commit anything already acknowledged (the
 * governor only sweeps caches and releases free memory; tide_node_put
 * refuses new writes before they touch the store); hold mem_lock across a
 * reading or a round.
 */
#include "node/node_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem/proc.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* The trigger's window: 2 s. Kernels >= 6.5 refuse (EINVAL) a window that
 * is not a multiple of 2 s from a process without CAP_SYS_RESOURCE: a 1 s
 * window would be refused on every such machine. */
#define PSI_WINDOW_US 2000000u

const char *tide_node_action_name(int action)
{
    static const char *const names[TIDE_NODE_ACT_COUNT] = { "sweep", "shrink", "restore", "trim",
                                                            "shed_writes", "stop_accepting" };
    return action >= 0 && action < TIDE_NODE_ACT_COUNT ? names[action] : "?";
}

int tide_node_overload_level(const tide_node *n)
{
    return atomic_load_explicit(&n->mem_level, memory_order_relaxed);
}

static uint64_t gov_now_us(tide_node *n)
{
    return n->opts.hooks.clock_us ? n->opts.hooks.clock_us(n->opts.hooks.clock_arg) : tide_clock_mono_us();
}

/* ---- the reading ------------------------------------------------------------ */

/* The PSI file the pressure comes from, or NULL for none. */
static const char *psi_path(const tide_node *n)
{
    if (n->opts.hooks.psi_path == NULL) return TIDE_MEM_PSI_SYSTEM;
    return n->opts.hooks.psi_path[0] ? n->opts.hooks.psi_path : NULL;
}

/* The real reading. The anonymous memory must be read; the cgroup and
 * PSI are extras whose failure leaves their has_ flag 0. Never RSS less
 * a mincore() count of nudb.key's map: mincore reports every page of the
 * file in the page cache (the commit's pwrites put them there), not the
 * pages this process mapped in, so that difference falls toward 0 as the
 * key file grows. */
static int real_reading(tide_node *n, tide_node_memory_reading *r)
{
    const char *psi = psi_path(n);
    int rc = tide_mem_proc_anon_rss(&r->rss_bytes);

    if (rc) return rc;
    if (n->mem_cgroup_path) {
        if (tide_mem_cgroup_usage_read(n->mem_cgroup_path, n->opts.cgroup_version, &r->cgroup) == 0)
            r->has_cgroup = 1;
        else
            r->cgroup_failed = 1;   /* tide_last_error says why (check_locked logs it) */
    }
    if (psi && tide_mem_psi_read(psi, &r->psi) == 0) r->has_psi = 1;
    return 0;
}

/* Stop polling the trigger (POLLERR: its cgroup went away; POLLNVAL): close
 * it, and say so in the status (under mem_check_lock). */
static void close_trigger(tide_node *n, short revents)
{
    close(n->mem_psi_fd);
    n->mem_psi_fd = -1;
    atomic_store(&n->mem_psi_seen, 0);
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.psi_trigger = 0;
    snprintf(n->mem_st.psi_trigger_error, sizeof n->mem_st.psi_trigger_error,
             "the trigger's descriptor reported %s: closed; the averages are polled alone",
             (revents & POLLNVAL) ? "POLLNVAL" : "POLLERR");
    pthread_mutex_unlock(&n->mem_lock);
    tide_log(TIDE_LOG_WARN, "memory governor: %s", n->mem_st.psi_trigger_error);
}

/* Whether the trigger fired since the last look: the thread's wait saw it
 * (mem_psi_seen), or a poll now does (each consumes the event). POLLERR and
 * POLLNVAL come first (the kernel reports POLLPRI with POLLERR for a trigger
 * whose cgroup is gone): never a firing; the trigger is closed, here when no
 * thread polls it or on that thread, else by the thread's own wait. */
static int trigger_fired(tide_node *n)
{
    struct pollfd p = { n->mem_psi_fd, POLLPRI, 0 };
    int seen = atomic_exchange(&n->mem_psi_seen, 0);

    if (n->mem_psi_fd < 0) return seen;
    if (poll(&p, 1, 0) != 1) return seen;
    if (p.revents & (POLLERR | POLLNVAL)) {
        if (!n->mem_started || pthread_equal(pthread_self(), n->mem_thread)) close_trigger(n, p.revents);
        return 0;
    }
    return (p.revents & POLLPRI) || seen;
}

static int take_reading(tide_node *n, tide_node_memory_reading *r)
{
    memset(r, 0, sizeof *r);
    if (n->opts.hooks.memory_reading) return n->opts.hooks.memory_reading(n->opts.hooks.memory_reading_arg, r);
    r->psi_triggered = trigger_fired(n);
    return real_reading(n, r);
}

/* cgroup usage less page cache (0 without a cgroup or when the cache is
 * larger). */
static uint64_t cgroup_counted(const tide_node_memory_reading *r)
{
    if (!r->has_cgroup || r->cgroup.current_bytes < r->cgroup.page_cache_bytes) return 0;
    return r->cgroup.current_bytes - r->cgroup.page_cache_bytes;
}

/* The pressure flag after reading `r` at `now` (step 3). A firing of the
 * trigger holds it on for one trigger window after it: without a hold it
 * would flap off at the next look, once per window. */
static int pressure_after(tide_node *n, const tide_node_memory_reading *r, int was, uint64_t now)
{
    double pct = n->mem_pressure_pct, avg = r->has_psi ? r->psi.some.avg10 : 0;
    int has = r->has_psi;

    if (n->mem_pressure_pct == 0) return 0;
    /* the cgroup's own (v2 memory.pressure) when larger: the group can
     * stall against its limit while the machine does not */
    if (r->has_cgroup && r->cgroup.has_psi) {
        if (!has || r->cgroup.psi.some.avg10 > avg) avg = r->cgroup.psi.some.avg10;
        has = 1;
    }
    if (r->psi_triggered) {
        n->mem_psi_fired = 1;
        n->mem_psi_fired_us = now;
    }
    if (r->psi_triggered || (has && avg >= pct)) return 1;
    if (n->mem_psi_fired && now - n->mem_psi_fired_us < PSI_WINDOW_US) return 1;
    return was && has && avg >= pct / 2;
}

/* ---- the caches' limits -------------------------------------------------------- */

static size_t divided(size_t v, int div) { return v / (size_t)div ? v / (size_t)div : (v ? 1 : 0); }

/* Give the caches their limits as opened divided by `div` (1: as opened).
 * A cache opened without a limit gets none (there is nothing to divide;
 * docs/MEMORY-LIMIT.md: derived budgets bound them when a limit applies). */
static void set_cache_limits(tide_node *n, int div)
{
    int rc = tide_cache_set_limits(n->cache, divided(n->mem_cache_budget, div), divided(n->mem_cache_hard, div));

    TIDE_ASSERT(rc == 0);       /* budget <= hard holds after the same division */
    rc = tide_keycache_set_hard_limit(n->keycache, divided(n->mem_keycache_hard, div));
    TIDE_ASSERT(rc == 0);
    n->mem_shrunk = div;
}

/* Invariant 3: the caches run with their limits as opened divided by
 * mem_shrunk (as opened exactly when it is 1). */
static void assert_limits(tide_node *n)
{
    tide_cache_stats cs;
    tide_keycache_stats ks;

    tide_cache_stats_get(n->cache, &cs);
    tide_keycache_stats_get(n->keycache, &ks);
    TIDE_ASSERT(n->mem_shrunk >= 1);
    TIDE_ASSERT(cs.budget_bytes == divided(n->mem_cache_budget, n->mem_shrunk));
    TIDE_ASSERT(cs.hard_limit_bytes == divided(n->mem_cache_hard, n->mem_shrunk));
    TIDE_ASSERT(ks.hard_limit_bytes == divided(n->mem_keycache_hard, n->mem_shrunk));
}

/* ---- the status ---------------------------------------------------------------- */

static void count_action(tide_node *n, int action)
{
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.actions[action]++;
    pthread_mutex_unlock(&n->mem_lock);
}

/* One sweep round with its release, counted (step 5); `r` gets its report.
 * The release is forced (whatever the policy's count or bytes say) except
 * under trim_policy "never": the operator asked for none (opts.trim 0 skips
 * it as well, in the round). */
static void governor_round(tide_node *n, uint64_t now, tide_node_sweep_report *r_out)
{
    tide_node_sweep_report r;

    ti_node_round(n, &r, n->opts.trim_policy != TIDE_TRIM_NEVER);
    if (r_out) *r_out = r;
    n->mem_last_act_us = now;
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.actions[TIDE_NODE_ACT_SWEEP]++;
    if (r.trimmed) n->mem_st.actions[TIDE_NODE_ACT_TRIM]++;
    pthread_mutex_unlock(&n->mem_lock);
}

/* The log line of a change, with the figures and the mark crossed. */
static void log_change(tide_node *n, const tide_node_level_change *c)
{
    const tide_mem_overload *ov = &n->mem_ov;
    char cb[32], rb[32], gb[32], lb[32], mb[32], why[96];
    int up = c->to > c->from;
    uint64_t mark = up ? ov->enter[c->to] : ov->leave[c->to + 1];

    if (n->mem_reconf && n->mem_st.limit_bytes)
        snprintf(why, sizeof why, "reconfigured: %s's %s mark is now %s",
                 tide_mem_overload_level_name(up ? c->to : c->to + 1), up ? "enter" : "leave",
                 tide_size_format(mark, mb, sizeof mb));
    else if (up && c->counted_bytes < mark)
        snprintf(why, sizeof why, "memory pressure (PSI some avg10 over %u%%)", n->mem_pressure_pct);
    else if (!up && n->mem_st.limit_bytes == 0)
        snprintf(why, sizeof why, "no limit any more");
    else if (!up && c->counted_bytes >= mark)
        snprintf(why, sizeof why, "memory pressure over");
    else
        snprintf(why, sizeof why, "%s %s's %s mark %s", up ? "reached" : "fell below",
                 tide_mem_overload_level_name(up ? c->to : c->to + 1), up ? "enter" : "leave",
                 tide_size_format(mark, mb, sizeof mb));
    tide_log(up ? TIDE_LOG_WARN : TIDE_LOG_INFO,
             "memory level %s -> %s: counted %s (rss %s, cgroup %s) of the limit %s: %s",
             tide_mem_overload_level_name(c->from), tide_mem_overload_level_name(c->to),
             tide_size_format(c->counted_bytes, cb, sizeof cb), tide_size_format(c->rss_bytes, rb, sizeof rb),
             c->cgroup_bytes ? tide_size_format(c->cgroup_bytes, gb, sizeof gb) : "none",
             tide_size_format(n->mem_st.limit_bytes, lb, sizeof lb), why);
}

/* Record a reading into the status (under mem_lock). */
static void record_reading(tide_node *n, const tide_node_memory_reading *r, uint64_t counted,
                           int pressure, uint64_t now)
{
    tide_node_memory_status *st = &n->mem_st;

    st->readings++;
    st->last = *r;
    st->counted_bytes = counted;
    st->counts = cgroup_counted(r) > r->rss_bytes ? "cgroup" : "rss";
    st->pressure = pressure;
    if (counted > st->peak_start_bytes) st->peak_start_bytes = counted;
    if (counted > st->peak_sweep_bytes) st->peak_sweep_bytes = counted;
    if (now > n->mem_last_us) st->level_seconds_us[st->level] += now - n->mem_last_us;
    n->mem_last_us = now;
}

/* Record a level change (under mem_lock). */
static void record_change(tide_node *n, const tide_node_level_change *c)
{
    tide_node_memory_status *st = &n->mem_st;

    st->level = c->to;
    st->level_changes++;
    st->changes[n->mem_ring] = *c;
    n->mem_ring = (n->mem_ring + 1) % TIDE_NODE_LEVEL_CHANGES;
    if (st->nchanges < TIDE_NODE_LEVEL_CHANGES) st->nchanges++;
}

/* ---- one look ------------------------------------------------------------------- */

/* Step 5 after a change from `from` to `to`. */
static void act_on_change(tide_node *n, int from, int to, uint64_t now)
{
    if (to > from && to >= TIDE_OVERLOAD_SOFT) {
        /* only stricter: after 99% -> 84% the caches run at /8 still (a fall
         * keeps the divisor), and a rise to HIGH must not loosen them to /4 */
        if ((1 << to) > n->mem_shrunk) {
            set_cache_limits(n, 1 << to);
            count_action(n, TIDE_NODE_ACT_SHRINK);
        }
        if (from < TIDE_OVERLOAD_HIGH && to >= TIDE_OVERLOAD_HIGH) count_action(n, TIDE_NODE_ACT_SHED_WRITES);
        if (from < TIDE_OVERLOAD_CRITICAL && to >= TIDE_OVERLOAD_CRITICAL)
            count_action(n, TIDE_NODE_ACT_STOP_ACCEPTING);
        governor_round(n, now, NULL);
    } else if (to == TIDE_OVERLOAD_NORMAL && n->mem_shrunk != 1) {
        set_cache_limits(n, 1);
        count_action(n, TIDE_NODE_ACT_RESTORE);
    }
}

/* The resweep's interval back to its start (a level change, a rise). */
static void resweep_reset(tide_node *n, uint64_t counted)
{
    n->mem_resweep_ms = TIDE_NODE_MEMORY_RESWEEP_MS;
    n->mem_resweep_base = counted;
}

/* The resweep at SOFT or above while counted stays at or above SOFT's
 * enter mark: a round when its interval has passed; one that frees little
 * and whose release does not lower the RSS doubles the interval (capped). */
static void resweep(tide_node *n, uint64_t counted, uint64_t now)
{
    tide_node_sweep_report r;
    uint64_t hyst = n->mem_st.limit_bytes / 100u * n->mem_hyst;

    if (n->mem_resweep_ms == 0 || counted > n->mem_resweep_base + hyst) resweep_reset(n, counted);
    if (now - n->mem_last_act_us < n->mem_resweep_ms * 1000u) return;
    governor_round(n, now, &r);
    if (r.freed_bytes < TIDE_NODE_MEMORY_RESWEEP_MIN_FREED && !(r.trimmed && r.trim.rss_delta < 0)) {
        n->mem_resweep_ms *= 2;
        if (n->mem_resweep_ms > TIDE_NODE_MEMORY_RESWEEP_MAX_MS) n->mem_resweep_ms = TIDE_NODE_MEMORY_RESWEEP_MAX_MS;
    }
}

/* A reading whose cgroup figures failed keeps the level (counting the RSS
 * alone would understate a group whose page-cache-less usage is larger):
 * counted, one WARN per streak, INFO when the group reads again. Returns 1
 * for such a reading. */
static int cgroup_failed(tide_node *n, const tide_node_memory_reading *r, int level)
{
    if (!r->cgroup_failed) {
        if (n->mem_cg_failing && r->has_cgroup)
            tide_log(TIDE_LOG_INFO, "memory governor: the cgroup's figures read again (%s)",
                     n->mem_cgroup_path ? n->mem_cgroup_path : "the reading hook");
        if (r->has_cgroup) n->mem_cg_failing = 0;
        return 0;
    }
    if (!n->mem_cg_failing)
        tide_log(TIDE_LOG_WARN, "memory governor: the cgroup's figures failed (%s); the level stays %s",
                 n->opts.hooks.memory_reading ? "the reading hook said so" : tide_last_error(),
                 tide_mem_overload_level_name(level));
    n->mem_cg_failing = 1;
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.cgroup_failures++;
    pthread_mutex_unlock(&n->mem_lock);
    return 1;
}

/* A look, under mem_check_lock. */
static int check_locked(tide_node *n)
{
    tide_node_memory_reading r;
    tide_node_level_change c;
    uint64_t now, counted;
    int rc, from = atomic_load(&n->mem_level), to = TIDE_OVERLOAD_NORMAL, pressure;

    rc = take_reading(n, &r);
    now = gov_now_us(n);
    if (rc) {
        if (!n->mem_failing)
            tide_log(TIDE_LOG_WARN, "memory governor: a reading failed (%s); the level stays %s",
                     tide_strerror(rc), tide_mem_overload_level_name(from));
        n->mem_failing = 1;
        pthread_mutex_lock(&n->mem_lock);
        n->mem_st.reading_failures++;
        pthread_mutex_unlock(&n->mem_lock);
        return from;
    }
    n->mem_failing = 0;
    if (cgroup_failed(n, &r, from)) return from;
    counted = cgroup_counted(&r) > r.rss_bytes ? cgroup_counted(&r) : r.rss_bytes;
    pressure = pressure_after(n, &r, n->mem_st.pressure, now);   /* written only here, under (c) */
    if (n->mem_st.limit_bytes) to = tide_mem_overload_update(&n->mem_ov, counted, pressure);
    atomic_store(&n->mem_level, to);
    memset(&c, 0, sizeof c);
    c.unix_us = tide_clock_real_us();
    c.from = from;
    c.to = to;
    c.counted_bytes = counted;
    c.rss_bytes = r.rss_bytes;
    c.cgroup_bytes = cgroup_counted(&r);
    c.pressure = pressure;
    pthread_mutex_lock(&n->mem_lock);
    record_reading(n, &r, counted, pressure, now);
    if (to != from) record_change(n, &c);
    pthread_mutex_unlock(&n->mem_lock);
    if (to != from) {
        resweep_reset(n, counted);
        log_change(n, &c);
        act_on_change(n, from, to, now);
    } else if (to >= TIDE_OVERLOAD_SOFT && counted >= n->mem_ov.enter[TIDE_OVERLOAD_SOFT]) {
        resweep(n, counted, now);
    }
    n->mem_reconf = 0;
    TIDE_ASSERT(atomic_load(&n->mem_level) == (n->mem_st.limit_bytes ? n->mem_ov.level : TIDE_OVERLOAD_NORMAL)); /* 1 */
    assert_limits(n);       /* 3 */
    return to;
}

int tide_node_memory_check(tide_node *n)
{
    int level;

    pthread_mutex_lock(&n->mem_check_lock);
    level = check_locked(n);
    pthread_mutex_unlock(&n->mem_check_lock);
    return level;
}

/* ---- configuration ---------------------------------------------------------------- */

/* The overload options from a limit, marks and hysteresis. */
static void overload_opts(tide_mem_overload_opts *o, uint64_t limit, const unsigned *pct, unsigned hyst)
{
    tide_mem_overload_opts_init(o);
    o->limit_bytes = limit;
    for (int i = 1; i < TIDE_OVERLOAD_LEVELS; i++) o->pct[i] = pct[i];
    o->hysteresis_pct = hyst;
}

/* Put the marks and the settings in force into the status (under
 * mem_lock). */
static void publish_marks(tide_node *n)
{
    memcpy(n->mem_st.pct, n->mem_pct, sizeof n->mem_st.pct);
    n->mem_st.hysteresis_pct = n->mem_hyst;
    n->mem_st.pressure_pct = n->mem_pressure_pct;
    for (int i = 0; i < TIDE_OVERLOAD_LEVELS; i++) {
        n->mem_st.marks_enter[i] = n->mem_st.limit_bytes ? n->mem_ov.enter[i] : 0;
        n->mem_st.marks_leave[i] = n->mem_st.limit_bytes ? n->mem_ov.leave[i] : 0;
    }
}

int tide_node_memory_configure(tide_node *n, uint64_t limit_bytes, const unsigned *pct,
                               unsigned hysteresis_pct, unsigned pressure_pct)
{
    tide_mem_overload_opts o;
    tide_mem_overload ov;
    int rc = 0;

    pthread_mutex_lock(&n->mem_check_lock);
    if (pct == NULL) pct = n->mem_pct;
    if (hysteresis_pct == UINT_MAX) hysteresis_pct = n->mem_hyst;
    if (pressure_pct == UINT_MAX) pressure_pct = n->mem_pressure_pct;
    if (pressure_pct > 100) {
        rc = tide_err_set(TIDE_EINVAL, "memory pressure %u%% is above 100", pressure_pct);
        goto out;
    }
    /* The marks are checked with or without a limit (a dummy one of 1 GiB
     * when 0), so a bad memory_levels is refused even while unlimited. */
    overload_opts(&o, limit_bytes ? limit_bytes : 1ull << 30, pct, hysteresis_pct);
    rc = tide_mem_overload_init(&ov, &o);
    if (rc) goto out;
    if (limit_bytes == 0) memset(&ov, 0, sizeof ov);
    /* The level in force carries over (its hysteresis too): the next look
     * moves it by the new marks, not from NORMAL afresh (otherwise, at HIGH
     * with 87%, a configure with the same limit would drop to SOFT). */
    else ov.level = atomic_load(&n->mem_level);
    n->mem_ov = ov;
    n->mem_reconf = 1;
    /* Not into n->opts: tide_node_options' readers take no lock. */
    for (int i = 0; i < TIDE_OVERLOAD_LEVELS; i++) n->mem_pct[i] = pct[i];
    n->mem_hyst = hysteresis_pct;
    n->mem_pressure_pct = pressure_pct;
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.limit_bytes = limit_bytes;
    publish_marks(n);
    pthread_mutex_unlock(&n->mem_lock);
    tide_log(TIDE_LOG_INFO, "memory governor: limit %" PRIu64 " bytes, levels %u,%u,%u, hysteresis %u, "
             "pressure %u%% (configured)", limit_bytes, pct[1], pct[2], pct[3], hysteresis_pct, pressure_pct);
    /* The level from a fresh reading: on the governor's thread when it runs
     * (tided calls this on loop 0, and a look's round and release there
     * would stall every connection of that loop), else here. */
    if (n->mem_started) {
        while (write(n->mem_wake[1], "c", 1) < 0 && errno == EINTR) {}
    } else {
        (void)check_locked(n);
    }
out:
    pthread_mutex_unlock(&n->mem_check_lock);
    return rc;
}

/* ---- the snapshot ---------------------------------------------------------------- */

void tide_node_memory_get(tide_node *n, tide_node_memory_status *out)
{
    uint64_t now = gov_now_us(n);
    tide_mem_proc_status ps;

    pthread_mutex_lock(&n->mem_lock);
    *out = n->mem_st;
    if (now > n->mem_last_us) out->level_seconds_us[out->level] += now - n->mem_last_us;
    /* the ring, newest first */
    for (size_t k = 0; k < out->nchanges; k++)
        out->changes[k] = n->mem_st.changes[(n->mem_ring + TIDE_NODE_LEVEL_CHANGES - 1 - k) % TIDE_NODE_LEVEL_CHANGES];
    pthread_mutex_unlock(&n->mem_lock);
    if (out->counts == NULL) out->counts = "rss";
    /* The kernel's VmHWM is read here, when someone asks, not at each look.
     * It is a peak of the whole RSS, file-backed pages (nudb.key's map)
     * included, so it stands for the counted figure only on a kernel
     * without RssAnon, where the reading is VmRSS too. */
    if (n->opts.hooks.memory_reading == NULL && tide_mem_proc_status_read(&ps) == 0 && !ps.has_split &&
        ps.vm_hwm > out->peak_start_bytes)
        out->peak_start_bytes = ps.vm_hwm;
    out->rejected_writes = atomic_load(&n->mem_rejected);
    out->level = atomic_load(&n->mem_level);
}

void ti_node_governor_round_began(tide_node *n)
{
    pthread_mutex_lock(&n->mem_lock);
    n->mem_st.peak_sweep_bytes = n->mem_st.counted_bytes;
    pthread_mutex_unlock(&n->mem_lock);
}

/* ---- the thread ---------------------------------------------------------------- */

/* Open the PSI trigger: memory_pressure_pct percent of a 2 s window. On
 * failure the averages alone are polled and psi_trigger_error says why. */
static void open_trigger(tide_node *n)
{
    const char *psi = psi_path(n);
    char cg[PATH_MAX];

    /* The cgroup's own file when there is one (v2, psi_path left at its
     * default): the group's stall is what its limit causes. */
    if (n->opts.hooks.psi_path == NULL && n->mem_cgroup_path && n->opts.cgroup_version == 2 &&
        snprintf(cg, sizeof cg, "%s/memory.pressure", n->mem_cgroup_path) < (int)sizeof cg &&
        access(cg, R_OK | W_OK) == 0)
        psi = cg;
    uint64_t stall = (uint64_t)n->mem_pressure_pct * (PSI_WINDOW_US / 100u);
    int rc;

    n->mem_psi_fd = -1;
    if (psi == NULL || n->mem_pressure_pct == 0 || n->opts.hooks.memory_reading) {
        snprintf(n->mem_st.psi_trigger_error, sizeof n->mem_st.psi_trigger_error, "%s",
                 n->opts.hooks.memory_reading ? "the reading is a hook (tests)"
                 : psi == NULL ? "no PSI file (psi_path \"\")" : "memory_pressure is 0 (off)");
        return;
    }
    rc = tide_mem_psi_trigger_open(psi, stall, PSI_WINDOW_US, &n->mem_psi_fd);
    if (rc) {
        n->mem_psi_fd = -1;
        snprintf(n->mem_st.psi_trigger_error, sizeof n->mem_st.psi_trigger_error, "%s", tide_last_error());
        tide_log(TIDE_LOG_INFO, "memory governor: no PSI trigger on %s (%s); polling its averages every %" PRIu64
                 " ms", psi, tide_last_error(), n->opts.memory_poll_ms);
        return;
    }
    n->mem_st.psi_trigger = 1;
}

static void *governor_main(void *arg)
{
    tide_node *n = arg;
    struct pollfd p[2];
    char b[16];

    for (;;) {
        (void)tide_node_memory_check(n);
        p[0] = (struct pollfd){ n->mem_wake[0], POLLIN, 0 };
        p[1] = (struct pollfd){ n->mem_psi_fd, POLLPRI, 0 };
        int k = poll(p, n->mem_psi_fd >= 0 ? 2 : 1,
                     n->opts.memory_poll_ms > INT_MAX ? INT_MAX : (int)n->opts.memory_poll_ms);
        if (k > 0 && (p[0].revents & (POLLIN | POLLHUP))) {
            while (read(n->mem_wake[0], b, sizeof b) > 0) {}
            if (atomic_load(&n->mem_stopping)) break;
            continue;           /* a configure's wake: its look at once */
        }
        /* POLLERR/POLLNVAL first (the kernel sets POLLPRI with POLLERR when
         * the trigger's cgroup went away): never a firing; close it, or the
         * wait would spin. POLLPRI: the next look reads the event at once. */
        if (k > 0 && (p[1].revents & (POLLERR | POLLNVAL))) {
            pthread_mutex_lock(&n->mem_check_lock);     /* another thread's look polls the fd */
            if (n->mem_psi_fd >= 0) close_trigger(n, p[1].revents);
            pthread_mutex_unlock(&n->mem_check_lock);
        } else if (k > 0 && (p[1].revents & POLLPRI)) {
            atomic_store(&n->mem_psi_seen, 1);
        }
    }
    while (read(n->mem_wake[0], b, sizeof b) > 0) {}
    return NULL;
}

int ti_node_governor_init(tide_node *n)
{
    const tide_node_opts *o = &n->opts;
    tide_mem_overload_opts oo;
    tide_cache_stats cs;
    tide_keycache_stats ks;
    int rc = 0;

    pthread_mutex_init(&n->mem_check_lock, NULL);
    pthread_mutex_init(&n->mem_lock, NULL);
    n->mem_inited = 1;
    n->mem_psi_fd = -1;
    n->mem_wake[0] = n->mem_wake[1] = -1;
    n->mem_shrunk = 1;
    n->mem_pressure_pct = o->memory_pressure_pct;
    for (int i = 0; i < TIDE_OVERLOAD_LEVELS; i++) n->mem_pct[i] = o->memory_pct[i];
    n->mem_hyst = o->memory_hysteresis_pct;
    n->mem_last_us = gov_now_us(n);
    n->mem_st.counts = "rss";
    if (o->memory_pressure_pct > 100)
        return tide_err_set(TIDE_EINVAL, "node: memory_pressure_pct %u is above 100", o->memory_pressure_pct);
    if (o->cgroup_path && (o->cgroup_version < 1 || o->cgroup_version > 2))
        return tide_err_set(TIDE_EINVAL, "node: cgroup_version %d is not 1 or 2 (cgroup_path %s)",
                            o->cgroup_version, o->cgroup_path);
    /* The marks are checked without a limit too (a dummy 1 GiB, as in
     * configure): bad ones opened unlimited would make every later
     * configure that keeps them (pct NULL) refuse forever. */
    overload_opts(&oo, o->memory_limit ? o->memory_limit : 1ull << 30, o->memory_pct, o->memory_hysteresis_pct);
    rc = tide_mem_overload_init(&n->mem_ov, &oo);
    if (rc) return rc;
    if (o->memory_limit == 0) memset(&n->mem_ov, 0, sizeof n->mem_ov);
    n->mem_st.limit_bytes = o->memory_limit;
    publish_marks(n);
    if (o->cgroup_path && (n->mem_cgroup_path = strdup(o->cgroup_path)) == NULL) return TIDE_ENOMEM;
    n->opts.cgroup_path = n->mem_cgroup_path;
    if (o->hooks.psi_path && (n->mem_psi_path = strdup(o->hooks.psi_path)) == NULL) return TIDE_ENOMEM;
    n->opts.hooks.psi_path = n->mem_psi_path;
    tide_cache_stats_get(n->cache, &cs);
    tide_keycache_stats_get(n->keycache, &ks);
    n->mem_cache_budget = cs.budget_bytes;
    n->mem_cache_hard = cs.hard_limit_bytes;
    n->mem_keycache_hard = ks.hard_limit_bytes;
    open_trigger(n);
    return 0;
}

int ti_node_governor_start(tide_node *n)
{
    int e;

    if (n->opts.memory_poll_ms == 0) return 0;
    if (pipe2(n->mem_wake, O_CLOEXEC | O_NONBLOCK) != 0) return errno;
    e = pthread_create(&n->mem_thread, NULL, governor_main, n);
    if (e == 0) n->mem_started = 1;
    return e;
}

void ti_node_governor_stop(tide_node *n)
{
    if (!n->mem_started) return;
    atomic_store(&n->mem_stopping, 1);
    while (write(n->mem_wake[1], "x", 1) < 0 && errno == EINTR) {}
    pthread_join(n->mem_thread, NULL);
    n->mem_started = 0;
}

void ti_node_governor_destroy(tide_node *n)
{
    if (!n->mem_inited) return;
    ti_node_governor_stop(n);
    if (n->mem_psi_fd >= 0) close(n->mem_psi_fd);
    if (n->mem_wake[0] >= 0) close(n->mem_wake[0]);
    if (n->mem_wake[1] >= 0) close(n->mem_wake[1]);
    free(n->mem_cgroup_path);
    free(n->mem_psi_path);
    pthread_mutex_destroy(&n->mem_lock);
    pthread_mutex_destroy(&n->mem_check_lock);
}
