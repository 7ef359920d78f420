/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest.c: the generations manifest, its text form and its durable
 * replace.
 *
 * With online delete on, a data directory holds G complete NuDB stores at
 * most, each in a directory of its own ("generations"), and one file,
 * tide.generations, naming them newest first with the rotation state. The
 * newest generation takes the writes; reads look newest first; a rotation
 * puts a new empty generation in front and drops the oldest once G are
 * kept. This file is the manifest alone: the value (tide_gen_manifest), its
 * bytes (encode, decode: docs/FORMAT.md gives the grammar) and the one way
 * it reaches the disk (write, read). Nothing here opens a store.
 *
 * The file is a few lines of text, so an operator can read it with cat:
 * a versioned first line, the three rotation fields, one line a
 * generation, and a checksum line, XXH64 of every byte before it. Every
 * valid manifest encodes to under TIDE_GEN_ENCODED_MAX bytes (64 lines of
 * at most 50 bytes and four short ones), so write encodes on the stack and
 * read refuses anything larger without reading it and reads into the stack
 * too: no manifest call allocates.
 *
 * Invariants (of every manifest check accepts, encode writes and decode
 * returns):
 *   1. TIDE_GEN_MIN <= keep <= TIDE_GEN_MAX, and 1 <= count <= keep.
 *   2. Ids strictly decrease from gens[0] (the newest) to gens[count-1]
 *      (the oldest). An id is never reused: a rotation's new id is the
 *      newest plus one and the newest never leaves the list, so every id
 *      ever given is at or below the newest.
 *   3. gens[i].dir is tide_gen_dir_name(gens[i].id): unique because the
 *      ids are, and derived, so the file names no directory of its own
 *      choosing (decode checks the name written equals the derived one).
 *   4. gens[0] is the writable generation; every other one is read-only.
 *   5. The bytes are canonical: decode accepts exactly what encode writes,
 *      so decode(encode(m)) == m and encode(decode(b)) == b.
 *   6. On disk, tide.generations is always one whole manifest, the old one
 *      or the new one, whatever a write met (write's four steps: the
 *      temporary file is synced before the rename makes it the manifest,
 *      and the directory is synced before write returns 0).
 *
 * Never: write tide.generations in place (a crash would leave half of
 * it); return 0 from write before the directory sync (a crash could bring
 * the old manifest back after the caller acted on the new one); read
 * tide.generations.tmp (it may be anything).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "gen/manifest.h"
#include "util/assert.h"
#include "util/err.h"

#define MAGIC        "tide-generations"
#define CHECKSUM_KEY "checksum"
#define PATH_CAP     4096

/* The three fields after the first line, in their order. */
static const char *const header_keys[3] = { "keep", "rotations", "last_rotation_us" };

int tide_gen_dir_name(uint64_t id, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "gen-%012" PRIu64, id);
    if (n < 0 || (size_t)n >= cap)
        return tide_err_set(TIDE_EINVAL, "generation %" PRIu64 ": a buffer of %zu bytes is too "
                            "small for its directory name", id, cap);
    return 0;
}

int tide_gen_manifest_init(tide_gen_manifest *m, uint32_t keep, uint64_t first_id)
{
    if (keep < TIDE_GEN_MIN || keep > TIDE_GEN_MAX)
        return tide_err_set(TIDE_EINVAL, "generations: keep %u is outside %d..%d", keep,
                            TIDE_GEN_MIN, TIDE_GEN_MAX);
    memset(m, 0, sizeof *m);
    m->version = TIDE_GEN_FORMAT_VERSION;
    m->keep = keep;
    m->count = 1;
    m->gens[0].id = first_id;
    return tide_gen_dir_name(first_id, m->gens[0].dir, sizeof m->gens[0].dir);
}

