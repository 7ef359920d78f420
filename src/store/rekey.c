/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rekey.c: rebuild the key file from the data file with a new block size.
 *
 * The data file is the truth: every data record is indexed afresh, so the
 * old key file is only replaced, never read. The steps:
 *
 *   1. Open the store read-write (lock, recovery) and count the records.
 *      When the key file is missing or open refuses it, open_for_rebuild
 *      makes the handle from nudb.dat alone (the data file is the truth;
 *      the key file is only an index of it), and the log armed in step 2
 *      says key_file_size 0: NuDB's mark of a rebuild, whose recovery
 *      removes the (unusable) key file.
 *   2. Arm nudb.log with the current sizes and no records; sync it. From
 *      here a crash makes the next open truncate nudb.dat back to its old
 *      size, removing any spill record this rekey appended.
 *   3. Write nudb.key.new: its header, then the buckets in ranges that fit
 *      in buffer_bytes, one walk of nudb.dat per range. A bucket that fills
 *      up spills (a full, sorted bucket appended to nudb.dat).
 *   4. Sync nudb.dat and nudb.key.new. When spill records were appended,
 *      write nudb.rekey (where they start and end) and sync it and the
 *      directory. Empty the log and sync it. The durable store is now the
 *      old one plus unreachable spill records of the NEW block size. That
 *      is not a state to keep: NuDB's verify checks every spill record it
 *      walks against the key file's bucket size (the spec: spill records
 *      are full buckets) and rejects it, "invalid size in spill", and
 *      Tide's verify agrees. (An earlier version of this comment said
 *      NuDB's verify accepts it as waste: true only when the block size
 *      does not change.) So nudb.rekey lets ti_rekey_repair, at the next
 *      read-write open or recovery, cut them off again if a crash comes
 *      before step 5.
 *   5. Rename nudb.key.new over nudb.key and sync the directory: the
 *      switch to the new store is that one atomic rename. Then remove
 *      nudb.rekey and sync the directory.
 *
 * tide_store_rekey_with reads as these steps: prepare (check_opts; open_store
 * and plan_table, step 1), build (arm_log, step 2; build_key_file, step 3)
 * and switch (switch_key_file, steps 4 and 5); undo after a failure. The
 * holders of the files (holders.c) are looked for once: by the open, or,
 * when it stopped before its lock, by the rebuild's recovery.
 *
 * Invariants:
 *   1. At every instant the durable files are the old store (steps 1-4;
 *      in step 4 with the appended spill records and nudb.rekey, which the
 *      next read-write open cuts off) or the new one (after 5), never a
 *      mixture.
 *   2. The new key file follows docs/FORMAT.md: buckets sorted, every key in
 *      the bucket its hash names or its chain, spills full.
 *   3. Memory is the pass's buckets (about buffer_bytes) plus two 1 MiB
 *      write buffers and the visit window.
 *   4. Progress has one measure from start to end: bytes of nudb.dat (its
 *      size at the start, dat0) read, over the counting walk and every
 *      pass, of dat0 x (1 + passes). done only grows: the counting walk
 *      reports [0, dat0], pass i (from 0) dat0 x (1 + i) plus the offset
 *      of the record it indexes. The passes are known only once the
 *      records are counted, so while counting the total is an estimate
 *      (the records so far taken as typical of the file); from the first
 *      pass on it is exact, and the last call is total/total.
 *   5. A new block size (or spill records of another size in nudb.dat)
 *      rewrites nudb.dat instead of appending to it (the old table's spill
 *      records, and new ones under the old key file, are stores NuDB's
 *      verify rejects): after a room check, nudb.dat.new (a new uid, the
 *      data records in order, then the spills) and nudb.key.new are built
 *      and synced, then renamed over nudb.dat and nudb.key in that order,
 *      each rename durable before the next. Between the two, the uids
 *      differ (NuDB refuses to open; ti_rekey_repair finishes). No log is
 *      armed: nudb.dat is never written.
 *
 * Never: write to nudb.key itself; leave nudb.log empty while nudb.dat
 *   holds a torn spill record (a failure truncates nudb.dat first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define REKEY_BUFFER_DEFAULT (64u << 20)
#define REKEY_WBUF (1u << 20)
#define PROGRESS_STEP (1u << 20)

typedef struct slot {
    uint32_t count;
    uint64_t spill;
    tide_entry e[];            /* capacity entries */
} slot;

typedef struct rekey {
    tide_store *s;
    tide_file *knew;
    unsigned bs, cap;
    uint16_t lf_raw;
    uint64_t buckets, lo, hi;
    uint8_t *slots;            /* (hi - lo) slots of slot_bytes */
    size_t slot_bytes, slots_len;
    uint8_t *dat_buf;          /* appends to nudb.dat (or nudb.dat.new) */
    size_t dat_len;
    uint64_t dat_base;         /* file offset of dat_buf[0] */
    tide_file *dat_out;        /* where spill records go */
    int rewrite;               /* records are indexed at their offset in nudb.dat.new */
    uint64_t new_off;          /* there: the next data record's */
    uint8_t *block;            /* one encoded bucket (+ spill header) */
    uint64_t spills, records;
    uint64_t progress_base, progress_total, next_progress;
    const tide_rekey_opts *o;
} rekey;

static int cmp_entry(const void *a, const void *b)
{
    const tide_entry *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void tide_rekey_opts_init(tide_rekey_opts *o)
{
    memset(o, 0, sizeof *o);
    o->block_size = TIDE_BLOCK_SIZE_DEFAULT;
    o->buffer_bytes = REKEY_BUFFER_DEFAULT;
}

static slot *slot_at(rekey *k, uint64_t b)
{
    return (slot *)(k->slots + (b - k->lo) * k->slot_bytes);
}

static int dat_flush(rekey *k)
{
    tide_store *s = k->s;
    int rc = 0;
    if (k->dat_len) {
        rc = s->io->write_at(k->dat_out, k->dat_buf, k->dat_len, k->dat_base);
        if (rc == 0) __atomic_fetch_add(&s->bytes_written, k->dat_len, __ATOMIC_RELAXED);
        k->dat_base += k->dat_len;
        k->dat_len = 0;
    }
    return rc;
}

/* Append a full bucket as a spill record; returns its spill pointer. */
static int spill(rekey *k, slot *sl, uint64_t *ptr)
{
    size_t full = ti_fmt_bucket_bytes(k->cap), rec = TIDE_SPILL_HEADER + full;
    int rc;
    if (k->dat_len + rec > REKEY_WBUF && (rc = dat_flush(k)) != 0) return rc;
    qsort(sl->e, sl->count, sizeof sl->e[0], cmp_entry);
    uint8_t *p = k->dat_buf + k->dat_len;
    ti_put48(p, 0);
    ti_put16(p + 6, full);
    ti_fmt_encode_bucket(p + TIDE_SPILL_HEADER, full, sl->e, sl->count, sl->spill);
    *ptr = k->dat_base + k->dat_len + TIDE_SPILL_HEADER;
    k->dat_len += rec;
    k->spills++;
    return 0;
}

static int index_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                        const void *value, uint64_t len)
{
    rekey *k = arg;
    uint64_t h = ti_fmt_hash48(key, key_size, k->s->kh.salt);
    uint64_t b = ti_fmt_bucket_index(h, k->buckets);
    int rc;

    (void)value;
    if (k->o->progress && offset >= k->next_progress) {
        k->o->progress(k->o->progress_arg, k->progress_base + offset, k->progress_total);
        k->next_progress = offset + PROGRESS_STEP;
    }
    if (k->rewrite) {               /* the same record, in nudb.dat.new */
        offset = k->new_off;
        k->new_off += TIDE_DAT_RECORD_HEADER + key_size + len;
    }
    if (b < k->lo || b >= k->hi) return 0;
    slot *sl = slot_at(k, b);
    if (sl->count == k->cap) {
        uint64_t ptr;
        if ((rc = spill(k, sl, &ptr)) != 0) return rc;
        sl->spill = ptr;
        sl->count = 0;
    }
    sl->e[sl->count].offset = offset;
    sl->e[sl->count].size = len;
    sl->e[sl->count].hash = h;
    sl->count++;
    k->records++;
    return 0;
}

/* Write the buckets of the pass, in order, through one buffer. */
static int write_range(rekey *k)
{
    size_t per = REKEY_WBUF / k->bs ? REKEY_WBUF / k->bs : 1, n = 0;
    uint8_t *buf = tide_big_alloc(per * k->bs);
    uint64_t first = k->lo;
    int rc = 0;

    if (buf == NULL) return tide_err_set(TIDE_ENOMEM, "rekey: out of memory");
    for (uint64_t b = k->lo; b < k->hi; b++) {
        slot *sl = slot_at(k, b);
        if (sl->count > 1) qsort(sl->e, sl->count, sizeof sl->e[0], cmp_entry);
        ti_fmt_encode_bucket(buf + n * k->bs, k->bs, sl->e, sl->count, sl->spill);
        if (++n == per || b + 1 == k->hi) {
            rc = k->s->io->write_at(k->knew, buf, n * k->bs, (first + 1) * (uint64_t)k->bs);
            if (rc) break;
            __atomic_fetch_add(&k->s->bytes_written, n * k->bs, __ATOMIC_RELAXED);
            first = b + 1;
            n = 0;
        }
    }
    tide_big_free(buf, per * k->bs);
    return rc;
}

typedef struct counts {
    uint64_t records, foreign, spills, spill_bytes;
    size_t full;                /* bucket bytes of the new block size */
    const struct rekey_run *r;  /* for the progress estimate */
} counts;

static int count_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                        const void *value, uint64_t len)
{
    (void)offset; (void)key; (void)key_size; (void)value; (void)len;
    ((counts *)arg)->records++;
    return 0;
}

