/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.h: what the parts of tided share.
 *
 *   tided.c   main: flags, settings, signals, startup, the node, shutdown
 *   loop.c    the event loops: listener, signals, the drain on stop
 *   conn.c    connections: admission (total, per client, eviction of idle
 *             or slow ones), idle close, the head check and the request-body
 *             budget, answered before h2o reads a body, and the bounds of
 *             a slow head or body
 *   api.c     the HTTP endpoints' routing, the request's guard, the jobs
 *             coming back, and the JSON bodies of the errors h2o sends
 *             itself (conn.c writes its own refusals); beside it, sharing
 *             api_impl.h, the endpoints: api_objects.c (PUT/GET/HEAD of a
 *             key), api_status.c (/v1/status, /v1/sweeps), api_admin.c
 *             (/v1/admin/sweep, /v1/admin/heap), api_rotate.c (/v1/admin/rotate,
 *             /v1/admin/can_delete, /v1/rotations and the online delete
 *             part of /v1/status), api_metrics.c (/metrics), and
 *             api_reply.c (request text, every answer, the query rule)
 *   work.c    the worker threads that run tide_node_sync, tide_node_sweep,
 *             the /metrics render and the heap report off the event
 *             loops, coalescing requests; and the store pool, which runs
 *             every PUT and GET miss (tide_node_put, tide_node_get)
 *
 * Threads: http_threads event loops (loop 0 runs on the main thread and
 * also watches the signalfd), store_workers store threads, one sync, one
 * sweep, one metrics, one rotate and one heap worker, plus the
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

/* The candidates for eviction a loop keeps (conn.c): the connections an
 * accept at http_max_connections closes first, from one walk of the
 * loop's connections. */
#define TIDED_EVICT_LOOK 64
/* Buckets of conn.c's per-address table (a power of two). */
#define TIDED_CLIENT_BUCKETS 4096
/* At the CRITICAL memory level each loop stops accepting, except this
 * many connections accepted while critical (conn.c): a reserve so that
 * Prometheus and /healthz probes still reach a node that is shedding load
 * (HIGH's rules still refuse every body, so a reserve connection can only
 * make bodyless requests). The listener reads until the loop's reserve is
 * in use, then pauses; a slot frees when its connection closes. */
#define TIDED_CRITICAL_RESERVE 4
/* A refused request's connection (conn.c's refusals: the body budget, the
 * memory level, framing, size) keeps reading and discarding what its
 * client still sends after the answer, so that closing does not reset the
 * connection and lose the answer: until the declared Content-Length has
 * been read, or this long passes without a byte from it (counted from the
 * last byte read; a chunked or unframed body: until the linger,
 * TIDED_LINGER_MS, ends). At most max_object_size bytes are
 * drained per connection. */
#define TIDED_DRAIN_REFUSED_MS 2000
/* conn_refuse's body_left when the bytes still to come are not known. */
#define TIDED_BODY_UNKNOWN UINT64_MAX

typedef struct tided_server tided_server;
typedef struct tided_loop tided_loop;
typedef struct tided_job tided_job;
typedef struct tided_conn tided_conn;

/* ---- work.c ---------------------------------------------------------- */

/* What a job asks; set when the job is made and never changed. */
enum tided_job_kind {
    TIDED_JOB_GET,       /* GET of an object the loop could not answer */
    TIDED_JOB_PUT,       /* PUT of an object; with ?sync=1 it goes on to
                            the sync worker after the store worker */
    TIDED_JOB_SWEEP,     /* POST /v1/admin/sweep */
    TIDED_JOB_METRICS,   /* GET /metrics */
    TIDED_JOB_ROTATE,    /* POST /v1/admin/rotate and /v1/admin/keep */
    TIDED_JOB_HEAP       /* GET /v1/admin/heap */
};

/* Which jobs a worker runs (tided_worker_start, tided_pool_start). */
enum tided_worker_kind {
    TIDED_WORKER_SYNC,     /* PUTs with ?sync=1, after the store: one
                              tide_node_sync a batch */
    TIDED_WORKER_SWEEP,    /* TIDED_JOB_SWEEP, one sweep a batch */
    TIDED_WORKER_METRICS,  /* TIDED_JOB_METRICS, one page a batch */
    TIDED_WORKER_ROTATE,   /* TIDED_JOB_ROTATE, each alone */
    TIDED_WORKER_HEAP,     /* TIDED_JOB_HEAP, one report a batch */
    TIDED_WORKER_STORE     /* the pool: TIDED_JOB_GET and TIDED_JOB_PUT, a
                              batch per thread at a time */
};
/* PUTs in one store batch at most (a GET is a batch of its own). */
#define TIDED_STORE_BATCH_MAX 16

