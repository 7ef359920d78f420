/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * node.h: the node, which is the store, the node cache and the key cache
 * under one handle, and the sweeper that keeps the caches and the heap in bounds.
 *
 * Life of a node:
 *
 *     tide_node_opts o;  tide_node_opts_init(&o);
 *     o.dir = "./data";  o.sweep_interval_ms = 60000;
 *     tide_node *n;      tide_node_open(&n, &o);      -- starts the sweeper
 *     tide_node_put(n, key, value, len);
 *     tide_cache_obj *v; tide_node_get(n, key, &v);   -- a reference, or ENOTFOUND
 *     ... tide_cache_obj_data(v) ...; tide_cache_obj_release(v);
 *     tide_node_close(n);                             -- stops the sweeper, commits
 *
 * A fetch looks in the node cache, then the key cache (a recent miss answers
 * ENOTFOUND without I/O), then the store. What the store finds goes into the
 * node cache; what it does not find goes into the key cache. A put goes to
 * the store, then the node cache, and erases the key from the key cache.
 *
 * The sweeper is one thread. Each round sweeps the node cache, then the key
 * cache, then makes at most one release call as opts.trim_policy says
 * (tide_mem_trim, or opts.hooks.release in tests; the default policy: after every
 * sweep), then records a tide_node_sweep_report, then waits
 * sweep_interval_ms counted from the end of that round. tide_node_sweep()
 * runs the same round on the calling thread (POST /v1/admin/sweep); rounds
 * never overlap.
 *
 * Every function is thread-safe unless it says otherwise.
 */
#ifndef TIDE_NODE_H
#define TIDE_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"
#include "cache/cache.h"
#include "cache/keycache.h"
#include "gen/gens.h"
#include "mem/overload.h"
#include "mem/pressure.h"
#include "mem/trim.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/hist.h"

struct tide_io;

typedef struct tide_node tide_node;

/* What the node calls instead of tide_mem_trim (tests): must fill *r and
 * return as tide_mem_trim does. */
typedef int (*tide_node_release_fn)(void *arg, tide_mem_trim_report *r);

/* The rotator's health gate, replaced (tests): 1 when a rotation may run,
 * else 0 with the reason in why (cap bytes). Called on the rotator's
 * thread, or tide_node_rotate_check's caller; must not call the node.
 * (It gives tests a deterministic way to hold the gate shut, so an
 * abandoned attempt is tested by events, not by a real commit backlog.) */
typedef int (*tide_node_health_fn)(void *arg, char *why, size_t cap);

/* ---- the memory limit (governor.c, docs/MEMORY-LIMIT.md) ---- */

/* One reading of the memory figures the governor compares with the limit. */
typedef struct tide_node_memory_reading {
    uint64_t rss_bytes;           /* the process's anonymous resident memory,
                                     RssAnon + RssShmem (/proc/self/status;
                                     VmRSS on kernels before 4.5): file-backed
                                     pages (code, nudb.key's map) left out */
    int      has_cgroup;          /* the cgroup figures below hold */
    tide_mem_cgroup_usage cgroup; /* of opts.cgroup_path */
    int      has_psi;             /* psi holds (opts.psi_path was read) */
    tide_mem_psi psi;
    int      psi_triggered;       /* the PSI trigger descriptor polled POLLPRI
                                     since the last reading */
    int      cgroup_failed;       /* opts.cgroup_path is set and its figures could
                                     not be read (has_cgroup 0): the governor keeps
                                     the level on such a reading (rather than
                                     silently counting the RSS alone) and counts
                                     it in cgroup_failures */
} tide_node_memory_reading;

/* What the governor calls instead of reading /proc and the cgroup (tests):
 * fill *r and return 0, or an error (the reading is skipped, counted as a
 * failed reading, and the level kept). Called on the governor's thread (or
 * tide_node_memory_check's caller); must not call the node. */
typedef int (*tide_node_memory_fn)(void *arg, tide_node_memory_reading *r);

/* Called with each step of a sweep round, in order: "sweep node_cache",
 * "sweep key_cache", "release", "done". For tests; must not call the node. */
typedef void (*tide_node_trace_fn)(void *arg, const char *step);

/* When a sweep round makes its release call (the lab compares them; see
 * docs/LAB.md for the measurements behind the default). */
enum {
    TIDE_TRIM_ALWAYS   = 0,   /* after every sweep (the default) */
    TIDE_TRIM_NEVER    = 1,   /* never: the lab's control */
    TIDE_TRIM_EVERY    = 2,   /* after every N-th sweep */
    TIDE_TRIM_FREED    = 3,   /* when the caches' sweeps freed at least N bytes */
    TIDE_TRIM_FREE_PCT = 4    /* when the allocator holds free more than N% of RSS */
};
/* The largest N of every:N and P of free-pct:P. */
#define TIDE_TRIM_EVERY_MAX    1000000u
#define TIDE_TRIM_FREE_PCT_MAX 99u


/* Parse "always", "never", "every:N" (N >= 1), "freed:SIZE" (a size, e.g.
 * 64MiB) or "free-pct:P" (1..99) into *policy and *param. Returns 0 or
 * TIDE_EINVAL with the reason in tide_last_error(). */
int tide_trim_policy_parse(const char *text, int *policy, uint64_t *param);

/* The policy as text in the form parse reads ("every:4"). */
void tide_trim_policy_format(int policy, uint64_t param, char *buf, size_t cap);

/*
 * What tests and the lab put in a node's place: the release, the clock,
 * the file I/O, the memory readings, the rotation's gate and traces.
 * tide_node_opts_init leaves every one NULL, the real thing, and so does
 * tided: an operator never sets one.
 */
