#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
cd /tmp/grow2
echo "== 64M peers $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
./peers --engines lmdb,rocksdb-sync --items 64000000 --runs 1 --cold-memory 2GiB \
  --cold-fetches 100000 --record /tmp/grow2/runs.jsonl --dir /tmp/grow2 --json > /tmp/grow2/peers-64m.json 2>> /tmp/grow2/progress.log
echo "== done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
