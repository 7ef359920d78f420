/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_io_sim.c: the simulated file system, and the store running on it.
 *
 * The first part checks the sim against its own contract (io/io_sim.h and
 * the model at the top of io_sim.c): reads, short reads, O_EXCL, what a
 * crash keeps and loses (synced data always; unsynced writes, creates,
 * unlinks and renames sometimes; torn writes as a 512-byte aligned prefix),
 * every fault kind of fail_at, the full disk, the exhaustive crash states,
 * clones and locks, all with the bytes checked at every call (paranoid
 * mode); the directory calls (mkdir, rmdir, list: one script run on the
 * POSIX io in a scratch directory and on the sim, compared line by line
 * with each other and with the expected text; a mkdir or rmdir lost or
 * kept by a crash until sync_dir of its parent; each failed by fail_at);
 * and that each invariant of io_sim.c, broken on purpose in a
 * child process, aborts the next call there. The second part runs the real store on the sim: 2000
 * items through a reopen, then crashes after a synced batch (at every call
 * of the next commit, and at live snapshots of a running store), each
 * followed by recovery, verify and a fetch of every synced item.
 *
 * Everything is in memory; the seeds are fixed (TIDE_TEST_SEED moves the
 * crash seeds of the store tests, and a failing run prints the one to
 * repeat).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/io_sim.h"
#include "store/format.h"
#include "store/full.h"
#include "util/log.h"
#include "helpers.h"

#define DEFAULT_SEED 20240601u

static uint64_t g_seed;

/* ---- helpers ---- */

#define OK(expr) expect_code((expr), 0, #expr)
#define EXPECT(expr, want) expect_code((expr), (want), #expr)

static void expect_code(int rc, int want, const char *what)
{
    if (rc != want)
        fail_msg("%s: expected %d (%s), got %d (%s); message '%s'", what, want,
                 tide_strerror(want), rc, tide_strerror(rc), tide_last_error());
}

static void expect_message_has(const char *needle, const char *what)
{
    const char *msg = tide_last_error();
    if (strstr(msg, needle) == NULL)
        fail_msg("%s: expected the message to contain '%s', got '%s'", what, needle, msg);
}

static tide_file *open_file(tide_io *io, const char *path, int flags)
{
    tide_file *f = NULL;
    int rc = io->open(io, path, flags, &f);
    if (rc != 0)
        fail_msg("open %s (flags %d): expected 0, got %d (%s): %s", path, flags, rc,
                 tide_strerror(rc), tide_last_error());
    return f;
}

/* Write `len` bytes of `byte` at `off`. */
static int write_fill(tide_io *io, tide_file *f, uint64_t off, int byte, size_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    int rc;

    assert_non_null(buf);
    memset(buf, byte, len);
    rc = io->write_at(f, buf, len, off);
    free(buf);
    return rc;
}

static void put_fill(tide_io_sim *sim, const char *path, int byte, size_t len)
{
    uint8_t *buf = malloc(len ? len : 1);

    assert_non_null(buf);
    memset(buf, byte, len);
    OK(tide_io_sim_put_file(sim, path, buf, len));
    free(buf);
}

/* The current image of `path`; *len its size. Fails the test when absent. */
static uint8_t *image_of(tide_io_sim *sim, const char *path, size_t *len, const char *what)
{
    void *data = NULL;
    int rc = tide_io_sim_get_file(sim, path, &data, len);

    if (rc != 0)
        fail_msg("%s: expected %s to exist, got %d (%s): %s", what, path, rc, tide_strerror(rc),
                 tide_last_error());
    return data;
}

static int exists(tide_io_sim *sim, const char *path)
{
    void *data = NULL;
    size_t len;
    int rc = tide_io_sim_get_file(sim, path, &data, &len);

    free(data);
    return rc == 0;
}

/* Bytes [from, to) of buf all equal `byte`? */
static int all_are(const uint8_t *buf, size_t from, size_t to, int byte)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != (uint8_t)byte) return 0;
    return 1;
}

static tide_io_sim *clone_of(tide_io_sim *sim)
{
    tide_io_sim *c = NULL;
    OK(tide_io_sim_clone(sim, &c));
    return c;
}

static int setup(void **state)
{
    tide_io_sim *sim = NULL;

    if (tide_io_sim_create(&sim) != 0) return -1;
    *state = sim;
    return 0;
}

/* The sim's own tests: every call compares the bytes too (invariant 1 in
 * full; clones inherit it). The files are small, so this costs little here;
 * the store tests check the bytes at chosen points instead. */
static int setup_paranoid(void **state)
{
    if (setup(state) != 0) return -1;
    tide_io_sim_set_paranoid(*state, 1);
    return 0;
}

static int teardown(void **state)
{
    tide_io_sim_destroy(*state);
    return 0;
}

/* For a test that also makes a scratch directory: th_teardown removes it
 * whatever the outcome. */
static int teardown_scratch(void **state)
{
    teardown(state);
    return th_teardown(NULL);
}

/* ---- reads and writes ---- */

static void a_read_sees_the_bytes_just_written_and_a_gap_reads_as_zeros(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint8_t buf[1200];
    uint64_t size = 0;

    f = open_file(io, "/f", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 0x11, 100));
    OK(write_fill(io, f, 1000, 0x22, 200));
    OK(io->size(f, &size));
    if (size != 1200) fail_msg("size after writes ending at 1200: expected 1200, got %llu",
                               (unsigned long long)size);
    OK(io->read_at(f, buf, sizeof buf, 0));
    if (!all_are(buf, 0, 100, 0x11) || !all_are(buf, 100, 1000, 0) || !all_are(buf, 1000, 1200, 0x22))
        fail_msg("read back: expected 100 x 0x11, 900 zeros, 200 x 0x22; got %02x %02x %02x",
                 buf[0], buf[500], buf[1100]);
    OK(write_fill(io, f, 50, 0x33, 10));
    OK(io->read_at(f, buf, 70, 0));
    if (!all_are(buf, 50, 60, 0x33) || buf[49] != 0x11 || buf[60] != 0x11)
        fail_msg("overwrite of bytes 50..59: expected 0x33 there and 0x11 around, got %02x %02x %02x",
                 buf[49], buf[55], buf[60]);
    OK(io->truncate(f, 10));
    OK(io->size(f, &size));
    if (size != 10) fail_msg("size after truncate to 10: expected 10, got %llu", (unsigned long long)size);
    OK(io->truncate(f, 20));
    OK(io->read_at(f, buf, 20, 0));
    if (!all_are(buf, 0, 10, 0x11) || !all_are(buf, 10, 20, 0))
        fail_msg("truncate to 10 then 20: expected 10 x 0x11 then zeros, got %02x at 15", buf[15]);
    io->close(f);
}

static void reading_past_the_end_is_a_short_read(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint8_t buf[64];

    put_fill(sim, "/f", 0x5a, 100);
    f = open_file(io, "/f", TIDE_IO_READ);
    OK(io->read_at(f, buf, 64, 36));
    EXPECT(io->read_at(f, buf, 64, 37), TIDE_ECORRUPT);
    expect_message_has("short read", "read of 64 bytes at 37 in a 100-byte file");
    EXPECT(io->read_at(f, buf, 1, 1000), TIDE_ECORRUPT);
    EXPECT(write_fill(io, f, 0, 1, 1), TIDE_EIO);
    expect_message_has("read-only", "write through a read-only handle");
    io->close(f);
}

static void create_with_excl_refuses_a_file_that_exists(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f = NULL;
    int is_dir = -1;

    OK(tide_io_sim_mkdir(sim, "/d"));
    f = open_file(io, "/d/x", TIDE_IO_CREATE | TIDE_IO_EXCL);
    io->close(f);
    EXPECT(io->open(io, "/d/x", TIDE_IO_CREATE | TIDE_IO_EXCL, &f), TIDE_EEXIST);
    f = open_file(io, "/d/x", TIDE_IO_CREATE);
    io->close(f);
    EXPECT(io->open(io, "/d/missing", TIDE_IO_WRITE, &f), TIDE_ENOENT);
    EXPECT(io->open(io, "/nodir/x", TIDE_IO_CREATE, &f), TIDE_ENOENT);
    OK(io->stat(io, "/d", &is_dir));
    if (is_dir != 1) fail_msg("stat /d: expected a directory, got is_dir %d", is_dir);
    OK(io->stat(io, "/d/x", &is_dir));
    if (is_dir != 0) fail_msg("stat /d/x: expected a file, got is_dir %d", is_dir);
    OK(io->stat(io, "//d//x/", NULL));
    EXPECT(io->stat(io, "/d/y", NULL), TIDE_ENOENT);
}

/* ---- crashes ---- */

static void synced_data_survives_every_crash(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;

    OK(tide_io_sim_mkdir(sim, "/d"));
    f = open_file(io, "/d/f", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 0x77, 5000));
    OK(io->sync(f));
    OK(io->sync_dir(io, "/d"));
    OK(write_fill(io, f, 5000, 0x88, 3000));   /* pending: may or may not survive */
    OK(write_fill(io, f, 100, 0x99, 10));       /* pending overwrite of synced bytes */
    io->close(f);
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        size_t len;
        uint8_t *img;
        OK(tide_io_sim_crash(c, seed));
        img = image_of(c, "/d/f", &len, "synced file after a crash");
        if (len < 5000 || !all_are(img, 0, 100, 0x77) || !all_are(img, 110, 5000, 0x77))
            fail_msg("seed %llu: expected the 5000 synced bytes of 0x77 (bar a pending overwrite "
                     "of 100..109), got size %zu, byte 0 %02x, byte 4999 %02x",
                     (unsigned long long)seed, len, img[0], len >= 5000 ? img[4999] : 0);
        if (tide_io_sim_pending_count(c) != 0)
            fail_msg("seed %llu: expected nothing pending after a crash, got %llu",
                     (unsigned long long)seed, (unsigned long long)tide_io_sim_pending_count(c));
        free(img);
        tide_io_sim_destroy(c);
    }
}

static void an_unsynced_write_survives_some_crashes_and_not_others(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    int kept = 0, lost = 0;

    put_fill(sim, "/f", 0x01, 512);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 512, 0x02, 512));      /* one sector: kept whole or lost */
    io->close(f);
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        size_t len;
        uint8_t *img;
        OK(tide_io_sim_crash(c, seed));
        img = image_of(c, "/f", &len, "file after a crash");
        if (len == 1024 && all_are(img, 0, 512, 1) && all_are(img, 512, 1024, 2)) kept++;
        else if (len == 512 && all_are(img, 0, 512, 1)) lost++;
        else fail_msg("seed %llu: expected 512 bytes of 0x01 with or without 512 of 0x02 after "
                      "them, got %zu bytes", (unsigned long long)seed, len);
        free(img);
        tide_io_sim_destroy(c);
    }
    if (kept == 0 || lost == 0)
        fail_msg("50 seeds: expected the unsynced write kept by some and lost (with its growth) "
                 "by others, got kept %d, lost %d", kept, lost);
}

