/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uploader.c: the archiver thread. For a primary: each local generation's
 * nudb.dat uploaded as it grows, each generation a rotation made
 * read-only sealed, and old sealed generations deleted past archive_keep.
 * For a replica: the manifest re-read, so new seals are served.
 *
 * One pass of a primary (primary_pass), oldest local generation first:
 *   1. A generation the manifest does not list gets an "open" entry
 *      first, before any of its bytes, so that every object of the prefix
 *      belongs to a listed generation.
 *   2. Its first pass since open finds how much the archive holds
 *      (resume): the chunks' contiguous prefix by their sizes, no more
 *      than the local file's durable size (a crash's recovery may have
 *      cut the file below what was uploaded), everything past it cut off
 *      (ti_archive_cut_dat), and the last 64 KiB compared with the local
 *      bytes. The complete chunks' sums come from their tide.xxh64
 *      attribute, else from the local file.
 *   3. nudb.dat is uploaded up to its durable size (upload_range): pieces
 *      read from the local file in order, summed, and written
 *      asynchronously, `inflight` at most; `uploaded` moves when the
 *      oldest piece in flight completes, so it is always a prefix the
 *      archive holds whole.
 *   4. A generation no longer the newest, synced since (invariant 6), its
 *      index whole (no tail) and its data all uploaded, is sealed: its nudb.key uploaded, a filter
 *      of its keys written, and the manifest entry made "sealed" with
 *      every object's size and sum. A crash anywhere in it leaves the
 *      entry open, and the next pass seals it again from the start of
 *      the key file.
 *   5. Retention (archive_keep): the oldest sealed generations beyond it
 *      that the node no longer holds are marked "deleting", their objects
 *      removed, and their entries dropped.
 *
 * Invariants:
 *   1. The catalog in memory is what the manifest object holds: a change
 *      is written first (commit_catalog, with the version asserted) and
 *      made in memory only when the write succeeded. So "sealed" in
 *      memory, which lets a rotation drop the local copy, is always
 *      sealed in RADOS.
 *   2. Only bytes below dat_durable are uploaded, and bytes below it
 *      never change: a chunk's bytes in the archive are the local file's.
 *   3. stream.uploaded <= stream.read_to, and the archive holds the
 *      file's bytes [0, uploaded) exactly; sums[0, read_to / C) are the
 *      sums of the complete chunks read, and `sum` the running chunk's.
 *   4. A failed piece rolls the stream back to that piece (its read
 *      position and its chunk's sum as they were before it): the next
 *      attempt writes the same bytes at the same place.
 *   5. The manifest is written only with the version last read or
 *      written: a manifest some other writer changed stops this one
 *      (conflict) instead of being overwritten.
 *   6. A generation is sealed only after a sync that followed its last
 *      day as the newest (l->quiet): an insert takes the newest under the
 *      generations' read lock, so once a look has seen it read-only no
 *      insert enters it, and the sync commits those that entered before;
 *      its nudb.dat is then final, and the seal takes all of it.
 *
 * Never: upload a byte that a crash's recovery may still cut; mark a
 *   generation sealed before every one of its objects is written; write
 *   a generation of another store (another uid) over one the prefix
 *   holds; call a generation sealed that the node still writes, or that
 *   grew past its sealed size (both stop the archive as a conflict).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "archive/archive_impl.h"
#include "mem/account.h"
#include "store/format.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define TAIL_CHECK_BYTES (64u << 10)
#define DELETE_BATCH 32        /* asynchronous removes waited for together */
#define CUT_WINDOW 80          /* missing chunks past a cut before it stops looking: > 64 in flight */
#define SUM_XATTR "tide.xxh64"

/* ---- connection and manifest ---- */

/* Replace the catalog (mu held): readers of generations that left follow. */
static void catalog_install(tide_archive *a, tide_archive_catalog *next, uint64_t version)
{
    unsigned before = 0, after = 0, same = 0;

    for (unsigned i = 0; i < a->cat.count; i++) {
        const tide_archive_gen *g = &a->cat.gens[i], *n;
        if (g->state != TIDE_ARCHIVE_SEALED) continue;
        before++;
        n = tide_archive_catalog_find(next, g->id);
        same += n && n->state == TIDE_ARCHIVE_SEALED;
    }
    for (unsigned i = 0; i < next->count; i++) after += next->gens[i].state == TIDE_ARCHIVE_SEALED;
    if (before != after || same != before) __atomic_fetch_add(&a->seal_epoch, 1, __ATOMIC_SEQ_CST);
    tide_archive_catalog_clear(&a->cat);
    a->cat = *next;
    memset(next, 0, sizeof *next);
    a->cat_version = version;
    a->cat_loaded = 1;
    ti_archive_readers_sync(a);
}

int ti_archive_read_manifest(tide_archive *a)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    tide_archive_catalog next;
    uint64_t version = 0, t0 = tide_clock_mono_ns();
    char *text = NULL;
    size_t len = 0;
    int rc;

    tide_archive_oid_manifest(oid, a->prefix);
    rc = tide_rados_read_full(ti_archive_rados(a), oid, TIDE_ARCHIVE_MANIFEST_CAP, &text, &len, &version);
    if (rc == TIDE_ENOENT) {                    /* a new prefix: nothing archived yet */
        tide_err_clear();
        tide_archive_catalog_init(&next, a->prefix);
        version = 0;
        rc = 0;
    } else if (rc == 0) {
        pthread_mutex_lock(&a->mu);
        int same = a->cat_loaded && version == a->cat_version;
        int moved = a->cat_loaded && !same && !a->o.replica;
        if (moved) a->conflict = 1;
        pthread_mutex_unlock(&a->mu);
        if (same) {
            free(text);
            return 0;
        }
        if (moved) {                    /* invariant 5: a primary's manifest is its own */
            free(text);
            tide_err_set(TIDE_EBUSY, "archive: prefix %s: the manifest changed under this node (version "
                         "%" PRIu64 " now): another node writes this prefix; this one stops uploading "
                         "(give each node its own archive_prefix)", a->prefix, version);
            tide_log(TIDE_LOG_ERROR, "%s", tide_last_error());
            return TIDE_EBUSY;
        }
        rc = tide_archive_catalog_decode(text, len, oid, a->prefix, &next);
    }
    free(text);
    if (rc) return rc;
    pthread_mutex_lock(&a->mu);
    for (unsigned i = 0; i < next.count; i++) {
        tide_archive_gen *old = tide_archive_catalog_find(&a->cat, next.gens[i].id);
        if (next.gens[i].state == TIDE_ARCHIVE_SEALED && a->cat_loaded &&
            (!old || old->state != TIDE_ARCHIVE_SEALED))
            a->seals++;
    }
    catalog_install(a, &next, version);
    tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_MANIFEST], tide_clock_mono_ns() - t0);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* Write `next` as the manifest (invariants 1 and 5) and install it. On
 * failure `next` is cleared and the catalog in memory is unchanged. */
