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
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen/gens.h"
#include "gen/manifest.h"
#include "io/io.h"
#include "store/full.h"
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

/* All `len` bytes through read(2) or write(2): 0, or -1 (an end or an
 * error). */
static int xfer_all(int fd, void *buf, size_t len, int writing)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len) { return xfer_all(fd, buf, len, 0); }
static int write_all(int fd, const void *buf, size_t len) { return xfer_all(fd, (void *)buf, len, 1); }

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

static void rotator_main(const char *dir, uint64_t chunk, unsigned pause_ms) __attribute__((noreturn));
static void rotator_main(const char *dir, uint64_t chunk, unsigned pause_ms)
{
    tide_gens_opts o;
    tide_gens_rotate_report r;
    tide_gens *g = NULL;
    rot_cmd c;

    tide_gens_opts_init(&o);
    o.online_delete = 1;
    o.keep = 2;
    o.delete_chunk = chunk;
    o.back_off_ms = pause_ms;
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

/* A rotator over `base`/data (created), cutting `chunk` bytes a step with
 * `pause_ms` between two steps. */
static void rotator_start(rotator *rt, const char *base, uint64_t chunk, unsigned pause_ms)
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
        rotator_main(rt->dir, chunk, pause_ms);
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

    rotator_start(&rt, t->base, 256 << 10, 0);
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

    rotator_start(&rt, t->base, 64 << 10, 0);
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

/* ---- 3. tools held between reading the manifest and reading a generation ---- */

/* Does the system call `si` (at its entry) name `needle`: in its path
 * (the calls that take one), or in the bytes it writes? */
static int call_names(pid_t pid, const struct __ptrace_syscall_info *si, const char *needle)
{
    char buf[4097];
    unsigned long long nr = si->entry.nr;
    int arg = -1;
    size_t len = sizeof buf - 1;

    if (nr == SYS_openat || nr == SYS_newfstatat || nr == SYS_statx || nr == SYS_faccessat) arg = 1;
#ifdef SYS_open
    if (nr == SYS_open || nr == SYS_stat || nr == SYS_lstat || nr == SYS_access) arg = 0;
#endif
    if (nr == SYS_write) {
        arg = 1;
        if (si->entry.args[2] < len) len = (size_t)si->entry.args[2];
    }
    if (arg < 0) return 0;
    struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)si->entry.args[arg], len };
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return memmem(buf, (size_t)n, needle, strlen(needle)) != NULL;
}

/* Start bin/tide with argv[1..] (argv[0] is ignored), stdout into
 * out_path and stderr into err_path, under ptrace, and hold it at the
 * entry of its first system call that names `needle`: it has read what it
 * read before, and the call has not run. Fails the test when the tool ends
 * without making one. */
static pid_t tool_held_at(const char *needle, const char *out_path, const char *err_path,
                          const char *const *argv)
{
    char bin[600];
    int st;

    snprintf(bin, sizeof bin, "%s/tide", th_bin_dir());
    pid_t pid = th_fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(125);
        raise(SIGSTOP);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) fail_msg("the traced tool did not stop");
    if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
               (void *)(uintptr_t)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) != 0)
        fail_msg("ptrace(PTRACE_SETOPTIONS): %s", strerror(errno));
    int sig = 0;
    for (;;) {
        if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(uintptr_t)sig) != 0)
            fail_msg("ptrace(PTRACE_SYSCALL): %s", strerror(errno));
        sig = 0;
        if (waitpid(pid, &st, 0) != pid) fail_msg("waitpid of the traced tool: %s", strerror(errno));
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            th_waitpid(pid, NULL, WNOHANG);      /* forget it */
            char *err = th_read_text(err_path);
            fail_msg("the tool ended (status %#x) before any system call naming '%s'; stderr:\n%s",
                     st, needle, err ? err : "");
        }
        if (!WIFSTOPPED(st)) continue;
        if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
            /* An exec's event stop, or a signal to pass on. */
            if (!(WSTOPSIG(st) == SIGTRAP && (st >> 16) != 0) && WSTOPSIG(st) != SIGSTOP)
                sig = WSTOPSIG(st);
            continue;
        }
        struct __ptrace_syscall_info si;
        memset(&si, 0, sizeof si);
        if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si) <= 0)
            fail_msg("ptrace(PTRACE_GET_SYSCALL_INFO): %s", strerror(errno));
        if (si.op == PTRACE_SYSCALL_INFO_ENTRY && call_names(pid, &si, needle)) return pid;
    }
}

