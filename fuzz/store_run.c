/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store_run.c: whole store images, then a short script against them; the
 * run that fuzz_store_image (the read operations) and fuzz_store_script
 * (all of them) share.
 *
 * What it feeds. The input is a store's three files and a script:
 *
 *     u8  flags        bit 0 nudb.dat exists, bit 1 nudb.key, bit 2 nudb.log;
 *                      bit 3 background commits (commit_interval_ms 1;
 *                      otherwise commits happen only at sync and close, so
 *                      a run is deterministic; the script mode only);
 *                      bit 4 map nudb.key (the read mode only: without it
 *                      every open reads nudb.key with pread, opts.pread;
 *                      the script mode always maps)
 *     u24 dat_len, u24 key_len, u24 log_len   (big-endian; each cut to the
 *                      bytes that are left)
 *     dat_len bytes of nudb.dat, key_len of nudb.key, log_len of nudb.log
 *     the script: up to 50 operations, one opcode byte each and their
 *                      argument bytes, until the input ends. The script
 *                      mode takes the byte mod 13, in this order; the read
 *                      mode mod 7, over the read ones (OPEN_RO FETCH CLOSE
 *                      VERIFY VISIT INSPECT INFO, in that order):
 *
 *       OPEN            read-write             OPEN_RO   read-only
 *       FETCH s [k]     s < 0x60: a key of the image (from a visit);
 *                       s < 0xc0: a key this run inserted; else the
 *                       generated key k (make_key)
 *       INSERT s l      s < 0x20: a key of the image, else make_key(s);
 *                       a value of l + 1 bytes
 *       SYNC  CLOSE  VERIFY  RECOVER  VISIT  INSPECT  INFO
 *       REKEY b         block size 4096 << (b & 3), load factor
 *                       0.25 * (1 + (b >> 2 & 3)), buffer 64 KiB or 1 MiB
 *       REOPEN          close and open read-write again
 *
 * The files live in a tide_io_sim ("db/nudb.dat", ...): nothing touches the
 * disk. Each input gets a fresh sim, set unchecked: the sim's model is
 * asserted once, when the input ends (tide_io_sim_check), not after each
 * of its calls. One store handle at most is open at a time; OPEN with one
 * open, or FETCH with none, is skipped.
 *
 * The image's keys (for FETCH and INSERT to name, and for the model) come
 * from a visit of nudb.dat. The script mode visits before the first
 * operation and again at each verify that passes (the script may have
 * written since). The read mode visits once, when a key of the image or
 * the model is first needed: nothing writes the files there, so a second
 * visit would find the same keys and counts.
 *
 * What it asserts.
 *   1. No crash, no sanitizer report, no leak, no hang, on any input.
 *   2. Every call returns 0 or a TIDE_E* code (TIDE_ERROR_MIN to
 *      TIDE_ERROR_MAX), and every error but a fetch's TIDE_ENOTFOUND leaves
 *      a message in tide_last_error(). A failed open leaves *out NULL; a
 *      fetch that succeeds hands back a buffer.
 *   3. When tide_store_verify_io returns 0, the store is sound, and from then on
 *      the run checks it against a model (the keys a visit finds, plus the
 *      inserts since) instead of only against crashes:
 *        - visit walks the data file without error, its record count equals
 *          verify's key count and its spill records verify's count;
 *        - open, sync, close, recover, rekey, inspect and visit succeed
 *          (or give TIDE_EBUSY where the one open handle conflicts);
 *        - a fetch returns exactly the value visit saw or the run inserted,
 *          and TIDE_ENOTFOUND for a key the model does not hold;
 *        - an insert of a key the model holds is TIDE_EEXIST, of a new key
 *          it succeeds (TIDE_EINVAL on a read-only handle);
 *        - no commit fails, and every later verify passes with the model's
 *          key count; at the end the store is closed, verified, reopened
 *          read-only and every key inserted since the last verify fetches
 *          exactly.
 *      A corrupt image that verify refuses gets only properties 1 and 2: the
 *      format has no checksums, so a damaged store may answer anything that
 *      is not a crash.
 *
 * Bounds: at most 50 operations, values of at most 256 bytes, a 64 KiB
 * insert pool, rekey with a load factor of at least 0.25 and a buffer of at
 * most 1 MiB. A sync after a failed commit is skipped: the store retries a
 * failed commit only once a second, and the fuzzer should not wait for it.
 *
 * Never: write a file in the read mode (its one visit stands for the
 * whole run), nor let a script mode input depend on bit 4.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/io_sim.h"
