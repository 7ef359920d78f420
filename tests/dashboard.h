/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dashboard.h: a real Prometheus scraping a tided, and the Grafana
 * dashboard (contrib/grafana/tide-node.json) run on it, for the tests of
 * tided over HTTP (the Makefile links tests/dashboard.c into the
 * test_http_* binaries).
 *
 * Prometheus is Debian's server, started with th_fork from the shipped
 * contrib/prometheus/prometheus.yml with only its token file, its target
 * and its intervals changed (a scrape a second), so what the dashboard is
 * checked against is what an operator's Prometheus stores.
 *
 * The dashboard's last row, Archive, needs a tided with archive=rados (a
 * Ceph cluster, tests/support/ceph.h); every other row a tided with
 * memory_limit and online_delete. So the queries are run by part: the
 * test of test_http_metrics.c runs every row's but the Archive's, and
 * the one of test_http_archive.c the Archive's. Whatever part runs, the
 * whole file is checked for its shape: the rows in order, the data source
 * variable on every panel, query, variable and annotation, {{instance}}
 * in every legend, $instance in every query, and every query of the
 * Archive row, and none outside it, naming a tide_archive_ family (so
 * that no query falls between the two tests).
 *
 * Every wait polls Prometheus' query API with a 60 s bound and fails the
 * test with Prometheus' log when it passes. Not thread-safe.
 */
#ifndef TIDE_TEST_DASHBOARD_H
#define TIDE_TEST_DASHBOARD_H

#include "http_helpers.h"

#define DASHBOARD "contrib/grafana/tide-node.json"

/* Which rows' queries dashboard_check runs. */
enum dashboard_part {
    DASHBOARD_ALL_BUT_ARCHIVE,   /* Requests to Online delete, the variables, the annotations */
    DASHBOARD_ARCHIVE            /* the Archive row and the variables */
};

/* Start Prometheus scraping `node` every second as job "tide", sending
 * `token` (its /metrics token; any text when the node's page is public).
 * Returns once Prometheus has stored a scrape of tide_build_info. */
void prom_start(tided *prom, const tided *node, const char *token);

/* Stop it (SIGTERM, SIGKILL after STOP_MS) and remove its directory. */
void prom_stop(tided *prom);

/* 1 when `query` returns at least one series on Prometheus. */
int prom_has(const tided *prom, const char *query);

/* Poll until `query` returns a series; fail saying `what` after 60 s. */
void prom_wait(tided *prom, const char *query, const char *what);

/* Check DASHBOARD's shape, then run the variables and the queries of
 * `part` on Prometheus, each of which must return series. Fails the test
 * naming the panel and query otherwise. */
void dashboard_check(const tided *prom, enum dashboard_part part);

#endif
