/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * startup.c: from settings to a node, and the startup log an operator reads
 * as a checklist.
 *
 * The log answers, in this order: what runs with which settings and where
 * each came from (one line per group of settings, "settings [http]: ...",
 * each within SETTINGS_LINE_BUDGET, counted as the log writes it (escaped
 * in json), so that the log's cap never cuts one; a group that does not
 * fit goes on in a "(continued)" line, and a value too long for any line
 * shows its first 64 bytes and its length); which allocator serves malloc
 * and how it is tuned; which
 * key-file block size the store really has; and what is left unbounded.
 * Every warning names the setting or the command that would silence it.
 *
 * The block size line reads the key file of an existing store (its header
 * rules: a store keeps the block size it was created with until `tide
 * rekey` rebuilds it). For a new store it is the configured size, and the
 * line says the store will be created; tide_startup_check_data_dir, run
 * before the log (and by --check-config), has made sure data_dir's parent
 * exists, since tided creates the data directory but never its parents.
 *
 * After the node opened, tide_startup_log_rss says what RSS is made of and
 * how far the store's read-only maps can take it (ps and top count their
 * pages, memory_limit does not). With online delete on, a second line after the node opened
 * (tide_startup_log_disk) states the disk bound the settings give: about
 * G x N objects, copies forward included, in bytes at the newest
 * generation's mean record size when it has objects. With it off the
 * unbounded warnings include the disk.
 *
 * With archive=rados one line says where the archive is (pool, prefix,
 * mode, conf, user) and how a PUT ?sync=1 is acknowledged: after the
 * local commit (archive_sync=local) or once its bytes are in RADOS too
 * (archive_sync=archive); a replica's says it takes no writes.
 *
 * The memory limit gets two lines after the settings: where the
 * limit came from, what counts against it (the larger of RSS and the
 * cgroup's usage less page cache, when a cgroup limit was found; RSS
 * alone otherwise), the marks in bytes and percent; then the budgets
 * derived from it with their sources and what they may hold together.
 * With no limit anywhere the unbounded consumer "process" is the warning.
 *
 * The node's options come from the settings table (config_impl.h): each
 * row that names a tide_node_opts field gets its value copied there, or
 * its to_node function run; nothing here lists the settings one by one.
 *
 * Invariants:
 *   1. Nothing here prints metrics_token or admin_token, only "set"/"unset".
 *   2. mallopt runs only from tide_startup_apply_malloc, before threads.
 *
 * Never: fail startup over a warning. Bad values were refused by config.c.
 */
#include "node/startup.h"
#include "node/config_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen/gens.h"
#include "mem/alloc.h"
#include "mem/overload.h"
#include "mem/proc.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* The most a settings line's list of settings holds, in bytes: the log's
 * line cap (TIDE_LOG_LINE_MAX) less room for the time, the level, the
 * "settings [memory] (continued): " head and a json line's fields and
 * escapes, so that no settings line is ever cut. */
#define SETTINGS_LINE_BUDGET (TIDE_LOG_LINE_MAX - 320)

/* The directory that holds `dir`, into out: "." for a bare name, "/" for
 * a name under the root; trailing slashes of `dir` do not count. */
static void parent_dir(const char *dir, char *out, size_t cap)
{
    size_t n = strlen(dir);
    const char *slash;

    while (n > 1 && dir[n - 1] == '/') n--;
    snprintf(out, cap, "%.*s", (int)n, dir);
    slash = strrchr(out, '/');
    if (slash == NULL) snprintf(out, cap, ".");
    else if (slash == out) out[1] = '\0';
    else out[slash - out] = '\0';
}