static int count_spill(void *arg, uint64_t offset, uint64_t n)
{
    counts *c = arg;
    (void)offset;
    if (n != c->full) c->foreign++;
    c->spills++;
    c->spill_bytes += TIDE_SPILL_HEADER + n;
    return 0;
}

/* ---- the window before the switch ----
 *
 * From the moment the log is emptied (step 4) until the rename is durable
 * (step 5), nudb.dat holds the spill records this rekey appended, of the
 * new block size, under the old key file. No chain reaches them, but NuDB's
 * verify checks every spill record it walks against the key file's bucket
 * size and rejects the store ("invalid size in spill"); so does Tide's. A
 * crash in that window would leave that state for good. So, when spill
 * records were appended, nudb.rekey records where they start and end, made
 * durable before the log is emptied and removed after the switch, and
 * ti_rekey_repair (at every read-write open, recovery and rekey) puts the
 * old store back byte for byte when it finds the switch was not made.
 */
#define MARK_NAME "nudb.rekey"
#define MARK_SIZE 26
static const char mark_magic[8] = { 't', 'i', 'd', 'e', 'r', 'k', 'e', 'y' };

static int write_mark(tide_io *io, const char *dir, uint64_t dat0, uint64_t dat_end, unsigned bs)
{
    uint8_t buf[MARK_SIZE];
    tide_file *f = NULL;
    char *path = ti_path_join(dir, MARK_NAME);
    int rc;

    if (path == NULL) return tide_err_set(TIDE_ENOMEM, "rekey: out of memory");
    memcpy(buf, mark_magic, 8);
    ti_put64(buf + 8, dat0);
    ti_put64(buf + 16, dat_end);
    ti_put16(buf + 24, bs);
    rc = io->open(io, path, TIDE_IO_CREATE, &f);
    if (rc == 0) rc = io->truncate(f, 0);
    if (rc == 0) rc = io->write_at(f, buf, sizeof buf, 0);
    if (rc == 0) rc = io->sync(f);
    if (f) io->close(f);
    if (rc == 0) rc = io->sync_dir(io, dir);   /* the mark's name, and nudb.key.new's */
    free(path);
    return rc;
}

