/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup.c: finding a key in a store, for every kind of handle: the pools
 * (a writer's inserts not yet committed), then the files: the tail of
 * unindexed records [W, C), then the key file's bucket and its spill
 * chain, then the data record the entry points at.
 *
 * One path serves every mode. A writer's fetch and its insert's
 * duplicate check call ti_lookup_pools and ti_lookup_files; a READER and
 * an IDLE_READER call ti_lookup_files (their pools are empty); a
 * LIVE_READER calls it inside one attempt of tide.live's seqlock
 * (reader.c, ti_reader_lookup), which has brought the handle's view (the
 * bucket count, the data file's bound, the tail index) to the page first.
 * The tail is the handle's: a LIVE_READER's view's, everyone else's own
 * (handle_tail). So this file calls nothing of reader.c's, and reader.c
 * nothing but ti_lookup_files.
 *
 * An insert's lookup first asks the CPU for the lines its misses will be
 * on (ti_lookup_prefetch, under key_lock alone: the tail's home slot, the
 * bucket's header and the entries near the hash's place), then looks in
 * the pools, which prefetch the second pool's slot before searching the
 * first: the misses of a store larger than the caches overlap instead of
 * following each other. A prefetch reads nothing and grows no map.
 *
 * Layout: the bucket read and its check; reading nudb.dat (the data map
 * below dat_stable, pread above: the essay below); matching a record;
 * searching a bucket image and its spill chain; the probe (what a lookup
 * takes from its bucket under key_lock); the pools; the tail; the
 * prefetch; the files.
 *
 * Invariants:
 *   1. Pools before files, and within the files the tail before the key
 *      file under one hold of key_lock: a commit clears `committing` only
 *      after its buckets (or tail entries) are in place, and a flush
 *      empties the tail only after it wrote the buckets, so a key that
 *      was inserted is always found (store.c's invariant 3).
 *   2. key_lock (read) is held only for what a commit's write phase
 *      changes: the bucket (or its copy, the probe), the tail's table and
 *      the bucket count. The records, and spill records, are read after it
 *      is released, through the data map below dat_stable (which never
 *      moves down) or with pread.
 *   3. A bucket count above the capacity is TIDE_ECORRUPT naming the
 *      bucket, never a read past the block.
 *
 * Never: take pool_mu while holding key_lock (store_impl.h's order); read
 *   a data record under key_lock but the tail's (immutable, below C); map
 *   a LIVE_READER's files (its writer's rollback may cut them: SIGBUS).
 */
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/err.h"

static int bucket_corrupt(tide_store *s, uint64_t index, unsigned count)
{
    return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu (offset %llu): count %u exceeds capacity %u",
                        s->key_path, (unsigned long long)index,
                        (unsigned long long)((index + 1) * s->block_size), count, s->capacity);
}

int ti_lookup_read_bucket(tide_store *s, uint64_t index, uint8_t *buf)
{
    int rc = s->io->read_at(s->key, buf, s->block_size, (index + 1) * (uint64_t)s->block_size);
    if (rc) return rc;
    if (ti_fmt_bucket_count(buf) > s->capacity) return bucket_corrupt(s, index, ti_fmt_bucket_count(buf));
    return 0;
}

/*
 * Reading nudb.dat. A lookup reads the record an entry points at, and the
 * spill records of its bucket's chain, after key_lock is released (a slow
 * read never holds up a commit's write phase). Through the data map when
 * the bytes lie below dat_stable, with pread otherwise. Why the map never
 * faults there (SIGBUS: touching a mapped page wholly past the file's end):
 *   1. nudb.dat is cut while the store is open by two paths only, each
 *      back to a size the file had when the failed attempt began: a
 *      commit's rollback (commit.c, to its dat0) and a deferred append
 *      that failed (defer.c, to its dat0). Recovery and rekey's repair cut
 *      at open, before the map is made; rekey's own undo cuts to its dat0,
 *      the size at its open, and commits nothing meanwhile.
 *   2. dat_stable is raised only past those points: by a commit once both
 *      files are synced (it can no longer roll back: APPLIED), by a
 *      deferred append once it is published (nothing cuts it then), and at
 *      open to the file's size. So no path ever cuts below dat_stable, and
 *      the map (keymap.c's machinery, `known` = dat_stable) shows nothing
 *      past it.
 *   3. Bytes below dat_stable never change either (nudb.dat is append
 *      only; a cut region rewritten by a retry lies above it), so they are
 *      read without key_lock. The records of the newest commit, between
 *      its write phase and its syncs, and everything past the map's
 *      reservation, are read with pread as before.
 * A live reader in another process never maps (load_files): the writer's
 * rollback may cut under it with no lock of this process held.
 */

void ti_store_dat_stable(tide_store *s, uint64_t end)
{
    TIDE_ASSERT(end <= __atomic_load_n(&s->dat_size, __ATOMIC_RELAXED));   /* records written */
    if (end > __atomic_load_n(&s->dat_stable, __ATOMIC_RELAXED))
        __atomic_store_n(&s->dat_stable, end, __ATOMIC_RELEASE);
}

/* Bytes [off, off + n) of nudb.dat in the data map, or NULL: read them
 * with pread (past dat_stable, past the map, or no map). */
static const uint8_t *dat_view(tide_store *s, uint64_t off, size_t n)
{
    uint64_t stable = __atomic_load_n(&s->dat_stable, __ATOMIC_ACQUIRE);
    const uint8_t *v = off + n <= stable ? ti_keymap_view(&s->datmap, off, n, stable) : NULL;

    ti_tally_add(s->tally, v ? TI_TALLY_DAT_VIEWS : TI_TALLY_DAT_READS, 1);
    return v;
}

/* Compare the record at e->offset with `key`; on a match with `value` set,
 * copy the value into a malloc'd buffer. 1 match, 0 no match, <0 error. */
static int match_record(tide_store *s, const tide_entry *e, const void *key, void **value)
{
    uint8_t small[6 + 64];
    size_t head = TIDE_DAT_RECORD_HEADER + s->key_size;
    uint64_t dat_end = __atomic_load_n(&s->dat_size, __ATOMIC_ACQUIRE);
    uint8_t *buf = NULL;
    const uint8_t *r;
    size_t want = value ? head + (size_t)e->size : head;
    int rc;

    if (e->offset < TIDE_DAT_HEADER_SIZE || e->offset + head + e->size > dat_end)
        return tide_err_set(TIDE_ECORRUPT, "%s: entry points at offset %llu (size %llu), outside "
                            "the %llu-byte data file", s->key_path, (unsigned long long)e->offset,
                            (unsigned long long)e->size, (unsigned long long)dat_end);
    if ((r = dat_view(s, e->offset, want)) == NULL) {
        buf = want <= sizeof small ? small : malloc(want);
        if (buf == NULL) return tide_err_set(TIDE_ENOMEM, "fetch: cannot allocate %zu bytes", want);
        if ((rc = s->io->read_at(s->dat, buf, want, e->offset)) != 0) goto out;
        r = buf;
    }
    if (ti_get48(r) != e->size) {
        rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: record size %llu differs from the "
                          "bucket entry's %llu", s->dat_path, (unsigned long long)e->offset,
                          (unsigned long long)ti_get48(r), (unsigned long long)e->size);
        goto out;
    }
    if (memcmp(r + TIDE_DAT_RECORD_HEADER, key, s->key_size) != 0) { rc = 0; goto out; }
    rc = 1;
    if (value && buf != NULL && buf != small) {
        memmove(buf, buf + head, e->size);       /* the pread's buffer becomes the value */
        *value = buf;
        buf = NULL;
    } else if (value) {
        uint8_t *v = malloc(e->size ? e->size : 1);
        if (v == NULL) { rc = tide_err_set(TIDE_ENOMEM, "fetch: out of memory"); goto out; }
        memcpy(v, r + head, e->size);
        *value = v;
    }
out:
    if (buf != small) free(buf);
    return rc;
}

