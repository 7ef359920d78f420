/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_node_memory.c: the node's memory governor (governor.c).
 *
 * Most tests run without the governor's thread (memory_poll_ms 0) and with
 * an injected reading (opts.memory_reading), an injected clock
 * (opts.clock_us: the resweep and the seconds per level), a counting
 * release (opts.release) and trace (opts.trace), and drive the levels with
 * tide_node_memory_check. The limit is 100 MiB with the default marks:
 * soft 80/75, high 90/85, critical 97/92 MiB (enter/leave). The log goes to
 * a sink that keeps the governor's lines. Two tests read the real figures
 * (one in a real v1 memory cgroup, th_cgroup_v1's: removed whatever happens), and one runs
 * the thread and waits for its level changes with a generous bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "node/metrics.h"
#include "node/node.h"
#include "node/startup.h"
#include "promcheck.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/log.h"

#define MIB (1024ull * 1024ull)
#define SEC 1000000ull

/* ---- the injected world --------------------------------------------------------------- */

typedef struct world {
    th_scratch s;
    tide_node *n;
    _Atomic uint64_t rss;         /* the reading's RSS */
    int has_psi;
    double avg10;
    int triggered;
    int fail;                     /* the next readings fail with TIDE_EIO */
    int has_cgroup;
    uint64_t cg_current, cg_cache;
    int cg_has_psi;
    int cg_fail;                  /* the cgroup's figures fail (cgroup_failed) */
    double cg_avg10;              /* the cgroup's own memory.pressure some avg10 */
    _Atomic int readings;
    pthread_t main_thread;        /* the test's thread */
    _Atomic int readings_on_main; /* readings the hook made on it */
    uint64_t now;                 /* the clock, microseconds */
    int releases, rounds;         /* opts.release calls; "sweep node_cache" steps */
    /* Written by the log sink, on the governor's thread too (tsan): atomic. */
    _Atomic int lines, warns;     /* the governor's level lines, of them at WARN */
    char last[512];               /* the last level line (read only in tests without
                                     the governor thread) */
    _Atomic int read_failed_warns;/* "a reading failed" lines */
    _Atomic int cg_failed_warns, cg_again_infos; /* the cgroup's failure and recovery lines */
    char rss_line[1024];          /* the startup log's "memory: RSS ..." line (main thread) */
} world;

static world *g_w;                /* the log sink's world (one test at a time) */

static int fake_reading(void *arg, tide_node_memory_reading *r)
{
    world *w = arg;

    atomic_fetch_add(&w->readings, 1);
    if (pthread_equal(pthread_self(), w->main_thread)) atomic_fetch_add(&w->readings_on_main, 1);
    if (w->fail) return tide_err_set(TIDE_EIO, "the test's reading failed on purpose");
    r->rss_bytes = atomic_load(&w->rss);
    r->has_psi = w->has_psi;
    r->psi.some.avg10 = w->avg10;
    r->psi_triggered = w->triggered;
    r->has_cgroup = w->has_cgroup && !w->cg_fail;
    r->cgroup_failed = w->cg_fail;
    r->cgroup.current_bytes = w->cg_current;
    r->cgroup.page_cache_bytes = w->cg_cache;
    r->cgroup.has_psi = w->cg_has_psi;
    r->cgroup.psi.some.avg10 = w->cg_avg10;
    return 0;
}

static uint64_t fake_clock(void *arg) { return ((world *)arg)->now; }

static int fake_release(void *arg, tide_mem_trim_report *r)
{
    memset(r, 0, sizeof *r);
    ((world *)arg)->releases++;
    return 0;
}

static void fake_trace(void *arg, const char *step)
{
    if (strcmp(step, "sweep node_cache") == 0) ((world *)arg)->rounds++;
}

static void sink(void *arg, int level, const char *line)
{
    world *w = arg;

    if (strstr(line, "memory level ")) {
        w->lines++;
        if (level == TIDE_LOG_WARN) w->warns++;
        snprintf(w->last, sizeof w->last, "%s", line);
    }
    if (strstr(line, "a reading failed") && level == TIDE_LOG_WARN) w->read_failed_warns++;
    if (strstr(line, "the cgroup's figures failed") && level == TIDE_LOG_WARN) w->cg_failed_warns++;
    if (strstr(line, "the cgroup's figures read again") && level == TIDE_LOG_INFO) w->cg_again_infos++;
    if (strstr(line, "memory: RSS ")) snprintf(w->rss_line, sizeof w->rss_line, "%s", line);
}

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);

    if (w == NULL || th_scratch_init(&w->s) != 0) { free(w); return -1; }
    w->now = 1000 * SEC;
    w->main_thread = pthread_self();
    g_w = w;
    *state = w;
    tide_log_set_sink(sink, w);
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;

    /* The sink is set in setup and unset after the node's threads are gone
     * (the key count, the governor and the sweeper log): tide_log_set_sink
     * is not atomic with tide_log, so it is never changed while they run. */
    if (w->n) tide_node_close(w->n);
    tide_log_set_sink(NULL, NULL);
    th_teardown(state);
    g_w = NULL;
    free(w);
    return 0;
}

/* No hooks: /proc, PSI and (when set) the cgroup are read; a limit of
 * 1 TiB keeps the level at normal. */
static tide_node_opts real_opts(world *w)
{
    tide_node_opts o;

    tide_node_opts_init(&o);
    o.dir = w->s.dir;
    o.sweep_interval_ms = 0;
    o.rotate_check_ms = 0;
    o.memory_poll_ms = 0;
    o.memory_limit = 1ull << 40;
    /* The real readings read the machine's own PSI: a CI replay beside a
     * sanitizer build stalled on memory for seconds and held these tests'
     * level at SOFT (four failures, none of them Tide's). At 100 % the
     * flag needs avg10 at 100 or a trigger stalled for its whole window,
     * and the trigger is still opened (the_governor_opens_a_psi_trigger). */
    o.memory_pressure_pct = 100;
    return o;
}

/* The options every injected test starts from. */
static tide_node_opts base_opts(world *w)
{
    tide_node_opts o = real_opts(w);

    o.memory_pressure_pct = 10;               /* the default: the fake PSI readings' tests */
    o.memory_limit = 100 * MIB;
    o.cache_budget = 8 * MIB;                 /* hard limit 16 MiB */
    o.key_cache_hard_limit = 4 * MIB;
    o.hooks.memory_reading = fake_reading;
    o.hooks.memory_reading_arg = w;
    o.hooks.clock_us = fake_clock;
    o.hooks.clock_arg = w;
    o.hooks.release = fake_release;
    o.hooks.release_arg = w;
    o.hooks.trace = fake_trace;
    o.hooks.trace_arg = w;
    return o;
}

static void open_with(world *w, const tide_node_opts *o)
{
    int rc = tide_node_open(&w->n, o);

    if (rc) fail_msg("tide_node_open: %s (%s)", tide_strerror(rc), tide_last_error());
}

static void open_world(world *w)
{
    tide_node_opts o = base_opts(w);

    open_with(w, &o);
}

/* One look with the RSS at `mib` MiB; returns the level. */
static int look(world *w, uint64_t mib)
{
    atomic_store(&w->rss, mib * MIB);
    return tide_node_memory_check(w->n);
}

static void expect_look(world *w, uint64_t mib, int level, const char *what)
{
    int got = look(w, mib);

    if (got != level)
        fail_msg("%s: %" PRIu64 " MiB: expected level %s, got %s", what, mib, tide_mem_overload_level_name(level),
                 tide_mem_overload_level_name(got));
    expect_u64((uint64_t)tide_node_overload_level(w->n), (uint64_t)level, what);
}

