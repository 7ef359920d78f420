/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_readers.c: a read-only handle in another process reads a
 * store while its writer commits (src/store/live.c, reader.c).
 *
 *   1. A reader process fetches every acknowledged key in a loop while the
 *      writer (this process) commits batches that split buckets: wrong
 *      values and false misses are counted, and both must be 0. The writer
 *      waits, after each sync, until the reader has begun a pass that
 *      includes that batch, so every pass overlaps the next commits (no
 *      clock decides it). The reader also counts the seqlock's retries
 *      and waits; a never-inserted key must stay absent.
 *   2. The writer killed -9 under a reader: every acknowledged key still
 *      reads exactly; a seq left odd (a writer killed in the middle of
 *      writing nudb.key: made so by hand) gives TIDE_EBUSY saying to
 *      recover, at once, not after the wait; recovery then loses nothing.
 *   3. No writer: a read-only open is as before (a shared lock, a pending
 *      log refused), with or without a tide.live left by a closed writer.
 *   4. A writer's open does not count a Tide reader (it has tide.live open)
 *      as a holder, but still refuses a process holding nudb.dat alone;
 *      the reader attached to the old writer goes on, through the new
 *      writer's generation, and finds what the new writer inserts.
 *   5. The tail [W, C) (the deferred index's, helper D): records appended
 *      past W by hand and published with C are found through the reader's
 *      own tail index, incrementally; when W moves up they leave it.
 *   6. The reader's second look at seq, deterministically: a bucket read
 *      made to come back torn while seq moves on (a tide_io that does
 *      both) is thrown away and read again; the fetch finds its value.
 *      (Test 1 catches a writer that writes buckets under an even seq;
 *      on this machine it rarely meets a reader that skips this second
 *      look, since waiting out an odd seq closes most of that window.)
 *   7. verify --live: sound on a running store (the full verify refuses
 *      it, naming --live); a record below the published W that no bucket
 *      holds, and a bucket over capacity, are named.
 *   8. A tide.live nobody can open (a symlink loop) or another user's
 *      (root's 0600, the writer and reader as uid 65534; root only): the
 *      writer starts page-less with a warning naming the fix; a reader is
 *      refused with the open's error; with no writer it reads as before.
 *      A page-less writer refuses while a Tide reader of the old page runs.
 *   9. Wrong counts on the page (buckets 2^63+5, 0, 5000 past nudb.key's
 *      end, key bytes, W, C, uid, magic, version): refused naming
 *      tide.live at once, no hang, no abort; put right, reads go on.
 *  10. A rollback between two looks (C up, rolled back, up again past it
 *      over other records): the reader's tail index is rebuilt; counts
 *      read under a seq that moved on are not kept.
 *  11. A commit whose rollback fails: readers say at once to restart the
 *      writer; the restart recovers and loses nothing acknowledged.
 *
 * Every child is stopped by th_teardown whatever the outcome; scratch
 * directories are removed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "expect.h"
#include "store/store_impl.h"
#include "store/full.h"
#include "util/err.h"
#include "util/log.h"

#define KEY_SIZE 32
#define VMAX 300

static unsigned item_len(uint64_t i) { return (unsigned)th_len(i, 20, VMAX); }

/* What the processes share (an anonymous MAP_SHARED page made before the
 * fork). */
typedef struct shared {
    uint64_t acked;          /* writer: items acknowledged by a sync */
    uint64_t writer_open;    /* writer: 1 once its store is open */
    uint64_t done;           /* writer: 1 when it inserts no more */
    uint64_t pass_at;        /* reader: `acked` when its current pass began */
    uint64_t passes, fetches, wrong, false_misses, phantoms, errors;
    uint64_t retries, waits, tail_scans;
    uint64_t reader_ready;   /* reader: 1 once its handle is open */
    int      first_error_rc;
    char     first_error[512];
} shared;

static shared *shared_make(void)
{
    void *p = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0, sizeof(shared));
    return p;
}

static uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void st(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static void pause_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Wait (bounded: 120 s, far beyond any sane run) for *p >= v. */
static int wait_for(const uint64_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 120000; i++) {
        if (ld(p) >= v) return 0;
        pause_ms(1);
    }
    return -1;
}

static void make_store(char *dir, size_t cap)
{
    tide_store_create_opts c;
    assert_int_equal(th_scratch_make(dir, cap), 0);
    tide_store_create_opts_init(&c);
    c.key_size = KEY_SIZE;
    c.block_size = 4096;
    assert_int_equal(tide_store_create(dir, &c), 0);
}

static int open_reader(tide_store **s, const char *dir)
{
    tide_store_opts o;
    th_store_opts(&o);
    o.read_only = 1;
    return tide_store_open(s, dir, &o);
}

/* One fetch of item i, counted into sh. */
static void check_item(tide_store *r, uint64_t i, shared *sh)
{
    uint8_t key[KEY_SIZE], want[VMAX];
    void *v = NULL;
    size_t len = 0;
    int rc;

    th_key(i, KEY_SIZE, key);
    rc = tide_store_fetch(r, key, &v, &len);
    sh->fetches++;
    if (rc == TIDE_ENOTFOUND) {
        sh->false_misses++;
    } else if (rc != 0) {
        if (sh->errors++ == 0) {
            sh->first_error_rc = rc;
            snprintf(sh->first_error, sizeof sh->first_error, "%s", tide_last_error());
        }
    } else {
        th_value(i, item_len(i), want);
        if (len != item_len(i) || memcmp(v, want, len) != 0) sh->wrong++;
    }
    free(v);
}

/* The reader process of test 1: passes over [0, acked) until the writer is
 * done, then one more. */
static void reader_child(const char *dir, shared *sh) __attribute__((noreturn));
static void reader_child(const char *dir, shared *sh)
{
    tide_store *r = NULL;
    uint8_t key[KEY_SIZE];
    int last = 0;

    if (wait_for(&sh->writer_open, 1) != 0) _exit(2);
    if (open_reader(&r, dir) != 0) {
        sh->first_error_rc = -1000;
        snprintf(sh->first_error, sizeof sh->first_error, "open: %s", tide_last_error());
        _exit(3);
    }
    st(&sh->reader_ready, 1);
    while (!last) {
        last = ld(&sh->done) != 0;
        uint64_t a = ld(&sh->acked);
        st(&sh->pass_at, a);
        for (uint64_t i = 0; i < a; i++) check_item(r, i, sh);
        th_key(1u << 30, KEY_SIZE, key);            /* never inserted */
        if (tide_store_contains(r, key) != 0) sh->phantoms++;
        sh->passes++;
    }
    sh->retries = r->live ? r->live->retries : 0;
    sh->waits = r->live ? r->live->waits : 0;
    sh->tail_scans = r->live ? r->live->tail_scans : 0;
    if (tide_store_close(r) != 0) _exit(4);
    _exit(0);
}

static tide_store *open_writer_lagging(const char *dir, uint64_t index_lag)
{
    tide_store_opts o;
    tide_store *s = NULL;
    th_store_opts(&o);
    o.burst_bytes = 64 << 10;
    o.commit_interval_ms = 10;
    o.index_lag_bytes = index_lag;
    int rc = tide_store_open(&s, dir, &o);
    if (rc) fail_msg("writer open: %s: %s", tide_strerror(rc), tide_last_error());
    return s;
}

static tide_store *open_writer(const char *dir)
{
    return open_writer_lagging(dir, 0);
}

static void insert_range(tide_store *s, uint64_t from, uint64_t to)
{
    uint8_t key[KEY_SIZE], val[VMAX];
    for (uint64_t i = from; i < to; i++) {
        th_key(i, KEY_SIZE, key);
        th_value(i, item_len(i), val);
        int rc = tide_store_insert(s, key, val, item_len(i));
        if (rc) fail_msg("insert %llu: %s: %s", (unsigned long long)i, tide_strerror(rc),
                         tide_last_error());
    }
}

/* The reader loop against a writer; index_lag > 0: the deferred index
 * (records wait in [W, C) and flushes split many buckets at once). */
static void reader_against_writer(uint64_t index_lag)
{
    char dir[4096];
    shared *sh = shared_make();
    const uint64_t batches = 60, batch = 400;
    tide_store_info in0, in1;
    int status;

    make_store(dir, sizeof dir);
    pid_t pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) reader_child(dir, sh);
    tide_store *s = open_writer_lagging(dir, index_lag);
    tide_store_get_info(s, &in0);
    st(&sh->writer_open, 1);
    if (wait_for(&sh->reader_ready, 1) != 0) fail_msg("the reader did not open: %s", sh->first_error);
    for (uint64_t b = 0; b < batches; b++) {
        insert_range(s, b * batch, (b + 1) * batch);
        assert_int_equal(tide_store_sync(s), 0);
        st(&sh->acked, (b + 1) * batch);
        /* The reader's next pass includes this batch and runs while the
         * next one commits. */
        if (wait_for(&sh->pass_at, (b + 1) * batch) != 0)
            fail_msg("the reader stopped before batch %llu: %s", (unsigned long long)b,
                     sh->first_error);
    }
    tide_store_get_info(s, &in1);
    st(&sh->done, 1);
    th_waitpid(pid, &status, 0);
    assert_int_equal(tide_store_close(s), 0);
    print_message("reader: %llu passes, %llu fetches over %llu commits that took the table from "
                  "%llu to %llu buckets; %llu seqlock retries, %llu waits; wrong %llu, false "
                  "misses %llu, errors %llu\n", (unsigned long long)sh->passes,
                  (unsigned long long)sh->fetches, (unsigned long long)batches,
                  (unsigned long long)in0.buckets, (unsigned long long)in1.buckets,
                  (unsigned long long)sh->retries, (unsigned long long)sh->waits,
                  (unsigned long long)sh->wrong, (unsigned long long)sh->false_misses,
                  (unsigned long long)sh->errors);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the reader ended with status %d: %s", status, sh->first_error);
    if (sh->errors) fail_msg("%llu fetch errors, the first %s: %s", (unsigned long long)sh->errors,
                             tide_strerror(sh->first_error_rc), sh->first_error);
    assert_true(in1.buckets > in0.buckets + 50);     /* the commits split buckets */
    assert_true(sh->passes >= batches);
    assert_int_equal(sh->wrong, 0);
    assert_int_equal(sh->false_misses, 0);
    assert_int_equal(sh->phantoms, 0);
    if (index_lag) {
        /* The flushes happened while the reader read, and between them the
         * reader indexed records of [W, C) itself (its tail scans). The tail
         * left at the end depends on how the commits fell, so it is only
         * printed. */
        print_message("deferred: %llu flushes, %llu reader tail scans, %llu entries in the "
                      "tail at the end\n", (unsigned long long)in1.index_flushes,
                      (unsigned long long)sh->tail_scans, (unsigned long long)in1.tail_items);
        assert_true(in1.index_flushes >= 3);
        assert_true(sh->tail_scans >= 1);
    }
    munmap(sh, sizeof *sh);
}

