/*
 * config.c: the node's settings, where they come from, and what they mean.
 *
 * Every setting lives in one row of `settings[]` below: its name, its flag,
 * its environment variable, its config-file key (section and key), how its
 * text is parsed, and its range. The four sources all go through one
 * function, set_value(), so a value means the same thing whether it was
 * written as --cache-budget=1GiB, TIDE_CACHE_BUDGET=1GiB or
 * "[node] cache_budget=1GiB".
 *
 * Precedence: flag > environment > config file > node_size preset > built-in
 * default. set_value() overwrites a setting only when the new source ranks at
 * least as high as the current one, so a flag applied before the file still
 * wins. Within one file a setting may be given once: a second line for it is
 * an error naming both lines (a [node] nudb_block_size and a [node_db]
 * nudb_block_size are the same setting).
 *
 * node_size: when nothing sets it, it is chosen from total RAM
 * (sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE)) with this rule:
 *     < 8 GiB tiny, < 16 GiB small, < 32 GiB medium, < 64 GiB large, else huge.
 * (XRP Ledger leaves node_size to the operator; the thresholds are Tide's,
 * one step per doubling, so a 16 GiB machine runs "medium".) The preset
 * (docs/ARCHITECTURE.md, "node_size presets") fills sweep_interval,
 * cache_target, cache_age, cache_budget and insert_burst, but only those
 * still at their built-in default: tide_config_finish() applies it after
 * every source has been read.
 *
 * The file, in XRP Ledger's INI style, so that tided can be pointed at a
 * node's own rippled.cfg:
 *
 *     # comment            ; comment too (';' only as a whole line)
 *     [node_size]
 *     medium               a bare value: the section is the setting
 *     [sweep_interval]
 *     60
 *     [node_db]
 *     type=NuDB            the only backend; any other type is an error
 *     path=/var/lib/tide   = data_dir     # a trailing comment
 *     nudb_block_size=16384
 *     online_delete=2000   rippled's: an info line, ignored
 *     [node]
 *     cache_budget=1GiB    every setting by its name (except the env-only ones)
 *     [server]             any other section: one info line, then skipped
 *
 * A '#' anywhere starts a comment, as rippled reads the key=value lines of
 * its own file; "\#" is a literal '#'. A '#' glued to the text before it
 * ("path=/srv/a#1") warns, since it may have been meant as part of a value.
 * A UTF-8 byte-order mark before the first line is skipped; a UTF-16 file
 * is refused by name. Blank lines are skipped; spaces around keys and
 * values are trimmed; a CR before the LF is dropped.
 *
 * Sections other than [node], [node_db], [node_size] and [sweep_interval]
 * are another program's (rippled's [server], [port_*], [ips], ...): each
 * logs "config FILE:LINE: section [server] is not used by tide; skipped"
 * and its lines are not parsed at all. A section one edit away from one of
 * Tide's ([nodes], [node-db], [NODE_SIZE]) is an error instead: skipping a
 * typo would drop its settings in silence. In [node_db], rippled's own keys
 * (online_delete, advisory_delete, earliest_seq, ...) log an info line, any
 * other unknown key a warning, and a key one edit from type, path or
 * nudb_block_size is an error ("did you mean path?"): [node_db] is shared
 * with rippled, whose keys are not Tide's to refuse, but a misspelt path
 * would make tided open (and create) a store somewhere else. [node] is
 * Tide's alone, so an unknown key there is an error.
 *
 * Errors are startup errors, TIDE_EINVAL with tide_last_error() =
 * "tide.cfg:12: [node] cache_budget=12XB: not a size (...)": an unknown key
 * in [node], a bad or out-of-range value, a "[section" with no "]", a line
 * before any section, a bare value where key=value is expected (or the
 * reverse), a setting given twice. The one exception is nudb_block_size:
 * an invalid value logs a warning naming the file and line and uses 4096, as
 * the store does (tide_block_size_parse), because an operator who typed 5000
 * should get a running node, not a dead one.
 *
 * Ranges: every number is checked where it is parsed, whichever source it
 * came from, against the min and max of its row, and a refusal names the
 * source (file and line, variable or flag) and the range. The byte sizes
 * and entry counts stop at TIDE_CONFIG_BYTES_MAX (4 PiB, config.h), so that
 * twice a budget still fits everywhere it goes; a number past 64 bits is
 * out of range, not "not a number". Values are copied whole, never through
 * a fixed buffer, so a 5000-byte TIDE_DATA_DIR is refused as the flag is
 * (data_dir stops at TIDE_CONFIG_DATA_DIR_MAX, 4086 bytes, so that
 * DIR/nudb.dat fits in PATH_MAX).
 *
 * The metrics token, the admin token and the public flag come only from the
 * environment (TIDE_METRICS_TOKEN, TIDE_ADMIN_TOKEN, TIDE_METRICS_PUBLIC): a secret does not belong in argv
 * (visible in ps) or in a file that gets pasted into tickets. describe()
 * prints the token as "set" or "unset", never its text.
 *
 * Invariants:
 *   1. Every setting has a source; src[id].kind only rises during loading,
 *      except that finish() may turn DEFAULT into PRESET.
 *   2. After a successful finish() every value is within its range.
 *
 * Never: print metrics_token; turn a bad value into a default silently
 * (nudb_block_size falls back, and says so); truncate a value; skip a
 * section or key without a line in the log.
 */
#include "node/config.h"
#include "mem/alloc.h"
#include "node/node.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tide/error.h"
#include "tide/store.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

/* ---- presets (docs/ARCHITECTURE.md, "node_size presets") ------------------ */

typedef struct preset {
    unsigned sweep_interval;
    uint64_t cache_target, cache_age, cache_budget, insert_burst;
} preset;

static const char *const node_size_names[TIDE_NODE_SIZE_COUNT] = {
    "tiny", "small", "medium", "large", "huge"
};

static const preset presets[TIDE_NODE_SIZE_COUNT] = {
    /*            sweep  target    age  budget      burst */
    [TIDE_NODE_TINY]   = { 10,  262144,  30,  64 * MiB,  4 * MiB },
    [TIDE_NODE_SMALL]  = { 30,  524288,  60, 256 * MiB,  8 * MiB },
    [TIDE_NODE_MEDIUM] = { 60, 2097152,  90,   1 * GiB, 16 * MiB },
    [TIDE_NODE_LARGE]  = { 90, 4194304, 120,   4 * GiB, 32 * MiB },
    [TIDE_NODE_HUGE]   = {120, 8388608, 900,  16 * GiB, 48 * MiB },
};

