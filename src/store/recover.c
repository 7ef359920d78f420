/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recover.c: undo an interrupted commit from nudb.log, as NuDB does.
 *
 * The log holds a header (the key and data file sizes before the commit)
 * and the pre-image of every old bucket the commit changed. Recovery writes
 * each complete record back as a whole block, truncates both files to the
 * recorded sizes, syncs them, and only then deletes the log. Running it
 * again after a crash at any point gives the same result: the pre-images
 * and sizes do not change, so recovery is idempotent.
 *
 * ti_recover_paths reads as its steps: take_lock (unless the caller holds
 * it), the log opened (none, or one shorter than its header: drop_log and
 * tidy_without_log), read_log_and_dat, then undo_rebuild (a log with
 * key_file_size 0) or undo_commit, and drop_log last.
 *
 * The deferred index (defer.c): nudb.dat is cut to max(W, C),
 * W the log's dat_file_size, C tide.meta's when its slot is this store's
 * and speaks for this very log (committed_end: the log carries Tide's
 * deferred mark, and the slot was written under the same W and key file
 * size; a NuDB commit's log never does); with records kept past
 * W the log is cut to its header, the idle log, not deleted (keep_idle_log),
 * and the open that follows indexes them; tide_store_recover_io opens and
 * closes the store for that.
 *
 * Invariants:
 *   1. The log is deleted only after the key and data files are synced,
 *      and, after an interrupted rebuild, only after the key file's unlink
 *      is durable (its own directory sync): the log is what says that key
 *      file is partial.
 *   2. A record is applied only when it is complete and plausible (bucket
 *      index inside the old key file, count within capacity); the first
 *      record that is not ends the list, like a torn tail.
 *   3. The log's header must match the key file's (uid, appnum, key size,
 *      salt, pepper, block size); a log of another store is never applied.
 *   4. The store's exclusive lock is held (taken here, or by the caller that
 *      says so), and no other process has the store's files open (checked
 *      here, or by that caller; unless forced): the log of a store open
 *      elsewhere is a live commit, and "recovering" it would undo that
 *      commit under its writer. NuDB takes no lock, so the lock alone does
 *      not tell; holders.c looks at the processes.
 *   5. Nothing is written before every check that may refuse has passed
 *      (the headers, the sizes, tide.meta's C, and every record kept past
 *      W whole), so a refusal that says nothing was changed is true; an
 *      error after the first write says what was done.
 *
 * Never: truncate a file before every pre-image is written back; delete a
 *   log that could not be applied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/meta.h"
#include "store/store_impl.h"
#include "util/err.h"
#include "util/log.h"

#define LOG_READ_CHUNK (1u << 20)

static int check_log_header(const tide_log_header *lh, const tide_key_header *kh,
                            const tide_dat_header *dh, const char *log_path)
{
    if (lh->uid != kh->uid || lh->uid != dh->uid)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 10: uid %016llx belongs to another store "
                            "(key file %016llx)", log_path, (unsigned long long)lh->uid,
                            (unsigned long long)kh->uid);
    if (lh->appnum != kh->appnum)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 18: appnum %llu differs from the key file's %llu",
                            log_path, (unsigned long long)lh->appnum, (unsigned long long)kh->appnum);
    if (lh->key_size != kh->key_size)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 26: key size %u differs from the key file's %u",
                            log_path, lh->key_size, kh->key_size);
    if (lh->salt != kh->salt || lh->pepper != kh->pepper)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 28: salt/pepper differ from the key file's",
                            log_path);
    if (lh->block_size != kh->block_size)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 44: block size %u differs from the key file's %u",
                            log_path, lh->block_size, kh->block_size);
    return 0;
}

