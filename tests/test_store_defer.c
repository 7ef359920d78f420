/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_defer.c: the deferred index (src/store/defer.c).
 *
 * On the real file system: fetch and the duplicate check find entries in
 * the tail; the budget bounds the tail and triggers flushes; a clean close
 * leaves NuDB's three files (no log) that verify passes; lag 0 writes no
 * tide.meta. A writer killed with SIGKILL while its tail holds acknowledged
 * records: `tide recover` (tide_store_recover_io) indexes them and leaves
 * NuDB's files; NuDB's recovery (its rules applied byte by byte:
 * nudb_rules.c) refuses the idle log the killed writer left, at its
 * pepper, and changes nothing. tide.meta torn (the other slot wins), foreign (ignored)
 * or claiming more than nudb.dat holds (refused, nothing changed); a
 * damaged record in the tail is refused with its offset, nothing changed.
 * Recovery sizes the tail's table for the records [W, C) holds, not for
 * the most its bytes could hold, and counts it.
 * The crash images of every write and sync are test_store_durability.c's
 * *_deferred tests; kill -9 at random moments, test_store_kill9's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "nudb_rules.h"
#include "expect.h"
#include "io/io_sim.h"
#include "store/format.h"
#include "store/meta.h"
#include "tide/log.h"
#include "util/clock.h"
#include "store/full.h"

#define KEY 32
#define VMIN 1
#define VMAX 300
#define SLOW 600000u      /* commits only when a sync asks */

typedef struct dstate {
    char dir[4096];
    char path[4200];
} dstate;

static int setup(void **state)
{
    dstate *d = calloc(1, sizeof *d);
    tide_store_create_opts c;

    if (d == NULL || th_mkdtemp(d->dir, sizeof d->dir) != 0) return -1;
    tide_store_create_opts_init(&c);
    c.key_size = KEY;
    if (tide_store_create(d->dir, &c) != 0) return -1;
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    dstate *d = *state;
    th_children_stop(1);
    if (d) th_rmrf(d->dir);
    free(d);
    return 0;
}

static const char *file_in(dstate *d, const char *name)
{
    snprintf(d->path, sizeof d->path, "%s/%s", d->dir, name);
    return d->path;
}

static tide_store *open_lag(dstate *d, uint64_t lag)
{
    tide_store_opts o;
    tide_store *s = NULL;

    th_store_opts(&o);
    o.commit_interval_ms = SLOW;
    o.index_lag_bytes = lag;
    expect_ok(tide_store_open(&s, d->dir, &o), "open with the index deferred");
    return s;
}

static void expect_verify_keys(dstate *d, uint64_t keys, const char *what)
{
    tide_verify_report r;
    expect_ok(tide_store_verify_io(d->dir, NULL, &r), what);
    expect_u64(r.keys, keys, what);
    expect_u64(r.data_records, keys, what);
}

static void fetch_and_dup_check_find_tail_entries_and_the_budget_flushes(void **state)
{
    dstate *d = *state;
    tide_store *s = open_lag(d, 4096);       /* 256 slots: at most 192 entries */
    tide_store_info info;
    uint64_t most = 0;
    uint8_t key[KEY];

    for (uint64_t at = 0; at < 2000; at += 50) {
        expect_inserted(s, at, at + 50, KEY, VMIN, VMAX, "insert a batch");
        expect_ok(tide_store_sync(s), "sync");
        tide_store_get_info(s, &info);
        if (info.tail_items > 192)
            fail_msg("after %llu items: the tail holds %llu entries, over its limit of 192",
                     (unsigned long long)(at + 50), (unsigned long long)info.tail_items);
        if (info.tail_items > most) most = info.tail_items;
        if (info.dat_indexed > info.dat_committed || info.dat_committed != info.dat_file_bytes)
            fail_msg("W %llu, C %llu, data file %llu: expected W <= C == the data file's end",
                     (unsigned long long)info.dat_indexed, (unsigned long long)info.dat_committed,
                     (unsigned long long)info.dat_file_bytes);
        /* The newest batch sits in the tail (or was just flushed): found. */
        expect_items(s, 0, at + 50, KEY, VMIN, VMAX, "every item so far fetches");
        th_key(at + 49, KEY, key);
        expect_error(tide_store_insert(s, key, "x", 1), TIDE_EEXIST, "a duplicate of the newest item");
    }
    tide_store_get_info(s, &info);
    if (most < 50 || info.index_flushes < 8)
        fail_msg("expected the tail to hold batches (most %llu >= 50) and the budget to flush "
                 "it 8 times or more, got %llu flushes", (unsigned long long)most,
                 (unsigned long long)info.index_flushes);
    expect_u64(info.index_lag_bytes, 4096, "the budget reported");
    expect_closed(&s, "close flushes the tail");
    if (th_exists(file_in(d, "nudb.log"))) fail_msg("a clean close left nudb.log");
    expect_verify_keys(d, 2000, "verify after a clean close (NuDB's files)");
    expect_ok(th_store_open(&s, d->dir), "reopen without a lag");
    expect_items(s, 0, 2000, KEY, VMIN, VMAX, "every item after reopen");
    expect_closed(&s, "close");
}

/* A tail that fills at a small part of the store's items makes each flush
 * rewrite most of the key file for few items: the first flush that finds
 * the tail under 1/8 of the items says so, once, with a lag that holds a
 * quarter of them; flushes before it, with the tail a larger part, say
 * nothing. */
static void a_tail_short_of_the_store_s_items_is_named_once_with_the_lag_that_would_do(void **state)
{
    dstate *d = *state;
    tide_store *s = open_lag(d, 4096);       /* at most 192 entries */
    tide_store_info info;
    th_log_capture cap;

    memset(&cap, 0, sizeof cap);
    tide_log_set_level(TIDE_LOG_WARN);
    tide_log_set_sink(th_log_capture_sink, &cap);
    for (uint64_t at = 0; at < 1000; at += 50) {
        expect_inserted(s, at, at + 50, KEY, VMIN, VMAX, "insert a batch");
        expect_ok(tide_store_sync(s), "sync");
    }
    tide_store_get_info(s, &info);
    if (info.index_flushes < 4 || cap.warnings != 0)
        fail_msg("up to 1000 items (the tail 1/5 of them or more): expected 4 flushes or more and no "
                 "warning, got %llu flushes and %d warnings: %s", (unsigned long long)info.index_flushes,
                 cap.warnings, cap.text);
    for (uint64_t at = 1000; at < 4000; at += 50) {
        expect_inserted(s, at, at + 50, KEY, VMIN, VMAX, "insert a batch");
        expect_ok(tide_store_sync(s), "sync");
    }
    tide_log_set_sink(NULL, NULL);
    tide_log_set_level(TIDE_LOG_OFF);
    if (cap.warnings != 1)
        fail_msg("expected one warning by 4000 items, got %d: %s", cap.warnings, cap.text);
    expect_contains(cap.text, "the deferred index's tail is full at 192 entries, 11.", "the tail's size and share");
    expect_contains(cap.text, "An index lag of 16 KiB (now 4 KiB;", "the lag that holds a quarter of the items");
    expect_contains(cap.text, d->dir, "the store named");
    expect_closed(&s, "close");
}

