/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * overload.h: the graded levels of a process memory limit, with hysteresis.
 *
 * A pure state machine: it is given the bytes that count against the limit
 * (and whether the kernel reports memory pressure) and answers the level.
 * It reads nothing and acts on nothing; the node's governor
 * (src/node/governor.c) feeds it readings and does what each level asks:
 *
 *   NORMAL    nothing.
 *   SOFT      sweep now, shrink the cache targets, trim.
 *   HIGH      SOFT's actions, and new writes are refused (503 with
 *             Retry-After; request bodies refused before they are buffered).
 *   CRITICAL  HIGH's actions, and no new connection is accepted.
 *
 * Marks, as percentages of limit_bytes: level L is entered when the counted
 * bytes reach enter(L) = pct[L] % of the limit, and left when they fall
 * below leave(L) = (pct[L] - hysteresis) % of it. One update may move
 * several levels at once in either direction. Pressure (a PSI trigger or
 * its averages over the operator's threshold) holds the level at SOFT or
 * above while it lasts; it never raises it further.
 *
 * The state is a plain value the caller owns (no allocation, no lock): the
 * governor keeps it on its one thread. Not thread-safe.
 */
#ifndef TIDE_MEM_OVERLOAD_H
#define TIDE_MEM_OVERLOAD_H

#include <stdint.h>

enum {
    TIDE_OVERLOAD_NORMAL   = 0,
    TIDE_OVERLOAD_SOFT     = 1,
    TIDE_OVERLOAD_HIGH     = 2,
    TIDE_OVERLOAD_CRITICAL = 3,
    TIDE_OVERLOAD_LEVELS   = 4
};

/* The defaults of memory_levels and memory_hysteresis (docs/MEMORY-LIMIT.md). */
#define TIDE_OVERLOAD_SOFT_PCT_DEFAULT     80u
#define TIDE_OVERLOAD_HIGH_PCT_DEFAULT     90u
#define TIDE_OVERLOAD_CRITICAL_PCT_DEFAULT 97u
#define TIDE_OVERLOAD_HYSTERESIS_DEFAULT    5u

typedef struct tide_mem_overload_opts {
    uint64_t limit_bytes;      /* > 0 */
    unsigned pct[TIDE_OVERLOAD_LEVELS]; /* pct[0] unused (0); 1 <= soft < high <
                                   critical <= 100; defaults 80, 90, 97 */
    unsigned hysteresis_pct;   /* 1 .. soft - 1; default 5 */
} tide_mem_overload_opts;

typedef struct tide_mem_overload {
    tide_mem_overload_opts opts;
    uint64_t enter[TIDE_OVERLOAD_LEVELS]; /* bytes; enter[0] = 0 */
    uint64_t leave[TIDE_OVERLOAD_LEVELS]; /* bytes; leave[0] = 0 */
    int      level;            /* TIDE_OVERLOAD_* */
    int      pressure;         /* the last update's pressure flag */
} tide_mem_overload;

/* Fill `o` with the defaults (limit_bytes 0: the caller must set it). */
void tide_mem_overload_opts_init(tide_mem_overload_opts *o);

/*
 * Check `opts` and start `st` at NORMAL with the marks computed (bytes,
 * rounded down). Returns 0 or TIDE_EINVAL naming the bad option ("memory
 * levels 90,80,97: each must be above the one before"). Pure.
 */
int tide_mem_overload_init(tide_mem_overload *st, const tide_mem_overload_opts *opts);

/*
 * Give one reading: `counted` bytes, and `pressure` 1 when the kernel
 * reports pressure. Returns the level after it (also in st->level). Pure;
 * O(levels).
 */
int tide_mem_overload_update(tide_mem_overload *st, uint64_t counted, int pressure);

/* "normal", "soft", "high", "critical"; "?" otherwise. */
const char *tide_mem_overload_level_name(int level);

#endif