/* Write back every complete, plausible record of the log. */
static int apply_records(tide_io *io, tide_file *log, uint64_t log_size, tide_file *key,
                         const tide_log_header *lh, const char *log_path, uint64_t *restored)
{
    unsigned bs = lh->block_size, cap = ti_fmt_capacity(bs);
    uint64_t old_buckets = lh->key_file_size / bs - 1;
    uint64_t pos = TIDE_LOG_HEADER_SIZE;
    uint8_t *block = calloc(1, bs);
    uint8_t head[16];
    int rc = 0;

    if (block == NULL) return tide_err_set(TIDE_ENOMEM, "recover: out of memory");
    while (pos + sizeof head <= log_size) {
        if ((rc = io->read_at(log, head, sizeof head, pos)) != 0) goto out;
        uint64_t index = ti_get64(head);
        unsigned count = ti_fmt_bucket_count(head + 8);
        size_t bytes = ti_fmt_bucket_bytes(count);
        if (index >= old_buckets || count > cap) {
            tide_log(TIDE_LOG_WARN, "%s: offset %llu: record for bucket %llu with %u entries is not "
                     "plausible; treating it as the torn end of the log", log_path,
                     (unsigned long long)pos, (unsigned long long)index, count);
            break;
        }
        if (pos + 8 + bytes > log_size) break;            /* a torn last record */
        memset(block, 0, bs);
        if ((rc = io->read_at(log, block, bytes, pos + 8)) != 0) goto out;
        if ((rc = io->write_at(key, block, bs, (index + 1) * (uint64_t)bs)) != 0) goto out;
        (*restored)++;
        pos += 8 + bytes;
    }
out:
    free(block);
    return rc;
}

/*
 * With no commit to undo: a nudb.key that holds no complete bucket (shorter
 * than its header block plus one bucket) is no store's key file; every
 * store Tide or NuDB committed has one bucket or more. It is what a rebuild
 * (NuDB's rekey) leaves when killed after writing the key file's header and
 * before its log, or after its log was gone. Like the key file of a log
 * with key_file_size 0, it is removed (nothing is lost: the data file is
 * the truth, and `tide rekey` builds the key file from it). A key file of
 * another store (its header disagrees with nudb.dat) is left alone.
 */
static int remove_bucketless_key(tide_io *io, const char *dat_path, const char *key_path,
                                 const char *dir, tide_recover_report *rep)
{
    static const char type[8] = { 'n', 'u', 'd', 'b', '.', 'k', 'e', 'y' };
    uint8_t kbuf[TIDE_KEY_HEADER_SIZE], dbuf[TIDE_DAT_HEADER_SIZE];
    tide_file *key = NULL, *dat = NULL;
    tide_key_header kh;
    tide_dat_header dh;
    uint64_t size = 0, dsize = 0;
    int rc, remove = 0;

    rc = io->open(io, key_path, TIDE_IO_READ, &key);
    if (rc == TIDE_ENOENT) { tide_err_clear(); return 0; }
    if (rc) return rc;
    if ((rc = io->size(key, &size)) != 0) goto out;
    if (size < TIDE_KEY_HEADER_SIZE) {
        /* A header cut short: only its start can be told. */
        size_t n = size < sizeof type ? (size_t)size : sizeof type;
        if (n && (rc = io->read_at(key, kbuf, n, 0)) != 0) goto out;
        remove = memcmp(kbuf, type, n) == 0;
    } else {
        if ((rc = io->read_at(key, kbuf, sizeof kbuf, 0)) != 0) goto out;
        if (ti_fmt_decode_key_header(kbuf, &kh, key_path) != 0) { rc = 0; goto out; }
        if (size >= 2 * (uint64_t)kh.block_size) goto out;
        if ((rc = io->open(io, dat_path, TIDE_IO_READ, &dat)) != 0) goto out;
        if ((rc = io->size(dat, &dsize)) != 0) goto out;
        if (dsize < TIDE_DAT_HEADER_SIZE || io->read_at(dat, dbuf, sizeof dbuf, 0) != 0 ||
            ti_fmt_decode_dat_header(dbuf, &dh, dat_path) != 0)
            goto out;
        remove = ti_fmt_check_key_dat(&kh, &dh, key_path) == 0;
    }
    if (!remove) goto out;
    if ((rc = io->unlink(io, key_path)) != 0) goto out;
    if ((rc = io->sync_dir(io, dir)) != 0) goto out;
    rep->key_removed = 1;
    rep->key_removed_bytes = size;
out:
    if (key) io->close(key);
    if (dat) io->close(dat);
    if (rc == 0) tide_err_clear();
    return rc;
}

