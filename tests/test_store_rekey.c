/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_rekey.c: tide_store_rekey_with rebuilds nudb.key with a new block
 * size, and an interruption anywhere leaves the old store or the new one.
 *
 * What is checked:
 *   - Every NuDB fixture (b4096-k32, b512-k32-spill, b16384-k8, and
 *     crash-b4096, which the rekey recovers first: 8000 items) rekeyed to
 *     4096, 8192, 16384 and 32768, each from a fresh copy, and along the
 *     chain 4096 -> 8192 -> 16384 -> 32768 -> 4096. After each: the report
 *     is right, verify passes, the block size is the new one, the bucket
 *     count is ceil(items / (capacity x load factor)), every item fetches
 *     with its exact value (the fixture formula of helpers.h), absent keys
 *     stay absent, and new inserts work and survive a reopen.
 *   - A buffer too small for the table takes many passes and gives the same
 *     store; a new load factor gives the bucket count it implies.
 *   - Bad input: a block size that is not a power of two from 4096 to
 *     32768 (5000, 0, 65536, ...) and a load factor outside (0, 1] are
 *     TIDE_EINVAL with the files byte-identical (a pending log included);
 *     a store another handle has open is TIDE_EBUSY with the files
 *     byte-identical.
 *   - The failure-point loop on the simulated file system: for n = 1, 2,
 *     ... the n-th call of the rekey fails (EIO from then on; a failed sync
 *     once; ENOSPC once; a short write once), until a rekey makes fewer
 *     than n calls. The state it leaves, and three power losses of it, must
 *     each open (recovering), verify, fetch every item, hold no
 *     nudb.key.new, and be byte for byte the old store or the new one; a
 *     rekey that returned 0 must have left the new one. Stores: NuDB's
 *     b512-k32-spill (spills in the old and the new table) and a Tide store
 *     of 4000 items; and crash-b4096, whose recovery the rekey runs first,
 *     with the first three faults and one power loss each (its loop is
 *     five times as long: most of its calls are the recovery's).
 *   - kill -9 at random moments of a many-pass rekey on the real file
 *     system, with the same check.
 *
 * "The old store" is: nudb.key exactly as before, nudb.dat exactly as before
 * or exactly as a completed rekey leaves it (the rekey syncs its spill
 * records before it disarms its log, so the old store may keep them as
 * unreachable waste). "The new store" is: nudb.key and nudb.dat exactly as
 * a completed rekey with the same options leaves them.
 *
 * Seeds: TIDE_TEST_SEED repeats a run (printed at the start). Run times and
 * the numbers of failure points and crash states are printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "nudb_rules.h"
#include "io/io_sim.h"
#include "store/format.h"
#include "store/full.h"
#include "util/log.h"

#define DB "db"                  /* the store's directory in a sim */
#define VALUE_MAX 600            /* the largest value of any fixture or store here */
#define ABSENT_PROBES 200        /* keys past the last item checked absent */
#define INSERTS_AFTER 100        /* items inserted after a rekey */

static uint64_t g_seed;

static const char *const fixture_names[] = {
    "b4096-k32", "b512-k32-spill", "b16384-k8", "crash-b4096",
};
#define NFIXTURES (sizeof fixture_names / sizeof fixture_names[0])

static const unsigned new_sizes[] = { 4096, 8192, 16384, 32768 };
#define NSIZES (sizeof new_sizes / sizeof new_sizes[0])

/* ---- what a store holds: items 0..n-1 of the formula ---- */

typedef struct items {
    unsigned key_size, vmin, vmax;
    uint64_t n;             /* items 0..n-1 present */
    uint64_t absent_from;   /* items absent_from..absent_from+ABSENT_PROBES-1 absent */
} items;

static items items_of_fixture(const th_fixture *fx)
{
    items it = { fx->key_size, fx->vmin, fx->vmax, fx->present, fx->present };
    return it;
}

/* ceil(n / (capacity x load factor)) with the load factor in 1/65536, as
 * the header stores it; at least one bucket. */
static uint64_t expected_buckets(uint64_t n, unsigned block_size, unsigned lf_raw)
{
    uint64_t units = (uint64_t)lf_raw * ((block_size - 8) / 18);
    uint64_t b = (n * 65536 + units - 1) / units;
    return b ? b : 1;
}

/* Buffer bytes one bucket takes in a rekey pass (rekey.c: a count, a spill
 * pointer and capacity 24-byte entries, rounded up to 16). Used to choose
 * buffers that give a known number of buckets a pass. */
static size_t slot_bytes(unsigned bs)
{
    return ((16 + (size_t)((bs - 8) / 18) * 24) + 15) & ~(size_t)15;
}

static unsigned lf_raw_of(double lf)
{
    double v = floor(65536.0 * lf);
    return v > 65535.0 ? 65535u : (unsigned)v;
}

/* ---- scratch: what a failing test leaves behind ----
 *
 * fail_msg() jumps out of a test, so whatever the test holds at that
 * moment is recorded here as it is made, and the teardown frees the sims
 * and buffers and removes the directories that are still recorded. */

#define SCRATCH_MAX 64

static tide_io_sim *g_sims[SCRATCH_MAX];
static void *g_bufs[SCRATCH_MAX];
static char g_dirs[16][4096];

static void scratch_add(void **slots, void *p)
{
    for (int i = 0; i < SCRATCH_MAX; i++)
        if (slots[i] == NULL) { slots[i] = p; return; }
    fail_msg("scratch: more than %d sims or buffers held at once", SCRATCH_MAX);
}

static void scratch_drop(void **slots, void *p)
{
    for (int i = 0; i < SCRATCH_MAX; i++)
        if (slots[i] == p) { slots[i] = NULL; return; }
}

static void sim_destroy(tide_io_sim *sim)
{
    scratch_drop((void **)g_sims, sim);
    tide_io_sim_destroy(sim);
}

static void buf_track(void *p) { if (p) scratch_add(g_bufs, p); }
static void buf_free(void *p) { if (p) { scratch_drop(g_bufs, p); free(p); } }

static void dir_track(const char *dir)
{
    for (size_t i = 0; i < sizeof g_dirs / sizeof g_dirs[0]; i++)
        if (g_dirs[i][0] == '\0') { snprintf(g_dirs[i], sizeof g_dirs[i], "%s", dir); return; }
    fail_msg("scratch: more than %zu directories held at once", sizeof g_dirs / sizeof g_dirs[0]);
}

static int scratch_mkdtemp(char *out, size_t cap)
{
    if (th_mkdtemp(out, cap) != 0) return -1;
    dir_track(out);
    return 0;
}

static int scratch_copy_fixture(const char *name, char *out, size_t cap)
{
    if (th_copy_fixture(name, out, cap) != 0) return -1;
    dir_track(out);
    return 0;
}

static void scratch_rmrf(const char *dir)
{
    for (size_t i = 0; i < sizeof g_dirs / sizeof g_dirs[0]; i++)
        if (strcmp(g_dirs[i], dir) == 0) g_dirs[i][0] = '\0';
    th_rmrf(dir);
}

static int snap_take(const char *dir, th_snapshot *sn)
{
    if (th_snapshot_take(dir, sn) != 0) return -1;
    for (int k = 0; k < 3; k++) buf_track(sn->buf[k]);
    return 0;
}

static void snap_free(th_snapshot *sn)
{
    for (int k = 0; k < 3; k++) { buf_free(sn->buf[k]); sn->buf[k] = NULL; }
}

static int scratch_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < SCRATCH_MAX; i++) {
        if (g_sims[i]) tide_io_sim_destroy(g_sims[i]);
        free(g_bufs[i]);
        g_sims[i] = NULL;
        g_bufs[i] = NULL;
    }
    for (size_t i = 0; i < sizeof g_dirs / sizeof g_dirs[0]; i++) {
        if (g_dirs[i][0]) th_rmrf(g_dirs[i]);
        g_dirs[i][0] = '\0';
    }
    return 0;
}

static void must(int rc, const char *what)
{
    if (rc != 0)
        fail_msg("%s: expected 0, got %d (%s): %s", what, rc, tide_strerror(rc), tide_last_error());
}

/* Every item fetches exactly; the probes past the end are absent. */
static void check_items(const char *dir, tide_io *io, const items *it, const char *what)
{
    tide_store_opts so;
    tide_store *s = NULL;
    uint8_t key[64], want[VALUE_MAX];
    char ctx[600];

    th_store_opts(&so);
    so.io = io;
    so.read_only = 1;
    snprintf(ctx, sizeof ctx, "%s: read-only open to fetch", what);
    must(tide_store_open(&s, dir, &so), ctx);
    for (uint64_t i = 0; i < it->n; i++) {
        void *got = NULL;
        size_t got_len = 0, len = th_len(i, it->vmin, it->vmax);
        int rc;

        th_key(i, it->key_size, key);
        th_value(i, len, want);
        rc = tide_store_fetch(s, key, &got, &got_len);
        if (rc != 0) {
            tide_store_close(s);
            fail_msg("%s: fetch of item %llu: expected its %zu-byte value, got %d (%s): %s", what,
                     (unsigned long long)i, len, rc, tide_strerror(rc), tide_last_error());
        }
        if (got_len != len || memcmp(got, want, len) != 0) {
            free(got);
            tide_store_close(s);
            fail_msg("%s: fetch of item %llu: expected %zu bytes of the formula, got %zu bytes%s",
                     what, (unsigned long long)i, len, got_len,
                     got_len == len ? " that differ" : "");
        }
        free(got);
    }
    for (uint64_t i = it->absent_from; i < it->absent_from + ABSENT_PROBES; i++) {
        void *got = NULL;
        size_t got_len = 0;
        int rc;

        th_key(i, it->key_size, key);
        rc = tide_store_fetch(s, key, &got, &got_len);
        free(got);
        if (rc != TIDE_ENOTFOUND) {
            tide_store_close(s);
            fail_msg("%s: fetch of item %llu, never stored: expected TIDE_ENOTFOUND, got %d (%s)",
                     what, (unsigned long long)i, rc, tide_strerror(rc));
        }
    }
    snprintf(ctx, sizeof ctx, "%s: close after the fetches", what);
    must(tide_store_close(s), ctx);
}

