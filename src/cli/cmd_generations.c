/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_generations.c: `tide generations DIR`, a node's generations on disk.
 *
 * With online delete on a node's directory holds a manifest,
 * tide.generations, naming complete stores in gen-NNNNNNNNNNNN/ newest
 * first (gen/gens.h has the layout). This lists what tide_gens_inspect
 * reads: the manifest's figures (keep, rotations, the last rotation's time
 * in ISO-8601 UTC and in microseconds), each generation newest first with
 * its directory, whether it takes the writes, its three file sizes, the
 * disk bytes of them all, and the gen-* directories the manifest does not
 * name: what tided removes at its next start. It takes no writer's lock
 * and opens nothing for writing, so it is safe on a live node (its one
 * lock, the readers' shared one on each generation's tide.live, keeps a
 * rotation from cutting a generation it reads).
 *
 * A plain store (no manifest) is not an error: the answer is that online
 * delete has never been turned on there. A directory with neither is.
 *
 * With an archive's prefix (--archive-prefix, or TIDE_ARCHIVE_PREFIX as
 * tided reads it; the pool, conf, user and timeout likewise) it also reads
 * the archive's manifest, PREFIX.manifest, from the RADOS pool (one
 * connection, rados.h; the manifest decoded by catalog.h) and says, for
 * each local generation, what the archive holds of it: sealed (all of it,
 * so a rotation may drop the local copy), open with the data bytes there
 * (its chunks' sizes, contiguous from chunk 0, as the archiver's resume
 * counts them), being deleted, or absent; a generation the manifest lists
 * under this id for another store (another uid) is said to be another
 * store's. Then the archived generations the directory no longer holds.
 * Nothing is written to the pool. Which archive is never guessed from
 * tided's settings file: the prefix is given, or nothing is asked.
 *
 * Invariants:
 *   1. The JSON object has the same members in the same order whatever
 *      DIR holds (null where there is nothing: "generations" is null for a
 *      plain store, "archive" and each generation's "archive" null when no
 *      prefix was given); its counts and sizes are JSON integers.
 *   2. Exit CLI_OK only with the listing (or the plain-store answer)
 *      printed and, when a prefix was given, the archive read; a
 *      generation that cannot be inspected is listed with its problem, an
 *      archive that cannot be read is said with the reason, and either
 *      makes the exit status CLI_FAIL.
 *
 * Never: open a generation (that would take a writer's lock and could
 * recover it), remove an unnamed directory (that is tided's, at its
 * start), or write to the archive's pool.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/catalog.h"
#include "archive/rados.h"
#include "cli/cli.h"
#include "gen/gens.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/err.h"

