/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.c: the node's settings, where they come from, and what they mean.
 *
 * Every setting lives in one row of `ti_config_settings[]` below: its name (its
 * tide_config field's too, by FIELD), its flag,
 * its environment variable, its config-file key (section and key), how its
 * text is parsed, its range, its group (the startup log's line and
 * --check-config's block), its default (text that tide_config_defaults
 * parses like any source's, its value in each node_size preset, or the
 * function that computes it), its --help description, its field in
 * tide_config (FIELD: offset, size and C type), the function that prints
 * its value, and where the node's options take it (NODE: a field of
 * tide_node_opts; or a small to_node function where the value changes on
 * the way, as sweep_interval's seconds become milliseconds). Parsing from
 * every source, describe, --help, the startup log and
 * tide_startup_node_opts loop over the rows; no code lists the settings
 * one by one to read, store, print or pass them on, so a new setting is
 * its id, its field, its row and the code that uses its value (and, for
 * one the file may hold, its block in contrib/tide.cfg, which
 * tests/test_check_config.c holds to the table). Only the
 * rules that join settings name theirs: finish's checks, config_mem.c's
 * budgets, and generations, which the node is given (and describe shows)
 * only when an operator set it. tided's --help is printed from the rows (tide_config_help),
 * so no range or default is written twice. The four sources all go through one
 * function, ti_config_set_value(), so a value means the same thing whether it was
 * written as --cache-budget=1GiB, TIDE_CACHE_BUDGET=1GiB or
 * "[node] cache_budget=1GiB". An empty value is refused from each: a
 * variable that is set but empty is not taken for unset (apply_env), since
 * TIDE_MEMORY_LIMIT=$LIMIT with LIMIT unset would drop the limit in
 * silence.
 *
 * Precedence: flag > environment > config file > node_size preset > built-in
 * default. ti_config_set_value() overwrites a setting only when the new source ranks at
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
 * The file (config_file.c) is in XRP Ledger's INI style, so that tided can
 * be pointed at a node's own rippled.cfg. A setting's file key is its name,
 * except where rippled's [node_db] has a key of that name that counts
 * something else (online_delete: ledgers; delete_batch: SQL records):
 * there the row's file_key carries Tide's unit (online_delete_objects), and
 * rippled's key is never read; finish refuses it while the setting is
 * given nowhere (ti_config_rippled_keys). --help (config_help.c) is
 * written from the rows. Both reach the settings through config_impl.h:
 * the table, the presets and ti_config_set_value.
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
 * (visible in ps) or in a file that gets pasted into tickets. A token may
 * also be read from a file of its own (metrics_token_file and
 * admin_token_file, [http] keys, or systemd's credentials; config_systemd.c),
 * whose path may be anywhere but a flag. describe() prints the token as
 * "set" or "unset", never its text.
 *
 * The memory limit is read here like any setting; where it
 * comes from when unset (the cgroup) and the budgets it gives live in
 * config_mem.c, whose values carry the source TIDE_SRC_DERIVED ("cgroup v2
 * /sys/fs/cgroup/x", "memory_limit 20%"), printed alone by describe.
 *
 * Layout: node_size's names and RAM rule; the functions rows point to
 * (formatters, the stores of a value wider than its field, the computed
 * defaults, the node options that are not one number); the table; then
 * defaults, parsing, the environment, flags, finish, describe, groups.
 *
 * Invariants:
 *   1. Every setting has a source; src[id].kind only rises during loading,
 *      except that finish() may turn DEFAULT into PRESET, and DEFAULT or
 *      PRESET into DERIVED (config_mem.c).
 *   2. After a successful finish() every value is within its range.
 *   3. Every row's `def` parses as its own kind and range (asserted by
 *      tide_config_defaults), so a default cannot break its own rule.
 *   4. A row's FIELD is of the C type its kind stores: an int for the
 *      words (K_BOOL, K_LEVEL, ...), an unsigned or a uint64_t for the
 *      numbers, a char array for the texts; the few whose value is more
 *      than its field (listen, trim_policy, ...) have a store function.
 *
 * Never: print metrics_token; turn a bad value into a default silently
 * (nudb_block_size falls back, and says so); truncate a value; skip a
 * section or key without a line in the log.
 */
#include "node/config_impl.h"
#include "mem/alloc.h"
#include "node/node.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gen/manifest.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* http_threads left unset: one event loop per online CPU, up to this many. */
#define HTTP_THREADS_AUTO_MAX 4
/* store_workers left unset: two per online CPU (a worker mostly waits for
 * a read or an insert pool's room, not the CPU), within these bounds. */
#define STORE_WORKERS_AUTO_MIN 2
#define STORE_WORKERS_AUTO_MAX 16

/* http_body_budget left unset: max(BODY_BUDGET_FLOOR, 4 x max_object_size);
 * the text is what describe and --help show for it. */
#define BODY_BUDGET_FLOOR (64 * MiB)
#define BODY_BUDGET_DEFAULT_TEXT "max(64MiB, 4 x max_object_size)"

/* ---- node_size (docs/ARCHITECTURE.md, "node_size presets") ----------------- */


const char *const ti_config_node_size_names[TIDE_NODE_SIZE_COUNT] = {
    "tiny", "small", "medium", "large", "huge"
};

/* node_size left unset: the first size whose bound total RAM is below
 * (one step per doubling), else huge. */
const uint64_t ti_config_node_size_ram_below[TIDE_NODE_SIZE_COUNT - 1] = {
    8 * GiB, 16 * GiB, 32 * GiB, 64 * GiB
};

/* ---- the rows' functions ---------------------------------------------------- */

/* A value parsed from its text, before it is stored. */
typedef struct ti_config_parsed {
    uint64_t v;            /* K_UINT, K_SIZE, K_BLOCK, K_ONLINE; K_TRIM's param */
    int      iv;           /* K_NODE_SIZE, K_LEVEL, K_BOOL; K_TRIM's policy;
                              K_ONLINE: 1 when generations are on */
    unsigned port;         /* K_LISTEN */
    int      fell_back;    /* K_BLOCK: the value was replaced by the default */
    unsigned pct[4];       /* K_LEVELS: [0] 0, then soft, high, critical */
    char     host[sizeof ((tide_config *)0)->listen_host];   /* K_LISTEN */
} parsed;

static const void *field_of(const tide_config *c, const ti_config_setting *st)
{
    return (const char *)c + st->offset;
}

/* (config_impl.h) */
uint64_t ti_config_number(const tide_config *c, int id)
{
    const ti_config_setting *st = &ti_config_settings[id];
    const void *f = field_of(c, st);

    switch (st->storage) {
    case TI_INT:      return (uint64_t)*(const int *)f;
    case TI_UNSIGNED: return *(const unsigned *)f;
    case TI_U64:      return *(const uint64_t *)f;
    default:          return 0;
    }
}

/* Put number v into setting st's field, as its storage holds it. */
static void set_number(tide_config *c, const ti_config_setting *st, uint64_t v)
{
    void *f = (char *)c + st->offset;

    switch (st->storage) {
    case TI_INT:      *(int *)f = (int)v; break;
    case TI_UNSIGNED: *(unsigned *)f = (unsigned)v; break;
    case TI_U64:      *(uint64_t *)f = v; break;
    default:          TIDE_ASSERT(!"a number setting without a number field"); break;
    }
}

/* The formatters: the value alone, as describe and --check-config print it. */
static void fmt_number(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    if (st->storage == TI_INT) snprintf(out, cap, "%d", *(const int *)field_of(c, st));
    else snprintf(out, cap, "%" PRIu64, ti_config_number(c, (int)(st - ti_config_settings)));
}

static void fmt_size(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    ti_config_size_text(ti_config_number(c, (int)(st - ti_config_settings)), out, cap);
}

/* 0 is "unset" (arena_max: glibc's own). */
static void fmt_number_or_unset(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    if (ti_config_number(c, (int)(st - ti_config_settings)) == 0) snprintf(out, cap, "unset");
    else fmt_number(c, st, out, cap);
}

/* 0 is "none" (memory_limit: no limit anywhere). */
static void fmt_size_or_none(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    if (ti_config_number(c, (int)(st - ti_config_settings)) == 0) snprintf(out, cap, "none");
    else fmt_size(c, st, out, cap);
}

static void fmt_on_off(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    snprintf(out, cap, "%s", *(const int *)field_of(c, st) ? "on" : "off");
}

/* A K_CHOICE setting: its word. */
static void fmt_choice(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    snprintf(out, cap, "%s", st->choices[*(const int *)field_of(c, st)]);
}

static void fmt_text(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    snprintf(out, cap, "%s", (const char *)field_of(c, st));
}

static void fmt_text_or_unset(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    const char *s = field_of(c, st);
    snprintf(out, cap, "%s", s[0] ? s : "unset");
}

/* A token: whether it is set, never its text. */
static void fmt_secret(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    snprintf(out, cap, "%s", ((const char *)field_of(c, st))[0] ? "set" : "unset");
}

static void fmt_node_size(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    (void)st;
    snprintf(out, cap, "%s", tide_config_node_size_name(c->node_size));
}

static void fmt_log_level(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    (void)st;
    snprintf(out, cap, "%s", tide_log_level_name(c->log_level));
}

static void fmt_log_format(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    (void)st;
    snprintf(out, cap, "%s", tide_log_format_name(c->log_format));
}

/* Unset until a source gave one: glibc's dynamic threshold. */
static void fmt_mmap_threshold(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    if (c->mmap_threshold_set) fmt_size(c, st, out, cap);
    else snprintf(out, cap, "unset");
}

static void fmt_trim_policy(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    (void)st;
    tide_trim_policy_format(c->trim_policy, c->trim_param, out, cap);
}

static void fmt_online_delete(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    if (c->online_delete_on && c->online_delete == 0) snprintf(out, cap, "manual");
    else fmt_number(c, st, out, cap);
}

static void fmt_memory_levels(const tide_config *c, const ti_config_setting *st, char *out, size_t cap)
{
    (void)st;
    snprintf(out, cap, "%u,%u,%u", c->memory_levels[1], c->memory_levels[2], c->memory_levels[3]);
}

/* The stores of the settings whose value is more than their field. */
static void store_listen(tide_config *c, const ti_config_setting *st, const parsed *p, const char *text)
{
    (void)st;
    snprintf(c->listen, sizeof c->listen, "%s", text);
    snprintf(c->listen_host, sizeof c->listen_host, "%s", p->host);
    c->listen_port = p->port;
}

static void store_mmap_threshold(tide_config *c, const ti_config_setting *st, const parsed *p, const char *text)
{
    (void)st, (void)text;
    c->mmap_threshold = p->v;
    c->mmap_threshold_set = 1;
}

static void store_trim_policy(tide_config *c, const ti_config_setting *st, const parsed *p, const char *text)
{
    (void)st, (void)text;
    c->trim_policy = p->iv;
    c->trim_param = p->v;
}

static void store_online_delete(tide_config *c, const ti_config_setting *st, const parsed *p, const char *text)
{
    (void)st, (void)text;
    c->online_delete_on = p->iv;
    c->online_delete = p->v;
}

static void store_memory_levels(tide_config *c, const ti_config_setting *st, const parsed *p, const char *text)
{
    (void)st, (void)text;
    memcpy(c->memory_levels, p->pct, sizeof c->memory_levels);
}

/* The defaults computed from the machine. */
static void default_node_size(tide_config *c, const ti_config_setting *st)
{
    char ram[32];

    c->node_size = tide_config_node_size_for_ram(c->ram_bytes);
    ti_config_set_source(c, (int)(st - ti_config_settings), TIDE_SRC_DEFAULT, "auto: %s RAM",
                         tide_size_format(c->ram_bytes, ram, sizeof ram));
}

/* The store's own default (tide_block_size_parse's fallback too). */
static void default_block_size(tide_config *c, const ti_config_setting *st)
{
    set_number(c, st, TIDE_BLOCK_SIZE_DEFAULT);
}

static void default_http_threads(tide_config *c, const ti_config_setting *st)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    set_number(c, st, cpus < 1 ? 1 : cpus > HTTP_THREADS_AUTO_MAX ? HTTP_THREADS_AUTO_MAX : (unsigned)cpus);
}

static void default_store_workers(tide_config *c, const ti_config_setting *st)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    set_number(c, st, cpus * 2 < STORE_WORKERS_AUTO_MIN ? STORE_WORKERS_AUTO_MIN
                      : cpus * 2 > STORE_WORKERS_AUTO_MAX ? STORE_WORKERS_AUTO_MAX : (unsigned)(cpus * 2));
}