/* (startup.h) */
int tide_startup_check_data_dir(const tide_config *c)
{
    char parent[sizeof c->data_dir], src[200];
    struct stat st;

    tide_config_source_text(c, TIDE_CFG_DATA_DIR, src, sizeof src);
    if (stat(c->data_dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return tide_err_set(TIDE_EINVAL, "data_dir=%s (%s) is not a directory: the store needs a directory of "
                            "its own; set another data_dir", c->data_dir, src);
    }
    if (errno == ENOTDIR)
        return tide_err_set(TIDE_EINVAL, "data_dir=%s (%s): a part of its path is a file, not a directory; set "
                            "another data_dir", c->data_dir, src);
    if (errno != ENOENT) return 0;                  /* the open says what it is */
    /* data_dir is missing and every part of its path that exists is a
     * directory (else ENOTDIR above), so the parent is one or is missing. */
    parent_dir(c->data_dir, parent, sizeof parent);
    if (stat(parent, &st) == 0 || errno != ENOENT) return 0;   /* a new store will be created */
    return tide_err_set(TIDE_ENOENT, "data_dir=%s (%s): its parent directory %s does not exist; tided creates "
                        "the data directory but not its parents: mkdir -p %s, or set another data_dir",
                        c->data_dir, src, parent, parent);
}

int tide_startup_apply_malloc(const tide_config *c)
{
    int family = tide_mem_alloc_family();
    int rc = 0;

    if (!c->mmap_threshold_set && c->arena_max == 0) goto out;
    if (family != TIDE_MEM_ALLOC_GLIBC) {
        tide_log(TIDE_LOG_WARN, "mmap_threshold and arena_max are glibc settings; malloc is served by %s, "
                 "so they do not apply", tide_mem_alloc_family_name(family));
        goto out;
    }
    if (c->mmap_threshold_set) {
        rc = tide_mem_alloc_mallopt(M_MMAP_THRESHOLD, (int)c->mmap_threshold);
        if (rc) goto out;
    }
    if (c->arena_max) rc = tide_mem_alloc_mallopt(M_ARENA_MAX, (int)c->arena_max);
out:
    return rc;
}

static void warn_unbounded(void *arg, const char *consumer, const char *how)
{
    (void)arg;
    tide_log(TIDE_LOG_WARN, "unbounded: %s has no limit; %s", consumer, how);
}

static void log_allocator(void)
{
    tide_mem_alloc_info info;
    tide_mem_alloc_options opts;
    char text[1024];

    if (tide_mem_alloc_identity(&info) != 0) {
        tide_log(TIDE_LOG_WARN, "allocator: could not be identified: %s", tide_last_error());
        return;
    }
    tide_mem_alloc_options_read(info.family, &opts);
    if (info.family == TIDE_MEM_ALLOC_JEMALLOC) {
        const char *bg = tide_mem_alloc_option_get(&opts, "background_thread");
        const char *now = tide_mem_alloc_option_get(&opts, "background_thread_now");
        const char *dirty = tide_mem_alloc_option_get(&opts, "dirty_decay_ms");
        const char *muzzy = tide_mem_alloc_option_get(&opts, "muzzy_decay_ms");
        tide_log(TIDE_LOG_INFO, "allocator: jemalloc %s (%s, %s) background_thread=%s, dirty_decay_ms=%s, "
                 "muzzy_decay_ms=%s", info.version, tide_mem_alloc_via_name(info.via), info.library,
                 now ? now : bg ? bg : "?", dirty ? dirty : "?", muzzy ? muzzy : "?");
        if ((now ? now : bg ? bg : "false")[0] != 't')
            tide_log(TIDE_LOG_WARN, "allocator: jemalloc runs without its background thread, so freed pages "
                     "are purged only when an allocating thread happens to; set "
                     "MALLOC_CONF=background_thread:true (builds with make ALLOC=jemalloc set it)");
        return;
    }
    tide_mem_alloc_options_format(&opts, text, sizeof text);
    tide_log(TIDE_LOG_INFO, "allocator: %s %s (%s, %s) options: %s", tide_mem_alloc_family_name(info.family),
             info.version[0] ? info.version : "(no version)", tide_mem_alloc_via_name(info.via),
             info.library, text);
}

/* The block size of the store in data_dir: the plain store's, or with
 * generations the newest's (each new generation takes it). */
static int inspect_store(const tide_config *c, tide_store_info *info)
{
    tide_gens_listing *l;
    int rc = tide_store_inspect(c->data_dir, NULL, info);

    if (rc != TIDE_ENOENT) return rc;
    l = malloc(sizeof *l);
    if (l == NULL) return rc;
    if (tide_gens_inspect(c->data_dir, NULL, l) == 0 && l->manifest.count > 0 && l->gens[0].problem[0] == '\0') {
        *info = l->gens[0].info;
        rc = 0;
    }
    free(l);
    return rc;
}

static void log_block_size(const tide_config *c)
{
    tide_store_info info;
    int rc = inspect_store(c, &info);

    if (rc == TIDE_ENOENT) {
        tide_log(TIDE_LOG_INFO, "Using NuDB block size: %u bytes (a new store will be created in %s)",
                 c->nudb_block_size, c->data_dir);
        return;
    }
    if (rc) {   /* open will fail with the full story; say what is known */
        tide_log(TIDE_LOG_INFO, "Using NuDB block size: %u bytes (configured; %s could not be read: %s)",
                 c->nudb_block_size, c->data_dir, tide_strerror(rc));
        return;
    }
    tide_log(TIDE_LOG_INFO, "Using NuDB block size: %u bytes", info.block_size);
    if (info.block_size != c->nudb_block_size && c->src[TIDE_CFG_NUDB_BLOCK_SIZE].kind != TIDE_SRC_DEFAULT)
        tide_log(TIDE_LOG_WARN, "nudb_block_size is %u but the store in %s was built with %u; the store's "
                 "size is used. To change it: stop tided, then `tide rekey %s --block-size %u`",
                 c->nudb_block_size, c->data_dir, info.block_size, c->data_dir, c->nudb_block_size);
}

/* "soft 80% = 858993459 bytes (left below 75% = 805306368)": the marks
 * tide_mem_overload_init computes, the governor's own. */
static void mark_text(const tide_config *c, const tide_mem_overload *st, int level, char *out, size_t cap)
{
    unsigned pct = c->memory_levels[level];

    snprintf(out, cap, "%s %u%% = %" PRIu64 " bytes (left below %u%% = %" PRIu64 ")",
             tide_mem_overload_level_name(level), pct, st->enter[level], pct - c->memory_hysteresis,
             st->leave[level]);
}

static void log_memory_limit(const tide_config *c)
{
    char lim[32], src[400], counts[1200], soft[120], high[120], crit[120], pressure[120];
    tide_mem_overload_opts oo;
    tide_mem_overload st;

    if (c->memory_limit == 0) return;   /* tide_config_unbounded's "process" says it */
    tide_config_describe_one(c, TIDE_CFG_MEMORY_LIMIT, lim, sizeof lim);
    tide_config_source_text(c, TIDE_CFG_MEMORY_LIMIT, src, sizeof src);
    if (!c->cgroup_limited) strncat(src, " (no cgroup limit found)", sizeof src - strlen(src) - 1);
    if (c->cgroup_limited)
        snprintf(counts, sizeof counts, "the larger of RSS and the cgroup's usage less page cache (cgroup v%d "
                 "%s, limit %" PRIu64 " bytes)", c->cgroup_version, c->cgroup_path, c->cgroup_limit);
    else
        snprintf(counts, sizeof counts, "RSS");
    tide_mem_overload_opts_init(&oo);
    oo.limit_bytes = c->memory_limit;
    memcpy(oo.pct, c->memory_levels, sizeof oo.pct);
    oo.hysteresis_pct = c->memory_hysteresis;
    if (tide_mem_overload_init(&st, &oo) != 0) {   /* finish refused these: not reached */
        tide_log(TIDE_LOG_WARN, "memory limit: %s", tide_last_error());
        return;
    }
    mark_text(c, &st, TIDE_OVERLOAD_SOFT, soft, sizeof soft);
    mark_text(c, &st, TIDE_OVERLOAD_HIGH, high, sizeof high);
    mark_text(c, &st, TIDE_OVERLOAD_CRITICAL, crit, sizeof crit);
    if (c->memory_pressure)
        snprintf(pressure, sizeof pressure, "memory pressure (PSI some avg10) at or above %u%% holds soft",
                 c->memory_pressure);
    else
        snprintf(pressure, sizeof pressure, "memory pressure ignored (memory_pressure 0)");
    tide_log(TIDE_LOG_INFO, "memory limit: %s (%" PRIu64 " bytes) from %s; counts %s, read every %u ms; "
             "marks %s, %s, %s; %s", lim, c->memory_limit, src, counts, c->memory_poll_milliseconds, soft, high, crit,
             pressure);
}

/* The budgets the limit gave (or the operator's), with their sources and
 * what they may hold together against the limit. */
static void log_memory_split(const tide_config *c)
{
    static const int ids[] = { TIDE_CFG_CACHE_BUDGET, TIDE_CFG_INSERT_BURST, TIDE_CFG_HTTP_BODY_BUDGET,
                               TIDE_CFG_STORE_INDEX_LAG };
    static const unsigned times[] = { 2, 2, 1, 1 };
    static const char *const what[] = { "hard limit", "two pools", "held bodies", "tail index" };
    char line[1600] = "", v[32], src[200];
    uint64_t held = c->key_cache_hard_limit,
             val[4] = { c->cache_budget, c->insert_burst, c->http_body_budget, c->store_index_lag };
    size_t used = 0;

    if (c->memory_limit == 0) return;
    for (size_t i = 0; i < 4; i++) {
        tide_config_describe_one(c, ids[i], v, sizeof v);
        tide_config_source_text(c, ids[i], src, sizeof src);
        held += val[i] * times[i];
        used += (size_t)snprintf(line + used, sizeof line - used, "%s=%s (%s; %s %" PRIu64 " bytes), ",
                                 tide_config_name(ids[i]), v, src, what[i], val[i] * times[i]);
        if (used >= sizeof line) used = sizeof line - 1;
    }
    tide_log(TIDE_LOG_INFO, "memory split: %skey cache hard limit %" PRIu64 " bytes (memory_limit 5%%): the "
             "budgets may hold %" PRIu64 " bytes, %" PRIu64 "%% of the limit; the rest is for the store's index "
             "blocks, threads, connections and the allocator", line, c->key_cache_hard_limit, held,
             (held * 100 + c->memory_limit - 1) / c->memory_limit);   /* rounded up: 98.0% is not 97% */
}

/* What `piece` (`n` bytes) takes of a settings line's budget: its bytes,
 * or in json its escaped bytes (tide_log_json_escape), since the log's cap
 * counts the line as written and a '"' or '\\' is written in 2 bytes, a
 * control character in 6, a byte that is not UTF-8 in 5;
 * SETTINGS_LINE_BUDGET + 1 for anything longer than the budget. */
static size_t piece_cost(const char *piece, size_t n)
{
    char esc[SETTINGS_LINE_BUDGET + 2];
    size_t used, out;

    if (tide_log_get_format() != TIDE_LOG_FORMAT_JSON) return n;
    out = tide_log_json_escape(esc, sizeof esc, piece, n, &used);
    return used < n ? SETTINGS_LINE_BUDGET + 1 : out;
}

/* One setting as the settings lines show it: whole, or, when it alone
 * would not fit in a line (a data_dir of 4000 bytes, or of 1600 '"' in
 * json), its value's first 64 bytes and length with its source (at most
 * 64 + 200 bytes before escaping: within the budget even escaped). */
static void settings_piece(const tide_config *c, int id, char *out, size_t cap)
{
    char val[4160], src[200];
    size_t n = tide_config_describe_setting(c, id, out, cap);

    if (n < cap && piece_cost(out, strlen(out)) <= SETTINGS_LINE_BUDGET - 32) return;
    tide_config_describe_one(c, id, val, sizeof val);
    tide_config_source_text(c, id, src, sizeof src);
    snprintf(out, cap, "%s=%.64s...(%zu bytes)(%s)", tide_config_name(id), val, strlen(val), src);
}

/* "settings [http]: listen=127.0.0.1:8080(default) http_threads=2(default) ...",
 * one line per group, a group that does not fit in one continued on the
 * next ("settings [node_db] (continued): "). `cost` is what the line
 * takes as the log writes it (piece_cost), `used` its bytes (never more). */
static void log_settings(const tide_config *c)
{
    for (int g = 0; g < TIDE_CFG_GROUP_COUNT; g++) {
        char line[SETTINGS_LINE_BUDGET + 1], piece[4500];
        size_t used = 0, cost = 0;
        int lines = 0;

        for (int id = 0; id < TIDE_CFG_COUNT; id++) {
            size_t n, k;

            if (tide_config_group(id) != g) continue;
            settings_piece(c, id, piece, sizeof piece);
            n = strlen(piece);
            k = piece_cost(piece, n);
            if (used > 0 && cost + 1 + k > SETTINGS_LINE_BUDGET) {
                tide_log(TIDE_LOG_INFO, "settings [%s]%s: %s", tide_config_group_name(g),
                         lines ? " (continued)" : "", line);
                lines++, used = cost = 0;
            }
            if (used) line[used++] = ' ', cost++;
            TIDE_ASSERT(cost + k <= SETTINGS_LINE_BUDGET && used + n <= cost + k);
            memcpy(line + used, piece, n + 1);
            used += n;
            cost += k;
        }
        if (used)
            tide_log(TIDE_LOG_INFO, "settings [%s]%s: %s", tide_config_group_name(g), lines ? " (continued)" : "",
                     line);
    }
}

/* With archive=rados, where the archive is and how a sync acknowledges:
 * one line, before the open connects (so a pool or a conf the open
 * refuses is named twice: here, where it was meant to be, and there). */
static void log_archive(const tide_config *c)
{
    const char *where = c->archive_conf[0] ? c->archive_conf : "librados' own search";

    if (c->archive != TIDE_ARCHIVE_RADOS) return;
    if (c->archive_mode == TIDE_ARCHIVE_REPLICA)
        tide_log(TIDE_LOG_INFO, "archive: rados pool %s, prefix %s (replica), conf %s, user %s; takes no writes "
                 "(a PUT answers 403 read_only_replica) and serves every sealed generation of the prefix, "
                 "following new seals; a read of what its caches lack waits up to archive_timeout=%u s for "
                 "RADOS (then 503 archive_unavailable)", c->archive_pool, c->archive_prefix, where,
                 c->archive_user, c->archive_timeout);
    else if (c->archive_sync == TIDE_ARCHIVE_SYNC_ARCHIVE)
        tide_log(TIDE_LOG_INFO, "archive: rados pool %s, prefix %s (primary), conf %s, user %s; a PUT ?sync=1 "
                 "answers after its bytes are in RADOS too (archive_sync=archive; 503 archive_unavailable when "
                 "they are not within archive_timeout=%u s, the value durable locally all the same)",
                 c->archive_pool, c->archive_prefix, where, c->archive_user, c->archive_timeout);
    else
        tide_log(TIDE_LOG_INFO, "archive: rados pool %s, prefix %s (primary), conf %s, user %s; a PUT ?sync=1 "
                 "answers after the local commit, the archive follows (archive_sync=local; "
                 "tide_archive_lag_bytes says how far behind)", c->archive_pool, c->archive_prefix, where,
                 c->archive_user);
}

void tide_startup_log(const tide_config *c)
{
    log_settings(c);
    log_memory_limit(c);
    log_memory_split(c);
    log_allocator();
    log_block_size(c);
    log_archive(c);
    tide_config_unbounded(c, tide_mem_alloc_family(), warn_unbounded, NULL);
    if (!c->online_delete_on)
        tide_log(TIDE_LOG_WARN, "unbounded: disk grows without bound: online_delete is 0 (off), so nothing is "
                 "ever deleted; set --online-delete / TIDE_ONLINE_DELETE / [node_db] online_delete_objects (N "
                 "objects per generation, or manual)");
    if (c->metrics_token[0] == '\0' && !c->metrics_public)
        tide_log(TIDE_LOG_INFO, "/metrics answers 401 to every scrape: give a token (then send "
                 "Authorization: Bearer <token>) by a file, [http] metrics_token_file / "
                 "TIDE_METRICS_TOKEN_FILE (mode 600), by systemd's LoadCredential=metrics_token:FILE, or "
                 "by TIDE_METRICS_TOKEN; or set TIDE_METRICS_PUBLIC=1");
    if (c->admin_token[0] == '\0')
        tide_log(TIDE_LOG_INFO, "admin endpoints are off (403): to enable every /v1/admin endpoint (sweep, "
                 "rotate, keep, can_delete, heap) give a token by a file, [http] admin_token_file / "
                 "TIDE_ADMIN_TOKEN_FILE (mode 600), by systemd's LoadCredential=admin_token:FILE, or by "
                 "TIDE_ADMIN_TOKEN");
}

/* Each setting the node takes, by its row: a number copied into its
 * NODE() field as that field's size holds it, or the row's to_node. */
void tide_startup_node_opts(const tide_config *c, tide_node_opts *o)
{
    tide_node_opts_init(o);
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const ti_config_setting *st = &ti_config_settings[id];
        char *field = (char *)o + st->node_offset;
        uint64_t v = ti_config_number(c, id);

        if (st->to_node) {
            st->to_node(c, o);
        } else if (st->node_size == sizeof (uint32_t)) {
            uint32_t v32 = (uint32_t)v;
            memcpy(field, &v32, sizeof v32);
        } else if (st->node_size == sizeof (uint64_t)) {
            memcpy(field, &v, sizeof v);
        } else {
            TIDE_ASSERT(st->node_size == 0);   /* not the node's: tided's or glibc's */
        }
    }
    /* Not settings: what tide_config_apply_cgroup found and what finish
     * derived. Only a limited cgroup's usage counts: an unlimited one's (a
     * whole slice's, perhaps) says nothing about this limit. */
    if (c->cgroup_limited) {
        o->cgroup_path = c->cgroup_path;
        o->cgroup_version = c->cgroup_version;
        o->store_page_memory = c->cgroup_limit;   /* the page cache counts there too */
    }
    if (c->key_cache_hard_limit) o->key_cache_hard_limit = (size_t)c->key_cache_hard_limit;
}

