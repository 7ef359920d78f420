/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * live.c: tide.live, the page through which a Tide writer lets readers in
 * other processes read its store while it commits.
 *
 * A reader in another process cannot take the writer's key_lock, so the
 * writer publishes what the lock protects in a shared page instead: a
 * seqlock counter and the counts a lookup needs (live.h: the words). The
 * writer maps tide.live MAP_SHARED read-write; readers map it read-only.
 * The page is never synced and means nothing after a crash: the next
 * writable open rebuilds it, in place (never a new file: a reader that
 * has the old inode mapped must see the new writer's generation).
 *
 * The writer's side, in the order a handle meets it:
 *   open       ti_live_create: seq made odd, GEN bumped, PID/START named;
 *              recovery runs under the odd seq; ti_live_end publishes the
 *              counts and makes seq even.
 *   commit     ti_live_begin before the first key-file write (commit.c:
 *              the write phase under key_lock), ti_live_end after the last;
 *              a rollback the same.
 *   close      ti_live_closed: OPEN 0, seq even: the files are as left.
 *   failure    ti_live_free with seq odd (a failed open, a broken
 *              rollback): PID 0, seq left odd, so readers say "recover"
 *              rather than read a half-written table.
 * The reader's side (open.c's read-only open): ti_live_preopen, then
 * (when nudb.key's shared lock is refused, a writer holds it)
 * ti_live_attach and ti_live_start_reader; reader.c fetches.
 *
 * The readers' hold (ti_live_hold): every read-only path of the store
 * (that open, the walk of nudb.dat, tide_store_inspect) starts by taking
 * LOCK_SH on tide.live and keeps it until it is done. No writer locks
 * tide.live; only a rotation's drop of a generation does, exclusively, and
 * it cuts nudb.dat only while it holds that lock and unlinks the files
 * before it lets go (gens_rotate.c). So a reader holding the lock is never
 * cut under (the drop only unlinks, and the reader reads on), one that
 * comes during the cut is refused at once (TIDE_EBUSY: a rotation is
 * deleting it), and one that gets the lock after the drop finds tide.live
 * unlinked (TIDE_ENOENT: a rotation has deleted it), never a file cut
 * short.
 *
 * Invariants:
 *   1. Only the writer stores to the page, with 8-byte atomic stores;
 *      seq only grows, across generations too (an open keeps the old
 *      value and makes it odd), so a reader's seq comparison never
 *      mistakes a new writer's state for the one it read.
 *   2. Every key-file write of the writer lies between an odd and the
 *      next even seq; the counts are stored while seq is odd.
 *   3. The writer names itself (PID, START) before it makes seq even the
 *      first time, and a reader trusts an odd seq only while that
 *      process runs (START matching: a reused pid is not the writer).
 *      PID 0 with OPEN 1 and seq odd: a writer whose rollback failed
 *      (ti_live_broken): readers say "restart the writer" at once.
 *   4. GEN changes (under an odd seq) at every writable open and every
 *      rollback: records a reader indexed in [W, C) are then gone, and a
 *      later C may cover their offsets with other records.
 *   5. A reader's LOCK_SH on tide.live is taken before it opens the store's
 *      other files and kept until it has closed them; no writer ever
 *      locks tide.live.
 *
 * Never: sync tide.live, truncate a page below its size, or unlink it (a
 *   reader holding the old inode would never see the next writer). A file
 *   shorter than the page, which no reader maps, is written up to it, and
 *   cut back to what it was when that write fails.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tide.live's words are little-endian");
_Static_assert(TI_LIVE_WORDS * 8 <= TI_LIVE_BYTES, "the words fit the page");

static uint64_t word(const ti_live *l, int i)
{
    return __atomic_load_n(&l->w[i], __ATOMIC_RELAXED);
}

static void set_word(ti_live *l, int i, uint64_t v)
{
    __atomic_store_n(&l->w[i], v, __ATOMIC_RELAXED);
}

uint64_t ti_live_proc_start(int pid)
{
    char path[64], buf[1024];
    ssize_t n = -1;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    /* Process information, not a store file: /proc is read directly (the
     * simulated file system has no processes, and no tide.live). */
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
    }
    if (n <= 0) return 0;
    buf[n] = '\0';
    /* "pid (comm) state ..." : comm may hold spaces and parentheses, so
     * count fields from the last ')'; starttime is field 22. */
    char *p = strrchr(buf, ')');
    if (p == NULL) return 0;
    p++;
    for (int field = 3; field < 22; field++) {
        while (*p == ' ') p++;
        while (*p && *p != ' ') p++;
    }
    while (*p == ' ') p++;
    if (!isdigit((unsigned char)*p)) return 0;
    return strtoull(p, NULL, 10);
}