static const char help_generations[] =
"NAME\n"
"    tide generations - list a node's generations (online delete), and\n"
"    what its archive in Ceph RADOS holds of them\n"
"\n"
"SYNOPSIS\n"
"    tide generations DIR [--json]\n"
"    tide generations DIR --archive-prefix NAME [--archive-pool NAME]\n"
"                     [--archive-conf FILE] [--archive-user NAME]\n"
"                     [--archive-timeout S] [--json]\n"
"\n"
"DESCRIPTION\n"
"    With online delete on, a node's data directory DIR holds a manifest,\n"
"    tide.generations, and one complete store per generation in\n"
"    gen-NNNNNNNNNNNN/ (the id, zero-padded to 12 digits). The newest\n"
"    generation takes the writes; reads look newest first; each rotation\n"
"    puts a new empty generation in front and, once the manifest holds\n"
"    'keep' of them, drops the oldest whole (docs/ROTATION.md).\n"
"\n"
"    This prints the manifest (keep, the rotations made since online\n"
"    delete was turned on, the last rotation's time as ISO-8601 UTC and in\n"
"    microseconds since the Unix epoch), then each generation newest first:\n"
"    its id, its directory, writable (the newest) or read-only, and the\n"
"    sizes of its nudb.dat, nudb.key and nudb.log; then the disk bytes of\n"
"    all of them, and every gen-* directory the manifest does not name:\n"
"    a rotation's leftover that tided removes at its next start.\n"
"\n"
"    The generations listed are those of one manifest: when a node's\n"
"    rotation changes it while they are read, they are read again, so a\n"
"    generation a rotation drops meanwhile is never listed as missing.\n"
"    (A rotation under way may show its new directory, or the one it is\n"
"    deleting, among those the manifest does not name.)\n"
"\n"
"    It reads the manifest and the store headers only: no writer's lock,\n"
"    no recovery, nothing written, so it is safe while a node runs on DIR.\n"
"    While it reads a generation's headers it holds the readers' shared\n"
"    lock on its tide.live, so a rotation never cuts them under it.\n"
"\n"
"    A plain store (nudb.dat and nudb.key in DIR itself, no manifest) is\n"
"    answered 'DIR is a plain store: online delete has never been turned\n"
"    on here', exit 0.\n"
"\n"
"THE ARCHIVE\n"
"    A node with archive=rados uploads each generation's nudb.dat to a\n"
"    Ceph RADOS pool as it grows and seals the generation there once a\n"
"    rotation has made it read-only; it drops a local generation only\n"
"    after the archive has sealed it. Given the archive's prefix (the\n"
"    node's archive_prefix), this reads the archive's manifest,\n"
"    PREFIX.manifest, and adds under each local generation what the\n"
"    archive holds of it:\n"
"\n"
"      sealed    all of it: nudb.dat and nudb.key there, with their sizes\n"
"                and the time of the seal; a rotation may drop it here\n"
"      open      being uploaded: the bytes of its nudb.dat there (its\n"
"                data objects' sizes, contiguous from the first), against\n"
"                the bytes here\n"
"      deleting  archive_keep is removing it from the archive\n"
"      absent    nothing of it there yet\n"
"\n"
"    A generation the manifest lists under this id for another store\n"
"    (another uid in nudb.key's header) is said to be another store's:\n"
"    the prefix is another node's, or this directory was made anew under\n"
"    an old prefix (tide doctor's archive_conflict). Then the archived\n"
"    generations this directory no longer holds, newest first, with\n"
"    their sizes, records and seal times: what a read that misses every\n"
"    local generation finds there.\n"
"\n"
"    It connects to the cluster as the node does (librados, every wait\n"
"    bounded by --archive-timeout), reads the manifest and the sizes of\n"
"    the open generations' data objects, and writes nothing. Which\n"
"    archive is never guessed from tided's settings file: without a\n"
"    prefix (--archive-prefix or TIDE_ARCHIVE_PREFIX) the archive is not\n"
"    asked. A prefix with no manifest is answered 'nothing archived\n"
"    under this prefix'.\n"
"\n"
"OPTIONS\n"
"    --archive-prefix NAME\n"
"                 the node's archive_prefix: the archive's objects are\n"
"                 named NAME.something. Asks the archive.\n"
"    --archive-pool NAME\n"
"                 the RADOS pool (default tide, as tided's archive_pool)\n"
"    --archive-conf FILE\n"
"                 the ceph.conf naming the monitors and the keyring\n"
"                 (default: librados' own search, $CEPH_CONF then\n"
"                 /etc/ceph/ceph.conf)\n"
"    --archive-user NAME\n"
"                 the Ceph client's id without \"client.\" (default admin)\n"
"    --archive-timeout S\n"
"                 the longest one call to the cluster waits, 1 to 3600\n"
"                 seconds (default 10)\n"
"    --json       print one JSON object: path, plain_store (true or false),\n"
"                 keep, rotations, last_rotation_unix_us, last_rotation\n"
"                 (ISO-8601, null for never), generations (newest first,\n"
"                 each with id, dir, writable, dat_file_bytes,\n"
"                 key_file_bytes, log_file_bytes, bytes, problem, and\n"
"                 archive: null without a prefix, else state, same_store,\n"
"                 uploaded_bytes, dat_bytes, key_bytes, sealed_unix_us;\n"
"                 null for a plain store), disk_bytes, unnamed (the\n"
"                 directory names), unnamed_count, and archive (null\n"
"                 without a prefix; else pool, prefix, conf, user, error\n"
"                 (null when read), manifest (true when there is one),\n"
"                 writer, updated_unix_us, keep, listed, sealed and\n"
"                 not_held: the archived generations the directory does\n"
"                 not hold, each with id, state, uploaded_bytes, dat_bytes,\n"
"                 key_bytes, records, sealed_unix_us). Sizes and counts\n"
"                 are integers; the members are the same for every DIR.\n"
"    -h, --help   print this text\n"
"\n"
"ENVIRONMENT\n"
"    TIDE_ARCHIVE_PREFIX, TIDE_ARCHIVE_POOL, TIDE_ARCHIVE_CONF,\n"
"    TIDE_ARCHIVE_USER, TIDE_ARCHIVE_TIMEOUT\n"
"                 the same settings as tided reads them from its\n"
"                 environment; a flag given wins. TIDE_ARCHIVE_PREFIX set\n"
"                 asks the archive as --archive-prefix does.\n"
"\n"
"EXIT STATUS\n"
"    0 listed (or DIR is a plain store), and the archive read when asked;\n"
"    1 the manifest is damaged, a generation cannot be read (it is listed\n"
"    with its problem), or the archive could not be read (the cluster did\n"
"    not answer, the pool is missing, the key was refused, the manifest\n"
"    is not one: the listing is printed, then why); 2 no store at DIR\n"
"    (neither a manifest nor a plain store), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide generations /var/lib/tide/db\n"
"    tide generations --json db | jq '.generations[0].dir, .disk_bytes'\n"
"    tide generations /var/lib/tide/db --archive-prefix node1 \\\n"
"        --archive-conf /etc/ceph/ceph.conf\n"
"    TIDE_ARCHIVE_PREFIX=node1 tide generations --json db \\\n"
"        | jq -r '.generations[] | \"\\(.id) \\(.archive.state)\"'\n";

