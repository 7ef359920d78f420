/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helpers.c: scratch directories, fixture copies, the fixture formula, a
 * deterministic PRNG, the processes and directories a test leaves behind,
 * bin/tide run as the operator runs it, skips with a reason, the log a
 * test reads, the worker threads' failure record and the store tests'
 * set-up (an item fetched and compared, a create failing at each of its
 * calls), for Tide's tests. See helpers.h.
 *
 * Never: write under th_fixture_root(). Everything here that writes takes a
 * path the caller made with th_mkdtemp() or th_copy_fixture().
 */
#include "helpers.h"

#include "io/io_sim.h"
#include "store/format.h"
#include "store/full.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/random.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the fixture formula ---- */

uint64_t th_splitmix64(uint64_t *s)
{
    return tide_random_next64(s);
}

void th_stream(uint64_t seed, void *out, size_t n)
{
    uint8_t *p = out;
    uint64_t s = seed;

    while (n > 0) {
        uint64_t v = th_splitmix64(&s);
        for (int b = 0; b < 8 && n > 0; b++, n--) {
            *p++ = (uint8_t)v;
            v >>= 8;
        }
    }
}

void th_key(uint64_t i, unsigned key_size, void *out)
{
    th_stream(2 * i + 1, out, key_size);
}

size_t th_len(uint64_t i, unsigned vmin, unsigned vmax)
{
    uint64_t s = i ^ 0xA5A5A5A5A5A5A5A5ull;
    return vmin + (size_t)(th_splitmix64(&s) % ((uint64_t)vmax - vmin + 1));
}

void th_value(uint64_t i, size_t len, void *out)
{
    th_stream(2 * i + 2, out, len);
}

/* The README's table. value_bytes of the crash fixture is not in the table;
 * tests compute it from the formula. */
const th_fixture th_fixtures[] = {
    { "b4096-k32", 4096, 32, 0x8000, 1000, 1000, 1, 600, 42, 1,
      10, 304380, 45056, 342472, 0 },
    { "b512-k32-spill", 512, 32, 0xf333, 3000, 3000, 16, 64, 7, 1,
      114, 120804, 58880, 300416, 0 },
    { "b16384-k8", 16384, 8, 0x8000, 5000, 5000, 1, 100, 0x0123456789abcdefull, 2,
      12, 252385, 212992, 322477, 0 },
    { "crash-b4096", 4096, 32, 0x8000, 12000, 8000, 50, 200, 1234, 1,
      71, 0, 294912, 1298541, 1 },
};
const size_t th_fixture_count = sizeof th_fixtures / sizeof th_fixtures[0];

const th_fixture *th_fixture_find(const char *name)
{
    for (size_t i = 0; i < th_fixture_count; i++)
        if (strcmp(th_fixtures[i].name, name) == 0) return &th_fixtures[i];
    return NULL;
}

/* ---- scratch directories and files ---- */

const char *th_fixture_root(void)
{
    const char *r = getenv("TIDE_FIXTURES");
    return r && *r ? r : "tests/fixtures/nudb";
}

const char *th_bin_dir(void)
{
    const char *d = getenv("TIDE_BIN_DIR");
    return d && *d ? d : "bin";
}

char *th_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);

    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "th_path: %s/%s is longer than %zu bytes\n", dir, name, cap);
        abort();
    }
    return out;
}

int th_scratch_maps(void)
{
    const char *tmp = getenv("TMPDIR");
    struct statfs fs;

    if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
    if (statfs(tmp, &fs) != 0) return 1;      /* th_mkdtemp will say what is wrong */
    return fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC;
}

int th_mkdtemp(char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    int n;

    if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
    n = snprintf(out, cap, "%s/tide-test-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "th_mkdtemp: path too long under %s\n", tmp);
        return -1;
    }
    if (mkdtemp(out) == NULL) {
        fprintf(stderr, "th_mkdtemp: mkdtemp %s: %s\n", out, strerror(errno));
        return -1;
    }
    return 0;
}

int th_copy_file(const char *from, const char *to)
{
    int in = -1, out = -1, rc = -1;
    char buf[1 << 16];
    ssize_t n;

    in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) { fprintf(stderr, "copy: open %s: %s\n", from, strerror(errno)); goto out; }
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) { fprintf(stderr, "copy: create %s: %s\n", to, strerror(errno)); goto out; }
    while ((n = read(in, buf, sizeof buf)) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR) continue;
                fprintf(stderr, "copy: write %s: %s\n", to, strerror(errno));
                goto out;
            }
            off += w;
        }
    }
    if (n < 0) { fprintf(stderr, "copy: read %s: %s\n", from, strerror(errno)); goto out; }
    rc = 0;
