/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tools_restore.c: `tide archive restore DIR`, a node's data directory
 * rebuilt from its archive (tools.h, tide_archive_tool_restore).
 *
 * The plan, from the manifest read at the session's open: keep K (the
 * manifest's, or the caller's), the newest open generation when it is
 * newer than every sealed one, and the newest sealed generations, K in
 * all. When the archive has no such open generation (the node's newest
 * was never listed, or the node was retired after a rotation), the
 * newest restored generation is a new empty one, id one above every id
 * the manifest knows: a sealed generation must not become the newest,
 * since the node would append to it and the archive, which holds it
 * sealed, would never take those records.
 *
 * The steps, each durable before the next:
 *   1. DIR is checked: empty, or missing with its parent there (anything
 *      else is refused before anything is changed); made when missing.
 *   2. Each sealed generation into gen-NNNNNNNNNNNN/: nudb.dat and
 *      nudb.key, chunk by chunk, each chunk summed as it is written and
 *      compared with the manifest's XXH64 at its end; both files synced,
 *      then the directory.
 *   3. The open generation: its data chunks, contiguous from chunk 0 (a
 *      complete chunk checked against its tide.xxh64 attribute when the
 *      uploader set it), concatenated into nudb.dat; the file walked
 *      record by record from its header and cut at the end of the last
 *      whole one; synced. Then the archive's copy is cut back to the same
 *      size (ti_archive_cut_dat, and every data chunk starting at or past
 *      the cut removed), because the next step appends spill records to
 *      the local file, and the node's uploader, resuming, must not find
 *      other bytes in the archive at those offsets. Then nudb.key is built
 *      from nudb.dat (tide_store_rekey_with, "built from nudb.dat alone",
 *      the manifest entry's block size): the data file keeps its bytes
 *      and its uid, so the archive's entry stays this generation's.
 *      With fewer bytes than nudb.dat's header archived, the generation is
 *      made empty with the entry's uid and salt, and the archive's copy is
 *      cut to nothing.
 *   4. A fresh generation, when the plan has one: an empty store.
 *   5. Every restored generation checked by tide_store_verify_io.
 *   6. DIR/tide.generations written (manifest.h: a temporary file,
 *      synced, renamed, DIR synced): keep K, the generations newest
 *      first, rotations = the newest id - 1 (ids start at 1 and each
 *      rotation adds one, so that is how many the node had made), and
 *      last_rotation_us the newest sealed generation's seal time (the
 *      rotation that made it read-only came just before), or now when a
 *      fresh generation was made (that is a rotation of its own).
 *
 * Crash behaviour: until step 6 DIR holds generation directories and no
 * tide.generations. A node refuses to start on that ("no
 * tide.generations but N generation directories"), and so does this
 * command (DIR is not empty): the operator removes DIR and runs it
 * again. (A lone gen-000000000001 is the one exception a node accepts,
 * as an adoption to resume: it opens it only when it is a whole store,
 * which before step 3's rekey it is not.) Step 3's cut of the archive is
 * made again, to the same size, by the next run. Restore is for a node
 * that is gone: a node still writing the prefix would upload past the
 * cut.
 *
 * Invariants:
 *   1. No byte reaches a restored file that was not checked, or is not
 *      checked before the generation is counted restored: a sealed chunk
 *      against the manifest as soon as it is whole, an open chunk against
 *      its attribute (when set) and the whole generation by the store's
 *      verify.
 *   2. tide.generations is written only after every generation it names
 *      is complete, synced and verified.
 *   3. The archive is cut only below bytes that are already the local
 *      file's, synced: what the archive keeps is byte for byte the start
 *      of the restored nudb.dat.
 *
 * Never: write into a DIR that held anything; cut a sealed generation.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive_impl.h"
#include "archive/tools_impl.h"
#include "store/format.h"
#include "util/clock.h"
#include "util/err.h"

#define SUM_XATTR "tide.xxh64"
#define PATH_CAP  (PATH_MAX + 64)

typedef struct rrun {
    tide_archive_tool *t;
    tide_archive_restore_opts o;
    tide_archive_restore *rep;
    const char *dir;
    uint8_t *buf;
    size_t cap;
    uint64_t done, total;               /* progress: bytes downloaded of those planned */
    const tide_archive_gen *sealed[TIDE_GEN_MAX];
    unsigned nsealed;
    const tide_archive_gen *open;       /* to restore, or NULL */
    uint64_t open_bytes;                /* its contiguous chunks' bytes */
    uint64_t fresh_id;                  /* 0: none */
    uint64_t appnum;                    /* the restored stores' (0 until one is read) */
    unsigned load_factor;               /* nudb.key's, raw; 0 until read */
    /* a download in progress */
    tide_file *f;
    uint64_t base;                      /* the chunk's offset in the file */
    ti_tool_header head;
    int head_is_key, head_read;
} rrun;

/* ---- the directory ---- */

static int first_entry(void *arg, const char *name, int is_dir)
{
    (void)is_dir;
    return tide_err_set(TIDE_EEXIST, "%s is not empty (it holds %s): restore writes only into "
                        "an empty or missing directory; nothing was changed", (const char *)arg,
                        name);
}

/* The directory `dir` is in ("a/b/" and "a/b": "a"; "b": "."; "/b": "/"). */
static void parent_of(const char *dir, char *parent)
{
    char *slash;

    snprintf(parent, PATH_CAP, "%s", dir);
    slash = strrchr(parent, '/');
    while (slash && slash > parent && slash[1] == '\0') {       /* a trailing slash */
        *slash = '\0';
        slash = strrchr(parent, '/');
    }
    if (slash == NULL) snprintf(parent, PATH_CAP, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
}

int tide_archive_restore_check_dir(tide_io *io, const char *dir)
{
    char parent[PATH_CAP];
    int is_dir = 0, rc;

    if (io == NULL) io = tide_io_posix();
    if (strlen(dir) >= PATH_MAX) return tide_err_set(TIDE_EINVAL, "%.64s...: path too long", dir);
    rc = io->stat(io, dir, &is_dir);
    if (rc == 0 && !is_dir)
        return tide_err_set(TIDE_ENOTSTORE, "%s is not a directory: restore writes into an empty "
                            "or missing directory; nothing was changed", dir);
    if (rc == 0) return io->list(io, dir, first_entry, (void *)dir);
    if (rc != TIDE_ENOENT) return rc;
    parent_of(dir, parent);
    rc = io->stat(io, parent, &is_dir);
    if (rc == 0 && is_dir) {
        tide_err_clear();
        return 0;
    }
    return tide_err_set(TIDE_ENOENT, "%s: its parent %s is not a directory there; nothing was "
                        "changed", dir, parent);
}

/* DIR/NAME[/FILE] into buf. */
static void path_of(const rrun *r, const char *name, const char *file, char *buf)
{
    snprintf(buf, PATH_CAP, "%s/%s%s%s", r->dir, name, file ? "/" : "", file ? file : "");
}

static int make_dir(rrun *r, const char *path, const char *parent)
{
    int rc = r->o.io->mkdir(r->o.io, path);

    if (rc == 0) rc = r->o.io->sync_dir(r->o.io, parent);
    return rc;
}

/* ---- the plan ---- */

static int plan(rrun *r)
{
    const tide_archive_catalog *c = &r->t->cat;
    unsigned keep = r->o.keep ? r->o.keep : c->keep ? c->keep : TIDE_GEN_MIN;
    uint64_t newest_sealed = 0;
    unsigned chunks;
    int rc;

    if (keep < TIDE_GEN_MIN || keep > TIDE_GEN_MAX)
        return tide_err_set(TIDE_EINVAL, "keep %u: expected %d to %d generations", keep,
                            TIDE_GEN_MIN, TIDE_GEN_MAX);
    r->rep->keep = keep;
    for (unsigned i = 0; i < c->count; i++)
        if (c->gens[i].state == TIDE_ARCHIVE_SEALED && c->gens[i].id > newest_sealed)
            newest_sealed = c->gens[i].id;
    for (unsigned i = 0; i < c->count; i++) {
        const tide_archive_gen *g = &c->gens[i];
        if (g->state == TIDE_ARCHIVE_OPEN && r->open == NULL && g->id > newest_sealed) r->open = g;
        else if (g->state == TIDE_ARCHIVE_OPEN && r->rep->left_open == 0) r->rep->left_open = g->id;
        else if (g->state != TIDE_ARCHIVE_SEALED) continue;
        else if (r->nsealed < keep - 1) r->sealed[r->nsealed++] = g;
        else r->rep->left_sealed++;
    }
    if (r->open == NULL && r->nsealed == 0)
        return tide_err_set(TIDE_ENOENT, "rados %s: %s.manifest lists no generation to restore",
                            r->t->pool, r->t->prefix);
    if (r->open == NULL) r->fresh_id = c->gens[0].id + 1;      /* newest first: the largest */
    for (unsigned i = 0; i < r->nsealed; i++)
        r->total += r->sealed[i]->dat_bytes + r->sealed[i]->key_bytes;
    if (r->open) {
        rc = ti_tool_extent(r->t, r->open->id, r->open->chunk_bytes, &chunks, &r->open_bytes);
        if (rc) return rc;
        r->total += r->open_bytes;
    }
    return 0;
}

/* ---- downloads ---- */

/* Each piece of a chunk into the local file, summed; the first bytes of
 * the file kept as its header. */
static int write_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
    rrun *r = arg;
    size_t hsize = r->head_is_key ? TI_TOOL_KEY_HEADER : TI_TOOL_DAT_HEADER;
    int rc;

    if ((rc = r->o.io->write_at(r->f, p, n, r->base + off)) != 0) return rc;
    if (r->base == 0 && off == 0 && n >= hsize) {
        r->head_read = ti_tool_header_decode(p, n, r->head_is_key, "", &r->head) == 0;
        tide_err_clear();
    }
    r->done += n;
    r->rep->downloaded_bytes += n;
    if (r->o.progress && r->total)
        r->o.progress(r->o.progress_arg, r->done < r->total ? r->done : r->total, r->total);
    return 0;
}

/* Chunk `oid` (`expect` bytes, UINT64_MAX: any) at `base` of the open
 * local file; *sum its XXH64. */
static int fetch_chunk(rrun *r, const char *oid, uint64_t base, uint64_t expect, uint64_t *size,
                       uint64_t *sum)
{
    int rc;

    r->base = base;
    rc = ti_tool_read_object(r->t, oid, expect, r->buf, r->cap, write_piece, r, size, sum);
    if (rc == TIDE_ENOENT) rc = tide_err_set(TIDE_ECORRUPT, "%s: missing from the archive", oid);
    return rc;
}

/* One file of a sealed generation, chunk by chunk against the manifest. */
static int fetch_sealed_file(rrun *r, const tide_archive_gen *g, int is_key, const char *path)
{
    unsigned chunks = is_key ? g->key_chunks : g->dat_chunks;
    uint64_t bytes = is_key ? g->key_bytes : g->dat_bytes;
    const uint64_t *sums = is_key ? g->key_sums : g->dat_sums;
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t size, sum;
    int rc;

    if ((rc = r->o.io->open(r->o.io, path, TIDE_IO_CREATE | TIDE_IO_EXCL, &r->f)) != 0) return rc;
    r->head_is_key = is_key;
    r->head_read = 0;
    for (unsigned c = 0; c < chunks && rc == 0; c++) {
        if (is_key) tide_archive_oid_key(oid, r->t->prefix, g->id, c);
        else tide_archive_oid_dat(oid, r->t->prefix, g->id, c);
        rc = fetch_chunk(r, oid, c * g->chunk_bytes, ti_tool_chunk_len(bytes, g->chunk_bytes, c),
                         &size, &sum);
        if (rc == 0 && sum != sums[c])                          /* invariant 1 */
            rc = tide_err_set(TIDE_ECORRUPT, "%s: XXH64 %016" PRIx64 " differs from the "
                              "manifest's %016" PRIx64 ": the archive's copy is damaged (tide "
                              "archive verify names every such object)", oid, sum, sums[c]);
    }
    if (rc == 0 && !r->head_read)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: its first bytes are no %s header", path,
                          is_key ? "nudb.key" : "nudb.dat");
    if (rc == 0 && r->head.uid != g->uid)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: uid %016" PRIx64 " is not the manifest's %016" PRIx64,
                          path, r->head.uid, g->uid);
    if (rc == 0) rc = r->o.io->sync(r->f);
    r->o.io->close(r->f);
    r->f = NULL;
    return rc;
}

