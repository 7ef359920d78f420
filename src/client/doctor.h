/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * doctor.h: a node's memory, disk and archive explained in a few lines,
 * from its /metrics page and its /v1/status.
 *
 *     tide_doctor_report r;
 *     tide_doctor_analyze(metrics_text, &r);     -- what the page says, the rules' findings
 *     tide_doctor_analyze_growth(&r, &earlier, seconds);  -- with a second scrape
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
    double allocations;   /* tide_memory_allocations_total{consumer}; < 0 absent */
    double allocated;     /* tide_memory_allocated_bytes_total{consumer}; < 0 absent */
} tide_doctor_consumer;

/*
 * The rules: each reads named figures of the page, compares
 * them with the thresholds below and, when one is crossed, makes a finding
 * of severity WARN or BAD with the figures and the advice that fixes it.
 * A rule whose figures the page lacks (an older node, no cgroup, no PSI)
 * says what it cannot tell instead; one that passes is listed as passed.
 * The verdict is the worst finding's severity and summary.
 *
 * The thresholds, as `tide doctor --help` and docs/OPERATIONS.md give them:
 */
#define TIDE_DOCTOR_SMALL_RSS_MIB   64    /* rss_vs_live, allocator_free: RSS less RssFile below this is not judged, */
#define TIDE_DOCTOR_SMALL_LIMIT_SHARE 0.25 /*   or below this share of the limit when that is less */
#define TIDE_DOCTOR_RSS_LIVE_WARN   1.5   /* rss / allocator live bytes */
#define TIDE_DOCTOR_RSS_LIVE_BAD    3.0
#define TIDE_DOCTOR_ARENA_WARN      1.5   /* arena: resident / live bytes of the node cache's arena, */
#define TIDE_DOCTOR_ARENA_BAD       3.0   /*   judged from SMALL_RSS_MIB of resident and when */
#define TIDE_DOCTOR_ARENA_SLACK_MIB 8     /*   resident - live is above this (the open and reserve
                                                 segments a sweep keeps) */
#define TIDE_DOCTOR_FREE_WARN       0.25  /* tide_allocator_free_bytes / (RSS - RssFile) */
#define TIDE_DOCTOR_FREE_BAD        0.50
#define TIDE_DOCTOR_PEAK_WARN       2.0   /* peak since start / counted bytes now */
#define TIDE_DOCTOR_LIMIT_WARN      0.75  /* counted / limit (or the soft level), when the page */
#define TIDE_DOCTOR_LIMIT_BAD       0.90  /*   has no enter marks; with them: soft warn, high bad */
#define TIDE_DOCTOR_PRESSURE_WARN   0.10  /* PSI some avg10, the worse of system and cgroup */
#define TIDE_DOCTOR_PRESSURE_BAD    0.20  /* PSI some avg60: sustained */
#define TIDE_DOCTOR_FLAP_CHANGES    20    /* overload level changes since start */
#define TIDE_DOCTOR_GROWTH_MIN_MIB  1     /* growth: a consumer grew by at least this */
#define TIDE_DOCTOR_GROWTH_SHARE    0.10  /*   and by this share of what it held */
#define TIDE_DOCTOR_GROWTH_BAD_S    3600  /*   BAD when at that rate it reaches the limit within
                                                 (never for store_commit, store_insert_pool, http:
                                                 transient, no time to the limit projected) */
#define TIDE_DOCTOR_ARCHIVE_LAG_WARN_MIB 256 /* archive_lag: tide_archive_lag_bytes from this many
                                                 MiB (a healthy node's archive trails its commits
                                                 by a few writes in flight) */

typedef enum tide_doctor_severity {
    TIDE_DOCTOR_OK = 0, TIDE_DOCTOR_WARN = 1, TIDE_DOCTOR_BAD = 2
} tide_doctor_severity;

/* "ok", "warn", "bad". */
const char *tide_doctor_severity_name(tide_doctor_severity s);

/* One rule as documented: its name, the figures it reads, its thresholds
 * and the advice, in words (static strings). */
typedef struct tide_doctor_rule {
    const char *name, *reads, *thresholds, *advice;
} tide_doctor_rule;

/* The i-th rule of the table, or NULL past the last. No state. */
const tide_doctor_rule *tide_doctor_rule_at(size_t i);

#define TIDE_DOCTOR_FIGURES 10

typedef struct tide_doctor_figure {
    char   name[40];      /* "counted_bytes", "ratio" */
    double value;
    int    integer;       /* a count or bytes: printed, and in JSON, as an integer */
} tide_doctor_figure;

typedef struct tide_doctor_finding {
    const char *rule;                 /* the rule's name (static) */
    tide_doctor_severity severity;    /* WARN or BAD */
    char   summary[200];              /* one line: what the verdict says */
    char   detail[500];               /* the figures in words */
    char   advice[700];               /* the settings or actions that fix it */
    size_t nfigures;
    tide_doctor_figure figures[TIDE_DOCTOR_FIGURES];
} tide_doctor_finding;

