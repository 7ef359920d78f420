/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.c: the archive handle (archive.h): its life, the reads of
 * sealed generations, and what it reports. The archiver thread, which
 * writes, lives in uploader.c.
 *
 * Reading an archived generation is reading a NuDB store: each sealed
 * generation a read needs is opened once as a read-only tide_store on
 * archive_io's file system, and tide_store_fetch finds the key in it, as
 * it would on a disk, each file read becoming a ranged read of one RADOS
 * object. What the archive adds is the choice of where to look: newest
 * first, and only where the generation's filter says the key may be.
 *
 * Filters are held within filter_budget bytes. A generation opened when
 * the budget is full takes the room of older generations' filters
 * (newest first is also the order reads look in, so the filters that are
 * kept are those of the generations asked first); one that still does not
 * fit has none, and every read that reaches it costs a bucket read.
 *
 * Invariants:
 *   1. filter_bytes == the sum of tide_archive_filter_bytes over the
 *      readers' filters, and <= filter_budget.
 *   2. A reader is freed only when it is gone from the catalog and no
 *      fetch holds it (refs 0): a retention that deletes a generation
 *      never closes a store under a read.
 *   3. Only sealed generations are opened for reads (archive_io's
 *      invariant 1).
 *
 *   4. An object missing under a read is a miss of that generation only
 *      when the manifest (a replica reads it again then) no longer calls
 *      the generation sealed: retention deleted it under the read.
 *      Otherwise it is damage, TIDE_ECORRUPT.
 *
 * Never: write to the pool from here; answer "absent" for a key a
 *   generation's read failed on (that is an error, not a miss), but for
 *   invariant 4's deleted generation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive_impl.h"
#include "mem/account.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

void tide_archive_opts_init(tide_archive_opts *o)
{
    memset(o, 0, sizeof *o);
    o->upload_account = -1;
    o->filter_account = -1;
}

const char *tide_archive_op_name(unsigned op)
{
    static const char *const names[TIDE_ARCHIVE_OPS] = { "write", "read", "seal", "manifest",
                                                         "delete" };
    return op < TIDE_ARCHIVE_OPS ? names[op] : "?";
}

tide_rados *ti_archive_rados(tide_archive *a)
{
    return __atomic_load_n(&a->r, __ATOMIC_ACQUIRE);
}

int ti_archive_failed(tide_archive *a, unsigned op, int rc)
{
    pthread_mutex_lock(&a->mu);
    switch (op) {
    case TIDE_ARCHIVE_OP_WRITE:
    case TIDE_ARCHIVE_OP_SEAL:     a->errors_write++; break;
    case TIDE_ARCHIVE_OP_READ:     a->errors_read++; break;
    case TIDE_ARCHIVE_OP_MANIFEST: a->errors_manifest++; break;
    case TIDE_ARCHIVE_OP_DELETE:   a->errors_delete++; break;
    default:                       a->errors_connect++; break;
    }
    if (rc == TIDE_EUNAVAIL) a->up = 0;
    snprintf(a->problem, sizeof a->problem, "%s", tide_last_error());
    pthread_mutex_unlock(&a->mu);
    return rc;
}

void ti_archive_worked(tide_archive *a)
{
    pthread_mutex_lock(&a->mu);
    a->up = ti_archive_rados(a) != NULL;
    a->problem[0] = '\0';
    pthread_mutex_unlock(&a->mu);
}

