/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_helpers.c: a tided process, a libcurl client, raw sockets and the
 * shared server for the tests of tided over HTTP (http_helpers.h says
 * what each is for and how the tests use them).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "http_helpers.h"

int free_port(int family)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd = socket(family, SOCK_STREAM, 0), port = -1;

    memset(&ss, 0, sizeof ss);
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0
        && getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                        : ((struct sockaddr_in *)&ss)->sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* The server's log, for failure messages (static buffer, last 6 KiB). */
const char *log_tail(const tided *t)
{
    static char buf[900 + 1];
    uint8_t *all = NULL;
    size_t len = 0;

    buf[0] = '\0';
    if (th_read_file(t->log, &all, &len) != 0) return "(no log)";
    size_t from = len > sizeof buf - 1 ? len - (sizeof buf - 1) : 0;
    memcpy(buf, all + from, len - from);
    buf[len - from] = '\0';
    free(all);
    return buf;
}

int log_contains(const tided *t, const char *text)
{
    uint8_t *all = NULL;
    size_t len = 0;
    int found;

    if (th_read_file(t->log, &all, &len) != 0) return 0;
    all = realloc(all, len + 1);
    all[len] = '\0';
    found = strstr((char *)all, text) != NULL;
    free(all);
    return found;
}

/* Poll t's log for `text` for up to ms. */
int log_waits_for(const tided *t, const char *text, int ms)
{
    double end = th_now_ms() + ms;
    while (th_now_ms() < end) {
        if (log_contains(t, text)) return 1;
        poll(NULL, 0, 20);
    }
    return 0;
}

/* Start argv (NULL-terminated) with `env` (NULL-terminated NAME=VALUE,
 * added to ours; "WATCHDOG_PID=" alone becomes the child's own pid, as
 * systemd sets it) and stdout/stderr into t->log. th_fork: the child dies
 * with this test binary, and th_teardown stops it if the test failed
 * before its own cleanup. */
void spawn(tided *t, char *const argv[], char *const env[])
{
    t->reaped = 0;
    t->pid = th_fork();
    assert_true(t->pid >= 0);
    if (t->pid == 0) {
        static char own_pid[64];
        int fd = open(t->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        for (size_t i = 0; env && env[i]; i++) {
            if (strcmp(env[i], "WATCHDOG_PID=") == 0) {
                snprintf(own_pid, sizeof own_pid, "WATCHDOG_PID=%ld", (long)getpid());
                putenv(own_pid);
            } else {
                putenv(env[i]);
            }
        }
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
}

/* Wait up to ms for the child to exit; 1 when it did (status in t). */
int wait_exit(tided *t, int ms)
{
    double end = th_now_ms() + ms;

    if (t->reaped) return 1;
    for (;;) {
        pid_t r = th_waitpid(t->pid, &t->status, WNOHANG);
        if (r == t->pid) { t->reaped = 1; return 1; }
        if (th_now_ms() > end) return 0;
        poll(NULL, 0, 5);
    }
}

char *url(const tided *t, const char *path)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "http://%s:%d%s", t->host, t->port, path);
    return buf;
}

typedef struct upload { const uint8_t *p; size_t left; } upload;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    resp *r = arg;
    char *nb = realloc(r->body, r->len + sz * n + 1);
    if (nb == NULL) return 0;
    memcpy(nb + r->len, p, sz * n);
    r->body = nb;
    r->len += sz * n;
    r->body[r->len] = '\0';
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    resp *r = arg;
    size_t have = strlen(r->headers);
    if (have + sz * n < sizeof r->headers) {
        memcpy(r->headers + have, p, sz * n);
        r->headers[have + sz * n] = '\0';
    }
    return sz * n;
}

static size_t on_read(char *p, size_t sz, size_t n, void *arg)
{
    upload *u = arg;
    size_t k = sz * n < u->left ? sz * n : u->left;
    if (k > 4096) k = 4096;     /* several chunks */
    memcpy(p, u->p, k);
    u->p += k;
    u->left -= k;
    return k;
}

/* One request. body may be NULL; chunked sends it with Transfer-Encoding:
 * chunked; extra is more header lines ('\n' between two) or NULL. */