/* The node's options that are not one number of the setting's. */
static void node_dir(const tide_config *c, tide_node_opts *o)
{
    o->dir = c->data_dir;
}

static void node_sweep_interval(const tide_config *c, tide_node_opts *o)
{
    o->sweep_interval_ms = (uint64_t)c->sweep_interval * 1000u;
}

static void node_trim_policy(const tide_config *c, tide_node_opts *o)
{
    o->trim_policy = c->trim_policy;
    o->trim_param = c->trim_param;
}

static void node_online_delete(const tide_config *c, tide_node_opts *o)
{
    o->online_delete_on = c->online_delete_on;
    o->online_delete = c->online_delete;
}

/* Only the operator's G (flag, env, file) is passed; otherwise 0, the
 * manifest's own keep: the default 2 must not shrink a larger ring. */
static void node_generations(const tide_config *c, tide_node_opts *o)
{
    o->generations = c->src[TIDE_CFG_GENERATIONS].kind >= TIDE_SRC_FILE ? c->generations : 0;
}

static void node_memory_levels(const tide_config *c, tide_node_opts *o)
{
    memcpy(o->memory_pct, c->memory_levels, sizeof o->memory_pct);
}

/* ---- the settings table ----------------------------------------------------- */

/*
 * One row per setting, in the order describe prints them. A row's .preset
 * holds its value in each node_size preset, tiny to huge; FIELD names its
 * field in tide_config, NODE its field in tide_node_opts.
 */