static int search_bucket(tide_store *s, const uint8_t *b, unsigned count, uint64_t h,
                         const void *key, tide_entry *entry, void **value)
{
    for (unsigned i = ti_fmt_bucket_lower_bound(b, count, h); i < count; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(b, i, &e);
        if (e.hash != h) break;
        int m = match_record(s, &e, key, value);
        if (m < 0) return m;
        if (m == 1) { *entry = e; return 0; }
    }
    return TIDE_ENOTFOUND;
}

/* Search the spill chain that starts at `spill` (0: none), each record
 * read into `buf` (block_size bytes). */
static int search_spills(tide_store *s, uint8_t *buf, uint64_t spill, uint64_t h, const void *key,
                         tide_entry *entry, void **value)
{
    size_t full = ti_fmt_bucket_bytes(s->capacity);
    uint64_t hops = 0;
    int rc;

    while (spill != 0) {
        uint64_t dat_end = __atomic_load_n(&s->dat_size, __ATOMIC_ACQUIRE);
        if (spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER || spill + full > dat_end ||
            ++hops > dat_end / full)
            return tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu is outside the data file "
                                "or loops", s->dat_path, (unsigned long long)spill);
        const uint8_t *b = dat_view(s, spill, full);
        if (b == NULL && (rc = s->io->read_at(s->dat, buf, full, spill)) != 0) return rc;
        if (b == NULL) b = buf;
        if (ti_fmt_bucket_count(b) > s->capacity)
            return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: spill record count %u exceeds "
                                "capacity %u", s->dat_path, (unsigned long long)spill,
                                ti_fmt_bucket_count(b), s->capacity);
        rc = search_bucket(s, b, ti_fmt_bucket_count(b), h, key, entry, value);
        if (rc != TIDE_ENOTFOUND) return rc;
        spill = ti_fmt_bucket_spill(b);
    }
    return TIDE_ENOTFOUND;
}