/*
 * One request waiting for a worker. Allocated with malloc by the loop
 * thread, queued to a worker, filled by it and sent back to `loop` as a
 * message; the loop answers `req` when it is still there and frees the job.
 * `req` and `guard` are read and written on the loop thread only.
 *
 * A tagged union: `kind` says which member of `u` is in use, and it is set
 * once, when the job is made. A member is read and written only under its
 * kind (tided_job_free frees what the kind holds).
 */
struct tided_job {
    h2o_multithread_message_t msg;   /* first: the loop's queue links it */
    tided_job   *next;               /* the worker's queue, a loop's staged
                                        jobs */
    tided_loop  *loop;
    h2o_req_t   *req;                /* NULL once h2o disposed the request */
    struct tided_guard *guard;       /* the request's guard while it lives */
    enum tided_job_kind kind;
    /* Filled by the worker: */
    int          rc;                 /* the worker's call's return; a PUT's
                                        is its sync's (0 without ?sync=1) */
    char         detail[256];        /* tide_last_error() of a failure */
    uint64_t     batch;              /* which run of its worker served it */
    size_t       batch_size;         /* how many jobs that run served */
    union {
        /* GET and PUT: the key, key_size bytes after key_hex in the job's
         * allocation. */
        struct tided_job_get {
            const uint8_t  *key;
            tide_cache_obj *obj;     /* what the store found: a reference,
                                        released with the job when nobody
                                        takes it */
        } get;
        struct tided_job_put {
            const uint8_t *key;
            void    *value;          /* the body's copy (malloc'd by the
                                        loop: h2o may free the request's
                                        while the job is at a worker); the
                                        store worker frees it after the put */
            int64_t  value_held;     /* bytes of value in TIDE_MEM_HTTP and
                                        srv->body_in_handlers, given back
                                        when value is freed */
            size_t   len;            /* the value's bytes */
            int      sync;           /* ?sync=1: on to the sync worker */
            int      put_rc;         /* tide_node_put's return: 0 (stored),
                                        TIDE_EEXIST, or its error */
        } put;
        struct tided_job_sweep {
            tide_node_sweep_report report;
        } sweep;
        /* METRICS and HEAP: the page or the report (malloc'd; the loop
         * copies it into the request's pool and frees it), NULL when
         * rendering failed or there is none. */
        struct tided_job_page {
            char   *text;
            size_t  text_len;
            int     heap_kind;       /* heap: TIDE_MEM_HEAP_* (mem/alloc.h) */
            int     family;          /* heap: the allocator, TIDE_MEM_ALLOC_* */
        } page;
        struct tided_job_rotate {
            void    *keys;           /* the keep-list (malloc'd by the loop,
                                        nkeys * key_size bytes, freed with
                                        the job) */
            size_t   nkeys;
            int      gens_enabled;   /* the node has generations */
            int      keep_only;      /* POST /v1/admin/keep: copy, do not rotate */
            int      has_expect;     /* rotate?expect=R: only while the count is R */
            int      stale;          /* rotate?expect: the count was not R */
            uint64_t expect;
            uint64_t rotations;      /* keep: the count it copied at;
                                        rotate?expect: the count after (or the
                                        present one when it moved: stale) */
            tide_node_rotation_report rotation;
        } rotate;
    } u;
    char         key_hex[];          /* GET, PUT: the key in hex, 2 *
                                        key_size + 1 bytes allocated with the
                                        job, then the key's bytes */
};