static void a_torn_write_keeps_a_prefix_cut_at_a_512_byte_boundary(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    int torn = 0;

    put_fill(sim, "/f", 0, 1000);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 300, 0xee, 4000));     /* bytes 300..4299: boundaries 512 .. 4096 */
    io->close(f);
    for (uint64_t seed = 0; seed < 200; seed++) {
        tide_io_sim *c = clone_of(sim);
        size_t len, kept;
        uint8_t *img;
        OK(tide_io_sim_crash(c, seed));
        img = image_of(c, "/f", &len, "file after a crash");
        for (kept = 300; kept < len && img[kept] == 0xee; kept++) {}
        if (kept == 300) {
            if (len != 1000 || !all_are(img, 0, 1000, 0))
                fail_msg("seed %llu: write dropped: expected the durable 1000 zeros, got %zu bytes",
                         (unsigned long long)seed, len);
        } else if (kept == 4300) {
            if (len != 4300) fail_msg("seed %llu: whole write: expected 4300 bytes, got %zu",
                                      (unsigned long long)seed, len);
        } else {
            torn++;
            if (kept % 512 != 0 || len != (kept > 1000 ? kept : 1000) || !all_are(img, kept, len, 0))
                fail_msg("seed %llu: torn write: expected 0xee up to a multiple of 512 and the "
                         "old bytes after it, got 0xee up to %zu in %zu bytes",
                         (unsigned long long)seed, kept, len);
        }
        free(img);
        tide_io_sim_destroy(c);
    }
    if (torn == 0) fail_msg("200 seeds: expected some crash to tear the 4000-byte write, got none");
}

static void a_create_needs_sync_dir_to_survive_a_crash(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    int vanished = 0, stayed = 0;

    OK(tide_io_sim_mkdir(sim, "/d"));
    f = open_file(io, "/d/new", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 0x42, 700));
    OK(io->sync(f));                            /* the data, but not the name */
    io->close(f);
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        OK(tide_io_sim_crash(c, seed));
        if (exists(c, "/d/new")) {
            size_t len;
            uint8_t *img = image_of(c, "/d/new", &len, "created file");
            if (len != 700 || !all_are(img, 0, 700, 0x42))
                fail_msg("seed %llu: a surviving create of a synced file: expected its 700 bytes, "
                         "got %zu", (unsigned long long)seed, len);
            free(img);
            stayed++;
        } else {
            vanished++;
        }
        tide_io_sim_destroy(c);
    }
    if (vanished == 0 || stayed == 0)
        fail_msg("50 seeds, no sync_dir: expected the create lost by some and kept by others, "
                 "got lost %d, kept %d", vanished, stayed);
    OK(io->sync_dir(io, "/d"));
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        OK(tide_io_sim_crash(c, seed));
        if (!exists(c, "/d/new"))
            fail_msg("seed %llu: after sync_dir: expected /d/new to survive, got it gone",
                     (unsigned long long)seed);
        tide_io_sim_destroy(c);
    }
}

static void an_unsynced_create_without_synced_data_comes_back_empty_or_not_at_all(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    int empty = 0;

    f = open_file(io, "/x", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 0x42, 100));
    io->close(f);
    OK(io->sync_dir(io, "/"));
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        size_t len;
        uint8_t *img;
        OK(tide_io_sim_crash(c, seed));
        img = image_of(c, "/x", &len, "a dir-synced create");
        if (len == 0) empty++;
        else if (len != 100 || !all_are(img, 0, 100, 0x42))
            fail_msg("seed %llu: expected an empty file or the 100 written bytes, got %zu bytes",
                     (unsigned long long)seed, len);
        free(img);
        tide_io_sim_destroy(c);
    }
    if (empty == 0) fail_msg("50 seeds: expected some crash to leave /x empty, got none");
}

static void unlink_and_rename_stay_pending_until_sync_dir(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    int back = 0, gone = 0, old_name = 0, new_name = 0;

    put_fill(sim, "/d/a", 0x0a, 10);
    put_fill(sim, "/d/b", 0x0b, 20);
    OK(io->unlink(io, "/d/a"));
    OK(io->rename(io, "/d/b", "/d/c"));
    EXPECT(io->stat(io, "/d/a", NULL), TIDE_ENOENT);
    EXPECT(io->stat(io, "/d/b", NULL), TIDE_ENOENT);
    OK(io->stat(io, "/d/c", NULL));
    for (uint64_t seed = 0; seed < 50; seed++) {
        tide_io_sim *c = clone_of(sim);
        int b, cc;
        OK(tide_io_sim_crash(c, seed));
        if (exists(c, "/d/a")) back++;
        else gone++;
        b = exists(c, "/d/b");
        cc = exists(c, "/d/c");
        if (b == cc)
            fail_msg("seed %llu: a rename is atomic: expected exactly one of /d/b and /d/c, got "
                     "b %d, c %d", (unsigned long long)seed, b, cc);
        old_name += b;
        new_name += cc;
        tide_io_sim_destroy(c);
    }
    if (!back || !gone || !old_name || !new_name)
        fail_msg("50 seeds: expected the unlink and the rename each kept by some and lost by "
                 "others, got unlink undone %d / kept %d, rename undone %d / kept %d",
                 back, gone, old_name, new_name);
    OK(io->sync_dir(io, "/d"));
    for (uint64_t seed = 0; seed < 20; seed++) {
        tide_io_sim *c = clone_of(sim);
        OK(tide_io_sim_crash(c, seed));
        if (exists(c, "/d/a") || exists(c, "/d/b") || !exists(c, "/d/c"))
            fail_msg("seed %llu: after sync_dir: expected only /d/c, got a %d b %d c %d",
                     (unsigned long long)seed, exists(c, "/d/a"), exists(c, "/d/b"),
                     exists(c, "/d/c"));
        tide_io_sim_destroy(c);
    }
}

static void a_crash_kills_old_handles_and_their_locks(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f, *g;
    uint8_t b;

    put_fill(sim, "/f", 1, 10);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(io->lock(f, 1));
    OK(tide_io_sim_crash(sim, 1));
    EXPECT(io->read_at(f, &b, 1, 0), TIDE_EIO);
    expect_message_has("before a crash", "read through a handle from before the crash");
    EXPECT(write_fill(io, f, 0, 2, 1), TIDE_EIO);
    g = open_file(io, "/f", TIDE_IO_WRITE);
    OK(io->lock(g, 1));                         /* f's lock died with the crash */
    io->close(f);
    io->close(g);
}

/* ---- faults ---- */

static void every_documented_call_counts_once_and_close_does_not(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint64_t c0 = tide_io_sim_calls(sim), size;
    uint8_t b;

    put_fill(sim, "/f", 1, 10);                 /* helpers do not count */
    OK(tide_io_sim_mkdir(sim, "/d"));
    f = open_file(io, "/f", TIDE_IO_WRITE);     /* 1 */
    OK(io->read_at(f, &b, 1, 0));               /* 2 */
    OK(io->write_at(f, &b, 1, 0));              /* 3 */
    OK(io->sync(f));                            /* 4 */
    OK(io->truncate(f, 5));                     /* 5 */
    OK(io->size(f, &size));                     /* 6 */
    OK(io->lock(f, 1));                         /* 7 */
    io->close(f);                               /* not counted */
    OK(io->rename(io, "/f", "/g"));             /* 8 */
    OK(io->unlink(io, "/g"));                   /* 9 */
    OK(io->sync_dir(io, "/"));                  /* 10 */
    EXPECT(io->stat(io, "/g", NULL), TIDE_ENOENT); /* 11: failures count too */
    if (tide_io_sim_calls(sim) - c0 != 11)
        fail_msg("11 counted calls and a close: expected the count to rise by 11, got %llu",
                 (unsigned long long)(tide_io_sim_calls(sim) - c0));
}

static void fail_at_eio_fails_the_nth_call_once_with_no_effect(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    char want[64];
    uint64_t size = 0;

    put_fill(sim, "/f", 1, 100);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(tide_io_sim_fail_at(sim, 3, TIDE_IO_SIM_EIO, 0));
    OK(write_fill(io, f, 100, 2, 100));          /* call 1 from now */
    OK(io->size(f, &size));                      /* call 2 */
    EXPECT(write_fill(io, f, 200, 3, 100), TIDE_EIO);  /* call 3 */
    snprintf(want, sizeof want, "injected EIO (call %llu)", (unsigned long long)tide_io_sim_calls(sim));
    expect_message_has("sim: /f: write at offset 200: ", "the injected failure");
    expect_message_has(want, "the injected failure");
    OK(io->size(f, &size));                      /* call 4: once only */
    if (size != 200) fail_msg("size after a failed write: expected 200 (no effect), got %llu",
                              (unsigned long long)size);
    OK(write_fill(io, f, 200, 3, 100));
    if (tide_io_sim_faults(sim) != 1)
        fail_msg("faults injected: expected 1, got %llu", (unsigned long long)tide_io_sim_faults(sim));
    io->close(f);
}

static void fail_at_enospc_fails_a_write_with_no_effect(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint64_t size = 0;
    uint8_t b;

    f = open_file(io, "/f", TIDE_IO_CREATE);
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_ENOSPC, 0));
    EXPECT(write_fill(io, f, 0, 1, 4096), TIDE_ENOSPC);
    expect_message_has("injected ENOSPC", "an injected ENOSPC");
    OK(io->size(f, &size));
    if (size != 0) fail_msg("size after an ENOSPC write: expected 0, got %llu", (unsigned long long)size);
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_ENOSPC, 0));
    EXPECT(io->read_at(f, &b, 0, 0), TIDE_EIO);  /* a read cannot run out of space */
    io->close(f);
}

static void fail_at_short_write_applies_a_sector_aligned_prefix(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    size_t len;
    uint8_t *img;

    f = open_file(io, "/f", TIDE_IO_CREATE);
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_SHORT_WRITE, 0));
    EXPECT(write_fill(io, f, 0, 0xcd, 5000), TIDE_EIO);   /* middle 2500: prefix 2048 */
    expect_message_has("injected short write", "a short write");
    img = image_of(sim, "/f", &len, "after a short write");
    if (len != 2048 || !all_are(img, 0, 2048, 0xcd))
        fail_msg("short write of 5000 bytes at 0: expected a 2048-byte prefix, got %zu bytes", len);
    free(img);
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_SHORT_WRITE, 0));
    EXPECT(write_fill(io, f, 100, 0xcd, 600), TIDE_EIO);  /* middle 400: no boundary after 100 */
    img = image_of(sim, "/f", &len, "after a short write");
    if (len != 2048) fail_msg("short write inside one sector: expected no change, got %zu bytes", len);
    free(img);
    io->close(f);
}

