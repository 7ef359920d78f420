/*
 * cmd_lab.c: `tide lab`, trim or no trim side by side on live nodes.
 *
 * For each repetition, tide lab starts one tided per variant at once, on
 * loopback, each on a fresh store in the scratch directory; drives all of
 * them with the same ledger-like workload (src/lab/lab.h) from several
 * client threads, each with one keep-alive libcurl handle per node; samples
 * every node's RSS once a second from /proc/PID/statm; collects every sweep
 * round from GET /v1/sweeps (deduplicated by seq); stops the nodes; and at
 * the end writes the CSVs, the SVG chart and a summary (text or --json).
 *
 * Layout: options and variants; child processes (spawn, ready, death, stop,
 * signals); the clients; the sampler and the sweep poller; one repetition;
 * the summary; the verb.
 *
 * Invariants:
 *   1. Every node of a repetition gets the same ops: a client thread sends
 *      op i of ledger L to each node in turn, in the repetition's shuffled
 *      node order, before it moves on.
 *   2. Every child started is stopped before tide lab returns: SIGTERM,
 *      up to 15 s of waiting, then SIGKILL and a blocking wait. Children
 *      also get PR_SET_PDEATHSIG, so a tide lab killed with SIGKILL leaves
 *      no node behind.
 *   3. SIGINT and SIGTERM only set a flag; the main loop sees it within a
 *      second, stops the clients and the nodes, writes what it has, and
 *      exits 1.
 *   4. A node that dies mid-run fails the run: its variant, pid, status and
 *      the tail of its log are printed, the other nodes are stopped, and the
 *      exit status is 1.
 *
 * Never: exec a shell, leave a child running, or treat a failed request
 * as fatal (it is counted; a dead node is what fails the run).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lab/lab.h"

#define VERB "lab"
#define MAX_VARIANTS 16
#define MAX_ARGS 24
#define DEFAULT_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

/* ---- options and variants --------------------------------------------------- */

typedef struct lab_variant {
    char  name[32];
    char *args[MAX_ARGS];     /* tided flags */
    int   nargs;
    char *env[8];             /* VAR=VALUE for the child */
    int   nenv;
    char  spec[256];          /* as given, for the summary */
} lab_variant;

typedef struct lab_opts {
    lab_variant       v[MAX_VARIANTS];
    size_t            nv;
    tide_lab_workload w;
    double            duration, interval, warmup;
    uint64_t          ledgers;
    unsigned          clients, repeat, sweep_interval, base_port;
    int               keep, referenced, json;
    const char       *tided, *out, *prefix, *scratch, *node_size, *node_args, *jemalloc, *baseline;
    char              command[1024];
} lab_opts;

static const struct builtin {
    const char *name, *spec, *what;
} builtins[] = {
    { "trim",      "--trim-policy always",    "a trim after every sweep (the node's default)" },
    { "notrim",    "--trim-policy never",     "no trim at all" },
    { "every2",    "--trim-policy every:2",   "a trim after every 2nd sweep" },
    { "every4",    "--trim-policy every:4",   "a trim after every 4th sweep" },
    { "freed8m",   "--trim-policy freed:8MiB",  "a trim when the sweep freed 8 MiB or more" },
    { "freed64m",  "--trim-policy freed:64MiB", "a trim when the sweep freed 64 MiB or more" },
    { "freepct10", "--trim-policy free-pct:10", "a trim when allocator-free memory exceeds 10% of RSS" },
    { "mmap16k",   "--mmap-threshold 16KiB --trim-policy never",
                   "glibc's mmap threshold at 16 KiB, no trim" },
    { "jemalloc",  "LD_PRELOAD=@JEMALLOC@ MALLOC_CONF=background_thread:true",
                   "jemalloc preloaded, background purging on, the node's default policy" },
};

static volatile sig_atomic_t g_signal;

static void on_signal(int sig) { g_signal = sig; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_s(double s)
{
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);      /* a signal cuts it short: the caller re-checks */
}

/* Split `spec` on blanks into a variant's flags and VAR=VALUE settings.
 * @JEMALLOC@ becomes the jemalloc path. 0, or CLI_USAGE after a message. */
static int variant_parse(lab_variant *v, const char *name, const char *spec, const char *jemalloc)
{
    char buf[sizeof v->spec], *save = NULL, *tok;
    int rc = 0;

    memset(v, 0, sizeof *v);
    if (strlen(name) == 0 || strlen(name) >= sizeof v->name || strspn(name,
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(name)) {
        rc = cli_usage(VERB, "variant name '%s' must be 1 to 31 letters, digits, '-', '_' or '.'", name);
        goto out;
    }
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->spec, sizeof v->spec, "%s", spec);
    snprintf(buf, sizeof buf, "%s", spec);
    for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char tmp[PATH_MAX + 64];
        if (strstr(tok, "@JEMALLOC@")) {
            snprintf(tmp, sizeof tmp, "LD_PRELOAD=%s", jemalloc);
            tok = tmp;
        }
        if (tok[0] != '-' && strchr(tok, '=')) {
            if (v->nenv >= 8) { rc = cli_usage(VERB, "variant '%s': too many VAR=VALUE settings", name); goto out; }
            v->env[v->nenv++] = strdup(tok);
        } else {
            if (v->nargs >= MAX_ARGS) { rc = cli_usage(VERB, "variant '%s': too many flags", name); goto out; }
            v->args[v->nargs++] = strdup(tok);
        }
    }
out:
    return rc;
}

static void variant_free(lab_variant *v)
{
    for (int i = 0; i < v->nargs; i++) free(v->args[i]);
    for (int i = 0; i < v->nenv; i++) free(v->env[i]);
    v->nargs = v->nenv = 0;
}

static int variant_add(lab_opts *o, const char *name, const char *spec)
{
    int rc;
    for (size_t i = 0; i < o->nv; i++)
        if (strcmp(o->v[i].name, name) == 0) return 0;      /* named twice: once */
    if (o->nv >= MAX_VARIANTS) return cli_usage(VERB, "at most %d variants", MAX_VARIANTS);
    rc = variant_parse(&o->v[o->nv], name, spec, o->jemalloc);
    if (rc == 0) o->nv++;
    return rc;
}

/* ---- child processes ------------------------------------------------------------ */

typedef struct lab_node {
    const lab_variant *v;
    tide_lab_series   *series;
    int    port;
    pid_t  pid;                 /* > 0 while running and not yet reaped */
    int    status;              /* wait status once reaped */
    char   dir[PATH_MAX], log[PATH_MAX], base[64];
    CURL  *poll;
    _Atomic uint64_t puts, puts_existing, gets, gets_missing, errors, bad_length;
} lab_node;

/* A free loopback port (the kernel's choice), or the given one when it can
 * be bound. 0 or -1 with errno. */
