/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_harness.c: nothing a test starts outlives it, whatever its outcome.
 *
 * The three layers of tests/helpers.c are each made to fail on purpose:
 *
 *   1. A parent that dies abruptly (SIGKILL, abort, a segfault) takes its
 *      th_fork child with it, and th_run's command with its whole process
 *      group (the shell's children too).
 *   2. A cmocka test that fails half-way (fail_msg longjmps past its own
 *      cleanup) leaves nothing running when th_teardown_children is its
 *      teardown; th_children_stop spares kept children until told `all`.
 *      th_teardown does the same for the scratch directories a test made
 *      with th_scratch_make, sparing the kept ones.
 *   3. tests/run-tests kills, names and counts as failed a process a test
 *      binary left running after it exited.
 *
 * And run-tests counts a test skipped with th_skip, and lists it with its
 * reason under its binary's summary line; it says how each binary went in
 * one line ("[N/M] NAME ... passed in S s"), keeps the binary's output in
 * its log (TEST_LOGDIR/NAME.log) and shows it only when the binary fails
 * (the tail, with the log's name) or with TEST_VERBOSE=1 (all of it, as it
 * comes); a binary past TEST_TIMEOUT is named with the limit as soon as it
 * is killed, with the tail of its output. After its summary it names
 * again each binary that failed, with the lines of its log that say what
 * (the end of the output is all a CI page may show).
 *
 * To see what happened to a grandchild whose parent died, this process
 * makes itself a child subreaper (PR_SET_CHILD_SUBREAPER) for the length of
 * a test: the orphans are re-parented to it, so it can reap them and read
 * how they died (killed by SIGKILL, the parent-death signal) instead of
 * guessing from /proc. Each wait is bounded (30 s, far beyond the
 * milliseconds the kernel takes) and a child still running at the bound
 * fails the test and is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"

#define BOUND_MS 30000

/* The orphans re-parented to us, and how each ended. */
typedef struct reaped { pid_t pid[16]; int status[16]; size_t n; } reaped;

static void subreaper(int on)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0) != 0)
        fail_msg("prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
}

/* Reap every child of ours until `want` has been reaped or BOUND_MS pass;
 * 1 when it was. What was reaped goes to r. */
static int reap_until(pid_t want, reaped *r)
{
    double end = th_now_ms() + BOUND_MS;

    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            if (r->n < 16) { r->pid[r->n] = p; r->status[r->n] = st; r->n++; }
            if (p == want) return 1;
            continue;
        }
        if (p < 0 && errno == ECHILD) return 0;
        if (th_now_ms() > end) return 0;
        poll(NULL, 0, 10);
    }
}

static int status_of(const reaped *r, pid_t pid)
{
    for (size_t i = 0; i < r->n; i++) if (r->pid[i] == pid) return r->status[i];
    return -1;
}

static void describe(int st, char *out, size_t cap)
{
    if (st == -1) snprintf(out, cap, "not reaped");
    else if (WIFSIGNALED(st)) snprintf(out, cap, "killed by signal %d", WTERMSIG(st));
    else if (WIFEXITED(st)) snprintf(out, cap, "exited with status %d", WEXITSTATUS(st));
    else snprintf(out, cap, "status 0x%x", st);
}

/* Read one pid the child wrote to a pipe. */
static pid_t read_pid(int fd)
{
    pid_t pid = 0;
    ssize_t n;
    while ((n = read(fd, &pid, sizeof pid)) < 0 && errno == EINTR) {}
    return n == (ssize_t)sizeof pid ? pid : -1;
}

/* Die abruptly by `sig`, with its default action whatever cmocka installed. */
static void die_by(int sig)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    if (sig == SIGABRT) abort();
    raise(sig);
    _exit(99);
}

/* ---- 1. a parent that dies abruptly ---------------------------------------- */