/*
 * verify passes with `n` keys, block size `bs` and `buckets` buckets; or,
 * when `foreign` > 0, finds exactly `foreign` spill records of another
 * block size and nothing else wrong. A rekey to another block size cannot
 * remove the spill records of the old one; NuDB's verify rejects a store
 * that holds any (the spec: spill records are full buckets), and so must
 * Tide's.
 */
static void check_verify(const char *dir, tide_io *io, uint64_t n, unsigned bs, uint64_t buckets,
                         uint64_t foreign, tide_verify_report *r, const char *what)
{
    int rc;

    memset(r, 0, sizeof *r);
    rc = tide_store_verify_io(dir, io, r);
    if (foreign == 0 && rc != 0)
        fail_msg("%s: verify: expected 0 (sound), got %d (%s): %s", what, rc, tide_strerror(rc),
                 tide_last_error());
    if (foreign > 0 && (rc != TIDE_ECORRUPT || !r->foreign_spills_only ||
                        r->spill_records_foreign != foreign ||
                        strstr(tide_last_error(), "invalid size in spill") == NULL))
        fail_msg("%s: verify: expected TIDE_ECORRUPT for exactly %llu spill records of another "
                 "block size ('invalid size in spill') and nothing else, got %d (%s), %llu such "
                 "records, only those %d: %s", what, (unsigned long long)foreign, rc,
                 tide_strerror(rc), (unsigned long long)r->spill_records_foreign,
                 r->foreign_spills_only, tide_last_error());
    if (r->keys != n || r->data_records != n)
        fail_msg("%s: verify: expected %llu keys and data records, got %llu keys, %llu records",
                 what, (unsigned long long)n, (unsigned long long)r->keys,
                 (unsigned long long)r->data_records);
    if (r->block_size != bs || r->buckets != buckets)
        fail_msg("%s: verify: expected %llu buckets of %u bytes, got %llu of %u", what,
                 (unsigned long long)buckets, bs, (unsigned long long)r->buckets, r->block_size);
}

/* Insert items it->n .. it->n + INSERTS_AFTER - 1, sync, close, reopen and
 * fetch everything; verify counts them all. Advances it->n. */
static void check_inserts_after(const char *dir, items *it, unsigned bs, uint64_t buckets_at_least,
                                const char *what)
{
    tide_store *s = NULL;
    tide_verify_report r;
    uint8_t key[64], val[VALUE_MAX];
    char ctx[600];
    int rc;

    snprintf(ctx, sizeof ctx, "%s: read-write open for new inserts", what);
    must(th_store_open(&s, dir), ctx);
    for (uint64_t i = it->n; i < it->n + INSERTS_AFTER; i++) {
        size_t len = th_len(i, it->vmin, it->vmax);
        th_key(i, it->key_size, key);
        th_value(i, len, val);
        rc = tide_store_insert(s, key, val, len);
        if (rc != 0) {
            tide_store_close(s);
            fail_msg("%s: insert of item %llu after the rekey: expected 0, got %d (%s): %s", what,
                     (unsigned long long)i, rc, tide_strerror(rc), tide_last_error());
        }
    }
    snprintf(ctx, sizeof ctx, "%s: sync of the new inserts", what);
    rc = tide_store_sync(s);
    if (rc) tide_store_close(s);
    must(rc, ctx);
    snprintf(ctx, sizeof ctx, "%s: close after the new inserts", what);
    must(tide_store_close(s), ctx);
    it->n += INSERTS_AFTER;
    it->absent_from = it->n;
    memset(&r, 0, sizeof r);
    rc = tide_store_verify_io(dir, NULL, &r);
    /* Spill records of an older block size stay, and only those may fail
     * verify (check_verify counted them right after the rekey). */
    if (rc == TIDE_ECORRUPT && r.foreign_spills_only) rc = 0;
    if (rc != 0 || r.keys != it->n || r.block_size != bs || r.buckets < buckets_at_least)
        fail_msg("%s: verify after %d new inserts: expected sound, %llu keys, block %u, at least "
                 "%llu buckets; got %d (%s), %llu keys, block %u, %llu buckets: %s", what,
                 INSERTS_AFTER, (unsigned long long)it->n, bs, (unsigned long long)buckets_at_least,
                 rc, tide_strerror(rc), (unsigned long long)r.keys, r.block_size,
                 (unsigned long long)r.buckets, rc ? tide_last_error() : "");
    snprintf(ctx, sizeof ctx, "%s, reopened after %d new inserts", what, INSERTS_AFTER);
    check_items(dir, NULL, it, ctx);
}

/* Rekey `dir` (POSIX) and check the report against the store as it was
 * (`before`, from tide_store_inspect after any recovery) and the files. */
static void rekey_and_check_report(const char *dir, const tide_store_info *before, uint64_t n,
                                   unsigned bs, double lf, size_t buffer, tide_rekey_report *rep,
                                   const char *what)
{
    tide_rekey_opts o;
    tide_store_info after;
    unsigned lf_raw = lf > 0 ? lf_raw_of(lf) : before->load_factor_raw;
    uint64_t want_buckets = expected_buckets(n, bs, lf_raw);
    char path[4200], ctx[600];
    int rc;

    tide_rekey_opts_init(&o);
    o.block_size = bs;
    o.load_factor = lf;
    if (buffer) o.buffer_bytes = buffer;
    memset(rep, 0, sizeof *rep);
    rc = tide_store_rekey_with(dir, &o, rep);
    snprintf(ctx, sizeof ctx, "%s: tide_store_rekey_with", what);
    must(rc, ctx);
    if (rep->records != n || rep->old_block_size != before->block_size ||
        rep->new_block_size != bs || rep->old_buckets != before->buckets ||
        rep->new_buckets != want_buckets)
        fail_msg("%s: report: expected %llu records, block %u -> %u, buckets %llu -> %llu; got "
                 "%llu records, block %u -> %u, buckets %llu -> %llu", what, (unsigned long long)n,
                 before->block_size, bs, (unsigned long long)before->buckets,
                 (unsigned long long)want_buckets, (unsigned long long)rep->records,
                 rep->old_block_size, rep->new_block_size, (unsigned long long)rep->old_buckets,
                 (unsigned long long)rep->new_buckets);
    if (rep->passes < 1)
        fail_msg("%s: report: expected at least 1 pass, got %u", what, rep->passes);
    if (rep->old_key_file_bytes != before->key_file_bytes ||
        rep->dat_file_bytes_before != before->dat_file_bytes)
        fail_msg("%s: report: expected nudb.key %llu and nudb.dat %llu bytes before, got %llu "
                 "and %llu", what, (unsigned long long)before->key_file_bytes,
                 (unsigned long long)before->dat_file_bytes,
                 (unsigned long long)rep->old_key_file_bytes,
                 (unsigned long long)rep->dat_file_bytes_before);
    memset(&after, 0, sizeof after);
    snprintf(ctx, sizeof ctx, "%s: inspect after the rekey", what);
    must(tide_store_inspect(dir, NULL, &after), ctx);
    if (after.block_size != bs || after.buckets != want_buckets ||
        after.load_factor_raw != lf_raw || after.key_file_bytes != (want_buckets + 1) * bs ||
        rep->new_key_file_bytes != after.key_file_bytes ||
        rep->dat_file_bytes_after != after.dat_file_bytes || after.needs_recovery ||
        (after.uid != before->uid) != (rep->dat_rewritten != 0) || after.salt != before->salt ||
        after.appnum != before->appnum ||
        after.key_size != before->key_size)
        fail_msg("%s: headers after: expected block %u, %llu buckets, load factor %u/65536, "
                 "nudb.key %llu bytes (report %llu), nudb.dat as reported (%llu), no recovery, "
                 "salt/appnum/key size kept, the uid new exactly when nudb.dat was rewritten (%s); got block %u, %llu buckets, %u/65536, nudb.key "
                 "%llu, nudb.dat %llu, recovery %d, uid %s, salt %s, appnum %s, key size %u",
                 what, bs, (unsigned long long)want_buckets, lf_raw,
                 (unsigned long long)((want_buckets + 1) * bs),
                 rep->dat_rewritten ? "rewritten" : "kept",
                 (unsigned long long)rep->new_key_file_bytes,
                 (unsigned long long)rep->dat_file_bytes_after, after.block_size,
                 (unsigned long long)after.buckets, after.load_factor_raw,
                 (unsigned long long)after.key_file_bytes, (unsigned long long)after.dat_file_bytes,
                 after.needs_recovery, after.uid == before->uid ? "kept" : "CHANGED",
                 after.salt == before->salt ? "kept" : "CHANGED",
                 after.appnum == before->appnum ? "kept" : "CHANGED", after.key_size);
    if (!rep->dat_rewritten && rep->spill_records == 0 &&
        rep->dat_file_bytes_after != rep->dat_file_bytes_before)
        fail_msg("%s: no spill records were written, so nudb.dat should keep its %llu bytes; it "
                 "has %llu", what, (unsigned long long)rep->dat_file_bytes_before,
                 (unsigned long long)rep->dat_file_bytes_after);
    if (!rep->dat_rewritten && rep->spill_records > 0 &&
        rep->dat_file_bytes_after <= rep->dat_file_bytes_before)
        fail_msg("%s: %llu spill records were written, so nudb.dat should grow past %llu bytes; "
                 "it has %llu", what, (unsigned long long)rep->spill_records,
                 (unsigned long long)rep->dat_file_bytes_before,
                 (unsigned long long)rep->dat_file_bytes_after);
    if (th_exists(th_path(path, sizeof path, dir, "nudb.key.new")) ||
        th_exists(th_path(path, sizeof path, dir, "nudb.log")))
        fail_msg("%s: after a completed rekey expected neither nudb.key.new nor nudb.log, got %s%s",
                 what,
                 th_exists(th_path(path, sizeof path, dir, "nudb.key.new")) ? "nudb.key.new " : "",
                 th_exists(th_path(path, sizeof path, dir, "nudb.log")) ? "nudb.log" : "");
}