int ti_live_writer_alive(const ti_live *l)
{
    uint64_t pid = word(l, TI_LIVE_PID), start = word(l, TI_LIVE_START);
    if (word(l, TI_LIVE_OPEN) != 1 || pid == 0 || pid > INT32_MAX) return 0;
    return start != 0 && ti_live_proc_start((int)pid) == start;
}

static int live_alloc(tide_store *s)
{
    ti_live *l = calloc(1, sizeof *l);
    if (l == NULL) return tide_err_set(TIDE_ENOMEM, "%s: tide.live: out of memory", s->dir);
    l->io = s->io;
    l->tail.max_slots = 1ull << 62;     /* a reader's tail index: no budget (reader.c) */
    s->live = l;
    return 0;
}

static int live_create_page(tide_store *s)
{
    char *path = NULL;
    ti_live *l;
    uint64_t size = 0;
    void *p = NULL;
    int rc;

    if ((rc = live_alloc(s)) != 0) return rc;
    l = s->live;
    if ((path = ti_path_join(s->dir, "tide.live")) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "%s: tide.live: out of memory", s->dir);
        goto out;
    }
    if ((rc = s->io->open(s->io, path, TIDE_IO_CREATE, &l->f)) != 0) goto out;
    if ((rc = s->io->size(l->f, &size)) != 0) goto out;
    if (size < TI_LIVE_BYTES) {
        /* Written, not extended with a hole: a page of a hole is allocated
         * when first touched through a map, and on a full disk (or a full
         * tmpfs, even to read it) that is SIGBUS in whichever process
         * touches it. A write that fails is cut back, so that a reader sees
         * no page rather than a hole. */
        static const uint8_t zeros[TI_LIVE_BYTES];
        if ((rc = s->io->write_at(l->f, zeros + size, TI_LIVE_BYTES - (size_t)size, size)) != 0) {
            s->io->truncate(l->f, size);
            goto out;
        }
    }
    if ((rc = s->io->share(l->f, TI_LIVE_BYTES, 1, &p)) != 0) goto out;
    l->w = p;
    if (word(l, TI_LIVE_MAGIC) != TI_LIVE_MAGIC_WORD || word(l, TI_LIVE_VERSION) != TI_LIVE_VERSION_1) {
        /* New or foreign: readers ignore it until the magic is in. */
        set_word(l, TI_LIVE_MAGIC, 0);
        /* Odd, and above what was there (invariant 1, even for a page
         * some reader may still hold from before it was spoilt). */
        __atomic_store_n(&l->w[TI_LIVE_SEQ], (word(l, TI_LIVE_SEQ) + 2) | 1, __ATOMIC_SEQ_CST);
        set_word(l, TI_LIVE_GEN, 0);
    } else if ((word(l, TI_LIVE_SEQ) & 1) == 0) {
        __atomic_store_n(&l->w[TI_LIVE_SEQ], word(l, TI_LIVE_SEQ) + 1, __ATOMIC_SEQ_CST);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    set_word(l, TI_LIVE_GEN, word(l, TI_LIVE_GEN) + 1);
    set_word(l, TI_LIVE_PID, (uint64_t)getpid());
    set_word(l, TI_LIVE_START, ti_live_proc_start((int)getpid()));
    set_word(l, TI_LIVE_OPEN, 1);
    set_word(l, TI_LIVE_VERSION, TI_LIVE_VERSION_1);
    __atomic_store_n(&l->w[TI_LIVE_MAGIC], TI_LIVE_MAGIC_WORD, __ATOMIC_RELEASE);
out:
    free(path);
    return rc;
}

int ti_live_create(tide_store *s)
{
    char msg[512];
    int rc;

    if (s->io->share == NULL) return 0;
    if ((rc = live_create_page(s)) == 0 || rc == TIDE_ENOMEM) return rc;
    /* Not a reason to refuse the writer (a root `tide put` leaves a 0644
     * root-owned page behind; tided runs as its own user): it runs
     * page-less and readers elsewhere get attach's refusal. The file is
     * not unlinked and made anew: a reader still holding the old inode
     * would never see this writer; instead such a reader refuses it. */
    snprintf(msg, sizeof msg, "%s", tide_last_error());
    ti_live_free(s);
    tide_err_clear();
    tide_log(TIDE_LOG_WARN, "%s/tide.live cannot be opened or mapped for writing (%s): readers in "
             "other processes (tide get, visit, info, verify --live) cannot read this store while "
             "this writer runs; fix: chown tide.live to this writer's user or remove it when no "
             "writer runs (the next writable open makes a new one)", s->dir, msg);
    rc = ti_store_refuse_holders_ex(s->io, s->dir, "writing it without a usable tide.live (a "
                                    "Tide reader attached to the old page would read unguarded)", 0);
    if (rc) tide_err_prefix(rc, "%s: tide.live (%s)", s->dir, msg);
    return rc;
}

