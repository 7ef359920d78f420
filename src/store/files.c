/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * files.c: a store's files on disk, without a handle: where they are,
 * whether a directory holds a store, their headers; tide_store_create,
 * which makes them, and tide_store_inspect, which reads them. The open
 * (open.c) makes the same checks before it trusts anything in the files.
 *
 * Layout: paths (ti_path_join, ti_store_paths); the directory's checks
 * (check_dir, check_links: a store's files are files in its directory;
 * ti_store_check_files: nudb.dat and nudb.key both there); nudb.log's size
 * (ti_store_log_needs_recovery); create; the headers
 * (ti_store_read_headers: both decoded and checked against each other,
 * the key file a whole number of blocks); the info a header gives;
 * inspect.
 *
 * Invariants:
 *   1. Nothing here holds a handle or a lock of the store's own but the
 *      readers' hold that inspect takes (live.c): a writer may run beside
 *      inspect, which then reads the files as they are.
 *   2. Create makes nudb.dat and nudb.key with O_EXCL and unlinks what it
 *      made when it fails (the unlinks made durable too), so a failed
 *      create leaves the directory as it found it.
 *   3. A nudb.log that cannot be looked at is an error, never "no log":
 *      guessing would discard an undo log.
 *
 * Never: write a file of an existing store; follow a symbolic link out of
 *   the store's directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/err.h"
#include "util/log.h"
#include "util/random.h"

char *ti_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p == NULL) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

int ti_store_random_u64(uint64_t *v)
{
    int rc;
    do {
        rc = tide_random_bytes(v, sizeof *v);
    } while (rc == 0 && *v == 0);
    return rc;
}

static int check_dir(tide_io *io, const char *dir)
{
    int is_dir = 0;
    int rc = io->stat(io, dir, &is_dir);
    if (rc == TIDE_ENOENT) return tide_err_set(TIDE_ENOENT, "%s: no such directory", dir);
    if (rc) return rc;
    if (!is_dir) return tide_err_set(TIDE_ENOENT, "%s: not a directory", dir);
    return 0;
}

int ti_store_paths_make(const char *dir, ti_store_paths *p)
{
    p->dat = ti_path_join(dir, "nudb.dat");
    p->key = ti_path_join(dir, "nudb.key");
    p->log = ti_path_join(dir, "nudb.log");
    if (!p->dat || !p->key || !p->log) return tide_err_set(TIDE_ENOMEM, "out of memory");
    return 0;
}

void ti_store_paths_free(ti_store_paths *p)
{
    free(p->dat);
    free(p->key);
    free(p->log);
}

/* A store's files live in its directory: a symbolic link among them that
 * dangles, or leads out of the directory, is refused by name, since a
 * writer would create or change a file elsewhere through it (a nudb.log
 * linked into another store's directory, say). */
static int check_links(tide_io *io, const char *dir)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log", "tide.meta", "tide.live" };
    char path[4200], target[4096], *home = NULL, *slash;
    int dangling = 0, rc = 0;

    if (io->link == NULL) return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && rc == 0; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!io->link(io, path, target, sizeof target, &dangling)) continue;
        if (dangling) {
            rc = tide_err_set(TIDE_ENOENT, "%s is a symbolic link to %s, which does not exist: a "
                              "store's files are files in its directory; nothing was opened or "
                              "created", path, target);
            break;
        }
        if (home == NULL && (home = realpath(dir, NULL)) == NULL)
            return tide_err_sys(errno, "%s: realpath", dir);
        slash = strrchr(target, '/');
        if (slash && ((size_t)(slash - target) != strlen(home) || strncmp(target, home, strlen(home)) != 0))
            rc = tide_err_set(TIDE_EINVAL, "%s is a symbolic link to %s, outside the store's directory "
                              "%s: a writer would create or change files there through it; move the "
                              "file into the directory (or link the whole directory); nothing was "
                              "opened", path, target, home);
    }
    free(home);
    return rc;
}