/* Spill records in nudb.dat, by a walk. */
static uint64_t spills_written(const char *dir)
{
    tide_visit_stats st;

    memset(&st, 0, sizeof st);
    must(tide_store_visit_io(dir, NULL, NULL, NULL, &st), "visit to count spill records");
    return st.spill_records;
}

/* Copy nudb.dat, nudb.key and (when there) nudb.log of `from` into `to`. */
static void copy_store(const char *from, const char *to, const char *what)
{
    static const char *const files[] = { "nudb.dat", "nudb.key", "nudb.log" };
    char a[4200], b[4200];

    for (size_t k = 0; k < 3; k++) {
        th_path(a, sizeof a, from, files[k]);
        th_path(b, sizeof b, to, files[k]);
        if (!th_exists(a)) continue;
        if (th_copy_file(a, b) != 0) fail_msg("%s: cannot copy %s to %s", what, a, b);
    }
}

/* Rekey the store in `dir` (`n` items of `it`) to `bs` and check all of it;
 * the report goes to *rep. Leaves the store rekeyed. */
static void rekey_and_check(const char *dir, const items *it, unsigned bs, double lf, size_t buffer,
                            tide_rekey_report *rep, const char *what)
{
    tide_store_info before;
    tide_verify_report r;
    uint64_t spills0 = 0;
    char ctx[600];

    /* A pending log is recovered by the rekey's own open: the sizes it
     * reports as "before" are those after that recovery. */
    memset(&before, 0, sizeof before);
    snprintf(ctx, sizeof ctx, "%s: inspect before", what);
    must(tide_store_inspect(dir, NULL, &before), ctx);
    if (before.needs_recovery) {
        tide_store *s = NULL;
        char probe[4200];
        /* Learn the recovered sizes on a copy, so the store itself goes
         * into the rekey with its log. */
        if (scratch_mkdtemp(probe, sizeof probe) != 0) fail_msg("%s: mkdtemp failed", what);
        copy_store(dir, probe, what);
        must(th_store_open(&s, probe), "open of a copy to recover it");
        must(tide_store_close(s), "close of the recovered copy");
        must(tide_store_inspect(probe, NULL, &before), "inspect of the recovered copy");
        spills0 = spills_written(probe);
        scratch_rmrf(probe);
    } else {
        spills0 = spills_written(dir);
    }
    rekey_and_check_report(dir, &before, it->n, bs, lf, buffer, rep, what);
    /* A rewritten nudb.dat keeps no spill record of the old table. */
    if (rep->dat_rewritten) {
        if (rep->spill_records_dropped != spills0)
            fail_msg("%s: the rewrite dropped %llu spill records, expected the %llu there were", what,
                     (unsigned long long)rep->spill_records_dropped, (unsigned long long)spills0);
        spills0 = 0;
    }
    check_verify(dir, NULL, it->n, bs, rep->new_buckets, rep->foreign_spill_records, &r, what);
    if (r.spill_records_reachable != rep->spill_records ||
        r.spill_records_written != spills0 + rep->spill_records)
        fail_msg("%s: verify: expected the %llu spill records the rekey wrote to be reachable and "
                 "%llu written in all (%llu before); got %llu reachable, %llu written", what,
                 (unsigned long long)rep->spill_records,
                 (unsigned long long)(spills0 + rep->spill_records), (unsigned long long)spills0,
                 (unsigned long long)r.spill_records_reachable,
                 (unsigned long long)r.spill_records_written);
    check_items(dir, NULL, it, what);
}

/* ---- fixtures to each block size, and along the chain ---- */

static void rekey_turns_each_fixture_into_each_block_size_with_every_item_intact(void **state)
{
    double t0 = th_now_ms();
    unsigned cases = 0;

    (void)state;
    for (size_t f = 0; f < NFIXTURES; f++) {
        const th_fixture *fx = th_fixture_find(fixture_names[f]);
        for (size_t b = 0; b < NSIZES; b++) {
            char dir[4096], what[256];
            tide_rekey_report rep;
            items it = items_of_fixture(fx);

            if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0)
                fail_msg("copy of fixture %s failed", fx->name);
            snprintf(what, sizeof what, "%s rekeyed to %u", fx->name, new_sizes[b]);
            rekey_and_check(dir, &it, new_sizes[b], 0, 0, &rep, what);
            if (rep.passes != 1)
                fail_msg("%s: with the 64 MiB default buffer expected 1 pass, got %u", what,
                         rep.passes);
            if (fx->has_log && rep.old_buckets != fx->buckets)
                fail_msg("%s: expected the rekey to recover first (%llu buckets), got %llu "
                         "buckets before", what, (unsigned long long)fx->buckets,
                         (unsigned long long)rep.old_buckets);
            check_inserts_after(dir, &it, new_sizes[b], rep.new_buckets, what);
            scratch_rmrf(dir);
            cases++;
        }
    }
    print_message("%u fixture x block size cases in %.0f ms\n", cases, th_now_ms() - t0);
}

static void a_chain_of_rekeys_4096_8192_16384_32768_4096_keeps_every_item(void **state)
{
    static const unsigned chain[] = { 4096, 8192, 16384, 32768, 4096 };
    double t0 = th_now_ms();

    (void)state;
    for (size_t f = 0; f < NFIXTURES; f++) {
        const th_fixture *fx = th_fixture_find(fixture_names[f]);
        items it = items_of_fixture(fx);
        char dir[4096], what[256];
        tide_rekey_report rep;
        int len = 0;

        if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0)
            fail_msg("copy of fixture %s failed", fx->name);
        len = snprintf(what, sizeof what, "%s chained: %u", fx->name, fx->block_size);
        for (size_t k = 0; k < sizeof chain / sizeof chain[0]; k++) {
            len += snprintf(what + len, sizeof what - (size_t)len, " -> %u", chain[k]);
            rekey_and_check(dir, &it, chain[k], 0, 0, &rep, what);
        }
        check_inserts_after(dir, &it, 4096, rep.new_buckets, what);
        scratch_rmrf(dir);
    }
    print_message("%zu chains of 5 rekeys in %.0f ms\n", NFIXTURES, th_now_ms() - t0);
}

/* ---- passes and load factor ---- */

static void a_small_buffer_takes_many_passes_and_gives_the_same_store(void **state)
{
    double t0 = th_now_ms();
    unsigned cases = 0;

    (void)state;
    for (size_t f = 0; f < NFIXTURES; f++) {
        const th_fixture *fx = th_fixture_find(fixture_names[f]);
        for (size_t b = 0; b < 2; b++) {
            unsigned bs = new_sizes[b];
            /* Two buckets' worth of entries a pass, and one byte (one
             * bucket a pass). */
            size_t slot = slot_bytes(bs);
            size_t buffers[] = { 2 * slot, 1 };
            char one[4096], what[256];
            tide_rekey_report ref;
            items it = items_of_fixture(fx);
            th_snapshot sn_ref;

            if (scratch_copy_fixture(fx->name, one, sizeof one) != 0)
                fail_msg("copy of fixture %s failed", fx->name);
            snprintf(what, sizeof what, "%s rekeyed to %u in one pass", fx->name, bs);
            rekey_and_check(one, &it, bs, 0, 0, &ref, what);
            if (ref.passes != 1) fail_msg("%s: expected 1 pass, got %u", what, ref.passes);
            if (snap_take(one, &sn_ref) != 0) fail_msg("%s: snapshot failed", what);
            for (size_t k = 0; k < 2; k++) {
                char many[4096], diff[512];
                tide_rekey_report rep;
                uint64_t per = buffers[k] / slot ? buffers[k] / slot : 1;
                uint64_t want_passes = (ref.new_buckets + per - 1) / per;

                if (scratch_copy_fixture(fx->name, many, sizeof many) != 0)
                    fail_msg("copy of fixture %s failed", fx->name);
                snprintf(what, sizeof what, "%s rekeyed to %u with a %zu-byte buffer", fx->name,
                         bs, buffers[k]);
                rekey_and_check(many, &it, bs, 0, buffers[k], &rep, what);
                if (rep.passes <= 1 || rep.passes != want_passes)
                    fail_msg("%s: expected %llu passes (%llu buckets, %llu a pass), got %u", what,
                             (unsigned long long)want_passes, (unsigned long long)ref.new_buckets,
                             (unsigned long long)per, rep.passes);
                if (rep.records != ref.records || rep.new_buckets != ref.new_buckets ||
                    rep.spill_records != ref.spill_records ||
                    rep.new_key_file_bytes != ref.new_key_file_bytes ||
                    rep.dat_file_bytes_after != ref.dat_file_bytes_after)
                    fail_msg("%s: expected the one-pass figures (%llu records, %llu buckets, %llu "
                             "spills, nudb.key %llu, nudb.dat %llu), got %llu, %llu, %llu, %llu, "
                             "%llu", what, (unsigned long long)ref.records,
                             (unsigned long long)ref.new_buckets,
                             (unsigned long long)ref.spill_records,
                             (unsigned long long)ref.new_key_file_bytes,
                             (unsigned long long)ref.dat_file_bytes_after,
                             (unsigned long long)rep.records, (unsigned long long)rep.new_buckets,
                             (unsigned long long)rep.spill_records,
                             (unsigned long long)rep.new_key_file_bytes,
                             (unsigned long long)rep.dat_file_bytes_after);
                /* Without spills the files are the same bytes; with them the
                 * spill records land in pass order, so only their offsets
                 * (and the pointers to them) may differ. */
                if (ref.spill_records == 0 &&
                    th_snapshot_diff(many, &sn_ref, diff, sizeof diff) != 0)
                    fail_msg("%s: expected files byte-identical to the one-pass rekey, got: %s",
                             what, diff);
                scratch_rmrf(many);
                cases++;
            }
            snap_free(&sn_ref);
            scratch_rmrf(one);
        }
    }
    print_message("%u many-pass rekeys matched their one-pass twins in %.0f ms\n", cases,
                  th_now_ms() - t0);
}

