/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api.c: the public interface's own calls (tide/store.h): the opaque
 * options' allocation and setters, the statistics and the tools' small
 * results, each a thin layer over the store's full interface
 * (store/full.h), which the programs of this tree call directly.
 *
 * Layout: the create options, the open options, the statistics, then the
 * tools (visit, recover, verify, rekey) in the header's order.
 *
 * Invariants:
 *   1. A setter changes its option only when it returns 0; out of range it
 *      returns TIDE_EINVAL naming the value and the range.
 *   2. A result structure is written for at most the bytes its caller's
 *      `size` says, and `size` then says how many were written (put_result).
 *   3. Every call here makes exactly the store's call it wraps, with the
 *      POSIX file system and the defaults of every option the public
 *      interface does not name.
 *
 * Never: add behaviour of its own beyond the checks of the public values;
 * what the store does is the store's (store.c, open.c, committer.c, recover.c, rekey.c, ...).
 */
#include <stdlib.h>
#include <string.h>

#include "store/full.h"
#include "util/err.h"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define TIB ((uint64_t)1 << 40)

/* ---- create options ---- */

int tide_store_create_opts_new(tide_store_create_opts **out)
{
    tide_store_create_opts *o = malloc(sizeof *o);

    *out = NULL;
    if (o == NULL) return tide_err_set(TIDE_ENOMEM, "create options: out of memory");
    tide_store_create_opts_init(o);
    *out = o;
    return 0;
}

void tide_store_create_opts_free(tide_store_create_opts *o)
{
    free(o);
}

int tide_store_create_opts_set_key_size(tide_store_create_opts *o, unsigned bytes)
{
    if (bytes < 1 || bytes > 65535) return tide_err_set(TIDE_EINVAL, "key size %u is outside 1..65535", bytes);
    o->key_size = bytes;
    return 0;
}

int tide_store_create_opts_set_block_size(tide_store_create_opts *o, unsigned bytes)
{
    if (!tide_block_size_valid(bytes))
        return tide_err_set(TIDE_EINVAL, "block size %u is not a power of two from 4096 to 32768", bytes);
    o->block_size = bytes;
    return 0;
}

int tide_store_create_opts_set_load_factor(tide_store_create_opts *o, double load_factor)
{
    if (!(load_factor > 0.0 && load_factor <= 1.0))
        return tide_err_set(TIDE_EINVAL, "load factor %g is outside (0, 1]", load_factor);
    o->load_factor = load_factor;
    return 0;
}

int tide_store_create_opts_set_appnum(tide_store_create_opts *o, uint64_t appnum)
{
    o->appnum = appnum;
    return 0;
}

/* ---- open options ---- */

int tide_store_opts_new(tide_store_opts **out)
{
    tide_store_opts *o = malloc(sizeof *o);

    *out = NULL;
    if (o == NULL) return tide_err_set(TIDE_ENOMEM, "open options: out of memory");
    tide_store_opts_init(o);
    *out = o;
    return 0;
}

void tide_store_opts_free(tide_store_opts *o)
{
    free(o);
}

int tide_store_opts_set_burst(tide_store_opts *o, size_t bytes)
{
    if (bytes < 64 * KIB || (uint64_t)bytes > TIB)
        return tide_err_set(TIDE_EINVAL, "burst %zu bytes is outside 64 KiB..1 TiB", bytes);
    o->burst_bytes = bytes;
    return 0;
}

int tide_store_opts_set_commit_interval(tide_store_opts *o, unsigned ms)
{
    if (ms < 1 || ms > 3600000u)
        return tide_err_set(TIDE_EINVAL, "commit interval %u ms is outside 1..3600000", ms);
    o->commit_interval_ms = ms;
    return 0;
}

int tide_store_opts_set_index_lag(tide_store_opts *o, uint64_t bytes)
{
    if (bytes > TIB) return tide_err_set(TIDE_EINVAL, "index lag %llu bytes is over 1 TiB", (unsigned long long)bytes);
    o->index_lag_bytes = bytes;
    return 0;
}

/* The three switches: 0 or 1. */
static int set_switch(int *field, int on, const char *name)
{
    if (on != 0 && on != 1) return tide_err_set(TIDE_EINVAL, "%s %d is neither 0 nor 1", name, on);
    *field = on;
    return 0;
}

int tide_store_opts_set_read_only(tide_store_opts *o, int on) { return set_switch(&o->read_only, on, "read_only"); }
int tide_store_opts_set_force(tide_store_opts *o, int on) { return set_switch(&o->ignore_holders, on, "force"); }
int tide_store_opts_set_pread(tide_store_opts *o, int on) { return set_switch(&o->pread, on, "pread"); }