static int commit_catalog(tide_archive *a, tide_archive_catalog *next)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t version, t0 = tide_clock_mono_ns();
    char *text = NULL;
    size_t len = 0;
    int rc;

    tide_archive_oid_manifest(oid, a->prefix);
    next->updated_unix_us = tide_clock_real_us();
    snprintf(next->writer, sizeof next->writer, "%s", a->writer);
    if (!a->o.replica) next->keep = a->local_keep;
    if ((rc = tide_archive_catalog_encode(next, &text, &len)) != 0) goto out;
    pthread_mutex_lock(&a->mu);
    version = a->cat_version;
    pthread_mutex_unlock(&a->mu);
    rc = tide_rados_write_full(ti_archive_rados(a), oid, text, len, &version);
    if (rc == TIDE_EBUSY) {
        pthread_mutex_lock(&a->mu);
        a->conflict = 1;
        pthread_mutex_unlock(&a->mu);
        tide_err_prefix(rc, "archive: prefix %s: another node writes this prefix's manifest; "
                        "this one stops uploading (give each node its own archive_prefix)",
                        a->prefix);
        tide_log(TIDE_LOG_ERROR, "%s", tide_last_error());
    }
    if (rc) goto out;
    pthread_mutex_lock(&a->mu);
    catalog_install(a, next, version);
    tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_MANIFEST], tide_clock_mono_ns() - t0);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
out:
    free(text);
    tide_archive_catalog_clear(next);
    return rc ? ti_archive_failed(a, TIDE_ARCHIVE_OP_MANIFEST, rc) : 0;
}

