#!/usr/bin/env bash
# Before/after A/B of issue #21 item 7: the same bench binary (built at 7fc7ea8)
# drives the old and the new tidegate binary, alternating which goes first.
set -u
OLD=/tmp/before/tidegate NEW=${NEW:-/tmp/after/tidegate} BENCH=/tmp/before/tidegate-bench
OUT=${OUT:-/tmp/ab}; mkdir -p $OUT
for round in ${ROUNDS:-1 2 3}; do
  if [ $((round % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    $BENCH bench session --workload w16 --messages ${MSGS:-5000} --target tidegate --repeats 3 --syscall-passes 0 --json --log-level warn --tidegate-bin $bin > $OUT/w16-$v-$round.json 2> $OUT/w16-$v-$round.err; echo "w16 $v $round rc=$?"
    $BENCH bench handshake --count ${LOGINS:-3000} --parallel 32 --target tidegate --repeats 1 --json --log-level warn --tidegate-bin $bin > $OUT/hs-$v-$round.json 2> $OUT/hs-$v-$round.err; echo "hs $v $round rc=$?"
  done
done
