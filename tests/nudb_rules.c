/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nudb_rules.c: NuDB's recovery and open checks, emulated byte by byte
 * from the rules in nudb_rules.h (written from the format specification
 * and NuDB's documented behaviour; none of NuDB's code).
 *
 * Headers are parsed here from raw bytes, not with Tide's decoders, so a
 * test never asks Tide whether Tide's own files pass.
 *
 * Invariants:
 *   1. Nothing is written unless `apply` is set and the verdict is
 *      TH_NUDB_RECOVERS, and then only what NuDB's recovery writes.
 *   2. The checks run in NuDB's order, so `why` names the first one NuDB
 *      would fail.
 *
 * Never: use Tide's format code to decide what NuDB accepts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "io/io.h"
#include "nudb_rules.h"

#define DAT_HDR 92
#define KEY_HDR 104
#define LOG_HDR 62

typedef struct hdr {
    char type[9];
    unsigned version, key_size, block_size, load_factor;
    uint64_t uid, appnum, salt, pepper, key_file_size, dat_file_size;
} hdr;

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static uint64_t pepper_of(uint64_t salt)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(salt >> (8 * i));
    return XXH64(le, sizeof le, salt);
}

/* The fields every header starts with; the key and log headers' salt,
 * pepper and block size; the log's sizes. */
static void parse(const uint8_t *b, size_t len, hdr *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->type, b, 8);
    h->version = (unsigned)be(b + 8, 2);
    h->uid = be(b + 10, 8);
    h->appnum = be(b + 18, 8);
    h->key_size = (unsigned)be(b + 26, 2);
    if (len < KEY_HDR && len != LOG_HDR) return;
    h->salt = be(b + 28, 8);
    h->pepper = be(b + 36, 8);
    h->block_size = (unsigned)be(b + 44, 2);
    if (len == LOG_HDR) {
        h->key_file_size = be(b + 46, 8);
        h->dat_file_size = be(b + 54, 8);
    } else {
        h->load_factor = (unsigned)be(b + 46, 2);
    }
}

static int refuse(th_nudb_result *res, const char *fmt, const char *what)
{
    res->verdict = TH_NUDB_REFUSES;
    snprintf(res->why, sizeof res->why, fmt, what);
    return 0;
}

/* Read `len` bytes at 0 of dir/name: 1 read, 0 the file is missing or
 * shorter (NuDB's short read), -1 an error. *size gets the file's size. */
static int read_head(tide_io *io, const char *dir, const char *name, uint8_t *buf, size_t len,
                     uint64_t *size)
{
    char path[4200];
    tide_file *f = NULL;
    int ok;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    *size = 0;
    if (io->open(io, path, TIDE_IO_READ, &f) != 0) return 0;
    ok = io->size(f, size) == 0 ? 1 : -1;
    if (ok == 1 && *size < len) ok = 0;
    if (ok == 1 && io->read_at(f, buf, len, 0) != 0) ok = -1;
    io->close(f);
    return ok;
}

/* verify(dat_file_header) */
static const char *dat_fault(const hdr *d)
{
    if (memcmp(d->type, "nudb.dat", 8) != 0) return "not a data file";
    if (d->version != 2) return "different version";
    if (d->key_size < 1) return "invalid key size";
    return NULL;
}

/* verify<Hasher>(key_file_header), with the computed capacity and buckets */
static const char *key_fault(const hdr *k, uint64_t key_size)
{
    uint64_t cap = k->block_size >= KEY_HDR ? (k->block_size - 8) / 18 : 0;
    uint64_t buckets = key_size > k->block_size && k->block_size ? (key_size - k->block_size) / k->block_size : 0;

    if (memcmp(k->type, "nudb.key", 8) != 0) return "not a key file";
    if (k->version != 2) return "different version";
    if (k->key_size < 1) return "invalid key size";
    if (k->pepper != pepper_of(k->salt)) return "hash mismatch";
    if (k->load_factor < 1) return "invalid load factor";
    if (cap < 1) return "invalid capacity";
    if (buckets < 1) return "invalid bucket count";
    return NULL;
}

/* verify(dat_file_header, key_file_header) after the key header's own */
static const char *dat_key_fault(const hdr *d, const hdr *k)
{
    if (k->uid != d->uid) return "uid mismatch";
    if (k->appnum != d->appnum) return "appnum mismatch";
    if (k->key_size != d->key_size) return "key size mismatch";
    return NULL;
}

/* verify<Hasher>(log_file_header) */
static const char *log_fault(const hdr *l)
{
    if (memcmp(l->type, "nudb.log", 8) != 0) return "not a log file";
    if (l->version != 2) return "different version";
    if (l->pepper != pepper_of(l->salt)) return "hash mismatch";
    if (l->key_size < 1) return "invalid key size";
    return NULL;
}

/* verify<Hasher>(key_file_header, log_file_header) after the log's own */
static const char *key_log_fault(const hdr *k, const hdr *l)
{
    if (k->uid != l->uid) return "uid mismatch";
    if (k->appnum != l->appnum) return "appnum mismatch";
    if (k->key_size != l->key_size) return "key size mismatch";
    if (k->salt != l->salt) return "salt mismatch";
    if (k->pepper != l->pepper) return "pepper mismatch";
    if (k->block_size != l->block_size) return "block size mismatch";
    return NULL;
}

static int cut(tide_io *io, const char *dir, const char *name, uint64_t size)
{
    char path[4200];
    tide_file *f = NULL;
    int rc;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((rc = io->open(io, path, TIDE_IO_WRITE, &f)) != 0) return rc;
    rc = io->truncate(f, size);
    if (rc == 0) rc = io->sync(f);
    io->close(f);
    return rc;
}

static int remove_file(tide_io *io, const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = io->unlink(io, path);
    return rc == 0 ? io->sync_dir(io, dir) : rc;
}