const ti_config_setting ti_config_settings[TIDE_CFG_COUNT] = {
    [TIDE_CFG_NODE_SIZE] = {
        FIELD(node_size), .flag = "node-size", .env = "TIDE_NODE_SIZE",
        .section = "node", .alt_section = "node_size", .alt_key = "",
        .kind = K_NODE_SIZE, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_node_size,
        .computed = default_node_size,
        .arg = "SIZE",
        .help = "the preset for" },     /* + the preset rows' names: tide_config_help */
    [TIDE_CFG_DATA_DIR] = {
        FIELD(data_dir), .flag = "data-dir", .env = "TIDE_DATA_DIR",
        .section = "node", .alt_section = "node_db", .alt_key = "path",
        .kind = K_PATH, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_text, .to_node = node_dir,
        .def = "./data", .arg = "DIR",
        .help = "the store's directory, created with an empty store on first run. Under systemd "
                "(StateDirectory=) the default is $STATE_DIRECTORY's first path instead; its source "
                "then reads STATE_DIRECTORY." },
    [TIDE_CFG_LISTEN] = {
        FIELD(listen), .flag = "listen", .env = "TIDE_LISTEN", .section = "node",
        .kind = K_LISTEN, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_text,
        .store = store_listen,
        .def = "127.0.0.1:8080", .arg = "HOST:PORT",
        .help = "the address to serve on; IPv6 as [::1]:8080. The default is loopback only: put a "
                "proxy with TLS in front to serve further." },
    [TIDE_CFG_SWEEP_INTERVAL] = {
        FIELD(sweep_interval), .flag = "sweep-interval", .env = "TIDE_SWEEP_INTERVAL",
        .section = "node", .alt_section = "sweep_interval", .alt_key = "",
        .kind = K_UINT, .min = 10, .max = 600, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, .to_node = node_sweep_interval,
        .from_preset = 1, .preset = { 10, 30, 60, 90, 120 },
        .arg = "SECONDS",
        .help = "seconds between sweeps of the caches (each followed by one malloc trim), counted "
                "from the end of the previous sweep. Preset." },
    [TIDE_CFG_CACHE_TARGET] = {
        FIELD(cache_target), .flag = "cache-target", .env = "TIDE_CACHE_TARGET", .section = "node",
        .kind = K_UINT, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, NODE(cache_target),
        .from_preset = 1, .preset = { 262144, 524288, 2097152, 4194304, 8388608 },
        .arg = "N",
        .help = "node cache target in entries; above it entries age faster. Preset." },
    [TIDE_CFG_CACHE_AGE] = {
        FIELD(cache_age), .flag = "cache-age", .env = "TIDE_CACHE_AGE", .section = "node",
        .kind = K_UINT, .min = 1, .max = 86400, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, NODE(cache_age_s),
        .from_preset = 1, .preset = { 30, 60, 90, 120, 900 },
        .arg = "SECONDS",
        .help = "seconds an unused object stays in the node cache. Preset." },
    /* 2 * cache_budget is the node cache's hard limit and 2 * insert_burst
     * what the store's two pools may hold: TIDE_CONFIG_BYTES_MAX keeps both
     * products exact (config.h). */
    [TIDE_CFG_CACHE_BUDGET] = {
        FIELD(cache_budget), .flag = "cache-budget", .env = "TIDE_CACHE_BUDGET", .section = "node",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_size, NODE(cache_budget),
        .from_preset = 1, .preset = { 64 * MiB, 256 * MiB, 1 * GiB, 4 * GiB, 16 * GiB },
        .arg = "SIZE",
        .help = "bytes the node cache is swept down to (0: unbounded). Preset." },
    /* The store's insert pool is always bounded (0 used to be taken for
     * "unbounded" here while the store used its 16 MiB default): at least
     * 64 KiB, so one commit's worth of small inserts fits. */
    [TIDE_CFG_INSERT_BURST] = {
        FIELD(insert_burst), .flag = "insert-burst", .env = "TIDE_INSERT_BURST", .section = "node",
        .kind = K_SIZE, .min = 64 * 1024, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_size, NODE(insert_burst),
        .from_preset = 1, .preset = { 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 48 * MiB },
        .arg = "SIZE",
        .help = "bytes of pending inserts before a PUT waits for a commit. Preset." },
    /* The key cache is not in XRP Ledger's table; Tide's defaults: 64 Ki
     * recent misses kept for 30 s. */
    [TIDE_CFG_KEY_CACHE_SIZE] = {
        FIELD(key_cache_size), .flag = "key-cache-size", .env = "TIDE_KEY_CACHE_SIZE", .section = "node",
        .kind = K_UINT, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, NODE(key_cache_size),
        .def = "65536", .arg = "N",
        .help = "target entries of the key cache of recent misses (0: unbounded)." },
    [TIDE_CFG_KEY_CACHE_AGE] = {
        FIELD(key_cache_age), .flag = "key-cache-age", .env = "TIDE_KEY_CACHE_AGE", .section = "node",
        .kind = K_UINT, .min = 1, .max = 86400, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, NODE(key_cache_age_s),
        .def = "30", .arg = "SECONDS",
        .help = "seconds a recent miss is remembered." },
    [TIDE_CFG_NUDB_BLOCK_SIZE] = {
        FIELD(nudb_block_size), .flag = "nudb-block-size", .env = "TIDE_NUDB_BLOCK_SIZE",
        .section = "node", .alt_section = "node_db", .alt_key = "nudb_block_size",
        .kind = K_BLOCK, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_number, NODE(block_size),
        .computed = default_block_size,
        .arg = "BYTES",
        .help = "key-file block size for a new store (an invalid value warns and uses the default). "
                "An existing store keeps its own; 'tide rekey' changes it." },
    /* On by default: a fetch through the maps costs about 0.75 of the CPU
     * of one through pread for the key file, and about 0.7 again for the
     * data file (docs/PERFORMANCE.md). One setting for both maps: they
     * fail the same way (a disk read error under either is a SIGBUS, not
     * an EIO), so the disk that needs one off needs both off. */
    [TIDE_CFG_STORE_KEY_MAP] = {
        FIELD(store_key_map), .flag = "store-key-map", .env = "TIDE_STORE_KEY_MAP", .section = "node",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_on_off, NODE(store_key_map),
        .def = "on", .arg = "on|off",
        .help = "on: fetches and the insert's duplicate check search nudb.key's buckets in place "
                "through a read-only map of the file, and read nudb.dat's records and spill records "
                "through another (file-backed page cache, not anonymous memory); off: they read "
                "each bucket and record with pread. Turn it "
                "off on a disk that returns read errors: a bad sector under the map kills tided with "
                "SIGBUS, where pread gives that request an I/O error (a 500) and tided goes on. On "
                "tmpfs nothing is mapped (the pages would count as tided's shared memory)." },
    /* The node cache's objects in segments Tide maps itself, compacted and
     * given back after each sweep (mem/arena.h); off keeps them on malloc,
     * for side-by-side runs. */
    [TIDE_CFG_CACHE_ARENA] = {
        FIELD(cache_arena), .flag = "cache-arena", .env = "TIDE_CACHE_ARENA", .section = "node",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_on_off, NODE(cache_arena),
        .def = "on", .arg = "on|off",
        .help = "on: the node cache keeps its objects and entries in 2 MiB segments tided maps "
                "itself, and the key cache its entries in 64 KiB ones; after each sweep the live "
                "allocations of the least-used segments are copied together "
                "(cache_arena_evacuate) and empty segments go back to the kernel with one "
                "madvise each, so what a sweep frees leaves RSS whatever the allocator. off: "
                "each object and entry is malloc'd, and what a sweep frees goes back only as "
                "the allocator's trim can return it." },
    [TIDE_CFG_CACHE_ARENA_SEGMENT] = {
        FIELD(cache_arena_segment), .flag = "cache-arena-segment", .env = "TIDE_CACHE_ARENA_SEGMENT",
        .section = "node",
        .kind = K_SIZE, .min = 64 * 1024, .max = 1 * GiB, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_size, NODE(cache_arena_segment),
        .power_of_two = 1,
        .def = "2MiB", .arg = "SIZE",
        .help = "the arena's segment, a power of two: the unit memory goes back to the kernel in. "
                "Objects above a quarter of it get a mapping of their own." },
    [TIDE_CFG_CACHE_ARENA_RESERVE] = {
        FIELD(cache_arena_reserve), .flag = "cache-arena-reserve", .env = "TIDE_CACHE_ARENA_RESERVE",
        .section = "node",
        .kind = K_UINT, .max = 1024, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_number, NODE(cache_arena_reserve),
        .def = "1", .arg = "N",
        .help = "empty segments the arena keeps resident for the next allocations instead of "
                "giving them back." },
    [TIDE_CFG_CACHE_ARENA_EVACUATE] = {
        FIELD(cache_arena_evacuate), .flag = "cache-arena-evacuate", .env = "TIDE_CACHE_ARENA_EVACUATE",
        .section = "node",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_size, NODE(cache_arena_evacuate),
        .def = "64MiB", .arg = "SIZE",
        .help = "bytes of live objects a sweep may copy to empty the arena's least-used segments "
                "(0: none; empty segments still go back). A request waits at most one object's "
                "copy." },
    [TIDE_CFG_CACHE_ARENA_HUGEPAGES] = {
        FIELD(cache_arena_hugepages), .flag = "cache-arena-hugepages", .env = "TIDE_CACHE_ARENA_HUGEPAGES",
        .section = "node",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_on_off, NODE(cache_arena_hugepages),
        .def = "off", .arg = "on|off",
        .help = "on: ask the kernel for transparent huge pages in each segment the arena brings "
                "into use (madvise MADV_HUGEPAGE; it acts when "
                "/sys/kernel/mm/transparent_hugepage/enabled is madvise or always). A segment "
                "is then resident whole from its first object, and an empty one still goes back "
                "whole. off: the kernel's default for the mapping." },
    /* The archive in Ceph RADOS (docs/ARCHIVE.md; config_archive.c). */
    [TIDE_CFG_ARCHIVE] = {
        FIELD(archive), .flag = "archive", .env = "TIDE_ARCHIVE", .section = "archive",
        .kind = K_CHOICE, .choices = ti_config_archive_words, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_choice, .to_node = ti_config_node_archive,
        .def = "off", .arg = "off|rados",
        .help = "rados: archive every generation's data in a Ceph RADOS pool as it is written, seal each "
                "generation a rotation makes read-only, drop a local generation only once the archive "
                "holds it sealed, and read what no local generation holds from the archive (online "
                "delete must be on for a primary)." },
    [TIDE_CFG_ARCHIVE_CONF] = {
        FIELD(archive_conf), .flag = "archive-conf", .env = "TIDE_ARCHIVE_CONF", .section = "archive",
        .kind = K_PATH, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_text, .to_node = ti_config_node_archive,
        .def = "/etc/ceph/ceph.conf", .arg = "FILE",
        .help = "the Ceph configuration librados reads: the monitors' addresses and the keyring." },
    [TIDE_CFG_ARCHIVE_POOL] = {
        FIELD(archive_pool), .flag = "archive-pool", .env = "TIDE_ARCHIVE_POOL", .section = "archive",
        .kind = K_NAME, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_text, .to_node = ti_config_node_archive,
        .def = "tide", .arg = "NAME",
        .help = "the pool the archive's objects go into; it must exist (ceph osd pool create NAME)." },
    [TIDE_CFG_ARCHIVE_PREFIX] = {
        FIELD(archive_prefix), .flag = "archive-prefix", .env = "TIDE_ARCHIVE_PREFIX", .section = "archive",
        .kind = K_NAME, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_text, .to_node = ti_config_node_archive,
        .computed = ti_config_default_archive_prefix,
        .dflt = "the host name up to its first dot", .arg = "NAME",
        .help = "every object of this node is named PREFIX.something; one primary per prefix (a second "
                "is refused by the manifest's version check), any number of replicas. No dots: they "
                "separate the name's parts." },
    [TIDE_CFG_ARCHIVE_USER] = {
        FIELD(archive_user), .flag = "archive-user", .env = "TIDE_ARCHIVE_USER", .section = "archive",
        .kind = K_NAME, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_text, .to_node = ti_config_node_archive,
        .def = "admin", .arg = "NAME",
        .help = "the Ceph client's id, without \"client.\" (its key comes from the keyring the conf names)." },
    [TIDE_CFG_ARCHIVE_SYNC] = {
        FIELD(archive_sync), .flag = "archive-sync", .env = "TIDE_ARCHIVE_SYNC", .section = "archive",
        .kind = K_CHOICE, .choices = ti_config_archive_sync_words, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_choice, .to_node = ti_config_node_archive,
        .def = "local", .arg = "local|archive",
        .help = "when a PUT ?sync=1 answers 201: local, after the local commit (the archive follows; "
                "tide_archive_lag_bytes says how far behind); archive, after its bytes are in RADOS too, "
                "so losing the machine loses no acknowledged write (503 archive_unavailable when RADOS "
                "does not take them within archive_timeout)." },
    [TIDE_CFG_ARCHIVE_KEEP] = {
        FIELD(archive_keep), .flag = "archive-keep", .env = "TIDE_ARCHIVE_KEEP", .section = "archive",
        .kind = K_UINT, .max = 1000000, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_number, .to_node = ti_config_node_archive,
        .def = "0", .arg = "N",
        .help = "sealed generations the archive keeps, the oldest deleted first; 0: all. A generation "
                "the node still holds is never deleted from the archive." },
    [TIDE_CFG_ARCHIVE_MODE] = {
        FIELD(archive_mode), .flag = "archive-mode", .env = "TIDE_ARCHIVE_MODE", .section = "archive",
        .kind = K_CHOICE, .choices = ti_config_archive_mode_words, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_choice, .to_node = ti_config_node_archive,
        .def = "primary", .arg = "primary|replica",
        .help = "primary: this node writes and archives the prefix. replica: it takes no writes and "
                "serves every sealed object of the prefix from the archive through its own caches, "
                "following new seals." },
    [TIDE_CFG_ARCHIVE_TIMEOUT] = {
        FIELD(archive_timeout), .flag = "archive-timeout", .env = "TIDE_ARCHIVE_TIMEOUT",
        .section = "archive",
        .kind = K_UINT, .min = 1, .max = 3600, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_number, .to_node = ti_config_node_archive,
        .def = "10", .arg = "SECONDS",
        .help = "the longest one call to RADOS may wait (librados' op timeouts): a read of an "
                "archive-only object, or a PUT ?sync=1 under archive_sync=archive, answers 503 "
                "archive_unavailable after it." },
    [TIDE_CFG_ARCHIVE_CHUNK] = {
        FIELD(archive_chunk), .flag = "archive-chunk", .env = "TIDE_ARCHIVE_CHUNK", .section = "archive",
        .kind = K_SIZE, .min = 64 * 1024, .max = 128 * MiB, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_size, .to_node = ti_config_node_archive,
        .def = "64MiB", .arg = "SIZE",
        .help = "the size of each object a generation's nudb.dat is cut into (a multiple of 32 KiB; at "
                "most RADOS' osd_max_object_size, 128 MiB by default); fixed per generation when its "
                "upload starts." },
    [TIDE_CFG_ARCHIVE_FILTER_BUDGET] = {
        FIELD(archive_filter_budget), .flag = "archive-filter-budget", .env = "TIDE_ARCHIVE_FILTER_BUDGET",
        .section = "archive",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_size, .to_node = ti_config_node_archive,
        .def = "64MiB", .arg = "SIZE",
        .help = "bytes of the archived generations' key filters held in memory (about 1.25 bytes a key), "
                "newest generations first; a read that misses the local generations asks RADOS only "
                "where a filter says the key may be, or where there is none. 0: no filters." },
    [TIDE_CFG_ARCHIVE_INFLIGHT] = {
        FIELD(archive_inflight), .flag = "archive-inflight", .env = "TIDE_ARCHIVE_INFLIGHT",
        .section = "archive",
        .kind = K_UINT, .min = 1, .max = 64, .group = TIDE_CFG_GROUP_ARCHIVE,
        .format = fmt_number, .to_node = ti_config_node_archive,
        .def = "4", .arg = "N",
        .help = "asynchronous 1 MiB writes to RADOS at once; their buffers are counted memory "
                "(archive_upload)." },
    [TIDE_CFG_LOG_LEVEL] = {
        FIELD(log_level), .flag = "log-level", .env = "TIDE_LOG_LEVEL", .section = "node",
        .kind = K_LEVEL, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_log_level,
        .def = "info", .arg = "LEVEL",
        .help = "debug adds an access line per request and a line per sweep and trim." },
    /* json for log shippers (util/log.c names its fields); the journal's
     * priority prefix is not a setting: it follows JOURNAL_STREAM. */
    [TIDE_CFG_LOG_FORMAT] = {
        FIELD(log_format), .flag = "log-format", .env = "TIDE_LOG_FORMAT", .section = "node",
        .kind = K_LOG_FORMAT, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_log_format,
        .def = "text", .arg = "FORMAT",
        .help = "how each line on stderr is written: text (\"2026-12-01T19:45:20.123Z WARN message\") or "
                "json, one object per line for log shippers: {\"time\":\"...Z\",\"level\":\"warn\",\"pid\":42,"
                "\"message\":\"...\"} (bytes of the message that are not UTF-8 as the text \\xNN). When stderr is the systemd journal (JOURNAL_STREAM names it) every line "
                "starts with its syslog priority (<3> error, <4> warn, <6> info, <7> debug) and a text line "
                "leaves the time to the journal. Set before the settings are read (flag or environment), "
                "it covers their own messages too." },
    /* glibc's M_MMAP_THRESHOLD maximum on 64-bit is 32 MiB
     * (DEFAULT_MMAP_THRESHOLD_MAX = 4 MiB * sizeof(long)); mallopt refuses more. */
    [TIDE_CFG_MMAP_THRESHOLD] = {
        FIELD(mmap_threshold), .flag = "mmap-threshold", .env = "TIDE_MMAP_THRESHOLD", .section = "node",
        .kind = K_SIZE, .max = 32 * MiB, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_mmap_threshold,
        .store = store_mmap_threshold,
        .dflt = "glibc's dynamic threshold", .arg = "SIZE",
        .help = "glibc's M_MMAP_THRESHOLD; e.g. 16384 against freed memory staying resident." },
    [TIDE_CFG_ARENA_MAX] = {
        FIELD(arena_max), .flag = "arena-max", .env = "TIDE_ARENA_MAX", .section = "node",
        .kind = K_UINT, .min = 1, .max = 4096, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_number_or_unset,
        .dflt = "glibc's (8 per core)", .arg = "N",
        .help = "glibc's M_ARENA_MAX." },
    [TIDE_CFG_METRICS_TOKEN] = {
        FIELD(metrics_token), .env = "TIDE_METRICS_TOKEN",
        .kind = K_SECRET, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_secret,
        .help = "GET /metrics answers requests carrying 'Authorization: Bearer TOKEN' or "
                "'X-Metrics-Token: TOKEN' (constant-time compare); 401 otherwise, and always when "
                "unset (unless public)." },
    [TIDE_CFG_METRICS_PUBLIC] = {
        FIELD(metrics_public), .env = "TIDE_METRICS_PUBLIC",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .arg = "1",
        .help = "/metrics needs no token (a private network only)." },
    /* One event loop per core, up to four: past that a node's disk, not
     * its HTTP parsing, sets the pace. */
    [TIDE_CFG_HTTP_THREADS] = {
        FIELD(http_threads), .flag = "http-threads", .env = "TIDE_HTTP_THREADS", .section = "node",
        .kind = K_UINT, .min = 1, .max = 64, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .computed = default_http_threads,
        .dflt = "online CPUs, at most " STR(HTTP_THREADS_AUTO_MAX), .arg = "N",
        .help = "event loops serving HTTP." },
    [TIDE_CFG_MAX_OBJECT_SIZE] = {
        FIELD(max_object_size), .flag = "max-object-size", .env = "TIDE_MAX_OBJECT_SIZE",
        .section = "node",
        .kind = K_SIZE, .min = 1, .max = 256 * MiB, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_size,
        .def = "1MiB", .arg = "SIZE",
        .help = "largest PUT body, in bytes; larger is 413. h2o holds a whole body in memory before "
                "tided sees it." },
    [TIDE_CFG_ADMIN_TOKEN] = {
        FIELD(admin_token), .env = "TIDE_ADMIN_TOKEN",
        .kind = K_SECRET, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_secret,
        .help = "enables every /v1/admin endpoint (POST sweep, rotate and keep, GET|POST can_delete, "
                "GET heap) for requests carrying 'Authorization: Bearer TOKEN' (compared in constant "
                "time). Unset: they answer 403." },
    [TIDE_CFG_METRICS_SMAPS] = {
        FIELD(metrics_smaps), .flag = "metrics-smaps", .env = "TIDE_METRICS_SMAPS", .section = "node",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "0", .arg = "0|1",
        .help = "1 adds tide_process_referenced_bytes and tide_process_lazyfree_bytes from "
                "/proc/self/smaps_rollup to /metrics. The kernel walks every page table for it under "
                "the mmap lock: measured here (bench/scrape), a scrape at 86 MiB RSS took 1.1 ms "
                "without and 4.2 ms with it; the walk grows with RSS." },
    [TIDE_CFG_TRIM_POLICY] = {
        FIELD(trim_policy), .flag = "trim-policy", .env = "TIDE_TRIM_POLICY", .section = "node",
        .kind = K_TRIM, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_trim_policy, .to_node = node_trim_policy,
        .store = store_trim_policy,
        .def = "always", .arg = "POLICY",
        .help = "when a sweep round trims the heap: always (after every sweep), never, every:N "
                "(every N-th sweep), freed:SIZE (when the sweep freed at least SIZE), free-pct:P "
                "(when the allocator holds free more than P% of RSS). docs/LAB.md compares them." },
    [TIDE_CFG_TRIM_PAD] = {
        FIELD(trim_pad), .flag = "trim-pad", .env = "TIDE_TRIM_PAD", .section = "node",
        .kind = K_SIZE, .max = 1 * GiB, .group = TIDE_CFG_GROUP_CACHE,
        .format = fmt_size, NODE(trim_pad),
        .def = "0", .arg = "SIZE",
        .help = "glibc only: the bytes a trim leaves free at the top of the main heap "
                "(malloc_trim's pad), so the next allocations there fault nothing in. 0 returns "
                "all it can. docs/MEMORY-LIMIT.md ranks 0, 256KiB, 1MiB and 16MiB." },
    /* Connections: nginx's worker_connections-sized total; one address
     * may hold a sixteenth of it. Idle 5 s, a whole request 10 s (h2o's
     * own default). The body budget is derived in finish. */
    [TIDE_CFG_HTTP_MAX_CONNECTIONS] = {
        FIELD(http_max_connections), .flag = "http-max-connections", .env = "TIDE_HTTP_MAX_CONNECTIONS",
        .section = "node",
        .kind = K_UINT, .min = 1, .max = 1048576, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "4096", .arg = "N",
        .help = "connections open at once. At the bound a new connection closes one of its event "
                "loop's: an idle one already answered (longest idle first), else the one furthest "
                "behind its deadline (http_header_timeout, http_body_min_rate, http_request_timeout) "
                "among those still sending a request, so neither idle nor slow connections can lock "
                "clients out; only when all of the loop's are in a handler is it refused. Lowered to "
                "fit RLIMIT_NOFILE." },
    [TIDE_CFG_HTTP_MAX_PER_CLIENT] = {
        FIELD(http_max_connections_per_client), .flag = "http-max-connections-per-client", .env = "TIDE_HTTP_MAX_CONNECTIONS_PER_CLIENT",
        .section = "node",
        .kind = K_UINT, .max = 1048576, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "256", .arg = "N",
        .help = "connections open at once from one client address (0: no bound); more are closed at "
                "once. Behind a proxy every client has the proxy's address: raise it, or set 0." },
    [TIDE_CFG_HTTP_IDLE_TIMEOUT] = {
        FIELD(http_idle_timeout), .flag = "http-idle-timeout", .env = "TIDE_HTTP_IDLE_TIMEOUT",
        .section = "node",
        .kind = K_UINT, .min = 1, .max = 3600, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "5", .arg = "SECONDS",
        .help = "a connection with no request in flight and nothing received for this long (since it "
                "opened, or since its last response) is closed." },
    /* The whole request's bound is h2o's, counted from when the connection
     * starts to wait (accept, or the end of the previous response): 60 s,
     * so that the head's and the body's own bounds (below) act first and
     * an honest upload of max_object_size needs ~17 KB/s, not ~100 KB/s. */
    [TIDE_CFG_HTTP_REQUEST_TIMEOUT] = {
        FIELD(http_request_timeout), .flag = "http-request-timeout", .env = "TIDE_HTTP_REQUEST_TIMEOUT",
        .section = "node",
        .kind = K_UINT, .min = 1, .max = 3600, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "60", .arg = "SECONDS",
        .help = "a request's head and body must have arrived this long after the connection began to "
                "wait for it (it opened, or the previous response was sent), or the connection is "
                "closed without an answer (h2o's http1 request timeout). The bound of every request, "
                "above http_header_timeout and the body's http_body_min_rate." },
    /* At least max_object_size (checked in finish); at most 1 TiB. */
    [TIDE_CFG_HTTP_BODY_BUDGET] = {
        FIELD(http_body_budget), .flag = "http-body-budget", .env = "TIDE_HTTP_BODY_BUDGET",
        .section = "node",
        .kind = K_SIZE, .min = 1, .max = 1024 * GiB, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_size,
        .dflt = BODY_BUDGET_DEFAULT_TEXT, .arg = "SIZE",
        .help = "bytes of request bodies tided holds for requests not yet answered, counted in the "
                "http consumer (a PUT's twice: its body and the store job's copy); at least max_object_size. A request whose head declares more than is "
                "left is answered 503 with Retry-After: 1 before its body is read." },
    /* The event loops never wait for the disk. A PUT and a GET
     * that misses the node cache run on these threads; the queue in front
     * of them is bounded so a slow disk sheds load instead of memory. */
    [TIDE_CFG_STORE_WORKERS] = {
        FIELD(store_workers), .flag = "store-workers", .env = "TIDE_STORE_WORKERS", .section = "node",
        .kind = K_UINT, .min = 1, .max = 256, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .computed = default_store_workers,
        .dflt = "2 x online CPUs, " STR(STORE_WORKERS_AUTO_MIN) " to " STR(STORE_WORKERS_AUTO_MAX), .arg = "N",
        .help = "threads that run PUTs and the GETs and HEADs the node cache cannot answer, so that "
                "an event loop never waits for a read, an insert or a full insert pool; a GET the "
                "cache answers stays on its loop." },
    [TIDE_CFG_STORE_QUEUE] = {
        FIELD(store_queue), .flag = "store-queue", .env = "TIDE_STORE_QUEUE", .section = "node",
        .kind = K_UINT, .min = 1, .max = 1048576, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "1024", .arg = "N",
        .help = "store jobs (PUTs, GET misses) waiting for a store worker at most; PUTs may fill 3/4 of "
                "it (at least 1), the rest is kept for GET misses so a write burst does not shed reads. "
                "Past its share a PUT or a GET miss is answered 503 overloaded with Retry-After: 1 "
                "(tide_http_store_queue_depth on /metrics shows the queue)." },
    /* Online delete (docs/ROTATION.md): in [node_db] as rippled writes its
     * own, rippled's names where they mean the same (advisory_delete,
     * back_off_milliseconds, recovery_wait_seconds: the same gate, the
     * same units). Where rippled's key counts something else
     * (online_delete: ledgers; delete_batch: SQL records) the file key
     * carries Tide's unit instead (ti_config_rippled_keys below). The
     * waits are rippled's defaults where it has one. */
    [TIDE_CFG_ONLINE_DELETE] = {
        FIELD(online_delete), .flag = "online-delete", .env = "TIDE_ONLINE_DELETE", .section = "node_db",
        .kind = K_ONLINE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_online_delete, .to_node = node_online_delete,
        .store = store_online_delete,
        .def = "0", .arg = "N|manual",
        .help = "online delete: keep the data directory as a ring of generations (stores) and rotate "
                "after N objects were written into the newest; an object neither written nor read for "
                "`generations` rotations is deleted. manual: generations, rotated only by the other "
                "triggers or POST /v1/admin/rotate. 0: off, one plain store that grows without bound. "
                "In the config file it is online_delete_objects: rippled's own [node_db] online_delete "
                "counts the ledgers it keeps, so tided never reads that key, and stops (naming it) "
                "when it is there and this setting is given nowhere.",
        .file_key = "online_delete_objects" },
    [TIDE_CFG_GENERATIONS] = {
        FIELD(generations), .flag = "generations", .env = "TIDE_GENERATIONS", .section = "node_db",
        .kind = K_UINT, .min = TIDE_GEN_MIN, .max = TIDE_GEN_MAX, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, .to_node = node_generations,
        .def = "2", .arg = "G",
        .help = "generations kept with online delete; a rotation copies forward only what is read or "
                "re-PUT, so more generations keep untouched objects longer (G spans) for G times the "
                "disk of a span. Unset: the data directory's own keep (its tide.generations), 2 for a "
                "new directory; a value below it is honoured and the next rotation drops down to it "
                "(logged at WARN)." },
    [TIDE_CFG_ADVISORY_DELETE] = {
        FIELD(advisory_delete), .flag = "advisory-delete", .env = "TIDE_ADVISORY_DELETE",
        .section = "node_db",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(advisory_delete),
        .def = "0", .arg = "0|1",
        .help = "1: a due rotation waits until POST /v1/admin/can_delete allows it (a rotation count, "
                "never, always or now; never again after a restart)." },
    [TIDE_CFG_ROTATE_BYTES] = {
        FIELD(rotate_bytes), .flag = "rotate-bytes", .env = "TIDE_ROTATE_BYTES", .section = "node_db",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_size, NODE(rotate_bytes),
        .def = "0", .arg = "SIZE",
        .help = "also rotate when the newest generation's nudb.dat reaches SIZE (0: no byte trigger)." },
    [TIDE_CFG_ROTATE_INTERVAL] = {
        FIELD(rotate_interval), .flag = "rotate-interval", .env = "TIDE_ROTATE_INTERVAL",
        .section = "node_db",
        .kind = K_UINT, .max = 31536000, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(rotate_interval_s),
        .def = "0", .arg = "SECONDS",
        .help = "also rotate this long after the last rotation (0: no time trigger)." },
    [TIDE_CFG_DELETE_BATCH] = {
        FIELD(delete_batch), .flag = "delete-batch", .env = "TIDE_DELETE_BATCH", .section = "node_db",
        .kind = K_UINT, .min = 1, .max = 1000000, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(delete_batch),
        .def = "100", .arg = "N",
        .help = "keys of a rotation's keep-list copied forward per batch, with a back-off pause between "
                "batches. In the config file it is delete_batch_keys: rippled's own [node_db] "
                "delete_batch counts the records it deletes from its SQL databases per batch, so tided "
                "never reads that key, and stops (naming it) when it is there and this setting is "
                "given nowhere.",
        .file_key = "delete_batch_keys" },
    [TIDE_CFG_BACK_OFF_MS] = {
        FIELD(back_off_milliseconds), .flag = "back-off-milliseconds", .env = "TIDE_BACK_OFF_MILLISECONDS",
        .section = "node_db",
        .kind = K_UINT, .max = 60000, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(back_off_ms),
        .def = "100", .arg = "MS",
        .help = "pause between two batches of a keep-list and between two steps of a dropped "
                "generation's delete, so the node keeps serving." },
    [TIDE_CFG_DELETE_CHUNK] = {
        FIELD(delete_chunk), .flag = "delete-chunk", .env = "TIDE_DELETE_CHUNK", .section = "node_db",
        .kind = K_SIZE, .min = 4096, .max = 1024 * GiB, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_size, NODE(delete_chunk),
        .def = "64MiB", .arg = "SIZE",
        .help = "a dropped generation's nudb.dat is cut by this much per step before it is unlinked, so "
                "the file system frees it gradually." },
    [TIDE_CFG_RECOVERY_WAIT] = {
        FIELD(recovery_wait_seconds), .flag = "recovery-wait-seconds", .env = "TIDE_RECOVERY_WAIT_SECONDS",
        .section = "node_db",
        .kind = K_UINT, .min = 1, .max = 3600, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(recovery_wait_s),
        .def = "5", .arg = "SECONDS",
        .help = "a due rotation on an unhealthy node (a commit backlog: the insert pools, pending plus "
                "committing, holding a whole burst; a failed commit; the RSS over rotation_max_rss) waits this long before it looks again." },
    [TIDE_CFG_ROTATION_WAIT_MAX] = {
        FIELD(rotation_wait_max_seconds), .flag = "rotation-wait-max-seconds", .env = "TIDE_ROTATION_WAIT_MAX_SECONDS",
        .section = "node_db",
        .kind = K_UINT, .min = 1, .max = 604800, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(rotation_wait_max_s),
        .def = "300", .arg = "SECONDS",
        .help = "after waiting this long in all for health a rotation attempt is abandoned (logged, "
                "counted, in /v1/rotations); the next trigger check tries again." },
    [TIDE_CFG_TRIM_AFTER_ROTATION] = {
        FIELD(trim_after_rotation), .flag = "trim-after-rotation", .env = "TIDE_TRIM_AFTER_ROTATION",
        .section = "node_db",
        .kind = K_BOOL, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_number, NODE(trim_after_rotation),
        .def = "1", .arg = "0|1",
        .help = "1: one measured release (the sweep's trim) right after a rotation that dropped a "
                "generation, reported in /v1/rotations and on /metrics." },
    [TIDE_CFG_ROTATION_MAX_RSS] = {
        FIELD(rotation_max_rss), .flag = "rotation-max-rss", .env = "TIDE_ROTATION_MAX_RSS",
        .section = "node_db",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_NODE_DB,
        .format = fmt_size, NODE(rotation_max_rss),
        .def = "0", .arg = "SIZE",
        .help = "the rotation's health gate also waits while the process's anonymous RSS is over SIZE (a rotation "
                "opens a store and copies forward; it waits for memory to come down, as for a commit "
                "backlog). 0: no RSS gate." },
    /* The memory limit (docs/MEMORY-LIMIT.md; config_mem.c does
     * the cgroup and the split). 32 MiB is the least tided starts in
     * (TIDE_CONFIG_MEMORY_LIMIT_MIN); the levels and the hysteresis follow
     * tide_mem_overload_init's rules (mem/overload.h): 1 <= soft < high <
     * critical <= 100, 1 <= hysteresis < soft (finish checks the pair). */
    [TIDE_CFG_MEMORY_LIMIT] = {
        FIELD(memory_limit), .flag = "memory-limit", .env = "TIDE_MEMORY_LIMIT", .section = "node",
        .kind = K_SIZE, .min = TIDE_CONFIG_MEMORY_LIMIT_MIN, .max = TIDE_CONFIG_BYTES_MAX,
        .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_size_or_none, NODE(memory_limit),
        .below_min = "the smallest memory_limit (tided's threads, buffers and store need about that much)",
        .dflt = "the cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes, the nearest "
                "limited ancestor's), else none (a startup warning)", .arg = "SIZE",
        .help = "bytes the whole process may use, counted as the larger of its anonymous RSS (RssAnon + "
                "RssShmem: file-backed pages are page cache) and its cgroup's usage less page cache. At memory_levels' marks tided sweeps and trims (soft), answers "
                "new PUTs 503 with Retry-After (high), and stops accepting connections (critical); "
                "nothing acknowledged is dropped. The budgets not set explicitly derive from it: "
                "cache_budget 20%, the key cache's hard limit 5%, insert_burst 4% (at most 64MiB), "
                "http_body_budget 10% (at least max_object_size), store_index_lag 1/8; explicit "
                "ones that may hold more than it stop tided. A value above the cgroup's limit is lowered to it. SIGHUP "
                "applies a new one. docs/MEMORY-LIMIT.md." },
    [TIDE_CFG_MEMORY_LEVELS] = {
        FIELD(memory_levels), .flag = "memory-levels", .env = "TIDE_MEMORY_LEVELS", .section = "node",
        .kind = K_LEVELS, .min = 1, .max = 100, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_memory_levels, .to_node = node_memory_levels,
        .store = store_memory_levels,
        .def = "80,90,97", .arg = "SOFT,HIGH,CRITICAL",
        .help = "the soft, high and critical marks, in percent of memory_limit. A level is entered "
                "when the counted bytes reach its mark and left when they fall below (mark - "
                "memory_hysteresis)%." },
    [TIDE_CFG_MEMORY_HYSTERESIS] = {
        FIELD(memory_hysteresis), .flag = "memory-hysteresis", .env = "TIDE_MEMORY_HYSTERESIS",
        .section = "node",
        .kind = K_UINT, .min = 1, .max = 99, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_number, NODE(memory_hysteresis_pct),
        .def = "5", .arg = "POINTS",
        .help = "percentage points below a level's mark the counted bytes must fall to leave the "
                "level, so that a node at its mark does not flap; below the soft level." },
    [TIDE_CFG_MEMORY_POLL_MS] = {
        FIELD(memory_poll_milliseconds), .flag = "memory-poll-milliseconds", .env = "TIDE_MEMORY_POLL_MILLISECONDS",
        .section = "node",
        .kind = K_UINT, .min = 10, .max = 10000, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_number, NODE(memory_poll_ms),
        .def = "100", .arg = "MS",
        .help = "how often the memory figures (RSS, the cgroup's usage, memory pressure) are read and "
                "compared with the marks." },
    [TIDE_CFG_MEMORY_PRESSURE] = {
        FIELD(memory_pressure), .flag = "memory-pressure", .env = "TIDE_MEMORY_PRESSURE",
        .section = "node",
        .kind = K_UINT, .max = 100, .group = TIDE_CFG_GROUP_MEMORY,
        .format = fmt_number, NODE(memory_pressure_pct),
        .def = "10", .arg = "PERCENT",
        .help = "the kernel's memory pressure (PSI 'some' avg10 of the cgroup's memory.pressure or "
                "/proc/pressure/memory) at or above this percent holds the node at the soft level "
                "even under its mark. 0: pressure is ignored." },
    /* The tokens from files (config_systemd.c reads them): a
     * path in argv or a config file shows no secret, so these may be set
     * anywhere but a flag (a token's own settings stay env only). */
    [TIDE_CFG_METRICS_TOKEN_FILE] = {
        FIELD(metrics_token_file), .env = "TIDE_METRICS_TOKEN_FILE", .section = "http",
        .kind = K_PATH, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_text_or_unset,
        .dflt = "unset", .arg = "FILE",
        .help = "read the metrics token (as TIDE_METRICS_TOKEN) from FILE, at startup and at each "
                "SIGHUP. The token is FILE's whole content less one trailing newline: 1 to 255 "
                "bytes, each a visible ASCII character (no space or control byte). FILE must be a "
                "regular file (a FIFO or a device is refused without waiting on it) not "
                "readable by others and writable only by its owner (chmod 600 FILE, or 640 with "
                "the service's group), owned by tided's user or by root (when tided runs as root, "
                "only by root); otherwise tided refuses to start (exit 2) naming the file, its "
                "owner and its mode. Precedence, highest first: TIDE_METRICS_TOKEN, this "
                "setting (its environment variable, then the config file), then "
                "$CREDENTIALS_DIRECTORY/metrics_token (systemd's LoadCredential=), read when that "
                "variable is set and the file exists (an empty credential means no token). A "
                "leading '-' (-FILE, as systemd writes an optional file) makes a missing FILE no "
                "token instead of an error: tided.service's pre-start check of its credentials' "
                "sources uses it." },
    /* The deferred index: 64 MiB holds 3 Mi entries, a flush
     * per ~700 MiB of 200-byte values; with a limit, an eighth of it. */
    [TIDE_CFG_STORE_INDEX_LAG] = {
        FIELD(store_index_lag), .flag = "store-index-lag", .env = "TIDE_STORE_INDEX_LAG",
        .section = "node",
        .kind = K_SIZE, .max = TIDE_CONFIG_BYTES_MAX, .group = TIDE_CFG_GROUP_NODE,
        .format = fmt_size, NODE(index_lag_bytes),
        .def = "64MiB", .arg = "SIZE",
        .help = "memory for the deferred index's tail: commits append their records to nudb.dat "
                "and sync it (and tide.meta) without touching nudb.key; the entries wait in an "
                "in-memory index of at most SIZE bytes (16 per entry slot, 3/4 full), and when "
                "it is full, and at shutdown, one flush writes them into nudb.key, so each "
                "bucket is written once for many items. 0: off, every commit indexes its batch. "
                "A tail that holds less than an eighth of the store's items makes each flush "
                "rewrite most of nudb.key for few items, so the store writes more than twice its "
                "data (at 100M items of 232 bytes: 64MiB wrote 4.8 times the data, 256MiB 2.0, "
                "512MiB 1.5); the store warns once when it flushes such a tail, naming the size "
                "that holds a quarter of its items. A flush holds three to four times SIZE at its "
                "peak. "
                "With memory_limit set and this unset: memory_limit / 8. Under a memory_limit, "
                "set or derived, it counts in the budgets' sum, which tided refuses above "
                "memory_limit's high mark once any budget is set explicitly (the derived split "
                "alone always fits; docs/MEMORY-LIMIT.md). With online "
                "delete it is one budget for all generations: only the newest defers, and a "
                "rotation indexes the tail of the one it replaces. After a crash (kill -9, "
                "a power loss) the next start, or 'tide recover', reads the tail back from "
                "nudb.dat and indexes it; until then nudb.log is the idle log (a header, no "
                "pre-images), 'tide info' says 'PENDING, reads work', and tide get, visit and "
                "verify read the store as it is, the unindexed records through an in-memory "
                "index, writing nothing (docs/OPERATIONS.md: after a crash)." },
    [TIDE_CFG_ADMIN_TOKEN_FILE] = {
        FIELD(admin_token_file), .env = "TIDE_ADMIN_TOKEN_FILE", .section = "http",
        .kind = K_PATH, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_text_or_unset,
        .dflt = "unset", .arg = "FILE",
        .help = "read the admin token (as TIDE_ADMIN_TOKEN) from FILE, by metrics_token_file's "
                "rules. Precedence, highest first: TIDE_ADMIN_TOKEN, this setting, then "
                "$CREDENTIALS_DIRECTORY/admin_token." },
    /* A slow request's own bounds (conn.c), from the documented behaviour
     * of nginx's client_header_timeout and of a minimum body rate as
     * Apache's mod_reqtimeout states it: a client sends its head in one
     * packet, so 10 s from its first byte is generous; a body that keeps
     * 500 bytes a second after 10 s may take as long as
     * http_request_timeout allows, and one that trickles is cut off. */
    [TIDE_CFG_HTTP_HEADER_TIMEOUT] = {
        FIELD(http_header_timeout), .flag = "http-header-timeout", .env = "TIDE_HTTP_HEADER_TIMEOUT",
        .section = "node",
        .kind = K_UINT, .min = 1, .max = 3600, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "10", .arg = "SECONDS",
        .help = "a request's head (request line and headers) must be complete this long after its "
                "first byte arrived, or it is answered 408 and the connection closed "
                "(tide_http_requests_timed_out_total{reason=\"head\"}). Acts only below "
                "http_request_timeout, which otherwise closes the connection first." },
    [TIDE_CFG_HTTP_BODY_MIN_RATE] = {
        FIELD(http_body_min_rate), .flag = "http-body-min-rate", .env = "TIDE_HTTP_BODY_MIN_RATE",
        .section = "node",
        .kind = K_SIZE, .max = 1024 * MiB, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_size,
        .def = "500", .arg = "BYTES",
        .help = "bytes a second a request body must keep up: t seconds after its head ended, a body "
                "still arriving must have delivered at least (t - http_body_grace) x BYTES bytes, or "
                "it is answered 408 and the connection closed "
                "(tide_http_requests_timed_out_total{reason=\"body_rate\"}). 0: no rate; "
                "http_request_timeout alone bounds a body." },
    [TIDE_CFG_HTTP_BODY_GRACE] = {
        FIELD(http_body_grace), .flag = "http-body-grace", .env = "TIDE_HTTP_BODY_GRACE",
        .section = "node",
        .kind = K_UINT, .max = 3600, .group = TIDE_CFG_GROUP_HTTP,
        .format = fmt_number,
        .def = "10", .arg = "SECONDS",
        .help = "seconds after a request's head ended before http_body_min_rate counts, so that a "
                "body that starts slowly or stalls once is not cut off." },
};

