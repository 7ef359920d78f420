/*
 * server.h: what the parts of tided share.
 *
 *   tided.c   main: flags, settings, signals, startup, the node, shutdown
 *   loop.c    the event loops: listener, connections, the drain on stop
 *   api.c     the HTTP endpoints (routing, objects, status, admin) and the
 *             JSON bodies of every error, h2o's own included
 *   work.c    the worker threads that run tide_node_sync, tide_node_sweep
 *             and the /metrics render off the event loops, coalescing
 *             requests
 *
 * Threads: http_threads event loops (loop 0 runs on the main thread and
 * also watches the signalfd), one sync, one sweep and one metrics worker, plus the
 * node's own commit and sweeper threads. A request lives on the loop that
 * accepted its connection, and everything that touches it (h2o_req_t, its
 * pool, its guard) runs on that loop's thread; the workers see only
 * tided_job structures and hand them back through h2o's multithread queue
 * of that loop.
 */
#ifndef TIDE_SERVER_H
#define TIDE_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <h2o.h>
#include <h2o/socket/evloop.h>

#include "node/config.h"
#include "node/node.h"

/* The longest request target (path and query) served, longer is 414:
 * tided_max_url(key_size), which is TIDED_MAX_URL or, for a store whose
 * keys need more, the object path of a whole key plus TIDED_QUERY_ROOM.
 * So every key size NuDB allows (1 to 65535 bytes: 131070 hex digits) is
 * servable; h2o's own bound on the request line and headers,
 * H2O_MAX_REQLEN (417792 bytes), is above the largest. */
#define TIDED_MAX_URL 1024
#define TIDED_QUERY_ROOM 256
#define TIDED_OBJECTS_PREFIX "/v1/objects/"

static inline size_t tided_max_url(unsigned key_size)
{
    size_t need = sizeof TIDED_OBJECTS_PREFIX - 1 + 2 * (size_t)key_size + TIDED_QUERY_ROOM;
    return need > TIDED_MAX_URL ? need : TIDED_MAX_URL;
}
/* How long a stop waits for requests in flight (pending ?sync=1 included). */
#define TIDED_DRAIN_MS 10000
/* Connections open at once, at most (lowered to fit RLIMIT_NOFILE). */
#define TIDED_MAX_CONNECTIONS 4096

typedef struct tided_server tided_server;
typedef struct tided_loop tided_loop;
typedef struct tided_job tided_job;

/* ---- work.c ---------------------------------------------------------- */

enum { TIDED_JOB_SYNC, TIDED_JOB_SWEEP, TIDED_JOB_METRICS };

/*
 * One request waiting for a worker. Allocated with malloc by the loop
 * thread, queued to a worker, filled by it and sent back to `loop` as a
 * message; the loop answers `req` when it is still there and frees the job.
 * `req` and `guard` are read and written on the loop thread only.
 */
struct tided_job {
    h2o_multithread_message_t msg;   /* first: the loop's queue links it */
    tided_job   *next;               /* the worker's queue */
    tided_loop  *loop;
    h2o_req_t   *req;                /* NULL once h2o disposed the request */
    struct tided_guard *guard;       /* the request's guard while it lives */
    int          kind;               /* TIDED_JOB_* */
    int          put_rc;             /* sync: 0 (stored) or TIDE_EEXIST */
    size_t       len;                /* sync: the value's bytes */
    /* Filled by the worker: */
    int          rc;                 /* tide_node_sync's return */
    char         detail[256];        /* tide_last_error() of a failure */
    uint64_t     batch;              /* which sync or sweep served it */
    size_t       batch_size;         /* how many jobs it served */
    tide_node_sweep_report report;   /* sweep */
    char        *text;               /* metrics: the page (malloc'd; the loop
                                        copies it into the request's pool and
                                        frees it), NULL when rendering failed */
    size_t       text_len;
    char         key_hex[];          /* sync: the key in hex, 2 * key_size + 1
                                        bytes allocated with the job */
};

typedef struct tided_worker {
    const char     *name;            /* "sync", "sweep" */
    int             kind;
    tided_server   *srv;
    pthread_t       tid;
    int             started;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    tided_job      *head, *tail;     /* queued, oldest first */
    int             stop;
    uint64_t        batches;         /* node calls made (under mu) */
    uint64_t        jobs;            /* jobs served (under mu) */
} tided_worker;