static void a_new_load_factor_gives_the_bucket_count_it_implies_and_verifies(void **state)
{
    static const double lfs[] = { 0.9, 1.0, 0.25 };

    (void)state;
    for (size_t f = 0; f < NFIXTURES; f++) {
        const th_fixture *fx = th_fixture_find(fixture_names[f]);
        for (size_t k = 0; k < sizeof lfs / sizeof lfs[0]; k++) {
            char dir[4096], what[256];
            tide_rekey_report rep;
            items it = items_of_fixture(fx);
            uint64_t at_half = expected_buckets(it.n, 4096, 0x8000);

            if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0)
                fail_msg("copy of fixture %s failed", fx->name);
            snprintf(what, sizeof what, "%s rekeyed to 4096 at load factor %.2f", fx->name, lfs[k]);
            rekey_and_check(dir, &it, 4096, lfs[k], 0, &rep, what);
            if ((lfs[k] > 0.5 && rep.new_buckets >= at_half) ||
                (lfs[k] < 0.5 && rep.new_buckets <= at_half))
                fail_msg("%s: expected %s than the %llu buckets of load factor 0.5, got %llu", what,
                         lfs[k] > 0.5 ? "fewer" : "more", (unsigned long long)at_half,
                         (unsigned long long)rep.new_buckets);
            check_inserts_after(dir, &it, 4096, rep.new_buckets, what);
            scratch_rmrf(dir);
        }
    }
}

static void rekey_of_an_empty_store_makes_one_empty_bucket(void **state)
{
    tide_store_create_opts co;
    tide_rekey_report rep;
    char dir[4096];
    items it = { 32, 1, 100, 0, 0 };

    (void)state;
    if (scratch_mkdtemp(dir, sizeof dir) != 0) fail_msg("mkdtemp failed");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    must(tide_store_create(dir, &co), "create of an empty store");
    rekey_and_check(dir, &it, 32768, 0, 0, &rep, "empty store rekeyed to 32768");
    if (rep.new_buckets != 1 || rep.records != 0 || rep.spill_records != 0)
        fail_msg("empty store: expected 1 bucket, 0 records, 0 spills; got %llu, %llu, %llu",
                 (unsigned long long)rep.new_buckets, (unsigned long long)rep.records,
                 (unsigned long long)rep.spill_records);
    check_inserts_after(dir, &it, 32768, 1, "empty store rekeyed to 32768");
    scratch_rmrf(dir);
}

/* ---- a key file missing, or left by an interrupted rebuild ---- */

/* Rekey `dir` (a copy of fixture fx whose nudb.key is gone or unusable) to
 * `bs` (0: the default) and check that it rebuilt the key file with every
 * item, and that verify agrees. */
static void rebuild_and_check(const char *dir, const th_fixture *fx, unsigned bs, const char *what)
{
    tide_rekey_opts o;
    tide_rekey_report rep;
    tide_verify_report r;
    items it = items_of_fixture(fx);
    int rc;

    tide_rekey_opts_init(&o);
    if (bs) o.block_size = bs;
    rc = tide_store_rekey_with(dir, &o, &rep);
    if (rc != 0)
        fail_msg("%s: rekey: expected 0 (the key file built from nudb.dat), got %d (%s): %s", what,
                 rc, tide_strerror(rc), tide_last_error());
    if (!rep.key_rebuilt || rep.key_problem[0] == '\0' || rep.records != it.n)
        fail_msg("%s: expected a rebuild of %llu records with its reason, got key_rebuilt %d, %llu "
                 "records, '%s'", what, (unsigned long long)it.n, rep.key_rebuilt,
                 (unsigned long long)rep.records, rep.key_problem);
    check_verify(dir, NULL, it.n, o.block_size, rep.new_buckets, rep.foreign_spill_records, &r,
                 what);
    check_items(dir, NULL, &it, what);
}

static void write_rebuild_log(const char *dir, uint64_t dat_size)
{
    tide_store_info in;
    uint8_t buf[TIDE_LOG_HEADER_SIZE];
    char p[4200];

    /* The facts the log carries come from the fixture's key header, read
     * before it is cut. */
    must(tide_store_inspect(dir, NULL, &in), "inspect before the rebuild log");
    th_encode_rebuild_log(buf, &in, 8192, dat_size);   /* the block size NuDB's rekey was building */
    if (th_write_file(th_path(p, sizeof p, dir, "nudb.log"), buf, sizeof buf) != 0)
        fail_msg("cannot write %s", p);
}

/* nudb.key of `dir` becomes its first `len` bytes, zero-extended. */
static void cut_key(const char *dir, size_t len)
{
    char p[4200];
    uint8_t *buf = NULL, *img;
    size_t have = 0;

    if (th_read_file(th_path(p, sizeof p, dir, "nudb.key"), &buf, &have) != 0)
        fail_msg("cannot read %s", p);
    img = calloc(1, len ? len : 1);
    assert_non_null(img);
    memcpy(img, buf, have < len ? have : len);
    if (th_write_file(p, img, len) != 0) fail_msg("cannot write %s", p);
    free(buf);
    free(img);
}

static void rekey_builds_a_missing_key_file_from_the_data_file(void **state)
{
    (void)state;
    for (size_t f = 0; f < 3; f++) {
        const th_fixture *fx = th_fixture_find(fixture_names[f]);
        for (unsigned bs = 0; bs <= 8192; bs += 8192) {
            char dir[4096], p[4200], what[160];
            if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0) fail_msg("copy %s", fx->name);
            if (unlink(th_path(p, sizeof p, dir, "nudb.key")) != 0) fail_msg("unlink %s", p);
            snprintf(what, sizeof what, "%s without nudb.key, rekeyed to %s", fx->name,
                     bs ? "8192" : "the default 4096");
            rebuild_and_check(dir, fx, bs, what);
            scratch_rmrf(dir);
        }
    }
}

/*
 * NuDB's rekey writes its log (key_file_size 0) and the new key file's
 * header, then the buckets. Killed after the header, it leaves a key file
 * of one header block; if its log is gone too (or was never written), the
 * key file alone. Before: tide recover either deleted nudb.key and pointed
 * to a rekey that then failed ("nudb.key is missing"), or said "nothing to
 * recover" while every open called the file corrupt.
 */
static void a_key_file_left_by_a_killed_rebuild_is_removed_by_recover_and_built_by_rekey(
    void **state)
{
    const th_fixture *fx = th_fixture_find("b4096-k32");
    static const size_t cuts[] = { 4096, 4096 + 100, 50, 0 };

    (void)state;
    for (int with_log = 1; with_log >= 0; with_log--)
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            char dir[4096], p[4200], what[200];
            tide_recover_report rep;
            int rc;

            if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0) fail_msg("copy");
            if (with_log) write_rebuild_log(dir, fx->dat_file_bytes);
            cut_key(dir, cuts[c]);
            snprintf(what, sizeof what, "a %zu-byte nudb.key %s", cuts[c],
                     with_log ? "and NuDB's rebuild log" : "and no log");
            rc = tide_store_recover_io(dir, NULL, &rep);
            if (rc != 0) fail_msg("%s: recover: expected 0, got %d (%s): %s", what, rc,
                                  tide_strerror(rc), tide_last_error());
            if (with_log ? !rep.rebuild_interrupted : !(rep.key_removed && rep.key_removed_bytes == cuts[c]))
                fail_msg("%s: recover: expected it to %s, got rebuild_interrupted %d, key_removed %d "
                         "(%llu bytes)", what, with_log ? "see the interrupted rebuild" :
                         "remove the bucketless key file", rep.rebuild_interrupted, rep.key_removed,
                         (unsigned long long)rep.key_removed_bytes);
            if (th_exists(th_path(p, sizeof p, dir, "nudb.key")))
                fail_msg("%s: recover left nudb.key", what);
            rebuild_and_check(dir, fx, 8192, what);
            scratch_rmrf(dir);

            /* The same state, rekeyed at once without a recover first. */
            if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0) fail_msg("copy");
            if (with_log) write_rebuild_log(dir, fx->dat_file_bytes);
            cut_key(dir, cuts[c]);
            snprintf(what, sizeof what, "a %zu-byte nudb.key %s, rekeyed at once", cuts[c],
                     with_log ? "and NuDB's rebuild log" : "and no log");
            rebuild_and_check(dir, fx, 4096, what);
            scratch_rmrf(dir);
        }
}

static void rekey_rebuilds_a_key_file_that_open_refuses(void **state)
{
    static const struct { const char *fixture; long long delta; } cases[] = {
        { "b4096-k32", 4096 * 3 },         /* grown by whole zero blocks */
        { "b4096-k32", 100 },              /* grown by part of a block */
        { "b4096-k32", -4096 * 5 },        /* cut by half its buckets */
        { "b512-k32-spill", -300 },        /* a header and buckets, short */
    };

    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const th_fixture *fx = th_fixture_find(cases[c].fixture);
        char dir[4096], what[160];
        tide_recover_report rep;

        if (scratch_copy_fixture(fx->name, dir, sizeof dir) != 0) fail_msg("copy");
        cut_key(dir, (size_t)((long long)fx->key_file_bytes + cases[c].delta));
        snprintf(what, sizeof what, "%s with nudb.key %+lld bytes", fx->name, cases[c].delta);
        must(tide_store_recover_io(dir, NULL, &rep), what);
        if (rep.key_removed) fail_msg("%s: recover removed a key file that holds buckets", what);
        rebuild_and_check(dir, fx, 4096, what);
        scratch_rmrf(dir);
    }
}

/* ---- bad input ---- */