/* rippled's [node_db] keys that count something else than the setting of
 * their name (config_impl.h), in the order of tide_config's rippled_keys. */
const ti_config_rippled_key ti_config_rippled_keys[TIDE_CONFIG_RIPPLED_KEYS] = {
    { "online_delete", TIDE_CFG_ONLINE_DELETE, "the ledgers rippled keeps",
      "objects written into the newest generation", "N (objects; 0: off, keep every object; or manual)" },
    { "delete_batch", TIDE_CFG_DELETE_BATCH, "the records rippled deletes from its SQL databases per batch",
      "keys of a keep-list copied forward per batch", "N (keys per batch, 1 to 1000000; 100 by default)" },
};

const char *tide_config_node_size_name(int n)
{
    return (n >= 0 && n < TIDE_NODE_SIZE_COUNT) ? ti_config_node_size_names[n] : "?";
}

int tide_config_node_size_for_ram(uint64_t ram)
{
    int n = 0;

    while (n < TIDE_NODE_SIZE_COUNT - 1 && ram >= ti_config_node_size_ram_below[n]) n++;
    return n;
}

const char *tide_config_name(int id) { return ti_config_settings[id].name; }
const char *tide_config_env(int id)  { return ti_config_settings[id].env; }

const char *tide_config_flag(int id)
{
    static char flags[TIDE_CFG_COUNT][40];
    if (ti_config_settings[id].flag == NULL) return NULL;
    if (flags[id][0] == '\0') snprintf(flags[id], sizeof flags[id], "--%s", ti_config_settings[id].flag);
    return flags[id];
}