/* archive_io's question: a sealed generation's sizes. */
static int sealed_sizes(void *arg, uint64_t id, uint64_t *dat, uint64_t *key, uint64_t *chunk)
{
    tide_archive *a = arg;
    tide_archive_gen *g;
    int rc = TIDE_ENOENT;

    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, id);
    if (g && g->state == TIDE_ARCHIVE_SEALED) {         /* invariant 3 */
        *dat = g->dat_bytes;
        *key = g->key_bytes;
        *chunk = g->chunk_bytes;
        rc = 0;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int ti_archive_connect(tide_archive *a)
{
    tide_rados_opts ro = { a->o.conf, a->o.user, a->o.pool, a->o.timeout_s };
    tide_archive_io *aio = NULL;
    tide_rados *r = NULL;
    int rc;

    if ((rc = tide_rados_connect(&r, &ro)) != 0) return rc;
    if ((rc = tide_archive_io_new(&aio, r, a->prefix, sealed_sizes, a)) != 0) {
        tide_rados_close(r);
        return rc;
    }
    pthread_mutex_lock(&a->mu);
    __atomic_store_n(&a->aio, aio, __ATOMIC_RELEASE);   /* read without mu by reader_open */
    __atomic_store_n(&a->r, r, __ATOMIC_RELEASE);
    a->up = 1;
    a->problem[0] = '\0';
    pthread_mutex_unlock(&a->mu);
    tide_log(TIDE_LOG_INFO, "archive: connected to pool %s as client.%s (prefix %s)", a->pool,
             a->user, a->prefix);
    return 0;
}

static void copy_string(char *dst, size_t cap, const char *src, const char *dflt)
{
    snprintf(dst, cap, "%s", src && src[0] ? src : dflt);
}

static int check_opts(const tide_archive_opts *o)
{
    if (!tide_archive_prefix_valid(o->prefix))
        return tide_err_set(TIDE_EINVAL, "archive prefix \"%s\": expected 1 to %d characters of "
                            "A-Z a-z 0-9 _ -, not starting with -", o->prefix ? o->prefix : "",
                            TIDE_ARCHIVE_PREFIX_MAX);
    if (o->chunk_bytes && (o->chunk_bytes < TIDE_ARCHIVE_CHUNK_MIN ||
                           o->chunk_bytes > TIDE_ARCHIVE_CHUNK_MAX || o->chunk_bytes % 32768))
        return tide_err_set(TIDE_EINVAL, "archive chunk size %" PRIu64 ": expected a multiple of "
                            "32 KiB from 64 KiB to 128 MiB (RADOS' default object size limit)",
                            o->chunk_bytes);
    if (!o->replica && (o->gens == NULL || !tide_gens_enabled(o->gens)))
        return tide_err_set(TIDE_EINVAL, "the archive needs generations (online delete): a plain "
                            "store is never sealed, so it could never be dropped or restored whole; "
                            "turn online delete on (--online-delete N, or manual)");
    if (!o->replica && (o->data_dir == NULL || o->data_dir[0] == '\0'))
        return tide_err_set(TIDE_EINVAL, "the archive needs the node's data directory");
    if (o->filter_bits > 32)
        return tide_err_set(TIDE_EINVAL, "archive filter: %u bits per key: expected 1 to 32",
                            o->filter_bits);
    return 0;
}

int tide_archive_open(tide_archive **out, const tide_archive_opts *opts)
{
    tide_archive *a = NULL;
    char host[64] = "?";
    int rc;

    *out = NULL;
    if ((rc = check_opts(opts)) != 0) return rc;
    if ((a = calloc(1, sizeof *a)) == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    a->o = *opts;
    copy_string(a->conf, sizeof a->conf, opts->conf, "");
    copy_string(a->pool, sizeof a->pool, opts->pool, "tide");
    copy_string(a->prefix, sizeof a->prefix, opts->prefix, "");
    copy_string(a->user, sizeof a->user, opts->user, "admin");
    copy_string(a->data_dir, sizeof a->data_dir, opts->data_dir, "");
    a->o.conf = a->conf[0] ? a->conf : NULL;
    a->o.pool = a->pool;
    a->o.prefix = a->prefix;
    a->o.user = a->user;
    a->o.data_dir = a->data_dir;
    if (a->o.timeout_s == 0) a->o.timeout_s = 10;
    if (a->o.chunk_bytes == 0) a->o.chunk_bytes = TIDE_ARCHIVE_CHUNK_DEFAULT;
    if (a->o.inflight == 0) a->o.inflight = 4;
    if (a->o.piece_bytes == 0) a->o.piece_bytes = 1u << 20;
    if (a->o.piece_bytes > a->o.chunk_bytes) a->o.piece_bytes = a->o.chunk_bytes;
    a->o.piece_bytes = a->o.piece_bytes / 32768 * 32768;      /* whole key-file blocks */
    if (a->o.piece_bytes == 0) a->o.piece_bytes = 32768;
    if (a->o.filter_bits == 0) a->o.filter_bits = 10;
    if (a->o.poll_ms == 0) a->o.poll_ms = 1000;
    a->local_io = tide_io_posix();
    gethostname(host, sizeof host - 1);
    snprintf(a->writer, sizeof a->writer, "%s pid %d", host, (int)getpid());
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->open_mu, NULL);
    pthread_cond_init(&a->kick_cv, NULL);
    pthread_cond_init(&a->done_cv, NULL);
    tide_archive_catalog_init(&a->cat, a->prefix);

    /* A cluster that is away is no error: the thread connects later. */
    rc = ti_archive_connect(a);
    if (rc == TIDE_EUNAVAIL) {
        tide_log(TIDE_LOG_WARN, "archive: %s; the node goes on and connects when it answers",
                 tide_last_error());
        ti_archive_failed(a, TIDE_ARCHIVE_OPS, rc);
        tide_err_clear();
        rc = 0;
    }
    if (rc) goto out;
    if (ti_archive_rados(a) && (rc = ti_archive_read_manifest(a)) != 0) {
        if (rc != TIDE_EUNAVAIL) goto out;
        ti_archive_failed(a, TIDE_ARCHIVE_OP_MANIFEST, rc);
        tide_err_clear();
        rc = 0;
    }
    if (pthread_create(&a->thread, NULL, tide_archive_thread, a) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "archive: cannot start its thread");
        goto out;
    }
    a->thread_started = 1;
    *out = a;
    a = NULL;
out:
    tide_archive_close(a);
    return rc;
}

