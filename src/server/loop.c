/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loop.c: tided's event loops, from the listening socket to the drain.
 *
 * Layout. One listening socket is bound once (no SO_REUSEPORT, so a second
 * server on the same address fails with "address in use" instead of
 * silently taking half the connections). Each of the http_threads loops
 * owns an h2o_evloop, an h2o_context and its own descriptor of that socket
 * (loop 0 the original, the others a dup), watched for reads: whichever
 * loop's accept wins takes the connection, and the connection stays on that
 * loop for its whole life. Loop 0 runs on the main thread and also watches
 * the signalfd; SIGTERM, SIGINT, SIGQUIT and SIGHUP are blocked in every
 * thread, so they are only ever read from there, never handled in a
 * signal handler. SIGHUP calls srv->reload (tided.c's reload_settings),
 * which touches no loop or connection state.
 *
 * systemd (notify.c): READY=1 once loop 0 is set up; STOPPING=1 at the
 * first stop signal; RELOADING=1 and READY=1 around SIGHUP's reload, only
 * while running (a SIGHUP during the drain is logged once and ignored);
 * an event loop that fails stops them all (tided exits 1); loop
 * 0 pings the watchdog between turns, and each loop stamps turned_us
 * before it waits, so a loop stuck in a handler stops the pings.
 *
 * Stop. The first SIGTERM, SIGINT or SIGQUIT sets state DRAINING and wakes every
 * loop (an empty message on its queue). Each loop then closes its
 * listener, asks h2o to stop keep-alive (h2o_context_request_shutdown),
 * and keeps running until its requests in flight are done (inflight, kept
 * by api.c: counted when a handler starts, uncounted when h2o disposes the
 * request, i.e. after the last byte of the response was written) or
 * TIDED_DRAIN_MS have passed. A second signal sets HURRY and ends every
 * wait at once. Connections still open then (idle keep-alive) are closed
 * by the process's exit. The loop threads then park (see loop_thread), and
 * main goes on to close the node. Loop 0, which reads the signals, stops
 * last: until every other loop drained it keeps turning (each drained
 * loop wakes it), so a second signal or a SIGHUP is read all drain long.
 *
 * Connections. Each accepted socket goes to conn.c, which admits it (the
 * total and per-client bounds, evicting an idle connection at the total
 * bound) and hands it to h2o; after every turn of the event loop the loop
 * lets conn.c scan its connections (idle close, the head check, the body
 * budget, a slow head's or body's 408, the memory level's listener pause),
 * and it never sleeps longer than conn.c's next scan (at most a second).
 * h2o itself bounds each connection: request line and headers
 * H2O_MAX_REQLEN (8192 + 4096 * 100 bytes) and 100 headers,
 * http_request_timeout to receive a whole request from when the
 * connection began to wait for it (http1.req_timeout: a close, no answer),
 * the body to max_request_entity_size.
 *
 * Invariants:
 *   1. Everything of a loop (its sockets, its context, its requests) is
 *      touched by that loop's thread only; other threads reach a loop only
 *      through h2o_multithread_send_message on its receivers, the
 *      server's atomics (state, the connection and body counters), and
 *      conn.c's per-address table under clients_mu.
 *   2. inflight counts exactly the requests whose guard is alive (api.c).
 *
 * Never: do work in a signal handler; block a loop on the disk for a sync
 * or a sweep (work.c does those).
 */
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

/* ---- the listening socket ------------------------------------------- */

int tided_listen(tided_server *srv)
{
    const tide_config *c = srv->cfg;
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, rc = 0, gai, err = 0;

    snprintf(srv->listen_text, sizeof srv->listen_text, strchr(c->listen_host, ':') ? "[%s]:%u" : "%s:%u",
             c->listen_host, c->listen_port);
    snprintf(port, sizeof port, "%u", c->listen_port);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    gai = getaddrinfo(c->listen_host, port, &hints, &res);
    if (gai != 0) {
        rc = tide_err_set(TIDE_EIO, "listen %s: cannot resolve the host: %s", srv->listen_text,
                          gai_strerror(gai));
        goto out;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        int on = 1;
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) { err = errno; continue; }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);   /* restart over TIME_WAIT */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  /* inherited by accepted sockets */
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) break;
        err = errno;
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        rc = tide_err_set(TIDE_EIO, "listen %s: %s%s", srv->listen_text, strerror(err),
                          err == EADDRINUSE ? " (another server listens there; choose another --listen)" : "");
        goto out;
    }
    srv->listen_fd = fd;
out:
    if (res) freeaddrinfo(res);
    return rc;
}

/* ---- connections ----------------------------------------------------- */

static void on_accept(h2o_socket_t *listener, const char *err)
{
    tided_loop *l = listener->data;

    if (err != NULL) return;
    /* A bounded batch, so one busy listener cannot starve the loop's
     * requests; the listener stays readable for the rest. */
    for (int i = 0; i < 64; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock == NULL) break;
        tided_conn_accept(l, sock);
        if (l->listener_paused) break;      /* the critical reserve is in use */
    }
}

