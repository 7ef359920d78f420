/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_limits.c: the bounds that keep tided serving under abuse and
 * under memory pressure: the connection bounds (per client and in all,
 * idle connections evicted for new ones, the idle timeout), slow requests
 * (a head past http_header_timeout, a body below http_body_min_rate: 408;
 * an honest slow upload stored however long it takes), slow clients from
 * twenty addresses that cannot lock a new client out, the body budget
 * (503 with Retry-After for bodies beyond it), and the memory limit: the
 * levels shed writes, then new connections, and lose nothing; SIGHUP
 * keeps a limit the budgets in force would not fit under.
 *
 * Every test starts its own tided with the bounds it needs; clients from
 * several addresses are sockets bound in 127/8 (connect_from). Under a
 * sanitizer the memory-level test is skipped (its RSS is the
 * sanitizer's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"
#include "promcheck.h"

/* ---- connection limits --------------------------------------------------- */

static void idle_connections_cannot_lock_healthz_out(void **state)
{
    static const char *flags[] = { "--http-max-connections=32", "--http-max-connections-per-client=8",
                                   "--http-idle-timeout=3600", "--http-threads=1", NULL };
    enum { ADDRS = 4, PER = 8 };
    int fds[1 + ADDRS * PER + 1], n = 0, extra;
    char buf[256], src[32];
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, NULL);
    /* One address opens its 8 and a 9th: the 9th is closed at once. */
    for (int i = 0; i < PER; i++) fds[n++] = connect_from(&t, "127.0.0.3");
    extra = connect_from(&t, "127.0.0.3");
    if (!read_until_closed(extra, buf, sizeof buf, 30000))
        fail_msg("a 9th connection from one address with http_max_connections_per_client=8 should be closed "
                 "at once; it stayed open for 30 s");
    close(extra);
    /* Four more addresses fill the other 24 places and one more: every
     * connection is idle, so each new one takes the place of the oldest. */
    for (int a = 0; a < ADDRS; a++) {
        snprintf(src, sizeof src, "127.0.0.%d", 10 + a);
        for (int i = 0; i < PER && n < (int)(sizeof fds / sizeof fds[0]); i++) fds[n++] = connect_from(&t, src);
    }
    /* A new client is served while every place is taken by idle ones. */
    {
        CURL *c = curl_easy_init();
        long status = 0;
        CURLcode rc;
        curl_easy_setopt(c, CURLOPT_URL, url(&t, "/healthz"));
        curl_easy_setopt(c, CURLOPT_INTERFACE, "127.0.0.2");
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (rc != CURLE_OK || status != 200)
            fail_msg("/healthz from a new client while 32 idle connections fill http_max_connections=32: "
                     "expected 200, got %ld (%s)", status, curl_easy_strerror(rc));
    }
    for (int i = 0; i < n; i++) close(fds[i]);
    if (status_int(&t, "http", "connections_refused_per_client", NULL) < 1)
        fail_msg("/v1/status http.connections_refused_per_client should count the 9th connection");
    if (status_int(&t, "http", "connections_evicted", NULL) < 1)
        fail_msg("/v1/status http.connections_evicted should count the idle connections closed for new ones");
    r = http(&t, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "/healthz after the attack");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void a_connection_that_sends_nothing_is_closed_after_the_idle_timeout(void **state)
{
    static const char *flags[] = { "--http-idle-timeout=1", NULL };
    char buf[1024], req[256];
    int fd;
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, NULL);
    fd = connect_from(&t, "127.0.0.4");
    if (!read_until_closed(fd, buf, sizeof buf, 30000))
        fail_msg("a connection that sends nothing should be closed after http_idle_timeout=1; it was open "
                 "after 30 s");
    if (buf[0] != '\0') fail_msg("an idle connection should be closed without an answer, got '%s'", buf);
    close(fd);
    /* After a request, the keep-alive wait is bounded the same way. */
    fd = connect_from(&t, "127.0.0.4");
    snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    send_all(fd, req, strlen(req));
    if (!read_until_closed(fd, buf, sizeof buf, 30000))
        fail_msg("a keep-alive connection idle after its answer should be closed after 1 s; open after 30 s");
    expect_contains(buf, "HTTP/1.1 200", "the answer before the idle close");
    close(fd);
    if (status_int(&t, "http", "connections_idle_closed", NULL) < 2)
        fail_msg("/v1/status http.connections_idle_closed should count both closes");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- slow requests: the head's timeout, the body's rate ------------------ */

/* The sockets a slow-client test opened, closed by its teardown whatever
 * the outcome (the tided it started is stopped by th_teardown). */
static int slow_fds[128];
static size_t slow_nfds;

static int slow_track(int fd)
{
    if (slow_nfds >= sizeof slow_fds / sizeof slow_fds[0]) fail_msg("more than %zu slow sockets", slow_nfds);
    slow_fds[slow_nfds++] = fd;
    return fd;
}

static void slow_close(int fd)
{
    for (size_t i = 0; i < slow_nfds; i++)
        if (slow_fds[i] == fd) {
            slow_fds[i] = slow_fds[--slow_nfds];
            break;
        }
    close(fd);
}

static int slow_teardown(void **state)
{
    while (slow_nfds > 0) close(slow_fds[--slow_nfds]);
    return th_teardown(state);
}

/* Send `piece` on fd every 100 ms, at most `pieces` times, until tided
 * answers or closes; its answer (NUL-terminated) goes to out. Returns the
 * pieces sent before the answer, or -1 when none came after all of them. */
static int trickle_until_answered(int fd, const char *piece, size_t len, int pieces, char *out, size_t cap)
{
    for (int sent = 0; sent < pieces; sent++) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) > 0 || send(fd, piece, len, MSG_NOSIGNAL) < 0) {
            if (!read_until_closed(fd, out, cap, 30000)) fail_msg("an answer started but did not end in 30 s");
            return sent;
        }
    }
    out[0] = '\0';
    return -1;
}

/* The /metrics page of t (scraped without a token: TIDE_METRICS_PUBLIC=1),
 * held to promtool and Tide's own checks. */
