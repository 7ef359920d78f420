/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keymap.c: nudb.key mapped read-only, grown as the file grows.
 *
 * Why: a fetch used to pread a whole bucket (4 KiB by default) into a
 * stack buffer to find one 18-byte entry: most of its time went to the
 * kernel copying the block (_copy_to_iter) and taking a reference on the
 * file. With the key file mapped, the binary search reads the bucket where
 * it lies in the page cache and decodes only the entries it touches.
 *
 * Layout: one reservation of address space (tide_io.map: PROT_NONE, no
 * memory), the file mapped over its start in page-aligned pieces
 * (MAP_FIXED, PROT_READ, MAP_SHARED) as readers find the file grown. Of
 * the two ways to follow a growing file, remapping under the commit's
 * exclusive key_lock (mremap) or mapping the new pieces in place over a
 * reservation, this is the second: the base never moves, so a reader that
 * finds the file grown maps the new piece itself under a mutex of its own
 * while other readers go on reading the old pieces, and the commit
 * (commit.c) needs no change and no extra work inside its write phase.
 * When the file outgrows the reservation, or an mmap fails, the bytes past
 * the map are read with pread as before.
 *
 * Why no reader ever faults (SIGBUS comes from touching a mapped page that
 * lies wholly past the end of the file):
 *   1. The map is extended only to `known`, the key file's size as the
 *      store's key_lock says it is ((buckets + 1) x block_size, store.c
 *      invariant 2): bytes the commit has written before it published the
 *      new bucket count.
 *   2. A view returns bytes below `known` only, and the caller holds
 *      key_lock while it reads them.
 *   3. The key file shrinks while the store is open in one place only: a
 *      failed commit's rollback (commit.c), which holds key_lock
 *      exclusively, sets `buckets` back before it truncates. Readers after
 *      it see the smaller `known` and never touch the pages cut off, which
 *      stay in the map (harmless while untouched) and show the file again
 *      when it grows back over them. Recovery and rekey's repair run at
 *      open, before the map is made; rekey's rebuild writes another file
 *      (nudb.key.new) and renames it over nudb.key, which leaves the
 *      mapped inode whole.
 *   4. Another Tide process cannot truncate the file under the map: the
 *      handle's flock excludes writers (a read-only handle) or everyone (a
 *      writer), and a rotation's stepped delete of a dropped generation
 *      cuts only once it holds that lock itself (gens_rotate.c, lock_out_all). A foreign writer that takes no lock (NuDB) could; that is
 *      one case a mapped reader dies of where a pread reader got
 *      TIDE_ECORRUPT, and a read-write open refuses to start beside one.
 *      The other is a read error of the disk itself: a page that cannot be
 *      read in is a SIGBUS, where pread returned EIO (opts.pread avoids
 *      both).
 *
 * Invariants:
 *   5. len <= m.mapped <= m.reserved, and len only grows: it is the
 *      largest `known` a view has mapped, or the reservation when a view
 *      found the file larger than that.
 *   6. io != NULL exactly when the map exists; it is set once, before the
 *      store is published to other threads, and cleared at close only.
 *   7. `full` is set (under grow_mu, once) when the map can grow no
 *      further: it reached the reservation, or an mmap failed. From then
 *      on a view past `len` returns NULL reading `full` alone, without
 *      grow_mu: the fetches of buckets past the map pread side by side
 *      instead of queueing on the mutex.
 *   8. Once len exceeds random_above, m.random_access is set (under
 *      grow_mu, or at open) before the map grows, and never cleared: a
 *      file that outgrows the memory for its pages stops reading around
 *      for good (a read-around brings neighbours that memory cannot keep,
 *      pushing out pages the next fetches want), and the io advises every
 *      byte mapped so far with the next map call.
 *
 * The data map (lookup.c "Reading nudb.dat") is this map over nudb.dat,
 * with `known` = dat_stable: 1 to 3 hold there with dat_stable in place of
 * key_lock's size (lookup.c says why no path cuts below it).
 *
 * Never: write through the map; touch a byte at or past `known`.
 */
#include <string.h>

#include "store/keymap.h"
#include "util/assert.h"
#include "util/err.h"

void ti_keymap_init(ti_keymap *k)
{
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->grow_mu, NULL);
}

