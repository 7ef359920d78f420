/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ceph.h: a real, throwaway Ceph cluster for the tests of the RADOS
 * archive: one monitor and one BlueStore OSD on loopback, every file under
 * a scratch directory, started by scripts/ceph-up and stopped by
 * scripts/ceph-down (their headers say how, and why the daemons stay in
 * the test's session). No mocks: what a test sees is what librados and
 * Ceph 16.2 do.
 *
 * A binary starts one cluster for all its tests (a group setup), since a
 * start takes about 4 s and a test run needs no fresh one:
 *
 *   static th_ceph cluster;
 *   static int group_setup(void **state) { return th_ceph_start(&cluster) < 0 ? -1 : 0; }
 *   static int group_teardown(void **state) { th_ceph_stop(&cluster); return 0; }
 *   static void a_test(void **state) { th_ceph_require(&cluster); ... }
 *
 * and each test's client reads cluster.conf (rados_conf_read_file) and
 * opens cluster.pool.
 *
 * Nothing of a cluster outlives the binary, whatever its outcome:
 *   - th_ceph_stop stops it (scripts/ceph-down: SIGTERM, SIGKILL after
 *     20 s) and removes its directory;
 *   - at exit (atexit) every cluster still up is stopped the same way;
 *   - on a fatal signal (SIGABRT from an assert or abort, SIGSEGV, SIGBUS,
 *     SIGFPE, SIGILL) and on SIGTERM, SIGINT, SIGHUP and SIGQUIT, a handler
 *     sends SIGKILL to each recorded daemon directly (kill(2) is
 *     async-signal-safe; running ceph-down from a handler after memory may
 *     be corrupt is not), removes the directory with rm -rf (_Fork and
 *     execve), then lets the signal take its default course. A handler
 *     is installed only where none was (cmocka's own, set while a test
 *     runs, catch a SIGSEGV there and fail the test: the exit then stops
 *     the cluster). An AddressSanitizer report, which ends the process
 *     without atexit, kills the daemons from its death callback (an
 *     UndefinedBehaviorSanitizer report does not call it: gcc links that
 *     runtime apart, with a callback list of its own; see below).
 * Only the process that started a cluster stops it: a th_fork child that
 * exits or crashes leaves it alone. SIGKILL of the binary itself cannot be
 * caught: there, and after an UBSan report, tests/run-tests finds the
 * daemons in the binary's session, kills them and counts a failure.
 *
 * A recorded pid is signalled only while that process's command line holds
 * the cluster's ceph.conf, so a daemon that died and whose pid was reused
 * is never hit.
 *
 * Missing Ceph is a failure, not a skip: th_ceph_start says "ceph-mon not
 * found: run scripts/install-deps --test". TIDE_SKIP_CEPH=1 in the
 * environment starts no cluster, and every test skips saying so (for a
 * machine where Ceph cannot run). TIDE_CEPH_KEEP=1 keeps the directory
 * after the stop (its path is printed), for a look at the daemons' logs.
 *
 * The tests run from the repository root (tests/run-tests and make check
 * run them there), where scripts/ceph-up is. None of this is thread-safe:
 * call it from the thread that runs the tests.
 */
#ifndef TIDE_TEST_SUPPORT_CEPH_H
#define TIDE_TEST_SUPPORT_CEPH_H

#include <limits.h>
#include <sys/types.h>

typedef struct th_ceph {
    char dir[PATH_MAX];   /* the cluster's directory ("" until started) */
    char conf[PATH_MAX];  /* dir/ceph.conf, for rados_conf_read_file */
    char pool[64];        /* the pool scripts/ceph-up made: "tide", size 1 */
    int  up;              /* 1 from a successful th_ceph_start to th_ceph_stop */
    char skipped[256];    /* why th_ceph_start started none, else "" */
} th_ceph;

/* Start a cluster in a fresh scratch directory: scripts/ceph-up, which
 * returns once the pool takes writes (about 4 s). Returns 0 when it is up;
 * 1 when TIDE_SKIP_CEPH=1 said to start none (c->skipped says so); -1 when
 * it could not start, with what went wrong on stderr (a missing program
 * named with the package step, or ceph-up's messages and the daemons' log
 * tails). At most 4 clusters at once. */
int th_ceph_start(th_ceph *c);

/* Stop the cluster (scripts/ceph-down) and remove its directory. Does
 * nothing for a cluster not started or stopped already. */
void th_ceph_stop(th_ceph *c);

/* Stop OSD `osd` with SIGTERM (it tells the monitor it is going down), or
 * kill it with SIGKILL (a crash: the monitor marks it down within 30 s);
 * return once it has exited. 0, or -1 with the reason on stderr. */
int th_ceph_osd_stop(th_ceph *c, int osd);
int th_ceph_osd_kill(th_ceph *c, int osd);

/* Start OSD `osd` again; return once it is active and the pool takes
 * writes (a few seconds). A running one is left as it is. 0, or -1. */
int th_ceph_osd_start(th_ceph *c, int osd);

/* The pids of the cluster's running daemons (the monitor and each OSD),
 * at most `cap` into `out`. Returns how many. */
int th_ceph_pids(const th_ceph *c, pid_t *out, int cap);

/* 1 while `pid` is a process of cluster c: a thread of it still runs and
 * its command line names c->conf (or is gone because its main thread has
 * exited before the others). 0 once every thread of it has exited. */
int th_ceph_running(const th_ceph *c, pid_t pid);

/* In a test: skip with the reason when th_ceph_start started no cluster
 * on purpose, fail when it failed. Needs cmocka.h and helpers.h. */
#define th_ceph_require(c)                                                                         \
    do {                                                                                           \
        if (!(c)->up) {                                                                            \
            if ((c)->skipped[0] != '\0') th_skip("%s", (c)->skipped);                              \
            fail_msg("no Ceph cluster: th_ceph_start failed (its messages are above) or the "      \
                     "cluster was stopped");                                                       \
        }                                                                                          \
    } while (0)

#endif