typedef struct tide_node_hooks {
    tide_node_release_fn release; /* NULL (default): tide_mem_trim_pad with
                                     trim_pad */
    void    *release_arg;
    tide_node_trace_fn trace;     /* NULL (default) */
    void    *trace_arg;
    tide_gens_trace_fn gens_trace;/* NULL (default): passed to tide_gens_opts.trace (the
                                     rotation's steps), for tests */
    void    *gens_trace_arg;
    uint64_t (*clock_us)(void *arg); /* the caches' clock, and the memory governor's (its
                                     resweep interval and time per level, so
                                     tests need no wall clock); NULL: monotonic */
    void    *clock_arg;
    struct tide_io *io;           /* NULL (default): POSIX */
    tide_node_health_fn health;   /* NULL (default): the built-in gate (the insert pools
                                     under one burst, no commit failed since the
                                     last look, RSS under rotation_max_rss when set,
                                     the memory level below HIGH); tests put a hook here */
    void    *health_arg;
    const char *psi_path;         /* NULL (default): TIDE_MEM_PSI_SYSTEM; "": none.
                                     Copied at open. */
    tide_node_memory_fn memory_reading; /* NULL (default): /proc, the cgroup, PSI */
    void    *memory_reading_arg;
} tide_node_hooks;

/*
 * A node's options, in three parts: the operator's knobs, each filled by
 * tided from the setting its row in the settings table names
 * (src/node/config.c: NODE(field), or a to_node function for the few that
 * change on the way, as sweep_interval's seconds become
 * sweep_interval_ms); the embedder's, which no setting reaches (tided
 * keeps tide_node_opts_init's, or fills them from what it found: the
 * cgroup, the key cache's derived hard limit); and the hooks.
 */
