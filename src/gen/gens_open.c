/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens_open.c: opening a data directory as generations or as one plain
 * store: adoption of a plain store, creation of generation 1, and the
 * reconcile of the directory with its manifest.
 *
 * What open finds, and does:
 *
 *     manifest  root nudb.*  gen-000000000001/  online_delete  action
 *     no        no           no                 0              plain: create (if asked), open
 *     no        yes          -                  0              plain: open
 *     no        no           no                 1              create generation 1
 *     no        yes          no                 1              adopt (below)
 *     no        any          yes                1              resume an adoption / creation
 *     no        any          other gen-*        any            TIDE_ECORRUPT, nothing changed
 *     yes       no           -                  any            open the generations
 *     yes       yes          -                  any            TIDE_EINVAL: say what to do
 *
 * Adoption, in this order, each step durable before the next:
 *   a. open and close the plain store through tide_store_open, so any
 *      interrupted commit is recovered and nudb.log is gone;
 *   b. mkdir DIR/gen-000000000001, sync DIR;
 *   c. rename nudb.dat, nudb.key (and nudb.log, if any) into it;
 *   d. sync gen-000000000001, then sync DIR;
 *   e. write the manifest (keep G, generation 1).
 * A crash anywhere leaves no manifest and gen-000000000001 present (after
 * b) or nothing changed (before b), so the next open with online_delete 1
 * resumes at c with whatever files are still in DIR. A rename made durable
 * Creation of generation 1 on an empty DIR is mkdir, sync DIR, create,
 * manifest; a resumed gen-000000000001 must open before the manifest names
 * it, and one that does not but holds no object (a creation a crash cut
 * short) is made again.
 * A rename made durable
 * half by half (its target directory synced, its source not) can leave a
 * file under both names: resume compares the two and, when they hold the
 * same bytes, unlinks the root one; different bytes are TIDE_ECORRUPT
 * naming the file (nothing is removed).
 *
 * Reconcile, with a manifest: every generation it names must be there and
 * open (else TIDE_ECORRUPT naming it, and nothing is changed: the check
 * and the opens come before any removal); then every gen-* directory it
 * does not name (a rotation's new directory whose manifest write never
 * became durable, or a dropped one whose delete a crash cut short) is
 * removed with its files, logged at WARN with its bytes, and a stale
 * tide.generations.tmp is unlinked.
 *
 * Invariants:
 *   1. Nothing a manifest names is written, moved or removed on any error
 *      path of open (a named store is only opened, which may recover it as
 *      tide_store_open always does).
 *   2. The manifest is written by adoption only after every store file is
 *      durably inside gen-000000000001 and none is left in DIR.
 *   3. Every generation open holds has the newest's key size.
 *   4. Without a manifest, open removes, adopts and creates nothing while
 *      DIR holds a generation directory other than gen-000000000001 (a
 *      lost manifest: the directories may be the only copy of the data).
 *   5. Only the newest generation is opened with opts.store's
 *      index_lag_bytes (the deferred index); every older one with 0, so
 *      the tails of all open generations together stay within the one
 *      budget (gens_rotate.c stops the outgoing newest's at a rotation).
 *
 * Never: delete a directory whose name is not exactly a generation name
 * (gen- and the canonical digits), or a file of DIR itself.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen/gens_impl.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

static const char *const store_files[3] = { "nudb.dat", "nudb.key", "nudb.log" };

/* Which of the three store files DIR `dir` holds: bit i for store_files[i]. */
static int store_files_in(tide_io *io, const char *dir, unsigned *mask)
{
    *mask = 0;
    for (unsigned i = 0; i < 3; i++) {
        char p[TI_GENS_PATH_CAP];
        int rc = ti_gens_path(p, dir, store_files[i]);
        if (rc) return rc;
        rc = io->stat(io, p, NULL);
        if (rc == 0) *mask |= 1u << i;
        else if (rc != TIDE_ENOENT) return rc;
    }
    return 0;
}

int ti_gens_parse_name(const char *name, uint64_t *id)
{
    char canon[TIDE_GEN_DIR_CAP];
    uint64_t v = 0;
    if (strncmp(name, "gen-", 4) != 0 || name[4] == '\0') return 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (tide_gen_dir_name(v, canon, sizeof canon) != 0 || strcmp(canon, name) != 0) return 0;
    *id = v;
    return 1;
}

static void store_opts_of(const tide_gens *g, tide_store_opts *so)
{
    *so = g->opts.store;
    so->io = g->io;
}

/* Compare two files byte for byte: *same 1 when equal. */
static int same_bytes(tide_io *io, const char *a, const char *b, int *same)
{
    tide_file *fa = NULL, *fb = NULL;
    uint64_t na = 0, nb = 0;
    size_t cap = 1u << 20;
    uint8_t *buf = NULL;
    int rc;

    *same = 0;
    if ((rc = io->open(io, a, TIDE_IO_READ, &fa)) != 0) goto out;
    if ((rc = io->open(io, b, TIDE_IO_READ, &fb)) != 0) goto out;
    if ((rc = io->size(fa, &na)) != 0 || (rc = io->size(fb, &nb)) != 0) goto out;
    if (na != nb) goto out;
    buf = malloc(2 * cap);
    if (buf == NULL) { rc = tide_err_set(TIDE_ENOMEM, "%s: out of memory", a); goto out; }
    for (uint64_t off = 0; off < na; off += cap) {
        size_t n = na - off < cap ? (size_t)(na - off) : cap;
        if ((rc = io->read_at(fa, buf, n, off)) != 0) goto out;
        if ((rc = io->read_at(fb, buf + cap, n, off)) != 0) goto out;
        if (memcmp(buf, buf + cap, n) != 0) goto out;
    }
    *same = 1;
out:
    free(buf);
    if (fa) io->close(fa);
    if (fb) io->close(fb);
    return rc;
}

/* Adoption steps c and d: every store file still in DIR into gen1. */
static int move_root_files(tide_gens *g, const char *gen1)
{
    int rc = 0;
    for (unsigned i = 0; i < 3 && rc == 0; i++) {
        char from[TI_GENS_PATH_CAP], to[TI_GENS_PATH_CAP];
        int same;
        if ((rc = ti_gens_path(from, g->dir, store_files[i])) != 0) break;
        if ((rc = ti_gens_path(to, gen1, store_files[i])) != 0) break;
        rc = g->io->stat(g->io, from, NULL);
        if (rc == TIDE_ENOENT) { rc = 0; continue; }
        if (rc) break;
        rc = g->io->stat(g->io, to, NULL);
        if (rc == TIDE_ENOENT) { rc = g->io->rename(g->io, from, to); continue; }
        if (rc) break;
        rc = same_bytes(g->io, from, to, &same);
        if (rc == 0 && !same)
            rc = tide_err_set(TIDE_ECORRUPT, "%s: %s is both in the directory and in %s with "
                              "different bytes (an interrupted adoption cannot tell which is "
                              "the store's): move one away by hand", g->dir, store_files[i], to);
        if (rc == 0) rc = g->io->unlink(g->io, from);
    }
    if (rc == 0) rc = g->io->sync_dir(g->io, gen1);
    if (rc == 0) rc = g->io->sync_dir(g->io, g->dir);
    return rc;
}

static int create_in(tide_gens *g, const char *dir)
{
    tide_store_create_opts co;
    tide_store_create_opts_init(&co);
    co.key_size = g->opts.key_size;
    co.block_size = g->opts.block_size;
    co.io = g->io;
    return tide_store_create(dir, &co);
}

/* A resumed gen-000000000001 must open (recovering as an open does)
 * before a manifest names it. One that does not and holds no object is a
 * creation a crash cut short (its files written but not yet synced): it is
 * made again. One that holds objects is an error: nothing is removed. */
static int check_resumed(tide_gens *g, const char *gen1)
{
    tide_store *s = NULL;
    tide_store_opts so;
    tide_visit_stats st;
    uint64_t dat = 0;
    int rc, vrc;

    store_opts_of(g, &so);
    rc = tide_store_open(&s, gen1, &so);
    if (rc == 0) return tide_store_close(s);
    char why[512];
    snprintf(why, sizeof why, "%s", tide_last_error());
    ti_gens_file_sizes(g->io, gen1, &dat, NULL, NULL);
    memset(&st, 0, sizeof st);
    vrc = tide_store_visit_io(gen1, g->io, NULL, NULL, &st);
    if (dat > 92 && (vrc != 0 || st.data_records > 0))   /* 92: nudb.dat's header */
        return tide_err_set(TIDE_ECORRUPT, "%s: resuming the adoption: %s does not open (%s): "
                            "%s", g->dir, gen1, tide_strerror(rc), why);
    tide_log(TIDE_LOG_WARN, "%s: %s holds no object and does not open (%s): an interrupted "
             "creation; making it again", g->dir, gen1, why);
    for (unsigned i = 0; i < 3; i++) {
        char p[TI_GENS_PATH_CAP];
        if ((rc = ti_gens_path(p, gen1, store_files[i])) != 0) return rc;
        rc = g->io->unlink(g->io, p);
        if (rc && rc != TIDE_ENOENT) return rc;
    }
    if ((rc = g->io->sync_dir(g->io, gen1)) != 0) return rc;
    return create_in(g, gen1);
}

/* Adopt the plain store in DIR, or create generation 1, or resume either;
 * ends with the manifest written. `root` is store_files_in(DIR). */
static int adopt(tide_gens *g, unsigned root)
{
    char gen1[TI_GENS_PATH_CAP];
    tide_gen_manifest m;
    unsigned in_gen = 0;
    int is_dir = 0, rc;

    ti_gens_trace(g, "adopt");
    if ((rc = ti_gens_gen_path(gen1, g->dir, 1)) != 0) return rc;
    rc = g->io->stat(g->io, gen1, &is_dir);
    if (rc == 0 && !is_dir)
        return tide_err_set(TIDE_ECORRUPT, "%s: %s is not a directory", g->dir, gen1);
    if (rc && rc != TIDE_ENOENT) return rc;
    int resumed = rc == 0;
    if (rc == TIDE_ENOENT) {
        if (root & 3u) {   /* step a: recover, and check that it opens */
            tide_store *s = NULL;
            tide_store_opts so;
            store_opts_of(g, &so);
            rc = tide_store_open(&s, g->dir, &so);
            if (rc) return tide_err_prefix(rc, "%s: adopting the plain store", g->dir);
            if ((rc = tide_store_close(s)) != 0) return rc;
        }
        if ((rc = g->io->mkdir(g->io, gen1)) != 0) return rc;
        if ((rc = g->io->sync_dir(g->io, g->dir)) != 0) return rc;
    }
    if (root) {
        tide_log(TIDE_LOG_INFO, "%s: online delete: adopting the plain store as generation 1 "
                 "(gen-000000000001, no copy)", g->dir);
        if ((rc = move_root_files(g, gen1)) != 0) return rc;
    }
    if ((rc = store_files_in(g->io, gen1, &in_gen)) != 0) return rc;
    if ((in_gen & 3u) == 0) {   /* nothing to adopt: a new, empty generation 1 */
        if (in_gen) {   /* a log alone: no store was ever in it */
            char p[TI_GENS_PATH_CAP];
            if ((rc = ti_gens_path(p, gen1, "nudb.log")) != 0) return rc;
            if ((rc = g->io->unlink(g->io, p)) != 0) return rc;
        }
        if ((rc = create_in(g, gen1)) != 0) return rc;
    } else if (resumed && (rc = check_resumed(g, gen1)) != 0) {
        return rc;
    }
    if ((rc = tide_gen_manifest_init(&m, g->opts.keep ? g->opts.keep : TIDE_GEN_MIN, 1)) != 0)
        return rc;
    return tide_gen_manifest_write(g->io, g->dir, &m);
}

/* Open every generation the manifest names, newest first (invariant 1:
 * nothing else is done to them). On error every store opened is closed. */
static int open_named(tide_gens *g)
{
    tide_store_opts so;
    unsigned n = 0;
    int rc = 0;

    store_opts_of(g, &so);
    for (; n < g->m.count; n++) {
        const tide_gen *e = &g->m.gens[n];
        char p[TI_GENS_PATH_CAP];
        int is_dir = 0;
        if ((rc = ti_gens_path(p, g->dir, e->dir)) != 0) break;
        rc = g->io->stat(g->io, p, &is_dir);
        if (rc == TIDE_ENOENT || (rc == 0 && !is_dir)) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: generation %" PRIu64 " (%s) named by "
                              TIDE_GEN_FILE " is missing", g->dir, e->id, e->dir);
            break;
        }
        if (rc) break;
        /* Invariant 5: only the newest defers its index. An older one takes
         * no insert again; a tail it kept would be memory beyond the one
         * budget. A tail a crash left in
         * it is still recovered and indexed by its open (open.c, committer.c). */
        so.index_lag_bytes = n == 0 ? g->opts.store.index_lag_bytes : 0;
        rc = tide_store_open(&g->gens[n].s, p, &so);
        if (rc) {
            /* Busy (another handle) and out of memory say nothing about the
             * files: they keep their code; anything else is damage. */
            int code = rc == TIDE_EBUSY || rc == TIDE_ENOMEM ? rc : TIDE_ECORRUPT;
            rc = tide_err_prefix(code, "%s: generation %" PRIu64 " (%s) named by "
                                 TIDE_GEN_FILE " fails to open (%s)", g->dir, e->id, e->dir,
                                 tide_strerror(rc));
            break;
        }
        g->gens[n].id = e->id;
        tide_store_info si;
        tide_store_get_info(g->gens[n].s, &si);
        if (n == 0) g->key_size = si.key_size;
        else if (si.key_size != g->key_size) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: generation %" PRIu64 " (%s) has %u-byte keys, "
                              "the newest %u-byte ones", g->dir, e->id, e->dir, si.key_size,
                              g->key_size);
            n++;
            break;
        }
    }
    if (rc) {
        while (n-- > 0) tide_store_close(g->gens[n].s), g->gens[n].s = NULL;
    }
    return rc;
}

