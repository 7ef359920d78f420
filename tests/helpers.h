/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helpers.h: what Tide's tests share.
 *
 * Scratch directories: every test that touches files works in a fresh
 * directory made by mkdtemp under $TMPDIR (or /tmp), and removes it at the
 * end. Fixtures (databases written by NuDB itself, in tests/fixtures/nudb)
 * are never opened in place: th_copy_fixture() copies one into a scratch
 * directory first. The fixture root is $TIDE_FIXTURES, or
 * tests/fixtures/nudb relative to the working directory (the repo root).
 * A directory made with th_scratch_make() (or the th_scratch fixture) is
 * removed by th_teardown() even when the test fails half-way.
 *
 * One harness for every test file: th_teardown() stops what a test
 * started and removes what it made whatever its outcome; th_skip() skips a
 * test whose precondition is missing, with a reason run-tests lists;
 * th_failures carries worker threads' failures to the test's thread; the
 * assertions that say what came back are in expect.h.
 *
 * The fixture formula (tests/fixtures/nudb/README.md) gives every item's
 * key and value, so tests check whole fixtures without a list:
 *
 *   key(i)   = stream(2*i + 1, key_size)
 *   len(i)   = vmin + splitmix64(i ^ 0xA5A5A5A5A5A5A5A5) mod (vmax - vmin + 1)
 *   value(i) = stream(2*i + 2, len(i))
 *
 * th_rng is a tiny deterministic PRNG (splitmix64) for the random tests;
 * th_seed() reads TIDE_TEST_SEED so a failing run can be repeated.
 *
 * None of this is thread-safe except the pure formula functions, a th_rng
 * used by one thread, and th_failure().
 */
#ifndef TIDE_TEST_HELPERS_H
#define TIDE_TEST_HELPERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- the fixture formula ---- */

/* Advance *s and return the next splitmix64 output. */
uint64_t th_splitmix64(uint64_t *s);
/* The first `n` bytes of splitmix64 outputs from state `seed`, each as 8
 * little-endian bytes. */
void th_stream(uint64_t seed, void *out, size_t n);
/* key(i) of `key_size` bytes into `out`. */
void th_key(uint64_t i, unsigned key_size, void *out);
/* len(i) for values of vmin..vmax bytes. */
size_t th_len(uint64_t i, unsigned vmin, unsigned vmax);
/* value(i) of `len` bytes (len = th_len(i, ...)) into `out`. */
void th_value(uint64_t i, size_t len, void *out);

/* What tests/fixtures/nudb/README.md says about one fixture. */
typedef struct th_fixture {
    const char *name;
    unsigned block_size, key_size;
    unsigned load_factor_raw;   /* min(65536 * lf, 65535) */
    uint64_t items;             /* items inserted by NuDB (crash: 12000) */
    uint64_t present;           /* items present after open/recovery */
    unsigned vmin, vmax;
    uint64_t salt, appnum;
    uint64_t buckets;           /* after recovery for the crash fixture */
    uint64_t value_bytes;       /* 0 when the README gives none */
    uint64_t key_file_bytes, dat_file_bytes;  /* after recovery */
    int      has_log;
} th_fixture;

#define TH_FIXTURE_UID 0x7469646566697865ull
extern const th_fixture th_fixtures[];
extern const size_t th_fixture_count;
const th_fixture *th_fixture_find(const char *name);

/* ---- scratch directories and files ---- */

/* The fixture root: $TIDE_FIXTURES or "tests/fixtures/nudb". */
const char *th_fixture_root(void);
/* The programs under test: $TIDE_BIN_DIR (make check sets it; make asan
 * points it at the sanitizer build) or "bin". */
const char *th_bin_dir(void);
/* Make a fresh empty directory; its path goes to `out` (cap bytes).
 * Returns 0 or -1 (with a message on stderr). */
int th_mkdtemp(char *out, size_t cap);
/* 1 when th_mkdtemp's directories can be mapped: their file system (under
 * $TMPDIR, else /tmp) is not tmpfs or ramfs, where Tide maps nothing
 * (io_posix.c, invariant 6). Tests that assert a map skip on 0, saying
 * why (th_skip_unless_maps). */