/* ---- the settings table ----------------------------------------------------- */

enum kind {
    K_NODE_SIZE, /* tiny..huge */
    K_PATH,      /* non-empty string */
    K_LISTEN,    /* HOST:PORT */
    K_UINT,      /* decimal integer in [min, max] */
    K_SIZE,      /* tide_size_parse, in [min, max] */
    K_BLOCK,     /* tide_block_size_parse: warns, never fails */
    K_LEVEL,     /* tide_log_level_parse */
    K_SECRET,    /* string, never printed */
    K_BOOL,      /* 1/0, true/false, yes/no, on/off */
    K_TRIM       /* always, never, every:N, freed:SIZE, free-pct:P */
};

typedef struct setting {
    const char *name;     /* "cache_budget" */
    const char *flag;     /* "cache-budget" (without --), NULL: env only */
    const char *env;      /* "TIDE_CACHE_BUDGET" */
    const char *section;  /* "node"; NULL: env only */
    const char *alt_section, *alt_key;  /* a second file spelling, or NULL */
    enum kind kind;
    uint64_t min, max;
    int from_preset;      /* finish() fills it from node_size's preset */
} setting;

static const setting settings[TIDE_CFG_COUNT] = {
    [TIDE_CFG_NODE_SIZE]       = { "node_size", "node-size", "TIDE_NODE_SIZE", "node",
                                   "node_size", "", K_NODE_SIZE, 0, 0, 0 },
    [TIDE_CFG_DATA_DIR]        = { "data_dir", "data-dir", "TIDE_DATA_DIR", "node",
                                   "node_db", "path", K_PATH, 0, 0, 0 },
    [TIDE_CFG_LISTEN]          = { "listen", "listen", "TIDE_LISTEN", "node",
                                   NULL, NULL, K_LISTEN, 0, 0, 0 },
    [TIDE_CFG_SWEEP_INTERVAL]  = { "sweep_interval", "sweep-interval", "TIDE_SWEEP_INTERVAL", "node",
                                   "sweep_interval", "", K_UINT, 10, 600, 1 },
    [TIDE_CFG_CACHE_TARGET]    = { "cache_target", "cache-target", "TIDE_CACHE_TARGET", "node",
                                   NULL, NULL, K_UINT, 0, TIDE_CONFIG_BYTES_MAX, 1 },
    [TIDE_CFG_CACHE_AGE]       = { "cache_age", "cache-age", "TIDE_CACHE_AGE", "node",
                                   NULL, NULL, K_UINT, 1, 86400, 1 },
    /* 2 * cache_budget is the node cache's hard limit and 2 * insert_burst
     * what the store's two pools may hold: TIDE_CONFIG_BYTES_MAX keeps both
     * products exact (config.h). */
    [TIDE_CFG_CACHE_BUDGET]    = { "cache_budget", "cache-budget", "TIDE_CACHE_BUDGET", "node",
                                   NULL, NULL, K_SIZE, 0, TIDE_CONFIG_BYTES_MAX, 1 },
    /* The store's insert pool is always bounded (0 used to be taken for
     * "unbounded" here while the store used its 16 MiB default): at least
     * 64 KiB, so one commit's worth of small inserts fits. */
    [TIDE_CFG_INSERT_BURST]    = { "insert_burst", "insert-burst", "TIDE_INSERT_BURST", "node",
                                   NULL, NULL, K_SIZE, 64 * 1024, TIDE_CONFIG_BYTES_MAX, 1 },
    [TIDE_CFG_KEY_CACHE_SIZE]  = { "key_cache_size", "key-cache-size", "TIDE_KEY_CACHE_SIZE", "node",
                                   NULL, NULL, K_UINT, 0, TIDE_CONFIG_BYTES_MAX, 0 },
    [TIDE_CFG_KEY_CACHE_AGE]   = { "key_cache_age", "key-cache-age", "TIDE_KEY_CACHE_AGE", "node",
                                   NULL, NULL, K_UINT, 1, 86400, 0 },
    [TIDE_CFG_NUDB_BLOCK_SIZE] = { "nudb_block_size", "nudb-block-size", "TIDE_NUDB_BLOCK_SIZE", "node",
                                   "node_db", "nudb_block_size", K_BLOCK, 0, 0, 0 },
    [TIDE_CFG_LOG_LEVEL]       = { "log_level", "log-level", "TIDE_LOG_LEVEL", "node",
                                   NULL, NULL, K_LEVEL, 0, 0, 0 },
    /* glibc's M_MMAP_THRESHOLD maximum on 64-bit is 32 MiB
     * (DEFAULT_MMAP_THRESHOLD_MAX = 4 MiB * sizeof(long)); mallopt refuses more. */
    [TIDE_CFG_MMAP_THRESHOLD]  = { "mmap_threshold", "mmap-threshold", "TIDE_MMAP_THRESHOLD", "node",
                                   NULL, NULL, K_SIZE, 0, 32 * MiB, 0 },
    [TIDE_CFG_ARENA_MAX]       = { "arena_max", "arena-max", "TIDE_ARENA_MAX", "node",
                                   NULL, NULL, K_UINT, 1, 4096, 0 },
    [TIDE_CFG_METRICS_TOKEN]   = { "metrics_token", NULL, "TIDE_METRICS_TOKEN", NULL,
                                   NULL, NULL, K_SECRET, 0, 0, 0 },
    [TIDE_CFG_METRICS_PUBLIC]  = { "metrics_public", NULL, "TIDE_METRICS_PUBLIC", NULL,
                                   NULL, NULL, K_BOOL, 0, 0, 0 },
    [TIDE_CFG_HTTP_THREADS]    = { "http_threads", "http-threads", "TIDE_HTTP_THREADS", "node",
                                   NULL, NULL, K_UINT, 1, 64, 0 },
    [TIDE_CFG_MAX_OBJECT_SIZE] = { "max_object_size", "max-object-size", "TIDE_MAX_OBJECT_SIZE", "node",
                                   NULL, NULL, K_SIZE, 1, 256 * MiB, 0 },
    [TIDE_CFG_ADMIN_TOKEN]     = { "admin_token", NULL, "TIDE_ADMIN_TOKEN", NULL,
                                   NULL, NULL, K_SECRET, 0, 0, 0 },
    [TIDE_CFG_METRICS_SMAPS]   = { "metrics_smaps", "metrics-smaps", "TIDE_METRICS_SMAPS", "node",
                                   NULL, NULL, K_BOOL, 0, 0, 0 },
    [TIDE_CFG_TRIM_POLICY]     = { "trim_policy", "trim-policy", "TIDE_TRIM_POLICY", "node",
                                   NULL, NULL, K_TRIM, 0, 0, 0 },
    [TIDE_CFG_HTTP_MAX_CONNECTIONS] = { "http_max_connections", "http-max-connections",
                                   "TIDE_HTTP_MAX_CONNECTIONS", "node", NULL, NULL, K_UINT, 1, 1048576, 0 },
    [TIDE_CFG_HTTP_MAX_PER_CLIENT] = { "http_max_connections_per_client", "http-max-connections-per-client",
                                   "TIDE_HTTP_MAX_CONNECTIONS_PER_CLIENT", "node", NULL, NULL, K_UINT, 0, 1048576, 0 },
    [TIDE_CFG_HTTP_IDLE_TIMEOUT] = { "http_idle_timeout", "http-idle-timeout", "TIDE_HTTP_IDLE_TIMEOUT", "node",
                                   NULL, NULL, K_UINT, 1, 3600, 0 },
    [TIDE_CFG_HTTP_REQUEST_TIMEOUT] = { "http_request_timeout", "http-request-timeout",
                                   "TIDE_HTTP_REQUEST_TIMEOUT", "node", NULL, NULL, K_UINT, 1, 3600, 0 },
    /* At least max_object_size (checked in finish); at most 1 TiB. */
    [TIDE_CFG_HTTP_BODY_BUDGET] = { "http_body_budget", "http-body-budget", "TIDE_HTTP_BODY_BUDGET", "node",
                                   NULL, NULL, K_SIZE, 1, 1024 * GiB, 0 },
};

