/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http.c: bin/tided end to end, over real sockets.
 *
 * Every test talks to a real tided process started from $TIDE_BIN_DIR
 * (default ./bin; `make asan` points it at the sanitizer build) on a free
 * loopback port with a fresh data directory, and waits for /healthz before
 * it starts. Requests go through libcurl; raw sockets send what curl will
 * not (headers over h2o's limit, a broken chunked body).
 *
 * Most tests share one server (group setup) started with a small
 * max_object_size (64 KiB) and TIDE_ADMIN_TOKEN set; the tests about
 * process life (kill -9, SIGTERM, bad flags, a busy store, a full disk,
 * no admin token, IPv6) start their own.
 *
 * Nothing waits by sleeping: every wait polls a condition (a health
 * check, a child's exit) with a bounded deadline, and a deadline that
 * passes fails the test with what was expected and the server's log.
 *
 * Every tided (and Prometheus) is started with th_fork, so it dies with
 * this binary even when that crashes, and every test has th_teardown,
 * which stops what a failed test left running and removes its scratch
 * directories (see "processes a test starts" and "scratch directories" in
 * helpers.h).
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
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "promcheck.h"
#include "tide/version.h"

#define ADMIN_TOKEN "test-admin-token-5f1c"
#define MAX_OBJECT  65536
#define START_MS    30000     /* a tided under ASan starts in well under this */
#define STOP_MS     30000

/* ---- a tided process ------------------------------------------------- */

typedef struct tided {
    pid_t pid;
    int   port;
    char  host[64];           /* "127.0.0.1" or "[::1]" */
    char  dir[512];           /* scratch: data/, tided.log */
    char  data[600];
    char  log[600];
    int   status;             /* waitpid status once reaped */
    int   reaped;
    int   no_data_dir;        /* tided_start passes no --data-dir */
} tided;

static int free_port(int family)
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
static const char *log_tail(const tided *t)
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

static int log_contains(const tided *t, const char *text)
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

/* Start argv (NULL-terminated) with `env` (NULL-terminated NAME=VALUE,
 * added to ours; "WATCHDOG_PID=" alone becomes the child's own pid, as
 * systemd sets it) and stdout/stderr into t->log. th_fork: the child dies
 * with this test binary, and th_teardown stops it if the test failed
 * before its own cleanup. */
static void spawn(tided *t, char *const argv[], char *const env[])
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
static int wait_exit(tided *t, int ms)
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

static char *url(const tided *t, const char *path)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "http://%s:%d%s", t->host, t->port, path);
    return buf;
}

/* ---- HTTP through libcurl --------------------------------------------- */

typedef struct resp {
    long   status;
    char  *body;              /* NUL-terminated */
    size_t len;
    char   headers[4096];
    int    curl_rc;
} resp;

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
static resp http(const tided *t, const char *method, const char *path, const void *body, size_t len,
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

static void resp_free(resp *r)
{
    free(r->body);
    r->body = NULL;
}

#define expect_status(r, want, what) do { \
        if ((r).status != (want)) \
            fail_msg("%s: expected HTTP %d, got %ld (curl: %s); body: %s", what, (int)(want), (r).status, \
                     curl_easy_strerror((CURLcode)(r).curl_rc), (r).body ? (r).body : ""); \
    } while (0)

/* The body is {"error": code, "detail": "..."}. */
static void expect_error_json(const resp *r, const char *code, const char *what)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    const char *got = j ? json_string_value(json_object_get(j, "error")) : NULL;

    if (j == NULL || got == NULL || strcmp(got, code) != 0
        || !json_is_string(json_object_get(j, "detail")))
        fail_msg("%s: expected a JSON body {\"error\":\"%s\",\"detail\":...}, got '%s'", what, code, r->body);
    json_decref(j);
}

static void key_hex(uint64_t i, char *out)
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

static char *obj_path(uint64_t i, const char *query)
{
    static char buf[256];
    char k[65];
    key_hex(i, k);
    snprintf(buf, sizeof buf, "/v1/objects/%s%s", k, query ? query : "");
    return buf;
}

/* Wait for /healthz to say ok, or the child to exit. 0 when healthy. */
static int wait_healthy(tided *t)
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
static void tided_prepare(tided *t)
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
static void tided_launch(tided *t, const char *const *flags, char *const env[], char *bin, size_t cap)
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
static void tided_start(tided *t, const char *const *flags, char *const env[])
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
static void tided_signal_and_reap(tided *t, int sig)
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

static void tided_cleanup(tided *t)
{
    if (t->pid > 0 && !t->reaped) { kill(t->pid, SIGKILL); wait_exit(t, STOP_MS); }
    th_scratch_remove(t->dir);
    memset(t, 0, sizeof *t);
}

/* Run tided with `flags` to its exit (it must exit within STOP_MS). Returns
 * the exit status, or -1 when killed by a signal. */
static int tided_run_to_exit(tided *t, const char *const *flags, char *const env[])
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

/* ---- raw sockets -------------------------------------------------------- */

/* Send `len` bytes and read the answer until the server closes or 10 s
 * pass; the answer (NUL-terminated, at most cap - 1 bytes) goes to out. */
static void raw_exchange(const tided *t, const void *req, size_t len, char *out, size_t cap)
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

/* ---- the shared server ---------------------------------------------------- */

static tided shared;

static int group_setup(void **state)
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

static int group_teardown(void **state)
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

/* ---- tests on the shared server ------------------------------------------- */

static void a_put_answers_201_and_a_second_put_of_the_same_key_409(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(1, NULL), "first", 5, 0, NULL);
    expect_status(r, 201, "PUT of a new key");
    expect_contains(r.body, "\"bytes\":5", "the 201 body");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(1, NULL), "second", 6, 0, NULL);
    expect_status(r, 409, "PUT of a key already stored");
    expect_error_json(&r, "exists", "the 409 body");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after the refused second PUT");
    expect_str(r.body, "first", "the value kept after a 409");
    resp_free(&r);
}

static void a_get_returns_the_value_with_its_length_and_head_returns_no_body(void **state)
{
    uint8_t value[3000];
    resp r;
    (void)state;

    th_value(2, sizeof value, value);
    r = http(&shared, "PUT", obj_path(2, "?sync=0"), value, sizeof value, 0, NULL);
    expect_status(r, 201, "PUT of 3000 bytes");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of a stored key");
    expect_u64(r.len, sizeof value, "bytes of the GET body");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("GET: the body differs from the value PUT");
    expect_contains(r.headers, "Content-Length: 3000", "GET headers");
    expect_contains(r.headers, "application/octet-stream", "GET content type");
    resp_free(&r);
    r = http(&shared, "HEAD", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "HEAD of a stored key");
    expect_u64(r.len, 0, "bytes of a HEAD body");
    expect_contains(r.headers, "Content-Length: 3000", "HEAD headers");
    resp_free(&r);
}

static void keys_in_upper_case_hex_name_the_same_object(void **state)
{
    char k[65], path[128];
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(3, NULL), "case", 4, 0, NULL);
    expect_status(r, 201, "PUT in lower case");
    resp_free(&r);
    key_hex(3, k);
    for (char *p = k; *p; p++) if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    snprintf(path, sizeof path, "/v1/objects/%s", k);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the same key in upper case");
    expect_str(r.body, "case", "value by the upper-case key");
    resp_free(&r);
}

static void a_key_never_stored_is_404(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", obj_path(999999, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of a key never stored");
    expect_error_json(&r, "not_found", "the 404 body");
    resp_free(&r);
    r = http(&shared, "HEAD", obj_path(999999, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "HEAD of a key never stored");
    resp_free(&r);
}

static void a_key_of_the_wrong_length_or_not_hex_is_400(void **state)
{
    char path[256], k[65];
    resp r;
    (void)state;

    key_hex(4, k);
    snprintf(path, sizeof path, "/v1/objects/%.62s", k);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 400, "GET with a 62-digit key");
    expect_error_json(&r, "bad_key", "the 400 body for a short key");
    resp_free(&r);
    snprintf(path, sizeof path, "/v1/objects/%s00", k);
    r = http(&shared, "PUT", path, "x", 1, 0, NULL);
    expect_status(r, 400, "PUT with a 66-digit key");
    resp_free(&r);
    k[10] = 'g';
    snprintf(path, sizeof path, "/v1/objects/%s", k);
    r = http(&shared, "PUT", path, "x", 1, 0, NULL);
    expect_status(r, 400, "PUT with a 'g' in the key");
    expect_contains(r.body, "character 11", "the 400 detail names the position");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/objects/", NULL, 0, 0, NULL);
    expect_status(r, 400, "GET with an empty key");
    resp_free(&r);
}

static void a_put_with_an_empty_body_or_an_unknown_query_is_400(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(5, NULL), NULL, 0, 0, NULL);
    expect_status(r, 400, "PUT with an empty body");
    expect_error_json(&r, "empty_value", "the 400 body for an empty value");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(5, "?synch=1"), "v", 1, 0, NULL);
    expect_status(r, 400, "PUT with a misspelt sync parameter");
    expect_error_json(&r, "bad_query", "the 400 body for an unknown parameter");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(5, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key the refused PUTs named");
    resp_free(&r);
}

static void a_wrong_method_is_405_with_allow_and_an_unknown_path_404(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "DELETE", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 405, "DELETE of an object");
    expect_contains(r.headers, "allow: GET, HEAD, PUT", "the Allow header of /v1/objects");
    expect_error_json(&r, "method_not_allowed", "the 405 body");
    resp_free(&r);
    r = http(&shared, "POST", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 405, "POST /healthz");
    expect_contains(r.headers, "allow: GET, HEAD", "the Allow header of /healthz");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/sweep", NULL, 0, 0, NULL);
    expect_status(r, 405, "GET /v1/admin/sweep");
    expect_contains(r.headers, "allow: POST", "the Allow header of /v1/admin/sweep");
    resp_free(&r);
    r = http(&shared, "GET", "/v2/nothing", NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of an unknown path");
    expect_error_json(&r, "not_found", "the 404 body of an unknown path");
    resp_free(&r);
}

static void healthz_answers_ok(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz");
    expect_str(r.body, "ok\n", "the /healthz body");
    resp_free(&r);
}

static void a_body_over_max_object_size_is_413_by_content_length_and_by_chunks(void **state)
{
    uint8_t *big = calloc(1, MAX_OBJECT + 1);
    resp r;
    (void)state;

    assert_non_null(big);
    th_value(6, MAX_OBJECT + 1, big);
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT + 1, 0, NULL);
    expect_status(r, 413, "PUT of max_object_size + 1 bytes with Content-Length");
    expect_error_json(&r, "too_large", "the 413 body (Content-Length)");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT + 1, 1, NULL);
    expect_status(r, 413, "PUT of max_object_size + 1 bytes, chunked");
    expect_error_json(&r, "too_large", "the 413 body (chunked)");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(6, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key whose PUTs were too large");
    resp_free(&r);
    /* Exactly max_object_size passes either way. */
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT, 1, NULL);
    expect_status(r, 201, "PUT of exactly max_object_size bytes, chunked");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(7, NULL), big, MAX_OBJECT, 0, NULL);
    expect_status(r, 201, "PUT of exactly max_object_size bytes with Content-Length");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(6, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the chunked maximum");
    expect_u64(r.len, MAX_OBJECT, "bytes of the chunked maximum");
    if (memcmp(r.body, big, MAX_OBJECT) != 0) fail_msg("the chunked value came back different");
    resp_free(&r);
    free(big);
}

static void a_request_target_over_1024_bytes_is_414(void **state)
{
    char path[1100];
    resp r;
    (void)state;

    memset(path, 'a', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    memcpy(path, "/v1/objects/", 12);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 414, "GET with a 1099-byte path");
    expect_error_json(&r, "uri_too_long", "the 414 body");
    resp_free(&r);
}

static void headers_over_h2os_limit_are_refused_and_tided_keeps_serving(void **state)
{
    size_t big = 500 * 1024, n = 0;
    char *req = malloc(big + 256), answer[4096];
    resp r;
    (void)state;

    n += (size_t)sprintf(req, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ");
    memset(req + n, 'a', big);
    n += big;
    n += (size_t)sprintf(req + n, "\r\n\r\n");
    raw_exchange(&shared, req, n, answer, sizeof answer);
    free(req);
    if (strncmp(answer, "HTTP/1.1 400", 12) != 0)
        fail_msg("a 500 KiB header should get 400 (h2o's H2O_MAX_REQLEN is 417792 bytes), got '%.200s'",
                 answer);
    /* A broken chunked body is 400 too, and the body is JSON. */
    {
        char bad[256];
        int len = snprintf(bad, sizeof bad, "PUT %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "zz\r\n", obj_path(8, NULL));
        raw_exchange(&shared, bad, (size_t)len, answer, sizeof answer);
        expect_contains(answer, "HTTP/1.1 400", "a broken chunked body");
        expect_contains(answer, "{\"error\":\"bad_request\"", "the JSON body of h2o's own 400");
    }
    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz after the malformed requests");
    resp_free(&r);
}

static void admin_sweep_needs_the_bearer_token_and_returns_the_report(void **state)
{
    resp r;
    json_t *j;
    json_error_t e;
    (void)state;

    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/sweep without a token");
    expect_contains(r.headers, "www-authenticate: Bearer", "the 401 challenge");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer wrong-token-xyz");
    expect_status(r, 401, "POST /v1/admin/sweep with a wrong token");
    if (strstr(r.body, "wrong-token-xyz") || strstr(r.headers, "wrong-token-xyz"))
        fail_msg("the 401 answer echoes the token sent: '%s'", r.body);
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN "x");
    expect_status(r, 401, "POST /v1/admin/sweep with the token plus one character");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "POST /v1/admin/sweep with the admin token");
    if (strstr(r.body, ADMIN_TOKEN)) fail_msg("the sweep report contains the admin token: %s", r.body);
    j = json_loads(r.body, 0, &e);
    if (j == NULL) fail_msg("the sweep report should be JSON, got '%s'", r.body);
    if (json_integer_value(json_object_get(j, "seq")) < 1)
        fail_msg("the sweep report should have seq >= 1, got '%s'", r.body);
    if (!json_is_integer(json_object_get(json_object_get(j, "trim"), "rss_before")))
        fail_msg("the sweep report should have trim.rss_before, got '%s'", r.body);
    json_decref(j);
    resp_free(&r);
    if (log_contains(&shared, ADMIN_TOKEN)) fail_msg("tided's log contains the admin token");
    /* The round is on the list of recent rounds, newest first. */
    r = http(&shared, "GET", "/v1/sweeps", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/sweeps");
    j = json_loads(r.body, 0, &e);
    if (j == NULL || !json_is_array(json_object_get(j, "reports")) ||
        json_array_size(json_object_get(j, "reports")) < 1)
        fail_msg("/v1/sweeps should list at least the sweep just made, got '%s'", r.body);
    json_t *first = json_array_get(json_object_get(j, "reports"), 0);
    if (!json_is_integer(json_object_get(first, "freed_bytes")) ||
        !json_is_integer(json_object_get(json_object_get(first, "trim"), "duration_ns")))
        fail_msg("a report should carry freed_bytes and trim.duration_ns, got '%s'", r.body);
    /* The node cache's arena (on by default): its evacuation and release. */
    static const char *const arena_keys[] = { "rc", "segments", "moved_objects", "moved_entries", "moved_bytes",
                                              "released",
                                              "evacuate_ns", "release_ns" };
    for (size_t i = 0; i < sizeof arena_keys / sizeof arena_keys[0]; i++) {
        if (!json_is_integer(json_object_get(json_object_get(first, "arena"), arena_keys[i])))
            fail_msg("a report should carry arena.%s, got '%s'", arena_keys[i], r.body);
        if (!json_is_integer(json_object_get(json_object_get(first, "key_cache_arena"), arena_keys[i])))
            fail_msg("a report should carry key_cache_arena.%s, got '%s'", arena_keys[i], r.body);
    }
    json_decref(j);
    resp_free(&r);
}

static void status_reports_the_store_caches_memory_and_sweeps_as_json(void **state)
{
    static const char *const paths[][2] = {
        { "store", "block_size" }, { "store", "inserts" }, { "store", "fetches" }, { "store", "commits" },
        { "store", "dat_file_bytes" }, { "store", "key_file_bytes" }, { "node_cache", "hits" },
        { "node_cache", "bytes" }, { "key_cache", "entries" }, { "memory", "rss_bytes" },
        { "sweeps", "sweeps" }, { "http", "threads" }, { "requests", "puts" },
    };
    static const char *const accounts[] = { "node_cache", "key_cache", "store_insert_pool", "store_commit",
                                            "http" };
    json_error_t e;
    json_t *j, *acct;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/status");
    j = json_loads(r.body, 0, &e);
    if (j == NULL) fail_msg("/v1/status should be JSON, got '%s'", r.body);
    if (!json_is_string(json_object_get(j, "version"))) fail_msg("/v1/status has no version: %s", r.body);
    if (!json_is_number(json_object_get(j, "uptime_seconds"))) fail_msg("/v1/status has no uptime: %s", r.body);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!json_is_integer(json_object_get(json_object_get(j, paths[i][0]), paths[i][1])))
            fail_msg("/v1/status should have the integer %s.%s, got '%s'", paths[i][0], paths[i][1], r.body);
    acct = json_object_get(json_object_get(j, "memory"), "accounts");
    for (size_t i = 0; i < sizeof accounts / sizeof accounts[0]; i++)
        if (!json_is_integer(json_object_get(acct, accounts[i])))
            fail_msg("/v1/status memory.accounts should have %s, got '%s'", accounts[i], r.body);
    expect_u64(json_integer_value(json_object_get(json_object_get(j, "http"), "threads")), 2,
               "http.threads with --http-threads=2");
    json_decref(j);
    resp_free(&r);
    /* store.keys: null until the count made at open is done (an empty store's
     * takes milliseconds), then the keys put so far. */
    double end = th_now_ms() + 10000;
    json_t *keys = NULL;
    do {
        r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
        j = json_loads(r.body, 0, &e);
        keys = j ? json_object_get(json_object_get(j, "store"), "keys") : NULL;
        if (keys && json_is_integer(keys)) break;
        json_decref(j);
        j = NULL;
        resp_free(&r);
        poll(NULL, 0, 20);
    } while (th_now_ms() < end);
    if (j == NULL) fail_msg("/v1/status store.keys should become a number within 10 s");
    if (json_integer_value(keys) != json_integer_value(json_object_get(json_object_get(j, "requests"), "puts")))
        fail_msg("store.keys should equal the puts that stored on a fresh store: %s", r.body);
    json_decref(j);
    resp_free(&r);
}


/* ---- online delete: the endpoints on a node without generations ---------------- */

#define AUTH "Authorization: Bearer " ADMIN_TOKEN

static json_t *body_json(const resp *r, const char *what)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    if (j == NULL) fail_msg("%s: expected a JSON body, got '%s'", what, r->body);
    return j;
}

