/*
 * doctor.h: a node's memory explained in a few lines, from its /metrics page.
 *
 *     tide_doctor_report r;
 *     tide_doctor_analyze(metrics_text, &r);     -- what the page says
 *     tide_doctor_format(&r, stdout);            -- in words
 *     tide_doctor_json(&r, &json_text);          -- the same, for scripts
 *
 * The analysis reads only the page, the way an operator's script would, so
 * `tide doctor` works against any node it can scrape and the tests can feed
 * it any page. What it cannot find on the page it says it cannot find.
 * Not thread-safe per report; no global state.
 */
#ifndef TIDE_CLIENT_DOCTOR_H
#define TIDE_CLIENT_DOCTOR_H

#include <stdint.h>
#include <stdio.h>

#define TIDE_DOCTOR_MAX 16

typedef struct tide_doctor_consumer {
    char   name[32];
    double bytes;
    double budget;        /* < 0: the page gives none; 0: unbounded */
} tide_doctor_consumer;

typedef struct tide_doctor_unbounded {
    char consumer[32];
    char setting[160];
} tide_doctor_unbounded;

typedef struct tide_doctor_report {
    char   allocator[32], allocator_version[64];
    double rss, rss_anon, rss_file;           /* < 0 when absent */
    double live;                              /* the allocator's live bytes; < 0 when unknown */
    double allocator_free;                    /* < 0 when unknown */
    size_t nconsumers;                        /* largest first */
    tide_doctor_consumer consumers[TIDE_DOCTOR_MAX];
    double consumers_total;
    double sweeps, trims, trims_lowered, trim_released, trim_seconds, trim_minflt;
    double trim_p50_s, trim_p95_s;            /* from the histogram's buckets; < 0 when no trims */
    double sweep_interval;                    /* < 0 when absent */
    double last_trim_delta;
    size_t nunbounded;
    tide_doctor_unbounded unbounded[TIDE_DOCTOR_MAX];
} tide_doctor_report;

/* Read `text` (Prometheus text format). Returns 0, or TIDE_EINVAL when it
 * is not a Tide node's page: no sample of a tide_* family (another
 * exporter's page, Prometheus' own, HTML, garbage, an empty page), or
 * neither process_resident_memory_bytes nor tide_memory_consumer_bytes.
 * tide_last_error() then begins "does not look like a tide node's
 * /metrics: " and says which of the two, to follow the page's URL. */
int tide_doctor_analyze(const char *text, tide_doctor_report *r);

/* The report in words, a few lines, to `f`. */
void tide_doctor_format(const tide_doctor_report *r, FILE *f);

/* The report as one JSON object (malloc'd text the caller frees).
 * Returns 0 or TIDE_ENOMEM. */
int tide_doctor_json(const tide_doctor_report *r, char **out);

#endif
