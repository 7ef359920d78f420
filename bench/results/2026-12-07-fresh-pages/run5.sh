#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# pf3 (the tail's tables resident in 4 KiB pages) against pf4 (the same,
# in 2 MiB pages from 2 MiB: MADV_HUGEPAGE, then MADV_POPULATE_WRITE),
# tide-defer at a 1 GiB index lag, three interleaved rounds at 16M and 100M;
# then a profile of pf4's 100M load.
cd /tmp/ab2
while pgrep -f '.ci/run' > /dev/null; do sleep 10; done
sleep 5
run() {   # size rounds variants...
  local n=$1 rounds=$2; shift 2
  for r in $(seq 1 $rounds); do for v in "$@"; do
    echo "== $v $n r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab5.log
    ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 \
       --record /tmp/ab2/ab5-$v.jsonl >> ab5.log 2>&1
  done; done
}
run 16000000 3 pf3 pf4
run 100000000 3 pf3 pf4
echo "== profile $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab5.log
perf record -F 99 -g -o /tmp/ab2/perf-pf4-100m.data -- ./peers-pf4 --engines tide-defer --items 100000000 \
   --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 >> ab5.log 2>&1
echo "== done $(date +%T)" >> ab5.log
