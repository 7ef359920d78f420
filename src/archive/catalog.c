/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * catalog.c: the archive's manifest in memory and as JSON (catalog.h has
 * the objects and the grammar).
 *
 * Layout: names; the catalog's entries (find, add, remove, copy); the
 * encoding with jansson; the decoding, one checked member at a time.
 *
 * Invariants:
 *   1. Entries are newest first, ids strictly decreasing: add keeps it, and
 *      decode refuses a text that breaks it.
 *   2. A sealed entry's sum arrays have exactly tide_archive_chunks(bytes,
 *      chunk_bytes) elements each; an open one has none.
 *   3. Every 64-bit number is written as 16 hex digits, never as a JSON
 *      number (most JSON readers hold numbers as doubles, which lose bits
 *      past 2^53).
 *
 * Never: accept a manifest it cannot read whole; a reader that skipped a
 *   generation it did not understand would call it absent.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/catalog.h"
#include "util/assert.h"
#include "util/err.h"

int tide_archive_prefix_valid(const char *p)
{
    size_t n = p ? strlen(p) : 0;

    if (n == 0 || n > TIDE_ARCHIVE_PREFIX_MAX || p[0] == '-') return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

int tide_archive_default_prefix(char *buf, size_t cap)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
    char host[256] = "";
    size_t n = 0;

    /* The host name up to its first dot, each byte outside the prefix's
     * alphabet made '_', a leading '-' too. */
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') snprintf(host, sizeof host, "tide");
    while (host[n] && host[n] != '.' && n < TIDE_ARCHIVE_PREFIX_MAX) n++;
    host[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!strchr(alphabet, host[i])) host[i] = '_';
    if (host[0] == '-') host[0] = '_';
    snprintf(buf, cap, "%.*s", TIDE_ARCHIVE_PREFIX_MAX, host);
    if (!tide_archive_prefix_valid(buf))
        return tide_err_set(TIDE_EINVAL, "no archive prefix from the host name \"%s\": give one "
                            "explicitly", host);
    return 0;
}

void tide_archive_oid_manifest(char *buf, const char *prefix)
{
    snprintf(buf, TIDE_ARCHIVE_OID_CAP, "%s.manifest", prefix);
}

void tide_archive_oid_dat(char *buf, const char *prefix, uint64_t id, unsigned chunk)
{
    snprintf(buf, TIDE_ARCHIVE_OID_CAP, "%s.gen-%012" PRIu64 ".dat.%06u", prefix, id, chunk);
}

void tide_archive_oid_key(char *buf, const char *prefix, uint64_t id, unsigned chunk)
{
    snprintf(buf, TIDE_ARCHIVE_OID_CAP, "%s.gen-%012" PRIu64 ".key.%06u", prefix, id, chunk);
}

void tide_archive_oid_filter(char *buf, const char *prefix, uint64_t id)
{
    snprintf(buf, TIDE_ARCHIVE_OID_CAP, "%s.gen-%012" PRIu64 ".filter", prefix, id);
}

unsigned tide_archive_chunks(uint64_t bytes, uint64_t chunk_bytes)
{
    TIDE_ASSERT(chunk_bytes > 0);
    return (unsigned)((bytes + chunk_bytes - 1) / chunk_bytes);
}

const char *tide_archive_state_name(tide_archive_state s)
{
    switch (s) {
    case TIDE_ARCHIVE_OPEN:     return "open";
    case TIDE_ARCHIVE_SEALED:   return "sealed";
    case TIDE_ARCHIVE_DELETING: return "deleting";
    }
    return "?";
}

void tide_archive_catalog_init(tide_archive_catalog *c, const char *prefix)
{
    memset(c, 0, sizeof *c);
    snprintf(c->prefix, sizeof c->prefix, "%s", prefix ? prefix : "");
}

static void gen_free(tide_archive_gen *g)
{
    free(g->dat_sums);
    free(g->key_sums);
    g->dat_sums = g->key_sums = NULL;
}

void tide_archive_catalog_clear(tide_archive_catalog *c)
{
    char prefix[sizeof c->prefix];

    for (unsigned i = 0; i < c->count; i++) gen_free(&c->gens[i]);
    free(c->gens);
    memcpy(prefix, c->prefix, sizeof prefix);
    tide_archive_catalog_init(c, prefix);
}

tide_archive_gen *tide_archive_catalog_find(const tide_archive_catalog *c, uint64_t id)
{
    for (unsigned i = 0; i < c->count; i++)
        if (c->gens[i].id == id) return &c->gens[i];
    return NULL;
}