/* Is there a store in `dir`? TIDE_ENOENT naming what is missing. */
int ti_store_check_files(tide_io *io, const char *dir, const ti_store_paths *p)
{
    int rc = check_dir(io, dir);
    if (rc) return rc;
    if ((rc = check_links(io, dir)) != 0) return rc;
    if (io->stat(io, p->dat, NULL) == TIDE_ENOENT) {
        if (io->stat(io, p->key, NULL) == 0)
            return tide_err_set(TIDE_ENOENT, "%s: nudb.dat is missing, but nudb.key is here: the "
                                "store's data is gone or moved; restore nudb.dat (a new store is "
                                "never made over a key file)", dir);
        return tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat is missing)", dir);
    }
    if (io->stat(io, p->key, NULL) == TIDE_ENOENT)
        return tide_err_set(TIDE_ENOENT, "%s: nudb.key is missing (an interrupted rekey? run "
                            "'tide rekey')", dir);
    return 0;
}

/* *needed = 1 when nudb.log exists with at least a header's worth of
 * bytes. Only a missing log means "no log": any other failure to look is
 * an error, because guessing "none" would then discard the undo log. */
int ti_store_log_needs_recovery(tide_io *io, const char *log_path, uint64_t *size, int *needed)
{
    tide_file *f = NULL;
    int rc;

    *size = 0;
    *needed = 0;
    rc = io->open(io, log_path, TIDE_IO_READ, &f);
    if (rc == TIDE_ENOENT) { tide_err_clear(); return 0; }
    if (rc) return rc;
    rc = io->size(f, size);
    io->close(f);
    if (rc) return rc;
    *needed = *size >= TIDE_LOG_HEADER_SIZE;
    return 0;
}

/* ---- create ---- */

int tide_store_create(const char *dir, const tide_store_create_opts *opts)
{
    tide_io *io = opts && opts->io ? opts->io : tide_io_posix();
    char *dat_path = NULL, *key_path = NULL;
    tide_file *dat = NULL, *key = NULL;
    int made_dat = 0, made_key = 0;
    uint8_t *block = NULL;
    tide_dat_header dh;
    tide_key_header kh;
    unsigned block_size;
    int rc;

    tide_err_clear();
    if (opts == NULL || opts->key_size < 1 || opts->key_size > 65535) {
        rc = tide_err_set(TIDE_EINVAL, "key size %u is not from 1 to 65535", opts ? opts->key_size : 0);
        goto out;
    }
    if (!(opts->load_factor > 0.0 && opts->load_factor <= 1.0)) {
        rc = tide_err_set(TIDE_EINVAL, "load factor %g is not in (0, 1]", opts->load_factor);
        goto out;
    }
    block_size = opts->block_size;
    if (!tide_block_size_valid(block_size)) {
        tide_log(TIDE_LOG_WARN, "block size '%u' is not a power of two from 4096 to 32768; using %u",
                 block_size, TIDE_BLOCK_SIZE_DEFAULT);
        block_size = TIDE_BLOCK_SIZE_DEFAULT;
    }
    rc = check_dir(io, dir);
    if (rc == 0) rc = check_links(io, dir);
    if (rc) goto out;
    dat_path = ti_path_join(dir, "nudb.dat");
    key_path = ti_path_join(dir, "nudb.key");
    block = calloc(2, block_size);
    if (!dat_path || !key_path || !block) { rc = tide_err_set(TIDE_ENOMEM, "create: out of memory"); goto out; }

    memset(&kh, 0, sizeof kh);
    kh.version = TIDE_FMT_VERSION;
    kh.key_size = (uint16_t)opts->key_size;
    kh.appnum = opts->appnum;
    kh.uid = opts->uid;
    kh.salt = opts->salt;
    if (kh.uid == 0 && (rc = ti_store_random_u64(&kh.uid)) != 0) goto out;
    if (kh.salt == 0 && (rc = ti_store_random_u64(&kh.salt)) != 0) goto out;
    kh.pepper = ti_fmt_pepper(kh.salt);
    kh.block_size = (uint16_t)block_size;
    kh.load_factor = ti_fmt_load_factor_raw(opts->load_factor);
    if (kh.load_factor == 0) kh.load_factor = 1;
    dh.version = kh.version;
    dh.uid = kh.uid;
    dh.appnum = kh.appnum;
    dh.key_size = kh.key_size;

    rc = io->open(io, dat_path, TIDE_IO_CREATE | TIDE_IO_EXCL, &dat);
    if (rc == TIDE_EEXIST) { rc = tide_err_set(TIDE_EEXIST, "%s: a store already exists here", dir); goto out; }
    if (rc) goto out;
    made_dat = 1;
    rc = io->open(io, key_path, TIDE_IO_CREATE | TIDE_IO_EXCL, &key);
    if (rc == TIDE_EEXIST) {
        rc = tide_err_set(TIDE_EEXIST, "%s: nudb.key is here but nudb.dat is missing: the store's data "
                          "is gone or moved; restore nudb.dat (a new store is never made over a key "
                          "file); nothing was created", dir);
        goto out;
    }
    if (rc) goto out;
    made_key = 1;

    {
        uint8_t hdr[TIDE_DAT_HEADER_SIZE];
        ti_fmt_encode_dat_header(hdr, &dh);
        rc = io->write_at(dat, hdr, sizeof hdr, 0);
        if (rc) goto out;
    }
    ti_fmt_encode_key_header(block, &kh);        /* block 0; block 1 is the empty bucket */
    rc = io->write_at(key, block, 2 * (size_t)block_size, 0);
    if (rc) goto out;
    if ((rc = io->sync(dat)) != 0) goto out;
    if ((rc = io->sync(key)) != 0) goto out;
    rc = io->sync_dir(io, dir);
out:
    if (dat) io->close(dat);
    if (key) io->close(key);
    if (rc) {
        /* Unlinks too need the directory synced, or a power loss may bring
         * an empty file back and block the next create. */
        if (made_dat) io->unlink(io, dat_path);
        if (made_key) io->unlink(io, key_path);
        if (made_dat || made_key) io->sync_dir(io, dir);
    }
    free(block);
    free(dat_path);
    free(key_path);
    return rc;
}