/* One recovery's files and what it has learned. */
typedef struct recovery {
    tide_io *io;
    const char *dat_path, *key_path, *log_path, *dir;
    int caller_holds_lock;
    tide_recover_report *rep;
    tide_file *log, *dat, *key;
    uint64_t log_size;
    tide_log_header lh;
    tide_dat_header dh;
} recovery;

/* With no commit to undo, a caller that does not hold the lock (tide
 * recover, rekey) is also given the bucketless key file's removal and the
 * rekey repair; open does both itself. */
static int tidy_without_log(recovery *r)
{
    int rc;

    if (r->caller_holds_lock) return 0;
    rc = remove_bucketless_key(r->io, r->dat_path, r->key_path, r->dir, r->rep);
    if (rc == 0) rc = ti_rekey_repair(r->io, r->dir, r->dat_path, &r->rep->rekey_cut_bytes,
                                      &r->rep->rekey_completed);
    return rc;
}

/* The log's header, and nudb.dat's, which must hold the size the log
 * recorded. */
static int read_log_and_dat(recovery *r)
{
    uint8_t lbuf[TIDE_LOG_HEADER_SIZE], dbuf[TIDE_DAT_HEADER_SIZE];
    tide_io *io = r->io;
    uint64_t dat_size = 0;
    int rc;

    if ((rc = io->read_at(r->log, lbuf, sizeof lbuf, 0)) != 0) return rc;
    if ((rc = ti_fmt_decode_log_header(lbuf, &r->lh, r->log_path)) != 0) return rc;
    if ((rc = io->open(io, r->dat_path, TIDE_IO_WRITE, &r->dat)) != 0) return rc;
    if ((rc = io->size(r->dat, &dat_size)) != 0) return rc;
    if (dat_size < TIDE_DAT_HEADER_SIZE)
        return tide_err_set(TIDE_ECORRUPT, "%s: %llu bytes is shorter than its header", r->dat_path,
                            (unsigned long long)dat_size);
    if ((rc = io->read_at(r->dat, dbuf, sizeof dbuf, 0)) != 0) return rc;
    if ((rc = ti_fmt_decode_dat_header(dbuf, &r->dh, r->dat_path)) != 0) return rc;
    if (r->lh.dat_file_size < TIDE_DAT_HEADER_SIZE || r->lh.dat_file_size > dat_size)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 54: data file size %llu is not within the "
                            "%llu-byte nudb.dat", r->log_path,
                            (unsigned long long)r->lh.dat_file_size, (unsigned long long)dat_size);
    r->rep->dat_truncated_from = dat_size;
    r->rep->dat_truncated_to = r->lh.dat_file_size;
    return 0;
}

/* An interrupted rebuild of the key file (key_file_size 0): the data file
 * is the truth. nudb.dat is cut back, the partial key file removed. */
static int undo_rebuild(recovery *r)
{
    tide_io *io = r->io;
    int rc;

    if (r->dh.uid != r->lh.uid)
        return tide_err_set(TIDE_EMISMATCH, "%s: uid differs from nudb.dat's", r->log_path);
    r->rep->rebuild_interrupted = 1;
    if ((rc = io->truncate(r->dat, r->lh.dat_file_size)) != 0) return rc;
    if ((rc = io->sync(r->dat)) != 0) return rc;
    rc = io->unlink(io, r->key_path);
    if (rc && rc != TIDE_ENOENT) return rc;
    /* The key file's unlink must be durable before the log's: a power
     * loss may keep a later unlink of a directory and lose an earlier
     * one, and a partial key file without its log reads as a store. */
    return io->sync_dir(io, r->dir);
}

/* The deferred index: how much of nudb.dat to keep: W (the log's dat_file_size),
 * or tide.meta's C when its slot belongs to this store and speaks for this
 * very log (ti_meta_matches_log: Tide's deferred mark, the same W and key
 * file size; another writer's log, NuDB's commit after its own recovery
 * cut nudb.dat to W, records the same W, and NuDB's rule then applies).
 * Records in [W, C) were acknowledged: kept, and the next open indexes
 * them. A C past the data file's end means committed records are gone
 * (another program cut the file): refused, nothing changed. */
