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
 * The store pool. Every PUT, and every GET or HEAD the node
 * cache cannot answer (tide_node_get_cached), is a job of the store pool:
 * store_workers threads sharing one queue, so a loop never waits for a
 * key-file read, a data-file read or an insert pool that is full behind a
 * commit. The queue holds at most store_queue jobs, PUTs at most 3/4 of
 * it (put_cap; the rest is the reads' reserve, so a write burst does not
 * shed GET misses); the loop reserves a slot (tided_pool_reserve) before
 * it makes the job, and when none is left answers 503 with Retry-After,
 * so a slow disk sheds load instead of growing memory. A PUT ?sync=1 whose put
 * stored the value (or found the key) goes on from the store thread to
 * the sync worker, still a PUT job, without a trip through its loop, so
 * the sync rule above holds: the job is queued after its put returned.
 * A job's kind never changes: the sync worker takes PUT jobs, and the
 * loop answers a PUT by what its put and, with ?sync=1, its sync did.
 *
 * The hop's cost (a profile of tided under PUTs alone, perf record -g:
 * 35 % of its samples under futex calls, 30 % in the scheduler's task
 * switch; malloc 3 %, the body copy 1 %, the message back 3 %). A job
 * queued alone, with a
 * pthread_cond_signal under the lock, woke a thread that at once waited
 * for the lock the loop still held: two wakes and two context switches
 * per PUT, and the four threads and the loops fought over one mutex
 * (the reservation, a stop check per job). So the hop is batched at
 * every step, each job still its own node call and its own answer (no
 * coalescing: each is its own key):
 *   - a loop stages the jobs of one turn of its event loop (the requests
 *     of every connection that was readable) and hands them over together
 *     after the turn (tided_pool_flush, loop.c): one lock;
 *   - wakes are counted: a thread is signalled only when one sleeps and
 *     the queue's batches are not covered by the wakes already on their
 *     way (a batch per GET, one per STORE_PUT_SHARE_MIN PUTs), and after
 *     the unlock; a taker signals as many as what it left needs, so one
 *     batch may wake several threads, and a signal may find the queue
 *     empty (a running thread took the jobs first): the thread sleeps
 *     again;
 *   - a thread takes a batch: a GET alone (a read may wait for the disk,
 *     so no job waits behind it and it waits behind none), or the PUTs in
 *     a row at the head, as many as its share of the queued PUTs with the
 *     idle threads, ceil(PUTs / (idle + 1)), at least STORE_PUT_SHARE_MIN
 *     (4) and at most TIDED_STORE_BATCH_MAX (16). So the GET misses of one
 *     turn run on as many threads as are idle (4 on 4), 20 PUTs keep 4
 *     threads busy, and only while no thread sleeps, or for the first 4
 *     PUTs, does one thread run several: a PUT is quick unless the insert
 *     pool is full behind a commit, and then every PUT waits for it
 *     whichever thread runs it, while the wake per PUT saved is most of
 *     the hop's cost (PERFORMANCE.md);
 *   - each answer goes back as soon as its job ran: h2o's queue to the
 *     loop writes its pipe only when it was empty, so answers that come
 *     faster than the loop drains them share one wake already. (Holding a
 *     batch's answers to send one message per loop was tried: no CPU
 *     saving bench/loop could see, and an answer held through the next
 *     PUT's wait for the insert pool: PUT p99 2.2x.)
 *   - the slots (depth, PUTs' depth) are one atomic word, reserved by a
 *     compare-and-swap, and the stop flag is an atomic: no lock per job.
 * A job keeps its slot until its thread starts it, so the jobs of a batch
 * not started yet still count as waiting: memory stays bounded by
 * store_queue jobs waiting plus one running per thread, as before.
 *
 * A PUT's body is the job's own copy (value): h2o frees the request, and
 * its body with it, when the client goes away, which may happen while the
 * job is at a worker; the copy is counted in the "http" account and the
 * body budget (reserved before it is made, tided_body_reserve) until the
 * worker has put it and freed it.
 *
 * Stop. The pool is stopped after the loops drained (a loop stages only
 * inside a turn and flushes after it, so nothing is staged then): the
 * gate (the test hook) opens, waiting GETs, in the queue or in a taken
 * batch, are sent back unrun (their connections are closing), waiting
 * PUTs are run before the final commit, unless the stop was hurried
 * (srv->stop_hurried): then they go back unrun too, never acknowledged.
 *
 * Invariants:
 *   1. A job is in exactly one place: its loop's staged list, the
 *      worker's queue, a thread's batch, or the loop's message list.
 *   2. Every job pushed is sent back, also when the worker is stopping
 *      (stop drains the queue first, and a thread finishes its batch).
 *   3. The store pool's depth is the number of slots reserved for jobs
 *      being made, staged, queued or in a batch not started yet, and never
 *      exceeds cap; of it, the PUTs' never exceeds put_cap.
 *   4. wakes <= idle: a thread is signalled only while one sleeps that no
 *      signal is on its way to; and after every push and every take, while
 *      a thread sleeps, the queue's batches (one per GET, one per
 *      STORE_PUT_SHARE_MIN PUTs) are covered by the wakes on their way: no
 *      job waits for a sleeper.
 *   5. A batch holds one GET, or PUTs only: a GET never waits behind
 *      another job of its batch, nor a PUT behind a GET.
 *   6. gate_fd is -1 or the descriptor this worker opened (the pool's
 *      gate), from its start to its stop, which closes it once and sets
 *      -1. Every worker starts from worker_init, which sets -1: the stop
 *      runs while other threads open descriptors (sd_notify's socket for
 *      the stop's STATUS lines), so closing a number the worker does not
 *      own closes theirs.
 *
 * Never: touch a job's req or guard (they belong to the loop thread); read
 * a request's body on a worker; close a descriptor the worker did not open.
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
/* PUTs a thread takes at least when it can (pool_take): a PUT is quick
 * unless the insert pool is full behind a commit, and then every PUT waits
 * for that commit whichever thread runs it; one wake per PUT was most of
 * the hop's cost (PERFORMANCE.md). */
#define STORE_PUT_SHARE_MIN 4
/* The pool's slots word: depth in the low 32 bits, the PUTs' in the high. */
#define SLOT_PUT (1ull << 32)
#define SLOT_DEPTH(v) ((v) & 0xffffffffull)
#define SLOT_PUTS(v) ((v) >> 32)

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
    struct tided_job_rotate *r = &job->u.rotate;
    tide_gens_info gi;
    int rc;

    TIDE_ASSERT(job->kind == TIDED_JOB_ROTATE);
    memset(&r->rotation, 0, sizeof r->rotation);
    tide_node_gens_info(node, &gi);
    r->gens_enabled = gi.enabled;
    if (r->keep_only) {
        rc = tide_node_keep_at(node, r->keys, r->nkeys, &r->rotation, &r->rotations);
    } else if (r->has_expect) {
        rc = tide_node_rotate_expect(node, r->expect, "admin", &r->rotation, &r->rotations);
        if (rc == 1) r->stale = 1, rc = 0;
    } else {
        rc = tide_node_rotate_keep(node, r->keys, r->nkeys, "admin", &r->rotation);
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
    if (w->kind == TIDED_WORKER_ROTATE) {
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
    if (w->kind == TIDED_WORKER_SYNC) {
        rc = tide_node_sync(w->srv->node);
        if (rc) {
            snprintf(detail, sizeof detail, "%s", tide_last_error());
            tide_log(TIDE_LOG_ERROR, "sync for %zu request(s) failed: %s: %s", count, tide_strerror(rc),
                     detail);
        }
    } else if (w->kind == TIDED_WORKER_SWEEP) {
        tide_node_sweep(w->srv->node, &report);
    } else if (w->kind == TIDED_WORKER_HEAP) {
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
        if (batch->kind == TIDED_JOB_SWEEP) {
            batch->u.sweep.report = report;
        } else if (batch->kind == TIDED_JOB_METRICS || batch->kind == TIDED_JOB_HEAP) {
            batch->u.page.heap_kind = heap_kind;
            batch->u.page.family = family;
            if (text && next == NULL) {     /* the last job takes the text itself */
                batch->u.page.text = text;
                batch->u.page.text_len = text_len;
                text = NULL;
            } else if (text) {              /* the others a copy each: the loops free them apart */
                batch->u.page.text = malloc(text_len + 1);
                if (batch->u.page.text)
                    memcpy(batch->u.page.text, text, text_len + 1), batch->u.page.text_len = text_len;
            }
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
    if (job->kind != TIDED_JOB_PUT || job->u.put.value == NULL) return;
    free(job->u.put.value);
    job->u.put.value = NULL;
    tide_mem_account_free(TIDE_MEM_HTTP, job->u.put.value_held);
    atomic_fetch_sub(&job->loop->srv->body_in_handlers, (unsigned long long)job->u.put.value_held);
    job->u.put.value_held = 0;
}

/* The pool's stop, read without its lock (every job checks it). */
static int pool_stopping(tided_worker *w)
{
    return atomic_load_explicit(&w->halt, memory_order_acquire);
}

/* The test hook: wait for the test's byte (tests/test_http_store_workers.c), or for the
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

/* Give back a slot: a job started, or a reservation cancelled. */
static void slot_release(tided_worker *w, int put)
{
    unsigned long long old = atomic_fetch_sub(&w->slots, put ? SLOT_PUT + 1 : 1);

    TIDE_ASSERT(SLOT_DEPTH(old) > 0 && (!put || SLOT_PUTS(old) > 0));
}

/* At stop a queued GET's client is being closed, and a PUT past the hurry
 * point was never acknowledged: both go back unrun, so nothing
 * acknowledged is lost and nobody waits for a read nobody reads. 1 when
 * dropped (the caller sends it back). */
static int drop_at_stop(tided_worker *w, tided_job *job)
{
    if (!pool_stopping(w)) return 0;
    if (job->kind == TIDED_JOB_PUT && !atomic_load(&w->srv->stop_hurried)) return 0;
    job->rc = TIDE_ECLOSED;
    if (job->kind == TIDED_JOB_PUT) job->u.put.put_rc = TIDE_ECLOSED;
    snprintf(job->detail, sizeof job->detail, "tided is stopping: the %s was not run",
             job->kind == TIDED_JOB_PUT ? "PUT" : "read");
    value_free(job);
    atomic_fetch_add(&w->dropped, 1);
    return 1;
}

/* One store job on a pool thread: the node call. 1 when the job goes back
 * to its loop, 0 when it went on to the sync worker (a PUT ?sync=1 that
 * stored or found the key). */
static int run_store(tided_worker *w, tided_job *job)
{
    tided_server *srv = w->srv;

    if (drop_at_stop(w, job)) return 1;
    if (job->kind == TIDED_JOB_GET) {
        tide_cache_obj *stale = job->u.get.obj;

        job->u.get.obj = NULL;
        job->rc = tide_node_get_miss(srv->node, job->u.get.key, stale, &job->u.get.obj);
        if (job->rc != 0 && job->rc != TIDE_ENOTFOUND)
            snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
        return 1;
    }
    TIDE_ASSERT(job->kind == TIDED_JOB_PUT);
    job->u.put.put_rc = tide_node_put(srv->node, job->u.put.key, job->u.put.value, job->u.put.len);
    if (job->u.put.put_rc != 0 && job->u.put.put_rc != TIDE_EEXIST)
        snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
    value_free(job);
    if (job->u.put.sync && (job->u.put.put_rc == 0 || job->u.put.put_rc == TIDE_EEXIST)) {
        if (srv->sync_worker.started) {
            tided_worker_push(&srv->sync_worker, job);
            return 0;
        }
        job->rc = tide_err_set(TIDE_ECLOSED, "no sync worker runs here");
        snprintf(job->detail, sizeof job->detail, "%s", tide_last_error());
    }
    return 1;
}

/* A batch on a pool thread: each job its own node call, in order, and its
 * answer sent as soon as it ran (the essay says why not held for one
 * message per batch). A job leaves the queue's depth when it starts, so
 * the jobs behind it in the batch still count as waiting. */
static void run_store_batch(tided_worker *w, tided_job **batch, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tided_job *job = batch[i];

        slot_release(w, job->kind == TIDED_JOB_PUT);
        atomic_fetch_add(&w->running, 1);
        if (w->gate_fd >= 0) gate_wait(w);
        if (run_store(w, job)) send_back(job);
        atomic_fetch_sub(&w->running, 1);
    }
}

/* How many idle threads to wake for the queue: one per batch it holds (a
 * GET, or STORE_PUT_SHARE_MIN PUTs) not yet covered by a wake on its way, never more than are idle (none when the
 * wakes sent cover it). A woken thread takes its share (pool_take), so
 * the queue is spread over every idle thread and none sleeps while a job
 * waits behind another. Under mu, which counts the wakes; the caller
 * signals after unlocking (a thread woken under the lock would only wait
 * for it again). */
static unsigned wakes_needed(tided_worker *w)
{
    size_t batches = w->queued - w->queued_puts
                     + (w->queued_puts + STORE_PUT_SHARE_MIN - 1) / STORE_PUT_SHARE_MIN;
    unsigned n = 0;

    TIDE_ASSERT(w->wakes <= w->idle);
    while (w->wakes < w->idle && w->wakes < batches) {
        w->wakes++;
        n++;
    }
    return n;
}

static void wake(tided_worker *w, unsigned n)
{
    while (n-- > 0) pthread_cond_signal(&w->cv);
}

/* Queue the list head..tail (n jobs, `puts` of them PUTs):
 * one lock, then the wakes it needs. */
static void pool_push(tided_worker *w, tided_job *head, tided_job *tail, size_t n, size_t puts)
{
    unsigned wakes;

    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = head;
    else w->head = head;
    w->tail = tail;
    w->queued += n;
    w->queued_puts += puts;
    w->copies += puts;
    wakes = wakes_needed(w);
    pthread_mutex_unlock(&w->mu);
    wake(w, wakes);
}

/* Take a batch from the queue's head: a GET alone (a read may wait for
 * the disk: nothing waits behind it, and it never waits behind a PUT), or
 * the PUTs in a row there, at most the taker's share: the queued PUTs
 * shared by this thread and the idle ones (ceil(PUTs / (idle + 1)),
 * within STORE_PUT_SHARE_MIN..TIDED_STORE_BATCH_MAX). Under mu. */
static size_t pool_take(tided_worker *w, tided_job **batch)
{
    size_t n = 0, puts = 0, share = (w->queued_puts + w->idle) / (w->idle + 1u);

    if (share < STORE_PUT_SHARE_MIN) share = STORE_PUT_SHARE_MIN;
    if (share > TIDED_STORE_BATCH_MAX) share = TIDED_STORE_BATCH_MAX;
    while (w->head && n < share) {
        tided_job *job = w->head;

        if (n > 0 && job->kind == TIDED_JOB_GET) break;
        w->head = job->next;
        job->next = NULL;
        batch[n++] = job;
        if (job->kind == TIDED_JOB_GET) {
            w->gets++;
            break;
        }
        w->puts++;
        puts++;
    }
    if (w->head == NULL) w->tail = NULL;
    TIDE_ASSERT(w->queued >= n && w->queued_puts >= puts);
    w->queued -= n;
    w->queued_puts -= puts;
    w->batches++;
    w->jobs += n;
    return n;
}

static void *pool_main(void *arg)
{
    tided_worker *w = arg;
    tided_job *batch[TIDED_STORE_BATCH_MAX];

    pthread_mutex_lock(&w->mu);
    for (;;) {
        unsigned wakes;
        size_t n;

        while (w->head == NULL && !w->stop) {
            w->idle++;
            pthread_cond_wait(&w->cv, &w->mu);
            w->idle--;
            if (w->wakes > 0) w->wakes--;
        }
        if (w->head == NULL) break;                 /* stopping, and drained */
        n = pool_take(w, batch);
        wakes = wakes_needed(w);                    /* for what it left */
        pthread_mutex_unlock(&w->mu);
        wake(w, wakes);
        run_store_batch(w, batch, n);
        pthread_mutex_lock(&w->mu);
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

/* The state every worker starts from, the pool too: nothing queued, no
 * thread, and no descriptor (invariant 6: a zeroed gate_fd would be
 * descriptor 0, which the stop would close). */
static void worker_init(tided_worker *w, tided_server *srv, const char *name, enum tided_worker_kind kind)
{
    memset(w, 0, sizeof *w);
    w->name = name;
    w->kind = kind;
    w->srv = srv;
    w->gate_fd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

int tided_worker_start(tided_worker *w, tided_server *srv, const char *name, enum tided_worker_kind kind)
{
    int rc = 0, err;

    worker_init(w, srv, name, kind);
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

    TIDE_ASSERT(threads >= 1 && cap >= 1 && cap <= 0xffffffffu);
    worker_init(w, srv, "store", TIDED_WORKER_STORE);
    w->cap = cap;
    w->put_cap = cap * 3 / 4 ? cap * 3 / 4 : 1;
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
    unsigned long long v = atomic_load(&w->slots), want;

    do {
        if (SLOT_DEPTH(v) >= w->cap || (put && SLOT_PUTS(v) >= w->put_cap)) {
            atomic_fetch_add(&w->refused, 1);
            return -1;
        }
        want = v + (put ? SLOT_PUT + 1 : 1);
    } while (!atomic_compare_exchange_weak(&w->slots, &v, want));
    return 0;
}

void tided_pool_cancel(tided_worker *w, int put)
{
    slot_release(w, put);
}

void tided_pool_submit(tided_worker *w, tided_loop *l, tided_job *job)
{
    int put = job->kind == TIDED_JOB_PUT;

    job->next = NULL;
    if (!l->staging) {
        pool_push(w, job, job, 1, (size_t)put);
        return;
    }
    if (l->staged_tail) l->staged_tail->next = job;
    else l->staged_head = job;
    l->staged_tail = job;
    l->staged++;
    l->staged_puts += (size_t)put;
}

void tided_pool_flush(tided_worker *w, tided_loop *l)
{
    if (l->staged_head == NULL) return;
    pool_push(w, l->staged_head, l->staged_tail, l->staged, l->staged_puts);
    l->staged_head = l->staged_tail = NULL;
    l->staged = l->staged_puts = 0;
}

void tided_job_free(tided_job *job)
{
    switch (job->kind) {
    case TIDED_JOB_PUT:     value_free(job); break;
    case TIDED_JOB_GET:     tide_cache_obj_release(job->u.get.obj); break;
    case TIDED_JOB_METRICS:
    case TIDED_JOB_HEAP:    free(job->u.page.text); break;
    case TIDED_JOB_ROTATE:  free(job->u.rotate.keys); break;
    case TIDED_JOB_SWEEP:   break;
    }
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
    atomic_store_explicit(&w->halt, 1, memory_order_release);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->tids) {
        for (unsigned i = 0; i < w->nthreads; i++) pthread_join(w->tids[i], NULL);
        free(w->tids);
        w->tids = NULL;
        w->nthreads = 0;
        /* Invariants 2 and 3: every job taken was started (its slot given
         * back) and sent back, those dropped unrun too. */
        TIDE_ASSERT(w->head == NULL && w->queued == 0);
        TIDE_ASSERT(SLOT_DEPTH(atomic_load(&w->slots)) == 0);
        if (atomic_load(&w->dropped) > 0)
            tide_log(TIDE_LOG_INFO, "store pool stopped: %llu job(s) sent back unrun",
                     (unsigned long long)atomic_load(&w->dropped));
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
    uint64_t gets, puts, copies, batches;
    unsigned long long slots = atomic_load(&w->slots);

    pthread_mutex_lock(&w->mu);
    gets = w->gets;
    puts = w->puts;
    copies = w->copies;
    batches = w->batches;
    pthread_mutex_unlock(&w->mu);
    tide_metrics_family(mw, "tide_http_store_queue_depth", "gauge",
                        "Store jobs (PUTs, GET misses) waiting for a store worker.");
    tide_metrics_sample(mw, "tide_http_store_queue_depth", NULL, 0, (double)SLOT_DEPTH(slots));
    tide_metrics_family(mw, "tide_http_store_queue_capacity", "gauge",
                        "store_queue: store jobs that may wait at most; past it the request is 503.");
    tide_metrics_sample(mw, "tide_http_store_queue_capacity", NULL, 0, (double)w->cap);
    tide_metrics_family(mw, "tide_http_store_workers", "gauge", "store_workers: threads running store jobs.");
    tide_metrics_sample(mw, "tide_http_store_workers", NULL, 0, (double)w->nthreads);
    tide_metrics_family(mw, "tide_http_store_jobs_running", "gauge", "Store jobs a store worker is running now.");
    tide_metrics_sample(mw, "tide_http_store_jobs_running", NULL, 0, (double)atomic_load(&w->running));
    tide_metrics_family(mw, "tide_http_store_jobs_total", "counter",
                        "Store jobs a store worker took, by kind: PUTs (put) and GETs or HEADs the node "
                        "cache could not answer on the event loop (get).");
    tide_metrics_sample(mw, "tide_http_store_jobs_total", get_label, 1, (double)gets);
    tide_metrics_sample(mw, "tide_http_store_jobs_total", put_label, 1, (double)puts);
    tide_metrics_family(mw, "tide_http_store_batches_total", "counter",
                        "Batches of store jobs the store workers took (a GET alone, or up to 16 PUTs): one "
                        "lock each (tide_http_store_jobs_total / this is the mean batch).");
    tide_metrics_sample(mw, "tide_http_store_batches_total", NULL, 0, (double)batches);
    tide_metrics_family(mw, "tide_http_store_jobs_refused_total", "counter",
                        "Store jobs refused because store_queue were waiting, or for a PUT 3/4 of it were "
                        "PUTs (answered 503 overloaded).");
    tide_metrics_sample(mw, "tide_http_store_jobs_refused_total", NULL, 0, (double)atomic_load(&w->refused));
    tide_metrics_family(mw, "tide_http_store_body_copies_total", "counter",
                        "PUT bodies copied for a store job (each counted against http_body_budget while "
                        "the job holds it); a PUT refused first is never copied.");
    tide_metrics_sample(mw, "tide_http_store_body_copies_total", NULL, 0, (double)copies);
    tide_metrics_family(mw, "tide_http_store_queue_put_capacity", "gauge",
                        "PUTs that may wait at most: 3/4 of store_queue; the rest is kept for GET misses.");
    tide_metrics_sample(mw, "tide_http_store_queue_put_capacity", NULL, 0, (double)w->put_cap);
}
