/*
 * startup.c: from settings to a node, and the startup log an operator reads
 * as a checklist.
 *
 * The log answers, in this order: what runs with which settings and where
 * each came from; which allocator serves malloc and how it is tuned; which
 * key-file block size the store really has; and what is left unbounded.
 * Every warning names the setting or the command that would silence it.
 *
 * The block size line reads the key file of an existing store (its header
 * rules: a store keeps the block size it was created with until `tide
 * rekey` rebuilds it). For a new store it is the configured size.
 *
 * Invariants:
 *   1. Nothing here prints metrics_token or admin_token, only "set"/"unset".
 *   2. mallopt runs only from tide_startup_apply_malloc, before threads.
 *
 * Never: fail startup over a warning. Bad values were refused by config.c.
 */
#include "node/startup.h"

#include <malloc.h>
#include <string.h>

#include "mem/alloc.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

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

static void log_block_size(const tide_config *c)
{
    tide_store_info info;
    int rc = tide_store_inspect(c->data_dir, NULL, &info);

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

void tide_startup_log(const tide_config *c)
{
    char line[8192];

    tide_config_describe(c, line, sizeof line);
    tide_log(TIDE_LOG_INFO, "settings: %s", line);
    log_allocator();
    log_block_size(c);
    tide_config_unbounded(c, tide_mem_alloc_family(), warn_unbounded, NULL);
    if (c->metrics_token[0] == '\0' && !c->metrics_public)
        tide_log(TIDE_LOG_INFO, "/metrics answers 401 to every scrape: set TIDE_METRICS_TOKEN (then send "
                 "Authorization: Bearer <token>) or TIDE_METRICS_PUBLIC=1");
    if (c->admin_token[0] == '\0')
        tide_log(TIDE_LOG_INFO, "admin endpoints are off (403): set TIDE_ADMIN_TOKEN to enable "
                 "POST /v1/admin/sweep");
}

void tide_startup_node_opts(const tide_config *c, tide_node_opts *o)
{
    tide_node_opts_init(o);
    o->dir = c->data_dir;
    o->block_size = c->nudb_block_size;
    o->cache_target = (size_t)c->cache_target;
    o->cache_age_s = (unsigned)c->cache_age;
    o->cache_budget = (size_t)c->cache_budget;
    o->key_cache_size = (size_t)c->key_cache_size;
    o->key_cache_age_s = (unsigned)c->key_cache_age;
    o->insert_burst = (size_t)c->insert_burst;
    o->sweep_interval_ms = (uint64_t)c->sweep_interval * 1000u;
    o->trim_policy = c->trim_policy;
    o->trim_param = c->trim_param;
}