static void lag_zero_writes_no_tide_meta_and_keeps_w_equal_to_c(void **state)
{
    dstate *d = *state;
    tide_store *s = open_lag(d, 0);
    tide_store_info info;

    expect_inserted(s, 0, 300, KEY, VMIN, VMAX, "insert");
    expect_ok(tide_store_flush(s), "flush is sync without a lag");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 0, "no tail");
    expect_u64(info.dat_indexed, info.dat_file_bytes, "W is the data file's end");
    expect_u64(info.dat_committed, info.dat_file_bytes, "C is the data file's end");
    expect_closed(&s, "close");
    if (th_exists(file_in(d, TI_META_NAME))) fail_msg("lag 0 wrote tide.meta");
}

static void flush_indexes_the_tail_and_returns_when_there_is_nothing_to_flush(void **state)
{
    dstate *d = *state;
    tide_store *s = open_lag(d, 1u << 20);
    tide_store_info info;

    expect_ok(tide_store_flush(s), "flush of an empty store");
    expect_inserted(s, 0, 500, KEY, VMIN, VMAX, "insert");
    expect_ok(tide_store_sync(s), "sync");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 500, "after a sync the batch waits in the tail");
    if (info.dat_indexed >= info.dat_committed) fail_msg("after a sync: expected W < C");
    expect_ok(tide_store_flush(s), "flush");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 0, "after a flush the tail is empty");
    expect_u64(info.tail_bytes, 0, "and its table freed");
    expect_u64(info.index_flushes, 1, "one flush counted");
    expect_u64(info.dat_indexed, info.dat_file_bytes, "W is the data file's end");
    expect_ok(tide_store_flush(s), "a second flush with nothing to flush");
    expect_items(s, 0, 500, KEY, VMIN, VMAX, "every item through the key file");
    expect_closed(&s, "close");
    expect_verify_keys(d, 500, "verify");
}

/* A child opens with a lag, inserts batches of `batch` items `batches`
 * times with a sync after each (nothing flushes: the budget is large), says
 * so on a pipe, and waits to be killed. */
static void kill_with_values(dstate *d, uint64_t batch, unsigned batches, unsigned vmin,
                             unsigned vmax)
{
    int fd[2], status;
    char ok = 0;
    pid_t pid;

    assert_int_equal(pipe(fd), 0);
    pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tide_store_opts o;
        tide_store *s;
        tide_store_opts_init(&o);
        o.commit_interval_ms = SLOW;
        o.index_lag_bytes = 1u << 20;
        if (tide_store_open(&s, d->dir, &o) != 0) _exit(3);
        for (unsigned b = 0; b < batches; b++) {
            if (th_store_insert_items(s, b * batch, (b + 1) * batch, KEY, vmin, vmax, NULL)) _exit(4);
            if (tide_store_sync(s) != 0) _exit(5);
        }
        if (write(fd[1], "y", 1) != 1) _exit(6);
        for (;;) pause();
    }
    close(fd[1]);
    if (read(fd[0], &ok, 1) != 1 || ok != 'y') fail_msg("the writer failed before its syncs");
    close(fd[0]);
    kill(pid, SIGKILL);
    th_waitpid(pid, &status, 0);
}

static void kill_with_a_tail(dstate *d, uint64_t batch, unsigned batches)
{
    kill_with_values(d, batch, batches, VMIN, VMAX);
}

/* What the store gave note_alloc for the tail's account. */
#define TAIL_ID 7
static uint64_t tail_noted, tail_noted_largest;

static void note_tail(int id, int64_t bytes)
{
    if (id != TAIL_ID) return;
    tail_noted += (uint64_t)bytes;
    if ((uint64_t)bytes > tail_noted_largest) tail_noted_largest = (uint64_t)bytes;
}

/* Recovery sizes the tail's table for the records [W, C) holds, not for
 * the most it could hold ((C - W) / 39: one-byte values), which with large
 * values would be hundreds of times too big; and it counts the table.
 * 1000 records of 4000-byte values (~4 MB of nudb.dat) need 2048 slots
 * (32 KiB); sizing for the most would take 2^18 (4 MiB). */
static void recovery_sizes_the_tail_for_the_records_it_holds(void **state)
{
    dstate *d = *state;
    uint64_t n = 1000, want = 2048 * 16;       /* the smallest power of two with n <= 3/4 of it */
    tide_store_opts o;
    tide_store *s = NULL;

    kill_with_values(d, 200, 5, 4000, 4000);
    th_store_opts(&o);
    o.note_alloc = note_tail;
    o.tail_account_id = TAIL_ID;
    tail_noted = tail_noted_largest = 0;
    expect_ok(tide_store_open(&s, d->dir, &o), "the open recovers and indexes the tail");
    expect_items(s, 0, n, KEY, 4000, 4000, "every acknowledged item");
    expect_closed(&s, "close");
    if (tail_noted_largest != want)
        fail_msg("recovering %llu records: the tail's largest table was %llu bytes (noted), "
                 "expected %llu (proportional to the records, not to the bytes of nudb.dat)",
                 (unsigned long long)n, (unsigned long long)tail_noted_largest,
                 (unsigned long long)want);
    /* Doubling from 16 slots: every table noted, their sum under 2x the last. */
    if (tail_noted >= 2 * want)
        fail_msg("the tail's tables noted %llu bytes in all, expected under %llu",
                 (unsigned long long)tail_noted, (unsigned long long)(2 * want));
    expect_verify_keys(d, n, "verify after the recovery");
}

/* `tide VERB DIR` (stderr joined): its exit status; *out its output (the
 * caller frees it). */
static int tide_status(dstate *d, const char *verb, char **out)
{
    char args[4400];
    snprintf(args, sizeof args, "%s '%s'", verb, d->dir);
    return th_run_tide(args, 1, out);
}

/* NuDB's recovery (its rules, byte by byte: tests/nudb_rules.c) on the
 * files a killed deferred writer left: `want` its verdict. */
static th_nudb_result nudb_recovery(dstate *d, th_nudb_verdict want, int apply, const char *what)
{
    th_nudb_result res;

    if (th_nudb_recover(tide_io_posix(), d->dir, apply, &res) != 0)
        fail_msg("%s: NuDB's recovery could not read the files", what);
    if (res.verdict != want)
        fail_msg("%s: NuDB's recovery: verdict %d (0 clean, 1 recovers to nudb.dat %llu, "
                 "2 refuses: %s), expected %d", what, (int)res.verdict,
                 (unsigned long long)res.dat_to, res.why, (int)want);
    return res;
}

/* A deferred writer killed with 1000 acknowledged records past W leaves an
 * idle log whose pepper carries Tide's mark: NuDB's recovery fails its
 * first check of the log (the pepper against XXH64 of the salt) before it
 * writes anything, so NuDB (rippled) refuses the store instead of cutting
 * nudb.dat to W; Tide recovers every record, and leaves files NuDB opens. */