const char *tide_config_node_size_name(int n)
{
    return (n >= 0 && n < TIDE_NODE_SIZE_COUNT) ? node_size_names[n] : "?";
}

int tide_config_node_size_for_ram(uint64_t ram)
{
    if (ram < 8 * GiB)  return TIDE_NODE_TINY;
    if (ram < 16 * GiB) return TIDE_NODE_SMALL;
    if (ram < 32 * GiB) return TIDE_NODE_MEDIUM;
    if (ram < 64 * GiB) return TIDE_NODE_LARGE;
    return TIDE_NODE_HUGE;
}

const char *tide_config_name(int id) { return settings[id].name; }
const char *tide_config_env(int id)  { return settings[id].env; }

const char *tide_config_flag(int id)
{
    static char flags[TIDE_CFG_COUNT][40];
    if (settings[id].flag == NULL) return NULL;
    if (flags[id][0] == '\0') snprintf(flags[id], sizeof flags[id], "--%s", settings[id].flag);
    return flags[id];
}

static void size_text(uint64_t v, char *out, size_t cap);

size_t tide_config_range_text(int id, char *buf, size_t cap)
{
    const setting *st;
    char lo[32], hi[32], dummy[1];
    int n = 0;

    if (cap == 0) buf = dummy, cap = 1;     /* length only */
    buf[0] = '\0';
    if (id < 0 || id >= TIDE_CFG_COUNT) return 0;
    st = &settings[id];
    switch (st->kind) {
    case K_UINT:
        if (st->max == TIDE_CONFIG_BYTES_MAX)
            n = snprintf(buf, cap, "%" PRIu64 " to %" PRIu64 " (2^52)", st->min, st->max);
        else
            n = snprintf(buf, cap, "%" PRIu64 " to %" PRIu64, st->min, st->max);
        break;
    case K_SIZE:
        size_text(st->min, lo, sizeof lo);
        size_text(st->max, hi, sizeof hi);
        n = snprintf(buf, cap, "%s to %s", lo, hi);
        break;
    case K_LISTEN: n = snprintf(buf, cap, "port 1 to 65535"); break;
    case K_SECRET: n = snprintf(buf, cap, "up to %zu bytes", sizeof ((tide_config *)0)->metrics_token - 1); break;
    case K_PATH:   n = snprintf(buf, cap, "up to %zu bytes", (size_t)TIDE_CONFIG_DATA_DIR_MAX); break;
    case K_BLOCK:
        n = snprintf(buf, cap, "a power of two from %u to %u", TIDE_BLOCK_SIZE_MIN, TIDE_BLOCK_SIZE_MAX);
        break;
    case K_TRIM:
        size_text(TIDE_CONFIG_BYTES_MAX, hi, sizeof hi);
        n = snprintf(buf, cap, "every:1 to every:%u, freed:1 to freed:%s, free-pct:1 to free-pct:%u",
                     TIDE_TRIM_EVERY_MAX, hi, TIDE_TRIM_FREE_PCT_MAX);
        break;
    default: break;
    }
    return n < 0 ? 0 : (size_t)n;
}

/* ---- defaults ---------------------------------------------------------------- */

static void set_source(tide_config *c, int id, int kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_source(tide_config *c, int id, int kind, const char *fmt, ...)
{
    va_list ap;
    c->src[id].kind = kind;
    va_start(ap, fmt);
    vsnprintf(c->src[id].where, sizeof c->src[id].where, fmt, ap);
    va_end(ap);
}

static void fill_preset(tide_config *c, int id, const preset *p)
{
    switch (id) {
    case TIDE_CFG_SWEEP_INTERVAL: c->sweep_interval = p->sweep_interval; break;
    case TIDE_CFG_CACHE_TARGET:   c->cache_target = p->cache_target; break;
    case TIDE_CFG_CACHE_AGE:      c->cache_age = p->cache_age; break;
    case TIDE_CFG_CACHE_BUDGET:   c->cache_budget = p->cache_budget; break;
    case TIDE_CFG_INSERT_BURST:   c->insert_burst = p->insert_burst; break;
    default: break;
    }
}

void tide_config_defaults(tide_config *c)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    char ram[32];

    memset(c, 0, sizeof *c);
    c->ram_bytes = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : 0;
    c->node_size = tide_config_node_size_for_ram(c->ram_bytes);
    snprintf(c->data_dir, sizeof c->data_dir, "./data");
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:8080");
    snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->listen_port = 8080;
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (settings[id].from_preset) fill_preset(c, id, &presets[TIDE_NODE_MEDIUM]);
    /* The key cache is not in XRP Ledger's table; Tide's defaults: 64 Ki
     * recent misses kept for 30 s. */
    c->key_cache_size = 65536;
    c->key_cache_age = 30;
    c->nudb_block_size = TIDE_BLOCK_SIZE_DEFAULT;
    c->log_level = TIDE_LOG_INFO;
    /* One event loop per core, up to four: past that a node's disk, not
     * its HTTP parsing, sets the pace. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->http_threads = cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus;
    c->max_object_size = 1 * MiB;
    /* Connections: nginx's worker_connections-sized total; one address
     * may hold a sixteenth of it. Idle 5 s, a whole request 10 s (h2o's
     * own default). The body budget is derived in finish. */
    c->http_max_connections = 4096;
    c->http_max_per_client = 256;
    c->http_idle_timeout = 5;
    c->http_request_timeout = 10;
    for (int id = 0; id < TIDE_CFG_COUNT; id++) set_source(c, id, TIDE_SRC_DEFAULT, "%s", "");
    set_source(c, TIDE_CFG_NODE_SIZE, TIDE_SRC_DEFAULT, "auto: %s RAM",
               tide_size_format(c->ram_bytes, ram, sizeof ram));
}