/* The disk bound in words. With G generations and a trigger of N objects
 * written into the newest, copies forward included (gens.c counts every
 * record the newest takes), a generation holds about N objects: N plus
 * what arrives between two of the rotator's checks (rotate_check_ms) or
 * while a gate holds the rotation back (advisory_delete, health), so the
 * directory holds about G x N objects. Bytes follow from the mean record
 * size when the newest generation has objects. G is the keep in force
 * after the next rotation (bound_keep), and the line says when it differs
 * from the manifest's. */
/* Which G is in force and where it came from: the operator's (its
 * source), or the manifest's own keep when G was not set. */
static void log_keep(const tide_config *c, const tide_gens_info *gi)
{
    const tide_config_source *s = &c->src[TIDE_CFG_GENERATIONS];
    const char *kind = s->kind == TIDE_SRC_FLAG ? "flag" : s->kind == TIDE_SRC_ENV ? "env" : "file";

    if (s->kind >= TIDE_SRC_FILE && c->generations != gi->keep)
        tide_log(TIDE_LOG_INFO, "online delete: keep %u generations in force, %u from the next rotation "
                 "(generations=%u from %s %s)", gi->keep, c->generations, c->generations, kind, s->where);
    else if (s->kind >= TIDE_SRC_FILE)
        tide_log(TIDE_LOG_INFO, "online delete: keep %u generations in force (generations=%u from %s %s)",
                 gi->keep, c->generations, kind, s->where);
    else
        tide_log(TIDE_LOG_INFO, "online delete: keep %u generations in force (generations not set: the "
                 "manifest's keep, %u for a new directory)", gi->keep, c->generations);
}

