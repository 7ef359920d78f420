#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# doctor-64mib.sh: the real run of docs/OPERATIONS.md's `tide doctor`
# section. Run from the repository's root after `make`. A tided held to
# --memory-limit 64MiB (--arena-max 2) on a new directory takes 600 PUTs of
# 900,000 random bytes from 16 curl clients at once (the answers' status
# codes are printed), then `tide doctor` reads it once
# (doctor-64mib-one-scrape.txt) and with --interval 10 while 300 GETs run
# (doctor-64mib-interval-10.txt). The files here were written by it at c05627f.
set -u
W=$(mktemp -d)
head -c 900000 /dev/urandom > "$W/body"
TIDE_METRICS_PUBLIC=1 bin/tided --data-dir "$W/data" --listen 127.0.0.1:18613 --memory-limit 64MiB --arena-max 2 \
    > "$W/tided.log" 2>&1 &
P=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:18613/healthz > /dev/null && break; sleep 0.1; done
for i in $(seq 600); do printf '%064x\n' "$i"; done |
    xargs -P 16 -I{} curl -s -o /dev/null -w '%{http_code}\n' -X PUT --data-binary @"$W/body" \
        http://127.0.0.1:18613/v1/objects/{} > "$W/codes"
sort "$W/codes" | uniq -c
bin/tide doctor http://127.0.0.1:18613 > docs/lab/doctor-64mib-one-scrape.txt; echo "one scrape rc $?"
(for i in $(seq 300); do printf '%064x\n' "$(( (i % 600) + 1 ))"; done |
    xargs -P 4 -I{} curl -s -o /dev/null http://127.0.0.1:18613/v1/objects/{}) &
G=$!
bin/tide doctor --interval 10 http://127.0.0.1:18613 > docs/lab/doctor-64mib-interval-10.txt; echo "two scrapes rc $?"
wait $G
kill $P; wait $P
rm -rf "$W"