static tide_node_memory_status status(world *w)
{
    tide_node_memory_status st;

    tide_node_memory_get(w->n, &st);
    return st;
}

static void key_of(uint64_t i, uint8_t key[32]) { th_key(i, 32, key); }

static int put_i(world *w, uint64_t i)
{
    uint8_t key[32], val[600];
    size_t len = th_len(i, 1, sizeof val);

    key_of(i, key);
    th_value(i, len, val);
    return tide_node_put(w->n, key, val, len);
}

static void expect_stored(world *w, uint64_t i, const char *what)
{
    uint8_t key[32], want[600];
    tide_cache_obj *v = NULL;
    size_t len = th_len(i, 1, sizeof want);
    int rc;

    key_of(i, key);
    th_value(i, len, want);
    rc = tide_node_get(w->n, key, &v);
    if (rc) fail_msg("%s: get of key %" PRIu64 ": expected the value, got %s", what, i, tide_strerror(rc));
    if (tide_cache_obj_len(v) != len || memcmp(tide_cache_obj_data(v), want, len) != 0) {
        tide_cache_obj_release(v);
        fail_msg("%s: key %" PRIu64 ": wrong bytes", what, i);
    }
    tide_cache_obj_release(v);
}

/* ---- levels ----------------------------------------------------------------------------- */

static void levels_move_with_hysteresis_and_each_change_is_logged_once(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "50 MiB");
    expect_u64((uint64_t)w->lines, 0, "level lines at NORMAL");
    expect_look(w, 80, TIDE_OVERLOAD_SOFT, "80 MiB: soft's enter mark");
    expect_u64((uint64_t)w->warns, 1, "WARN lines after the rise");
    expect_contains(w->last, "memory level normal -> soft", "the rise's line");
    expect_contains(w->last, "counted 80 MiB", "the rise's line gives the counted bytes");
    expect_contains(w->last, "of the limit 100 MiB", "the rise's line gives the limit");
    expect_contains(w->last, "reached soft's enter mark 80 MiB", "the rise's line gives the mark");
    expect_look(w, 79, TIDE_OVERLOAD_SOFT, "79 MiB: above soft's leave mark");
    expect_look(w, 75, TIDE_OVERLOAD_SOFT, "75 MiB: at soft's leave mark");
    expect_u64((uint64_t)w->lines, 1, "level lines while soft holds");
    expect_look(w, 74, TIDE_OVERLOAD_NORMAL, "74 MiB: below soft's leave mark");
    expect_u64((uint64_t)w->lines, 2, "level lines after the fall");
    expect_u64((uint64_t)w->warns, 1, "WARN lines after the fall (it is INFO)");
    expect_contains(w->last, "soft -> normal", "the fall's line");
    expect_contains(w->last, "fell below soft's leave mark 75 MiB", "the fall's line gives the mark");
    expect_look(w, 97, TIDE_OVERLOAD_CRITICAL, "97 MiB: straight to critical");
    expect_contains(w->last, "normal -> critical", "a jump of three levels is one line");
    expect_look(w, 93, TIDE_OVERLOAD_CRITICAL, "93 MiB: above critical's leave mark");
    expect_look(w, 91, TIDE_OVERLOAD_HIGH, "91 MiB: below critical's leave mark");
    expect_look(w, 86, TIDE_OVERLOAD_HIGH, "86 MiB: above high's leave mark");
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "10 MiB: all the way down");
    st = status(w);
    expect_u64(st.level_changes, 5, "level changes");
    expect_u64((uint64_t)w->lines, 5, "level lines (one per change)");
    expect_u64(st.nchanges, 5, "changes in the ring");
    expect_u64((uint64_t)st.changes[0].from, TIDE_OVERLOAD_HIGH, "the newest change's from");
    expect_u64((uint64_t)st.changes[0].to, TIDE_OVERLOAD_NORMAL, "the newest change's to");
    expect_u64(st.changes[0].counted_bytes, 10 * MIB, "the newest change's counted bytes");
    expect_u64((uint64_t)st.changes[4].to, TIDE_OVERLOAD_SOFT, "the oldest change's to");
    expect_u64(st.marks_enter[TIDE_OVERLOAD_HIGH], 90 * MIB, "high's enter mark");
    expect_u64(st.marks_leave[TIDE_OVERLOAD_HIGH], 85 * MIB, "high's leave mark");
    expect_u64(st.readings, 10, "readings");
    expect_str(st.counts, "rss", "which figure counts");
}

static void the_cgroup_counts_when_its_usage_less_page_cache_is_larger(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);
    w->has_cgroup = 1;
    w->cg_current = 130 * MIB;
    w->cg_cache = 40 * MIB;                     /* 90 MiB counts: high */
    expect_look(w, 50, TIDE_OVERLOAD_HIGH, "rss 50 MiB, cgroup 130 - 40 MiB");
    st = status(w);
    expect_str(st.counts, "cgroup", "which figure counts");
    expect_u64(st.counted_bytes, 90 * MIB, "counted bytes");
    expect_contains(w->last, "rss 50 MiB, cgroup 90 MiB", "the line gives both figures");
    w->cg_cache = 100 * MIB;                    /* 30 MiB: rss counts */
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "rss 50 MiB, cgroup 130 - 100 MiB");
    expect_str(status(w).counts, "rss", "which figure counts after the page cache grew");
}

/* ---- actions ---------------------------------------------------------------------------- */

static void a_rise_shrinks_the_caches_sweeps_and_releases_once_and_normal_restores(void **state)
{
    world *w = *state;
    tide_cache_stats cs;
    tide_keycache_stats ks;
    tide_node_memory_status st;

    open_world(w);
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 16 * MIB, "the node cache's hard limit as opened");
    expect_look(w, 82, TIDE_OVERLOAD_SOFT, "82 MiB");
    tide_node_cache_stats(w->n, &cs);
    tide_node_keycache_stats(w->n, &ks);
    expect_u64(cs.hard_limit_bytes, 8 * MIB, "the node cache's hard limit at soft (/2)");
    expect_u64(cs.budget_bytes, 4 * MIB, "the node cache's budget at soft (/2)");
    expect_u64(ks.hard_limit_bytes, 2 * MIB, "the key cache's hard limit at soft (/2)");
    expect_u64((uint64_t)w->rounds, 1, "sweep rounds after the rise to soft");
    expect_u64((uint64_t)w->releases, 1, "releases after the rise to soft");
    expect_look(w, 83, TIDE_OVERLOAD_SOFT, "83 MiB at once: no second round (resweep waits a second)");
    expect_u64((uint64_t)w->rounds, 1, "sweep rounds while soft holds");
    expect_look(w, 95, TIDE_OVERLOAD_HIGH, "95 MiB");
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 4 * MIB, "the node cache's hard limit at high (/4)");
    expect_u64((uint64_t)w->rounds, 2, "sweep rounds after the rise to high");
    expect_u64((uint64_t)w->releases, 2, "releases after the rise to high");
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "50 MiB");
    tide_node_cache_stats(w->n, &cs);
    tide_node_keycache_stats(w->n, &ks);
    expect_u64(cs.hard_limit_bytes, 16 * MIB, "the node cache's hard limit restored");
    expect_u64(cs.budget_bytes, 8 * MIB, "the node cache's budget restored");
    expect_u64(ks.hard_limit_bytes, 4 * MIB, "the key cache's hard limit restored");
    expect_u64((uint64_t)w->rounds, 2, "no round for the fall");
    st = status(w);
    expect_u64(st.actions[TIDE_NODE_ACT_SHRINK], 2, "shrink actions");
    expect_u64(st.actions[TIDE_NODE_ACT_SWEEP], 2, "sweep actions");
    expect_u64(st.actions[TIDE_NODE_ACT_TRIM], 2, "trim actions");
    expect_u64(st.actions[TIDE_NODE_ACT_SHED_WRITES], 1, "shed_writes actions");
    expect_u64(st.actions[TIDE_NODE_ACT_STOP_ACCEPTING], 0, "stop_accepting actions");
    expect_u64(st.actions[TIDE_NODE_ACT_RESTORE], 1, "restore actions");
    expect_str(tide_node_action_name(TIDE_NODE_ACT_SHED_WRITES), "shed_writes", "an action's name");
}