/* The verb's settings: flags over the environment's TIDE_ARCHIVE_*. */
typedef struct gen_opts {
    int json;
    const char *prefix, *pool, *conf, *user;  /* prefix NULL: the archive is not asked */
    unsigned timeout_s;
    const char *env_timeout;    /* TIDE_ARCHIVE_TIMEOUT, read only when the archive is asked */
    int archive_flag;           /* an --archive-* flag other than the prefix was given */
    int timeout_flag;           /* --archive-timeout was given */
} gen_opts;

enum { OPT_PREFIX = 0x100, OPT_POOL, OPT_CONF, OPT_USER, OPT_TIMEOUT };

static const struct option options[] = {
    { "json",            no_argument,       NULL, 'j' },
    { "archive-prefix",  required_argument, NULL, OPT_PREFIX },
    { "archive-pool",    required_argument, NULL, OPT_POOL },
    { "archive-conf",    required_argument, NULL, OPT_CONF },
    { "archive-user",    required_argument, NULL, OPT_USER },
    { "archive-timeout", required_argument, NULL, OPT_TIMEOUT },
    { NULL, 0, NULL, 0 },
};

/* A timeout in whole seconds, 1 to 3600; `from` names where it came from. */
static int set_timeout(gen_opts *o, const char *text, const char *from)
{
    uint64_t v;

    if (cli_parse_u64(text, 1, 3600, &v) != 0)
        return cli_usage("generations", "%s '%s' is not a whole number of seconds from 1 to 3600", from, text);
    o->timeout_s = (unsigned)v;
    return CLI_OK;
}

static int option(void *arg, int id, const char *val)
{
    gen_opts *o = arg;

    switch (id) {
    case 'j': o->json = 1; break;
    case OPT_PREFIX: o->prefix = val; break;
    case OPT_POOL: o->pool = val; o->archive_flag = 1; break;
    case OPT_CONF: o->conf = val; o->archive_flag = 1; break;
    case OPT_USER: o->user = val; o->archive_flag = 1; break;
    default: o->archive_flag = o->timeout_flag = 1; return set_timeout(o, val, "--archive-timeout");
    }
    return CLI_OK;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && v[0] ? v : dflt;
}