static void a_reader_process_sees_no_wrong_value_and_no_false_miss_while_buckets_split(void **state)
{
    (void)state;
    reader_against_writer(0);
}

/* The same against the deferred index. A 64 KiB tail holds 3072
 * entries, so its flushes come every eight batches or so. */
static void a_reader_process_sees_no_false_miss_under_the_deferred_index(void **state)
{
    (void)state;
    reader_against_writer(64 << 10);
}

/* ---- 2: the writer killed under a reader ---- */

static void writer_child(const char *dir, shared *sh, uint64_t n) __attribute__((noreturn));
static void writer_child(const char *dir, shared *sh, uint64_t n)
{
    tide_store_opts o;
    tide_store *s = NULL;
    th_store_opts(&o);
    o.burst_bytes = 64 << 10;
    if (tide_store_open(&s, dir, &o) != 0) _exit(3);
    st(&sh->writer_open, 1);
    for (uint64_t b = 0; b * 500 < n; b++) {
        uint8_t key[KEY_SIZE], val[VMAX];
        for (uint64_t i = b * 500; i < (b + 1) * 500; i++) {
            th_key(i, KEY_SIZE, key);
            th_value(i, item_len(i), val);
            if (tide_store_insert(s, key, val, item_len(i)) != 0) _exit(4);
        }
        if (tide_store_sync(s) != 0) _exit(5);
        st(&sh->acked, (b + 1) * 500);
    }
    st(&sh->done, 1);
    for (;;) pause();               /* killed here, the store open */
}