typedef struct tide_doctor_unknown {
    const char *rule;
    char why[300];                    /* what it cannot tell, and why */
} tide_doctor_unknown;

#define TIDE_DOCTOR_RULES 16

typedef struct tide_doctor_unbounded {
    char consumer[32];
    char setting[160];
} tide_doctor_unbounded;

#define TIDE_DOCTOR_GENS     64   /* generations listed (TIDE_GEN_MAX) */
#define TIDE_DOCTOR_FINDINGS 8

/* The disk side (online delete). Every figure is < 0 when neither
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

#define TIDE_DOCTOR_ARCHIVE_GENS 64

/* The archive (docs/ARCHIVE.md), from the page's tide_archive_* families
 * and /v1/status' "archive" object. A page without those families (a node
 * with archive=off, or from before the archive) leaves `present` 0, and
 * then the report says nothing of an archive: no rule's result, no words,
 * "archive": null in JSON. Every figure is < 0 when the page lacks it. */
typedef struct tide_doctor_archive {
    int    present;               /* the page has a tide_archive_* sample */
    char   pool[128], prefix[72], mode[16];   /* tide_archive_info's labels; "" absent */
    double up, conflict;          /* tide_archive_up, tide_archive_conflict: 1 or 0 */
    double lag_bytes;             /* tide_archive_lag_bytes */
    double sealed_generations;    /* tide_archive_sealed_generations */
    double generations;           /* tide_archive_generations (open ones too) */
    double archive_bytes;         /* tide_archive_bytes */
    double uploaded_bytes;        /* tide_archive_uploaded_bytes_total */
    double rotation_waits;        /* tide_archive_rotation_waits_total */
    double sync_waits, sync_failures; /* tide_archive_sync_waits_total, _failures_total */
    double reads_found, reads_missed, reads_failed;  /* tide_archive_reads_total{result} */
    double errors_write, errors_read, errors_manifest, errors_delete, errors_connect;
                                  /* tide_archive_errors_total{op} */
    /* From /v1/status' "archive" object (tide_doctor_analyze_status): */
    int    status_reported;       /* the status had the object */
    char   sync[16];              /* "local" or "archive"; "" not said */
    char   problem[512];          /* the node's last failure; "" none or not said */
    size_t ngens;                 /* local generations, newest first */
    struct { uint64_t id; char state[16]; double uploaded_bytes; } gens[TIDE_DOCTOR_ARCHIVE_GENS];
} tide_doctor_archive;

typedef struct tide_doctor_report {
    char   allocator[32], allocator_version[64];
    double rss, rss_anon, rss_file;           /* < 0 when absent */
    double key_map_resident;                  /* nudb.key's map pages this process has
                                                 mapped in (part of rss_file):
                                                 tide_store_key_map_bytes
                                                 {state="resident"}; < 0 when absent */
    double dat_map_resident;                  /* nudb.dat's, likewise:
                                                 tide_store_dat_map_bytes
                                                 {state="resident"}; < 0 when absent */
    /* RSS in parts that add up to it (mem/proc.h tide_mem_rss_parts):
     * tide_process_resident_memory_part_bytes{part=...}, or when the page
     * has no such family, RssAnon, the maps' resident pages and the rest
     * of RssFile; all < 0 when neither can be had. */
    double part_anonymous, part_store_maps, part_other_files;
    double live;                              /* the allocator's live bytes; < 0 when unknown */
    double allocator_free;                    /* < 0 when unknown */
    double arena_live, arena_resident;        /* the caches' arenas, summed over
                                                 cache=: tide_cache_arena_live_bytes,
                                                 tide_cache_arena_resident_bytes;
                                                 < 0 when absent (cache_arena=off,
                                                 or an older node) */
    double arena_evacuated;                   /* tide_cache_arena_evacuated_bytes_total;
                                                 < 0 absent */
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
    tide_doctor_archive archive;              /* likewise */
    /* The memory limit's families; each < 0 when the page lacks it (an older node,
     * no cgroup, no PSI). limit 0: the node runs without one. */
    double limit, counted, level, level_changes;
    double rejected_requests, rejected_writes;   /* summed over their labels */
    double queue_refused;                        /* of rejected_requests, reason="store_queue"
                                                    (a full store queue, not the memory) */
    double body_refused, body_budget;            /* tide_http_requests_refused_total{reason="body_budget"},
                                                    tide_http_body_budget_bytes */
    double peak_start, peak_sweep;
    double pressure_some10, pressure_some60;     /* ratios, the worse of the scopes */
    double cg_limit, cg_oom, cg_oom_kill, cg_max, cg_high;
    double mark_soft, mark_high;                 /* tide_overload_mark_bytes{level,edge="enter"} */
    double interval;                             /* seconds between the scrapes; 0: one */
    /* The rules' results (invariant 3 of doctor.c): findings worst first. */
    size_t nfindings, nunknown, npassed;
    tide_doctor_finding findings[TIDE_DOCTOR_RULES];
    tide_doctor_unknown unknown[TIDE_DOCTOR_RULES];
    const char *passed[TIDE_DOCTOR_RULES];
    tide_doctor_severity severity;               /* the verdict: the worst finding's */
    char   summary[300];                         /* the verdict's words */
} tide_doctor_report;