typedef struct unnamed_list {
    const tide_gen_manifest *m;
    ti_gens_names dirs;
    int tmp;
} unnamed_list;

static int collect_unnamed(void *arg, const char *name, int is_dir)
{
    unnamed_list *u = arg;
    uint64_t id;
    if (!is_dir && strcmp(name, TIDE_GEN_FILE_TMP) == 0) u->tmp = 1;
    if (!is_dir || !ti_gens_parse_name(name, &id)) return 0;
    for (unsigned i = 0; i < u->m->count; i++)
        if (u->m->gens[i].id == id) return 0;
    return ti_gens_names_add(&u->dirs, name);
}

/* Remove what the manifest does not name (the named ones are open). */
static int reconcile(tide_gens *g)
{
    unnamed_list u = { &g->m, { NULL, 0, 0 }, 0 };
    int rc;

    ti_gens_trace(g, "reconcile");
    rc = g->io->list(g->io, g->dir, collect_unnamed, &u);
    for (unsigned i = 0; i < u.dirs.n && rc == 0; i++) {
        char p[TI_GENS_PATH_CAP];
        uint64_t bytes = 0;
        if ((rc = ti_gens_path(p, g->dir, u.dirs.names[i])) != 0) break;
        rc = ti_gens_remove_dir(NULL, g->io, g->dir, p, 0, 0, &bytes, NULL, NULL);
        if (rc == 0) {
            g->removed_at_open++;
            tide_log(TIDE_LOG_WARN, "%s: removed %s (%" PRIu64 " bytes): " TIDE_GEN_FILE
                     " does not name it (a rotation a crash interrupted)", g->dir, u.dirs.names[i],
                     bytes);
        } else {
            /* Garbage that would not go is no reason to refuse the node:
             * the manifest's generations are whole; the next open retries. */
            tide_log(TIDE_LOG_WARN, "%s: could not remove %s, which " TIDE_GEN_FILE " does not "
                     "name: %s", g->dir, u.dirs.names[i], tide_last_error());
            rc = 0;
        }
    }
    if (rc == 0 && u.tmp) {
        char p[TI_GENS_PATH_CAP];
        rc = ti_gens_path(p, g->dir, TIDE_GEN_FILE_TMP);
        if (rc == 0) rc = g->io->unlink(g->io, p);
        if (rc == 0) rc = g->io->sync_dir(g->io, g->dir);
        if (rc && rc != TIDE_EINVAL) {
            tide_log(TIDE_LOG_WARN, "%s: could not remove " TIDE_GEN_FILE_TMP ": %s", g->dir,
                     tide_last_error());
            rc = 0;
        }
    }
    free(u.dirs.names);
    return rc;
}