static void check_all(tide_store *r, uint64_t n, const char *when)
{
    shared counts;
    memset(&counts, 0, sizeof counts);
    for (uint64_t i = 0; i < n; i++) check_item(r, i, &counts);
    if (counts.errors || counts.wrong || counts.false_misses)
        fail_msg("%s: of %llu acknowledged items, %llu wrong, %llu not found, %llu errors (%s)",
                 when, (unsigned long long)n, (unsigned long long)counts.wrong,
                 (unsigned long long)counts.false_misses, (unsigned long long)counts.errors,
                 counts.first_error);
}

static void a_writer_killed_under_a_reader_is_reported_and_loses_nothing(void **state)
{
    char dir[4096], live[4200];
    shared *sh = shared_make();
    tide_store *r = NULL;
    uint8_t key[KEY_SIZE];
    void *v = NULL;
    size_t len = 0;
    int status, rc;
    (void)state;

    make_store(dir, sizeof dir);
    pid_t pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) writer_child(dir, sh, 6000);
    if (wait_for(&sh->writer_open, 1) != 0) fail_msg("the writer did not open");
    rc = open_reader(&r, dir);
    if (rc) fail_msg("reader open: %s: %s", tide_strerror(rc), tide_last_error());
    assert_non_null(r->live);
    assert_int_equal(wait_for(&sh->done, 1), 0);
    check_all(r, ld(&sh->acked), "writer running");
    kill(pid, SIGKILL);
    th_waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    /* Killed between commits: the files are whole; the reader goes on. */
    check_all(r, 6000, "writer killed between commits");

    /* Killed in the middle of writing nudb.key: seq odd, no writer. */
    th_path(live, sizeof live, dir, "tide.live");
    uint64_t seq = 0;
    assert_int_equal(th_pread_file(live, &seq, 8, TI_LIVE_SEQ * 8), 0);
    assert_int_equal(seq & 1, 0);
    seq++;
    assert_int_equal(th_pwrite_file(live, &seq, 8, TI_LIVE_SEQ * 8), 0);
    th_key(7, KEY_SIZE, key);
    double t0 = th_now_ms();
    rc = tide_store_fetch(r, key, &v, &len);
    double took = th_now_ms() - t0;
    assert_int_equal(rc, TIDE_EBUSY);
    assert_null(v);
    expect_contains(tide_last_error(), "stopped in the middle of writing nudb.key", "the message");
    expect_contains(tide_last_error(), "tide recover", "the message");
    print_message("writer gone mid-write: the fetch said so after %.1f ms: %s\n", took,
                  tide_last_error());
    assert_true(took < TI_LIVE_WAIT_MS);          /* at once, not after the whole wait */
    assert_int_equal(tide_store_close(r), 0);

    /* A new reader is refused with the same clear words: nobody holds the
     * lock, so it is an ordinary read-only open; the log decides. */
    tide_recover_report rep;
    assert_int_equal(tide_store_recover_io(dir, NULL, &rep), 0);
    tide_store *s = NULL;
    assert_int_equal(th_store_open(&s, dir), 0);
    check_all(s, 6000, "after recovery");
    assert_int_equal(tide_store_close(s), 0);
    munmap(sh, sizeof *sh);
}

/* ---- 3: no writer ---- */

static void with_no_writer_a_read_only_open_is_as_before(void **state)
{
    char dir[4096], log[4200];
    tide_store *s = NULL, *r = NULL, *r2 = NULL;
    (void)state;

    make_store(dir, sizeof dir);
    s = open_writer(dir);
    insert_range(s, 0, 1000);
    assert_int_equal(tide_store_close(s), 0);
    /* A tide.live from the closed writer: readers share the lock. */
    th_path(log, sizeof log, dir, "tide.live");
    assert_true(th_exists(log));
    assert_int_equal(open_reader(&r, dir), 0);
    assert_null(r->live);
    assert_int_equal(open_reader(&r2, dir), 0);
    check_all(r, 1000, "no writer");
    /* ... and a writer is kept out, as before. */
    tide_store_opts o;
    th_store_opts(&o);
    assert_int_equal(tide_store_open(&s, dir, &o), TIDE_EBUSY);
    assert_int_equal(tide_store_close(r), 0);
    assert_int_equal(tide_store_close(r2), 0);
    /* A pending log and no writer: refused, nothing recovered. */
    th_path(log, sizeof log, dir, "nudb.log");
    uint8_t junk[200];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(th_write_file(log, junk, sizeof junk), 0);
    assert_int_equal(open_reader(&r, dir), TIDE_EBUSY);
    expect_contains(tide_last_error(), "unfinished commit", "the message");
    assert_int_equal(th_file_size(log), (long long)sizeof junk);
    unlink(log);
}

/* ---- 4: holders ---- */

static void reader_then_new_writer_child(const char *dir, shared *sh) __attribute__((noreturn));
static void reader_then_new_writer_child(const char *dir, shared *sh)
{
    tide_store *r = NULL;
    if (wait_for(&sh->writer_open, 1) != 0) _exit(2);
    if (open_reader(&r, dir) != 0 || r->live == NULL) {
        snprintf(sh->first_error, sizeof sh->first_error, "open: %s", tide_last_error());
        _exit(3);
    }
    st(&sh->reader_ready, 1);
    /* The second writer inserts [1000, 2000) and says so with acked. */
    if (wait_for(&sh->acked, 2000) != 0) _exit(4);
    for (uint64_t i = 0; i < 2000; i++) check_item(r, i, sh);
    st(&sh->passes, 1);
    tide_store_close(r);
    _exit(0);
}

