/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * make-seeds.c: the seed corpora of the fuzz targets, made from the NuDB
 * fixtures.
 *
 *     make fuzz-seeds      (= build/fuzz-seeds/make-seeds tests/fixtures/nudb fuzz/corpus)
 *
 * Every regular file in fuzz/corpus/<target>/ is replaced (the directory is
 * emptied first; inputs the fuzzer found live in build/fuzz/corpus/, and
 * crashers in fuzz/crashers/, neither of which this touches). The output is
 * deterministic: the same fixtures and library give the same bytes.
 *
 *   fuzz_headers      the first 92 / 104 / 62 bytes of every fixture's
 *                     nudb.dat, nudb.key and nudb.log (duplicates dropped).
 *   fuzz_bucket       the parameter block of fuzz_bucket.c plus a bucket of
 *                     each fixture (the first, the fullest) and a spill
 *                     record of b512-k32-spill, against the fixture's sizes.
 *   fuzz_store_image  small stores in store_run.c's format, a few KiB
 *                     each (an execution's cost grows with the image), each
 *                     followed by a read script:
 *                       - NuDB's headers of b512-k32-spill over an empty
 *                         table, then 40 of its records inserted by Tide
 *                         (sound; through the map and with pread), and
 *                         copies damaged one way each: nudb.dat cut in a
 *                         record, nudb.key cut by a block, a bucket count
 *                         over the capacity, an entry past the end, a record
 *                         size too large, nudb.key missing;
 *                       - that store after a commit of 8 more that failed
 *                         half way (a nudb.log a read-only open reads
 *                         around);
 *                       - b4096-k32's and b16384-k8's first records under a
 *                         key file of block size 4096 rebuilt by rekey;
 *                       - missing and empty files.
 *   fuzz_store_script whole small stores in store_run.c's format, each
 *                     followed by a script that writes:
 *                       - b4096-k32 cut to 3 buckets and 24 KiB of records
 *                         (a damaged store: entries point past the end);
 *                       - the first records of b4096-k32 with a key file
 *                         rebuilt by tide_store_rekey_with (a sound store);
 *                       - NuDB's own headers of b512-k32-spill and b16384-k8
 *                         over an empty table, then the fixture's first
 *                         records inserted by Tide in a few commits (sound,
 *                         with splits, and spill records for b512);
 *                       - that b512 store after a commit that failed at the
 *                         n-th I/O with its rollback failing too, so
 *                         nudb.log holds the pre-images for recovery;
 *                       - missing, empty and header-only files.
 *   fuzz_http         the server byte of fuzz_http.c and requests as a
 *                     client sends them: every endpoint, good and bad (keys
 *                     short, long, not hex, not UTF-8; queries repeated,
 *                     malformed, percent-encoded; unknown paths and methods;
 *                     bodies by length, by chunks, broken, too large;
 *                     pipelined, HTTP/1.0, Expect), on the three servers.
 * Each seed stays under 64 KiB; the whole corpus under 1 MiB.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_sim.h"
#include "store/format.h"
#include "store/full.h"
#include "util/log.h"

#define SEED_MAX (64u << 10)

static const char *fixtures_dir, *out_dir;
static unsigned seeds_written;
static size_t bytes_written;

static void die(const char *fmt, const char *a, int rc)
{
    fprintf(stderr, "make-seeds: ");
    fprintf(stderr, fmt, a);
    if (rc) fprintf(stderr, " (%s: %s)", tide_strerror(rc), tide_last_error());
    fprintf(stderr, "\n");
    exit(1);
}

/* ---- files ---- */

typedef struct buf {
    uint8_t *b;
    size_t len, cap;
} buf;

static void buf_put(buf *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n) cap *= 2;
        o->b = realloc(o->b, cap);
        if (o->b == NULL) die("out of memory%s", "", 0);
        o->cap = cap;
    }
    if (n) memcpy(o->b + o->len, p, n);
    o->len += n;
}

static void buf_be(buf *o, uint64_t v, unsigned n)
{
    uint8_t b[8];
    for (unsigned i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    buf_put(o, b, n);
}

static void buf_u8(buf *o, unsigned v) { buf_be(o, v, 1); }

static buf read_fixture(const char *fixture, const char *name, int must)
{
    char path[4096];
    buf o = { 0 };
    FILE *f;
    uint8_t chunk[65536];
    size_t n;

    snprintf(path, sizeof path, "%s/%s/%s", fixtures_dir, fixture, name);
    f = fopen(path, "rb");
    if (f == NULL) {
        if (must) die("cannot open %s", path, 0);
        return o;
    }
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(&o, chunk, n);
    fclose(f);
    return o;
}

/* Empty out_dir/target of regular files (and make it). */
static void reset_dir(const char *target)
{
    char path[4096];
    DIR *d;
    struct dirent *e;

    snprintf(path, sizeof path, "%s", out_dir);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s", out_dir, target);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) die("cannot make %s", path, 0);
    d = opendir(path);
    if (d == NULL) die("cannot read %s", path, 0);
    while ((e = readdir(d)) != NULL) {
        char f[4096 + 256];
        struct stat st;
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        if (stat(f, &st) == 0 && S_ISREG(st.st_mode)) unlink(f);
    }
    closedir(d);
}

static void write_seed(const char *target, const char *name, const void *p, size_t n)
{
    char path[4096];
    FILE *f;

    if (n > SEED_MAX) die("seed %s is over 64 KiB", name, 0);
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) die("cannot write %s", path, 0);
    seeds_written++;
    bytes_written += n;
}

