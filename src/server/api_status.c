/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_status.c: the JSON of the node's figures: GET /v1/status (store,
 * caches, memory, sweeps, requests, HTTP, online delete from api_rotate.c,
 * the memory limit's level and figures, and the archive's state with each
 * local generation's), GET /v1/sweeps (the last
 * TIDE_NODE_REPORTS rounds) and one round's report, which POST
 * /v1/admin/sweep answers with too. docs/HTTP.md lists every field.
 *
 * Each figure is read from the node, the memory accounts, /proc and the
 * server's counters when the page is asked for; nothing is cached here.
 *
 * Invariants:
 *   1. A string from outside the code (data_dir, a /proc error) goes in
 *      through tided_json_text, so the page is valid UTF-8.
 *   2. "keys" is null until the count made at open is done, never a guess.
 *   3. "archive" is null when the node has no archive (archive=off), an
 *      object otherwise with the same members whatever its state
 *      ("problem" null while the last call to RADOS worked,
 *      "generations" null on a replica).
 *
 * Never: take a lock the sweeper holds across a trim (the node's getters
 * do not).
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mem/account.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "node/metrics.h"
#include "tide/error.h"
#include "tide/version.h"
#include "util/clock.h"

static json_t *cache_sweep_json(const tide_cache_sweep_report *r)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "effective_age_us", (json_int_t)r->effective_age_us,
                     "entries_before", (json_int_t)r->entries_before, "demoted", (json_int_t)r->demoted,
                     "evicted", (json_int_t)r->evicted, "reaped", (json_int_t)r->reaped,
                     "bytes_before", (json_int_t)r->bytes_before, "bytes_after", (json_int_t)r->bytes_after);
}

static json_t *keycache_sweep_json(const tide_keycache_sweep_report *r)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I}",
                     "effective_age_us", (json_int_t)r->effective_age_us,
                     "entries_before", (json_int_t)r->entries_before, "evicted", (json_int_t)r->evicted,
                     "bytes_before", (json_int_t)r->bytes_before, "bytes_after", (json_int_t)r->bytes_after);
}

json_t *tided_trim_json(const tide_mem_trim_report *t)
{
    return json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "allocator", tide_mem_alloc_family_name(t->family),
                     "result", t->result,
                     "rss_before", (json_int_t)t->rss_before,
                     "rss_after", (json_int_t)t->rss_after,
                     "rss_delta", (json_int_t)t->rss_delta,
                     "duration_ns", (json_int_t)t->duration_ns,
                     "minflt", (json_int_t)t->minflt, "majflt", (json_int_t)t->majflt);
}

static json_t *arena_json(const tide_cache_arena_report *a, int rc)
{
    return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "rc", rc,
                     "segments", (json_int_t)a->evac.segments, "emptied", (json_int_t)a->evac.emptied,
                     "moved_objects", (json_int_t)a->evac.moved_objects,
                     "moved_entries", (json_int_t)a->moved_entries,
                     "moved_bytes", (json_int_t)a->evac.moved_bytes,
                     "kept_objects", (json_int_t)a->evac.kept_objects,
                     "kept_bytes", (json_int_t)a->evac.kept_bytes,
                     "released", (json_int_t)a->released,
                     "evacuate_ns", (json_int_t)a->evacuate_ns, "release_ns", (json_int_t)a->release_ns);
}

json_t *tided_sweep_report_json(const tide_node_sweep_report *r)
{
    json_t *trim = tided_trim_json(&r->trim);
    return json_pack("{s:I,s:I,s:I,s:I,s:b,s:i,s:o,s:o,s:o,s:o,s:o,s:I,s:I}",
                     "seq", (json_int_t)r->seq, "started_unix_us", (json_int_t)r->started_unix_us,
                     "sweep_ns", (json_int_t)r->sweep_ns, "freed_bytes", (json_int_t)r->freed_bytes,
                     "trimmed", r->trimmed, "trim_rc", r->trim_rc,
                     "trim", trim, "node_cache", cache_sweep_json(&r->node_cache),
                     "key_cache", keycache_sweep_json(&r->key_cache),
                     "arena", arena_json(&r->arena, r->arena_rc),
                     "key_cache_arena", arena_json(&r->key_arena, r->key_arena_rc),
                     "consumer_bytes", (json_int_t)r->consumer_bytes, "anon_rss_bytes", (json_int_t)r->anon_rss);
}