/* The keep the bound is about: the one in force after the next rotation
 * (the operator's when set, which the next rotation applies; else the
 * manifest's). When it differs from the manifest's, `when` says so. */
static unsigned bound_keep(const tide_config *c, const tide_gens_info *gi, char *when, size_t cap)
{
    unsigned k = c->src[TIDE_CFG_GENERATIONS].kind >= TIDE_SRC_FILE ? c->generations : gi->keep;

    when[0] = '\0';
    if (k != gi->keep) snprintf(when, cap, " (%u after the next rotation; %u now)", k, gi->keep);
    return k;
}

void tide_startup_log_disk(const tide_config *c, tide_node *n)
{
    tide_gens_info gi;
    char per[32], total[32], now[32], when[80];
    unsigned k;

    if (!c->online_delete_on) return;
    tide_node_gens_info(n, &gi);
    tide_size_format(gi.disk_bytes, now, sizeof now);
    log_keep(c, &gi);
    k = bound_keep(c, &gi, when, sizeof when);
    if (c->online_delete == 0) {
        tide_log(TIDE_LOG_INFO, "online delete: %u generations%s, rotated only by rotate_bytes=%" PRIu64
                 ", rotate_interval=%" PRIu64 "s or POST /v1/admin/rotate: the disk holds at most %u spans of "
                 "objects (copies forward included); now %s in %u generation(s)", k, when, c->rotate_bytes,
                 c->rotate_interval, k, now, gi.count);
        return;
    }
    if (gi.newest_objects > 0 && gi.newest_bytes > 0) {
        uint64_t mean = gi.newest_bytes / gi.newest_objects;
        tide_size_format(mean, per, sizeof per);
        tide_size_format(mean * c->online_delete * k, total, sizeof total);
        tide_log(TIDE_LOG_INFO, "online delete: %u generations%s of %" PRIu64 " objects: the disk holds at most "
                 "about %u x %" PRIu64 " objects (copies forward count toward each generation's %" PRIu64 "; "
                 "it overshoots by what arrives while the rotator checks or a gate waits); at the newest's mean record of %s (%" PRIu64
                 " bytes of nudb.dat / %" PRIu64 " objects) that is about %s of data files plus the key files; "
                 "now %s", k, when, c->online_delete, k, c->online_delete, c->online_delete, per,
                 gi.newest_bytes, gi.newest_objects, total, now);
    } else {
        tide_log(TIDE_LOG_INFO, "online delete: %u generations%s of %" PRIu64 " objects: the disk holds at most "
                 "about %u x %" PRIu64 " objects (copies forward included), i.e. %" PRIu64 " x (record size) of data "
                 "files plus the key files (a record is its value + key size + 6 bytes); now %s",
                 k, when, c->online_delete, k, c->online_delete, (uint64_t)k * c->online_delete, now);
    }
}

