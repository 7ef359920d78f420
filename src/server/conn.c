/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c: tided's connections, from accept to close: who may connect, how
 * long a connection may sit idle, and how many request bytes tided holds
 * for requests that have not reached a handler yet.
 *
 * Why this exists. h2o 2.2 reads a whole request (head and body) into the
 * socket's input buffer before any handler runs, and bounds a connection
 * only by time (http1.req_timeout: from when the connection began to wait
 * for a request to its last byte, head and body together, ended by a close
 * without an answer) and size (max_request_entity_size). On its own it
 * lets 4096 connections that send nothing lock every other client out,
 * 2,500 connections each holding 1 MiB - 1 byte of a body take 2.5 GiB
 * without a handler ever seeing one, and a client sending a byte a second
 * hold a connection for the whole request timeout. This file adds what a
 * server facing untrusted clients needs, without changing h2o:
 *
 *   - Admission at accept: at most http_max_connections open at once and
 *     http_max_connections_per_client from one address. At the total bound
 *     a new connection evicts one of the loop's instead of being refused,
 *     so neither idle nor slow connections can lock a client out. The
 *     order (conn_behind): first an idle one that has been answered,
 *     longest idle first (its client loses nothing: a keep-alive close);
 *     then one refused and still draining; then the one furthest past the
 *     first deadline it is held to: h2o's request timeout, its head's
 *     (from the head's first byte; for a connection that has sent nothing
 *     yet, from its opening, so the newest, a client that has not had a
 *     turn to send, goes last) or its body's rate. A connection whose
 *     request is in a handler is never evicted; only when every one of the
 *     loop's is is the new one refused. The order comes from a walk of the
 *     loop's connections that keeps the first TIDED_EVICT_LOOK (at most
 *     one walk per TIDED_SCAN_MS, used for up to TIDED_EVICT_STALE_MS), so
 *     an accept at the bound costs a walk only once per that many
 *     evictions.
 *   - Idle close: a connection with no request in flight and nothing
 *     buffered for http_idle_timeout seconds (since accept or since its
 *     last response) is closed.
 *   - The head check: each connection holding bytes of a request that has
 *     not reached a handler has that request's head read by this file's
 *     own parser (a complete head once; an incomplete one again from its
 *     start at each scan until it is complete): two Content-Length headers, or Content-Length
 *     with Transfer-Encoding, is 400 (request smuggling behind a proxy:
 *     h2o would take the first and read the rest as a second request); a
 *     Content-Length over max_object_size is 413. Both are answered before
 *     the body is read, and the connection is closed.
 *   - The body budget: a head that passes is admitted only if the bytes it
 *     declares (head + Content-Length; max_object_size for chunked) fit in
 *     http_body_budget beside what is already admitted, in handlers and
 *     buffered without a head yet; otherwise it is answered 503 with
 *     Retry-After before its body is read. A request is always admitted
 *     when nothing else is, so one request of max_object_size always
 *     fits.
 *   - The memory level (node.h's governor): while the node's
 *     level is HIGH or above, a head that declares a body (Content-Length
 *     above 0, or Transfer-Encoding) is answered 503 overloaded with
 *     Retry-After before its body is read, unless its method is GET or
 *     HEAD (reads are never refused by the level). While it is CRITICAL
 *     each loop accepts only a reserve of TIDED_CRITICAL_RESERVE new
 *     connections (server.h), so that monitoring (Prometheus, /healthz
 *     probes) still reaches a node whose idle close and h2o's keep-alive
 *     timeout have closed the connections it had; once the reserve is in
 *     use the loop's listener stops (tided_loop_listener_pause): further
 *     connections wait in the kernel's backlog, and the connections
 *     already open are served. A slot frees when its connection closes
 *     (the listener reads again); the first scan below CRITICAL starts
 *     it again for good. A reserve connection is under HIGH's rules: its
 *     bodies are refused, so it can only make bodyless requests. Each
 *     loop logs entering and leaving CRITICAL once, at INFO.
 *   - Slow requests: a pending request's head must be complete
 *     http_header_timeout after the scan first saw a byte of it, and once
 *     its head is admitted its body must keep http_body_min_rate after
 *     http_body_grace: t ms after the head, at least (t - grace) x rate /
 *     1000 bytes of body in the buffer (an average, so a stall that is
 *     made up for is forgiven). A request behind either is answered 408
 *     and closed (the refusal below, lingering TIDED_LINGER_MS whatever the
 *     client still sends: it is slow by definition). These act inside
 *     h2o's req_timeout, which stays the bound of every request.
 *   - Accounting: the input buffers of connections not in a handler, and
 *     each connection's record, are counted in the "http" consumer (api.c's
 *     guard counts a request's body once a handler has it).
 *
 * The scan. The checks above run in tided_conn_poll, which each loop calls
 * after every turn of its event loop, at most once per TIDED_SCAN_MS; it
 * walks the loop's connections (a few loads per connection, about 0.3 ms
 * for 4096, plus the bytes of partial heads). A loop wakes at least once
 * a second for it. So a request is checked within one scan of its head
 * arriving: a client faster than that reaches the handler first, where
 * the same head check runs (tided_conn_request_begin, unless the scan
 * already admitted that head) and api_objects.c's max_object_size 413 with the body already
 * held (at most max_object_size + 1 bytes, which h2o enforces). What the
 * budget bounds is therefore the bytes admitted plus what the loops read
 * within one scan interval.
 *
 * Answering outside h2o. A refusal happens while h2o's HTTP/1 connection
 * waits for request bytes, so no h2o request exists to answer with. The
 * scan stops h2o reading the socket, writes the whole response (under 512
 * bytes, into an empty send buffer) with send(), shuts the write side so
 * the client sees the end, and frees the buffered bytes. Then the close
 * drains: a client still sending its body would have the connection reset
 * by a close with unread bytes, and a reset loses the answer it has not
 * read yet. So each scan reads and drops what the client still sends (a
 * 16 KiB buffer on the scan's stack, nothing held or accounted), until
 * the declared Content-Length has been read, the client closes, at most
 * max_object_size bytes were dropped, or TIDED_DRAIN_REFUSED_MS passes
 * without a byte (counted from the last byte read, so a slow sender is not
 * cut short; a body of unknown length: chunked, or a head that is not complete or
 * is refused for its framing or size: until TIDED_LINGER_MS passes). Then
 * it closes the connection through h2o's own read callback with an error,
 * exactly as h2o does when the peer goes away. While a loop has such a
 * connection it scans every TIDED_SCAN_MS.
 *
 * Invariants:
 *   1. A connection's record lives exactly as long as its socket: made in
 *      tided_conn_accept, freed in the socket's on_close callback, and only
 *      its own loop's thread touches it (loop.c invariant 1).
 *   2. srv->body_admitted == the sum of every record's `admitted`;
 *      srv->body_unparsed == the sum of every loop's `unparsed`.
 *   3. Each record's `accounted` bytes are in TIDE_MEM_HTTP, and are
 *      taken out when it closes.
 *   4. A record is refused at most once; after a refusal h2o never reads
 *      its socket again.
 *   5. l->listener_paused is 1 exactly while the loop's listener is
 *      stopped by the level (CRITICAL and the reserve in use);
 *      srv->listeners_paused is the number of loops with it set.
 *   6. l->draining == the number of the loop's records refused and not
 *      closed yet (close_at_ms set); each drops at most max_object_size
 *      bytes after its answer.
 *   7. l->reserve_used == the number of the loop's records with `reserve`
 *      set, and is at most TIDED_CRITICAL_RESERVE.
 *   8. A record's head_since_ms is 0 while its request is in a handler
 *      and after a scan found its buffer empty; otherwise it is the time of
 *      the scan that first saw a byte of its pending request. body_since_ms
 *      is not 0 only while head_since_ms is not and the head is admitted.
 *   9. l->evict[i] == c exactly when c->evict_slot == i + 1; an entry is
 *      cleared when it is taken or its record closes, so evict[] never
 *      points to a freed record.
 *
 * Never: h2o_socket_close a socket once h2o_accept has it (h2o's
 * connection still points to it; the read callback closes it through
 * h2o); answer a connection whose request is in a handler.
 */
#include "server/server.h"

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <jansson.h>

#include "mem/account.h"
#include "node/metrics.h"
#include "util/log.h"

/* The most often a loop scans its connections. */
#define TIDED_SCAN_MS 10
/* How long a refused connection whose body length is unknown is drained
 * (server.h's TIDED_DRAIN_REFUSED_MS for one whose length is known). */
#define TIDED_LINGER_MS 1000
/* The eviction order's ranks (conn_behind): an idle connection that was
 * answered goes first, then a refused one still draining, then the rest
 * by how far behind their deadline they are (milliseconds, far below
 * these). */
#define TIDED_RANK_IDLE    (INT64_C(1) << 52)
#define TIDED_RANK_REFUSED (INT64_C(1) << 51)
#define TIDED_NOT_EVICTABLE INT64_MIN
/* A walk of the candidates is used for at most this long, and a new one
 * waits at least TIDED_SCAN_MS after the last. */
#define TIDED_EVICT_STALE_MS 1000
/* A partial head longer than this is refused while the budget is spent. */
#define TIDED_LONG_HEAD (16 * 1024)

/* ---- clients ---------------------------------------------------------- */

struct tided_client {
    struct tided_client *next;
    unsigned char addr[16];          /* IPv4 as ::ffff:a.b.c.d */
    unsigned      count;             /* connections open from it */
};

/* The peer's address as 16 bytes (IPv4 mapped into IPv6). Returns 0 or -1
 * (not an IP socket). */
static int peer_key(h2o_socket_t *sock, unsigned char key[16])
{
    struct sockaddr_storage ss;
    socklen_t len = h2o_socket_getpeername(sock, (struct sockaddr *)&ss);

    if (len == 0) return -1;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        memset(key, 0, 10);
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &in->sin_addr, 4);
        return 0;
    }
    if (ss.ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return 0;
    }
    return -1;
}

