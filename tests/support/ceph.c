/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ceph.c: the throwaway Ceph cluster of the archive tests (ceph.h says
 * what it offers and how it is stopped whatever a test's outcome).
 *
 * The scripts do the work (scripts/ceph-up, ceph-down, ceph-osd, run with
 * bash through th_run, their messages kept and shown on failure); this file
 * keeps, for each cluster started, a slot the exit and signal paths read:
 * the starting process, the directory, the ceph.conf and the daemons' pids
 * as the scripts recorded them in DIR/pids.
 *
 * Invariants:
 *   1. A slot is in use from before scripts/ceph-up runs until the cluster
 *      is stopped; its pid list is re-read after every script that starts
 *      or stops a daemon, so it names the daemons that run.
 *   2. The signal path uses only async-signal-safe calls (open, read,
 *      close, kill, nanosleep, _Fork, execve, waitpid, sigaction, raise)
 *      on the slots' fixed buffers; it never allocates.
 *   3. A pid is signalled only while its command line holds the slot's
 *      ceph.conf as one argument, or is empty: a process whose main thread
 *      has exited before its other threads (its pid cannot be reused while
 *      they run).
 */
#include "ceph.h"

#include "../helpers.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if TH_SANITIZER
#include <sanitizer/common_interface_defs.h>
#endif

#define TH_CEPH_MAX      4
#define TH_CEPH_MAX_PIDS 32

/* The programs scripts/ceph-up runs, each checked before it is run so that
 * a missing one is named with the step that installs it. */
static const char *const th_ceph_programs[] = { "ceph-mon", "ceph-osd", "ceph", "rados", "monmaptool", NULL };

static struct th_ceph_slot {
    int used;
    pid_t owner;                      /* the process that started it */
    int keep;                         /* TIDE_CEPH_KEEP=1: leave the directory */
    char dir[PATH_MAX];
    char conf[PATH_MAX];
    volatile sig_atomic_t npids;      /* pids[0..npids) are valid */
    pid_t pids[TH_CEPH_MAX_PIDS];
} th_ceph_slots[TH_CEPH_MAX];

static int th_ceph_hooks_installed;

/* ---- what the signal path may call (invariant 2) ------------------------ */

/* "/proc/<pid>/<leaf>" into out (64 bytes), without snprintf. */
static void th_ceph_proc_path(char *out, pid_t pid, const char *leaf)
{
    char digits[24];
    int n = 0;
    size_t i = 0;
    unsigned long v = (unsigned long)pid;

    do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v && n < (int)sizeof digits);
    memcpy(out, "/proc/", 6);
    i = 6;
    while (n > 0) out[i++] = digits[--n];
    out[i++] = '/';
    for (; *leaf && i < 62; leaf++) out[i++] = *leaf;
    out[i] = '\0';
}

/* 1 when pid's command line has `conf` as one argument or is empty (a
 * zombie main thread, or no such process: then kill fails harmlessly). */
static int th_ceph_is_ours(pid_t pid, const char *conf)
{
    static char buf[8192];   /* static: a signal handler's stack may be small */
    char path[64];
    ssize_t n;
    int fd;
    size_t len = strlen(conf);

    th_ceph_proc_path(path, pid, "cmdline");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) return 0;
    if (n == 0) return 1;
    buf[n] = '\0';
    for (ssize_t at = 0; at < n;) {
        size_t arg = strlen(buf + at);
        if (arg == len && memcmp(buf + at, conf, len) == 0) return 1;
        at += (ssize_t)arg + 1;
    }
    return 0;
}

/* 1 while pid's main thread has not exited (its stat's state is not Z or
 * X). */
static int th_ceph_main_thread_runs(pid_t pid)
{
    char path[64], buf[512];
    ssize_t n;
    int fd;

    th_ceph_proc_path(path, pid, "stat");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    for (ssize_t i = n - 1; i > 0; i--) {
        if (buf[i] == ')' && i + 2 < n) return buf[i + 2] != 'Z' && buf[i + 2] != 'X';
    }
    return 0;
}

/* SIGKILL every daemon of every slot this process started, wait up to 2 s
 * for them to go, and remove the directories (unless kept). */