/* The environment's TIDE_ARCHIVE_* as tided reads them, the defaults
 * after. Before the flags, which win. */
static void opts_from_env(gen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->prefix = env_or("TIDE_ARCHIVE_PREFIX", NULL);
    o->pool = env_or("TIDE_ARCHIVE_POOL", "tide");
    o->conf = env_or("TIDE_ARCHIVE_CONF", NULL);
    o->user = env_or("TIDE_ARCHIVE_USER", "admin");
    o->env_timeout = env_or("TIDE_ARCHIVE_TIMEOUT", NULL);
    o->timeout_s = 10;
}

/* After the flags: what asks the archive is whole and well formed. */
static int opts_check(gen_opts *o)
{
    if (o->prefix == NULL && o->archive_flag)
        return cli_usage("generations", "--archive-pool, --archive-conf, --archive-user and --archive-timeout "
                         "need --archive-prefix (or TIDE_ARCHIVE_PREFIX): which node's archive to read");
    if (o->prefix == NULL) return CLI_OK;        /* the archive is not asked */
    if (!tide_archive_prefix_valid(o->prefix))
        return cli_usage("generations", "archive prefix '%s' is not one: 1 to %d bytes of A-Z a-z 0-9 _ -, not "
                         "starting with -", o->prefix, TIDE_ARCHIVE_PREFIX_MAX);
    return o->env_timeout && !o->timeout_flag ? set_timeout(o, o->env_timeout, "TIDE_ARCHIVE_TIMEOUT") : CLI_OK;
}

/* What the archive holds, read once (nothing when no prefix was asked). */
typedef struct arch_view {
    int      asked;
    char     error[700];         /* why it could not be read; "" when it was */
    int      has_manifest;       /* 0: nothing archived under the prefix */
    tide_archive_catalog cat;
    uint64_t *open_bytes;        /* per entry of cat: an open one's data bytes there */
} arch_view;

static void arch_view_free(arch_view *v)
{
    tide_archive_catalog_clear(&v->cat);
    free(v->open_bytes);
}

/* An open generation's nudb.dat bytes in the archive: its chunks' sizes
 * from chunk 0, to the first missing or short one (what the archiver's
 * resume counts). One stat a chunk. */
static int open_bytes(tide_rados *r, const char *prefix, const tide_archive_gen *g, uint64_t *out)
{
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint64_t size;
    int rc;

    *out = 0;
    for (unsigned c = 0;; c++) {
        tide_archive_oid_dat(oid, prefix, g->id, c);
        if ((rc = tide_rados_stat(r, oid, &size)) == TIDE_ENOENT) break;
        if (rc) return rc;
        *out = (uint64_t)c * g->chunk_bytes + size;
        if (size < g->chunk_bytes) break;
    }
    tide_err_clear();
    return 0;
}

/* Connect, read PREFIX.manifest and the open generations' sizes into v.
 * A failure is recorded in v->error, with its code returned. */
static int archive_read(const gen_opts *o, arch_view *v)
{
    tide_rados_opts ro = { .conf = o->conf, .user = o->user, .pool = o->pool, .timeout_s = o->timeout_s };
    char oid[TIDE_ARCHIVE_OID_CAP], *text = NULL;
    tide_rados *r = NULL;
    size_t len = 0;
    int rc;

    v->asked = 1;
    tide_archive_catalog_init(&v->cat, o->prefix);
    if ((rc = tide_rados_connect(&r, &ro)) != 0) goto out;
    tide_archive_oid_manifest(oid, o->prefix);
    rc = tide_rados_read_full(r, oid, TIDE_ARCHIVE_MANIFEST_CAP, &text, &len, NULL);
    if (rc == TIDE_ENOENT) {                    /* nothing archived under this prefix */
        tide_err_clear();
        rc = 0;
        goto out;
    }
    if (rc || (rc = tide_archive_catalog_decode(text, len, oid, o->prefix, &v->cat)) != 0) goto out;
    v->has_manifest = 1;
    if ((v->open_bytes = calloc(v->cat.count ? v->cat.count : 1, sizeof *v->open_bytes)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "out of memory");
        goto out;
    }
    for (unsigned i = 0; rc == 0 && i < v->cat.count; i++)
        if (v->cat.gens[i].state == TIDE_ARCHIVE_OPEN)
            rc = open_bytes(r, o->prefix, &v->cat.gens[i], &v->open_bytes[i]);
out:
    if (rc) snprintf(v->error, sizeof v->error, "%s: %s", tide_strerror(rc), tide_last_error());
    free(text);
    tide_rados_close(r);
    return rc;
}

