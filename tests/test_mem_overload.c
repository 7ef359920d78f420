/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_mem_overload.c: the overload levels with hysteresis
 * (src/mem/overload.c).
 *
 * The state machine is pure, so every test feeds readings and checks the
 * level after each one, and the marks against figures worked out by hand.
 * A limit of 1000 bytes makes the default marks readable: soft 800/750,
 * high 900/850, critical 970/920 (enter/leave).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "mem/overload.h"
#include "tide/error.h"
#include "util/err.h"

enum { N = TIDE_OVERLOAD_NORMAL, S = TIDE_OVERLOAD_SOFT, H = TIDE_OVERLOAD_HIGH,
       C = TIDE_OVERLOAD_CRITICAL };

static void start(tide_mem_overload *st, uint64_t limit)
{
    tide_mem_overload_opts o;

    tide_mem_overload_opts_init(&o);
    o.limit_bytes = limit;
    expect_ok(tide_mem_overload_init(st, &o), "init with the default levels");
    expect_u64(st->level, N, "a new state is normal");
}

/* One reading, and the level it must give (returned and stored). */
static void step(tide_mem_overload *st, uint64_t counted, int pressure, int want)
{
    char what[160];
    int got = tide_mem_overload_update(st, counted, pressure);

    snprintf(what, sizeof what, "reading %" PRIu64 " bytes, pressure %d", counted, pressure);
    if (got != want)
        fail_msg("%s: expected level %s, got %s", what, tide_mem_overload_level_name(want),
                 tide_mem_overload_level_name(got));
    expect_u64(st->level, want, what);
    expect_u64(st->pressure, pressure, what);
}

static void default_marks_of_1000_bytes(void **state)
{
    tide_mem_overload st;
    (void)state;

    start(&st, 1000);
    expect_u64(st.enter[S], 800, "soft enter");
    expect_u64(st.leave[S], 750, "soft leave");
    expect_u64(st.enter[H], 900, "high enter");
    expect_u64(st.leave[H], 850, "high leave");
    expect_u64(st.enter[C], 970, "critical enter");
    expect_u64(st.leave[C], 920, "critical leave");
    expect_u64(st.enter[N], 0, "normal has no enter mark");
    expect_u64(st.leave[N], 0, "normal has no leave mark");
}

static void hysteresis_going_up_and_down_one_level_at_a_time(void **state)
{
    tide_mem_overload st;
    (void)state;

    start(&st, 1000);
    step(&st, 799, 0, N);   /* one byte short of soft */
    step(&st, 800, 0, S);   /* the enter mark itself enters */
    step(&st, 760, 0, S);   /* below enter, above leave: stays */
    step(&st, 750, 0, S);   /* the leave mark itself stays */
    step(&st, 799, 0, S);
    step(&st, 749, 0, N);   /* below leave: out */
    step(&st, 760, 0, N);   /* in the band from below: stays normal */
    step(&st, 800, 0, S);
    step(&st, 900, 0, H);
    step(&st, 851, 0, H);
    step(&st, 850, 0, H);
    step(&st, 849, 0, S);
    step(&st, 970, 0, C);
    step(&st, 920, 0, C);
    step(&st, 919, 0, H);
    step(&st, 960, 0, H);   /* below critical's enter: high */
}

static void one_reading_moves_several_levels(void **state)
{
    tide_mem_overload st;
    (void)state;

    start(&st, 1000);
    step(&st, 2000, 0, C);  /* above the limit: critical, from normal at once */
    step(&st, 100, 0, N);   /* and straight back down */
    step(&st, 905, 0, H);   /* normal to high */
    step(&st, 760, 0, S);   /* high to soft: below high's leave, above soft's */
    step(&st, 975, 0, C);   /* soft to critical */
    step(&st, 800, 0, S);   /* critical to soft: below 920 and 850, not below 750 */
    step(&st, 975, 0, C);
    step(&st, 0, 0, N);     /* critical to normal */
}

static void pressure_holds_soft_and_never_lifts_higher(void **state)
{
    tide_mem_overload st;
    (void)state;

    start(&st, 1000);
    step(&st, 0, 1, S);     /* no bytes, but the kernel stalls: soft */
    step(&st, 10, 1, S);
    step(&st, 10, 0, N);    /* pressure over, far below the leave mark */
    step(&st, 899, 1, S);   /* pressure lifts to soft only, not to high */
    step(&st, 900, 1, H);   /* the bytes lift to high */
    step(&st, 10, 1, S);    /* the bytes fall; pressure holds soft, not normal */
    step(&st, 760, 0, S);   /* pressure over, reading in soft's band: stays (hysteresis) */
    step(&st, 700, 0, N);
}