static char *checked_scrape(tided *t)
{
    char msg[8192], *page = scrape_with(t, NULL, 200);

    if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("Tide's checks of the scrape: %s", msg);
    int st = th_promtool_check(page, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics: expected exit 0, got %d: %s", st, msg);
    return page;
}

static void expect_timed_out(tided *t, double head, double body_rate)
{
    char *page = checked_scrape(t);

    expect_contains(page, "# TYPE tide_http_requests_timed_out_total counter", "the family of the 408s");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_requests_timed_out_total{reason=\"head\"}"),
               (uint64_t)head, "heads answered 408 for http_header_timeout");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_requests_timed_out_total{reason=\"body_rate\"}"),
               (uint64_t)body_rate, "bodies answered 408 for http_body_min_rate");
    free(page);
    expect_u64((uint64_t)status_int(t, "http", "requests_timed_out", "head"), (uint64_t)head,
               "/v1/status http.requests_timed_out.head");
    expect_u64((uint64_t)status_int(t, "http", "requests_timed_out", "body_rate"), (uint64_t)body_rate,
               "/v1/status http.requests_timed_out.body_rate");
}

/* The new bounds come from the environment, which a tided without them
 * ignores; h2o's own bound and the idle close are set far away, so only
 * http_header_timeout can end the trickle. */
static void a_head_that_trickles_past_http_header_timeout_is_answered_408_and_closed(void **state)
{
    static const char *flags[] = { "--http-request-timeout=3600", "--http-idle-timeout=3600", NULL };
    static char timeout[] = "TIDE_HTTP_HEADER_TIMEOUT=1", pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { timeout, pub, NULL };
    const char *start = "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    char buf[2048];
    int fd, sent;
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    fd = slow_track(connect_from(&t, "127.0.0.5"));
    send_all(fd, start, 1);                  /* the head's first byte, then one byte a tick */
    sent = trickle_until_answered(fd, start + 1, 1, 300, buf, sizeof buf);
    if (sent < 0)
        fail_msg("a head sent one byte every 100 ms should be answered 408 once http_header_timeout=1 passed; "
                 "after 300 bytes it was still open");
    if (strncmp(buf, "HTTP/1.1 408 ", 13) != 0) fail_msg("expected a 408 for the late head, got '%s'", buf);
    expect_contains(buf, "\"error\":\"request_timeout\"", "the 408's code");
    expect_contains(buf, "http_header_timeout", "the 408 names the setting");
    expect_contains(buf, "Connection: close", "the connection is closed after it");
    slow_close(fd);
    expect_timed_out(&t, 1, 0);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A PUT's head for key i declaring `len` bytes of body. */
static int put_head(char *out, size_t cap, uint64_t i, size_t len)
{
    char k[65];

    key_hex(i, k);
    return snprintf(out, cap, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", k, len);
}

static char rate_env[] = "TIDE_HTTP_BODY_MIN_RATE=2048", grace_env[] = "TIDE_HTTP_BODY_GRACE=1",
            head_env[] = "TIDE_HTTP_HEADER_TIMEOUT=1", public_env[] = "TIDE_METRICS_PUBLIC=1";

static void a_body_below_http_body_min_rate_is_answered_408_and_nothing_is_stored(void **state)
{
    static const char *flags[] = { "--http-request-timeout=3600", "--http-idle-timeout=3600", NULL };
    char *env[] = { rate_env, grace_env, public_env, NULL };
    char head[256], buf[2048], piece[16];
    int fd, sent;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    memset(piece, 'b', sizeof piece);
    tided_start(&t, flags, env);
    fd = slow_track(connect_from(&t, "127.0.0.6"));
    send_all(fd, head, (size_t)put_head(head, sizeof head, 1, 60000));
    /* 16 bytes a tick, about 160 bytes a second against 2048 */
    sent = trickle_until_answered(fd, piece, sizeof piece, 300, buf, sizeof buf);
    if (sent < 0)
        fail_msg("a body sent at 16 bytes every 100 ms should be answered 408 once it fell below "
                 "http_body_min_rate=2048 after http_body_grace=1; after 300 pieces it was still open");
    if (strncmp(buf, "HTTP/1.1 408 ", 13) != 0) fail_msg("expected a 408 for the slow body, got '%s'", buf);
    expect_contains(buf, "\"error\":\"request_timeout\"", "the 408's code");
    expect_contains(buf, "http_body_min_rate = 2048 bytes a second after http_body_grace = 1 s",
                    "the 408 names the rate and the grace");
    slow_close(fd);
    r = http(&t, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key whose body was cut off");
    resp_free(&r);
    expect_timed_out(&t, 0, 1);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* Far above the rate but slower than any fixed time the other bounds
 * set: the upload takes longer than http_header_timeout and the grace. */
static void an_upload_that_keeps_http_body_min_rate_is_stored_however_long_it_takes(void **state)
{
    static const char *flags[] = { "--http-request-timeout=3600", "--http-idle-timeout=3600", NULL };
    char *env[] = { rate_env, grace_env, head_env, public_env, NULL };
    enum { LEN = 128 * 1024, PIECE = 4096 };
    char head[256], buf[2048];
    uint8_t *body = malloc(LEN);
    int fd, sent;
    tided t;
    resp r;
    (void)state;

    assert_non_null(body);
    th_value(2, LEN, body);
    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    fd = slow_track(connect_from(&t, "127.0.0.7"));
    send_all(fd, head, (size_t)put_head(head, sizeof head, 2, LEN));
    /* 4 KiB a tick, about 40 KB a second against 2048 bytes: 32 ticks */
    for (sent = 0; sent < LEN / PIECE; sent++) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) > 0) {
            read_until_closed(fd, buf, sizeof buf, 1000);
            fail_msg("an upload at 40 KB a second (http_body_min_rate=2048) was answered after %d of %d pieces: "
                     "'%s'", sent, LEN / PIECE, buf);
        }
        send_all(fd, body + (size_t)sent * PIECE, PIECE);
    }
    if (read_response(fd, buf, sizeof buf, 30000) <= 0) fail_msg("no answer to the whole upload in 30 s");
    if (strncmp(buf, "HTTP/1.1 201 ", 13) != 0) fail_msg("expected 201 for the honest upload, got '%s'", buf);
    slow_close(fd);
    r = http(&t, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the uploaded value");
    expect_u64(r.len, LEN, "the value's length");
    if (memcmp(r.body, body, LEN) != 0) fail_msg("the value read back differs from the one uploaded");
    resp_free(&r);
    free(body);
    expect_timed_out(&t, 0, 0);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- slow clients at the connection bound -------------------------------- */

/* tided's side of the connections to `port` from 127.0.0.lo to 127.0.0.hi,
 * read from the kernel's table (/proc/net/tcp): how many are established,
 * and how many of those hold bytes tided has not read yet. */
static void peer_sockets(int port, unsigned lo, unsigned hi, int *open, int *unread)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];

    *open = *unread = 0;
    if (f == NULL) fail_msg("/proc/net/tcp: %s", strerror(errno));
    while (fgets(line, sizeof line, f)) {
        unsigned laddr, lport, raddr, rport, st, peer;
        unsigned long txq, rxq;
        if (sscanf(line, " %*u: %8X:%4X %8X:%4X %2X %8lX:%8lX", &laddr, &lport, &raddr, &rport, &st, &txq,
                   &rxq) != 7)
            continue;                                   /* the heading */
        peer = ntohl(raddr);                            /* the table prints the address as it is in memory */
        if ((int)lport != port || st != 1 || (peer >> 8) != 0x7f0000 || (peer & 0xff) < lo || (peer & 0xff) > hi)
            continue;
        (*open)++;
        if (rxq != 0) (*unread)++;
    }
    fclose(f);
}

/* Slow clients on 127.0.0.10 to .29, each sending the head of a GET one
 * byte a tick and never ending it (an X-Slow header that goes on); one
 * that tided closes comes back at its next tick, as an attacker's would. */
enum { SLOW_ADDRS = 20, SLOW_PER_ADDR = 2, SLOW_CONNS = SLOW_ADDRS * SLOW_PER_ADDR };
static const char SLOW_HEAD[] = "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: ";

typedef struct slow_attack {
    const tided *t;
    int    fd[SLOW_CONNS];
    size_t sent[SLOW_CONNS];
    int    reopened;                 /* connections tided closed, opened again */
} slow_attack;

/* Open slow connection i and send its first byte. */
static void slow_open(slow_attack *a, int i)
{
    char src[32];

    snprintf(src, sizeof src, "127.0.0.%d", 10 + i % SLOW_ADDRS);
    a->fd[i] = slow_track(connect_from(a->t, src));
    if (send(a->fd[i], SLOW_HEAD, 1, MSG_NOSIGNAL) != 1) fail_msg("the first byte of a slow connection");
    a->sent[i] = 1;
}

/* One tick: each connection sends its next byte; one tided closed (it
 * reads as readable: the end, a reset or an answer) is opened again and
 * sends its first. */
static void slow_tick(slow_attack *a)
{
    for (int i = 0; i < SLOW_CONNS; i++) {
        struct pollfd p = { a->fd[i], POLLIN, 0 };
        char c = a->sent[i] < sizeof SLOW_HEAD - 1 ? SLOW_HEAD[a->sent[i]] : 'a';
        if (poll(&p, 1, 0) > 0 || send(a->fd[i], &c, 1, MSG_NOSIGNAL) != 1) {
            slow_close(a->fd[i]);
            slow_open(a, i);
            a->reopened++;
        } else {
            a->sent[i]++;
        }
    }
}

/* Tick until tided holds every slow connection and has read every byte
 * sent on them (so none is idle: each is in the middle of a head). */
static void slow_hold(slow_attack *a)
{
    double end = th_now_ms() + 30000;
    int open = 0, unread = 0;

    while (th_now_ms() < end) {
        poll(NULL, 0, 100);
        peer_sockets(a->t->port, 10, 10 + SLOW_ADDRS - 1, &open, &unread);
        if (open == SLOW_CONNS && unread == 0) return;
        slow_tick(a);
    }
    fail_msg("tided should hold the %d slow connections with every byte read; after 30 s %d were open, %d with "
             "bytes unread. Its log:\n%s", SLOW_CONNS, open, unread, log_tail(a->t));
}

/* GET `path` from 127.0.0.2 on a new connection: the answer's status, or
 * 0 when the connection was closed without one. */
static int victim_get(const tided *t, const char *path)
{
    char req[512], buf[4096];
    int fd = slow_track(connect_from(t, "127.0.0.2")), status = 0;
    size_t len = (size_t)snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);

    if (send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len && read_until_closed(fd, buf, sizeof buf, 30000)
        && sscanf(buf, "HTTP/1.1 %d", &status) != 1)
        status = 0;
    slow_close(fd);
    return status;
}