/* ---- the data file's records ---- */

typedef struct record {
    uint64_t offset, size;     /* size: value bytes */
} record;

/* The first `max` data records of a data file (spill records skipped). */
static size_t records(const buf *dat, unsigned key_size, record *out, size_t max)
{
    uint64_t off = TIDE_DAT_HEADER_SIZE;
    size_t n = 0;

    while (n < max && off + 8 <= dat->len) {
        uint64_t size = ti_get48(dat->b + off);
        if (size == 0) {
            off += 8 + ti_get16(dat->b + off + 6);
            continue;
        }
        if (off + 6 + key_size + size > dat->len) break;
        out[n].offset = off;
        out[n].size = size;
        n++;
        off += 6 + key_size + size;
    }
    return n;
}

/* ---- fuzz_headers ---- */

static void header_seeds(void)
{
    static const char *fx[] = { "b4096-k32", "b512-k32-spill", "b16384-k8", "crash-b4096" };
    static const struct { const char *file; size_t len; } hs[] = {
        { "nudb.dat", TIDE_DAT_HEADER_SIZE }, { "nudb.key", TIDE_KEY_HEADER_SIZE },
        { "nudb.log", TIDE_LOG_HEADER_SIZE },
    };
    uint8_t seen[16][TIDE_KEY_HEADER_SIZE];
    size_t nseen = 0;

    reset_dir("fuzz_headers");
    for (size_t f = 0; f < sizeof fx / sizeof *fx; f++) {
        for (size_t h = 0; h < 3; h++) {
            buf b = read_fixture(fx[f], hs[h].file, h < 2);
            int dup = 0;
            char name[128];
            if (b.len < hs[h].len) { free(b.b); continue; }
            for (size_t k = 0; k < nseen; k++)
                if (memcmp(seen[k], b.b, hs[h].len) == 0) dup = 1;
            if (!dup) {
                memcpy(seen[nseen++], b.b, hs[h].len);
                snprintf(name, sizeof name, "%s-%s", fx[f], hs[h].file);
                write_seed("fuzz_headers", name, b.b, hs[h].len);
            }
            free(b.b);
        }
    }
}

/* ---- fuzz_bucket ---- */

static void bucket_seed(const char *name, unsigned block_size, uint64_t dat_size,
                        unsigned key_size, uint64_t buckets, const uint8_t *img, size_t len)
{
    buf o = { 0 };
    unsigned count = ti_fmt_bucket_count(img);
    uint64_t probe = 0;

    if (count > 0 && count <= ti_fmt_capacity(block_size)) {
        tide_entry e;
        ti_fmt_bucket_entry(img, count / 2, &e);
        probe = e.hash;
    }
    buf_be(&o, block_size, 2);
    buf_be(&o, dat_size, 8);
    buf_be(&o, key_size, 2);
    buf_be(&o, probe, 6);
    buf_be(&o, buckets ? buckets - 1 : 0, 6);
    buf_put(&o, img, len);
    write_seed("fuzz_bucket", name, o.b, o.len);
    free(o.b);
}

static void bucket_seeds(void)
{
    static const char *fx[] = { "b4096-k32", "b512-k32-spill", "b16384-k8" };

    reset_dir("fuzz_bucket");
    for (size_t f = 0; f < sizeof fx / sizeof *fx; f++) {
        buf key = read_fixture(fx[f], "nudb.key", 1);
        buf dat = read_fixture(fx[f], "nudb.dat", 1);
        unsigned bs = (unsigned)ti_get16(key.b + 44), ks = (unsigned)ti_get16(key.b + 26);
        uint64_t buckets = key.len / bs - 1, fullest = 0;
        char name[128];

        for (uint64_t i = 0; i < buckets; i++)
            if (ti_fmt_bucket_count(key.b + (i + 1) * bs) >
                ti_fmt_bucket_count(key.b + (fullest + 1) * bs))
                fullest = i;
        for (int which = 0; which < 2; which++) {
            uint64_t i = which ? fullest : 0;
            const uint8_t *b = key.b + (i + 1) * bs;
            snprintf(name, sizeof name, "%s-bucket-%llu", fx[f], (unsigned long long)i);
            bucket_seed(name, bs, dat.len, ks, buckets, b,
                        ti_fmt_bucket_bytes(ti_fmt_bucket_count(b)));
        }
        /* A spill record: the first chain a bucket starts. */
        for (uint64_t i = 0; i < buckets; i++) {
            uint64_t spill = ti_fmt_bucket_spill(key.b + (i + 1) * bs);
            size_t full = ti_fmt_bucket_bytes(ti_fmt_capacity(bs));
            if (spill == 0 || spill + full > dat.len) continue;
            snprintf(name, sizeof name, "%s-spill-of-bucket-%llu", fx[f], (unsigned long long)i);
            bucket_seed(name, bs, dat.len, ks, buckets, dat.b + spill, full);
            break;
        }
        if (f == 0) {
            /* An empty bucket, and one whose count is past the capacity. */
            uint8_t empty[8] = { 0 }, over[8] = { 0xff, 0xff, 0, 0, 0, 0, 0, 0 };
            bucket_seed("empty", bs, dat.len, ks, buckets, empty, sizeof empty);
            bucket_seed("count-over-capacity", bs, dat.len, ks, buckets, over, sizeof over);
        }
        free(key.b);
        free(dat.b);
    }
}

