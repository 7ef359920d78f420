/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gens.c: the generations handle's calls on open data: insert, fetch,
 * touch, keep, sync, the information calls and close. Opening (reconcile,
 * adoption, creation) is gens_open.c; rotation and drop gens_rotate.c;
 * the lock-free listing gens_inspect.c.
 *
 * A plain store (no manifest) is one tide_store in g->plain and every call
 * passes straight to it with generation ids 0. With generations, g->gens
 * holds the open stores newest first, as the manifest g->m names them.
 *
 * Invariants:
 *   1. g->gens[i].id == g->m.gens[i].id for i < g->m.count, and every slot
 *      holds an open store; both change only under the write lock (the
 *      rotation's switch), so a call holding the read lock sees one list
 *      from start to end.
 *   2. Write-once across generations: a key reaches the newest by an
 *      insert only after every older generation was asked (under the same
 *      read lock, so no rotation can slip a generation in between) and
 *      none holds it; the newest's own insert refuses a key it holds.
 *   3. Copy-forward writes only into the newest, and only bytes read from
 *      an older generation (or handed in by touch as that object's bytes).
 *   4. newest_objects counts data records of the newest: set at open
 *      (gens_open.c), one per insert into the newest that returned 0,
 *      reset to 0 at the switch (under the write lock, so no insert of the
 *      old newest is counted for the new one).
 *
 * A switch waits for every call holding the read lock, and the lock
 * prefers writers (so a stream of fetches cannot hold a switch off for
 * ever), so calls that come after a waiting switch wait too: an insert
 * blocked on a full insert pool holds the read lock until a commit makes
 * room, so a switch, and the fetches behind it, can wait up to one commit.
 * sync waits for its commits outside the lock for that reason.
 *
 * Invariants (continued from above):
 *   5. A read-only handle (opts.store.read_only) writes nothing: no
 *      copy-forward, no insert, touch, keep or rotation (TIDE_EINVAL),
 *      and open removes nothing.
 *   6. Every read, write-once check and copy-forward looks only at
 *      g->gens[0..g->nread), under the read lock: once a dropping rotation
 *      has hidden the generations it drops (gens_rotate.c, step c), no copy
 *      from them can start, so the sync that follows (step d) makes every
 *      copy taken from them durable. In that window an object only they
 *      hold reads as absent (its span is ending) and an insert of its key
 *      succeeds into the newest; if the rotation fails they are shown
 *      again (read_epoch moves; not while the disk is unknown: gens_rotate.c,
 *      invariant 8), and reads, newest first, see the newest's copy first.
 *
 * Never: hold the write lock across I/O (only a rotation's hide and switch
 * take it); close
 * a store while the read lock (or sync_lock) could be held by a caller of
 * it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen/gens_impl.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

static void add(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }
static uint64_t load(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

void tide_gens_opts_init(tide_gens_opts *o)
{
    memset(o, 0, sizeof *o);
    o->keep = 0;                /* the manifest's own (gens.h) */
    o->create_if_missing = 1;
    o->key_size = 32;
    o->block_size = TIDE_BLOCK_SIZE_DEFAULT;
    tide_store_opts_init(&o->store);
    o->delete_chunk = 64ull << 20;
    o->back_off_ms = 100;
}

int ti_gens_path(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, TI_GENS_PATH_CAP, "%s/%s", dir, name);
    if (n < 0 || n >= TI_GENS_PATH_CAP)
        return tide_err_set(TIDE_EINVAL, "%s: path too long for %s", dir, name);
    return 0;
}

int ti_gens_gen_path(char *out, const char *dir, uint64_t id)
{
    char name[TIDE_GEN_DIR_CAP];
    int rc = tide_gen_dir_name(id, name, sizeof name);
    return rc ? rc : ti_gens_path(out, dir, name);
}

void ti_gens_check(const tide_gens *g)
{
    TIDE_ASSERT(g->enabled);
    TIDE_ASSERT(g->m.count >= 1 && g->m.count <= TIDE_GEN_MAX);
    TIDE_ASSERT(g->nread >= 1 && g->nread <= g->m.count);   /* invariant 6 */
    for (unsigned i = 0; i < g->m.count; i++) {
        TIDE_ASSERT(g->gens[i].id == g->m.gens[i].id);
        TIDE_ASSERT(g->gens[i].s != NULL);
        TIDE_ASSERT(i == 0 || g->gens[i].id < g->gens[i - 1].id);
    }
}

int ti_gens_interrupted(const tide_gens *g)
{
    return g != NULL && __atomic_load_n(&g->interrupted, __ATOMIC_ACQUIRE);
}

void tide_gens_interrupt(tide_gens *g)
{
    pthread_mutex_lock(&g->intr_mu);
    __atomic_store_n(&g->interrupted, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&g->intr_cv);
    pthread_mutex_unlock(&g->intr_mu);
}

int ti_gens_pause(tide_gens *g, unsigned ms)
{
    struct timespec at;
    if (g == NULL) { tide_clock_sleep_us((uint64_t)ms * 1000); return 0; }
    clock_gettime(CLOCK_MONOTONIC, &at);   /* intr_cv waits on the monotonic clock */
    at.tv_sec += ms / 1000;
    at.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) { at.tv_sec++; at.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&g->intr_mu);
    while (!__atomic_load_n(&g->interrupted, __ATOMIC_ACQUIRE))
        if (pthread_cond_timedwait(&g->intr_cv, &g->intr_mu, &at) == ETIMEDOUT) break;
    pthread_mutex_unlock(&g->intr_mu);
    return ti_gens_interrupted(g);
}

void ti_gens_trace(const tide_gens *g, const char *step)
{
    if (g && g->opts.trace) g->opts.trace(g->opts.trace_arg, step);
}

/* Add the counters of `i` to `o`. */
static void add_counters(tide_store_info *o, const tide_store_info *i)
{
    o->inserts += i->inserts;
    o->fetches += i->fetches;
    o->key_map_views += i->key_map_views;
    o->key_bucket_reads += i->key_bucket_reads;
    o->dat_map_views += i->dat_map_views;
    o->dat_reads += i->dat_reads;
    o->commits += i->commits;
    o->commit_failures += i->commit_failures;
    o->bytes_written += i->bytes_written;
    o->syncs += i->syncs;
    o->pool_bytes += i->pool_bytes;
    o->pool_spare_bytes += i->pool_spare_bytes;
    o->commit_buffer_bytes += i->commit_buffer_bytes;
    o->tail_items += i->tail_items;          /* the deferred index */
    o->tail_bytes += i->tail_bytes;
    o->index_flushes += i->index_flushes;
    for (unsigned b = 0; b <= TIDE_STORE_HIST_BUCKETS; b++)
        o->commit_duration.bucket[b] += i->commit_duration.bucket[b];
    o->commit_duration.sum_ns += i->commit_duration.sum_ns;
    o->commit_duration.count += i->commit_duration.count;
    if (i->last_commit_us > o->last_commit_us) o->last_commit_us = i->last_commit_us;
}

void ti_gens_retire(tide_gens *g, tide_store *s)
{
    tide_store_info i;
    tide_store_get_info(s, &i);
    i.pool_bytes = i.pool_spare_bytes = i.commit_buffer_bytes = 0; /* the open ones' only */
    i.tail_items = i.tail_bytes = 0;
    pthread_mutex_lock(&g->retired_mu);
    add_counters(&g->retired, &i);
    pthread_mutex_unlock(&g->retired_mu);
}

int tide_gens_close(tide_gens *g)
{
    int rc = 0, r;
    if (g == NULL) return 0;
    if (g->plain) rc = tide_store_close(g->plain);
    for (unsigned i = 0; i < g->m.count && g->enabled; i++) {
        r = tide_store_close(g->gens[i].s);
        if (r && rc == 0) rc = r;
    }
    pthread_rwlock_destroy(&g->lock);
    pthread_rwlock_destroy(&g->sync_lock);
    pthread_mutex_destroy(&g->rotate_mu);
    pthread_mutex_destroy(&g->retired_mu);
    pthread_mutex_destroy(&g->intr_mu);
    pthread_cond_destroy(&g->intr_cv);
    free(g);
    return rc;
}

int tide_gens_enabled(const tide_gens *g) { return g->enabled; }
unsigned tide_gens_key_size(const tide_gens *g) { return g->key_size; }
uint64_t tide_gens_newest_id(const tide_gens *g) { return load(&g->newest_id); }
uint64_t tide_gens_oldest_id(const tide_gens *g) { return load(&g->oldest_id); }

/* Insert bytes of an object found older into the newest (read lock held).
 * 0 when it is there now (copied, or already there). */
static int copy_forward(tide_gens *g, const void *key, const void *value, size_t len,
                        uint64_t from_id)
{
    int rc = tide_store_insert(g->gens[0].s, key, value, len);
    if (rc == 0) {
        add(&g->newest_objects, 1);
        add(&g->copied_forward, 1);
        add(&g->copied_forward_bytes, len);
    } else if (rc == TIDE_EEXIST) {
        rc = 0;
    } else {
        add(&g->copy_failures, 1);
        tide_log(TIDE_LOG_WARN, "%s: copy forward from generation %" PRIu64 " into %" PRIu64
                 " failed: %s", g->dir, from_id, g->gens[0].id, tide_last_error());
    }
    return rc;
}

/* The newest older generation holding `key` (read lock held): its index
 * in *at, 0 when none; the lookup errors. */
static int find_older(tide_gens *g, const void *key, unsigned *at)
{
    *at = 0;
    if (g->nread > 1) add(&g->older_lookups, 1);
    for (unsigned i = 1; i < g->nread; i++) {
        int rc = tide_store_contains(g->gens[i].s, key);
        if (rc < 0) return tide_err_prefix(rc, "%s: generation %" PRIu64, g->dir, g->gens[i].id);
        if (rc == 1) { *at = i; return 0; }
    }
    return 0;
}

/* A re-PUT of a key generation `at` (older) holds: copy it forward unless
 * the newest has it already. Returns TIDE_EEXIST, *gen_id set. */
static int reput(tide_gens *g, const void *key, unsigned at, uint64_t *gen_id)
{
    void *v = NULL;
    size_t len = 0;
    int rc = tide_store_contains(g->gens[0].s, key);
    *gen_id = g->gens[at].id;
    if (rc == 1) { *gen_id = g->gens[0].id; goto out; }
    rc = tide_store_fetch(g->gens[at].s, key, &v, &len);
    if (rc == 0) rc = copy_forward(g, key, v, len, g->gens[at].id);
    else {
        add(&g->copy_failures, 1);
        tide_log(TIDE_LOG_WARN, "%s: re-PUT: reading generation %" PRIu64 " to copy forward "
                 "failed: %s", g->dir, g->gens[at].id, tide_last_error());
    }
    if (rc == 0) *gen_id = g->gens[0].id;
out:
    free(v);
    return tide_err_set(TIDE_EEXIST, "insert: the key exists (generation %" PRIu64 ")", *gen_id);
}

int tide_gens_insert(tide_gens *g, const void *key, const void *value, size_t len,
                     uint64_t *gen_id)
{
    uint64_t where = 0;
    unsigned at;
    int rc;

    if (!g->enabled) {
        rc = tide_store_insert(g->plain, key, value, len);
        goto done;
    }
    if (g->read_only) return tide_err_set(TIDE_EINVAL, "%s: insert: opened read-only", g->dir);
    pthread_rwlock_rdlock(&g->lock);
    rc = find_older(g, key, &at);
    if (rc == 0 && at > 0) rc = reput(g, key, at, &where);
    else if (rc == 0) {
        where = g->gens[0].id;
        rc = tide_store_insert(g->gens[0].s, key, value, len);
        if (rc == 0) add(&g->newest_objects, 1);
    }
    pthread_rwlock_unlock(&g->lock);
done:
    if (gen_id && (rc == 0 || rc == TIDE_EEXIST)) *gen_id = where;
    return rc;
}

/* Fetch from the older generations (read lock held, the newest missed). */
static int fetch_older(tide_gens *g, const void *key, void **out, size_t *len, uint64_t *where)
{
    int rc = TIDE_ENOTFOUND;
    if (g->nread > 1) add(&g->older_lookups, 1);
    for (unsigned i = 1; i < g->nread && rc == TIDE_ENOTFOUND; i++) {
        rc = tide_store_fetch(g->gens[i].s, key, out, len);
        if (rc == 0) {
            *where = g->gens[i].id;
            if (!g->read_only && copy_forward(g, key, *out, *len, g->gens[i].id) == 0)
                *where = g->gens[0].id;
        }
    }
    return rc;
}

int tide_gens_fetch(tide_gens *g, const void *key, void **out, size_t *len, uint64_t *gen_id)
{
    uint64_t where = 0;
    int rc;

    if (!g->enabled) {
        rc = tide_store_fetch(g->plain, key, out, len);
        goto done;
    }
    pthread_rwlock_rdlock(&g->lock);
    where = g->gens[0].id;
    rc = tide_store_fetch(g->gens[0].s, key, out, len);
    if (rc == TIDE_ENOTFOUND) rc = fetch_older(g, key, out, len, &where);
    pthread_rwlock_unlock(&g->lock);
done:
    if (gen_id && rc == 0) *gen_id = where;
    return rc;
}

int tide_gens_touch(tide_gens *g, const void *key, const void *value, size_t len,
                    uint64_t gen_id, uint64_t *now_gen_id)
{
    int rc = 0;
    *now_gen_id = 0;
    if (!g->enabled) return 0;
    if (g->read_only) return tide_err_set(TIDE_EINVAL, "%s: touch: opened read-only", g->dir);
    pthread_rwlock_rdlock(&g->lock);
    if (gen_id < g->gens[g->nread - 1].id) {
        rc = tide_err_set(TIDE_ENOTFOUND, "%s: touch: generation %" PRIu64 " was dropped (the "
                          "oldest kept is %" PRIu64 ")", g->dir, gen_id,
                          g->gens[g->nread - 1].id);
    } else if (gen_id >= g->gens[0].id) {
        *now_gen_id = g->gens[0].id;
    } else {
        rc = copy_forward(g, key, value, len, gen_id);
        if (rc == 0) *now_gen_id = g->gens[0].id;
    }
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

int tide_gens_keep(tide_gens *g, const void *key, int *copied)
{
    void *v = NULL;
    size_t len = 0;
    unsigned at = 0;
    int rc;

    *copied = 0;
    if (!g->enabled) {
        rc = tide_store_contains(g->plain, key);
        return rc == 1 ? 0 : rc == 0 ? tide_err_set(TIDE_ENOTFOUND, "keep: the key is absent") : rc;
    }
    if (g->read_only) return tide_err_set(TIDE_EINVAL, "%s: keep: opened read-only", g->dir);
    pthread_rwlock_rdlock(&g->lock);
    rc = tide_store_contains(g->gens[0].s, key);
    if (rc == 1) { rc = 0; goto out; }
    if (rc < 0) goto out;
    rc = find_older(g, key, &at);
    if (rc) goto out;
    if (at == 0) { rc = tide_err_set(TIDE_ENOTFOUND, "keep: the key is in no generation"); goto out; }
    rc = tide_store_fetch(g->gens[at].s, key, &v, &len);
    if (rc) goto out;
    rc = tide_store_insert(g->gens[0].s, key, v, len);
    if (rc == 0) {
        *copied = 1;
        add(&g->newest_objects, 1);
        add(&g->copied_forward, 1);
        add(&g->copied_forward_bytes, len);
    } else if (rc == TIDE_EEXIST) {
        rc = 0;   /* another thread copied it first */
    } else {
        add(&g->copy_failures, 1);
    }
out:
    pthread_rwlock_unlock(&g->lock);
    free(v);
    return rc;
}

/* Take sync_lock (read), which keeps the stores open until the caller
 * releases it, and copy the open generations' stores, newest first, under
 * a short hold of `lock`, so the caller's slow work on them (commits waited
 * for, pagemap scans) never holds `lock`. Returns their count. */
static unsigned open_stores(tide_gens *g, tide_store *stores[TIDE_GEN_MAX])
{
    unsigned n;

    pthread_rwlock_rdlock(&g->sync_lock);
    pthread_rwlock_rdlock(&g->lock);
    n = g->m.count;
    for (unsigned i = 0; i < n; i++) stores[i] = g->gens[i].s;
    pthread_rwlock_unlock(&g->lock);
    return n;
}

int tide_gens_sync(tide_gens *g)
{
    tide_store *stores[TIDE_GEN_MAX];
    unsigned n;
    int rc = 0;

    if (!g->enabled) return tide_store_sync(g->plain);
    /* Every open generation: the one that was newest before a rotation
     * may still hold inserts that returned before this call. The commits
     * are waited for outside `lock` (sync_lock keeps the stores open). */
    n = open_stores(g, stores);
    for (unsigned i = 0; i < n; i++) {
        int r = tide_store_sync(stores[i]);
        if (r && rc == 0) rc = r;
    }
    pthread_rwlock_unlock(&g->sync_lock);
    return rc;
}

void ti_gens_file_sizes(tide_io *io, const char *path, uint64_t *dat, uint64_t *key,
                        uint64_t *log)
{
    static const char *const names[3] = { "nudb.dat", "nudb.key", "nudb.log" };
    uint64_t *outs[3] = { dat, key, log };
    for (unsigned i = 0; i < 3; i++) {
        char p[TI_GENS_PATH_CAP];
        tide_file *f = NULL;
        uint64_t n = 0;
        if (outs[i] == NULL) continue;
        if (ti_gens_path(p, path, names[i]) == 0 && io->open(io, p, TIDE_IO_READ, &f) == 0) {
            if (io->size(f, &n) != 0) n = 0;
            io->close(f);
        }
        *outs[i] = n;
    }
}

void tide_gens_get_info(tide_gens *g, tide_gens_info *out)
{
    memset(out, 0, sizeof *out);
    out->enabled = g->enabled;
    out->copied_forward = load(&g->copied_forward);
    out->copied_forward_bytes = load(&g->copied_forward_bytes);
    out->copy_failures = load(&g->copy_failures);
    out->older_lookups = load(&g->older_lookups);
    out->removed_at_open = g->removed_at_open;
    if (!g->enabled) {
        tide_store_info si;
        tide_store_get_info(g->plain, &si);
        out->count = 1;
        out->gens[0].writable = 1;
        out->gens[0].dat_file_bytes = si.dat_file_bytes;
        out->gens[0].key_file_bytes = si.key_file_bytes;
        out->gens[0].log_file_bytes = si.log_file_bytes;
        out->disk_bytes = si.dat_file_bytes + si.key_file_bytes + si.log_file_bytes;
        out->newest_bytes = si.dat_file_bytes;
        out->newest_objects = load(&g->newest_objects);
        return;
    }
    pthread_rwlock_rdlock(&g->lock);
    out->keep = g->m.keep;
    out->count = g->m.count;
    out->rotations = g->m.rotations;
    out->last_rotation_us = g->m.last_rotation_us;
    out->newest_objects = load(&g->newest_objects);
    for (unsigned i = 0; i < g->m.count; i++) {
        tide_gens_gen_info *e = &out->gens[i];
        tide_store_info si;
        tide_store_get_info(g->gens[i].s, &si);
        e->id = g->m.gens[i].id;
        memcpy(e->dir, g->m.gens[i].dir, sizeof e->dir);
        e->dat_file_bytes = si.dat_file_bytes;
        e->key_file_bytes = si.key_file_bytes;
        e->log_file_bytes = si.log_file_bytes;
        e->writable = i == 0;
        e->tail_items = si.tail_items;
        e->tail_bytes = si.tail_bytes;
        e->dat_durable = si.dat_durable;
        e->uid = si.uid;
        e->salt = si.salt;
        e->key_size = si.key_size;
        e->block_size = si.block_size;
        out->disk_bytes += si.dat_file_bytes + si.key_file_bytes + si.log_file_bytes;
    }
    out->newest_bytes = out->gens[0].dat_file_bytes;
    pthread_rwlock_unlock(&g->lock);
}

/* One map's resident pages (`of`: tide_store_key_map_resident or
 * tide_store_dat_map_resident) summed over the open stores. */
static int maps_resident(tide_gens *g, uint64_t *bytes, int (*of)(tide_store *, uint64_t *))
{
    uint64_t one = 0;
    int rc = 0, r;

    tide_store *stores[TIDE_GEN_MAX];
    unsigned n;

    *bytes = 0;
    if (!g->enabled) return of(g->plain, bytes);
    /* The scans (a pagemap read per 4 MiB mapped, tens of ms at gigabytes)
     * run outside `lock`, so a switch, and the fetches queued behind it,
     * never wait for them: sync_lock keeps the stores open, as in
     * tide_gens_sync. */
    n = open_stores(g, stores);
    for (unsigned i = 0; i < n; i++) {
        if ((r = of(stores[i], &one)) != 0) rc = r;
        *bytes += one;
    }
    pthread_rwlock_unlock(&g->sync_lock);
    return rc;
}

int tide_gens_key_map_resident(tide_gens *g, uint64_t *bytes)
{
    return maps_resident(g, bytes, tide_store_key_map_resident);
}

int tide_gens_dat_map_resident(tide_gens *g, uint64_t *bytes)
{
    return maps_resident(g, bytes, tide_store_dat_map_resident);
}

void tide_gens_store_info(tide_gens *g, tide_store_info *out)
{
    if (!g->enabled) { tide_store_get_info(g->plain, out); return; }
    pthread_rwlock_rdlock(&g->lock);
    tide_store_get_info(g->gens[0].s, out);
    for (unsigned i = 1; i < g->m.count; i++) {
        tide_store_info si;
        tide_store_get_info(g->gens[i].s, &si);
        out->dat_file_bytes += si.dat_file_bytes;
        out->key_file_bytes += si.key_file_bytes;
        out->log_file_bytes += si.log_file_bytes;
        out->key_map_bytes += si.key_map_bytes;   /* a gauge: the open stores' only */
        out->dat_map_bytes += si.dat_map_bytes;
        out->needs_recovery |= si.needs_recovery;
        add_counters(out, &si);
    }
    pthread_rwlock_unlock(&g->lock);
    pthread_mutex_lock(&g->retired_mu);
    add_counters(out, &g->retired);
    pthread_mutex_unlock(&g->retired_mu);
}