void ti_live_begin(tide_store *s)
{
    ti_live *l = s->live;
    if (!ti_store_writes_live(s)) return;
    uint64_t seq = word(l, TI_LIVE_SEQ);
    if (seq & 1) return;              /* already odd: an open's recovery, a rollback's */
    __atomic_store_n(&l->w[TI_LIVE_SEQ], seq + 1, __ATOMIC_RELAXED);
    /* The odd seq is visible before any key-file byte changes. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void ti_live_end(tide_store *s)
{
    ti_live *l = s->live;
    if (!ti_store_writes_live(s)) return;
    uint64_t seq = word(l, TI_LIVE_SEQ);
    TIDE_ASSERT(seq & 1);             /* invariant 2: the counts change under an odd seq */
    set_word(l, TI_LIVE_UID, s->kh.uid);
    set_word(l, TI_LIVE_BUCKETS, s->buckets);
    set_word(l, TI_LIVE_KEY_BYTES, (s->buckets + 1) * (uint64_t)s->block_size);
    set_word(l, TI_LIVE_W, s->dat_indexed);
    set_word(l, TI_LIVE_C, s->dat_committed);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&l->w[TI_LIVE_SEQ], seq + 1, __ATOMIC_RELEASE);
}

void ti_live_publish(tide_store *s)
{
    ti_live_begin(s);
    ti_live_end(s);
}

void ti_live_rollback(tide_store *s)
{
    ti_live *l = s->live;
    if (!ti_store_writes_live(s)) return;
    ti_live_begin(s);
    set_word(l, TI_LIVE_GEN, word(l, TI_LIVE_GEN) + 1);     /* invariant 4 */
}

void ti_live_broken(tide_store *s)
{
    ti_live *l = s->live;
    if (!ti_store_writes_live(s)) return;
    TIDE_ASSERT(word(l, TI_LIVE_SEQ) & 1);
    set_word(l, TI_LIVE_PID, 0);
}

void ti_live_closed(tide_store *s)
{
    ti_live *l = s->live;
    if (!ti_store_writes_live(s)) return;
    ti_live_begin(s);
    set_word(l, TI_LIVE_OPEN, 0);
    ti_live_end(s);
}

/* The error of a reader that met a rotation's drop: TIDE_EBUSY while the
 * drop cuts (it holds tide.live's LOCK_EX), TIDE_ENOENT once it unlinked. */
static int rotation_refusal(int rc, const char *dir)
{
    if (rc == TIDE_EBUSY)
        return tide_err_set(TIDE_EBUSY, "%s: a rotation is deleting it: this generation has left "
                            "tide.generations, and its objects with it (its tide.live is locked "
                            "while nudb.dat is cut); nothing was read", dir);
    return tide_err_set(TIDE_ENOENT, "%s: a rotation has deleted it: this generation has left "
                        "tide.generations, and its objects with it (its files were unlinked "
                        "while they were being opened); nothing was read", dir);
}

int ti_live_hold(tide_io *io, const char *dir, tide_file **out, int *open_rc)
{
    char *path;
    int rc;

    *out = NULL;
    if (open_rc) *open_rc = 0;
    if (io->share == NULL) return 0;       /* no page on this file system */
    if ((path = ti_path_join(dir, "tide.live")) == NULL)
        return tide_err_set(TIDE_ENOMEM, "%s: tide.live: out of memory", dir);
    rc = io->open(io, path, TIDE_IO_READ, out);
    if (rc) {
        /* None: no Tide writer made one, nothing to hold. Any other
         * failure is the caller's to keep (attach's refusal). */
        if (rc != TIDE_ENOENT && open_rc) *open_rc = rc;
        else tide_err_clear();
        *out = NULL;
        rc = 0;
        goto out;
    }
    rc = io->lock(*out, 0);
    if (rc != 0 && rc != TIDE_EBUSY) {
        /* No lock to be had here (a drop cannot take one either, so it
         * only unlinks): the file stays open, the holders' mark. */
        tide_err_clear();
        rc = 0;
    }
    if (rc == 0 && io->stat(io, path, NULL) == TIDE_ENOENT) rc = TIDE_ENOENT;
    if (rc) {
        rc = rotation_refusal(rc, dir);
        io->close(*out);
        *out = NULL;
    }
out:
    free(path);
    return rc;
}

