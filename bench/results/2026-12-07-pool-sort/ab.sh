#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Three builds of bench/peers side by side: base (45f172a), pool (64806de:
# the insert pools keep their chunks and table for the next batch) and sort
# (8ecfae0: that, and the commit's radix sort by bucket). tide-defer at a
# 1 GiB index lag, three interleaved rounds at 1M and 16M, then base and
# sort at 100M; then sort at 100M with tided's default lag (64 MiB), three
# rounds, and a profile of sort's 100M load at 1 GiB; then one round of
# sort at 64M with its warm fetches at each lag. Waits for the LMDB run
# before it (stopped at 17:57, its map past the machine's memory) and for
# any CI run.
cd /tmp/ab3
while ! grep -q "lmdb 100M done" /tmp/q/queue.log; do sleep 10; done
while pgrep -f '.ci/run' > /dev/null; do sleep 10; done
sleep 5
run() {   # size lag rounds variants...
  local n=$1 lag=$2 rounds=$3; shift 3
  for r in $(seq 1 $rounds); do for v in "$@"; do
    echo "== $v $n lag $lag r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab.log
    ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag $lag --dir /tmp/ab3 \
       --record /tmp/ab3/ab-$v-$lag.jsonl >> ab.log 2>&1
  done; done
}
run 1000000 1GiB 3 base pool sort
run 16000000 1GiB 3 base pool sort
run 100000000 1GiB 3 base sort
echo "== profile $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab.log
perf record -F 99 -g -o /tmp/ab3/perf-sort-100m.data -- ./peers-sort --engines tide-defer --items 100000000 \
   --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab3 >> ab.log 2>&1
run 100000000 64MiB 3 sort
# 64M with the warm fetches, one round at each lag, for the growth curve.
for lag in 64MiB 1GiB; do
  echo "== sort 64M warm lag $lag $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab.log
  ./peers-sort --engines tide-defer --items 64000000 --runs 1 --index-lag $lag --dir /tmp/ab3 \
     --record /tmp/ab3/warm64-$lag.jsonl >> ab.log 2>&1
done
echo "== done $(date +%T)" >> ab.log