static void a_writer_open_passes_tide_readers_but_not_other_holders(void **state)
{
    char dir[4096], dat[4200];
    shared *sh = shared_make();
    int status;
    (void)state;

    make_store(dir, sizeof dir);
    /* Forked before any store is open here: a child must not inherit the
     * writer's locked descriptor. */
    pid_t pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) reader_then_new_writer_child(dir, sh);
    tide_store *s = open_writer(dir);
    insert_range(s, 0, 1000);
    assert_int_equal(tide_store_sync(s), 0);
    st(&sh->writer_open, 1);
    if (wait_for(&sh->reader_ready, 1) != 0) fail_msg("reader: %s", sh->first_error);
    assert_int_equal(tide_store_close(s), 0);

    /* A process with nudb.dat open and no tide.live: a foreign holder. */
    th_path(dat, sizeof dat, dir, "nudb.dat");
    pid_t holder = th_fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        int fd = open(dat, O_RDONLY);
        (void)fd;
        for (;;) pause();
    }
    tide_store_opts o;
    th_store_opts(&o);
    int rc = EBUSY;
    for (int i = 0; i < 2000 && rc != TIDE_EBUSY; i++) {       /* until the holder has it open */
        rc = tide_store_open(&s, dir, &o);
        if (rc == 0) { assert_int_equal(tide_store_close(s), 0); pause_ms(1); }
    }
    assert_int_equal(rc, TIDE_EBUSY);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "process %d", (int)holder);
    expect_contains(tide_last_error(), pidtext, "the message");
    kill(holder, SIGKILL);
    th_waitpid(holder, &status, 0);

    /* Only the Tide reader is left: the writer opens. */
    s = open_writer(dir);
    insert_range(s, 1000, 2000);
    assert_int_equal(tide_store_sync(s), 0);
    st(&sh->acked, 2000);
    th_waitpid(pid, &status, 0);
    assert_int_equal(tide_store_close(s), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the reader ended with status %d: %s", status, sh->first_error);
    assert_int_equal(sh->passes, 1);
    assert_int_equal(sh->errors, 0);
    assert_int_equal(sh->wrong, 0);
    assert_int_equal(sh->false_misses, 0);
    munmap(sh, sizeof *sh);
}

/* ---- 5: the tail [W, C) ---- */

/* Append the data records of items [from, to) to nudb.dat at `end`. */
static uint64_t append_records(const char *dir, uint64_t end, uint64_t from, uint64_t to)
{
    char dat[4200];
    uint8_t rec[6 + KEY_SIZE + VMAX];
    th_path(dat, sizeof dat, dir, "nudb.dat");
    for (uint64_t i = from; i < to; i++) {
        unsigned n = item_len(i);
        for (int b = 0; b < 6; b++) rec[b] = (uint8_t)((uint64_t)n >> (8 * (5 - b)));
        th_key(i, KEY_SIZE, rec + 6);
        th_value(i, n, rec + 6 + KEY_SIZE);
        assert_int_equal(th_pwrite_file(dat, rec, 6 + KEY_SIZE + n, end), 0);
        end += 6 + KEY_SIZE + n;
    }
    return end;
}

#define READER_TAIL_ID 5
static uint64_t reader_tail_noted;

static void note_reader_tail(int id, int64_t bytes)
{
    if (id == READER_TAIL_ID) reader_tail_noted += (uint64_t)bytes;
}

static void the_tail_between_w_and_c_is_found_through_the_readers_own_index(void **state)
{
    char dir[4096];
    shared *sh = shared_make();
    tide_store *r = NULL;
    uint8_t key[KEY_SIZE];
    int status;
    (void)state;

    make_store(dir, sizeof dir);
    pid_t pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The writer: 1000 items indexed, then (by hand, as the deferred
         * index's phase A would) two runs of records past W, each
         * published by raising C; then W raised over the first run. */
        tide_store *s = open_writer(dir);
        insert_range(s, 0, 1000);
        if (tide_store_sync(s) != 0) _exit(3);
        uint64_t w = s->dat_size;
        uint64_t c1 = append_records(dir, w, 1000, 1300);
        s->dat_committed = c1;
        ti_live_publish(s);
        st(&sh->acked, 1300);
        if (wait_for(&sh->passes, 1) != 0) _exit(4);
        uint64_t c2 = append_records(dir, c1, 1300, 1500);
        s->dat_committed = c2;
        ti_live_publish(s);
        st(&sh->acked, 1500);
        if (wait_for(&sh->passes, 2) != 0) _exit(4);
        s->dat_indexed = c1;             /* as if a flush had indexed [w, c1) */
        ti_live_publish(s);
        st(&sh->acked, 1501);
        if (wait_for(&sh->passes, 3) != 0) _exit(4);
        /* Back to W = C = the end the handle knows, so its close is clean. */
        s->dat_indexed = s->dat_committed = s->dat_size;
        tide_store_close(s);
        _exit(0);
    }
    assert_int_equal(wait_for(&sh->acked, 1300), 0);
    {
        tide_store_opts o;
        th_store_opts(&o);
        o.read_only = 1;
        o.note_alloc = note_reader_tail;
        o.tail_account_id = READER_TAIL_ID;
        reader_tail_noted = 0;
        assert_int_equal(tide_store_open(&r, dir, &o), 0);
    }
    assert_non_null(r->live);
    check_all(r, 1300, "C raised once");
    assert_int_equal(r->live->tail.count, 300);
    /* Its tables are counted (note_alloc), the one in use at least. */
    if (reader_tail_noted < r->live->tail.nslots * TI_TAIL_SLOT_BYTES || reader_tail_noted == 0)
        fail_msg("the reader's tail tables: %llu bytes noted, the table holds %llu",
                 (unsigned long long)reader_tail_noted,
                 (unsigned long long)(r->live->tail.nslots * TI_TAIL_SLOT_BYTES));
    uint64_t scans = r->live->tail_scans;
    st(&sh->passes, 1);
    assert_int_equal(wait_for(&sh->acked, 1500), 0);
    check_all(r, 1500, "C raised twice");
    assert_int_equal(r->live->tail.count, 500);        /* incremental: 200 more */
    assert_int_equal(r->live->tail_scans, scans + 1);
    st(&sh->passes, 2);
    assert_int_equal(wait_for(&sh->acked, 1501), 0);
    /* W over the first run: its 300 entries leave the tail index, and the
     * key file (which this test never wrote them to) does not have them. */
    th_key(1000, KEY_SIZE, key);
    assert_int_equal(tide_store_contains(r, key), 0);
    assert_int_equal(r->live->tail.count, 200);
    th_key(1400, KEY_SIZE, key);
    assert_int_equal(tide_store_contains(r, key), 1);
    st(&sh->passes, 3);
    th_waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(tide_store_close(r), 0);
    munmap(sh, sizeof *sh);
}

/* ---- 6: the second look at seq ---- */

/* The POSIX file system, but the first bucket read of nudb.key after
 * `trick_armed` is set comes back zeroed (a bucket torn by a write) while
 * seq moves on by a whole commit: only the reader's second look at seq
 * can tell that read from a bucket that does not hold the key. */
static tide_io trick_io;
static tide_file *trick_key;
static int trick_armed;
static uint64_t *trick_seq;