int ti_live_lost(tide_io *io, const char *dir, int rc)
{
    char *path;

    if (rc != TIDE_ENOENT || (path = ti_path_join(dir, "tide.live")) == NULL) return rc;
    if (io->stat(io, path, NULL) == TIDE_ENOENT) rc = rotation_refusal(TIDE_ENOENT, dir);
    free(path);
    return rc;
}

int ti_live_preopen(tide_store *s)
{
    int rc, orc = 0;

    if (s->io->share == NULL) return 0;
    if ((rc = live_alloc(s)) != 0) return rc;
    rc = ti_live_hold(s->io, s->dir, &s->live->f, &orc);
    if (orc) {
        /* Kept for attach's refusal (a writer holds the store) and
         * forgotten otherwise: with no writer, no reader needs the page. */
        s->live->open_rc = orc;
        snprintf(s->live->open_err, sizeof s->live->open_err, "%s", tide_last_error());
        tide_err_clear();
    }
    return rc;
}

int ti_live_refuse_broken(const ti_live *l, const char *dir)
{
    if ((word(l, TI_LIVE_SEQ) & 1) && word(l, TI_LIVE_PID) == 0 && word(l, TI_LIVE_OPEN) == 1)
        return tide_err_set(TIDE_EBUSY, "%s: the writer's commit failed and could not be undone "
                            "(tide.live marks it broken): the store needs recovery: restart its "
                            "writer (its open recovers, readers may stay); nothing was read", dir);
    return 0;
}

int ti_live_attach(tide_store *s)
{
    ti_live *l = s->live;
    uint64_t size = 0;
    void *p = NULL;
    int rc;

    if (l != NULL && l->f == NULL && l->open_rc != 0)
        return tide_err_set(TIDE_EBUSY, "%s: the store is open for writing in another process, "
                            "and its tide.live cannot be read (%s): fix: make tide.live readable "
                            "by this user (the writer's own user can read it), or stop the writer, "
                            "remove tide.live and start the writer again", s->dir, l->open_err);
    if (l == NULL || l->f == NULL)
        return tide_err_set(TIDE_EBUSY, "%s: the store is open for writing in another process "
                            "or handle, and there is no tide.live to read it through (a Tide "
                            "from before tide.live, a rekey or a recovery)", s->dir);
    if ((rc = s->io->size(l->f, &size)) != 0) return rc;
    if (size < TI_LIVE_BYTES)
        return tide_err_set(TIDE_EBUSY, "%s: tide.live is %llu bytes, not a %u-byte page: its "
                            "writer is still opening the store, or it is not Tide's; try again",
                            s->dir, (unsigned long long)size, TI_LIVE_BYTES);
    if ((rc = s->io->share(l->f, TI_LIVE_BYTES, 0, &p)) != 0)
        return tide_err_set(TIDE_EBUSY, "%s: the store is open for writing in another process, "
                            "but tide.live cannot be mapped (%s): is it a regular file?",
                            s->dir, tide_last_error());
    l->w = p;
    if (__atomic_load_n(&l->w[TI_LIVE_MAGIC], __ATOMIC_ACQUIRE) != TI_LIVE_MAGIC_WORD ||
        word(l, TI_LIVE_VERSION) != TI_LIVE_VERSION_1)
        return tide_err_set(TIDE_EBUSY, "%s: nudb.key is locked by a writer, but tide.live does "
                            "not hold a version-1 page (its writer is still opening the store?)",
                            s->dir);
    if ((rc = ti_live_refuse_broken(l, s->dir)) != 0) return rc;
    uint64_t pid = word(l, TI_LIVE_PID), start = word(l, TI_LIVE_START);
    if (word(l, TI_LIVE_OPEN) == 0 && pid != 0 && pid <= INT32_MAX && start != 0 &&
        ti_live_proc_start((int)pid) == start)
        /* Its writer closed the store and runs on: tided's rotation holds
         * a dropped generation locked while it cuts its nudb.dat. */
        return tide_err_set(TIDE_EBUSY, "%s: nudb.key is locked by another process, and the "
                            "writer named in tide.live (pid %llu, still running) has closed this "
                            "store: if it is a generation, a rotation is deleting it (it has left "
                            "tide.generations, and its objects with it); otherwise a rekey or a "
                            "recovery holds it: try again when it is done", s->dir,
                            (unsigned long long)pid);
    if (!ti_live_writer_alive(l))
        return tide_err_set(TIDE_EBUSY, "%s: nudb.key is locked by another process, but "
                            "tide.live names no running writer (pid %llu%s): a Tide from before "
                            "tide.live, a rekey, a recovery, or a writer that could not write tide.live "
                            "(its log says why) has the store; or the writer runs where this "
                            "process's /proc cannot see it (another PID namespace, hidepid): try "
                            "again when it is done, or read from the writer's namespace",
                            s->dir, (unsigned long long)word(l, TI_LIVE_PID),
                            word(l, TI_LIVE_OPEN) ? "" : ", closed");
    /* The reader's mark (DURABILITY.md): a shared lock no writer takes
     * (the hold of preopen took it already; again where it could not). */
    return s->io->lock(l->f, 0);
}

