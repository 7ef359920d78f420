/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_objects.c: PUT, GET and HEAD of /v1/objects/{key}.
 *
 * Keys. A store's key is 1 to 65535 bytes; the key and its hex live in the
 * request's pool (a sync job carries its hex at its end), sized from the
 * store's key size, and the URL's key is length-checked before a byte of
 * it is decoded.
 *
 * The store off the loop. A PUT is checked here (key, size,
 * query, the memory level) and then becomes a store job (work.c) with
 * its own copy of the body: the store pool's worker calls tide_node_put
 * (memory, a read of the key file to refuse a duplicate, and a wait when
 * the insert pool is full behind a commit), and the loop answers when the
 * job comes back (tided_answer_store). A GET or HEAD asks the node cache
 * only (tide_node_get_cached): a hit is sent from the loop, a miss the key
 * cache remembers is 404 from the loop, anything else is a store job that
 * calls tide_node_get_miss, which never asks the caches again (a stale
 * copy from an older generation goes with the job, to be copied forward
 * there). A full store queue (for a PUT, the PUTs' share
 * of it) is 503 overloaded with Retry-After: 1 (counted in
 * overload_rejected_queue), and so is a PUT whose copy would pass
 * http_body_budget; the slot and the budget are taken before the copy is
 * made, so a refused PUT copies nothing and nothing is queued.
 *
 * Sync. PUT ?sync=1: the store worker that stored the value (or found the
 * key) hands the job on to the sync worker, and the loop answers when it
 * comes back: 201 only after tide_node_sync returned 0. A 409 with
 * ?sync=1 also waits, so it says the value under the key is durable too.
 *
 * A GET's value is written straight from the node cache: the guard holds
 * the object's reference until h2o is done with its bytes (a store job's
 * reference is handed to the guard when the job comes back).
 *
 * The memory limit. While the node's level is HIGH or above a
 * PUT is 503 overloaded with Retry-After: 1, whether the handler saw the
 * level first or the node refused it (TIDE_EOVERLOAD); GET and HEAD are
 * never refused by the level. Most PUTs at HIGH never get here: conn.c's
 * scan refuses their bodies before they are read.
 *
 * Invariants:
 *   1. No buffer holding a key is sized by a constant.
 *   2. A 201 with "durable": true is sent only after tide_node_sync
 *      returned 0 for a commit that holds the value.
 *   3. No store call that may read a file or wait is made on a loop
 *      thread: only tide_node_get_cached and tide_node_put_admit.
 *   4. A store job is complete (key, body copy, sync) before it is offered
 *      to the pool (tided_pool_submit stages it for the end of the loop's
 *      turn, or queues it): a worker may take it at once.
 *
 * Never: call tide_node_sync, tide_node_put, tide_node_get or
 * tide_node_get_miss on a loop
 * thread; copy a GET's value; hand a worker a pointer into the request.
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mem/account.h"
#include "tide/error.h"
#include "util/hex.h"
#include "util/log.h"

/* Decode `text` (len chars, not NUL-terminated: it is the URL's) as a key
 * of key_size bytes into `out` (key_size bytes), or send 400 and return
 * -1. The length is checked first, so nothing is written past `out`
 * whatever the URL holds. */