static void an_invalid_block_size_is_TIDE_EINVAL_and_changes_nothing(void **state)
{
    /* Before, these fell back to 4096 with a warning and rewrote the key
     * file: a typo (5000 for 8192) rekeyed the store. Create and the node's
     * nudb_block_size keep that fall-back; rekey refuses. crash-b4096 has a
     * pending log: not even the recovery may run. */
    static const unsigned bad[] = { 5000, 0, 2048, 65536, 12288, 4095, 4097 };

    (void)state;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        static const char *const names[] = { "b16384-k8", "crash-b4096" };
        for (size_t f = 0; f < 2; f++) {
            char dir[4096], what[128], diff[512], path[4200];
            tide_rekey_opts o;
            tide_rekey_report rep;
            th_snapshot sn;
            int rc;

            if (scratch_copy_fixture(names[f], dir, sizeof dir) != 0)
                fail_msg("copy of fixture %s failed", names[f]);
            if (snap_take(dir, &sn) != 0) fail_msg("snapshot failed");
            snprintf(what, sizeof what, "%s rekeyed with block size %u", names[f], bad[k]);
            tide_rekey_opts_init(&o);
            o.block_size = bad[k];
            tide_log_set_sink(th_log_discard_sink, NULL);   /* its warnings kept off stderr */
            rc = tide_store_rekey_with(dir, &o, &rep);
            tide_log_set_sink(NULL, NULL);
            if (rc != TIDE_EINVAL || strstr(tide_last_error(), "4096, 8192, 16384 or 32768") == NULL)
                fail_msg("%s: expected TIDE_EINVAL naming the valid sizes, got %d (%s): '%s'", what,
                         rc, tide_strerror(rc), tide_last_error());
            if (th_snapshot_diff(dir, &sn, diff, sizeof diff) != 0)
                fail_msg("%s: expected the files byte-identical, got: %s", what, diff);
            if (th_exists(th_path(path, sizeof path, dir, "nudb.key.new")))
                fail_msg("%s: expected no nudb.key.new, got one", what);
            snap_free(&sn);
            scratch_rmrf(dir);
        }
    }
}

static void rekey_with_bad_load_factors_fails_and_changes_nothing(const double *bad, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        char dir[4096], what[128], diff[512], path[4200];
        tide_rekey_opts o;
        th_snapshot sn;
        int rc;

        if (scratch_copy_fixture("crash-b4096", dir, sizeof dir) != 0)
            fail_msg("copy of fixture crash-b4096 failed");
        if (snap_take(dir, &sn) != 0) fail_msg("snapshot failed");
        snprintf(what, sizeof what, "rekey of crash-b4096 (log pending) with load factor %g",
                 bad[k]);
        tide_rekey_opts_init(&o);
        o.block_size = 8192;
        o.load_factor = bad[k];
        rc = tide_store_rekey_with(dir, &o, NULL);
        if (rc != TIDE_EINVAL || tide_last_error()[0] == '\0')
            fail_msg("%s: expected TIDE_EINVAL with a message, got %d (%s): '%s'", what, rc,
                     tide_strerror(rc), tide_last_error());
        if (th_snapshot_diff(dir, &sn, diff, sizeof diff) != 0)
            fail_msg("%s: expected the files byte-identical (not even recovered), got: %s", what,
                     diff);
        if (th_exists(th_path(path, sizeof path, dir, "nudb.key.new")))
            fail_msg("%s: expected no nudb.key.new, got one", what);
        snap_free(&sn);
        scratch_rmrf(dir);
    }
}

static void a_load_factor_outside_0_to_1_is_TIDE_EINVAL_and_changes_nothing(void **state)
{
    const double bad[] = { 1.5, -0.5, 1.0000001, INFINITY, -INFINITY };

    (void)state;
    rekey_with_bad_load_factors_fails_and_changes_nothing(bad, sizeof bad / sizeof bad[0]);
}

/*
 * Regression: the range check was once `load_factor < 0 || load_factor > 1`,
 * which NaN passes (so the rekey silently kept the store's load factor),
 * where store.h promises TIDE_EINVAL for anything but 0 (keep) or (0, 1].
 */
static void a_load_factor_of_nan_is_TIDE_EINVAL_and_changes_nothing(void **state)
{
    const double bad[] = { NAN };

    (void)state;
    rekey_with_bad_load_factors_fails_and_changes_nothing(bad, 1);
}

static void rekey_of_a_store_open_elsewhere_is_TIDE_EBUSY_and_changes_nothing(void **state)
{
    (void)state;
    for (int ro = 0; ro < 2; ro++) {
        char dir[4096], what[128], diff[512], path[4200];
        tide_store_opts so;
        tide_rekey_opts o;
        tide_store *s = NULL;
        th_snapshot sn;
        items it = items_of_fixture(th_fixture_find("b4096-k32"));
        int rc;

        if (scratch_copy_fixture("b4096-k32", dir, sizeof dir) != 0)
            fail_msg("copy of fixture b4096-k32 failed");
        th_store_opts(&so);
        so.read_only = ro;
        must(tide_store_open(&s, dir, &so), "open of the holding handle");
        if (snap_take(dir, &sn) != 0) fail_msg("snapshot failed");
        snprintf(what, sizeof what, "rekey of a store a %s handle holds",
                 ro ? "read-only" : "read-write");
        tide_rekey_opts_init(&o);
        o.block_size = 16384;
        rc = tide_store_rekey_with(dir, &o, NULL);
        if (rc != TIDE_EBUSY || tide_last_error()[0] == '\0') {
            tide_store_close(s);
            fail_msg("%s: expected TIDE_EBUSY with a message, got %d (%s): '%s'", what, rc,
                     tide_strerror(rc), tide_last_error());
        }
        if (th_snapshot_diff(dir, &sn, diff, sizeof diff) != 0) {
            tide_store_close(s);
            fail_msg("%s: expected the files byte-identical, got: %s", what, diff);
        }
        if (th_exists(th_path(path, sizeof path, dir, "nudb.key.new"))) {
            tide_store_close(s);
            fail_msg("%s: expected no nudb.key.new, got one", what);
        }
        must(tide_store_close(s), "close of the holding handle");
        snap_free(&sn);
        check_items(dir, NULL, &it, what);
        /* Once the holder is gone the rekey goes through. */
        must(tide_store_rekey_with(dir, &o, NULL), "rekey once the holder closed");
        check_items(dir, NULL, &it, "rekey once the holder closed");
        scratch_rmrf(dir);
    }
}

/* ---- old or new: the check after a failure, a crash or a kill ---- */

typedef struct image {
    uint8_t *key, *dat;
    size_t key_len, dat_len;
} image;

static void image_free(image *im)
{
    buf_free(im->key);
    buf_free(im->dat);
    memset(im, 0, sizeof *im);
}

static int same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* The store's two files as they are now: through the sim's current image,
 * or the real file system when sim is NULL. */
static void image_read(tide_io_sim *sim, const char *dir, image *im, const char *what)
{
    char kp[4200], dp[4200];
    int rk, rd;

    th_path(kp, sizeof kp, dir, "nudb.key");
    th_path(dp, sizeof dp, dir, "nudb.dat");
    memset(im, 0, sizeof *im);
    if (sim) {
        rk = tide_io_sim_get_file(sim, kp, (void **)&im->key, &im->key_len);
        rd = tide_io_sim_get_file(sim, dp, (void **)&im->dat, &im->dat_len);
    } else {
        rk = th_read_file(kp, &im->key, &im->key_len);
        rd = th_read_file(dp, &im->dat, &im->dat_len);
    }
    if (rk == 0) buf_track(im->key);
    if (rd == 0) buf_track(im->dat);
    if (rk || rd) fail_msg("%s: reading nudb.key / nudb.dat: expected 0 and 0, got %d and %d", what,
                           rk, rd);
}

typedef struct old_new {
    const char *dir;
    items it;
    unsigned old_bs, new_bs;
    uint64_t old_buckets, new_buckets;
    uint64_t new_foreign;     /* old-size spill records the new store keeps */
    image old, ref;           /* before; after a completed rekey */
    uint64_t saw_old, saw_old_waste, saw_new;
} old_new;

/*
 * Open the store read-write (recovery, removal of a stale nudb.key.new),
 * close it, and check that it is exactly the old store or exactly the new
 * one: files, verify, every item. `sim` NULL: the real file system.
 */
static void check_old_or_new(old_new *on, tide_io_sim *sim, const char *what)
{
    tide_io *io = sim ? tide_io_sim_io(sim) : NULL;
    tide_store_opts so;
    tide_store *s = NULL;
    tide_verify_report r;
    image now;
    char path[4200], ctx[700];
    int rc, is_old, is_old_waste, is_new;

    th_store_opts(&so);
    so.io = io;
    rc = tide_store_open(&s, on->dir, &so);
    if (rc != 0)
        fail_msg("%s: open (with recovery): expected 0, got %d (%s): %s", what, rc,
                 tide_strerror(rc), tide_last_error());
    rc = tide_store_close(s);
    if (rc != 0)
        fail_msg("%s: close after the recovering open: expected 0, got %d (%s): %s", what, rc,
                 tide_strerror(rc), tide_last_error());
    th_path(path, sizeof path, on->dir, "nudb.key.new");
    if (sim ? io->stat(io, path, NULL) != TIDE_ENOENT : th_exists(path))
        fail_msg("%s: after the open expected no nudb.key.new, got one", what);

    image_read(sim, on->dir, &now, what);
    is_old_waste = 0;
    is_old = same(now.key, now.key_len, on->old.key, on->old.key_len) &&
             same(now.dat, now.dat_len, on->old.dat, on->old.dat_len);
    if (!is_old && same(now.key, now.key_len, on->old.key, on->old.key_len) &&
        same(now.dat, now.dat_len, on->ref.dat, on->ref.dat_len))
        is_old = is_old_waste = 1;
    is_new = same(now.key, now.key_len, on->ref.key, on->ref.key_len) &&
             same(now.dat, now.dat_len, on->ref.dat, on->ref.dat_len);
    if (!is_old && !is_new) {
        size_t kl = now.key_len, dl = now.dat_len;
        image_free(&now);
        fail_msg("%s: expected the old store (nudb.key %zu bytes, nudb.dat %zu or %zu) or the new "
                 "one (nudb.key %zu, nudb.dat %zu) byte for byte; got nudb.key %zu bytes%s, "
                 "nudb.dat %zu bytes%s", what, on->old.key_len, on->old.dat_len, on->ref.dat_len,
                 on->ref.key_len, on->ref.dat_len, kl,
                 kl == on->old.key_len ? " (old size, other bytes)" :
                 kl == on->ref.key_len ? " (new size, other bytes)" : "", dl,
                 dl == on->old.dat_len ? " (old size)" :
                 dl == on->ref.dat_len ? " (new size)" : "");
    }
    image_free(&now);
    /* The old key file with this rekey's spill records (of the new block
     * size) is a store NuDB's verify rejects; the read-write open above
     * must have cut them off again (nudb.rekey, rekey.c). */
    if (is_old_waste && !is_new && on->ref.dat_len != on->old.dat_len)
        fail_msg("%s: expected the old store or the new one; got the old key file with the "
                 "rekey's spill records left in nudb.dat (%zu bytes, not %zu): NuDB's verify "
                 "rejects that ('invalid size in spill')", what, on->ref.dat_len, on->old.dat_len);
    if (is_new) on->saw_new++;
    else on->saw_old++;
    if (is_old_waste && !is_new) on->saw_old_waste++;

    snprintf(ctx, sizeof ctx, "%s (%s store)", what, is_new ? "new" : "old");
    check_verify(on->dir, io, on->it.n, is_new ? on->new_bs : on->old_bs,
                 is_new ? on->new_buckets : on->old_buckets, is_new ? on->new_foreign : 0, &r, ctx);
    check_items(on->dir, io, &on->it, ctx);
}