static int trick_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    int rc = tide_io_posix()->open(io, path, flags, out);
    size_t n = strlen(path);
    if (rc == 0 && n >= 8 && strcmp(path + n - 8, "nudb.key") == 0) trick_key = *out;
    return rc;
}

static int trick_read_at(tide_file *f, void *buf, size_t len, uint64_t off)
{
    int rc = tide_io_posix()->read_at(f, buf, len, off);
    if (rc == 0 && f == trick_key && trick_armed && off > 0) {
        trick_armed = 0;
        memset(buf, 0, len);
        __atomic_fetch_add(trick_seq, 2, __ATOMIC_SEQ_CST);
    }
    return rc;
}

static void a_bucket_read_that_a_write_overlapped_is_read_again(void **state)
{
    char dir[4096];
    tide_store *r = NULL;
    tide_store_opts o;
    uint8_t key[KEY_SIZE], want[VMAX];
    void *v = NULL;
    size_t len = 0;
    (void)state;

    make_store(dir, sizeof dir);
    tide_store *s = open_writer(dir);          /* this process's writer: its lock, its page */
    insert_range(s, 0, 500);
    assert_int_equal(tide_store_sync(s), 0);
    trick_io = *tide_io_posix();
    trick_io.open = trick_open;
    trick_io.read_at = trick_read_at;
    th_store_opts(&o);
    o.read_only = 1;
    o.io = &trick_io;
    assert_int_equal(tide_store_open(&r, dir, &o), 0);
    assert_non_null(r->live);
    trick_seq = &s->live->w[TI_LIVE_SEQ];
    uint64_t retries = r->live->retries;
    th_key(123, KEY_SIZE, key);
    trick_armed = 1;
    int rc = tide_store_fetch(r, key, &v, &len);
    assert_int_equal(trick_armed, 0);                   /* the torn read happened */
    if (rc) fail_msg("a fetch whose bucket read a write overlapped: %s (%s): the second look at "
                     "seq must throw that read away", tide_strerror(rc), tide_last_error());
    th_value(123, item_len(123), want);
    assert_int_equal(len, item_len(123));
    assert_memory_equal(v, want, len);
    assert_int_equal(r->live->retries, retries + 1);
    free(v);
    assert_int_equal(tide_store_close(r), 0);
    assert_int_equal(tide_store_close(s), 0);
}

/* ---- 7: verify --live ---- */

static void verify_live_checks_a_running_store_and_names_damage(void **state)
{
    char dir[4096], key[4200];
    tide_verify_report vr;
    int rc;
    (void)state;

    make_store(dir, sizeof dir);
    tide_store *s = open_writer(dir);
    insert_range(s, 0, 3000);
    assert_int_equal(tide_store_sync(s), 0);
    /* The full check refuses a store a writer has open, saying what to use. */
    assert_int_equal(tide_store_verify_io(dir, NULL, &vr), TIDE_EBUSY);
    expect_contains(tide_last_error(), "tide verify --live", "the full verify's refusal");
    rc = tide_store_verify_live(dir, NULL, &vr);
    if (rc) fail_msg("verify --live of a sound running store: %s: %s", tide_strerror(rc),
                     tide_last_error());
    assert_int_equal(vr.data_records, 3000);
    assert_int_equal(vr.keys, 3000);
    assert_true(vr.buckets > 1);

    /* A record past the end the writer published as indexed (W) that no
     * bucket holds: not found, named by its offset. */
    uint64_t end = s->dat_size;
    uint64_t c = append_records(dir, end, 5000, 5001);
    s->dat_indexed = s->dat_committed = c;
    ti_live_publish(s);
    assert_int_equal(tide_store_verify_live(dir, NULL, &vr), TIDE_ECORRUPT);
    char at[64];
    snprintf(at, sizeof at, "offset %llu", (unsigned long long)end);
    expect_contains(tide_last_error(), at, "the unindexed record's offset");
    expect_contains(tide_last_error(), "not found", "the unindexed record");
    s->dat_indexed = s->dat_committed = end;
    ti_live_publish(s);

    /* A bucket whose count is over capacity: named. */
    th_path(key, sizeof key, dir, "nudb.key");
    uint8_t big[2] = { 0xff, 0xff };
    assert_int_equal(th_pwrite_file(key, big, 2, 2 * 4096), 0);      /* bucket 1 */
    assert_int_equal(tide_store_verify_live(dir, NULL, &vr), TIDE_ECORRUPT);
    expect_contains(tide_last_error(), "bucket 1", "the damaged bucket");
    /* The writer's handle is left with a damaged table: closing commits
     * nothing (no inserts since the sync). */
    assert_int_equal(tide_store_close(s), 0);
}

/* ---- 8: a tide.live nobody may open ---- */

/* tide.live made unopenable for anyone, root too: a symlink to itself
 * (open gives ELOOP). As a root `tide put`'s 0644 page is for tided's
 * user, which the next test shows when the suite runs as root. */
static void make_live_unopenable(const char *dir)
{
    char live[4200];
    th_path(live, sizeof live, dir, "tide.live");
    unlink(live);
    assert_int_equal(symlink("tide.live", live), 0);
}

static void a_writer_runs_without_a_tide_live_it_cannot_open(void **state)
{
    char dir[4096];
    th_log_capture cap;
    tide_store *s = NULL, *r = NULL;
    (void)state;

    make_store(dir, sizeof dir);
    make_live_unopenable(dir);
    /* No writer: a reader never needs the page, so the open succeeds. */
    assert_int_equal(open_reader(&r, dir), 0);
    assert_null(r->live);
    assert_int_equal(tide_store_close(r), 0);
    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    tide_store_opts o;
    th_store_opts(&o);
    int rc = tide_store_open(&s, dir, &o);
    tide_log_set_sink(NULL, NULL);
    if (rc) fail_msg("a writer refused for its tide.live: %s", tide_last_error());
    assert_null(s->live);
    assert_true(cap.warnings >= 1);
    expect_contains(cap.text, "tide.live", "the warning names the file");
    expect_contains(cap.text, "chown", "the warning gives the fix");
    insert_range(s, 0, 300);
    assert_int_equal(tide_store_sync(s), 0);
    /* A reader while that writer runs: refused, saying why. */
    assert_int_equal(open_reader(&r, dir), TIDE_EBUSY);
    expect_contains(tide_last_error(), "tide.live cannot be read", "the refusal");
    assert_int_equal(tide_store_close(s), 0);
    assert_int_equal(open_reader(&r, dir), 0);
    check_all(r, 300, "after the page-less writer");
    assert_int_equal(tide_store_close(r), 0);
}

