#!/bin/sh
# netns.sh: the three-host network of `tidegate-bench bench session --rtt`.
#
#   netns.sh up PREFIX RTT     RTT per link, such as 2000us, 2ms or 0
#   netns.sh down PREFIX
#
# up makes namespaces PREFIX-client, PREFIX-proxy and PREFIX-backend, a veth
# pair client<->proxy (10.213.1.1 <-> 10.213.1.2) and one proxy<->backend
# (10.213.2.1 <-> 10.213.2.2), routes client and backend through the proxy
# namespace (which forwards, so a direct connection crosses the same links),
# and adds netem delay RTT/2 on each of the four veth ends, so each link has
# the given round-trip time. Only these namespaces and the links inside them
# are touched; up removes what it made if any step fails, and down removes
# the three namespaces (their links go with them). Needs root, ip and tc
# (iproute2) and the kernel's netem qdisc (sch_netem) when RTT is not 0.
# benchmarks/session/netns.go (Layout) must agree with the names and
# addresses here.
set -eu

usage() {
	echo "usage: $0 up PREFIX RTT | down PREFIX" >&2
	exit 2
}

[ $# -ge 2 ] || usage
cmd=$1
prefix=$2
C=$prefix-client
P=$prefix-proxy
B=$prefix-backend

down() {
	for ns in "$C" "$P" "$B"; do
		if ip netns list 2>/dev/null | grep -q "^$ns\( \|$\)"; then
			ip netns del "$ns"
		fi
	done
}

# to_us converts 2ms, 1500us, 0.5ms or 0 into microseconds.
to_us() {
	case $1 in
	*us) echo "${1%us}" ;;
	*ms) awk -v v="${1%ms}" 'BEGIN { printf "%d\n", v * 1000 }' ;;
	*s) awk -v v="${1%s}" 'BEGIN { printf "%d\n", v * 1000000 }' ;;
	0) echo 0 ;;
	*) echo "netns.sh: RTT $1: want a duration such as 2ms or 1500us" >&2; exit 2 ;;
	esac
}

up() {
	rtt_us=$(to_us "$1")
	half=$((rtt_us / 2))
	for tool in ip tc; do
		command -v "$tool" >/dev/null 2>&1 || { echo "netns.sh: $tool not found (Debian: apt-get install iproute2)" >&2; exit 1; }
	done
	for ns in "$C" "$P" "$B"; do
		if ip netns list 2>/dev/null | grep -q "^$ns\( \|$\)"; then
			echo "netns.sh: namespace $ns already exists; remove it with: $0 down $prefix" >&2
			exit 1
		fi
	done
	trap 'status=$?; if [ $status -ne 0 ]; then echo "netns.sh: setup failed, removing what was made" >&2; down; fi' EXIT
	ip netns add "$C" || { echo "netns.sh: cannot create network namespaces here (needs root and CAP_SYS_ADMIN)" >&2; exit 1; }
	ip netns add "$P"
	ip netns add "$B"
	ip link add cp0 netns "$C" type veth peer name pc0 netns "$P"
	ip link add pb0 netns "$P" type veth peer name bp0 netns "$B"
	ip -n "$C" addr add 10.213.1.1/24 dev cp0
	ip -n "$P" addr add 10.213.1.2/24 dev pc0
	ip -n "$P" addr add 10.213.2.1/24 dev pb0
	ip -n "$B" addr add 10.213.2.2/24 dev bp0
	for pair in "$C lo" "$C cp0" "$P lo" "$P pc0" "$P pb0" "$B lo" "$B bp0"; do
		set -- $pair
		ip -n "$1" link set dev "$2" up
	done
	ip -n "$C" route add default via 10.213.1.2
	ip -n "$B" route add default via 10.213.2.1
	ip netns exec "$P" sysctl -qw net.ipv4.ip_forward=1
	if [ "$half" -gt 0 ]; then
		for pair in "$C cp0" "$P pc0" "$P pb0" "$B bp0"; do
			set -- $pair
			if ! tc -n "$1" qdisc add dev "$2" root netem delay "${half}us" 2>/tmp/netns-tc.$$; then
				echo "netns.sh: tc netem is not available here: $(cat /tmp/netns-tc.$$)" >&2
				echo "netns.sh: the kernel needs the sch_netem qdisc for --rtt; --rtt 0 --netns runs the namespaces without delay" >&2
				rm -f /tmp/netns-tc.$$
				exit 1
			fi
			rm -f /tmp/netns-tc.$$
		done
	fi
	echo "client_ns=$C proxy_ns=$P backend_ns=$B client=10.213.1.1 proxy=10.213.1.2 backend=10.213.2.2 rtt_us=$rtt_us"
}

case $cmd in
up) [ $# -eq 3 ] || usage; up "$3" ;;
down) down ;;
*) usage ;;
esac
