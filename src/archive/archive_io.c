/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive_io.c: sealed archived generations as a read-only tide_io
 * (archive_io.h).
 *
 * Layout: the path's parse; the file calls (open, read_at, size, lock,
 * close); the refusals of everything that would change a file; the table.
 *
 * A file knows its generation, which of the two files it is, the file's
 * size and the chunk size, all fixed once sealed, so reading needs no
 * lock and no catalog: byte `off` of the file is byte off mod C of chunk
 * off / C.
 *
 * Invariants:
 *   1. Only sealed generations are files here: their objects never change
 *      until retention removes them, so a read either returns the file's
 *      bytes or fails; it never returns bytes of a half-written upload.
 *   2. A read returns exactly `len` bytes or an error: a chunk shorter
 *      than the catalog says is TIDE_ECORRUPT, naming the object; a chunk
 *      that is not there is TIDE_ENOENT (archive.c decides whether its
 *      generation was deleted under the read, or is damaged).
 *
 * Never: write, create or remove an object; those belong to the uploader.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive_io.h"
#include "archive/catalog.h"
#include "util/err.h"

struct tide_archive_io {
    tide_io                   io;      /* first: the tide_io's address is the handle's */
    tide_rados               *r;
    char                      prefix[TIDE_ARCHIVE_PREFIX_MAX + 1];
    tide_archive_io_lookup_fn lookup;
    void                     *arg;
};

struct tide_file {
    tide_archive_io *a;
    uint64_t id;
    int      is_key;             /* nudb.key, else nudb.dat */
    uint64_t bytes, chunk_bytes;
    char     path[];
};

typedef enum { NAME_NONE, NAME_DIR, NAME_DAT, NAME_KEY, NAME_OTHER } name_kind;

/* "rados:POOL/PREFIX/gen-ID[/FILE]": the id and what FILE is. */
static name_kind parse_path(const char *path, uint64_t *id)
{
    const char *g = strstr(path, "/gen-");
    const char *slash;
    char *end;

    if (strncmp(path, "rados:", 6) != 0 || g == NULL) return NAME_NONE;
    *id = strtoull(g + 5, &end, 10);
    if (end == g + 5 || *id == 0) return NAME_NONE;
    if (*end == '\0') return NAME_DIR;
    if (*end != '/') return NAME_NONE;
    slash = end + 1;
    if (strcmp(slash, "nudb.dat") == 0) return NAME_DAT;
    if (strcmp(slash, "nudb.key") == 0) return NAME_KEY;
    return NAME_OTHER;
}

static tide_archive_io *handle(tide_io *io)
{
    return (tide_archive_io *)io;
}

static int arch_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    tide_archive_io *a = handle(io);
    uint64_t id = 0, dat = 0, key = 0, chunk = 0;
    name_kind kind = parse_path(path, &id);
    tide_file *f;
    int rc;

    *out = NULL;
    if (flags & (TIDE_IO_WRITE | TIDE_IO_CREATE))
        return tide_err_set(TIDE_EIO, "%s: the archive is read-only here", path);
    if (kind == NAME_DIR) return tide_err_set(TIDE_ENOTSTORE, "%s: is a directory", path);
    if (kind != NAME_DAT && kind != NAME_KEY)
        return tide_err_set(TIDE_ENOENT, "%s: no such file in the archive", path);
    if ((rc = a->lookup(a->arg, id, &dat, &key, &chunk)) != 0)
        return tide_err_set(rc, "%s: generation %" PRIu64 " is not sealed in the archive", path, id);
    if ((f = calloc(1, sizeof *f + strlen(path) + 1)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "%s: out of memory", path);
    f->a = a;
    f->id = id;
    f->is_key = kind == NAME_KEY;
    f->bytes = f->is_key ? key : dat;
    f->chunk_bytes = chunk;
    strcpy(f->path, path);
    *out = f;
    return 0;
}

static void arch_close(tide_file *f)
{
    free(f);
}

static int arch_read_at(tide_file *f, void *buf, size_t len, uint64_t off)
{
    tide_archive_io *a = f->a;
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint8_t *p = buf;
    int rc;

    if (off > f->bytes || len > f->bytes - off)
        return tide_err_set(TIDE_ECORRUPT, "%s: short read: %zu bytes at offset %" PRIu64
                            " of a %" PRIu64 "-byte file", f->path, len, off, f->bytes);
    while (len > 0) {
        unsigned chunk = (unsigned)(off / f->chunk_bytes);
        uint64_t in = off % f->chunk_bytes;
        size_t n = len < f->chunk_bytes - in ? len : (size_t)(f->chunk_bytes - in);
        size_t got = 0;

        if (f->is_key) tide_archive_oid_key(oid, a->prefix, f->id, chunk);
        else tide_archive_oid_dat(oid, a->prefix, f->id, chunk);
        /* A missing object stays TIDE_ENOENT: retention may have deleted
         * the generation under the read (the caller tells that from a
         * damaged archive by the manifest). */
        if ((rc = tide_rados_read(a->r, oid, in, p, n, &got)) != 0)
            return tide_err_prefix(rc, "%s at offset %" PRIu64, f->path, off);
        if (got != n)                                       /* invariant 2 */
            return tide_err_set(TIDE_ECORRUPT, "%s: object %s holds %zu bytes at %" PRIu64
                                ", the catalog says %zu", f->path, oid, got, in, n);
        __atomic_fetch_add(&a->io.reads, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&a->io.bytes_read, n, __ATOMIC_RELAXED);
        p += n;
        off += n;
        len -= n;
    }
    return 0;
}