out:
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) rc = -1;
    return rc;
}

int th_copy_fixture(const char *name, char *out, size_t cap)
{
    char src[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    struct dirent *de;
    DIR *d;
    int rc = 0, copied = 0;

    th_path(src, sizeof src, th_fixture_root(), name);
    d = opendir(src);
    if (d == NULL) {
        fprintf(stderr, "th_copy_fixture: fixture %s: %s (set TIDE_FIXTURES or run from the repo root)\n",
                src, strerror(errno));
        return -1;
    }
    if (th_mkdtemp(out, cap) != 0) { closedir(d); return -1; }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        if (de->d_name[0] == '.') continue;
        th_path(from, sizeof from, src, de->d_name);
        if (stat(from, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        th_path(to, sizeof to, out, de->d_name);
        rc = th_copy_file(from, to);
        copied++;
    }
    closedir(d);
    if (rc == 0 && copied == 0) {
        fprintf(stderr, "th_copy_fixture: fixture %s holds no files\n", src);
        rc = -1;
    }
    if (rc != 0) th_rmrf(out);
    return rc;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)ftw;
    if (flag == FTW_DP || flag == FTW_D) return rmdir(path) == 0 ? 0 : -1;
    return unlink(path) == 0 ? 0 : -1;
}

int th_rmrf(const char *path)
{
    struct stat st;

    if (path == NULL || *path == '\0') return 0;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

long long th_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int th_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int th_read_file(const char *path, uint8_t **out, size_t *len)
{
    /* Read to the end rather than to the size stat gives: /proc and cgroupfs
     * files say 0 (test_memory_limit reads them). */
    uint8_t *buf = NULL;
    size_t used = 0, cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

    *out = NULL;
    *len = 0;
    if (fd < 0) return -1;
    for (;;) {
        if (cap - used < 4096) {
            size_t grown = cap ? 2 * cap : 65536;
            uint8_t *p = realloc(buf, grown);
            if (p == NULL) { rc = -1; break; }
            buf = p;
            cap = grown;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { rc = -1; break; }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    if (rc) { free(buf); return -1; }
    *out = buf;
    *len = used;
    return 0;
}

int th_write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const uint8_t *p = buf;
    int rc = 0;

    if (fd < 0) return -1;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) { if (errno == EINTR) continue; rc = -1; break; }
        p += w;
        len -= (size_t)w;
    }
    if (close(fd) != 0) rc = -1;
    return rc;
}

int th_pread_file(const char *path, void *buf, size_t len, uint64_t off)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t *p = buf;
    int rc = 0;

    if (fd < 0) return -1;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { rc = -1; break; }
        p += r;
        off += (uint64_t)r;
        len -= (size_t)r;
    }
    close(fd);
    return rc;
}

int th_pwrite_file(const char *path, const void *buf, size_t len, uint64_t off)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    const uint8_t *p = buf;
    int rc = 0;

    if (fd < 0) return -1;
    while (len > 0) {
        ssize_t w = pwrite(fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { rc = -1; break; }
        p += w;
        off += (uint64_t)w;
        len -= (size_t)w;
    }
    if (close(fd) != 0) rc = -1;
    return rc;
}

int th_flip_bit(const char *path, uint64_t off, unsigned bit)
{
    uint8_t b;

    if (bit > 7 || th_pread_file(path, &b, 1, off) != 0) return -1;
    b ^= (uint8_t)(1u << bit);
    return th_pwrite_file(path, &b, 1, off);
}

static const char *const snap_names[3] = { "nudb.dat", "nudb.key", "nudb.log" };

int th_snapshot_take(const char *dir, th_snapshot *sn)
{
    char path[PATH_MAX];

    memset(sn, 0, sizeof *sn);
    for (int i = 0; i < 3; i++) {
        th_path(path, sizeof path, dir, snap_names[i]);
        if (!th_exists(path)) continue;
        sn->exists[i] = 1;
        if (th_read_file(path, &sn->buf[i], &sn->len[i]) != 0) {
            fprintf(stderr, "th_snapshot_take: cannot read %s\n", path);
            th_snapshot_free(sn);
            return -1;
        }
    }
    return 0;
}