int th_scratch_maps(void);
/* cmocka's skip() with a message when !th_scratch_maps(). */
#define th_skip_unless_maps()                                                                  \
    do {                                                                                       \
        if (!th_scratch_maps()) {                                                              \
            print_message("    skipped: the scratch directory ($TMPDIR or /tmp) is on tmpfs, " \
                          "where Tide maps nothing; set TMPDIR to a disk to run it\n");        \
            skip();                                                                            \
        }                                                                                      \
    } while (0)
/* Make a fresh directory and copy every regular file of fixture `name`
 * into it. Returns 0 or -1. */
int th_copy_fixture(const char *name, char *out, size_t cap);
/* Remove `path` and everything below it; 0 or -1. A missing path is 0. */
int th_rmrf(const char *path);
/* `dir` + "/" + `name` into out. Returns out. */
char *th_path(char *out, size_t cap, const char *dir, const char *name);
/* Size of a file, or -1 when it does not exist. */
long long th_file_size(const char *path);
/* 1 when `path` exists. */
int th_exists(const char *path);
/* Read a whole file into a malloc'd buffer (*len bytes). 0 or -1. */
int th_read_file(const char *path, uint8_t **out, size_t *len);
/* The whole file as a NUL-terminated string (malloc'd), or NULL when it
 * cannot be read. */
char *th_read_text(const char *path);
/* th_read_text() for a file the test needs: fails the test (fail_msg,
 * naming the path) when it cannot be read. */
char *th_slurp(const char *path);
/* How many times `part` (not empty) occurs in `text`, overlaps counted. */
size_t th_count(const char *text, const char *part);
/* Replace a file's contents. 0 or -1. */
int th_write_file(const char *path, const void *buf, size_t len);
/* Copy one file. 0 or -1. */
int th_copy_file(const char *from, const char *to);
/* Read / write `len` bytes at `off` of an existing file. 0 or -1. */
int th_pread_file(const char *path, void *buf, size_t len, uint64_t off);
int th_pwrite_file(const char *path, const void *buf, size_t len, uint64_t off);

/* Flip bit `bit` (0 = least significant) of the byte at `off` of an
 * existing file. 0 or -1. */
int th_flip_bit(const char *path, uint64_t off, unsigned bit);

/* The bytes of a store's three files (nudb.dat, nudb.key, nudb.log), to
 * show that a call changed nothing. A missing file is recorded as missing. */
typedef struct th_snapshot {
    uint8_t *buf[3];
    size_t   len[3];
    int      exists[3];
} th_snapshot;

/* Read the three files of `dir` into `sn`. 0 or -1. */
int th_snapshot_take(const char *dir, th_snapshot *sn);
/* Compare `dir` with `sn`: 0 when every file is byte-identical (and those
 * missing are still missing), otherwise -1 with what differs written to
 * `msg` ("nudb.key: byte 4107 was 0x1c, is 0x1d"). */
int th_snapshot_diff(const char *dir, const th_snapshot *sn, char *msg, size_t cap);
void th_snapshot_free(th_snapshot *sn);

/* ---- a tiny deterministic PRNG ---- */

typedef struct th_rng { uint64_t s; } th_rng;