/* 99 -> 84 -> 91 must not set /4 after /8 (looser, yet counted as a
 * shrink). The hard limit never grows on a rise; a fall above normal keeps
 * the divisor. */
static void a_rise_after_a_partial_fall_never_loosens_the_caches(void **state)
{
    world *w = *state;
    tide_cache_stats cs;
    uint64_t shrinks;

    open_world(w);
    expect_look(w, 99, TIDE_OVERLOAD_CRITICAL, "99 MiB");
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 2 * MIB, "critical: 16 MiB / 8");
    shrinks = status(w).actions[TIDE_NODE_ACT_SHRINK];
    expect_look(w, 84, TIDE_OVERLOAD_SOFT, "84 MiB");
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 2 * MIB, "a fall to soft keeps /8");
    expect_look(w, 91, TIDE_OVERLOAD_HIGH, "91 MiB: a rise");
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 2 * MIB, "the rise to high keeps /8 (never grows on a rise)");
    expect_u64(status(w).actions[TIDE_NODE_ACT_SHRINK], shrinks, "no shrink counted for a looser divisor");
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "50 MiB");
    tide_node_cache_stats(w->n, &cs);
    expect_u64(cs.hard_limit_bytes, 16 * MIB, "normal restores");
}

static void trim_off_sweeps_without_a_release(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);

    o.trim = 0;
    open_with(w, &o);
    expect_look(w, 99, TIDE_OVERLOAD_CRITICAL, "99 MiB");
    expect_u64((uint64_t)w->rounds, 1, "sweep rounds");
    expect_u64((uint64_t)w->releases, 0, "releases with trim 0");
    expect_u64(status(w).actions[TIDE_NODE_ACT_TRIM], 0, "trim actions with trim 0");
    expect_u64(status(w).actions[TIDE_NODE_ACT_STOP_ACCEPTING], 1, "stop_accepting actions");
}

static void the_round_repeats_every_second_while_above_softs_enter_mark(void **state)
{
    world *w = *state;

    open_world(w);
    expect_look(w, 85, TIDE_OVERLOAD_SOFT, "85 MiB");
    expect_u64((uint64_t)w->rounds, 1, "rounds after the rise");
    w->now += TIDE_NODE_MEMORY_RESWEEP_MS * 1000ull - 1;
    expect_look(w, 85, TIDE_OVERLOAD_SOFT, "85 MiB 1 us before the resweep is due");
    expect_u64((uint64_t)w->rounds, 1, "rounds before the resweep is due");
    w->now += 1;
    expect_look(w, 85, TIDE_OVERLOAD_SOFT, "85 MiB when the resweep is due");
    expect_u64((uint64_t)w->rounds, 2, "rounds after the resweep");
    expect_u64((uint64_t)w->releases, 2, "releases after the resweep");
    w->now += 10 * SEC;
    expect_look(w, 78, TIDE_OVERLOAD_SOFT, "78 MiB: soft holds below its enter mark");
    expect_u64((uint64_t)w->rounds, 2, "no resweep below soft's enter mark");
    expect_u64(status(w).actions[TIDE_NODE_ACT_SWEEP], 2, "sweep actions");
}

/* Held at 82% by what cannot be freed, the governor must not run a round
 * and a release every second forever. Looks every clock-second for
 * 60 s: the back-off (1, 2, 4, 8, 16, 30 s) allows about 6 rounds. */
static void the_resweep_backs_off_while_it_frees_nothing(void **state)
{
    world *w = *state;

    open_world(w);
    expect_look(w, 82, TIDE_OVERLOAD_SOFT, "82 MiB");
    for (int i = 0; i < 60; i++) {
        w->now += SEC;
        expect_look(w, 82, TIDE_OVERLOAD_SOFT, "82 MiB held");
    }
    if (w->rounds > 8) fail_msg("60 s held at 82 MiB: %d rounds, expected at most 8 (back-off)", w->rounds);
    expect_u64((uint64_t)(w->rounds >= 5), 1, "the resweep still runs while backing off");
    /* counted rising more than the hysteresis resets the interval: a round
     * within 1 s */
    int before = w->rounds;
    w->now += SEC;
    expect_look(w, 88, TIDE_OVERLOAD_SOFT, "88 MiB: +6 points, still soft");
    w->now += SEC;
    expect_look(w, 88, TIDE_OVERLOAD_SOFT, "88 MiB a second later");
    if (w->rounds < before + 1) fail_msg("a rise of 6 points: expected a resweep within 2 s, got none");
}

/* trim_policy "never": the governor's rounds make no release call. */
static void trim_policy_never_makes_no_forced_release(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);

    o.trim_policy = TIDE_TRIM_NEVER;
    open_with(w, &o);
    expect_look(w, 99, TIDE_OVERLOAD_CRITICAL, "99 MiB");
    expect_u64((uint64_t)w->rounds, 1, "sweep rounds");
    expect_u64((uint64_t)w->releases, 0, "releases under trim_policy never");
}

/* ---- writes ----------------------------------------------------------------------------- */

static void put_is_refused_at_high_and_accepted_below_highs_leave_mark_and_nothing_is_lost(void **state)
{
    world *w = *state;
    int rc;

    open_world(w);
    for (uint64_t i = 0; i < 50; i++) expect_ok(put_i(w, i), "a put at normal");
    expect_look(w, 92, TIDE_OVERLOAD_HIGH, "92 MiB");
    rc = put_i(w, 50);
    expect_rc(rc, TIDE_EOVERLOAD, "a put at high");
    expect_contains(tide_last_error(), "memory level is high", "the refusal's message");
    rc = put_i(w, 0);
    expect_rc(rc, TIDE_EOVERLOAD, "a put of a stored key at high (checked before the existence check)");
    for (uint64_t i = 0; i < 50; i++) expect_stored(w, i, "a key put before high, read at high");
    expect_look(w, 86, TIDE_OVERLOAD_HIGH, "86 MiB: above high's leave mark");
    expect_rc(put_i(w, 50), TIDE_EOVERLOAD, "a put still at high");
    expect_u64(status(w).rejected_writes, 3, "rejected writes");
    expect_look(w, 84, TIDE_OVERLOAD_SOFT, "84 MiB: below high's leave mark");
    expect_ok(put_i(w, 50), "a put at soft");
    expect_ok(tide_node_sync(w->n), "sync");
    expect_ok(tide_node_close(w->n), "close");
    w->n = NULL;
    open_world(w);
    for (uint64_t i = 0; i <= 50; i++) expect_stored(w, i, "a key after a reopen");
    expect_u64(status(w).rejected_writes, 0, "rejected writes after a reopen");
}

/* ---- pressure, failures, configure --------------------------------------------------------- */

