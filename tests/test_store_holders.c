/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_holders.c: Tide leaves a store alone while another process
 * has its files open, and a read-only tool never recovers.
 *
 * NuDB takes no lock. Before these checks, a nudb.log that a live NuDB
 * writer was in the middle of looked to Tide like a crash's (nobody held
 * the flock), and `tide get` or `tide recover` "recovered" it: the writer's
 * commit was undone under it. What is checked here:
 *
 *   - A child process holding nudb.dat, nudb.key or nudb.log open (a plain
 *     open(2), no lock, as NuDB has them) is listed by tide_store_holders
 *     with its pid, name and file; tide_store_recover_io, a read-write
 *     tide_store_open and tide_store_rekey_with refuse with TIDE_EBUSY naming
 *     its pid, and every file stays byte-identical; TIDE_RECOVER_FORCE (and
 *     ignore_holders) go ahead, and the store then holds exactly what
 *     recovery must leave.
 *   - The caller's own descriptors never count.
 *   - A read-only open of a store whose nudb.log holds a commit fails with
 *     TIDE_EBUSY saying so, and so does verify; inspect and visit read it;
 *     none of them changes a byte.
 *   - The same refusals on the simulated file system (tide_io_sim_add_holder).
 *
 * Every child is killed and reaped by the teardown, whatever happens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/io_sim.h"
#include "store/full.h"
#include "util/log.h"
#include "helpers.h"
#include "expect.h"

typedef th_store_env tstate;   /* dir and child (helpers.h) */

static int setup(void **state)
{
    if (th_store_setup_bare(state) != 0) return -1;
    return th_store_env_fixture(*state, "crash-b4096");
}

#define stop_child(t) th_store_env_stop_child(t)

/* Fork a child that opens dir/name read-only (no lock) and sleeps until
 * killed. Returns once the descriptor is open. */
static void child_holding(tstate *t, const char *name)
{
    char path[4200];
    int ready[2];
    char c;

    th_path(path, sizeof path, t->dir, name);
    if (pipe(ready) != 0) fail_msg("pipe failed");
    t->child = th_fork();
    if (t->child < 0) fail_msg("fork failed");
    if (t->child == 0) {
        int fd = open(path, O_RDONLY | O_NONBLOCK);
        close(ready[0]);
        if (write(ready[1], fd >= 0 ? "y" : "n", 1) != 1) _exit(2);
        for (;;) pause();
    }
    close(ready[1]);
    if (read(ready[0], &c, 1) != 1 || c != 'y') {
        close(ready[0]);
        stop_child(t);
        fail_msg("the child could not open %s", path);
    }
    close(ready[0]);
}

static void expect_busy_naming(int rc, pid_t pid, const char *file, const char *what)
{
    char want[96];

    snprintf(want, sizeof want, "%s is open in process %d", file, (int)pid);
    expect_rc(rc, TIDE_EBUSY, what);
    expect_contains(tide_last_error(), want, what);
}

/* crash-b4096 after recovery: items 0..7999, not 8000. */
static void expect_recovered(const char *dir, const char *what)
{
    tide_store_opts o;
    tide_store *s = NULL;
    uint8_t key[32];
    void *v = NULL;
    size_t len = 0;
    int rc;

    th_store_opts(&o);
    o.read_only = 1;
    rc = tide_store_open(&s, dir, &o);
    if (rc != 0) fail_msg("%s: read-only open after recovery: %d (%s): %s", what, rc,
                          tide_strerror(rc), tide_last_error());
    th_key(7999, 32, key);
    rc = tide_store_fetch(s, key, &v, &len);
    free(v);
    if (rc != 0 || len != th_len(7999, 50, 200)) {
        tide_store_close(s);
        fail_msg("%s: item 7999: expected its %zu bytes, got %d (%zu bytes)", what,
                 th_len(7999, 50, 200), rc, len);
    }
    th_key(8000, 32, key);
    rc = tide_store_fetch(s, key, &v, &len);
    free(v);
    tide_store_close(s);
    if (rc != TIDE_ENOTFOUND) fail_msg("%s: item 8000: expected TIDE_ENOTFOUND, got %d", what, rc);
}