static tide_archive_restore_gen *rep_gen(rrun *r, uint64_t id, int kind)
{
    tide_archive_restore_gen *e = &r->rep->gens[r->rep->count++];

    memset(e, 0, sizeof *e);
    e->id = id;
    e->kind = kind;
    tide_gen_dir_name(id, e->dir, sizeof e->dir);
    return e;
}

/* Step 2. */
static int restore_sealed(rrun *r, const tide_archive_gen *g)
{
    tide_archive_restore_gen *e = rep_gen(r, g->id, TIDE_ARCHIVE_RESTORED_SEALED);
    char gdir[PATH_CAP], path[PATH_CAP];
    int rc;

    path_of(r, e->dir, NULL, gdir);
    if ((rc = make_dir(r, gdir, r->dir)) != 0) return rc;
    path_of(r, e->dir, "nudb.dat", path);
    if ((rc = fetch_sealed_file(r, g, 0, path)) != 0) return rc;
    if (r->appnum == 0) r->appnum = r->head.appnum;
    path_of(r, e->dir, "nudb.key", path);
    if ((rc = fetch_sealed_file(r, g, 1, path)) != 0) return rc;
    if (r->load_factor == 0) r->load_factor = r->head.load_factor;
    e->archived_bytes = g->dat_bytes + g->key_bytes;
    e->dat_bytes = g->dat_bytes;
    e->key_bytes = g->key_bytes;
    return r->o.io->sync_dir(r->o.io, gdir);
}

