#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A/B/C: base (the build before), pf2 (the tail's look-ahead prefetch and
# resident tail tables), pf3 (pf2, and the insert pool's chunks and table
# and the append buffer resident at once), tide-defer at a 1 GiB index
# lag; rounds interleaved, each run a fresh process of its build. At 100M
# base and pf3 only.
cd /tmp/ab2
run() {   # size rounds variants...
  local n=$1 rounds=$2; shift 2
  for r in $(seq 1 $rounds); do for v in "$@"; do
    echo "== $v $n r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab3.log
    ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 \
       --record /tmp/ab2/ab3-$v.jsonl >> ab3.log 2>&1
  done; done
}
run 1000000 3 base pf2 pf3
run 16000000 3 base pf2 pf3
run 100000000 3 base pf3
echo "== done $(date +%T)" >> ab3.log