static void a_persistent_fault_fails_every_call_from_the_nth_on(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint64_t size;

    put_fill(sim, "/f", 1, 100);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(tide_io_sim_fail_at(sim, 2, TIDE_IO_SIM_EIO, 1));
    OK(io->size(f, &size));
    for (int i = 0; i < 5; i++) EXPECT(io->size(f, &size), TIDE_EIO);
    EXPECT(io->stat(io, "/f", NULL), TIDE_EIO);
    EXPECT(io->sync(f), TIDE_EIO);
    OK(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0));
    OK(io->size(f, &size));
    if (tide_io_sim_faults(sim) != 7)
        fail_msg("faults injected: expected 7, got %llu", (unsigned long long)tide_io_sim_faults(sim));
    io->close(f);
}

static void a_failed_sync_drops_the_pending_writes(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    size_t len;
    uint8_t *img;

    put_fill(sim, "/f", 0xaa, 4096);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 0, 0xbb, 4096));
    OK(write_fill(io, f, 4096, 0xbb, 4096));
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_SYNC_FAIL, 0));
    EXPECT(io->sync(f), TIDE_EIO);
    expect_message_has("injected sync failure", "a failed sync");
    img = image_of(sim, "/f", &len, "after a failed sync");
    if (len != 4096 || !all_are(img, 0, 4096, 0xaa))
        fail_msg("after a failed sync: expected the last synced 4096 bytes of 0xaa (the pending "
                 "writes dropped), got %zu bytes starting %02x", len, img[0]);
    free(img);
    if (tide_io_sim_pending_count(sim) != 0)
        fail_msg("after a failed sync: expected nothing pending, got %llu",
                 (unsigned long long)tide_io_sim_pending_count(sim));
    OK(io->sync(f));                             /* the retry "succeeds", saving nothing */
    io->close(f);
    OK(tide_io_sim_crash(sim, 3));
    img = image_of(sim, "/f", &len, "after a crash");
    if (len != 4096 || !all_are(img, 0, 4096, 0xaa))
        fail_msg("crash after a failed sync: expected 4096 bytes of 0xaa, got %zu", len);
    free(img);
}

static void fail_at_an_eio_sync_keeps_the_writes_for_a_retry(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    size_t len;
    uint8_t *img;

    put_fill(sim, "/f", 0xaa, 512);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 0, 0xbb, 512));
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_EIO, 0));
    EXPECT(io->sync(f), TIDE_EIO);
    OK(io->sync(f));
    io->close(f);
    OK(tide_io_sim_crash(sim, 5));
    img = image_of(sim, "/f", &len, "after a crash");
    if (len != 512 || !all_are(img, 0, 512, 0xbb))
        fail_msg("EIO sync then a good one: expected the 0xbb write durable, got %zu bytes of "
                 "%02x", len, img[0]);
    free(img);
}

static void a_full_disk_refuses_growth_until_capacity_is_raised(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f, *g;
    uint64_t size;

    put_fill(sim, "/a", 1, 3000);
    tide_io_sim_set_capacity(sim, 8192);
    f = open_file(io, "/b", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 2, 5192));          /* 3000 + 5192 = 8192 */
    EXPECT(write_fill(io, f, 5192, 2, 1), TIDE_ENOSPC);
    expect_message_has("no space", "a write past capacity");
    EXPECT(write_fill(io, f, 5000, 2, 200), TIDE_ENOSPC);  /* grows by 8: all or nothing */
    OK(io->size(f, &size));
    if (size != 5192) fail_msg("after refused writes: expected 5192 bytes, got %llu", (unsigned long long)size);
    OK(write_fill(io, f, 0, 3, 5192));          /* overwriting takes no room */
    EXPECT(io->truncate(f, 6000), TIDE_ENOSPC);
    g = open_file(io, "/c", TIDE_IO_CREATE);    /* an empty file fits */
    OK(io->truncate(f, 4192));                  /* shrinking frees 1000 */
    OK(write_fill(io, g, 0, 4, 1000));
    EXPECT(write_fill(io, g, 1000, 4, 1), TIDE_ENOSPC);
    tide_io_sim_set_capacity(sim, UINT64_MAX);
    OK(write_fill(io, g, 1000, 4, 100000));
    if (tide_io_sim_usage(sim) != 3000 + 4192 + 101000)
        fail_msg("usage: expected %d, got %llu", 3000 + 4192 + 101000,
                 (unsigned long long)tide_io_sim_usage(sim));
    io->close(f);
    io->close(g);
}

/* ---- exhaustive crash states, clones, locks, counters ---- */

static void every_subset_of_three_pending_writes_is_a_distinct_crash_state(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    uint8_t *seen[8];
    tide_io_sim_op_info info;

    put_fill(sim, "/f", 0, 1536);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 0, 0x10, 512));
    OK(write_fill(io, f, 512, 0x20, 512));
    OK(write_fill(io, f, 1024, 0x30, 512));
    io->close(f);
    if (tide_io_sim_pending_count(sim) != 3)
        fail_msg("pending ops: expected 3, got %llu", (unsigned long long)tide_io_sim_pending_count(sim));
    OK(tide_io_sim_pending_op(sim, 1, &info));
    if (strcmp(info.path, "/f") != 0 || info.is_truncate || info.offset != 512 || info.len != 512)
        fail_msg("pending op 1: expected a 512-byte write to /f at 512, got %s %s at %llu len %llu",
                 info.path, info.is_truncate ? "truncate" : "write",
                 (unsigned long long)info.offset, (unsigned long long)info.len);
    for (uint64_t mask = 0; mask < 8; mask++) {
        tide_io_sim *c = clone_of(sim);
        size_t len;
        OK(tide_io_sim_crash_state(c, mask, -1, 0));
        seen[mask] = image_of(c, "/f", &len, "crash state");
        if (len != 1536) fail_msg("mask %llu: expected 1536 bytes, got %zu", (unsigned long long)mask, len);
        for (int k = 0; k < 3; k++) {
            int want = (mask >> k) & 1 ? 0x10 * (k + 1) : 0;
            if (!all_are(seen[mask], 512 * k, 512 * (k + 1), want))
                fail_msg("mask %llu: expected sector %d to hold %02x, got %02x",
                         (unsigned long long)mask, k, want, seen[mask][512 * k]);
        }
        for (uint64_t m = 0; m < mask; m++)
            if (memcmp(seen[m], seen[mask], 1536) == 0)
                fail_msg("masks %llu and %llu: expected distinct images, got the same",
                         (unsigned long long)m, (unsigned long long)mask);
        tide_io_sim_destroy(c);
    }
    for (int m = 0; m < 8; m++) free(seen[m]);
    EXPECT(tide_io_sim_crash_state(sim, 8, -1, 0), TIDE_EINVAL);     /* no op 3 */
    EXPECT(tide_io_sim_crash_state(sim, 1, 0, 256), TIDE_EINVAL);    /* not a boundary */
    EXPECT(tide_io_sim_crash_state(sim, 2, 0, 0), TIDE_EINVAL);      /* op 0 not kept */
    if (tide_io_sim_pending_count(sim) != 3)
        fail_msg("refused crash states: expected the sim unchanged with 3 pending, got %llu",
                 (unsigned long long)tide_io_sim_pending_count(sim));
}

static void a_crash_state_tears_the_chosen_write_at_the_chosen_boundary(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f;
    size_t len;
    uint8_t *img;

    put_fill(sim, "/f", 0, 100);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 100, 0x44, 2000));     /* 100..2099: boundaries 512, 1024, 1536, 2048 */
    io->close(f);
    OK(tide_io_sim_crash_state(sim, 1, 0, 924)); /* keeps 100..1023 */
    img = image_of(sim, "/f", &len, "torn state");
    if (len != 1024 || !all_are(img, 0, 100, 0) || !all_are(img, 100, 1024, 0x44))
        fail_msg("tear after 924 bytes: expected 1024 bytes, 0x44 from 100, got %zu bytes", len);
    free(img);
}

/* ---- directories: mkdir, rmdir, list ---- */

/* What a script of directory calls saw, one line a step, for comparing the
 * two implementations (and the expected text). */
typedef struct dir_log {
    char text[4096];
    size_t len;
    int stop_after;              /* list_entry returns 7 after this many; 0: never */
    int seen;
} dir_log;

static void log_line(dir_log *l, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(l->text + l->len, sizeof l->text - l->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof l->text - l->len) fail_msg("directory script log is full");
    l->len += (size_t)n;
}

static int list_entry(void *arg, const char *name, int is_dir)
{
    dir_log *l = arg;

    log_line(l, " %s%s", name, is_dir ? "/" : "");
    if (l->stop_after && ++l->seen == l->stop_after) return 7;
    return 0;
}

/* Log `what`, the call's code, and for a list its entries. */
static void log_list(dir_log *l, tide_io *io, const char *root, const char *rel, int stop)
{
    char p[2200];
    int rc;

    snprintf(p, sizeof p, "%s%s", root, rel);
    l->stop_after = stop;
    l->seen = 0;
    log_line(l, "list %s:", rel);
    rc = io->list(io, p, list_entry, l);
    log_line(l, " = %d\n", rc);
}

static void log_call(dir_log *l, tide_io *io, const char *root, const char *what, const char *rel)
{
    char p[2200];
    int rc;

    snprintf(p, sizeof p, "%s%s", root, rel);
    if (strcmp(what, "mkdir") == 0) rc = io->mkdir(io, p);
    else if (strcmp(what, "rmdir") == 0) rc = io->rmdir(io, p);
    else if (strcmp(what, "unlink") == 0) rc = io->unlink(io, p);
    else if (strcmp(what, "stat") == 0) rc = io->stat(io, p, NULL);
    else {
        tide_file *f = NULL;
        rc = io->open(io, p, TIDE_IO_CREATE, &f);
        if (rc == 0) io->close(f);
    }
    log_line(l, "%s %s = %d\n", what, rel, rc);
}

/* One script of directory calls under `root` (an existing empty
 * directory), every result logged. */
static void dir_script(tide_io *io, const char *root, dir_log *l)
{
    static const char *const steps[][2] = {
        { "mkdir", "/a" }, { "mkdir", "/a" }, { "mkdir", "/x/y" }, { "create", "/a/zeta" },
        { "create", "/a/alpha" }, { "mkdir", "/a/mid" }, { "mkdir", "/a/zeta" },
        { "create", "/a/mid/f" }, { "rmdir", "/a" }, { "rmdir", "/a/zeta" },
        { "rmdir", "/nope" }, { "rmdir", "/a/mid" },
    };

    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        log_call(l, io, root, steps[i][0], steps[i][1]);
    log_list(l, io, root, "", 0);
    log_list(l, io, root, "/a", 0);
    log_list(l, io, root, "/a", 2);     /* stops after two: fn's 7 comes back */
    log_list(l, io, root, "/nope", 0);
    log_list(l, io, root, "/a/zeta", 0);
    log_call(l, io, root, "unlink", "/a/mid/f");
    log_call(l, io, root, "rmdir", "/a/mid");
    log_call(l, io, root, "unlink", "/a/zeta");
    log_call(l, io, root, "unlink", "/a/alpha");
    log_call(l, io, root, "rmdir", "/a");
    log_call(l, io, root, "stat", "/a");
    log_list(l, io, root, "", 0);
}