static void marks_are_exact_for_odd_limits(void **state)
{
    tide_mem_overload st;
    tide_mem_overload_opts o;
    (void)state;

    /* 1000003 * 80 / 100 = 800002.4, * 75 / 100 = 750002.25, ... floors. */
    start(&st, 1000003);
    expect_u64(st.enter[S], 800002, "soft enter of 1000003");
    expect_u64(st.leave[S], 750002, "soft leave of 1000003");
    expect_u64(st.enter[H], 900002, "high enter of 1000003");
    expect_u64(st.leave[H], 850002, "high leave of 1000003");
    expect_u64(st.enter[C], 970002, "critical enter of 1000003");
    expect_u64(st.leave[C], 920002, "critical leave of 1000003");
    step(&st, 800001, 0, N);
    step(&st, 800002, 0, S);

    /* 99 bytes: 79.2 -> 79, 74.25 -> 74, ... */
    start(&st, 99);
    expect_u64(st.enter[S], 79, "soft enter of 99");
    expect_u64(st.leave[S], 74, "soft leave of 99");
    expect_u64(st.enter[C], 96, "critical enter of 99");

    /* The largest limit: no overflow of limit * pct. UINT64_MAX =
     * 100 * 184467440737095516 + 15; * 97 / 100: 17893341751498265052 + 14. */
    start(&st, UINT64_MAX);
    expect_u64(st.enter[C], 17893341751498265066ull, "critical enter of UINT64_MAX");
    expect_u64(st.enter[S], 14757395258967641292ull, "soft enter of UINT64_MAX");
    step(&st, UINT64_MAX, 0, C);

    /* Levels of 100: the whole limit enters critical. */
    tide_mem_overload_opts_init(&o);
    o.limit_bytes = 777;
    o.pct[C] = 100;
    expect_ok(tide_mem_overload_init(&st, &o), "critical at 100");
    expect_u64(st.enter[C], 777, "critical enter at 100% of 777");
    expect_u64(st.leave[C], 738, "critical leave at 95% of 777 (738.15)");
}

/* init must refuse `o` with TIDE_EINVAL and a message holding `part`, and
 * leave the state it was given untouched. */
static void refused(const tide_mem_overload_opts *o, const char *part, const char *what)
{
    tide_mem_overload st, before;

    memset(&st, 0x5a, sizeof st);
    before = st;
    expect_error(tide_mem_overload_init(&st, o), TIDE_EINVAL, what);
    expect_contains(tide_last_error(), part, what);
    if (memcmp(&st, &before, sizeof st) != 0) fail_msg("%s: a refused init changed the state", what);
}

static void invalid_options_are_einval_with_clear_messages(void **state)
{
    tide_mem_overload_opts o;
    (void)state;

    tide_mem_overload_opts_init(&o);
    o.limit_bytes = 1000;
    o.pct[S] = 90; o.pct[H] = 80;
    refused(&o, "memory levels 90,80,97: each must be above the one before", "90,80,97");
    o.pct[S] = 80; o.pct[H] = 80;
    refused(&o, "memory levels 80,80,97: each must be above the one before", "80,80,97 (equal)");
    o.pct[H] = 90; o.pct[C] = 90;
    refused(&o, "memory levels 80,90,90", "80,90,90");
    o.pct[S] = 0; o.pct[C] = 97;
    refused(&o, "the first at least 1", "a soft level of 0");

    tide_mem_overload_opts_init(&o);
    o.limit_bytes = 1000;
    o.pct[C] = 101;
    refused(&o, "critical 101 is above 100", "critical 101");

    tide_mem_overload_opts_init(&o);
    o.limit_bytes = 1000;
    o.hysteresis_pct = 80;
    refused(&o, "memory hysteresis 80 with memory levels 80,90,97: must be from 1 to 79",
            "hysteresis equal to soft");
    o.hysteresis_pct = 95;
    refused(&o, "memory hysteresis 95", "hysteresis above soft");
    o.hysteresis_pct = 0;
    refused(&o, "memory hysteresis 0", "hysteresis 0");

    tide_mem_overload_opts_init(&o);
    refused(&o, "memory limit 0", "limit 0 (the default of opts_init)");
}

static void level_names(void **state)
{
    (void)state;
    expect_str(tide_mem_overload_level_name(N), "normal", "0");
    expect_str(tide_mem_overload_level_name(S), "soft", "1");
    expect_str(tide_mem_overload_level_name(H), "high", "2");
    expect_str(tide_mem_overload_level_name(C), "critical", "3");
    expect_str(tide_mem_overload_level_name(4), "?", "4");
    expect_str(tide_mem_overload_level_name(-1), "?", "-1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_marks_of_1000_bytes),
        cmocka_unit_test(hysteresis_going_up_and_down_one_level_at_a_time),
        cmocka_unit_test(one_reading_moves_several_levels),
        cmocka_unit_test(pressure_holds_soft_and_never_lifts_higher),
        cmocka_unit_test(marks_are_exact_for_odd_limits),
        cmocka_unit_test(invalid_options_are_einval_with_clear_messages),
        cmocka_unit_test(level_names),
    };

    return cmocka_run_group_tests_name("mem_overload", tests, NULL, NULL);
}