static void attached_reader_child(const char *dir, shared *sh) __attribute__((noreturn));
static void attached_reader_child(const char *dir, shared *sh)
{
    tide_store *r = NULL;
    /* As the service user (root: a writer of that user sees only its own
     * user's descriptors in /proc). */
    if (geteuid() == 0 && (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
        _exit(5);
    /* A changed uid makes the process undumpable, its /proc/PID/fd root's;
     * a process started as that user (tide get) is dumpable. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (wait_for(&sh->writer_open, 1) != 0) _exit(2);
    if (open_reader(&r, dir) != 0 || r->live == NULL) _exit(3);
    st(&sh->reader_ready, 1);
    if (wait_for(&sh->done, 1) != 0) _exit(4);
    tide_store_close(r);
    _exit(0);
}

/* A reader attached to a page the next writer cannot open would read
 * that writer's commits with no seqlock: the writer refuses instead. */
static void a_page_less_writer_refuses_while_a_reader_holds_the_old_page(void **state)
{
    char dir[4096], live[4200], old[4200];
    shared *sh = shared_make();
    tide_store *s = NULL;
    tide_store_opts o;
    int status;
    (void)state;

    make_store(dir, sizeof dir);
    if (geteuid() == 0) {
        char f[4200];
        assert_int_equal(chown(dir, 65534, 65534), 0);
        th_path(f, sizeof f, dir, "nudb.dat");
        assert_int_equal(chown(f, 65534, 65534), 0);
        th_path(f, sizeof f, dir, "nudb.key");
        assert_int_equal(chown(f, 65534, 65534), 0);
    }
    pid_t pid = th_fork();              /* before any store is open here */
    assert_true(pid >= 0);
    if (pid == 0) attached_reader_child(dir, sh);
    s = open_writer(dir);
    insert_range(s, 0, 100);
    assert_int_equal(tide_store_sync(s), 0);
    st(&sh->writer_open, 1);
    assert_int_equal(wait_for(&sh->reader_ready, 1), 0);
    assert_int_equal(tide_store_close(s), 0);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "process %d", (int)pid);
    if (geteuid() == 0) {
        /* The case in the field: root's 0644 page, the next writer as the
         * service user (uid 65534), its reader on the page it cannot open. */
        char f[4200];
        th_path(f, sizeof f, dir, "nudb.log");
        if (th_exists(f)) assert_int_equal(chown(f, 65534, 65534), 0);
        pid_t w = th_fork();
        assert_true(w >= 0);
        if (w == 0) {
            tide_store *b = NULL;
            if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
            th_store_opts(&o);
            tide_log_set_sink(th_log_discard_sink, NULL);
            int brc = tide_store_open(&b, dir, &o);
            snprintf(sh->first_error, sizeof sh->first_error, "%s", tide_last_error());
            _exit(brc == TIDE_EBUSY ? 0 : 3);
        }
        th_waitpid(w, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("the service user's writer beside a reader: status %d: %s", status,
                     sh->first_error);
        expect_contains(sh->first_error, pidtext, "the refusal names the reader");
        expect_contains(sh->first_error, "tide.live", "and the page");
    } else {
        /* Not root: the reader keeps the old inode, the name leads nowhere
         * (the first holders scan already counts it: not on tide.live). */
        th_path(live, sizeof live, dir, "tide.live");
        th_path(old, sizeof old, dir, "tide.live.old");
        assert_int_equal(rename(live, old), 0);
        make_live_unopenable(dir);
        th_store_opts(&o);
        tide_log_set_sink(th_log_discard_sink, NULL);
        int rc = tide_store_open(&s, dir, &o);
        tide_log_set_sink(NULL, NULL);
        assert_int_equal(rc, TIDE_EBUSY);
        expect_contains(tide_last_error(), pidtext, "the refusal names the reader");
    }
    st(&sh->done, 1);
    th_waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (geteuid() != 0) {
        th_store_opts(&o);
        tide_log_set_sink(th_log_discard_sink, NULL);
        int rc = tide_store_open(&s, dir, &o);
        tide_log_set_sink(NULL, NULL);
        assert_int_equal(rc, 0);
        assert_null(s->live);
        assert_int_equal(tide_store_close(s), 0);
    }
    munmap(sh, sizeof *sh);
}

/* As root: the page of a root writer (0644), then tided's user (65534) as
 * the writer: it starts, with the warning; and a root 0600 page keeps a
 * reader of that user out with a message, not a bare I/O error. */
static void another_users_tide_live_warns_the_writer_and_names_itself_to_readers(void **state)
{
    char dir[4096], live[4200];
    shared *sh = shared_make();
    int status;
    (void)state;

    if (geteuid() != 0) {
        fprintf(stderr, "# skipped: another user's tide.live needs root to chown\n");
        skip();
    }
    make_store(dir, sizeof dir);
    tide_store *s = open_writer(dir);
    insert_range(s, 0, 200);
    assert_int_equal(tide_store_close(s), 0);
    /* Everything but tide.live to the service user. */
    const char *names[] = { "nudb.dat", "nudb.key", "nudb.log", NULL };
    char f[4200];
    assert_int_equal(chown(dir, 65534, 65534), 0);
    for (int i = 0; names[i]; i++) {
        th_path(f, sizeof f, dir, names[i]);
        if (th_exists(f)) assert_int_equal(chown(f, 65534, 65534), 0);
    }
    th_path(live, sizeof live, dir, "tide.live");
    assert_int_equal(chmod(live, 0600), 0);
    pid_t pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tide_store *w = NULL, *r = NULL;
        th_log_capture cap;
        memset(&cap, 0, sizeof cap);
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
        tide_log_set_sink(th_log_capture_sink, &cap);
        tide_store_opts o;
        th_store_opts(&o);
        int rc = tide_store_open(&w, dir, &o);
        tide_log_set_sink(NULL, NULL);
        snprintf(sh->first_error, sizeof sh->first_error, "%.500s", rc ? tide_last_error() : cap.text);
        if (rc) _exit(3);
        if (w->live != NULL || strstr(cap.text, "chown") == NULL) _exit(4);
        /* A reader of this user, the root 0600 page, this writer running. */
        rc = open_reader(&r, dir);
        snprintf(sh->first_error, sizeof sh->first_error, "%s", tide_last_error());
        if (rc != TIDE_EBUSY || strstr(tide_last_error(), "tide.live cannot be read") == NULL) _exit(5);
        if (tide_store_close(w) != 0) _exit(6);
        _exit(0);
    }
    th_waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the service user's writer: status %d: %s", status, sh->first_error);
    print_message("the service user's reader was told: %s\n", sh->first_error);
    munmap(sh, sizeof *sh);
}

/* ---- 9: a page whose counts are wrong ---- */

/* A writer (this process) with items [0, n) synced, and a reader through
 * its page. */
static tide_store *writer_with_reader(const char *dir, uint64_t n, tide_store **r)
{
    tide_store *s = open_writer(dir);
    insert_range(s, 0, n);
    assert_int_equal(tide_store_sync(s), 0);
    assert_int_equal(open_reader(r, dir), 0);
    assert_non_null((*r)->live);
    return s;
}

static void expect_page_refused(tide_store *s, tide_store *r, int word, uint64_t bad, int want_rc,
                                const char *what)
{
    uint8_t key[KEY_SIZE];
    void *v = NULL;
    size_t len = 0;
    uint64_t *w = s->live->w, keep = w[word];

    th_key(5, KEY_SIZE, key);
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    w[word] = bad;
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    int rc = tide_store_fetch(r, key, &v, &len);
    if (rc != want_rc)
        fail_msg("%s: fetch gave %s (%s), not %s", what, tide_strerror(rc), tide_last_error(),
                 tide_strerror(want_rc));
    assert_null(v);
    expect_contains(tide_last_error(), "tide.live", what);
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    w[word] = keep;
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    rc = tide_store_fetch(r, key, &v, &len);
    if (rc) fail_msg("%s put right: %s", what, tide_last_error());
    free(v);
}

static void a_page_whose_counts_do_not_fit_the_files_is_refused_not_trusted(void **state)
{
    char dir[4096];
    tide_store *r = NULL;
    (void)state;

    make_store(dir, sizeof dir);
    tide_store *s = writer_with_reader(dir, 500, &r);
    uint64_t *w = s->live->w, bs = s->block_size;
    expect_page_refused(s, r, TI_LIVE_BUCKETS, (1ull << 63) + 5, TIDE_ECORRUPT, "buckets 2^63+5");
    expect_page_refused(s, r, TI_LIVE_BUCKETS, 0, TIDE_ECORRUPT, "buckets 0");
    expect_page_refused(s, r, TI_LIVE_KEY_BYTES, w[TI_LIVE_KEY_BYTES] + bs, TIDE_ECORRUPT,
                        "key bytes not (buckets+1) x block");
    expect_page_refused(s, r, TI_LIVE_W, 10, TIDE_ECORRUPT, "W inside the header");
    expect_page_refused(s, r, TI_LIVE_W, w[TI_LIVE_C] + 1, TIDE_ECORRUPT, "W above C");
    expect_page_refused(s, r, TI_LIVE_C, w[TI_LIVE_C] + (1u << 30), TIDE_ECORRUPT, "C past nudb.dat");
    expect_page_refused(s, r, TI_LIVE_UID, w[TI_LIVE_UID] ^ 1, TIDE_EMISMATCH, "another uid");
    expect_page_refused(s, r, TI_LIVE_MAGIC, 1, TIDE_ECORRUPT, "magic");
    expect_page_refused(s, r, TI_LIVE_VERSION, 2, TIDE_ECORRUPT, "version");
    /* Both counts agreeing with each other but not with nudb.key: named
     * as the page's fault, not the key file's. */
    uint64_t keep_k = w[TI_LIVE_KEY_BYTES], keep_b = w[TI_LIVE_BUCKETS];
    uint8_t key[KEY_SIZE];
    th_key(5, KEY_SIZE, key);
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    w[TI_LIVE_KEY_BYTES] = 5001 * bs;
    w[TI_LIVE_BUCKETS] = 5000;
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    assert_int_equal(tide_store_contains(r, key), TIDE_ECORRUPT);
    expect_contains(tide_last_error(), "tide.live", "buckets 5000");
    expect_contains(tide_last_error(), "past nudb.key's end", "buckets 5000");
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    w[TI_LIVE_KEY_BYTES] = keep_k;
    w[TI_LIVE_BUCKETS] = keep_b;
    __atomic_fetch_add(&w[TI_LIVE_SEQ], 1, __ATOMIC_SEQ_CST);
    check_all(r, 500, "the page put right");
    assert_int_equal(tide_store_close(r), 0);
    assert_int_equal(tide_store_close(s), 0);
}

static void a_huge_count_has_a_bounded_power_of_two(void **state)
{
    (void)state;
    assert_int_equal(ti_fmt_ceil_pow2(1), 1);
    assert_int_equal(ti_fmt_ceil_pow2(5), 8);
    assert_int_equal(ti_fmt_ceil_pow2(1ull << 40), 1ull << 40);
    assert_true(ti_fmt_ceil_pow2((1ull << 63) + 5) == 1ull << 63);     /* no loop for ever */
    assert_true(ti_fmt_ceil_pow2(UINT64_MAX) == 1ull << 63);
}

/* ---- 10: a rollback between two looks ---- */

static void a_rollback_between_two_refreshes_empties_the_readers_tail(void **state)
{
    char dir[4096];
    tide_store *r = NULL;
    uint8_t key[KEY_SIZE];
    (void)state;

    make_store(dir, sizeof dir);
    tide_store *s = writer_with_reader(dir, 1000, &r);
    uint64_t w = s->dat_size;
    /* Phase A of the deferred index, by hand: [1000, 1300) past W. */
    uint64_t c1 = append_records(dir, w, 1000, 1300);
    s->dat_committed = c1;
    ti_live_publish(s);
    check_all(r, 1300, "C raised");
    assert_int_equal(r->live->tail.count, 300);
    /* Rolled back (C to W), then other records over the same offsets and
     * past c1, before the reader looks again. */
    ti_live_rollback(s);
    s->dat_committed = w;
    ti_live_end(s);
    uint64_t c2 = append_records(dir, w, 5000, 5400);
    assert_true(c2 > c1);
    s->dat_committed = c2;
    ti_live_publish(s);
    shared counts;
    memset(&counts, 0, sizeof counts);
    for (uint64_t i = 5000; i < 5400; i++) check_item(r, i, &counts);
    if (counts.errors || counts.false_misses || counts.wrong)
        fail_msg("after a rollback and a new tail: %llu errors (%s), %llu misses, %llu wrong",
                 (unsigned long long)counts.errors, counts.first_error,
                 (unsigned long long)counts.false_misses, (unsigned long long)counts.wrong);
    th_key(1000, KEY_SIZE, key);
    assert_int_equal(tide_store_contains(r, key), 0);          /* rolled back: gone */
    assert_int_equal(r->live->tail.count, 400);

    /* Counts read under a seq that has moved on are not kept. */
    uint64_t s1 = s->live->w[TI_LIVE_SEQ], c_view = r->live->C, v_view = r->live->view_seq;
    assert_int_equal(s1, v_view);
    uint64_t c3 = append_records(dir, c2, 6000, 6050);
    s->dat_committed = c3;
    ti_live_publish(s);               /* s1 -> s1 + 2 */
    s->dat_committed = c3;
    ti_live_publish(s);               /* s1 + 4 */
    assert_int_equal(ti_reader_refresh(r, s1 + 2), 0);
    assert_int_equal(r->live->C, c_view);                     /* not c3 under a stale seq */
    assert_int_equal(r->live->view_seq, v_view);
    th_key(6010, KEY_SIZE, key);
    assert_int_equal(tide_store_contains(r, key), 1);
    assert_int_equal(r->live->C, c3);
    assert_int_equal(tide_store_close(r), 0);
    s->dat_indexed = s->dat_committed = s->dat_size;
    ti_live_publish(s);
    assert_int_equal(tide_store_close(s), 0);
}

/* ---- 11: a rollback that fails ---- */

/* The POSIX file system, but every write to nudb.key fails once armed
 * (trick_open above finds nudb.key). */
static tide_io broken_io;
static int broken_armed;

static int broken_write_at(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    if (f == trick_key && __atomic_load_n(&broken_armed, __ATOMIC_ACQUIRE))
        return tide_err_set(TIDE_EIO, "nudb.key: write failed (test)");
    return tide_io_posix()->write_at(f, buf, len, off);
}

static void a_broken_rollback_tells_readers_at_once_to_restart_the_writer(void **state)
{
    char dir[4096];
    tide_store *s = NULL, *r = NULL;
    tide_store_opts o;
    uint8_t key[KEY_SIZE];
    void *v = NULL;
    size_t len = 0;
    (void)state;

    make_store(dir, sizeof dir);
    broken_io = *tide_io_posix();
    broken_io.open = trick_open;
    broken_io.write_at = broken_write_at;
    th_store_opts(&o);
    o.io = &broken_io;
    assert_int_equal(tide_store_open(&s, dir, &o), 0);
    insert_range(s, 0, 300);
    assert_int_equal(tide_store_sync(s), 0);
    assert_int_equal(open_reader(&r, dir), 0);
    assert_non_null(r->live);
    __atomic_store_n(&broken_armed, 1, __ATOMIC_RELEASE);
    tide_log_set_sink(th_log_discard_sink, NULL);
    insert_range(s, 300, 400);
    assert_true(tide_store_sync(s) != 0);        /* the commit and its rollback failed */
    tide_log_set_sink(NULL, NULL);
    th_key(7, KEY_SIZE, key);
    double t0 = th_now_ms();
    int rc = tide_store_fetch(r, key, &v, &len);
    double took = th_now_ms() - t0;
    assert_int_equal(rc, TIDE_EBUSY);
    assert_null(v);
    expect_contains(tide_last_error(), "restart its writer", "the message");
    print_message("broken writer: the fetch said so after %.1f ms: %s\n", took, tide_last_error());
    assert_true(took < TI_LIVE_WAIT_MS);
    assert_int_equal(tide_store_close(r), 0);
    /* A reader that comes now is refused by attach, with the same words. */
    r = NULL;
    assert_int_equal(open_reader(&r, dir), TIDE_EBUSY);
    expect_contains(tide_last_error(), "restart its writer", "a new reader's refusal");
    tide_log_set_sink(th_log_discard_sink, NULL);
    tide_store_close(s);
    tide_log_set_sink(NULL, NULL);
    __atomic_store_n(&broken_armed, 0, __ATOMIC_RELEASE);
    /* The restart recovers; nothing acknowledged is lost. */
    s = open_writer(dir);
    check_all(s, 300, "after the restart");
    assert_int_equal(tide_store_close(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(a_reader_process_sees_no_wrong_value_and_no_false_miss_while_buckets_split, th_teardown),
        cmocka_unit_test_teardown(a_reader_process_sees_no_false_miss_under_the_deferred_index, th_teardown),
        cmocka_unit_test_teardown(a_writer_killed_under_a_reader_is_reported_and_loses_nothing, th_teardown),
        cmocka_unit_test_teardown(with_no_writer_a_read_only_open_is_as_before, th_teardown),
        cmocka_unit_test_teardown(a_writer_open_passes_tide_readers_but_not_other_holders, th_teardown),
        cmocka_unit_test_teardown(the_tail_between_w_and_c_is_found_through_the_readers_own_index, th_teardown),
        cmocka_unit_test_teardown(a_bucket_read_that_a_write_overlapped_is_read_again, th_teardown),
        cmocka_unit_test_teardown(verify_live_checks_a_running_store_and_names_damage, th_teardown),
        cmocka_unit_test_teardown(a_writer_runs_without_a_tide_live_it_cannot_open, th_teardown),
        cmocka_unit_test_teardown(a_page_less_writer_refuses_while_a_reader_holds_the_old_page, th_teardown),
        cmocka_unit_test_teardown(another_users_tide_live_warns_the_writer_and_names_itself_to_readers, th_teardown),
        cmocka_unit_test_teardown(a_page_whose_counts_do_not_fit_the_files_is_refused_not_trusted, th_teardown),
        cmocka_unit_test(a_huge_count_has_a_bounded_power_of_two),
        cmocka_unit_test_teardown(a_rollback_between_two_refreshes_empties_the_readers_tail, th_teardown),
        cmocka_unit_test_teardown(a_broken_rollback_tells_readers_at_once_to_restart_the_writer, th_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
