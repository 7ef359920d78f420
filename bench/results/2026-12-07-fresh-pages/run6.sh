#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# pf3 against pf5 (huge pages for resident mappings from 64 MiB), three
# interleaved rounds at 1M and 16M, tide-defer at a 1 GiB index lag. The
# 1M rounds of pf3 against pf4 (ab5-*.jsonl, after run5.sh) ran the same way.
cd /tmp/ab2
for n in 1000000 16000000; do for r in 1 2 3; do for v in pf3 pf5; do
  ./peers-$v --engines tide-defer --items $n --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 \
     --record /tmp/ab2/ab6-$v.jsonl >> ab6.log 2>&1
done; done; done