/* ---- fuzz_store_image and fuzz_store_script ---- */

/* The script mode's opcodes (store_run.c), and the read mode's. */
enum {
    OP_OPEN, OP_OPEN_RO, OP_FETCH, OP_INSERT, OP_SYNC, OP_CLOSE, OP_VERIFY, OP_RECOVER,
    OP_VISIT, OP_INSPECT, OP_INFO, OP_REKEY, OP_REOPEN
};
enum { RD_OPEN_RO, RD_FETCH, RD_CLOSE, RD_VERIFY, RD_VISIT, RD_INSPECT, RD_INFO };

/* Bits of the input's flags byte past the three files'. */
#define FLAG_BACKGROUND 8u
#define FLAG_MAP        16u

/* The files of a store, as the store targets take them. */
typedef struct image {
    buf f[3];        /* nudb.dat, nudb.key, nudb.log */
    int present[3];
} image;

static void image_free(image *im)
{
    for (int i = 0; i < 3; i++) free(im->f[i].b);
    memset(im, 0, sizeof *im);
}

/* A seed of `target`: `flags` (FLAG_*) and the files present, the three
 * lengths, the files, then the script. */
static void image_seed(const char *target, const char *name, const image *im, unsigned flags,
                       const uint8_t *script, size_t script_len)
{
    buf o = { 0 };

    for (int i = 0; i < 3; i++) if (im->present[i]) flags |= 1u << i;
    buf_u8(&o, flags);
    for (int i = 0; i < 3; i++) buf_be(&o, im->present[i] ? im->f[i].len : 0, 3);
    for (int i = 0; i < 3; i++) if (im->present[i]) buf_put(&o, im->f[i].b, im->f[i].len);
    buf_put(&o, script, script_len);
    write_seed(target, name, o.b, o.len);
    free(o.b);
}

/* The scripts of fuzz_store_script (the script mode's opcodes). */
static const uint8_t script_sound[] = {
    OP_VERIFY, OP_OPEN, OP_FETCH, 0x00, OP_FETCH, 0x05, OP_FETCH, 0xc0, 0x11,
    OP_INSERT, 0x40, 0x20, OP_INSERT, 0x41, 0xff, OP_INSERT, 0x00, 0x10,
    OP_FETCH, 0x60, OP_FETCH, 0x61, OP_SYNC, OP_INFO, OP_INSERT, 0x42, 0x01,
    OP_CLOSE, OP_VERIFY, OP_VISIT, OP_INSPECT, OP_REKEY, 0x01, OP_VERIFY,
    OP_OPEN_RO, OP_FETCH, 0x02, OP_FETCH, 0x60, OP_INSERT, 0x43, 0x05, OP_CLOSE,
    OP_RECOVER, OP_REOPEN, OP_INSERT, 0x44, 0x30, OP_FETCH, 0x60,
};
static const uint8_t script_damaged[] = {
    OP_RECOVER, OP_OPEN, OP_FETCH, 0x00, OP_FETCH, 0x07, OP_FETCH, 0x13,
    OP_INSERT, 0x50, 0x20, OP_SYNC, OP_FETCH, 0x60, OP_CLOSE, OP_VERIFY, OP_VISIT,
    OP_INSPECT, OP_OPEN_RO, OP_FETCH, 0x01, OP_CLOSE, OP_REKEY, 0x00, OP_VERIFY,
    OP_OPEN, OP_INSERT, 0x51, 0x08, OP_FETCH, 0x60, OP_CLOSE, OP_VERIFY,
};
static const uint8_t script_short[] = {
    OP_OPEN, OP_FETCH, 0x00, OP_INSERT, 0x60, 0x03, OP_CLOSE, OP_VERIFY, OP_VISIT,
    OP_RECOVER, OP_INSPECT,
};

/* The scripts of fuzz_store_image (the read mode's opcodes). Keys: 0x00 to
 * 0x5f name a key of the image, 0x60 to 0xbf a generated one, 0xc0 and up
 * the generated key of the next byte. */
