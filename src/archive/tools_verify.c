/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tools_verify.c: `tide archive verify`, the archive checked against its
 * manifest (tools.h, tide_archive_tool_verify).
 *
 * A sealed generation is judged object by object: each chunk of nudb.dat
 * and nudb.key, and the filter, must be there with the size and XXH64 the
 * manifest recorded when it sealed it; the bytes are read whole, a piece
 * at a time, and summed as they come. The headers at the start of chunk 0
 * of each file are kept while it streams past, so that the uid, key size
 * and block size are checked against the manifest without a second read.
 * An open generation has no sums in the manifest: its chunks must be
 * contiguous from chunk 0, and a complete chunk whose tide.xxh64
 * attribute the uploader set must hold that sum. The deep check opens a
 * sealed generation whose objects all passed as a read-only store on
 * archive_io and runs the store's verify over it: that judges the bytes
 * as NuDB does (every bucket, every record), not merely as the uploader
 * wrote them.
 *
 * Invariants:
 *   1. Every problem is recorded with the name of the object it is about
 *      (or the generation's directory, for the deep check), and the check
 *      goes on to the next object: one run names every damaged object.
 *   2. A read that could not be made (the cluster did not answer) ends
 *      the check with that error: "not checked" is never "sound".
 *   3. Memory: one piece buffer (at most TI_TOOL_PIECE bytes) and the
 *      open generations' chunk lists.
 *
 * Never: write to the pool.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/tools_impl.h"
#include "util/err.h"

#define SUM_XATTR "tide.xxh64"

typedef struct vrun {
    tide_archive_tool *t;
    const tide_archive_verify_opts *o;
    tide_archive_verify *v;
    tide_archive_verify_gen *gen;   /* the generation being checked */
    uint8_t *buf;
    size_t cap;
    uint64_t done, total;           /* progress: the sealed generations' bytes */
    int counting;                   /* reading a sealed generation (progress counts it) */
    uint8_t head[TI_TOOL_KEY_HEADER];
    size_t head_len;
} vrun;

/* Invariant 1: a problem with `object`, kept among the first ones; the
 * first is also the call's message. */
static void problem(vrun *r, const char *object, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(vrun *r, const char *object, const char *fmt, ...)
{
    tide_archive_verify *v = r->v;
    va_list ap;

    if (v->problems < TIDE_ARCHIVE_PROBLEMS_MAX) {
        tide_archive_problem *p = &v->problem[v->problems];
        snprintf(p->object, sizeof p->object, "%s", object);
        va_start(ap, fmt);
        vsnprintf(p->what, sizeof p->what, fmt, ap);
        va_end(ap);
    }
    if (v->problems == 0)
        tide_err_set(TIDE_ECORRUPT, "%s: %s", v->problem[0].object, v->problem[0].what);
    v->problems++;
    if (r->gen) r->gen->problems++;
}

/* The sink of every read: the header of chunk 0 kept, progress told. */
static int sink(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
    vrun *r = arg;

    if (off < sizeof r->head) {
        size_t take = sizeof r->head - (size_t)off < n ? sizeof r->head - (size_t)off : n;
        memcpy(r->head + off, p, take);
        r->head_len = (size_t)off + take;
    }
    if (!r->counting) return 0;
    r->done += n;
    if (r->o->progress && r->total)
        r->o->progress(r->o->progress_arg, r->done < r->total ? r->done : r->total, r->total);
    return 0;
}

/* Read one object of a sealed generation whole: 1 when it is as the
 * manifest says, 0 for a problem (recorded), or an error (invariant 2). */
static int check_object(vrun *r, const char *oid, uint64_t size, uint64_t sum)
{
    uint64_t got_size = 0, got_sum = 0;
    int rc;

    r->head_len = 0;
    rc = ti_tool_read_object(r->t, oid, size, r->buf, r->cap, sink, r, &got_size, &got_sum);
    r->gen->objects += rc == 0;
    r->gen->bytes += got_size;
    r->v->objects += rc == 0;
    r->v->bytes += got_size;
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        problem(r, oid, "missing (the manifest names it: %" PRIu64 " bytes)", size);
        return 0;
    }
    if (rc == TIDE_ECORRUPT) {
        char why[320];
        snprintf(why, sizeof why, "%s", tide_last_error());
        tide_err_clear();
        problem(r, oid, "%s", why);
        return 0;
    }
    if (rc) return rc;
    if (got_sum != sum) {
        problem(r, oid, "XXH64 %016" PRIx64 " differs from the manifest's %016" PRIx64, got_sum,
                sum);
        return 0;
    }
    return 1;
}

/* The header kept from chunk 0 against the manifest's entry. */
static void check_header(vrun *r, const tide_archive_gen *g, const char *oid, int is_key,
                         uint64_t *uid)
{
    ti_tool_header h;
    char why[320];

    if (ti_tool_header_decode(r->head, r->head_len, is_key, oid, &h) != 0) {
        snprintf(why, sizeof why, "%s", tide_last_error());
        tide_err_clear();
        problem(r, oid, "%s", why);
        return;
    }
    if (h.uid != g->uid)
        problem(r, oid, "%s's uid %016" PRIx64 " is not the manifest's %016" PRIx64,
                is_key ? "nudb.key" : "nudb.dat", h.uid, g->uid);
    else if (h.key_size != g->key_size)
        problem(r, oid, "%s's key size %u is not the manifest's %u",
                is_key ? "nudb.key" : "nudb.dat", h.key_size, g->key_size);
    else if (is_key && h.block_size != g->block_size)
        problem(r, oid, "nudb.key's block size %u is not the manifest's %u", h.block_size,
                g->block_size);
    else if (is_key && uid && *uid != h.uid)
        problem(r, oid, "nudb.key's uid %016" PRIx64 " is not nudb.dat's %016" PRIx64, h.uid, *uid);
    if (uid && !is_key) *uid = h.uid;
}

/* Every chunk of one file of a sealed generation, chunk 0's header too. */
static int check_file(vrun *r, const tide_archive_gen *g, int is_key, uint64_t *uid)
{
    uint64_t bytes = is_key ? g->key_bytes : g->dat_bytes;
    unsigned chunks = is_key ? g->key_chunks : g->dat_chunks;
    const uint64_t *sums = is_key ? g->key_sums : g->dat_sums;
    char oid[TIDE_ARCHIVE_OID_CAP];
    int rc;

    for (unsigned c = 0; c < chunks; c++) {
        if (is_key) tide_archive_oid_key(oid, r->t->prefix, g->id, c);
        else tide_archive_oid_dat(oid, r->t->prefix, g->id, c);
        rc = check_object(r, oid, ti_tool_chunk_len(bytes, g->chunk_bytes, c), sums[c]);
        if (rc < 0) return rc;
        if (c == 0 && rc == 1) check_header(r, g, oid, is_key, uid);
    }
    return 0;
}

/* The store's own verify over archive_io (--deep). */
static void check_deep(vrun *r, const tide_archive_gen *g)
{
    char dir[256];

    tide_archive_io_dir(r->t->aio, g->id, dir, sizeof dir);
    r->gen->deep = 1;
    r->gen->deep_rc = tide_store_verify_io(dir, tide_archive_io_io(r->t->aio), &r->gen->report);
    if (r->gen->deep_rc) {
        char why[320];
        snprintf(why, sizeof why, "%s: %s", tide_strerror(r->gen->deep_rc), tide_last_error());
        tide_err_clear();
        problem(r, dir, "the store's verify: %s", why);
    }
}

static int check_sealed(vrun *r, const tide_archive_gen *g)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t uid = g->uid;
    int rc;

    if ((rc = check_file(r, g, 0, &uid)) != 0) return rc;
    if ((rc = check_file(r, g, 1, &uid)) != 0) return rc;
    if (g->filter_bytes) {
        tide_archive_oid_filter(oid, r->t->prefix, g->id);
        if ((rc = check_object(r, oid, g->filter_bytes, g->filter_sum)) < 0) return rc;
    }
    if (r->o->deep && r->gen->problems == 0) check_deep(r, g);
    return 0;
}

