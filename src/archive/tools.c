/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tools.c: the operator's tools over an archive (tools.h): the session,
 * what the prefix holds (ls), and one key's value (get). The check is
 * tools_verify.c, the rebuild of a data directory tools_restore.c; the
 * helpers the three share (object names, whole-object reads, a
 * generation's data extent, the files' headers) are here.
 *
 * A session reads the manifest once, at open, and every call works from
 * that copy. The pool may change meanwhile (a node uploads, seals,
 * deletes): an object a node adds after the open is unnamed to ls, and a
 * sealed generation retention removes under a call is missing to it. The
 * tools are for an operator's look, so they report what they see and
 * say when it was read; they never wait for a node.
 *
 * Reads of sealed generations go through archive_io with the store's own
 * code (get, verify --deep), as the node's do: a sealed generation's
 * objects never change until retention removes them (archive_io.c's
 * invariant 1), so a lookup there reads a consistent store.
 *
 * Invariants:
 *   1. Nothing here writes to the pool (restore's cut of an open
 *      generation, in tools_restore.c, is the tools' only write).
 *   2. Every read of an object is bounded: at most TI_TOOL_PIECE bytes at
 *      a time, whatever its size (an object may be 128 MiB).
 *   3. An object the manifest names is judged by the manifest's size and
 *      sum alone; no object is trusted for its own length.
 *
 * Never: print (the CLI does); read an open generation through the
 * store's lookup (its key file is not in the archive).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "archive/tools_impl.h"
#include "store/format.h"
#include "util/err.h"

/* ---- names ---- */

/* "PREFIX.gen-" then 12 or more digits; the rest into *rest. */
static int parse_gen(const char *prefix, const char *oid, uint64_t *id, const char **rest)
{
    size_t plen = strlen(prefix);
    const char *p;
    char *end;

    if (strncmp(oid, prefix, plen) != 0 || strncmp(oid + plen, ".gen-", 5) != 0) return 0;
    p = oid + plen + 5;
    if (p[0] < '0' || p[0] > '9') return 0;
    *id = strtoull(p, &end, 10);
    if (end - p < 12 || *id == 0) return 0;
    *rest = end;
    return 1;
}

int ti_tool_parse_oid(const char *prefix, const char *oid, uint64_t *id, unsigned *chunk)
{
    char want[TIDE_ARCHIVE_OID_CAP];
    const char *rest;
    char *end;
    unsigned long c;

    *id = 0;
    *chunk = 0;
    tide_archive_oid_manifest(want, prefix);
    if (strcmp(oid, want) == 0) return TI_OBJ_MANIFEST;
    if (!parse_gen(prefix, oid, id, &rest)) return TI_OBJ_OTHER;
    if (strcmp(rest, ".filter") == 0) return TI_OBJ_FILTER;
    if (strncmp(rest, ".dat.", 5) != 0 && strncmp(rest, ".key.", 5) != 0) return TI_OBJ_OTHER;
    if (rest[5] < '0' || rest[5] > '9') return TI_OBJ_OTHER;
    c = strtoul(rest + 5, &end, 10);
    if (*end != '\0' || end - (rest + 5) < 6 || c > UINT32_MAX) return TI_OBJ_OTHER;
    *chunk = (unsigned)c;
    return rest[1] == 'd' ? TI_OBJ_DAT : TI_OBJ_KEY;
}

uint64_t ti_tool_chunk_len(uint64_t bytes, uint64_t chunk_bytes, unsigned c)
{
    uint64_t start = (uint64_t)c * chunk_bytes;

    if (start >= bytes) return 0;
    return bytes - start < chunk_bytes ? bytes - start : chunk_bytes;
}

const tide_archive_gen *ti_tool_sealed(const tide_archive_tool *t, uint64_t id)
{
    const tide_archive_gen *g = tide_archive_catalog_find(&t->cat, id);

    return g && g->state == TIDE_ARCHIVE_SEALED ? g : NULL;
}

/* ---- reads ---- */

int ti_tool_read_object(tide_archive_tool *t, const char *oid, uint64_t expect, uint8_t *buf,
                        size_t cap, ti_tool_sink sink, void *arg, uint64_t *size, uint64_t *sum)
{
    XXH64_state_t st;
    uint64_t have = 0, off = 0;
    int rc;

    *size = 0;
    *sum = 0;
    if ((rc = tide_rados_stat(t->r, oid, &have)) != 0) return rc;
    if (expect != UINT64_MAX && have != expect)
        return tide_err_set(TIDE_ECORRUPT, "%s: %" PRIu64 " bytes, %" PRIu64 " expected", oid,
                            have, expect);
    XXH64_reset(&st, 0);
    while (off < have) {                                        /* invariant 2 */
        size_t n = have - off < cap ? (size_t)(have - off) : cap, got = 0;

        if ((rc = tide_rados_read(t->r, oid, off, buf, n, &got)) != 0) return rc;
        if (got != n)
            return tide_err_set(TIDE_ECORRUPT, "%s: %" PRIu64 " bytes, %" PRIu64 " when it was "
                                "looked at (it changed while read)", oid, off + got, have);
        XXH64_update(&st, buf, n);
        if (sink && (rc = sink(arg, off, buf, n)) != 0) return rc;
        off += n;
    }
    *size = have;
    *sum = XXH64_digest(&st);
    return 0;
}

int ti_tool_extent(tide_archive_tool *t, uint64_t id, uint64_t chunk_bytes, unsigned *chunks,
                   uint64_t *bytes)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t size = 0;
    int rc;

    *chunks = 0;
    *bytes = 0;
    for (unsigned c = 0;; c++) {
        tide_archive_oid_dat(oid, t->prefix, id, c);
        if ((rc = tide_rados_stat(t->r, oid, &size)) == TIDE_ENOENT) break;
        if (rc) return rc;
        *chunks = c + 1;
        *bytes += size;
        if (size < chunk_bytes) break;
    }
    tide_err_clear();
    return 0;
}