static const uint8_t read_sound[] = {
    RD_VERIFY, RD_OPEN_RO, RD_FETCH, 0x00, RD_FETCH, 0x05, RD_FETCH, 0x3f, RD_FETCH, 0x70,
    RD_FETCH, 0xc0, 0x11, RD_INFO, RD_VISIT, RD_INSPECT, RD_CLOSE, RD_VERIFY, RD_OPEN_RO,
    RD_FETCH, 0x02, RD_FETCH, 0x61, RD_CLOSE, RD_VISIT,
};
static const uint8_t read_damaged[] = {
    RD_OPEN_RO, RD_FETCH, 0x00, RD_FETCH, 0x07, RD_FETCH, 0x13, RD_FETCH, 0x60, RD_INFO,
    RD_CLOSE, RD_VERIFY, RD_VISIT, RD_INSPECT, RD_OPEN_RO, RD_FETCH, 0x01, RD_CLOSE,
};

/* A sim holding `im` under "db". */
static tide_io_sim *sim_of(const image *im)
{
    static const char *names[3] = { "db/nudb.dat", "db/nudb.key", "db/nudb.log" };
    tide_io_sim *sim;
    int rc = tide_io_sim_create(&sim);

    if (rc) die("sim%s", "", rc);
    tide_io_sim_mkdir(sim, "db");
    for (int i = 0; i < 3; i++)
        if (im->present[i] && (rc = tide_io_sim_put_file(sim, names[i], im->f[i].b, im->f[i].len)))
            die("sim: put %s", names[i], rc);
    return sim;
}

/* The files of a sim under "db" (current images). */
static void image_of(tide_io_sim *sim, image *im)
{
    static const char *names[3] = { "db/nudb.dat", "db/nudb.key", "db/nudb.log" };
    for (int i = 0; i < 3; i++) {
        void *p;
        size_t n;
        im->present[i] = tide_io_sim_get_file(sim, names[i], &p, &n) == 0;
        if (im->present[i]) {
            im->f[i].b = p;
            im->f[i].len = im->f[i].cap = n;
        }
    }
}

static void must_verify(tide_io_sim *sim, const char *what)
{
    tide_verify_report vr;
    int rc = tide_store_verify_io("db", tide_io_sim_io(sim), &vr);
    if (rc) die("%s does not verify", what, rc);
}

/* A store with NuDB's headers of `fixture` over one empty bucket, then its
 * first `n` records inserted in `commits` commits. */
static void grown_store(const char *fixture, size_t n, unsigned commits, image *out)
{
    buf key = read_fixture(fixture, "nudb.key", 1);
    buf dat = read_fixture(fixture, "nudb.dat", 1);
    unsigned bs = (unsigned)ti_get16(key.b + 44), ks = (unsigned)ti_get16(key.b + 26);
    record *rec = calloc(n, sizeof *rec);
    image im = { 0 };
    tide_io_sim *sim;
    tide_store *s;
    tide_store_opts o;
    int rc;

    if (rec == NULL || records(&dat, ks, rec, n) != n) die("%s: too few records", fixture, 0);
    buf_put(&im.f[0], dat.b, TIDE_DAT_HEADER_SIZE);
    buf_put(&im.f[1], key.b, bs);
    {
        uint8_t *zero = calloc(1, bs);
        buf_put(&im.f[1], zero, bs);
        free(zero);
    }
    im.present[0] = im.present[1] = 1;
    sim = sim_of(&im);
    image_free(&im);

    tide_store_opts_init(&o);
    o.io = tide_io_sim_io(sim);
    o.commit_interval_ms = 3600u * 1000;   /* commits only at sync: deterministic */
    if ((rc = tide_store_open(&s, "db", &o)) != 0) die("%s: open", fixture, rc);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *r = dat.b + rec[i].offset;
        if ((rc = tide_store_insert(s, r + 6, r + 6 + ks, rec[i].size)) != 0)
            die("%s: insert", fixture, rc);
        if ((i + 1) % ((n + commits - 1) / commits) == 0 && (rc = tide_store_sync(s)) != 0)
            die("%s: sync", fixture, rc);
    }
    if ((rc = tide_store_close(s)) != 0) die("%s: close", fixture, rc);
    must_verify(sim, fixture);
    image_of(sim, out);
    tide_io_sim_destroy(sim);
    free(rec);
    free(key.b);
    free(dat.b);
}

/* The records of `fixture` in its first `dat_max` bytes of nudb.dat under
 * a key file of block size 4096 that rekey rebuilt (the fixture's own key
 * file header stands for the one rekey replaces). */
static void rekeyed_store(const char *fixture, size_t dat_max, image *out)
{
    buf key = read_fixture(fixture, "nudb.key", 1);
    buf dat = read_fixture(fixture, "nudb.dat", 1);
    unsigned bs = (unsigned)ti_get16(key.b + 44), ks = (unsigned)ti_get16(key.b + 26);
    record rec[1024];
    size_t n = records(&dat, ks, rec, 1024), keep = 0;
    image im = { 0 };
    tide_io_sim *sim;
    tide_rekey_opts o;
    int rc;

    while (keep < n && rec[keep].offset + 6 + ks + rec[keep].size <= dat_max) keep++;
    buf_put(&im.f[0], dat.b, keep ? rec[keep - 1].offset + 6 + ks + rec[keep - 1].size
                                  : TIDE_DAT_HEADER_SIZE);
    buf_put(&im.f[1], key.b, bs);
    {
        uint8_t *zero = calloc(1, bs);
        buf_put(&im.f[1], zero, bs);
        free(zero);
    }
    im.present[0] = im.present[1] = 1;
    sim = sim_of(&im);
    image_free(&im);
    tide_rekey_opts_init(&o);
    o.io = tide_io_sim_io(sim);
    o.block_size = 4096;
    if ((rc = tide_store_rekey_with("db", &o, NULL)) != 0) die("rekey of %s's records", fixture, rc);
    must_verify(sim, fixture);
    image_of(sim, out);
    tide_io_sim_destroy(sim);
    free(key.b);
    free(dat.b);
}