#include "store/format.h"
#include "store/full.h"
#include "util/err.h"
#include "util/random.h"
#include "store_run.h"

#define DIR        "db"
#define MAX_OPS    50
#define VALUE_MAX  256

enum {
    OP_OPEN, OP_OPEN_RO, OP_FETCH, OP_INSERT, OP_SYNC, OP_CLOSE, OP_VERIFY, OP_RECOVER,
    OP_VISIT, OP_INSPECT, OP_INFO, OP_REKEY, OP_REOPEN, OP_COUNT
};

/* ---- the model: keys with the hash and length of their value ---- */

typedef struct kv {
    size_t koff;          /* into keyset.arena */
    uint64_t vhash, vlen;
    int dup;              /* another record has the same key */
} kv;

typedef struct keyset {
    unsigned key_size;
    uint8_t *arena;
    size_t arena_len, arena_cap;
    kv *v;
    size_t n, cap;
} keyset;

static const uint8_t *ks_key(const keyset *k, size_t i) { return k->arena + k->v[i].koff; }

static int ks_add(keyset *k, const void *key, uint64_t vhash, uint64_t vlen)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 64;
        kv *v = realloc(k->v, cap * sizeof *v);
        if (v == NULL) return -1;
        k->v = v;
        k->cap = cap;
    }
    if (k->arena_len + k->key_size > k->arena_cap) {
        size_t cap = k->arena_cap ? 2 * k->arena_cap : 4096;
        while (cap < k->arena_len + k->key_size) cap *= 2;
        uint8_t *a = realloc(k->arena, cap);
        if (a == NULL) return -1;
        k->arena = a;
        k->arena_cap = cap;
    }
    memcpy(k->arena + k->arena_len, key, k->key_size);
    k->v[k->n] = (kv){ k->arena_len, vhash, vlen, 0 };
    k->arena_len += k->key_size;
    k->n++;
    return 0;
}

static void ks_clear(keyset *k)
{
    k->n = 0;
    k->arena_len = 0;
}

static void ks_free(keyset *k)
{
    free(k->arena);
    free(k->v);
    memset(k, 0, sizeof *k);
}

static int ks_cmp(const void *a, const void *b, void *arg)
{
    const keyset *k = arg;
    const kv *x = a, *y = b;
    int c = memcmp(k->arena + x->koff, k->arena + y->koff, k->key_size);
    return c ? c : (x->koff < y->koff ? -1 : x->koff > y->koff);
}

/* Sort by key and mark the keys held by more than one record. */
static void ks_sort(keyset *k)
{
    if (k->n > 1) qsort_r(k->v, k->n, sizeof *k->v, ks_cmp, k);
    for (size_t i = 1; i < k->n; i++)
        if (memcmp(ks_key(k, i - 1), ks_key(k, i), k->key_size) == 0)
            k->v[i - 1].dup = k->v[i].dup = 1;
}

/* Index of `key` in a sorted set, or -1. */
static long ks_find_sorted(const keyset *k, const void *key)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(ks_key(k, mid), key, k->key_size) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < k->n && memcmp(ks_key(k, lo), key, k->key_size) == 0 ? (long)lo : -1;
}

static long ks_find_linear(const keyset *k, const void *key)
{
    for (size_t i = 0; i < k->n; i++)
        if (memcmp(ks_key(k, i), key, k->key_size) == 0) return (long)i;
    return -1;
}

