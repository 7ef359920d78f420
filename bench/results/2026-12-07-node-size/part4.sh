#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rounds 2 and 3 of tide-defer at 100M, both lags, interleaved as
# round 1 was (part2.sh).
P=/tmp/q/peers-new
cd /work/main
for r in 2 3; do for n in 100000000; do for lag in 1GiB 64MiB; do
  echo "== r$r $n lag $lag $(date +%T)" >> /tmp/q/queue.log
  SIZES=$n ENGINES=tide-defer INDEX_LAG=$lag RUNS=1 OUT=/tmp/q/lag-$lag PEERS=$P BENCH_DIR=/tmp/q \
    bash bench/growth >> /tmp/q/queue.log 2>&1
done; done; done
echo "== part 4 done $(date +%T)" >> /tmp/q/queue.log