static int port_probe(int want, int *out)
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

static void print_log_tail(const char *path, int lines)
{
    char buf[8192];
    int fd = open(path, O_RDONLY | O_CLOEXEC), seen = 0;
    off_t size, from;
    ssize_t got;
    char *p;

    if (fd < 0) { fprintf(stderr, "    (no log at %s: %s)\n", path, strerror(errno)); return; }
    size = lseek(fd, 0, SEEK_END);
    from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    got = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (got <= 0) { fprintf(stderr, "    (the log %s is empty)\n", path); return; }
    buf[got] = '\0';
    p = buf + got;
    if (p > buf && p[-1] == '\n') p--;
    while (p > buf && seen < lines) if (*--p == '\n') seen++;
    if (*p == '\n') p++;
    fprintf(stderr, "    last lines of %s:\n", path);
    for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(stderr, "    | %s\n", line);
}

static const char *describe_status(int st, char *buf, size_t cap)
{
    if (WIFEXITED(st)) snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st)) snprintf(buf, cap, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else snprintf(buf, cap, "stopped (status 0x%x)", st);
    return buf;
}

/* Fork and exec one tided. 0 or CLI_FAIL after a message. */
static int node_spawn(const lab_opts *o, lab_node *n)
{
    char listen[64], sweep[16], *argv[MAX_ARGS * 2 + 32], nodeargs[512], *save = NULL;
    int argc = 0, rc = 0;
    pid_t parent = getpid(), pid;

    snprintf(listen, sizeof listen, "127.0.0.1:%d", n->port);
    snprintf(sweep, sizeof sweep, "%u", o->sweep_interval);
    argv[argc++] = (char *)o->tided;
    argv[argc++] = "--data-dir";       argv[argc++] = n->dir;
    argv[argc++] = "--listen";         argv[argc++] = listen;
    argv[argc++] = "--node-size";      argv[argc++] = (char *)o->node_size;
    argv[argc++] = "--sweep-interval"; argv[argc++] = sweep;
    snprintf(nodeargs, sizeof nodeargs, "%s", o->node_args ? o->node_args : "");
    for (char *t = strtok_r(nodeargs, " \t", &save); t && argc < MAX_ARGS + 16; t = strtok_r(NULL, " \t", &save))
        argv[argc++] = t;
    for (int i = 0; i < n->v->nargs; i++) argv[argc++] = n->v->args[i];
    argv[argc] = NULL;

    pid = fork();
    if (pid < 0) { rc = cli_error(VERB, "fork: %s", strerror(errno)); goto out; }
    if (pid == 0) {
        int fd = open(n->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        sigset_t none;
        /* Die with tide lab, whatever kills it (invariant 2). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);
        setpgid(0, 0);             /* a terminal's ^C goes to tide lab, which stops us */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
        /* Only the variant chooses the allocator: none of ours leaks in. */
        unsetenv("LD_PRELOAD");
        unsetenv("MALLOC_CONF");
        unsetenv("MALLOC_ARENA_MAX");
        unsetenv("MALLOC_MMAP_THRESHOLD_");
        unsetenv("MALLOC_TRIM_THRESHOLD_");
        unsetenv("GLIBC_TUNABLES");
        for (int i = 0; i < n->v->nenv; i++) putenv(n->v->env[i]);
        execv(o->tided, argv);
        dprintf(2, "tide lab: exec %s: %s\n", o->tided, strerror(errno));
        _exit(127);
    }
    n->pid = pid;
out:
    return rc;
}

/* Whether the node has died; reaps it and reports (invariant 4). */
static int node_died(lab_node *n, int report)
{
    char why[96];
    int st;

    if (n->pid <= 0) return 0;
    if (waitpid(n->pid, &st, WNOHANG) != n->pid) return 0;
    n->status = st;
    if (report) {
        fprintf(stderr, "tide lab: the node of variant '%s' (pid %d, 127.0.0.1:%d) %s\n",
                n->v->name, (int)n->pid, n->port, describe_status(st, why, sizeof why));
        print_log_tail(n->log, 15);
    }
    n->pid = 0;
    return 1;
}

/* SIGTERM every running node, wait up to 15 s, SIGKILL the rest
 * (invariant 2). */
static void nodes_stop(lab_node *nodes, size_t nn)
{
    double until = now_s() + 15;
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
        if (left) sleep_s(0.05);
    } while (left && now_s() < until);
    for (size_t i = 0; i < nn; i++) {
        if (nodes[i].pid <= 0) continue;
        fprintf(stderr, "tide lab: the node of variant '%s' (pid %d) ignored SIGTERM for 15 s; killing it\n",
                nodes[i].v->name, (int)nodes[i].pid);
        kill(nodes[i].pid, SIGKILL);
        waitpid(nodes[i].pid, &nodes[i].status, 0);
        nodes[i].pid = 0;
    }
}

/* ---- HTTP ----------------------------------------------------------------------- */

typedef struct body { char *data; size_t len, cap; int keep; } body;

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    body *b = arg;
    size_t n = size * nmemb;
    if (b->keep) {
        if (b->len + n + 1 > b->cap) {
            size_t cap = (b->len + n + 1) * 2;
            char *d = realloc(b->data, cap);
            if (d == NULL) return 0;
            b->data = d;
            b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->data[b->len + n] = '\0';
    }
    b->len += n;
    return n;
}

static CURL *http_handle(struct curl_slist *headers)
{
    CURL *h = curl_easy_init();
    if (h == NULL) return NULL;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    return h;
}

/* One request. Returns the HTTP status, or 0 when none came (the curl error
 * in err). */
static long http_do(CURL *h, const char *url, const void *put, size_t len, body *b, char *err, size_t errcap)
{
    long code = 0;
    CURLcode cc;

    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    if (put) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, put);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    }
    cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        if (err) snprintf(err, errcap, "%s", curl_easy_strerror(cc));
        return 0;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

/* ---- the clients --------------------------------------------------------------- */

typedef struct lab_rep {
    const lab_opts *o;
    lab_node       *nodes;        /* in the repetition's order */
    size_t          nn;
    double          t0;           /* monotonic start of the workload */
    uint64_t        t0_unix_us;
    atomic_int      stop;
    atomic_ullong   late, ledgers;
} lab_rep;

typedef struct lab_client {
    lab_rep  *rep;
    unsigned  id;
    pthread_t th;
    int       started;
} lab_client;

