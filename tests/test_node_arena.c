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
 * Each run is this binary again (exec), with the allocator of its variant
 * preloaded and nothing of the caller's allocator settings: glibc,
 * jemalloc (alone, and with the background thread as make ALLOC=jemalloc
 * links it), tcmalloc and mimalloc, then glibc and jemalloc with
 * transparent huge pages asked for everywhere (the allocator's setting and
 * the arena's cache_arena_hugepages). A fresh process is a fresh heap,
 * with nothing of another run resident. It has no sweeper or governor
 * thread: the rounds run when the test says (events, not timings). The
 * child checks which allocator serves its malloc (the test fails when the
 * preload did not take) and writes its figures to fd 3: the idle node's
 * anonymous RSS (RssAnon + RssShmem of /proc/self/status, as the governor
 * counts it) after open and one round, then after each round of the
 * workload the anonymous RSS, the part of it in huge pages, and the bytes
 * every consumer counts (mem/account.h). The test prints each variant's
 * runs, arena on and off, and holds the arena's to the bound:
 *
 *   anonymous RSS <= 1.10 x counted + idle + 8 MiB (an open segment and
 *   the reserve one, and the small allocations nobody counts).
 *
 * A child stops itself after 10 minutes (alarm), dies with the test
 * (th_fork), and is reaped whatever happens. A variant whose library is
 * not installed is skipped, naming its Debian package; every variant is
 * skipped under a sanitizer, whose shadow memory and quarantine are RSS
 * no consumer counts and whose runtime must come before a preload.
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
#include "mem/alloc.h"
#include "mem/proc.h"
#include "node/node.h"
#include "tide/error.h"

#define MIB   (1024ull * 1024ull)
#define SEC   1000000ull
#define WAVE  24000u
#define VMIN  100u
#define VMAX  1500u
#define AGE_S 60u        /* the node cache's age, and the key cache's */
#define MISSES 12000u    /* absent keys asked for */

#define CHILD_VAR  "TIDE_TEST_NODE_ARENA_CHILD"   /* "ARENA,HUGEPAGES,DIR" in a child */
#define FIGURES_FD 3                              /* where a child writes its figures */

/* An allocator and its settings: the library preloaded (NULL: glibc's own
 * malloc), one more environment variable, and the arena's huge pages. */
typedef struct variant {
    const char *name, *family, *soname, *package, *env;
    int hugepages;
} variant;

typedef struct figures {
    int rc;                       /* 0, or the step that failed */
    char family[16];              /* the allocator serving malloc in the child */
    uint64_t idle;                /* anonymous RSS of the idle node */
    uint64_t rss[2], counted[2];  /* after each sweep round */
    uint64_t huge[2];             /* of the anonymous RSS, in huge pages */
    uint64_t je_resident[2], je_metadata[2]; /* jemalloc's own stats.resident and
                                                stats.metadata (0 under another) */
    uint64_t arena_live[2], arena_resident[2], released[2], moved[2];
    uint64_t key_moved[2], key_live[2], key_resident[2];   /* the key cache's arena */
} figures;

static uint64_t now_us = 1000 * SEC;

static uint64_t test_clock(void *arg)
{
    (void)arg;
    return now_us;
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

/* Ask for MISSES keys no one stored (from index 2 * WAVE on), or the hot
 * tenth of them: each is a miss the key cache remembers. 0 when every one
 * was not found. */
static int ask_missing(tide_node *n, int hot_only)
{
    uint8_t key[32];
    tide_cache_obj *o = NULL;

    for (uint64_t i = 2ull * WAVE; i < 2ull * WAVE + MISSES; i++) {
        if (hot_only && i % 10 != 0) continue;
        th_key(i, 32, key);
        if (tide_node_get(n, key, &o) != TIDE_ENOTFOUND) {
            tide_cache_obj_release(o);
            return -1;
        }
    }
    return 0;
}

/* The two waves, put and read, and MISSES absent keys asked for; the hot
 * tenth of A and of the misses and all of B read again AGE_S * 2 / 3
 * later; the clock moved so A's cold 90% and the cold misses have passed
 * their ages. */
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
    if (ask_missing(n, 0) != 0) return 5;
    now_us += AGE_S * 2 / 3 * SEC;
    for (uint64_t i = 0; i < 2ull * WAVE; i++)
        if ((i >= WAVE || i % 10 == 0) && read_item(n, i) != 0) return 4;
    if (ask_missing(n, 1) != 0) return 6;
    now_us += AGE_S * 2 / 3 * SEC;
    return 0;
}

/* The fraction of anonymous memory in transparent huge pages, for the
 * report: AnonHugePages of /proc/self/smaps_rollup (0 when unreadable). */
static uint64_t anon_huge(void)
{
    char line[256];
    unsigned long long kb = 0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");

    if (f == NULL) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024u;
}

/* The child's side, in a process of its own run with the variant's
 * environment: the workload on a store in `dir`, its figures to fd
 * FIGURES_FD, then exit. */
static int child_main(const char *spec)
{
    figures f;
    tide_node_opts o;
    tide_node *n = NULL;
    tide_node_sweep_report r;
    tide_arena_stats a;
    tide_mem_alloc_stats st;
    int arena = 0, hugepages = 0, used = 0;
    const char *dir;

    memset(&f, 0, sizeof f);
    alarm(600);
    if (sscanf(spec, "%d,%d,%n", &arena, &hugepages, &used) < 2 || used == 0) return 3;
    dir = spec + used;
    snprintf(f.family, sizeof f.family, "%s", tide_mem_alloc_family_name(tide_mem_alloc_family()));
    tide_node_opts_init(&o);
    o.dir = dir;
    o.sweep_interval_ms = 0;
    o.memory_poll_ms = 0;
    o.cache_age_s = AGE_S;
    o.key_cache_age_s = AGE_S;
    o.cache_arena = arena;
    o.cache_arena_hugepages = hugepages;
    o.hooks.clock_us = test_clock;
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
        f.huge[k] = anon_huge();
        if (tide_mem_alloc_family() == TIDE_MEM_ALLOC_JEMALLOC &&
            tide_mem_alloc_stats_read(TIDE_MEM_ALLOC_JEMALLOC, &st) == 0) {
            f.je_resident[k] = st.jemalloc.resident;
            f.je_metadata[k] = st.jemalloc.metadata;
        }
        f.counted[k] = tide_mem_account_total();
        tide_node_cache_arena_stats(n, &a);
        f.arena_live[k] = a.live_bytes;
        f.arena_resident[k] = a.resident_bytes;
        f.released[k] = r.arena.released;
        f.moved[k] = r.arena.evac.moved_objects;
        f.key_moved[k] = r.key_arena.moved_entries;
        tide_node_key_cache_arena_stats(n, &a);
        f.key_live[k] = a.live_bytes;
        f.key_resident[k] = a.resident_bytes;
        if (k == 0 && r.node_cache.evicted < WAVE * 8 / 10) f.rc = 12;   /* the cold 90% went */
    }
    if (tide_node_close(n) != 0 && f.rc == 0) f.rc = 13;
out:
    return write(FIGURES_FD, &f, sizeof f) == (ssize_t)sizeof f ? 0 : 2;
}