/* `base` after a commit of `extra` more records of `fixture` that failed at
 * its n-th I/O with every later call failing too: the rollback fails, the
 * store is broken, and nudb.log keeps the pre-images. Writes seeds for
 * failure points that leave a log with records, the first, middle and last
 * of them. */
static void crashed_seeds(const char *target, const char *fixture, const image *base,
                          size_t skip, size_t extra, const uint8_t *script, size_t script_len)
{
    buf dat = read_fixture(fixture, "nudb.dat", 1);
    unsigned ks = (unsigned)ti_get16(dat.b + 26);
    record *rec = calloc(skip + extra, sizeof *rec);
    image found[64];
    size_t nfound = 0;

    if (rec == NULL || records(&dat, ks, rec, skip + extra) != skip + extra)
        die("%s: too few records", fixture, 0);
    for (uint64_t n = 1; nfound < 64; n++) {
        tide_io_sim *sim = sim_of(base);
        tide_store *s;
        tide_store_opts o;
        image im = { 0 };
        int rc, failed;

        tide_store_opts_init(&o);
        o.io = tide_io_sim_io(sim);
        o.commit_interval_ms = 3600u * 1000;
        if ((rc = tide_store_open(&s, "db", &o)) != 0) die("%s: open", fixture, rc);
        for (size_t i = skip; i < skip + extra; i++) {
            const uint8_t *r = dat.b + rec[i].offset;
            if ((rc = tide_store_insert(s, r + 6, r + 6 + ks, rec[i].size)) != 0)
                die("%s: insert", fixture, rc);
        }
        tide_io_sim_fail_at(sim, n, TIDE_IO_SIM_EIO, 1);
        failed = tide_store_sync(s) != 0;
        tide_store_close(s);
        tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0);
        image_of(sim, &im);
        tide_io_sim_destroy(sim);
        if (!failed) { image_free(&im); break; }
        if (im.present[2] && im.f[2].len > TIDE_LOG_HEADER_SIZE) found[nfound++] = im;
        else image_free(&im);
    }
    if (nfound == 0) die("%s: no failure point leaves a log", fixture, 0);
    {
        size_t pick[3] = { 0, nfound / 2, nfound - 1 };
        for (size_t k = 0; k < 3; k++) {
            char name[128];
            if (k > 0 && pick[k] == pick[k - 1]) continue;
            snprintf(name, sizeof name, "%s-commit-failed-%zu-of-%zu", fixture, pick[k] + 1, nfound);
            image_seed(target, name, &found[pick[k]], 0, script, script_len);
        }
    }
    for (size_t k = 0; k < nfound; k++) image_free(&found[k]);
    free(rec);
    free(dat.b);
}

#define SCRIPT_SEED(name, im, flags, script) \
    image_seed("fuzz_store_script", name, im, flags, script, sizeof script)
#define READ_SEED(name, im, flags, script) \
    image_seed("fuzz_store_image", name, im, flags, script, sizeof script)

/* The first records of `fixture`'s nudb.dat, cut at the last whole record
 * before `dat_max` bytes, over its first `blocks` key-file blocks (the
 * header's included): a damaged store, entries pointing past the end. */
static void cut_store(const char *fixture, size_t dat_max, size_t blocks, image *out)
{
    buf key = read_fixture(fixture, "nudb.key", 1);
    buf dat = read_fixture(fixture, "nudb.dat", 1);
    unsigned bs = (unsigned)ti_get16(key.b + 44), ks = (unsigned)ti_get16(key.b + 26);
    record rec[1024];
    size_t n = records(&dat, ks, rec, 1024), keep = 0;

    while (keep < n && rec[keep].offset + 6 + ks + rec[keep].size <= dat_max) keep++;
    if (keep == 0 || key.len < blocks * bs) die("%s: too small to cut", fixture, 0);
    buf_put(&out->f[0], dat.b, rec[keep - 1].offset + 6 + ks + rec[keep - 1].size);
    buf_put(&out->f[1], key.b, blocks * bs);
    out->present[0] = out->present[1] = 1;
    free(key.b);
    free(dat.b);
}