/* The uid of the file at `path` (a data or key file: offset 10 of both
 * headers, after a type that must be `type`): 1 read, 0 not such a file. */
static int uid_of(tide_io *io, const char *path, const char *type, uint64_t *uid)
{
    uint8_t h[18];
    tide_file *f = NULL;
    uint64_t size = 0;
    int ok = 0;

    if (io->open(io, path, TIDE_IO_READ, &f) == 0) {
        ok = io->size(f, &size) == 0 && size >= TIDE_DAT_HEADER_SIZE &&
             io->read_at(f, h, sizeof h, 0) == 0 && memcmp(h, type, 8) == 0;
        if (ok) *uid = ti_get64(h + 10);
        io->close(f);
    }
    tide_err_clear();
    return ok;
}

/* A rewriting rekey's switch (switch_rewritten): nudb.dat.new is renamed
 * over nudb.dat, then nudb.key.new over nudb.key, each rename made durable
 * before the next. nudb.dat.new still there: the switch never began, the
 * store is the old one; both .new files go. Else a nudb.key.new of the
 * uid nudb.dat has now, beside a nudb.key of another uid, is the new
 * store's key file: the switch is finished. *completed says so. */
static int finish_rewrite(tide_io *io, const char *dir, const char *dat_path, const char *knew,
                          int *completed, int *dirty)
{
    char *dnew = ti_path_join(dir, "nudb.dat.new"), *key = ti_path_join(dir, "nudb.key");
    uint64_t du = 0, ku = 0, nu = 0;
    int rc = 0;

    if (!dnew || !key) { rc = tide_err_set(TIDE_ENOMEM, "repair: out of memory"); goto out; }
    if (io->stat(io, dnew, NULL) == 0) {
        if ((rc = io->unlink(io, dnew)) != 0) goto out;
        *dirty = 1;
        tide_log(TIDE_LOG_INFO, "%s: removed nudb.dat.new left by a rekey stopped before its "
                 "switch (the store is the old one)", dir);
    } else if (uid_of(io, knew, "nudb.key", &nu) && uid_of(io, dat_path, "nudb.dat", &du) &&
               nu == du && uid_of(io, key, "nudb.key", &ku) && ku != du) {
        if ((rc = io->rename(io, knew, key)) != 0) goto out;
        if ((rc = io->sync_dir(io, dir)) != 0) goto out;
        if (completed) *completed = 1;
        tide_log(TIDE_LOG_INFO, "%s: a rekey stopped between its renames (nudb.dat was the new "
                 "one already): renamed nudb.key.new over nudb.key, the store is the new one", dir);
    }
    tide_err_clear();
out:
    free(dnew);
    free(key);
    return rc;
}

int ti_rekey_repair(tide_io *io, const char *dir, const char *dat_path, uint64_t *cut_bytes,
                    int *completed)
{
    char *mark = ti_path_join(dir, MARK_NAME), *knew = ti_path_join(dir, "nudb.key.new");
    tide_file *f = NULL, *dat = NULL;
    uint8_t buf[MARK_SIZE];
    uint64_t size = 0, dat_size = 0;
    int rc, have_new, valid = 0, dirty = 0;

    if (cut_bytes) *cut_bytes = 0;
    if (completed) *completed = 0;
    if (!mark || !knew) { rc = tide_err_set(TIDE_ENOMEM, "repair: out of memory"); goto out; }
    if ((rc = finish_rewrite(io, dir, dat_path, knew, completed, &dirty)) != 0) goto out;
    have_new = io->stat(io, knew, NULL) == 0;
    rc = io->open(io, mark, TIDE_IO_READ, &f);
    if (rc == TIDE_ENOENT) {
        /* No mark: a rekey stopped before it appended anything durable
         * that the log does not cover; nudb.key.new is garbage. */
        tide_err_clear();
        rc = 0;
        if (have_new && io->unlink(io, knew) == 0)
            tide_log(TIDE_LOG_INFO, "%s: removed nudb.key.new left by an interrupted rekey", dir);
        tide_err_clear();
        goto out;
    }
    if (rc) goto out;
    if ((rc = io->size(f, &size)) != 0) goto out;
    if (size == MARK_SIZE && (rc = io->read_at(f, buf, sizeof buf, 0)) != 0) goto out;
    valid = size == MARK_SIZE && memcmp(buf, mark_magic, 8) == 0;
    io->close(f);
    f = NULL;
    if (valid && have_new) {
        /* The switch was not made: the store is the old key file and the
         * data file as it was at dat0, plus this rekey's spill records. */
        uint64_t dat0 = ti_get64(buf + 8), dat_end = ti_get64(buf + 16);
        if ((rc = io->open(io, dat_path, TIDE_IO_WRITE, &dat)) != 0) goto out;
        if ((rc = io->size(dat, &dat_size)) != 0) goto out;
        if (dat_size == dat_end && dat0 >= TIDE_DAT_HEADER_SIZE && dat0 < dat_end) {
            if ((rc = io->truncate(dat, dat0)) != 0) goto out;
            if ((rc = io->sync(dat)) != 0) goto out;
            if (cut_bytes) *cut_bytes = dat_end - dat0;
            tide_log(TIDE_LOG_INFO, "%s: an interrupted rekey had appended %llu bytes of spill "
                     "records to nudb.dat; cut them off (the store is the old one)", dir,
                     (unsigned long long)(dat_end - dat0));
        } else if (dat_size != dat0) {
            /* Written since (by NuDB, which knows nothing of the mark):
             * the tail is no longer only ours to cut. */
            tide_log(TIDE_LOG_WARN, "%s: an interrupted rekey left spill records in nudb.dat "
                     "[%llu, %llu) of another block size, and the file has changed since (%llu "
                     "bytes): they stay as waste, which NuDB's verify rejects ('invalid size in "
                     "spill'); tide rekey rewrites the key file but cannot remove them", dir,
                     (unsigned long long)dat0, (unsigned long long)dat_end,
                     (unsigned long long)dat_size);
        }
    }
    if (have_new) {
        if ((rc = io->unlink(io, knew)) != 0 && rc != TIDE_ENOENT) goto out;
        dirty = 1;
    }
    if ((rc = io->unlink(io, mark)) != 0 && rc != TIDE_ENOENT) goto out;
    dirty = 1;
    rc = 0;
out:
    if (rc == 0 && dirty) rc = io->sync_dir(io, dir);
    if (f) io->close(f);
    if (dat) io->close(dat);
    free(mark);
    free(knew);
    return rc;
}

