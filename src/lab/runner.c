/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * runner.c: the lab's run: prepare, the repetitions, and one repetition.
 *
 * For each repetition the runner starts one tided per variant at once, on
 * loopback, each on a fresh store in the scratch directory; drives all of
 * them with the same ledger-like workload (load.c) from several client
 * threads; samples every node's RSS and data directory size every
 * --sample-interval (a second by default) and collects every sweep round, and every rotation of a node with online
 * delete (sampler.c); and stops the nodes (node.c). One repetition is five
 * steps, in this order:
 *
 *     rep_layout    the order (variants shuffled by seed and repetition),
 *                   each node's paths, port and polling client
 *     rep_start     spawn every node, wait until each answers /healthz
 *     rep_load      start the client threads, signals blocked in them
 *     rep_measure   the main loop: deaths, samples, polls, the end
 *     rep_stop      stop the clients, the last poll, the counts, then
 *                   every node, and the stores removed unless kept
 *
 * Invariants:
 *   1. Every node of a repetition gets the same ops (load.c invariant 1),
 *      in an order shuffled per repetition, so that no variant is always
 *      first on the wire.
 *   2. Every child started is stopped before tide_lab_run_all returns:
 *      SIGTERM, up to 15 s of waiting, then SIGKILL and a blocking wait.
 *      Children also get PR_SET_PDEATHSIG, so a lab killed with SIGKILL
 *      leaves no node behind.
 *   3. SIGINT and SIGTERM only set a flag; the main loop sees it within a
 *      second (its naps are cut short by the signal), stops the clients and
 *      the nodes, and the run returns with what it has.
 *   4. A node that dies mid-run fails the run: its variant, pid, status and
 *      the tail of its log are reported, the other nodes are stopped, and
 *      the scratch directory is kept.
 *   5. With plan->heartbeat > 0 the report gets one line per heartbeat
 *      period of the workload's clock, at k x heartbeat for every k with
 *      k x heartbeat within the run (the check comes before the loop's end
 *      test, and a late loop catches up in one go, never skips one):
 *      k x heartbeat and the planned seconds (the ledgers' time when
 *      --duration is 0), the repetition, and each variant's last RSS
 *      sample, so a long run is seen alive (ti_lab_heartbeats).
 *
 * Never: exec a shell, leave a child running, or treat a failed request
 * as fatal (it is counted; a dead node is what fails the run).
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab/runner_impl.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

/* The signal that interrupted the run, 0 while none has (set by on_signal). */
static volatile sig_atomic_t lab_signal;

static void on_signal(int sig) { lab_signal = sig; }