int tide_store_opts_set_page_memory(tide_store_opts *o, uint64_t bytes)
{
    if (bytes != 0 && bytes < MIB)
        return tide_err_set(TIDE_EINVAL, "page memory %llu bytes is under 1 MiB (0: the machine's)",
                            (unsigned long long)bytes);
    o->page_memory = bytes;
    return 0;
}

/* ---- results ---- */

/* Invariant 2: copy the first min(caller's size, ours) bytes of `full`
 * (whose first member is its own size_t size) into `out`, and say how
 * many. TIDE_EINVAL when the caller's size cannot hold one field. */
static int put_result(void *out, const void *full, size_t full_size)
{
    size_t want, n;

    memcpy(&want, out, sizeof want);
    if (want <= sizeof(size_t))
        return tide_err_set(TIDE_EINVAL, "result size %zu: set it to the structure's sizeof", want);
    n = want < full_size ? want : full_size;
    memcpy(out, full, n);
    memcpy(out, &n, sizeof n);
    return 0;
}

int tide_store_stat(tide_store *s, tide_store_stats *out)
{
    tide_store_info info;
    tide_store_stats st;

    memset(&st, 0, sizeof st);
    tide_store_get_info(s, &info);
    st.size = sizeof st;
    st.key_size = info.key_size;
    st.block_size = info.block_size;
    st.load_factor = info.load_factor;
    st.appnum = info.appnum;
    st.uid = info.uid;
    st.buckets = info.buckets;
    st.dat_file_bytes = info.dat_file_bytes;
    st.key_file_bytes = info.key_file_bytes;
    st.inserts = info.inserts;
    st.fetches = info.fetches;
    st.commits = info.commits;
    st.commit_failures = info.commit_failures;
    return put_result(out, &st, sizeof st);
}

/* ---- tools ---- */

int tide_store_visit(const char *dir, tide_visit_fn fn, void *arg, tide_store_visit_result *result)
{
    tide_visit_stats vs;
    tide_store_visit_result r;
    int rc;

    memset(&vs, 0, sizeof vs);
    rc = tide_store_visit_io(dir, NULL, fn, arg, &vs);
    if (result == NULL) return rc;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.records = vs.data_records;
    r.value_bytes = vs.value_bytes;
    r.file_bytes = vs.file_bytes;
    (void)put_result(result, &r, sizeof r);
    return rc;
}

int tide_store_recover(const char *dir, unsigned flags, tide_store_recover_result *result)
{
    tide_recover_report rep;
    tide_store_recover_result r;
    int rc;

    if (flags & ~TIDE_STORE_FORCE) return tide_err_set(TIDE_EINVAL, "recover: unknown flags 0x%x", flags);
    memset(&rep, 0, sizeof rep);
    rc = tide_store_recover_with(dir, NULL, flags & TIDE_STORE_FORCE ? TIDE_RECOVER_FORCE : 0, &rep);
    if (result == NULL) return rc;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.had_log = rep.had_log;
    r.buckets_restored = rep.buckets_restored;
    r.dat_bytes_cut = rep.dat_truncated_from > rep.dat_truncated_to ? rep.dat_truncated_from - rep.dat_truncated_to
                                                                     : 0;
    (void)put_result(result, &r, sizeof r);
    return rc;
}

int tide_store_verify(const char *dir, tide_store_verify_result *result)
{
    tide_verify_report rep;
    tide_store_verify_result r;
    int rc;

    memset(&rep, 0, sizeof rep);
    rc = tide_store_verify_io(dir, NULL, &rep);
    if (result == NULL) return rc;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.keys = rep.keys;
    r.data_records = rep.data_records;
    r.value_bytes = rep.value_bytes;
    r.buckets = rep.buckets;
    r.block_size = rep.block_size;
    r.load = rep.load;
    r.avg_fetch_reads = rep.avg_fetch_reads;
    r.waste_bytes = rep.waste_bytes;
    (void)put_result(result, &r, sizeof r);
    return rc;
}

int tide_store_rekey(const char *dir, unsigned block_size, unsigned flags, tide_store_rekey_result *result)
{
    tide_rekey_opts o;
    tide_rekey_report rep;
    tide_store_rekey_result r;
    int rc;

    if (flags & ~TIDE_STORE_FORCE) return tide_err_set(TIDE_EINVAL, "rekey: unknown flags 0x%x", flags);
    tide_rekey_opts_init(&o);
    o.block_size = block_size;
    o.ignore_holders = (flags & TIDE_STORE_FORCE) != 0;
    memset(&rep, 0, sizeof rep);
    rc = tide_store_rekey_with(dir, &o, &rep);
    if (result == NULL) return rc;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.records = rep.records;
    r.old_block_size = rep.old_block_size;
    r.new_block_size = rep.new_block_size;
    r.old_buckets = rep.old_buckets;
    r.new_buckets = rep.new_buckets;
    (void)put_result(result, &r, sizeof r);
    return rc;
}