static void one_abrupt_death(int sig)
{
    int fds[2];
    pid_t mid, child;
    reaped r = { .n = 0 };
    char got[64];

    subreaper(1);
    assert_int_equal(pipe(fds), 0);
    mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        /* The parent that dies: it starts a long sleep as a test starts
         * tided, says which, and dies without any cleanup. */
        int sync[2];
        char c;
        close(fds[0]);
        /* The child's exec closes the O_CLOEXEC pipe: once read() sees
         * EOF the child is past th_fork's setup, so the death below comes
         * after its parent-death signal was armed (before, th_fork's child
         * exits 127 by itself, which is not what this test checks). */
        if (pipe2(sync, O_CLOEXEC) != 0) _exit(2);
        child = th_fork();
        if (child == 0) {
            execlp("sleep", "sleep", "600", (char *)NULL);
            _exit(127);
        }
        close(sync[1]);
        while (read(sync[0], &c, 1) < 0 && errno == EINTR) {}
        if (child < 0 || write(fds[1], &child, sizeof child) != (ssize_t)sizeof child) _exit(3);
        die_by(sig);
    }
    close(fds[1]);
    child = read_pid(fds[0]);
    close(fds[0]);
    if (child <= 0) fail_msg("the dying parent did not start its child");
    if (!reap_until(child, &r)) {
        kill(child, SIGKILL);
        reap_until(child, &r);
        subreaper(0);
        describe(status_of(&r, mid), got, sizeof got);
        fail_msg("signal %d to the parent (%s): its th_fork child %d (sleep 600) should die with it; "
                 "it was still running %d ms later", sig, got, (int)child, BOUND_MS);
    }
    subreaper(0);
    /* How the parent ended is the sanitizer's business under ASan (it may
     * report a segfault and exit 1); that it ended is what matters. */
    if (status_of(&r, mid) == -1 && !reap_until(mid, &r))
        fail_msg("the parent that was to die by signal %d is still running", sig);
    int st = status_of(&r, child);
    describe(st, got, sizeof got);
    if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
        fail_msg("signal %d to the parent: its child should be killed by SIGKILL (the parent-death "
                 "signal); it %s", sig, got);
}

static void a_th_fork_child_dies_when_its_parent_is_killed_aborts_or_crashes(void **state)
{
    (void)state;
    one_abrupt_death(SIGKILL);
    one_abrupt_death(SIGABRT);
    one_abrupt_death(SIGSEGV);
}

static void a_th_run_command_and_what_it_started_die_when_the_caller_is_killed(void **state)
{
    char dir[PATH_MAX], pidfile[PATH_MAX + 16], got[64];
    pid_t mid, sleeper = 0;
    reaped r = { .n = 0 };
    char *text;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    th_path(pidfile, sizeof pidfile, dir, "sleeper.pid");
    subreaper(1);
    mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        /* The command outlives the shell's parent unless its whole group
         * is killed: a background sleep, its pid written down, then the
         * caller killed from inside the command. */
        char cmd[4 * PATH_MAX + 128], *out;
        snprintf(cmd, sizeof cmd, "sleep 600 & echo $! >'%s.tmp'; mv '%s.tmp' '%s'; kill -KILL %d; wait",
                 pidfile, pidfile, pidfile, (int)getpid());
        th_run(cmd, &out);
        _exit(3);   /* th_run returned: the kill did not come */
    }
    if (!reap_until(mid, &r)) { kill(mid, SIGKILL); reap_until(mid, &r); }
    text = th_read_text(pidfile);
    if (text != NULL) sleeper = (pid_t)atoi(text);
    free(text);
    if (sleeper <= 0) {
        subreaper(0);
        describe(status_of(&r, mid), got, sizeof got);
        fail_msg("the command should have written its sleep's pid to %s; the caller %s", pidfile, got);
    }
    if (status_of(&r, sleeper) == -1 && !reap_until(sleeper, &r)) {
        kill(sleeper, SIGKILL);
        reap_until(sleeper, &r);
        subreaper(0);
        fail_msg("th_run's command started 'sleep 600' (pid %d); it should die when th_run's caller is "
                 "killed; it was still running %d ms later", (int)sleeper, BOUND_MS);
    }
    /* The guard and the shell are orphans of ours too: reap them. */
    reap_until(-2, &r);
    subreaper(0);
    describe(status_of(&r, sleeper), got, sizeof got);
    if (!(WIFSIGNALED(status_of(&r, sleeper)) && WTERMSIG(status_of(&r, sleeper)) == SIGKILL))
        fail_msg("the command's background sleep should be killed by SIGKILL; it %s", got);
}

