/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_mallopt.c: Tide's own mallopt calls, made and remembered.
 *
 * glibc has no call to read its options back, so tide_mem_alloc_options_read
 * shows the mallopt parameters Tide set from this record. Only the
 * parameters Tide has a reason to set are accepted, and only when glibc
 * serves malloc.
 *
 * Invariants:
 *   1. The record holds at most one entry per known parameter (the last
 *      accepted value) and is read and written under `mallopt_lock`.
 *   2. Only a call glibc accepted (mallopt returned 1) is recorded.
 *
 * Never: forward a mallopt to glibc when glibc does not serve malloc.
 */
#include "mem/alloc_impl.h"

#include <malloc.h>
#include <pthread.h>

#include "tide/error.h"
#include "util/err.h"

static const struct { int param; const char *name; } mallopt_params[] = {
    { M_MMAP_THRESHOLD, "mmap_threshold" },
    { M_TRIM_THRESHOLD, "trim_threshold" },
    { M_TOP_PAD,        "top_pad" },
    { M_MMAP_MAX,       "mmap_max" },
    { M_ARENA_MAX,      "arena_max" },
    { M_ARENA_TEST,     "arena_test" },
    { M_MXFAST,         "mxfast" },
    { M_PERTURB,        "perturb" },
};
#define N_MALLOPT (sizeof mallopt_params / sizeof mallopt_params[0])

static pthread_mutex_t mallopt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int set; int value; } mallopt_done[N_MALLOPT];

int tide_mem_alloc_mallopt(int param, int value)
{
    size_t i;
    int family, ok;

    for (i = 0; i < N_MALLOPT; i++)
        if (mallopt_params[i].param == param) break;
    if (i == N_MALLOPT)
        return tide_err_set(TIDE_EINVAL, "mallopt: parameter %d is not one Tide sets "
                            "(mmap_threshold, trim_threshold, top_pad, mmap_max, arena_max, "
                            "arena_test, mxfast, perturb)", param);
    family = tide_mem_alloc_family();
    if (family != TIDE_MEM_ALLOC_GLIBC)
        return tide_err_set(TIDE_EINVAL, "mallopt(%s, %d): malloc is served by %s, not glibc; "
                            "not applied", mallopt_params[i].name, value,
                            tide_mem_alloc_family_name(family));
    pthread_mutex_lock(&mallopt_lock);
    ok = mallopt(param, value);
    if (ok == 1) {
        mallopt_done[i].set = 1;
        mallopt_done[i].value = value;
    }
    pthread_mutex_unlock(&mallopt_lock);
    if (ok != 1)
        return tide_err_set(TIDE_EINVAL, "mallopt(%s, %d): glibc refused the value",
                            mallopt_params[i].name, value);
    return 0;
}

void ti_alloc_mallopt_each(void (*fn)(void *arg, const char *name, int value), void *arg)
{
    pthread_mutex_lock(&mallopt_lock);
    for (size_t i = 0; i < N_MALLOPT; i++)
        if (mallopt_done[i].set) fn(arg, mallopt_params[i].name, mallopt_done[i].value);
    pthread_mutex_unlock(&mallopt_lock);
}