typedef struct tided_worker {
    const char     *name;            /* "sync", "sweep", "store" */
    enum tided_worker_kind kind;
    tided_server   *srv;
    pthread_t       tid;
    pthread_t      *tids;            /* the store pool's threads (nthreads) */
    unsigned        nthreads;        /* threads running (1 but for the pool) */
    int             started;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    tided_job      *head, *tail;     /* queued, oldest first */
    int             stop;
    uint64_t        batches;         /* node calls made; for the store pool,
                                        batches taken (under mu) */
    uint64_t        jobs;            /* jobs served (under mu) */
    /* The store pool (work.c's essay). Under mu: */
    size_t          cap;             /* jobs waiting at most (0: no bound) */
    size_t          put_cap;         /* PUTs waiting at most: 3/4 of cap, >= 1 */
    size_t          queued;          /* jobs in head..tail */
    size_t          queued_puts;     /* of them PUTs */
    unsigned        idle;            /* threads waiting on cv */
    unsigned        wakes;           /* signals sent that no thread woke for yet */
    uint64_t        copies;          /* PUT body copies queued */
    uint64_t        gets, puts;      /* store jobs taken, by kind */
    /* Atomic (the loop's reservation, and each job's start and end, take
     * no lock): */
    atomic_ullong   slots;           /* depth (low 32 bits): slots taken, by
                                        jobs a loop is making or has staged,
                                        jobs queued and jobs in a batch not
                                        started; of it the PUTs' (high 32) */
    atomic_ullong   running;         /* jobs a thread is running now */
    atomic_ullong   refused;         /* tided_pool_reserve calls refused: full */
    atomic_ullong   dropped;         /* jobs dropped unrun at stop */
    atomic_int      halt;            /* the pool's stop (stop, read without mu) */
    int             gate_fd;         /* TIDE_TEST_STORE_GATE's FIFO, or -1 */
} tided_worker;

/* Start the worker thread. Returns 0 or TIDE_ENOMEM (thread creation). */
int  tided_worker_start(tided_worker *w, tided_server *srv, const char *name, enum tided_worker_kind kind);
/* Start the store pool: `threads` threads (1..256) taking TIDED_JOB_GET and
 * _PUT jobs in batches (a GET alone, or up to TIDED_STORE_BATCH_MAX PUTs,
 * a thread's share of the queued PUTs with the idle threads, at least 4),
 * each job still its own node call and its own answer,
 * at most `cap` (>= 1) of them waiting, PUTs at most 3/4 of cap (at least
 * 1). Returns 0, or TIDE_ENOMEM when a thread cannot start (those started
 * are stopped). A test hook: TIDE_TEST_STORE_GATE=FIFO makes every thread
 * wait for one byte from the FIFO before each job, or for the pool's stop
 * (work.c). tided_worker_stop of the pool drops the waiting GETs unrun,
 * and the waiting PUTs too when srv->stop_hurried is set; it runs the
 * other PUTs first. */
int  tided_pool_start(tided_worker *w, tided_server *srv, unsigned threads, size_t cap);
/* Reserve a slot for a store job of kind TIDED_JOB_PUT (`put` 1) or _GET
 * before anything of it is made: 0, or -1 when `cap` slots are taken or,
 * for a PUT, `put_cap` PUTs are (the rest of the queue is the reads'
 * reserve, so a write burst does not shed GET misses); the refusal is
 * counted. A reserved slot is filled by tided_pool_submit or given back by
 * tided_pool_cancel, once; the pool gives it back when a thread starts the
 * job. Any thread; no lock (a compare-and-swap). */
int  tided_pool_reserve(tided_worker *w, int put);
void tided_pool_cancel(tided_worker *w, int put);
/* Hand `job` (complete: a worker may take it at once) to the pool in the
 * slot reserved for it: staged on `l` until tided_pool_flush at the end
 * of the loop's turn, or queued now when `l` does not stage (l->staging
 * 0). Loop thread of `l`; never refuses. */
void tided_pool_submit(tided_worker *w, tided_loop *l, tided_job *job);
/* Queue every job `l` staged, with one lock, and wake as many idle threads
 * as the queue's batches need: one per GET, one per 4 PUTs (none when
 * enough are awake). Loop thread of `l`;
 * nothing to do costs a load. */
void tided_pool_flush(tided_worker *w, tided_loop *l);
/* Free a job coming back and what it still holds (text, keys, a put's body
 * copy and its accounting, a get's reference). Loop thread. */
void tided_job_free(tided_job *job);
struct tide_metrics_writer;
/* The store pool's families on /metrics (queue depth, running, capacity,
 * jobs by kind, refusals). Any thread. */