/* ---- 2. a test that fails half-way ------------------------------------------- */

static pid_t sleeper_start(void)
{
    pid_t pid = th_fork();
    if (pid == 0) {
        execlp("sh", "sh", "-c", "sleep 600; true", (char *)NULL);
        _exit(127);
    }
    assert_true(pid > 0);
    return pid;
}

static int running(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
}

static void th_children_stop_kills_and_reaps_all_but_the_kept(void **state)
{
    pid_t left, kept, done;
    int st;
    (void)state;

    left = sleeper_start();
    kept = sleeper_start();
    th_child_keep(kept);
    done = th_fork();
    if (done == 0) _exit(0);
    assert_true(done > 0);
    /* Reaped behind the registry's back: it must be forgotten, not signalled. */
    if (waitpid(done, &st, 0) != done) fail_msg("waitpid of the child that exits: %s", strerror(errno));

    int n = th_children_stop(0);
    if (n != 1) fail_msg("th_children_stop(0) with one running, one kept, one reaped: expected 1, got %d", n);
    if (kill(left, 0) == 0 || errno != ESRCH)
        fail_msg("the unkept child %d should be killed and reaped (gone), it is not", (int)left);
    if (!running(kept)) fail_msg("the kept child %d should still run", (int)kept);
    n = th_children_stop(1);
    if (n != 1) fail_msg("th_children_stop(1): expected the kept child only, got %d", n);
    if (kill(kept, 0) == 0 || errno != ESRCH)
        fail_msg("th_children_stop(1) should stop the kept child %d too", (int)kept);
    expect_u64(th_children_stop(1), 0, "a third stop finds nothing");
}

static int inner_fd = -1;

static void inner_test_fails_half_way(void **state)
{
    pid_t pid;
    (void)state;
    pid = sleeper_start();
    if (write(inner_fd, &pid, sizeof pid) != (ssize_t)sizeof pid) _exit(4);
    fail_msg("failing on purpose, with sleep %d still running", (int)pid);
    kill(pid, SIGKILL);   /* the cleanup fail_msg skips */
}

/* In a child of ours: a whole cmocka run of `test` with `teardown`, its
 * report thrown away (its FAILED line must not count in this binary's
 * totals); the test writes to the pipe `fds`. Returns how many failed. */
static int inner_run(const char *name, CMUnitTestFunction test, CMFixtureFunction teardown, int fds[2])
{
    const struct CMUnitTest inner[] = { { .name = name, .test_func = test, .teardown_func = teardown } };
    int devnull = open("/dev/null", O_WRONLY);

    close(fds[0]);
    inner_fd = fds[1];
    dup2(devnull, 1);
    dup2(devnull, 2);
    return cmocka_run_group_tests_name("inner", inner, NULL, NULL);
}