typedef struct tide_node_opts {
    /* ---- the operator's knobs (tided's settings) ---- */
    const char *dir;              /* the store's directory; required (data_dir) */
    unsigned block_size;          /* for a new store; default 4096 (nudb_block_size) */
    int      store_key_map;       /* 1 (default): the stores' lookups search
                                     nudb.key through a read-only map; 0: they
                                     pread it (tide_store_opts.pread) */
    /* node cache (docs/ARCHITECTURE.md, "The node cache") */
    size_t   cache_target;        /* entries; default 262144 (tiny) */
    unsigned cache_age_s;         /* default 30 */
    size_t   cache_budget;        /* bytes a sweep shrinks to; default 64 MiB;
                                     0: unbounded */
    int      cache_arena;         /* 1 (default): the node cache's objects
                                     and entries, and the key cache's
                                     entries, live in segment arenas
                                     (tide_cache_opts.arena,
                                     tide_keycache_opts.arena) that each
                                     sweep compacts and releases; 0: malloc */
    size_t   cache_arena_segment; /* the arena's segment; default 2 MiB */
    unsigned cache_arena_reserve; /* empty segments kept; default 1 */
    size_t   cache_arena_evacuate;/* bytes a sweep may move to compact the
                                     arena; default 64 MiB; 0: none (empty
                                     segments are still released) */
    int      cache_arena_hugepages;/* 1: MADV_HUGEPAGE on each segment
                                     (tide_cache_opts.arena_hugepages);
                                     0 (default) */
    /* key cache */
    size_t   key_cache_size;      /* target entries; default 65536 (as config.c) */
    unsigned key_cache_age_s;     /* default 30 */
    /* store */
    size_t   insert_burst;        /* the store's burst_bytes; default 4 MiB;
                                     0: the store's default */
    uint64_t index_lag_bytes;     /* the store's index_lag_bytes (the
                                     deferred index's tail budget);
                                     default 0: off (store_index_lag) */
    uint64_t store_page_memory;   /* the store's page_memory: the memory
                                     whose page cache holds its files (the
                                     cgroup's limit); 0 (default): the
                                     machine's */
    /* sweeper */
    uint64_t sweep_interval_ms;   /* default 10000; 0: no sweeper thread
                                     (tide_node_sweep only) */
    int      trim_policy;         /* TIDE_TRIM_*; default TIDE_TRIM_ALWAYS */
    uint64_t trim_param;          /* N, bytes or percent (see the enum) */
    size_t   trim_pad;            /* glibc's malloc_trim(pad): bytes left at
                                     the top of the main heap; default 0 */
    /* online delete (docs/ROTATION.md). Generations are on when
     * online_delete_on is 1; the triggers below say when the rotator
     * thread rotates (any one that is due). A directory that already holds
     * generations opens as generations whatever online_delete_on says
     * (tide_gens_opts.online_delete). */
    int      online_delete_on;    /* 0 (default): a plain store; 1: generations */
    uint64_t online_delete;       /* rotate after this many objects were written into
                                     the newest generation; 0 (default): no object
                                     trigger (only the others, or POST /v1/admin/rotate) */
    uint64_t rotate_bytes;        /* ... after the newest's nudb.dat reaches this; 0: none */
    uint64_t rotate_interval_s;   /* ... this long after the last rotation; 0: none */
    unsigned generations;         /* G kept, TIDE_GEN_MIN..TIDE_GEN_MAX; 0 (default): the
                                     manifest's own keep, 2 for a directory without one,
                                     so a restart that does not say G never shrinks the
                                     ring. A value below the manifest's is honoured (the
                                     next rotation drops down to it) and logged at WARN
                                     with the generations it will drop. */
    int      advisory_delete;     /* 1: a due rotation waits for can_delete to allow it
                                     (tide_node_can_delete); default 0 */
    unsigned delete_batch;        /* keep-list keys copied forward per batch; default 100 */
    unsigned back_off_ms;         /* pause between two batches and two delete steps;
                                     default 100 */
    uint64_t delete_chunk;  /* a dropped nudb.dat is cut by this much per step;
                                     default 64 MiB */
    unsigned recovery_wait_s;     /* an unhealthy node (commit backlog or a failed
                                     commit) waits this long before the gate is tried
                                     again; default 5 */
    unsigned rotation_wait_max_s; /* after waiting this long in all the attempt is
                                     abandoned, logged and counted; default 300 */
    int      trim_after_rotation; /* 1 (default): one measured release after a rotation
                                     that dropped a generation (the same call as a
                                     sweep's: hooks.release or tide_mem_trim) */
    uint64_t rotation_max_rss;    /* the built-in gate also waits while the process RSS
                                     (/proc/self/statm) is over this; 0 (default): no RSS
                                     gate. (An RSS bound of the operator's own, beside
                                     memory_limit, which the gate heeds through the
                                     memory level. The node cache needs no gate: it
                                     never exceeds its hard limit.) */
    /* The memory limit (governor.c). The governor thread reads the
     * figures every memory_poll_ms, keeps the peaks, and with a limit set
     * moves the overload level (mem/overload.h) and acts on it: on entering
     * SOFT or above, and every TIDE_NODE_MEMORY_RESWEEP_MS while the counted
     * bytes stay at or above SOFT's mark, one sweep round with the caches'
     * targets shrunk (tide_cache_set_limits: budget and hard limit divided
     * by 2 at SOFT, 4 at HIGH, 8 at CRITICAL, on a rise only when that is
     * stricter than the divisor in force; a fall to a level above NORMAL
     * keeps the stricter divisor (99% -> 84% -> 91% stays /8: the caches'
     * limits never grow on a rise); restored at NORMAL
     * only) and one measured release (unless trim is 0 or trim_policy is
     * never). At HIGH and above tide_node_put
     * is refused with TIDE_EOVERLOAD; the server reads the level itself
     * (tide_node_overload_level) to refuse bodies and connections. Nothing
     * acknowledged is ever dropped: inserts already pending are committed. */
    uint64_t memory_limit;        /* bytes; 0 (default): no limit, the level stays NORMAL
                                     (the readings and peaks are still kept) */
    unsigned memory_pct[TIDE_OVERLOAD_LEVELS]; /* the levels' marks in percent;
                                     default 0, 80, 90, 97 (memory_levels) */
    unsigned memory_hysteresis_pct; /* default 5 (memory_hysteresis); these and
                                     memory_pct are checked at open even without a
                                     limit (TIDE_EINVAL), so a later configure that
                                     keeps them is not refused forever */
    uint64_t memory_poll_ms;      /* default 100; 0: no governor thread (tests call
                                     tide_node_memory_check) */
    unsigned memory_pressure_pct; /* PSI "some" avg10 (the larger of hooks.psi_path's and,
                                     with a v2 cgroup_path, the group's memory.pressure;
                                     the trigger is opened on the group's file then)
                                     at or above this percent (or the
                                     trigger firing: memory_pressure_pct percent of a
                                     2 s window) holds the level at SOFT or above; it
                                     lets go when avg10 falls under half of it and
                                     the trigger has not fired for one window;
                                     0: pressure ignored; default 10 */
    /* The archive in Ceph RADOS (docs/ARCHIVE.md), off unless archive_on.
     * A primary (archive.replica 0) needs online delete: its gens and
     * data_dir are the node's own, filled at open; a replica opens dir as
     * a plain store it never writes, and refuses puts (TIDE_EROFS).
     * archive's accounts are the node's too. */
    int      archive_on;          /* 0 (default) or 1 (archive=rados) */
    int      archive_sync;        /* 1: tide_node_sync also waits until the archive
                                     holds what it made durable (archive_sync=archive) */
    tide_archive_opts archive;    /* conf, pool, prefix, user, timeout_s, keep,
                                     chunk_bytes, inflight, filter_budget, replica */
    /* ---- the embedder's: no setting reaches them ---- */
    int      create_if_missing;   /* 1 (default): create an empty store (and
                                     the directory) when dir holds none */
    unsigned key_size;            /* for a new store; default 32. An existing
                                     store's key size rules: keys passed to
                                     put/get must have tide_node_key_size() bytes */
    size_t   cache_hard_limit;    /* never exceeded; 0 (default): twice the
                                     budget (none when the budget is 0) */
    size_t   key_cache_hard_limit;/* bytes; 0 (default): 32 MiB, or none when
                                     key_cache_size is 0 */
    unsigned commit_interval_ms;  /* default 1000 */
    int      trim;                /* 1 (default): release as trim_policy says;
                                     0: sweep only (the "no trim" lab variant;
                                     the report's trimmed is 0) */
    uint64_t count_keys_max_bytes;/* count the stored keys in the background
                                     at open (a read of nudb.dat) when the
                                     data file is at most this big; default
                                     4 GiB; 0: never count */
    uint64_t rotate_check_ms;     /* how often the rotator looks at its triggers;
                                     default 1000; 0: no rotator thread (only
                                     tide_node_rotate_check and the admin) */
    const char *cgroup_path;      /* the cgroup directory whose usage counts beside RSS
                                     (tide_mem_cgroup_limit_info.path), or NULL (default):
                                     RSS alone counts. Copied at open. */
    int      cgroup_version;      /* 1 or 2 with cgroup_path */
    /* ---- the hooks: tests and the lab; NULL in tided ---- */
    tide_node_hooks hooks;
} tide_node_opts;