size_t tide_config_range_text(int id, char *buf, size_t cap)
{
    const ti_config_setting *st;
    char lo[32], hi[32], dummy[1];
    int n = 0;

    if (cap == 0) buf = dummy, cap = 1;     /* length only */
    buf[0] = '\0';
    if (id < 0 || id >= TIDE_CFG_COUNT) return 0;
    st = &ti_config_settings[id];
    switch (st->kind) {
    case K_UINT:
        if (st->max == TIDE_CONFIG_BYTES_MAX)
            n = snprintf(buf, cap, "%" PRIu64 " to %" PRIu64 " (2^52)", st->min, st->max);
        else
            n = snprintf(buf, cap, "%" PRIu64 " to %" PRIu64, st->min, st->max);
        break;
    case K_SIZE:
        ti_config_size_text(st->min, lo, sizeof lo);
        ti_config_size_text(st->max, hi, sizeof hi);
        n = snprintf(buf, cap, "%s to %s", lo, hi);
        break;
    case K_LISTEN: n = snprintf(buf, cap, "port 1 to 65535"); break;
    case K_SECRET: n = snprintf(buf, cap, "up to %zu bytes", sizeof ((tide_config *)0)->metrics_token - 1); break;
    case K_PATH:   n = snprintf(buf, cap, "up to %zu bytes", (size_t)TIDE_CONFIG_DATA_DIR_MAX); break;
    case K_BLOCK:
        n = snprintf(buf, cap, "a power of two from %u to %u", TIDE_BLOCK_SIZE_MIN, TIDE_BLOCK_SIZE_MAX);
        break;
    case K_ONLINE:
        n = snprintf(buf, cap, "0 (off), 1 to %" PRIu64 " (2^52) objects, or manual", st->max);
        break;
    case K_LEVELS:
        n = snprintf(buf, cap, "three percents, %" PRIu64 " to %" PRIu64 ", each above the one before",
                     st->min, st->max);
        break;
    case K_CHOICE:
        for (int i = 0; st->choices[i]; i++)
            n += snprintf(buf + n, cap - (size_t)n > cap ? 0 : cap - (size_t)n, "%s%s", i ? " or " : "",
                          st->choices[i]);
        break;
    case K_NAME:
        n = snprintf(buf, cap, "1 to %zu bytes of A-Z a-z 0-9 . _ -", st->field_size - 1);
        break;
    case K_TRIM:
        ti_config_size_text(TIDE_CONFIG_BYTES_MAX, hi, sizeof hi);
        n = snprintf(buf, cap, "every:1 to every:%u, freed:1 to freed:%s, free-pct:1 to free-pct:%u",
                     TIDE_TRIM_EVERY_MAX, hi, TIDE_TRIM_FREE_PCT_MAX);
        break;
    default: break;
    }
    return n < 0 ? 0 : (size_t)n;
}

