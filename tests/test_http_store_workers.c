/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_store_workers.c: tided's store workers (src/server/work.c),
 * end to end. A PUT, and a GET the node cache cannot answer, run on a
 * store worker while the event loop answers cached GETs; the store queue
 * is bounded, keeps a quarter for reads and answers 503 with Retry-After
 * when full; a queued PUT's copy of its body counts against the body
 * budget; a ?sync=1 PUT is answered only after its put and sync; a stop
 * with jobs queued or a batch in flight runs the unrun PUTs (or, hurried,
 * drops them, never acknowledged) and loses no acknowledged one; a client
 * gone while its PUT is at a worker leaves it stored once; jobs taken as
 * one batch are answered job by job, and one turn's jobs spread over the
 * idle store threads.
 *
 * The worker waits for a byte on a FIFO before each job (the test hook
 * TIDE_TEST_STORE_GATE), so the test decides when a job may run and what
 * the loop answers meanwhile is seen by events (the /metrics gauges the
 * test polls), never by time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"
#include "promcheck.h"

/* ---- a tided whose store worker waits at a gate -------------------------- */

/* --store-workers for the next store_gated_start_with (1 unless a test
 * sets it, and sets it back). */
static const char *gated_workers = "--store-workers=1";

/* A tided with one loop, one store worker (gated_workers) and a queue of
 * `queue`, whose worker waits for a byte on the FIFO *gate before each job
 * (TIDE_TEST_STORE_GATE): the test decides when a store job may run, so
 * what the loop answers meanwhile is seen by events, not by time. *gate is
 * the FIFO's write end. */
static void store_gated_start_with(tided *t, int *gate, const char *queue, const char *extra1, const char *extra2)
{
    static char flag_queue[64], env_gate[740], pub[] = "TIDE_METRICS_PUBLIC=1";
    static const char *flags[6];
    char *env[] = { pub, env_gate, NULL };
    char fifo[700];

    flags[0] = "--http-threads=1";
    flags[1] = gated_workers;
    flags[2] = flag_queue;
    flags[3] = extra1;
    flags[4] = extra1 ? extra2 : NULL;
    flags[5] = NULL;
    memset(t, 0, sizeof *t);
    tided_prepare(t);
    th_path(fifo, sizeof fifo, t->dir, "gate");
    if (mkfifo(fifo, 0600) != 0) fail_msg("mkfifo %s: %s", fifo, strerror(errno));
    snprintf(flag_queue, sizeof flag_queue, "--store-queue=%s", queue);
    snprintf(env_gate, sizeof env_gate, "TIDE_TEST_STORE_GATE=%s", fifo);
    tided_start(t, flags, env);
    /* The worker holds a read end open (O_RDWR), so this does not wait. */
    *gate = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (*gate < 0) fail_msg("open the gate %s: %s", fifo, strerror(errno));
}

static void store_gated_start(tided *t, int *gate, const char *queue)
{
    store_gated_start_with(t, gate, queue, NULL, NULL);
}

/* Let `n` store jobs run. */
static void gate_open(int gate, int n)
{
    for (int i = 0; i < n; i++)
        if (write(gate, "x", 1) != 1) fail_msg("write to the gate: %s", strerror(errno));
}

/* A metric's value from a fresh scrape. */
static double scrape_value(tided *t, const char *series)
{
    char *page = scrape_with(t, NULL, 200);
    double v = th_prom_value(page, series);
    free(page);
    return v;
}

/* Scrape until `series` is `want` (30 s at most, else fail). */
static void scrape_until(tided *t, const char *series, double want, const char *what)
{
    double end = th_now_ms() + 30000, v = NAN;

    while (th_now_ms() < end) {
        v = scrape_value(t, series);
        if (v == want) return;
        poll(NULL, 0, 10);
    }
    fail_msg("%s: %s should be %.0f; it is %.0f", what, series, want, v);
}

/* A raw request on its own connection, not waiting for the answer. */
static int send_request(tided *t, const char *method, uint64_t key, const char *body)
{
    char head[512], k[65];
    int fd = connect_from(t, "127.0.0.1");

    key_hex(key, k);
    snprintf(head, sizeof head, "%s /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", method, k,
             body ? strlen(body) : (size_t)0);
    send_all(fd, head, strlen(head));
    if (body) send_all(fd, body, strlen(body));
    return fd;
}