/* How often the governor repeats its sweep and release while the counted
 * bytes stay at or above SOFT's mark, at first. Each resweep that frees
 * less than TIDE_NODE_MEMORY_RESWEEP_MIN_FREED and whose release does not
 * lower the RSS doubles the interval, up to TIDE_NODE_MEMORY_RESWEEP_MAX_MS
 * (without the back-off a node held at 82% by what it stores would run a
 * round and a malloc_trim every second forever); a level change, or the counted bytes
 * rising more than the hysteresis above where the back-off began, resets
 * it. The resweep's release, like the rise's, is skipped with opts.trim 0
 * and with trim_policy "never" (the operator asked for no release calls). */
#define TIDE_NODE_MEMORY_RESWEEP_MS 1000
#define TIDE_NODE_MEMORY_RESWEEP_MAX_MS 30000
#define TIDE_NODE_MEMORY_RESWEEP_MIN_FREED (1024u * 1024u)

/* Fill `o` with the defaults above (dir NULL). */
void tide_node_opts_init(tide_node_opts *o);

/* What one sweep round did. */
typedef struct tide_node_sweep_report {
    uint64_t seq;                 /* 1 for the node's first round */
    uint64_t started_unix_us;     /* wall clock at the start */
    uint64_t sweep_ns;            /* the cache sweeps, the release excluded */
    int      trimmed;             /* the release call was made */
    uint64_t freed_bytes;         /* what the two cache sweeps let go */
    int      trim_rc;             /* its return (0 or an error code) */
    tide_mem_trim_report trim;    /* zero when !trimmed */
    tide_cache_sweep_report    node_cache;
    tide_keycache_sweep_report key_cache;
    tide_cache_arena_report    arena;  /* the node cache's evacuation and
                                          release, after the sweeps and
                                          before the trim (zero with
                                          cache_arena off) */
    int      arena_rc;            /* its return (0 or an error code) */
    tide_cache_arena_report    key_arena;  /* the key cache's, after the
                                          node cache's (its entries only) */
    int      key_arena_rc;
    uint64_t consumer_bytes;      /* every consumer's count summed
                                     (tide_mem_account_total), and */
    uint64_t anon_rss;            /* anonymous RSS (RssAnon + RssShmem),
                                     at the round's end: what the memory
                                     promise compares (docs/MEMORY-LIMIT.md);
                                     anon_rss 0 when unreadable */
} tide_node_sweep_report;

#define TIDE_NODE_REPORTS 64      /* rounds kept for tide_node_reports */

/* Running totals since open. */
typedef struct tide_node_totals {
    uint64_t sweeps;
    uint64_t sweep_ns;            /* sum of report.sweep_ns */
    uint64_t trims;               /* release calls made */
    uint64_t trims_skipped;       /* rounds the trim policy let pass */
    uint64_t trims_lowered;       /* ... that lowered RSS (rss_delta < 0) */
    uint64_t trim_ns;             /* sum of trim.duration_ns */
    uint64_t trim_released_bytes; /* sum of -rss_delta over trims that lowered RSS */
    uint64_t trim_minflt, trim_majflt;
    int64_t  last_trim_rss_delta; /* of the latest trim (0 before the first) */
    tide_hist sweep_duration;     /* report.sweep_ns, cumulative buckets */
    tide_hist trim_duration;      /* trim.duration_ns, cumulative buckets */
    uint64_t arena_evacuate_ns;   /* sum of report.arena.evacuate_ns (the arena
                                     counts its releases' time itself) */
    uint64_t key_arena_evacuate_ns; /* sum of report.key_arena.evacuate_ns */
    uint64_t puts, puts_existing; /* put calls that stored; that found the key */
    uint64_t gets, gets_cache, gets_keycache, gets_store, gets_missing;
                                  /* gets = cache + store hits + missing;
                                     gets_keycache counts misses answered
                                     by the key cache (also in missing) */
} tide_node_totals;

/*
 * Open the store in opts->dir (creating it when allowed and absent), make
 * the caches, and start the sweeper when sweep_interval_ms > 0. The caches
 * count their bytes into the node_cache and key_cache accounts
 * (mem/account.h). Returns 0; TIDE_EINVAL (no dir, a bad option: the message
 * names it); TIDE_ENOENT (no store and create_if_missing is 0); the store's
 * open errors (TIDE_EBUSY when another process holds it, TIDE_ECORRUPT, ...);
 * TIDE_ENOMEM. On error nothing is left open.
 * Cost: the store's open (recovery when needed), the caches' slot arrays,
 * one thread.
 */
int tide_node_open(tide_node **out, const tide_node_opts *opts);

/*
 * Stop the sweeper (waiting for a round in progress), interrupt a rotation
 * in progress at its next delete step and stop the rotator
 * (tide_node_interrupt), commit and close the store, free the caches. Returns 0 or the store's close error (the node is
 * freed in every case). NULL is ignored. No other call may be in progress
 * or follow.
 */
int tide_node_close(tide_node *n);

/* The store's key size: every key passed to put and get has this many bytes. */
unsigned tide_node_key_size(const tide_node *n);