/* What the archive holds of one generation. */
typedef struct arch_state {
    const char *state;           /* sealed, open, deleting, absent */
    int same_store;              /* its uid is the local one's: 1, 0; -1 absent */
    uint64_t uploaded;           /* sealed: data and key bytes; open: data bytes */
    const tide_archive_gen *g;   /* NULL: absent */
} arch_state;

static arch_state state_of(const arch_view *v, uint64_t id, uint64_t uid)
{
    arch_state st = { "absent", -1, 0, NULL };

    for (unsigned i = 0; i < v->cat.count; i++) {
        const tide_archive_gen *g = &v->cat.gens[i];
        if (g->id != id) continue;
        st.g = g;
        st.state = tide_archive_state_name(g->state);
        st.same_store = g->uid == uid;
        st.uploaded = g->state == TIDE_ARCHIVE_SEALED ? g->dat_bytes + g->key_bytes
                    : g->state == TIDE_ARCHIVE_OPEN ? v->open_bytes[i] : 0;
    }
    return st;
}

/* 1 when the listing holds generation `id`. */
static int held(const tide_gens_listing *l, uint64_t id)
{
    for (unsigned i = 0; l && i < l->manifest.count; i++)
        if (l->manifest.gens[i].id == id) return 1;
    return 0;
}

static uint64_t gen_bytes(const tide_store_info *in)
{
    return in->dat_file_bytes + in->key_file_bytes + in->log_file_bytes;
}

static json_t *json_u64(uint64_t v) { return json_integer((json_int_t)v); }

/* What the archive holds of one generation, as JSON. */
static json_t *arch_gen_json(const arch_state *st)
{
    const tide_archive_gen *g = st->g;
    int sealed = g && g->state == TIDE_ARCHIVE_SEALED;
    json_t *o = json_object();

    json_object_set_new(o, "state", json_string(st->state));
    json_object_set_new(o, "same_store", st->same_store < 0 ? json_null() : json_boolean(st->same_store));
    json_object_set_new(o, "uploaded_bytes", json_u64(st->uploaded));
    json_object_set_new(o, "dat_bytes", sealed ? json_u64(g->dat_bytes) : json_null());
    json_object_set_new(o, "key_bytes", sealed ? json_u64(g->key_bytes) : json_null());
    json_object_set_new(o, "records", sealed ? json_u64(g->records) : json_null());
    json_object_set_new(o, "sealed_unix_us", sealed ? json_u64(g->sealed_unix_us) : json_null());
    return o;
}

/* The top-level "archive" member (invariant 1). */
static json_t *archive_json(const gen_opts *o, const arch_view *v, const tide_gens_listing *l)
{
    json_t *a, *not_held = json_array();
    unsigned sealed = 0;

    if (!v->asked) return json_decref(not_held), json_null();
    for (unsigned i = 0; i < v->cat.count; i++) {
        const tide_archive_gen *g = &v->cat.gens[i];
        sealed += g->state == TIDE_ARCHIVE_SEALED;
        if (held(l, g->id)) continue;
        arch_state st = state_of(v, g->id, g->uid);
        json_t *e = json_object();
        json_object_set_new(e, "id", json_u64(g->id));
        json_object_update_new(e, arch_gen_json(&st));
        json_object_del(e, "same_store");       /* no local store to compare */
        json_array_append_new(not_held, e);
    }
    a = json_object();
    json_object_set_new(a, "pool", json_string(o->pool));
    json_object_set_new(a, "prefix", json_string(o->prefix));
    json_object_set_new(a, "conf", o->conf ? json_string(o->conf) : json_null());
    json_object_set_new(a, "user", json_string(o->user));
    json_object_set_new(a, "error", v->error[0] ? json_string(v->error) : json_null());
    json_object_set_new(a, "manifest", json_boolean(v->has_manifest));
    json_object_set_new(a, "writer", v->has_manifest ? json_string(v->cat.writer) : json_null());
    json_object_set_new(a, "updated_unix_us", v->has_manifest ? json_u64(v->cat.updated_unix_us) : json_null());
    json_object_set_new(a, "keep", v->has_manifest ? json_integer(v->cat.keep) : json_null());
    json_object_set_new(a, "listed", json_integer(v->cat.count));
    json_object_set_new(a, "sealed", json_integer(sealed));
    json_object_set_new(a, "not_held", not_held);
    return a;
}