int tide_gen_manifest_check(const tide_gen_manifest *m)
{
    char want[TIDE_GEN_DIR_CAP];

    if (m->version != TIDE_GEN_FORMAT_VERSION)
        return tide_err_set(TIDE_EINVAL, "generations: version %u is not %d", m->version,
                            TIDE_GEN_FORMAT_VERSION);
    if (m->keep < TIDE_GEN_MIN || m->keep > TIDE_GEN_MAX)
        return tide_err_set(TIDE_EINVAL, "generations: keep %u is outside %d..%d", m->keep,
                            TIDE_GEN_MIN, TIDE_GEN_MAX);
    if (m->count < 1 || m->count > m->keep)
        return tide_err_set(TIDE_EINVAL, "generations: %u generations, expected 1 to keep %u",
                            m->count, m->keep);
    for (uint32_t i = 0; i < m->count; i++) {
        if (i > 0 && m->gens[i].id >= m->gens[i - 1].id)
            return tide_err_set(TIDE_EINVAL, "generation %u: id %" PRIu64 " is not below id %"
                                PRIu64 " of the one before", i, m->gens[i].id, m->gens[i - 1].id);
        tide_gen_dir_name(m->gens[i].id, want, sizeof want);
        if (strncmp(m->gens[i].dir, want, sizeof want) != 0)
            return tide_err_set(TIDE_EINVAL, "generation %u: directory '%.*s' is not '%s'", i,
                                (int)sizeof m->gens[i].dir, m->gens[i].dir, want);
    }
    return 0;
}

int tide_gen_manifest_rotate(tide_gen_manifest *m, uint64_t now_us, tide_gen *dropped,
                             unsigned *ndropped)
{
    int rc = tide_gen_manifest_check(m);
    tide_gen fresh;

    if (rc) return rc;
    if (m->gens[0].id == UINT64_MAX)
        return tide_err_set(TIDE_EINVAL, "generations: the newest id is %" PRIu64 ", the last "
                            "there is", m->gens[0].id);
    fresh.id = m->gens[0].id + 1;
    tide_gen_dir_name(fresh.id, fresh.dir, sizeof fresh.dir);
    *ndropped = 0;
    if (m->count == m->keep) {
        if (dropped) *dropped = m->gens[m->count - 1];
        *ndropped = 1;
        m->count--;
    }
    memmove(&m->gens[1], &m->gens[0], m->count * sizeof m->gens[0]);
    m->gens[0] = fresh;
    m->count++;
    m->rotations++;
    m->last_rotation_us = now_us;
    return 0;
}

/* ---- encode ---- */

/* Append a formatted line to out (cap bytes) at *at; 0 or -1 when full. */
static int put_line(char *out, size_t cap, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int put_line(char *out, size_t cap, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *at) return -1;
    *at += (size_t)n;
    return 0;
}

int tide_gen_manifest_encode(const tide_gen_manifest *m, void *buf, size_t cap, size_t *len)
{
    char text[TIDE_GEN_ENCODED_MAX];
    size_t at = 0;
    int rc = tide_gen_manifest_check(m), full = 0;

    if (rc) return rc;
    full |= put_line(text, sizeof text, &at, "%s %d\n", MAGIC, TIDE_GEN_FORMAT_VERSION);
    full |= put_line(text, sizeof text, &at, "%s %u\n", header_keys[0], m->keep);
    full |= put_line(text, sizeof text, &at, "%s %" PRIu64 "\n", header_keys[1], m->rotations);
    full |= put_line(text, sizeof text, &at, "%s %" PRIu64 "\n", header_keys[2],
                     m->last_rotation_us);
    for (uint32_t i = 0; i < m->count; i++)
        full |= put_line(text, sizeof text, &at, "gen %" PRIu64 " %s\n", m->gens[i].id,
                         m->gens[i].dir);
    if (!full)
        full |= put_line(text, sizeof text, &at, "%s %016" PRIx64 "\n", CHECKSUM_KEY,
                         (uint64_t)XXH64(text, at, 0));
    TIDE_ASSERT(!full);   /* TIDE_GEN_ENCODED_MAX holds 64 of the longest lines */
    *len = at;
    if (cap < at)
        return tide_err_set(TIDE_EINVAL, "generations: encoding needs %zu bytes, the buffer "
                            "has %zu", at, cap);
    memcpy(buf, text, at);
    return 0;
}