int tide_archive_catalog_add(tide_archive_catalog *c, const tide_archive_gen *g)
{
    unsigned at = 0;

    if (tide_archive_catalog_find(c, g->id))
        return tide_err_set(TIDE_EEXIST, "archive %s: generation %" PRIu64 " is already listed",
                            c->prefix, g->id);
    if (c->count == c->cap) {
        unsigned cap = c->cap ? c->cap * 2 : 8;
        tide_archive_gen *n = realloc(c->gens, cap * sizeof *n);
        if (n == NULL) return tide_err_set(TIDE_ENOMEM, "archive %s: out of memory", c->prefix);
        c->gens = n;
        c->cap = cap;
    }
    while (at < c->count && c->gens[at].id > g->id) at++;     /* invariant 1 */
    memmove(&c->gens[at + 1], &c->gens[at], (c->count - at) * sizeof *c->gens);
    c->gens[at] = *g;
    c->count++;
    return 0;
}

int tide_archive_catalog_remove(tide_archive_catalog *c, uint64_t id)
{
    for (unsigned i = 0; i < c->count; i++) {
        if (c->gens[i].id != id) continue;
        gen_free(&c->gens[i]);
        memmove(&c->gens[i], &c->gens[i + 1], (c->count - i - 1) * sizeof *c->gens);
        c->count--;
        return 0;
    }
    return TIDE_ENOENT;
}