/* Let a held tool go on to its end: its exit status. */
static int tool_finish(pid_t pid)
{
    int st = 0;
    if (ptrace(PTRACE_DETACH, pid, NULL, NULL) != 0) fail_msg("ptrace(PTRACE_DETACH): %s", strerror(errno));
    if (th_waitpid(pid, &st, 0) != pid) fail_msg("waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One tool held while the rotator copies item 5 (only in generation 1)
 * forward into generation 2 and rotates, dropping generation 1; then let
 * go. Its exit status, with stdout and stderr in *out and *err. */
static int held_through_a_drop(const th_scratch *t, const char *needle, const char *const *argv,
                               char **out, char **err)
{
    rotator rt;
    char out_path[2200], err_path[2200];

    snprintf(out_path, sizeof out_path, "%s/tool.out", t->base);
    snprintf(err_path, sizeof err_path, "%s/tool.err", t->base);
    rotator_start(&rt, t->base, 64 << 10, 0);
    fill_two(&rt, 300);
    pid_t pid = tool_held_at(needle, out_path, err_path, argv);
    rotator_do(&rt, 'f', 5, 0, 'k', "the node's read of item 5 (a copy forward)");
    tide_gens_rotate_report r = rotator_do(&rt, 'r', 0, 0, 'R', "the drop under the held tool").r;
    expect_u64(r.dropped, 1, "the rotation drops generation 1");
    expect_i64(th_exists(rt.dir), 1, "the node directory");
    int rc = tool_finish(pid);
    rotator_stop(&rt);
    *out = th_slurp(out_path);
    *err = th_slurp(err_path);
    return rc;
}

#define TOOL_ARGV(...) ((const char *const[]){ "tide", __VA_ARGS__, NULL })

static void get_finds_an_object_copied_forward_after_a_drop_under_it(void **state)
{
    th_scratch *t = *state;
    char k5[2 * KS + 1], *out, *err;
    uint8_t want[VMAX];
    size_t len = th_len(5, VMIN, VMAX);

    key_hex(5, k5);
    th_value(5, len, want);
    /* get looks in generation 2 first (item 5 is not there yet), and is
     * held as it turns to generation 1. */
    int rc = held_through_a_drop(t, GEN1, TOOL_ARGV("get", "-v", t->dir, k5), &out, &err);
    expect_no_false_verdict(err, "tide get of the node directory");
    if (rc != 0) fail_msg("tide get: expected exit 0 (item 5 is in generation 2 now), got %d:\n%s", rc, err);
    if (strlen(out) != len || memcmp(out, want, len) != 0)
        fail_msg("tide get: %zu bytes on stdout, expected item 5's %zu", strlen(out), len);
    expect_contains(err, "found in generation 2", "tide get -v names the generation that answered");
    free(out);
    free(err);
}

/* What a node directory's listing tool answered, held across a drop:
 * empty when right, else why not (each tool is judged, then all fail). */
static void judge_listing(const char *verb, int rc, const char *out, const char *err, char *why, size_t cap)
{
    static const char *const wrong[] = { "corrupt", "short read", "not a NuDB", "shorter than",
                                         "NOT SOUND", "missing", "no such directory", "PROBLEM" };
    size_t used = strlen(why);

    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        if (strstr(out, wrong[i]) || strstr(err, wrong[i]) || rc != 0) {
            snprintf(why + used, cap - used, "tide %s: exit %d: %.240s\n", verb, rc,
                     *err ? err : out + (strlen(out) > 240 ? strlen(out) - 240 : 0));
            return;
        }
    if (strstr(out, "gen-000000000003") == NULL || strstr(out, "gen-000000000001  ") ||
        strstr(out, "\"gen-000000000001\""))
        snprintf(why + used, cap - used, "tide %s: not the generations left (3 and 2):\n%s\n", verb, out);
}

static void a_node_directorys_listing_held_across_a_drop_lists_the_generations_left(void **state)
{
    th_scratch *t = *state;
    static const char *const verbs[] = { "generations", "info", "verify --live" };
    char *out, *err, why[32768] = "";

    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        int rc = i == 2 ? held_through_a_drop(t, GEN1, TOOL_ARGV("verify", "--live", t->dir), &out, &err)
                        : held_through_a_drop(t, GEN1, TOOL_ARGV(verbs[i], t->dir), &out, &err);
        judge_listing(verbs[i], rc, out, err, why, sizeof why);
        free(out);
        free(err);
        th_rmrf(t->dir);
    }
    if (why[0]) fail_msg("held while a rotation dropped generation 1, after reading the manifest:\n%s", why);
}

static void verify_live_shows_a_generation_dropped_during_its_check_as_dropped(void **state)
{
    th_scratch *t = *state;
    char *out, *err;

    /* Held at its first progress line of generation 2: the listing is
     * done, generation 1 not checked yet. */
    int rc = held_through_a_drop(t, "gen-000000000002: step",
                                 TOOL_ARGV("verify", "--live", "--progress", t->dir), &out, &err);
    expect_no_false_verdict(out, "tide verify --live");
    if (rc != 0) fail_msg("tide verify --live: expected exit 0, got %d:\n%s%s", rc, out, err);
    expect_contains(out, "gen-000000000001  dropped: ", "generation 1's line");
    expect_contains(out, "verdict           sound", "the verdict");
    print_message("    %.*s\n", (int)strcspn(strstr(out, "gen-000000000001  dropped"), "\n"),
                  strstr(out, "gen-000000000001  dropped"));
    free(out);
    free(err);
}

/* ---- 4. every tool in a loop beside a run of rotations ---- */

#define LOOP_ROUNDS_MIN 4       /* tool rounds the rotations must overlap */
#define LOOP_ROTATIONS_MIN 8
#define LOOP_ROTATIONS_MAX 150

/* One tool run of the loop: its command (sh), and whether what it said is
 * a right answer. A failure is appended to `log`. */
static void loop_tool(const char *cmd, int ok_exit1, const char *log, int *failed)
{
    char *out = NULL;
    static const char *const fine[] = { "a rotation is deleting it", "a rotation has deleted it",
                                        "no such directory", "no store here" };
    int rc = th_run(cmd, &out), ok = rc == 0;

    for (size_t i = 0; !ok && ok_exit1 && rc == 1 && i < sizeof fine / sizeof fine[0]; i++)
        ok = strstr(out, fine[i]) != NULL;
    if (!ok || strstr(out, "NOT SOUND") || strstr(out, "corrupt")) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "$ %s\nexit %d\n%s\n", cmd, rc, out);
            fclose(f);
        }
        (*failed)++;
    }
    free(out);
}

