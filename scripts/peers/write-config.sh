#!/bin/sh
# write-config.sh: print the configuration `tidegate-bench bench` gives a peer proxy.
#
#   write-config.sh haproxy|haproxy-splice|nginx LISTEN BACKEND CORES SESSIONS DIR
#
# LISTEN and BACKEND are host:port, CORES the thread/worker count, SESSIONS
# the concurrent sessions to size for (each is two sockets), DIR where pid
# and log files go. The text is the same as benchmarks/peers/config.go writes
# (TestConfigScriptMatchesGo checks it); run the result with
#   haproxy -db -f FILE      or      nginx -p DIR -c FILE -e DIR/error.log
set -eu

[ $# -eq 6 ] || { echo "usage: $0 haproxy|haproxy-splice|nginx LISTEN BACKEND CORES SESSIONS DIR" >&2; exit 2; }
kind=$1 listen=$2 backend=$3 cores=$4 sessions=$5 dir=$6
margin=256

haproxy() {
	splice=$1
	maxconn=$((sessions + margin))
	echo "# written by tidegate-bench (benchmarks/peers): $kind"
	echo "global"
	echo "    nbthread $cores"
	echo "    maxconn $maxconn"
	echo "    pidfile $dir/haproxy.pid"
	[ "$splice" = yes ] || echo "    nosplice"
	echo "defaults"
	echo "    mode tcp"
	echo "    timeout connect 5s"
	echo "    timeout client 1h"
	echo "    timeout server 1h"
	[ "$splice" = no ] || echo "    option splice-auto"
	echo "frontend bench"
	echo "    bind $listen"
	echo "    maxconn $maxconn"
	echo "    default_backend echo"
	echo "backend echo"
	echo "    server b1 $backend"
}

nginx() {
	conns=$((2 * sessions + margin))
	echo "# written by tidegate-bench (benchmarks/peers): nginx"
	echo "load_module /usr/lib/nginx/modules/ngx_stream_module.so;"
	echo "daemon off;"
	echo "worker_processes $cores;"
	echo "worker_rlimit_nofile $((conns + margin));"
	echo "pid $dir/nginx.pid;"
	echo "error_log $dir/error.log warn;"
	echo "events {"
	echo "    worker_connections $conns;"
	echo "}"
	echo "stream {"
	echo "    upstream echo {"
	echo "        server $backend;"
	echo "    }"
	echo "    server {"
	echo "        listen $listen;"
	echo "        proxy_pass echo;"
	echo "        proxy_connect_timeout 5s;"
	echo "        proxy_timeout 1h;"
	echo "    }"
	echo "}"
}

case $kind in
haproxy) haproxy no ;;
haproxy-splice) haproxy yes ;;
nginx) nginx ;;
*) echo "write-config.sh: kind $kind: want haproxy, haproxy-splice or nginx" >&2; exit 2 ;;
esac