/* Read `text` (Prometheus text format): the memory's figures, the disk's
 * families, and the archive's (tide_archive_*: r->archive, present 0 when
 * the page has none), then the rules. Returns 0, or TIDE_EINVAL when it
 * is not a Tide node's page: no sample of a tide_* family (another
 * exporter's page, Prometheus' own, HTML, garbage, an empty page), or
 * neither process_resident_memory_bytes nor tide_memory_consumer_bytes.
 * tide_last_error() then begins "does not look like a tide node's
 * /metrics: " and says which of the two, to follow the page's URL. */
int tide_doctor_analyze(const char *text, tide_doctor_report *r);

/*
 * The growth rule, with two scrapes: `later` is the report of the second
 * page (from tide_doctor_analyze), `earlier` the first's, `seconds` apart.
 * A consumer whose tide_memory_consumer_bytes grew by at least
 * TIDE_DOCTOR_GROWTH_MIN_MIB and TIDE_DOCTOR_GROWTH_SHARE of what it held
 * is a finding on `later` (the largest grower; its rate in bytes per
 * second, its churn rates from tide_memory_allocations_total and
 * tide_memory_allocated_bytes_total when both pages have them, and the
 * seconds until it reaches the limit at that rate); BAD when that is
 * within TIDE_DOCTOR_GROWTH_BAD_S or the consumer is unbounded (but never
 * for store_commit, store_insert_pool or http: they rise and fall with
 * each commit and request, so they are called transient, WARN, with no
 * time to the limit). With two scrapes the overload and cgroup_events
 * rules are redone too, on the counters' increase between the pages
 * ("in the last N s"; from one page they say "since start"), and so are
 * the archive's archive_rotation_waits and archive_sync_failures. A counter
 * that went down (the node restarted between them) is said, not read.
 * Replaces the one-scrape "needs two scrapes" result and redoes the
 * verdict. Returns 0, or TIDE_EINVAL for seconds <= 0 (r unchanged). No I/O.
 */
int tide_doctor_analyze_growth(tide_doctor_report *later, const tide_doctor_report *earlier,
                               double seconds);

/*
 * The disk side, after tide_doctor_analyze filled r from the page (which
 * wipes r, disk included): `status_json` is the body of GET /v1/status, or
 * NULL when it could not be had (then `unread` says why: "HTTP 404", a
 * connection error). Reads its "online_delete" object ({"enabled",
 * "advisory_delete", "generations":[{"id","dir","bytes"}], "disk_bytes",
 * "rotations", "last_rotation_unix_us" (or "last_rotation_us"),
 * "newest_objects", "can_delete" (a count, "never" or "always"),
 * "failures", "abandoned"}) and its "archive" object ({"sync", "problem",
 * "generations":[{"id","state","uploaded_bytes"}]}, into r->archive's
 * status part; the archive's figures and findings are the page's),
 * tolerating any member missing (an older node), and makes the findings:
 * online delete off (the store grows without bound), failed and abandoned
 * rotation attempts, an advisory_delete allowance that lets nothing be
 * deleted. `now_us` (Unix microseconds) gives the last rotation's age.
 * Returns 0; a status that is not JSON is recorded in disk.status_error,
 * not an error. No I/O.
 */
int tide_doctor_analyze_status(tide_doctor_report *r, const char *status_json, const char *unread,
                               uint64_t now_us);

/* The report in words to `f`: the verdict line first ("verdict: bad:
 * ..."), the findings worst first with figures and advice, what could not
 * be told, the rules passed, then the figures' sections, the disk, and
 * the archive ("Archive: ...", only when the page has its families). */
void tide_doctor_format(const tide_doctor_report *r, FILE *f);

/* The report as one JSON object (malloc'd text the caller frees):
 * "verdict": {"severity","summary"}, "findings": [{"rule","severity",
 * "summary","detail","figures":{...},"advice"}], "unknown": [{"rule","why"}],
 * "passed": [...], then the figures, "disk" (after analyze_status) and
 * "archive" (null when the page has no archive's families; else "pool",
 * "prefix", "mode", "sync", "up", "conflict", "problem", "lag_bytes",
 * "sealed_generations", "generations", "archive_bytes", "uploaded_bytes",
 * "rotation_waits", "sync_waits", "sync_failures", "reads" {found, missed,
 * failed}, "errors" {connect, write, read, manifest, delete},
 * "local_generations" [{id, state, uploaded_bytes}] or null without the
 * status's object). Byte counts and counts are JSON
 * integers, ratios and seconds numbers, unknown figures null.
 * Returns 0 or TIDE_ENOMEM. */
int tide_doctor_json(const tide_doctor_report *r, char **out);

#endif