/* ---- parsing one value ------------------------------------------------------- */

/* A decimal number: 0, -1 when it is not one, -2 when it has more digits
 * than 64 bits hold (then it is out of every range, and said so). */
static int parse_uint(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0') return -1;
    if (errno == ERANGE) return -2;
    if (errno) return -1;
    *out = v;
    return 0;
}

/* "1GiB", "512MB", "4096": exact, parseable by tide_size_parse, and the
 * shorter of the largest exact binary and decimal spellings. */
static void size_text(uint64_t v, char *out, size_t cap)
{
    static const char *const bin[] = { "", "KiB", "MiB", "GiB", "TiB", "PiB" },
                      *const dec[] = { "", "KB", "MB", "GB", "TB", "PB" };
    uint64_t b = v, d = v;
    int bi = 0, di = 0;

    while (v != 0 && bi < 5 && b % 1024 == 0) b /= 1024, bi++;
    while (v != 0 && di < 5 && d % 1000 == 0) d /= 1000, di++;
    if (d < b) snprintf(out, cap, "%" PRIu64 "%s", d, dec[di]);
    else snprintf(out, cap, "%" PRIu64 "%s", b, bin[bi]);
}

/* How a value is shown in a message: whole when short, else its first 64
 * bytes and its length (a 5000-byte path must not push the reason out of
 * the message). */
static void show_value(char *out, size_t cap, const char *prefix, const char *val)
{
    size_t n = strlen(val);
    if (n <= 128) snprintf(out, cap, "%s%s", prefix, val);
    else snprintf(out, cap, "%s%.64s... (%zu bytes)", prefix, val, n);
}

static int parse_listen(const char *s, char *host, size_t hcap, unsigned *port, char *why, size_t wcap)
{
    const char *colon, *h = s;
    size_t hlen;
    uint64_t p;

    if (s[0] == '[') {                       /* [v6]:port */
        const char *rb = strchr(s, ']');
        if (rb == NULL || rb[1] != ':') {
            snprintf(why, wcap, "not HOST:PORT (an IPv6 host is written [::1]:8080)");
            return -1;
        }
        h = s + 1, hlen = (size_t)(rb - h), colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL) { snprintf(why, wcap, "not HOST:PORT (no ':PORT')"); return -1; }
        if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
            snprintf(why, wcap, "not HOST:PORT (an IPv6 host is written [::1]:8080)");
            return -1;
        }
        hlen = (size_t)(colon - s);
    }
    if (hlen == 0) { snprintf(why, wcap, "not HOST:PORT (empty host)"); return -1; }
    if (hlen >= hcap) { snprintf(why, wcap, "host is longer than %zu bytes", hcap - 1); return -1; }
    for (size_t i = 0; i < hlen; i++)
        if (h[i] == ' ' || h[i] == '\t' || h[i] == '/') {
            snprintf(why, wcap, "not HOST:PORT (host holds '%c')", h[i]);
            return -1;
        }
    if (parse_uint(colon + 1, &p) != 0 || p < 1 || p > 65535) {
        snprintf(why, wcap, "port '%s' is not a number from 1 to 65535", colon + 1);
        return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (unsigned)p;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "true", "yes", "on" }, *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0)  { *out = 0; return 0; }
    }
    return -1;
}

/*
 * Set setting `id` from `text` for a source of rank `kind`, described by
 * `where` (file:line, variable or flag). `what` is how the value was written,
 * for messages ("tide.cfg:12: [node] cache_budget=12XB"). Returns 0 (also
 * when a higher-ranked source already set it) or TIDE_EINVAL with
 * "<what>: <reason>".
 */
