/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_node_arena.c: the promise of the node cache's arena on a real node:
 * after a sweep, anonymous RSS follows what the consumers count.
 *
 * The workload: two interleaved waves of small objects (100 to 1,500
 * bytes, WAVE of each: A0 B0 A1 B1 ...) are put and read; then the first
 * wave's hot tenth and the whole second wave are read again, and the
 * injected clock moves past the cache's age for the rest, so a sweep lets
 * the first wave's cold 90% go. Its freed objects lie between live ones,
 * which is what keeps a malloc'd heap resident. Two sweep rounds follow
 * (each: sweep, the arena's evacuation and release, the allocator's trim).
 *
 * Each run is a child process of its own (a fresh heap, nothing of the
 * other run resident), with no sweeper or governor thread: the rounds run
 * when the test says (events, not timings). The child writes its figures
 * to a pipe: the idle node's anonymous RSS (RssAnon + RssShmem of
 * /proc/self/status, as the governor counts it) after open and one round,
 * then after each round of the workload the anonymous RSS and the bytes
 * every consumer counts (mem/account.h). The test prints both runs, arena
 * on and off, and holds the arena's to the bound:
 *
 *   anonymous RSS <= 1.10 x counted + idle + 8 MiB (an open segment and
 *   the reserve one, and the small allocations nobody counts).
 *
 * The child stops itself after 10 minutes (alarm), and the parent waits
 * for it whatever happens. Skipped under a sanitizer, whose shadow memory
 * and quarantine are RSS no consumer counts.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "mem/account.h"
#include "mem/proc.h"
#include "node/node.h"
#include "tide/error.h"

#define MIB   (1024ull * 1024ull)
#define SEC   1000000ull
#define WAVE  24000u
#define VMIN  100u
#define VMAX  1500u
#define AGE_S 60u

typedef struct figures {
    int rc;                       /* 0, or the step that failed */
    uint64_t idle;                /* anonymous RSS of the idle node */
    uint64_t rss[2], counted[2];  /* after each sweep round */
    uint64_t arena_live[2], arena_resident[2], released[2], moved[2];
} figures;

static uint64_t now_us = 1000 * SEC;

static uint64_t test_clock(void *arg)
{
    (void)arg;
    return now_us;
}

static uint64_t counted_bytes(void)
{
    tide_mem_account_entry e[TIDE_MEM_ACCOUNT_MAX];
    size_t n = tide_mem_account_snapshot(e, TIDE_MEM_ACCOUNT_MAX);
    int64_t sum = 0;

    for (size_t i = 0; i < n && i < TIDE_MEM_ACCOUNT_MAX; i++) sum += e[i].bytes;
    return sum > 0 ? (uint64_t)sum : 0;
}

static uint64_t anon_rss(void)
{
    uint64_t b = 0;

    return tide_mem_proc_anon_rss(&b) == 0 ? b : 0;
}

/* Read item i: 0 when the node returns its bytes. */
static int read_item(tide_node *n, uint64_t i)
{
    uint8_t key[32], want[VMAX];
    size_t len = th_len(i, VMIN, VMAX);
    tide_cache_obj *o = NULL;
    int rc;

    th_key(i, 32, key);
    th_value(i, len, want);
    rc = tide_node_get(n, key, &o);
    if (rc == 0 && (tide_cache_obj_len(o) != len || memcmp(tide_cache_obj_data(o), want, len) != 0))
        rc = -1;
    tide_cache_obj_release(o);
    return rc;
}

/* The two waves, put and read; the hot tenth of A and all of B read again
 * AGE_S * 2 / 3 later; the clock moved so A's cold 90% have passed the age. */
static int workload(tide_node *n)
{
    uint8_t key[32], val[VMAX];

    for (uint64_t j = 0; j < WAVE; j++) {
        for (uint64_t i = j; i < 2ull * WAVE; i += WAVE) {     /* A_j, then B_j */
            size_t len = th_len(i, VMIN, VMAX);
            th_key(i, 32, key);
            th_value(i, len, val);
            if (tide_node_put(n, key, val, len) != 0) return 1;
        }
    }
    if (tide_node_sync(n) != 0) return 2;
    for (uint64_t i = 0; i < 2ull * WAVE; i++)
        if (read_item(n, i) != 0) return 3;
    now_us += AGE_S * 2 / 3 * SEC;
    for (uint64_t i = 0; i < 2ull * WAVE; i++)
        if ((i >= WAVE || i % 10 == 0) && read_item(n, i) != 0) return 4;
    now_us += AGE_S * 2 / 3 * SEC;
    return 0;
}