static void a_killed_writer_s_idle_log_is_refused_by_nudb_and_tide_recovers_every_record(void **state)
{
    dstate *d = *state;
    tide_recover_report rep;
    tide_store_info info;
    th_nudb_result res;
    th_snapshot sn;
    tide_store *s;
    char why[128];

    kill_with_a_tail(d, 200, 5);
    expect_ok(tide_store_inspect(d->dir, NULL, &info), "inspect the killed store");
    if (!info.needs_recovery) fail_msg("the killed deferred store has no idle log");
    if (th_file_size(file_in(d, "nudb.log")) != TIDE_LOG_HEADER_SIZE)
        fail_msg("the idle log is %lld bytes, expected its 62-byte header alone",
                 th_file_size(file_in(d, "nudb.log")));
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    res = nudb_recovery(d, TH_NUDB_REFUSES, 1, "the killed deferred store");
    expect_contains(res.why, "nudb.log: hash mismatch", "NuDB's refusal: the log's pepper");
    expect_unchanged(d->dir, &sn, "NuDB's refused recovery");
    th_snapshot_free(&sn);
    /* Tide's recovery keeps and indexes the tail. */
    expect_ok(tide_store_recover_io(d->dir, NULL, &rep), "tide recover");
    expect_u64(rep.tail_from, TIDE_DAT_HEADER_SIZE, "the tail starts at W");
    if (rep.tail_to <= rep.tail_from) fail_msg("recover reported no tail");
    if (th_exists(file_in(d, "nudb.log"))) fail_msg("tide recover left nudb.log: not NuDB's files");
    expect_verify_keys(d, 1000, "verify after tide recover");
    nudb_recovery(d, TH_NUDB_CLEAN, 0, "after tide recover");
    if (th_nudb_opens(tide_io_posix(), d->dir, why, sizeof why) != 1)
        fail_msg("after tide recover NuDB refuses to open the store: %s", why);
    expect_ok(th_store_open(&s, d->dir), "open");
    expect_items(s, 0, 1000, KEY, VMIN, VMAX, "every acknowledged item");
    expect_closed(&s, "close");
    nudb_recovery(d, TH_NUDB_CLEAN, 0, "after a clean close");
    if (th_nudb_opens(tide_io_posix(), d->dir, why, sizeof why) != 1)
        fail_msg("after a clean close NuDB refuses to open the store: %s", why);
}

/* NuDB opened the crashed store first (its rule: nudb.dat cut to W, the
 * log removed; tide.meta, unknown to it, left as it was). A later Tide
 * writer, killed before any commit, must not find that old slot matching
 * its own idle log and claim records NuDB cut. */
static void a_stale_tide_meta_after_nudbs_recovery_claims_nothing(void **state)
{
    dstate *d = *state;
    char aside[4400];
    tide_recover_report rep;
    tide_store *s;

    kill_with_a_tail(d, 200, 5);
    snprintf(aside, sizeof aside, "%s.aside", file_in(d, "tide.meta"));
    assert_int_equal(rename(file_in(d, "tide.meta"), aside), 0);
    expect_ok(tide_store_recover_io(d->dir, NULL, &rep), "NuDB's recovery (no tide.meta)");
    expect_u64(rep.dat_truncated_to, TIDE_DAT_HEADER_SIZE, "nudb.dat cut to W");
    assert_int_equal(rename(aside, file_in(d, "tide.meta")), 0);
    kill_with_a_tail(d, 200, 0);         /* a deferred writer killed before any commit */
    expect_ok(tide_store_recover_io(d->dir, NULL, &rep), "recovery after the second kill");
    expect_verify_keys(d, 0, "the store NuDB left: nothing past W");
    expect_ok(th_store_open(&s, d->dir), "open");
    expect_closed(&s, "close");
}

/* ---- another writer on top of a Tide crash ---- */

/* The idle log a Tide without the deferred mark left: the true pepper. */
static void unmark_idle_log(dstate *d)
{
    uint8_t lh[TIDE_LOG_HEADER_SIZE];
    assert_int_equal(th_pread_file(file_in(d, "nudb.log"), lh, sizeof lh, 0), 0);
    ti_put64(lh + 36, ti_fmt_pepper(ti_get64(lh + 28)));
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.log"), lh, sizeof lh, 0), 0);
}

/* NuDB's commit of `n` new items, killed after it synced its log (header
 * and the pre-image of bucket 0) and appended its records, while it was
 * writing bucket 0: the log's header is NuDB's (true pepper, the files'
 * sizes before the commit), byte for byte. */
static void nudb_commit_killed(dstate *d, uint64_t n)
{
    uint8_t kh[TIDE_KEY_HEADER_SIZE], lh[TIDE_LOG_HEADER_SIZE], *bucket, rec[6 + KEY + VMAX];
    long long dat = th_file_size(file_in(d, "nudb.dat")), key = th_file_size(file_in(d, "nudb.key"));
    unsigned bs;

    assert_int_equal(th_pread_file(file_in(d, "nudb.key"), kh, sizeof kh, 0), 0);
    bs = ti_get16(kh + 44);
    memset(lh, 0, sizeof lh);
    memcpy(lh, "nudb.log", 8);
    memcpy(lh + 8, kh + 8, 20);                 /* version, uid, appnum, key size */
    memcpy(lh + 28, kh + 28, 18);               /* salt, pepper, block size */
    ti_put64(lh + 46, (uint64_t)key);
    ti_put64(lh + 54, (uint64_t)dat);
    bucket = calloc(1, 8 + bs);
    assert_non_null(bucket);
    assert_int_equal(th_pread_file(file_in(d, "nudb.key"), bucket + 8, bs, bs), 0);
    ti_put64(bucket, 0);                        /* bucket index 0, its pre-image */
    assert_int_equal(th_write_file(file_in(d, "nudb.log"), lh, sizeof lh), 0);
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.log"), bucket,
                                    8 + 8 + 18 * (size_t)ti_get16(bucket + 8), sizeof lh), 0);
    for (uint64_t i = 0; i < n; i++) {
        size_t len = th_len(50000 + i, VMIN, VMAX);
        ti_put48(rec, len);
        th_key(50000 + i, KEY, rec + 6);
        th_value(50000 + i, len, rec + 6 + KEY);
        assert_int_equal(th_pwrite_file(file_in(d, "nudb.dat"), rec, 6 + KEY + len, (uint64_t)dat), 0);
        dat += (long long)(6 + KEY + len);
    }
    memset(bucket, 0x5a, 40);                   /* bucket 0 half written */
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.key"), bucket, 40, bs), 0);
    free(bucket);
}

/* A Tide writer killed with 1000 acknowledged records past W; NuDB
 * recovered the store (the idle log as a Tide without the deferred mark
 * wrote it: nudb.dat cut to W, the log removed, tide.meta left as it was);
 * NuDB was then killed in its first commit (5 items, and 1500: more bytes
 * than tide.meta's [W, C)). The log now records W again, as the old slot
 * does, but it is NuDB's: `tide recover` must roll NuDB's commit back as
 * NuDB would (the same bytes as NuDB's own recovery gives), never take the
 * stale C, and exit 0. */
