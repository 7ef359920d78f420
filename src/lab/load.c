/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * load.c: the lab's client threads, which send the workload to the nodes.
 *
 * Client c of C sends ops c, c + C, c + 2C, ... of every ledger. Ledger L
 * starts at t0 + L x interval; a client that is behind starts it at once
 * and counts the ledger late. Each op goes to every node in turn, in the
 * repetition's order, over one keep-alive HTTP client per node, and its
 * answer is counted on that node: a PUT 201 (new), 409 (existing) or 503
 * with the error "overloaded" (shed by a node at its memory limit's high
 * level or over its body budget: the object is not stored, and later GETs
 * of it are 404s), a GET 200 (with its length checked against the op's, and
 * its time added up) or 404; anything else is an error.
 *
 * Invariants:
 *   1. Every node of a repetition gets the same ops: a client thread sends
 *      op i of ledger L to each node in turn before it moves on.
 *   2. A failed request is counted, never fatal: a dead node is what fails
 *      a run, and the main thread sees that.
 *   3. A client stops within one request of r->stop being set, and at the
 *      plan's end (ledgers, or duration).
 *
 * Never: touch another thread's HTTP client, or the series (the main
 * thread's).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/runner_impl.h"
#include "util/clock.h"
#include "util/hex.h"

/* 1 when a 503's body is tided's {"error":"overloaded",...}. */
static int overloaded(const tide_http_body *b)
{
    return b->data != NULL && strstr(b->data, "\"error\":\"overloaded\"") != NULL;
}

/* Send op to node k over h; count the answer on the node. */
static void send_op(ti_lab_node *n, tide_http_client *h, const tide_lab_op *op, const char *hex,
                    const uint8_t *value)
{
    tide_http_body b = { .keep = 1, .max = 4096 };
    char url[160];
    uint64_t t0;
    long code;

    if (h == NULL) {
        atomic_fetch_add(&n->errors, 1);
        atomic_fetch_add(op->kind == TIDE_LAB_PUT ? &n->put_errors : &n->get_errors, 1);
        return;
    }
    snprintf(url, sizeof url, "%s/v1/objects/%s", n->base, hex);
    if (op->kind == TIDE_LAB_PUT) {
        code = tide_http_client_put(h, url, value, op->len, &b);
        if (code == 201) atomic_fetch_add(&n->puts, 1), atomic_fetch_add(&n->put_bytes, op->len);
        else if (code == 409) atomic_fetch_add(&n->puts_existing, 1);
        else if (code == 503 && overloaded(&b)) atomic_fetch_add(&n->puts_shed, 1);
        else atomic_fetch_add(&n->errors, 1), atomic_fetch_add(&n->put_errors, 1);
    } else {
        b.keep = 0;
        b.max = 0;
        t0 = tide_clock_mono_ns();
        code = tide_http_client_get(h, url, &b);
        if (code == 200) {
            atomic_fetch_add(&n->get_ns, tide_clock_mono_ns() - t0);
            atomic_fetch_add(&n->gets, 1);
            if (b.len != op->len) atomic_fetch_add(&n->bad_length, 1);
        } else if (code == 404) atomic_fetch_add(&n->gets_missing, 1);
        else atomic_fetch_add(&n->errors, 1), atomic_fetch_add(&n->get_errors, 1);
    }
    free(b.data);
}

/* Client c's share of ledger L, sent to every node (invariant 1). */
static void send_ledger(ti_lab_client *c, tide_http_client **h, uint64_t L, uint8_t *buf)
{
    ti_lab_rep *r = c->rep;
    const tide_lab_plan *o = r->o;
    size_t nops = tide_lab_ledger_ops(&o->w, L);
    char hex[TIDE_LAB_KEY_SIZE * 2 + 1];
    tide_lab_op op;

    for (size_t i = c->id; i < nops && !atomic_load(&r->stop); i += o->clients) {
        tide_lab_ledger_op(&o->w, L, i, &op);
        tide_hex_encode(op.key, TIDE_LAB_KEY_SIZE, hex);
        if (op.kind == TIDE_LAB_PUT) tide_lab_value_fill(&o->w, &op, buf);
        for (size_t k = 0; k < r->nn; k++) send_op(&r->nodes[k], h[k], &op, hex, buf);
    }
}

void *ti_lab_client_main(void *arg)
{
    static const char *const headers[] = { "Expect:", "Content-Type: application/octet-stream", NULL };
    const tide_http_client_opts opts = { headers, 30000, 5000 };
    ti_lab_client *c = arg;
    ti_lab_rep *r = c->rep;
    const tide_lab_plan *o = r->o;
    tide_http_client *h[TIDE_LAB_MAX_VARIANTS] = { 0 };
    uint8_t *buf = malloc(o->w.size_max > 4096 ? o->w.size_max : 4096);   /* the largest value */

    for (size_t k = 0; k < r->nn; k++)
        if (tide_http_client_new(&h[k], &opts) != 0) h[k] = NULL;     /* its requests count as errors */
    for (uint64_t L = 0; buf && !atomic_load(&r->stop); L++) {      /* invariant 3 */
        double start = r->t0 + (double)L * o->interval;
        if (o->ledgers && L >= o->ledgers) break;
        if (o->duration > 0 && (double)L * o->interval >= o->duration) break;
        while (!atomic_load(&r->stop) && ti_lab_now() < start) ti_lab_nap(fmin(0.1, start - ti_lab_now()));
        send_ledger(c, h, L, buf);
        if (ti_lab_now() > start + o->interval) atomic_fetch_add(&r->late, 1);
        if (c->id == 0) atomic_store(&r->ledgers, L + 1);
    }
    for (size_t k = 0; k < r->nn; k++) tide_http_client_free(h[k]);
    free(buf);
    return NULL;
}