static void *client_main(void *arg)
{
    lab_client *c = arg;
    lab_rep *r = c->rep;
    const lab_opts *o = r->o;
    struct curl_slist *hdr = NULL;
    CURL *h[MAX_VARIANTS] = { 0 };
    uint8_t *buf = malloc(4096);
    char url[160], hex[TIDE_LAB_KEY_SIZE * 2 + 1];
    tide_lab_op op;

    hdr = curl_slist_append(hdr, "Expect:");
    hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
    for (size_t k = 0; k < r->nn; k++) h[k] = http_handle(hdr);
    for (uint64_t L = 0; buf && !atomic_load(&r->stop); L++) {
        double start = r->t0 + (double)L * o->interval;
        size_t nops = tide_lab_ledger_ops(&o->w, L);
        if (o->ledgers && L >= o->ledgers) break;
        if (o->duration > 0 && (double)L * o->interval >= o->duration) break;
        while (!atomic_load(&r->stop) && now_s() < start) sleep_s(fmin(0.1, start - now_s()));
        for (size_t i = c->id; i < nops && !atomic_load(&r->stop); i += o->clients) {
            tide_lab_ledger_op(&o->w, L, i, &op);
            for (int b = 0; b < TIDE_LAB_KEY_SIZE; b++) sprintf(hex + 2 * b, "%02x", op.key[b]);
            if (op.kind == TIDE_LAB_PUT) tide_lab_value_fill(&o->w, &op, buf);
            for (size_t k = 0; k < r->nn; k++) {     /* invariant 1 */
                lab_node *n = &r->nodes[k];
                body b = { 0 };
                long code;
                if (h[k] == NULL) { atomic_fetch_add(&n->errors, 1); continue; }
                snprintf(url, sizeof url, "%s/v1/objects/%s", n->base, hex);
                code = http_do(h[k], url, op.kind == TIDE_LAB_PUT ? buf : NULL, op.len, &b, NULL, 0);
                if (op.kind == TIDE_LAB_PUT) {
                    if (code == 201) atomic_fetch_add(&n->puts, 1);
                    else if (code == 409) atomic_fetch_add(&n->puts_existing, 1);
                    else atomic_fetch_add(&n->errors, 1);
                } else {
                    if (code == 200) {
                        atomic_fetch_add(&n->gets, 1);
                        if (b.len != op.len) atomic_fetch_add(&n->bad_length, 1);
                    } else if (code == 404) atomic_fetch_add(&n->gets_missing, 1);
                    else atomic_fetch_add(&n->errors, 1);
                }
            }
        }
        if (now_s() > start + o->interval) atomic_fetch_add(&r->late, 1);
        if (c->id == 0) atomic_store(&r->ledgers, L + 1);
    }
    for (size_t k = 0; k < r->nn; k++) if (h[k]) curl_easy_cleanup(h[k]);
    curl_slist_free_all(hdr);
    free(buf);
    return NULL;
}

/* ---- sampling ------------------------------------------------------------------- */

/* RSS of pid from /proc/PID/statm (open/read). 0 or -1. */
static int read_rss(pid_t pid, uint64_t *rss)
{
    char path[64], buf[256];
    unsigned long long size = 0, res = 0;
    int fd, rc = -1;
    ssize_t got;

    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) goto out;
    got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) goto out;
    buf[got] = '\0';
    if (sscanf(buf, "%llu %llu", &size, &res) != 2) goto out;
    *rss = (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
    rc = 0;
out:
    return rc;
}

/* Referenced bytes of pid from smaps_rollup; with reset, clear the
 * referenced bits after reading (pages touched since then count next
 * time). 0 or -1. */
static int read_referenced(pid_t pid, int reset, uint64_t *out)
{
    char path[64], buf[4096], *p;
    unsigned long long kb;
    int fd, rc = -1;
    ssize_t got;

    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) goto out;
    got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) goto out;
    buf[got] = '\0';
    p = strstr(buf, "\nReferenced:");
    if (p == NULL || sscanf(p + 12, "%llu", &kb) != 1) goto out;
    *out = (uint64_t)kb * 1024u;
    rc = 0;
    if (reset) {
        snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) { (void)!write(fd, "1", 1); close(fd); }
    }
out:
    return rc;
}

static uint64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

/* GET /v1/sweeps and add every report to the node's series. 0 or -1. */
static int poll_sweeps(lab_rep *r, lab_node *n)
{
    char url[128], err[CURL_ERROR_SIZE] = "";
    body b = { .keep = 1 };
    json_t *doc = NULL, *reps;
    size_t i;
    json_t *x;
    int rc = -1;

    snprintf(url, sizeof url, "%s/v1/sweeps", n->base);
    if (http_do(n->poll, url, NULL, 0, &b, err, sizeof err) != 200 || b.data == NULL) goto out;
    doc = json_loadb(b.data, b.len, 0, NULL);
    reps = json_object_get(doc, "reports");
    if (!json_is_array(reps)) goto out;
    json_array_foreach(reps, i, x) {
        tide_lab_sweep s;
        json_t *t = json_object_get(x, "trim");
        memset(&s, 0, sizeof s);
        s.seq = jint(x, "seq");
        s.t = ((double)jint(x, "started_unix_us") - (double)r->t0_unix_us) / 1e6;
        s.sweep_ns = jint(x, "sweep_ns");
        s.freed_bytes = jint(x, "freed_bytes");
        s.trimmed = json_is_true(json_object_get(x, "trimmed"));
        s.trim_rc = (int)(int64_t)jint(x, "trim_rc");
        if (s.trimmed && json_is_object(t)) {
            s.rss_before = jint(t, "rss_before");
            s.rss_after = jint(t, "rss_after");
            s.rss_delta = (int64_t)jint(t, "rss_delta");
            s.duration_ns = jint(t, "duration_ns");
            s.minflt = jint(t, "minflt");
            s.majflt = jint(t, "majflt");
        }
        if (tide_lab_series_add_sweep(n->series, &s) != 0) goto out;
    }
    rc = 0;
out:
    json_decref(doc);
    free(b.data);
    return rc;
}

/* ---- one repetition ------------------------------------------------------------------ */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static uint64_t shuffle_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Run repetition `rep` (1-based); series[i] receives variant i's data.
 * Returns 0, or CLI_FAIL when a node failed to start or died (reported),
 * or when a signal interrupted the run (then *interrupted is set and the
 * series hold what was measured until then). Every node is stopped before
 * it returns (invariant 2). */