static int committed_end(recovery *r, uint64_t *keep)
{
    uint64_t W = r->lh.dat_file_size, dat_size = r->rep->dat_truncated_from;
    char *path = ti_path_join(r->dir, TI_META_NAME);
    ti_meta m;
    int valid = 0, rc;

    *keep = W;
    if (path == NULL) return tide_err_set(TIDE_ENOMEM, "recover: out of memory");
    rc = ti_meta_read(r->io, path, r->lh.uid, &m, &valid);
    if (rc == 0 && valid && m.dat_committed > W && !ti_meta_matches_log(&m, &r->lh)) {
        if (m.dat_indexed == W && !r->lh.deferred)
            tide_log(TIDE_LOG_WARN, "%s: %s says records up to offset %llu were committed, but "
                     "nudb.log is not the deferred index's (no Tide mark): another writer (NuDB) "
                     "has committed since; its commit is undone as NuDB would, and nudb.dat "
                     "ends at %llu", r->dir, TI_META_NAME, (unsigned long long)m.dat_committed,
                     (unsigned long long)W);
    } else if (rc == 0 && valid && m.dat_committed > W) {
        if (m.dat_committed > dat_size)
            rc = tide_err_set(TIDE_ECORRUPT, "%s: records up to offset %llu were committed "
                              "(tide.meta) but nudb.dat holds %llu bytes: acknowledged records "
                              "are missing (did another program recover or cut the store?). "
                              "Nothing was changed; to accept the loss, remove tide.meta and "
                              "recover again", r->dir, (unsigned long long)m.dat_committed,
                              (unsigned long long)dat_size);
        else
            *keep = m.dat_committed;
    }
    free(path);
    return rc;
}

/* An interrupted commit: every pre-image written back, both files cut to
 * the sizes before it, both synced. */
static int undo_commit(recovery *r)
{
    uint8_t kbuf[TIDE_KEY_HEADER_SIZE];
    tide_io *io = r->io;
    tide_key_header kh;
    uint64_t key_size = 0, keep = 0;
    int rc;

    if ((rc = io->open(io, r->key_path, TIDE_IO_WRITE, &r->key)) != 0) return rc;
    if ((rc = io->size(r->key, &key_size)) != 0) return rc;
    if (key_size < TIDE_KEY_HEADER_SIZE)
        return tide_err_set(TIDE_ECORRUPT, "%s: shorter than its header", r->key_path);
    if ((rc = io->read_at(r->key, kbuf, sizeof kbuf, 0)) != 0) return rc;
    if ((rc = ti_fmt_decode_key_header(kbuf, &kh, r->key_path)) != 0) return rc;
    if ((rc = check_log_header(&r->lh, &kh, &r->dh, r->log_path)) != 0) return rc;
    if (r->lh.key_file_size % kh.block_size != 0 ||
        r->lh.key_file_size < 2 * (uint64_t)kh.block_size || r->lh.key_file_size > key_size)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 46: key file size %llu does not fit the "
                            "%llu-byte nudb.key", r->log_path,
                            (unsigned long long)r->lh.key_file_size, (unsigned long long)key_size);
    r->rep->key_truncated_from = key_size;
    r->rep->key_truncated_to = r->lh.key_file_size;
    if ((rc = committed_end(r, &keep)) != 0) return rc;
    if (keep > r->lh.dat_file_size) {
        /* Every record kept must be whole before anything is written: the
         * open that follows indexes them, and its refusal must find the
         * files as they were. */
        ti_tail_files t = { io, r->dat, r->dat_path, kh.key_size, ti_fmt_capacity(kh.block_size),
                            kh.salt, r->lh.dat_file_size };
        if ((rc = ti_defer_walk_tail(&t, keep, NULL, NULL)) != 0) return rc;
    }
    r->rep->dat_truncated_to = keep;
    r->rep->tail_from = r->lh.dat_file_size;
    r->rep->tail_to = keep;
    rc = apply_records(io, r->log, r->log_size, r->key, &r->lh, r->log_path,
                       &r->rep->buckets_restored);
    if (rc) return rc;
    if ((rc = io->truncate(r->key, r->lh.key_file_size)) != 0) return rc;
    if ((rc = io->truncate(r->dat, keep)) != 0) return rc;
    if ((rc = io->sync(r->key)) != 0) return rc;
    return io->sync(r->dat);
}

