/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_map.c: the simulated file system's maps (tide_io.map).
 *
 * A map of a sim file is a copy of its current image kept in step with it,
 * so a store on the sim reads its key file through the map as on POSIX, and
 * the sim's faults and crashes run under the mapped path too.
 *
 * Layout: one anonymous reservation (PROT_NONE, MAP_NORESERVE) of one page
 * more than m->reserved; its first page holds the sim_map record (unmap
 * finds it from m->base alone), m->base is the page after. The bytes
 * [0, rw) of the view are PROT_READ|PROT_WRITE (written by the sim only,
 * never by a reader: the view is read-only by contract), the rest
 * PROT_NONE. Each map is on its inode's list, and every change of the
 * inode's current image is copied into it under sim->mu: a write's bytes
 * (and the zeros of any gap it opened), a truncate's, a failed sync's
 * return to the durable image.
 *
 * Invariants:
 *   1. m->base never moves while mapped; rw = min(mapped, the file's size
 *      rounded up to a page), and [0, rw) equals the current image, with
 *      zeros past its end in the last page (POSIX's partial page).
 *   2. The pages of the view wholly past the file's end are PROT_NONE: a
 *      reader that touches them faults (SIGSEGV), as a POSIX map's pages
 *      past the end do (SIGBUS). So a truncate cuts the view as it cuts a
 *      POSIX map, and a test that reads bytes a rollback cut off dies in
 *      the sim as it would on a disk. Pages come back readable, with the
 *      file's bytes, when the file grows back over them.
 *   3. A crash (and a gc of an unreachable inode, and the sim's destroy)
 *      detaches the map: its bytes stay as they were and follow nothing.
 *      The crash's process is gone and its handles fail; a map of it is
 *      memory of a dead process. unmap still releases it.
 *   4. map, unmap and every follow take sim->mu (io_sim.c invariant 6);
 *      readers of the view take nothing. map is not counted as a call and
 *      fail_at never fails it (a map is not I/O).
 *   5. Spare reservations: unmap keeps up to SPARE_MAX reservations of at
 *      most SPARE_RW_MAX readable bytes (process-wide, under spare_mu,
 *      taken after sim->mu when both are held) instead of giving them to
 *      the kernel, with their pages as they were; a map of the same size
 *      of reservation takes one back, the one whose readable bytes are
 *      closest to the file's, and its first follow copies the whole
 *      readable part (its bytes are another file's) and changes the
 *      protection of the difference only. So a spare is never seen: by
 *      the time map returns, invariants 1 and 2 hold for the new file.
 *      Why: every page-table change (a fresh page's fault, an mprotect, a
 *      munmap) costs tens of microseconds on a virtual machine, and a test
 *      or fuzz input that opens a small store a few times paid that for
 *      every page, twice per open (key and data maps), more than the rest
 *      of the open together.
 *
 * Never: let a reader's bytes move (no realloc of the view); keep a
 * detached map on an inode's list; hand out a spare with its old bytes
 * readable past the new file's end.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/io_sim_impl.h"
#include "util/assert.h"
#include "util/err.h"

struct sim_map {
    sim_map *next;              /* on ino->maps */
    tide_io_sim *sim;           /* NULL once detached (atomic) */
    inode *ino;                 /* NULL once detached */
    uint8_t *view;              /* == m->base */
    uint64_t total;             /* bytes of the reservation, its record page included */
    uint64_t mapped, rw;        /* invariant 1 */
    int stale;                  /* a spare's [0, rw) holds another file's bytes (invariant 5) */
};

/* Invariant 5: spare reservations, each one's record page and view as an
 * unmap left them. */
#define SPARE_MAX    8
#define SPARE_RW_MAX (1u << 20)

typedef struct spare {
    uint8_t *p;                 /* the reservation (its record page first) */
    uint64_t total, rw;
} spare;

static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static spare spares[SPARE_MAX];
static unsigned nspares;

static uint64_t page_size(void) { return (uint64_t)sysconf(_SC_PAGESIZE); }
static uint64_t round_up(uint64_t n) { uint64_t p = page_size(); return (n + p - 1) / p * p; }

/* Make [0, rw) of the view hold [0, size) of the image, zeros past it to
 * the page's end, and the pages past it PROT_NONE (invariants 1, 2);
 * bytes [lo, hi) are copied (the rest already equal). */
static void follow_one(sim_map *mp, const image *cur, uint64_t lo, uint64_t hi)
{
    uint64_t rw = round_up(cur->size) < mp->mapped ? round_up(cur->size) : mp->mapped;

    if (rw > mp->rw) {
        mprotect(mp->view + mp->rw, (size_t)(rw - mp->rw), PROT_READ | PROT_WRITE);
        memset(mp->view + mp->rw, 0, (size_t)(rw - mp->rw));
        if (lo > mp->rw) lo = mp->rw;           /* the pages made readable get their bytes */
        if (hi < rw) hi = rw;
    } else if (rw < mp->rw) {
        mprotect(mp->view + rw, (size_t)(mp->rw - rw), PROT_NONE);
    }
    mp->rw = rw;
    if (hi > rw) hi = rw;
    if (lo >= hi) return;
    uint64_t copy_end = hi < cur->size ? hi : cur->size;
    if (lo < copy_end) memcpy(mp->view + lo, cur->b + lo, (size_t)(copy_end - lo));
    if (copy_end < hi) memset(mp->view + (copy_end > lo ? copy_end : lo), 0,
                              (size_t)(hi - (copy_end > lo ? copy_end : lo)));
}

void ti_sim_maps_follow(inode *ino, uint64_t lo, uint64_t hi)
{
    for (sim_map *mp = ino->maps; mp; mp = mp->next) follow_one(mp, &ino->cur, lo, hi);
}

void ti_sim_maps_detach(inode *ino)
{
    for (sim_map *mp = ino->maps, *n; mp; mp = n) {
        n = mp->next;
        mp->next = NULL;
        mp->ino = NULL;
        __atomic_store_n(&mp->sim, NULL, __ATOMIC_RELEASE);
    }
    ino->maps = NULL;
}

/* Take the spare of `total` bytes whose readable part is closest to
 * `want` (invariant 5); 0 when there is none. */
static int take_spare(uint64_t total, uint64_t want, spare *out)
{
    unsigned best = SPARE_MAX;
    uint64_t best_d = UINT64_MAX;

    pthread_mutex_lock(&spare_mu);
    for (unsigned i = 0; i < nspares; i++) {
        uint64_t d = spares[i].rw > want ? spares[i].rw - want : want - spares[i].rw;
        if (spares[i].total == total && d < best_d) { best = i; best_d = d; }
    }
    if (best < SPARE_MAX) {
        *out = spares[best];
        spares[best] = spares[--nspares];
    }
    pthread_mutex_unlock(&spare_mu);
    return best < SPARE_MAX;
}

/* Keep a reservation for a later map, or give it to the kernel. */
static void give_back(uint8_t *p, uint64_t total, uint64_t rw)
{
    int kept = 0;

    pthread_mutex_lock(&spare_mu);
    if (nspares < SPARE_MAX && rw <= SPARE_RW_MAX) {
        spares[nspares++] = (spare){ p, total, rw };
        kept = 1;
    }
    pthread_mutex_unlock(&spare_mu);
    if (!kept) munmap(p, (size_t)total);
}

static int reserve(tide_file *f, tide_io_map *m, uint64_t want)
{
    uint64_t total = round_up(m->reserved) + page_size();
    uint64_t rw = round_up(f->ino->cur.size) < want ? round_up(f->ino->cur.size) : want;
    spare sp = { NULL, total, 0 };
    sim_map *mp;

    if (!take_spare(total, rw, &sp)) {
        sp.p = mmap(NULL, (size_t)total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (sp.p == MAP_FAILED)
            return tide_err_set(TIDE_ENOMEM, "sim: %s: map: cannot reserve %llu bytes of address space",
                                f->path, (unsigned long long)total);
        if (mprotect(sp.p, (size_t)page_size(), PROT_READ | PROT_WRITE) != 0) {
            munmap(sp.p, (size_t)total);
            return tide_err_set(TIDE_ENOMEM, "sim: %s: map: cannot make the record page", f->path);
        }
    }
    mp = (sim_map *)(void *)sp.p;
    memset(mp, 0, sizeof *mp);
    mp->sim = f->sim;
    mp->ino = f->ino;
    mp->view = sp.p + page_size();
    mp->total = total;
    mp->rw = sp.rw;
    mp->stale = sp.rw > 0;
    mp->next = f->ino->maps;
    f->ino->maps = mp;
    m->base = mp->view;
    m->reserved = total - page_size();
    m->mapped = 0;
    return 0;
}

static sim_map *record_of(const tide_io_map *m)
{
    return (sim_map *)(void *)((uint8_t *)(uintptr_t)m->base - page_size());
}

int ti_sim_map(tide_file *f, tide_io_map *m, uint64_t len)
{
    tide_io_sim *sim = f->sim;
    uint64_t want = round_up(len);
    int rc = 0;

    ti_sim_lock(sim);
    if (f->gen != sim->gen) {
        rc = tide_err_set(TIDE_EIO, "sim: %s: map: the handle predates a crash", f->path);
    } else if (m->base == NULL && (rc = reserve(f, m, want)) != 0) {
        /* rc says why */
    } else if (want > m->reserved) {
        rc = tide_err_set(TIDE_ENOMEM, "sim: %s: map: %llu bytes exceed the %llu reserved", f->path,
                          (unsigned long long)want, (unsigned long long)m->reserved);
    } else if (want > m->mapped || record_of(m)->stale) {
        sim_map *mp = record_of(m);
        TIDE_ASSERT(mp->ino == f->ino);
        if (want > mp->mapped) mp->mapped = m->mapped = want;
        /* A spare's readable bytes are all another file's (invariant 5). */
        follow_one(mp, &f->ino->cur, mp->stale ? 0 : mp->rw, want);
        mp->stale = 0;
    }
    ti_sim_unlock(sim);
    return rc;
}

void ti_sim_unmap(tide_io_map *m)
{
    sim_map *mp;
    tide_io_sim *sim;

    if (m->base == NULL) return;
    mp = record_of(m);
    if ((sim = __atomic_load_n(&mp->sim, __ATOMIC_ACQUIRE)) != NULL) {
        ti_sim_lock(sim);
        if (mp->ino) {
            sim_map **pp = &mp->ino->maps;
            while (*pp != mp) pp = &(*pp)->next;
            *pp = mp->next;
        }
        ti_sim_unlock(sim);
    }
    give_back((uint8_t *)mp, mp->total, mp->rw);
    memset(m, 0, sizeof *m);
}

/* Every readable page of the view counts as mapped in: the sim's copy is
 * memory of this process from the moment it is made. */
int ti_sim_map_resident(const tide_io_map *m, uint64_t *bytes)
{
    *bytes = 0;
    if (m->base == NULL) return 0;
    sim_map *mp = record_of(m);
    tide_io_sim *sim = __atomic_load_n(&mp->sim, __ATOMIC_ACQUIRE);
    if (sim) ti_sim_lock(sim);
    *bytes = mp->rw;
    if (sim) ti_sim_unlock(sim);
    return 0;
}