/* The object of invariant 1; l NULL for a plain store. */
static json_t *listing_json(const char *path, const tide_gens_listing *l, const gen_opts *op,
                            const arch_view *v)
{
    const tide_gen_manifest *m = l ? &l->manifest : NULL;
    json_t *o = json_object(), *gens = l ? json_array() : json_null(), *unnamed = json_array();
    char when[40];

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "plain_store", json_boolean(l == NULL));
    json_object_set_new(o, "keep", m ? json_integer(m->keep) : json_null());
    json_object_set_new(o, "rotations", m ? json_u64(m->rotations) : json_null());
    json_object_set_new(o, "last_rotation_unix_us", m ? json_u64(m->last_rotation_us) : json_null());
    json_object_set_new(o, "last_rotation", m && m->last_rotation_us
                        ? json_string(cli_iso8601_us(m->last_rotation_us, when, sizeof when))
                        : json_null());
    for (unsigned i = 0; m && i < m->count; i++) {
        const tide_store_info *in = &l->gens[i].info;
        json_t *g = json_object();
        json_object_set_new(g, "id", json_u64(m->gens[i].id));
        json_object_set_new(g, "dir", json_string(m->gens[i].dir));
        json_object_set_new(g, "writable", json_boolean(i == 0));
        json_object_set_new(g, "dat_file_bytes", json_u64(in->dat_file_bytes));
        json_object_set_new(g, "key_file_bytes", json_u64(in->key_file_bytes));
        json_object_set_new(g, "log_file_bytes", json_u64(in->log_file_bytes));
        json_object_set_new(g, "bytes", json_u64(gen_bytes(in)));
        json_object_set_new(g, "problem", l->gens[i].problem[0] ? json_string(l->gens[i].problem)
                                                                : json_null());
        if (v->asked && !v->error[0]) {
            arch_state st = state_of(v, m->gens[i].id, in->uid);
            json_object_set_new(g, "archive", arch_gen_json(&st));
        } else {
            json_object_set_new(g, "archive", json_null());
        }
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    json_object_set_new(o, "disk_bytes", l ? json_u64(l->disk_bytes) : json_null());
    for (unsigned i = 0; l && i < l->unnamed && i < 8; i++)
        json_array_append_new(unnamed, json_string(l->unnamed_dirs[i]));
    json_object_set_new(o, "unnamed", unnamed);
    json_object_set_new(o, "unnamed_count", json_integer(l ? l->unnamed : 0));
    json_object_set_new(o, "archive", archive_json(op, v, l));
    return o;
}