/* Twenty addresses fill http_max_connections with heads that never end;
 * none is idle and, with the head and request timeouts an hour away,
 * none is closed by time. A new client is still answered every time:
 * each of its connections evicts the slow one furthest behind. The
 * attackers' timeouts come from the environment, so a tided without them
 * sees the same attack. */
static void slow_clients_from_twenty_addresses_cannot_lock_out_a_new_client(void **state)
{
    static const char *flags[] = { "--http-max-connections=40", "--http-threads=1", "--http-request-timeout=3600",
                                   "--http-idle-timeout=3600", NULL };
    static char head[] = "TIDE_HTTP_HEADER_TIMEOUT=3600";
    char *env[] = { head, public_env, NULL };
    enum { VICTIM_GETS = 10 };
    slow_attack a;
    uint8_t value[100];
    char *page;
    int answered = 0, statuses[VICTIM_GETS];
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    memset(&a, 0, sizeof a);
    tided_start(&t, flags, env);
    th_value(3, sizeof value, value);
    r = http(&t, "PUT", obj_path(3, NULL), value, sizeof value, 0, NULL);
    expect_status(r, 201, "the PUT of the object the victim reads");
    resp_free(&r);
    a.t = &t;
    for (int i = 0; i < SLOW_CONNS; i++) slow_open(&a, i);
    slow_hold(&a);
    for (int i = 0; i < VICTIM_GETS; i++) {
        statuses[i] = victim_get(&t, i % 2 ? obj_path(3, NULL) : "/v1/status");
        answered += statuses[i] == 200;
        slow_hold(&a);                       /* the evicted come back: the bound is full again */
    }
    if (answered != VICTIM_GETS)
        fail_msg("a client on 127.0.0.2 should get %d of %d answers (GET /v1/status and GET of an object, "
                 "alternately) while %d slow connections from 127.0.0.10-29 fill http_max_connections=40; it got "
                 "%d (the first status %d, the last %d)", VICTIM_GETS, VICTIM_GETS, SLOW_CONNS, answered, statuses[0],
                 statuses[VICTIM_GETS - 1]);
    page = checked_scrape(&t);
    if (!(th_prom_value(page, "tide_http_connections_slow_evicted_total") >= VICTIM_GETS))
        fail_msg("tide_http_connections_slow_evicted_total should count a slow connection evicted for each of the "
                 "%d answers; it is %.0f", VICTIM_GETS, th_prom_value(page, "tide_http_connections_slow_evicted_total"));
    free(page);
    if (a.reopened < VICTIM_GETS)
        fail_msg("the slow clients should have seen at least %d of their connections closed; they saw %d",
                 VICTIM_GETS, a.reopened);
    if (status_int(&t, "http", "connections_slow_evicted", NULL) < VICTIM_GETS)
        fail_msg("/v1/status http.connections_slow_evicted should count the evictions too");
    for (int i = 0; i < SLOW_CONNS; i++) slow_close(a.fd[i]);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- the body budget ----------------------------------------------------- */

static void partial_bodies_beyond_the_body_budget_are_503_with_retry_after(void **state)
{
    static const char *flags[] = { "--max-object-size=64KiB", "--http-body-budget=448KiB", "--http-threads=1",
                                   NULL };
    enum { N = 12, HALF = 32768 };
    static uint8_t body[65536];
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { pub, NULL };
    double n503 = 0;
    int fds[N], answered[N], refused = 0, admitted = 0;
    char out[N][2048], req[256], k[65], src[32];
    double end;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    memset(answered, 0, sizeof answered);
    tided_start(&t, flags, env);
    memset(body, 'b', sizeof body);
    for (int i = 0; i < N; i++) {
        key_hex(1000 + (uint64_t)i, k);
        snprintf(src, sizeof src, "127.0.1.%d", 1 + i);
        fds[i] = connect_from(&t, src);
        snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n", k);
        send_all(fds[i], req, strlen(req));
        send_all(fds[i], body, HALF);
    }
    /* Each head declares 64 KiB + its head, admitted with room for the
     * store job's copy (2 x 64 KiB + the head): three fit in 448 KiB, and
     * the other nine are answered without waiting for their bodies. */
    end = th_now_ms() + 30000;
    while (refused < N - 3 && th_now_ms() < end) {
        for (int i = 0; i < N; i++)
            if (!answered[i] && has_answer(fds[i], out[i], sizeof out[i])) { answered[i] = 1; refused++; }
        poll(NULL, 0, 10);
    }
    if (refused != N - 3)
        fail_msg("with http_body_budget=448KiB, 12 half-sent 64 KiB bodies: expected 9 answered at once, got %d",
                 refused);
    for (int i = 0; i < N; i++) {
        if (!answered[i]) continue;
        expect_contains(out[i], "HTTP/1.1 503", "a body over the budget");
        expect_contains(out[i], "Retry-After: 1", "the 503's Retry-After");
        expect_contains(out[i], "\"error\":\"overloaded\"", "the 503 is JSON");
    }
    /* The three admitted bodies are counted in the http consumer while
     * they wait for their second halves. */
    if (status_int(&t, "memory", "accounts", "http") < 3 * HALF)
        fail_msg("the http consumer should count the 3 x 32 KiB held for the admitted bodies");
    if (status_int(&t, "http", "requests_refused", "budget") != N - 3)
        fail_msg("/v1/status http.requests_refused.budget should be 9");
    /* Answered by conn.c before h2o read them, and still counted by
     * {method,code} (the count follows the send; poll for the last). */
    end = th_now_ms() + 10000;
    while (n503 != N - 3 && th_now_ms() < end) {
        char *page = scrape_with(&t, NULL, 200);
        n503 = th_prom_value(page, "tide_http_requests_total{method=\"PUT\",code=\"503\"}");
        free(page);
        if (n503 != N - 3) poll(NULL, 0, 20);
    }
    if (n503 != N - 3) fail_msg("tide_http_requests_total{method=\"PUT\",code=\"503\"} is %.0f; expected 9", n503);
    for (int i = 0; i < N; i++) {
        if (answered[i]) continue;
        send_all(fds[i], body + HALF, sizeof body - HALF);
        end = th_now_ms() + 30000;       /* keep-alive: the answer comes, the connection stays */
        while (!has_answer(fds[i], out[i], sizeof out[i]) && th_now_ms() < end) poll(NULL, 0, 10);
        expect_contains(out[i], "HTTP/1.1 201", "an admitted body, completed");
        admitted++;
    }
    assert_int_equal(admitted, 3);
    for (int i = 0; i < N; i++) {
        close(fds[i]);
        key_hex(1000 + (uint64_t)i, k);
        snprintf(req, sizeof req, "/v1/objects/%s", k);
        r = http(&t, "GET", req, NULL, 0, 0, NULL);
        expect_status(r, answered[i] ? 404 : 200, answered[i] ? "a refused body stored nothing"
                                                               : "an admitted body was stored");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- the memory limit ---------------------------------------------------- */

/* What tided's governor counts of `pid`: its anonymous resident memory,
 * RssAnon + RssShmem of /proc/PID/status (VmRSS where there is no split). */
static uint64_t rss_of(pid_t pid)
{
    char path[64], line[256];
    unsigned long long kb, anon = 0, shmem = 0, vm = 0;
    int split = 0;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) fail_msg("%s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "RssAnon: %llu kB", &kb) == 1) { anon = kb; split = 1; }
        else if (sscanf(line, "RssShmem: %llu kB", &kb) == 1) shmem = kb;
        else if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) vm = kb;
    }
    fclose(f);
    if (vm == 0) fail_msg("%s: no VmRSS line", path);
    return (uint64_t)(split ? anon + shmem : vm) * 1024;
}

/* The config file of the memory tests: `limit` bytes, marks 50/90/99 per
 * cent, and a hysteresis of 20 points, so that a level once entered is
 * left only 20 points lower: the RSS jitter of a quiet tided (well under a
 * per cent) never moves it. */
static void write_memory_cfg(const char *path, uint64_t limit)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fprintf(f, "[node]\nmemory_limit=%llu\nmemory_levels=50,90,99\nmemory_hysteresis=20\n",
            (unsigned long long)limit);
    assert_int_equal(fclose(f), 0);
}