static int set_value(tide_config *c, int id, const char *text, int kind, const char *where,
                     const char *what)
{
    const setting *st = &settings[id];
    char why[256] = "";
    uint64_t v = 0;
    int iv = 0;
    unsigned port = 0;
    int fell_back = 0;     /* nudb_block_size: the value was replaced by 4096 */
    char host[sizeof c->listen_host];

    switch (st->kind) {
    case K_NODE_SIZE:
        iv = -1;
        for (int n = 0; n < TIDE_NODE_SIZE_COUNT; n++)
            if (strcasecmp(text, node_size_names[n]) == 0) iv = n;
        if (iv < 0) snprintf(why, sizeof why, "not a node size (tiny, small, medium, large or huge)");
        break;
    case K_PATH:
        if (text[0] == '\0') snprintf(why, sizeof why, "empty path");
        else if (strlen(text) > TIDE_CONFIG_DATA_DIR_MAX)
            snprintf(why, sizeof why, "path is %zu bytes, longer than %zu bytes (the store's files, "
                     "DIR/nudb.dat, must fit in PATH_MAX, 4096 bytes)", strlen(text),
                     (size_t)TIDE_CONFIG_DATA_DIR_MAX);
        break;
    case K_LISTEN:
        if (strlen(text) >= sizeof c->listen) snprintf(why, sizeof why, "longer than %zu bytes", sizeof c->listen - 1);
        else parse_listen(text, host, sizeof host, &port, why, sizeof why);
        break;
    case K_UINT: {
        int prc = parse_uint(text, &v);
        if (prc == -1)
            snprintf(why, sizeof why, "not a whole number");
        else if (prc == -2)
            snprintf(why, sizeof why, "%.40s is outside %" PRIu64 "..%" PRIu64, text, st->min, st->max);
        else if (v < st->min || v > st->max)
            snprintf(why, sizeof why, "%" PRIu64 " is outside %" PRIu64 "..%" PRIu64, v, st->min, st->max);
        break;
    }
    case K_SIZE:
        if (tide_size_parse(text, &v) != 0) {
            snprintf(why, sizeof why, "not a size (%s)", tide_last_error());
        } else if (v < st->min || v > st->max) {
            char rng[80];
            tide_config_range_text(id, rng, sizeof rng);
            snprintf(why, sizeof why, "%" PRIu64 " bytes is outside %" PRIu64 "..%" PRIu64 " bytes (%s)",
                     v, st->min, st->max, rng);
        }
        break;
    case K_BLOCK: {
        char warn[200];
        v = tide_block_size_parse(text, warn, sizeof warn);
        fell_back = warn[0] != '\0';
        if (fell_back && kind >= c->src[id].kind)
            tide_log(TIDE_LOG_WARN, "%s: %s", what, warn);
        break;
    }
    case K_LEVEL:
        iv = tide_log_level_parse(text);
        if (iv < 0) snprintf(why, sizeof why, "not a log level (debug, info, warn, error or off)");
        break;
    case K_SECRET:
        if (strlen(text) >= sizeof c->metrics_token)
            snprintf(why, sizeof why, "longer than %zu bytes", sizeof c->metrics_token - 1);
        break;
    case K_BOOL:
        if (parse_bool(text, &iv) != 0) snprintf(why, sizeof why, "not 1/0, true/false, yes/no or on/off");
        break;
    case K_TRIM:
        if (tide_trim_policy_parse(text, &iv, &v) != 0)
            snprintf(why, sizeof why, "%s", tide_last_error());
        break;
    }
    if (why[0] != '\0') {
        if (st->kind == K_SECRET)   /* never echo the token */
            return tide_err_set(TIDE_EINVAL, "%s: %s", st->env, why);
        return tide_err_set(TIDE_EINVAL, "%s: %s", what, why);
    }
    if (kind < c->src[id].kind) return 0;   /* a higher-ranked source set it */

    switch (id) {
    case TIDE_CFG_NODE_SIZE:       c->node_size = iv; break;
    case TIDE_CFG_DATA_DIR:        snprintf(c->data_dir, sizeof c->data_dir, "%s", text); break;
    case TIDE_CFG_LISTEN:
        snprintf(c->listen, sizeof c->listen, "%s", text);
        snprintf(c->listen_host, sizeof c->listen_host, "%s", host);
        c->listen_port = port;
        break;
    case TIDE_CFG_SWEEP_INTERVAL:  c->sweep_interval = (unsigned)v; break;
    case TIDE_CFG_CACHE_TARGET:    c->cache_target = v; break;
    case TIDE_CFG_CACHE_AGE:       c->cache_age = v; break;
    case TIDE_CFG_CACHE_BUDGET:    c->cache_budget = v; break;
    case TIDE_CFG_INSERT_BURST:    c->insert_burst = v; break;
    case TIDE_CFG_KEY_CACHE_SIZE:  c->key_cache_size = v; break;
    case TIDE_CFG_KEY_CACHE_AGE:   c->key_cache_age = v; break;
    case TIDE_CFG_NUDB_BLOCK_SIZE: c->nudb_block_size = (unsigned)v; break;
    case TIDE_CFG_LOG_LEVEL:       c->log_level = iv; break;
    case TIDE_CFG_MMAP_THRESHOLD:  c->mmap_threshold = v; c->mmap_threshold_set = 1; break;
    case TIDE_CFG_ARENA_MAX:       c->arena_max = (unsigned)v; break;
    case TIDE_CFG_METRICS_TOKEN:   snprintf(c->metrics_token, sizeof c->metrics_token, "%s", text); break;
    case TIDE_CFG_METRICS_PUBLIC:  c->metrics_public = iv; break;
    case TIDE_CFG_HTTP_THREADS:    c->http_threads = (unsigned)v; break;
    case TIDE_CFG_MAX_OBJECT_SIZE: c->max_object_size = v; break;
    case TIDE_CFG_ADMIN_TOKEN:     snprintf(c->admin_token, sizeof c->admin_token, "%s", text); break;
    case TIDE_CFG_METRICS_SMAPS:   c->metrics_smaps = iv; break;
    case TIDE_CFG_TRIM_POLICY:     c->trim_policy = iv; c->trim_param = v; break;
    case TIDE_CFG_HTTP_MAX_CONNECTIONS: c->http_max_connections = (unsigned)v; break;
    case TIDE_CFG_HTTP_MAX_PER_CLIENT:  c->http_max_per_client = (unsigned)v; break;
    case TIDE_CFG_HTTP_IDLE_TIMEOUT:    c->http_idle_timeout = (unsigned)v; break;
    case TIDE_CFG_HTTP_REQUEST_TIMEOUT: c->http_request_timeout = (unsigned)v; break;
    case TIDE_CFG_HTTP_BODY_BUDGET:     c->http_body_budget = v; break;
    default: break;
    }
    set_source(c, id, kind, "%s%s", where, fell_back ? " invalid, fell back" : "");
    return 0;
}

/* ---- the file ------------------------------------------------------------------ */

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = '\0';
    return s;
}

/* The setting written as [section] key (key "" for a bare value), or -1. */
static int lookup_key(const char *section, const char *key)
{
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const setting *st = &settings[id];
        if (st->section && key[0] != '\0' && strcmp(section, st->section) == 0 && strcmp(key, st->name) == 0)
            return id;
        if (st->alt_section && strcmp(section, st->alt_section) == 0 && strcmp(key, st->alt_key) == 0)
            return id;
    }
    return -1;
}

/* The sections Tide reads; any other is skipped (a rippled.cfg has many). */
static const char *const tide_sections[] = { "node", "node_db", "node_size", "sweep_interval" };
#define N_TIDE_SECTIONS (sizeof tide_sections / sizeof tide_sections[0])

static int known_section(const char *s)
{
    for (size_t i = 0; i < N_TIDE_SECTIONS; i++)
        if (strcmp(s, tide_sections[i]) == 0) return 1;
    return 0;
}

static int bare_section(const char *s)
{
    return strcmp(s, "node_size") == 0 || strcmp(s, "sweep_interval") == 0;
}

/* 1 when a and b differ only in case or by one edit: a letter added,
 * dropped or changed, or two neighbours swapped. */
static int one_edit_apart(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i = 0;

    if (strcasecmp(a, b) == 0) return 1;
    if (la > lb + 1 || lb > la + 1) return 0;
    while (i < la && i < lb && a[i] == b[i]) i++;
    if (la == lb)
        return strcmp(a + i + 1, b + i + 1) == 0
            || (i + 1 < la && a[i] == b[i + 1] && a[i + 1] == b[i] && strcmp(a + i + 2, b + i + 2) == 0);
    return la > lb ? strcmp(a + i + 1, b + i) == 0 : strcmp(a + i, b + i + 1) == 0;
}

