/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_doctor.c: `tide doctor [--interval S] [URL]`, a running node's memory,
 * disk and archive judged: a verdict, the findings with their advice, the
 * figures.
 *
 * It fetches URL (default http://127.0.0.1:8080/metrics; a URL without a
 * path gets /metrics) with the HTTP client (src/client/http.h), sending
 * TIDE_METRICS_TOKEN from the environment as "Authorization: Bearer", and
 * hands the page to client/doctor.c. The token is never printed, not even in
 * errors.
 *
 * A page that is not a node's (no tide_* families: Prometheus' own
 * /metrics, HTML, an empty page, bytes that are not text) exits 1 with
 * "URL does not look like a tide node's /metrics: ...".
 *
 * With --interval S it scrapes twice, S seconds apart, and gives both
 * reports to tide_doctor_analyze_growth with the seconds that passed
 * (measured, not assumed): the report printed is the second page's.
 *
 * Then, for the disk side and the archive's state, it fetches /v1/status
 * from the same host and port (a public endpoint: no token is sent to it)
 * and hands it to tide_doctor_analyze_status. A node that does not answer
 * it (an older node, a proxy that serves only /metrics) is no error: the
 * report says the disk side is unknown, and why.
 *
 * Invariants:
 *   1. The exit status is CLI_OK only when the page was fetched and read
 *      as a node's (or for --help); then stdout holds the report: the
 *      text, or with --json one JSON document.
 *   2. The HTTP client's global state is set up once and cleaned up on
 *      every path of the run.
 *
 * Never: retry, follow redirects to another host, or wait longer than
 * --timeout (default 10 s) for a node.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "client/http.h"
#include "client/doctor.h"
#include "tide/error.h"
#include "util/clock.h"

/* Fetch url into *out. Returns CLI_OK, or prints why and returns CLI_FAIL. */
static int fetch(const char *url, long timeout_s, char **out)
{
    tide_http_client *c = NULL;
    tide_http_body b = { .keep = 1, .max = 64u << 20 };   /* a metrics page is KiB, not 64 MiB */
    char auth[300];
    const char *token = getenv("TIDE_METRICS_TOKEN");
    const char *headers[2] = { NULL, NULL };
    tide_http_client_opts opts = { .headers = headers, .timeout_ms = timeout_s * 1000 };
    long status;
    int rc = CLI_FAIL;

    if (token && token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        headers[0] = auth;
    }
    if (tide_http_client_new(&c, &opts) != 0) { cli_error("doctor", "libcurl could not start"); goto out; }
    memset(auth, 0, sizeof auth);           /* the client holds its own copy */
    status = tide_http_client_get(c, url, &b);
    if (status == 0) {
        cli_error("doctor", "%s: %s", url, tide_http_client_error(c));
        goto out;
    }
    if (status == 401) {
        cli_error("doctor", "%s: 401 Unauthorized: set TIDE_METRICS_TOKEN to the node's token%s", url,
                  token && token[0] ? " (the one set was refused)" : "");
        goto out;
    }
    if (status != 200) {
        cli_error("doctor", "%s: HTTP %ld", url, status);
        goto out;
    }
    if (b.data == NULL) {
        cli_error("doctor", "%s does not look like a tide node's /metrics: an empty page", url);
        goto out;
    }
    if (strlen(b.data) != b.len) {   /* the text format has no NUL byte */
        cli_error("doctor", "%s does not look like a tide node's /metrics: a NUL byte at offset %zu "
                  "(not text)", url, strlen(b.data));
        goto out;
    }
    *out = b.data;
    b.data = NULL;
    rc = CLI_OK;
out:
    memset(auth, 0, sizeof auth);
    free(b.data);
    tide_http_client_free(c);
    return rc;
}

/* GET /v1/status of the host and port of metrics_url, without a token.
 * *out the body, or NULL with `why` saying why not. Never an error. */