/* Step 6's writes: every complete record back as a whole block, then both
 * files cut, the log removed. */
static int roll_back(tide_io *io, const char *dir, const hdr *k, const hdr *l, uint64_t dat_size,
                     uint64_t key_size, th_nudb_result *res)
{
    char lpath[4200], kpath[4200];
    tide_file *lf = NULL, *kf = NULL;
    uint64_t log_size = 0, pos = LOG_HDR, buckets = (key_size - k->block_size) / k->block_size;
    uint64_t full = 8 + 18 * (uint64_t)((k->block_size - 8) / 18);
    uint8_t *block = calloc(1, k->block_size);
    int rc = -1;

    snprintf(lpath, sizeof lpath, "%s/nudb.log", dir);
    snprintf(kpath, sizeof kpath, "%s/nudb.key", dir);
    if (block == NULL || io->open(io, lpath, TIDE_IO_READ, &lf) || io->size(lf, &log_size) ||
        io->open(io, kpath, TIDE_IO_WRITE, &kf))
        goto out;
    while (pos + 8 + 8 <= log_size) {
        uint8_t head[16];
        if (io->read_at(lf, head, sizeof head, pos)) goto out;
        uint64_t n = be(head, 8), count = be(head + 8, 2), spill = be(head + 10, 6);
        uint64_t bytes = 8 + 18 * count;
        if (pos + 8 + bytes > log_size || bytes > k->block_size) break;   /* incomplete: done */
        if (spill && spill + full > dat_size) { refuse(res, "%s", "invalid spill in log"); goto out; }
        if (n > buckets) { refuse(res, "%s", "invalid index in log"); goto out; }
        memset(block, 0, k->block_size);
        if (io->read_at(lf, block, bytes, pos + 8)) goto out;
        if (io->write_at(kf, block, k->block_size, (n + 1) * k->block_size)) goto out;
        pos += 8 + bytes;
    }
    if (io->sync(kf) || cut(io, dir, "nudb.dat", l->dat_file_size) ||
        cut(io, dir, "nudb.key", l->key_file_size) || remove_file(io, dir, "nudb.log"))
        goto out;
    rc = 0;
out:
    if (lf) io->close(lf);
    if (kf) io->close(kf);
    free(block);
    return rc;
}

int th_nudb_recover(tide_io *io, const char *dir, int apply, th_nudb_result *res)
{
    uint8_t db[DAT_HDR], kb[KEY_HDR], lb[LOG_HDR];
    uint64_t dat_size, key_size, log_size;
    const char *f;
    hdr d, k, l;
    int ok;

    memset(res, 0, sizeof *res);
    if ((ok = read_head(io, dir, "nudb.dat", db, sizeof db, &dat_size)) <= 0)
        return ok < 0 ? -1 : refuse(res, "%s", "nudb.dat: short read");
    parse(db, sizeof db, &d);
    if ((f = dat_fault(&d)) != NULL) return refuse(res, "nudb.dat: %s", f);
    ok = read_head(io, dir, "nudb.key", kb, sizeof kb, &key_size);
    if (ok < 0) return -1;
    if (ok == 0 && key_size == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/nudb.key", dir);
        if (io->stat(io, path, NULL) != 0) return refuse(res, "%s", "nudb.key: no such file");
    }
    if ((ok = read_head(io, dir, "nudb.log", lb, sizeof lb, &log_size)) < 0) return -1;
    if (ok == 0) {
        res->verdict = TH_NUDB_CLEAN;
        return apply && log_size > 0 ? remove_file(io, dir, "nudb.log") : 0;
    }
    parse(lb, sizeof lb, &l);
    if ((f = log_fault(&l)) != NULL) return refuse(res, "nudb.log: %s", f);
    res->verdict = TH_NUDB_RECOVERS;
    res->dat_to = l.dat_file_size;
    if (l.key_file_size == 0) {
        res->removes_key = 1;
        if (!apply) return 0;
        if (cut(io, dir, "nudb.dat", l.dat_file_size)) return -1;
        if (remove_file(io, dir, "nudb.key")) return -1;
        return remove_file(io, dir, "nudb.log") ? -1 : 0;
    }
    if (ok == 0 || read_head(io, dir, "nudb.key", kb, sizeof kb, &key_size) <= 0)
        return refuse(res, "%s", "nudb.key: short read");
    parse(kb, sizeof kb, &k);
    if ((f = key_fault(&k, key_size)) != NULL || (f = dat_key_fault(&d, &k)) != NULL ||
        (f = key_log_fault(&k, &l)) != NULL)
        return refuse(res, "%s", f);
    res->key_to = l.key_file_size;
    return apply ? roll_back(io, dir, &k, &l, dat_size, key_size, res) : 0;
}

int th_nudb_opens(tide_io *io, const char *dir, char *why, size_t cap)
{
    uint8_t db[DAT_HDR], kb[KEY_HDR];
    uint64_t dat_size, key_size;
    const char *f;
    hdr d, k;
    int ok;

    if ((ok = read_head(io, dir, "nudb.dat", db, sizeof db, &dat_size)) <= 0) {
        snprintf(why, cap, "nudb.dat: short read");
        return ok;
    }
    if ((ok = read_head(io, dir, "nudb.key", kb, sizeof kb, &key_size)) <= 0) {
        snprintf(why, cap, "nudb.key: short read");
        return ok;
    }
    parse(db, sizeof db, &d);
    parse(kb, sizeof kb, &k);
    if ((f = dat_fault(&d)) != NULL || (f = key_fault(&k, key_size)) != NULL ||
        (f = dat_key_fault(&d, &k)) != NULL) {
        snprintf(why, cap, "%s", f);
        return 0;
    }
    return 1;
}