typedef struct chunk_list {
    const char *prefix;
    uint64_t id;
    unsigned *chunks;
    unsigned n, cap;
} chunk_list;

static int collect_chunk(void *arg, const char *oid)
{
    chunk_list *l = arg;
    uint64_t id;
    unsigned c;

    if (ti_tool_parse_oid(l->prefix, oid, &id, &c) != TI_OBJ_DAT || id != l->id) return 0;
    if (l->n == l->cap) {
        unsigned cap = l->cap ? l->cap * 2 : 64;
        unsigned *n = realloc(l->chunks, cap * sizeof *n);
        if (n == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
        l->chunks = n;
        l->cap = cap;
    }
    l->chunks[l->n++] = c;
    return 0;
}

static int by_chunk(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

int ti_tool_list_chunks(tide_archive_tool *t, uint64_t id, unsigned **chunks, unsigned *n)
{
    char want[TIDE_ARCHIVE_PREFIX_MAX + 2];
    chunk_list l = { .prefix = t->prefix, .id = id };
    int rc;

    *chunks = NULL;
    *n = 0;
    snprintf(want, sizeof want, "%s.", t->prefix);
    if ((rc = tide_rados_list(t->r, want, collect_chunk, &l)) != 0) {
        free(l.chunks);
        return rc;
    }
    if (l.n) qsort(l.chunks, l.n, sizeof *l.chunks, by_chunk);
    *chunks = l.chunks;
    *n = l.n;
    return 0;
}

int ti_tool_header_decode(const uint8_t *p, size_t len, int is_key, const char *name,
                          ti_tool_header *h)
{
    const char *type = is_key ? "nudb.key" : "nudb.dat";
    size_t need = is_key ? TI_TOOL_KEY_HEADER : TI_TOOL_DAT_HEADER;

    memset(h, 0, sizeof *h);
    if (len < need)
        return tide_err_set(TIDE_ECORRUPT, "%s: %zu bytes, shorter than %s's %zu-byte header",
                            name, len, type, need);
    if (memcmp(p, type, 8) != 0)
        return tide_err_set(TIDE_ENOTSTORE, "%s: offset 0: type is not '%s'", name, type);
    if (ti_get16(p + 8) != TIDE_FMT_VERSION)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 8: version %u, not %d", name,
                            (unsigned)ti_get16(p + 8), TIDE_FMT_VERSION);
    h->uid = ti_get64(p + 10);
    h->appnum = ti_get64(p + 18);
    h->key_size = (unsigned)ti_get16(p + 26);
    if (h->key_size == 0) return tide_err_set(TIDE_ECORRUPT, "%s: offset 26: key size 0", name);
    if (!is_key) return 0;
    h->salt = ti_get64(p + 28);
    h->block_size = (unsigned)ti_get16(p + 44);
    h->load_factor = (unsigned)ti_get16(p + 46);
    return 0;
}

/* ---- the session ---- */

/* archive_io's question, from the session's catalog. */
static int sealed_sizes(void *arg, uint64_t id, uint64_t *dat, uint64_t *key, uint64_t *chunk)
{
    const tide_archive_gen *g = ti_tool_sealed(arg, id);

    if (g == NULL) return TIDE_ENOENT;
    *dat = g->dat_bytes;
    *key = g->key_bytes;
    *chunk = g->chunk_bytes;
    return 0;
}

static int read_manifest(tide_archive_tool *t)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    char *text = NULL;
    size_t len = 0;
    int rc;

    tide_archive_oid_manifest(oid, t->prefix);
    rc = tide_rados_read_full(t->r, oid, TIDE_ARCHIVE_MANIFEST_CAP, &text, &len, NULL);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        return 0;
    }
    if (rc == 0) {
        tide_archive_catalog_clear(&t->cat);
        rc = tide_archive_catalog_decode(text, len, oid, t->prefix, &t->cat);
    }
    if (rc == 0) {
        t->has_manifest = 1;
        t->manifest_bytes = len;
    }
    free(text);
    return rc;
}