static const char dir_script_expected[] =
    "mkdir /a = 0\n"
    "mkdir /a = -30507\n"                    /* TIDE_EEXIST */
    "mkdir /x/y = -30508\n"                  /* TIDE_ENOENT: no parent */
    "create /a/zeta = 0\n"
    "create /a/alpha = 0\n"
    "mkdir /a/mid = 0\n"
    "mkdir /a/zeta = -30507\n"               /* a file has the name */
    "create /a/mid/f = 0\n"
    "rmdir /a = -30517\n"                   /* TIDE_ENOTEMPTY */
    "rmdir /a/zeta = -30503\n"               /* a file: TIDE_EIO */
    "rmdir /nope = -30508\n"
    "rmdir /a/mid = -30517\n"
    "list : a/ = 0\n"
    "list /a: alpha mid/ zeta = 0\n"     /* sorted by name */
    "list /a: alpha mid/ = 7\n"
    "list /nope: = -30508\n"
    "list /a/zeta: = -30503\n"
    "unlink /a/mid/f = 0\n"
    "rmdir /a/mid = 0\n"
    "unlink /a/zeta = 0\n"
    "unlink /a/alpha = 0\n"
    "rmdir /a = 0\n"
    "stat /a = -30508\n"
    "list : = 0\n";

static void the_same_directory_script_gives_the_same_results_on_posix_and_the_sim(void **state)
{
    tide_io_sim *sim = *state;
    dir_log *posix = calloc(1, sizeof *posix), *simlog = calloc(1, sizeof *simlog);
    char dir[2048];

    assert_non_null(posix);
    assert_non_null(simlog);
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("no scratch directory");
    dir_script(tide_io_posix(), dir, posix);
    th_scratch_remove(dir);
    OK(tide_io_sim_mkdir(sim, "/s"));
    dir_script(tide_io_sim_io(sim), "/s", simlog);
    if (strcmp(posix->text, dir_script_expected) != 0)
        fail_msg("POSIX io: expected\n%s\ngot\n%s", dir_script_expected, posix->text);
    if (strcmp(simlog->text, posix->text) != 0)
        fail_msg("sim: expected what the POSIX io gave\n%s\ngot\n%s", posix->text, simlog->text);
    free(posix);
    free(simlog);
}

/* Is there a directory at `path` (stat through the io)? */
static int is_dir_at(tide_io_sim *sim, const char *path)
{
    tide_io *io = tide_io_sim_io(sim);
    int d = 0;

    return io->stat(io, path, &d) == 0 && d;
}

/* After a crash that keeps (keep) or loses the one pending namespace
 * operation, of a clone: is there a directory at `path`? */
static int dir_after_crash_state(tide_io_sim *sim, int keep, const char *path)
{
    tide_io_sim *c = clone_of(sim);
    int there;

    OK(tide_io_sim_crash_state_ns(c, 0, keep ? 1 : 0));
    there = is_dir_at(c, path);
    tide_io_sim_destroy(c);
    return there;
}

/* How many of 64 seeded crashes of clones leave a directory at `path`. */
static int dirs_after_64_crashes(tide_io_sim *sim, const char *path)
{
    int there = 0;

    for (uint64_t s = 0; s < 64; s++) {
        tide_io_sim *c = clone_of(sim);
        OK(tide_io_sim_crash(c, g_seed + s));
        there += is_dir_at(c, path);
        tide_io_sim_destroy(c);
    }
    return there;
}

static void expect_one_pending_ns_op(tide_io_sim *sim, const char *want)
{
    char what[128];

    if (tide_io_sim_pending_ns_count(sim) != 1)
        fail_msg("expected one pending namespace operation (%s), got %llu", want,
                 (unsigned long long)tide_io_sim_pending_ns_count(sim));
    OK(tide_io_sim_pending_ns_op(sim, 0, what, sizeof what));
    if (strcmp(what, want) != 0) fail_msg("pending namespace op 0: expected '%s', got '%s'", want, what);
}

static void a_mkdir_needs_sync_dir_of_its_parent_to_survive_a_crash(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    int n;

    OK(tide_io_sim_mkdir(sim, "/s"));
    OK(io->mkdir(io, "/s/gen-1"));
    if (!is_dir_at(sim, "/s/gen-1")) fail_msg("mkdir: the directory is not there at once");
    expect_one_pending_ns_op(sim, "mkdir /s/gen-1");
    if (dir_after_crash_state(sim, 0, "/s/gen-1"))
        fail_msg("a crash that loses the pending mkdir still has the directory");
    if (!dir_after_crash_state(sim, 1, "/s/gen-1"))
        fail_msg("a crash that keeps the pending mkdir has no directory");
    n = dirs_after_64_crashes(sim, "/s/gen-1");
    if (n == 0 || n == 64)
        fail_msg("64 seeded crashes of an unsynced mkdir: expected some to keep it and some to "
                 "lose it, %d kept it", n);
    OK(io->sync_dir(io, "/s/gen-1"));       /* its own directory: not the one its name is in */
    expect_one_pending_ns_op(sim, "mkdir /s/gen-1");
    OK(io->sync_dir(io, "/s"));
    if (tide_io_sim_pending_ns_count(sim) != 0) fail_msg("sync_dir of the parent left it pending");
    if ((n = dirs_after_64_crashes(sim, "/s/gen-1")) != 64)
        fail_msg("a synced mkdir: expected every crash to keep it, %d of 64 did", n);
}

static void a_crash_that_loses_a_mkdir_loses_the_synced_files_inside(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_io_sim *c;
    tide_file *f;

    OK(tide_io_sim_mkdir(sim, "/s"));
    OK(io->mkdir(io, "/s/gen-1"));
    OK(io->mkdir(io, "/s/gen-1/sub"));
    f = open_file(io, "/s/gen-1/nudb.dat", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 0x5a, 100));
    OK(io->sync(f));
    io->close(f);
    OK(io->sync_dir(io, "/s/gen-1"));       /* the file and sub durable in gen-1 */
    expect_one_pending_ns_op(sim, "mkdir /s/gen-1");
    c = clone_of(sim);
    OK(tide_io_sim_crash_state_ns(c, 0, 0));
    if (is_dir_at(c, "/s/gen-1") || is_dir_at(c, "/s/gen-1/sub") || exists(c, "/s/gen-1/nudb.dat"))
        fail_msg("a crash that loses mkdir /s/gen-1 left its directory, sub or nudb.dat");
    tide_io_sim_destroy(c);
    OK(io->sync_dir(io, "/s"));
    OK(tide_io_sim_crash(sim, g_seed));
    if (!is_dir_at(sim, "/s/gen-1/sub") || !exists(sim, "/s/gen-1/nudb.dat"))
        fail_msg("with the parent synced too, a crash lost sub or nudb.dat");
}

static void an_rmdir_needs_sync_dir_of_its_parent_to_survive_a_crash(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    int n;

    OK(tide_io_sim_mkdir(sim, "/s/gen-1"));  /* durable, with its parent */
    OK(io->rmdir(io, "/s/gen-1"));
    if (is_dir_at(sim, "/s/gen-1")) fail_msg("rmdir: the directory is still there");
    expect_one_pending_ns_op(sim, "rmdir /s/gen-1");
    if (!dir_after_crash_state(sim, 0, "/s/gen-1"))
        fail_msg("a crash that loses the pending rmdir has no directory");
    if (dir_after_crash_state(sim, 1, "/s/gen-1"))
        fail_msg("a crash that keeps the pending rmdir still has the directory");
    n = dirs_after_64_crashes(sim, "/s/gen-1");
    if (n == 0 || n == 64)
        fail_msg("64 seeded crashes of an unsynced rmdir: expected some to undo it and some not, "
                 "%d undid it", n);
    OK(io->sync_dir(io, "/s"));
    if ((n = dirs_after_64_crashes(sim, "/s/gen-1")) != 0)
        fail_msg("a synced rmdir: expected no crash to undo it, %d of 64 did", n);
    OK(io->mkdir(io, "/s/gen-1"));          /* made again: pending once more */
    expect_one_pending_ns_op(sim, "mkdir /s/gen-1");
}

static int count_entry(void *arg, const char *name, int is_dir)
{
    (void)name;
    (void)is_dir;
    (*(int *)arg)++;
    return 0;
}

/* Arm a one-time `kind` at the next call, expect `call` to fail with
 * `want` naming an injected fault, counted once. */