/* The plain store: open DIR, creating the store first when asked. */
static int open_plain(tide_gens *g)
{
    tide_store_opts so;
    tide_store_info si;
    int rc;

    store_opts_of(g, &so);
    rc = tide_store_open(&g->plain, g->dir, &so);
    if (rc == TIDE_ENOENT && g->opts.create_if_missing && !g->read_only) {
        rc = create_in(g, g->dir);
        if (rc == 0) rc = tide_store_open(&g->plain, g->dir, &so);
    }
    if (rc) return rc;
    tide_store_get_info(g->plain, &si);
    g->key_size = si.key_size;
    return 0;
}

/* The newest's data records (one sequential read of its nudb.dat). */
static int count_newest(tide_gens *g)
{
    char p[TI_GENS_PATH_CAP];
    tide_visit_stats st;
    int rc = ti_gens_path(p, g->dir, g->m.gens[0].dir);
    if (rc == 0) rc = tide_store_visit_io(p, g->io, NULL, NULL, &st);
    if (rc == 0) g->newest_objects = st.data_records;
    return rc;
}

static int check_opts(const char *dir, const tide_gens_opts *o)
{
    if (o->keep != 0 && (o->keep < TIDE_GEN_MIN || o->keep > TIDE_GEN_MAX))
        return tide_err_set(TIDE_EINVAL, "%s: generations: keep %u is outside %d..%d (or 0: the "
                            "manifest's)", dir, o->keep, TIDE_GEN_MIN, TIDE_GEN_MAX);
    if (o->online_delete != 0 && o->online_delete != 1)
        return tide_err_set(TIDE_EINVAL, "%s: online_delete %d is neither 0 nor 1", dir,
                            o->online_delete);
    if (strlen(dir) + TIDE_GEN_DIR_CAP + 16 >= TI_GENS_PATH_CAP)
        return tide_err_set(TIDE_EINVAL, "%s: path too long", dir);
    return 0;
}