static void pressure_holds_soft_until_avg10_falls_under_half_the_threshold(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);                     /* memory_pressure_pct 10 (the default) */
    w->has_psi = 1;
    w->avg10 = 9.99;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "avg10 9.99 under 10");
    w->avg10 = 10.0;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "avg10 10 at 10 MiB");
    expect_contains(w->last, "pressure", "the rise's line names the pressure");
    st = status(w);
    expect_u64((uint64_t)st.pressure, 1, "the pressure flag");
    expect_u64((uint64_t)st.changes[0].pressure, 1, "the change's pressure flag");
    w->avg10 = 5.0;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "avg10 5: not under half of 10");
    expect_look(w, 95, TIDE_OVERLOAD_HIGH, "pressure never holds a higher level down");
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "10 MiB with pressure: held at soft");
    w->avg10 = 4.99;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "avg10 4.99: pressure over");
    expect_u64((uint64_t)status(w).pressure, 0, "the pressure flag after it let go");
    w->has_psi = 0;
    w->triggered = 1;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the trigger fired");
    w->triggered = 0;
    w->now += 2 * SEC;                 /* the trigger's hold: one 2 s window */
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "the trigger quiet a window and no averages");
}

/* Pressure from the trigger must not let go at the next look and come
 * back at the next firing (flapping once per window). It holds one
 * window (2 s) after the last firing, then the avg10 rule applies. */
static void trigger_pressure_holds_a_window_after_the_last_firing(void **state)
{
    world *w = *state;
    int lines;

    open_world(w);
    w->triggered = 1;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the trigger fired");
    lines = w->lines;
    for (int i = 0; i < 3; i++) {
        w->triggered = 0;
        w->now += SEC / 10;
        expect_look(w, 10, TIDE_OVERLOAD_SOFT, "100 ms after a firing: held");
        w->now += 9 * SEC / 10;
        w->triggered = 1;
        expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the next firing");
    }
    expect_u64((uint64_t)w->lines, (uint64_t)lines, "no level lines while it keeps firing");
    w->triggered = 0;
    w->now += 2 * SEC - 1;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "1 us before the window since the last firing ends");
    w->has_psi = 1;
    w->avg10 = 6;
    w->now += 1;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the window over, avg10 6: not under half of 10");
    w->avg10 = 4;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "avg10 4: over");
}

/* The cgroup's own PSI is used, not only read: the larger of the system's
 * and the cgroup's avg10 counts. */
static void the_cgroups_own_pressure_counts_when_larger(void **state)
{
    world *w = *state;

    open_world(w);
    w->has_psi = 1;
    w->avg10 = 1;
    w->has_cgroup = 1;
    w->cg_current = 10 * MIB;
    w->cg_has_psi = 1;
    w->cg_avg10 = 20;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the cgroup's avg10 20, the system's 1");
    w->cg_avg10 = 6;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the cgroup's avg10 6: not under half");
    w->avg10 = 7;
    w->cg_avg10 = 2;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the system's 7 is the larger now");
    w->avg10 = 3;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "both under half");
    w->has_psi = 0;
    w->cg_avg10 = 12;
    expect_look(w, 10, TIDE_OVERLOAD_SOFT, "the cgroup's alone, without the system's file");
}

static void pressure_off_is_ignored(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);

    o.memory_pressure_pct = 0;
    open_with(w, &o);
    w->has_psi = 1;
    w->avg10 = 90;
    w->triggered = 1;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "avg10 90 with memory_pressure_pct 0");
}

static void a_failed_reading_is_counted_and_the_level_kept(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);
    expect_look(w, 92, TIDE_OVERLOAD_HIGH, "92 MiB");
    w->fail = 1;
    expect_look(w, 10, TIDE_OVERLOAD_HIGH, "a failed reading");
    expect_look(w, 10, TIDE_OVERLOAD_HIGH, "a second failed reading");
    st = status(w);
    expect_u64(st.reading_failures, 2, "reading failures");
    expect_u64(st.readings, 1, "readings (the failed ones are not)");
    expect_u64(st.counted_bytes, 92 * MIB, "counted bytes (the last good reading)");
    expect_u64((uint64_t)w->read_failed_warns, 1, "WARN lines for a streak of failures");
    expect_rc(put_i(w, 1), TIDE_EOVERLOAD, "a put while the readings fail at high");
    w->fail = 0;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "a good reading again");
}

/* A failed cgroup read must not silently count the RSS alone: it keeps
 * the level, is counted, and logged once per streak. */
static void a_failed_cgroup_read_keeps_the_level_and_is_counted(void **state)
{
    world *w = *state;

    open_world(w);
    w->has_cgroup = 1;
    w->cg_current = 95 * MIB;
    expect_look(w, 10, TIDE_OVERLOAD_HIGH, "the cgroup's 95 MiB counts");
    w->cg_fail = 1;
    expect_look(w, 10, TIDE_OVERLOAD_HIGH, "the cgroup failed: the level kept, not the RSS's normal");
    expect_look(w, 10, TIDE_OVERLOAD_HIGH, "again");
    expect_u64(status(w).cgroup_failures, 2, "cgroup failures counted");
    expect_u64((uint64_t)w->cg_failed_warns, 1, "one WARN per streak");
    {
        tide_metrics_opts mo;
        char *text = NULL;
        size_t len = 0;
        tide_metrics_opts_init(&mo);
        expect_ok(tide_metrics_render(w->n, &mo, &text, &len), "render /metrics");
        expect_u64((uint64_t)th_prom_value(text, "tide_memory_reading_failures_total{what=\"cgroup\"}"), 2,
                   "the cgroup failures on /metrics");
        free(text);
    }
    w->cg_fail = 0;
    w->cg_current = 50 * MIB;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "the cgroup reads again: 50 MiB");
    expect_u64((uint64_t)w->cg_again_infos, 1, "one INFO when it reads again");
    w->cg_fail = 1;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "a new streak");
    expect_u64((uint64_t)w->cg_failed_warns, 2, "a WARN for the new streak");
}

static void configure_changes_the_limit_live_and_refuses_bad_levels(void **state)
{
    world *w = *state;
    unsigned bad[TIDE_OVERLOAD_LEVELS] = { 0, 90, 80, 97 }, other[TIDE_OVERLOAD_LEVELS] = { 0, 50, 60, 70 };
    tide_node_memory_status st;

    open_world(w);
    expect_look(w, 85, TIDE_OVERLOAD_SOFT, "85 MiB of 100");
    atomic_store(&w->rss, 85 * MIB);
    expect_ok(tide_node_memory_configure(w->n, 200 * MIB, NULL, UINT_MAX, UINT_MAX), "configure 200 MiB");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_NORMAL, "the level at 85 of 200 MiB, at once");
    st = status(w);
    expect_u64(st.limit_bytes, 200 * MIB, "the limit after configure");
    expect_u64(st.marks_enter[TIDE_OVERLOAD_SOFT], 160 * MIB, "soft's enter mark of 200 MiB");
    expect_u64(st.actions[TIDE_NODE_ACT_RESTORE], 1, "restore after the limit went up");
    expect_ok(tide_node_memory_configure(w->n, 90 * MIB, NULL, UINT_MAX, UINT_MAX), "configure 90 MiB");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_HIGH, "the level at 85 of 90 MiB (94%)");
    expect_rc(tide_node_memory_configure(w->n, 200 * MIB, bad, UINT_MAX, UINT_MAX), TIDE_EINVAL,
              "configure levels 90,80,97");
    st = status(w);
    expect_u64(st.limit_bytes, 90 * MIB, "the limit after a refused configure");
    expect_u64((uint64_t)st.level, TIDE_OVERLOAD_HIGH, "the level after a refused configure");
    expect_ok(tide_node_memory_configure(w->n, 150 * MIB, other, 5, 20), "configure 150 MiB at 50,60,70");
    /* from high, kept: 57% is above high's new leave mark 55% */
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_HIGH, "85 of 150 MiB (57%) at 50,60,70");
    expect_u64(status(w).marks_enter[TIDE_OVERLOAD_CRITICAL], 105 * MIB, "critical's enter mark at 70% of 150 MiB");
    st = status(w);
    expect_u64(st.pct[TIDE_OVERLOAD_HIGH], 60, "high's percent in force");
    expect_u64(st.pressure_pct, 20, "the pressure threshold in force");
    expect_u64(tide_node_options(w->n)->memory_pct[TIDE_OVERLOAD_HIGH], 90, "the options stay as opened");
}

