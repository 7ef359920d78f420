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
 *
 * Never: recover a store (tide_store_inspect never does); remove what
 * open would (the listing only names it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gen/gens_impl.h"
#include "util/err.h"

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

int tide_gens_inspect(const char *dir, struct tide_io *io, tide_gens_listing *out)
{
    unnamed_scan u = { out };
    int rc;

    memset(out, 0, sizeof *out);
    if (io == NULL) io = tide_io_posix();
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
