#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# When LMDB's 64M round is recorded, stop the run before RocksDB's warm
# fetches, clean up, then: the prefetch A/B at 16M, RocksDB-sync at 64M
# without warm fetches, and tide-defer's lag comparison at 64M and 100M.
while ! grep -q '"engine":"lmdb"' /tmp/grow2/runs.jsonl 2>/dev/null; do sleep 5; done
pkill -f run64.sh; pkill -f "peers --engines lmdb,rocksdb-sync"; sleep 3
pkill -9 -f "peers --engines lmdb,rocksdb-sync"; sleep 1
rm -rf /tmp/grow2/tide-peers-*
for d in /sys/fs/cgroup/memory/tide-peers-*; do [ -d "$d" ] && rmdir "$d"; done
echo "== lmdb recorded, run stopped $(date +%T)" >> /tmp/q/queue.log
/tmp/ab/ab16.sh
cd /work/main
echo "== rocksdb 64M $(date +%T)" >> /tmp/q/queue.log
SIZES=64000000 ENGINES=rocksdb-sync RUNS=1 NO_WARM_FROM=64000000 OUT=/tmp/q/rocks64 PEERS=/tmp/ab/peers-base BENCH_DIR=/tmp/q bash bench/growth >> /tmp/q/queue.log 2>&1
echo "== queue part 1 done $(date +%T)" >> /tmp/q/queue.log
