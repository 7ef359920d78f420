/*
 * rotator.c: online delete in the node: the rotation reports, the
 * advisory_delete allowance and (once the node runs on generations) the
 * rotator thread.
 *
 * This first version serves a node on one plain store: every rotation is
 * refused (TIDE_EINVAL, "online delete is off"), can_delete keeps its
 * value, and the reports stay empty.
 *
 * Invariants:
 *   1. rotations[] holds the last min(rot_seq, TIDE_NODE_ROTATIONS)
 *      attempts; rotations[(seq - 1) % TIDE_NODE_ROTATIONS] is attempt seq.
 *   2. can_delete starts at 0 ("never") at every open.
 *
 * Never: hold rot_state_lock across a rotation or a release.
 */
#include "node/node_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

void ti_node_rotator_init(tide_node *n)
{
    pthread_condattr_t ca;

    pthread_mutex_init(&n->rot_lock, NULL);
    pthread_mutex_init(&n->rot_state_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->rot_cond, &ca);
    pthread_condattr_destroy(&ca);
    n->can_delete = 0;
}

int ti_node_rotator_start(tide_node *n)
{
    (void)n;
    return 0;
}

void ti_node_rotator_stop(tide_node *n)
{
    pthread_mutex_lock(&n->rot_state_lock);
    n->rot_stop = 1;
    pthread_cond_broadcast(&n->rot_cond);
    pthread_mutex_unlock(&n->rot_state_lock);
    if (n->rot_started) pthread_join(n->rot_thread, NULL);
    n->rot_started = 0;
}

void ti_node_rotator_destroy(tide_node *n)
{
    pthread_cond_destroy(&n->rot_cond);
    pthread_mutex_destroy(&n->rot_state_lock);
    pthread_mutex_destroy(&n->rot_lock);
}

int tide_node_keep_keys(tide_node *n, const void *keys, size_t count, tide_node_rotation_report *r)
{
    (void)keys, (void)count, (void)r;
    return tide_err_set(TIDE_EINVAL, "%s: online delete is off: no generations to keep keys in", n->dir);
}

int tide_node_rotate(tide_node *n, const char *trigger, tide_node_rotation_report *r)
{
    (void)trigger, (void)r;
    return tide_err_set(TIDE_EINVAL, "%s: online delete is off: no generations to rotate", n->dir);
}

/* "never", "always", "now" or a decimal count. */
static int parse_can_delete(tide_node *n, const char *value, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (strcasecmp(value, "never") == 0) { *out = 0; return 0; }
    if (strcasecmp(value, "always") == 0) { *out = UINT64_MAX; return 0; }
    if (strcasecmp(value, "now") == 0) {
        tide_gens_info gi;
        tide_node_gens_info(n, &gi);
        *out = gi.rotations + 1;
        return 0;
    }
    if (value[0] < '0' || value[0] > '9') goto bad;
    errno = 0;
    v = strtoull(value, &end, 10);
    if (*end != '\0' || errno != 0) goto bad;
    *out = v;
    return 0;
bad:
    return tide_err_set(TIDE_EINVAL, "can_delete: '%.64s' is not a rotation count, never, always or now",
                        value);
}

int tide_node_can_delete(tide_node *n, const char *value, uint64_t *now)
{
    uint64_t v = 0;
    int rc = 0;

    if (value != NULL) {
        rc = parse_can_delete(n, value, &v);
        if (rc) return rc;
    }
    pthread_mutex_lock(&n->rot_state_lock);
    if (value != NULL) n->can_delete = v;
    if (now) *now = n->can_delete;
    pthread_cond_broadcast(&n->rot_cond);
    pthread_mutex_unlock(&n->rot_state_lock);
    return 0;
}

size_t tide_node_rotations(tide_node *n, tide_node_rotation_report *out, size_t cap)
{
    size_t k = 0;

    pthread_mutex_lock(&n->rot_state_lock);
    for (uint64_t s = n->rot_seq; s > 0 && k < cap && k < TIDE_NODE_ROTATIONS; s--, k++)
        out[k] = n->rotations[(s - 1) % TIDE_NODE_ROTATIONS];
    pthread_mutex_unlock(&n->rot_state_lock);
    return k;
}

void tide_node_rotation_totals_get(tide_node *n, tide_node_rotation_totals *out)
{
    pthread_mutex_lock(&n->rot_state_lock);
    *out = n->rot_totals;
    out->can_delete = n->can_delete;
    for (int i = 0; i < 6; i++) tide_hist_snapshot(&n->rot_hist[i], &out->phase_duration[i]);
    tide_hist_snapshot(&n->rot_trim_hist, &out->trim_duration);
    pthread_mutex_unlock(&n->rot_state_lock);
}

void tide_node_gens_info(tide_node *n, tide_gens_info *out)
{
    tide_store_info si;

    memset(out, 0, sizeof *out);
    tide_store_get_info(n->store, &si);
    out->count = 1;
    out->gens[0].writable = 1;
    out->gens[0].dat_file_bytes = si.dat_file_bytes;
    out->gens[0].key_file_bytes = si.key_file_bytes;
    out->gens[0].log_file_bytes = si.log_file_bytes;
    out->disk_bytes = si.dat_file_bytes + si.key_file_bytes + si.log_file_bytes;
    out->newest_bytes = si.dat_file_bytes;
}