static void a_nudb_commit_killed_after_nudb_recovered_a_tide_crash_is_rolled_back_as_nudb_would(
    void **state)
{
    static const uint64_t batches[2] = { 5, 1500 };
    dstate *d = *state;

    for (int b = 0; b < 2; b++) {
        char copy[4096], path[4200], *out = NULL;
        uint8_t *want = NULL, *got = NULL;
        size_t want_len = 0, got_len = 0;
        th_nudb_result res;
        tide_store *s;

        if (b) {
            assert_int_equal(teardown(state), 0);
            assert_int_equal(setup(state), 0);
            d = *state;
        }
        kill_with_a_tail(d, 200, 5);
        unmark_idle_log(d);
        res = nudb_recovery(d, TH_NUDB_RECOVERS, 1, "NuDB's recovery of the unmarked idle log");
        expect_u64(res.dat_to, TIDE_DAT_HEADER_SIZE, "NuDB cuts nudb.dat to W");
        if (!th_exists(file_in(d, TI_META_NAME))) fail_msg("tide.meta is gone: NuDB leaves it");
        nudb_commit_killed(d, batches[b]);
        /* What NuDB's own recovery makes of it, on a copy. */
        assert_int_equal(th_mkdtemp(copy, sizeof copy), 0);
        for (int i = 0; i < 3; i++) {
            static const char *const names[3] = { "nudb.dat", "nudb.key", "nudb.log" };
            assert_int_equal(th_copy_file(file_in(d, names[i]), th_path(path, sizeof path, copy, names[i])), 0);
        }
        if (th_nudb_recover(tide_io_posix(), copy, 1, &res) != 0 || res.verdict != TH_NUDB_RECOVERS)
            fail_msg("NuDB's recovery of its own killed commit: verdict %d (%s)", (int)res.verdict, res.why);
        /* Tide's. */
        int rc = tide_status(d, "recover", &out);
        if (rc != 0) fail_msg("batch of %llu: tide recover exited %d, expected 0: %s",
                              (unsigned long long)batches[b], rc, out);
        if (strstr(out, "kept and indexed")) fail_msg("tide recover kept tide.meta's stale C: %s", out);
        free(out);
        for (int i = 0; i < 2; i++) {
            static const char *const names[2] = { "nudb.dat", "nudb.key" };
            assert_int_equal(th_read_file(th_path(path, sizeof path, copy, names[i]), &want, &want_len), 0);
            assert_int_equal(th_read_file(file_in(d, names[i]), &got, &got_len), 0);
            if (got_len != want_len || memcmp(got, want, got_len) != 0)
                fail_msg("batch of %llu: %s after tide recover is %zu bytes, NuDB's recovery gives "
                         "%zu bytes%s", (unsigned long long)batches[b], names[i], got_len, want_len,
                         got_len == want_len ? " (different bytes)" : "");
            free(want);
            free(got);
        }
        th_rmrf(copy);
        if (th_exists(file_in(d, "nudb.log"))) fail_msg("tide recover left nudb.log");
        expect_verify_keys(d, 0, "the store NuDB's recovery gives: nothing past W");
        expect_ok(th_store_open(&s, d->dir), "open");
        expect_inserted(s, 0, 100, KEY, VMIN, VMAX, "inserts after the recovery");
        expect_closed(&s, "close");
    }
}

/* A refusal that says nothing was changed must find the files as they
 * were: a damaged record in [W, C) and, past C, the start of an append
 * the writer never finished. The recovery before the open's scan must
 * not cut that append (or write anything) before it knows it will refuse. */
static void a_refused_recovery_changes_nothing_when_it_says_so(void **state)
{
    dstate *d = *state;
    static const uint8_t torn[10] = { 0, 0, 0, 0, 1, 0 };
    uint8_t size48[6];
    th_snapshot sn;
    tide_store *s = NULL;
    char *out = NULL;
    uint64_t at = TIDE_DAT_HEADER_SIZE + TIDE_DAT_RECORD_HEADER + KEY + th_len(0, VMIN, VMAX);

    kill_with_a_tail(d, 100, 1);
    ti_put48(size48, 0xffffffffffull);       /* record 1's size runs past C */
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.dat"), size48, 6, at), 0);
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.dat"), torn, sizeof torn,
                                    (uint64_t)th_file_size(file_in(d, "nudb.dat"))), 0);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    expect_error(th_store_open(&s, d->dir), TIDE_ECORRUPT, "open: a record of the tail is damaged");
    expect_contains(tide_last_error(), "Nothing was changed", "the message");
    expect_unchanged(d->dir, &sn, "the refused open");
    if (tide_status(d, "recover", &out) == 0) fail_msg("tide recover succeeded: %s", out);
    expect_contains(out, "Nothing was changed", "tide recover's message");
    free(out);
    expect_unchanged(d->dir, &sn, "the refused tide recover");
    th_snapshot_free(&sn);
}

/* Rewrite the winning slot of tide.meta with `edit` applied. */
static void edit_meta(dstate *d, void (*edit)(ti_meta *m, uint8_t *slot))
{
    uint8_t buf[2 * TI_META_SLOT];
    ti_meta a, b;
    int wa, wb, w;

    assert_int_equal(th_pread_file(file_in(d, TI_META_NAME), buf, sizeof buf, 0), 0);
    wa = ti_meta_decode(buf, &a);
    wb = ti_meta_decode(buf + TI_META_SLOT, &b);
    if (!wa && !wb) fail_msg("tide.meta has no valid slot");
    w = wa && (!wb || a.seq > b.seq) ? 0 : 1;
    edit(w ? &b : &a, buf + w * TI_META_SLOT);
    assert_int_equal(th_pwrite_file(file_in(d, TI_META_NAME), buf + w * TI_META_SLOT,
                                    TI_META_SLOT, (uint64_t)w * TI_META_SLOT), 0);
}

static void tear(ti_meta *m, uint8_t *slot) { (void)m; slot[40] ^= 0x10; }
static void foreign(ti_meta *m, uint8_t *slot) { m->uid ^= 1; ti_meta_encode(slot, m); }
static void too_far(ti_meta *m, uint8_t *slot) { m->dat_committed += 1000; ti_meta_encode(slot, m); }

static void a_torn_tide_meta_slot_falls_back_to_the_other(void **state)
{
    dstate *d = *state;
    tide_store *s;

    kill_with_a_tail(d, 100, 2);
    edit_meta(d, tear);      /* the newest slot (batch 2's C) fails its checksum */
    expect_ok(th_store_open(&s, d->dir), "open recovers");
    expect_items(s, 0, 100, KEY, VMIN, VMAX, "batch 1, under the older slot's C");
    {
        uint8_t key[KEY];
        void *v = NULL;
        size_t len = 0;
        th_key(150, KEY, key);
        expect_rc(tide_store_fetch(s, key, &v, &len), TIDE_ENOTFOUND, "batch 2: past the older C");
    }
    expect_closed(&s, "close");
    expect_verify_keys(d, 100, "verify");
}