/*
 * Store `len` bytes under `key`. Returns 0; TIDE_EEXIST when the key is
 * stored (the value is not compared and the stored one stays; when only an
 * older generation holds it, that value is copied forward into the newest,
 * as a read's would be: a client writes a key again because it is live, so
 * it must live through the next rotation; docs/ROTATION.md); TIDE_EOVERLOAD when
 * the memory level is HIGH or above (nothing stored: the caller answers 503
 * and the client retries; checked before the existence check); TIDE_ETOOBIG; the
 * store's write errors (TIDE_ENOSPC, TIDE_EIO, TIDE_ECLOSED after a failed
 * commit); TIDE_EROFS on an archive replica (nothing stored). Write-once
 * holds across the local generations: a key only the archive holds is
 * stored again (the archive is not asked on a put; reads find the newest).
 * On success the object is in the node cache.
 * Durability: the value is durable after the next commit; tide_node_sync
 * waits for it.
 * Cost: the store's insert (an existence check: a key-file read, sometimes a
 * data-file read; may wait when the insert pool is full), one malloc of
 * len + 32 bytes and one cache insert.
 */
int tide_node_put(tide_node *n, const void *key, const void *value, size_t len);

/*
 * The memory level's check of tide_node_put alone: 0 below HIGH, else
 * TIDE_EOVERLOAD (with the message tide_node_put gives), counted in
 * rejected_writes as a refused put is. So a caller that hands the put to
 * another thread refuses it before queueing (tided). Cost: two atomic
 * loads.
 */
int tide_node_put_admit(tide_node *n);

/*
 * Find `key`. On success *out is a reference the caller releases with
 * tide_cache_obj_release. Returns 0, TIDE_ENOTFOUND, or the store's read
 * errors (TIDE_EIO, TIDE_ECORRUPT), which are not remembered in the key cache.
 * With an archive, a key no local generation holds is looked up there
 * (tide_archive_fetch) before it is called absent; TIDE_EUNAVAIL when the
 * archive does not answer (not remembered either). A primary copies what
 * the archive gave into the newest generation.
 * It is tide_node_get_cached, then, when that cannot answer,
 * tide_node_get_miss: each cache is consulted once.
 * Cost: a cache hit is one hash and one lock; a miss adds a key-cache probe
 * and, unless that answers, the store's fetch (a key-file and a data-file
 * read) and one cache insert.
 */
int tide_node_get(tide_node *n, const void *key, tide_cache_obj **out);

/* tide_node_get_cached's answers besides 0 and TIDE_ENOTFOUND. */
enum {
    TIDE_NODE_GET_MISS  = 1,   /* neither cache knows the key */
    TIDE_NODE_GET_STALE = 2    /* *out is the node cache's copy from an
                                  older generation: to be copied forward
                                  (or forgotten, its generation dropped) */
};

/*
 * tide_node_get's half that needs no I/O, an event loop's call: 0 with
 * *out a reference (a node-cache hit in the newest generation);
 * TIDE_ENOTFOUND when the key cache remembers the miss (both counted as
 * tide_node_get counts them); else, counting nothing, TIDE_NODE_GET_STALE
 * with *out the cached copy from an older generation, or
 * TIDE_NODE_GET_MISS with *out NULL: the caller hands either to
 * tide_node_get_miss on a thread that may wait for the disk. Never reads a
 * file, never writes. Cost: one hash and one lock, plus the key cache's
 * probe on a miss.
 */
int tide_node_get_cached(tide_node *n, const void *key, tide_cache_obj **out);

/*
 * The other half, after tide_node_get_cached answered
 * TIDE_NODE_GET_STALE (`stale` its *out, whose reference this call takes)
 * or TIDE_NODE_GET_MISS (`stale` NULL); neither cache is consulted again.
 * A stale copy is copied forward into the newest generation and served
 * (a store insert), or, its generation dropped, forgotten; then, or for a
 * miss, the store's fetch: the value goes into the node cache, a miss into
 * the key cache. Returns and *out as tide_node_get. A put of the key
 * between the two halves is found by the fetch (the store has it before
 * the cache). Cost: a copy-forward's insert, or the store's fetch and one
 * cache insert.
 */
int tide_node_get_miss(tide_node *n, const void *key, tide_cache_obj *stale, tide_cache_obj **out);

/* Wait until every put that returned before this call is durable (the
 * store's tide_store_sync), and with archive_sync also in the archive
 * (each local generation's nudb.dat up to its durable size). Returns 0,
 * the commit's error, or TIDE_EUNAVAIL when the archive did not take the
 * bytes within archive.timeout_s (the put is durable locally all the
 * same). Blocks for up to one commit, plus the archive's wait; may be
 * called from any number of threads at once. */
int tide_node_sync(tide_node *n);

/* The node's archive, or NULL when archive_on is 0. Owned by the node. */
tide_archive *tide_node_archive(tide_node *n);

/* Syncs that waited for the archive (failed 0), or of those the ones it
 * did not take in time (failed 1). Atomic loads. */
uint64_t tide_node_archive_sync_waits(tide_node *n, int failed);

/*
 * Run one sweep round now on the calling thread (after any round in
 * progress) and copy its report to *r (may be NULL). The sweeper's next
 * round is then due sweep_interval_ms after this one ends.
 * Cost: the cache sweeps and the release (for glibc, tens to hundreds of
 * milliseconds on a large heap).
 */
void tide_node_sweep(tide_node *n, tide_node_sweep_report *r);

/* Copy up to `cap` of the latest reports, newest first, into out; returns
 * how many were copied (at most TIDE_NODE_REPORTS). Cost: one lock. */
size_t tide_node_reports(tide_node *n, tide_node_sweep_report *out, size_t cap);

/* A snapshot of the totals. */
void tide_node_totals_get(tide_node *n, tide_node_totals *out);