static void refusals_while_a_child_holds(void **state, const char *file)
{
    tstate *t = *state;
    tide_store_holder h[4];
    tide_store *s = NULL;
    tide_store_opts o;
    tide_rekey_opts ro;
    tide_recover_report rep;
    th_snapshot sn;
    size_t n = 0;
    char what[128];
    int rc;

    child_holding(t, file);
    snprintf(what, sizeof what, "a child holding %s", file);
    if (th_snapshot_take(t->dir, &sn) != 0) fail_msg("snapshot failed");

    rc = tide_store_holders(t->dir, NULL, h, 4, &n);
    if (rc != 0 || n != 1 || h[0].pid != t->child || strcmp(h[0].file, file) != 0 ||
        h[0].comm[0] == '\0')
        fail_msg("%s: tide_store_holders: expected the child %d with %s, got rc %d, %zu holders "
                 "(first: pid %d, %s, '%s')", what, (int)t->child, file, rc, n,
                 n ? h[0].pid : 0, n ? h[0].file : "", n ? h[0].comm : "");

    expect_busy_naming(tide_store_recover_io(t->dir, NULL, &rep), t->child, file, what);
    expect_unchanged(t->dir, &sn, "recover refused");
    rc = th_store_open(&s, t->dir);
    if (rc == 0) tide_store_close(s);
    expect_busy_naming(rc, t->child, file, what);
    expect_unchanged(t->dir, &sn, "read-write open refused");
    tide_rekey_opts_init(&ro);
    ro.block_size = 8192;
    expect_busy_naming(tide_store_rekey_with(t->dir, &ro, NULL), t->child, file, what);
    expect_unchanged(t->dir, &sn, "rekey refused");
    th_snapshot_free(&sn);

    if (strcmp(file, "nudb.dat") == 0) {
        /* Told the holder only reads, the open recovers and the store works. */
        th_store_opts(&o);
        o.ignore_holders = 1;
        rc = tide_store_open(&s, t->dir, &o);
        if (rc != 0) fail_msg("%s: open with ignore_holders: expected 0, got %d (%s): %s", what, rc,
                              tide_strerror(rc), tide_last_error());
        rc = tide_store_close(s);
        if (rc != 0) fail_msg("%s: close: %d", what, rc);
    } else {
        rc = tide_store_recover_with(t->dir, NULL, TIDE_RECOVER_FORCE, &rep);
        if (rc != 0 || rep.buckets_restored != 71)
            fail_msg("%s: recover with TIDE_RECOVER_FORCE: expected 0 and 71 buckets restored, got "
                     "%d (%s) and %llu: %s", what, rc, tide_strerror(rc),
                     (unsigned long long)rep.buckets_restored, tide_last_error());
    }
    stop_child(t);
    expect_recovered(t->dir, what);
}

static void recover_open_and_rekey_refuse_while_a_child_has_nudb_dat_open(void **state)
{
    refusals_while_a_child_holds(state, "nudb.dat");
}

static void recover_open_and_rekey_refuse_while_a_child_has_nudb_key_open(void **state)
{
    refusals_while_a_child_holds(state, "nudb.key");
}

static void recover_open_and_rekey_refuse_while_a_child_has_nudb_log_open(void **state)
{
    refusals_while_a_child_holds(state, "nudb.log");
}

static void the_callers_own_descriptors_are_not_holders(void **state)
{
    tstate *t = *state;
    tide_store_holder h[2];
    char path[4200];
    size_t n = 9;
    int fd = open(th_path(path, sizeof path, t->dir, "nudb.dat"), O_RDONLY);
    int rc = tide_store_holders(t->dir, NULL, h, 2, &n);

    if (fd >= 0) close(fd);
    if (fd < 0 || rc != 0 || n != 0)
        fail_msg("own descriptor on nudb.dat: expected 0 holders, got rc %d, %zu", rc, n);
}