/* ---- the headers ---- */

int ti_store_read_headers(tide_io *io, tide_file *dat, tide_file *key, const char *dat_path,
                        const char *key_path, tide_key_header *kh, uint64_t *dat_size,
                        uint64_t *key_size)
{
    uint8_t dbuf[TIDE_DAT_HEADER_SIZE], kbuf[TIDE_KEY_HEADER_SIZE];
    tide_dat_header dh;
    int rc;

    if ((rc = io->size(dat, dat_size)) != 0) return rc;
    if ((rc = io->size(key, key_size)) != 0) return rc;
    if (*dat_size < TIDE_DAT_HEADER_SIZE)
        return tide_err_set(TIDE_ENOTSTORE, "%s: %llu bytes is shorter than the %d-byte header",
                            dat_path, (unsigned long long)*dat_size, TIDE_DAT_HEADER_SIZE);
    if (*key_size < TIDE_KEY_HEADER_SIZE)
        return tide_err_set(TIDE_ENOTSTORE, "%s: %llu bytes is shorter than the %d-byte header",
                            key_path, (unsigned long long)*key_size, TIDE_KEY_HEADER_SIZE);
    if ((rc = io->read_at(dat, dbuf, sizeof dbuf, 0)) != 0) return rc;
    if ((rc = io->read_at(key, kbuf, sizeof kbuf, 0)) != 0) return rc;
    if ((rc = ti_fmt_decode_dat_header(dbuf, &dh, dat_path)) != 0) return rc;
    if ((rc = ti_fmt_decode_key_header(kbuf, kh, key_path)) != 0) return rc;
    if ((rc = ti_fmt_check_key_dat(kh, &dh, key_path)) != 0) return rc;
    if (ti_fmt_capacity(kh->block_size) < 1)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 44: block size %u holds no entry",
                            key_path, kh->block_size);
    if (*key_size < 2 * (uint64_t)kh->block_size)
        return tide_err_set(TIDE_ECORRUPT,
                            "%s: %llu bytes hold no complete bucket: a key file of %u-byte blocks "
                            "is (buckets + 1) x %u bytes, at least %llu (an interrupted rebuild "
                            "leaves this; 'tide rekey' builds it again from nudb.dat)", key_path,
                            (unsigned long long)*key_size, kh->block_size, kh->block_size,
                            2 * (unsigned long long)kh->block_size);
    if (*key_size % kh->block_size != 0) {
        unsigned long long below = *key_size / kh->block_size * kh->block_size;
        return tide_err_set(TIDE_ECORRUPT,
                            "%s: %llu bytes is not (buckets + 1) x %u: expected %llu or %llu "
                            "bytes, a whole number of blocks; 'tide rekey' rebuilds nudb.key "
                            "from nudb.dat", key_path, (unsigned long long)*key_size,
                            kh->block_size, below, below + kh->block_size);
    }
    return 0;
}

