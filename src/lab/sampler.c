/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sampler.c: what the lab measures of its nodes: RSS (and Referenced) from
 * /proc/PID through mem/proc.h, and every sweep round from the node's
 * GET /v1/sweeps.
 *
 * The RSS sampler runs on the main thread every --sample-interval
 * seconds (one by default; 0.1 for the memory-limit runs); it reads statm,
 * which costs the node nothing it would notice. Referenced (--referenced)
 * comes from smaps_rollup, which makes the node's kernel walk its page
 * tables under its mmap lock, and its bits are cleared every tenth sample,
 * so it counts the pages touched in the last ten seconds or less.
 *
 * The sweep poller asks each node for the reports it keeps (its last
 * rounds) every 5 s and once more at the end; a round seen twice is kept
 * once (by seq, lab.c's series invariant 4), so overlapping polls lose
 * nothing and count nothing twice. A node with online delete is asked for
 * its rotations (GET /v1/rotations) the same way. Once the load has ended,
 * GET /v1/status gives each node's memory limit: the limit in
 * force, the level changes and the writes refused.
 *
 * Disk: each sample also walks the node's data directory and adds up the
 * sizes of the files under it (the generations' and the manifest's), so
 * that a node without online delete is measured the same way and the two
 * compare; a file that goes while the walk runs (a generation being
 * dropped) is skipped, not an error.
 *
 * Invariants:
 *   1. A sample is taken only of a node that runs (pid > 0), and a node
 *      whose statm cannot be read gives no sample rather than a zero.
 *   2. Sample times are seconds since the workload's start on the
 *      monotonic clock; sweep and rotation times come from the node's wall
 *      clock minus the workload's wall-clock start.
 *
 * Never: fail a run because a poll failed (the next poll gets the rounds).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab/runner_impl.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "util/err.h"

/* The sizes of the regular files under the directory fd (which it
 * closes), `depth` levels down at most. */
static uint64_t tree_bytes(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;
    uint64_t sum = 0;

    if (d == NULL) { close(fd); return 0; }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;   /* gone meanwhile */
        if (S_ISREG(st.st_mode)) sum += (uint64_t)st.st_size;
        else if (S_ISDIR(st.st_mode) && depth > 0) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub >= 0) sum += tree_bytes(sub, depth - 1);
        }
    }
    closedir(d);
    return sum;
}

/* The data directory's file bytes; 0 when it cannot be opened. */
static uint64_t dir_bytes(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? 0 : tree_bytes(fd, 3);
}

int ti_lab_sample_all(ti_lab_rep *r, double t, int reset_referenced)
{
    for (size_t k = 0; k < r->nn; k++) {
        ti_lab_node *n = &r->nodes[k];
        tide_lab_sample s = { .t = t - r->t0 };
        tide_mem_proc_smaps m;

        if (n->pid <= 0 || tide_mem_proc_pid_statm_rss(n->pid, &s.rss) != 0) continue;  /* invariant 1 */
        if (r->o->referenced && tide_mem_proc_pid_smaps_rollup_read(n->pid, &m) == 0) {
            s.referenced = m.referenced;
            if (reset_referenced) (void)tide_mem_proc_pid_reset_referenced(n->pid);
        }
        s.disk = dir_bytes(n->dir);
        if (s.t >= -0.05 && ti_lab_series_add_sample(n->series, &s) != 0)
            return tide_err_set(TIDE_ENOMEM, "out of memory for samples");
    }
    return 0;
}

static uint64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

/* One report of /v1/sweeps as a tide_lab_sweep. */
static void sweep_from_json(json_t *x, uint64_t t0_unix_us, tide_lab_sweep *s)
{
    json_t *t = json_object_get(x, "trim");

    memset(s, 0, sizeof *s);
    s->seq = jint(x, "seq");
    s->t = ((double)jint(x, "started_unix_us") - (double)t0_unix_us) / 1e6;     /* invariant 2 */
    s->sweep_ns = jint(x, "sweep_ns");
    s->freed_bytes = jint(x, "freed_bytes");
    s->trimmed = json_is_true(json_object_get(x, "trimmed"));
    s->trim_rc = (int)(int64_t)jint(x, "trim_rc");
    s->consumer_bytes = jint(x, "consumer_bytes");
    s->anon_rss = jint(x, "anon_rss_bytes");
    if (s->trimmed && json_is_object(t)) {
        s->rss_before = jint(t, "rss_before");
        s->rss_after = jint(t, "rss_after");
        s->rss_delta = (int64_t)jint(t, "rss_delta");
        s->duration_ns = jint(t, "duration_ns");
        s->minflt = jint(t, "minflt");
        s->majflt = jint(t, "majflt");
    }
}

/* What a poll does with one report of the array. 0 or -1. */
typedef int (*report_fn)(ti_lab_rep *r, ti_lab_node *n, json_t *x);