/* Could a rebuild from nudb.dat get past what made the open fail? Errors
 * of the files' contents, yes (open_for_rebuild then checks that the cause
 * is not nudb.dat or nudb.log); a busy store, an I/O error or no memory,
 * never. */
static int rebuildable(int rc)
{
    return rc == TIDE_ENOENT || rc == TIDE_ECORRUPT || rc == TIDE_ENOTSTORE ||
           rc == TIDE_EVERSION || rc == TIDE_EHASH || rc == TIDE_EMISMATCH;
}

/*
 * The key file is missing or cannot be this store's: make a handle from
 * nudb.dat alone. First the recovery a read-write open would run (it undoes
 * a pending commit, takes the lock and checks for other processes unless
 * so->ignore_holders (set when the failed open has checked them already),
 * and removes a key file with no complete bucket). Then nudb.dat's header must
 * be sound: it gives uid, appnum and key size. The old key file, when there
 * is one, is locked (a Tide handle on it excludes us) and, when its header
 * is this store's, gives the salt, block size and load factor; otherwise a
 * new salt is drawn and the load factor is 0.5. nudb.dat is locked too, so
 * two rebuilds of one store exclude each other.
 */
static int open_for_rebuild(const char *dir, const tide_store_opts *so, tide_store **out,
                            tide_rekey_report *report)
{
    uint8_t dbuf[TIDE_DAT_HEADER_SIZE], kbuf[TIDE_KEY_HEADER_SIZE];
    tide_recover_report rr;
    tide_store *s = NULL;
    tide_dat_header dh;
    tide_key_header kh;
    uint64_t dat_size = 0, key_size = 0;
    int rc, have_kh = 0;

    *out = NULL;
    rc = tide_store_recover_with(dir, so->io, so->ignore_holders ? TIDE_RECOVER_FORCE : 0, &rr);
    if (rc) return rc;
    if ((rc = ti_store_alloc(&s, dir, so, TI_STORE_REBUILD)) != 0) return rc;
    rc = s->io->open(s->io, s->dat_path, TIDE_IO_WRITE, &s->dat);
    if (rc == TIDE_ENOENT) rc = tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat is missing)", dir);
    if (rc) goto out;
    if ((rc = s->io->lock(s->dat, 1)) != 0) goto out;
    if ((rc = s->io->size(s->dat, &dat_size)) != 0) goto out;
    if (dat_size < TIDE_DAT_HEADER_SIZE) {
        rc = tide_err_set(TIDE_ENOTSTORE, "%s: %llu bytes is shorter than the %d-byte header: "
                          "nothing to rebuild a key file from", s->dat_path,
                          (unsigned long long)dat_size, TIDE_DAT_HEADER_SIZE);
        goto out;
    }
    if ((rc = s->io->read_at(s->dat, dbuf, sizeof dbuf, 0)) != 0) goto out;
    if ((rc = ti_fmt_decode_dat_header(dbuf, &dh, s->dat_path)) != 0) goto out;

    rc = s->io->open(s->io, s->key_path, TIDE_IO_READ, &s->key);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        rc = 0;
    } else if (rc == 0) {
        if ((rc = s->io->lock(s->key, 1)) != 0) goto out;
        if ((rc = s->io->size(s->key, &key_size)) != 0) goto out;
        if (key_size >= TIDE_KEY_HEADER_SIZE &&
            (rc = s->io->read_at(s->key, kbuf, sizeof kbuf, 0)) != 0) goto out;
        have_kh = key_size >= TIDE_KEY_HEADER_SIZE &&
                  ti_fmt_decode_key_header(kbuf, &kh, s->key_path) == 0 &&
                  ti_fmt_check_key_dat(&kh, &dh, s->key_path) == 0 &&
                  kh.pepper == ti_fmt_pepper(kh.salt) && kh.load_factor > 0;
        tide_err_clear();
    } else {
        goto out;                       /* a FIFO there, say: not ours to replace */
    }

    if (!have_kh) {
        memset(&kh, 0, sizeof kh);
        if ((rc = ti_store_random_u64(&kh.salt)) != 0) goto out;
        kh.pepper = ti_fmt_pepper(kh.salt);
        kh.load_factor = ti_fmt_load_factor_raw(TIDE_LOAD_FACTOR_DEFAULT);
    }
    kh.version = TIDE_FMT_VERSION;
    kh.uid = dh.uid;
    kh.appnum = dh.appnum;
    kh.key_size = dh.key_size;
    s->kh = kh;
    s->key_size = kh.key_size;
    s->block_size = have_kh ? kh.block_size : 0;
    s->buckets = 0;
    s->dat_size = dat_size;
    report->old_key_file_bytes = key_size;

    if ((rc = s->io->open(s->io, s->log_path, TIDE_IO_CREATE, &s->log)) != 0) goto out;
    if ((rc = s->io->truncate(s->log, 0)) != 0) goto out;
    if ((rc = s->io->sync(s->log)) != 0) goto out;
    if ((rc = s->io->sync_dir(s->io, dir)) != 0) goto out;
    s->state = TI_STORE_REBUILDING;
    *out = s;
    s = NULL;
