#!/bin/sh
# RSS of the proxy before and after 1,000 connections held in the handshake stage.
# usage: run.sh BIN CONFIG LABEL
BIN=$1 CFG=$2 LABEL=$3
for mode in "-bytes 60000" "-login 8000" "-bytes 0"; do
  $BIN proxy --config $CFG --log-level error & TP=$!
  sleep 1.5
  echo "== $LABEL $mode; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  ./hsmem -pid $TP $mode -n 1000 -hold 3s
  kill $TP; wait $TP 2>/dev/null
  sleep 0.5
done