#define EXPECT_INJECTED(sim, kind, call, want)                                              \
    do {                                                                                     \
        uint64_t c0_ = tide_io_sim_calls(sim), f0_ = tide_io_sim_faults(sim);                \
        OK(tide_io_sim_fail_at((sim), 1, (kind), 0));                                        \
        EXPECT((call), (want));                                                              \
        expect_message_has("injected", #call);                                               \
        if (tide_io_sim_calls(sim) - c0_ != 1 || tide_io_sim_faults(sim) - f0_ != 1)         \
            fail_msg("%s: expected one counted call and one fault", #call);                  \
    } while (0)

static void fail_at_fails_mkdir_rmdir_and_list_with_no_effect(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    uint64_t c0;
    int entries = 0;

    OK(tide_io_sim_mkdir(sim, "/s/old"));
    EXPECT_INJECTED(sim, TIDE_IO_SIM_EIO, io->mkdir(io, "/s/new"), TIDE_EIO);
    EXPECT_INJECTED(sim, TIDE_IO_SIM_ENOSPC, io->mkdir(io, "/s/new"), TIDE_ENOSPC);
    if (is_dir_at(sim, "/s/new") || tide_io_sim_pending_ns_count(sim) != 0)
        fail_msg("a failed mkdir made its directory");
    EXPECT_INJECTED(sim, TIDE_IO_SIM_EIO, io->rmdir(io, "/s/old"), TIDE_EIO);
    EXPECT_INJECTED(sim, TIDE_IO_SIM_ENOSPC, io->rmdir(io, "/s/old"), TIDE_EIO);
    if (!is_dir_at(sim, "/s/old") || tide_io_sim_pending_ns_count(sim) != 0)
        fail_msg("a failed rmdir removed its directory");
    EXPECT_INJECTED(sim, TIDE_IO_SIM_EIO, io->list(io, "/s", count_entry, &entries), TIDE_EIO);
    if (entries != 0) fail_msg("a failed list called back %d times", entries);
    c0 = tide_io_sim_calls(sim);
    OK(io->mkdir(io, "/s/new"));
    OK(io->rmdir(io, "/s/old"));
    OK(io->list(io, "/s", count_entry, &entries));
    if (tide_io_sim_calls(sim) - c0 != 3 || entries != 1)
        fail_msg("mkdir, rmdir, list unfaulted: expected 3 counted calls and 1 entry, got %llu "
                 "and %d", (unsigned long long)(tide_io_sim_calls(sim) - c0), entries);
}

static void open_refuses_a_special_file_or_a_directory_at_once_with_TIDE_ENOTSTORE(void **state)
{
    static const int flags[] = { TIDE_IO_READ, TIDE_IO_WRITE, TIDE_IO_CREATE,
                                 TIDE_IO_CREATE | TIDE_IO_EXCL };
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *f = NULL;
    int is_dir = 1;

    OK(tide_io_sim_put_special(sim, "d/fifo", "a FIFO"));
    OK(tide_io_sim_mkdir(sim, "d/sub"));
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int rc = io->open(io, "d/fifo", flags[i], &f);
        int want = (flags[i] & TIDE_IO_EXCL) ? TIDE_EEXIST : TIDE_ENOTSTORE;
        if (rc != want)
            fail_msg("open of a FIFO with flags %d: expected %d (%s), got %d (%s): %s", flags[i],
                     want, tide_strerror(want), rc, tide_strerror(rc), tide_last_error());
        if (want == TIDE_ENOTSTORE) expect_message_has("is a FIFO, not a regular file", "FIFO open");
        rc = io->open(io, "d/sub", flags[i], &f);
        if (rc != TIDE_ENOTSTORE)
            fail_msg("open of a directory with flags %d: expected TIDE_ENOTSTORE, got %d (%s): %s",
                     flags[i], rc, tide_strerror(rc), tide_last_error());
    }
    OK(io->stat(io, "d/fifo", &is_dir));
    if (is_dir) fail_msg("stat of a FIFO: expected a file, got a directory");
    EXPECT(tide_io_sim_put_special(sim, "d/x", ""), TIDE_EINVAL);
    OK(io->unlink(io, "d/fifo"));
    EXPECT(io->stat(io, "d/fifo", NULL), TIDE_ENOENT);
}

static void crash_state_ns_keeps_any_subset_of_the_pending_unlinks(void **state)
{
    tide_io_sim *base = *state;
    tide_io *io = tide_io_sim_io(base);
    char desc[128];

    OK(tide_io_sim_mkdir(base, "d"));
    put_fill(base, "d/a", 'a', 10);
    put_fill(base, "d/b", 'b', 10);
    OK(io->unlink(io, "d/a"));
    OK(io->unlink(io, "d/b"));
    if (tide_io_sim_pending_ns_count(base) != 2) fail_msg("expected 2 pending namespace ops");
    OK(tide_io_sim_pending_ns_op(base, 1, desc, sizeof desc));
    if (strcmp(desc, "unlink d/b") != 0) fail_msg("pending op 1: expected 'unlink d/b', got '%s'", desc);
    for (uint64_t m = 0; m < 4; m++) {
        tide_io_sim *c = clone_of(base);
        OK(tide_io_sim_crash_state_ns(c, 0, m));
        if (exists(c, "d/a") != !(m & 1) || exists(c, "d/b") != !(m & 2))
            fail_msg("mask %llu: expected a %s and b %s, got a %s, b %s", (unsigned long long)m,
                     m & 1 ? "gone" : "kept", m & 2 ? "gone" : "kept",
                     exists(c, "d/a") ? "kept" : "gone", exists(c, "d/b") ? "kept" : "gone");
        tide_io_sim_destroy(c);
    }
    EXPECT(tide_io_sim_crash_state_ns(base, 0, 4), TIDE_EINVAL);
    OK(io->sync_dir(io, "d"));
    if (tide_io_sim_pending_ns_count(base) != 0) fail_msg("sync_dir left namespace ops pending");
}

static void a_clone_is_independent_of_its_original(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_io_sim *c;
    tide_file *f, *g;
    size_t len;
    uint8_t *img;

    put_fill(sim, "/f", 1, 100);
    f = open_file(io, "/f", TIDE_IO_WRITE);
    OK(write_fill(io, f, 0, 2, 50));            /* pending in both */
    OK(io->lock(f, 1));
    c = clone_of(sim);
    OK(write_fill(io, f, 0, 3, 10));            /* only the original */
    img = image_of(c, "/f", &len, "the clone");
    if (len != 100 || img[0] != 2 || img[60] != 1)
        fail_msg("clone: expected the state at the clone (2 then 1), got %02x %02x", img[0], img[60]);
    free(img);
    if (tide_io_sim_pending_count(c) != 1)
        fail_msg("clone: expected 1 pending op, got %llu", (unsigned long long)tide_io_sim_pending_count(c));
    g = open_file(tide_io_sim_io(c), "/f", TIDE_IO_WRITE);
    OK(tide_io_sim_io(c)->lock(g, 1));          /* the original's lock is not in the clone */
    tide_io_sim_io(c)->close(g);
    OK(tide_io_sim_crash(c, 0));
    OK(write_fill(io, f, 10, 4, 10));           /* the original's handle still works */
    img = image_of(sim, "/f", &len, "the original");
    if (img[0] != 3 || img[15] != 4 || img[30] != 2)
        fail_msg("original: expected 3, 4, 2 at 0, 15, 30, got %02x %02x %02x", img[0], img[15], img[30]);
    free(img);
    tide_io_sim_destroy(c);
    io->close(f);
}

static void locks_conflict_like_flock(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_file *a, *b, *c;

    put_fill(sim, "/k", 1, 10);
    a = open_file(io, "/k", TIDE_IO_READ);
    b = open_file(io, "/k", TIDE_IO_READ);
    c = open_file(io, "/k", TIDE_IO_WRITE);
    OK(io->lock(a, 0));
    OK(io->lock(b, 0));                          /* shared with shared */
    EXPECT(io->lock(c, 1), TIDE_EBUSY);          /* exclusive against shared */
    io->close(a);
    EXPECT(io->lock(c, 1), TIDE_EBUSY);
    io->close(b);
    OK(io->lock(c, 1));
    a = open_file(io, "/k", TIDE_IO_READ);
    EXPECT(io->lock(a, 0), TIDE_EBUSY);          /* shared against exclusive */
    EXPECT(io->lock(a, 1), TIDE_EBUSY);
    OK(io->lock(c, 0));                          /* a holder may convert its own lock */
    OK(io->lock(a, 0));
    io->close(c);
    io->close(a);
}

static void counters_count_what_succeeded(void **state)
{
    tide_io_sim *sim = *state;
    tide_io *io = tide_io_sim_io(sim);
    tide_io_sim_file_stats st;
    tide_file *f;
    uint8_t buf[300];

    f = open_file(io, "/f", TIDE_IO_CREATE);
    OK(write_fill(io, f, 0, 1, 1000));
    OK(write_fill(io, f, 1000, 1, 24));
    OK(tide_io_sim_fail_at(sim, 1, TIDE_IO_SIM_EIO, 0));
    EXPECT(write_fill(io, f, 0, 1, 5000), TIDE_EIO);
    OK(io->sync(f));
    OK(io->read_at(f, buf, 300, 0));
    OK(io->sync_dir(io, "/"));
    if (io->bytes_written != 1024 || io->writes != 2 || io->syncs != 2 || io->reads != 1
        || io->bytes_read != 300)
        fail_msg("tide_io counters: expected 1024 bytes in 2 writes, 2 syncs, 300 bytes in 1 "
                 "read; got %llu in %llu, %llu, %llu in %llu",
                 (unsigned long long)io->bytes_written, (unsigned long long)io->writes,
                 (unsigned long long)io->syncs, (unsigned long long)io->bytes_read,
                 (unsigned long long)io->reads);
    OK(tide_io_sim_file_stats_get(sim, "/f", &st));
    if (st.bytes_written != 1024 || st.writes != 2 || st.syncs != 1 || st.size != 1024
        || st.durable_size != 1024 || st.pending_ops != 0)
        fail_msg("file stats: expected 1024 bytes in 2 writes, 1 sync, 1024 durable, nothing "
                 "pending; got %llu in %llu, %llu, %llu durable, %llu pending",
                 (unsigned long long)st.bytes_written, (unsigned long long)st.writes,
                 (unsigned long long)st.syncs, (unsigned long long)st.durable_size,
                 (unsigned long long)st.pending_ops);
    io->close(f);
}

/* ---- the invariants run ---- */

/*
 * In a child process: a sim (paranoid or not) with /d/f durable and a
 * pending write on it through a handle left open, broken as `what` (0: not
 * broken), then one stat (a counted call, which checks at its end), a line
 * "stat passed" on stderr, and tide_io_sim_check (the bytes too). Exits 0
 * when nothing fired; a check that fires aborts.
 */
#define CHECK_PARANOID  1      /* break_and_call's `mode`: every call compares bytes */
#define CHECK_UNCHECKED 2      /* no call checks; only tide_io_sim_check */

static void break_and_call(int what, int mode)
{
    struct rlimit no_core = { 0, 0 };
    uint8_t data[3000];
    tide_io_sim *sim = NULL;
    tide_file *f = NULL;
    tide_io *io;
    int isdir;

    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGABRT, SIG_DFL);
    memset(data, 'a', sizeof data);
    if (tide_io_sim_create(&sim) != 0 || tide_io_sim_put_file(sim, "/d/f", data, sizeof data) != 0)
        _exit(2);
    tide_io_sim_set_paranoid(sim, mode == CHECK_PARANOID);
    tide_io_sim_set_checked(sim, mode != CHECK_UNCHECKED);
    io = tide_io_sim_io(sim);
    if (io->open(io, "/d/f", TIDE_IO_WRITE, &f) != 0 || io->write_at(f, "bb", 2, 100) != 0)
        _exit(3);
    if (what && tide_io_sim_break(sim, "/d/f", (tide_io_sim_breakage)what) != 0) _exit(4);
    io->stat(io, "/d/f", &isdir);
    fputs("stat passed\n", stderr);
    fflush(stderr);
    tide_io_sim_check(sim);
    _exit(0);
}

/* Run break_and_call in a th_fork child; its wait status, and what it
 * wrote on stderr into err (cap bytes, NUL-terminated). */
static int run_broken(int what, int mode, char *err, size_t cap)
{
    int fds[2], status = 0;
    size_t n = 0;
    ssize_t r;
    pid_t pid;

    if (pipe(fds) != 0) fail_msg("pipe failed");
    pid = th_fork();
    if (pid < 0) fail_msg("fork failed");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        break_and_call(what, mode);
    }
    close(fds[1]);
    while (n + 1 < cap && (r = read(fds[0], err + n, cap - 1 - n)) > 0) n += (size_t)r;
    err[n] = '\0';
    close(fds[0]);
    if (th_waitpid(pid, &status, 0) != pid) fail_msg("waitpid failed");
    return status;
}

static void expect_abort(int status, const char *err, const char *expr, const char *what)
{
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("%s: expected the child to abort (SIGABRT), got status %#x; stderr '%s'", what,
                 status, err);
    if (strstr(err, "tide: invariant broken: ") == NULL || strstr(err, expr) == NULL
        || strstr(err, "io_sim_check.c") == NULL)
        fail_msg("%s: expected stderr to name the broken invariant ('%s' in io_sim_check.c), "
                 "got '%s'", what, expr, err);
}