/* fuzz_store_script: stores under 64 KiB and scripts that write. */
static void store_script_seeds(void)
{
    image im = { 0 };

    reset_dir("fuzz_store_script");

    /* b4096-k32 cut short: 3 buckets, 24 KiB of records. */
    cut_store("b4096-k32", 24u << 10, 4, &im);
    SCRIPT_SEED("b4096-k32-cut-to-3-buckets", &im, 0, script_damaged);
    image_free(&im);

    rekeyed_store("b4096-k32", 20u << 10, &im);
    SCRIPT_SEED("b4096-k32-records-rekeyed", &im, 0, script_sound);
    SCRIPT_SEED("b4096-k32-records-rekeyed-background", &im, FLAG_BACKGROUND, script_sound);
    image_free(&im);

    grown_store("b16384-k8", 200, 2, &im);
    SCRIPT_SEED("b16384-k8-grown", &im, 0, script_sound);
    image_free(&im);

    grown_store("b512-k32-spill", 300, 3, &im);
    SCRIPT_SEED("b512-k32-spill-grown", &im, 0, script_sound);
    SCRIPT_SEED("b512-k32-spill-grown-background", &im, FLAG_BACKGROUND, script_sound);
    {
        /* Only the data file: visit works, open does not. */
        image dat_only = { 0 };
        buf_put(&dat_only.f[0], im.f[0].b, im.f[0].len);
        dat_only.present[0] = 1;
        SCRIPT_SEED("b512-k32-spill-grown-dat-only", &dat_only, 0, script_short);
        /* A log shorter than its header. */
        buf_put(&dat_only.f[1], im.f[1].b, im.f[1].len);
        buf_put(&dat_only.f[2], "nudb.log", 8);
        dat_only.present[1] = dat_only.present[2] = 1;
        SCRIPT_SEED("b512-k32-spill-grown-partial-log", &dat_only, 0, script_short);
        image_free(&dat_only);
    }
    crashed_seeds("fuzz_store_script", "b512-k32-spill", &im, 300, 60, script_damaged,
                  sizeof script_damaged);
    image_free(&im);

    /* Files that are there but empty, and no files at all. */
    im.present[0] = im.present[1] = im.present[2] = 1;
    SCRIPT_SEED("empty-files", &im, 0, script_short);
    im.present[0] = im.present[1] = im.present[2] = 0;
    SCRIPT_SEED("no-files", &im, 0, script_short);
}

/* A copy of `im` with the byte at `off` of file `f` (0 nudb.dat, 1
 * nudb.key) turned into `v`, or the file cut to `off` bytes when v < 0. */
static void damaged_seed(const char *name, const image *im, int f, size_t off, int v)
{
    image d = { 0 };

    for (int i = 0; i < 3; i++) {
        d.present[i] = im->present[i];
        buf_put(&d.f[i], im->f[i].b, im->f[i].len);
    }
    if (v < 0) d.f[f].len = off;
    else d.f[f].b[off] = (uint8_t)v;
    READ_SEED(name, &d, FLAG_MAP, read_damaged);
    image_free(&d);
}

/* fuzz_store_image: small stores, a few KiB each (the corpus's size is
 * what an execution costs), sound and damaged, and read scripts. */
static void store_image_seeds(void)
{
    image im = { 0 }, empty = { 0 };

    reset_dir("fuzz_store_image");

    /* b512 grown by Tide from 40 of the fixture's records: splits and a
     * spill record, in about 4 KiB; read through the map and with pread. */
    grown_store("b512-k32-spill", 40, 2, &im);
    READ_SEED("b512-k32-grown", &im, FLAG_MAP, read_sound);
    READ_SEED("b512-k32-grown-pread", &im, 0, read_sound);
    damaged_seed("b512-k32-grown-dat-cut-in-a-record", &im, 0, im.f[0].len - 5, -1);
    damaged_seed("b512-k32-grown-key-cut-by-a-block", &im, 1, im.f[1].len - 512, -1);
    damaged_seed("b512-k32-grown-bucket-count-over", &im, 1, 512 + 1, 0xff);
    damaged_seed("b512-k32-grown-entry-offset-past-end", &im, 1, 512 + 8 + 2, 0x7f);
    damaged_seed("b512-k32-grown-record-size-over", &im, 0, TIDE_DAT_HEADER_SIZE + 3, 0x40);
    {
        /* Only the data file: visit works, open does not. */
        image dat_only = { 0 };
        buf_put(&dat_only.f[0], im.f[0].b, im.f[0].len);
        dat_only.present[0] = 1;
        READ_SEED("b512-k32-grown-dat-only", &dat_only, 0, read_damaged);
        image_free(&dat_only);
    }
    /* A commit of 8 more records that failed half way: nudb.log holds the
     * pre-images, and a read-only open reads around it. */
    crashed_seeds("fuzz_store_image", "b512-k32-spill", &im, 40, 8, read_sound, sizeof read_sound);
    image_free(&im);

    /* Block size 4096 with 32- and 8-byte keys: a header block and a few
     * buckets, the fewest the format allows at that size. */
    rekeyed_store("b4096-k32", 1200, &im);
    READ_SEED("b4096-k32-rekeyed", &im, FLAG_MAP, read_sound);
    image_free(&im);
    rekeyed_store("b16384-k8", 600, &im);
    READ_SEED("b4096-k8-rekeyed-pread", &im, 0, read_sound);
    image_free(&im);

    /* Files that are there but empty, and no files at all. */
    empty.present[0] = empty.present[1] = empty.present[2] = 1;
    READ_SEED("empty-files", &empty, FLAG_MAP, read_damaged);
    empty.present[0] = empty.present[1] = empty.present[2] = 0;
    READ_SEED("no-files", &empty, 0, read_damaged);
}