/* The Tide section `s` is probably a typo of, or NULL. */
static const char *typo_of_section(const char *s)
{
    for (size_t i = 0; i < N_TIDE_SECTIONS; i++)
        if (one_edit_apart(s, tide_sections[i])) return tide_sections[i];
    return NULL;
}

/* The keys rippled documents for its [node_db] (online deletion, the
 * RocksDB tuning, the cache): expected in a node's own config, and of no
 * use to Tide, so each gets an info line, not a warning. */
static int rippled_node_db_key(const char *k)
{
    static const char *const keys[] = {
        "online_delete", "advisory_delete", "delete_batch", "back_off_milliseconds",
        "age_threshold_seconds", "recovery_wait_seconds", "earliest_seq", "fast_load",
        "cache_size", "cache_age", "open_files", "filter_bits", "cache_mb", "file_size_mb",
        "file_size_mult", "compression",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0) return 1;
    return 0;
}

/* Cut a line at its comment: a '#' anywhere, as rippled reads its own
 * file; "\#" stands for a literal '#'. *glued is set when the '#' touches
 * the text before it ("path=/srv/a#1"), where it may have been meant as
 * part of the value. */
static void strip_comment(char *s, int *glued)
{
    char *w = s;

    *glued = 0;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == '#') { *w++ = '#'; r++; continue; }
        if (*r == '#') {
            *glued = w > s && w[-1] != ' ' && w[-1] != '\t';
            break;
        }
        *w++ = *r;
    }
    *w = '\0';
}

int tide_config_load_file(tide_config *c, const char *path)
{
    FILE *f = NULL;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    unsigned lineno = 0;
    char section[128] = "";
    int skipping = 0;           /* inside a section Tide does not read */
    unsigned seen_line[TIDE_CFG_COUNT] = { 0 };
    unsigned type_line = 0;
    int rc = 0;

    f = fopen(path, "r");
    if (f == NULL) { rc = tide_err_sys(errno, "%s: cannot open the config file", path); goto out; }
    while ((n = getline(&line, &lcap, f)) != -1) {
        char *s = line, *eq, *key, *val, what[512], where[160];
        int id, glued;

        lineno++;
        if (lineno == 1 && n >= 2 && ((s[0] == '\xff' && s[1] == '\xfe') || (s[0] == '\xfe' && s[1] == '\xff'))) {
            rc = tide_err_set(TIDE_EINVAL, "%s:1: the file is UTF-16 (it starts with a UTF-16 byte-order "
                              "mark); save it as UTF-8", path);
            goto out;
        }
        if ((size_t)n != strlen(line)) {
            rc = tide_err_set(TIDE_EINVAL, "%s:%u: the line holds a NUL byte", path, lineno);
            goto out;
        }
        if (lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) s += 3;   /* UTF-8 BOM */
        strip_comment(s, &glued);
        s = trim(s);
        if (*s == '\0' || *s == ';') continue;
        if (*s == '[') {
            char *rb = strchr(s, ']');
            const char *typo;
            if (rb == NULL) {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: %s: unterminated section (no ']')", path, lineno, s);
                goto out;
            }
            if (*trim(rb + 1) != '\0') {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: %s: text after the section's ']'", path, lineno, s);
                goto out;
            }
            *rb = '\0';
            key = trim(s + 1);
            if (*key == '\0') {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: []: a section without a name", path, lineno);
                goto out;
            }
            snprintf(section, sizeof section, "%s", key);
            skipping = !known_section(key);
            if (!skipping) continue;
            /* One edit from a section Tide reads is a typo, not another
             * program's section: skipping it would drop the settings under
             * it without a word. */
            typo = typo_of_section(key);
            if (typo != NULL) {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: [%s]: unknown section; did you mean [%s]? (tide reads "
                                  "[node], [node_db], [node_size] and [sweep_interval] and skips other "
                                  "programs' sections)", path, lineno, key, typo);
                goto out;
            }
            tide_log(TIDE_LOG_INFO, "config %s:%u: section [%s] is not used by tide; skipped", path, lineno, key);
            continue;
        }
        if (skipping) continue;
        if (section[0] == '\0') {
            rc = tide_err_set(TIDE_EINVAL, "%s:%u: %s: a setting before any [section]", path, lineno, s);
            goto out;
        }
        if (glued)
            tide_log(TIDE_LOG_WARN, "config %s:%u: [%s] %s: the '#' after it starts a comment, as in rippled's "
                     "own config; write \\# for a '#' in a value", path, lineno, section, s);
        eq = strchr(s, '=');
        if (bare_section(section)) {
            if (eq != NULL) {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: [%s] %s: expected the value on its own line, "
                                  "not key=value", path, lineno, section, s);
                goto out;
            }
            key = "";
            val = s;
            show_value(where, sizeof where, "", val);
            snprintf(what, sizeof what, "%s:%u: [%s] %s", path, lineno, section, where);
        } else {
            if (eq == NULL) {
                rc = tide_err_set(TIDE_EINVAL, "%s:%u: [%s] %s: expected key=value", path, lineno, section, s);
                goto out;
            }
            *eq = '\0';
            key = trim(s);
            val = trim(eq + 1);
            show_value(where, sizeof where, "", val);
            snprintf(what, sizeof what, "%s:%u: [%s] %s=%s", path, lineno, section, key, where);
            if (strcmp(section, "node_db") == 0 && strcmp(key, "type") == 0) {
                if (type_line) {
                    rc = tide_err_set(TIDE_EINVAL, "%s: duplicate key (first set at %s:%u)", what, path, type_line);
                    goto out;
                }
                if (strcasecmp(val, "NuDB") != 0) {
                    rc = tide_err_set(TIDE_EINVAL, "%s: unsupported type (Tide stores only NuDB)", what);
                    goto out;
                }
                type_line = lineno;
                continue;
            }
        }
        id = lookup_key(section, key);
        if (id < 0 && strcmp(section, "node_db") == 0) {
            /* [node_db] is rippled's section too: its other keys are
             * rippled's business, not errors. A near miss of a key Tide
             * reads is still a typo. */
            static const char *const ours[] = { "type", "path", "nudb_block_size" };
            for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
                if (one_edit_apart(key, ours[i])) {
                    rc = tide_err_set(TIDE_EINVAL, "%s: unknown key in [node_db]; did you mean %s?", what, ours[i]);
                    goto out;
                }
            if (rippled_node_db_key(key))
                tide_log(TIDE_LOG_INFO, "config %s:%u: [node_db] %s is rippled's, not used by tide; ignored",
                         path, lineno, key);
            else
                tide_log(TIDE_LOG_WARN, "%s: unknown key in [node_db], ignored (tide reads type, path and "
                         "nudb_block_size there)", what);
            continue;
        }
        if (id < 0) {
            rc = tide_err_set(TIDE_EINVAL, "%s: unknown key in [%s]", what, section);
            goto out;
        }
        if (seen_line[id]) {
            rc = tide_err_set(TIDE_EINVAL, "%s: duplicate key (%s first set at %s:%u)",
                              what, settings[id].name, path, seen_line[id]);
            goto out;
        }
        seen_line[id] = lineno;
        snprintf(where, sizeof where, "%s:%u", path, lineno);
        rc = set_value(c, id, val, TIDE_SRC_FILE, where, what);
        if (rc) goto out;
    }
    if (ferror(f)) rc = tide_err_sys(errno, "%s: read failed after line %u", path, lineno);