/* A configure keeps the level: reset to normal, at HIGH with 87% (high's
 * leave mark 85%) the same limit would drop it to SOFT. */
static void configure_keeps_the_level_and_its_hysteresis(void **state)
{
    world *w = *state;
    int lines;

    open_world(w);
    expect_look(w, 95, TIDE_OVERLOAD_HIGH, "95 MiB");
    expect_look(w, 87, TIDE_OVERLOAD_HIGH, "87 MiB: high holds above its leave mark");
    lines = w->lines;
    expect_ok(tide_node_memory_configure(w->n, 100 * MIB, NULL, UINT_MAX, UINT_MAX), "the same limit");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_HIGH, "the same limit keeps high");
    expect_u64((uint64_t)w->lines, (uint64_t)lines, "no level line for the same limit");
    expect_ok(tide_node_memory_configure(w->n, 200 * MIB, NULL, UINT_MAX, UINT_MAX), "200 MiB");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_NORMAL, "87 of 200 MiB: normal");
    expect_contains(w->last, "reconfigured", "the reason of a configure-driven change");
    if (strstr(w->last, "memory pressure over")) fail_msg("the reason says pressure: %s", w->last);
    expect_look(w, 87, TIDE_OVERLOAD_NORMAL, "a look after it");
}

/* Bad marks are refused at open even without a limit: accepted, they
 * would make every later configure keeping them (pct NULL) refused. */
static void bad_marks_are_refused_at_open_even_without_a_limit(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);

    o.memory_limit = 0;
    o.memory_pct[TIDE_OVERLOAD_HIGH] = 70;          /* below soft's 80 */
    expect_rc(tide_node_open(&w->n, &o), TIDE_EINVAL, "levels 80,70,97 without a limit");
    w->n = NULL;
    o.memory_pct[TIDE_OVERLOAD_HIGH] = 90;
    o.memory_hysteresis_pct = 95;
    expect_rc(tide_node_open(&w->n, &o), TIDE_EINVAL, "hysteresis 95 without a limit");
    w->n = NULL;
    o.memory_hysteresis_pct = 5;
    open_with(w, &o);
    expect_ok(tide_node_memory_configure(w->n, 100 * MIB, NULL, UINT_MAX, UINT_MAX), "a limit later");
    expect_look(w, 85, TIDE_OVERLOAD_SOFT, "85 MiB");
}

/* opts.psi_path is copied at open (the caller's buffer may go). */
static void psi_path_is_copied_at_open(void **state)
{
    world *w = *state;
    tide_node_opts o = real_opts(w);
    char path[64];

    if (access(TIDE_MEM_PSI_SYSTEM, R_OK) != 0) th_skip("no %s (a kernel without PSI)", TIDE_MEM_PSI_SYSTEM);
    snprintf(path, sizeof path, "%s", TIDE_MEM_PSI_SYSTEM);
    o.hooks.psi_path = path;
    open_with(w, &o);
    snprintf(path, sizeof path, "/nonexistent-tide/pressure");
    expect_u64((uint64_t)tide_node_memory_check(w->n), TIDE_OVERLOAD_NORMAL, "a look");
    expect_u64((uint64_t)status(w).last.has_psi, 1, "PSI read from the copy");
    expect_str(tide_node_options(w->n)->hooks.psi_path, TIDE_MEM_PSI_SYSTEM, "the options' copy");
}

static void configure_to_no_limit_drops_to_normal(void **state)
{
    world *w = *state;
    unsigned bad[TIDE_OVERLOAD_LEVELS] = { 0, 80, 80, 97 };

    open_world(w);
    expect_look(w, 99, TIDE_OVERLOAD_CRITICAL, "99 MiB");
    expect_rc(tide_node_memory_configure(w->n, 0, bad, UINT_MAX, UINT_MAX), TIDE_EINVAL,
              "configure no limit with levels 80,80,97");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_CRITICAL, "the level after the refusal");
    expect_ok(tide_node_memory_configure(w->n, 0, NULL, UINT_MAX, UINT_MAX), "configure no limit");
    expect_u64((uint64_t)tide_node_overload_level(w->n), TIDE_OVERLOAD_NORMAL, "the level without a limit");
    expect_contains(w->last, "critical -> normal", "the fall's line");
    expect_look(w, 1000, TIDE_OVERLOAD_NORMAL, "1000 MiB without a limit");
    expect_ok(put_i(w, 1), "a put without a limit");
}

/* ---- peaks and time ---------------------------------------------------------------------- */

static void peaks_since_open_and_since_the_last_sweep_round(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);
    expect_look(w, 30, TIDE_OVERLOAD_NORMAL, "30 MiB");
    expect_look(w, 60, TIDE_OVERLOAD_NORMAL, "60 MiB");
    expect_look(w, 40, TIDE_OVERLOAD_NORMAL, "40 MiB");
    st = status(w);
    expect_u64(st.peak_start_bytes, 60 * MIB, "the peak since open");
    expect_u64(st.peak_sweep_bytes, 60 * MIB, "the peak since the last round (none yet)");
    tide_node_sweep(w->n, NULL);
    expect_u64(status(w).peak_sweep_bytes, 40 * MIB, "the sweep peak right after a round: the latest reading");
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "50 MiB");
    expect_look(w, 45, TIDE_OVERLOAD_NORMAL, "45 MiB");
    st = status(w);
    expect_u64(st.peak_sweep_bytes, 50 * MIB, "the peak since the last round");
    expect_u64(st.peak_start_bytes, 60 * MIB, "the peak since open after the round");
}

static void time_is_counted_per_level(void **state)
{
    world *w = *state;
    tide_node_memory_status st;

    open_world(w);
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "10 MiB");
    w->now += 3 * SEC;
    expect_look(w, 81, TIDE_OVERLOAD_SOFT, "81 MiB after 3 s");
    w->now += 2 * SEC;
    expect_look(w, 10, TIDE_OVERLOAD_NORMAL, "10 MiB after 2 s more");
    w->now += 1 * SEC;
    st = status(w);
    expect_u64(st.level_seconds_us[TIDE_OVERLOAD_SOFT], 2 * SEC, "time at soft");
    expect_u64(st.level_seconds_us[TIDE_OVERLOAD_NORMAL], 4 * SEC, "time at normal (3 s, then 1 s to the snapshot)");
    expect_u64(st.level_seconds_us[TIDE_OVERLOAD_HIGH], 0, "time at high");
}

/* ---- the rotator's gate ------------------------------------------------------------------ */