out:
    ti_store_free(s);
    return rc;
}

/* ---- the steps of tide_store_rekey_with ---- */

/* One rekey's handle, progress and undo facts, beside the build's `k`. */
typedef struct rekey_run {
    const char *dir;
    tide_rekey_opts o;
    tide_rekey_report *report;
    tide_store *s;
    rekey k;
    char *new_path, *dnew_path;
    tide_file *dnew;           /* nudb.dat.new, while rewriting */
    uint64_t n, dat0, per_pass, new_uid, kept_bytes;
    int armed, marked, switched, dat_switched;
} rekey_run;

/* The options, checked. Unlike create (and the node's nudb_block_size),
 * no fall-back: a typo here would rewrite a whole key file at a size
 * nobody asked for. */
static int check_opts(tide_rekey_opts *o)
{
    if (!tide_block_size_valid(o->block_size))
        return tide_err_set(TIDE_EINVAL, "rekey: block size %u is not a power of two from 4096 "
                            "to 32768 (4096, 8192, 16384 or 32768); nothing was changed",
                            o->block_size);
    if (!(o->load_factor == 0 || (o->load_factor > 0 && o->load_factor <= 1)))   /* NaN too */
        return tide_err_set(TIDE_EINVAL, "rekey: load factor %g is not in (0, 1]", o->load_factor);
    if (o->buffer_bytes == 0) o->buffer_bytes = REKEY_BUFFER_DEFAULT;
    return 0;
}

/* Step 1a: the store open read-write, or a handle made from nudb.dat. The
 * holders of the files are looked for once: by the open, after its lock;
 * by the rebuild's recovery when the open stopped before that. */
static int open_store(rekey_run *r)
{
    tide_store_opts so;
    int rc, scanned = 0;

    tide_store_opts_init(&so);
    so.io = r->o.io;
    so.ignore_holders = r->o.ignore_holders;
    rc = ti_store_open_checked(&r->s, r->dir, &so, 1, &scanned);
    if (rc != 0 && rebuildable(rc)) {
        /* The data file is the truth: a key file that is missing, or that
         * open will not take (grown, cut, no bucket, another store's), is
         * built again from it, which is what rekey does anyway. */
        snprintf(r->report->key_problem, sizeof r->report->key_problem, "%s", tide_last_error());
        tide_log(TIDE_LOG_INFO, "%s: nudb.key cannot be opened (%s); rebuilding it from nudb.dat",
                 r->dir, r->report->key_problem);
        so.ignore_holders = r->o.ignore_holders || scanned;
        rc = open_for_rebuild(r->dir, &so, &r->s, r->report);
        if (rc == 0) r->report->key_rebuilt = 1;
    }
    /* A full disk opens a store for reads, its log not yet prepared: no
     * rekey can run on it (its log is armed first). */
    if (rc == 0 && r->s->files_pending)
        rc = tide_err_set(TIDE_ENOSPC, "%s: rekey: the disk is full (nudb.log cannot be "
                          "prepared): free space and run it again; nothing was changed", r->dir);
    return rc;
}

/* Step 1b: count, and size the table as a rebuild does. Spill records of
 * another size than the new table's stay in nudb.dat as waste that NuDB's
 * verify rejects; the format has no way to drop them short of rewriting
 * nudb.dat, so the operator is told before anything is written. */
/* The buckets a table for `records` records needs and the passes that
 * index them: k->cap, k->lf_raw and k->slot_bytes must be set. Pure. */
static uint64_t table_passes(const rekey *k, size_t buffer_bytes, uint64_t records,
                             uint64_t *buckets, uint64_t *per_pass)
{
    uint64_t units = (uint64_t)k->lf_raw * k->cap;    /* per bucket, in 1/65536 */
    uint64_t b = (records * 65536 + units - 1) / units, per;

    if (b == 0) b = 1;
    per = buffer_bytes / k->slot_bytes;
    if (per == 0) per = 1;
    if (per > b) per = b;
    if (buckets) *buckets = b;
    if (per_pass) *per_pass = per;
    return (b + per - 1) / per;
}

/* The counting walk's progress (invariant 4): its bytes, of a total that
 * takes the records counted so far as typical of the rest of the file. */
static void count_progress(void *arg, uint64_t done, uint64_t total)
{
    const counts *c = arg;
    const rekey_run *r = c->r;
    uint64_t est = c->records;

    if (est == 0 && done < total) return;   /* nothing to estimate from yet */
    if (done > TIDE_DAT_HEADER_SIZE && done < total)
        est = (uint64_t)((double)c->records * (double)(total - TIDE_DAT_HEADER_SIZE) /
                         (double)(done - TIDE_DAT_HEADER_SIZE));
    r->o.progress(r->o.progress_arg, done,
                  total * (1 + table_passes(&r->k, r->o.buffer_bytes, est, NULL, NULL)));
}

/* The rewrite's room: nudb.dat.new (the data records, and at most one
 * spill record per `capacity` records: each holds that many entries) and
 * nudb.key.new must fit in the space free now. */