void ti_lab_say(FILE *f, const char *fmt, ...)
{
    va_list ap;

    if (f == NULL) return;
    fputs("tide lab: ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

double ti_lab_now(void)
{
    return (double)tide_clock_mono_ns() / 1e9;
}

void ti_lab_nap(double s)
{
    struct timespec ts;

    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);      /* unlike tide_clock_sleep_us, a signal ends it (invariant 3) */
}

/* ---- prepare ------------------------------------------------------------------ */

/* plan->tided, or tided next to this executable. */
static int find_tided(tide_lab_run *r)
{
    const tide_lab_plan *p = r->plan;

    if (p->tided) {
        snprintf(r->tided, sizeof r->tided, "%s", p->tided);
    } else {
        ssize_t n = readlink("/proc/self/exe", r->tided, sizeof r->tided - 8);
        char *slash;
        if (n > 0) {
            r->tided[n] = '\0';
            slash = strrchr(r->tided, '/');
            if (slash) strcpy(slash + 1, "tided");
        } else {
            snprintf(r->tided, sizeof r->tided, "./bin/tided");
        }
    }
    if (access(r->tided, X_OK) != 0)
        return tide_err_set(TIDE_ENOENT, "tided not found at %s (%s): build it with 'make', or give --tided PATH",
                            r->tided, strerror(errno));
    for (size_t i = 0; i < p->nv; i++)
        for (int e = 0; e < p->v[i].nenv; e++)
            if (strncmp(p->v[i].env[e], "LD_PRELOAD=", 11) == 0 && access(p->v[i].env[e] + 11, R_OK) != 0)
                return tide_err_set(TIDE_ENOENT, "variant '%s' preloads %s, which is missing (%s); install "
                                    "libjemalloc2 or give --jemalloc PATH", p->v[i].name, p->v[i].env[e] + 11,
                                    strerror(errno));
    return 0;
}

/* plan->out, and the scratch directory (plan->scratch or a new one). */
static int make_dirs(tide_lab_run *r)
{
    const tide_lab_plan *p = r->plan;

    if (mkdir(p->out, 0755) != 0 && errno != EEXIST)
        return tide_err_set(TIDE_EIO, "--out %s: %s", p->out, strerror(errno));
    if (p->scratch) {
        if (mkdir(p->scratch, 0755) != 0 && errno != EEXIST)
            return tide_err_set(TIDE_EIO, "--scratch %s: %s", p->scratch, strerror(errno));
        snprintf(r->scratch, sizeof r->scratch, "%s", p->scratch);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(r->scratch, sizeof r->scratch, "%s/tide-lab-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(r->scratch) == NULL)
            return tide_err_set(TIDE_EIO, "mkdtemp %s: %s", r->scratch, strerror(errno));
        r->scratch_made = 1;
    }
    return 0;
}

int tide_lab_run_prepare(tide_lab_run *r, const tide_lab_plan *plan)
{
    int rc;

    memset(r, 0, sizeof *r);
    r->plan = plan;
    if ((rc = find_tided(r)) || (rc = make_dirs(r))) return rc;
    if ((rc = tide_http_global_init())) return rc;
    r->http_ready = 1;
    r->nseries = plan->nv * plan->repeat;
    r->series = calloc(r->nseries, sizeof *r->series);
    if (r->series == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory");
    return 0;
}

/* ---- one repetition ---------------------------------------------------------------- */

typedef struct rep_state {
    ti_lab_rep    r;
    ti_lab_node   nodes[TIDE_LAB_MAX_VARIANTS];
    ti_lab_client clients[TIDE_LAB_MAX_CLIENTS];
    unsigned      rep;              /* 1-based */
    int           interrupted;
} rep_state;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* The order, each node's paths, port and polling client. */
static int rep_layout(rep_state *s, const char *scratch, tide_lab_series *series)
{
    const tide_lab_plan *o = s->r.o;
    const tide_http_client_opts poll_opts = { NULL, 5000, 5000 };
    size_t order[TIDE_LAB_MAX_VARIANTS], nn = s->r.nn;

    for (size_t i = 0; i < nn; i++) order[i] = i;
    for (size_t i = nn; i > 1; i--) {          /* Fisher-Yates (invariant 1) */
        size_t j = tide_random_mix64(tide_random_mix64(o->w.seed) ^ (s->rep * 0x9e3779b1u + i)) % i, t;
        t = order[i - 1]; order[i - 1] = order[j]; order[j] = t;
    }
    for (size_t k = 0; k < nn; k++) {
        ti_lab_node *n = &s->nodes[k];
        n->v = &o->v[order[k]];
        n->series = &series[order[k]];
        snprintf(n->series->variant, sizeof n->series->variant, "%s", n->v->name);
        n->series->rep = s->rep;
        n->series->rotating = tide_lab_variant_rotates(n->v, o->node_args);
        n->series->limit_bytes = tide_lab_variant_limit(n->v, o->node_args);
        if (snprintf(n->dir, sizeof n->dir, "%s/r%u-%s", scratch, s->rep, n->v->name) >= (int)sizeof n->dir
            || snprintf(n->log, sizeof n->log, "%s/r%u-%s.log", scratch, s->rep, n->v->name) >= (int)sizeof n->log) {
            ti_lab_say(o->report, "the scratch directory's path is too long: %s", scratch);
            return TIDE_EINVAL;
        }
        if (o->base_port) {
            int want = (int)(o->base_port + k);
            if (want > 65535 || ti_lab_port_probe(want, &n->port) != 0) {
                ti_lab_say(o->report, "127.0.0.1:%d is busy or cannot be bound (%s); give another --port",
                           want, want > 65535 ? "above 65535" : strerror(errno));
                return TIDE_EIO;
            }
        } else if (ti_lab_port_probe(0, &n->port) != 0) {
            ti_lab_say(o->report, "no free loopback port: %s", strerror(errno));
            return TIDE_EIO;
        }
        n->series->port = n->port;
        snprintf(n->base, sizeof n->base, "http://127.0.0.1:%d", n->port);
        if (tide_http_client_new(&n->poll, &poll_opts) != 0) {
            ti_lab_say(o->report, "curl_easy_init failed");
            return TIDE_ENOMEM;
        }
    }
    return 0;
}

/* Wait until node n answers /healthz (or dies, or 30 s pass). */
static int rep_wait_ready(rep_state *s, ti_lab_node *n)
{
    const tide_lab_plan *o = s->r.o;
    double until = ti_lab_now() + 30;
    char url[96];

    snprintf(url, sizeof url, "%s/healthz", n->base);
    for (;;) {
        if (lab_signal) { s->interrupted = 1; return TIDE_EIO; }
        if (ti_lab_node_died(n, o->report, 1)) {
            ti_lab_say(o->report, "the node of variant '%s' did not start (was 127.0.0.1:%d free? is %s a tided?)",
                       n->v->name, n->port, s->r.tided);
            return TIDE_EIO;
        }
        if (tide_http_client_get(n->poll, url, NULL) == 200) return 0;
        if (ti_lab_now() > until) {
            ti_lab_say(o->report, "the node of variant '%s' did not answer %s within 30 s", n->v->name, url);
            ti_lab_log_tail(o->report, n->log, 15);
            return TIDE_EIO;
        }
        ti_lab_nap(0.05);
    }
}

/* Spawn every node, then wait for each. */
static int rep_start(rep_state *s)
{
    const tide_lab_plan *o = s->r.o;
    int rc;

    for (size_t k = 0; k < s->r.nn; k++)
        if ((rc = ti_lab_node_spawn(&s->r, &s->nodes[k]))) return rc;
    for (size_t k = 0; k < s->r.nn; k++)
        if ((rc = rep_wait_ready(s, &s->nodes[k]))) return rc;
    if (o->report) {
        fprintf(o->report, "tide lab: repetition %u of %u:", s->rep, o->repeat);
        for (size_t k = 0; k < s->r.nn; k++)
            fprintf(o->report, " %s=pid %d port %d", s->nodes[k].v->name, (int)s->nodes[k].pid, s->nodes[k].port);
        fputc('\n', o->report);
    }
    return 0;
}

/* The clients, with the signals blocked so that they reach the main thread. */
static void rep_load(rep_state *s)
{
    sigset_t block, old;

    s->r.t0 = ti_lab_now() + 0.2;
    s->r.t0_unix_us = tide_clock_real_us() + 200000;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (unsigned c = 0; c < s->r.o->clients; c++) {
        s->clients[c].rep = &s->r;
        s->clients[c].id = c;
        if (pthread_create(&s->clients[c].th, NULL, ti_lab_client_main, &s->clients[c]) == 0)
            s->clients[c].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The sweeps of n, and its rotations when it rotates. */
static void rep_poll(rep_state *s, ti_lab_node *n)
{
    (void)ti_lab_poll_sweeps(&s->r, n);
    if (n->series->rotating) (void)ti_lab_poll_rotations(&s->r, n);
}

unsigned ti_lab_heartbeats(FILE *f, const tide_lab_plan *o, unsigned rep, double elapsed, unsigned done,
                           const char *rss)
{
    double planned = o->duration > 0 ? o->duration : (double)o->ledgers * o->interval;
    unsigned due;

    if (o->duration > 0 && elapsed > o->duration) elapsed = o->duration;   /* a beat past the end: not in the run */
    if (!(o->heartbeat > 0) || elapsed < o->heartbeat) return done;
    due = (unsigned)floor(elapsed / o->heartbeat);
    for (; done < due; done++)
        if (f) fprintf(f, "tide lab: %.0f/%.0f s, repetition %u/%u, RSS:%s\n", (done + 1) * o->heartbeat, planned,
                       rep, o->repeat, rss);
    if (f) fflush(f);
    return done;
}

/* Invariant 5: the heartbeat lines due at t after `done`, each with every
 * variant's last RSS sample in the plan's order ("?" for a node not
 * sampled yet). Returns the beats written in all. */
static unsigned rep_heartbeat(const rep_state *s, double t, unsigned done)
{
    const tide_lab_plan *o = s->r.o;
    char rss[TIDE_LAB_MAX_VARIANTS * 96] = "";
    size_t len = 0;

    if (ti_lab_heartbeats(NULL, o, s->rep, t - s->r.t0, done, "") == done) return done;
    for (size_t i = 0; i < o->nv && len < sizeof rss; i++)
        for (size_t k = 0; k < s->r.nn; k++) {
            const tide_lab_series *x = s->nodes[k].series;
            if (s->nodes[k].v != &o->v[i]) continue;
            if (x->nsamples == 0)
                len += (size_t)snprintf(rss + len, sizeof rss - len, " %s ?", o->v[i].name);
            else
                len += (size_t)snprintf(rss + len, sizeof rss - len, " %s %.1f MiB", o->v[i].name,
                                        (double)x->samples[x->nsamples - 1].rss / 1048576.0);
        }
    return ti_lab_heartbeats(o->report, o, s->rep, t - s->r.t0, done, rss);
}

/* The main loop: a sample every sample_interval on the workload's clock,
 * a poll every 5 s, a heartbeat every plan->heartbeat seconds, until the
 * end, a death or a signal. Referenced bits are cleared every 10 s
 * whatever the interval. */
static int rep_measure(rep_state *s)
{
    const tide_lab_plan *o = s->r.o;
    double end = s->r.t0 + o->duration, next_sample = s->r.t0, next_poll = s->r.t0 + 5;
    unsigned beats = 0, tick = 0, per_reset = (unsigned)fmax(1.0, round(10.0 / o->sample_interval));

    for (;;) {
        double t = ti_lab_now();
        int all_done = 1;
        if (lab_signal) { s->interrupted = 1; return 0; }
        for (size_t k = 0; k < s->r.nn; k++)
            if (ti_lab_node_died(&s->nodes[k], o->report, 1)) return TIDE_EIO;     /* invariant 4 */
        if (t >= next_sample) {
            if (ti_lab_sample_all(&s->r, t, tick % per_reset == per_reset - 1) != 0) {
                ti_lab_say(o->report, "%s", tide_last_error());
                return TIDE_ENOMEM;
            }
            tick++;
            next_sample += o->sample_interval;
            if (next_sample < t) next_sample = t + o->sample_interval;   /* late: no burst of samples */
        }
        if (t >= next_poll) {
            for (size_t k = 0; k < s->r.nn; k++) rep_poll(s, &s->nodes[k]);
            next_poll += 5.0;
        }
        beats = rep_heartbeat(s, t, beats);          /* before the end: invariant 5 */
        for (unsigned c = 0; c < o->clients; c++)
            if (s->clients[c].started && pthread_tryjoin_np(s->clients[c].th, NULL) == 0) s->clients[c].started = 0;
        for (unsigned c = 0; c < o->clients; c++) all_done &= !s->clients[c].started;
        if (o->duration > 0 && t >= end) return 0;
        if (all_done && t >= s->r.t0 + (double)o->ledgers * o->interval) return 0;
        ti_lab_nap(fmin(fmin(next_sample, next_poll), o->heartbeat > 0 ? s->r.t0 + (beats + 1) * o->heartbeat
                                                                        : next_poll) - ti_lab_now() + 0.001);
    }
}

/* The client threads' counts of n into its series. */
static void rep_counts(ti_lab_node *n, double load_s)
{
    tide_lab_requests *q = &n->series->req;

    q->puts = atomic_load(&n->puts);
    q->puts_existing = atomic_load(&n->puts_existing);
    q->puts_shed = atomic_load(&n->puts_shed);
    q->put_errors = atomic_load(&n->put_errors);
    q->gets = atomic_load(&n->gets);
    q->gets_missing = atomic_load(&n->gets_missing);
    q->get_errors = atomic_load(&n->get_errors);
    q->bad_length = atomic_load(&n->bad_length);
    q->get_ns = atomic_load(&n->get_ns);
    q->load_s = load_s;
    n->series->written_bytes = atomic_load(&n->put_bytes);
}

/* Stop the clients, poll once more (and the status), report the counts
 * (rc: how the measuring ended). */
static void rep_unload(rep_state *s, int rc)
{
    const tide_lab_plan *o = s->r.o;
    double load_s;

    atomic_store(&s->r.stop, 1);
    for (unsigned c = 0; c < o->clients; c++)
        if (s->clients[c].started) pthread_join(s->clients[c].th, NULL), s->clients[c].started = 0;
    load_s = ti_lab_now() - s->r.t0;
    for (size_t k = 0; k < s->r.nn; k++) {
        ti_lab_node *n = &s->nodes[k];
        if (n->pid > 0) {
            rep_poll(s, n);
            if (ti_lab_poll_status(&s->r, n) == 0 && n->series->req.status_limit)
                n->series->limit_bytes = n->series->req.status_limit;   /* a cgroup's too */
        }
        rep_counts(n, load_s);
        n->series->req.late = atomic_load(&s->r.late);
        n->series->req.ledger_shares = atomic_load(&s->r.ledgers) * o->clients;
    }
    if (rc == 0)
        ti_lab_say(o->report, "repetition %u done: %llu ledgers, %llu late ledger shares", s->rep,
                   (unsigned long long)atomic_load(&s->r.ledgers), (unsigned long long)atomic_load(&s->r.late));
    for (size_t k = 0; k < s->r.nn; k++) {
        ti_lab_node *n = &s->nodes[k];
        ti_lab_say(o->report, "  %-10s %llu PUT (%llu existing, %llu shed), %llu GET (%llu absent), "
                              "%llu errors, %llu wrong lengths", n->v->name,
                   (unsigned long long)atomic_load(&n->puts), (unsigned long long)atomic_load(&n->puts_existing),
                   (unsigned long long)atomic_load(&n->puts_shed),
                   (unsigned long long)atomic_load(&n->gets), (unsigned long long)atomic_load(&n->gets_missing),
                   (unsigned long long)atomic_load(&n->errors), (unsigned long long)atomic_load(&n->bad_length));
    }
}

/* Every node stopped (invariant 2); the stores and logs removed after a
 * good repetition unless kept. */
static void rep_stop(rep_state *s, int rc)
{
    const tide_lab_plan *o = s->r.o;

    ti_lab_nodes_stop(s->nodes, s->r.nn, o->report);
    for (size_t k = 0; k < s->r.nn; k++) {
        tide_http_client_free(s->nodes[k].poll);
        s->nodes[k].poll = NULL;
        if (!o->keep && rc == 0 && s->nodes[k].dir[0]) nftw(s->nodes[k].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (!o->keep && rc == 0 && s->nodes[k].log[0]) unlink(s->nodes[k].log);
    }
}

/* Run repetition `rep` (1-based); series[i] receives variant i's data.
 * Returns 0, or TIDE_E* when a node failed to start or died (reported);
 * sets *interrupted when a signal stopped it (the series then hold what
 * was measured until then). Every node is stopped before it returns. */
static int run_rep(tide_lab_run *run, unsigned rep, tide_lab_series *series, int *interrupted)
{
    rep_state *s = calloc(1, sizeof *s);
    int rc;

    if (s == NULL) { ti_lab_say(run->plan->report, "out of memory"); return TIDE_ENOMEM; }
    s->r.o = run->plan;
    s->r.tided = run->tided;
    s->r.nodes = s->nodes;
    s->r.nn = run->plan->nv;
    s->rep = rep;
    rc = rep_layout(s, run->scratch, series);
    if (rc == 0) rc = rep_start(s);
    if (rc == 0) {
        rep_load(s);
        rc = rep_measure(s);
        rep_unload(s, rc);
    }
    rep_stop(s, rc);
    *interrupted = s->interrupted;
    if (s->interrupted && rc == 0) rc = TIDE_EIO;
    free(s);
    return rc;
}

/* ---- the repetitions ------------------------------------------------------------------ */

static void signals_catch(tide_lab_run *r)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &r->old_int);
    sigaction(SIGTERM, &sa, &r->old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &r->old_pipe);
    r->sigs_set = 1;
    lab_signal = 0;
}

int tide_lab_run_all(tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    int rc = 0;

    signals_catch(r);
    ti_lab_say(o->report, "%zu variants x %u repetitions, %g s each (warm-up %g s), scratch %s",
               o->nv, o->repeat, o->duration, o->warmup, r->scratch);
    for (unsigned rep = 1; rep <= o->repeat && rc == 0; rep++) {
        rc = run_rep(r, rep, r->series + (size_t)(rep - 1) * o->nv, &r->interrupted);
        if (r->interrupted) {
            r->signal = lab_signal;
            ti_lab_say(o->report, "interrupted by %s; stopped every node; writing what was measured",
                       strsignal(r->signal));
            return 0;
        }
    }
    if (rc) {
        ti_lab_say(o->report, "the run failed; the stores and logs are kept in %s", r->scratch);
        r->scratch_made = 0;
    }
    return rc;
}

void tide_lab_run_finish(tide_lab_run *r, int ok)
{
    const tide_lab_plan *o = r->plan;

    if (o == NULL) return;
    for (size_t i = 0; r->series && i < r->nseries; i++) ti_lab_series_free(&r->series[i]);
    free(r->series);
    r->series = NULL;
    if (r->scratch_made && !o->keep) rmdir(r->scratch);
    else if (o->keep && r->scratch[0] && ok) ti_lab_say(o->report, "stores and logs kept in %s", r->scratch);
    if (r->http_ready) tide_http_global_cleanup();
    r->http_ready = 0;
    if (r->sigs_set) {
        sigaction(SIGINT, &r->old_int, NULL);
        sigaction(SIGTERM, &r->old_term, NULL);
        sigaction(SIGPIPE, &r->old_pipe, NULL);
        r->sigs_set = 0;
    }
}
