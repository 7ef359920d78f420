/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * startup.h: from a finished tide_config to a running node, with the
 * startup log that reads as an operator's checklist.
 *
 * tided's main does, in this order, before any thread starts:
 *
 *     tide_startup_check_data_dir(&cfg);    data_dir or its parent exists (--check-config too)
 *     tide_startup_apply_malloc(&cfg);      glibc mallopt (mmap_threshold, arena_max)
 *     tide_startup_log(&cfg);               settings, allocator, block size, warnings
 *     tide_startup_node_opts(&cfg, &o);     the node's options from the settings
 *     tide_node_open(&node, &o);
 *     tide_startup_log_disk(&cfg, node);   the disk bound, with online delete
 *     tide_startup_log_rss(&cfg, node);    what RSS will show besides the process
 *
 * None of these is thread-safe: they are for startup.
 */
#ifndef TIDE_NODE_STARTUP_H
#define TIDE_NODE_STARTUP_H

#include "node/config.h"
#include "node/node.h"

/*
 * Whether data_dir can hold the store: it is a directory, or it does not
 * exist and its parent directory does (tided makes the data directory on
 * first run, never its parents). Returns 0, or TIDE_ENOENT / TIDE_EINVAL
 * with tide_last_error() naming data_dir, its source and the directory at
 * fault: "data_dir=/srv/a/b/data (flag --data-dir): its parent directory
 * /srv/a/b does not exist; tided creates the data directory but not its
 * parents: mkdir -p /srv/a/b, or set another data_dir". What stat cannot
 * tell (a permission) is left to the store's open, which names it. For
 * --check-config and the start alike, before the startup log says a new
 * store will be created. Reads only (two stat calls); allocates nothing.
 */
int tide_startup_check_data_dir(const tide_config *c);

/*
 * Apply mmap_threshold and arena_max with mallopt when set and glibc serves
 * malloc (another allocator: one warning that they do not apply). Must run
 * before any thread starts. Returns 0, or TIDE_EINVAL when mallopt refused
 * a value (the message names it).
 */
int tide_startup_apply_malloc(const tide_config *c);

/*
 * Log, at info level unless said otherwise:
 *   "settings [node]: node_size=medium(file tide.cfg:2) ...", one line per
 *     group (tide_config_group; tide_config_describe_setting for each),
 *     a group too long for one line continued in the next, none cut at
 *     the log's cap;
 *   "allocator: glibc 2.36 (linked) options: ..." and for jemalloc
 *     "... background_thread=true, dirty_decay_ms=10000, muzzy_decay_ms=0",
 *     with a warning when its background thread is off;
 *   "Using NuDB block size: N bytes" (read from the key file when a store
 *     exists in data_dir, else the configured size), with a warning that
 *     names `tide rekey` when the configured size differs;
 *   with archive=rados, "archive: rados pool P, prefix X (primary), conf
 *     F, user U; a PUT ?sync=1 answers after the local commit, the archive
 *     follows (archive_sync=local; ...)", or "... after its bytes are in
 *     RADOS too (archive_sync=archive; ...)", or a replica's "takes no
 *     writes ...";
 *   a warning for each unbounded consumer and how to bound it;
 *   how to enable /metrics when neither a token nor public is set.
 * Never prints a token. Reads the key file's header; allocates little.
 */
void tide_startup_log(const tide_config *c);

/* With online delete on, log the disk bound these settings give (G spans
 * of online_delete objects plus the copies forward; in bytes at the newest
 * generation's mean record size when it holds objects, else per object)
 * and the disk used now. After tide_node_open; nothing when it is off. */
void tide_startup_log_disk(const tide_config *c, tide_node *n);

/* Log RSS in its parts now (the process's anonymous memory, counted
 * against memory_limit; the store files' read-only maps, page cache not
 * counted; code and libraries), and how far the maps can take it: ps and
 * top show their pages in RSS as fetches read them, up to the maps' size.
 * After tide_node_open. Reads /proc/self/status and pagemap. */
void tide_startup_log_rss(const tide_config *c, tide_node *n);

/* The node options the settings ask for (dir, caches, burst, sweep
 * interval in ms, block size for a new store, online delete, the memory
 * limit): each row of the settings table that names a node option (its
 * NODE field or to_node function) puts its value there; then the cgroup
 * found and the key cache's derived hard limit. */
void tide_startup_node_opts(const tide_config *c, tide_node_opts *o);

#endif