static void th_ceph_kill_all(void)
{
    pid_t self = getpid();
    struct timespec tick = { 0, 20 * 1000 * 1000 };

    for (int s = 0; s < TH_CEPH_MAX; s++) {
        struct th_ceph_slot *sl = &th_ceph_slots[s];
        if (!sl->used || sl->owner != self) continue;
        for (int i = 0; i < sl->npids; i++)
            if (th_ceph_is_ours(sl->pids[i], sl->conf)) kill(sl->pids[i], SIGKILL);
    }
    for (int round = 0; round < 100; round++) {
        int left = 0;
        for (int s = 0; s < TH_CEPH_MAX; s++) {
            struct th_ceph_slot *sl = &th_ceph_slots[s];
            if (!sl->used || sl->owner != self) continue;
            for (int i = 0; i < sl->npids; i++) left += th_ceph_main_thread_runs(sl->pids[i]);
        }
        if (left == 0) break;
        nanosleep(&tick, NULL);
    }
    for (int s = 0; s < TH_CEPH_MAX; s++) {
        struct th_ceph_slot *sl = &th_ceph_slots[s];
        pid_t rm;
        if (!sl->used || sl->owner != self) continue;
        sl->used = 0;
        if (sl->keep) continue;
        rm = _Fork();
        if (rm == 0) {
            char *argv[] = { "rm", "-rf", "--", sl->dir, NULL };
            char *envp[] = { NULL };
            execve("/bin/rm", argv, envp);
            _exit(127);
        }
        if (rm > 0) while (waitpid(rm, NULL, 0) < 0 && errno == EINTR) {}
    }
}

static const int th_ceph_signals[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                       SIGTERM, SIGINT,  SIGHUP, SIGQUIT };

static void th_ceph_on_signal(int sig)
{
    int saved = errno;
    struct sigaction dfl;

    th_ceph_kill_all();
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);   /* pending until the handler returns, then the default action */
    errno = saved;
}

#if TH_SANITIZER
static void th_ceph_on_sanitizer_death(void)
{
    th_ceph_kill_all();
}
#endif

/* ---- the normal path --------------------------------------------------- */

static struct th_ceph_slot *th_ceph_slot_of(const th_ceph *c)
{
    for (int s = 0; s < TH_CEPH_MAX; s++)
        if (th_ceph_slots[s].used && th_ceph_slots[s].owner == getpid()
            && strcmp(th_ceph_slots[s].dir, c->dir) == 0)
            return &th_ceph_slots[s];
    return NULL;
}

/* Re-read the slot's pids from DIR/pids/ (invariant 1). */
static void th_ceph_read_pids(struct th_ceph_slot *sl)
{
    char dir[PATH_MAX + 8], path[PATH_MAX + 300];
    pid_t pids[TH_CEPH_MAX_PIDS];
    int n = 0;
    DIR *d;
    struct dirent *e;

    snprintf(dir, sizeof dir, "%s/pids", sl->dir);
    d = opendir(dir);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL && n < TH_CEPH_MAX_PIDS) {
            size_t len = strlen(e->d_name);
            char *text;
            long v;
            if (len < 5 || strcmp(e->d_name + len - 4, ".pid") != 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            text = th_read_text(path);
            v = text ? strtol(text, NULL, 10) : 0;
            free(text);
            if (v > 1) pids[n++] = (pid_t)v;
        }
        closedir(d);
    }
    sl->npids = 0;
    memcpy(sl->pids, pids, sizeof pids[0] * (size_t)n);
    sl->npids = n;
}

/* Run `bash scripts/<script> '<dir>' <args>` with stderr joined to stdout;
 * the exit status, the output into *out (the caller frees it). */
static int th_ceph_script(const char *script, const char *dir, const char *args, char **out)
{
    char cmd[PATH_MAX + 256];

    snprintf(cmd, sizeof cmd, "bash scripts/%s '%s' %s 2>&1", script, dir, args);
    return th_run(cmd, out);
}

/* Stop the slot's cluster with scripts/ceph-down (--purge unless kept) and
 * free the slot. 0, or -1 with ceph-down's output on stderr. */