static void the_rotators_gate_waits_while_the_level_is_high(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);
    tide_node_rotation_report r;

    o.online_delete_on = 1;
    o.online_delete = 1;
    o.rotation_wait_max_s = 0;        /* one look, then abandoned with the reason */
    o.recovery_wait_s = 0;
    open_with(w, &o);
    expect_ok(put_i(w, 1), "a put at normal (the trigger is one object)");
    expect_look(w, 92, TIDE_OVERLOAD_HIGH, "92 MiB");
    expect_u64((uint64_t)tide_node_rotate_check(w->n, &r), 1, "a due attempt at high");
    expect_u64((uint64_t)r.abandoned, 1, "the attempt at high is abandoned");
    expect_contains(r.error, "the memory level is high", "the gate's reason");
    expect_look(w, 50, TIDE_OVERLOAD_NORMAL, "50 MiB");
    w->now += 1;
    memset(&r, 0, sizeof r);
    /* recovery_wait_s 0 (set at open): the attempt is due at once, so the
     * check must make it ("== 1 && abandoned" alone would pass when no
     * attempt was made at all) */
    expect_u64((uint64_t)tide_node_rotate_check(w->n, &r), 1, "an attempt at normal is made");
    if (r.abandoned) fail_msg("an attempt at normal: expected no abandonment, got '%s'", r.error);
}

/* ---- the real reading ---------------------------------------------------------------------- */

static void the_real_reading_gives_the_rss_and_the_kernels_peak(void **state)
{
    world *w = *state;
    tide_node_opts o;
    tide_node_memory_status st;

    o = real_opts(w);
    open_with(w, &o);
    expect_u64((uint64_t)tide_node_memory_check(w->n), TIDE_OVERLOAD_NORMAL, "the level under 1 TiB");
    st = status(w);
    if (st.last.rss_bytes == 0) fail_msg("the real reading: expected an RSS above 0, got 0");
    expect_u64(st.counted_bytes, st.last.rss_bytes, "counted bytes without a cgroup: the RSS");
    expect_str(st.counts, "rss", "which figure counts");
    if (st.peak_start_bytes < st.counted_bytes)
        fail_msg("the peak since open %" PRIu64 " is below the counted %" PRIu64, st.peak_start_bytes, st.counted_bytes);
    expect_u64((uint64_t)st.last.has_cgroup, 0, "no cgroup figures without cgroup_path");
    if (access(TIDE_MEM_PSI_SYSTEM, R_OK) == 0) expect_u64((uint64_t)st.last.has_psi, 1, "PSI read where it exists");
    if (!st.psi_trigger && st.psi_trigger_error[0] == '\0')
        fail_msg("no PSI trigger and no reason given in psi_trigger_error");
    expect_u64(st.readings, 1, "readings");
}

/* Kernels >= 6.5 refuse a 1 s trigger window (EINVAL without
 * CAP_SYS_RESOURCE); the governor's 2 s window is granted. */
static void the_governor_opens_a_psi_trigger_where_psi_exists(void **state)
{
    world *w = *state;
    tide_node_opts o = real_opts(w);
    tide_node_memory_status st;

    if (access(TIDE_MEM_PSI_SYSTEM, R_OK) != 0) th_skip("no %s (a kernel without PSI)", TIDE_MEM_PSI_SYSTEM);
    open_with(w, &o);
    expect_u64((uint64_t)tide_node_memory_check(w->n), TIDE_OVERLOAD_NORMAL, "the level under 1 TiB");
    st = status(w);
    if (!st.psi_trigger) fail_msg("no PSI trigger on %s: %s", TIDE_MEM_PSI_SYSTEM, st.psi_trigger_error);
    expect_u64((uint64_t)st.last.has_psi, 1, "the averages read as well");
}

/* The descriptor number of the node's PSI trigger (the only one open on
 * the PSI file), or -1. */
static int trigger_fd(void)
{
    char link[64], target[256];

    for (int fd = 3; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0) continue;
        target[k] = '\0';
        if (strcmp(target, TIDE_MEM_PSI_SYSTEM) == 0) return fd;
    }
    return -1;
}

/* With no governor thread (memory_poll_ms 0) a look itself must notice
 * POLLERR or POLLNVAL on the trigger, close it and say why, and never count
 * it as a firing (the kernel sets POLLPRI with POLLERR). The trigger's
 * descriptor is replaced by a pipe's write end without a reader (POLLERR),
 * then closed (POLLNVAL). A closed descriptor's number goes to the next
 * file any thread opens, which poll would then find valid, so the node runs
 * with no thread that opens files: no key count (count_keys_max_bytes 0),
 * and no sweeper, rotator or governor thread. */
static void a_trigger_reporting_an_error_is_closed_and_never_fires(void **state)
{
    world *w = *state;
    tide_node_opts o = real_opts(w);
    tide_node_memory_status st;
    int fd, pfd[2];

    o.count_keys_max_bytes = 0;

    if (access(TIDE_MEM_PSI_SYSTEM, R_OK) != 0) th_skip("no %s (a kernel without PSI)", TIDE_MEM_PSI_SYSTEM);
    for (int round = 0; round < 2; round++) {
        open_with(w, &o);
        if (!status(w).psi_trigger) th_skip("no PSI trigger granted: %s", status(w).psi_trigger_error);
        fd = trigger_fd();
        if (fd < 0) fail_msg("the trigger's descriptor is not among /proc/self/fd");
        if (round == 0) {              /* POLLERR */
            expect_u64((uint64_t)pipe(pfd), 0, "a pipe");
            expect_u64((uint64_t)dup2(pfd[1], fd), (uint64_t)fd, "the pipe over the trigger");
            close(pfd[0]);
            close(pfd[1]);
        } else {
            close(fd);                 /* POLLNVAL */
        }
        for (int i = 0; i < 3; i++) {
            expect_u64((uint64_t)tide_node_memory_check(w->n), TIDE_OVERLOAD_NORMAL, "a look");
            st = status(w);
            expect_u64((uint64_t)st.last.psi_triggered, 0, "an error on the trigger is never a firing");
            expect_u64((uint64_t)st.psi_trigger, 0, "the trigger no longer polled");
            expect_contains(st.psi_trigger_error, round == 0 ? "POLLERR" : "POLLNVAL", "why");
        }
        tide_node_close(w->n);
        w->n = NULL;
    }
}

static char g_group[256];

/* The child: join the group, touch 64 MiB, say so, wait to be killed. */
static void child_in_group(const char *procs, int ready)
{
    char line[32];
    int len = snprintf(line, sizeof line, "%d\n", (int)getpid());
    size_t n = 64 * MIB;
    volatile char *p;                 /* volatile: the stores must not be optimised away */

    if (th_write_file(procs, line, (size_t)len) != 0) _exit(3);
    p = malloc(n);
    if (p == NULL) _exit(4);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    if (write(ready, "r", 1) != 1) _exit(5);
    for (;;) pause();
}

static void a_real_v1_cgroup_counts_its_usage_less_page_cache(void **state)
{
    world *w = *state;
    tide_node_opts o;
    tide_node_memory_status st;
    char procs[320], c = 0;
    int fds[2];
    pid_t pid;

    /* Skips when it cannot be made; th_teardown (in teardown) stops the
     * child and removes the group whatever happens. */
    th_cgroup_v1("tide-node-test", 1ull << 30, g_group, sizeof g_group);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", g_group);
    if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
    pid = th_fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) { close(fds[0]); child_in_group(procs, fds[1]); }
    close(fds[1]);
    if (read(fds[0], &c, 1) != 1) fail_msg("the child in %s did not get ready (it could not join or touch)", g_group);
    close(fds[0]);
    o = real_opts(w);
    o.cgroup_path = g_group;
    o.cgroup_version = 1;
    open_with(w, &o);
    (void)tide_node_memory_check(w->n);
    st = status(w);
    expect_u64((uint64_t)st.last.has_cgroup, 1, "the cgroup was read");
    if (st.last.cgroup.current_bytes < 64 * MIB)
        fail_msg("the group's usage: expected at least the child's 64 MiB, got %" PRIu64, st.last.cgroup.current_bytes);
    if (st.last.rss_bytes < 64 * MIB) {
        expect_str(st.counts, "cgroup", "which figure counts (the group holds more than this process)");
        expect_u64(st.counted_bytes, st.last.cgroup.current_bytes - st.last.cgroup.page_cache_bytes,
                   "counted: usage less page cache");
    }
    if (!st.last.cgroup.has_event[TIDE_MEM_EV_MAX]) fail_msg("v1: expected memory.failcnt as the max event");
}

