/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reader.c: a read-only handle's lookups while a writer in another process
 * commits. live.c's essay says how the writer publishes; this is
 * the reader's half of the seqlock.
 *
 * A lookup is, in one attempt:
 *   s1 = seq (acquire); wait while it is odd;
 *   bring the view to the page (ti_reader_refresh: the bucket count, the
 *   data file's bound max(W, C), and the tail index of [W, C));
 *   look up the key as every handle does (lookup.c: ti_lookup_files, the
 *   tail index, then nudb.key under that count, in one hold of key_lock);
 *   s2 = seq; when s2 != s1 the attempt is thrown away (its value freed,
 *   its error too: a bucket read half-written may look corrupt) and the
 *   lookup starts again.
 * The value is read inside the attempt (with the key, in one read), so a
 * rollback that cuts nudb.dat after s1 is seen by the s2 check as well.
 *
 * The tail index: every record in [W, C) of nudb.dat, which the deferred
 * index (helper D) has acknowledged but not yet written to nudb.key, in
 * a table of tail.c's (the writer's own tail's kind). The reader scans it
 * itself, incrementally: [scanned, C) when C grows; when W
 * moves up (a flush wrote the tail's buckets) the entries below W are
 * dropped (rehashed, no I/O); a new generation (a writer's open, its
 * recovery) or a C below `scanned` (a rollback) empties it and scans [W, C)
 * again. Records there are data records (nonzero size, key, value) or
 * spill records (size 0, a 2-byte length, a bucket), walked as visit does.
 * Each table it allocates is given to note_alloc (the handle's
 * tail_account_id), as the writer's tail tables are.
 *
 * Invariants:
 *   1. The view (s->buckets, s->dat_size, the tail index) only moves
 *      forward: it is replaced under key_lock (write) by a view of a later
 *      seq only, so a thread holding an older s1 fails its s2 check
 *      instead of searching with counts older than it read.
 *   2. A result is returned only from an attempt whose s1 == s2 (even):
 *      no key-file byte and no count changed while it ran.
 *   3. The tail index holds exactly the data records of [W, scanned),
 *      scanned <= C, each once (by offset).
 *   4. Nothing read from the page is used before seq is seen still equal
 *      to the even s1 it was read under, and then checked against the
 *      files (check_counts): a wrong page is TIDE_ECORRUPT naming
 *      tide.live, never a hang, an abort or a blamed nudb.key.
 *
 * Never: return a value or an ENOTFOUND from an attempt that overlapped a
 *   write; wait for ever (TI_LIVE_WAIT_MS, then TIDE_EBUSY).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"

#define SCAN_WINDOW (1u << 20)

static uint64_t seq_now(const ti_live *l)
{
    return __atomic_load_n(&l->w[TI_LIVE_SEQ], __ATOMIC_ACQUIRE);
}

static uint64_t page(const ti_live *l, int i)
{
    return __atomic_load_n(&l->w[i], __ATOMIC_RELAXED);
}

/* ---- the tail index: tail.c's table, as the writer's tail ---- */

/* Each table the index allocates is counted as the writer's are
 * (note_alloc with the handle's tail_account_id: churn totals). */
static void note_table(const tide_store *s, uint64_t grown)
{
    if (grown && s->opts.note_alloc && s->opts.tail_account_id >= 0)
        s->opts.note_alloc(s->opts.tail_account_id, (int64_t)grown);
}

/* Add an entry (the table doubles as it fills). Not bounded by a budget:
 * the writer's (or its recovery's) tail is what it is. */
static int tail_put(const tide_store *s, ti_live *l, const tide_entry *e)
{
    uint64_t grown = 0;
    int rc = ti_tail_add_growing(&l->tail, e, &grown);
    note_table(s, grown);
    return rc;
}

static void tail_empty(ti_tail *t)
{
    ti_tail_clear(t);
    t->max_slots = 1ull << 62;
}

/* Keep the entries at or above `w` (W moved up: the rest are in nudb.key).
 * A table that cannot be made keeps the old one: a stale entry only costs
 * a read (its record is in nudb.key too). */
static void tail_prune(const tide_store *s, ti_live *l, uint64_t w)
{
    ti_tail kept = { .max_slots = 1ull << 62 };
    tide_entry e;

    for (uint64_t i = 0; i < l->tail.nslots; i++) {
        uint64_t grown = 0;
        if (!ti_tail_slot(&l->tail, i, &e) || e.offset < w) continue;
        int rc = ti_tail_add_growing(&kept, &e, &grown);
        note_table(s, grown);
        if (rc != 0) {
            tide_err_clear();
            ti_tail_clear(&kept);
            return;
        }
    }
    ti_tail_clear(&l->tail);
    l->tail = kept;
}

/* Index the records of [l->scanned, c): data records into the table, spill
 * records stepped over. A record that does not fit below c is corruption
 * (C is the end of complete records), unless the seq moved meanwhile,
 * which the caller's s2 check finds. */
static int tail_scan(tide_store *s, ti_live *l, uint64_t c)
{
    size_t head = TIDE_DAT_RECORD_HEADER + s->key_size;
    uint8_t *win = NULL;
    uint64_t base = 0, have = 0, pos = l->scanned;
    int rc = 0;

    if (pos >= c) return 0;
    if ((win = malloc(SCAN_WINDOW)) == NULL) return tide_err_set(TIDE_ENOMEM, "reader: out of memory");
    __atomic_fetch_add(&l->tail_scans, 1, __ATOMIC_RELAXED);
    while (pos < c) {
        size_t need = head > TIDE_SPILL_HEADER ? head : TIDE_SPILL_HEADER;
        if (pos + need > c) need = (size_t)(c - pos);
        if (pos < base || pos + need > base + have) {
            uint64_t want = c - pos < SCAN_WINDOW ? c - pos : SCAN_WINDOW;
            if ((rc = s->io->read_at(s->dat, win, (size_t)want, pos)) != 0) goto out;
            base = pos;
            have = want;
        }
        const uint8_t *r = win + (pos - base);
        uint64_t size = need >= 6 ? ti_get48(r) : 0, len;
        if (need < TIDE_SPILL_HEADER) len = UINT64_MAX;
        else if (size == 0) len = TIDE_SPILL_HEADER + (uint64_t)ti_get16(r + 6);
        else len = need < head ? UINT64_MAX : head + size;
        /* A value is below 4 GiB: a larger size is no record (and the
         * table holds 32 bits of it). */
        if (len == UINT64_MAX || pos + len > c || size > 0xffffffffull) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: the record runs past the %llu "
                              "bytes the writer says are complete (tide.live)", s->dat_path,
                              (unsigned long long)pos, (unsigned long long)c);
            goto out;
        }
        if (size != 0) {
            tide_entry e = { pos, size, ti_fmt_hash48(r + TIDE_DAT_RECORD_HEADER, s->key_size,
                                                      s->kh.salt) };
            if ((rc = tail_put(s, l, &e)) != 0) goto out;
        }
        pos += len;
    }
    l->scanned = pos;
out:
    free(win);
    return rc;
}