/* ---- the failure-point loop on the simulated file system ---- */

static tide_io_sim *clone_of(tide_io_sim *sim)
{
    tide_io_sim *c = NULL;
    must(tide_io_sim_clone(sim, &c), "sim clone");
    scratch_add((void **)g_sims, c);
    return c;
}

static tide_io_sim *sim_create(void)
{
    tide_io_sim *c = NULL;
    must(tide_io_sim_create(&c), "sim create");
    scratch_add((void **)g_sims, c);
    return c;
}

static void sim_put_fixture(tide_io_sim *sim, const char *name)
{
    static const char *const files[] = { "nudb.dat", "nudb.key", "nudb.log" };
    char dir[4096], path[4200], dst[64];

    must(tide_io_sim_mkdir(sim, DB), "sim mkdir");
    snprintf(dir, sizeof dir, "%s/%s", th_fixture_root(), name);
    for (size_t k = 0; k < 3; k++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        th_path(path, sizeof path, dir, files[k]);
        if (!th_exists(path)) continue;
        if (th_read_file(path, &buf, &len) != 0) fail_msg("cannot read %s", path);
        buf_track(buf);
        snprintf(dst, sizeof dst, "%s/%s", DB, files[k]);
        must(tide_io_sim_put_file(sim, dst, buf, len), "sim put_file");
        buf_free(buf);
    }
}

/* A Tide store of `n` items (values 1..300 bytes), made on the sim. */
static void sim_make_store(tide_io_sim *sim, uint64_t n, unsigned bs)
{
    tide_store_create_opts co;
    tide_store_opts so;
    tide_store *s = NULL;
    uint8_t key[32], val[300];

    must(tide_io_sim_mkdir(sim, DB), "sim mkdir");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    co.block_size = bs;
    co.salt = 0x5eed;
    co.uid = 0x7469646566697865ull;
    co.io = tide_io_sim_io(sim);
    must(tide_store_create(DB, &co), "create on the sim");
    th_store_opts(&so);
    so.io = tide_io_sim_io(sim);
    so.commit_interval_ms = 60000;
    must(tide_store_open(&s, DB, &so), "open on the sim");
    for (uint64_t i = 0; i < n; i++) {
        size_t len = th_len(i, 1, 300);
        th_key(i, 32, key);
        th_value(i, len, val);
        must(tide_store_insert(s, key, val, len), "insert on the sim");
    }
    must(tide_store_sync(s), "sync on the sim");
    must(tide_store_close(s), "close on the sim");
}

typedef struct fault_kind {
    tide_io_sim_fault kind;
    int persistent;
    const char *name;
} fault_kind;

/* The first three for every store; the short write too where the loop is
 * short enough. */
static const fault_kind fault_kinds[] = {
    { TIDE_IO_SIM_EIO, 1, "EIO from call n on" },
    { TIDE_IO_SIM_SYNC_FAIL, 0, "a failed sync at call n" },
    { TIDE_IO_SIM_ENOSPC, 0, "ENOSPC at call n" },
    { TIDE_IO_SIM_SHORT_WRITE, 0, "a short write at call n" },
};

#define CRASH_SEEDS 3

/*
 * `base`: a sim holding the store in DB (possibly with a log to recover).
 * `it`: its items. Rekey to `bs` with `buffer`, failing at every call in
 * turn, for each fault kind.
 */
static void failure_loop(tide_io_sim *base, const char *label, const items *it, unsigned bs,
                         size_t buffer, size_t nkinds, unsigned seeds, uint64_t *points,
                         uint64_t *states)
{
    tide_io_sim *ref = clone_of(base);
    tide_rekey_opts o;
    tide_rekey_report rep;
    tide_store_info info;
    old_new on;
    char what[512];
    double t0 = th_now_ms();
    uint64_t calls_clean, c0;

    memset(&on, 0, sizeof on);
    on.dir = DB;
    on.it = *it;
    tide_rekey_opts_init(&o);
    o.block_size = bs;
    o.buffer_bytes = buffer;

    /* The old store: the base after any recovery. */
    {
        tide_io_sim *rec = clone_of(base);
        tide_store_opts so;
        tide_store *s = NULL;
        th_store_opts(&so);
        so.io = tide_io_sim_io(rec);
        must(tide_store_open(&s, DB, &so), "open of the base to recover it");
        must(tide_store_close(s), "close of the recovered base");
        image_read(rec, DB, &on.old, label);
        must(tide_store_inspect(DB, tide_io_sim_io(rec), &info), "inspect of the base");
        on.old_bs = info.block_size;
        on.old_buckets = info.buckets;
        sim_destroy(rec);
    }
    /* The new store: a rekey that no fault touches. */
    o.io = tide_io_sim_io(ref);
    c0 = tide_io_sim_calls(ref);
    must(tide_store_rekey_with(DB, &o, &rep), "the clean rekey on the sim");
    calls_clean = tide_io_sim_calls(ref) - c0;
    image_read(ref, DB, &on.ref, label);
    on.new_bs = bs;
    on.new_buckets = rep.new_buckets;
    on.new_foreign = rep.foreign_spill_records;
    if (rep.passes < 2)
        fail_msg("%s: the loop wants a many-pass rekey; expected at least 2 passes, got %u", label,
                 rep.passes);
    snprintf(what, sizeof what, "%s: the clean rekey", label);
    check_old_or_new(&on, ref, what);
    if (on.saw_new != 1) fail_msg("%s: expected the clean rekey to give the new store", what);
    on.saw_new = 0;
    sim_destroy(ref);

    for (size_t fk = 0; fk < nkinds; fk++) {
        const fault_kind *f = &fault_kinds[fk];
        uint64_t n, ok_anyway = 0, failed_but_new = 0;

        for (n = 1;; n++) {
            tide_io_sim *c = clone_of(base);
            int rc, reached;

            o.io = tide_io_sim_io(c);
            c0 = tide_io_sim_calls(c);
            must(tide_io_sim_fail_at(c, n, f->kind, f->persistent), "arm the fault");
            rc = tide_store_rekey_with(DB, &o, &rep);
            reached = tide_io_sim_calls(c) - c0 >= n;
            if (!reached) {
                if (rc != 0)
                    fail_msg("%s, %s, n %llu: the rekey did not reach call n, so expected 0; got "
                             "%d (%s): %s", label, f->name, (unsigned long long)n, rc,
                             tide_strerror(rc), tide_last_error());
                sim_destroy(c);
                break;
            }
            (*points)++;
            if (rc == 0) ok_anyway++;
            must(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0), "disarm");
            /* The state the failed rekey left, still powered. */
            {
                tide_io_sim *d = clone_of(c);
                uint64_t new_before = on.saw_new;
                snprintf(what, sizeof what, "%s, %s, n %llu (rekey returned %d), no crash", label,
                         f->name, (unsigned long long)n, rc);
                check_old_or_new(&on, d, what);
                if (rc == 0 && on.saw_new == new_before)
                    fail_msg("%s: the rekey returned 0, so expected the new store; got the old",
                             what);
                if (rc != 0 && on.saw_new != new_before) failed_but_new++;
                sim_destroy(d);
                (*states)++;
            }
            for (uint64_t k = 0; k < seeds; k++) {
                tide_io_sim *d = clone_of(c);
                uint64_t seed = g_seed + n * CRASH_SEEDS + k;
                snprintf(what, sizeof what, "%s, %s, n %llu (rekey returned %d), crash seed %llu "
                         "(TIDE_TEST_SEED=%llu)", label, f->name, (unsigned long long)n, rc,
                         (unsigned long long)seed, (unsigned long long)g_seed);
                must(tide_io_sim_crash(d, seed), "crash");
                check_old_or_new(&on, d, what);
                sim_destroy(d);
                (*states)++;
            }
            sim_destroy(c);
        }
        if (n - 1 != calls_clean)
            fail_msg("%s, %s: expected the loop to end after the %llu calls of a clean rekey, it "
                     "ended after %llu", label, f->name, (unsigned long long)calls_clean,
                     (unsigned long long)(n - 1));
        print_message("%s, %s: %llu failure points (%llu where the rekey still returned 0, %llu "
                      "where it failed after the switch to the new store)\n", label, f->name,
                      (unsigned long long)(n - 1), (unsigned long long)ok_anyway,
                      (unsigned long long)failed_but_new);
    }
    print_message("%s: %llu rekey calls each; old store %llu times (%llu of them with the "
                  "rekey's spill records as waste), new store %llu times; %.0f ms\n", label,
                  (unsigned long long)calls_clean, (unsigned long long)on.saw_old,
                  (unsigned long long)on.saw_old_waste, (unsigned long long)on.saw_new,
                  th_now_ms() - t0);
    if (on.saw_old == 0 || on.saw_new == 0)
        fail_msg("%s: expected both outcomes among the failure points (old %llu, new %llu)", label,
                 (unsigned long long)on.saw_old, (unsigned long long)on.saw_new);
    image_free(&on.old);
    image_free(&on.ref);
}