/* write_memory_cfg with small explicit budgets: what they may hold (2 x 1
 * MiB + 2 x 2 MiB + 2 MiB, and the key cache's hard limit, 5% of the 256
 * MiB tided starts with: 20.8 MiB) fits under the high mark of every limit
 * the test lowers to, so SIGHUP applies them. The node cache is that small
 * so that shrinking it at HIGH (to a quarter) frees well under a per cent
 * of the RSS, which stays above the high mark. */
#define MEMORY_TEST_START (256ull << 20)
static void write_memory_cfg_small(const char *path, uint64_t limit)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fprintf(f, "[node]\nmemory_limit=%llu\nmemory_levels=50,90,99\nmemory_hysteresis=20\n"
            "cache_budget=1MiB\ninsert_burst=2MiB\nhttp_body_budget=2MiB\n", (unsigned long long)limit);
    assert_int_equal(fclose(f), 0);
}

/* GET `path` on the open keep-alive connection fd; the whole response into
 * out (fails when it does not come within 30 s). */
static void keepalive_get(int fd, const char *path, char *out, size_t cap)
{
    char req[512];

    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    send_all(fd, req, strlen(req));
    if (!read_response(fd, out, cap, 30000))
        fail_msg("GET %s on an open keep-alive connection: no whole answer within 30 s; got '%.300s'", path, out);
}

