/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * node.c: the lab's child processes: one tided per variant, on a loopback
 * port, with a fresh store and a log file in the scratch directory.
 *
 * Layout: the free-port probe; the spawn (argv from the plan and the
 * variant, the child's environment); death (reap, report the status and
 * the log's tail); stop (SIGTERM, up to 15 s, SIGKILL).
 *
 * Invariants:
 *   1. A child dies with the lab: PR_SET_PDEATHSIG, and it exits at once
 *      when the parent is already gone before the prctl.
 *   2. The lab's own allocator settings do not reach the child: six names
 *      (LD_PRELOAD, MALLOC_CONF, MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_,
 *      MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) are removed from the child's
 *      environment before the variant's are added; other allocator
 *      variables (another MALLOC_*, TCMALLOC_*, MIMALLOC_*) are passed on.
 *   3. A child's own process group: a terminal's ^C reaches the lab only,
 *      which then stops the nodes in order.
 *   4. ti_lab_nodes_stop leaves no child running and none unreaped.
 *
 * Never: exec a shell, or leave a child running.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/runner_impl.h"
#include "tide/error.h"

int ti_lab_port_probe(int want, int *out)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), rc = -1, one = 1;

    if (fd < 0) goto out;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)want);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) goto out;
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0) goto out;
    *out = ntohs(a.sin_port);
    rc = 0;
out:
    if (fd >= 0) { int e = errno; close(fd); errno = e; }
    return rc;
}

void ti_lab_log_tail(FILE *f, const char *path, int lines)
{
    char buf[8192];
    int fd = open(path, O_RDONLY | O_CLOEXEC), seen = 0;
    off_t size, from;
    ssize_t got;
    char *p, *save = NULL;

    if (f == NULL) return;
    if (fd < 0) { fprintf(f, "    (no log at %s: %s)\n", path, strerror(errno)); return; }
    size = lseek(fd, 0, SEEK_END);
    from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    got = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (got <= 0) { fprintf(f, "    (the log %s is empty)\n", path); return; }
    buf[got] = '\0';
    p = buf + got;
    if (p > buf && p[-1] == '\n') p--;
    while (p > buf && seen < lines) if (*--p == '\n') seen++;
    if (*p == '\n') p++;
    fprintf(f, "    last lines of %s:\n", path);
    for (char *line = strtok_r(p, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        fprintf(f, "    | %s\n", line);
}

static const char *describe_status(int st, char *buf, size_t cap)
{
    if (WIFEXITED(st)) snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st)) snprintf(buf, cap, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else snprintf(buf, cap, "stopped (status 0x%x)", st);
    return buf;
}

/* The child, between fork and exec: never returns. */
static void node_exec(const ti_lab_rep *r, const ti_lab_node *n, char **argv, pid_t parent)
{
    int fd = open(n->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    sigset_t none;

    prctl(PR_SET_PDEATHSIG, SIGTERM);          /* invariant 1 */
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);                             /* invariant 3 */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
    unsetenv("LD_PRELOAD");                    /* invariant 2 */
    unsetenv("MALLOC_CONF");
    unsetenv("MALLOC_ARENA_MAX");
    unsetenv("MALLOC_MMAP_THRESHOLD_");
    unsetenv("MALLOC_TRIM_THRESHOLD_");
    unsetenv("GLIBC_TUNABLES");
    for (int i = 0; i < n->v->nenv; i++) putenv(n->v->env[i]);
    execv(r->tided, argv);
    dprintf(2, "tide lab: exec %s: %s\n", r->tided, strerror(errno));
    _exit(127);
}

int ti_lab_node_spawn(const ti_lab_rep *r, ti_lab_node *n)
{
    const tide_lab_plan *o = r->o;
    char listen[64], sweep[16], *argv[TIDE_LAB_MAX_ARGS * 2 + 32], nodeargs[512], *save = NULL;
    int argc = 0;
    pid_t parent = getpid(), pid;

    snprintf(listen, sizeof listen, "127.0.0.1:%d", n->port);
    snprintf(sweep, sizeof sweep, "%u", o->sweep_interval);
    argv[argc++] = (char *)r->tided;
    argv[argc++] = "--data-dir";       argv[argc++] = (char *)n->dir;
    argv[argc++] = "--listen";         argv[argc++] = listen;
    argv[argc++] = "--node-size";      argv[argc++] = (char *)o->node_size;
    argv[argc++] = "--sweep-interval"; argv[argc++] = sweep;
    snprintf(nodeargs, sizeof nodeargs, "%s", o->node_args ? o->node_args : "");
    for (char *t = strtok_r(nodeargs, " \t", &save); t && argc < TIDE_LAB_MAX_ARGS + 16; t = strtok_r(NULL, " \t", &save))
        argv[argc++] = t;
    for (int i = 0; i < n->v->nargs; i++) argv[argc++] = n->v->args[i];
    argv[argc] = NULL;

    pid = fork();
    if (pid < 0) {
        ti_lab_say(o->report, "fork: %s", strerror(errno));
        return TIDE_EIO;
    }
    if (pid == 0) node_exec(r, n, argv, parent);
    n->pid = pid;
    return 0;
}

int ti_lab_node_died(ti_lab_node *n, FILE *f, int report)
{
    char why[96];
    int st;

    if (n->pid <= 0) return 0;
    if (waitpid(n->pid, &st, WNOHANG) != n->pid) return 0;
    n->status = st;
    if (report && f) {
        ti_lab_say(f, "the node of variant '%s' (pid %d, 127.0.0.1:%d) %s",
                   n->v->name, (int)n->pid, n->port, describe_status(st, why, sizeof why));
        ti_lab_log_tail(f, n->log, 15);
    }
    n->pid = 0;
    return 1;
}

void ti_lab_nodes_stop(ti_lab_node *nodes, size_t nn, FILE *f)
{
    double until = ti_lab_now() + 15;
    size_t left;

    for (size_t i = 0; i < nn; i++) if (nodes[i].pid > 0) kill(nodes[i].pid, SIGTERM);
    do {
        left = 0;
        for (size_t i = 0; i < nn; i++) {
            int st;
            if (nodes[i].pid <= 0) continue;
            if (waitpid(nodes[i].pid, &st, WNOHANG) == nodes[i].pid) { nodes[i].status = st; nodes[i].pid = 0; }
            else left++;
        }
        if (left) ti_lab_nap(0.05);
    } while (left && ti_lab_now() < until);
    for (size_t i = 0; i < nn; i++) {          /* invariant 4 */
        if (nodes[i].pid <= 0) continue;
        ti_lab_say(f, "the node of variant '%s' (pid %d) ignored SIGTERM for 15 s; killing it",
                   nodes[i].v->name, (int)nodes[i].pid);
        kill(nodes[i].pid, SIGKILL);
        waitpid(nodes[i].pid, &nodes[i].status, 0);
        nodes[i].pid = 0;
    }
}