static void a_foreign_or_missing_tide_meta_is_ignored(void **state)
{
    dstate *d = *state;
    tide_store *s;

    kill_with_a_tail(d, 100, 2);
    edit_meta(d, foreign);
    expect_ok(th_store_open(&s, d->dir), "open with another store's tide.meta");
    expect_closed(&s, "close");
    expect_verify_keys(d, 0, "a foreign tide.meta keeps nothing past W (NuDB's rule)");
    assert_int_equal(teardown(state), 0);
    assert_int_equal(setup(state), 0);
    d = *state;
    kill_with_a_tail(d, 100, 1);
    assert_int_equal(unlink(file_in(d, TI_META_NAME)), 0);
    expect_ok(th_store_open(&s, d->dir), "open without tide.meta");
    expect_closed(&s, "close");
    expect_verify_keys(d, 0, "no tide.meta: NuDB's rule");
}

static void a_tide_meta_past_the_data_file_is_refused_and_nothing_changes(void **state)
{
    dstate *d = *state;
    th_snapshot sn;
    tide_store *s = NULL;

    kill_with_a_tail(d, 100, 1);
    edit_meta(d, too_far);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    expect_error(th_store_open(&s, d->dir), TIDE_ECORRUPT, "open: committed records are missing");
    expect_contains(tide_last_error(), "acknowledged records are missing", "the message");
    expect_unchanged(d->dir, &sn, "the refused open");
    /* A read-only open says the same, not "unfinished commit". */
    {
        tide_store_opts o;
        th_store_opts(&o);
        o.read_only = 1;
        expect_error(tide_store_open(&s, d->dir, &o), TIDE_ECORRUPT, "a read-only open");
        expect_contains(tide_last_error(), "acknowledged records are missing", "its message");
        expect_contains(tide_last_error(), "remove tide.meta", "its message: what to do");
        expect_unchanged(d->dir, &sn, "the refused read-only open");
    }
    th_snapshot_free(&sn);
}

static void a_damaged_record_in_the_tail_is_refused_with_its_offset(void **state)
{
    dstate *d = *state;
    uint8_t size48[6];
    th_snapshot sn;
    tide_store *s = NULL;
    char want[64];
    uint64_t at = TIDE_DAT_HEADER_SIZE + TIDE_DAT_RECORD_HEADER + KEY + th_len(0, VMIN, VMAX);

    kill_with_a_tail(d, 100, 1);
    ti_put48(size48, 0xffffffffffull);       /* record 1's size runs past C */
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.dat"), size48, 6, at), 0);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    expect_error(th_store_open(&s, d->dir), TIDE_ECORRUPT, "open: a record of the tail is damaged");
    snprintf(want, sizeof want, "offset %llu:", (unsigned long long)at);
    expect_contains(tide_last_error(), want, "the message names the record");
    /* The recovery before the scan keeps the idle log and cuts nothing below C. */
    expect_unchanged(d->dir, &sn, "the refused open");
    th_snapshot_free(&sn);
}

/* ---- read-only tools after a deferred writer's kill (the idle view) ---- */

static tide_store *open_reader(dstate *d)
{
    tide_store_opts o;
    tide_store *s = NULL;

    th_store_opts(&o);
    o.read_only = 1;
    expect_ok(tide_store_open(&s, d->dir, &o), "a read-only open of the killed store");
    return s;
}

/* `tide VERB 'DIR'` (stderr joined), its exit status asserted; its output
 * (the caller frees it). */
static char *tide_on(dstate *d, const char *verb, int status)
{
    char args[4400];
    char *out = NULL;

    snprintf(args, sizeof args, "%s '%s'", verb, d->dir);
    int rc = th_run_tide(args, 1, &out);
    if (rc != status) fail_msg("tide %s: exit status %d, expected %d: %s", verb, rc, status, out);
    return out;
}

static void key_hex(uint64_t i, char *hex)
{
    uint8_t key[KEY];
    th_key(i, KEY, key);
    for (unsigned k = 0; k < KEY; k++) sprintf(hex + 2 * k, "%02x", key[k]);
}

/* A deferred writer killed with 1000 acknowledged records in [W, C) (and,
 * past C, the first bytes of an append it never finished): a read-only
 * open reads the store as it is, the records through the tail, and the
 * files stay byte-identical. Before the fix it was refused ("nudb.log
 * holds an unfinished commit of 62 bytes"). */
static void a_killed_deferred_store_reads_as_it_is_without_recovery(void **state)
{
    dstate *d = *state;
    static const uint8_t torn[10] = { 0, 0, 0, 0, 1, 0 };
    tide_store_info info;
    tide_verify_report r;
    tide_visit_stats vs;
    th_snapshot sn;
    uint64_t dat_bytes = 0;
    tide_store *s;

    kill_with_a_tail(d, 200, 5);
    dat_bytes = (uint64_t)th_file_size(file_in(d, "nudb.dat"));
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.dat"), torn, sizeof torn, dat_bytes), 0);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    s = open_reader(d);
    expect_items(s, 0, 1000, KEY, VMIN, VMAX, "every acknowledged item, through the tail");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 1000, "the tail holds the unindexed records");
    expect_u64(info.dat_indexed, TIDE_DAT_HEADER_SIZE, "W: nothing indexed");
    expect_u64(info.dat_committed, dat_bytes, "C: the end of the acknowledged records");
    expect_closed(&s, "close the reader");
    expect_ok(tide_store_inspect(d->dir, NULL, &info), "inspect");
    if (!info.needs_recovery || !info.idle_log) fail_msg("inspect: expected the idle log, pending");
    expect_u64(info.dat_committed, dat_bytes, "inspect's C");
    expect_ok(tide_store_verify_io(d->dir, NULL, &r), "verify the indexed part");
    expect_u64(r.keys, 0, "verify: entries");
    expect_u64(r.data_records, 0, "verify: indexed records");
    expect_u64(r.tail_records, 1000, "verify: records waiting to be indexed");
    expect_u64(r.dat_file_bytes, dat_bytes, "verify: nudb.dat up to C");
    expect_ok(tide_store_visit_io(d->dir, NULL, NULL, NULL, &vs), "visit stops at C");
    expect_u64(vs.data_records, 1000, "visit's records");
    expect_unchanged(d->dir, &sn, "the read-only tools");
    th_snapshot_free(&sn);
    /* Then the writer's open indexes them, the torn append cut off. */
    expect_ok(th_store_open(&s, d->dir), "a writer's open recovers");
    expect_closed(&s, "close");
    expect_verify_keys(d, 1000, "verify after the recovery");
}

/* The CLI on the same store: get, info, visit and verify work, say what
 * waits, and change nothing. */