static int dup_sums(uint64_t **dst, const uint64_t *src, unsigned n)
{
    *dst = NULL;
    if (n == 0 || src == NULL) return 0;
    if ((*dst = malloc(n * sizeof **dst)) == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory");
    memcpy(*dst, src, n * sizeof **dst);
    return 0;
}

int tide_archive_catalog_copy(tide_archive_catalog *dst, const tide_archive_catalog *src)
{
    int rc = 0;

    tide_archive_catalog_init(dst, src->prefix);
    dst->keep = src->keep;
    dst->updated_unix_us = src->updated_unix_us;
    memcpy(dst->writer, src->writer, sizeof dst->writer);
    for (unsigned i = 0; i < src->count && rc == 0; i++) {
        tide_archive_gen g = src->gens[i];
        if ((rc = dup_sums(&g.dat_sums, src->gens[i].dat_sums, g.dat_chunks)) != 0) break;
        if ((rc = dup_sums(&g.key_sums, src->gens[i].key_sums, g.key_chunks)) != 0) {
            free(g.dat_sums);
            break;
        }
        if ((rc = tide_archive_catalog_add(dst, &g)) != 0) gen_free(&g);
    }
    if (rc) tide_archive_catalog_clear(dst);
    return rc;
}

/* ---- encoding ---- */

static json_t *hex64(uint64_t v)
{
    char buf[17];

    snprintf(buf, sizeof buf, "%016" PRIx64, v);
    return json_string(buf);
}

static json_t *sums_json(const uint64_t *sums, unsigned n)
{
    json_t *a = json_array();

    for (unsigned i = 0; a && i < n; i++)
        if (json_array_append_new(a, hex64(sums[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *gen_json(const tide_archive_gen *g)
{
    json_t *o = json_pack("{s:I, s:s, s:o, s:o, s:i, s:i, s:I}", "id", (json_int_t)g->id, "state",
                          tide_archive_state_name(g->state), "uid", hex64(g->uid), "salt",
                          hex64(g->salt), "key_size", (int)g->key_size, "block_size",
                          (int)g->block_size, "chunk_bytes", (json_int_t)g->chunk_bytes);

    if (o == NULL || g->state == TIDE_ARCHIVE_OPEN) return o;
    if (json_object_set_new(o, "dat_bytes", json_integer((json_int_t)g->dat_bytes)) ||
        json_object_set_new(o, "key_bytes", json_integer((json_int_t)g->key_bytes)) ||
        json_object_set_new(o, "records", json_integer((json_int_t)g->records)) ||
        json_object_set_new(o, "dat_xxh64", sums_json(g->dat_sums, g->dat_chunks)) ||
        json_object_set_new(o, "key_xxh64", sums_json(g->key_sums, g->key_chunks)) ||
        json_object_set_new(o, "filter_bytes", json_integer((json_int_t)g->filter_bytes)) ||
        json_object_set_new(o, "filter_xxh64", hex64(g->filter_sum)) ||
        json_object_set_new(o, "sealed_unix_us", json_integer((json_int_t)g->sealed_unix_us))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int tide_archive_catalog_encode(const tide_archive_catalog *c, char **out, size_t *len)
{
    json_t *root, *gens;
    int rc = 0;

    *out = NULL;
    *len = 0;
    root = json_pack("{s:i, s:s, s:i, s:s, s:I}", "tide_archive", 1, "prefix", c->prefix, "keep",
                     (int)c->keep, "writer", c->writer, "updated_unix_us",
                     (json_int_t)c->updated_unix_us);
    gens = json_array();
    if (root == NULL || gens == NULL) {
        json_decref(gens);
        rc = TIDE_ENOMEM;
        goto out;
    }
    for (unsigned i = 0; i < c->count; i++) {
        json_t *g = gen_json(&c->gens[i]);
        if (g == NULL || json_array_append_new(gens, g) != 0) {
            json_decref(gens);
            rc = TIDE_ENOMEM;
            goto out;
        }
    }
    if (json_object_set_new(root, "generations", gens) != 0) {
        rc = TIDE_ENOMEM;
        goto out;
    }
    if ((*out = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) == NULL) {
        rc = TIDE_ENOMEM;
        goto out;
    }
    *len = strlen(*out);
out:
    json_decref(root);
    return rc ? tide_err_set(rc, "archive %s: out of memory encoding the manifest", c->prefix) : 0;
}

/* ---- decoding ---- */

typedef struct decoder {
    const char *name;        /* the object, for messages */
    char where[64];          /* "generations[3]" */
} decoder;

static int bad(const decoder *d, const char *member, const char *what)
{
    return tide_err_set(TIDE_ECORRUPT, "%s: %s%s%s: %s", d->name, d->where, d->where[0] ? "." : "",
                        member, what);
}

static int get_u64(const decoder *d, json_t *o, const char *member, uint64_t *v)
{
    json_t *j = json_object_get(o, member);

    if (!json_is_integer(j)) return bad(d, member, j ? "not an integer" : "missing");
    if (json_integer_value(j) < 0) return bad(d, member, "negative");
    *v = (uint64_t)json_integer_value(j);
    return 0;
}

static int get_unsigned(const decoder *d, json_t *o, const char *member, unsigned max, unsigned *v)
{
    uint64_t x;
    int rc = get_u64(d, o, member, &x);

    if (rc == 0 && x > max) return bad(d, member, "out of range");
    if (rc == 0) *v = (unsigned)x;
    return rc;
}

static int parse_hex(const char *s, uint64_t *v)
{
    char *end;

    if (s == NULL || strlen(s) != 16) return -1;
    *v = strtoull(s, &end, 16);
    return *end ? -1 : 0;
}

static int get_hex(const decoder *d, json_t *o, const char *member, uint64_t *v)
{
    json_t *j = json_object_get(o, member);

    if (!json_is_string(j)) return bad(d, member, j ? "not a string" : "missing");
    if (parse_hex(json_string_value(j), v) != 0) return bad(d, member, "not 16 hex digits");
    return 0;
}

static int get_sums(const decoder *d, json_t *o, const char *member, unsigned n, uint64_t **out)
{
    json_t *a = json_object_get(o, member);

    *out = NULL;
    if (!json_is_array(a)) return bad(d, member, a ? "not an array" : "missing");
    if (json_array_size(a) != n) return bad(d, member, "its count differs from the chunks' (bytes / chunk_bytes)");
    if (n == 0) return 0;
    if ((*out = malloc(n * sizeof **out)) == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory");
    for (unsigned i = 0; i < n; i++)
        if (parse_hex(json_string_value(json_array_get(a, i)), &(*out)[i]) != 0) {
            free(*out);
            *out = NULL;
            return bad(d, member, "an element is not 16 hex digits");
        }
    return 0;
}

static int decode_gen(const decoder *d, json_t *o, tide_archive_gen *g)
{
    const char *state;
    int rc;

    memset(g, 0, sizeof *g);
    if (!json_is_object(o)) return bad(d, "", "not an object");
    state = json_string_value(json_object_get(o, "state"));
    if (state == NULL) return bad(d, "state", "missing");
    if (strcmp(state, "open") == 0) g->state = TIDE_ARCHIVE_OPEN;
    else if (strcmp(state, "sealed") == 0) g->state = TIDE_ARCHIVE_SEALED;
    else if (strcmp(state, "deleting") == 0) g->state = TIDE_ARCHIVE_DELETING;
    else return bad(d, "state", "neither open, sealed nor deleting");
    if ((rc = get_u64(d, o, "id", &g->id)) || (rc = get_hex(d, o, "uid", &g->uid)) ||
        (rc = get_hex(d, o, "salt", &g->salt)) ||
        (rc = get_unsigned(d, o, "key_size", 65535, &g->key_size)) ||
        (rc = get_unsigned(d, o, "block_size", 1u << 20, &g->block_size)) ||
        (rc = get_u64(d, o, "chunk_bytes", &g->chunk_bytes)))
        return rc;
    if (g->id == 0) return bad(d, "id", "0 is no generation");
    if (g->chunk_bytes < TIDE_ARCHIVE_CHUNK_MIN || g->chunk_bytes > TIDE_ARCHIVE_CHUNK_MAX)
        return bad(d, "chunk_bytes", "out of range");
    if (g->state == TIDE_ARCHIVE_OPEN) return 0;
    if ((rc = get_u64(d, o, "dat_bytes", &g->dat_bytes)) ||
        (rc = get_u64(d, o, "key_bytes", &g->key_bytes)) ||
        (rc = get_u64(d, o, "records", &g->records)) ||
        (rc = get_u64(d, o, "filter_bytes", &g->filter_bytes)) ||
        (rc = get_hex(d, o, "filter_xxh64", &g->filter_sum)) ||
        (rc = get_u64(d, o, "sealed_unix_us", &g->sealed_unix_us)))
        return rc;
    g->dat_chunks = tide_archive_chunks(g->dat_bytes, g->chunk_bytes);
    g->key_chunks = tide_archive_chunks(g->key_bytes, g->chunk_bytes);
    if ((rc = get_sums(d, o, "dat_xxh64", g->dat_chunks, &g->dat_sums)) != 0) return rc;
    if ((rc = get_sums(d, o, "key_xxh64", g->key_chunks, &g->key_sums)) != 0) {
        gen_free(g);
        return rc;
    }
    return 0;
}

int tide_archive_catalog_decode(const char *text, size_t len, const char *name,
                                const char *prefix, tide_archive_catalog *c)
{
    decoder d = { name, "" };
    json_error_t jerr;
    json_t *root, *gens;
    const char *p;
    uint64_t version = 0;
    int rc;

    tide_archive_catalog_init(c, prefix);
    if ((root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL)
        return tide_err_set(TIDE_ECORRUPT, "%s: not JSON: line %d: %s", name, jerr.line, jerr.text);
    if (!json_is_object(root)) {
        rc = bad(&d, "(top)", "not an object");
        goto out;
    }
    if ((rc = get_u64(&d, root, "tide_archive", &version)) != 0) goto out;
    if (version != 1) {
        rc = tide_err_set(TIDE_EVERSION, "%s: format %" PRIu64 ", this Tide reads format 1", name,
                          version);
        goto out;
    }
    p = json_string_value(json_object_get(root, "prefix"));
    if (p == NULL || !tide_archive_prefix_valid(p)) {
        rc = bad(&d, "prefix", "missing or not a prefix");
        goto out;
    }
    if (prefix && strcmp(p, prefix) != 0) {
        rc = bad(&d, "prefix", "names another prefix");
        goto out;
    }
    snprintf(c->prefix, sizeof c->prefix, "%s", p);
    if ((rc = get_unsigned(&d, root, "keep", 1000, &c->keep)) != 0) goto out;
    if ((rc = get_u64(&d, root, "updated_unix_us", &c->updated_unix_us)) != 0) goto out;
    p = json_string_value(json_object_get(root, "writer"));
    snprintf(c->writer, sizeof c->writer, "%s", p ? p : "");
    gens = json_object_get(root, "generations");
    if (!json_is_array(gens)) {
        rc = bad(&d, "generations", gens ? "not an array" : "missing");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(gens); i++) {
        tide_archive_gen g;

        snprintf(d.where, sizeof d.where, "generations[%zu]", i);
        if ((rc = decode_gen(&d, json_array_get(gens, i), &g)) != 0) goto out;
        if (c->count && g.id >= c->gens[c->count - 1].id) {     /* invariant 1 */
            gen_free(&g);
            rc = bad(&d, "id", "not below the one before (the list is newest first)");
            goto out;
        }
        if ((rc = tide_archive_catalog_add(c, &g)) != 0) {
            gen_free(&g);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    if (rc) tide_archive_catalog_clear(c);
    return rc;
}