/* DIR exists (made when missing and asked to). */
static int ensure_dir(tide_gens *g)
{
    int is_dir = 0;
    int rc = g->io->stat(g->io, g->dir, &is_dir);
    if (rc == 0 && !is_dir) return tide_err_set(TIDE_ENOTSTORE, "%s: not a directory", g->dir);
    if (rc != TIDE_ENOENT) return rc;
    if (!g->opts.create_if_missing)
        return tide_err_set(TIDE_ENOENT, "%s: no such directory", g->dir);
    return g->io->mkdir(g->io, g->dir);
}

/* A keep asked below the manifest's is honoured at the next rotation,
 * which drops every generation beyond it: say which, before it happens. */
static void warn_lowered_keep(const tide_gens *g)
{
    unsigned k = g->opts.keep;
    char ids[TIDE_GEN_MAX * 22] = "";
    size_t n = 0;

    if (k == 0 || k >= g->m.keep || g->read_only) return;
    /* The next manifest holds the new generation and the k - 1 newest. */
    for (unsigned i = k - 1; i < g->m.count && n < sizeof ids; i++)
        n += (size_t)snprintf(ids + n, sizeof ids - n, "%s%" PRIu64, n ? ", " : "",
                              g->m.gens[i].id);
    if (n == 0) snprintf(ids, sizeof ids, "nothing yet (%u held)", g->m.count);
    tide_log(TIDE_LOG_WARN, "%s: keep %u is below " TIDE_GEN_FILE "'s %u: the next rotation "
             "keeps %u and drops %s%s", g->dir, k, g->m.keep, k, n ? "generations " : "", ids);
}