static int check_room(rekey_run *r)
{
    tide_io *io = r->s->io;
    rekey *k = &r->k;
    uint64_t spills = r->n / k->cap * (TIDE_SPILL_HEADER + ti_fmt_bucket_bytes(k->cap));
    uint64_t key = (k->buckets + 1) * (uint64_t)k->bs, need = r->kept_bytes + spills + key, avail = 0;
    int rc;

    if (io->free_bytes == NULL) return 0;
    if ((rc = io->free_bytes(io, r->dir, &avail)) != 0) return rc;
    if (avail >= need) return 0;
    return tide_err_set(TIDE_ENOSPC, "%s: rekey to block size %u rewrites nudb.dat without the "
                        "spill records of the old block size, and the new files need up to %llu "
                        "bytes (nudb.dat.new %llu, at most %llu of them new spill records; "
                        "nudb.key.new %llu), but %llu are free; nothing was changed: free %llu "
                        "bytes and run it again", r->dir, k->bs, (unsigned long long)need,
                        (unsigned long long)(r->kept_bytes + spills), (unsigned long long)spills,
                        (unsigned long long)key, (unsigned long long)avail,
                        (unsigned long long)(need - avail));
}

static int plan_table(rekey_run *r)
{
    tide_store *s = r->s;
    rekey *k = &r->k;
    counts c = { 0, 0, 0, 0, 0, r };
    int rc;

    k->s = s;
    k->o = &r->o;
    k->bs = r->o.block_size;
    k->cap = ti_fmt_capacity(k->bs);
    k->lf_raw = r->o.load_factor > 0 ? ti_fmt_load_factor_raw(r->o.load_factor) : s->kh.load_factor;
    if (k->lf_raw == 0) k->lf_raw = 1;
    r->dat0 = s->dat_size;
    r->report->old_block_size = s->block_size;
    r->report->new_block_size = k->bs;
    r->report->old_buckets = s->buckets;
    if (!r->report->key_rebuilt)
        r->report->old_key_file_bytes = (s->buckets + 1) * (uint64_t)s->block_size;
    r->report->dat_file_bytes_before = r->dat0;

    c.full = ti_fmt_bucket_bytes(k->cap);
    k->slot_bytes = (sizeof(slot) + (size_t)k->cap * sizeof(tide_entry) + 15) & ~(size_t)15;
    if ((rc = ti_store_walk(r->dir, s->io, count_record, count_spill, &c,
                            r->o.progress ? count_progress : NULL, &c, NULL)) != 0) return rc;
    r->n = c.records;
    r->report->foreign_spill_records = c.foreign;
    /* A new block size: every old spill record is dead, and one of another
     * size is a store NuDB's verify rejects; so are spill records of the new
     * size appended under the old key file. nudb.dat is rewritten instead
     * (invariant 5). A rebuild keeps nudb.dat (its key file may be gone). */
    k->rewrite = !r->report->key_rebuilt && (k->bs != s->block_size || c.foreign);
    if (c.foreign && !k->rewrite)
        tide_log(TIDE_LOG_WARN, "%s: nudb.dat holds %llu spill records of another block size "
                 "than %u; they stay, unreachable, and NuDB's verify (and tide verify) will "
                 "reject the store for them ('invalid size in spill'), though Tide and NuDB "
                 "read and write it as before", r->dir, (unsigned long long)c.foreign, k->bs);
    k->progress_total = r->dat0 * (1 + table_passes(k, r->o.buffer_bytes, r->n, &k->buckets,
                                                    &r->per_pass));
    k->progress_base = r->dat0;     /* the counting walk is done (invariant 4) */
    r->kept_bytes = r->dat0 - c.spill_bytes;
    if (k->rewrite) {
        r->report->dat_rewritten = 1;
        r->report->spill_records_dropped = c.spills;
        r->report->foreign_spill_records = 0;
        return check_room(r);
    }
    return 0;
}

/* Step 2: arm the log. A rebuild's says key_file_size 0 (NuDB's mark of
 * an interrupted rebuild): a crash then cuts nudb.dat back and removes the
 * unusable key file, and a rekey starts again. */
static int arm_log(rekey_run *r)
{
    tide_store *s = r->s;
    uint8_t hdr[TIDE_LOG_HEADER_SIZE];
    tide_log_header lh = {
        .version = TIDE_FMT_VERSION, .uid = s->kh.uid, .appnum = s->kh.appnum,
        .key_size = s->kh.key_size, .salt = s->kh.salt, .pepper = s->kh.pepper,
        .block_size = r->report->key_rebuilt ? (uint16_t)r->k.bs : s->kh.block_size,
        .key_file_size = r->report->key_rebuilt ? 0 : r->report->old_key_file_bytes,
        .dat_file_size = r->dat0,
    };
    int rc;

    ti_fmt_encode_log_header(hdr, &lh);
    if ((rc = s->io->write_at(s->log, hdr, sizeof hdr, 0)) != 0) return rc;
    if ((rc = s->io->sync(s->log)) != 0) return rc;
    r->armed = 1;
    return 0;
}

/* Step 2, rewriting (invariant 5): nudb.dat.new, a header with the new
 * store's uid (derived from the old one and the block size, so a rekey run
 * again gives the same bytes; never the old uid) and the data records of
 * nudb.dat in their order, through one buffer; no spill record. */
typedef struct copy {
    rekey_run *r;
    uint8_t *buf;
    size_t len;
    uint64_t at;
    int rc;
} copy;

static int copy_flush(copy *c)
{
    tide_store *s = c->r->s;
    int rc = c->len ? s->io->write_at(c->r->dnew, c->buf, c->len, c->at) : 0;
    if (rc == 0) __atomic_fetch_add(&s->bytes_written, c->len, __ATOMIC_RELAXED);
    c->at += c->len;
    c->len = 0;
    return rc;
}