/* Invariant 8, for a map about to show `to` bytes. */
static void advise_for(ti_keymap *k, uint64_t to)
{
    if (k->random_above == 0 || to > k->random_above)
        __atomic_store_n(&k->m.random_access, 1, __ATOMIC_RELAXED);
}

int ti_keymap_reads_alone(const ti_keymap *k)
{
    return __atomic_load_n(&k->m.random_access, __ATOMIC_RELAXED);
}

int ti_keymap_open(ti_keymap *k, tide_io *io, tide_file *f, uint64_t len, uint64_t random_above)
{
    int rc;

    TIDE_ASSERT(k->io == NULL);
    if (io->map == NULL || io->unmap == NULL)
        return tide_err_set(TIDE_EINVAL, "map: the file system cannot map files");
    memset(&k->m, 0, sizeof k->m);
    k->random_above = random_above;
    advise_for(k, len);
    k->m.reserved = len > TI_KEYMAP_RESERVE_MIN / 4 ? 4 * len : TI_KEYMAP_RESERVE_MIN;
    rc = io->map(f, &k->m, len);
    if (rc) {
        io->unmap(&k->m);
        return rc;
    }
    k->file = f;
    k->len = len;
    k->io = io;
    return 0;
}

/* Map up to `known` bytes (invariant 1), or up to the reservation when
 * the file is larger, then stop (invariant 7). 1: [0, known) mapped; 0:
 * not all of it (the caller preads). */
static int grow(ti_keymap *k, uint64_t known)
{
    uint64_t to = known;
    int ok;

    pthread_mutex_lock(&k->grow_mu);
    __atomic_fetch_add(&k->grow_locks, 1, __ATOMIC_RELAXED);
    ok = __atomic_load_n(&k->len, __ATOMIC_ACQUIRE) >= known;
    if (!ok && !__atomic_load_n(&k->full, __ATOMIC_RELAXED)) {
        if (to > k->m.reserved) to = k->m.reserved;
        advise_for(k, to);
        if (to > k->len && k->io->map(k->file, &k->m, to) == 0) {
            __atomic_store_n(&k->len, to, __ATOMIC_RELEASE);
        } else {
            tide_err_clear();      /* the bytes past the map are read with pread */
            to = k->len;
        }
        ok = to >= known;
        if (!ok) __atomic_store_n(&k->full, 1, __ATOMIC_RELEASE);
    }
    TIDE_ASSERT(k->len <= k->m.mapped && k->m.mapped <= k->m.reserved);
    TIDE_ASSERT(k->m.random_access || (k->random_above != 0 && k->len <= k->random_above));
    pthread_mutex_unlock(&k->grow_mu);
    return ok;
}

const uint8_t *ti_keymap_view(ti_keymap *k, uint64_t off, size_t n, uint64_t known)
{
    TIDE_ASSERT(off + n <= known);
    if (k->io == NULL) return NULL;
    if (off + n <= __atomic_load_n(&k->len, __ATOMIC_ACQUIRE)) return k->m.base + off;
    if (__atomic_load_n(&k->full, __ATOMIC_ACQUIRE)) return NULL;     /* invariant 7 */
    if (!grow(k, known) && off + n > __atomic_load_n(&k->len, __ATOMIC_ACQUIRE)) return NULL;
    return k->m.base + off;
}

int ti_keymap_stats(ti_keymap *k, uint64_t known, uint64_t *mapped, uint64_t *resident)
{
    uint64_t r = 0;
    int rc = 0;

    tide_io_map m;

    /* A copy of the map's figures under grow_mu, scanned outside it: the
     * pagemap scan is long at gigabytes mapped (a read per 4 MiB), and a
     * reader that finds the file grown must not wait for it. The base
     * never moves until close (invariant 6), and the pages the copy names
     * stay mapped while the store is open. */
    pthread_mutex_lock(&k->grow_mu);
    /* After a rollback the file is shorter than the largest `known` mapped
     * (invariant 3): the map shows no more than the file holds. */
    if (mapped) *mapped = k->io ? (k->len < known ? k->len : known) : 0;
    m = k->m;
    pthread_mutex_unlock(&k->grow_mu);
    if (resident && k->io && k->io->map_resident) rc = k->io->map_resident(&m, &r);
    if (resident) *resident = r;
    return rc;
}

void ti_keymap_close(ti_keymap *k)
{
    if (k->io) k->io->unmap(&k->m);
    k->io = NULL;
    k->len = 0;
    pthread_mutex_destroy(&k->grow_mu);
}
