/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c: the libcurl wrapper of http.h.
 *
 * A client is an easy handle set up once (no signals, TCP_NODELAY, the
 * timeouts, the header list) plus a libcurl error buffer; a request sets
 * the URL, the method and the body sink, performs, and reads the status.
 * libcurl keeps the connection of an easy handle open between transfers,
 * which is the keep-alive the lab's clients rely on.
 *
 * Invariants:
 *   1. curl_global_init runs once before the first client and
 *      curl_global_cleanup once after the last global cleanup, under one
 *      mutex (libcurl's own are not thread-safe before 7.84).
 *   2. A kept body is NUL-terminated after every chunk, so a caller may
 *      treat it as text; its len never counts the NUL.
 *   3. A client's error text is "" after a request that got a response.
 *
 * Never: follow redirects, retry, or raise a signal (CURLOPT_NOSIGNAL: the
 * callers are multi-threaded and handle SIGINT themselves).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/http.h"
#include "tide/error.h"
#include "util/err.h"

struct tide_http_client {
    CURL              *h;
    struct curl_slist *headers;
    char               err[CURL_ERROR_SIZE];
};

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned global_users;

int tide_http_global_init(void)
{
    int rc = 0;

    pthread_mutex_lock(&global_lock);
    if (global_users == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        rc = tide_err_set(TIDE_EIO, "curl_global_init failed");
    else
        global_users++;
    pthread_mutex_unlock(&global_lock);
    return rc;
}

void tide_http_global_cleanup(void)
{
    pthread_mutex_lock(&global_lock);
    if (global_users > 0 && --global_users == 0) curl_global_cleanup();
    pthread_mutex_unlock(&global_lock);
}

/* libcurl's write callback: count, or keep (invariant 2). Returning less
 * than given fails the transfer (CURLE_WRITE_ERROR). */
static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    tide_http_body *b = arg;
    size_t n = size * nmemb;

    if (b == NULL) return n;
    if (b->max && b->len + n > b->max) return 0;
    if (b->keep) {
        if (b->len + n + 1 > b->cap) {
            size_t cap = (b->len + n + 1) * 2;
            char *d = realloc(b->data, cap);
            if (d == NULL) return 0;
            b->data = d;
            b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->data[b->len + n] = '\0';
    }
    b->len += n;
    return n;
}

int tide_http_client_new(tide_http_client **out, const tide_http_client_opts *opts)
{
    tide_http_client *c = calloc(1, sizeof *c);
    int rc = 0;

    if (c == NULL || (c->h = curl_easy_init()) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "curl_easy_init failed");
        goto out;
    }
    for (size_t i = 0; opts && opts->headers && opts->headers[i]; i++) {
        struct curl_slist *l = curl_slist_append(c->headers, opts->headers[i]);
        if (l == NULL) { rc = tide_err_set(TIDE_ENOMEM, "out of memory for a header"); goto out; }
        c->headers = l;
    }
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    if (opts && opts->timeout_ms) curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, opts->timeout_ms);
    if (opts && opts->connect_timeout_ms)
        curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, opts->connect_timeout_ms);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->err);
    if (c->headers) curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
    *out = c;
    c = NULL;
out:
    tide_http_client_free(c);
    return rc;
}

void tide_http_client_free(tide_http_client *c)
{
    if (c == NULL) return;
    if (c->h) curl_easy_cleanup(c->h);
    curl_slist_free_all(c->headers);
    free(c);
}

/* Perform the request set up so far; the status or 0 (invariant 3). */
static long perform(tide_http_client *c, const char *url, tide_http_body *b)
{
    long code = 0;
    CURLcode cc;

    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, b);
    c->err[0] = '\0';
    cc = curl_easy_perform(c->h);
    if (cc != CURLE_OK) {
        if (c->err[0] == '\0') snprintf(c->err, sizeof c->err, "%s", curl_easy_strerror(cc));
        return 0;
    }
    c->err[0] = '\0';
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

long tide_http_client_get(tide_http_client *c, const char *url, tide_http_body *b)
{
    curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, NULL);
    return perform(c, url, b);
}

long tide_http_client_put(tide_http_client *c, const char *url, const void *data, size_t len,
                          tide_http_body *b)
{
    curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)len);
    return perform(c, url, b);
}

const char *tide_http_client_error(const tide_http_client *c)
{
    return c->err;
}