out:
    free(line);
    if (f) fclose(f);
    return rc;
}

/* ---- the environment ---------------------------------------------------------------- */

static const char *real_getenv(void *arg, const char *name)
{
    (void)arg;
    return getenv(name);
}

int tide_config_apply_env(tide_config *c, tide_config_getenv_fn get, void *arg)
{
    int rc = 0;

    if (get == NULL) get = real_getenv;
    for (int id = 0; id < TIDE_CFG_COUNT && rc == 0; id++) {
        const char *v = get(arg, settings[id].env);
        char what[512], prefix[64], *copy;

        if (v == NULL || v[0] == '\0') continue;
        /* A copy of the whole value (not of a fixed buffer's worth): the
         * length checks must see what the operator wrote. */
        copy = strdup(v);
        if (copy == NULL) return tide_err_set(TIDE_ENOMEM, "%s: copying its value", settings[id].env);
        snprintf(prefix, sizeof prefix, "%s=", settings[id].env);
        char *val = trim(copy);
        show_value(what, sizeof what, prefix, val);
        rc = set_value(c, id, val, TIDE_SRC_ENV, settings[id].env, what);
        free(copy);
    }
    return rc;
}

/* ---- flags ------------------------------------------------------------------------ */

int tide_config_apply_args(tide_config *c, int argc, char **argv)
{
    struct option opts[TIDE_CFG_COUNT + 2];
    int nopt = 0, ch, rc = 0;

    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (settings[id].flag == NULL) continue;
        opts[nopt++] = (struct option){ settings[id].flag, required_argument, NULL, 1000 + id };
    }
    opts[nopt++] = (struct option){ "config", required_argument, NULL, 999 };
    opts[nopt] = (struct option){ NULL, 0, NULL, 0 };

    optind = 0;          /* glibc: a full re-initialisation */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        char what[512], where[64], prefix[64];
        int id;

        if (ch == '?')
            return tide_err_set(TIDE_EINVAL, "%s: unknown flag", argv[optind - 1]);
        if (ch == ':')
            return tide_err_set(TIDE_EINVAL, "%s: missing its value", argv[optind - 1]);
        if (ch == 999) continue;
        id = ch - 1000;
        snprintf(where, sizeof where, "--%s", settings[id].flag);
        snprintf(prefix, sizeof prefix, "--%s=", settings[id].flag);
        show_value(what, sizeof what, prefix, optarg);
        rc = set_value(c, id, optarg, TIDE_SRC_FLAG, where, what);
        if (rc) return rc;
    }
    if (optind < argc)
        return tide_err_set(TIDE_EINVAL, "%s: unexpected argument (settings are --name=value)", argv[optind]);
    return 0;
}

/* ---- finish ----------------------------------------------------------------------- */

int tide_config_finish(tide_config *c)
{
    if (c->node_size < 0 || c->node_size >= TIDE_NODE_SIZE_COUNT)
        return tide_err_set(TIDE_EINVAL, "node_size %d is not a preset", c->node_size);
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (!settings[id].from_preset || c->src[id].kind != TIDE_SRC_DEFAULT) continue;
        fill_preset(c, id, &presets[c->node_size]);
        set_source(c, id, TIDE_SRC_PRESET, "%s", node_size_names[c->node_size]);
    }
    /* Only when the operator chose one of the pair: the defaults must not warn. */
    if (c->cache_age < c->sweep_interval && (c->src[TIDE_CFG_CACHE_AGE].kind >= TIDE_SRC_FILE
                                              || c->src[TIDE_CFG_SWEEP_INTERVAL].kind >= TIDE_SRC_FILE))
        tide_log(TIDE_LOG_WARN, "cache_age=%" PRIu64 " is below sweep_interval=%u: node cache entries "
                 "live up to %u s anyway", c->cache_age, c->sweep_interval, c->sweep_interval);
    if (c->key_cache_age < c->sweep_interval && (c->src[TIDE_CFG_KEY_CACHE_AGE].kind >= TIDE_SRC_FILE
                                                  || c->src[TIDE_CFG_SWEEP_INTERVAL].kind >= TIDE_SRC_FILE))
        tide_log(TIDE_LOG_WARN, "key_cache_age=%" PRIu64 " is below sweep_interval=%u: key cache entries "
                 "live up to %u s anyway", c->key_cache_age, c->sweep_interval, c->sweep_interval);
    if (c->src[TIDE_CFG_HTTP_BODY_BUDGET].kind == TIDE_SRC_DEFAULT) {
        c->http_body_budget = c->max_object_size > 16 * MiB ? 4 * c->max_object_size : 64 * MiB;
        set_source(c, TIDE_CFG_HTTP_BODY_BUDGET, TIDE_SRC_DEFAULT, "%s", "max(64MiB, 4 x max_object_size)");
    } else if (c->http_body_budget < c->max_object_size) {
        char b[32], m[32];
        return tide_err_set(TIDE_EINVAL, "http_body_budget=%s (%s) is below max_object_size=%s (%s): one "
                            "request of max_object_size must fit in the budget", tide_size_format(c->http_body_budget, b, sizeof b),
                            c->src[TIDE_CFG_HTTP_BODY_BUDGET].where, tide_size_format(c->max_object_size, m, sizeof m),
                            c->src[TIDE_CFG_MAX_OBJECT_SIZE].where[0] ? c->src[TIDE_CFG_MAX_OBJECT_SIZE].where : "default");
    }
    if (c->metrics_public && c->metrics_token[0] != '\0')
        tide_log(TIDE_LOG_WARN, "TIDE_METRICS_PUBLIC=1: /metrics needs no token; TIDE_METRICS_TOKEN "
                 "is ignored there");
    return 0;
}