void tided_pool_families(tided_worker *w, struct tide_metrics_writer *mw);
/* Queue `job`; the worker answers it with one node call shared with every
 * job queued before that call starts (a rotate job is never shared: each
 * is its own rotation, with its own keep-list). Any thread; never blocks
 * long. */
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
    /* work.c: store jobs made in this turn of the event loop, handed to
     * the store pool together after it (tided_pool_flush); staging is 0
     * where no loop_run turns (fuzz_http): then each job is queued alone */
    tided_job     *staged_head, *staged_tail;
    size_t         staged, staged_puts;
    int            staging;
    int            stopping;         /* this loop has closed its listener */
    uint64_t       deadline_us;      /* monotonic: end of the drain */
    atomic_int     ready;            /* set up: its receivers may be sent to */
    atomic_ullong  turned_us;        /* monotonic: its last event-loop turn
                                        (notify.c's watchdog reads it) */
    /* conn.c: this loop's connections, longest idle first */
    tided_conn    *conn_head, *conn_tail;
    uint64_t       last_scan_ms;     /* h2o_now of the last scan */
    int            scan_pending;     /* a scan was due but skipped by the rate */
    size_t         unparsed;         /* this loop's share of srv->body_unparsed */
    int            listener_paused;  /* conn.c: reading the listener is stopped
                                        while the memory level is CRITICAL and
                                        the reserve is in use */
    int            critical;         /* conn.c: the level was CRITICAL at the
                                        last scan or accept (for the log) */
    unsigned       reserve_used;     /* conn.c: open connections accepted while
                                        CRITICAL (TIDED_CRITICAL_RESERVE) */
    unsigned       draining;         /* conn.c: refused connections not closed yet */
    /* conn.c: what an accept at http_max_connections evicts, in order
     * (evict[evict_next..evict_n); NULL where one closed since), from the
     * walk at evict_built_ms */
    tided_conn    *evict[TIDED_EVICT_LOOK];
    unsigned       evict_n, evict_next;
    uint64_t       evict_built_ms;
    struct tided_reqstats *stats;    /* reqstats.c: this loop's request metrics
                                        (its own cache lines; NULL: not counted) */
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
    tided_worker   sync_worker, sweep_worker, metrics_worker, rotate_worker, heap_worker;
    tided_worker   store_pool;       /* PUTs and GET misses */
                                     /* heap: GET /v1/admin/heap (not started by
                                        fuzz_http, like rotate) */
    int            signal_fd;
    int            listen_fd;        /* the bound socket (loop 0 uses it) */
    char           listen_text[300]; /* "127.0.0.1:8080", "[::1]:8080" */
    unsigned       max_connections;  /* http_max_connections, fitted to RLIMIT_NOFILE */
    unsigned       max_per_client;   /* http_max_connections_per_client (0: none) */
    uint64_t       idle_timeout_ms;  /* http_idle_timeout */
    uint64_t       request_timeout_ms; /* http_request_timeout (h2o's bound) */
    uint64_t       header_timeout_ms;  /* http_header_timeout */
    uint64_t       body_min_rate;    /* http_body_min_rate, bytes a second (0: none) */
    uint64_t       body_grace_ms;    /* http_body_grace */
    uint64_t       body_budget;      /* http_body_budget, bytes */
    atomic_uint    connections;
    atomic_ullong  connections_total, connections_refused, connections_refused_per_client;
    atomic_ullong  connections_evicted, connections_idle_closed;
    atomic_ullong  connections_slow_evicted; /* conn.c: evicted while a request
                                                was arriving or being refused */
    atomic_ullong  requests_refused_framing, requests_refused_too_large, requests_refused_budget;
    atomic_ullong  requests_timed_out_head, requests_timed_out_body;  /* conn.c: 408s */
    atomic_ullong  body_admitted;    /* conn.c: bytes declared by admitted heads */
    atomic_ullong  body_in_handlers; /* api.c: bodies of requests in handlers */
    atomic_ullong  body_unparsed;    /* conn.c: bytes of heads not complete yet */
    /* The memory limit: every overload 503 tided sent, by reason
     * (a PUT refused in its handler or by the node; a body refused by the
     * scan before it was read), and how many loops have paused their
     * listener (conn.c, at CRITICAL). */
    atomic_ullong  overload_rejected_write, overload_rejected_body;
    atomic_ullong  overload_rejected_queue;  /* the store pool's queue was full */
    atomic_int     stop_hurried;     /* a second stop signal came (loop.c):
                                        the store pool drops queued PUTs */
    atomic_uint    listeners_paused;
    /* memory_limit's source text as /v1/status shows it ("flag
     * --memory-limit", "file tide.cfg:3", the cgroup's, "default" when
     * nothing set it), set at startup and by SIGHUP (tided.c's
     * memory_source_set); under
     * memory_mu (SIGHUP writes on loop 0 while other loops read). */
    pthread_mutex_t memory_mu;
    char           memory_source[200];
    pthread_mutex_t clients_mu;      /* clients */
    struct tided_client *clients[TIDED_CLIENT_BUCKETS];  /* conn.c: open connections per address */
    atomic_int     state;            /* TIDED_RUNNING, _DRAINING, _HURRY */
    pthread_mutex_t done_mu;         /* loops_done, and the parked loops */
    pthread_cond_t done_cv, park_cv;
    unsigned       loops_done;       /* loop threads drained (1..n-1) */
    unsigned       loops_running;    /* loops that run, loop 0 included */
    atomic_int     loop_failed;      /* 1: an event loop failed (exit 1) */
    int            hup_ignored;      /* SIGHUP while stopping: logged once (loop 0) */
    /* SIGHUP (tided.c's main sets it before the loops run): read the
     * settings again. Runs on loop 0, the main thread. */
    void         (*reload)(tided_server *srv);
    uint64_t       started_mono_us;
    uint64_t       started_unix_s;
};

