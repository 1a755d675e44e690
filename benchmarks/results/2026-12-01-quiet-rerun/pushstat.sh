#!/bin/bash
bin=$1; subs=${2:-1000}
$bin push --log-level warn > /tmp/s6/push/srv-st.log 2>&1 &
P=$!
sleep 0.7
/work/main/bin/tidegate-bench bench push --sse --subscribers $subs --rate 10 --duration 12s --server-pid $P > /tmp/s6/push/st-run.txt 2>&1 &
B=$!
sleep 6
perf stat -e 'syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_write,context-switches,task-clock' -p $P -- sleep 5 2>&1 | grep -E "nanosleep|futex|epoll|write|context|task-clock" | awk '{print $1, $2}' | tr '\n' ' '
echo
wait $B
kill $P; wait $P 2>/dev/null
tail -1 /tmp/s6/push/st-run.txt | grep -o 'cpu/event=[0-9]*ns'