/* ---- fuzz_http ---- */

/* The hex of a key of `key_size` bytes, byte b = (seed + 7 * b) & 0xff,
 * cut to `digits` digits (padded with 'a' past the key's own). */
static const char *seed_key(unsigned key_size, unsigned seed, size_t digits)
{
    static char hex[2 * 300 + 64];
    static const char d[] = "0123456789abcdef";

    if (digits >= sizeof hex) digits = sizeof hex - 1;
    for (size_t i = 0; i < digits; i++) {
        unsigned byte = (seed + 7 * (unsigned)(i / 2)) & 0xff;
        hex[i] = i < 2 * (size_t)key_size ? d[i % 2 ? byte & 15 : byte >> 4] : 'a';
    }
    hex[digits] = '\0';
    return hex;
}

/* One seed: the server byte, then the request bytes (printf-formatted;
 * "%%" for a '%'). */
static void http_seed(const char *name, unsigned server, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void http_seed(const char *name, unsigned server, const char *fmt, ...)
{
    char text[16384];
    buf o = { 0 };
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof text) die("http seed %s is too long", name, 0);
    buf_u8(&o, server);
    buf_put(&o, text, (size_t)n);
    write_seed("fuzz_http", name, o.b, o.len);      /* counts its bytes */
    free(o.b);
}

#define H "Host: t\r\n"