static void tide_get_info_visit_verify_work_on_a_killed_deferred_store(void **state)
{
    dstate *d = *state;
    char hex[2 * KEY + 1], args[9000], aside[4096], vpath[4200], want[256];
    uint8_t value[VMAX];
    size_t len = th_len(777, VMIN, VMAX);
    th_snapshot sn;
    char *out = NULL;

    kill_with_a_tail(d, 200, 5);
    assert_int_equal(th_mkdtemp(aside, sizeof aside), 0);
    th_value(777, len, value);
    snprintf(vpath, sizeof vpath, "%s/value", aside);
    assert_int_equal(th_write_file(vpath, value, len), 0);
    key_hex(777, hex);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    snprintf(args, sizeof args, "get '%s' %s | cmp - '%s' && echo same", d->dir, hex, vpath);
    assert_int_equal(th_run_tide(args, 1, &out), 0);
    expect_contains(out, "same", "tide get prints the unindexed record's value");
    free(out);
    out = tide_on(d, "info", 0);
    expect_contains(out, "recovery      PENDING, reads work", "tide info");
    expect_contains(out, "stopped without closing the store", "tide info: the writer line");
    free(out);
    out = tide_on(d, "verify", 0);
    expect_contains(out, "verdict          sound", "tide verify");
    expect_contains(out, "not indexed      1000 records", "tide verify: the tail");
    free(out);
    out = tide_on(d, "visit", 0);
    expect_contains(out, "data records    1000", "tide visit");
    snprintf(want, sizeof want, "of which those from offset %u are not yet indexed",
             (unsigned)TIDE_DAT_HEADER_SIZE);
    expect_contains(out, want, "tide visit: where the unindexed records begin");
    free(out);
    out = tide_on(d, "info --json", 0);
    snprintf(want, sizeof want, "\"dat_committed\": %lld", th_file_size(file_in(d, "nudb.dat")));
    expect_contains(out, want, "tide info --json: C of the idle log");
    free(out);
    expect_unchanged(d->dir, &sn, "tide get, info, verify, visit");
    th_snapshot_free(&sn);
    th_rmrf(aside);
    /* Recovered: no idle log, no W and C to give (not the file's size). */
    free(tide_on(d, "recover", 0));
    out = tide_on(d, "info --json", 0);
    /* Top-level keys in order: idle_log is followed by the writer object
     * (whose own dat_indexed is its page's). */
    expect_contains(out, "\"idle_log\": false,\n  \"writer\":",
                    "tide info --json: no W and C without an idle log");
    free(out);
}

/* A log with a pre-image (a flush or commit interrupted) is not the idle
 * log: refused, saying what to run, no "in use by another process" (no
 * process holds it), nothing changed. So is the idle log while another
 * process has the files open (a NuDB writer's commit starts the same). */
static void a_log_with_pre_images_or_a_holder_still_refuses_and_says_what_to_run(void **state)
{
    dstate *d = *state;
    uint8_t rec[16] = { 0 };          /* bucket 0, empty: index, count, spill */
    tide_store_opts o;
    tide_store *s = NULL;
    th_snapshot sn;
    char args[9000], hex[2 * KEY + 1], want[128];
    char *out = NULL;
    int fd[2], status;
    pid_t pid;

    kill_with_a_tail(d, 200, 1);
    th_store_opts(&o);
    o.read_only = 1;
    assert_int_equal(pipe(fd), 0);
    pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) {                       /* holds nudb.dat open, as a NuDB writer would */
        FILE *f = fopen(file_in(d, "nudb.dat"), "r");
        if (f == NULL || write(fd[1], "y", 1) != 1) _exit(3);
        for (;;) pause();
    }
    close(fd[1]);
    assert_int_equal(read(fd[0], args, 1), 1);
    close(fd[0]);
    expect_error(tide_store_open(&s, d->dir, &o), TIDE_EBUSY, "a read-only open beside a holder");
    snprintf(want, sizeof want, "nudb.dat is open in process %d (", (int)pid);
    expect_contains(tide_last_error(), want, "the refusal names the holder");
    expect_contains(tide_last_error(), "stop it if it writes the store, then run 'tide recover",
                    "the refusal: what to do");
    if (strstr(tide_last_error(), "unfinished commit"))
        fail_msg("the refusal blames an unfinished commit; the log has no pre-image: %s",
                 tide_last_error());
    key_hex(0, hex);
    snprintf(args, sizeof args, "get '%s' %s", d->dir, hex);
    assert_int_equal(th_run_tide(args, 1, &out), 1);
    expect_contains(out, want, "tide get names the holder");
    free(out);
    out = tide_on(d, "info", 0);
    expect_contains(out, "PENDING, reads refused", "tide info");
    expect_contains(out, want, "tide info names the holder");
    free(out);
    kill(pid, SIGKILL);
    th_waitpid(pid, &status, 0);
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.log"), rec, sizeof rec, TIDE_LOG_HEADER_SIZE), 0);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    expect_error(tide_store_open(&s, d->dir, &o), TIDE_EBUSY, "a read-only open of a pre-image log");
    expect_contains(tide_last_error(), "run 'tide recover", "the refusal says what to run");
    expect_contains(tide_last_error(), "nothing was read or written", "and that nothing changed");
    key_hex(0, hex);
    snprintf(args, sizeof args, "get '%s' %s", d->dir, hex);
    assert_int_equal(th_run_tide(args, 1, &out), 1);
    expect_contains(out, "nudb.log holds an unfinished commit of 78 bytes", "tide get");
    expect_contains(out, "or start the store's tided", "tide get: what to run");
    free(out);
    out = tide_on(d, "verify", 1);
    expect_contains(out, "run 'tide recover", "tide verify: what to run");
    if (strstr(out, "in use by another process"))
        fail_msg("tide verify blames another process, and none holds the store: %s", out);
    free(out);
    out = tide_on(d, "info", 0);
    expect_contains(out, "recovery      PENDING: nudb.log holds an unfinished commit", "tide info");
    free(out);
    expect_unchanged(d->dir, &sn, "the refused tools");
    th_snapshot_free(&sn);
}

/* ---- the idle view: each check can fail ---- */

static void copy_into_sim(dstate *d, tide_io_sim *sim)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log", TI_META_NAME };
    char path[64];

    if (tide_io_sim_mkdir(sim, "/db") != 0) fail_msg("sim: mkdir");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        if (!th_exists(file_in(d, names[i]))) continue;
        assert_int_equal(th_read_file(file_in(d, names[i]), &buf, &len), 0);
        snprintf(path, sizeof path, "/db/%s", names[i]);
        if (tide_io_sim_put_file(sim, path, buf, len) != 0) fail_msg("sim: put %s", names[i]);
        free(buf);
    }
}

/* tide.meta unreadable (EACCES for another user, EIO) gave C = W: 1000
 * acknowledged records read as missing. Every counted call of a read-only
 * open failed once: the open fails, or it reads every record; the fault
 * on tide.meta is an error naming it. */