static int copy_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                       const void *value, uint64_t len)
{
    copy *c = arg;
    size_t rec = TIDE_DAT_RECORD_HEADER + key_size + (size_t)len;
    int rc;

    (void)offset;
    if (c->len + rec > REKEY_WBUF && (rc = copy_flush(c)) != 0) return rc;
    if (rec > REKEY_WBUF) {             /* a value larger than the buffer */
        uint8_t hdr[TIDE_DAT_RECORD_HEADER + 65535];
        ti_put48(hdr, len);
        memcpy(hdr + TIDE_DAT_RECORD_HEADER, key, key_size);
        tide_store *s = c->r->s;
        if ((rc = s->io->write_at(c->r->dnew, hdr, TIDE_DAT_RECORD_HEADER + key_size, c->at)) != 0) return rc;
        if ((rc = s->io->write_at(c->r->dnew, value, (size_t)len, c->at + TIDE_DAT_RECORD_HEADER + key_size)) != 0)
            return rc;
        c->at += rec;
        return 0;
    }
    ti_put48(c->buf + c->len, len);
    memcpy(c->buf + c->len + TIDE_DAT_RECORD_HEADER, key, key_size);
    memcpy(c->buf + c->len + TIDE_DAT_RECORD_HEADER + key_size, value, (size_t)len);
    c->len += rec;
    return 0;
}

static int copy_records(rekey_run *r)
{
    tide_store *s = r->s;
    tide_dat_header dh = { TIDE_FMT_VERSION, 0, s->kh.appnum, s->kh.key_size };
    uint8_t le[10];
    copy c = { r, NULL, TIDE_DAT_HEADER_SIZE, 0, 0 };
    int rc;

    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(s->kh.uid >> (8 * i));
    ti_put16(le + 8, (uint16_t)r->k.bs);
    r->new_uid = ti_fmt_hash64(le, sizeof le, 0x7469646572656b79ull);  /* "tiderekey" */
    if (r->new_uid == s->kh.uid) r->new_uid++;
    dh.uid = r->new_uid;
    if ((r->dnew_path = ti_path_join(r->dir, "nudb.dat.new")) == NULL ||
        (c.buf = tide_big_alloc(REKEY_WBUF)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "rekey: out of memory");
        goto out;
    }
    if (s->io->stat(s->io, r->dnew_path, NULL) == 0 &&
        (rc = s->io->unlink(s->io, r->dnew_path)) != 0) goto out;
    rc = s->io->open(s->io, r->dnew_path, TIDE_IO_CREATE | TIDE_IO_EXCL, &r->dnew);
    if (rc) goto out;
    ti_fmt_encode_dat_header(c.buf, &dh);
    if ((rc = tide_store_visit_io(r->dir, s->io, copy_record, &c, NULL)) != 0) goto out;
    if ((rc = copy_flush(&c)) != 0) goto out;
    r->k.dat_out = r->dnew;
    r->k.dat_base = c.at;
out:
    tide_big_free(c.buf, REKEY_WBUF);
    return rc;
}

/* Step 3: nudb.key.new, its header and then its buckets, one walk of
 * nudb.dat per pass of per_pass buckets. */
static int build_key_file(rekey_run *r)
{
    tide_store *s = r->s;
    rekey *k = &r->k;
    tide_key_header kh = s->kh;
    int rc;

    r->new_path = ti_path_join(r->dir, "nudb.key.new");
    k->dat_buf = tide_big_alloc(REKEY_WBUF);
    k->block = malloc(k->bs);
    k->slots_len = r->per_pass * k->slot_bytes;
    k->slots = tide_big_alloc(k->slots_len);
    if (!r->new_path || !k->dat_buf || !k->block || !k->slots)
        return tide_err_set(TIDE_ENOMEM, "rekey: out of memory for %llu buckets a pass",
                            (unsigned long long)r->per_pass);
    if (s->io->stat(s->io, r->new_path, NULL) == 0 &&
        (rc = s->io->unlink(s->io, r->new_path)) != 0) return rc;
    if ((rc = s->io->open(s->io, r->new_path, TIDE_IO_CREATE | TIDE_IO_EXCL, &k->knew)) != 0) return rc;
    /* Locked before the rename, so the store is never unlocked under its
     * new key file between the switch and the close. */
    if ((rc = s->io->lock(k->knew, 1)) != 0) return rc;
    kh.block_size = (uint16_t)k->bs;
    kh.load_factor = k->lf_raw;
    if (k->rewrite) kh.uid = r->new_uid;
    memset(k->block, 0, k->bs);
    ti_fmt_encode_key_header(k->block, &kh);
    if ((rc = s->io->write_at(k->knew, k->block, k->bs, 0)) != 0) return rc;
    if (!k->rewrite) {
        k->dat_base = r->dat0;
        k->dat_out = s->dat;
    }
    for (k->lo = 0; k->lo < k->buckets; k->lo = k->hi) {
        k->new_off = TIDE_DAT_HEADER_SIZE;
        k->hi = k->lo + r->per_pass < k->buckets ? k->lo + r->per_pass : k->buckets;
        memset(k->slots, 0, (k->hi - k->lo) * k->slot_bytes);
        k->records = 0;
        k->next_progress = 0;
        if ((rc = tide_store_visit_io(r->dir, s->io, index_record, k, NULL)) != 0) return rc;
        if ((rc = write_range(k)) != 0) return rc;
        k->progress_base += r->dat0;
        r->report->passes++;
        r->report->records += k->records;
    }
    if ((rc = dat_flush(k)) != 0) return rc;
    if (r->o.progress) r->o.progress(r->o.progress_arg, k->progress_total, k->progress_total);
    return 0;
}

/* The new table's figures into the report, once the switch is made. */
static void report_switched(rekey_run *r)
{
    rekey *k = &r->k;

    r->report->new_buckets = k->buckets;
    r->report->new_key_file_bytes = (k->buckets + 1) * (uint64_t)k->bs;
    r->report->dat_file_bytes_after = k->dat_base;
    r->report->spill_records = k->spills;
    TIDE_ASSERT(r->report->records == r->n);
}

/* Steps 4 and 5: durable, marked when spills were appended, disarmed;
 * then the switch (the rename), and the mark removed. */