static void a_read_only_open_of_a_store_with_a_pending_log_says_so_and_writes_nothing(void **state)
{
    tstate *t = *state;
    tide_store_opts o;
    tide_store *s = NULL;
    tide_store_info info;
    tide_verify_report vr;
    tide_visit_stats st;
    th_snapshot sn;
    int rc;

    if (th_snapshot_take(t->dir, &sn) != 0) fail_msg("snapshot failed");
    th_store_opts(&o);
    o.read_only = 1;
    rc = tide_store_open(&s, t->dir, &o);
    if (rc == 0) tide_store_close(s);
    if (rc != TIDE_EBUSY || strstr(tide_last_error(), "unfinished commit of 145198 bytes") == NULL ||
        strstr(tide_last_error(), "tide recover") == NULL)
        fail_msg("read-only open with a pending log: expected TIDE_EBUSY naming the 145198-byte "
                 "commit and 'tide recover', got %d (%s): %s", rc, tide_strerror(rc),
                 tide_last_error());
    rc = tide_store_verify_io(t->dir, NULL, &vr);
    if (rc != TIDE_EBUSY) fail_msg("verify with a pending log: expected TIDE_EBUSY, got %d", rc);
    if (tide_store_inspect(t->dir, NULL, &info) != 0 || !info.needs_recovery)
        fail_msg("inspect: expected needs_recovery");
    if (tide_store_visit_io(t->dir, NULL, NULL, NULL, &st) != 0 || st.data_records != 12000)
        fail_msg("visit: expected the 12000 records written");
    expect_unchanged(t->dir, &sn, "read-only open, verify, inspect and visit");
    th_snapshot_free(&sn);
}

/* ---- the same on the simulated file system ---- */

static void on_the_sim_a_holder_of_the_log_stops_recovery_until_forced(void **state)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log" };
    tstate *t = *state;
    tide_io_sim *sim = NULL;
    tide_io *io;
    tide_store *s = NULL;
    tide_store_opts o;
    tide_recover_report rep;
    uint64_t writes;
    int rc;

    if (tide_io_sim_create(&sim) != 0) fail_msg("sim create");
    io = tide_io_sim_io(sim);
    tide_io_sim_mkdir(sim, "/db");
    for (int i = 0; i < 3; i++) {
        char from[4200], to[64];
        uint8_t *buf = NULL;
        size_t len = 0;
        if (th_read_file(th_path(from, sizeof from, t->dir, names[i]), &buf, &len) != 0)
            fail_msg("read %s", from);
        snprintf(to, sizeof to, "/db/%s", names[i]);
        tide_io_sim_put_file(sim, to, buf, len);
        free(buf);
    }
    if (tide_io_sim_add_holder(sim, "/db/nudb.log", 4242, "rippled") != 0) fail_msg("add holder");
    writes = io->writes;
    th_store_opts(&o);
    o.io = io;
    rc = tide_store_open(&s, "/db", &o);
    if (rc == 0) tide_store_close(s);
    expect_busy_naming(rc, 4242, "nudb.log", "sim: read-write open");
    if (strstr(tide_last_error(), "(rippled)") == NULL)
        fail_msg("sim: expected the holder's name in '%s'", tide_last_error());
    expect_busy_naming(tide_store_recover_io("/db", io, &rep), 4242, "nudb.log",
                       "sim: recover");
    if (io->writes != writes) fail_msg("sim: the refusals wrote %llu times",
                                       (unsigned long long)(io->writes - writes));
    rc = tide_store_recover_with("/db", io, TIDE_RECOVER_FORCE, &rep);
    if (rc != 0 || rep.buckets_restored != 71)
        fail_msg("sim: forced recover: expected 0 and 71 buckets, got %d (%s): %s", rc,
                 tide_strerror(rc), tide_last_error());
    tide_io_sim_clear_holders(sim);
    rc = tide_store_open(&s, "/db", &o);
    if (rc != 0) fail_msg("sim: open once the holder is gone: %d (%s)", rc, tide_strerror(rc));
    tide_store_close(s);
    tide_io_sim_destroy(sim);
}

/* Where /proc cannot be listed, holders cannot be seen, and a writable
 * open must refuse (an unseen NuDB writer is not no writer) saying how to
 * go on; forced, it opens. Made in a child: a mount namespace of its own
 * with an empty tmpfs of mode 000 over /proc, then uid 65534, which root's
 * permission bypass no longer covers. Skipped where the namespace or the
 * mount is not allowed (not root, a container without CAP_SYS_ADMIN). */
typedef struct proc_probe { int listed, rc, changed, forced_rc; char err[1024]; } proc_probe;

