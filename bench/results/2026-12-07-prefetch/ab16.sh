#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
cd /tmp/ab
for r in 1 2 3; do for v in base pf; do
  echo "== $v r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab16.log
  ./peers-$v --engines tide-defer --items 16000000 --runs 1 --no-warm --dir /tmp/ab \
     --record /tmp/ab/ab16-$v.jsonl >> ab16.log 2>&1
done; done
echo "== done $(date +%T)" >> ab16.log