static void rotate_needs_the_token_refuses_a_bad_body_and_is_409_without_generations(void **state)
{
    char body[300], k1[65], k2[65];
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/rotate", NULL, 0, 0, AUTH);
    expect_status(r, 405, "GET /v1/admin/rotate");
    expect_contains(r.headers, "allow: POST", "the Allow header");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/rotate without the token");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, "Authorization: Bearer nope");
    expect_status(r, 401, "POST /v1/admin/rotate with a wrong token");
    resp_free(&r);
    /* The token is checked before the query: a stranger's bad query is
     * not echoed back in a 400. */
    r = http(&shared, "POST", "/v1/admin/rotate?expect=x", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad ?expect= without the token");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/keep?bogus=1", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad keep query without the token");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?value=bogus", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad can_delete value without the token");
    resp_free(&r);

    key_hex(1, k1);
    key_hex(2, k2);
    snprintf(body, sizeof body, "%s\n%sz\n", k1, k2);
    r = http(&shared, "POST", "/v1/admin/rotate", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a keep-list with a bad second line");
    expect_error_json(&r, "bad_body", "the 400 body");
    expect_contains(r.body, "line 2 of the keep-list", "the bad line is named");
    expect_contains(r.body, "nothing was rotated", "and nothing was done");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", "0123\n", 5, 0, AUTH "\nContent-Type: text/plain; charset=utf-8");
    expect_status(r, 400, "a key of 4 hex digits");
    expect_contains(r.body, "line 1 of the keep-list, '0123', is not a key of 64 hex digits", "line 1");
    resp_free(&r);
    memset(body, 7, 33);
    r = http(&shared, "POST", "/v1/admin/rotate", body, 33, 0, AUTH "\nContent-Type: application/octet-stream");
    expect_status(r, 400, "33 raw bytes");
    expect_contains(r.body, "33 bytes is 1 keys and 1 bytes more", "the length is named");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", k1, 64, 0, AUTH "\nContent-Type: image/png");
    expect_status(r, 400, "another content type");
    expect_contains(r.body, "text/plain (hex keys, one per line) or application/octet-stream", "the types");
    resp_free(&r);

    /* Well formed, but this node has no generations. */
    snprintf(body, sizeof body, "\r\n  %s  \r\n\n", k1);
    r = http(&shared, "POST", "/v1/admin/rotate", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 409, "POST /v1/admin/rotate on a plain store");
    expect_error_json(&r, "online_delete_off", "the 409 body");
    expect_contains(r.body, "--online-delete", "the 409 says how to turn it on");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, AUTH);
    expect_status(r, 409, "POST /v1/admin/rotate without a body on a plain store");
    resp_free(&r);
}

static void can_delete_reads_and_sets_the_allowance_and_refuses_bad_text(void **state)
{
    static const struct { const char *query; const char *want; json_int_t n; } set[] = {
        { "?value=5", NULL, 5 }, { "?value=always", "always", 0 }, { "?value=now", NULL, 1 },
        { "?value=never", "never", 0 },
    };
    char path[128];
    json_t *j;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, NULL);
    expect_status(r, 401, "GET /v1/admin/can_delete without the token");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    expect_status(r, 200, "GET /v1/admin/can_delete");
    j = body_json(&r, "can_delete");
    expect_str(json_string_value(json_object_get(j, "can_delete")), "never", "never after a start");
    expect_u64((uint64_t)json_integer_value(json_object_get(j, "rotations")), 0, "rotations");
    if (!json_is_false(json_object_get(j, "enabled"))) fail_msg("enabled should be false: %s", r.body);
    json_decref(j);
    resp_free(&r);
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        snprintf(path, sizeof path, "/v1/admin/can_delete%s", set[i].query);
        r = http(&shared, "POST", path, NULL, 0, 0, AUTH);
        expect_status(r, 200, path);
        j = body_json(&r, path);
        if (set[i].want) expect_str(json_string_value(json_object_get(j, "can_delete")), set[i].want, path);
        else expect_u64((uint64_t)json_integer_value(json_object_get(j, "can_delete")), (uint64_t)set[i].n, path);
        json_decref(j);
        resp_free(&r);
    }
    r = http(&shared, "POST", "/v1/admin/can_delete?value=soon", NULL, 0, 0, AUTH);
    expect_status(r, 400, "value=soon");
    expect_error_json(&r, "bad_value", "the 400 body");
    expect_contains(r.body, "'soon' is not a rotation count (0 to 2^53), never, always or now", "what is accepted");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    expect_status(r, 400, "POST without a value");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete?value=3", NULL, 0, 0, AUTH);
    expect_status(r, 400, "GET with a value");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?value=1&value=2", NULL, 0, 0, AUTH);
    expect_status(r, 400, "value twice");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?val=1", NULL, 0, 0, AUTH);
    expect_status(r, 400, "an unknown parameter");
    expect_error_json(&r, "bad_query", "bad_query");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    j = body_json(&r, "can_delete after the refusals");
    expect_str(json_string_value(json_object_get(j, "can_delete")), "never", "a refused value changed nothing");
    json_decref(j);
    resp_free(&r);
}

static void rotations_and_status_say_online_delete_is_off(void **state)
{
    json_t *j, *od;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/rotations", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/rotations");
    j = body_json(&r, "/v1/rotations");
    if (!json_is_array(json_object_get(j, "reports")) || json_array_size(json_object_get(j, "reports")) != 0)
        fail_msg("/v1/rotations on a plain store should list no report: %s", r.body);
    if (!json_is_false(json_object_get(j, "enabled"))) fail_msg("enabled should be false: %s", r.body);
    json_decref(j);
    resp_free(&r);
    r = http(&shared, "POST", "/v1/rotations", NULL, 0, 0, NULL);
    expect_status(r, 405, "POST /v1/rotations");
    resp_free(&r);

    r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    od = json_object_get(j, "online_delete");
    if (!json_is_object(od) || !json_is_false(json_object_get(od, "enabled")))
        fail_msg("/v1/status should say online_delete.enabled false: %s", r.body);
    static const char *const ints[] = { "disk_bytes", "rotations", "newest_objects", "newest_bytes",
                                        "copied_forward", "older_lookups", "failures", "abandoned" };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!json_is_integer(json_object_get(od, ints[i])))
            fail_msg("/v1/status online_delete.%s should be an integer: %s", ints[i], r.body);
    if (json_array_size(json_object_get(od, "generations")) != 1)
        fail_msg("a plain store is listed as one generation: %s", r.body);
    if (json_integer_value(json_object_get(od, "disk_bytes"))
        != json_integer_value(json_object_get(json_array_get(json_object_get(od, "generations"), 0), "bytes")))
        fail_msg("disk_bytes is the plain store's files: %s", r.body);
    if (!json_is_null(json_object_get(od, "last_rotation"))) fail_msg("no rotation yet: %s", r.body);
    json_decref(j);
    resp_free(&r);
}

/* ---- tests with their own server ------------------------------------------ */

/* ---- online delete on a node with generations ---------------------------------- */

static json_t *rotate_ok(const tided *t, const void *body, size_t len, const char *type, const char *what)
{
    char hdr[200];
    resp r;
    json_t *j;

    snprintf(hdr, sizeof hdr, AUTH "%s%s", type ? "\nContent-Type: " : "", type ? type : "");
    r = http(t, "POST", "/v1/admin/rotate", body, len, 0, hdr);
    expect_status(r, 200, what);
    j = body_json(&r, what);
    resp_free(&r);
    return j;
}

static json_int_t jint(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (!json_is_integer(v)) fail_msg("expected an integer at %s%s%s", a, b ? "." : "", b ? b : "");
    return json_integer_value(v);
}

static void admin_rotate_with_keep_lists_answers_every_field_and_deletes_the_rest(void **state)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--online-delete=manual", "--back-off-milliseconds=0", "--delete-chunk=4096",
                                   NULL };
    static const char *const report_fields[] = { "seq", "started_unix_us", "trigger", "rc", "rc_name", "abandoned",
        "error", "gate_wait_ns", "keep_ns", "keep_keys", "keep_copied", "keep_missing", "keep_copied_bytes",
        "trim_ns", "trimmed", "trim_rc", "trim", "gens", "total_ns" };
    static const char *const gens_fields[] = { "started_unix_us", "new_id", "dropped_ids", "dropped",
        "deleted_bytes", "held_bytes", "delete_steps", "create_ns", "sync_ns", "flush_ns", "manifest_ns", "switch_ns",
        "drop_ns", "objects_in_previous", "rotations" };
    char *env[] = { token_env, NULL };
    uint8_t value[100], raw[32];
    char body[200], k1[65];
    json_t *j, *od;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    if (!log_contains(&t, "online delete: 2 generations, rotated only by"))
        fail_msg("the startup log should state the disk bound; it says:\n%s", log_tail(&t));
    for (uint64_t i = 1; i <= 3; i++) {
        th_value(i, sizeof value, value);
        r = http(&t, "PUT", obj_path(i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT in span 1");
        resp_free(&r);
    }
    key_hex(1, k1);
    snprintf(body, sizeof body, "%s\n", k1);
    j = rotate_ok(&t, body, strlen(body), "text/plain", "rotation 1 with key 1 to keep");
    for (size_t i = 0; i < sizeof report_fields / sizeof report_fields[0]; i++)
        if (json_object_get(j, report_fields[i]) == NULL) fail_msg("the report has no field %s", report_fields[i]);
    for (size_t i = 0; i < sizeof gens_fields / sizeof gens_fields[0]; i++)
        if (json_object_get(json_object_get(j, "gens"), gens_fields[i]) == NULL)
            fail_msg("the report's gens has no field %s", gens_fields[i]);
    expect_str(json_string_value(json_object_get(j, "trigger")), "admin", "trigger");
    expect_u64((uint64_t)jint(j, "keep_keys", NULL), 1, "one key handed over");
    expect_u64((uint64_t)jint(j, "keep_copied", NULL), 0, "key 1 was in the newest already");
    expect_u64((uint64_t)jint(j, "gens", "new_id"), 2, "generation 2 created");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 0, "nothing dropped yet");
    expect_u64((uint64_t)jint(j, "gens", "objects_in_previous"), 3, "three objects in generation 1");
    /* The node defers its index (store_index_lag's derived default): the
     * rotation indexed generation 1's tail, and that time is in sync_ns
     * even though nothing was dropped. */
    if (jint(j, "gens", "flush_ns") <= 0) fail_msg("flush_ns %lld: no flush timed", (long long)jint(j, "gens", "flush_ns"));
    if (jint(j, "gens", "sync_ns") < jint(j, "gens", "flush_ns"))
        fail_msg("sync_ns %lld < flush_ns %lld: the flush is part of sync_ns", (long long)jint(j, "gens", "sync_ns"),
                 (long long)jint(j, "gens", "flush_ns"));
    json_decref(j);

    /* A malformed keep-list rotates nothing. */
    r = http(&t, "POST", "/v1/admin/rotate", "zz\n", 3, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a bad keep-list on a node with generations");
    resp_free(&r);

    th_key(2, 32, raw);
    j = rotate_ok(&t, raw, sizeof raw, "application/octet-stream", "rotation 2 keeping key 2 (raw)");
    expect_u64((uint64_t)jint(j, "seq", NULL), 2, "the second attempt: the bad body made none");
    expect_u64((uint64_t)jint(j, "keep_copied", NULL), 1, "key 2 copied forward");
    expect_u64((uint64_t)jint(j, "keep_copied_bytes", NULL), sizeof value, "its bytes");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 1, "generation 1 dropped");
    expect_u64((uint64_t)json_integer_value(json_array_get(json_object_get(json_object_get(j, "gens"), "dropped_ids"), 0)),
               1, "dropped_ids");
    if (!json_is_true(json_object_get(j, "trimmed"))) fail_msg("a drop is followed by a trim: %s", json_dumps(j, 0));
    if (jint(j, "gens", "deleted_bytes") <= 0) fail_msg("the drop deleted no bytes");
    expect_u64((uint64_t)jint(j, "gens", "held_bytes"), 0, "no reader held the dropped generation");
    json_decref(j);

    r = http(&t, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "key 2, kept");
    resp_free(&r);
    r = http(&t, "GET", obj_path(3, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "key 3: written in span 1, untouched in span 2, cached by its PUT");
    resp_free(&r);
    r = http(&t, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "key 1: kept at rotation 1 (already newest), untouched in span 2");
    resp_free(&r);

    r = http(&t, "GET", "/v1/rotations", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/rotations");
    expect_u64(json_array_size(json_object_get(j, "reports")), 2, "two reports");
    expect_u64((uint64_t)json_integer_value(json_object_get(json_array_get(json_object_get(j, "reports"), 0), "seq")),
               2, "newest first");
    if (!json_is_true(json_object_get(j, "enabled"))) fail_msg("enabled: %s", r.body);
    json_decref(j);
    resp_free(&r);

    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    od = json_object_get(j, "online_delete");
    if (!json_is_true(json_object_get(od, "enabled"))) fail_msg("online_delete.enabled: %s", r.body);
    expect_u64(json_array_size(json_object_get(od, "generations")), 2, "two generations");
    json_t *g0 = json_array_get(json_object_get(od, "generations"), 0), *g1 =
        json_array_get(json_object_get(od, "generations"), 1);
    expect_u64((uint64_t)jint(g0, "id", NULL), 3, "newest id");
    expect_u64((uint64_t)jint(g1, "id", NULL), 2, "older id");
    expect_str(json_string_value(json_object_get(g0, "dir")), "gen-000000000003", "its directory");
    expect_u64((uint64_t)jint(od, "disk_bytes", NULL), (uint64_t)(jint(g0, "bytes", NULL) + jint(g1, "bytes", NULL)),
               "disk_bytes is the generations' bytes");
    expect_u64((uint64_t)jint(od, "rotations", NULL), 2, "rotations");
    expect_u64((uint64_t)jint(od, "last_rotation", "seq"), 2, "last_rotation");
    expect_str(json_string_value(json_object_get(od, "can_delete")), "never", "can_delete");
    json_decref(j);
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A keep-list in pieces: POST /v1/admin/keep twice (hex, then raw), each
 * answering the count it copied at; a stale rotate?expect is 409 and
 * rotates nothing; rotate?expect=R rotates; the kept keys survive the drop
 * and the untouched ones are gone. */
static void a_keep_list_in_pieces_then_rotate_expect_keeps_exactly_those_keys(void **state)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--online-delete=manual", "--back-off-milliseconds=0", "--delete-chunk=4096",
                                   "--delete-batch=1", NULL };
    char *env[] = { token_env, NULL };
    uint8_t value[100], raw[32];
    char body[300], k1[65], k2[65];
    json_t *j;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    for (uint64_t i = 1; i <= 6; i++) {
        th_value(i, sizeof value, value);
        r = http(&t, "PUT", obj_path(i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT in span 1");
        resp_free(&r);
    }
    json_decref(rotate_ok(&t, NULL, 0, NULL, "rotation 1: keys 1..6 now in the older generation"));

    r = http(&t, "POST", "/v1/admin/keep", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/keep without the token");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/keep", NULL, 0, 0, AUTH);
    expect_status(r, 405, "GET /v1/admin/keep");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/keep", "zz\n", 3, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a bad piece");
    expect_contains(r.body, "nothing was copied", "a bad piece copies nothing");
    resp_free(&r);

    key_hex(1, k1);
    key_hex(2, k2);
    snprintf(body, sizeof body, "%s\n\n  %s\r\n", k1, k2);
    r = http(&t, "POST", "/v1/admin/keep", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 200, "piece 1: keys 1 and 2 in hex");
    j = body_json(&r, "piece 1");
    expect_u64((uint64_t)jint(j, "keys", NULL), 2, "piece 1: two keys");
    expect_u64((uint64_t)jint(j, "copied", NULL), 2, "piece 1: both copied forward");
    expect_u64((uint64_t)jint(j, "missing", NULL), 0, "piece 1: none missing");
    expect_u64((uint64_t)jint(j, "copied_bytes", NULL), 2 * sizeof value, "piece 1: their bytes");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "piece 1: copied at rotation count 1");
    json_decref(j);
    resp_free(&r);

    uint8_t two[64];
    th_key(3, 32, two);
    th_key(99, 32, two + 32);                        /* in no generation */
    r = http(&t, "POST", "/v1/admin/keep", two, sizeof two, 0, AUTH "\nContent-Type: application/octet-stream");
    expect_status(r, 200, "piece 2: key 3 and a missing key, raw");
    j = body_json(&r, "piece 2");
    expect_u64((uint64_t)jint(j, "keys", NULL), 2, "piece 2: two keys");
    expect_u64((uint64_t)jint(j, "copied", NULL), 1, "piece 2: key 3 copied");
    expect_u64((uint64_t)jint(j, "missing", NULL), 1, "piece 2: key 99 missing");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "piece 2: the same count");
    json_decref(j);
    resp_free(&r);

    r = http(&t, "POST", "/v1/admin/rotate?expect=one", NULL, 0, 0, AUTH);
    expect_status(r, 400, "expect must be a count");
    resp_free(&r);
    (void)raw;
    r = http(&t, "POST", "/v1/admin/rotate?expect=1", k1, 64, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "rotate?expect takes no body");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/rotate?expect=0", NULL, 0, 0, AUTH);
    expect_status(r, 409, "a stale expect");
    expect_error_json(&r, "rotated_meanwhile", "the stale expect's body");
    j = body_json(&r, "the 409");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "the 409 says the present count");
    expect_u64((uint64_t)jint(j, "expected", NULL), 0, "and the expected one");
    json_decref(j);
    resp_free(&r);
    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    expect_u64((uint64_t)jint(json_object_get(j, "online_delete"), "rotations", NULL), 1,
               "the stale expect rotated nothing");
    json_decref(j);
    resp_free(&r);

    r = http(&t, "POST", "/v1/admin/rotate?expect=1", NULL, 0, 0, AUTH);
    expect_status(r, 200, "rotate?expect=1");
    j = body_json(&r, "rotate?expect=1");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 1, "generation 1 dropped");
    expect_u64((uint64_t)jint(j, "gens", "rotations"), 2, "the count is 2");
    json_decref(j);
    resp_free(&r);
    for (uint64_t i = 1; i <= 6; i++) {
        r = http(&t, "GET", obj_path(i, NULL), NULL, 0, 0, NULL);
        expect_status(r, i <= 3 ? 200 : 404, i <= 3 ? "a kept key survives" : "an untouched key is gone");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}