/* The library `soname` in the usual directories, into path; 1 when found. */
static int find_library(const char *soname, char *path, size_t cap)
{
    static const char *const dirs[] = {
        "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
    };

    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, cap, "%s/%s", dirs[i], soname);
        if (access(path, R_OK) == 0) return 1;
    }
    return 0;
}

/* Run this binary again as a child with the variant's environment (and
 * nothing of the caller's allocator settings), the arena on or off, on a
 * store of its own in the scratch directory; its figures. */
static figures run_child(const th_scratch *s, const variant *v, const char *lib, int arena)
{
    figures f;
    int fds[2], st = 0;
    pid_t pid;
    ssize_t got;
    char dir[2200], spec[2300], name[64];

    memset(&f, 0, sizeof f);
    snprintf(name, sizeof name, "data-%s-%s", v->family, arena ? "on" : "off");
    th_path(dir, sizeof dir, s->base, name);
    snprintf(spec, sizeof spec, "%d,%d,%s", arena, v->hugepages, dir);
    if (pipe(fds) != 0) fail_msg("pipe");
    pid = th_fork();
    if (pid < 0) fail_msg("fork");
    if (pid == 0) {
        char *argv[] = { (char *)"test_node_arena", NULL };
        close(fds[0]);
        if (dup2(fds[1], FIGURES_FD) < 0) _exit(126);
        unsetenv("LD_PRELOAD");
        unsetenv("MALLOC_CONF");
        unsetenv("GLIBC_TUNABLES");
        if (lib[0]) setenv("LD_PRELOAD", lib, 1);
        if (v->env) putenv((char *)v->env);
        setenv(CHILD_VAR, spec, 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fds[1]);
    got = read(fds[0], &f, sizeof f);
    close(fds[0]);
    if (th_waitpid(pid, &st, 0) != pid) fail_msg("waitpid");
    if (got != (ssize_t)sizeof f || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s, arena=%d child: expected its figures and exit 0, got %zd bytes, status %d", v->name, arena,
                 got, st);
    if (f.rc != 0) fail_msg("%s, arena=%d child failed at step %d", v->name, arena, f.rc);
    if (strcmp(f.family, v->family) != 0)
        fail_msg("%s, arena=%d child: expected malloc served by %s, got %s", v->name, arena, v->family, f.family);
    return f;
}

static void print_figures(const char *what, int arena, const figures *f)
{
    for (int k = 0; k < 2; k++)
        print_message("    %s, arena %-3s, round %d: anon RSS %.1f MiB = idle %.1f + %.1f (%.1f in huge "
                      "pages); counted %.1f MiB; (RSS - idle) / counted %.2f; arena live %.1f resident "
                      "%.1f MiB, %" PRIu64 " moved, %" PRIu64 " segments released\n", what,
                      arena ? "on" : "off", k + 1, f->rss[k] / (double)MIB, f->idle / (double)MIB,
                      ((double)f->rss[k] - (double)f->idle) / (double)MIB, f->huge[k] / (double)MIB,
                      f->counted[k] / (double)MIB, ((double)f->rss[k] - (double)f->idle) / (double)f->counted[k],
                      f->arena_live[k] / (double)MIB, f->arena_resident[k] / (double)MIB, f->moved[k],
                      f->released[k]);
    for (int k = 0; k < 2 && arena; k++)
        print_message("    %s, arena on , round %d: the key cache's arena live %.2f resident %.2f MiB, %" PRIu64
                      " entries moved\n", what, k + 1, f->key_live[k] / (double)MIB, f->key_resident[k] / (double)MIB,
                      f->key_moved[k]);
    for (int k = 0; k < 2 && f->je_resident[0]; k++)
        print_message("    %s, arena %-3s, round %d: jemalloc's own resident %.1f MiB, metadata %.1f MiB\n", what,
                      arena ? "on" : "off", k + 1, f->je_resident[k] / (double)MIB, f->je_metadata[k] / (double)MIB);
}

/* The transparent huge page mode the kernel offers, for the report. */
static void thp_mode(char *out, size_t cap)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

    snprintf(out, cap, "unknown");
    if (f == NULL) return;
    if (fgets(out, (int)cap, f) == NULL) snprintf(out, cap, "unknown");
    out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

/* Run variant i with the arena off and on; hold the arena's run to the
 * bound after each round. */
static void bound_holds(void **state, const variant *v)
{
    th_scratch *s = *state;
    figures on, off;
    char lib[512] = "", thp[128];

    if (TH_SANITIZER)
        th_skip("a sanitizer's shadow memory and quarantine are resident memory nobody counts, and its "
                "runtime must come before any preloaded allocator");
    if (v->soname && !find_library(v->soname, lib, sizeof lib))
        th_skip("%s not found; install the Debian package %s", v->soname, v->package);
    off = run_child(s, v, lib, 0);
    on = run_child(s, v, lib, 1);
    thp_mode(thp, sizeof thp);
    print_message("    %s%s%s; transparent huge pages: %s\n", v->name, v->env ? ", " : "", v->env ? v->env : "",
                  thp);
    print_figures(v->family, 0, &off);
    print_figures(v->family, 1, &on);
    for (int k = 0; k < 2; k++) {
        double bound = 1.10 * (double)on.counted[k] + (double)on.idle + 8.0 * MIB;
        if ((double)on.rss[k] > bound)
            fail_msg("%s, round %d with the arena: anonymous RSS %" PRIu64 " bytes (%" PRIu64 " in huge pages; "
                     "the arena %" PRIu64 " resident) is above 1.10 x counted %" PRIu64 " + idle %" PRIu64
                     " + 8 MiB = %.0f", v->name, k + 1, on.rss[k], on.huge[k], on.arena_resident[k], on.counted[k],
                     on.idle, bound);
    }
    if (on.released[0] == 0) fail_msg("%s: the first round after the workload released no segment", v->name);
    if (on.key_moved[0] == 0 || on.key_live[0] == 0)
        fail_msg("%s: the first round moved %" PRIu64 " of the key cache's entries, %" PRIu64 " bytes live: expected "
                 "its hot misses kept and moved", v->name, on.key_moved[0], on.key_live[0]);
}

/* Stop whatever child a failed test left, then remove its scratch. */
static int teardown(void **state)
{
    th_teardown_children(state);
    return th_scratch_teardown(state);
}

static const variant variants[] = {
    { "glibc", "glibc", NULL, NULL, NULL, 0 },
    { "jemalloc (LD_PRELOAD)", "jemalloc", "libjemalloc.so.2", "libjemalloc2", NULL, 0 },
    { "jemalloc as make ALLOC=jemalloc links it", "jemalloc", "libjemalloc.so.2", "libjemalloc2",
      "MALLOC_CONF=background_thread:true", 0 },
    { "tcmalloc (LD_PRELOAD)", "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL, 0 },
    { "mimalloc (LD_PRELOAD)", "mimalloc", "libmimalloc.so.2", "libmimalloc2.0", NULL, 0 },
    { "glibc with huge pages, the arena's too", "glibc", NULL, NULL, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1", 1 },
    { "jemalloc with huge pages, the arena's too", "jemalloc", "libjemalloc.so.2", "libjemalloc2",
      "MALLOC_CONF=thp:always", 1 },
};

static void bound_holds_under_glibc(void **state)
{
    bound_holds(state, &variants[0]);
}

static void bound_holds_under_jemalloc(void **state)
{
    bound_holds(state, &variants[1]);
}

static void bound_holds_under_jemalloc_with_its_background_thread(void **state)
{
    bound_holds(state, &variants[2]);
}

static void bound_holds_under_tcmalloc(void **state)
{
    bound_holds(state, &variants[3]);
}

static void bound_holds_under_mimalloc(void **state)
{
    bound_holds(state, &variants[4]);
}

static void bound_holds_under_glibc_with_transparent_huge_pages(void **state)
{
    bound_holds(state, &variants[5]);
}

static void bound_holds_under_jemalloc_with_transparent_huge_pages(void **state)
{
    bound_holds(state, &variants[6]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(bound_holds_under_glibc, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_jemalloc, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_jemalloc_with_its_background_thread, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_tcmalloc, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_mimalloc, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_glibc_with_transparent_huge_pages, th_scratch_setup, teardown),
        cmocka_unit_test_setup_teardown(bound_holds_under_jemalloc_with_transparent_huge_pages, th_scratch_setup, teardown),
    };
    const char *child = getenv(CHILD_VAR);

    if (child) return child_main(child);
    return cmocka_run_group_tests_name("node_arena", tests, NULL, NULL);
}