static int run_rep(const lab_opts *o, const char *scratch, unsigned rep, tide_lab_series *series,
                   int *interrupted, FILE *progress)
{
    lab_node nodes[MAX_VARIANTS];
    lab_client clients[64];
    size_t order[MAX_VARIANTS], nn = o->nv;
    lab_rep r;
    sigset_t block, old;
    double next_sample, next_poll, end;
    unsigned tick = 0;
    int rc = 0;

    memset(nodes, 0, sizeof nodes);
    memset(clients, 0, sizeof clients);
    memset(&r, 0, sizeof r);
    r.o = o;
    r.nodes = nodes;
    r.nn = nn;
    /* The repetition's order: variants shuffled by seed and repetition. */
    for (size_t i = 0; i < nn; i++) order[i] = i;
    for (size_t i = nn; i > 1; i--) {          /* Fisher-Yates */
        size_t j = shuffle_mix(shuffle_mix(o->w.seed) ^ (rep * 0x9e3779b1u + i)) % i, t;
        t = order[i - 1]; order[i - 1] = order[j]; order[j] = t;
    }
    for (size_t k = 0; k < nn; k++) {
        lab_node *n = &nodes[k];
        size_t vi = order[k];
        n->v = &o->v[vi];
        n->series = &series[vi];
        snprintf(n->series->variant, sizeof n->series->variant, "%s", n->v->name);
        n->series->rep = rep;
        if (snprintf(n->dir, sizeof n->dir, "%s/r%u-%s", scratch, rep, n->v->name) >= (int)sizeof n->dir
            || snprintf(n->log, sizeof n->log, "%s/r%u-%s.log", scratch, rep, n->v->name) >= (int)sizeof n->log) {
            rc = cli_error(VERB, "the scratch directory's path is too long: %s", scratch);
            goto out;
        }
        if (o->base_port) {
            int want = (int)(o->base_port + k);
            if (want > 65535 || port_probe(want, &n->port) != 0) {
                rc = cli_error(VERB, "127.0.0.1:%d is busy or cannot be bound (%s); give another --port",
                               want, want > 65535 ? "above 65535" : strerror(errno));
                goto out;
            }
        } else if (port_probe(0, &n->port) != 0) {
            rc = cli_error(VERB, "no free loopback port: %s", strerror(errno));
            goto out;
        }
        n->series->port = n->port;
        snprintf(n->base, sizeof n->base, "http://127.0.0.1:%d", n->port);
        n->poll = http_handle(NULL);
        if (n->poll == NULL) { rc = cli_error(VERB, "curl_easy_init failed"); goto out; }
        curl_easy_setopt(n->poll, CURLOPT_TIMEOUT_MS, 5000L);
    }
    for (size_t k = 0; k < nn; k++) {
        rc = node_spawn(o, &nodes[k]);
        if (rc) goto out;
    }
    /* Wait until every node answers /healthz (or dies, or 30 s pass). */
    for (size_t k = 0; k < nn; k++) {
        double until = now_s() + 30;
        char url[96];
        snprintf(url, sizeof url, "%s/healthz", nodes[k].base);
        for (;;) {
            body b = { 0 };
            if (g_signal) { *interrupted = 1; rc = CLI_FAIL; goto out; }
            if (node_died(&nodes[k], 1)) {
                rc = cli_error(VERB, "the node of variant '%s' did not start (was 127.0.0.1:%d free? is %s a tided?)",
                               nodes[k].v->name, nodes[k].port, o->tided);
                goto out;
            }
            if (http_do(nodes[k].poll, url, NULL, 0, &b, NULL, 0) == 200) break;
            if (now_s() > until) {
                rc = cli_error(VERB, "the node of variant '%s' did not answer %s within 30 s", nodes[k].v->name, url);
                print_log_tail(nodes[k].log, 15);
                goto out;
            }
            sleep_s(0.05);
        }
    }
    if (progress) {
        fprintf(progress, "tide lab: repetition %u of %u:", rep, o->repeat);
        for (size_t k = 0; k < nn; k++)
            fprintf(progress, " %s=pid %d port %d", nodes[k].v->name, (int)nodes[k].pid, nodes[k].port);
        fputc('\n', progress);
    }

    /* The clients, with the signals blocked so that they reach this thread. */
    r.t0 = now_s() + 0.2;
    r.t0_unix_us = unix_us() + 200000;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (unsigned c = 0; c < o->clients; c++) {
        clients[c].rep = &r;
        clients[c].id = c;
        if (pthread_create(&clients[c].th, NULL, client_main, &clients[c]) == 0) clients[c].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    /* The sampler: every second on the second of the workload's clock. */
    end = r.t0 + o->duration;
    next_sample = r.t0;
    next_poll = r.t0 + 5;
    for (;;) {
        double t = now_s();
        int all_done = 1;
        if (g_signal) { *interrupted = 1; break; }
        for (size_t k = 0; k < nn; k++)
            if (node_died(&nodes[k], 1)) { rc = CLI_FAIL; goto stop; }
        if (t >= next_sample) {
            for (size_t k = 0; k < nn; k++) {
                tide_lab_sample s = { .t = t - r.t0 };
                if (read_rss(nodes[k].pid, &s.rss) != 0) continue;
                if (o->referenced) (void)read_referenced(nodes[k].pid, tick % 10 == 9, &s.referenced);
                if (s.t >= -0.05 && tide_lab_series_add_sample(nodes[k].series, &s) != 0) {
                    rc = cli_error(VERB, "out of memory for samples");
                    goto stop;
                }
            }
            tick++;
            next_sample += 1.0;
        }
        if (t >= next_poll) {
            for (size_t k = 0; k < nn; k++) (void)poll_sweeps(&r, &nodes[k]);
            next_poll += 5.0;
        }
        for (unsigned c = 0; c < o->clients; c++)
            if (clients[c].started && pthread_tryjoin_np(clients[c].th, NULL) == 0) clients[c].started = 0;
        for (unsigned c = 0; c < o->clients; c++) all_done &= !clients[c].started;
        if (o->duration > 0 && t >= end) break;
        if (all_done && t >= r.t0 + (double)o->ledgers * o->interval) break;
        sleep_s(fmin(next_sample, next_poll) - now_s() + 0.001);
    }
stop:
    atomic_store(&r.stop, 1);
    for (unsigned c = 0; c < o->clients; c++)
        if (clients[c].started) pthread_join(clients[c].th, NULL), clients[c].started = 0;
    for (size_t k = 0; k < nn; k++) if (nodes[k].pid > 0) (void)poll_sweeps(&r, &nodes[k]);
    if (progress && !rc) {
        fprintf(progress, "tide lab: repetition %u done: %llu ledgers, %llu late ledger shares\n", rep,
                (unsigned long long)atomic_load(&r.ledgers), (unsigned long long)atomic_load(&r.late));
    }
    for (size_t k = 0; k < nn; k++) {
        lab_node *n = &nodes[k];
        unsigned long long e = atomic_load(&n->errors), bl = atomic_load(&n->bad_length);
        if (progress)
            fprintf(progress, "tide lab:   %-10s %llu PUT (%llu existing), %llu GET (%llu absent), "
                              "%llu errors, %llu wrong lengths\n", n->v->name,
                    (unsigned long long)atomic_load(&n->puts), (unsigned long long)atomic_load(&n->puts_existing),
                    (unsigned long long)atomic_load(&n->gets), (unsigned long long)atomic_load(&n->gets_missing),
                    e, bl);
    }
out:
    nodes_stop(nodes, nn);
    for (size_t k = 0; k < nn; k++) {
        if (nodes[k].poll) curl_easy_cleanup(nodes[k].poll);
        if (!o->keep && rc == 0 && nodes[k].dir[0]) nftw(nodes[k].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (!o->keep && rc == 0 && nodes[k].log[0]) unlink(nodes[k].log);
    }
    if (*interrupted && rc == 0) rc = CLI_FAIL;
    return rc;
}

/* ---- the summary ----------------------------------------------------------------------- */

typedef struct vsum {
    tide_lab_figures *fig;        /* [repeat] */
    double *reduction;            /* [repeat], NAN without a baseline */
    double plateau_median, reduction_median;
    size_t samples, trims;
} vsum;

static double median_of(const double *v, size_t n)
{
    double tmp[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++) if (!isnan(v[i])) tmp[m++] = v[i];
    return tide_lab_quantile(tmp, m, 0.5);
}

static json_t *jnum(double v) { return isnan(v) ? json_null() : json_real(v); }
static json_t *jbytes(double v) { return isnan(v) ? json_null() : json_integer((json_int_t)llround(v)); }

static json_t *figures_json(const tide_lab_figures *f, double reduction)
{
    return json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
        "samples", (json_int_t)f->samples, "plateau_samples", (json_int_t)f->plateau_samples,
        "plateau_mean_rss_bytes", jbytes(f->plateau_mean_rss),
        "plateau_mean_referenced_bytes", f->plateau_mean_referenced > 0 ? jbytes(f->plateau_mean_referenced) : json_null(),
        "peak_rss_bytes", jbytes(f->peak_rss), "reduction_pct", jnum(reduction),
        "last_rss_bytes", jbytes(f->last_rss),
        "sweeps", (json_int_t)f->sweeps, "trims", (json_int_t)f->trims, "trims_lowered", (json_int_t)f->trims_lowered,
        "trims_lowered_pct", jnum(f->lowered_pct), "release_median_bytes", jbytes(f->release_median),
        "release_max_bytes", jbytes(f->release_max), "release_total_bytes", jbytes(f->trims ? f->release_total : NAN),
        "trim_median_ms", jnum(f->trim_median_ms), "trim_p95_ms", jnum(f->trim_p95_ms),
        "trim_max_ms", jnum(f->trim_max_ms), "trim_total_ms", jnum(f->trims ? f->trim_total_ms : NAN),
        "minflt_per_trim", jnum(f->minflt_per_trim), "freed_median_bytes", jbytes(f->freed_median));
}

static void fmt_mib(char *buf, size_t cap, double v)
{
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.1f", v / 1048576.0);
}

static void fmt_num(char *buf, size_t cap, const char *f, double v)
{
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, f, v);
}