/* The line under a local generation: what the archive holds of it. */
static void arch_gen_text(const arch_view *v, uint64_t id, const tide_store_info *in)
{
    arch_state st = state_of(v, id, in->uid);
    const tide_archive_gen *g = st.g;
    char a[32], b[32], when[40];

    if (g && !st.same_store)
        printf("         archive: %s, but another store's (uid %016" PRIx64 ", this one's %016" PRIx64 "): the "
               "prefix holds another node's generations, or this directory was made anew under it\n",
               st.state, g->uid, in->uid);
    else if (g && g->state == TIDE_ARCHIVE_SEALED)
        printf("         archive: sealed %s: nudb.dat %s and nudb.key %s there\n",
               cli_iso8601_us(g->sealed_unix_us, when, sizeof when), cli_human(g->dat_bytes, a, sizeof a),
               cli_human(g->key_bytes, b, sizeof b));
    else if (g && g->state == TIDE_ARCHIVE_OPEN)
        printf("         archive: open: %" PRIu64 " bytes of its nudb.dat there (%s), of %" PRIu64 " here\n",
               st.uploaded, cli_human(st.uploaded, a, sizeof a), in->dat_file_bytes);
    else if (g)
        printf("         archive: %s (archive_keep is removing it)\n", st.state);
    else
        printf("         archive: absent: nothing of it there yet\n");
}

/* The archive's lines after the listing: where, what, and the archived
 * generations the directory no longer holds. */
static void archive_text(const gen_opts *o, const arch_view *v, const tide_gens_listing *l)
{
    char when[40], a[32], b[32];
    unsigned sealed = 0, gone = 0;

    printf("archive       rados pool %s, prefix %s", o->pool, o->prefix);
    if (v->error[0]) {
        printf(": not read: %s\n", v->error);
        return;
    }
    if (!v->has_manifest) {
        printf(": no %s.manifest: nothing archived under this prefix\n", o->prefix);
        return;
    }
    for (unsigned i = 0; i < v->cat.count; i++) {
        sealed += v->cat.gens[i].state == TIDE_ARCHIVE_SEALED;
        gone += !held(l, v->cat.gens[i].id);
    }
    printf(": %u generation%s listed, %u sealed; the manifest written by %s at %s\n", v->cat.count,
           v->cat.count == 1 ? "" : "s", sealed, v->cat.writer[0] ? v->cat.writer : "?",
           cli_iso8601_us(v->cat.updated_unix_us, when, sizeof when));
    if (gone == 0) {
        printf("not held      none: the directory holds every archived generation\n");
        return;
    }
    printf("not held      %u archived generation%s this directory does not hold, newest first:\n", gone,
           gone == 1 ? "" : "s");
    for (unsigned i = 0; i < v->cat.count; i++) {
        const tide_archive_gen *g = &v->cat.gens[i];
        if (held(l, g->id)) continue;
        if (g->state == TIDE_ARCHIVE_SEALED)
            printf("  %-6" PRIu64 " sealed    nudb.dat %s  nudb.key %s  %" PRIu64 " records  sealed %s\n", g->id,
                   cli_human(g->dat_bytes, a, sizeof a), cli_human(g->key_bytes, b, sizeof b), g->records,
                   cli_iso8601_us(g->sealed_unix_us, when, sizeof when));
        else if (g->state == TIDE_ARCHIVE_OPEN)
            printf("  %-6" PRIu64 " open      nudb.dat %s there, not sealed yet\n", g->id,
                   cli_human(v->open_bytes[i], a, sizeof a));
        else
            printf("  %-6" PRIu64 " %-9s (archive_keep is removing it)\n", g->id, tide_archive_state_name(g->state));
    }
}