static void a_broken_invariant_aborts_the_next_call_and_names_itself(void **state)
{
    static const struct { int what; const char *expr; const char *name; } cases[] = {
        { TIDE_IO_SIM_BREAK_PENDING_COUNT, "i->npending == i->seen_ops", "1: a pending count" },
        { TIDE_IO_SIM_BREAK_NAME, "cur_ns", "2: a name dropped" },
        { TIDE_IO_SIM_BREAK_DIR, "ti_sim_dirset_has(&sim->dirs, p) == expected_dir(sim, p)",
          "2: a directory durable only" },
        { TIDE_IO_SIM_BREAK_ORPHAN, "i->seen_refs > 0 || i->handles > 0", "3: an orphan inode" },
        { TIDE_IO_SIM_BREAK_LOCKS, "i->excl_locks == 0", "4: two exclusive locks" },
        { TIDE_IO_SIM_BREAK_SIZE, "m->size <= m->cap", "5: a size past the allocation" },
        { TIDE_IO_SIM_BREAK_UNLOCKED, "sim->locked", "6: a check without the mutex" },
    };
    char err[2048];
    int status;

    (void)state;
    status = run_broken(0, CHECK_PARANOID, err, sizeof err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(err, "stat passed") == NULL)
        fail_msg("a sim not broken: expected the child to exit 0 past the stat, got status %#x; "
                 "stderr '%s'", status, err);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        status = run_broken(cases[k].what, 0, err, sizeof err);
        expect_abort(status, err, cases[k].expr, cases[k].name);
        if (strstr(err, "stat passed") != NULL)
            fail_msg("%s: expected the stat's own check to fire, but the stat passed; stderr '%s'",
                     cases[k].name, err);
    }
}

/* The sim broken as `what` says, in `mode`: the child's stat passes and
 * the full check after it (tide_io_sim_check) fires, naming `expr`. */
static void expect_fired_after_the_stat(int what, int mode, const char *expr, const char *name)
{
    char err[2048];
    int status = run_broken(what, mode, err, sizeof err);

    expect_abort(status, err, expr, name);
    if (strstr(err, "stat passed") == NULL)
        fail_msg("%s: expected the stat to pass and the full check after it to fire, got stderr '%s'",
                 name, err);
}

static void a_flipped_byte_is_seen_by_the_byte_check_only(void **state)
{
    char err[2048];
    int status;

    (void)state;
    /* Not paranoid: the stat's check (sizes and counts) passes, the full
     * check after it fires. */
    expect_fired_after_the_stat(TIDE_IO_SIM_BREAK_BYTE, 0, "memcmp", "a flipped byte, not paranoid");
    /* Paranoid: the stat's own check compares the bytes. */
    status = run_broken(TIDE_IO_SIM_BREAK_BYTE, CHECK_PARANOID, err, sizeof err);
    expect_abort(status, err, "memcmp", "a flipped byte, paranoid");
    if (strstr(err, "stat passed") != NULL)
        fail_msg("a flipped byte, paranoid: expected the stat's check to fire, got stderr '%s'",
                 err);
}

/* A sim set unchecked (as the fuzz target sets its own) lets the calls
 * after a broken invariant pass; tide_io_sim_check still finds it. */
static void an_unchecked_sim_finds_a_broken_invariant_at_its_next_check_only(void **state)
{
    (void)state;
    expect_fired_after_the_stat(TIDE_IO_SIM_BREAK_PENDING_COUNT, CHECK_UNCHECKED, "i->npending == i->seen_ops",
                                "a pending count, unchecked");
    expect_fired_after_the_stat(TIDE_IO_SIM_BREAK_LOCKS, CHECK_UNCHECKED, "i->excl_locks == 0",
                                "two exclusive locks, unchecked");
}

/* ---- the store on the sim ---- */

#define DB "/db"
#define KEY_SIZE 32
#define VMIN 1
#define VMAX 300

static void store_create_on(tide_io_sim *sim)
{
    tide_store_create_opts co;

    OK(tide_io_sim_mkdir(sim, DB));
    tide_store_create_opts_init(&co);
    co.key_size = KEY_SIZE;
    co.salt = 42;
    co.uid = 0x73696d73696dull;
    co.io = tide_io_sim_io(sim);
    OK(tide_store_create(DB, &co));
}

static tide_store *store_open_raw(tide_io_sim *sim, unsigned interval_ms, const char *what)
{
    tide_store_opts o;
    tide_store *s = NULL;
    int rc;

    tide_store_opts_init(&o);
    o.commit_interval_ms = interval_ms;
    o.io = tide_io_sim_io(sim);
    rc = tide_store_open(&s, DB, &o);
    if (rc != 0)
        fail_msg("%s: open: expected 0, got %d (%s): %s", what, rc, tide_strerror(rc),
                 tide_last_error());
    return s;
}

/* Open (the store makes its new log's name durable itself). */
static tide_store *store_open_on(tide_io_sim *sim, unsigned interval_ms, const char *what)
{
    return store_open_raw(sim, interval_ms, what);
}

static void insert_items(tide_store *s, uint64_t from, uint64_t to)
{
    uint8_t key[KEY_SIZE], val[VMAX];

    for (uint64_t i = from; i < to; i++) {
        size_t len = th_len(i, VMIN, VMAX);
        int rc;
        th_key(i, KEY_SIZE, key);
        th_value(i, len, val);
        rc = tide_store_insert(s, key, val, len);
        if (rc != 0)
            fail_msg("insert of item %llu: expected 0, got %d (%s): %s", (unsigned long long)i,
                     rc, tide_strerror(rc), tide_last_error());
    }
}

/* 1 when item i fetches exactly, 0 when absent; fails the test otherwise
 * (or when absent and `must`). */
static int fetch_item(tide_store *s, uint64_t i, int must, const char *what)
{
    return th_store_fetch_item(s, i, KEY_SIZE, th_len(i, VMIN, VMAX), must, what);
}

static void the_store_keeps_2000_items_through_a_reopen_on_the_sim(void **state)
{
    tide_io_sim *sim = *state;
    tide_store *s;
    tide_verify_report r;

    store_create_on(sim);
    s = store_open_on(sim, 10, "first open");
    insert_items(s, 0, 2000);
    OK(tide_store_sync(s));
    OK(tide_store_close(s));
    s = store_open_on(sim, 10, "reopen");
    for (uint64_t i = 0; i < 2000; i++) fetch_item(s, i, 1, "after a reopen");
    OK(tide_store_close(s));
    OK(tide_store_verify_io(DB, tide_io_sim_io(sim), &r));
    if (r.keys != 2000) fail_msg("verify: expected 2000 keys, got %llu", (unsigned long long)r.keys);
    if (tide_io_sim_pending_count(sim) != 0)
        fail_msg("after a clean close: expected nothing pending, got %llu",
                 (unsigned long long)tide_io_sim_pending_count(sim));
}

/*
 * Open the crashed store in `sim` (recovery runs), check items 0..synced-1
 * are exact and synced..end-1 absent or exact, insert 10 new items, close,
 * and verify with the expected key count.
 */
static void check_crashed_store(tide_io_sim *sim, uint64_t synced, uint64_t end, const char *what)
{
    tide_verify_report r;
    uint64_t present = 0;
    tide_store *s;
    int rc;

    tide_io_sim_check(sim);             /* the crash image, bytes and all */
    s = store_open_on(sim, 60000, what);
    for (uint64_t i = 0; i < synced; i++) fetch_item(s, i, 1, what);
    for (uint64_t i = synced; i < end; i++) present += fetch_item(s, i, 0, what);
    insert_items(s, 1000000, 1000010);
    OK(tide_store_sync(s));
    OK(tide_store_close(s));
    rc = tide_store_verify_io(DB, tide_io_sim_io(sim), &r);
    if (rc != 0)
        fail_msg("%s: verify: expected 0, got %d (%s): %s", what, rc, tide_strerror(rc),
                 tide_last_error());
    tide_io_sim_check(sim);             /* and what recovery and the new items made of it */
    if (r.keys != synced + present + 10)
        fail_msg("%s: verify: expected %llu keys (%llu synced, %llu of the unsynced burst, 10 "
                 "new), got %llu", what, (unsigned long long)(synced + present + 10),
                 (unsigned long long)synced, (unsigned long long)present,
                 (unsigned long long)r.keys);
}

#define SYNCED 1000
#define BURST 200

/* A sim holding a closed store with items 0..SYNCED-1. */
static void make_base(tide_io_sim *sim)
{
    tide_store *s;

    store_create_on(sim);
    s = store_open_on(sim, 60000, "base");
    insert_items(s, 0, SYNCED);
    OK(tide_store_sync(s));
    OK(tide_store_close(s));
}

/*
 * From the base: open, insert a burst, then make the n-th call of the
 * commit that tide_store_sync starts fail with `kind`, and every call after
 * it (the power is gone). Crash with three seeds; each must recover. n runs
 * from 1 until the commit completes without reaching n.
 */
static void crash_at_every_call_of_a_commit(tide_io_sim *base, tide_io_sim_fault kind,
                                            const char *kind_name)
{
    uint64_t n, states = 0;

    for (n = 1;; n++) {
        tide_io_sim *c = clone_of(base);
        tide_store *s = store_open_on(c, 60000, "crash loop");
        uint64_t c0;
        int rc, reached;
        char what[160];

        insert_items(s, SYNCED, SYNCED + BURST);
        c0 = tide_io_sim_calls(c);
        OK(tide_io_sim_fail_at(c, n, kind, 1));
        rc = tide_store_sync(s);
        reached = tide_io_sim_calls(c) - c0 >= n;
        tide_store_close(s);
        if (!reached) {
            if (rc != 0)
                fail_msg("%s loop, n %llu: the commit did not reach call n: expected sync to "
                         "return 0, got %d (%s)", kind_name, (unsigned long long)n, rc,
                         tide_strerror(rc));
            tide_io_sim_destroy(c);
            break;
        }
        for (uint64_t k = 0; k < 3; k++) {
            tide_io_sim *d = clone_of(c);
            uint64_t seed = g_seed + n * 3 + k;
            snprintf(what, sizeof what, "%s at commit call %llu, crash seed %llu (TIDE_TEST_SEED=%llu)",
                     kind_name, (unsigned long long)n, (unsigned long long)seed,
                     (unsigned long long)g_seed);
            OK(tide_io_sim_crash(d, seed));
            check_crashed_store(d, SYNCED, SYNCED + BURST, what);
            tide_io_sim_destroy(d);
            states++;
        }
        tide_io_sim_destroy(c);
    }
    print_message("%s: the commit made %llu calls; %llu crash states recovered\n", kind_name,
                  (unsigned long long)(n - 1), (unsigned long long)states);
}

/*
 * Like the loop above, but exhaustive: at each call n of the commit, every
 * subset of the pending writes and truncates, and every single tear (at each
 * 512-byte boundary of each write, the others kept), is a crash state that
 * must recover.
 */
