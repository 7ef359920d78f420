/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rotation_kill9.c: a tided with online delete survives SIGKILL at any
 * moment, rotations included, and loses nothing acknowledged while its
 * retention says it must be there.
 *
 * The real bin/tided runs on 127.0.0.1 (a free port) over a scratch data
 * directory with `--online-delete 200 --generations 2` (a rotation every
 * 200 objects written into the newest generation). Three threads talk to
 * it: a writer PUTs objects one by one with ?sync=1 (a 201 then means
 * durable: docs/HTTP.md) and records each acknowledged one with the
 * rotation count known before it was sent; a rotator POSTs
 * /v1/admin/rotate in a loop, so that many kills land inside a rotation;
 * a reader GETs acknowledged objects of older spans (those a GET copies
 * forward into the newest generation) while the rotations and the kill
 * happen. All raise a shared lower bound of the rotation count from what
 * the node answers (/v1/status). The threads never call cmocka (its
 * failure longjmps to the main thread's stack): they record the first
 * failure (load_fail) and the main thread fails after joining them. After
 * a random delay (in every other round, just after an admin rotation was
 * sent) the test kills tided with SIGKILL, and checks:
 *
 *   1. the manifest reads back and every generation it names is there
 *      (before any restart: what the crash left);
 *   2. tided starts again (with the object trigger off, `--online-delete
 *      manual`, so that nothing rotates while it is checked), and then no
 *      gen-* directory is left that the manifest does not name, and
 *      /v1/status shows the manifest's rotations and generations;
 *   3. a sample of objects read through HTTP: those the rule says must be
 *      there answer 200 with their exact bytes, any other 200 is exact too;
 *   4. after a clean stop (exit 0), `tide verify` passes on every
 *      generation (and on the whole directory when tide verify knows
 *      generations), and every object ever sent is read from the
 *      generations' stores directly, newest first: present and byte-exact
 *      when the rule says so, absent or byte-exact otherwise;
 *   5. tided starts again with the object trigger on, for the next round.
 *
 * The rule (docs/ROTATION.md): with G generations an object last written or
 * read in span s (s = rotations done before it, plus one) is readable
 * through span s+G-1, so it must be present while the rotation count R is
 * at most s+G-2. The span of a write is not known exactly around a
 * rotation; the test takes the lower bound of the count before the PUT was
 * sent (the earliest span it can be in), so it asserts only what must be
 * there. A read in step 3 touches (copies forward) the object at a count
 * known exactly (nothing rotates then), and the clean stop makes the copy
 * durable, so the test raises the object's span to that count; reads in
 * step 4 open the stores directly and copy nothing.
 *
 * Reads under load (the copies forward a kill can hit). A GET that answers
 * 200 is a read in the span it was served in, which is at least R+1 when
 * /v1/status showed R rotations before the GET was sent (the count only
 * grows, and status shows the in-memory manifest, switched only after the
 * new one is on disk). So by the rule the object is readable while the
 * count is at most R+G-1: its floor may rise to R, exactly as for a write.
 * But a copy forward is an insert into the newest generation's pool,
 * durable at its next commit; a kill before that commit loses the copy,
 * and then only the older retention holds. The test counts a read only
 * once a later PUT ?sync=1 on the same node answered 201, where "later"
 * means sent after the GET returned: then its sync (tide_gens_sync syncs
 * every open store, the copy's generation included) began after the
 * copy's insert, so the copy is durable. One atomic ticket counter orders
 * the two: the reader takes a ticket after the GET returned, the writer
 * before it sends each PUT, and a read is durable when the largest ticket
 * of a PUT answered 201 is above the read's. Being sent later is stricter
 * than being answered later (a sync that began before the insert may end
 * after the GET): the test asks no more than the rule promises. The
 * floors are raised after the threads are joined, before the checks.
 * A 404 under load is checked too, with an upper bound: with A the count
 * /v1/status shows after the 404, the GET was served at a count of at most
 * A, plus at most one rotation in flight (one at a time) whose hide step
 * may already make its dropped generation read as absent; so a 404 fails
 * the test only when the object must be present at count A+1.
 *
 * tided logs one line per unnamed generation its open removes (a rotation
 * the kill interrupted after its create step); each round prints how many
 * it saw in the log, beside whether an admin rotation was in flight at the
 * kill, so a reader of the CI log sees the kills landing inside rotations
 * (printed, not asserted: where a kill lands is timing).
 *
 * Rounds: TIDE_ROTATION_KILL9_ROUNDS (default 20); the seed is printed, and
 * TIDE_TEST_SEED repeats a run. Every tided is started with th_fork (it
 * dies with this binary) and killed and reaped whatever the outcome.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/http.h"
#include "gen/manifest.h"
#include "helpers.h"
#include "io/io.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/hex.h"

#define KEY_SIZE     32
#define VMAX         1500
#define GENS         2
#define TRIGGER      "200"
#define MAX_OBJECTS  200000
#define START_MS     30000
#define STOP_MS      30000
#define SAMPLE_READS 100
#define TOKEN        "kill9-admin-token-0123456789"

static size_t obj_len(uint64_t i) { return th_len(i, 1, VMAX); }

/* ---- what the test knows of every object ---- */

enum { O_UNSENT = 0, O_SENT, O_ACKED, O_GONE };

/* Where an object's floor last came from (for the failure message). */
enum { F_WRITE = 0, F_CHECK_READ, F_LOAD_READ };
static const char *const floor_from[] = {
    "its acknowledged PUT",
    "a GET in the check phase (made durable by the clean stop)",
    "a GET under load, made durable by a later PUT ?sync=1",
};

typedef struct model {
    _Atomic uint8_t  state[MAX_OBJECTS];
    _Atomic uint8_t  from[MAX_OBJECTS];   /* F_*: what set floor[] */
    _Atomic uint64_t floor[MAX_OBJECTS];  /* a lower bound of the rotations done before
                                             its last write or durable read */
    _Atomic uint64_t next;                /* the next object id to send */
    _Atomic uint64_t rotations_seen;      /* a lower bound of the node's rotation count */
    _Atomic uint64_t ticket;              /* orders PUT sends and GET returns */
    _Atomic uint64_t synced;              /* the largest ticket of a PUT ?sync=1 answered 201 */
} model;

static model M;

static void raise_to(_Atomic uint64_t *v, uint64_t r)
{
    uint64_t cur = atomic_load(v);
    while (r > cur && !atomic_compare_exchange_weak(v, &cur, r)) {}
}

static void see_rotations(uint64_t r) { raise_to(&M.rotations_seen, r); }

/* Must object i be present while the rotation count is R? (the rule) */
static int must_be_present(uint64_t i, uint64_t R)
{
    return atomic_load(&M.state[i]) == O_ACKED && R <= atomic_load(&M.floor[i]) + GENS - 1;
}

/* ---- one tided ---- */

typedef struct node {
    pid_t pid;
    int   reaped, status, port;
    char  base[2048], data[2100], log[2100];
    char  url[96];
} node;

static int free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

static int node_wait_exit(node *n, int ms)
{
    double end = th_now_ms() + ms;

    while (!n->reaped) {
        if (th_waitpid(n->pid, &n->status, WNOHANG) == n->pid) { n->reaped = 1; break; }
        if (th_now_ms() > end) return 0;
        poll(NULL, 0, 5);
    }
    return 1;
}

static const char *node_log_tail(const node *n)
{
    static char buf[3000];
    char *all = th_read_text(n->log);
    size_t len = all ? strlen(all) : 0;

    snprintf(buf, sizeof buf, "%s", all ? all + (len > 2900 ? len - 2900 : 0) : "(no log)");
    free(all);
    return buf;
}

/* A keep-alive client that sends the admin token (src/client/http.h), or
 * NULL. No cmocka assertion here: the load threads call it, and a cmocka
 * failure longjmps to the main thread's stack. */
static tide_http_client *client_new(void)
{
    static const char *const headers[] = { "Expect:", "Authorization: Bearer " TOKEN, NULL };
    const tide_http_client_opts o = { headers, 20000, 5000 };
    tide_http_client *c = NULL;

    if (tide_http_client_new(&c, &o) != 0) return NULL;
    return c;
}

/* client_new() for the main thread: fails the test when it cannot. */
static tide_http_client *client_must(void)
{
    tide_http_client *c = client_new();

    if (c == NULL) fail_msg("tide_http_client_new should succeed: %s", tide_last_error());
    return c;
}

static size_t discard(char *p, size_t size, size_t nmemb, void *arg)
{
    (void)p; (void)arg;
    return size * nmemb;
}

/* POST url with an empty body and the admin token (the client part has no
 * POST): the status, 0 when no answer came. */
static long post_empty(CURL *c, const char *url)
{
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer " TOKEN);
    long status = 0;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    return status;
}

/* Start tided over n->data with the object trigger `trigger`; 0 when it
 * answers /healthz, -1 when it exited or did not answer in time (killed
 * then, the log kept for the message). */
static int node_start(node *n, const char *trigger)
{
    static char env_token[] = "TIDE_ADMIN_TOKEN=" TOKEN;
    char bin[600], listen[64], url[160];
    const char *argv[24];
    int k = 0;
    double end;
    tide_http_client *c;

    n->port = free_port();
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    snprintf(listen, sizeof listen, "127.0.0.1:%d", n->port);
    snprintf(n->url, sizeof n->url, "http://127.0.0.1:%d", n->port);
    argv[k++] = bin;
    argv[k++] = "--data-dir"; argv[k++] = n->data;
    argv[k++] = "--listen"; argv[k++] = listen;
    argv[k++] = "--http-threads"; argv[k++] = "2";
    argv[k++] = "--online-delete"; argv[k++] = trigger;
    argv[k++] = "--generations"; argv[k++] = GENS == 2 ? "2" : "3";
    argv[k++] = "--back-off-milliseconds"; argv[k++] = "1";
    argv[k] = NULL;
    n->reaped = 0;
    n->pid = th_fork();
    assert_true(n->pid >= 0);
    if (n->pid == 0) {
        int fd = open(n->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        putenv(env_token);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    c = client_must();
    snprintf(url, sizeof url, "%s/healthz", n->url);
    for (end = th_now_ms() + START_MS; th_now_ms() < end;) {
        if (tide_http_client_get(c, url, NULL) == 200) { tide_http_client_free(c); return 0; }
        if (node_wait_exit(n, 0)) break;
        poll(NULL, 0, 10);
    }
    tide_http_client_free(c);
    if (!n->reaped) { kill(n->pid, SIGKILL); node_wait_exit(n, STOP_MS); }
    return -1;
}

static void node_kill(node *n, int sig)
{
    if (n->pid <= 0 || n->reaped) return;
    kill(n->pid, sig);
    if (!node_wait_exit(n, STOP_MS)) {
        kill(n->pid, SIGKILL);
        node_wait_exit(n, STOP_MS);
        fail_msg("tided should exit within %d ms of signal %d; it did not. Its log:\n%s", STOP_MS, sig,
                 node_log_tail(n));
    }
}

/* ---- the load: a writer, a rotator and a reader ---- */

#define MAX_READS 65536

/* A GET under load that answered 200: object i, the rotations the node
 * reported before it was sent, the ticket taken after it returned. */
typedef struct load_read { uint64_t i, rotations, ticket; } load_read;

typedef struct load {
    node       *n;
    atomic_int  stop;
    atomic_int  rotating;                 /* an admin rotation is in flight */
    _Atomic uint64_t acked, admin_rotations;
    _Atomic uint64_t gets, found, checked_absent;
    load_read   reads[MAX_READS];         /* the reader's alone until it is joined */
    uint64_t    nreads;
    atomic_int  failed;                   /* a thread's failure, asserted after the join */
    pthread_mutex_t fail_mu;
    char        fail_msg[1024];
    pthread_t   writer, rotator, reader;
} load;

/* Record a load thread's failure (the first one's message is kept); the
 * main thread fails the test after joining: cmocka must not longjmp out
 * of another thread. */
static void load_fail(load *l, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&l->fail_mu);
    if (!atomic_load(&l->failed)) {
        va_start(ap, fmt);
        vsnprintf(l->fail_msg, sizeof l->fail_msg, fmt, ap);
        va_end(ap);
        atomic_store(&l->failed, 1);
    }
    pthread_mutex_unlock(&l->fail_mu);
    atomic_store(&l->stop, 1);
}

/* GET /v1/status: its online_delete object's rotations, or -1. */
static long long status_rotations(tide_http_client *c, const node *n, json_t **status_out)
{
    char url[160];
    tide_http_body b = { .keep = 1 };
    json_t *doc, *od;
    long long r = -1;

    snprintf(url, sizeof url, "%s/v1/status", n->url);
    if (tide_http_client_get(c, url, &b) == 200 && (doc = json_loadb(b.data, b.len, 0, NULL)) != NULL) {
        od = json_object_get(doc, "online_delete");
        if (json_is_integer(json_object_get(od, "rotations"))) r = json_integer_value(json_object_get(od, "rotations"));
        if (status_out) *status_out = doc;
        else json_decref(doc);
    }
    free(b.data);
    return r;
}

static void *writer_main(void *arg)
{
    load *l = arg;
    tide_http_client *c = client_new();
    uint8_t key[KEY_SIZE], *val = malloc(VMAX);
    char hex[2 * KEY_SIZE + 1], url[256];

    if (c == NULL || val == NULL) load_fail(l, "writer: no HTTP client or no memory: %s", tide_last_error());
    while (c && val && !atomic_load(&l->stop)) {
        uint64_t i = atomic_fetch_add(&M.next, 1), floor = atomic_load(&M.rotations_seen), ticket;
        long st;
        if (i >= MAX_OBJECTS) break;
        th_key(i, KEY_SIZE, key);
        th_value(i, obj_len(i), val);
        tide_hex_encode(key, KEY_SIZE, hex);
        snprintf(url, sizeof url, "%s/v1/objects/%s?sync=1", l->n->url, hex);
        atomic_store(&M.floor[i], floor);
        atomic_store(&M.from[i], F_WRITE);
        atomic_store(&M.state[i], O_SENT);
        ticket = atomic_fetch_add(&M.ticket, 1);     /* taken before the PUT goes out */
        st = tide_http_client_put(c, url, val, obj_len(i), NULL);
        if (st == 201) {
            atomic_store(&M.state[i], O_ACKED);
            atomic_fetch_add(&l->acked, 1);
            raise_to(&M.synced, ticket);
        } else if (st == 0) {
            break;                        /* killed */
        }
        if ((i & 15) == 0) {
            long long r = status_rotations(c, l->n, NULL);
            if (r >= 0) see_rotations((uint64_t)r);
        }
    }
    free(val);
    tide_http_client_free(c);
    return NULL;
}

static void *rotator_main(void *arg)
{
    load *l = arg;
    CURL *c = curl_easy_init();
    tide_http_client *h = client_new();
    char url[160];
    th_rng rng;

    if (c == NULL || h == NULL) load_fail(l, "rotator: no curl handle or HTTP client: %s", tide_last_error());
    th_rng_init(&rng, (uint64_t)l->n->port);
    snprintf(url, sizeof url, "%s/v1/admin/rotate", l->n->url);
    while (c && h && !atomic_load(&l->stop)) {
        long st, r;
        atomic_store(&l->rotating, 1);
        st = post_empty(c, url);
        atomic_store(&l->rotating, 0);
        if (st == 0) break;               /* killed */
        if (st == 200) atomic_fetch_add(&l->admin_rotations, 1);
        if ((r = (long)status_rotations(h, l->n, NULL)) >= 0) see_rotations((uint64_t)r);
        poll(NULL, 0, (int)th_rng_below(&rng, 400));   /* the object trigger fires too */
    }
    tide_http_client_free(h);
    if (c) curl_easy_cleanup(c);
    return NULL;
}

/* An acknowledged object of an older span still inside its retention (a
 * GET copies it forward), else any acknowledged one; -1 if none. */
static int64_t reader_pick(th_rng *rng)
{
    uint64_t next = atomic_load(&M.next), seen = atomic_load(&M.rotations_seen);
    int64_t any = -1;

    for (int tries = 0; next > 0 && tries < 16; tries++) {
        uint64_t i = th_rng_below(rng, next < MAX_OBJECTS ? next : MAX_OBJECTS);
        if (atomic_load(&M.state[i]) != O_ACKED) continue;
        uint64_t f = atomic_load(&M.floor[i]);
        if (f < seen && f + GENS - 1 >= seen) return (int64_t)i;
        any = (int64_t)i;
    }
    return any;
}

/* One GET under load of object i: the rotation count before (a lower bound
 * of the read's span) and after (an upper bound of the count while it was
 * served). 0 to go on, -1 when the node is gone. */
static int reader_get(load *l, tide_http_client *c, uint64_t i, uint8_t *want)
{
    uint8_t key[KEY_SIZE];
    char hex[2 * KEY_SIZE + 1], url[256];
    tide_http_body b = { .keep = 1 };
    long long before, after;
    long st;
    int rc = 0;

    if ((before = status_rotations(c, l->n, NULL)) < 0) return -1;
    see_rotations((uint64_t)before);
    th_key(i, KEY_SIZE, key);
    tide_hex_encode(key, KEY_SIZE, hex);
    snprintf(url, sizeof url, "%s/v1/objects/%s", l->n->url, hex);
    st = tide_http_client_get(c, url, &b);
    atomic_fetch_add(&l->gets, 1);
    if (st == 200) {
        uint64_t ticket = atomic_fetch_add(&M.ticket, 1);   /* taken after the GET returned */
        th_value(i, obj_len(i), want);
        if (b.len != obj_len(i) || memcmp(b.data, want, b.len) != 0)
            load_fail(l, "GET under load of object %llu: expected its %zu bytes exactly, got %zu bytes that differ",
                      (unsigned long long)i, obj_len(i), b.len);
        atomic_fetch_add(&l->found, 1);
        if (l->nreads < MAX_READS) l->reads[l->nreads++] = (load_read){ i, (uint64_t)before, ticket };
    } else if (st == 404 && (after = status_rotations(c, l->n, NULL)) >= 0) {
        /* Served at a count of at most `after`, plus one rotation that may
         * have hidden its oldest generation (one rotation at a time). */
        atomic_fetch_add(&l->checked_absent, 1);
        if (must_be_present(i, (uint64_t)after + 1))
            load_fail(l, "GET under load of object %llu (floor %llu from %s, G=%d): 404 with at most %lld "
                      "rotations done and one in flight; the rule says it is there", (unsigned long long)i,
                      (unsigned long long)atomic_load(&M.floor[i]), floor_from[atomic_load(&M.from[i])], GENS, after);
    } else if (st == 0) {
        rc = -1;                          /* killed */
    }
    free(b.data);
    return rc;
}

static void *reader_main(void *arg)
{
    load *l = arg;
    tide_http_client *c = client_new();
    uint8_t *want = malloc(VMAX);
    th_rng rng;

    if (c == NULL || want == NULL) load_fail(l, "reader: no HTTP client or no memory: %s", tide_last_error());
    th_rng_init(&rng, (uint64_t)l->n->port * 7919u + 1);
    while (c && want && !atomic_load(&l->stop)) {
        int64_t i = reader_pick(&rng);
        if (i < 0) { poll(NULL, 0, 2); continue; }
        if (reader_get(l, c, (uint64_t)i, want) != 0) break;
        poll(NULL, 0, 1);                 /* leave the node's two HTTP threads to the writer too */
    }
    free(want);
    tide_http_client_free(c);
    return NULL;
}

/* After the join: every GET under load that a later PUT ?sync=1 made
 * durable raises its object's floor to the count read before the GET. */
static uint64_t load_reads_apply(load *l)
{
    uint64_t synced = atomic_load(&M.synced), durable = 0;

    for (uint64_t k = 0; k < l->nreads; k++) {
        const load_read *r = &l->reads[k];
        if (synced <= r->ticket) continue;                 /* no PUT sent after it was answered */
        durable++;
        if (atomic_load(&M.state[r->i]) == O_ACKED && atomic_load(&M.floor[r->i]) < r->rotations) {
            atomic_store(&M.floor[r->i], r->rotations);
            atomic_store(&M.from[r->i], F_LOAD_READ);
        }
    }
    return durable;
}

/* ---- the checks ---- */

typedef struct round_ctx {
    uint64_t seed;
    unsigned round;
    node    *n;
    tide_gen_manifest m;
    uint64_t asserted, read_back, touched;
} round_ctx;

#define FAIL(x, fmt, ...) \
    fail_msg("seed %llu round %u: " fmt, (unsigned long long)(x)->seed, (x)->round, ##__VA_ARGS__)

/* Check 1: the manifest reads back and names only generations present. */
static void check_manifest(round_ctx *x, const char *when)
{
    int rc = tide_gen_manifest_read(tide_io_posix(), x->n->data, &x->m);
    char path[2200];

    if (rc) FAIL(x, "%s: the manifest should read back, got %s: %s", when, tide_strerror(rc), tide_last_error());
    for (uint32_t g = 0; g < x->m.count; g++) {
        snprintf(path, sizeof path, "%s/%s/nudb.dat", x->n->data, x->m.gens[g].dir);
        if (!th_exists(path)) FAIL(x, "%s: the manifest names %s, whose nudb.dat is missing", when, x->m.gens[g].dir);
        snprintf(path, sizeof path, "%s/%s/nudb.key", x->n->data, x->m.gens[g].dir);
        if (!th_exists(path)) FAIL(x, "%s: the manifest names %s, whose nudb.key is missing", when, x->m.gens[g].dir);
    }
}

/* Check 2: after open, every gen-* directory is named by the manifest, and
 * /v1/status agrees with it. */
static void check_reconciled(round_ctx *x, tide_http_client *c)
{
    DIR *d = opendir(x->n->data);
    struct dirent *e;
    json_t *status = NULL, *gens;
    long long r;

    check_manifest(x, "after the restart");
    if (d == NULL) FAIL(x, "cannot list %s: %s", x->n->data, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        int named = 0;
        if (strncmp(e->d_name, "gen-", 4) != 0) continue;
        for (uint32_t g = 0; g < x->m.count; g++) named |= strcmp(x->m.gens[g].dir, e->d_name) == 0;
        if (!named) { closedir(d); FAIL(x, "after the restart, %s is there but the manifest does not name it", e->d_name); }
    }
    closedir(d);
    r = status_rotations(c, x->n, &status);
    if (r != (long long)x->m.rotations)
        FAIL(x, "/v1/status should show the manifest's %llu rotations, shows %lld", (unsigned long long)x->m.rotations, r);
    gens = json_object_get(json_object_get(status, "online_delete"), "generations");
    if (json_array_size(gens) != x->m.count)
        FAIL(x, "/v1/status should list the manifest's %u generations, lists %zu", x->m.count, json_array_size(gens));
    json_decref(status);
}

/* Check 3: a sample read through HTTP (nothing rotates meanwhile: the
 * object trigger is off and nobody asks). A 200 touches the object at
 * count R, which the clean stop makes durable. */
static void check_http_sample(round_ctx *x, tide_http_client *c, th_rng *rng)
{
    uint64_t next = atomic_load(&M.next), R = x->m.rotations;
    uint8_t key[KEY_SIZE], want[VMAX];
    char hex[2 * KEY_SIZE + 1], url[256];

    for (unsigned k = 0; next > 0 && k < SAMPLE_READS; k++) {
        uint64_t i = th_rng_below(rng, next);
        int must = must_be_present(i, R);
        tide_http_body b = { .keep = 1 };
        long st;
        if (atomic_load(&M.state[i]) == O_GONE || atomic_load(&M.state[i]) == O_UNSENT) continue;
        th_key(i, KEY_SIZE, key);
        th_value(i, obj_len(i), want);
        tide_hex_encode(key, KEY_SIZE, hex);
        snprintf(url, sizeof url, "%s/v1/objects/%s", x->n->url, hex);
        st = tide_http_client_get(c, url, &b);
        if (st == 200) {
            if (b.len != obj_len(i) || memcmp(b.data, want, b.len) != 0)
                FAIL(x, "GET of object %llu: expected its %zu bytes exactly, got %zu bytes that differ",
                     (unsigned long long)i, obj_len(i), b.len);
            if (atomic_load(&M.state[i]) == O_ACKED && atomic_load(&M.floor[i]) < R) {
                atomic_store(&M.floor[i], R);
                atomic_store(&M.from[i], F_CHECK_READ);
            }
            x->touched++;
        } else if (st == 404 && !must) {
            atomic_store(&M.state[i], O_GONE);     /* dropped: it never comes back */
        } else {
            FAIL(x, "GET of object %llu (at least %llu rotations done before %s, now %llu, G=%d) should be "
                 "200 with its bytes, got %ld: %.200s", (unsigned long long)i,
                 (unsigned long long)atomic_load(&M.floor[i]), floor_from[atomic_load(&M.from[i])],
                 (unsigned long long)R, GENS, st, b.data ? b.data : "");
        }
        x->asserted += must;
        free(b.data);
    }
}

/* 1 when `tide verify` takes a directory with generations (i12-cli's). */
static int verify_knows_generations(void)
{
    static int known = -1;
    char *out = NULL;

    if (known < 0) {
        th_run_tide("help verify", 1, &out);
        known = out && strstr(out, "generation") != NULL;
        free(out);
    }
    return known;
}

/* Check 4a: tide verify on every generation, and on the directory. */
static void check_verify(round_ctx *x)
{
    char args[2400], *out = NULL;
    int st;

    for (uint32_t g = 0; g < x->m.count; g++) {
        snprintf(args, sizeof args, "verify '%s/%s'", x->n->data, x->m.gens[g].dir);
        st = th_run_tide(args, 1, &out);
        if (st != 0) FAIL(x, "tide %s: expected exit status 0, got %d: %.600s", args, st, out);
        free(out);
    }
    if (!verify_knows_generations()) return;
    snprintf(args, sizeof args, "verify '%s'", x->n->data);
    st = th_run_tide(args, 1, &out);
    if (st != 0) FAIL(x, "tide %s: expected exit status 0, got %d: %.600s", args, st, out);
    free(out);
}

/* Check 4b: every object sent, read from the stores directly, newest
 * generation first (no copy-forward). */
static void check_stores(round_ctx *x)
{
    tide_store *s[TIDE_GEN_MAX] = { NULL };
    uint64_t next = atomic_load(&M.next), R = x->m.rotations;
    uint8_t key[KEY_SIZE], want[VMAX];
    char dir[2200];
    int rc;

    for (uint32_t g = 0; g < x->m.count; g++) {
        snprintf(dir, sizeof dir, "%s/%s", x->n->data, x->m.gens[g].dir);
        if ((rc = th_store_open(&s[g], dir)) != 0)
            FAIL(x, "opening generation %s: %s: %s", x->m.gens[g].dir, tide_strerror(rc), tide_last_error());
    }
    for (uint64_t i = 0; i < next && i < MAX_OBJECTS; i++) {
        void *v = NULL;
        size_t len = 0;
        int must = must_be_present(i, R);
        th_key(i, KEY_SIZE, key);
        rc = TIDE_ENOTFOUND;
        for (uint32_t g = 0; g < x->m.count && rc == TIDE_ENOTFOUND; g++) rc = tide_store_fetch(s[g], key, &v, &len);
        if (rc == 0) {
            th_value(i, obj_len(i), want);
            if (len != obj_len(i) || memcmp(v, want, len) != 0)
                FAIL(x, "object %llu: expected its %zu bytes exactly, the store has %zu bytes that differ",
                     (unsigned long long)i, obj_len(i), len);
            x->read_back++;
        } else if (rc != TIDE_ENOTFOUND) {
            FAIL(x, "object %llu: fetch failed: %s: %s", (unsigned long long)i, tide_strerror(rc), tide_last_error());
        } else if (must) {
            FAIL(x, "object %llu: at least %llu rotations were done before %s; with G=%d it must "
                 "be readable through %llu rotations, and %llu are done, yet no generation holds it",
                 (unsigned long long)i, (unsigned long long)atomic_load(&M.floor[i]),
                 floor_from[atomic_load(&M.from[i])], GENS,
                 (unsigned long long)(atomic_load(&M.floor[i]) + GENS - 1), (unsigned long long)R);
        } else if (atomic_load(&M.state[i]) != O_UNSENT) {
            atomic_store(&M.state[i], O_GONE);
        }
        x->asserted += must;
        free(v);
    }
    for (uint32_t g = 0; g < x->m.count; g++) tide_store_close(s[g]);
}

/* ---- the loop ---- */

static void load_start(load *l, node *n)
{
    memset(l, 0, sizeof *l);
    l->n = n;
    assert_int_equal(pthread_mutex_init(&l->fail_mu, NULL), 0);
    assert_int_equal(pthread_create(&l->writer, NULL, writer_main, l), 0);
    assert_int_equal(pthread_create(&l->rotator, NULL, rotator_main, l), 0);
    assert_int_equal(pthread_create(&l->reader, NULL, reader_main, l), 0);
}

/* Join the threads; then (on this thread) fail with theirs first. */
static void load_stop(load *l, round_ctx *x)
{
    atomic_store(&l->stop, 1);
    pthread_join(l->writer, NULL);
    pthread_join(l->rotator, NULL);
    pthread_join(l->reader, NULL);
    pthread_mutex_destroy(&l->fail_mu);
    if (atomic_load(&l->failed)) FAIL(x, "under load: %s", l->fail_msg);
}

/* How many unnamed generations tided's open removed, in its whole log. */
static uint64_t reconcile_removals(const node *n)
{
    char *all = th_read_text(n->log), *p = all;
    uint64_t k = 0;

    while (p && (p = strstr(p, "does not name it (a rotation a crash interrupted)")) != NULL) { k++; p++; }
    free(all);
    return k;
}

typedef struct totals {
    uint64_t kills_in_rotation, admin, removals, gets, found, durable, checked;
} totals;

/* One round: the node runs under load, is killed, and is checked. */
static void one_round(round_ctx *x, th_rng *rng, totals *t)
{
    node *n = x->n;
    static load l;                            /* big (the reads): not on the stack */
    tide_http_client *c;
    int delay = 50 + (int)th_rng_below(rng, 1500), in_rotation;
    uint64_t removals, durable;

    if (node_start(n, TRIGGER) != 0)
        FAIL(x, "tided should start with --online-delete " TRIGGER "; its log:\n%s", node_log_tail(n));
    load_start(&l, n);
    poll(NULL, 0, delay);
    if (x->round % 2 == 0) {                  /* aim at a rotation: kill just after a POST went out */
        double until = th_now_ms() + 2000;
        while (!atomic_load(&l.rotating) && th_now_ms() < until) poll(NULL, 0, 1);
        usleep((useconds_t)th_rng_below(rng, 3000));
    }
    in_rotation = atomic_load(&l.rotating);
    kill(n->pid, SIGKILL);
    node_wait_exit(n, STOP_MS);
    load_stop(&l, x);
    durable = load_reads_apply(&l);
    t->kills_in_rotation += (uint64_t)in_rotation;
    t->admin += atomic_load(&l.admin_rotations);
    t->gets += atomic_load(&l.gets);
    t->found += atomic_load(&l.found);
    t->checked += atomic_load(&l.checked_absent);
    t->durable += durable;
    if (!(WIFSIGNALED(n->status) && WTERMSIG(n->status) == SIGKILL))
        FAIL(x, "tided should have died of the SIGKILL, status %d; its log:\n%s", n->status, node_log_tail(n));
    check_manifest(x, "after the kill");                       /* check 1 */
    if (node_start(n, "manual") != 0)                          /* check 2 */
        FAIL(x, "tided should start after a kill -9 (%d ms in); its log:\n%s", delay, node_log_tail(n));
    removals = reconcile_removals(n) - t->removals;
    t->removals += removals;
    printf("round %u: killed %d ms in%s; %llu rotations; open removed %llu unnamed generation(s); "
           "%llu GETs under load, %llu found, %llu made durable\n", x->round, delay,
           in_rotation ? ", an admin rotation in flight" : "", (unsigned long long)x->m.rotations,
           (unsigned long long)removals, (unsigned long long)atomic_load(&l.gets),
           (unsigned long long)atomic_load(&l.found), (unsigned long long)durable);
    c = client_must();
    check_reconciled(x, c);
    check_http_sample(x, c, rng);                              /* check 3 */
    tide_http_client_free(c);
    node_kill(n, SIGTERM);
    if (!WIFEXITED(n->status) || WEXITSTATUS(n->status) != 0)
        FAIL(x, "tided should stop cleanly on SIGTERM, status %d; its log:\n%s", n->status, node_log_tail(n));
    check_manifest(x, "after the clean stop");
    check_verify(x);                                           /* check 4 */
    check_stores(x);
}

static void acknowledged_objects_survive_kill9_during_rotations(void **state)
{
    const char *env = getenv("TIDE_ROTATION_KILL9_ROUNDS");
    unsigned rounds = env && *env ? (unsigned)strtoul(env, NULL, 10) : 20;
    uint64_t seed = th_seed((uint64_t)time(NULL)), asserted = 0, read_back = 0;
    totals t = { 0 };
    node n;
    th_rng rng;
    round_ctx x;

    (void)state;
    memset(&M, 0, sizeof M);
    memset(&n, 0, sizeof n);
    th_rng_init(&rng, seed);
    assert_int_equal(th_scratch_make(n.base, sizeof n.base), 0);
    th_path(n.data, sizeof n.data, n.base, "data");
    th_path(n.log, sizeof n.log, n.base, "tided.log");
    printf("seed %llu (TIDE_TEST_SEED repeats it), %u rounds (TIDE_ROTATION_KILL9_ROUNDS)\n",
           (unsigned long long)seed, rounds);
    for (unsigned r = 1; r <= rounds; r++) {
        memset(&x, 0, sizeof x);
        x.seed = seed;
        x.round = r;
        x.n = &n;
        one_round(&x, &rng, &t);
        asserted += x.asserted;
        read_back += x.read_back;
    }
    if (node_start(&n, TRIGGER) != 0)                          /* check 5, for the last round */
        fail_msg("seed %llu: tided should start after the last round; its log:\n%s", (unsigned long long)seed,
                 node_log_tail(&n));
    node_kill(&n, SIGTERM);
    printf("%u rounds: %llu objects sent, %llu rotations in the manifest, %llu admin rotations answered, "
           "%llu kills while one was in flight, %llu unnamed generations removed at open; under load %llu GETs, "
           "%llu found, %llu made durable, %llu 404s, each allowed by the rule; %llu must-be-present checks, "
           "%llu objects read back exact\n",
           rounds, (unsigned long long)atomic_load(&M.next), (unsigned long long)x.m.rotations,
           (unsigned long long)t.admin, (unsigned long long)t.kills_in_rotation, (unsigned long long)t.removals,
           (unsigned long long)t.gets, (unsigned long long)t.found, (unsigned long long)t.durable,
           (unsigned long long)t.checked, (unsigned long long)asserted, (unsigned long long)read_back);
    if (x.m.rotations < rounds)
        fail_msg("seed %llu: expected at least one rotation a round (%u), the manifest counts %llu",
                 (unsigned long long)seed, rounds, (unsigned long long)x.m.rotations);
    if (asserted == 0) fail_msg("seed %llu: no object was ever required to be present: the test checked nothing", (unsigned long long)seed);
    th_scratch_remove(n.base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acknowledged_objects_survive_kill9_during_rotations),
    };
    if (tide_http_global_init() != 0) return 1;
    return th_run_group("rotation_kill9", tests, NULL, NULL, th_teardown);
}