/*
 * A rekey from block size 512 to 4096 of the spill fixture, stopped by a
 * failure at each of its calls in turn, then the power lost (4 drawn crash
 * images each). Before any Tide recovery, NuDB's rules (nudb_rules.c) must
 * find the old store or the new one, either opening and passing Tide's
 * verify (which checks what NuDB's does, the spill records' size too), or,
 * only for the instant between the rewrite's two renames, refusing to open
 * it for a uid mismatch and changing nothing. A read-write open then gives
 * a store that verifies. The old way (the new spill records appended to
 * nudb.dat under the old key file before the rename) left states NuDB
 * opened and its verify rejected ('invalid size in spill').
 */
static void a_rekey_to_another_block_size_leaves_nudb_the_old_store_or_the_new_at_every_crash(
    void **state)
{
    tide_io_sim *base = sim_create();
    uint64_t n, states = 0, between = 0, done = 0;

    (void)state;
    sim_put_fixture(base, "b512-k32-spill");
    for (n = 1; !done; n++) {
        tide_io_sim *sim = clone_of(base);
        tide_rekey_opts o;
        tide_rekey_report rep;
        uint64_t c0 = tide_io_sim_calls(sim);

        tide_rekey_opts_init(&o);
        o.io = tide_io_sim_io(sim);
        o.block_size = 4096;
        must(tide_io_sim_fail_at(sim, n, TIDE_IO_SIM_EIO, 1), "arm");
        tide_store_rekey_with(DB, &o, &rep);
        done = tide_io_sim_calls(sim) - c0 < n;
        must(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0), "disarm");
        for (uint64_t seed = 1; seed <= 4; seed++) {
            tide_io_sim *c = clone_of(sim);
            tide_io *io = tide_io_sim_io(c);
            tide_verify_report vr;
            th_nudb_result nr;
            tide_store *s = NULL;
            tide_store_opts so;
            char why[128];
            int opens;

            must(tide_io_sim_crash(c, seed * 7919 + n), "crash");
            if (th_nudb_recover(io, DB, 0, &nr) != 0) fail_msg("call %llu: NuDB's rules: unreadable", (unsigned long long)n);
            if (nr.verdict == TH_NUDB_REFUSES)
                fail_msg("call %llu, crash %llu: NuDB's recovery refuses the store: %s",
                         (unsigned long long)n, (unsigned long long)seed, nr.why);
            if (nr.verdict == TH_NUDB_CLEAN) {
                opens = th_nudb_opens(io, DB, why, sizeof why);
                if (opens == 1 && tide_store_verify_io(DB, io, &vr) != 0)
                    fail_msg("call %llu, crash %llu: NuDB opens a store its verify rejects: %s",
                             (unsigned long long)n, (unsigned long long)seed, tide_last_error());
                if (opens == 0 && (strcmp(why, "uid mismatch") != 0 ||
                                   io->stat(io, DB "/nudb.key.new", NULL) != 0))
                    fail_msg("call %llu, crash %llu: NuDB refuses to open the store (%s), "
                             "expected only a uid mismatch beside nudb.key.new",
                             (unsigned long long)n, (unsigned long long)seed, why);
                between += opens == 0;
            }
            th_store_opts(&so);
            so.io = io;
            must(tide_store_open(&s, DB, &so), "the read-write open after the crash");
            must(tide_store_close(s), "close");
            must(tide_store_verify_io(DB, io, &vr), "verify after Tide's open");
            if (vr.keys != 3000) fail_msg("call %llu: %llu keys after the crash, expected 3000",
                                          (unsigned long long)n, (unsigned long long)vr.keys);
            if (th_nudb_opens(io, DB, why, sizeof why) != 1) fail_msg("NuDB refuses the store after Tide's open: %s", why);
            states++;
            sim_destroy(c);
        }
        sim_destroy(sim);
    }
    print_message("rekey 512 -> 4096: %llu failure points, %llu crash states, %llu between the "
                  "renames (NuDB: uid mismatch)\n", (unsigned long long)n, (unsigned long long)states,
                  (unsigned long long)between);
    sim_destroy(base);
}

static void a_rekey_failing_at_any_call_leaves_the_old_store_or_the_new_one(void **state)
{
    uint64_t points = 0, states = 0;
    double t0 = th_now_ms();

    (void)state;
    {
        /* NuDB's 512-byte store with spills, to 4096 at its load factor
         * 0.95 (so the new table spills too), three buckets a pass. */
        const th_fixture *fx = th_fixture_find("b512-k32-spill");
        items it = items_of_fixture(fx);
        tide_io_sim *base = NULL;
        base = sim_create();
        sim_put_fixture(base, fx->name);
        failure_loop(base, "b512-k32-spill -> 4096", &it, 4096, 3 * slot_bytes(4096), 4,
                     CRASH_SEEDS, &points, &states);
        sim_destroy(base);
    }
    {
        /* A Tide store of 4000 items, 4096 -> 16384, two buckets a pass. */
        items it = { 32, 1, 300, 4000, 4000 };
        tide_io_sim *base = NULL;
        base = sim_create();
        sim_make_store(base, it.n, 4096);
        failure_loop(base, "Tide store of 4000 items 4096 -> 16384", &it, 16384,
                     2 * slot_bytes(16384), 4, CRASH_SEEDS, &points, &states);
        sim_destroy(base);
    }
    print_message("rekey failure loop: %llu failure points, %llu states checked (%d crash seeds "
                  "each, plus the state left without a crash), %.0f ms\n",
                  (unsigned long long)points, (unsigned long long)states, CRASH_SEEDS,
                  th_now_ms() - t0);
}

/*
 * The crash fixture: the rekey's own open recovers it first, so the loop
 * also fails that recovery at every call (about 230 of the 291 calls are
 * the recovery's, so one crash seed a failure point here, not three).
 *
 * Regression: a failure of the open of nudb.log in tide_store_open (or of
 * its size) was once taken for "no log": the open skipped recovery, then
 * created and truncated nudb.log, destroying the undo records of the
 * interrupted commit. Here (a failed sync or ENOSPC at call 6, which lands
 * on that open as EIO) the rekey then indexed all 12000 records of
 * nudb.dat, the 4000 of the interrupted commit included, and returned 0: a
 * store that was neither the old one nor the new one. Now only TIDE_ENOENT
 * means no log; any other error fails the open.
 */
static void a_rekey_that_recovers_first_failing_at_any_call_leaves_the_old_store_or_the_new_one(
    void **state)
{
    const th_fixture *fx = th_fixture_find("crash-b4096");
    items it = items_of_fixture(fx);
    tide_io_sim *base = NULL;
    uint64_t points = 0, states = 0;
    double t0 = th_now_ms();

    (void)state;
    base = sim_create();
    sim_put_fixture(base, fx->name);
    failure_loop(base, "crash-b4096 (recovery first) -> 8192", &it, 8192, 8 * slot_bytes(8192), 3,
                 1, &points, &states);
    sim_destroy(base);
    print_message("rekey failure loop with recovery: %llu failure points, %llu states checked "
                  "(1 crash seed each, plus the state left without a crash), %.0f ms\n",
                  (unsigned long long)points, (unsigned long long)states, th_now_ms() - t0);
}

/* ---- kill -9 on the real file system ---- */

#define KILL_ITERATIONS 10
#define KILL_ITEMS 20000

