#!/bin/sh
# install.sh: install the peer proxies `tidegate-bench bench session --target` runs
# (HAProxy, nginx with its stream module) and perf for syscall counts, if
# missing. Debian/Ubuntu, as root. The packages' own services are not used:
# the benchmark starts each proxy itself with a generated configuration.
set -eu

need=""
command -v haproxy >/dev/null 2>&1 || need="$need haproxy"
command -v nginx >/dev/null 2>&1 || need="$need nginx"
[ -f /usr/lib/nginx/modules/ngx_stream_module.so ] || need="$need libnginx-mod-stream"
command -v perf >/dev/null 2>&1 || need="$need linux-perf"
command -v ip >/dev/null 2>&1 || need="$need iproute2"

if [ -z "$need" ]; then
	echo "peers: haproxy, nginx (stream module), perf and iproute2 are installed"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "peers: missing:$need; run as root: apt-get install -y$need" >&2
	exit 1
fi
echo "peers: installing$need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq $need
