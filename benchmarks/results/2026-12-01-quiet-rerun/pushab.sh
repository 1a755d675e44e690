#!/bin/bash
# pushab.sh BIN ENV SUBS: one trial: start BIN push with env ENV, run bench push for 12 s, print cpu/event
bin=$1; envs=$2; subs=${3:-1000}
env $envs $bin push --log-level warn > /tmp/s6/push/srv-ab.log 2>&1 &
P=$!
sleep 0.7
out=$(/work/main/bin/tidegate-bench bench push --sse --subscribers $subs --rate ${RATE:-10} --duration 12s --server-pid $P 2>&1 | tail -1)
kill $P; wait $P 2>/dev/null
echo "$envs $(echo "$out" | grep -o 'cpu/event=[0-9]*ns\|p99=[0-9.]*ms\|lost=[0-9]*\|delivered/s=[0-9]*' | tr '\n' ' ')"