/* Close and remove the log, durably (the last step: invariant 1). */
static int drop_log(recovery *r)
{
    int rc;

    r->io->close(r->log);
    r->log = NULL;
    if ((rc = r->io->unlink(r->io, r->log_path)) != 0) return rc;
    return r->io->sync_dir(r->io, r->dir);
}

/* The deferred index: with a tail kept, the log becomes the idle log, its header
 * alone (key_file_size as recovered, dat_file_size W), never deleted: it is
 * what says the records past W are not indexed. A crash that loses the cut
 * leaves the pre-images, which recovery writes back again. */
static int keep_idle_log(recovery *r)
{
    int rc = r->io->truncate(r->log, TIDE_LOG_HEADER_SIZE);
    if (rc == 0) rc = r->io->sync(r->log);
    return rc;
}

/* Without the caller's lock: take the writer's lock, and make sure no
 * other process has the files open (unless `force`). */
static int take_lock(recovery *r, int force, tide_file **guard)
{
    /* The log of a store open elsewhere is a live commit, not a crash:
     * take the writer's lock before looking at it. (With no nudb.key
     * there is nothing to lock, and nothing can have the store open.) */
    int rc = r->io->open(r->io, r->key_path, TIDE_IO_READ, guard);
    if (rc == 0) rc = r->io->lock(*guard, 1);
    else if (rc == TIDE_ENOENT) { tide_err_clear(); rc = 0; }
    if (rc) return rc;
    /* NuDB takes no lock: a log is a crash's only if nobody else has
     * the files open. */
    if (!force) rc = ti_store_refuse_holders(r->io, r->dir, "a recovery");
    return rc;
}

int ti_recover_paths(tide_io *io, const char *dat_path, const char *key_path,
                       const char *log_path, const char *dir, int caller_holds_lock,
                       int force, tide_recover_report *rep)
{
    recovery r = { io, dat_path, key_path, log_path, dir, caller_holds_lock, rep,
                   NULL, NULL, NULL, 0, { 0 }, { 0 } };
    tide_file *guard = NULL;
    int rc;

    memset(rep, 0, sizeof *rep);
    if (!caller_holds_lock && (rc = take_lock(&r, force, &guard)) != 0) goto out;
    rc = io->open(io, log_path, TIDE_IO_WRITE, &r.log);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        rc = tidy_without_log(&r);
        goto out;
    }
    if (rc) goto out;
    rep->had_log = 1;
    if ((rc = io->size(r.log, &r.log_size)) != 0) goto out;
    if (r.log_size < TIDE_LOG_HEADER_SIZE) {
        rep->log_was_partial = r.log_size > 0;
        if ((rc = drop_log(&r)) == 0) rc = tidy_without_log(&r);
        goto out;
    }
    if ((rc = read_log_and_dat(&r)) != 0) goto out;
    rc = r.lh.key_file_size == 0 ? undo_rebuild(&r) : undo_commit(&r);
    if (rc == 0) rc = rep->tail_to > rep->tail_from ? keep_idle_log(&r) : drop_log(&r);
    if (rc == 0 && !caller_holds_lock)
        rc = ti_rekey_repair(io, dir, dat_path, &rep->rekey_cut_bytes, &rep->rekey_completed);
out:
    if (r.log) io->close(r.log);
    if (r.dat) io->close(r.dat);
    if (r.key) io->close(r.key);
    if (guard) io->close(guard);
    return rc;
}

/* The idle view's checks, on files opened
 * read-only: the log is a header alone (no pre-image: no bucket changed
 * since it was written), of this store, for the key file as it is. */