resp http(const tided *t, const char *method, const char *path, const void *body, size_t len,
                 int chunked, const char *extra)
{
    resp r;
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    upload u = { body, len };

    memset(&r, 0, sizeof r);
    r.body = calloc(1, 1);
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url(t, path));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    h = curl_slist_append(h, "Expect:");
    /* extra: header lines, '\n' between two */
    for (const char *x = extra; x && *x;) {
        const char *nl = strchr(x, '\n');
        size_t n = nl ? (size_t)(nl - x) : strlen(x);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)n, x);
        h = curl_slist_append(h, line);
        x += n + (nl != NULL);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (chunked) {
        h = curl_slist_append(h, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &u);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    } else if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    r.curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r;
}

void resp_free(resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* The body is {"error": code, "detail": "..."}. */
void expect_error_json(const resp *r, const char *code, const char *what)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    const char *got = j ? json_string_value(json_object_get(j, "error")) : NULL;

    if (j == NULL || got == NULL || strcmp(got, code) != 0
        || !json_is_string(json_object_get(j, "detail")))
        fail_msg("%s: expected a JSON body {\"error\":\"%s\",\"detail\":...}, got '%s'", what, code, r->body);
    json_decref(j);
}

void key_hex(uint64_t i, char *out)
{
    uint8_t k[32];
    static const char digits[] = "0123456789abcdef";
    th_key(i, 32, k);
    for (int b = 0; b < 32; b++) {
        out[2 * b] = digits[k[b] >> 4];
        out[2 * b + 1] = digits[k[b] & 15];
    }
    out[64] = '\0';
}

char *obj_path(uint64_t i, const char *query)
{
    static char buf[256];
    char k[65];
    key_hex(i, k);
    snprintf(buf, sizeof buf, "/v1/objects/%s%s", k, query ? query : "");
    return buf;
}

/* Wait for /healthz to say ok, or the child to exit. 0 when healthy. */
int wait_healthy(tided *t)
{
    double end = th_now_ms() + START_MS;

    while (th_now_ms() < end) {
        CURL *c = curl_easy_init();
        long status = 0;
        curl_easy_setopt(c, CURLOPT_URL, url(t, "/healthz"));
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (status == 200) return 0;
        if (wait_exit(t, 0)) return -1;
        poll(NULL, 0, 20);
    }
    return -1;
}

/* Make a scratch directory for t (data under it) once; keep it on restart. */
void tided_prepare(tided *t)
{
    if (t->dir[0] == '\0') {
        assert_int_equal(th_scratch_make(t->dir, sizeof t->dir), 0);
        th_path(t->data, sizeof t->data, t->dir, "data");
        th_path(t->log, sizeof t->log, t->dir, "tided.log");
    }
    if (t->host[0] == '\0') snprintf(t->host, sizeof t->host, "127.0.0.1");
}

/* Start tided on t's data dir (none with t->no_data_dir) and a free port
 * with `flags` (NULL-terminated, may be NULL) and `env`, without waiting;
 * its path goes to bin. */
void tided_launch(tided *t, const char *const *flags, char *const env[], char *bin, size_t cap)
{
    static char listen_arg[128];
    const char *argv[32];
    int n = 0, family = strcmp(t->host, "[::1]") == 0 ? AF_INET6 : AF_INET;

    tided_prepare(t);
    t->port = free_port(family);
    assert_true(t->port > 0);
    snprintf(bin, cap, "%s/tided", th_bin_dir());
    snprintf(listen_arg, sizeof listen_arg, "--listen=%s:%d", t->host, t->port);
    argv[n++] = bin;
    if (!t->no_data_dir) {
        argv[n++] = "--data-dir";
        argv[n++] = t->data;
    }
    argv[n++] = listen_arg;
    argv[n++] = "--http-threads=2";
    for (size_t i = 0; flags && flags[i] && n < 30; i++) argv[n++] = flags[i];
    argv[n] = NULL;
    spawn(t, (char *const *)argv, env);
}

/* Start tided as tided_launch does and wait until it is healthy. */
void tided_start(tided *t, const char *const *flags, char *const env[])
{
    char bin[600];

    for (int attempt = 0; attempt < 3; attempt++) {
        tided_launch(t, flags, env, bin, sizeof bin);
        if (wait_healthy(t) == 0) return;
        if (!wait_exit(t, 0)) break;
        if (!log_contains(t, "Address already in use")) break;   /* lost a port race: retry */
    }
    if (!wait_exit(t, 0)) { kill(t->pid, SIGKILL); wait_exit(t, STOP_MS); }
    fail_msg("tided (%s) should answer /healthz within %d ms; it did not. Its log:\n%s", bin, START_MS,
             log_tail(t));
}

