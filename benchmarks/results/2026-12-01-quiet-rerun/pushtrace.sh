#!/bin/bash
bin=$1; subs=${2:-1000}
$bin push --log-level warn > /tmp/s6/push/srv-st.log 2>&1 &
P=$!
sleep 0.7
/work/main/bin/tidegate-bench bench push --sse --subscribers $subs --rate 10 --duration 10s --server-pid $P > /tmp/s6/push/st-run.txt 2>&1 &
B=$!
sleep 5
timeout 2 strace -f -qq -e trace=write,epoll_pwait,epoll_wait -p $P -o /tmp/s6/push/trace.txt 2>/dev/null
ls -l /proc/$P/fd 2>/dev/null | awk '{print $9, $11}' > /tmp/s6/push/fds.txt
wait $B
kill $P; wait $P 2>/dev/null
python3 - <<'PY'
import re,collections
fds={}
for line in open('/tmp/s6/push/fds.txt'):
    p=line.split()
    if len(p)==2: fds[p[0]]=p[1]
c=collections.Counter()
for line in open('/tmp/s6/push/trace.txt'):
    m=re.search(r'(write|epoll_pwait|epoll_wait)\((\d+),.*?(\d+)\)\s*=\s*(-?\d+)',line)
    m2=re.search(r'(write|epoll_pwait|epoll_wait)\((\d+)',line)
    if not m2: continue
    call,fd=m2.group(1),m2.group(2)
    kind=fds.get(fd,'?')
    if 'socket' in kind: kind='socket'
    extra=''
    if call.startswith('epoll'):
        t=re.search(r'\], \d+, (-?\d+)',line) or re.search(r', \d+, (-?\d+)',line)
        extra=' timeout='+(t.group(1) if t else '?')
    c[(call,kind+extra)]+=1
for k,v in sorted(c.items(), key=lambda x:-x[1]): print(v//2,'/s',k)
PY