int th_snapshot_diff(const char *dir, const th_snapshot *sn, char *msg, size_t cap)
{
    char path[PATH_MAX];

    for (int i = 0; i < 3; i++) {
        uint8_t *now = NULL;
        size_t len = 0, at = 0;
        int exists;

        th_path(path, sizeof path, dir, snap_names[i]);
        exists = th_exists(path);
        if (exists != sn->exists[i]) {
            snprintf(msg, cap, "%s: %s", snap_names[i], exists ? "appeared" : "disappeared");
            return -1;
        }
        if (!exists) continue;
        if (th_read_file(path, &now, &len) != 0) {
            snprintf(msg, cap, "%s: cannot be read any more", snap_names[i]);
            return -1;
        }
        if (len != sn->len[i]) {
            snprintf(msg, cap, "%s: was %zu bytes, is %zu", snap_names[i], sn->len[i], len);
            free(now);
            return -1;
        }
        while (at < len && now[at] == sn->buf[i][at]) at++;
        if (at < len) {
            snprintf(msg, cap, "%s: byte %zu was 0x%02x, is 0x%02x", snap_names[i], at,
                     sn->buf[i][at], now[at]);
            free(now);
            return -1;
        }
        free(now);
    }
    if (cap > 0) msg[0] = '\0';
    return 0;
}

void th_snapshot_free(th_snapshot *sn)
{
    for (int i = 0; i < 3; i++) {
        free(sn->buf[i]);
        sn->buf[i] = NULL;
    }
}

/* ---- PRNG ---- */

uint64_t th_rng_below(th_rng *r, uint64_t n)
{
    /* Rejection sampling keeps it uniform; n is small in practice. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;

    do v = th_rng_next(r); while (v >= limit);
    return v % n;
}

uint64_t th_rng_range(th_rng *r, uint64_t lo, uint64_t hi)
{
    return lo + th_rng_below(r, hi - lo + 1);
}

void th_rng_bytes(th_rng *r, void *out, size_t n)
{
    uint8_t *p = out;

    while (n > 0) {
        uint64_t v = th_rng_next(r);
        for (int b = 0; b < 8 && n > 0; b++, n--) {
            *p++ = (uint8_t)v;
            v >>= 8;
        }
    }
}

uint64_t th_seed(uint64_t dflt)
{
    const char *e = getenv("TIDE_TEST_SEED");
    char *end;
    unsigned long long v;

    if (e == NULL || *e == '\0') return dflt;
    errno = 0;
    v = strtoull(e, &end, 0);
    if (errno != 0 || *end != '\0') {
        fprintf(stderr, "TIDE_TEST_SEED='%s' is not a number; using %llu\n",
                e, (unsigned long long)dflt);
        return dflt;
    }
    return v;
}

char *th_read_text(const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char *s;

    if (th_read_file(path, &buf, &len) != 0) return NULL;
    s = realloc(buf, len + 1);
    if (s == NULL) { free(buf); return NULL; }
    s[len] = '\0';
    return s;
}

char *th_slurp(const char *path)
{
    char *s = th_read_text(path);

    if (s == NULL) fail_msg("cannot read %s: expected the file to exist", path);
    return s;
}

size_t th_count(const char *text, const char *part)
{
    size_t n = 0;

    for (const char *p = strstr(text, part); p; p = strstr(p + 1, part)) n++;
    return n;
}

/* ---- processes a test starts ----
 *
 * Three layers, so that nothing a test starts outlives it:
 *   1. th_fork's child has PR_SET_PDEATHSIG(SIGKILL): when the thread that
 *      forked it dies (the test binary aborts, crashes, is killed), the
 *      kernel kills the child. The flag survives execve (it is cleared only
 *      for set-user-ID, set-group-ID or file-capability programs).
 *   2. Every th_fork child is recorded until reaped; th_children_stop()
 *      kills (SIGKILL, the child's whole process group) and reaps those a
 *      test left behind, for a teardown: cmocka's fail_msg longjmps past a
 *      test's own cleanup, but the teardown still runs.
 *   3. tests/run-tests runs each test binary in a session of its own and
 *      kills, and counts as a failure, any process left in it once the
 *      binary has exited.
 * A recorded child is only ever signalled while waitpid(WNOHANG) says it
 * is still ours (running or a zombie), so a pid reaped elsewhere and
 * reused by an unrelated process is never killed.
 */

#define TH_MAX_CHILDREN 64

static struct { pid_t pid; int keep; } th_children[TH_MAX_CHILDREN];

pid_t th_fork(void)
{
    pid_t parent = getpid(), pid;

    fflush(NULL);   /* a child that exits with exit() must not repeat our output */
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);   /* the parent died before prctl */
        return 0;
    }
    if (pid < 0) return pid;
    setpgid(pid, pid);   /* both sides, so no race; EACCES once it has exec'd */
    for (size_t i = 0; i < TH_MAX_CHILDREN; i++) {
        if (th_children[i].pid == 0) {
            th_children[i].pid = pid;
            th_children[i].keep = 0;
            return pid;
        }
    }
    /* More live children than any test needs: refuse rather than lose one. */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "th_fork: more than %d children alive at once\n", TH_MAX_CHILDREN);
    errno = EAGAIN;
    return -1;
}