/* The answer on fd (30 s at most, else fail), into out. */
static void answer_of(int fd, char *out, size_t cap, const char *what)
{
    double end = th_now_ms() + 30000;

    while (th_now_ms() < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 50) > 0 && has_answer(fd, out, cap) && out[0]) return;
    }
    fail_msg("%s: no answer within 30 s", what);
}

#define JOBS_GET "tide_http_store_jobs_total{kind=\"get\"}"
#define JOBS_PUT "tide_http_store_jobs_total{kind=\"put\"}"

/* ---- the loop and the workers -------------------------------------------- */

/* A PUT and a GET the node cache cannot answer run on a store
 * worker; while the worker is held (the gate), the one event loop still
 * answers a cached GET, and the job counters show that the cached GETs
 * never became store jobs. */
static void puts_and_get_misses_run_on_a_worker_while_the_loop_answers_cached_gets(void **state)
{
    char out[4096], put_answer[4096];
    int gate, put_fd, get_fd;
    tided t;
    resp r;
    (void)state;

    store_gated_start(&t, &gate, "16");
    gate_open(gate, 1);
    r = http(&t, "PUT", obj_path(1, NULL), "one", 3, 0, NULL);
    expect_status(r, 201, "a PUT through an open gate");
    resp_free(&r);
    /* Key 2's PUT is taken by the worker, which waits at the gate. */
    put_fd = send_request(&t, "PUT", 2, "two");
    scrape_until(&t, "tide_http_store_jobs_running", 1, "the PUT of key 2 held at the gate");
    /* The loop is free: a cached GET answers, from the loop. */
    r = http(&t, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "a cached GET while the store worker is held");
    expect_str(r.body, "one", "the cached value");
    resp_free(&r);
    /* A key never stored is a miss: a store job, queued behind the PUT. */
    get_fd = send_request(&t, "GET", 3, NULL);
    scrape_until(&t, "tide_http_store_queue_depth", 1, "the GET miss of key 3 queued");
    if (has_answer(put_fd, put_answer, sizeof put_answer))
        fail_msg("the held PUT was answered before its worker ran it: %s", put_answer);
    expect_u64((uint64_t)scrape_value(&t, JOBS_PUT), 2, "store jobs of kind put");
    expect_u64((uint64_t)scrape_value(&t, JOBS_GET), 0, "store jobs of kind get (the cached GET is none)");
    gate_open(gate, 2);
    answer_of(put_fd, put_answer, sizeof put_answer, "the PUT of key 2");
    expect_contains(put_answer, "HTTP/1.1 201", "the PUT of key 2, once its worker ran");
    answer_of(get_fd, out, sizeof out, "the GET of key 3");
    expect_contains(out, "HTTP/1.1 404", "the GET miss of key 3");
    /* Key 2 is in the node cache now: its GET (and HEAD) stay on the loop. */
    r = http(&t, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of key 2");
    expect_str(r.body, "two", "key 2's value");
    resp_free(&r);
    r = http(&t, "HEAD", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "HEAD of key 2");
    resp_free(&r);
    expect_u64((uint64_t)scrape_value(&t, JOBS_GET), 1, "store jobs of kind get: key 3's miss only");
    expect_u64((uint64_t)scrape_value(&t, JOBS_PUT), 2, "store jobs of kind put");
    close(put_fd);
    close(get_fd);
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* The store queue is bounded, and a quarter of it is kept for
 * reads. store_queue 4: with the worker held, three PUTs fill the PUTs'
 * share and one more PUT is 503 overloaded with Retry-After: 1, while a
 * GET miss is still queued (the reads' reserve); with the queue full a
 * second GET miss is 503 too. Both refusals are counted; nothing refused
 * is stored; the queued jobs are served once the worker runs. */
static void a_full_store_queue_is_503_with_retry_after_and_keeps_room_for_reads(void **state)
{
    char out[5][4096];
    int gate, fds[5];
    tided t;
    resp r;
    (void)state;

    store_gated_start(&t, &gate, "4");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_queue_put_capacity"), 3, "the PUTs' share of 4");
    fds[0] = send_request(&t, "PUT", 10, "ten");
    scrape_until(&t, "tide_http_store_jobs_running", 1, "the first PUT at the worker");
    fds[1] = send_request(&t, "PUT", 11, "eleven");
    fds[2] = send_request(&t, "PUT", 12, "twelve");
    fds[3] = send_request(&t, "PUT", 17, "seventeen");
    scrape_until(&t, "tide_http_store_queue_depth", 3, "three PUTs queued");
    r = http(&t, "PUT", obj_path(13, NULL), "thirteen", 8, 0, NULL);
    expect_status(r, 503, "a PUT with the PUTs' share of store_queue waiting");
    expect_error_json(&r, "overloaded", "the queue-full 503");
    expect_contains(r.headers, "retry-after: 1", "the queue-full 503's Retry-After");
    resp_free(&r);
    /* The reads' reserve: a GET miss is queued behind the PUTs. */
    fds[4] = send_request(&t, "GET", 14, NULL);
    scrape_until(&t, "tide_http_store_queue_depth", 4, "a GET miss queued while PUTs filled their share");
    r = http(&t, "GET", obj_path(15, NULL), NULL, 0, 0, NULL);
    expect_status(r, 503, "a GET miss with store_queue jobs waiting");
    expect_error_json(&r, "overloaded", "the full queue's 503 to a read");
    resp_free(&r);
    expect_u64((uint64_t)scrape_value(&t, "tide_overload_rejected_requests_total{reason=\"store_queue\"}"), 2,
               "overload refusals for the store queue");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_jobs_refused_total"), 2, "refused store jobs");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_requests_total{method=\"PUT\",code=\"503\"}"), 1,
               "PUT 503s in the request metrics");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_queue_capacity"), 4, "the queue's capacity");
    gate_open(gate, 5);
    for (int i = 0; i < 4; i++) {
        answer_of(fds[i], out[i], sizeof out[i], "a queued PUT");
        expect_contains(out[i], "HTTP/1.1 201", "a queued PUT, once the worker ran");
        close(fds[i]);
    }
    answer_of(fds[4], out[4], sizeof out[4], "the queued GET miss");
    expect_contains(out[4], "HTTP/1.1 404", "the queued GET miss of a key never stored");
    close(fds[4]);
    gate_open(gate, 1);                 /* key 13's GET is a miss: one job */
    r = http(&t, "GET", obj_path(13, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "the refused PUT stored nothing");
    resp_free(&r);
    expect_u64((uint64_t)status_int(&t, "store", "inserts", NULL), 4, "the store's inserts");
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A body of `len` bytes for key `key` (its last byte the key's), NUL-ended. */
static char *big_body(size_t len, uint64_t key)
{
    char *b = malloc(len + 1);

    assert_non_null(b);
    memset(b, 'a', len);
    b[len - 1] = (char)('a' + key % 26);
    b[len] = '\0';
    return b;
}

/* A queued PUT's copy of its body counts against
 * http_body_budget with the bodies h2o holds. Budget 256 KiB, 48 KiB PUTs
 * with the worker held: the first two hold 4 x 48 KiB (each its body and
 * its copy); the third, whose head and body the scan admits (240 KiB
 * held with it), would take its copy past the budget: 503 overloaded,
 * counted as a body_budget refusal, not run. The bytes held never pass the
 * budget, and come back to zero. */
static void a_queued_puts_body_copy_counts_against_the_body_budget(void **state)
{
    char out[3][4096];
    char *body[3];
    int gate, fds[3];
    tided t;
    resp r;
    (void)state;

    store_gated_start_with(&t, &gate, "16", "--max-object-size=64KiB", "--http-body-budget=256KiB");
    for (int i = 0; i < 3; i++) body[i] = big_body(48 << 10, 50 + (uint64_t)i);
    fds[0] = send_request(&t, "PUT", 50, body[0]);
    scrape_until(&t, "tide_http_store_jobs_running", 1, "the first PUT at the worker");
    fds[1] = send_request(&t, "PUT", 51, body[1]);
    scrape_until(&t, "tide_http_store_queue_depth", 1, "the second PUT queued");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_body_held_bytes"), 4 * (48 << 10),
               "two PUTs' bodies and their copies held");
    fds[2] = send_request(&t, "PUT", 52, body[2]);
    answer_of(fds[2], out[2], sizeof out[2], "the third PUT");
    expect_contains(out[2], "HTTP/1.1 503", "a PUT whose copy would pass http_body_budget");
    expect_contains(out[2], "\"error\":\"overloaded\"", "its JSON");
    if (strcasestr(out[2], "retry-after: 1") == NULL) fail_msg("the budget's 503 has no Retry-After: 1: %s", out[2]);
    expect_contains(out[2], "http_body_budget", "its detail names the budget");
    close(fds[2]);
    if (scrape_value(&t, "tide_http_body_held_bytes") > 256 << 10)
        fail_msg("the bytes held passed http_body_budget = 256 KiB");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_requests_refused_total{reason=\"body_budget\"}"), 1,
               "body_budget refusals");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_body_copies_total"), 2, "body copies made");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_queue_depth"), 1, "the refused PUT took no slot");
    gate_open(gate, 2);
    for (int i = 0; i < 2; i++) {
        answer_of(fds[i], out[i], sizeof out[i], "a held PUT");
        expect_contains(out[i], "HTTP/1.1 201", "a PUT within the budget, once the worker ran");
        close(fds[i]);
    }
    scrape_until(&t, "tide_http_body_held_bytes", 0, "every body and copy given back");
    gate_open(gate, 1);
    r = http(&t, "GET", obj_path(52, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "the refused PUT stored nothing");
    resp_free(&r);
    for (int i = 0; i < 3; i++) free(body[i]);
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A PUT ?sync=1 is answered only after its put and its sync:
 * while its store worker is held nothing is answered; once the worker ran,
 * 201 with "durable": true. */
static void a_gated_sync_put_is_answered_only_after_its_put_and_sync(void **state)
{
    char head[512], k[65], out[4096];
    int gate, fd;
    tided t;
    (void)state;

    store_gated_start(&t, &gate, "16");
    key_hex(60, k);
    fd = connect_from(&t, "127.0.0.1");
    snprintf(head, sizeof head, "PUT /v1/objects/%s?sync=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nsixty", k);
    send_all(fd, head, strlen(head));
    scrape_until(&t, "tide_http_store_jobs_running", 1, "the ?sync=1 PUT at the worker");
    poll(NULL, 0, 200);
    if (has_answer(fd, out, sizeof out) && out[0])
        fail_msg("a ?sync=1 PUT was answered before its worker ran it: %s", out);
    expect_u64((uint64_t)status_int(&t, "store", "inserts", NULL), 0, "nothing inserted while held");
    gate_open(gate, 1);
    answer_of(fd, out, sizeof out, "the ?sync=1 PUT");
    expect_contains(out, "HTTP/1.1 201", "the ?sync=1 PUT once put and synced");
    expect_contains(out, "\"durable\":true", "its durable flag");
    expect_u64((uint64_t)status_int(&t, "store", "inserts", NULL), 1, "the put ran before the answer");
    close(fd);
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- stops with store jobs queued or running ----------------------------- */

/* Reopen t's data dir (tided without the gate) and expect key `key` to be
 * `want` (NULL: absent). */
static void expect_after_reopen(tided *t, uint64_t key, const char *want, const char *what)
{
    resp r = http(t, "GET", obj_path(key, NULL), NULL, 0, 0, NULL);

    if (want) {
        expect_status(r, 200, what);
        expect_str(r.body, want, what);
    } else {
        expect_status(r, 404, what);
    }
    resp_free(&r);
}

/* After a stop: the connection of a store job not answered before it. The
 * rule (work.c's essay): a hurried stop's unrun PUT goes back to its loop,
 * which has stopped turning, so it is never answered 201 and its
 * connection is closed when tided exits: the client reads end of file (or
 * a 503, were the loop to answer), never silence. Unhurried, the PUT ran
 * but the drained loop did not answer it: the same end of file. */
static void expect_unrun_put_closed(int fd, uint64_t key, int hurried)
{
    char out[4096], all[8192] = "";
    struct pollfd p = { fd, POLLIN, 0 };
    size_t used = 0;
    ssize_t r = 1;

    while (r > 0) {
        if (poll(&p, 1, 30000) <= 0) fail_msg("key %llu's PUT: neither answered nor closed after the stop",
                                              (unsigned long long)key);
        r = recv(fd, out, sizeof out - 1, 0);
        if (r > 0 && used + (size_t)r < sizeof all) memcpy(all + used, out, (size_t)r), used += (size_t)r;
    }
    all[used] = '\0';
    if (r < 0 && errno != ECONNRESET) fail_msg("key %llu's PUT: recv: %s", (unsigned long long)key, strerror(errno));
    if (strstr(all, "HTTP/1.1 201"))
        fail_msg("key %llu's PUT was acknowledged after the stop (%s): %s", (unsigned long long)key,
                 hurried ? "hurried" : "unhurried", all);
    if (used > 0 && !strstr(all, "HTTP/1.1 503"))
        fail_msg("key %llu's PUT: an answer other than 503 after the stop: %s", (unsigned long long)key, all);
}

/* A stop with store jobs queued and the worker held at its gate
 * exits (the gate opens at stop). Unhurried, the queued GETs are dropped
 * and the queued PUTs are run before the final commit; hurried (a second
 * SIGTERM), the queued PUTs, never acknowledged, are dropped too. Either
 * way an acknowledged PUT is in the store on reopen, and no value is half
 * written. */
static void a_stop_with_queued_store_jobs(int hurried)
{
    static const char *const plain[] = { "--http-threads=1", NULL };
    char *env[] = { NULL };
    int gate, fds[4];
    tided t;
    resp r;

    store_gated_start(&t, &gate, "16");
    gate_open(gate, 1);
    r = http(&t, "PUT", obj_path(70, NULL), "seventy", 7, 0, NULL);
    expect_status(r, 201, "an acknowledged PUT");
    resp_free(&r);
    fds[0] = send_request(&t, "PUT", 71, "seventy-one");
    scrape_until(&t, "tide_http_store_jobs_running", 1, "a PUT held at the gate");
    fds[1] = send_request(&t, "PUT", 72, "seventy-two");
    fds[2] = send_request(&t, "GET", 73, NULL);
    fds[3] = send_request(&t, "GET", 74, NULL);
    scrape_until(&t, "tide_http_store_queue_depth", 3, "a PUT and two GET misses queued");
    kill(t.pid, SIGTERM);
    if (hurried) {
        poll(NULL, 0, 200);
        tided_signal_and_reap(&t, SIGTERM);
    } else {
        tided_signal_and_reap(&t, 0);         /* no second signal: the drain's wait, then the stop */
    }
    expect_u64((uint64_t)t.status, 0, "tided's exit status after a stop with queued jobs");
    for (int i = 0; i < 4; i++) expect_unrun_put_closed(fds[i], 71 + (uint64_t)i, hurried);
    /* Invariant 2: the GETs are sent back unrun, and hurried the PUTs too. */
    if (!log_contains(&t, hurried ? "store pool stopped: 4 job(s) sent back unrun"
                                  : "store pool stopped: 2 job(s) sent back unrun"))
        fail_msg("the pool's stop should say %d jobs were sent back unrun: %s", hurried ? 4 : 2, log_tail(&t));
    for (int i = 0; i < 4; i++) close(fds[i]);
    close(gate);
    t.reaped = 0;
    tided_start(&t, plain, env);
    expect_after_reopen(&t, 70, "seventy", "the acknowledged PUT after the stop");
    expect_after_reopen(&t, 71, hurried ? NULL : "seventy-one", "the PUT held at the gate at the stop");
    expect_after_reopen(&t, 72, hurried ? NULL : "seventy-two", "the PUT queued at the stop");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void a_stop_with_queued_store_jobs_exits_and_runs_the_puts(void **state)
{
    (void)state;
    a_stop_with_queued_store_jobs(0);
}

static void a_hurried_stop_with_queued_store_jobs_drops_the_puts(void **state)
{
    (void)state;
    a_stop_with_queued_store_jobs(1);
}

/* A client that goes away while its PUT is at a worker (one
 * running, one queued): h2o disposes the request, the worker still puts
 * its own copy of the body, and nothing is written to the freed request.
 * Both values are stored exactly once, and the body bytes held come back
 * to zero. */
static void a_client_gone_while_its_put_is_at_a_worker_leaves_it_stored_once(void **state)
{
    int gate, running_fd, queued_fd;
    tided t;
    resp r;
    (void)state;

    store_gated_start(&t, &gate, "16");
    running_fd = send_request(&t, "PUT", 20, "twenty");
    scrape_until(&t, "tide_http_store_jobs_running", 1, "the PUT of key 20 at the worker");
    queued_fd = send_request(&t, "PUT", 21, "twenty-one");
    scrape_until(&t, "tide_http_store_queue_depth", 1, "the PUT of key 21 queued");
    close(running_fd);
    close(queued_fd);
    gate_open(gate, 2);
    scrape_until(&t, JOBS_PUT, 2, "both PUTs taken by the worker");
    scrape_until(&t, "tide_http_store_jobs_running", 0, "the worker done");
    /* h2o does not read a connection whose request is in a handler, so it
     * finds the client gone when the answer is written: then the request
     * is disposed and the connection closed (the scrape's own is the one
     * left). */
    scrape_until(&t, "tide_http_connections", 1, "the two PUT connections closed");
    scrape_until(&t, "tide_http_body_held_bytes", 0, "every body copy given back");
    r = http(&t, "GET", obj_path(20, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "key 20, whose client went away while it ran");
    expect_str(r.body, "twenty", "key 20's value");
    resp_free(&r);
    r = http(&t, "GET", obj_path(21, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "key 21, whose client went away while it was queued");
    expect_str(r.body, "twenty-one", "key 21's value");
    resp_free(&r);
    expect_u64((uint64_t)status_int(&t, "store", "inserts", NULL), 2, "the store's inserts: each once");
    expect_u64((uint64_t)scrape_value(&t, JOBS_GET), 0, "GETs of stored keys are cache hits");
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- batches ------------------------------------------------------------- */

/* The answer of a PUT of `key` with a body of `len` bytes, as tided sent
 * it: 201 naming its own key and its own length. */
static void expect_put_answer(const char *out, uint64_t key, size_t len, const char *what)
{
    char k[65], want[160];

    key_hex(key, k);
    expect_contains(out, "HTTP/1.1 201", what);
    snprintf(want, sizeof want, "{\"key\":\"%s\",\"bytes\":%zu,", k, len);
    expect_contains(out, want, what);
}

/* Jobs a store worker takes as one batch are each answered on
 * their own. With the worker held on key 100's PUT, eleven PUTs (bodies
 * of distinct lengths) and a GET miss in the middle of them queue; then
 * the gate opens for all: the one thread takes the five PUTs before the
 * GET as one batch, the GET alone (a GET never waits behind another job of
 * its batch) and the six after it as one (the batches counter says so),
 * and every connection gets its own key's answer with its own length, the
 * GET its 404. The queue's depth comes back to 0 and each value reads
 * back. */
static void a_batch_of_store_jobs_taken_together_is_answered_job_by_job(void **state)
{
    enum { QUEUED = 12, GET_AT = 6 };
    uint64_t keys[QUEUED + 1];
    char out[4096], body[64], k[65];
    int gate, fds[QUEUED + 1];
    tided t;
    (void)state;

    store_gated_start(&t, &gate, "32");
    for (int i = 0; i <= QUEUED; i++) keys[i] = i == GET_AT ? 199 : 100 + (uint64_t)i;
    fds[0] = send_request(&t, "PUT", keys[0], "held");
    scrape_until(&t, "tide_http_store_jobs_running", 1, "key 100's PUT held at the gate");
    for (int i = 1; i <= QUEUED; i++) {
        memset(body, 'a' + i, (size_t)(10 + i));
        body[10 + i] = '\0';
        fds[i] = send_request(&t, i == GET_AT ? "GET" : "PUT", keys[i], i == GET_AT ? NULL : body);
        scrape_until(&t, "tide_http_store_queue_depth", i, "the jobs queued behind the held PUT, in order");
    }
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_batches_total"), 1, "batches: the held PUT's alone");
    gate_open(gate, QUEUED + 1);
    answer_of(fds[0], out, sizeof out, "the held PUT");
    expect_put_answer(out, keys[0], 4, "the held PUT");
    for (int i = 1; i <= QUEUED; i++) {
        answer_of(fds[i], out, sizeof out, "a job of the batch");
        if (i == GET_AT) {
            key_hex(keys[i], k);
            expect_contains(out, "HTTP/1.1 404", "the GET miss in the batch");
            expect_contains(out, k, "the GET miss's 404 names its own key");
        } else {
            expect_put_answer(out, keys[i], (size_t)(10 + i), "a PUT of the batch");
        }
        close(fds[i]);
    }
    close(fds[0]);
    scrape_until(&t, "tide_http_store_queue_depth", 0, "the queue empty once the batch ran");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_jobs_running"), 0, "nothing running");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_batches_total"), 4,
               "batches: the held PUT; the five PUTs before the GET; the GET alone; the six after it");
    expect_u64((uint64_t)scrape_value(&t, JOBS_PUT), QUEUED, "store jobs of kind put");
    expect_u64((uint64_t)scrape_value(&t, JOBS_GET), 1, "store jobs of kind get");
    for (int i = 1; i <= QUEUED; i++) {
        resp r;
        if (i == GET_AT) continue;
        memset(body, 'a' + i, (size_t)(10 + i));
        body[10 + i] = '\0';
        r = http(&t, "GET", obj_path(keys[i], NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "a value the batch stored");
        expect_str(r.body, body, "its own value");
        resp_free(&r);
    }
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* The store jobs of one turn of the loop are spread over the
 * idle store threads. Four threads, all held at the gate: `n` connections
 * are accepted, tided is stopped (SIGSTOP) while each gets its request, so
 * the resumed loop reads them all in one turn and hands them over as one
 * flush. Then the four threads run one job each (jobs_running 4) and the
 * rest wait: a woken thread takes only its share and wakes threads for
 * what it left, and a GET is a batch of its own. Every request is answered
 * once the gate opens. */
static void store_jobs_of_one_turn_spread(const char *method, int n, uint64_t key0)
{
    enum { MAX = 24, THREADS = 4 };
    char head[512], out[4096], k[65];
    int gate, fds[MAX], put = strcmp(method, "PUT") == 0;
    tided t;

    if (n > MAX || n < THREADS) fail_msg("%d store jobs: between %d and %d", n, THREADS, MAX);
    gated_workers = "--store-workers=4";
    store_gated_start(&t, &gate, "32");
    gated_workers = "--store-workers=1";
    for (int i = 0; i < n; i++) fds[i] = connect_from(&t, "127.0.0.1");
    scrape_until(&t, "tide_http_connections", n + 1, "the connections accepted (and the scrape's)");
    /* Stopped, tided reads none of them: resumed, its loop finds them all
     * readable in one turn. */
    if (kill(t.pid, SIGSTOP) != 0) fail_msg("SIGSTOP tided: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        key_hex(key0 + (uint64_t)i, k);
        snprintf(head, sizeof head, "%s /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s",
                 method, k, put ? 5 : 0, put ? "value" : "");
        send_all(fds[i], head, strlen(head));
    }
    if (kill(t.pid, SIGCONT) != 0) fail_msg("SIGCONT tided: %s", strerror(errno));
    scrape_until(&t, "tide_http_store_jobs_running", THREADS, "every store thread running a job of the turn");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_queue_depth"), (uint64_t)(n - THREADS),
               "the jobs of the turn not started");
    gate_open(gate, n);
    for (int i = 0; i < n; i++) {
        answer_of(fds[i], out, sizeof out, "a store job of the turn");
        expect_contains(out, put ? "HTTP/1.1 201" : "HTTP/1.1 404", "a store job of the turn, answered");
        close(fds[i]);
    }
    scrape_until(&t, "tide_http_store_queue_depth", 0, "the queue empty");
    scrape_until(&t, "tide_http_store_jobs_running", 0, "nothing running");
    expect_u64((uint64_t)scrape_value(&t, put ? JOBS_PUT : JOBS_GET), (uint64_t)n, "store jobs of the turn");
    close(gate);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void four_get_misses_of_one_turn_run_on_four_store_threads(void **state)
{
    (void)state;
    store_jobs_of_one_turn_spread("GET", 4, 300);
}

static void twenty_puts_of_one_turn_keep_every_store_thread_busy(void **state)
{
    (void)state;
    store_jobs_of_one_turn_spread("PUT", 20, 400);
}

/* A stop while a worker is inside a batch. Key 80's PUT runs
 * alone; keys 81 to 85, queued meanwhile, are taken as one batch; 81 and
 * 82 run and are acknowledged (201) while the worker is held at 83. Then
 * the stop. Unhurried, the batch's PUTs not yet run (83, held; 84 and 85,
 * taken with it, in no queue) run before the final commit; hurried, they
 * go back unrun, never acknowledged. Either way every acknowledged PUT is
 * in the store on reopen. */
static void a_stop_with_a_batch_in_flight(int hurried)
{
    static const char *const plain[] = { "--http-threads=1", NULL };
    static const char *const value[6] = { "eighty", "eighty-one", "eighty-two", "eighty-three", "eighty-four",
                                          "eighty-five" };
    char *env[] = { NULL };
    char out[4096];
    int gate, fds[6];
    tided t;

    store_gated_start(&t, &gate, "16");
    fds[0] = send_request(&t, "PUT", 80, value[0]);
    scrape_until(&t, "tide_http_store_jobs_running", 1, "key 80's PUT held at the gate");
    for (int i = 1; i < 6; i++) {
        fds[i] = send_request(&t, "PUT", 80 + (uint64_t)i, value[i]);
        scrape_until(&t, "tide_http_store_queue_depth", i, "keys 81 to 85 queued, in order");
    }
    gate_open(gate, 1);
    answer_of(fds[0], out, sizeof out, "key 80's PUT");
    expect_put_answer(out, 80, strlen(value[0]), "key 80's PUT");
    scrape_until(&t, "tide_http_store_batches_total", 2, "keys 81 to 85 taken as one batch");
    gate_open(gate, 2);
    for (int i = 1; i < 3; i++) {
        answer_of(fds[i], out, sizeof out, "a PUT of the batch run before the stop");
        expect_put_answer(out, 80 + (uint64_t)i, strlen(value[i]), "an acknowledged PUT of the batch");
    }
    scrape_until(&t, "tide_http_store_queue_depth", 2, "key 83 held, 84 and 85 waiting in the batch");
    expect_u64((uint64_t)scrape_value(&t, "tide_http_store_jobs_running"), 1, "key 83 at the gate");
    kill(t.pid, SIGTERM);
    if (hurried) {
        poll(NULL, 0, 200);
        tided_signal_and_reap(&t, SIGTERM);
    } else {
        tided_signal_and_reap(&t, 0);         /* the drain's wait, then the pool's stop */
    }
    expect_u64((uint64_t)t.status, 0, "tided's exit status after a stop inside a batch");
    for (int i = 3; i < 6; i++) expect_unrun_put_closed(fds[i], 80 + (uint64_t)i, hurried);
    /* Invariant 2: a hurried stop sends the batch's three unrun PUTs back
     * (work.c counts them as they go; the pool's stop asserts no slot is
     * left), the unhurried one runs them. */
    if (hurried != log_contains(&t, "store pool stopped: 3 job(s) sent back unrun"))
        fail_msg("the pool's stop should%s say 3 jobs were sent back unrun: %s", hurried ? "" : " not",
                 log_tail(&t));
    for (int i = 0; i < 6; i++) close(fds[i]);
    close(gate);
    t.reaped = 0;
    tided_start(&t, plain, env);
    for (int i = 0; i < 6; i++)
        expect_after_reopen(&t, 80 + (uint64_t)i, i < 3 || !hurried ? value[i] : NULL,
                            i < 3 ? "a PUT acknowledged before the stop"
                            : hurried ? "a PUT of the batch a hurried stop dropped"
                            : "a PUT of the batch run at the stop");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void a_stop_with_a_batch_in_flight_runs_its_puts_and_loses_no_acknowledged_one(void **state)
{
    (void)state;
    a_stop_with_a_batch_in_flight(0);
}

static void a_hurried_stop_with_a_batch_in_flight_drops_its_unrun_puts_only(void **state)
{
    (void)state;
    a_stop_with_a_batch_in_flight(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(puts_and_get_misses_run_on_a_worker_while_the_loop_answers_cached_gets),
        cmocka_unit_test(a_full_store_queue_is_503_with_retry_after_and_keeps_room_for_reads),
        cmocka_unit_test(a_queued_puts_body_copy_counts_against_the_body_budget),
        cmocka_unit_test(a_gated_sync_put_is_answered_only_after_its_put_and_sync),
        cmocka_unit_test(a_stop_with_queued_store_jobs_exits_and_runs_the_puts),
        cmocka_unit_test(a_hurried_stop_with_queued_store_jobs_drops_the_puts),
        cmocka_unit_test(a_client_gone_while_its_put_is_at_a_worker_leaves_it_stored_once),
        cmocka_unit_test(a_batch_of_store_jobs_taken_together_is_answered_job_by_job),
        cmocka_unit_test(a_stop_with_a_batch_in_flight_runs_its_puts_and_loses_no_acknowledged_one),
        cmocka_unit_test(a_hurried_stop_with_a_batch_in_flight_drops_its_unrun_puts_only),
        cmocka_unit_test(four_get_misses_of_one_turn_run_on_four_store_threads),
        cmocka_unit_test(twenty_puts_of_one_turn_keep_every_store_thread_busy),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided, store workers", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