static json_t *store_json(tide_node *node)
{
    tide_store_info s;
    uint64_t keys;
    json_t *j;

    tide_node_store_info(node, &s);
    j = json_pack("{s:i,s:i,s:i,s:f,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:I}",
                     "version", (int)s.version, "key_size", (int)s.key_size, "block_size", (int)s.block_size,
                     "load_factor", s.load_factor, "bucket_capacity", (int)s.capacity,
                     "buckets", (json_int_t)s.buckets,
                     "dat_file_bytes", (json_int_t)s.dat_file_bytes,
                     "key_file_bytes", (json_int_t)s.key_file_bytes,
                     "log_file_bytes", (json_int_t)s.log_file_bytes,
                     "inserts", (json_int_t)s.inserts, "fetches", (json_int_t)s.fetches,
                     "commits", (json_int_t)s.commits, "commit_failures", (json_int_t)s.commit_failures,
                     "pool_bytes", (json_int_t)s.pool_bytes, "pool_spare_bytes", (json_int_t)s.pool_spare_bytes,
                     "commit_buffer_bytes", (json_int_t)s.commit_buffer_bytes,
                     "bytes_written", (json_int_t)s.bytes_written, "syncs", (json_int_t)s.syncs,
                     "commit_interval_ms", (int)s.commit_interval_ms, "burst_bytes", (json_int_t)s.burst_bytes);
    /* null until the count made at open is done (tide_node_keys) */
    json_object_set_new(j, "keys", tide_node_keys(node, &keys) ? json_integer((json_int_t)keys) : json_null());
    return j;
}

static json_t *caches_json(tide_node *node, json_t **keycache)
{
    const tide_node_opts *o = tide_node_options(node);
    tide_cache_stats c;
    tide_keycache_stats k;

    tide_node_cache_stats(node, &c);
    tide_node_keycache_stats(node, &k);
    *keycache = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                          "hits", (json_int_t)k.hits, "misses", (json_int_t)k.misses,
                          "inserts", (json_int_t)k.inserts, "evictions", (json_int_t)k.evictions,
                          "entries", (json_int_t)k.entries, "bytes", (json_int_t)k.bytes,
                          "slots", (json_int_t)k.slots, "effective_age_us", (json_int_t)k.effective_age_us,
                          "target_entries", (json_int_t)o->key_cache_size,
                          "age_s", (json_int_t)o->key_cache_age_s);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "hits", (json_int_t)c.hits, "misses", (json_int_t)c.misses,
                     "inserts", (json_int_t)c.inserts, "evictions", (json_int_t)c.evictions,
                     "demotions", (json_int_t)c.demotions, "revivals", (json_int_t)c.revivals,
                     "reaped", (json_int_t)c.reaped, "strong", (json_int_t)c.strong,
                     "weak", (json_int_t)c.weak, "bytes", (json_int_t)c.bytes, "slots", (json_int_t)c.slots,
                     "effective_age_us", (json_int_t)c.effective_age_us,
                     "target_entries", (json_int_t)o->cache_target, "age_s", (json_int_t)o->cache_age_s,
                     "budget_bytes", (json_int_t)o->cache_budget,
                     "hard_limit_bytes", (json_int_t)o->cache_hard_limit);
}

