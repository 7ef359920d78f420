/*
 * cmd_doctor.c: `tide doctor [URL]`, a running node's memory in words.
 *
 * It fetches URL (default http://127.0.0.1:8080/metrics; a URL without a
 * path gets /metrics) with libcurl, sending TIDE_METRICS_TOKEN from the
 * environment as "Authorization: Bearer", and hands the page to
 * client/doctor.c. The token is never printed, not even in errors.
 *
 * A page that is not a node's (no tide_* families: Prometheus' own
 * /metrics, HTML, an empty page, bytes that are not text) exits 1 with
 * "URL does not look like a tide node's /metrics: ...".
 *
 * Never: retry, follow redirects to another host, or wait longer than
 * --timeout (default 10 s) for a node.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "client/doctor.h"
#include "tide/error.h"

typedef struct body {
    char  *buf;
    size_t len;
    int    oom;
} body;

static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
    body *b = arg;
    size_t add = size * n;
    char *nb;

    if (b->len + add > (64u << 20)) return 0;          /* a metrics page is KiB, not 64 MiB */
    nb = realloc(b->buf, b->len + add + 1);
    if (nb == NULL) { b->oom = 1; return 0; }
    b->buf = nb;
    memcpy(b->buf + b->len, ptr, add);
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

/* Fetch url into *out. Returns CLI_OK, or prints why and returns CLI_FAIL. */
static int fetch(const char *url, long timeout_s, char **out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hdr = NULL;
    body b = { 0 };
    char auth[300], err[CURL_ERROR_SIZE] = "";
    const char *token = getenv("TIDE_METRICS_TOKEN");
    long status = 0;
    int rc = CLI_FAIL;

    if (c == NULL) { cli_error("doctor", "libcurl could not start"); goto out; }
    if (token && token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(hdr, auth);
        memset(auth, 0, sizeof auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        cli_error("doctor", "%s: %s", url, err[0] ? err : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status == 401) {
        cli_error("doctor", "%s: 401 Unauthorized: set TIDE_METRICS_TOKEN to the node's token%s", url,
                  token && token[0] ? " (the one set was refused)" : "");
        goto out;
    }
    if (status != 200) {
        cli_error("doctor", "%s: HTTP %ld", url, status);
        goto out;
    }
    if (b.buf == NULL) {
        cli_error("doctor", "%s does not look like a tide node's /metrics: an empty page", url);
        goto out;
    }
    if (strlen(b.buf) != b.len) {   /* the text format has no NUL byte */
        cli_error("doctor", "%s does not look like a tide node's /metrics: a NUL byte at offset %zu "
                  "(not text)", url, strlen(b.buf));
        goto out;
    }
    *out = b.buf;
    b.buf = NULL;
    rc = CLI_OK;
out:
    free(b.buf);
    curl_slist_free_all(hdr);
    if (c) curl_easy_cleanup(c);
    return rc;
}

int cli_cmd_doctor(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json",    no_argument,       NULL, 'j' },
        { "timeout", required_argument, NULL, 't' },
        { "help",    no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int json = 0, c, rc;
    uint64_t timeout = 10;
    char url[2048], *page = NULL, *text = NULL;
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

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = fetch(url, (long)timeout, &page);
    if (rc) goto out;
    if (tide_doctor_analyze(page, &r) != 0) {
        rc = cli_error("doctor", "%s %s", url, tide_last_error());
        goto out;
    }
    if (json) {
        if (tide_doctor_json(&r, &text) != 0) { rc = cli_error("doctor", "out of memory"); goto out; }
        printf("%s\n", text);
    } else {
        printf("tide doctor: %s\n", url);
        tide_doctor_format(&r, stdout);
    }
out:
    free(text);
    free(page);
    curl_global_cleanup();
    return rc;
}