static void http_seeds(void)
{
    char k32[65], k32b[65], k300[601], long_target[1200];

    reset_dir("fuzz_http");
    snprintf(k32, sizeof k32, "%s", seed_key(32, 1, 64));
    snprintf(k32b, sizeof k32b, "%s", seed_key(32, 2, 64));
    snprintf(k300, sizeof k300, "%s", seed_key(300, 3, 600));
    memset(long_target, 'a', sizeof long_target - 1);
    long_target[sizeof long_target - 1] = '\0';

    /* server 0: 32-byte keys, admin and metrics tokens */
    http_seed("healthz", 0, "GET /healthz HTTP/1.1\r\n" H "\r\n");
    http_seed("healthz-head-http10", 0, "HEAD /healthz HTTP/1.0\r\n\r\n");
    http_seed("put-get-head-pipelined", 0,
              "PUT /v1/objects/%s HTTP/1.1\r\n" H "Content-Length: 5\r\n\r\nhello"
              "GET /v1/objects/%s HTTP/1.1\r\n" H "\r\n"
              "HEAD /v1/objects/%s HTTP/1.1\r\n" H "\r\n", k32, k32, k32);
    http_seed("put-sync", 0, "PUT /v1/objects/%s?sync=1 HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc", k32b);
    http_seed("put-chunked", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
              "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", seed_key(32, 4, 64));
    http_seed("put-chunked-broken", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
              "zz\r\n", k32);
    http_seed("put-empty", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", k32);
    http_seed("put-too-large", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Content-Length: 5000\r\n\r\nxx", k32);
    http_seed("put-expect-continue", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Expect: 100-continue\r\n"
              "Content-Length: 2\r\n\r\nhi", seed_key(32, 5, 64));
    http_seed("put-expect-other", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Expect: wait\r\n"
              "Content-Length: 2\r\n\r\nhi", k32);
    http_seed("put-two-content-lengths", 0, "PUT /v1/objects/%s HTTP/1.1\r\n" H "Content-Length: 2\r\n"
              "Content-Length: 40\r\n\r\nhiGET /healthz HTTP/1.1\r\n\r\n", seed_key(32, 6, 64));
    http_seed("key-short", 0, "GET /v1/objects/%.63s HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("key-long", 0, "GET /v1/objects/%s0 HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("key-not-hex", 0, "GET /v1/objects/%.60sxyz0 HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("key-not-utf8", 0, "GET /v1/objects/%.62s\xc3\x28 HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("key-empty", 0, "GET /v1/objects/ HTTP/1.1\r\n" H "\r\n");
    http_seed("query-twice", 0, "PUT /v1/objects/%s?sync=1&sync=0 HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\nv", k32);
    http_seed("query-bad-value", 0, "PUT /v1/objects/%s?sync=2 HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\nv", k32);
    http_seed("query-percent", 0, "PUT /v1/objects/%s?sync=%%31 HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\nv", k32);
    http_seed("query-unknown", 0, "GET /v1/objects/%s?synch=1&x HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("query-empty-pieces", 0, "GET /v1/objects/%s?&&sync=1& HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("query-not-utf8", 0, "GET /healthz?\xff\xfe=1 HTTP/1.1\r\n" H "\r\n");
    http_seed("path-unknown", 0, "GET /v2/nothing HTTP/1.1\r\n" H "\r\n");
    http_seed("path-not-utf8", 0, "GET /caf\xc3\xa9/\xff HTTP/1.1\r\n" H "\r\n");
    http_seed("path-dot-dot", 0, "GET /v1/objects/../healthz HTTP/1.1\r\n" H "\r\n");
    http_seed("path-absolute-form", 0, "GET http://t/healthz HTTP/1.1\r\n" H "\r\n");
    http_seed("path-asterisk", 0, "OPTIONS * HTTP/1.1\r\n" H "\r\n");
    http_seed("target-too-long", 0, "GET /v1/objects/%s HTTP/1.1\r\n" H "\r\n", long_target);
    http_seed("method-not-allowed", 0, "DELETE /v1/objects/%s HTTP/1.1\r\n" H "\r\n"
              "FETCH /healthz HTTP/1.1\r\n" H "\r\n", k32);
    http_seed("method-not-token", 0, "G\xc9T /healthz HTTP/1.1\r\n" H "\r\n");
    http_seed("method-not-token-ascii", 0, "G(T /v1/status HTTP/1.1\r\n" H "\r\n");
    http_seed("status-sweeps", 0, "GET /v1/status HTTP/1.1\r\n" H "\r\nGET /v1/sweeps HTTP/1.1\r\n" H "\r\n");
    http_seed("metrics-bearer", 0, "GET /metrics HTTP/1.1\r\n" H "Authorization: Bearer fuzz-metrics-token\r\n\r\n");
    http_seed("metrics-header", 0, "HEAD /metrics HTTP/1.1\r\n" H "X-Metrics-Token: fuzz-metrics-token\r\n\r\n");
    http_seed("metrics-wrong", 0, "GET /metrics HTTP/1.1\r\n" H "Authorization: Bearer nope\r\n\r\n");
    http_seed("admin-sweep", 0, "POST /v1/admin/sweep HTTP/1.1\r\n" H "Authorization: Bearer fuzz-admin-token\r\n"
              "Content-Length: 0\r\n\r\n");
    http_seed("admin-sweep-no-token", 0, "POST /v1/admin/sweep HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n");
    http_seed("admin-sweep-query", 0, "POST /v1/admin/sweep?now HTTP/1.1\r\n" H
              "Authorization: Bearer fuzz-admin-token\r\nContent-Length: 0\r\n\r\n");
    http_seed("connection-close", 0, "GET /healthz HTTP/1.1\r\n" H "Connection: close\r\n\r\n"
              "GET /healthz HTTP/1.1\r\n" H "\r\n");
    http_seed("garbage", 0, "\x16\x03\x01\x02\x01\x01\xfc\x03\x03 tls");
    http_seed("incomplete", 0, "GET /healthz HTTP/1.1\r\nHost: t\r\n");

    /* server 1: 1-byte keys, no admin token, /metrics public */
    http_seed("k1-put-get", 1, "PUT /v1/objects/0a HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\nx"
              "GET /v1/objects/0A HTTP/1.1\r\n" H "\r\nHEAD /v1/objects/0a HTTP/1.1\r\n" H "\r\n");
    http_seed("k1-bad-keys", 1, "GET /v1/objects/0 HTTP/1.1\r\n" H "\r\nGET /v1/objects/0ab HTTP/1.1\r\n" H
              "\r\nGET /v1/objects/0abc HTTP/1.1\r\n" H "\r\n");
    http_seed("k1-metrics-public", 1, "GET /metrics HTTP/1.1\r\n" H "\r\n");
    http_seed("k1-admin-forbidden", 1, "POST /v1/admin/sweep HTTP/1.1\r\n" H
              "Authorization: Bearer fuzz-admin-token\r\nContent-Length: 0\r\n\r\n");

    /* server 2: 300-byte keys (a target limit over 1024) */
    http_seed("k300-put-sync-get-head", 2, "PUT /v1/objects/%s?sync=1 HTTP/1.1\r\n" H "Content-Length: 4\r\n\r\n"
              "wxyzGET /v1/objects/%s HTTP/1.1\r\n" H "\r\nHEAD /v1/objects/%s HTTP/1.1\r\n" H "\r\n",
              k300, k300, k300);
    http_seed("k300-key-short-long", 2, "GET /v1/objects/%.599s HTTP/1.1\r\n" H "\r\n"
              "GET /v1/objects/%s00 HTTP/1.1\r\n" H "\r\n", k300, k300);
    http_seed("k300-target-too-long", 2, "GET /v1/objects/%s%s HTTP/1.1\r\n" H "\r\n", k300, long_target);
    http_seed("k300-metrics-unauthorized", 2, "GET /metrics HTTP/1.1\r\n" H "\r\n");
}

#undef H

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make-seeds FIXTURES_DIR OUT_DIR   (e.g. tests/fixtures/nudb fuzz/corpus)\n");
        return 2;
    }
    fixtures_dir = argv[1];
    out_dir = argv[2];
    tide_log_set_level(TIDE_LOG_OFF);
    header_seeds();
    bucket_seeds();
    store_image_seeds();
    store_script_seeds();
    http_seeds();
    printf("make-seeds: %u seeds, %zu bytes, in %s/\n", seeds_written, bytes_written, out_dir);
    return 0;
}