/* /v1/status' "memory_limit" through the keep-alive connection fd (a new
 * connection would not be accepted at CRITICAL). The caller decrefs the
 * whole status, *status. */
static json_t *memory_limit_via(int fd, json_t **status)
{
    static char out[1 << 20];
    json_error_t e;
    const char *body;

    keepalive_get(fd, "/v1/status", out, sizeof out);
    expect_contains(out, "HTTP/1.1 200", "GET /v1/status on the keep-alive connection");
    body = strstr(out, "\r\n\r\n") + 4;
    *status = json_loads(body, 0, &e);
    if (*status == NULL) fail_msg("/v1/status is not JSON: %.300s", body);
    if (!json_is_object(json_object_get(*status, "memory_limit")))
        fail_msg("/v1/status has no \"memory_limit\" object: %.600s", body);
    return json_object_get(*status, "memory_limit");
}

/* Set memory_limit so that tided's counted RSS (anonymous) is `share` of it, SIGHUP, and wait
 * (bounded) until /v1/status says the limit is in force and the level is
 * `level`. The RSS is read again for each attempt. Returns the limit. */
static uint64_t drive_level(tided *t, const char *cfg, int fd, double share, const char *level)
{
    uint64_t rss = 0, limit = 0;
    char last[64] = "";

    for (int attempt = 0; attempt < 3; attempt++) {
        double end = th_now_ms() + 10000;
        rss = rss_of(t->pid);
        limit = (uint64_t)((double)rss / share);
        write_memory_cfg_small(cfg, limit);
        kill(t->pid, SIGHUP);
        while (th_now_ms() < end) {
            json_t *st, *m = memory_limit_via(fd, &st);
            const char *now = json_string_value(json_object_get(m, "level"));
            int in_force = json_integer_value(json_object_get(m, "limit_bytes")) == (json_int_t)limit;
            snprintf(last, sizeof last, "%s", now ? now : "(none)");
            json_decref(st);
            if (in_force && strcmp(last, level) == 0) return limit;
            poll(NULL, 0, 50);
        }
    }
    fail_msg("memory_limit = anonymous RSS %llu / %.3f = %llu bytes and SIGHUP should bring the level to %s; it is %s. "
             "Its log:\n%s", (unsigned long long)rss, share, (unsigned long long)limit, level, last, log_tail(t));
    return 0;
}

static json_int_t jpath(json_t *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (c) v = json_object_get(v, c);
    if (!json_is_integer(v)) fail_msg("memory_limit.%s%s%s%s%s is not an integer", a, b ? "." : "", b ? b : "",
                                      c ? "." : "", c ? c : "");
    return json_integer_value(v);
}

/* At HIGH: the memory_limit object of /v1/status says so, with integers. */
static void expect_status_at_high(int fd, uint64_t limit)
{
    json_t *st, *m = memory_limit_via(fd, &st), *changes = json_object_get(m, "changes");
    const char *source = json_string_value(json_object_get(m, "source"));

    expect_u64((uint64_t)jpath(m, "limit_bytes", NULL, NULL), limit, "memory_limit.limit_bytes");
    expect_str(json_string_value(json_object_get(m, "level")), "high", "memory_limit.level");
    expect_u64((uint64_t)jpath(m, "level_value", NULL, NULL), 2, "memory_limit.level_value");
    expect_str(json_string_value(json_object_get(m, "counts")), "rss", "memory_limit.counts");
    if (source == NULL || strstr(source, "tide.cfg") == NULL)
        fail_msg("memory_limit.source should name the config file, got '%s'", source ? source : "(none)");
    expect_u64((uint64_t)jpath(m, "marks", "high", "enter_bytes"), limit / 100 * 90 + limit % 100 * 90 / 100,
               "the high mark: 90% of the limit");
    expect_u64((uint64_t)jpath(m, "marks", "high", "leave_bytes"), limit / 100 * 70 + limit % 100 * 70 / 100,
               "the high mark's leave: 90 - 20 points");
    if ((uint64_t)jpath(m, "counted_bytes", NULL, NULL) < (uint64_t)jpath(m, "marks", "high", "enter_bytes"))
        fail_msg("memory_limit.counted_bytes should be at or above the high mark at high");
    if (jpath(m, "rss_bytes", NULL, NULL) <= 0) fail_msg("memory_limit.rss_bytes should be the RSS read");
    if (jpath(m, "rejected_requests", "write", NULL) < 1 || jpath(m, "rejected_requests", "body", NULL) < 1)
        fail_msg("memory_limit.rejected_requests should count the PUT refused (write) and the body (body)");
    /* The node refuses the PUT itself and counts it (no pre-check in the
     * handler that would keep the node's counter at 0). */
    if (jpath(m, "rejected_writes", NULL, NULL) < jpath(m, "rejected_requests", "write", NULL))
        fail_msg("memory_limit.rejected_writes (%lld) should count every PUT refused (write: %lld)",
                 (long long)jpath(m, "rejected_writes", NULL, NULL),
                 (long long)jpath(m, "rejected_requests", "write", NULL));
    if (!json_is_array(changes) || json_array_size(changes) < 1)
        fail_msg("memory_limit.changes should list the level changes");
    expect_str(json_string_value(json_object_get(json_array_get(changes, 0), "to")), "high",
               "the newest level change");
    json_decref(st);
}