/* ---- inspect ---- */

void ti_store_info_from_header(const tide_key_header *kh, tide_store_info *o)
{
    o->uid = kh->uid;
    o->appnum = kh->appnum;
    o->salt = kh->salt;
    o->pepper = kh->pepper;
    o->version = kh->version;
    o->key_size = kh->key_size;
    o->block_size = kh->block_size;
    o->load_factor_raw = kh->load_factor;
    o->load_factor = kh->load_factor / 65536.0;
    o->capacity = ti_fmt_capacity(kh->block_size);
}

int tide_store_inspect(const char *dir, tide_io *io, tide_store_info *o)
{
    ti_store_paths p = { 0 };
    tide_file *dat = NULL, *key = NULL, *log = NULL, *hold = NULL;
    tide_key_header kh;
    uint64_t dat_size = 0, key_size = 0, log_size = 0;
    int rc;

    tide_err_clear();
    memset(o, 0, sizeof *o);
    if (io == NULL) io = tide_io_posix();
    if ((rc = ti_store_paths_make(dir, &p)) != 0) goto out;
    /* The readers' hold (live.c): no rotation cuts the files under it. */
    if ((rc = ti_live_hold(io, dir, &hold, NULL)) != 0) goto out;
    if ((rc = ti_store_check_files(io, dir, &p)) != 0) goto out;
    if ((rc = io->open(io, p.dat, TIDE_IO_READ, &dat)) != 0) goto out;
    if ((rc = io->open(io, p.key, TIDE_IO_READ, &key)) != 0) goto out;
    rc = ti_store_read_headers(io, dat, key, p.dat, p.key, &kh, &dat_size, &key_size);
    if (rc) goto out;
    ti_store_info_from_header(&kh, o);
    o->buckets = key_size / kh.block_size - 1;
    o->dat_file_bytes = dat_size;
    o->key_file_bytes = key_size;
    rc = io->open(io, p.log, TIDE_IO_READ, &log);
    if (rc == TIDE_ENOENT) rc = 0;
    else if (rc == 0) rc = io->size(log, &log_size);
    if (rc) goto out;                   /* a log that cannot be read is not "no log" */
    o->log_file_bytes = log_size;
    o->needs_recovery = log_size >= TIDE_LOG_HEADER_SIZE;
    o->dat_indexed = o->dat_committed = dat_size;
    if (o->needs_recovery) {
        ti_idle_view v;
        if ((rc = ti_recover_idle_view(io, dir, 1, &v)) != 0) goto out;
        if (v.idle) {
            o->idle_log = 1;
            o->dat_indexed = v.W;
            o->dat_committed = v.C;
        }
        snprintf(o->not_idle_why, sizeof o->not_idle_why, "%s", v.why);
    }
    tide_err_clear();
out:
    if (hold && rc == TIDE_ENOENT) rc = ti_live_lost(io, dir, rc);
    if (dat) io->close(dat);
    if (key) io->close(key);
    if (log) io->close(log);
    if (hold) io->close(hold);
    ti_store_paths_free(&p);
    return rc;
}