/* Bind and listen on cfg->listen_host:listen_port (one socket; the loops
 * share it). Returns 0 or TIDE_EIO with a message naming the address. */
int  tided_listen(tided_server *srv);
/* Make the loops (contexts, receivers, listener sockets). Returns 0 or
 * TIDE_ENOMEM / TIDE_EIO. */
int  tided_loops_init(tided_server *srv);
/* The loop's evloop, h2o context, accept context and receivers (no
 * listener, no signals): what every loop has, and all fuzz_http's has. On
 * the loop's own thread. */
void tided_loop_context_init(tided_loop *l);
/* Run loops 1..n-1 on threads and loop 0 on the calling thread, until a
 * signal stops them and every one has drained (its thread then parks until
 * the process exits). Returns 0, or TIDE_EIO when an event loop failed
 * (logged; every loop was stopped): tided then exits 1, so systemd's
 * Restart=on-failure restarts it. */
int  tided_loops_run(tided_server *srv);
/* Stop (pause 1) or start again (pause 0) accepting on loop `l`'s listener
 * (conn.c's scan, while the memory level is CRITICAL): connections already
 * accepted are served; new ones wait in the kernel's backlog. Nothing when
 * the listener is closed (a stop). Loop thread. */
void tided_loop_listener_pause(tided_loop *l, int pause);

/* ---- notify.c: sd_notify (systemd) ------------------------------------ */

/* Read WatchdogSec= (sd_watchdog_enabled) and log it. Main thread, before
 * the loops. */
void    tided_notify_init(void);
/* READY=1 with STATUS="<why>: serving on ADDR, the store in DIR". */
void    tided_notify_ready(const tided_server *srv, const char *why);
/* RELOADING=1 (with MONOTONIC_USEC) before SIGHUP's reload. */
void    tided_notify_reloading(void);
/* STOPPING=1 with STATUS=why. */
void    tided_notify_stopping(const char *why);
/* Loop 0, every turn: WATCHDOG=1 when a half interval has passed and every
 * loop turned lately (notify.c's essay). Returns the ms until the next
 * ping is due (INT32_MAX when the watchdog is off). */
int32_t tided_notify_watchdog(tided_server *srv);
/* EXTEND_TIMEOUT_USEC every 10 s from a thread, with STATUS=what, until
 * extend_end (at most 15 min). Main thread only; a no-op without
 * NOTIFY_SOCKET. */
void    tided_notify_extend_begin(const char *what);
void    tided_notify_extend_end(void);

/* ---- conn.c ---------------------------------------------------------- */