void tide_startup_log_rss(const tide_config *c, tide_node *n)
{
    tide_mem_proc_status st;
    tide_mem_rss_parts p;
    tide_store_info si;
    uint64_t key = 0, dat = 0;
    char line[400], maps[32];

    tide_node_store_info(n, &si);
    if (tide_mem_proc_status_read(&st) != 0 || tide_node_key_map_resident(n, &key) != 0 ||
        tide_node_dat_map_resident(n, &dat) != 0 || tide_mem_rss_parts_of(&st, key + dat, &p) != 0) {
        tide_log(TIDE_LOG_DEBUG, "memory: RSS not split: %s", tide_last_error());
        tide_err_clear();
        return;
    }
    tide_mem_rss_parts_text(&p, c->memory_limit > 0, line, sizeof line);
    if (si.key_map_bytes + si.dat_map_bytes == 0) {
        tide_log(TIDE_LOG_INFO, "memory: %s; the store is read with pread (no map), so RSS holds none of "
                 "its files", line);
        return;
    }
    tide_size_format(si.key_map_bytes + si.dat_map_bytes, maps, sizeof maps);
    tide_log(TIDE_LOG_INFO, "memory: %s; as fetches read the store, the maps' part of RSS grows up to their "
             "size, %s now: ps and top count it, memory_limit does not (/metrics "
             "tide_process_resident_memory_part_bytes and tide doctor split RSS so)", line, maps);
}