int ti_lookup_search_key(tide_store *s, uint8_t *buf, uint64_t h, const void *key,
                         tide_entry *entry, void **value)
{
    int rc = search_bucket(s, buf, ti_fmt_bucket_count(buf), h, key, entry, value);
    if (rc != TIDE_ENOTFOUND) return rc;
    return search_spills(s, buf, ti_fmt_bucket_spill(buf), h, key, entry, value);
}

/*
 * What a lookup takes from its bucket under key_lock: from the map, the
 * entries with the key's hash (the binary search decodes only the entries
 * it touches) and the spill pointer; or, read with pread (no map) or
 * copied (more than PROBE_MAX entries share the hash), the whole bucket.
 * The records are read after key_lock is released either way: a slow
 * nudb.dat read never holds up a commit's write phase.
 */
#define PROBE_MAX 8

typedef struct probe {
    tide_entry e[PROBE_MAX];
    unsigned n;
    uint64_t spill;
    int whole;             /* buf holds the bucket */
} probe;

/* The caller holds key_lock. */
static int probe_bucket(tide_store *s, uint64_t h, uint8_t *buf, probe *p)
{
    uint64_t index = ti_fmt_bucket_index(h, s->buckets);
    uint64_t known = (s->buckets + 1) * (uint64_t)s->block_size;
    const uint8_t *b = ti_keymap_view(&s->keymap, (index + 1) * (uint64_t)s->block_size,
                                      s->block_size, known);
    unsigned count;

    p->n = 0;
    p->whole = b == NULL;
    if (b == NULL) {
        ti_tally_add(s->tally, TI_TALLY_BUCKET_READS, 1);
        return ti_lookup_read_bucket(s, index, buf);
    }
    ti_tally_add(s->tally, TI_TALLY_MAP_VIEWS, 1);
    count = ti_fmt_bucket_count(b);
    if (count > s->capacity) return bucket_corrupt(s, index, count);
    p->spill = ti_fmt_bucket_spill(b);
    for (unsigned i = ti_fmt_bucket_seek(b, count, h); i < count; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(b, i, &e);
        if (e.hash != h) break;
        if (p->n == PROBE_MAX) {
            memcpy(buf, b, s->block_size);
            p->whole = 1;
            return 0;
        }
        p->e[p->n++] = e;
    }
    return 0;
}

/* The records of a probe's entries, then its spill chain. */
static int search_probe(tide_store *s, const probe *p, uint8_t *buf, uint64_t h, const void *key,
                        tide_entry *entry, void **value)
{
    for (unsigned i = 0; i < p->n; i++) {
        int m = match_record(s, &p->e[i], key, value);
        if (m < 0) return m;
        if (m == 1) { *entry = p->e[i]; return 0; }
    }
    return search_spills(s, buf, p->spill, h, key, entry, value);
}

/* Pools with no item are skipped without pool_mu: two fetch threads of an
 * idle store would otherwise meet on it at every fetch (a futex sleep and
 * wake when they collide). An insert still in progress may be
 * missed, as it could be by a fetch just before it; one that returned is
 * counted (pool_items is stored before pool_mu is released), and a batch
 * leaves the count only once the files hold it (end_attempt). */