static void fetch_status(const char *metrics_url, long timeout_s, char **out, char *why, size_t cap)
{
    tide_http_client *c = NULL;
    tide_http_body b = { .keep = 1, .max = 16u << 20 };
    tide_http_client_opts opts = { .timeout_ms = timeout_s * 1000 };
    const char *host = strstr(metrics_url, "://");
    char url[2100];
    long status;

    *out = NULL;
    host = host ? host + 3 : metrics_url;
    snprintf(url, sizeof url, "%.*s/v1/status", (int)(host - metrics_url + strcspn(host, "/?#")),
             metrics_url);
    if (tide_http_client_new(&c, &opts) != 0) {
        snprintf(why, cap, "libcurl could not start");
        return;
    }
    status = tide_http_client_get(c, url, &b);
    if (status == 0) snprintf(why, cap, "%.200s: %.90s", url, tide_http_client_error(c));
    else if (status != 200) snprintf(why, cap, "%.200s: HTTP %ld", url, status);
    else if (b.data == NULL) snprintf(why, cap, "%.200s: an empty answer", url);
    else *out = b.data, b.data = NULL;
    free(b.data);
    tide_http_client_free(c);
}

/* Fetch url and analyze it into *r; CLI_OK, or CLI_FAIL said. */
static int scrape(const char *url, long timeout_s, tide_doctor_report *r)
{
    char *page = NULL;
    int rc = fetch(url, timeout_s, &page);

    if (rc == CLI_OK && tide_doctor_analyze(page, r) != 0) rc = cli_error("doctor", "%s %s", url, tide_last_error());
    free(page);
    return rc;
}

/* The second scrape, `seconds` after the first, for the growth rule. */
static int scrape_again(const char *url, long timeout_s, uint64_t seconds, tide_doctor_report *r)
{
    tide_doctor_report *first = malloc(sizeof *first);
    int rc = CLI_FAIL;

    if (first == NULL) return cli_error("doctor", "out of memory");
    *first = *r;
    uint64_t start = tide_clock_mono_us();
    tide_clock_sleep_us(seconds * 1000000u);
    rc = scrape(url, timeout_s, r);
    /* The seconds that passed, not those asked: the first fetch's end to the second's. */
    if (rc == CLI_OK) tide_doctor_analyze_growth(r, first, (double)(tide_clock_mono_us() - start) / 1e6);
    free(first);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json",    no_argument,       NULL, 'j' },
        { "timeout", required_argument, NULL, 't' },
        { "interval", required_argument, NULL, 'i' },
        { "help",    no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int json = 0, c, rc;
    uint64_t timeout = 10, interval = 0;
    char url[2048], *text = NULL, *status = NULL, why[300] = "";
    tide_doctor_report r;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":jt:i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 't':
            if (cli_parse_u64(optarg, 1, 3600, &timeout) != 0)
                return cli_usage("doctor", "--timeout %s: expected whole seconds from 1 to 3600", optarg);
            break;
        case 'i':
            if (cli_parse_u64(optarg, 0, 3600, &interval) != 0)
                return cli_usage("doctor", "--interval %s: expected whole seconds from 0 to 3600", optarg);
            break;
        case 'h': cli_help("doctor", stdout); return CLI_OK;
        default: return cli_option_error("doctor", c, argv);
        }
    }
    if (argc - optind > 1) return cli_usage("doctor", "expected at most one URL, got %d arguments", argc - optind);
    const char *arg = optind < argc ? argv[optind] : "http://127.0.0.1:8080";
    const char *scheme = strstr(arg, "://");
    const char *path = strchr(scheme ? scheme + 3 : arg, '/');
    snprintf(url, sizeof url, "%s%s%s", scheme ? "" : "http://", arg, path ? "" : "/metrics");

    (void)tide_http_global_init();     /* a failure shows as the client's */
    rc = scrape(url, (long)timeout, &r);
    if (rc == CLI_OK && interval > 0) rc = scrape_again(url, (long)timeout, interval, &r);
    if (rc) goto out;
    fetch_status(url, (long)timeout, &status, why, sizeof why);
    tide_doctor_analyze_status(&r, status, why, tide_clock_real_us());
    if (json) {
        if (tide_doctor_json(&r, &text) != 0) { rc = cli_error("doctor", "out of memory"); goto out; }
        printf("%s\n", text);
    } else {
        tide_doctor_format(&r, stdout);    /* the verdict first */
        if (interval > 0) printf("Scraped %s twice, %.1f s apart.\n", url, r.interval);
        else printf("Scraped %s once.\n", url);
    }
out:
    free(text);
    free(status);
    tide_http_global_cleanup();
    return rc;
}

/* ---- the manual and the descriptor ------------------------------------ */