static void th_forget(pid_t pid)
{
    for (size_t i = 0; i < TH_MAX_CHILDREN; i++)
        if (th_children[i].pid == pid) th_children[i].pid = 0;
}

pid_t th_waitpid(pid_t pid, int *status, int options)
{
    int st;
    pid_t r = waitpid(pid, &st, options);

    if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st))) th_forget(r);
    if (r > 0 && status != NULL) *status = st;
    return r;
}

void th_child_keep(pid_t pid)
{
    for (size_t i = 0; i < TH_MAX_CHILDREN; i++)
        if (th_children[i].pid == pid) th_children[i].keep = 1;
}

int th_children_stop(int all)
{
    int n = 0;

    for (size_t i = 0; i < TH_MAX_CHILDREN; i++) {
        pid_t pid = th_children[i].pid, r;
        int st;

        if (pid == 0 || (th_children[i].keep && !all)) continue;
        r = waitpid(pid, &st, WNOHANG);
        if (r >= 0) {
            /* Still ours: it and whatever it started in its group. A group
             * id stays unused by others while any member lives. */
            kill(-pid, SIGKILL);
            if (r == 0) {
                kill(pid, SIGKILL);
                n++;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
            }
        }
        th_children[i].pid = 0;
    }
    return n;
}

int th_teardown_children(void **state)
{
    int n = th_children_stop(0);

    (void)state;
    if (n > 0) fprintf(stderr, "teardown: killed %d process(es) the test left running\n", n);
    return 0;
}

/* The guard of th_run: the parent (the test) died, so kill the whole group:
 * the shell and everything it started (dash does not exec the last command
 * of `sh -c`, so the command is the guard's grandchild). */
static void th_guard_parent_died(int sig)
{
    (void)sig;
    kill(0, SIGKILL);
}