/* ---- defaults ---------------------------------------------------------------- */

/* (config_impl.h) */
void ti_config_set_source(tide_config *c, int id, int kind, const char *fmt, ...)
{
    va_list ap;
    c->src[id].kind = kind;
    va_start(ap, fmt);
    vsnprintf(c->src[id].where, sizeof c->src[id].where, fmt, ap);
    va_end(ap);
}

/* The defaults: each row's `def` read as any source's text is (so a default
 * obeys its own range and parser), then the ones computed from the
 * machine, then the medium preset's values, which finish replaces with
 * node_size's. */
void tide_config_defaults(tide_config *c)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int rc;

    memset(c, 0, sizeof *c);
    for (int id = 0; id < TIDE_CFG_COUNT; id++) ti_config_set_source(c, id, TIDE_SRC_DEFAULT, "%s", "");
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (ti_config_settings[id].def == NULL) continue;
        rc = ti_config_set_value(c, id, ti_config_settings[id].def, TIDE_SRC_DEFAULT, "", ti_config_settings[id].def);
        TIDE_ASSERT(rc == 0);
        (void)rc;
    }
    c->ram_bytes = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : 0;
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const ti_config_setting *st = &ti_config_settings[id];
        if (st->computed) st->computed(c, st);
        if (st->from_preset) set_number(c, st, st->preset[TIDE_NODE_MEDIUM]);
    }
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
void ti_config_size_text(uint64_t v, char *out, size_t cap)
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

/* (config_impl.h) s without its leading and trailing blanks (and CR/LF),
 * in place. */
char *ti_config_trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = '\0';
    return s;
}

/* (config_impl.h) How a value is shown in a message: whole when short, else its first 64
 * bytes and its length (a 5000-byte path must not push the reason out of
 * the message). */
void ti_config_show_value(char *out, size_t cap, const char *prefix, const char *val)
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

/* online_delete: "manual" (generations, no object trigger), or a count
 * in the row's range, 0 being off. */
static void parse_online(const ti_config_setting *st, const char *text, parsed *p, char *why, size_t wcap)
{
    int prc;

    if (strcasecmp(text, "manual") == 0) { p->iv = 1; p->v = 0; return; }
    prc = parse_uint(text, &p->v);
    if (prc == -1)
        snprintf(why, wcap, "not a number of objects or 'manual' (0 turns online delete off)");
    else if (prc == -2 || p->v > st->max)
        snprintf(why, wcap, "%.40s is outside 0..%" PRIu64 " (or 'manual')", text, st->max);
    else
        p->iv = p->v > 0;
}

/* memory_levels: three whole numbers "soft,high,critical", each in the
 * row's range (percent) and above the one before: the rules of
 * tide_mem_overload_init (mem/overload.h), checked here so that the
 * message names the source. */
static void parse_levels(const ti_config_setting *st, const char *text, parsed *p, char *why, size_t wcap)
{
    static const char *const names[] = { "", "soft", "high", "critical" };
    const char *s = text;
    size_t fields = 1;

    for (const char *q = text; *q; q++) fields += *q == ',';
    if (fields != 3) {
        snprintf(why, wcap, "%zu value%s, not three: write the soft, high and critical marks in percent, "
                 "e.g. 80,90,97", fields, fields == 1 ? "" : "s");
        return;
    }
    for (int i = 1; i <= 3; i++) {
        char num[32];
        size_t n = strcspn(s, ",");
        uint64_t v = 0;
        int prc = -1;

        if (n < sizeof num) {
            memcpy(num, s, n);
            num[n] = '\0';
            prc = parse_uint(ti_config_trim(num), &v);   /* "80, 90, 97" too */
        } else if (strspn(s, "0123456789") == n) {
            prc = -2;                        /* digits only, past any range */
        }
        if (prc == -1) {
            snprintf(why, wcap, "the %s mark '%.*s' is not a whole number (write three percents, e.g. "
                     "80,90,97)", names[i], (int)(n < 40 ? n : 40), s);
            return;
        }
        if (prc == -2 || v < st->min || v > st->max) {
            snprintf(why, wcap, "the %s mark %.*s is outside %" PRIu64 "..%" PRIu64 " (percent of "
                     "memory_limit)", names[i], (int)(n < 40 ? n : 40), s, st->min, st->max);
            return;
        }
        p->pct[i] = (unsigned)v;
        s += n + (i < 3);
    }
    for (int i = 2; i <= 3; i++)
        if (p->pct[i] <= p->pct[i - 1]) {
            snprintf(why, wcap, "the %s mark %u is not above the %s mark %u: each must be above the one "
                     "before (soft < high < critical, e.g. 80,90,97)", names[i], p->pct[i], names[i - 1],
                     p->pct[i - 1]);
            return;
        }
}

/* K_CHOICE: the word's index into p->iv; the words are listed when it is
 * none of them. */
static void parse_choice(const ti_config_setting *st, const char *text, parsed *p, char *why, size_t wcap)
{
    size_t n = 0;

    for (p->iv = 0; st->choices[p->iv]; p->iv++)
        if (strcmp(text, st->choices[p->iv]) == 0) return;
    n = (size_t)snprintf(why, wcap, "not one of");
    for (int i = 0; st->choices[i] && n < wcap; i++)
        n += (size_t)snprintf(why + n, wcap - n, "%s %s", i ? "," : "", st->choices[i]);
}