static void a_failed_test_with_th_teardown_children_leaves_no_process(void **state)
{
    int fds[2], st;
    pid_t mid, child;
    reaped r = { .n = 0 };
    (void)state;

    subreaper(1);
    assert_int_equal(pipe(fds), 0);
    mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        int failed = inner_run("inner_test_fails_half_way", inner_test_fails_half_way, th_teardown_children, fds);
        child = 0;
        /* The pid the inner test wrote is in the pipe for our parent; here
         * only the outcome counts: 1 failed, as meant. Linger until our
         * parent has looked, so the parent-death signal cannot be what
         * stopped the sleep. */
        if (failed != 1) _exit(5);
        pause();
        _exit(0);
    }
    close(fds[1]);
    child = read_pid(fds[0]);
    close(fds[0]);
    if (child <= 0) { kill(mid, SIGKILL); subreaper(0); fail_msg("the inner test did not start its child"); }
    /* The inner run is still alive (pausing): the sleep must be gone
     * already, killed by the teardown, not by a parent's death. */
    double end = th_now_ms() + BOUND_MS;
    while (kill(child, 0) == 0 && th_now_ms() < end) poll(NULL, 0, 10);
    int gone = kill(child, 0) != 0 && errno == ESRCH;
    int inner_alive = waitpid(mid, &st, WNOHANG) == 0;
    kill(mid, SIGKILL);
    reap_until(mid, &r);
    subreaper(0);
    if (!inner_alive) {
        char got[64];
        describe(st, got, sizeof got);
        fail_msg("the inner cmocka run should report 1 failed and wait; it %s", got);
    }
    if (!gone) {
        kill(child, SIGKILL);
        fail_msg("the failed test's child %d should have been stopped by its teardown "
                 "(th_teardown_children); it was still running", (int)child);
    }
}

static void inner_test_makes_directories_and_fails(void **state)
{
    char made[PATH_MAX], kept[PATH_MAX];
    (void)state;
    if (th_scratch_make(made, sizeof made) != 0 || th_scratch_make(kept, sizeof kept) != 0) _exit(6);
    th_scratch_keep(kept);
    if (write(inner_fd, made, sizeof made) != (ssize_t)sizeof made) _exit(4);
    if (write(inner_fd, kept, sizeof kept) != (ssize_t)sizeof kept) _exit(4);
    fail_msg("failing on purpose, with %s and %s still there", made, kept);
    th_scratch_remove(made);   /* the cleanup fail_msg skips */
}

static void a_failed_test_with_th_teardown_leaves_no_scratch_directory_but_the_kept(void **state)
{
    char made[PATH_MAX], kept[PATH_MAX];
    int fds[2], st;
    pid_t mid;
    (void)state;

    assert_int_equal(pipe(fds), 0);
    mid = th_fork();
    assert_true(mid >= 0);
    if (mid == 0)
        _exit(inner_run("inner_test_makes_directories_and_fails", inner_test_makes_directories_and_fails,
                        th_teardown, fds) == 1 ? 0 : 5);
    close(fds[1]);
    made[0] = kept[0] = '\0';
    if (read(fds[0], made, sizeof made) != (ssize_t)sizeof made ||
        read(fds[0], kept, sizeof kept) != (ssize_t)sizeof kept)
        made[0] = kept[0] = '\0';
    close(fds[0]);
    while (th_waitpid(mid, &st, 0) < 0 && errno == EINTR) {}
    if (kept[0] != '\0' && th_exists(kept)) th_rmrf(kept);
    else if (kept[0] != '\0') fail_msg("th_teardown removed %s, which the test kept", kept);
    if (made[0] == '\0') fail_msg("the inner test did not make its directories");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the inner cmocka run should report 1 failed; its status was 0x%x", st);
    if (th_exists(made)) {
        th_rmrf(made);
        fail_msg("the failed test's scratch directory %s should have been removed by its teardown "
                 "(th_teardown); it was still there", made);
    }
}

/* ---- 3. run-tests' session sweep ---------------------------------------------- */

/* tests/run-tests on the binaries in `dir` (those named in `names`, or all
 * of them), with no filter, log directory or verbosity inherited from the
 * caller, no script tests, and `env` (VAR=VALUE words) on top: its exit
 * status, its merged output in *out (the caller's to free). */