void ti_live_free(tide_store *s)
{
    ti_live *l = s->live;
    if (l == NULL) return;
    if (l->w && ti_store_writes_live(s)) {
        /* A clean close has said so already; any other end of a writer
         * is not a running writer either. */
        if (word(l, TI_LIVE_SEQ) & 1) set_word(l, TI_LIVE_PID, 0);
        set_word(l, TI_LIVE_OPEN, 0);
    }
    if (l->w) s->io->unshare(l->w, TI_LIVE_BYTES);
    if (l->f) s->io->close(l->f);
    ti_tail_clear(&l->tail);
    free(l);
    s->live = NULL;
}

/* ---- a look at the page without a handle (info, visit, verify --live) ---- */

int tide_store_live_info(const char *dir, tide_io *io, tide_store_live *out)
{
    ti_live l;
    char *path = NULL;
    uint64_t size = 0;
    void *p = NULL;
    int rc;

    tide_err_clear();
    memset(out, 0, sizeof *out);
    memset(&l, 0, sizeof l);
    if (io == NULL) io = tide_io_posix();
    if (io->share == NULL) return 0;
    if ((path = ti_path_join(dir, "tide.live")) == NULL)
        return tide_err_set(TIDE_ENOMEM, "%s: tide.live: out of memory", dir);
    rc = io->open(io, path, TIDE_IO_READ, &l.f);
    if (rc == TIDE_ENOENT) { rc = 0; tide_err_clear(); goto out; }
    if (rc == 0) rc = io->size(l.f, &size);
    if (rc || size < TI_LIVE_BYTES) goto out;
    if ((rc = io->share(l.f, TI_LIVE_BYTES, 0, &p)) != 0) goto out;
    l.w = p;
    if (__atomic_load_n(&l.w[TI_LIVE_MAGIC], __ATOMIC_ACQUIRE) != TI_LIVE_MAGIC_WORD ||
        word(&l, TI_LIVE_VERSION) != TI_LIVE_VERSION_1)
        goto out;
    out->present = 1;
    /* A consistent copy of the counts: the seqlock, a bounded number of
     * tries (a page whose writer died odd keeps its last counts). */
    for (int tries = 0; tries < 100000; tries++) {
        uint64_t s1 = __atomic_load_n(&l.w[TI_LIVE_SEQ], __ATOMIC_ACQUIRE);
        out->seq = s1;
        out->generation = word(&l, TI_LIVE_GEN);
        out->buckets = word(&l, TI_LIVE_BUCKETS);
        out->key_file_bytes = word(&l, TI_LIVE_KEY_BYTES);
        out->dat_indexed = word(&l, TI_LIVE_W);
        out->dat_committed = word(&l, TI_LIVE_C);
        out->uid = word(&l, TI_LIVE_UID);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if ((s1 & 1) == 0 && __atomic_load_n(&l.w[TI_LIVE_SEQ], __ATOMIC_RELAXED) == s1) break;
        if (!ti_live_writer_alive(&l)) break;
        if (tries % 64 == 63) usleep(100);
    }
    out->writing = (out->seq & 1) != 0;
    out->writer_pid = (int)word(&l, TI_LIVE_PID);
    out->writer_running = ti_live_writer_alive(&l);
out:
    if (l.w) io->unshare(l.w, TI_LIVE_BYTES);
    if (l.f) io->close(l.f);
    free(path);
    return rc;
}
