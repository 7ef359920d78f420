/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * work.c: the worker threads that wait for the disk so the event loops
 * never do.
 *
 * tide_node_sync blocks for up to one commit (about a second) and
 * tide_node_sweep for the caches' sweeps plus one malloc_trim (tens to
 * hundreds of milliseconds). A PUT ?sync=1 or a POST /v1/admin/sweep
 * therefore becomes a tided_job that the loop hands to a worker; the
 * worker makes the call and sends the job back to the loop's h2o queue,
 * and the loop answers the request (api.c).
 *
 * Coalescing: the worker takes every job queued so far as one batch, makes
 * one call, and answers the whole batch with its result. A sync job is
 * queued only after its put returned, so a tide_node_sync that starts after
 * the job was queued covers that put: one sync serves every request queued
 * before it started. Jobs queued while it runs wait for the next call.
 *
 * GET /v1/admin/heap is a job of the heap worker: the allocator's report
 * (a jemalloc prof.dump written to a file and read back, or glibc's
 * malloc_info walking every arena) takes milliseconds to seconds. Requests
 * queued together share one report.
 *
 * GET /metrics is a job too: rendering reads /proc and asks the allocator
 * for its statistics (glibc's walk every arena under its lock: tens of
 * milliseconds on a large heap), which must not stall a loop. Scrapes
 * queued together share one render.
 *
 * A POST /v1/admin/rotate or /v1/admin/keep is a job of the rotate
 * worker, never coalesced: each request carries its own keep-list and is
 * its own rotation or piece (the node serialises it with its rotator
 * thread).
 *
 * There are five workers, one per kind, so a slow trim or rotation never
 * delays a durable PUT or a scrape.
 *
 * The store pool (issue 15). Every PUT, and every GET or HEAD the node
 * cache cannot answer (tide_node_get_cached), is a job of the store pool:
 * store_workers threads sharing one queue, each taking one job at a time
 * (no coalescing: each is its own key), so a loop never waits for a
 * key-file read, a data-file read or an insert pool that is full behind a
 * commit. The queue holds at most store_queue jobs, PUTs at most 3/4 of
 * it (put_cap; the rest is the reads' reserve, so a write burst does not
 * shed GET misses); the loop reserves a slot (tided_pool_reserve) before
 * it makes the job, and when none is left answers 503 with Retry-After,
 * so a slow disk sheds load instead of growing memory. A PUT ?sync=1 whose put
 * stored the value (or found the key) goes on from the store thread to
 * the sync worker as a sync job, without a trip through its loop, so the
 * sync rule above holds: the job is queued after its put returned.
 *
 * A PUT's body is the job's own copy (value): h2o frees the request, and
 * its body with it, when the client goes away, which may happen while the
 * job is at a worker; the copy is counted in the "http" account and the
 * body budget (reserved before it is made, tided_body_reserve) until the
 * worker has put it and freed it.
 *
 * Stop. The pool is stopped after the loops drained: the gate (the test
 * hook) opens, queued GETs are sent back unrun (their connections are
 * closing), queued PUTs are run before the final commit, unless the stop
 * was hurried (srv->stop_hurried): then they go back unrun too, never
 * acknowledged.
 *
 * Invariants:
 *   1. A job is in exactly one place: the worker's queue, the worker's
 *      current batch, or the loop's message list.
 *   2. Every job pushed is sent back, also when the worker is stopping
 *      (stop drains the queue first).
 *   3. The store pool's depth is the number of jobs in its queue plus the
 *      slots reserved for jobs being made, and never exceeds cap; of it,
 *      put_depth are PUTs', never more than put_cap.
 *
 * Never: touch a job's req or guard (they belong to the loop thread); read
 * a request's body on a worker.
 */
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem/account.h"
#include "mem/alloc.h"
#include "node/metrics.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

/* How often a gated store thread looks at the stop flag (the test hook). */
#define GATE_POLL_MS 50

static void send_back(tided_job *job)
{
    h2o_multithread_send_message(&job->loop->done_rx, &job->msg);
}

/* A rotate job alone: its keep-list copied forward, then the rotation
 * (POST /v1/admin/rotate); or only the keep-list, one piece
 * (POST /v1/admin/keep); or the rotation only while the manifest's count
 * is the one expected (rotate?expect=R). Nothing is shared between two
 * jobs: two requests are two rotations. */
