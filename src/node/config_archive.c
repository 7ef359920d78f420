/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_archive.c: the archive's settings (the [archive] section, rows
 * in config.c's table): their words, the prefix's default, the node's
 * options from them, and the checks of the whole that one row cannot make.
 *
 * Invariants:
 *   1. With archive=off nothing here refuses anything: an operator may
 *      leave [archive] keys in a file and turn the archive off.
 *   2. The node's options point into the tide_config (its strings), which
 *      the caller keeps alive for the node's life, as data_dir is.
 *
 * Never: connect to a cluster here; that is the node's open (a bad conf
 *   file or a missing pool is its error, named there).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "archive/catalog.h"
#include "node/config_impl.h"
#include "node/node.h"
#include "util/err.h"
#include "util/log.h"

const char *const ti_config_archive_words[] = { "off", "rados", NULL };
const char *const ti_config_archive_sync_words[] = { "local", "archive", NULL };
const char *const ti_config_archive_mode_words[] = { "primary", "replica", NULL };

void ti_config_default_archive_prefix(tide_config *c, const ti_config_setting *st)
{
    /* An unusable host name leaves it empty: finish then says so, when the
     * archive is on (tide_archive_default_prefix is the tools' rule too). */
    if (tide_archive_default_prefix(c->archive_prefix, sizeof c->archive_prefix) != 0) {
        c->archive_prefix[0] = '\0';
        tide_err_clear();
    }
    ti_config_set_source(c, (int)(st - ti_config_settings), TIDE_SRC_DEFAULT, "host name");
}

void ti_config_node_archive(const tide_config *c, tide_node_opts *o)
{
    o->archive_on = c->archive == TIDE_ARCHIVE_RADOS;
    o->archive_sync = c->archive_sync == TIDE_ARCHIVE_SYNC_ARCHIVE;
    o->archive.conf = c->archive_conf;
    o->archive.pool = c->archive_pool;
    o->archive.prefix = c->archive_prefix;
    o->archive.user = c->archive_user;
    o->archive.replica = c->archive_mode == TIDE_ARCHIVE_REPLICA;
    o->archive.keep = c->archive_keep;
    o->archive.timeout_s = c->archive_timeout;
    o->archive.chunk_bytes = c->archive_chunk;
    o->archive.filter_budget = c->archive_filter_budget;
    o->archive.inflight = c->archive_inflight;
}

int ti_config_finish_archive(tide_config *c)
{
    char src[200];

    if (c->archive == TIDE_ARCHIVE_OFF) return 0;          /* invariant 1 */
    if (!tide_archive_prefix_valid(c->archive_prefix)) {
        tide_config_source_text(c, TIDE_CFG_ARCHIVE_PREFIX, src, sizeof src);
        return tide_err_set(TIDE_EINVAL, "archive_prefix=%s (%s): a prefix is 1 to %d bytes of A-Z a-z "
                            "0-9 _ - (no dots: they separate the parts of the objects' names), not "
                            "starting with -", c->archive_prefix, src, TIDE_ARCHIVE_PREFIX_MAX);
    }
    if (c->archive_chunk % (32 * 1024) != 0) {
        tide_config_source_text(c, TIDE_CFG_ARCHIVE_CHUNK, src, sizeof src);
        return tide_err_set(TIDE_EINVAL, "archive_chunk=%llu (%s): a multiple of 32 KiB is expected, "
                            "so no key-file block straddles two objects",
                            (unsigned long long)c->archive_chunk, src);
    }
    if (c->archive_mode == TIDE_ARCHIVE_PRIMARY && !c->online_delete_on)
        return tide_err_set(TIDE_EINVAL, "archive=rados needs online delete on a primary: a generation "
                            "is archived whole once a rotation seals it, and a plain store is never "
                            "sealed; set --online-delete N (or manual), or --archive-mode replica");
    if (c->archive_mode == TIDE_ARCHIVE_REPLICA && c->archive_sync == TIDE_ARCHIVE_SYNC_ARCHIVE)
        tide_log(TIDE_LOG_WARN, "archive_sync=archive means nothing on a replica: it takes no writes");
    return 0;
}
