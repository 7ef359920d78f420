/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.h: a small HTTP/1.1 client on libcurl, for the programs that talk to
 * a running tided (tide lab's load and pollers, tide doctor's fetch).
 *
 * A tide_http_client is one libcurl easy handle with its settings: the
 * headers every request sends, the timeouts, TCP_NODELAY and no signals. It
 * keeps its connection alive between requests to the same host, so a
 * client thread that sends thousands of requests to one node opens one
 * connection. A request is a GET or a PUT of a buffer; the response's body
 * goes into a tide_http_body the caller owns (kept, or only counted).
 *
 * Lifetime: tide_http_global_init() before the first client of the
 * process, tide_http_global_cleanup() after the last one is freed (the
 * calls nest: libcurl is set up by the first and torn down by the last).
 *
 * Errors: a request returns the HTTP status, or 0 when no response came
 * (refused, timed out, the body sink failed); tide_http_client_error() then
 * names why, in libcurl's words.
 *
 * Thread safety: a client belongs to one thread at a time; any number of
 * clients may run in parallel threads. The global pair is serialised here.
 */
#ifndef TIDE_CLIENT_HTTP_H
#define TIDE_CLIENT_HTTP_H

#include <stddef.h>

typedef struct tide_http_client tide_http_client;

typedef struct tide_http_client_opts {
    const char *const *headers;  /* "Name: value" lines sent with every
                                    request, NULL-terminated; may be NULL.
                                    Copied: the caller may wipe its own. */
    long timeout_ms;             /* the whole request; 0: libcurl's default (none) */
    long connect_timeout_ms;     /* the connection; 0: libcurl's default (300 s) */
} tide_http_client_opts;

/* A response body. keep = 0 only counts the bytes (len); keep = 1 stores
 * them in data (NUL-terminated, realloc'd, the caller frees it; NULL when
 * the body was empty). max > 0 makes a body longer than max bytes fail the
 * request (status 0) instead of growing without bound. Zero it before the
 * request, then set keep and max. */
typedef struct tide_http_body {
    char  *data;
    size_t len, cap;
    size_t max;
    int    keep;
} tide_http_body;

/* Set libcurl up for this process (nested calls count). 0, or TIDE_EIO
 * when curl_global_init fails (the reason in tide_last_error()). Call it
 * before starting threads that make clients. */
int tide_http_global_init(void);

/* Undo one tide_http_global_init(); the last one tears libcurl down. */
void tide_http_global_cleanup(void);

/* A new client with `opts` (NULL: no headers, libcurl's timeouts). 0 or
 * TIDE_ENOMEM (no easy handle or header list). Cost: one allocation and
 * one curl_easy_init; no connection yet. */
int tide_http_client_new(tide_http_client **out, const tide_http_client_opts *opts);

/* Close the connection and free the client; NULL is ignored. */
void tide_http_client_free(tide_http_client *c);

/* GET url into b (NULL: the body is dropped). The HTTP status, or 0 when
 * no response came. Cost: one request, reusing the kept connection when
 * the host is the same. */
long tide_http_client_get(tide_http_client *c, const char *url, tide_http_body *b);

/* PUT the len bytes at data to url; the response's body into b (NULL:
 * dropped). The HTTP status, or 0 when no response came. */
long tide_http_client_put(tide_http_client *c, const char *url, const void *data, size_t len,
                          tide_http_body *b);

/* Why the client's last request got no response ("Couldn't connect to
 * server", "Timeout was reached: ..."); "" after a request that got one.
 * Valid until the client's next request. */
const char *tide_http_client_error(const tide_http_client *c);

#endif