/* A copy of the catalog to change (mu not held). */
static int catalog_draft(tide_archive *a, tide_archive_catalog *next)
{
    int rc;

    pthread_mutex_lock(&a->mu);
    rc = tide_archive_catalog_copy(next, &a->cat);
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* ---- the write pipeline ---- */

static int pieces_ready(tide_archive *a)
{
    if (a->pieces) return 0;
    if ((a->pieces = calloc(a->o.inflight, sizeof *a->pieces)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    for (unsigned i = 0; i < a->o.inflight; i++) {
        if ((a->pieces[i].buf = malloc(a->o.piece_bytes)) == NULL) {
            for (unsigned j = 0; j < i; j++) free(a->pieces[j].buf);
            free(a->pieces);
            a->pieces = NULL;
            return tide_err_set(TIDE_ENOMEM, "archive: out of memory for %u write buffers of %zu "
                                "bytes", a->o.inflight, a->o.piece_bytes);
        }
        a->pieces[i].a = a;
    }
    a->npieces = a->o.inflight;
    if (a->o.upload_account >= 0)
        tide_mem_account_alloc(a->o.upload_account, (int64_t)(a->npieces * a->o.piece_bytes));
    return 0;
}

/* librados' thread: a write completed. */
static void piece_done(void *arg, int rc)
{
    arch_piece *p = arg;
    tide_archive *a = p->a;

    pthread_mutex_lock(&a->mu);
    p->rc = rc;
    p->state = rc ? PIECE_FAILED : PIECE_DONE;
    tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_WRITE], tide_clock_mono_ns() - p->issued_ns);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
}

static void stream_oid(const tide_archive *a, const arch_stream *st, unsigned chunk, char *oid)
{
    if (st->is_key) tide_archive_oid_key(oid, a->prefix, st->id, chunk);
    else tide_archive_oid_dat(oid, a->prefix, st->id, chunk);
}

static int sums_push(arch_stream *st, unsigned chunk, uint64_t sum)
{
    if (chunk >= st->sums_cap) {
        unsigned cap = st->sums_cap ? st->sums_cap * 2 : 16;
        while (cap <= chunk) cap *= 2;
        uint64_t *n = realloc(st->sums, cap * sizeof *n);
        if (n == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
        st->sums = n;
        st->sums_cap = cap;
    }
    st->sums[chunk] = sum;
    st->nsums = chunk + 1;
    return 0;
}

/* nudb.key's bucket entries in a piece of whole blocks (the filter's size):
 * each bucket's count, and a bucket's worth more for each spill chain. */
static void count_entries(arch_stream *st, const uint8_t *buf, size_t len, uint64_t off,
                          unsigned block_size)
{
    unsigned capacity = ti_fmt_capacity(block_size);

    for (size_t at = 0; at + block_size <= len; at += block_size) {
        if (off + at == 0) continue;                        /* the header block */
        st->entries += ti_fmt_bucket_count(buf + at);
        if (ti_fmt_bucket_spill(buf + at)) st->entries += capacity;
    }
}

/* Read the next piece of `f` into p and sum it (invariant 3). */
static int read_piece(tide_archive *a, arch_stream *st, tide_file *f, arch_piece *p, uint64_t to,
                      unsigned block_size)
{
    uint64_t off = st->read_to, in = off % st->chunk_bytes;
    size_t n = a->o.piece_bytes;
    int rc;

    if (n > to - off) n = (size_t)(to - off);
    if (n > st->chunk_bytes - in) n = (size_t)(st->chunk_bytes - in);
    if (in == 0) XXH64_reset(&st->sum, 0);
    if ((rc = a->local_io->read_at(f, p->buf, n, off)) != 0) return rc;
    p->pre = st->sum;
    p->off = off;
    p->len = n;
    XXH64_update(&st->sum, p->buf, n);
    if (st->is_key) count_entries(st, p->buf, n, off, block_size);
    st->read_to += n;
    if (in + n == st->chunk_bytes &&
        (rc = sums_push(st, (unsigned)(off / st->chunk_bytes), XXH64_digest(&st->sum))) != 0)
        return rc;
    return 0;
}

/* Back to the failed piece (invariant 4). */
static void stream_rewind(arch_stream *st, const arch_piece *p)
{
    st->read_to = p->off;
    st->sum = p->pre;
    st->nsums = (unsigned)(p->off / st->chunk_bytes);
}

/* Record a complete chunk's sum on its object, so a resume need not read
 * the chunk again to know it. */
static void mark_chunk(tide_archive *a, arch_stream *st, unsigned chunk)
{
    char oid[TIDE_ARCHIVE_OID_CAP], hex[17];

    if (st->is_key || chunk >= st->nsums) return;
    stream_oid(a, st, chunk, oid);
    snprintf(hex, sizeof hex, "%016" PRIx64, st->sums[chunk]);
    if (tide_rados_setxattr(ti_archive_rados(a), oid, SUM_XATTR, hex) != 0) tide_err_clear();
}

/*
 * Upload the file's bytes [st->uploaded, to) (step 3 of the essay).
 * Returns 0 with st->uploaded == to, or the first failure with the stream
 * rewound to it; TIDE_ECLOSED stops early (the stream stays consistent).
 */
static int upload_range(tide_archive *a, arch_stream *st, tide_file *f, uint64_t to,
                        unsigned block_size)
{
    tide_rados *r = ti_archive_rados(a);
    unsigned head = 0, tail = 0, flying = 0;
    arch_piece *first_failed = NULL;
    arch_piece failed_copy;
    int rc = 0, stop = 0;

    TIDE_ASSERT(st->read_to == st->uploaded);
    if ((rc = pieces_ready(a)) != 0) return rc;
    for (;;) {
        while (!stop && !first_failed && st->read_to < to && flying < a->npieces) {
            arch_piece *p = &a->pieces[tail % a->npieces];
            char oid[TIDE_ARCHIVE_OID_CAP];
            uint64_t chunk = st->read_to / st->chunk_bytes;

            TIDE_ASSERT(p->state == PIECE_FREE);
            if ((rc = read_piece(a, st, f, p, to, block_size)) != 0) {
                stop = 1;
                break;
            }
            stream_oid(a, st, (unsigned)chunk, oid);
            p->state = PIECE_FLYING;
            p->issued_ns = tide_clock_mono_ns();
            if ((rc = tide_rados_write_async(r, oid, p->off % st->chunk_bytes, p->buf, p->len,
                                             piece_done, p)) != 0) {
                p->state = PIECE_FREE;
                stream_rewind(st, p);
                stop = 1;
                break;
            }
            tail++;
            flying++;
        }
        if (flying == 0) break;
        pthread_mutex_lock(&a->mu);
        arch_piece *p = &a->pieces[head % a->npieces];
        while (p->state == PIECE_FLYING) pthread_cond_wait(&a->done_cv, &a->mu);
        int complete = 0;
        unsigned chunk = 0;
        if (p->state == PIECE_DONE && !first_failed) {
            st->uploaded = p->off + p->len;
            a->uploaded_bytes += p->len;
            complete = st->uploaded % st->chunk_bytes == 0;
            chunk = (unsigned)((st->uploaded - 1) / st->chunk_bytes);
            pthread_cond_broadcast(&a->done_cv);            /* archive_sync's waiters */
        } else if (p->state == PIECE_FAILED && !first_failed) {
            failed_copy = *p;
            first_failed = &failed_copy;
            rc = p->rc;
        }
        p->state = PIECE_FREE;
        head++;
        flying--;
        if (a->closing) stop = 1;
        pthread_mutex_unlock(&a->mu);
        if (complete) mark_chunk(a, st, chunk);
        if (complete && !st->is_key && a->o.trace) a->o.trace(a->o.trace_arg, "written", st->id, st->uploaded);
    }
    if (first_failed) {
        stream_rewind(st, first_failed);
        char oid[TIDE_ARCHIVE_OID_CAP];
        stream_oid(a, st, (unsigned)(first_failed->off / st->chunk_bytes), oid);
        tide_err_set(rc, "rados %s/%s: write of %zu bytes at %" PRIu64 ": %s", a->pool, oid,
                     first_failed->len, first_failed->off % st->chunk_bytes, tide_strerror(rc));
        return ti_archive_failed(a, TIDE_ARCHIVE_OP_WRITE, rc);
    }
    if (rc) return ti_archive_failed(a, TIDE_ARCHIVE_OP_WRITE, rc);
    if (stop && st->uploaded < to) return TIDE_ECLOSED;
    return 0;
}

/* ---- a local generation: resume, upload, seal ---- */

static void local_path(const tide_archive *a, const tide_gens_gen_info *e, const char *file,
                       char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s%s%s", a->data_dir, e->dir, file ? "/" : "", file ? file : "");
}

/* Sum the local file's [from, to) into *state, in piece-sized reads. */
static int sum_local(tide_archive *a, tide_file *f, uint64_t from, uint64_t to, XXH64_state_t *state)
{
    uint8_t *buf = a->pieces[0].buf;
    int rc = 0;

    while (from < to && rc == 0) {
        size_t n = to - from < a->o.piece_bytes ? (size_t)(to - from) : a->o.piece_bytes;
        if ((rc = a->local_io->read_at(f, buf, n, from)) == 0) XXH64_update(state, buf, n);
        from += n;
    }
    return rc;
}

int ti_archive_cut_dat(tide_rados *r, const char *prefix, uint64_t id, uint64_t chunk_bytes,
                       uint64_t size)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    unsigned chunk = (unsigned)(size / chunk_bytes);
    uint64_t have;
    int rc;

    tide_archive_oid_dat(oid, prefix, id, chunk);
    rc = tide_rados_truncate(r, oid, size % chunk_bytes);
    if (rc && rc != TIDE_ENOENT) return rc;
    /* Writes to several chunks are in flight at once, so one that failed
     * may lie before one that landed: look past gaps, up to a window no
     * number of writes in flight reaches. */
    for (unsigned c = chunk + 1, missing = 0; missing < CUT_WINDOW; c++) {
        tide_archive_oid_dat(oid, prefix, id, c);
        if ((rc = tide_rados_stat(r, oid, &have)) == TIDE_ENOENT) {
            missing++;
            continue;
        }
        if (rc || (rc = tide_rados_remove(r, oid)) != 0) return rc;
        missing = 0;
    }
    tide_err_clear();
    return 0;
}

/*
 * Step 2 of the essay: how much of the data file the archive holds, its
 * complete chunks' sums, and the running chunk's sum state.
 */
static int resume(tide_archive *a, arch_local *l, const tide_gens_gen_info *e)
{
    tide_rados *r = ti_archive_rados(a);
    arch_stream *st = &l->dat;
    uint64_t C = st->chunk_bytes, u = 0, size = 0;
    char oid[TIDE_ARCHIVE_OID_CAP], path[PATH_MAX + 64];
    tide_file *f = NULL;
    int rc;

    if ((rc = pieces_ready(a)) != 0) return rc;
    for (unsigned c = 0;; c++) {
        stream_oid(a, st, c, oid);
        if ((rc = tide_rados_stat(r, oid, &size)) == TIDE_ENOENT) break;
        if (rc) goto out;
        u = c * C + size;
        if (size < C) break;
    }
    tide_err_clear();
    rc = 0;
    if (u > l->durable) {
        tide_log(TIDE_LOG_WARN, "archive: generation %" PRIu64 ": the archive holds %" PRIu64
                 " bytes of nudb.dat, the node %" PRIu64 " (a crash's recovery cut what was never "
                 "acknowledged); cutting the archive's copy back", l->id, u, l->durable);
        u = l->durable;
    }
    /* Nothing past the prefix stays: a chunk written after a failed one,
     * or the tail of one the recovery cut, would hold bytes the file may
     * not have there by the time the upload reaches it. */
    if ((rc = ti_archive_cut_dat(r, a->prefix, l->id, C, u)) != 0) goto out;
    local_path(a, e, "nudb.dat", path, sizeof path);
    if ((rc = a->local_io->open(a->local_io, path, TIDE_IO_READ, &f)) != 0) goto out;
    if (u > 0) {                                /* the last bytes must be the local ones */
        unsigned c = (unsigned)((u - 1) / C);
        uint64_t end = u - c * C, w = end < TAIL_CHECK_BYTES ? end : TAIL_CHECK_BYTES;
        uint8_t *theirs = a->pieces[0].buf, *ours = malloc(w);
        size_t got = 0;

        if (ours == NULL) {
            rc = tide_err_set(TIDE_ENOMEM, "archive: out of memory");
            goto out;
        }
        stream_oid(a, st, c, oid);
        rc = tide_rados_read(r, oid, end - w, theirs, (size_t)w, &got);
        if (rc == 0) rc = a->local_io->read_at(f, ours, (size_t)w, u - w);
        if (rc == 0 && (got != w || memcmp(theirs, ours, (size_t)w) != 0)) {
            tide_log(TIDE_LOG_WARN, "archive: generation %" PRIu64 ": %s's last bytes differ "
                     "from the local file's; uploading that chunk again", l->id, oid);
            u = c * C;
        }
        free(ours);
        if (rc) goto out;
    }
    st->nsums = 0;
    for (unsigned c = 0; c < u / C; c++) {      /* complete chunks' sums */
        char hex[32];
        uint64_t sum = 0;
        stream_oid(a, st, c, oid);
        if (tide_rados_getxattr(r, oid, SUM_XATTR, hex, sizeof hex) == 0 && strlen(hex) == 16) {
            sum = strtoull(hex, NULL, 16);
        } else {
            XXH64_state_t s;
            XXH64_reset(&s, 0);
            if ((rc = sum_local(a, f, c * C, (c + 1) * C, &s)) != 0) goto out;
            sum = XXH64_digest(&s);
            snprintf(hex, sizeof hex, "%016" PRIx64, sum);
            if (tide_rados_setxattr(r, oid, SUM_XATTR, hex) != 0) tide_err_clear();
        }
        if ((rc = sums_push(st, c, sum)) != 0) goto out;
    }
    tide_err_clear();
    XXH64_reset(&st->sum, 0);
    if ((rc = sum_local(a, f, u / C * C, u, &st->sum)) != 0) goto out;
    pthread_mutex_lock(&a->mu);
    st->uploaded = st->read_to = u;
    l->resumed = 1;
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
    if (u) tide_log(TIDE_LOG_INFO, "archive: generation %" PRIu64 ": %" PRIu64 " bytes of "
                    "nudb.dat already archived; going on from there", l->id, u);
out:
    if (f) a->local_io->close(f);
    return rc;
}

/* Upload the data file up to the durable bound. */
static int upload_dat(tide_archive *a, arch_local *l, const tide_gens_gen_info *e)
{
    char path[PATH_MAX + 64];
    tide_file *f = NULL;
    int rc;

    local_path(a, e, "nudb.dat", path, sizeof path);
    if ((rc = a->local_io->open(a->local_io, path, TIDE_IO_READ, &f)) != 0) return rc;
    rc = upload_range(a, &l->dat, f, l->durable, e->block_size);
    a->local_io->close(f);
    return rc;
}

typedef struct filter_walk {
    tide_archive        *a;
    tide_archive_filter *filter;
} filter_walk;

/* The walk of a sealing generation's nudb.dat: each key into the filter;
 * a close stops it (a large generation's walk is long). */
static int add_key_to_filter(void *arg, uint64_t offset, const void *key, unsigned key_size,
                             const void *value, uint64_t len)
{
    filter_walk *w = arg;

    (void)offset; (void)value; (void)len;
    if (__atomic_load_n(&w->a->closing, __ATOMIC_RELAXED))
        return tide_err_set(TIDE_ECLOSED, "archive: closing");
    tide_archive_filter_add(w->filter, tide_archive_filter_hash(key, key_size));
    return 0;
}

/* A stream's final sums: the running chunk's, when it is not complete. */
static int finish_sums(arch_stream *st)
{
    if (st->read_to % st->chunk_bytes == 0) return 0;
    return sums_push(st, (unsigned)(st->read_to / st->chunk_bytes), XXH64_digest(&st->sum));
}

static int copy_sums(uint64_t **dst, const arch_stream *st)
{
    *dst = NULL;
    if (st->nsums == 0) return 0;
    if ((*dst = malloc(st->nsums * sizeof **dst)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    memcpy(*dst, st->sums, st->nsums * sizeof **dst);
    return 0;
}

/* Step 4 of the essay. */
static int seal(tide_archive *a, arch_local *l, const tide_gens_gen_info *e)
{
    tide_rados *r = ti_archive_rados(a);
    arch_stream ks = { .id = l->id, .is_key = 1, .chunk_bytes = l->dat.chunk_bytes };
    char path[PATH_MAX + 64], oid[TIDE_ARCHIVE_OID_CAP];
    tide_archive_catalog next = { 0 };
    tide_archive_filter *filter = NULL;
    tide_visit_stats vs = { 0 };
    uint64_t t0 = tide_clock_mono_ns(), fsum;
    const uint8_t *image;
    tide_file *f = NULL;
    size_t flen;
    int rc;

    local_path(a, e, "nudb.key", path, sizeof path);
    if ((rc = a->local_io->open(a->local_io, path, TIDE_IO_READ, &f)) != 0) goto out;
    XXH64_reset(&ks.sum, 0);
    rc = upload_range(a, &ks, f, e->key_file_bytes, e->block_size);
    a->local_io->close(f);
    if (rc) goto out;
    if (a->o.trace) a->o.trace(a->o.trace_arg, "key", l->id, ks.read_to);
    if ((rc = finish_sums(&ks)) != 0 || (rc = finish_sums(&l->dat)) != 0) goto out;
    if ((rc = tide_archive_filter_new(&filter, ks.entries, a->o.filter_bits, a->o.filter_account)) != 0)
        goto out;
    local_path(a, e, NULL, path, sizeof path);
    {
        filter_walk w = { a, filter };
        if ((rc = tide_store_visit_io(path, a->local_io, add_key_to_filter, &w, &vs)) != 0) goto out;
    }
    image = tide_archive_filter_image(filter, &flen);
    fsum = XXH64(image, flen, 0);
    tide_archive_oid_filter(oid, a->prefix, l->id);
    if ((rc = tide_rados_write_full(r, oid, image, flen, NULL)) != 0) {
        ti_archive_failed(a, TIDE_ARCHIVE_OP_SEAL, rc);
        goto out;
    }
    pthread_mutex_lock(&a->mu);
    a->uploaded_bytes += flen;
    pthread_mutex_unlock(&a->mu);
    if (a->o.trace) a->o.trace(a->o.trace_arg, "filter", l->id, flen);
    if ((rc = catalog_draft(a, &next)) != 0) goto out;
    tide_archive_gen *g = tide_archive_catalog_find(&next, l->id);
    TIDE_ASSERT(g != NULL);
    g->state = TIDE_ARCHIVE_SEALED;
    g->salt = e->salt;                  /* a rebuilt key file (a restore) drew a new one */
    g->dat_bytes = l->dat.read_to;
    g->key_bytes = ks.read_to;
    g->records = vs.data_records;
    g->dat_chunks = l->dat.nsums;
    g->key_chunks = ks.nsums;
    TIDE_ASSERT(g->dat_chunks == tide_archive_chunks(g->dat_bytes, g->chunk_bytes));
    TIDE_ASSERT(g->key_chunks == tide_archive_chunks(g->key_bytes, g->chunk_bytes));
    if ((rc = copy_sums(&g->dat_sums, &l->dat)) != 0 || (rc = copy_sums(&g->key_sums, &ks)) != 0)
        goto out;
    g->filter_bytes = flen;
    g->filter_sum = fsum;
    g->sealed_unix_us = tide_clock_real_us();
    if ((rc = commit_catalog(a, &next)) != 0) goto out;   /* invariant 1: sealed from here */
    pthread_mutex_lock(&a->mu);
    l->sealed = 1;
    a->seals++;
    tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_SEAL], tide_clock_mono_ns() - t0);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
    if (a->o.trace) a->o.trace(a->o.trace_arg, "sealed", l->id, l->dat.read_to);
    tide_log(TIDE_LOG_INFO, "archive: generation %" PRIu64 " sealed: %" PRIu64 " records, nudb.dat "
             "%" PRIu64 " bytes in %u objects, nudb.key %" PRIu64 " bytes, a %zu-byte filter",
             l->id, vs.data_records, l->dat.read_to, l->dat.nsums, ks.read_to, flen);
out:
    tide_archive_catalog_clear(&next);
    tide_archive_filter_free(filter);
    free(ks.sums);
    if (rc && rc != TIDE_ECLOSED)
        tide_log(TIDE_LOG_WARN, "archive: sealing generation %" PRIu64 " failed, to be tried "
                 "again: %s", l->id, tide_last_error());
    return rc;
}

/* The uploader's record of local generation e, made at its first sight (mu held). */
static arch_local *local_get(tide_archive *a, uint64_t id, uint64_t chunk_bytes)
{
    arch_local *l;

    for (unsigned i = 0; i < a->nlocals; i++)
        if (a->locals[i]->id == id) return a->locals[i];
    if (a->nlocals == a->locals_cap) {
        unsigned cap = a->locals_cap ? a->locals_cap * 2 : 8;
        arch_local **n = realloc(a->locals, cap * sizeof *n);
        if (n == NULL) return NULL;
        a->locals = n;
        a->locals_cap = cap;
    }
    if ((l = calloc(1, sizeof *l)) == NULL) return NULL;
    l->id = id;
    l->dat.id = id;
    l->dat.chunk_bytes = chunk_bytes;
    a->locals[a->nlocals++] = l;
    return l;
}

/* A listed generation of another store under this id: stop (the essay's
 * last Never). */
static int refuse_other_store(tide_archive *a, const tide_archive_gen *g, const tide_gens_gen_info *e)
{
    pthread_mutex_lock(&a->mu);
    a->conflict = 1;
    pthread_mutex_unlock(&a->mu);
    tide_err_set(TIDE_EMISMATCH, "archive: prefix %s already holds a generation %" PRIu64
                 " of another store (uid %016" PRIx64 ", this node's %016" PRIx64 "): give this "
                 "node its own archive_prefix, or rebuild it from the archive with `tide archive "
                 "restore`; uploads stop", a->prefix, g->id, g->uid, e->uid);
    tide_log(TIDE_LOG_ERROR, "%s", tide_last_error());
    return ti_archive_failed(a, TIDE_ARCHIVE_OP_MANIFEST, TIDE_EMISMATCH);
}

/* A generation sealed in the archive that the node still writes, or that
 * grew past its sealed size (a data directory restored from an older copy
 * than the archive): sealing it again would hide the new records, and
 * calling it sealed would let a rotation drop them. Stop, as for another
 * store. */
static int refuse_grown(tide_archive *a, const tide_archive_gen *g, const tide_gens_gen_info *e)
{
    pthread_mutex_lock(&a->mu);
    a->conflict = 1;
    for (unsigned i = 0; i < a->nlocals; i++)
        if (a->locals[i]->id == e->id) a->locals[i]->sealed = 0;
    pthread_mutex_unlock(&a->mu);
    tide_err_set(TIDE_EMISMATCH, "archive: prefix %s: generation %" PRIu64 " is sealed there with %" PRIu64
                 " data bytes, but this node %s it (%" PRIu64 " bytes): its data directory is not the "
                 "one the archive was made from; restore it with `tide archive restore`, or give it "
                 "another archive_prefix; uploads stop", a->prefix, g->id, g->dat_bytes,
                 e->writable ? "still writes" : "holds more of", e->dat_durable);
    tide_log(TIDE_LOG_ERROR, "%s", tide_last_error());
    return ti_archive_failed(a, TIDE_ARCHIVE_OP_MANIFEST, TIDE_EMISMATCH);
}

/* Steps 1 to 4 for one local generation. */
static int pass_gen(tide_archive *a, const tide_gens_gen_info *e)
{
    tide_archive_gen *g, found = { 0 };
    int listed = 0, rc;
    arch_local *l;

    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, e->id);
    if (g) {
        found = *g;
        listed = 1;
    }
    l = local_get(a, e->id, listed ? found.chunk_bytes : a->o.chunk_bytes);
    if (l) {
        l->writable = e->writable;
        if (!l->quiet) l->durable = e->dat_durable;
        l->key_bytes = e->key_file_bytes;
        l->sealed = listed && found.state == TIDE_ARCHIVE_SEALED && found.uid == e->uid;
    }
    pthread_mutex_unlock(&a->mu);
    if (l == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    if (listed && found.uid != e->uid) return refuse_other_store(a, &found, e);
    if (l->sealed && (e->writable || e->dat_durable > found.dat_bytes)) return refuse_grown(a, &found, e);
    if (l->sealed || (listed && found.state == TIDE_ARCHIVE_DELETING)) return 0;
    if (!listed) {                                            /* step 1 */
        tide_archive_catalog next;
        tide_archive_gen ng = { .id = e->id, .state = TIDE_ARCHIVE_OPEN, .uid = e->uid,
                                .salt = e->salt, .key_size = e->key_size,
                                .block_size = e->block_size, .chunk_bytes = a->o.chunk_bytes };
        if ((rc = catalog_draft(a, &next)) != 0) return rc;
        if ((rc = tide_archive_catalog_add(&next, &ng)) != 0) {
            tide_archive_catalog_clear(&next);
            return rc;
        }
        if ((rc = commit_catalog(a, &next)) != 0) return rc;
    }
    if (!e->writable && !l->quiet) {
        /* Inserts that entered it before the rotation's switch may still
         * wait in its pool: commit them, then look again (invariant 6). */
        tide_gens_info gi;
        if ((rc = tide_gens_sync(a->o.gens)) != 0) return rc;
        tide_gens_get_info(a->o.gens, &gi);
        for (unsigned i = 0; i < gi.count; i++)
            if (gi.gens[i].id == e->id) {
                pthread_mutex_lock(&a->mu);
                l->durable = gi.gens[i].dat_durable;
                l->key_bytes = gi.gens[i].key_file_bytes;
                l->quiet = 1;
                pthread_mutex_unlock(&a->mu);
                return pass_gen(a, &gi.gens[i]);
            }
        return 0;                           /* dropped meanwhile (by an admin) */
    }
    if (!l->resumed && (rc = resume(a, l, e)) != 0) return rc;
    if (l->dat.uploaded < l->durable && (rc = upload_dat(a, l, e)) != 0) return rc;
    if (!e->writable && e->tail_items == 0 && e->dat_durable == e->dat_file_bytes &&
        l->dat.uploaded == e->dat_file_bytes)
        return seal(a, l, e);
    return 0;
}

/* Step 5: remove one generation's objects, after marking it. */
static int delete_generation(tide_archive *a, uint64_t id)
{
    tide_rados *r = ti_archive_rados(a);
    tide_archive_catalog next;
    uint64_t t0 = tide_clock_mono_ns();
    tide_archive_gen *g;
    int rc;

    if ((rc = catalog_draft(a, &next)) != 0) return rc;
    g = tide_archive_catalog_find(&next, id);
    TIDE_ASSERT(g != NULL);
    if (g->state != TIDE_ARCHIVE_DELETING) {
        g->state = TIDE_ARCHIVE_DELETING;
        if ((rc = commit_catalog(a, &next)) != 0) return rc;
        if ((rc = catalog_draft(a, &next)) != 0) return rc;
        g = tide_archive_catalog_find(&next, id);
    }
    /* In batches of asynchronous removes: data chunks, key chunks, the filter. */
    {
        char names[DELETE_BATCH][TIDE_ARCHIVE_OID_CAP];
        const char *batch[DELETE_BATCH];
        unsigned total = g->dat_chunks + g->key_chunks + 1, k = 0;

        for (unsigned i = 0; rc == 0 && i < total; i++) {
            if (i < g->dat_chunks) tide_archive_oid_dat(names[k], a->prefix, id, i);
            else if (i < total - 1) tide_archive_oid_key(names[k], a->prefix, id, i - g->dat_chunks);
            else tide_archive_oid_filter(names[k], a->prefix, id);
            batch[k] = names[k];
            if (++k == DELETE_BATCH || i == total - 1) {
                rc = tide_rados_remove_batch(r, batch, k);
                k = 0;
            }
        }
    }
    if (rc) {
        tide_archive_catalog_clear(&next);
        return ti_archive_failed(a, TIDE_ARCHIVE_OP_DELETE, rc);
    }
    tide_archive_catalog_remove(&next, id);
    if ((rc = commit_catalog(a, &next)) != 0) return rc;
    pthread_mutex_lock(&a->mu);
    a->deleted_generations++;
    tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_DELETE], tide_clock_mono_ns() - t0);
    pthread_mutex_unlock(&a->mu);
    tide_log(TIDE_LOG_INFO, "archive: generation %" PRIu64 " deleted from the archive "
             "(archive_keep %u)", id, a->o.keep);
    return 0;
}