/* K_NAME: a pool, a user, a prefix: a word that fits its field. */
static void parse_name(const ti_config_setting *st, const char *text, char *why, size_t wcap)
{
    size_t len = strlen(text);

    if (len == 0 || len >= st->field_size) {
        snprintf(why, wcap, "a name of 1 to %zu bytes is expected", st->field_size - 1);
        return;
    }
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)text[i]) && !strchr("._-", text[i])) {
            snprintf(why, wcap, "byte %zu ('%c') is not a letter, a digit, '.', '_' or '-'", i + 1,
                     isprint((unsigned char)text[i]) ? text[i] : '?');
            return;
        }
}

/* Parse `text` as setting `id` takes it, into *p. Writes the reason into
 * `why` (empty when the text is good). A K_BLOCK fallback warns here, once,
 * and only when the value would be used (a source ranked `kind`). */
static void parse_value(const tide_config *c, int id, const char *text, int kind, const char *what,
                        parsed *p, char *why, size_t wcap)
{
    const ti_config_setting *st = &ti_config_settings[id];

    switch (st->kind) {
    case K_NODE_SIZE:
        p->iv = -1;
        for (int n = 0; n < TIDE_NODE_SIZE_COUNT; n++)
            if (strcasecmp(text, ti_config_node_size_names[n]) == 0) p->iv = n;
        if (p->iv < 0) snprintf(why, wcap, "not a node size (tiny, small, medium, large or huge)");
        break;
    case K_PATH:
        if (text[0] == '\0') snprintf(why, wcap, "empty path");
        else if (strlen(text) > TIDE_CONFIG_DATA_DIR_MAX)
            snprintf(why, wcap, "path is %zu bytes, longer than %zu bytes (the store's files, "
                     "DIR/nudb.dat, must fit in PATH_MAX, 4096 bytes)", strlen(text),
                     (size_t)TIDE_CONFIG_DATA_DIR_MAX);
        break;
    case K_LISTEN:
        if (strlen(text) >= sizeof c->listen) snprintf(why, wcap, "longer than %zu bytes", sizeof c->listen - 1);
        else parse_listen(text, p->host, sizeof p->host, &p->port, why, wcap);
        break;
    case K_UINT: {
        int prc = parse_uint(text, &p->v);
        if (prc == -1)
            snprintf(why, wcap, "not a whole number");
        else if (prc == -2)
            snprintf(why, wcap, "%.40s is outside %" PRIu64 "..%" PRIu64, text, st->min, st->max);
        else if (p->v < st->min || p->v > st->max)
            snprintf(why, wcap, "%" PRIu64 " is outside %" PRIu64 "..%" PRIu64, p->v, st->min, st->max);
        break;
    }
    case K_SIZE:
        if (tide_size_parse(text, &p->v) != 0) {
            snprintf(why, wcap, "not a size (%s)", tide_last_error());
        } else if (st->below_min && p->v < st->min) {
            char v[32], m[32];
            ti_config_size_text(p->v, v, sizeof v);
            ti_config_size_text(st->min, m, sizeof m);
            snprintf(why, wcap, "%s (%" PRIu64 " bytes) is below %s, %s", v, p->v, m, st->below_min);
        } else if (p->v < st->min || p->v > st->max) {
            char rng[80];
            tide_config_range_text(id, rng, sizeof rng);
            snprintf(why, wcap, "%" PRIu64 " bytes is outside %" PRIu64 "..%" PRIu64 " bytes (%s)",
                     p->v, st->min, st->max, rng);
        } else if (st->power_of_two && (p->v & (p->v - 1)) != 0) {
            snprintf(why, wcap, "%" PRIu64 " bytes is not a power of two (64KiB, 128KiB, ... 2MiB, "
                     "... 1GiB)", p->v);
        }
        break;
    case K_BLOCK: {
        char warn[200];
        p->v = tide_block_size_parse(text, warn, sizeof warn);
        p->fell_back = warn[0] != '\0';
        if (p->fell_back && kind >= c->src[id].kind)
            tide_log(TIDE_LOG_WARN, "%s: %s", what, warn);
        break;
    }
    case K_LEVEL:
        p->iv = tide_log_level_parse(text);
        if (p->iv < 0) snprintf(why, wcap, "not a log level (debug, info, warn, error or off)");
        break;
    case K_LOG_FORMAT:
        p->iv = tide_log_format_parse(text);
        if (p->iv < 0) snprintf(why, wcap, "not a log format (text or json)");
        break;
    case K_SECRET:
        if (strlen(text) >= sizeof c->metrics_token)
            snprintf(why, wcap, "longer than %zu bytes", sizeof c->metrics_token - 1);
        break;
    case K_BOOL:
        if (parse_bool(text, &p->iv) != 0) snprintf(why, wcap, "not 1/0, true/false, yes/no or on/off");
        break;
    case K_TRIM:
        if (tide_trim_policy_parse(text, &p->iv, &p->v) != 0)
            snprintf(why, wcap, "%s", tide_last_error());
        break;
    case K_ONLINE:
        parse_online(st, text, p, why, wcap);
        break;
    case K_LEVELS:
        parse_levels(st, text, p, why, wcap);
        break;
    case K_CHOICE:
        parse_choice(st, text, p, why, wcap);
        break;
    case K_NAME:
        parse_name(st, text, why, wcap);
        break;
    }
}

/* Store the parsed value of setting `id`: by its row's store, else into
 * its field, a text as written, a word's (K_BOOL, K_LEVEL, ...) number,
 * or the number. */
static void store_value(tide_config *c, int id, const char *text, const parsed *p)
{
    const ti_config_setting *st = &ti_config_settings[id];

    if (st->store) st->store(c, st, p, text);
    else if (st->storage == TI_TEXT) snprintf((char *)c + st->offset, st->field_size, "%s", text);
    else if (st->storage == TI_INT) set_number(c, st, (uint64_t)p->iv);
    else set_number(c, st, p->v);
}

/*
 * Set setting `id` from `text` for a source of rank `kind`, described by
 * `where` (file:line, variable or flag). `what` is how the value was written,
 * for messages ("tide.cfg:12: [node] cache_budget=12XB"). Returns 0 (also
 * when a higher-ranked source already set it) or TIDE_EINVAL with
 * "<what>: <reason>".
 */
int ti_config_set_value(tide_config *c, int id, const char *text, int kind, const char *where,
                        const char *what)
{
    parsed p;
    char why[400] = "";

    memset(&p, 0, sizeof p);
    parse_value(c, id, text, kind, what, &p, why, sizeof why);
    if (why[0] != '\0') {
        if (ti_config_settings[id].kind == K_SECRET)   /* never echo the token */
            return tide_err_set(TIDE_EINVAL, "%s: %s", ti_config_settings[id].env, why);
        return tide_err_set(TIDE_EINVAL, "%s: %s", what, why);
    }
    if (kind < c->src[id].kind) return 0;   /* a higher-ranked source set it */
    store_value(c, id, text, &p);
    ti_config_set_source(c, id, kind, "%s%s", where, p.fell_back ? " invalid, fell back" : "");
    return 0;
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
        const char *env = ti_config_settings[id].env, *v = get(arg, env);
        char what[512], prefix[64], *copy, *val;

        if (v == NULL) continue;
        /* A copy of the whole value (not of a fixed buffer's worth): the
         * length checks must see what the operator wrote. */
        copy = strdup(v);
        if (copy == NULL) return tide_err_set(TIDE_ENOMEM, "%s: copying its value", env);
        val = ti_config_trim(copy);
        /* Set but empty is not unset: TIDE_MEMORY_LIMIT=$LIMIT with LIMIT
         * unset would drop the limit without a word (a flag's or a file
         * line's empty value is refused too). */
        if (val[0] == '\0')
            rc = tide_err_set(TIDE_EINVAL, "%s is set but empty: give it a value, or unset it for the "
                              "default (unset %s; under systemd UnsetEnvironment=%s)", env, env, env);
        if (rc == 0) {
            snprintf(prefix, sizeof prefix, "%s=", env);
            ti_config_show_value(what, sizeof what, prefix, val);
            rc = ti_config_set_value(c, id, val, TIDE_SRC_ENV, env, what);
        }
        free(copy);
    }
    return rc;
}

/* ---- the nearest name -------------------------------------------------------------- */

/* The edits that turn a into b (a byte added, dropped or changed, or two
 * neighbours swapped: the optimal string alignment distance), for names
 * of at most NEAR_MAX bytes; NEAR_FAR for a longer one. */
#define NEAR_MAX 63
#define NEAR_FAR 1000u
static unsigned edit_distance(const char *a, const char *b)
{
    unsigned d[NEAR_MAX + 1][NEAR_MAX + 1];
    size_t la = strlen(a), lb = strlen(b);

    if (la > NEAR_MAX || lb > NEAR_MAX) return NEAR_FAR;
    for (size_t i = 0; i <= la; i++) d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            unsigned cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* Whether `cand` is nearer `word` than *best (then it becomes *best):
 * near means at most two edits, and fewer than half of word's bytes, so
 * that a short word is not "corrected" into anything. */
static void consider(const char *word, const char *cand, const char **best, unsigned *best_d)
{
    unsigned d = edit_distance(word, cand);

    if (d <= 2 && 2 * d < strlen(word) && d < *best_d) {
        *best = cand;
        *best_d = d;
    }
}

/* tided's flags that are no setting's (tided.c reads them). */
static const char *const own_flags[] = { "config", "check-config", "help", "version" };

const char *ti_config_nearest_flag(const char *arg)
{
    char word[NEAR_MAX + 1];
    const char *best = NULL;
    unsigned best_d = NEAR_FAR;
    size_t n;

    while (*arg == '-') arg++;
    n = strcspn(arg, "=");
    if (n == 0 || n > NEAR_MAX) return NULL;
    memcpy(word, arg, n);
    word[n] = '\0';
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (ti_config_settings[id].flag) consider(word, ti_config_settings[id].flag, &best, &best_d);
    for (size_t i = 0; i < sizeof own_flags / sizeof own_flags[0]; i++)
        consider(word, own_flags[i], &best, &best_d);
    return best;
}

int ti_config_nearest_key(const char *key)
{
    const char *best = NULL;
    unsigned best_d = NEAR_FAR;
    int id_best = -1;

    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const char *prev = best;
        if (ti_config_settings[id].section == NULL) continue;
        consider(key, tide_config_file_key(id), &best, &best_d);
        if (best != prev) id_best = id;
    }
    return id_best;
}

/* ---- flags ------------------------------------------------------------------------ */

int tide_config_apply_args(tide_config *c, int argc, char **argv)
{
    struct option opts[TIDE_CFG_COUNT + 3];
    int nopt = 0, ch, rc = 0;

    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (ti_config_settings[id].flag == NULL) continue;
        opts[nopt++] = (struct option){ ti_config_settings[id].flag, required_argument, NULL, 1000 + id };
    }
    opts[nopt++] = (struct option){ "config", required_argument, NULL, 999 };
    opts[nopt++] = (struct option){ "check-config", no_argument, NULL, 998 };
    opts[nopt] = (struct option){ NULL, 0, NULL, 0 };

    optind = 0;          /* glibc: a full re-initialisation */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        char what[512], where[64], prefix[64];
        int id;

        if (ch == '?') {
            const char *near = ti_config_nearest_flag(argv[optind - 1]);
            if (near != NULL)
                return tide_err_set(TIDE_EINVAL, "%s: unknown flag; did you mean --%s?", argv[optind - 1], near);
            return tide_err_set(TIDE_EINVAL, "%s: unknown flag", argv[optind - 1]);
        }
        if (ch == ':')
            return tide_err_set(TIDE_EINVAL, "%s: missing its value", argv[optind - 1]);
        if (ch == 999 || ch == 998) continue;   /* --config, --check-config: tided's own */
        id = ch - 1000;
        snprintf(where, sizeof where, "--%s", ti_config_settings[id].flag);
        snprintf(prefix, sizeof prefix, "--%s=", ti_config_settings[id].flag);
        ti_config_show_value(what, sizeof what, prefix, optarg);
        rc = ti_config_set_value(c, id, optarg, TIDE_SRC_FLAG, where, what);
        if (rc) return rc;
    }
    if (optind < argc)
        return tide_err_set(TIDE_EINVAL, "%s: unexpected argument (settings are --name=value)", argv[optind]);
    return 0;
}