static json_t *memory_json(void)
{
    tide_mem_account_entry acct[TIDE_MEM_ACCOUNT_MAX];
    tide_mem_proc_status st;
    size_t n = tide_mem_account_snapshot(acct, TIDE_MEM_ACCOUNT_MAX);
    json_t *accounts = json_object(), *m;

    if (n > TIDE_MEM_ACCOUNT_MAX) n = TIDE_MEM_ACCOUNT_MAX;
    for (size_t i = 0; i < n; i++) json_object_set_new(accounts, acct[i].name, json_integer(acct[i].bytes));
    m = json_pack("{s:o,s:s}", "accounts", accounts,
                  "allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()));
    if (tide_mem_proc_status_read(&st) == 0) {
        json_object_set_new(m, "rss_bytes", json_integer((json_int_t)st.vm_rss));
        json_object_set_new(m, "rss_peak_bytes", json_integer((json_int_t)st.vm_hwm));
        if (st.has_split) {
            json_object_set_new(m, "rss_anon_bytes", json_integer((json_int_t)st.rss_anon));
            json_object_set_new(m, "rss_file_bytes", json_integer((json_int_t)st.rss_file));
            json_object_set_new(m, "rss_shmem_bytes", json_integer((json_int_t)st.rss_shmem));
        }
    } else {
        json_object_set_new(m, "rss_error", tided_json_text(tide_last_error()));
    }
    return m;
}

static json_t *sweeps_json(tide_node *node)
{
    tide_node_totals t;
    tide_node_sweep_report last;
    json_t *j;

    tide_node_totals_get(node, &t);
    j = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                  "sweeps", (json_int_t)t.sweeps, "sweep_ns", (json_int_t)t.sweep_ns,
                  "trims", (json_int_t)t.trims, "trims_lowered", (json_int_t)t.trims_lowered,
                  "trim_ns", (json_int_t)t.trim_ns, "trim_released_bytes", (json_int_t)t.trim_released_bytes,
                  "trim_minflt", (json_int_t)t.trim_minflt, "trim_majflt", (json_int_t)t.trim_majflt,
                  "interval_ms", (json_int_t)tide_node_options(node)->sweep_interval_ms);
    if (tide_node_reports(node, &last, 1) == 1) json_object_set_new(j, "last", tided_sweep_report_json(&last));
    else json_object_set_new(j, "last", json_null());
    return j;
}

/* GET /v1/sweeps: the last TIDE_NODE_REPORTS rounds, newest first. */
json_t *tided_sweep_list_json(tide_node *node)
{
    tide_node_sweep_report *r = calloc(TIDE_NODE_REPORTS, sizeof *r);
    json_t *list = json_array();
    size_t n = r ? tide_node_reports(node, r, TIDE_NODE_REPORTS) : 0;

    for (size_t i = 0; i < n; i++) json_array_append_new(list, tided_sweep_report_json(&r[i]));
    free(r);
    return json_pack("{s:o,s:I}", "reports", list, "interval_ms",
                     (json_int_t)tide_node_options(node)->sweep_interval_ms);
}

static json_t *requests_json(tide_node *node)
{
    tide_node_totals t;

    tide_node_totals_get(node, &t);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "puts", (json_int_t)t.puts, "puts_existing", (json_int_t)t.puts_existing,
                     "gets", (json_int_t)t.gets, "gets_cache", (json_int_t)t.gets_cache,
                     "gets_keycache", (json_int_t)t.gets_keycache, "gets_store", (json_int_t)t.gets_store,
                     "gets_missing", (json_int_t)t.gets_missing);
}