/* Statistics of the parts, each a consistent snapshot of its own (not of
 * all three together). The store's info also refreshes the
 * store_insert_pool and store_commit accounts. Cost: three locks. */
void tide_node_cache_stats(tide_node *n, tide_cache_stats *out);
/* The node cache's arena's counters (mem/arena.h); 1 when it has one
 * (cache_arena on), else 0 with *out zeroed. */
int tide_node_cache_arena_stats(tide_node *n, tide_arena_stats *out);
/* The key cache's, likewise. */
int tide_node_key_cache_arena_stats(tide_node *n, tide_arena_stats *out);
void tide_node_keycache_stats(tide_node *n, tide_keycache_stats *out);
void tide_node_store_info(tide_node *n, tide_store_info *out);

/*
 * The number of keys in the store, exact: the data records counted at open
 * (every data record is one key: NuDB never deletes) plus the inserts
 * since. Returns 1 and sets *keys once the count is done; 0 while it runs,
 * when it was not made (the data file is over count_keys_max_bytes) or
 * failed. The count reads nudb.dat up to its size at open on a thread of
 * its own, never blocking the node. Cost: two atomic loads.
 */
int tide_node_keys(tide_node *n, uint64_t *keys);

/* The store's key-file maps' pages this process has mapped in
 * (tide_gens_key_map_resident): file-backed, part of RssFile, never of
 * RssAnon; not the file's page-cache residency. 0 or TIDE_EIO.
 * Thread-safe; one 8 KiB read of /proc/self/pagemap per 4 MiB of key file. */
int tide_node_key_map_resident(tide_node *n, uint64_t *bytes);
/* The same for the data files' maps (the records fetches read in place). */
int tide_node_dat_map_resident(tide_node *n, uint64_t *bytes);

/* ---- online delete (rotator.c) ---- */

#define TIDE_NODE_ROTATIONS 32    /* reports kept for tide_node_rotations */

/* What one rotation attempt did (GET /v1/rotations, POST /v1/admin/rotate). */
typedef struct tide_node_rotation_report {
    uint64_t seq;                 /* 1 for the node's first attempt */
    uint64_t started_unix_us;
    char     trigger[16];         /* "objects", "bytes", "time", "admin" */
    int      rc;                  /* 0, or why it failed or was abandoned */
    int      abandoned;           /* the gate stayed shut past rotation_wait_max_s */
    char     error[256];          /* tide_last_error() when rc != 0 */
    uint64_t gate_wait_ns;        /* waiting for health and can_delete */
    uint64_t keep_ns;             /* copying the keep-list forward */
    uint64_t keep_keys, keep_copied, keep_missing; /* keys handed over; copied; in no
                                     generation */
    uint64_t keep_copied_bytes;
    uint64_t trim_ns;             /* the release after the drop (0 when none) */
    int      trimmed;
    int      trim_rc;
    tide_mem_trim_report trim;
    tide_gens_rotate_report gens; /* create, sync, manifest, switch, drop (all 0 when
                                     rc != 0 before the rotation ran) */
    uint64_t total_ns;
} tide_node_rotation_report;

/* Running totals of the rotator since open. */
#define TIDE_NODE_ROTATION_NPHASES 7   /* TIDE_NODE_ROTATION_PHASES' count */

typedef struct tide_node_rotation_totals {
    uint64_t rotations;           /* done */
    uint64_t failures;            /* attempts that returned an error */
    uint64_t abandoned;           /* attempts the gate gave up on */
    uint64_t gate_waits;          /* times the gate made an attempt wait */
    uint64_t archive_waits;       /* health looks that found a generation to drop
                                     not yet sealed in the archive */
    uint64_t dropped;             /* generations dropped */
    uint64_t deleted_bytes;
    uint64_t keep_copied, keep_copied_bytes;
    uint64_t trims, trims_lowered;
    uint64_t trim_released_bytes;
    uint64_t can_delete;          /* the advisory_delete allowance: rotations up to this
                                     manifest count may run (UINT64_MAX: always) */
    tide_hist phase_duration[TIDE_NODE_ROTATION_NPHASES]; /* gate, keep, create, sync,
                                     manifest, switch, drop; then trim in trim_duration
                                     (sync added: the kept stores' syncs around the hide,
                                     which manifest used to include) */
    tide_hist trim_duration;
} tide_node_rotation_totals;

/* The phases of tide_node_rotation_totals.phase_duration, in order. */
#define TIDE_NODE_ROTATION_PHASES { "gate", "keep", "create", "sync", "manifest", "switch", "drop" }

/*
 * Copy the `count` keys at `keys` (count * tide_node_key_size bytes) forward
 * into the newest generation (tide_gens_keep), delete_batch keys at a time
 * with back_off_ms pauses between batches; adds to r's keep_* fields (r may
 * be NULL). Returns 0 or the first read/insert error (the keys before it
 * were copied); TIDE_EINVAL without generations. A missing key is counted,
 * not an error. It takes no lock against rotations: a rotation of the
 * rotator thread may come between it and a following tide_node_rotate, and
 * with G = 2 that rotation makes the generation the keys went into the
 * oldest, which tide_node_rotate then drops. Nothing in the server calls
 * it; use tide_node_rotate_keep (one list), or tide_node_keep_at and
 * tide_node_rotate_expect (a list in pieces).
 */
int tide_node_keep_keys(tide_node *n, const void *keys, size_t count,
                        tide_node_rotation_report *r);