static size_t client_bucket(const unsigned char key[16])
{
    uint64_t h = 1469598103934665603ull;      /* FNV-1a: 16 bytes, no need for more */
    for (int i = 0; i < 16; i++) h = (h ^ key[i]) * 1099511628211ull;
    return (size_t)(h & (TIDED_CLIENT_BUCKETS - 1));
}

/* Count one more connection from `key`, unless it has `limit` already
 * (limit 0: no bound). Returns the client, or NULL when over the bound or
 * out of memory (*over says which). Any thread. */
static struct tided_client *client_take(tided_server *srv, const unsigned char key[16], unsigned limit, int *over)
{
    struct tided_client *c, **slot;

    *over = 0;
    pthread_mutex_lock(&srv->clients_mu);
    slot = &srv->clients[client_bucket(key)];
    for (c = *slot; c; c = c->next)
        if (memcmp(c->addr, key, 16) == 0) break;
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c) {
            memcpy(c->addr, key, 16);
            c->next = *slot;
            *slot = c;
            tide_mem_account_alloc(TIDE_MEM_HTTP, (int64_t)sizeof *c);
        }
    } else if (limit != 0 && c->count >= limit) {
        *over = 1;
        c = NULL;
    }
    if (c) c->count++;
    pthread_mutex_unlock(&srv->clients_mu);
    return c;
}