/* One accepted connection (conn.c's essay). Touched by its loop only. */
struct tided_conn {
    tided_loop   *loop;
    h2o_socket_t *sock;
    tided_conn   *prev, *next;       /* the loop's list, longest idle first */
    struct tided_client *client;     /* its address's count, or NULL */
    uint64_t      idle_since_ms;     /* accept, or the end of its last request */
    size_t        accounted;         /* its buffer's bytes in TIDE_MEM_HTTP */
    uint64_t      admitted;          /* bytes its admitted head declared (0: its
                                        pending request's head is not checked) */
    int           busy;              /* requests in a handler or being answered */
    uint64_t      close_at_ms;       /* refused: when to close it (0: not) */
    h2o_socket_cb read_cb;           /* refused: h2o's read callback */
    uint64_t      drain_left;        /* refused: bytes still to read and drop */
    int           drain_known;       /* refused: drain_left is the rest of a
                                        declared body (close once read) */
    int           reserve;           /* accepted while CRITICAL: holds one of
                                        its loop's reserve slots */
    uint64_t      head_since_ms;     /* the scan first saw bytes of its pending
                                        request (0: none buffered) */
    uint64_t      body_since_ms;     /* the scan admitted that request's head:
                                        its body is arriving (0: not yet) */
    size_t        head_len;          /* the admitted head's bytes */
    int           answered;          /* a request of it was answered */
    unsigned      evict_slot;        /* its place in its loop's evict[], + 1
                                        (0: not there) */
};

enum { TIDED_HEAD_OK = 0, TIDED_HEAD_INCOMPLETE = 1, TIDED_HEAD_BAD = 2 };

/* The details of the 400 and 413 that conn.c and api.c both send: with
 * tided_head.reason, and with max_object_size. */
#define TIDED_DETAIL_FRAMING   "the request has %s; refused, and the connection closed"
#define TIDED_DETAIL_TOO_LARGE "the request body is larger than max_object_size = %zu bytes"

/* What the head check found in a request's head. */
typedef struct tided_head {
    size_t      head_len;            /* bytes up to and with the blank line */
    unsigned    content_lengths;     /* Content-Length headers seen */
    uint64_t    content_length;      /* its value */
    int         transfer_encoding;   /* a Transfer-Encoding header was seen */
    int         safe_method;         /* the method is GET or HEAD (never refused
                                        by the memory level) */
    const char *reason;              /* TIDED_HEAD_BAD: what is wrong */
} tided_head;

/* Read the head at buf[0..len) (request line and headers, up to the blank
 * line): TIDED_HEAD_INCOMPLETE without the blank line yet; TIDED_HEAD_BAD
 * with out->reason for two Content-Length headers, Content-Length with
 * Transfer-Encoding, or a Content-Length that is not a decimal number;
 * else TIDED_HEAD_OK. Pure; any thread; reads len bytes at most. */
int  tided_head_check(const char *buf, size_t len, tided_head *out);
/* The per-client table's lock (before any loop runs). */
void tided_clients_init(tided_server *srv);
/* Admit an accepted socket (per-client bound, total bound with eviction
 * of the connection furthest behind) and hand it to h2o, or close it.
 * Loop thread. Cost: at the total bound, a walk of the loop's connections
 * once per TIDED_EVICT_LOOK evictions (or per second). */
void tided_conn_accept(tided_loop *l, h2o_socket_t *sock);
/* Run the scan (idle close, head check, body budget, a slow head's or
 * body's 408, the memory level's body refusal at HIGH and listener pause
 * at CRITICAL, accounting) when
 * TIDED_SCAN_MS passed since the last; else note that one is due. Loop
 * thread. Cost: a few loads per connection of the loop. */
void tided_conn_poll(tided_loop *l);
/* How long the loop may sleep before the next scan is due. */
int32_t tided_conn_wait_ms(tided_loop *l);
/* A request reached its handler (api.c's guard): *conn gets the record
 * of its connection (NULL when it came another way, as in fuzz_http),
 * marked busy, its admission handed over to the guard; returns the head
 * check (TIDED_HEAD_*) of a request with a body whose head the scan did
 * not admit yet (one lookup of the socket; the head's bytes at most).
 * request_end: the guard is disposed. Loop thread. */
int  tided_conn_request_begin(h2o_req_t *req, tided_conn **conn, tided_head *head);
void tided_conn_request_end(tided_conn *c);
/* Count `len` more bytes (a PUT's copy for its store job) in
 * srv->body_in_handlers against http_body_budget: 0, or -1 with nothing
 * counted when bytes beyond `own` (the request's own body) are held and
 * the total would pass the budget (the scan's rule: a lone request is
 * never refused), the refusal counted as the scan's body_budget ones. The
 * caller gives the bytes back with atomic_fetch_sub. Any thread. */