/* Send sig and wait for the exit; fails when it does not come. */
void tided_signal_and_reap(tided *t, int sig)
{
    if (t->reaped) return;
    kill(t->pid, sig);
    if (!wait_exit(t, STOP_MS)) {
        kill(t->pid, SIGKILL);
        wait_exit(t, STOP_MS);
        fail_msg("tided should exit within %d ms of signal %d; it did not. Its log:\n%s", STOP_MS, sig,
                 log_tail(t));
    }
}

void tided_cleanup(tided *t)
{
    if (t->pid > 0 && !t->reaped) { kill(t->pid, SIGKILL); wait_exit(t, STOP_MS); }
    th_scratch_remove(t->dir);
    memset(t, 0, sizeof *t);
}

/* Run tided with `flags` to its exit (it must exit within STOP_MS). Returns
 * the exit status, or -1 when killed by a signal. */
int tided_run_to_exit(tided *t, const char *const *flags, char *const env[])
{
    char bin[600];
    const char *argv[32];
    int n = 0;

    tided_prepare(t);
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    argv[n++] = bin;
    for (size_t i = 0; flags && flags[i] && n < 30; i++) argv[n++] = flags[i];
    argv[n] = NULL;
    spawn(t, (char *const *)argv, env);
    if (!wait_exit(t, STOP_MS)) {
        kill(t->pid, SIGKILL);
        wait_exit(t, STOP_MS);
        fail_msg("tided %s should exit by itself; it was still running after %d ms. Its log:\n%s",
                 flags && flags[0] ? flags[0] : "", STOP_MS, log_tail(t));
    }
    return WIFEXITED(t->status) ? WEXITSTATUS(t->status) : -1;
}

/* Send `len` bytes and read the answer until the server closes or 10 s
 * pass; the answer (NUL-terminated, at most cap - 1 bytes) goes to out. */
void raw_exchange(const tided *t, const void *req, size_t len, char *out, size_t cap)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t have = 0, sent = 0;
    double end = th_now_ms() + 10000;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)t->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    out[0] = '\0';
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    while (sent < len) {
        ssize_t w = send(fd, (const char *)req + sent, len - sent, MSG_NOSIGNAL);
        if (w <= 0) break;      /* the server may close early, having answered */
        sent += (size_t)w;
    }
    while (have + 1 < cap && th_now_ms() < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t r = recv(fd, out + have, cap - 1 - have, 0);
        if (r <= 0) break;
        have += (size_t)r;
    }
    out[have] = '\0';
    close(fd);
}

/* A TCP connection to t from the loopback address `src` ("127.0.0.9"):
 * all of 127/8 is loopback, so tests can be several clients. */
int connect_from(const tided *t, const char *src)
{
    struct sockaddr_in a, b;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&b, 0, sizeof b);
    b.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, src, &b.sin_addr), 1);
    if (bind(fd, (struct sockaddr *)&b, sizeof b) != 0) fail_msg("bind to %s: %s", src, strerror(errno));
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)t->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) fail_msg("connect from %s: %s", src, strerror(errno));
    return fd;
}

void send_all(int fd, const void *p, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        ssize_t w = send(fd, (const char *)p + sent, len - sent, MSG_NOSIGNAL);
        if (w <= 0) fail_msg("send: %s", w < 0 ? strerror(errno) : "closed");
        sent += (size_t)w;
    }
}

/* Read what fd receives until the peer closes (returns 1) or `ms` pass
 * (returns 0); the bytes (NUL-terminated) go to out. */
int read_until_closed(int fd, char *out, size_t cap, int ms)
{
    size_t have = 0;
    double end = th_now_ms() + ms;

    out[0] = '\0';
    while (th_now_ms() < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        char sink[4096];
        ssize_t r;
        if (poll(&p, 1, 50) <= 0) continue;
        r = recv(fd, have + 1 < cap ? out + have : sink, have + 1 < cap ? cap - 1 - have : sizeof sink, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) { out[have] = '\0'; return 1; }
        if (r < 0) continue;
        if (have + 1 < cap) have += (size_t)r;
        out[have] = '\0';
    }
    return 0;
}