static void run_rotate(tided_worker *w, tided_job *job)
{
    tide_node *node = w->srv->node;
    tide_gens_info gi;
    int rc;

    memset(&job->rotation, 0, sizeof job->rotation);
    tide_node_gens_info(node, &gi);
    job->gens_enabled = gi.enabled;
    if (job->keep_only) {
        rc = tide_node_keep_at(node, job->keys, job->nkeys, &job->rotation, &job->rotations);
    } else if (job->has_expect) {
        rc = tide_node_rotate_expect(node, job->expect, "admin", &job->rotation, &job->rotations);
        if (rc == 1) job->stale = 1, rc = 0;
    } else {
        rc = tide_node_rotate_keep(node, job->keys, job->nkeys, "admin", &job->rotation);
    }
    job->rc = rc;
    if (rc) snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
}

static void run_batch(tided_worker *w, tided_job *batch, size_t count, uint64_t seq)
{
    tide_node_sweep_report report;
    char detail[256] = "", *text = NULL;
    size_t text_len = 0;
    int rc = 0, heap_kind = 0, family = 0;

    memset(&report, 0, sizeof report);
    if (w->kind == TIDED_JOB_ROTATE) {
        while (batch) {
            tided_job *next = batch->next;
            batch->next = NULL;
            run_rotate(w, batch);
            batch->batch = seq;
            batch->batch_size = 1;
            send_back(batch);
            batch = next;
        }
        return;
    }
    if (w->kind == TIDED_JOB_SYNC) {
        rc = tide_node_sync(w->srv->node);
        if (rc) {
            snprintf(detail, sizeof detail, "%s", tide_last_error());
            tide_log(TIDE_LOG_ERROR, "sync for %zu request(s) failed: %s: %s", count, tide_strerror(rc),
                     detail);
        }
    } else if (w->kind == TIDED_JOB_SWEEP) {
        tide_node_sweep(w->srv->node, &report);
    } else if (w->kind == TIDED_JOB_HEAP) {
        family = tide_mem_alloc_family();
        rc = tide_mem_alloc_heap_report(family, NULL, &text, &text_len, &heap_kind);
        if (rc) snprintf(detail, sizeof detail, "%s: %s", tide_strerror(rc), tide_last_error());
    } else {
        rc = tided_metrics_render(w->srv, &text, &text_len);
        if (rc) snprintf(detail, sizeof detail, "%s", tide_strerror(rc));
    }
    while (batch) {
        tided_job *next = batch->next;
        batch->next = NULL;
        batch->rc = rc;
        batch->batch = seq;
        batch->batch_size = count;
        snprintf(batch->detail, sizeof batch->detail, "%s", detail);
        batch->report = report;
        batch->heap_kind = heap_kind;
        batch->family = family;
        if (text && next == NULL) {     /* the last job takes the text itself */
            batch->text = text;
            batch->text_len = text_len;
            text = NULL;
        } else if (text) {              /* the others a copy each: the loops free them apart */
            batch->text = malloc(text_len + 1);
            if (batch->text) memcpy(batch->text, text, text_len + 1), batch->text_len = text_len;
        }
        send_back(batch);
        batch = next;
    }
    free(text);
}

/* Give back what a put's body copy holds. Any thread (the counters are
 * atomic). */
static void value_free(tided_job *job)
{
    if (job->value == NULL) return;
    free(job->value);
    job->value = NULL;
    tide_mem_account_free(TIDE_MEM_HTTP, job->value_held);
    atomic_fetch_sub(&job->loop->srv->body_in_handlers, (unsigned long long)job->value_held);
    job->value_held = 0;
}