static int idle_log_matches(tide_io *io, const char *log_path, const char *key_path,
                            const char *dat_path, tide_log_header *lh, uint64_t *dat_size)
{
    uint8_t lbuf[TIDE_LOG_HEADER_SIZE], kbuf[TIDE_KEY_HEADER_SIZE], dbuf[TIDE_DAT_HEADER_SIZE];
    tide_file *log = NULL, *key = NULL, *dat = NULL;
    tide_key_header kh;
    tide_dat_header dh;
    uint64_t log_size = 0, key_size = 0;
    int ok = 0;

    if (io->open(io, log_path, TIDE_IO_READ, &log) || io->size(log, &log_size) ||
        log_size != TIDE_LOG_HEADER_SIZE || io->read_at(log, lbuf, sizeof lbuf, 0) ||
        ti_fmt_decode_log_header(lbuf, lh, log_path) || lh->key_file_size == 0)
        goto out;
    if (io->open(io, key_path, TIDE_IO_READ, &key) || io->size(key, &key_size) ||
        key_size != lh->key_file_size || io->read_at(key, kbuf, sizeof kbuf, 0) ||
        ti_fmt_decode_key_header(kbuf, &kh, key_path))
        goto out;
    if (io->open(io, dat_path, TIDE_IO_READ, &dat) || io->size(dat, dat_size) ||
        *dat_size < TIDE_DAT_HEADER_SIZE || io->read_at(dat, dbuf, sizeof dbuf, 0) ||
        ti_fmt_decode_dat_header(dbuf, &dh, dat_path))
        goto out;
    ok = check_log_header(lh, &kh, &dh, log_path) == 0 && lh->dat_file_size >= TIDE_DAT_HEADER_SIZE &&
         lh->dat_file_size <= *dat_size;
out:
    if (log) io->close(log);
    if (key) io->close(key);
    if (dat) io->close(dat);
    tide_err_clear();
    return ok;
}

/* The idle view's holders check: another process with the files open
 * (not a Tide reader) or a listing that fails sets v->why (TIDE_EBUSY),
 * naming the process or the error. 0, or TIDE_ENOMEM. */
static int idle_holders(tide_io *io, const char *dir, ti_idle_view *v)
{
    static const char idle[] = "nudb.log needs recovery; it has no bucket pre-image (a stopped "
                               "deferred writer's idle log, which a read-only open reads as it is "
                               "only when no other process has the files open: a NuDB writer's "
                               "commit begins the same way)";
    ti_store_holder_seen h;
    int rc = ti_store_other_holders(io, dir, 1, &h);

    if (rc == TIDE_ENOMEM) return rc;
    if (rc) {
        v->why_rc = TIDE_EBUSY;
        snprintf(v->why, sizeof v->why, "%s: %s, and the processes that have them open cannot "
                 "be listed (%s); nothing was read or written; run 'tide recover %s' when no "
                 "process writes the store", dir, idle, tide_last_error(), dir);
    } else if (h.count) {
        v->why_rc = TIDE_EBUSY;
        char more[64] = "";
        if (h.count > 1) snprintf(more, sizeof more, " and %zu more", h.count - 1);
        snprintf(v->why, sizeof v->why, "%s: %s, and %s is open in process %d (%s)%s: stop it if "
                 "it writes the store, then run 'tide recover %s'; nothing was read or written",
                 dir, idle, h.file, h.pid, h.comm, more, dir);
    }
    tide_err_clear();
    return 0;
}