static int parse_key(tided_server *srv, h2o_req_t *req, const char *text, size_t len, uint8_t *out)
{
    size_t want = 2 * (size_t)srv->key_size;

    if (len != want) {
        tided_send_error(req, 400, "bad_key", "a key is %zu hex digits (%u bytes); this one has %zu characters",
                   want, srv->key_size, len);
        return -1;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = tide_hex_digit((unsigned char)text[i]), lo = tide_hex_digit((unsigned char)text[i + 1]);
        if (hi < 0 || lo < 0) {
            size_t at = hi < 0 ? i : i + 1;
            tided_send_error(req, 400, "bad_key", "character %zu of the key, '%s', is not a hex digit (0-9, a-f, A-F)",
                       at + 1, tided_req_text(req, text + at, 1, 1));
            return -1;
        }
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static void send_stored(h2o_req_t *req, int status, const char *key_hex, size_t len, int synced)
{
    tided_send_json(req, status, json_pack("{s:s,s:I,s:b}", "key", key_hex, "bytes", (json_int_t)len,
                                     "durable", synced));
}

static void send_exists(h2o_req_t *req, const char *key_hex, int synced)
{
    tided_send_error(req, 409, "exists", "key %s is already stored (values are written once)%s", key_hex,
               synced ? "; it is durable" : "");
}

/* The answer to a put that is not waiting for a sync: overloaded (the level
 * rose after the loop's check), a store error, 409 or 201. */
static void answer_put(tided_server *srv, h2o_req_t *req, int rc, const char *key_hex, size_t len,
                       const char *detail)
{
    if (rc == TIDE_EOVERLOAD) {
        char why[300];
        tided_overload_detail(srv, why, sizeof why);
        atomic_fetch_add(&srv->overload_rejected_write, 1);
        tided_send_store_error(req, rc, why, "the value was not stored");
    } else if (rc != 0 && rc != TIDE_EEXIST) {
        tide_log(TIDE_LOG_WARN, "PUT %s (%zu bytes): %s: %s", key_hex, len, tide_strerror(rc), detail);
        tided_send_store_error(req, rc, detail, "the value was not stored");
    } else if (rc == TIDE_EEXIST) {
        send_exists(req, key_hex, 0);
    } else {
        send_stored(req, 201, key_hex, len, 0);
    }
}

/* 503 overloaded with Retry-After: 1 for a store job not taken. */
static void refuse_job(h2o_req_t *req, enum tided_job_kind kind, const char *fmt, unsigned long long n)
{
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    tided_send_error(req, 503, "overloaded", fmt, n, kind == TIDED_JOB_PUT ? "PUT" : "read");
}

/* Take what a store job holds before anything of it is made: a queue slot
 * (the PUTs' share for a PUT), then for a PUT its copy's bytes in the body
 * budget (tided_body_reserve). 0, or -1 after answering 503 (counted in
 * overload_rejected_queue or the body budget's refusals). */
static int job_admit(tided_server *srv, h2o_req_t *req, tided_guard *guard, enum tided_job_kind kind, size_t len)
{
    int put = kind == TIDED_JOB_PUT;

    if (tided_pool_reserve(&srv->store_pool, put) != 0) {
        atomic_fetch_add(&srv->overload_rejected_queue, 1);
        refuse_job(req, kind, "%llu store jobs of this kind are waiting for a store worker (store_queue); the %s "
                   "was not run: retry", (unsigned long long)(put ? srv->store_pool.put_cap : srv->store_pool.cap));
        return -1;
    }
    if (put && tided_body_reserve(srv, guard->body, len) != 0) {
        tided_pool_cancel(&srv->store_pool, put);
        refuse_job(req, kind, "request bytes held by tided (bodies and the PUTs' copies at the store workers) "
                   "have reached http_body_budget = %llu bytes; the %s was not run: retry",
                   (unsigned long long)srv->body_budget);
        return -1;
    }
    return 0;
}

/* A store job for `req`: its key and key_hex at the end of the allocation
 * (key_size bytes and 2 * key_size + 1), a put's body copied (work.c's
 * essay: h2o may free the request's while the job is at a worker), queued
 * on the store pool. The slot and the copy's budget are taken first
 * (job_admit), so a refused job copies nothing. A GET's `stale` (its
 * reference taken, released on failure) is the node cache's copy from an
 * older generation (tide_node_get_cached), for the worker to copy forward.
 * NULL after answering: 500 when out of memory, 503 overloaded with
 * Retry-After: 1 (job_admit). */
static tided_job *store_job(tided_server *srv, h2o_req_t *req, tided_guard *guard, enum tided_job_kind kind,
                            const uint8_t *key, const char *key_hex, size_t len, int sync, tide_cache_obj *stale)
{
    size_t hex_bytes = 2 * (size_t)srv->key_size + 1;
    int put = kind == TIDED_JOB_PUT;
    tided_job *job;

    if (job_admit(srv, req, guard, kind, len)) {
        tide_cache_obj_release(stale);
        return NULL;
    }
    job = calloc(1, sizeof *job + hex_bytes + srv->key_size);
    if (job != NULL && put) {
        job->u.put.value = malloc(len);
        if (job->u.put.value == NULL) free(job), job = NULL;
    }
    if (job == NULL) {
        tided_pool_cancel(&srv->store_pool, put);
        if (put) atomic_fetch_sub(&srv->body_in_handlers, (unsigned long long)len);
        tided_send_error(req, 500, "internal", "out of memory queueing the %s of key %s", put ? "PUT" : "read",
                         key_hex);
        tide_cache_obj_release(stale);
        return NULL;
    }
    job->loop = guard->loop;
    job->req = req;
    job->guard = guard;
    job->kind = kind;
    memcpy(job->key_hex, key_hex, hex_bytes);
    memcpy((uint8_t *)job->key_hex + hex_bytes, key, srv->key_size);
    if (put) {
        job->u.put.key = (const uint8_t *)job->key_hex + hex_bytes;
        job->u.put.len = len;
        job->u.put.sync = sync;
        memcpy(job->u.put.value, req->entity.base, len);
        job->u.put.value_held = (int64_t)len;   /* its budget bytes: taken by job_admit */
        tide_mem_account_alloc(TIDE_MEM_HTTP, job->u.put.value_held);
    } else {
        job->u.get.key = (const uint8_t *)job->key_hex + hex_bytes;
        job->u.get.obj = stale;                 /* the worker copies it forward */
    }
    tided_pool_submit(&srv->store_pool, guard->loop, job);
    guard->job = job;
    return job;
}

static void put_object(tided_server *srv, h2o_req_t *req, tided_guard *guard, const uint8_t *key,
                       const char *key_hex)
{
    int sync, rc;
    size_t len = req->entity.base ? req->entity.len : 0;

    if (tided_parse_query(req, &sync)) return;
    if (len > srv->max_object_size) {
        tided_send_error(req, 413, "too_large", "the value is %zu bytes; the most is max_object_size = %zu bytes",
                   len, srv->max_object_size);
        return;
    }
    if (len == 0) {
        tided_send_error(req, 400, "empty_value", "the body is empty; a value is 1 to %zu bytes",
                   srv->max_object_size);
        return;
    }
    /* At HIGH the put is refused here, before a copy or a queue slot is
     * taken (counted in rejected_writes as the node's own refusal is). */
    rc = tide_node_put_admit(srv->node);
    if (rc) {
        answer_put(srv, req, rc, key_hex, len, tide_last_error());
        return;
    }
    if (!srv->store_pool.started) {
        tided_send_error(req, 503, "unavailable", "no store worker runs here");
        return;
    }
    /* Everything the worker reads is set before the job is offered. */
    (void)store_job(srv, req, guard, TIDED_JOB_PUT, key, key_hex, len, sync, NULL);
}

static void send_found(h2o_req_t *req, tided_guard *guard, tide_cache_obj *obj)
{
    /* The guard keeps the reference until h2o has written the bytes. */
    guard->obj = obj;
    tided_guard_account(guard, tide_cache_obj_len(obj));
    tided_send_body(req, 200, "application/octet-stream", tide_cache_obj_data(obj), tide_cache_obj_len(obj));
}

static void answer_get(h2o_req_t *req, int rc, const char *key_hex, const char *detail)
{
    if (rc == TIDE_ENOTFOUND) {
        tided_send_error(req, 404, "not_found", "no value is stored under key %s", key_hex);
        return;
    }
    if (rc == TIDE_EUNAVAIL) {          /* in no local generation, and the archive is away */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("5"));
        tided_send_error(req, 503, "archive_unavailable", "key %s is in no local generation and the archive "
                         "does not answer: %s", key_hex, detail);
        return;
    }
    tide_log(TIDE_LOG_WARN, "GET %s: %s: %s", key_hex, tide_strerror(rc), detail);
    tided_send_error(req, 500, "internal", "reading key %s: %s: %s", key_hex, tide_strerror(rc), detail);
}

/* A hit (or a remembered miss) is answered here on the loop; anything
 * else is a store job. */
static void get_object(tided_server *srv, h2o_req_t *req, tided_guard *guard, const uint8_t *key,
                       const char *key_hex)
{
    tide_cache_obj *obj = NULL;
    int sync, rc;

    if (tided_parse_query(req, &sync)) return;
    rc = tide_node_get_cached(srv->node, key, &obj);
    if (rc == 0) {
        send_found(req, guard, obj);
        return;
    }
    if (rc == TIDE_ENOTFOUND) {
        answer_get(req, rc, key_hex, "");
        return;
    }
    if (!srv->store_pool.started) {
        tide_cache_obj_release(obj);
        tided_send_error(req, 503, "unavailable", "no store worker runs here");
        return;
    }
    /* A stale copy goes with the job: the worker copies it forward
     * without asking the caches again (tide_node_get_miss). */
    (void)store_job(srv, req, guard, TIDED_JOB_GET, key, key_hex, 0, 0, obj);
}

/* The key and its hex live in the request's pool, sized by the store's
 * key size (1 to 65535 bytes), never on the stack. */
void tided_api_objects(tided_server *srv, h2o_req_t *req, tided_guard *guard, const char *rest, size_t rest_len)
{
    uint8_t *key;
    char *key_hex;
    int put = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PUT"));
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || tided_is_head(req);

    if (!put && !get) {
        tided_send_not_allowed(req, "GET, HEAD, PUT");
        return;
    }
    key = h2o_mem_alloc_pool(&req->pool, srv->key_size);
    key_hex = h2o_mem_alloc_pool(&req->pool, 2 * (size_t)srv->key_size + 1);
    if (parse_key(srv, req, rest, rest_len, key)) return;
    tide_hex_encode(key, srv->key_size, key_hex);
    if (put) put_object(srv, req, guard, key, key_hex);
    else get_object(srv, req, guard, key, key_hex);
}

/* A PUT ?sync=1 whose put stored or found the key, once the sync
 * worker's commit came back (job->rc is the sync's). */
static void answer_put_synced(tided_job *job)
{
    h2o_req_t *req = job->req;

    if (job->rc != 0) {
        tided_send_store_error(req, job->rc, job->detail, job->rc == TIDE_EUNAVAIL
                               ? (job->u.put.put_rc == 0 ? "the value is stored and durable on this node, "
                                  "but not yet in the archive (archive_sync=archive)"
                                  : "the key exists and is durable on this node, but not yet in the archive")
                               : job->u.put.put_rc == 0
                               ? "the value is stored but the commit that makes it durable failed"
                               : "the key exists but the commit that makes it durable failed");
        return;
    }
    if (job->u.put.put_rc == TIDE_EEXIST) send_exists(req, job->key_hex, 1);
    else send_stored(req, 201, job->key_hex, job->u.put.len, 1);
}

/* A GET miss or a PUT, once its worker came back: the store worker, or
 * for a PUT ?sync=1 that stored or found the key, the sync worker after
 * it. */
void tided_answer_store(tided_job *job)
{
    tided_server *srv = job->loop->srv;

    if (job->kind == TIDED_JOB_PUT) {
        if (job->u.put.sync && (job->u.put.put_rc == 0 || job->u.put.put_rc == TIDE_EEXIST))
            answer_put_synced(job);
        else
            answer_put(srv, job->req, job->u.put.put_rc, job->key_hex, job->u.put.len, job->detail);
    } else if (job->rc == 0) {
        send_found(job->req, job->guard, job->u.get.obj);
        job->u.get.obj = NULL;                  /* the guard holds it now */
    } else {
        answer_get(job->req, job->rc, job->key_hex, job->detail);
    }
}
