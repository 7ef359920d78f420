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
 * Invariants:
 *   1. A job is in exactly one place: the worker's queue, the worker's
 *      current batch, or the loop's message list.
 *   2. Every job pushed is sent back, also when the worker is stopping
 *      (stop drains the queue first).
 *
 * Never: touch a job's req or guard (they belong to the loop thread).
 */
#include "server/server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/alloc.h"
#include "tide/error.h"
#include "util/log.h"

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
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->tid, NULL);
    w->started = 0;
}

void tided_worker_counts(tided_worker *w, uint64_t *batches, uint64_t *jobs)
{
    pthread_mutex_lock(&w->mu);
    *batches = w->batches;
    *jobs = w->jobs;
    pthread_mutex_unlock(&w->mu);
}
