/*
 * doctor.h: a node's memory and disk explained in a few lines, from its
 * /metrics page and its /v1/status.
 *
 *     tide_doctor_report r;
 *     tide_doctor_analyze(metrics_text, &r);     -- what the page says
 *     tide_doctor_analyze_status(&r, status_json, NULL, now_us);  -- the disk
 *     tide_doctor_format(&r, stdout);            -- in words
 *     tide_doctor_json(&r, &json_text);          -- the same, for scripts
 *
 * The analysis reads only the texts, the way an operator's script would, so
 * `tide doctor` works against any node it can scrape and the tests can feed
 * it any page. What it cannot find it says it cannot find.
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

#define TIDE_DOCTOR_GENS     64   /* generations listed (TIDE_GEN_MAX) */
#define TIDE_DOCTOR_FINDINGS 8

/* The disk side (online delete, issue 12). Every figure is < 0 when neither
 * text gives it: a node from before online delete has none of them. */
typedef struct tide_doctor_disk {
    int    analyzed;          /* tide_doctor_analyze_status ran on this report */
    int    status_read;       /* /v1/status was given and is a JSON object */
    char   status_error[200]; /* why not, when status_read is 0 */
    int    reported;          /* the status has an "online_delete" object */
    int    enabled;           /* its "enabled" (0 when not reported) */
    int    advisory_delete;   /* its "advisory_delete": 1, 0, or -1 not said */
    size_t ngens;             /* newest first */
    struct { uint64_t id; char dir[32]; double bytes; } gens[TIDE_DOCTOR_GENS];
    double disk_bytes, rotations, newest_objects;
    double last_rotation_us;  /* 0: never */
    double can_delete;        /* rotations allowed up to this manifest count */
    int    can_delete_always; /* "always" (UINT64_MAX, written -1 or as text) */
    double last_rotation_age_s; /* now - last rotation; < 0 unknown or never */
    double failures, abandoned; /* the status's counts of failed and abandoned attempts */
    int    last_rc_known;     /* the status's "last_rotation" report was read */
    int    last_rc;           /* its rc: 0 the newest attempt succeeded */
    double last_seq;          /* its seq */
    /* From /metrics (tide_disk_bytes, tide_generations, tide_rotations_total,
     * tide_rotation_failures_total, tide_rotations_abandoned_total): */
    double m_disk_bytes, m_generations, m_rotations, m_failures, m_abandoned;
    size_t nfindings;         /* what needs the operator, with the advice */
    char   findings[TIDE_DOCTOR_FINDINGS][400];
} tide_doctor_disk;

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
    tide_doctor_disk disk;                    /* read by analyze (metrics) and analyze_status */
} tide_doctor_report;

/* Read `text` (Prometheus text format). Returns 0, or TIDE_EINVAL when it
 * is not a Tide node's page: no sample of a tide_* family (another
 * exporter's page, Prometheus' own, HTML, garbage, an empty page), or
 * neither process_resident_memory_bytes nor tide_memory_consumer_bytes.
 * tide_last_error() then begins "does not look like a tide node's
 * /metrics: " and says which of the two, to follow the page's URL. */
int tide_doctor_analyze(const char *text, tide_doctor_report *r);

/*
 * The disk side, after tide_doctor_analyze filled r from the page (which
 * wipes r, disk included): `status_json` is the body of GET /v1/status, or
 * NULL when it could not be had (then `unread` says why: "HTTP 404", a
 * connection error). Reads its "online_delete" object ({"enabled",
 * "advisory_delete", "generations":[{"id","dir","bytes"}], "disk_bytes",
 * "rotations", "last_rotation_unix_us" (or "last_rotation_us"),
 * "newest_objects", "can_delete" (a count, "never" or "always"),
 * "failures", "abandoned"}),
 * tolerating any member missing (an older node), and makes the findings:
 * online delete off (the store grows without bound), failed and abandoned
 * rotation attempts, an advisory_delete allowance that lets nothing be
 * deleted. `now_us` (Unix microseconds) gives the last rotation's age.
 * Returns 0; a status that is not JSON is recorded in disk.status_error,
 * not an error. No I/O.
 */
int tide_doctor_analyze_status(tide_doctor_report *r, const char *status_json, const char *unread,
                               uint64_t now_us);

/* The report in words, a few lines, to `f`. */
void tide_doctor_format(const tide_doctor_report *r, FILE *f);

/* The report as one JSON object (malloc'd text the caller frees).
 * Returns 0 or TIDE_ENOMEM. */
int tide_doctor_json(const tide_doctor_report *r, char **out);

#endif