static void every_crash_state_at_every_call_of_a_commit_recovers(void **state)
{
    tide_io_sim *base = *state;
    uint64_t n, states = 0;

    make_base(base);
    for (n = 1;; n++) {
        tide_io_sim *c = clone_of(base);
        tide_store *s = store_open_on(c, 60000, "exhaustive loop");
        uint64_t c0, k, all;
        int reached;
        char what[512];

        insert_items(s, SYNCED, SYNCED + BURST);
        c0 = tide_io_sim_calls(c);
        OK(tide_io_sim_fail_at(c, n, TIDE_IO_SIM_EIO, 1));
        tide_store_sync(s);
        reached = tide_io_sim_calls(c) - c0 >= n;
        tide_store_close(s);
        if (!reached) { tide_io_sim_destroy(c); break; }
        k = tide_io_sim_pending_count(c);
        if (k > 12) fail_msg("call %llu: expected at most 12 pending ops, got %llu",
                             (unsigned long long)n, (unsigned long long)k);
        all = (1ull << k) - 1;
        for (uint64_t mask = 0; mask <= all; mask++) {
            tide_io_sim *d = clone_of(c);
            snprintf(what, sizeof what, "commit call %llu, crash state mask %#llx of %llu ops",
                     (unsigned long long)n, (unsigned long long)mask, (unsigned long long)k);
            OK(tide_io_sim_crash_state(d, mask, -1, 0));
            check_crashed_store(d, SYNCED, SYNCED + BURST, what);
            tide_io_sim_destroy(d);
            states++;
        }
        for (uint64_t i = 0; i < k; i++) {
            tide_io_sim_op_info info;
            OK(tide_io_sim_pending_op(c, i, &info));
            if (info.is_truncate) continue;
            for (uint64_t at = (info.offset / 512 + 1) * 512 - info.offset; at < info.len; at += 512) {
                tide_io_sim *d = clone_of(c);
                snprintf(what, sizeof what, "commit call %llu, all %llu ops kept, op %llu (%s) "
                         "torn after %llu of %llu bytes", (unsigned long long)n,
                         (unsigned long long)k, (unsigned long long)i, info.path,
                         (unsigned long long)at, (unsigned long long)info.len);
                OK(tide_io_sim_crash_state(d, all, (int)i, at));
                check_crashed_store(d, SYNCED, SYNCED + BURST, what);
                tide_io_sim_destroy(d);
                states++;
            }
        }
        tide_io_sim_destroy(c);
    }
    print_message("exhaustive: %llu commit calls, %llu crash states recovered\n",
                  (unsigned long long)(n - 1), (unsigned long long)states);
}

static void a_crash_at_any_call_of_a_commit_keeps_every_synced_item(void **state)
{
    tide_io_sim *sim = *state;

    make_base(sim);
    crash_at_every_call_of_a_commit(sim, TIDE_IO_SIM_EIO, "EIO");
    crash_at_every_call_of_a_commit(sim, TIDE_IO_SIM_SYNC_FAIL, "failed sync");
}

static void a_crash_of_a_running_store_keeps_every_synced_item(void **state)
{
    tide_io_sim *sim = *state;
    tide_io_sim *snaps[10];
    tide_store *s;
    uint64_t states = 0;

    make_base(sim);
    s = store_open_on(sim, 10, "running store");
    for (int k = 0; k < 10; k++) {
        insert_items(s, SYNCED + (uint64_t)k * 100, SYNCED + (uint64_t)(k + 1) * 100);
        snaps[k] = clone_of(sim);               /* the commit thread may be mid-commit */
    }
    OK(tide_store_close(s));
    for (int k = 0; k < 10; k++) {
        for (uint64_t j = 0; j < 3; j++) {
            tide_io_sim *d = clone_of(snaps[k]);
            uint64_t seed = g_seed + 1000 + (uint64_t)k * 3 + j;
            char what[160];
            snprintf(what, sizeof what, "snapshot %d, crash seed %llu (TIDE_TEST_SEED=%llu)", k,
                     (unsigned long long)seed, (unsigned long long)g_seed);
            OK(tide_io_sim_crash(d, seed));
            check_crashed_store(d, SYNCED, SYNCED + 1000, what);
            tide_io_sim_destroy(d);
            states++;
        }
        tide_io_sim_destroy(snaps[k]);
    }
    print_message("running store: %llu crash states recovered\n", (unsigned long long)states);
}

/*
 * Regression: tide_store_open creates nudb.log (io.h: a create is durable
 * only after sync_dir). Had it not synced /db, a commit would sync the log's
 * bytes and write nudb.dat, and a power loss could keep part of the nudb.dat
 * append but not the log's name: recovery would find no log, and verify
 * unreachable (and torn) records past the old end of nudb.dat.
 */
static void the_store_makes_its_new_log_durable_before_a_commit_needs_it(void **state)
{
    tide_io_sim *sim = *state, *c;
    tide_store *s;

    make_base(sim);
    s = store_open_raw(sim, 60000, "open without the workaround");
    insert_items(s, SYNCED, SYNCED + BURST);
    /* Stop the power at the commit's 5th call: the log is synced and the
     * nudb.dat append is pending. */
    OK(tide_io_sim_fail_at(sim, 5, TIDE_IO_SIM_EIO, 1));
    tide_store_sync(s);
    tide_store_close(s);
    for (uint64_t seed = 0; seed < 20; seed++) {
        char what[96];
        snprintf(what, sizeof what, "crash seed %llu after the log sync of the first commit",
                 (unsigned long long)seed);
        c = clone_of(sim);
        OK(tide_io_sim_crash(c, seed));
        check_crashed_store(c, SYNCED, SYNCED + BURST, what);
        tide_io_sim_destroy(c);
    }
}

/* A failed create must let a second one succeed. */
static void create_again_succeeds(tide_io_sim *sim, tide_store_create_opts *co, uint64_t n, int rc,
                                  void *arg)
{
    (void)sim, (void)rc, (void)arg;
    co->salt = 1;
    rc = tide_store_create(DB, co);
    if (rc != 0)
        fail_msg("create after a create failed at call %llu: expected 0, got %d (%s): %s",
                 (unsigned long long)n, rc, tide_strerror(rc), tide_last_error());
}

static void store_create_fails_cleanly_at_every_call(void **state)
{
    uint64_t n;

    (void)state;
    n = th_store_create_failing_at_each_call(DB, KEY_SIZE, TIDE_IO_SIM_EIO, create_again_succeeds, NULL);
    print_message("create: %llu failure points\n", (unsigned long long)n);
}

static void the_store_refuses_a_fifo_as_any_of_its_three_files_and_writes_nothing(void **state)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log" };
    tide_io_sim *base = *state;
    tide_store *s = NULL;

    store_create_on(base);
    s = store_open_on(base, 1000, "the store before the FIFOs");
    insert_items(s, 0, 100);
    OK(tide_store_sync(s));
    OK(tide_store_close(s));
    for (size_t n = 0; n < 3; n++) {
        tide_io_sim *sim = clone_of(base);
        tide_io *io = tide_io_sim_io(sim);
        char path[64], want[96];
        tide_store_opts o;
        tide_store_info info;
        tide_recover_report rep;
        uint64_t writes;
        int rc;

        snprintf(path, sizeof path, DB "/%s", names[n]);
        snprintf(want, sizeof want, "%s: is a FIFO, not a regular file", path);
        OK(tide_io_sim_put_special(sim, path, "a FIFO"));
        writes = io->writes;
        for (int ro = 0; ro < 2; ro++) {
            tide_store_opts_init(&o);
            o.io = io;
            o.read_only = ro;
            rc = tide_store_open(&s, DB, &o);
            if (rc != TIDE_ENOTSTORE) {
                if (rc == 0) tide_store_close(s);
                fail_msg("%s open with a FIFO as %s: expected TIDE_ENOTSTORE, got %d (%s): %s",
                         ro ? "read-only" : "read-write", names[n], rc, tide_strerror(rc),
                         tide_last_error());
            }
            expect_message_has(want, names[n]);
        }
        rc = tide_store_inspect(DB, io, &info);
        if (rc != TIDE_ENOTSTORE)
            fail_msg("inspect with a FIFO as %s: expected TIDE_ENOTSTORE, got %d (%s): %s", names[n],
                     rc, tide_strerror(rc), tide_last_error());
        rc = tide_store_recover_io(DB, io, &rep);
        if (n > 0 && rc != TIDE_ENOTSTORE)   /* with no log, recovery reads nudb.key and the log only */
            fail_msg("recover with a FIFO as %s: expected TIDE_ENOTSTORE, got %d (%s): %s", names[n],
                     rc, tide_strerror(rc), tide_last_error());
        if (io->writes != writes)
            fail_msg("with a FIFO as %s: expected no write, got %llu", names[n],
                     (unsigned long long)(io->writes - writes));
        tide_io_sim_destroy(sim);
    }
}

/* ---- recovery of an interrupted key-file rebuild, crashed at every call ---- */

/*
 * The state a rebuild (NuDB's rekey) leaves when killed: nudb.dat with the
 * spill records it appended past `dat_size`, a partial nudb.key (a header
 * and two empty buckets), and a log whose key_file_size is 0. Recovery must
 * end with nudb.dat cut back to `dat_size`, no nudb.key (rekey builds it
 * again) and no nudb.log. *dat gets the image nudb.dat must end as.
 */
static void make_interrupted_rebuild(tide_io_sim *sim, uint8_t **dat, size_t *dat_len)
{
    tide_store_info in;
    uint8_t lbuf[TIDE_LOG_HEADER_SIZE], *key, *grown;
    size_t key_len;

    make_base(sim);
    OK(tide_store_inspect(DB, tide_io_sim_io(sim), &in));
    *dat = image_of(sim, DB "/nudb.dat", dat_len, "the base's nudb.dat");
    grown = malloc(*dat_len + 3 * 4102);
    assert_non_null(grown);
    memcpy(grown, *dat, *dat_len);
    memset(grown + *dat_len, 0x5a, 3 * 4102);             /* the rebuild's spill records */
    OK(tide_io_sim_put_file(sim, DB "/nudb.dat", grown, *dat_len + 3 * 4102));
    free(grown);
    key = image_of(sim, DB "/nudb.key", &key_len, "the base's nudb.key");
    memset(key + in.block_size, 0, 2 * (size_t)in.block_size);
    OK(tide_io_sim_put_file(sim, DB "/nudb.key", key, 3 * (size_t)in.block_size));
    free(key);
    th_encode_rebuild_log(lbuf, &in, in.block_size, *dat_len);
    OK(tide_io_sim_put_file(sim, DB "/nudb.log", lbuf, sizeof lbuf));
}

/* tide rekey builds the missing key file from nudb.dat: every synced item
 * is back and verify agrees. "" in why when so. */