static inline void th_rng_init(th_rng *r, uint64_t seed) { r->s = seed; }
static inline uint64_t th_rng_next(th_rng *r) { return th_splitmix64(&r->s); }
/* Uniform in [0, n) (n >= 1). */
uint64_t th_rng_below(th_rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
uint64_t th_rng_range(th_rng *r, uint64_t lo, uint64_t hi);
void th_rng_bytes(th_rng *r, void *out, size_t n);

/* The test seed: $TIDE_TEST_SEED (decimal or 0x hex) or `dflt`. */
uint64_t th_seed(uint64_t dflt);

/* Monotonic milliseconds, for reporting run times. */
double th_now_ms(void);

/* ---- processes a test starts ----
 *
 * Nothing a test starts may outlive it, whatever its outcome. Start
 * children with th_fork (or th_run), reap them with th_waitpid, and give
 * every test that starts one th_teardown_children as its teardown. Not
 * thread-safe: call these from the thread that runs the tests (a child's
 * parent-death signal follows the thread that forked it, so a child forked
 * by a thread that then exits is killed at once).
 */

/* fork() for a test. The child leads a process group of its own and has
 * PR_SET_PDEATHSIG(SIGKILL), so it dies with the test binary even when
 * that aborts or crashes (and exits at once, status 127, if the parent is
 * already gone). The parent records the pid for th_children_stop() (at
 * most 64 unreaped at once). Returns as fork(); -1 with errno set. Flushes
 * stdio first. */
pid_t th_fork(void);
/* waitpid() for a th_fork child; forgets the child once it is reaped. */
pid_t th_waitpid(pid_t pid, int *status, int options);
/* Spare a recorded child from th_children_stop(0): a group's shared
 * server, stopped by the group's teardown. */
void th_child_keep(pid_t pid);
/* SIGKILL every recorded child still running, with its process group, and
 * reap it; the kept ones too when `all`. Returns how many were running.
 * A child reaped by a plain waitpid() is only forgotten, never signalled. */
int th_children_stop(int all);
/* A cmocka teardown: th_children_stop(0), saying on stderr how many
 * processes the test left running. Always returns 0. */
int th_teardown_children(void **state);

/* Run `cmd` with /bin/sh. *out gets what it wrote on stdout (malloc'd,
 * NUL-terminated, never NULL on return; the caller frees it). Returns the
 * exit status, or -1 when it could not be run or did not exit normally.
 * The shell runs under a guard process (a th_fork child) that kills the
 * shell's whole process group if the test dies first, so a command run by
 * a test that crashes does not go on running. */
int th_run(const char *cmd, char **out);

/* Run bin/tide (from th_bin_dir()) with `args` (shell words, quoted by the
 * caller) as th_run does; stderr joins stdout when `merge_stderr`, else it
 * is thrown away. *out as th_run's (the caller frees it). */
int th_run_tide(const char *args, int merge_stderr, char **out);

/* ---- scratch directories removed whatever the outcome ----
 *
 * th_scratch_make() makes a fresh directory as th_mkdtemp() does and
 * records it (at most 64 at once); th_teardown() removes every recorded
 * one a test left behind, so a test that fails half-way (fail_msg longjmps
 * past its own cleanup) leaves nothing in $TMPDIR. Same thread rule as the
 * processes above.
 */

/* Make and record a scratch directory; its path goes to `out`. 0 or -1
 * (with a message on stderr). */
int th_scratch_make(char *out, size_t cap);
/* Remove a recorded scratch directory now and forget it. */
void th_scratch_remove(const char *dir);
/* Spare a recorded directory from th_teardown(): a group's shared
 * server's, removed by the group's teardown with th_scratch_remove(). */
void th_scratch_keep(const char *dir);
/* A cmocka teardown for every test that starts processes or makes scratch
 * directories: th_teardown_children(), then every recorded directory but
 * the kept ones is removed. Always returns 0. */
int th_teardown(void **state);

/* Write `text` to root/rel, making the directories on the way: a scratch
 * copy of a kernel file layout (proc/self/cgroup, sys/fs/cgroup/...).
 * Fails the test (fail_msg) when it cannot. */
void th_put_file(const char *root, const char *rel, const char *text);

/* ---- real cgroups a test makes ----
 *
 * th_cgroup_v1() makes the v1 memory group /sys/fs/cgroup/memory/
 * NAME-PID with a memory.limit_in_bytes of `limit_bytes`, records it and
 * puts its path in dir; th_teardown() removes every recorded group after it
 * has stopped the test's children (a group with a task in it cannot go).
 * When the group cannot be made (no v1 memory hierarchy, no permission) the
 * test is skipped with the reason. A limit that cannot be written fails it.
 * Same thread rule as the processes above; at most 8 groups at once.
 */
#define th_cgroup_v1(name, limit_bytes, dir, cap) th_cgroup_v1_in(__func__, name, limit_bytes, dir, cap)
void th_cgroup_v1_in(const char *test, const char *name, uint64_t limit_bytes, char *dir, size_t cap);
/* Fork a child (th_fork) that joins the group `dir` (its pid into
 * dir/cgroup.procs; exit status 3 when that fails), runs fn(arg, fd) and
 * exits 0 (fn may _exit with a status of its own). What fn writes to fd is
 * read into out[0..cap-1], NUL-terminated, and the child is reaped.
 * Returns its exit status, -1 when it did not exit normally; fails the
 * test when it cannot be started. */
int th_cgroup_child(const char *dir, void (*fn)(void *arg, int fd), void *arg, char *out, size_t cap);
/* Remove every recorded group now (th_teardown calls it). */
void th_cgroups_remove(void);

/* The per-test fixture most node tests share: a fresh scratch directory
 * and the path of a data directory inside it that does not exist yet (the
 * node, or tided, makes it). */
typedef struct th_scratch {
    char base[2048];   /* made by th_scratch_make */
    char dir[2100];    /* base/data, not made */
} th_scratch;

/* Make s->base (th_scratch_make) and name s->dir in it. 0 or -1. For a
 * fixture of a test file's own that holds a th_scratch. */
int th_scratch_init(th_scratch *s);
/* A cmocka setup: *state = a new th_scratch. -1 when the directory cannot
 * be made. */
int th_scratch_setup(void **state);
/* Its teardown: th_teardown(), then the th_scratch is freed. */
int th_scratch_teardown(void **state);

/* cmocka_run_group_tests_name with `dflt` as the teardown of every test
 * that names none (th_teardown for a binary whose tests start processes).
 * Returns the number of failed tests. */
struct CMUnitTest;
int th_run_group_n(const char *name, const struct CMUnitTest *tests, size_t n, int (*setup)(void **),
                   int (*teardown)(void **), int (*dflt)(void **));
#define th_run_group(name, tests, setup, teardown, dflt) \
    th_run_group_n(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown, dflt)

/* ---- skipping with a reason ----
 *
 * A test whose precondition is missing (a library not installed, a kernel
 * feature absent, a sanitizer build) is skipped, never passed: th_skip()
 * prints "SKIP: <test>: <reason>" on stdout and calls cmocka's skip(), so
 * cmocka counts it as skipped and tests/run-tests lists it with the reason
 * in its summary. Only from the thread that runs the test. Does not return.
 * `test` is the test's name: th_skip() passes __func__, so call it from the
 * test function itself (or a macro it expands); a helper that skips on a
 * test's behalf takes the test's name and calls th_skip_in().
 */
#define th_skip(...) th_skip_in(__func__, __VA_ARGS__)
void th_skip_in(const char *test, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 in a build with AddressSanitizer or ThreadSanitizer (the compiler's
 * own macros; gcc and clang spell them differently). TH_TSAN alone for
 * ThreadSanitizer, TH_ASAN for AddressSanitizer. */
#if defined(__SANITIZE_THREAD__)
#define TH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TH_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TH_ASAN 1
#endif
#endif
#ifndef TH_TSAN
#define TH_TSAN 0
#endif
#ifndef TH_ASAN
#define TH_ASAN 0
#endif
#define TH_SANITIZER (TH_ASAN || TH_TSAN)

/* ---- the log a test reads ----
 *
 * tide_log_set_sink(th_log_capture_sink, &cap) sends Tide's log lines to
 * `cap` instead of stderr; tide_log_set_sink(NULL, NULL) restores stderr.
 * One thread logs into one capture at a time.
 */
typedef struct th_log_capture {
    char text[16384];   /* every line, appended (cut at the capacity) */
    int  warnings;      /* lines logged at TIDE_LOG_WARN */
    int  calls;         /* lines received */
    int  level;         /* the last line's level */
    char line[4096];    /* the last line */
} th_log_capture;

/* A tide_log sink recording into the th_log_capture `arg`. */
void th_log_capture_sink(void *arg, int level, const char *line);
/* A tide_log sink that throws every line away. */
void th_log_discard_sink(void *arg, int level, const char *line);
/* A fake environment for tide_config_apply_env's getter: `arg` is a
 * NULL-terminated array of "NAME=value" strings; the value of `name`, or
 * NULL when it is not there. */
const char *th_fake_getenv(void *arg, const char *name);

/* ---- failures found by other threads ----
 *
 * cmocka's assertions longjmp and must run on the test's own thread. A
 * worker thread records what went wrong instead; the test thread fails
 * once the workers are joined, with the count and the first message.
 * th_failure() is thread-safe; th_failures_init() and th_failures_check()
 * run on the test's thread.
 */
typedef struct th_failures {
    pthread_mutex_t mu;
    atomic_ulong count;
    char first[512];
} th_failures;

void th_failures_init(th_failures *f);
/* Count one failure; the first one's message is kept. */
void th_failure(th_failures *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* fail_msg("<what>: N failures; the first: ...") when any was recorded. */
void th_failures_check(th_failures *f, const char *what);

/* 1 when built with ThreadSanitizer (TH_TSAN) or $TIDE_TEST_SMALL is set. */
int th_small(void);

/* The 62-byte nudb.log of an interrupted rebuild (key_file_size 0, as
 * NuDB's rekey and Tide's write first) for the store `in` describes (uid,
 * appnum, key size, salt, pepper from it), building `block_size` blocks
 * over a nudb.dat of `dat_file_size` bytes. `in` is a tide_store_info. */
struct tide_store_info;
void th_encode_rebuild_log(uint8_t out[62], const struct tide_store_info *in, unsigned block_size,
                           uint64_t dat_file_size);

/* ---- the store tests' set-up (the store's own section: kept at the end) ----
 *
 * The store tests open their stores with th_store_opts, the defaults with
 * check_invariants on, so tide_store_check runs at every open, after every
 * commit attempt and at every close, and a broken invariant aborts the test.
 * Those that keep a scratch directory and handles in their state use a
 * th_store_env: th_store_teardown closes and removes everything whatever
 * the outcome.
 */
struct tide_store;
struct tide_store_opts;

/* tide_store_opts_init, then check_invariants = 1. */
void th_store_opts(struct tide_store_opts *o);
/* tide_store_open of `dir` with th_store_opts (the POSIX file system). */
int th_store_open(struct tide_store **out, const char *dir);

/* Insert items [from, to) of the fixture formula (key_size-byte keys,
 * values of vmin..vmax bytes). 0, or the first insert's error with
 * *failed (may be NULL) set to its item. */
int th_store_insert_items(struct tide_store *s, uint64_t from, uint64_t to, unsigned key_size,
                          unsigned vmin, unsigned vmax, uint64_t *failed);
/* Fetch items [from, to) and compare them with the formula. 0, or -1 with
 * what was wrong with the first bad item in `why` (cap bytes). */
int th_store_expect_items(struct tide_store *s, uint64_t from, uint64_t to, unsigned key_size,
                          unsigned vmin, unsigned vmax, char *why, size_t cap);

/* Fetch item i of the formula (a key_size-byte key) and compare it with
 * its value of `len` bytes (th_len(i, ...) of the caller's range). 1 when
 * it matches, 0 when it is absent and `must` is 0; anything else fails the
 * test, naming `what`. */
int th_store_fetch_item(struct tide_store *s, uint64_t i, unsigned key_size, size_t len, int must,
                        const char *what);

typedef struct th_store_env {
    char dir[4096];              /* "" until made (th_store_setup makes it) */
    char dat_path[4200], key_path[4200], log_path[4200];
    struct tide_store *s, *s2;   /* closed by the teardown, s2 first */
    pid_t child;                 /* > 0: killed and reaped by the teardown */
    void *extra;                 /* freed by the teardown */
} th_store_env;

/* A cmocka setup: a th_store_env with a fresh empty directory and its
 * three file paths. */
int th_store_setup(void **state);
/* A cmocka setup: a th_store_env without a directory (the test makes one
 * into dir, or copies a fixture there with th_store_env_fixture). */
int th_store_setup_bare(void **state);
/* Copy fixture `name` into a fresh directory as env's dir (and paths). 0
 * or -1. */
int th_store_env_fixture(th_store_env *env, const char *name);
/* SIGKILL env->child, if any, and reap it. */
void th_store_env_stop_child(th_store_env *env);
/* The cmocka teardown of both setups. Always 0. */
int th_store_teardown(void **state);

/* A create that fails at each of its calls in turn. For n = 1, 2, ...: a
 * fresh simulator (io/io_sim.h) with directory `dir`, and tide_store_create
 * of `key_size`-byte keys on it with `fault` (a tide_io_sim_fault) injected
 * once at its n-th call. The loop ends at the first n the create does not
 * reach: that create must succeed (the test fails if not). A create that
 * fails calls check(sim, co, n, rc, arg) with the simulator as it left it
 * and the options it ran with (co->io is sim's; check may create again
 * with them); one that succeeds anyway (a call create may ignore) is
 * passed over. Each simulator is destroyed once its check returns.
 * Returns the number of calls tried (the last n - 1). */
struct tide_io_sim;
struct tide_store_create_opts;
typedef void th_create_check(struct tide_io_sim *sim, struct tide_store_create_opts *co, uint64_t n,
                             int rc, void *arg);
uint64_t th_store_create_failing_at_each_call(const char *dir, unsigned key_size, int fault,
                                              th_create_check *check, void *arg);

#endif