/* ---- the open generation ---- */

/* The end of the last whole record of nudb.dat (`size` bytes, keys of
 * key_size bytes): data records (u48 size >= 1, key, value) and spill
 * records (u48 0, u16 n, n bytes) back to back after the header. */
static int last_whole(rrun *r, tide_file *f, uint64_t size, unsigned key_size, uint64_t *end)
{
    uint64_t off = TI_TOOL_DAT_HEADER, win = 0, win_len = 0;
    int rc;

    while (off < size) {
        uint64_t want = size - off < 8 ? size - off : 8, rec;
        const uint8_t *p;

        if (off < win || off + want > win + win_len) {
            win = off;
            win_len = size - off < r->cap ? size - off : r->cap;
            if ((rc = r->o.io->read_at(f, r->buf, (size_t)win_len, win)) != 0) return rc;
        }
        p = r->buf + (off - win);
        if (want < 6) break;
        rec = ti_get48(p);
        if (rec == 0 && want < 8) break;
        rec = rec ? TIDE_DAT_RECORD_HEADER + key_size + rec : TIDE_SPILL_HEADER + ti_get16(p + 6);
        if (rec > size - off) break;
        off += rec;
    }
    *end = off < size ? off : size;
    return 0;
}

/* The data chunks into nudb.dat: [0, *bytes) whole chunks as the pool
 * has them now (contiguous from chunk 0). */