/*
 * One piece of a keep-list handed over in pieces (POST /v1/admin/keep):
 * tide_node_keep_keys under the rotation lock, so no rotation runs while
 * it copies, and *rotations (may be NULL) gets the manifest's rotation
 * count the keys were copied at. Pass the count of the first piece to
 * tide_node_rotate_expect: it rotates only when no rotation came since.
 * Returns as tide_node_keep_keys. Blocks the rotator's rotations for its
 * length (a batch pause is back_off_ms).
 */
int tide_node_keep_at(tide_node *n, const void *keys, size_t count, tide_node_rotation_report *r,
                      uint64_t *rotations);

/*
 * Rotate as tide_node_rotate does (r filled whole, may be NULL), but only
 * when the manifest's rotation count is `expect`, checked and rotated
 * under one hold of the rotation lock. Returns 0 (rotated; *present, may
 * be NULL, the count after it); 1 when the count is not `expect` (nothing
 * rotated or recorded; *present the count now: keys kept at `expect` are
 * then in the second-newest generation or gone, so send them again at the
 * count now and retry); the rotation's error; TIDE_EINVAL without
 * generations. (The optimistic half of a keep-list in pieces.)
 */
int tide_node_rotate_expect(tide_node *n, uint64_t expect, const char *trigger, tide_node_rotation_report *r,
                            uint64_t *present);

/*
 * Rotate now (trigger "admin": the gates of health and advisory_delete are
 * not applied, the operator asked), and make the measured release when a
 * generation was dropped and trim_after_rotation is on. r's keep_* fields
 * are kept as the caller set them (so a caller of tide_node_keep_keys may
 * pass the same r; pass a zeroed r otherwise); r is filled otherwise.
 * Records the report (tide_node_rotations). Returns 0 or the rotation's
 * error (TIDE_EINVAL without generations). Serialised with the rotator
 * thread's rotations. Blocks for the whole rotation (its deletes pause
 * back_off_ms between steps): call it from a worker, never an event loop.
 */
int tide_node_rotate(tide_node *n, const char *trigger, tide_node_rotation_report *r);

/*
 * The keep-list and the rotation under one hold of the rotation lock, so no
 * rotation of the rotator thread comes between them (with G = 2 it would
 * make the generation the keys were copied into the older one, which this
 * rotation then drops). POST /v1/admin/rotate calls this; r is filled
 * whole (may be NULL). A keep-list error rotates nothing and is recorded
 * as a failed attempt. Returns 0, the keep-list's or the rotation's error,
 * TIDE_EINVAL without generations (nothing recorded). (tide_node_keep_keys
 * then tide_node_rotate would leave that window open.)
 */
int tide_node_rotate_keep(tide_node *n, const void *keys, size_t count, const char *trigger,
                          tide_node_rotation_report *r);

/*
 * One look of the rotator, on the calling thread: when a trigger is due
 * and advisory_delete allows it, the health gate (waiting recovery_wait_s
 * between looks, abandoning after rotation_wait_max_s), the rotation and
 * the release after it. Returns 1 when an attempt was made and recorded
 * (its report in *r, may be NULL), 0 when nothing was due, the advisory
 * gate was shut, an abandoned attempt's recovery wait is still running,
 * or the node is closing. The rotator thread calls it every
 * rotate_check_ms; with rotate_check_ms 0 tests call it themselves.
 */
int tide_node_rotate_check(tide_node *n, tide_node_rotation_report *r);

/*
 * advisory_delete's allowance, as rippled's can_delete: `value` is a
 * number N (rotations up to manifest count N may run), "never" (0),
 * "always" (UINT64_MAX) or "now" (the next rotation may run: the present
 * count plus one); NULL only reads. *now (may be NULL) gets the value in
 * force. Returns 0 or TIDE_EINVAL (bad text, or a number over 2^53: the
 * message says what is accepted). Kept in memory: after a restart it is "never" again, so a node
 * with advisory_delete never deletes what the operator did not allow.
 */
int tide_node_can_delete(tide_node *n, const char *value, uint64_t *now);

/*
 * For a shutdown: stop the rotator (its waits end) and interrupt the
 * generations (tide_gens_interrupt), so a rotation dropping a generation
 * gradually, the thread's or an admin's on another thread, returns at its
 * next delete step (the report's delete_steps short; the next open removes
 * the rest), and every later rotation is TIDE_ECLOSED. Reads and writes go
 * on. Cannot be undone; tide_node_close does it first itself. tided calls
 * it before it waits for its rotate worker.
 */
void tide_node_interrupt(tide_node *n);

/* Copy up to `cap` of the latest rotation reports, newest first; returns
 * how many (at most TIDE_NODE_ROTATIONS). Cost: one lock. */
size_t tide_node_rotations(tide_node *n, tide_node_rotation_report *out, size_t cap);

/* Snapshots. Cost: one lock each (gens: see tide_gens_get_info). */
void tide_node_rotation_totals_get(tide_node *n, tide_node_rotation_totals *out);
void tide_node_gens_info(tide_node *n, tide_gens_info *out);

/* ---- the memory limit (governor.c) ---- */

/* The governor's actions, the label of tide_overload_actions_total. */
enum {
    TIDE_NODE_ACT_SWEEP,          /* a sweep round the governor ran */
    TIDE_NODE_ACT_SHRINK,         /* the caches' targets lowered (a level rose) */
    TIDE_NODE_ACT_RESTORE,        /* the caches' targets given back (NORMAL again) */
    TIDE_NODE_ACT_TRIM,           /* a release call the governor made */
    TIDE_NODE_ACT_SHED_WRITES,    /* HIGH entered: writes and bodies refused */
    TIDE_NODE_ACT_STOP_ACCEPTING, /* CRITICAL entered: no new connections */
    TIDE_NODE_ACT_COUNT
};
/* "sweep", "shrink", "restore", "trim", "shed_writes", "stop_accepting". */
const char *tide_node_action_name(int action);