/* At HIGH: PUTs are 503 (in the handler, and before a body is read);
 * reads, /healthz and /metrics are served. */
static void expect_high_sheds_writes(tided *t, uint64_t limit, const uint8_t *small, size_t small_len)
{
    char out[4096], want[128], msg[8192], head[512], k[65];
    uint8_t v[100];
    char *page;
    int fd;
    resp r;

    double jobs_before, slots_before, copies_before;

    page = scrape_with(t, NULL, 200);
    jobs_before = th_prom_value(page, "tide_http_store_jobs_total{kind=\"put\"}");
    slots_before = th_prom_value(page, "tide_http_store_jobs_refused_total");
    copies_before = th_prom_value(page, "tide_http_store_body_copies_total");
    free(page);
    th_value(7001, sizeof v, v);
    r = http(t, "PUT", obj_path(7001, NULL), v, sizeof v, 0, NULL);
    expect_status(r, 503, "a PUT at the high level");
    /* Refused on the loop before a store job exists: no store queue
     * slot, no copy of its body, no job. */
    page = scrape_with(t, NULL, 200);
    expect_u64((uint64_t)th_prom_value(page, "tide_http_store_jobs_total{kind=\"put\"}"), (uint64_t)jobs_before,
               "store jobs of kind put after a PUT refused at high");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_store_jobs_refused_total"), (uint64_t)slots_before,
               "store queue refusals after a PUT refused at high (it asked for no slot)");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_store_body_copies_total"), (uint64_t)copies_before,
               "body copies made for store jobs after a PUT refused at high");
    free(page);
    expect_error_json(&r, "overloaded", "the PUT's 503");
    expect_contains(r.headers, "retry-after: 1", "the PUT's 503 says when to retry");
    expect_contains(r.body, "memory level high", "the 503's detail names the level");
    snprintf(want, sizeof want, "memory_limit = %llu bytes", (unsigned long long)limit);
    expect_contains(r.body, want, "the 503's detail names the limit");
    expect_contains(r.body, "resume below", "the 503's detail names the mark to fall below");
    resp_free(&r);
    /* A large body declared and never sent: the answer comes anyway. */
    key_hex(7002, k);
    fd = connect_from(t, "127.0.0.21");
    snprintf(head, sizeof head, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n", k);
    send_all(fd, head, strlen(head));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("at high, a PUT head declaring 900000 bytes should be answered and closed before its body is "
                 "sent; nothing came in 30 s");
    close(fd);
    expect_contains(out, "HTTP/1.1 503", "a body refused before it is read");
    expect_contains(out, "Retry-After: 1", "its Retry-After");
    expect_contains(out, "\"error\":\"overloaded\"", "its JSON");
    expect_contains(out, "memory level high", "its detail");
    /* The draining close: a client that sends its whole body after the
     * 503 came has it read and dropped until the declared length, so its
     * sends complete (a send buffer far smaller than the body, so the
     * kernel cannot take it all for a tided that does not read), and the
     * connection is not reset under it (a reset loses an answer not read
     * yet). */
    fd = connect_from(t, "127.0.0.21");
    {
        int small_buf = 16384;
        struct timeval tv = { 30, 0 };
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small_buf, sizeof small_buf);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    snprintf(head, sizeof head, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", k,
             1 << 20);
    send_all(fd, head, strlen(head));
    if (!read_response(fd, out, sizeof out, 30000)) fail_msg("at high, a PUT head: no whole 503 in 30 s");
    expect_contains(out, "HTTP/1.1 503", "a body refused before it is read");
    {
        uint8_t *body = calloc(1, 1 << 20);
        size_t sent = 0;
        ssize_t n = 0;
        assert_non_null(body);
        while (sent < (1u << 20) && (n = send(fd, body + sent, (1u << 20) - sent, MSG_NOSIGNAL)) > 0)
            sent += (size_t)n;
        free(body);
        if (sent < (1u << 20))
            fail_msg("after the 503, sending the declared 1 MiB body failed at %zu bytes: %s (the refused "
                     "connection was closed under it, not drained)", sent, n < 0 ? strerror(errno) : "closed");
    }
    close(fd);
    /* A chunked head: refused the same, before its first chunk. */
    fd = connect_from(t, "127.0.0.21");
    snprintf(head, sizeof head, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", k);
    send_all(fd, head, strlen(head));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("at high, a chunked PUT head should be answered and closed before its first chunk; nothing "
                 "came in 30 s");
    close(fd);
    expect_contains(out, "HTTP/1.1 503", "a chunked body refused before it is read");
    expect_contains(out, "\"error\":\"overloaded\"", "its JSON");
    /* A GET is never refused by the level, even one with a body: its head
     * and a first byte wait through many scans unanswered, then the rest
     * of the body gets the value. */
    fd = connect_from(t, "127.0.0.21");
    snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na", obj_path(7000, NULL));
    send_all(fd, head, strlen(head));
    for (double end = th_now_ms() + 1000; th_now_ms() < end; poll(NULL, 0, 20))
        if (has_answer(fd, out, sizeof out)) fail_msg("at high, a GET's body was refused: '%s'", out);
    send_all(fd, "bc", 2);
    if (!read_response(fd, out, sizeof out, 30000)) fail_msg("at high, a GET with a body: no answer in 30 s");
    close(fd);
    expect_contains(out, "HTTP/1.1 200", "a GET with a body at high");
    r = http(t, "GET", obj_path(7000, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "a GET at the high level");
    if (r.len != small_len || memcmp(r.body, small, small_len) != 0) fail_msg("the GET at high: other bytes");
    resp_free(&r);
    r = http(t, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "/healthz at the high level");
    resp_free(&r);
    page = scrape_with(t, NULL, 200);
    expect_u64((uint64_t)th_prom_value(page, "tide_overload_level"), 2, "tide_overload_level at high");
    if (th_prom_value(page, "tide_overload_rejected_requests_total{reason=\"write\"}") < 1
        || th_prom_value(page, "tide_overload_rejected_requests_total{reason=\"body\"}") < 1)
        fail_msg("tide_overload_rejected_requests_total should count the write and the body refused:\n%s", page);
    if (th_prom_value(page, "tide_overload_rejected_writes_total") < 1)
        fail_msg("tide_overload_rejected_writes_total should count the node's refused PUT:\n%s", page);
    expect_u64((uint64_t)th_prom_value(page, "tide_overload_listener_paused"), 0, "the listener at high");
    if (th_promtool_check(page, msg, sizeof msg) != 0) fail_msg("promtool check metrics at high: %s", msg);
    free(page);
}

/* SIGHUP applies a new memory_limit only when the budgets in force (fixed
 * at startup: an 8 GiB node's derived ones hold 5932423576 bytes, 5.53 GiB, its 1 GiB
 * store_index_lag, the deferred index's tail, among them) fit under its
 * high mark: 64 MiB changes nothing and warns naming them; 7 GiB (high
 * mark 6.3 GiB) applies (6 GiB did before the lag was counted). Before:
 * 64 MiB was applied, the budgets in force holding 70 times it. */
static void sighup_keeps_the_limit_when_the_budgets_in_force_do_not_fit_the_new_one(void **state)
{
    char cfg[700], flag[720];
    const char *flags[] = { flag, NULL };
    json_t *st, *m;
    tided t;
    int fd;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    write_memory_cfg(cfg, 8ull << 30);
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, NULL);
    fd = connect_from(&t, "127.0.0.23");
    write_memory_cfg(cfg, 64ull << 20);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: the memory limit's settings did not change: the budgets in force (fixed at "
                       "startup) may hold ", 30000))
        fail_msg("a SIGHUP to 64 MiB under an 8 GiB node's budgets should change nothing and say so. Its log:\n%s",
                 log_tail(&t));
    if (!log_contains(&t, "more than the high mark of memory_limit=64MiB, 90% = 60397977: cache_budget=1717986918 "
                      "(memory_limit 20%) may hold 3435973836"))
        fail_msg("the warning should name the budgets in force with their sources. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, "a restart derives new budgets from the limit"))
        fail_msg("the warning should say a restart derives new budgets. Its log:\n%s", log_tail(&t));
    m = memory_limit_via(fd, &st);
    expect_u64((uint64_t)jpath(m, "limit_bytes", NULL, NULL), 8ull << 30, "the limit in force is still 8 GiB");
    json_decref(st);
    if (log_contains(&t, "SIGHUP: memory_limit"))
        fail_msg("nothing should be logged as applied. Its log:\n%s", log_tail(&t));
    /* 7 GiB holds them (5.55 GiB under 6.3): applied. */
    write_memory_cfg(cfg, 7ull << 30);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: memory_limit", 30000))
        fail_msg("a SIGHUP to 7 GiB should be applied. Its log:\n%s", log_tail(&t));
    m = memory_limit_via(fd, &st);
    expect_u64((uint64_t)jpath(m, "limit_bytes", NULL, NULL), 7ull << 30, "the limit in force is 7 GiB");
    json_decref(st);
    close(fd);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void the_memory_level_sheds_writes_then_connections_and_loses_nothing(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1", tok[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN,
                ballast[] = "TIDE_TEST_BALLAST_MIB=96";
    char *env[] = { pub, tok, ballast, NULL };
    char cfg[700], flag[720], out[4096];
    const char *flags[] = { flag, "--max-object-size=1MiB", "--http-threads=1", "--http-idle-timeout=3600",
                            "--http-request-timeout=3600", NULL };
    enum { BIG = 48, BIG_LEN = 1 << 20 };
    uint8_t *v, small[100];
    uint64_t limit;
    int keep, waiting, reserve[4];
    json_t *st;
    tided t;
    resp r;
    (void)state;

    /* The limits below are set from tided's RSS, which under a sanitizer is
     * its shadow memory and quarantine (the asan run saw 258 MiB before the
     * first PUT), not what the node holds. */
    if (tided_is_sanitized())
        th_skip("%s/tided is a sanitizer build: its RSS is the sanitizer's, not the node's", th_bin_dir());
    v = malloc(BIG_LEN);
    assert_non_null(v);
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    write_memory_cfg_small(cfg, MEMORY_TEST_START);
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, env);
    /* 96 MiB of ballast (memory no budget counts, TIDE_TEST_BALLAST_MIB)
     * and 48 MiB of values through a 1 MiB node cache: an RSS well above
     * the smallest limit (32 MiB), so that the marks sit megabytes apart,
     * and above what the budgets in force may hold (20.8 MiB): a SIGHUP
     * applies a limit only when they fit under its high mark, and the
     * cache alone (RSS about the budget after a sweep) never would. */
    for (uint64_t i = 0; i < BIG; i++) {
        th_value(6000 + i, BIG_LEN, v);
        r = http(&t, "PUT", obj_path(6000 + i, i % 16 == 15 ? "?sync=1" : NULL), v, BIG_LEN, 0, NULL);
        expect_status(r, 201, "a 1 MiB PUT before the limit");
        resp_free(&r);
    }
    th_value(7000, sizeof small, small);
    r = http(&t, "PUT", obj_path(7000, "?sync=1"), small, sizeof small, 0, NULL);
    expect_status(r, 201, "a small PUT before the limit");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep and trim before the RSS is read");
    resp_free(&r);
    keep = connect_from(&t, "127.0.0.20");
    {
        json_t *m = memory_limit_via(keep, &st);
        const char *counts = json_string_value(json_object_get(m, "counts"));
        if (counts && strcmp(counts, "cgroup") == 0) {
            json_decref(st);
            close(keep);
            free(v);
            tided_signal_and_reap(&t, SIGTERM);
            th_skip("a cgroup memory limit applies here and its usage counts, not tided's RSS alone");
        }
        expect_str(json_string_value(json_object_get(m, "level")), "normal", "the level under 256 MiB");
        json_decref(st);
    }
    /* HIGH: the RSS at 93% of the limit (90 <= 93 < 99). */
    limit = drive_level(&t, cfg, keep, 0.93, "high");
    expect_high_sheds_writes(&t, limit, small, sizeof small);
    expect_status_at_high(keep, limit);
    /* CRITICAL: the RSS at 99.5%; the one loop accepts its reserve of 4
     * new connections (monitoring), then stops accepting. */
    drive_level(&t, cfg, keep, 0.995, "critical");
    /* The loop's scan has seen the level (so the reserve, not a race with
     * the scan, is what lets the next 4 in). */
    if (!log_waits_for(&t, "loop 0: memory level critical", 30000))
        fail_msg("the loop should log the critical level. Its log:\n%s", log_tail(&t));
    for (int i = 0; i < 4; i++) {
        reserve[i] = connect_from(&t, "127.0.0.23");
        keepalive_get(reserve[i], "/healthz", out, sizeof out);
        if (strstr(out, "HTTP/1.1 200") == NULL)
            fail_msg("at critical, new connection %d of the reserve of 4 should get /healthz 200; got '%s'. "
                     "Its log:\n%s", i + 1, out, log_tail(&t));
    }
    {
        double end = th_now_ms() + 10000;
        int paused = 0;
        while (!paused && th_now_ms() < end) {
            json_t *m = memory_limit_via(keep, &st);
            paused = json_is_true(json_object_get(m, "listener_paused"));
            json_decref(st);
            if (!paused) poll(NULL, 0, 50);
        }
        if (!paused) fail_msg("at critical with the reserve in use, memory_limit.listener_paused should become "
                              "true. Its log:\n%s", log_tail(&t));
    }
    waiting = connect_from(&t, "127.0.0.22");    /* the kernel's backlog takes it */
    send_all(waiting, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 35);
    {
        double end = th_now_ms() + 1000;
        while (th_now_ms() < end) {
            if (has_answer(waiting, out, sizeof out))
                fail_msg("at critical with the 4 reserve connections open, a fifth should get no answer; it "
                         "got '%s'", out);
            poll(NULL, 0, 20);
        }
    }
    keepalive_get(reserve[0], "/healthz", out, sizeof out);
    expect_contains(out, "HTTP/1.1 200", "a reserve connection is still served with the listener paused");
    keepalive_get(keep, obj_path(7000, NULL), out, sizeof out);
    expect_contains(out, "HTTP/1.1 200", "a GET on the connection open before critical");
    if (memcmp(strstr(out, "\r\n\r\n") + 4, small, sizeof small) != 0) fail_msg("the GET at critical: other bytes");
    if (!log_contains(&t, "not accepting new connections"))
        fail_msg("the pause should be logged. Its log:\n%s", log_tail(&t));
    /* Back to 8 GiB: the waiting connection is served, writes resume. */
    write_memory_cfg_small(cfg, 8ull << 30);
    kill(t.pid, SIGHUP);
    if (!read_response(waiting, out, sizeof out, 30000))
        fail_msg("after memory_limit=8GiB and SIGHUP the waiting connection should be answered; got '%s'. "
                 "Its log:\n%s", out, log_tail(&t));
    expect_contains(out, "HTTP/1.1 200", "the waiting connection's /healthz");
    close(waiting);
    for (int i = 0; i < 4; i++) close(reserve[i]);
    close(keep);
    if (!log_waits_for(&t, "accepting new connections again", 30000))
        fail_msg("the resume should be logged. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, "SIGHUP: memory_limit"))
        fail_msg("SIGHUP should log the memory_limit it applied. Its log:\n%s", log_tail(&t));
    th_value(7003, sizeof small, small);
    r = http(&t, "PUT", obj_path(7003, NULL), small, sizeof small, 0, NULL);
    expect_status(r, 201, "a PUT after the limit went back to 8 GiB");
    resp_free(&r);
    for (uint64_t i = 0; i < BIG; i++) {
        th_value(6000 + i, BIG_LEN, v);
        r = http(&t, "GET", obj_path(6000 + i, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "every acknowledged 1 MiB value reads back");
        if (r.len != BIG_LEN || memcmp(r.body, v, BIG_LEN) != 0) fail_msg("value %llu: other bytes",
                                                                         (unsigned long long)i);
        resp_free(&r);
    }
    r = http(&t, "GET", obj_path(7003, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "the PUT after the limit reads back");
    resp_free(&r);
    r = http(&t, "GET", obj_path(7001, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "the PUT refused at high stored nothing");
    resp_free(&r);
    free(v);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_connections_cannot_lock_healthz_out),
        cmocka_unit_test(a_connection_that_sends_nothing_is_closed_after_the_idle_timeout),
        cmocka_unit_test_teardown(a_head_that_trickles_past_http_header_timeout_is_answered_408_and_closed,
                                  slow_teardown),
        cmocka_unit_test_teardown(a_body_below_http_body_min_rate_is_answered_408_and_nothing_is_stored,
                                  slow_teardown),
        cmocka_unit_test_teardown(an_upload_that_keeps_http_body_min_rate_is_stored_however_long_it_takes,
                                  slow_teardown),
        cmocka_unit_test_teardown(slow_clients_from_twenty_addresses_cannot_lock_out_a_new_client, slow_teardown),
        cmocka_unit_test(partial_bodies_beyond_the_body_budget_are_503_with_retry_after),
        cmocka_unit_test(the_memory_level_sheds_writes_then_connections_and_loses_nothing),
        cmocka_unit_test(sighup_keeps_the_limit_when_the_budgets_in_force_do_not_fit_the_new_one),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided, connection and memory limits", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