/* Start the worker thread. Returns 0 or TIDE_ENOMEM (thread creation). */
int  tided_worker_start(tided_worker *w, tided_server *srv, const char *name, int kind);
/* Queue `job`; the worker answers it with one node call shared with every
 * job queued before that call starts. Any thread; never blocks long. */
void tided_worker_push(tided_worker *w, tided_job *job);
/* Let the worker finish every queued job, then join it. Idempotent. */
void tided_worker_stop(tided_worker *w);
/* Copies of the counters. */
void tided_worker_counts(tided_worker *w, uint64_t *batches, uint64_t *jobs);

/* ---- loop.c ---------------------------------------------------------- */

struct tided_loop {
    tided_server  *srv;
    unsigned       index;
    pthread_t      tid;
    int            thread_started;
    h2o_evloop_t  *evloop;
    h2o_context_t  ctx;
    int            ctx_ready;
    h2o_accept_ctx_t accept_ctx;
    int            listen_fd;        /* this loop's descriptor of the listener */
    h2o_socket_t  *listener;         /* NULL once closed */
    h2o_socket_t  *signals;          /* loop 0: the signalfd; else NULL */
    h2o_multithread_receiver_t done_rx;  /* jobs coming back from workers */
    h2o_multithread_receiver_t wake_rx;  /* wake-ups (stop) */
    size_t         inflight;         /* requests handled and not yet disposed */
    int            stopping;         /* this loop has closed its listener */
    uint64_t       deadline_us;      /* monotonic: end of the drain */
    atomic_int     ready;            /* set up: its receivers may be sent to */
};

enum { TIDED_RUNNING = 0, TIDED_DRAINING = 1, TIDED_HURRY = 2 };

struct tided_server {
    const tide_config *cfg;
    tide_node     *node;
    unsigned       key_size;
    size_t         max_object_size;
    const char    *admin_token;      /* "" when not configured */
    size_t         admin_token_len;
    const char    *metrics_token;    /* "" when not configured */
    size_t         metrics_token_len;
    int            metrics_public;   /* TIDE_METRICS_PUBLIC=1: no token needed */
    h2o_globalconf_t globalconf;
    int            globalconf_ready;
    unsigned       nloops;
    tided_loop    *loops;
    tided_worker   sync_worker, sweep_worker, metrics_worker;
    int            signal_fd;
    int            listen_fd;        /* the bound socket (loop 0 uses it) */
    char           listen_text[300]; /* "127.0.0.1:8080", "[::1]:8080" */
    unsigned       max_connections;
    atomic_uint    connections;
    atomic_ullong  connections_total, connections_refused;
    atomic_int     state;            /* TIDED_RUNNING, _DRAINING, _HURRY */
    pthread_mutex_t done_mu;         /* loops_done, and the parked loops */
    pthread_cond_t done_cv, park_cv;
    unsigned       loops_done;       /* loop threads drained (1..n-1) */
    uint64_t       started_mono_us;
    uint64_t       started_unix_s;
};

/* Bind and listen on cfg->listen_host:listen_port (one socket; the loops
 * share it). Returns 0 or TIDE_EIO with a message naming the address. */
int  tided_listen(tided_server *srv);
/* Make the loops (contexts, receivers, listener sockets). Returns 0 or
 * TIDE_ENOMEM / TIDE_EIO. */
int  tided_loops_init(tided_server *srv);
/* Run loops 1..n-1 on threads and loop 0 on the calling thread, until a
 * signal stops them and every one has drained (its thread then parks until
 * the process exits). */
void tided_loops_run(tided_server *srv);

/* ---- api.c ----------------------------------------------------------- */

/* Register the handler on "/" and the error filter on the fallback path
 * of `hostconf`. */
void tided_api_register(tided_server *srv, h2o_hostconf_t *hostconf);
/* Render GET /metrics (node/metrics.c plus tided's own tide_http_*
 * families) into a malloc'd text. Any thread; run by the metrics worker.
 * Returns 0 or TIDE_ENOMEM. */
int  tided_metrics_render(tided_server *srv, char **out, size_t *len);
/* The loop thread's receiver of finished jobs (registered by loop.c). */
void tided_api_on_jobs_done(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages);

#endif