int ti_lookup_pools(tide_store *s, uint64_t h, const void *key, void **value, size_t *len)
{
    int rc = TIDE_ENOTFOUND;
    if (__atomic_load_n(&s->pool_items, __ATOMIC_ACQUIRE) == 0) return rc;
    pthread_mutex_lock(&s->pool_mu);
    ti_pool_prefetch(s->committing, h);
    ti_pool_item *it = ti_pool_find(s->pending, h, key);
    if (it == NULL && s->committing) it = ti_pool_find(s->committing, h, key);
    if (it) {
        rc = 0;
        if (value) {
            void *v = malloc(it->len);
            if (v == NULL) rc = tide_err_set(TIDE_ENOMEM, "fetch: out of memory");
            else {
                memcpy(v, it->data + s->key_size, it->len);
                *value = v;
                *len = it->len;
            }
        }
    }
    pthread_mutex_unlock(&s->pool_mu);
    return rc;
}

/* The handle's tail of unindexed records [W, C): a LIVE_READER's is its
 * view's (reader.c), read from its writer's files; every other handle's is
 * its own (the deferred index; an IDLE_READER's, read at open). Read under
 * key_lock, as both change under it (write). */
static const ti_tail *handle_tail(const tide_store *s)
{
    return ti_store_reads_through_live(s) ? &s->live->tail : &s->tail;
}

/* Look `key` up in the tail (caller holds key_lock): 1 found (*entry, and
 * *value when asked), 0 not there, <0 an error. The records are below C,
 * immutable: reading them under the lock is what a bucket read costs. */
static int tail_lookup(tide_store *s, uint64_t h, const void *key, tide_entry *entry, void **value)
{
    const ti_tail *t = handle_tail(s);
    uint64_t cursor = 0;
    tide_entry e;

    while (ti_tail_next(t, h, &cursor, &e)) {
        int m = match_record(s, &e, key, value);
        if (m != 0) {
            if (m == 1) *entry = e;
            return m;
        }
    }
    return 0;
}

void ti_lookup_prefetch(tide_store *s, uint64_t h)
{
    const ti_tail *t = handle_tail(s);
    const uint64_t *slot;
    const uint8_t *b;
    uint64_t index, known, guess;

    pthread_rwlock_rdlock(&s->key_lock);
    if ((slot = ti_tail_home(t, h)) != NULL) __builtin_prefetch(slot);
    index = ti_fmt_bucket_index(h, s->buckets);
    known = (s->buckets + 1) * (uint64_t)s->block_size;
    /* Only bytes already mapped: a prefetch never grows the map. */
    if ((index + 2) * (uint64_t)s->block_size <= __atomic_load_n(&s->keymap.len, __ATOMIC_ACQUIRE) &&
        (b = ti_keymap_view(&s->keymap, (index + 1) * (uint64_t)s->block_size, s->block_size, known)) != NULL) {
        /* ti_fmt_bucket_seek starts at entry h x count / 2^48; the count
         * is in the header, not read yet: take a half-full bucket's. */
        guess = ((h & TIDE_FIELD48_MAX) * (s->capacity / 2)) >> 48;
        __builtin_prefetch(b);
        __builtin_prefetch(b + TIDE_BUCKET_HEADER_SIZE + TIDE_ENTRY_SIZE * guess);
    }
    pthread_rwlock_unlock(&s->key_lock);
}

int ti_lookup_files(tide_store *s, uint64_t h, const void *key, void **value, size_t *len)
{
    uint8_t stack[16384];
    uint8_t *buf = s->block_size <= sizeof stack ? stack : malloc(s->block_size);
    tide_entry e;
    probe p;
    int rc = 0;

    if (buf == NULL) return tide_err_set(TIDE_ENOMEM, "fetch: out of memory");
    pthread_rwlock_rdlock(&s->key_lock);
    /* The tail before the key file, under the same lock: a flush writes
     * the buckets before it empties the tail. */
    int in_tail = tail_lookup(s, h, key, &e, value);
    if (in_tail == 0) rc = probe_bucket(s, h, buf, &p);
    pthread_rwlock_unlock(&s->key_lock);
    if (in_tail < 0) rc = in_tail;
    else if (in_tail == 1) rc = 0;
    else if (rc == 0) rc = p.whole ? ti_lookup_search_key(s, buf, h, key, &e, value)
                              : search_probe(s, &p, buf, h, key, &e, value);
    if (rc == 0 && len) *len = e.size;
    if (buf != stack) free(buf);
    return rc;
}
