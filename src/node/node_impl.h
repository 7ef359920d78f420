/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * node_impl.h: the node handle's insides, shared by the files of the node
 * part that make it up (node.c the handle, sweeper.c the sweeper thread,
 * keycount.c the key count, rotator.c online delete, governor.c the
 * memory limit). Nothing outside src/node includes it.
 *
 * Locks (sweeper.c's essay has the invariants they keep): round_lock, one
 * sweep round at a time; state_lock, the reports, totals, schedule and
 * stop; taken in that order, never the other.
 */
#ifndef TIDE_NODE_IMPL_H
#define TIDE_NODE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "node/node.h"
#include "util/hist.h"

struct tide_node {
    tide_node_opts  opts;
    char           *dir;
    tide_gens      *gens;         /* one plain store, or generations */
    tide_archive   *archive;      /* NULL: no archive (opts.archive_on 0) */
    int             replica;      /* an archive replica: no writes, reads through */
    tide_cache     *cache;
    tide_keycache  *keycache;
    unsigned        key_size;

    _Atomic uint64_t put_gen;

    /* the key count (tide_node_keys) */
    pthread_t        count_thread;
    int              count_started;
    _Atomic int      count_stop;         /* close asks the count to stop */
    _Atomic int      keys_known;
    uint64_t         count_limit;        /* nudb.dat size at open */
    uint64_t         count_inserts0;     /* the store's inserts at open */
    _Atomic uint64_t keys_at_open;

    /* counters of the read and write paths */
    _Atomic uint64_t puts, puts_existing, gets, gets_cache, gets_keycache, gets_store,
                     gets_missing;
    _Atomic uint64_t cache_dropped;      /* cached copies of a dropped generation erased */
    _Atomic uint64_t gets_archive;       /* misses of every local generation the archive answered */
    _Atomic uint64_t gets_unavailable;   /* ... that failed because it did not answer */
    _Atomic uint64_t archive_sync_waits, archive_sync_failures; /* archive_sync=archive */
    _Atomic uint64_t keycache_seal_epoch;/* the archive's seal epoch the key cache knows */

    pthread_mutex_t round_lock;   /* one round at a time */
    pthread_mutex_t state_lock;   /* reports, totals, schedule, stop */
    pthread_cond_t  state_cond;   /* CLOCK_MONOTONIC */
    int             stop;
    int             thread_started;
    pthread_t       thread;
    uint64_t        next_due_ns;  /* monotonic */
    uint64_t        seq;
    tide_node_totals totals;      /* the sweep half; the get/put half is atomic */
    tide_hist       sweep_hist, trim_hist;  /* under state_lock */
    tide_node_sweep_report reports[TIDE_NODE_REPORTS];

    /* online delete (rotator.c): rot_lock serialises rotations (the
     * thread's and tide_node_rotate's); rot_state_lock guards the ring,
     * the totals, can_delete and the rotator's stop, and is never held
     * across a rotation or a trim */
    pthread_mutex_t rot_check_lock;      /* one trigger look at a time */
    pthread_mutex_t rot_lock;
    pthread_mutex_t rot_state_lock;
    pthread_cond_t  rot_cond;            /* CLOCK_MONOTONIC */
    int             rot_stop;
    int             rot_started;
    pthread_t       rot_thread;
    uint64_t        rot_seq;
    uint64_t        can_delete;          /* the advisory_delete allowance */
    uint64_t        opened_unix_us;      /* the time trigger's start before any rotation */
    /* under rot_check_lock: */
    uint64_t        rot_failures_seen;   /* commit failures at the last health look */
    uint64_t        rot_next_try_ns;     /* after an abandoned attempt: not before */
    int             rot_advisory_logged; /* the advisory gate's line, once per due episode */
    int             rot_rewrite_logged;  /* the failed manifest rewrite's line, once per episode */
    tide_node_rotation_totals rot_totals;/* histograms in rot_hist */
    tide_hist       rot_hist[TIDE_NODE_ROTATION_NPHASES], rot_trim_hist;
    tide_node_rotation_report rotations[TIDE_NODE_ROTATIONS];

    /* the memory governor (governor.c; its essay has the invariants).
     * mem_check_lock: one look at a time (the thread's, a test's,
     * configure's), held across the look's sweep round, so taken before
     * round_lock; everything marked (c) is under it. mem_lock: the status
     * (mem_st) and the sweep peak, held only for copies, never across a
     * reading or a round; taken after round_lock (the sweeper resets the
     * peak at a round's start). */
    pthread_mutex_t  mem_check_lock;
    pthread_mutex_t  mem_lock;
    _Atomic int      mem_level;          /* TIDE_OVERLOAD_*: tide_node_overload_level */
    _Atomic uint64_t mem_rejected;       /* tide_node_put refusals */
    tide_mem_overload mem_ov;            /* (c) valid when mem_st.limit_bytes > 0 */
    unsigned         mem_pressure_pct;   /* (c) in force (opts' until a configure) */
    unsigned         mem_pct[TIDE_OVERLOAD_LEVELS], mem_hyst; /* (c) in force */
    int              mem_shrunk;         /* (c) the divisor in force on the caches (1: none) */
    uint64_t         mem_last_act_us;    /* (c) the governor's last round, governor clock */
    uint64_t         mem_resweep_ms;     /* (c) the resweep interval in force (backs off) */
    uint64_t         mem_resweep_base;   /* (c) counted when the interval was last reset */
    uint64_t         mem_last_us;        /* under mem_lock: the last look, governor clock */
    uint64_t         mem_psi_fired_us;   /* (c) the trigger's last firing, governor clock
                                            (pressure held a window after it) */
    int              mem_psi_fired;      /* (c) it fired at least once */
    int              mem_cg_failing;     /* (c) the cgroup's figures failed last (one WARN
                                            per streak) */
    int              mem_reconf;         /* (c) the next look follows a configure (its log
                                            line's reason says "reconfigured") */
    int              mem_failing;        /* (c) the last reading failed (one WARN per streak) */
    size_t           mem_cache_budget, mem_cache_hard, mem_keycache_hard; /* as opened */
    char            *mem_cgroup_path;    /* opts.cgroup_path copied */
    char            *mem_psi_path;       /* opts.psi_path copied (NULL when NULL) */
    int              mem_psi_fd;         /* the PSI trigger, or -1 */
    _Atomic int      mem_psi_seen;       /* the thread's poll took a POLLPRI (the kernel
                                            hands each event to one poll only) */
    int              mem_wake[2];        /* close writes to [1] to end the thread's poll */
    int              mem_inited;         /* the locks exist (node_free's test) */
    int              mem_started;
    _Atomic int      mem_stopping;       /* stop's wake: the thread ends (else a wake is
                                            a configure's: a look at once) */
    pthread_t        mem_thread;
    tide_node_memory_status mem_st;      /* under mem_lock; changes[] is a ring (mem_ring) */
    size_t           mem_ring;           /* next slot of mem_st.changes to write */
};

/* Start the sweeper thread (sweeper.c). Returns 0 or the pthread error. */
int ti_node_sweeper_start(tide_node *n);

/* Start the key count's walk of nudb.dat up to its size at open, when the
 * file is small enough (keycount.c); logs when it is not. Never fails: a
 * count that cannot start leaves tide_node_keys at "unknown". */
void ti_node_count_start(tide_node *n, uint64_t dat_file_bytes, uint64_t inserts);

/* Stop the key count and wait for it (close). */
void ti_node_count_stop(tide_node *n);

/* The rotator's locks (open) and their end (node_free); start the thread
 * when online delete is on and rotate_check_ms > 0 (rotator.c). Returns 0
 * or the pthread error. */
void ti_node_rotator_init(tide_node *n);
int  ti_node_rotator_start(tide_node *n);
/* Stop the thread and wait for an attempt in progress (close, before the
 * store or generations close). */
void ti_node_rotator_stop(tide_node *n);
void ti_node_rotator_destroy(tide_node *n);

/* The governor (governor.c): its state at open (the PSI trigger, the
 * marks; TIDE_EINVAL for bad memory options, TIDE_ENOMEM), the thread's
 * start when memory_poll_ms > 0 (0 or the pthread error), its stop (close:
 * first of all the threads) and the end of its state (node_free). */
int  ti_node_governor_init(tide_node *n);
int  ti_node_governor_start(tide_node *n);
void ti_node_governor_stop(tide_node *n);
void ti_node_governor_destroy(tide_node *n);

/* A sweep round began (sweeper.c, under round_lock): the sweep peak starts
 * again from the latest reading. */
void ti_node_governor_round_began(tide_node *n);

/* One sweep round on the calling thread (sweeper.c); with `force_release`
 * its release call is made whatever the trim policy says (unless opts.trim
 * is 0): the governor's round. */
void ti_node_round(tide_node *n, tide_node_sweep_report *r, int force_release);

/* The measured release: opts.release, or tide_mem_trim (sweeper.c); a
 * sweep round's and a rotation's. */
int ti_node_release(tide_node *n, tide_mem_trim_report *r);

/* The store's info, and the insert-pool and commit accounts set from it. */
void ti_node_refresh_store_accounts(tide_node *n, tide_store_info *info);

#endif