int  tided_body_reserve(tided_server *srv, uint64_t own, uint64_t len);
/* The connection bounds' figures: a new JSON object for /v1/status's
 * "http", and the tide_http_* families they add to /metrics. Any thread. */
struct json_t;
struct json_t *tided_conn_json(tided_server *srv);
struct tide_metrics_writer;
void tided_conn_families(tided_server *srv, struct tide_metrics_writer *w);
/* The detail of an overload 503 into buf: the node's level, the
 * bytes counted and which figure counts, memory_limit, and the mark to fall
 * below for writes to resume (HIGH's leave mark). Returns the level. Any
 * thread; one lock of the node's governor. */
int  tided_overload_detail(tided_server *srv, char *buf, size_t cap);

/* ---- reqstats.c: request metrics (per loop, summed at scrape) ---------- */

enum { TIDED_ROUTE_OBJECT, TIDED_ROUTE_HEALTHZ, TIDED_ROUTE_METRICS, TIDED_ROUTE_STATUS, TIDED_ROUTE_ADMIN,
       TIDED_ROUTE_OTHER, TIDED_ROUTES };
#define TIDED_METHODS     10     /* GET HEAD PUT POST DELETE OPTIONS PATCH CONNECT TRACE, other */
#define TIDED_CODES       600    /* slot = status 100..599; slot 0: none sent */
#define TIDED_LAT_BUCKETS 16

/* The duration histogram's upper bounds in seconds (50 us .. 10 s; the
 * reasons are in reqstats.c's essay); +Inf follows. */
extern const double TIDED_LAT_BOUNDS_S[TIDED_LAT_BUCKETS];

/* One loop's figures. Written by the loop's thread only; read by a scrape
 * with relaxed loads. Buckets are not cumulative here. */
typedef struct tided_reqstats {
    uint64_t requests[TIDED_METHODS][TIDED_CODES];
    uint64_t bucket[TIDED_ROUTES][TIDED_LAT_BUCKETS + 1];
    uint64_t sum_ns[TIDED_ROUTES];
    uint64_t bytes_in, bytes_out;     /* request and response bodies */
} tided_reqstats;

/* Give `l` its figures, zeroed, on cache lines of their own. 0 or -1 (out
 * of memory). Before the loop runs; freed never (the process's life). */
int  tided_reqstats_alloc(tided_loop *l);
/* The method's slot (TIDED_METHODS - 1, "other", for anything not listed)
 * and the route of a raw request path (the query ignored). Pure. */
int  tided_reqstats_method(const char *m, size_t n);
int  tided_reqstats_route(const char *path, size_t n);
/* Count `req` (its method, status, entity and bytes_sent) on loop `l`,
 * and its duration since `start_ns` (tide_clock_mono_ns) unless that is 0.
 * When h2o disposes the request. Loop thread; a few stores, no atomics. */
void tided_reqstats_done(tided_loop *l, h2o_req_t *req, uint64_t start_ns);
/* Count an answer conn.c wrote itself: the method from the head's first
 * `len` bytes at `head` (may be NULL), `status`, `body_out` bytes sent. */
void tided_reqstats_raw(tided_loop *l, const char *head, size_t len, int status, uint64_t body_out);
/* Count h2o's own answers (no handler ran) on `hostconf`'s fallback path. */
void tided_reqstats_register(h2o_hostconf_t *hostconf);
/* The tide_http_requests_total, _request_duration_seconds and the byte
 * families, every loop summed. Any thread. 0, or -1 when out of memory
 * (nothing written). Cost: one pass over every loop's ~50 KiB. */
struct tide_metrics_writer;
int  tided_reqstats_families(tided_server *srv, struct tide_metrics_writer *w);

/* ---- api.c, api_metrics.c (tided_metrics_render) ----------------------- */

/* Set up srv->globalconf as tided serves (limits from srv->cfg and
 * srv->max_object_size, HTTP/1.x only) with one host whose "/" is tided's
 * handler (tided_api_register); returns that host. Startup only. */
h2o_hostconf_t *tided_api_setup(tided_server *srv);
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