static int fetch_open_dat(rrun *r, const tide_archive_gen *g, const char *path, uint64_t *bytes)
{
    char oid[TIDE_ARCHIVE_OID_CAP], hex[32];
    uint64_t size = 0, sum;
    int rc;

    *bytes = 0;
    if ((rc = r->o.io->open(r->o.io, path, TIDE_IO_CREATE | TIDE_IO_EXCL, &r->f)) != 0) return rc;
    r->head_is_key = 0;
    r->head_read = 0;
    for (unsigned c = 0; rc == 0 && *bytes < r->open_bytes; c++) {
        tide_archive_oid_dat(oid, r->t->prefix, g->id, c);
        rc = fetch_chunk(r, oid, *bytes, ti_tool_chunk_len(r->open_bytes, g->chunk_bytes, c),
                         &size, &sum);
        if (rc == 0 && size == g->chunk_bytes &&
            tide_rados_getxattr(r->t->r, oid, SUM_XATTR, hex, sizeof hex) == 0 &&
            strlen(hex) == 16 && strtoull(hex, NULL, 16) != sum)
            rc = tide_err_set(TIDE_ECORRUPT, "%s: XXH64 %016" PRIx64 " differs from its %s "
                              "attribute %s: the archive's copy is damaged", oid, sum, SUM_XATTR,
                              hex);
        if (rc == 0) {
            tide_err_clear();
            *bytes += size;
        }
    }
    if (rc) {
        r->o.io->close(r->f);
        r->f = NULL;
    }
    return rc;
}

/* Step 3's cut of the archive: back to `end`, and no data chunk starting
 * at or past it (invariant 3: called once the local file is synced). */