static void reader_free(tide_archive *a, arch_reader *rd)
{
    if (rd->s) tide_store_close(rd->s);
    if (rd->filter) {
        a->filter_bytes -= tide_archive_filter_bytes(rd->filter);
        tide_archive_filter_free(rd->filter);
    }
    free(rd);
}

void tide_archive_close(tide_archive *a)
{
    if (a == NULL) return;
    pthread_mutex_lock(&a->mu);
    __atomic_store_n(&a->closing, 1, __ATOMIC_RELAXED);   /* also read without mu (a seal's walk) */
    pthread_cond_broadcast(&a->kick_cv);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
    if (a->thread_started) pthread_join(a->thread, NULL);
    for (unsigned i = 0; i < a->nreaders; i++) reader_free(a, a->readers[i]);
    free(a->readers);
    for (unsigned i = 0; i < a->nlocals; i++) {
        free(a->locals[i]->dat.sums);
        free(a->locals[i]);
    }
    free(a->locals);
    for (unsigned i = 0; i < a->npieces; i++) free(a->pieces[i].buf);
    if (a->npieces && a->o.upload_account >= 0)
        tide_mem_account_free(a->o.upload_account, (int64_t)(a->npieces * a->o.piece_bytes));
    free(a->pieces);
    tide_archive_io_free(a->aio);
    tide_rados_close(a->r);
    tide_archive_catalog_clear(&a->cat);
    pthread_cond_destroy(&a->kick_cv);
    pthread_cond_destroy(&a->done_cv);
    pthread_mutex_destroy(&a->open_mu);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void tide_archive_kick(tide_archive *a)
{
    pthread_mutex_lock(&a->mu);
    a->kicked = 1;
    pthread_cond_signal(&a->kick_cv);
    pthread_mutex_unlock(&a->mu);
}

/* The local generation `id`'s uid (a primary's), or 0 when it holds none. */
static uint64_t local_uid(tide_archive *a, uint64_t id)
{
    tide_gens_info gi;

    if (a->o.replica || a->o.gens == NULL) return 0;
    tide_gens_get_info(a->o.gens, &gi);
    for (unsigned i = 0; i < gi.count; i++)
        if (gi.gens[i].id == id) return gi.gens[i].uid;
    return 0;
}

int tide_archive_sealed(tide_archive *a, uint64_t id)
{
    uint64_t uid = local_uid(a, id);
    tide_archive_gen *g;
    int sealed;

    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, id);
    /* Sealed means this node's generation: the same id of another store
     * (a prefix reused by a fresh directory) is not, and a node in
     * conflict trusts nothing the prefix says. */
    sealed = g && g->state == TIDE_ARCHIVE_SEALED && !a->conflict && (uid == 0 || g->uid == uid);
    pthread_mutex_unlock(&a->mu);
    return sealed;
}