int tide_archive_tool_open(tide_archive_tool **out, const tide_archive_tool_opts *o)
{
    tide_rados_opts ro = { o->conf, o->user, o->pool && o->pool[0] ? o->pool : "tide",
                           o->timeout_s };
    tide_archive_tool *t = NULL;
    int rc;

    *out = NULL;
    if (!tide_archive_prefix_valid(o->prefix))
        return tide_err_set(TIDE_EINVAL, "archive prefix \"%s\": expected 1 to %d characters of "
                            "A-Z a-z 0-9 _ -, not starting with -", o->prefix ? o->prefix : "",
                            TIDE_ARCHIVE_PREFIX_MAX);
    if ((t = calloc(1, sizeof *t)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    snprintf(t->pool, sizeof t->pool, "%s", ro.pool);
    snprintf(t->prefix, sizeof t->prefix, "%s", o->prefix);
    tide_archive_catalog_init(&t->cat, t->prefix);
    rc = tide_rados_connect(&t->r, &ro);
    if (rc == TIDE_EUNAVAIL)
        tide_err_prefix(rc, "pool %s: no answer within %u s (are the monitors up, and is "
                        "mon_host in %s right?)", t->pool, o->timeout_s ? o->timeout_s : 10,
                        o->conf ? o->conf : "the Ceph configuration");
    if (rc == 0) rc = tide_archive_io_new(&t->aio, t->r, t->prefix, sealed_sizes, t);
    if (rc == 0) rc = read_manifest(t);
    if (rc) {
        tide_archive_tool_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

void tide_archive_tool_close(tide_archive_tool *t)
{
    if (t == NULL) return;
    tide_archive_io_free(t->aio);
    tide_rados_close(t->r);
    tide_archive_catalog_clear(&t->cat);
    free(t);
}

const tide_archive_catalog *tide_archive_tool_catalog(const tide_archive_tool *t, int *has_manifest)
{
    if (has_manifest) *has_manifest = t->has_manifest;
    return &t->cat;
}

const char *tide_archive_tool_pool(const tide_archive_tool *t) { return t->pool; }
const char *tide_archive_tool_prefix(const tide_archive_tool *t) { return t->prefix; }

/* ---- ls ---- */

typedef struct name_list {
    char   **names;
    size_t   n, cap;
} name_list;

static int collect_name(void *arg, const char *oid)
{
    name_list *l = arg;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **n = realloc(l->names, cap * sizeof *n);
        if (n == NULL) return tide_err_set(TIDE_ENOMEM, "archive: out of memory listing the pool");
        l->names = n;
        l->cap = cap;
    }
    if ((l->names[l->n] = strdup(oid)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory listing the pool");
    l->n++;
    return 0;
}

static void names_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does catalog entry g name the object of this kind, chunk? */
static int entry_names(const tide_archive_gen *g, int kind, unsigned chunk)
{
    switch (g->state) {
    case TIDE_ARCHIVE_OPEN:   return kind == TI_OBJ_DAT;
    case TIDE_ARCHIVE_SEALED: return (kind == TI_OBJ_DAT && chunk < g->dat_chunks) ||
                                     (kind == TI_OBJ_KEY && chunk < g->key_chunks) ||
                                     (kind == TI_OBJ_FILTER && g->filter_bytes > 0);
    default:                  return kind != TI_OBJ_OTHER && kind != TI_OBJ_MANIFEST;
    }
}

/* One listed object: to its entry, or to the unnamed. */
static void ls_count(tide_archive_tool *t, tide_archive_ls *l, const char *oid, int *unnamed)
{
    uint64_t id;
    unsigned chunk;
    int kind = ti_tool_parse_oid(t->prefix, oid, &id, &chunk);

    *unnamed = 0;
    l->objects++;
    if (kind == TI_OBJ_MANIFEST && t->has_manifest) return;
    for (unsigned i = 0; kind != TI_OBJ_OTHER && i < l->count; i++)
        if (l->gens[i].id == id && entry_names(&t->cat.gens[i], kind, chunk)) {
            l->gens[i].objects++;
            return;
        }
    *unnamed = 1;
    l->unnamed++;
}

/* The entries' figures from the catalog (and, for open ones, the pool). */
static int ls_entries(tide_archive_tool *t, tide_archive_ls *l)
{
    int rc;

    if ((l->gens = calloc(t->cat.count + 1, sizeof *l->gens)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "archive: out of memory");
    l->count = t->cat.count;
    l->named_bytes = t->manifest_bytes;
    for (unsigned i = 0; i < t->cat.count; i++) {
        const tide_archive_gen *g = &t->cat.gens[i];
        tide_archive_ls_gen *e = &l->gens[i];
        unsigned chunks;

        e->id = g->id;
        e->state = g->state;
        e->uid = g->uid;
        e->key_size = g->key_size;
        e->block_size = g->block_size;
        e->chunk_bytes = g->chunk_bytes;
        l->sealed += g->state == TIDE_ARCHIVE_SEALED;
        l->open += g->state == TIDE_ARCHIVE_OPEN;
        l->deleting += g->state == TIDE_ARCHIVE_DELETING;
        if (g->state == TIDE_ARCHIVE_SEALED) {
            e->dat_bytes = g->dat_bytes;
            e->key_bytes = g->key_bytes;
            e->filter_bytes = g->filter_bytes;
            e->records = g->records;
            e->sealed_unix_us = g->sealed_unix_us;
        } else if (g->state == TIDE_ARCHIVE_OPEN &&
                   (rc = ti_tool_extent(t, g->id, g->chunk_bytes, &chunks, &e->dat_bytes)) != 0) {
            return rc;
        }
        l->named_bytes += e->dat_bytes + e->key_bytes + e->filter_bytes;
    }
    return 0;
}

int tide_archive_tool_ls(tide_archive_tool *t, tide_archive_ls *l)
{
    char want[TIDE_ARCHIVE_PREFIX_MAX + 2];
    name_list names = { 0 };
    int rc;

    memset(l, 0, sizeof *l);
    l->has_manifest = t->has_manifest;
    l->keep = t->cat.keep;
    snprintf(l->writer, sizeof l->writer, "%s", t->cat.writer);
    l->updated_unix_us = t->cat.updated_unix_us;
    if ((rc = ls_entries(t, l)) != 0) goto out;
    snprintf(want, sizeof want, "%s.", t->prefix);
    if ((rc = tide_rados_list(t->r, want, collect_name, &names)) != 0) goto out;
    qsort(names.names, names.n, sizeof *names.names, by_name);
    if ((l->unnamed_list = calloc(TIDE_ARCHIVE_LS_UNNAMED_MAX, sizeof *l->unnamed_list)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "archive: out of memory");
        goto out;
    }
    for (size_t i = 0; i < names.n; i++) {
        tide_archive_ls_object *u = &l->unnamed_list[l->unnamed_listed];
        int unnamed;

        ls_count(t, l, names.names[i], &unnamed);
        if (!unnamed || l->unnamed_listed == TIDE_ARCHIVE_LS_UNNAMED_MAX) continue;
        snprintf(u->oid, sizeof u->oid, "%s", names.names[i]);
        rc = tide_rados_stat(t->r, u->oid, &u->bytes);
        if (rc == TIDE_ENOENT) {                /* removed since the listing */
            tide_err_clear();
            rc = 0;
            continue;
        }
        if (rc) goto out;
        l->unnamed_bytes += u->bytes;
        l->unnamed_listed++;
    }
    for (unsigned i = 0; i < l->count; i++) {
        const tide_archive_gen *g = &t->cat.gens[i];
        unsigned want_objects = g->dat_chunks + g->key_chunks + (g->filter_bytes > 0);
        if (g->state == TIDE_ARCHIVE_SEALED && l->gens[i].objects < want_objects)
            l->gens[i].missing = want_objects - l->gens[i].objects;
    }
out:
    names_free(&names);
    return rc;
}

void tide_archive_ls_free(tide_archive_ls *l)
{
    free(l->gens);
    free(l->unnamed_list);
    memset(l, 0, sizeof *l);
}

/* ---- get ---- */

/* One sealed generation opened read-only on archive_io, asked, closed. */
static int get_from(tide_archive_tool *t, uint64_t id, const void *key, void **out, size_t *len)
{
    tide_store_opts so;
    tide_store *s = NULL;
    char dir[256];
    int rc, crc;

    tide_store_opts_init(&so);
    so.read_only = 1;
    so.pread = 1;
    so.io = tide_archive_io_io(t->aio);
    tide_archive_io_dir(t->aio, id, dir, sizeof dir);
    if ((rc = tide_store_open(&s, dir, &so)) != 0)
        return tide_err_prefix(rc, "generation %" PRIu64, id);
    rc = tide_store_fetch(s, key, out, len);
    if (rc && rc != TIDE_ENOTFOUND) tide_err_prefix(rc, "generation %" PRIu64, id);
    crc = tide_store_close(s);
    return rc ? rc : crc;
}

int tide_archive_tool_get(tide_archive_tool *t, const void *key, size_t key_len, void **out,
                          size_t *len, uint64_t *gen_id, unsigned *looked)
{
    unsigned asked = 0, sealed = 0;
    int rc = TIDE_ENOTFOUND;

    *out = NULL;
    *len = 0;
    if (!t->has_manifest)
        return tide_err_set(TIDE_ENOENT, "rados %s: no %s.manifest: nothing is archived under "
                            "prefix %s", t->pool, t->prefix, t->prefix);
    for (unsigned i = 0; i < t->cat.count; i++) {
        const tide_archive_gen *g = &t->cat.gens[i];
        if (g->state != TIDE_ARCHIVE_SEALED) continue;
        if (sealed++ == 0 && key_len != g->key_size)
            return tide_err_set(TIDE_EKEYSIZE, "a key of %zu bytes; the archived generations' "
                                "keys are %u bytes (%u hex digits)", key_len, g->key_size,
                                2 * g->key_size);
    }
    for (unsigned i = 0; i < t->cat.count && rc == TIDE_ENOTFOUND; i++) {
        const tide_archive_gen *g = &t->cat.gens[i];
        if (g->state != TIDE_ARCHIVE_SEALED) continue;
        if (g->key_size != key_len) continue;       /* no such key can be there */
        asked++;
        rc = get_from(t, g->id, key, out, len);
        if (rc == 0 && gen_id) *gen_id = g->id;
    }
    if (looked) *looked = asked;
    if (rc == TIDE_ENOTFOUND)
        tide_err_set(rc, "in none of the %u sealed generations of %s/%s", sealed, t->pool,
                     t->prefix);
    return rc;
}
