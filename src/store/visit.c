/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * visit.c: a sequential walk of nudb.dat.
 *
 * The data file is a header followed by records back to back: data records
 * (u48 size >= 1, key, value) and spill records (u48 0, u16 n, n bytes of a
 * bucket). The walk reads it front to back through a 1 MiB window and hands
 * each data record to the caller. It opens the file read-only and writes
 * nothing, so it is safe on a store that is open elsewhere (it then sees a
 * prefix of the file as of its start: with a Tide writer running, the
 * prefix its tide.live says is complete, max(W, C)). Its one lock is the
 * readers' hold on tide.live (live.c), which no writer takes: a rotation
 * dropping the store then only unlinks it, and the walk reads on.
 *
 * Invariants:
 *   1. Every byte from the header to the end is in exactly one record; a
 *      record that runs past the end is reported with its offset.
 *   2. Memory: the window (1 MiB, or the file's size when that is less)
 *      plus, for a record larger than the window, one buffer of that
 *      record's size.
 *   3. Progress (tide_progress_fn's contract): done is the offset of the
 *      next record, so it only grows, and it is reported when it has
 *      moved a window's worth (1 MiB) since the last call, and once more
 *      as size/size when the walk reaches the end; total is the file's
 *      size when the walk began, the end of the walk.
 *
 * Never: write or recover the store, or take a lock a writer takes; a
 *   record cut short at the end is reported, not skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/err.h"

#define WINDOW (1u << 20)

typedef struct reader {
    tide_io *io;
    tide_file *f;
    const char *path;
    uint64_t size;
    uint8_t *win;       /* win_cap bytes */
    size_t win_cap;     /* WINDOW, or the file's size when that is less */
    uint64_t win_off;   /* file offset of win[0] */
    size_t win_len;
} reader;

/* Make [off, off + n) readable and return a pointer to it (n <= win_cap). */
static int window(reader *r, uint64_t off, size_t n, const uint8_t **out)
{
    int rc;
    if (off + n > r->size)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: a record of %zu bytes runs past the "
                            "end of the file (%llu bytes)", r->path, (unsigned long long)off, n,
                            (unsigned long long)r->size);
    if (off < r->win_off || off + n > r->win_off + r->win_len) {
        size_t len = r->size - off < r->win_cap ? (size_t)(r->size - off) : r->win_cap;
        if ((rc = r->io->read_at(r->f, r->win, len, off)) != 0) return rc;
        r->win_off = off;
        r->win_len = len;
    }
    *out = r->win + (off - r->win_off);
    return 0;
}

int tide_store_visit_io(const char *dir, tide_io *io, tide_visit_fn fn, void *arg,
                     tide_visit_stats *stats)
{
    return ti_store_walk(dir, io, fn, NULL, arg, NULL, NULL, stats);
}

void tide_visit_opts_init(tide_visit_opts *o)
{
    memset(o, 0, sizeof *o);
}

int tide_store_visit_with(const char *dir, const tide_visit_opts *o, tide_visit_fn fn, void *arg,
                        tide_visit_stats *stats)
{
    if (o == NULL) return ti_store_walk(dir, NULL, fn, NULL, arg, NULL, NULL, stats);
    return ti_store_walk(dir, o->io, fn, NULL, arg, o->progress, o->progress_arg, stats);
}

/* A Tide writer runs (tide.live): walk only what it says is
 * complete, max(W, C); past that a record may be half appended. With no
 * writer and the idle log a deferred one left, up to its C. */
static int live_bound(const char *dir, tide_io *io, uint64_t *size)
{
    tide_store_live lv;
    int rc = tide_store_live_info(dir, io, &lv);
    uint64_t end = lv.dat_indexed > lv.dat_committed ? lv.dat_indexed : lv.dat_committed;
    if (rc == 0 && lv.writer_running && end >= TIDE_DAT_HEADER_SIZE && end < *size) *size = end;
    if (rc == 0 && !lv.writer_running) {
        /* A stopped deferred writer's idle log: what
         * lies past C is what a recovery cuts off. */
        ti_idle_view v;
        if ((rc = ti_recover_idle_view(io, dir, 0, &v)) == 0 && v.idle && v.C < *size) *size = v.C;
    }
    return rc;
}

/* The readers' hold (live.c), kept by the caller to the end of the walk
 * so that no rotation cuts nudb.dat under it, then nudb.dat opened. */
static int open_walk(reader *r, const char *dir, tide_file **hold)
{
    int rc = ti_live_hold(r->io, dir, hold, NULL);

    if (rc) return rc;
    rc = r->io->open(r->io, r->path, TIDE_IO_READ, &r->f);
    if (rc == TIDE_ENOENT) rc = tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat is missing)", dir);
    if (rc && *hold) rc = ti_live_lost(r->io, dir, rc);
    return rc;
}