static arch_local *local_find(tide_archive *a, uint64_t id)
{
    for (unsigned i = 0; i < a->nlocals; i++)
        if (a->locals[i]->id == id) return a->locals[i];
    return NULL;
}

int tide_archive_wait(tide_archive *a, uint64_t id, uint64_t bytes, unsigned timeout_ms)
{
    uint64_t deadline = tide_clock_real_us() + (uint64_t)timeout_ms * 1000;
    int rc = 0;

    pthread_mutex_lock(&a->mu);
    for (;;) {
        tide_archive_gen *g = tide_archive_catalog_find(&a->cat, id);
        arch_local *l = local_find(a, id);
        uint64_t now = tide_clock_real_us();
        struct timespec ts;

        if ((g && g->state == TIDE_ARCHIVE_SEALED) || (l && l->resumed && l->dat.uploaded >= bytes))
            break;
        if (a->closing) {
            rc = tide_err_set(TIDE_ECLOSED, "archive: closing");
            break;
        }
        if (now >= deadline) {
            rc = tide_err_set(TIDE_EUNAVAIL, "archive: generation %" PRIu64 " holds %" PRIu64
                              " of the %" PRIu64 " bytes this write needs after %u ms (%s)", id,
                              l && l->resumed ? l->dat.uploaded : 0, bytes, timeout_ms,
                              a->up ? "the cluster answers; uploads are behind"
                                    : a->problem[0] ? a->problem : "the cluster does not answer");
            break;
        }
        ts.tv_sec = (time_t)(deadline / 1000000);
        ts.tv_nsec = (long)(deadline % 1000000) * 1000;
        pthread_cond_timedwait(&a->done_cv, &a->mu, &ts);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* ---- reads ---- */

void ti_archive_readers_sync(tide_archive *a)
{
    unsigned kept = 0;

    for (unsigned i = 0; i < a->nreaders; i++) {
        arch_reader *rd = a->readers[i];
        tide_archive_gen *g = tide_archive_catalog_find(&a->cat, rd->id);

        if (!g || g->state != TIDE_ARCHIVE_SEALED) rd->gone = 1;
        if (rd->gone && rd->refs == 0) reader_free(a, rd);      /* invariant 2 */
        else a->readers[kept++] = rd;
    }
    a->nreaders = kept;
}

/* The reader of generation `id`, held (refs + 1), made when missing (mu held). */
static arch_reader *reader_hold(tide_archive *a, uint64_t id)
{
    arch_reader *rd;

    for (unsigned i = 0; i < a->nreaders; i++)
        if (a->readers[i]->id == id && !a->readers[i]->gone) {
            a->readers[i]->refs++;
            return a->readers[i];
        }
    if (a->nreaders == a->readers_cap) {
        unsigned cap = a->readers_cap ? a->readers_cap * 2 : 16;
        arch_reader **n = realloc(a->readers, cap * sizeof *n);
        if (n == NULL) return NULL;
        a->readers = n;
        a->readers_cap = cap;
    }
    if ((rd = calloc(1, sizeof *rd)) == NULL) return NULL;
    rd->id = id;
    rd->refs = 1;
    a->readers[a->nreaders++] = rd;
    return rd;
}

static void reader_release(tide_archive *a, arch_reader *rd)
{
    pthread_mutex_lock(&a->mu);
    TIDE_ASSERT(rd->refs > 0);
    rd->refs--;
    if (rd->gone && rd->refs == 0) ti_archive_readers_sync(a);
    pthread_mutex_unlock(&a->mu);
}

/* Room for `bytes` of filter (mu held): older generations' filters give
 * theirs up, oldest first. 1 when it fits now. */
static int filter_room(tide_archive *a, uint64_t id, uint64_t bytes)
{
    while (a->filter_bytes + bytes > a->o.filter_budget) {
        arch_reader *oldest = NULL;
        for (unsigned i = 0; i < a->nreaders; i++) {
            arch_reader *rd = a->readers[i];
            if (rd->filter && rd->id < id && (!oldest || rd->id < oldest->id)) oldest = rd;
        }
        if (oldest == NULL) return 0;
        a->filter_bytes -= tide_archive_filter_bytes(oldest->filter);
        tide_archive_filter_free(oldest->filter);
        oldest->filter = NULL;
        a->filters_dropped++;
    }
    return 1;
}

/* Download generation g's filter, when the budget has room (open_mu held). */
static void load_filter(tide_archive *a, arch_reader *rd, uint64_t bytes, uint64_t sum)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    tide_archive_filter *f = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    pthread_mutex_lock(&a->mu);
    rd->filter_tried = 1;
    rc = filter_room(a, rd->id, bytes) ? 0 : -1;
    if (rc) a->filters_dropped++;
    pthread_mutex_unlock(&a->mu);
    if (rc) return;
    tide_archive_oid_filter(oid, a->prefix, rd->id);
    rc = tide_rados_read_full(ti_archive_rados(a), oid, bytes, &buf, &len, NULL);
    if (rc == 0 && (len != bytes || XXH64(buf, len, 0) != sum))
        rc = tide_err_set(TIDE_ECORRUPT, "archive %s: %zu bytes whose XXH64 differs from the "
                          "manifest's (%" PRIu64 " bytes)", oid, len, bytes);
    if (rc == 0) rc = tide_archive_filter_load(&f, buf, len, oid, a->o.filter_account);
    free(buf);
    if (rc) {
        tide_log(TIDE_LOG_WARN, "archive: generation %" PRIu64 " is read without a filter: %s",
                 rd->id, tide_last_error());
        ti_archive_failed(a, TIDE_ARCHIVE_OP_READ, rc);
        return;
    }
    pthread_mutex_lock(&a->mu);
    if (filter_room(a, rd->id, tide_archive_filter_bytes(f))) {     /* invariant 1 */
        rd->filter = f;
        a->filter_bytes += tide_archive_filter_bytes(f);
        f = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    tide_archive_filter_free(f);
}

/* Open the reader's store (and its filter) when not yet open. */
static int reader_open(tide_archive *a, arch_reader *rd)
{
    tide_archive_io *aio;
    tide_store_opts so;
    char dir[256];
    uint64_t fbytes = 0, fsum = 0;
    tide_archive_gen *g;
    int rc = 0;

    pthread_mutex_lock(&a->open_mu);
    if (rd->s) goto out;
    if ((aio = __atomic_load_n(&a->aio, __ATOMIC_ACQUIRE)) == NULL) {
        rc = tide_err_set(TIDE_EUNAVAIL, "archive: not connected to the cluster yet");
        goto out;
    }
    tide_store_opts_init(&so);
    so.read_only = 1;
    so.pread = 1;
    so.io = tide_archive_io_io(aio);
    tide_archive_io_dir(aio, rd->id, dir, sizeof dir);
    if ((rc = tide_store_open(&rd->s, dir, &so)) != 0) goto out;
    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, rd->id);
    if (g) {
        fbytes = g->filter_bytes;
        fsum = g->filter_sum;
    }
    pthread_mutex_unlock(&a->mu);
    if (fbytes && a->o.filter_budget) load_filter(a, rd, fbytes, fsum);
out:
    pthread_mutex_unlock(&a->open_mu);
    return rc;
}

/*
 * An object of sealed generation `id` was missing under a read. Retention
 * deletes a generation's objects after the manifest stops calling it
 * sealed; a replica learns that only from the manifest, so it reads it now.
 * TIDE_ENOTFOUND when the generation is no longer sealed (the read goes on
 * to the next one: what retention deleted is absent); TIDE_ECORRUPT when it
 * still is (the archive is damaged: the message names the object); the
 * manifest read's errors.
 */
static int vanished(tide_archive *a, uint64_t id)
{
    char why[512];
    tide_archive_gen *g;
    int rc, sealed;

    snprintf(why, sizeof why, "%s", tide_last_error());
    if (a->o.replica && (rc = ti_archive_read_manifest(a)) != 0) return rc;
    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, id);
    sealed = g && g->state == TIDE_ARCHIVE_SEALED;
    pthread_mutex_unlock(&a->mu);
    if (!sealed) {
        tide_err_clear();
        return TIDE_ENOTFOUND;
    }
    return tide_err_set(TIDE_ECORRUPT, "%s (the manifest says generation %" PRIu64 " is sealed: an "
                        "object of it is missing)", why, id);
}

