#!/bin/sh
# compare-platforms.sh: run the session presets and the idle probe on this
# host and write one JSON file tagged with OS, kernel, CPU, poller and
# revision, for `tidegate-bench bench compare A.json B.json`.
#
#   scripts/compare-platforms.sh [OUT.json]
#
# Environment: TIDEGATE_BENCH (the load generator, default bin/tidegate-bench)
# and TIDEGATE (the binary under test, default bin/tidegate), both built with
# make build if missing; TARGETS (default tidegate), WORKLOADS (default
# "burst32 w1 w16 seed001"), REPEATS (default 5), IDLE_SESSIONS (default
# 5000), IDLE_HOLD (default 30s), EXTRA (more flags for bench session).
# Run it from the repository root on a quiet machine: it takes minutes.
set -eu

tidegate=${TIDEGATE:-bin/tidegate}
bench=${TIDEGATE_BENCH:-bin/tidegate-bench}
targets=${TARGETS:-tidegate}
workloads=${WORKLOADS:-burst32 w1 w16 seed001}
repeats=${REPEATS:-5}
idle_sessions=${IDLE_SESSIONS:-5000}
idle_hold=${IDLE_HOLD:-30s}
extra=${EXTRA:-}
os=$(uname -s | tr 'A-Z' 'a-z')
out=${1:-platform-$os-$(uname -r)-$(date +%Y%m%d-%H%M%S).json}

if [ ! -x "$tidegate" ] || [ ! -x "$bench" ]; then
	make build
fi
case $os in
linux) poller=epoll ;;
darwin | *bsd) poller=kqueue ;;
*) poller=unknown ;;
esac
kernel=$(uname -r)
arch=$(uname -m)
if [ -r /proc/cpuinfo ]; then
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	ncpu=$(grep -c '^processor' /proc/cpuinfo)
else
	cpu=$(sysctl -n machdep.cpu.brand_string 2>/dev/null || sysctl -n hw.model 2>/dev/null || echo unknown)
	ncpu=$(sysctl -n hw.ncpu 2>/dev/null || echo 0)
fi
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	revision="$revision-dirty"
fi
gover=$(go env GOVERSION 2>/dev/null || echo unknown)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in $workloads; do
	echo "compare-platforms: session $w ($targets, $repeats repeats)" >&2
	# shellcheck disable=SC2086
	"$bench" bench session --tidegate-bin "$tidegate" --workload "$w" --target "$targets" --repeats "$repeats" --json --log-level warn $extra >"$tmp/$w.json"
done
echo "compare-platforms: idle $idle_sessions sessions for $idle_hold" >&2
"$bench" bench idle --tidegate-bin "$tidegate" --sessions "$idle_sessions" --hold "$idle_hold" --json --log-level warn >"$tmp/idle.json"

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
	printf '{\n  "host": {"os": %s, "arch": %s, "kernel": %s, "cpu": %s, "num_cpu": %s, "poller": %s, "go_version": %s, "revision": %s},\n' \
		"$(json_string "$os")" "$(json_string "$arch")" "$(json_string "$kernel")" "$(json_string "$cpu")" "$ncpu" \
		"$(json_string "$poller")" "$(json_string "$gover")" "$(json_string "$revision")"
	printf '  "session": {\n'
	first=yes
	for w in $workloads; do
		[ $first = yes ] || printf ',\n'
		first=no
		printf '    %s: ' "$(json_string "$w")"
		cat "$tmp/$w.json"
	done
	printf '  },\n  "idle": '
	cat "$tmp/idle.json"
	printf '}\n'
} >"$out"
echo "compare-platforms: wrote $out" >&2