static void a_fault_reading_tide_meta_is_an_error_never_missing_records(void **state)
{
    dstate *d = *state;
    tide_io_sim *sim = NULL;
    tide_store_opts o;
    unsigned named_meta = 0;

    kill_with_a_tail(d, 200, 5);
    assert_int_equal(tide_io_sim_create(&sim), 0);
    copy_into_sim(d, sim);
    th_store_opts(&o);
    o.read_only = 1;
    o.io = tide_io_sim_io(sim);
    for (uint64_t n = 1;; n++) {
        tide_store *s = NULL;
        uint64_t c0 = tide_io_sim_calls(sim), used;
        int rc;
        assert_int_equal(tide_io_sim_fail_at(sim, n, TIDE_IO_SIM_EIO, 0), 0);
        rc = tide_store_open(&s, "/db", &o);
        used = tide_io_sim_calls(sim) - c0;
        assert_int_equal(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0), 0);
        if (rc == 0) {
            expect_items(s, 0, 1000, KEY, VMIN, VMAX, "a read-only open that succeeded");
            expect_closed(&s, "close");
        } else if (strstr(tide_last_error(), "tide.meta cannot be read")) {
            expect_contains(tide_last_error(), "nothing was read or written", "the meta error");
            named_meta++;
        }
        if (used < n) break;
    }
    if (named_meta == 0) fail_msg("no fault gave the error naming tide.meta");
    tide_io_sim_destroy(sim);
}

/* Open the sim's /db writable with a lag, its disk full (capacity = use). */
static tide_store *open_on_a_full_disk(tide_io_sim *sim, const char *what)
{
    tide_store_opts o;
    tide_store *s = NULL;

    tide_io_sim_set_capacity(sim, tide_io_sim_usage(sim));
    th_store_opts(&o);
    o.commit_interval_ms = SLOW;
    o.index_lag_bytes = 1u << 20;
    o.io = tide_io_sim_io(sim);
    expect_ok(tide_store_open(&s, "/db", &o), what);
    return s;
}

/* A writer killed with 1000 records in its tail, reopened on a disk with
 * no room to index them (the flush needs log and key-file space): the open
 * succeeds, every record is served from the tail held in memory, inserts
 * are refused with TIDE_ENOSPC, and nothing on disk changed. Once space
 * returns, the retried flush indexes the tail, inserts are taken again and
 * a clean close leaves a store verify passes. Before, the open itself
 * failed with ENOSPC and nothing was served. */
static void a_full_disk_opens_with_the_tail_in_memory_and_indexes_it_when_space_returns(void **state)
{
    dstate *d = *state;
    tide_io_sim *sim = NULL;
    tide_store_info info;
    tide_store *s = NULL;
    tide_verify_report r;
    uint8_t key[KEY];
    void *before = NULL, *after = NULL;
    size_t before_len = 0, after_len = 0;
    int rc;

    kill_with_a_tail(d, 200, 5);
    assert_int_equal(tide_io_sim_create(&sim), 0);
    copy_into_sim(d, sim);
    assert_int_equal(tide_io_sim_get_file(sim, "/db/nudb.key", &before, &before_len), 0);
    s = open_on_a_full_disk(sim, "a writable open on a full disk, 1000 records unindexed");
    expect_items(s, 0, 1000, KEY, VMIN, VMAX, "every acknowledged record, from the tail in memory");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 1000, "the tail held in memory");
    th_key(5000, KEY, key);
    expect_error(tide_store_insert(s, key, "x", 1), TIDE_ENOSPC, "an insert while the disk is full");
    th_key(10, KEY, key);
    rc = tide_store_insert(s, key, "x", 1);
    if (rc != TIDE_ENOSPC && rc != TIDE_EEXIST)
        fail_msg("a duplicate insert on the full disk: expected TIDE_ENOSPC or TIDE_EEXIST, got %s",
                 tide_strerror(rc));
    assert_int_equal(tide_io_sim_get_file(sim, "/db/nudb.key", &after, &after_len), 0);
    if (after_len != before_len || memcmp(before, after, before_len) != 0)
        fail_msg("the failed flush left nudb.key changed (%zu bytes, was %zu)", after_len, before_len);
    free(before);
    free(after);

    tide_io_sim_set_capacity(sim, UINT64_MAX);
    expect_ok(tide_store_flush(s), "the flush once space has returned");
    tide_store_get_info(s, &info);
    expect_u64(info.tail_items, 0, "the tail after the flush");
    th_key(5000, KEY, key);
    expect_ok(tide_store_insert(s, key, "x", 1), "an insert once space has returned");
    expect_ok(tide_store_sync(s), "its sync");
    expect_items(s, 0, 1000, KEY, VMIN, VMAX, "every record after the flush");
    expect_closed(&s, "close");
    expect_ok(tide_store_verify_io("/db", tide_io_sim_io(sim), &r), "verify after the close");
    expect_u64(r.keys, 1001, "keys after the close");
    tide_io_sim_destroy(sim);
}

/* A store with no tide.meta (last written without a lag), opened with a
 * lag on a disk with no room for tide.meta's first slot: the open
 * succeeds, fetches answer, inserts are refused with TIDE_ENOSPC
 * and no empty tide.meta is left; once space returns, the retried
 * preparation lets inserts commit. Before, the open failed and left a
 * 0-byte tide.meta. */
static void a_full_disk_opens_a_store_without_tide_meta_and_commits_when_space_returns(void **state)
{
    dstate *d = *state;
    tide_io_sim *sim = NULL;
    tide_io *io;
    tide_store *s = NULL;
    uint8_t key[KEY];
    int is_dir = 0;

    s = open_lag(d, 0);
    expect_inserted(s, 0, 1, KEY, VMIN, VMAX, "one item, no lag");
    expect_closed(&s, "close: no tide.meta");
    assert_int_equal(tide_io_sim_create(&sim), 0);
    io = tide_io_sim_io(sim);
    copy_into_sim(d, sim);
    s = open_on_a_full_disk(sim, "a writable open with a lag on a full disk, no tide.meta");
    expect_items(s, 0, 1, KEY, VMIN, VMAX, "the item, on the full disk");
    th_key(1, KEY, key);
    expect_error(tide_store_insert(s, key, "x", 1), TIDE_ENOSPC, "an insert while the disk is full");
    if (io->stat(io, "/db/" TI_META_NAME, &is_dir) == 0)
        fail_msg("the failed first write of tide.meta left the file behind");
    tide_io_sim_set_capacity(sim, UINT64_MAX);
    {
        int rc = TIDE_ENOSPC;
        /* The thread retries every second; 60 s is the bound for a loaded machine. */
        for (int tries = 0; tries < 600 && rc == TIDE_ENOSPC; tries++) {
            rc = tide_store_insert(s, key, "x", 1);
            if (rc == TIDE_ENOSPC) tide_clock_sleep_us(100000);
        }
        expect_ok(rc, "an insert once space has returned");
    }
    expect_ok(tide_store_sync(s), "its sync");
    expect_closed(&s, "close");
    {
        tide_verify_report r;
        expect_ok(tide_store_verify_io("/db", tide_io_sim_io(sim), &r), "verify after the close");
        expect_u64(r.keys, 2, "keys after the close");
    }
    tide_io_sim_destroy(sim);
}

/* Two read-only tools at once: the first (in a child) holds the files
 * and tide.live; the second's holders check knows it for a Tide reader.
 * Before, the first closed tide.live and the second was refused with
 * "unfinished commit of 62 bytes". */