/* The sizes and modification times of the store's three files. */
static void stat_files(const char *dir, struct stat st[3])
{
    static const char *const files[] = { "nudb.dat", "nudb.key", "nudb.log" };
    char path[4200];
    for (int i = 0; i < 3; i++)
        if (stat(th_path(path, sizeof path, dir, files[i]), &st[i]) != 0) memset(&st[i], 0, sizeof st[i]);
}

static int files_changed(const struct stat a[3], const struct stat b[3])
{
    for (int i = 0; i < 3; i++)
        if (a[i].st_size != b[i].st_size || a[i].st_mtim.tv_sec != b[i].st_mtim.tv_sec ||
            a[i].st_mtim.tv_nsec != b[i].st_mtim.tv_nsec)
            return 1;
    return 0;
}

static void probe_without_proc(const char *dir, int out)
{
    proc_probe p;
    tide_store_opts o;
    tide_store *s = NULL;
    struct stat st0[3], st1[3];
    DIR *d;

    memset(&p, 0, sizeof p);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tide-test", "/proc", "tmpfs", 0, "mode=000") != 0 || setgid(65534) != 0 ||
        setuid(65534) != 0)
        _exit(77);
    if ((d = opendir("/proc")) != NULL) {
        closedir(d);
        p.listed = 1;
    }
    tide_store_opts_init(&o);
    stat_files(dir, st0);
    p.rc = tide_store_open(&s, dir, &o);
    snprintf(p.err, sizeof p.err, "%s", tide_last_error());
    if (p.rc == 0) tide_store_close(s);
    stat_files(dir, st1);
    p.changed = files_changed(st0, st1);
    o.ignore_holders = 1;
    p.forced_rc = tide_store_open(&s, dir, &o);
    if (p.forced_rc == 0) p.forced_rc = tide_store_close(s);
    if (write(out, &p, sizeof p) != (ssize_t)sizeof p) _exit(1);
    _exit(0);
}

static void a_writable_open_refuses_where_proc_cannot_be_listed_and_opens_forced(void **state)
{
    tstate *t = *state;
    tide_store_create_opts co;
    proc_probe p;
    char dir[4096], path[4200];
    static const char *const files[] = { "nudb.dat", "nudb.key", "nudb.log" };
    int fds[2], status = 0, rc;

    (void)t;
    if (geteuid() != 0) {
        print_message("    skipped: needs root (a mount namespace and a tmpfs over /proc)\n");
        skip();
    }
    if (th_mkdtemp(dir, sizeof dir) != 0) fail_msg("cannot make a temporary directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(dir, &co)) != 0) fail_msg("create: %d %s", rc, tide_last_error());
    chmod(dir, 0777);
    for (int i = 0; i < 3; i++) chmod(th_path(path, sizeof path, dir, files[i]), 0666);
    if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        probe_without_proc(dir, fds[1]);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &p, sizeof p);
    close(fds[0]);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        th_rmrf(dir);
        print_message("    skipped: a mount namespace with a tmpfs over /proc is not allowed here\n");
        skip();
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof p) {
        th_rmrf(dir);
        fail_msg("the probe child failed (status %d, read %zd)", status, got);
    }
    th_rmrf(dir);
    if (p.listed) fail_msg("the child could still list /proc: the probe proves nothing");
    if (p.rc == 0) fail_msg("a writable open succeeded where /proc cannot be listed");
    if (strstr(p.err, "cannot be listed") == NULL || strstr(p.err, "force") == NULL)
        fail_msg("the refusal does not say the holders cannot be listed and how to go on: %s", p.err);
    print_message("    refused with: %s\n", p.err);
    if (p.changed) fail_msg("the refused open changed the store's files");
    expect_ok(p.forced_rc, "the forced open and close");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, th_store_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(recover_open_and_rekey_refuse_while_a_child_has_nudb_dat_open),
        T(recover_open_and_rekey_refuse_while_a_child_has_nudb_key_open),
        T(recover_open_and_rekey_refuse_while_a_child_has_nudb_log_open),
        T(the_callers_own_descriptors_are_not_holders),
        T(a_read_only_open_of_a_store_with_a_pending_log_says_so_and_writes_nothing),
        T(on_the_sim_a_holder_of_the_log_stops_recovery_until_forced),
        T(a_writable_open_refuses_where_proc_cannot_be_listed_and_opens_forced),
    };

    tide_log_set_level(TIDE_LOG_WARN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
