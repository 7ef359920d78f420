/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.h: the node's settings, each with the place its value came from.
 *
 * Build a tide_config in this order, the way tided's main does:
 *
 *   tide_config_defaults(&c);                    built-in defaults, auto node_size
 *   tide_config_load_file(&c, path);             when --config FILE was given
 *   tide_config_apply_env(&c, NULL, NULL);       TIDE_* variables
 *   tide_config_apply_args(&c, argc, argv);      --flags
 *   tide_config_finish(&c);                      preset fills the rest; checks
 *
 * Each step overwrites a setting only when its source ranks at least as high
 * as the setting's current source (flag > env > file > preset > default), so
 * the order of the calls does not change the result. All functions are for
 * startup: none is thread-safe, apply_args uses getopt_long's globals.
 */
#ifndef TIDE_NODE_CONFIG_H
#define TIDE_NODE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/*
 * The largest byte count a size setting takes (cache_budget, insert_burst,
 * trim_policy freed:SIZE) and the largest entry count (cache_target,
 * key_cache_size): 4 PiB = 2^52, or SIZE_MAX / 2 where size_t is narrower.
 * 2^52 bytes is the most physical memory a 64-bit x86 or arm64 machine can
 * address (52-bit physical addresses), so no cache can use more; twice it
 * (the node cache's hard limit, the store's two insert pools) is 2^53, which
 * still fits size_t, int64_t (the byte counters, /v1/status' JSON) and a
 * double exactly (/metrics). An entry takes more than a byte, so the same
 * bound serves for counts.
 */
#define TIDE_CONFIG_BYTES_MAX ((uint64_t)(SIZE_MAX / 2 < (1ull << 52) ? SIZE_MAX / 2 : (1ull << 52)))

/* The longest data_dir, in bytes: PATH_MAX (4096) less "/nudb.dat" and its
 * NUL, so that the store's files can be named. */
#define TIDE_CONFIG_DATA_DIR_MAX (4096 - sizeof "/nudb.dat")

enum { TIDE_NODE_TINY, TIDE_NODE_SMALL, TIDE_NODE_MEDIUM, TIDE_NODE_LARGE, TIDE_NODE_HUGE,
       TIDE_NODE_SIZE_COUNT };

/* Where a value came from, lowest rank first. TIDE_SRC_DERIVED: a value
 * computed from another source, the
 * cgroup's memory limit (tide_config_apply_cgroup; where "cgroup v1
 * /sys/fs/cgroup/memory/x") or a share of memory_limit (finish; where
 * "memory_limit 20%"). It ranks above the preset it replaces and below
 * every operator's source (file, env, flag), so `kind >= TIDE_SRC_FILE`
 * still means "set by the operator", and describe can print the where
 * alone ("cache_budget=13421772(memory_limit 20%, 12.8 MiB)": a derived
 * size that is no whole unit is printed in bytes, exact, and its size for
 * people follows the where) rather than as a default's or a preset's.
 * Names are stable; compare kinds by name. */
enum { TIDE_SRC_DEFAULT, TIDE_SRC_PRESET, TIDE_SRC_DERIVED, TIDE_SRC_FILE, TIDE_SRC_ENV, TIDE_SRC_FLAG };

/* The settings, in the order tide_config_describe prints them. */
enum {
    TIDE_CFG_NODE_SIZE, TIDE_CFG_DATA_DIR, TIDE_CFG_LISTEN, TIDE_CFG_SWEEP_INTERVAL,
    TIDE_CFG_CACHE_TARGET, TIDE_CFG_CACHE_AGE, TIDE_CFG_CACHE_BUDGET, TIDE_CFG_INSERT_BURST,
    TIDE_CFG_KEY_CACHE_SIZE, TIDE_CFG_KEY_CACHE_AGE, TIDE_CFG_NUDB_BLOCK_SIZE, TIDE_CFG_STORE_KEY_MAP,
    TIDE_CFG_LOG_LEVEL, TIDE_CFG_LOG_FORMAT, TIDE_CFG_MMAP_THRESHOLD, TIDE_CFG_ARENA_MAX,
    TIDE_CFG_METRICS_TOKEN, TIDE_CFG_METRICS_PUBLIC,
    TIDE_CFG_HTTP_THREADS, TIDE_CFG_MAX_OBJECT_SIZE, TIDE_CFG_ADMIN_TOKEN, TIDE_CFG_METRICS_SMAPS, TIDE_CFG_TRIM_POLICY, TIDE_CFG_TRIM_PAD,
    TIDE_CFG_HTTP_MAX_CONNECTIONS, TIDE_CFG_HTTP_MAX_PER_CLIENT, TIDE_CFG_HTTP_IDLE_TIMEOUT,
    TIDE_CFG_HTTP_REQUEST_TIMEOUT, TIDE_CFG_HTTP_BODY_BUDGET,
    /* tided's store workers: [node] keys */
    TIDE_CFG_STORE_WORKERS, TIDE_CFG_STORE_QUEUE,
    /* online delete: [node_db] keys, rippled's names where they
     * mean the same */
    TIDE_CFG_ONLINE_DELETE, TIDE_CFG_GENERATIONS, TIDE_CFG_ADVISORY_DELETE, TIDE_CFG_ROTATE_BYTES,
    TIDE_CFG_ROTATE_INTERVAL, TIDE_CFG_DELETE_BATCH, TIDE_CFG_BACK_OFF_MS, TIDE_CFG_DELETE_CHUNK,
    TIDE_CFG_RECOVERY_WAIT, TIDE_CFG_ROTATION_WAIT_MAX, TIDE_CFG_TRIM_AFTER_ROTATION,
    TIDE_CFG_ROTATION_MAX_RSS,
    /* the memory limit (docs/MEMORY-LIMIT.md): [node] keys */
    TIDE_CFG_MEMORY_LIMIT, TIDE_CFG_MEMORY_LEVELS, TIDE_CFG_MEMORY_HYSTERESIS,
    TIDE_CFG_MEMORY_POLL_MS, TIDE_CFG_MEMORY_PRESSURE,
    /* the tokens from files (config_systemd.c): [http] keys */
    TIDE_CFG_METRICS_TOKEN_FILE, TIDE_CFG_ADMIN_TOKEN_FILE,
    /* the deferred index (docs/DURABILITY.md): a [node] key */
    TIDE_CFG_STORE_INDEX_LAG,
    /* how long a request may take to arrive (conn.c): [node] keys */
    TIDE_CFG_HTTP_HEADER_TIMEOUT, TIDE_CFG_HTTP_BODY_MIN_RATE, TIDE_CFG_HTTP_BODY_GRACE,
    /* the node cache's segment arena (docs/MEMORY-LIMIT.md): [node] keys */
    TIDE_CFG_CACHE_ARENA, TIDE_CFG_CACHE_ARENA_SEGMENT, TIDE_CFG_CACHE_ARENA_RESERVE,
    TIDE_CFG_CACHE_ARENA_EVACUATE, TIDE_CFG_CACHE_ARENA_HUGEPAGES,
    /* the archive in Ceph RADOS (docs/ARCHIVE.md): [archive] keys */
    TIDE_CFG_ARCHIVE, TIDE_CFG_ARCHIVE_CONF, TIDE_CFG_ARCHIVE_POOL, TIDE_CFG_ARCHIVE_PREFIX,
    TIDE_CFG_ARCHIVE_USER, TIDE_CFG_ARCHIVE_SYNC, TIDE_CFG_ARCHIVE_KEEP, TIDE_CFG_ARCHIVE_MODE,
    TIDE_CFG_ARCHIVE_TIMEOUT, TIDE_CFG_ARCHIVE_CHUNK, TIDE_CFG_ARCHIVE_FILTER_BUDGET,
    TIDE_CFG_ARCHIVE_INFLIGHT,
    TIDE_CFG_COUNT
};

/* The archive's words (archive, archive_sync, archive_mode). */
enum { TIDE_ARCHIVE_OFF, TIDE_ARCHIVE_RADOS };
enum { TIDE_ARCHIVE_SYNC_LOCAL, TIDE_ARCHIVE_SYNC_ARCHIVE };
enum { TIDE_ARCHIVE_PRIMARY, TIDE_ARCHIVE_REPLICA };

/* rippled's [node_db] keys that count something else than the Tide
 * setting of their name: online_delete and delete_batch (config.c's
 * ti_config_rippled_keys). */
#define TIDE_CONFIG_RIPPLED_KEYS 2

typedef struct tide_config_source {
    int  kind;        /* TIDE_SRC_* */
    char where[160];  /* "tide.cfg:2", "TIDE_CACHE_BUDGET", "--cache-budget",
                         "medium" (preset), "auto: 15 GiB RAM" or "" (default) */
} tide_config_source;

typedef struct tide_config {
    int      node_size;          /* TIDE_NODE_* */
    char     data_dir[4096];     /* default ./data; [node_db] path= */
    char     listen[288];        /* HOST:PORT as written; default 127.0.0.1:8080 */
    char     listen_host[256];   /* HOST without brackets ("::1" for "[::1]:80") */
    unsigned listen_port;        /* 1..65535 */
    unsigned sweep_interval;     /* seconds, 10..600 */
    uint64_t cache_target;       /* node cache target, entries (0: none) */
    uint64_t cache_age;          /* node cache age, seconds, >= 1 */
    uint64_t cache_budget;       /* node cache bytes (0: unbounded) */
    uint64_t insert_burst;       /* store insert pool bytes, >= 64 KiB */
    uint64_t key_cache_size;     /* key cache target, entries (0: unbounded) */
    uint64_t key_cache_age;      /* seconds, >= 1 */
    unsigned nudb_block_size;    /* 4096..32768, power of two */
    uint64_t store_index_lag;    /* the tail index's budget; 0: off */
    int      store_key_map;      /* 1 (default): lookups search nudb.key through a
                                    read-only map; 0: with pread */
    int      cache_arena;        /* 1 (default): the node cache's objects in a
                                    segment arena; 0: malloc */
    uint64_t cache_arena_segment;/* bytes, a power of two, 64 KiB..1 GiB; 2 MiB */
    unsigned cache_arena_reserve;/* empty segments kept, 0..1024; default 1 */
    uint64_t cache_arena_evacuate;/* bytes a sweep moves at most; 64 MiB; 0: none */
    int      cache_arena_hugepages;/* 1: MADV_HUGEPAGE on each segment; 0 (default) */
    int      log_level;          /* TIDE_LOG_* */
    int      log_format;         /* TIDE_LOG_FORMAT_* (util/log.h); default text */
    uint64_t mmap_threshold;     /* bytes; meaningful only when _set */
    int      mmap_threshold_set; /* 0: leave glibc's dynamic threshold */
    unsigned arena_max;          /* 0: unset, glibc's default (8 x cores) */
    char     metrics_token[256]; /* env, or read from a file or a credential
                                    (tide_config_load_tokens); never printed */
    int      metrics_public;     /* env only; 0 or 1 */
    unsigned http_threads;       /* event loops serving HTTP, 1..64;
                                    default min(online CPUs, 4) */
    uint64_t max_object_size;    /* largest PUT body, bytes; default 1 MiB,
                                    1..256 MiB (h2o buffers a whole body) */
    char     admin_token[256];   /* TIDE_ADMIN_TOKEN, or read as metrics_token
                                    is; never printed */
    int      metrics_smaps;      /* 0 (default) or 1: smaps_rollup figures on
                                    /metrics (about 10 ms per GiB of RSS) */
    int      trim_policy;        /* TIDE_TRIM_* (node.h): when a sweep trims */
    uint64_t trim_param;         /* every:N -> N; freed:SIZE -> bytes;
                                    free-pct:P -> P; else 0 */
    uint64_t trim_pad;           /* bytes malloc_trim leaves at the main
                                    heap's top, 0..1 GiB; default 0 */
    unsigned http_max_connections;   /* open at once, 1..1048576; default 4096
                                        (tided lowers it to fit RLIMIT_NOFILE) */
    unsigned http_max_connections_per_client; /* open at once from one address, 0 (no
                                        bound)..1048576; default 256 */
    unsigned http_idle_timeout;      /* seconds a connection may hold nothing
                                        in flight, 1..3600; default 5 */
    unsigned http_request_timeout;   /* seconds to receive a whole request,
                                        1..3600; default 60 */
    unsigned http_header_timeout;    /* seconds from a head's first byte to
                                        its end, 1..3600; default 10 */
    uint64_t http_body_min_rate;     /* bytes a second a body must average
                                        after the grace, 0 (off)..1GiB;
                                        default 500 */
    unsigned http_body_grace;        /* seconds after the head before the
                                        rate counts, 0..3600; default 10 */
    uint64_t http_body_budget;       /* bytes of request bodies held before
                                        handlers, >= max_object_size; default
                                        max(64 MiB, 4 x max_object_size) */
    unsigned store_workers;          /* threads running tided's PUTs and GET
                                        misses, 1..256; default 2 x online
                                        CPUs, 2..16 */
    unsigned store_queue;            /* store jobs waiting at most, 1..1048576;
                                        default 1024 (more: 503) */
    /* online delete (docs/ROTATION.md): generations are on when
     * online_delete_on is 1 ("N" with N >= 1, or "manual"); off ("0", the
     * default) the data directory is one plain store that grows without
     * bound. */
    int      online_delete_on;   /* 0 or 1 */
    uint64_t online_delete;      /* objects per span (0: no object trigger) */
    unsigned generations;        /* G kept, 2..64; default 2, but only as a figure: while
                                    its source is the default the node is given 0, the
                                    manifest's own keep (2 for a new directory), so a
                                    restart that does not set it never shrinks the ring
                                    (tide_startup_node_opts; describe says so) */
    int      advisory_delete;    /* 0 (default) or 1: rotations wait for can_delete */
    uint64_t rotate_bytes;       /* rotate when the newest nudb.dat reaches it; 0: none */
    uint64_t rotate_interval;    /* seconds after the last rotation; 0: none */
    unsigned delete_batch;       /* keep-list keys per batch; default 100 */
    unsigned back_off_milliseconds; /* default 100 */
    uint64_t delete_chunk;       /* bytes a dropped nudb.dat is cut per step; 64 MiB */
    unsigned recovery_wait_seconds; /* default 5 */
    unsigned rotation_wait_max_seconds; /* default 300 */
    int      trim_after_rotation;/* 1 (default) or 0 */
    uint64_t rotation_max_rss;   /* the health gate holds a rotation while RSS is over it;
                                    0 (default): no RSS gate */
    /* The memory limit (docs/MEMORY-LIMIT.md). memory_limit is
     * the operator's (flag, env, file) or, left unset, the cgroup's
     * (tide_config_apply_cgroup; its source's where then reads "cgroup v1
     * /sys/fs/cgroup/memory/x"); an operator's value above the cgroup's is
     * lowered to it with a warning. 0: no limit anywhere (a startup
     * warning). With a limit, tide_config_finish derives every budget the
     * operator did not set from it (source "memory_limit N%"):
     * (L x pct / 100, rounded down to a byte)
     *   cache_budget          20% (the node cache's hard limit is twice it)
     *   key_cache_hard_limit   5% (bytes; no setting of its own)
     *   insert_burst           4%, at most 64 MiB (two pools: 8%)
     *   http_body_budget      10%, at least max_object_size
     * What the budgets may hold in all (2 x cache_budget, 2 x insert_burst,
     * http_body_budget, the key cache's hard limit; explicit and derived)
     * must fit under the HIGH mark (memory_levels' second figure) of the
     * limit, or tide_config_finish refuses it (TIDE_EINVAL) naming each
     * explicit budget with its source (and max_object_size, when it raised
     * http_body_budget), how far to lower each alone and the limit that
     * would hold them: at the high mark the node sheds every write, so
     * budgets that reach it alone leave no room for what no budget counts.
     * Explicit ones alone above the limit keep their older error; between
     * the soft and high marks is one warning. An explicit cache_budget 0
     * (unbounded) under a limit is TIDE_EINVAL: the governor cannot shrink
     * a node cache opened without a limit. */
    uint64_t memory_limit;       /* bytes in force; 0: none; else >= TIDE_CONFIG_MEMORY_LIMIT_MIN */
    unsigned memory_levels[4];   /* "80,90,97": [0] 0, then the soft,
                                    high, critical percent (mem/overload.h) */
    unsigned memory_hysteresis;  /* percentage points below a mark to leave it; 5 */
    unsigned memory_poll_milliseconds; /* 10..10000; 100 */
    unsigned memory_pressure;    /* PSI some avg10 (percent) that holds SOFT, 0..100 (0: off); 10 */
    uint64_t key_cache_hard_limit; /* derived (bytes); 0: the node's default (32 MiB) */
    /* What tide_config_apply_cgroup found (cgroup_limited 0 when nothing). */
    int      cgroup_limited;
    uint64_t cgroup_limit;
    int      cgroup_version;
    char     cgroup_path[1024];  /* the limited directory (its usage counts too) */
    uint64_t ram_bytes;          /* total RAM seen by tide_config_defaults */
    /* The token files: metrics_token_file, admin_token_file;
     * "" unset. Read by tide_config_load_tokens. */
    char     metrics_token_file[4096];
    char     admin_token_file[4096];
    /* rippled's [node_db] keys named like a setting but counting something
     * else (online_delete: ledgers; delete_batch: SQL records), as the file
     * wrote them ("rippled.cfg:43: [node_db] online_delete=2000"), in the
     * order of TIDE_CONFIG_RIPPLED_KEYS; "" when absent. Never the
     * setting's value: finish refuses one whose setting no operator's
     * source gave (the file's own key with the unit, its variable or its
     * flag), else logs it as rippled's. */
    char     rippled_keys[TIDE_CONFIG_RIPPLED_KEYS][600];
    /* The archive (docs/ARCHIVE.md); off by default. */
    int      archive;            /* TIDE_ARCHIVE_OFF or TIDE_ARCHIVE_RADOS */
    char     archive_conf[4096]; /* ceph.conf; default /etc/ceph/ceph.conf */
    char     archive_pool[128];  /* default tide */
    char     archive_prefix[65]; /* default the host name up to its first dot */
    char     archive_user[64];   /* the client's id without "client."; default admin */
    int      archive_sync;       /* TIDE_ARCHIVE_SYNC_LOCAL (default) or _ARCHIVE */
    unsigned archive_keep;       /* sealed generations kept in the archive; 0: all */
    int      archive_mode;       /* TIDE_ARCHIVE_PRIMARY (default) or _REPLICA */
    unsigned archive_timeout;    /* seconds a RADOS call may wait; default 10 */
    uint64_t archive_chunk;      /* bytes per data object; default 64 MiB */
    uint64_t archive_filter_budget; /* bytes of key filters held; default 64 MiB */
    unsigned archive_inflight;   /* asynchronous writes at once; default 4 */
    tide_config_source src[TIDE_CFG_COUNT];
} tide_config;

/* The smallest memory_limit accepted (below it tided cannot start its
 * threads and buffers): 32 MiB. A cgroup limit below it is an error too. */
#define TIDE_CONFIG_MEMORY_LIMIT_MIN (32ull << 20)

/* "tiny".."huge"; "?" for anything else. */
const char *tide_config_node_size_name(int node_size);

/* The node_size auto-selected for `ram_bytes` of total RAM:
 * < 8 GiB tiny, < 16 GiB small, < 32 GiB medium, < 64 GiB large, else huge. */
int tide_config_node_size_for_ram(uint64_t ram_bytes);

/* The setting's name ("cache_budget"), flag ("--cache-budget", NULL for the
 * env-only ones) and variable ("TIDE_CACHE_BUDGET"), for id < TIDE_CFG_COUNT. */
const char *tide_config_name(int id);
const char *tide_config_flag(int id);
const char *tide_config_env(int id);

/* The range setting `id` accepts, for --help and the docs: "10 to 600",
 * "0 to 4PiB", "1 to 256MiB", "port 1 to 65535" (listen), "up to 4086
 * bytes" (data_dir), "up to 255 bytes" (the tokens), or "" for a setting
 * that takes words (node_size, log_level, the 0/1 ones). Into `buf` (cap
 * bytes, NUL-terminated); returns the length the text needs (as
 * snprintf). Allocates nothing. */
size_t tide_config_range_text(int id, char *buf, size_t cap);

/* The --help entry of setting `id`, from its row of the settings table:
 * a heading ("    --cache-budget SIZE", or "    TIDE_ADMIN_TOKEN" for an
 * env-only setting), then, 8 spaces in and wrapped at 79 columns, what it
 * does, the words it takes (node_size, log_level), its range (as
 * tide_config_range_text), its default (the row's default, the preset of
 * each node_size, or the rule that computes it) and, for a setting with a
 * flag, its variable and file keys. Each line ends in '\n'. Into `buf`
 * (cap bytes, NUL-terminated, cut when short); returns the length the
 * whole entry needs (as snprintf); "" for an id out of range. Allocates
 * nothing. */
size_t tide_config_help(int id, char *buf, size_t cap);

/* Fill `c` with the built-in defaults, every source TIDE_SRC_DEFAULT, and
 * node_size auto-selected from total RAM (sysconf). Never fails; reads
 * sysconf only. The preset-driven settings hold the medium preset's values
 * until tide_config_finish replaces them with node_size's preset. */
void tide_config_defaults(tide_config *c);

/* The largest config file tided reads: 1 MiB. A node's own rippled.cfg
 * is a few KiB and the sample with every setting (contrib/tide.cfg) about
 * 20 KiB, so anything near the cap is not a config file: the cap bounds
 * what one --config (or a SIGHUP) can make tided read and hold. */
#define TIDE_CONFIG_FILE_MAX (1024ull * 1024)

/* Read an INI file (sections [node], [node_db], [node_size], [sweep_interval], [http];
 * see config_file.c for the syntax) over `c`. The file must be a regular file
 * (a symlink to one is fine) of at most TIDE_CONFIG_FILE_MAX bytes: a FIFO,
 * a device, a directory or a socket is refused without reading it or
 * waiting for it (the open never blocks), and so is a larger file, read
 * no further than one byte past the cap even when it grows meanwhile. A
 * setting already set by the environment or a flag keeps its value. A
 * setting is read in its own section or in its group's
 * (tide_config_group_name: [memory] memory_limit=1GiB). Any other section (a rippled.cfg's
 * [server], [ips], ...) is skipped with one info line, but one of Tide's
 * keys in it is an error naming where it belongs; rippled's keys in
 * [node_db] (earliest_seq, ...) get an info line, other unknown ones there
 * a warning; rippled's online_delete and delete_batch, which count
 * something else than Tide's settings of those names, are recorded in
 * rippled_keys for finish, never read as Tide's. A UTF-8 BOM is skipped; '#' starts a comment anywhere ("\#" is
 * a '#'). Returns 0; TIDE_ENOENT/TIDE_EIO when the file cannot be read;
 * TIDE_EINVAL naming the path for the wrong type or size, and for the
 * first syntax or value error, with tide_last_error() =
 * "PATH:LINE: [section] key=value: reason" (a section or [node_db] key one
 * edit from one Tide reads is such an error: "did you mean [node_db]?"; an
 * unknown key names the nearest: "did you mean cache_budget?"). An
 * invalid nudb_block_size is not an error: it logs a warning naming
 * PATH:LINE and uses 4096. On error `c` may hold the settings read before
 * the bad line. Cost: one read of the file (at most TIDE_CONFIG_FILE_MAX
 * + 1 bytes); allocates a buffer of that size only while reading. */
int tide_config_load_file(tide_config *c, const char *path);

/* Getter for environment variables: returns the value or NULL when unset. */
typedef const char *(*tide_config_getenv_fn)(void *arg, const char *name);

/* Apply TIDE_* variables through `get` (NULL: getenv). Returns 0,
 * TIDE_ENOMEM, or TIDE_EINVAL with "TIDE_CACHE_BUDGET=12XB: not a size
 * (...)". Each value is checked whole, as a flag's is (a TIDE_DATA_DIR
 * longer than TIDE_CONFIG_DATA_DIR_MAX is refused, never cut). A variable
 * set but empty (or only blanks) is TIDE_EINVAL naming it
 * ("TIDE_MEMORY_LIMIT is set but empty: ..."), not unset: it is mostly a
 * script's variable that expanded to nothing. nudb_block_size warns as in
 * load_file. */
int tide_config_apply_env(tide_config *c, tide_config_getenv_fn get, void *arg);

/* Apply --flags from argv[1..argc-1] with getopt_long (argv may be permuted;
 * getopt's state is reset first). --config FILE is accepted and skipped: the
 * caller loads it before; so is --check-config (tided acts on it). Returns 0 or TIDE_EINVAL naming the unknown flag
 * (and the nearest one: "did you mean --cache-budget?"),
 * the flag missing its value, a stray argument, or the bad value
 * ("--sweep-interval=9: 9 is outside 10..600"). */
int tide_config_apply_args(tide_config *c, int argc, char **argv);

/*
 * Look for the cgroup's memory limit (tide_mem_cgroup_limit(root, ...);
 * root NULL: the real machine) and record it in the cgroup_* fields. When
 * memory_limit was not set by the operator, the cgroup's becomes it (its
 * source names the cgroup directory and version); when it was set above
 * the cgroup's, it is lowered to the cgroup's with one warning naming
 * both; the source then reads "cgroup v1 PATH, lowered from 1GiB
 * (flag --memory-limit)" (kind TIDE_SRC_DERIVED). An operator's value below
 * it is kept (the cgroup is recorded all the same: its usage counts). No
 * limit known (TIDE_ENOENT), or an unlimited cgroup, changes nothing; a
 * cgroup file that cannot be read or parsed is logged at WARN and changes
 * nothing. A cgroup limit above TIDE_CONFIG_BYTES_MAX is taken as that. A
 * cgroup limit below TIDE_CONFIG_MEMORY_LIMIT_MIN is not refused here but
 * by finish, naming the cgroup. Call after apply_args and before finish.
 * Returns 0. Cost: tide_mem_cgroup_limit's few small reads.
 */
int tide_config_apply_cgroup(tide_config *c, const char *root);

/*
 * systemd's StateDirectory=: when data_dir was set by no
 * operator's source (file, env, flag) and `state_directory` (the caller's
 * $STATE_DIRECTORY, NULL when unset) is not empty, data_dir becomes its
 * first path (systemd joins several with ':'), source "STATE_DIRECTORY"
 * (kind TIDE_SRC_DERIVED). Returns 0, or TIDE_EINVAL when that path is not
 * absolute or too long (naming the variable). Call after apply_args.
 * Allocates nothing.
 */
int tide_config_apply_state_dir(tide_config *c, const char *state_directory);

/*
 * The tokens from files (config_systemd.c): for each of the
 * metrics and the admin token not set by its own variable
 * (TIDE_METRICS_TOKEN, TIDE_ADMIN_TOKEN), read metrics_token_file /
 * admin_token_file when set, else `credentials_directory`/metrics_token /
 * admin_token (the caller's $CREDENTIALS_DIRECTORY, NULL when unset) when
 * that file exists. The token is the file's content less one trailing
 * '\n', 1 to 255 bytes from '!' to '~' (a header's visible ASCII); a
 * credential that is empty after it means "no token" (the unit's
 * SetCredential= fallback for a missing file). The token's source becomes
 * the file setting's ("env TIDE_METRICS_TOKEN_FILE") or "credential
 * metrics_token". Returns 0, or TIDE_EINVAL with tide_last_error naming
 * the file and the fault: not found or unreadable, not a regular file,
 * readable by others or writable by group or others (its mode and `chmod
 * 600 FILE`), empty, longer than 255 bytes, a byte a header cannot carry
 * (its position, never the byte). Logs a warning when a token's variable
 * makes its file setting moot. Never copies a token into a message. Reads
 * at most 2 files of at most 257 bytes; call after apply_args, before
 * finish.
 */
int tide_config_load_tokens(tide_config *c, const char *credentials_directory);

/* Put node_size's preset into every preset-driven setting still at its
 * default (source becomes "preset NAME"), then check the rules that join
 * settings. Returns 0, or TIDE_EINVAL when node_size is not a preset.
 * A rippled key of rippled_keys whose setting no operator's source gave is
 * TIDE_EINVAL naming its file line, what rippled and Tide count with it
 * and Tide's own key; one whose setting was given logs an info line.
 * Warns (never fails) when cache_age or key_cache_age is below
 * sweep_interval and the operator set one of the pair (entries then live up
 * to a whole interval anyway; the defaults never warn), and when
 * TIDE_METRICS_PUBLIC=1 makes a set TIDE_METRICS_TOKEN moot for /metrics.
 * http_body_budget left unset becomes max(64 MiB, 4 x max_object_size); set
 * below max_object_size it is TIDE_EINVAL naming both and their sources.
 * With a memory_limit: below TIDE_CONFIG_MEMORY_LIMIT_MIN is
 * TIDE_EINVAL; the budgets the operator did not set are derived from it
 * (the split above, replacing the preset's and the default's); explicit
 * and derived budgets that may hold more than its high mark in all are
 * TIDE_EINVAL naming the explicit ones and the fix (the memory_limit
 * comment above), as is an explicit cache_budget 0; a
 * memory_levels or memory_hysteresis that tide_mem_overload_init refuses is
 * TIDE_EINVAL. */
int tide_config_finish(tide_config *c);

/* Whether the budgets in force under `running` (cache_budget, insert_burst,
 * http_body_budget and key_cache_hard_limit as tide_config_finish fixed
 * them at startup; a key_cache_hard_limit of 0 counts as the node's 32 MiB)
 * fit under the high mark (pct[TIDE_OVERLOAD_HIGH]) of a new `limit`, by
 * tide_config_finish's rule: 0, or TIDE_EINVAL with tide_last_error naming
 * them, what they hold against that mark, and that a restart derives new
 * ones (SIGHUP applies a limit live but not the budgets). limit 0 (none)
 * always fits; an unbounded node cache (cache_budget 0) never does under a
 * limit. Reads only; thread-safe on a config nobody writes. */
int tide_config_check_limit_in_force(const tide_config *running, uint64_t limit, const unsigned pct[4]);

/* One line, "node_size=medium(file tide.cfg:2) sweep_interval=60(preset medium)
 * cache_budget=1GiB(env TIDE_CACHE_BUDGET) ...", every setting, into `buf`
 * (cap bytes, NUL-terminated, truncated when short). The metrics token is
 * shown only as "set" or "unset". Returns the length the full line needs
 * (as snprintf). Allocates nothing. */
size_t tide_config_describe(const tide_config *c, char *buf, size_t cap);

/* Setting `id` as tide_config_describe writes it, "cache_budget=1GiB(preset
 * medium)", into `buf` (cap bytes, NUL-terminated, cut when short);
 * returns the length the whole text needs (as snprintf); "" for an id out
 * of range. Allocates nothing. */
size_t tide_config_describe_setting(const tide_config *c, int id, char *buf, size_t cap);

/*
 * The groups the startup log and `tided --check-config` print the settings
 * in, one line (or block) each: node (node_size, data_dir, the log, the
 * block size), http (listen, the connections, bodies, the tokens,
 * /metrics), cache (the sweeps, both caches, the insert burst, the trim
 * policy), memory (the memory limit and its levels, glibc's malloc
 * options), node_db (online delete: the file's [node_db] keys) and
 * archive (the archive in Ceph RADOS: the file's [archive] keys). Each
 * row of the settings table names its group, so each setting is in exactly
 * one. Each group's name is a section of the config file too, where the
 * settings of that group may be written (config_file.c).
 */
enum { TIDE_CFG_GROUP_NODE, TIDE_CFG_GROUP_HTTP, TIDE_CFG_GROUP_CACHE, TIDE_CFG_GROUP_MEMORY,
       TIDE_CFG_GROUP_NODE_DB, TIDE_CFG_GROUP_ARCHIVE, TIDE_CFG_GROUP_COUNT };

/* The group (TIDE_CFG_GROUP_*) of setting `id`; -1 for an id out of range. */
int tide_config_group(int id);
/* "node", "http", "cache", "memory", "node_db", "archive"; "?" out of range. */
const char *tide_config_group_name(int group);

/* The config file's key of setting `id` in its section: its name, or for
 * a setting whose name rippled reads with another meaning in [node_db]
 * the key with its unit ("online_delete_objects", "delete_batch_keys");
 * NULL for an env-only setting and an id out of range. */
const char *tide_config_file_key(int id);

/* The config file's section of setting `id`: "node", "node_db" or "http"
 * (metrics_token_file and admin_token_file), or NULL for an env-only
 * setting (the tokens themselves) and an id out of range. */
const char *tide_config_section(int id);

/* The value of setting `id` alone, as tide_config_describe writes it
 * ("1GiB", "set"), into `buf` (cap bytes, NUL-terminated, truncated when
 * short); returns the length written. Allocates nothing. */
size_t tide_config_describe_one(const tide_config *c, int id, char *buf, size_t cap);

/* Where setting `id` came from, as tide_config_describe writes it in
 * parentheses: "flag --memory-limit", "env TIDE_MEMORY_LIMIT", "file
 * tide.cfg:3", "preset medium", "default" or "default RULE", and a derived
 * value's where alone ("cgroup v1 /sys/fs/cgroup/memory/x", "memory_limit
 * 20%"). Into `out` (cap bytes, NUL-terminated, cut when short).
 * /v1/status' memory_limit "source" and the startup log print it.
 * Allocates nothing. */
void tide_config_source_text(const tide_config *c, int id, char *out, size_t cap);

/* Called once per consumer left unbounded: `consumer` names it ("node_cache"),
 * `how` names the setting that would bound it
 * ("set --cache-budget / TIDE_CACHE_BUDGET / [node] cache_budget"). */
typedef void (*tide_config_unbounded_fn)(void *arg, const char *consumer, const char *how);

/* Call `fn` for each unbounded consumer, in a fixed order: node_cache
 * (cache_budget 0), key_cache (key_cache_size 0 and no key_cache_hard_limit:
 * with a memory_limit the key cache gets 5% of it in bytes, so it is
 * bounded), malloc_arenas (arena_max
 * unset, and only when `alloc_family` is TIDE_MEM_ALLOC_GLIBC: arena_max
 * bounds nothing under another allocator), process (memory_limit 0: no
 * flag and no cgroup limit; `how` then reads "set --memory-limit /
 * TIDE_MEMORY_LIMIT / [node] memory_limit, or run tided in a cgroup with a
 * memory limit"). store_insert_pool never is:
 * insert_burst is at least 64 KiB. Callers pass tide_mem_alloc_family(). Returns the
 * count. */
int tide_config_unbounded(const tide_config *c, int alloc_family, tide_config_unbounded_fn fn, void *arg);

#endif