static int th_ceph_down(struct th_ceph_slot *sl)
{
    char *out = NULL;
    int rc = th_ceph_script("ceph-down", sl->dir, sl->keep ? "" : "--purge", &out);

    if (rc != 0) {
        fprintf(stderr, "th_ceph: scripts/ceph-down %s exited with %d:\n%s", sl->dir, rc, out);
        /* What it could not stop, the signal path's way. */
        th_ceph_read_pids(sl);
        for (int i = 0; i < sl->npids; i++)
            if (th_ceph_is_ours(sl->pids[i], sl->conf)) kill(sl->pids[i], SIGKILL);
    }
    if (sl->keep) fprintf(stderr, "th_ceph: TIDE_CEPH_KEEP=1: kept %s\n", sl->dir);
    else th_rmrf(sl->dir);
    free(out);
    sl->npids = 0;
    sl->used = 0;
    return rc == 0 ? 0 : -1;
}

static void th_ceph_at_exit(void)
{
    for (int s = 0; s < TH_CEPH_MAX; s++) {
        struct th_ceph_slot *sl = &th_ceph_slots[s];
        if (!sl->used || sl->owner != getpid()) continue;
        fprintf(stderr, "th_ceph: the cluster in %s was still up at exit; stopping it\n", sl->dir);
        th_ceph_down(sl);
    }
}

static void th_ceph_install_hooks(void)
{
    if (th_ceph_hooks_installed) return;
    th_ceph_hooks_installed = 1;
    atexit(th_ceph_at_exit);
    for (size_t i = 0; i < sizeof th_ceph_signals / sizeof th_ceph_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(th_ceph_signals[i], NULL, &old) != 0) continue;
        /* Someone's own handler, or an ignored signal (nohup), is left as it is. */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = th_ceph_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(th_ceph_signals[i], &sa, NULL);
    }
#if TH_SANITIZER
    __sanitizer_set_death_callback(th_ceph_on_sanitizer_death);
#endif
}

/* 1 when `name` is an executable file in a directory of $PATH. */
static int th_ceph_on_path(const char *name)
{
    const char *path = getenv("PATH");
    char file[PATH_MAX];

    if (path == NULL || *path == '\0') path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        snprintf(file, sizeof file, "%.*s/%s", (int)len, len ? path : ".", name);
        if (access(file, X_OK) == 0) return 1;
        path += len + (end != NULL);
    }
    return 0;
}

int th_ceph_start(th_ceph *c)
{
    const char *skip = getenv("TIDE_SKIP_CEPH"), *keep = getenv("TIDE_CEPH_KEEP");
    struct th_ceph_slot *sl = NULL;
    char *out = NULL, want[PATH_MAX + 16];
    double t0;
    int rc;

    if (c->up) {
        fprintf(stderr, "th_ceph_start: a cluster is up already in %s\n", c->dir);
        return -1;
    }
    memset(c, 0, sizeof *c);
    if (skip != NULL && strcmp(skip, "1") == 0) {
        snprintf(c->skipped, sizeof c->skipped, "TIDE_SKIP_CEPH=1: no Ceph cluster started%s",
                 th_ceph_on_path("ceph-mon") ? "" : " (and ceph-mon is not installed)");
        return 1;
    }
    for (int i = 0; th_ceph_programs[i]; i++) {
        if (!th_ceph_on_path(th_ceph_programs[i])) {
            fprintf(stderr, "th_ceph_start: %s not found: run scripts/install-deps --test\n", th_ceph_programs[i]);
            return -1;
        }
    }
    if (access("scripts/ceph-up", R_OK) != 0) {
        fprintf(stderr, "th_ceph_start: scripts/ceph-up not found: run the tests from the repository root\n");
        return -1;
    }
    for (int s = 0; s < TH_CEPH_MAX && sl == NULL; s++)
        if (!th_ceph_slots[s].used) sl = &th_ceph_slots[s];
    if (sl == NULL) {
        fprintf(stderr, "th_ceph_start: %d clusters are up already, the most this fixture runs\n", TH_CEPH_MAX);
        return -1;
    }
    if (th_mkdtemp(c->dir, sizeof c->dir) != 0) return -1;
    if (strchr(c->dir, '\'') != NULL || strlen(c->dir) + sizeof "/ceph.conf" > sizeof c->conf) {
        fprintf(stderr, "th_ceph_start: %s: a cluster directory needs a shorter path without quotes\n", c->dir);
        th_rmrf(c->dir);
        return -1;
    }
    /* Not snprintf: gcc cannot see that the length was checked above. */
    memcpy(c->conf, c->dir, strlen(c->dir));
    memcpy(c->conf + strlen(c->dir), "/ceph.conf", sizeof "/ceph.conf");
    snprintf(c->pool, sizeof c->pool, "tide");

    th_ceph_install_hooks();
    memset(sl, 0, sizeof *sl);
    memcpy(sl->dir, c->dir, sizeof sl->dir);
    memcpy(sl->conf, c->conf, sizeof sl->conf);
    sl->keep = keep != NULL && strcmp(keep, "1") == 0;
    sl->owner = getpid();
    sl->used = 1;

    t0 = th_now_ms();
    rc = th_ceph_script("ceph-up", c->dir, "", &out);
    snprintf(want, sizeof want, "CEPH_CONF=%s\n", c->conf);
    if (rc != 0 || strstr(out, want) == NULL) {
        fprintf(stderr, "th_ceph_start: scripts/ceph-up %s exited with %d%s:\n%s", c->dir, rc,
                rc == 0 ? " without printing its CEPH_CONF line" : "", out);
        th_ceph_down(sl);
        free(out);
        return -1;
    }
    free(out);
    th_ceph_read_pids(sl);
    c->up = 1;
    fprintf(stderr, "th_ceph: a cluster in %s, its pool writable after %.1f s\n", c->dir,
            (th_now_ms() - t0) / 1000.0);
    return 0;
}