/* nudb.key of the node's plain store grown to `bytes` with empty buckets
 * (zero blocks: an empty store stays sound), written with pwrite, so the
 * whole file is in the page cache. */
static void grow_key_file(world *w, uint64_t bytes)
{
    static uint8_t zeros[1 << 20];
    char path[sizeof w->s.dir + 16];
    struct stat sb;
    int fd;

    snprintf(path, sizeof path, "%s/nudb.key", w->s.dir);
    if ((fd = open(path, O_WRONLY)) < 0 || fstat(fd, &sb) != 0) fail_msg("open %s: %s", path, strerror(errno));
    for (uint64_t at = (uint64_t)sb.st_size; at < bytes; at += sizeof zeros)
        if (pwrite(fd, zeros, sizeof zeros, (off_t)at) != (ssize_t)sizeof zeros) {
            close(fd);
            fail_msg("pwrite %s: %s", path, strerror(errno));
        }
    if (fsync(fd) != 0) fail_msg("fsync %s: %s", path, strerror(errno));
    close(fd);
}

#define KEY_FILE_BYTES (64 * MIB + 4096)   /* (buckets + 1) x 4096 */
#define BALLAST (96 * MIB)

static char *volatile g_ballast;   /* volatile: the compiler keeps the memset */

/* The real reading counts anonymous memory, whatever of nudb.key the page
 * cache holds: with the key file wholly in the page cache (the commit
 * pwrites it), mapped, a few pages touched, and 96 MiB of anonymous memory
 * held, the reading is at least those 96 MiB. (RSS less mincore's count
 * of the map said about 40 MiB: mincore reports the page cache's pages,
 * not the ones this process mapped.) */
static void the_real_reading_counts_anonymous_memory_beside_a_cached_key_file(void **state)
{
    world *w = *state;
    tide_node_opts o = real_opts(w);
    tide_cache_obj *obj = NULL;
    uint8_t key[32] = { 0 };
    uint64_t mapped = 0;
    char *ballast;

    o.key_size = 32;
    o.block_size = 4096;
    open_with(w, &o);
    expect_ok(tide_node_close(w->n), "close the new store");
    w->n = NULL;
    grow_key_file(w, KEY_FILE_BYTES);
    open_with(w, &o);
    for (int i = 0; i < 16; i++) {      /* misses: each searches one bucket through the map */
        key[0] = (uint8_t)i;
        if (tide_node_get(w->n, key, &obj) == 0) tide_cache_obj_release(obj);
    }
    if ((ballast = malloc(BALLAST)) == NULL) fail_msg("no memory for the ballast");
    g_ballast = ballast;
    memset(g_ballast, 1, BALLAST);
    (void)tide_node_memory_check(w->n);
    tide_node_memory_status st = status(w);
    tide_store_info si;
    tide_node_store_info(w->n, &si);
    mapped = si.key_map_bytes;
    g_ballast = NULL;
    free(ballast);
    if (mapped < 64 * MIB) th_skip("the key file is not mapped here (%" PRIu64 " bytes)", mapped);
    if (st.last.rss_bytes < BALLAST)
        fail_msg("the reading %" PRIu64 " MiB is below the %" PRIu64 " MiB of anonymous memory held",
                 st.last.rss_bytes / MIB, BALLAST / MIB);
}

/* The startup log's RSS line (tide_startup_log_rss): with pages of the
 * store's maps in (a node opened again reads every value through them),
 * the line's store-maps part holds them, not its process-memory part, and
 * the line says how far the maps can take RSS. */
static void the_startup_rss_line_puts_the_maps_pages_beside_the_process_memory(void **state)
{
    th_skip_unless_maps();
    world *w = *state;
    tide_node_opts o = real_opts(w);
    tide_cache_obj *obj = NULL;
    tide_config c;
    static uint8_t value[2000];
    uint8_t key[32];
    uint64_t key_res = 0, dat_res = 0;
    double anon_mib = -1, maps_mib = -1;
    const char *at;

    memset(value, 'r', sizeof value);
    open_with(w, &o);
    for (uint64_t i = 0; i < 3000; i++) {
        key_of(i, key);
        expect_ok(tide_node_put(w->n, key, value, sizeof value), "put");
    }
    expect_ok(tide_node_close(w->n), "close");
    w->n = NULL;
    open_with(w, &o);
    for (uint64_t i = 0; i < 3000; i++) {
        key_of(i, key);
        expect_ok(tide_node_get(w->n, key, &obj), "get");
        tide_cache_obj_release(obj);
    }
    expect_ok(tide_node_key_map_resident(w->n, &key_res), "the key map's resident pages");
    expect_ok(tide_node_dat_map_resident(w->n, &dat_res), "the data map's resident pages");
    if (dat_res < 4 * MIB) fail_msg("6 MB read through the data map left %" PRIu64 " bytes of it resident", dat_res);
    tide_config_defaults(&c);
    c.memory_limit = o.memory_limit;
    w->rss_line[0] = '\0';
    tide_startup_log_rss(&c, w->n);
    if ((at = strstr(w->rss_line, "memory: RSS ")) == NULL) fail_msg("no \"memory: RSS\" line was logged");
    if (sscanf(at, "memory: RSS %*f MiB = %lf MiB process memory (anonymous, counted against memory_limit) + "
               "%lf MiB of nudb.dat/nudb.key mapped read-only", &anon_mib, &maps_mib) != 2)
        fail_msg("the line does not read RSS = process memory + maps: %s", w->rss_line);
    /* Rounded to 0.1 MiB; no page left the maps between the two counts. */
    if (maps_mib * MIB + 0.06 * MIB < (double)(key_res + dat_res))
        fail_msg("the line's maps part %.1f MiB is less than their %.1f MiB resident: %s", maps_mib,
                 (double)(key_res + dat_res) / MIB, w->rss_line);
    expect_contains(w->rss_line, "page cache the kernel reclaims; not counted", "the maps said not counted");
    expect_contains(w->rss_line, "as fetches read the store, the maps' part of RSS grows up to their size",
                    "how far the maps can take RSS");
}

/* store_key_map 0 (tided's store_key_map=off) reaches the store: its
 * lookups pread every bucket and nothing is mapped; with it (the default)
 * they go through the map. */