static void expect_rebuilt(tide_io_sim *sim, char *why, size_t cap)
{
    tide_rekey_opts ro;
    tide_rekey_report rr;
    tide_verify_report vr;
    int rc;

    tide_rekey_opts_init(&ro);
    ro.io = tide_io_sim_io(sim);
    rc = tide_store_rekey_with(DB, &ro, &rr);
    if (rc != 0) {
        snprintf(why, cap, "the rekey that rebuilds nudb.key failed: %d (%s): %s", rc,
                 tide_strerror(rc), tide_last_error());
        return;
    }
    rc = tide_store_verify_io(DB, tide_io_sim_io(sim), &vr);
    if (rc != 0 || vr.keys != SYNCED)
        snprintf(why, cap, "after the rebuild: verify %d (%s), %llu keys, expected 0 and %d: %s", rc,
                 tide_strerror(rc), (unsigned long long)vr.keys, SYNCED, tide_last_error());
}

/* What a crash state must recover to; "" when it does, else what is wrong. */
static void rebuild_outcome(tide_io_sim *sim, const uint8_t *dat, size_t dat_len, char *why,
                            size_t cap)
{
    tide_recover_report rep;
    uint8_t *now = NULL;
    size_t len = 0;
    int rc = tide_store_recover_io(DB, tide_io_sim_io(sim), &rep);

    why[0] = '\0';
    if (rc != 0) {
        snprintf(why, cap, "the recovery after the crash failed: %d (%s): %s", rc,
                 tide_strerror(rc), tide_last_error());
        return;
    }
    if (exists(sim, DB "/nudb.key") && !exists(sim, DB "/nudb.log")) {
        snprintf(why, cap, "nudb.key (the partial rebuild) survived while nudb.log is gone: the "
                 "store is left with a key file that indexes nothing and nothing says so");
        return;
    }
    if (exists(sim, DB "/nudb.key") || exists(sim, DB "/nudb.log")) {
        snprintf(why, cap, "after a second recovery nudb.key %s and nudb.log %s remain",
                 exists(sim, DB "/nudb.key") ? "does" : "does not",
                 exists(sim, DB "/nudb.log") ? "does" : "does not");
        return;
    }
    if (tide_io_sim_get_durable_file(sim, DB "/nudb.dat", (void **)&now, &len) != 0 ||
        len != dat_len || memcmp(now, dat, dat_len) != 0) {
        snprintf(why, cap, "nudb.dat is %zu bytes, expected the %zu it had before the rebuild",
                 len, dat_len);
        free(now);
        return;
    }
    free(now);
    expect_rebuilt(sim, why, cap);
}

static void a_recovered_rebuild_leaves_no_key_file_at_every_crash_point(void **state)
{
    tide_io_sim *base = *state;
    uint8_t *dat = NULL;
    size_t dat_len = 0;
    uint64_t states = 0, points = 0;

    make_interrupted_rebuild(base, &dat, &dat_len);
    for (uint64_t n = 1;; n++) {
        tide_io_sim *run = clone_of(base);
        tide_recover_report rep;
        uint64_t c0 = tide_io_sim_calls(run), nd, nn;
        int done;

        /* The power fails at the n-th call: it and every later call fail. */
        OK(tide_io_sim_fail_at(run, n, TIDE_IO_SIM_EIO, 1));
        (void)tide_store_recover_io(DB, tide_io_sim_io(run), &rep);
        done = tide_io_sim_calls(run) - c0 < n;
        OK(tide_io_sim_fail_at(run, 0, TIDE_IO_SIM_NONE, 0));
        nd = tide_io_sim_pending_count(run);
        nn = tide_io_sim_pending_ns_count(run);
        if (nd > 10 || nn > 6) fail_msg("call %llu: %llu + %llu pending operations, more than this "
                                        "test enumerates", (unsigned long long)n,
                                        (unsigned long long)nd, (unsigned long long)nn);
        points++;
        for (uint64_t dm = 0; dm < (1ull << nd); dm++)
            for (uint64_t nm = 0; nm < (1ull << nn); nm++) {
                tide_io_sim *c = clone_of(run);
                char why[300], ops[300] = "";
                for (uint64_t k = 0; k < nn; k++) {
                    char one[128];
                    OK(tide_io_sim_pending_ns_op(run, k, one, sizeof one));
                    snprintf(ops + strlen(ops), sizeof ops - strlen(ops), "%s%s%s", k ? ", " : "",
                             (nm >> k) & 1 ? "kept " : "lost ", one);
                }
                OK(tide_io_sim_crash_state_ns(c, dm, nm));
                rebuild_outcome(c, dat, dat_len, why, sizeof why);
                tide_io_sim_destroy(c);
                states++;
                if (why[0]) {
                    tide_io_sim_destroy(run);
                    free(dat);
                    fail_msg("power lost at call %llu of the recovery of an interrupted rebuild, "
                             "data ops %#llx kept, namespace ops: %s: %s", (unsigned long long)n,
                             (unsigned long long)dm, ops[0] ? ops : "none pending", why);
                }
            }
        tide_io_sim_destroy(run);
        if (done) break;
    }
    free(dat);
    print_message("    interrupted rebuild: %llu crash points of its recovery, %llu crash states "
                  "(every subset of the pending writes and of the pending namespace operations) "
                  "recovered\n", (unsigned long long)points, (unsigned long long)states);
}

/*
 * A rekey that rebuilds a missing key file, failing at its n-th call (and
 * every call after: the power is gone), then a power loss: the next rekey
 * must build the key file again, with every item. Before, a store whose
 * key file was missing could not be rekeyed at all.
 */
static void a_rebuild_of_a_missing_key_file_crashed_at_any_call_is_finished_by_the_next_rekey(
    void **state)
{
    tide_io_sim *base = *state;
    uint64_t points = 0;

    make_base(base);
    OK(tide_io_sim_io(base)->unlink(tide_io_sim_io(base), DB "/nudb.key"));
    OK(tide_io_sim_io(base)->sync_dir(tide_io_sim_io(base), DB));
    for (uint64_t n = 1;; n++) {
        tide_io_sim *run = clone_of(base);
        tide_rekey_opts ro;
        uint64_t c0 = tide_io_sim_calls(run);
        char why[300] = "";
        int done, rc;

        tide_rekey_opts_init(&ro);
        ro.io = tide_io_sim_io(run);
        ro.block_size = 8192;
        OK(tide_io_sim_fail_at(run, n, TIDE_IO_SIM_EIO, 1));
        rc = tide_store_rekey_with(DB, &ro, NULL);
        done = tide_io_sim_calls(run) - c0 < n;
        if (done && rc != 0)
            fail_msg("rebuild with no fault reached: expected 0, got %d (%s): %s", rc,
                     tide_strerror(rc), tide_last_error());
        OK(tide_io_sim_crash(run, g_seed + n));
        if (!done || !exists(run, DB "/nudb.key")) expect_rebuilt(run, why, sizeof why);
        else {
            tide_verify_report vr;
            rc = tide_store_verify_io(DB, tide_io_sim_io(run), &vr);
            if (rc != 0 || vr.keys != SYNCED) snprintf(why, sizeof why, "verify %d, %llu keys", rc,
                                                       (unsigned long long)vr.keys);
        }
        tide_io_sim_destroy(run);
        points++;
        if (why[0]) fail_msg("rebuild failing at call %llu, then a power loss (seed %llu): %s",
                             (unsigned long long)n, (unsigned long long)(g_seed + n), why);
        if (done) break;
    }
    print_message("    rebuild of a missing nudb.key: %llu failure points, each finished by the next "
                  "rekey\n", (unsigned long long)points);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TP(f) cmocka_unit_test_setup_teardown(f, setup_paranoid, teardown)
#define T_CHILD(f) cmocka_unit_test_teardown(f, th_teardown_children)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TP(a_read_sees_the_bytes_just_written_and_a_gap_reads_as_zeros),
        TP(reading_past_the_end_is_a_short_read),
        TP(create_with_excl_refuses_a_file_that_exists),
        TP(synced_data_survives_every_crash),
        TP(an_unsynced_write_survives_some_crashes_and_not_others),
        TP(a_torn_write_keeps_a_prefix_cut_at_a_512_byte_boundary),
        TP(a_create_needs_sync_dir_to_survive_a_crash),
        TP(an_unsynced_create_without_synced_data_comes_back_empty_or_not_at_all),
        TP(unlink_and_rename_stay_pending_until_sync_dir),
        TP(a_crash_kills_old_handles_and_their_locks),
        TP(every_documented_call_counts_once_and_close_does_not),
        TP(fail_at_eio_fails_the_nth_call_once_with_no_effect),
        TP(fail_at_enospc_fails_a_write_with_no_effect),
        TP(fail_at_short_write_applies_a_sector_aligned_prefix),
        TP(a_persistent_fault_fails_every_call_from_the_nth_on),
        TP(a_failed_sync_drops_the_pending_writes),
        TP(fail_at_an_eio_sync_keeps_the_writes_for_a_retry),
        TP(a_full_disk_refuses_growth_until_capacity_is_raised),
        TP(every_subset_of_three_pending_writes_is_a_distinct_crash_state),
        TP(a_crash_state_tears_the_chosen_write_at_the_chosen_boundary),
        TP(open_refuses_a_special_file_or_a_directory_at_once_with_TIDE_ENOTSTORE),
        cmocka_unit_test_setup_teardown(
            the_same_directory_script_gives_the_same_results_on_posix_and_the_sim,
            setup_paranoid, teardown_scratch),
        TP(a_mkdir_needs_sync_dir_of_its_parent_to_survive_a_crash),
        TP(a_crash_that_loses_a_mkdir_loses_the_synced_files_inside),
        TP(an_rmdir_needs_sync_dir_of_its_parent_to_survive_a_crash),
        TP(fail_at_fails_mkdir_rmdir_and_list_with_no_effect),
        TP(crash_state_ns_keeps_any_subset_of_the_pending_unlinks),
        TP(a_clone_is_independent_of_its_original),
        TP(locks_conflict_like_flock),
        TP(counters_count_what_succeeded),
        T_CHILD(a_broken_invariant_aborts_the_next_call_and_names_itself),
        T_CHILD(a_flipped_byte_is_seen_by_the_byte_check_only),
        T_CHILD(an_unchecked_sim_finds_a_broken_invariant_at_its_next_check_only),
        T(the_store_keeps_2000_items_through_a_reopen_on_the_sim),
        T(store_create_fails_cleanly_at_every_call),
        T(a_crash_at_any_call_of_a_commit_keeps_every_synced_item),
        T(a_crash_of_a_running_store_keeps_every_synced_item),
        T(every_crash_state_at_every_call_of_a_commit_recovers),
        T(the_store_makes_its_new_log_durable_before_a_commit_needs_it),
        T(the_store_refuses_a_fifo_as_any_of_its_three_files_and_writes_nothing),
        T(a_recovered_rebuild_leaves_no_key_file_at_every_crash_point),
        T(a_rebuild_of_a_missing_key_file_crashed_at_any_call_is_finished_by_the_next_rekey),
    };

    g_seed = th_seed(DEFAULT_SEED);
    tide_log_set_level(TIDE_LOG_WARN);
    print_message("test_io_sim: seed %llu (repeat with TIDE_TEST_SEED=%llu)\n",
                  (unsigned long long)g_seed, (unsigned long long)g_seed);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