static int run_tests_in(const char *dir, const char *env, const char *names, char **out)
{
    char cmd[2 * PATH_MAX + 512];

    snprintf(cmd, sizeof cmd, "env -u TEST_FILTER -u TEST_LOGDIR -u TEST_VERBOSE %s TEST_BINDIR='%s' TEST_SMOKE=0 "
             "bash tests/run-tests %s 2>&1", env, dir, names);
    return th_run(cmd, out);
}

static void run_tests_kills_and_fails_a_test_that_leaves_a_process_running(void **state)
{
    char dir[PATH_MAX], script[PATH_MAX + 16], pidfile[PATH_MAX + 16], body[2 * PATH_MAX + 256];
    char *out = NULL, *text;
    pid_t sleeper = 0;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    th_path(script, sizeof script, dir, "test_leaky");
    th_path(pidfile, sizeof pidfile, dir, "sleeper.pid");
    /* A "test binary" that passes and leaves a sleep running. */
    snprintf(body, sizeof body,
             "#!/bin/sh\nsleep 600 </dev/null >/dev/null 2>&1 &\necho $! >'%s'\n"
             "echo '[  PASSED  ] 1 test(s).'\nexit 0\n", pidfile);
    assert_int_equal(th_write_file(script, body, strlen(body)), 0);
    assert_int_equal(chmod(script, 0755), 0);
    rc = run_tests_in(dir, "TEST_LEAK_GRACE=1", "test_leaky", &out);
    text = th_read_text(pidfile);
    if (text != NULL) sleeper = (pid_t)atoi(text);
    free(text);
    if (sleeper > 0) {
        /* Killed means gone, or a zombie waiting for its reaper (init);
         * a SIGKILL takes effect when the process next runs, so wait. */
        double end = th_now_ms() + BOUND_MS;
        int dead = 0;
        while (!dead) {
            char stat_path[64], *st;
            snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", (int)sleeper);
            st = th_read_text(stat_path);
            dead = st == NULL || strstr(st, ") Z ") != NULL || strstr(st, ") X ") != NULL;
            free(st);
            if (dead || th_now_ms() > end) break;
            poll(NULL, 0, 10);
        }
        if (!dead) {
            kill(sleeper, SIGKILL);
            fail_msg("run-tests should kill the sleep (pid %d) the test left; it was still running. "
                     "Its output:\n%s", (int)sleeper, out);
        }
    }
    if (sleeper <= 0) fail_msg("the leaky test should have written its sleep's pid; run-tests said:\n%s", out);
    if (rc != 1) fail_msg("run-tests should exit 1 for a test that left a process; got %d:\n%s", rc, out);
    expect_contains(out, "test_leaky: 1 passed, 1 failed (left 1 process(es) running",
                    "the summary line counts the leak as a failure");
    expect_contains(out, "sleep 600", "the leftover process is named");
    expect_contains(out, "1 passed, 1 failed", "the totals");
    free(out);
}

/* ---- skips with a reason ------------------------------------------------- */

/* The inner run of the test below: this binary again, under run-tests. */
static void inner_test_passes(void **state)
{
    (void)state;
}

static void inner_test_skips_with_a_reason(void **state)
{
    (void)state;
    th_skip("no frobnicator on this machine (install frob)");
    fail_msg("th_skip returned");
}

static int inner_skip_main(void)
{
    const struct CMUnitTest inner[] = {
        cmocka_unit_test(inner_test_passes),
        cmocka_unit_test(inner_test_skips_with_a_reason),
    };
    return cmocka_run_group_tests_name("inner", inner, NULL, NULL);
}