static const char help_doctor[] =
"NAME\n"
"    tide doctor - a running node's memory, disk and archive: a verdict,\n"
"    findings with advice, and the figures behind them\n"
"\n"
"SYNOPSIS\n"
"    tide doctor [--json] [--interval S] [--timeout S] [URL]\n"
"\n"
"DESCRIPTION\n"
"    Reads the node's /metrics page (URL; default http://127.0.0.1:8080,\n"
"    and a URL without a path gets /metrics) and judges it by the rules\n"
"    below, as Redis's MEMORY DOCTOR does. The first line is the verdict:\n"
"\n"
"      verdict: bad: memory at 93% of its 512 MiB limit (high level: writes\n"
"      refused); 2 more findings\n"
"\n"
"    its severity (ok, warn or bad) that of the worst finding. Then each\n"
"    finding, worst first: its severity and rule, what it saw, the figures\n"
"    it read, and the advice that fixes it (the settings by their flags).\n"
"    A rule whose figures the page lacks (a node from before the memory\n"
"    limit, no cgroup, a kernel without PSI) says what it cannot tell and\n"
"    is no finding; the rules that passed are listed by name.\n"
"\n"
"    Then the figures behind them: RSS in one line, the parts that add up\n"
"    to what ps and top show (the process's anonymous memory, counted\n"
"    against the limit; the pages of nudb.dat and nudb.key mapped\n"
"    read-only, page cache the kernel reclaims, not counted; code and\n"
"    libraries; \"rss_parts\" in --json); RSS against what the allocator\n"
"    says is live; what the allocator holds free; the consumers, largest\n"
"    first, each against its budget; the trims (how many, how often they\n"
"    lowered RSS, what they returned, median and p95 duration from the\n"
"    histogram, the page faults they cost); each consumer left unbounded\n"
"    and the setting that bounds it. Figures the page lacks are unknown,\n"
"    never 0.\n"
"\n"
"RULES\n"
"    limit\n"
"        tide_memory_counted_bytes / tide_memory_limit_bytes, and\n"
"        tide_overload_level. bad from the high level's enter mark\n"
"        (tide_overload_mark_bytes{level=\"high\",edge=\"enter\"}) or the\n"
"        high level (writes refused); warn from the soft enter mark or the\n"
"        soft level. A page without the marks (an older node): bad from\n"
"        0.90 of the limit, warn from 0.75. No limit\n"
"        (tide_memory_limit_bytes 0, or absent: an older node): warn,\n"
"        'unbounded process'. Advice: --memory-limit SIZE (or a cgroup\n"
"        limit, taken when none is set); or lower --cache-budget,\n"
"        --key-cache-size, --insert-burst, --http-body-budget,\n"
"        --store-index-lag; --memory-levels and --memory-hysteresis\n"
"        set the marks.\n"
"    cgroup_events\n"
"        tide_cgroup_memory_events_total{event}, counted since the cgroup\n"
"        was made. One scrape: bad when oom_kill > 0; warn when oom or max\n"
"        > 0. With --interval: their increase; bad when oom or oom_kill\n"
"        rose, warn when max rose (or an old oom_kill). Advice: leave\n"
"        --memory-limit to the cgroup's (or set it below); raise\n"
"        memory.max.\n"
"    pressure\n"
"        tide_memory_pressure_ratio{kind=\"some\"}, the worse of system and\n"
"        cgroup. bad from avg60 0.20; warn from avg10 0.10. Advice: more\n"
"        memory for the cgroup, --memory-limit below it, --memory-pressure.\n"
"    overload\n"
"        tide_overload_rejected_requests_total,\n"
"        tide_overload_rejected_writes_total,\n"
"        tide_overload_level_changes_total, and the requests refused at\n"
"        http_body_budget (tide_http_requests_refused_total{reason=\n"
"        \"body_budget\"}). One scrape reads them since start (\"since\n"
"        start\" in the finding); with --interval their increase between\n"
"        the scrapes (\"in the last N s\"). warn from one refused request,\n"
"        or from 20 level changes; never bad. Advice: the 503s carry\n"
"        Retry-After: 1; more --memory-limit or less held;\n"
"        --http-body-budget for bodies; a level that comes and goes (the\n"
"        soft level halving the caches, the caches refilling): lower\n"
"        --cache-budget or leave it derived, or raise --memory-limit;\n"
"        only then a wider --memory-hysteresis. Refusals for a full store\n"
"        queue (reason=\"store_queue\") are not the memory's: alone, their\n"
"        advice is more --store-workers or --store-queue, or less load.\n"
"    growth\n"
"        tide_memory_consumer_bytes on two pages --interval S apart, and\n"
"        the churn counters tide_memory_allocations_total and\n"
"        tide_memory_allocated_bytes_total when present. warn when a\n"
"        consumer grew by 1 MiB and 0.10 of its bytes; bad when it is\n"
"        unbounded or at that rate reaches the limit within 3600 s, except\n"
"        store_commit, store_insert_pool and http: they rise and fall with\n"
"        each commit and request, so they are called transient, warn, and\n"
"        no time to the limit is projected. With one scrape it says it\n"
"        needs two.\n"
"        Advice: bound the consumer (its setting), or more --memory-limit.\n"
"    rss_vs_live\n"
"        (process_resident_memory_bytes less tide_process_rss_file_bytes,\n"
"        when the page has it: file-backed pages, the binary, libraries and\n"
"        nudb.key's read-only map, are not the allocator's) / the\n"
"        allocator's live bytes. bad\n"
"        from 3.0 times; warn from 1.5 times; not judged below 64 MiB of\n"
"        anonymous RSS (RSS less file-backed; RSS when the page does not\n"
"        say RssFile), or 0.25 of the limit when that is less (code and\n"
"        libraries dominate a small process). Advice: a sweep's trim (POST\n"
"        /v1/admin/sweep), --sweep-interval, --trim-policy; glibc\n"
"        --arena-max 2, --mmap-threshold; jemalloc MALLOC_CONF decay.\n"
"    allocator_free\n"
"        tide_allocator_free_bytes / (process_resident_memory_bytes less\n"
"        tide_process_rss_file_bytes, when the page has it: free heap is\n"
"        anonymous memory, and nudb.key's map can fill RssFile). bad from\n"
"        0.50; warn from 0.25; not judged below 64 MiB of anonymous RSS\n"
"        (RSS less file-backed), or 0.25 of the limit when less.\n"
"        Advice: as rss_vs_live.\n"
"    arena\n"
"        tide_cache_arena_resident_bytes / tide_cache_arena_live_bytes, summed\n"
"        over the caches' arenas (cache_arena=on), which after each sweep hold at\n"
"        most 1.11 times its live bytes plus two segments and its reserve.\n"
"        bad from 3.0 times (or resident with nothing live); warn from 1.5\n"
"        times; not judged below 64 MiB resident, or with resident at most\n"
"        8 MiB above live. Advice: raise --cache-arena-evacuate or shorten\n"
"        --sweep-interval; a client slow to read its responses holds moved\n"
"        objects, and their segments, until it is done.\n"
"    peak\n"
"        tide_memory_peak_bytes{since=\"start\"} / counted bytes now (and\n"
"        since=\"sweep\": whether the last sweep's trim gave the spike\n"
"        back). warn when the peak is 2.0 times now or more, or 0.90 of\n"
"        the limit. Advice: size --memory-limit for the peak;\n"
"        --http-body-budget, --insert-burst.\n"
"    unbounded_consumers\n"
"        tide_unbounded_consumer{consumer,setting}. warn for any. Advice:\n"
"        the setting each names.\n"
"\n"
"    The archive's rules judge a node with archive=rados only: a page\n"
"    without a tide_archive_* family (archive=off, or a node from before\n"
"    the archive) gives none of them a result, and the report says\n"
"    nothing of an archive.\n"
"    archive_conflict\n"
"        tide_archive_conflict. bad when 1: another node changed the\n"
"        prefix's manifest (two primaries on one archive_prefix), or the\n"
"        prefix holds another store's generation under an id of this\n"
"        node's (a data directory made anew under an old prefix). The node\n"
"        has stopped uploading until it restarts. Advice: its own\n"
"        --archive-prefix for each primary, then a restart;\n"
"        --archive-mode replica for a node meant to serve another's\n"
"        archive; tide archive restore for a directory that belongs to the\n"
"        prefix.\n"
"    archive_up\n"
"        tide_archive_up, with tide_archive_errors_total{op} and the failed\n"
"        reads of tide_archive_reads_total. bad when 0: the cluster does\n"
"        not answer. Writes go on locally and the lag grows; a rotation\n"
"        that would drop a generation the archive has not sealed waits, so\n"
"        the disk grows; reads of objects only the archive holds (every\n"
"        uncached read of a replica), and PUT ?sync=1 under\n"
"        archive_sync=archive, answer 503 archive_unavailable with\n"
"        Retry-After. Advice: the cluster (ceph -s), --archive-conf,\n"
"        --archive-pool, --archive-user, the network; the node reconnects\n"
"        and catches up by itself.\n"
"    archive_lag\n"
"        tide_archive_lag_bytes: durable bytes not yet in RADOS. warn from\n"
"        256 MiB. Advice: --archive-inflight, a faster pool, fewer writes;\n"
"        archive_sync=archive to acknowledge only what RADOS holds.\n"
"    archive_rotation_waits\n"
"        tide_archive_rotation_waits_total: rotation health looks that\n"
"        found a generation to drop not yet sealed. warn from one (with\n"
"        --interval, one between the scrapes). Advice: what holds the\n"
"        seals back (archive_up, archive_lag); GET /v1/rotations.\n"
"    archive_sync_failures\n"
"        tide_archive_sync_failures_total of\n"
"        tide_archive_sync_waits_total: syncs under archive_sync=archive\n"
"        that RADOS did not take within archive_timeout (503). warn from\n"
"        one (with --interval, one between the scrapes). Advice:\n"
"        --archive-timeout, --archive-inflight, or archive_sync=local.\n"
"\n"
"    Then the disk side, from GET /v1/status on the same host (no token\n"
"    is sent to it) and the page's tide_disk_bytes, tide_generations,\n"
"    tide_rotations_total, tide_rotation_failures_total and\n"
"    tide_rotations_abandoned_total:\n"
"      - the disk bytes now, and with online delete each generation's,\n"
"        newest first, and how long ago the last rotation was;\n"
"      - findings, each with what to do: online delete off ('the store\n"
"        grows without bound'), rotation attempts that failed or were\n"
"        abandoned (GET /v1/rotations has each one's reason), and\n"
"        advisory_delete on with a can_delete under which nothing will\n"
"        be deleted (POST /v1/admin/can_delete?value=now allows the next).\n"
"    A node that does not answer /v1/status, or gives no online_delete\n"
"    object there (a node from before online delete), is no error: the\n"
"    report says what it could not learn.\n"
"\n"
"    Last, with an archive (the page's tide_archive_* families), the\n"
"    archive: its pool, prefix and mode, whether the cluster answers, a\n"
"    conflict, the lag, the generations sealed and listed, the reads that\n"
"    asked it, the failed calls to RADOS by operation, the rotations and\n"
"    syncs that waited for it; and from /v1/status' archive object,\n"
"    archive_sync, each local generation's state there (sealed,\n"
"    uploading with the bytes there, waiting, absent) and the node's last\n"
"    failure in its own words.\n"
"\n"
"OPTIONS\n"
"    --json         print the same as one JSON object: \"verdict\"\n"
"                   {\"severity\",\"summary\"}, \"findings\" [{\"rule\",\n"
"                   \"severity\",\"summary\",\"detail\",\"figures\",\"advice\"}],\n"
"                   \"unknown\", \"passed\", \"memory_limit\", then the figures,\n"
"                   the disk side under \"disk\" and the archive under\n"
"                   \"archive\" (null without one). Bytes and counts are\n"
"                   integers, ratios and seconds numbers, unknowns null.\n"
"    --interval S   scrape twice, S seconds apart (0 to 3600; default 0:\n"
"                   once), for the growth rule; the report is the second\n"
"                   page's, with the seconds that really passed\n"
"    --timeout S    give up on a fetch after S seconds (default 10)\n"
"\n"
"ENVIRONMENT\n"
"    TIDE_METRICS_TOKEN   sent as \"Authorization: Bearer <token>\" when set.\n"
"                         Never printed.\n"
"\n"
"EXIT STATUS\n"
"    0 the page was read and judged, whatever the verdict; 1 the node\n"
"    could not be reached, refused the token (401), or the page is not a\n"
"    Tide node's; 2 usage.\n"
"\n"
"EXAMPLES\n"
"    TIDE_METRICS_TOKEN=$(cat /etc/tide/metrics.token) tide doctor\n"
"    tide doctor --interval 30 http://10.0.0.5:8080\n"
"    tide doctor --json | jq -r '.verdict.severity'\n"
"    tide doctor --json | jq -r '.findings[] | \"\\(.rule): \\(.advice)\"'\n"
"    tide doctor --json | jq -r '.disk.findings[]'\n"
"    tide doctor --json | jq '.archive.lag_bytes'\n";

const cli_verb cli_verb_doctor = {
    .name = "doctor", .usage = "doctor [--interval S] [URL]",
    .summary = "a running tided's memory, disk and archive: verdict, findings, advice",
    .help = help_doctor, .run = run,
};