/* ---- open generations ---- */

/* One chunk of an open generation: complete ones against their attribute. */
static int check_open_chunk(vrun *r, const tide_archive_gen *g, unsigned c, int last)
{
    char oid[TIDE_ARCHIVE_OID_CAP], hex[32];
    uint64_t size = 0, sum = 0;
    int rc;

    tide_archive_oid_dat(oid, r->t->prefix, g->id, c);
    r->head_len = 0;
    rc = ti_tool_read_object(r->t, oid, UINT64_MAX, r->buf, r->cap, sink, r, &size, &sum);
    if (rc == TIDE_ENOENT) {                    /* removed since the listing */
        tide_err_clear();
        problem(r, oid, "listed, then missing when read");
        return 0;
    }
    if (rc) return rc;
    r->gen->objects++;
    r->gen->bytes += size;
    r->v->objects++;
    r->v->bytes += size;
    if (size > g->chunk_bytes || (!last && size < g->chunk_bytes))
        problem(r, oid, "%" PRIu64 " bytes: a chunk %s is %" PRIu64 " bytes", size,
                last ? "is at most" : "before the last", g->chunk_bytes);
    if (size == g->chunk_bytes &&
        tide_rados_getxattr(r->t->r, oid, SUM_XATTR, hex, sizeof hex) == 0 && strlen(hex) == 16 &&
        strtoull(hex, NULL, 16) != sum)
        problem(r, oid, "XXH64 %016" PRIx64 " differs from its tide.xxh64 attribute %s", sum, hex);
    tide_err_clear();
    if (c == 0 && size >= TI_TOOL_DAT_HEADER) check_header(r, g, oid, 0, NULL);
    return 0;
}