/* ---- deterministic keys and values ---- */

/* n bytes of the generator seeded with `seed`, each 64-bit word least
 * significant byte first. A word at a time: a fuzzed header can ask for
 * keys of 64 KiB, and a byte loop paid a coverage callback per byte. */
static void stream(uint64_t seed, uint8_t *out, size_t n)
{
    uint64_t s = seed, w;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        w = htole64(tide_random_next64(&s));
        memcpy(out + i, &w, 8);
    }
    if (i < n) {
        w = htole64(tide_random_next64(&s));
        memcpy(out + i, &w, n - i);
    }
}

static uint64_t value_hash(const void *v, uint64_t len)
{
    return ti_fmt_hash64(v, (size_t)len, 0);
}

/* ---- one run ---- */

typedef struct run {
    fuzz_result *res;
    tide_io_sim *sim;
    tide_io *io;
    unsigned key_size;       /* from nudb.dat's header; 8 when it has none */
    tide_store *s;
    int writes;              /* STORE_RUN_SCRIPT: all thirteen operations */
    int map;                 /* opens map nudb.key (o.pread = !map) */
    int ro, background, sound;
    int image_loaded;        /* `image` and image_st are of the files as they are */
    int image_rc;            /* that visit's code */
    tide_visit_stats image_st;
    keyset image;            /* keys of the data file, sorted */
    keyset ins;              /* inserted by this run since `image` was taken */
    uint8_t *key, *val;      /* scratch: key_size and VALUE_MAX bytes */
    unsigned op;             /* index of the operation running */
    const char *op_name;
    int last_rc;             /* of the last call checked, for the trace */
    int trace;               /* $TIDE_FUZZ_TRACE set: each operation on stderr */
} run;

static const char *op_names[OP_COUNT] = {
    "open", "open read-only", "fetch", "insert", "sync", "close", "verify", "recover",
    "visit", "inspect", "info", "rekey", "reopen",
};

