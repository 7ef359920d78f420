#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The insert pools' kept chunks alone: head (19d60c7) against nopool (the
# same with 64806de reverted), tide-defer at a 1 GiB index lag, five
# interleaved rounds at 1M and 16M, two at 100M. Waits for ab.sh.
cd /tmp/ab3
while pgrep -f 'ab.sh' > /dev/null; do sleep 10; done
while pgrep -f '.ci/run' > /dev/null; do sleep 10; done
sleep 5
run() {   # size lag rounds variants...
  local n=$1 lag=$2 rounds=$3; shift 3
  for r in $(seq 1 $rounds); do for v in "$@"; do
    echo "== $v $n lag $lag r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab2.log
    ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag $lag --dir /tmp/ab3 \
       --record /tmp/ab3/ab-$v-$lag.jsonl >> ab2.log 2>&1
  done; done
}
run 1000000 1GiB 5 nopool head
run 16000000 1GiB 5 nopool head
run 100000000 1GiB 2 nopool head
echo "== done $(date +%T)" >> ab2.log