static void run_tests_counts_skipped_tests_and_lists_each_with_its_reason(void **state)
{
    char dir[PATH_MAX], bin[PATH_MAX + 16], self[PATH_MAX], *out = NULL;
    char logfile[PATH_MAX + 32], *log;
    ssize_t n;
    int rc;
    (void)state;

    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) fail_msg("readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);
    th_path(bin, sizeof bin, dir, "test_skippy");
    if (symlink(self, bin) != 0) fail_msg("symlink %s -> %s: %s", bin, self, strerror(errno));
    rc = run_tests_in(dir, "TIDE_HARNESS_INNER=skip", "test_skippy", &out);
    if (rc != 0) fail_msg("run-tests should exit 0 for a binary with one pass and one skip; got %d:\n%s", rc, out);
    th_path(logfile, sizeof logfile, dir, "logs/test_skippy.log");
    log = th_read_text(logfile);
    if (log == NULL) fail_msg("run-tests should keep the binary's output in %s; it is not there:\n%s", logfile, out);
    expect_contains(log, "SKIP: inner_test_skips_with_a_reason: no frobnicator on this machine (install frob)\n"
                    "[  SKIPPED ] inner_test_skips_with_a_reason", "th_skip's line before cmocka's, in the log");
    expect_contains(out, "[1/1] test_skippy ... passed in ", "the binary's line");
    expect_contains(out, "  test_skippy: 1 passed, 0 failed, 1 skipped\n"
                    "      SKIP: inner_test_skips_with_a_reason: no frobnicator",
                    "the binary's summary line counts the skip and lists it with its reason");
    expect_contains(out, "\n1 passed, 0 failed, 1 skipped\n", "the totals");
    free(log);
    free(out);
}

/* ---- what run-tests shows of a binary's output ---------------------------- */