/* ---- decode ---- */

/* One line of the file: its bytes without the '\n', its number from 1. */
typedef struct line {
    const char *p;
    size_t      n;
    unsigned    no;
} line;

/* A line cursor over [p, end): the next '\n'-ended line, or 0 at the end
 * or at an unended last line (then *ln holds that line, unended). */
typedef struct cursor {
    const char *p, *end;
    unsigned    no;
} cursor;

static int next_line(cursor *c, line *ln)
{
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    ln->p = c->p;
    ln->no = ++c->no;
    ln->n = nl ? (size_t)(nl - c->p) : (size_t)(c->end - c->p);
    if (nl == NULL) return 0;
    c->p = nl + 1;
    return 1;
}

#define CORRUPT(ln, ...) corrupt((ln)->no, __VA_ARGS__)

static int corrupt(unsigned no, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int corrupt(unsigned no, const char *fmt, ...)
{
    char what[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tide_err_set(TIDE_ECORRUPT, "%s:%u: %s", TIDE_GEN_FILE, no, what);
}

/* A canonical decimal u64 (no sign, no leading zero, 1..20 digits). */
static int parse_u64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0 || n > 20 || (p[0] == '0' && n > 1)) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        if (p[i] < '0' || p[i] > '9') return -1;
        d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Exactly 16 lowercase hex digits. */
static int parse_hex64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (n != 16) return -1;
    for (size_t i = 0; i < n; i++) {
        char h = p[i];
        if (h >= '0' && h <= '9') v = v << 4 | (uint64_t)(h - '0');
        else if (h >= 'a' && h <= 'f') v = v << 4 | (uint64_t)(h - 'a' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* Split a line at its first space: the key, and the value after it. */
static void split(const line *ln, line *key, line *val)
{
    const char *sp = memchr(ln->p, ' ', ln->n);
    *key = *ln;
    *val = *ln;
    key->n = sp ? (size_t)(sp - ln->p) : ln->n;
    val->p = sp ? sp + 1 : ln->p + ln->n;
    val->n = sp ? ln->n - key->n - 1 : 0;
}

static int is_key(const line *key, const char *name)
{
    return key->n == strlen(name) && memcmp(key->p, name, key->n) == 0;
}

/* Line 1: "tide-generations 1". Another number is TIDE_EVERSION. */
static int decode_version(const char *buf, size_t len)
{
    cursor c = { buf, buf + len, 0 };
    line ln, key, val;
    uint64_t v;

    if (len == 0) return corrupt(1, "truncated: the file is empty");
    if (!next_line(&c, &ln)) return corrupt(1, "truncated: the first line has no end");
    split(&ln, &key, &val);
    if (!is_key(&key, MAGIC) || parse_u64(val.p, val.n, &v) != 0)
        return CORRUPT(&ln, "expected '%s %d', got '%.*s' (not a generations manifest)", MAGIC,
                       TIDE_GEN_FORMAT_VERSION, (int)(ln.n > 60 ? 60 : ln.n), ln.p);
    if (v != TIDE_GEN_FORMAT_VERSION)
        return tide_err_set(TIDE_EVERSION, "%s:1: format version %" PRIu64 " is not supported "
                            "(only %d)", TIDE_GEN_FILE, v, TIDE_GEN_FORMAT_VERSION);
    return 0;
}

/* The checksum line: the first line whose key is "checksum". It must end
 * the file, and hold XXH64 of every byte before it; *body gets their
 * number. */
static int decode_checksum(const char *buf, size_t len, size_t *body)
{
    cursor c = { buf, buf + len, 0 };
    line ln, key, val;
    uint64_t want = 0, got;

    for (;;) {
        int ended = next_line(&c, &ln);
        split(&ln, &key, &val);
        if (ended && is_key(&key, CHECKSUM_KEY)) break;
        if (!ended)
            return CORRUPT(&ln, "truncated: the file ends at byte %zu with no checksum line", len);
    }
    if (c.p != c.end)
        return corrupt(ln.no + 1, "trailing garbage: %zu bytes after the checksum line",
                       (size_t)(c.end - c.p));
    if (parse_hex64(val.p, val.n, &want) != 0)
        return CORRUPT(&ln, "checksum '%.*s' is not 16 lowercase hex digits",
                       (int)(val.n > 40 ? 40 : val.n), val.p);
    *body = (size_t)(ln.p - buf);
    got = XXH64(buf, *body, 0);
    if (got != want)
        return CORRUPT(&ln, "bad checksum: the file says %016" PRIx64 ", its first %zu bytes "
                       "hash to %016" PRIx64, want, *body, got);
    return 0;
}

/* The key of a line that is not the one expected: unknown, or repeated. */
static int wrong_key(const line *ln, const line *key, const char *expected)
{
    for (size_t j = 0; j < 3; j++)
        if (is_key(key, header_keys[j]))
            return CORRUPT(ln, "duplicate: key '%s' given twice", header_keys[j]);
    if (!is_key(key, "gen"))
        return CORRUPT(ln, "unknown key '%.*s'", (int)(key->n > 40 ? 40 : key->n), key->p);
    return CORRUPT(ln, "expected '%s', got '%.*s'", expected, (int)key->n, key->p);
}

/* Lines 2 to 4: keep, rotations, last_rotation_us, in that order. */
static int decode_header(cursor *c, tide_gen_manifest *m)
{
    uint64_t v[3];
    line ln, key, val;

    for (size_t i = 0; i < 3; i++) {
        if (!next_line(c, &ln))
            return CORRUPT(&ln, "expected '%s', got the checksum line", header_keys[i]);
        split(&ln, &key, &val);
        if (!is_key(&key, header_keys[i])) return wrong_key(&ln, &key, header_keys[i]);
        if (parse_u64(val.p, val.n, &v[i]) != 0)
            return CORRUPT(&ln, "%s '%.*s' is not a decimal number below 2^64 (no sign, no "
                           "leading zero)", header_keys[i], (int)(val.n > 40 ? 40 : val.n), val.p);
    }
    if (v[0] < TIDE_GEN_MIN || v[0] > TIDE_GEN_MAX)
        return corrupt(2, "out of range: keep %" PRIu64 " is outside %d..%d", v[0], TIDE_GEN_MIN,
                       TIDE_GEN_MAX);
    m->keep = (uint32_t)v[0];
    m->rotations = v[1];
    m->last_rotation_us = v[2];
    return 0;
}

/* One "gen ID DIR" line, after the generations already decoded. */
static int decode_gen(const line *ln, tide_gen_manifest *m, unsigned prev_no)
{
    line key, val, id_s, dir_s;
    tide_gen *g = &m->gens[m->count];
    uint64_t id;

    split(ln, &key, &val);
    if (!is_key(&key, "gen")) return wrong_key(ln, &key, "gen");
    if (m->count == TIDE_GEN_MAX)
        return CORRUPT(ln, "too many generations: more than %d", TIDE_GEN_MAX);
    split(&val, &id_s, &dir_s);
    if (parse_u64(id_s.p, id_s.n, &id) != 0)
        return CORRUPT(ln, "gen id '%.*s' is not a decimal number below 2^64 (no sign, no "
                       "leading zero)", (int)(id_s.n > 40 ? 40 : id_s.n), id_s.p);
    if (m->count > 0 && id == m->gens[m->count - 1].id)
        return CORRUPT(ln, "duplicate: gen %" PRIu64 " repeats line %u", id, prev_no);
    if (m->count > 0 && id > m->gens[m->count - 1].id)
        return CORRUPT(ln, "ids out of order: gen %" PRIu64 " is not below gen %" PRIu64
                       " of line %u (ids decrease, newest first)", id, m->gens[m->count - 1].id,
                       prev_no);
    g->id = id;
    tide_gen_dir_name(id, g->dir, sizeof g->dir);
    if (dir_s.n != strlen(g->dir) || memcmp(dir_s.p, g->dir, dir_s.n) != 0)
        return CORRUPT(ln, "gen %" PRIu64 ": directory '%.*s' is not '%s'", id,
                       (int)(dir_s.n > 40 ? 40 : dir_s.n), dir_s.p, g->dir);
    m->count++;
    return 0;
}

int tide_gen_manifest_decode(const void *buf, size_t len, tide_gen_manifest *m)
{
    const char *text = buf;
    size_t body = 0;
    cursor c;
    line ln;
    int rc;

    memset(m, 0, sizeof *m);
    if ((rc = decode_version(text, len)) != 0) return rc;
    if ((rc = decode_checksum(text, len, &body)) != 0) return rc;
    c = (cursor){ text, text + body, 0 };
    next_line(&c, &ln);                         /* line 1, decoded above */
    m->version = TIDE_GEN_FORMAT_VERSION;
    if ((rc = decode_header(&c, m)) != 0) return rc;
    while (next_line(&c, &ln))
        if ((rc = decode_gen(&ln, m, ln.no - 1)) != 0) return rc;
    if (m->count == 0)
        return CORRUPT(&ln, "no generation: expected at least one 'gen' line");
    if (m->count > m->keep)
        return corrupt(ln.no - 1, "too many generations: %u, more than keep %u", m->count,
                       m->keep);
    return 0;
}

/* ---- the file ---- */

static int join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, PATH_CAP, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_CAP)
        return tide_err_set(TIDE_EINVAL, "%s: path too long for %s", dir, name);
    return 0;
}

/* Step 1 of write: `len` bytes into tmp (created, or emptied first), synced. */
static int write_tmp(tide_io *io, const char *tmp, const void *bytes, size_t len)
{
    tide_file *f = NULL;
    int rc;

    rc = io->open(io, tmp, TIDE_IO_CREATE, &f);
    if (rc) goto out;
    rc = io->truncate(f, 0);
    if (rc) goto out;
    rc = io->write_at(f, bytes, len, 0);
    if (rc) goto out;
    rc = io->sync(f);
out:
    if (f) io->close(f);
    return rc;
}

int tide_gen_manifest_write(tide_io *io, const char *dir, const tide_gen_manifest *m)
{
    char bytes[TIDE_GEN_ENCODED_MAX], tmp[PATH_CAP], final[PATH_CAP];
    size_t len = 0;
    int rc;

    rc = tide_gen_manifest_encode(m, bytes, sizeof bytes, &len);
    if (rc) goto out;
    if ((rc = join(tmp, dir, TIDE_GEN_FILE_TMP)) != 0) goto out;
    if ((rc = join(final, dir, TIDE_GEN_FILE)) != 0) goto out;
    rc = write_tmp(io, tmp, bytes, len);
    if (rc) goto out;
    rc = io->rename(io, tmp, final);
    if (rc) goto out;
    rc = io->sync_dir(io, dir);
out:
    return rc;
}

int tide_gen_manifest_read(tide_io *io, const char *dir, tide_gen_manifest *m)
{
    char path[PATH_CAP], bytes[TIDE_GEN_ENCODED_MAX];
    tide_file *f = NULL;
    uint64_t size = 0;
    int rc;

    if ((rc = join(path, dir, TIDE_GEN_FILE)) != 0) goto out;
    rc = io->open(io, path, TIDE_IO_READ, &f);
    if (rc) goto out;
    rc = io->size(f, &size);
    if (rc) goto out;
    if (size > sizeof bytes) {
        rc = tide_err_set(TIDE_ECORRUPT, "%s: %" PRIu64 " bytes, more than a manifest's limit of "
                          "%d (not read)", path, size, TIDE_GEN_ENCODED_MAX);
        goto out;
    }
    if (size > 0 && (rc = io->read_at(f, bytes, (size_t)size, 0)) != 0) goto out;
    rc = tide_gen_manifest_decode(bytes, (size_t)size, m);
    if (rc) tide_err_prefix(rc, "%s", dir);
out:
    if (f) io->close(f);
    return rc;
}