static int cut_archive(rrun *r, const tide_archive_gen *g, uint64_t archived, uint64_t end)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    unsigned *chunks = NULL, n = 0;
    int rc = 0;

    if (end < archived) {
        rc = ti_archive_cut_dat(r->t->r, r->t->prefix, g->id, g->chunk_bytes, end);
        r->rep->archive_cut = rc == 0;
        r->rep->archive_cut_from = archived;
        r->rep->archive_cut_to = end;
    }
    if (rc == 0) rc = ti_tool_list_chunks(r->t, g->id, &chunks, &n);
    for (unsigned i = 0; i < n && rc == 0; i++) {
        if ((uint64_t)chunks[i] * g->chunk_bytes < end) continue;
        tide_archive_oid_dat(oid, r->t->prefix, g->id, chunks[i]);
        if ((rc = tide_rados_remove(r->t->r, oid)) == 0) r->rep->strays_removed++;
    }
    free(chunks);
    if (rc) tide_err_prefix(rc, "cutting the archive's generation %" PRIu64 " back to %" PRIu64
                            " bytes", g->id, end);
    return rc;
}

/* The data file fetched, walked and cut (the first half of step 3). */
static int open_dat(rrun *r, const tide_archive_gen *g, tide_archive_restore_gen *e,
                    const char *path)
{
    uint64_t bytes = 0, end = 0;
    int rc;

    if ((rc = fetch_open_dat(r, g, path, &bytes)) != 0) return rc;
    if (!r->head_read || r->head.uid != g->uid || r->head.key_size != g->key_size)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: its first bytes are no nudb.dat header of the "
                          "manifest's uid %016" PRIx64 " and key size %u", path, g->uid,
                          g->key_size);
    if (rc == 0) rc = last_whole(r, r->f, bytes, g->key_size, &end);
    if (rc == 0 && end < bytes) rc = r->o.io->truncate(r->f, end);
    if (rc == 0) rc = r->o.io->sync(r->f);
    r->o.io->close(r->f);
    r->f = NULL;
    if (rc) return rc;
    if (r->appnum == 0) r->appnum = r->head.appnum;
    e->archived_bytes = bytes;
    e->cut_bytes = bytes - end;
    return cut_archive(r, g, bytes, end);
}

/* A store with no record, of the given uid and salt (0: random). */
static int create_empty(rrun *r, const char *gdir, uint64_t uid, uint64_t salt, unsigned key_size,
                        unsigned block_size)
{
    tide_store_create_opts co;

    tide_store_create_opts_init(&co);
    co.key_size = key_size;
    co.block_size = block_size;
    if (r->load_factor) co.load_factor = r->load_factor / 65536.0;
    co.appnum = r->appnum ? r->appnum : 1;
    co.uid = uid;
    co.salt = salt;
    co.io = r->o.io;
    return tide_store_create(gdir, &co);
}

/* Step 3. */
static int restore_open(rrun *r, const tide_archive_gen *g)
{
    tide_archive_restore_gen *e = rep_gen(r, g->id, TIDE_ARCHIVE_RESTORED_OPEN);
    char gdir[PATH_CAP], path[PATH_CAP];
    tide_rekey_report rk;
    tide_rekey_opts ro;
    int rc;

    path_of(r, e->dir, NULL, gdir);
    if ((rc = make_dir(r, gdir, r->dir)) != 0) return rc;
    if (r->open_bytes < TI_TOOL_DAT_HEADER) {       /* not even a header: made empty */
        e->cut_bytes = r->open_bytes;
        rc = create_empty(r, gdir, g->uid, g->salt, g->key_size, g->block_size);
        if (rc) return rc;
        return cut_archive(r, g, r->open_bytes, 0);
    }
    path_of(r, e->dir, "nudb.dat", path);
    if ((rc = open_dat(r, g, e, path)) != 0) return rc;
    tide_rekey_opts_init(&ro);
    ro.block_size = g->block_size;
    if (r->load_factor) ro.load_factor = r->load_factor / 65536.0;
    ro.io = r->o.io;
    memset(&rk, 0, sizeof rk);
    if ((rc = tide_store_rekey_with(gdir, &ro, &rk)) != 0)
        return tide_err_prefix(rc, "%s: building nudb.key from nudb.dat", gdir);
    if (rk.dat_rewritten)       /* a new uid: the archive's entry would be another store's */
        return tide_err_set(TIDE_EMISMATCH, "%s: building nudb.key rewrote nudb.dat (a new "
                            "uid): the archive's generation %" PRIu64 " would no longer be it",
                            gdir, g->id);
    return r->o.io->sync_dir(r->o.io, gdir);
}