void th_ceph_stop(th_ceph *c)
{
    struct th_ceph_slot *sl = c->dir[0] ? th_ceph_slot_of(c) : NULL;

    c->up = 0;
    if (sl != NULL) th_ceph_down(sl);
}

/* Run scripts/ceph-osd DIR ACTION N; re-read the pids whatever it did. */
static int th_ceph_osd(th_ceph *c, const char *action, int osd)
{
    struct th_ceph_slot *sl = c->dir[0] ? th_ceph_slot_of(c) : NULL;
    char args[64], *out = NULL;
    int rc;

    if (sl == NULL || !c->up) {
        fprintf(stderr, "th_ceph: osd %s %d: no cluster is up\n", action, osd);
        return -1;
    }
    snprintf(args, sizeof args, "%s %d", action, osd);
    rc = th_ceph_script("ceph-osd", c->dir, args, &out);
    th_ceph_read_pids(sl);
    if (rc != 0) fprintf(stderr, "th_ceph: scripts/ceph-osd %s %s exited with %d:\n%s", c->dir, args, rc, out);
    free(out);
    return rc == 0 ? 0 : -1;
}

int th_ceph_osd_stop(th_ceph *c, int osd)
{
    return th_ceph_osd(c, "stop", osd);
}

int th_ceph_osd_kill(th_ceph *c, int osd)
{
    return th_ceph_osd(c, "kill", osd);
}

int th_ceph_osd_start(th_ceph *c, int osd)
{
    return th_ceph_osd(c, "start", osd);
}

int th_ceph_pids(const th_ceph *c, pid_t *out, int cap)
{
    struct th_ceph_slot *sl = c->dir[0] ? th_ceph_slot_of(c) : NULL;
    int n = 0;

    if (sl == NULL) return 0;
    for (int i = 0; i < sl->npids && n < cap; i++)
        if (th_ceph_running(c, sl->pids[i])) out[n++] = sl->pids[i];
    return n;
}

int th_ceph_running(const th_ceph *c, pid_t pid)
{
    char dir[64];
    DIR *d;
    struct dirent *e;
    int live = 0;

    /* Any thread not yet exited (a zombie main thread may wait for the
     * others). */
    th_ceph_proc_path(dir, pid, "task");
    d = opendir(dir);
    if (d == NULL) return 0;
    while (!live && (e = readdir(d)) != NULL) {
        long tid = strtol(e->d_name, NULL, 10);
        if (tid > 0) live = th_ceph_main_thread_runs((pid_t)tid);
    }
    closedir(d);
    return live && th_ceph_is_ours(pid, c->conf);
}