int tide_archive_fetch(tide_archive *a, uint64_t below_id, const void *key, size_t key_len,
                       void **out, size_t *len, uint64_t *gen_id)
{
    uint64_t hash = tide_archive_filter_hash(key, key_len), t0;
    uint64_t *ids = NULL;
    unsigned n = 0, asked = 0;      /* generations looked up through RADOS */
    int rc = TIDE_ENOTFOUND;

    *out = NULL;
    *len = 0;
    /* Not connected, or known away: answer at once rather than hold a
     * worker for timeout_s per generation; the archiver's probe says when
     * it answers again. */
    pthread_mutex_lock(&a->mu);
    if (ti_archive_rados(a) == NULL) {
        rc = tide_err_set(TIDE_EUNAVAIL, "archive: not connected to the cluster (%s)",
                          a->problem[0] ? a->problem : "connecting");
        a->reads_failed++;
    } else if (!a->up) {
        rc = tide_err_set(TIDE_EUNAVAIL, "archive: the cluster does not answer (%s)", a->problem);
        a->reads_failed++;
    }
    pthread_mutex_unlock(&a->mu);
    if (rc != TIDE_ENOTFOUND) return rc;
    pthread_mutex_lock(&a->mu);
    if ((ids = malloc((a->cat.count + 1) * sizeof *ids)) != NULL)
        for (unsigned i = 0; i < a->cat.count; i++) {
            const tide_archive_gen *g = &a->cat.gens[i];
            if (g->state != TIDE_ARCHIVE_SEALED || (below_id != 0 && g->id >= below_id)) continue;
            if (g->key_size != key_len) {
                rc = tide_err_set(TIDE_EKEYSIZE, "archive: a %zu-byte key, generation %" PRIu64
                                  " holds %u-byte keys", key_len, g->id, g->key_size);
                break;
            }
            ids[n++] = g->id;
        }
    pthread_mutex_unlock(&a->mu);
    if (ids == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    if (rc != TIDE_ENOTFOUND) {
        free(ids);
        return rc;
    }
    t0 = tide_clock_mono_ns();
    for (unsigned i = 0; i < n && rc == TIDE_ENOTFOUND; i++) {
        arch_reader *rd;
        int skip = 0;

        pthread_mutex_lock(&a->mu);
        rd = reader_hold(a, ids[i]);
        pthread_mutex_unlock(&a->mu);
        if (rd == NULL) {
            rc = tide_err_set(TIDE_ENOMEM, "archive: out of memory");
            break;
        }
        if ((rc = reader_open(a, rd)) == 0) {
            pthread_mutex_lock(&a->mu);
            if (rd->filter && !tide_archive_filter_may_hold(rd->filter, hash)) {
                skip = 1;
                a->reads_filtered++;
            }
            pthread_mutex_unlock(&a->mu);
            rc = skip ? TIDE_ENOTFOUND : tide_store_fetch(rd->s, key, out, len);
            if (rc == 0 && gen_id) *gen_id = ids[i];
        }
        asked += !skip;
        reader_release(a, rd);
        if (rc == TIDE_ENOENT) rc = vanished(a, ids[i]);
    }
    free(ids);
    pthread_mutex_lock(&a->mu);
    /* A RADOS operation only: a miss the filters (or the lack of any sealed
     * generation below below_id) answered in memory is not one. */
    if (asked) tide_hist_observe(&a->op[TIDE_ARCHIVE_OP_READ], tide_clock_mono_ns() - t0);
    if (rc == 0) a->reads_found++;
    else if (rc == TIDE_ENOTFOUND) a->reads_missed++;
    else a->reads_failed++;
    pthread_mutex_unlock(&a->mu);
    if (rc && rc != TIDE_ENOTFOUND) ti_archive_failed(a, TIDE_ARCHIVE_OP_READ, rc);
    return rc;
}

/* ---- information ---- */

void tide_archive_get_info(tide_archive *a, tide_archive_info *out)
{
    tide_gens_info gens, *gi = NULL;

    memset(out, 0, sizeof *out);
    if (!a->o.replica && a->o.gens) {
        tide_gens_get_info(a->o.gens, &gens);
        gi = &gens;
    }
    pthread_mutex_lock(&a->mu);
    out->up = a->up;
    out->replica = a->o.replica;
    snprintf(out->pool, sizeof out->pool, "%s", a->pool);
    snprintf(out->prefix, sizeof out->prefix, "%s", a->prefix);
    snprintf(out->problem, sizeof out->problem, "%s", a->problem);
    out->conflict = a->conflict;
    for (unsigned i = 0; i < a->cat.count; i++) {
        const tide_archive_gen *g = &a->cat.gens[i];
        out->archived_generations++;
        if (g->state != TIDE_ARCHIVE_SEALED) continue;
        out->sealed_generations++;
        out->archive_bytes += g->dat_bytes + g->key_bytes;
    }
    if (gi) {
        /* From the generations themselves, so a node that has not reached
         * the cluster since it started still counts what it owes. */
        for (unsigned i = 0; i < gi->count; i++) {
            const tide_gens_gen_info *e = &gi->gens[i];
            const tide_archive_gen *g = tide_archive_catalog_find(&a->cat, e->id);
            const arch_local *l = local_find(a, e->id);
            uint64_t there = l && l->resumed ? l->dat.uploaded : 0;

            if (g && g->state == TIDE_ARCHIVE_SEALED && g->uid == e->uid && !a->conflict) continue;
            if (e->dat_durable > there) out->lag_bytes += e->dat_durable - there;
            if (!e->writable) out->lag_bytes += e->key_file_bytes;
            if (out->oldest_unsealed == 0 || e->id < out->oldest_unsealed) out->oldest_unsealed = e->id;
        }
    }
    out->uploaded_bytes = a->uploaded_bytes;
    out->seals = a->seals;
    out->deleted_generations = a->deleted_generations;
    out->reads_found = a->reads_found;
    out->reads_missed = a->reads_missed;
    out->reads_filtered = a->reads_filtered;
    out->reads_failed = a->reads_failed;
    if (a->aio) {
        tide_io *io = tide_archive_io_io(a->aio);
        out->rados_reads = __atomic_load_n(&io->reads, __ATOMIC_RELAXED);
        out->rados_read_bytes = __atomic_load_n(&io->bytes_read, __ATOMIC_RELAXED);
    }
    out->errors_write = a->errors_write;
    out->errors_read = a->errors_read;
    out->errors_manifest = a->errors_manifest;
    out->errors_delete = a->errors_delete;
    out->errors_connect = a->errors_connect;
    out->filter_bytes = a->filter_bytes;
    for (unsigned i = 0; i < a->nreaders; i++) out->filters_held += a->readers[i]->filter != NULL;
    out->filters_dropped = a->filters_dropped;
    for (unsigned i = 0; i < a->npieces; i++)
        if (a->pieces[i].state == PIECE_FLYING) out->inflight_bytes += a->pieces[i].len;
    for (unsigned k = 0; k < TIDE_ARCHIVE_OPS; k++) {
        tide_hist h;
        tide_hist_snapshot(&a->op[k], &h);
        memcpy(out->op[k].bucket, h.bucket, sizeof out->op[k].bucket);
        out->op[k].sum_ns = h.sum_ns;
        out->op[k].count = h.count;
    }
    pthread_mutex_unlock(&a->mu);
}

uint64_t tide_archive_seal_epoch(tide_archive *a)
{
    return __atomic_load_n(&a->seal_epoch, __ATOMIC_SEQ_CST);
}

int tide_archive_catalog_snapshot(tide_archive *a, tide_archive_catalog *out)
{
    int rc;

    pthread_mutex_lock(&a->mu);
    rc = tide_archive_catalog_copy(out, &a->cat);
    pthread_mutex_unlock(&a->mu);
    return rc;
}

const char *tide_archive_gen_state(tide_archive *a, uint64_t id, uint64_t *uploaded)
{
    const char *state = "absent";
    tide_archive_gen *g;
    arch_local *l;

    *uploaded = 0;
    pthread_mutex_lock(&a->mu);
    g = tide_archive_catalog_find(&a->cat, id);
    l = local_find(a, id);
    if (g && g->state == TIDE_ARCHIVE_SEALED) {
        state = "sealed";
        *uploaded = g->dat_bytes + g->key_bytes;
    } else if (l && l->resumed && l->dat.uploaded > 0) {
        state = "uploading";
        *uploaded = l->dat.uploaded;
    } else if (l || g) {
        state = "waiting";
    }
    pthread_mutex_unlock(&a->mu);
    return state;
}