static void admin_sweep_is_403_when_no_admin_token_is_configured(void **state)
{
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "POST /v1/admin/sweep with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body");
    expect_contains(r.body, "TIDE_ADMIN_TOKEN", "the 403 detail says what to set");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/rotate", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "POST /v1/admin/rotate with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body of rotate");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/can_delete", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "GET /v1/admin/can_delete with no TIDE_ADMIN_TOKEN configured");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "GET /v1/admin/heap with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body of heap");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void a_put_with_sync_survives_kill_9_and_is_served_after_restart(void **state)
{
    uint8_t value[777];
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    th_value(10, sizeof value, value);
    tided_start(&t, NULL, NULL);
    r = http(&t, "PUT", obj_path(10, "?sync=1"), value, sizeof value, 0, NULL);
    expect_status(r, 201, "PUT ?sync=1");
    expect_contains(r.body, "\"durable\":true", "the 201 body of a synced PUT");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGKILL);
    tided_start(&t, NULL, NULL);
    r = http(&t, "GET", obj_path(10, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after kill -9 and restart of a PUT answered with ?sync=1");
    expect_u64(r.len, sizeof value, "bytes after the restart");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("the value came back different after kill -9");
    resp_free(&r);
    /* A second synced PUT of the same key: 409, and durable. */
    r = http(&t, "PUT", obj_path(10, "?sync=1"), value, sizeof value, 0, NULL);
    expect_status(r, 409, "PUT ?sync=1 of a key already stored");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* Issue 15: the CLI reads a running node's store through the tide.live
 * page tided's store publishes: tide get returns what a synced PUT stored
 * (and not-found for a key never PUT), tide info names the running
 * writer, tide visit walks it, tide verify --live finds it sound, and the
 * full verify refuses it saying to use --live. */
static void the_cli_reads_a_running_nodes_store(void **state)
{
    enum { N = 20 };
    uint8_t value[777];
    char cmd[2400], k[65], vpath[700], want[64], *out = NULL;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        th_value(100 + i, sizeof value, value);
        r = http(&t, "PUT", obj_path(100 + i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT ?sync=1");
        resp_free(&r);
    }
    snprintf(vpath, sizeof vpath, "%s/value.bin", t.dir);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t *got = NULL;
        size_t len = 0;
        key_hex(100 + i, k);
        snprintf(cmd, sizeof cmd, "get '%s' %s > '%s'", t.data, k, vpath);
        int rc = th_run_tide(cmd, 0, &out);
        free(out);
        out = NULL;
        if (rc != 0) fail_msg("tide get of a synced PUT's key on the running node's store: exit %d", rc);
        if (th_read_file(vpath, &got, &len) != 0) fail_msg("cannot read %s", vpath);
        th_value(100 + i, sizeof value, value);
        if (len != sizeof value || memcmp(got, value, len) != 0)
            fail_msg("tide get returned %zu bytes, not the %zu the PUT stored", len, sizeof value);
        free(got);
    }
    key_hex(5000, k);
    snprintf(cmd, sizeof cmd, "get '%s' %s", t.data, k);
    expect_i64(th_run_tide(cmd, 1, &out), 1, "tide get of a key never PUT");
    expect_contains(out, "not found", "tide get of a key never PUT");
    free(out);
    snprintf(cmd, sizeof cmd, "info '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide info on a running node's store");
    snprintf(want, sizeof want, "writer        pid %d, running", (int)t.pid);
    expect_contains(out, want, "tide info names the running writer");
    free(out);
    snprintf(cmd, sizeof cmd, "visit '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide visit on a running node's store");
    expect_contains(out, "data records    20 ", "tide visit counts the PUTs");
    free(out);
    snprintf(cmd, sizeof cmd, "verify --live '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 0, "tide verify --live on a running node's store");
    expect_contains(out, "sound while it runs", "tide verify --live's verdict");
    expect_contains(out, "data records     20", "tide verify --live walked the PUTs");
    free(out);
    snprintf(cmd, sizeof cmd, "verify '%s'", t.data);
    expect_i64(th_run_tide(cmd, 1, &out), 1, "tide verify (full) on a running node's store");
    expect_contains(out, "tide verify --live", "the full verify says to use --live");
    free(out);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A stop signal (SIGTERM, SIGINT, SIGQUIT) commits every PUT answered 201
 * before it, exits 0 and logs "shutdown complete"; a restart serves them. */
static void stop_signal_commits_every_acknowledged_put(int sig)
{
    enum { N = 300 };
    tided t;
    resp r;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t v[64];
        th_value(100 + i, sizeof v, v);
        r = http(&t, "PUT", obj_path(100 + i, NULL), v, sizeof v, 0, NULL);
        expect_status(r, 201, "one of many PUTs without sync");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, sig);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after signal %d, got status 0x%x. Its log:\n%s", sig, t.status,
                 log_tail(&t));
    if (!log_contains(&t, "shutdown complete"))
        fail_msg("tided's log should end with 'shutdown complete'. Its log:\n%s", log_tail(&t));
    tided_start(&t, NULL, NULL);
    for (uint64_t i = 0; i < N; i++) {
        uint8_t v[64];
        th_value(100 + i, sizeof v, v);
        r = http(&t, "GET", obj_path(100 + i, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "GET after the stop signal and a restart of a PUT answered 201");
        if (r.len != sizeof v || memcmp(r.body, v, sizeof v) != 0)
            fail_msg("value %" PRIu64 " came back different after the restart", i);
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void sigterm_commits_every_acknowledged_put_and_exits_0(void **state)
{
    (void)state;
    stop_signal_commits_every_acknowledged_put(SIGTERM);
}

static void a_bad_flag_or_value_exits_2_naming_it(void **state)
{
    static const char *unknown[] = { "--no-such-flag=1", NULL };
    static const char *range[] = { "--sweep-interval=5", NULL };
    static const char *listen[] = { "--listen=nowhere", NULL };
    tided t;
    int rc;
    (void)state;

    memset(&t, 0, sizeof t);
    rc = tided_run_to_exit(&t, unknown, NULL);
    expect_u64(rc, 2, "exit status of tided --no-such-flag=1");
    if (!log_contains(&t, "--no-such-flag")) fail_msg("the message should name --no-such-flag, got:\n%s",
                                                      log_tail(&t));
    rc = tided_run_to_exit(&t, range, NULL);
    expect_u64(rc, 2, "exit status of tided --sweep-interval=5");
    if (!log_contains(&t, "--sweep-interval")) fail_msg("the message should name --sweep-interval, got:\n%s",
                                                        log_tail(&t));
    rc = tided_run_to_exit(&t, listen, NULL);
    expect_u64(rc, 2, "exit status of tided --listen=nowhere");
    if (!log_contains(&t, "--listen")) fail_msg("the message should name --listen, got:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void help_reads_like_a_man_page_and_version_names_tided(void **state)
{
    static const char *help[] = { "--help", NULL };
    static const char *version[] = { "--version", NULL };
    static const char *const sections[] = { "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT",
                                            "ENDPOINTS", "SIGNALS", "EXIT STATUS", "EXAMPLES",
                                            "--data-dir", "--sweep-interval", "TIDE_ADMIN_TOKEN" };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    expect_u64(tided_run_to_exit(&t, help, NULL), 0, "exit status of tided --help");
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!log_contains(&t, sections[i])) fail_msg("tided --help should contain '%s'", sections[i]);
    expect_u64(tided_run_to_exit(&t, version, NULL), 0, "exit status of tided --version");
    if (!log_contains(&t, "tided ")) fail_msg("tided --version should print 'tided VERSION'");
    tided_cleanup(&t);
}

static void a_second_tided_on_the_same_data_dir_exits_1_saying_busy(void **state)
{
    tided first, second;
    char listen_arg[64];
    const char *flags[5];
    int rc;
    (void)state;

    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    tided_start(&first, NULL, NULL);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    flags[0] = "--data-dir";
    flags[1] = first.data;
    flags[2] = listen_arg;
    flags[3] = NULL;
    rc = tided_run_to_exit(&second, flags, NULL);
    expect_u64(rc, 1, "exit status of a second tided on a data dir in use");
    if (!log_contains(&second, "busy"))
        fail_msg("the second tided should say the store is busy, got:\n%s", log_tail(&second));
    {
        char holder[64];
        snprintf(holder, sizeof holder, "process %d (tided)", (int)first.pid);
        if (!log_contains(&second, holder))
            fail_msg("the second tided should name the holder ('%s'), got:\n%s", holder, log_tail(&second));
    }
    tided_signal_and_reap(&first, SIGTERM);
    expect_u64(WIFEXITED(first.status) ? WEXITSTATUS(first.status) : 99, 0,
               "exit status of the first tided after SIGTERM");
    tided_cleanup(&first);
    tided_cleanup(&second);
}

/* A store tided cannot open: the error names the file and what is wrong
 * with it (the open runs on a thread of its own, whose message once got
 * lost: "file is corrupt: " with nothing after). */
static void a_store_tided_cannot_open_is_named_with_its_reason(void **state)
{
    tided t;
    char key[700], listen_arg[64];
    const char *flags[] = { NULL, NULL, listen_arg, NULL };
    int rc;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    tided_signal_and_reap(&t, SIGTERM);
    th_path(key, sizeof key, t.data, "nudb.key");
    assert_int_equal(th_write_file(key, "this is not a key file", 22), 0);
    flags[0] = "--data-dir";
    flags[1] = t.data;
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    rc = tided_run_to_exit(&t, flags, NULL);
    expect_u64((uint64_t)rc, 1, "exit status of tided on a damaged key file");
    if (!log_contains(&t, "nudb.key: 22 bytes is shorter than the 104-byte header"))
        fail_msg("tided should name the damaged file and why, got:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void a_full_disk_is_507(void **state)
{
    char script[2048], bin[600], dir[512];
    tided t;
    int got = 0;
    uint8_t *v = malloc(1000000);
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    if (access("/usr/bin/unshare", X_OK) != 0 && access("/bin/unshare", X_OK) != 0)
        fail_msg("this test needs unshare(1) (util-linux) to mount a 4 MiB tmpfs in a private mount "
                 "namespace; it is not installed");
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    th_path(dir, sizeof dir, t.dir, "small");
    assert_int_equal(mkdir(dir, 0755), 0);
    t.port = free_port(AF_INET);
    snprintf(script, sizeof script,
             "mount -t tmpfs -o size=4m tmpfs '%s' || { echo 'cannot mount a tmpfs in the namespace'; exit 97; }; "
             "exec '%s' --data-dir '%s/db' --listen 127.0.0.1:%d --http-threads=2", dir, bin, dir, t.port);
    {
        const char *argv[] = { "unshare", "-Urm", "sh", "-c", script, NULL };
        spawn(&t, (char *const *)argv, NULL);
    }
    if (wait_healthy(&t) != 0) {
        if (!wait_exit(&t, 0)) { kill(t.pid, SIGKILL); wait_exit(&t, STOP_MS); }
        fail_msg("tided in 'unshare -Urm' with a 4 MiB tmpfs should start; unshare or mount is unavailable "
                 "here (user namespaces off?). Its output:\n%s", log_tail(&t));
    }
    for (uint64_t i = 0; i < 20 && got != 507; i++) {
        resp r;
        th_value(5000 + i, 1000000, v);
        /* max_object_size is 1 MiB by default: 1,000,000 bytes fit. */
        r = http(&t, "PUT", obj_path(5000 + i, "?sync=1"), v, 1000000, 0, NULL);
        got = (int)r.status;
        if (got != 201 && got != 507)
            fail_msg("PUT ?sync=1 %" PRIu64 " on a 4 MiB disk: expected 201 or 507, got %d: %s", i, got, r.body);
        if (got == 507) expect_error_json(&r, "no_space", "the 507 body");
        resp_free(&r);
    }
    free(v);
    if (got != 507) fail_msg("20 MB of synced PUTs on a 4 MiB tmpfs should meet 507; the last answer was %d", got);
    {
        resp r = http(&t, "GET", "/healthz", NULL, 0, 0, NULL);
        expect_status(r, 200, "GET /healthz after 507");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGKILL);
    tided_cleanup(&t);
}

static int run_quiet(const char *cmd)
{
    char *out = NULL;
    int rc = th_run(cmd, &out);
    free(out);
    return rc;
}

static int tmpfs_mount(const char *dir, unsigned mib, int remount)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o %ssize=%um tmpfs '%s' 2>&1", remount ? "remount," : "", mib, dir);
    return run_quiet(cmd);
}

/* The full-disk test's node and tmpfs, which its teardown stops and
 * unmounts whatever the outcome. */
static tided full_srv;
static char full_mnt[600];

static int full_disk_teardown(void **state)
{
    (void)state;
    if (full_srv.pid > 0 && !full_srv.reaped) { kill(full_srv.pid, SIGKILL); wait_exit(&full_srv, STOP_MS); }
    if (full_mnt[0]) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "umount '%s' 2>&1", full_mnt);
        run_quiet(cmd);
        full_mnt[0] = '\0';
    }
    tided_cleanup(&full_srv);
    return 0;
}

/* A tmpfs of `mib` MiB at `dir` (mounted, or its size changed with
 * remount); 0 when done. Needs root (CI runs as root). */
/* The disk is filled with synced PUTs (default index lag: the newest
 * records are acknowledged and not yet indexed) and the node is stopped.
 * It must start again on the full disk and serve every acknowledged
 * object, answer PUTs 507, and take them again once space returns; a new
 * data directory on the full disk fails to start naming the file it could
 * not write, and leaves no directory behind. Before, the restart failed
 * while indexing the tail, and nothing was served. */
static void a_node_restarts_on_a_full_disk_serves_reads_and_takes_writes_when_space_returns(void **state)
{
    enum { VALUE = 100000, MOST = 400 };
    static uint8_t v[VALUE];
    char *mnt = full_mnt, fresh[600], filler[700];
    tided *tp = &full_srv;
    uint64_t acked = 0;
    int status = 0;
    (void)state;

    if (geteuid() != 0) th_skip("mounting a small tmpfs needs root");
    memset(tp, 0, sizeof *tp);
    tided_prepare(tp);
    th_path(mnt, sizeof full_mnt, tp->dir, "mnt");
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (tmpfs_mount(mnt, 8, 0) != 0) {
        mnt[0] = '\0';
        th_skip("mount -t tmpfs failed here");
    }
    th_path(tp->data, sizeof tp->data, mnt, "db");
    tided_start(tp, NULL, NULL);
    for (uint64_t i = 0; i < MOST && status != 507; i++) {
        resp r;
        th_value(7000 + i, VALUE, v);
        r = http(tp, "PUT", obj_path(7000 + i, "?sync=1"), v, VALUE, 0, NULL);
        status = (int)r.status;
        if (status == 201) acked = i + 1;
        else if (status != 507) fail_msg("PUT ?sync=1 #%" PRIu64 " on an 8 MiB disk: expected 201 or 507, got %d: %s",
                                         i, status, r.body);
        resp_free(&r);
    }
    if (status != 507 || acked < 10) fail_msg("40 MB of PUTs on an 8 MiB disk: expected 507 after some 201s, got %d "
                                             "after %" PRIu64 " acknowledged", status, acked);
    /* Not a byte left, even for a one-byte value or a key-file split. */
    th_path(filler, sizeof filler, mnt, "filler");
    {
        char cmd[900];
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s' bs=4k 2>/dev/null; true", filler);
        run_quiet(cmd);
    }
    tided_signal_and_reap(tp, SIGTERM);

    tided_start(tp, NULL, NULL);
    for (uint64_t i = 0; i < acked; i++) {
        resp r = http(tp, "GET", obj_path(7000 + i, NULL), NULL, 0, 0, NULL);
        th_value(7000 + i, VALUE, v);
        if (r.status != 200 || r.len != VALUE || memcmp(r.body, v, VALUE) != 0)
            fail_msg("GET of acknowledged object #%" PRIu64 " after a restart on the full disk: status %ld, %zu bytes",
                     i, r.status, r.len);
        resp_free(&r);
    }
    {
        resp r = http(tp, "PUT", obj_path(9999, "?sync=1"), "x", 1, 0, NULL);
        expect_status(r, 507, "a PUT while the disk is still full");
        expect_error_json(&r, "no_space", "the 507 body");
        resp_free(&r);
    }
    assert_int_equal(tmpfs_mount(mnt, 64, 1), 0);
    status = 0;
    for (int tries = 0; tries < 300 && status != 201; tries++) {   /* retried every second */
        resp r = http(tp, "PUT", obj_path(9999, "?sync=1"), "x", 1, 0, NULL);
        status = (int)r.status;
        if (status != 201 && status != 507) fail_msg("a PUT once space returned: got %d: %s", status, r.body);
        resp_free(&r);
        if (status != 201) poll(NULL, 0, 200);
    }
    expect_u64((uint64_t)status, 201, "a PUT once space has returned");
    tided_signal_and_reap(tp, SIGTERM);
    expect_u64(WIFEXITED(tp->status) ? WEXITSTATUS(tp->status) : 99, 0, "exit status after space returned");

    /* A new directory on a full disk: an error naming the file; nothing left. */
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(tmpfs_mount(mnt, 8, 1), 0);
    /* A store as NuDB leaves it (no tide.live, no tide.meta) holding one
     * object, then a full disk: the node starts, answers reads and refuses
     * writes. Its shared page was once mapped over a hole, and the first
     * store into it killed the process with SIGBUS. */
    th_path(fresh, sizeof fresh, mnt, "plain");
    {
        char args[2000], *out = NULL, one[700], live[700];
        snprintf(args, sizeof args, "create '%s'", fresh);
        if (th_run_tide(args, 1, &out) != 0) fail_msg("tide %s failed: %s", args, out ? out : "");
        free(out);
        out = NULL;
        th_path(one, sizeof one, tp->dir, "one-byte");
        assert_int_equal(th_write_file(one, "x", 1), 0);
        snprintf(args, sizeof args, "put '%s' %s < '%s'", fresh, obj_path(2, NULL) + strlen("/v1/objects/"), one);
        if (th_run_tide(args, 1, &out) != 0) fail_msg("tide %s failed: %s", args, out ? out : "");
        free(out);
        th_path(live, sizeof live, fresh, "tide.live");
        unlink(live);
    }
    {
        char cmd[900];
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s' bs=4k 2>/dev/null; true", filler);
        run_quiet(cmd);
    }
    snprintf(tp->data, sizeof tp->data, "%s", fresh);
    tided_start(tp, NULL, NULL);
    {
        resp r = http(tp, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "a GET of the NuDB-made store's object on the full disk");
        expect_str(r.body, "x", "its value");
        resp_free(&r);
        r = http(tp, "PUT", obj_path(1, "?sync=1"), "x", 1, 0, NULL);
        expect_status(r, 507, "a PUT on the full disk");
        resp_free(&r);
    }
    tided_signal_and_reap(tp, SIGTERM);
    expect_u64(WIFEXITED(tp->status) ? WEXITSTATUS(tp->status) : 99, 0,
               "exit status of a node that wrote nothing on a full disk");
    th_path(fresh, sizeof fresh, mnt, "fresh");
    {
        char listen_arg[64];
        const char *flags[] = { "--data-dir", fresh, listen_arg, NULL };
        int rc;
        snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
        rc = tided_run_to_exit(tp, flags, NULL);
        expect_u64((uint64_t)rc, 1, "exit status of a first start on a full disk");
        if (!log_contains(tp, "No space left on device") || !log_contains(tp, "/fresh/nudb."))
            fail_msg("the failed start should name the file it could not write, got:\n%s", log_tail(tp));
        if (th_exists(fresh)) fail_msg("a failed first start left %s behind", fresh);
    }
}

static void tided_serves_ipv6_loopback(void **state)
{
    tided t;
    resp r;
    (void)state;

    if (free_port(AF_INET6) < 0) th_skip("this machine has no IPv6 loopback (::1)");
    memset(&t, 0, sizeof t);
    snprintf(t.host, sizeof t.host, "[::1]");
    tided_start(&t, NULL, NULL);
    r = http(&t, "PUT", obj_path(20, NULL), "six", 3, 0, NULL);
    expect_status(r, 201, "PUT over [::1]");
    resp_free(&r);
    r = http(&t, "GET", obj_path(20, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET over [::1]");
    expect_str(r.body, "six", "the value over IPv6");
    resp_free(&r);
    if (!log_contains(&t, "listening on [::1]:")) fail_msg("the log should say 'listening on [::1]:PORT':\n%s",
                                                           log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- request parsing: key sizes, bytes that are not UTF-8, the query ------- */
/*
 * One block (tided's api.c: routing, keys, queries, error JSON). The tests
 * with their own server keep it in `own_srv`, which the group's teardown
 * (own_srv_teardown) stops whatever the outcome, so a failed assertion
 * never leaves a tided behind.
 */

static tided own_srv;

static int own_srv_teardown(void **state)
{
    tided_cleanup(&own_srv);
    return th_teardown(state);
}

/* `n` bytes of key(i) in lower-case hex, malloc'd. */
static char *key_hex_n(uint64_t i, unsigned n)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t *k = malloc(n);
    char *hex = malloc(2 * (size_t)n + 1);

    assert_non_null(k);
    assert_non_null(hex);
    th_key(i, n, k);
    for (unsigned b = 0; b < n; b++) {
        hex[2 * b] = digits[k[b] >> 4];
        hex[2 * b + 1] = digits[k[b] & 15];
    }
    hex[2 * (size_t)n] = '\0';
    free(k);
    return hex;
}

/* "/v1/objects/" + the first `digits` characters of `hex` padded with
 * 'a' to `digits`, + `query`; malloc'd. */
static char *key_path(const char *hex, size_t digits, const char *query)
{
    size_t have = strlen(hex), q = query ? strlen(query) : 0;
    char *p = malloc(12 + digits + q + 1);

    assert_non_null(p);
    memcpy(p, "/v1/objects/", 12);
    for (size_t i = 0; i < digits; i++) p[12 + i] = i < have ? hex[i] : 'a';
    memcpy(p + 12 + digits, query ? query : "", q);
    p[12 + digits + q] = '\0';
    return p;
}

/* One store of `key_size`-byte keys made by `tide create`, served by tided. */
static void one_key_size_is_served(unsigned key_size)
{
    char cmd[1400], what[160], *out = NULL, *hex = key_hex_n(7, key_size), *hex2 = key_hex_n(8, key_size);
    size_t digits = 2 * (size_t)key_size;
    uint8_t value[1500];
    char *path;
    resp r;

    memset(&own_srv, 0, sizeof own_srv);
    tided_prepare(&own_srv);
    snprintf(cmd, sizeof cmd, "create '%s' --key-size %u", own_srv.data, key_size);
    if (th_run_tide(cmd, 1, &out) != 0)
        fail_msg("tide create --key-size %u should exit 0; it said: %s", key_size, out);
    free(out);
    tided_start(&own_srv, NULL, NULL);
    th_value(key_size, sizeof value, value);

    path = key_path(hex, digits, NULL);
    r = http(&own_srv, "PUT", path, value, sizeof value, 0, NULL);
    snprintf(what, sizeof what, "PUT of a %u-byte key (%zu hex digits)", key_size, digits);
    expect_status(r, 201, what);
    expect_contains(r.body, hex, what);   /* the 201 body names the whole key */
    resp_free(&r);
    r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "GET of a %u-byte key", key_size);
    expect_status(r, 200, what);
    expect_u64(r.len, sizeof value, "bytes of the GET body");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("%s: the body differs from the value PUT", what);
    resp_free(&r);
    r = http(&own_srv, "HEAD", path, NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "HEAD of a %u-byte key", key_size);
    expect_status(r, 200, what);
    expect_contains(r.headers, "Content-Length: 1500", what);
    resp_free(&r);
    r = http(&own_srv, "PUT", path, value, 1, 0, NULL);
    snprintf(what, sizeof what, "a second PUT of a %u-byte key", key_size);
    expect_status(r, 409, what);
    expect_contains(r.body, hex, what);   /* so does the 409 detail */
    resp_free(&r);
    free(path);

    /* ?sync=1 hands the key to the sync worker and back. */
    path = key_path(hex2, digits, "?sync=1");
    r = http(&own_srv, "PUT", path, value, 10, 0, NULL);
    snprintf(what, sizeof what, "PUT ?sync=1 of a %u-byte key", key_size);
    expect_status(r, 201, what);
    expect_contains(r.body, "\"durable\":true", what);
    expect_contains(r.body, hex2, what);
    resp_free(&r);
    free(path);

    /* One digit short, one long, and a whole byte (two digits) long. */
    static const char *const methods[] = { "GET", "PUT", "HEAD" };
    for (int d = 0; d < 3; d++) {
        size_t len = d == 0 ? digits - 1 : d == 1 ? digits + 1 : digits + 2;
        if (len == 0) continue;
        path = key_path(hex, len, NULL);
        for (int m = 0; m < 3; m++) {
            r = http(&own_srv, methods[m], path, m == 1 ? "v" : NULL, m == 1 ? 1 : 0, 0, NULL);
            snprintf(what, sizeof what, "%s of a %zu-digit key on a store of %u-byte keys", methods[m], len,
                     key_size);
            expect_status(r, 400, what);
            if (m != 2) expect_error_json(&r, "bad_key", what);
            resp_free(&r);
        }
        free(path);
    }
    /* The request target limit grows with the key: a whole key and 256
     * bytes of query fit; one byte over the limit is 414. */
    {
        size_t limit = 12 + digits + 256 > 1024 ? 12 + digits + 256 : 1024;
        char *q = malloc(limit + 2);
        assert_non_null(q);
        memset(q, 'x', limit + 1);
        q[0] = '?';
        q[limit + 1 - 12 - digits] = '\0';           /* the target is limit + 1 bytes */
        path = key_path(hex, digits, q);
        r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
        snprintf(what, sizeof what, "GET of a %zu-byte target on a store of %u-byte keys", strlen(path), key_size);
        expect_status(r, 414, what);
        snprintf(q, limit + 2, "the most is %zu", limit);
        expect_contains(r.body, q, what);
        resp_free(&r);
        free(path);
        free(q);
    }
    r = http(&own_srv, "GET", "/healthz", NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "GET /healthz after the bad keys (%u-byte store)", key_size);
    expect_status(r, 200, what);
    resp_free(&r);
    /* The value is still there, and nothing else was stored. */
    path = key_path(hex, digits, NULL);
    r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the key after the refused requests");
    expect_u64(r.len, sizeof value, "bytes after the refused requests");
    resp_free(&r);
    free(path);
    tided_signal_and_reap(&own_srv, SIGTERM);
    if (!WIFEXITED(own_srv.status) || WEXITSTATUS(own_srv.status) != 0)
        fail_msg("tided on a store of %u-byte keys should exit 0 on SIGTERM; log:\n%s", key_size,
                 log_tail(&own_srv));
    tided_cleanup(&own_srv);
    free(hex);
    free(hex2);
}

static void every_key_size_from_1_to_1000_bytes_is_served_by_put_get_and_head(void **state)
{
    static const unsigned sizes[] = { 1, 32, 255, 256, 257, 300, 506, 1000 };
    (void)state;

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) one_key_size_is_served(sizes[i]);
}

/* ---- the same, on the shared server ------------------------------------ */

/* One raw request `head` (the request line and headers, ending in CRLF,
 * without the blank line; "Connection: close" is added) with `body`.
 * Returns the status and puts the parsed JSON body in *j (NULL when the
 * body is not JSON: jansson refuses text that is not UTF-8, so a parse is
 * also a check of that). */
static int raw_json(const tided *t, const char *head, size_t head_len, const char *body, json_t **j, char *answer,
                    size_t cap)
{
    char req[4096];
    size_t n = 0, blen = body ? strlen(body) : 0;
    int status = 0;
    const char *b;
    json_error_t e;

    assert_true(head_len + blen + 64 < sizeof req);
    memcpy(req, head, head_len);
    n = head_len;
    n += (size_t)snprintf(req + n, sizeof req - n, "Host: t\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                          blen);
    memcpy(req + n, body ? body : "", blen);
    n += blen;
    raw_exchange(t, req, n, answer, cap);
    if (sscanf(answer, "HTTP/1.%*d %d", &status) != 1) status = -1;
    b = strstr(answer, "\r\n\r\n");
    *j = b ? json_loads(b + 4, 0, &e) : NULL;
    return status;
}

/* The request `head` gets `want` and {"error":code,"detail":...} whose
 * detail contains `part` (NULL: anything). */
static void expect_raw_error(const char *head, size_t head_len, const char *body, int want, const char *code,
                             const char *part, const char *what)
{
    char answer[8192];
    json_t *j = NULL;
    int status = raw_json(&shared, head, head_len, body, &j, answer, sizeof answer);
    const char *got = json_string_value(json_object_get(j, "error"));
    const char *detail = json_string_value(json_object_get(j, "detail"));

    if (status != want || got == NULL || strcmp(got, code) != 0 || detail == NULL
        || (part && strstr(detail, part) == NULL)) {
        json_decref(j);
        fail_msg("%s: expected HTTP %d with a UTF-8 JSON body {\"error\":\"%s\",\"detail\":\"...%s...\"}, got "
                 "HTTP %d: '%.600s'", what, want, code, part ? part : "", status, answer);
    }
    json_decref(j);
}

#define RAW(s) s, sizeof s - 1

static void the_access_log_escapes_request_bytes_to_one_line_of_ascii(void **state)
{
    static const char *const flags[] = { "--log-level=debug", NULL };
    char answer[4096];
    uint8_t *all = NULL;
    size_t len = 0;
    json_t *j = NULL;
    int status;
    (void)state;

    memset(&own_srv, 0, sizeof own_srv);
    tided_start(&own_srv, flags, NULL);
    status = raw_json(&own_srv, RAW("GET /x\xff\xc3\xa9[31m\\ HTTP/1.1\r\n"), NULL, &j, answer, sizeof answer);
    if (status != 404 || j == NULL) fail_msg("GET of a path with bytes 0xff, 0xc3 0xa9 and a backslash: expected 404 JSON, got '%s'", answer);
    json_decref(j);
    tided_signal_and_reap(&own_srv, SIGTERM);
    assert_int_equal(th_read_file(own_srv.log, &all, &len), 0);
    all = realloc(all, len + 1);
    all[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if ((all[i] < 0x20 && all[i] != '\n') || all[i] >= 0x7f) {
            size_t from = i > 80 ? i - 80 : 0;
            fail_msg("tided's log holds byte 0x%02x at %zu (request bytes must be escaped): '%.*s'",
                     all[i], i, (int)(i - from), (char *)all + from);
        }
    expect_contains((char *)all, "access: GET /x\\xff\\xc3\\xa9[31m\\x5c -> 404", "the access line");
    free(all);
    tided_cleanup(&own_srv);
}


static void bytes_that_are_not_utf8_in_path_query_or_method_get_their_status_and_escaped_json(void **state)
{
    char head[512], k[65];
    int n;
    resp r;
    (void)state;

    /* The path: an unknown one is 404, a key with such a byte 400. */
    expect_raw_error(RAW("GET /v2/\xff\xfe/x HTTP/1.1\r\n"), NULL, 404, "not_found", "/v2/\\xff\\xfe/x",
                     "GET of a path holding bytes 0xff 0xfe");
    expect_raw_error(RAW("GET /caf\xc3\xa9\\ HTTP/1.1\r\n"), NULL, 404, "not_found", "/caf\\xc3\\xa9\\x5c",
                     "GET of a path in UTF-8 with a backslash (every byte outside printable ASCII is escaped)");
    key_hex(40, k);
    n = snprintf(head, sizeof head, "GET /v1/objects/%.63s\xe9 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, NULL, 400, "bad_key", "'\\xe9'", "GET of a key ending in byte 0xe9");
    n = snprintf(head, sizeof head, "PUT /v1/objects/%.62s\xc3\xa9 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_key", "character 63", "PUT of a key ending in UTF-8 'é'");

    /* The query. */
    n = snprintf(head, sizeof head, "PUT /v1/objects/%s?sync=\xff HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_query", "sync=\\xff", "PUT with ?sync=<0xff>");
    n = snprintf(head, sizeof head, "PUT /v1/objects/%s?\xc3\x28=1 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_query", "'\\xc3(", "PUT with a parameter named 0xc3 '('");
    expect_raw_error(RAW("GET /healthz?\x80 HTTP/1.1\r\n"), NULL, 400, "bad_query", "\\x80",
                     "GET /healthz with a query of byte 0x80");
    r = http(&shared, "GET", obj_path(40, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key whose PUTs were refused");
    resp_free(&r);

    /* The method: not a token is 400; a token on a known path is 405, on
     * an unknown path 404. */
    expect_raw_error(RAW("G\xc9T /healthz HTTP/1.1\r\n"), NULL, 400, "bad_method", "G\\xc9T",
                     "method G<0xc9>T on /healthz");
    n = snprintf(head, sizeof head, "\xff\xfe /v1/objects/%s HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, NULL, 400, "bad_method", "\\xff\\xfe", "method <0xff 0xfe> on an object");
    expect_raw_error(RAW("G(T /healthz HTTP/1.1\r\n"), NULL, 400, "bad_method", "G(T", "method G(T on /healthz");
    expect_raw_error(RAW("FETCH /healthz HTTP/1.1\r\n"), NULL, 405, "method_not_allowed", "FETCH",
                     "method FETCH on /healthz");
    expect_raw_error(RAW("FETCH /nothing/here HTTP/1.1\r\n"), NULL, 404, "not_found", "/nothing/here",
                     "method FETCH on an unknown path");
    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz after the requests with bytes that are not UTF-8");
    resp_free(&r);
}

static void the_query_takes_sync_once_as_0_or_1_and_anything_else_is_400_naming_it(void **state)
{
    static const struct { const char *query, *part; } bad[] = {
        { "?sync=1&sync=0", "'sync' is given twice ('sync=1' and 'sync=0')" },
        { "?sync=0&sync=1", "given twice" },
        { "?sync=1&sync=1", "given twice" },
        { "?sync=", "not 'sync='" },
        { "?sync", "not 'sync'" },
        { "?sync=2", "'sync=2'" },
        { "?sync=11", "'sync=11'" },
        { "?sync=%31", "'sync=%31'" },            /* matched byte for byte: no percent-decoding */
        { "?%73ync=1", "unknown query parameter '%73ync'" },
        { "?SYNC=1", "unknown query parameter 'SYNC'" },
        { "?sync=1&x=1", "unknown query parameter 'x'" },
        { "?sync=1;x=1", "'sync=1;x=1'" },
        { "?=1", "unknown query parameter ''" },
    };
    char what[160];
    resp r;
    (void)state;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = http(&shared, "PUT", obj_path(41, bad[i].query), "v", 1, 0, NULL);
        snprintf(what, sizeof what, "PUT %s", bad[i].query);
        expect_status(r, 400, what);
        expect_error_json(&r, "bad_query", what);
        expect_contains(r.body, bad[i].part, what);
        resp_free(&r);
    }
    r = http(&shared, "GET", obj_path(41, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key every refused PUT named");
    resp_free(&r);

    /* Empty pieces are skipped: '?' alone, "&&", a trailing '&'. */
    r = http(&shared, "PUT", obj_path(41, "?"), "v", 1, 0, NULL);
    expect_status(r, 201, "PUT with '?' alone");
    expect_contains(r.body, "\"durable\":false", "PUT with '?' alone is not synced");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(42, "?&&sync=1&"), "v", 1, 0, NULL);
    expect_status(r, 201, "PUT ?&&sync=1&");
    expect_contains(r.body, "\"durable\":true", "PUT ?&&sync=1& is synced");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(42, "?sync=1"), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET ?sync=1 (accepted on every method of an object; a read ignores it)");
    resp_free(&r);

    /* The other endpoints take no parameter. */
    static const char *const none[] = { "/healthz?x=1", "/v1/status?sync=1", "/v1/sweeps?&a", "/metrics?q" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        r = http(&shared, "GET", none[i], NULL, 0, 0, NULL);
        snprintf(what, sizeof what, "GET %s", none[i]);
        expect_status(r, 400, what);
        expect_error_json(&r, "bad_query", what);
        expect_contains(r.body, "this endpoint takes none", what);
        resp_free(&r);
    }
    r = http(&shared, "POST", "/v1/admin/sweep?now=1", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 400, "POST /v1/admin/sweep?now=1");
    resp_free(&r);
    r = http(&shared, "GET", "/healthz?", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz? (an empty query)");
    resp_free(&r);
}

/* ---- end of the request parsing block ---------------------------------- */

/* ---- /metrics, tide doctor, and a real Prometheus ------------------------------ */

#define METRICS_TOKEN "m3trics-t0ken-91ab"

static char *scrape_with(tided *t, const char *header, long want)
{
    resp r = http(t, "GET", "/metrics", NULL, 0, 0, header);
    if (r.status != want)
        fail_msg("GET /metrics with %s: expected HTTP %ld, got %ld; body: %s", header ? header : "no token", want,
                 r.status, r.body);
    return r.body;
}

/* Churn totals (issue 13): between two scrapes, tided accepted at least two
 * connections (the PUT's, the second scrape's) and buffered one body; each
 * is an allocation of the "http" consumer, and the body's bytes are in the
 * allocated bytes. A server of its own, scraped without a token. */
static void http_allocation_totals_grow_by_the_connections_and_bodies_it_took(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { pub, NULL };
    char body[4000];
    char *page;
    double a0, b0, a1, b1;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    page = scrape_with(&t, NULL, 200);
    a0 = th_prom_value(page, "tide_memory_allocations_total{consumer=\"http\"}");
    b0 = th_prom_value(page, "tide_memory_allocated_bytes_total{consumer=\"http\"}");
    free(page);
    if (isnan(a0) || isnan(b0)) fail_msg("the http churn series are missing from /metrics");
    memset(body, 'b', sizeof body);
    r = http(&t, "PUT", obj_path(0x13c0, NULL), body, sizeof body, 0, NULL);
    expect_status(r, 201, "PUT of a 4000-byte body");
    resp_free(&r);
    page = scrape_with(&t, NULL, 200);
    a1 = th_prom_value(page, "tide_memory_allocations_total{consumer=\"http\"}");
    b1 = th_prom_value(page, "tide_memory_allocated_bytes_total{consumer=\"http\"}");
    free(page);
    if (a1 - a0 < 3)
        fail_msg("http allocations grew by %.0f over a PUT and a scrape, expected at least 3 (two "
                 "connections and a body)", a1 - a0);
    if (b1 - b0 < (double)sizeof body)
        fail_msg("http allocated bytes grew by %.0f, below the %zu-byte body buffered", b1 - b0, sizeof body);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void metrics_answers_only_the_token_in_either_header_form(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env[] = { tok, NULL };
    tided t;
    char *b;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    b = scrape_with(&t, NULL, 401);
    expect_contains(b, "\"error\":\"unauthorized\"", "401 body without a token");
    free(b);
    resp r = http(&t, "GET", "/metrics", NULL, 0, 0, NULL);
    expect_contains(r.headers, "www-authenticate: Bearer", "the 401 challenge");
    resp_free(&r);
    free(scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN "x", 401));
    free(scrape_with(&t, "Authorization: Bearer " "m3trics-t0ken-91a", 401));
    free(scrape_with(&t, "Authorization: Bearer", 401));
    free(scrape_with(&t, "Authorization: Bearer ", 401));
    free(scrape_with(&t, "X-Metrics-Token: wrong", 401));
    free(scrape_with(&t, "X-Metrics-Token:", 401));
    free(scrape_with(&t, "Authorization: Basic " METRICS_TOKEN, 401));
    b = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    expect_contains(b, "# TYPE tide_memory_consumer_bytes gauge", "a page by Bearer");
    free(b);
    b = scrape_with(&t, "X-Metrics-Token: " METRICS_TOKEN, 200);
    expect_contains(b, "# TYPE process_resident_memory_bytes gauge", "a page by X-Metrics-Token");
    free(b);
    r = http(&t, "GET", "/metrics", NULL, 0, 0, "Authorization: Bearer " METRICS_TOKEN);
    expect_contains(r.headers, "content-type: text/plain; version=0.0.4; charset=utf-8", "the content type");
    resp_free(&r);
    r = http(&t, "POST", "/metrics", NULL, 0, 0, "Authorization: Bearer " METRICS_TOKEN);
    expect_status(r, 405, "POST /metrics");
    resp_free(&r);
    if (log_contains(&t, METRICS_TOKEN)) fail_msg("tided's log contains the metrics token");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void without_a_token_metrics_is_always_401_unless_public(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env_pub[] = { pub, NULL }, *env_both[] = { pub, tok, NULL };
    tided t;
    char *b;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    b = scrape_with(&t, NULL, 401);
    expect_contains(b, "TIDE_METRICS_TOKEN", "the 401 says what to set");
    free(b);
    free(scrape_with(&t, "Authorization: Bearer ", 401));
    free(scrape_with(&t, "Authorization: Bearer anything", 401));
    free(scrape_with(&t, "X-Metrics-Token: ", 401));
    if (!log_contains(&t, "/metrics answers 401 to every scrape"))
        fail_msg("the startup log should say how to enable scraping:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env_pub);
    free(scrape_with(&t, NULL, 200));
    free(scrape_with(&t, "Authorization: Bearer whatever", 200));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env_both);
    free(scrape_with(&t, NULL, 200));
    if (!log_contains(&t, "TIDE_METRICS_PUBLIC=1")) fail_msg("public with a token set should warn:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- request metrics (issue 14) ------------------------------------------ */

/* The value of `series` on `page`, 0 when absent (a counter not yet seen). */
static double prom_or_0(const char *page, const char *series)
{
    double v = th_prom_value(page, series);
    return isnan(v) ? 0 : v;
}

/* The known requests of the request-metrics test, and what each must add. */
typedef struct req_case {
    const char *method, *path, *header;
    int         body;            /* send REQ_BODY bytes */
    int         chunked_big;     /* send MAX_OBJECT + 1 bytes chunked */
    long        want;
} req_case;

#define REQ_BODY 100

/* Route `route`'s histogram on `page`: 16 cumulative buckets and +Inf,
 * which is _count, and a positive _sum once it counted `at_least`. */
static void expect_route_histogram(const char *page, const char *route, double at_least)
{
    char prefix[160], series[200];
    double prev = 0, count;
    int buckets = 0;

    snprintf(series, sizeof series, "tide_http_request_duration_seconds_count{route=\"%s\"}", route);
    count = th_prom_value(page, series);
    snprintf(prefix, sizeof prefix, "tide_http_request_duration_seconds_bucket{route=\"%s\",le=\"", route);
    for (const char *p = strstr(page, prefix); p; p = strstr(p + 1, prefix)) {
        double v = strtod(strchr(p, ' ') + 1, NULL);
        if (v < prev) fail_msg("the %s histogram's buckets are not cumulative at %.100s", route, p);
        prev = v;
        buckets++;
    }
    if (buckets != 17) fail_msg("the %s histogram has %d buckets, expected 16 and +Inf", route, buckets);
    snprintf(series, sizeof series, "%s+Inf\"}", prefix);
    if (th_prom_value(page, series) != count) fail_msg("the %s histogram's +Inf bucket is not _count (%.0f)", route, count);
    if (count < at_least) fail_msg("the %s histogram counted %.0f, expected at least %.0f", route, count, at_least);
    snprintf(series, sizeof series, "tide_http_request_duration_seconds_sum{route=\"%s\"}", route);
    if (!(th_prom_value(page, series) > 0)) fail_msg("the %s route's _sum should be above 0", route);
}

/* Every answered request is counted once by {method,code}, the histogram
 * counts the handled ones by route with cumulative buckets, and the body
 * bytes in and out are exactly those the client sent and received. A
 * baseline scrape first, then known requests, then scrapes until the page
 * has counted them (a count is made when h2o disposes the request, just
 * after its last byte was written, so the next request may be answered by
 * the other loop first): every further scrape is one more GET 200 metrics. */
static void request_metrics_count_every_answer_by_method_code_and_route(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static const char *flags[] = { "--max-object-size=65536", NULL };
    char *env[] = { tok, NULL };
    static const req_case cases[] = {
        { "PUT", "/v1/objects/", NULL, 1, 0, 201 },
        { "PUT", "/v1/objects/", NULL, 1, 0, 201 },            /* another key */
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/ffff", NULL, 0, 0, 400 },         /* a malformed key */
        { "GET", "/v1/objects/", NULL, 0, 0, 404 },             /* never stored */
        { "GET", "/metrics", NULL, 0, 0, 401 },                 /* no token */
        { "BREW", "/healthz", NULL, 0, 0, 405 },                /* an unknown method */
        { "GET", "/no/such/endpoint", NULL, 0, 0, 404 },
        { "PUT", "/v1/objects/", NULL, 0, 1, 413 },             /* h2o's own answer */
    };
    const char *auth = "Authorization: Bearer " METRICS_TOKEN;
    uint8_t value[REQ_BODY];
    double out_bytes = 0, end;
    char *base, *page = NULL, msg[8192];
    uint8_t *big = calloc(1, MAX_OBJECT + 1);
    int scrapes = 1, done = 0;
    tided t;
    (void)state;

    assert_non_null(big);
    memset(value, 'q', sizeof value);
    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    /* The baseline: a page that has counted every request before it (the
     * startup's HEAD /healthz probe, and each earlier baseline scrape). */
    base = NULL;
    end = th_now_ms() + 10000;
    for (int prior = 0; !done && th_now_ms() < end; prior++) {
        free(base);
        base = scrape_with(&t, auth, 200);
        done = prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"200\"}") == prior
            && prom_or_0(base, "tide_http_requests_total{method=\"HEAD\",code=\"200\"}") >= 1;
        if (!done) poll(NULL, 0, 20);
    }
    if (!done) fail_msg("no baseline page counted the startup's probe and the scrapes before it:\n%.2000s", base);
    done = 0;
    out_bytes += (double)strlen(base);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const req_case *c = &cases[i];
        char path[256];
        /* objects: keys 0x1400 and 0x1401 stored; 0x1402 never */
        uint64_t key = 0x1400 + (i == 1) + 2 * (c->want == 404);
        if (strcmp(c->path, "/v1/objects/") == 0) snprintf(path, sizeof path, "%s", obj_path(key, NULL));
        else snprintf(path, sizeof path, "%s", c->path);
        resp r = c->chunked_big ? http(&t, c->method, path, big, MAX_OBJECT + 1, 1, NULL)
                                : http(&t, c->method, path, c->body ? value : NULL, c->body ? sizeof value : 0, 0,
                                       c->header);
        char what[300];
        snprintf(what, sizeof what, "%s %s", c->method, path);
        expect_status(r, c->want, what);
        out_bytes += (double)r.len;
        resp_free(&r);
    }
    end = th_now_ms() + 10000;
    double got = 0, all = 0;
    while (!done && th_now_ms() < end) {
        free(page);
        page = scrape_with(&t, auth, 200);
        got = prom_or_0(page, "tide_http_requests_total{method=\"GET\",code=\"200\"}")
                   - prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"200\"}");
        /* the last requests made: the unknown path's 404 and h2o's 413 */
        all = prom_or_0(page, "tide_http_requests_total{method=\"GET\",code=\"404\"}")
                   - prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"404\"}");
        done = got == 3 + scrapes && all == 2
            && prom_or_0(page, "tide_http_requests_total{method=\"PUT\",code=\"413\"}") == 1;
        if (!done) { out_bytes += (double)strlen(page); scrapes++; poll(NULL, 0, 20); }
    }
    if (!done)
        fail_msg("the page never counted the %zu known requests within 10 s: GET 200 grew by %.0f (want %d: 3 "
                 "GETs, %d scrapes), GET 404 by %.0f (want 2), PUT 413 is %.0f (want 1)", sizeof cases / sizeof cases[0],
                 got, 3 + scrapes, scrapes, all, prom_or_0(page, "tide_http_requests_total{method=\"PUT\",code=\"413\"}"));
    /* {method,code}: exactly the requests made since the baseline. */
    static const struct { const char *series; double want; } counts[] = {
        { "tide_http_requests_total{method=\"PUT\",code=\"201\"}", 2 },
        { "tide_http_requests_total{method=\"GET\",code=\"400\"}", 1 },
        { "tide_http_requests_total{method=\"GET\",code=\"401\"}", 1 },
        { "tide_http_requests_total{method=\"GET\",code=\"404\"}", 2 },
        { "tide_http_requests_total{method=\"other\",code=\"405\"}", 1 },
        { "tide_http_requests_total{method=\"PUT\",code=\"413\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"object\"}", 7 },
        { "tide_http_request_duration_seconds_count{route=\"healthz\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"other\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"status\"}", 0 },
        { "tide_http_request_duration_seconds_count{route=\"admin\"}", 0 },
        { "tide_http_request_bytes_total", 2 * REQ_BODY },
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        double d = prom_or_0(page, counts[i].series) - prom_or_0(base, counts[i].series);
        if (d != counts[i].want)
            fail_msg("%s grew by %.0f over the known requests; expected %.0f. Page:\n%s", counts[i].series, d,
                     counts[i].want, page);
    }
    double m = prom_or_0(page, "tide_http_request_duration_seconds_count{route=\"metrics\"}")
             - prom_or_0(base, "tide_http_request_duration_seconds_count{route=\"metrics\"}");
    if (m != 1 + scrapes)
        fail_msg("route metrics counted %.0f; expected the 401 and %d scrapes", m, scrapes);
    double o = prom_or_0(page, "tide_http_response_bytes_total") - prom_or_0(base, "tide_http_response_bytes_total");
    if (o != out_bytes)
        fail_msg("tide_http_response_bytes_total grew by %.0f; the client received %.0f body bytes", o, out_bytes);
    /* Nothing but the listed methods and codes appeared. */
    for (const char *p = strstr(page, "\ntide_http_requests_total{"); p; p = strstr(p + 1, "\ntide_http_requests_total{")) {
        char series[200];
        size_t n = strcspn(p + 1, " ");
        snprintf(series, sizeof series, "%.*s", (int)n, p + 1);
        int known = strstr(series, "code=\"200\"") != NULL;
        for (size_t i = 0; i < 6; i++) known |= strcmp(series, counts[i].series) == 0;
        if (!known && prom_or_0(page, series) != prom_or_0(base, series))
            fail_msg("%s grew, but no request of that kind was made", series);
    }
    expect_route_histogram(page, "object", 7);
    if (th_promtool_check(page, msg, sizeof msg) != 0) fail_msg("promtool check metrics: %s", msg);
    if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("Tide's checks: %s", msg);
    free(base);
    free(page);
    free(big);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* tide_build_info carries the version this test was built with, a revision
 * and the allocator the page names in tide_allocator_info. */
static void build_info_names_the_version_revision_and_allocator(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { pub, NULL };
    char want[200], alloc[64];
    const char *a;
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    char *page = scrape_with(&t, NULL, 200);
    a = strstr(page, "tide_allocator_info{name=\"");
    if (a == NULL) fail_msg("tide_allocator_info is missing:\n%s", page);
    a += strlen("tide_allocator_info{name=\"");
    snprintf(alloc, sizeof alloc, "%.*s", (int)strcspn(a, "\""), a);
    const char *b = strstr(page, "\ntide_build_info{");
    if (b == NULL) fail_msg("tide_build_info is missing:\n%s", page);
    snprintf(want, sizeof want, "tide_build_info{version=\"%s\",revision=\"", TIDE_VERSION);
    if (strncmp(b + 1, want, strlen(want)) != 0) fail_msg("tide_build_info should begin %s: %.200s", want, b + 1);
    const char *rev = b + 1 + strlen(want);
    size_t rl = strcspn(rev, "\"");
    if (rl == 0) fail_msg("tide_build_info's revision is empty: %.200s", b + 1);
    snprintf(want, sizeof want, "\",allocator=\"%s\"} 1\n", alloc);
    if (strncmp(rev + rl, want, strlen(want)) != 0)
        fail_msg("tide_build_info should name the allocator %s: %.200s", alloc, b + 1);
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* Run a command, capturing its output (stdout and stderr) into out. Returns
 * its exit status, -1 when it did not exit normally. */
static int run_capture(const char *cmd, char *out, size_t cap)
{
    char *all = NULL;
    int st = th_run(cmd, &all);
    snprintf(out, cap, "%s", all);
    free(all);
    return st;
}

/* Scrape after some traffic and a sweep; check the page with promtool and
 * Tide's own checks. `env` chooses the allocator (LD_PRELOAD). */
static void scrape_is_clean(char *const env[], const char *allocator)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static char admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char *envs[8];
    int n = 0;
    char msg[8192], want[128], *page;
    tided t;
    uint8_t value[300];

    for (size_t i = 0; env && env[i] && n < 5; i++) envs[n++] = env[i];
    envs[n++] = tok;
    envs[n++] = admin;
    envs[n] = NULL;
    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, envs);
    memset(value, 'v', sizeof value);
    for (uint64_t i = 0; i < 200; i++) {
        resp r = http(&t, "PUT", obj_path(i, NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT before the scrape");
        resp_free(&r);
    }
    resp r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep before the scrape");
    resp_free(&r);
    page = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("Tide's checks of a real scrape: %s", msg);
    int st = th_promtool_check(page, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics on a real scrape (%s): expected exit 0, got %d: %s", allocator, st,
                          msg);
    snprintf(want, sizeof want, "tide_allocator_info{name=\"%s\"", allocator);
    expect_contains(page, want, "the allocator serving malloc");
    if (strcmp(allocator, "jemalloc") == 0) {
        expect_contains(page, "# TYPE tide_jemalloc_allocated_bytes gauge", "jemalloc's own figures");
        expect_contains(page, "# TYPE tide_jemalloc_dirty_bytes gauge", "jemalloc's dirty pages");
    } else if (strcmp(allocator, "glibc") == 0) {
        expect_contains(page, "# TYPE tide_glibc_arenas gauge", "glibc's arena count");
    }
    expect_u64((uint64_t)th_prom_value(page, "tide_sweeps_total"), 1, "sweeps on the page");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_connections_accepted_total") >= 1, 1, "connections");
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* 1 when th_bin_dir()'s tided is a sanitizer build (its allocator then
 * serves malloc, and no other can be put in front of it). */
static int tided_is_sanitized(void)
{
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "ldd %s/tided 2>&1", th_bin_dir());
    return run_capture(cmd, out, sizeof out) == 0 && (strstr(out, "libasan") || strstr(out, "libtsan"));
}

static void a_real_scrape_passes_promtool_under_glibc(void **state)
{
    (void)state;
    scrape_is_clean(NULL, tided_is_sanitized() ? "sanitizer" : "glibc");
}

static void a_real_scrape_passes_promtool_under_jemalloc(void **state)
{
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    char *env[] = { preload, NULL };
    (void)state;
    if (access(preload + strlen("LD_PRELOAD="), R_OK) != 0)
        fail_msg("%s is missing: scripts/install-deps installs libjemalloc2", preload + strlen("LD_PRELOAD="));
    /* A sanitizer build of tided must keep its own allocator first: there
     * jemalloc cannot serve malloc, and this test has nothing to check. */
    if (tided_is_sanitized()) th_skip("%s/tided is a sanitizer build", th_bin_dir());
    scrape_is_clean(env, "jemalloc");
}

/* tided's startup log (it exits 2 at once on a bad flag, after logging
 * nothing; so start it for real and stop it). */
static void startup_log_of(const char *bin, char *const env[], tided *t)
{
    char listen_arg[64];
    memset(t, 0, sizeof *t);
    tided_prepare(t);
    t->port = free_port(AF_INET);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", t->port);
    char *argv[] = { (char *)bin, "--data-dir", t->data, listen_arg, NULL };
    spawn(t, argv, env);
    if (wait_healthy(t) != 0) fail_msg("%s should start; its log:\n%s", bin, log_tail(t));
    tided_signal_and_reap(t, SIGTERM);
}

static void the_jemalloc_build_proves_its_background_thread_is_on(void **state)
{
    char bin[700];
    tided t;
    (void)state;

    snprintf(bin, sizeof bin, "%s/jemalloc/tided", th_bin_dir());
    if (access(bin, X_OK) != 0) {
        if (tided_is_sanitized()) th_skip("a sanitizer build has no jemalloc variant");
        fail_msg("%s is missing: `make check` builds it (make ALLOC=jemalloc)", bin);
    }
    startup_log_of(bin, NULL, &t);
    if (!log_contains(&t, "allocator: jemalloc ") || !log_contains(&t, "background_thread=true"))
        fail_msg("the jemalloc build's startup log should say 'allocator: jemalloc ... background_thread=true':\n%s",
                 log_tail(&t));
    if (log_contains(&t, "without its background thread"))
        fail_msg("the jemalloc build should not warn about the background thread:\n%s", log_tail(&t));
    tided_cleanup(&t);

    /* The same library preloaded under the glibc build, without Tide's
     * malloc_conf: the thread is off and the log says so. */
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    char *env[] = { preload, NULL };
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    startup_log_of(bin, env, &t);
    if (!log_contains(&t, "background_thread=false") || !log_contains(&t, "without its background thread"))
        fail_msg("preloaded jemalloc without malloc_conf should log background_thread=false and warn:\n%s",
                 log_tail(&t));
    tided_cleanup(&t);
}

/* The sum of the consumers' series on a page. */
static double consumers_total(const char *page)
{
    double sum = 0;
    const char *p = page;
    while ((p = strstr(p, "\ntide_memory_consumer_bytes{")) != NULL) {
        p = strchr(p, '}');
        sum += strtod(p + 1, NULL);
    }
    return sum;
}

/* docs/OPERATIONS.md states it: after a load, anonymous RSS is explained by
 * what the consumers count plus what the allocator holds free, within 10%
 * plus 4 MiB (thread stacks, h2o's buffers, libraries' heaps, the partly
 * used pages around free chunks).
 *
 * The page is one moment, but the store's insert pool (mmap'd chunks of
 * 1 MiB) changes under it while a commit runs: on a loaded machine the
 * commit thread lags the PUTs by seconds, and a pool emptied or filled
 * between reading the consumers and reading RssAnon was a gap of several
 * MiB that was no defect. So the last PUT is ?sync=1: when it is answered
 * every insert is committed, the pool is empty and no commit runs, and
 * nothing changes the store's memory until the scrape. What is left is
 * what the bound is about; an uncounted consumer or a wrong allocator-free
 * figure still shows, whatever the load. */
static void memory_on_the_page_adds_up_to_the_anonymous_rss(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env[] = { tok, NULL };
    uint8_t value[1000];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    memset(value, 'x', sizeof value);
    for (uint64_t i = 0; i < 20000; i++) {
        resp r = http(&t, "PUT", obj_path(i, i == 19999 ? "?sync=1" : NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT of the load");
        resp_free(&r);
    }
    char *page = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    double pool = th_prom_value(page, "tide_memory_consumer_bytes{consumer=\"store_insert_pool\"}");
    if (pool != 0)
        fail_msg("after a PUT ?sync=1 the insert pool should be empty on the page, it holds %.0f bytes", pool);
    if (strstr(page, "tide_allocator_info{name=\"sanitizer\"")) {
        /* A sanitizer's shadow memory and quarantine are in RssAnon and in no
         * consumer: there is nothing to add up. */
        free(page);
        tided_signal_and_reap(&t, SIGTERM);
        tided_cleanup(&t);
        th_skip("tided runs on a sanitizer's allocator");
    }
    double anon = th_prom_value(page, "tide_process_rss_anon_bytes");
    double cons = consumers_total(page);
    double cache = th_prom_value(page, "tide_memory_consumer_bytes{consumer=\"node_cache\"}");
    double free_b = th_prom_value(page, "tide_allocator_free_bytes");
    if (isnan(anon) || isnan(free_b)) fail_msg("the page should have RssAnon and allocator-free: %s", page);
    if (cache < 20000.0 * sizeof value)
        fail_msg("node_cache counts %.0f bytes for 20000 values of %zu bytes", cache, sizeof value);
    double explained = cons + free_b, gap = fabs(anon - explained);
    print_message("    RssAnon %.1f MiB, consumers %.1f MiB + allocator-free %.1f MiB: gap %.1f MiB (bound %.1f MiB)\n",
                  anon / 1048576, cons / 1048576, free_b / 1048576, gap / 1048576,
                  (0.10 * anon + 4.0 * 1048576) / 1048576);
    if (gap > 0.10 * anon + 4.0 * 1048576)
        fail_msg("RssAnon %.1f MiB vs consumers %.1f MiB + allocator-free %.1f MiB = %.1f MiB: the gap %.1f MiB is "
                 "over 10%% + 4 MiB", anon / 1048576, cons / 1048576, free_b / 1048576, explained / 1048576,
                 gap / 1048576);
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void tide_doctor_names_the_unbounded_knob_of_a_running_node(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static const char *flags[] = { "--cache-budget=0", NULL };
    char *env[] = { tok, NULL };
    char cmd[1024], out[16384];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    snprintf(cmd, sizeof cmd, "TIDE_METRICS_TOKEN=%s %s/tide doctor http://127.0.0.1:%d 2>&1", METRICS_TOKEN,
             th_bin_dir(), t.port);
    int st = run_capture(cmd, out, sizeof out);
    if (st != 0) fail_msg("tide doctor: expected exit 0, got %d: %s", st, out);
    expect_contains(out, "Unbounded: node_cache. To bound it: set --cache-budget", "the knob named");
    expect_contains(out, "RSS is ", "the RSS line");
    expect_contains(out, "node_cache", "the consumers");
    if (strstr(out, METRICS_TOKEN)) fail_msg("tide doctor printed the token: %s", out);
    snprintf(cmd, sizeof cmd, "TIDE_METRICS_TOKEN=%s %s/tide doctor --json 127.0.0.1:%d 2>&1", METRICS_TOKEN,
             th_bin_dir(), t.port);
    st = run_capture(cmd, out, sizeof out);
    if (st != 0) fail_msg("tide doctor --json: expected exit 0, got %d: %s", st, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (j == NULL) fail_msg("tide doctor --json: not JSON (%s): %s", e.text, out);
    expect_str(json_string_value(json_object_get(json_array_get(json_object_get(j, "unbounded"), 0), "consumer")),
               "node_cache", "first unbounded consumer in the JSON");
    json_decref(j);
    snprintf(cmd, sizeof cmd, "env -u TIDE_METRICS_TOKEN %s/tide doctor http://127.0.0.1:%d 2>&1", th_bin_dir(), t.port);
    st = run_capture(cmd, out, sizeof out);
    expect_u64((uint64_t)st, 1, "tide doctor without the token exits 1");
    expect_contains(out, "401 Unauthorized: set TIDE_METRICS_TOKEN", "the doctor says what to set");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (at == NULL) fail_msg("contrib/prometheus/prometheus.yml should contain '%s'", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Replace every `from` in `text` with `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t n = 0, fl = strlen(from), tl = strlen(to);
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from)) n++;
    char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
    for (const char *p = text;;) {
        const char *at = strstr(p, from);
        if (at == NULL) { strcpy(o, p); break; }
        memcpy(o, p, (size_t)(at - p)); o += at - p;
        memcpy(o, to, tl); o += tl;
        p = at + fl;
    }
    return out;
}

#define DASHBOARD "contrib/grafana/tide-node.json"
#define DS_UID    "${datasource}"

/* Run `expr` (the dashboard's, variables filled in) on Prometheus: it must
 * succeed and return at least one series (a misspelt family returns an
 * empty result with HTTP 200). Returns the result array (new reference). */
/* 1 when every tide_* family `expr` names is an allocator's own
 * (tide_glibc_*, tide_jemalloc_*, tide_tcmalloc_*, and the free bytes
 * tided reads from one of them). */
static int only_allocator_families(const char *expr)
{
    static const char *const mine[] = { "tide_glibc_", "tide_jemalloc_", "tide_tcmalloc_",
                                        "tide_allocator_free_bytes" };
    const char *p = expr;
    int seen = 0;

    while ((p = strstr(p, "tide_")) != NULL) {
        int ok = 0;
        for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
            if (strncmp(p, mine[i], strlen(mine[i])) == 0) ok = 1;
        if (!ok) return 0;
        seen = 1;
        p += 5;
    }
    return seen;
}

static json_t *prom_query_nonempty(const tided *prom, const char *expr, const char *what)
{
    char *a = replace_all(expr, "$__rate_interval", "1m");
    char *b = replace_all(a, "$instance", ".*");
    char *c = replace_all(b, "$job", "tide");
    CURL *h = curl_easy_init();
    char *q = curl_easy_escape(h, c, 0), path[4096];
    json_error_t e;
    json_t *j, *res;

    snprintf(path, sizeof path, "/api/v1/query?query=%s", q);
    resp r = http(prom, "GET", path, NULL, 0, 0, NULL);
    if (r.status != 200 || strstr(r.body, "\"status\":\"success\"") == NULL)
        fail_msg("%s '%s' should run on Prometheus; got HTTP %ld: %s", what, c, r.status, r.body);
    j = json_loads(r.body, 0, &e);
    res = json_object_get(json_object_get(j, "data"), "result");
    /* A sanitizer build's malloc is the sanitizer's: tided then exports no
     * glibc, jemalloc or tcmalloc family (nor the free bytes read from
     * one), so only there may a query made of
     * allocator families alone come back empty. */
    if (json_array_size(res) == 0 && !(tided_is_sanitized() && only_allocator_families(c)))
        fail_msg("%s '%s' returned no series from the scraped tided (a family that does not exist?): %s", what, c,
                 r.body);
    json_incref(res);
    json_decref(j);
    resp_free(&r);
    curl_free(q);
    curl_easy_cleanup(h);
    free(a); free(b); free(c);
    return res;
}

static void expect_datasource_variable(json_t *o, const char *what)
{
    const char *uid = json_string_value(json_object_get(json_object_get(o, "datasource"), "uid"));
    if (uid == NULL || strcmp(uid, DS_UID) != 0)
        fail_msg("%s should use the data source variable (datasource.uid \"" DS_UID "\"), not '%s'", what,
                 uid ? uid : "(none)");
}

/* The templating: a datasource variable of type prometheus, and the job and
 * instance variables, queried through it; label_values(...) runs as its
 * selector and every series must carry the label. */
static void check_dashboard_variables(const tided *prom, json_t *d)
{
    json_t *v, *res, *s;
    size_t i, k;
    int ds = 0, inst = 0;

    json_array_foreach(json_object_get(json_object_get(d, "templating"), "list"), i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *type = json_string_value(json_object_get(v, "type"));
        const char *query = json_string_value(json_object_get(v, "query"));
        char sel[512], label[64], what[128];
        if (name == NULL || type == NULL || query == NULL) fail_msg("a template variable lacks name, type or query");
        if (strcmp(type, "datasource") == 0) {
            if (strcmp(query, "prometheus") != 0) fail_msg("the datasource variable should query 'prometheus'");
            ds += strcmp(name, "datasource") == 0;
            continue;
        }
        snprintf(what, sizeof what, "the variable %s", name);
        expect_datasource_variable(v, what);
        if (sscanf(query, "label_values(%511[^,], %63[^)])", sel, label) != 2)
            fail_msg("%s: expected label_values(selector, label), got '%s'", what, query);
        if (strcmp(name, "instance") == 0) {
            inst = 1;
            if (strncmp(sel, "tide_build_info", 15) != 0 || strcmp(label, "instance") != 0)
                fail_msg("the instance variable should be label_values(tide_build_info..., instance): %s", query);
        }
        res = prom_query_nonempty(prom, sel, what);
        json_array_foreach(res, k, s)
            if (json_object_get(json_object_get(s, "metric"), label) == NULL)
                fail_msg("%s: a series of '%s' has no label %s", what, sel, label);
        json_decref(res);
    }
    if (!ds) fail_msg("the dashboard needs a template variable 'datasource' of type datasource");
    if (!inst) fail_msg("the dashboard needs an 'instance' template variable");
}

/* The rows, in order, each followed by at least one panel before the next. */
static void check_dashboard_rows(json_t *d)
{
    static const char *const want[] = { "Requests", "Store", "Caches", "Memory" };
    json_t *p;
    size_t i, rows = 0, since_row = 1;

    json_array_foreach(json_object_get(d, "panels"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "type")), "row") != 0) { since_row++; continue; }
        const char *title = json_string_value(json_object_get(p, "title"));
        if (since_row == 0) fail_msg("the row before '%s' has no panel", title);
        if (rows >= 4 || strcmp(title, want[rows]) != 0)
            fail_msg("row %zu is '%s'; expected the rows Requests, Store, Caches, Memory in that order", rows + 1, title);
        rows++;
        since_row = 0;
    }
    if (rows != 4 || since_row == 0) fail_msg("expected 4 rows each with panels; found %zu rows", rows);
}

/* Every panel and query of the Grafana dashboard: the data source variable
 * everywhere, {{instance}} in every legend, `instance=~"$instance"` in every
 * query, and every query returning series from the scraped tided. */
static void check_dashboard_queries(const tided *prom)
{
    json_error_t e;
    json_t *d = json_load_file(DASHBOARD, 0, &e);
    json_t *panel, *target, *ann;
    size_t i, k, checked = 0;
    char what[300];

    if (d == NULL) fail_msg(DASHBOARD " does not parse: %s (line %d)", e.text, e.line);
    check_dashboard_variables(prom, d);
    check_dashboard_rows(d);
    json_array_foreach(json_object_get(d, "panels"), i, panel) {
        const char *title = json_string_value(json_object_get(panel, "title"));
        if (strcmp(json_string_value(json_object_get(panel, "type")), "row") == 0) continue;
        snprintf(what, sizeof what, "the panel '%s'", title);
        expect_datasource_variable(panel, what);
        if (json_array_size(json_object_get(panel, "targets")) == 0) fail_msg("%s has no query", what);
        json_array_foreach(json_object_get(panel, "targets"), k, target) {
            const char *expr = json_string_value(json_object_get(target, "expr"));
            const char *legend = json_string_value(json_object_get(target, "legendFormat"));
            snprintf(what, sizeof what, "the panel '%s', query %s", title,
                     json_string_value(json_object_get(target, "refId")));
            expect_datasource_variable(target, what);
            if (expr == NULL) fail_msg("%s has no expr", what);
            if (legend == NULL || strstr(legend, "{{instance}}") == NULL)
                fail_msg("%s: its legendFormat '%s' lacks {{instance}}", what, legend ? legend : "(none)");
            if (strstr(expr, "instance=~\"$instance\"") == NULL) fail_msg("%s does not use $instance: %s", what, expr);
            json_decref(prom_query_nonempty(prom, expr, what));
            checked++;
        }
    }
    json_array_foreach(json_object_get(json_object_get(d, "annotations"), "list"), i, ann) {
        snprintf(what, sizeof what, "the annotation '%s'", json_string_value(json_object_get(ann, "name")));
        expect_datasource_variable(ann, what);
        json_decref(prom_query_nonempty(prom, json_string_value(json_object_get(ann, "expr")), what));
        checked++;
    }
    if (checked < 20) fail_msg("expected at least 20 dashboard queries, found %zu", checked);
    json_decref(d);
}

/* 1 when `query` returns at least one series on Prometheus. */
static int prom_has(const tided *prom, const char *query)
{
    CURL *h = curl_easy_init();
    char *q = curl_easy_escape(h, query, 0), path[2048];
    int has;

    snprintf(path, sizeof path, "/api/v1/query?query=%s", q);
    resp r = http(prom, "GET", path, NULL, 0, 0, NULL);
    has = r.status == 200 && strstr(r.body, "\"result\":[{") != NULL;
    resp_free(&r);
    curl_free(q);
    curl_easy_cleanup(h);
    return has;
}

/* What the dashboard's store and request panels show: PUTs (one ?sync=1,
 * so a commit is made), GETs that hit and miss, a 404, body bytes. Keys
 * from 0x1600 on, new each call. */
static void dashboard_traffic(tided *t)
{
    static uint64_t next = 0x1600;
    uint8_t value[500];
    resp r;

    memset(value, 'd', sizeof value);
    for (int i = 0; i < 10; i++, next++) {
        r = http(t, "PUT", obj_path(next, i == 9 ? "?sync=1" : NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "a PUT for the dashboard");
        resp_free(&r);
        r = http(t, "GET", obj_path(next, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "a GET for the dashboard");
        resp_free(&r);
    }
    r = http(t, "GET", obj_path(0x15ff, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "a GET of a key never stored");
    resp_free(&r);
}

static void a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static char admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char *env[] = { tok, admin, NULL };
    char cfg_path[600], token_path[600], tsdb[600], log_path[600], target[64], listen[64], q[1024], out[65536];
    tided t, prom;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    dashboard_traffic(&t);
    memset(&prom, 0, sizeof prom);
    tided_prepare(&prom);
    th_path(cfg_path, sizeof cfg_path, prom.dir, "prometheus.yml");
    th_path(token_path, sizeof token_path, prom.dir, "metrics.token");
    th_path(tsdb, sizeof tsdb, prom.dir, "tsdb");
    th_path(log_path, sizeof log_path, prom.dir, "prometheus.log");
    assert_int_equal(th_write_file(token_path, METRICS_TOKEN, strlen(METRICS_TOKEN)), 0);
    /* The shipped file, with only the token file, the target and the
     * interval changed. */
    char *cfg0 = th_slurp("contrib/prometheus/prometheus.yml");
    char *cfg1 = replace_once(cfg0, "/etc/tide/metrics.token", token_path);
    snprintf(target, sizeof target, "127.0.0.1:%d", t.port);
    char *cfg2 = replace_once(cfg1, "127.0.0.1:8080", target);
    char *cfg3 = replace_once(cfg2, "scrape_interval: 15s", "scrape_interval: 1s");
    char *cfg4 = replace_once(cfg3, "scrape_timeout: 10s", "scrape_timeout: 1s");
    assert_int_equal(th_write_file(cfg_path, cfg4, strlen(cfg4)), 0);
    free(cfg0); free(cfg1); free(cfg2); free(cfg3); free(cfg4);
    snprintf(q, sizeof q, "promtool check config %s 2>&1", cfg_path);
    if (run_capture(q, out, sizeof out) != 0) fail_msg("promtool check config: %s", out);

    prom.port = free_port(AF_INET);
    snprintf(prom.host, sizeof prom.host, "127.0.0.1");
    snprintf(prom.log, sizeof prom.log, "%s", log_path);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", prom.port);
    char cfg_arg[800], tsdb_arg[800];
    snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg_path);
    snprintf(tsdb_arg, sizeof tsdb_arg, "--storage.tsdb.path=%s", tsdb);
    char *argv[] = { "prometheus", cfg_arg, tsdb_arg, listen, NULL };
    spawn(&prom, argv, NULL);

    /* Poll the query API until the node-cache series is there (the first
     * scrape comes within a second or two of the start). */
    double end = th_now_ms() + 60000;
    int found = 0;
    while (!found && th_now_ms() < end) {
        resp r = http(&prom, "GET", "/api/v1/query?query=tide_memory_consumer_bytes%7Bconsumer%3D%22node_cache%22%7D",
                      NULL, 0, 0, NULL);
        if (r.status == 200 && strstr(r.body, "\"consumer\":\"node_cache\"") && strstr(r.body, "\"value\""))
            found = 1;
        resp_free(&r);
        if (wait_exit(&prom, 0)) fail_msg("prometheus exited early; its log:\n%s", log_tail(&prom));
        if (!found) poll(NULL, 0, 250);
    }
    if (!found) {
        kill(prom.pid, SIGKILL);
        wait_exit(&prom, STOP_MS);
        fail_msg("Prometheus should return tide_memory_consumer_bytes{consumer=\"node_cache\"} within 60 s; "
                 "its log:\n%s", log_tail(&prom));
    }
    /* A sweep (its trim marks the annotation), more traffic, and three
     * scrapes of it all, so every rate has samples to work on. */
    dashboard_traffic(&t);
    resp r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep for the trim annotation");
    resp_free(&r);
    end = th_now_ms() + 60000;
    while (!(prom_has(&prom, "changes(tide_trims_total{job=\"tide\"}[1m]) > 0")
             && prom_has(&prom, "count_over_time(tide_http_requests_total{job=\"tide\",code=\"201\"}[1m]) >= 3"))) {
        if (th_now_ms() > end) {
            kill(prom.pid, SIGKILL);
            wait_exit(&prom, STOP_MS);
            fail_msg("Prometheus should have three scrapes of the traffic and the trim within 60 s; its log:\n%s",
                     log_tail(&prom));
        }
        poll(NULL, 0, 250);
    }
    r = http(&prom, "GET", "/api/v1/targets", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /api/v1/targets");
    expect_contains(r.body, target, "the tided target");
    resp_free(&r);
    check_dashboard_queries(&prom);
    r = http(&prom, "GET", "/api/v1/targets", NULL, 0, 0, NULL);
    expect_contains(r.body, target, "the tided target");
    expect_contains(r.body, "\"health\":\"up\"", "the target is up");
    resp_free(&r);
    kill(prom.pid, SIGTERM);
    if (!wait_exit(&prom, STOP_MS)) { kill(prom.pid, SIGKILL); wait_exit(&prom, STOP_MS); }
    tided_cleanup(&prom);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- connection limits, the head check, the body budget, signals ------ */

/* A TCP connection to t from the loopback address `src` ("127.0.0.9"):
 * all of 127/8 is loopback, so tests can be several clients. */
static int connect_from(const tided *t, const char *src)
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

static void send_all(int fd, const void *p, size_t len)
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
static int read_until_closed(int fd, char *out, size_t cap, int ms)
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
static int has_answer(int fd, char *out, size_t cap)
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
static int read_response(int fd, char *out, size_t cap, int ms)
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
static json_int_t status_int(const tided *t, const char *a, const char *b, const char *c)
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

/* ---- slow clients at the connection bound ----------------------------------- */

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

static void two_content_lengths_are_400_and_nothing_after_them_is_read(void **state)
{
    char req[1024], out[4096], k[65];
    const char *smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd;
    resp r;
    (void)state;

    key_hex(900, k);
    /* All at once: h2o frames the body by the first header. */
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Content-Length: 40\r\n\r\nhello%s", k, smuggled);
    raw_exchange(&shared, req, strlen(req), out, sizeof out);
    expect_contains(out, "HTTP/1.1 400", "two Content-Length headers");
    expect_contains(out, "two Content-Length headers", "the 400's detail");
    if (strstr(out, "200 OK") || strstr(out, "\r\nok\n"))
        fail_msg("the bytes after the first Content-Length must not be served as a second request: '%s'", out);
    /* The head alone: answered before any body byte is sent. */
    key_hex(901, k);
    fd = connect_from(&shared, "127.0.0.5");
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "content-length: 5\r\n\r\n", k);
    send_all(fd, req, strlen(req));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("a head with two Content-Length headers should be answered and closed without its body");
    close(fd);
    expect_contains(out, "HTTP/1.1 400", "two Content-Length headers, head only");
    expect_contains(out, "\"error\":\"bad_request\"", "the 400 is JSON");
    /* Content-Length and Transfer-Encoding together. */
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", k);
    raw_exchange(&shared, req, strlen(req), out, sizeof out);
    expect_contains(out, "HTTP/1.1 400", "Content-Length with Transfer-Encoding");
    expect_contains(out, "both Content-Length and Transfer-Encoding", "the 400's detail");
    key_hex(900, k);
    snprintf(req, sizeof req, "/v1/objects/%s", k);
    r = http(&shared, "GET", req, NULL, 0, 0, NULL);
    expect_status(r, 404, "a refused PUT stored nothing");
    resp_free(&r);
    key_hex(901, k);
    snprintf(req, sizeof req, "/v1/objects/%s", k);
    r = http(&shared, "GET", req, NULL, 0, 0, NULL);
    expect_status(r, 404, "a refused PUT stored nothing");
    resp_free(&r);
}

static void a_content_length_over_max_object_size_is_413_before_the_body(void **state)
{
    char req[512], out[4096], k[65];
    int fd;
    (void)state;

    key_hex(902, k);
    fd = connect_from(&shared, "127.0.0.6");
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", k,
             MAX_OBJECT + 1);
    send_all(fd, req, strlen(req));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("Content-Length max_object_size + 1 should be answered 413 and closed before the body is "
                 "sent; nothing came in 30 s");
    close(fd);
    expect_contains(out, "HTTP/1.1 413", "Content-Length max_object_size + 1, head only");
    expect_contains(out, "\"error\":\"too_large\"", "the 413 is JSON");
    expect_contains(out, "Connection: close", "the 413 closes the connection");
}

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

/* Poll t's log for `text` for up to ms. */
static int log_waits_for(const tided *t, const char *text, int ms)
{
    double end = th_now_ms() + ms;
    while (th_now_ms() < end) {
        if (log_contains(t, text)) return 1;
        poll(NULL, 0, 20);
    }
    return 0;
}

/* SIGHUP reads the config file on the main thread, which also reads the
 * stop signals: a file replaced by a FIFO (whose open would wait for a
 * writer) or by a symlink to /dev/zero (which never ends) is refused by
 * its type, nothing waited on or read; a file with rippled's online_delete
 * (ledgers) and no online delete setting of Tide's is refused as at a
 * start. The settings in force stay (debug, though the last file says
 * info, so each request still logs an access line) and SIGTERM stops
 * tided as always. */
static void sighup_with_a_config_now_refused_changes_nothing_and_sigterm_still_stops_tided(void **state)
{
    char cfg[700], flag[720], want[1000];
    const char *flags[] = { flag, NULL };
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_put_file(t.dir, "tide.cfg", "[node]\nlog_level=debug\n");
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, NULL);

    assert_int_equal(unlink(cfg), 0);
    assert_int_equal(mkfifo(cfg, 0600), 0);
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s: the config "
             "file is a FIFO, not a regular file", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with the config now a FIFO should log '%s' at once. Its log:\n%s", want, log_tail(&t));

    assert_int_equal(unlink(cfg), 0);
    assert_int_equal(symlink("/dev/zero", cfg), 0);
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s: the config "
             "file is a character device, not a regular file", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with the config now a symlink to /dev/zero should log '%s'. Its log:\n%s", want,
                 log_tail(&t));

    assert_int_equal(unlink(cfg), 0);
    th_put_file(t.dir, "tide.cfg", "[node]\nlog_level=info\n[node_db]\nonline_delete=512\n");
    kill(t.pid, SIGHUP);
    snprintf(want, sizeof want, "SIGHUP: the settings do not read any more, so nothing changed: %s:4: [node_db] "
             "online_delete=512 is rippled's: it counts the ledgers rippled keeps", cfg);
    if (!log_waits_for(&t, want, 30000))
        fail_msg("a SIGHUP with rippled's online_delete should log '%s'. Its log:\n%s", want, log_tail(&t));

    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    expect_status(r, 200, "/v1/status after the refused reloads");
    resp_free(&r);
    if (!log_waits_for(&t, "access: GET /v1/status", 30000))
        fail_msg("log_level=debug should still be in force after the refused reloads. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0 || !log_contains(&t, "shutdown complete"))
        fail_msg("SIGTERM after the refused reloads should stop tided cleanly (exit 0, 'shutdown complete'); "
                 "status %d. Its log:\n%s", t.status, log_tail(&t));
    tided_cleanup(&t);
}

static void sighup_reloads_the_log_level_and_loses_nothing(void **state)
{
    char cfg[700], flag[720];
    const char *flags[] = { flag, NULL };
    uint8_t v[64];
    FILE *f;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(cfg, sizeof cfg, t.dir, "tide.cfg");
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=info\ncache_age=90\n", f);
    fclose(f);
    snprintf(flag, sizeof flag, "--config=%s", cfg);
    tided_start(&t, flags, NULL);
    th_value(77, sizeof v, v);
    r = http(&t, "PUT", obj_path(77, NULL), v, sizeof v, 0, NULL);
    expect_status(r, 201, "a PUT without sync before SIGHUP");
    resp_free(&r);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=debug\ncache_age=120\n", f);
    fclose(f);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: log_level info -> debug", 30000))
        fail_msg("after SIGHUP the log should say 'SIGHUP: log_level info -> debug'. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, "SIGHUP: cache_age changed (90 -> 120); it takes effect at the next start"))
        fail_msg("after SIGHUP the log should name cache_age as changed for the next start. Its log:\n%s",
                 log_tail(&t));
    r = http(&t, "GET", obj_path(77, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after SIGHUP");
    resp_free(&r);
    if (!log_waits_for(&t, "access: GET", 30000))
        fail_msg("log_level=debug after SIGHUP should log access lines. Its log:\n%s", log_tail(&t));
    /* A file that no longer reads changes nothing. */
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=loud\n", f);
    fclose(f);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: the settings do not read any more, so nothing changed", 30000))
        fail_msg("a SIGHUP with a broken config should say nothing changed. Its log:\n%s", log_tail(&t));
    /* SIGHUP did not stop tided: the value acknowledged before it is
     * committed by the stop and served after a restart. */
    tided_signal_and_reap(&t, SIGTERM);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("[node]\nlog_level=info\n", f);
    fclose(f);
    tided_start(&t, flags, NULL);
    r = http(&t, "GET", obj_path(77, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "the value PUT before SIGHUP, after a restart");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void sigquit_stops_like_sigterm(void **state)
{
    (void)state;
    stop_signal_commits_every_acknowledged_put(SIGQUIT);
}

static void a_tided_that_cannot_bind_creates_no_store(void **state)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    char listen_arg[64], data_arg[700], nudb[700];
    const char *flags[] = { data_arg, listen_arg, NULL };
    struct stat st;
    int fd = socket(AF_INET, SOCK_STREAM, 0), rc;
    tided t;
    (void)state;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(data_arg, sizeof data_arg, "--data-dir=%s", t.data);
    rc = tided_run_to_exit(&t, flags, NULL);
    close(fd);
    if (rc != 1 || !log_contains(&t, "Address already in use"))
        fail_msg("tided on a taken port should exit 1 naming it, got %d. Its log:\n%s", rc, log_tail(&t));
    th_path(nudb, sizeof nudb, t.data, "nudb.dat");
    if (stat(nudb, &st) == 0 || stat(t.data, &st) == 0)
        fail_msg("tided that could not bind created %s", t.data);
    tided_cleanup(&t);
}

static void a_stop_signal_during_the_stores_open_ends_startup(void **state)
{
    static char delay[] = "TIDE_TEST_OPEN_DELAY_MS=600000";
    char *env[] = { delay, NULL };
    char bin[600], listen_arg[128];
    const char *argv[8];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    t.port = free_port(AF_INET);
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", t.port);
    argv[0] = bin;
    argv[1] = "--data-dir";
    argv[2] = t.data;
    argv[3] = listen_arg;
    argv[4] = NULL;
    spawn(&t, (char *const *)argv, env);
    if (!log_waits_for(&t, "Using NuDB block size", 30000))
        fail_msg("tided should log its startup checklist. Its log:\n%s", log_tail(&t));
    poll(NULL, 0, 100);       /* into the held open; the assertion below holds either way */
    tided_signal_and_reap(&t, SIGTERM);
    if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("SIGTERM during the store's open should end tided with 0, got 0x%x. Its log:\n%s", t.status,
                 log_tail(&t));
    if (!log_contains(&t, "during startup: stopping before serving"))
        fail_msg("tided should say it stopped during startup. Its log:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

static void the_synopsis_shows_only_forms_tided_accepts_and_help_names_every_signal(void **state)
{
    static const char *help[] = { "--help", NULL };
    static const char *bare[] = { "cache_budget=1GiB", NULL };
    static const char *const signals[] = { "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGPIPE" };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    expect_u64(tided_run_to_exit(&t, help, NULL), 0, "exit status of tided --help");
    if (log_contains(&t, "OPTION=VALUE"))
        fail_msg("tided --help's SYNOPSIS shows OPTION=VALUE words, which tided refuses");
    if (!log_contains(&t, "--SETTING=VALUE"))
        fail_msg("tided --help's SYNOPSIS should show the --SETTING=VALUE form");
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (!log_contains(&t, signals[i])) fail_msg("tided --help should document %s", signals[i]);
    if (!log_contains(&t, "and memory_limit (the limit, its source, the level, the marks,"))
        fail_msg("tided --help's /v1/status line should name memory_limit. Its output:\n%s", log_tail(&t));
    if (!log_contains(&t, "enables every /v1/admin endpoint"))
        fail_msg("tided --help should say TIDE_ADMIN_TOKEN gates every /v1/admin endpoint");
    /* The bare word the old synopsis suggested is refused, naming the form. */
    expect_u64(tided_run_to_exit(&t, bare, NULL), 2, "exit status of tided cache_budget=1GiB");
    if (!log_contains(&t, "settings are --name=value"))
        fail_msg("a bare NAME=VALUE word should be refused naming the --name=value form. Its log:\n%s",
                 log_tail(&t));
    tided_cleanup(&t);
}

static void listening_beyond_loopback_warns_that_status_is_open(void **state)
{
    char listen_arg[64];
    const char *warning = "not a loopback address: /healthz, /v1/status and /v1/sweeps answer anyone";
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    if (log_contains(&t, warning)) fail_msg("tided on 127.0.0.1 should not warn about a non-loopback address");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
    /* 0.0.0.0 takes every address; the test only talks to 127.0.0.1. */
    memset(&t, 0, sizeof t);
    snprintf(t.host, sizeof t.host, "127.0.0.1");
    tided_prepare(&t);
    t.port = free_port(AF_INET);
    snprintf(listen_arg, sizeof listen_arg, "--listen=0.0.0.0:%d", t.port);
    {
        char bin[600];
        const char *argv[] = { bin, "--data-dir", t.data, listen_arg, NULL };
        snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
        spawn(&t, (char *const *)argv, NULL);
    }
    if (wait_healthy(&t) != 0) fail_msg("tided on 0.0.0.0 should answer on 127.0.0.1. Its log:\n%s", log_tail(&t));
    if (!log_contains(&t, warning))
        fail_msg("tided on 0.0.0.0 should warn that /v1/status is open. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- the memory limit (issue 13) ------------------------------------------ */

/* tided's resident set now, from /proc/PID/statm: what its governor counts
 * when no cgroup limit applies. */
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
    /* Issue 15: refused on the loop before a store job exists: no queue
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
 * store_index_lag among them since the review of issue 15) fit under its
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

/* ---- GET /v1/admin/heap ------------------------------------------------ */

static void admin_heap_needs_the_token_and_is_malloc_info_xml_under_glibc(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/heap", NULL, 0, 0, NULL);
    expect_status(r, 401, "GET /v1/admin/heap without the token");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 405, "POST /v1/admin/heap");
    expect_contains(r.headers, "allow: GET", "the 405's Allow");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    if (tided_is_sanitized()) {
        expect_status(r, 501, "GET /v1/admin/heap under a sanitizer's allocator");
        expect_error_json(&r, "not_supported", "the 501 body");
        expect_contains(r.body, "sanitizer", "the 501 names the allocator");
    } else {
        expect_status(r, 200, "GET /v1/admin/heap under glibc");
        expect_contains(r.headers, "content-type: application/xml", "malloc_info's XML");
        if (strncmp(r.body, "<malloc", 7) != 0) fail_msg("malloc_info's XML starts with <malloc, got '%.80s'", r.body);
        expect_contains(r.body, "</malloc>", "the whole report");
    }
    resp_free(&r);
}

/* The scratch directory `dir` holds no entry (the dump file was removed). */
static void expect_empty_dir(const char *dir, const char *what)
{
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "ls -A %s", dir);
    if (run_capture(cmd, out, sizeof out) != 0 || out[0] != '\0')
        fail_msg("%s: %s should be empty, holds: %s", what, dir, out);
}

static void admin_heap_under_jemalloc_is_a_prof_dump_with_profiling_and_409_without(void **state)
{
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    static char prof[] = "MALLOC_CONF=prof:true", admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char tmp[600], tmpdir[720];
    char *env_prof[] = { preload, prof, admin, tmpdir, NULL }, *env_off[] = { preload, admin, tmpdir, NULL };
    tided t;
    resp r;
    (void)state;

    if (access(preload + strlen("LD_PRELOAD="), R_OK) != 0)
        fail_msg("%s is missing: scripts/install-deps installs libjemalloc2", preload + strlen("LD_PRELOAD="));
    if (tided_is_sanitized()) th_skip("%s/tided is a sanitizer build", th_bin_dir());
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tmp, sizeof tmp, t.dir, "tmp");
    assert_int_equal(mkdir(tmp, 0700), 0);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    tided_start(&t, NULL, env_prof);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "GET /v1/admin/heap under jemalloc with prof:true");
    expect_contains(r.headers, "content-type: application/octet-stream", "a prof.dump");
    if (strncmp(r.body, "heap_v2/", 8) != 0) fail_msg("a jemalloc heap profile starts with heap_v2/, got '%.80s'",
                                                      r.body);
    resp_free(&r);
    expect_empty_dir(tmp, "after the dump");
    tided_signal_and_reap(&t, SIGTERM);
    /* The dump goes under TMPDIR (so the empty-folder checks look where
     * it was): a missing TMPDIR is a 500 naming that folder. */
    {
        char missing[700];
        th_path(missing, sizeof missing, tmp, "missing");
        snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", missing);
        tided_start(&t, NULL, env_prof);
        r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
        expect_status(r, 500, "GET /v1/admin/heap with TMPDIR a missing folder");
        expect_error_json(&r, "internal", "the 500 body");
        expect_contains(r.body, missing, "the 500 names the TMPDIR it could not write in");
        resp_free(&r);
        tided_signal_and_reap(&t, SIGTERM);
        snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    }
    tided_start(&t, NULL, env_off);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 409, "GET /v1/admin/heap under jemalloc without profiling");
    expect_error_json(&r, "profiling_off", "the 409 body");
    expect_contains(r.body, "MALLOC_CONF=prof:true", "the 409 says how to turn profiling on");
    resp_free(&r);
    expect_empty_dir(tmp, "after the 409");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- under systemd (issue 14): sd_notify, STATE_DIRECTORY, token files --- */

/* A NOTIFY_SOCKET: a unix datagram socket bound in the test's scratch
 * directory, and every message it received, in order. */
typedef struct notify_sock {
    int  fd;
    char path[700];
    char env[720];            /* "NOTIFY_SOCKET=path" */
    char all[16384];          /* the messages, each followed by "\n--\n" */
} notify_sock;

static void notify_open(notify_sock *n, const tided *t)
{
    struct sockaddr_un a;

    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    th_path(n->path, sizeof n->path, t->dir, "notify");
    assert_true(strlen(n->path) < sizeof a.sun_path);
    /* memcpy, not snprintf: gcc -O1 (the asan build) sees a 700-byte
     * source for a 108-byte field and fails -Wformat-truncation. */
    memcpy(a.sun_path, n->path, strlen(n->path) + 1);
    snprintf(n->env, sizeof n->env, "NOTIFY_SOCKET=%s", n->path);
    n->all[0] = '\0';
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(n->fd >= 0);
    assert_int_equal(bind(n->fd, (struct sockaddr *)&a, sizeof a), 0);
}

/* Read messages until one holds `line` (a whole line: "READY=1") or ms
 * pass (then 0; also when tided exited first). Every message read is kept
 * in n->all; the one that matched is copied to got (may be NULL). */
static int notify_wait(notify_sock *n, tided *t, const char *line, int ms, char *got, size_t cap)
{
    double end = th_now_ms() + ms;
    char want[64];

    snprintf(want, sizeof want, "\n%s\n", line);
    while (th_now_ms() < end) {
        struct pollfd p = { n->fd, POLLIN, 0 };
        char msg[4096 + 2];
        ssize_t r;
        if (poll(&p, 1, 50) <= 0) {
            if (wait_exit(t, 0)) return 0;
            continue;
        }
        msg[0] = '\n';
        r = recv(n->fd, msg + 1, sizeof msg - 3, 0);
        if (r <= 0) continue;
        msg[r + 1] = '\n';
        msg[r + 2] = '\0';
        size_t have = strlen(n->all);
        snprintf(n->all + have, sizeof n->all - have, "%s--\n", msg + 1);
        if (strstr(msg, want) != NULL) {
            if (got) snprintf(got, cap, "%s", msg + 1);
            return 1;
        }
    }
    return 0;
}

static void notify_close(notify_sock *n)
{
    if (n->fd >= 0) close(n->fd);
    n->fd = -1;
}

/* One GET /healthz, no retries: its status. */
static long healthz_once(const tided *t)
{
    resp r = http(t, "GET", "/healthz", NULL, 0, 0, NULL);
    long st = r.status;
    resp_free(&r);
    return st;
}

static void under_systemd_ready_comes_when_healthz_answers_then_reloading_and_stopping(void **state)
{
    notify_sock n;
    char bin[600], got[4200];
    char *env[] = { n.env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    notify_open(&n, &t);
    tided_launch(&t, NULL, env, bin, sizeof bin);
    if (!notify_wait(&n, &t, "READY=1", START_MS, got, sizeof got))
        fail_msg("tided under NOTIFY_SOCKET should send READY=1 once it serves; it sent:\n%s\nIts log:\n%s",
                 n.all, log_tail(&t));
    /* The event order: READY=1 arrived, and /healthz answers at once. */
    if (healthz_once(&t) != 200)
        fail_msg("after READY=1, /healthz should answer 200 at the first try. Its log:\n%s", log_tail(&t));
    expect_contains(got, "STATUS=ready: serving on 127.0.0.1:", "READY's STATUS line");
    /* The open asked for more time before it was ready. */
    expect_contains(n.all, "EXTEND_TIMEOUT_USEC=20000000\nSTATUS=opening the store\n--\n",
                    "EXTEND_TIMEOUT_USEC while the store opened");
    expect_contains(got, t.data, "the STATUS names the store");
    kill(t.pid, SIGHUP);
    if (!notify_wait(&n, &t, "RELOADING=1", STOP_MS, got, sizeof got))
        fail_msg("SIGHUP should send RELOADING=1; it sent:\n%s", n.all);
    expect_contains(got, "MONOTONIC_USEC=", "RELOADING carries MONOTONIC_USEC");
    if (!notify_wait(&n, &t, "READY=1", STOP_MS, got, sizeof got))
        fail_msg("after the reload tided should send READY=1 again; it sent:\n%s", n.all);
    expect_contains(got, "STATUS=reloaded", "the second READY's STATUS");
    /* Without WATCHDOG_USEC no ping comes, over four half-seconds (what a
     * 1 s watchdog would ping in; the next test sees those pings). */
    notify_wait(&n, &t, "NO-SUCH-LINE", 2000, NULL, 0);
    if (strstr(n.all, "WATCHDOG=1") != NULL)
        fail_msg("without WATCHDOG_USEC tided must not ping the watchdog; it sent:\n%s", n.all);
    kill(t.pid, SIGTERM);
    if (!notify_wait(&n, &t, "STOPPING=1", STOP_MS, NULL, 0))
        fail_msg("SIGTERM should send STOPPING=1; it sent:\n%s", n.all);
    if (!notify_wait(&n, &t, "STATUS=stopping: the final commit", STOP_MS, NULL, 0))
        fail_msg("the final commit should extend the stop timeout; tided sent:\n%s", n.all);
    expect_contains(n.all, "EXTEND_TIMEOUT_USEC=20000000\nSTATUS=stopping: the final commit\n--\n",
                    "EXTEND_TIMEOUT_USEC during the final commit, without WATCHDOG=1");
    if (!wait_exit(&t, STOP_MS) || !WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after SIGTERM. Its log:\n%s", log_tail(&t));
    notify_close(&n);
    tided_cleanup(&t);
}

/* Start tided with NOTIFY_SOCKET, WATCHDOG_USEC=1 s and `pid_env`, wait for
 * READY=1, then watch for up to `ms`: 1 when WATCHDOG=1 came. */
static int watchdog_pinged(const char *pid_env, int ms)
{
    notify_sock n;
    char bin[600], pid_var[64];
    static char usec[] = "WATCHDOG_USEC=1000000";
    char *env[] = { n.env, usec, pid_var, NULL };
    tided t;
    int pinged;

    snprintf(pid_var, sizeof pid_var, "%s", pid_env);
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    notify_open(&n, &t);
    tided_launch(&t, NULL, env, bin, sizeof bin);
    if (!notify_wait(&n, &t, "READY=1", START_MS, NULL, 0))
        fail_msg("tided should send READY=1; it sent:\n%s\nIts log:\n%s", n.all, log_tail(&t));
    pinged = notify_wait(&n, &t, "WATCHDOG=1", ms, NULL, 0);
    if (pinged && !log_contains(&t, "systemd watchdog: 1000 ms; pinged every 500 ms"))
        fail_msg("a pinging tided should log the watchdog's interval. Its log:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    notify_close(&n);
    tided_cleanup(&t);
    return pinged;
}

static void the_watchdog_is_pinged_when_watchdog_usec_is_set_for_our_pid_only(void **state)
{
    (void)state;
    if (!watchdog_pinged("WATCHDOG_PID=", 10000))
        fail_msg("with WATCHDOG_USEC=1000000 and WATCHDOG_PID=its pid tided should send WATCHDOG=1");
    /* Another process's watchdog (WATCHDOG_PID=1) is not ours to ping:
     * four half-second intervals pass without one. */
    if (watchdog_pinged("WATCHDOG_PID=1", 2000))
        fail_msg("with WATCHDOG_PID of another process tided must not send WATCHDOG=1");
}

/* Read every message waiting on n now, without waiting (kept in n->all). */
static void notify_drain(notify_sock *n)
{
    char msg[4096 + 2];
    ssize_t r;

    while ((r = recv(n->fd, msg, sizeof msg - 1, MSG_DONTWAIT)) > 0) {
        size_t have = strlen(n->all);
        msg[r] = '\0';
        snprintf(n->all + have, sizeof n->all - have, "\n%s\n--\n", msg);
    }
}

/* With TIDE_TEST_STALL_MS set, a GET /healthz with x-tide-test-stall on
 * loop 1 (of --http-threads=2) holds that loop's thread (api.c's test
 * hook; on loop 0 it answers 409 at once, so try again). Returns the
 * connection, its answer not read yet, once the log says loop 1 stalls. */
static int stall_loop_1(const tided *t)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nx-tide-test-stall: 1\r\nConnection: close\r\n\r\n";
    char out[512];

    for (int attempt = 0; attempt < 64; attempt++) {
        int fd = connect_from(t, "127.0.0.1");
        double end = th_now_ms() + 5000;
        send_all(fd, req, sizeof req - 1);
        while (th_now_ms() < end) {
            if (log_contains(t, "test hook: loop 1 stalls")) return fd;
            if (has_answer(fd, out, sizeof out)) break;     /* loop 0's 409: another connection */
            struct pollfd p = { -1, 0, 0 };
            poll(&p, 0, 20);
        }
        close(fd);
    }
    fail_msg("no connection of 64 landed on loop 1 to stall it. The log:\n%s", log_tail(t));
    return -1;
}

/* Start tided under a NOTIFY_SOCKET with `env` (n->env first) and wait for
 * READY=1; loop 1 can then be stalled (stall_loop_1). */
static void launch_notified(tided *t, notify_sock *n, char *const env[])
{
    char bin[600];

    memset(t, 0, sizeof *t);
    tided_prepare(t);
    notify_open(n, t);
    tided_launch(t, NULL, env, bin, sizeof bin);
    if (!notify_wait(n, t, "READY=1", START_MS, NULL, 0))
        fail_msg("tided should send READY=1; it sent:\n%s\nIts log:\n%s", n->all, log_tail(t));
}

/* The watchdog's promise: a loop stuck in a handler stops the pings, and
 * they come back once it turns again. Loop 1 is stalled (loop 0, which
 * pings, keeps turning), so only the check of every loop's turn can stop
 * them. Orders, not times: every ping sent before tided logged "not
 * pinging" is drained; a ping read after it must follow the hook's
 * "resumes" line in the log (the log is written before the loop turns). */
static void a_stuck_event_loop_stops_the_watchdog_pings_until_it_turns_again(void **state)
{
    notify_sock n;
    char out[1024];
    static char usec[] = "WATCHDOG_USEC=1000000", pid[] = "WATCHDOG_PID=", stall[] = "TIDE_TEST_STALL_MS=6000";
    char *env[] = { n.env, usec, pid, stall, NULL };
    double end;
    tided t;
    int fd;
    (void)state;

    launch_notified(&t, &n, env);
    if (!notify_wait(&n, &t, "WATCHDOG=1", 10000, NULL, 0))
        fail_msg("tided should ping after READY=1; it sent:\n%s\nIts log:\n%s", n.all, log_tail(&t));
    fd = stall_loop_1(&t);
    end = th_now_ms() + 10000;
    while (!log_contains(&t, "an event loop has not turned for over 2000 ms; not pinging") && th_now_ms() < end) {
        struct pollfd p = { -1, 0, 0 };
        poll(&p, 0, 20);
    }
    if (!log_contains(&t, "not pinging"))
        fail_msg("with loop 1 stuck tided should stop pinging the watchdog. The log:\n%s", log_tail(&t));
    notify_drain(&n);
    if (!notify_wait(&n, &t, "WATCHDOG=1", 15000, NULL, 0))
        fail_msg("once loop 1 turns again the pings should resume; tided sent:\n%s\nIts log:\n%s", n.all,
                 log_tail(&t));
    if (!log_contains(&t, "test hook: loop 1 resumes"))
        fail_msg("tided pinged the watchdog while loop 1 was stuck. The log:\n%s", log_tail(&t));
    read_until_closed(fd, out, sizeof out, STOP_MS);
    expect_contains(out, "200", "the stalled request is answered after the stall");
    close(fd);
    tided_signal_and_reap(&t, SIGTERM);
    notify_close(&n);
    tided_cleanup(&t);
}

/* A SIGHUP during the drain (a request in flight on loop 1) is logged and
 * ignored: RELOADING=1 and READY=1 after STOPPING=1 would tell systemd the
 * service serves again. */
static void sighup_while_draining_sends_no_reloading_or_ready(void **state)
{
    notify_sock n;
    char out[1024];
    static char stall[] = "TIDE_TEST_STALL_MS=4000";
    char *env[] = { n.env, stall, NULL };
    const char *stopping;
    double end;
    tided t;
    int fd;
    (void)state;

    launch_notified(&t, &n, env);
    fd = stall_loop_1(&t);
    kill(t.pid, SIGTERM);
    if (!notify_wait(&n, &t, "STOPPING=1", STOP_MS, NULL, 0))
        fail_msg("SIGTERM should send STOPPING=1; it sent:\n%s", n.all);
    kill(t.pid, SIGHUP);
    end = th_now_ms() + STOP_MS;
    /* Until the SIGHUP was handled one way or the other. */
    while (!log_contains(&t, "SIGHUP while stopping") && !wait_exit(&t, 0) && th_now_ms() < end)
        if (notify_wait(&n, &t, "RELOADING=1", 20, NULL, 0)) break;
    stopping = strstr(n.all, "\nSTOPPING=1\n");
    if (stopping == NULL || strstr(stopping, "RELOADING=1") || strstr(stopping, "READY=1"))
        fail_msg("after STOPPING=1 tided must send neither RELOADING=1 nor READY=1; it sent:\n%s", n.all);
    if (log_contains(&t, "test hook: loop 1 resumes"))
        fail_msg("the SIGHUP should have come while the request was in flight. The log:\n%s", log_tail(&t));
    read_until_closed(fd, out, sizeof out, STOP_MS);
    close(fd);
    if (!wait_exit(&t, STOP_MS) || !WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
        fail_msg("tided should exit 0 after the drain. Its log:\n%s", log_tail(&t));
    notify_drain(&n);
    stopping = strstr(n.all, "\nSTOPPING=1\n");
    if (stopping == NULL || strstr(stopping, "RELOADING=1") || strstr(stopping, "READY=1"))
        fail_msg("after STOPPING=1 tided must send neither RELOADING=1 nor READY=1; it sent:\n%s", n.all);
    if (!log_contains(&t, "SIGHUP while stopping: not reloading the settings"))
        fail_msg("a SIGHUP during the drain should be logged as ignored. The log:\n%s", log_tail(&t));
    notify_close(&n);
    tided_cleanup(&t);
}

/* --check-config gives the start's warnings too (an address beyond
 * loopback, a descriptor limit under http_max_connections), from the same
 * code, and exits 1 naming stdout when it cannot write its answer. */
static void check_config_warns_as_a_start_does_and_exits_1_when_stdout_fails(void **state)
{
    th_scratch s;
    char cmd[4096], err[700], *out = NULL, *text;
    int rc;
    (void)state;

    assert_int_equal(th_scratch_make(s.base, sizeof s.base), 0);
    th_path(err, sizeof err, s.base, "err");
    snprintf(cmd, sizeof cmd, "ulimit -n 300 && env -i '%s/tided' --check-config --data-dir '%s/data' "
             "--listen 0.0.0.0:8080 --http-max-connections 4096 2>'%s'", th_bin_dir(), s.base, err);
    rc = th_run(cmd, &out);
    text = th_slurp(err);
    if (rc != 0) fail_msg("--check-config should pass (exit 0), got %d; stderr:\n%s", rc, text);
    expect_contains(text, "would listen on 0.0.0.0:8080, not a loopback address", "the exposure warning");
    expect_contains(text, "RLIMIT_NOFILE allows 300 descriptors: serving at most 236 connections",
                    "the descriptor limit's warning");
    expect_contains(out, "tided --check-config: OK", "the answer");
    free(out);
    free(text);
    out = NULL;
    snprintf(cmd, sizeof cmd, "env -i '%s/tided' --check-config --data-dir '%s/data' >/dev/full 2>'%s'",
             th_bin_dir(), s.base, err);
    rc = th_run(cmd, &out);
    text = th_slurp(err);
    if (rc != 1) fail_msg("--check-config >/dev/full should exit 1, got %d; stderr:\n%s", rc, text);
    expect_contains(text, "--check-config: cannot write the settings to stdout: No space left on device",
                    "the reason");
    free(out);
    free(text);
    th_scratch_remove(s.base);
}

static void state_directory_holds_the_store_unless_a_data_dir_is_given(void **state)
{
    char sd[700], sd_env[1500], nudb[800], line[800];
    char *env[] = { sd_env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(sd, sizeof sd, t.dir, "state");
    assert_int_equal(mkdir(sd, 0750), 0);
    snprintf(sd_env, sizeof sd_env, "STATE_DIRECTORY=%s:%s/other", sd, t.dir);
    t.no_data_dir = 1;
    tided_start(&t, NULL, env);
    th_path(nudb, sizeof nudb, sd, "nudb.dat");
    if (!th_exists(nudb)) fail_msg("with STATE_DIRECTORY and no data_dir the store belongs in %s", sd);
    snprintf(line, sizeof line, "data_dir=%s(STATE_DIRECTORY)", sd);
    if (!log_contains(&t, line)) fail_msg("the startup log should show %s. Its log:\n%s", line, log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    /* An explicit --data-dir wins: the store goes there, none in STATE_DIRECTORY. */
    assert_int_equal(unlink(nudb), 0);
    t.no_data_dir = 0;
    tided_start(&t, NULL, env);
    if (th_exists(nudb)) fail_msg("with --data-dir the store must not be made in STATE_DIRECTORY (%s)", sd);
    th_path(nudb, sizeof nudb, t.data, "nudb.dat");
    if (!th_exists(nudb)) fail_msg("with --data-dir the store belongs in %s", t.data);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void put_secret(const char *path, const char *text, mode_t mode)
{
    if (th_write_file(path, text, strlen(text)) != 0 || chmod(path, mode) != 0)
        fail_msg("writing %s: expected success, got an error", path);
}

static void a_token_file_and_a_credential_are_the_tokens_and_never_logged(void **state)
{
    char tok[700], creds[700], cred[800], tok_env[800], creds_env[800];
    char *env[] = { tok_env, creds_env, NULL };
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tok, sizeof tok, t.dir, "metrics.token");
    put_secret(tok, "file-metrics-t0ken\n", 0600);
    th_path(creds, sizeof creds, t.dir, "creds");
    assert_int_equal(mkdir(creds, 0700), 0);
    th_path(cred, sizeof cred, creds, "admin_token");
    put_secret(cred, "cred-admin-t0ken\n", 0400);
    snprintf(tok_env, sizeof tok_env, "TIDE_METRICS_TOKEN_FILE=%s", tok);
    snprintf(creds_env, sizeof creds_env, "CREDENTIALS_DIRECTORY=%s", creds);
    tided_start(&t, NULL, env);
    free(scrape_with(&t, NULL, 401));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ke", 401));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ken", 200));
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer wrong");
    expect_status(r, 401, "the admin sweep with a wrong token");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer cred-admin-t0ken");
    expect_status(r, 200, "the admin sweep with the credential's token");
    resp_free(&r);
    if (!log_contains(&t, "metrics_token=set(env TIDE_METRICS_TOKEN_FILE)")
        || !log_contains(&t, "admin_token=set(credential admin_token)"))
        fail_msg("the startup log should say where each token came from. Its log:\n%s", log_tail(&t));
    /* SIGHUP reads the file again; a new token is named, in force at the
     * next start, and the one in force keeps working. */
    put_secret(tok, "next-metrics-t0ken\n", 0600);
    kill(t.pid, SIGHUP);
    if (!log_waits_for(&t, "SIGHUP: the metrics token changed; it takes effect at the next start", 30000))
        fail_msg("a SIGHUP after the token file changed should say so. Its log:\n%s", log_tail(&t));
    free(scrape_with(&t, "Authorization: Bearer file-metrics-t0ken", 200));
    tided_signal_and_reap(&t, SIGTERM);
    if (log_contains(&t, "file-metrics-t0ken") || log_contains(&t, "cred-admin-t0ken")
        || log_contains(&t, "next-metrics-t0ken"))
        fail_msg("the log must never hold a token. Its log:\n%s", log_tail(&t));
    tided_cleanup(&t);
}

/* tided with `env` exits 2 before it makes a store, its log naming `part`. */
static void refused_at_startup(tided *t, char *const env[], const char *part, const char *what)
{
    char listen_arg[64], data_arg[700];
    const char *flags[] = { data_arg, listen_arg, NULL };
    int rc;

    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", free_port(AF_INET));
    snprintf(data_arg, sizeof data_arg, "--data-dir=%s", t->data);
    rc = tided_run_to_exit(t, flags, env);
    if (rc != 2) fail_msg("%s: tided should exit 2; it exited %d. Its log:\n%s", what, rc, log_tail(t));
    if (!log_contains(t, part)) fail_msg("%s: the message should say '%s'. Its log:\n%s", what, part, log_tail(t));
    if (th_exists(t->data)) fail_msg("%s: a refused start must make no store (%s)", what, t->data);
}

static void a_token_file_others_can_read_missing_or_empty_stops_tided_with_exit_2(void **state)
{
    char tok[700], tok_env[800], fix[1700];
    char *env[] = { tok_env, NULL };
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tok, sizeof tok, t.dir, "admin.token");
    snprintf(tok_env, sizeof tok_env, "TIDE_ADMIN_TOKEN_FILE=%s", tok);
    put_secret(tok, "readable-admin-token", 0644);
    snprintf(fix, sizeof fix, "admin_token_file %s (env TIDE_ADMIN_TOKEN_FILE): mode 0644 lets every user "
             "read the token; make it private to its owner: chmod 600 %s", tok, tok);
    refused_at_startup(&t, env, fix, "a 0644 token file");
    if (log_contains(&t, "readable-admin-token")) fail_msg("the refusal must not show the token");
    put_secret(tok, "", 0600);
    refused_at_startup(&t, env, "empty (the file must hold the token)", "an empty token file");
    assert_int_equal(unlink(tok), 0);
    refused_at_startup(&t, env, "cannot open it: No such file or directory", "a missing token file");
    tided_cleanup(&t);
}

/* ---- the store workers (issue 15) ------------------------------------------ */

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

/* Issue 15: a PUT and a GET the node cache cannot answer run on a store
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

/* Issue 15: the store queue is bounded, and a quarter of it is kept for
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

/* Issue 15: a queued PUT's copy of its body counts against
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

/* Issue 15: a PUT ?sync=1 is answered only after its put and its sync:
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

/* Issue 15: a stop with store jobs queued and the worker held at its gate
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

/* Issue 15: a client that goes away while its PUT is at a worker (one
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

/* Issue 15: jobs a store worker takes as one batch are each answered on
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

/* Issue 15: the store jobs of one turn of the loop are spread over the
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

/* Issue 15: a stop while a worker is inside a batch. Key 80's PUT runs
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
    const struct CMUnitTest shared_tests[] = {
        cmocka_unit_test(healthz_answers_ok),
        cmocka_unit_test(a_put_answers_201_and_a_second_put_of_the_same_key_409),
        cmocka_unit_test(a_get_returns_the_value_with_its_length_and_head_returns_no_body),
        cmocka_unit_test(keys_in_upper_case_hex_name_the_same_object),
        cmocka_unit_test(a_key_never_stored_is_404),
        cmocka_unit_test(a_key_of_the_wrong_length_or_not_hex_is_400),
        cmocka_unit_test(a_put_with_an_empty_body_or_an_unknown_query_is_400),
        cmocka_unit_test(a_wrong_method_is_405_with_allow_and_an_unknown_path_404),
        cmocka_unit_test(a_body_over_max_object_size_is_413_by_content_length_and_by_chunks),
        cmocka_unit_test(a_request_target_over_1024_bytes_is_414),
        cmocka_unit_test(headers_over_h2os_limit_are_refused_and_tided_keeps_serving),
        cmocka_unit_test(admin_sweep_needs_the_bearer_token_and_returns_the_report),
        cmocka_unit_test(rotate_needs_the_token_refuses_a_bad_body_and_is_409_without_generations),
        cmocka_unit_test(can_delete_reads_and_sets_the_allowance_and_refuses_bad_text),
        cmocka_unit_test(rotations_and_status_say_online_delete_is_off),
        cmocka_unit_test(status_reports_the_store_caches_memory_and_sweeps_as_json),
        cmocka_unit_test(two_content_lengths_are_400_and_nothing_after_them_is_read),
        cmocka_unit_test(a_content_length_over_max_object_size_is_413_before_the_body),
        cmocka_unit_test(bytes_that_are_not_utf8_in_path_query_or_method_get_their_status_and_escaped_json),
        cmocka_unit_test(the_query_takes_sync_once_as_0_or_1_and_anything_else_is_400_naming_it),
        cmocka_unit_test(admin_heap_needs_the_token_and_is_malloc_info_xml_under_glibc),
    };
    const struct CMUnitTest own_tests[] = {
        cmocka_unit_test(admin_sweep_is_403_when_no_admin_token_is_configured),
        cmocka_unit_test(admin_rotate_with_keep_lists_answers_every_field_and_deletes_the_rest),
        cmocka_unit_test(a_keep_list_in_pieces_then_rotate_expect_keeps_exactly_those_keys),
        cmocka_unit_test(a_put_with_sync_survives_kill_9_and_is_served_after_restart),
        cmocka_unit_test(the_cli_reads_a_running_nodes_store),
        cmocka_unit_test(sigterm_commits_every_acknowledged_put_and_exits_0),
        cmocka_unit_test(a_bad_flag_or_value_exits_2_naming_it),
        cmocka_unit_test(help_reads_like_a_man_page_and_version_names_tided),
        cmocka_unit_test(a_second_tided_on_the_same_data_dir_exits_1_saying_busy),
        cmocka_unit_test(a_full_disk_is_507),
        cmocka_unit_test(a_store_tided_cannot_open_is_named_with_its_reason),
        cmocka_unit_test_teardown(a_node_restarts_on_a_full_disk_serves_reads_and_takes_writes_when_space_returns,
                                  full_disk_teardown),
        cmocka_unit_test(tided_serves_ipv6_loopback),
        cmocka_unit_test_teardown(every_key_size_from_1_to_1000_bytes_is_served_by_put_get_and_head,
                                  own_srv_teardown),
        cmocka_unit_test_teardown(the_access_log_escapes_request_bytes_to_one_line_of_ascii, own_srv_teardown),
    };
    const struct CMUnitTest limits_tests[] = {
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
        cmocka_unit_test(sighup_reloads_the_log_level_and_loses_nothing),
        cmocka_unit_test(sighup_with_a_config_now_refused_changes_nothing_and_sigterm_still_stops_tided),
        cmocka_unit_test(sigquit_stops_like_sigterm),
        cmocka_unit_test(a_tided_that_cannot_bind_creates_no_store),
        cmocka_unit_test(a_stop_signal_during_the_stores_open_ends_startup),
        cmocka_unit_test(the_synopsis_shows_only_forms_tided_accepts_and_help_names_every_signal),
        cmocka_unit_test(listening_beyond_loopback_warns_that_status_is_open),
        cmocka_unit_test(the_memory_level_sheds_writes_then_connections_and_loses_nothing),
        cmocka_unit_test(sighup_keeps_the_limit_when_the_budgets_in_force_do_not_fit_the_new_one),
    };
    const struct CMUnitTest metrics_tests[] = {
        cmocka_unit_test(metrics_answers_only_the_token_in_either_header_form),
        cmocka_unit_test(http_allocation_totals_grow_by_the_connections_and_bodies_it_took),
        cmocka_unit_test(without_a_token_metrics_is_always_401_unless_public),
        cmocka_unit_test(request_metrics_count_every_answer_by_method_code_and_route),
        cmocka_unit_test(build_info_names_the_version_revision_and_allocator),
        cmocka_unit_test(a_real_scrape_passes_promtool_under_glibc),
        cmocka_unit_test(a_real_scrape_passes_promtool_under_jemalloc),
        cmocka_unit_test(memory_on_the_page_adds_up_to_the_anonymous_rss),
        cmocka_unit_test(the_jemalloc_build_proves_its_background_thread_is_on),
        cmocka_unit_test(tide_doctor_names_the_unbounded_knob_of_a_running_node),
        cmocka_unit_test(a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query),
        cmocka_unit_test(admin_heap_under_jemalloc_is_a_prof_dump_with_profiling_and_409_without),
    };
    const struct CMUnitTest systemd_tests[] = {
        cmocka_unit_test(under_systemd_ready_comes_when_healthz_answers_then_reloading_and_stopping),
        cmocka_unit_test(the_watchdog_is_pinged_when_watchdog_usec_is_set_for_our_pid_only),
        cmocka_unit_test(a_stuck_event_loop_stops_the_watchdog_pings_until_it_turns_again),
        cmocka_unit_test(sighup_while_draining_sends_no_reloading_or_ready),
        cmocka_unit_test(check_config_warns_as_a_start_does_and_exits_1_when_stdout_fails),
        cmocka_unit_test(state_directory_holds_the_store_unless_a_data_dir_is_given),
        cmocka_unit_test(a_token_file_and_a_credential_are_the_tokens_and_never_logged),
        cmocka_unit_test(a_token_file_others_can_read_missing_or_empty_stops_tided_with_exit_2),
    };
    const struct CMUnitTest store_tests[] = {
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
    cmocka_set_test_filter(getenv("TIDE_HTTP_FILTER"));   /* e.g. TIDE_HTTP_FILTER='*key_size*' */
    failed = th_run_group("tided, one shared server", shared_tests, group_setup, group_teardown, th_teardown);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed += th_run_group("tided, a server per test", own_tests, NULL, NULL, th_teardown);
    failed += th_run_group("tided, connections and signals", limits_tests, NULL, NULL, th_teardown);
    failed += th_run_group("tided, /metrics", metrics_tests, NULL, NULL, th_teardown);
    failed += th_run_group("tided, store workers", store_tests, NULL, NULL, th_teardown);
    failed += th_run_group("tided under systemd", systemd_tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