static void print_row(FILE *f, const char *label, const tide_lab_figures *x, double red)
{
    char pl[32], rd[32], lw[32], rm[32], rx[32], dm[32], dp[32], mf[32], fr[32];
    fmt_mib(pl, sizeof pl, x->plateau_mean_rss);
    fmt_num(rd, sizeof rd, "%+.1f%%", isnan(red) ? NAN : -red);
    fmt_num(lw, sizeof lw, "%.0f%%", x->lowered_pct);
    fmt_mib(rm, sizeof rm, x->release_median);
    fmt_mib(rx, sizeof rx, x->release_max);
    fmt_num(dm, sizeof dm, "%.2f", x->trim_median_ms);
    fmt_num(dp, sizeof dp, "%.2f", x->trim_p95_ms);
    fmt_num(mf, sizeof mf, "%.0f", x->minflt_per_trim);
    fmt_mib(fr, sizeof fr, x->freed_median);
    fprintf(f, "%-14s %9s %8s %5zu/%-5zu %7s %7s %7s %7s %7s %8s %7s\n", label, pl, rd, x->trims, x->sweeps,
            lw, rm, rx, dm, dp, mf, fr);
}

/* ---- the verb --------------------------------------------------------------------------- */

static int parse_seconds(const char *opt, const char *text, double min, double max, double *out)
{
    if (cli_parse_double(text, out) != 0 || *out < min || *out > max)
        return cli_usage(VERB, "%s '%s' is not a number of seconds from %g to %g", opt, text, min, max);
    return 0;
}

static int parse_count(const char *opt, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    if (cli_parse_u64(text, min, max, out) != 0)
        return cli_usage(VERB, "%s '%s' is not a whole number from %llu to %llu", opt, text,
                         (unsigned long long)min, (unsigned long long)max);
    return 0;
}

