#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
cd /tmp/cold16
for r in 1 2 3; do
  for b in datrand bothrand; do
    echo "== round $r $b $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
    /tmp/peers-$b --engines tide-defer,tide-defer-16k --items 16000000 --runs 1 --no-warm \
      --cold-memory 1GiB --cold-fetches 200000 --record /tmp/cold16/$b.jsonl --dir /tmp/cold16 \
      > /tmp/cold16/$b-r$r.txt 2>> /tmp/cold16/progress.log
  done
  echo "== round $r peers $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
  /tmp/peers-datrand --engines lmdb,rocksdb-sync --items 16000000 --runs 1 --no-warm \
    --cold-memory 1GiB --cold-fetches 200000 --record /tmp/cold16/peers.jsonl --dir /tmp/cold16 \
    > /tmp/cold16/peers-r$r.txt 2>> /tmp/cold16/progress.log
  if [ $r = 1 ]; then
    echo "== round $r base $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> progress.log
    /tmp/peers-base --engines tide-defer,tide-defer-16k --items 16000000 --runs 1 --no-warm \
      --cold-memory 1GiB --cold-fetches 20000 --record /tmp/cold16/base.jsonl --dir /tmp/cold16 \
      > /tmp/cold16/base-r$r.txt 2>> /tmp/cold16/progress.log
  fi
done
echo "== done $(date +%T)" >> progress.log
