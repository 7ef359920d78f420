/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trim.c: one release call, measured.
 *
 * The point of trimming is to return what the allocator keeps after the
 * application frees memory, and the only honest evidence that it worked is
 * the kernel's count of resident pages before and after. So a trim is:
 * statm, faults and clock before; the release; clock and faults after;
 * statm after. The faults and the clock bracket the release alone, so the
 * reads of statm are not in the duration.
 *
 * Invariants:
 *   1. The release is made even when a measurement fails: a sweeper must
 *      not keep memory because /proc was unreadable once.
 *   2. rss_delta == rss_after - rss_before, both as read from statm.
 *   3. The report is zeroed first and fully written on every return.
 *
 * Never: log, allocate, or take a pad argument.
 */
#include "mem/trim.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"

int tide_mem_trim(tide_mem_trim_report *r)
{
    return tide_mem_trim_pad(0, r);
}

int tide_mem_trim_pad(size_t pad, tide_mem_trim_report *r)
{
    tide_mem_proc_faults f0 = { 0, 0 }, f1 = { 0, 0 };
    uint64_t t0, t1;
    int rc = 0, e, family, have_faults;

    memset(r, 0, sizeof *r);
    family = tide_mem_alloc_family();
    r->family = family;

    e = tide_mem_proc_statm_rss(&r->rss_before);
    if (e && !rc) rc = e;
    e = tide_mem_proc_thread_faults(&f0);
    if (e && !rc) rc = e;
    have_faults = e == 0;

    t0 = tide_clock_mono_ns();
    e = tide_mem_alloc_release(family, pad, &r->result);
    t1 = tide_clock_mono_ns();
    if (e && !rc) rc = e;

    e = tide_mem_proc_thread_faults(&f1);
    if (e && !rc) rc = e;
    have_faults = have_faults && e == 0;
    e = tide_mem_proc_statm_rss(&r->rss_after);
    if (e && !rc) rc = e;

    r->duration_ns = t1 - t0;
    if (have_faults) {
        r->minflt = f1.minflt - f0.minflt;
        r->majflt = f1.majflt - f0.majflt;
    }
    r->rss_delta = (int64_t)r->rss_after - (int64_t)r->rss_before;
    return rc;
}

int tide_mem_trim_format(const tide_mem_trim_report *r, char *buf, size_t cap)
{
    int64_t before_kb = (int64_t)(r->rss_before / 1024);
    int64_t after_kb = (int64_t)(r->rss_after / 1024);

    return snprintf(buf, cap,
                    "trim allocator=%s result=%d rss_before=%" PRId64 "kB rss_after=%" PRId64
                    "kB delta=%" PRId64 "kB duration_us=%" PRIu64 " minflt=%" PRIu64
                    " majflt=%" PRIu64,
                    tide_mem_alloc_family_name(r->family), r->result, before_kb, after_kb,
                    after_kb - before_kb, r->duration_ns / 1000, r->minflt, r->majflt);
}