/* The tools' loop (a child): every tool on the node directory, and a visit
 * of its oldest generation, until `stop` is readable; a byte to `rounds`
 * after each round. Exits with the number of false verdicts (at most 100). */
static void tools_loop(const th_scratch *t, const char *dir, int stop, int rounds) __attribute__((noreturn));
static void tools_loop(const th_scratch *t, const char *dir, int stop, int rounds)
{
    const char *bin = th_bin_dir();
    char cmd[20000], log[2200], k5[2 * KS + 1];
    struct pollfd p = { .fd = stop, .events = POLLIN };
    int failed = 0;

    key_hex(5, k5);
    snprintf(log, sizeof log, "%s/loop.log", t->base);
    while (poll(&p, 1, 0) == 0 && failed < 100) {
        tide_gen_manifest m;
        snprintf(cmd, sizeof cmd, "'%s/tide' get '%s' %s >'%s/get.out' 2>'%s/get.err'; rc=$?; cmp -s "
                 "'%s/get.out' '%s/k5.bin' || { echo \"get: exit $rc, not item 5's value\"; cat "
                 "'%s/get.err'; exit 1; }", bin, dir, k5, t->base, t->base, t->base, t->base, t->base);
        loop_tool(cmd, 0, log, &failed);
        static const char *const verbs[] = { "verify --live", "generations", "info" };
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
            snprintf(cmd, sizeof cmd, "'%s/tide' %s '%s' 2>&1", bin, verbs[i], dir);
            loop_tool(cmd, 0, log, &failed);
        }
        if (tide_gen_manifest_read(tide_io_posix(), dir, &m) == 0) {
            snprintf(cmd, sizeof cmd, "'%s/tide' visit '%s/%s' 2>&1", bin, dir, m.gens[m.count - 1].dir);
            loop_tool(cmd, 1, log, &failed);
        }
        if (write(rounds, "r", 1) != 1) break;
    }
    _exit(failed);
}