static int switch_key_file(rekey_run *r)
{
    tide_store *s = r->s;
    rekey *k = &r->k;
    int rc;

    if ((rc = s->io->sync(s->dat)) != 0) return rc;
    if ((rc = s->io->sync(k->knew)) != 0) return rc;
    if (k->dat_base > r->dat0) {
        if ((rc = write_mark(s->io, r->dir, r->dat0, k->dat_base, k->bs)) != 0) return rc;
        r->marked = 1;
    }
    if ((rc = s->io->truncate(s->log, 0)) != 0) return rc;
    if ((rc = s->io->sync(s->log)) != 0) return rc;
    r->armed = 0;

    if ((rc = s->io->rename(s->io, r->new_path, s->key_path)) != 0) return rc;
    if ((rc = s->io->sync_dir(s->io, r->dir)) != 0) return rc;
    r->switched = 1;
    if (r->marked) {
        char *mark = ti_path_join(r->dir, MARK_NAME);
        rc = mark ? s->io->unlink(s->io, mark) : tide_err_set(TIDE_ENOMEM, "rekey: out of memory");
        free(mark);
        if (rc == 0) rc = s->io->sync_dir(s->io, r->dir);
        if (rc) return rc;
    }
    report_switched(r);
    return 0;
}

/* Steps 4 and 5, rewriting: both new files durable under their names,
 * then nudb.dat.new renamed over nudb.dat, then nudb.key.new over
 * nudb.key, each rename made durable before the next. Before the first
 * the store is the old one; after the second, the new one; between them
 * nudb.dat's uid is not nudb.key's, which NuDB's open refuses ('uid
 * mismatch') without changing anything, and Tide's next read-write open
 * or recovery finishes (ti_rekey_repair). */
static int switch_rewritten(rekey_run *r)
{
    tide_store *s = r->s;
    rekey *k = &r->k;
    int rc;

    if ((rc = s->io->sync(r->dnew)) != 0) return rc;
    if ((rc = s->io->sync(k->knew)) != 0) return rc;
    if ((rc = s->io->sync_dir(s->io, r->dir)) != 0) return rc;
    if ((rc = s->io->rename(s->io, r->dnew_path, s->dat_path)) != 0) return rc;
    r->dat_switched = 1;
    if ((rc = s->io->sync_dir(s->io, r->dir)) != 0) return rc;
    if ((rc = s->io->rename(s->io, r->new_path, s->key_path)) != 0) return rc;
    if ((rc = s->io->sync_dir(s->io, r->dir)) != 0) return rc;
    r->switched = 1;
    report_switched(r);
    return 0;
}

/* After a failed rewrite: before the first rename, the new files go; after
 * it, the switch is finished now if it can be (else by the next open). */
static void undo_rewrite(rekey_run *r)
{
    tide_store *s = r->s;

    if (!r->dat_switched) {
        if (r->dnew_path) s->io->unlink(s->io, r->dnew_path);
        if (r->new_path) s->io->unlink(s->io, r->new_path);
    } else if (!r->switched) {
        ti_rekey_repair(s->io, r->dir, s->dat_path, NULL, NULL);
    }
    tide_err_clear();
}

/* After a failure: put the old store back, keeping the first message. */
static void undo(rekey_run *r, int rc)
{
    tide_store *s = r->s;
    char msg[512];

    snprintf(msg, sizeof msg, "%s", tide_last_error());
    if (r->armed) {
        /* Undo the appended spills now; if that fails, keep the armed log
         * for the next open's recovery. */
        if (s->io->truncate(s->dat, r->dat0) == 0 && s->io->sync(s->dat) == 0 &&
            s->io->truncate(s->log, 0) == 0 && s->io->sync(s->log) == 0) {
            if (r->new_path) s->io->unlink(s->io, r->new_path);
        } else {
            ti_store_break(s);
        }
    } else if (r->marked && !r->switched) {
        /* Disarmed, not switched: put the old store back now (the mark
         * lets the next open do it if this fails too). */
        ti_rekey_repair(s->io, r->dir, s->dat_path, NULL, NULL);
    }
    tide_err_set(rc, "%s", msg);
}

int tide_store_rekey_with(const char *dir, const tide_rekey_opts *opts, tide_rekey_report *report)
{
    tide_rekey_report local;
    rekey_run r;
    int rc;

    tide_err_clear();
    memset(&r, 0, sizeof r);
    r.dir = dir;
    if (opts) r.o = *opts;
    else tide_rekey_opts_init(&r.o);
    r.report = report ? report : &local;
    memset(r.report, 0, sizeof *r.report);

    if ((rc = check_opts(&r.o)) != 0) goto out;
    if ((rc = open_store(&r)) != 0) goto out;
    if ((rc = plan_table(&r)) != 0) goto out;
    if ((rc = r.k.rewrite ? copy_records(&r) : arm_log(&r)) != 0) goto out;
    if ((rc = build_key_file(&r)) != 0) goto out;
    rc = r.k.rewrite ? switch_rewritten(&r) : switch_key_file(&r);
out:
    if (rc && r.s && r.k.rewrite) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tide_last_error());
        undo_rewrite(&r);
        tide_err_set(rc, "%s", msg);
    }
    if (rc && r.s && (r.armed || (r.marked && !r.switched))) undo(&r, rc);
    if (r.s) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tide_last_error());
        /* A rebuild's handle has no thread: close only removes its empty
         * log (an armed one, BROKEN, is kept for the next recovery). */
        int crc = tide_store_close(r.s);
        if (rc == 0) rc = crc;
        else tide_err_set(rc, "%s", msg);
    }
    if (r.k.knew) (r.o.io ? r.o.io : tide_io_posix())->close(r.k.knew);
    if (r.dnew) (r.o.io ? r.o.io : tide_io_posix())->close(r.dnew);
    free(r.dnew_path);
    tide_big_free(r.k.dat_buf, REKEY_WBUF);
    tide_big_free(r.k.slots, r.k.slots_len);
    free(r.k.block);
    free(r.new_path);
    return rc;
}