/* GET path of n; each element of the array under the answer's "reports"
 * (or the answer itself when it is an array) to f. 0 or -1. */
static int poll_reports(ti_lab_rep *r, ti_lab_node *n, const char *path, report_fn f)
{
    char url[128];
    tide_http_body b = { .keep = 1 };
    json_t *doc = NULL, *reps, *x;
    size_t i;
    int rc = -1;

    snprintf(url, sizeof url, "%s%s", n->base, path);
    if (tide_http_client_get(n->poll, url, &b) != 200 || b.data == NULL) goto out;
    doc = json_loadb(b.data, b.len, 0, NULL);
    reps = json_is_array(doc) ? doc : json_object_get(doc, "reports");
    if (!json_is_array(reps)) goto out;
    json_array_foreach(reps, i, x)
        if (f(r, n, x) != 0) goto out;
    rc = 0;
out:
    json_decref(doc);
    free(b.data);
    return rc;
}

static int add_sweep(ti_lab_rep *r, ti_lab_node *n, json_t *x)
{
    tide_lab_sweep s;
    sweep_from_json(x, r->t0_unix_us, &s);
    return ti_lab_series_add_sweep(n->series, &s) != 0 ? -1 : 0;
}

int ti_lab_poll_sweeps(ti_lab_rep *r, ti_lab_node *n)
{
    return poll_reports(r, n, "/v1/sweeps", add_sweep);
}

/* ---- rotations ---- */

/* One report of /v1/rotations as a tide_lab_rotation: the node's own
 * fields, and its "gens" object (what tide_gens_rotate did: the phases of
 * the rotation proper, what it dropped). */
static void rotation_from_json(json_t *x, uint64_t t0_unix_us, tide_lab_rotation *o)
{
    json_t *trim = json_object_get(x, "trim"), *trig = json_object_get(x, "trigger");
    json_t *g = json_object_get(x, "gens");

    memset(o, 0, sizeof *o);
    o->seq = jint(x, "seq");
    o->t = ((double)jint(x, "started_unix_us") - (double)t0_unix_us) / 1e6;      /* invariant 2 */
    snprintf(o->trigger, sizeof o->trigger, "%s", json_is_string(trig) ? json_string_value(trig) : "");
    o->rc = (int)(int64_t)jint(x, "rc");
    o->gate_ns = jint(x, "gate_wait_ns");
    o->total_ns = jint(x, "total_ns");
    o->trim_ns = jint(x, "trim_ns");
    o->trimmed = json_is_true(json_object_get(x, "trimmed"));
    if (json_is_object(g)) {
        o->dropped = (unsigned)jint(g, "dropped");
        o->deleted_bytes = jint(g, "deleted_bytes");
        o->objects_in_previous = jint(g, "objects_in_previous");
        o->create_ns = jint(g, "create_ns");
        o->manifest_ns = jint(g, "manifest_ns");
        o->switch_ns = jint(g, "switch_ns");
        o->drop_ns = jint(g, "drop_ns");
    }
    if (o->trimmed && json_is_object(trim)) {
        o->trim_rss_before = jint(trim, "rss_before");
        o->trim_rss_after = jint(trim, "rss_after");
        o->trim_rss_delta = (int64_t)jint(trim, "rss_delta");
    }
}

static int add_rotation(ti_lab_rep *r, ti_lab_node *n, json_t *x)
{
    tide_lab_rotation o;
    rotation_from_json(x, r->t0_unix_us, &o);
    return ti_lab_series_add_rotation(n->series, &o) != 0 ? -1 : 0;
}

int ti_lab_poll_rotations(ti_lab_rep *r, ti_lab_node *n)
{
    return poll_reports(r, n, "/v1/rotations", add_rotation);
}

/* ---- the memory limit ---- */

int ti_lab_poll_status(ti_lab_rep *r, ti_lab_node *n)
{
    char url[128];
    tide_http_body b = { .keep = 1 };
    json_t *doc = NULL, *m;
    tide_lab_requests *q = &n->series->req;
    int rc = -1;

    (void)r;
    snprintf(url, sizeof url, "%s/v1/status", n->base);
    if (tide_http_client_get(n->poll, url, &b) != 200 || b.data == NULL) goto out;
    doc = json_loadb(b.data, b.len, 0, NULL);
    m = json_object_get(doc, "memory_limit");
    if (!json_is_object(m)) goto out;
    q->status_read = 1;
    q->status_limit = jint(m, "limit_bytes");
    q->level_changes = jint(m, "level_changes");
    q->rejected_writes = jint(m, "rejected_writes");
    q->rejected_requests = jint(json_object_get(m, "rejected_requests"), "write")
                         + jint(json_object_get(m, "rejected_requests"), "body");
    rc = 0;
out:
    json_decref(doc);
    free(b.data);
    return rc;
}