int ti_recover_idle_view(tide_io *io, const char *dir, int check_holders, ti_idle_view *v)
{
    char *log_path = ti_path_join(dir, "nudb.log"), *key_path = ti_path_join(dir, "nudb.key");
    char *dat_path = ti_path_join(dir, "nudb.dat"), *meta_path = ti_path_join(dir, TI_META_NAME);
    tide_log_header lh;
    uint64_t dat_size = 0;
    ti_meta m;
    int valid = 0, rc = 0;

    memset(v, 0, sizeof *v);
    if (!log_path || !key_path || !dat_path || !meta_path) {
        rc = tide_err_set(TIDE_ENOMEM, "%s: out of memory", dir);
        goto out;
    }
    if (!idle_log_matches(io, log_path, key_path, dat_path, &lh, &dat_size)) goto out;
    v->W = v->C = lh.dat_file_size;
    /* C as recovery takes it (committed_end): a slot of this store written
     * under the same W; one past nudb.dat's end is recovery's to refuse.
     * A tide.meta that cannot be read is an error, never C = W: that
     * would report acknowledged records missing. */
    if ((rc = ti_meta_read(io, meta_path, lh.uid, &m, &valid)) != 0) {
        char cause[256];
        snprintf(cause, sizeof cause, "%s", tide_last_error());
        rc = tide_err_set(rc, "%s: %s cannot be read (%s): it says which records past the "
                          "index were committed, and without it they would read as missing; "
                          "make it readable to this user (or run as the store's owner) and "
                          "retry; nothing was read or written", dir, TI_META_NAME, cause);
        goto out;
    }
    if (valid && ti_meta_matches_log(&m, &lh) && m.dat_committed > lh.dat_file_size) {
        if (m.dat_committed > dat_size) {
            v->why_rc = TIDE_ECORRUPT;
            snprintf(v->why, sizeof v->why, "%s: records up to offset %llu were committed "
                     "(tide.meta) but nudb.dat holds %llu bytes: acknowledged records are "
                     "missing (did another program recover or cut the store?); nothing was "
                     "read or written; to accept the loss, remove tide.meta and run 'tide "
                     "recover'", dir, (unsigned long long)m.dat_committed,
                     (unsigned long long)dat_size);
            goto out;
        }
        v->C = m.dat_committed;
    }
    /* NuDB takes no lock: a header-only log may be a live NuDB writer's
     * commit that has not written its pre-images yet. */
    if (check_holders && (rc = idle_holders(io, dir, v)) != 0) goto out;
    if (v->why[0]) goto out;
    v->idle = 1;
out:
    if (rc == 0) tide_err_clear();
    free(log_path);
    free(key_path);
    free(dat_path);
    free(meta_path);
    return rc;
}

int tide_store_recover_io(const char *dir, tide_io *io, tide_recover_report *report)
{
    return tide_store_recover_with(dir, io, 0, report);
}

int tide_store_recover_with(const char *dir, tide_io *io, unsigned flags,
                          tide_recover_report *report)
{
    tide_recover_report local;
    char *dat = ti_path_join(dir, "nudb.dat");
    char *key = ti_path_join(dir, "nudb.key");
    char *log = ti_path_join(dir, "nudb.log");
    int rc, is_dir = 0;

    tide_err_clear();
    if (io == NULL) io = tide_io_posix();
    if (report == NULL) report = &local;
    memset(report, 0, sizeof *report);
    if (!dat || !key || !log) { rc = tide_err_set(TIDE_ENOMEM, "recover: out of memory"); goto out; }
    rc = io->stat(io, dir, &is_dir);
    if (rc == TIDE_ENOENT || (rc == 0 && !is_dir)) {
        rc = tide_err_set(TIDE_ENOENT, "%s: no such directory", dir);
        goto out;
    }
    if (rc) goto out;
    if (io->stat(io, dat, NULL) == TIDE_ENOENT) {
        rc = tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat is missing)", dir);
        goto out;
    }
    rc = ti_recover_paths(io, dat, key, log, dir, 0, (flags & TIDE_RECOVER_FORCE) != 0, report);
    if (rc == 0 && report->tail_to > report->tail_from) {
        /* The deferred index: a kept tail is indexed by a read-write open (which
         * recovers the idle log again, reads [W, C) and flushes) and its
         * close, so that the files are NuDB's again. */
        tide_store_opts o;
        tide_store *s = NULL;
        tide_store_opts_init(&o);
        o.io = io;
        o.ignore_holders = (flags & TIDE_RECOVER_FORCE) != 0;
        rc = tide_store_open(&s, dir, &o);
        if (rc == 0) rc = tide_store_close(s);
        if (rc) {
            char cause[512];
            snprintf(cause, sizeof cause, "%s", tide_last_error());
            rc = tide_err_set(rc, "%s: the interrupted commit was undone and nudb.dat cut to %llu "
                              "bytes, keeping the committed records from offset %llu (nudb.log "
                              "stays, its header alone: it says they are not indexed yet); "
                              "indexing them then failed: %s; run 'tide recover' again once "
                              "that is fixed", dir, (unsigned long long)report->tail_to,
                              (unsigned long long)report->tail_from, cause);
        }
    }
out:
    free(dat);
    free(key);
    free(log);
    return rc;
}