/* Whether fd has an answer (or a close) waiting now, without blocking. */
int has_answer(int fd, char *out, size_t cap)
{
    struct pollfd p = { fd, POLLIN, 0 };
    ssize_t r;
    if (poll(&p, 1, 0) <= 0) return 0;
    r = recv(fd, out, cap - 1, MSG_DONTWAIT);
    out[r > 0 ? r : 0] = '\0';
    return 1;
}

/* Read one response (its head, and the body its Content-Length says) from
 * fd into out; 1 when it came whole within ms. */
int read_response(int fd, char *out, size_t cap, int ms)
{
    size_t have = 0;
    double end = th_now_ms() + ms;

    out[0] = '\0';
    while (th_now_ms() < end) {
        const char *eoh = strstr(out, "\r\n\r\n");
        struct pollfd p = { fd, POLLIN, 0 };
        ssize_t r;
        if (eoh) {
            const char *cl = strcasestr(out, "\r\nContent-Length:");
            size_t want = (size_t)(eoh + 4 - out) + (cl && cl < eoh ? strtoul(cl + 17, NULL, 10) : 0);
            if (have >= want) return 1;
        }
        if (have + 1 >= cap) return 0;
        if (poll(&p, 1, 50) <= 0) continue;
        r = recv(fd, out + have, cap - 1 - have, 0);
        if (r <= 0) return 0;
        have += (size_t)r;
        out[have] = '\0';
    }
    return 0;
}

/* The integer at a path of /v1/status's JSON ("http", "connections_evicted"). */
json_int_t status_int(const tided *t, const char *a, const char *b, const char *c)
{
    resp r = http(t, "GET", "/v1/status", NULL, 0, 0, NULL);
    json_error_t e;
    json_t *j, *v;
    json_int_t out;

    expect_status(r, 200, "GET /v1/status");
    j = json_loads(r.body, 0, &e);
    if (j == NULL) fail_msg("/v1/status is not JSON: %s", r.body);
    v = json_object_get(j, a);
    if (b) v = json_object_get(v, b);
    if (c) v = json_object_get(v, c);
    if (!json_is_integer(v)) fail_msg("/v1/status has no integer %s.%s%s%s: %s", a, b ? b : "", c ? "." : "",
                                      c ? c : "", r.body);
    out = json_integer_value(v);
    json_decref(j);
    resp_free(&r);
    return out;
}

char *scrape_with(tided *t, const char *header, long want)
{
    resp r = http(t, "GET", "/metrics", NULL, 0, 0, header);
    if (r.status != want)
        fail_msg("GET /metrics with %s: expected HTTP %ld, got %ld; body: %s", header ? header : "no token", want,
                 r.status, r.body);
    return r.body;
}

/* Run a command, capturing its output (stdout and stderr) into out. Returns
 * its exit status, -1 when it did not exit normally. */
int run_capture(const char *cmd, char *out, size_t cap)
{
    char *all = NULL;
    int st = th_run(cmd, &all);
    snprintf(out, cap, "%s", all);
    free(all);
    return st;
}

/* 1 when th_bin_dir()'s tided is a sanitizer build (its allocator then
 * serves malloc, and no other can be put in front of it). */
int tided_is_sanitized(void)
{
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "ldd %s/tided 2>&1", th_bin_dir());
    return run_capture(cmd, out, sizeof out) == 0 && (strstr(out, "libasan") || strstr(out, "libtsan"));
}

tided shared;

int group_setup(void **state)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--max-object-size=65536", NULL };
    char *env[] = { token_env, NULL };

    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(&shared, 0, sizeof shared);
    tided_start(&shared, flags, env);
    th_child_keep(shared.pid);
    th_scratch_keep(shared.dir);
    return 0;
}

int group_teardown(void **state)
{
    (void)state;
    if (shared.pid > 0 && !shared.reaped) {
        kill(shared.pid, SIGTERM);
        if (!wait_exit(&shared, STOP_MS)) kill(shared.pid, SIGKILL);
        wait_exit(&shared, STOP_MS);
    }
    tided_cleanup(&shared);
    th_children_stop(1);
    curl_global_cleanup();
    return 0;
}
void http_filter_from_env(void)
{
    const char *pattern = getenv("TIDE_HTTP_FILTER");

    if (pattern && *pattern) cmocka_set_test_filter(pattern);
}