/* ---- describe ------------------------------------------------------------------------ */

/* The value of setting `id` as describe shows it, without its source. */
static void value_text(const tide_config *c, int id, char *out, size_t cap)
{
    switch (id) {
    case TIDE_CFG_NODE_SIZE:      snprintf(out, cap, "%s", tide_config_node_size_name(c->node_size)); break;
    case TIDE_CFG_DATA_DIR:       snprintf(out, cap, "%s", c->data_dir); break;
    case TIDE_CFG_LISTEN:         snprintf(out, cap, "%s", c->listen); break;
    case TIDE_CFG_SWEEP_INTERVAL: snprintf(out, cap, "%u", c->sweep_interval); break;
    case TIDE_CFG_CACHE_TARGET:   snprintf(out, cap, "%" PRIu64, c->cache_target); break;
    case TIDE_CFG_CACHE_AGE:      snprintf(out, cap, "%" PRIu64, c->cache_age); break;
    case TIDE_CFG_CACHE_BUDGET:   size_text(c->cache_budget, out, cap); break;
    case TIDE_CFG_INSERT_BURST:   size_text(c->insert_burst, out, cap); break;
    case TIDE_CFG_KEY_CACHE_SIZE: snprintf(out, cap, "%" PRIu64, c->key_cache_size); break;
    case TIDE_CFG_KEY_CACHE_AGE:  snprintf(out, cap, "%" PRIu64, c->key_cache_age); break;
    case TIDE_CFG_NUDB_BLOCK_SIZE: snprintf(out, cap, "%u", c->nudb_block_size); break;
    case TIDE_CFG_LOG_LEVEL:      snprintf(out, cap, "%s", tide_log_level_name(c->log_level)); break;
    case TIDE_CFG_MMAP_THRESHOLD:
        if (c->mmap_threshold_set) size_text(c->mmap_threshold, out, cap);
        else snprintf(out, cap, "unset");
        break;
    case TIDE_CFG_ARENA_MAX:
        if (c->arena_max) snprintf(out, cap, "%u", c->arena_max);
        else snprintf(out, cap, "unset");
        break;
    case TIDE_CFG_METRICS_TOKEN:  snprintf(out, cap, "%s", c->metrics_token[0] ? "set" : "unset"); break;
    case TIDE_CFG_METRICS_PUBLIC: snprintf(out, cap, "%d", c->metrics_public); break;
    case TIDE_CFG_HTTP_THREADS:   snprintf(out, cap, "%u", c->http_threads); break;
    case TIDE_CFG_MAX_OBJECT_SIZE: size_text(c->max_object_size, out, cap); break;
    case TIDE_CFG_ADMIN_TOKEN:    snprintf(out, cap, "%s", c->admin_token[0] ? "set" : "unset"); break;
    case TIDE_CFG_METRICS_SMAPS:  snprintf(out, cap, "%d", c->metrics_smaps); break;
    case TIDE_CFG_TRIM_POLICY:    tide_trim_policy_format(c->trim_policy, c->trim_param, out, cap); break;
    case TIDE_CFG_HTTP_MAX_CONNECTIONS: snprintf(out, cap, "%u", c->http_max_connections); break;
    case TIDE_CFG_HTTP_MAX_PER_CLIENT:  snprintf(out, cap, "%u", c->http_max_per_client); break;
    case TIDE_CFG_HTTP_IDLE_TIMEOUT:    snprintf(out, cap, "%u", c->http_idle_timeout); break;
    case TIDE_CFG_HTTP_REQUEST_TIMEOUT: snprintf(out, cap, "%u", c->http_request_timeout); break;
    case TIDE_CFG_HTTP_BODY_BUDGET:     size_text(c->http_body_budget, out, cap); break;
    default: out[0] = '\0'; break;
    }
}

size_t tide_config_describe_one(const tide_config *c, int id, char *buf, size_t cap)
{
    char dummy[1];

    if (cap == 0) buf = dummy, cap = 1;
    value_text(c, id, buf, cap);
    return strlen(buf);
}

size_t tide_config_describe(const tide_config *c, char *buf, size_t cap)
{
    size_t len = 0;
    char dummy[1];

    if (buf == NULL || cap == 0) buf = dummy, cap = 1;
    buf[0] = '\0';
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        char val[4160], src[200], piece[4500];
        const tide_config_source *s = &c->src[id];
        int w;

        value_text(c, id, val, sizeof val);
        switch (s->kind) {
        case TIDE_SRC_PRESET: snprintf(src, sizeof src, "preset %s", s->where); break;
        case TIDE_SRC_FILE:   snprintf(src, sizeof src, "file %s", s->where); break;
        case TIDE_SRC_ENV:    snprintf(src, sizeof src, "env %s", s->where); break;
        case TIDE_SRC_FLAG:   snprintf(src, sizeof src, "flag %s", s->where); break;
        default:
            if (s->where[0]) snprintf(src, sizeof src, "default %s", s->where);
            else snprintf(src, sizeof src, "default");
            break;
        }
        w = snprintf(piece, sizeof piece, "%s%s=%s(%s)", id ? " " : "", settings[id].name, val, src);
        if (w < 0) continue;
        if ((size_t)w >= sizeof piece) w = (int)sizeof piece - 1;
        if (len + 1 < cap) {                 /* room for at least one byte */
            size_t room = cap - 1 - len, take = (size_t)w < room ? (size_t)w : room;
            memcpy(buf + len, piece, take);
            buf[len + take] = '\0';
        }
        len += (size_t)w;
    }
    return len;
}

/* ---- unbounded consumers ----------------------------------------------------------------- */

static void hint(int id, char *out, size_t cap)
{
    snprintf(out, cap, "set --%s / %s / [node] %s", settings[id].flag, settings[id].env, settings[id].name);
}

int tide_config_unbounded(const tide_config *c, int alloc_family, tide_config_unbounded_fn fn, void *arg)
{
    char how[160];
    int n = 0;

    if (c->cache_budget == 0)   { hint(TIDE_CFG_CACHE_BUDGET, how, sizeof how); fn(arg, "node_cache", how); n++; }
    if (c->key_cache_size == 0) { hint(TIDE_CFG_KEY_CACHE_SIZE, how, sizeof how); fn(arg, "key_cache", how); n++; }
    if (c->arena_max == 0 && alloc_family == TIDE_MEM_ALLOC_GLIBC) { hint(TIDE_CFG_ARENA_MAX, how, sizeof how); fn(arg, "malloc_arenas", how); n++; }
    return n;
}
