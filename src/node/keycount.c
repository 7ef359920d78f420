/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keycount.c: the node's key count (tide_node_keys).
 *
 * NuDB keeps no count of its keys. At open a thread of its own walks
 * nudb.dat up to the size it had at open, without a lock (that prefix is
 * never rewritten: the file is only appended to), counting data records,
 * one per key; the store's inserts since open are added when asked. Close
 * stops the walk and joins the thread.
 *
 * Invariants:
 *   1. keys_at_open is written once, before keys_known becomes 1; a reader
 *      that sees keys_known sees it.
 *   2. The walk reads only below count_limit (nudb.dat's size at open).
 *
 * With generations (online delete) no count is made and tide_node_keys
 * stays unknown: a key copied forward sits in two generations, and a
 * rotation's drop takes keys away in bulk, so neither a walk at open nor
 * the insert counter gives the number of distinct keys; the generations'
 * own figures (records in the newest, bytes of each) are on /metrics
 * instead.
 *
 * Never: take a store lock in the walk; count a record appended after open
 * (the store's insert counter holds those).
 */
#include "node/node_impl.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "tide/error.h"
#include "store/full.h"
#include "util/err.h"
#include "util/log.h"

typedef struct key_count { tide_node *n; uint64_t records; } key_count;

static int count_record(void *arg, uint64_t offset, const void *key, unsigned key_size, const void *value,
                        uint64_t len)
{
    key_count *kc = arg;
    (void)key, (void)key_size, (void)value, (void)len;
    if (atomic_load(&kc->n->count_stop)) return 1;
    if (offset >= kc->n->count_limit) return 2;     /* appended after open: counted as inserts */
    kc->records++;
    return 0;
}

/* Records below the size nudb.dat had at open never change (the file is
 * only appended to), so the walk needs no lock and races with nothing. */
static void *count_main(void *arg)
{
    tide_node *n = arg;
    key_count kc = { n, 0 };
    int rc = tide_store_visit_io(n->dir, n->opts.hooks.io, count_record, &kc, NULL);

    if (rc == 0 || rc == 2) {
        atomic_store(&n->keys_at_open, kc.records);
        atomic_store(&n->keys_known, 1);
        tide_log(TIDE_LOG_INFO, "%s: %" PRIu64 " keys in the store at open", n->dir, kc.records);
    } else if (rc != 1) {
        tide_log(TIDE_LOG_WARN, "%s: counting the keys failed (%s: %s); tide_store_keys stays unknown",
                 n->dir, tide_strerror(rc), tide_last_error());
    }
    return NULL;
}

int tide_node_keys(tide_node *n, uint64_t *keys)
{
    tide_store_info info;

    if (!atomic_load(&n->keys_known)) return 0;
    tide_gens_store_info(n->gens, &info);
    *keys = atomic_load(&n->keys_at_open) + (info.inserts - n->count_inserts0);
    return 1;
}

void ti_node_count_start(tide_node *n, uint64_t dat_file_bytes, uint64_t inserts)
{
    n->count_limit = dat_file_bytes;
    n->count_inserts0 = inserts;
    if (tide_gens_enabled(n->gens)) {
        tide_log(TIDE_LOG_INFO, "%s: generations: the key count is not made (a key copied forward is in "
                 "two generations, and a drop removes keys nobody counted); tide_store_keys stays unknown",
                 n->dir);
        return;
    }
    if (n->opts.count_keys_max_bytes && dat_file_bytes <= n->opts.count_keys_max_bytes) {
        if (pthread_create(&n->count_thread, NULL, count_main, n) == 0) n->count_started = 1;
    } else if (n->opts.count_keys_max_bytes) {
        tide_log(TIDE_LOG_INFO, "%s: nudb.dat is over %" PRIu64 " bytes: the key count is not made "
                 "(tide_store_keys stays unknown)", n->dir, n->opts.count_keys_max_bytes);
    }
}

void ti_node_count_stop(tide_node *n)
{
    atomic_store(&n->count_stop, 1);
    if (n->count_started) pthread_join(n->count_thread, NULL);
    n->count_started = 0;
}
