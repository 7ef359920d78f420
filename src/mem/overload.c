/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * overload.c: the graded levels of a process memory limit, with hysteresis
 * (the contract is overload.h).
 *
 * A pure state machine. init turns the operator's percentages into byte
 * marks once; update compares one reading with them and moves the level.
 *
 * Layout of the state (tide_mem_overload): the options as given, two mark
 * tables indexed by level (enter[L]: the bytes at which L is entered;
 * leave[L]: the bytes below which L is left), the level, and the last
 * pressure flag. enter[0] = leave[0] = 0: NORMAL is never entered or left
 * by a mark.
 *
 * Marks are floor(limit * pct / 100), computed as q*pct + r*pct/100 with
 * limit = 100q + r, so they are exact for any limit up to UINT64_MAX (the
 * product limit * pct would overflow above 2^64/100).
 *
 * The update: from the current level, climb while the reading reaches the
 * next level's enter mark, then (if it did not climb) descend while the
 * reading is below the current level's leave mark. One reading may move
 * several levels either way. Pressure then lifts NORMAL to SOFT; it never
 * lifts higher. When pressure ends, the held SOFT is left like any other
 * SOFT: once the reading is below leave(SOFT). That is the hysteresis, not
 * a stuck level: a reading in the band [leave, enter) keeps what it has.
 *
 * Invariants:
 *   1. 1 <= pct[SOFT] < pct[HIGH] < pct[CRITICAL] <= 100 and
 *      1 <= hysteresis < pct[SOFT] once init returned 0.
 *   2. For L >= 1: leave[L] <= enter[L], enter[L] <= enter[L+1] and
 *      leave[L] <= leave[L+1] (floor is monotone).
 *   3. After an update, the level L satisfies: reading < enter[L+1] (when
 *      L < CRITICAL) and reading >= leave[L] (when L >= 1), unless pressure
 *      holds SOFT; with pressure, L >= SOFT.
 *   4. The state stays in TIDE_OVERLOAD_NORMAL .. TIDE_OVERLOAD_CRITICAL.
 *
 * Never: read a file, take a lock, allocate, log. The governor does those.
 */
#include "mem/overload.h"

#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"

void tide_mem_overload_opts_init(tide_mem_overload_opts *o)
{
    o->limit_bytes = 0;
    o->pct[TIDE_OVERLOAD_NORMAL] = 0;
    o->pct[TIDE_OVERLOAD_SOFT] = TIDE_OVERLOAD_SOFT_PCT_DEFAULT;
    o->pct[TIDE_OVERLOAD_HIGH] = TIDE_OVERLOAD_HIGH_PCT_DEFAULT;
    o->pct[TIDE_OVERLOAD_CRITICAL] = TIDE_OVERLOAD_CRITICAL_PCT_DEFAULT;
    o->hysteresis_pct = TIDE_OVERLOAD_HYSTERESIS_DEFAULT;
}

/* floor(limit * pct / 100) without the overflow of the product. */
static uint64_t percent_of(uint64_t limit, unsigned pct)
{
    return (limit / 100u) * pct + (limit % 100u) * pct / 100u;
}

/* Invariant 1, with a message naming what is wrong and the figures. */
static int check_opts(const tide_mem_overload_opts *o)
{
    unsigned s = o->pct[TIDE_OVERLOAD_SOFT], h = o->pct[TIDE_OVERLOAD_HIGH];
    unsigned c = o->pct[TIDE_OVERLOAD_CRITICAL], hy = o->hysteresis_pct;

    if (o->limit_bytes == 0)
        return tide_err_set(TIDE_EINVAL, "memory limit 0: the levels need a limit above 0 bytes");
    if (s < 1 || h <= s || c <= h)
        return tide_err_set(TIDE_EINVAL,
                            "memory levels %u,%u,%u: each must be above the one before, "
                            "the first at least 1", s, h, c);
    if (c > 100)
        return tide_err_set(TIDE_EINVAL,
                            "memory levels %u,%u,%u: critical %u is above 100 (percent of the limit)",
                            s, h, c, c);
    if (hy < 1 || hy >= s)
        return tide_err_set(TIDE_EINVAL,
                            "memory hysteresis %u with memory levels %u,%u,%u: must be from 1 "
                            "to %u (below the soft level)", hy, s, h, c, s - 1);
    return 0;
}

int tide_mem_overload_init(tide_mem_overload *st, const tide_mem_overload_opts *opts)
{
    int rc, l;

    rc = check_opts(opts);
    if (rc) goto out;
    st->opts = *opts;
    st->opts.pct[TIDE_OVERLOAD_NORMAL] = 0;
    st->enter[TIDE_OVERLOAD_NORMAL] = 0;
    st->leave[TIDE_OVERLOAD_NORMAL] = 0;
    for (l = TIDE_OVERLOAD_SOFT; l < TIDE_OVERLOAD_LEVELS; l++) {
        st->enter[l] = percent_of(opts->limit_bytes, opts->pct[l]);
        st->leave[l] = percent_of(opts->limit_bytes, opts->pct[l] - opts->hysteresis_pct);
        TIDE_ASSERT(st->leave[l] <= st->enter[l]);                    /* invariant 2 */
        TIDE_ASSERT(st->enter[l] >= st->enter[l - 1] && st->leave[l] >= st->leave[l - 1]);
    }
    st->level = TIDE_OVERLOAD_NORMAL;
    st->pressure = 0;
out:
    return rc;
}

int tide_mem_overload_update(tide_mem_overload *st, uint64_t counted, int pressure)
{
    int l = st->level, start = st->level;

    TIDE_ASSERT(l >= TIDE_OVERLOAD_NORMAL && l <= TIDE_OVERLOAD_CRITICAL); /* invariant 4 */
    while (l < TIDE_OVERLOAD_CRITICAL && counted >= st->enter[l + 1]) l++;
    if (l == start)
        while (l > TIDE_OVERLOAD_NORMAL && counted < st->leave[l]) l--;
    if (pressure && l < TIDE_OVERLOAD_SOFT) l = TIDE_OVERLOAD_SOFT;
    TIDE_ASSERT(pressure || l == TIDE_OVERLOAD_CRITICAL || counted < st->enter[l + 1]); /* 3 */
    st->level = l;
    st->pressure = pressure ? 1 : 0;
    return l;
}

const char *tide_mem_overload_level_name(int level)
{
    switch (level) {
    case TIDE_OVERLOAD_NORMAL:   return "normal";
    case TIDE_OVERLOAD_SOFT:     return "soft";
    case TIDE_OVERLOAD_HIGH:     return "high";
    case TIDE_OVERLOAD_CRITICAL: return "critical";
    default:                     return "?";
    }
}