/* With generations: the manifest is in *g->m; open them and reconcile. */
static int open_generations(tide_gens *g)
{
    int rc = open_named(g);
    if (rc) return rc;
    if (!g->read_only) rc = reconcile(g);
    if (rc == 0) rc = count_newest(g);
    if (rc) {
        for (unsigned i = 0; i < g->m.count; i++) tide_store_close(g->gens[i].s), g->gens[i].s = NULL;
        return rc;
    }
    g->enabled = 1;
    g->nread = g->m.count;
    warn_lowered_keep(g);
    g->newest_id = g->m.gens[0].id;
    g->oldest_id = g->m.gens[g->m.count - 1].id;
    ti_gens_check(g);
    return 0;
}

typedef struct stray_list { ti_gens_names dirs; size_t len; char text[512]; } stray_list;

static int collect_stray(void *arg, const char *name, int is_dir)
{
    stray_list *l = arg;
    uint64_t id;
    if (!is_dir || !ti_gens_parse_name(name, &id) || id == 1) return 0;
    return ti_gens_names_add(&l->dirs, name);
}

/* No manifest: generation directories other than a resumable
 * gen-000000000001 mean a lost manifest, not an adoption. Adopting or
 * creating generation 1 would write a manifest that does not name them,
 * and the reconcile would delete them (invariant 4). */