static void two_readers_of_a_killed_deferred_store_both_read_every_record(void **state)
{
    dstate *d = *state;
    char args[9000], hex[2 * KEY + 1];
    char *out = NULL;
    int fd[2], status;
    tide_store *s;
    pid_t pid;

    kill_with_a_tail(d, 200, 5);
    assert_int_equal(pipe(fd), 0);
    pid = th_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tide_store_opts o;
        th_store_opts(&o);
        o.read_only = 1;
        if (tide_store_open(&s, d->dir, &o) != 0) _exit(3);
        if (th_store_expect_items(s, 0, 1000, KEY, VMIN, VMAX, NULL, 0) != 0) _exit(4);
        if (write(fd[1], "y", 1) != 1) _exit(5);
        for (;;) pause();
    }
    close(fd[1]);
    if (read(fd[0], args, 1) != 1) fail_msg("the first reader failed to open or read");
    close(fd[0]);
    s = open_reader(d);
    expect_items(s, 0, 1000, KEY, VMIN, VMAX, "the second reader, beside the first");
    expect_closed(&s, "close the second reader");
    key_hex(999, hex);
    snprintf(args, sizeof args, "get '%s' %s >/dev/null && echo found", d->dir, hex);
    assert_int_equal(th_run_tide(args, 1, &out), 0);
    expect_contains(out, "found", "tide get beside the first reader");
    free(out);
    kill(pid, SIGKILL);
    th_waitpid(pid, &status, 0);
}

static void stale(ti_meta *m, uint8_t *slot) { m->dat_indexed += 1; ti_meta_encode(slot, m); }
static void cut_last(ti_meta *m, uint8_t *slot) { m->dat_committed -= 10; ti_meta_encode(slot, m); }

/* A slot written under another W (stale) claims nothing: C = W. */
static void the_idle_view_ignores_a_stale_tide_meta_slot(void **state)
{
    dstate *d = *state;
    tide_store_info info;
    uint8_t key[KEY];
    void *v = NULL;
    size_t len = 0;
    tide_store *s;

    kill_with_a_tail(d, 200, 5);
    edit_meta(d, stale);
    s = open_reader(d);
    tide_store_get_info(s, &info);
    expect_u64(info.dat_committed, TIDE_DAT_HEADER_SIZE, "C: W, the slot is another W's");
    expect_u64(info.tail_items, 0, "no tail");
    th_key(0, KEY, key);
    expect_rc(tide_store_fetch(s, key, &v, &len), TIDE_ENOTFOUND, "a record past W");
    expect_closed(&s, "close");
}

/* A key file of another size than the log was written for is not the
 * idle log's store as it was: refused, nothing changed. */
static void the_idle_view_refuses_a_key_file_of_another_size(void **state)
{
    dstate *d = *state;
    static uint8_t zero[65536];
    tide_store_info info;
    tide_store_opts o;
    tide_store *s = NULL;
    th_snapshot sn;
    int64_t size;

    kill_with_a_tail(d, 200, 1);
    expect_ok(tide_store_inspect(d->dir, NULL, &info), "inspect");
    assert_true(info.block_size <= sizeof zero);
    /* One more bucket, empty: a well-formed key file, not the log's. */
    size = th_file_size(file_in(d, "nudb.key"));
    assert_int_equal(th_pwrite_file(file_in(d, "nudb.key"), zero, info.block_size, (uint64_t)size), 0);
    assert_int_equal(th_snapshot_take(d->dir, &sn), 0);
    th_store_opts(&o);
    o.read_only = 1;
    expect_error(tide_store_open(&s, d->dir, &o), TIDE_EBUSY, "a read-only open");
    expect_contains(tide_last_error(), "unfinished commit", "the refusal");
    expect_unchanged(d->dir, &sn, "the refused open");
    th_snapshot_free(&sn);
}

/* C inside the last record (tide.meta says less than the record's end):
 * refused with the record's offset, never read past C. */
static void the_idle_view_refuses_a_record_straddling_c(void **state)
{
    dstate *d = *state;
    uint64_t dat = 0, last = 0;
    tide_store_opts o;
    tide_store *s = NULL;
    char want[128];

    kill_with_a_tail(d, 200, 1);
    dat = (uint64_t)th_file_size(file_in(d, "nudb.dat"));
    last = dat - (TIDE_DAT_RECORD_HEADER + KEY + th_len(199, VMIN, VMAX));
    edit_meta(d, cut_last);
    th_store_opts(&o);
    o.read_only = 1;
    expect_error(tide_store_open(&s, d->dir, &o), TIDE_ECORRUPT, "a read-only open");
    snprintf(want, sizeof want, "offset %llu: not a complete record below the committed mark %llu",
             (unsigned long long)last, (unsigned long long)(dat - 10));
    expect_contains(tide_last_error(), want, "the message names the record and C");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fetch_and_dup_check_find_tail_entries_and_the_budget_flushes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_tail_short_of_the_store_s_items_is_named_once_with_the_lag_that_would_do, setup, teardown),
        cmocka_unit_test_setup_teardown(lag_zero_writes_no_tide_meta_and_keeps_w_equal_to_c, setup, teardown),
        cmocka_unit_test_setup_teardown(flush_indexes_the_tail_and_returns_when_there_is_nothing_to_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(a_killed_writer_s_idle_log_is_refused_by_nudb_and_tide_recovers_every_record, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stale_tide_meta_after_nudbs_recovery_claims_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_nudb_commit_killed_after_nudb_recovered_a_tide_crash_is_rolled_back_as_nudb_would, setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_recovery_changes_nothing_when_it_says_so, setup, teardown),
        cmocka_unit_test_setup_teardown(a_torn_tide_meta_slot_falls_back_to_the_other, setup, teardown),
        cmocka_unit_test_setup_teardown(a_foreign_or_missing_tide_meta_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(a_tide_meta_past_the_data_file_is_refused_and_nothing_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_damaged_record_in_the_tail_is_refused_with_its_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(recovery_sizes_the_tail_for_the_records_it_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(a_killed_deferred_store_reads_as_it_is_without_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(tide_get_info_visit_verify_work_on_a_killed_deferred_store, setup, teardown),
        cmocka_unit_test_setup_teardown(a_log_with_pre_images_or_a_holder_still_refuses_and_says_what_to_run, setup, teardown),
        cmocka_unit_test_setup_teardown(a_fault_reading_tide_meta_is_an_error_never_missing_records, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_disk_opens_with_the_tail_in_memory_and_indexes_it_when_space_returns, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_disk_opens_a_store_without_tide_meta_and_commits_when_space_returns, setup, teardown),
        cmocka_unit_test_setup_teardown(two_readers_of_a_killed_deferred_store_both_read_every_record, setup, teardown),
        cmocka_unit_test_setup_teardown(the_idle_view_ignores_a_stale_tide_meta_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(the_idle_view_refuses_a_key_file_of_another_size, setup, teardown),
        cmocka_unit_test_setup_teardown(the_idle_view_refuses_a_record_straddling_c, setup, teardown),
    };
    tide_log_set_level(TIDE_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