static void every_tool_gives_no_false_verdict_beside_a_run_of_rotations(void **state)
{
    th_scratch *t = *state;
    rotator rt;
    char path[2200];
    uint8_t v5[VMAX];
    int stop[2], rounds[2], st = 0;
    unsigned done = 0, rotations = 0;

    th_value(5, th_len(5, VMIN, VMAX), v5);
    snprintf(path, sizeof path, "%s/k5.bin", t->base);
    if (th_write_file(path, v5, th_len(5, VMIN, VMAX)) != 0) fail_msg("cannot write %s", path);
    /* Drops of several steps with pauses between: the tools meet many a
     * drop in the middle (where they meet it is not asserted). */
    rotator_start(&rt, t->base, 16 << 10, 10);
    fill_two(&rt, 300);
    if (pipe(stop) != 0 || pipe(rounds) != 0) fail_msg("pipe: %s", strerror(errno));
    fcntl(rounds[0], F_SETFL, O_NONBLOCK);
    pid_t pid = th_fork();
    if (pid == 0) {
        close(stop[1]);
        close(rounds[0]);
        tools_loop(t, rt.dir, stop[0], rounds[1]);
    }
    close(stop[0]);
    close(rounds[1]);
    /* Item 5 is read by the node once a span (copied forward), so the
     * loop's get must always find it; each span gets 100 more items, so
     * each drop cuts in steps. */
    for (uint64_t next = 400; rotations < LOOP_ROTATIONS_MAX; next += 100) {
        char b[64];
        ssize_t n;
        rotator_do(&rt, 'p', next, next + 100, 'k', "a span's items");
        rotator_do(&rt, 'f', 5, 0, 'k', "the node's read of item 5");
        rotator_do(&rt, 'r', 0, 0, 'R', "a rotation beside the tools");
        rotations++;
        while ((n = read(rounds[0], b, sizeof b)) > 0) done += (unsigned)n;
        if (done >= LOOP_ROUNDS_MIN && rotations >= LOOP_ROTATIONS_MIN) break;
    }
    close(stop[1]);
    th_waitpid(pid, &st, 0);
    close(rounds[0]);
    rotator_stop(&rt);
    snprintf(path, sizeof path, "%s/loop.log", t->base);
    char *log = th_read_text(path);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%d false verdicts from the tools beside %u rotations (status %#x); the first:\n%.6000s",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, rotations, st, log ? log : "");
    free(log);
    if (done < LOOP_ROUNDS_MIN)
        fail_msg("the tools made %u rounds beside %u rotations, fewer than %d", done, rotations,
                 LOOP_ROUNDS_MIN);
    print_message("    %u rotations beside %u rounds of the tools (get, verify --live, generations, "
                  "info, visit of the oldest): no false verdict\n", rotations, done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_visit_walking_a_generation_keeps_it_whole_through_its_drop_held_not_cut,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(tools_opening_a_generation_during_its_cut_say_a_rotation_is_deleting_it,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(get_finds_an_object_copied_forward_after_a_drop_under_it,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(a_node_directorys_listing_held_across_a_drop_lists_the_generations_left,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(verify_live_shows_a_generation_dropped_during_its_check_as_dropped,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(every_tool_gives_no_false_verdict_beside_a_run_of_rotations,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return th_run_group("test_gens_readers", tests, NULL, NULL, NULL);
}
