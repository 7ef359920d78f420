/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.h: the node's figures in the Prometheus text format (0.0.4),
 * computed when asked, never on a timer.
 *
 *     tide_metrics_opts mo;  tide_metrics_opts_init(&mo);
 *     char *text; size_t len;
 *     tide_metrics_render(node, &mo, &text, &len);   -- the body of GET /metrics
 *     ... send ...; free(text);
 *
 * The families are the design's (docs/ARCHITECTURE.md, "Metric families")
 * and more, all listed in docs/OPERATIONS.md ("The metrics"), in base units
 * (bytes, seconds), each with one HELP and one TYPE line followed by all of
 * its samples: memory by consumer; the caches; sweeps and trims
 * (histograms); the allocator that serves malloc (its identity, and its own
 * figures under its own prefix); the standard process_* families with the
 * official clients' names and HELP texts; the store. A caller (the HTTP
 * server) may append families of its own with the writer below before the
 * text is finished.
 *
 * Thread safety: any thread, any number at once. Cost of one render (the
 * figures are in docs/OPERATIONS.md: 1.06 ms at 86 MiB RSS, 4.17 ms with
 * smaps): one read each of /proc/self/stat, statm and status, a walk of
 * /proc/self/fd, the allocator's statistics (glibc: mallinfo2 plus
 * malloc_info, which walk every arena under its lock, about 40 ms with 2
 * million free chunks: docs/ARCHITECTURE.md, "What a scrape walks"), and
 * with smaps on, a read of /proc/self/smaps_rollup (it walks the page tables
 * under the mmap lock; measured 3.1 ms at 86 MiB of RSS). The allocator's
 * identity is the one detected once per process (tide_mem_alloc_identity),
 * not probed per scrape. Allocates the text (a few KiB) and frees everything
 * else.
 */
#ifndef TIDE_NODE_METRICS_H
#define TIDE_NODE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "node/config.h"
#include "node/node.h"

struct tide_metrics_writer;

#define TIDE_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct tide_metrics_opts {
    int smaps;                  /* 0 (default): no smaps_rollup families */
    const char *version;        /* for tide_build_info; NULL: TIDE_VERSION */
    const tide_config *config;  /* NULL, or the settings the node runs with:
                                   adds each consumer's budget, the
                                   unbounded consumers with the setting that
                                   would bound each, and the sweep interval */
    /* Called after the node's families, to append the caller's own with
     * tide_metrics_family and tide_metrics_sample. NULL: none. */
    void (*extra)(void *arg, struct tide_metrics_writer *w);
    void *extra_arg;
} tide_metrics_opts;

void tide_metrics_opts_init(tide_metrics_opts *o);

typedef struct tide_metrics_writer tide_metrics_writer;

/*
 * Render every family into a malloc'd, NUL-terminated text (*out, *len
 * without the NUL), which the caller frees. Returns 0 or TIDE_ENOMEM. A
 * figure that cannot be read (a /proc file missing, an allocator without
 * statistics) leaves its family out rather than report a guess.
 */
int tide_metrics_render(tide_node *n, const tide_metrics_opts *o, char **out, size_t *len);

/* Start family `name` ("tide_http_requests_total") of `type` ("counter",
 * "gauge", "histogram", "summary", "untyped") with its HELP text. Every
 * sample of the family must follow before the next family starts. */
void tide_metrics_family(tide_metrics_writer *w, const char *name, const char *type, const char *help);

/* One sample: `name` (the family's, or with _bucket/_sum/_count), labels as
 * alternating key, value strings (nlabels pairs; values are escaped here),
 * and the value. Integers below 2^53 print exactly. */
void tide_metrics_sample(tide_metrics_writer *w, const char *name, const char *const *labels,
                         int nlabels, double value);

#endif