int ti_store_walk(const char *dir, tide_io *io, tide_visit_fn fn, tide_spill_fn spill_fn,
                  void *arg, tide_progress_fn progress, void *progress_arg,
                  tide_visit_stats *stats)
{
    reader r;
    tide_visit_stats st;
    tide_dat_header dh;
    tide_file *hold = NULL;
    char *path = NULL;
    uint8_t *big = NULL;
    uint64_t off, next_progress = 0, last_done = 0;
    int rc;

    tide_err_clear();
    memset(&r, 0, sizeof r);
    memset(&st, 0, sizeof st);
    r.io = io ? io : tide_io_posix();
    path = ti_path_join(dir, "nudb.dat");
    if (!path) { rc = tide_err_set(TIDE_ENOMEM, "visit: out of memory"); goto out; }
    r.path = path;
    if ((rc = open_walk(&r, dir, &hold)) != 0) goto out;
    if ((rc = r.io->size(r.f, &r.size)) != 0) goto out;
    if ((rc = live_bound(dir, r.io, &r.size)) != 0) goto out;
    st.file_bytes = r.size;
    /* Invariant 2: a small file gets a window of its own size. */
    r.win_cap = r.size < WINDOW ? (r.size > TIDE_DAT_HEADER_SIZE ? (size_t)r.size : TIDE_DAT_HEADER_SIZE)
                                : WINDOW;
    if ((r.win = malloc(r.win_cap)) == NULL) { rc = tide_err_set(TIDE_ENOMEM, "visit: out of memory"); goto out; }
    {
        const uint8_t *h;
        if (r.size < TIDE_DAT_HEADER_SIZE) {
            rc = tide_err_set(TIDE_ENOTSTORE, "%s: %llu bytes is shorter than the header", path,
                              (unsigned long long)r.size);
            goto out;
        }
        if ((rc = window(&r, 0, TIDE_DAT_HEADER_SIZE, &h)) != 0) goto out;
        if ((rc = ti_fmt_decode_dat_header(h, &dh, path)) != 0) goto out;
    }
    off = TIDE_DAT_HEADER_SIZE;
    while (off < r.size) {
        const uint8_t *p;
        if (progress && off >= next_progress) {     /* invariant 3 */
            TIDE_ASSERT(off >= last_done && off <= r.size);
            progress(progress_arg, off, r.size);
            last_done = off;
            next_progress = off + WINDOW;
        }
        if ((rc = window(&r, off, TIDE_DAT_RECORD_HEADER, &p)) != 0) goto out;
        uint64_t size = ti_get48(p);
        if (size == 0) {
            if ((rc = window(&r, off, TIDE_SPILL_HEADER, &p)) != 0) goto out;
            uint64_t n = ti_get16(p + 6);
            if (off + TIDE_SPILL_HEADER + n > r.size) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: spill record of %llu bytes runs "
                                  "past the end of the file (%llu bytes)", path,
                                  (unsigned long long)off, (unsigned long long)n,
                                  (unsigned long long)r.size);
                goto out;
            }
            if (spill_fn && (rc = spill_fn(arg, off, n)) != 0) goto out;
            st.spill_records++;
            st.spill_bytes += TIDE_SPILL_HEADER + n;
            off += TIDE_SPILL_HEADER + n;
            continue;
        }
        uint64_t total = TIDE_DAT_RECORD_HEADER + dh.key_size + size;
        if (off + total > r.size) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: data record of %llu value bytes runs "
                              "past the end of the file (%llu bytes)", path, (unsigned long long)off,
                              (unsigned long long)size, (unsigned long long)r.size);
            goto out;
        }
        if (fn) {
            const uint8_t *rec;
            if (total <= r.win_cap) {
                if ((rc = window(&r, off, (size_t)total, &rec)) != 0) goto out;
            } else {
                free(big);
                big = malloc(total);
                if (big == NULL) { rc = tide_err_set(TIDE_ENOMEM, "visit: cannot allocate %llu bytes", (unsigned long long)total); goto out; }
                if ((rc = r.io->read_at(r.f, big, total, off)) != 0) goto out;
                rec = big;
            }
            rc = fn(arg, off, rec + TIDE_DAT_RECORD_HEADER, dh.key_size,
                    rec + TIDE_DAT_RECORD_HEADER + dh.key_size, size);
            if (rc) goto out;
        }
        st.data_records++;
        st.data_bytes += total;
        st.value_bytes += size;
        off += total;
    }
    if (progress) progress(progress_arg, r.size, r.size);
out:
    if (stats) *stats = st;
    if (r.f) r.io->close(r.f);
    if (hold) r.io->close(hold);
    free(r.win);
    free(big);
    free(path);
    return rc;
}