/* Record a broken property, prefixed with the operation it broke in. */
static void run_fail(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_fail(run *r, const char *fmt, ...)
{
    char what[FUZZ_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fuzz_fail(r->res, "op %u (%s)%s: %s", r->op, r->op_name,
              r->sound ? " on a verified store" : "", what);
}

#define RUN_CHECK(cond, ...)                                    \
    do {                                                        \
        if (!(cond)) {                                          \
            run_fail(r, __VA_ARGS__);                           \
            goto out;                                           \
        }                                                       \
    } while (0)

/* Property 2 for one call's return. */
static int check_rc(run *r, int rc, const char *call, int notfound_ok)
{
    const char *msg = tide_last_error();
    r->last_rc = rc;
    RUN_CHECK(rc == 0 || (rc >= TIDE_ERROR_MIN && rc <= TIDE_ERROR_MAX), "%s returned %d, not a TIDE_E* code",
              call, rc);
    if (rc < 0 && !(notfound_ok && rc == TIDE_ENOTFOUND))
        RUN_CHECK(msg[0] != '\0', "%s returned %d (%s) with an empty tide_last_error()", call, rc,
                  tide_strerror(rc));
    return 0;
out:
    return -1;
}

/* Property 3: a call on a verified store succeeds, or is refused for the
 * one open handle. */
static int check_sound_rc(run *r, int rc, const char *call, int busy_ok)
{
    if (!r->sound) return 0;
    if (busy_ok) {
        RUN_CHECK(rc == TIDE_EBUSY, "%s with a handle open returned %d (%s), expected TIDE_EBUSY: %s",
                  call, rc, tide_strerror(rc), tide_last_error());
    } else {
        RUN_CHECK(rc == 0, "%s failed: %d (%s): %s", call, rc, tide_strerror(rc), tide_last_error());
    }
    return 0;
out:
    return -1;
}

typedef struct collect {
    keyset *ks;
    int failed;
} collect;

static int collect_key(void *arg, uint64_t offset, const void *key, unsigned key_size,
                       const void *value, uint64_t len)
{
    collect *c = arg;
    (void)offset;
    if (key_size != c->ks->key_size || ks_add(c->ks, key, value_hash(value, len), len) != 0) {
        c->failed = 1;
        return 1;
    }
    return 0;
}

/* The keys of the data file in r->image, its visit's stats in r->image_st
 * and code in r->image_rc: visited now unless they are already of the files
 * as they are. Returns 0, or -1 with a property broken (the visit's code
 * breaks property 2, or the callback got a wrong key size). */
static int image_keys(run *r)
{
    collect c = { &r->image, 0 };

    if (r->image_loaded) return 0;
    ks_clear(&r->image);
    tide_err_clear();
    r->image_rc = tide_store_visit_io(DIR, r->io, collect_key, &c, &r->image_st);
    r->image_loaded = 1;
    if (c.failed)
        return fuzz_fail(r->res, "visit: the callback got key size %u for a %u-byte key (or no "
                         "memory)", r->image.key_size, r->key_size);
    ks_sort(&r->image);
    return check_rc(r, r->image_rc, "tide_store_visit_io", 0);
}

/* VERIFY returned 0: take the model from the data file and hold the rest of
 * the run to it. */
static int become_sound(run *r, const tide_verify_report *vr)
{
    const tide_visit_stats *st = &r->image_st;
    int rc;

    if (r->writes) r->image_loaded = 0;     /* the script may have written */
    if (image_keys(r)) goto out;
    rc = r->image_rc;
    r->sound = 1;
    ks_clear(&r->ins);
    RUN_CHECK(rc == 0, "visit of a verified store failed: %d (%s): %s", rc, tide_strerror(rc),
              tide_last_error());
    RUN_CHECK(st->data_records == vr->keys && r->image.n == vr->keys,
              "visit counts %llu data records, verify %llu keys",
              (unsigned long long)st->data_records, (unsigned long long)vr->keys);
    RUN_CHECK(st->spill_records == vr->spill_records_written,
              "visit counts %llu spill records, verify %llu",
              (unsigned long long)st->spill_records, (unsigned long long)vr->spill_records_written);
    RUN_CHECK(st->value_bytes == vr->value_bytes, "visit counts %llu value bytes, verify %llu",
              (unsigned long long)st->value_bytes, (unsigned long long)vr->value_bytes);
    return 0;
out:
    return -1;
}

static uint64_t model_keys(const run *r) { return r->image.n + r->ins.n; }

static int do_open(run *r, int ro)
{
    tide_store_opts o;
    int rc;

    if (r->s) return 0;
    tide_store_opts_init(&o);
    o.io = r->io;
    o.read_only = ro;
    o.pread = !r->map;
    o.burst_bytes = 64u << 10;
    o.commit_interval_ms = r->background ? 1 : 3600u * 1000;
    tide_err_clear();
    rc = tide_store_open(&r->s, DIR, &o);
    if (check_rc(r, rc, "tide_store_open", 0)) goto out;
    RUN_CHECK(rc == 0 || r->s == NULL, "tide_store_open failed (%d) but set *out", rc);
    if (check_sound_rc(r, rc, "tide_store_open", 0)) goto out;
    if (rc == 0) {
        tide_store_info info;
        r->ro = ro;
        tide_store_get_info(r->s, &info);
        RUN_CHECK(info.key_size == r->key_size, "the open store has key size %u, nudb.dat said %u",
                  info.key_size, r->key_size);
    }
    return 0;
out:
    return -1;
}

static int do_close(run *r)
{
    int rc;

    if (r->s == NULL) return 0;
    tide_err_clear();
    rc = tide_store_close(r->s);
    r->s = NULL;
    if (check_rc(r, rc, "tide_store_close", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_close", 0)) goto out;
    return 0;
out:
    return -1;
}

/* A commit that failed makes the store retry once a second; on a verified
 * store it is a bug in itself. */
static int commit_failed(run *r)
{
    tide_store_info info;
    if (r->s == NULL || r->ro) return 0;
    tide_store_get_info(r->s, &info);
    return info.commit_failures > 0;
}

/* The key a FETCH or INSERT names, into r->key; 0, or -1 with a property
 * broken by the visit that finds the image's keys. */
static int pick_key(run *r, fuzz_in *in, int inserting)
{
    uint8_t sel = fuzz_u8(in);

    if (sel < (inserting ? 0x20 : 0x60) && image_keys(r)) return -1;
    if (sel < (inserting ? 0x20 : 0x60) && r->image.n > 0) {
        memcpy(r->key, ks_key(&r->image, sel % r->image.n), r->key_size);
        return 0;
    }
    if (!inserting && sel < 0xc0 && r->ins.n > 0) {
        memcpy(r->key, ks_key(&r->ins, r->ins.n - 1 - (sel % r->ins.n)), r->key_size);
        return 0;
    }
    if (!inserting && sel >= 0xc0) sel = fuzz_u8(in);
    stream(0x6b6579ull << 8 | sel, r->key, r->key_size);
    return 0;
}

/* What the model says about r->key: its entry, or NULL when absent. */
static const kv *model_find(run *r, int *dup)
{
    long i = ks_find_sorted(&r->image, r->key);
    *dup = 0;
    if (i >= 0) { *dup = r->image.v[i].dup; return &r->image.v[i]; }
    i = ks_find_linear(&r->ins, r->key);
    return i >= 0 ? &r->ins.v[i] : NULL;
}

static int do_fetch(run *r, fuzz_in *in)
{
    void *v = NULL;
    size_t len = 0;
    int rc, dup;
    const kv *want;

    if (pick_key(r, in, 0)) return -1;
    if (r->s == NULL) return 0;
    tide_err_clear();
    rc = tide_store_fetch(r->s, r->key, &v, &len);
    if (check_rc(r, rc, "tide_store_fetch", 1)) goto out;
    RUN_CHECK(rc != 0 || v != NULL, "tide_store_fetch returned 0 without a buffer");
    if (r->sound) {
        want = model_find(r, &dup);
        if (want == NULL) {
            RUN_CHECK(rc == TIDE_ENOTFOUND, "fetch of a key the store does not hold returned %d "
                      "(%s), expected TIDE_ENOTFOUND: %s", rc, tide_strerror(rc), tide_last_error());
        } else {
            RUN_CHECK(rc == 0, "fetch of a key the store holds returned %d (%s): %s", rc,
                      tide_strerror(rc), tide_last_error());
            if (!dup)
                RUN_CHECK(len == want->vlen && value_hash(v, len) == want->vhash,
                          "fetch returned %zu bytes (hash %016llx), expected %llu (hash %016llx)",
                          len, (unsigned long long)value_hash(v, len),
                          (unsigned long long)want->vlen, (unsigned long long)want->vhash);
        }
    }
    free(v);
    return 0;
out:
    free(v);
    return -1;
}

static int do_insert(run *r, fuzz_in *in)
{
    size_t len;
    int rc, dup;
    const kv *have;

    if (pick_key(r, in, 1)) return -1;
    len = (size_t)fuzz_u8(in) + 1;
    stream(0x76616cull << 16 | (uint64_t)r->op << 8 | len, r->val, len);
    if (r->s == NULL) return 0;
    have = model_find(r, &dup);
    tide_err_clear();
    rc = tide_store_insert(r->s, r->key, r->val, len);
    if (check_rc(r, rc, "tide_store_insert", 0)) goto out;
    if (r->sound) {
        if (r->ro)
            RUN_CHECK(rc == TIDE_EINVAL, "insert on a read-only handle returned %d (%s)", rc,
                      tide_strerror(rc));
        else if (have)
            RUN_CHECK(rc == TIDE_EEXIST, "insert of a key the store holds returned %d (%s), "
                      "expected TIDE_EEXIST: %s", rc, tide_strerror(rc), tide_last_error());
        else
            RUN_CHECK(rc == 0, "insert of a new key failed: %d (%s): %s", rc, tide_strerror(rc),
                      tide_last_error());
    }
    if (rc == 0 && ks_find_linear(&r->ins, r->key) < 0 &&
        ks_add(&r->ins, r->key, value_hash(r->val, len), len) != 0)
        RUN_CHECK(0, "out of memory");
    return 0;
out:
    return -1;
}

static int do_sync(run *r)
{
    int rc;

    if (r->s == NULL) return 0;
    if (!r->sound && commit_failed(r)) return 0;   /* would wait for the retry */
    tide_err_clear();
    rc = tide_store_sync(r->s);
    if (check_rc(r, rc, "tide_store_sync", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_sync", 0)) goto out;
    return 0;
out:
    return -1;
}

static int do_verify(run *r)
{
    tide_verify_report vr;
    int rc, busy = r->s != NULL && !r->ro;

    tide_err_clear();
    rc = tide_store_verify_io(DIR, r->io, &vr);
    /* A rekey to another block size leaves the old spill records, which
     * verify reports as NuDB's does (invalid size in spill) though the
     * store is otherwise sound: the model takes that as sound. */
    if (rc == TIDE_ECORRUPT && vr.foreign_spills_only) rc = 0;
    if (check_rc(r, rc, "tide_store_verify_io", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_verify_io", busy)) goto out;
    if (rc == 0) {
        if (r->sound)
            RUN_CHECK(vr.keys == model_keys(r), "verify counts %llu keys, the model %llu",
                      (unsigned long long)vr.keys, (unsigned long long)model_keys(r));
        if (become_sound(r, &vr)) goto out;
    }
    return 0;
out:
    return -1;
}

static int do_recover(run *r)
{
    tide_recover_report rep;
    int rc;

    tide_err_clear();
    rc = tide_store_recover_io(DIR, r->io, &rep);
    if (check_rc(r, rc, "tide_store_recover_io", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_recover_io", r->s != NULL)) goto out;
    return 0;
out:
    return -1;
}

static int touch_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                        const void *value, uint64_t len)
{
    uint64_t *sum = arg;
    /* Read every byte handed over, so ASan sees a record that is not there. */
    *sum += offset + ti_fmt_hash64(key, key_size, 1) + value_hash(value, len);
    return 0;
}

static int do_visit(run *r)
{
    tide_visit_stats st;
    uint64_t sum = 0;
    int rc;

    tide_err_clear();
    rc = tide_store_visit_io(DIR, r->io, touch_record, &sum, &st);
    if (check_rc(r, rc, "tide_store_visit_io", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_visit_io", 0)) goto out;
    if (r->sound && (r->s == NULL || r->ro))
        RUN_CHECK(st.data_records == model_keys(r), "visit counts %llu records, the model %llu keys",
                  (unsigned long long)st.data_records, (unsigned long long)model_keys(r));
    return 0;
out:
    return -1;
}

static int do_inspect(run *r)
{
    tide_store_info info;
    int rc;

    tide_err_clear();
    rc = tide_store_inspect(DIR, r->io, &info);
    if (check_rc(r, rc, "tide_store_inspect", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_inspect", 0)) goto out;
    if (r->sound && rc == 0 && (r->s == NULL || r->ro))
        RUN_CHECK(!info.needs_recovery, "inspect says a verified, closed store needs recovery");
    return 0;
out:
    return -1;
}

static int do_info(run *r)
{
    tide_store_info info;

    if (r->s == NULL) return 0;
    tide_store_get_info(r->s, &info);
    RUN_CHECK(info.key_size == r->key_size && info.capacity == ti_fmt_capacity(info.block_size),
              "info: key size %u, capacity %u for block size %u", info.key_size, info.capacity,
              info.block_size);
    RUN_CHECK(info.key_file_bytes == (info.buckets + 1) * (uint64_t)info.block_size,
              "info: key file %llu bytes for %llu buckets of %u",
              (unsigned long long)info.key_file_bytes, (unsigned long long)info.buckets,
              info.block_size);
    if (r->sound && !r->ro)
        RUN_CHECK(info.commit_failures == 0, "a commit failed on a verified store");
    return 0;
out:
    return -1;
}

static int do_rekey(run *r, fuzz_in *in)
{
    tide_rekey_opts o;
    tide_rekey_report rep;
    uint8_t b = fuzz_u8(in);
    int rc;

    tide_rekey_opts_init(&o);
    o.io = r->io;
    o.block_size = 4096u << (b & 3);
    o.load_factor = 0.25 * (1 + ((b >> 2) & 3));
    o.buffer_bytes = (b & 0x10) ? (64u << 10) : (1u << 20);
    tide_err_clear();
    rc = tide_store_rekey_with(DIR, &o, &rep);
    if (check_rc(r, rc, "tide_store_rekey_with", 0)) goto out;
    if (check_sound_rc(r, rc, "tide_store_rekey_with", r->s != NULL)) goto out;
    if (r->sound && rc == 0)
        RUN_CHECK(rep.records == model_keys(r), "rekey indexed %llu records, the model holds %llu",
                  (unsigned long long)rep.records, (unsigned long long)model_keys(r));
    return 0;
out:
    return -1;
}

/* The end of a verified run: everything inserted must be durable. */
static int final_check(run *r)
{
    tide_verify_report vr;
    int rc;

    if (do_close(r)) goto out;
    r->op_name = "final verify";
    tide_err_clear();
    rc = tide_store_verify_io(DIR, r->io, &vr);
    if (rc == TIDE_ECORRUPT && vr.foreign_spills_only) rc = 0;   /* as in do_verify */
    RUN_CHECK(rc == 0, "verify after the script failed: %d (%s): %s", rc, tide_strerror(rc),
              tide_last_error());
    RUN_CHECK(vr.keys == model_keys(r), "verify after the script counts %llu keys, the model %llu",
              (unsigned long long)vr.keys, (unsigned long long)model_keys(r));
    r->op_name = "final fetch";
    if (do_open(r, 1)) goto out;
    for (size_t i = 0; i < r->ins.n; i++) {
        void *v = NULL;
        size_t len = 0;
        tide_err_clear();
        rc = tide_store_fetch(r->s, ks_key(&r->ins, i), &v, &len);
        int ok = rc == 0 && len == r->ins.v[i].vlen && value_hash(v, len) == r->ins.v[i].vhash;
        free(v);
        RUN_CHECK(ok, "inserted key %zu of %zu did not come back after close and reopen: %d (%s) "
                  "%zu bytes", i, r->ins.n, rc, tide_strerror(rc), len);
    }
    if (do_close(r)) goto out;
    return 0;
out:
    return -1;
}

/* Put the input's files into the sim. */
static int load_files(run *r, fuzz_in *in)
{
    static const char *names[3] = { DIR "/nudb.dat", DIR "/nudb.key", DIR "/nudb.log" };
    uint8_t flags = fuzz_u8(in);
    size_t want[3];
    int rc;

    r->background = (flags >> 3) & 1;
    r->map = r->writes || ((flags >> 4) & 1);
    for (int i = 0; i < 3; i++) want[i] = (size_t)fuzz_be(in, 3);
    if (tide_io_sim_mkdir(r->sim, DIR) != 0) return fuzz_fail(r->res, "sim: mkdir failed");
    for (int i = 0; i < 3; i++) {
        const uint8_t *p;
        size_t n = fuzz_take(in, want[i], &p);
        if (!(flags & (1u << i))) continue;
        rc = tide_io_sim_put_file(r->sim, names[i], n ? p : NULL, n);
        if (rc) return fuzz_fail(r->res, "sim: put %s failed: %d", names[i], rc);
        if (i == 0 && n >= TIDE_DAT_HEADER_SIZE) {
            tide_dat_header dh;
            if (ti_fmt_decode_dat_header(p, &dh, names[0]) == 0) r->key_size = dh.key_size;
        }
    }
    return 0;
}

/* The read mode's opcodes, in the order its opcode byte (mod 7) picks them. */
static const uint8_t read_ops[] = {
    OP_OPEN_RO, OP_FETCH, OP_CLOSE, OP_VERIFY, OP_VISIT, OP_INSPECT, OP_INFO,
};

/* One operation of the script. Returns 0, or -1 with a property broken. */
static int run_op(run *r, fuzz_in *in)
{
    uint8_t b = fuzz_u8(in);
    unsigned op = r->writes ? b % OP_COUNT : read_ops[b % sizeof read_ops];
    int bad = 0;

    r->op_name = op_names[op];
    r->last_rc = 0;
    switch (op) {
    case OP_OPEN:    bad = do_open(r, 0); break;
    case OP_OPEN_RO: bad = do_open(r, 1); break;
    case OP_FETCH:   bad = do_fetch(r, in); break;
    case OP_INSERT:  bad = do_insert(r, in); break;
    case OP_SYNC:    bad = do_sync(r); break;
    case OP_CLOSE:   bad = do_close(r); break;
    case OP_VERIFY:  bad = do_verify(r); break;
    case OP_RECOVER: bad = do_recover(r); break;
    case OP_VISIT:   bad = do_visit(r); break;
    case OP_INSPECT: bad = do_inspect(r); break;
    case OP_INFO:    bad = do_info(r); break;
    case OP_REKEY:   bad = do_rekey(r, in); break;
    case OP_REOPEN:  bad = do_close(r) || do_open(r, 0); break;
    }
    if (r->trace)
        fprintf(stderr, "op %u %s: %d%s%s%s\n", r->op, r->op_name, r->last_rc,
                r->last_rc < 0 ? " " : "", r->last_rc < 0 ? tide_last_error() : "",
                r->sound ? " [verified]" : "");
    if (bad) goto out;
    if (r->sound && !r->ro && r->s)
        RUN_CHECK(!commit_failed(r), "a commit failed on a verified store: %s", tide_last_error());
    return 0;
out:
    return -1;
}

int store_run_one(const uint8_t *data, size_t size, fuzz_result *res, store_run_mode mode)
{
    fuzz_in in = { data, size };
    run rr, *r = &rr;
    int ret = -1;

    memset(r, 0, sizeof *r);
    r->res = res;
    r->writes = mode == STORE_RUN_SCRIPT;
    r->key_size = 8;
    r->op_name = "setup";
    r->trace = getenv("TIDE_FUZZ_TRACE") != NULL;
    RUN_CHECK(tide_io_sim_create(&r->sim) == 0, "sim: out of memory");
    /* The sim's own invariants are asserted once, at the end of the input
     * (below), not after each of its calls. */
    tide_io_sim_set_checked(r->sim, 0);
    r->io = tide_io_sim_io(r->sim);
    if (load_files(r, &in)) goto out;
    r->image.key_size = r->ins.key_size = r->key_size;
    r->key = malloc(r->key_size);
    r->val = malloc(VALUE_MAX);
    RUN_CHECK(r->key && r->val, "out of memory");
    /* The script mode names the image's keys as they were before it wrote. */
    if (r->writes && image_keys(r)) goto out;

    for (r->op = 0; r->op < MAX_OPS && in.left > 0; r->op++)
        if (run_op(r, &in)) goto out;
    /* The read mode inserted nothing and wrote nothing: its final verify
     * would repeat, on the same bytes, the one that made the run sound. */
    if (r->sound && r->writes) {
        if (final_check(r)) goto out;
    } else if (do_close(r)) {
        goto out;
    }
    ret = 0;
out:
    if (r->s) tide_store_close(r->s);
    if (r->sim) tide_io_sim_check(r->sim);
    tide_io_sim_destroy(r->sim);
    ks_free(&r->image);
    ks_free(&r->ins);
    free(r->key);
    free(r->val);
    return ret;
}