static int check_open(vrun *r, const tide_archive_gen *g)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    unsigned *chunks = NULL, n = 0;
    int rc;

    if ((rc = ti_tool_list_chunks(r->t, g->id, &chunks, &n)) != 0) return rc;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        if (chunks[i] != i) {                   /* a gap before it */
            tide_archive_oid_dat(oid, r->t->prefix, g->id, i);
            problem(r, oid, "missing, while chunk %u is there: the chunks are not contiguous",
                    chunks[i]);
            break;
        }
        rc = check_open_chunk(r, g, chunks[i], i + 1 == n);
    }
    free(chunks);
    return rc;
}

int tide_archive_tool_verify(tide_archive_tool *t, const tide_archive_verify_opts *opts,
                             tide_archive_verify *v)
{
    tide_archive_verify_opts none = { 0 };
    vrun r = { .t = t, .o = opts ? opts : &none, .v = v };
    int rc = 0;

    memset(v, 0, sizeof *v);
    if (!t->has_manifest)
        return tide_err_set(TIDE_ENOENT, "rados %s: no %s.manifest: nothing is archived under "
                            "prefix %s", t->pool, t->prefix, t->prefix);
    if ((v->gens = calloc(t->cat.count + 1, sizeof *v->gens)) == NULL ||
        (r.buf = malloc(TI_TOOL_PIECE)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "archive: out of memory");
        goto out;
    }
    r.cap = TI_TOOL_PIECE;
    for (unsigned i = 0; i < t->cat.count; i++)
        if (t->cat.gens[i].state == TIDE_ARCHIVE_SEALED)
            r.total += t->cat.gens[i].dat_bytes + t->cat.gens[i].key_bytes +
                       t->cat.gens[i].filter_bytes;
    tide_err_clear();
    for (unsigned i = 0; i < t->cat.count && rc == 0; i++) {
        const tide_archive_gen *g = &t->cat.gens[i];

        r.gen = &v->gens[v->count++];
        r.gen->id = g->id;
        r.gen->state = g->state;
        r.counting = g->state == TIDE_ARCHIVE_SEALED;
        if (g->state == TIDE_ARCHIVE_SEALED) rc = check_sealed(&r, g);
        else if (g->state == TIDE_ARCHIVE_OPEN) rc = check_open(&r, g);
    }
    if (rc == 0 && r.o->progress && r.total) r.o->progress(r.o->progress_arg, r.total, r.total);
    if (rc == 0 && v->problems) {
        rc = TIDE_ECORRUPT;
        tide_err_set(rc, "%s: %s%s", v->problem[0].object, v->problem[0].what,
                     v->problems > 1 ? " (and more)" : "");
    }
out:
    free(r.buf);
    return rc;
}

void tide_archive_verify_free(tide_archive_verify *v)
{
    free(v->gens);
    memset(v, 0, sizeof *v);
}