static void listing_text(const char *path, const tide_gens_listing *l, const arch_view *v)
{
    const tide_gen_manifest *m = &l->manifest;
    char when[40], b[32];

    printf("directory     %s\n", path);
    printf("manifest      %s/%s: keep %u generations\n", path, TIDE_GEN_FILE, m->keep);
    printf("rotations     %llu\n", (unsigned long long)m->rotations);
    if (m->last_rotation_us)
        printf("last rotation %s (%llu us since the Unix epoch)\n",
               cli_iso8601_us(m->last_rotation_us, when, sizeof when),
               (unsigned long long)m->last_rotation_us);
    else
        printf("last rotation never\n");
    printf("generations   %u, newest first:\n", m->count);
    for (unsigned i = 0; i < m->count; i++) {
        const tide_store_info *in = &l->gens[i].info;
        printf("  %-6llu %s  %-9s  nudb.dat %llu  nudb.key %llu  nudb.log %llu  (%s)\n",
               (unsigned long long)m->gens[i].id, m->gens[i].dir, i == 0 ? "writable" : "read-only",
               (unsigned long long)in->dat_file_bytes, (unsigned long long)in->key_file_bytes,
               (unsigned long long)in->log_file_bytes, cli_human(gen_bytes(in), b, sizeof b));
        if (l->gens[i].problem[0]) printf("         PROBLEM: %s\n", l->gens[i].problem);
        if (v->asked && !v->error[0]) arch_gen_text(v, m->gens[i].id, in);
    }
    printf("disk          %llu bytes (%s) in the named generations\n",
           (unsigned long long)l->disk_bytes, cli_human(l->disk_bytes, b, sizeof b));
    if (l->unnamed == 0) {
        printf("unnamed       none\n");
        return;
    }
    printf("unnamed       %u gen-* director%s the manifest does not name (tided removes %s at "
           "its next start):\n", l->unnamed, l->unnamed == 1 ? "y" : "ies",
           l->unnamed == 1 ? "it" : "them");
    for (unsigned i = 0; i < l->unnamed && i < 8; i++) printf("  %s\n", l->unnamed_dirs[i]);
    if (l->unnamed > 8) printf("  and %u more\n", l->unnamed - 8);
}

/* No manifest: a plain store, or nothing at all. */
static int plain_or_nothing(const char *path, const gen_opts *o, arch_view *v)
{
    tide_store_info in;
    int rc = tide_store_inspect(path, NULL, &in);

    if (rc == TIDE_ENOENT) {
        cli_error("generations", "%s: no store here: neither %s nor a plain store's nudb.dat "
                  "and nudb.key", path, TIDE_GEN_FILE);
        return CLI_USAGE;
    }
    if (rc) return cli_fail_store("generations", rc);
    if (o->prefix) archive_read(o, v);
    if (o->json) return cli_json_print("generations", listing_json(path, NULL, o, v));
    printf("%s is a plain store: online delete has never been turned on here\n", path);
    if (v->asked) archive_text(o, v, NULL);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    tide_gens_listing *l = NULL;
    arch_view v;
    gen_opts o;
    cli_args a;
    int rc, ret;

    memset(&v, 0, sizeof v);
    opts_from_env(&o);
    if (cli_parse(&cli_verb_generations, argc, argv, &o, &a, &rc))
        return rc == CLI_FAIL ? CLI_USAGE : rc;     /* no directory: no store (EXIT STATUS) */
    if ((rc = opts_check(&o)) != CLI_OK) return rc;
    l = calloc(1, sizeof *l);
    if (l == NULL) return cli_error("generations", "out of memory");
    rc = tide_gens_inspect(a.path, NULL, l);
    if (rc == TIDE_ENOENT) {
        ret = plain_or_nothing(a.path, &o, &v);
        goto out;
    }
    if (rc) {
        ret = cli_fail_store("generations", rc);
        goto out;
    }
    if (o.prefix) archive_read(&o, &v);
    if (o.json) {
        ret = cli_json_print("generations", listing_json(a.path, l, &o, &v));
    } else {
        listing_text(a.path, l, &v);
        if (v.asked) archive_text(&o, &v, l);
        ret = CLI_OK;
    }
    for (unsigned i = 0; ret == CLI_OK && i < l->manifest.count; i++)
        if (l->gens[i].problem[0])
            ret = cli_error("generations", "%s/%s: %s", a.path, l->manifest.gens[i].dir,
                            l->gens[i].problem);
out:
    if (ret == CLI_OK && v.error[0])
        ret = cli_error("generations", "the archive (pool %s, prefix %s): %s", o.pool, o.prefix, v.error);
    arch_view_free(&v);
    free(l);
    return ret;
}

const cli_verb cli_verb_generations = {
    .name = "generations", .usage = "generations DIR [--archive-prefix NAME]",
    .summary = "list a node's generations (online delete) and what its archive holds",
    .help = help_generations, .run = run,
    .options = options, .option = option, .args = CLI_ARGS_PATH, .store = 1,
};