static int refuse(const char *what)
{
    return tide_err_set(TIDE_EIO, "the archive is read-only here: %s refused", what);
}

static int arch_write_at(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    (void)buf; (void)len; (void)off;
    return tide_err_set(TIDE_EIO, "%s: the archive is read-only here", f->path);
}

static int arch_sync(tide_file *f) { (void)f; return 0; }

static int arch_truncate(tide_file *f, uint64_t size)
{
    (void)size;
    return tide_err_set(TIDE_EIO, "%s: the archive is read-only here", f->path);
}

static int arch_size(tide_file *f, uint64_t *out)
{
    *out = f->bytes;
    return 0;
}

/* Nothing writes a sealed generation: every reader may read. */
static int arch_lock(tide_file *f, int exclusive)
{
    return exclusive ? tide_err_set(TIDE_EBUSY, "%s: the archive is read-only here", f->path) : 0;
}

static int arch_unlink(tide_io *io, const char *path) { (void)io; (void)path; return refuse("unlink"); }
static int arch_rename(tide_io *io, const char *from, const char *to)
{
    (void)io; (void)from; (void)to;
    return refuse("rename");
}
static int arch_sync_dir(tide_io *io, const char *dir) { (void)io; (void)dir; return 0; }
static int arch_mkdir(tide_io *io, const char *path) { (void)io; (void)path; return refuse("mkdir"); }
static int arch_rmdir(tide_io *io, const char *path) { (void)io; (void)path; return refuse("rmdir"); }

static int arch_stat(tide_io *io, const char *path, int *is_dir)
{
    tide_archive_io *a = handle(io);
    uint64_t id = 0, dat, key, chunk;
    name_kind kind = parse_path(path, &id);

    if (kind == NAME_NONE || kind == NAME_OTHER || a->lookup(a->arg, id, &dat, &key, &chunk) != 0)
        return tide_err_set(TIDE_ENOENT, "%s: no such file in the archive", path);
    if (is_dir) *is_dir = kind == NAME_DIR;
    return 0;
}

static int arch_list(tide_io *io, const char *dir, int (*fn)(void *, const char *, int), void *arg)
{
    int rc, is_dir = 0;

    if ((rc = arch_stat(io, dir, &is_dir)) != 0) return rc;
    if (!is_dir) return tide_err_set(TIDE_EIO, "%s: not a directory", dir);
    if ((rc = fn(arg, "nudb.dat", 0)) != 0) return rc;
    return fn(arg, "nudb.key", 0);
}

int tide_archive_io_new(tide_archive_io **out, tide_rados *r, const char *prefix,
                        tide_archive_io_lookup_fn lookup, void *arg)
{
    tide_archive_io *a = calloc(1, sizeof *a);

    *out = NULL;
    if (a == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    a->r = r;
    snprintf(a->prefix, sizeof a->prefix, "%s", prefix);
    a->lookup = lookup;
    a->arg = arg;
    a->io.open = arch_open;
    a->io.close = arch_close;
    a->io.read_at = arch_read_at;
    a->io.write_at = arch_write_at;
    a->io.sync = arch_sync;
    a->io.truncate = arch_truncate;
    a->io.size = arch_size;
    a->io.lock = arch_lock;
    a->io.unlink = arch_unlink;
    a->io.rename = arch_rename;
    a->io.sync_dir = arch_sync_dir;
    a->io.stat = arch_stat;
    a->io.mkdir = arch_mkdir;
    a->io.rmdir = arch_rmdir;
    a->io.list = arch_list;
    /* No holders, shares, maps or links: NULL says "cannot tell" or "not
     * supported", as io.h allows, and the store falls back to pread. */
    *out = a;
    return 0;
}

void tide_archive_io_free(tide_archive_io *a)
{
    free(a);
}

tide_io *tide_archive_io_io(tide_archive_io *a)
{
    return &a->io;
}

void tide_archive_io_dir(const tide_archive_io *a, uint64_t id, char *buf, size_t cap)
{
    snprintf(buf, cap, "rados:%s/%s/gen-%012" PRIu64, tide_rados_pool(a->r), a->prefix, id);
}