/* One level change, as logged (once, at WARN going up and INFO going down). */
typedef struct tide_node_level_change {
    uint64_t unix_us;
    int      from, to;            /* TIDE_OVERLOAD_* */
    uint64_t counted_bytes, rss_bytes, cgroup_bytes; /* cgroup_bytes: usage less page
                                     cache; 0 without a cgroup */
    int      pressure;            /* the pressure flag of that reading */
} tide_node_level_change;

#define TIDE_NODE_LEVEL_CHANGES 16   /* kept for tide_node_memory_get */

typedef struct tide_node_memory_status {
    uint64_t limit_bytes;         /* opts.memory_limit (0: none) */
    int      level;               /* TIDE_OVERLOAD_* */
    uint64_t marks_enter[TIDE_OVERLOAD_LEVELS], marks_leave[TIDE_OVERLOAD_LEVELS];
    unsigned pct[TIDE_OVERLOAD_LEVELS], hysteresis_pct, pressure_pct; /* in force (opts',
                                     or the last tide_node_memory_configure's; added by the
                                     node helper: the options stay as opened) */
    const char *counts;           /* which figure counted in the latest reading:
                                     "rss" or "cgroup" (usage less page cache),
                                     whichever was larger */
    uint64_t counted_bytes;       /* max(rss, cgroup usage - page cache) */
    tide_node_memory_reading last;/* the latest reading */
    uint64_t readings, reading_failures;
    uint64_t cgroup_failures;     /* readings whose cgroup figures failed (the level
                                     kept; one WARN per streak, INFO when it reads) */
    int      pressure;            /* the pressure flag now */
    int      psi_trigger;         /* 1: a PSI trigger descriptor is polled; 0: the
                                     averages only (why in psi_trigger_error) */
    char     psi_trigger_error[160];
    uint64_t peak_start_bytes;    /* counted bytes, highest reading since open (and,
                                     on a kernel without RssAnon, where the
                                     reading is VmRSS, the kernel's VmHWM when
                                     larger) */
    uint64_t peak_sweep_bytes;    /* highest reading since the last sweep round began
                                     (each round's start sets it to the latest reading:
                                     the figure at the start, until the next reading) */
    uint64_t level_changes;
    uint64_t level_seconds_us[TIDE_OVERLOAD_LEVELS]; /* time spent at each level */
    uint64_t actions[TIDE_NODE_ACT_COUNT];
    uint64_t rejected_writes;     /* tide_node_put calls refused with TIDE_EOVERLOAD */
    size_t   nchanges;            /* newest first */
    tide_node_level_change changes[TIDE_NODE_LEVEL_CHANGES];
} tide_node_memory_status;

/* The level now (TIDE_OVERLOAD_*): one relaxed atomic load, for the server
 * on every request and accept. */
int tide_node_overload_level(const tide_node *n);

/* A snapshot of the governor's figures. Cost: one lock, and (without opts.memory_reading)
 * one read of /proc/self/status for VmHWM. */
void tide_node_memory_get(tide_node *n, tide_node_memory_status *out);

/*
 * Change the limit and its marks while the node runs (tided's SIGHUP: an
 * operator raises a limit, or a container's limit changed): `limit_bytes`
 * (0: none, the level drops to NORMAL), `pct` (TIDE_OVERLOAD_LEVELS
 * entries as opts.memory_pct, NULL: keep), `hysteresis_pct` and
 * `pressure_pct` (UINT_MAX: keep). The level is recomputed at the next
 * reading, which is made at once, from the level in force (its
 * hysteresis kept: at HIGH with 87% of an unchanged limit it stays HIGH);
 * a change it causes is logged with the reason "reconfigured". Cost: with
 * the governor thread running (memory_poll_ms > 0) the marks are set and
 * the thread woken through its pipe: the reading, the level's change and
 * its round and release (tens to hundreds of ms for glibc's malloc_trim)
 * happen there, so the caller (tided's loop 0 on SIGHUP) is not stalled,
 * and tide_node_memory_get may show the new marks with the old level for
 * that moment. With memory_poll_ms 0 the whole look runs on the caller's
 * thread before this returns. The caches' budgets derived from
 * the old limit are not recomputed (they were fixed at startup), and a PSI
 * trigger is not reopened for a new pressure_pct (the averages use it at
 * once). Returns 0
 * or TIDE_EINVAL (as tide_mem_overload_init; nothing changed).
 */
int tide_node_memory_configure(tide_node *n, uint64_t limit_bytes, const unsigned *pct,
                               unsigned hysteresis_pct, unsigned pressure_pct);

/*
 * One look of the governor on the calling thread: a reading (opts.
 * memory_reading or the real one), the level's update, its log line and
 * actions. Returns the level after it. With memory_poll_ms 0 tests call it
 * themselves; with the thread running it serialises with it.
 * Cost: the reading (a few small /proc and cgroup reads); on a level rise
 * or a resweep, a sweep round and a release.
 */
int tide_node_memory_check(tide_node *n);

/* The options the node runs with (defaults filled in). The memory_limit,
 * memory_pct, memory_hysteresis_pct and memory_pressure_pct here stay as
 * opened: tide_node_memory_configure's are in tide_node_memory_get. */
const tide_node_opts *tide_node_options(const tide_node *n);

#endif