/* ---- finish ----------------------------------------------------------------------- */

/* A rotation setting the operator chose while online delete is off does
 * nothing: say so once per setting (a node with generations already on
 * disk opens them anyway and only the admin endpoint rotates). */
static void warn_online_delete_off(const tide_config *c)
{
    static const int ids[] = { TIDE_CFG_GENERATIONS, TIDE_CFG_ADVISORY_DELETE, TIDE_CFG_ROTATE_BYTES,
                               TIDE_CFG_ROTATE_INTERVAL };

    if (c->online_delete_on) return;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (c->src[ids[i]].kind >= TIDE_SRC_FILE)
            tide_log(TIDE_LOG_WARN, "%s (%s) has no effect: online_delete is 0 (off); set --online-delete "
                     "N or manual", ti_config_settings[ids[i]].name, c->src[ids[i]].where);
}

/* rippled's keys the file recorded (rippled_keys): each is rippled's
 * alone. Its setting given by an operator's source (the file's own key,
 * the variable, the flag): an info line. Given nowhere: TIDE_EINVAL for
 * the first, since reading rippled's count as Tide's deleted objects and
 * dropping it in silence would leave a disk unbounded that its writer
 * meant to bound. */
static int check_rippled_keys(const tide_config *c)
{
    for (int i = 0; i < TIDE_CONFIG_RIPPLED_KEYS; i++) {
        const ti_config_rippled_key *k = &ti_config_rippled_keys[i];
        const ti_config_setting *st = &ti_config_settings[k->id];
        char now[300];

        if (c->rippled_keys[i][0] == '\0') continue;
        if (c->src[k->id].kind >= TIDE_SRC_FILE) {
            tide_config_describe_setting(c, k->id, now, sizeof now);
            tide_log(TIDE_LOG_INFO, "config %s is rippled's (it counts %s), not read by tide, whose setting "
                     "is %s", c->rippled_keys[i], k->theirs, now);
            continue;
        }
        return tide_err_set(TIDE_EINVAL, "%s is rippled's: it counts %s, while tide's %s counts %s, so tide "
                            "does not read it. Say what tide should do: [node_db] %s=%s, a key rippled does not "
                            "use, or --%s / %s", c->rippled_keys[i], k->theirs, st->name, k->ours, st->file_key,
                            k->value, st->flag, st->env);
    }
    return 0;
}

int tide_config_finish(tide_config *c)
{
    if (c->node_size < 0 || c->node_size >= TIDE_NODE_SIZE_COUNT)
        return tide_err_set(TIDE_EINVAL, "node_size %d is not a preset", c->node_size);
    int rc = check_rippled_keys(c);
    if (rc) return rc;
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (!ti_config_settings[id].from_preset || c->src[id].kind != TIDE_SRC_DEFAULT) continue;
        set_number(c, &ti_config_settings[id], ti_config_settings[id].preset[c->node_size]);
        ti_config_set_source(c, id, TIDE_SRC_PRESET, "%s", ti_config_node_size_names[c->node_size]);
    }
    /* Before the body budget's default: with a limit it is derived. */
    rc = ti_config_finish_memory(c);
    if (rc) return rc;
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
        c->http_body_budget = 4 * c->max_object_size > BODY_BUDGET_FLOOR ? 4 * c->max_object_size
                                                                         : BODY_BUDGET_FLOOR;
        ti_config_set_source(c, TIDE_CFG_HTTP_BODY_BUDGET, TIDE_SRC_DEFAULT, "%s", BODY_BUDGET_DEFAULT_TEXT);
    } else if (c->http_body_budget < c->max_object_size) {
        char b[32], m[32];
        return tide_err_set(TIDE_EINVAL, "http_body_budget=%s (%s) is below max_object_size=%s (%s): one "
                            "request of max_object_size must fit in the budget", tide_size_format(c->http_body_budget, b, sizeof b),
                            c->src[TIDE_CFG_HTTP_BODY_BUDGET].where, tide_size_format(c->max_object_size, m, sizeof m),
                            c->src[TIDE_CFG_MAX_OBJECT_SIZE].where[0] ? c->src[TIDE_CFG_MAX_OBJECT_SIZE].where : "default");
    }
    warn_online_delete_off(c);
    if ((rc = ti_config_finish_archive(c)) != 0) return rc;
    if (c->metrics_public && c->metrics_token[0] != '\0')
        tide_log(TIDE_LOG_WARN, "TIDE_METRICS_PUBLIC=1: /metrics needs no token; TIDE_METRICS_TOKEN "
                 "is ignored there");
    return 0;
}

/* ---- describe ------------------------------------------------------------------------ */

/* The value of setting `id` as describe shows it, without its source. */
static void value_text(const tide_config *c, int id, char *out, size_t cap)
{
    out[0] = '\0';
    if (id >= 0 && id < TIDE_CFG_COUNT) ti_config_settings[id].format(c, &ti_config_settings[id], out, cap);
}

/* (config_impl.h) */
void tide_config_source_text(const tide_config *c, int id, char *out, size_t cap)
{
    const tide_config_source *s = &c->src[id];

    switch (s->kind) {
    case TIDE_SRC_PRESET:  snprintf(out, cap, "preset %s", s->where); break;
    case TIDE_SRC_DERIVED: snprintf(out, cap, "%s", s->where); break;
    case TIDE_SRC_FILE:    snprintf(out, cap, "file %s", s->where); break;
    case TIDE_SRC_ENV:     snprintf(out, cap, "env %s", s->where); break;
    case TIDE_SRC_FLAG:    snprintf(out, cap, "flag %s", s->where); break;
    default:
        if (s->where[0]) snprintf(out, cap, "default %s", s->where);
        else snprintf(out, cap, "default");
        break;
    }
}

size_t tide_config_describe_one(const tide_config *c, int id, char *buf, size_t cap)
{
    char dummy[1];

    if (cap == 0) buf = dummy, cap = 1;
    value_text(c, id, buf, cap);
    return strlen(buf);
}

size_t tide_config_describe_setting(const tide_config *c, int id, char *buf, size_t cap)
{
    char val[4160], src[200], dummy[1];
    const tide_config_source *s;
    int w;

    if (buf == NULL || cap == 0) buf = dummy, cap = 1;
    buf[0] = '\0';
    if (id < 0 || id >= TIDE_CFG_COUNT) return 0;
    s = &c->src[id];
    value_text(c, id, val, sizeof val);
    if (id == TIDE_CFG_GENERATIONS && s->kind < TIDE_SRC_FILE) {
        /* not the operator's: the node keeps the manifest's (startup.c) */
        snprintf(val, sizeof val, "manifest");
        snprintf(src, sizeof src, "not set: the manifest's keep, %u for a new directory", c->generations);
    } else {
        tide_config_source_text(c, id, src, sizeof src);
    }
    if (s->kind == TIDE_SRC_DERIVED && ti_config_settings[id].kind == K_SIZE && val[0] >= '0'
        && val[0] <= '9' && val[strspn(val, "0123456789")] == '\0') {
        /* A derived size that is no whole unit prints in bytes (exact);
         * its size for people goes with the source, inside the
         * parentheses, so the NAME=VALUE(SOURCE) form stays. */
        char human[32];
        size_t used = strlen(src);
        tide_size_format(strtoull(val, NULL, 10), human, sizeof human);
        if (used < sizeof src) snprintf(src + used, sizeof src - used, ", %s", human);
    }
    w = snprintf(buf, cap, "%s=%s(%s)", ti_config_settings[id].name, val, src);
    return w < 0 ? 0 : (size_t)w;
}

size_t tide_config_describe(const tide_config *c, char *buf, size_t cap)
{
    size_t len = 0;
    char dummy[1];

    if (buf == NULL || cap == 0) buf = dummy, cap = 1;
    buf[0] = '\0';
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        char piece[4500];
        size_t w;

        if (id) piece[0] = ' ';
        w = tide_config_describe_setting(c, id, piece + (id > 0), sizeof piece - 1) + (id > 0);
        if (w >= sizeof piece) w = sizeof piece - 1;
        if (len + 1 < cap) {                 /* room for at least one byte */
            size_t room = cap - 1 - len, take = w < room ? w : room;
            memcpy(buf + len, piece, take);
            buf[len + take] = '\0';
        }
        len += w;
    }
    return len;
}

/* ---- groups ------------------------------------------------------------------------ */

static const char *const group_names[TIDE_CFG_GROUP_COUNT] = { "node", "http", "cache", "memory", "node_db",
                                                                 "archive" };

int tide_config_group(int id)
{
    return id >= 0 && id < TIDE_CFG_COUNT ? ti_config_settings[id].group : -1;
}

const char *tide_config_group_name(int group)
{
    return group >= 0 && group < TIDE_CFG_GROUP_COUNT ? group_names[group] : "?";
}

const char *tide_config_section(int id)
{
    return id >= 0 && id < TIDE_CFG_COUNT ? ti_config_settings[id].section : NULL;
}

const char *tide_config_file_key(int id)
{
    if (id < 0 || id >= TIDE_CFG_COUNT || ti_config_settings[id].section == NULL) return NULL;
    return ti_config_settings[id].file_key ? ti_config_settings[id].file_key : ti_config_settings[id].name;
}

/* ---- unbounded consumers ----------------------------------------------------------------- */

static void hint(int id, char *out, size_t cap)
{
    snprintf(out, cap, "set --%s / %s / [node] %s", ti_config_settings[id].flag, ti_config_settings[id].env, ti_config_settings[id].name);
}

int tide_config_unbounded(const tide_config *c, int alloc_family, tide_config_unbounded_fn fn, void *arg)
{
    char how[160];
    int n = 0;

    if (c->cache_budget == 0)   { hint(TIDE_CFG_CACHE_BUDGET, how, sizeof how); fn(arg, "node_cache", how); n++; }
    /* With a limit the key cache has a hard limit in bytes (5% of it) even
     * when its entries are not bounded. */
    if (c->key_cache_size == 0 && c->key_cache_hard_limit == 0) {
        hint(TIDE_CFG_KEY_CACHE_SIZE, how, sizeof how);
        fn(arg, "key_cache", how);
        n++;
    }
    if (c->arena_max == 0 && alloc_family == TIDE_MEM_ALLOC_GLIBC) { hint(TIDE_CFG_ARENA_MAX, how, sizeof how); fn(arg, "malloc_arenas", how); n++; }
    if (c->memory_limit == 0) {
        hint(TIDE_CFG_MEMORY_LIMIT, how, sizeof how);
        strncat(how, ", or run tided in a cgroup with a memory limit", sizeof how - strlen(how) - 1);
        fn(arg, "process", how);
        n++;
    }
    return n;
}