static json_t *http_json(tided_server *srv)
{
    uint64_t sb, sj, wb, wj, rb, rj;

    json_t *j;

    tided_worker_counts(&srv->sync_worker, &sb, &sj);
    tided_worker_counts(&srv->sweep_worker, &wb, &wj);
    tided_worker_counts(&srv->rotate_worker, &rb, &rj);
    j = json_pack("{s:o,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "listen", tided_json_text(srv->listen_text), "threads", (int)srv->nloops,
                     "connections", (json_int_t)atomic_load(&srv->connections),
                     "connections_total", (json_int_t)atomic_load(&srv->connections_total),
                     "connections_refused", (json_int_t)atomic_load(&srv->connections_refused),
                     "max_connections", (json_int_t)srv->max_connections,
                     "max_object_size", (json_int_t)srv->max_object_size,
                     "sync_requests", (json_int_t)sj, "syncs", (json_int_t)sb,
                     "sweep_requests", (json_int_t)wj, "admin_sweeps", (json_int_t)wb);
    if (j) json_object_set_new(j, "rotate_requests", json_integer((json_int_t)rj));
    if (j && json_object_update_new(j, tided_conn_json(srv)) != 0) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* ---- the memory limit ---- */

static json_t *psi_json(const tide_mem_psi *p)
{
    json_t *j = json_pack("{s:{s:f,s:f,s:f,s:I}}", "some", "avg10", p->some.avg10, "avg60", p->some.avg60,
                          "avg300", p->some.avg300, "total_us", (json_int_t)p->some.total_us);
    if (j && p->has_full)
        json_object_set_new(j, "full", json_pack("{s:f,s:f,s:f,s:I}", "avg10", p->full.avg10, "avg60",
                                                 p->full.avg60, "avg300", p->full.avg300, "total_us",
                                                 (json_int_t)p->full.total_us));
    return j;
}

static json_t *cgroup_json(const tide_node_memory_reading *r)
{
    json_t *events, *j;

    if (!r->has_cgroup) return json_null();
    events = json_object();
    for (int ev = 0; ev < TIDE_MEM_EV_COUNT; ev++)
        if (r->cgroup.has_event[ev])
            json_object_set_new(events, tide_mem_event_name(ev), json_integer((json_int_t)r->cgroup.events[ev]));
    j = json_pack("{s:I,s:I,s:I,s:o}", "usage_bytes", (json_int_t)r->cgroup.current_bytes,
                  "page_cache_bytes", (json_int_t)r->cgroup.page_cache_bytes, "counted_bytes",
                  (json_int_t)(r->cgroup.current_bytes > r->cgroup.page_cache_bytes
                               ? r->cgroup.current_bytes - r->cgroup.page_cache_bytes : 0),
                  "events", events);
    if (j) json_object_set_new(j, "pressure", r->cgroup.has_psi ? psi_json(&r->cgroup.psi) : json_null());
    return j;
}

static json_t *marks_json(const tide_node_memory_status *m)
{
    json_t *j = json_object();

    for (int l = TIDE_OVERLOAD_SOFT; l < TIDE_OVERLOAD_LEVELS; l++)
        json_object_set_new(j, tide_mem_overload_level_name(l),
                            json_pack("{s:I,s:I}", "enter_bytes", (json_int_t)m->marks_enter[l],
                                      "leave_bytes", (json_int_t)m->marks_leave[l]));
    return j;
}

static json_t *changes_json(const tide_node_memory_status *m)
{
    json_t *list = json_array();

    for (size_t i = 0; i < m->nchanges && i < TIDE_NODE_LEVEL_CHANGES; i++) {
        const tide_node_level_change *c = &m->changes[i];
        json_array_append_new(list, json_pack("{s:I,s:s,s:s,s:I,s:I,s:I,s:b}", "unix_us", (json_int_t)c->unix_us,
                                              "from", tide_mem_overload_level_name(c->from),
                                              "to", tide_mem_overload_level_name(c->to),
                                              "counted_bytes", (json_int_t)c->counted_bytes,
                                              "rss_bytes", (json_int_t)c->rss_bytes,
                                              "cgroup_bytes", (json_int_t)c->cgroup_bytes,
                                              "pressure", c->pressure));
    }
    return list;
}

json_t *tided_memory_limit_json(tided_server *srv)
{
    tide_node_memory_status *m = calloc(1, sizeof *m);
    json_t *actions = json_object(), *j = NULL, *source;
    char text[sizeof srv->memory_source];

    if (m == NULL) goto out;
    tide_node_memory_get(srv->node, m);
    pthread_mutex_lock(&srv->memory_mu);
    memcpy(text, srv->memory_source, sizeof text);
    pthread_mutex_unlock(&srv->memory_mu);
    source = tided_json_text(text);
    for (int a = 0; a < TIDE_NODE_ACT_COUNT; a++)
        json_object_set_new(actions, tide_node_action_name(a), json_integer((json_int_t)m->actions[a]));
    j = json_pack("{s:I,s:o,s:s,s:i,s:I,s:s,s:I,s:o,s:o,s:o,s:b,s:{s:I,s:I},s:o,s:I,s:I,s:{s:I,s:I},s:o}",
                  "limit_bytes", (json_int_t)m->limit_bytes, "source", source,
                  "level", tide_mem_overload_level_name(m->level), "level_value", m->level,
                  "counted_bytes", (json_int_t)m->counted_bytes, "counts", m->counts ? m->counts : "rss",
                  "rss_bytes", (json_int_t)m->last.rss_bytes, "marks", marks_json(m),
                  "cgroup", cgroup_json(&m->last),
                  "pressure", m->last.has_psi ? psi_json(&m->last.psi) : json_null(),
                  "psi_trigger", m->psi_trigger,
                  "peak", "start_bytes", (json_int_t)m->peak_start_bytes, "sweep_bytes",
                  (json_int_t)m->peak_sweep_bytes,
                  "actions", actions, "level_changes", (json_int_t)m->level_changes,
                  "rejected_writes", (json_int_t)m->rejected_writes,
                  "rejected_requests", "write", (json_int_t)atomic_load(&srv->overload_rejected_write),
                  "body", (json_int_t)atomic_load(&srv->overload_rejected_body),
                  "changes", changes_json(m));
    actions = NULL;
    if (j) json_object_set_new(j, "listener_paused", json_boolean(atomic_load(&srv->listeners_paused) != 0));
    if (j) json_object_set_new(json_object_get(j, "rejected_requests"), "store_queue",
                               json_integer((json_int_t)atomic_load(&srv->overload_rejected_queue)));
    if (j) json_object_set_new(j, "readings", json_pack("{s:I,s:I,s:I}", "total", (json_int_t)m->readings,
                                                        "failed", (json_int_t)m->reading_failures,
                                                        "cgroup_failed", (json_int_t)m->cgroup_failures));
out:
    json_decref(actions);
    free(m);
    return j;
}

/* ---- the archive ---- */

/* Each local generation's state in the archive, newest first (a
 * primary's: a replica uploads nothing, and its local ids are not the
 * archive's). */
static json_t *archive_gens_json(tide_node *node, tide_archive *a)
{
    tide_gens_info gi;
    json_t *list = json_array();

    tide_node_gens_info(node, &gi);
    for (unsigned i = 0; list && i < gi.count && i < TIDE_GEN_MAX; i++) {
        uint64_t uploaded = 0;
        const char *state = tide_archive_gen_state(a, gi.gens[i].id, &uploaded);
        json_array_append_new(list, json_pack("{s:I,s:s,s:I}", "id", (json_int_t)gi.gens[i].id, "state", state,
                                              "uploaded_bytes", (json_int_t)uploaded));
    }
    return list;
}

/* The "archive" object (invariant 3): null with archive=off. */
static json_t *archive_json(tide_node *node)
{
    tide_archive *a = tide_node_archive(node);
    tide_archive_info *ai;
    json_t *j;

    if (a == NULL) return json_null();
    if ((ai = malloc(sizeof *ai)) == NULL) return NULL;
    tide_archive_get_info(a, ai);
    j = json_pack("{s:o,s:o,s:s,s:s,s:b,s:b,s:o,s:I,s:I,s:I,s:I,s:o}",
                  "pool", tided_json_text(ai->pool), "prefix", tided_json_text(ai->prefix),
                  "mode", ai->replica ? "replica" : "primary",
                  "sync", tide_node_options(node)->archive_sync ? "archive" : "local",
                  "up", ai->up, "conflict", ai->conflict,
                  "problem", ai->problem[0] ? tided_json_text(ai->problem) : json_null(),
                  "lag_bytes", (json_int_t)ai->lag_bytes, "sealed_generations", (json_int_t)ai->sealed_generations,
                  "archived_generations", (json_int_t)ai->archived_generations,
                  "archive_bytes", (json_int_t)ai->archive_bytes,
                  "generations", ai->replica ? json_null() : archive_gens_json(node, a));
    free(ai);
    return j;
}

json_t *tided_status_json(tided_server *srv)
{
    json_t *keycache = NULL, *cache = caches_json(srv->node, &keycache);
    uint64_t up_us = tide_clock_mono_us() - srv->started_mono_us;

    return json_pack("{s:s,s:f,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                     "version", TIDE_VERSION, "uptime_seconds", (double)up_us / 1e6,
                     "started_unix", (json_int_t)srv->started_unix_s, "data_dir", tided_json_text(srv->cfg->data_dir),
                     "store", store_json(srv->node), "node_cache", cache, "key_cache", keycache,
                     "memory", memory_json(), "sweeps", sweeps_json(srv->node),
                     "requests", requests_json(srv->node), "http", http_json(srv),
                     "online_delete", tided_online_delete_json(srv->node),
                     "memory_limit", tided_memory_limit_json(srv), "archive", archive_json(srv->node));
}
