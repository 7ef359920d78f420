/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * notify.c: what tided tells systemd (sd_notify, libsystemd).
 *
 * Under a Type=notify unit systemd passes $NOTIFY_SOCKET, a unix datagram
 * socket; tided sends it, in order:
 *   READY=1 with STATUS=       loop 0 is set up: the address is bound, the
 *                              store open, the workers started
 *                              (tided_notify_ready, from loop.c)
 *   RELOADING=1, then READY=1  around SIGHUP's reload (loop.c's on_signal;
 *                              RELOADING carries MONOTONIC_USEC, which
 *                              systemd 253's Type=notify-reload wants)
 *   STOPPING=1                 at the first stop signal, and at a stop
 *                              during the store's open
 *   EXTEND_TIMEOUT_USEC=       every EXTEND_EVERY_S while the store opens
 *                              (a recovery may take long) and while it
 *                              closes (the final commit), from a thread of
 *                              its own, for at most EXTEND_MAX_S in all:
 *                              past that a stuck open or commit is left
 *                              to TimeoutStartSec=/TimeoutStopSec=
 *   WATCHDOG=1                 when the unit sets WatchdogSec=
 *                              (sd_watchdog_enabled: WATCHDOG_USEC set and
 *                              WATCHDOG_PID ours or unset), every half
 *                              interval from loop 0's turns
 *                              (tided_notify_watchdog), but only while
 *                              every event loop has turned within the
 *                              last max(interval/2, 2 s): each loop wakes
 *                              at least once a second (conn.c's scan), so
 *                              a loop stuck in a handler (a PUT blocked on
 *                              a full insert pool behind a stuck commit)
 *                              stops the pings and systemd kills and
 *                              restarts tided. A stuck worker (the sync,
 *                              sweep, metrics, rotate or heap thread)
 *                              does not: the loops keep serving, and its
 *                              requests wait or time out.
 * Without $NOTIFY_SOCKET every call is a no-op (sd_notify returns 0).
 *
 * Invariants:
 *   1. READY=1 is sent only after loop 0 can accept: a client that waits
 *      for it finds /healthz answering.
 *   2. The extender thread runs only between extend_begin and extend_end,
 *      and at most one at a time (main thread only).
 *
 * Never: block a loop on the notify socket (sd_notify sends one datagram,
 * non-blocking on a socket systemd reads); send a token or a path that
 * might hold one.
 */
#include "server/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "util/clock.h"
#include "util/log.h"

/* The extender's period and the timeout each ping asks for (twice it, so
 * one late ping is no stop), and its whole budget. */
#define EXTEND_EVERY_S 10
#define EXTEND_MAX_S   (15 * 60)

/* The watchdog: its interval (0: off) and the next ping, loop 0 only
 * after tided_notify_init, on the main thread before any loop. */
static uint64_t watchdog_usec;
static uint64_t watchdog_next_us;

void tided_notify_init(void)
{
    uint64_t usec = 0;

    /* 0 = keep WATCHDOG_USEC and WATCHDOG_PID: SIGHUP's reads see them. */
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        watchdog_usec = usec;
        tide_log(TIDE_LOG_INFO, "systemd watchdog: %llu ms; pinged every %llu ms while every event loop "
                 "turns", (unsigned long long)(usec / 1000), (unsigned long long)(usec / 2000));
    }
}

/* One message; a failure is logged at debug only (nobody may listen). */
static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notify(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rc = sd_notify(0, msg);
    if (rc < 0) tide_log(TIDE_LOG_DEBUG, "sd_notify: %s", strerror(-rc));
}

void tided_notify_ready(const tided_server *srv, const char *why)
{
    notify("READY=1\nSTATUS=%s: serving on %s, the store in %s", why, srv->listen_text, srv->cfg->data_dir);
}

void tided_notify_reloading(void)
{
    notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=SIGHUP: reading the settings again",
           (unsigned long long)tide_clock_mono_us());
}

void tided_notify_stopping(const char *why)
{
    notify("STOPPING=1\nSTATUS=%s", why);
}

/* ---- the watchdog ------------------------------------------------------- */

/* 1 when every loop that runs has turned within `within_us` of now_us, or
 * tided is stopping (a drained loop parks and turns no more). */
static int loops_turning(tided_server *srv, uint64_t now_us, uint64_t within_us)
{
    if (atomic_load(&srv->state) != TIDED_RUNNING) return 1;
    for (unsigned i = 0; i < srv->nloops; i++) {
        const tided_loop *l = &srv->loops[i];
        uint64_t t = atomic_load_explicit(&l->turned_us, memory_order_relaxed);
        if (i > 0 && !l->thread_started) continue;
        if (t != 0 && now_us > t && now_us - t > within_us) return 0;
    }
    return 1;
}

int32_t tided_notify_watchdog(tided_server *srv)
{
    uint64_t now = tide_clock_mono_us(), half = watchdog_usec / 2;
    uint64_t stale = half > 2000000 ? half : 2000000;

    if (watchdog_usec == 0) return INT32_MAX;
    if (now >= watchdog_next_us) {
        if (loops_turning(srv, now, stale)) notify("WATCHDOG=1");
        else tide_log(TIDE_LOG_WARN, "systemd watchdog: an event loop has not turned for over %llu ms; "
                      "not pinging", (unsigned long long)(stale / 1000));
        watchdog_next_us = now + half;
    }
    return (int32_t)((watchdog_next_us - now) / 1000 + 1);
}

/* ---- the extender ---------------------------------------------------------- */

static pthread_t       extend_tid;
static int             extend_running;
static pthread_mutex_t extend_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  extend_cv;
static int             extend_stop;
static char            extend_what[200];

static void *extend_thread(void *arg)
{
    uint64_t started = tide_clock_mono_us();

    (void)arg;
    pthread_mutex_lock(&extend_mu);
    while (!extend_stop && tide_clock_mono_us() - started < (uint64_t)EXTEND_MAX_S * 1000000) {
        struct timespec ts;
        notify("EXTEND_TIMEOUT_USEC=%llu\nSTATUS=%s%s", (unsigned long long)EXTEND_EVERY_S * 2 * 1000000,
               extend_what, watchdog_usec ? "\nWATCHDOG=1" : "");
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += EXTEND_EVERY_S;
        while (!extend_stop && pthread_cond_timedwait(&extend_cv, &extend_mu, &ts) != ETIMEDOUT) {}
    }
    pthread_mutex_unlock(&extend_mu);
    return NULL;
}

void tided_notify_extend_begin(const char *what)
{
    pthread_condattr_t a;

    if (extend_running || getenv("NOTIFY_SOCKET") == NULL) return;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&extend_cv, &a);
    pthread_condattr_destroy(&a);
    snprintf(extend_what, sizeof extend_what, "%s", what);
    extend_stop = 0;
    if (pthread_create(&extend_tid, NULL, extend_thread, NULL) == 0) extend_running = 1;
    else pthread_cond_destroy(&extend_cv);
}

void tided_notify_extend_end(void)
{
    if (!extend_running) return;
    pthread_mutex_lock(&extend_mu);
    extend_stop = 1;
    pthread_cond_signal(&extend_cv);
    pthread_mutex_unlock(&extend_mu);
    pthread_join(extend_tid, NULL);
    pthread_cond_destroy(&extend_cv);
    extend_running = 0;
}