static int pool_stopping(tided_worker *w)
{
    int stop;

    pthread_mutex_lock(&w->mu);
    stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* The test hook: wait for the test's byte (tests/test_http.c), or for the
 * pool's stop, so a stop never waits for a test that holds the gate. A
 * broken gate opens it. */
static void gate_wait(tided_worker *w)
{
    char byte;

    while (!pool_stopping(w)) {
        struct pollfd p = { w->gate_fd, POLLIN, 0 };
        int n = poll(&p, 1, GATE_POLL_MS);
        if (n < 0 && errno == EINTR) continue;
        if (n != 0) {
            if (n > 0 && read(w->gate_fd, &byte, 1) != 1) { /* a broken gate opens it */ }
            return;
        }
    }
}

/* At stop a queued GET's client is being closed, and a PUT past the hurry
 * point was never acknowledged: both go back unrun, so nothing
 * acknowledged is lost and nobody waits for a read nobody reads. */
static int drop_at_stop(tided_worker *w, tided_job *job)
{
    if (!pool_stopping(w)) return 0;
    if (job->kind == TIDED_JOB_PUT && !atomic_load(&w->srv->stop_hurried)) return 0;
    job->rc = job->put_rc = TIDE_ECLOSED;
    snprintf(job->detail, sizeof job->detail, "tided is stopping: the %s was not run",
             job->kind == TIDED_JOB_PUT ? "PUT" : "read");
    value_free(job);
    pthread_mutex_lock(&w->mu);
    w->dropped++;
    pthread_mutex_unlock(&w->mu);
    send_back(job);
    return 1;
}

/* One store job on a pool thread: the node call, then back to the loop,
 * or on to the sync worker (a PUT ?sync=1 that stored or found the key). */
static void run_store(tided_worker *w, tided_job *job)
{
    tided_server *srv = w->srv;

    if (w->gate_fd >= 0) gate_wait(w);
    if (drop_at_stop(w, job)) return;
    if (job->kind == TIDED_JOB_GET) {
        job->rc = tide_node_get(srv->node, job->key, &job->obj);
        if (job->rc != 0 && job->rc != TIDE_ENOTFOUND)
            snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
    } else {
        job->put_rc = tide_node_put(srv->node, job->key, job->value, job->len);
        if (job->put_rc != 0 && job->put_rc != TIDE_EEXIST)
            snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
        value_free(job);
        if (job->sync && (job->put_rc == 0 || job->put_rc == TIDE_EEXIST)) {
            job->kind = TIDED_JOB_SYNC;
            if (srv->sync_worker.started) {
                tided_worker_push(&srv->sync_worker, job);
                return;
            }
            job->rc = tide_err_set(TIDE_ECLOSED, "no sync worker runs here");
            snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
        }
    }
    send_back(job);
}

static void *pool_main(void *arg)
{
    tided_worker *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        tided_job *job;

        while (w->head == NULL && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == NULL) break;                 /* stopping, and drained */
        job = w->head;
        w->head = job->next;
        if (w->head == NULL) w->tail = NULL;
        job->next = NULL;
        TIDE_ASSERT(w->depth > 0);
        w->depth--;
        if (job->kind == TIDED_JOB_PUT) {
            TIDE_ASSERT(w->put_depth > 0);
            w->put_depth--;
        }
        w->running++;
        w->batches++;
        w->jobs++;
        if (job->kind == TIDED_JOB_GET) w->gets++;
        else w->puts++;
        pthread_mutex_unlock(&w->mu);
        run_store(w, job);
        pthread_mutex_lock(&w->mu);
        w->running--;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void *worker_main(void *arg)
{
    tided_worker *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        tided_job *batch;
        size_t count = 0;
        uint64_t seq;

        while (w->head == NULL && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == NULL) break;                 /* stopping, and drained */
        batch = w->head;
        w->head = w->tail = NULL;
        for (tided_job *j = batch; j; j = j->next) count++;
        seq = ++w->batches;
        w->jobs += count;
        pthread_mutex_unlock(&w->mu);
        run_batch(w, batch, count, seq);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int tided_worker_start(tided_worker *w, tided_server *srv, const char *name, int kind)
{
    int rc = 0, err;

    memset(w, 0, sizeof *w);
    w->name = name;
    w->kind = kind;
    w->srv = srv;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    err = pthread_create(&w->tid, NULL, worker_main, w);
    if (err) {
        tide_log(TIDE_LOG_ERROR, "cannot start the %s worker thread: %s", name, strerror(err));
        rc = TIDE_ENOMEM;
        goto out;
    }
    w->started = 1;
out:
    return rc;
}

int tided_pool_start(tided_worker *w, tided_server *srv, unsigned threads, size_t cap)
{
    const char *gate = getenv("TIDE_TEST_STORE_GATE");
    int rc = 0, err;

    TIDE_ASSERT(threads >= 1 && cap >= 1);
    memset(w, 0, sizeof *w);
    w->name = "store";
    w->kind = TIDED_JOB_STORE;
    w->srv = srv;
    w->cap = cap;
    w->put_cap = cap * 3 / 4 ? cap * 3 / 4 : 1;
    w->gate_fd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    /* O_RDWR: the open does not wait for a writer, and a read waits for a
     * byte instead of seeing end of file while the test has it closed. */
    if (gate && *gate) {
        w->gate_fd = open(gate, O_RDWR | O_CLOEXEC);
        if (w->gate_fd < 0) tide_log(TIDE_LOG_WARN, "TIDE_TEST_STORE_GATE %s: %s", gate, strerror(errno));
    }
    w->tids = calloc(threads, sizeof *w->tids);
    if (w->tids == NULL) {
        rc = TIDE_ENOMEM;
        goto out;
    }
    w->started = 1;
    for (unsigned i = 0; i < threads; i++) {
        err = pthread_create(&w->tids[i], NULL, pool_main, w);
        if (err) {
            tide_log(TIDE_LOG_ERROR, "cannot start store worker thread %u of %u: %s", i + 1, threads,
                     strerror(err));
            rc = TIDE_ENOMEM;
            goto out;
        }
        w->nthreads++;
    }
out:
    if (rc) tided_worker_stop(w);
    return rc;
}

int tided_pool_reserve(tided_worker *w, int put)
{
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    if (w->depth >= w->cap || (put && w->put_depth >= w->put_cap)) {
        w->refused++;
        rc = -1;
    } else {
        w->depth++;
        if (put) w->put_depth++;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void tided_pool_cancel(tided_worker *w, int put)
{
    pthread_mutex_lock(&w->mu);
    TIDE_ASSERT(w->depth > 0 && (!put || w->put_depth > 0));
    w->depth--;
    if (put) w->put_depth--;
    pthread_mutex_unlock(&w->mu);
}

void tided_pool_enqueue(tided_worker *w, tided_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = job;
    else w->head = job;
    w->tail = job;
    if (job->kind == TIDED_JOB_PUT) w->copies++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void tided_job_free(tided_job *job)
{
    value_free(job);
    tide_cache_obj_release(job->obj);
    free(job->text);
    free(job->keys);
    free(job);
}

void tided_worker_push(tided_worker *w, tided_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = job;
    else w->head = job;
    w->tail = job;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void tided_worker_stop(tided_worker *w)
{
    if (!w->started) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->tids) {
        for (unsigned i = 0; i < w->nthreads; i++) pthread_join(w->tids[i], NULL);
        free(w->tids);
        w->tids = NULL;
        w->nthreads = 0;
    } else {
        pthread_join(w->tid, NULL);
    }
    if (w->gate_fd >= 0) close(w->gate_fd);
    w->gate_fd = -1;
    w->started = 0;
}

void tided_worker_counts(tided_worker *w, uint64_t *batches, uint64_t *jobs)
{
    pthread_mutex_lock(&w->mu);
    *batches = w->batches;
    *jobs = w->jobs;
    pthread_mutex_unlock(&w->mu);
}

void tided_pool_families(tided_worker *w, struct tide_metrics_writer *mw)
{
    static const char *const get_label[2] = { "kind", "get" }, *const put_label[2] = { "kind", "put" };
    uint64_t gets, puts, refused, copies;
    size_t depth, running;

    pthread_mutex_lock(&w->mu);
    depth = w->depth;
    running = w->running;
    gets = w->gets;
    puts = w->puts;
    refused = w->refused;
    copies = w->copies;
    pthread_mutex_unlock(&w->mu);
    tide_metrics_family(mw, "tide_http_store_queue_depth", "gauge",
                        "Store jobs (PUTs, GET misses) waiting for a store worker.");
    tide_metrics_sample(mw, "tide_http_store_queue_depth", NULL, 0, (double)depth);
    tide_metrics_family(mw, "tide_http_store_queue_capacity", "gauge",
                        "store_queue: store jobs that may wait at most; past it the request is 503.");
    tide_metrics_sample(mw, "tide_http_store_queue_capacity", NULL, 0, (double)w->cap);
    tide_metrics_family(mw, "tide_http_store_workers", "gauge", "store_workers: threads running store jobs.");
    tide_metrics_sample(mw, "tide_http_store_workers", NULL, 0, (double)w->nthreads);
    tide_metrics_family(mw, "tide_http_store_jobs_running", "gauge", "Store jobs a store worker is running now.");
    tide_metrics_sample(mw, "tide_http_store_jobs_running", NULL, 0, (double)running);
    tide_metrics_family(mw, "tide_http_store_jobs_total", "counter",
                        "Store jobs a store worker took, by kind: PUTs (put) and GETs or HEADs the node "
                        "cache could not answer on the event loop (get).");
    tide_metrics_sample(mw, "tide_http_store_jobs_total", get_label, 1, (double)gets);
    tide_metrics_sample(mw, "tide_http_store_jobs_total", put_label, 1, (double)puts);
    tide_metrics_family(mw, "tide_http_store_jobs_refused_total", "counter",
                        "Store jobs refused because store_queue were waiting, or for a PUT 3/4 of it were "
                        "PUTs (answered 503 overloaded).");
    tide_metrics_sample(mw, "tide_http_store_jobs_refused_total", NULL, 0, (double)refused);
    tide_metrics_family(mw, "tide_http_store_body_copies_total", "counter",
                        "PUT bodies copied for a store job (each counted against http_body_budget while "
                        "the job holds it); a PUT refused first is never copied.");
    tide_metrics_sample(mw, "tide_http_store_body_copies_total", NULL, 0, (double)copies);
    tide_metrics_family(mw, "tide_http_store_queue_put_capacity", "gauge",
                        "PUTs that may wait at most: 3/4 of store_queue; the rest is kept for GET misses.");
    tide_metrics_sample(mw, "tide_http_store_queue_put_capacity", NULL, 0, (double)w->put_cap);
}