static void store_key_map_off_reaches_the_store(void **state)
{
    th_skip_unless_maps();
    world *w = *state;
    tide_node_opts o = real_opts(w);
    tide_cache_obj *obj = NULL;
    uint8_t key[32] = { 0 };
    tide_store_info si;

    for (int no_key_map = 1; no_key_map >= 0; no_key_map--) {
        o.store_key_map = !no_key_map;
        open_with(w, &o);
        for (int i = 0; i < 8; i++) {
            key[0] = (uint8_t)i;
            if (tide_node_get(w->n, key, &obj) == 0) tide_cache_obj_release(obj);
        }
        tide_node_store_info(w->n, &si);
        expect_ok(tide_node_close(w->n), "close");
        w->n = NULL;
        if (no_key_map) {
            expect_u64(si.key_map_bytes, 0, "store_key_map 0: nothing mapped");
            expect_u64(si.key_map_views, 0, "store_key_map 0: no lookup through the map");
            if (si.key_bucket_reads < 8) fail_msg("store_key_map 0: expected 8 bucket preads, got %" PRIu64, si.key_bucket_reads);
        } else {
            if (si.key_map_bytes == 0) fail_msg("the default: expected the key file mapped");
            if (si.key_map_views < 8) fail_msg("the default: expected 8 lookups in the map, got %" PRIu64, si.key_map_views);
        }
    }
}

/* ---- the thread ------------------------------------------------------------------------- */

/* Wait up to 10 s (generous: the thread looks every 10 ms) for `level`. */
static void wait_for_level(world *w, int level, const char *what)
{
    double t0 = th_now_ms();

    while (tide_node_overload_level(w->n) != level) {
        if (th_now_ms() - t0 > 10000)
            fail_msg("%s: expected level %s within 10 s, got %s", what, tide_mem_overload_level_name(level),
                     tide_mem_overload_level_name(tide_node_overload_level(w->n)));
        usleep(1000);
    }
}

static void the_governor_thread_moves_the_level_on_its_own(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);

    o.memory_poll_ms = 10;
    o.hooks.clock_us = NULL;                /* real time for the thread */
    atomic_store(&w->rss, 95 * MIB);
    open_with(w, &o);
    wait_for_level(w, TIDE_OVERLOAD_HIGH, "95 MiB with the thread running");
    atomic_store(&w->rss, 10 * MIB);
    wait_for_level(w, TIDE_OVERLOAD_NORMAL, "10 MiB with the thread running");
    if (status(w).level_changes < 2) fail_msg("expected at least 2 level changes, got %" PRIu64,
                                              status(w).level_changes);
    expect_ok(tide_node_close(w->n), "close with the thread running");
    w->n = NULL;
}

/* A configure must not run a whole look (round + release) on the
 * caller's thread (tided's loop 0). With the thread running it only sets
 * the marks and wakes the thread, which makes the look at once. */
static void configure_with_the_thread_running_looks_on_the_thread(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);
    int lines;

    o.memory_poll_ms = 600000;        /* the thread looks at start, then only when woken */
    o.hooks.clock_us = NULL;
    atomic_store(&w->rss, 95 * MIB);
    open_with(w, &o);
    wait_for_level(w, TIDE_OVERLOAD_HIGH, "95 MiB: the thread's first look");
    lines = w->lines;
    expect_ok(tide_node_memory_configure(w->n, 200 * MIB, NULL, UINT_MAX, UINT_MAX), "configure 200 MiB");
    wait_for_level(w, TIDE_OVERLOAD_NORMAL, "95 of 200 MiB, after the thread's wake");
    expect_u64((uint64_t)atomic_load(&w->readings_on_main), 0, "no reading on the configuring thread");
    expect_u64(status(w).limit_bytes, 200 * MIB, "the limit in force");
    if (w->lines <= lines) fail_msg("no level line after the configure");
    expect_ok(tide_node_close(w->n), "close with the thread running");
    w->n = NULL;
}

/* Close while a governor round is in its release: the release waits until
 * another thread has called close; close waits for it, and everything put
 * before is stored (reopened). */
static _Atomic int g_in_release, g_closing;

static int blocking_release(void *arg, tide_mem_trim_report *r)
{
    (void)arg;
    memset(r, 0, sizeof *r);
    atomic_store(&g_in_release, 1);
    for (int i = 0; i < 10000 && !atomic_load(&g_closing); i++) usleep(1000);
    usleep(20000);                    /* let close reach the governor's join */
    return 0;
}

static void *closer(void *arg)
{
    world *w = arg;

    atomic_store(&g_closing, 1);
    return (void *)(intptr_t)tide_node_close(w->n);
}

static void close_during_a_governor_round_waits_for_it(void **state)
{
    world *w = *state;
    tide_node_opts o = base_opts(w);
    pthread_t t;
    void *rc;
    double t0;

    atomic_store(&g_in_release, 0);
    atomic_store(&g_closing, 0);
    o.memory_poll_ms = 10;
    o.hooks.clock_us = NULL;
    o.hooks.release = blocking_release;
    open_with(w, &o);
    for (uint64_t i = 0; i < 50; i++) expect_ok(put_i(w, i), "a put at normal");
    atomic_store(&w->rss, 95 * MIB);
    t0 = th_now_ms();
    while (!atomic_load(&g_in_release)) {
        if (th_now_ms() - t0 > 10000) fail_msg("the governor's round did not reach its release within 10 s");
        usleep(1000);
    }
    expect_u64((uint64_t)pthread_create(&t, NULL, closer, w), 0, "the closing thread");
    pthread_join(t, &rc);
    w->n = NULL;
    expect_u64((uint64_t)(intptr_t)rc, 0, "close during the round");
    o = base_opts(w);
    atomic_store(&w->rss, 10 * MIB);
    open_with(w, &o);
    for (uint64_t i = 0; i < 50; i++) expect_stored(w, i, "after a close during a round");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(levels_move_with_hysteresis_and_each_change_is_logged_once),
        T(the_cgroup_counts_when_its_usage_less_page_cache_is_larger),
        T(a_rise_shrinks_the_caches_sweeps_and_releases_once_and_normal_restores),
        T(a_rise_after_a_partial_fall_never_loosens_the_caches),
        T(trim_off_sweeps_without_a_release),
        T(the_round_repeats_every_second_while_above_softs_enter_mark),
        T(the_resweep_backs_off_while_it_frees_nothing),
        T(trim_policy_never_makes_no_forced_release),
        T(put_is_refused_at_high_and_accepted_below_highs_leave_mark_and_nothing_is_lost),
        T(pressure_holds_soft_until_avg10_falls_under_half_the_threshold),
        T(trigger_pressure_holds_a_window_after_the_last_firing),
        T(the_cgroups_own_pressure_counts_when_larger),
        T(pressure_off_is_ignored),
        T(a_failed_reading_is_counted_and_the_level_kept),
        T(a_failed_cgroup_read_keeps_the_level_and_is_counted),
        T(configure_changes_the_limit_live_and_refuses_bad_levels),
        T(configure_keeps_the_level_and_its_hysteresis),
        T(bad_marks_are_refused_at_open_even_without_a_limit),
        T(psi_path_is_copied_at_open),
        T(configure_to_no_limit_drops_to_normal),
        T(peaks_since_open_and_since_the_last_sweep_round),
        T(time_is_counted_per_level),
        T(the_rotators_gate_waits_while_the_level_is_high),
        T(the_real_reading_gives_the_rss_and_the_kernels_peak),
        T(the_real_reading_counts_anonymous_memory_beside_a_cached_key_file),
        T(store_key_map_off_reaches_the_store),
        T(the_startup_rss_line_puts_the_maps_pages_beside_the_process_memory),
        T(the_governor_opens_a_psi_trigger_where_psi_exists),
        T(a_trigger_reporting_an_error_is_closed_and_never_fires),
        T(a_real_v1_cgroup_counts_its_usage_less_page_cache),
        T(the_governor_thread_moves_the_level_on_its_own),
        T(configure_with_the_thread_running_looks_on_the_thread),
        T(close_during_a_governor_round_waits_for_it),
#undef T
    };
    return cmocka_run_group_tests_name("node_memory", tests, NULL, NULL);
}