void tided_loop_listener_pause(tided_loop *l, int pause)
{
    if (l->listener == NULL) return;
    if (pause) h2o_socket_read_stop(l->listener);
    else h2o_socket_read_start(l->listener, on_accept);
}

/* ---- signals (loop 0) ------------------------------------------------ */

static void wake_all(tided_server *srv)
{
    /* A loop not set up yet has no queue; it reads the state when it starts. */
    for (unsigned i = 0; i < srv->nloops; i++)
        if (atomic_load_explicit(&srv->loops[i].ready, memory_order_acquire))
            h2o_multithread_send_message(&srv->loops[i].wake_rx, NULL);
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    tided_loop *l = sock->data;
    tided_server *srv = l->srv;
    struct signalfd_siginfo si;

    (void)err;
    while (read(srv->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        const char *name = si.ssi_signo == SIGTERM ? "SIGTERM" : si.ssi_signo == SIGINT ? "SIGINT"
                         : si.ssi_signo == SIGQUIT ? "SIGQUIT" : "a signal";
        int expected = TIDED_RUNNING;
        if (si.ssi_signo == SIGHUP && atomic_load(&srv->state) != TIDED_RUNNING) {
            /* Stopping: RELOADING=1 and READY=1 after STOPPING=1 would
             * tell systemd the service serves again. */
            if (!srv->hup_ignored)
                tide_log(TIDE_LOG_INFO, "SIGHUP while stopping: not reloading the settings");
            srv->hup_ignored = 1;
            continue;
        }
        if (si.ssi_signo == SIGHUP) {
            tided_notify_reloading();
            srv->reload(srv);
            tided_notify_ready(srv, "reloaded");
            continue;
        }
        if (atomic_compare_exchange_strong(&srv->state, &expected, TIDED_DRAINING)) {
            tided_notify_stopping("stopping: finishing the requests in flight, then the final commit");
            tide_log(TIDE_LOG_INFO, "%s: stopping: no new connections; waiting up to %d ms for requests in "
                     "flight (a second signal stops waiting)", name, TIDED_DRAIN_MS);
        } else if (expected == TIDED_DRAINING) {
            atomic_store(&srv->stop_hurried, 1);    /* work.c: queued PUTs are dropped */
            atomic_store(&srv->state, TIDED_HURRY);
            tide_log(TIDE_LOG_WARN, "%s again: not waiting for requests in flight", name);
        }
    }
    wake_all(srv);
}

static void on_wake(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    (void)rx;
    (void)messages;    /* wake-ups carry no message: the loop reads the state */
}

/* ---- loops ----------------------------------------------------------- */

int tided_loops_init(tided_server *srv)
{
    int rc = 0;

    pthread_mutex_init(&srv->done_mu, NULL);
    pthread_cond_init(&srv->done_cv, NULL);
    pthread_cond_init(&srv->park_cv, NULL);
    srv->loops = calloc(srv->nloops, sizeof *srv->loops);
    if (srv->loops == NULL) { rc = TIDE_ENOMEM; goto out; }
    for (unsigned i = 0; i < srv->nloops; i++) {
        tided_loop *l = &srv->loops[i];
        l->srv = srv;
        l->index = i;
        if (tided_reqstats_alloc(l)) { rc = TIDE_ENOMEM; goto out; }
        l->listen_fd = i == 0 ? srv->listen_fd : fcntl(srv->listen_fd, F_DUPFD_CLOEXEC, 0);
        if (l->listen_fd < 0) {
            rc = tide_err_set(TIDE_EIO, "dup of the listening socket: %s", strerror(errno));
            goto out;
        }
    }
out:
    return rc;
}

void tided_loop_context_init(tided_loop *l)
{
    tided_server *srv = l->srv;

    l->evloop = h2o_evloop_create();
    h2o_context_init(&l->ctx, l->evloop, &srv->globalconf);
    l->ctx_ready = 1;
    l->accept_ctx.ctx = &l->ctx;
    l->accept_ctx.hosts = srv->globalconf.hosts;
    h2o_multithread_register_receiver(l->ctx.queue, &l->done_rx, tided_api_on_jobs_done);
    h2o_multithread_register_receiver(l->ctx.queue, &l->wake_rx, on_wake);
}

/* Runs on the loop's own thread: h2o's socket buffers are per thread. */
static void loop_setup(tided_loop *l)
{
    tided_server *srv = l->srv;

    tided_loop_context_init(l);
    l->listener = h2o_evloop_socket_create(l->evloop, l->listen_fd, H2O_SOCKET_FLAG_DONT_READ);
    l->listener->data = l;
    h2o_socket_read_start(l->listener, on_accept);
    if (l->index == 0) {
        l->signals = h2o_evloop_socket_create(l->evloop, srv->signal_fd, H2O_SOCKET_FLAG_DONT_READ);
        l->signals->data = l;
        h2o_socket_read_start(l->signals, on_signal);
    }
    l->staging = 1;                        /* loop_run flushes after every turn */
    atomic_store_explicit(&l->ready, 1, memory_order_release);
}

static void begin_stop(tided_loop *l)
{
    l->stopping = 1;
    l->deadline_us = tide_clock_mono_us() + (uint64_t)TIDED_DRAIN_MS * 1000;
    if (l->listener) {
        h2o_socket_read_stop(l->listener);
        h2o_socket_close(l->listener);     /* closes this loop's descriptor */
        l->listener = NULL;
    }
    h2o_context_request_shutdown(&l->ctx);
}

/* Whether every loop thread that runs has drained (loop 0's stop). */
static int others_drained(tided_server *srv)
{
    int done;

    pthread_mutex_lock(&srv->done_mu);
    done = srv->loops_done + 1 >= srv->loops_running;
    pthread_mutex_unlock(&srv->done_mu);
    return done;
}

static void loop_run(tided_loop *l)
{
    tided_server *srv = l->srv;

    for (;;) {
        int state = atomic_load(&srv->state);
        int32_t wait_ms = INT32_MAX;

        if (state != TIDED_RUNNING && !l->stopping) begin_stop(l);
        if (l->stopping) {
            uint64_t now = tide_clock_mono_us();
            /* Loop 0 reads the signals: it runs until the others drained,
             * so a second stop signal (HURRY) still ends their wait and a
             * SIGHUP is still read (and ignored). */
            if (state == TIDED_HURRY || (l->inflight == 0 && (l->index != 0 || others_drained(srv)))) break;
            if (now >= l->deadline_us) {
                if (l->inflight)
                    tide_log(TIDE_LOG_WARN, "loop %u: %zu request(s) still in flight after %d ms; stopping "
                             "without them", l->index, l->inflight, TIDED_DRAIN_MS);
                break;
            }
            wait_ms = (int32_t)((l->deadline_us - now) / 1000 + 1);
        }
        int32_t scan_ms = tided_conn_wait_ms(l);
        if (scan_ms < wait_ms) wait_ms = scan_ms;
        if (l->index == 0) {
            int32_t ping_ms = tided_notify_watchdog(srv);
            if (ping_ms < wait_ms) wait_ms = ping_ms;
        }
        atomic_store_explicit(&l->turned_us, tide_clock_mono_us(), memory_order_relaxed);
        int run_rc = h2o_evloop_run(l->evloop, wait_ms), run_errno = errno;
        /* The store jobs this turn made go to the store pool together. */
        tided_pool_flush(&srv->store_pool, l);
        if (run_rc != 0 && run_errno != EINTR) {
            errno = run_errno;
            tide_log(TIDE_LOG_ERROR, "loop %u: the event loop failed: %s; stopping (exit 1)", l->index,
                     strerror(errno));
            atomic_store(&srv->loop_failed, 1);
            if (atomic_exchange(&srv->state, TIDED_HURRY) == TIDED_RUNNING)
                tided_notify_stopping("stopping: an event loop failed");
            wake_all(srv);
            break;
        }
        tided_conn_poll(l);
        tided_pool_flush(&srv->store_pool, l);
    }
}

/*
 * A loop thread, once drained, reports and then parks until the process
 * exits instead of returning: h2o keeps freed buffers and pool chunks for
 * reuse in thread-local lists (h2o_mem_alloc_recycle) that it has no call
 * to empty, and a thread that ended would leave them unreachable.
 */
static void *loop_thread(void *arg)
{
    tided_loop *l = arg;
    tided_server *srv = l->srv;

    loop_setup(l);
    loop_run(l);
    pthread_mutex_lock(&srv->done_mu);
    srv->loops_done++;
    pthread_cond_broadcast(&srv->done_cv);
    if (atomic_load_explicit(&srv->loops[0].ready, memory_order_acquire))
        h2o_multithread_send_message(&srv->loops[0].wake_rx, NULL);    /* loop 0 waits for us */
    for (;;) pthread_cond_wait(&srv->park_cv, &srv->done_mu);
    return NULL;
}

int tided_loops_run(tided_server *srv)
{
    unsigned running = 1;

    for (unsigned i = 1; i < srv->nloops; i++) {
        tided_loop *l = &srv->loops[i];
        int err = pthread_create(&l->tid, NULL, loop_thread, l);
        if (err) {
            tide_log(TIDE_LOG_WARN, "cannot start event loop %u: %s; serving without it", i, strerror(err));
            close(l->listen_fd);
            continue;
        }
        l->thread_started = 1;
        running++;
    }
    pthread_mutex_lock(&srv->done_mu);
    srv->loops_running = running;
    pthread_mutex_unlock(&srv->done_mu);
    loop_setup(&srv->loops[0]);
    tide_log(TIDE_LOG_INFO, "listening on %s (%u thread%s)", srv->listen_text, running,
             running == 1 ? "" : "s");
    tided_notify_ready(srv, "ready");
    loop_run(&srv->loops[0]);
    atomic_store(&srv->state, TIDED_HURRY);   /* loop 0 ended: nobody else waits */
    wake_all(srv);
    pthread_mutex_lock(&srv->done_mu);
    while (srv->loops_done < running - 1) pthread_cond_wait(&srv->done_cv, &srv->done_mu);
    pthread_mutex_unlock(&srv->done_mu);
    return atomic_load(&srv->loop_failed) ? TIDE_EIO : 0;
}