/* make_fake_test: a "test binary" NAME in DIR, a shell script of BODY. */
static void make_fake_test(const char *dir, const char *name, const char *body)
{
    char path[PATH_MAX + 64];

    th_path(path, sizeof path, dir, name);
    assert_int_equal(th_write_file(path, body, strlen(body)), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static void run_tests_shows_a_passing_binary_as_one_line_and_its_output_with_verbose(void **state)
{
    char dir[PATH_MAX], logfile[PATH_MAX + 32], *out = NULL, *log;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    make_fake_test(dir, "test_chatty", "#!/bin/sh\necho 'a line the test printed'\n"
                   "echo '[  PASSED  ] 2 test(s).'\nexit 0\n");
    make_fake_test(dir, "test_quiet", "#!/bin/sh\necho '[  PASSED  ] 1 test(s).'\nexit 0\n");
    rc = run_tests_in(dir, "", "", &out);
    if (rc != 0) fail_msg("run-tests should exit 0 for two passing binaries; got %d:\n%s", rc, out);
    expect_contains(out, "[1/2] test_chatty ... passed in ", "the first binary's line, with its place");
    expect_contains(out, "[2/2] test_quiet ... passed in ", "the second binary's line");
    if (strstr(out, "a line the test printed") != NULL)
        fail_msg("run-tests should not show a passing binary's output; it did:\n%s", out);
    expect_contains(out, "\n3 passed, 0 failed, 0 skipped\n", "the totals");
    if (strstr(out, "what failed") != NULL) fail_msg("run-tests should recap nothing when all passed:\n%s", out);
    th_path(logfile, sizeof logfile, dir, "logs/test_chatty.log");
    log = th_read_text(logfile);
    expect_contains(log, "a line the test printed", "the binary's output, kept in its log");
    free(log);
    free(out);
    out = NULL;

    rc = run_tests_in(dir, "TEST_VERBOSE=1", "", &out);
    if (rc != 0) fail_msg("run-tests with TEST_VERBOSE=1 should exit 0 for two passing binaries; got %d:\n%s", rc, out);
    expect_contains(out, "==> test_chatty\na line the test printed\n", "with TEST_VERBOSE=1, the output as it comes");
    expect_contains(out, "[1/2] test_chatty ... passed in ", "with TEST_VERBOSE=1, the binary's line after it");
    expect_contains(out, "\n3 passed, 0 failed, 0 skipped\n", "the totals, the same with TEST_VERBOSE=1");
    free(out);
}

static void run_tests_shows_the_tail_of_a_failed_binarys_output_and_where_the_rest_is(void **state)
{
    char dir[PATH_MAX], *out = NULL;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    make_fake_test(dir, "test_failing",
                   "#!/bin/sh\ni=1\nwhile [ $i -le 100 ]; do echo \"noise $i.\"; i=$((i + 1)); done\n"
                   "echo '[  PASSED  ] 3 test(s).'\necho '[  FAILED  ] 1 test(s), listed below:'\nexit 1\n");
    rc = run_tests_in(dir, "TEST_TAIL=10", "", &out);
    if (rc != 1) fail_msg("run-tests should exit 1 for a failed binary; got %d:\n%s", rc, out);
    expect_contains(out, "[1/1] test_failing ... FAILED in ", "the binary's line");
    expect_contains(out, "(1 of 4 tests failed)", "how many of its tests failed");
    expect_contains(out, "the last 10 of its 102 lines of output (all in ", "how much is shown, and where the rest is");
    expect_contains(out, "/logs/test_failing.log", "the log's name");
    expect_contains(out, "    noise 100.\n    [  PASSED  ] 3 test(s).\n    [  FAILED  ] 1 test(s)",
                    "the tail of its output, under its line");
    if (strstr(out, "noise 92.") != NULL)
        fail_msg("run-tests should show only the last 10 lines (TEST_TAIL=10); it showed more:\n%s", out);
    expect_contains(out, "  test_failing: 3 passed, 1 failed\n", "the summary line");
    expect_contains(out, "\n3 passed, 1 failed, 0 skipped\n", "the totals");
    free(out);
}

/* A CI page shows the end of the output only: what failed is said again
 * there, after the summary, with the lines of each log that say what. */
static void run_tests_ends_with_what_failed_and_why(void **state)
{
    char dir[PATH_MAX], *out = NULL, *recap;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    make_fake_test(dir, "test_a_fine", "#!/bin/sh\necho '[  PASSED  ] 2 test(s).'\nexit 0\n");
    make_fake_test(dir, "test_b_wrong",
                   "#!/bin/sh\ni=1\nwhile [ $i -le 80 ]; do echo \"noise $i.\"; i=$((i + 1)); done\n"
                   "echo '[ RUN      ] a_case'\necho 'ERROR: expected 1, got 2'\n"
                   "echo '[  ERROR   ] --- [   LINE   ] --- tests/x.c:9: error: Failure!'\n"
                   "echo '[  FAILED  ] a_case'\necho 'more noise.'\necho '[  PASSED  ] 3 test(s).'\n"
                   "echo '[  FAILED  ] 1 test(s), listed below:'\necho '[  FAILED  ] a_case'\nexit 1\n");
    make_fake_test(dir, "test_c_crash", "#!/bin/sh\necho 'the last words'\nkill -SEGV $$\n");
    rc = run_tests_in(dir, "TEST_TAIL=5", "", &out);
    if (rc != 1) fail_msg("run-tests should exit 1 for failed binaries; got %d:\n%s", rc, out);
    recap = strstr(out, "\n==> what failed\n");
    if (recap == NULL || recap < strstr(out, "==> summary"))
        fail_msg("run-tests should recap what failed after its summary; it said:\n%s", out);
    expect_contains(recap, "  test_b_wrong, in ", "the failed binary named, with its log");
    expect_contains(recap, "/logs/test_b_wrong.log:\n    ERROR: expected 1, got 2\n"
                    "    [  ERROR   ] --- [   LINE   ] --- tests/x.c:9: error: Failure!\n"
                    "    [  FAILED  ] a_case\n  test_c_crash",
                    "the lines that say what failed, each once, and nothing else of its log");
    expect_contains(recap, "  test_c_crash (killed by signal 11), in ", "how the crash ended");
    expect_contains(recap, "/logs/test_c_crash.log:\n    the last words\n", "a log with no such line: its end");
    if (strstr(recap, "test_a_fine") != NULL) fail_msg("the recap should name failures only; it said:\n%s", recap);
    if (strstr(recap, "noise") != NULL) fail_msg("the recap should not repeat a log's noise; it said:\n%s", recap);
    expect_contains(recap, "\n5 passed, 2 failed, 0 skipped\n", "the totals, still the last line");
    free(out);
}

static void run_tests_says_at_once_that_a_binary_ran_past_its_limit(void **state)
{
    char dir[PATH_MAX], *out = NULL;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(dir, sizeof dir), 0);   /* th_teardown removes it */
    /* It would sleep 10 minutes; the limit, 1 s, ends it (exec: the
     * sleep takes timeout's TERM itself). */
    make_fake_test(dir, "test_stuck", "#!/bin/sh\necho 'waiting for what never comes'\nexec sleep 600\n");
    make_fake_test(dir, "test_after", "#!/bin/sh\necho '[  PASSED  ] 1 test(s).'\nexit 0\n");
    rc = run_tests_in(dir, "TEST_TIMEOUT=1", "test_stuck test_after", &out);
    if (rc != 1) fail_msg("run-tests should exit 1 for a binary past its limit; got %d:\n%s", rc, out);
    expect_contains(out, "[1/2] test_stuck ... TIMED OUT after ", "the binary's line");
    expect_contains(out, "*** test_stuck TIMED OUT: it ran past its limit of 1 s (TEST_TIMEOUT) and was killed ***\n",
                    "a line of its own naming the binary and the limit");
    expect_contains(out, "    waiting for what never comes\n", "the tail of its output");
    if (strstr(out, "[2/2] test_after") == NULL || strstr(out, "[2/2] test_after") < strstr(out, "TIMED OUT: it ran"))
        fail_msg("run-tests should say the timeout when it happens, before the next binary runs; it said:\n%s", out);
    expect_contains(out, "  test_stuck: 0 passed, 1 failed (timed out after 1s)\n", "the summary line");
    expect_contains(out, "\n1 passed, 1 failed, 0 skipped\n", "the totals");
    free(out);
}

int main(void)
{
    const char *inner = getenv("TIDE_HARNESS_INNER");
    if (inner != NULL && strcmp(inner, "skip") == 0) return inner_skip_main();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_th_fork_child_dies_when_its_parent_is_killed_aborts_or_crashes),
        cmocka_unit_test(a_th_run_command_and_what_it_started_die_when_the_caller_is_killed),
        cmocka_unit_test_teardown(th_children_stop_kills_and_reaps_all_but_the_kept, th_teardown_children),
        cmocka_unit_test(a_failed_test_with_th_teardown_children_leaves_no_process),
        cmocka_unit_test_teardown(a_failed_test_with_th_teardown_leaves_no_scratch_directory_but_the_kept,
                                  th_teardown_children),
        cmocka_unit_test(run_tests_kills_and_fails_a_test_that_leaves_a_process_running),
        cmocka_unit_test_teardown(run_tests_counts_skipped_tests_and_lists_each_with_its_reason, th_teardown),
        cmocka_unit_test_teardown(run_tests_shows_a_passing_binary_as_one_line_and_its_output_with_verbose,
                                  th_teardown),
        cmocka_unit_test_teardown(run_tests_shows_the_tail_of_a_failed_binarys_output_and_where_the_rest_is,
                                  th_teardown),
        cmocka_unit_test_teardown(run_tests_ends_with_what_failed_and_why, th_teardown),
        cmocka_unit_test_teardown(run_tests_says_at_once_that_a_binary_ran_past_its_limit, th_teardown),
    };
    return th_run_group("harness", tests, NULL, NULL, th_teardown);
}