int th_run(const char *cmd, char **out)
{
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    int fds[2], st = -1;
    pid_t parent = getpid(), pid;

    *out = buf;
    if (buf == NULL) abort();
    buf[0] = '\0';
    if (pipe(fds) != 0) return -1;
    pid = th_fork();
    if (pid < 0) { close(fds[0]); close(fds[1]); return -1; }
    if (pid == 0) {
        /* The guard: it leads the group th_fork made, waits for the shell
         * and passes its exit on; when the test dies it kills the group. */
        pid_t sh;
        signal(SIGTERM, th_guard_parent_died);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) kill(0, SIGKILL);
        close(fds[0]);
        if (fds[1] != 1) { dup2(fds[1], 1); close(fds[1]); }
        sh = fork();
        if (sh == 0) {
            signal(SIGTERM, SIG_DFL);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        if (sh < 0) _exit(126);
        while (waitpid(sh, &st, 0) < 0) if (errno != EINTR) _exit(126);
        if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
        signal(WTERMSIG(st), SIG_DFL);
        raise(WTERMSIG(st));
        _exit(128 + WTERMSIG(st));
    }
    close(fds[1]);
    for (;;) {
        ssize_t got;
        if (len + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (buf == NULL) abort();
            *out = buf;
        }
        got = read(fds[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
    }
    buf[len] = '\0';
    close(fds[0]);
    while (th_waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int th_run_tide(const char *args, int merge_stderr, char **out)
{
    size_t cap = strlen(th_bin_dir()) + strlen(args) + 32;
    char *cmd = malloc(cap);
    int rc;

    if (cmd == NULL) abort();
    snprintf(cmd, cap, "'%s/tide' %s %s", th_bin_dir(), args, merge_stderr ? "2>&1" : "2>/dev/null");
    rc = th_run(cmd, out);
    free(cmd);
    return rc;
}

/* ---- scratch directories removed whatever the outcome ----
 *
 * The record holds copies of the paths (the callers' buffers often live
 * on a test's stack, gone once fail_msg longjmps out).
 */

#define TH_MAX_SCRATCH 64

static struct { char path[2048]; int keep; } th_scratch_dirs[TH_MAX_SCRATCH];

int th_scratch_make(char *out, size_t cap)
{
    size_t n;

    if (th_mkdtemp(out, cap) != 0) return -1;
    n = strlen(out);
    for (size_t i = 0; i < TH_MAX_SCRATCH; i++) {
        if (th_scratch_dirs[i].path[0] != '\0') continue;
        if (n >= sizeof th_scratch_dirs[i].path) break;
        memcpy(th_scratch_dirs[i].path, out, n + 1);
        th_scratch_dirs[i].keep = 0;
        return 0;
    }
    /* A path too long to record, or more directories than any test needs:
     * refuse rather than leave one behind. */
    fprintf(stderr, "th_scratch_make: cannot record %s (at most %d directories of %zu bytes)\n", out,
            TH_MAX_SCRATCH, sizeof th_scratch_dirs[0].path - 1);
    th_rmrf(out);
    return -1;
}

void th_scratch_remove(const char *dir)
{
    if (dir == NULL || dir[0] == '\0') return;
    for (size_t i = 0; i < TH_MAX_SCRATCH; i++)
        if (strcmp(th_scratch_dirs[i].path, dir) == 0) th_scratch_dirs[i].path[0] = '\0';
    th_rmrf(dir);
}

void th_scratch_keep(const char *dir)
{
    for (size_t i = 0; i < TH_MAX_SCRATCH; i++)
        if (th_scratch_dirs[i].path[0] != '\0' && strcmp(th_scratch_dirs[i].path, dir) == 0)
            th_scratch_dirs[i].keep = 1;
}

int th_teardown(void **state)
{
    th_teardown_children(state);
    th_cgroups_remove();
    for (size_t i = 0; i < TH_MAX_SCRATCH; i++) {
        if (th_scratch_dirs[i].path[0] == '\0' || th_scratch_dirs[i].keep) continue;
        th_rmrf(th_scratch_dirs[i].path);
        th_scratch_dirs[i].path[0] = '\0';
    }
    return 0;
}

void th_put_file(const char *root, const char *rel, const char *text)
{
    char path[4096];
    char *p;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
    if (th_write_file(path, text, strlen(text)) != 0) fail_msg("cannot write %s", path);
}

/* ---- real cgroups a test makes ---- */

#define TH_MAX_CGROUPS 8

static char th_cgroup_dirs[TH_MAX_CGROUPS][256];

void th_cgroup_v1_in(const char *test, const char *name, uint64_t limit_bytes, char *dir, size_t cap)
{
    char file[320], text[32];
    size_t i;
    int n, e;

    for (i = 0; i < TH_MAX_CGROUPS && th_cgroup_dirs[i][0] != '\0'; i++) {}
    if (i == TH_MAX_CGROUPS) fail_msg("th_cgroup_v1: more than %d groups at once", TH_MAX_CGROUPS);
    n = snprintf(th_cgroup_dirs[i], sizeof th_cgroup_dirs[i], "/sys/fs/cgroup/memory/%s-%d", name,
                 (int)getpid());
    if (n < 0 || (size_t)n >= sizeof th_cgroup_dirs[i] || (size_t)n >= cap)
        fail_msg("th_cgroup_v1: group name '%s' too long", name);
    if (mkdir(th_cgroup_dirs[i], 0755) != 0) {
        e = errno;
        snprintf(file, sizeof file, "%s", th_cgroup_dirs[i]);
        th_cgroup_dirs[i][0] = '\0';
        th_skip_in(test, "cannot make the v1 memory group %s: %s", file, strerror(e));
    }
    memcpy(dir, th_cgroup_dirs[i], (size_t)n + 1);
    snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dir);
    n = snprintf(text, sizeof text, "%llu", (unsigned long long)limit_bytes);
    if (th_write_file(file, text, (size_t)n) != 0)
        fail_msg("cannot write %s to %s: %s", text, file, strerror(errno));
}

int th_cgroup_child(const char *dir, void (*fn)(void *arg, int fd), void *arg, char *out, size_t cap)
{
    char procs[320], line[32];
    size_t len = 0;
    int fds[2], status = 0, n;
    pid_t pid;

    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
    pid = th_fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        n = snprintf(line, sizeof line, "%d\n", (int)getpid());
        if (th_write_file(procs, line, (size_t)n) != 0) _exit(3);
        fn(arg, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    while (len + 1 < cap) {
        ssize_t r = read(fds[0], out + len, cap - 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    out[len] = '\0';
    close(fds[0]);
    if (th_waitpid(pid, &status, 0) != pid) fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void th_cgroups_remove(void)
{
    for (size_t i = 0; i < TH_MAX_CGROUPS; i++) {
        int tries = 0;

        if (th_cgroup_dirs[i][0] == '\0') continue;
        /* A task just reaped may still be leaving the group: EBUSY for a moment. */
        while (rmdir(th_cgroup_dirs[i]) != 0 && errno != ENOENT) {
            if (errno != EBUSY || ++tries == 200) {
                fprintf(stderr, "th_cgroups_remove: rmdir %s: %s\n", th_cgroup_dirs[i], strerror(errno));
                break;
            }
            usleep(10 * 1000);
        }
        th_cgroup_dirs[i][0] = '\0';
    }
}

int th_scratch_init(th_scratch *s)
{
    if (th_scratch_make(s->base, sizeof s->base) != 0) return -1;
    th_path(s->dir, sizeof s->dir, s->base, "data");
    return 0;
}

int th_scratch_setup(void **state)
{
    th_scratch *s = calloc(1, sizeof *s);

    if (s == NULL || th_scratch_init(s) != 0) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

int th_scratch_teardown(void **state)
{
    th_teardown(state);
    free(*state);
    *state = NULL;
    return 0;
}

int th_run_group_n(const char *name, const struct CMUnitTest *tests, size_t n, int (*setup)(void **),
                   int (*teardown)(void **), int (*dflt)(void **))
{
    struct CMUnitTest *t = calloc(n, sizeof *t);
    int failed;

    if (t == NULL) abort();
    for (size_t i = 0; i < n; i++) {
        t[i] = tests[i];
        if (t[i].teardown_func == NULL) t[i].teardown_func = dflt;
    }
    /* TH_TEST=PATTERN runs only the tests whose names match (cmocka's
     * filter: '*' and '?'), for one test while working on it. */
    if (getenv("TH_TEST") && *getenv("TH_TEST")) cmocka_set_test_filter(getenv("TH_TEST"));
    failed = _cmocka_run_group_tests(name, t, n, setup, teardown);
    free(t);
    return failed;
}

/* ---- skipping with a reason ---- */

void th_skip_in(const char *test, const char *fmt, ...)
{
    char reason[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    /* On stdout, where cmocka's own "[  SKIPPED ]" line follows it. */
    printf("SKIP: %s: %s\n", test, reason);
    fflush(stdout);
    skip();
}

/* ---- the log a test reads ---- */

void th_log_capture_sink(void *arg, int level, const char *line)
{
    th_log_capture *cap = arg;

    cap->calls++;
    cap->level = level;
    if (level == TIDE_LOG_WARN) cap->warnings++;
    snprintf(cap->line, sizeof cap->line, "%s", line);
    strncat(cap->text, line, sizeof cap->text - strlen(cap->text) - 1);
}

void th_log_discard_sink(void *arg, int level, const char *line)
{
    (void)arg, (void)level, (void)line;
}

const char *th_fake_getenv(void *arg, const char *name)
{
    const char *const *env = arg;
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') return *env + n + 1;
    return NULL;
}

/* ---- failures found by other threads ---- */

void th_failures_init(th_failures *f)
{
    pthread_mutex_init(&f->mu, NULL);
    atomic_init(&f->count, 0);
    f->first[0] = '\0';
}

void th_failure(th_failures *f, const char *fmt, ...)
{
    va_list ap;

    if (atomic_fetch_add(&f->count, 1) == 0) {
        pthread_mutex_lock(&f->mu);
        va_start(ap, fmt);
        vsnprintf(f->first, sizeof f->first, fmt, ap);
        va_end(ap);
        pthread_mutex_unlock(&f->mu);
    }
}

void th_failures_check(th_failures *f, const char *what)
{
    char first[sizeof f->first];
    unsigned long n = atomic_load(&f->count);

    if (n != 0) {
        /* The first failure's message may still be being written by the
         * thread that counted it: the lock waits for it. */
        pthread_mutex_lock(&f->mu);
        memcpy(first, f->first, sizeof first);
        pthread_mutex_unlock(&f->mu);
        fail_msg("%s: %lu failures; the first: %s", what, n, first);
    }
}

double th_now_ms(void)
{
    return (double)tide_clock_mono_ns() / 1e6;
}

int th_small(void)
{
    const char *e = getenv("TIDE_TEST_SMALL");

    if (TH_TSAN) return 1;
    return e != NULL && *e != '\0' && strcmp(e, "0") != 0;
}

void th_encode_rebuild_log(uint8_t out[62], const struct tide_store_info *in, unsigned block_size,
                           uint64_t dat_file_size)
{
    tide_log_header lh;

    memset(&lh, 0, sizeof lh);
    lh.version = 2;
    lh.uid = in->uid;
    lh.appnum = in->appnum;
    lh.key_size = (uint16_t)in->key_size;
    lh.salt = in->salt;
    lh.pepper = in->pepper;
    lh.block_size = (uint16_t)block_size;
    lh.key_file_size = 0;
    lh.dat_file_size = dat_file_size;
    ti_fmt_encode_log_header(out, &lh);
}

/* ---- the store tests' set-up (the store's own section: kept at the end) ---- */

void th_store_opts(tide_store_opts *o)
{
    tide_store_opts_init(o);
    o->check_invariants = 1;
}

int th_store_open(tide_store **out, const char *dir)
{
    tide_store_opts o;

    th_store_opts(&o);
    return tide_store_open(out, dir, &o);
}

int th_store_insert_items(tide_store *s, uint64_t from, uint64_t to, unsigned key_size,
                          unsigned vmin, unsigned vmax, uint64_t *failed)
{
    uint8_t key[256], *val = malloc(vmax ? vmax : 1);
    int rc = val ? 0 : TIDE_ENOMEM;

    for (uint64_t i = from; rc == 0 && i < to; i++) {
        size_t len = th_len(i, vmin, vmax);
        th_key(i, key_size, key);
        th_value(i, len, val);
        rc = tide_store_insert(s, key, val, len);
        if (rc && failed) *failed = i;
    }
    free(val);
    return rc;
}

int th_store_expect_items(tide_store *s, uint64_t from, uint64_t to, unsigned key_size,
                          unsigned vmin, unsigned vmax, char *why, size_t cap)
{
    uint8_t key[256], *val = malloc(vmax ? vmax : 1);
    int bad = val == NULL;

    if (bad) snprintf(why, cap, "out of memory");
    for (uint64_t i = from; !bad && i < to; i++) {
        size_t len = th_len(i, vmin, vmax), glen = 0;
        void *got = NULL;
        int rc;

        th_key(i, key_size, key);
        th_value(i, len, val);
        rc = tide_store_fetch(s, key, &got, &glen);
        if (rc != 0) {
            snprintf(why, cap, "fetch of item %llu: expected its value, got %d %s: %s",
                     (unsigned long long)i, rc, tide_strerror(rc), tide_last_error());
            bad = 1;
        } else if (glen != len || memcmp(got, val, len) != 0) {
            snprintf(why, cap, "fetch of item %llu: expected its %zu bytes, got %zu other bytes",
                     (unsigned long long)i, len, glen);
            bad = 1;
        }
        free(got);
    }
    free(val);
    return bad ? -1 : 0;
}

int th_store_fetch_item(tide_store *s, uint64_t i, unsigned key_size, size_t len, int must,
                        const char *what)
{
    uint8_t key[256], *want = malloc(len ? len : 1);
    size_t glen = 0;
    void *got = NULL;
    int rc, same;

    if (want == NULL || key_size > sizeof key) abort();
    th_key(i, key_size, key);
    th_value(i, len, want);
    rc = tide_store_fetch(s, key, &got, &glen);
    if (rc == TIDE_ENOTFOUND && !must) {
        free(want);
        return 0;
    }
    if (rc != 0) {
        free(want);
        fail_msg("%s: fetch of item %llu: expected its %zu-byte value%s, got %d (%s): %s", what,
                 (unsigned long long)i, len, must ? "" : " or absence", rc, tide_strerror(rc),
                 tide_last_error());
    }
    same = glen == len && memcmp(got, want, len) == 0;
    free(got);
    free(want);
    if (!same)
        fail_msg("%s: item %llu: expected its %zu-byte value, got %zu bytes that %s", what,
                 (unsigned long long)i, len, glen, glen == len ? "differ" : "are of another size");
    return 1;
}

static void env_paths(th_store_env *env)
{
    th_path(env->dat_path, sizeof env->dat_path, env->dir, "nudb.dat");
    th_path(env->key_path, sizeof env->key_path, env->dir, "nudb.key");
    th_path(env->log_path, sizeof env->log_path, env->dir, "nudb.log");
}

int th_store_setup_bare(void **state)
{
    th_store_env *env = calloc(1, sizeof *env);

    if (env == NULL) return -1;
    *state = env;
    return 0;
}

int th_store_setup(void **state)
{
    th_store_env *env = calloc(1, sizeof *env);

    if (env == NULL) return -1;
    if (th_mkdtemp(env->dir, sizeof env->dir) != 0) { free(env); return -1; }
    env_paths(env);
    *state = env;
    return 0;
}

int th_store_env_fixture(th_store_env *env, const char *name)
{
    if (th_copy_fixture(name, env->dir, sizeof env->dir) != 0) {
        env->dir[0] = '\0';
        return -1;
    }
    env_paths(env);
    return 0;
}

void th_store_env_stop_child(th_store_env *env)
{
    if (env->child > 0) {
        kill(env->child, SIGKILL);
        th_waitpid(env->child, NULL, 0);
        env->child = 0;
    }
}

int th_store_teardown(void **state)
{
    th_store_env *env = *state;

    if (env == NULL) return 0;
    th_store_env_stop_child(env);
    if (env->s2) tide_store_close(env->s2);
    if (env->s) tide_store_close(env->s);
    if (env->dir[0]) th_rmrf(env->dir);
    free(env->extra);
    free(env);
    return 0;
}

/* One create on a fresh simulator with `fault` at its call n. *reached is
 * whether the create made n calls; the simulator goes to *out. */
static int create_with_fault_at(const char *dir, tide_store_create_opts *co, unsigned key_size,
                                int fault, uint64_t n, tide_io_sim **out, int *reached)
{
    tide_io_sim *sim = NULL;
    uint64_t c0;
    int rc;

    if (tide_io_sim_create(&sim) != 0 || tide_io_sim_mkdir(sim, dir) != 0)
        fail_msg("create failing at call %llu: the simulator could not be made: %s",
                 (unsigned long long)n, tide_last_error());
    tide_store_create_opts_init(co);
    co->key_size = key_size;
    co->io = tide_io_sim_io(sim);
    c0 = tide_io_sim_calls(sim);
    if (tide_io_sim_fail_at(sim, n, (tide_io_sim_fault)fault, 0) != 0)
        fail_msg("create failing at call %llu: the failure could not be armed", (unsigned long long)n);
    rc = tide_store_create(dir, co);
    *reached = tide_io_sim_calls(sim) - c0 >= n;
    *out = sim;
    return rc;
}

uint64_t th_store_create_failing_at_each_call(const char *dir, unsigned key_size, int fault,
                                              th_create_check *check, void *arg)
{
    uint64_t n;

    for (n = 1;; n++) {
        tide_store_create_opts co;
        tide_io_sim *sim;
        int reached, rc = create_with_fault_at(dir, &co, key_size, fault, n, &sim, &reached);

        if (!reached) {
            if (rc != 0)
                fail_msg("a create that never reached its call %llu: expected 0, got %d (%s): %s",
                         (unsigned long long)n, rc, tide_strerror(rc), tide_last_error());
            tide_io_sim_destroy(sim);
            break;
        }
        if (rc != 0) check(sim, &co, n, rc, arg);   /* rc 0: a call create may ignore */
        tide_io_sim_destroy(sim);
    }
    return n - 1;
}
