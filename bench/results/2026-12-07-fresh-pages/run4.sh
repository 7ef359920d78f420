#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# base against pf3 at tided's default index lag (64 MiB), where a flush
# empties the tail every 3.1M items and each cycle grows its table again:
# three rounds at 1M, one at 100M; then the cold reads (cold.sh).
cd /tmp/ab2
while pgrep -f 'run3.sh' > /dev/null; do sleep 10; done
run() {   # size rounds variants...
  local n=$1 rounds=$2; shift 2
  for r in $(seq 1 $rounds); do for v in "$@"; do
    echo "== $v $n r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab4.log
    ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag 64MiB --dir /tmp/ab2 \
       --record /tmp/ab2/ab4-$v.jsonl >> ab4.log 2>&1
  done; done
}
run 1000000 3 base pf3
run 100000000 1 base pf3
echo "== done $(date +%T)" >> ab4.log