static void client_give(tided_server *srv, struct tided_client *client)
{
    struct tided_client **slot;

    pthread_mutex_lock(&srv->clients_mu);
    assert(client->count > 0);
    if (--client->count == 0) {
        for (slot = &srv->clients[client_bucket(client->addr)]; *slot != client; slot = &(*slot)->next)
            assert(*slot != NULL);
        *slot = client->next;
        free(client);
        tide_mem_account_sub(TIDE_MEM_HTTP, (int64_t)sizeof *client);
    }
    pthread_mutex_unlock(&srv->clients_mu);
}

void tided_clients_init(tided_server *srv)
{
    pthread_mutex_init(&srv->clients_mu, NULL);
}

/* ---- the head check ----------------------------------------------------- */

static int name_is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && strncasecmp(p, lit, n) == 0;
}

int tided_head_check(const char *buf, size_t len, tided_head *out)
{
    const char *p = buf, *end = buf + len, *line, *nl;
    int first = 1;

    memset(out, 0, sizeof *out);
    /* Blank lines before a request line are allowed (RFC 9112 2.2). */
    while (p < end && (*p == '\r' || *p == '\n')) p++;
    for (;;) {
        size_t n;
        line = p;
        nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return TIDED_HEAD_INCOMPLETE;
        p = nl + 1;
        n = (size_t)(nl - line);
        if (n > 0 && line[n - 1] == '\r') n--;
        if (n == 0) break;                      /* the end of the head */
        if (first) {                            /* the request line */
            first = 0;
            out->safe_method = (n > 4 && memcmp(line, "GET ", 4) == 0) || (n > 5 && memcmp(line, "HEAD ", 5) == 0);
            continue;
        }
        if (line[0] == ' ' || line[0] == '\t') continue;   /* obs-fold: h2o refuses it */
        {
            const char *colon = memchr(line, ':', n), *v, *ve;
            if (colon == NULL) continue;            /* h2o refuses it as malformed */
            v = colon + 1;
            ve = line + n;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            if (name_is(line, (size_t)(colon - line), "content-length")) {
                uint64_t cl = 0;
                if (++out->content_lengths > 1) {
                    out->reason = "two Content-Length headers";
                    return TIDED_HEAD_BAD;
                }
                if (v == ve) { out->reason = "an empty Content-Length"; return TIDED_HEAD_BAD; }
                for (const char *d = v; d < ve; d++) {
                    if (*d < '0' || *d > '9' || cl > (UINT64_MAX - 9) / 10) {
                        out->reason = "a Content-Length that is not a number of bytes";
                        return TIDED_HEAD_BAD;
                    }
                    cl = cl * 10 + (uint64_t)(*d - '0');
                }
                out->content_length = cl;
            } else if (name_is(line, (size_t)(colon - line), "transfer-encoding")) {
                out->transfer_encoding = 1;
            }
        }
    }
    out->head_len = (size_t)(p - buf);
    if (out->content_lengths && out->transfer_encoding) {
        out->reason = "both Content-Length and Transfer-Encoding";
        return TIDED_HEAD_BAD;
    }
    return TIDED_HEAD_OK;
}

static void scan_level(tided_loop *l);

/* ---- answering outside h2o ---------------------------------------------- */

static void conn_release_admitted(tided_conn *c)
{
    if (c->admitted) {
        atomic_fetch_sub(&c->loop->srv->body_admitted, c->admitted);
        c->admitted = 0;
    }
}

/* The buffered bytes of `sock` that count in the "http" consumer now. */
static size_t buffer_bytes(const h2o_socket_t *sock)
{
    const h2o_buffer_t *b = sock->input;
    return b != NULL && b->bytes != NULL && b->_fd == -1 ? b->capacity + offsetof(h2o_buffer_t, _buf) : 0;
}

static void conn_set_accounted(tided_conn *c, size_t bytes)
{
    if (bytes != c->accounted) {
        tide_mem_account_add(TIDE_MEM_HTTP, (int64_t)bytes - (int64_t)c->accounted);
        /* A larger buffer is a new one (h2o reallocates): churn totals. */
        if (bytes > c->accounted) tide_mem_account_note_alloc(TIDE_MEM_HTTP, (int64_t)bytes);
        c->accounted = bytes;
    }
}

/* Answer `status` on `c`'s socket, count it in `counter`, and close it
 * after the linger (see the essay). `code` and `detail` go into the JSON
 * body as they are: they must be tided's own ASCII (they are: fixed
 * sentences and numbers, never request bytes). Returns 0, or -1 when h2o is not
 * reading the socket (then nothing was done, nothing counted). */
