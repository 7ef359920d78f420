#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
cd /tmp/grow
echo "== 64M $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
/work/main/build/bench/peers --engines tide-defer --items 64000000 --runs 1 --record /tmp/grow/runs.jsonl \
  --dir /tmp/grow --json > /tmp/grow/peers-64m.json 2>> /tmp/grow/progress.log
echo "== 100M $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
/work/main/build/bench/peers --engines tide-defer --items 100000000 --runs 1 --no-warm --cold-memory 2GiB \
  --cold-fetches 200000 --record /tmp/grow/runs.jsonl --dir /tmp/grow --json > /tmp/grow/peers-100m.json 2>> /tmp/grow/progress.log
echo "== done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
