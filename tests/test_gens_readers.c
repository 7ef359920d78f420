/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gens_readers.c: the operator's read-only tools (bin/tide visit, get,
 * info, verify, verify --live, generations) against a data directory whose
 * generations a rotation drops under them.
 *
 * The generations are held by the library's handle in a child process, the
 * rotator, as tided holds them: every generation open read-write with its
 * tide.live, and a rotation that cuts a dropped generation's nudb.dat in
 * steps before it unlinks it. The test sends the rotator commands over a
 * pipe (put and sync, fetch, rotate) and reads each rotation's report
 * back; a rotation's trace can stop it after its first cut until the test
 * says go on. The tools run as real processes. Where a tool must be caught
 * between two of its own steps (it has read the manifest, it has not yet
 * touched the generation the rotation drops), the test runs it under
 * ptrace and holds it at its first system call that names that
 * generation. So every race here is made by events, never by time:
 *
 *   1. A visit held mid-walk (its stdout a pipe the test does not drain)
 *      holds the generation a rotation drops: the drop only unlinks it
 *      (no delete step, its bytes in the report's held_bytes), and the
 *      visit then walks every record.
 *   2. The tools that open a generation while its drop is stopped after a
 *      cut say that a rotation is deleting it (exit 1), never that a file
 *      is corrupt; the node directory's tools answer at the same moment.
 *   3. Tools held after they read the manifest, then let go once a
 *      rotation dropped a generation it named, answer from the generations
 *      that remain: get finds the object the node copied forward, and
 *      verify --live, generations and info exit 0.
 *   4. A bounded run of rotations while every tool runs in a loop beside
 *      them: no false verdict.
 *
 * Every child (the rotator, the tools) is started with th_fork and stopped
 * by th_teardown whatever the outcome; scratch directories are removed.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen/gens.h"
#include "tide/store.h"
#include "util/hex.h"
#include "helpers.h"
#include "expect.h"

#define KS 32
#define VMIN 500
#define VMAX 1500
#define ANSWER_MS 120000        /* a bound on a rotator's answer, never reached */
#define GEN1 "gen-000000000001"

/* ---- the rotator: the generations handle in a child process ---- */

typedef struct rot_cmd {
    char     op;                /* 'p' put [a, b) and sync, 'f' fetch a, 'r' rotate, 's' rotate
                                   stopping after the first cut, 'c' go on, 'q' quit */
    uint64_t a, b;
} rot_cmd;

typedef struct rot_ans {
    char     op;                /* 'k' done, 'T' stopped after the first cut, 'R' rotated */
    int      rc;
    tide_gens_rotate_report r;
    char     err[512];
} rot_ans;

typedef struct rotator {
    pid_t pid;
    int   to, from;             /* the command and answer pipes, the test's ends */
    char  dir[2100];
} rotator;

static int read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The rotator's side (no cmocka here: it is another process). */
static struct {
    int in, out, stop_at_cut, stopped;
} child;

static void child_answer(char op, int rc, const tide_gens_rotate_report *r)
{
    rot_ans a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.rc = rc;
    if (r) a.r = *r;
    if (rc) snprintf(a.err, sizeof a.err, "%s", tide_last_error());
    if (write_all(child.out, &a, sizeof a) != 0) _exit(3);
}

/* The trace: after the first cut of a drop, say so and wait for 'c'. */
static void child_trace(void *arg, const char *step)
{
    rot_cmd c;
    (void)arg;
    if (!child.stop_at_cut || child.stopped || strcmp(step, "delete-step") != 0) return;
    child.stopped = 1;
    child_answer('T', 0, NULL);
    if (read_all(child.in, &c, sizeof c) != 0 || c.op != 'c') _exit(4);
}

static int child_put(tide_gens *g, uint64_t from, uint64_t to)
{
    int rc = 0;
    for (uint64_t i = from; i < to && rc == 0; i++) {
        uint8_t k[KS], v[VMAX];
        size_t len = th_len(i, VMIN, VMAX);
        th_key(i, KS, k);
        th_value(i, len, v);
        rc = tide_gens_insert(g, k, v, len, NULL);
    }
    return rc ? rc : tide_gens_sync(g);
}

static int child_fetch(tide_gens *g, uint64_t i)
{
    uint8_t k[KS];
    void *v = NULL;
    size_t len = 0;
    th_key(i, KS, k);
    int rc = tide_gens_fetch(g, k, &v, &len, NULL);
    free(v);
    return rc;
}

static void rotator_main(const char *dir, uint64_t chunk) __attribute__((noreturn));
static void rotator_main(const char *dir, uint64_t chunk)
{
    tide_gens_opts o;
    tide_gens_rotate_report r;
    tide_gens *g = NULL;
    rot_cmd c;

    tide_gens_opts_init(&o);
    o.online_delete = 1;
    o.keep = 2;
    o.delete_chunk_bytes = chunk;
    o.back_off_ms = 0;
    o.store.commit_interval_ms = 600000;    /* commits when synced: the test decides */
    o.trace = child_trace;
    if (tide_gens_open(&g, dir, &o) != 0) {
        child_answer('k', -1, NULL);
        _exit(2);
    }
    child_answer('k', 0, NULL);
    while (read_all(child.in, &c, sizeof c) == 0) {
        if (c.op == 'p') child_answer('k', child_put(g, c.a, c.b), NULL);
        else if (c.op == 'f') child_answer('k', child_fetch(g, c.a), NULL);
        else if (c.op == 'r' || c.op == 's') {
            child.stop_at_cut = c.op == 's';
            child.stopped = 0;
            memset(&r, 0, sizeof r);
            int rc = tide_gens_rotate(g, &r);
            child.stop_at_cut = 0;
            child_answer('R', rc, &r);
        } else break;
    }
    tide_gens_close(g);
    _exit(0);
}

/* The next answer of the rotator; fails the test when none comes. */
static rot_ans rotator_answer(rotator *rt, const char *what)
{
    struct pollfd p = { .fd = rt->from, .events = POLLIN };
    rot_ans a;

    if (poll(&p, 1, ANSWER_MS) != 1 || read_all(rt->from, &a, sizeof a) != 0)
        fail_msg("%s: the rotator (pid %d) did not answer", what, (int)rt->pid);
    return a;
}

static void rotator_send(rotator *rt, char op, uint64_t a, uint64_t b)
{
    rot_cmd c = { op, a, b };
    if (write_all(rt->to, &c, sizeof c) != 0) fail_msg("the rotator (pid %d) is gone", (int)rt->pid);
}

/* Send a command and expect its answer `op` with rc 0. */
static rot_ans rotator_do(rotator *rt, char op, uint64_t a, uint64_t b, char want, const char *what)
{
    rotator_send(rt, op, a, b);
    rot_ans ans = rotator_answer(rt, what);
    if (ans.op != want || ans.rc != 0)
        fail_msg("%s: the rotator answered '%c' rc %d (%s), expected '%c' rc 0", what, ans.op, ans.rc,
                 ans.err, want);
    return ans;
}

/* A rotator over `base`/data (created), cutting `chunk` bytes a step. */
static void rotator_start(rotator *rt, const char *base, uint64_t chunk)
{
    int to[2], from[2];

    snprintf(rt->dir, sizeof rt->dir, "%s/data", base);
    if (pipe(to) != 0 || pipe(from) != 0) fail_msg("pipe: %s", strerror(errno));
    rt->pid = th_fork();
    if (rt->pid < 0) fail_msg("fork: %s", strerror(errno));
    if (rt->pid == 0) {
        close(to[1]);
        close(from[0]);
        child.in = to[0];
        child.out = from[1];
        rotator_main(rt->dir, chunk);
    }
    close(to[0]);
    close(from[1]);
    rt->to = to[1];
    rt->from = from[0];
    rot_ans a = rotator_answer(rt, "the rotator's open");
    if (a.rc != 0) fail_msg("the rotator could not open %s: %s", rt->dir, a.err);
}

static void rotator_stop(rotator *rt)
{
    int st = 0;
    rotator_send(rt, 'q', 0, 0);
    close(rt->to);
    close(rt->from);
    th_waitpid(rt->pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("the rotator exited with status %#x", st);
}

/* Items [0, n1) in generation 1, items [n1, n1 + 50) in generation 2: the
 * next rotation drops generation 1. */
static void fill_two(rotator *rt, uint64_t n1)
{
    rotator_do(rt, 'p', 0, n1, 'k', "items into generation 1");
    tide_gens_rotate_report r = rotator_do(rt, 'r', 0, 0, 'R', "the first rotation").r;
    expect_u64(r.dropped, 0, "the first rotation drops nothing");
    rotator_do(rt, 'p', n1, n1 + 50, 'k', "items into generation 2");
}

/* ---- the tools ---- */

static char *gen_path(char *out, size_t cap, const rotator *rt, const char *gen)
{
    snprintf(out, cap, "%s/%s", rt->dir, gen);
    return out;
}

static void key_hex(uint64_t i, char out[2 * KS + 1])
{
    uint8_t k[KS];
    th_key(i, KS, k);
    tide_hex_encode(k, KS, out);
    out[2 * KS] = '\0';
}

/* bin/tide `args` (shell words), stdout and stderr together in *out. */
static int tide_out(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tide_out(char **out, const char *fmt, ...)
{
    char args[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return th_run_tide(args, 1, out);
}

/* What no read-only tool may say about a generation a rotation drops. */
static void expect_no_false_verdict(const char *out, const char *what)
{
    static const char *const wrong[] = { "corrupt", "short read", "not a NuDB", "runs past",
                                         "shorter than", "NOT SOUND", "named by tide.generations is missing" };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        if (strstr(out, wrong[i]))
            fail_msg("%s: a false verdict ('%s') about a generation a rotation drops:\n%s", what,
                     wrong[i], out);
}

/* ---- 1. a visit held mid-walk ---- */

static void a_visit_walking_a_generation_keeps_it_whole_through_its_drop_held_not_cut(void **state)
{
    th_scratch *t = *state;
    rotator rt;
    char gen1[2200], dat[2300], bin[600], buf[65536];
    int fds[2], st = 0;
    uint64_t lines = 0;
    const uint64_t n1 = 3000;     /* about 3 MB: the walk reads past its first 1 MiB window */

    rotator_start(&rt, t->base, 256 << 10);
    fill_two(&rt, n1);
    gen_path(gen1, sizeof gen1, &rt, GEN1);
    snprintf(dat, sizeof dat, "%s/nudb.dat", gen1);
    long long dat_bytes = th_file_size(dat);
    if (dat_bytes < 2 << 20) fail_msg("generation 1 is too small to walk past one window: %lld bytes", dat_bytes);

    /* The visit writes about 6 MB of hex to a pipe nobody reads yet: it
     * stops in the middle of its walk, holding what it holds. */
    if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
    snprintf(bin, sizeof bin, "%s/tide", th_bin_dir());
    pid_t pid = th_fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, "visit", gen1, "--hex", "--no-progress", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    ssize_t n = 0;
    while (lines == 0 && (n = read(fds[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    if (lines == 0) fail_msg("the visit printed no record before it ended");

    tide_gens_rotate_report r = rotator_do(&rt, 'r', 0, 0, 'R', "the drop under the visit").r;
    expect_u64(r.dropped, 1, "generation 1 dropped");
    expect_u64(r.dropped_ids[0], 1, "the dropped one");
    expect_u64(r.delete_steps, 0, "delete steps under a visit that holds the generation (a cut would "
               "leave it a shortened file)");
    expect_u64(r.deleted_bytes, 0, "bytes counted as deleted while the visit holds them");
    if (r.held_bytes < (uint64_t)dat_bytes)
        fail_msg("held_bytes %" PRIu64 " is under generation 1's nudb.dat of %lld bytes", r.held_bytes,
                 dat_bytes);
    expect_i64(th_exists(gen1), 0, "generation 1's directory is gone all the same");

    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    close(fds[0]);
    th_waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the visit of the dropped generation should end with status 0, got %#x", st);
    expect_u64(lines, n1, "records the visit walked in the generation dropped under it");
    print_message("    held_bytes %" PRIu64 " (nudb.dat %lld), %" PRIu64 " records walked\n",
                  r.held_bytes, dat_bytes, lines);
    rotator_stop(&rt);
}

/* ---- 2. tools meeting a drop in the middle of its cut ---- */

static void tools_opening_a_generation_during_its_cut_say_a_rotation_is_deleting_it(void **state)
{
    th_scratch *t = *state;
    rotator rt;
    char gen1[2200], dat[2300], k5[2 * KS + 1], k310[2 * KS + 1];
    char *out = NULL;
    static const char *const verbs[] = { "visit", "info", "verify", "verify --live" };

    rotator_start(&rt, t->base, 64 << 10);
    fill_two(&rt, 300);
    gen_path(gen1, sizeof gen1, &rt, GEN1);
    snprintf(dat, sizeof dat, "%s/nudb.dat", gen1);
    long long before = th_file_size(dat);
    key_hex(5, k5);
    key_hex(310, k310);

    rotator_do(&rt, 's', 0, 0, 'T', "the drop, stopped after its first cut");
    long long cut = th_file_size(dat);
    if (cut < 0 || cut >= before) fail_msg("nudb.dat should be cut and still there: %lld of %lld bytes", cut, before);

    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        int rc = tide_out(&out, "%s '%s'", verbs[i], gen1);
        char what[128];
        snprintf(what, sizeof what, "tide %s of the generation being cut", verbs[i]);
        expect_no_false_verdict(out, what);
        if (rc != 1 || strstr(out, "a rotation is deleting it") == NULL)
            fail_msg("%s: expected exit 1 saying 'a rotation is deleting it', got %d:\n%s", what, rc, out);
        free(out);
    }
    int rc = tide_out(&out, "get '%s' %s", gen1, k5);
    if (rc != 1 || strstr(out, "a rotation is deleting it") == NULL)
        fail_msg("tide get from the generation being cut: expected exit 1 saying 'a rotation is "
                 "deleting it', got %d:\n%s", rc, out);
    free(out);

    /* The node's directory meanwhile: the generations it names answer. */
    rc = tide_out(&out, "get '%s' %s", rt.dir, k310);
    if (rc != 0) fail_msg("tide get of the node directory during the cut: exit %d:\n%s", rc, out);
    free(out);
    static const char *const node_verbs[] = { "info", "generations", "verify --live" };
    for (size_t i = 0; i < sizeof node_verbs / sizeof node_verbs[0]; i++) {
        rc = tide_out(&out, "%s '%s'", node_verbs[i], rt.dir);
        if (rc != 0) fail_msg("tide %s of the node directory during the cut: exit %d:\n%s", node_verbs[i], rc, out);
        free(out);
    }

    rotator_send(&rt, 'c', 0, 0);
    rot_ans a = rotator_answer(&rt, "the rest of the drop");
    if (a.op != 'R' || a.rc != 0) fail_msg("the drop: '%c' rc %d: %s", a.op, a.rc, a.err);
    if (a.r.delete_steps < 2) fail_msg("the drop should have cut in steps, took %u", a.r.delete_steps);
    expect_u64(a.r.held_bytes, 0, "held bytes: no reader held generation 1 when the drop began");
    rotator_stop(&rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_visit_walking_a_generation_keeps_it_whole_through_its_drop_held_not_cut,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(tools_opening_a_generation_during_its_cut_say_a_rotation_is_deleting_it,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return th_run_group("test_gens_readers", tests, NULL, NULL, NULL);
}