int cli_cmd_lab(int argc, char **argv)
{
    enum { O_VARIANT = 256, O_CUSTOM, O_DURATION, O_LEDGERS, O_INTERVAL, O_OBJECTS, O_READS, O_CLIENTS,
           O_SEED, O_WARMUP, O_REPEAT, O_SWEEP, O_NODE_SIZE, O_NODE_ARGS, O_TIDED, O_JEMALLOC, O_PORT,
           O_OUT, O_PREFIX, O_SCRATCH, O_KEEP, O_REFERENCED, O_JSON, O_BASELINE, O_INNER, O_RECENT, O_WAVE, O_WAVE_PCT };
    static const struct option opts[] = {
        { "variant", required_argument, NULL, O_VARIANT },   { "custom", required_argument, NULL, O_CUSTOM },
        { "duration", required_argument, NULL, O_DURATION }, { "ledgers", required_argument, NULL, O_LEDGERS },
        { "ledger-interval", required_argument, NULL, O_INTERVAL },
        { "objects", required_argument, NULL, O_OBJECTS },   { "reads", required_argument, NULL, O_READS },
        { "inner-pct", required_argument, NULL, O_INNER },   { "recent-pct", required_argument, NULL, O_RECENT },
        { "wave", required_argument, NULL, O_WAVE },         { "wave-pct", required_argument, NULL, O_WAVE_PCT },
        { "clients", required_argument, NULL, O_CLIENTS },   { "seed", required_argument, NULL, O_SEED },
        { "warmup", required_argument, NULL, O_WARMUP },     { "repeat", required_argument, NULL, O_REPEAT },
        { "sweep-interval", required_argument, NULL, O_SWEEP },
        { "node-size", required_argument, NULL, O_NODE_SIZE }, { "node-args", required_argument, NULL, O_NODE_ARGS },
        { "tided", required_argument, NULL, O_TIDED },       { "jemalloc", required_argument, NULL, O_JEMALLOC },
        { "port", required_argument, NULL, O_PORT },         { "out", required_argument, NULL, O_OUT },
        { "prefix", required_argument, NULL, O_PREFIX },     { "scratch", required_argument, NULL, O_SCRATCH },
        { "keep", no_argument, NULL, O_KEEP },               { "referenced", no_argument, NULL, O_REFERENCED },
        { "baseline", required_argument, NULL, O_BASELINE },
        { "json", no_argument, NULL, O_JSON },               { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static lab_opts o;
    const char *variants = "trim,notrim", *customs[MAX_VARIANTS];
    size_t ncustom = 0, nseries = 0;
    tide_lab_series *series = NULL;
    vsum *sums = NULL;
    char scratch[PATH_MAX] = "", path[PATH_MAX + 64], tided_buf[PATH_MAX];
    int c, rc = CLI_OK, interrupted = 0, warmup_given = 0, scratch_made = 0, curl_ready = 0;
    struct sigaction sa, old_int, old_term, old_pipe;
    int sigs_set = 0;
    FILE *f = NULL;
    json_t *doc = NULL;
    uint64_t u;
    size_t base_i = (size_t)-1;

    memset(&o, 0, sizeof o);
    tide_lab_workload_init(&o.w);
    o.duration = 300;
    o.interval = 1;
    o.clients = 4;
    o.repeat = 1;
    o.sweep_interval = 10;
    o.node_size = "tiny";
    o.out = "lab-out";
    o.prefix = "lab";
    o.jemalloc = DEFAULT_JEMALLOC;
    o.baseline = "notrim";
    {   /* The command, for the chart's subtitle and the JSON. */
        size_t at = (size_t)snprintf(o.command, sizeof o.command, "tide");
        for (int i = 0; i < argc && at < sizeof o.command; i++)
            at += (size_t)snprintf(o.command + at, sizeof o.command - at, " %s", argv[i]);
    }
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': cli_help(VERB, stdout); rc = CLI_OK; goto done;
        case O_VARIANT: variants = optarg; break;
        case O_CUSTOM:
            if (ncustom >= MAX_VARIANTS || strchr(optarg, '=') == NULL) {
                rc = cli_usage(VERB, "--custom '%s' is not NAME=TIDED-FLAGS (e.g. pad='--trim-policy every:2')", optarg);
                goto done;
            }
            customs[ncustom++] = optarg;
            break;
        case O_DURATION: if ((rc = parse_seconds("--duration", optarg, 0, 86400, &o.duration))) goto done; break;
        case O_LEDGERS: if ((rc = parse_count("--ledgers", optarg, 0, 100000000, &o.ledgers))) goto done; break;
        case O_INTERVAL: if ((rc = parse_seconds("--ledger-interval", optarg, 0.01, 3600, &o.interval))) goto done; break;
        case O_OBJECTS: if ((rc = parse_count("--objects", optarg, 1, 1000000, &u))) goto done; o.w.objects = (unsigned)u; break;
        case O_READS: if ((rc = parse_count("--reads", optarg, 0, 1000000, &u))) goto done; o.w.reads = (unsigned)u; break;
        case O_INNER: if ((rc = parse_count("--inner-pct", optarg, 0, 100, &u))) goto done; o.w.inner_pct = (unsigned)u; break;
        case O_RECENT: if ((rc = parse_count("--recent-pct", optarg, 0, 100, &u))) goto done; o.w.recent_pct = (unsigned)u; break;
        case O_WAVE: if ((rc = parse_count("--wave", optarg, 0, 1000000, &u))) goto done; o.w.wave_period = (unsigned)u; break;
        case O_WAVE_PCT: if ((rc = parse_count("--wave-pct", optarg, 0, 100, &u))) goto done; o.w.wave_pct = (unsigned)u; break;
        case O_CLIENTS: if ((rc = parse_count("--clients", optarg, 1, 64, &u))) goto done; o.clients = (unsigned)u; break;
        case O_SEED: if ((rc = parse_count("--seed", optarg, 0, UINT64_MAX, &o.w.seed))) goto done; break;
        case O_WARMUP: if ((rc = parse_seconds("--warmup", optarg, 0, 86400, &o.warmup))) goto done; warmup_given = 1; break;
        case O_REPEAT: if ((rc = parse_count("--repeat", optarg, 1, 100, &u))) goto done; o.repeat = (unsigned)u; break;
        case O_SWEEP: if ((rc = parse_count("--sweep-interval", optarg, 10, 600, &u))) goto done; o.sweep_interval = (unsigned)u; break;
        case O_NODE_SIZE:
            if (strcmp(optarg, "tiny") && strcmp(optarg, "small") && strcmp(optarg, "medium") &&
                strcmp(optarg, "large") && strcmp(optarg, "huge")) {
                rc = cli_usage(VERB, "--node-size '%s' is not tiny, small, medium, large or huge", optarg);
                goto done;
            }
            o.node_size = optarg;
            break;
        case O_NODE_ARGS: o.node_args = optarg; break;
        case O_TIDED: o.tided = optarg; break;
        case O_JEMALLOC: o.jemalloc = optarg; break;
        case O_PORT: if ((rc = parse_count("--port", optarg, 1024, 65535, &u))) goto done; o.base_port = (unsigned)u; break;
        case O_OUT: o.out = optarg; break;
        case O_PREFIX: o.prefix = optarg; break;
        case O_SCRATCH: o.scratch = optarg; break;
        case O_KEEP: o.keep = 1; break;
        case O_REFERENCED: o.referenced = 1; break;
        case O_BASELINE: o.baseline = optarg; break;
        case O_JSON: o.json = 1; break;
        default: rc = cli_option_error(VERB, c, argv); goto done;
        }
    }
    if (optind < argc) { rc = cli_usage(VERB, "unexpected argument '%s'", argv[optind]); goto done; }
    if (o.duration <= 0 && o.ledgers == 0) {
        rc = cli_usage(VERB, "--duration 0 needs --ledgers N (the run must end)");
        goto done;
    }
    if (o.duration <= 0 || (o.ledgers && (double)o.ledgers * o.interval < o.duration))
        o.duration = (double)o.ledgers * o.interval;
    if (!warmup_given) o.warmup = 0.2 * o.duration;
    if (o.warmup >= o.duration) {
        rc = cli_usage(VERB, "--warmup %g must be shorter than the run (%g s)", o.warmup, o.duration);
        goto done;
    }
    /* The variants: the built-in names in the list, then the customs. */
    for (size_t i = 0; i < ncustom; i++) {
        char name[64];
        const char *eq = strchr(customs[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - customs[i]), customs[i]);
        for (size_t b = 0; b < sizeof builtins / sizeof *builtins; b++)
            if (strcmp(builtins[b].name, name) == 0) {
                rc = cli_usage(VERB, "--custom '%s': '%s' is a built-in variant's name", customs[i], name);
                goto done;
            }
    }
    {
        char list[512], *save = NULL;
        snprintf(list, sizeof list, "%s", variants);
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            const char *spec = NULL;
            for (size_t b = 0; b < sizeof builtins / sizeof *builtins; b++)
                if (strcmp(builtins[b].name, t) == 0) spec = builtins[b].spec;
            for (size_t i = 0; i < ncustom && !spec; i++) {
                const char *eq = strchr(customs[i], '=');
                if ((size_t)(eq - customs[i]) == strlen(t) && strncmp(customs[i], t, strlen(t)) == 0) spec = eq + 1;
            }
            if (spec == NULL) {
                rc = cli_usage(VERB, "--variant '%s' is not a variant (trim, notrim, every2, every4, freed8m, "
                                     "freed64m, freepct10, mmap16k, jemalloc, or a --custom NAME)", t);
                goto done;
            }
            if ((rc = variant_add(&o, t, spec))) goto done;
        }
        for (size_t i = 0; i < ncustom; i++) {      /* customs not named in --variant run too */
            char name[64];
            const char *eq = strchr(customs[i], '=');
            snprintf(name, sizeof name, "%.*s", (int)(eq - customs[i]), customs[i]);
            if ((rc = variant_add(&o, name, eq + 1))) goto done;
        }
    }
    if (o.nv == 0) { rc = cli_usage(VERB, "--variant '%s' names no variant", variants); goto done; }
    for (size_t i = 0; i < o.nv; i++) if (strcmp(o.v[i].name, o.baseline) == 0) base_i = i;
    /* tided: --tided, or next to this tide. */
    if (o.tided == NULL) {
        ssize_t n = readlink("/proc/self/exe", tided_buf, sizeof tided_buf - 8);
        if (n > 0) {
            char *slash;
            tided_buf[n] = '\0';
            slash = strrchr(tided_buf, '/');
            if (slash) strcpy(slash + 1, "tided");
            o.tided = tided_buf;
        } else {
            o.tided = "./bin/tided";
        }
    }
    if (access(o.tided, X_OK) != 0) {
        rc = cli_error(VERB, "tided not found at %s (%s): build it with 'make', or give --tided PATH",
                       o.tided, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < o.nv; i++)
        for (int e = 0; e < o.v[i].nenv; e++)
            if (strncmp(o.v[i].env[e], "LD_PRELOAD=", 11) == 0 && access(o.v[i].env[e] + 11, R_OK) != 0) {
                rc = cli_error(VERB, "variant '%s' preloads %s, which is missing (%s); install libjemalloc2 "
                                     "or give --jemalloc PATH", o.v[i].name, o.v[i].env[e] + 11, strerror(errno));
                goto done;
            }
    if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
        rc = cli_error(VERB, "--out %s: %s", o.out, strerror(errno));
        goto done;
    }
    if (o.scratch) {
        if (mkdir(o.scratch, 0755) != 0 && errno != EEXIST) {
            rc = cli_error(VERB, "--scratch %s: %s", o.scratch, strerror(errno));
            goto done;
        }
        snprintf(scratch, sizeof scratch, "%s", o.scratch);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/tide-lab-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(scratch) == NULL) { rc = cli_error(VERB, "mkdtemp %s: %s", scratch, strerror(errno)); goto done; }
        scratch_made = 1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) { rc = cli_error(VERB, "curl_global_init failed"); goto done; }
    curl_ready = 1;
    nseries = o.nv * o.repeat;
    series = calloc(nseries, sizeof *series);
    sums = calloc(o.nv, sizeof *sums);
    if (!series || !sums) { rc = cli_error(VERB, "out of memory"); goto done; }

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    sigs_set = 1;
    g_signal = 0;

    fprintf(stderr, "tide lab: %zu variants x %u repetitions, %g s each (warm-up %g s), scratch %s\n",
            o.nv, o.repeat, o.duration, o.warmup, scratch);
    for (unsigned rep = 1; rep <= o.repeat && rc == 0; rep++) {
        rc = run_rep(&o, scratch, rep, series + (size_t)(rep - 1) * o.nv, &interrupted, stderr);
        if (interrupted) {
            fprintf(stderr, "tide lab: interrupted by %s; stopped every node; writing what was measured\n",
                    strsignal(g_signal));
            break;
        }
    }
    if (rc && !interrupted) {
        fprintf(stderr, "tide lab: the run failed; the stores and logs are kept in %s\n", scratch);
        scratch_made = 0;
        goto done;
    }

    /* Figures per variant and repetition. */
    for (size_t i = 0; i < o.nv; i++) {
        double plate[128];
        sums[i].fig = calloc(o.repeat, sizeof *sums[i].fig);
        sums[i].reduction = calloc(o.repeat, sizeof *sums[i].reduction);
        if (!sums[i].fig || !sums[i].reduction) { rc = cli_error(VERB, "out of memory"); goto done; }
        for (unsigned r = 0; r < o.repeat; r++) {
            tide_lab_series *s = &series[(size_t)r * o.nv + i];
            if (tide_lab_figures_compute(s, o.warmup, &sums[i].fig[r]) != 0) { rc = cli_error(VERB, "out of memory"); goto done; }
            sums[i].samples += sums[i].fig[r].samples;
            sums[i].trims += sums[i].fig[r].trims;
            plate[r] = sums[i].fig[r].plateau_mean_rss;
        }
        sums[i].plateau_median = median_of(plate, o.repeat);
    }
    for (size_t i = 0; i < o.nv; i++) {
        for (unsigned r = 0; r < o.repeat; r++) {
            double b = base_i != (size_t)-1 ? sums[base_i].fig[r].plateau_mean_rss : NAN;
            sums[i].reduction[r] = (isnan(b) || b <= 0) ? NAN : 100.0 * (b - sums[i].fig[r].plateau_mean_rss) / b;
        }
        sums[i].reduction_median = median_of(sums[i].reduction, o.repeat);
    }

    /* The files. */
    snprintf(path, sizeof path, "%s/%s-rss.csv", o.out, o.prefix);
    if ((f = fopen(path, "w")) == NULL || tide_lab_write_rss_csv(f, series, nseries) != 0) {
        rc = cli_error(VERB, "%s: cannot write: %s", path, strerror(errno)); goto done;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/%s-sweeps.csv", o.out, o.prefix);
    if ((f = fopen(path, "w")) == NULL || tide_lab_write_sweeps_csv(f, series, nseries) != 0) {
        rc = cli_error(VERB, "%s: cannot write: %s", path, strerror(errno)); goto done;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/%s-rss.svg", o.out, o.prefix);
    {
        char title[256];
        tide_lab_chart ch = { title, o.command, o.warmup, o.duration };
        snprintf(title, sizeof title, "tided RSS under the same ledger workload, by variant (%u repetition%s, "
                 "sweep every %u s)", o.repeat, o.repeat > 1 ? "s" : "", o.sweep_interval);
        if ((f = fopen(path, "w")) == NULL || tide_lab_write_svg(f, series, nseries, &ch) != 0) {
            rc = cli_error(VERB, "%s: cannot write: %s", path, strerror(errno)); goto done;
        }
    }
    fclose(f);
    f = NULL;

    /* The summary document (also written next to the CSVs). */
    {
        struct utsname un;
        json_t *vars = json_array();
        double load[3] = { 0, 0, 0 };
        uname(&un);
        (void)getloadavg(load, 3);
        for (size_t i = 0; i < o.nv; i++) {
            json_t *reps = json_array();
            for (unsigned r = 0; r < o.repeat; r++) {
                json_t *x = figures_json(&sums[i].fig[r], sums[i].reduction[r]);
                json_object_set_new(x, "rep", json_integer(r + 1));
                json_object_set_new(x, "port", json_integer(series[(size_t)r * o.nv + i].port));
                json_array_append_new(reps, x);
            }
            json_array_append_new(vars, json_pack("{s:s,s:s,s:I,s:I,s:o,s:o,s:o}",
                "name", o.v[i].name, "spec", o.v[i].spec,
                "samples", (json_int_t)sums[i].samples, "trims", (json_int_t)sums[i].trims,
                "plateau_mean_rss_median_bytes", jbytes(sums[i].plateau_median),
                "reduction_pct_median", jnum(sums[i].reduction_median), "repetitions", reps));
        }
        doc = json_pack("{s:s,s:{s:I,s:s,s:s,s:I,s:[f,f,f]},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:f,s:f,s:I,s:s,s:s,s:b},"
                        "s:s,s:o,s:{s:s,s:s,s:s},s:b}",
            "command", o.command,
            "machine", "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "kernel", un.release,
            "glibc", gnu_get_libc_version(), "page_size", (json_int_t)sysconf(_SC_PAGESIZE),
            "loadavg_at_end", load[0], load[1], load[2],
            "settings", "seed", (json_int_t)o.w.seed, "objects_per_ledger", (json_int_t)o.w.objects,
            "reads_per_ledger", (json_int_t)o.w.reads, "wave_ledgers", (json_int_t)o.w.wave_period,
            "wave_pct", (json_int_t)o.w.wave_pct, "inner_pct", (json_int_t)o.w.inner_pct,
            "recent_pct", (json_int_t)o.w.recent_pct, "ledger_interval_s", o.interval,
            "ledgers", (json_int_t)o.ledgers, "clients", (json_int_t)o.clients,
            "duration_s", o.duration, "warmup_s", o.warmup, "repeat", (json_int_t)o.repeat,
            "node_size", o.node_size, "node_args", o.node_args ? o.node_args : "", "referenced", o.referenced,
            "baseline", o.baseline, "variants", vars,
            "files", "rss_csv", "", "sweeps_csv", "", "svg", "",
            "interrupted", interrupted);
        {
            json_t *files = json_object_get(doc, "files");
            snprintf(path, sizeof path, "%s/%s-rss.csv", o.out, o.prefix);
            json_object_set_new(files, "rss_csv", json_string(path));
            snprintf(path, sizeof path, "%s/%s-sweeps.csv", o.out, o.prefix);
            json_object_set_new(files, "sweeps_csv", json_string(path));
            snprintf(path, sizeof path, "%s/%s-rss.svg", o.out, o.prefix);
            json_object_set_new(files, "svg", json_string(path));
        }
        snprintf(path, sizeof path, "%s/%s-summary.json", o.out, o.prefix);
        if (json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0) {
            rc = cli_error(VERB, "%s: cannot write", path);
            goto done;
        }
    }
    if (o.json) {
        char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (s) { puts(s); free(s); }
    } else {
        printf("%s\n", o.command);
        printf("%zu variants x %u repetition%s of %g s, plateau after %g s; %u objects (wave: +-%u%% over %u "
               "ledgers) + %u reads per ledger every %g s from %u client threads; seed %llu\n",
               o.nv, o.repeat, o.repeat > 1 ? "s" : "", o.duration, o.warmup, o.w.objects, o.w.wave_pct,
               o.w.wave_period, o.w.reads, o.interval, o.clients, (unsigned long long)o.w.seed);
        printf("\n%-14s %9s %8s %11s %7s %7s %7s %7s %7s %8s %7s\n", "variant", "plateau", "vs", "trims/",
               "lowered", "release", "release", "trim", "trim", "minflt", "freed");
        printf("%-14s %9s %8s %11s %7s %7s %7s %7s %7s %8s %7s\n", "", "MiB", o.baseline, "sweeps", "RSS", "med MiB",
               "max MiB", "med ms", "p95 ms", "/trim", "med MiB");
        for (size_t i = 0; i < o.nv; i++) {
            tide_lab_figures m = sums[i].fig[0];
            int base = i == base_i;     /* its own reduction is no figure */
            if (o.repeat > 1) {     /* the medians line first, then each repetition */
                m.plateau_mean_rss = sums[i].plateau_median;
                print_row(stdout, o.v[i].name, &m, base ? NAN : sums[i].reduction_median);
                for (unsigned r = 0; r < o.repeat; r++) {
                    char label[48];
                    snprintf(label, sizeof label, "  rep %u", r + 1);
                    print_row(stdout, label, &sums[i].fig[r], base ? NAN : sums[i].reduction[r]);
                }
            } else {
                print_row(stdout, o.v[i].name, &m, base ? NAN : sums[i].reduction[0]);
            }
        }
        if (o.repeat > 1) printf("(a variant's first line: plateau and reduction are medians over the repetitions; "
                                 "the trim columns are repetition 1's)\n");
        printf("\nfiles: %s/%s-rss.csv, %s-sweeps.csv, %s-rss.svg, %s-summary.json\n", o.out, o.prefix,
               o.prefix, o.prefix, o.prefix);
    }
    if (interrupted) rc = CLI_FAIL;

done:
    if (f) fclose(f);
    json_decref(doc);
    if (sums) for (size_t i = 0; i < o.nv; i++) free(sums[i].fig), free(sums[i].reduction);
    free(sums);
    if (series) for (size_t i = 0; i < nseries; i++) tide_lab_series_free(&series[i]);
    free(series);
    if (scratch_made && !o.keep) rmdir(scratch);
    else if (o.keep && scratch[0] && rc == 0) fprintf(stderr, "tide lab: stores and logs kept in %s\n", scratch);
    if (curl_ready) curl_global_cleanup();
    if (sigs_set) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
    }
    for (size_t i = 0; i < o.nv; i++) variant_free(&o.v[i]);
    return rc;
}
