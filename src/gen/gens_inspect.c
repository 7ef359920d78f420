/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens_inspect.c: a data directory's generations, listed without opening
 * anything for writing or taking a writer's lock (for `tide generations`
 * and `tide verify`, which may run beside a live node).
 *
 * Invariants:
 *   1. Read-only: nothing here writes, creates or removes a file, and the
 *      one lock taken is tide_store_inspect's readers' hold (live.c).
 *   2. A generation that cannot be inspected fills its `problem` and the
 *      call still returns 0: the listing is for diagnosis.
 *   3. The listing is of one manifest: when a rotation changed it while
 *      the generations were read (the manifest read again after them
 *      differs), the whole listing is made again, up to
 *      TI_GENS_INSPECT_TRIES times; after the last, it keeps only the
 *      generations the newest manifest names. So a generation a rotation
 *      dropped under the listing never shows as missing or damaged: only
 *      one the manifest still names does.
 *
 * Never: recover a store (tide_store_inspect never does); remove what
 * open would (the listing only names it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gen/gens_impl.h"
#include "util/err.h"

#define TI_GENS_INSPECT_TRIES 8

typedef struct unnamed_scan {
    tide_gens_listing *out;
} unnamed_scan;

static int scan_unnamed(void *arg, const char *name, int is_dir)
{
    unnamed_scan *u = arg;
    tide_gens_listing *o = u->out;
    uint64_t id = 0;
    if (!is_dir || !ti_gens_parse_name(name, &id)) return 0;
    for (unsigned i = 0; i < o->manifest.count; i++)
        if (o->manifest.gens[i].id == id) return 0;
    if (o->unnamed < 8) snprintf(o->unnamed_dirs[o->unnamed], TIDE_GEN_DIR_CAP, "%s", name);
    o->unnamed++;
    return 0;
}

/* One pass: the manifest, each generation it names, the unnamed ones. */
static int list_once(const char *dir, tide_io *io, tide_gens_listing *out)
{
    unnamed_scan u = { out };
    int rc;

    memset(out, 0, sizeof *out);
    rc = tide_gen_manifest_read(io, dir, &out->manifest);
    if (rc) return rc;
    for (unsigned i = 0; i < out->manifest.count; i++) {
        char p[TI_GENS_PATH_CAP];
        tide_store_info *si = &out->gens[i].info;
        rc = ti_gens_path(p, dir, out->manifest.gens[i].dir);
        if (rc == 0) rc = tide_store_inspect(p, io, si);
        if (rc) {
            snprintf(out->gens[i].problem, sizeof out->gens[i].problem, "%s: %s",
                     tide_strerror(rc), tide_last_error());
            continue;
        }
        out->disk_bytes += si->dat_file_bytes + si->key_file_bytes + si->log_file_bytes;
    }
    return io->list(io, dir, scan_unnamed, &u);
}

/* 1 when `a` and `b` name the same generations after the same rotations. */
static int same_list(const tide_gen_manifest *a, const tide_gen_manifest *b)
{
    if (a->rotations != b->rotations || a->count != b->count) return 0;
    for (unsigned i = 0; i < a->count; i++)
        if (a->gens[i].id != b->gens[i].id) return 0;
    return 1;
}

/* Keep the generations `now` still names (invariant 3): the others were
 * dropped while they were read, and what reading them met is no fault. */
static void keep_named(tide_gens_listing *out, const tide_gen_manifest *now)
{
    tide_gen_manifest *m = &out->manifest;
    unsigned kept = 0;

    for (unsigned i = 0; i < m->count; i++) {
        int named = 0;
        for (unsigned j = 0; j < now->count && !named; j++) named = now->gens[j].id == m->gens[i].id;
        if (!named) {
            if (!out->gens[i].problem[0])
                out->disk_bytes -= out->gens[i].info.dat_file_bytes +
                                   out->gens[i].info.key_file_bytes + out->gens[i].info.log_file_bytes;
            continue;
        }
        m->gens[kept] = m->gens[i];
        out->gens[kept] = out->gens[i];
        kept++;
    }
    m->count = kept;
}

int tide_gens_inspect(const char *dir, struct tide_io *io, tide_gens_listing *out)
{
    tide_gen_manifest now;
    int rc;

    if (io == NULL) io = tide_io_posix();
    for (unsigned tries = 1;; tries++) {
        if ((rc = list_once(dir, io, out)) != 0) return rc;
        /* Invariant 3: the manifest again, after the generations. */
        if (tide_gen_manifest_read(io, dir, &now) != 0) {
            tide_err_clear();       /* the listing stands as read */
            return 0;
        }
        if (same_list(&out->manifest, &now)) return 0;
        if (tries == TI_GENS_INSPECT_TRIES) {
            keep_named(out, &now);
            return 0;
        }
    }
}