static void child_run(const char *dir, int arena, int fd)
{
    figures f;
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;
    tide_arena_stats a;

    memset(&f, 0, sizeof f);
    alarm(600);
    tide_node_opts_init(&o);
    o.dir = dir;
    o.sweep_interval_ms = 0;
    o.memory_poll_ms = 0;
    o.cache_age_s = AGE_S;
    o.cache_arena = arena;
    o.clock_us = test_clock;
    if (tide_node_open(&n, &o) != 0) {
        f.rc = 11;
        goto out;
    }
    tide_node_sweep(n, &r);
    f.idle = anon_rss();
    f.rc = workload(n);
    for (int k = 0; k < 2 && f.rc == 0; k++) {
        tide_node_sweep(n, &r);
        f.rss[k] = anon_rss();
        f.counted[k] = counted_bytes();
        tide_node_cache_arena_stats(n, &a);
        f.arena_live[k] = a.live_bytes;
        f.arena_resident[k] = a.resident_bytes;
        f.released[k] = r.arena.released;
        f.moved[k] = r.arena.evac.moved_objects;
        if (k == 0 && r.node_cache.evicted < WAVE * 8 / 10) f.rc = 12;   /* the cold 90% went */
    }
    if (tide_node_close(n) != 0 && f.rc == 0) f.rc = 13;
out:
    if (write(fd, &f, sizeof f) != (ssize_t)sizeof f) _exit(2);
    _exit(0);
}

/* Run the workload in a child with the arena on or off, on a store of its
 * own in the scratch directory; its figures. */
static figures run_child(const th_scratch *s, int arena)
{
    figures f;
    int fds[2], st = 0;
    pid_t pid;
    ssize_t got;
    char dir[2200];

    memset(&f, 0, sizeof f);
    th_path(dir, sizeof dir, s->base, arena ? "data-on" : "data-off");
    if (pipe(fds) != 0) fail_msg("pipe");
    pid = fork();
    if (pid < 0) fail_msg("fork");
    if (pid == 0) {
        close(fds[0]);
        child_run(dir, arena, fds[1]);
    }
    close(fds[1]);
    got = read(fds[0], &f, sizeof f);
    close(fds[0]);
    if (waitpid(pid, &st, 0) != pid) kill(pid, SIGKILL);
    if (got != (ssize_t)sizeof f || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the arena=%d child: expected its figures and exit 0, got %zd bytes, status %d", arena, got,
                 st);
    if (f.rc != 0) fail_msg("the arena=%d child failed at step %d", arena, f.rc);
    return f;
}

static void print_figures(const char *what, const figures *f)
{
    for (int k = 0; k < 2; k++)
        print_message("    %s, round %d: anon RSS %.1f MiB = idle %.1f + %.1f; counted %.1f MiB; "
                      "(RSS - idle) / counted %.2f; arena live %.1f resident %.1f MiB, %" PRIu64
                      " moved, %" PRIu64 " segments released\n", what, k + 1, f->rss[k] / (double)MIB,
                      f->idle / (double)MIB, ((double)f->rss[k] - (double)f->idle) / (double)MIB,
                      f->counted[k] / (double)MIB,
                      ((double)f->rss[k] - (double)f->idle) / (double)f->counted[k],
                      f->arena_live[k] / (double)MIB, f->arena_resident[k] / (double)MIB, f->moved[k],
                      f->released[k]);
}

static void rss_after_each_sweep_is_within_110_percent_of_the_counted_bytes_with_the_arena(void **state)
{
    th_scratch *s = *state;
    figures on, off;

    if (TH_SANITIZER)
        th_skip("a sanitizer's shadow memory and quarantine are resident memory nobody counts");
    off = run_child(s, 0);
    on = run_child(s, 1);
    print_figures("arena off", &off);
    print_figures("arena on ", &on);
    for (int k = 0; k < 2; k++) {
        double bound = 1.10 * (double)on.counted[k] + (double)on.idle + 8.0 * MIB;
        if ((double)on.rss[k] > bound)
            fail_msg("round %d with the arena: anonymous RSS %" PRIu64 " bytes is above 1.10 x counted %"
                     PRIu64 " + idle %" PRIu64 " + 8 MiB = %.0f", k + 1, on.rss[k], on.counted[k], on.idle,
                     bound);
    }
    if (on.released[0] == 0) fail_msg("the first round after the workload released no segment");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(rss_after_each_sweep_is_within_110_percent_of_the_counted_bytes_with_the_arena,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return cmocka_run_group_tests_name("node_arena", tests, NULL, NULL);
}
