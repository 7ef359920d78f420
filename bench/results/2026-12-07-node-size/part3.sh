#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# After part 2: tide-defer at 100M with lags of 256 MiB and 512 MiB; then
# the small sizes with both lags, three interleaved rounds (one peers run
# per lag and round, alternating); then RocksDB-sync at 100M.
while pgrep -f wait2.sh > /dev/null; do sleep 10; done
P=/tmp/q/peers-new
cd /work/main
for lag in 512MiB 256MiB; do
  echo "== 100000000 lag $lag $(date +%T)" >> /tmp/q/queue.log
  SIZES=100000000 ENGINES=tide-defer INDEX_LAG=$lag RUNS=1 OUT=/tmp/q/lag-$lag PEERS=$P BENCH_DIR=/tmp/q \
    bash bench/growth >> /tmp/q/queue.log 2>&1
done
for r in 1 2 3; do for lag in 1GiB 64MiB; do
  echo "== small r$r lag $lag $(date +%T)" >> /tmp/q/queue.log
  SIZES="1000000 4000000 16000000" COLD_FROM=1000000000 ENGINES=tide-defer INDEX_LAG=$lag RUNS=1 \
    OUT=/tmp/q/small-$lag PEERS=$P BENCH_DIR=/tmp/q bash bench/growth >> /tmp/q/queue.log 2>&1
done; done
echo "== rocksdb 100M $(date +%T)" >> /tmp/q/queue.log
SIZES=100000000 ENGINES=rocksdb-sync RUNS=1 OUT=/tmp/q/rocks100 PEERS=$P BENCH_DIR=/tmp/q \
  bash bench/growth >> /tmp/q/queue.log 2>&1
echo "== part 3 done $(date +%T)" >> /tmp/q/queue.log
