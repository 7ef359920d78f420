/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_sim_fault.c: the sim's counted calls, injected failures and full disk.
 *
 * Every counted call (io_sim.c lists them) starts with ti_sim_enter, which
 * numbers it and says whether fail_at's fault lands on it; the prologue in
 * io_sim_table.c turns a fault into its error with ti_sim_injected, except
 * the two kinds whose effect belongs to the call (SHORT_WRITE on a write,
 * SYNC_FAIL on a sync), which the call makes itself. The capacity is the
 * other failure a test arranges: ti_sim_check_room refuses growth past it.
 *
 * Invariants:
 *   1. sim->calls counts every counted call once, before anything else is
 *      looked at; sim->faults <= sim->calls, one per injected failure.
 *   2. A fault armed at call n lands on call n (and, when persistent, on
 *      every later one) and on no other; a crash disarms it.
 *   3. An injected failure other than SHORT_WRITE and SYNC_FAIL has no
 *      effect; SHORT_WRITE applies at most ti_sim_short_part bytes, as an
 *      ordinary write subject to the capacity.
 *   4. The capacity refuses growth only: a write or truncate that leaves
 *      the sum of live files' current sizes at or below it, or does not
 *      grow its file, is never refused for room.
 *
 * Never: count a call twice, or fault a call of io_sim.h's test helpers.
 */
#include <stdint.h>

#include "io/io_sim_impl.h"
#include "util/err.h"

tide_io_sim_fault ti_sim_enter(tide_io_sim *sim)
{
    uint64_t c = ++sim->calls;

    if (sim->fault == TIDE_IO_SIM_NONE) return TIDE_IO_SIM_NONE;
    if (c == sim->fault_at || (sim->fault_persistent && c > sim->fault_at)) {
        sim->faults++;
        return sim->fault;
    }
    return TIDE_IO_SIM_NONE;
}

int ti_sim_fault_code(tide_io_sim_fault kind, int can_enospc)
{
    return kind == TIDE_IO_SIM_ENOSPC && can_enospc ? TIDE_ENOSPC : TIDE_EIO;
}

/* What a failure of `kind` that returns `code` is called in messages. */
static const char *fault_label(tide_io_sim_fault kind, int code)
{
    if (code == TIDE_ENOSPC) return "ENOSPC";
    if (kind == TIDE_IO_SIM_EIO || kind == TIDE_IO_SIM_ENOSPC) return "EIO";
    return kind == TIDE_IO_SIM_SHORT_WRITE ? "short write (as EIO)" : "sync failure (as EIO)";
}

int ti_sim_injected(tide_io_sim *sim, tide_io_sim_fault kind, int code, const char *path,
                    const char *what, uint64_t off)
{
    if (off == UINT64_MAX)
        return tide_err_set(code, "sim: %s: %s: injected %s (call %llu)", path, what,
                            fault_label(kind, code), (unsigned long long)sim->calls);
    return tide_err_set(code, "sim: %s: %s at offset %llu: injected %s (call %llu)", path, what,
                        (unsigned long long)off, fault_label(kind, code),
                        (unsigned long long)sim->calls);
}

size_t ti_sim_short_part(uint64_t off, size_t len)
{
    uint64_t mid = off + len / 2, cut = mid - mid % SECTOR;

    return cut > off ? (size_t)(cut - off) : 0;
}

uint64_t ti_sim_usage(const tide_io_sim *sim)
{
    uint64_t total = 0;

    for (inode *i = sim->inodes; i; i = i->next) {
        int live = i->handles > 0;
        for (size_t k = 0; !live && k < sim->cur_ns.n; k++) live = sim->cur_ns.e[k].ino == i;
        if (live) total += i->cur.size;
    }
    return total;
}

int ti_sim_check_room(tide_io_sim *sim, const char *path, inode *ino, const char *what,
                      uint64_t off, uint64_t new_size)
{
    uint64_t used;

    if (new_size > SIM_FILE_MAX || new_size < off)
        return tide_err_set(TIDE_EIO, "sim: %s: %s at offset %llu: the file would pass the "
                            "sim's limit of %llu bytes", path, what, (unsigned long long)off,
                            (unsigned long long)SIM_FILE_MAX);
    if (new_size <= ino->cur.size || sim->capacity == UINT64_MAX) return 0;
    used = ti_sim_usage(sim);
    if (used + (new_size - ino->cur.size) > sim->capacity)
        return tide_err_set(TIDE_ENOSPC, "sim: %s: %s at offset %llu: no space: %llu bytes in "
                            "use, %llu more needed, capacity %llu", path, what,
                            (unsigned long long)off, (unsigned long long)used,
                            (unsigned long long)(new_size - ino->cur.size),
                            (unsigned long long)sim->capacity);
    return 0;
}

int ti_sim_free_bytes(tide_io *io, const char *dir, uint64_t *out)
{
    tide_io_sim *sim = (tide_io_sim *)io;
    uint64_t used;

    (void)dir;
    ti_sim_lock(sim);
    used = ti_sim_usage(sim);
    *out = sim->capacity == UINT64_MAX ? UINT64_MAX : used >= sim->capacity ? 0 : sim->capacity - used;
    ti_sim_unlock(sim);
    return 0;
}

/* ---- io_sim.h ---- */

int tide_io_sim_fail_at(tide_io_sim *sim, uint64_t n, tide_io_sim_fault kind, int persistent)
{
    if ((int)kind < (int)TIDE_IO_SIM_NONE || (int)kind > (int)TIDE_IO_SIM_SYNC_FAIL)
        return tide_err_set(TIDE_EINVAL, "sim: fail at %llu: unknown fault kind %d",
                            (unsigned long long)n, (int)kind);
    ti_sim_lock(sim);
    sim->fault = n == 0 ? TIDE_IO_SIM_NONE : kind;
    sim->fault_at = sim->calls + n;
    sim->fault_persistent = persistent != 0;
    ti_sim_unlock(sim);
    return 0;
}

void tide_io_sim_set_capacity(tide_io_sim *sim, uint64_t bytes)
{
    ti_sim_lock(sim);
    sim->capacity = bytes;
    ti_sim_unlock(sim);
}