/* Step 4. */
static int restore_fresh(rrun *r)
{
    tide_archive_restore_gen *e = rep_gen(r, r->fresh_id, TIDE_ARCHIVE_RESTORED_FRESH);
    const tide_archive_gen *like = r->sealed[0];
    char gdir[PATH_CAP];
    int rc;

    path_of(r, e->dir, NULL, gdir);
    if ((rc = make_dir(r, gdir, r->dir)) != 0) return rc;
    return create_empty(r, gdir, 0, 0, like->key_size, like->block_size);
}

/* ---- the end ---- */

/* Step 5: every generation through the store's verify, with its sizes. */
static int verify_all(rrun *r)
{
    char gdir[PATH_CAP];
    int rc;

    for (unsigned i = 0; i < r->rep->count; i++) {
        tide_archive_restore_gen *e = &r->rep->gens[i];
        path_of(r, e->dir, NULL, gdir);
        if ((rc = tide_store_verify_io(gdir, r->o.io, &e->report)) != 0)
            return tide_err_prefix(rc, "generation %" PRIu64 " restored in %s is not sound",
                                   e->id, gdir);
        e->dat_bytes = e->report.dat_file_bytes;
        e->key_bytes = e->report.key_file_bytes;
    }
    return 0;
}

/* Step 6 (invariant 2). */
static int write_manifest(rrun *r)
{
    tide_archive_restore *rep = r->rep;
    tide_gen_manifest m;
    int rc;

    memset(&m, 0, sizeof m);
    m.version = TIDE_GEN_FORMAT_VERSION;
    m.keep = rep->keep;
    m.count = rep->count;
    for (unsigned i = 0; i < rep->count; i++) {
        m.gens[i].id = rep->gens[i].id;
        memcpy(m.gens[i].dir, rep->gens[i].dir, sizeof m.gens[i].dir);
    }
    m.rotations = rep->rotations = m.gens[0].id - 1;
    m.last_rotation_us = rep->last_rotation_us =
        r->fresh_id ? tide_clock_real_us() : r->nsealed ? r->sealed[0]->sealed_unix_us : 0;
    if ((rc = tide_gen_manifest_check(&m)) != 0) return rc;
    return tide_gen_manifest_write(r->o.io, r->dir, &m);
}

/* The generations newest first in the report: the open or fresh one was
 * made last, so it moves to the front. */
static void newest_first(tide_archive_restore *rep)
{
    if (rep->count < 2) return;
    tide_archive_restore_gen last = rep->gens[rep->count - 1];
    memmove(&rep->gens[1], &rep->gens[0], (rep->count - 1) * sizeof rep->gens[0]);
    rep->gens[0] = last;
}

int tide_archive_tool_restore(tide_archive_tool *t, const char *dir,
                              const tide_archive_restore_opts *opts, tide_archive_restore *report)
{
    tide_archive_restore mine;
    rrun r = { .t = t, .dir = dir, .rep = report ? report : &mine };
    char parent[PATH_CAP];
    int rc;

    memset(r.rep, 0, sizeof *r.rep);
    if (opts) r.o = *opts;
    if (r.o.io == NULL) r.o.io = tide_io_posix();
    snprintf(r.rep->writer, sizeof r.rep->writer, "%s", t->cat.writer);
    r.rep->updated_unix_us = t->cat.updated_unix_us;
    if ((rc = tide_archive_restore_check_dir(r.o.io, dir)) != 0) return rc;     /* step 1 */
    if (!t->has_manifest)
        return tide_err_set(TIDE_ENOENT, "rados %s: no %s.manifest: nothing is archived under "
                            "prefix %s; nothing was changed", t->pool, t->prefix, t->prefix);
    if ((rc = plan(&r)) != 0) return rc;
    if ((r.buf = malloc(TI_TOOL_PIECE)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    r.cap = TI_TOOL_PIECE;
    parent_of(dir, parent);
    if (r.o.io->stat(r.o.io, dir, NULL) == TIDE_ENOENT && (rc = make_dir(&r, dir, parent)) != 0)
        goto out;
    tide_err_clear();
    for (unsigned i = 0; i < r.nsealed && rc == 0; i++) rc = restore_sealed(&r, r.sealed[i]);
    if (rc == 0) rc = r.open ? restore_open(&r, r.open) : restore_fresh(&r);
    if (rc == 0) newest_first(r.rep);
    if (rc == 0) rc = verify_all(&r);
    if (rc == 0) rc = write_manifest(&r);
out:
    free(r.buf);
    return rc;
}
