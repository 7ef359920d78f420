/*
 * cmd_doctor.c: `tide doctor [URL]`, a running node's memory and disk in
 * words.
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
 * Then, for the disk side, it fetches /v1/status from the same host and
 * port (a public endpoint: no token is sent to it) and hands it to
 * tide_doctor_analyze_status. A node that does not answer it (an older
 * node, a proxy that serves only /metrics) is no error: the report says
 * the disk side is unknown, and why.
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

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json",    no_argument,       NULL, 'j' },
        { "timeout", required_argument, NULL, 't' },
        { "help",    no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int json = 0, c, rc;
    uint64_t timeout = 10;
    char url[2048], *page = NULL, *text = NULL, *status = NULL, why[300] = "";
    tide_doctor_report r;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":jt:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 't':
            if (cli_parse_u64(optarg, 1, 3600, &timeout) != 0)
                return cli_usage("doctor", "--timeout %s: expected whole seconds from 1 to 3600", optarg);
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
    rc = fetch(url, (long)timeout, &page);
    if (rc) goto out;
    if (tide_doctor_analyze(page, &r) != 0) {
        rc = cli_error("doctor", "%s %s", url, tide_last_error());
        goto out;
    }
    fetch_status(url, (long)timeout, &status, why, sizeof why);
    tide_doctor_analyze_status(&r, status, why, tide_clock_real_us());
    if (json) {
        if (tide_doctor_json(&r, &text) != 0) { rc = cli_error("doctor", "out of memory"); goto out; }
        printf("%s\n", text);
    } else {
        printf("tide doctor: %s\n", url);
        tide_doctor_format(&r, stdout);
    }
out:
    free(text);
    free(status);
    free(page);
    tide_http_global_cleanup();
    return rc;
}

/* ---- the manual and the descriptor ------------------------------------ */

static const char help_doctor[] =
"NAME\n"
"    tide doctor - explain a running node's memory and disk in a few lines\n"
"\n"
"SYNOPSIS\n"
"    tide doctor [--json] [--timeout S] [URL]\n"
"\n"
"DESCRIPTION\n"
"    Reads the node's /metrics page (URL; default http://127.0.0.1:8080,\n"
"    and a URL without a path gets /metrics) and says, the way Redis's\n"
"    MEMORY DOCTOR does:\n"
"      - RSS against what the allocator says is live;\n"
"      - what the allocator holds free: the most a trim could return;\n"
"      - the consumers of memory, largest first, each against its budget;\n"
"      - the trims: how many, how often they lowered RSS, what they returned,\n"
"        their median and p95 duration (estimated from the histogram), and\n"
"        the page faults they cost;\n"
"      - each consumer left unbounded, and the setting that would bound it.\n"
"    Figures the page lacks are reported as unknown, never as zero.\n"
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
"OPTIONS\n"
"    --json         print the same analysis as one JSON object (the disk\n"
"                   side under \"disk\": counts and bytes as integers,\n"
"                   null when unknown, and \"findings\")\n"
"    --timeout S    give up after S seconds (default 10)\n"
"\n"
"ENVIRONMENT\n"
"    TIDE_METRICS_TOKEN   sent as \"Authorization: Bearer <token>\" when set.\n"
"                         Never printed.\n"
"\n"
"EXIT STATUS\n"
"    0 the page was read and explained; 1 the node could not be reached,\n"
"    refused the token (401), or the page is not a Tide node's; 2 usage.\n"
"\n"
"EXAMPLES\n"
"    TIDE_METRICS_TOKEN=$(cat /etc/tide/metrics.token) tide doctor\n"
"    tide doctor --json http://10.0.0.5:8080 | jq .allocator_free_bytes\n"
"    tide doctor --json | jq -r '.disk.findings[]'\n";

const cli_verb cli_verb_doctor = {
    .name = "doctor", .usage = "doctor [URL]",
    .summary = "explain a running tided's memory and disk",
    .help = help_doctor, .run = run,
};
