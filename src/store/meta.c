/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * meta.c: tide.meta (see meta.h), the durable dat_committed of the
 * deferred index.
 *
 * Slot layout (big-endian, as NuDB's files):
 *   0   "TIDEMETA"       8 bytes
 *   8   version          u32 (1)
 *   12  reserved         u32 (0)
 *   16  seq              u64
 *   24  uid              u64
 *   32  dat_indexed      u64 (W at the write)
 *   40  dat_committed    u64 (C)
 *   48  key_file_size    u64 (the idle log's, at the write)
 *   56  zero             to 504
 *   504 XXH64 of bytes 0..504 (seed 0)
 *
 * Invariants:
 *   1. A slot is written whole with one write at its own offset, then
 *      synced; the other slot is not touched, so a crash tears at most the
 *      slot being written, which then fails its checksum.
 *   2. seq only grows: a writer starts above the highest seq it read.
 *   3. A slot speaks only for the idle log it was written under
 *      (ti_meta_matches_log): Tide's mark, the same W, the same key file
 *      size. Another writer's log (NuDB's commit after its recovery cut
 *      nudb.dat to W) records the same W, and must not revive a C that
 *      recovery cut away.
 *
 * Never: write both slots in one call; trust a slot whose checksum fails.
 */
#include <string.h>

#include "store/format.h"
#include "store/meta.h"
#include "util/err.h"
#include "util/log.h"

static const char magic[8] = { 'T', 'I', 'D', 'E', 'M', 'E', 'T', 'A' };

void ti_meta_encode(uint8_t out[TI_META_SLOT], const ti_meta *m)
{
    memset(out, 0, TI_META_SLOT);
    memcpy(out, magic, sizeof magic);
    ti_store32(out + 8, TI_META_VERSION);
    ti_put64(out + 16, m->seq);
    ti_put64(out + 24, m->uid);
    ti_put64(out + 32, m->dat_indexed);
    ti_put64(out + 40, m->dat_committed);
    ti_put64(out + 48, m->key_file_size);
    ti_put64(out + TI_META_SLOT - 8, ti_fmt_hash64(out, TI_META_SLOT - 8, 0));
}

int ti_meta_decode(const uint8_t in[TI_META_SLOT], ti_meta *m)
{
    memset(m, 0, sizeof *m);
    if (memcmp(in, magic, sizeof magic) != 0) return 0;
    if (ti_get64(in + TI_META_SLOT - 8) != ti_fmt_hash64(in, TI_META_SLOT - 8, 0)) return 0;
    if (ti_load32(in + 8) != TI_META_VERSION) return 0;
    m->seq = ti_get64(in + 16);
    m->uid = ti_get64(in + 24);
    m->dat_indexed = ti_get64(in + 32);
    m->dat_committed = ti_get64(in + 40);
    m->key_file_size = ti_get64(in + 48);
    return m->seq != 0;
}

int ti_meta_matches_log(const ti_meta *m, const tide_log_header *lh)
{
    return lh->deferred && m->dat_indexed == lh->dat_file_size &&
           m->key_file_size == lh->key_file_size;
}

int ti_meta_read(tide_io *io, const char *path, uint64_t uid, ti_meta *m, int *valid)
{
    uint8_t buf[2 * TI_META_SLOT];
    tide_file *f = NULL;
    uint64_t size = 0, top = 0;
    ti_meta slot[2];
    int ok[2] = { 0, 0 }, rc;

    memset(m, 0, sizeof *m);
    *valid = 0;
    rc = io->open(io, path, TIDE_IO_READ, &f);
    if (rc == TIDE_ENOENT) { tide_err_clear(); return 0; }
    if (rc) return rc;
    memset(buf, 0, sizeof buf);
    if ((rc = io->size(f, &size)) != 0) goto out;
    if (size > sizeof buf) size = sizeof buf;
    if (size && (rc = io->read_at(f, buf, (size_t)size, 0)) != 0) goto out;
    for (int i = 0; i < 2; i++) {
        ok[i] = ti_meta_decode(buf + i * TI_META_SLOT, &slot[i]);
        if (ok[i] && slot[i].seq > top) top = slot[i].seq;
    }
    if (!ok[0] && !ok[1]) goto out;
    *m = ok[0] && (!ok[1] || slot[0].seq > slot[1].seq) ? slot[0] : slot[1];
    if (m->uid != uid) {
        tide_log(TIDE_LOG_WARN, "%s: uid %016llx belongs to another store (this one is %016llx); "
                 "ignored", path, (unsigned long long)m->uid, (unsigned long long)uid);
        memset(m, 0, sizeof *m);
        goto out;
    }
    *valid = 1;
out:
    m->seq = top;
    io->close(f);
    return rc;
}

int ti_meta_write(tide_io *io, tide_file *f, ti_meta *m)
{
    uint8_t buf[TI_META_SLOT];
    int rc;

    m->seq++;
    ti_meta_encode(buf, m);
    rc = io->write_at(f, buf, sizeof buf, (m->seq & 1) * (uint64_t)TI_META_SLOT);
    if (rc == 0) rc = io->sync(f);
    return rc;
}