static void a_rekey_killed_at_random_moments_leaves_the_old_store_or_the_new_one(void **state)
{
    char base[4096], refdir[4096];
    tide_store_create_opts co;
    tide_store *s = NULL;
    tide_rekey_opts o;
    tide_rekey_report rep;
    tide_store_info info;
    old_new on;
    items it = { 32, 1, 400, KILL_ITEMS, KILL_ITEMS };
    uint8_t key[32], val[400];
    uint64_t rng = g_seed ^ 0x6b696c6c;
    unsigned finished = 0, killed = 0, phases[4] = { 0, 0, 0, 0 };
    static const char *const phase_names[4] = {
        "before the log was armed", "while building (log armed)",
        "after the build, before the rename", "after the rename",
    };
    double t0 = th_now_ms(), clean_ms;

    (void)state;
    /* A store of a few MB. */
    if (scratch_mkdtemp(base, sizeof base) != 0) fail_msg("mkdtemp failed");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    co.salt = 77;
    must(tide_store_create(base, &co), "create of the kill store");
    must(th_store_open(&s, base), "open of the kill store");
    for (uint64_t i = 0; i < it.n; i++) {
        size_t len = th_len(i, it.vmin, it.vmax);
        th_key(i, 32, key);
        th_value(i, len, val);
        must(tide_store_insert(s, key, val, len), "insert into the kill store");
    }
    must(tide_store_close(s), "close of the kill store");
    must(tide_store_inspect(base, NULL, &info), "inspect of the kill store");

    memset(&on, 0, sizeof on);
    on.it = it;
    on.old_bs = info.block_size;
    on.old_buckets = info.buckets;
    on.new_bs = 8192;
    image_read(NULL, base, &on.old, "the kill store");

    /* The reference: a rekey that runs to the end. */
    tide_rekey_opts_init(&o);
    o.block_size = on.new_bs;
    o.buffer_bytes = 2 * slot_bytes(on.new_bs);
    if (scratch_mkdtemp(refdir, sizeof refdir) != 0) fail_msg("mkdtemp failed");
    copy_store(base, refdir, "the kill store");
    {
        double t = th_now_ms();
        must(tide_store_rekey_with(refdir, &o, &rep), "the reference rekey");
        clean_ms = th_now_ms() - t;
    }
    on.new_buckets = rep.new_buckets;
    on.new_foreign = rep.foreign_spill_records;
    image_read(NULL, refdir, &on.ref, "the reference rekey");
    print_message("kill -9: a store of %d items, nudb.dat %llu bytes; a rekey to %u takes %u "
                  "passes and %.0f ms (TIDE_TEST_SEED=%llu)\n", KILL_ITEMS,
                  (unsigned long long)info.dat_file_bytes, on.new_bs, rep.passes, clean_ms,
                  (unsigned long long)g_seed);
    if (rep.passes < 10) fail_msg("kill -9: expected a many-pass rekey (10 or more), got %u passes",
                                  rep.passes);
    scratch_rmrf(refdir);

    for (int iter = 0; iter < KILL_ITERATIONS; iter++) {
        char dir[4096], what[320], path[4200];
        /* From the child's start to 1.2 times a clean run: a few kills land
         * after the end. */
        unsigned delay_us = (unsigned)(th_splitmix64(&rng) % (uint64_t)(clean_ms * 1200.0 + 1));
        int status, pipefd[2], phase;
        long long log_bytes;
        char go;
        pid_t pid;

        if (scratch_mkdtemp(dir, sizeof dir) != 0) fail_msg("mkdtemp failed");
        copy_store(base, dir, "the kill store");
        if (pipe(pipefd) != 0) fail_msg("pipe: %s", strerror(errno));
        fflush(NULL);
        pid = th_fork();     /* the rekey dies with this binary, whatever happens */
        if (pid < 0) fail_msg("fork: %s", strerror(errno));
        if (pid == 0) {
            close(pipefd[0]);
            if (write(pipefd[1], "g", 1) != 1) _exit(4);
            _exit(tide_store_rekey_with(dir, &o, NULL) == 0 ? 0 : 3);
        }
        close(pipefd[1]);
        if (read(pipefd[0], &go, 1) != 1) {
            kill(pid, SIGKILL);
            th_waitpid(pid, NULL, 0);
            fail_msg("the rekey child did not start");
        }
        close(pipefd[0]);
        usleep(delay_us);
        kill(pid, SIGKILL);
        if (th_waitpid(pid, &status, 0) != pid) fail_msg("waitpid: %s", strerror(errno));
        if (WIFEXITED(status)) {
            if (WEXITSTATUS(status) != 0)
                fail_msg("kill -9 iteration %d: the rekey ended before the kill with exit status "
                         "%d (a failed rekey)", iter, WEXITSTATUS(status));
            finished++;
        } else {
            killed++;
        }
        /* Where the kill landed, from the files it left: 0 before the log
         * was armed, 1 while building (log armed), 2 built and disarmed but
         * not renamed, 3 renamed. */
        log_bytes = th_file_size(th_path(path, sizeof path, dir, "nudb.log"));
        if (log_bytes >= 62) phase = 1;
        else if (th_exists(th_path(path, sizeof path, dir, "nudb.key.new"))) phase = 2;
        else if (on.ref.key_len != on.old.key_len &&
                 th_file_size(th_path(path, sizeof path, dir, "nudb.key")) ==
                     (long long)on.ref.key_len) phase = 3;
        else phase = 0;
        phases[phase]++;
        snprintf(what, sizeof what, "kill -9 iteration %d after %u us (%s; %s)", iter, delay_us,
                 WIFEXITED(status) ? "the rekey had finished" : "killed mid-rekey",
                 phase_names[phase]);
        on.dir = dir;
        {
            uint64_t new_before = on.saw_new;
            check_old_or_new(&on, NULL, what);
            if (WIFEXITED(status) && on.saw_new == new_before)
                fail_msg("%s: the rekey had finished, so expected the new store; got the old",
                         what);
        }
        /* Whatever the kill left, a second rekey finishes the job. */
        snprintf(what + strlen(what), sizeof what - strlen(what), ", then rekeyed again");
        must(tide_store_rekey_with(dir, &o, &rep), what);
        check_items(dir, NULL, &it, what);
        scratch_rmrf(dir);
    }
    print_message("kill -9: %d iterations: %u killed mid-rekey, %u after it finished; kills landed "
                  "%u %s, %u %s, %u %s, %u %s; old store %llu times, new store %llu times; "
                  "%.0f ms\n", KILL_ITERATIONS, killed, finished, phases[0], phase_names[0],
                  phases[1], phase_names[1], phases[2], phase_names[2], phases[3], phase_names[3],
                  (unsigned long long)on.saw_old, (unsigned long long)on.saw_new,
                  th_now_ms() - t0);
    image_free(&on.old);
    image_free(&on.ref);
    scratch_rmrf(base);
}

/* ---- progress: one measure over the whole run ---- */

typedef struct rekey_calls {
    uint64_t done[8192], total[8192];
    size_t n;
} rekey_calls;

static void record_progress(void *arg, uint64_t done, uint64_t total)
{
    rekey_calls *c = arg;
    if (c->n < 8192) {
        c->done[c->n] = done;
        c->total[c->n] = total;
    }
    c->n++;
}

/* The calls of one rekey against tide_rekey_opts' contract: done only
 * grows and never passes total; the counting walk ([0, dat0]) is reported;
 * from the first pass on the total is dat0 x (1 + passes) and every pass
 * has a call in its stretch [dat0 x (1 + i), dat0 x (2 + i)); the last
 * call is total/total. */
static void check_rekey_calls(const rekey_calls *c, const tide_rekey_report *rep, const char *what)
{
    uint64_t dat0 = rep->dat_file_bytes_before, want = dat0 * (1 + rep->passes);
    size_t counting = 0;

    if (c->n > 8192) fail_msg("%s: %zu progress calls, more than recorded", what, c->n);
    if (c->n < (size_t)rep->passes + 2)
        fail_msg("%s: expected a call for the counting walk, each of %u passes and the end, got %zu",
                 what, rep->passes, c->n);
    for (size_t i = 0; i < c->n; i++) {
        if (c->done[i] > c->total[i])
            fail_msg("%s: call %zu: done %llu above total %llu", what, i,
                     (unsigned long long)c->done[i], (unsigned long long)c->total[i]);
        if (i > 0 && c->done[i] < c->done[i - 1])
            fail_msg("%s: call %zu: done went back from %llu to %llu (one measure over the run)",
                     what, i, (unsigned long long)c->done[i - 1], (unsigned long long)c->done[i]);
        if (c->done[i] <= dat0 && i + 1 < c->n) counting++;
        else if (c->total[i] != want)
            fail_msg("%s: call %zu (done %llu): expected the total %llu (nudb.dat %llu x (1 + %u "
                     "passes)), got %llu", what, i, (unsigned long long)c->done[i],
                     (unsigned long long)want, (unsigned long long)dat0, rep->passes,
                     (unsigned long long)c->total[i]);
    }
    if (counting == 0) fail_msg("%s: expected the counting walk to be reported", what);
    for (unsigned pass = 0; pass < rep->passes; pass++) {
        uint64_t lo = dat0 * (1 + pass), hi = lo + dat0;
        size_t k = 0;
        while (k < c->n && !(c->done[k] >= lo && c->done[k] < hi)) k++;
        if (k == c->n) fail_msg("%s: no call in pass %u's stretch [%llu, %llu)", what, pass + 1,
                                (unsigned long long)lo, (unsigned long long)hi);
    }
    if (c->done[c->n - 1] != want || c->total[c->n - 1] != want)
        fail_msg("%s: expected the last call at %llu of %llu, got %llu of %llu", what,
                 (unsigned long long)want, (unsigned long long)want,
                 (unsigned long long)c->done[c->n - 1], (unsigned long long)c->total[c->n - 1]);
}

static void rekey_progress_is_one_measure_over_the_whole_run_ending_at_its_total(void **state)
{
    static const char *const names[] = { "b4096-k32", "crash-b4096" };
    static rekey_calls calls;

    (void)state;
    for (size_t f = 0; f < 2; f++)
        for (size_t k = 0; k < 2; k++) {
            char dir[4096], what[256];
            tide_rekey_opts o;
            tide_rekey_report rep;

            if (scratch_copy_fixture(names[f], dir, sizeof dir) != 0)
                fail_msg("copy of fixture %s failed", names[f]);
            tide_rekey_opts_init(&o);
            o.block_size = 8192;
            o.buffer_bytes = k == 0 ? 0 : 3 * slot_bytes(8192);    /* one pass; many */
            o.progress = record_progress;
            o.progress_arg = &calls;
            memset(&calls, 0, sizeof calls);
            snprintf(what, sizeof what, "%s rekeyed to 8192 with %s", names[f],
                     k == 0 ? "the default buffer" : "a 3-bucket buffer");
            must(tide_store_rekey_with(dir, &o, &rep), what);
            if (k == 1 && rep.passes < 2) fail_msg("%s: expected several passes, got %u", what, rep.passes);
            check_rekey_calls(&calls, &rep, what);
            scratch_rmrf(dir);
        }
}

#define T(f) cmocka_unit_test_teardown(f, scratch_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(rekey_turns_each_fixture_into_each_block_size_with_every_item_intact),
        T(a_chain_of_rekeys_4096_8192_16384_32768_4096_keeps_every_item),
        T(a_small_buffer_takes_many_passes_and_gives_the_same_store),
        T(a_new_load_factor_gives_the_bucket_count_it_implies_and_verifies),
        T(rekey_of_an_empty_store_makes_one_empty_bucket),
        T(an_invalid_block_size_is_TIDE_EINVAL_and_changes_nothing),
        T(rekey_builds_a_missing_key_file_from_the_data_file),
        T(a_key_file_left_by_a_killed_rebuild_is_removed_by_recover_and_built_by_rekey),
        T(rekey_rebuilds_a_key_file_that_open_refuses),
        T(a_rekey_to_another_block_size_leaves_nudb_the_old_store_or_the_new_at_every_crash),
        T(a_load_factor_outside_0_to_1_is_TIDE_EINVAL_and_changes_nothing),
        T(a_load_factor_of_nan_is_TIDE_EINVAL_and_changes_nothing),
        T(rekey_of_a_store_open_elsewhere_is_TIDE_EBUSY_and_changes_nothing),
        T(a_rekey_failing_at_any_call_leaves_the_old_store_or_the_new_one),
        T(a_rekey_that_recovers_first_failing_at_any_call_leaves_the_old_store_or_the_new_one),
        T(a_rekey_killed_at_random_moments_leaves_the_old_store_or_the_new_one),
        T(rekey_progress_is_one_measure_over_the_whole_run_ending_at_its_total),
    };

    g_seed = th_seed(20261130);
    tide_log_set_level(TIDE_LOG_WARN);     /* recoveries log at info: thousands here */
    print_message("test_store_rekey: TIDE_TEST_SEED=%llu\n", (unsigned long long)g_seed);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
