/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_helpers.h: what the tests of tided over HTTP share (the
 * tests/test_http_*.c files; the Makefile links tests/http_helpers.c into
 * those binaries only).
 *
 * Every test talks to a real tided process started from $TIDE_BIN_DIR
 * (default ./bin; `make asan` points it at the sanitizer build) on a free
 * loopback port with a fresh data directory, and waits for /healthz before
 * it starts. Requests go through libcurl (http()); raw sockets send what
 * curl will not (raw_exchange: headers over h2o's limit, a broken chunked
 * body; connect_from: a client on any address of 127/8).
 *
 * Several files share one server per binary (group_setup, `shared`)
 * started with a small max_object_size (MAX_OBJECT) and TIDE_ADMIN_TOKEN
 * set; the tests about process life and limits start their own.
 *
 * Nothing waits by sleeping: every wait polls a condition (a health
 * check, a child's exit, a log line) with a bounded deadline, and a
 * deadline that passes fails the test with what was expected and the
 * server's log.
 *
 * Every tided (and Prometheus) is started with th_fork, so it dies with
 * the test binary even when that crashes, and every test has th_teardown,
 * which stops what a failed test left running and removes its scratch
 * directories (see "processes a test starts" and "scratch directories" in
 * helpers.h). Not thread-safe: call these from the thread that runs the
 * tests (some return static buffers: url, log_tail, obj_path).
 */
#ifndef TIDE_TEST_HTTP_HELPERS_H
#define TIDE_TEST_HTTP_HELPERS_H

#include <curl/curl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ADMIN_TOKEN "test-admin-token-5f1c"
#define AUTH        "Authorization: Bearer " ADMIN_TOKEN
#define MAX_OBJECT  65536     /* the shared server's max_object_size */
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

/* A loopback port of `family` (AF_INET, AF_INET6) free now, or -1. */
int free_port(int family);
/* The server's log, for failure messages (static buffer, its last bytes). */
const char *log_tail(const tided *t);
/* 1 when t's log holds `text`. */
int log_contains(const tided *t, const char *text);
/* Poll t's log for `text` for up to ms; 1 when it came. */
int log_waits_for(const tided *t, const char *text, int ms);
/* Start argv (NULL-terminated) with `env` (NULL-terminated NAME=VALUE,
 * added to ours; "WATCHDOG_PID=" alone becomes the child's own pid, as
 * systemd sets it) and stdout/stderr into t->log, with th_fork. */
void spawn(tided *t, char *const argv[], char *const env[]);
/* Wait up to ms for the child to exit; 1 when it did (status in t). */
int wait_exit(tided *t, int ms);
/* "http://HOST:PORT" + path (static buffer). */
char *url(const tided *t, const char *path);
/* Wait for /healthz to say ok, or the child to exit. 0 when healthy. */
int wait_healthy(tided *t);
/* Make a scratch directory for t (data under it) once; keep it on restart. */
void tided_prepare(tided *t);
/* Start tided on t's data dir (none with t->no_data_dir) and a free port
 * with `flags` (NULL-terminated, may be NULL) and `env`, without waiting;
 * its path goes to bin. */
void tided_launch(tided *t, const char *const *flags, char *const env[], char *bin, size_t cap);
/* Start tided as tided_launch does and wait until it is healthy (a lost
 * port race is retried); fails the test with its log otherwise. */
void tided_start(tided *t, const char *const *flags, char *const env[]);
/* Send sig and wait for the exit; fails when it does not come. */
void tided_signal_and_reap(tided *t, int sig);
/* SIGKILL t if it still runs, remove its scratch directory, zero t. */
void tided_cleanup(tided *t);
/* Run tided with `flags` to its exit (it must exit within STOP_MS). Returns
 * the exit status, or -1 when killed by a signal. */
int tided_run_to_exit(tided *t, const char *const *flags, char *const env[]);

/* ---- HTTP through libcurl --------------------------------------------- */

typedef struct resp {
    long   status;
    char  *body;              /* NUL-terminated */
    size_t len;
    char   headers[4096];
    int    curl_rc;
} resp;

/* One request. body may be NULL; chunked sends it with Transfer-Encoding:
 * chunked; extra is more header lines ('\n' between two) or NULL. The
 * caller frees the answer with resp_free. */
resp http(const tided *t, const char *method, const char *path, const void *body, size_t len, int chunked,
          const char *extra);
void resp_free(resp *r);

#define expect_status(r, want, what) do { \
        if ((r).status != (want)) \
            fail_msg("%s: expected HTTP %d, got %ld (curl: %s); body: %s", what, (int)(want), (r).status, \
                     curl_easy_strerror((CURLcode)(r).curl_rc), (r).body ? (r).body : ""); \
    } while (0)

/* The body is {"error": code, "detail": "..."}. */
void expect_error_json(const resp *r, const char *code, const char *what);
/* key(i) of the fixture formula, 32 bytes, as 64 hex digits into out[65]. */
void key_hex(uint64_t i, char *out);
/* "/v1/objects/" + key_hex(i) + query (may be NULL); static buffer. */
char *obj_path(uint64_t i, const char *query);
/* GET /metrics with `header` (may be NULL); fails unless the status is
 * `want`. The body, malloc'd. */
char *scrape_with(tided *t, const char *header, long want);
/* The integer at a path of /v1/status's JSON ("http", "connections_evicted"). */
json_int_t status_int(const tided *t, const char *a, const char *b, const char *c);

/* ---- raw sockets -------------------------------------------------------- */

/* Send `len` bytes and read the answer until the server closes or 10 s
 * pass; the answer (NUL-terminated, at most cap - 1 bytes) goes to out. */
void raw_exchange(const tided *t, const void *req, size_t len, char *out, size_t cap);
/* A TCP connection to t from the loopback address `src` ("127.0.0.9"):
 * all of 127/8 is loopback, so tests can be several clients. */
int connect_from(const tided *t, const char *src);
/* Send all of p; fails the test when the peer closes. */
void send_all(int fd, const void *p, size_t len);
/* Read what fd receives until the peer closes (returns 1) or `ms` pass
 * (returns 0); the bytes (NUL-terminated) go to out. */
int read_until_closed(int fd, char *out, size_t cap, int ms);
/* Whether fd has an answer (or a close) waiting now, without blocking. */
int has_answer(int fd, char *out, size_t cap);
/* Read one response (its head, and the body its Content-Length says) from
 * fd into out; 1 when it came whole within ms. */
int read_response(int fd, char *out, size_t cap, int ms);

/* ---- commands and the build under test ---------------------------------- */

/* Run a command, capturing its output (stdout and stderr) into out. Returns
 * its exit status, -1 when it did not exit normally. */
int run_capture(const char *cmd, char *out, size_t cap);
/* 1 when th_bin_dir()'s tided is a sanitizer build (its allocator then
 * serves malloc, and no other can be put in front of it). */
int tided_is_sanitized(void);

/* ---- the shared server -------------------------------------------------- */

/* The server of a binary's first group: group_setup starts it with
 * --max-object-size=65536 (MAX_OBJECT) and TIDE_ADMIN_TOKEN=ADMIN_TOKEN
 * (and initialises libcurl), spared by th_teardown; group_teardown stops
 * it with SIGTERM and cleans libcurl up. */
extern tided shared;
int group_setup(void **state);
int group_teardown(void **state);

/* TIDE_HTTP_FILTER=PATTERN runs only the tests whose names match (cmocka's
 * filter: '*' and '?'), e.g. TIDE_HTTP_FILTER='*key_size*'. */
void http_filter_from_env(void);

#endif