static int refuse_stray(tide_gens *g)
{
    stray_list l;
    size_t n = 0;
    int rc;

    memset(&l, 0, sizeof l);
    rc = g->io->list(g->io, g->dir, collect_stray, &l);
    for (unsigned i = 0; i < l.dirs.n && rc == 0 && n < sizeof l.text; i++)
        n += (size_t)snprintf(l.text + n, sizeof l.text - n, "%s%s", i ? ", " : "",
                              l.dirs.names[i]);
    if (rc == 0 && l.dirs.n > 0)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: no " TIDE_GEN_FILE " but %u generation "
                          "director%s: %s: restore " TIDE_GEN_FILE ", or move these directories "
                          "away; nothing was changed", g->dir, l.dirs.n,
                          l.dirs.n == 1 ? "y" : "ies", l.text);
    free(l.dirs.names);
    return rc;
}

/* Which layout DIR has, and what to do about it (the table above). */
static int open_layout(tide_gens *g)
{
    unsigned root = 0;
    int rc = tide_gen_manifest_read(g->io, g->dir, &g->m);
    if (rc && rc != TIDE_ENOENT) return rc;
    int have = rc == 0;
    if ((rc = store_files_in(g->io, g->dir, &root)) != 0) return rc;
    if (!have && (rc = refuse_stray(g)) != 0) return rc;
    if (have && root)
        return tide_err_set(TIDE_EINVAL, "%s: holds both " TIDE_GEN_FILE " and a plain store's "
                            "files (nudb.*) in the directory itself: move the nudb.* files "
                            "away (they are not a generation) or remove " TIDE_GEN_FILE
                            " to use the plain store", g->dir);
    if (!have && !g->opts.online_delete) {
        char gen1[TI_GENS_PATH_CAP];
        if ((rc = ti_gens_gen_path(gen1, g->dir, 1)) != 0) return rc;
        if (root == 0 && g->io->stat(g->io, gen1, NULL) == 0)
            return tide_err_set(TIDE_EINVAL, "%s: holds %s but no " TIDE_GEN_FILE " (an "
                                "interrupted adoption): open with online delete on to finish "
                                "it", g->dir, gen1);
        return open_plain(g);
    }
    if (!have && g->read_only) return open_plain(g);   /* adopts nothing */
    if (have && !g->opts.online_delete && !g->read_only)
        tide_log(TIDE_LOG_WARN, "%s: online delete is off but the directory holds generations "
                 "(" TIDE_GEN_FILE "): opening them; no rotation happens unless asked", g->dir);
    if (!have) {
        if (root == 0 && !g->opts.create_if_missing) {
            char gen1[TI_GENS_PATH_CAP];
            if ((rc = ti_gens_gen_path(gen1, g->dir, 1)) != 0) return rc;
            if (g->io->stat(g->io, gen1, NULL) == TIDE_ENOENT)
                return tide_err_set(TIDE_ENOENT, "%s: no store and no generations", g->dir);
        }
        if ((rc = adopt(g, root)) != 0) return rc;
        if ((rc = tide_gen_manifest_read(g->io, g->dir, &g->m)) != 0) return rc;
    }
    return open_generations(g);
}

int tide_gens_open(tide_gens **out, const char *dir, const tide_gens_opts *opts)
{
    tide_gens *g = NULL;
    pthread_rwlockattr_t ra;
    int rc;

    *out = NULL;
    if ((rc = check_opts(dir, opts)) != 0) return rc;
    g = calloc(1, sizeof *g);
    if (g == NULL) return tide_err_set(TIDE_ENOMEM, "%s: out of memory", dir);
    snprintf(g->dir, sizeof g->dir, "%s", dir);
    g->opts = *opts;
    g->read_only = opts->store.read_only != 0;
    g->io = opts->io ? opts->io : tide_io_posix();
    /* Writers first: with readers preferred (glibc's default) a steady
     * stream of fetches could hold a rotation's switch off for ever. */
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&g->lock, &ra);
    pthread_rwlock_init(&g->sync_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&g->rotate_mu, NULL);
    pthread_mutex_init(&g->retired_mu, NULL);
    pthread_mutex_init(&g->intr_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* ti_gens_pause's deadline */
    pthread_cond_init(&g->intr_cv, &ca);
    pthread_condattr_destroy(&ca);
    rc = ensure_dir(g);
    if (rc == 0) rc = open_layout(g);
    if (rc) {
        g->enabled = 0;
        g->m.count = 0;
        tide_gens_close(g);
        return rc;
    }
    *out = g;
    return 0;
}