static int conn_refuse(tided_conn *c, int status, const char *reason, const char *code, const char *detail,
                       int retry_after, atomic_ullong *counter, uint64_t body_left, uint64_t now_ms)
{
    h2o_socket_t *sock = c->sock;
    char body[384], msg[768];
    int blen, mlen, fd;

    if (c->close_at_ms != 0 || sock->_cb.read == NULL || h2o_socket_is_writing(sock)) return -1;
    c->read_cb = sock->_cb.read;
    h2o_socket_read_stop(sock);
    blen = snprintf(body, sizeof body, "{\"error\":\"%s\",\"detail\":\"%s\"}\n", code, detail);
    if (blen < 0 || (size_t)blen >= sizeof body) blen = (int)strlen(body);
    mlen = snprintf(msg, sizeof msg,
                    "HTTP/1.1 %d %s\r\nServer: tided\r\nContent-Type: application/json\r\n"
                    "Cache-Control: no-store\r\nConnection: close\r\n%sContent-Length: %d\r\n\r\n%s",
                    status, reason, retry_after ? "Retry-After: 1\r\n" : "", blen, body);
    if (mlen < 0 || (size_t)mlen >= sizeof msg) mlen = (int)strlen(msg);
    fd = h2o_socket_get_fd(sock);
    if (send(fd, msg, (size_t)mlen, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
        tide_log(TIDE_LOG_DEBUG, "refusing a connection: send: %s", strerror(errno));
    shutdown(fd, SHUT_WR);
    tided_reqstats_raw(c->loop, sock->input->bytes, sock->input->size, status, (uint64_t)blen);
    /* h2o kept copies of what it parsed in the request's pool, never
     * pointers into the buffer it will not read again. */
    if (sock->input->bytes != NULL) {
        h2o_buffer_dispose(&sock->input);
        h2o_buffer_init(&sock->input, &h2o_socket_buffer_prototype);
    }
    conn_set_accounted(c, 0);
    conn_release_admitted(c);
    /* The draining close (server.h's TIDED_DRAIN_REFUSED_MS). */
    c->drain_known = body_left != TIDED_BODY_UNKNOWN;
    c->drain_left = body_left < c->loop->srv->max_object_size ? body_left : c->loop->srv->max_object_size;
    c->close_at_ms = now_ms + (c->drain_known ? TIDED_DRAIN_REFUSED_MS : TIDED_LINGER_MS);
    c->loop->draining++;
    atomic_fetch_add(counter, 1);
    if (tide_log_get_level() <= TIDE_LOG_DEBUG)
        tide_log(TIDE_LOG_DEBUG, "access: (request not read) -> %d %s: %s", status, code, detail);
    return 0;
}

/* Read and drop what the client of refused `c` still sends, into a small
 * buffer on the stack (nothing is held or accounted). Returns 1 when `c`
 * may close now: its declared body is read, the bound is reached, the
 * client closed its side, or the socket failed. */
static int conn_drain(tided_conn *c)
{
    char sink[16384];
    int fd = h2o_socket_get_fd(c->sock);

    while (c->drain_left > 0) {
        size_t want = c->drain_left < sizeof sink ? (size_t)c->drain_left : sizeof sink;
        ssize_t n = recv(fd, sink, want, MSG_DONTWAIT);
        if (n > 0) {
            c->drain_left -= (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
    return 1;
}

/* Close `c` through h2o (its read callback with an error, as when the peer
 * goes away). `c` is freed before this returns. */
static void conn_close_via_h2o(tided_conn *c)
{
    h2o_socket_cb cb = c->close_at_ms ? c->read_cb : c->sock->_cb.read;
    assert(cb != NULL);
    cb(c->sock, h2o_socket_error_closed);
}

/* ---- the connection list -------------------------------------------------- */

static void list_unlink(tided_loop *l, tided_conn *c)
{
    if (c->prev) c->prev->next = c->next; else l->conn_head = c->next;
    if (c->next) c->next->prev = c->prev; else l->conn_tail = c->prev;
    c->prev = c->next = NULL;
}

/* To the tail: the list runs from the longest idle to the most recent. */
static void list_append(tided_loop *l, tided_conn *c)
{
    c->prev = l->conn_tail;
    c->next = NULL;
    if (l->conn_tail) l->conn_tail->next = c; else l->conn_head = c;
    l->conn_tail = c;
}

/* Stop (pause 1) or start again (pause 0) `l`'s listener for the memory
 * level, and keep the gauge's count of paused loops (invariant 5). */
static void listener_set(tided_loop *l, int pause)
{
    tided_server *srv = l->srv;

    if (pause == l->listener_paused || (pause && l->listener == NULL)) return;
    tided_loop_listener_pause(l, pause);
    l->listener_paused = pause;
    if (pause) atomic_fetch_add(&srv->listeners_paused, 1);
    else atomic_fetch_sub(&srv->listeners_paused, 1);
    assert(atomic_load(&srv->listeners_paused) <= srv->nloops);     /* invariant 5 */
}

/* Whether `l`'s listener should read now: not while CRITICAL with the
 * whole reserve in use. */
static void listener_update(tided_loop *l)
{
    assert(l->reserve_used <= TIDED_CRITICAL_RESERVE);                /* invariant 7 */
    listener_set(l, l->critical && l->reserve_used >= TIDED_CRITICAL_RESERVE);
}

static void on_conn_close(void *data)
{
    tided_conn *c = data;
    tided_loop *l = c->loop;
    tided_server *srv = l->srv;

    list_unlink(l, c);
    if (c->evict_slot) l->evict[c->evict_slot - 1] = NULL;        /* invariant 9 */
    if (c->close_at_ms) {
        assert(l->draining > 0);
        l->draining--;
    }
    conn_release_admitted(c);
    conn_set_accounted(c, 0);
    tide_mem_account_sub(TIDE_MEM_HTTP, (int64_t)sizeof *c);
    if (c->client) client_give(srv, c->client);
    atomic_fetch_sub(&srv->connections, 1);
    if (c->reserve) {
        assert(l->reserve_used > 0);
        l->reserve_used--;
        listener_update(l);              /* a reserve slot is free again */
    }
    free(c);
}

/* Where `c` stands in the eviction order at `now` (the essay): the larger,
 * the sooner it goes; TIDED_NOT_EVICTABLE while its request is in a handler
 * or h2o is not reading it. Below the ranks, how many ms it is past the
 * first deadline it is held to (negative: before it): h2o's request
 * timeout from the start of its wait, and its head's from the head's
 * first byte (for a connection that has sent nothing yet, from its
 * opening) or its body's rate. */
static int64_t conn_behind(const tided_conn *c, uint64_t now)
{
    const tided_server *srv = c->loop->srv;
    const h2o_socket_t *sock = c->sock;
    size_t have = sock->input->size;
    uint64_t due = c->idle_since_ms + srv->request_timeout_ms, own;

    if (c->close_at_ms) return TIDED_RANK_REFUSED - (int64_t)c->close_at_ms;
    if (c->busy || sock->_cb.read == NULL) return TIDED_NOT_EVICTABLE;
    if (have == 0 && c->answered) return TIDED_RANK_IDLE + (int64_t)(now - c->idle_since_ms);
    if (c->body_since_ms == 0)
        own = (c->head_since_ms ? c->head_since_ms : have ? now : c->idle_since_ms) + srv->header_timeout_ms;
    else if (srv->body_min_rate != 0)
        own = c->body_since_ms + srv->body_grace_ms
            + (have > c->head_len ? have - c->head_len : 0) * 1000 / srv->body_min_rate;
    else
        own = due;
    if (own < due) due = own;
    return (int64_t)now - (int64_t)due;
}

/* Fill l->evict with the loop's TIDED_EVICT_LOOK connections the bound
 * evicts first, in order. Cost: a few loads per connection of the loop,
 * and a pass over the kept ones for each that displaces one. */
static void evict_collect(tided_loop *l, uint64_t now)
{
    int64_t key[TIDED_EVICT_LOOK];
    unsigned n = 0, low = 0;

    for (unsigned i = 0; i < l->evict_n; i++)
        if (l->evict[i]) l->evict[i]->evict_slot = 0;
    for (tided_conn *c = l->conn_head; c; c = c->next) {
        int64_t k = conn_behind(c, now);
        if (k == TIDED_NOT_EVICTABLE) continue;
        if (n < TIDED_EVICT_LOOK) {
            if (n == 0 || k < key[low]) low = n;
            l->evict[n] = c;
            key[n++] = k;
            continue;
        }
        if (k <= key[low]) continue;
        l->evict[low] = c;
        key[low] = k;
        for (unsigned i = 0; i < n; i++)
            if (key[i] < key[low]) low = i;
    }
    for (unsigned i = 1; i < n; i++)             /* the furthest behind first */
        for (unsigned j = i; j > 0 && key[j] > key[j - 1]; j--) {
            int64_t kt = key[j];
            tided_conn *ct = l->evict[j];
            key[j] = key[j - 1], l->evict[j] = l->evict[j - 1];
            key[j - 1] = kt, l->evict[j - 1] = ct;
        }
    for (unsigned i = 0; i < n; i++) l->evict[i]->evict_slot = i + 1;
    l->evict_n = n;
    l->evict_next = 0;
    l->evict_built_ms = now;
}

/* Evict the connection of `l` the order puts first, to make room.
 * Returns 1 when one was closed. */
static int evict_one(tided_loop *l)
{
    tided_server *srv = l->srv;
    uint64_t now = h2o_now(l->evloop), age = now - l->evict_built_ms;

    if (age >= TIDED_EVICT_STALE_MS || (l->evict_next >= l->evict_n && age >= TIDED_SCAN_MS))
        evict_collect(l, now);
    while (l->evict_next < l->evict_n) {
        tided_conn *c = l->evict[l->evict_next];
        l->evict[l->evict_next++] = NULL;                    /* invariant 9 */
        if (c == NULL) continue;                             /* closed since */
        c->evict_slot = 0;
        if (conn_behind(c, now) == TIDED_NOT_EVICTABLE) continue;   /* in a handler now */
        if (c->close_at_ms == 0 && c->sock->input->size == 0) atomic_fetch_add(&srv->connections_evicted, 1);
        else atomic_fetch_add(&srv->connections_slow_evicted, 1);
        conn_close_via_h2o(c);
        return 1;
    }
    return 0;
}

static void refuse_at_accept(h2o_socket_t *sock, atomic_ullong *counter, const char *why)
{
    if (atomic_fetch_add(counter, 1) % 1000 == 0) tide_log(TIDE_LOG_WARN, "connection refused: %s", why);
    h2o_socket_close(sock);     /* not h2o's yet: nothing else points to it */
}

void tided_conn_accept(tided_loop *l, h2o_socket_t *sock)
{
    tided_server *srv = l->srv;
    unsigned char key[16];
    struct tided_client *client = NULL;
    tided_conn *c;
    char why[200];
    int over = 0;

    if (srv->max_per_client && peer_key(sock, key) == 0) {
        client = client_take(srv, key, srv->max_per_client, &over);
        if (client == NULL) {
            if (over)
                snprintf(why, sizeof why, "%u connections are open from one client address, the most "
                         "http_max_connections_per_client allows", srv->max_per_client);
            else
                snprintf(why, sizeof why, "out of memory for the per-client table");
            refuse_at_accept(sock, over ? &srv->connections_refused_per_client : &srv->connections_refused,
                             why);
            return;
        }
    }
    if (atomic_fetch_add(&srv->connections, 1) >= srv->max_connections) {
        if (!evict_one(l)) {
            atomic_fetch_sub(&srv->connections, 1);
            if (client) client_give(srv, client);
            snprintf(why, sizeof why, "%u connections are open, the most http_max_connections allows, and "
                     "every one of this loop's is in a handler or being answered", srv->max_connections);
            refuse_at_accept(sock, &srv->connections_refused, why);
            return;
        }
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        atomic_fetch_sub(&srv->connections, 1);
        if (client) client_give(srv, client);
        refuse_at_accept(sock, &srv->connections_refused, "out of memory");
        return;
    }
    c->loop = l;
    c->sock = sock;
    c->client = client;
    c->idle_since_ms = h2o_now(l->evloop);
    tide_mem_account_alloc(TIDE_MEM_HTTP, (int64_t)sizeof *c);
    list_append(l, c);
    if (tide_node_overload_level(srv->node) >= TIDE_OVERLOAD_CRITICAL) {
        /* The listener reads at CRITICAL only while a reserve slot is
         * free (on_accept stops its batch once the pause is set). Only
         * a level that turned CRITICAL since the last scan, with slots
         * still held from an earlier time at CRITICAL, finds none. */
        if (l->reserve_used < TIDED_CRITICAL_RESERVE) {
            c->reserve = 1;
            l->reserve_used++;
        }
        scan_level(l);
    }
    atomic_fetch_add(&srv->connections_total, 1);
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = c;
    h2o_accept(&l->accept_ctx, sock);
}

/* ---- requests ------------------------------------------------------------- */

int tided_conn_request_begin(h2o_req_t *req, tided_conn **conn, tided_head *head)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    tided_conn *c = sock != NULL && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
    int admitted = c != NULL && c->admitted != 0;

    memset(head, 0, sizeof *head);
    *conn = c;
    if (c) {
        c->busy++;
        c->head_since_ms = c->body_since_ms = 0;   /* the request has arrived */
        conn_release_admitted(c);
        conn_set_accounted(c, 0);       /* the guard counts the body from here */
    }
    /* Without a body h2o saw neither header, so there is nothing to check;
     * a head the scan admitted passed this same check. */
    if (sock == NULL || req->entity.base == NULL || sock->input->bytes == NULL || admitted) return TIDED_HEAD_OK;
    return tided_head_check(sock->input->bytes, sock->input->size, head);
}

void tided_conn_request_end(tided_conn *c)
{
    if (c == NULL) return;
    assert(c->busy > 0);
    if (--c->busy == 0) {
        c->answered = 1;
        c->idle_since_ms = h2o_now(c->loop->evloop);
        list_unlink(c->loop, c);
        list_append(c->loop, c);
    }
}

/* ---- the scan --------------------------------------------------------------- */

static uint64_t budget_in_use(const tided_server *srv)
{
    return atomic_load(&srv->body_admitted) + atomic_load(&srv->body_in_handlers)
         + atomic_load(&srv->body_unparsed);
}

int tided_body_reserve(tided_server *srv, uint64_t own, uint64_t len)
{
    uint64_t before = atomic_fetch_add(&srv->body_in_handlers, len);
    uint64_t in_use = before + atomic_load(&srv->body_admitted) + atomic_load(&srv->body_unparsed);

    if (in_use > own && in_use + len > srv->body_budget) {
        atomic_fetch_sub(&srv->body_in_handlers, len);
        atomic_fetch_add(&srv->requests_refused_budget, 1);
        return -1;
    }
    return 0;
}

/* 503 overloaded with Retry-After, counted in `counter`: the one answer
 * of every refusal the client should retry (the body budget, the memory
 * level). */
static void refuse_unavailable(tided_conn *c, const char *detail, atomic_ullong *counter, uint64_t body_left,
                               uint64_t now_ms)
{
    conn_refuse(c, 503, "Service Unavailable", "overloaded", detail, 1, counter, body_left, now_ms);
}

/* What `c` holds or declares does not fit in the budget. */
static void refuse_over_budget(tided_conn *c, uint64_t body_left, uint64_t now_ms)
{
    tided_server *srv = c->loop->srv;
    char detail[256];

    snprintf(detail, sizeof detail, "request bytes held by tided have reached http_body_budget = %llu "
             "bytes; retry later", (unsigned long long)srv->body_budget);
    refuse_unavailable(c, detail, &srv->requests_refused_budget, body_left, now_ms);
}

int tided_overload_detail(tided_server *srv, char *buf, size_t cap)
{
    tide_node_memory_status m;

    tide_node_memory_get(srv->node, &m);
    snprintf(buf, cap, "memory level %s: %llu bytes counted (%s) against memory_limit = %llu bytes; writes "
             "resume below %llu bytes; retry later", tide_mem_overload_level_name(m.level),
             (unsigned long long)m.counted_bytes, m.counts ? m.counts : "rss", (unsigned long long)m.limit_bytes,
             (unsigned long long)m.marks_leave[TIDE_OVERLOAD_HIGH]);
    return m.level;
}

/* Check the head of the request `c` holds bytes of, once. */
static void scan_head(tided_conn *c, uint64_t now_ms, size_t *unparsed)
{
    tided_server *srv = c->loop->srv;
    h2o_buffer_t *in = c->sock->input;
    tided_head h;
    uint64_t want;
    char detail[256];
    int rc = tided_head_check(in->bytes, in->size, &h);
    uint64_t body_in = rc == TIDED_HEAD_OK && in->size > h.head_len ? in->size - h.head_len : 0;
    /* What the client still sends of a declared body, drained after a
     * refusal (unknown: chunked, or no complete head). */
    uint64_t left = rc != TIDED_HEAD_OK || h.transfer_encoding ? TIDED_BODY_UNKNOWN
                  : h.content_length > body_in ? h.content_length - body_in : 0;

    if (rc == TIDED_HEAD_INCOMPLETE) {
        /* h2o bounds a head (H2O_MAX_REQLEN, about 400 KiB); past a
         * generous head, a partial one counts against the budget too. */
        if (in->size > TIDED_LONG_HEAD && budget_in_use(srv) > srv->body_budget) {
            refuse_over_budget(c, TIDED_BODY_UNKNOWN, now_ms);
            return;
        }
        *unparsed += in->size;
        return;
    }
    /* A refusal that cannot be made now (h2o is writing its 100 Continue)
     * leaves the head unchecked, for the next scan. */
    if (rc == TIDED_HEAD_BAD) {
        snprintf(detail, sizeof detail, TIDED_DETAIL_FRAMING, h.reason);
        conn_refuse(c, 400, "Bad Request", "bad_request", detail, 0, &srv->requests_refused_framing,
                    TIDED_BODY_UNKNOWN, now_ms);
        return;
    }
    if (h.content_length > srv->max_object_size) {
        snprintf(detail, sizeof detail, TIDED_DETAIL_TOO_LARGE,
                 srv->max_object_size);
        conn_refuse(c, 413, "Request Entity Too Large", "too_large", detail, 0, &srv->requests_refused_too_large,
                    TIDED_BODY_UNKNOWN, now_ms);
        return;
    }
    if ((h.content_length > 0 || h.transfer_encoding) && !h.safe_method
        && tide_node_overload_level(srv->node) >= TIDE_OVERLOAD_HIGH) {
        tided_overload_detail(srv, detail, sizeof detail);
        refuse_unavailable(c, detail, &srv->overload_rejected_body, left, now_ms);
        return;
    }
    want = h.head_len + (h.transfer_encoding ? srv->max_object_size : h.content_length);
    /* A PUT's body is copied for its store job (api_objects.c), and the
     * copy counts too: admitted with room for it, so an admitted body is
     * not refused for its copy once it has been sent. */
    if (!h.safe_method) want += h.transfer_encoding ? srv->max_object_size : h.content_length;
    if (atomic_load(&srv->body_admitted) + atomic_load(&srv->body_in_handlers) != 0
        && budget_in_use(srv) + want > srv->body_budget) {
        refuse_over_budget(c, left, now_ms);
        return;
    }
    c->admitted = want;
    atomic_fetch_add(&srv->body_admitted, want);
    c->head_len = h.head_len;
    c->body_since_ms = now_ms;
}

/* Answer 408 on `c` when its pending request is late: its head not
 * complete http_header_timeout after its first byte, or its body behind
 * http_body_min_rate after http_body_grace (the essay). What the client
 * still sends is not waited for: it is slow by definition, so the close
 * lingers TIDED_LINGER_MS whatever it sends. */
static void scan_time(tided_conn *c, uint64_t now_ms)
{
    tided_server *srv = c->loop->srv;
    size_t have = c->sock->input->size;
    uint64_t body, due, ms;
    char detail[256];

    if (c->body_since_ms == 0) {
        if (now_ms - c->head_since_ms < srv->header_timeout_ms) return;
        snprintf(detail, sizeof detail, "the request head was not complete %llu s after its first byte "
                 "(http_header_timeout); the connection is closed",
                 (unsigned long long)(srv->header_timeout_ms / 1000));
        conn_refuse(c, 408, "Request Timeout", "request_timeout", detail, 0, &srv->requests_timed_out_head,
                    TIDED_BODY_UNKNOWN, now_ms);
        return;
    }
    ms = now_ms - c->body_since_ms;
    if (srv->body_min_rate == 0 || ms <= srv->body_grace_ms) return;
    body = have > c->head_len ? have - c->head_len : 0;
    due = (ms - srv->body_grace_ms) * srv->body_min_rate / 1000;
    if (body >= due) return;
    snprintf(detail, sizeof detail, "the request body sent %llu bytes in %llu ms, less than http_body_min_rate "
             "= %llu bytes a second after http_body_grace = %llu s; the connection is closed",
             (unsigned long long)body, (unsigned long long)ms, (unsigned long long)srv->body_min_rate,
             (unsigned long long)(srv->body_grace_ms / 1000));
    conn_refuse(c, 408, "Request Timeout", "request_timeout", detail, 0, &srv->requests_timed_out_body,
                TIDED_BODY_UNKNOWN, now_ms);
}

/* At CRITICAL, pause the loop's listener once its reserve is in use; below,
 * start it again (the essay). The level change is logged once per loop. */
static void scan_level(tided_loop *l)
{
    tided_server *srv = l->srv;
    int critical = tide_node_overload_level(srv->node) >= TIDE_OVERLOAD_CRITICAL;

    if (critical != l->critical) {
        l->critical = critical;
        if (critical)
            tide_log(TIDE_LOG_INFO, "loop %u: memory level critical: not accepting new connections beyond a "
                     "reserve of %d for monitoring (the %u open are served)", l->index, TIDED_CRITICAL_RESERVE,
                     atomic_load(&srv->connections));
        else
            tide_log(TIDE_LOG_INFO, "loop %u: memory level below critical: accepting new connections again",
                     l->index);
    }
    listener_update(l);
}

void tided_conn_poll(tided_loop *l)
{
    tided_server *srv = l->srv;
    uint64_t now_ms = h2o_now(l->evloop), idle_ms = srv->idle_timeout_ms;
    size_t unparsed = 0;
    tided_conn *c, *next;

    if (now_ms - l->last_scan_ms < TIDED_SCAN_MS) {
        l->scan_pending = 1;
        return;
    }
    l->last_scan_ms = now_ms;
    l->scan_pending = 0;
    scan_level(l);
    for (c = l->conn_head; c; c = next) {
        h2o_socket_t *sock = c->sock;
        next = c->next;
        if (c->close_at_ms) {
            uint64_t left = c->drain_left;
            int done = conn_drain(c);
            /* A client still sending gets TIDED_DRAIN_REFUSED_MS from its last
             * byte, not from the refusal: a slow sender (a loaded machine, a
             * small send buffer) reads its 503 instead of a reset, and the
             * bytes drained stay bounded by max_object_size. */
            if (!done && c->drain_known && c->drain_left < left)
                c->close_at_ms = now_ms + TIDED_DRAIN_REFUSED_MS;
            if (done || now_ms >= c->close_at_ms) conn_close_via_h2o(c);
            continue;
        }
        if (c->busy) continue;
        if (sock->input->size == 0) {
            conn_release_admitted(c);
            c->head_since_ms = c->body_since_ms = 0;
            if (idle_ms && sock->_cb.read != NULL && now_ms - c->idle_since_ms >= idle_ms) {
                atomic_fetch_add(&srv->connections_idle_closed, 1);
                conn_close_via_h2o(c);
                continue;
            }
        } else {
            if (c->head_since_ms == 0) c->head_since_ms = now_ms;
            if (c->admitted == 0) scan_head(c, now_ms, &unparsed);
            if (c->close_at_ms == 0) scan_time(c, now_ms);
        }
        if (c->close_at_ms == 0) conn_set_accounted(c, buffer_bytes(sock));
    }
    /* One step per loop, so the sum never passes below zero. */
    atomic_fetch_add(&srv->body_unparsed, (uint64_t)unparsed - (uint64_t)l->unparsed);
    l->unparsed = unparsed;
}

int32_t tided_conn_wait_ms(tided_loop *l)
{
    /* A refused connection being drained is read at each scan. */
    return l->scan_pending || l->draining ? TIDED_SCAN_MS : 1000;
}

/* ---- figures -------------------------------------------------------------- */

json_t *tided_conn_json(tided_server *srv)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I},s:{s:I,s:I},"
                     "s:{s:I,s:I,s:I,s:I}}",
                     "max_connections_per_client", (json_int_t)srv->max_per_client,
                     "idle_timeout_ms", (json_int_t)srv->idle_timeout_ms,
                     "request_timeout_ms", (json_int_t)srv->request_timeout_ms,
                     "header_timeout_ms", (json_int_t)srv->header_timeout_ms,
                     "body_min_rate", (json_int_t)srv->body_min_rate,
                     "body_grace_ms", (json_int_t)srv->body_grace_ms,
                     "connections_refused_per_client",
                     (json_int_t)atomic_load(&srv->connections_refused_per_client),
                     "connections_evicted", (json_int_t)atomic_load(&srv->connections_evicted),
                     "connections_slow_evicted", (json_int_t)atomic_load(&srv->connections_slow_evicted),
                     "connections_idle_closed", (json_int_t)atomic_load(&srv->connections_idle_closed),
                     "body_budget", (json_int_t)srv->body_budget,
                     "requests_refused",
                     "framing", (json_int_t)atomic_load(&srv->requests_refused_framing),
                     "too_large", (json_int_t)atomic_load(&srv->requests_refused_too_large),
                     "budget", (json_int_t)atomic_load(&srv->requests_refused_budget),
                     "requests_timed_out",
                     "head", (json_int_t)atomic_load(&srv->requests_timed_out_head),
                     "body_rate", (json_int_t)atomic_load(&srv->requests_timed_out_body),
                     "bodies",
                     "admitted_bytes", (json_int_t)atomic_load(&srv->body_admitted),
                     "in_handlers_bytes", (json_int_t)atomic_load(&srv->body_in_handlers),
                     "unparsed_bytes", (json_int_t)atomic_load(&srv->body_unparsed),
                     "budget_bytes", (json_int_t)srv->body_budget);
}

void tided_conn_families(tided_server *srv, struct tide_metrics_writer *w)
{
    /* One row per sample; a row with a name starts its family, a row
     * without one adds a labelled sample to the family above it. */
    const struct { const char *name, *type, *help, *reason; double value; } rows[] = {
        { "tide_http_connections_per_client_refused_total", "counter",
          "HTTP connections closed at accept: http_max_connections_per_client were open from their address.",
          NULL, (double)atomic_load(&srv->connections_refused_per_client) },
        { "tide_http_connections_evicted_total", "counter",
          "Idle HTTP connections closed to admit a new one at http_max_connections.",
          NULL, (double)atomic_load(&srv->connections_evicted) },
        { "tide_http_connections_slow_evicted_total", "counter",
          "HTTP connections closed to admit a new one at http_max_connections while a request was arriving "
          "(the one furthest behind its deadline first) or being refused.",
          NULL, (double)atomic_load(&srv->connections_slow_evicted) },
        { "tide_http_connections_idle_closed_total", "counter",
          "HTTP connections closed after http_idle_timeout with nothing in flight.",
          NULL, (double)atomic_load(&srv->connections_idle_closed) },
        { "tide_http_requests_refused_total", "counter",
          "HTTP requests answered before their body was read, by reason.",
          "framing", (double)atomic_load(&srv->requests_refused_framing) },
        { NULL, NULL, NULL, "too_large", (double)atomic_load(&srv->requests_refused_too_large) },
        { NULL, NULL, NULL, "body_budget", (double)atomic_load(&srv->requests_refused_budget) },
        { "tide_http_requests_timed_out_total", "counter",
          "HTTP requests answered 408 and closed before they reached a handler: the head was not complete "
          "http_header_timeout after its first byte (head), or the body fell below http_body_min_rate after "
          "http_body_grace (body_rate).",
          "head", (double)atomic_load(&srv->requests_timed_out_head) },
        { NULL, NULL, NULL, "body_rate", (double)atomic_load(&srv->requests_timed_out_body) },
        { "tide_http_body_budget_bytes", "gauge", "http_body_budget: request bytes held at most.",
          NULL, (double)srv->body_budget },
        { "tide_http_body_held_bytes", "gauge",
          "Request bytes held now against http_body_budget (admitted, in handlers, unparsed heads).",
          NULL, (double)budget_in_use(srv) },
        { "tide_overload_rejected_requests_total", "counter",
          "Requests tided answered 503 overloaded: PUTs refused for the memory level (write), bodies refused "
          "before they were read (body), PUTs and GET misses refused for a full store_queue (store_queue).",
          "write", (double)atomic_load(&srv->overload_rejected_write) },
        { NULL, NULL, NULL, "body", (double)atomic_load(&srv->overload_rejected_body) },
        { NULL, NULL, NULL, "store_queue", (double)atomic_load(&srv->overload_rejected_queue) },
        { "tide_overload_listener_paused", "gauge",
          "1 while the memory level is critical and tided accepts no new connections, else 0.",
          NULL, atomic_load(&srv->listeners_paused) ? 1.0 : 0.0 },
    };
    const char *family = NULL;

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *labels[2] = { "reason", rows[i].reason };
        if (rows[i].name) {
            family = rows[i].name;
            tide_metrics_family(w, family, rows[i].type, rows[i].help);
        }
        tide_metrics_sample(w, family, rows[i].reason ? labels : NULL, rows[i].reason ? 1 : 0, rows[i].value);
    }
}