/* ---- the view ---- */

/* The page's counts as read under seq s1, before any of them is used. */
typedef struct page_counts {
    uint64_t magic, version, gen, uid, buckets, key_bytes, w, c;
} page_counts;

static void read_counts(const ti_live *l, page_counts *p)
{
    p->magic = page(l, TI_LIVE_MAGIC);
    p->version = page(l, TI_LIVE_VERSION);
    p->gen = page(l, TI_LIVE_GEN);
    p->uid = page(l, TI_LIVE_UID);
    p->buckets = page(l, TI_LIVE_BUCKETS);
    p->key_bytes = page(l, TI_LIVE_KEY_BYTES);
    p->w = page(l, TI_LIVE_W);
    p->c = page(l, TI_LIVE_C);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* Counts read under an s1 that still holds: does the page agree with the
 * files? Nothing on the page is trusted before this (a bucket count of
 * 2^63 would spin the table's modulus, 0 abort the key map). */
static int check_counts(tide_store *s, const page_counts *p)
{
    uint64_t key_size = 0, dat_size = 0;
    const char *bad = NULL;
    int rc;

    if (p->magic != TI_LIVE_MAGIC_WORD || p->version != TI_LIVE_VERSION_1)
        bad = "its magic or version changed";
    else if (p->uid != s->kh.uid)
        return tide_err_set(TIDE_EMISMATCH, "%s: tide.live belongs to another store (uid "
                            "%016llx, nudb.key's %016llx): a copy? Its writer's counts cannot be "
                            "trusted; nothing was read", s->dir, (unsigned long long)p->uid,
                            (unsigned long long)s->kh.uid);
    else if (p->buckets < 1 || p->buckets > (1ull << 48))
        bad = "its bucket count is outside 1..2^48";
    else if (p->key_bytes != (p->buckets + 1) * (uint64_t)s->block_size)
        bad = "its key file size is not (buckets + 1) x the block size";
    else if (p->w < TIDE_DAT_HEADER_SIZE || p->w > p->c)
        bad = "its data file bounds do not satisfy header <= W <= C";
    if (bad == NULL) {
        /* The writer grows a file before it publishes past its end. */
        if ((rc = s->io->size(s->key, &key_size)) != 0) return rc;
        if ((rc = s->io->size(s->dat, &dat_size)) != 0) return rc;
        if (key_size < p->key_bytes) bad = "its key file size is past nudb.key's end";
        else if (dat_size < p->c) bad = "its committed bound C is past nudb.dat's end";
    }
    if (bad == NULL) return 0;
    return tide_err_set(TIDE_ECORRUPT, "%s/tide.live does not describe this store: %s (buckets "
                        "%llu, key bytes %llu, W %llu, C %llu); nothing was read: restart the "
                        "store's writer (its open rebuilds tide.live)", s->dir, bad,
                        (unsigned long long)p->buckets, (unsigned long long)p->key_bytes,
                        (unsigned long long)p->w, (unsigned long long)p->c);
}

/* The view (tail index, counts) brought to p; key_lock held (write). */
static int apply_counts(tide_store *s, ti_live *l, const page_counts *p, uint64_t s1)
{
    int rc;

    l->view_seq = 0;                 /* until the view below is whole */
    if (p->gen != l->view_gen || p->c < l->scanned || p->w < l->W) {
        tail_empty(&l->tail);
        l->scanned = p->w;
    } else if (p->w > l->W) {
        tail_prune(s, l, p->w);
        if (l->scanned < p->w) l->scanned = p->w;
    }
    l->view_gen = p->gen;
    l->W = p->w;
    l->C = p->c;
    rc = tail_scan(s, l, p->c);
    if (rc) {
        l->view_gen = 0;             /* a later view scans again from W */
        return rc;
    }
    s->buckets = p->buckets;
    s->dat_indexed = p->w;
    s->dat_committed = p->c;
    __atomic_store_n(&s->dat_size, p->c, __ATOMIC_RELEASE);
    l->view_seq = s1;
    return 0;
}

int ti_reader_refresh(tide_store *s, uint64_t s1)
{
    ti_live *l = s->live;
    page_counts p;
    int rc = 0;

    pthread_rwlock_rdlock(&s->key_lock);
    int current = l->view_seq >= s1;
    pthread_rwlock_unlock(&s->key_lock);
    if (current) return 0;           /* invariant 1: never back to an older view */
    pthread_rwlock_wrlock(&s->key_lock);
    if (l->view_seq < s1) {
        read_counts(l, &p);
        /* Counts read while seq was odd or moved on are torn: the view
         * stays as it was and the caller's s2 check retries (invariant 4). */
        if (seq_now(l) == s1 && (s1 & 1) == 0) {
            rc = check_counts(s, &p);
            /* A torn read of the files' sizes is retried too. */
            if (rc && seq_now(l) != s1) {
                rc = 0;
                tide_err_clear();
            } else if (rc == 0) {
                rc = apply_counts(s, l, &p, s1);
            }
        }
    }
    pthread_rwlock_unlock(&s->key_lock);
    return rc;
}

/* Wait until seq is even; TIDE_EBUSY once the writer is gone with it odd,
 * or after the deadline. */
static int wait_even(tide_store *s, uint64_t deadline_us, uint64_t *seq)
{
    ti_live *l = s->live;
    struct timespec ts = { 0, 20000 };
    uint64_t next_check = 0;

    __atomic_fetch_add(&l->waits, 1, __ATOMIC_RELAXED);
    while ((*seq = seq_now(l)) & 1) {
        uint64_t now = tide_clock_mono_us();
        if (now >= next_check) {
            int rc = ti_live_refuse_broken(l, s->dir);
            if (rc) return rc;
            if (!ti_live_writer_alive(l))
                return tide_err_set(TIDE_EBUSY, "%s: the writer (pid %llu) stopped in the middle "
                                    "of writing nudb.key (killed?), or runs where this "
                                    "process's /proc cannot see it (another PID namespace, "
                                    "hidepid): the store needs recovery: start its writer again "
                                    "(its open recovers, readers may stay; 'tide recover' "
                                    "refuses while readers hold the files); nothing was read",
                                    s->dir, (unsigned long long)page(l, TI_LIVE_PID));
            next_check = now + 100000;
        }
        if (now >= deadline_us)
            return tide_err_set(TIDE_EBUSY, "%s: the writer (pid %llu) has been writing nudb.key "
                                "for %u s without a pause; try again", s->dir,
                                (unsigned long long)page(l, TI_LIVE_PID), TI_LIVE_WAIT_MS / 1000);
        nanosleep(&ts, NULL);
        if (ts.tv_nsec < 1000000) ts.tv_nsec *= 2;
    }
    return 0;
}

int ti_live_start_reader(tide_store *s)
{
    uint64_t s1;
    int rc;

    for (;;) {
        rc = wait_even(s, tide_clock_mono_us() + TI_LIVE_WAIT_MS * 1000ull, &s1);
        if (rc) return rc;
        rc = ti_reader_refresh(s, s1);       /* checks the uid too */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (seq_now(s->live) != s1) continue;
        return rc;
    }
}

/* Begin an attempt: an even seq in *s1 (waiting while it is odd) and the
 * view brought to it, the refresh's result in *rc (it counts only if the
 * attempt holds). Nonzero: the wait's TIDE_EBUSY, which ends the call. */
static int attempt_start(tide_store *s, uint64_t deadline, uint64_t *s1, int *rc)
{
    int w;
    *s1 = seq_now(s->live);
    if ((*s1 & 1) && (w = wait_even(s, deadline, s1)) != 0) return w;
    *rc = ti_reader_refresh(s, *s1);
    return 0;
}

/* After an attempt begun at s1: 0 when no write overlapped it (its result
 * stands: invariant 2); 1 to try again (a retry counted); TIDE_EBUSY past
 * the deadline. */
static int attempt_end(tide_store *s, uint64_t s1, uint64_t deadline, const char *what)
{
    ti_live *l = s->live;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (seq_now(l) == s1) return 0;
    __atomic_fetch_add(&l->retries, 1, __ATOMIC_RELAXED);
    if (tide_clock_mono_us() < deadline) return 1;
    return tide_err_set(TIDE_EBUSY, "%s: every %s for %u s met a write of the writer (pid %llu); "
                        "try again", s->dir, what, TI_LIVE_WAIT_MS / 1000,
                        (unsigned long long)page(l, TI_LIVE_PID));
}

int ti_reader_lookup(tide_store *s, uint64_t h, const void *key, void **value, size_t *len)
{
    uint64_t deadline = tide_clock_mono_us() + TI_LIVE_WAIT_MS * 1000ull, s1;
    int rc, again;

    do {
        if ((again = attempt_start(s, deadline, &s1, &rc)) != 0) return again;
        if (rc == 0) rc = ti_lookup_files(s, h, key, value, len);
        if ((again = attempt_end(s, s1, deadline, "lookup")) != 0) {
            if (value && *value) {
                free(*value);
                *value = NULL;
            }
            if (len) *len = 0;
            if (again < 0) return again;
        }
    } while (again);
    return rc;
}

int ti_reader_bucket(tide_store *s, uint64_t index, uint8_t *buf, uint64_t *buckets,
                     uint64_t *dat_end)
{
    uint64_t deadline = tide_clock_mono_us() + TI_LIVE_WAIT_MS * 1000ull, s1;
    int rc, again;

    do {
        if ((again = attempt_start(s, deadline, &s1, &rc)) != 0) return again;
        pthread_rwlock_rdlock(&s->key_lock);
        *buckets = s->buckets;
        *dat_end = __atomic_load_n(&s->dat_size, __ATOMIC_ACQUIRE);
        pthread_rwlock_unlock(&s->key_lock);
        if (rc == 0 && index >= *buckets) rc = TIDE_ENOTFOUND;
        if (rc == 0)
            rc = s->io->read_at(s->key, buf, s->block_size, (index + 1) * (uint64_t)s->block_size);
        if ((again = attempt_end(s, s1, deadline, "bucket read")) < 0) return again;
    } while (again);
    return rc;
}