/* Step 5: the oldest sealed generations beyond keep that the node no
 * longer holds, and any left half deleted. */
static int retention(tide_archive *a, uint64_t oldest_local)
{
    int rc = 0;

    while (rc == 0 && !__atomic_load_n(&a->closing, __ATOMIC_RELAXED)) {
        uint64_t victim = 0;
        unsigned sealed = 0;

        pthread_mutex_lock(&a->mu);
        for (unsigned i = a->cat.count; i-- > 0 && victim == 0;)      /* oldest first */
            if (a->cat.gens[i].state == TIDE_ARCHIVE_DELETING) victim = a->cat.gens[i].id;
        for (unsigned i = 0; i < a->cat.count && victim == 0 && a->o.keep > 0; i++) {
            const tide_archive_gen *g = &a->cat.gens[i];
            if (g->state != TIDE_ARCHIVE_SEALED || ++sealed <= a->o.keep) continue;
            if (g->id < oldest_local) {
                /* The oldest sealed one the node no longer holds. */
                for (unsigned j = a->cat.count; j-- > i && victim == 0;)
                    if (a->cat.gens[j].state == TIDE_ARCHIVE_SEALED && a->cat.gens[j].id < oldest_local)
                        victim = a->cat.gens[j].id;
            }
        }
        pthread_mutex_unlock(&a->mu);
        if (victim == 0) break;
        rc = delete_generation(a, victim);
    }
    return rc;
}

