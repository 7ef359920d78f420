/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * runner_impl.h: what the runner's modules (node.c, load.c, sampler.c,
 * runner.c) share inside the lab part. Not for other parts: runner.h is
 * the interface.
 *
 * A repetition (ti_lab_rep) holds its nodes in the repetition's shuffled
 * order; each node (ti_lab_node) is one tided child with its port, paths,
 * its series and the counters the client threads add to.
 */
#ifndef TIDE_LAB_RUNNER_IMPL_H
#define TIDE_LAB_RUNNER_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "client/http.h"
#include "lab/lab_impl.h"
#include "lab/runner.h"

typedef struct ti_lab_node {
    const tide_lab_variant *v;
    tide_lab_series   *series;
    int    port;
    pid_t  pid;                 /* > 0 while running and not yet reaped */
    int    status;              /* wait status once reaped */
    char   dir[PATH_MAX], log[PATH_MAX], base[64];
    tide_http_client *poll;     /* the main thread's: /healthz, /v1/sweeps */
    _Atomic uint64_t puts, puts_existing, gets, gets_missing, errors, bad_length;
    _Atomic uint64_t put_bytes;    /* value bytes of the 201s */
    _Atomic uint64_t puts_shed, put_errors, get_errors; /* 503 overloaded; other answers */
    _Atomic uint64_t get_ns;       /* time of the GETs answered 200 */
} ti_lab_node;

typedef struct ti_lab_rep {
    const tide_lab_plan *o;
    const char    *tided;
    ti_lab_node   *nodes;       /* in the repetition's order */
    size_t         nn;
    double         t0;          /* monotonic start of the workload, s */
    uint64_t       t0_unix_us;
    atomic_int     stop;
    atomic_ullong  late, ledgers;
} ti_lab_rep;

/* "tide lab: <message>\n" on f (NULL: nothing). */
void ti_lab_say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Seconds on the monotonic clock. */
double ti_lab_now(void);

/* Sleep s seconds, cut short by a signal (the caller re-checks
 * runner.c's signal flag: invariant 3 of runner.c). */
void ti_lab_nap(double s);

/* The heartbeat lines due at `elapsed` seconds of the workload after
 * `done` of them (runner.c invariant 5): one line on f (NULL: none) for
 * each k in done+1 .. floor(elapsed / o->heartbeat), elapsed taken as at
 * most o->duration when that is set (no beat past the run's end), "tide lab: T/P s,
 * repetition R/N, RSS:<rss>" with T = k x o->heartbeat (the beat's own
 * time, so a late caller catching up writes 10, 20, 30, never 31 three
 * times) and P the planned seconds (o->duration, or with duration 0 the
 * ledgers' o->ledgers x o->interval). Returns the beats written in all,
 * done + the lines; done when o->heartbeat is 0. Pure but for f. */
unsigned ti_lab_heartbeats(FILE *f, const tide_lab_plan *o, unsigned rep, double elapsed, unsigned done,
                           const char *rss);

/* ---- node.c ---- */

/* A free loopback port (the kernel's choice when want is 0), or want when
 * it can be bound. 0 or -1 with errno. */
int ti_lab_port_probe(int want, int *out);

/* Fork and exec one tided for n. 0, or TIDE_EIO after a report. */
int ti_lab_node_spawn(const ti_lab_rep *r, ti_lab_node *n);

/* 1 when n has died (reaped, and with report its status and log's tail
 * written to f), 0 while it runs. */
int ti_lab_node_died(ti_lab_node *n, FILE *f, int report);

/* The last `lines` lines of the node log at path, indented, on f. */
void ti_lab_log_tail(FILE *f, const char *path, int lines);

/* SIGTERM every running node, wait up to 15 s, SIGKILL the rest. */
void ti_lab_nodes_stop(ti_lab_node *nodes, size_t nn, FILE *f);

/* ---- load.c ---- */

/* A client thread's body: arg is a ti_lab_client. */
typedef struct ti_lab_client {
    ti_lab_rep *rep;
    unsigned    id;
    pthread_t   th;
    int         started;
} ti_lab_client;

void *ti_lab_client_main(void *arg);

/* ---- sampler.c ---- */

/* One RSS sample of every node into its series (with Referenced when the
 * plan asks, clearing the bits when reset). 0 or TIDE_ENOMEM. */
int ti_lab_sample_all(ti_lab_rep *r, double t, int reset_referenced);

/* GET /v1/sweeps of n and add every report to its series. 0 or -1. */
int ti_lab_poll_sweeps(ti_lab_rep *r, ti_lab_node *n);

/* GET /v1/rotations of n (a node with online delete) and add every report
 * to its series. 0 or -1. */
int ti_lab_poll_rotations(ti_lab_rep *r, ti_lab_node *n);

/* GET /v1/status of n: its memory_limit object's limit, level changes and
 * refusals into n->series->req (status_read set). 0, or -1 when the node
 * has no such object (a tided from before memory_limit): nothing is set. */
int ti_lab_poll_status(ti_lab_rep *r, ti_lab_node *n);

#endif