/* One pass of a primary (the essay's steps, oldest generation first). */
static int primary_pass(tide_archive *a)
{
    tide_gens_info gi;
    int rc = 0;

    tide_gens_get_info(a->o.gens, &gi);
    a->local_keep = gi.keep;
    for (unsigned i = gi.count; i-- > 0 && rc == 0 && !__atomic_load_n(&a->closing, __ATOMIC_RELAXED);)
        rc = pass_gen(a, &gi.gens[i]);
    /* Forget the generations the node has dropped. */
    pthread_mutex_lock(&a->mu);
    unsigned kept = 0;
    for (unsigned i = 0; i < a->nlocals; i++) {
        arch_local *l = a->locals[i];
        int held = 0;
        for (unsigned j = 0; j < gi.count; j++) held |= gi.gens[j].id == l->id;
        if (held) {
            a->locals[kept++] = l;
        } else {
            free(l->dat.sums);
            free(l);
        }
    }
    a->nlocals = kept;
    pthread_mutex_unlock(&a->mu);
    if (rc == 0 && gi.count) rc = retention(a, gi.gens[gi.count - 1].id);
    return rc;
}

void *tide_archive_thread(void *arg)
{
    tide_archive *a = arg;
    unsigned backoff_ms = 0;

    for (;;) {
        unsigned wait_ms;
        struct timespec ts;
        uint64_t until;
        int rc = 0, loaded, conflict, up;

        pthread_mutex_lock(&a->mu);
        loaded = a->cat_loaded;
        conflict = a->conflict;
        up = a->up;
        pthread_mutex_unlock(&a->mu);
        if (__atomic_load_n(&a->closing, __ATOMIC_RELAXED)) break;
        if (ti_archive_rados(a) == NULL) {
            if ((rc = ti_archive_connect(a)) != 0) ti_archive_failed(a, TIDE_ARCHIVE_OPS, rc);
        } else if (!loaded || a->o.replica || !up) {
            /* A replica follows the manifest; a primary the cluster did
             * not answer reads it as a probe before it uploads again. */
            if ((rc = ti_archive_read_manifest(a)) != 0) ti_archive_failed(a, TIDE_ARCHIVE_OP_MANIFEST, rc);
        } else if (!conflict) {
            rc = primary_pass(a);
        }
        /* A conflict keeps its problem: nothing works while it lasts. */
        if (rc == 0 && ti_archive_rados(a) && !conflict) ti_archive_worked(a);
        backoff_ms = rc == 0 ? 0 : backoff_ms ? (backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2) : 250;
        wait_ms = rc ? backoff_ms : a->o.poll_ms;
        until = tide_clock_real_us() + (uint64_t)wait_ms * 1000;
        ts.tv_sec = (time_t)(until / 1000000);
        ts.tv_nsec = (long)(until % 1000000) * 1000;
        pthread_mutex_lock(&a->mu);
        /* A kick during a back-off waits the back-off out: a cluster that
         * is away is not asked more often because commits keep coming. */
        while ((rc || !a->kicked) && !a->closing &&
               pthread_cond_timedwait(&a->kick_cv, &a->mu, &ts) == 0)
            ;
        a->kicked = 0;
        pthread_mutex_unlock(&a->mu);
    }
    return NULL;
}
